//! The code-object reader on arbitrary bytes (ELF hosts and code objects, archives, plain and
//! compressed bundles, bitcode): an error or code objects, never a panic; every code object's
//! funcmap state renders, its table prints, and its cost report (metadata, occupancy, the
//! instruction decoder's counts) is made against itself as baseline and prints.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(cos) = sqtt_codeobj::read_bytes(data, "fuzz") {
        for co in &cos {
            let _ = co.funcmap.problem_texts();
            let _ = co.funcmap.status();
            let _ = sqtt_codeobj::table::render_code_object("fuzz", co, true);
            let cost = sqtt_codeobj::cost::report::file_report(
                "fuzz",
                std::slice::from_ref(co),
                Some(("fuzz", std::slice::from_ref(co))),
            );
            let _ = sqtt_codeobj::cost::report::render_text(&cost, true);
            let _ = sqtt_codeobj::cost::report::render_csv(&cost);
            assert!(co.size as usize <= data.len().max(co.size as usize));
        }
    }
    // The bytes as a section of their own.
    let _ = sqtt_codeobj::parse_funcmap_section(data).problem_texts();
});
