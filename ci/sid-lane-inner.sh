#!/usr/bin/env bash
# The sid / experimental lane's work inside its chroot (started by ci/sid-lane.sh, which mounts
# the worktree at /src and the host's Rust toolchain at /opt/rust). Debian's real hipcc 7.x:
#   sid:          hipcc 7.0.2 on clang 21 (plugin feature llvm21-1)
#   experimental: hipcc 7.2.4 on clang 22 (plugin feature llvm22-1), with gfx1250
# on the arches of the lane's row of ci/lanes.tsv.
#
#   sid-lane-inner.sh            toolchain checks, build, the plugin's cases
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
START=$(date +%s)

LLVM_BIN=/usr/lib/llvm-$MAJOR/bin
FEATURE=llvm$MAJOR-1
# The lane's own target directory: the bookworm host lane of the same major builds into
# target/llvm$MAJOR against another glibc, and lanes run two at a time.
TARGET_DIR=$REPO/target/$SUITE-llvm$MAJOR
LANE_DIR=$REPO/target/lanes/$SUITE
WORK=$LANE_DIR/work
FIXTURES=$REPO/tests/fixtures/ir
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
mkdir -p "$WORK"

# --- the plugin and the wrapper ----------------------------------------------------------------
PLUGIN=""
if grep -q "^$FEATURE *=" "$REPO/plugin/Cargo.toml"; then
  t0=$(date +%s)
  lane_log "building the plugin ($FEATURE) and sqtt-hipcc into $TARGET_DIR ($(cargo --version))"
  # Time-limited: a cold build downloads the crates from crates.io.
  if ! (cd "$REPO" && timeout "$BUILD_TIMEOUT" cargo build --release --locked -p sqtt-plugin \
    --no-default-features --features "$FEATURE" --target-dir "$TARGET_DIR" \
    -j "${CARGO_BUILD_JOBS:-2}") >"$LANE_DIR/build.log" 2>&1; then
    tail -40 "$LANE_DIR/build.log" >&2
    lane_die "cargo build of sqtt-plugin with --features $FEATURE failed or exceeded ${BUILD_TIMEOUT}s (log: target/lanes/$SUITE/build.log)"
  fi
  # The wrapper in the profile cargo test uses (tests/ look for it next to the test binaries).
  if ! (cd "$REPO" && timeout "$BUILD_TIMEOUT" cargo build --locked -p sqtt-hipcc \
    --target-dir "$TARGET_DIR" -j "${CARGO_BUILD_JOBS:-2}") >>"$LANE_DIR/build.log" 2>&1; then
    tail -40 "$LANE_DIR/build.log" >&2
    lane_die "cargo build of sqtt-hipcc failed or exceeded ${BUILD_TIMEOUT}s (log: target/lanes/$SUITE/build.log)"
  fi
  PLUGIN=$TARGET_DIR/release/libsqtt_plugin.so
  [ -f "$PLUGIN" ] || lane_die "the build produced no $PLUGIN"
  lane_log "plugin and sqtt-hipcc built in $(($(date +%s) - t0))s"
fi
DRIVER=$TARGET_DIR/debug/sqtt-hipcc

export SQTT_LLVM_MAJOR=$MAJOR SQTT_LLVM_BIN=$LLVM_BIN SQTT_TEST_LLVM_SUFFIX=-$MAJOR
export HIP_CLANG_PATH=$LLVM_BIN SQTT_DEVICE_LIB_PATH=$DEVLIBS
export SQTT_TEST_ARCHES="${ARCHES[*]}" SQTT_TEST_MULTI_ARCH="${FAT[*]}"
[ -z "$PLUGIN" ] || export SQTT_PLUGIN=$PLUGIN
if [ "${1:-}" = -- ]; then
  shift
  [ -n "$PLUGIN" ] || lane_die "plugin/Cargo.toml has no $FEATURE feature on this branch"
  export CARGO_TARGET_DIR=$TARGET_DIR
  lane_log "running with the LLVM $MAJOR environment: $*"
  cd "$REPO"
  exec "$@"
fi

rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"

# --- 1. the toolchain by itself ----------------------------------------------------------------
version=$(hipcc --version 2>&1 || true)
hip=$(echo "$version" | sed -n 's/^HIP version: //p' | head -1)
clang_line=$(echo "$version" | grep -m1 'clang version' || true)
lane_log "hipcc: HIP $hip, $clang_line, $(hipconfig --hipclangpath 2>/dev/null || true)"
case $clang_line in
*"clang version $MAJOR."*) lane_pass "hipcc --version: $clang_line" ;;
*) lane_fail "hipcc --version" "expected clang $MAJOR, got '$clang_line'" ;;
esac
dpkg_hipcc=$(dpkg-query -W -f='${Version}' hipcc 2>/dev/null || true)
case $dpkg_hipcc in
"$HIPCC_VERSION".*) lane_pass "hipcc package $dpkg_hipcc (HIP $hip)" ;;
*) lane_fail "hipcc package" "expected $HIPCC_VERSION.x, got '$dpkg_hipcc'" ;;
esac
# Case names say "hipcc 7.0.2" (the package), not the HIP version hipcc prints (6.4.x on sid).
hip=${dpkg_hipcc%%+*}
hip=${hip%%-*}

PROGRAM=$REPO/ci/fixtures/lane_hip_program.hip
# Unbundles the code object of one arch from a linked program or a host object.
unbundle() { # file arch out
  local fat=$3.fatbin
  "$LLVM_BIN/llvm-objcopy" --dump-section=.hip_fatbin="$fat" "$1" /dev/null 2>/dev/null &&
    "$LLVM_BIN/clang-offload-bundler" --type=o --input="$fat" \
      --targets="hipv4-amdgcn-amd-amdhsa--$2" --output="$3" --unbundle
}
# Compiles and links a program, runs it (no GPU here: it must print "no device" and exit 0), and
# disassembles each arch's code object.
program_case() { # name out arch...
  local name=$1 out=$2 a t0 secs
  shift 2
  local archs=()
  for a in "$@"; do archs+=(--offload-arch="$a"); done
  t0=$(date +%s%N)
  if ! hipcc "${archs[@]}" -I "$REPO/markers/include" "$PROGRAM" -o "$out" >"$out.log" 2>&1; then
    lane_fail "$name: hipcc compile and link" "$(tail -5 "$out.log")"
    return
  fi
  secs=$(( ($(date +%s%N) - t0) / 1000000 ))
  lane_pass "$name: hipcc compiles and links (${secs} ms)"
  if "$out" >"$out.run" 2>&1 && grep -qE '^(no device|ran)$' "$out.run"; then
    lane_pass "$name: the program runs ($(head -1 "$out.run"))"
  else
    lane_fail "$name: running the program" "$(head -c 300 "$out.run")"
  fi
  for a in "$@"; do
    if unbundle "$out" "$a" "$out.$a.co" 2>>"$out.log"; then
      "$LLVM_BIN/llvm-objdump" -d --mcpu="$a" "$out.$a.co" >"$out.$a.dis" 2>&1 || true
      lane_check_grep "$name: $a code object disassembles (v_sqrt_f32, s_endpgm)" "$out.$a.dis" \
        '^[[:space:]]+(v_sqrt_f32|s_endpgm)'
    else
      lane_fail "$name: unbundle $a" "$(tail -3 "$out.log")"
    fi
  done
}
for a in "${ARCHES[@]}"; do
  program_case "hipcc $hip $a" "$WORK/program-$a" "$a"
done
program_case "hipcc $hip $(IFS=+; echo "${FAT[*]}")" "$WORK/program-fat" "${FAT[@]}"

# Where -fpass-plugin goes: hipcc 7.x keeps clang's old offload driver, so the device cc1 compile
# (which emits the code object) gets it; with --offload-new-driver the device cc1 only emits
# bitcode and clang-linker-wrapper generates code without the plugin.
n="hipcc $hip -fpass-plugin"
if hipcc -### --offload-arch="${ARCHES[0]}" -fpass-plugin=/nonexistent/plugin.so -c "$PROGRAM" \
  -o "$WORK/pp.o" >"$WORK/pp.log" 2>&1; then
  dev=$(grep -E '"-cc1" "-triple" "amdgcn' "$WORK/pp.log" || true)
  if echo "$dev" | grep -q -- '-emit-obj' && echo "$dev" | grep -q -- '-fpass-plugin=/nonexistent/plugin.so'; then
    lane_pass "$n reaches the device cc1 that emits the code object (old offload driver)"
  else
    lane_fail "$n" "the device cc1 line lacks -emit-obj or -fpass-plugin: $(echo "$dev" | head -c 300)"
  fi
  lane_check_grep "$n: no clang-linker-wrapper by default" "$WORK/pp.log" 'clang-linker-wrapper' 0
else
  lane_fail "$n: hipcc -###" "$(tail -3 "$WORK/pp.log")"
fi

# gfx1250's 64-bit shader clock (experimental only).
case " ${ARCHES[*]} " in
*" gfx1250 "*)
  n="hipcc $hip gfx1250 s_get_shader_cycles_u64"
  co=$WORK/cycles-gfx1250.co
  if hipcc --offload-arch=gfx1250 --cuda-device-only -c --no-gpu-bundle-output -O3 \
    "$REPO/ci/fixtures/lane_cycles_u64.hip" -o "$co" >"$co.log" 2>&1; then
    "$LLVM_BIN/llvm-objdump" -d --mcpu=gfx1250 "$co" >"$co.dis" 2>&1 || true
    lane_check_grep "$n: assembles and disassembles" "$co.dis" '^[[:space:]]+s_get_shader_cycles_u64 s\[[0-9]+:[0-9]+\]'
  else
    lane_fail "$n: hipcc -c" "$(tail -5 "$co.log")"
  fi
  ;;
esac

if [ -z "$PLUGIN" ]; then
  lane_fail "plugin" "plugin/Cargo.toml has no $FEATURE feature on this branch: no plugin cases"
  lane_summary $(($(date +%s) - START))
  exit 1
fi

# --- 2. the plugin through hipcc -fpass-plugin -------------------------------------------------
HIP_FUNCMAP='K:lane_kernel
U:1:outer
P:2:mid
P:3:val
R:3:extra_payload_count=1'
hip_markers() { # arch opt out args...
  local arch=$1 opt=$2 out=$3
  shift 3
  hipcc --offload-arch="$arch" --cuda-device-only "$opt" -fpass-plugin="$PLUGIN" \
    -DSQTT_ENABLED=1 -I "$REPO/markers/include" "$@" "$REPO/ci/fixtures/lane_markers.hip" \
    -o "$out" >"$out.log" 2>&1
}
for cpu in "${ARCHES[@]}"; do
  for opt in -O0 -O3; do
    n="hipcc $hip markers $cpu $opt"
    case $cpu in
    gfx9*) num=$([ $opt = -O0 ] && echo m0:dyn+nop || echo m0:28+nop)
      want="m0:6+nop m0:8+nop m0:12+nop m0:dyn+nop m0:1+nop $num" ;;
    *) num=$([ $opt = -O0 ] && echo m0:dyn+nop || echo imm:0x1c)
      want="imm:0x6 imm:0x8 imm:0xc m0:dyn+nop imm:0x1 $num" ;;
    esac
    s=$WORK/markers-$cpu$opt.s
    if SQTT_SCOPE_CU=-1 hip_markers "$cpu" "$opt" "$s" -S; then
      lane_check_trace "$n unfiltered" "$s" "$want"
    else
      lane_fail "$n: hipcc -S" "$(tail -5 "$s.log")"
    fi
    co=$WORK/markers-$cpu$opt.co
    if hip_markers "$cpu" "$opt" "$co" -c --no-gpu-bundle-output; then
      lane_check_funcmap "$n" "$LLVM_BIN/llvm-objcopy" "$co" "$HIP_FUNCMAP"
      lane_check_disasm "$n" "$LLVM_BIN/llvm-objdump" "$cpu" "$co" "$want"
    else
      lane_fail "$n: hipcc -c" "$(tail -5 "$co.log")"
    fi
  done
done

# Real HIP headers and device libraries (sqrtf -> __ocml_sqrt_f32).
RT_FUNCMAP='K:_Z19lane_runtime_kernelPfi
U:1:outer
P:2:index
R:2:extra_payload_count=1'
hip_runtime() { # arch opt out args...
  local arch=$1 opt=$2 out=$3
  shift 3
  hipcc --offload-arch="$arch" --cuda-device-only "$opt" -fpass-plugin="$PLUGIN" \
    -DSQTT_ENABLED=1 -I "$REPO/markers/include" "$@" "$REPO/ci/fixtures/lane_hip_runtime.hip" \
    -o "$out" >"$out.log" 2>&1
}
for cpu in "${ARCHES[@]}"; do
  for opt in -O0 -O3; do
    n="hipcc $hip runtime $cpu $opt"
    case $cpu in
    gfx9*) want="m0:6+nop m0:8+nop m0:dyn+nop m0:1+nop" ;;
    *) want="imm:0x6 imm:0x8 m0:dyn+nop imm:0x1" ;;
    esac
    s=$WORK/runtime-$cpu$opt.s
    if SQTT_SCOPE_CU=-1 hip_runtime "$cpu" "$opt" "$s" -S; then
      lane_check_trace "$n unfiltered" "$s" "$want"
      lane_check_grep "$n: device libs linked (sqrt)" "$s" 'v_sqrt_f32|__ocml_sqrt'
    else
      lane_fail "$n: hipcc -S" "$(tail -5 "$s.log")"
    fi
    co=$WORK/runtime-$cpu$opt.co
    if hip_runtime "$cpu" "$opt" "$co" -c --no-gpu-bundle-output; then
      lane_check_funcmap "$n" "$LLVM_BIN/llvm-objcopy" "$co" "$RT_FUNCMAP"
      lane_check_disasm "$n" "$LLVM_BIN/llvm-objdump" "$cpu" "$co" "$want"
    else
      lane_fail "$n: hipcc -c" "$(tail -5 "$co.log")"
    fi
  done
done

# Every feature at once (functions, barriers, memory or addresses) under the machine verifier.
feature_compile() { # arch opt out args...
  local arch=$1 opt=$2 out=$3
  shift 3
  hipcc -fpass-plugin="$PLUGIN" -DSQTT_ENABLED=1 -I "$REPO/markers/include" \
    --offload-arch="$arch" --cuda-device-only "$opt" "$@" "$REPO/ci/fixtures/lane_features.hip" \
    -o "$out" >"$out.log" 2>&1
}
lane_feature_cases feature_compile "$LLVM_BIN/llvm-objcopy" "${ARCHES[@]}"

# --- 3. the wrapper: sqtt-hipcc builds a whole program for several arches ----------------------
PROG_FUNCMAP='K:_Z19lane_program_kernelPfi
U:1:compute'

# The plugin's work is IR (markers as inline asm, the funcmap a global), so it survives the other
# ways hipcc can generate code: the new offload driver (device cc1 emits bitcode,
# clang-linker-wrapper generates the code without the plugin) and -fgpu-rdc (lld's LTO).
for mode in --offload-new-driver -fgpu-rdc; do
  a=${ARCHES[0]}
  n="hipcc $hip $mode $a program"
  prog=$WORK/program$mode
  if SQTT_SCOPE_CU=-1 hipcc "$mode" --offload-arch="$a" -fpass-plugin="$PLUGIN" -DSQTT_ENABLED=1 \
    -I "$REPO/markers/include" "$PROGRAM" -o "$prog" >"$prog.log" 2>&1; then
    # The new driver's bundle names the target hip-amdgcn-... (llvm-objdump --offloading
    # extracts either kind).
    rm -f "$prog".*amdgcn*
    (cd "$WORK" && "$LLVM_BIN/llvm-objdump" --offloading "$prog" >/dev/null 2>>"$prog.log") || true
    co=$(find "$WORK" -maxdepth 1 -name "$(basename "$prog").*amdgcn-amd-amdhsa--$a" | head -1)
    if [ -n "$co" ]; then
      lane_check_funcmap "$n" "$LLVM_BIN/llvm-objcopy" "$co" "$PROG_FUNCMAP"
      "$LLVM_BIN/llvm-objdump" -d --mcpu="$a" "$co" >"$co.dis" 2>&1 || true
      lane_check_grep "$n: markers in the code object" "$co.dis" '^[[:space:]]+s_ttracedata' 2
    else
      lane_fail "$n: extract the $a code object" "$(tail -3 "$prog.log")"
    fi
  else
    lane_fail "$n: hipcc" "$(tail -5 "$prog.log")"
  fi
done
n="sqtt-hipcc $(IFS=+; echo "${FAT[*]}") program"
prog=$WORK/wrapped-program
archs=()
for a in "${FAT[@]}"; do archs+=(--offload-arch="$a"); done
if SQTT_PLUGIN=$PLUGIN SQTT_CACHE_DIR=$WORK/.sqtt-cache "$DRIVER" "${archs[@]}" "$PROGRAM" \
  -o "$prog" >"$prog.log" 2>&1; then
  lane_pass "$n: compiles and links"
  if "$prog" >"$prog.run" 2>&1 && grep -qE '^(no device|ran)$' "$prog.run"; then
    lane_pass "$n: runs ($(head -1 "$prog.run"))"
  else
    lane_fail "$n: running it" "$(head -c 300 "$prog.run")"
  fi
  if "$DRIVER" --check "$prog" >"$prog.check" 2>&1; then
    lane_pass "$n: sqtt-hipcc --check"
  else
    lane_fail "$n: sqtt-hipcc --check" "$(tail -5 "$prog.check")"
  fi
  for a in "${FAT[@]}"; do
    if unbundle "$prog" "$a" "$prog.$a.co" 2>>"$prog.log"; then
      lane_check_funcmap "$n: $a code object" "$LLVM_BIN/llvm-objcopy" "$prog.$a.co" "$PROG_FUNCMAP"
    else
      lane_fail "$n: unbundle $a" "$(tail -3 "$prog.log")"
    fi
  done
  # The wrapper built on the bookworm host (ci/test.sh builds it) runs here too.
  if [ -x "$REPO/target/debug/sqtt-hipcc" ]; then
    if "$REPO/target/debug/sqtt-hipcc" --check "$prog" >"$prog.hostcheck" 2>&1; then
      lane_pass "$n: the host-built sqtt-hipcc --check runs in $SUITE"
    else
      lane_fail "$n: the host-built sqtt-hipcc --check" "$(tail -5 "$prog.hostcheck")"
    fi
  fi
else
  lane_fail "$n: sqtt-hipcc" "$(tail -5 "$prog.log")"
fi

# --- 4. IR fixtures through opt / llc -----------------------------------------------------------
IR_OPT=$LLVM_BIN/opt IR_LLC=$LLVM_BIN/llc IR_OBJCOPY=$LLVM_BIN/llvm-objcopy
IR_OBJDUMP=$LLVM_BIN/llvm-objdump IR_LLVM_MAJOR=$MAJOR
# shellcheck source=ci/ir-cases.sh
source "$REPO/ci/ir-cases.sh"
ir_cases "${ARCHES[@]}"

lane_summary $(($(date +%s) - START))
