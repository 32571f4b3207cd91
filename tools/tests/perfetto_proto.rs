//! `sqtt perfetto`'s protobuf trace against the simulated run's ground truth: every file is
//! decoded by `protoc --decode` against tools/proto/perfetto_trace.proto and replayed as
//! Perfetto's trace processor reads it (sequences, interning, incremental clocks, tracks).

#[path = "support/pftrace.rs"]
mod pftrace;
mod sim;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use sqtt_tools::commands;
use sqtt_tools::diag::{kind, NoProgress};
use sqtt_tools::engine::Options;
use sqtt_tools::perfetto::Format;

fn setup(scale: usize) -> (tempfile::TempDir, sim::Truth) {
    let dir = tempfile::tempdir().unwrap();
    let truth = sim::scenario(scale).write(dir.path());
    (dir, truth)
}

fn ui_of(f: &Path) -> String {
    f.file_name()
        .unwrap()
        .to_string_lossy()
        .trim_end_matches(".pftrace")
        .to_string()
}

/// The replay's events keyed as the ground truth keys them: (dispatch, JSON-layout tid), the
/// tid computed from the coordinates in the thread's name.
fn by_truth_key(r: &pftrace::Replay) -> BTreeMap<(u64, u64), Vec<sim::PEvent>> {
    let mut out = BTreeMap::new();
    for (uuid, evs) in &r.events {
        let t = &r.threads[uuid];
        let pname = &r.processes[&t.pid];
        let dispatch = if pname.starts_with("dispatch ") {
            t.pid as u64
        } else {
            0
        };
        let nums: Vec<u32> = t
            .name
            .split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().unwrap())
            .collect();
        assert_eq!(nums.len(), 5, "{}", t.name);
        let tid = sim::tid(nums[0], nums[1], nums[2], nums[3], nums[4]);
        assert!(out.insert((dispatch, tid), evs.clone()).is_none());
    }
    out
}

fn run(dir: &Path, out: &Path, clock: Option<f64>, format: Format) -> commands::PerfettoOutput {
    commands::perfetto(
        dir,
        Some(out),
        clock,
        format,
        &Options::default(),
        &NoProgress,
    )
    .unwrap()
}

#[test]
fn protobuf_matches_ground_truth() {
    let (dir, truth) = setup(3);
    let out = tempfile::tempdir().unwrap();
    let r = run(dir.path(), out.path(), None, Format::Protobuf);
    assert_eq!(r.files.len(), 2);
    assert_eq!(r.diag.count(kind::UNMATCHED_ENTER), truth.unmatched_enter);
    let mut events = 0;
    for f in &r.files {
        assert!(f.to_string_lossy().ends_with(".pftrace"), "{f:?}");
        let ui = ui_of(f);
        let rep = pftrace::replay(&pftrace::decode(f));
        events += rep.events.values().map(Vec::len).sum::<usize>();
        let got = by_truth_key(&rep);
        let want = sim::without_end_names(&truth.perfetto[&ui]);
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>(),
            "{ui}: threads"
        );
        for (k, evs) in &want {
            assert_eq!(&got[k], evs, "{ui}: thread {k:?}");
        }
        // Slices nest on every track, in time order.
        for evs in rep.events.values() {
            assert!(evs.windows(2).all(|w| w[0].3 <= w[1].3));
            let mut depth = 0i64;
            for e in evs {
                depth += match e.0.as_str() {
                    "B" => 1,
                    "E" => -1,
                    _ => 0,
                };
                assert!(depth >= 0);
            }
            assert_eq!(depth, 0);
        }
        // Processes are the dispatches, named after their kernels; one thread per wave.
        for (pid, name) in &rep.processes {
            assert!(
                name.starts_with(&format!("dispatch {pid}: ")),
                "{pid} {name}"
            );
        }
        let names: BTreeSet<&str> = rep.threads.values().map(|t| t.name.as_str()).collect();
        assert_eq!(names.len(), rep.threads.len());
        let tids: BTreeSet<i64> = rep.threads.values().map(|t| t.tid).collect();
        assert_eq!(tids.len(), rep.threads.len());
        // Points carry their ID and value.
        for (uuid, evs) in &rep.events {
            let points: Vec<&sim::PEvent> = evs.iter().filter(|e| e.0 == "i").collect();
            let args = rep.args.get(uuid).map(Vec::as_slice).unwrap_or(&[]);
            assert_eq!(points.len(), args.len());
            for (p, a) in points.iter().zip(args) {
                assert_eq!(p.2, "sqtt.point");
                assert!(a["id"].parse::<u32>().unwrap() > 0, "{a:?}");
                // The value only when it is not the legacy form of the ID.
                if let Some(v) = a.get("value") {
                    assert_ne!(
                        v.parse::<u32>().unwrap(),
                        a["id"].parse::<u32>().unwrap() << 2
                    );
                }
            }
        }
    }
    assert_eq!(events as u64, r.events);
}

#[test]
fn protobuf_clock_rate_converts_to_ns() {
    let (dir, truth) = setup(1);
    let out = tempfile::tempdir().unwrap();
    let r = run(dir.path(), out.path(), Some(2.0), Format::Protobuf);
    for f in &r.files {
        let got = by_truth_key(&pftrace::replay(&pftrace::decode(f)));
        let want = &truth.perfetto[&ui_of(f)];
        assert_eq!(got.len(), want.len());
        for (k, evs) in want {
            for (a, b) in got[k].iter().zip(evs) {
                // ns = cycles / 2, rounded.
                assert_eq!(a.3, (b.3 as f64 / 2.0).round() as u64, "{a:?} {b:?}");
            }
        }
    }
}

#[test]
fn protobuf_is_the_default_and_smaller_than_json() {
    let (dir, _) = setup(3);
    let r = commands::perfetto(
        dir.path(),
        None,
        None,
        Format::default(),
        &Options::default(),
        &NoProgress,
    )
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    let js = run(dir.path(), out.path(), None, Format::Json);
    let size =
        |fs: &[PathBuf]| -> u64 { fs.iter().map(|f| std::fs::metadata(f).unwrap().len()).sum() };
    for f in &r.files {
        assert_eq!(f.parent().unwrap(), dir.path());
        assert!(f.to_string_lossy().ends_with(".pftrace"));
    }
    let (pb, json) = (size(&r.files), size(&js.files));
    // Waves of a few dozen events here, where per-wave parts weigh (`cargo bench -p sqtt-tools`
    // prints the ratio on larger traces).
    assert!(pb * 5 <= json, "protobuf {pb} bytes, JSON {json} bytes");
    // In deflated bundles.
    for f in &r.files {
        let (_, bundles) = pftrace::inflate(&std::fs::read(f).unwrap());
        assert!(bundles > 0, "{f:?}");
    }
}

#[test]
fn protobuf_tracks_stay_unique_past_256_instances() {
    // 300 waves in one slot: a thread track and a tid each.
    let s = sim::one_slot(300);
    let dir = tempfile::tempdir().unwrap();
    let truth = s.write(dir.path());
    let out = tempfile::tempdir().unwrap();
    let r = run(dir.path(), out.path(), None, Format::Protobuf);
    let rep = pftrace::replay(&pftrace::decode(&r.files[0]));
    assert_eq!(rep.threads.len(), 300);
    let tids: BTreeSet<i64> = rep.threads.values().map(|t| t.tid).collect();
    assert_eq!(tids, (1..=300).collect());
    assert!(rep
        .threads
        .values()
        .any(|t| t.name.ends_with("/CU2/SIMD0/W1#299")));
    let mut want: Vec<Vec<sim::PEvent>> = sim::without_end_names(&truth.perfetto[&s.uis[0].name])
        .into_values()
        .collect();
    let mut have: Vec<Vec<sim::PEvent>> = rep.events.into_values().collect();
    want.sort();
    have.sort();
    assert!(
        have == want,
        "per-track events differ from the ground truth"
    );
}

/// What a timeline shows, format aside: process names by pid, thread names by (pid, tid), and
/// each thread's events (ph, name, category, ns) and instants' arguments.
#[derive(Debug, Default, PartialEq, Eq)]
struct Shown {
    processes: BTreeMap<i64, String>,
    threads: BTreeMap<(i64, i64), String>,
    events: BTreeMap<(i64, i64), Vec<sim::PEvent>>,
    args: BTreeMap<(i64, i64), Vec<BTreeMap<String, String>>>,
}

fn shown_pftrace(f: &Path) -> Shown {
    let r = pftrace::replay(&pftrace::decode(f));
    let key = |uuid: &u64| (r.threads[uuid].pid, r.threads[uuid].tid);
    Shown {
        processes: r.processes.clone(),
        threads: r
            .threads
            .values()
            .map(|t| ((t.pid, t.tid), t.name.clone()))
            .collect(),
        events: r.events.iter().map(|(u, e)| (key(u), e.clone())).collect(),
        args: r.args.iter().map(|(u, a)| (key(u), a.clone())).collect(),
    }
}

/// The JSON's `M` events (naming processes and threads), which the protobuf trace has as track
/// descriptors.
fn json_names(files: &[PathBuf]) -> u64 {
    files
        .iter()
        .map(|f| {
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
            v["traceEvents"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["ph"] == "M")
                .count() as u64
        })
        .sum()
}

/// A JSON `ts` (µs with three decimals) in ns, exactly.
fn json_ns(ts: &serde_json::Value) -> u64 {
    let text = ts.to_string();
    let (us, frac) = text.split_once('.').unwrap_or((&text, "0"));
    let frac = format!("{frac:0<3}");
    us.parse::<u64>().unwrap() * 1000 + frac[..3].parse::<u64>().unwrap()
}

fn shown_json(f: &Path) -> Shown {
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
    let mut s = Shown::default();
    for e in v["traceEvents"].as_array().unwrap() {
        let pid = e["pid"].as_i64().unwrap();
        let tid = e["tid"].as_i64().unwrap();
        let name = e["name"].as_str().unwrap_or_default().to_string();
        match e["ph"].as_str().unwrap() {
            "M" => {
                let shown = e["args"]["name"].as_str().unwrap().to_string();
                let old = if name == "process_name" {
                    s.processes.insert(pid, shown)
                } else {
                    s.threads.insert((pid, tid), shown)
                };
                assert!(old.is_none(), "{e}: named twice");
            }
            ph => {
                let cat = e["cat"].as_str().unwrap_or_default().to_string();
                s.events.entry((pid, tid)).or_default().push((
                    ph.to_string(),
                    name,
                    cat,
                    json_ns(&e["ts"]),
                ));
                if ph == "i" {
                    let args = e["args"]
                        .as_object()
                        .unwrap()
                        .iter()
                        .map(|(k, v)| {
                            let v = match v {
                                serde_json::Value::String(s) => s.clone(),
                                serde_json::Value::Array(a) => format!(
                                    "[{}]",
                                    a.iter()
                                        .map(|x| x.to_string())
                                        .collect::<Vec<_>>()
                                        .join(",")
                                ),
                                other => other.to_string(),
                            };
                            (k.clone(), v)
                        })
                        .collect();
                    s.args.entry((pid, tid)).or_default().push(args);
                }
            }
        }
    }
    s
}

/// The scenario with what once set the formats apart: a dispatch 0 named by the C++ writer's
/// fallback (`0 / 0x0`), waves with no occupancy, and waves without records.
fn varied() -> sim::Sim {
    let mut s = sim::scenario(2);
    let ui = &mut s.uis[0];
    ui.dispatches.push(sim::Dispatch {
        kernel_id: 0,
        name: "0 / 0x0".into(),
        codeobj: 2,
    });
    let mut w = ui.waves.iter().find(|w| w.dispatch == 2).unwrap().clone();
    (w.dispatch, w.cu, w.start) = (0, 9, 50_000);
    ui.waves.push(w.clone());
    (w.cu, w.start, w.acts) = (10, 60_000, vec![sim::Act::Work(300)]);
    ui.waves.push(w);
    s
}

#[test]
fn both_formats_show_the_same() {
    let cases: Vec<(&str, sim::Sim, Option<f64>, Options)> = vec![
        ("scenario", sim::scenario(3), None, Options::default()),
        (
            "varied, 2.1 GHz, demangled",
            varied(),
            Some(2.1),
            Options {
                demangle: true,
                ..Options::default()
            },
        ),
        (
            "varied, raw markers, short names",
            varied(),
            None,
            Options {
                decode_markers: false,
                short_names: true,
                ..Options::default()
            },
        ),
    ];
    for (what, sim, clock, opts) in cases {
        let dir = tempfile::tempdir().unwrap();
        sim.write(dir.path());
        // Records of a slot with no occupancy rows.
        let occ = dir.path().join(&sim.uis[0].name).join("occupancy.json");
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&occ).unwrap()).unwrap();
        v["1"]
            .as_array_mut()
            .unwrap()
            .retain(|r| !(r[1] == 3 && r[2] == 3 && r[3] == 2));
        std::fs::write(&occ, v.to_string()).unwrap();

        let out = tempfile::tempdir().unwrap();
        let run = |format| {
            commands::perfetto(
                dir.path(),
                Some(out.path()),
                clock,
                format,
                &opts,
                &NoProgress,
            )
            .unwrap()
        };
        let (pb, js) = (run(Format::Protobuf), run(Format::Json));
        assert_eq!(pb.files.len(), js.files.len());
        assert_eq!(
            pb.events,
            js.events - json_names(&js.files),
            "{what}: events"
        );
        let mut arg_names = BTreeSet::new();
        for (p, j) in pb.files.iter().zip(&js.files) {
            let (p, j) = (shown_pftrace(p), shown_json(j));
            assert!(!p.events.is_empty());
            arg_names.extend(p.args.values().flatten().flat_map(|a| a.keys().cloned()));
            assert_eq!(p.processes, j.processes, "{what}: processes");
            assert_eq!(p.threads, j.threads, "{what}: threads");
            assert_eq!(p.events, j.events, "{what}: events");
            assert_eq!(p.args, j.args, "{what}: arguments");
            assert_eq!(p, j, "{what}");
            if what.starts_with("varied") && p.processes.len() > 3 {
                // Dispatch 0 and the records with no occupancy: two processes.
                let pid = |name: &str| {
                    let found = p.processes.iter().find(|(_, n)| n.starts_with(name));
                    *found
                        .unwrap_or_else(|| panic!("{name}: {:?}", p.processes))
                        .0
                };
                let zero = pid("dispatch 0: ");
                let none = pid("unknown dispatch (no occupancy)");
                assert!(zero != none && zero > 0 && none > 0);
            }
        }
        // Points carried every kind of argument.
        for a in ["id", "source_loc", "payload"] {
            assert!(arg_names.contains(a), "{what}: {a} in {arg_names:?}");
        }
        if !opts.decode_markers {
            assert!(arg_names.contains("value"), "{what}");
        }
    }
}
