#!/usr/bin/env bash
# Benchmark (not a test): what the plugin costs on a large kernel file (rocPRIM algorithms), with
# every feature on, for the plugin of this tree ("after") against the one of BEFORE_REF
# ("before") and, when given, a reference plugin (AMD's sqtt-marker pass built by the user for
# the same LLVM: it reads the same SQTT_* variables), measured side by side in one run:
#   - compile time: device compile with the plugin against the same compile without it (ratio),
#     and the pass's own share of the instrumented compile, from clang's -ftime-report (the
#     plugin's passes appear as "{anonymous}::Pass<ModuleIR>" and "...<FunctionIR>" through
#     llvm-plugin on LLVM 15-18, as "...SqttModulePass" and "...SqttPrunePass" with the own
#     registration on 19+). Times are CPU time (user + system of hipcc and its children), which
#     other work on a busy machine disturbs far less than wall time, and every configuration,
#     plain included, runs with -ftime-report (it costs some 6 %);
#   - added instructions per marker: (instructions with markers - without) / s_ttracedata
#     records, counted in llvm-objdump's disassembly of the code objects (the s_nop alignment
#     padding after each function left out), and the LDS waits among them.
#
# Usage:
#   ci/bench-pass.sh [ARCH...]     this toolchain (HIPCC, default hipcc), default arches gfx90a
#                                  gfx1030 (gfx942 gfx1100 on LLVM 19+: the device libraries of
#                                  Debian sid's hipcc have no gfx90a/gfx1030)
#   ci/bench-pass.sh --lanes       bookworm's hipcc 5.2.3 (LLVM 15) here, then Debian sid's
#                                  hipcc 7.0.2 (LLVM 21) through ci/sid-lane.sh and experimental's
#                                  hipcc 7.2.4 (LLVM 22) through ci/experimental-lane.sh, side by
#                                  side; installs librocprim-dev into those chroots (cached)
# Settings: HIPCC; PLUGIN (after; default: SQTT_PLUGIN in a lane, else built from this tree);
# BEFORE_PLUGIN (default: built from BEFORE_REF, default 0cdd586, the last commit before shared
# scope checks and reduced waits, into target/bench-before/target-<major>-<ref>;
# SID_BEFORE_PLUGIN and EXPERIMENTAL_BEFORE_PLUGIN, paths inside the chroots, for the legs of
# --lanes); REFERENCE_PLUGIN_<LLVM major> or REFERENCE_PLUGIN (a plugin for that major measured
# in the same alternation, its figures in brackets; for a chroot leg, a path in the chroot);
# RUNS (compiles per configuration, default 2); SRC.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
RUNS=${RUNS:-2}
SRC=${SRC:-tests/corpus/rocprim_algorithms.hip}
HIPCC=${HIPCC:-hipcc}
BEFORE_REF=${BEFORE_REF:-0cdd586}
MAJOR=${SQTT_LLVM_MAJOR:-15}
OUT=target/bench-pass
mkdir -p "$OUT"

if [ "${1:-}" = --lanes ]; then
  shift
  rows=$OUT/rows.tsv
  bash ci/bench-pass.sh --rows "$@" >"$rows"
  # The chroot has no git: the before tree is unpacked here.
  src=target/bench-before/src-$BEFORE_REF
  if [ -z "${SID_BEFORE_PLUGIN:-}" ] && [ ! -f "$src/Cargo.toml" ]; then
    rm -rf "$src" && mkdir -p "$src"
    git archive "$BEFORE_REF" | tar -x -C "$src"
  fi
  # Bookworm's rocPRIM 5.3 headers do not compile under hipcc 7: sid's own librocprim-dev (6.4)
  # goes into the cached chroot, once, through the lane's apt step (time-limited by
  # SQTT_NET_TIMEOUT); the sid lane has it anyway (cost_report), experimental through this.
  for leg in sid:21 experimental:22; do
    suite=${leg%:*} major=${leg#*:}
    before_var=${suite^^}_BEFORE_PLUGIN reference_var=REFERENCE_PLUGIN_$major
    SQTT_LANE_EXTRA_PACKAGES="librocprim-dev ${SQTT_LANE_EXTRA_PACKAGES:-}" \
      bash "ci/$suite-lane.sh" -- env BEFORE_REF="$BEFORE_REF" RUNS="$RUNS" SRC="$SRC" \
      ${!before_var:+BEFORE_PLUGIN="${!before_var}"} \
      ${!reference_var:+REFERENCE_PLUGIN="${!reference_var}"} \
      bash ci/bench-pass.sh --rows "$@" >>"$rows"
  done
  bash ci/bench-pass.sh --print "$rows"
  exit 0
fi

if [ "${1:-}" = --print ]; then
  # Rows: llvm arch metric before after reference ("-": none measured)
  awk -F'\t' '
    { key = $1 "\t" $2; if (!(key in seen)) { seen[key] = 1; order[++n] = key }
      v[key, $3, "b"] = $4; v[key, $3, "a"] = $5; v[key, $3, "r"] = ($6 == "" ? "-" : $6) }
    function cell(k, m) {
      r = v[k, m, "r"]
      return sprintf("%5.2f -> %5.2f %6s", v[k, m, "b"], v[k, m, "a"],
        r == "-" ? "" : sprintf("(%.2f)", r))
    }
    END {
      printf "%-5s %-8s | %-20s | %-20s | %-20s | %-20s | %s\n", "LLVM", "arch",
        "pass share %, < 5", "CPU ratio, <= 1.3", "min CPU ratio", "added instr./marker",
        "LDS waits/marker"
      printf "%-5s %-8s | %-20s | %-20s | %-20s | %-20s | %s\n", "", "",
        "before -> after (ref)", "median of runs", "", "", ""
      for (i = 1; i <= n; i++) {
        k = order[i]; split(k, f, "\t")
        printf "%-5s %-8s | %-20s | %-20s | %-20s | %-20s | %s\n", f[1], f[2], cell(k, "share"),
          cell(k, "ratio"), cell(k, "minratio"), cell(k, "per"), cell(k, "waits")
      }
      print "(ref): the reference plugin (REFERENCE_PLUGIN), where one was measured"
    }' "$2"
  exit 0
fi

ROWS=0
if [ "${1:-}" = --rows ]; then
  ROWS=1
  shift
fi
if [ $# -gt 0 ]; then
  ARCHES=("$@")
elif [ "$MAJOR" -ge 19 ]; then
  ARCHES=(gfx942 gfx1100)
else
  ARCHES=(gfx90a gfx1030)
fi

features=()
if [ "$MAJOR" != 15 ]; then
  features=(--no-default-features --features "llvm$MAJOR-$([ "$MAJOR" -ge 19 ] && echo 1 || echo 0)")
fi
# In a lane (`ci/sid-lane.sh -- ...`) its own build of this tree.
PLUGIN=${PLUGIN:-${SQTT_PLUGIN:-}}
if [ -z "${PLUGIN:-}" ]; then
  cargo build --release -p sqtt-plugin "${features[@]}" --target-dir "target/bench-after-$MAJOR" >&2
  PLUGIN=$REPO/target/bench-after-$MAJOR/release/libsqtt_plugin.so
fi
before_source() {
  src=target/bench-before/src-$BEFORE_REF
  if [ ! -f "$src/Cargo.toml" ]; then
    # The lane's chroot has no git: --lanes unpacks the tree on the host first (and passes
    # BEFORE_REF in, as the chroot starts from an empty environment).
    command -v git >/dev/null || { echo "bench-pass: no $src and no git to unpack $BEFORE_REF" >&2; exit 2; }
    rm -rf "$src" && mkdir -p "$src"
    git archive "$BEFORE_REF" | tar -x -C "$src"
  fi
}
REFERENCE_VAR=REFERENCE_PLUGIN_$MAJOR
REFERENCE_PLUGIN=${!REFERENCE_VAR:-${REFERENCE_PLUGIN:-}}
CONFIGS=(plain before after)
if [ -n "$REFERENCE_PLUGIN" ]; then
  [ -f "$REFERENCE_PLUGIN" ] || { echo "bench-pass: no reference plugin $REFERENCE_PLUGIN" >&2; exit 2; }
  CONFIGS+=(reference)
fi
if [ -z "${BEFORE_PLUGIN:-}" ]; then
  before_source
  (cd "$src" && cargo build --release -p sqtt-plugin "${features[@]}" \
    --target-dir "$REPO/target/bench-before/target-$MAJOR-$BEFORE_REF") >&2
  # A target directory per revision: cargo kept the C++ shim built for another revision's
  # sources in a shared one (the plugin then failed to load: an undefined symbol).
  BEFORE_PLUGIN=$REPO/target/bench-before/target-$MAJOR-$BEFORE_REF/release/libsqtt_plugin.so
fi

OBJDUMP=${OBJDUMP:-$(command -v "llvm-objdump-$MAJOR" || command -v llvm-objdump)}
export SQTT_INSTRUMENT_FUNCTIONS=cost:50 SQTT_INSTRUMENT_BARRIERS=1 SQTT_INSTRUMENT_MEMORY=2:5 \
  SQTT_SCOPE_CU=0x1 SQTT_SCOPE_SIMD=0x1

# User + system seconds of the waited-for children in the output of `times`, which must run in
# this shell (a subshell starts from zero).
children_cpu() {
  awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/)
    printf "%.3f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$1"
}
calc() { awk "BEGIN { printf \"%.6f\", $1 }"; } # no bc in the chroots
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END { print a[int((NR + 1) / 2)] }'; }
# The least of the runs: other work on the machine only ever adds time.
least() { printf '%s\n' "$@" | sort -g | head -1; }
# instructions, s_ttracedata* records, LDS waits of a code object
count() {
  "$OBJDUMP" -d --mcpu="$2" "$1" | awk '
    function flush() { while (n > 0 && buf[n - 1] == "s_nop") n--; total += n; n = 0 }
    /^[0-9a-fA-F]+ <.*>:$/ { flush(); next }
    /^[ \t]+[a-z_0-9]+.*\/\/ [0-9A-F]+:/ {
      op = $1; if (op == "s_code_end") next
      buf[n++] = op
      if (op ~ /^s_ttracedata/) records++
      if ((op == "s_waitcnt" && $0 ~ /lgkmcnt\(0\)/) || (op == "s_wait_dscnt" && $2 == "0x0")) waits++
    }
    END { flush(); printf "%d %d %d\n", total, records, waits }'
}

row() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@"; }
for arch in "${ARCHES[@]}"; do
  common=(-std=c++17 --offload-arch="$arch" --cuda-device-only -c --no-gpu-bundle-output
    -Wno-unused-result "$SRC")
  declare -A times=() shares=() res=()
  for _ in $(seq "$RUNS"); do
    # Alternating, so that a busy moment on the machine hits every configuration alike.
    for cfg in "${CONFIGS[@]}"; do
      obj=$OUT/$cfg-$MAJOR-$arch.o
      args=(-ftime-report)
      case $cfg in
      before) args+=(-DSQTT_ENABLED=1 -fpass-plugin="$BEFORE_PLUGIN") ;;
      after) args+=(-DSQTT_ENABLED=1 -fpass-plugin="$PLUGIN") ;;
      reference) args+=(-DSQTT_ENABLED=1 -fpass-plugin="$REFERENCE_PLUGIN") ;;
      esac
      times >"$OUT/times-start"
      report=$("$HIPCC" "${args[@]}" "${common[@]}" -o "$obj" 2>&1 >/dev/null) || {
        printf '%s\n' "$report" >&2
        exit 1
      }
      times >"$OUT/times-end"
      total=$(calc "$(children_cpu "$OUT/times-end") - $(children_cpu "$OUT/times-start")")
      times[$cfg]="${times[$cfg]:-} $total"
      if [ "$cfg" != plain ]; then
        # User+System column of every plugin pass row: the fifth number (user, its percentage,
        # system, its percentage, user+system, ...). AMD's pass registers as "SQTT...Pass".
        pass=$(printf '%s\n' "$report" | awk '/\{anonymous\}::Pass<(Module|Function)IR>|Sqtt(Module|Prune)Pass|SQTT[A-Za-z]*Pass/ {
          k = 0; n = split($0, f, /[ ()%]+/)
          for (i = 1; i <= n; i++) if (f[i] ~ /^[0-9.]+$/ && ++k == 5) sum += f[i] }
          END { printf "%.4f", sum }')
        shares[$cfg]="${shares[$cfg]:-} $(calc "$pass / $total * 100")"
      fi
    done
  done
  # shellcheck disable=SC2086 # word lists on purpose
  {
    tp=$(median ${times[plain]})
    lp=$(least ${times[plain]})
    read -r ip _ wp <<<"$(count "$OUT/plain-$MAJOR-$arch.o" "$arch")"
    for cfg in "${CONFIGS[@]:1}"; do
      read -r i r w <<<"$(count "$OUT/$cfg-$MAJOR-$arch.o" "$arch")"
      res[ratio_$cfg]=$(calc "$(median ${times[$cfg]}) / $tp")
      res[minratio_$cfg]=$(calc "$(least ${times[$cfg]}) / $lp")
      res[share_$cfg]=$(median ${shares[$cfg]})
      res[per_$cfg]=$(calc "($i - $ip) / $r")
      res[waits_$cfg]=$(calc "($w - $wp) / $r")
      res[records_$cfg]=$r
    done
  }
  if [ "${res[records_before]}" != "${res[records_after]}" ]; then
    echo "bench-pass: $arch: ${res[records_before]} records before, ${res[records_after]} after" >&2
  fi
  rows=$(
    for m in share ratio minratio per waits; do
      row "$MAJOR" "$arch" "$m" "${res[${m}_before]}" "${res[${m}_after]}" "${res[${m}_reference]:--}"
    done
  )
  records=${res[records_after]}
  if [ "$ROWS" = 1 ]; then
    printf '%s\n' "$rows"
  else
    printf '%s\n' "$rows" >"$OUT/rows-$MAJOR-$arch.tsv"
    bash ci/bench-pass.sh --print "$OUT/rows-$MAJOR-$arch.tsv"
  fi
  unset times shares res
done
[ "$ROWS" = 1 ] || echo "(device compile of $SRC with $HIPCC, $RUNS runs each, medians; $records records)"
