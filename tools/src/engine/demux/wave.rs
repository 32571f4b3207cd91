//! Waves and header times: a slot's wave made from its occupancy, its end, a header's time.

use super::packed::legacy_value;
use super::slot::{ReadHeader, Slot};
use crate::diag::kind;
use crate::engine::catalog::DispatchCode;
use crate::engine::clock::Sample;
use crate::engine::deliver::Header;
use crate::engine::{Pass, RunStats, Wave};

/// The wave that starts in `slot` with span `span` at `time`, and its code object.
pub(super) fn wave_of<S>(
    slot: &Slot,
    span: usize,
    time: u64,
    p: &mut Pass<S>,
) -> (Wave, Option<usize>) {
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
pub(super) fn wave_end(w: &Wave, last_t: u64) -> u64 {
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
pub(super) fn header_time<S>(
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
pub(super) fn after_end<S>(p: &mut Pass<S>, w: &Wave, time: u64, end: u64) {
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

/// A header ready for delivery.
#[inline]
pub(super) fn header(h: ReadHeader, time: u64, arrival: u64, decode_markers: bool) -> Header {
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
