#!/usr/bin/env bash
# Sets up the machine and runs every test: formatting, lints, the unit tests of every crate and
# the end-to-end tests on the real hipcc, clang, llvm-objdump and cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
# shellcheck source=ci/tmpdir.sh
source ci/tmpdir.sh

cargo fmt --all -- --check
# cargo test does not build cdylibs: the end-to-end tests load the plugin built here.
cargo build --workspace --all-targets
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace
