#!/usr/bin/env bash
# Runs the lanes of ci/lanes.tsv (all, or those named), SQTT_LANE_JOBS at a time (default 2: the
# lanes' tests are mostly one compiler process after another, so two lanes keep both cores
# busy). Each lane's output goes to target/lanes/logs/NAME.log and is printed whole when the
# lane ends, with the lane's time; the run fails when any lane fails (the others still finish).
#   ci/lanes.sh               every lane
#   ci/lanes.sh sid llvm22    those lanes
#   ci/lanes.sh --list        the table as it will run
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=ci/tmpdir.sh
source ci/tmpdir.sh
TABLE=ci/lanes.tsv
LOGS=target/lanes/logs

rows() { grep -v '^#' "$TABLE" | grep -v '^[[:space:]]*$'; }

wanted=("$@")
if [ "${1:-}" = --list ]; then
  rows | while IFS=$'\t' read -r name setup arches suites; do
    printf '%-13s %-24s %-40s %s\n' "$name" "$setup" "$arches" "$suites"
  done
  exit 0
fi
for w in "${wanted[@]}"; do
  rows | cut -f1 | grep -qx "$w" || {
    echo "ci/lanes.sh: no lane '$w' in $TABLE (lanes: $(rows | cut -f1 | tr '\n' ' '))" >&2
    exit 2
  }
done
jobs=${SQTT_LANE_JOBS:-2}
case $jobs in '' | *[!0-9]* | 0) echo "ci/lanes.sh: SQTT_LANE_JOBS must be a positive number, not '$jobs'" >&2; exit 2 ;; esac

# One lane: its script sets up the toolchain and runs the lane's e2e suites (its row's fourth
# column, with lane_run_suites in ci/lane-lib.sh) in that environment.
lane() { # name setup
  local cmd
  read -r -a cmd <<<"$2"
  if [ "${cmd[0]}" = check ]; then
    SQTT_PLUGIN_RUST_ONLY=1 cargo check --locked -p sqtt-plugin --no-default-features \
      --features "llvm${cmd[1]}-1" --target-dir "target/llvm${cmd[1]}"
    return
  fi
  bash "${cmd[@]}" </dev/null
}

mkdir -p "$LOGS"
start=$SECONDS
# Read the table first: the lanes themselves may read standard input.
mapfile -t lines < <(rows)
declare -A pid_name=() pid_start=()
failed=()
# Waits for one lane to end; prints its log and time.
reap() {
  local pid rc=0 name
  wait -n -p pid || rc=$?
  name=${pid_name[$pid]}
  echo "== lane $name: log (target/lanes/logs/$name.log) =="
  cat "$LOGS/$name.log"
  if [ $rc = 0 ]; then
    echo "== lane $name done in $((SECONDS - pid_start[$pid])) s (total $((SECONDS - start)) s)"
  else
    echo "== lane $name FAILED (exit $rc) after $((SECONDS - pid_start[$pid])) s (total $((SECONDS - start)) s)"
    failed+=("$name")
  fi
  unset "pid_name[$pid]"
}
for line in "${lines[@]}"; do
  IFS=$'\t' read -r name setup _ <<<"$line"
  if [ ${#wanted[@]} -gt 0 ] && ! printf '%s\n' "${wanted[@]}" | grep -qx "$name"; then
    continue
  fi
  while [ ${#pid_name[@]} -ge "$jobs" ]; do reap; done
  echo "== lane $name started (total $((SECONDS - start)) s)"
  (
    set -euo pipefail
    lane "$name" "$setup"
  ) >"$LOGS/$name.log" 2>&1 &
  pid_name[$!]=$name
  pid_start[$!]=$SECONDS
done
while [ ${#pid_name[@]} -gt 0 ]; do reap; done
if [ ${#failed[@]} -gt 0 ]; then
  echo "ci/lanes.sh: FAIL: ${failed[*]}" >&2
  exit 1
fi
echo "== ci/lanes.sh: every lane passed ($((SECONDS - start)) s)"
