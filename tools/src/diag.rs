//! Warnings with counts, collected while reading a trace, and the progress hook.

use std::collections::BTreeMap;
use std::fmt;

use sqtt_files::output::printable;

/// Counted warnings: each kind is reported once with its count and the first example.
#[derive(Debug, Default, Clone)]
pub struct Diagnostics {
    kinds: BTreeMap<&'static str, (u64, String)>,
}

impl Diagnostics {
    /// Counts one occurrence of `kind`; `example` is kept for the first one.
    pub fn warn(&mut self, kind: &'static str, example: impl FnOnce() -> String) {
        self.warn_n(kind, 1, example)
    }

    /// Counts `n` occurrences of `kind`.
    pub fn warn_n(&mut self, kind: &'static str, n: u64, example: impl FnOnce() -> String) {
        if n == 0 {
            return;
        }
        match self.kinds.get_mut(kind) {
            Some((c, _)) => *c += n,
            None => {
                self.kinds.insert(kind, (n, example()));
            }
        }
    }

    /// How often `kind` was counted.
    pub fn count(&self, kind: &str) -> u64 {
        self.kinds.get(kind).map(|(c, _)| *c).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    /// Every counted kind with its count and first example.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64, &str)> + '_ {
        self.kinds.iter().map(|(k, (c, e))| (*k, *c, e.as_str()))
    }

    pub fn merge(&mut self, other: &Diagnostics) {
        for (k, c, e) in other.iter() {
            self.warn_n(k, c, || e.to_string());
        }
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, c, e) in self.iter() {
            if e.is_empty() {
                writeln!(f, "warning: {c} {k}")?;
            } else {
                writeln!(f, "warning: {c} {k} (first: {})", printable(e))?;
            }
        }
        Ok(())
    }
}

/// Warning kinds (stable strings, tests look for them).
pub mod kind {
    pub const NO_OCCUPANCY: &str = "records for waves with no occupancy";
    pub const UNKNOWN_ID: &str = "marker records with IDs not in the funcmap";
    pub const CUT_SHORT: &str = "payload blocks cut short at the end of their wave";
    pub const UNMATCHED_ENTER: &str = "scopes still open at the end of their wave (closed there)";
    pub const UNMATCHED_EXIT: &str = "exit markers with no open scope (ignored)";
    pub const BAD_FILE: &str = "input files unreadable or malformed";
    pub const NO_FUNCMAP: &str = "records of waves whose code object has no funcmap";
    pub const NO_DISPATCH_CODEOBJ: &str = "dispatches whose kernel matches no code object";
    pub const AMBIGUOUS_KERNEL: &str =
        "dispatches with no code object ID whose kernel name is in code objects with different funcmaps (markers shown by ID)";
    pub const NO_OCCUPANCY_FILE: &str = "ui directories without occupancy.json";
    pub const ADDR_SIZE_MISMATCH: &str =
        "address blocks whose R: payload count differs from the framing of W: and the op kind";
    pub const ADDR_UNKNOWN_KIND: &str = "address blocks of an unknown addr_trace_ kind (skipped)";
    pub const BAD_ROW: &str = "malformed rows skipped";
    pub const NO_CODEOBJ: &str =
        "records dropped: their waves' code object is missing, so which records are payload is unknown";
    pub const OUT_OF_ORDER: &str =
        "records out of time order in their shader engine's files (put in time order)";
    pub const TOO_LATE: &str =
        "records out of time order by more than the sorting window (used where they fall)";
    pub const REPEATED_LISTING: &str =
        "shaderdata files listed more than once in filenames.json (each read once)";
    pub const AFTER_END: &str =
        "records after the end of their wave in occupancy.json (placed at the wave's end)";
    pub const NO_LENGTH: &str =
        "waves in occupancy.json with neither an end nor a record (left out: their length is unknown)";
    pub const NORMALISED: &str =
        "code objects whose packed headers att_tool already restored and corrected (not corrected again)";
}

/// Progress of a long read, in bytes of shaderdata.
pub trait Progress {
    fn set_total(&self, _bytes: u64) {}
    fn inc(&self, _bytes: u64) {}
    fn finish(&self) {}
}

/// Shows nothing.
pub struct NoProgress;
impl Progress for NoProgress {}
