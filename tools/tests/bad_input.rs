//! Bad input: clear messages with counts, warnings when the rest is usable, errors when
//! nothing is, never a panic.

mod sim;

use std::path::Path;

use serde_json::Value;
use sqtt_tools::commands;
use sqtt_tools::diag::{kind, NoProgress};
use sqtt_tools::engine::Options;
use sqtt_tools::Error;
#[path = "support/device.rs"]
mod device;
use device::char_device;

fn setup() -> (tempfile::TempDir, sim::Truth) {
    let dir = tempfile::tempdir().unwrap();
    let truth = sim::scenario(1).write(dir.path());
    (dir, truth)
}

const UI1: &str = "ui_output_agent_1_dispatch_1";
const UI2: &str = "ui_output_agent_2_dispatch_4";

#[test]
fn truncated_shaderdata_file_is_a_warning_with_counts() {
    let (dir, _) = setup();
    let f = dir.path().join(UI1).join("shaderdata_0_1.json");
    let text = std::fs::read(&f).unwrap();
    std::fs::write(&f, &text[..text.len() / 2]).unwrap();
    let r = commands::flamegraph(dir.path(), &Options::default(), &NoProgress).unwrap();
    assert_eq!(r.diag.count(kind::BAD_FILE), 1);
    let msg = r.diag.to_string();
    assert!(msg.contains("shaderdata_0_1.json"), "{msg}");
    assert!(msg.contains("malformed JSON after"), "{msg}");
    assert!(!r.folded.is_empty());
}

#[test]
fn nothing_readable_is_an_error() {
    let (dir, _) = setup();
    for ui in [UI1, UI2] {
        for e in std::fs::read_dir(dir.path().join(ui)).unwrap() {
            let p = e.unwrap().path();
            if p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("shaderdata_")
            {
                std::fs::write(&p, b"{\"records\": [[1,2,").unwrap();
            }
        }
    }
    match commands::flamegraph(dir.path(), &Options::default(), &NoProgress) {
        Err(Error::Unusable(m)) => assert!(m.contains("none of the"), "{m}"),
        Err(e) => panic!("wrong error {e}"),
        Ok(_) => panic!("no error"),
    }
}

#[test]
fn not_a_trace_dir_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        commands::flamegraph(dir.path(), &Options::default(), &NoProgress),
        Err(Error::NotATraceDir(_))
    ));
    assert!(matches!(
        commands::perfetto(
            &dir.path().join("nope"),
            None,
            None,
            sqtt_tools::perfetto::Format::Json,
            &Options::default(),
            &NoProgress
        ),
        Err(Error::Io { .. })
    ));
}

fn count_slot_records(ui: &Path, se: u32, cu: u64, simd: u64, wave: u64) -> u64 {
    let mut n = 0;
    for e in std::fs::read_dir(ui).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with(&format!("shaderdata_{se}_")) {
            continue;
        }
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        for r in v["records"].as_array().unwrap() {
            let r: Vec<u64> = r
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap())
                .collect();
            if r[2] == cu && r[3] == simd && r[4] == wave && r[5] & 2 == 0 {
                n += 1;
            }
        }
    }
    n
}

#[test]
fn records_of_a_wave_with_no_occupancy_are_counted() {
    let (dir, _) = setup();
    let ui = dir.path().join(UI1);
    let occ_path = ui.join("occupancy.json");
    let mut occ: Value =
        serde_json::from_str(&std::fs::read_to_string(&occ_path).unwrap()).unwrap();
    occ["1"]
        .as_array_mut()
        .unwrap()
        .retain(|r| !(r[1] == 3 && r[2] == 3 && r[3] == 2));
    std::fs::write(&occ_path, occ.to_string()).unwrap();
    let want = count_slot_records(&ui, 1, 3, 3, 2);
    assert!(want > 0);
    let r = commands::flamegraph(dir.path(), &Options::default(), &NoProgress).unwrap();
    assert_eq!(r.diag.count(kind::NO_OCCUPANCY), want);
    assert!(r.diag.to_string().contains("se 1 cu 3 simd 3 wave 2"));
    // With no dispatch there is no code object: the wave's records are not read as markers,
    // but the wave keeps its time under the unknown_kernel frame.
    assert_eq!(r.diag.count(kind::NO_CODEOBJ), want);
    assert!(r.folded.iter().any(|(s, _)| s == "unknown_kernel"));
    // Perfetto names the unknown dispatch (a pid counted down from i32::MAX, never a
    // dispatch's); it has no slices, its records being unread.
    let out = tempfile::tempdir().unwrap();
    let p = commands::perfetto(
        dir.path(),
        Some(out.path()),
        None,
        sqtt_tools::perfetto::Format::Json,
        &Options::default(),
        &NoProgress,
    )
    .unwrap();
    let f = p
        .files
        .iter()
        .find(|f| f.to_string_lossy().contains(UI1))
        .unwrap();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
    assert!(v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["pid"] == i32::MAX
            && e["ph"] == "M"
            && e["args"]["name"] == "unknown dispatch (no occupancy)"));
}

#[test]
fn missing_occupancy_file_is_a_warning() {
    let (dir, _) = setup();
    std::fs::remove_file(dir.path().join(UI2).join("occupancy.json")).unwrap();
    let r = commands::flamegraph(dir.path(), &Options::default(), &NoProgress).unwrap();
    assert_eq!(r.diag.count(kind::NO_OCCUPANCY_FILE), 1);
    assert!(r.diag.count(kind::NO_OCCUPANCY) > 0);
}

#[test]
fn payload_block_cut_short_is_counted() {
    let mut s = sim::scenario(1);
    let mut rng = sim::Rng(7);
    let ui = &mut s.uis[1];
    let w = ui.waves.iter_mut().find(|w| w.dispatch == 5).unwrap();
    let mut b = sim::memory_block(
        u64::from(u32::MAX),
        32,
        |l| 0x1000 + 4 * u64::from(l),
        &mut rng,
    );
    b.tokens.truncate(20);
    w.acts.push(sim::Act::Addr(2, b));
    let dir = tempfile::tempdir().unwrap();
    s.write(dir.path());
    let (r, _) =
        commands::memory::<Vec<u8>>(dir.path(), None, 4, &Options::default(), &NoProgress).unwrap();
    assert_eq!(r.diag.count(kind::CUT_SHORT), 1);
    assert!(r.diag.to_string().contains("payload records missing"));
}

#[test]
fn corrupt_code_object_is_a_warning() {
    let (dir, _) = setup();
    std::fs::write(dir.path().join("run_code_object_id_2.out"), b"not an elf").unwrap();
    let r = commands::flamegraph(dir.path(), &Options::default(), &NoProgress).unwrap();
    assert_eq!(r.diag.count(kind::BAD_FILE), 1);
    assert!(r.diag.to_string().contains("run_code_object_id_2.out"));
    // kernel_b's records are not read as markers (their payload counts are unknown), and the
    // warning names what was looked for.
    assert!(r.diag.count(kind::NO_CODEOBJ) > 0);
    let text = r.diag.to_string();
    assert!(text.contains("dispatch 2 (_Z8kernel_bv)"), "{text}");
    assert!(text.contains("*_code_object_id_<N>.out") && text.contains("--code-object"));
    assert!(r.folded.iter().any(|(s, _)| s == "_Z8kernel_bv"));
    assert!(!r.folded.iter().any(|(s, _)| s.contains("marker_")));
}

#[test]
fn malformed_code_json_rows_are_counted() {
    let (dir, _) = setup();
    let p = dir.path().join(UI2).join("code.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    v["sqtt_funcmap"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!([3, 9, "Q", "bogus", "", 0]));
    std::fs::write(&p, v.to_string()).unwrap();
    let r = commands::flamegraph(dir.path(), &Options::default(), &NoProgress).unwrap();
    assert_eq!(r.diag.count(kind::BAD_ROW), 1);
}

#[test]
fn malformed_filenames_json_falls_back_to_file_names() {
    let (dir, truth) = setup();
    std::fs::write(dir.path().join(UI1).join("filenames.json"), b"{\"gfxip\": ").unwrap();
    let r = commands::flamegraph(dir.path(), &Options::default(), &NoProgress).unwrap();
    assert_eq!(r.diag.count(kind::BAD_FILE), 1);
    assert!(r.diag.to_string().contains("found by name"));
    let got: std::collections::BTreeMap<String, u64> = r.folded.into_iter().collect();
    assert_eq!(got, truth.folded);
}

#[test]
fn empty_ui_dir_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ui_output_x")).unwrap();
    match commands::flamegraph(dir.path(), &Options::default(), &NoProgress) {
        Err(Error::Unusable(m)) => assert!(m.contains("no shaderdata"), "{m}"),
        Err(e) => panic!("wrong error {e}"),
        Ok(_) => panic!("no error"),
    }
}

#[test]
fn random_records_never_panic() {
    // Garbage values on real slots (headers, exits, payload-bearing IDs, clock bits) and garbage
    // slots, over a trace whose funcmaps are real.
    let (dir, _) = setup();
    let mut rng = sim::Rng(99);
    for ui in [UI1, UI2] {
        let p = dir.path().join(ui).join("shaderdata_0_0.json");
        let mut rows = Vec::new();
        for i in 0..5000u64 {
            let value = match rng.below(4) {
                0 => rng.next() as u32,
                1 => (rng.below(20) as u32) << 2 | rng.below(4) as u32,
                2 => 1,
                _ => ((rng.next() as u32) & 0xFFF0_0000) | (rng.below(8) as u32) << 2 | 2,
            };
            let (cu, simd, wave) = if rng.below(5) == 0 {
                (rng.below(1 << 20), rng.below(300), rng.below(1 << 16))
            } else {
                (rng.below(2), rng.below(4), rng.below(8))
            };
            let flags = if rng.below(10) == 0 { 2 } else { 0 };
            rows.push(format!(
                "[{},{value},{cu},{simd},{wave},{flags}]",
                100 + i * 3
            ));
        }
        std::fs::write(&p, format!("{{\"records\":[{}]}}", rows.join(","))).unwrap();
    }
    let o = Options::default();
    commands::flamegraph(dir.path(), &o, &NoProgress).unwrap();
    let out = tempfile::tempdir().unwrap();
    let r = commands::perfetto(
        dir.path(),
        Some(out.path()),
        Some(1.7),
        sqtt_tools::perfetto::Format::Json,
        &o,
        &NoProgress,
    )
    .unwrap();
    for f in &r.files {
        let _: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
    }
    let (_, json) = commands::memory(dir.path(), Some(Vec::new()), 16, &o, &NoProgress).unwrap();
    let _: Value = serde_json::from_slice(&json.unwrap()).unwrap();
    let raw = Options {
        decode_markers: false,
        demangle: true,
        ..Options::default()
    };
    commands::flamegraph(dir.path(), &raw, &NoProgress).unwrap();
}

fn mkfifo(p: &Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(p)
        .status()
        .unwrap()
        .success();
    assert!(ok, "mkfifo {}", p.display());
}

fn shaderdata_files(ui: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(ui)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("shaderdata_")
        })
        .collect();
    v.sort();
    v
}

/// When nothing can be read, the error says why each file failed (issue 15), not just a count.
#[test]
fn unusable_trace_says_why_each_file_failed() {
    let (dir, _) = setup();
    let mut all = Vec::new();
    for ui in [UI1, UI2] {
        let files = shaderdata_files(&dir.path().join(ui));
        for (i, p) in files.iter().enumerate() {
            if i == 0 {
                // A FIFO nobody writes to: refused before it is opened for reading.
                std::fs::remove_file(p).unwrap();
                mkfifo(p);
            } else {
                std::fs::write(p, b"{\"records\": [[1,2,").unwrap();
            }
        }
        all.extend(files);
    }
    match commands::flamegraph(dir.path(), &Options::default(), &NoProgress) {
        Err(Error::Unusable(m)) => {
            assert!(m.contains(&format!("none of the {} shaderdata files", all.len())));
            for (i, p) in all.iter().enumerate() {
                let line = m
                    .lines()
                    .find(|l| l.trim_start().starts_with(&p.display().to_string()))
                    .unwrap_or_else(|| panic!("{} not named in {m}", p.display()));
                let first_of_ui = i == 0 || p.parent() != all[i - 1].parent();
                if first_of_ui {
                    assert!(line.ends_with("it is a FIFO (named pipe), not a regular file"));
                } else {
                    assert!(line.contains("malformed JSON after 0 records"), "{line}");
                }
            }
        }
        Err(e) => panic!("wrong error {e}"),
        Ok(_) => panic!("no error"),
    }
}

/// A FIFO, a device or a regular file given as the trace directory is named with what it is.
#[test]
fn a_trace_dir_that_is_not_a_directory_says_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let file = dir.path().join("file.json");
    std::fs::write(&file, b"{}").unwrap();
    let zero = char_device(dir.path());
    for (p, what) in [
        (fifo.as_path(), "a FIFO (named pipe)"),
        (zero.as_path(), "a character device"),
        (file.as_path(), "a regular file"),
    ] {
        match commands::flamegraph(p, &Options::default(), &NoProgress) {
            Err(e) => assert_eq!(
                e.to_string(),
                format!(
                    "{}: it is {what}, not a directory: give the rocprofv3 --att output directory",
                    p.display()
                )
            ),
            Ok(_) => panic!("no error"),
        }
    }
}

/// Names in filenames.json that lead outside the ui directory (`..`, absolute paths) are taken
/// by their last component inside it, so a listing never makes the tools read elsewhere.
#[test]
fn filenames_json_paths_stay_inside_the_ui_directory() {
    let (dir, truth) = setup();
    let ui = dir.path().join(UI1);
    let fj = ui.join("filenames.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&fj).unwrap()).unwrap();
    // Decoys outside the trace directory, holding garbage: read, they would be bad files.
    let decoys = tempfile::tempdir().unwrap();
    let outside = decoys.path();
    let up = format!("../../{}", outside.file_name().unwrap().to_string_lossy());
    let mut n = 0;
    for files in v["shaderdata_filenames"]
        .as_object_mut()
        .unwrap()
        .values_mut()
    {
        for f in files.as_array_mut().unwrap() {
            let name = f[0].as_str().unwrap().to_string();
            std::fs::write(outside.join(&name), b"garbage").unwrap();
            f[0] = Value::String(if n % 2 == 0 {
                format!("{up}/{name}")
            } else {
                outside.join(&name).display().to_string()
            });
            n += 1;
        }
    }
    assert!(n > 1);
    std::fs::write(&fj, v.to_string()).unwrap();
    let td = sqtt_tools::input::TraceDir::open(dir.path()).unwrap();
    for u in &td.ui_dirs {
        for (_, p) in &u.shaderdata {
            assert_eq!(p.parent().unwrap(), u.path, "{} escapes", p.display());
        }
    }
    let r = commands::flamegraph(dir.path(), &Options::default(), &NoProgress).unwrap();
    assert_eq!(r.diag.count(kind::BAD_FILE), 0, "{}", r.diag);
    let got: std::collections::BTreeMap<String, u64> = r.folded.into_iter().collect();
    assert_eq!(got, truth.folded);
}

/// A filenames.json above its size bound is a warning naming the bound (the files are then
/// found by name); it is not read.
#[test]
fn oversized_filenames_json_is_refused_with_the_bound() {
    let (dir, truth) = setup();
    let fj = dir.path().join(UI1).join("filenames.json");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&fj)
        .unwrap()
        .set_len(sqtt_tools::input::MAX_FILENAMES_JSON + 1)
        .unwrap();
    let r = commands::flamegraph(dir.path(), &Options::default(), &NoProgress).unwrap();
    let msg = r.diag.to_string();
    assert!(
        msg.contains("it is 67108865 bytes; filenames.json may have at most 67108864 bytes"),
        "{msg}"
    );
    let got: std::collections::BTreeMap<String, u64> = r.folded.into_iter().collect();
    assert_eq!(got, truth.folded);
}

/// `sqtt waves` (and `clock`, `thread-trace`, which read the same way) refuse a raw trace file
/// that is a FIFO, a device, a /proc file or a directory at once, naming it and what it is.
#[test]
fn raw_trace_inputs_must_be_regular_files() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("se0.att");
    mkfifo(&fifo);
    let zero = char_device(dir.path());
    for (p, what) in [
        (
            fifo.as_path(),
            "it is a FIFO (named pipe), not a regular file",
        ),
        (
            zero.as_path(),
            "it is a character device, not a regular file",
        ),
        (
            Path::new("/proc/self/maps"),
            "it is a file of the /proc pseudo file system, not a regular file",
        ),
        (dir.path(), "it is a directory, not a regular file"),
    ] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_sqtt"))
            .args(["waves", "--gpu", "gfx90a"])
            .arg(p)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let start = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            if start.elapsed() > std::time::Duration::from_secs(10) {
                child.kill().unwrap();
                panic!("sqtt waves {} blocked", p.display());
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(&format!("{}: {what}", p.display())), "{err}");
    }
}

#[test]
fn a_ui_dir_deeper_than_the_search_gets_an_error_naming_the_limit() {
    let (dir, truth) = setup();
    // Moved down into DIR/l1/.../lN: found down to the limit, not below it.
    let found = |levels: usize| {
        let root = tempfile::tempdir().unwrap();
        let mut deep = root.path().to_path_buf();
        for l in 1..levels {
            deep = deep.join(format!("l{l}"));
        }
        std::fs::create_dir_all(&deep).unwrap();
        for e in std::fs::read_dir(dir.path()).unwrap() {
            let p = e.unwrap().path();
            let to = deep.join(p.file_name().unwrap());
            if p.is_dir() {
                std::fs::create_dir_all(&to).unwrap();
                for f in std::fs::read_dir(&p).unwrap() {
                    let f = f.unwrap().path();
                    std::fs::copy(&f, to.join(f.file_name().unwrap())).unwrap();
                }
            } else {
                std::fs::copy(&p, &to).unwrap();
            }
        }
        commands::flamegraph(root.path(), &Options::default(), &NoProgress).map(|r| r.folded)
    };
    let limit = sqtt_tools::input::MAX_UI_LEVELS;
    let got: std::collections::BTreeMap<String, u64> = found(limit).unwrap().into_iter().collect();
    assert_eq!(got, truth.folded);
    let e = found(limit + 1).unwrap_err();
    assert!(matches!(e, Error::NotATraceDir(_)));
    let msg = e.to_string();
    assert!(
        msg.contains(&format!("at most {limit} levels below it")),
        "{msg}"
    );
}
