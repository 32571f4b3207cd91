#!/usr/bin/env bash
# The LLVM 18 lane's work inside the trixie chroot (started by ci/llvm18-lane.sh, which mounts
# the worktree at /src and the host's Rust toolchain at /opt/rust). Builds the plugin with the
# llvm18-0 feature and runs the cases: IR fixtures through opt-18/llc-18, and clang-18 directly
# on a .hip file, on gfx942, gfx1200 and gfx1201 (which LLVM 15/16 do not know).
#
#   llvm18-lane-inner.sh            build and run the cases
#   llvm18-lane-inner.sh -- CMD...  build, then run CMD in /src with the LLVM 18 environment
set -euo pipefail

LANE_NAME=llvm18-lane
REPO=/src
# shellcheck source=ci/lane-lib.sh
source "$REPO/ci/lane-lib.sh"
START=$(date +%s)

LLVM_BIN=/usr/lib/llvm-18/bin
TARGET_DIR=$REPO/target/llvm18
WORK=$REPO/target/lanes/llvm18/work
FIXTURES=$REPO/tests/fixtures/ir
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
t0=$(date +%s)
mkdir -p "$WORK"
lane_log "building the plugin (llvm18-0) into $TARGET_DIR ($(cargo --version))"
# Time-limited: a cold build downloads the crates from crates.io.
if ! (cd "$REPO" && timeout "$BUILD_TIMEOUT" cargo build --release --locked -p sqtt-plugin \
  --no-default-features --features llvm18-0 --target-dir "$TARGET_DIR" \
  -j "${CARGO_BUILD_JOBS:-2}") >"$WORK/../build.log" 2>&1; then
  tail -40 "$WORK/../build.log" >&2
  lane_die "cargo build of sqtt-plugin with --features llvm18-0 failed or exceeded ${BUILD_TIMEOUT}s (log: target/lanes/llvm18/build.log)"
fi
PLUGIN=$TARGET_DIR/release/libsqtt_plugin.so
[ -f "$PLUGIN" ] || lane_die "the build produced no $PLUGIN"
lane_log "plugin built in $(($(date +%s) - t0))s"

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
if [ "${1:-}" = -- ]; then
  shift
  # hipcc 5.7.1's clang-18 does not find the device libs by itself; hipcc appends these flags.
  # Cargo output of commands run here stays apart from the host's target/debug.
  if [ -n "${SQTT_DEVICE_LIB_PATH:-}" ]; then
    export HIPCC_COMPILE_FLAGS_APPEND="${HIPCC_COMPILE_FLAGS_APPEND:+$HIPCC_COMPILE_FLAGS_APPEND }--rocm-device-lib-path=$SQTT_DEVICE_LIB_PATH"
  fi
  export CARGO_TARGET_DIR=$TARGET_DIR
  lane_log "running with the LLVM 18 environment: $*"
  cd "$REPO"
  exec "$@"
fi

rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"

IR_OPT=opt IR_LLC=llc IR_OBJCOPY=llvm-objcopy IR_OBJDUMP=llvm-objdump IR_LLVM_MAJOR=18
# shellcheck source=ci/ir-cases.sh
source "$REPO/ci/ir-cases.sh"
ir_cases "${ARCHES[@]}"

# 5. clang-18 directly on a .hip file (no ROCm headers or device libs needed by the fixture).
HIP_SRC=$REPO/ci/fixtures/lane_markers.hip
HIP_FUNCMAP='K:lane_kernel
U:1:outer
P:2:mid
P:3:val
R:3:extra_payload_count=1'
hip18() { # arch opt out args...
  local arch=$1 opt=$2 out=$3
  shift 3
  clang++ -x hip --offload-arch="$arch" --cuda-device-only -nogpuinc -nogpulib "$opt" \
    -fpass-plugin="$PLUGIN" -DSQTT_ENABLED=1 -I "$REPO/markers/include" "$@" "$HIP_SRC" \
    -o "$out" >"$out.log" 2>&1
}
for cpu in "${ARCHES[@]}"; do
  for opt in -O0 -O3; do
    n="clang-18 hip $cpu $opt"
    case $cpu in
    gfx9*) num=$([ $opt = -O0 ] && echo m0:dyn+nop || echo m0:28+nop)
      want="m0:6+nop m0:8+nop m0:12+nop m0:dyn+nop m0:1+nop $num" ;;
    *) num=$([ $opt = -O0 ] && echo m0:dyn+nop || echo imm:0x1c)
      want="imm:0x6 imm:0x8 imm:0xc m0:dyn+nop imm:0x1 $num" ;;
    esac
    s=$WORK/hip-$cpu$opt.s
    if SQTT_SCOPE_CU=-1 hip18 "$cpu" "$opt" "$s" -S; then
      lane_check_trace "$n unfiltered" "$s" "$want"
    else
      lane_fail "$n: clang++-18 -S" "$(tail -5 "$s.log")"
    fi
    co=$WORK/hip-$cpu$opt.co
    if hip18 "$cpu" "$opt" "$co" -c --no-gpu-bundle-output; then
      lane_check_funcmap "$n" llvm-objcopy "$co" "$HIP_FUNCMAP"
      lane_check_disasm "$n" llvm-objdump "$cpu" "$co" "$want"
    else
      lane_fail "$n: clang++-18 -c" "$(tail -5 "$co.log")"
    fi
  done
done

# 6. Trixie's hipcc 5.7.1 (real HIP headers, ROCm 6.0 device libs) driving clang-18.
if [ "${SQTT_LANE18_HIPCC:-1}" != 0 ]; then
  RT_SRC=$REPO/ci/fixtures/lane_hip_runtime.hip
  RT_FUNCMAP='K:_Z19lane_runtime_kernelPfi
U:1:outer
P:2:index
R:2:extra_payload_count=1'
  hipcc57() { # arch opt out args...
    local arch=$1 opt=$2 out=$3
    shift 3
    HIP_CLANG_PATH=$HIPDIR/bin hipcc -fpass-plugin="$PLUGIN" -DSQTT_ENABLED=1 \
      -I "$REPO/markers/include" --offload-arch="$arch" --rocm-device-lib-path="$HIPDIR/bitcode" \
      --cuda-device-only "$opt" "$@" "$RT_SRC" -o "$out" >"$out.log" 2>&1
  }
  for cpu in "${ARCHES[@]}"; do
    for opt in -O0 -O3; do
      n="hipcc 5.7.1 $cpu $opt"
      case $cpu in
      gfx9*) want="m0:6+nop m0:8+nop m0:dyn+nop m0:1+nop" ;;
      *) want="imm:0x6 imm:0x8 m0:dyn+nop imm:0x1" ;;
      esac
      s=$WORK/hipcc-$cpu$opt.s
      if SQTT_SCOPE_CU=-1 hipcc57 "$cpu" "$opt" "$s" -S; then
        lane_check_trace "$n unfiltered" "$s" "$want"
        lane_check_grep "$n: device libs linked (sqrt)" "$s" 'v_sqrt_f32|__ocml_sqrt'
      else
        lane_fail "$n: hipcc -S" "$(tail -5 "$s.log")"
      fi
      co=$WORK/hipcc-$cpu$opt.co
      if hipcc57 "$cpu" "$opt" "$co" -c --no-gpu-bundle-output; then
        lane_check_funcmap "$n" llvm-objcopy "$co" "$RT_FUNCMAP"
        lane_check_disasm "$n" llvm-objdump "$cpu" "$co" "$want"
      else
        lane_fail "$n: hipcc -c" "$(tail -5 "$co.log")"
      fi
    done
  done
  # Every feature at once (functions, barriers, memory or addresses) under the machine verifier.
  feature_compile() { # arch opt out args...
    local arch=$1 opt=$2 out=$3
    shift 3
    HIP_CLANG_PATH=$HIPDIR/bin hipcc -fpass-plugin="$PLUGIN" -DSQTT_ENABLED=1 \
      -I "$REPO/markers/include" --offload-arch="$arch" --rocm-device-lib-path="$HIPDIR/bitcode" \
      --cuda-device-only "$opt" "$@" "$REPO/ci/fixtures/lane_features.hip" -o "$out" \
      >"$out.log" 2>&1
  }
  lane_feature_cases feature_compile llvm-objcopy "${ARCHES[@]}"
  # A host object with a two-arch fat binary: both device code objects carry the funcmap.
  n="hipcc 5.7.1 $(IFS=+; echo "${FAT[*]}") -c"
  obj=$WORK/hipcc-fat.o
  if HIP_CLANG_PATH=$HIPDIR/bin hipcc -fpass-plugin="$PLUGIN" -DSQTT_ENABLED=1 \
    -I "$REPO/markers/include" "${FAT[@]/#/--offload-arch=}" \
    --rocm-device-lib-path="$HIPDIR/bitcode" -c "$RT_SRC" -o "$obj" >"$obj.log" 2>&1; then
    llvm-objcopy --dump-section=.hip_fatbin="$obj.fatbin" "$obj" /dev/null 2>/dev/null || true
    for cpu in "${FAT[@]}"; do
      if clang-offload-bundler --type=o --input="$obj.fatbin" \
        --targets="hipv4-amdgcn-amd-amdhsa--$cpu" --output="$obj.$cpu.co" --unbundle \
        >>"$obj.log" 2>&1; then
        lane_check_funcmap "$n: $cpu code object" llvm-objcopy "$obj.$cpu.co" "$RT_FUNCMAP"
      else
        lane_fail "$n: unbundle $cpu" "$(tail -3 "$obj.log")"
      fi
    done
  else
    lane_fail "$n" "$(tail -5 "$obj.log")"
  fi
fi

lane_summary $(($(date +%s) - START))
