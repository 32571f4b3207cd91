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
