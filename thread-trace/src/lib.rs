//! Thread traces, which a GPU's shader engines record while they run waves (README.md,
//! Behaviour).
//!
//! While tracing, each shader engine writes a stream of packets into a buffer of its own: when
//! each wave starts and ends, the instructions it issues and, from GFX11 on, markers of the
//! GPU's clock from time to time. Its times count the engine's cycles from the start of the
//! trace.
//!
//! - Recording: [`start`] and [`stop`] are the PM4 packets that start and stop tracing on a
//!   compute queue; [`length`] reads the end of an engine's trace that [`stop`] stored.
//! - Decoding: [`waves()`] pairs the starts and ends of one engine's trace into waves, and
//!   [`clock`] maps its shader time to the GPU clock through its realtime markers. The
//!   decoders themselves are in [`decode`]; [`synth`] writes synthetic streams.
//! - The `sqtt waves`, `sqtt clock` and `sqtt thread-trace` subcommands are in the `sqtt-tools` crate.

pub mod decode;
pub mod gpu;
pub mod pm4;
pub mod program;
pub mod regs;
pub mod synth;
pub mod waves;

pub use gpu::{builtin, builtin_names, harvested, GcVersion, Generation, Gpu, Shape, Wgps};
pub use program::{length, start, stop, MAX_PAGES, PAGE};
pub use waves::{clock, markers, waves, ClockMap, Marker, Wave};

/// Why a program cannot be made (the refusals of README.md, Behaviour).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The buffer size is not whole pages of 4096 bytes from 1 to 2^22 - 1 of them.
    #[error(
        "size {size}: expected a multiple of 4096 from 4096 to {} bytes ((2^22 - 1) pages, the most an engine's 22-bit size field holds)",
        program::MAX_PAGES * program::PAGE
    )]
    Size { size: u64 },
    /// The address is not aligned as the program needs (4096 for buffers, 4 for the ends).
    #[error("address {address:#x}: expected a multiple of {align}")]
    Misaligned { address: u64, align: u64 },
    /// `wgps` does not hold one entry per engine.
    #[error("wgps holds {got} engines, expected {expected} (shader engines per die times dies)")]
    Engines { got: usize, expected: usize },
    /// The program cannot select so many engines or dies: GRBM_GFX_INDEX holds 8-bit engine
    /// numbers (4-bit on GFX12) and PRED_EXEC 8 dies.
    #[error("the program cannot select {count} {what}: at most {max}")]
    Unaddressable {
        what: &'static str,
        count: usize,
        max: usize,
    },
    /// The buffers pass the addresses the base registers hold.
    #[error("buffers of {engines} engines of {size} bytes from {address:#x} pass the addresses the trace base registers hold")]
    AddressRange {
        address: u64,
        size: u64,
        engines: usize,
    },
    /// The GC lacks a register the program reads or writes (or this crate does not know it).
    #[error("GC {gc} has no {register} register known here (known: GC 9.4.2, 9.4.3, 9.5.0, 11.0.x, 11.5.x, 12.0.x)")]
    MissingRegister {
        gc: GcVersion,
        register: &'static str,
    },
}

/// The tests' random numbers: the tools' one generator (xorshift64).
#[cfg(test)]
#[path = "../../tools/tests/support/rng.rs"]
mod test_rng;
