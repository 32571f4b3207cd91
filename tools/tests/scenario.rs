//! The tools against the simulated run's ground truth.

mod sim;

use std::collections::BTreeMap;

use serde_json::Value;
use sqtt_tools::commands;
use sqtt_tools::diag::{kind, NoProgress};
use sqtt_tools::engine::Options;

fn opts() -> Options {
    Options::default()
}

fn setup(scale: usize) -> (tempfile::TempDir, sim::Truth) {
    let dir = tempfile::tempdir().unwrap();
    let truth = sim::scenario(scale).write(dir.path());
    (dir, truth)
}

#[test]
fn flamegraph_matches_ground_truth() {
    let (dir, truth) = setup(3);
    let r = commands::flamegraph(dir.path(), &opts(), &NoProgress).unwrap();
    let got: BTreeMap<String, u64> = r.folded.into_iter().collect();
    assert_eq!(got, truth.folded);
    assert_eq!(r.totals.run.records, truth.records);
    assert_eq!(r.totals.ui_dirs, 2);
    assert!(r.totals.run.priv_records > 0);
    assert_eq!(r.totals.run.corrected, truth.corrected_headers);
    assert!(truth.corrected_headers > 0);
    assert_eq!(r.diag.count(kind::UNMATCHED_ENTER), truth.unmatched_enter);
    // One numeric enter (ID 900) per kernel_b wave.
    assert_eq!(r.diag.count(kind::UNKNOWN_ID), 9);
    assert_eq!(r.diag.count(kind::NO_OCCUPANCY), 0);
    assert_eq!(r.diag.count(kind::CUT_SHORT), 0);
    // Point markers and payloads never become frames.
    for stack in got.keys() {
        assert!(
            !stack.contains("barrier") && !stack.contains("addr_trace"),
            "{stack}"
        );
    }
}

#[test]
fn flamegraph_without_marker_decoding_uses_arrival_times() {
    let (dir, truth) = setup(2);
    let o = Options {
        decode_markers: false,
        ..opts()
    };
    let r = commands::flamegraph(dir.path(), &o, &NoProgress).unwrap();
    let got: BTreeMap<String, u64> = r.folded.into_iter().collect();
    assert_eq!(got, truth.folded_arrival);
    assert_eq!(r.totals.run.corrected, 0);
}

#[test]
fn flamegraph_demangles() {
    let (dir, _) = setup(1);
    let o = Options {
        demangle: true,
        ..opts()
    };
    let r = commands::flamegraph(dir.path(), &o, &NoProgress).unwrap();
    let all: Vec<&str> = r.folded.iter().map(|(s, _)| s).collect();
    assert!(all
        .iter()
        .any(|s| s.contains("kernel_b();phase_x;helper(float);inner()")));
    assert!(all.iter().any(|s| s.starts_with("kernel_c()")));
    assert!(!all.iter().any(|s| s.contains("_Z")));
}

/// The events of each thread, keyed as the ground truth keys them: (pid, which is the dispatch,
/// the tid of sim's layout for the coordinates in the thread's name).
fn events_by_thread(v: &Value) -> BTreeMap<(u64, u64), Vec<sim::PEvent>> {
    let mut keys = BTreeMap::new();
    for e in v["traceEvents"].as_array().unwrap() {
        if e["name"] == "thread_name" {
            let n: Vec<u32> = e["args"]["name"]
                .as_str()
                .unwrap()
                .split(|c: char| !c.is_ascii_digit())
                .filter(|s| !s.is_empty())
                .map(|s| s.parse().unwrap())
                .collect();
            let (pid, tid) = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
            let key = (pid, sim::tid(n[0], n[1], n[2], n[3], n[4]));
            assert!(keys.insert((pid, tid), key).is_none(), "{e}");
        }
    }
    let mut out: BTreeMap<(u64, u64), Vec<sim::PEvent>> = BTreeMap::new();
    for e in v["traceEvents"].as_array().unwrap() {
        let ph = e["ph"].as_str().unwrap();
        if ph == "M" {
            continue;
        }
        let ts = e["ts"].as_f64().unwrap();
        let cycles = (ts * 1000.0).round() as u64;
        out.entry(keys[&(e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap())])
            .or_default()
            .push((
                ph.to_string(),
                e["name"].as_str().unwrap_or_default().to_string(),
                e["cat"].as_str().unwrap_or_default().to_string(),
                cycles,
            ));
    }
    out
}

#[test]
fn perfetto_matches_ground_truth() {
    let (dir, truth) = setup(3);
    let out = tempfile::tempdir().unwrap();
    let r = commands::perfetto(
        dir.path(),
        Some(out.path()),
        None,
        sqtt_tools::perfetto::Format::Json,
        &opts(),
        &NoProgress,
    )
    .unwrap();
    assert_eq!(r.files.len(), 2);
    assert_eq!(r.diag.count(kind::UNMATCHED_ENTER), truth.unmatched_enter);
    for f in &r.files {
        let text = std::fs::read_to_string(f).unwrap();
        let v: Value = serde_json::from_str(&text).expect("valid JSON");
        let ui = f
            .file_name()
            .unwrap()
            .to_string_lossy()
            .trim_end_matches(".perfetto.json")
            .to_string();
        let got = events_by_thread(&v);
        let want = &sim::without_end_names(&truth.perfetto[&ui]);
        assert_eq!(got.len(), want.len(), "{ui}: threads");
        for (k, evs) in want {
            assert_eq!(got.get(k), Some(evs), "{ui}: thread {k:?}");
        }
        // Sorted per thread, every B matched by an E.
        for evs in got.values() {
            assert!(evs.windows(2).all(|w| w[0].3 <= w[1].3));
            let mut depth = 0i64;
            for e in evs {
                match e.0.as_str() {
                    "B" => depth += 1,
                    "E" => depth -= 1,
                    _ => {}
                }
                assert!(depth >= 0);
            }
            assert_eq!(depth, 0);
        }
        // Named threads and processes.
        let metas: Vec<&Value> = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "M")
            .collect();
        assert!(metas
            .iter()
            .any(|e| e["name"] == "thread_name" && e["args"]["name"] == "SE0/CU0/SIMD0/W0#0"));
        assert!(metas.iter().any(|e| e["name"] == "process_name"));
        for e in v["traceEvents"].as_array().unwrap() {
            if e["ph"] == "i" {
                assert_eq!(e["s"], "t");
                assert_eq!(e["cat"], "sqtt.point");
            }
        }
    }
}

#[test]
fn perfetto_clock_rate_converts_to_ns() {
    let (dir, truth) = setup(1);
    let out = tempfile::tempdir().unwrap();
    let r = commands::perfetto(
        dir.path(),
        Some(out.path()),
        Some(2.0),
        sqtt_tools::perfetto::Format::Json,
        &opts(),
        &NoProgress,
    )
    .unwrap();
    let ui = "ui_output_agent_2_dispatch_4";
    let f = r
        .files
        .iter()
        .find(|f| f.to_string_lossy().contains(ui))
        .unwrap();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
    let got = events_by_thread(&v);
    for (k, evs) in &truth.perfetto[ui] {
        let g = &got[k];
        for (a, b) in g.iter().zip(evs) {
            // ts is in µs of ns = cycles / 2.
            assert!((a.3 as f64 - b.3 as f64 / 2.0).abs() <= 1.0, "{a:?} {b:?}");
        }
    }
}

#[test]
fn perfetto_default_output_is_beside_the_ui_dirs() {
    let (dir, _) = setup(1);
    let r = commands::perfetto(
        dir.path(),
        None,
        None,
        sqtt_tools::perfetto::Format::Json,
        &opts(),
        &NoProgress,
    )
    .unwrap();
    for f in &r.files {
        assert_eq!(f.parent().unwrap(), dir.path());
        assert!(f.is_file());
    }
}

fn parse_addr(v: &Value) -> u64 {
    match v {
        Value::String(s) => u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap(),
        other => other.as_u64().unwrap(),
    }
}

#[test]
fn memory_matches_ground_truth() {
    let (dir, truth) = setup(2);
    let (r, out) =
        commands::memory(dir.path(), Some(Vec::<u8>::new()), 4, &opts(), &NoProgress).unwrap();
    let v: Value = serde_json::from_slice(&out.unwrap()).expect("valid JSON");
    let mut got = Vec::new();
    for t in v["traces"].as_array().unwrap() {
        let addrs = t
            .get("addresses")
            .or_else(|| t.get("indices"))
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(parse_addr)
            .collect();
        got.push(sim::ExpBlock {
            ui: t["ui_dir"].as_str().unwrap().into(),
            se: t["se"].as_u64().unwrap() as u32,
            cu: t["cu"].as_u64().unwrap() as u32,
            simd: t["simd"].as_u64().unwrap() as u32,
            wave_id: t["wave_id"].as_u64().unwrap() as u32,
            instance: t["instance"].as_u64().unwrap() as u32,
            marker_id: t["marker_id"].as_u64().unwrap() as u32,
            time: t["time"].as_u64().unwrap(),
            lanes: t["lanes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap() as u8)
                .collect(),
            addresses: addrs,
        });
        assert!(t["source_loc"].is_string(), "{t}");
    }
    let mut want = truth.blocks.clone();
    want.sort();
    got.sort();
    assert_eq!(got.len(), want.len());
    assert_eq!(got, want);
    assert_eq!(r.blocks as usize, want.len());
    // Every category is there.
    let cats: std::collections::BTreeSet<&str> = v["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["category"].as_str().unwrap())
        .collect();
    for c in ["memory", "lds", "buffer", "struct_buffer", "ds_permute"] {
        assert!(cats.contains(c), "{c}");
    }
    assert_eq!(r.diag.count(kind::ADDR_SIZE_MISMATCH), 0);
    // Inline chain source location.
    assert!(v["traces"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["source_loc"] == "a.hip:20 -> a.hip:12"));
}

#[test]
fn memory_summary_figures() {
    let (dir, _) = setup(1);
    let (r, _) = commands::memory::<Vec<u8>>(dir.path(), None, 4, &opts(), &NoProgress).unwrap();
    let ops = r.summary.as_array().unwrap();
    let find = |co: u64, id: u64| {
        ops.iter()
            .find(|o| o["code_object"] == co && o["marker_id"] == id)
            .unwrap_or_else(|| panic!("op {co}/{id}"))
    };
    // kernel_d's global load: 32 lanes x 16 B stride, 4 B each, wave 0 full EXEC.
    let ld = find(4, 2);
    assert_eq!(ld["stride"], 16);
    assert_eq!(
        ld["kernels"],
        serde_json::json!(["kernel_d(unsigned int*)"])
    );
    // Full wave: 32 lanes over 512 B = 8 lines of 64 B with 128 B used.
    // EXEC 0x00FF00F0: 12 lanes.
    assert_eq!(ld["executions"], 2);
    assert_eq!(ld["active_lanes"], 32 + 12);
    // Unit-stride 4-byte buffer store (base + 128 + 4*l): 128 B in 2 or 3 lines of 64 B.
    let st = find(4, 4);
    assert_eq!(st["stride"], 4);
    assert_eq!(st["kind"], "store");
    assert_eq!(st["category"], "buffer");
    // kernel_a's contiguous global load: with full EXEC 64 lanes x 4 B = 256 B in 4 lines of
    // 64 B; with EXEC 0x0000FFFF0F0F00FF 32 lanes = 128 B spread over 3 lines (ideal 2).
    // Two waves of each: 768 B in 14 lines of 64 B (ideal 12).
    let a = find(1, 7);
    assert_eq!(a["stride"], 4);
    assert_eq!(a["executions"], 4);
    assert_eq!(a["active_lanes"], 64 * 2 + 32 * 2);
    assert_eq!(a["utilisation_64B"], 0.857);
    assert_eq!(a["coalescing_64B"], 0.857);
    assert_eq!(a["lines_64B_per_exec"], 3.5);
    // 128 B lines: 2 per full wave, 2 per partial one (bytes 0-111 and 128-191).
    assert_eq!(a["lines_128B_per_exec"], 2.0);
    assert_eq!(a["utilisation_128B"], 0.75);
    // The atomic: every lane on one address.
    let at = find(1, 9);
    assert_eq!(at["stride"], 0);
    assert_eq!(at["lines_64B_per_exec"], 1.0);
    // 128 B stride store: one line per lane of 64 B, 4 of 64 B used.
    let s = find(1, 8);
    assert_eq!(s["stride"], 128);
    assert_eq!(s["utilisation_64B"], 0.063);
    assert!(r
        .summary_table
        .contains("addr_trace_load#7 @ a.hip:20 -> a.hip:12"));
}

#[test]
fn perfetto_threads_stay_unique_past_256_instances() {
    // 300 waves in one slot: a thread each, told apart by their instance.
    let s = sim::one_slot(300);
    let dir = tempfile::tempdir().unwrap();
    let truth = s.write(dir.path());
    let out = tempfile::tempdir().unwrap();
    let r = commands::perfetto(
        dir.path(),
        Some(out.path()),
        None,
        sqtt_tools::perfetto::Format::Json,
        &opts(),
        &NoProgress,
    )
    .unwrap();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&r.files[0]).unwrap()).unwrap();
    let got = events_by_thread(&v);
    assert_eq!(got.len(), 300);
    let names: std::collections::BTreeSet<String> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names.len(), 300);
    assert!(names.contains("SE1/CU2/SIMD0/W1#299"));
    let mut want: Vec<Vec<sim::PEvent>> = sim::without_end_names(&truth.perfetto[&s.uis[0].name])
        .into_values()
        .collect();
    let mut have: Vec<Vec<sim::PEvent>> = got.into_values().collect();
    want.sort();
    have.sort();
    assert_eq!(have.len(), want.len());
    assert!(
        have == want,
        "per-thread events differ from the ground truth"
    );
}

/// (count, total, min, max) of some durations.
fn summary(d: &[u64]) -> (u64, u64, u64, u64) {
    (
        d.len() as u64,
        d.iter().sum(),
        *d.iter().min().unwrap(),
        *d.iter().max().unwrap(),
    )
}

#[test]
fn stats_match_ground_truth() {
    use sqtt_tools::stats::{RowKind, StatsReport};
    let (dir, truth) = setup(2);
    let r = commands::stats(dir.path(), Some(2.0), &opts(), &NoProgress).unwrap();
    let rep = &r.report;
    assert_eq!((rep.schema.as_str(), rep.version), ("sqtt-stats", 1));
    let mut want = BTreeMap::new();
    for (k, d) in &truth.waves {
        want.insert((k.clone(), "kernel".to_string(), String::new()), summary(d));
    }
    for ((k, kind, s), d) in &truth.scopes {
        want.insert((k.clone(), kind.clone(), s.clone()), summary(d));
    }
    let mut got = BTreeMap::new();
    for row in &rep.rows {
        let key = (
            row.kernel.clone(),
            row.kind.label().to_string(),
            row.scope.clone().unwrap_or_default(),
        );
        got.insert(
            key,
            (row.count, row.total_cycles, row.min_cycles, row.max_cycles),
        );
        assert!((row.mean_cycles - row.total_cycles as f64 / row.count as f64).abs() < 1e-9);
        assert_eq!(row.total_ns, Some(row.total_cycles as f64 / 2.0));
        assert_eq!(row.max_ns, Some(row.max_cycles as f64 / 2.0));
        assert_eq!(row.kind == RowKind::Kernel, row.scope.is_none());
    }
    assert_eq!(got, want);
    assert!(rep
        .rows
        .windows(2)
        .all(|w| w[0].total_cycles >= w[1].total_cycles));
    // The JSON is the schema type, and reads back.
    let text = serde_json::to_string(rep).unwrap();
    let back: StatsReport = serde_json::from_str(&text).unwrap();
    assert_eq!(&back, rep);
}
