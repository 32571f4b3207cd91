//! A raw capture is a capture: a synthetic `rocprofv3 --att` directory as the run leaves it
//! (`<pid>_<agent>_shader_engine_<se>_<dispatch>.att`, `<pid>_<gfx>_code_object_id_<N>.out`, and
//! the kernel trace as JSON, CSV or rocprofv3's SQLite database) gives the same flamegraph,
//! Perfetto timelines and stats as the `ui_output_*` directories AMD's decoder makes of the same
//! traces; a flag picks the form, the default reads the raw traces when a kernel trace names
//! their kernels; without one, a best effort that says so.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::json;
use sqtt_markers::encoding::{enter, exit_enter, point, EXIT_VALUE};
use sqtt_markers::Funcmap;
use sqtt_thread_trace::decode::amd_cu;
use sqtt_thread_trace::synth::{Encoder, Form, Slot};
use sqtt_thread_trace::Generation;

#[path = "support/elf.rs"]
mod elf;
#[path = "../fuzz/raw_dir_input.rs"]
mod raw_dir_input;

const PID: u64 = 4242;
const AGENT: u64 = 2;

/// The kernels: (rocprofiler kernel ID, symbol name, code object ID).
const KERNELS: [(u64, &str, u64); 2] = [(11, "_Z4gemmPf", 1), (12, "_Z4tileiPf", 2)];
/// The dispatches: (dispatch ID, kernel ID).
const DISPATCHES: [(u64, u64); 3] = [(3, 12), (5, 11), (8, 12)];

fn funcmap(co: u64) -> Funcmap {
    let text = match co {
        1 => "K:_Z4gemmPf@g.hip:10\nF:1:_Z4loadv@g.hip:3\nF:2:_Z5storev@g.hip:5\nU:3:k loop\nP:4:tick\n",
        _ => "K:_Z4tileiPf@t.hip:20\nF:1:_Z6reducev@t.hip:7\nU:2:phase @ tile\n",
    };
    Funcmap::parse_str(text).unwrap()
}

/// One dispatch's traces: per shader engine its encoder, the stream and its waves.
struct Engine {
    se: u32,
    enc: Encoder,
}

fn wave_records(kernel: u64, k: u64) -> Vec<u32> {
    if kernel == 11 {
        let mut v = vec![enter(1), EXIT_VALUE, enter(3), point(4)];
        for _ in 0..k {
            v.extend([enter(2), EXIT_VALUE]);
        }
        v.extend([exit_enter(1), EXIT_VALUE]);
        v
    } else {
        vec![enter(2), enter(1), EXIT_VALUE, EXIT_VALUE]
    }
}

fn engines(g: Generation, dispatch: u64, kernel: u64) -> Vec<Engine> {
    (0..2u32)
        .map(|se| {
            let mut e = Encoder::new(g);
            let slots: Vec<Slot> = (0..4u32)
                .map(|i| Slot {
                    sa: i & 1,
                    wgp: (i * 3 + se) & 7,
                    simd: i & 3,
                    slot: i + dispatch as u32,
                })
                .collect();
            e.gap(1000 * dispatch);
            for (i, s) in slots.iter().enumerate() {
                e.start(*s, true);
                e.gap(7 + i as u64);
            }
            // Interleaved records of the waves, instruction packets between them.
            let records: Vec<Vec<u32>> = (0..slots.len())
                .map(|i| wave_records(kernel, i as u64 + u64::from(se)))
                .collect();
            let longest = records.iter().map(Vec::len).max().unwrap();
            for step in 0..longest {
                for (i, s) in slots.iter().enumerate() {
                    if let Some(&v) = records[i].get(step) {
                        e.gap(3 + (step as u64 * 5 + i as u64) % 40);
                        e.other(step * 7 + i, 0x5A5A_1234_8765_4321);
                        e.shader_data(*s, v, Form::Full, step % 2 == 0);
                    }
                }
            }
            for s in &slots {
                e.gap(20);
                e.end(*s, true);
            }
            e.flush();
            Engine { se, enc: e }
        })
        .collect()
}

/// Writes the run's directory: raw traces and code objects under `<host>/`, and (with
/// `decoded`) the ui_output_* directories AMD's decoder would make of them.
fn write_run(root: &Path, g: Generation, gfx: &str, decoded: bool) {
    let host = root.join("node0");
    std::fs::create_dir_all(&host).unwrap();
    for (_, _, co) in KERNELS {
        std::fs::write(
            host.join(format!("{PID}_{gfx}_code_object_id_{co}.out")),
            elf::elf_with_funcmap(&funcmap(co).to_bytes()),
        )
        .unwrap();
    }
    // AMD's tool numbers kernel entry points from 1 as the dispatches first run them.
    let mut occupancy_ids: BTreeMap<u64, u64> = BTreeMap::new();
    for (dispatch, kernel) in DISPATCHES {
        let next = occupancy_ids.len() as u64 + 1;
        let kid = *occupancy_ids.entry(kernel).or_insert(next);
        let ui = root.join(format!("ui_output_agent_{AGENT}_dispatch_{dispatch}"));
        let mut listed = serde_json::Map::new();
        let mut occ = serde_json::Map::new();
        for e in engines(g, dispatch, kernel) {
            std::fs::write(
                host.join(format!(
                    "{PID}_{AGENT}_shader_engine_{}_{dispatch}.att",
                    e.se
                )),
                e.enc.bytes(),
            )
            .unwrap();
            if !decoded {
                continue;
            }
            std::fs::create_dir_all(&ui).unwrap();
            let records: Vec<serde_json::Value> = e
                .enc
                .all_records()
                .iter()
                .map(|r| json!([r.time, r.value, r.cu, r.simd, r.wave, r.flags]))
                .collect();
            let file = format!("shaderdata_{}_0.json", e.se);
            std::fs::write(
                ui.join(&file),
                json!({
                    "records_schema": ["time", "value", "cu", "simd", "wave_id", "flags"],
                    "records": records,
                })
                .to_string(),
            )
            .unwrap();
            listed.insert(e.se.to_string(), json!([[file, 0, 1u64 << 40]]));
            let mut rows = Vec::new();
            for w in &e.enc.waves {
                let w = w.wave;
                let cu = amd_cu(g, w.cu);
                rows.push(json!([w.start, cu, w.simd, w.slot, 1, kid]));
                rows.push(json!([w.stop, cu, w.simd, w.slot, 0, kid]));
            }
            occ.insert(e.se.to_string(), json!(rows));
        }
        if decoded {
            let mut names = serde_json::Map::new();
            names.insert("0".into(), json!("0 / 0x0"));
            for (k, id) in &occupancy_ids {
                let n = KERNELS.iter().find(|x| x.0 == *k).unwrap().1;
                names.insert(id.to_string(), json!(n));
            }
            occ.insert("dispatches".into(), json!(names));
            std::fs::write(ui.join("occupancy.json"), json!(occ).to_string()).unwrap();
            std::fs::write(
                ui.join("filenames.json"),
                json!({"gfxip": gfx, "shaderdata_filenames": listed}).to_string(),
            )
            .unwrap();
        }
    }
}

/// The kernel trace in one of rocprofv3's formats, beside the raw traces.
fn write_kernel_trace(root: &Path, format: &str) {
    let host = root.join("node0");
    match format {
        "json" => {
            let symbols: Vec<serde_json::Value> = KERNELS
                .iter()
                .map(|(k, n, co)| {
                    json!({"size": 96, "kernel_id": k, "code_object_id": co, "kernel_name": n,
                           "formatted_kernel_name": n, "kernel_object": 0})
                })
                .collect();
            let dispatches: Vec<serde_json::Value> = DISPATCHES
                .iter()
                .map(|(d, k)| {
                    json!({"size": 80, "kind": 13, "operation": 1, "thread_id": 7,
                           "correlation_id": {"internal": d, "external": 0},
                           "start_timestamp": 100, "end_timestamp": 200,
                           "dispatch_info": {"size": 64, "agent_id": {"handle": AGENT},
                                             "queue_id": {"handle": 1}, "kernel_id": k,
                                             "dispatch_id": d, "private_segment_size": 0,
                                             "group_segment_size": 0,
                                             "workgroup_size": {"x": 64, "y": 1, "z": 1},
                                             "grid_size": {"x": 256, "y": 1, "z": 1}}})
                })
                .collect();
            let doc = json!({"rocprofiler-sdk-tool": [{
                "metadata": {"pid": PID},
                "agents": [],
                "code_objects": [],
                "kernel_symbols": symbols,
                "buffer_records": {"kernel_dispatch": dispatches, "hip_api": []},
            }]});
            std::fs::write(host.join(format!("{PID}_results.json")), doc.to_string()).unwrap();
        }
        "csv" => {
            let mut s = String::from(
                "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Stream_Id\",\"Thread_Id\",\"Dispatch_Id\",\"Kernel_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n",
            );
            for (d, k) in DISPATCHES {
                let n = KERNELS.iter().find(|x| x.0 == k).unwrap().1;
                s +=
                    &format!("\"KERNEL_DISPATCH\",\"Agent 2\",1,0,7,{d},{k},\"{n}\",{d},100,200\n");
            }
            std::fs::write(host.join(format!("{PID}_kernel_trace.csv")), s).unwrap();
        }
        _ => {
            let db = rusqlite::Connection::open(host.join(format!("{PID}_results.db"))).unwrap();
            let uuid = "_0193a3e4_8c47_7b7c_9b6e_5e0c3d2a1f00";
            db.execute_batch(&format!(
                "CREATE TABLE rocpd_info_kernel_symbol{uuid} (id INTEGER PRIMARY KEY, guid TEXT, nid INTEGER, pid INTEGER, code_object_id INTEGER NOT NULL, kernel_name TEXT, display_name TEXT);
                 CREATE TABLE rocpd_kernel_dispatch{uuid} (id INTEGER PRIMARY KEY, guid TEXT, nid INTEGER, pid INTEGER, tid INTEGER, agent_id INTEGER NOT NULL, kernel_id INTEGER NOT NULL, dispatch_id INTEGER NOT NULL, queue_id INTEGER NOT NULL, stream_id INTEGER NOT NULL, start BIGINT NOT NULL, \"end\" BIGINT NOT NULL);
                 CREATE VIEW rocpd_info_kernel_symbol AS SELECT * FROM rocpd_info_kernel_symbol{uuid};
                 CREATE VIEW rocpd_kernel_dispatch AS SELECT * FROM rocpd_kernel_dispatch{uuid};"
            ))
            .unwrap();
            for (k, n, co) in KERNELS {
                db.execute(
                    &format!("INSERT INTO rocpd_info_kernel_symbol{uuid} (id, guid, nid, pid, code_object_id, kernel_name, display_name) VALUES (?1, 'g', 1, 1, ?2, ?3, ?3)"),
                    rusqlite::params![k as i64, co as i64, n],
                )
                .unwrap();
            }
            for (d, k) in DISPATCHES {
                db.execute(
                    &format!("INSERT INTO rocpd_kernel_dispatch{uuid} (id, guid, nid, pid, tid, agent_id, kernel_id, dispatch_id, queue_id, stream_id, start, \"end\") VALUES (?1, 'g', 1, 1, 7, 1, ?2, ?1, 1, 0, 100, 200)"),
                    rusqlite::params![d as i64, k as i64],
                )
                .unwrap();
            }
        }
    }
}

fn sqtt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sqtt"))
        .args(args)
        .output()
        .expect("sqtt runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn run_ok(args: &[&str]) -> (String, String) {
    let o = sqtt(args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    (String::from_utf8_lossy(&o.stdout).into_owned(), stderr(&o))
}

/// Perfetto's JSON traces of a run: file name -> content.
fn perfetto(dir: &Path, input: &str, out: &Path) -> BTreeMap<String, String> {
    run_ok(&[
        "perfetto",
        dir.to_str().unwrap(),
        "--input",
        input,
        "--json",
        "-o",
        out.to_str().unwrap(),
    ]);
    std::fs::read_dir(out)
        .unwrap()
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read_to_string(e.path()).unwrap(),
            )
        })
        .collect()
}

fn raw_and_decoded_agree(g: Generation, gfx: &str) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("att");
    write_run(&root, g, gfx, true);
    let d = root.to_str().unwrap();
    let (decoded, _) = run_ok(&["flamegraph", d, "--input", "decoded"]);
    // Both kernels' frames, the functions and user scopes under them.
    for frame in [
        "_Z4gemmPf;_Z4loadv ",
        "_Z4gemmPf;k loop ",
        "_Z4gemmPf;k loop;_Z5storev ",
        "_Z4tileiPf;phase @ tile;_Z6reducev ",
    ] {
        assert!(
            decoded.lines().any(|l| l.contains(frame)),
            "{frame}:\n{decoded}"
        );
    }
    let (stats_decoded, _) = run_ok(&["stats", d, "--input", "decoded", "--json"]);
    let perfetto_decoded = perfetto(&root, "decoded", &dir.path().join("pf_decoded"));
    assert_eq!(perfetto_decoded.len(), 3);
    for format in ["json", "csv", "sqlite"] {
        for f in ["_results.json", "_kernel_trace.csv", "_results.db"] {
            let _ = std::fs::remove_file(root.join("node0").join(format!("{PID}{f}")));
        }
        write_kernel_trace(&root, format);
        let (raw, err) = run_ok(&["flamegraph", d, "--input", "raw"]);
        assert_eq!(raw, decoded, "{gfx} {format}: raw and decoded flamegraphs");
        assert!(!err.contains("warning"), "{gfx} {format}: {err}");
        // The default reads the raw traces: the same output.
        let (auto, _) = run_ok(&["flamegraph", d]);
        assert_eq!(auto, decoded, "{gfx} {format}: default");
        let (stats, _) = run_ok(&["stats", d, "--input", "raw", "--json"]);
        assert_eq!(stats, stats_decoded, "{gfx} {format}: stats");
        let pf = perfetto(&root, "raw", &dir.path().join(format!("pf_{format}")));
        assert_eq!(pf, perfetto_decoded, "{gfx} {format}: perfetto");
    }
    // The default reads the raw traces even beside ui_output_* directories: with their
    // shaderdata spoilt, the output stays.
    for e in std::fs::read_dir(&root).unwrap().flatten() {
        if e.file_name().to_string_lossy().starts_with("ui_output") {
            for f in std::fs::read_dir(e.path()).unwrap().flatten() {
                if f.file_name().to_string_lossy().starts_with("shaderdata_") {
                    std::fs::write(f.path(), "{\"records\": [[1, 2, 3").unwrap();
                }
            }
        }
    }
    let (auto, _) = run_ok(&["flamegraph", d]);
    assert_eq!(auto, decoded, "{gfx}: the default route");
    assert!(!sqtt(&["flamegraph", d, "--input", "decoded"])
        .status
        .success());
}

#[test]
fn raw_and_decoded_routes_agree_on_gfx11() {
    raw_and_decoded_agree(Generation::Gfx11, "gfx1100");
}

#[test]
fn raw_and_decoded_routes_agree_on_gfx12() {
    raw_and_decoded_agree(Generation::Gfx12, "gfx1201");
}

#[test]
fn raw_and_decoded_routes_agree_on_gfx9() {
    raw_and_decoded_agree(Generation::Gfx9, "gfx950");
}

/// The other GPUs of each stream format, by the names rocprofv3 puts in the code objects'
/// file names (the format itself is read from the traces).
#[test]
fn raw_and_decoded_routes_agree_on_gfx90a_gfx942_and_gfx1200() {
    raw_and_decoded_agree(Generation::Gfx9, "gfx90a");
    raw_and_decoded_agree(Generation::Gfx9, "gfx942");
    raw_and_decoded_agree(Generation::Gfx12, "gfx1200");
}

#[test]
fn without_a_kernel_trace_the_raw_traces_are_a_best_effort_that_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("att");
    write_run(&root, Generation::Gfx11, "gfx1100", false);
    let (_, err) = run_ok(&["flamegraph", root.to_str().unwrap()]);
    assert!(err.contains("--kernel-trace"), "{err}");
    assert!(err.contains("best effort"), "{err}");
    // --input decoded on a directory of raw traces only says to read them raw.
    let o = sqtt(&["flamegraph", root.to_str().unwrap(), "--input", "decoded"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("--input raw"), "{}", stderr(&o));
    // --input raw on a directory without raw traces names what it looked for.
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let o = sqtt(&["flamegraph", empty.to_str().unwrap(), "--input", "raw"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("shader_engine"), "{}", stderr(&o));
    // A bad --input value is a usage error.
    let o = sqtt(&["flamegraph", root.to_str().unwrap(), "--input", "json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--input"), "{}", stderr(&o));
}

#[test]
fn a_cut_trace_warns_and_gives_its_whole_packets() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("att");
    write_run(&root, Generation::Gfx12, "gfx1201", false);
    write_kernel_trace(&root, "json");
    let (whole, _) = run_ok(&["flamegraph", root.to_str().unwrap()]);
    let f: PathBuf = root.join(format!("node0/{PID}_{AGENT}_shader_engine_1_5.att"));
    let bytes = std::fs::read(&f).unwrap();
    std::fs::write(&f, &bytes[..bytes.len() * 2 / 3 + 1]).unwrap();
    let (cut, err) = run_ok(&["flamegraph", root.to_str().unwrap()]);
    assert!(
        err.contains("decoding stopped") && err.contains("shader_engine_1_5.att"),
        "{err}"
    );
    assert!(err.contains("at byte"), "{err}");
    assert_ne!(cut, whole);
    assert!(!cut.is_empty());
}

/// The traces are decoded ahead by workers (`--jobs`), across the run's three dispatches, and
/// read in the engine's order: every job count gives what one thread gives, output and
/// warnings alike, with traces among them that stop early, are of no known format, or are no
/// regular file.
#[test]
fn every_job_count_reads_a_run_as_one_thread_does() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("att");
    write_run(&root, Generation::Gfx11, "gfx1100", false);
    write_kernel_trace(&root, "json");
    let host = root.join("node0");
    let att = |se: u32, dispatch: u64| {
        host.join(format!("{PID}_{AGENT}_shader_engine_{se}_{dispatch}.att"))
    };
    let whole = std::fs::read(att(1, 5)).unwrap();
    std::fs::write(att(2, 5), &whole[..whole.len() / 2]).unwrap();
    std::fs::write(att(3, 5), b"no thread trace").unwrap();
    // A FIFO is refused unopened (nothing blocks).
    let fifo = Command::new("mkfifo").arg(att(4, 5)).status().unwrap();
    assert!(fifo.success());
    std::fs::write(att(5, 5), &whole).unwrap();
    let d = root.to_str().unwrap();
    let one = run_ok(&["flamegraph", d, "-j", "1"]);
    assert!(
        one.1.contains("shader_engine_2_5.att: decoding stopped"),
        "{}",
        one.1
    );
    assert!(one.1.contains("shader_engine_3_5.att"), "{}", one.1);
    assert!(one.1.contains("shader_engine_4_5.att"), "{}", one.1);
    let stats_one = run_ok(&["stats", d, "--json", "--jobs", "1"]);
    for jobs in ["2", "3", "16"] {
        assert_eq!(run_ok(&["flamegraph", d, "-j", jobs]), one, "-j {jobs}");
        assert_eq!(
            run_ok(&["stats", d, "--json", "-j", jobs]),
            stats_one,
            "-j {jobs}"
        );
    }
    // The default (these traces come to less than 4 MB: the main thread decodes them): the same.
    assert_eq!(run_ok(&["flamegraph", d]), one);
    for bad in ["0", "many", "-3"] {
        let o = sqtt(&["flamegraph", d, &format!("--jobs={bad}")]);
        assert_eq!(o.status.code(), Some(2), "--jobs {bad}: {}", stderr(&o));
        assert!(stderr(&o).contains("--jobs"), "{}", stderr(&o));
    }
}

/// On the raw route the `.att` traces, the code objects and the kernel trace are inputs: an
/// output (or standard output) that is one of them is refused before anything is written, and
/// `sqtt diff` reads raw captures as the other commands do.
#[test]
fn outputs_that_are_raw_inputs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("att");
    write_run(&root, Generation::Gfx11, "gfx1100", false);
    write_kernel_trace(&root, "json");
    let d = root.to_str().unwrap();
    let host = root.join("node0");
    let att = host.join(format!("{PID}_{AGENT}_shader_engine_0_5.att"));
    let code_object = host.join(format!("{PID}_gfx1100_code_object_id_1.out"));
    let kernel_trace = host.join(format!("{PID}_results.json"));
    let inputs = [&att, &code_object, &kernel_trace];
    let before: Vec<Vec<u8>> = inputs.iter().map(|p| std::fs::read(p).unwrap()).collect();
    for out in inputs {
        let o = out.to_str().unwrap();
        for args in [
            vec!["flamegraph", d, "--svg", o],
            vec!["memory", d, "-o", o],
            vec!["diff", d, d, "--svg", o],
        ] {
            let r = sqtt(&args);
            assert_eq!(r.status.code(), Some(2), "{args:?}: {}", stderr(&r));
            assert!(
                stderr(&r).contains(&format!("cannot write {o}: it is "))
                    && stderr(&r).contains("which it would overwrite"),
                "{args:?}: {}",
                stderr(&r)
            );
            assert!(r.stdout.is_empty(), "{args:?} printed before refusing");
        }
    }
    // Standard output appended to a raw trace.
    let f = std::fs::OpenOptions::new().append(true).open(&att).unwrap();
    let r = Command::new(env!("CARGO_BIN_EXE_sqtt"))
        .args(["flamegraph", d])
        .stdout(std::process::Stdio::from(f))
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2), "{}", stderr(&r));
    assert!(
        stderr(&r).contains(&format!(
            "cannot write to stdout: it is the input {}",
            att.display()
        )),
        "{}",
        stderr(&r)
    );
    let after: Vec<Vec<u8>> = inputs.iter().map(|p| std::fs::read(p).unwrap()).collect();
    assert_eq!(after, before, "an input was written");
    // A capture against itself: every stack, a ratio of 1.
    let (diff, err) = run_ok(&["diff", d, d, "--input", "raw", "--csv"]);
    assert!(!err.contains("warning"), "{err}");
    assert!(diff.contains("_Z4gemmPf"), "{diff}");
}

/// A raw trace is mapped, not read: truncated and rewritten in place while `sqtt` decodes it,
/// it must still never kill the tool with SIGBUS (a read of a page the file lost). Every run
/// ends with a status; a run that saw the file shrink says so and leaves the file out.
#[test]
fn a_raw_trace_rewritten_while_decoded_never_kills_the_tool() {
    use std::os::unix::fs::FileExt;
    use std::os::unix::process::ExitStatusExt;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("att");
    write_run(&root, Generation::Gfx12, "gfx1201", false);
    write_kernel_trace(&root, "json");
    // One engine's trace padded with NOPs to 8 MiB: pages a truncation to one page takes away.
    let f: PathBuf = root.join(format!("node0/{PID}_{AGENT}_shader_engine_1_5.att"));
    let mut bytes = std::fs::read(&f).unwrap();
    bytes.resize(8 << 20, 0);
    std::fs::write(&f, &bytes).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let rewriter = {
        let (stop, f) = (stop.clone(), f.clone());
        std::thread::spawn(move || {
            let file = std::fs::OpenOptions::new().write(true).open(&f).unwrap();
            let mut rounds = 0u64;
            while !stop.load(Ordering::Relaxed) {
                file.set_len(4096).unwrap();
                file.write_all_at(&bytes, 0).unwrap();
                rounds += 1;
            }
            rounds
        })
    };
    let (mut runs, mut shrank) = (0, 0);
    let start = std::time::Instant::now();
    while (shrank < 3 || runs < 20) && runs < 300 && start.elapsed().as_secs() < 60 {
        let o = sqtt(&["flamegraph", root.to_str().unwrap(), "--input", "raw"]);
        let err = stderr(&o);
        assert_eq!(o.status.signal(), None, "killed by a signal: {err}");
        assert!(
            o.status.code().is_some() && !err.contains("panicked"),
            "{err}"
        );
        if err.contains("shrank") {
            assert!(err.contains("shader_engine_1_5.att"), "{err}");
            shrank += 1;
        }
        runs += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let rounds = rewriter.join().unwrap();
    eprintln!("{runs} runs, {shrank} saw the trace shrink, {rounds} rewrites");
    // The race was run: some decodes met the truncated file (and lived).
    assert!(shrank > 0, "no run saw the file shrink in {runs} runs");
}

/// The `raw_dir` fuzz target's committed seeds are runs of this file's writers packed in its
/// input form (one a kernel-trace format and generation): each unpacks to a directory that reads
/// as the run does (every kernel frame, no warning), so the fuzzer starts from inputs that reach
/// the raw route's end. `SQTT_WRITE_FUZZ_SEEDS=DIR` writes them anew into DIR.
#[test]
fn raw_dir_fuzz_seeds_read_as_their_runs() {
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/raw_dir");
    for (g, format) in [
        (Generation::Gfx11, "json"),
        (Generation::Gfx12, "csv"),
        (Generation::Gfx9, "sqlite"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        // The code objects under one name for every generation (the name's gfx is not read).
        write_run(&run, g, "gfx1100", false);
        write_kernel_trace(&run, format);
        let (want, err) = run_ok(&["flamegraph", run.to_str().unwrap(), "--input", "raw"]);
        assert!(!err.contains("warning"), "{g:?} {format}: {err}");
        let name = format!("{g:?}_{format}.bin").to_lowercase();
        if let Some(out) = std::env::var_os("SQTT_WRITE_FUZZ_SEEDS") {
            std::fs::write(Path::new(&out).join(&name), raw_dir_input::pack(&run)).unwrap();
            continue;
        }
        let seed = std::fs::read(seeds.join(&name)).unwrap();
        let unpacked = dir.path().join("unpacked");
        raw_dir_input::unpack(&seed, &unpacked).unwrap();
        let (got, err) = run_ok(&["flamegraph", unpacked.to_str().unwrap(), "--input", "raw"]);
        assert!(!err.contains("warning"), "{name}: {err}");
        assert!(
            got.lines()
                .any(|l| l.starts_with("_Z4gemmPf;k loop;_Z5storev "))
                && got
                    .lines()
                    .any(|l| l.starts_with("_Z4tileiPf;phase @ tile;_Z6reducev ")),
            "{name}:\n{got}"
        );
        assert_eq!(got, want, "{name}: the seed reads as the run");
        assert_eq!(raw_dir_input::pack(&unpacked), seed, "{name}: packs back");
    }
}
