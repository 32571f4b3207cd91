//! Waves and the clock of a trace (README.md, "Decoding").

use serde::Serialize;

use crate::decode::{decode, Sink, Summary};
use crate::gpu::{Generation, Gpu};

/// A wave of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Wave {
    /// The compute unit, numbered within its shader engine. From GFX11 on it is the
    /// work-group processor with its shader array above it: the array's number shifted left by
    /// 3 bits on GFX11 and 4 on GFX12. On GFX9 it is the CU with its shader array's number
    /// shifted left by 4 above it (the CU field is 4 bits wide), which is the CU itself on every
    /// part of one array per engine.
    pub cu: u32,
    /// The SIMD of the compute unit.
    pub simd: u32,
    /// The SIMD's wave slot.
    pub slot: u32,
    /// When the wave started, in shader cycles from the start of the trace.
    pub start: u64,
    /// When it ended, in shader cycles.
    pub stop: u64,
}

/// The keys of a slot: cu (up to 5 bits), simd (2), slot (5).
const KEYS: usize = 1 << 12;
const NONE: u64 = u64::MAX;

fn key(cu: u32, simd: u32, slot: u32) -> usize {
    (((cu & 0x1F) << 7) | ((simd & 3) << 5) | (slot & 0x1F)) as usize
}

/// Pairs starts and ends into waves: the start time of each slot (or NONE), and the first
/// `count` slots set (up to KEYS of them; past that the whole table is cleared). Arrays of
/// KEYS entries, which every key indexes without a bounds check.
struct Pairing<'a> {
    started: &'a mut [u64; KEYS],
    touched: &'a mut [u16; KEYS],
    count: usize,
    out: &'a mut Vec<Wave>,
}

impl Sink for Pairing<'_> {
    #[inline]
    fn wave_start(&mut self, cu: u32, simd: u32, slot: u32, time: u64) {
        let k = key(cu, simd, slot);
        if self.started[k] == NONE {
            if let Some(t) = self.touched.get_mut(self.count) {
                *t = k as u16;
                self.count += 1;
            }
        }
        // A second start before an end: the first's end was lost, and it is dropped.
        self.started[k] = time;
    }
    #[inline]
    fn wave_end(&mut self, cu: u32, simd: u32, slot: u32, time: u64) {
        let k = key(cu, simd, slot);
        let start = std::mem::replace(&mut self.started[k], NONE);
        // An end without a start is dropped.
        if start != NONE {
            self.out.push(Wave {
                cu,
                simd,
                slot,
                start,
                stop: time,
            });
        }
    }
}

/// The start time of each slot, and the slots a trace set.
type Table = (Box<[u64; KEYS]>, Box<[u16; KEYS]>);

thread_local! {
    /// The pairing table, kept between calls so that a trace of a few kilobytes does not pay
    /// for clearing 32 KiB: only the slots a trace set are cleared after it.
    static TABLE: std::cell::RefCell<Table> =
        std::cell::RefCell::new((Box::new([NONE; KEYS]), Box::new([0; KEYS])));
}

/// The stream `gpu`'s engines write, or the RDNA 3 one for a GC of no known generation.
fn generation(gpu: &Gpu) -> Generation {
    gpu.generation().unwrap_or(Generation::Gfx11)
}

/// The waves that start and end in `trace`, one shader engine's bytes as `gpu` wrote them, in
/// the order they end. A wave's end is paired with the latest start before it of the same
/// compute unit, SIMD and slot, unless an end of that slot lies between them: a second start
/// before an end drops the first, an end without a start is dropped, and a trace cut short
/// yields the waves of its whole packets.
pub fn waves(gpu: &Gpu, trace: &[u8]) -> Vec<Wave> {
    let mut out = Vec::new();
    waves_into(gpu, trace, &mut out);
    out
}

/// [`waves`], appending to `out`, with what the decoder saw.
pub fn waves_into(gpu: &Gpu, trace: &[u8], out: &mut Vec<Wave>) -> Summary {
    TABLE.with(|t| {
        let mut guard = t.borrow_mut();
        let (started, touched) = &mut *guard;
        let mut p = Pairing {
            started,
            touched,
            count: 0,
            out,
        };
        let summary = decode(generation(gpu), trace, &mut p);
        if p.count >= KEYS {
            p.started.fill(NONE);
        } else {
            for &k in &p.touched[..p.count] {
                p.started[usize::from(k)] = NONE;
            }
        }
        summary
    })
}

/// A realtime marker: at shader time `time`, the GPU clock read `realtime`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Marker {
    pub time: u64,
    pub realtime: u64,
}

struct Markers(Vec<Marker>);

impl Sink for Markers {
    fn marker(&mut self, time: u64, realtime: u64) {
        self.0.push(Marker { time, realtime });
    }
}

/// The realtime markers of `trace`, in order. GFX9 traces have none.
pub fn markers(gpu: &Gpu, trace: &[u8]) -> Vec<Marker> {
    let mut m = Markers(Vec::new());
    decode(generation(gpu), trace, &mut m);
    m.0
}

/// A map from shader time to the GPU clock (in ticks of [`Gpu::clock_hz`]), through a trace's
/// realtime markers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClockMap {
    /// At least two markers, at strictly increasing shader times.
    markers: Vec<Marker>,
    clock_hz: u64,
}

impl ClockMap {
    /// The map through `markers`, which must be at least two at strictly increasing shader
    /// times.
    pub fn new(markers: Vec<Marker>, clock_hz: u64) -> Option<Self> {
        let increasing = markers.windows(2).all(|w| w[0].time < w[1].time);
        (markers.len() >= 2 && increasing).then_some(ClockMap { markers, clock_hz })
    }

    /// The markers the map goes through (of markers at one shader time, the first is kept).
    pub fn markers(&self) -> &[Marker] {
        &self.markers
    }

    /// The clock's frequency, for [`ClockMap::seconds`].
    pub fn clock_hz(&self) -> u64 {
        self.clock_hz
    }

    /// The markers around shader time `t`: the two it lies between, or the first two or the
    /// last two when it lies outside them.
    fn segment(&self, t: u64) -> (Marker, Marker) {
        let m = &self.markers;
        // The first marker after t, kept within 1..len-1 so that a segment always exists.
        let i = m.partition_point(|x| x.time <= t).clamp(1, m.len() - 1);
        (m[i - 1], m[i])
    }

    /// The GPU clock at shader time `t`, on the line through the markers around it (rounded
    /// toward zero; it may be negative before the first markers).
    pub fn realtime(&self, t: u64) -> i128 {
        let (a, b) = self.segment(t);
        let (s0, r0) = (i128::from(a.time), i128::from(a.realtime));
        let (s1, r1) = (i128::from(b.time), i128::from(b.realtime));
        match (i128::from(t) - s0).checked_mul(r1 - r0) {
            Some(n) => r0.saturating_add(n / (s1 - s0)),
            // Only the times of a corrupt trace reach this far.
            None => r0.saturating_add(
                ((i128::from(t) - s0) as f64 * ((r1 - r0) as f64 / (s1 - s0) as f64)) as i128,
            ),
        }
    }

    /// The GPU clock at shader time `t` in seconds.
    pub fn seconds(&self, t: u64) -> f64 {
        self.realtime(t) as f64 / self.clock_hz.max(1) as f64
    }

    /// Shader cycles per GPU clock tick between the first and last markers.
    pub fn cycles_per_tick(&self) -> f64 {
        let (a, b) = (self.markers[0], self.markers[self.markers.len() - 1]);
        (b.time - a.time) as f64 / (b.realtime as f64 - a.realtime as f64)
    }
}

/// The map from shader time to the GPU clock through `trace`'s realtime markers: a time between
/// two markers maps on the line through them, a time outside them on the line through the first
/// two or the last two. `None` for a trace of fewer than two markers at distinct shader times,
/// such as any GFX9 trace.
pub fn clock(gpu: &Gpu, trace: &[u8]) -> Option<ClockMap> {
    if generation(gpu) == Generation::Gfx9 {
        return None;
    }
    let mut kept: Vec<Marker> = Vec::new();
    for m in markers(gpu, trace) {
        // Shader times never run back; a marker at the time of the one before gives no rate.
        if kept.last().is_none_or(|last| m.time > last.time) {
            kept.push(m);
        }
    }
    ClockMap::new(kept, gpu.clock_hz)
}
