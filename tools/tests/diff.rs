//! `sqtt diff A B` on simulated captures whose difference is known: a capture against itself,
//! against a copy with every time doubled, and against a run where one scope changed.

mod sim;

use std::collections::BTreeMap;
use std::path::Path;

use sim::Act::*;
use sqtt_tools::diag::NoProgress;
use sqtt_tools::diff::{self, DiffReport, DiffRow, Side};
use sqtt_tools::engine::Options;

/// Code object 1: kernel `k1` with user scopes alpha, beta and gamma.
fn code_object(id: u64, kernel: &str) -> sim::CodeObj {
    sim::CodeObj {
        id,
        store: sim::Store::Elf,
        funcmap_text: format!("K:{kernel}\nU:1:alpha\nU:2:beta\nU:3:gamma\nP:4:barrier"),
    }
}

/// Waves of `dispatch` whose work varies from wave to wave (the same way on every run):
/// `alpha { beta { } } gamma { }`. `beta_extra` cycles move from after beta into it, so that
/// beta alone changes (alpha, which holds it, ends when it did).
fn waves(dispatch: u64, n: u64, beta_extra: u64, first: u64) -> Vec<sim::WaveDef> {
    let mut rng = sim::Rng(0x5eed + dispatch);
    (0..n)
        .map(|i| {
            let mut j = || rng.below(20);
            let acts = vec![
                Work(30 + j()),
                Enter(1),
                Work(100 + j()),
                Enter(2),
                Work(50 + j() + beta_extra),
                Exit,
                Work(40 - beta_extra),
                Point(4),
                Exit,
                Work(20),
                Enter(3),
                Work(60 + j()),
                Exit,
                Work(10 + j()),
            ];
            sim::WaveDef {
                se: (i % 2) as u32,
                // Each kernel on CUs of its own.
                cu: (i / 2 % 4 + 4 * dispatch) as u32,
                simd: 0,
                wave_id: (i / 8 % 4) as u32,
                dispatch,
                start: first + 2000 * i,
                acts,
            }
        })
        .collect()
}

/// A capture of the kernels `(dispatch, name)` (code object = dispatch), each with 40 waves.
fn capture(kernels: &[(u64, &str)], beta_extra: u64) -> sim::Sim {
    let mut all = Vec::new();
    for (k, (d, _)) in kernels.iter().enumerate() {
        all.extend(waves(*d, 40, beta_extra, 1000 + 500 * k as u64));
    }
    sim::Sim {
        codeobjs: kernels.iter().map(|(d, n)| code_object(*d, n)).collect(),
        uis: vec![sim::UiDef {
            name: "ui_output_run1".into(),
            gfxip: "gfx942".into(),
            dispatches: kernels
                .iter()
                .map(|(d, n)| sim::Dispatch {
                    kernel_id: *d,
                    name: n.to_string(),
                    codeobj: *d,
                })
                .collect(),
            waves: all,
            delay: 20,
            phase: [0; 4],
            extra_delays: vec![],
            priv_records: 10,
            chunk: 500,
            normalised: false,
            python_events: true,
        }],
    }
}

fn run(a: &Path, b: &Path) -> DiffReport {
    let o = Options::default();
    diff::diff(a, b, &o, &o, diff::DEFAULT_ALPHA, &NoProgress)
        .unwrap()
        .report
}

fn by_stack(r: &DiffReport) -> BTreeMap<&str, &DiffRow> {
    r.rows.iter().map(|x| (x.stack.as_str(), x)).collect()
}

#[test]
fn a_capture_against_itself_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let truth = capture(&[(1, "k1")], 0).write(dir.path());
    let r = run(dir.path(), dir.path());
    assert_eq!(r.schema, "sqtt-diff");
    let rows = by_stack(&r);
    assert_eq!(
        rows.keys().copied().collect::<Vec<_>>(),
        ["k1", "k1;alpha", "k1;alpha;beta", "k1;gamma"]
    );
    for row in &r.rows {
        assert_eq!(row.ratio, Some(1.0), "{row:?}");
        assert_eq!(row.a_count, row.b_count);
        assert_eq!(row.a_total, row.b_total);
        assert!(!row.significant, "{row:?}");
        assert_eq!(row.p_value, Some(1.0));
        assert_eq!(row.only_in, None);
    }
    // The counts and totals are the capture's own.
    let k1 = rows["k1"];
    assert_eq!((k1.a_count, k1.a_waves), (40, 40));
    assert_eq!(k1.a_total, truth.waves["k1"].iter().sum::<u64>());
    let beta = &truth.scopes[&("k1".to_string(), "user".to_string(), "beta".to_string())];
    assert_eq!(rows["k1;alpha;beta"].a_total, beta.iter().sum::<u64>());
}

/// Copies capture `from` to `to` with every time (records and occupancy) doubled.
fn doubled(from: &Path, to: &Path) {
    for e in walk(from) {
        let rel = e.strip_prefix(from).unwrap();
        let dst = to.join(rel);
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        let name = rel.file_name().unwrap().to_string_lossy().into_owned();
        let double = |rows: &mut serde_json::Value| {
            for r in rows.as_array_mut().unwrap() {
                r[0] = (r[0].as_u64().unwrap() * 2).into();
            }
        };
        if name.starts_with("shaderdata_") || name == "occupancy.json" {
            let mut v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&e).unwrap()).unwrap();
            if name == "occupancy.json" {
                for (k, rows) in v.as_object_mut().unwrap() {
                    if k.parse::<u32>().is_ok() {
                        double(rows);
                    }
                }
            } else {
                double(&mut v["records"]);
            }
            std::fs::write(&dst, v.to_string()).unwrap();
        } else {
            std::fs::copy(&e, &dst).unwrap();
        }
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn every_time_doubled_doubles_every_ratio() {
    let a = tempfile::tempdir().unwrap();
    capture(&[(1, "k1"), (2, "k2")], 0).write(a.path());
    let b = tempfile::tempdir().unwrap();
    doubled(a.path(), b.path());
    let r = run(a.path(), b.path());
    assert_eq!(r.rows.len(), 8);
    for row in &r.rows {
        assert_eq!(row.ratio, Some(2.0), "{row:?}");
        assert_eq!(row.total_ratio, Some(2.0), "{row:?}");
        assert_eq!(row.a_count, row.b_count);
        assert!(row.significant, "{row:?}");
    }
}

#[test]
fn one_scope_changed_is_the_only_change() {
    let a = tempfile::tempdir().unwrap();
    capture(&[(1, "k1"), (2, "k2")], 0).write(a.path());
    let b = tempfile::tempdir().unwrap();
    // k1's beta 15 cycles longer; k2 gone, k3 new.
    capture(&[(1, "k1"), (3, "k3")], 15).write(b.path());
    let r = run(a.path(), b.path());
    let rows = by_stack(&r);
    let changed: Vec<&str> = r
        .rows
        .iter()
        .filter(|x| x.significant)
        .map(|x| x.stack.as_str())
        .collect();
    assert_eq!(changed, ["k1;alpha;beta"]);
    let beta = rows["k1;alpha;beta"];
    assert!(beta.p_value.unwrap() < 1e-6, "{beta:?}");
    assert_eq!(beta.b_total - beta.a_total, 40 * 15);
    assert!((beta.b_mean.unwrap() - beta.a_mean.unwrap() - 15.0).abs() < 1e-9);
    for s in ["k1", "k1;alpha", "k1;gamma"] {
        assert_eq!(rows[s].ratio, Some(1.0), "{s}");
    }
    // Stacks on one side only are listed as such, with nothing to compare.
    for (k, side) in [("k2", Side::A), ("k3", Side::B)] {
        for s in ["", ";alpha", ";alpha;beta", ";gamma"] {
            let row = rows[format!("{k}{s}").as_str()];
            assert_eq!(row.only_in, Some(side), "{row:?}");
            assert_eq!(
                (row.ratio, row.p_value, row.significant),
                (None, None, false)
            );
        }
    }
    // The largest change of total cycles comes first.
    assert!(r.rows[0].only_in.is_some());
}

fn sqtt(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_sqtt"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn text_json_csv_and_differential_svg() {
    let a = tempfile::tempdir().unwrap();
    capture(&[(1, "k1")], 0).write(a.path());
    let b = tempfile::tempdir().unwrap();
    capture(&[(1, "k1")], 15).write(b.path());
    let (pa, pb) = (a.path().to_str().unwrap(), b.path().to_str().unwrap());

    let o = sqtt(&["diff", pa, pb]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("Welch's t-test"), "{text}");
    let line = text
        .lines()
        .find(|l| l.ends_with(" k1;alpha;beta"))
        .unwrap();
    assert!(line.contains("grew"), "{line}");

    let o = sqtt(&["diff", pa, pb, "--json"]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema"], "sqtt-diff");
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["test"]["name"], "welch_t");
    let fields = [
        "stack", "a_count", "b_count", "a_mean", "b_mean", "a_total", "b_total", "ratio",
    ];
    for row in v["rows"].as_array().unwrap() {
        for f in fields {
            assert!(row.get(f).is_some(), "{f} in {row}");
        }
    }
    let back: DiffReport = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(back.rows.len(), 4);

    let o = sqtt(&["diff", pa, pb, "--csv"]);
    let csv = String::from_utf8(o.stdout).unwrap();
    assert!(csv.starts_with("stack,a_count,b_count,a_mean,b_mean,a_total,b_total,ratio,"));
    assert_eq!(csv.lines().count(), 5);
    assert!(csv.contains("\"k1;alpha;beta\",40,40,"), "{csv}");

    // The differential flamegraph: beta's frame says it grew.
    let svg = a.path().join("diff.svg");
    let o = sqtt(&["diff", pa, pb, "--svg", svg.to_str().unwrap()]);
    assert!(o.status.success());
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.contains("<svg"));
    let beta = s
        .split("<title>")
        .find(|t| t.starts_with("beta ("))
        .unwrap();
    assert!(beta.contains("; +"), "{beta}");

    // Usage errors: a bad significance level.
    let o = sqtt(&["diff", pa, pb, "--alpha", "2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("significance level"));
}
