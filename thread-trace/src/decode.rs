//! Decoders of the trace streams: RDNA 3 (layout 3) and RDNA 4 (layout 4) nibble packets, and
//! the CDNA (GFX9) 16-bit token stream. They walk whole packets only, keep the trace's time, and
//! report wave starts and ends and realtime markers to a [`Sink`]. They never allocate per
//! packet and never panic, whatever the bytes.
//!
//! # RDNA packets
//! A packet is 1 to 18 nibbles, least significant first; its type is found from its low 8 bits
//! by matching each type's code against them most specific first (the table below, from
//! tinygrad's reading of AMD's decoder, `tinygrad/renderer/amd/sqtt.py`, checked here against
//! the real captures: every capture decodes to its end in whole packets). Every packet but NOP
//! and the layout header carries a delta field that advances the time.
//!
//! # The TIME packet's +4
//! The short time packet (`TS_DELTA_SHORT`, code `0b1000`, 8 bits, delta in bits 7:4) advances
//! the time by its field **plus 4**. Sources disagree; this crate follows the reading that
//! tinygrad reverse-engineered from AMD's rocprof-trace-decoder and whose instruction times its
//! tests check against that decoder's, and it fits the format: deltas below 4 fit the delta
//! fields of the packets themselves (2 or 3 bits), so the time packet exists for the larger
//! ones and a field of 0..15 spans 4..19. The real captures agree: the gfx1201 ones hold runs of
//! TIME packets whose field is 0 (31 of them between two markers of `gemm_run_0/kern0_se0`),
//! which would advance nothing and have no reason to exist if the field were the whole delta;
//! with the +4 that interval comes to 257 cycles, next to the 256-cycle marker intervals of the
//! same trace. The encoder in [`crate::synth`] writes it so.
//!
//! # CDNA tokens
//! 16-bit words, the type in bits 3:0, sizes by type (gc_9_4_3 `SQ_THREAD_TRACE_WORD_*`):
//! MISC carries an 8-bit delta in bits 11:4, every other token but TIMESTAMP a 1-bit delta in
//! bit 4; a delta counts 4 cycles. A TIMESTAMP whose bits 15:4 are 0 holds an absolute time in
//! bits 63:16: the first sets the offset between the absolute and the trace's time, the later
//! ones set the time to `((absolute - offset) & !3) - 4` (tinygrad's rule), but never back.

use crate::gpu::Generation;

/// What a decoder reports.
pub trait Sink {
    /// A wave started at `time`.
    fn wave_start(&mut self, _cu: u32, _simd: u32, _slot: u32, _time: u64) {}
    /// A wave ended at `time`.
    fn wave_end(&mut self, _cu: u32, _simd: u32, _slot: u32, _time: u64) {}
    /// A realtime marker: at shader time `time`, the GPU clock read `realtime`.
    fn marker(&mut self, _time: u64, _realtime: u64) {}
}

/// What a decoder saw of a stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Whole packets (tokens on CDNA) decoded.
    pub packets: u64,
    /// Bytes those packets take, rounded up to a byte; what follows is a cut packet or padding.
    pub consumed: usize,
    /// The layout of the stream's header (3 on RDNA 3, 4 on RDNA 4), if it starts with one.
    pub layout: Option<u8>,
    /// The time after the last packet.
    pub time: u64,
}

// ---------------------------------------------------------------------------------------------
// RDNA

/// What the decoder does with a packet type beyond advancing the time.
pub(crate) const PLAIN: u8 = 0;
const WAVE_START: u8 = 1;
const WAVE_END: u8 = 2;
const TIMESTAMP: u8 = 3;
const HEADER: u8 = 4;

/// One packet type: its code in the low `code_bits` bits, its size, and its delta field.
#[derive(Clone, Copy)]
pub(crate) struct Kind {
    pub(crate) code: u8,
    pub(crate) code_bits: u8,
    pub(crate) bits: u8,
    pub(crate) delta_lo: u8,
    pub(crate) delta_width: u8,
    pub(crate) add: u8,
    pub(crate) special: u8,
}

const fn k(code: u8, code_bits: u8, bits: u8, delta_lo: u8, delta_hi: u8) -> Kind {
    Kind {
        code,
        code_bits,
        bits,
        delta_lo,
        delta_width: if delta_hi >= delta_lo && delta_hi > 0 {
            delta_hi - delta_lo + 1
        } else {
            0
        },
        add: 0,
        special: PLAIN,
    }
}

const fn special(mut kind: Kind, s: u8) -> Kind {
    kind.special = s;
    kind
}

/// The RDNA 3 (layout 3) packet types.
pub(crate) const RDNA3: [Kind; 24] = [
    k(0b011, 3, 12, 3, 5),      // VALU instruction
    k(0b1111, 4, 8, 4, 5),      // VMEM exec
    k(0b1110, 4, 8, 4, 5),      // ALU exec
    k(0b1101, 4, 12, 4, 6),     // immediate (one wave)
    k(0b00100, 5, 24, 5, 7),    // immediate (wave mask)
    k(0b10100, 5, 24, 5, 7),    // wave ready
    k(0b0100001, 7, 72, 8, 10), // new PC / long packet
    special(k(0b10101, 5, 20, 5, 7), WAVE_END),
    special(k(0b01100, 5, 32, 5, 6), WAVE_START),
    k(0b11100, 5, 48, 5, 6),   // wave start ext
    k(0b00101, 5, 20, 5, 7),   // wave alloc
    k(0b00110, 5, 52, 5, 7),   // shader data
    k(0b10110, 5, 28, 5, 7),   // shader data short / perf
    k(0b0110001, 7, 48, 7, 8), // utilization counter
    Kind {
        add: 4,
        ..k(0b1000, 4, 8, 4, 7)
    }, // TIME (TS_DELTA_SHORT): field + 4
    k(0b0000, 4, 4, 0, 0),     // NOP
    k(0b1010001, 7, 24, 7, 15), // misc / wave state
    k(0b01100001, 8, 24, 8, 10), // event
    k(0b11100001, 8, 32, 8, 10), // event sync
    k(0b1001, 4, 64, 4, 6),    // register
    k(0b1110001, 7, 64, 7, 9), // register init / snapshot
    special(k(0b0000001, 7, 48, 12, 47), TIMESTAMP),
    special(k(0b0010001, 7, 64, 0, 0), HEADER),
    k(0b010, 3, 20, 4, 6), // instruction
];

/// The RDNA 4 (layout 4) packet types: RDNA 3's with these sizes and fields changed.
pub(crate) const RDNA4: [Kind; 24] = {
    let mut t = RDNA3;
    t[9] = k(0b11100, 5, 40, 5, 6);
    t[10] = k(0b00101, 5, 24, 5, 7);
    t[11] = k(0b00110, 5, 56, 7, 9);
    t[12] = k(0b10110, 5, 32, 7, 9);
    t[21] = special(k(0b0000001, 7, 64, 12, 63), TIMESTAMP);
    t[23] = k(0b010, 3, 20, 3, 5);
    t
};

/// What the decoder needs of a packet type, by the packet's low byte.
#[derive(Clone, Copy)]
pub(crate) struct Entry {
    mask: u64,
    shift: u8,
    nibbles: u8,
    add: u8,
    special: u8,
}

/// A layout's tables: the kind of each low byte, the decoding entry of each low byte, and its
/// size in nibbles apart (the one field the walk's chain waits for, read at the byte's own
/// offset).
pub(crate) struct Tables {
    pub(crate) kind_of: [u8; 256],
    entry: [Entry; 256],
    nibbles: [u8; 256],
}

const fn tables(kinds: &[Kind; 24]) -> Tables {
    let none = Entry {
        mask: 0,
        shift: 0,
        nibbles: 1,
        add: 0,
        special: PLAIN,
    };
    let mut t = Tables {
        kind_of: [0; 256],
        entry: [none; 256],
        nibbles: [1; 256],
    };
    // Most specific code first: for each byte, the matching kind with the most code bits
    // (NOP, 4 zero bits, matches only what nothing longer does).
    let mut b = 0;
    while b < 256 {
        let mut best = 15usize; // NOP
        let mut best_bits = 0u8;
        let mut j = 0;
        while j < kinds.len() {
            let kd = kinds[j];
            let m = ((1u16 << kd.code_bits) - 1) as u8;
            if (b as u8) & m == kd.code && kd.code_bits > best_bits {
                best = j;
                best_bits = kd.code_bits;
            }
            j += 1;
        }
        t.kind_of[b] = best as u8;
        let kd = kinds[best];
        let mask = if kd.delta_width == 0 {
            0
        } else if kd.delta_width >= 64 {
            u64::MAX
        } else {
            (1u64 << kd.delta_width) - 1
        };
        t.entry[b] = Entry {
            mask,
            shift: kd.delta_lo,
            nibbles: kd.bits / 4,
            add: kd.add,
            special: kd.special,
        };
        t.nibbles[b] = t.entry[b].nibbles;
        b += 1;
    }
    t
}

pub(crate) static TABLES3: Tables = tables(&RDNA3);
pub(crate) static TABLES4: Tables = tables(&RDNA4);

/// The 64 bits from nibble `p` of `data` (zeros past its end).
#[inline]
fn window(data: &[u8], p: usize) -> u64 {
    let b = p >> 1;
    let shift = ((p & 1) * 4) as u32;
    let mut buf = [0u8; 9];
    let rest = data.get(b..).unwrap_or(&[]);
    let k = rest.len().min(9);
    buf[..k].copy_from_slice(&rest[..k]);
    let lo = u64::from_le_bytes([
        buf[0], buf[1], buf[2], buf[3], buf[4], buf[5], buf[6], buf[7],
    ]);
    // The next byte's low nibble tops an odd window (and shifts out of an even one).
    (lo >> shift) | ((u64::from(buf[8]) << 60) << (4 - shift))
}

/// The 64 bits from nibble `p` of `data` but, at an odd `p`, the top nibble (zero): what the
/// decoder's hot loop reads, one load of 8 bytes.
#[inline(always)]
fn window60(data: &[u8], p: usize) -> u64 {
    let b = p >> 1;
    let shift = ((p & 1) * 4) as u32;
    let lo = match data.get(b..b + 8) {
        Some(c) => u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]),
        None => {
            let mut buf = [0u8; 8];
            let rest = data.get(b..).unwrap_or(&[]);
            buf[..rest.len()].copy_from_slice(rest);
            u64::from_le_bytes(buf)
        }
    };
    lo >> shift
}

/// Bits `lo..=hi` (at most 64 of them) of the packet at nibble `p`.
#[cfg(test)]
fn bits(data: &[u8], p: usize, lo: u32, hi: u32) -> u64 {
    let width = hi - lo + 1;
    let start = p as u64 * 4 + u64::from(lo);
    let mut v = 0u64;
    let mut got = 0;
    while got < width {
        let bit = start + u64::from(got);
        let byte = data.get((bit >> 3) as usize).copied().unwrap_or(0);
        let take = (8 - (bit & 7) as u32).min(width - got);
        let part = (u64::from(byte) >> (bit & 7)) & ((1u64 << take) - 1);
        v |= part << got;
        got += take;
    }
    v
}

/// The decoder's state between packets.
struct Walk {
    p: usize,
    time: u64,
    packets: u64,
}

/// Decodes the packet at nibble `st.p` from `w`, the 64 bits there (the top nibble zero at an
/// odd nibble), `idx` its low byte and `zeros` the zero nibbles it starts with (at least 1 when
/// the low nibble is 0, and none past what `w` or the stream holds); `false` if it is cut short.
/// `FAST`: the 18 nibbles from `st.p` are all in `data` (no packet is longer), so the packet
/// cannot pass its end.
#[inline(always)]
fn step<S: Sink, const LAYOUT4: bool, const FAST: bool>(
    data: &[u8],
    w: u64,
    idx: usize,
    zeros: usize,
    total: usize,
    st: &mut Walk,
    sink: &mut S,
) -> bool {
    let t = if LAYOUT4 { &TABLES4 } else { &TABLES3 };
    let (wgp_field, wave_start_slot, cu_shift) = if LAYOUT4 { (0xF, 15, 4) } else { (0x7, 13, 3) };
    let p = st.p;
    let e = t.entry[idx & 0xFF];
    let nop = idx & 0xF == 0;
    // A run of zero nibbles is NOPs, a nibble each and no time, taken in one step.
    let n = if nop {
        zeros
    } else {
        t.nibbles[idx & 0xFF] as usize
    };
    if !FAST && p + n > total {
        return false;
    }
    st.time = st
        .time
        .wrapping_add(((w >> e.shift) & e.mask) + u64::from(e.add));
    st.packets += if nop { n as u64 } else { 1 };
    if e.special != PLAIN {
        let time = st.time;
        match e.special {
            WAVE_START => {
                let sa = ((w >> 7) & 1) as u32;
                let simd = ((w >> 8) & 3) as u32;
                let wgp = ((w >> 10) & wgp_field) as u32;
                let slot = ((w >> wave_start_slot) & 0x1F) as u32;
                sink.wave_start(wgp | (sa << cu_shift), simd, slot, time);
            }
            WAVE_END => {
                let sa = ((w >> 8) & 1) as u32;
                let simd = ((w >> 9) & 3) as u32;
                let wgp = ((w >> 11) & wgp_field) as u32;
                let slot = ((w >> 15) & 0x1F) as u32;
                sink.wave_end(wgp | (sa << cu_shift), simd, slot, time);
            }
            TIMESTAMP => {
                // The time took the field as a delta, which a marker (realtime bit set, PL
                // clear) is not; the whole 64 bits of a layout-4 packet at an odd nibble are
                // read again.
                let mut value = (w >> e.shift) & e.mask;
                if LAYOUT4 && p & 1 == 1 {
                    let full = (window(data, p) >> e.shift) & e.mask;
                    st.time = st.time.wrapping_add(full.wrapping_sub(value));
                    value = full;
                }
                let (rt, pl) = if LAYOUT4 {
                    ((w >> 7) & 1, (w >> 8) & 1)
                } else {
                    ((w >> 9) & 1, (w >> 8) & 1)
                };
                if rt == 1 && pl == 0 {
                    st.time = st.time.wrapping_sub(value);
                    sink.marker(st.time, value);
                }
            }
            _ => {}
        }
    }
    st.p = p + n;
    true
}

/// The low byte and the leading zero nibbles (up to what is known) of the packet `n` nibbles
/// (at most 18) past nibble `p`, where `w` (the 64 bits there, the top nibble zero at an odd
/// `p`) and `mid` (the 64 bits 8 nibbles further, the same) start. From registers alone: the
/// fast loop finds the next packet's type without waiting for the load at its position.
#[inline(always)]
fn ahead(w: u64, mid: u64, p: usize, n: usize) -> (usize, usize) {
    // Nibbles 0..16 (15 at an odd p) are in `w`, 8..24 (8..23) in `mid`: past nibble 7, `mid`
    // holds the packet's low byte and at least 5 nibbles of it (n - 8 <= 10: no packet is
    // longer than 18 nibbles, no zero run taken longer than 16). Selected without a branch:
    // which one it is follows the packets' sizes. Shifting both by what `p` and `n` give keeps
    // the walk's chain to one shift and a select before the look-up.
    let far = n >= 8;
    let near_x = w >> ((4 * n) & 63);
    let far_x = mid >> ((4 * n).wrapping_sub(32) & 63);
    let x = std::hint::select_unpredictable(far, far_x, near_x);
    let known = 16 + if far { 8 } else { 0 } - (p & 1) - n;
    let zeros = ((x.trailing_zeros() >> 2) as usize).min(known);
    ((x & 0xFF) as usize, zeros)
}

/// The 12 bytes from byte `b` as the 8 there and the 8 from `b + 4`, if `data` holds them.
#[inline(always)]
fn load12(data: &[u8], b: usize) -> Option<(u64, u64)> {
    let lo = data.get(b..b + 8)?.first_chunk::<8>()?;
    let mid = data.get(b + 4..b + 12)?.first_chunk::<8>()?;
    Some((u64::from_le_bytes(*lo), u64::from_le_bytes(*mid)))
}

fn rdna<S: Sink, const LAYOUT4: bool>(data: &[u8], sink: &mut S) -> Summary {
    let total = data.len() * 2;
    let mut st = Walk {
        p: 0,
        time: 0,
        packets: 0,
    };
    // The header, if the stream starts with one (the walk takes it as a packet of no time).
    let layout = header_layout(data);
    // Where 12 whole bytes remain (so 18 nibbles too): one load and one table look-up per
    // packet, and a branch only for the packets that are more than time (waves, timestamps).
    // The table is indexed by a low byte found from the previous packet's load, so that a
    // packet's look-up does not wait for its own load: the walk's chain per packet is a shift
    // and a look-up, not a load and a look-up.
    let fast_end = data.len().saturating_sub(12) * 2;
    if let Some((lo, mid)) = load12(data, 0).filter(|_| st.p < fast_end) {
        let mut next = ahead(lo, mid, 0, 0);
        while st.p < fast_end {
            let p = st.p;
            // Always there: p < fast_end puts 12 bytes after p / 2.
            let Some((lo, mid)) = load12(data, p >> 1) else {
                break;
            };
            let w = lo >> ((p & 1) * 4);
            let mid = mid >> ((p & 1) * 4);
            let (idx, zeros) = next;
            step::<S, LAYOUT4, true>(data, w, idx, zeros, total, &mut st, sink);
            next = ahead(w, mid, p, st.p - p);
        }
    }
    while st.p < total {
        let p = st.p;
        let w = window60(data, p);
        // At an odd nibble the window's top nibble is not read: it counts no zeros.
        let zeros = ((w.trailing_zeros() >> 2) as usize)
            .min(16 - (p & 1))
            .min(total - p);
        if !step::<S, LAYOUT4, false>(data, w, (w & 0xFF) as usize, zeros, total, &mut st, sink) {
            break;
        }
    }
    Summary {
        packets: st.packets,
        consumed: st.p.div_ceil(2),
        layout,
        time: st.time,
    }
}

// ---------------------------------------------------------------------------------------------
// CDNA

/// 16-bit words per token type.
const CDNA_WORDS: [u8; 16] = [1, 4, 4, 2, 1, 3, 1, 1, 1, 1, 1, 4, 3, 2, 4, 3];
const CDNA_TIMESTAMP: usize = 1;
const CDNA_WAVE_START: usize = 3;
const CDNA_WAVE_END: usize = 6;
/// The delta field of each token type, in bits 4 and up: MISC's 8 bits, none in TIMESTAMP,
/// the common 1 bit in the others.
const CDNA_DELTA: [u64; 16] = [0xFF, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1];
/// The token types decoded beyond their delta.
const CDNA_SPECIAL: u32 = (1 << CDNA_TIMESTAMP) | (1 << CDNA_WAVE_START) | (1 << CDNA_WAVE_END);

/// The four 16-bit words from word `i` of `data` (zeros past its end).
#[inline(always)]
fn words4(data: &[u8], i: usize) -> u64 {
    let b = 2 * i;
    if let Some(c) = data.get(b..b + 8) {
        u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])
    } else {
        let mut buf = [0u8; 8];
        let rest = data.get(b..).unwrap_or(&[]);
        let rest = &rest[..rest.len().min(8) & !1];
        buf[..rest.len()].copy_from_slice(rest);
        u64::from_le_bytes(buf)
    }
}

fn cdna<S: Sink>(data: &[u8], sink: &mut S) -> Summary {
    let n = data.len() / 2;
    let mut i = 0usize;
    let mut time = 0u64;
    let mut packets = 0u64;
    let mut offset: Option<u64> = None;
    while i < n {
        let w = words4(data, i);
        let ty = (w & 0xF) as usize;
        let nop = w & 0xFFFF == 0;
        // A run of zero words: MISC tokens of no time, taken in one step.
        let zeros = ((w.trailing_zeros() >> 4) as usize).min(n - i);
        let len = if nop { zeros } else { CDNA_WORDS[ty] as usize };
        if i + len > n {
            break;
        }
        time = time.wrapping_add(((w >> 4) & CDNA_DELTA[ty]) * 4);
        packets += if nop { len as u64 } else { 1 };
        if CDNA_SPECIAL & (1 << ty) != 0 {
            if ty == CDNA_TIMESTAMP {
                if (w >> 4) & 0xFFF == 0 {
                    let absolute = w >> 16;
                    match offset {
                        None => offset = Some(absolute.wrapping_sub(time)),
                        Some(o) => {
                            let t = (absolute.wrapping_sub(o) & !3).wrapping_sub(4);
                            // A time never runs back: a stamp behind the deltas is ignored.
                            if t > time && t.wrapping_sub(time) < 1 << 62 {
                                time = t;
                            }
                        }
                    }
                }
            } else {
                let sh = ((w >> 5) & 1) as u32;
                let cu = ((w >> 6) & 0xF) as u32 | (sh << 4);
                let slot = ((w >> 10) & 0xF) as u32;
                let simd = ((w >> 14) & 3) as u32;
                if ty == CDNA_WAVE_START {
                    sink.wave_start(cu, simd, slot, time);
                } else {
                    sink.wave_end(cu, simd, slot, time);
                }
            }
        }
        i += len;
    }
    Summary {
        packets,
        consumed: i * 2,
        layout: None,
        time,
    }
}

/// Whether this crate decodes the trace stream of `generation`: GFX9 (CDNA tokens), GFX11
/// (layout 3) and GFX12 (layout 4).
pub fn decodes(generation: Generation) -> bool {
    matches!(
        generation,
        Generation::Gfx9 | Generation::Gfx11 | Generation::Gfx12
    )
}

/// The layout the header of `generation`'s RDNA stream names (3 on GFX11, 4 on GFX12); none on
/// CDNA, whose stream has no header.
pub fn layout(generation: Generation) -> Option<u8> {
    match generation {
        Generation::Gfx11 => Some(3),
        Generation::Gfx12 => Some(4),
        _ => None,
    }
}

/// Decodes `data`, one engine's bytes, as `generation`'s engines write them; a generation this
/// crate does not decode ([`decodes`]) gives an empty summary.
pub fn decode<S: Sink>(generation: Generation, data: &[u8], sink: &mut S) -> Summary {
    match generation {
        Generation::Gfx9 => cdna(data, sink),
        Generation::Gfx11 => rdna::<S, false>(data, sink),
        Generation::Gfx12 => rdna::<S, true>(data, sink),
        _ => Summary::default(),
    }
}

/// The layout in the header that starts an RDNA stream (3 on RDNA 3, 4 on RDNA 4), if it
/// starts with one.
pub fn header_layout(data: &[u8]) -> Option<u8> {
    if data.len() < 8 {
        return None;
    }
    let w = window(data, 0);
    (w & 0x7F == 0b0010001).then_some(((w >> 7) & 0x3F) as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_pick_most_specific() {
        let t = &TABLES3;
        assert_eq!(t.kind_of[0x00], 15); // NOP
        assert_eq!(t.kind_of[0x10], 15); // NOP (low nibble 0)
        assert_eq!(t.kind_of[0x11], 22); // header
        assert_eq!(t.kind_of[0x01], 21); // timestamp
        assert_eq!(t.kind_of[0x21], 6);
        assert_eq!(t.kind_of[0x61], 17);
        assert_eq!(t.kind_of[0xE1], 18);
        assert_eq!(t.kind_of[0x0C], 8); // wave start
        assert_eq!(t.kind_of[0x15], 7); // wave end
        assert_eq!(t.kind_of[0x08], 14); // time
        assert_eq!(t.kind_of[0x03], 0);
        assert_eq!(t.kind_of[0x02], 23);
        assert_eq!(TABLES4.entry[0x01].nibbles, 16);
        assert_eq!(TABLES3.entry[0x01].nibbles, 12);
    }

    #[test]
    fn bits_reads_across_bytes() {
        let d = [0x21, 0x43, 0x65, 0x87];
        assert_eq!(bits(&d, 0, 0, 3), 1);
        assert_eq!(bits(&d, 1, 0, 7), 0x32);
        assert_eq!(bits(&d, 3, 4, 11), 0x65);
        assert_eq!(window(&d, 1), 0x0876_5432);
    }
}
