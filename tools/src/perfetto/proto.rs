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

use super::{category, BlockWriter, Encoder, POINT_CATEGORY};
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
    w: BlockWriter<W>,
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
    events: u64,
}

impl<W: Write> ProtoEncoder<W> {
    pub fn new(out: W, clock_ghz: Option<f64>) -> ProtoEncoder<W> {
        ProtoEncoder {
            w: BlockWriter::new(out),
            clock_ghz,
            waves: Vec::new(),
            next_seq: 1,
            free_seqs: Vec::new(),
            next_uuid: 1,
            next_tid: 1,
            pids: FxHashMap::default(),
            next_spare_pid: i32::MAX,
            locs: FxHashMap::default(),
            events: 0,
        }
    }

    /// Writes what is left and returns the writer.
    pub fn finish(self) -> io::Result<W> {
        self.w.finish(b"")
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

    /// Opens an event packet of `slot`'s sequence at `time`: the time since the previous event,
    /// the sequence and its flags. Returns the packet's start.
    #[inline]
    fn event_packet(&mut self, slot: usize, time: u64) -> usize {
        let ns = self.ns(time);
        let ws = &mut self.waves[slot];
        // A wave's times never go back (the engine keeps them in order).
        let delta = ns.saturating_sub(ws.last_ns);
        ws.last_ns = ws.last_ns.max(ns);
        let buf = &mut self.w.buf;
        let p = open(buf, field::TRACE_PACKET);
        uint(buf, field::PACKET_TIMESTAMP, delta);
        uint(buf, field::PACKET_SEQUENCE_ID, u64::from(ws.seq));
        p
    }

    /// Interns on `slot`'s sequence what the event needs and has not been sent there yet: the
    /// name of `frame`, the fixed strings of `fixed` (bits) and the source location `loc`.
    #[inline]
    fn intern(
        &mut self,
        names: &Names,
        slot: usize,
        frame: Option<u32>,
        fixed: u8,
        loc: Option<&str>,
    ) -> Option<u64> {
        let ws = &mut self.waves[slot];
        let new_name = frame.filter(|&f| !test_and_set(&mut ws.names, f as usize));
        let new_fixed = fixed & !ws.fixed;
        ws.fixed |= fixed;
        let loc_iid = loc.map(|l| match self.locs.get(l) {
            Some(&i) => i,
            None => {
                let i = self.locs.len() as u64 + 1;
                self.locs.insert(l.into(), i);
                i
            }
        });
        let new_loc = loc_iid.filter(|&i| !test_and_set(&mut ws.locs, i as usize));
        if new_name.is_none() && new_fixed == 0 && new_loc.is_none() {
            return loc_iid;
        }
        let buf = &mut self.w.buf;
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
        if let (Some(i), Some(l)) = (new_loc, loc) {
            entry(buf, field::INTERNED_ANNOTATION_STRINGS, i, l);
        }
        close(buf, d);
        loc_iid
    }

    fn end_packet(&mut self, p: usize) {
        close(&mut self.w.buf, p);
        self.events += 1;
        self.w.maybe_flush();
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
        let buf = &mut self.w.buf;
        let pk = open(buf, field::TRACE_PACKET);
        let t = open(buf, field::PACKET_TRACK_DESCRIPTOR);
        uint(buf, field::TRACK_UUID, uuid);
        let d = open(buf, field::TRACK_PROCESS);
        wire::int32(buf, field::PROCESS_PID, p);
        wire::bytes(buf, field::PROCESS_NAME, name.as_bytes());
        close(buf, d);
        close(buf, t);
        close(buf, pk);
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
        let buf = &mut self.w.buf;
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
        self.w.maybe_flush();
    }

    fn begin(&mut self, names: &Names, slot: usize, t: u64, frame: u32, kind: ScopeKind) {
        let p = self.event_packet(slot, t);
        let cat = category_iid(kind);
        self.intern(names, slot, Some(frame), 1 << (cat - 1), None);
        let buf = &mut self.w.buf;
        let e = open(buf, field::PACKET_TRACK_EVENT);
        uint(buf, field::EVENT_TYPE, TYPE_SLICE_BEGIN);
        uint(buf, field::EVENT_NAME_IID, u64::from(frame) + 1);
        uint(buf, field::EVENT_CATEGORY_IIDS, cat);
        close(buf, e);
        self.end_packet(p);
    }

    fn end(&mut self, slot: usize, t: u64) {
        let p = self.event_packet(slot, t);
        let buf = &mut self.w.buf;
        let e = open(buf, field::PACKET_TRACK_EVENT);
        uint(buf, field::EVENT_TYPE, TYPE_SLICE_END);
        close(buf, e);
        self.end_packet(p);
    }

    fn instant(&mut self, names: &Names, slot: usize, t: u64, m: &Marker, payload: &[u32]) {
        let p = self.event_packet(slot, t);
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
        let loc_iid = self.intern(names, slot, Some(m.frame), fixed, loc);
        let buf = &mut self.w.buf;
        let e = open(buf, field::PACKET_TRACK_EVENT);
        uint(buf, field::EVENT_TYPE, TYPE_INSTANT);
        uint(buf, field::EVENT_NAME_IID, u64::from(m.frame) + 1);
        uint(buf, field::EVENT_CATEGORY_IIDS, 3);
        let arg = |buf: &mut Vec<u8>, name: u64, v: u64, f: u32| {
            let a = open(buf, field::EVENT_ANNOTATIONS);
            uint(buf, field::ANNOTATION_NAME_IID, name);
            uint(buf, f, v);
            close(buf, a);
        };
        arg(buf, IID_ID, u64::from(m.id), field::ANNOTATION_UINT);
        if let Some(v) = value {
            arg(buf, IID_VALUE, u64::from(v), field::ANNOTATION_UINT);
        }
        if let Some(i) = loc_iid {
            arg(buf, IID_SOURCE_LOC, i, field::ANNOTATION_STRING_IID);
        }
        if !payload.is_empty() {
            let a = open(buf, field::EVENT_ANNOTATIONS);
            uint(buf, field::ANNOTATION_NAME_IID, IID_PAYLOAD);
            for v in payload {
                let x = open(buf, field::ANNOTATION_ARRAY);
                uint(buf, field::ANNOTATION_UINT, u64::from(*v));
                close(buf, x);
            }
            close(buf, a);
        }
        close(buf, e);
        self.end_packet(p);
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
    use super::wire;

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
