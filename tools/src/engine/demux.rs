//! Stream demultiplexing: each shader engine's records put in time order, PRIV records
//! dropped, the rest routed to the slot of their `(se, cu, simd, wave_id)`, split into wave
//! instances by occupancy, and framed into headers and the payload records after them.

use std::io::Read;

use rustc_hash::FxHashMap;
use sqtt_markers::encoding::{ENTER, EXIT_PREV};
use sqtt_markers::{DecodedMarker, MarkerEncoding};

use super::catalog::DispatchCode;
use super::clock::{DomainKey, Sample};
use super::deliver::{deliver, Header, Origin};
use super::spill::{self, Replay, Spill};
use super::{Pass, RunStats, Sink, Wave};
use crate::codeobj::MarkerClass;
use crate::diag::{kind, Progress};
use crate::error::Error;
use crate::input::{slot_key, UiDir, WaveSpan};
use crate::shaderdata::{self, Record};

/// What a pass does with the records it demultiplexes.
pub(super) type Mode = u8;
/// Delivers each header to the sink as it is read.
pub(super) const DIRECT: Mode = 0;
/// Only feeds the clock domains (a first pass whose counts and warnings are dropped).
pub(super) const SURVEY: Mode = 1;
/// Feeds the clock domains and writes what the sink is to receive to the pass's event log
/// ([`Spill`]), which [`Demux::play`] delivers once the domains are settled.
pub(super) const RECORD: Mode = 2;

/// The demultiplexer of one ui directory.
#[derive(Default)]
pub(super) struct Demux {
    slots: SlotTable,
    pub stats: RunStats,
    /// The dispatch of the first record not read for want of a code object.
    first_unread: Option<Option<u64>>,
    /// Why each shaderdata file of the last pass failed.
    pub file_errors: Vec<String>,
    /// The shaderdata files in reading order (found by the first pass).
    files: Option<Vec<(u32, std::path::PathBuf)>>,
}

/// Counts the bytes a survey pass reads of a file.
#[derive(Default)]
struct ByteCount(std::cell::Cell<u64>);
impl Progress for ByteCount {
    fn inc(&self, bytes: u64) {
        self.0.set(self.0.get() + bytes);
    }
}

/// No wave span: the record has no occupancy.
const NONE: usize = usize::MAX;

/// One `(se, cu, simd, wave_id)` stream and the wave instance it is in.
struct Slot {
    /// The current wave's span (`NONE`: no occupancy) is the one of every time in
    /// `lo..hi`, when `active`.
    lo: u64,
    hi: u64,
    active: bool,
    span: usize,
    /// The wave's code object.
    co: Option<usize>,
    /// The wave's headers may be packed (its code object's layout has a clock field and
    /// att_tool did not already restore them): how they decode.
    packed: Option<Packed>,
    /// The shift of the clock field of the wave's code object.
    clock_shift: u32,
    /// Time of the wave's last header (headers never go back in time); in a [`RECORD`] pass,
    /// of its last record when it has no code object (its start otherwise).
    last_t: u64,
    frame: Framing,
    se: u32,
    cu: u32,
    simd: u32,
    wave_id: u32,
    /// The slot's waves in occupancy, and the one the last record fell in.
    spans: Vec<WaveSpan>,
    cursor: usize,
    /// The first of `spans` not yet delivered: waves without records are delivered as the
    /// records pass them by, the rest at the end of the pass.
    next_span: usize,
    wave: Wave,
    /// The correction domain of the slot's packed headers, for the code object, cu and simd
    /// it was looked up for (a slot key shared by two of them would not tell those apart).
    domain: Option<DomainOf>,
}

/// Payload records still due after a header.
#[derive(Default)]
struct Framing {
    pending: u32,
    /// Whether the payload is kept for the sink.
    collect: bool,
    header: Option<Header>,
    payload: Vec<u32>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
struct DomainOf {
    co: usize,
    cu: u32,
    simd: u32,
    domain: usize,
}

/// A header as read, before its time is settled.
struct ReadHeader {
    marker: DecodedMarker,
    class: MarkerClass,
    payload: u32,
    /// The clock sample of a packed header (with the decoding on).
    sample: Option<Sample>,
}

impl Slot {
    fn new(se: u32, r: &Record, spans: Vec<WaveSpan>) -> Slot {
        Slot {
            lo: 0,
            hi: 0,
            active: false,
            span: NONE,
            co: None,
            packed: None,
            clock_shift: 0,
            last_t: 0,
            frame: Framing::default(),
            se,
            cu: r.cu,
            simd: r.simd,
            wave_id: r.wave_id,
            spans,
            cursor: 0,
            next_span: 0,
            wave: Wave::default(),
            domain: None,
        }
    }

    fn origin(&self, slot: usize) -> Origin<'_> {
        Origin {
            slot,
            co: self.co,
            wave: &self.wave,
        }
    }

    /// The span of the wave in occupancy that `t` falls in: the latest start at or before it
    /// (`NONE` when there is none), and the times that fall in the same one.
    fn find_span(&mut self, t: u64) -> (usize, u64, u64) {
        let spans = &self.spans;
        if spans.is_empty() {
            return (NONE, 0, u64::MAX);
        }
        let mut c = self.cursor.min(spans.len() - 1);
        if spans[c].start > t {
            // Time went back: search.
            let n = spans.partition_point(|s| s.start <= t);
            if n == 0 {
                return (NONE, 0, spans[0].start);
            }
            c = n - 1;
        } else {
            while c + 1 < spans.len() && spans[c + 1].start <= t {
                c += 1;
            }
        }
        self.cursor = c;
        let hi = spans.get(c + 1).map_or(u64::MAX, |s| s.start);
        (c, spans[c].start, hi)
    }

    /// A record at `time` that is not in the current wave's span: the wave changes.
    #[inline(never)]
    fn change_wave<S: Sink, const M: Mode>(
        &mut self,
        slot: usize,
        time: u64,
        p: &mut Pass<S>,
        stats: &mut RunStats,
    ) {
        let (span, lo, hi) = self.find_span(time);
        (self.lo, self.hi) = (lo, hi);
        if self.active && span == self.span {
            return;
        }
        if self.active {
            self.end_wave::<S, M>(slot, p);
        }
        if span != NONE {
            self.waves_without_records::<S, M>(slot, span, p, stats);
            self.next_span = self.next_span.max(span + 1);
        }
        stats.waves += 1;
        self.start_wave::<S, M>(slot, span, time, p);
    }

    /// Delivers the slot's waves in occupancy before span `upto` that no record fell in (not
    /// yet delivered): each lasts from its start to its end, as a wave with records does. One
    /// with no end has no known length and is left out, counted.
    fn waves_without_records<S: Sink, const M: Mode>(
        &mut self,
        slot: usize,
        upto: usize,
        p: &mut Pass<S>,
        stats: &mut RunStats,
    ) {
        let upto = upto.min(self.spans.len());
        for span in self.next_span..upto {
            let s = self.spans[span];
            let Some(end) = s.end else {
                if M != SURVEY {
                    let (se, cu, simd, w) = (self.se, self.cu, self.simd, self.wave_id);
                    p.diag.warn(kind::NO_LENGTH, || {
                        format!(
                            "se {se} cu {cu} simd {simd} wave {w} #{span} started at {}",
                            s.start
                        )
                    });
                }
                continue;
            };
            stats.waves += 1;
            self.start_wave::<S, M>(slot, span, s.start, p);
            self.last_t = end;
            self.end_wave::<S, M>(slot, p);
        }
        self.next_span = self.next_span.max(upto);
    }

    fn start_wave<S: Sink, const M: Mode>(
        &mut self,
        slot: usize,
        span: usize,
        time: u64,
        p: &mut Pass<S>,
    ) {
        let (wave, co) = wave_of(self, span, time, p);
        self.span = span;
        self.active = true;
        self.co = co;
        self.packed = co
            .filter(|&ci| !p.clocks.normalised[ci])
            .and_then(|ci| Packed::of(&p.catalog.encodings[ci]));
        self.clock_shift = co.map_or(0, |ci| p.catalog.encodings[ci].shader_clock_shift);
        self.frame.pending = 0;
        self.frame.header = None;
        self.last_t = wave.begin;
        self.wave = wave;
        match M {
            DIRECT => p.sink.wave_start(p.names, slot, &self.wave),
            RECORD => log(p).wave_start(slot, (span != NONE).then_some(span), time),
            _ => {}
        }
    }

    fn end_wave<S: Sink, const M: Mode>(&mut self, slot: usize, p: &mut Pass<S>) {
        if self.frame.pending > 0 && M != SURVEY {
            let w = self.wave;
            let missing = self.frame.pending;
            p.diag.warn(kind::CUT_SHORT, || {
                format!(
                    "se {} cu {} simd {} wave {} #{}: {} payload records missing",
                    w.se, w.cu, w.simd, w.wave_id, w.instance, missing
                )
            });
        }
        self.frame.pending = 0;
        self.frame.header = None;
        self.active = false;
        match M {
            DIRECT => p
                .sink
                .wave_end(p.names, slot, &self.wave, wave_end(&self.wave, self.last_t)),
            RECORD => log(p).wave_end(slot, self.last_t),
            _ => {}
        }
    }

    /// A payload record of the pending header; the header goes out with its last one.
    #[inline]
    fn take_payload<S: Sink, const M: Mode>(&mut self, slot: usize, r: &Record, p: &mut Pass<S>) {
        let f = &mut self.frame;
        f.pending -= 1;
        if f.collect {
            f.payload.push(r.value);
        }
        if f.pending > 0 {
            return;
        }
        if let Some(h) = f.header.take() {
            match M {
                DIRECT => {
                    let payload = std::mem::take(&mut self.frame.payload);
                    deliver(p, self.origin(slot), &h, &payload);
                    self.frame.payload = payload;
                }
                RECORD => log(p).payload(slot, &self.frame.payload),
                _ => {}
            }
        }
    }

    /// Decodes the header record `r` with the wave's code object `ci`, and finds the clock
    /// domain of a packed one.
    #[inline]
    fn read_header<S: Sink, const M: Mode>(
        &mut self,
        slot: usize,
        ci: usize,
        se: u32,
        r: &Record,
        p: &mut Pass<S>,
    ) -> ReadHeader {
        let co = &p.catalog.codeobjs[ci];
        // An `s_ttracedata_imm` record is never a packed header.
        let m = match self.packed {
            Some(pk) if !r.is_imm() => {
                let m = pk.decode(r.value);
                if m.is_exit() || co.knows(m.id) {
                    m
                } else {
                    decode_legacy(r.value)
                }
            }
            _ => decode_legacy(r.value),
        };
        let found = co.lookup(m.id);
        let (class, payload) = (found.class, found.payload);
        let sample = match (m.packed_clock, p.catalog.opts.decode_markers) {
            (Some(clock), true) => Some(self.sample::<S, M>(slot, ci, se, r, clock, p)),
            _ => None,
        };
        ReadHeader {
            marker: m,
            class,
            payload,
            sample,
        }
    }

    /// The clock sample of a packed header.
    #[inline]
    fn sample<S: Sink, const M: Mode>(
        &mut self,
        slot: usize,
        ci: usize,
        se: u32,
        r: &Record,
        clock: u32,
        p: &mut Pass<S>,
    ) -> Sample {
        let here = |d: &DomainOf| d.co == ci && d.cu == r.cu && d.simd == r.simd;
        let domain = match self.domain.filter(here) {
            Some(d) => d.domain,
            None => self.new_domain::<S, M>(slot, ci, se, r, p),
        };
        Sample {
            domain,
            co: ci,
            arrival: r.time,
            clock,
            clock_shift: self.clock_shift,
        }
    }

    #[cold]
    fn new_domain<S: Sink, const M: Mode>(
        &mut self,
        slot: usize,
        ci: usize,
        se: u32,
        r: &Record,
        p: &mut Pass<S>,
    ) -> usize {
        let enc = p.catalog.encodings[ci];
        let key = DomainKey {
            se,
            cu: r.cu,
            simd: r.simd,
            clock_bits: enc.shader_clock_bits,
            clock_shift: enc.shader_clock_shift,
        };
        let domain = p.clocks.domain(key, &enc);
        self.domain = Some(DomainOf {
            co: ci,
            cu: r.cu,
            simd: r.simd,
            domain,
        });
        if M == RECORD {
            log(p).domain(slot, domain);
        }
        domain
    }
}

/// How a code object's packed headers decode.
#[derive(Clone, Copy)]
struct Packed {
    id_mask: u32,
    /// Shift of the clock field down to bit 0.
    clock_down: u32,
}

impl Packed {
    /// The packed form of `enc`, when it has one.
    fn of(enc: &MarkerEncoding) -> Option<Packed> {
        enc.has_shader_clock().then(|| Packed {
            id_mask: enc.marker_id_mask(),
            clock_down: 32 - enc.shader_clock_bits,
        })
    }

    /// What [`MarkerEncoding::decode`] gives (the field of a layout with a clock).
    #[inline]
    fn decode(self, raw: u32) -> DecodedMarker {
        DecodedMarker {
            raw,
            id: (raw & self.id_mask) >> 2,
            exit_prev: raw & EXIT_PREV != 0,
            enter: raw & ENTER != 0,
            packed_clock: Some(raw >> self.clock_down),
        }
    }
}

/// What [`DecodedMarker::legacy_value`] gives.
#[inline]
fn legacy_value(m: &DecodedMarker) -> u32 {
    (m.id << 2) | (u32::from(m.exit_prev) * EXIT_PREV) | (u32::from(m.enter) * ENTER)
}

/// What `MarkerEncoding::legacy().decode(raw)` gives.
#[inline]
fn decode_legacy(raw: u32) -> DecodedMarker {
    DecodedMarker {
        raw,
        id: raw >> 2,
        exit_prev: raw & EXIT_PREV != 0,
        enter: raw & ENTER != 0,
        packed_clock: None,
    }
}

/// The pass's event log (a [`RECORD`] pass has one).
#[inline]
pub(super) fn log<'p, S>(p: &'p mut Pass<'_, S>) -> &'p mut Spill {
    p.log.as_mut().expect("a record pass has a log")
}

/// The wave that starts in `slot` with span `span` at `time`, and its code object.
fn wave_of<S>(slot: &Slot, span: usize, time: u64, p: &mut Pass<S>) -> (Wave, Option<usize>) {
    let occupancy = slot.spans.get(span).copied();
    let code = match occupancy {
        None => DispatchCode {
            co: p.catalog.single_co,
            kernel: p.catalog.no_occ_frame,
        },
        Some(s) => p.catalog.dispatch_of(s.kernel_id, p.names),
    };
    let start = occupancy.map(|s| s.start);
    let wave = Wave {
        se: slot.se,
        cu: slot.cu,
        simd: slot.simd,
        wave_id: slot.wave_id,
        instance: if occupancy.is_some() { span as u32 } else { 0 },
        dispatch: occupancy.map(|s| s.kernel_id),
        kernel: code.kernel,
        codeobj: code.co.map(|i| p.catalog.codeobjs[i].id),
        start,
        end: occupancy.and_then(|s| s.end),
        begin: start.unwrap_or(time).min(time),
    };
    (wave, code.co)
}

/// The end of a wave whose last header (or record) is at `last_t`.
fn wave_end(w: &Wave, last_t: u64) -> u64 {
    w.end.unwrap_or(last_t).max(last_t)
}

/// The time of a header: the arrival less its delay beyond its clock domain's least (when
/// packed), never before the wave's previous header, and never after the wave's end.
///
/// A record after its wave's end in occupancy belongs to that wave until its slot starts
/// another (AMD's scripts take the latest wave start at or before a record: the wave is still
/// draining), but it does not make the wave longer than occupancy says: it is placed at the
/// wave's end, and counted.
#[inline]
fn header_time<S>(
    arrival: u64,
    sample: Option<Sample>,
    last_t: &mut u64,
    wave: &Wave,
    p: &mut Pass<S>,
    stats: &mut RunStats,
) -> u64 {
    let mut time = arrival;
    if let Some(s) = sample {
        let excess = p.clocks.excess(s);
        stats.corrected += u64::from(excess > 0);
        time = arrival.saturating_sub(excess);
    }
    let mut time = time.max(*last_t);
    if let Some(end) = wave.end.filter(|&e| time > e) {
        after_end(p, wave, time, end);
        time = end.max(*last_t);
    }
    *last_t = time;
    time
}

/// Counts a record at `time`, after the end of its wave at `end`.
#[cold]
fn after_end<S>(p: &mut Pass<S>, w: &Wave, time: u64, end: u64) {
    p.diag.warn(kind::AFTER_END, || {
        format!(
            "se {} cu {} simd {} wave {} #{}: a record at {time}, {} cycles after the wave's end at {end}",
            w.se,
            w.cu,
            w.simd,
            w.wave_id,
            w.instance,
            time - end
        )
    });
}

/// A record of the slot `key` (with its shader engine), to make the slot by.
fn slot_of_key(key: u64) -> (u32, Record) {
    let (se, cu, simd, wave_id) = crate::input::slot_fields(key);
    let r = Record {
        cu,
        simd,
        wave_id,
        ..Record::default()
    };
    (se, r)
}

/// The slots of one ui directory, found by `(se, cu, simd, wave_id)`.
#[derive(Default)]
struct SlotTable {
    slots: Vec<Slot>,
    /// Slot index + 1 (0: none yet) by [`dense_index`], for the usual small fields; made on
    /// first use (zeroed pages cost nothing until touched).
    dense: Vec<u32>,
    /// The slots of keys with larger fields.
    sparse: FxHashMap<u64, u32>,
}

const DENSE_BITS: u32 = 19;

/// A small index for the usual field sizes: se < 32, cu < 128, simd < 4, wave_id < 32.
#[inline]
fn dense_index(se: u32, r: &Record) -> Option<usize> {
    // One test for the four bounds.
    ((se >> 5) | (r.cu >> 7) | (r.simd >> 2) | (r.wave_id >> 5) == 0)
        .then_some(((se << 14) | (r.cu << 7) | (r.simd << 5) | r.wave_id) as usize)
}

impl SlotTable {
    /// The slot of record `r` of shader engine `se`, made (with its occupancy spans, taken
    /// from `spans_of`) when new.
    #[inline]
    fn find(&mut self, se: u32, r: &Record, spans_of: impl FnOnce(u64) -> Vec<WaveSpan>) -> usize {
        if let Some(d) = dense_index(se, r) {
            if let Some(&i) = self.dense.get(d).filter(|i| **i != 0) {
                return i as usize - 1;
            }
        }
        self.find_slow(se, r, spans_of)
    }

    #[cold]
    fn find_slow(
        &mut self,
        se: u32,
        r: &Record,
        spans_of: impl FnOnce(u64) -> Vec<WaveSpan>,
    ) -> usize {
        let key = slot_key(se, r.cu, r.simd, r.wave_id);
        let dense = dense_index(se, r);
        if dense.is_none() {
            if let Some(&i) = self.sparse.get(&key) {
                return i as usize;
            }
        }
        let i = self.slots.len();
        self.slots.push(Slot::new(se, r, spans_of(key)));
        match dense {
            Some(d) => {
                if self.dense.is_empty() {
                    self.dense = vec![0; 1 << DENSE_BITS];
                }
                self.dense[d] = i as u32 + 1;
            }
            None => {
                self.sparse.insert(key, i as u32);
            }
        }
        i
    }
}

/// How many records back a record may be out of time order in its shader engine's files and
/// still be put in its place.
const ORDER_WINDOW: usize = 1 << 12;
/// Records handed on at once, once that many are past the window.
const ORDER_BATCH: usize = 1 << 14;

/// Puts the records of one shader engine in time order (stable: file order among equal times)
/// through a window of the latest [`ORDER_WINDOW`] records.
///
/// Records are handed on in batches: everything but the last [`ORDER_WINDOW`] records may go,
/// which is what handing on one record per record taken in would give, without moving each
/// record through the window on its own. In-order records are only appended.
#[derive(Default)]
pub(super) struct Reorder {
    /// Records not yet handed on, in time order (but for late ones); all but the last
    /// [`ORDER_WINDOW`] of them are past the window.
    buf: Vec<Record>,
    /// The latest time of the records past the window (handed on or not): a record earlier
    /// than that can no longer be put in its place.
    past: Option<u64>,
    /// Records put back in order, and the first of them.
    moved: u64,
    first_moved: String,
    /// Records earlier than ones already past the window (used where they fall).
    late: u64,
    first_late: String,
}

impl Reorder {
    #[inline]
    pub(super) fn push(&mut self, r: &Record, f: impl FnMut(&Record)) {
        match self.buf.last() {
            Some(b) if r.time < b.time => self.misplaced(r),
            _ => self.buf.push(*r),
        }
        // One record more: one more goes past the window.
        if let Some(x) = self.buf.len().checked_sub(ORDER_WINDOW + 1) {
            let t = self.buf[x].time;
            self.past = Some(self.past.map_or(t, |p| p.max(t)));
        }
        if self.buf.len() >= ORDER_WINDOW + ORDER_BATCH {
            self.hand_on(f);
        }
    }

    /// Hands on the records past the window.
    fn hand_on(&mut self, mut f: impl FnMut(&Record)) {
        let n = self.buf.len().saturating_sub(ORDER_WINDOW);
        if n == 0 {
            return;
        }
        for x in &self.buf[..n] {
            f(x);
        }
        self.buf.drain(..n);
    }

    #[cold]
    fn misplaced(&mut self, r: &Record) {
        let describe = |r: &Record, buf: &[Record]| {
            format!(
                "time {} (cu {} simd {} wave {}) after a record at {}",
                r.time,
                r.cu,
                r.simd,
                r.wave_id,
                buf.last().map(|b| b.time).unwrap_or(0)
            )
        };
        let window = self.buf.len().saturating_sub(ORDER_WINDOW);
        if self.past.is_some_and(|t| r.time < t) {
            if self.late == 0 {
                self.first_late = describe(r, &self.buf);
            }
            self.late += 1;
            // Handed on next, where it falls.
            self.buf.insert(window, *r);
            return;
        }
        if self.moved == 0 {
            self.first_moved = describe(r, &self.buf);
        }
        self.moved += 1;
        let pos = window + self.buf[window..].partition_point(|x| x.time <= r.time);
        self.buf.insert(pos, *r);
    }

    pub(super) fn flush(&mut self, mut f: impl FnMut(&Record)) {
        for x in &self.buf {
            f(x);
        }
        self.buf.clear();
        self.past = None;
    }
}

/// The shaderdata files of `ui`, shader engine by shader engine, each engine's chunks in the
/// order of their first records' times: a chunk listed out of place (as plain names carry no
/// begin time) is a whole file of records out of order, which no window of records can put
/// back. When a chunk's first time cannot be read, the engine's chunks keep the order
/// [`UiDir`] gives (by listed begin time, then as listed).
fn reading_order(ui: &UiDir) -> Vec<(u32, std::path::PathBuf)> {
    let mut out = Vec::with_capacity(ui.shaderdata.len());
    for chunks in ui.shaderdata.chunk_by(|a, b| a.0 == b.0) {
        let firsts: Option<Vec<u64>> = if chunks.len() > 1 {
            chunks
                .iter()
                .map(|(_, p)| shaderdata::first_time(p))
                .collect()
        } else {
            None
        };
        let mut chunks: Vec<_> = chunks.iter().cloned().enumerate().collect();
        if let Some(t) = firsts {
            // Stable: chunks starting at the same time stay as listed.
            chunks.sort_by_key(|(i, _)| t[*i]);
        }
        out.extend(chunks.into_iter().map(|(_, c)| c));
    }
    out
}

struct CountingReader<'p, R> {
    inner: R,
    progress: &'p dyn Progress,
}

impl<R: Read> Read for CountingReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.progress.inc(n as u64);
        Ok(n)
    }
}

impl Demux {
    /// Ready for another pass over the same records (the slots and their spans stay).
    pub fn reset(&mut self) {
        for s in &mut self.slots.slots {
            s.cursor = 0;
            s.next_span = 0;
            s.span = NONE;
            s.active = false;
            s.frame.pending = 0;
            s.frame.header = None;
        }
        self.stats = RunStats::default();
    }

    /// One pass over the shaderdata files of `ui`, shader engine by shader engine.
    pub fn pass<S: Sink, const M: Mode>(
        &mut self,
        ui: &UiDir,
        p: &mut Pass<S>,
        progress: &dyn Progress,
    ) -> Result<(), Error> {
        let mut counts = RunStats::default();
        let mut file_errors: Vec<String> = Vec::new();
        let mut order = Reorder::default();
        let mut cur_se = None;
        let files = self.files.get_or_insert_with(|| reading_order(ui)).clone();
        for (se, path) in &files {
            let se = *se;
            if let Some(prev) = cur_se.filter(|p| *p != se) {
                order.flush(|r| self.record::<S, M>(p, prev, r));
            }
            cur_se = Some(se);
            // A record pass passes the progress on in its log.
            let bytes = ByteCount::default();
            let counted: &dyn Progress = if M == RECORD { &bytes } else { progress };
            let res = crate::input::open_input(
                path,
                crate::input::MAX_STREAMED_JSON,
                "a shaderdata file",
            )
            .and_then(|file| {
                let reader = std::io::BufReader::with_capacity(
                    1 << 20,
                    CountingReader {
                        inner: file,
                        progress: counted,
                    },
                );
                shaderdata::read_from(reader, path, |r| {
                    order.push(r, |x| self.record::<S, M>(p, se, x))
                })
            });
            if M == RECORD {
                log(p).progress(bytes.0.get());
            }
            match res {
                Ok(st) => {
                    counts.files_ok += 1;
                    counts.records += st.records;
                }
                Err(e) => {
                    if let Some(records) = e.records_before_fault() {
                        counts.records += records;
                        if records > 0 {
                            counts.files_ok += 1;
                        } else {
                            counts.files_bad += 1;
                        }
                    } else {
                        counts.files_bad += 1;
                    }
                    file_errors.push(e.to_string());
                }
            }
        }
        if let Some(se) = cur_se {
            order.flush(|r| self.record::<S, M>(p, se, r));
        }
        self.finish::<S, M>(ui, p, counts, &order, file_errors);
        Ok(())
    }

    /// The pass's file counts (`counts`: files read and bad, records) and warnings, and the end
    /// of every wave still open.
    pub(super) fn finish<S: Sink, const M: Mode>(
        &mut self,
        ui: &UiDir,
        p: &mut Pass<S>,
        counts: RunStats,
        order: &Reorder,
        file_errors: Vec<String>,
    ) {
        self.stats.files_ok += counts.files_ok;
        self.stats.files_bad += counts.files_bad;
        self.stats.records += counts.records;
        let local = &mut p.diag;
        for e in &file_errors {
            local.warn(kind::BAD_FILE, || e.clone());
        }
        self.file_errors = file_errors;
        local.warn_n(kind::OUT_OF_ORDER, order.moved, || {
            order.first_moved.clone()
        });
        local.warn_n(kind::TOO_LATE, order.late, || order.first_late.clone());
        if let Some(d) = self.first_unread {
            let c = &*p.catalog;
            local.warn_n(kind::NO_CODEOBJ, self.stats.unread, || {
                let what = match d {
                    Some(kid) => {
                        let name = c.occ.dispatches.get(&kid).cloned().unwrap_or_default();
                        match c.occ.dispatch_codeobj.get(&kid) {
                            Some(co) => format!("dispatch {kid} ({name}) of code object {co}"),
                            None => format!("dispatch {kid} ({name})"),
                        }
                    }
                    None => "a wave with no occupancy".to_string(),
                };
                format!("{}: {what}; {}", ui.path.display(), c.missing_hint)
            });
        }
        for (i, slot) in self.slots.slots.iter_mut().enumerate() {
            if slot.active {
                slot.end_wave::<S, M>(i, p);
            }
            slot.waves_without_records::<S, M>(i, usize::MAX, p, &mut self.stats);
        }
        // Slots whose waves left no record at all.
        let mut unseen: Vec<u64> = p.catalog.occ.slots.keys().copied().collect();
        unseen.sort_unstable();
        for key in unseen {
            let spans = p.catalog.occ.slots.remove(&key).unwrap_or_default();
            let (se, r) = slot_of_key(key);
            let n = self.slots.slots.len();
            let i = self.slots.find(se, &r, |_| spans);
            if i == n {
                self.slots.slots[i].waves_without_records::<S, M>(
                    i,
                    usize::MAX,
                    p,
                    &mut self.stats,
                );
            }
        }
    }

    /// One record, in time order within its shader engine.
    #[inline]
    pub(super) fn record<S: Sink, const M: Mode>(&mut self, p: &mut Pass<S>, se: u32, r: &Record) {
        if r.is_priv() {
            self.stats.priv_records += 1;
            return;
        }
        let occ = &mut p.catalog.occ;
        let idx = self
            .slots
            .find(se, r, |key| occ.slots.remove(&key).unwrap_or_default());
        let slot = &mut self.slots.slots[idx];
        if !(slot.active && slot.lo <= r.time && r.time < slot.hi) {
            slot.change_wave::<S, M>(idx, r.time, p, &mut self.stats);
        }
        if slot.span == NONE && M != SURVEY {
            p.diag.warn(kind::NO_OCCUPANCY, || {
                format!(
                    "se {} cu {} simd {} wave {} at time {}",
                    se, r.cu, r.simd, r.wave_id, r.time
                )
            });
        }
        let Some(ci) = slot.co else {
            // Which records are payload is unknown without the funcmap: none is read, but the
            // wave still lasts until its last record (within its occupancy).
            self.stats.unread += 1;
            let t = match slot.wave.end {
                Some(end) if r.time > end => {
                    if M != SURVEY {
                        after_end(p, &slot.wave, r.time, end);
                    }
                    end
                }
                _ => r.time,
            };
            slot.last_t = slot.last_t.max(t);
            self.first_unread.get_or_insert(slot.wave.dispatch);
            return;
        };
        if slot.frame.pending > 0 {
            self.stats.payload_records += 1;
            slot.take_payload::<S, M>(idx, r, p);
            return;
        }
        self.stats.headers += 1;
        let h = slot.read_header::<S, M>(idx, ci, se, r, p);
        let time = match M {
            DIRECT => {
                let w = &slot.wave;
                header_time(r.time, h.sample, &mut slot.last_t, w, p, &mut self.stats)
            }
            _ => {
                if let Some(s) = h.sample {
                    p.clocks.survey(s);
                }
                if M == RECORD {
                    log(p).header(idx, h.marker.packed_clock.is_some(), r.value, r.time);
                }
                r.time
            }
        };
        let h = header(h, time, r.time, p.catalog.opts.decode_markers);
        if h.payload > 0 {
            let f = &mut slot.frame;
            f.pending = h.payload;
            f.collect = M != SURVEY
                && match h.class {
                    MarkerClass::Address(_) => p.want_addr,
                    _ => h.payload <= 64,
                };
            f.payload.clear();
            f.header = Some(h);
            return;
        }
        if M == DIRECT {
            deliver(p, slot.origin(idx), &h, &[]);
        }
    }

    /// Delivers the events a [`RECORD`] pass logged, with the header times corrected by the
    /// settled clock domains.
    pub fn play<S: Sink>(
        &mut self,
        ui: &UiDir,
        mut events: Replay,
        p: &mut Pass<S>,
        progress: &dyn Progress,
    ) -> Result<(), Error> {
        #[derive(Default)]
        struct Playing {
            wave: Wave,
            co: Option<usize>,
            /// How the wave's code object's packed headers decode, and whether their times
            /// are corrected (not when att_tool already did).
            packed: Option<Packed>,
            corrects: bool,
            clock_shift: u32,
            domain: usize,
            last_t: u64,
            pending: Option<Header>,
        }
        let mut waves: Vec<Playing> = Vec::new();
        waves.resize_with(self.slots.slots.len(), Playing::default);
        let mut values: Vec<u32> = Vec::new();
        let io = |error| Error::Io {
            path: ui.path.clone(),
            error,
        };
        let broken = || io(spill::broken());
        let decode = p.catalog.opts.decode_markers;
        while let Some(ev) = events.next().map_err(io)? {
            if ev.kind == spill::PROGRESS {
                progress.inc(ev.double);
                continue;
            }
            let Some(w) = waves.get_mut(ev.slot) else {
                return Err(broken());
            };
            match ev.kind {
                spill::HEADER => {
                    let (Some(ci), raw, arrival) = (w.co, ev.word, ev.double) else {
                        return Err(broken());
                    };
                    let marker = match (ev.packed, w.packed) {
                        (false, _) => decode_legacy(raw),
                        (true, Some(pk)) => pk.decode(raw),
                        (true, None) => return Err(broken()),
                    };
                    let found = p.catalog.codeobjs[ci].lookup(marker.id);
                    let (class, payload) = (found.class, found.payload);
                    let sample = match marker.packed_clock {
                        Some(clock) if decode && w.corrects => Some(Sample {
                            domain: w.domain,
                            co: ci,
                            arrival,
                            clock,
                            clock_shift: w.clock_shift,
                        }),
                        _ => None,
                    };
                    let time =
                        header_time(arrival, sample, &mut w.last_t, &w.wave, p, &mut self.stats);
                    let read = ReadHeader {
                        // Read as a legacy header when the direct pass would.
                        marker: DecodedMarker {
                            packed_clock: marker.packed_clock.filter(|_| w.corrects),
                            ..marker
                        },
                        class,
                        payload,
                        sample,
                    };
                    let hd = header(read, time, arrival, decode);
                    if hd.payload > 0 {
                        w.pending = Some(hd);
                    } else {
                        let at = Origin {
                            slot: ev.slot,
                            co: w.co,
                            wave: &w.wave,
                        };
                        deliver(p, at, &hd, &[]);
                    }
                }
                spill::DOMAIN => w.domain = ev.word as usize,
                spill::PAYLOAD => {
                    values.clear();
                    values.extend(
                        ev.values
                            .chunks_exact(4)
                            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
                    );
                    if let Some(h) = w.pending.take() {
                        let at = Origin {
                            slot: ev.slot,
                            co: w.co,
                            wave: &w.wave,
                        };
                        deliver(p, at, &h, &values);
                    }
                }
                spill::WAVE_START => {
                    let s = self.slots.slots.get(ev.slot).ok_or_else(broken)?;
                    let span = if ev.word == u32::MAX {
                        NONE
                    } else {
                        ev.word as usize
                    };
                    let (wave, co) = wave_of(s, span, ev.double, p);
                    let enc = co.map(|ci| p.catalog.encodings[ci]);
                    w.wave = wave;
                    w.co = co;
                    // The first pass read every packed header in the packed form.
                    w.packed = enc.as_ref().and_then(Packed::of);
                    w.corrects = co.is_some_and(|ci| !p.clocks.normalised[ci]);
                    w.clock_shift = enc.map_or(0, |e| e.shader_clock_shift);
                    w.last_t = wave.begin;
                    w.pending = None;
                    p.sink.wave_start(p.names, ev.slot, &w.wave);
                }
                spill::WAVE_END => {
                    w.pending = None;
                    let end = wave_end(&w.wave, w.last_t.max(ev.double));
                    p.sink.wave_end(p.names, ev.slot, &w.wave, end);
                }
                _ => return Err(broken()),
            }
        }
        Ok(())
    }
}

/// A header ready for delivery.
#[inline]
fn header(h: ReadHeader, time: u64, arrival: u64, decode_markers: bool) -> Header {
    Header {
        marker: h.marker,
        class: h.class,
        time,
        arrival,
        value: if decode_markers {
            legacy_value(&h.marker)
        } else {
            h.marker.raw
        },
        payload: h.payload,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

    /// The demultiplexer's own decoding gives what sqtt-markers' does, for every layout.
    #[test]
    fn header_decoding_is_the_markers_crates() {
        use sqtt_markers::encoding::decode_marker_value_with;
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let known = |id: u32| id.is_multiple_of(3);
        for bits in 0..31 {
            for shift in [0, 1, 4, 8, 20] {
                let enc = MarkerEncoding::packed(bits, shift);
                for _ in 0..2000 {
                    let raw = match rng.next() % 4 {
                        0 => rng.next() as u32 & 0xff,
                        1 => 1,
                        _ => rng.next() as u32,
                    };
                    let want = decode_marker_value_with(raw, &enc, known);
                    let got = match Packed::of(&enc) {
                        Some(pk) => {
                            let m = pk.decode(raw);
                            if m.is_exit() || known(m.id) {
                                m
                            } else {
                                decode_legacy(raw)
                            }
                        }
                        None => decode_legacy(raw),
                    };
                    assert_eq!(got, want, "raw {raw:#x} bits {bits} shift {shift}");
                    assert_eq!(legacy_value(&got), got.legacy_value());
                }
            }
        }
    }

    /// The window as defined: each record goes in (in place, or at the front when earlier than
    /// any already handed on), and the oldest goes out once more than the window is held.
    fn one_at_a_time(records: &[Record]) -> (Vec<u64>, u64, u64) {
        let mut buf = std::collections::VecDeque::<Record>::new();
        let (mut out, mut last_out, mut moved, mut late) = (Vec::new(), None, 0, 0);
        for r in records {
            match buf.back() {
                Some(b) if r.time < b.time => {
                    if last_out.is_some_and(|t| r.time < t) {
                        late += 1;
                        buf.push_front(*r);
                    } else {
                        moved += 1;
                        let pos = buf.partition_point(|x| x.time <= r.time);
                        buf.insert(pos, *r);
                    }
                }
                _ => buf.push_back(*r),
            }
            if buf.len() > ORDER_WINDOW {
                let x = buf.pop_front().unwrap();
                last_out = Some(last_out.map_or(x.time, |t: u64| t.max(x.time)));
                out.push(x.value as u64);
            }
        }
        out.extend(buf.iter().map(|x| x.value as u64));
        (out, moved, late)
    }

    #[test]
    fn batches_hand_on_what_one_record_at_a_time_would() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let mut seen = (0, 0);
        for case in 0..40 {
            let n = 1000 + (rng.next() % 60_000) as usize;
            let mut t = 1_000_000u64;
            let records: Vec<Record> = (0..n)
                .map(|i| {
                    t += rng.next() % 4;
                    // A chunk's worth of records from long before (a chunk file read out of
                    // its place): each is late, never put back among those already past.
                    if case % 4 == 3 && i == n / 2 {
                        t -= 900_000;
                    }
                    // Mostly in order; now and then a record from a little or a long way back.
                    let time = match rng.next() % 200 {
                        0 => t.saturating_sub(rng.next() % 50),
                        1 if case % 2 == 0 => t.saturating_sub(rng.next() % 100_000),
                        _ => t,
                    };
                    Record {
                        time,
                        value: i as u32,
                        ..Record::default()
                    }
                })
                .collect();
            let (want, moved, late) = one_at_a_time(&records);
            let mut order = Reorder::default();
            let mut got = Vec::new();
            for r in &records {
                order.push(r, |x| got.push(x.value as u64));
            }
            order.flush(|x| got.push(x.value as u64));
            assert_eq!((order.moved, order.late), (moved, late), "case {case}");
            assert_eq!(got, want, "case {case}");
            seen.0 += late;
            seen.1 += moved;
        }
        // The cases do reach both slow paths.
        assert!(seen.0 > 100 && seen.1 > 100, "{seen:?}");
    }
}
