//! The event log of a packed trace's first pass.
//!
//! The first pass demultiplexes the records (and feeds the clock domains); what the sink is to
//! receive goes to this log in a temporary file: wave starts and ends, the headers as read
//! (before their times are corrected, which takes the whole survey), and the payloads of
//! headers that have one. The second pass reads the log back, corrects the header times and
//! delivers, without demultiplexing again. Memory stays at one buffer whatever the trace size.

use std::io::{Read, Seek, Write};

/// Every event is one or more units of 16 bytes: a head word (kind, flag, slot), a word and
/// a double word, little-endian.
pub(super) const UNIT: usize = 16;

/// A header: the raw value and the arrival. The flag: it was read in the packed form.
pub(super) const HEADER: u32 = 1;
/// The clock domain of the slot's packed headers from here on.
pub(super) const DOMAIN: u32 = 2;
/// A wave starts: its occupancy span (`u32::MAX`: none), the time of its first record.
pub(super) const WAVE_START: u32 = 3;
/// A wave ends: the time of its last record without a code object (else its start).
pub(super) const WAVE_END: u32 = 4;
/// The payload of the slot's pending header is complete: the number of values kept, then
/// the values in as many units as they fill.
pub(super) const PAYLOAD: u32 = 5;
/// Bytes of shaderdata read (for progress).
pub(super) const PROGRESS: u32 = 6;

const KIND: u32 = 7;
/// The header was read in the packed form.
pub(super) const PACKED: u32 = 8;
const SLOT_SHIFT: u32 = 8;
/// Slots beyond this cannot be logged (the run then reads the JSON again).
const SLOTS: usize = 1 << (32 - SLOT_SHIFT);

const BUF: usize = 1 << 20;

/// The log being written. A write that fails makes it unusable (`ok` false); the run then
/// reads the JSON again instead.
pub(super) struct Spill {
    file: std::fs::File,
    buf: Vec<u8>,
    ok: bool,
}

impl Spill {
    /// A log in a fresh temporary file (unlinked: it goes when dropped).
    pub fn new() -> std::io::Result<Spill> {
        Ok(Spill {
            file: tempfile::tempfile()?,
            buf: Vec::with_capacity(BUF + UNIT),
            ok: true,
        })
    }

    #[inline]
    fn unit(&mut self, kind: u32, slot: usize, word: u32, double: u64) {
        if slot >= SLOTS {
            self.ok = false;
        }
        let head = kind | (slot as u32) << SLOT_SHIFT;
        let mut b = [0u8; UNIT];
        b[..4].copy_from_slice(&head.to_le_bytes());
        b[4..8].copy_from_slice(&word.to_le_bytes());
        b[8..].copy_from_slice(&double.to_le_bytes());
        self.buf.extend_from_slice(&b);
        if self.buf.len() >= BUF {
            self.flush();
        }
    }

    #[cold]
    fn flush(&mut self) {
        if self.ok {
            self.ok = self.file.write_all(&self.buf).is_ok();
        }
        self.buf.clear();
    }

    /// A header record with value `raw` that arrived at `arrival`, read in the packed form
    /// or not.
    #[inline]
    pub fn header(&mut self, slot: usize, packed: bool, raw: u32, arrival: u64) {
        let kind = HEADER | if packed { PACKED } else { 0 };
        self.unit(kind, slot, raw, arrival);
    }

    pub fn domain(&mut self, slot: usize, domain: usize) {
        self.unit(DOMAIN, slot, domain as u32, 0);
        if domain > u32::MAX as usize {
            self.ok = false;
        }
    }

    pub fn wave_start(&mut self, slot: usize, span: Option<usize>, time: u64) {
        let span = span.map_or(u32::MAX, |s| s as u32);
        self.unit(WAVE_START, slot, span, time);
    }

    pub fn wave_end(&mut self, slot: usize, last_t: u64) {
        self.unit(WAVE_END, slot, 0, last_t);
    }

    pub fn payload(&mut self, slot: usize, values: &[u32]) {
        self.unit(PAYLOAD, slot, values.len() as u32, 0);
        for c in values.chunks(4) {
            let mut b = [0u8; UNIT];
            for (i, v) in c.iter().enumerate() {
                b[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
            }
            self.buf.extend_from_slice(&b);
        }
        if self.buf.len() >= BUF {
            self.flush();
        }
    }

    pub fn progress(&mut self, bytes: u64) {
        self.unit(PROGRESS, 0, 0, bytes);
    }

    /// The log, ready to be read from its start; `None` when a write failed.
    pub fn finish(mut self) -> Option<Replay> {
        self.flush();
        if !self.ok || self.file.flush().is_err() {
            return None;
        }
        self.file.seek(std::io::SeekFrom::Start(0)).ok()?;
        Some(Replay {
            file: self.file,
            buf: Vec::with_capacity(BUF),
            pos: 0,
        })
    }
}

/// One event read back: its head word, word, double word, and for a payload its values
/// (little-endian).
pub(super) struct Event<'a> {
    pub kind: u32,
    pub packed: bool,
    pub slot: usize,
    pub word: u32,
    pub double: u64,
    pub values: &'a [u8],
}

/// The log being read back.
pub(super) struct Replay {
    file: std::fs::File,
    buf: Vec<u8>,
    pos: usize,
}

pub(super) fn broken() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        "the temporary record log does not read back as written",
    )
}

impl Replay {
    /// Makes `n` bytes from `pos` available; false at the end of the log.
    #[cold]
    fn fill(&mut self, n: usize) -> std::io::Result<bool> {
        self.buf.drain(..self.pos);
        self.pos = 0;
        while self.buf.len() < n {
            let want = (n - self.buf.len()).max(BUF) as u64;
            let got = (&mut self.file).take(want).read_to_end(&mut self.buf)?;
            if got == 0 {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The next event; `None` at the end of the log.
    #[inline(always)]
    pub fn next(&mut self) -> std::io::Result<Option<Event<'_>>> {
        if self.buf.len() - self.pos < UNIT && !self.fill(UNIT)? {
            return match self.buf.len() - self.pos {
                0 => Ok(None),
                _ => Err(broken()),
            };
        }
        let Some(u) = self.buf.get(self.pos..self.pos + UNIT) else {
            return Err(broken());
        };
        let head = u32::from_le_bytes([u[0], u[1], u[2], u[3]]);
        let word = u32::from_le_bytes([u[4], u[5], u[6], u[7]]);
        let double = u64::from_le_bytes([u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]]);
        self.pos += UNIT;
        let kind = head & KIND;
        let mut values: &[u8] = &[];
        if kind == PAYLOAD {
            let n = word as usize * 4;
            let padded = n.div_ceil(UNIT) * UNIT;
            if self.buf.len() - self.pos < padded && !self.fill(padded)? {
                return Err(broken());
            }
            values = &self.buf[self.pos..self.pos + n];
            self.pos += padded;
        }
        Ok(Some(Event {
            kind,
            packed: head & PACKED != 0,
            slot: (head >> SLOT_SHIFT) as usize,
            word,
            double,
            values,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_read_back_as_written_across_buffer_refills() {
        let mut log = Spill::new().unwrap();
        let n = 300_000u32;
        let values = |i: u32| (0..i % 70).map(|v| v ^ i).collect::<Vec<u32>>();
        for i in 0..n {
            let slot = (i as usize * 7919) % SLOTS;
            match i % 7 {
                0 => log.wave_start(
                    slot,
                    (i.is_multiple_of(14)).then_some(i as usize / 2),
                    1 << 40 | u64::from(i),
                ),
                1 => log.wave_end(slot, u64::MAX - u64::from(i)),
                2 => log.payload(slot, &values(i)),
                3 => log.progress(u64::from(i) << 20),
                4 => log.domain(slot, i as usize),
                _ => log.header(
                    slot,
                    i.is_multiple_of(2),
                    i.wrapping_mul(2_654_435_761),
                    u64::from(i) << 33,
                ),
            }
        }
        let mut r = log.finish().unwrap();
        let mut seen = 0u32;
        while let Some(e) = r.next().unwrap() {
            let i = seen;
            seen += 1;
            let slot = (i as usize * 7919) % SLOTS;
            let want = match i % 7 {
                0 => (
                    WAVE_START,
                    false,
                    slot,
                    if i.is_multiple_of(14) {
                        i / 2
                    } else {
                        u32::MAX
                    },
                    1 << 40 | u64::from(i),
                ),
                1 => (WAVE_END, false, slot, 0, u64::MAX - u64::from(i)),
                2 => (PAYLOAD, false, slot, i % 70, 0),
                3 => (PROGRESS, false, 0, 0, u64::from(i) << 20),
                4 => (DOMAIN, false, slot, i, 0),
                _ => (
                    HEADER,
                    i.is_multiple_of(2),
                    slot,
                    i.wrapping_mul(2_654_435_761),
                    u64::from(i) << 33,
                ),
            };
            assert_eq!(
                (e.kind, e.packed, e.slot, e.word, e.double),
                want,
                "event {i}"
            );
            let got: Vec<u32> = e
                .values
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
                .collect();
            assert_eq!(
                got,
                if i % 7 == 2 { values(i) } else { Vec::new() },
                "event {i}"
            );
        }
        assert_eq!(seen, n);
    }

    #[test]
    fn a_slot_beyond_the_head_word_makes_the_log_unusable() {
        let mut log = Spill::new().unwrap();
        log.header(SLOTS - 1, false, 1, 2);
        assert!(log.ok);
        log.header(SLOTS, false, 1, 2);
        assert!(log.finish().is_none());
    }
}
