#!/usr/bin/env bash
# Opt-in reference comparison (not a test of ours, not run by .ci/run): AMD's own test suites for
# its SQTT marker pass, run against this plugin and this repository's headers, on every toolchain
# of this machine that is ready, with totals per toolchain and each failure's one-line reason.
# AMD's files are never part of this repository: the caller names a copy of them.
#
#   SQTT_AMD_RUN_TESTS=DIR/test/markers/run_tests.py  (or its directory) rocprof-trace-decoder's
#       run_tests.py, with its kernels/ beside it (auto.cpp, addr_trace.cpp, marker.cpp)
#   SQTT_AMD_LIT_TESTS=DIR/amd/sqtt-marker/test  the lit tests of ROCm/llvm-project's
#       amd/sqtt-marker (*.ll, *.c, *.hip, Inputs/decode.py)
#   ci/amd-suites.sh [TOOLCHAIN...]
#
# Toolchains (default: all; one that is not ready is reported "not measured", never set up here):
#   hipcc5        the host's Debian hipcc 5.2.3 on clang 15: run_tests.py and the lit tests (LLVM 15)
#   llvm22        the host's /usr/lib/llvm-22 (opt, clang, FileCheck; ci/llvm-host-lane.sh 22
#                 installs it): the lit tests
#   sid           hipcc 7.0.2 on clang 21 in /var/cache/sqtt-sid (SQTT_SID_ROOT), once its stamp
#                 .sqtt-chroot-ready exists (ci/sid-lane.sh makes it): run_tests.py and lit
#   experimental  hipcc 7.2.4 on clang 22 in /var/cache/sqtt-experimental: the same
#
# Settings: SQTT_AMD_HEADERS=ours (default: this repository's markers/include, i.e. our
# markers.hpp for run_tests.py and our amd_sqtt_marker/sqtt_marker.h for lit's
# %sqtt-marker-include, as a user moving over gets them from sqtt-hipcc) or amd (AMD's own, from
# the suites' trees: ../../include/rocprof_trace_decoder/cxx and ../include); SQTT_AMD_PLUGIN_15,
# SQTT_AMD_PLUGIN_22 (a plugin for the host's LLVM 15 / 22 instead of building one into
# target/release, target/llvm22); SQTT_AMD_SHARE_CHROOT=1 (use a chroot whose lock a lane past
# its setup holds, instead of waiting for it: SQTT_LOCK_TIMEOUT, default 1800 s); CARGO_BUILD_JOBS
# (default 2).
#
# What is translated from AMD's command lines, and why (docs/toolchains.md, "AMD's own suites"):
#   - clang with -fpass-plugin and -Xclang -mllvm -Xclang -sqtt-marker-* on LLVM < 22 gets
#     -fplugin=<plugin> too: before 22, cc1 parses -mllvm before it loads a -fpass-plugin, so the
#     options would be unknown (docs/settings.md, "When clang sees them");
#   - run_tests.py's hipcc is a wrapper (its own HIPCC variable) that adds -include vector (AMD's
#     kernels use std::vector without including it; HIP 5.2's headers do not pull it in), gives
#     an --offload-arch when the test names none (hipcc would ask the machine's GPUs: gfx90a, else
#     the toolchain's gfx9), maps an arch the toolchain has no device library for to its nearest
#     (gfx90a -> gfx942, gfx1030 -> gfx1100, gfx1200 -> gfx1201), and refuses an arch it cannot
#     compile for at all: that test is "not runnable";
#   - llvm-objdump --offloading (run_tests.py's way to the code object) reads only the new
#     offload format before LLVM 17: on LLVM 15 a stand-in unbundles .hip_fatbin with
#     clang-offload-bundler into the names LLVM 21's objdump gives.
# Everything else runs as AMD wrote it (AMD's SQTT_* variables are ours too).
set -euo pipefail
# (Read whole before it runs: a run survives edits of this file.)
{

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Rows of the last runs, per toolchain (AMD's own headers: a directory of their own).
OUT=$REPO/target/amd-suites
[ "${SQTT_AMD_HEADERS:-ours}" != amd ] || OUT=$OUT/amd-headers
TESTS_ARCHES="gfx90a gfx1030 gfx1200 gfx1250"

say() { echo "[amd-suites] $*" >&2; }
die() {
  echo "amd-suites: $*" >&2
  exit 2
}

# --- one toolchain, where it runs (the host, or inside its chroot) --------------------------------

# The wrapper run_tests.py calls as HIPCC, and the objdump stand-in, into DIR/bin.
#   make_tools DIR REAL_HIPCC LLVM_BIN MAJOR
make_tools() {
  local dir=$1 hipcc=$2 llvm_bin=$3 major=$4 a probe supported="" src
  mkdir -p "$dir/bin"
  src=$dir/probe.hip
  printf '%s\n' '#include <hip/hip_runtime.h>' '__global__ void k(int *p) { p[threadIdx.x] = 1; }' >"$src"
  for a in $TESTS_ARCHES gfx942 gfx1100 gfx1201; do
    probe=$dir/probe-$a.o
    if "$hipcc" --offload-arch="$a" --offload-device-only -c "$src" -o "$probe" >/dev/null 2>&1; then
      supported="$supported $a"
    fi
  done
  say "arches $hipcc compiles for (of those AMD's tests name, and their stand-ins):$supported"
  cat >"$dir/bin/hipcc" <<EOF
#!/usr/bin/env bash
# run_tests.py's hipcc (ci/amd-suites.sh): see the translations there.
supported=" $supported "
args=() arch_given=0
for a in "\$@"; do
  case \$a in
  --offload-arch=*)
    arch=\${a#--offload-arch=} want=\$arch
    case "\$supported" in *" \$arch "*) ;; *)
      case \$arch in gfx90a) arch=gfx942 ;; gfx1030) arch=gfx1100 ;; gfx1200) arch=gfx1201 ;; esac
      case "\$supported" in *" \$arch "*) echo "amd-suites: translated: --offload-arch=\$want -> \$arch" >>"$dir/translations.log" ;;
      *) echo "amd-suites: not runnable: $hipcc cannot compile for \$want" >&2; exit 77 ;; esac ;;
    esac
    args+=("--offload-arch=\$arch") arch_given=1 ;;
  *) args+=("\$a") ;;
  esac
done
if [ \$arch_given = 0 ]; then
  for d in gfx90a gfx942; do
    case "\$supported" in *" \$d "*) args=("--offload-arch=\$d" "\${args[@]}"); break ;; esac
  done
fi
exec "$hipcc" -include vector "\${args[@]}"
EOF
  ln -sf "$llvm_bin/llvm-objcopy" "$dir/bin/llvm-objcopy"
  if [ "$major" -ge 17 ]; then
    ln -sf "$llvm_bin/llvm-objdump" "$dir/bin/llvm-objdump"
  else
    cat >"$dir/bin/llvm-objdump" <<EOF
#!/usr/bin/env bash
# llvm-objdump --offloading BINARY for LLVM < 17 (ci/amd-suites.sh): the code objects of
# .hip_fatbin's bundle, as BINARY.N.TARGET in the working directory.
[ "\${1:-}" = --offloading ] || exec "$llvm_bin/llvm-objdump" "\$@"
bin=\$2 base=\$(basename "\$2") n=0
"$llvm_bin/llvm-objcopy" --dump-section=.hip_fatbin=.fatbin "\$bin" || exit 1
for t in \$("$llvm_bin/clang-offload-bundler" --list --type=o --input=.fatbin); do
  case \$t in hip*-amdgcn-*)
    "$llvm_bin/clang-offload-bundler" --unbundle --type=o --input=.fatbin --targets="\$t" \
      --output="\$base.\$n.\$t" || exit 1
    n=\$((n + 1)) ;;
  esac
done
rm -f .fatbin
EOF
  fi
  chmod +x "$dir/bin/hipcc" "$dir/bin/llvm-objdump"
}

# run_tests.py on TOOLCHAIN: rows "run_tests.py<TAB>name<TAB>pass|fail|n/r<TAB>reason" on stdout.
#   run_amd_run_tests TOOLCHAIN SUITE_DIR HIPCC LLVM_BIN MAJOR PLUGIN INCLUDE WORK
run_amd_run_tests() {
  local tc=$1 suite=$2 hipcc=$3 llvm_bin=$4 major=$5 plugin=$6 include=$7 work=$8 stage
  stage=$work/rocprof-trace-decoder
  rm -rf "$stage" && mkdir -p "$stage/test/markers" "$stage/include/rocprof_trace_decoder"
  cp -r "$suite/run_tests.py" "$suite/kernels" "$stage/test/markers/"
  cp -r "$include" "$stage/include/rocprof_trace_decoder/cxx"
  make_tools "$work" "$hipcc" "$llvm_bin" "$major"
  rm -f "$work/translations.log"
  say "$tc: run_tests.py (plugin $plugin)"
  (cd "$stage" && PATH=$work/bin:$PATH HIPCC=$work/bin/hipcc SQTT_PASS_PLUGIN=$plugin \
    python3 test/markers/run_tests.py -v) >"$work/run_tests.log" 2>&1 || true
  # [i/N] name .... PASS|FAIL, then for a failure its messages indented by two spaces.
  awk -F'\t' '
    function flush() {
      if (name == "") return
      if (status == "FAIL") {
        if (why ~ /amd-suites: not runnable/) {
          sub(/.*amd-suites: not runnable: /, "", why); sub(/\\n.*/, "", why); st = "n/r"
        } else { st = "fail" }
        print "run_tests.py\t" name "\t" st "\t" why
      } else print "run_tests.py\t" name "\tpass\t"
      name = ""
    }
    /^\[[0-9]+\/[0-9]+\] / {
      flush(); name = $0; sub(/^\[[0-9]+\/[0-9]+\] /, "", name); sub(/ \.+ .*/, "", name)
      status = ($0 ~ /FAIL$/) ? "FAIL" : "PASS"; why = ""; next
    }
    /^  / && name != "" {
      line = $0; sub(/^  /, "", line)
      if (line ~ /not runnable/) why = line
      else if (why == "" || why ~ /^Compilation failed/) why = (why == "" ? line : why)
      else if (line !~ /^stderr:/) why = why "; " line
      gsub(/  \(in [^)]*\)/, "", why)
      next
    }
    END { flush() }' "$work/run_tests.log"
  if ! grep -q '^\[1/' "$work/run_tests.log"; then
    echo "run_tests.py	(the script)	fail	$(tail -1 "$work/run_tests.log")"
  fi
  if [ -s "$work/translations.log" ]; then
    sort -u "$work/translations.log" | sed 's/^amd-suites: //' >&2
  fi
}

# The lit tests of amd/sqtt-marker, each RUN pipeline that ends in FileCheck one check (lit
# itself counts files): rows "lit<TAB>file:PREFIX<TAB>pass|fail|n/r<TAB>reason".
#   run_amd_lit TOOLCHAIN TEST_DIR LLVM_BIN MAJOR PLUGIN INCLUDE WORK
run_amd_lit() {
  local tc=$1 dir=$2 llvm_bin=$3 major=$4 plugin=$5 include=$6 work=$7
  local features="amdgpu-registered-target" f file_req missing cmds check cmd n=0 log why status
  local filecheck=$llvm_bin/FileCheck
  [ -x "$filecheck" ] || filecheck=$(command -v FileCheck-15 || command -v FileCheck || true)
  [ -x "$llvm_bin/clang" ] && features="$features sqtt-marker-has-clang"
  [ -x "$llvm_bin/clang-offload-bundler" ] && [ -x "$llvm_bin/llvm-objcopy" ] &&
    features="$features sqtt-marker-has-offload-tools"
  say "$tc: the lit tests (LLVM $major, plugin $plugin)"
  mkdir -p "$work/lit"
  for f in "$dir"/*.ll "$dir"/*.c "$dir"/*.hip; do
    [ -f "$f" ] || continue
    file=$(basename "$f")
    missing=""
    for file_req in $(sed -n 's/^\(\/\/\|;\) REQUIRES: //p' "$f" | tr ',' ' '); do
      case " $features " in *" $file_req "*) ;; *) missing="$missing $file_req" ;; esac
    done
    [ -n "$filecheck" ] || missing="$missing FileCheck"
    # The RUN lines, continuations joined, one command a line.
    mapfile -t cmds < <(sed -n 's/^\(\/\/\|;\) RUN: \{0,1\}//p' "$f" | awk '
      { if (sub(/\\$/, "")) { acc = acc $0; next } print acc $0; acc = "" }')
    check=()
    for cmd in "${cmds[@]}"; do
      check+=("$cmd")
      case $cmd in *%FileCheck*) ;; *) continue ;; esac
      n=$((n + 1))
      local prefix
      prefix=$(echo "$cmd" | sed -n 's/.*--check-prefix=\([A-Za-z0-9_-]*\).*/\1/p')
      local name="$file:${prefix:-CHECK}"
      if [ -n "$missing" ]; then
        echo "lit	$name	n/r	REQUIRES$missing: not on this toolchain"
        check=()
        continue
      fi
      log=$work/lit/$n.log status=pass why=""
      : >"$log"
      local c
      for c in "${check[@]}"; do
        # -fplugin beside -fpass-plugin when cc1 needs the options before it loads the plugin.
        if [ "$major" -lt 22 ] && [[ $c == *%clang\ * || $c == *%clang ]] &&
          [[ $c == *-sqtt-marker-* ]] && [[ $c == *-fpass-plugin=%sqtt-marker-plugin* ]]; then
          c=${c/-fpass-plugin=%sqtt-marker-plugin/-fpass-plugin=%sqtt-marker-plugin -fplugin=%sqtt-marker-plugin}
        fi
        c=${c//%sqtt-marker-plugin/$plugin}
        c=${c//%sqtt-marker-include/$include}
        c=${c//%host-triple/x86_64-pc-linux-gnu}
        c=${c//%clang-offload-bundler/$llvm_bin/clang-offload-bundler}
        c=${c//%clang/$llvm_bin/clang}
        c=${c//%opt/$llvm_bin/opt}
        c=${c//%llvm-objcopy/$llvm_bin/llvm-objcopy}
        c=${c//%FileCheck/$filecheck}
        c=${c//%python/python3}
        c=${c//%t/$work/lit/t$n}
        c=${c//%s/$f}
        c=${c//%S/$dir}
        echo "\$ $c" >>"$log"
        if ! (cd "$work/lit" && bash -o pipefail -c "$c") >>"$log" 2>&1; then
          status=fail
          break
        fi
      done
      # A compiler that does not know the test's target cannot run it (opt only warns and goes
      # on: whatever it then gives says nothing).
      if grep -qE "unknown target CPU|[Ii]nvalid target ID|is not a recognized processor" "$log"; then
        status=n/r why="LLVM $major does not know the target: $(grep -m1 -oE "(unknown target CPU|[Ii]nvalid target ID) '[^']*'|'[^']*' is not a recognized processor" "$log")"
      elif [ $status = fail ]; then
        why=$(grep -m1 -E 'error:|Error|Traceback|not found' "$log" | sed 's/^.*\(error: \)/\1/' | cut -c1-120 || true)
        # FileCheck's failure: the directive that failed, as written.
        local directive
        directive=$(grep -m1 -A1 'error: .*expected string not found' "$log" | sed -n '2s/^[/; ]*//p' || true)
        [ -z "$directive" ] || why="$why: $directive"
        [ -n "$why" ] || why=$(grep -v '^\$ ' "$log" | tail -1 | cut -c1-160)
        # clang 15 asks for the device library on a C compile for amdgcn (AMD's RUN lines give
        # no -nogpulib there).
        if grep -q "cannot find ROCm device library" "$log"; then
          status=n/r why="clang $major wants the ROCm device library here: $why"
        elif grep -q "Unknown command line argument '-" "$log" &&
          ! grep -q "Unknown command line argument '-sqtt-marker-" "$log"; then
          status=n/r why="an LLVM option this LLVM lacks: $(grep -m1 -o "Unknown command line argument '[^']*'" "$log")"
        elif grep -q ": command not found" "$log"; then
          status=n/r why="a tool the RUN line needs is missing: $(grep -m1 -o '[^ :]*: command not found' "$log")"
        fi
      fi
      echo "lit	$name	$status	$why"
      check=()
    done
  done
}

# Runs every suite given on one toolchain; rows on stdout.
#   run_toolchain TOOLCHAIN HIPCC|- LLVM_BIN MAJOR PLUGIN RUN_TESTS_DIR|- LIT_DIR|- HEADERS
run_toolchain() {
  local tc=$1 hipcc=$2 llvm_bin=$3 major=$4 plugin=$5 rt=$6 lit=$7 headers=$8 work inc_rt inc_lit
  work=$(mktemp -d "/tmp/amd-suites-$tc.XXXXXX")
  inc_rt=$REPO/markers/include inc_lit=$REPO/markers/include
  if [ "$headers" = amd ]; then
    inc_rt=$rt/../../include/rocprof_trace_decoder/cxx inc_lit=$lit/../include
  fi
  if [ "$rt" != - ] && [ "$hipcc" != - ] && ! command -v python3 >/dev/null; then
    echo "run_tests.py	(all 34)	n/r	no python3 on this toolchain"
  elif [ "$rt" != - ] && [ "$hipcc" != - ]; then
    run_amd_run_tests "$tc" "$rt" "$hipcc" "$llvm_bin" "$major" "$plugin" "$inc_rt" "$work"
  fi
  if [ "$lit" != - ]; then
    run_amd_lit "$tc" "$lit" "$llvm_bin" "$major" "$plugin" "$inc_lit" "$work"
  fi
  # The logs stay for a look at a failure; the rest goes.
  say "$tc: logs in $work (run_tests.log, lit/N.log)"
  rm -rf "$work/rocprof-trace-decoder" "$work"/probe*
}

# --- the totals ------------------------------------------------------------------------------
declare -A LABEL=([hipcc5]="hipcc 5.2.3 (LLVM 15)" [llvm22]="LLVM 22 (host opt/clang)"
  [sid]="hipcc 7.0.2 (sid, LLVM 21)" [experimental]="hipcc 7.2.4 (experimental, LLVM 22)")
# The table of the rows in target/amd-suites for TOOLCHAINS, then each failure.
print_totals() {
  local tc rows suite
  echo
  echo "AMD's suites against this plugin (headers: ${SQTT_AMD_HEADERS:-ours})"
  printf '%-38s %-13s %5s %5s %5s\n' toolchain suite pass fail "n/r"
  for tc in "${TOOLCHAINS[@]}"; do
    rows=$OUT/$tc.tsv
    if [ -f "$rows.skip" ] || [ ! -f "$rows" ]; then
      printf '%-38s %s\n' "${LABEL[$tc]}" "$(cat "$rows.skip" 2>/dev/null || echo "not measured: not run")"
      continue
    fi
    for suite in run_tests.py lit; do
      grep -q "^$suite	" "$rows" || continue
      awk -F'\t' -v s="$suite" -v l="${LABEL[$tc]}" '$1 == s { n[$3]++ }
        END { printf "%-38s %-13s %5d %5d %5d\n", l, s, n["pass"], n["fail"], n["n/r"] }' "$rows"
    done
  done
  for tc in "${TOOLCHAINS[@]}"; do
    rows=$OUT/$tc.tsv
    [ -f "$rows" ] && [ ! -f "$rows.skip" ] || continue
    if grep -qP '\t(fail|n/r)\t' "$rows"; then
      echo
      echo "${LABEL[$tc]}:"
      # One line each: the first message, and how many more there are.
      awk -F'\t' '$3 != "pass" {
          why = $4; n = split(why, parts, /; (full M0 trace|Missing|Unexpected)/)
          if (n > 1) why = parts[1] " (and " n - 1 " more)"
          printf "  %-5s %-13s %-38s %s\n", $3, $1, $2, substr(why, 1, 170) }' "$rows"
    fi
  done
}

if [ "${1:-}" = --print ]; then
  shift
  TOOLCHAINS=("$@")
  [ ${#TOOLCHAINS[@]} -gt 0 ] || TOOLCHAINS=(hipcc5 llvm22 sid experimental)
  print_totals
  exit 0
fi

# --- inside a chroot ---------------------------------------------------------------------------
if [ "${1:-}" = --inner ]; then
  # ci/amd-suites.sh --inner TOOLCHAIN MAJOR RUN_TESTS_DIR|- LIT_DIR|- HEADERS
  tc=$2 major=$3
  export PATH=/opt/rust/bin:/usr/lib/llvm-$major/bin:$PATH CARGO_HOME=/root/.cargo
  export "LLVM_SYS_${major}1_PREFIX=/usr/lib/llvm-$major"
  target=$REPO/target/$tc-llvm$major
  say "$tc: building the plugin (llvm$major-1) into $target"
  (cd "$REPO" && cargo build --release --locked -p sqtt-plugin --no-default-features \
    --features "llvm$major-1" --target-dir "$target" -j "${CARGO_BUILD_JOBS:-2}") \
    >"/tmp/amd-suites-build-$tc.log" 2>&1 || {
    tail -20 "/tmp/amd-suites-build-$tc.log" >&2
    die "$tc: the plugin build failed"
  }
  run_toolchain "$tc" "$(command -v hipcc)" "/usr/lib/llvm-$major/bin" "$major" \
    "$target/release/libsqtt_plugin.so" "$4" "$5" "$6"
  exit 0
fi

# --- on the host -----------------------------------------------------------------------------
RUN_TESTS=${SQTT_AMD_RUN_TESTS:-}
LIT_TESTS=${SQTT_AMD_LIT_TESTS:-}
HEADERS=${SQTT_AMD_HEADERS:-ours}
[ -n "$RUN_TESTS$LIT_TESTS" ] || die "name AMD's suites: SQTT_AMD_RUN_TESTS=PATH (run_tests.py or its \
directory, rocprof-trace-decoder's test/markers) and/or SQTT_AMD_LIT_TESTS=DIR (amd/sqtt-marker/test)"
if [ -n "$RUN_TESTS" ]; then
  [ -d "$RUN_TESTS" ] || RUN_TESTS=$(dirname "$RUN_TESTS")
  RUN_TESTS=$(cd "$RUN_TESTS" 2>/dev/null && pwd) ||
    die "SQTT_AMD_RUN_TESTS: no run_tests.py or directory $SQTT_AMD_RUN_TESTS"
  [ -f "$RUN_TESTS/run_tests.py" ] && [ -d "$RUN_TESTS/kernels" ] ||
    die "SQTT_AMD_RUN_TESTS: no run_tests.py with kernels/ beside it in $RUN_TESTS"
else
  RUN_TESTS=-
fi
if [ -n "$LIT_TESTS" ]; then
  LIT_TESTS=$(cd "$LIT_TESTS" 2>/dev/null && pwd) || die "SQTT_AMD_LIT_TESTS: no directory $SQTT_AMD_LIT_TESTS"
  ls "$LIT_TESTS"/*.ll >/dev/null 2>&1 || die "SQTT_AMD_LIT_TESTS: no .ll lit tests in $LIT_TESTS"
else
  LIT_TESTS=-
fi
case $HEADERS in ours | amd) ;; *) die "SQTT_AMD_HEADERS: '$HEADERS' is not one of: ours, amd" ;; esac
TOOLCHAINS=("$@")
[ ${#TOOLCHAINS[@]} -gt 0 ] || TOOLCHAINS=(hipcc5 llvm22 sid experimental)
for tc in "${TOOLCHAINS[@]}"; do
  case $tc in hipcc5 | llvm22 | sid | experimental) ;;
  *) die "unknown toolchain '$tc' (accepted: hipcc5, llvm22, sid, experimental)" ;; esac
done
mkdir -p "$OUT"

# Builds the host plugin for MAJOR (15: the default build) unless SQTT_AMD_PLUGIN_<MAJOR> names one.
host_plugin() {
  local major=$1 var=SQTT_AMD_PLUGIN_$1 target
  if [ -n "${!var:-}" ]; then
    echo "${!var}"
    return
  fi
  if [ "$major" = 15 ]; then
    target=$REPO/target
    (cd "$REPO" && cargo build --release -p sqtt-plugin -j "${CARGO_BUILD_JOBS:-2}") >&2
  else
    target=$REPO/target/llvm$major
    (cd "$REPO" && env "LLVM_SYS_${major}1_PREFIX=/usr/lib/llvm-$major" cargo build --release \
      -p sqtt-plugin --no-default-features --features "llvm$major-1" --target-dir "$target" \
      -j "${CARGO_BUILD_JOBS:-2}") >&2
  fi
  echo "$target/release/libsqtt_plugin.so"
}

# Copies the suites into the chroot's /tmp (the chroot sees only itself and the worktree).
in_chroot() {
  local tc=$1 major=$2 root=$3 rt=- lit=- stage
  # shellcheck source=ci/chroot.sh
  source "$REPO/ci/chroot.sh"
  # The chroot's lock keeps this away from a lane's debootstrap and apt steps. A lane holds it
  # through its suites too; SQTT_AMD_SHARE_CHROOT=1 goes ahead while a lane that is past its
  # setup (the stamp exists) still holds it: this only reads the chroot's system, and builds
  # into this worktree's target/.
  if [ "${SQTT_AMD_SHARE_CHROOT:-0}" = 1 ]; then
    say "$tc: not taking $root.lock (SQTT_AMD_SHARE_CHROOT=1)"
  else
    chroot_lock "$root"
  fi
  stage=$root/tmp/sqtt-amd-suites
  rm -rf "$stage" && mkdir -p "$stage"
  if [ "$RUN_TESTS" != - ]; then
    mkdir -p "$stage/rt/test/markers" "$stage/rt/include/rocprof_trace_decoder"
    cp -r "$RUN_TESTS/run_tests.py" "$RUN_TESTS/kernels" "$stage/rt/test/markers/"
    [ ! -d "$RUN_TESTS/../../include/rocprof_trace_decoder/cxx" ] ||
      cp -r "$RUN_TESTS/../../include/rocprof_trace_decoder/cxx" "$stage/rt/include/rocprof_trace_decoder/"
    rt=/tmp/sqtt-amd-suites/rt/test/markers
  fi
  if [ "$LIT_TESTS" != - ]; then
    mkdir -p "$stage/lit/test"
    cp -r "$LIT_TESTS/." "$stage/lit/test/"
    [ ! -d "$LIT_TESTS/../include" ] || cp -r "$LIT_TESTS/../include" "$stage/lit/"
    lit=/tmp/sqtt-amd-suites/lit/test
  fi
  chroot_run "$root" "bash /src/ci/amd-suites.sh --inner $tc $major $rt $lit $HEADERS"
  rm -rf "$stage"
}

for tc in "${TOOLCHAINS[@]}"; do
  rows=$OUT/$tc.tsv
  rm -f "$rows"
  case $tc in
  hipcc5)
    command -v hipcc >/dev/null || { echo "not measured: no hipcc on the host" >"$rows.skip"; continue; }
    plugin=$(host_plugin 15)
    run_toolchain hipcc5 "$(command -v hipcc)" /usr/lib/llvm-15/bin 15 "$plugin" "$RUN_TESTS" \
      "$LIT_TESTS" "$HEADERS" >"$rows"
    ;;
  llvm22)
    if [ ! -x /usr/lib/llvm-22/bin/opt ]; then
      echo "not measured: no /usr/lib/llvm-22/bin/opt (ci/llvm-host-lane.sh 22 installs it)" >"$rows.skip"
      continue
    fi
    plugin=$(host_plugin 22)
    run_toolchain llvm22 - /usr/lib/llvm-22/bin 22 "$plugin" - "$LIT_TESTS" "$HEADERS" >"$rows"
    ;;
  sid | experimental)
    [ $tc = sid ] && root=${SQTT_SID_ROOT:-/var/cache/sqtt-sid} major=21
    [ $tc = experimental ] && root=${SQTT_EXPERIMENTAL_ROOT:-/var/cache/sqtt-experimental} major=22
    if [ ! -f "$root/.sqtt-chroot-ready" ]; then
      echo "not measured: $root/.sqtt-chroot-ready does not exist (ci/$tc-lane.sh makes the chroot)" >"$rows.skip"
      continue
    fi
    [ "$(id -u)" = 0 ] || die "$tc runs in a chroot: needs root"
    in_chroot "$tc" "$major" "$root" >"$rows"
    ;;
  *) die "unknown toolchain '$tc' (hipcc5, llvm22, sid, experimental)" ;;
  esac
  rm -f "$rows.skip"
done

print_totals
exit
}
