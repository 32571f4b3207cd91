//! An encoder of synthetic trace streams, for tests, fuzzing and benchmarks: it writes the
//! packets a list of events makes, in the layout of each generation, and records what the
//! decoders must find in them (the waves as README.md's pairing rules give them, and the markers).

use std::collections::HashMap;

use crate::decode::{PLAIN, RDNA3, RDNA4, TABLES3, TABLES4};
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

/// A stream under construction.
#[derive(Debug, Clone)]
pub struct Encoder {
    generation: Generation,
    /// RDNA: nibbles; CDNA: 16-bit words.
    units: Vec<u16>,
    time: u64,
    pending: u64,
    open: HashMap<(u32, u32, u32), u64>,
    /// The waves, in the order they end.
    pub waves: Vec<Expected>,
    /// The realtime markers.
    pub markers: Vec<Marker>,
}

impl Encoder {
    /// A stream of `generation`, with its header on RDNA. Only the generations the decoders
    /// read ([`crate::decode::decodes`]: GFX9, GFX11, GFX12) have streams; a `_` arm below is
    /// GFX9's or GFX12's, as it says.
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
            waves: Vec::new(),
            markers: Vec::new(),
        };
        if let Some(layout) = crate::decode::layout(generation) {
            e.put(0x11 | (u128::from(layout) << 7), 16);
        }
        e
    }

    fn unit_bits(&self) -> usize {
        if self.generation == Generation::Gfx9 {
            16
        } else {
            4
        }
    }

    /// Cycles per delta unit: 4 on CDNA, 1 on RDNA.
    pub fn scale(&self) -> u64 {
        if self.generation == Generation::Gfx9 {
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
        match self.generation {
            Generation::Gfx9 => {
                let mut units = d / 4;
                while units > 0 {
                    let k = units.min(255);
                    self.put(u128::from(k << 4), 1); // MISC
                    units -= k;
                }
            }
            _ => {
                if (4..=19).contains(&d) {
                    self.put(0b1000 | (u128::from(d - 4) << 4), 2);
                } else if d > 0 {
                    let units = if self.generation == Generation::Gfx11 {
                        12
                    } else {
                        16
                    };
                    let max = if units == 12 {
                        (1u64 << 36) - 1
                    } else {
                        (1u64 << 52) - 1
                    };
                    let mut left = d;
                    while left > 0 {
                        let k = left.min(max);
                        self.put(0x01 | (u128::from(k) << 12), units);
                        left -= k;
                    }
                }
            }
        }
    }

    fn cu(&self, s: Slot) -> u32 {
        match self.generation {
            Generation::Gfx11 => s.wgp | (s.sa << 3),
            _ => s.wgp | (s.sa << 4), // GFX9 and GFX12
        }
    }

    /// The delta a wave packet carries: what has passed if `inline` and it fits its field.
    fn inline_delta(&mut self, inline: bool, max_units: u64) -> u64 {
        let scale = self.scale();
        if inline && self.pending.is_multiple_of(scale) && self.pending / scale <= max_units {
            std::mem::take(&mut self.pending) / scale
        } else {
            self.flush();
            0
        }
    }

    /// A wave starts in `s`; with `inline`, the time since the last packet rides in its delta
    /// field when it fits.
    pub fn start(&mut self, s: Slot, inline: bool) {
        match self.generation {
            Generation::Gfx9 => {
                let d = self.inline_delta(inline, 1);
                let w = 3 | (d << 4) | (u64::from(s.sa & 1) << 5) | (u64::from(s.wgp & 0xF) << 6);
                let w = w | (u64::from(s.slot & 0xF) << 10) | (u64::from(s.simd & 3) << 14);
                self.put(u128::from(w), 2);
            }
            g => {
                let d = self.inline_delta(inline, 3);
                let (wgp_mask, slot_at) = if g == Generation::Gfx11 {
                    (7, 13)
                } else {
                    (0xF, 15)
                };
                let w =
                    0b01100 | (d << 5) | (u64::from(s.sa & 1) << 7) | (u64::from(s.simd & 3) << 8);
                let w =
                    w | (u64::from(s.wgp & wgp_mask) << 10) | (u64::from(s.slot & 0x1F) << slot_at);
                self.put(u128::from(w), 8);
            }
        }
        let key = (self.cu(s), s.simd, s.slot);
        self.open.insert(key, self.time);
    }

    /// A wave of `s` ends.
    pub fn end(&mut self, s: Slot, inline: bool) {
        match self.generation {
            Generation::Gfx9 => {
                let d = self.inline_delta(inline, 1);
                let w = 6 | (d << 4) | (u64::from(s.sa & 1) << 5) | (u64::from(s.wgp & 0xF) << 6);
                let w = w | (u64::from(s.slot & 0xF) << 10) | (u64::from(s.simd & 3) << 14);
                self.put(u128::from(w), 1);
            }
            g => {
                let d = self.inline_delta(inline, 7);
                let wgp_mask = if g == Generation::Gfx11 { 7 } else { 0xF };
                let w =
                    0b10101 | (d << 5) | (u64::from(s.sa & 1) << 8) | (u64::from(s.simd & 3) << 9);
                let w = w | (u64::from(s.wgp & wgp_mask) << 11) | (u64::from(s.slot & 0x1F) << 15);
                self.put(u128::from(w), 5);
            }
        }
        let key = (self.cu(s), s.simd, s.slot);
        if let Some(start) = self.open.remove(&key) {
            let wave = Wave {
                cu: key.0,
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

    /// A realtime marker reading `realtime` (RDNA; nothing on CDNA, which has none).
    pub fn marker(&mut self, realtime: u64) {
        match self.generation {
            Generation::Gfx11 => {
                self.flush();
                let v = realtime & ((1 << 36) - 1);
                self.put(0x01 | (1 << 9) | (u128::from(v) << 12), 12);
                self.markers.push(Marker {
                    time: self.time,
                    realtime: v,
                });
            }
            Generation::Gfx12 => {
                self.flush();
                let v = realtime & ((1 << 52) - 1);
                self.put(0x01 | (1 << 7) | (u128::from(v) << 12), 16);
                self.markers.push(Marker {
                    time: self.time,
                    realtime: v,
                });
            }
            _ => {} // GFX9
        }
    }

    /// A packet of no time: NOP on RDNA, MISC of delta 0 on CDNA.
    pub fn nop(&mut self) {
        self.put(0, 1);
    }

    /// A packet that is neither a wave's nor a time's, of the type picked by `pick` among the
    /// plain ones, with `payload` in its bits outside its code and delta field (CDNA: an
    /// instruction, issue, user-data or register token).
    pub fn other(&mut self, pick: usize, payload: u128) {
        match self.generation {
            Generation::Gfx9 => {
                const TYPES: [(u16, usize); 6] =
                    [(10, 1), (13, 2), (12, 3), (2, 4), (5, 3), (14, 4)];
                let (ty, words) = TYPES[pick % TYPES.len()];
                // Bits 3:0 the type, bit 4 the delta: both kept.
                let v = (payload << 5) | u128::from(ty);
                self.put(v & ((1u128 << (16 * words)) - 1), words);
            }
            g => {
                let (kinds, tables) = if g == Generation::Gfx11 {
                    (&RDNA3, &TABLES3)
                } else {
                    (&RDNA4, &TABLES4)
                };
                let plain: Vec<usize> = (0..kinds.len())
                    .filter(|&i| kinds[i].special == PLAIN && kinds[i].add == 0)
                    .collect();
                let i = plain[pick % plain.len()];
                let kd = kinds[i];
                let bits = u32::from(kd.bits);
                let keep = |lo: u32, width: u32| -> u128 { ((1u128 << width) - 1) << lo };
                let mut v = payload & ((1u128 << bits) - 1);
                v &= !keep(0, u32::from(kd.code_bits));
                v &= !keep(u32::from(kd.delta_lo), u32::from(kd.delta_width));
                v |= u128::from(kd.code);
                if tables.kind_of[(v & 0xFF) as usize] as usize != i {
                    // Its payload made a more specific code: clear the low byte's payload.
                    v &= !0xFF;
                    v |= u128::from(kd.code);
                }
                self.put(v, bits as usize / 4);
            }
        }
    }

    /// The stream's bytes (a last odd nibble padded with 0, which is a NOP).
    pub fn bytes(&self) -> Vec<u8> {
        match self.generation {
            Generation::Gfx9 => self.units.iter().flat_map(|w| w.to_le_bytes()).collect(),
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
}
