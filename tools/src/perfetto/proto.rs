//! Perfetto's native protobuf trace form of the timeline (`.pftrace`, the default).
//!
//! The file is a `perfetto.protos.Trace`: a stream of `TracePacket`s written with a small
//! encoder of the protobuf wire format (the handful of messages below; field numbers are those
//! of Perfetto's published schema, `tools/proto/perfetto_trace.proto` lists the subset used).
//!
//! Layout:
//! - A process track per dispatch and a thread track per wave instance (`ProcessDescriptor`,
//!   `ThreadDescriptor`), with the pids, tids and names the [`Timeline`](super::Timeline) gives.
//! - A wave's events form a packet sequence (`trusted_packet_sequence_id`), so that they carry
//!   neither track nor absolute time: a sequence's first packet clears its incremental state
//!   (`SEQ_INCREMENTAL_STATE_CLEARED`, `first_packet_on_sequence`) and defines clock 64 as an
//!   incremental clock (`ClockSnapshot`), so each event carries the time since the sequence's
//!   previous event; the wave's first event sets the sequence's `TracePacketDefaults` (clock 64,
//!   the wave's track). A sequence whose wave ended serves a later wave (one that begins at or
//!   after its clock) with new defaults and its incremental state kept: its interned strings
//!   serve again and its clock runs on. A wave with no event gets no sequence.
//! - Every event depends on that state, and says so (`SEQ_NEEDS_INCREMENTAL_STATE`).
//! - Event names, categories, argument names and source locations are interned per sequence
//!   (`InternedData`, sent with the first event of the sequence that uses them); event names get
//!   IDs in the order the file first uses them, so the common ones take one byte.
//! - Scopes are `TYPE_SLICE_BEGIN`/`TYPE_SLICE_END` events, points `TYPE_INSTANT` with debug
//!   annotations `id`, `value` (only when it is not `id << 2`), `source_loc` and `payload`.
//!
//! Timestamps are the timeline's ns, on the BOOTTIME clock.

use std::io::{self, Write};

use rustc_hash::FxHashMap;

use super::{category, Encoder, Point, Thread, POINT_CATEGORY};
use crate::engine::{Names, ScopeKind};

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

    /// The varint at `b[*i..]`, with `*i` moved past it.
    pub fn read_varint(b: &[u8], i: &mut usize) -> u64 {
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

// The largest such packet: key and length 2, time step 11, sequence 6, flags 2, track event key
// and length 2, type 2, name 6, category 2, the `id` and `value` arguments 10 each,
// `source_loc` 16, the payload's key, length and name 4, and 8 per value.
const _: () = assert!(73 + 8 * SHORT_PAYLOAD <= SHORT);

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

/// Raw packets compressed into one `compressed_packets` packet: Perfetto wants each such packet
/// under 512 KiB.
const BUNDLE: usize = 256 << 10;

/// The output: a buffer of fixed length written at a cursor; the [`SHORT`] bytes past its
/// [`BUNDLE`] bytes take the event packet written in place. Each full buffer of packets goes out
/// deflated as one `TracePacket.compressed_packets` (a `Trace` of those packets, zlib format, as
/// Perfetto's own service writes with `COMPRESSION_TYPE_DEFLATE`): the packets repeat a handful
/// of byte patterns, and deflate takes them to less than half.
struct Out<W> {
    out: W,
    buf: Vec<u8>,
    /// Bytes written to `buf`, below [`BUNDLE`] between calls.
    pos: usize,
    z: flate2::Compress,
    /// The deflated bundle, then its packet.
    zbuf: Vec<u8>,
    err: Option<io::Error>,
}

impl<W: Write> Out<W> {
    fn new(out: W) -> Out<W> {
        Out {
            out,
            buf: vec![0; BUNDLE + SHORT],
            pos: 0,
            z: flate2::Compress::new(flate2::Compression::fast(), true),
            zbuf: Vec::new(),
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
        if self.pos >= BUNDLE {
            self.write_out();
        }
    }

    /// Appends `b`.
    fn put(&mut self, b: &[u8]) {
        if self.pos + b.len() >= BUNDLE {
            self.write_out();
            if b.len() >= BUNDLE {
                // A packet too large to bundle goes out as it is.
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

    /// Writes the packets in the buffer out, deflated into one packet.
    fn write_out(&mut self) {
        if self.pos == 0 {
            return;
        }
        let raw = &self.buf[..self.pos];
        self.z.reset();
        let z = &mut self.zbuf;
        z.clear();
        z.reserve(raw.len() / 2 + 64);
        let done = loop {
            let read = self.z.total_in() as usize;
            match self
                .z
                .compress_vec(&raw[read..], z, flate2::FlushCompress::Finish)
            {
                Ok(flate2::Status::StreamEnd) => break true,
                Ok(_) => z.reserve(z.capacity().max(4096)),
                Err(_) => break false,
            }
        };
        if done && z.len() + 8 < raw.len() {
            let mut head = Vec::with_capacity(16);
            let inner = z.len() + 2 + varint_len(z.len() as u64);
            wire::key(&mut head, field::TRACE_PACKET, wire::LEN);
            wire::varint(&mut head, inner as u64);
            wire::key(&mut head, field::PACKET_COMPRESSED, wire::LEN);
            wire::varint(&mut head, z.len() as u64);
            let z = std::mem::take(&mut self.zbuf);
            self.write(&head);
            self.write(&z);
            self.zbuf = z;
        } else {
            let raw = std::mem::take(&mut self.buf);
            self.write(&raw[..self.pos]);
            self.buf = raw;
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

/// Bytes of `v` as a varint.
fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
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
    pub const PACKET_COMPRESSED: u32 = 50;

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

/// `TracePacket.SequenceFlags`: the first packet of a sequence clears its incremental state;
/// every event needs it (the defaults, interned strings and the sequence's clock).
const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;
/// `BuiltinClock.BOOTTIME`, the trace's clock.
const CLOCK_BOOTTIME: u64 = 6;
/// The sequence-scoped incremental clock of each sequence.
const CLOCK_SEQ: u64 = 64;
/// `TrackEvent.Type`.
const TYPE_SLICE_BEGIN: u64 = 1;
const TYPE_SLICE_END: u64 = 2;
const TYPE_INSTANT: u64 = 3;

/// Interned IDs of the fixed strings: categories, then argument names (a bit each in
/// [`Seq::fixed`]).
const FIXED: [&str; 7] = [
    "sqtt.function",
    "sqtt.user",
    POINT_CATEGORY,
    "id",
    "value",
    "source_loc",
    "payload",
];
const IID_POINT: u64 = 3;
const IID_ID: u64 = 4;
const IID_VALUE: u64 = 5;
const IID_SOURCE_LOC: u64 = 6;
const IID_PAYLOAD: u64 = 7;

fn category_iid(k: ScopeKind) -> u64 {
    FIXED.iter().position(|c| *c == category(k)).unwrap_or(0) as u64 + 1
}

/// A packet sequence: its incremental clock and what has been interned on it.
#[derive(Default)]
struct Seq {
    /// The incremental clock's value (ns): the time of the sequence's last event.
    now: u64,
    /// Event names interned on this sequence, a bit per interned ID.
    names: Vec<u64>,
    /// Source locations interned on this sequence, a bit per interned ID.
    locs: Vec<u64>,
    /// Fixed strings interned on this sequence (bit `iid - 1`).
    fixed: u8,
}

/// The wave in one slot.
#[derive(Default, Clone, Copy)]
struct SlotWave {
    track: u64,
    /// Its sequence (0 until its first event).
    seq: u32,
    /// Whether its first event (which sets the sequence's defaults to its track) is written.
    started: bool,
}

/// What an event needs on its sequence: the defaults of its wave, its name, fixed strings
/// (bits) and a source location (interned ID and text).
#[derive(Clone, Copy)]
struct Need<'a> {
    defaults: bool,
    name: Option<(u64, u32)>,
    fixed: u8,
    loc: Option<(u64, &'a str)>,
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
    waves: Vec<SlotWave>,
    /// The sequences, by ID - 1.
    seqs: Vec<Seq>,
    /// Sequences whose wave ended, by their clock: the earliest serves the next wave that
    /// begins at or after it (a clock never goes back).
    free: std::collections::BinaryHeap<std::cmp::Reverse<(u64, u32)>>,
    next_uuid: u64,
    /// The interned ID of each frame used as an event name (0: none yet), and how many are.
    name_iids: Vec<u32>,
    names_used: u32,
    /// Source locations by interned ID (1-based).
    locs: FxHashMap<Box<str>, u64>,
    /// The source location interned last, and its ID (points of one marker follow each other).
    last_loc: Option<(Box<str>, u64)>,
    events: u64,
}

impl<W: Write> ProtoEncoder<W> {
    pub fn new(out: W) -> ProtoEncoder<W> {
        ProtoEncoder {
            w: Out::new(out),
            scratch: Vec::new(),
            waves: Vec::new(),
            seqs: Vec::new(),
            free: std::collections::BinaryHeap::new(),
            next_uuid: 1,
            name_iids: Vec::new(),
            names_used: 0,
            locs: FxHashMap::default(),
            last_loc: None,
            events: 0,
        }
    }

    /// Writes what is left and returns the writer.
    pub fn finish(self) -> io::Result<W> {
        self.w.finish()
    }

    /// The interned ID of event name `frame`.
    #[inline]
    fn name_iid(&mut self, frame: u32) -> u64 {
        let f = frame as usize;
        if let Some(&i) = self.name_iids.get(f).filter(|i| **i != 0) {
            return u64::from(i);
        }
        if self.name_iids.len() <= f {
            self.name_iids.resize(f + 1, 0);
        }
        self.names_used += 1;
        self.name_iids[f] = self.names_used;
        u64::from(self.names_used)
    }

    /// The sequence of `slot`'s wave, given one at its first event (at `ns`).
    #[inline]
    fn seq_of(&mut self, slot: usize, ns: u64) -> u32 {
        match self.waves[slot].seq {
            0 => self.new_seq(slot, ns),
            s => s,
        }
    }

    /// A sequence for `slot`'s wave, whose first event is at `ns`: a free one whose clock is not
    /// past `ns`, else a new one (its first packet clears its state and sets its clock).
    #[cold]
    fn new_seq(&mut self, slot: usize, ns: u64) -> u32 {
        let seq = match self.free.peek() {
            Some(&std::cmp::Reverse((now, s))) if now <= ns => {
                self.free.pop();
                s
            }
            _ => {
                self.seqs.push(Seq {
                    now: ns,
                    ..Seq::default()
                });
                let seq = self.seqs.len() as u32;
                let buf = &mut self.scratch;
                buf.clear();
                let pk = open(buf, field::TRACE_PACKET);
                uint(buf, field::PACKET_SEQUENCE_ID, u64::from(seq));
                uint(
                    buf,
                    field::PACKET_SEQUENCE_FLAGS,
                    SEQ_INCREMENTAL_STATE_CLEARED,
                );
                uint(buf, field::PACKET_FIRST_ON_SEQUENCE, 1);
                let s = open(buf, field::PACKET_CLOCK_SNAPSHOT);
                for (id, incremental) in [(CLOCK_BOOTTIME, false), (CLOCK_SEQ, true)] {
                    let c = open(buf, field::SNAPSHOT_CLOCKS);
                    uint(buf, field::CLOCK_ID, id);
                    uint(buf, field::CLOCK_TIMESTAMP, ns);
                    if incremental {
                        uint(buf, field::CLOCK_INCREMENTAL, 1);
                    }
                    close(buf, c);
                }
                close(buf, s);
                close(buf, pk);
                self.put_scratch();
                seq
            }
        };
        self.waves[slot].seq = seq;
        seq
    }

    /// The time since the previous event of `slot`'s sequence (the incremental clock's step to
    /// `ns`) and the sequence.
    #[inline]
    fn step(&mut self, slot: usize, ns: u64) -> (u64, u32) {
        let seq = self.seq_of(slot, ns);
        let sq = &mut self.seqs[seq as usize - 1];
        // A wave's times never go back (the engine keeps them in order), nor does a sequence
        // serve a wave that begins before its clock.
        let delta = ns.saturating_sub(sq.now);
        sq.now = sq.now.max(ns);
        (delta, seq)
    }

    /// Writes an event packet of `slot`'s sequence at `ns` whose track event `body` writes,
    /// with the defaults and interned data it needs and has not sent there yet.
    #[inline]
    fn event(
        &mut self,
        names: &Names,
        slot: usize,
        ns: u64,
        need: Need,
        body: impl Fn(&mut Short),
    ) {
        let (delta, seq) = self.step(slot, ns);
        let sq = &self.seqs[seq as usize - 1];
        let known = !need.defaults
            && need.fixed & !sq.fixed == 0
            && need.name.is_none_or(|(i, _)| test(&sq.names, i as usize))
            && need.loc.is_none_or(|(i, _)| test(&sq.locs, i as usize));
        if known {
            let mut s = Short::at(self.w.window());
            let p = s.open(field::TRACE_PACKET);
            s.uint(field::PACKET_TIMESTAMP, delta);
            s.uint(field::PACKET_SEQUENCE_ID, u64::from(seq));
            s.uint(field::PACKET_SEQUENCE_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
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
            let p = self.packet_head(&mut buf, names, slot, delta, seq, need);
            buf.extend_from_slice(&te[..n]);
            close(&mut buf, p);
            self.w.put(&buf);
            self.scratch = buf;
        }
        self.events += 1;
    }

    /// Opens an event packet in `buf` (closed by the caller with the returned position): time
    /// step, sequence, flags, and what it needs sent first on its sequence.
    fn packet_head(
        &mut self,
        buf: &mut Vec<u8>,
        names: &Names,
        slot: usize,
        delta: u64,
        seq: u32,
        need: Need,
    ) -> usize {
        let p = open(buf, field::TRACE_PACKET);
        uint(buf, field::PACKET_TIMESTAMP, delta);
        uint(buf, field::PACKET_SEQUENCE_ID, u64::from(seq));
        uint(
            buf,
            field::PACKET_SEQUENCE_FLAGS,
            SEQ_NEEDS_INCREMENTAL_STATE,
        );
        if need.defaults {
            // Read before the packet's own timestamp and track.
            let d = open(buf, field::PACKET_DEFAULTS);
            uint(buf, field::DEFAULTS_CLOCK_ID, CLOCK_SEQ);
            let e = open(buf, field::DEFAULTS_TRACK_EVENT);
            uint(
                buf,
                field::TRACK_EVENT_DEFAULTS_TRACK_UUID,
                self.waves[slot].track,
            );
            close(buf, e);
            close(buf, d);
            self.waves[slot].started = true;
        }
        self.intern(buf, names, seq, need);
        p
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

    /// Interns on sequence `seq` what the event needs and has not been sent there yet: its
    /// name, the fixed strings of `fixed` (bits) and its source location.
    fn intern(&mut self, buf: &mut Vec<u8>, names: &Names, seq: u32, need: Need) {
        let sq = &mut self.seqs[seq as usize - 1];
        let new_name = need
            .name
            .filter(|&(i, _)| !test_and_set(&mut sq.names, i as usize));
        let new_fixed = need.fixed & !sq.fixed;
        sq.fixed |= need.fixed;
        let new_loc = need
            .loc
            .filter(|&(i, _)| !test_and_set(&mut sq.locs, i as usize));
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
        if let Some((iid, f)) = new_name {
            entry(buf, field::INTERNED_EVENT_NAMES, iid, names.get(f));
        }
        if let Some((i, l)) = new_loc {
            entry(buf, field::INTERNED_ANNOTATION_STRINGS, i, l);
        }
        close(buf, d);
    }

    /// The needs of an event of `slot`'s wave.
    #[inline]
    fn need<'a>(
        &self,
        slot: usize,
        name: Option<(u64, u32)>,
        fixed: u8,
        loc: Option<(u64, &'a str)>,
    ) -> Need<'a> {
        Need {
            defaults: !self.waves[slot].started,
            name,
            fixed,
            loc,
        }
    }

    /// An instant with more payload values than a [`Short`] holds.
    fn long_instant(
        &mut self,
        names: &Names,
        slot: usize,
        ns: u64,
        p: &Point,
        iid: u64,
        need: Need,
    ) {
        let (delta, seq) = self.step(slot, ns);
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        let pk = self.packet_head(&mut buf, names, slot, delta, seq, need);
        let buf = &mut buf;
        let e = open(buf, field::PACKET_TRACK_EVENT);
        uint(buf, field::EVENT_TYPE, TYPE_INSTANT);
        uint(buf, field::EVENT_NAME_IID, iid);
        uint(buf, field::EVENT_CATEGORY_IIDS, IID_POINT);
        let arg = |buf: &mut Vec<u8>, name: u64, v: u64, f: u32| {
            let a = open(buf, field::EVENT_ANNOTATIONS);
            uint(buf, field::ANNOTATION_NAME_IID, name);
            uint(buf, f, v);
            close(buf, a);
        };
        arg(buf, IID_ID, u64::from(p.id), field::ANNOTATION_UINT);
        if let Some(v) = p.value {
            arg(buf, IID_VALUE, u64::from(v), field::ANNOTATION_UINT);
        }
        if let Some((i, _)) = need.loc {
            arg(buf, IID_SOURCE_LOC, i, field::ANNOTATION_STRING_IID);
        }
        let a = open(buf, field::EVENT_ANNOTATIONS);
        uint(buf, field::ANNOTATION_NAME_IID, IID_PAYLOAD);
        for v in p.payload {
            let x = open(buf, field::ANNOTATION_ARRAY);
            uint(buf, field::ANNOTATION_UINT, u64::from(*v));
            close(buf, x);
        }
        close(buf, a);
        close(buf, e);
        close(buf, pk);
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
    fn process(&mut self, pid: u32, _first_tid: u32, name: &str) {
        let uuid = self.next_uuid;
        self.next_uuid += 1;
        let buf = &mut self.scratch;
        buf.clear();
        let pk = open(buf, field::TRACE_PACKET);
        let t = open(buf, field::PACKET_TRACK_DESCRIPTOR);
        uint(buf, field::TRACK_UUID, uuid);
        let d = open(buf, field::TRACK_PROCESS);
        uint(buf, field::PROCESS_PID, u64::from(pid));
        wire::bytes(buf, field::PROCESS_NAME, name.as_bytes());
        close(buf, d);
        close(buf, t);
        close(buf, pk);
        self.put_scratch();
    }

    fn thread(&mut self, slot: usize, t: &Thread) {
        let uuid = self.next_uuid;
        self.next_uuid += 1;
        if self.waves.len() <= slot {
            self.waves.resize(slot + 1, SlotWave::default());
        }
        self.waves[slot] = SlotWave {
            track: uuid,
            seq: 0,
            started: false,
        };
        let buf = &mut self.scratch;
        buf.clear();
        let pk = open(buf, field::TRACE_PACKET);
        let d = open(buf, field::PACKET_TRACK_DESCRIPTOR);
        uint(buf, field::TRACK_UUID, uuid);
        let th = open(buf, field::TRACK_THREAD);
        uint(buf, field::THREAD_PID, u64::from(t.pid));
        uint(buf, field::THREAD_TID, u64::from(t.tid));
        wire::bytes(buf, field::THREAD_NAME, t.name.as_bytes());
        close(buf, th);
        close(buf, d);
        close(buf, pk);
        self.put_scratch();
    }

    fn begin(&mut self, names: &Names, slot: usize, ns: u64, frame: u32, kind: ScopeKind) {
        let cat = category_iid(kind);
        let iid = self.name_iid(frame);
        let need = self.need(slot, Some((iid, frame)), 1 << (cat - 1), None);
        self.event(names, slot, ns, need, |s| {
            let e = s.open(field::PACKET_TRACK_EVENT);
            s.uint(field::EVENT_TYPE, TYPE_SLICE_BEGIN);
            s.uint(field::EVENT_NAME_IID, iid);
            s.uint(field::EVENT_CATEGORY_IIDS, cat);
            s.close(e);
        });
    }

    fn end(&mut self, slot: usize, ns: u64) {
        // A wave's first event is never an end (a slice ends only after it began).
        let (delta, seq) = self.step(slot, ns);
        let mut s = Short::at(self.w.window());
        let p = s.open(field::TRACE_PACKET);
        s.uint(field::PACKET_TIMESTAMP, delta);
        s.uint(field::PACKET_SEQUENCE_ID, u64::from(seq));
        s.uint(field::PACKET_SEQUENCE_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
        let e = s.open(field::PACKET_TRACK_EVENT);
        s.uint(field::EVENT_TYPE, TYPE_SLICE_END);
        s.close(e);
        s.close(p);
        let n = s.n;
        self.w.advance(n);
        self.events += 1;
    }

    fn instant(&mut self, names: &Names, slot: usize, ns: u64, p: &Point) {
        let mut fixed = 1 << (IID_POINT - 1) | 1 << (IID_ID - 1);
        if p.value.is_some() {
            fixed |= 1 << (IID_VALUE - 1);
        }
        if p.source_loc.is_some() {
            fixed |= 1 << (IID_SOURCE_LOC - 1);
        }
        if !p.payload.is_empty() {
            fixed |= 1 << (IID_PAYLOAD - 1);
        }
        let loc = p.source_loc.map(|l| (self.loc_iid(l), l));
        let iid = self.name_iid(p.frame);
        let need = self.need(slot, Some((iid, p.frame)), fixed, loc);
        if p.payload.len() > SHORT_PAYLOAD {
            return self.long_instant(names, slot, ns, p, iid, need);
        }
        self.event(names, slot, ns, need, |s| {
            let e = s.open(field::PACKET_TRACK_EVENT);
            s.uint(field::EVENT_TYPE, TYPE_INSTANT);
            s.uint(field::EVENT_NAME_IID, iid);
            s.uint(field::EVENT_CATEGORY_IIDS, IID_POINT);
            let arg = |s: &mut Short, name: u64, v: u64, f: u32| {
                let a = s.open(field::EVENT_ANNOTATIONS);
                s.uint(field::ANNOTATION_NAME_IID, name);
                s.uint(f, v);
                s.close(a);
            };
            arg(s, IID_ID, u64::from(p.id), field::ANNOTATION_UINT);
            if let Some(v) = p.value {
                arg(s, IID_VALUE, u64::from(v), field::ANNOTATION_UINT);
            }
            if let Some((i, _)) = loc {
                arg(s, IID_SOURCE_LOC, i, field::ANNOTATION_STRING_IID);
            }
            if !p.payload.is_empty() {
                let a = s.open(field::EVENT_ANNOTATIONS);
                s.uint(field::ANNOTATION_NAME_IID, IID_PAYLOAD);
                for v in p.payload {
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
        let w = &mut self.waves[slot];
        if w.seq != 0 {
            let now = self.seqs[w.seq as usize - 1].now;
            self.free.push(std::cmp::Reverse((now, w.seq)));
            w.seq = 0;
        }
    }

    fn events(&self) -> u64 {
        self.events
    }
}

#[cfg(test)]
mod tests {
    use super::{wire, ProtoEncoder, SHORT_PAYLOAD};
    use crate::engine::Names;
    use crate::perfetto::{Encoder, Point, Thread};

    use super::wire::read_varint as varint;

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

    /// The packets of a trace whose packets went out in one `compressed_packets` bundle.
    fn inflated(trace: &[u8]) -> Vec<u8> {
        use std::io::Read;
        let outer = fields(trace);
        assert_eq!(outer.len(), 1);
        let bundle = fields(outer[0].1.unwrap_err());
        assert_eq!(bundle.len(), 1);
        assert_eq!(bundle[0].0, 50);
        let mut out = Vec::new();
        flate2::read::ZlibDecoder::new(bundle[0].1.unwrap_err())
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    /// The largest event packets written in place (ten-byte time step, all arguments, the most
    /// payload values) keep their one-byte lengths right, once with the interned data and once
    /// without.
    #[test]
    fn largest_short_instant_decodes() {
        let mut names = Names::default();
        let frame = names.intern("point");
        let point = Point {
            frame,
            id: u32::MAX >> 2,
            value: Some(u32::MAX),
            source_loc: Some("a.hip:1"),
            payload: &[u32::MAX; SHORT_PAYLOAD],
        };
        let mut enc = ProtoEncoder::new(Vec::new());
        let thread = Thread {
            pid: 1,
            tid: 1,
            name: "w",
        };
        enc.thread(0, &thread);
        enc.instant(&names, 0, 0, &point);
        enc.instant(&names, 0, u64::MAX, &point);
        let out = inflated(&enc.finish().unwrap());
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
