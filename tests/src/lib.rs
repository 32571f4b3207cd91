//! Helpers for the end-to-end tests on the real toolchain.

pub mod driver;
pub mod toolchain;
