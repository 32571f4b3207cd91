#!/usr/bin/env bash
# LLVM 16 lane: builds the plugin for LLVM 16, points Debian's hipcc 5.2.3 at clang-16 through a
# directory of symlinks, and runs the lane's e2e suites (its row of ci/lanes.tsv: the IR and HIP
# fixtures, ...) in that environment.
#
# Usage:
#   ci/llvm16-lane.sh                 install what is missing, build, run the suites
#   ci/llvm16-lane.sh -- CMD ARGS...  set up and build only, then run CMD with the LLVM 16 environment
#                                     (e.g. `ci/llvm16-lane.sh -- cargo test -p sqtt-e2e`)
#   ci/llvm16-lane.sh --env           only set up (install, build, symlinks) and print the
#                                     environment as `export` lines (eval-able)
#
# The environment it exports (also written to $SQTT_LANE_CACHE/env.sh):
#   SQTT_PLUGIN           the LLVM 16 plugin .so
#   SQTT_LLVM_MAJOR       16
#   HIP_CLANG_PATH        directory hipcc takes clang from (clang-16 posing as clang-15)
#   SQTT_LLVM_BIN         /usr/lib/llvm-16/bin (opt, llc, llvm-objcopy, llvm-objdump, ...)
#   SQTT_DEVICE_LIB_PATH  device bitcode with oclc_isa_version_110x.bc added; pass it as
#                         --rocm-device-lib-path for gfx11
#   SQTT_TEST_LLVM_SUFFIX -16 (tests/ picks llvm-objdump-16, llvm-objcopy-16, ... with it)
#
# Settings: SQTT_LANE_CACHE (default target/lanes/llvm16), CARGO_BUILD_JOBS (default 2),
# SQTT_NET_TIMEOUT (seconds per network step, default 600).
set -euo pipefail

LANE_NAME=llvm16-lane
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=ci/lane-lib.sh
source "$REPO/ci/lane-lib.sh"

MODE=check
CMD=()
case "${1:-}" in
--env) MODE="env" ;;
--) shift; CMD=("$@") ;;
"") ;;
*) echo "usage: $0 [--env | -- CMD ARGS...]" >&2; exit 2 ;;
esac

CACHE=${SQTT_LANE_CACHE:-$REPO/target/lanes/llvm16}
NET_TIMEOUT=${SQTT_NET_TIMEOUT:-600}
TARGET_DIR=$REPO/target/llvm16
LLVM_BIN=/usr/lib/llvm-16/bin
# The arches come from ci/lanes.tsv.
read -r -a ARCHES <<<"$(lane_table_arches llvm16)"
mkdir -p "$CACHE"

# --- 1. packages (bookworm) ----------------------------------------------------------------
PACKAGES=(hipcc clang-16 llvm-16-dev clang-tools-16 lld-16 g++)
lane_apt_install "$CACHE/apt.log" "${PACKAGES[@]}"
for t in clang clang++ llvm-config llvm-objcopy llvm-dis llvm-as; do
  [ -x "$LLVM_BIN/$t" ] || lane_die "$LLVM_BIN/$t is missing after installing ${PACKAGES[*]}"
done
command -v hipcc >/dev/null || lane_die "hipcc is not on PATH"
command -v cargo >/dev/null || lane_die "cargo is not on PATH (the base image provides Rust)"

# --- 2. the plugin for LLVM 16 ---------------------------------------------------------------
lane_build_plugin llvm16-0 "$TARGET_DIR" "$CACHE/build.log" \
  "PATH=$LLVM_BIN:$PATH" LLVM_SYS_160_PREFIX=/usr/lib/llvm-16

# --- 3. hipcc -> clang-16 symlink directory ----------------------------------------------
# hipcc 5.2.3 runs $HIP_CLANG_PATH/clang++-15 and looks for headers in
# $HIP_CLANG_PATH/../lib/clang/<clang --version>/include.
CLANG_VERSION=$("$LLVM_BIN/clang" --version | sed -n 's/.*clang version \([0-9.]*\).*/\1/p' | head -1)
[ -n "$CLANG_VERSION" ] || lane_die "cannot read the version of $LLVM_BIN/clang"
TOOLS=$CACHE/clang16
rm -rf "$TOOLS.new"
mkdir -p "$TOOLS.new/bin" "$TOOLS.new/lib/clang"
for f in "$LLVM_BIN"/*; do ln -s "$f" "$TOOLS.new/bin/"; done
ln -sf "$LLVM_BIN/clang++" "$TOOLS.new/bin/clang++-15"
ln -sf "$LLVM_BIN/clang" "$TOOLS.new/bin/clang-15"
ln -s "$(readlink -f /usr/lib/llvm-16/lib/clang/16)" "$TOOLS.new/lib/clang/$CLANG_VERSION"
rm -rf "$TOOLS"
mv "$TOOLS.new" "$TOOLS"
export HIP_CLANG_PATH=$TOOLS/bin

# --- 4. device libs with the gfx11 ISA version file ------------------------------------------
BITCODE_SRC=""
for d in /usr/lib/x86_64-linux-gnu/amdgcn/bitcode /usr/lib/amdgcn/bitcode /usr/share/amdgcn/bitcode; do
  [ -f "$d/ockl.bc" ] && BITCODE_SRC=$d && break
done
[ -n "$BITCODE_SRC" ] || lane_die "no ROCm device bitcode (ockl.bc) found; is rocm-device-libs installed?"
DEVLIBS=$CACHE/bitcode
if [ ! -f "$DEVLIBS/.from" ] || [ "$(cat "$DEVLIBS/.from")" != "$BITCODE_SRC" ] ||
  [ ! -f "$DEVLIBS/oclc_isa_version_1100.bc" ]; then
  rm -rf "$DEVLIBS"
  mkdir -p "$DEVLIBS"
  cp "$BITCODE_SRC"/*.bc "$DEVLIBS/"
  for v in 1100 1101 1102 1103; do
    [ -f "$DEVLIBS/oclc_isa_version_$v.bc" ] && continue
    "$LLVM_BIN/llvm-dis" "$DEVLIBS/oclc_isa_version_1030.bc" -o - |
      sed "s/i32 10300/i32 ${v}0/" | "$LLVM_BIN/llvm-as" -o "$DEVLIBS/oclc_isa_version_$v.bc" ||
      lane_die "could not generate oclc_isa_version_$v.bc"
  done
  echo "$BITCODE_SRC" >"$DEVLIBS/.from"
fi

# --- 5. environment ------------------------------------------------------------------------
export SQTT_PLUGIN=$PLUGIN SQTT_LLVM_MAJOR=16 SQTT_LLVM_BIN=$LLVM_BIN SQTT_DEVICE_LIB_PATH=$DEVLIBS
export SQTT_TEST_LLVM_SUFFIX=-16 SQTT_TEST_ARCHES="${ARCHES[*]}"
{
  for v in SQTT_PLUGIN SQTT_LLVM_MAJOR HIP_CLANG_PATH SQTT_LLVM_BIN SQTT_DEVICE_LIB_PATH \
    SQTT_TEST_LLVM_SUFFIX; do
    printf 'export %s=%q\n' "$v" "${!v}"
  done
} >"$CACHE/env.sh"
if [ "$MODE" = env ]; then
  cat "$CACHE/env.sh"
  exit 0
fi
# `-- CMD`: only CMD, in the lane's environment (as the other lanes do).
if [ ${#CMD[@]} -gt 0 ]; then
  lane_log "running with the LLVM 16 environment: ${CMD[*]}"
  cd "$REPO"
  exec "${CMD[@]}"
fi

# --- 6. the lane's e2e suites (its row of ci/lanes.tsv) -------------------------------------
cd "$REPO"
lane_run_suites llvm16
