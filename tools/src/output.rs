//! Output files and standard output: `sqtt_files::output` (the one home of writing outputs for
//! every command: files written through what their path names, inputs never overwritten, every
//! write error named), with its errors as the tools' [`Error`]s.

use std::path::Path;

pub use sqtt_files::output::{
    is_broken_pipe, print, printable, stderr_line, stdout, write_error, Inputs, Output, Stdout,
};

use crate::error::Error;

/// Opens the output `path` ([`Output::create`]): a directory is a usage error, any other
/// failure a write error, each naming the path.
pub fn create(path: &Path) -> Result<Output, Error> {
    Output::create(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::InvalidInput {
            Error::BadOutput(e)
        } else {
            Error::Write(e)
        }
    })
}
