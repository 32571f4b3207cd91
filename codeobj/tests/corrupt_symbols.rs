//! Code objects whose symbol tables are corrupt (from the `code_object` fuzz target's seeds):
//! read and reported on without a panic, their figures bounded by the bytes there are.

mod support;

/// Function symbols with sizes of terabytes (and one negative as a signed number): a function's
/// code is counted only where it lies in its section, so the sizes do not add up past the file
/// (tests build with overflow checks: the sum used to overflow).
#[test]
fn symbol_sizes_past_the_file_count_the_code_that_is_there() {
    let data = support::seed("code_object", "symbol_sizes_past_the_file.out");
    let cos = sqtt_codeobj::read_bytes(&data, "seed").expect("an ELF code object");
    assert_eq!(cos.len(), 1);
    let co = &cos[0];
    assert!(!co.code.functions.is_empty());
    for f in &co.code.functions {
        assert!(
            f.bytes <= data.len() as u64,
            "{}: {} bytes",
            f.name,
            f.bytes
        );
    }
    // `recursion` starts in .text (0x200 bytes from 0x1600) but its size runs past it: no code.
    let f = co.code.functions.iter().find(|f| f.name == "recursion");
    assert!(
        f.is_some_and(|f| f.address == 0x1600 && f.bytes == 0 && f.scan.is_none()),
        "{:?}",
        co.code.functions
    );
    let report = sqtt_codeobj::cost::report::file_report("seed", &cos, Some(("seed", &cos)));
    let totals = &report.code_objects[0].totals;
    assert!(totals.code_bytes <= data.len() as u64, "{totals:?}");
    let _ = sqtt_codeobj::cost::report::render_text(&report, true);
    let _ = sqtt_codeobj::cost::report::render_csv(&report);
}
