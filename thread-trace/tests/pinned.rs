//! The decoders against AMD's decoder's output, pinned in tests/data/amd-decoder (see its
//! README.md for how it was produced): every real capture's waves (start and end times, unit)
//! and records, and synthetic streams with instruction packets and shader data of every form on
//! each generation. No AMD code is needed to run these.

#[path = "support/gpu.rs"]
mod gpu;
#[path = "support/pinned.rs"]
mod pinned;

use gpu::gpu;
use pinned::{data_dir, pinned};
use sqtt_thread_trace::decode::{amd_cu, decode, shader_data, ShaderData, Sink};
use sqtt_thread_trace::{waves, Generation};

/// The generation a file's path under tests/data names: a capture's arch directory (gfx1100,
/// gfx1200 (a gfx1201), gfx950), a synthetic stream's generation (gfx9, gfx11, gfx12).
fn generation(path: &str) -> Generation {
    if path.contains("gfx95") || path.contains("gfx9_") {
        Generation::Gfx9
    } else if path.contains("gfx11") {
        Generation::Gfx11
    } else {
        Generation::Gfx12
    }
}

#[test]
fn waves_and_records_equal_amds() {
    let files = pinned();
    assert!(files.len() >= 150 + 12, "{} files pinned", files.len());
    let (mut n_waves, mut n_records, mut n_real) = (0, 0, 0);
    for (name, want) in &files {
        let g = generation(name);
        let data = std::fs::read(data_dir().join(name)).unwrap();
        assert_eq!(want.status, 0, "{name}: AMD's decoder failed on it");
        let mut ours: Vec<[u64; 5]> = waves(&gpu(g), &data)
            .iter()
            .map(|w| {
                [
                    u64::from(amd_cu(g, w.cu)),
                    u64::from(w.simd),
                    u64::from(w.slot),
                    w.start,
                    w.stop,
                ]
            })
            .collect();
        ours.sort();
        // AMD's placeholder for an end without a start (README.md): not a wave here.
        let mut unmatched = ours.clone();
        let mut theirs: Vec<[u64; 5]> = Vec::new();
        for w in &want.waves {
            if w[3] == 0 {
                match unmatched.iter().position(|x| x == w) {
                    Some(i) => {
                        unmatched.swap_remove(i);
                    }
                    None => continue,
                }
            }
            theirs.push(*w);
        }
        theirs.sort();
        assert_eq!(ours, theirs, "{name}: waves");
        let mut records: Vec<[u64; 6]> = shader_data(g, &data)
            .0
            .iter()
            .map(|r| {
                [
                    r.time,
                    u64::from(r.value),
                    u64::from(r.cu),
                    u64::from(r.simd),
                    u64::from(r.wave),
                    u64::from(r.flags),
                ]
            })
            .collect();
        records.sort();
        assert_eq!(records, want.records, "{name}: records");
        n_waves += ours.len();
        n_records += records.len();
        n_real += usize::from(name.starts_with("sqtt-captures"));
    }
    // The real captures' waves (1,031 on gfx1100, 1,035 on gfx1200, 1,026 on gfx950) and the
    // synthetic streams' records are all there.
    assert_eq!(n_real, 150);
    assert!(
        n_waves > 3092 && n_records > 900,
        "{n_waves} waves, {n_records} records"
    );
}

/// Counts the shader-data packets AMD's decoder drops (GFX11, exec bit set).
#[derive(Default)]
struct Dropped(usize);

impl Sink for Dropped {
    fn dropped_shader_data(&mut self, _: ShaderData) {
        self.0 += 1;
    }
}

/// The gfx1100 gemm capture holds 30 shader-data packets with the exec bit set, which AMD's
/// decoder reports none of; neither do these decoders.
#[test]
fn gemm_exec_packets_give_no_records() {
    let dir = data_dir().join("sqtt-captures/gfx1100/gemm_run_0");
    let (mut dropped, mut records) = (0, 0);
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "att") {
            let data = std::fs::read(e.path()).unwrap();
            let mut d = Dropped::default();
            decode(Generation::Gfx11, &data, &mut d);
            dropped += d.0;
            records += shader_data(Generation::Gfx11, &data).0.len();
        }
    }
    assert_eq!(dropped, 30);
    assert_eq!(records, 0);
}
