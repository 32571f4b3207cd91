//! The slots of one ui directory, found by `(se, cu, simd, wave_id)`.

use rustc_hash::FxHashMap;

use super::slot::Slot;
use crate::input::{slot_key, WaveSpan};
use crate::shaderdata::Record;

/// A record of the slot `key` (with its shader engine), to make the slot by.
pub(super) fn slot_of_key(key: u64) -> (u32, Record) {
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
pub(super) struct SlotTable {
    pub(super) slots: Vec<Slot>,
    /// Slot index + 1 (0: none yet) by [`dense_index`], for the usual small fields; made on
    /// first use, or the last table's ([`SPARE_DENSE`]).
    dense: Vec<u32>,
    /// The slots of keys with larger fields.
    sparse: FxHashMap<u64, u32>,
}

const DENSE_BITS: u32 = 19;

thread_local! {
    /// The dense index of the last slot table dropped on this thread, its entries zeroed again:
    /// a run reads a ui directory (a dispatch) after another, and a fresh 2 MB table is zeroed
    /// whole (the allocator hands back the last one's memory, not fresh zero pages), where the
    /// last table's used entries are few.
    static SPARE_DENSE: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
}

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
    pub(super) fn find(
        &mut self,
        se: u32,
        r: &Record,
        spans_of: impl FnOnce(u64) -> Vec<WaveSpan>,
    ) -> usize {
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
                    self.dense = SPARE_DENSE.with_borrow_mut(std::mem::take);
                    if self.dense.is_empty() {
                        self.dense = vec![0; 1 << DENSE_BITS];
                    }
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

impl Drop for SlotTable {
    fn drop(&mut self) {
        if self.dense.is_empty() {
            return;
        }
        let r = |s: &Slot| Record {
            cu: s.cu,
            simd: s.simd,
            wave_id: s.wave_id,
            ..Record::default()
        };
        for s in &self.slots {
            if let Some(d) = dense_index(s.se, &r(s)) {
                self.dense[d] = 0;
            }
        }
        let dense = std::mem::take(&mut self.dense);
        // Kept only if the thread is not going away.
        let _ = SPARE_DENSE.try_with(|spare| *spare.borrow_mut() = dense);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table made after another dropped finds none of the other's slots (the index it takes
    /// over is all zeros again) and its own.
    #[test]
    fn a_table_after_another_starts_empty() {
        let rec = |cu, simd, wave_id| Record {
            cu,
            simd,
            wave_id,
            ..Record::default()
        };
        let mut first = SlotTable::default();
        for (se, cu) in [(0, 3), (1, 3), (31, 127)] {
            first.find(se, &rec(cu, 2, 9), |_| Vec::new());
        }
        assert_eq!(first.slots.len(), 3);
        drop(first);
        assert!(
            SPARE_DENSE.with_borrow(|d| d.len() == 1 << DENSE_BITS && d.iter().all(|&i| i == 0))
        );
        let mut second = SlotTable::default();
        assert_eq!(second.find(1, &rec(3, 2, 9), |_| Vec::new()), 0);
        assert_eq!(second.find(0, &rec(3, 2, 9), |_| Vec::new()), 1);
        assert_eq!(second.find(1, &rec(3, 2, 9), |_| Vec::new()), 0);
        assert_eq!(second.slots.len(), 2);
    }
}
