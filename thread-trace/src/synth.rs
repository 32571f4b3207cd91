//! An encoder of synthetic trace streams, for tests, fuzzing and benchmarks: it writes the
//! packets a list of events makes, in the layout of each generation, and records what the
//! decoders must find in them: the waves as README.md's pairing rules give them, the realtime
//! markers, and the shader-data records as AMD's decoder reports them. Beside waves and time it
//! writes instruction packets of every type, both shader-data forms with their exec and `sdt`
//! variants, WAVE_START_EXT with its extensions, context save and restore, TIMESTAMPs of every
//! kind and, on GFX9, the stream header and time resets.

use std::collections::HashMap;

use crate::decode::{
    Kind, ShaderData, CDNA_WORDS, PLAIN, SHADER_DATA_IMM, SHADER_DATA_PRIV, TABLES3, TABLES4,
};
use crate::gpu::Generation;
use crate::waves::{Marker, Wave};

/// A wave slot as the packets name it: shader array, WGP (CU on GFX9), SIMD and slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Slot {
    pub sa: u32,
    pub wgp: u32,
    pub simd: u32,
    pub slot: u32,
}

/// A wave the stream holds, and the bit where its end's packet ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expected {
    pub wave: Wave,
    pub end_bit: usize,
}

/// A shader-data record the stream holds, and the bit where its packet ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpectedRecord {
    pub record: ShaderData,
    pub end_bit: usize,
}

/// The form of a shader-data packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `s_ttracedata`: the 32-bit value of M0.
    Full,
    /// `s_ttracedata_imm`: an 8-bit immediate.
    Imm,
}

/// The 8-byte header rocprofv3 puts before a GFX9 trace: legacy version 0x11, version 6
/// (MI350), every SIMD, target CU 0.
pub const GFX9_HEADER: u64 = 0x11 | 6 << 13 | 0xF << 16;

/// A stream under construction.
#[derive(Debug, Clone)]
pub struct Encoder {
    generation: Generation,
    /// RDNA: nibbles; CDNA: 16-bit words.
    units: Vec<u16>,
    time: u64,
    pending: u64,
    /// RDNA: the Rig-style key's start time; GFX9: AMD's key (no shader array) to the start
    /// time and the shader array.
    open: HashMap<(u32, u32, u32), (u64, u32)>,
    /// Layout 4: a WAVE_START_EXT was the last packet but NOPs, so a packet whose bit 0 is 1
    /// would be read as its extension.
    ext_open: bool,
    /// GFX9: the offset the first time reset set, and the TIMESTAMP a reset still owes.
    base: i64,
    owed_stamp: Option<u64>,
    /// GFX9: where each time reset starts and where its TIMESTAMP ends (`usize::MAX` while it
    /// is owed), in bits.
    resets: Vec<(usize, usize)>,
    /// RDNA: the plain packet types [`Encoder::other`] picks from, each with a low byte of its
    /// own.
    plain: Vec<(u8, Kind)>,
    /// GFX9: the target CU of the header (none without it), and the slots of it (bit
    /// `simd * 10 + slot`, shader array 0) where AMD's decoder holds a wave: on that CU only a
    /// held wave ends (`decode::Target`).
    target: Option<u32>,
    held: u64,
    /// The waves, in the order they end.
    pub waves: Vec<Expected>,
    /// The realtime markers.
    pub markers: Vec<Marker>,
    /// The shader-data records, in stream order.
    pub records: Vec<ExpectedRecord>,
}

impl Encoder {
    /// A stream of `generation`: with its header on RDNA, and rocprofv3's 8-byte header on GFX9.
    /// Only the generations the decoders read ([`crate::decode::decodes`]: GFX9, GFX11, GFX12)
    /// have streams; a `_` arm below is GFX9's or GFX12's, as it says.
    pub fn new(generation: Generation) -> Self {
        assert!(
            crate::decode::decodes(generation),
            "no trace stream of {generation} is known"
        );
        let mut e = Encoder {
            generation,
            units: Vec::new(),
            time: 0,
            pending: 0,
            open: HashMap::new(),
            ext_open: false,
            base: 0,
            owed_stamp: None,
            resets: Vec::new(),
            plain: Vec::new(),
            target: (generation == Generation::Gfx9).then_some(((GFX9_HEADER >> 20) & 0x1F) as u32),
            held: 0,
            waves: Vec::new(),
            markers: Vec::new(),
            records: Vec::new(),
        };
        match crate::decode::layout(generation) {
            Some(layout) => e.put(0x11 | (u128::from(layout) << 7), 16),
            None => e.put(u128::from(GFX9_HEADER), 4),
        }
        if generation != Generation::Gfx9 {
            let tables = if e.layout4() { &TABLES4 } else { &TABLES3 };
            for (b, kd) in tables.kind_of.iter().enumerate() {
                if let Some(kd) = kd {
                    if kd.special == PLAIN && !e.plain.iter().any(|(_, k)| k.name == kd.name) {
                        e.plain.push((b as u8, *kd));
                    }
                }
            }
        }
        e
    }

    /// A GFX9 stream without rocprofv3's header (as the hardware writes it).
    pub fn bare_gfx9() -> Self {
        let mut e = Encoder::new(Generation::Gfx9);
        e.units.clear();
        e.target = None;
        e
    }

    fn gfx9(&self) -> bool {
        self.generation == Generation::Gfx9
    }

    fn layout4(&self) -> bool {
        self.generation == Generation::Gfx12
    }

    fn unit_bits(&self) -> usize {
        if self.gfx9() {
            16
        } else {
            4
        }
    }

    /// Cycles per delta unit: 4 on CDNA, 1 on RDNA.
    pub fn scale(&self) -> u64 {
        if self.gfx9() {
            4
        } else {
            1
        }
    }

    fn put(&mut self, v: u128, units: usize) {
        let bits = self.unit_bits();
        for i in 0..units {
            self.units
                .push(((v >> (i * bits)) & ((1 << bits) - 1)) as u16);
        }
    }

    /// An RDNA packet of `nibbles`, after a spacer when it would be read as a WAVE_START_EXT's
    /// extension (an INST packet of no time, whose bit 0 is 0).
    fn packet(&mut self, v: u128, nibbles: usize) {
        if self.ext_open && v & 1 == 1 {
            self.put(0b010, 5);
        }
        self.ext_open = false;
        self.put(v, nibbles);
    }

    /// The bits written so far.
    pub fn bit_len(&self) -> usize {
        self.units.len() * self.unit_bits()
    }

    /// The time after the events so far.
    pub fn time(&self) -> u64 {
        self.time
    }

    /// `n` delta units (cycles on RDNA, 4 cycles on CDNA) pass.
    pub fn gap(&mut self, n: u64) {
        let c = n * self.scale();
        self.time += c;
        self.pending += c;
    }

    /// Writes the time that has passed in packets of its own.
    pub fn flush(&mut self) {
        let d = std::mem::take(&mut self.pending);
        if self.gfx9() {
            let mut units = d / 4;
            while units > 0 {
                let k = units.min(255);
                self.put(u128::from(k << 4), 1); // MISC
                units -= k;
            }
        } else if (4..=19).contains(&d) {
            self.packet(0b1000 | (u128::from(d - 4) << 4), 2);
        } else if d > 0 {
            let (units, max) = if self.layout4() {
                (16, (1u64 << 52) - 1)
            } else {
                (12, (1u64 << 36) - 1)
            };
            let mut left = d;
            while left > 0 {
                let k = left.min(max);
                self.packet(0x01 | (u128::from(k) << 12), units);
                left -= k;
            }
        }
    }

    /// The delta a packet carries: what has passed if `inline` and it fits its field.
    fn inline_delta(&mut self, inline: bool, max_units: u64) -> u64 {
        let scale = self.scale();
        if inline && self.pending.is_multiple_of(scale) && self.pending / scale <= max_units {
            std::mem::take(&mut self.pending) / scale
        } else {
            self.flush();
            0
        }
    }

    /// The Rig-style compute unit of a slot ([`Wave::cu`]).
    fn cu(&self, s: Slot) -> u32 {
        match self.generation {
            Generation::Gfx11 => s.wgp | (s.sa << 3),
            _ => s.wgp | (s.sa << 4), // GFX9 and GFX12
        }
    }

    /// AMD's compute unit of a slot ([`ShaderData::cu`]).
    fn amd_cu(&self, s: Slot) -> u8 {
        if self.gfx9() {
            (s.wgp & 0xF) as u8
        } else {
            (s.wgp + (s.sa << 7)) as u8
        }
    }

    /// GFX9: the slot index (`simd * 10 + slot`) of `s` when it is on the target CU, shader
    /// array 0.
    fn target_slot(&self, s: Slot) -> Option<u32> {
        (self.target == Some(s.wgp & 0xF) && s.sa & 1 == 0)
            .then_some((s.simd & 3) * 10 + s.slot % 10)
    }

    fn gfx9_fields(s: Slot) -> u64 {
        (u64::from(s.sa & 1) << 5)
            | (u64::from(s.wgp & 0xF) << 6)
            | (u64::from(s.slot % 10) << 10)
            | (u64::from(s.simd & 3) << 14)
    }

    /// A wave starts in `s`; with `inline`, the time since the last packet rides in its delta
    /// field when it fits. GFX9 slots are taken modulo 10 (its SIMDs have 10).
    pub fn start(&mut self, s: Slot, inline: bool) {
        self.start_with(s, inline, 0, None);
    }

    /// A wave starts with a WAVE_START_EXT: on GFX12 (40 bits) followed by `extensions` 8-bit
    /// extensions (`nops` NOPs before each), on GFX11 the 48-bit packet; on GFX9 a plain start.
    pub fn start_ext(&mut self, s: Slot, inline: bool, extensions: usize, nops: usize) {
        self.start_with(s, inline, 0, Some((extensions, nops)));
    }

    /// A context save (`save`) or restore of the wave in `s`: a WAVE_START whose count is 66
    /// or 68, which AMD's decoder reads as the wave's end or its start again (RDNA only).
    pub fn context(&mut self, s: Slot, save: bool) {
        assert!(!self.gfx9(), "context packets are RDNA's");
        self.start_with(s, true, if save { 66 } else { 68 }, None);
    }

    fn start_with(&mut self, s: Slot, inline: bool, count: u64, ext: Option<(usize, usize)>) {
        let s = Slot {
            slot: if self.gfx9() { s.slot % 10 } else { s.slot },
            ..s
        };
        if self.gfx9() {
            let d = self.inline_delta(inline, 1);
            self.put(u128::from(3 | (d << 4) | Self::gfx9_fields(s)), 2);
            if let Some(b) = self.target_slot(s) {
                self.held |= 1 << b;
            }
            let key = (s.wgp & 0xF, s.simd, s.slot);
            // AMD's decoder: a start on a running slot is no new wave.
            self.open.entry(key).or_insert((self.time, s.sa & 1));
            return;
        }
        let d = self.inline_delta(inline, 3);
        let layout4 = self.layout4();
        let (wgp_mask, slot_at) = if layout4 { (0xF, 15) } else { (7, 13) };
        let code: u64 = if ext.is_some() { 0b11100 } else { 0b01100 };
        let v = code | (d << 5) | (u64::from(s.sa & 1) << 7) | (u64::from(s.simd & 3) << 8);
        let v = v | (u64::from(s.wgp & wgp_mask) << 10) | (u64::from(s.slot & 0x1F) << slot_at);
        let v = v | (count << 25);
        match ext {
            Some((extensions, nops)) if layout4 => {
                self.packet(u128::from(v), 10);
                for i in 0..extensions {
                    for _ in 0..nops {
                        self.put(0, 1);
                    }
                    self.put(0x01 | ((i as u128 * 0x5A) & 0xFE), 2);
                }
                self.ext_open = true;
            }
            Some(_) => self.packet(u128::from(v), 12),
            None => self.packet(u128::from(v), 8),
        }
        let key = (self.cu(s), s.simd, s.slot);
        match count {
            66 => self.close(key),
            _ => {
                self.open.insert(key, (self.time, 0));
            }
        }
    }

    fn close(&mut self, key: (u32, u32, u32)) {
        if let Some((start, sa)) = self.open.remove(&key) {
            let cu = if self.gfx9() {
                key.0 | (sa << 4)
            } else {
                key.0
            };
            let wave = Wave {
                cu,
                simd: key.1,
                slot: key.2,
                start,
                stop: self.time,
            };
            self.waves.push(Expected {
                wave,
                end_bit: self.bit_len(),
            });
        }
    }

    /// A wave of `s` ends.
    pub fn end(&mut self, s: Slot, inline: bool) {
        if self.gfx9() {
            let s = Slot {
                slot: s.slot % 10,
                ..s
            };
            let d = self.inline_delta(inline, 1);
            self.put(u128::from(6 | (d << 4) | Self::gfx9_fields(s)), 1);
            if let Some(b) = self.target_slot(s) {
                // On the target CU, only a held wave ends.
                if self.held & 1 << b == 0 {
                    return;
                }
                self.held &= !(1 << b);
            }
            self.close((s.wgp & 0xF, s.simd, s.slot));
            return;
        }
        let d = self.inline_delta(inline, 7);
        let wgp_mask = if self.layout4() { 0xF } else { 7 };
        let v = 0b10101 | (d << 5) | (u64::from(s.sa & 1) << 8) | (u64::from(s.simd & 3) << 9);
        let v = v | (u64::from(s.wgp & wgp_mask) << 11) | (u64::from(s.slot & 0x1F) << 15);
        self.packet(u128::from(v), 5);
        self.close((self.cu(s), s.simd, s.slot));
    }

    /// A realtime marker reading `realtime` (RDNA; nothing on CDNA, which has none).
    pub fn marker(&mut self, realtime: u64) {
        if self.gfx9() {
            return;
        }
        self.flush();
        let (v, rt_bit, units) = if self.layout4() {
            (realtime & ((1 << 52) - 1), 7, 16)
        } else {
            (realtime & ((1 << 36) - 1), 9, 12)
        };
        self.packet(0x01 | (1 << rt_bit) | (u128::from(v) << 12), units);
        self.markers.push(Marker {
            time: self.time,
            realtime: v,
        });
    }

    /// A TIMESTAMP that is neither time nor a marker: realtime and PL bits both set (RDNA).
    pub fn stamp_lost(&mut self, field: u64) {
        if self.gfx9() {
            return;
        }
        self.flush();
        let (rt_bit, units, mask) = if self.layout4() {
            (7, 16, (1u64 << 52) - 1)
        } else {
            (9, 12, (1u64 << 36) - 1)
        };
        self.packet(
            0x01 | (1 << rt_bit) | (1 << 8) | (u128::from(field & mask) << 12),
            units,
        );
    }

    /// A shader-data record of wave `s`: `Full` writes `value`, `Imm` its low 8 bits (on GFX9,
    /// which has no immediate form, in a full packet).
    pub fn shader_data(&mut self, s: Slot, value: u32, form: Form, inline: bool) {
        self.shader_data_flags(s, value, form, 0, inline);
    }

    /// [`Encoder::shader_data`] with its flag field set to `flag`: on GFX11 the exec bit (a
    /// record AMD's decoder drops), on GFX12 `sdt` (0 to 3; not 0 is a privileged record);
    /// nothing on GFX9.
    pub fn shader_data_flags(&mut self, s: Slot, value: u32, form: Form, flag: u32, inline: bool) {
        // GFX9 has no s_ttracedata_imm: its records are all of the full form.
        let imm = form == Form::Imm && !self.gfx9();
        let value = if form == Form::Imm {
            value & 0xFF
        } else {
            value
        };
        let mut keep = true;
        let mut flags = u8::from(imm) * SHADER_DATA_IMM;
        match self.generation {
            Generation::Gfx9 => {
                let s = Slot {
                    slot: s.slot % 10,
                    ..s
                };
                let d = self.inline_delta(inline, 1);
                let v = 12 | (d << 4) | Self::gfx9_fields(s) | (u64::from(value) << 16);
                self.put(u128::from(v), 3);
            }
            Generation::Gfx11 => {
                let d = self.inline_delta(inline, 7);
                let code: u64 = if imm { 0b10110 } else { 0b00110 };
                let exec = u64::from(flag & 1);
                keep = exec == 0;
                let v = code
                    | (d << 5)
                    | (u64::from(s.sa & 1) << 8)
                    | (u64::from(s.simd & 3) << 9)
                    | (u64::from(s.wgp & 7) << 11)
                    | (exec << 14)
                    | (u64::from(s.slot & 0x1F) << 15)
                    | (u64::from(value) << 20);
                self.packet(u128::from(v), if imm { 7 } else { 13 });
            }
            _ => {
                let d = self.inline_delta(inline, 7);
                let code: u64 = if imm { 0b1000110 } else { 0b0000110 };
                let sdt = u64::from(flag & 3);
                if sdt != 0 {
                    flags |= SHADER_DATA_PRIV;
                }
                let v = code
                    | (d << 7)
                    | (u64::from(s.sa & 1) << 10)
                    | (u64::from(s.simd & 3) << 11)
                    | (u64::from(s.wgp & 0xF) << 13)
                    | (u64::from(s.slot & 0x1F) << 17)
                    | (u64::from(value) << 22)
                    | (sdt << if imm { 30 } else { 54 });
                self.packet(u128::from(v), if imm { 8 } else { 14 });
            }
        }
        if keep {
            let record = ShaderData {
                time: self.time,
                value,
                cu: self.amd_cu(s),
                simd: (s.simd & 3) as u8,
                wave: (if self.gfx9() {
                    s.slot % 10
                } else {
                    s.slot & 0x1F
                }) as u8,
                flags,
            };
            self.records.push(ExpectedRecord {
                record,
                end_bit: self.bit_len(),
            });
        }
    }

    /// GFX12: a shader-data packet in one of the slots that keep RDNA 3's sizes (`0x26`, 52
    /// bits, or `0x36`, 28 bits), whose fields AMD's decoder still reads in GFX12's layout, past
    /// the packet's end: a NOP follows it, so those bits are 0. Its delta field (bits 7:5)
    /// overlaps its code: it advances the time by 1 plus 4 times bit 7.
    pub fn shader_data_rdna3_code(&mut self, s: Slot, value: u32, form: Form, bit7: bool) {
        assert!(self.layout4(), "the RDNA 3 codes of a layout-4 stream");
        self.flush();
        let imm = form == Form::Imm;
        let code: u64 = if imm { 0x36 } else { 0x26 };
        // Bits 22 and up that the packet holds: 6 (imm) or 30.
        let value = value & if imm { 0x3F } else { 0x3FFF_FFFF };
        let v = code
            | (u64::from(bit7) << 7)
            | (u64::from(s.sa & 1) << 10)
            | (u64::from(s.simd & 3) << 11)
            | (u64::from(s.wgp & 0xF) << 13)
            | (u64::from(s.slot & 0x1F) << 17)
            | (u64::from(value) << 22);
        self.packet(u128::from(v), if imm { 7 } else { 13 });
        let end_bit = self.bit_len();
        self.put(0, 1);
        let delta = 1 + 4 * u64::from(bit7);
        self.time += delta;
        let record = ShaderData {
            time: self.time,
            value,
            cu: self.amd_cu(s),
            simd: (s.simd & 3) as u8,
            wave: (s.slot & 0x1F) as u8,
            flags: u8::from(imm) * SHADER_DATA_IMM,
        };
        self.records.push(ExpectedRecord { record, end_bit });
    }

    /// GFX9: a MISC TIME_RESET, which AMD's decoder resolves with the next TIMESTAMP, written by
    /// [`Encoder::stamp`] (or at the end of the stream): the time is re-anchored from here on.
    /// `absolute` is that TIMESTAMP's value.
    pub fn time_reset(&mut self, absolute: u64) {
        assert!(self.gfx9(), "time resets are GFX9's");
        self.stamp();
        let d = self.inline_delta(true, 255);
        self.resets.push((self.bit_len(), usize::MAX));
        self.put(u128::from((d << 4) | (1 << 13)), 1);
        let stamp = (((absolute & ((1 << 48) - 1)) << 18) as i64) >> 18;
        let now = self.time as i64;
        if self.base == 0 {
            self.base = stamp.wrapping_sub(now).wrapping_add(4);
        }
        if stamp > self.base {
            self.time = (stamp.wrapping_sub(self.base) & !3) as u64;
        }
        self.owed_stamp = Some(absolute);
    }

    /// GFX9: the TIMESTAMP a [`Encoder::time_reset`] owes, if it does (no time of its own).
    pub fn stamp(&mut self) {
        if let Some(a) = self.owed_stamp.take() {
            self.flush();
            self.put(1 | (u128::from(a & ((1 << 48) - 1)) << 16), 4);
            let end = self.bit_len();
            if let Some(r) = self.resets.last_mut() {
                r.1 = end;
            }
        }
    }

    /// Whether the times the encoder recorded hold for the first `n` bytes: not when they cut
    /// a time reset from the TIMESTAMP that resolves it (GFX9).
    pub fn times_hold_within(&self, n: usize) -> bool {
        let owed_end = self.bit_len() + 64;
        self.resets.iter().all(|&(at, stamp)| {
            let stamp = if stamp == usize::MAX { owed_end } else { stamp };
            at >= 8 * n || stamp <= 8 * n
        })
    }

    /// A packet of no time: NOP on RDNA, MISC of delta 0 on CDNA.
    pub fn nop(&mut self) {
        self.put(0, 1);
    }

    /// A packet that is neither a wave's nor a time's nor shader data, of the type picked by
    /// `pick` among the plain ones of the layout (instructions, registers, events, ...), with
    /// `payload` in its bits outside its code and delta field; CDNA: an instruction, issue,
    /// register, event or performance token (slots kept below 10).
    pub fn other(&mut self, pick: usize, payload: u128) {
        if self.gfx9() {
            const TYPES: [u16; 7] = [10, 13, 2, 5, 14, 7, 11];
            let ty = TYPES[pick % TYPES.len()];
            let words = CDNA_WORDS[usize::from(ty)] as usize;
            // Bits 3:0 the type, bit 4 the delta: both kept.
            let mut v = (payload << 5) | u128::from(ty);
            if ty == 10 || ty == 11 {
                let slot = (v >> 5) & 0xF;
                v = (v & !(0xF << 5)) | ((slot % 10) << 5);
            }
            if ty == 10 {
                // An instruction type of a compute wave that AMD's decoder times (a replay,
                // export, halt or reserved type it drops from the wave's instructions, and a
                // later one can then find its issue gone: it rejects the trace).
                const TIMED: [u128; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 12, 13, 14, 15, 16, 17, 18, 28];
                let inst = (v >> 11) & 0x1F;
                v = (v & !(0x1F << 11)) | (TIMED[(inst % 16) as usize] << 11);
                // An instruction of a slot of the target CU holding none makes it hold a wave.
                if self.target.is_some() {
                    self.held |= 1 << (((v >> 9) & 3) * 10 + ((v >> 5) & 0xF));
                }
            }
            self.put(v & ((1u128 << (16 * words)) - 1), words);
            return;
        }
        let tables = if self.layout4() { &TABLES4 } else { &TABLES3 };
        let (low, kd) = self.plain[pick % self.plain.len()];
        let bits = u32::from(kd.bits);
        let keep = |lo: u32, width: u32| -> u128 { ((1u128 << width) - 1) << lo };
        let mut v = payload & ((1u128 << bits) - 1);
        v &= !keep(0, u32::from(kd.code_bits));
        v &= !keep(
            u32::from(kd.delta_lo),
            u32::from(kd.delta_end - kd.delta_lo),
        );
        v |= u128::from(kd.code);
        if tables.kind_of[(v & 0xFF) as usize].map(|k| k.name) != Some(kd.name)
            || tables.kind_of[(v & 0xFF) as usize].map(|k| k.bits) != Some(kd.bits)
        {
            // Its payload made another code: the low byte of a slot of its own.
            v = (v & !0xFF) | u128::from(low);
            v &= !keep(
                u32::from(kd.delta_lo),
                u32::from(kd.delta_end - kd.delta_lo),
            );
        }
        self.packet(v, bits as usize / 4);
    }

    /// The stream's bytes (a last odd nibble padded with 0, which is a NOP; on GFX9 the
    /// TIMESTAMP a time reset still owes at the end).
    pub fn bytes(&self) -> Vec<u8> {
        match self.generation {
            Generation::Gfx9 => {
                let mut out: Vec<u8> = self.units.iter().flat_map(|w| w.to_le_bytes()).collect();
                if let Some(a) = self.owed_stamp {
                    let v = 1u64 | (a & ((1 << 48) - 1)) << 16;
                    out.extend_from_slice(&v.to_le_bytes());
                }
                out
            }
            _ => self
                .units
                .chunks(2)
                .map(|c| (c[0] as u8) | (c.get(1).map_or(0, |&h| h as u8) << 4))
                .collect(),
        }
    }

    /// The waves whose end's packet lies within the first `n` bytes.
    pub fn waves_within(&self, n: usize) -> Vec<Wave> {
        self.waves
            .iter()
            .filter(|x| x.end_bit <= 8 * n)
            .map(|x| x.wave)
            .collect()
    }

    /// The shader-data records whose packet lies within the first `n` bytes.
    pub fn records_within(&self, n: usize) -> Vec<ShaderData> {
        self.records
            .iter()
            .filter(|x| x.end_bit <= 8 * n)
            .map(|x| x.record)
            .collect()
    }

    /// Every shader-data record.
    pub fn all_records(&self) -> Vec<ShaderData> {
        self.records.iter().map(|x| x.record).collect()
    }
}
