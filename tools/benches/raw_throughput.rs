//! Raw traces to a flamegraph, side by side with AMD's decoder (prints a table; not a test).
//!
//! `cargo bench -p sqtt-tools --bench raw_throughput` writes a rocprofv3 run's directory of raw
//! traces (SQTT_BENCH_ATT_MB megabytes of `.att`, default 240: one dispatch per generation, GFX11,
//! GFX12 and GFX9, two shader engines each; instruction tracing on: instruction, VALU, exec,
//! register and other packets between the waves' marker records, nested scopes and points),
//! their code object and kernel trace, and times `sqtt flamegraph --input raw` as a child process
//! (its CPU time, from wait4): megabytes of `.att` per CPU second, per generation and in all.
//!
//! With `SQTT_REFERENCE_DECODER` naming AMD's `librocprof-trace-decoder.so` (never built or
//! vendored here), the same bytes also go the way rocprofv3 takes them: AMD's decoder (its CPU
//! time in this process) writes the `ui_output_*` JSON (not timed), and `sqtt flamegraph --input
//! decoded` reads it (child CPU time); the table gives both routes' MB/s per CPU second, their
//! ratio, and whether the two flamegraphs are the same bytes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;
use sqtt_markers::encoding::{enter, point, EXIT_VALUE};
use sqtt_thread_trace::synth::{Encoder, Form, Slot};
use sqtt_thread_trace::Generation;

#[path = "../../thread-trace/tests/support/amd.rs"]
mod amd;
#[path = "../tests/support/elf.rs"]
mod elf;

const PID: u64 = 77;
const SES: u32 = 2;

#[path = "support/child.rs"]
mod child;
#[path = "../tests/support/rng.rs"]
mod rng;
use rng::Rng;

const FUNCMAP: &str = "K:_Z5benchPf@bench.hip:1\nF:1:_Z4fn1v\nF:2:_Z4fn2v\nF:3:_Z4fn3v\nF:4:_Z4fn4v\nU:5:scope_5\nU:6:scope_6\nP:7:barrier\n";

/// One wave's place in its marker script.
struct Live {
    slot: Slot,
    depth: u32,
    left: u32,
}

/// One engine's trace of about `bytes` bytes.
fn engine(g: Generation, se: u32, bytes: usize, rng: &mut Rng) -> Encoder {
    let mut e = Encoder::new(g);
    // 64 slots, distinct by WGP, SIMD and slot (GFX9's key; slots below 10).
    let mut free: Vec<Slot> = (0..64u32)
        .map(|i| Slot {
            sa: 0,
            wgp: (i >> 5) + 2 * se,
            simd: i & 3,
            slot: (i >> 2) & 7,
        })
        .collect();
    let mut live: Vec<Live> = Vec::new();
    while e.bit_len() < bytes * 8 {
        if live.len() < 24 && !free.is_empty() && rng.below(64) == 0 {
            let slot = free.swap_remove(rng.below(free.len() as u64) as usize);
            e.start(slot, true);
            live.push(Live {
                slot,
                depth: 0,
                left: 40 + rng.below(200) as u32,
            });
            continue;
        }
        // Instruction tracing: the packets between the records (on GFX9 issue, performance and
        // event tokens: instruction tokens of random contents make no sense to AMD's decoder's
        // instruction analysis, which then rejects the trace).
        for _ in 0..12 {
            e.gap(rng.below(6));
            let pick = if g == Generation::Gfx9 {
                [1, 4, 5][rng.below(3) as usize]
            } else {
                rng.next() as usize
            };
            e.other(pick, u128::from(rng.next()) << 64 | u128::from(rng.next()));
        }
        if live.is_empty() {
            continue;
        }
        let i = rng.below(live.len() as u64) as usize;
        let w = &mut live[i];
        e.gap(1 + rng.below(30));
        let value = if w.left == 0 {
            if w.depth == 0 {
                let w = live.swap_remove(i);
                e.end(w.slot, true);
                free.push(w.slot);
                continue;
            }
            w.depth -= 1;
            EXIT_VALUE
        } else {
            w.left -= 1;
            match rng.below(5) {
                0 | 1 if w.depth < 6 => {
                    w.depth += 1;
                    enter(1 + rng.below(6) as u32)
                }
                2 | 3 if w.depth > 0 => {
                    w.depth -= 1;
                    EXIT_VALUE
                }
                _ => point(7),
            }
        };
        let slot = w.slot;
        e.shader_data(slot, value, Form::Full, true);
    }
    for w in live {
        for _ in 0..w.depth {
            e.shader_data(w.slot, EXIT_VALUE, Form::Full, true);
        }
        e.end(w.slot, true);
    }
    e.flush();
    e
}

/// Writes one generation's run: raw traces, code object, kernel trace (JSON). Returns the
/// `.att` files.
fn write_run(root: &Path, g: Generation, gfx: &str, bytes_per_engine: usize) -> Vec<PathBuf> {
    let host = root.join("node");
    std::fs::create_dir_all(&host).unwrap();
    let map = sqtt_markers::Funcmap::parse_str(FUNCMAP).unwrap();
    std::fs::write(
        host.join(format!("{PID}_{gfx}_code_object_id_1.out")),
        elf::elf_with_funcmap(&map.to_bytes()),
    )
    .unwrap();
    let doc = json!({"rocprofiler-sdk-tool": [{
        "kernel_symbols": [{"kernel_id": 1, "code_object_id": 1, "kernel_name": "_Z5benchPf"}],
        "buffer_records": {"kernel_dispatch": [{"dispatch_info": {"dispatch_id": 1, "kernel_id": 1}}]},
    }]});
    std::fs::write(host.join(format!("{PID}_results.json")), doc.to_string()).unwrap();
    let mut rng = Rng(0x2545_F491_4F6C_DD1D ^ gfx.len() as u64);
    (0..SES)
        .map(|se| {
            let e = engine(g, se, bytes_per_engine, &mut rng);
            let p = host.join(format!("{PID}_1_shader_engine_{se}_1.att"));
            std::fs::write(&p, e.bytes()).unwrap();
            p
        })
        .collect()
}

/// CPU seconds and stdout of `sqtt flamegraph DIR --input INPUT`, as a child process.
fn flamegraph(dir: &Path, input: &str) -> (f64, Vec<u8>) {
    let out = dir.join(format!("flamegraph_{input}.txt"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sqtt"));
    cmd.arg("flamegraph")
        .arg(dir)
        .arg("--input")
        .arg(input)
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::process::Stdio::inherit());
    let used = child::run(&mut cmd);
    assert!(
        used.ok,
        "sqtt flamegraph --input {input} failed ({})",
        used.status
    );
    let out = std::fs::read(&out).unwrap();
    (used.cpu, out)
}

/// This thread's CPU time in seconds.
fn thread_cpu() -> f64 {
    // SAFETY: an all-zero timespec is valid; clock_gettime fills it.
    let mut t: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: a valid clock and a pointer to a live local.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

/// AMD's decoder on each `.att` of `dir`'s run: its CPU time, and the ui_output directory
/// rocprofv3 would write from what it reports.
fn amd_route(amd: &amd::Amd, dir: &Path, gfx: &str, files: &[PathBuf]) -> f64 {
    let ui = dir.join("ui_output_agent_1_dispatch_1");
    std::fs::create_dir_all(&ui).unwrap();
    let mut cpu = 0.0;
    let mut listed = serde_json::Map::new();
    let mut occ = serde_json::Map::new();
    for (se, f) in files.iter().enumerate() {
        let data = std::fs::read(f).unwrap();
        let t = thread_cpu();
        let out = amd.decode(&data);
        cpu += thread_cpu() - t;
        assert_eq!(out.status, 0, "AMD's decoder failed on {}", f.display());
        let name = format!("shaderdata_{se}_0.json");
        let records: Vec<serde_json::Value> = out
            .records
            .iter()
            .map(|r| json!([r.0, r.1, r.2, r.3, r.4, r.5]))
            .collect();
        std::fs::write(
            ui.join(&name),
            json!({"records_schema": ["time", "value", "cu", "simd", "wave_id", "flags"], "records": records}).to_string(),
        )
        .unwrap();
        listed.insert(se.to_string(), json!([[name, 0, u64::MAX]]));
        let rows: Vec<serde_json::Value> = out
            .events
            .iter()
            .map(|e| json!([e.time, e.cu, e.simd, e.wave, u8::from(e.start), 1]))
            .collect();
        occ.insert(se.to_string(), json!(rows));
    }
    occ.insert("dispatches".into(), json!({"1": "_Z5benchPf"}));
    std::fs::write(ui.join("occupancy.json"), json!(occ).to_string()).unwrap();
    std::fs::write(
        ui.join("filenames.json"),
        json!({"gfxip": gfx, "shaderdata_filenames": listed}).to_string(),
    )
    .unwrap();
    cpu
}

fn main() {
    let mb: usize = std::env::var("SQTT_BENCH_ATT_MB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(240);
    let reference = amd::Amd::from_env();
    let tmp = tempfile::tempdir().unwrap();
    // SQTT_BENCH_KEEP=DIR: the runs are written there and kept (for profiling).
    let keep = std::env::var_os("SQTT_BENCH_KEEP").map(PathBuf::from);
    let base = keep.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    let per_engine = (mb << 20) / (3 * SES as usize);
    println!(
        "raw .att -> sqtt flamegraph, {mb} MB of .att (3 generations x {SES} engines, instruction tracing on); CPU seconds of one process"
    );
    if reference.is_none() {
        println!("({} is not set: AMD's decoder is not run)", amd::VAR);
    }
    println!(
        "{:8} {:>9} {:>10} {:>12} | {:>12} {:>12} {:>12} {:>9} {:>6}",
        "gen",
        "att MB",
        "raw s",
        "raw MB/s",
        "AMD dec s",
        "sqtt json s",
        "AMD MB/s",
        "raw/AMD",
        "same"
    );
    let mut totals = BTreeMap::new();
    for (g, gfx) in [
        (Generation::Gfx11, "gfx1100"),
        (Generation::Gfx12, "gfx1201"),
        (Generation::Gfx9, "gfx950"),
    ] {
        let dir = base.join(gfx);
        let files = write_run(&dir, g, gfx, per_engine);
        let bytes: u64 = files
            .iter()
            .map(|f| std::fs::metadata(f).unwrap().len())
            .sum();
        let mbytes = bytes as f64 / 1e6;
        // Warm the page cache, then time.
        let _ = flamegraph(&dir, "raw");
        let (raw_cpu, raw_out) = flamegraph(&dir, "raw");
        *totals.entry("bytes").or_insert(0.0) += mbytes;
        *totals.entry("raw").or_insert(0.0) += raw_cpu;
        let mut line = format!(
            "{gfx:8} {mbytes:>9.1} {raw_cpu:>10.3} {:>12.0} |",
            mbytes / raw_cpu
        );
        if let Some(amd) = &reference {
            let dec = amd_route(amd, &dir, gfx, &files);
            let (json_cpu, json_out) = flamegraph(&dir, "decoded");
            let amd_total = dec + json_cpu;
            *totals.entry("amd").or_insert(0.0) += amd_total;
            *totals.entry("dec").or_insert(0.0) += dec;
            *totals.entry("json").or_insert(0.0) += json_cpu;
            line += &format!(
                " {dec:>12.3} {json_cpu:>12.3} {:>12.0} {:>8.1}x {:>6}",
                mbytes / amd_total,
                amd_total / raw_cpu,
                if raw_out == json_out { "yes" } else { "NO" }
            );
        }
        println!("{line}");
        if keep.is_none() {
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
    let mbytes = totals["bytes"];
    let mut line = format!(
        "{:8} {mbytes:>9.1} {:>10.3} {:>12.0} |",
        "all",
        totals["raw"],
        mbytes / totals["raw"]
    );
    if reference.is_some() {
        line += &format!(
            " {:>12.3} {:>12.3} {:>12.0} {:>8.1}x",
            totals["dec"],
            totals["json"],
            mbytes / totals["amd"],
            totals["amd"] / totals["raw"]
        );
    }
    println!("{line}");
}
