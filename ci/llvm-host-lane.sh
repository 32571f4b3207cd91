#!/usr/bin/env bash
# A modern-LLVM lane on the bookworm host: LLVM 19 (bookworm main) or 22 (bookworm-security);
# LLVM 23, which only sid packages, runs the same lane inside a cached sid chroot of its own
# (/var/cache/sqtt-llvm23, SQTT_LLVM23_ROOT; a copy of the sid lane's chroot when that exists).
# Builds the plugin with its own pass registration (feature llvm<N>-1), then runs the IR fixtures
# through opt-<N>/llc-<N> on the lane's arches (ci/ir-cases.sh: exact marker sequences, funcmaps,
# scope checks, address tracing, clock packing, no cache invalidation) and the IR-level e2e
# suite against that opt. Real HIP on modern hipcc runs in the sid/experimental lanes: Debian
# bookworm's HIP 5.2 headers do not compile with clang 19+.
#
# Usage: ci/llvm-host-lane.sh MAJOR [ARCH...]   (default arches: the lane's row of ci/lanes.tsv)
#        ci/llvm-host-lane.sh MAJOR -- CMD...   build, then run CMD with the lane's environment
# Settings: SQTT_NET_TIMEOUT (seconds per apt step, default 600), CARGO_BUILD_JOBS (default 2).
set -euo pipefail

MAJOR=${1:?usage: $0 MAJOR [ARCH... | -- CMD...]}
shift
LANE_NAME=llvm$MAJOR-lane
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=ci/lane-lib.sh
source "$REPO/ci/lane-lib.sh"
# shellcheck source=ci/ir-cases.sh
source "$REPO/ci/ir-cases.sh"

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

START=$(date +%s)
CACHE=$REPO/target/lanes/llvm$MAJOR
NET_TIMEOUT=${SQTT_NET_TIMEOUT:-600}
TARGET_DIR=$REPO/target/llvm$MAJOR
LLVM_BIN=/usr/lib/llvm-$MAJOR/bin
mkdir -p "$CACHE"

PACKAGES=("llvm-$MAJOR-dev" "llvm-$MAJOR" "lld-$MAJOR" g++)
lane_apt_install "$CACHE/apt.log" "${PACKAGES[@]}"
for t in opt llc llvm-config llvm-objcopy llvm-objdump; do
  [ -x "$LLVM_BIN/$t" ] || lane_die "$LLVM_BIN/$t is missing after installing ${PACKAGES[*]}"
done

FEATURE=llvm$MAJOR-1
lane_log "building the plugin ($FEATURE) into $TARGET_DIR"
t0=$(date +%s)
if ! (cd "$REPO" && env "LLVM_SYS_${MAJOR}1_PREFIX=/usr/lib/llvm-$MAJOR" \
  cargo build --release --locked -p sqtt-plugin --no-default-features --features "$FEATURE" \
  --target-dir "$TARGET_DIR" -j "${CARGO_BUILD_JOBS:-2}") >"$CACHE/build.log" 2>&1; then
  tail -40 "$CACHE/build.log" >&2
  lane_die "cargo build of sqtt-plugin with --features $FEATURE failed (log: $CACHE/build.log)"
fi
PLUGIN=$TARGET_DIR/release/libsqtt_plugin.so
[ -f "$PLUGIN" ] || lane_die "the build produced no $PLUGIN"
lane_log "plugin built in $(($(date +%s) - t0))s"

export SQTT_PLUGIN=$PLUGIN SQTT_LLVM_MAJOR=$MAJOR SQTT_LLVM_BIN=$LLVM_BIN
export SQTT_TEST_LLVM_SUFFIX=-$MAJOR SQTT_TEST_ARCHES="${ARCHES[*]}"
if [ ${#CMD[@]} -gt 0 ]; then
  (cd "$REPO" && "${CMD[@]}")
  exit
fi

WORK=$CACHE/work
rm -rf "$WORK"
mkdir -p "$WORK"
FIXTURES=$REPO/tests/fixtures/ir
IR_OPT=$LLVM_BIN/opt IR_LLC=$LLVM_BIN/llc IR_OBJCOPY=$LLVM_BIN/llvm-objcopy
IR_OBJDUMP=$LLVM_BIN/llvm-objdump IR_LLVM_MAJOR=$MAJOR
lane_log "IR cases on ${ARCHES[*]} ($("$IR_OPT" --version | sed -n 's/.*LLVM version //p' | head -1))"
ir_cases "${ARCHES[@]}"

# The plugin really registered at the hooks clang uses: the per-level pipelines name its passes.
# (opt 19 exits 1 after printing, re-parsing its own dump: only the text counts.)
for level in O0 O2; do
  want="sqtt"
  [ $level = O2 ] && want="sqtt-early sqtt"
  pipeline=$("$IR_OPT" -load-pass-plugin="$PLUGIN" -passes="default<$level>" \
    -print-pipeline-passes -disable-output "$FIXTURES/named_markers.ll" 2>/dev/null || true)
  got=$(tr ',' '\n' <<<"$pipeline" | grep -E '^sqtt(-early)?$' | tr '\n' ' ' | sed 's/ $//' || true)
  if [ "$got" = "$want" ]; then
    lane_pass "default<$level> pipeline holds [$got]"
  else
    lane_fail "default<$level> pipeline" "expected the passes [$want], got [$got]"
  fi
done

lane_summary $(($(date +%s) - START))
