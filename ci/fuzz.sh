#!/usr/bin/env bash
# Bounded fuzz runs of every fuzz target, part of .ci/run: any crash fails CI.
#
#   ci/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default 60 s, every target)
#
# Targets (crate/fuzz, target: what it covers):
#   codeobj       code_object  the code-object reader (ELF, archives, bundles, CCOB, bitcode)
#   codeobj       ccob         bounded decompression: compressed bundles of any declared and
#                              actual size (zstd frames of fuzzed bytes and up to 256 MiB of
#                              zeros, any window; zlib streams); -rss_limit_mb makes an unbounded
#                              decode a crash
#   codeobj       funcmap      the funcmap section parser and its print/parse round trip
#   tools         shaderdata   the streaming rocprofv3 shaderdata_*.json reader
#   tools         trace_dir    the whole trace-directory pipeline (filenames.json, shaderdata,
#                              occupancy.json, code.json, a compressed-bundle code object through
#                              `sqtt stats` and `sqtt memory`)
#   tools         raw_dir      a rocprofv3 run's raw files (kernel trace as JSON, CSV or SQLite,
#                              shader engines' .att, code objects) through `sqtt flamegraph`,
#                              `stats` and `memory`
#   thread-trace  decoders     the thread-trace decoders, wave pairing, markers, clock
#   thread-trace  raw_records  the decoders' shader-data records (fields, order, a stop's prefix)
# The fuzz crates are workspaces of their own, built into one target directory so that their
# common dependencies build once. It and the corpora live in SQTT_FUZZ_DIR (default
# /var/cache/sqtt-fuzz, beside the lanes' chroots, so a fresh clone does not rebuild the
# instrumented dependencies: ~8 min on a busy machine; target/fuzz when /var/cache is not
# writable). Two targets run at a time (the machine has 2 cores).
# Each corpus lives in SQTT_FUZZ_DIR/corpus/<target>, kept between runs, and is seeded from the
# committed seeds (<crate>/fuzz/seeds/<target>) and the real captures in tests/data (code objects
# for code_object, thread-trace streams for decoders). A crash leaves its input in
# SQTT_FUZZ_DIR/artifacts/<target>/, its log in SQTT_FUZZ_DIR/logs/<target>.log; the next runs
# start with it (copied into the corpus), so it fails them until fixed. Commit a fixed crash's
# input as a seed, with a test.
#
# Prints per target the executions, libFuzzer's coverage (`cov`: code edges reached; `ft`:
# features) and the corpus size. cargo-fuzz is installed (into ~/.cargo/bin, so once) when
# missing; RUSTC_BOOTSTRAP=1 lets its nightly flags work on the stable toolchain.
set -euo pipefail
secs="${1:-60}"
shift || true
root="$(cd "$(dirname "$0")/.." && pwd)"
out=${SQTT_FUZZ_DIR:-/var/cache/sqtt-fuzz}
if [ -z "${SQTT_FUZZ_DIR:-}" ] && ! mkdir -p "$out" 2>/dev/null; then
  out=$root/target/fuzz
fi
export RUSTC_BOOTSTRAP=1

ALL=(codeobj:code_object codeobj:ccob codeobj:funcmap tools:shaderdata tools:trace_dir
  tools:raw_dir thread-trace:decoders thread-trace:raw_records)
targets=()
if [ $# -gt 0 ]; then
  for want in "$@"; do
    found=""
    for t in "${ALL[@]}"; do [ "${t#*:}" = "$want" ] && found=$t; done
    [ -n "$found" ] || { echo "ci/fuzz.sh: no fuzz target '$want' (targets: ${ALL[*]#*:})" >&2; exit 2; }
    targets+=("$found")
  done
else
  targets=("${ALL[@]}")
fi
case $secs in '' | *[!0-9]*) echo "ci/fuzz.sh: SECONDS_PER_TARGET must be a number, not '$secs'" >&2; exit 2 ;; esac

mkdir -p "$out"
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "== ci/fuzz.sh: installing cargo-fuzz (once, into ~/.cargo/bin)"
  timeout "${SQTT_NET_TIMEOUT:-900}" cargo install --locked cargo-fuzz >"$out.install.log" 2>&1 || {
    tail -20 "$out.install.log" >&2
    echo "ci/fuzz.sh: cargo install cargo-fuzz failed or timed out" >&2
    exit 1
  }
fi
mkdir -p "$out/corpus" "$out/artifacts" "$out/logs"

# Build every crate first, one after the other (they share the target directory); the runs then
# only execute.
start=$SECONDS
for crate in $(printf '%s\n' "${targets[@]%%:*}" | sort -u); do
  log="$out/logs/build-$crate.log"
  if ! (cd "$root/$crate" && cargo fuzz build --target-dir "$out/build") >"$log" 2>&1; then
    tail -30 "$log" >&2
    echo "ci/fuzz.sh: building $crate/fuzz failed (log: $log)" >&2
    exit 1
  fi
done
echo "== ci/fuzz.sh: fuzz targets built in $((SECONDS - start)) s"

seed() { # crate target corpus
  local crate=$1 target=$2 corpus=$3
  if [ -d "$root/$crate/fuzz/seeds/$target" ]; then
    cp -n "$root/$crate/fuzz/seeds/$target"/* "$corpus"/ 2>/dev/null || true
  fi
  local ext=""
  case $target in
  code_object) ext=co ;;
  decoders | raw_records) ext=att ;;
  esac
  [ -z "$ext" ] && return 0
  local f
  while IFS= read -r f; do
    # Named by path, so a capture seeds once however often the script runs.
    cp -n "$f" "$corpus/data_$(echo "${f#"$root"/tests/data/}" | tr '/' '_')"
  done < <(find "$root/tests/data" -name "*.$ext" -type f)
}

run() { # crate:target
  local crate=${1%%:*} target=${1#*:}
  local corpus="$out/corpus/$target" log="$out/logs/$target.log" tmp rc
  mkdir -p "$corpus" "$out/artifacts/$target"
  seed "$crate" "$target" "$corpus"
  # What earlier runs here found (crashes, leaks, timeouts, out of memory) runs first, with the
  # corpus: a failure found once fails every run until it is fixed, rather than waiting for the
  # fuzzer to meet it again.
  cp -n "$out/artifacts/$target"/* "$corpus"/ 2>/dev/null || true
  # A private TMPDIR: the trace_dir and raw_dir targets write their directories there.
  tmp=$(mktemp -d)
  set +e
  (cd "$root/$crate" && TMPDIR="$tmp" cargo fuzz run --target-dir "$out/build" "$target" \
    "$corpus" -- -max_total_time="$secs" -rss_limit_mb=2048 -max_len=1048576 \
    -print_final_stats=1 -artifact_prefix="$out/artifacts/$target/") >"$log" 2>&1
  rc=$?
  set -e
  rm -rf "$tmp"
  local execs cov ft
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  # No match (a run that failed on its first inputs) is no error: the line says `?`.
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2 || true)
  ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | cut -d' ' -f2 || true)
  printf '== fuzz %-12s %-8s %10s executions in %s s, cov %s, ft %s, corpus %s files\n' \
    "$target" "$([ "$rc" = 0 ] && echo ok || echo FAILED)" "${execs:-?}" "$secs" "${cov:-?}" \
    "${ft:-?}" "$(find "$corpus" -type f | wc -l)"
  if [ "$rc" != 0 ]; then
    tail -40 "$log" >&2
    echo "ci/fuzz.sh: $crate/fuzz $target failed (exit $rc); log: $log; inputs:" \
      "$(find "$out/artifacts/$target" -type f | head -5 | tr '\n' ' ')" >&2
  fi
  return "$rc"
}

# Two at a time; wait for every run, then fail if any failed.
failed=0
running=0
start=$SECONDS
for t in "${targets[@]}"; do
  if [ $running -ge "${SQTT_FUZZ_JOBS:-2}" ]; then
    wait -n || failed=1
    running=$((running - 1))
  fi
  run "$t" &
  running=$((running + 1))
done
while [ $running -gt 0 ]; do
  wait -n || failed=1
  running=$((running - 1))
done
if [ $failed != 0 ]; then
  echo "ci/fuzz.sh: FAIL (a fuzz target crashed or could not run; see above)" >&2
  exit 1
fi
echo "== ci/fuzz.sh: ${#targets[@]} targets, ${secs} s each, no crash ($((SECONDS - start)) s)"
