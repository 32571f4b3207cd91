//! Wave-decoding throughput on one core: every real capture, each repeated until its
//! generation's share reaches at least 256 MiB, decoded with `waves`.
//!
//! Run with `cargo run --release -p sqtt-thread-trace --example bench_waves [MIB]`.

use std::path::Path;
use std::time::Instant;

use sqtt_thread_trace::decode::{decode, Sink};
use sqtt_thread_trace::{builtin, waves::waves_into, Generation};

/// A sink that keeps nothing, to time the packet walk alone.
struct Nothing(u64);

impl Sink for Nothing {
    fn wave_end(&mut self, _: u32, _: u32, _: u32, t: u64) {
        self.0 ^= t;
    }
}

/// Nanoseconds this thread has run on a CPU (Linux's schedstat), if the kernel tells: the
/// machine may be shared, and time spent waiting for a core is not decoding time.
fn cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

fn main() {
    let target_mib: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(256);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/sqtt-captures");
    assert!(dir.is_dir(), "captures missing at {}", dir.display());
    println!("wave decoding, one core, captures repeated to >= {target_mib} MiB per generation");
    let mut total_bytes = 0usize;
    let mut total_secs = 0f64;
    let mut best_secs = 0f64;
    let mut total_cpu = 0f64;
    for (arch, gpu_name, g) in [
        ("gfx1100", "gfx1100", Generation::Gfx11),
        ("gfx1200", "gfx1201", Generation::Gfx12),
        ("gfx950", "gfx950", Generation::Gfx9),
    ] {
        let gpu = builtin(gpu_name).unwrap().gpu;
        assert_eq!(gpu.generation(), Some(g));
        let mut files = Vec::new();
        for run in std::fs::read_dir(dir.join(arch)).unwrap().flatten() {
            for f in std::fs::read_dir(run.path()).unwrap().flatten() {
                if f.path().extension().is_some_and(|e| e == "att") {
                    files.push(std::fs::read(f.path()).unwrap());
                }
            }
        }
        let one: usize = files.iter().map(Vec::len).sum();
        let reps = (target_mib << 20).div_ceil(one);
        let mut out = Vec::with_capacity(1 << 16);
        // Warm up once, then time every repetition of every file.
        for f in &files {
            out.clear();
            waves_into(&gpu, f, &mut out);
        }
        // Time the repetitions in 16 batches: the machine is shared, so the fastest batch is
        // reported beside the whole run.
        let batches = 16;
        let per = reps.div_ceil(batches);
        let mut best = f64::INFINITY;
        let mut secs = 0f64;
        let cpu0 = cpu_ns();
        let mut count = 0usize;
        let mut done = 0;
        while done < reps {
            let k = per.min(reps - done);
            let t = Instant::now();
            for _ in 0..k {
                for f in &files {
                    out.clear();
                    waves_into(&gpu, f, &mut out);
                    count += out.len();
                }
            }
            let dt = t.elapsed().as_secs_f64();
            best = best.min(dt / k as f64);
            secs += dt;
            done += k;
        }
        let cpu = cpu_ns().zip(cpu0).map(|(b, a)| (b - a) as f64 / 1e9);
        // The packet walk alone, without pairing waves.
        let walk0 = cpu_ns();
        let t = Instant::now();
        let mut nothing = Nothing(0);
        for _ in 0..reps {
            for f in &files {
                decode(g, f, &mut nothing);
            }
        }
        let walk = cpu_ns()
            .zip(walk0)
            .map_or(t.elapsed().as_secs_f64(), |(b, a)| (b - a) as f64 / 1e9);
        std::hint::black_box(nothing.0);
        let bytes = one * reps;
        total_bytes += bytes;
        total_cpu += cpu.unwrap_or(secs);
        total_secs += secs;
        best_secs += best * reps as f64;
        println!(
            "{arch:8} {:>3} files x {reps:>5}: {:>6.1} MiB in {secs:.3} s = {:>5.0} MB/s; per CPU second {:>5.0} MB/s; fastest batch {:>5.0} MB/s ({count} waves); packet walk alone {:>5.0} MB/s",
            files.len(),
            bytes as f64 / (1 << 20) as f64,
            bytes as f64 / secs / 1e6,
            bytes as f64 / cpu.unwrap_or(secs) / 1e6,
            one as f64 / best / 1e6,
            bytes as f64 / walk / 1e6
        );
    }
    println!(
        "all      {:>8.1} MiB in {total_secs:.3} s = {:.0} MB/s; per CPU second {:.0} MB/s; at the fastest batches' pace {:.0} MB/s",
        total_bytes as f64 / (1 << 20) as f64,
        total_bytes as f64 / total_secs / 1e6,
        total_bytes as f64 / total_cpu / 1e6,
        total_bytes as f64 / best_secs / 1e6
    );
}
