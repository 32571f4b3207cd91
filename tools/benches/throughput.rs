//! Throughput of `sqtt flamegraph` and `sqtt perfetto` on a generated trace, before and after
//! (prints a table; not a test). `cargo bench -p sqtt-tools` generates a rocprofv3-like directory
//! of SQTT_BENCH_RECORDS shaderdata records (default 10 million; marker-heavy: nested scopes,
//! fused transitions, points and data payloads of many interleaved waves on 4 shader engines),
//! a quarter-size one beside it (does memory grow with the trace?), a packed gfx12 one and a
//! quarter-size one of short waves on 2 shader engines (the Perfetto files' per-wave parts). Each
//! tool runs as a `sqtt` child process of this tree and of the baseline (`SQTT_BENCH_BASELINE`:
//! a git revision, default `main`, built once under the target directory; a `sqtt` binary; or
//! `none`), alternating, so both are measured in the same run under the same load; the table
//! gives records per CPU second of the child, their ratio, peak RSS and whether both wrote the
//! same bytes; a second table gives the Perfetto files' sizes. `--gen DIR N [packed|short]` only
//! writes a directory (for profiling).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

const SLOTS_PER_SE: u32 = 32;

/// The shape of a generated trace.
#[derive(Clone, Copy)]
struct Shape {
    packed: bool,
    /// Shader engines.
    ses: u32,
    /// Records a wave's program runs: at least `min`, up to `min + spread`.
    wave_min: u32,
    wave_spread: u32,
}

impl Shape {
    const LONG: Shape = Shape {
        packed: false,
        ses: 4,
        wave_min: 200,
        wave_spread: 400,
    };
    fn name(&self) -> &'static str {
        match (self.packed, self.wave_min < 100) {
            (true, _) => "packed gfx12",
            (false, false) => "legacy",
            (false, true) => "short waves, 2 SEs",
        }
    }
}
const CHUNK: u64 = 1_000_000;

#[path = "support/child.rs"]
mod child;
#[path = "../tests/support/rng.rs"]
mod rng;
use rng::Rng;

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
fn generate(root: &Path, total: u64, shape: Shape) {
    let packed = shape.packed;
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
    let per_se = total / u64::from(shape.ses);
    let mut listing = serde_json::Map::new();
    // Occupancy rows as text: JSON values of tens of thousands of waves would raise this
    // process's peak RSS, which the children's measured peaks include (see `run_tool`).
    let mut occ = String::from("{");
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for se in 0..shape.ses {
        let mut files = Vec::new();
        let mut occ_rows: Vec<String> = Vec::new();
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
                    occ_rows.push(format!("[{t},{cu},{simd},{wave},0,1,0,0,0,0,0]"));
                    t += 3;
                }
                w.start = t;
                occ_rows.push(format!("[{t},{cu},{simd},{wave},1,1,0,0,0,0,0]"));
                w.left = shape.wave_min + (rng.next() % u64::from(shape.wave_spread)) as u32;
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
            occ_rows.push(format!("[{},{cu},{simd},{wave},0,1,0,0,0,0,0]", t + 100));
        }
        listing.insert(se.to_string(), serde_json::Value::Array(files));
        occ.push_str(&format!("\"{se}\":[{}],", occ_rows.join(",")));
    }
    occ.push_str(r#""dispatches":{"1":"bench(float*)"}}"#);
    std::fs::write(ui.join("occupancy.json"), occ).unwrap();
    std::fs::write(
        ui.join("filenames.json"),
        serde_json::json!({"gfxip": "gfx942", "shaderdata_filenames": listing}).to_string(),
    )
    .unwrap();
}

/// What one run of a `sqtt` binary cost: CPU seconds (user + system) and peak RSS.
struct Cost {
    cpu: f64,
    rss_kib: u64,
    /// A digest of what it wrote (stdout and output files), to show both versions agree.
    digest: u64,
    /// Bytes of the output files (not stdout).
    bytes: u64,
}

/// Runs `sqtt TOOL DIR` with binary `exe` and measures it with `wait4` (only the child's own
/// CPU time and peak RSS, whatever else the machine runs).
fn run_tool(exe: &Path, tool: &str, dir: &Path) -> Result<Cost, String> {
    let out_dir = dir.join("bench_out");
    let _ = std::fs::remove_dir_all(&out_dir);
    std::fs::create_dir_all(&out_dir).unwrap();
    let stdout = out_dir.join("stdout");
    let mut cmd = Command::new(exe);
    match tool {
        "flamegraph" => cmd.arg("flamegraph").arg(dir),
        "perfetto" => cmd.arg("perfetto").arg(dir).arg("-o").arg(&out_dir),
        "perfetto-json" => cmd
            .arg("perfetto")
            .arg(dir)
            .arg("-o")
            .arg(&out_dir)
            .arg("--json"),
        _ => unreachable!(),
    };
    cmd.stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::process::Stdio::null());
    // Linux starts a child's peak RSS at its parent's peak when it execs (the child shares or
    // copies the parent's memory until then): reset this process's peak to its current RSS
    // first (`clear_refs` 5), so a child's figure is its own unless it stays below that.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let used = child::run(&mut cmd);
    if !used.ok {
        return Err(format!("{} {tool} failed ({})", exe.display(), used.status));
    }
    let mut files: Vec<_> = std::fs::read_dir(&out_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    let mut digest = 0xcbf2_9ce4_8422_2325u64;
    let bytes = files
        .iter()
        .filter(|f| **f != stdout)
        .map(|f| std::fs::metadata(f).map_or(0, |m| m.len()))
        .sum();
    for f in &files {
        let mut r = std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(f).unwrap());
        loop {
            let buf = std::io::BufRead::fill_buf(&mut r).unwrap();
            if buf.is_empty() {
                break;
            }
            for &b in buf {
                digest = (digest ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
            }
            let n = buf.len();
            std::io::BufRead::consume(&mut r, n);
        }
    }
    std::fs::remove_dir_all(&out_dir).unwrap();
    Ok(Cost {
        cpu: used.cpu,
        rss_kib: used.rss_kib,
        digest,
        bytes,
    })
}

/// The `sqtt` binary to compare against: `SQTT_BENCH_BASELINE` is a path to one, a git revision
/// (default `main`) whose tree is exported under this build's target directory and built there
/// once, or `none`.
fn baseline() -> Option<PathBuf> {
    let want = std::env::var("SQTT_BENCH_BASELINE").unwrap_or_else(|_| "main".into());
    if want == "none" {
        return None;
    }
    if Path::new(&want).is_file() {
        return Some(PathBuf::from(want));
    }
    // The workspace root: `git archive` run in tools/ would export only tools/.
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let sha = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["rev-parse", "--verify", &format!("{want}^{{commit}}")])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let Some(sha) = sha else {
        println!("baseline {want}: not a file or git revision; measuring this tree only");
        return None;
    };
    // Under this build's target directory, not a name in /tmp that another user could have
    // made first (with a `sqtt` of their own in it, which this would run).
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("bench-baseline-{sha}"));
    let exe = root.join("target/release/sqtt");
    if !exe.is_file() {
        std::fs::create_dir_all(&root).unwrap();
        let mut archive = Command::new("git")
            .arg("-C")
            .arg(repo)
            .args(["archive", &sha])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let untar = Command::new("tar")
            .arg("-x")
            .arg("-C")
            .arg(&root)
            .stdin(archive.stdout.take().unwrap())
            .status()
            .unwrap();
        assert!(
            archive.wait().unwrap().success() && untar.success(),
            "exporting {want}"
        );
        println!(
            "building the baseline sqtt of {want} ({sha}) in {}",
            root.display()
        );
        let ok = Command::new(env!("CARGO"))
            .current_dir(&root)
            .args(["build", "--release", "-p", "sqtt-tools", "--bin", "sqtt"])
            .env_remove("CARGO_TARGET_DIR")
            .status()
            .unwrap();
        assert!(ok.success(), "building the baseline");
    }
    println!("baseline: {want} ({}), {}", &sha[..12], exe.display());
    Some(exe)
}

/// This process's resident set (KiB): a child's peak RSS is never reported below it.
fn own_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() >= 4 && args[1] == "--gen" {
        let shape = match args.get(4).map(String::as_str) {
            Some("packed") => Shape {
                packed: true,
                ..Shape::LONG
            },
            Some("short") => SHORT_WAVES,
            _ => Shape::LONG,
        };
        generate(Path::new(&args[2]), args[3].parse().unwrap(), shape);
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
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_sqtt"));
    let base = baseline();
    let reps: usize = std::env::var("SQTT_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    println!(
        "each figure: the best of {reps} runs, baseline and this tree alternating; M rec/s per \
         CPU second of the child (user + system); load average before: {}",
        load_average()
    );
    println!(
        "| trace | tool | records | before M rec/s | after M rec/s | ratio | before peak MiB | after peak MiB | same output |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut floor_kib = 0;
    // (trace, tool, records, bytes before, bytes after)
    let mut sizes: Vec<(&str, &str, u64, Option<u64>, u64)> = Vec::new();
    let packed = Shape {
        packed: true,
        ..Shape::LONG
    };
    for (n, shape) in [
        (total / 4, Shape::LONG),
        (total, Shape::LONG),
        (total, packed),
        (total / 4, SHORT_WAVES),
    ] {
        // In memory (tmpfs) when there is one, so the figures are the tools' and not the disk's.
        let tmp = std::env::var_os("SQTT_BENCH_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                let shm = Path::new("/dev/shm");
                if shm.is_dir() {
                    shm.to_path_buf()
                } else {
                    std::env::temp_dir()
                }
            });
        let dir = tempfile::tempdir_in(&tmp).unwrap();
        generate(dir.path(), n, shape);
        let kind = shape.name();
        for tool in ["flamegraph", "perfetto", "perfetto-json"] {
            let mut after: Option<Cost> = None;
            let mut before: Option<Cost> = None;
            let best = |best: &mut Option<Cost>, c: Cost| {
                if best.as_ref().is_none_or(|b| c.cpu < b.cpu) {
                    *best = Some(c);
                }
            };
            // A baseline without this tool (an older revision: `perfetto --json` came later)
            // leaves its column empty.
            let mut base_ok = base.is_some();
            for _ in 0..reps {
                if let Some(b) = base.as_ref().filter(|_| base_ok) {
                    match run_tool(b, tool, dir.path()) {
                        Ok(c) => best(&mut before, c),
                        Err(e) => {
                            println!("baseline: {e}; no baseline figure for {tool}");
                            base_ok = false;
                        }
                    }
                }
                best(&mut after, run_tool(&exe, tool, dir.path()).unwrap());
                floor_kib = floor_kib.max(own_rss_kib());
            }
            let a = after.unwrap();
            if tool != "flamegraph" {
                sizes.push((kind, tool, n, before.as_ref().map(|b| b.bytes), a.bytes));
            }
            let rate = |c: &Cost| n as f64 / c.cpu / 1e6;
            match &before {
                Some(b) => println!(
                    "| {kind} | {tool} | {n} | {:.2} | {:.2} | {:.2}x | {} | {} | {} |",
                    rate(b),
                    rate(&a),
                    b.cpu / a.cpu,
                    b.rss_kib / 1024,
                    a.rss_kib / 1024,
                    if b.digest == a.digest { "yes" } else { "NO" }
                ),
                None => println!(
                    "| {kind} | {tool} | {n} | - | {:.2} | - | - | {} | - |",
                    rate(&a),
                    a.rss_kib / 1024
                ),
            }
        }
    }
    println!(
        "load average after: {}; a peak RSS at or below {} MiB may be this process's own (Linux \
         starts a child's peak at its parent's RSS at exec; the parent's peak is reset first)",
        load_average(),
        floor_kib.div_ceil(1024)
    );
    // The Perfetto files' sizes: JSON / protobuf, before and after.
    println!();
    println!("| trace | records | before JSON | before pftrace | before ratio | after JSON | after pftrace | after ratio |");
    println!("|---|---|---|---|---|---|---|---|");
    for pair in sizes.chunks(2) {
        let [(kind, _, n, pb_before, pb_after), (_, _, _, js_before, js_after)] = pair else {
            continue;
        };
        let ratio = |j: u64, p: u64| j as f64 / p.max(1) as f64;
        let before = match (js_before, pb_before) {
            (Some(j), Some(p)) => format!("{j} | {p} | {:.2}x", ratio(*j, *p)),
            _ => "- | - | -".to_string(),
        };
        println!(
            "| {kind} | {n} | {before} | {js_after} | {pb_after} | {:.2}x |",
            ratio(*js_after, *pb_after)
        );
    }
}

/// Many short waves on two engines: the per-wave descriptors weigh in the Perfetto files.
const SHORT_WAVES: Shape = Shape {
    packed: false,
    ses: 2,
    wave_min: 20,
    wave_spread: 40,
};
