//! The tools on what rocprofv3 and att_tool really write (issue 13): normalised JSON, IMM
//! records, code objects by ID, nested layouts, file order, missing code objects.

mod sim;

use std::collections::BTreeMap;

use sqtt_tools::commands;
use sqtt_tools::diag::{kind, NoProgress};
use sqtt_tools::engine::Options;

fn folded_of(dir: &std::path::Path) -> (BTreeMap<String, u64>, commands::FlamegraphOutput) {
    let r = commands::flamegraph(dir, &Options::default(), &NoProgress).unwrap();
    (r.folded.iter().cloned().collect(), r)
}

/// The kernel_c frames (tile, reduce, step) of the packed gfx12 code object.
fn kernel_c(m: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    m.iter()
        .filter(|(k, _)| k.starts_with("_Z8kernel_cv"))
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

#[test]
fn att_tool_normalised_json_is_not_corrected_again() {
    let mut s = sim::scenario(2);
    s.uis[1].normalised = true;
    let dir = tempfile::tempdir().unwrap();
    let truth = s.write(dir.path());
    let (got, r) = folded_of(dir.path());
    assert!(!kernel_c(&truth.folded).is_empty());
    assert_eq!(kernel_c(&got), kernel_c(&truth.folded));
    assert_eq!(got, truth.folded);
    assert_eq!(
        r.totals.run.corrected, 0,
        "normalised times corrected again"
    );
    assert_eq!(r.diag.count(kind::NORMALISED), 1);

    // The same trace as rocprofv3 wrote it (raw packed headers) is still corrected.
    let mut s = sim::scenario(2);
    s.uis[1].normalised = false;
    let dir = tempfile::tempdir().unwrap();
    let truth = s.write(dir.path());
    let (got, r) = folded_of(dir.path());
    assert_eq!(got, truth.folded);
    assert_eq!(r.totals.run.corrected, truth.corrected_headers);
    assert_eq!(r.diag.count(kind::NORMALISED), 0);
}

#[test]
fn imm_records_are_never_packed_headers() {
    let mut s = sim::scenario(1);
    // IMM points spread over the shader-clock window of the packed code object's waves: read
    // as packed headers with clock 0, one of them would become the domain minimum.
    for w in s.uis[1].waves.iter_mut().filter(|w| w.dispatch == 4) {
        let mut acts = Vec::new();
        for (i, a) in w.acts.drain(..).enumerate() {
            acts.push(a);
            if i % 3 == 1 {
                acts.push(sim::Act::Work(9_000 + 4_111 * i as u64));
                acts.push(sim::Act::ImmPoint(4));
            }
        }
        w.acts = acts;
    }
    let dir = tempfile::tempdir().unwrap();
    let truth = s.write(dir.path());
    let (got, r) = folded_of(dir.path());
    assert_eq!(kernel_c(&got), kernel_c(&truth.folded));
    assert_eq!(got, truth.folded);
    assert_eq!(r.totals.run.corrected, truth.corrected_headers);
}

fn wave(se: u32, cu: u32, wave_id: u32, dispatch: u64, start: u64) -> sim::WaveDef {
    use sim::Act::*;
    sim::WaveDef {
        se,
        cu,
        simd: 0,
        wave_id,
        dispatch,
        start,
        acts: vec![
            Work(30),
            Enter(1),
            Work(100 + 7 * u64::from(wave_id)),
            Enter(2),
            Work(50),
            Point(3),
            Exit,
            Work(20),
            Exit,
            Work(10),
        ],
    }
}

fn ui(name: &str, dispatches: Vec<sim::Dispatch>, python_events: bool) -> sim::UiDef {
    let mut waves = Vec::new();
    for (i, d) in dispatches.iter().enumerate() {
        for k in 0..3u32 {
            waves.push(wave(
                k % 2,
                i as u32,
                k,
                d.kernel_id,
                100 + 1000 * i as u64 + 13 * u64::from(k),
            ));
        }
    }
    sim::UiDef {
        name: name.into(),
        gfxip: "gfx942".into(),
        dispatches,
        waves,
        delay: 20,
        phase: [0; 4],
        extra_delays: vec![],
        priv_records: 0,
        chunk: 1000,
        normalised: false,
        python_events,
    }
}

/// Two code objects with the same kernel name and different funcmaps.
fn twins(python: bool) -> sim::Sim {
    let co = |id: u64, a: &str, b: &str| sim::CodeObj {
        id,
        store: sim::Store::Elf,
        funcmap_text: format!("K:_Z6kernelv@k.hip:1\nU:1:{a}\nU:2:{b}\nP:3:barrier"),
    };
    let name = |id: u64| {
        if python {
            "_Z6kernelv".to_string()
        } else {
            format!("{id} / 0x{:x}", 0x1000 * id)
        }
    };
    let dispatches = vec![
        sim::Dispatch {
            kernel_id: 1,
            name: name(5),
            codeobj: 5,
        },
        sim::Dispatch {
            kernel_id: 2,
            name: name(6),
            codeobj: 6,
        },
    ];
    let ui_name = if python {
        "ui_output_run1"
    } else {
        "ui_output_agent_7_dispatch_1"
    };
    sim::Sim {
        codeobjs: vec![co(5, "alpha", "beta"), co(6, "gamma", "delta")],
        uis: vec![ui(ui_name, dispatches, python)],
    }
}

#[test]
fn dispatches_go_to_code_objects_by_id() {
    for python in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let truth = twins(python).write(dir.path());
        let (got, r) = folded_of(dir.path());
        assert_eq!(got, truth.folded, "python writer: {python}");
        assert!(got.keys().any(|k| k.ends_with(";alpha;beta")));
        assert!(got.keys().any(|k| k.ends_with(";gamma;delta")));
        assert!(!got.keys().any(|k| k.contains("marker_")), "{got:?}");
        assert_eq!(r.diag.count(kind::UNKNOWN_ID), 0);
        assert_eq!(r.diag.count(kind::AMBIGUOUS_KERNEL), 0);
    }
    // The same names with no ID anywhere: said so, never the other code object's names.
    let mut s = twins(true);
    s.uis[0].python_events = false;
    let dir = tempfile::tempdir().unwrap();
    s.write(dir.path());
    let (got, r) = folded_of(dir.path());
    assert_eq!(r.diag.count(kind::AMBIGUOUS_KERNEL), 2);
    let frames: Vec<&str> = got.keys().flat_map(|k| k.split(';')).collect();
    assert!(!frames.contains(&"gamma") && !frames.contains(&"alpha"));
}
