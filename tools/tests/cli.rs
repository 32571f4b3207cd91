//! The `sqtt` binary: exit codes, stdout/stderr, golden outputs for a small case.

#[path = "support/run.rs"]
mod run;
mod sim;

use std::path::{Path, PathBuf};

use run::{s, sqtt};

fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

fn check_golden(name: &str, got: &str) {
    let path = golden(name);
    if std::env::var_os("SQTT_UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, got).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "{} missing (SQTT_UPDATE_GOLDEN=1 writes it)",
            path.display()
        )
    });
    assert_eq!(
        got, want,
        "golden {name} differs (SQTT_UPDATE_GOLDEN=1 rewrites it)"
    );
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(sqtt(&[]).status.code(), Some(2));
    assert_eq!(sqtt(&["flamegraph"]).status.code(), Some(2));
    assert_eq!(sqtt(&["nope"]).status.code(), Some(2));
    assert_eq!(
        sqtt(&["perfetto", ".", "--clock-rate-ghz", "-1"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(sqtt(&["funcmap"]).status.code(), Some(2));
}

#[test]
fn unusable_input_exits_1_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let o = sqtt(&["flamegraph", s(dir.path())]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("not a rocprofv3 --att output directory"),
        "{err}"
    );
    let o = sqtt(&["memory", s(&dir.path().join("missing"))]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn golden_small_case() {
    let dir = tempfile::tempdir().unwrap();
    sim::scenario(1).write(dir.path());
    // Folded stacks of the whole directory.
    let o = sqtt(&["flamegraph", s(dir.path()), "--demangle"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    check_golden("folded.txt", &String::from_utf8(o.stdout).unwrap());
    let err = String::from_utf8_lossy(&o.stderr);
    // Warnings with counts, no progress bar when stderr is not a terminal.
    assert!(
        err.contains("warning: 3 marker records with IDs not in the funcmap"),
        "{err}"
    );
    assert!(err.contains("warning: 1 scopes still open"), "{err}");
    assert!(!err.contains("reading shaderdata"), "{err}");
    // Perfetto of the packed gfx12 ui directory, given directly.
    let ui2 = dir.path().join("ui_output_agent_2_dispatch_4");
    let out = tempfile::tempdir().unwrap();
    let o = sqtt(&["perfetto", s(&ui2), "-o", s(out.path()), "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let name = "ui_output_agent_2_dispatch_4.perfetto.json";
    check_golden(
        name,
        &std::fs::read_to_string(out.path().join(name)).unwrap(),
    );
    // Memory report of the same directory.
    let mem = out.path().join("mem.json");
    let o = sqtt(&["memory", s(&ui2), "-o", s(&mem), "--summary"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&mem)
        .unwrap()
        .replace(s(dir.path()), "<dir>");
    check_golden("memory_agent_2.json", &text);
    check_golden(
        "memory_agent_2_summary.txt",
        &String::from_utf8(o.stdout).unwrap(),
    );
}

#[test]
fn svg_flamegraph_is_written() {
    let dir = tempfile::tempdir().unwrap();
    sim::scenario(1).write(dir.path());
    let svg = dir.path().join("fg.svg");
    let o = sqtt(&["flamegraph", s(dir.path()), "--svg", s(&svg)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<?xml"));
    assert!(text.contains("compute_phase"));
}

#[test]
fn funcmap_prints_tables_of_code_objects() {
    let dir = tempfile::tempdir().unwrap();
    sim::scenario(1).write(dir.path());
    let f1 = dir.path().join("run_code_object_id_1.out");
    let f2 = dir.path().join("run_code_object_id_2.out");
    let o = sqtt(&["funcmap", s(&f1), s(&f2), "--demangle"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(out.contains("wave_size: 64"), "{out}");
    assert!(
        out.contains("addr_trace_load  @ a.hip:20 -> a.hip:12"),
        "{out}"
    );
    assert!(out.contains("helper(float)  @ b.hip:1"), "{out}");
    assert!(out.contains("130"), "{out}");
    // The check of `sqtt-hipcc --check`: a file that cannot be opened is exit 2, a bad
    // requirement exit 1.
    let o = sqtt(&["funcmap", s(&dir.path().join("missing.out"))]);
    assert_eq!(o.status.code(), Some(2));
    let o = sqtt(&["funcmap", s(&f1), "--require", "user:no_such_scope"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("missing user:no_such_scope"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn no_decode_markers_keeps_raw_values() {
    let dir = tempfile::tempdir().unwrap();
    sim::scenario(1).write(dir.path());
    let ui2 = dir.path().join("ui_output_agent_2_dispatch_4");
    let out = tempfile::tempdir().unwrap();
    let o = sqtt(&[
        "perfetto",
        s(&ui2),
        "-o",
        s(out.path()),
        "--no-decode-markers",
        "--json",
    ]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            out.path()
                .join("ui_output_agent_2_dispatch_4.perfetto.json"),
        )
        .unwrap(),
    )
    .unwrap();
    // The barrier point (ID 4) of the packed kernel keeps its clock bits.
    let raw: Vec<u64> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "i" && e["name"] == "barrier")
        .map(|e| e["args"]["value"].as_u64().unwrap())
        .collect();
    assert!(!raw.is_empty());
    assert!(raw.iter().any(|v| v >> 20 != 0));
    assert!(raw.iter().all(|v| (v >> 2) & 0x3FFFF == 4));
}

/// Names in `dir` other than `keep`.
fn others(dir: &Path, keep: &[&str]) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !keep.contains(&n.as_str()))
        .collect()
}

#[test]
fn failed_runs_leave_existing_outputs_untouched() {
    let out = tempfile::tempdir().unwrap();
    let old = "OLD CONTENT\n";

    // sqtt memory -o with a missing input directory.
    let report = out.path().join("out.json");
    std::fs::write(&report, old).unwrap();
    let o = sqtt(&["memory", "/nonexistent/trace", "-o", s(&report)]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(&report).unwrap(), old);

    // sqtt perfetto -o when every shaderdata file turns out unreadable (the sinks are
    // written before the run finds out).
    let dir = tempfile::tempdir().unwrap();
    let truth_sim = sim::scenario(1);
    truth_sim.write(dir.path());
    for ui in &truth_sim.uis {
        for e in std::fs::read_dir(dir.path().join(&ui.name)).unwrap() {
            let p = e.unwrap().path();
            if p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("shaderdata_")
            {
                std::fs::write(&p, "garbage").unwrap();
            }
        }
    }
    let existing = format!("{}.pftrace", truth_sim.uis[0].name);
    std::fs::write(out.path().join(&existing), old).unwrap();
    let o = sqtt(&["perfetto", s(dir.path()), "-o", s(out.path())]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        std::fs::read_to_string(out.path().join(&existing)).unwrap(),
        old
    );

    // --svg whose render fails (no stack has any cycles).
    let empty = tempfile::tempdir().unwrap();
    std::fs::create_dir(empty.path().join("ui_output_x")).unwrap();
    std::fs::write(
        empty.path().join("ui_output_x/shaderdata_0_0.json"),
        r#"{"records":[[100,4,0,0,0,0]]}"#,
    )
    .unwrap();
    let svg = out.path().join("out.svg");
    std::fs::write(&svg, old).unwrap();
    let o = sqtt(&["flamegraph", s(empty.path()), "--svg", s(&svg)]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(&svg).unwrap(), old);

    // No temporary files are left behind.
    assert!(
        others(out.path(), &["out.json", "out.svg", &existing]).is_empty(),
        "{:?}",
        others(out.path(), &[])
    );

    // A successful run replaces them.
    let good = tempfile::tempdir().unwrap();
    sim::scenario(1).write(good.path());
    let o = sqtt(&["memory", s(good.path()), "-o", s(&report)]);
    assert!(o.status.success());
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert!(v["traces"].is_array());
    let o = sqtt(&["flamegraph", s(good.path()), "--svg", s(&svg)]);
    assert!(o.status.success());
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
}

#[test]
fn stats_text_csv_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let truth = sim::scenario(1).write(dir.path());
    // kernel_b's helper function: every instance, from the ground truth.
    let helper = &truth.scopes[&(
        "_Z8kernel_bv".to_string(),
        "function".to_string(),
        "_Z6helperf".to_string(),
    )];
    let total: u64 = helper.iter().sum();

    let o = sqtt(&["stats", s(dir.path())]);
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.ends_with("_Z8kernel_bv / _Z6helperf"))
        .unwrap_or_else(|| panic!("{text}"));
    let cols: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(cols[0], "function");
    assert_eq!(cols[1], helper.len().to_string());
    assert_eq!(cols[2], total.to_string());

    let o = sqtt(&["stats", s(dir.path()), "--csv", "--clock-rate-ghz", "2"]);
    assert!(o.status.success());
    let csv = String::from_utf8(o.stdout).unwrap();
    assert!(csv.starts_with(
        "kernel,scope,kind,count,total_cycles,mean_cycles,min_cycles,max_cycles,total_ns,"
    ));
    let row = csv
        .lines()
        .find(|l| l.starts_with("\"_Z8kernel_bv\",\"_Z6helperf\",function,"))
        .unwrap();
    let f: Vec<&str> = row.split(',').collect();
    assert_eq!(f[4], total.to_string());
    assert_eq!(f[8].parse::<f64>().unwrap(), total as f64 / 2.0);
    // Names with commas stay one field.
    assert!(csv.contains("\"kernel_a(float*, int)\",\"\",kernel,"));

    let o = sqtt(&["stats", s(dir.path()), "--json"]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema"], "sqtt-stats");
    assert_eq!(v["version"], 1);
    let totals: Vec<u64> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["total_cycles"].as_u64().unwrap())
        .collect();
    assert!(totals.windows(2).all(|w| w[0] >= w[1]));

    // Absurd clock rates are refused too (accepted: 0.01 to 10 GHz).
    for bad in ["-1", "0", "fast", "1e300", "0.001", "11", "inf", "nan"] {
        let o = sqtt(&["stats", s(dir.path()), "--clock-rate-ghz", bad]);
        assert_eq!(o.status.code(), Some(2));
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(
            err.contains(&format!("invalid value '{bad}' for '--clock-rate-ghz")),
            "{err}"
        );
    }
    let o = sqtt(&["stats", s(dir.path()), "--csv", "--json"]);
    assert_eq!(o.status.code(), Some(2));
}
