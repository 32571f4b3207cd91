//! Traces with a known answer on which the tools once gave another (issue 29: a differential
//! run against the truth and against AMD's scripts): chunk files listed as plain names out of
//! order, a record long after its wave's end, and waves without records.

#[path = "support/pftrace.rs"]
mod pftrace;
mod sim;

use std::collections::BTreeMap;
use std::path::Path;

use sim::Act::{self, *};
use sqtt_tools::commands;
use sqtt_tools::diag::{kind, NoProgress};
use sqtt_tools::engine::Options;
use sqtt_tools::perfetto::Format;
use sqtt_tools::stats::RowKind;

const KERNEL: &str = "_Z6kernelv";

fn code_object(id: u64) -> sim::CodeObj {
    sim::CodeObj {
        id,
        store: sim::Store::Elf,
        funcmap_text: format!("K:{KERNEL}@k.hip:1\nU:1:alpha\nU:2:beta\nP:3:barrier"),
    }
}

fn wave(cu: u32, wave_id: u32, dispatch: u64, start: u64, acts: Vec<Act>) -> sim::WaveDef {
    sim::WaveDef {
        se: 0,
        cu,
        simd: 0,
        wave_id,
        dispatch,
        start,
        acts,
    }
}

/// One ui directory of dispatch 1 (code object 5) and any more `dispatches`.
fn trace(waves: Vec<sim::WaveDef>, dispatches: Vec<sim::Dispatch>, chunk: usize) -> sim::Sim {
    let mut all = vec![sim::Dispatch {
        kernel_id: 1,
        name: KERNEL.into(),
        codeobj: 5,
    }];
    all.extend(dispatches);
    let mut codeobjs: Vec<sim::CodeObj> = all.iter().map(|d| code_object(d.codeobj)).collect();
    codeobjs.dedup_by_key(|c| c.id);
    sim::Sim {
        codeobjs,
        uis: vec![sim::UiDef {
            name: "ui_output_run1".into(),
            gfxip: "gfx942".into(),
            dispatches: all,
            waves,
            delay: 20,
            phase: [0; 4],
            extra_delays: vec![],
            priv_records: 0,
            chunk,
            normalised: false,
            python_events: true,
        }],
    }
}

fn folded(dir: &Path) -> (BTreeMap<String, u64>, commands::FlamegraphOutput) {
    let r = commands::flamegraph(dir, &Options::default(), &NoProgress).unwrap();
    (r.folded.clone().into_iter().collect(), r)
}

fn read_json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Adds `rows` (`[time, value, cu, simd, wave_id, flags]`) to a shaderdata file, in time order.
fn add_records(file: &Path, rows: &[[u64; 6]]) {
    let mut v = read_json(file);
    let recs = v["records"].as_array_mut().unwrap();
    recs.extend(rows.iter().map(|r| serde_json::json!(r)));
    recs.sort_by_key(|r| r[0].as_u64().unwrap());
    std::fs::write(file, v.to_string()).unwrap();
}

#[test]
fn chunks_listed_as_plain_names_are_read_in_time_order() {
    // One wave: 12,000 records alternating enter and exit of `alpha`, 10 cycles apart, in two
    // chunk files that filenames.json lists as plain names (no begin times), second chunk first.
    let mut acts = Vec::new();
    for _ in 0..6000 {
        acts.extend([Enter(1), Work(2), Exit, Work(2)]);
    }
    let s = trace(vec![wave(0, 0, 1, 1000, acts)], vec![], 6000);
    let dir = tempfile::tempdir().unwrap();
    let truth = s.write(dir.path());
    let ui = dir.path().join("ui_output_run1");
    assert!(ui.join("shaderdata_0_1.json").is_file());
    std::fs::write(
        ui.join("filenames.json"),
        serde_json::json!({
            "gfxip": "gfx942",
            "shaderdata_filenames": {"0": ["shaderdata_0_1.json", "shaderdata_0_0.json"]},
        })
        .to_string(),
    )
    .unwrap();

    let (got, r) = folded(dir.path());
    assert_eq!(got[&format!("{KERNEL};alpha")], 60_000);
    assert_eq!(got, truth.folded);
    // Nothing was out of order once the chunks are in their places.
    assert_eq!(r.diag.count(kind::OUT_OF_ORDER), 0, "{}", r.diag);
    assert_eq!(r.diag.count(kind::TOO_LATE), 0, "{}", r.diag);

    let st = commands::stats(dir.path(), None, &Options::default(), &NoProgress).unwrap();
    let alpha = st
        .report
        .rows
        .iter()
        .find(|r| r.scope.as_deref() == Some("alpha"))
        .unwrap();
    assert_eq!(
        (alpha.count, alpha.min_cycles, alpha.max_cycles),
        (6000, 10, 10)
    );
}

/// The JSON timeline's events of the wave threads, by thread name: (ph, name, ts in cycles).
fn json_events(file: &Path) -> BTreeMap<String, Vec<(String, String, u64)>> {
    let v = read_json(file);
    let mut names = BTreeMap::new();
    let mut out: BTreeMap<String, Vec<(String, String, u64)>> = BTreeMap::new();
    let evs = v["traceEvents"].as_array().unwrap();
    for e in evs {
        if e["ph"] == "M" && e["name"] == "thread_name" {
            names.insert(
                (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap()),
                e["args"]["name"].as_str().unwrap().to_string(),
            );
        }
    }
    for e in evs {
        if e["ph"] == "M" {
            continue;
        }
        let name = &names[&(e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap())];
        let ts = (e["ts"].as_f64().unwrap() * 1000.0).round() as u64;
        out.entry(name.clone()).or_default().push((
            e["ph"].as_str().unwrap().to_string(),
            e["name"].as_str().unwrap_or_default().to_string(),
            ts,
        ));
    }
    for n in names.values() {
        out.entry(n.clone()).or_default();
    }
    out
}

#[test]
fn a_record_long_after_its_wave_ends_does_not_stretch_it() {
    let acts = || vec![Work(30), Enter(1), Work(100), Point(3), Exit, Work(20)];
    let start = 1000;
    let s = trace(
        vec![
            wave(0, 0, 1, start, acts()),
            // The same slot's next wave, long after.
            wave(0, 0, 1, start + 100_000, acts()),
        ],
        vec![],
        1000,
    );
    let dir = tempfile::tempdir().unwrap();
    let truth = s.write(dir.path());
    let durations = &truth.waves[KERNEL];
    let end = start + durations[0];
    // One IMM point record 38,700 cycles after the first wave's end (before the slot's next
    // wave starts): still that wave's (it may be draining), but its end stays where occupancy
    // puts it.
    let file = dir.path().join("ui_output_run1/shaderdata_0_0.json");
    add_records(&file, &[[end + 38_700, 3 << 2, 0, 0, 0, 1]]);

    let (got, r) = folded(dir.path());
    assert_eq!(got, truth.folded, "{}", r.diag);
    assert_eq!(got[KERNEL], truth.folded[KERNEL]);
    assert_eq!(r.diag.count(kind::AFTER_END), 1, "{}", r.diag);
    assert!(
        r.diag
            .to_string()
            .contains("38700 cycles after the wave's end"),
        "{}",
        r.diag
    );

    let st = commands::stats(dir.path(), None, &Options::default(), &NoProgress).unwrap();
    let k = st
        .report
        .rows
        .iter()
        .find(|r| r.kind == RowKind::Kernel)
        .unwrap();
    assert_eq!(k.count, 2);
    assert_eq!(k.total_cycles, durations.iter().sum::<u64>());
    assert_eq!(st.diag.count(kind::AFTER_END), 1);

    // The point is the first wave's, at its end.
    let out = tempfile::tempdir().unwrap();
    let p = commands::perfetto(
        dir.path(),
        Some(out.path()),
        None,
        Format::Json,
        &Options::default(),
        &NoProgress,
    )
    .unwrap();
    let evs = json_events(&p.files[0]);
    let first = evs.iter().find(|(n, _)| n.ends_with("#0")).unwrap().1;
    assert_eq!(first.last().unwrap(), &("i".into(), "barrier".into(), end));
    let second = evs.iter().find(|(n, _)| n.ends_with("#1")).unwrap().1;
    assert_eq!(second.iter().filter(|e| e.0 == "i").count(), 1);
}

#[test]
fn every_wave_counts_its_whole_span_with_or_without_records() {
    let marked = || vec![Work(30), Enter(1), Work(100), Exit, Work(20)];
    let idle = || vec![Work(400)];
    let s = trace(
        vec![
            wave(0, 0, 1, 1000, marked()),
            // No record at all.
            wave(0, 1, 1, 1010, idle()),
            // Only a privileged record (dropped by every tool).
            wave(0, 2, 1, 1020, idle()),
            // A wave of a slot that also runs a later wave with records.
            wave(1, 0, 1, 1030, idle()),
            wave(1, 0, 1, 5000, marked()),
            // Dispatch 2, whose code object is missing: one wave with records (none can be
            // read), one without.
            wave(2, 0, 2, 1040, marked()),
            wave(2, 1, 2, 1050, idle()),
        ],
        vec![sim::Dispatch {
            kernel_id: 2,
            name: "_Z5otherv".into(),
            codeobj: 6,
        }],
        1000,
    );
    let dir = tempfile::tempdir().unwrap();
    let truth = s.write(dir.path());
    std::fs::remove_file(dir.path().join("run_code_object_id_6.out")).unwrap();
    // A second code object in the directory, so that none serves every dispatch.
    std::fs::copy(
        dir.path().join("run_code_object_id_5.out"),
        dir.path().join("run_code_object_id_7.out"),
    )
    .unwrap();
    let ui = dir.path().join("ui_output_run1");
    add_records(
        &ui.join("shaderdata_0_0.json"),
        &[[1100, 0xFFFF_FFFF, 2, 0, 0, 2]],
    );
    // And a wave that starts and never ends, with no record: its length is unknown.
    let occ_path = ui.join("occupancy.json");
    let mut occ = read_json(&occ_path);
    occ["0"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!([1060, 3, 0, 0, 1, 1, 0, 0, 0, 0, 0]));
    std::fs::write(&occ_path, occ.to_string()).unwrap();

    let spans = |k: &str| truth.waves[k].clone();
    let mut want: BTreeMap<String, u64> = truth
        .folded
        .iter()
        .filter(|(k, _)| k.starts_with(KERNEL))
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    // Dispatch 2's records cannot be read: its waves are their kernel frame alone.
    want.insert("_Z5otherv".into(), spans("_Z5otherv").iter().sum());
    let (got, r) = folded(dir.path());
    assert_eq!(got, want, "{}", r.diag);
    assert_eq!(r.totals.run.waves, 7);
    assert_eq!(r.diag.count(kind::NO_LENGTH), 1, "{}", r.diag);

    let st = commands::stats(dir.path(), None, &Options::default(), &NoProgress).unwrap();
    for (k, d) in [(KERNEL, spans(KERNEL)), ("_Z5otherv", spans("_Z5otherv"))] {
        let row = st
            .report
            .rows
            .iter()
            .find(|r| r.kind == RowKind::Kernel && r.kernel == k)
            .unwrap();
        assert_eq!(row.count, d.len() as u64, "{k}");
        assert_eq!(row.total_cycles, d.iter().sum::<u64>(), "{k}");
        assert_eq!(row.min_cycles, *d.iter().min().unwrap(), "{k}");
    }

    // A thread per wave in both Perfetto formats, the record-less ones empty.
    let out = tempfile::tempdir().unwrap();
    for format in [Format::Json, Format::Protobuf] {
        let p = commands::perfetto(
            dir.path(),
            Some(out.path()),
            None,
            format,
            &Options::default(),
            &NoProgress,
        )
        .unwrap();
        let tracks = match format {
            Format::Json => json_events(&p.files[0]).len(),
            Format::Protobuf => pftrace::replay(&pftrace::decode(&p.files[0])).threads.len(),
        };
        assert_eq!(tracks, 7, "{format:?}");
    }
}
