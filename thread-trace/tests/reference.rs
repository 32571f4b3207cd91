//! Opt-in: the decoders against AMD's own (rocprof-trace-decoder, the library named by
//! `SQTT_REFERENCE_DECODER`; skipped when it is unset). On every real capture and on synthetic
//! streams of each generation (instruction packets of every type, both shader-data forms with
//! their exec and sdt variants, context save and restore, realtime and lost-packet stamps, GFX9
//! time resets), the waves (AMD's occupancy events paired as `waves` pairs) and the shader-data
//! records must be equal. Prints the agreement per generation. A few constructs where AMD's
//! decoders differ between versions (docs/format.md) are counted apart, not asserted.
//!
//! `SQTT_REFERENCE_DECODER=/path/to/librocprof-trace-decoder.so cargo test -p sqtt-thread-trace --test reference -- --nocapture`
//! (`SQTT_REFERENCE_STREAMS=FROM..TO`: the synthetic streams' seeds, default `0..300`)

#[path = "support/amd.rs"]
mod amd;
#[path = "support/target_cu.rs"]
mod target_cu;

use std::collections::BTreeMap;
use std::path::Path;

use sqtt_thread_trace::decode::{amd_cu, shader_data, CDNA_WORDS};
use sqtt_thread_trace::synth::{Encoder, Form, Slot};
use sqtt_thread_trace::{builtin, waves, Generation, Gpu, Wave};

/// A wave in AMD's numbering: (cu, simd, slot, start, stop).
type AmdWave = (u8, u8, u8, u64, u64);

fn ours(g: Generation, gpu: &Gpu, data: &[u8]) -> (Vec<AmdWave>, Vec<amd::Record>) {
    let ws: Vec<AmdWave> = waves(gpu, data)
        .iter()
        .map(|w: &Wave| (amd_cu(g, w.cu), w.simd as u8, w.slot as u8, w.start, w.stop))
        .collect();
    let (rs, _) = shader_data(g, data);
    let rs = rs
        .iter()
        .map(|r| (r.time, r.value, r.cu, r.simd, r.wave, r.flags))
        .collect();
    (ws, rs)
}

/// Equal items of two lists taken as multisets, and the larger count.
fn agreement<T: Ord + Clone>(a: &[T], b: &[T]) -> (usize, usize) {
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    a.sort();
    b.sort();
    let (mut i, mut j, mut eq) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Equal => {
                eq += 1;
                i += 1;
                j += 1;
            }
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
        }
    }
    (eq, a.len().max(b.len()))
}

/// What `a` holds beyond `b`, as multisets.
fn minus<T: PartialEq + Copy>(a: &[T], b: &[T]) -> Vec<T> {
    let mut b = b.to_vec();
    a.iter()
        .filter(|x| match b.iter().position(|y| y == *x) {
            Some(i) => {
                b.swap_remove(i);
                false
            }
            None => true,
        })
        .copied()
        .collect()
}

#[derive(Default, Debug)]
struct Tally {
    files: usize,
    waves: (usize, usize),
    records: (usize, usize),
    placeholders: usize,
    differing: Vec<String>,
}

impl Tally {
    fn add(&mut self, name: &str, amd: &amd::Output, ours: &(Vec<AmdWave>, Vec<amd::Record>)) {
        // AMD's decoder makes up a start at time 0 for an end whose start the trace lacks
        // (`waves` drops such an end): those waves are counted apart.
        let mut unmatched = ours.0.clone();
        let (placeholders, theirs): (Vec<AmdWave>, Vec<AmdWave>) =
            amd::pair(&amd.events).into_iter().partition(|w| {
                w.3 == 0
                    && match unmatched.iter().position(|x| x == w) {
                        Some(i) => {
                            unmatched.swap_remove(i);
                            false
                        }
                        None => true,
                    }
            });
        self.placeholders += placeholders.len();
        let w = agreement(&theirs, &ours.0);
        let r = agreement(&amd.records, &ours.1);
        self.files += 1;
        self.waves.0 += w.0;
        self.waves.1 += w.1;
        self.records.0 += r.0;
        self.records.1 += r.1;
        if w.0 != w.1 || r.0 != r.1 || amd.status != 0 {
            let mut line = format!(
                "{name}: status {}, waves {}/{}, records {}/{}",
                amd.status, w.0, w.1, r.0, r.1
            );
            if std::env::var_os("SQTT_REFERENCE_VERBOSE").is_some() {
                line += &format!(
                    "\n  AMD only {:?}\n  ours only {:?}\n  AMD only {:?}\n  ours only {:?}",
                    minus(&amd.records, &ours.1),
                    minus(&ours.1, &amd.records),
                    minus(&theirs, &ours.0),
                    minus(&ours.0, &theirs)
                );
            }
            self.differing.push(line);
        }
    }
}

fn gpu_of(g: Generation) -> Gpu {
    builtin(match g {
        Generation::Gfx9 => "gfx950",
        Generation::Gfx11 => "gfx1100",
        _ => "gfx1201",
    })
    .unwrap()
    .gpu
}

/// xorshift64*: deterministic streams.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A synthetic stream of `g`: waves, time, instruction packets, shader data and, with
/// `divergent`, the constructs AMD's decoder versions read differently.
pub fn stream(g: Generation, seed: u64, events: usize, divergent: bool) -> Encoder {
    let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut e = Encoder::new(g);
    let keys: Vec<Slot> = (0..6)
        .map(|_| Slot {
            sa: r.below(2) as u32,
            wgp: r.below(if g == Generation::Gfx11 { 8 } else { 16 }) as u32,
            simd: r.below(4) as u32,
            slot: r.below(if g == Generation::Gfx9 { 10 } else { 16 }) as u32,
        })
        .collect();
    let mut realtime = 1_000_000u64;
    let mut absolute = 1u64 << 40;
    for _ in 0..events {
        let key = keys[r.below(keys.len() as u64) as usize];
        let inline = r.below(2) == 0;
        match r.below(if divergent { 16 } else { 14 }) {
            0 | 1 => e.gap(r.below(20)),
            2 => e.gap(r.below(1 << 16)),
            3 => e.start(key, inline),
            4 => e.end(key, inline),
            5 | 6 => e.other(
                r.next() as usize,
                u128::from(r.next()) << 64 | u128::from(r.next()),
            ),
            7 => {
                realtime += 1 + r.below(5000);
                e.marker(realtime);
            }
            8 => e.nop(),
            9 | 10 => {
                let form = if r.below(2) == 0 {
                    Form::Full
                } else {
                    Form::Imm
                };
                let flag = if r.below(4) == 0 {
                    r.below(4) as u32
                } else {
                    0
                };
                e.shader_data_flags(key, r.next() as u32, form, flag, inline);
            }
            11 => e.stamp_lost(r.next()),
            12 => {
                if g == Generation::Gfx9 {
                    absolute += r.below(1 << 20);
                    e.time_reset(absolute);
                } else {
                    e.context(key, r.below(2) == 0);
                }
            }
            13 => {
                if g == Generation::Gfx9 {
                    e.stamp();
                } else {
                    e.gap(r.below(8));
                }
            }
            14 => e.start_ext(key, inline, r.below(3) as usize, r.below(2) as usize),
            _ => {
                if g == Generation::Gfx12 {
                    let form = if r.below(2) == 0 {
                        Form::Full
                    } else {
                        Form::Imm
                    };
                    e.shader_data_rdna3_code(key, r.next() as u32, form, r.below(2) == 0);
                } else {
                    e.start_ext(key, inline, 0, 0);
                }
            }
        }
    }
    e.flush();
    e
}

/// AMD's status for a buffer it rejects: its GFX9 instruction timing (which pairs ISSUE tokens
/// with the INST tokens that follow) throws on some random sequences of them (an index past its
/// list of a wave's instructions), and the whole trace is rejected.
const INVALID_SHADER_DATA: i32 = 4;

/// A GFX9 stream with its INST and ISSUE tokens made MISC tokens of the same delta (and zero
/// words), so that no instruction timing is done: the waves and records stay the stream's.
fn without_instruction_timing(data: &[u8]) -> Vec<u8> {
    let mut w: Vec<u16> = data
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    let mut i = 4;
    while i < w.len() {
        let ty = usize::from(w[i] & 0xF);
        let n = usize::from(CDNA_WORDS[ty]);
        if (ty == 10 || ty == 13) && i + n <= w.len() {
            w[i] &= 1 << 4;
            w[i + 1..i + n].fill(0);
        }
        i += n;
    }
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn captures() -> Vec<(Generation, String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/sqtt-captures");
    let mut out = Vec::new();
    for (arch, g) in [
        ("gfx1100", Generation::Gfx11),
        ("gfx1200", Generation::Gfx12),
        ("gfx950", Generation::Gfx9),
    ] {
        let mut files: Vec<_> = walk(&dir.join(arch));
        files.sort();
        for f in files {
            let name = f.strip_prefix(&dir).unwrap().display().to_string();
            out.push((g, name, std::fs::read(&f).unwrap()));
        }
    }
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "att") {
            out.push(p);
        }
    }
    out
}

/// The pinned expectations (tests/data/amd-decoder): the real captures' and a few synthetic
/// streams' waves and records as AMD's decoder gives them, which `pinned.rs` checks without it.
/// Written when `SQTT_REFERENCE_WRITE` names the directory.
fn write_pinned(amd: &amd::Amd, dir: &Path) {
    use serde_json::{json, Map, Value};
    let synthetic = dir.join("synthetic");
    std::fs::create_dir_all(&synthetic).unwrap();
    let mut files = Map::new();
    let mut entry = |name: String, out: &amd::Output| {
        let mut waves = amd::pair(&out.events);
        waves.sort();
        let mut records = out.records.clone();
        records.sort();
        files.insert(
            name,
            json!({
                "status": out.status,
                "waves": waves.iter().map(|w| json!([w.0, w.1, w.2, w.3, w.4])).collect::<Vec<_>>(),
                "records": records.iter().map(|r| json!([r.0, r.1, r.2, r.3, r.4, r.5])).collect::<Vec<_>>(),
            }),
        );
    };
    for (_, name, data) in captures() {
        entry(format!("sqtt-captures/{name}"), &amd.decode(&data));
    }
    for g in [Generation::Gfx9, Generation::Gfx11, Generation::Gfx12] {
        for seed in 0..4u64 {
            let data = stream(g, 1000 + seed, 600, false).bytes();
            let name = format!("{g}_{seed}.att");
            std::fs::write(synthetic.join(&name), &data).unwrap();
            entry(format!("amd-decoder/synthetic/{name}"), &amd.decode(&data));
        }
    }
    let library = std::env::var(amd::VAR).unwrap_or_default();
    let doc = json!({
        "decoder": Path::new(&library).file_name().map(|f| f.to_string_lossy().into_owned()),
        "files": Value::Object(files),
    });
    std::fs::write(
        dir.join("expected.json"),
        serde_json::to_string(&doc).unwrap() + "\n",
    )
    .unwrap();
}

#[test]
fn agrees_with_amds_decoder() {
    let Some(amd) = amd::Amd::from_env() else {
        eprintln!("{} is not set: AMD's decoder is not compared", amd::VAR);
        return;
    };
    if let Some(dir) = std::env::var_os("SQTT_REFERENCE_WRITE") {
        write_pinned(&amd, Path::new(&dir));
    }
    let mut tallies: BTreeMap<(String, &str), Tally> = BTreeMap::new();
    for (g, name, data) in captures() {
        let gpu = gpu_of(g);
        let t = tallies.entry((g.to_string(), "real captures")).or_default();
        t.add(&name, &amd.decode(&data), &ours(g, &gpu, &data));
    }
    // SQTT_REFERENCE_STREAMS=FROM..TO widens the synthetic streams' seeds (default 0..300).
    let seeds = std::env::var("SQTT_REFERENCE_STREAMS")
        .ok()
        .map(|v| {
            let (from, to) = v
                .split_once("..")
                .expect("SQTT_REFERENCE_STREAMS is FROM..TO");
            from.parse::<u64>().expect("a seed")..to.parse::<u64>().expect("a seed")
        })
        .unwrap_or(0..300);
    for g in [Generation::Gfx9, Generation::Gfx11, Generation::Gfx12] {
        let gpu = gpu_of(g);
        for seed in seeds.clone() {
            for (divergent, class) in [(false, "synthetic"), (true, "synthetic, version-divergent")]
            {
                let e = stream(g, seed * 2 + u64::from(divergent), 400, divergent);
                let mut data = e.bytes();
                let mut out = amd.decode(&data);
                let mut class = class;
                if g == Generation::Gfx9 && out.status == INVALID_SHADER_DATA {
                    // AMD's instruction timing threw on the random instruction and issue
                    // tokens: the stream without them is what is compared.
                    data = without_instruction_timing(&data);
                    out = amd.decode(&data);
                    class = "synthetic, instruction timing out";
                }
                let t = tallies.entry((g.to_string(), class)).or_default();
                t.add(&format!("{g} seed {seed}"), &out, &ours(g, &gpu, &data));
            }
        }
    }
    // The hand-built target-CU streams: AMD's waves are the ones the case records (so that
    // `packets.rs` holds the decoder to AMD's), and ours agree.
    let gpu = gpu_of(Generation::Gfx9);
    for case in target_cu::CASES {
        let data = target_cu::bytes(case);
        let out = amd.decode(&data);
        let mut theirs: Vec<AmdWave> = amd::pair(&out.events)
            .into_iter()
            .filter(|w| w.3 != 0)
            .collect();
        theirs.sort();
        let mut want = case.waves.to_vec();
        want.sort();
        assert_eq!(theirs, want, "AMD's waves of {}", case.name);
        let t = tallies
            .entry(("gfx9".to_string(), "hand-built, target CU"))
            .or_default();
        t.add(case.name, &out, &ours(Generation::Gfx9, &gpu, &data));
    }
    // Random streams of a few slots on and beside the target CU, saves and restores among
    // them (1,000 of 60 tokens; the seeds' range widens them too).
    let mut r = Rng(0x7A26_E7C0 | 1);
    let randoms = 1000 + seeds.clone().count().saturating_sub(300);
    for k in 0..randoms {
        let tokens = target_cu::random_tokens(&mut |n| r.below(n), 60);
        let data = target_cu::stream(0, &tokens);
        let t = tallies
            .entry(("gfx9".to_string(), "random, target CU"))
            .or_default();
        t.add(
            &format!("random target-CU stream {k}"),
            &amd.decode(&data),
            &ours(Generation::Gfx9, &gpu, &data),
        );
    }
    let mut failed = Vec::new();
    println!(
        "{:8} {:30} {:>6} {:>17} {:>17} {:>12}",
        "gen", "streams", "files", "waves equal", "records equal", "placeholders"
    );
    for ((g, class), t) in &tallies {
        println!(
            "{g:8} {class:30} {:>6} {:>8}/{:<8} {:>8}/{:<8} {:>12}",
            t.files, t.waves.0, t.waves.1, t.records.0, t.records.1, t.placeholders
        );
        if !class.contains("divergent") || g == "gfx9" {
            failed.extend(t.differing.iter().cloned());
        }
    }
    assert!(
        failed.is_empty(),
        "differ from AMD's decoder:\n{}",
        failed.join("\n")
    );
}
