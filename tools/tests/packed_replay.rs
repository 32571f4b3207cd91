//! A packed gfx12 trace is read in two passes, the second replaying the records the first one
//! kept. What a run counts and reports of broken files (one cut short, one missing) must be what
//! a single pass over the JSON gives (`decode_markers: false` reads it once).

use sqtt_tools::commands;
use sqtt_tools::diag::{kind, NoProgress};
use sqtt_tools::engine::Options;

#[path = "support/program_trace.rs"]
mod program_trace;

#[test]
fn replayed_records_count_and_report_as_a_single_read() {
    let dir = tempfile::tempdir().unwrap();
    let records = program_trace::write_trace(dir.path(), 4, true);
    let run = |decode_markers| {
        let opts = Options {
            decode_markers,
            ..Options::default()
        };
        commands::flamegraph(dir.path(), &opts, &NoProgress).unwrap()
    };
    let whole = run(true);
    assert_eq!(whole.totals.run.records, records);

    let ui = dir.path().join("ui_output_t");
    let cut = ui.join("shaderdata_1_0.json");
    let text = std::fs::read(&cut).unwrap();
    std::fs::write(&cut, &text[..text.len() / 2]).unwrap();
    // A second listed file that does not exist.
    let listing = ui.join("filenames.json");
    let mut l: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&listing).unwrap()).unwrap();
    l["shaderdata_filenames"]["0"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!(["shaderdata_0_1.json", 9_000_000, 0]));
    std::fs::write(&listing, l.to_string()).unwrap();

    let (two, one) = (run(true), run(false));
    let bad = |o: &commands::FlamegraphOutput| {
        o.diag
            .iter()
            .filter(|(k, _, _)| *k == kind::BAD_FILE)
            .map(|(_, n, ex)| (n, ex.to_string()))
            .collect::<Vec<_>>()
    };
    assert_eq!(two.totals.run.records, one.totals.run.records);
    assert_eq!(two.totals.run.files_ok, one.totals.run.files_ok);
    assert_eq!(two.totals.run.files_bad, one.totals.run.files_bad);
    assert_eq!(bad(&two), bad(&one));
    assert_eq!(bad(&two).first().map(|b| b.0), Some(2), "{:?}", bad(&two));
    // The stacks of the intact records are all there (fewer cycles where records are lost).
    assert_eq!(two.folded.len(), whole.folded.len());
}
