//! Decoders of the trace streams: RDNA 3 (layout 3) and RDNA 4 (layout 4) nibble packets, and
//! the CDNA (GFX9) 16-bit token stream. They walk whole packets only, keep the trace's time, and
//! report wave starts and ends, realtime markers and shader-data records (`s_ttracedata`) to a
//! [`Sink`]. They never allocate per packet and never panic, whatever the bytes; a stream that
//! stops making sense (a packet of no known type, a wave slot no GPU has) or ends inside a packet
//! stops the walk, and the [`Summary`] says where and why ([`Stop`]).
//!
//! What a stream means is AMD's rocprof-trace-decoder's reading of it: the packet sizes, the
//! time-delta fields and the fields of wave and shader-data packets below are its tables (its MIT
//! source, v0.1.7 and later, in ROCm/rocm-systems `projects/rocprof-trace-decoder/source`), and
//! every one was checked against its v0.1.6 library on synthetic streams. docs/format.md has the
//! tables, the record fields and where the two versions of AMD's decoder differ.
//!
//! # RDNA packets
//! A packet is 1 to 18 nibbles, least significant first; its type is found from its low 8 bits:
//! each type's code fills the table slots whose low bits it matches, in the order of the list,
//! later rows over earlier ones (layout 4 is layout 3's list followed by its own rows). Every
//! packet but NOP, the layout header and a realtime TIMESTAMP carries a delta field that advances
//! the time; the short TIME packet (`0b1000`) advances it by its 4-bit field **plus 4** (AMD's
//! `getDelta`). A TIMESTAMP with its realtime bit clear adds its whole field; with it set it adds
//! nothing, and is a marker of the 100 MHz GPU clock when its PL bit is clear. On layout 4 a
//! WAVE_START_EXT is followed by 8-bit extensions for as long as the next packet's bit 0 is 1
//! (NOPs in between included), which carry no time.
//!
//! A stream of 1 MiB or more is walked in two halves at once (`rdna_halves`): each packet's
//! size is a table look-up on the previous packet's bytes, a chain no faster than the look-up, so
//! two independent chains keep more of the CPU busy; the second half's events wait until the
//! first walk lands on one of its packets, and are then the same as one walk's.
//!
//! # CDNA tokens
//! 16-bit words, the type in bits 3:0, sizes by type (gc_9_4_3 `SQ_THREAD_TRACE_WORD_*`). MISC
//! carries an 8-bit delta in bits 11:4, every other token (TIMESTAMP included) a 1-bit delta in
//! bit 4; a delta counts 4 cycles. A stream may start with the 8-byte header rocprofv3 writes
//! (`rocprof_trace_decoder_gfx9_header_t`), which is skipped. A MISC TIME_RESET (type 1) re-anchors
//! the time from the *next* TIMESTAMP (bits 63:16, read as AMD's 46-bit signed field), from the
//! reset on: the first sets the offset between absolute and trace time so that the time becomes
//! `(t - 4) & !3`, the later ones set it to `(absolute - offset) & !3` when the stamp is past the
//! offset. That TIMESTAMP is then consumed (its delta not counted); a second TIME_RESET before
//! any TIMESTAMP is dropped whole. Times are reported as AMD's decoder reports them, from a
//! 46-bit signed field (a time of 2^45 cycles or more wraps). A wave start on a slot already running (compute unit, SIMD and
//! slot, the shader array not counted) is not a new wave, and an end on a slot that is not
//! running is none; a slot above 9 in a wave, instruction or user-data token is not a CDNA
//! stream (AMD's decoder rejects the whole trace).

use serde::Serialize;

use crate::gpu::Generation;

/// What a decoder reports.
pub trait Sink {
    /// A wave started at `time`. `cu` is the Rig-style compute unit of [`crate::Wave::cu`].
    fn wave_start(&mut self, _cu: u32, _simd: u32, _slot: u32, _time: u64) {}
    /// A wave ended at `time`.
    fn wave_end(&mut self, _cu: u32, _simd: u32, _slot: u32, _time: u64) {}
    /// A realtime marker: at shader time `time`, the GPU clock read `realtime`.
    fn marker(&mut self, _time: u64, _realtime: u64) {}
    /// A shader-data record: what an `s_ttracedata` or `s_ttracedata_imm` wrote.
    fn shader_data(&mut self, _record: ShaderData) {}
    /// A GFX11 shader-data packet whose exec bit is set, which AMD's decoder drops (and so
    /// does every reader here): reported apart, for tests and diagnostics.
    fn dropped_shader_data(&mut self, _record: ShaderData) {}
}

/// A [`Sink`] that takes a part of a stream decoded apart, before the part's start time is
/// known: the second half of a stream walked in two halves (see the module's notes). A plain
/// sink ([`decode`]) gets such a part's events buffered and replayed once its time is known; a
/// `Split` sink ([`decode_split`]) collects them in a [`Split::Part`] of its own, as it would
/// keep them anyway, and joins the part's events from the walks' meeting on.
pub trait Split: Sink {
    /// What the part's events are collected in, their times relative to the part's start.
    type Part: Sink;
    /// A place in a part: how many of its events came before.
    type Mark: Copy;
    /// An empty part.
    fn part(&mut self) -> Self::Part;
    /// Where `part` is now.
    fn mark(part: &Self::Part) -> Self::Mark;
    /// Takes the events of `part` from `from` to `to`, in order, their times moved by `offset`
    /// (a wrapping add), as if they had come to this sink.
    fn join(&mut self, part: Self::Part, from: Self::Mark, to: Self::Mark, offset: u64);
}

/// A plain [`Sink`] as a [`Split`] one: a part's events buffered, then replayed.
struct Replayed<'a, S>(&'a mut S);

impl<S: Sink> Sink for Replayed<'_, S> {
    #[inline(always)]
    fn wave_start(&mut self, cu: u32, simd: u32, slot: u32, time: u64) {
        self.0.wave_start(cu, simd, slot, time);
    }
    #[inline(always)]
    fn wave_end(&mut self, cu: u32, simd: u32, slot: u32, time: u64) {
        self.0.wave_end(cu, simd, slot, time);
    }
    #[inline(always)]
    fn marker(&mut self, time: u64, realtime: u64) {
        self.0.marker(time, realtime);
    }
    #[inline(always)]
    fn shader_data(&mut self, record: ShaderData) {
        self.0.shader_data(record);
    }
    #[inline(always)]
    fn dropped_shader_data(&mut self, record: ShaderData) {
        self.0.dropped_shader_data(record);
    }
}

impl<S: Sink> Split for Replayed<'_, S> {
    type Part = Buffered;
    type Mark = usize;
    fn part(&mut self) -> Buffered {
        Buffered::default()
    }
    fn mark(part: &Buffered) -> usize {
        part.0.len()
    }
    fn join(&mut self, part: Buffered, from: usize, to: usize, offset: u64) {
        for e in &part.0[from..to] {
            e.replay(offset, self.0);
        }
    }
}

/// A shader-data record, as AMD's decoder reports it (`rocprofiler_thread_trace_decoder_shaderdata_t`,
/// the rows of rocprofv3's `shaderdata_*.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct ShaderData {
    /// Shader cycles from the start of the trace, after the packet's own delta.
    pub time: u64,
    /// The value written: M0 (32 bits) or the immediate (8 bits).
    pub value: u32,
    /// AMD's compute unit: on RDNA the WGP plus the shader array shifted left by 7
    /// (`wgp + (sa << 7)`); on GFX9 the 4-bit CU (the shader array dropped).
    pub cu: u8,
    pub simd: u8,
    /// The wave slot.
    pub wave: u8,
    /// [`SHADER_DATA_IMM`] and [`SHADER_DATA_PRIV`].
    pub flags: u8,
}

impl ShaderData {
    /// The record with its time moved by `offset` (a wrapping add): a part of a stream decoded
    /// apart, joined ([`Split::join`]).
    #[inline]
    pub fn moved(self, offset: u64) -> ShaderData {
        ShaderData {
            time: self.time.wrapping_add(offset),
            ..self
        }
    }
}

/// [`ShaderData::flags`]: the value came from `s_ttracedata_imm` (the short packet).
pub const SHADER_DATA_IMM: u8 = 1;
/// [`ShaderData::flags`]: written by privileged code (the trap handler); GFX12's `sdt` field.
pub const SHADER_DATA_PRIV: u8 = 2;

/// What a decoder saw of a stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Whole packets (tokens on CDNA) decoded.
    pub packets: u64,
    /// Bytes those packets take, rounded up to a byte; what follows was not decoded.
    pub consumed: usize,
    /// The layout of the stream's header (3 on RDNA 3, 4 on RDNA 4), if it starts with one.
    pub layout: Option<u8>,
    /// The time after the last packet.
    pub time: u64,
    /// Why the walk stopped before the end of the bytes, if it did.
    pub stop: Option<Stop>,
}

/// Where and why a decoder stopped before the end of its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stop {
    /// The byte holding the start of the packet that was not decoded.
    pub offset: usize,
    pub reason: StopReason,
}

/// Why a decoder stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The bytes end inside a packet: the trace was cut.
    Cut,
    /// A packet of no type of this layout: the bytes from here are no stream the decoder knows
    /// (a corrupt trace, or one of another generation). `code` is its low byte (its first 16-bit
    /// word on CDNA).
    Unknown { code: u16 },
    /// A CDNA token names wave slot `slot` (above 9, which no CDNA SIMD has).
    BadSlot { slot: u8 },
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.reason {
            StopReason::Cut => write!(f, "the trace ends inside a packet at byte {}", self.offset),
            StopReason::Unknown { code } => write!(
                f,
                "no packet type starts with {code:#x} at byte {}: the stream is corrupt from there (or of another GPU generation)",
                self.offset
            ),
            StopReason::BadSlot { slot } => write!(
                f,
                "a token at byte {} names wave slot {slot} (CDNA has 0 to 9): the stream is corrupt from there",
                self.offset
            ),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// RDNA

/// What the decoder does with a packet type beyond advancing the time.
pub(crate) const PLAIN: u8 = 0;
pub(crate) const WAVE_START: u8 = 1;
pub(crate) const WAVE_START_EXT: u8 = 2;
pub(crate) const WAVE_END: u8 = 3;
pub(crate) const TIMESTAMP: u8 = 4;
pub(crate) const HEADER: u8 = 5;
pub(crate) const SHADER_DATA: u8 = 6;
pub(crate) const SHADER_DATA_SHORT: u8 = 7;
pub(crate) const TIME: u8 = 8;
pub(crate) const NOP: u8 = 9;
pub(crate) const UNKNOWN: u8 = 10;

/// One packet type: its code in the low `code_bits` bits, its size in bits, its delta field
/// (bits `delta_lo..delta_end`, none when equal), and what it is.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Kind {
    pub(crate) name: &'static str,
    pub(crate) code: u8,
    pub(crate) code_bits: u8,
    pub(crate) bits: u8,
    pub(crate) delta_lo: u8,
    pub(crate) delta_end: u8,
    pub(crate) special: u8,
}

const fn k(name: &'static str, code: u8, code_bits: u8, bits: u8, delta: (u8, u8)) -> Kind {
    Kind {
        name,
        code,
        code_bits,
        bits,
        delta_lo: delta.0,
        delta_end: delta.1,
        special: PLAIN,
    }
}

const fn sp(mut kind: Kind, special: u8) -> Kind {
    kind.special = special;
    kind
}

/// The RDNA 3 (layout 3) packet types, in AMD's order (a later row's slots over an earlier's).
pub(crate) const RDNA3: [Kind; 24] = [
    k("INST", 0b010, 3, 20, (4, 7)),
    k("VALU_INST", 0b011, 3, 12, (3, 6)),
    k("IMM_ONE", 0b1101, 4, 12, (4, 7)),
    k("IMMEDIATE", 0b00100, 5, 24, (5, 8)),
    k("WAVE_READY", 0b10100, 5, 24, (5, 8)),
    k("NEW_PC", 0b0100001, 7, 64, (8, 11)),
    sp(k("WAVE_START", 0b01100, 5, 32, (5, 7)), WAVE_START),
    sp(k("WAVE_START_EXT", 0b11100, 5, 48, (5, 7)), WAVE_START),
    k("WAVE_ALLOC", 0b00101, 5, 20, (5, 8)),
    sp(k("WAVE_END", 0b10101, 5, 20, (5, 8)), WAVE_END),
    sp(k("SHADER_DATA", 0b00110, 5, 52, (5, 8)), SHADER_DATA),
    sp(
        k("SHADER_DATA_SHORT", 0b10110, 5, 28, (5, 8)),
        SHADER_DATA_SHORT,
    ),
    k("UTIL_COUNTER", 0b0110001, 7, 48, (7, 9)),
    sp(k("TIME", 0b1000, 4, 8, (4, 8)), TIME),
    sp(k("NOP", 0b0000, 4, 4, (0, 0)), NOP),
    k("MISC", 0b1010001, 7, 24, (7, 16)),
    k("EVENT", 0b01100001, 8, 24, (8, 11)),
    k("EVENT_SYNC", 0b11100001, 8, 32, (8, 11)),
    k("REG", 0b1001, 4, 64, (4, 7)),
    k("REG_INIT", 0b1110001, 7, 64, (7, 10)),
    sp(k("TIMESTAMP", 0b0000001, 7, 48, (12, 12)), TIMESTAMP),
    sp(k("HEADER", 0b0010001, 7, 64, (0, 0)), HEADER),
    k("VMEM_EXEC", 0b1111, 4, 8, (4, 6)),
    k("ALU_EXEC", 0b1110, 4, 8, (4, 6)),
];

/// The rows layout 4 (RDNA 4) adds after RDNA 3's. The shader-data codes grow to 7 bits: the
/// slots of RDNA 3's 5-bit codes they leave (`0x26`, `0x36`, `0x76`, ...) keep the RDNA 3 sizes.
pub(crate) const RDNA4_ROWS: [Kind; 9] = [
    k("INST", 0b010, 3, 20, (3, 6)),
    sp(k("SHADER_DATA", 0b0000110, 7, 56, (7, 10)), SHADER_DATA),
    sp(
        k("SHADER_DATA_SHORT", 0b1000110, 7, 32, (7, 10)),
        SHADER_DATA_SHORT,
    ),
    k("EXEC_POPCOUNT1", 0b1100110, 7, 24, (7, 10)),
    k("EXEC_POPCOUNT3", 0b010110, 6, 48, (6, 9)),
    k("NEW_PC", 0b0100001, 7, 72, (8, 11)),
    sp(k("WAVE_START_EXT", 0b11100, 5, 40, (5, 7)), WAVE_START_EXT),
    k("WAVE_ALLOC", 0b00101, 5, 24, (5, 8)),
    sp(k("TIMESTAMP", 0b0000001, 7, 64, (12, 12)), TIMESTAMP),
];

/// What the decoder needs of a packet type, by the packet's low byte.
#[derive(Clone, Copy)]
pub(crate) struct Entry {
    mask: u64,
    shift: u8,
    add: u8,
    special: u8,
}

/// A layout's tables: the kind of each low byte (its row; [`NONE`] for no type), the decoding
/// entry of each low byte, and its size in nibbles apart (the one field the walk's chain waits
/// for, read at the byte's own offset).
pub(crate) struct Tables {
    pub(crate) kind_of: [Option<Kind>; 256],
    entry: [Entry; 256],
    nibbles: [u8; 256],
    /// The size in nibbles of a packet the tight loops take by its low byte, 0 for the others:
    /// a plain packet (time alone); shader data ([`TAKE_CARE`]: the loops keep its bits for its
    /// record); a time stamp ([`TAKE_CARE`] | [`TAKE_STAMP`]: the loops add its time, or leave
    /// it to the walk if it is a marker). Looked up beside the shifts below, which are the
    /// tight loops' look-ups on the walk's chain.
    plain: [u8; 256],
    /// The shifts that bring the next packet's low byte to the bottom of a tight loop's two
    /// windows, by the packet's low byte: of the bits from its start (`4 * nibbles`, for a
    /// packet under 8 nibbles) and of the bits from its nibble 8 (`4 * nibbles - 32`, for one
    /// of 8 or more), each mod 64 as a shift takes it. Two loads beside the size's, not
    /// arithmetic after it: they are on the loops' chain from packet to packet.
    shift_near: [u8; 256],
    shift_far: [u8; 256],
    /// The time a packet the tight loops take adds, by its low 16 bits (every such delta field
    /// lies in them): the tight loops' time without the field's shift, mask and offset.
    delta: [u16; 1 << 16],
}

const fn fill(t: &mut Tables, kd: Kind) {
    let mut b = kd.code as usize;
    while b < 256 {
        t.kind_of[b] = Some(kd);
        let width = kd.delta_end - kd.delta_lo;
        t.entry[b] = Entry {
            mask: if width == 0 { 0 } else { (1u64 << width) - 1 },
            shift: kd.delta_lo,
            add: if kd.special == TIME { 4 } else { 0 },
            // Time alone: the hot loop's work.
            special: match kd.special {
                HEADER | TIME | NOP => PLAIN,
                s => s,
            },
        };
        t.nibbles[b] = kd.bits / 4;
        b += 1 << kd.code_bits;
    }
}

const fn tables(base: &[Kind], rows: &[Kind]) -> Tables {
    let none = Entry {
        mask: 0,
        shift: 0,
        add: 0,
        special: UNKNOWN,
    };
    let mut t = Tables {
        kind_of: [None; 256],
        entry: [none; 256],
        nibbles: [1; 256],
        plain: [0; 256],
        shift_near: [0; 256],
        shift_far: [0; 256],
        delta: [0; 1 << 16],
    };
    let mut i = 0;
    while i < base.len() {
        fill(&mut t, base[i]);
        i += 1;
    }
    let mut i = 0;
    while i < rows.len() {
        fill(&mut t, rows[i]);
        i += 1;
    }
    let mut b = 0;
    while b < 256 {
        match t.entry[b].special {
            PLAIN => t.plain[b] = t.nibbles[b],
            SHADER_DATA | SHADER_DATA_SHORT => t.plain[b] = t.nibbles[b] | TAKE_CARE,
            TIMESTAMP => t.plain[b] = t.nibbles[b] | TAKE_CARE | TAKE_STAMP,
            _ => {}
        }
        let bits = 4 * t.nibbles[b] as u32;
        t.shift_near[b] = (bits & 63) as u8;
        t.shift_far[b] = (bits.wrapping_sub(32) & 63) as u8;
        b += 1;
    }
    let mut x = 0;
    while x < 1 << 16 {
        let e = t.entry[x & 0xFF];
        if matches!(
            e.special,
            PLAIN | SHADER_DATA | SHADER_DATA_SHORT | TIMESTAMP
        ) {
            let d = ((x as u64 >> e.shift) & e.mask) + e.add as u64;
            t.delta[x] = d as u16;
        }
        x += 1;
    }
    t
}

/// In [`Tables::plain`]: a packet the tight loops take with more than its time's delta.
const TAKE_CARE: u8 = 0x80;
/// In [`Tables::plain`]: a time stamp.
const TAKE_STAMP: u8 = 0x40;
/// In [`Tables::plain`]: the packet's size in nibbles.
const TAKE_NIBBLES: u8 = 0x1F;
/// The shader-data packets a tight loop keeps before it hands their records to its sink.
const KEPT: usize = 64;

/// The shader-data packets a tight loop took: each one's time and bits (from its start).
struct Kept {
    at: [(u64, u64); KEPT],
}

impl Kept {
    fn new() -> Box<Kept> {
        Box::new(Kept { at: [(0, 0); KEPT] })
    }

    /// Hands the first `n` kept packets' records to `sink`, in order.
    #[inline(never)]
    fn hand<S: Sink, const LAYOUT4: bool>(&self, n: usize, sink: &mut S) {
        for &(time, w) in &self.at[..n.min(KEPT)] {
            rdna_shader_data::<S, LAYOUT4>(w, time, sink);
        }
    }
}

/// A time stamp's bits, from `w` (its bits from its start) and `mid` (from nibble 8): its field
/// (bits 47:12 on layout 3, 63:12 on layout 4, whose top an odd nibble's 60-bit `w` lacks and
/// `mid` holds), rt (set: a marker's real time, else time to add) and pl (set with rt: no
/// marker).
#[inline(always)]
fn stamp<const LAYOUT4: bool>(w: u64, mid: u64) -> (u64, bool, bool) {
    let (field, rt) = if LAYOUT4 {
        (
            ((w >> 12) & 0xF_FFFF) | ((mid & 0xFFFF_FFFF) << 20),
            (w >> 7) & 1,
        )
    } else {
        ((w >> 12) & ((1 << 36) - 1), (w >> 9) & 1)
    };
    (field, rt == 1, (w >> 8) & 1 == 1)
}

/// Whether a tight loop leaves the packet `w` of entry `f` to the walk: one it does not take,
/// or a time stamp that is a marker (rt set, pl clear), which the walk reports.
#[inline(always)]
fn leaves<const LAYOUT4: bool>(f: u8, w: u64) -> bool {
    let (_, rt, pl) = stamp::<LAYOUT4>(w, 0);
    f == 0 || (f & TAKE_STAMP != 0 && rt && !pl)
}

/// A tight loop's packet `w` (`mid`: its bits from nibble 8) of entry `f`, not one it leaves:
/// its time, and a shader-data packet's bits kept at `kept.at[*n]`. The caller makes sure
/// there is room.
#[inline(always)]
fn take<const LAYOUT4: bool>(
    f: u8,
    w: u64,
    mid: u64,
    time: &mut u64,
    kept: &mut Kept,
    n: &mut usize,
) {
    let t = if LAYOUT4 { &TABLES4 } else { &TABLES3 };
    *time = time.wrapping_add(u64::from(t.delta[(w & 0xFFFF) as usize]));
    if f & TAKE_CARE != 0 {
        if f & TAKE_STAMP != 0 {
            // A time stamp the loop takes adds its field if rt is clear.
            let (field, rt, _) = stamp::<LAYOUT4>(w, mid);
            if !rt {
                *time = time.wrapping_add(field);
            }
        } else {
            if let Some(slot) = kept.at.get_mut(*n) {
                *slot = (*time, w);
            }
            *n += 1;
        }
    }
}

pub(crate) static TABLES3: Tables = tables(&RDNA3, &[]);
pub(crate) static TABLES4: Tables = tables(&RDNA3, &RDNA4_ROWS);

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

/// The nibble at `p` (zero past the end).
#[inline]
fn nibble(data: &[u8], p: usize) -> u8 {
    data.get(p >> 1).map_or(0, |&b| (b >> ((p & 1) * 4)) & 0xF)
}

/// The decoder's state between packets.
#[derive(Clone, Copy)]
struct Walk {
    p: usize,
    time: u64,
    packets: u64,
}

/// How a packet left the walk.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Past the packet, `p` moved by its size.
    Next,
    /// Past the packet and what followed it (a WAVE_START_EXT's extensions).
    Moved,
    /// Not decoded: the walk ends here.
    Stop(StopReason),
}

/// The wave a WAVE_START or WAVE_END at `w` names, as (Rig-style cu, simd, slot): the WGP with
/// the shader array above it (bit 3 on layout 3, bit 4 on layout 4).
#[inline(always)]
fn rdna_unit<const LAYOUT4: bool>(
    w: u64,
    sa_at: u32,
    simd_at: u32,
    wgp_at: u32,
    slot_at: u32,
) -> (u32, u32, u32) {
    let (wgp_mask, cu_shift) = if LAYOUT4 { (0xF, 4) } else { (0x7, 3) };
    let sa = ((w >> sa_at) & 1) as u32;
    let simd = ((w >> simd_at) & 3) as u32;
    let wgp = ((w >> wgp_at) & wgp_mask) as u32;
    let slot = ((w >> slot_at) & 0x1F) as u32;
    (wgp | (sa << cu_shift), simd, slot)
}

/// Context save and restore, which AMD's decoder reads in a WAVE_START whose count (bits 31:25)
/// is 66 to 89: bit `count - 66` of these masks says which. A save ends the wave, a restore
/// starts it again, any other count there is neither.
const CONTEXT_SAVE: u32 = 0b00_0011_0011;
const CONTEXT_RESTORE: u32 = 0b11_1100_1100;

/// The packets of no plain kind: waves, time stamps, shader data, extensions, unknown codes.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn special<S: Sink, const LAYOUT4: bool>(
    data: &[u8],
    w: u64,
    kind: u8,
    p: usize,
    n: usize,
    total: usize,
    st: &mut Walk,
    sink: &mut S,
) -> Step {
    let time = st.time;
    match kind {
        WAVE_START | WAVE_START_EXT => {
            let slot_at = if LAYOUT4 { 15 } else { 13 };
            let (cu, simd, slot) = rdna_unit::<LAYOUT4>(w, 7, 8, 10, slot_at);
            let count = ((w >> 25) & 0x7F) as u32;
            if (66..90).contains(&count) {
                let bit = 1 << (count - 66);
                if CONTEXT_SAVE & bit != 0 {
                    sink.wave_end(cu, simd, slot, time);
                } else if CONTEXT_RESTORE & bit != 0 {
                    sink.wave_start(cu, simd, slot, time);
                }
            } else {
                sink.wave_start(cu, simd, slot, time);
            }
            if kind == WAVE_START_EXT {
                // Layout 4: 8-bit extensions follow while the next packet's bit 0 is 1; NOPs
                // between them keep the state.
                let mut q = p + n;
                loop {
                    if q >= total {
                        break;
                    }
                    let x = nibble(data, q);
                    if x == 0 {
                        q += 1;
                        st.packets += 1;
                    } else if x & 1 == 1 {
                        if q + 2 > total {
                            st.p = q;
                            return Step::Stop(StopReason::Cut);
                        }
                        q += 2;
                    } else {
                        break;
                    }
                }
                st.p = q;
                return Step::Moved;
            }
        }
        WAVE_END => {
            let (cu, simd, slot) = rdna_unit::<LAYOUT4>(w, 8, 9, 11, 15);
            sink.wave_end(cu, simd, slot, time);
        }
        TIMESTAMP => {
            let (field, rt, pl) = stamp::<LAYOUT4>(w, window(data, p + 8));
            if !rt {
                st.time = time.wrapping_add(field);
            } else if !pl {
                sink.marker(time, field);
            }
        }
        SHADER_DATA | SHADER_DATA_SHORT => rdna_shader_data::<S, LAYOUT4>(w, time, sink),
        UNKNOWN => {
            st.packets -= 1;
            return Step::Stop(StopReason::Unknown {
                code: (w & 0xFF) as u16,
            });
        }
        _ => {}
    }
    st.p = p + n;
    Step::Next
}

/// The record of the shader-data packet `w` (its bits from its start), at `time`: to `sink`,
/// or dropped as AMD's decoder drops it.
#[inline(always)]
fn rdna_shader_data<S: Sink, const LAYOUT4: bool>(w: u64, time: u64, sink: &mut S) {
    let t = if LAYOUT4 { &TABLES4 } else { &TABLES3 };
    let short = t.entry[(w & 0xFF) as usize].special == SHADER_DATA_SHORT;
    // Layout 4's fields, even in the slots that keep RDNA 3's sizes (AMD reads every
    // shader-data packet of a layout-4 stream with them).
    let record = if LAYOUT4 {
        let sa = ((w >> 10) & 1) as u8;
        let (value, sdt) = if short {
            ((w >> 22) & 0xFF, (w >> 30) & 3)
        } else {
            ((w >> 22) & 0xFFFF_FFFF, (w >> 54) & 3)
        };
        ShaderData {
            time,
            value: value as u32,
            cu: ((w >> 13) & 0xF) as u8 + (sa << 7),
            simd: ((w >> 11) & 3) as u8,
            wave: ((w >> 17) & 0x1F) as u8,
            flags: (u8::from(short) * SHADER_DATA_IMM) | (u8::from(sdt != 0) * SHADER_DATA_PRIV),
        }
    } else {
        let sa = ((w >> 8) & 1) as u8;
        let value = if short {
            (w >> 20) & 0xFF
        } else {
            (w >> 20) & 0xFFFF_FFFF
        };
        let record = ShaderData {
            time,
            value: value as u32,
            cu: ((w >> 11) & 7) as u8 + (sa << 7),
            simd: ((w >> 9) & 3) as u8,
            wave: ((w >> 15) & 0x1F) as u8,
            flags: u8::from(short) * SHADER_DATA_IMM,
        };
        // A record whose exec bit (14) is set is none (AMD drops it).
        if (w >> 14) & 1 == 1 {
            sink.dropped_shader_data(record);
            return;
        }
        record
    };
    sink.shader_data(record);
}

/// Decodes the packet at nibble `st.p` from `w`, the 64 bits there (the top nibble zero at an
/// odd nibble), `idx` its low byte and `zeros` the zero nibbles it starts with (at least 1 when
/// the low nibble is 0, and none past what `w` or the stream holds). `FAST`: the 18 nibbles
/// from `st.p` are all in `data` (no packet is longer), so the packet cannot pass its end.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn step<S: Sink, const LAYOUT4: bool, const FAST: bool>(
    data: &[u8],
    w: u64,
    idx: usize,
    zeros: usize,
    total: usize,
    st: &mut Walk,
    sink: &mut S,
) -> Step {
    let t = if LAYOUT4 { &TABLES4 } else { &TABLES3 };
    let p = st.p;
    let e = t.entry[idx & 0xFF];
    let nop = idx & 0xF == 0;
    // A run of zero nibbles is NOPs, a nibble each and no time: taken in one step where the
    // stream may end (its padding), one by one in the fast loop, whose chain from packet to
    // packet is then the size look-up alone.
    let n = if nop && !FAST {
        zeros
    } else {
        t.nibbles[idx & 0xFF] as usize
    };
    if !FAST && p + n > total {
        return Step::Stop(StopReason::Cut);
    }
    st.time = st
        .time
        .wrapping_add(((w >> e.shift) & e.mask) + u64::from(e.add));
    st.packets += if nop && !FAST { n as u64 } else { 1 };
    if e.special != PLAIN {
        return special::<S, LAYOUT4>(data, w, e.special, p, n, total, st, sink);
    }
    st.p = p + n;
    Step::Next
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

/// [`ahead`]'s low byte for the tight loops, whose packets (`idx` the low byte of the one at
/// `w`) are taken whole, never a zero run: the shifts come from the tables by `idx`, not from
/// the size, so that the chain from one low byte to the next is a look-up, a shift and a select.
#[inline(always)]
fn ahead_taken(t: &Tables, w: u64, mid: u64, idx: usize, n: usize) -> usize {
    let near_x = w >> t.shift_near[idx & 0xFF];
    let far_x = mid >> t.shift_far[idx & 0xFF];
    (std::hint::select_unpredictable(n >= 8, far_x, near_x) & 0xFF) as usize
}

/// The 12 bytes from byte `b` as the 8 there and the 8 from `b + 4`, if `data` holds them.
#[inline(always)]
fn load12(data: &[u8], b: usize) -> Option<(u64, u64)> {
    let s = data.get(b..b + 12)?;
    let lo = s.first_chunk::<8>()?;
    let mid = s.last_chunk::<8>()?;
    Some((u64::from_le_bytes(*lo), u64::from_le_bytes(*mid)))
}

/// One walk over the stream's fast region (where 12 whole bytes remain after each packet's
/// start): its state and the next packet's low byte (and leading zero nibbles).
struct Chain {
    st: Walk,
    next: (usize, usize),
}

impl Chain {
    /// A walk at `st.p`, which must be below `fast_end`.
    #[inline(always)]
    fn at(data: &[u8], st: Walk) -> Chain {
        let (lo, mid) = load12(data, st.p >> 1).unwrap_or((0, 0));
        let sh = (st.p & 1) * 4;
        let next = ahead(lo >> sh, mid >> sh, st.p, 0);
        Chain { st, next }
    }

    /// One packet. Where 12 whole bytes remain (so 18 nibbles too): one load and one table
    /// look-up per packet, and a branch only for the packets that are more than time (waves,
    /// timestamps, shader data). The table is indexed by a low byte found from the previous
    /// packet's load, so that a packet's look-up does not wait for its own load: the walk's
    /// chain per packet is a shift and a look-up, not a load and a look-up.
    #[inline(always)]
    fn step<S: Sink, const LAYOUT4: bool>(
        &mut self,
        data: &[u8],
        total: usize,
        fast_end: usize,
        sink: &mut S,
    ) -> Step {
        let p = self.st.p;
        // Always there: p < fast_end puts 12 bytes after p / 2.
        let Some((lo, mid)) = load12(data, p >> 1) else {
            return Step::Moved;
        };
        let w = lo >> ((p & 1) * 4);
        let mid = mid >> ((p & 1) * 4);
        let (idx, zeros) = self.next;
        let r = step::<S, LAYOUT4, true>(data, w, idx, zeros, total, &mut self.st, sink);
        if r == Step::Next {
            self.next = ahead(w, mid, p, self.st.p - p);
        } else if r == Step::Moved && self.st.p < fast_end {
            // Moved past what followed the packet: the next look-up starts afresh.
            *self = Chain::at(data, self.st);
        }
        r
    }
}

/// A walk's plain packets (time alone), shader data and time stamps in a tight loop: from
/// `c.st.p` while it is below `end` (at most the fast region's end) and the next packet is one
/// of them, with the walk's state in registers. What [`Chain::step`] does with such a packet,
/// without its branches for the others; a shader-data packet's bits are kept, and its record
/// handed to `sink` when the loop ends.
#[inline(always)]
fn plain1<S: Sink, const LAYOUT4: bool>(
    data: &[u8],
    c: &mut Chain,
    end: usize,
    sink: &mut S,
    kept: &mut Kept,
) {
    let t = if LAYOUT4 { &TABLES4 } else { &TABLES3 };
    let (mut p, mut time, mut packets, mut idx) = (c.st.p, c.st.time, c.st.packets, c.next.0);
    let mut nk = 0;
    while p < end && nk < KEPT {
        let f = t.plain[idx & 0xFF];
        if f == 0 {
            break;
        }
        let Some((lo, mid)) = load12(data, p >> 1) else {
            break;
        };
        let sh = (p & 1) * 4;
        let (w, mid) = (lo >> sh, mid >> sh);
        if leaves::<LAYOUT4>(f, w) {
            break;
        }
        let n = usize::from(f & TAKE_NIBBLES);
        take::<LAYOUT4>(f, w, mid, &mut time, kept, &mut nk);
        idx = ahead_taken(t, w, mid, idx, n);
        p += n;
        packets += 1;
    }
    kept.hand::<S, LAYOUT4>(nk, sink);
    c.st = Walk { p, time, packets };
    c.next = (idx, 0);
}

/// [`plain1`] for two walks at once, while both are below their ends and both next packets are
/// ones the loop takes: two independent chains in one loop.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn plain2<S: Sink, T: Sink, const LAYOUT4: bool>(
    data: &[u8],
    a: &mut Chain,
    a_end: usize,
    a_sink: &mut S,
    b: &mut Chain,
    b_end: usize,
    b_sink: &mut T,
    (ka, kb): (&mut Kept, &mut Kept),
) {
    let t = if LAYOUT4 { &TABLES4 } else { &TABLES3 };
    let (mut pa, mut ta, mut ia) = (a.st.p, a.st.time, a.next.0);
    let (mut pb, mut tb, mut ib) = (b.st.p, b.st.time, b.next.0);
    let (mut nka, mut nkb) = (0, 0);
    // Both walks take one packet a turn: one count for the two (a register less in the loop).
    let mut k = 0;
    while pa < a_end && pb < b_end && nka < KEPT && nkb < KEPT {
        let fa = t.plain[ia & 0xFF];
        let fb = t.plain[ib & 0xFF];
        if fa == 0 || fb == 0 {
            break;
        }
        let (Some((la, ma)), Some((lb, mb))) = (load12(data, pa >> 1), load12(data, pb >> 1))
        else {
            break;
        };
        let sa = (pa & 1) * 4;
        let (wa, ma) = (la >> sa, ma >> sa);
        let sb = (pb & 1) * 4;
        let (wb, mb) = (lb >> sb, mb >> sb);
        if leaves::<LAYOUT4>(fa, wa) || leaves::<LAYOUT4>(fb, wb) {
            break;
        }
        let (na, nb) = (
            usize::from(fa & TAKE_NIBBLES),
            usize::from(fb & TAKE_NIBBLES),
        );
        take::<LAYOUT4>(fa, wa, ma, &mut ta, ka, &mut nka);
        take::<LAYOUT4>(fb, wb, mb, &mut tb, kb, &mut nkb);
        ia = ahead_taken(t, wa, ma, ia, na);
        ib = ahead_taken(t, wb, mb, ib, nb);
        pa += na;
        pb += nb;
        k += 1;
    }
    ka.hand::<S, LAYOUT4>(nka, a_sink);
    kb.hand::<T, LAYOUT4>(nkb, b_sink);
    a.st = Walk {
        p: pa,
        time: ta,
        packets: a.st.packets + k,
    };
    a.next = (ia, 0);
    b.st = Walk {
        p: pb,
        time: tb,
        packets: b.st.packets + k,
    };
    b.next = (ib, 0);
}

/// The events of a walk whose time is not known yet (a chain started mid-stream), times
/// relative to its start.
enum Event {
    Start(u32, u32, u32, u64),
    End(u32, u32, u32, u64),
    Marker(u64, u64),
    Data(ShaderData),
    Dropped(ShaderData),
}

#[derive(Default)]
pub(crate) struct Buffered(Vec<Event>);

impl Sink for Buffered {
    fn wave_start(&mut self, cu: u32, simd: u32, slot: u32, time: u64) {
        self.0.push(Event::Start(cu, simd, slot, time));
    }
    fn wave_end(&mut self, cu: u32, simd: u32, slot: u32, time: u64) {
        self.0.push(Event::End(cu, simd, slot, time));
    }
    fn marker(&mut self, time: u64, realtime: u64) {
        self.0.push(Event::Marker(time, realtime));
    }
    fn shader_data(&mut self, record: ShaderData) {
        self.0.push(Event::Data(record));
    }
    fn dropped_shader_data(&mut self, record: ShaderData) {
        self.0.push(Event::Dropped(record));
    }
}

impl Event {
    /// Hands the event to `sink`, its time moved by `offset`.
    fn replay<S: Sink>(&self, offset: u64, sink: &mut S) {
        let at = |t: u64| t.wrapping_add(offset);
        match *self {
            Event::Start(c, s, w, t) => sink.wave_start(c, s, w, at(t)),
            Event::End(c, s, w, t) => sink.wave_end(c, s, w, at(t)),
            Event::Marker(t, r) => sink.marker(at(t), r),
            Event::Data(r) => sink.shader_data(r.moved(offset)),
            Event::Dropped(r) => sink.dropped_shader_data(r.moved(offset)),
        }
    }
}

/// A packet start of the second half's walk: where, its state then, and the events before it.
#[derive(Clone, Copy)]
struct Mark<M> {
    p: usize,
    time: u64,
    packets: u64,
    events: M,
}

/// Streams at least this long are walked in two halves at once (two independent chains keep
/// more of the CPU busy than one).
const SPLIT_MIN: usize = 1 << 20;
/// The packets of the second half recorded for its meeting with the first.
const MARKS: usize = 4096;

/// Walks the two halves of `data` at once: the first from the start, the second from the middle
/// without knowing its time or where its packets begin. A nibble of no packet type there is
/// stepped over, since the second walk need not start on a packet. When the first walk reaches
/// the middle it steps on until it lands on a packet the second walk started; from there the two
/// read the same packets, so the second walk's events (buffered) are the stream's, their times
/// moved by the difference of the two walks' times there. A stop the second walk met past that
/// point is the stream's. `st` ends where the sequential walk goes on: the end of the fast
/// region, or (when the walks never meet) the middle; the stop, if the stream stopped.
fn rdna_halves<S: Split, const LAYOUT4: bool>(
    data: &[u8],
    sink: &mut S,
    st: &mut Walk,
    met: &mut bool,
) -> Option<StopReason> {
    let total = data.len() * 2;
    let fast_end = data.len().saturating_sub(12) * 2;
    let middle = total / 2;
    let mut a = Chain::at(data, *st);
    let mut b = Chain::at(
        data,
        Walk {
            p: middle,
            time: 0,
            packets: 0,
        },
    );
    let mut part = sink.part();
    let (mut ka, mut kb) = (Kept::new(), Kept::new());
    let mut marks: Vec<Mark<S::Mark>> = Vec::with_capacity(MARKS);
    // Where the second walk stopped: a nibble of no packet type (stepped over), or an extension
    // run cut by the end (the walk ends there).
    let mut stops: Vec<(Mark<S::Mark>, StopReason)> = Vec::new();
    let (mut a_on, mut b_on) = (true, true);
    let a_end = middle.min(fast_end);
    while a_on || b_on {
        // The plain packets in the tight loops, once the second walk's marks are kept.
        if marks.len() >= MARKS {
            if a_on && b_on {
                plain2::<S, S::Part, LAYOUT4>(
                    data,
                    &mut a,
                    a_end,
                    sink,
                    &mut b,
                    fast_end,
                    &mut part,
                    (&mut ka, &mut kb),
                );
            } else if b_on {
                plain1::<S::Part, LAYOUT4>(data, &mut b, fast_end, &mut part, &mut kb);
            }
        }
        if a_on {
            if a.st.p >= middle || a.st.p >= fast_end {
                a_on = false;
            } else if let Step::Stop(r) = a.step::<S, LAYOUT4>(data, total, fast_end, sink) {
                *st = a.st;
                return Some(r);
            }
        }
        if b_on {
            if b.st.p >= fast_end {
                b_on = false;
                continue;
            }
            let here = Mark {
                p: b.st.p,
                time: b.st.time,
                packets: b.st.packets,
                events: S::mark(&part),
            };
            if marks.len() < MARKS {
                marks.push(here);
            }
            match b.step::<S::Part, LAYOUT4>(data, total, fast_end, &mut part) {
                Step::Stop(r @ StopReason::Unknown { .. }) => {
                    stops.push((here, r));
                    b.st.p = here.p + 1;
                    if b.st.p < fast_end {
                        b = Chain::at(data, b.st);
                    }
                }
                Step::Stop(r) => {
                    let at = Mark {
                        p: b.st.p,
                        time: b.st.time,
                        packets: b.st.packets,
                        events: S::mark(&part),
                    };
                    stops.push((at, r));
                    b_on = false;
                }
                _ => {}
            }
        }
    }
    // The first walk steps on to a packet the second started.
    let mut j = 0;
    let meet = loop {
        let pa = a.st.p;
        while j < marks.len() && marks[j].p < pa {
            j += 1;
        }
        match marks.get(j) {
            Some(m) if m.p == pa => break *m,
            Some(_) if pa < fast_end => {}
            _ => {
                // They never met: the first walk goes on alone.
                *st = a.st;
                return None;
            }
        }
        if let Step::Stop(r) = a.step::<S, LAYOUT4>(data, total, fast_end, sink) {
            *st = a.st;
            return Some(r);
        }
    };
    *met = true;
    let offset = a.st.time.wrapping_sub(meet.time);
    let stop = stops.iter().find(|(u, _)| u.p >= meet.p);
    let (end, last) = match stop {
        Some((u, _)) => (*u, u.events),
        None => {
            let m = Mark {
                p: b.st.p,
                time: b.st.time,
                packets: b.st.packets,
                events: S::mark(&part),
            };
            (m, m.events)
        }
    };
    sink.join(part, meet.events, last, offset);
    *st = Walk {
        p: end.p,
        time: end.time.wrapping_add(offset),
        packets: a.st.packets + (end.packets - meet.packets),
    };
    stop.map(|(_, r)| *r)
}

/// How an RDNA stream is walked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Walking {
    /// Packet by packet, each by the walk's one step for every packet (no tight loops): the
    /// reference the others are tested against.
    Steps,
    /// From start to end, the tight loops taking what they take.
    One,
    /// In two halves at once ([`rdna_halves`]), then as [`Walking::One`].
    Halves,
}

impl Walking {
    /// In halves (at once), or as one.
    fn halves(halves: bool) -> Walking {
        if halves {
            Walking::Halves
        } else {
            Walking::One
        }
    }
}

fn rdna<S: Split, const LAYOUT4: bool>(data: &[u8], sink: &mut S) -> Summary {
    let walk = Walking::halves(data.len() >= SPLIT_MIN);
    rdna_walk::<S, LAYOUT4>(data, sink, walk, &mut false)
}

/// The RDNA walk, as `walk` says ([`Walking`]); `met` set when two halves walked at once met.
fn rdna_walk<S: Split, const LAYOUT4: bool>(
    data: &[u8],
    sink: &mut S,
    walk: Walking,
    met: &mut bool,
) -> Summary {
    let total = data.len() * 2;
    let mut st = Walk {
        p: 0,
        time: 0,
        packets: 0,
    };
    // The header, if the stream starts with one (the walk takes it as a packet of no time).
    let layout = header_layout(data);
    let fast_end = data.len().saturating_sub(12) * 2;
    let mut stop = None;
    if walk == Walking::Halves && fast_end > total / 2 {
        stop = rdna_halves::<S, LAYOUT4>(data, sink, &mut st, met);
    }
    if stop.is_none() && st.p < fast_end {
        let mut c = Chain::at(data, st);
        let mut kept = Kept::new();
        while c.st.p < fast_end {
            if walk != Walking::Steps {
                plain1::<S, LAYOUT4>(data, &mut c, fast_end, sink, &mut kept);
            }
            if c.st.p >= fast_end {
                break;
            }
            if let Step::Stop(reason) = c.step::<S, LAYOUT4>(data, total, fast_end, sink) {
                stop = Some(reason);
                break;
            }
        }
        st = c.st;
    }
    if stop.is_none() {
        while st.p < total {
            let p = st.p;
            let w = window60(data, p);
            // At an odd nibble the window's top nibble is not read: it counts no zeros.
            let zeros = ((w.trailing_zeros() >> 2) as usize)
                .min(16 - (p & 1))
                .min(total - p);
            match step::<S, LAYOUT4, false>(
                data,
                w,
                (w & 0xFF) as usize,
                zeros,
                total,
                &mut st,
                sink,
            ) {
                Step::Next | Step::Moved => {}
                Step::Stop(reason) => {
                    stop = Some(reason);
                    break;
                }
            }
        }
    }
    Summary {
        packets: st.packets,
        consumed: st.p.div_ceil(2),
        layout,
        time: st.time,
        stop: stop.map(|reason| Stop {
            offset: st.p / 2,
            reason,
        }),
    }
}

// ---------------------------------------------------------------------------------------------
// CDNA

/// 16-bit words per token type (what a reader of a stream steps by: the tests that rewrite
/// streams read it here).
pub const CDNA_WORDS: [u8; 16] = [1, 4, 4, 2, 1, 3, 1, 1, 1, 1, 1, 4, 3, 2, 4, 3];
const CDNA_MISC: usize = 0;
const CDNA_TIMESTAMP: usize = 1;
const CDNA_WAVE_START: usize = 3;
const CDNA_WAVE_ALLOC: usize = 4;
const CDNA_WAVE_END: usize = 6;
const CDNA_INST: usize = 10;
const CDNA_INST_PC: usize = 11;
const CDNA_USERDATA: usize = 12;
/// The misc type (bits 15:13) of a MISC token that resets the time.
const CDNA_TIME_RESET: u64 = 1;
/// The misc type of a MISC token that says the waves' context is being saved ([`Target`]).
const CDNA_SAVE_CONTEXT: u64 = 6;
/// An instruction token's type (bits 15:11) that says the wave has a new program counter.
const CDNA_INST_TYPE_PC: u64 = 7;

/// Whether the token of first word `w` is a MISC of type `misc_type` (bits 15:13).
const fn cdna_misc(w: u64, misc_type: u64) -> bool {
    w & 0xE00F == misc_type << 13 | CDNA_MISC as u64
}

/// The slot index (`simd * 10 + slot`) a wave start or end token `w` names (SIMD 15:14, slot
/// 13:10).
fn cdna_wave_slot(w: u64) -> usize {
    ((w >> 14) & 3) as usize * 10 + ((w >> 10) & 0xF) as usize
}

/// The slot index an instruction token `w` names (SIMD 10:9, slot 8:5).
fn cdna_inst_slot(w: u64) -> usize {
    ((w >> 9) & 3) as usize * 10 + ((w >> 5) & 0xF) as usize
}

/// Whether a wave start `w` is a context save's or restore's: a count (28:22) above 64.
fn cdna_context_start(w: u64) -> bool {
    (w >> 22) & 0x7F > 64
}
/// The delta field of each token type, in bits 4 and up: MISC's 8 bits, the common 1 bit in
/// the others.
const CDNA_DELTA: [u64; 16] = [0xFF, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1];
/// The token types decoded beyond their delta (and MISC's TIME_RESET).
const CDNA_SPECIAL: u32 = (1 << CDNA_WAVE_START)
    | (1 << CDNA_WAVE_ALLOC)
    | (1 << CDNA_WAVE_END)
    | (1 << CDNA_INST)
    | (1 << CDNA_INST_PC)
    | (1 << CDNA_USERDATA);

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

/// Whether `data` starts with the 8-byte header rocprofv3 puts before a GFX9 trace
/// (`rocprof_trace_decoder_gfx9_header_t`: bits 12:0 0 or 0x11, a version of 4 to 6 in 15:13).
pub fn gfx9_header(data: &[u8]) -> bool {
    data.len() >= 8 && {
        let h = words4(data, 0);
        matches!(h & 0x1FFF, 0 | 0x11) && (4..=6).contains(&((h >> 13) & 7))
    }
}

/// The CDNA state that a wave start or end needs: which slots run, and in which shader array,
/// by AMD's key (CU, SIMD and slot, not the shader array): two bit sets of 1024.
struct Running {
    on: [u64; 16],
    sh: [u64; 16],
}

/// AMD's decoder follows the waves of the trace's target CU (the one with instruction tokens:
/// the header's DCU, shader array 0) in a record per SIMD slot, and only a wave it holds there
/// can end: on that CU, an end of a slot it holds no wave in is dropped whole (even when a wave
/// of the other shader array with the same CU, SIMD and slot runs), and a start whose count is
/// above 64 (a context save or restore) is no wave start. A slot's record is made by a start, or
/// by an instruction token of the slot (INST: slot 8:5, SIMD 10:9) while it holds none. After a
/// MISC SAVE_CONTEXT, the waves held then end only once restored: a start of their slot with a
/// count above 64 twice, then an instruction token of type PC; an end before that is dropped
/// whole (the wave stays held).
///
/// The instruction tokens are not looked at as they pass (they are most of a stream, and the
/// tight loop takes them): an end that finds its slot empty looks over the tokens since the
/// slot's last end, a start does so only when a context save came since then (a wave an
/// instruction made before the start is held from that instruction, and the save caught it),
/// and a wave held across a save has its tokens walked once, as its ends come. Saves are rare;
/// each look starts where the slot's last one ended, so a slot's tokens are looked at a few
/// times at most, never once a token for every end.
struct Target {
    /// The target CU (the header's 5-bit DCU; none without the header).
    cu: Option<u64>,
    /// The slots holding a wave: bit `simd * 10 + slot`.
    held: u64,
    /// Per slot, the word from which no instruction token has been looked for.
    since: [usize; 40],
    /// Per slot, where its wave is in a context save, as of word `trap_at` (from the token that
    /// made the wave on).
    trap: [Trap; 40],
    trap_at: [usize; 40],
    /// The word of the last SAVE_CONTEXT.
    last_save: Option<usize>,
}

/// Where a held wave of the target CU is in a context save ([`Target`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Trap {
    Restored,
    Requested,
    Standby,
    AwaitingPc,
}

impl Target {
    fn new(data: &[u8], first: usize) -> Target {
        Target {
            cu: gfx9_header(data).then(|| (words4(data, 0) >> 20) & 0x1F),
            held: 0,
            since: [first; 40],
            trap: [Trap::Restored; 40],
            trap_at: [first; 40],
            last_save: None,
        }
    }

    /// The slot index of a wave token `w` on the target CU (shader array 0), if it is one.
    fn slot(&self, w: u64) -> Option<usize> {
        (self.cu == Some((w >> 6) & 0xF) && (w >> 5) & 1 == 0).then(|| cdna_wave_slot(w))
    }

    /// Slot `b` holds a wave made at word `i`.
    fn make(&mut self, b: usize, i: usize) {
        self.held |= 1 << b;
        self.trap[b] = Trap::Restored;
        self.trap_at[b] = i;
    }

    /// Whether a start token `w` at word `i` is one: on the target CU, not with a count above
    /// 64.
    fn start(&mut self, data: &[u8], w: u64, i: usize) -> bool {
        let Some(b) = self.slot(w) else {
            return true;
        };
        if cdna_context_start(w) {
            return false;
        }
        if self.held & 1 << b == 0 {
            // An instruction of the slot before it may have made the wave already: that matters
            // only when a context save came after it (the save caught the wave), so only then
            // are the slot's tokens looked at.
            let made = match self.last_save {
                Some(k) if k >= self.since[b] => inst_in(data, self.since[b], i, b).unwrap_or(i),
                _ => i,
            };
            self.make(b, made);
        }
        true
    }

    /// A SAVE_CONTEXT at word `i` (a wave an instruction made, not yet looked for, may be
    /// held then).
    fn save(&mut self, i: usize) {
        self.last_save = Some(i);
    }

    /// Whether an end token `w` at word `i` (of `len` words) is one: on the target CU, when its
    /// slot holds a wave not in a context save (which it then no longer holds).
    fn end(&mut self, data: &[u8], w: u64, i: usize, len: usize) -> bool {
        let Some(b) = self.slot(w) else {
            return true;
        };
        if self.held & 1 << b == 0 {
            match inst_in(data, self.since[b], i, b) {
                Some(j) => self.make(b, j),
                None => {
                    self.since[b] = i;
                    return false;
                }
            }
        }
        // The tokens since the slot's state was known matter if a save came since, or if the
        // wave was in one then.
        if self.trap[b] != Trap::Restored || self.last_save.is_some_and(|k| k > self.trap_at[b]) {
            self.trap[b] = self.trap_after(data, self.trap_at[b], i, b);
            self.trap_at[b] = i;
            if self.trap[b] != Trap::Restored {
                return false;
            }
        }
        self.held &= !(1 << b);
        self.since[b] = i + len;
        true
    }
}

impl Target {
    /// Where the held wave of slot index `b` is in a context save after words `from..to`
    /// (token starts), from where it was at `from` ([`Trap`]).
    fn trap_after(&self, data: &[u8], from: usize, to: usize, b: usize) -> Trap {
        let mut trap = self.trap[b];
        let mut j = from;
        while j < to {
            let w = words4(data, j);
            let ty = (w & 0xF) as usize;
            match ty {
                CDNA_MISC if cdna_misc(w, CDNA_SAVE_CONTEXT) => trap = Trap::Requested,
                CDNA_WAVE_START if cdna_context_start(w) && self.slot(w) == Some(b) => {
                    trap = match trap {
                        Trap::Requested => Trap::Standby,
                        Trap::Standby => Trap::AwaitingPc,
                        t => t,
                    }
                }
                CDNA_INST
                    if trap == Trap::AwaitingPc
                        && cdna_inst_slot(w) == b
                        && (w >> 11) & 0x1F == CDNA_INST_TYPE_PC =>
                {
                    trap = Trap::Restored
                }
                _ => {}
            }
            j += CDNA_WORDS[ty] as usize;
        }
        trap
    }
}

/// The first word in `from..to` (`from` a token start) where an instruction token of slot
/// index `b` (SIMD * 10 + slot) starts.
fn inst_in(data: &[u8], from: usize, to: usize, b: usize) -> Option<usize> {
    let mut j = from;
    while j < to {
        let w = words4(data, j);
        let ty = (w & 0xF) as usize;
        if ty == CDNA_INST && cdna_inst_slot(w) == b {
            return Some(j);
        }
        j += CDNA_WORDS[ty] as usize;
    }
    None
}

impl Running {
    fn key(w: u64) -> (usize, u64) {
        let k = ((w >> 6) & 0xF) << 6 | ((w >> 14) & 3) << 4 | ((w >> 10) & 0xF);
        ((k >> 6) as usize, 1 << (k & 63))
    }
}

/// The wave slot a CDNA token names, if it names one above 9 (no CDNA SIMD has it): AMD's
/// decoder rejects the stream there.
#[inline(always)]
const fn cdna_bad_slot(w: u64) -> Option<u8> {
    let ty = (w & 0xF) as usize;
    if CDNA_SPECIAL & (1 << ty) == 0 {
        return None;
    }
    let slot = match ty {
        CDNA_INST | CDNA_INST_PC => (w >> 5) & 0xF,
        _ => (w >> 10) & 0xF,
    };
    if slot > 9 {
        Some(slot as u8)
    } else {
        None
    }
}

/// [`cdna_plain`]'s answer for a token whose first word is one that the walk takes instead.
const CDNA_TAKEN: u16 = u16::MAX;

/// What the CDNA tight loop does with a token, by its first 16-bit word (everything it looks at
/// is there): the cycles it adds, or [`CDNA_TAKEN`] for the tokens the walk takes (the zero
/// word, a TIME_RESET, a token the sink hears of, one naming a bad slot).
static CDNA_PLAIN: [u16; 1 << 16] = {
    let mut t = [0u16; 1 << 16];
    let mut x = 0;
    while x < 1 << 16 {
        let w = x as u64;
        let ty = (w & 0xF) as usize;
        t[x] = if CDNA_REPORTED & (1 << ty) != 0
            || w == 0
            || cdna_misc(w, CDNA_TIME_RESET)
            || cdna_misc(w, CDNA_SAVE_CONTEXT)
            || cdna_bad_slot(w).is_some()
        {
            CDNA_TAKEN
        } else {
            (((w >> 4) & CDNA_DELTA[ty]) * 4) as u16
        };
        x += 1;
    }
    t
};

/// Sets the time at a TIME_RESET from the next TIMESTAMP after word `from` (before any other
/// TIME_RESET), and gives the word of that TIMESTAMP (or of the other TIME_RESET), which the
/// walk then drops.
fn time_reset(data: &[u8], from: usize, n: usize, time: &mut u64, base: &mut i64) -> Option<usize> {
    let mut j = from;
    while j < n {
        let w = words4(data, j);
        let ty = (w & 0xF) as usize;
        let len = CDNA_WORDS[ty] as usize;
        // The stream ends, or goes wrong, before a TIMESTAMP: nothing to re-anchor to.
        if j + len > n || cdna_bad_slot(w).is_some() {
            return None;
        }
        if ty == CDNA_TIMESTAMP {
            // AMD keeps the 48-bit field in a 46-bit signed one.
            let stamp = (((w >> 16) << 18) as i64) >> 18;
            let now = *time as i64;
            if *base == 0 {
                *base = stamp.wrapping_sub(now).wrapping_add(4);
            }
            if stamp > *base {
                *time = (stamp.wrapping_sub(*base) & !3) as u64;
            }
            return Some(j);
        }
        if cdna_misc(w, CDNA_TIME_RESET) {
            return Some(j);
        }
        j += len;
    }
    None
}

/// A time as AMD's decoder reports it on CDNA: its tokens keep the time in a 46-bit signed
/// field, so a time of 2^45 cycles or more comes out negative (as a 64-bit unsigned number).
#[inline(always)]
fn cdna_reported(time: u64) -> u64 {
    (((time << 18) as i64) >> 18) as u64
}

/// [`CDNA_WORDS`] as 4-bit fields of one constant: a token's size is a shift of a register, not
/// a load, on the walk's chain from token to token.
const CDNA_WORDS_PACKED: u64 = {
    let mut v = 0u64;
    let mut t = 0;
    while t < 16 {
        v |= (CDNA_WORDS[t] as u64) << (4 * t);
        t += 1;
    }
    v
};
/// The token types the plain loop leaves to the walk: those the sink hears of.
const CDNA_REPORTED: u32 = (1 << CDNA_WAVE_START) | (1 << CDNA_WAVE_END) | (1 << CDNA_USERDATA);

/// The CDNA walk's plain tokens (time alone) in a tight loop, from word `*i` while it is below
/// `end` (where 8 words remain, and at most the token a TIME_RESET drops): not the zero words,
/// a TIME_RESET, a token the sink hears of or one naming a bad slot, which the walk takes. The
/// next token's type comes from the 8 words loaded at this one, so that the chain from token to
/// token is a shift of the sizes' constant and of those words, not a load.
#[inline(always)]
fn cdna_plain(data: &[u8], i: &mut usize, end: usize, time: &mut u64, packets: &mut u64) {
    let (mut j, mut t, mut k) = (*i, *time, *packets);
    // Four times the next token's type, in the low 6 bits (a shift count is taken mod 64): the
    // shift of the sizes' constant to its size, with no mask on the chain.
    let mut ty4 = data.get(2 * j).map_or(0, |&b| u64::from(b & 0xF) << 2);
    while j < end {
        let Some(c) = data.get(2 * j..2 * j + 16) else {
            break;
        };
        let (Some(lo), Some(hi)) = (c.first_chunk::<8>(), c.last_chunk::<8>()) else {
            break;
        };
        let (w, w2) = (u64::from_le_bytes(*lo), u64::from_le_bytes(*hi));
        let delta = CDNA_PLAIN[(w & 0xFFFF) as usize];
        if delta == CDNA_TAKEN {
            break;
        }
        t = t.wrapping_add(u64::from(delta));
        let sizes = CDNA_WORDS_PACKED >> (ty4 & 63);
        let len = (sizes & 0xF) as usize;
        // 1 to 4 words: the next token is in `w` unless this one takes all four. Its shift in
        // `w`, 16 * len mod 64, is the size's low 2 bits moved up: no mask either.
        let next = std::hint::select_unpredictable(len < 4, w >> ((sizes << 4) & 63), w2);
        ty4 = next << 2;
        j += len;
        k += 1;
    }
    (*i, *time, *packets) = (j, t, k);
}

/// The CDNA walk; with `TIGHT`, the usual tokens taken by the tight loop ([`cdna_plain`]), else
/// every token by the walk's own step (the reference the tight loop is tested against).
fn cdna<S: Sink, const TIGHT: bool>(data: &[u8], sink: &mut S) -> Summary {
    let n = data.len() / 2;
    let mut i = if gfx9_header(data) { 4 } else { 0 };
    let mut time = 0u64;
    let mut base = 0i64;
    let mut packets = 0u64;
    let mut drop_at = usize::MAX;
    let mut running = Running {
        on: [0; 16],
        sh: [0; 16],
    };
    let mut target = Target::new(data, i);
    let mut stop = None;
    while i < n {
        if TIGHT {
            cdna_plain(
                data,
                &mut i,
                n.saturating_sub(7).min(drop_at),
                &mut time,
                &mut packets,
            );
        }
        if i >= n {
            break;
        }
        let w = words4(data, i);
        let ty = (w & 0xF) as usize;
        let nop = w & 0xFFFF == 0;
        // A run of zero words: MISC tokens of no time, taken in one step.
        let zeros = ((w.trailing_zeros() >> 4) as usize).min(n - i);
        let len = if nop { zeros } else { CDNA_WORDS[ty] as usize };
        if i + len > n {
            stop = Some(StopReason::Cut);
            break;
        }
        if i == drop_at {
            // The TIMESTAMP a TIME_RESET took, or a second TIME_RESET: no time, no reset.
            drop_at = usize::MAX;
            packets += 1;
            i += len;
            continue;
        }
        let delta = ((w >> 4) & CDNA_DELTA[ty]) * 4;
        if CDNA_SPECIAL & (1 << ty) != 0 && !nop {
            if let Some(slot) = cdna_bad_slot(w) {
                stop = Some(StopReason::BadSlot { slot });
                break;
            }
            time = time.wrapping_add(delta);
            packets += 1;
            let at = cdna_reported(time);
            let sh = ((w >> 5) & 1) as u32;
            let cu = ((w >> 6) & 0xF) as u32;
            let slot = ((w >> 10) & 0xF) as u32;
            let simd = ((w >> 14) & 3) as u32;
            match ty {
                CDNA_WAVE_START if target.start(data, w, i) => {
                    let (i, bit) = Running::key(w);
                    if running.on[i] & bit == 0 {
                        running.on[i] |= bit;
                        running.sh[i] = running.sh[i] & !bit | (u64::from(sh) * bit);
                        sink.wave_start(cu | sh << 4, simd, slot, at);
                    }
                }
                CDNA_WAVE_END if target.end(data, w, i, len) => {
                    let (i, bit) = Running::key(w);
                    if running.on[i] & bit != 0 {
                        running.on[i] &= !bit;
                        // Named as its start named it, so that it pairs.
                        let sh = u32::from(running.sh[i] & bit != 0);
                        sink.wave_end(cu | sh << 4, simd, slot, at);
                    }
                }
                CDNA_USERDATA => sink.shader_data(ShaderData {
                    time: at,
                    value: (w >> 16) as u32,
                    cu: cu as u8,
                    simd: simd as u8,
                    wave: slot as u8,
                    flags: 0,
                }),
                _ => {}
            }
        } else {
            time = time.wrapping_add(delta);
            packets += if nop { len as u64 } else { 1 };
            if cdna_misc(w, CDNA_SAVE_CONTEXT) {
                target.save(i);
            }
            if cdna_misc(w, CDNA_TIME_RESET) {
                if let Some(j) = time_reset(data, i + len, n, &mut time, &mut base) {
                    drop_at = j;
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
        stop: stop.map(|reason| Stop {
            offset: i * 2,
            reason,
        }),
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
    decode_split(generation, data, &mut Replayed(sink))
}

/// [`decode`] into a [`Split`] sink, which collects the part of an RDNA stream decoded apart
/// itself.
pub fn decode_split<S: Split>(generation: Generation, data: &[u8], sink: &mut S) -> Summary {
    match generation {
        Generation::Gfx9 => cdna::<S, true>(data, sink),
        Generation::Gfx11 => rdna::<S, false>(data, sink),
        Generation::Gfx12 => rdna::<S, true>(data, sink),
        _ => Summary::default(),
    }
}

/// [`decode`] with RDNA streams walked in two halves at once (`true`) or as one (`false`),
/// whatever their size, and whether the halves met (the second half's walk was used): for
/// tests that the two give the same.
#[doc(hidden)]
pub fn decode_halves<S: Sink>(
    generation: Generation,
    data: &[u8],
    sink: &mut S,
    halves: bool,
) -> (Summary, bool) {
    decode_split_halves(generation, data, &mut Replayed(sink), halves)
}

/// [`decode_halves`] into a [`Split`] sink.
#[doc(hidden)]
pub fn decode_split_halves<S: Split>(
    generation: Generation,
    data: &[u8],
    sink: &mut S,
    halves: bool,
) -> (Summary, bool) {
    let mut met = false;
    let walk = Walking::halves(halves);
    let s = match generation {
        Generation::Gfx11 => rdna_walk::<S, false>(data, sink, walk, &mut met),
        Generation::Gfx12 => rdna_walk::<S, true>(data, sink, walk, &mut met),
        _ => decode_split(generation, data, sink),
    };
    (s, met)
}

/// [`decode`] with streams (RDNA and CDNA) walked packet by packet by the one step that decodes
/// every packet, without the tight loops that take the usual ones faster: for tests that the two
/// give the same.
#[doc(hidden)]
pub fn decode_steps<S: Sink>(generation: Generation, data: &[u8], sink: &mut S) -> Summary {
    let sink = &mut Replayed(sink);
    match generation {
        Generation::Gfx11 => rdna_walk::<_, false>(data, sink, Walking::Steps, &mut false),
        Generation::Gfx12 => rdna_walk::<_, true>(data, sink, Walking::Steps, &mut false),
        Generation::Gfx9 => cdna::<_, false>(data, sink),
        _ => decode_split(generation, data, sink),
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

/// AMD's compute unit ([`ShaderData::cu`], the `cu` of its occupancy records) of the wave a
/// [`Sink`] names by its Rig-style `cu`: on RDNA the WGP plus the shader array shifted left by 7,
/// on GFX9 the 4-bit CU (the shader array dropped).
pub fn amd_cu(generation: Generation, cu: u32) -> u8 {
    match generation {
        Generation::Gfx9 => (cu & 0xF) as u8,
        Generation::Gfx11 => ((cu & 7) + ((cu >> 3 & 1) << 7)) as u8,
        _ => ((cu & 0xF) + ((cu >> 4 & 1) << 7)) as u8,
    }
}

/// The shader-data records of `data`, one engine's bytes as `generation`'s engines write them,
/// in stream order, and what the decoder saw.
pub fn shader_data(generation: Generation, data: &[u8]) -> (Vec<ShaderData>, Summary) {
    struct Records(Vec<ShaderData>);
    impl Sink for Records {
        fn shader_data(&mut self, record: ShaderData) {
            self.0.push(record);
        }
    }
    let mut r = Records(Vec::new());
    let s = decode(generation, data, &mut r);
    (r.0, s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(t: &Tables, b: usize) -> &'static str {
        t.kind_of[b].map_or("-", |k| k.name)
    }

    #[test]
    fn tables_follow_amds_rows() {
        let t = &TABLES3;
        assert_eq!(name(t, 0x00), "NOP");
        assert_eq!(name(t, 0x10), "NOP");
        assert_eq!(name(t, 0x11), "HEADER");
        assert_eq!(name(t, 0x01), "TIMESTAMP");
        assert_eq!(name(t, 0x21), "NEW_PC");
        assert_eq!(name(t, 0x61), "EVENT");
        assert_eq!(name(t, 0xE1), "EVENT_SYNC");
        assert_eq!(name(t, 0x0C), "WAVE_START");
        assert_eq!(name(t, 0x15), "WAVE_END");
        assert_eq!(name(t, 0x08), "TIME");
        assert_eq!(name(t, 0x03), "VALU_INST");
        assert_eq!(name(t, 0x02), "INST");
        assert_eq!(name(t, 0x07), "-");
        assert_eq!(name(t, 0x41), "-");
        assert_eq!(TABLES3.nibbles[0x21], 16);
        assert_eq!(TABLES4.nibbles[0x21], 18);
        assert_eq!(TABLES4.nibbles[0x01], 16);
        assert_eq!(TABLES3.nibbles[0x01], 12);
        // Layout 4's shader data: 7-bit codes, and RDNA 3's sizes in the slots they leave.
        let t4 = &TABLES4;
        for (b, n, bits) in [
            (0x06, "SHADER_DATA", 56),
            (0x46, "SHADER_DATA_SHORT", 32),
            (0x26, "SHADER_DATA", 52),
            (0x36, "SHADER_DATA_SHORT", 28),
            (0x76, "SHADER_DATA_SHORT", 28),
            (0x66, "EXEC_POPCOUNT1", 24),
            (0x16, "EXEC_POPCOUNT3", 48),
            (0x56, "EXEC_POPCOUNT3", 48),
            (0x1C, "WAVE_START_EXT", 40),
        ] {
            assert_eq!(name(t4, b), n, "{b:#x}");
            assert_eq!(t4.kind_of[b].unwrap().bits, bits, "{b:#x}");
        }
        assert_eq!(TABLES3.kind_of[0x46].unwrap().bits, 52);
    }

    /// The tight loops' tables say what the packet rows say: the size of a packet they take
    /// (plain, shader data or a time stamp, flagged), and its time from its low 16 bits (every
    /// such delta field ends by bit 16).
    #[test]
    fn the_plain_tables_follow_the_rows() {
        for t in [&TABLES3, &TABLES4] {
            for x in 0..1usize << 16 {
                let b = x & 0xFF;
                let Some(k) = t.kind_of[b] else {
                    assert_eq!(t.plain[b], 0, "{b:#x}");
                    continue;
                };
                let flags = match k.special {
                    WAVE_START | WAVE_START_EXT | WAVE_END => {
                        assert_eq!(t.plain[b], 0, "{}", k.name);
                        continue;
                    }
                    SHADER_DATA | SHADER_DATA_SHORT => TAKE_CARE,
                    TIMESTAMP => TAKE_CARE | TAKE_STAMP,
                    _ => 0,
                };
                assert_eq!(t.plain[b], (k.bits / 4) | flags, "{}", k.name);
                assert!(k.bits / 4 <= TAKE_NIBBLES, "{}", k.name);
                assert!(k.delta_end <= 16, "{}", k.name);
                let width = k.delta_end - k.delta_lo;
                let field = (x >> k.delta_lo) & ((1 << width) - 1);
                let add = if k.special == TIME { 4 } else { 0 };
                assert_eq!(usize::from(t.delta[x]), field + add, "{} at {x:#x}", k.name);
            }
        }
    }

    /// The tight loops find the next packet's low byte by the shift tables as [`ahead`] does by
    /// the size, for every packet they take and windows of every bit.
    #[test]
    fn the_shift_tables_find_the_next_packet() {
        let mut rng = crate::test_rng::Rng(0x9E37_79B9_7F4A_7C15);
        for t in [&TABLES3, &TABLES4] {
            for b in 0..256usize {
                let n = usize::from(t.plain[b] & TAKE_NIBBLES);
                if t.plain[b] == 0 {
                    continue;
                }
                for _ in 0..64 {
                    let (w, mid) = ((rng.next() & !0xFF) | b as u64, rng.next());
                    assert_eq!(
                        ahead_taken(t, w, mid, b, n),
                        ahead(w, mid, 0, n).0,
                        "{b:#x} in {w:#x} {mid:#x}"
                    );
                }
            }
        }
    }

    /// The CDNA tight loop's table: MISC adds bits 11:4 (x4 cycles), every other plain token bit
    /// 4 (x4); the zero word, a TIME_RESET, wave starts and ends, user data and bad slots are the
    /// walk's.
    #[test]
    fn the_cdna_plain_table_follows_the_tokens() {
        let at = |w: u64| CDNA_PLAIN[w as usize];
        assert_eq!(at(0), CDNA_TAKEN);
        assert_eq!(at(0x0FF0 | CDNA_MISC as u64), 0xFF * 4);
        assert_eq!(at(CDNA_TIME_RESET << 13 | CDNA_MISC as u64), CDNA_TAKEN);
        assert_eq!(at(2 << 13 | 0x10 | CDNA_MISC as u64), 4);
        for ty in [CDNA_WAVE_START, CDNA_WAVE_END, CDNA_USERDATA] {
            assert_eq!(at(ty as u64), CDNA_TAKEN, "{ty}");
        }
        assert_eq!(at(0x10 | CDNA_TIMESTAMP as u64), 4);
        assert_eq!(at(0xFFE0 | CDNA_TIMESTAMP as u64), 0);
        // A wave allocation on slot 9, then on slot 10 (no CDNA SIMD has it).
        assert_eq!(at(9 << 10 | 0x10 | CDNA_WAVE_ALLOC as u64), 4);
        assert_eq!(at(10 << 10 | CDNA_WAVE_ALLOC as u64), CDNA_TAKEN);
        assert_eq!(at(10 << 5 | CDNA_INST as u64), CDNA_TAKEN);
        assert_eq!(at(9 << 5 | CDNA_INST as u64), 0);
    }

    #[test]
    fn window_reads_across_bytes() {
        let d = [0x21, 0x43, 0x65, 0x87];
        assert_eq!(window(&d, 1), 0x0876_5432);
        assert_eq!(nibble(&d, 3), 4);
        assert_eq!(nibble(&d, 9), 0);
    }

    #[test]
    fn gfx9_header_is_known() {
        let h = 0x11u64 | 5 << 13 | 0xF << 16;
        assert!(gfx9_header(&h.to_le_bytes()));
        assert!(!gfx9_header(&(0x11u64 | 7 << 13).to_le_bytes()));
        assert!(!gfx9_header(&[0x11, 0x80]));
    }
}
