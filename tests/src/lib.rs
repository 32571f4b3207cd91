//! Helpers for the end-to-end tests on the real toolchain.

pub mod checks;
pub mod driver;
pub mod kernels;
pub mod package;
pub mod toolchain;
