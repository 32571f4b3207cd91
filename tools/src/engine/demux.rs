//! Stream demultiplexing: each shader engine's records put in time order, PRIV records
//! dropped, the rest routed to the slot of their `(se, cu, simd, wave_id)`, split into wave
//! instances by occupancy, and framed into headers and the payload records after them.

use std::io::Read;

use rustc_hash::FxHashMap;
use sqtt_markers::encoding::decode_marker_value_with;
use sqtt_markers::MarkerEncoding;

use super::catalog::DispatchCode;
use super::clock::{DomainKey, Sample};
use super::deliver::{deliver, Header, Origin};
use super::{Pass, RunStats, Sink, Wave};
use crate::codeobj::MarkerClass;
use crate::diag::{kind, Progress};
use crate::error::Error;
use crate::input::{slot_key, UiDir, WaveSpan};
use crate::shaderdata::{self, Record};

/// No wave span: the record has no occupancy.
const NONE: usize = usize::MAX;

/// The demultiplexer of one ui directory; `SURVEY` passes only feed the clock domains.
#[derive(Default)]
pub(super) struct Demux {
    slots: SlotTable,
    pub stats: RunStats,
    /// The dispatch of the first record not read for want of a code object.
    first_unread: Option<Option<u64>>,
    /// Why each shaderdata file of the last pass failed.
    pub file_errors: Vec<String>,
    /// Set before a survey pass: the records it reads, for the second pass to replay.
    pub spill: Option<Spill>,
}

/// The records a survey pass read, so that the second pass does not parse the JSON again: per
/// shaderdata file what reading it gave, and the records themselves in a temporary file (a
/// fixed 28 bytes each), so memory stays flat in the trace size.
pub(super) struct Spill {
    file: std::io::BufWriter<std::fs::File>,
    files: std::collections::VecDeque<Spilled>,
}

/// What reading one shaderdata file gave in the survey pass: its records (in the spill file),
/// the bytes read, and how the read ended (an open error too).
struct Spilled {
    records: u64,
    bytes: u64,
    result: Result<shaderdata::ReadStats, Error>,
}

const SPILLED_RECORD: usize = 28;

impl Spill {
    /// A spill in a fresh temporary file (unlinked: it goes when dropped).
    pub fn new() -> std::io::Result<Spill> {
        Ok(Spill {
            file: std::io::BufWriter::with_capacity(1 << 20, tempfile::tempfile()?),
            files: Default::default(),
        })
    }

    fn write(&mut self, r: &Record) -> std::io::Result<()> {
        use std::io::Write;
        let mut b = [0u8; SPILLED_RECORD];
        b[..8].copy_from_slice(&r.time.to_le_bytes());
        for (i, v) in [r.value, r.cu, r.simd, r.wave_id, r.flags]
            .iter()
            .enumerate()
        {
            b[8 + 4 * i..12 + 4 * i].copy_from_slice(&v.to_le_bytes());
        }
        self.file.write_all(&b)
    }

    /// The spilled records, from the start, for the second pass.
    fn replay(
        self,
    ) -> std::io::Result<(
        std::io::BufReader<std::fs::File>,
        std::collections::VecDeque<Spilled>,
    )> {
        use std::io::Seek;
        let mut f = self.file.into_inner().map_err(|e| e.into_error())?;
        f.seek(std::io::SeekFrom::Start(0))?;
        Ok((std::io::BufReader::with_capacity(1 << 20, f), self.files))
    }
}

fn read_spilled<R: Read>(r: &mut R) -> std::io::Result<Record> {
    let mut b = [0u8; SPILLED_RECORD];
    r.read_exact(&mut b)?;
    let u = |i: usize| u32::from_le_bytes(b[8 + 4 * i..12 + 4 * i].try_into().expect("4 bytes"));
    Ok(Record {
        time: u64::from_le_bytes(b[..8].try_into().expect("8 bytes")),
        value: u(0),
        cu: u(1),
        simd: u(2),
        wave_id: u(3),
        flags: u(4),
    })
}

/// Counts the bytes a survey pass reads of a file.
#[derive(Default)]
struct ByteCount(std::cell::Cell<u64>);
impl Progress for ByteCount {
    fn inc(&self, bytes: u64) {
        self.0.set(self.0.get() + bytes);
    }
}

/// One `(se, cu, simd, wave_id)` stream and the wave instance it is in.
struct Slot {
    se: u32,
    cu: u32,
    simd: u32,
    wave_id: u32,
    /// The slot's waves in occupancy, and the one the last record fell in.
    spans: Vec<WaveSpan>,
    cursor: usize,
    /// The current wave's span (`NONE`: no occupancy), when `active`.
    span: usize,
    active: bool,
    wave: Wave,
    /// The wave's code object.
    co: Option<usize>,
    /// The wave's headers may be packed: its code object's layout has a clock field and
    /// att_tool did not already restore them.
    packed_form: bool,
    /// Time of the wave's last header (headers never go back in time).
    last_t: u64,
    frame: Framing,
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

impl Slot {
    fn new(se: u32, r: &Record, spans: Vec<WaveSpan>) -> Slot {
        Slot {
            se,
            cu: r.cu,
            simd: r.simd,
            wave_id: r.wave_id,
            spans,
            cursor: 0,
            span: NONE,
            active: false,
            wave: Wave::default(),
            co: None,
            packed_form: false,
            last_t: 0,
            frame: Framing::default(),
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

    /// The span of the wave in occupancy that `t` falls in: the latest start at or before it.
    fn find_span(&mut self, t: u64) -> usize {
        let spans = &self.spans;
        if spans.is_empty() {
            return NONE;
        }
        let mut c = self.cursor.min(spans.len() - 1);
        if spans[c].start > t {
            // Time went back: search.
            let n = spans.partition_point(|s| s.start <= t);
            if n == 0 {
                return NONE;
            }
            c = n - 1;
        } else {
            while c + 1 < spans.len() && spans[c + 1].start <= t {
                c += 1;
            }
        }
        self.cursor = c;
        c
    }

    fn start_wave<S: Sink, const SURVEY: bool>(
        &mut self,
        slot: usize,
        span: usize,
        time: u64,
        p: &mut Pass<S>,
    ) {
        let occupancy = self.spans.get(span).copied();
        let code = match occupancy {
            None => DispatchCode {
                co: p.catalog.single_co,
                kernel: p.catalog.no_occ_frame,
            },
            Some(s) => p.catalog.dispatch_of(s.kernel_id, p.names),
        };
        let start = occupancy.map(|s| s.start);
        self.span = span;
        self.active = true;
        self.co = code.co;
        self.packed_form = code.co.is_some_and(|ci| {
            p.catalog.encodings[ci].has_shader_clock() && !p.clocks.normalised[ci]
        });
        self.frame.pending = 0;
        self.frame.header = None;
        self.last_t = start.unwrap_or(time).min(time);
        self.wave = Wave {
            se: self.se,
            cu: self.cu,
            simd: self.simd,
            wave_id: self.wave_id,
            instance: if occupancy.is_some() { span as u32 } else { 0 },
            dispatch: occupancy.map(|s| s.kernel_id),
            kernel: code.kernel,
            codeobj: code.co.map(|i| p.catalog.codeobjs[i].id),
            start,
            end: occupancy.and_then(|s| s.end),
            begin: self.last_t,
        };
        if !SURVEY {
            p.sink.wave_start(p.names, slot, &self.wave);
        }
    }

    fn end_wave<S: Sink, const SURVEY: bool>(&mut self, slot: usize, p: &mut Pass<S>) {
        if self.frame.pending > 0 && !SURVEY {
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
        let end = self.wave.end.unwrap_or(self.last_t).max(self.last_t);
        if !SURVEY {
            p.sink.wave_end(p.names, slot, &self.wave, end);
        }
    }

    /// A payload record of the pending header; the header goes out with its last one.
    fn take_payload<S: Sink, const SURVEY: bool>(
        &mut self,
        slot: usize,
        r: &Record,
        p: &mut Pass<S>,
    ) {
        let f = &mut self.frame;
        f.pending -= 1;
        if f.collect {
            f.payload.push(r.value);
        }
        if f.pending > 0 {
            return;
        }
        if let Some(h) = f.header.take() {
            if !SURVEY {
                let payload = std::mem::take(&mut self.frame.payload);
                deliver(p, self.origin(slot), &h, &payload);
                self.frame.payload = payload;
            }
        }
    }

    /// Decodes the header record `r` with the wave's code object `ci`, and corrects its time
    /// when it is packed.
    fn read_header<S: Sink, const SURVEY: bool>(
        &mut self,
        ci: usize,
        se: u32,
        r: &Record,
        p: &mut Pass<S>,
        stats: &mut RunStats,
    ) -> Header {
        let co = &p.catalog.codeobjs[ci];
        // An `s_ttracedata_imm` record is never a packed header.
        let m = if self.packed_form && !r.is_imm() {
            decode_marker_value_with(r.value, &co.encoding, |id| co.knows(id))
        } else {
            MarkerEncoding::legacy().decode(r.value)
        };
        let found = co.lookup(m.id);
        let mut time = r.time;
        if let (Some(clock), true) = (m.packed_clock, p.catalog.opts.decode_markers) {
            let enc = p.catalog.encodings[ci];
            let here = |d: &DomainOf| d.co == ci && d.cu == r.cu && d.simd == r.simd;
            let domain = match self.domain.filter(here) {
                Some(d) => d.domain,
                None => {
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
                    domain
                }
            };
            let sample = Sample {
                domain,
                co: ci,
                arrival: r.time,
                clock,
                clock_shift: enc.shader_clock_shift,
            };
            if SURVEY {
                p.clocks.survey(sample);
            } else {
                let excess = p.clocks.excess(sample);
                stats.corrected += u64::from(excess > 0);
                time = r.time.saturating_sub(excess);
            }
        }
        let time = time.max(self.last_t);
        self.last_t = time;
        Header {
            marker: m,
            class: found.class,
            time,
            arrival: r.time,
            value: if p.catalog.opts.decode_markers {
                m.legacy_value()
            } else {
                r.value
            },
            payload: found.payload,
        }
    }
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
    (se < 32 && r.cu < 128 && r.simd < 4 && r.wave_id < 32)
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
struct Reorder {
    /// Records not yet handed on, in time order; all but the last [`ORDER_WINDOW`] of them are
    /// past the window.
    buf: Vec<Record>,
    /// Time of the last record handed on before `buf`.
    last_out: Option<u64>,
    /// Records put back in order, and the first of them.
    moved: u64,
    first_moved: String,
    /// Records earlier than ones already past the window (used where they fall).
    late: u64,
    first_late: String,
}

impl Reorder {
    #[inline]
    fn push(&mut self, r: &Record, f: impl FnMut(&Record)) {
        match self.buf.last() {
            Some(b) if r.time < b.time => self.misplaced(r),
            _ => self.buf.push(*r),
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
        self.last_out = Some(self.buf[n - 1].time);
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
        let last_out = match window {
            0 => self.last_out,
            w => Some(self.buf[w - 1].time),
        };
        if last_out.is_some_and(|t| r.time < t) {
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

    fn flush(&mut self, mut f: impl FnMut(&Record)) {
        for x in &self.buf {
            f(x);
        }
        self.buf.clear();
        self.last_out = None;
    }
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
            s.span = NONE;
            s.active = false;
            s.frame.pending = 0;
            s.frame.header = None;
        }
        self.stats = RunStats::default();
    }

    /// One pass over the shaderdata files of `ui`, shader engine by shader engine.
    pub fn pass<S: Sink, const SURVEY: bool>(
        &mut self,
        ui: &UiDir,
        p: &mut Pass<S>,
        progress: &dyn Progress,
    ) -> Result<(), Error> {
        let mut counts = RunStats::default();
        let mut file_errors: Vec<String> = Vec::new();
        let mut order = Reorder::default();
        let mut cur_se = None;
        // A survey pass spills what it reads; the pass after it replays that (when the spill
        // fails part-way, the survey pass simply reads everything again).
        let mut spill = if SURVEY { self.spill.take() } else { None };
        let mut replay = match (SURVEY, self.spill.take()) {
            (false, Some(sp)) => sp.replay().ok(),
            _ => None,
        };
        for (se, path) in &ui.shaderdata {
            let se = *se;
            if let Some(prev) = cur_se.filter(|p| *p != se) {
                order.flush(|r| self.record::<S, SURVEY>(p, prev, r));
            }
            cur_se = Some(se);
            let res = if let Some((reader, files)) = replay.as_mut() {
                match files.pop_front() {
                    Some(Spilled {
                        records,
                        bytes,
                        result,
                    }) => {
                        for _ in 0..records {
                            let Ok(r) = read_spilled(reader) else { break };
                            order.push(&r, |x| self.record::<S, SURVEY>(p, se, x));
                        }
                        progress.inc(bytes);
                        result
                    }
                    None => Err(Error::Malformed {
                        path: path.clone(),
                        reason: "the survey pass did not read this file".into(),
                    }),
                }
            } else {
                let bytes = ByteCount::default();
                let counted: &dyn Progress = if spill.is_some() { &bytes } else { progress };
                let mut records = 0u64;
                let mut spill_ok = true;
                let result = crate::input::open_input(
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
                    // Two loops, so that a pass without a spill pays nothing for it.
                    match spill.as_mut() {
                        Some(sp) => shaderdata::read_from(reader, path, |r| {
                            spill_ok &= sp.write(r).is_ok();
                            records += 1;
                            order.push(r, |x| self.record::<S, SURVEY>(p, se, x))
                        }),
                        None => shaderdata::read_from(reader, path, |r| {
                            order.push(r, |x| self.record::<S, SURVEY>(p, se, x))
                        }),
                    }
                });
                if !spill_ok {
                    spill = None;
                }
                if let Some(sp) = spill.as_mut() {
                    // Counted in the pass that replays it (a survey pass's counts and
                    // warnings are dropped).
                    sp.files.push_back(Spilled {
                        records,
                        bytes: bytes.0.get(),
                        result,
                    });
                    continue;
                }
                result
            };
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
        self.spill = spill;
        if let Some(se) = cur_se {
            order.flush(|r| self.record::<S, SURVEY>(p, se, r));
        }
        self.stats.files_ok += counts.files_ok;
        self.stats.files_bad += counts.files_bad;
        self.stats.records += counts.records;
        self.finish::<S, SURVEY>(ui, p, &order, file_errors);
        Ok(())
    }

    /// The pass's warnings, and the end of every wave still open.
    fn finish<S: Sink, const SURVEY: bool>(
        &mut self,
        ui: &UiDir,
        p: &mut Pass<S>,
        order: &Reorder,
        file_errors: Vec<String>,
    ) {
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
                slot.end_wave::<S, SURVEY>(i, p);
            }
        }
    }

    /// One record, in time order within its shader engine.
    #[inline]
    fn record<S: Sink, const SURVEY: bool>(&mut self, p: &mut Pass<S>, se: u32, r: &Record) {
        if r.is_priv() {
            self.stats.priv_records += 1;
            return;
        }
        let occ = &mut p.catalog.occ;
        let idx = self
            .slots
            .find(se, r, |key| occ.slots.remove(&key).unwrap_or_default());
        let slot = &mut self.slots.slots[idx];
        let span = slot.find_span(r.time);
        if !slot.active || span != slot.span {
            if slot.active {
                slot.end_wave::<S, SURVEY>(idx, p);
            }
            self.stats.waves += 1;
            slot.start_wave::<S, SURVEY>(idx, span, r.time, p);
        }
        if span == NONE && !SURVEY {
            p.diag.warn(kind::NO_OCCUPANCY, || {
                format!(
                    "se {} cu {} simd {} wave {} at time {}",
                    se, r.cu, r.simd, r.wave_id, r.time
                )
            });
        }
        let Some(ci) = slot.co else {
            // Which records are payload is unknown without the funcmap: none is read, but the
            // wave still lasts until its last record.
            self.stats.unread += 1;
            slot.last_t = slot.last_t.max(r.time);
            self.first_unread.get_or_insert(slot.wave.dispatch);
            return;
        };
        if slot.frame.pending > 0 {
            self.stats.payload_records += 1;
            slot.take_payload::<S, SURVEY>(idx, r, p);
            return;
        }
        self.stats.headers += 1;
        let h = slot.read_header::<S, SURVEY>(ci, se, r, p, &mut self.stats);
        if h.payload > 0 {
            let f = &mut slot.frame;
            f.pending = h.payload;
            f.collect = !SURVEY
                && match h.class {
                    MarkerClass::Address(_) => p.want_addr,
                    _ => h.payload <= 64,
                };
            f.payload.clear();
            f.header = Some(h);
            return;
        }
        if !SURVEY {
            deliver(p, slot.origin(idx), &h, &[]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The window as defined: each record goes in (in place, or at the front when earlier than
    /// one already handed on), and the oldest goes out once more than the window is held.
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
                last_out = Some(x.time);
                out.push(x.value as u64);
            }
        }
        out.extend(buf.iter().map(|x| x.value as u64));
        (out, moved, late)
    }

    #[test]
    fn batches_hand_on_what_one_record_at_a_time_would() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut seen = (0, 0);
        for case in 0..40 {
            let n = 1000 + (next() % 60_000) as usize;
            let mut t = 1_000_000u64;
            let records: Vec<Record> = (0..n)
                .map(|i| {
                    t += next() % 4;
                    // Mostly in order; now and then a record from a little or a long way back.
                    let time = match next() % 200 {
                        0 => t.saturating_sub(next() % 50),
                        1 if case % 2 == 0 => t.saturating_sub(next() % 100_000),
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
