#!/usr/bin/env bash
# The LLVM 18 lane's work inside the trixie chroot (started by ci/llvm18-lane.sh, which mounts
# the worktree at /src and the host's Rust toolchain at /opt/rust). Builds the plugin with the
# llvm18-0 feature, sets up trixie's hipcc 5.7.1 on clang-18, and runs the lane's e2e suites (its
# row of ci/lanes.tsv) on gfx942, gfx1200 and gfx1201 (which LLVM 15/16 do not know).
#
#   llvm18-lane-inner.sh            build and run the suites
#   llvm18-lane-inner.sh -- CMD...  build, then run CMD in /src with the LLVM 18 environment
set -euo pipefail

LANE_NAME=llvm18-lane
REPO=/src
# shellcheck source=ci/lane-lib.sh
source "$REPO/ci/lane-lib.sh"

LLVM_BIN=/usr/lib/llvm-18/bin
TARGET_DIR=$REPO/target/llvm18
LANE_DIR=$REPO/target/lanes/llvm18
# The arches come from ci/lanes.tsv (FAT: the two-arch host object).
read -r -a ARCHES <<<"$(lane_table_arches llvm18)"
read -r -a FAT <<<"$(lane_table_arches --multi llvm18)"
BUILD_TIMEOUT=${SQTT_BUILD_TIMEOUT:-1500}
export PATH=/opt/rust/bin:$LLVM_BIN:$PATH CARGO_HOME=/root/.cargo LLVM_SYS_180_PREFIX=/usr/lib/llvm-18

command -v cargo >/dev/null || lane_die "no cargo in /opt/rust/bin (the host toolchain mount)"
for t in opt llc clang++ llvm-objcopy llvm-config; do
  [ -x "$LLVM_BIN/$t" ] || lane_die "$LLVM_BIN/$t is missing in the chroot"
done

# --- the plugin -------------------------------------------------------------------------------
mkdir -p "$LANE_DIR"
lane_build_plugin llvm18-0 "$TARGET_DIR" "$LANE_DIR/build.log"

# The HIP_CLANG_PATH directory for trixie's hipcc 5.7.1: it hard-codes clang++-17, so a directory
# of clang-18 symlinks stands in (as the LLVM 16 lane does for hipcc 5.2.3); the ROCm 6.0
# device libs lack gfx12 ISA version files, generated from gfx1100's.
HIPDIR=$REPO/target/lanes/llvm18/hip
setup_hipcc_dir() {
  if [ ! -f "$HIPDIR/.done" ]; then
    rm -rf "$HIPDIR"
    mkdir -p "$HIPDIR/bin" "$HIPDIR/lib/clang" "$HIPDIR/bitcode"
    for f in "$LLVM_BIN"/*; do ln -s "$f" "$HIPDIR/bin/"; done
    ln -sf "$LLVM_BIN/clang++" "$HIPDIR/bin/clang++-17"
    ln -sf "$LLVM_BIN/clang" "$HIPDIR/bin/clang-17"
    ln -s /usr/lib/llvm-18/lib/clang/18 "$HIPDIR/lib/clang/18"
    src=$(dpkg -L rocm-device-libs-17 2>/dev/null | grep -m1 '/ockl.bc$' || true)
    [ -n "$src" ] || lane_die "rocm-device-libs-17 (a dependency of hipcc) has no ockl.bc"
    src=$(dirname "$src")
    cp "$src"/*.bc "$HIPDIR/bitcode/"
    for v in 1200 1201; do
      [ -f "$HIPDIR/bitcode/oclc_isa_version_$v.bc" ] && continue
      llvm-dis "$HIPDIR/bitcode/oclc_isa_version_1100.bc" -o - | sed "s/i32 11000/i32 ${v}0/" |
        llvm-as -o "$HIPDIR/bitcode/oclc_isa_version_$v.bc" ||
        lane_die "could not generate oclc_isa_version_$v.bc"
    done
    touch "$HIPDIR/.done"
  fi
  # Debian bookworm's rocm-device-libs live in /usr/lib/x86_64-linux-gnu/amdgcn/bitcode, where
  # tests/ looks for them; trixie's rocm-device-libs-17 ships them in clang-17's resource dir.
  local multiarch=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode
  if [ ! -e "$multiarch" ]; then
    src=$(dpkg -L rocm-device-libs-17 2>/dev/null | grep -m1 '/ockl.bc$' || true)
    [ -n "$src" ] && mkdir -p "$(dirname "$multiarch")" && ln -s "$(dirname "$src")" "$multiarch"
  fi
}

export SQTT_PLUGIN=$PLUGIN SQTT_LLVM_MAJOR=18 SQTT_LLVM_BIN=$LLVM_BIN SQTT_TEST_LLVM_SUFFIX=-18
export SQTT_TEST_ARCHES="${ARCHES[*]}" SQTT_TEST_MULTI_ARCH="${FAT[*]}"
if [ "${SQTT_LANE18_HIPCC:-1}" != 0 ]; then
  setup_hipcc_dir
  export HIP_CLANG_PATH=$HIPDIR/bin SQTT_DEVICE_LIB_PATH=$HIPDIR/bitcode
fi
# hipcc 5.7.1's clang-18 does not find the device libs by itself; hipcc appends these flags.
# Cargo output stays apart from the host's target/debug.
if [ -n "${SQTT_DEVICE_LIB_PATH:-}" ]; then
  export HIPCC_COMPILE_FLAGS_APPEND="${HIPCC_COMPILE_FLAGS_APPEND:+$HIPCC_COMPILE_FLAGS_APPEND }--rocm-device-lib-path=$SQTT_DEVICE_LIB_PATH"
fi
export CARGO_TARGET_DIR=$TARGET_DIR
cd "$REPO"
if [ "${1:-}" = -- ]; then
  shift
  lane_log "running with the LLVM 18 environment: $*"
  exec "$@"
fi
lane_run_suites llvm18
