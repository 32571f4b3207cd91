//! Hostile trace directories (issue 25): a `filenames.json` that lists one file many times (it
//! was read once per listing: 16,000 listings of a 14 KB file took 33 s, 200,000 more than
//! 300 s), and names holding escape sequences or newlines (printed raw to the terminal, and a
//! newline split a folded-stack line).

#[path = "support/run.rs"]
mod run;
mod sim;

use std::path::Path;

use serde_json::{json, Value};
use sqtt_tools::commands;
use sqtt_tools::diag::{kind, NoProgress};
use sqtt_tools::engine::Options;

use run::{s, sqtt};

const UI: &str = "ui_output_agent_1_dispatch_1";

fn edit_json(path: &Path, f: impl FnOnce(&mut Value)) {
    let mut v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(path, serde_json::to_vec(&v).unwrap()).unwrap();
}

/// Shader engine 0 of the ui directory lists `files` (name, begin time).
fn list_se0(dir: &Path, files: &[(&str, u64)]) {
    edit_json(&dir.join(UI).join("filenames.json"), |v| {
        v["shaderdata_filenames"]["0"] = files.iter().map(|(f, t)| json!([f, t, t + 1])).collect();
        v["shaderdata_filenames"]
            .as_object_mut()
            .unwrap()
            .retain(|k, _| k == "0");
    });
}

/// A file listed 20,000 times (and once more under another name, a link to it) is read once:
/// the records are those of one listing, and a warning counts the repetitions.
#[test]
fn a_file_listed_many_times_is_read_once() {
    let dir = tempfile::tempdir().unwrap();
    sim::scenario(1).write(dir.path());
    // Only this ui directory.
    std::fs::remove_dir_all(dir.path().join("ui_output_agent_2_dispatch_4")).unwrap();
    list_se0(dir.path(), &[("shaderdata_0_0.json", 196)]);
    let once = commands::flamegraph(dir.path(), &Options::default(), &NoProgress).unwrap();
    assert_eq!(once.diag.count(kind::REPEATED_LISTING), 0);

    std::os::unix::fs::symlink(
        "shaderdata_0_0.json",
        dir.path().join(UI).join("alias.json"),
    )
    .unwrap();
    let mut many: Vec<(&str, u64)> = vec![("shaderdata_0_0.json", 196); 20_000];
    many.push(("alias.json", 100));
    list_se0(dir.path(), &many);
    let r = commands::flamegraph(dir.path(), &Options::default(), &NoProgress).unwrap();
    assert_eq!(r.totals.run.records, once.totals.run.records);
    assert_eq!(r.totals.run.files_ok, 1);
    assert_eq!(r.folded, once.folded);
    assert_eq!(r.diag.count(kind::REPEATED_LISTING), 20_000);
    let text = r.diag.to_string();
    assert!(
        text.contains(
            "warning: 20000 shaderdata files listed more than once in filenames.json (each read once)"
        ),
        "{text}"
    );
}

/// Kernel names and listed file names holding an escape sequence and a newline: escaped in the
/// folded stacks (one line per stack, each ending in its count, a `;` in a name no frame
/// separator), the stats table and CSV, and the warnings; the JSON outputs keep them exactly
/// (JSON escapes them).
#[test]
fn names_holding_escapes_and_newlines_are_escaped_when_printed() {
    let dir = tempfile::tempdir().unwrap();
    sim::scenario(1).write(dir.path());
    let evil = "_Z8kernel_bv\u{1b}]0;owned\u{7}\u{1b}[2J\nfake_frame 999999";
    edit_json(&dir.path().join(UI).join("occupancy.json"), |v| {
        v["dispatches"]["2"] = json!(evil);
    });
    edit_json(&dir.path().join(UI).join("filenames.json"), |v| {
        v["shaderdata_filenames"]["1"]
            .as_array_mut()
            .unwrap()
            .push(json!(["gone\u{1b}[31m\nred.json", 900, 901]));
    });
    let escaped = "_Z8kernel_bv\\x1b]0;owned\\x07\\x1b[2J\\nfake_frame 999999";

    let o = sqtt(&["flamegraph", s(dir.path())]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    let err = String::from_utf8(o.stderr).unwrap();
    for text in [&out, &err] {
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}'),
            "{text:?}"
        );
    }
    for line in out.lines() {
        let (stack, count) = line.rsplit_once(' ').unwrap();
        assert!(count.parse::<u64>().is_ok(), "{line:?}");
        assert!(
            !stack.starts_with("fake_frame"),
            "a name split a line: {line:?}"
        );
    }
    // One frame: the `;` of the name is no frame separator.
    let frame = escaped.replace(';', "\\x3b");
    assert!(
        out.lines().any(|l| l.starts_with(&format!("{frame} "))),
        "{out}"
    );
    assert!(err.contains("gone\\x1b[31m\\nred.json"), "{err}");

    for args in [vec!["stats"], vec!["stats", "--csv"]] {
        let mut a = args.clone();
        a.push(s(dir.path()));
        let o = sqtt(&a);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let out = String::from_utf8(o.stdout).unwrap();
        assert!(!out.contains('\u{1b}'), "{args:?}: {out:?}");
        assert!(out.contains(escaped), "{args:?}: {out}");
        assert!(
            !out.lines().any(|l| l.starts_with("fake_frame")),
            "{args:?}: {out}"
        );
    }
    // JSON keeps the name exactly.
    let o = sqtt(&["stats", "--json", s(dir.path())]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["kernel"] == evil));
}
