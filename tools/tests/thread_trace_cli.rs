//! `sqtt waves`, `sqtt clock` and `sqtt thread-trace` as a user runs them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "support/rng.rs"]
mod rng;
use rng::Rng;

fn sqtt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sqtt"))
        .args(args)
        .output()
        .expect("sqtt runs")
}

fn capture(rel: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/sqtt-captures");
    assert!(
        dir.is_dir(),
        "the real captures are missing at {}",
        dir.display()
    );
    dir.join(rel).to_string_lossy().into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn waves_json_is_one_object_per_line() {
    let o = sqtt(&[
        "waves",
        "--gpu",
        "gfx1100",
        &capture("gfx1100/gemm_run_0/kern0_se0.att"),
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let lines: Vec<&str> = std::str::from_utf8(&o.stdout).unwrap().lines().collect();
    assert!(lines.len() > 100);
    for l in lines {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["cu", "simd", "slot", "start", "stop"]);
        assert!(v["start"].as_u64().unwrap() <= v["stop"].as_u64().unwrap());
    }
}

#[test]
fn waves_text_and_overrides() {
    let o = sqtt(&[
        "waves",
        "--gpu",
        "gfx1201",
        &capture("gfx1200/gemm_run_0/kern0_se0.att"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("256 waves"), "{}", stdout(&o));
    // The same file read as another generation's warns about its header.
    let o = sqtt(&[
        "waves",
        "--gpu",
        "gfx1201",
        "--gc",
        "11.0.0",
        &capture("gfx1200/gemm_run_0/kern0_se0.att"),
    ]);
    assert!(o.status.success());
    assert!(stderr(&o).contains("layout 4"), "{}", stderr(&o));
    let o = sqtt(&[
        "waves",
        "--gpu",
        "gfx950",
        &capture("gfx950/gemm_run_0/kern0_se0.att"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn clock_prints_markers_and_mapping() {
    let o = sqtt(&[
        "clock",
        "--gpu",
        "gfx1100",
        &capture("gfx1100/gemm_run_0/kern0_se0.att"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(
        s.contains("realtime markers") && s.contains("mapping:"),
        "{s}"
    );
    let o = sqtt(&[
        "clock",
        "--gpu",
        "gfx950",
        &capture("gfx950/gemm_run_0/kern0_se0.att"),
    ]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("no clock"));
    let o = sqtt(&[
        "clock",
        "--gpu",
        "gfx1100",
        "--json",
        &capture("gfx1100/gemm_run_0/kern0_se0.att"),
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["markers"].as_array().unwrap().len() >= 2);
    assert!(v["cycles_per_tick"].as_f64().unwrap() > 1.0);
}

#[test]
fn thread_trace_prints_words_and_packets() {
    let o = sqtt(&[
        "thread-trace",
        "start",
        "--gpu",
        "gfx942",
        "--dies",
        "2",
        "--size",
        "1M",
        "--address",
        "0x100000",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(s.contains("PRED_EXEC dies 0x02"), "{s}");
    assert!(s.contains("SQ_THREAD_TRACE_SIZE = 0x00000100"), "{s}");
    assert!(s.lines().next().unwrap().starts_with("0000: c0"), "{s}");
    let o = sqtt(&[
        "thread-trace",
        "stop",
        "--gpu",
        "gfx1100",
        "--address",
        "0x1000",
        "--harvest",
        "2,3",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert_eq!(s.matches("COPY_DATA").count(), 4, "{s}");
    assert!(s.contains("write confirmed"));
}

#[test]
fn usage_errors_exit_2_naming_the_option() {
    let cases: &[(&[&str], &str)] = &[
        (&["waves", "--gpu", "gfx803", "x.att"], "--gpu"),
        (
            &[
                "thread-trace",
                "start",
                "--gpu",
                "gfx1100",
                "--size",
                "100",
                "--address",
                "0",
            ],
            "--size",
        ),
        (
            &[
                "thread-trace",
                "start",
                "--gpu",
                "gfx1100",
                "--size",
                "12Q",
                "--address",
                "0",
            ],
            "--size",
        ),
        (
            &[
                "thread-trace",
                "start",
                "--gpu",
                "gfx1100",
                "--size",
                "4K",
                "--address",
                "0x800",
            ],
            "--address",
        ),
        (
            &["thread-trace", "stop", "--gpu", "gfx1100", "--address", "2"],
            "--address",
        ),
        (
            &[
                "thread-trace",
                "stop",
                "--gpu",
                "gfx1100",
                "--address",
                "0",
                "--harvest",
                "6",
            ],
            "--harvest",
        ),
        (
            &[
                "thread-trace",
                "stop",
                "--gpu",
                "gfx1100",
                "--address",
                "0",
                "--gc",
                "10.3.0",
            ],
            "--gc",
        ),
        (
            &[
                "thread-trace",
                "stop",
                "--gpu",
                "gfx1201",
                "--address",
                "0",
                "--engines",
                "17",
            ],
            "--engines",
        ),
        (
            &[
                "thread-trace",
                "start",
                "--gpu",
                "gfx1100",
                "--size",
                "4K",
                "--address",
                "0",
                "--gc",
                "10.3.0",
            ],
            "--gc",
        ),
        (
            &["waves", "--gpu", "gfx1100", "--gc", "11.0", "x.att"],
            "--gc",
        ),
        (
            &["waves", "--gpu", "gfx1100", "--engines", "0", "x.att"],
            "--engines",
        ),
    ];
    for (args, option) in cases {
        let o = sqtt(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(option), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn corrupt_and_missing_files() {
    let dir = tempfile::Builder::new()
        .prefix("sqtt-cli-")
        .tempdir()
        .unwrap()
        .keep();
    std::fs::create_dir_all(&dir).unwrap();
    let bad: PathBuf = dir.join("corrupt.att");
    let mut bytes = Vec::new();
    let mut rng = Rng(0x1234_5678);
    for _ in 0..100_000 {
        bytes.push(rng.next() as u8);
    }
    std::fs::write(&bad, &bytes).unwrap();
    for gpu in ["gfx950", "gfx1100", "gfx1201"] {
        for cmd in ["waves", "clock"] {
            let o = sqtt(&[cmd, "--gpu", gpu, bad.to_str().unwrap()]);
            assert!(o.status.success(), "{cmd} {gpu}: {}", stderr(&o));
            assert!(!stderr(&o).contains("panicked"));
        }
    }
    let o = sqtt(&[
        "waves",
        "--gpu",
        "gfx1100",
        dir.join("missing.att").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("missing.att"));
    std::fs::remove_dir_all(&dir).unwrap();
}
