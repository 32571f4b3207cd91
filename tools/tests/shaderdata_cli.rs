//! `sqtt shaderdata` as a user runs it: the records of raw traces equal AMD's decoder's (pinned
//! in tests/data/amd-decoder), one JSON object per line or a table; a cut or corrupt trace gives
//! the records of its whole packets and a warning naming the file and the byte where decoding
//! stopped; usage errors exit 2.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "../../thread-trace/tests/support/pinned.rs"]
mod pinned;

fn sqtt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sqtt"))
        .args(args)
        .output()
        .expect("sqtt runs")
}

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data")
        .join(rel)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `[time, value, cu, simd, wave, flags]` rows of `sqtt shaderdata --json`.
fn json_records(o: &Output) -> Vec<[u64; 6]> {
    assert!(o.status.success(), "{}", stderr(o));
    std::str::from_utf8(&o.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let mut keys: Vec<&String> = v.as_object().unwrap().keys().collect();
            keys.sort();
            assert_eq!(
                keys,
                ["cu", "flags", "simd", "time", "value", "wave"],
                "{l}"
            );
            ["time", "value", "cu", "simd", "wave", "flags"].map(|k| v[k].as_u64().unwrap())
        })
        .collect()
}

#[test]
fn records_equal_amds_decoder() {
    let pinned = pinned::pinned();
    let mut checked = 0;
    for (gpu, generation) in [
        ("gfx950", "gfx9"),
        ("gfx1100", "gfx11"),
        ("gfx1201", "gfx12"),
    ] {
        for seed in 0..4 {
            let rel = format!("amd-decoder/synthetic/{generation}_{seed}.att");
            let path = data(&rel);
            let o = sqtt(&["shaderdata", "--gpu", gpu, path.to_str().unwrap(), "--json"]);
            assert_eq!(stderr(&o), "", "{rel}");
            let mut got = json_records(&o);
            got.sort();
            let want = &pinned[&rel].records;
            assert!(want.len() > 50, "{rel}");
            assert_eq!(&got, want, "{rel}");
            checked += 1;
        }
    }
    assert_eq!(checked, 12);
}

#[test]
fn text_table_and_real_captures() {
    let path = data("amd-decoder/synthetic/gfx12_0.att");
    let o = sqtt(&["shaderdata", "--gpu", "gfx1201", path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with("        time"), "{out}");
    assert!(out.contains("imm,priv") && out.contains(" imm\n"), "{out}");
    assert!(out.trim_end().ends_with(" records"), "{out}");
    // The gemm capture's 30 shader-data packets all have the exec bit set: no records.
    let gemm = data("sqtt-captures/gfx1100/gemm_run_0/kern0_se0.att");
    let o = sqtt(&[
        "shaderdata",
        "--gpu",
        "gfx1100",
        gemm.to_str().unwrap(),
        "--json",
    ]);
    assert!(json_records(&o).is_empty());
}

#[test]
fn cut_and_corrupt_traces_warn_where_decoding_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let whole = std::fs::read(data("amd-decoder/synthetic/gfx11_1.att")).unwrap();
    let all = json_records(&sqtt(&[
        "shaderdata",
        "--gpu",
        "gfx1100",
        data("amd-decoder/synthetic/gfx11_1.att").to_str().unwrap(),
        "--json",
    ]));
    // Cut in the middle: a prefix of the records and, where a packet is cut, its offset.
    let cut = dir.path().join("cut.att");
    let mut warned = 0;
    for n in whole.len() / 2..whole.len() / 2 + 16 {
        std::fs::write(&cut, &whole[..n]).unwrap();
        let o = sqtt(&[
            "shaderdata",
            "--gpu",
            "gfx1100",
            cut.to_str().unwrap(),
            "--json",
        ]);
        let got = json_records(&o);
        assert!(!got.is_empty() && got.len() < all.len());
        assert_eq!(got[..], all[..got.len()]);
        let err = stderr(&o);
        if err.is_empty() {
            continue;
        }
        assert!(
            err.contains("cut.att") && err.contains("ends inside a packet at byte"),
            "{err}"
        );
        let at: usize = err
            .split("at byte ")
            .nth(1)
            .and_then(|s| s.split(';').next())
            .and_then(|s| s.parse().ok())
            .expect("a byte offset");
        assert!(at < n && at + 9 >= n, "{n} bytes: {err}");
        warned += 1;
    }
    assert!(warned > 8, "{warned} of 16 cuts warned");
    // Corrupt from byte 1000 on: bytes of no packet type; the records before, and a warning.
    let bad = dir.path().join("corrupt.att");
    let mut b = whole.clone();
    for x in &mut b[1000..] {
        *x = 0x77;
    }
    std::fs::write(&bad, &b).unwrap();
    let o = sqtt(&[
        "shaderdata",
        "--gpu",
        "gfx1100",
        bad.to_str().unwrap(),
        "--json",
    ]);
    let got = json_records(&o);
    assert!(!got.is_empty() && got.len() < all.len());
    assert_eq!(got[..], all[..got.len()]);
    let err = stderr(&o);
    assert!(
        err.contains("corrupt.att") && err.contains("no packet type starts with 0x77"),
        "{err}"
    );
    let at: usize = err
        .split("at byte ")
        .nth(1)
        .and_then(|s| s.split(':').next())
        .and_then(|s| s.parse().ok())
        .expect("a byte offset");
    // The packet under byte 1000 (at most 9 bytes long) may end past it.
    assert!((999..=1009).contains(&at), "{err}");
    // The same for `sqtt waves`.
    let o = sqtt(&["waves", "--gpu", "gfx1100", bad.to_str().unwrap()]);
    assert!(o.status.success());
    assert!(stderr(&o).contains("corrupt.att"), "{}", stderr(&o));
}

#[test]
fn usage_errors() {
    let path = data("amd-decoder/synthetic/gfx9_0.att");
    let o = sqtt(&["shaderdata", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--gpu"));
    let o = sqtt(&["shaderdata", "--gpu", "gfx9000", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("gfx9000"));
    let o = sqtt(&["shaderdata", "--gpu", "gfx950", "/nonexistent/missing.att"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("missing.att"));
}
