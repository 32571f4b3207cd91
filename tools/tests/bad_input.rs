//! Bad input: clear messages with counts, warnings when the rest is usable, errors when
//! nothing is, never a panic.

mod sim;

use std::path::Path;

use serde_json::Value;
use sqtt_tools::commands;
use sqtt_tools::diag::{kind, NoProgress};
use sqtt_tools::engine::Options;
use sqtt_tools::Error;

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
    // Perfetto names the unknown dispatch (pid 0); it has no slices, its records being unread.
    let out = tempfile::tempdir().unwrap();
    let p = commands::perfetto(
        dir.path(),
        Some(out.path()),
        None,
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
        .any(|e| e["pid"] == 0 && e["ph"] == "M"));
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
    let r = commands::perfetto(dir.path(), Some(out.path()), Some(1.7), &o, &NoProgress).unwrap();
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
