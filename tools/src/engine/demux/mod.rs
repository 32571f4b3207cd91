//! Stream demultiplexing: each shader engine's records put in time order, PRIV records
//! dropped, the rest routed to the slot of their `(se, cu, simd, wave_id)`, split into wave
//! instances by occupancy, and framed into headers and the payload records after them.
//!
//! The parts: this file the passes (files read in [`order`], records put in time order by
//! [`reorder`], each routed by [`table`] to its [`slot`], which frames its headers, decoded by
//! [`packed`], into waves timed by [`wave`]); [`play`] the replay of a [`RECORD`] pass's log.

mod order;
mod packed;
mod play;
mod reorder;
mod slot;
mod table;
mod wave;

use std::io::Read;

use super::deliver::deliver;
use super::spill::Spill;
use super::{Pass, RunStats, Sink};
use crate::codeobj::MarkerClass;
use crate::diag::{kind, Progress};
use crate::error::Error;
use crate::input::UiDir;
use crate::shaderdata::{self, Record};
use order::reading_order;
pub(super) use reorder::Reorder;
use slot::{HeaderAt, NONE};
use table::{slot_of_key, SlotTable};
use wave::{after_end, header, header_time};

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

/// The pass's event log (a [`RECORD`] pass has one).
#[inline]
pub(super) fn log<'p, S>(p: &'p mut Pass<'_, S>) -> &'p mut Spill {
    p.log.as_mut().expect("a record pass has a log")
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
        let at = HeaderAt {
            slot: idx,
            ci,
            se,
            r,
        };
        let h = slot.read_header::<S, M>(at, p);
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
}
