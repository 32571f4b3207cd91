//! A pass over a dispatch's raw traces ([`crate::raw`]): each shader engine's `.att` file
//! decoded once (by workers ahead of the engine, [`crate::raw::ahead`], or here), its waves
//! added to the occupancy and its records handed to the demultiplexer in time order, as
//! [`Demux::pass`] hands on the records of the JSON files.

use super::demux::{log, Demux, Mode, Reorder, RECORD};
use super::{Pass, RunStats, Sink};
use crate::diag::Progress;
use crate::error::Error;
use crate::input::UiDir;
use crate::raw::{self, ahead, kind, RawDomain};

impl Demux {
    /// One pass over `ui`: its raw traces when it is a raw domain, else its shaderdata files.
    pub(super) fn pass_ui<S: Sink, const M: Mode>(
        &mut self,
        ui: &UiDir,
        p: &mut Pass<S>,
        progress: &dyn Progress,
    ) -> Result<(), Error> {
        match ui.raw.clone() {
            Some(raw) => self.pass_raw::<S, M>(ui, &raw, p, progress),
            None => self.pass::<S, M>(ui, p, progress),
        }
    }

    fn pass_raw<S: Sink, const M: Mode>(
        &mut self,
        ui: &UiDir,
        raw: &RawDomain,
        p: &mut Pass<S>,
        progress: &dyn Progress,
    ) -> Result<(), Error> {
        let mut counts = RunStats::default();
        let mut file_errors: Vec<String> = Vec::new();
        let mut order = Reorder::default();
        // Kept from trace to trace (and given to the workers at the end): the records.
        let mut own: Option<raw::Buffers> = None;
        for (se, path) in &ui.shaderdata {
            let se = *se;
            // Decoded by a worker while the engine read the traces before, or here.
            let (read, buffers) = match p.ahead {
                Some(a) => a.take(se, path, own.take()),
                None => ahead::decode_here(se, path, own.take().unwrap_or_default()),
            };
            let buffers = &*own.insert(buffers);
            if let Some(bytes) = read.bytes {
                // A record pass passes the progress on in its log.
                if M == RECORD {
                    log(p).progress(bytes);
                } else {
                    progress.inc(bytes);
                }
            }
            let decoded = match read.decoded {
                Ok(Some(d)) => d,
                Ok(None) => {
                    counts.files_bad += 1;
                    p.diag
                        .warn(kind::NO_GENERATION, || path.display().to_string());
                    continue;
                }
                Err(e) => {
                    counts.files_bad += 1;
                    file_errors.push(e.to_string());
                    continue;
                }
            };
            if let Some(stop) = decoded.summary.stop {
                p.diag.warn(kind::STOPPED, || {
                    format!("{}: decoding stopped: {stop}", path.display())
                });
            }
            // The engine's waves before its records: a record's wave is found among them.
            if let Err(e) =
                raw::add_waves(&mut p.catalog.occ, decoded.waves, raw.occupancy_id, path)
            {
                counts.files_bad += 1;
                file_errors.push(e.to_string());
                continue;
            }
            counts.files_ok += 1;
            counts.records += buffers.record_count() as u64;
            let records = || buffers.records().map(|r| raw::record(&r));
            // An engine's stream is in time order but where the time wraps or a GFX9 time reset
            // moves it back: records in order go on without the reorder window's copies.
            if records().is_sorted_by_key(|r| r.time) {
                for r in records() {
                    self.record::<S, M>(p, se, &r);
                }
            } else {
                for r in records() {
                    order.push(&r, |x| self.record::<S, M>(p, se, x));
                }
                order.flush(|r| self.record::<S, M>(p, se, r));
            }
        }
        if let (Some(a), Some(b)) = (p.ahead, own) {
            a.give_back(b);
        }
        if raw.kernel.is_none() {
            let what = if raw.kernel_trace.is_some() {
                kind::NOT_IN_KERNEL_TRACE
            } else {
                kind::NO_KERNEL_TRACE
            };
            p.diag
                .warn(what, || format!("dispatch {} ({})", raw.dispatch, ui.name));
        }
        self.finish::<S, M>(ui, p, counts, &order, file_errors);
        Ok(())
    }
}
