//! Errors of the trace tools.

use std::path::{Path, PathBuf};

/// Why an input could not be read or used.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: malformed JSON after {records} records: {source}", path.display())]
    Json {
        path: PathBuf,
        /// Records read before the fault.
        records: u64,
        source: serde_json::Error,
    },
    #[error("{}: {reason}", path.display())]
    Malformed { path: PathBuf, reason: String },
    #[error("{}: {source}", path.display())]
    Funcmap {
        path: PathBuf,
        source: sqtt_markers::ParseError,
    },
    #[error("{}: no ui_output_* directory (and no shaderdata_*.json) found: not a rocprofv3 --att output directory", .0.display())]
    NotATraceDir(PathBuf),
    #[error("nothing usable: {0}")]
    Unusable(String),
}

impl Error {
    pub fn io(path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
