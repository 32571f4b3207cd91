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

/// A capture whose every shaderdata file breaks off right after a row (the reader's own scanner
/// finds the end, not serde): the rows before the break are read and counted, the run is usable,
/// and each file is reported once as broken.
#[test]
fn files_cut_after_a_row_count_the_rows_they_gave() {
    let dir = tempfile::tempdir().unwrap();
    program_trace::write_trace(dir.path(), 4, false);
    let ui = dir.path().join("ui_output_t");
    let mut kept_rows = 0u64;
    let mut files = 0u64;
    for entry in std::fs::read_dir(&ui).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !(name.starts_with("shaderdata_") && name.ends_with(".json")) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let start = text.find("\"records\":[").unwrap() + "\"records\":[".len();
        // Just after the comma that follows a row about half-way through.
        let cut = start + text[start..].len() / 2;
        let cut = cut + text[cut..].find("],").unwrap() + 2;
        kept_rows += text[start..cut].matches('[').count() as u64;
        files += 1;
        std::fs::write(&path, &text[..cut]).unwrap();
    }
    assert!(files > 0 && kept_rows > 0);
    let out = commands::flamegraph(dir.path(), &Options::default(), &NoProgress)
        .expect("the rows before each break are a usable trace");
    assert_eq!(out.totals.run.records, kept_rows);
    assert_eq!(out.totals.run.files_ok, files);
    let bad: u64 = out
        .diag
        .iter()
        .filter(|(k, _, _)| *k == kind::BAD_FILE)
        .map(|(_, n, _)| n)
        .sum();
    assert_eq!(bad, files);
    assert!(!out.folded.is_empty());
}
