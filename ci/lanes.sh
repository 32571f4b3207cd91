#!/usr/bin/env bash
# Runs the lanes of ci/lanes.tsv (all, or those named), printing each lane's time, and fails at
# the first lane that fails.
#   ci/lanes.sh               every lane
#   ci/lanes.sh sid llvm22    those lanes
#   ci/lanes.sh --list        the table as it will run
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
TABLE=ci/lanes.tsv

rows() { grep -v '^#' "$TABLE" | grep -v '^[[:space:]]*$'; }

wanted=("$@")
if [ "${1:-}" = --list ]; then
  rows | while IFS=$'\t' read -r name setup suites; do
    printf '%-14s %-28s %s\n' "$name" "$setup" "$suites"
  done
  exit 0
fi
for w in "${wanted[@]}"; do
  rows | cut -f1 | grep -qx "$w" || {
    echo "ci/lanes.sh: no lane '$w' in $TABLE (lanes: $(rows | cut -f1 | tr '\n' ' '))" >&2
    exit 2
  }
done

start=$SECONDS
# Read the table first: the lanes themselves may read standard input.
mapfile -t lines < <(rows)
for line in "${lines[@]}"; do
  IFS=$'\t' read -r name setup suites <<<"$line"
  if [ ${#wanted[@]} -gt 0 ] && ! printf '%s\n' "${wanted[@]}" | grep -qx "$name"; then
    continue
  fi
  lap=$SECONDS
  read -r -a cmd <<<"$setup"
  if [ "${cmd[0]}" = check ]; then
    SQTT_PLUGIN_RUST_ONLY=1 cargo check --locked -p sqtt-plugin --no-default-features \
      --features "llvm${cmd[1]}-1" --target-dir "target/llvm${cmd[1]}"
  else
    bash "${cmd[@]}"
    if [ "$suites" != - ]; then
      tests=()
      for s in $suites; do tests+=(--test "$s"); done
      bash "${cmd[@]}" -- cargo test -p sqtt-e2e "${tests[@]}"
    fi
  fi
  echo "== lane $name done in $((SECONDS - lap)) s (total $((SECONDS - start)) s)"
done
