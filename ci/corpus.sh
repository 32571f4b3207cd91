#!/usr/bin/env bash
# Robustness run: the whole corpus (Debian's rocPRIM and rocRAND headers) with every feature on,
# through the IR and machine verifiers, printing per-file counts. Takes several minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
cargo build --release -p sqtt-plugin
export SQTT_PLUGIN=$PWD/target/release/libsqtt_plugin.so
cargo test -p sqtt-e2e --test corpus -- --ignored --nocapture full_corpus 2>&1 | grep -E "corpus|test result"
