//! Perfetto's native protobuf trace form of the timeline (`.pftrace`, the default).
//!
//! The file is a `perfetto.protos.Trace`: a stream of `TracePacket`s written with a small
//! encoder of the protobuf wire format (the handful of messages below; field numbers are those
//! of Perfetto's published schema, `tools/proto/perfetto_trace.proto` lists the subset used).
//!
//! Layout:
//! - A process track per dispatch (`ProcessDescriptor`: the dispatch ID as pid, `dispatch N:
//!   kernel`); records with no occupancy go to a process counted down from `i32::MAX`, since
//!   Perfetto keeps pid 0 for the idle process.
//! - A thread track per wave instance (`ThreadDescriptor`: tid 1, 2, ... in the order the waves
//!   start, named `SE{se}/CU{cu}/SIMD{simd}/W{wave}#{instance}`).
//! - Each wave instance is a packet sequence of its own. Its first packet clears the sequence's
//!   incremental state, sets the defaults (the wave's track, clock 64) and defines clock 64 as an
//!   incremental clock starting at the wave's begin time, so every event carries only the time
//!   since the previous event of its wave and neither track nor pid/tid. The sequence of an
//!   ended wave serves a later one that begins after it (a clock's snapshots must go forward).
//! - Event names, categories, argument names and source locations are interned per sequence
//!   (`InternedData`, sent with the first event that uses them).
//! - Scopes are `TYPE_SLICE_BEGIN`/`TYPE_SLICE_END` events, points `TYPE_INSTANT` with debug
//!   annotations `id`, `value` (only when it is not `id << 2`), `source_loc` and `payload`.
//!
//! Timestamps are ns of the BOOTTIME clock: `cycles / clock_rate_ghz` rounded, or cycles
//! labelled as ns without a clock rate.

use std::io::{self, Write};

use rustc_hash::FxHashMap;

use super::{category, Encoder, OUT_BLOCK, POINT_CATEGORY};
use crate::codeobj::MarkerClass;
use crate::engine::{Marker, Names, ScopeKind, Wave};

/// The protobuf wire format, as far as the trace needs it.
pub mod wire {
    /// Wire type of varints.
    pub const VARINT: u32 = 0;
    /// Wire type of length-delimited fields (strings, bytes, messages).
    pub const LEN: u32 = 2;

    #[inline]
    pub fn varint(buf: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            buf.push(v as u8 | 0x80);
            v >>= 7;
        }
        buf.push(v as u8);
    }

    #[inline]
    pub fn key(buf: &mut Vec<u8>, field: u32, wire_type: u32) {
        varint(buf, u64::from(field << 3 | wire_type));
    }

    #[inline]
    pub fn uint(buf: &mut Vec<u8>, field: u32, v: u64) {
        key(buf, field, VARINT);
        varint(buf, v);
    }

    /// A signed 32-bit field (`int32`): negative values take ten bytes, as the format says.
    #[inline]
    pub fn int32(buf: &mut Vec<u8>, field: u32, v: i32) {
        key(buf, field, VARINT);
        varint(buf, i64::from(v) as u64);
    }

    pub fn bytes(buf: &mut Vec<u8>, field: u32, b: &[u8]) {
        key(buf, field, LEN);
        varint(buf, b.len() as u64);
        buf.extend_from_slice(b);
    }

    /// Opens a message field; [`close`] with the returned position ends it. The length gets
    /// one byte, and is widened in place when the message turns out longer than 127 bytes.
    #[inline]
    pub fn open(buf: &mut Vec<u8>, field: u32) -> usize {
        key(buf, field, LEN);
        buf.push(0);
        buf.len()
    }

    #[inline]
    pub fn close(buf: &mut Vec<u8>, start: usize) {
        let len = buf.len() - start;
        if len < 0x80 {
            buf[start - 1] = len as u8;
        } else {
            let mut l = Vec::with_capacity(10);
            varint(&mut l, len as u64);
            buf.splice(start - 1..start, l);
        }
    }
}

use wire::{close, open, uint};

/// Bytes of a [`Short`] packet.
const SHORT: usize = 128;

/// An event packet written in place, in the output buffer (or a stack array when it gets
/// interned data): event packets are short (at most [`SHORT_PAYLOAD`] payload values), so every
/// length is one byte written when the message ends, and the bytes go out with no copy.
struct Short<'a> {
    b: &'a mut [u8; SHORT],
    n: usize,
}

/// Payload values an event packet built as a [`Short`] may carry: with the largest other
/// fields (ten-byte varints) the packet stays under 128 bytes.
const SHORT_PAYLOAD: usize = 4;

// The largest such packet: key and length 2, time step 11, sequence 6, track event key and
// length 2, type 2, name 6, category 2, the `id` and `value` arguments 10 each, `source_loc`
// 16, the payload's key, length and name 4, and 8 per value.
const _: () = assert!(71 + 8 * SHORT_PAYLOAD <= SHORT);

impl Short<'_> {
    #[inline(always)]
    fn at(b: &mut [u8; SHORT]) -> Short<'_> {
        Short { b, n: 0 }
    }

    #[inline(always)]
    fn byte(&mut self, x: u8) {
        self.b[self.n] = x;
        self.n += 1;
    }

    #[inline(always)]
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.byte(v as u8 | 0x80);
            v >>= 7;
        }
        self.byte(v as u8);
    }

    #[inline(always)]
    fn uint(&mut self, field: u32, v: u64) {
        self.varint(u64::from(field << 3 | wire::VARINT));
        self.varint(v);
    }

    #[inline(always)]
    fn open(&mut self, field: u32) -> usize {
        self.varint(u64::from(field << 3 | wire::LEN));
        self.byte(0);
        self.n
    }

    /// Ends the message opened at `start` (shorter than 128 bytes by construction).
    #[inline(always)]
    fn close(&mut self, start: usize) {
        let len = self.n - start;
        debug_assert!(len < 0x80);
        self.b[start - 1] = len as u8;
    }
}

/// The output: a buffer of fixed length written at a cursor and sent out in blocks of
/// [`OUT_BLOCK`] bytes; the [`SHORT`] bytes past a block take the event packet written in place.
struct Out<W> {
    out: W,
    buf: Vec<u8>,
    /// Bytes written to `buf`, below [`OUT_BLOCK`] between calls.
    pos: usize,
    err: Option<io::Error>,
}

impl<W: Write> Out<W> {
    fn new(out: W) -> Out<W> {
        Out {
            out,
            buf: vec![0; OUT_BLOCK + SHORT],
            pos: 0,
            err: None,
        }
    }

    /// The space for the next event packet.
    #[inline]
    fn window(&mut self) -> &mut [u8; SHORT] {
        let w = &mut self.buf[self.pos..self.pos + SHORT];
        w.try_into().expect("a window of SHORT bytes")
    }

    /// Takes `n` bytes written in [`Out::window`].
    #[inline]
    fn advance(&mut self, n: usize) {
        self.pos += n;
        if self.pos >= OUT_BLOCK {
            self.write_out();
        }
    }

    /// Appends `b`.
    fn put(&mut self, b: &[u8]) {
        if self.pos + b.len() >= OUT_BLOCK {
            self.write_out();
            if b.len() >= OUT_BLOCK {
                self.write(b);
                return;
            }
        }
        self.buf[self.pos..self.pos + b.len()].copy_from_slice(b);
        self.pos += b.len();
    }

    fn write(&mut self, b: &[u8]) {
        if self.err.is_none() {
            if let Err(e) = self.out.write_all(b) {
                self.err = Some(e);
            }
        }
    }

    fn write_out(&mut self) {
        if self.err.is_none() {
            if let Err(e) = self.out.write_all(&self.buf[..self.pos]) {
                self.err = Some(e);
            }
        }
        self.pos = 0;
    }

    /// Writes what is left and returns the writer.
    fn finish(mut self) -> io::Result<W> {
        self.write_out();
        if let Some(e) = self.err.take() {
            return Err(e);
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Field numbers of Perfetto's schema (`protos/perfetto/trace/...`).
mod field {
    pub const TRACE_PACKET: u32 = 1;

    pub const PACKET_CLOCK_SNAPSHOT: u32 = 6;
    pub const PACKET_TIMESTAMP: u32 = 8;
    pub const PACKET_SEQUENCE_ID: u32 = 10;
    pub const PACKET_TRACK_EVENT: u32 = 11;
    pub const PACKET_INTERNED_DATA: u32 = 12;
    pub const PACKET_SEQUENCE_FLAGS: u32 = 13;
    pub const PACKET_DEFAULTS: u32 = 59;
    pub const PACKET_TRACK_DESCRIPTOR: u32 = 60;
    pub const PACKET_FIRST_ON_SEQUENCE: u32 = 87;

    pub const DEFAULTS_CLOCK_ID: u32 = 58;
    pub const DEFAULTS_TRACK_EVENT: u32 = 11;
    pub const TRACK_EVENT_DEFAULTS_TRACK_UUID: u32 = 11;

    pub const SNAPSHOT_CLOCKS: u32 = 1;
    pub const CLOCK_ID: u32 = 1;
    pub const CLOCK_TIMESTAMP: u32 = 2;
    pub const CLOCK_INCREMENTAL: u32 = 3;

    pub const EVENT_CATEGORY_IIDS: u32 = 3;
    pub const EVENT_ANNOTATIONS: u32 = 4;
    pub const EVENT_TYPE: u32 = 9;
    pub const EVENT_NAME_IID: u32 = 10;

    pub const ANNOTATION_NAME_IID: u32 = 1;
    pub const ANNOTATION_UINT: u32 = 3;
    pub const ANNOTATION_ARRAY: u32 = 12;
    pub const ANNOTATION_STRING_IID: u32 = 17;

    pub const INTERNED_CATEGORIES: u32 = 1;
    pub const INTERNED_EVENT_NAMES: u32 = 2;
    pub const INTERNED_ANNOTATION_NAMES: u32 = 3;
    pub const INTERNED_ANNOTATION_STRINGS: u32 = 29;
    pub const INTERNED_IID: u32 = 1;
    pub const INTERNED_NAME: u32 = 2;

    pub const TRACK_UUID: u32 = 1;
    pub const TRACK_PROCESS: u32 = 3;
    pub const TRACK_THREAD: u32 = 4;
    pub const PROCESS_PID: u32 = 1;
    pub const PROCESS_NAME: u32 = 6;
    pub const THREAD_PID: u32 = 1;
    pub const THREAD_TID: u32 = 2;
    pub const THREAD_NAME: u32 = 5;
}

/// `TracePacket.SequenceFlags`: the first packet of each wave's sequence clears its state.
/// Events do not set `SEQ_NEEDS_INCREMENTAL_STATE` (2 bytes each): that flag only lets a reader
/// skip packets after a loss, and a file written whole loses none.
const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
/// `BuiltinClock.BOOTTIME`, the trace's clock.
const CLOCK_BOOTTIME: u64 = 6;
/// The sequence-scoped incremental clock of each wave's sequence.
const CLOCK_WAVE: u64 = 64;
/// `TrackEvent.Type`.
const TYPE_SLICE_BEGIN: u64 = 1;
const TYPE_SLICE_END: u64 = 2;
const TYPE_INSTANT: u64 = 3;

/// Interned IDs of the fixed strings: categories, then argument names (a bit each in
/// [`WaveSeq::fixed`]).
const FIXED: [&str; 7] = [
    "sqtt.function",
    "sqtt.user",
    POINT_CATEGORY,
    "id",
    "value",
    "source_loc",
    "payload",
];
const IID_ID: u64 = 4;
const IID_VALUE: u64 = 5;
const IID_SOURCE_LOC: u64 = 6;
const IID_PAYLOAD: u64 = 7;

fn category_iid(k: ScopeKind) -> u64 {
    FIXED.iter().position(|c| *c == category(k)).unwrap_or(0) as u64 + 1
}

/// The packet sequence of the wave in one slot.
#[derive(Default)]
struct WaveSeq {
    seq: u32,
    /// Time (ns) the sequence's clock starts at.
    first_ns: u64,
    /// Time (ns) of the previous event: the incremental clock's value.
    last_ns: u64,
    /// Frames (event names) interned on this sequence, a bit each.
    names: Vec<u64>,
    /// Source locations interned on this sequence, a bit each.
    locs: Vec<u64>,
    /// Fixed strings interned on this sequence (bit `iid - 1`).
    fixed: u8,
}

/// What an event needs interned on its sequence: its name, fixed strings (bits) and a source
/// location (interned ID and text).
#[derive(Clone, Copy)]
struct Need<'a> {
    frame: Option<u32>,
    fixed: u8,
    loc: Option<(u64, &'a str)>,
}

/// The fields of an instant event.
struct Instant<'a> {
    need: Need<'a>,
    frame: u32,
    id: u32,
    value: Option<u32>,
    payload: &'a [u32],
}

#[inline]
fn test(bits: &[u64], i: usize) -> bool {
    bits.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)
}

fn test_and_set(bits: &mut Vec<u64>, i: usize) -> bool {
    let w = i / 64;
    if bits.len() <= w {
        bits.resize(w + 1, 0);
    }
    let was = bits[w] >> (i % 64) & 1 == 1;
    bits[w] |= 1 << (i % 64);
    was
}

/// The protobuf writer of one ui directory.
pub struct ProtoEncoder<W: Write> {
    w: Out<W>,
    /// Packets that are not event packets in place are put together here.
    scratch: Vec<u8>,
    clock_ghz: Option<f64>,
    waves: Vec<WaveSeq>,
    next_seq: u32,
    /// Sequences of ended waves, with the time their clock was last set: a sequence is used
    /// again only for a wave that begins later (Perfetto wants each clock's snapshots in
    /// increasing time), which keeps sequence IDs short.
    free_seqs: Vec<(u32, u64)>,
    next_uuid: u64,
    next_tid: i32,
    /// The pid of each dispatch's process.
    pids: FxHashMap<Option<u64>, i32>,
    next_spare_pid: i32,
    /// Source locations by interned ID (1-based).
    locs: FxHashMap<Box<str>, u64>,
    /// The source location interned last, and its ID (points of one marker follow each other).
    last_loc: Option<(Box<str>, u64)>,
    events: u64,
}

impl<W: Write> ProtoEncoder<W> {
    pub fn new(out: W, clock_ghz: Option<f64>) -> ProtoEncoder<W> {
        ProtoEncoder {
            w: Out::new(out),
            scratch: Vec::new(),
            clock_ghz,
            waves: Vec::new(),
            next_seq: 1,
            free_seqs: Vec::new(),
            next_uuid: 1,
            next_tid: 1,
            pids: FxHashMap::default(),
            next_spare_pid: i32::MAX,
            locs: FxHashMap::default(),
            last_loc: None,
            events: 0,
        }
    }

    /// Writes what is left and returns the writer.
    pub fn finish(self) -> io::Result<W> {
        self.w.finish()
    }

    #[inline]
    fn ns(&self, cycles: u64) -> u64 {
        match self.clock_ghz {
            None => cycles,
            Some(g) => (cycles as f64 / g).round() as u64,
        }
    }

    fn uuid(&mut self) -> u64 {
        let u = self.next_uuid;
        self.next_uuid += 1;
        u
    }

    /// The time since the previous event of `slot`'s wave (the incremental clock's step to
    /// `time`) and the wave's sequence.
    #[inline]
    fn step(&mut self, slot: usize, time: u64) -> (u64, u32) {
        let ns = self.ns(time);
        let ws = &mut self.waves[slot];
        // A wave's times never go back (the engine keeps them in order).
        let delta = ns.saturating_sub(ws.last_ns);
        ws.last_ns = ws.last_ns.max(ns);
        (delta, ws.seq)
    }

    /// Writes an event packet of `slot`'s sequence at `time` whose track event `body` writes,
    /// with the interned data it needs and has not sent there yet.
    #[inline]
    fn event(
        &mut self,
        names: &Names,
        slot: usize,
        time: u64,
        need: Need,
        body: impl Fn(&mut Short),
    ) {
        let (delta, seq) = self.step(slot, time);
        let ws = &self.waves[slot];
        let known = need.fixed & !ws.fixed == 0
            && need.frame.is_none_or(|f| test(&ws.names, f as usize))
            && need.loc.is_none_or(|(i, _)| test(&ws.locs, i as usize));
        if known {
            let mut s = Short::at(self.w.window());
            let p = s.open(field::TRACE_PACKET);
            s.uint(field::PACKET_TIMESTAMP, delta);
            s.uint(field::PACKET_SEQUENCE_ID, u64::from(seq));
            body(&mut s);
            s.close(p);
            let n = s.n;
            self.w.advance(n);
        } else {
            let mut te = [0; SHORT];
            let mut s = Short::at(&mut te);
            body(&mut s);
            let n = s.n;
            let mut buf = std::mem::take(&mut self.scratch);
            buf.clear();
            let p = open(&mut buf, field::TRACE_PACKET);
            uint(&mut buf, field::PACKET_TIMESTAMP, delta);
            uint(&mut buf, field::PACKET_SEQUENCE_ID, u64::from(seq));
            self.intern(&mut buf, names, slot, need);
            buf.extend_from_slice(&te[..n]);
            close(&mut buf, p);
            self.w.put(&buf);
            self.scratch = buf;
        }
        self.events += 1;
    }

    /// The interned ID of the source location `loc`.
    #[inline]
    fn loc_iid(&mut self, loc: &str) -> u64 {
        if let Some((l, i)) = &self.last_loc {
            if **l == *loc {
                return *i;
            }
        }
        let i = match self.locs.get(loc) {
            Some(&i) => i,
            None => {
                let i = self.locs.len() as u64 + 1;
                self.locs.insert(loc.into(), i);
                i
            }
        };
        self.last_loc = Some((loc.into(), i));
        i
    }

    /// Interns on `slot`'s sequence what the event needs and has not been sent there yet: the
    /// name of `frame`, the fixed strings of `fixed` (bits) and the source location `loc`.
    fn intern(&mut self, buf: &mut Vec<u8>, names: &Names, slot: usize, need: Need) {
        let ws = &mut self.waves[slot];
        let new_name = need
            .frame
            .filter(|&f| !test_and_set(&mut ws.names, f as usize));
        let new_fixed = need.fixed & !ws.fixed;
        ws.fixed |= need.fixed;
        let new_loc = need
            .loc
            .filter(|&(i, _)| !test_and_set(&mut ws.locs, i as usize));
        if new_name.is_none() && new_fixed == 0 && new_loc.is_none() {
            return;
        }
        let d = open(buf, field::PACKET_INTERNED_DATA);
        let entry = |buf: &mut Vec<u8>, table: u32, iid: u64, s: &str| {
            let e = open(buf, table);
            uint(buf, field::INTERNED_IID, iid);
            wire::bytes(buf, field::INTERNED_NAME, s.as_bytes());
            close(buf, e);
        };
        for (i, s) in FIXED.iter().enumerate() {
            if new_fixed >> i & 1 == 1 {
                let table = if i < 3 {
                    field::INTERNED_CATEGORIES
                } else {
                    field::INTERNED_ANNOTATION_NAMES
                };
                entry(buf, table, i as u64 + 1, s);
            }
        }
        if let Some(f) = new_name {
            entry(
                buf,
                field::INTERNED_EVENT_NAMES,
                u64::from(f) + 1,
                names.get(f),
            );
        }
        if let Some((i, l)) = new_loc {
            entry(buf, field::INTERNED_ANNOTATION_STRINGS, i, l);
        }
        close(buf, d);
    }

    /// An instant with more payload values than a [`Short`] holds.
    fn long_instant(&mut self, names: &Names, slot: usize, t: u64, ev: Instant<'_>) {
        let (delta, seq) = self.step(slot, t);
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        let p = open(&mut buf, field::TRACE_PACKET);
        uint(&mut buf, field::PACKET_TIMESTAMP, delta);
        uint(&mut buf, field::PACKET_SEQUENCE_ID, u64::from(seq));
        self.intern(&mut buf, names, slot, ev.need);
        let buf = &mut buf;
        let e = open(buf, field::PACKET_TRACK_EVENT);
        uint(buf, field::EVENT_TYPE, TYPE_INSTANT);
        uint(buf, field::EVENT_NAME_IID, u64::from(ev.frame) + 1);
        uint(buf, field::EVENT_CATEGORY_IIDS, 3);
        let arg = |buf: &mut Vec<u8>, name: u64, v: u64, f: u32| {
            let a = open(buf, field::EVENT_ANNOTATIONS);
            uint(buf, field::ANNOTATION_NAME_IID, name);
            uint(buf, f, v);
            close(buf, a);
        };
        arg(buf, IID_ID, u64::from(ev.id), field::ANNOTATION_UINT);
        if let Some(v) = ev.value {
            arg(buf, IID_VALUE, u64::from(v), field::ANNOTATION_UINT);
        }
        if let Some((i, _)) = ev.need.loc {
            arg(buf, IID_SOURCE_LOC, i, field::ANNOTATION_STRING_IID);
        }
        let a = open(buf, field::EVENT_ANNOTATIONS);
        uint(buf, field::ANNOTATION_NAME_IID, IID_PAYLOAD);
        for v in ev.payload {
            let x = open(buf, field::ANNOTATION_ARRAY);
            uint(buf, field::ANNOTATION_UINT, u64::from(*v));
            close(buf, x);
        }
        close(buf, a);
        close(buf, e);
        close(buf, p);
        self.w.put(buf);
        self.scratch = std::mem::take(buf);
        self.events += 1;
    }

    /// Puts the packets in [`ProtoEncoder::scratch`] out.
    fn put_scratch(&mut self) {
        let buf = std::mem::take(&mut self.scratch);
        self.w.put(&buf);
        self.scratch = buf;
    }
}

impl<W: Write> Encoder for ProtoEncoder<W> {
    fn process(&mut self, pid: Option<u64>, name: &str) {
        let p = match pid.and_then(|d| i32::try_from(d).ok()).filter(|&d| d > 0) {
            Some(d) => d,
            None => {
                while self.pids.values().any(|&v| v == self.next_spare_pid) {
                    self.next_spare_pid -= 1;
                }
                self.next_spare_pid
            }
        };
        self.pids.insert(pid, p);
        let uuid = self.uuid();
        let buf = &mut self.scratch;
        buf.clear();
        let pk = open(buf, field::TRACE_PACKET);
        let t = open(buf, field::PACKET_TRACK_DESCRIPTOR);
        uint(buf, field::TRACK_UUID, uuid);
        let d = open(buf, field::TRACK_PROCESS);
        wire::int32(buf, field::PROCESS_PID, p);
        wire::bytes(buf, field::PROCESS_NAME, name.as_bytes());
        close(buf, d);
        close(buf, t);
        close(buf, pk);
        self.put_scratch();
    }

    fn thread(&mut self, slot: usize, w: &Wave) {
        let pid = self.pids.get(&w.dispatch).copied().unwrap_or(0);
        let tid = self.next_tid;
        self.next_tid = self.next_tid.wrapping_add(1).max(1);
        let uuid = self.uuid();
        let t0 = self.ns(w.begin);
        let seq = match self.free_seqs.last() {
            Some(&(s, last)) if last < t0 => {
                self.free_seqs.pop();
                s
            }
            _ => {
                let s = self.next_seq;
                self.next_seq = self.next_seq.wrapping_add(1).max(1);
                s
            }
        };
        if self.waves.len() <= slot {
            self.waves.resize_with(slot + 1, WaveSeq::default);
        }
        let ws = &mut self.waves[slot];
        ws.seq = seq;
        ws.first_ns = t0;
        ws.last_ns = t0;
        ws.names.fill(0);
        ws.locs.fill(0);
        ws.fixed = 0;
        let name = format!(
            "SE{}/CU{}/SIMD{}/W{}#{}",
            w.se, w.cu, w.simd, w.wave_id, w.instance
        );
        let buf = &mut self.scratch;
        buf.clear();
        // The thread track.
        let pk = open(buf, field::TRACE_PACKET);
        let t = open(buf, field::PACKET_TRACK_DESCRIPTOR);
        uint(buf, field::TRACK_UUID, uuid);
        let d = open(buf, field::TRACK_THREAD);
        wire::int32(buf, field::THREAD_PID, pid);
        wire::int32(buf, field::THREAD_TID, tid);
        wire::bytes(buf, field::THREAD_NAME, name.as_bytes());
        close(buf, d);
        close(buf, t);
        close(buf, pk);
        // The wave's sequence: cleared state, its defaults and its incremental clock.
        let pk = open(buf, field::TRACE_PACKET);
        uint(buf, field::PACKET_SEQUENCE_ID, u64::from(seq));
        uint(
            buf,
            field::PACKET_SEQUENCE_FLAGS,
            SEQ_INCREMENTAL_STATE_CLEARED,
        );
        uint(buf, field::PACKET_FIRST_ON_SEQUENCE, 1);
        let d = open(buf, field::PACKET_DEFAULTS);
        uint(buf, field::DEFAULTS_CLOCK_ID, CLOCK_WAVE);
        let e = open(buf, field::DEFAULTS_TRACK_EVENT);
        uint(buf, field::TRACK_EVENT_DEFAULTS_TRACK_UUID, uuid);
        close(buf, e);
        close(buf, d);
        let s = open(buf, field::PACKET_CLOCK_SNAPSHOT);
        for (id, incremental) in [(CLOCK_BOOTTIME, false), (CLOCK_WAVE, true)] {
            let c = open(buf, field::SNAPSHOT_CLOCKS);
            uint(buf, field::CLOCK_ID, id);
            uint(buf, field::CLOCK_TIMESTAMP, t0);
            if incremental {
                uint(buf, field::CLOCK_INCREMENTAL, 1);
            }
            close(buf, c);
        }
        close(buf, s);
        close(buf, pk);
        self.put_scratch();
    }

    fn begin(&mut self, names: &Names, slot: usize, t: u64, frame: u32, kind: ScopeKind) {
        let cat = category_iid(kind);
        let need = Need {
            frame: Some(frame),
            fixed: 1 << (cat - 1),
            loc: None,
        };
        self.event(names, slot, t, need, |s| {
            let e = s.open(field::PACKET_TRACK_EVENT);
            s.uint(field::EVENT_TYPE, TYPE_SLICE_BEGIN);
            s.uint(field::EVENT_NAME_IID, u64::from(frame) + 1);
            s.uint(field::EVENT_CATEGORY_IIDS, cat);
            s.close(e);
        });
    }

    fn end(&mut self, slot: usize, t: u64) {
        let (delta, seq) = self.step(slot, t);
        let mut s = Short::at(self.w.window());
        let p = s.open(field::TRACE_PACKET);
        s.uint(field::PACKET_TIMESTAMP, delta);
        s.uint(field::PACKET_SEQUENCE_ID, u64::from(seq));
        let e = s.open(field::PACKET_TRACK_EVENT);
        s.uint(field::EVENT_TYPE, TYPE_SLICE_END);
        s.close(e);
        s.close(p);
        let n = s.n;
        self.w.advance(n);
        self.events += 1;
    }

    fn instant(&mut self, names: &Names, slot: usize, t: u64, m: &Marker, payload: &[u32]) {
        let loc = m.entry.and_then(|e| e.source_loc.as_deref());
        let payload = if matches!(m.class, MarkerClass::Address(_)) {
            &[][..]
        } else {
            payload
        };
        // The value is left out when it is the legacy form of the ID (`id << 2`, no flags), as
        // every decoded point's is.
        let value = (m.value != m.id << 2).then_some(m.value);
        let mut fixed = 1 << 2 | 1 << (IID_ID - 1);
        if value.is_some() {
            fixed |= 1 << (IID_VALUE - 1);
        }
        if loc.is_some() {
            fixed |= 1 << (IID_SOURCE_LOC - 1);
        }
        if !payload.is_empty() {
            fixed |= 1 << (IID_PAYLOAD - 1);
        }
        let loc = loc.map(|l| (self.loc_iid(l), l));
        let need = Need {
            frame: Some(m.frame),
            fixed,
            loc,
        };
        if payload.len() > SHORT_PAYLOAD {
            let ev = Instant {
                need,
                frame: m.frame,
                id: m.id,
                value,
                payload,
            };
            return self.long_instant(names, slot, t, ev);
        }
        self.event(names, slot, t, need, |s| {
            let e = s.open(field::PACKET_TRACK_EVENT);
            s.uint(field::EVENT_TYPE, TYPE_INSTANT);
            s.uint(field::EVENT_NAME_IID, u64::from(m.frame) + 1);
            s.uint(field::EVENT_CATEGORY_IIDS, 3);
            let arg = |s: &mut Short, name: u64, v: u64, f: u32| {
                let a = s.open(field::EVENT_ANNOTATIONS);
                s.uint(field::ANNOTATION_NAME_IID, name);
                s.uint(f, v);
                s.close(a);
            };
            arg(s, IID_ID, u64::from(m.id), field::ANNOTATION_UINT);
            if let Some(v) = value {
                arg(s, IID_VALUE, u64::from(v), field::ANNOTATION_UINT);
            }
            if let Some((i, _)) = loc {
                arg(s, IID_SOURCE_LOC, i, field::ANNOTATION_STRING_IID);
            }
            if !payload.is_empty() {
                let a = s.open(field::EVENT_ANNOTATIONS);
                s.uint(field::ANNOTATION_NAME_IID, IID_PAYLOAD);
                for v in payload {
                    let x = s.open(field::ANNOTATION_ARRAY);
                    s.uint(field::ANNOTATION_UINT, u64::from(*v));
                    s.close(x);
                }
                s.close(a);
            }
            s.close(e);
        });
    }

    fn wave_end(&mut self, slot: usize) {
        let ws = &self.waves[slot];
        self.free_seqs.push((ws.seq, ws.first_ns));
    }

    fn events(&self) -> u64 {
        self.events
    }
}

#[cfg(test)]
mod tests {
    use super::{wire, ProtoEncoder, SHORT_PAYLOAD};
    use crate::codeobj::MarkerClass;
    use crate::engine::{Marker, Names, Wave};
    use crate::perfetto::Encoder;
    use sqtt_markers::{Entry, EntryKind};

    fn varint(b: &[u8], i: &mut usize) -> u64 {
        let mut v = 0;
        let mut shift = 0;
        loop {
            let x = b[*i];
            *i += 1;
            v |= u64::from(x & 0x7F) << shift;
            shift += 7;
            if x < 0x80 {
                return v;
            }
        }
    }

    /// The fields of a message: (field number, value or content).
    fn fields(b: &[u8]) -> Vec<(u64, Result<u64, &[u8]>)> {
        let mut i = 0;
        let mut out = Vec::new();
        while i < b.len() {
            let k = varint(b, &mut i);
            match k & 7 {
                0 => out.push((k >> 3, Ok(varint(b, &mut i)))),
                2 => {
                    let n = varint(b, &mut i) as usize;
                    out.push((k >> 3, Err(&b[i..i + n])));
                    i += n;
                }
                t => panic!("wire type {t}"),
            }
        }
        assert_eq!(i, b.len());
        out
    }

    /// The largest event packets written in place (ten-byte time step, all arguments, the most
    /// payload values) keep their one-byte lengths right, once with the interned data and once
    /// without.
    #[test]
    fn largest_short_instant_decodes() {
        let mut names = Names::default();
        let frame = names.intern("point");
        let entry = Entry {
            kind: EntryKind::Point,
            id: Some(u32::MAX >> 2),
            name: "point".into(),
            source_loc: Some("a.hip:1".into()),
        };
        let m = Marker {
            id: u32::MAX >> 2,
            class: MarkerClass::Point,
            frame,
            value: u32::MAX,
            entry: Some(&entry),
            arrival: 0,
        };
        let payload = [u32::MAX; SHORT_PAYLOAD];
        let mut enc = ProtoEncoder::new(Vec::new(), None);
        enc.thread(0, &Wave::default());
        enc.instant(&names, 0, 0, &m, &payload);
        enc.instant(&names, 0, u64::MAX, &m, &payload);
        let out = enc.finish().unwrap();
        let packets = fields(&out);
        assert_eq!(packets.len(), 4);
        for (n, (f, p)) in packets.iter().enumerate().skip(2) {
            assert_eq!(*f, 1);
            let p = fields(p.unwrap_err());
            assert_eq!(p.iter().any(|(f, _)| *f == 12), n == 2, "interned data");
            let step = if n == 2 { 0 } else { u64::MAX };
            assert!(p.contains(&(8, Ok(step))));
            let (_, te) = p.iter().find(|(f, _)| *f == 11).unwrap();
            let te = fields(te.unwrap_err());
            let args: Vec<_> = te.iter().filter(|(f, _)| *f == 4).collect();
            assert_eq!(args.len(), 4);
            let values = fields(args[3].1.unwrap_err());
            let values: Vec<_> = values.iter().filter(|(f, _)| *f == 12).collect();
            assert_eq!(values.len(), SHORT_PAYLOAD);
            for (_, v) in values {
                assert_eq!(fields(v.unwrap_err()), [(3, Ok(u64::from(u32::MAX)))]);
            }
        }
    }

    #[test]
    fn varints_and_long_messages() {
        let mut b = Vec::new();
        wire::varint(&mut b, 300);
        assert_eq!(b, [0xAC, 0x02]);
        b.clear();
        wire::int32(&mut b, 1, -1);
        assert_eq!(b.len(), 11);
        // A message longer than 127 bytes gets a two-byte length.
        b.clear();
        let m = wire::open(&mut b, 1);
        b.extend_from_slice(&[7; 200]);
        wire::close(&mut b, m);
        assert_eq!(&b[..3], &[0x0A, 0xC8, 0x01]);
        assert_eq!(b.len(), 203);
    }
}
