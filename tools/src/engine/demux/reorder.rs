//! The reorder window: each shader engine's records put in time order.

use crate::shaderdata::Record;

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
pub(in crate::engine) struct Reorder {
    /// Records not yet handed on, in time order (but for late ones); all but the last
    /// [`ORDER_WINDOW`] of them are past the window.
    buf: Vec<Record>,
    /// The latest time of the records past the window (handed on or not): a record earlier
    /// than that can no longer be put in its place.
    past: Option<u64>,
    /// Records put back in order, and the first of them.
    pub(super) moved: u64,
    pub(super) first_moved: String,
    /// Records earlier than ones already past the window (used where they fall).
    pub(super) late: u64,
    pub(super) first_late: String,
}

impl Reorder {
    #[inline]
    pub(in crate::engine) fn push(&mut self, r: &Record, f: impl FnMut(&Record)) {
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

    pub(in crate::engine) fn flush(&mut self, mut f: impl FnMut(&Record)) {
        for x in &self.buf {
            f(x);
        }
        self.buf.clear();
        self.past = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

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
