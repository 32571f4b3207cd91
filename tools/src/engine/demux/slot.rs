//! One `(se, cu, simd, wave_id)` stream: the wave it is in, and its headers read and framed.

use sqtt_markers::DecodedMarker;

use super::packed::{decode_legacy, Packed};
use super::wave::{wave_end, wave_of};
use super::{log, Mode, DIRECT, RECORD, SURVEY};
use crate::codeobj::MarkerClass;
use crate::diag::kind;
use crate::engine::clock::{DomainKey, Sample};
use crate::engine::deliver::{deliver, Header, Origin};
use crate::engine::{Pass, RunStats, Sink, Wave};
use crate::input::WaveSpan;
use crate::shaderdata::Record;

/// No wave span: the record has no occupancy.
pub(super) const NONE: usize = usize::MAX;

/// One `(se, cu, simd, wave_id)` stream and the wave instance it is in.
pub(super) struct Slot {
    /// The current wave's span (`NONE`: no occupancy) is the one of every time in
    /// `lo..hi`, when `active`.
    pub(super) lo: u64,
    pub(super) hi: u64,
    pub(super) active: bool,
    pub(super) span: usize,
    /// The wave's code object.
    pub(super) co: Option<usize>,
    /// The wave's headers may be packed (its code object's layout has a clock field and
    /// att_tool did not already restore them): how they decode.
    pub(super) packed: Option<Packed>,
    /// The shift of the clock field of the wave's code object.
    pub(super) clock_shift: u32,
    /// Time of the wave's last header (headers never go back in time); in a [`RECORD`] pass,
    /// of its last record when it has no code object (its start otherwise).
    pub(super) last_t: u64,
    pub(super) frame: Framing,
    pub(super) se: u32,
    pub(super) cu: u32,
    pub(super) simd: u32,
    pub(super) wave_id: u32,
    /// The slot's waves in occupancy, and the one the last record fell in.
    pub(super) spans: Vec<WaveSpan>,
    pub(super) cursor: usize,
    /// The first of `spans` not yet delivered: waves without records are delivered as the
    /// records pass them by, the rest at the end of the pass.
    pub(super) next_span: usize,
    pub(super) wave: Wave,
    /// The correction domain of the slot's packed headers, for the code object, cu and simd
    /// it was looked up for (a slot key shared by two of them would not tell those apart).
    pub(super) domain: Option<DomainOf>,
}

/// Payload records still due after a header.
#[derive(Default)]
pub(super) struct Framing {
    pub(super) pending: u32,
    /// Whether the payload is kept for the sink.
    pub(super) collect: bool,
    pub(super) header: Option<Header>,
    pub(super) payload: Vec<u32>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct DomainOf {
    pub(super) co: usize,
    pub(super) cu: u32,
    pub(super) simd: u32,
    pub(super) domain: usize,
}

/// Where a header record was read: its slot, its wave's code object, its shader engine, and the
/// record.
#[derive(Clone, Copy)]
pub(super) struct HeaderAt<'r> {
    pub(super) slot: usize,
    pub(super) ci: usize,
    pub(super) se: u32,
    pub(super) r: &'r Record,
}

/// A header as read, before its time is settled.
pub(super) struct ReadHeader {
    pub(super) marker: DecodedMarker,
    pub(super) class: MarkerClass,
    pub(super) payload: u32,
    /// The clock sample of a packed header (with the decoding on).
    pub(super) sample: Option<Sample>,
}

impl Slot {
    pub(super) fn new(se: u32, r: &Record, spans: Vec<WaveSpan>) -> Slot {
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

    pub(super) fn origin(&self, slot: usize) -> Origin<'_> {
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
    pub(super) fn change_wave<S: Sink, const M: Mode>(
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
    pub(super) fn waves_without_records<S: Sink, const M: Mode>(
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

    pub(super) fn end_wave<S: Sink, const M: Mode>(&mut self, slot: usize, p: &mut Pass<S>) {
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
    pub(super) fn take_payload<S: Sink, const M: Mode>(
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
    pub(super) fn read_header<S: Sink, const M: Mode>(
        &mut self,
        at: HeaderAt,
        p: &mut Pass<S>,
    ) -> ReadHeader {
        let r = at.r;
        let co = &p.catalog.codeobjs[at.ci];
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
            (Some(clock), true) => Some(self.sample::<S, M>(at, clock, p)),
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
        at: HeaderAt,
        clock: u32,
        p: &mut Pass<S>,
    ) -> Sample {
        let (ci, r) = (at.ci, at.r);
        let here = |d: &DomainOf| d.co == ci && d.cu == r.cu && d.simd == r.simd;
        let domain = match self.domain.filter(here) {
            Some(d) => d.domain,
            None => self.new_domain::<S, M>(at, p),
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
    fn new_domain<S: Sink, const M: Mode>(&mut self, at: HeaderAt, p: &mut Pass<S>) -> usize {
        let HeaderAt { slot, ci, se, r } = at;
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
