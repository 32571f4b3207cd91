//! The streaming `shaderdata_*.json` reader on arbitrary bytes: records or an error, never a
//! panic, and the records counted are the records handed over.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let mut n = 0u64;
    match sqtt_tools::shaderdata::read_from(data, Path::new("fuzz.json"), |_| n += 1) {
        Ok(st) => assert_eq!(st.records, n),
        Err(sqtt_tools::Error::Json { records, .. }) => assert_eq!(records, n),
        Err(_) => {}
    }
});
