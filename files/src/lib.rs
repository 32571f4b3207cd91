//! The project's file handling, under every other crate: [`input`] reads inputs (only regular
//! files, without blocking, within a bound per kind of input), [`mapped`] maps the large ones
//! (raw thread traces) guarded against truncation, and [`output`] writes outputs (through what
//! their path names, atomically where that is safe, never over an input), with the messages
//! that name what failed. Nothing here knows sqtt's formats or settings.

pub mod input;
pub mod mapped;
pub mod output;

#[cfg(test)]
#[path = "../../tools/tests/support/device.rs"]
mod device;
