//! The funcmap parser on arbitrary bytes: an error or a funcmap, never a panic; a parsed
//! funcmap validates, and printing it and parsing the text gives the same rows back (the writer
//! puts each `R:` row after its marker's, so only the order of the `R:` rows may change) and
//! prints the same text again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sqtt_markers::Funcmap;

fuzz_target!(|data: &[u8]| {
    if let Ok(map) = Funcmap::parse(data) {
        let _ = map.validate();
        let text = map.to_string();
        let back = Funcmap::parse(text.as_bytes()).expect("a printed funcmap parses");
        let sorted = |m: &Funcmap| {
            let mut p = m.payloads.clone();
            p.sort();
            p
        };
        assert_eq!(back.entries, map.entries, "printed as {text:?}");
        assert_eq!(sorted(&back), sorted(&map), "printed as {text:?}");
        assert_eq!(
            (back.wave_size, back.clock_layout, &back.malformed_layout),
            (map.wave_size, map.clock_layout, &map.malformed_layout),
            "printed as {text:?}"
        );
        assert_eq!(back.to_string(), text, "printed as {text:?}");
    }
});
