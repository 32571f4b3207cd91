//! `sqtt` trace tools: flamegraphs, Perfetto timelines and memory-access reports from
//! `rocprofv3 --att` output directories.
//!
//! [`input`] finds the files of an output directory, [`shaderdata`] streams its records,
//! [`engine`] turns them into scope, point and address events per wave, and the sinks
//! [`flamegraph`], [`perfetto`] and [`memory`] make the outputs; [`commands`] runs them as the
//! binary's subcommands do. [`thread_trace`] holds the `waves`, `clock` and `thread-trace`
//! subcommands over the `sqtt-thread-trace` library, [`records`] the `shaderdata` one.

pub mod codeobj;
pub mod commands;
pub mod diag;
pub mod diff;
pub mod engine;
pub mod error;
pub mod flamegraph;
pub mod input;
pub mod memory;
pub mod output;
pub mod perfetto;
pub mod raw;
pub mod records;
pub mod shaderdata;
pub mod stats;
pub mod thread_trace;

pub use error::Error;

/// The tests' random numbers: one generator, shared with the integration tests and benches.
#[cfg(test)]
#[path = "../tests/support/rng.rs"]
mod test_rng;
