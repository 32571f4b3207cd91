#!/usr/bin/env bash
# Sets up the machine and runs every test: formatting, lints, the unit tests of every crate and
# the end-to-end tests on the real hipcc, clang, llvm-objdump and cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
# The compilers the tests run leave empty directories in TMPDIR (clang of LLVM 15: two a HIP
# compile, never removed): the run gets a directory of its own under /tmp, removed at the end,
# and world-writable with the sticky bit as /tmp is (some tests run the wrapper as another user).
if [ -z "${SQTT_CI_TMPDIR:-}" ]; then
  SQTT_CI_TMPDIR=$(mktemp -d /tmp/sqtt-ci.XXXXXX)
  chmod 1777 "$SQTT_CI_TMPDIR"
  trap 'rm -rf "$SQTT_CI_TMPDIR"' EXIT
  export SQTT_CI_TMPDIR TMPDIR=$SQTT_CI_TMPDIR
fi

cargo fmt --all -- --check
# cargo test does not build cdylibs: the end-to-end tests load the plugin built here.
cargo build --workspace --all-targets
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace
