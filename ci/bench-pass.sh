#!/usr/bin/env bash
# Benchmark (not a test): device compile time of a large kernel file (rocPRIM algorithms) with
# every feature on, against the same compile without the plugin, and the pass's own share of
# the instrumented compile, from clang's -ftime-report (the plugin's module passes appear as
# "{anonymous}::Pass<ModuleIR>" through llvm-plugin on LLVM 15-18, as "...SqttModulePass" with
# the own registration on 19+). Runs both builds alternately, RUNS times each.
# HIPCC and PLUGIN select another toolchain (the sid lane runs it on hipcc 7.0.2 / clang 21).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-2}
SRC=${SRC:-tests/corpus/rocprim_algorithms.hip}
ARCH=${ARCH:-gfx90a}
HIPCC=${HIPCC:-hipcc}
if [ -z "${PLUGIN:-}" ]; then
  cargo build --release -p sqtt-plugin >&2
  PLUGIN=$PWD/target/release/libsqtt_plugin.so
fi
common=(-std=c++17 --offload-arch="$ARCH" --cuda-device-only -c -Wno-unused-result -o /dev/null "$SRC")
export SQTT_INSTRUMENT_FUNCTIONS=cost:50 SQTT_INSTRUMENT_BARRIERS=1 SQTT_INSTRUMENT_MEMORY=2:5 \
  SQTT_SCOPE_CU=0x1 SQTT_SCOPE_SIMD=0x1

now() { date +%s.%N; }
plain=() instr=() share=()
for _ in $(seq "$RUNS"); do
  t0=$(now); "$HIPCC" "${common[@]}" 2>/dev/null; t1=$(now)
  plain+=("$(echo "$t1 - $t0" | bc -l)")
  t0=$(now)
  report=$("$HIPCC" -ftime-report -DSQTT_ENABLED=1 -fpass-plugin="$PLUGIN" "${common[@]}" 2>&1 >/dev/null)
  t1=$(now)
  total=$(echo "$t1 - $t0" | bc -l)
  instr+=("$total")
  # Wall-time column (the last number before its percentage) of every plugin pass row.
  pass=$(printf '%s\n' "$report" | awk '/\{anonymous\}::Pass<ModuleIR>|SqttModulePass/ { n = split($0, f, /[ ()]+/); for (i = 1; i <= n; i++) v[i] = f[i]; sum += v[n - 2] } END { printf "%.4f", sum }')
  share+=("$(echo "$pass / $total" | bc -l)")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END { print a[int((NR + 1) / 2)] }'; }
mp=$(median "${plain[@]}"); mi=$(median "${instr[@]}"); ms=$(median "${share[@]}")
printf 'device compile of %s for %s with %s (clang %s), %s runs each, medians:\n' "$SRC" "$ARCH" \
  "$HIPCC" "$("$HIPCC" --version 2>/dev/null | sed -n 's/.*clang version \([0-9.]*\).*/\1/p' | head -1)" "$RUNS"
printf '  without plugin:              %8.2f s\n' "$mp"
printf '  every feature on:            %8.2f s   (ratio %.2f; the added markers are compiled too)\n' "$mi" "$(echo "$mi / $mp" | bc -l)"
printf '  the pass itself:             %8.2f %%  of the instrumented compile (target < 5 %%)\n' "$(echo "$ms * 100" | bc -l)"
