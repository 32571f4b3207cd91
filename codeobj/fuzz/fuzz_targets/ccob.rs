//! Bounded decompression: compressed bundles of any declared and actual size (zstd frames of
//! fuzzed bundle bytes and up to 256 MiB of zeros, windows of 1 KiB to 32 MiB or a single
//! segment; zlib streams as given) through the code-object reader: an error or code objects,
//! never a panic, and never a code object above the bound. libFuzzer's memory limit (ci/fuzz.sh:
//! -rss_limit_mb=2048, which also limits one allocation) turns an unbounded decode into a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../ccob_input.rs"]
mod ccob_input;

fuzz_target!(|data: &[u8]| {
    let ccob = ccob_input::ccob(data);
    match sqtt_codeobj::read_bytes(&ccob, "fuzz") {
        Ok(cos) => {
            for co in &cos {
                assert!(co.size <= sqtt_codeobj::bundle::MAX_CODE_OBJECT_BYTES);
                let _ = sqtt_codeobj::table::render_code_object("fuzz", co, false);
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
