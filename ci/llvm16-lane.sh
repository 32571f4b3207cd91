#!/usr/bin/env bash
# LLVM 16 lane: builds the plugin for LLVM 16 and proves it works through the real hipcc
# (Debian's hipcc 5.2.3, pointed at clang-16 through a directory of symlinks), and on the IR
# fixtures of tests/fixtures/ir through opt-16 / llc-16.
#
# Usage:
#   ci/llvm16-lane.sh                 install what is missing, build, run the smoke cases
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

START=$(date +%s)
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
lane_log "building the plugin (llvm16-0) into $TARGET_DIR"
t0=$(date +%s)
if ! (cd "$REPO" && PATH="$LLVM_BIN:$PATH" LLVM_SYS_160_PREFIX=/usr/lib/llvm-16 \
  cargo build --release --locked -p sqtt-plugin --no-default-features --features llvm16-0 \
  --target-dir "$TARGET_DIR" -j "${CARGO_BUILD_JOBS:-2}") >"$CACHE/build.log" 2>&1; then
  tail -40 "$CACHE/build.log" >&2
  lane_die "cargo build of sqtt-plugin with --features llvm16-0 failed (log: $CACHE/build.log)"
fi
PLUGIN=$TARGET_DIR/release/libsqtt_plugin.so
[ -f "$PLUGIN" ] || lane_die "the build produced no $PLUGIN"
lane_log "plugin built in $(($(date +%s) - t0))s"

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
# `-- CMD`: only CMD, in the lane's environment (as the other lanes do; ci/lanes.sh runs the
# cases first, then the suites this way).
if [ ${#CMD[@]} -gt 0 ]; then
  lane_log "running with the LLVM 16 environment: ${CMD[*]}"
  cd "$REPO"
  exec "${CMD[@]}"
fi

# --- 6. smoke cases through hipcc ----------------------------------------------------------
WORK=$CACHE/work
rm -rf "$WORK"
mkdir -p "$WORK"
SRC=$REPO/ci/fixtures/lane_markers.hip
FUNCMAP='K:lane_kernel
U:1:outer
P:2:mid
P:3:val
R:3:extra_payload_count=1'

hip_device() { # arch opt out extra-args...
  local arch=$1 opt=$2 out=$3
  shift 3
  local libs=()
  case $arch in gfx11*) libs=(--rocm-device-lib-path="$DEVLIBS") ;; esac
  hipcc -fpass-plugin="$PLUGIN" -DSQTT_ENABLED=1 -I "$REPO/markers/include" \
    --offload-arch="$arch" --cuda-device-only "${libs[@]}" "$opt" "$@" "$SRC" -o "$out" \
    >"$out.log" 2>&1
}

lane_log "hipcc $(hipcc --version 2>/dev/null | sed -n 's/^HIP version: //p' | head -1) on clang $CLANG_VERSION"
for arch in "${ARCHES[@]}"; do
  case $arch in
  gfx9*) gen=gfx9 hwreg='hwreg\(HW_REG_HW_ID, 8, 4\)' ;;
  *) gen=rdna hwreg='hwreg\(HW_REG_HW_ID1, 10, 4\)' ;;
  esac
  for opt in -O0 -O3; do
    c="$arch $opt"
    # Expected markers, in program order: enter outer, point mid, data val (header + payload),
    # exit, numeric point 7 (a runtime value at -O0, where the constant sits in an alloca).
    num=$([ "$opt" = -O0 ] && echo "m0:dyn+nop" || { [ $gen = gfx9 ] && echo "m0:28+nop" || echo "imm:0x1c"; })
    if [ $gen = gfx9 ]; then
      want="m0:6+nop m0:8+nop m0:12+nop m0:dyn+nop m0:1+nop $num"
    else
      want="imm:0x6 imm:0x8 imm:0xc m0:dyn+nop imm:0x1 $num"
    fi
    # Unfiltered: straight-line code, so the ISA order is program order.
    s=$WORK/$arch$opt-unfiltered.s
    if SQTT_SCOPE_CU=-1 hip_device "$arch" "$opt" "$s" -S; then
      lane_check_trace "$c unfiltered" "$s" "$want"
      lane_check_grep "$c unfiltered: no scope check" "$s" 's_getreg_b32' 0
    else
      lane_fail "$c unfiltered: hipcc -S" "$(tail -5 "$s.log")"
    fi
    # Default settings (CU filter 0x3): one scope check, every marker present (block layout
    # may reorder the guarded blocks, so compare as sorted lists).
    s=$WORK/$arch$opt.s
    if hip_device "$arch" "$opt" "$s" -S; then
      got=$(lane_marker_trace "$s" | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ *$//')
      exp=$(echo "$want" | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ *$//')
      if [ "$got" = "$exp" ]; then lane_pass "$c filtered: markers [$got]"; else
        lane_fail "$c filtered: markers" "expected [$exp] in any order, got [$got] (in $s)"
      fi
      lane_check_grep "$c filtered: one scope check" "$s" "s_getreg_b32 s[0-9]+, $hwreg" 1
    else
      lane_fail "$c filtered: hipcc -S" "$(tail -5 "$s.log")"
    fi
    # The device code object carries the funcmap.
    co=$WORK/$arch$opt.co
    if hip_device "$arch" "$opt" "$co" -c --no-gpu-bundle-output; then
      lane_check_funcmap "$c" "$LLVM_BIN/llvm-objcopy" "$co" "$FUNCMAP"
      lane_check_disasm "$c" "$LLVM_BIN/llvm-objdump" "$arch" "$co" "$want"
    else
      lane_fail "$c: hipcc -c" "$(tail -5 "$co.log")"
    fi
  done
done

# Every feature at once (functions, barriers, memory or addresses) under the machine verifier.
feature_compile() { # arch opt out args...
  local arch=$1 opt=$2 out=$3
  shift 3
  hipcc -fpass-plugin="$PLUGIN" -DSQTT_ENABLED=1 -I "$REPO/markers/include" \
    --offload-arch="$arch" --rocm-device-lib-path="$DEVLIBS" --cuda-device-only "$opt" "$@" \
    "$REPO/ci/fixtures/lane_features.hip" -o "$out" >"$out.log" 2>&1
}
lane_feature_cases feature_compile "$LLVM_BIN/llvm-objcopy" "${ARCHES[@]}"

# --- 7. IR fixtures through opt-16 / llc-16 ----------------------------------------------------
IR_OPT=$LLVM_BIN/opt IR_LLC=$LLVM_BIN/llc IR_OBJCOPY=$LLVM_BIN/llvm-objcopy
IR_OBJDUMP=$LLVM_BIN/llvm-objdump FIXTURES=$REPO/tests/fixtures/ir IR_LLVM_MAJOR=16
# shellcheck source=ci/ir-cases.sh
source "$REPO/ci/ir-cases.sh"
ir_cases "${ARCHES[@]}"

lane_summary $(($(date +%s) - START))
