# shellcheck shell=bash
# Sourced by the lane scripts (ci/*-lane.sh): setup helpers, the lane's row of ci/lanes.tsv, and
# running its e2e suites. The checks themselves are cargo tests (tests/tests/*.rs).

LANE_NAME=${LANE_NAME:-lane}

lane_log() { echo "[$LANE_NAME] $*" >&2; }

# Aborts the lane (setup problems: missing tools, failed build, network).
lane_die() {
  echo "[$LANE_NAME] FAIL: $*" >&2
  echo "== $LANE_NAME: FAIL (setup: $*)" >&2
  exit 1
}

# Builds the plugin (release, --locked, only the pass registration of FEATURE) into TARGET_DIR
# with cargo run from the worktree ($REPO), its output in LOG, time-limited by BUILD_TIMEOUT
# seconds when that is set; each NAME=VALUE is set in cargo's environment (the LLVM_SYS prefix,
# a PATH). Sets PLUGIN to the built .so; aborts the lane with the log's tail when the build fails.
#   lane_build_plugin FEATURE TARGET_DIR LOG [NAME=VALUE...]
lane_build_plugin() {
  local feature=$1 target=$2 log=$3 t0=$SECONDS limit=()
  shift 3
  [ -n "${BUILD_TIMEOUT:-}" ] && limit=(timeout "$BUILD_TIMEOUT")
  lane_log "building the plugin ($feature) into $target ($(cargo --version))"
  # A cold build downloads the crates from crates.io: hence the time limit in the chroots.
  if ! (cd "$REPO" && env "$@" "${limit[@]}" cargo build --release --locked -p sqtt-plugin \
    --no-default-features --features "$feature" --target-dir "$target" \
    -j "${CARGO_BUILD_JOBS:-2}") >"$log" 2>&1; then
    tail -40 "$log" >&2
    lane_die "cargo build of sqtt-plugin with --features $feature failed${limit[*]:+ or exceeded ${BUILD_TIMEOUT}s} (log: $log)"
  fi
  PLUGIN=$target/release/libsqtt_plugin.so
  [ -f "$PLUGIN" ] || lane_die "the build produced no $PLUGIN"
  lane_log "plugin built in $((SECONDS - t0))s"
}

# A chroot lane's outer half (ci/chroot.sh sourced): its arguments (none, or `-- CMD ARGS...`),
# root and the host's rustc checked, ROOT made or completed with the PACKAGES array (a Debian
# SUITE), then ci/INNER run inside it with VARS (NAME=VALUE words), CARGO_BUILD_JOBS,
# SQTT_BUILD_TIMEOUT and the arguments; the timings said. Ends the script with INNER's status (so
# it runs under the script's `set -e`: a failed chroot_ensure stops the lane).
#   lane_in_chroot SUITE ROOT INNER VARS [-- CMD ARGS...]
lane_in_chroot() {
  local suite=$1 root=$2 inner=$3 vars=$4 start t_chroot t_all status=0
  shift 4
  case "${1:-}" in
  -- | "") ;;
  *) echo "usage: $0 [-- CMD ARGS...]" >&2; exit 2 ;;
  esac
  [ "$(id -u)" = 0 ] || lane_die "needs root (debootstrap, chroot and mount namespaces)"
  command -v rustc >/dev/null || lane_die "no rustc on PATH: the chroot uses the host's Rust toolchain"
  start=$(date +%s)
  # Also takes the chroot's lock for the whole run (a second run waits instead of racing
  # debootstrap, apt or the build).
  chroot_ensure "$suite" "$root" "${PACKAGES[@]}"
  t_chroot=$(($(date +%s) - start))
  lane_log "chroot ready in ${t_chroot}s ($root)"
  chroot_run "$root" "$vars CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-2} \
    SQTT_BUILD_TIMEOUT=${SQTT_BUILD_TIMEOUT:-1500} \
    bash /src/ci/$inner $(printf '%q ' "$@")" || status=$?
  t_all=$(($(date +%s) - start))
  lane_log "timings: chroot ${t_chroot}s, build and suites $((t_all - t_chroot))s, total ${t_all}s"
  if [ $status != 0 ] && [ $# -gt 0 ]; then
    echo "== $LANE_NAME: FAIL (${*:2} exited $status)" >&2
  fi
  exit $status
}

# Installs the Debian packages of a host lane that are missing (nothing when all are there);
# each network step time-limited by NET_TIMEOUT, its output in LOG.
#   lane_apt_install LOG PACKAGE...
lane_apt_install() {
  local log=$1 p missing=()
  shift
  for p in "$@"; do
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" = installed ] || missing+=("$p")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  lane_log "installing ${missing[*]}"
  # Lanes run two at a time (ci/lanes.sh): apt-get waits for the other lane's apt-get rather
  # than failing on dpkg's lock.
  local lock=(flock -w 1800 /var/lock/sqtt-host-apt.lock)
  "${lock[@]}" timeout "${NET_TIMEOUT:-600}" apt-get update -qq >"$log" 2>&1 ||
    lane_die "apt-get update failed or timed out after ${NET_TIMEOUT:-600}s (see $log)"
  DEBIAN_FRONTEND=noninteractive "${lock[@]}" timeout "${NET_TIMEOUT:-600}" \
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$log" 2>&1 ||
    lane_die "apt-get install ${missing[*]} failed or timed out (see $log)"
}

# The arches of a lane in ci/lanes.tsv (its third column): the single ones, or with --multi those
# of its multi-arch binary (the entry written A+B+C), one a word. Fails when the table has no
# such lane.
#   lane_table_arches [--multi] LANE
lane_table_arches() {
  local multi=0 row
  [ "$1" = --multi ] && { multi=1; shift; }
  row=$(awk -F'\t' -v n="$1" '$1 == n { print $3 }' "$(dirname "${BASH_SOURCE[0]}")/lanes.tsv")
  [ -n "$row" ] || lane_die "no lane '$1' in ci/lanes.tsv"
  # awk, not grep: no match is no arch, not a failure under pipefail.
  tr ' ' '\n' <<<"$row" | awk -v m="$multi" '(m == 1 && /[+]/) || (m != 1 && !/[+]/ && $0 != "-")' |
    tr '+\n' '  ' | sed 's/ $//'
}

# Runs the lane's e2e suites (the fourth column of its row in ci/lanes.tsv) with cargo test in the
# current environment (the lane's toolchain), from the worktree: the whole files in one cargo
# test (--no-fail-fast: every file runs), each FILE:FILTER entry in its own. Prints
# `== LANE: PASS` or `== LANE: FAIL` and returns non-zero on a failure (the other suites still
# run).
#   lane_run_suites LANE
lane_run_suites() {
  local suites s whole=() filtered=() rc=0 t0=$SECONDS
  suites=$(awk -F'\t' -v n="$1" '$1 == n { print $4 }' "$(dirname "${BASH_SOURCE[0]}")/lanes.tsv")
  [ -n "$suites" ] || lane_die "no lane '$1' in ci/lanes.tsv"
  if [ "$suites" = - ]; then
    echo "== $LANE_NAME: no suites" >&2
    return 0
  fi
  for s in $suites; do
    case $s in
    *:*) filtered+=("$s") ;;
    *) whole+=(--test "$s") ;;
    esac
  done
  if [ ${#whole[@]} -gt 0 ]; then
    lane_log "cargo test -p sqtt-e2e --no-fail-fast ${whole[*]}"
    cargo test -p sqtt-e2e --no-fail-fast "${whole[@]}" </dev/null || rc=1
  fi
  for s in "${filtered[@]}"; do
    lane_log "cargo test -p sqtt-e2e --test ${s%%:*} -- ${s#*:}"
    cargo test -p sqtt-e2e --test "${s%%:*}" -- "${s#*:}" </dev/null || rc=1
  done
  if [ $rc = 0 ]; then
    echo "== $LANE_NAME: PASS (suites in $((SECONDS - t0))s)" >&2
  else
    echo "== $LANE_NAME: FAIL (a suite failed; see above)" >&2
  fi
  return $rc
}
