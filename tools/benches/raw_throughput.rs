//! Raw traces to a flamegraph, side by side with AMD's decoder (prints a table; not a test).
//!
//! `cargo bench -p sqtt-tools --bench raw_throughput` writes a rocprofv3 run's directory of raw
//! traces (SQTT_BENCH_ATT_MB megabytes of `.att`, default 240: one dispatch per generation, GFX11,
//! GFX12 and GFX9, two shader engines each; instruction tracing on: instruction, VALU, exec,
//! register and other packets between the waves' marker records, nested scopes and points),
//! their code object and kernel trace, and times `sqtt flamegraph --input raw` as a child process
//! (its CPU time, from wait4, and its wall time) twice: on one core (`--jobs 1`: megabytes of
//! `.att` per CPU second) and as run by default (the traces decoded on as many threads as CPUs:
//! CPU seconds, and megabytes per wall second), per generation and in all. Each is timed
//! `SQTT_BENCH_REPS` times (default 3), the best taken; the load average is printed before and
//! after. `SQTT_BENCH_SQTT` names another `sqtt` binary to time instead of this tree's (a
//! baseline's, on the same bytes: the capture is the same from run to run).
//!
//! With `SQTT_REFERENCE_DECODER` naming AMD's `librocprof-trace-decoder.so` (never built or
//! vendored here), the same bytes also go the way rocprofv3 takes them: AMD's decoder (its CPU
//! and wall time in this process, one thread) writes the `ui_output_*` JSON (not timed), and
//! `sqtt flamegraph --input decoded` reads it (child CPU and wall time); the table gives both
//! routes' MB/s, their ratios per CPU second (one core) and per wall second (as run), and
//! whether the flamegraphs are the same bytes.

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

/// What one `sqtt flamegraph` run took, and what it printed.
struct Run {
    cpu: f64,
    wall: f64,
    out: Vec<u8>,
}

/// The `sqtt` binary timed: SQTT_BENCH_SQTT (a baseline's, on the same bytes), else this tree's.
fn sqtt_binary() -> std::ffi::OsString {
    std::env::var_os("SQTT_BENCH_SQTT")
        .filter(|s| !s.is_empty())
        .unwrap_or(env!("CARGO_BIN_EXE_sqtt").into())
}

/// Whether the binary timed takes `--jobs` (a baseline from before it decodes on one thread).
fn takes_jobs() -> bool {
    let help = Command::new(sqtt_binary())
        .args(["flamegraph", "--help"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&help.stdout).contains("--jobs")
}

/// `sqtt flamegraph DIR --input INPUT [--jobs JOBS]` as a child process: its CPU and wall time
/// and its stdout.
fn flamegraph(dir: &Path, input: &str, jobs: Option<&str>) -> Run {
    let out = dir.join(format!("flamegraph_{input}.txt"));
    let mut cmd = Command::new(sqtt_binary());
    cmd.arg("flamegraph").arg(dir).arg("--input").arg(input);
    if let Some(j) = jobs {
        cmd.arg("--jobs").arg(j);
    }
    cmd.stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::process::Stdio::inherit());
    let used = child::run(&mut cmd);
    assert!(
        used.ok,
        "sqtt flamegraph --input {input} failed ({})",
        used.status
    );
    Run {
        cpu: used.cpu,
        wall: used.wall,
        out: std::fs::read(&out).unwrap(),
    }
}

/// The best CPU and the best wall time of `reps` runs (each its own best), and the output.
fn best(reps: usize, mut run: impl FnMut() -> Run) -> Run {
    let mut b = run();
    for _ in 1..reps {
        let r = run();
        assert!(
            r.out == b.out,
            "a run's output changed from one run to the next"
        );
        b.cpu = b.cpu.min(r.cpu);
        b.wall = b.wall.min(r.wall);
    }
    b
}

/// This thread's CPU time in seconds.
fn thread_cpu() -> f64 {
    // SAFETY: an all-zero timespec is valid; clock_gettime fills it.
    let mut t: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: a valid clock and a pointer to a live local.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

/// AMD's decoder on each `.att` of `dir`'s run: its CPU and wall time (as a [`Run`] without
/// output), and the ui_output directory rocprofv3 would write from what it reports.
fn amd_route(amd: &amd::Amd, dir: &Path, gfx: &str, files: &[PathBuf]) -> Run {
    let ui = dir.join("ui_output_agent_1_dispatch_1");
    std::fs::create_dir_all(&ui).unwrap();
    let (mut cpu, mut wall) = (0.0, 0.0);
    let mut listed = serde_json::Map::new();
    let mut occ = serde_json::Map::new();
    for (se, f) in files.iter().enumerate() {
        let data = std::fs::read(f).unwrap();
        let (t, w) = (thread_cpu(), std::time::Instant::now());
        let out = amd.decode(&data);
        cpu += thread_cpu() - t;
        wall += w.elapsed().as_secs_f64();
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
    Run {
        cpu,
        wall,
        out: Vec::new(),
    }
}

fn main() {
    let mb: usize = std::env::var("SQTT_BENCH_ATT_MB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(240);
    // SQTT_BENCH_REPS: each route timed this many times, the best taken.
    let reps: usize = std::env::var("SQTT_BENCH_REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
        .max(1);
    let reference = amd::Amd::from_env();
    let tmp = tempfile::tempdir().unwrap();
    // SQTT_BENCH_KEEP=DIR: the runs are written there and kept (for profiling).
    let keep = std::env::var_os("SQTT_BENCH_KEEP").map(PathBuf::from);
    let base = keep.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    let per_engine = (mb << 20) / (3 * SES as usize);
    let jobs = takes_jobs();
    println!(
        "raw .att -> sqtt flamegraph, {mb} MB of .att (3 generations x {SES} engines, instruction tracing on); best of {reps}"
    );
    println!(
        "one core: sqtt --jobs 1, MB of .att per CPU second; default: sqtt as run (--jobs as many as CPUs, {} here), CPU and wall seconds",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    if !jobs {
        println!("(the sqtt timed has no --jobs: one core is its default run)");
    }
    println!("load average before: {}", load());
    if reference.is_none() {
        println!("({} is not set: AMD's decoder is not run)", amd::VAR);
    }
    println!(
        "{:8} {:>7} | {:>8} {:>8} | {:>8} {:>8} {:>8} | {:>9} {:>9} {:>8} {:>8} | {:>8} {:>8} {:>5}",
        "",
        "",
        "one core",
        "",
        "default",
        "",
        "",
        "AMD's",
        "route",
        "",
        "",
        "raw/AMD",
        "",
        ""
    );
    println!(
        "{:8} {:>7} | {:>8} {:>8} | {:>8} {:>8} {:>8} | {:>9} {:>9} {:>8} {:>8} | {:>8} {:>8} {:>5}",
        "gen",
        "att MB",
        "CPU s",
        "MB/s",
        "CPU s",
        "wall s",
        "MB/s",
        "dec CPU s",
        "json CPU s",
        "MB/s",
        "wall s",
        "per CPU",
        "wall",
        "same"
    );
    // Seconds summed over the generations: (one core CPU, default CPU, default wall, AMD's CPU,
    // AMD's wall, AMD's decoder CPU, sqtt on its JSON CPU).
    let mut sums = [0.0f64; 7];
    let mut total_mb = 0.0;
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
        total_mb += mbytes;
        // Warm the page cache, then time.
        let _ = flamegraph(&dir, "raw", None);
        let one = best(reps, || flamegraph(&dir, "raw", jobs.then_some("1")));
        let default = best(reps, || flamegraph(&dir, "raw", None));
        let mut line = format!(
            "{gfx:8} {mbytes:>7.1} | {:>8.3} {:>8.0} | {:>8.3} {:>8.3} {:>8.0} |",
            one.cpu,
            mbytes / one.cpu,
            default.cpu,
            default.wall,
            mbytes / default.wall
        );
        for (i, t) in [one.cpu, default.cpu, default.wall].into_iter().enumerate() {
            sums[i] += t;
        }
        if let Some(amd) = &reference {
            let dec = best(reps, || amd_route(amd, &dir, gfx, &files));
            let json = best(reps, || flamegraph(&dir, "decoded", None));
            let (cpu, wall) = (dec.cpu + json.cpu, dec.wall + json.wall);
            for (i, t) in [cpu, wall, dec.cpu, json.cpu].into_iter().enumerate() {
                sums[3 + i] += t;
            }
            let same = one.out == json.out && default.out == json.out;
            line += &format!(
                " {:>9.3} {:>9.3} {:>8.0} {:>8.3} | {:>7.1}x {:>7.1}x {:>5}",
                dec.cpu,
                json.cpu,
                mbytes / cpu,
                wall,
                cpu / one.cpu,
                wall / default.wall,
                if same { "yes" } else { "NO" }
            );
        }
        println!("{line}");
        if keep.is_none() {
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
    let mut line = format!(
        "{:8} {total_mb:>7.1} | {:>8.3} {:>8.0} | {:>8.3} {:>8.3} {:>8.0} |",
        "all",
        sums[0],
        total_mb / sums[0],
        sums[1],
        sums[2],
        total_mb / sums[2]
    );
    if reference.is_some() {
        line += &format!(
            " {:>9.3} {:>9.3} {:>8.0} {:>8.3} | {:>7.1}x {:>7.1}x",
            sums[5],
            sums[6],
            total_mb / sums[3],
            sums[4],
            sums[3] / sums[0],
            sums[4] / sums[2]
        );
    }
    println!("{line}");
    println!("load average after: {}", load());
}

/// The first three fields of /proc/loadavg.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}
