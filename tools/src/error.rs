//! Errors of the trace tools.

use std::path::{Path, PathBuf};

/// Why an input could not be read or used.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{}: malformed JSON after {records} records: {error}", path.display())]
    Json {
        path: PathBuf,
        /// Records read before the fault.
        records: u64,
        error: serde_json::Error,
    },
    /// A shaderdata file whose JSON breaks off or turns malformed part-way, as the reader's own
    /// scanner finds it (serde's findings are [`Error::Json`]).
    #[error("{}: malformed JSON after {records} records: {what} at byte {at}", path.display())]
    Syntax {
        path: PathBuf,
        /// Records read before the fault.
        records: u64,
        what: &'static str,
        at: u64,
    },
    #[error("{}: {reason}", path.display())]
    Malformed { path: PathBuf, reason: String },
    #[error("{}: {error}", path.display())]
    Funcmap {
        path: PathBuf,
        error: sqtt_markers::ParseError,
    },
    /// A `--code-object` file that cannot serve as a funcmap source.
    #[error("--code-object {}: {reason}", path.display())]
    CodeObjectOption { path: PathBuf, reason: String },
    /// A code object file `sqtt-codeobj` could not read (the message names the file).
    #[error("{0}")]
    CodeObject(String),
    #[error("{}: no ui directory (one holding filenames.json or shaderdata_*.json) found in it or at most {} levels below it (the search goes no deeper): not a rocprofv3 --att output directory, or its ui directories lie deeper (give a directory nearer them)", .0.display(), crate::input::MAX_UI_LEVELS)]
    NotATraceDir(PathBuf),
    #[error("nothing usable: {0}")]
    Unusable(String),
    /// An output that cannot be one: one of the inputs, or a directory (a usage error). The
    /// message names it.
    #[error("{0}")]
    BadOutput(std::io::Error),
    /// An output that could not be created or written (the message names it).
    #[error("{0}")]
    Write(std::io::Error),
}

impl Error {
    /// For a file read part-way: the records handed over before the fault (they count as read).
    pub fn records_before_fault(&self) -> Option<u64> {
        match self {
            Error::Json { records, .. } | Error::Syntax { records, .. } => Some(*records),
            _ => None,
        }
    }

    /// Whether this is a closed pipe on an output (the reader stopped early: not a failure).
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, Error::Write(e) if crate::output::is_broken_pipe(e))
    }

    pub fn io(path: &Path, error: std::io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            error,
        }
    }
}
