#!/usr/bin/env bash
# The sid / experimental lane's work inside its chroot (started by ci/sid-lane.sh, which mounts
# the worktree at /src and the host's Rust toolchain at /opt/rust). Debian's real hipcc 7.x:
#   sid:          hipcc 7.0.2 on clang 21 (plugin feature llvm21-1)
#   experimental: hipcc 7.2.4 on clang 22 (plugin feature llvm22-1), with gfx1250
# on the arches of the lane's row of ci/lanes.tsv.
#
#   sid-lane-inner.sh            build, toolchain checks, the lane's e2e suites (ci/lanes.tsv)
#   sid-lane-inner.sh -- CMD...  build, then run CMD in /src with the lane's environment
#
# Environment: SQTT_LANE_SUITE (sid | experimental), SQTT_BUILD_TIMEOUT, CARGO_BUILD_JOBS.
set -euo pipefail

SUITE=${SQTT_LANE_SUITE:-sid}
case $SUITE in
sid) LANE_NAME=sid-lane MAJOR=21 HIPCC_VERSION=7.0 ;;
experimental) LANE_NAME=experimental-lane MAJOR=22 HIPCC_VERSION=7.2 ;;
*) echo "SQTT_LANE_SUITE must be sid or experimental, not $SUITE" >&2; exit 2 ;;
esac
REPO=/src
# shellcheck source=ci/lane-lib.sh
source "$REPO/ci/lane-lib.sh"
# The arches, and those of the one multi-arch binary, come from the lane's row of ci/lanes.tsv.
read -r -a ARCHES <<<"$(lane_table_arches "$SUITE")"
read -r -a FAT <<<"$(lane_table_arches --multi "$SUITE")"

LLVM_BIN=/usr/lib/llvm-$MAJOR/bin
FEATURE=llvm$MAJOR-1
# The lane's own target directory: the bookworm host lane of the same major builds into
# target/llvm$MAJOR against another glibc, and lanes run two at a time.
TARGET_DIR=$REPO/target/$SUITE-llvm$MAJOR
LANE_DIR=$REPO/target/lanes/$SUITE
BUILD_TIMEOUT=${SQTT_BUILD_TIMEOUT:-1500}
# Debian's rocm-device-libs-N ship the device bitcode in clang's resource directory, where hipcc
# (and clang) find it by themselves.
DEVLIBS=/usr/lib/llvm-$MAJOR/lib/clang/$MAJOR/amdgcn/bitcode
export PATH=/opt/rust/bin:$LLVM_BIN:$PATH CARGO_HOME=/root/.cargo
export "LLVM_SYS_${MAJOR}1_PREFIX=/usr/lib/llvm-$MAJOR"

command -v cargo >/dev/null || lane_die "no cargo in /opt/rust/bin (the host toolchain mount)"
command -v hipcc >/dev/null || lane_die "no hipcc in the $SUITE chroot"
for t in clang clang++ opt llc llvm-objcopy llvm-objdump llvm-config clang-offload-bundler; do
  [ -x "$LLVM_BIN/$t" ] || lane_die "$LLVM_BIN/$t is missing in the $SUITE chroot"
done
[ -f "$DEVLIBS/ockl.bc" ] || lane_die "no device bitcode in $DEVLIBS (rocm-device-libs-$MAJOR)"
mkdir -p "$LANE_DIR"

# --- the plugin and the wrapper ----------------------------------------------------------------
PLUGIN=""
if grep -q "^$FEATURE *=" "$REPO/plugin/Cargo.toml"; then
  lane_build_plugin "$FEATURE" "$TARGET_DIR" "$LANE_DIR/build.log"
  # The wrapper in the profile cargo test uses (tests/ look for it next to the test binaries).
  t0=$SECONDS
  if ! (cd "$REPO" && timeout "$BUILD_TIMEOUT" cargo build --locked -p sqtt-hipcc \
    --target-dir "$TARGET_DIR" -j "${CARGO_BUILD_JOBS:-2}") >>"$LANE_DIR/build.log" 2>&1; then
    tail -40 "$LANE_DIR/build.log" >&2
    lane_die "cargo build of sqtt-hipcc failed or exceeded ${BUILD_TIMEOUT}s (log: $LANE_DIR/build.log)"
  fi
  lane_log "sqtt-hipcc built in $((SECONDS - t0))s"
fi

# The toolchain is the one the lane is about: hipcc on clang $MAJOR from the expected package.
version=$(hipcc --version 2>&1 || true)
clang_line=$(echo "$version" | grep -m1 'clang version' || true)
dpkg_hipcc=$(dpkg-query -W -f='${Version}' hipcc 2>/dev/null || true)
lane_log "hipcc $dpkg_hipcc: HIP $(echo "$version" | sed -n 's/^HIP version: //p' | head -1), $clang_line"
case $clang_line in
*"clang version $MAJOR."*) ;;
*) lane_die "hipcc --version: expected clang $MAJOR, got '$clang_line'" ;;
esac
case $dpkg_hipcc in
"$HIPCC_VERSION".*) ;;
*) lane_die "the hipcc package: expected $HIPCC_VERSION.x, got '$dpkg_hipcc'" ;;
esac
[ -n "$PLUGIN" ] || lane_die "plugin/Cargo.toml has no $FEATURE feature on this branch"

export SQTT_LLVM_MAJOR=$MAJOR SQTT_LLVM_BIN=$LLVM_BIN SQTT_TEST_LLVM_SUFFIX=-$MAJOR
export HIP_CLANG_PATH=$LLVM_BIN SQTT_DEVICE_LIB_PATH=$DEVLIBS SQTT_PLUGIN=$PLUGIN
export SQTT_TEST_ARCHES="${ARCHES[*]}" SQTT_TEST_MULTI_ARCH="${FAT[*]}"
export CARGO_TARGET_DIR=$TARGET_DIR
cd "$REPO"
if [ "${1:-}" = -- ]; then
  shift
  lane_log "running with the LLVM $MAJOR environment: $*"
  exec "$@"
fi
lane_run_suites "$SUITE"
