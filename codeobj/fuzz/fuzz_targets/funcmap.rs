//! The funcmap parser on arbitrary bytes: an error or a funcmap, never a panic; a parsed
//! funcmap validates, and printing it and parsing the text gives the same funcmap back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sqtt_markers::Funcmap;

fuzz_target!(|data: &[u8]| {
    if let Ok(map) = Funcmap::parse(data) {
        let _ = map.validate();
        let text = map.to_string();
        let back = Funcmap::parse(text.as_bytes()).expect("a printed funcmap parses");
        assert_eq!(back, map, "printed as {text:?}");
    }
});
