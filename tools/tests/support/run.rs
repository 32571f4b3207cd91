//! Running the built `sqtt` binary from the integration tests (each uses what it needs).
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// `sqtt ARGS`, its output collected.
pub fn sqtt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sqtt"))
        .args(args)
        .output()
        .expect("run sqtt")
}

/// A path as an argument.
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}
