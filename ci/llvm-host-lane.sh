#!/usr/bin/env bash
# A modern-LLVM lane on the bookworm host: LLVM 19 (bookworm main) or 22 (bookworm-security);
# LLVM 23, which only sid packages, runs the same lane inside a cached sid chroot of its own
# (/var/cache/sqtt-llvm23, SQTT_LLVM23_ROOT; a copy of the sid lane's chroot when that exists).
# Builds the plugin with its own pass registration (feature llvm<N>-1), then runs the lane's e2e
# suites (its row of ci/lanes.tsv: ir_fixtures, the IR fixtures through opt-<N>/llc-<N>, and the
# IR-level suites) against that LLVM. Real HIP on modern hipcc runs in the sid/experimental lanes:
# Debian bookworm's HIP 5.2 headers do not compile with clang 19+.
#
# Usage: ci/llvm-host-lane.sh MAJOR [ARCH...]   set up, build, run the suites (default arches:
#                                               the lane's row of ci/lanes.tsv)
#        ci/llvm-host-lane.sh MAJOR -- CMD...   set up, build, then run CMD with the lane's
#                                               environment
# Settings: SQTT_NET_TIMEOUT (seconds per apt step, default 600), CARGO_BUILD_JOBS (default 2).
set -euo pipefail

MAJOR=${1:?usage: $0 MAJOR [ARCH... | -- CMD...]}
shift
LANE_NAME=llvm$MAJOR-lane
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=ci/lane-lib.sh
source "$REPO/ci/lane-lib.sh"

case $MAJOR in
19 | 22) ;;
23)
  if [ ! -f /.sqtt-chroot-ready ]; then
    # On the host: the chroot (quick when cached), then this script again inside it, with the
    # worktree at /src, the host's Rust at /opt/rust and the lane's own cargo target directory.
    [ "$(id -u)" = 0 ] || lane_die "LLVM 23 runs in a sid chroot: needs root"
    # shellcheck source=ci/chroot.sh
    source "$REPO/ci/chroot.sh"
    ROOT=${SQTT_LLVM23_ROOT:-/var/cache/sqtt-llvm23}
    CHROOT_SEED=${SQTT_SID_ROOT:-/var/cache/sqtt-sid}
    chroot_ensure sid "$ROOT" llvm-23 llvm-23-dev lld-23 g++ ca-certificates
    rc=0 args=""
    # (printf '%q' of no arguments would be one empty argument.)
    [ $# -eq 0 ] || args=$(printf '%q ' "$@")
    chroot_run "$ROOT" "export PATH=/opt/rust/bin:\$PATH CARGO_HOME=/root/.cargo \
      CARGO_TARGET_DIR=/src/target/llvm23 CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-2}; \
      bash /src/ci/llvm-host-lane.sh 23 $args" || rc=$?
    exit $rc
  fi
  ;;
*) lane_die "no lane for LLVM $MAJOR (19 and 22 are packaged on bookworm, 23 in sid)" ;;
esac
# The default arches are the lane's row of ci/lanes.tsv (clang 19 knows neither gfx950 nor
# gfx1250).
read -r -a DEFAULT_ARCHES <<<"$(lane_table_arches "llvm$MAJOR")"
ARCHES=() CMD=()
if [ "${1:-}" = -- ]; then
  shift
  CMD=("$@")
else
  ARCHES=("$@")
fi
[ ${#ARCHES[@]} -gt 0 ] || ARCHES=("${DEFAULT_ARCHES[@]}")

CACHE=$REPO/target/lanes/llvm$MAJOR
NET_TIMEOUT=${SQTT_NET_TIMEOUT:-600}
TARGET_DIR=$REPO/target/llvm$MAJOR
LLVM_BIN=/usr/lib/llvm-$MAJOR/bin
mkdir -p "$CACHE"

PACKAGES=("llvm-$MAJOR-dev" "llvm-$MAJOR" "lld-$MAJOR" g++)
# The C device-code suites of the 19 and 22 rows (amd_header_c, plugin_options) run clang-N.
case $MAJOR in 19 | 22) PACKAGES+=("clang-$MAJOR") ;; esac
lane_apt_install "$CACHE/apt.log" "${PACKAGES[@]}"
for t in opt llc llvm-config llvm-objcopy llvm-objdump; do
  [ -x "$LLVM_BIN/$t" ] || lane_die "$LLVM_BIN/$t is missing after installing ${PACKAGES[*]}"
done

lane_build_plugin "llvm$MAJOR-1" "$TARGET_DIR" "$CACHE/build.log" \
  "LLVM_SYS_${MAJOR}1_PREFIX=/usr/lib/llvm-$MAJOR"

export SQTT_PLUGIN=$PLUGIN SQTT_LLVM_MAJOR=$MAJOR SQTT_LLVM_BIN=$LLVM_BIN
export SQTT_TEST_LLVM_SUFFIX=-$MAJOR SQTT_TEST_ARCHES="${ARCHES[*]}"
cd "$REPO"
if [ ${#CMD[@]} -gt 0 ]; then
  "${CMD[@]}"
  exit
fi
lane_log "suites on ${ARCHES[*]} ($("$LLVM_BIN/opt" --version | sed -n 's/.*LLVM version //p' | head -1))"
lane_run_suites "llvm$MAJOR"
