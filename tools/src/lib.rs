//! `sqtt` trace tools: flamegraphs, Perfetto timelines and memory-access reports from
//! `rocprofv3 --att` output directories.

pub mod error;
pub mod shaderdata;

pub use error::Error;
pub mod codeobj;
pub mod commands;
pub mod diag;
pub mod engine;
pub mod flamegraph;
pub mod input;
pub mod memory;
pub mod perfetto;
