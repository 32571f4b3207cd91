//! Throughput of `sqtt flamegraph` and `sqtt perfetto` on a generated trace (prints figures;
//! not a test). `cargo bench -p sqtt-tools` generates a rocprofv3-like directory of
//! SQTT_BENCH_RECORDS shaderdata records (default 10 million; marker-heavy: nested scopes, fused
//! transitions, points and data payloads of many interleaved waves on 4 shader engines), then
//! runs each tool in a child process of its own and reports records/s and the child's peak RSS
//! (VmHWM). A quarter-size run beside it shows whether memory grows with the trace.

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use sqtt_tools::diag::NoProgress;
use sqtt_tools::engine::Options;

const SES: u32 = 4;
const SLOTS_PER_SE: u32 = 32;
const CHUNK: u64 = 1_000_000;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn funcmap_text(packed: bool) -> String {
    let mut rows = vec!["K:_Z5benchPf@bench.hip:1".to_string()];
    if packed {
        rows.push("M:shader_clock_bits=12;shader_clock_shift=4".into());
    }
    for i in 1..=10 {
        rows.push(format!("F:{i}:_Z4fn{i}v@bench.hip:{i}"));
    }
    for i in 11..=20 {
        rows.push(format!("U:{i}:scope_{i}"));
    }
    rows.push("P:21:barrier".into());
    rows.push("P:22:vmem_load".into());
    rows.push("P:23:value".into());
    if !packed {
        rows.push("R:23:extra_payload_count=1".into());
    }
    rows.join("\n")
}

#[path = "../tests/support/elf.rs"]
mod elf;
use elf::elf_with_funcmap as elf;

struct WaveState {
    depth: u32,
    left: u32,
    pending_payload: bool,
    start: u64,
}

/// Writes the directory with about `total` records, streaming. `packed`: a gfx12 code object
/// with 12 clock bits at shift 4; headers carry the shader clock of their issue (a per-SIMD
/// phase, a varying delay), and no payloads.
fn generate(root: &Path, total: u64, packed: bool) {
    std::fs::create_dir_all(root).unwrap();
    let map = sqtt_markers::Funcmap::parse_str(&funcmap_text(packed)).unwrap();
    let enc = map.marker_encoding();
    std::fs::write(
        root.join("bench_code_object_id_1.out"),
        elf(&map.to_bytes()),
    )
    .unwrap();
    let ui = root.join("ui_output_bench");
    std::fs::create_dir_all(&ui).unwrap();
    let per_se = total / u64::from(SES);
    let mut listing = serde_json::Map::new();
    let mut occ = serde_json::Map::new();
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for se in 0..SES {
        let mut files = Vec::new();
        let mut occ_rows = Vec::new();
        let mut waves: Vec<WaveState> = (0..SLOTS_PER_SE)
            .map(|_| WaveState {
                depth: 0,
                left: 0,
                pending_payload: false,
                start: 0,
            })
            .collect();
        let mut t = 1000u64;
        let mut written = 0u64;
        let mut chunk_i = 0;
        let mut out: Option<std::io::BufWriter<std::fs::File>> = None;
        let mut in_chunk = 0u64;
        while written < per_se {
            let s = (rng.next() % u64::from(SLOTS_PER_SE)) as u32;
            let (cu, simd, wave) = (s / 8, (s / 2) % 4, s % 2 + 2 * (s / 16));
            t += 1 + rng.next() % 6;
            let w = &mut waves[s as usize];
            if w.left == 0 && w.depth == 0 && !w.pending_payload {
                if w.start != 0 {
                    occ_rows.push(serde_json::json!([t, cu, simd, wave, 0, 1, 0, 0, 0, 0, 0]));
                    t += 3;
                }
                w.start = t;
                occ_rows.push(serde_json::json!([t, cu, simd, wave, 1, 1, 0, 0, 0, 0, 0]));
                w.left = 200 + (rng.next() % 400) as u32;
                t += 10;
            }
            let legacy: u32 = if w.pending_payload {
                w.pending_payload = false;
                (rng.next() >> 8) as u32
            } else if w.left == 0 {
                w.depth -= 1;
                1
            } else {
                w.left -= 1;
                let r = rng.next() % 100;
                // A structured program: three candidates per nesting level.
                let id = 1 + 3 * w.depth + (rng.next() % 3) as u32;
                if r < 40 && w.depth < 6 {
                    w.depth += 1;
                    (id << 2) | 2
                } else if r < 75 && w.depth > 0 {
                    w.depth -= 1;
                    1
                } else if r < 85 && w.depth > 0 {
                    (id << 2) | 3
                } else if r < 95 {
                    (21 + (r % 2) as u32) << 2
                } else {
                    w.pending_payload = !packed;
                    23 << 2
                }
            };
            let value = if packed {
                let issue = t - 20 - rng.next() % 40;
                let clock = ((issue + u64::from(simd) * 5) >> 4) as u32;
                enc.pack(legacy >> 2, legacy & 3, clock)
            } else {
                legacy
            };
            if out.is_none() {
                let name = format!("shaderdata_{se}_{chunk_i}.json");
                let mut f = std::io::BufWriter::with_capacity(
                    1 << 20,
                    std::fs::File::create(ui.join(&name)).unwrap(),
                );
                f.write_all(b"{\"records_schema\":[\"time\",\"value\",\"cu\",\"simd\",\"wave_id\",\"flags\"],\"records\":[").unwrap();
                files.push(serde_json::json!([name, t, 0]));
                out = Some(f);
                in_chunk = 0;
            }
            let f = out.as_mut().unwrap();
            if in_chunk > 0 {
                f.write_all(b",").unwrap();
            }
            write!(f, "[{t},{value},{cu},{simd},{wave},0]").unwrap();
            in_chunk += 1;
            written += 1;
            if in_chunk == CHUNK {
                out.take().unwrap().write_all(b"]}").unwrap();
                chunk_i += 1;
            }
        }
        if let Some(mut f) = out.take() {
            f.write_all(b"]}").unwrap();
        }
        for s in 0..SLOTS_PER_SE {
            let (cu, simd, wave) = (s / 8, (s / 2) % 4, s % 2 + 2 * (s / 16));
            occ_rows.push(serde_json::json!([
                t + 100,
                cu,
                simd,
                wave,
                0,
                1,
                0,
                0,
                0,
                0,
                0
            ]));
        }
        listing.insert(se.to_string(), serde_json::Value::Array(files));
        occ.insert(se.to_string(), serde_json::Value::Array(occ_rows));
    }
    occ.insert(
        "dispatches".into(),
        serde_json::json!({"1": "bench(float*)"}),
    );
    std::fs::write(
        ui.join("occupancy.json"),
        serde_json::Value::Object(occ).to_string(),
    )
    .unwrap();
    std::fs::write(
        ui.join("filenames.json"),
        serde_json::json!({"gfxip": "gfx942", "shaderdata_filenames": listing}).to_string(),
    )
    .unwrap();
}

fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// CPU time of this process so far, in seconds (/proc/self/schedstat: ns on a CPU).
fn cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/self/schedstat")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
        })
        .map(|ns| ns as f64 / 1e9)
        .unwrap_or(0.0)
}

/// User and system CPU seconds of this process (/proc/self/stat, clock ticks of 1/100 s).
fn user_sys_seconds() -> (f64, f64) {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = s.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / 100.0;
    (tick(11), tick(12))
}

fn child(tool: &str, dir: &Path) {
    let opts = Options::default();
    let t = Instant::now();
    let c0 = cpu_seconds();
    let (records, extra) = match tool {
        "flamegraph" => {
            let r = sqtt_tools::commands::flamegraph(dir, &opts, &NoProgress).unwrap();
            let mut sink = std::io::sink();
            sqtt_tools::flamegraph::write_folded(&mut sink, &r.folded).unwrap();
            (r.totals.run.records, format!("{} stacks", r.folded.len()))
        }
        "perfetto" | "perfetto-json" => {
            let format = if tool == "perfetto" {
                sqtt_tools::perfetto::Format::Protobuf
            } else {
                sqtt_tools::perfetto::Format::Json
            };
            let out = dir.join("perfetto_out");
            let r =
                sqtt_tools::commands::perfetto(dir, Some(&out), None, format, &opts, &NoProgress)
                    .unwrap();
            let bytes: u64 = r
                .files
                .iter()
                .map(|f| std::fs::metadata(f).unwrap().len())
                .sum();
            for f in &r.files {
                std::fs::remove_file(f).unwrap();
            }
            (
                r.totals.run.records,
                format!(
                    "{} events, {:.1} MB written, {:.1} bytes/event",
                    r.events,
                    bytes as f64 / 1e6,
                    bytes as f64 / r.events.max(1) as f64
                ),
            )
        }
        _ => unreachable!(),
    };
    let dt = t.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - c0;
    let (user, sys) = user_sys_seconds();
    println!(
        "{tool:>13}: {records} records: {:.2} M records/s per CPU second ({cpu:.2} s CPU: {user:.2} user, {sys:.2} system), {:.2} M/s wall ({dt:.2} s), peak RSS {} MiB ({extra})",
        records as f64 / cpu / 1e6,
        records as f64 / dt / 1e6,
        vm_hwm_kib() / 1024
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() >= 4 && args[1] == "--child" {
        child(&args[2], Path::new(&args[3]));
        return;
    }
    if args.len() >= 4 && args[1] == "--gen" {
        generate(
            Path::new(&args[2]),
            args[3].parse().unwrap(),
            args.len() > 4,
        );
        return;
    }
    if args.iter().any(|a| a == "--list" || a == "--test") {
        // `cargo test --benches` probes: nothing to do.
        return;
    }
    let total: u64 = std::env::var("SQTT_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000);
    let exe = std::env::current_exe().unwrap();
    for (n, packed) in [(total / 4, false), (total, false), (total, true)] {
        // In memory (tmpfs) when there is one, so the figures are the tools' and not the disk's.
        let base = std::env::var_os("SQTT_BENCH_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                let shm = Path::new("/dev/shm");
                if shm.is_dir() {
                    shm.to_path_buf()
                } else {
                    std::env::temp_dir()
                }
            });
        let dir = tempfile::tempdir_in(&base).unwrap();
        let t = Instant::now();
        generate(dir.path(), n, packed);
        let size: u64 = std::fs::read_dir(dir.path().join("ui_output_bench"))
            .unwrap()
            .flatten()
            .map(|e| e.metadata().unwrap().len())
            .sum();
        println!(
            "generated {n} {} records ({} MB of JSON, in {}) in {:.1} s",
            if packed { "packed gfx12" } else { "legacy" },
            size >> 20,
            base.display(),
            t.elapsed().as_secs_f64()
        );
        for tool in ["flamegraph", "perfetto", "perfetto-json"] {
            let st = Command::new(&exe)
                .args(["--child", tool, dir.path().to_str().unwrap()])
                .status()
                .unwrap();
            assert!(st.success());
        }
    }
}
