//! The tools on what rocprofv3 and att_tool really write (issue 13): normalised JSON, IMM
//! records, code objects by ID, nested layouts, file order, missing code objects.

mod sim;

use std::collections::BTreeMap;

use sqtt_tools::commands;
use sqtt_tools::diag::{kind, NoProgress};
use sqtt_tools::engine::Options;

fn folded_of(dir: &std::path::Path) -> (BTreeMap<String, u64>, commands::FlamegraphOutput) {
    let r = commands::flamegraph(dir, &Options::default(), &NoProgress).unwrap();
    (r.folded.clone().into_iter().collect(), r)
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

/// One process's run: one code object (ID 5, user scopes `a` then `b`), one ui directory.
fn process(a: &str, b: &str) -> sim::Sim {
    sim::Sim {
        codeobjs: vec![sim::CodeObj {
            id: 5,
            store: sim::Store::Elf,
            funcmap_text: format!("K:_Z6kernelv@k.hip:1\nU:1:{a}\nU:2:{b}\nP:3:barrier"),
        }],
        uis: vec![ui(
            "ui_output_run1",
            vec![sim::Dispatch {
                kernel_id: 1,
                name: "_Z6kernelv".into(),
                codeobj: 5,
            }],
            true,
        )],
    }
}

fn add(into: &mut BTreeMap<String, u64>, from: &BTreeMap<String, u64>) {
    for (k, v) in from {
        *into.entry(k.clone()).or_default() += v;
    }
}

#[test]
fn nested_layouts_are_found_with_their_own_code_objects() {
    // DIR/<host>/<pid>/<ui dir not named ui_*>, code objects in a subdirectory, and the same
    // code object ID meaning different code objects in the two processes.
    let root = tempfile::tempdir().unwrap();
    let mut want = BTreeMap::new();
    for (pid, a, b) in [("111", "alpha", "beta"), ("222", "gamma", "delta")] {
        let scratch = tempfile::tempdir().unwrap();
        let truth = process(a, b).write(scratch.path());
        add(&mut want, &truth.folded);
        let pdir = root.path().join("host-a").join(pid);
        std::fs::create_dir_all(pdir.join("code_objects")).unwrap();
        std::fs::rename(
            scratch.path().join("ui_output_run1"),
            pdir.join(format!("decoded_{pid}")),
        )
        .unwrap();
        std::fs::rename(
            scratch.path().join("run_code_object_id_5.out"),
            pdir.join("code_objects")
                .join(format!("{pid}_code_object_id_5.out")),
        )
        .unwrap();
    }
    let (got, r) = folded_of(root.path());
    assert_eq!(r.totals.ui_dirs, 2);
    assert_eq!(got, want);
    assert!(
        got.contains_key("_Z6kernelv;alpha;beta") && got.contains_key("_Z6kernelv;gamma;delta")
    );

    // One ui directory given directly finds its code object in a sibling subdirectory.
    let one = root.path().join("host-a/222/decoded_222");
    let (got, _) = folded_of(&one);
    assert!(got.contains_key("_Z6kernelv;gamma;delta"), "{got:?}");
    assert!(!got.keys().any(|k| k.contains("alpha")));

    // Perfetto files of same-named ui dirs do not overwrite each other.
    let root2 = tempfile::tempdir().unwrap();
    for pid in ["1", "2"] {
        process("x", "y").write(&root2.path().join(pid));
    }
    let out = tempfile::tempdir().unwrap();
    let p = commands::perfetto(
        root2.path(),
        Some(out.path()),
        None,
        sqtt_tools::perfetto::Format::Json,
        &Options::default(),
        &NoProgress,
    )
    .unwrap();
    assert_eq!(p.files.len(), 2);
    assert_ne!(p.files[0], p.files[1]);
    assert!(p.files.iter().all(|f| f.is_file()));
}

/// Rewrites one shaderdata file with records swapped pairwise every `every` records.
fn disorder(path: &std::path::Path, every: usize) -> usize {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let recs = v["records"].as_array_mut().unwrap();
    let mut swapped = 0;
    let mut i = 0;
    while i + 1 < recs.len() {
        if recs[i][0] != recs[i + 1][0] {
            recs.swap(i, i + 1);
            swapped += 1;
        }
        i += every;
    }
    std::fs::write(path, v.to_string()).unwrap();
    swapped
}

#[test]
fn records_are_put_in_time_order_with_a_warning() {
    let s = sim::scenario(2);
    let dir = tempfile::tempdir().unwrap();
    let truth = s.write(dir.path());
    let ui = dir.path().join(&s.uis[0].name);
    let ui2 = dir.path().join(&s.uis[1].name);
    let mut swapped = 0;
    for f in [
        "shaderdata_0_0.json",
        "shaderdata_0_1.json",
        "shaderdata_1_0.json",
    ] {
        swapped += disorder(&ui.join(f), 5);
    }
    swapped += disorder(&ui2.join("shaderdata_0_0.json"), 3);
    assert!(swapped > 50);
    // And the chunk files listed last to first.
    let fpath = ui.join("filenames.json");
    let mut fj: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&fpath).unwrap()).unwrap();
    for (_, files) in fj["shaderdata_filenames"].as_object_mut().unwrap() {
        files.as_array_mut().unwrap().reverse();
    }
    std::fs::write(&fpath, fj.to_string()).unwrap();

    let (got, r) = folded_of(dir.path());
    assert_eq!(got, truth.folded);
    assert_eq!(r.totals.run.corrected, truth.corrected_headers);
    assert_eq!(r.diag.count(kind::OUT_OF_ORDER), swapped as u64);
    assert_eq!(r.diag.count(kind::TOO_LATE), 0);
    assert_eq!(r.diag.count(kind::CUT_SHORT), 0);
}

#[test]
fn missing_code_objects_are_named_and_their_records_dropped() {
    let root = tempfile::tempdir().unwrap();
    let truth = process("alpha", "beta").write(root.path());
    let keep = tempfile::tempdir().unwrap();
    let co = keep.path().join("app.co");
    std::fs::rename(root.path().join("run_code_object_id_5.out"), &co).unwrap();

    let (got, r) = folded_of(root.path());
    // Payload counts unknown: nothing is read as a marker, each wave keeps its time.
    let total: u64 = truth.folded.values().sum();
    assert_eq!(got, BTreeMap::from([("_Z6kernelv".to_string(), total)]));
    assert_eq!(r.diag.count(kind::NO_CODEOBJ), truth.records);
    assert_eq!(r.totals.run.unread, truth.records);
    let text = r.diag.to_string();
    assert!(text.contains("of code object 5"), "{text}");
    assert!(
        text.contains(&format!(
            "looked for *_code_object_id_<N>.out in and below {}",
            root.path().display()
        )),
        "{text}"
    );
    assert!(text.contains("ui_output_run1/code.json") && text.contains("found: none"));

    // --code-object gives the funcmap back.
    let o = Options {
        code_objects: vec![co.clone()],
        ..Options::default()
    };
    let r = commands::flamegraph(root.path(), &o, &NoProgress).unwrap();
    let got: BTreeMap<String, u64> = r.folded.into_iter().collect();
    assert_eq!(got, truth.folded);
    assert_eq!(r.diag.count(kind::NO_CODEOBJ), 0);

    // The C++ writer's name ("<co> / 0x<addr>") matches no K: row: the --code-object funcmap
    // still serves it, also when given by several code objects with one funcmap (an
    // executable built for several targets).
    let mut s = process("alpha", "beta");
    s.uis[0].python_events = false;
    s.uis[0].dispatches[0].name = "5 / 0x5000".into();
    let cpp = tempfile::tempdir().unwrap();
    let truth_cpp = s.write(cpp.path());
    std::fs::remove_file(cpp.path().join("run_code_object_id_5.out")).unwrap();
    let twin = keep.path().join("app_gfx1100.co");
    std::fs::copy(&co, &twin).unwrap();
    let o = Options {
        code_objects: vec![co.clone(), twin],
        ..Options::default()
    };
    let r = commands::flamegraph(cpp.path(), &o, &NoProgress).unwrap();
    let got: BTreeMap<String, u64> = r.folded.into_iter().collect();
    assert_eq!(got, truth_cpp.folded);
    assert!(got.contains_key("5 / 0x5000;alpha;beta"));

    // The same from the command line; a bad --code-object is a usage error naming it.
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_sqtt"))
            .args(args)
            .output()
            .unwrap()
    };
    let dir = root.path().to_str().unwrap();
    let o = run(&["flamegraph", dir, "--code-object", co.to_str().unwrap()]);
    assert!(o.status.success());
    let folded = String::from_utf8(o.stdout).unwrap();
    assert!(folded.contains("_Z6kernelv;alpha;beta "), "{folded}");
    for bad in ["/nonexistent/app", keep.path().to_str().unwrap()] {
        let o = run(&["flamegraph", dir, "--code-object", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        let err = String::from_utf8(o.stderr).unwrap();
        assert!(err.contains(&format!("--code-object {bad}")), "{err}");
    }
    let text_file = keep.path().join("notes.txt");
    std::fs::write(&text_file, "not a code object").unwrap();
    let o = run(&[
        "flamegraph",
        dir,
        "--code-object",
        text_file.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn short_names_drop_templates_parameters_and_return_types() {
    const KERNEL: &str = "_ZN7rocprim6detail11scan_kernelINS0_6configILj256EEEiEEvPT0_jSt4pairIifE";
    const REDUCE: &str = "_ZNK7rocprim6detail10block_scanIiE6reduceIZ4mainEUliE_EEiiT_";
    const HELPER: &str = "_ZN7rocprim6detail12_GLOBAL__N_16helperEPFiiEc";
    // The names a reader wants (by hand, from the demangled forms).
    let short = BTreeMap::from([
        (KERNEL, "rocprim::detail::scan_kernel"),
        (REDUCE, "rocprim::detail::block_scan::reduce"),
        (HELPER, "rocprim::detail::(anonymous namespace)::helper"),
        ("tile<8>", "tile<8>"),
    ]);
    let s = sim::Sim {
        codeobjs: vec![sim::CodeObj {
            id: 1,
            store: sim::Store::Elf,
            funcmap_text: format!(
                "K:{KERNEL}@r.hip:1\nF:1:{REDUCE}@r.hip:2\nF:2:{HELPER}@r.hip:3\nU:3:tile<8>"
            ),
        }],
        uis: vec![ui(
            "ui_output_agent_1_dispatch_1",
            vec![sim::Dispatch {
                kernel_id: 1,
                name: KERNEL.into(),
                codeobj: 1,
            }],
            false,
        )],
    };
    let dir = tempfile::tempdir().unwrap();
    let truth = s.write(dir.path());
    // The simulated waves enter 1 then 2 (see `wave`); user scope 3 is not used by them.
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    for (k, v) in &truth.folded {
        let k: Vec<&str> = k.split(';').map(|f| short[f]).collect();
        *want.entry(k.join(";")).or_default() += v;
    }
    let o = Options {
        short_names: true,
        ..Options::default()
    };
    let r = commands::flamegraph(dir.path(), &o, &NoProgress).unwrap();
    let got: BTreeMap<String, u64> = r.folded.into_iter().collect();
    assert_eq!(got, want);
    assert!(got.contains_key(
        "rocprim::detail::scan_kernel;rocprim::detail::block_scan::reduce;rocprim::detail::(anonymous namespace)::helper"
    ));

    // Tables and slices use the same names.
    let st = commands::stats(dir.path(), None, &o, &NoProgress).unwrap();
    for row in &st.report.rows {
        assert_eq!(row.kernel, "rocprim::detail::scan_kernel");
        if let Some(s) = &row.scope {
            assert!(short.values().any(|v| v == s), "{s}");
        }
    }
    let out = tempfile::tempdir().unwrap();
    let p = commands::perfetto(
        dir.path(),
        Some(out.path()),
        None,
        sqtt_tools::perfetto::Format::Json,
        &o,
        &NoProgress,
    )
    .unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&p.files[0]).unwrap()).unwrap();
    for e in v["traceEvents"].as_array().unwrap() {
        if e["ph"] == "B" {
            let n = e["name"].as_str().unwrap();
            assert!(short.values().any(|v| *v == n), "{n}");
        }
    }
}

#[test]
fn a_ui_dir_given_by_a_relative_path_finds_the_code_objects_beside_it() {
    let root = tempfile::tempdir().unwrap();
    let truth = process("alpha", "beta").write(root.path());
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_sqtt"))
        .args(["flamegraph", "ui_output_run1"])
        .current_dir(root.path())
        .output()
        .unwrap();
    assert!(o.status.success());
    let got: BTreeMap<String, u64> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (s, n) = l.rsplit_once(' ').unwrap();
            (s.to_string(), n.parse().unwrap())
        })
        .collect();
    assert_eq!(got, truth.folded);
}

#[test]
fn a_record_too_far_out_of_order_is_counted_apart() {
    let s = sim::scenario(3);
    let dir = tempfile::tempdir().unwrap();
    s.write(dir.path());
    // The first record of SE 0 moved to the end of its last chunk: thousands of records late.
    let ui = dir.path().join(&s.uis[0].name);
    let first = ui.join("shaderdata_0_0.json");
    let mut chunks: Vec<std::path::PathBuf> = (0..)
        .map(|i| ui.join(format!("shaderdata_0_{i}.json")))
        .take_while(|p| p.is_file())
        .collect();
    assert!(chunks.len() > 7, "{} chunks", chunks.len());
    let last = chunks.pop().unwrap();
    let read = |p: &std::path::Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let mut a = read(&first);
    let moved = a["records"].as_array_mut().unwrap().remove(0);
    std::fs::write(&first, a.to_string()).unwrap();
    let mut b = read(&last);
    b["records"].as_array_mut().unwrap().push(moved);
    std::fs::write(&last, b.to_string()).unwrap();

    let (_, r) = folded_of(dir.path());
    assert_eq!(r.diag.count(kind::TOO_LATE), 1);
    assert_eq!(r.diag.count(kind::OUT_OF_ORDER), 0);
}
