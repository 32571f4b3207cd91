# shellcheck shell=bash
# Sourced by the ci/llvm*-lane.sh scripts: the IR-fixture cases (tests/fixtures/ir/*.ll) through
# opt -load-pass-plugin=<plugin> -passes=sqtt and llc, on any list of targets.
#
# Needs lane-lib.sh and these variables: PLUGIN, WORK (scratch directory), FIXTURES,
# IR_OPT, IR_LLC, IR_OBJCOPY, IR_OBJDUMP (the tools of the LLVM under test), and IR_LLVM_MAJOR
# (its major; the fence form differs from 19 on, default: older).
#   ir_cases gfx942 gfx1200 ...

retarget() { # fixture cpu out
  sed "s/\"target-cpu\"=\"[^\"]*\"/\"target-cpu\"=\"$2\"/" "$1" >"$3"
}

# opt with the plugin, then llc to assembly and to an object. Extra args go to opt's env.
#   ir_case NAME FIXTURE CPU [VAR=VALUE...]
ir_case() {
  local name=$1 fixture=$2 cpu=$3
  shift 3
  local base=$WORK/$name
  retarget "$fixture" "$cpu" "$base.in.ll"
  if ! env "$@" "$IR_OPT" -load-pass-plugin="$PLUGIN" -passes=sqtt "$base.in.ll" -S -o "$base.ll" \
    >"$base.log" 2>&1; then
    lane_fail "$name: opt -passes=sqtt" "$(tail -5 "$base.log")"
    return 1
  fi
  if ! "$IR_LLC" -verify-machineinstrs -mtriple=amdgcn-amd-amdhsa -mcpu="$cpu" "$base.ll" -o "$base.s" \
    >>"$base.log" 2>&1 ||
    ! "$IR_LLC" -mtriple=amdgcn-amd-amdhsa -mcpu="$cpu" -filetype=obj "$base.ll" -o "$base.o" \
      >>"$base.log" 2>&1; then
    lane_fail "$name: llc" "$(tail -5 "$base.log")"
    return 1
  fi
}

hwreg_of() {
  case $1 in
  gfx9*) echo 'hwreg\(HW_REG_HW_ID, 8, 4\)' ;;
  # LLVM 22 prints gfx12's HW_ID1 as HW_REG_WAVE_HW_ID1.
  *) echo 'hwreg\(HW_REG_(WAVE_)?HW_ID1, 10, 4\)' ;;
  esac
}

lds_wait_of() {
  case $1 in
  gfx12*) echo 's_wait_dscnt 0x0' ;;
  *) echo 's_waitcnt lgkmcnt\(0\)' ;;
  esac
}

IR_FUNCMAP='K:ir_kernel
U:1:outer
P:2:mid
P:3:val
R:3:extra_payload_count=1'
BARRIER_FUNCMAP='K:barrier_kernel
U:1:phase1
U:2:phase2
P:3:sync'

ir_cases() {
local cpu want n s got exp fused bar between wave gpay lpay
for cpu in "$@"; do
  case $cpu in
  gfx9*) want="m0:6+nop m0:8+nop m0:12+nop m0:dyn+nop m0:1+nop m0:28+nop" ;;
  *) want="imm:0x6 imm:0x8 imm:0xc m0:dyn+nop imm:0x1 imm:0x1c" ;;
  esac

  # 1. Named and numeric markers, no scope filter: exact marker sequence, LDS wait of the
  #    fence boundary, no cache invalidation, funcmap.
  n="ir $cpu named_markers unfiltered"
  if ir_case "$cpu-named-unfiltered" "$FIXTURES/named_markers.ll" "$cpu" SQTT_SCOPE_CU=-1; then
    s=$WORK/$cpu-named-unfiltered.s
    lane_check_trace "$n" "$s" "$want"
    lane_check_grep "$n: no scope check" "$s" 's_getreg_b32' 0
    if [ "${IR_LLVM_MAJOR:?IR_LLVM_MAJOR: the LLVM major under test}" -ge 19 ]; then
      # LLVM 19+: the spec's fence, tagged local-only (LLVM 19-21 spell the key amdgpu-as).
      lane_check_grep "$n: MMRA-tagged workgroup fence" "$WORK/$cpu-named-unfiltered.ll" \
        'fence syncscope\("workgroup"\) acq_rel, !mmra'
    else
      case $cpu in
      gfx12*)
        # The fixture has no LDS operation, so the LLVM < 19 fence keeps no LDS wait (gfx12 counts
        # LDS apart from scalar loads; tests/tests/marker_cost.rs covers a marker after LDS).
        lane_check_grep "$n: no LDS wait with no LDS operation in flight" "$s" 's_wait_dscnt' 0 ;;
      *)
        lane_check_grep "$n: LDS wait of the fence boundary" "$s" "$(lds_wait_of "$cpu")" ;;
      esac
    fi
    lane_check_grep "$n: no cache invalidation" "$s" '(global|buffer)_(inv|wbinvl1)|buffer_gl[01]_inv' 0
    lane_check_funcmap "$n" "$IR_OBJCOPY" "$WORK/$cpu-named-unfiltered.o" "$IR_FUNCMAP"
    lane_check_disasm "$n" "$IR_OBJDUMP" "$cpu" "$WORK/$cpu-named-unfiltered.o" "$want"
  fi

  # 2. Default settings (CU filter 0x3): one scope check with the target's hwreg field.
  n="ir $cpu named_markers filtered"
  if ir_case "$cpu-named" "$FIXTURES/named_markers.ll" "$cpu"; then
    s=$WORK/$cpu-named.s
    lane_check_grep "$n: one scope check" "$s" "s_getreg_b32 s[0-9]+, $(hwreg_of "$cpu")" 1
    got=$(lane_marker_trace "$s" | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ *$//')
    exp=$(echo "$want" | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ *$//')
    if [ "$got" = "$exp" ]; then lane_pass "$n: markers [$got]"; else
      lane_fail "$n: markers" "expected [$exp] in any order, got [$got] (in $s)"
    fi
    lane_check_funcmap "$n" "$IR_OBJCOPY" "$WORK/$cpu-named.o" "$IR_FUNCMAP"
  fi

  # 3. A marker right before a workgroup barrier (s_barrier; split into signal/wait on gfx12),
  #    and a fused exit+enter: the pinned sched_barrier stays right before the barrier.
  n="ir $cpu barrier_sync"
  if ir_case "$cpu-barrier" "$FIXTURES/barrier_sync.ll" "$cpu"; then
    s=$WORK/$cpu-barrier.s
    case $cpu in
    gfx9*) fused="m0:11+nop" bar='s_barrier[ \t]*$' ;;
    gfx12*) fused="imm:0xb" bar='s_barrier_signal -1' ;;
    *) fused="imm:0xb" bar='s_barrier[ \t]*$' ;;
    esac
    got=$(lane_marker_trace "$s" | tr ' ' '\n' | grep -c -x "$fused" || true)
    if [ "$got" = 1 ]; then lane_pass "$n: one fused exit+enter record ($fused)"; else
      lane_fail "$n: fused exit+enter" "expected one $fused record, found $got (in $s)"
    fi
    # In the IR the pinned sched_barrier is the instruction right before the barrier call; in
    # the ISA only scalar ALU work (branch conditions) and the counter waits of the barrier itself
    # may sit between the two.
    if grep -A1 'call void @llvm.amdgcn.sched.barrier(i32 0)' "$WORK/$cpu-barrier.ll" |
      grep -q 'call void @llvm.amdgcn.s.barrier()'; then
      lane_pass "$n: IR sched_barrier pinned right before the barrier"
    else
      lane_fail "$n: IR sched_barrier before the barrier" "no sched.barrier call directly followed by s.barrier in $WORK/$cpu-barrier.ll"
    fi
    between=$(awk -v bar="$bar" '
      /; sched_barrier mask\(0x00000000\)/ { on = 1; next }
      on && $0 ~ ("^[ \t]*" bar) { print "ok"; exit }
      on && $1 !~ /^s_(and|or|xor|andn2|mov|cmp|cselect|wait)/ && $1 !~ /^;/ { print "bad:" $1; exit }
    ' "$s")
    if [ "$between" = ok ]; then
      lane_pass "$n: ISA sched_barrier then (scalar ALU and counter waits only) $bar"
    else
      lane_fail "$n: ISA sched_barrier before the barrier" "got '${between:-no sched_barrier}' between the sched_barrier and /$bar/ in $s"
    fi
    case $cpu in gfx12*) lane_check_grep "$n: gfx12 barrier wait" "$s" 's_barrier_wait -1' 1 ;; esac
    lane_check_funcmap "$n" "$IR_OBJCOPY" "$WORK/$cpu-barrier.o" "$BARRIER_FUNCMAP"
  fi

  # 4. A payload marker under gfx12 clock packing is a compile error, not a crash.
  case $cpu in
  gfx12*)
    n="ir $cpu data marker with SQTT_SHADER_CLOCK_BITS=8"
    retarget "$FIXTURES/named_markers.ll" "$cpu" "$WORK/$cpu-packing.in.ll"
    if SQTT_SHADER_CLOCK_BITS=8 "$IR_OPT" -load-pass-plugin="$PLUGIN" -passes=sqtt \
      "$WORK/$cpu-packing.in.ll" -S -o /dev/null >"$WORK/$cpu-packing.log" 2>&1; then
      lane_fail "$n" "opt succeeded; expected the payload/packing error"
    elif grep -q 'carries a payload record' "$WORK/$cpu-packing.log"; then
      lane_pass "$n: rejected with a clear error"
    else
      lane_fail "$n" "unexpected failure: $(tail -3 "$WORK/$cpu-packing.log")"
    fi
    ;;
  esac

  # 5. Address tracing (SQTT_TRACE_ADDRESSES=memory,lds): one header marker per traced op, the
  #    readlane loop, payload counts of docs/format.md (wave64: 130 global, 66 LDS; wave32: 66/34),
  #    scratch untouched, no cache invalidation.
  n="ir $cpu address_trace"
  case $cpu in
  gfx9*) wave=64 gpay=130 lpay=66 ;;
  *) wave=32 gpay=66 lpay=34 ;;
  esac
  if ir_case "$cpu-addr" "$FIXTURES/address_trace.ll" "$cpu" SQTT_SCOPE_CU=-1 \
    SQTT_TRACE_ADDRESSES=memory,lds; then
    s=$WORK/$cpu-addr.s
    lane_check_grep "$n: readlane loop" "$s" '^[[:space:]]*v_readlane_b32 '
    lane_check_grep "$n: no cache invalidation" "$s" '(global|buffer)_(inv|wbinvl1)|buffer_gl[01]_inv' 0
    lane_check_funcmap "$n" "$IR_OBJCOPY" "$WORK/$cpu-addr.o" "K:addr_kernel
W:$wave
P:1:addr_trace_load
R:1:extra_payload_count=$gpay
P:2:addr_trace_lds_store
R:2:extra_payload_count=$lpay
P:3:addr_trace_lds_load
R:3:extra_payload_count=$lpay
P:4:addr_trace_store
R:4:extra_payload_count=$gpay
P:5:addr_trace_atomic
R:5:extra_payload_count=$gpay"
  fi

  # 6. gfx12 shader-clock packing (SQTT_SHADER_CLOCK_BITS=8, shift 4): every header reads
  #    hwreg(HW_REG_SHADER_CYCLES_LO, 4, 8) (gfx1250: s_get_shader_cycles_u64, the whole
  #    counter) and the funcmap starts with the M: row; elsewhere packing is off (no clock read,
  #    no M: row).
  n="ir $cpu clock packing"
  if ir_case "$cpu-clock" "$FIXTURES/barrier_sync.ll" "$cpu" SQTT_SCOPE_CU=-1 \
    SQTT_SHADER_CLOCK_BITS=8; then
    s=$WORK/$cpu-clock.s
    case $cpu in
    gfx1200 | gfx1201)
      lane_check_grep "$n: clock read in every header" "$s" \
        's_getreg_b32 s[0-9]+, hwreg\(HW_REG_SHADER_CYCLES_LO, 4, 8\)' 4
      lane_check_grep "$n: no s_ttracedata_imm" "$s" 's_ttracedata_imm' 0
      lane_check_funcmap "$n" "$IR_OBJCOPY" "$WORK/$cpu-clock.o" "M:shader_clock_bits=8;shader_clock_shift=4
$BARRIER_FUNCMAP"
      ;;
    gfx1250)
      lane_check_grep "$n: 64-bit clock read in every header" "$s" 's_get_shader_cycles_u64 s\[[0-9]+:[0-9]+\]' 4
      lane_check_grep "$n: no s_ttracedata_imm" "$s" 's_ttracedata_imm' 0
      lane_check_funcmap "$n" "$IR_OBJCOPY" "$WORK/$cpu-clock.o" "M:shader_clock_bits=8;shader_clock_shift=4
$BARRIER_FUNCMAP"
      ;;
    *)
      lane_check_grep "$n: off on $cpu" "$s" 'SHADER_CYCLES|shader_cycles' 0
      lane_check_funcmap "$n" "$IR_OBJCOPY" "$WORK/$cpu-clock.o" "$BARRIER_FUNCMAP"
      ;;
    esac
  fi
done
}
