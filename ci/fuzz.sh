#!/usr/bin/env bash
# Short bounded fuzz runs of every fuzz target, seeded from the committed seeds.
#
#   ci/fuzz.sh [SECONDS_PER_TARGET]     (default 20)
#
# Targets: codeobj/fuzz (code_object: the code-object reader; funcmap: the funcmap parser),
# tools/fuzz (shaderdata: the streaming rocprofv3 JSON reader; trace_dir: the whole trace
# directory pipeline over filenames.json, shaderdata, occupancy.json and code.json),
# thread-trace/fuzz (decoders). Needs `cargo install cargo-fuzz`; RUSTC_BOOTSTRAP=1 lets
# cargo-fuzz's nightly flags work on a stable toolchain. Any crash fails the script (and leaves
# the input in <crate>/fuzz/artifacts/<target>/). The fuzz crates are their own workspaces, not
# members of the project's. Not part of ci/test.sh: building the instrumented crates alone takes
# minutes.
set -euo pipefail
secs="${1:-20}"
root="$(cd "$(dirname "$0")/.." && pwd)"
export RUSTC_BOOTSTRAP=1
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "ci/fuzz.sh: cargo-fuzz is missing: cargo install cargo-fuzz" >&2
    exit 2
fi
run() {
    local crate="$1" target="$2"
    local dir="$root/$crate/fuzz"
    local corpus="$dir/corpus/$target"
    mkdir -p "$corpus"
    if [ -d "$dir/seeds/$target" ]; then
        cp -n "$dir/seeds/$target"/* "$corpus"/ 2>/dev/null || true
    fi
    echo "== $crate/fuzz $target: ${secs}s"
    mkdir -p "$dir/artifacts"
    local log="$dir/artifacts/$target.log"
    # A private TMPDIR: the trace_dir target writes its ui directory there.
    local tmp
    tmp="$(mktemp -d)"
    set +e
    (cd "$root/$crate" && TMPDIR="$tmp" cargo fuzz run "$target" "$corpus" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -max_len=1048576 -print_final_stats=1) \
        >"$log" 2>&1
    local rc=$?
    set -e
    rm -rf "$tmp"
    grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::peak_rss_mb)' "$log" || true
    if [ "$rc" -ne 0 ]; then
        tail -40 "$log" >&2
        echo "ci/fuzz.sh: $crate/fuzz $target failed (exit $rc); log: $log" >&2
        exit 1
    fi
}
run codeobj code_object
run codeobj funcmap
run tools shaderdata
run tools trace_dir
run thread-trace decoders
echo "ci/fuzz.sh: no crash"
