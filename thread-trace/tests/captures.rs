//! Every real capture in tests/data/sqtt-captures (see its README.md) decodes: whole packets to the end, waves
//! paired, times monotonic, non-empty kernels with waves, a clock on GFX11/12 and none on GFX9.

use std::path::{Path, PathBuf};

use sqtt_thread_trace::decode::{decode, header_layout, Sink};
use sqtt_thread_trace::{builtin, clock, waves, Generation, Gpu};

fn captures_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/sqtt-captures");
    assert!(
        dir.is_dir(),
        "the real captures are missing: expected them at {} (tracked in the repository)",
        dir.display()
    );
    dir
}

/// One capture file: its arch directory, run, file name, bytes, and the meta.json entry.
struct Capture {
    arch: String,
    run: String,
    file: String,
    data: Vec<u8>,
    itrace: bool,
}

fn captures() -> Vec<Capture> {
    let dir = captures_dir();
    let mut out = Vec::new();
    let mut arches: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .collect();
    arches.sort_by_key(|e| e.file_name());
    for arch in arches {
        let mut runs: Vec<_> = std::fs::read_dir(arch.path()).unwrap().flatten().collect();
        runs.sort_by_key(|e| e.file_name());
        for run in runs {
            let meta_path = run.path().join("meta.json");
            let meta: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&meta_path).unwrap()).unwrap();
            for t in meta["traces"].as_array().unwrap() {
                let file = t["file"].as_str().unwrap().to_string();
                let data = std::fs::read(run.path().join(&file)).unwrap();
                assert_eq!(
                    data.len() as u64,
                    t["bytes"].as_u64().unwrap(),
                    "{file}: size in meta.json"
                );
                out.push(Capture {
                    arch: arch.file_name().to_string_lossy().into_owned(),
                    run: run.file_name().to_string_lossy().into_owned(),
                    file,
                    data,
                    itrace: t["itrace"].as_bool().unwrap_or(false),
                });
            }
        }
    }
    assert!(out.len() > 100, "only {} captures found", out.len());
    out
}

/// The GPU a capture was recorded on. The gfx1200 directory's meta.json reports
/// gfx_target_version 120001: it is a gfx1201 (4 engines).
fn gpu_of(arch: &str) -> Gpu {
    let name = if arch == "gfx1200" { "gfx1201" } else { arch };
    builtin(name)
        .unwrap_or_else(|| panic!("no built-in shape for {arch}"))
        .gpu
}

#[derive(Default)]
struct Check {
    last: u64,
    monotonic: bool,
    starts: usize,
    ends: usize,
    markers: usize,
}

impl Sink for Check {
    fn wave_start(&mut self, _: u32, _: u32, _: u32, t: u64) {
        self.monotonic &= t >= self.last;
        self.last = t;
        self.starts += 1;
    }
    fn wave_end(&mut self, _: u32, _: u32, _: u32, t: u64) {
        self.monotonic &= t >= self.last;
        self.last = t;
        self.ends += 1;
    }
    fn marker(&mut self, t: u64, _: u64) {
        self.monotonic &= t >= self.last;
        self.last = t;
        self.markers += 1;
    }
}

#[test]
fn every_capture_decodes_to_its_end() {
    for c in captures() {
        let gpu = gpu_of(&c.arch);
        let g = gpu.generation().unwrap();
        let name = format!("{}/{}/{}", c.arch, c.run, c.file);
        let mut check = Check {
            monotonic: true,
            ..Check::default()
        };
        let s = decode(g, &c.data, &mut check);
        assert!(s.packets > 0, "{name}: no packets");
        assert!(check.monotonic, "{name}: times run back");
        // Whole packets up to the end: what is left is at most a packet cut at the buffer's end,
        // never a whole 32-byte unit of the hardware's writes.
        let left = c.data.len() - s.consumed;
        assert!(left < 32, "{name}: {left} bytes left undecoded");
        match g {
            Generation::Gfx11 => assert_eq!(header_layout(&c.data), Some(3), "{name}"),
            Generation::Gfx12 => assert_eq!(header_layout(&c.data), Some(4), "{name}"),
            _ => {}
        }
        if g != Generation::Gfx9 {
            assert_eq!(s.layout, header_layout(&c.data), "{name}");
        }
        let ws = waves(&gpu, &c.data);
        // In these whole kernels every start has its end and every end its start.
        assert_eq!(check.starts, check.ends, "{name}: starts and ends");
        assert_eq!(ws.len(), check.ends, "{name}: waves pair");
        for w in &ws {
            assert!(w.start <= w.stop, "{name}: {w:?}");
        }
        for pair in ws.windows(2) {
            assert!(
                pair[0].stop <= pair[1].stop,
                "{name}: waves out of the order they end"
            );
        }
        match g {
            Generation::Gfx9 => assert!(clock(&gpu, &c.data).is_none(), "{name}: a GFX9 clock"),
            // GFX11 engines write a marker every 4096 clocks (CTRL.RT_FREQ). GFX12 has no
            // RT_FREQ: in these captures only the engines that trace instructions and ran waves
            // wrote markers, and every one of those did.
            g => {
                let expected = g == Generation::Gfx11 || (c.itrace && !ws.is_empty());
                let m = clock(&gpu, &c.data);
                assert_eq!(
                    m.is_some(),
                    expected,
                    "{name}: a clock, {} markers",
                    check.markers
                );
                if let Some(m) = m {
                    let rate = m.cycles_per_tick();
                    assert!(
                        rate > 1.0 && rate < 100.0,
                        "{name}: {rate} shader cycles per 100 MHz tick"
                    );
                }
            }
        }
    }
}

#[test]
fn kernels_that_run_have_waves() {
    use std::collections::BTreeMap;
    let mut per_run: BTreeMap<(String, String, String), usize> = BTreeMap::new();
    for c in captures() {
        let gpu = gpu_of(&c.arch);
        let kern = c.file.split('_').next().unwrap().to_string();
        *per_run
            .entry((c.arch.clone(), c.run.clone(), kern))
            .or_default() += waves(&gpu, &c.data).len();
    }
    for ((arch, run, kern), n) in per_run {
        assert!(n > 0, "{arch}/{run} {kern}: no waves on any engine");
    }
}
