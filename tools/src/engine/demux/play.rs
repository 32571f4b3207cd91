//! The replay of a [`RECORD`] pass's event log, with the settled clock domains.

use sqtt_markers::DecodedMarker;

use super::packed::{decode_legacy, Packed};
use super::slot::{ReadHeader, NONE};
use super::wave::{header, header_time, wave_end, wave_of};
use super::Demux;
use crate::diag::Progress;
use crate::engine::clock::Sample;
use crate::engine::deliver::{deliver, Header, Origin};
use crate::engine::spill::{self, Replay};
use crate::engine::{Pass, Sink, Wave};
use crate::error::Error;
use crate::input::UiDir;

impl Demux {
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
