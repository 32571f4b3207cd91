//! The `sqtt waves`, `sqtt clock` and `sqtt thread-trace` subcommands over the
//! `sqtt_thread_trace` library: clap argument structs and the functions that run them, for the
//! `sqtt` binary to wire in (kept here so that library needs neither clap nor anyhow).
//!
//! Usage errors (a bad option value, a GPU shape or program the library refuses) are
//! [`UsageError`]s, which [`exit_code`] maps to 2; other failures (an unreadable file) to 1.

use std::fmt;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};
use serde::Serialize;

use sqtt_thread_trace::decode::header_layout;
use sqtt_thread_trace::gpu::{builtin, builtin_names, GcVersion, Generation, Gpu, Shape, Wgps};
use sqtt_thread_trace::{pm4, program, waves};

/// An error in how the command was used: exit status 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(msg.into()))
}

/// The exit status for an error a run function returned: 2 for usage errors, 1 otherwise.
pub fn exit_code(err: &anyhow::Error) -> i32 {
    if err.downcast_ref::<UsageError>().is_some() {
        2
    } else {
        1
    }
}

/// Parses a count or address: decimal, `0x` hex, or with a K, M or G (binary) suffix.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let bad = || format!("{s:?}: expected a number such as 4096, 0x100000, 64K, 16M or 1G");
    let t = s.trim();
    let (digits, mult) = match t.char_indices().last() {
        Some((i, c)) if "kKmMgG".contains(c) => {
            let m = match c.to_ascii_lowercase() {
                'k' => 1u64 << 10,
                'm' => 1 << 20,
                _ => 1 << 30,
            };
            (&t[..i], m)
        }
        _ => (t, 1),
    };
    let v = if let Some(h) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        u64::from_str_radix(&h.replace('_', ""), 16)
    } else {
        digits.replace('_', "").parse::<u64>()
    }
    .map_err(|_| bad())?;
    v.checked_mul(mult).ok_or_else(bad)
}

fn parse_gpu_name(s: &str) -> Result<String, String> {
    if builtin(s).is_some() {
        Ok(s.to_ascii_lowercase())
    } else {
        Err(format!(
            "unknown GPU {s:?}; built in: {}",
            builtin_names().join(", ")
        ))
    }
}

fn parse_gc(s: &str) -> Result<GcVersion, String> {
    s.parse()
}

/// Engine numbers, as `--harvest 2,5` takes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineList(pub Vec<usize>);

/// Engine numbers separated by commas (spaces around them ignored, an engine named twice
/// counts once); an empty list or an empty item is refused.
fn parse_engine_list(s: &str) -> Result<EngineList, String> {
    s.split(',')
        .map(|x| {
            x.trim()
                .parse::<usize>()
                .map_err(|_| format!("{x:?}: expected engine numbers such as 2,5"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(|mut v| {
            v.sort_unstable();
            v.dedup();
            EngineList(v)
        })
}

/// The GPU: a built-in part, each field of its shape overridable.
#[derive(Debug, Clone, Args)]
pub struct GpuArgs {
    /// The GPU, by gfx name: gfx90a, gfx942, gfx950, gfx1100, gfx1101, gfx1102, gfx1150, gfx1200, gfx1201.
    #[arg(long, value_name = "GFXNAME", value_parser = parse_gpu_name)]
    pub gpu: String,
    /// Override the GC version, as MAJOR.MINOR.STEP (e.g. 11.0.0).
    #[arg(long, value_name = "X.Y.Z", value_parser = parse_gc)]
    pub gc: Option<GcVersion>,
    /// Override the shader engines per die.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub engines: Option<u32>,
    /// Override the dies (XCCs).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=8))]
    pub dies: Option<u32>,
    /// Override the shader arrays per engine.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=8))]
    pub arrays: Option<u32>,
    /// Override the work-group processors (CUs on GFX9) per shader array that run work.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=32))]
    pub wgps: Option<u32>,
    /// Override the GPU clock the realtime markers count, in Hz.
    #[arg(long = "clock-hz", value_name = "HZ", value_parser = parse_size)]
    pub clock_hz: Option<u64>,
    /// Engines (numbered across dies) to treat as harvested: no work-group processor runs work.
    #[arg(long, value_name = "E,E,...", value_parser = parse_engine_list)]
    pub harvest: Option<EngineList>,
}

impl GpuArgs {
    /// The shape the options describe.
    pub fn shape(&self) -> Result<Shape> {
        let mut s =
            builtin(&self.gpu).ok_or_else(|| usage(format!("--gpu {}: unknown", self.gpu)))?;
        if let Some(gc) = self.gc {
            s.gpu.gc = gc;
        }
        if let Some(n) = self.engines {
            s.gpu.shader_engines = n as usize;
        }
        if let Some(n) = self.dies {
            s.gpu.xccs = n as usize;
        }
        if let Some(n) = self.arrays {
            s.arrays = n as usize;
        }
        if let Some(n) = self.wgps {
            s.wgps_per_array = n;
        }
        if let Some(hz) = self.clock_hz {
            if hz == 0 {
                return Err(usage("--clock-hz 0: expected a positive frequency in Hz"));
            }
            s.gpu.clock_hz = hz;
        }
        if let Some(h) = &self.harvest {
            let n = s.gpu.engines();
            if let Some(e) = h.0.iter().find(|e| **e >= n) {
                return Err(usage(format!(
                    "--harvest {e}: the GPU has engines 0 to {} (engines per die times dies)",
                    n - 1
                )));
            }
            if h.0.len() >= n {
                return Err(usage(format!(
                    "--harvest: all {n} engines would be harvested, so no work-group processor \
                     would run work; name at most {} engines",
                    n - 1
                )));
            }
        }
        Ok(s)
    }

    /// The shape's `wgps`, with the harvested engines' arrays 0.
    pub fn wgps(&self, s: &Shape) -> Result<Wgps> {
        let mut w = s.wgps();
        for &e in self.harvest.iter().flat_map(|l| l.0.iter()) {
            let n = w.len();
            let arrays = w.get_mut(e).ok_or_else(|| {
                usage(format!(
                    "--harvest {e}: the GPU has engines 0 to {} (engines per die times dies)",
                    n - 1
                ))
            })?;
            arrays.iter_mut().for_each(|a| *a = 0);
        }
        Ok(w)
    }

    /// The shape, its generation and the raw trace `file`, opened as the raw route opens one
    /// ([`crate::raw::open_trace`]: mapped, or read) and its header checked against the shape
    /// ([`check_layout`]). What is made of it is the file's once [`crate::raw::Trace::intact`]
    /// says so.
    pub(crate) fn read(
        &self,
        file: &std::path::Path,
    ) -> Result<(Shape, Generation, crate::raw::Trace)> {
        let (shape, g) = self.decodable()?;
        let data = crate::raw::open_trace(file)?;
        check_layout(file, &shape.gpu, g, &data);
        Ok((shape, g, data))
    }

    /// The shape and its generation, which must be one with a trace format.
    pub(crate) fn decodable(&self) -> Result<(Shape, Generation)> {
        let s = self.shape()?;
        let g = s.gpu.generation().ok_or_else(|| {
            usage(format!(
                "--gc {}: no trace format known for GC major {}; expected 9, 11 or 12",
                s.gpu.gc, s.gpu.gc.major
            ))
        })?;
        Ok((s, g))
    }
}

/// Warns when an RDNA file's header names another layout than the GPU's.
pub(crate) fn check_layout(path: &std::path::Path, gpu: &Gpu, g: Generation, data: &[u8]) {
    let Some(want) = sqtt_thread_trace::decode::layout(g) else {
        return;
    };
    match header_layout(data) {
        Some(l) if l == want => {}
        Some(l) => sqtt_files::output::stderr_line(format_args!(
            "warning: {} starts with a layout {l} header, but GC {} writes layout {want}; decoding as layout {want}",
            path.display(),
            gpu.gc
        )),
        None => sqtt_files::output::stderr_line(format_args!(
            "warning: {} does not start with an SQTT layout header",
            path.display()
        )),
    }
}

/// Warns when the decoder stopped before the end of `path`'s bytes: the file and the byte
/// offset, and why (a cut or a corrupt stream).
pub(crate) fn warn_stop(path: &std::path::Path, summary: &sqtt_thread_trace::decode::Summary) {
    if let Some(stop) = summary.stop {
        eprintln!(
            "warning: {}: decoding stopped: {stop}; what follows is not read",
            path.display()
        );
    }
}

/// A decoder sink that keeps nothing.
struct NoSink;

impl sqtt_thread_trace::decode::Sink for NoSink {}

/// `sqtt waves`: the waves of one engine's trace.
#[derive(Debug, Clone, Args)]
pub struct WavesArgs {
    #[command(flatten)]
    pub gpu: GpuArgs,
    /// One shader engine's raw trace bytes (a .att file).
    pub file: PathBuf,
    /// One JSON object per line: {"cu", "simd", "slot", "start", "stop"}.
    #[arg(long)]
    pub json: bool,
}

/// Runs `sqtt waves`.
pub fn run_waves(args: &WavesArgs, out: &mut dyn Write) -> Result<()> {
    let (shape, _, data) = args.gpu.read(&args.file)?;
    let mut ws = Vec::new();
    let summary = waves::waves_into(&shape.gpu, &data, &mut ws);
    data.intact(&args.file)?;
    warn_stop(&args.file, &summary);
    if args.json {
        for w in &ws {
            serde_json::to_writer(&mut *out, w)?;
            writeln!(out)?;
        }
    } else {
        writeln!(
            out,
            "{:>4} {:>4} {:>4} {:>12} {:>12} {:>10}",
            "cu", "simd", "slot", "start", "stop", "cycles"
        )?;
        for w in &ws {
            writeln!(
                out,
                "{:>4} {:>4} {:>4} {:>12} {:>12} {:>10}",
                w.cu,
                w.simd,
                w.slot,
                w.start,
                w.stop,
                w.stop.saturating_sub(w.start)
            )?;
        }
        writeln!(out, "{} waves", ws.len())?;
    }
    Ok(())
}

/// `sqtt clock`: the realtime markers of one engine's trace and the mapping they fit.
#[derive(Debug, Clone, Args)]
pub struct ClockArgs {
    #[command(flatten)]
    pub gpu: GpuArgs,
    /// One shader engine's raw trace bytes (a .att file).
    pub file: PathBuf,
    /// Print one JSON object: {"markers": [{"time", "realtime"}...], "clock_hz", "cycles_per_tick"}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct ClockJson<'a> {
    markers: &'a [waves::Marker],
    clock_hz: u64,
    cycles_per_tick: Option<f64>,
}

/// Runs `sqtt clock`.
pub fn run_clock(args: &ClockArgs, out: &mut dyn Write) -> Result<()> {
    let (shape, g, data) = args.gpu.read(&args.file)?;
    let gpu = &shape.gpu;
    warn_stop(
        &args.file,
        &sqtt_thread_trace::decode::decode(g, &data, &mut NoSink),
    );
    let ms = waves::markers(gpu, &data);
    let map = waves::clock(gpu, &data);
    data.intact(&args.file)?;
    if args.json {
        let j = ClockJson {
            markers: &ms,
            clock_hz: gpu.clock_hz,
            cycles_per_tick: map.as_ref().map(|m| m.cycles_per_tick()),
        };
        serde_json::to_writer(&mut *out, &j)?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(out, "{} realtime markers", ms.len())?;
    for m in &ms {
        writeln!(
            out,
            "  shader time {:>12}  GPU clock {:>16}",
            m.time, m.realtime
        )?;
    }
    match map {
        None => writeln!(
            out,
            "no clock: fewer than two realtime markers at distinct shader times"
        )?,
        Some(m) => {
            let rate = m.cycles_per_tick();
            writeln!(
                out,
                "mapping: piecewise linear through {} markers; {rate:.3} shader cycles per tick of the {} Hz clock \
                 (shader clock about {:.1} MHz)",
                m.markers().len(),
                gpu.clock_hz,
                rate * gpu.clock_hz as f64 / 1e6
            )?;
            let first = m.markers()[0];
            let last = m.markers()[m.markers().len() - 1];
            writeln!(out, "  shader time 0 -> GPU clock {}", m.realtime(0))?;
            writeln!(
                out,
                "  shader time {} -> GPU clock {}",
                first.time,
                m.realtime(first.time)
            )?;
            writeln!(
                out,
                "  shader time {} -> GPU clock {}",
                last.time,
                m.realtime(last.time)
            )?;
        }
    }
    Ok(())
}

/// `sqtt thread-trace`: the PM4 programs.
#[derive(Debug, Clone, Args)]
pub struct ThreadTraceArgs {
    #[command(subcommand)]
    pub action: ThreadTraceAction,
}

#[derive(Debug, Clone, Subcommand)]
pub enum ThreadTraceAction {
    /// The packets that start tracing on every engine.
    Start {
        #[command(flatten)]
        gpu: GpuArgs,
        /// Bytes of each engine's buffer: a multiple of 4096 (e.g. 64M).
        #[arg(long, value_parser = parse_size)]
        size: u64,
        /// Address of engine 0's buffer; engine e's is at address + e * size. A multiple of 4096.
        #[arg(long, value_parser = parse_size)]
        address: u64,
    },
    /// The packets that stop tracing and store each engine's end at address + 4 * e.
    Stop {
        #[command(flatten)]
        gpu: GpuArgs,
        /// Address of the ends, a multiple of 4.
        #[arg(long, value_parser = parse_size)]
        address: u64,
    },
}

fn print_program(family: Generation, words: &[u32], out: &mut dyn Write) -> Result<()> {
    let packets = pm4::read(words)
        .map_err(|at| anyhow::anyhow!("word {at} does not start a whole packet"))?;
    for p in &packets {
        let hex: Vec<String> = words[p.at..p.at + 1 + p.body.len()]
            .iter()
            .map(|w| format!("{w:08x}"))
            .collect();
        writeln!(
            out,
            "{:04}: {:<60} {}",
            p.at,
            hex.join(" "),
            pm4::describe(family, p)
        )?;
    }
    writeln!(out, "{} words, {} packets", words.len(), packets.len())?;
    Ok(())
}

/// A program refused for the GPU's shape, naming the options that made it.
fn shape_error(gpu: &GpuArgs, e: sqtt_thread_trace::Error) -> anyhow::Error {
    let option = match e {
        sqtt_thread_trace::Error::MissingRegister { .. } if gpu.gc.is_some() => "--gc",
        sqtt_thread_trace::Error::Unaddressable { what: "dies", .. } => "--dies",
        sqtt_thread_trace::Error::Unaddressable { .. } => "--engines",
        _ => "--gpu",
    };
    usage(format!("{option}: {e}"))
}

/// Runs `sqtt thread-trace`.
pub fn run_thread_trace(args: &ThreadTraceArgs, out: &mut dyn Write) -> Result<()> {
    let (shape, words) = match &args.action {
        ThreadTraceAction::Start { gpu, size, address } => {
            let s = gpu.shape()?;
            let w = gpu.wgps(&s)?;
            let words = program::start(&s.gpu, &w, *size, *address).map_err(|e| match e {
                sqtt_thread_trace::Error::Size { .. } => usage(format!("--size: {e}")),
                sqtt_thread_trace::Error::Misaligned { .. } => usage(format!("--address: {e}")),
                sqtt_thread_trace::Error::AddressRange { .. } => {
                    usage(format!("--address/--size: {e}"))
                }
                e => shape_error(gpu, e),
            })?;
            (s, words)
        }
        ThreadTraceAction::Stop { gpu, address } => {
            let s = gpu.shape()?;
            let w = gpu.wgps(&s)?;
            let words = program::stop(&s.gpu, &w, *address).map_err(|e| match e {
                sqtt_thread_trace::Error::Misaligned { .. } => usage(format!("--address: {e}")),
                e => shape_error(gpu, e),
            })?;
            (s, words)
        }
    };
    let family = sqtt_thread_trace::regs::family(shape.gpu.gc)
        .ok_or_else(|| usage(format!("--gc {}: unknown family", shape.gpu.gc)))?;
    print_program(family, &words, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("0x1000"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("16M"), Ok(16 << 20));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert!(parse_size("").is_err());
        assert!(parse_size("12Q").is_err());
        assert!(parse_size("99999999999999999999G").is_err());
    }

    fn gpu(harvest: &str) -> Result<Shape> {
        GpuArgs {
            gpu: "gfx90a".into(),
            gc: None,
            engines: None,
            dies: None,
            arrays: None,
            wgps: None,
            clock_hz: None,
            harvest: Some(parse_engine_list(harvest).map_err(anyhow::Error::msg)?),
        }
        .shape()
    }

    /// `--harvest`: spaces ignored, duplicates count once, empty items and out-of-range engines
    /// refused, and harvesting every engine (no work could run) refused as a usage error.
    #[test]
    fn harvest_lists_are_checked_when_given() {
        assert_eq!(parse_engine_list(" 2, 5,2"), Ok(EngineList(vec![2, 5])));
        for bad in ["", "1,,2", "x", "-1", "18446744073709551616"] {
            assert!(parse_engine_list(bad).is_err(), "{bad:?}");
        }
        let engines = builtin("gfx90a").unwrap().gpu.engines();
        assert!(gpu("0").is_ok());
        let e = gpu(&engines.to_string()).unwrap_err();
        assert_eq!(exit_code(&e), 2);
        assert!(e
            .to_string()
            .starts_with(&format!("--harvest {engines}: the GPU has engines 0 to")));
        let all: Vec<String> = (0..engines).map(|e| e.to_string()).collect();
        let e = gpu(&all.join(",")).unwrap_err();
        assert_eq!(exit_code(&e), 2);
        assert!(e.to_string().contains("would be harvested"), "{e}");
        // All but one is fine.
        assert!(gpu(&all[1..].join(",")).is_ok());
    }
}

#[cfg(test)]
mod read_race {
    use std::io::{Seek, SeekFrom, Write};
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::{mpsc, Arc};
    use std::time::{Duration, Instant};

    /// A trace of `len` bytes filled with `byte`.
    fn trace(len: usize, byte: u8) -> Vec<u8> {
        vec![byte; len]
    }

    /// Reads `path` on another thread, at least `runs` times and until `rounds` reaches
    /// `min_rounds`; panics if a read blocks (no answer within 10 s). Returns each read's result.
    fn reads(
        path: &Path,
        runs: usize,
        rounds: Arc<AtomicU64>,
        min_rounds: u64,
    ) -> Vec<Result<Vec<u8>, String>> {
        let (tx, rx) = mpsc::channel();
        let path = PathBuf::from(path);
        std::thread::spawn(move || {
            let mut n = 0;
            while n < runs || rounds.load(Ordering::Relaxed) < min_rounds {
                // As the commands use a trace: its bytes, once it says they were the file's.
                let r = crate::raw::open_trace(&path)
                    .and_then(|t| {
                        let d = t.to_vec();
                        t.intact(&path).map(|()| d)
                    })
                    .map_err(|e| format!("{e:#}"));
                if tx.send(r).is_err() {
                    return;
                }
                n += 1;
            }
        });
        let mut all = Vec::new();
        loop {
            match rx.recv_timeout(Duration::from_secs(10)) {
                Ok(r) => all.push(r),
                Err(mpsc::RecvTimeoutError::Disconnected) => return all,
                Err(mpsc::RecvTimeoutError::Timeout) => panic!(
                    "read {} blocked (a FIFO opened after the check?)",
                    all.len()
                ),
            }
        }
    }

    /// The path is swapped (rename, as an atomic rewrite does) between a 256 KiB trace, a 768 KiB
    /// trace and a FIFO nobody writes to, and the small trace is also truncated and rewritten in
    /// place (200 rounds), while it is read (at least 2000 times): every read is the data of one
    /// file (stale is allowed) or an error naming what went wrong; none blocks on the FIFO, none
    /// reads past the size it saw, none signals.
    #[test]
    fn a_file_swapped_or_truncated_between_check_and_read_gives_one_files_data_or_an_error() {
        let dir = tempfile::Builder::new()
            .prefix("sqtt-tt-race-")
            .tempdir()
            .unwrap()
            .keep();
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("se0.att");
        let small = trace(256 << 10, 0x11);
        let big = trace(768 << 10, 0x22);
        std::fs::write(&path, &small).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let rounds = Arc::new(AtomicU64::new(0));
        let rewriter = {
            let (dir, path, stop) = (dir.clone(), path.clone(), stop.clone());
            let rounds = rounds.clone();
            let (small, big) = (small.clone(), big.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    // In place: truncate, then rewrite.
                    if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&path) {
                        let _ = f.set_len(4096);
                        let _ = f.seek(SeekFrom::Start(0));
                        let _ = f.write_all(&small);
                    }
                    // Swapped: a bigger trace, a FIFO, then the small trace again.
                    let next = dir.join("next");
                    std::fs::write(&next, &big).unwrap();
                    std::fs::rename(&next, &path).unwrap();
                    let fifo = dir.join("fifo");
                    let _ = std::fs::remove_file(&fifo);
                    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
                    if made.is_ok_and(|s| s.success()) {
                        std::fs::rename(&fifo, &path).unwrap();
                    }
                    std::fs::write(&next, &small).unwrap();
                    std::fs::rename(&next, &path).unwrap();
                    rounds.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        let start = Instant::now();
        let results = reads(&path, 2000, rounds.clone(), 200);
        stop.store(true, Ordering::Relaxed);
        rewriter.join().unwrap();
        let rounds = rounds.load(Ordering::Relaxed);
        let elapsed = start.elapsed();
        std::fs::remove_dir_all(&dir).unwrap();
        let (mut whole, mut errors) = (0, 0);
        for r in results {
            match r {
                Ok(d) => {
                    // One file's data, read no further than the size it had: the big trace
                    // whole, or the small one, where a read racing the in-place rewrite may see
                    // the zeros the truncation left ahead of the writer (stale data, which the
                    // reader cannot prevent), but never bytes of another file.
                    assert!(d.len() <= big.len(), "read {} bytes", d.len());
                    assert!(
                        d == big || d.iter().all(|&b| b == 0x11 || b == 0),
                        "a mix of two files ({} bytes: {} of 0x11, {} of 0x22)",
                        d.len(),
                        d.iter().filter(|&&b| b == 0x11).count(),
                        d.iter().filter(|&&b| b == 0x22).count(),
                    );
                    whole += 1;
                }
                Err(e) => {
                    assert!(
                        e.contains("shrank") || e.contains("FIFO") || e.contains("No such file"),
                        "{e}"
                    );
                    errors += 1;
                }
            }
        }
        assert!(rounds >= 200, "the rewriter ran only {rounds} rounds");
        assert!(whole > 0, "no read succeeded");
        eprintln!("{whole} reads, {errors} errors, {rounds} rewrites in {elapsed:?}");
    }
}
