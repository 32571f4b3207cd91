//! The packets the decoders once misread, assembled bit by bit here (not by the in-tree encoder)
//! with what AMD's decoder makes of them (each checked against its library): sizes, time
//! deltas, realtime stamps, shader-data fields, WAVE_START_EXT's extensions, GFX9 time resets,
//! and where a cut or corrupt stream stops.

use sqtt_thread_trace::decode::{
    amd_cu, decode, shader_data, ShaderData, Sink, StopReason, SHADER_DATA_IMM, SHADER_DATA_PRIV,
};
use sqtt_thread_trace::{waves, Generation, Wave};

#[path = "support/gpu.rs"]
mod gpu;
#[path = "support/target_cu.rs"]
mod target_cu;
use gpu::gpu;

/// Bits, least significant first.
struct Bits(Vec<u8>);

impl Bits {
    /// An RDNA stream of `layout` (3 or 4): its header.
    fn rdna(layout: u64) -> Bits {
        let mut b = Bits(Vec::new());
        b.put(u128::from(0x11 | layout << 7), 64);
        b
    }
    fn put(&mut self, v: u128, n: usize) -> &mut Self {
        for i in 0..n {
            self.0.push(((v >> i) & 1) as u8);
        }
        self
    }
    fn bytes(&self) -> Vec<u8> {
        let mut b = self.0.clone();
        b.resize(b.len().div_ceil(8) * 8, 0);
        b.chunks(8)
            .map(|c| c.iter().enumerate().map(|(i, &x)| x << i).sum())
            .collect()
    }
}

fn put(b: &mut Bits, v: u64, n: usize) {
    b.put(u128::from(v), n);
}

/// WAVE_START of slot 3 (WGP 0, SIMD 0) on `layout`.
fn start(b: &mut Bits, layout: u64) {
    put(b, 0b01100 | 3 << if layout == 3 { 13 } else { 15 }, 32);
}

/// WAVE_END of slot 3 with `delta`.
fn end(b: &mut Bits, delta: u64) {
    put(b, 0b10101 | delta << 5 | 3 << 15, 20);
}

/// A TIME packet advancing `d` (4 to 19) cycles.
fn time(b: &mut Bits, d: u64) {
    put(b, 0b1000 | (d - 4) << 4, 8);
}

fn gen(layout: u64) -> Generation {
    if layout == 3 {
        Generation::Gfx11
    } else {
        Generation::Gfx12
    }
}

/// The one wave of slot 3 (WGP 0, SIMD 0).
fn wave(layout: u64, bytes: &[u8]) -> (u64, u64) {
    let ws = waves(&gpu(gen(layout)), bytes);
    assert_eq!(ws.len(), 1, "{ws:?}");
    assert_eq!((ws[0].cu, ws[0].simd, ws[0].slot), (0, 0, 3));
    (ws[0].start, ws[0].stop)
}

/// Between a start and an end: `packet` of `bits`, whose time field adds `delta`; the stream
/// stays in step when the end is found where it was written.
fn between(layout: u64, packet: u128, bits: usize, delta: u64) {
    let mut b = Bits::rdna(layout);
    start(&mut b, layout);
    time(&mut b, 10);
    b.put(packet, bits);
    end(&mut b, 5);
    assert_eq!(
        wave(layout, &b.bytes()),
        (0, 15 + delta),
        "layout {layout}: packet {packet:#x} of {bits} bits"
    );
}

#[test]
fn packet_sizes_and_deltas() {
    for layout in [3, 4] {
        // ALU_EXEC and VMEM_EXEC: 8 bits, a delta in bits 5:4.
        between(layout, 0x0E | 3 << 4 | 2 << 6, 8, 3);
        between(layout, 0x0F | 2 << 4, 8, 2);
        // VALU_INST: 12 bits, delta 5:3.
        between(layout, 0x03 | 5 << 3, 12, 5);
        // MISC: 24 bits, delta 15:7.
        between(layout, 0x51 | 300 << 7, 24, 300);
        // UTIL_COUNTER: 48 bits, delta 8:7.
        between(layout, 0x31 | 3 << 7 | 0xFFFF << 16, 48, 3);
        // EVENT and EVENT_SYNC: delta 10:8.
        between(layout, 0x61 | 6 << 8, 24, 6);
        between(layout, 0xE1 | 7 << 8, 32, 7);
        // REG: 64 bits, delta 6:4; REG_INIT: 64 bits, delta 9:7.
        between(layout, 0x09 | 7 << 4 | 0xFFFF_FFFF << 32, 64, 7);
        between(layout, 0x71 | 5 << 7, 64, 5);
    }
    // INST: 20 bits, delta 6:4 on layout 3, 5:3 on layout 4.
    between(3, 0x02 | 5 << 4, 20, 5);
    between(4, 0x02 | 5 << 3, 20, 5);
    // NEW_PC: 64 bits on GFX11, 72 on GFX12; delta 10:8.
    between(3, 0x21 | 6 << 8 | 0xFF_FFFF << 40, 64, 6);
    between(4, 0x21 | 6 << 8 | 0xFF_FFFF << 48, 72, 6);
    // WAVE_ALLOC: 20 bits on layout 3, 24 on layout 4.
    between(3, 0x05 | 4 << 5, 20, 4);
    between(4, 0x05 | 4 << 5, 24, 4);
    // GFX12 only: EXEC_POPCOUNT1 (0x66, 24 bits, delta 9:7), EXEC_POPCOUNT3 (0x16/0x56, 48
    // bits, delta 8:6).
    between(4, 0x66 | 1 << 7 | 1 << 9, 24, 5);
    between(4, 0x16 | 1 << 8 | 0xFF << 40, 48, 4);
    between(4, 0x56, 48, 1);
}

#[test]
fn timestamps_add_their_field_unless_realtime() {
    for layout in [3u64, 4] {
        let (bits, rt) = if layout == 3 { (48, 9) } else { (64, 7) };
        for (rt_set, pl_set, adds) in [
            (0u64, 0u64, true),
            (0, 1, true),
            (1, 0, false),
            (1, 1, false),
        ] {
            let packet = 0x01 | rt_set << rt | pl_set << 8 | 1000 << 12;
            between(
                layout,
                u128::from(packet),
                bits,
                if adds { 1000 } else { 0 },
            );
        }
    }
}

#[test]
fn wave_start_ext_and_its_extensions() {
    // GFX11: 48 bits, a wave start.
    let mut b = Bits::rdna(3);
    put(&mut b, 0b11100 | 1 << 5 | 3 << 13, 48);
    time(&mut b, 10);
    end(&mut b, 0);
    assert_eq!(wave(3, &b.bytes()), (1, 11));
    // GFX12: 40 bits, then 8-bit extensions while bit 0 is 1 (NOPs between them kept).
    for (exts, nops) in [(0, 0), (1, 0), (2, 0), (2, 1)] {
        let mut b = Bits::rdna(4);
        put(&mut b, 0b11100 | 1 << 5 | 3 << 15, 40);
        for _ in 0..exts {
            for _ in 0..nops {
                put(&mut b, 0, 4);
            }
            put(&mut b, 0xA5, 8);
        }
        time(&mut b, 10);
        end(&mut b, 0);
        assert_eq!(wave(4, &b.bytes()), (1, 11), "{exts} extensions");
    }
    // A TIMESTAMP right after it (bit 0 set) is taken as an extension, as AMD takes it.
    let mut b = Bits::rdna(4);
    put(&mut b, 0b11100 | 3 << 15, 40);
    put(&mut b, 0x01 | 100 << 12, 64);
    let (_, time) = decode_summary(4, &b.bytes());
    assert_ne!(time, 100, "the stamp was read whole");
}

fn decode_summary(layout: u64, bytes: &[u8]) -> (u64, u64) {
    struct Nothing;
    impl Sink for Nothing {}
    let s = decode(gen(layout), bytes, &mut Nothing);
    (s.packets, s.time)
}

#[test]
fn context_save_and_restore() {
    for layout in [3, 4] {
        let slot_at = if layout == 3 { 13 } else { 15 };
        let mut b = Bits::rdna(layout);
        start(&mut b, layout);
        time(&mut b, 10);
        // count 66: a context save ends the wave; 68: a restore starts it again.
        put(&mut b, 0b01100 | 3 << slot_at | 66 << 25, 32);
        time(&mut b, 10);
        put(&mut b, 0b01100 | 3 << slot_at | 68 << 25, 32);
        time(&mut b, 10);
        // count 80: neither.
        put(&mut b, 0b01100 | 3 << slot_at | 80 << 25, 32);
        end(&mut b, 5);
        let ws = waves(&gpu(gen(layout)), &b.bytes());
        let times: Vec<(u64, u64)> = ws.iter().map(|w| (w.start, w.stop)).collect();
        assert_eq!(times, vec![(0, 10), (20, 35)], "layout {layout}");
    }
}

fn record(time: u64, value: u32, cu: u8, simd: u8, wave: u8, flags: u8) -> ShaderData {
    ShaderData {
        time,
        value,
        cu,
        simd,
        wave,
        flags,
    }
}

#[test]
fn gfx11_shader_data() {
    // 0b00110 (52 bits) / 0b10110 (28): delta 7:5, sa 8, simd 10:9, wgp 13:11, exec 14,
    // wave 19:15, value 51:20 (27:20).
    let sd = |code: u64, d: u64, exec: u64, value: u64| {
        code | d << 5 | 1 << 8 | 2 << 9 | 5 << 11 | exec << 14 | 17 << 15 | value << 20
    };
    let mut b = Bits::rdna(3);
    put(&mut b, sd(0b00110, 3, 0, 0xDEAD_BEEF), 52);
    put(&mut b, sd(0b00110, 1, 1, 0x1234_5678), 52);
    put(&mut b, sd(0b10110, 2, 0, 0xAB), 28);
    put(&mut b, sd(0b10110, 1, 1, 0xCD), 28);
    start(&mut b, 3);
    end(&mut b, 1);
    let bytes = b.bytes();
    let (records, summary) = shader_data(Generation::Gfx11, &bytes);
    assert_eq!(
        records,
        vec![
            record(3, 0xDEAD_BEEF, 5 + 128, 2, 17, 0),
            record(6, 0xAB, 5 + 128, 2, 17, SHADER_DATA_IMM),
        ]
    );
    assert_eq!(summary.stop, None);
    assert_eq!(wave(3, &bytes), (7, 8));
}

#[test]
fn gfx12_shader_data() {
    // 0x06 (56 bits) / 0x46 (32): delta 9:7, sa 10, simd 12:11, wgp 16:13, wave 21:17,
    // value 53:22 (29:22), sdt 55:54 (31:30).
    let sd = |code: u64, d: u64, value: u64, sdt: u64, short: bool| {
        code | d << 7
            | 1 << 10
            | 3 << 11
            | 9 << 13
            | 21 << 17
            | value << 22
            | sdt << if short { 30 } else { 54 }
    };
    let mut b = Bits::rdna(4);
    put(&mut b, sd(0x06, 5, 0xCAFE_BABE, 0, false), 56);
    put(&mut b, sd(0x06, 1, 0x0BAD_F00D, 2, false), 56);
    put(&mut b, sd(0x46, 2, 0xCD, 1, true), 32);
    put(&mut b, sd(0x46, 0, 0x7F, 0, true), 32);
    // 0x26 and 0x36: RDNA 3's sizes (52, 28 bits) and delta field (7:5, which holds code bit
    // 5), GFX12's fields; the NOP after each keeps the bits read past them 0.
    put(
        &mut b,
        0x26 | 1 << 10 | 3 << 11 | 9 << 13 | 21 << 17 | 0x1234 << 22,
        52,
    );
    put(&mut b, 0, 4);
    put(
        &mut b,
        0x36 | 1 << 7 | 3 << 11 | 2 << 13 | 4 << 17 | 0x2A << 22,
        28,
    );
    put(&mut b, 0, 4);
    start(&mut b, 4);
    end(&mut b, 2);
    let bytes = b.bytes();
    let (records, summary) = shader_data(Generation::Gfx12, &bytes);
    let cu = 9 + 128;
    assert_eq!(
        records,
        vec![
            record(5, 0xCAFE_BABE, cu, 3, 21, 0),
            record(6, 0x0BAD_F00D, cu, 3, 21, SHADER_DATA_PRIV),
            record(8, 0xCD, cu, 3, 21, SHADER_DATA_IMM | SHADER_DATA_PRIV),
            record(8, 0x7F, cu, 3, 21, SHADER_DATA_IMM),
            record(9, 0x1234, cu, 3, 21, 0),
            record(14, 0x2A, 2, 3, 4, SHADER_DATA_IMM),
        ]
    );
    assert_eq!(summary.stop, None);
    // What follows the imm packets is read in step: the wave.
    assert_eq!(wave(4, &bytes), (14, 16));
}

/// CDNA words, and rocprofv3's 8-byte header.
struct Words(Vec<u16>);

impl Words {
    fn new() -> Words {
        let h: u64 = 0x11 | 6 << 13 | 0xF << 16;
        Words((0..4).map(|i| (h >> (16 * i)) as u16).collect())
    }
    fn put(&mut self, v: u64, words: usize) -> &mut Self {
        self.0.extend((0..words).map(|i| (v >> (16 * i)) as u16));
        self
    }
    /// MISC of `delta` 4-cycle units (and `misc_type`).
    fn misc(&mut self, delta: u64, misc_type: u64) -> &mut Self {
        self.put(delta << 4 | misc_type << 13, 1)
    }
    fn wave(&mut self, ty: u64, slot: u64, cu: u64, sh: u64) -> &mut Self {
        self.put(
            ty | sh << 5 | cu << 6 | slot << 10,
            if ty == 3 { 2 } else { 1 },
        )
    }
    fn stamp(&mut self, absolute: u64) -> &mut Self {
        self.put(1 | absolute << 16, 4)
    }
    fn bytes(&self) -> Vec<u8> {
        self.0.iter().flat_map(|w| w.to_le_bytes()).collect()
    }
}

fn gfx9_waves(w: &Words) -> Vec<(u32, u64, u64)> {
    waves(&gpu(Generation::Gfx9), &w.bytes())
        .iter()
        .map(|w: &Wave| (w.slot, w.start, w.stop))
        .collect()
}

#[test]
fn gfx9_time_reset_applies_from_the_reset_on() {
    let mut w = Words::new();
    w.misc(100, 0).wave(3, 1, 0, 0); // wave 1 starts at 400
    w.misc(5, 1); // TIME_RESET at 420
    w.wave(3, 2, 0, 0).misc(10, 0).stamp(5000); // wave 2 starts before the stamp
    w.wave(6, 2, 0, 0).misc(10, 0).wave(6, 1, 0, 0);
    // The first reset: the time becomes (420 - 4) & !3 = 416, from the reset on.
    assert_eq!(gfx9_waves(&w), vec![(2, 416, 456), (1, 400, 496)]);
    // A second reset takes the next stamp's distance from the first: 9000 - (5000 - 416) = 4416.
    w.misc(5, 1)
        .wave(3, 3, 0, 0)
        .misc(10, 0)
        .stamp(9000)
        .wave(6, 3, 0, 0);
    assert_eq!(gfx9_waves(&w).last(), Some(&(3, 4416, 4456)));
    // A stamp behind the offset changes nothing; a reset before any stamp is dropped whole.
    let mut w = Words::new();
    w.misc(100, 0).misc(5, 1).stamp(5000).misc(10, 0);
    w.misc(5, 1)
        .wave(3, 4, 0, 0)
        .misc(3, 1)
        .misc(10, 0)
        .wave(6, 4, 0, 0);
    assert_eq!(gfx9_waves(&w), vec![(4, 476, 516)]);
    // A TIMESTAMP counts its delta bit like any token, and is no anchor without a reset.
    let mut w = Words::new();
    w.wave(3, 5, 0, 0)
        .put(1 | 1 << 4 | 777 << 16, 4)
        .wave(6, 5, 0, 0);
    assert_eq!(gfx9_waves(&w), vec![(5, 0, 4)]);
}

#[test]
fn gfx9_slots_and_records() {
    let mut w = Words::new();
    // A start in the other shader array of a running slot is no new wave.
    w.wave(3, 2, 5, 1)
        .misc(10, 0)
        .wave(3, 2, 5, 0)
        .misc(10, 0)
        .wave(6, 2, 5, 0);
    // An end of a slot that is not running is none.
    w.wave(6, 7, 5, 0);
    // User data: delta bit 4, sh 5, cu 9:6, wave 13:10, simd 15:14, value 47:16.
    w.put(
        12 | 1 << 4 | 1 << 5 | 11 << 6 | 9 << 10 | 3 << 14 | 0xFEED_F00D << 16,
        3,
    );
    let bytes = w.bytes();
    assert_eq!(
        waves(&gpu(Generation::Gfx9), &bytes),
        vec![Wave {
            cu: 5 | 16,
            simd: 0,
            slot: 2,
            start: 0,
            stop: 80
        }]
    );
    let (records, summary) = shader_data(Generation::Gfx9, &bytes);
    assert_eq!(records, vec![record(84, 0xFEED_F00D, 11, 3, 9, 0)]);
    assert_eq!(summary.stop, None);
}

#[test]
fn cut_and_corrupt_streams_stop_where_they_go_wrong() {
    // A cut: the records of the whole packets, and the byte where the cut packet starts.
    let mut b = Bits::rdna(4);
    put(&mut b, 0x46 | 0x11 << 22, 32);
    put(&mut b, 0x06 | 0x2222 << 22, 56);
    let bytes = b.bytes();
    let cut = &bytes[..bytes.len() - 2];
    let (records, s) = shader_data(Generation::Gfx12, cut);
    assert_eq!(records.len(), 1);
    let stop = s.stop.expect("a stop");
    assert_eq!((stop.offset, stop.reason), (12, StopReason::Cut));
    // An unknown packet: layout 3 has no type of low nibble 0b0111.
    let mut b = Bits::rdna(3);
    put(&mut b, 0x16 | 0x22 << 20, 28);
    put(&mut b, 0x07, 8);
    put(&mut b, 0x16 | 0x33 << 20, 28);
    let (records, s) = shader_data(Generation::Gfx11, &b.bytes());
    assert_eq!(records.len(), 1);
    let stop = s.stop.expect("a stop");
    assert_eq!(stop.reason, StopReason::Unknown { code: 0x07 });
    assert_eq!(stop.offset, 11);
    assert!(stop.to_string().contains("byte 11"), "{stop}");
    // GFX9: a wave slot above 9.
    let mut w = Words::new();
    w.put(12 | 0x55 << 16, 3)
        .wave(3, 12, 0, 0)
        .put(12 | 0x66 << 16, 3);
    let (records, s) = shader_data(Generation::Gfx9, &w.bytes());
    assert_eq!(records.len(), 1);
    let stop = s.stop.expect("a stop");
    assert_eq!(
        (stop.offset, stop.reason),
        (14, StopReason::BadSlot { slot: 12 })
    );
}

/// GFX9's target CU (AMD's decoder follows its waves slot by slot): only a wave it holds ends,
/// a start with a count above 64 is none, and a wave held across a context save ends only once
/// restored. The waves AMD's decoder made of each stream (`support/target_cu.rs`).
#[test]
fn gfx9_target_cu_waves_end_as_amd_s_decoder_ends_them() {
    for case in target_cu::CASES {
        let bytes = target_cu::bytes(case);
        let mut ours: Vec<target_cu::AmdWave> = waves(&gpu(Generation::Gfx9), &bytes)
            .iter()
            .map(|w| {
                (
                    amd_cu(Generation::Gfx9, w.cu),
                    w.simd as u8,
                    w.slot as u8,
                    w.start,
                    w.stop,
                )
            })
            .collect();
        ours.sort();
        let mut want = case.waves.to_vec();
        want.sort();
        assert_eq!(ours, want, "{}", case.name);
    }
}
