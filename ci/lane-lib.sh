# shellcheck shell=bash
# Sourced by the ci/llvm*-lane.sh scripts: result bookkeeping and ISA / funcmap checks.

LANE_PASSED=()
LANE_FAILED=()
LANE_NAME=${LANE_NAME:-lane}

lane_log() { echo "[$LANE_NAME] $*" >&2; }

# Aborts the lane (setup problems: missing tools, failed build, network).
lane_die() {
  echo "[$LANE_NAME] FAIL: $*" >&2
  echo "== $LANE_NAME: FAIL (setup: $*)" >&2
  exit 1
}

# Installs the Debian packages of a host lane that are missing (nothing when all are there);
# each network step time-limited by NET_TIMEOUT, its output in LOG.
#   lane_apt_install LOG PACKAGE...
lane_apt_install() {
  local log=$1 p missing=()
  shift
  for p in "$@"; do
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" = installed ] || missing+=("$p")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  lane_log "installing ${missing[*]}"
  # Lanes run two at a time (ci/lanes.sh): apt-get waits for the other lane's apt-get rather
  # than failing on dpkg's lock.
  local lock=(flock -w 1800 /var/lock/sqtt-host-apt.lock)
  "${lock[@]}" timeout "${NET_TIMEOUT:-600}" apt-get update -qq >"$log" 2>&1 ||
    lane_die "apt-get update failed or timed out after ${NET_TIMEOUT:-600}s (see $log)"
  DEBIAN_FRONTEND=noninteractive "${lock[@]}" timeout "${NET_TIMEOUT:-600}" \
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$log" 2>&1 ||
    lane_die "apt-get install ${missing[*]} failed or timed out (see $log)"
}

# The arches of a lane in ci/lanes.tsv (its third column): the single ones, or with --multi those
# of its multi-arch binary (the entry written A+B+C), one a word. Fails when the table has no
# such lane.
#   lane_table_arches [--multi] LANE
lane_table_arches() {
  local multi=0 row
  [ "$1" = --multi ] && { multi=1; shift; }
  row=$(awk -F'\t' -v n="$1" '$1 == n { print $3 }' "$(dirname "${BASH_SOURCE[0]}")/lanes.tsv")
  [ -n "$row" ] || lane_die "no lane '$1' in ci/lanes.tsv"
  # awk, not grep: no match is no arch, not a failure under pipefail.
  tr ' ' '\n' <<<"$row" | awk -v m="$multi" '(m == 1 && /[+]/) || (m != 1 && !/[+]/ && $0 != "-")' |
    tr '+\n' '  ' | sed 's/ $//'
}

lane_pass() {
  LANE_PASSED+=("$1")
  echo "  PASS $1" >&2
}

lane_fail() {
  LANE_FAILED+=("$1")
  echo "  FAIL $1${2:+: $2}" >&2
}

# Prints the summary; returns non-zero when a case failed (or none ran).
lane_summary() {
  local secs=$1
  echo "== $LANE_NAME: ${#LANE_PASSED[@]} passed, ${#LANE_FAILED[@]} failed (${secs}s)" >&2
  local f
  for f in "${LANE_FAILED[@]}"; do
    echo "   failed: $f" >&2
  done
  if [ ${#LANE_FAILED[@]} -gt 0 ] || [ ${#LANE_PASSED[@]} -eq 0 ]; then
    echo "== $LANE_NAME: FAIL" >&2
    return 1
  fi
  echo "== $LANE_NAME: PASS" >&2
}

# The markers of an AMDGPU assembly file, in file order, one word each:
#   imm:<hex>    s_ttracedata_imm <hex>
#   m0:<value>   s_ttracedata, with the last value written to M0 (decimal, "dyn" for a
#                v_readfirstlane_b32 into M0, "?" when unknown)
# A trailing "+nop" means the s_ttracedata is directly preceded by `s_nop 0` (the gfx9 hazard).
lane_marker_trace() {
  awk '
    function norm(v,   i, n, d) {
      v = tolower(v)
      if (v !~ /^0x/) return v + 0
      n = 0
      for (i = 3; i <= length(v); i++) {
        d = index("0123456789abcdef", substr(v, i, 1))
        if (d == 0) break
        n = n * 16 + d - 1
      }
      return n
    }
    /^[ \t]*;/ { next }
    { dst = $2; sub(/,$/, "", dst); src = $3 }
    # "+nop": the record is the whole unit, `s_mov_b32 m0, <v>` / `s_nop N` / `s_ttracedata`
    # with nothing in between (asm comment lines aside).
    $1 == "s_mov_b32" && dst == "m0" { m0 = (src in reg) ? reg[src] : (src ~ /^(0x|-)?[0-9]/ ? norm(src) : "?"); st = 1; next }
    $1 == "v_readfirstlane_b32" && dst == "m0" { m0 = "dyn"; st = 0; next }
    $1 == "s_ttracedata_imm" { printf "imm:0x%x ", norm($2); st = 0; next }
    $1 == "s_ttracedata" { printf "m0:%s%s ", (m0 == "" ? "?" : m0), (st == 2 ? "+nop" : ""); st = 0; next }
    NF > 0 && $1 !~ /^\./ && $1 !~ /:$/ {
      # Track scalar registers that later feed M0 (unoptimised code goes through one).
      if (dst ~ /^s[0-9]+$/) {
        if ($1 == "s_mov_b32" && src ~ /^(0x|-)?[0-9]/) reg[dst] = norm(src)
        else if ($1 == "v_readfirstlane_b32") reg[dst] = "dyn"
        else delete reg[dst]
      }
      st = ($1 == "s_nop" && st == 1) ? 2 : 0
    }
    END { print "" }
  ' "$1" | sed 's/ *$//'
}

# Compares a marker trace with the expected one.
#   lane_check_trace CASE FILE.s "expected words"
lane_check_trace() {
  local name=$1 file=$2 want=$3 got
  got=$(lane_marker_trace "$file")
  if [ "$got" = "$want" ]; then
    lane_pass "$name: markers [$got]"
  else
    lane_fail "$name: markers" "expected [$want], got [$got] (in $file)"
  fi
}

# Checks that an assembly file contains a line matching an extended regex.
#   lane_check_grep CASE FILE REGEX [count]
lane_check_grep() {
  local name=$1 file=$2 re=$3 want=${4:-} n
  n=$(grep -cE -- "$re" "$file" || true)
  if [ -n "$want" ] && [ "$n" != "$want" ]; then
    lane_fail "$name" "expected $want line(s) matching /$re/ in $file, found $n"
  elif [ -z "$want" ] && [ "$n" -eq 0 ]; then
    lane_fail "$name" "no line matching /$re/ in $file"
  else
    lane_pass "$name"
  fi
}

# Dumps .sqtt_funcmap of a device code object (or relocatable object) and compares it with the
# expected rows (NULs stripped).
#   lane_check_funcmap CASE OBJCOPY OBJECT "expected rows, newline separated"
lane_check_funcmap() {
  local name=$1 objcopy=$2 obj=$3 want=$4 dump got
  dump="$obj.funcmap"
  rm -f "$dump"
  if ! "$objcopy" --dump-section=.sqtt_funcmap="$dump" "$obj" /dev/null 2>"$dump.err"; then
    lane_fail "$name: funcmap" "$(basename "$objcopy") could not dump .sqtt_funcmap from $obj: $(head -c 300 "$dump.err")"
    return
  fi
  got=$(tr -d '\0' <"$dump")
  if [ "$got" = "$want" ]; then
    lane_pass "$name: funcmap ($(echo "$got" | wc -l) rows)"
  else
    lane_fail "$name: funcmap" "expected
$want
got
$got"
  fi
}

# Disassembles a code object and checks that it holds the expected markers (in any order: the
# block layout of guarded markers varies) with the target's encodings:
#   gfx9/gfx10 s_ttracedata BF960000, gfx10 s_ttracedata_imm BFA8xxxx,
#   gfx11/gfx12 s_ttracedata BFBA0000, s_ttracedata_imm BFBBxxxx.
#   lane_check_disasm CASE OBJDUMP CPU OBJECT "expected words"
lane_check_disasm() {
  local name=$1 objdump=$2 cpu=$3 obj=$4 want=$5 dis got exp plain imm bad
  dis="$obj.dis"
  if ! "$objdump" -d --mcpu="$cpu" "$obj" >"$dis" 2>"$dis.err"; then
    lane_fail "$name: disassembly" "$(basename "$objdump") failed on $obj: $(head -c 300 "$dis.err")"
    return
  fi
  got=$(lane_marker_trace "$dis" | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ *$//')
  exp=$(echo "$want" | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ *$//')
  case $cpu in
  gfx9*) plain=BF960000 imm=none ;;
  gfx10*) plain=BF960000 imm=BFA8 ;;
  *) plain=BFBA0000 imm=BFBB ;;
  esac
  bad=$(awk -v plain="$plain" -v imm="$imm" '
    $1 == "s_ttracedata" && toupper($NF) != plain { print $1 "=" $NF }
    $1 == "s_ttracedata_imm" && substr(toupper($NF), 1, 4) != imm { print $1 "=" $NF }
  ' "$dis" | sort -u | tr '\n' ' ')
  if [ "$got" != "$exp" ]; then
    lane_fail "$name: disassembled markers" "expected [$exp] in any order, got [$got] (in $dis)"
  elif [ -n "$bad" ]; then
    lane_fail "$name: marker encodings" "expected s_ttracedata $plain / s_ttracedata_imm ${imm}xxxx, got $bad(in $dis)"
  else
    lane_pass "$name: code object markers and encodings"
  fi
}

# Checks that the funcmap of an object has a row matching each extended regex (whole rows).
#   lane_check_funcmap_rows CASE OBJCOPY OBJECT REGEX...
lane_check_funcmap_rows() {
  local name=$1 objcopy=$2 obj=$3 dump re missing=()
  shift 3
  dump="$obj.funcmap"
  if ! "$objcopy" --dump-section=.sqtt_funcmap="$dump" "$obj" /dev/null 2>"$dump.err"; then
    lane_fail "$name: funcmap" "$(basename "$objcopy") could not dump .sqtt_funcmap from $obj"
    return
  fi
  tr -d '\0' <"$dump" >"$dump.txt"
  for re in "$@"; do
    grep -qxE -- "$re" "$dump.txt" || missing+=("$re")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    lane_pass "$name: funcmap rows ($(wc -l <"$dump.txt") rows)"
  else
    lane_fail "$name: funcmap rows" "no row matching ${missing[*]} in $dump.txt"
  fi
}

# Every feature at once on ci/fixtures/lane_features.hip, with the machine verifier: the compile
# succeeds and the funcmap has the rows each feature adds. COMPILE is a function taking
# (arch, opt, out, extra args...) and leaving its log in out.log.
#   lane_feature_cases COMPILE OBJCOPY ARCH...
lane_feature_cases() {
  local compile=$1 objcopy=$2 arch opt co n wave lds
  shift 2
  for arch in "$@"; do
    case $arch in gfx9*) wave=64 ;; *) wave=32 ;; esac
    for opt in -O0 -O3; do
      n="features $arch $opt"
      co=$WORK/features-$arch$opt-mem.co
      if SQTT_INSTRUMENT_FUNCTIONS=1 SQTT_INSTRUMENT_BARRIERS=1 SQTT_INSTRUMENT_MEMORY=2:5 \
        "$compile" "$arch" "$opt" "$co" -c --no-gpu-bundle-output -mllvm -verify-machineinstrs; then
        lane_check_funcmap_rows "$n functions+barriers+memory" "$objcopy" "$co" \
          'K:_Z20lane_features_kernelPKfPfPii' 'F:[0-9]+:_Z5scalefi' 'U:[0-9]+:load' \
          'P:[0-9]+:barrier' 'P:[0-9]+:vmem_load' 'P:[0-9]+:vmem_store'
      else
        lane_fail "$n functions+barriers+memory: compile" "$(tail -5 "$co.log")"
      fi
      co=$WORK/features-$arch$opt-addr.co
      # At -O0 the __shared__ accesses stay flat (no address-space inference): traced as memory.
      lds='P:[0-9]+:addr_trace_lds_(store|load)'
      [ "$opt" = -O0 ] && lds='P:[0-9]+:addr_trace_store'
      if SQTT_INSTRUMENT_FUNCTIONS=1 SQTT_INSTRUMENT_BARRIERS=1 SQTT_TRACE_ADDRESSES=memory,lds \
        "$compile" "$arch" "$opt" "$co" -c --no-gpu-bundle-output -mllvm -verify-machineinstrs; then
        lane_check_funcmap_rows "$n functions+barriers+addresses" "$objcopy" "$co" \
          "W:$wave" 'K:_Z20lane_features_kernelPKfPfPii' 'P:[0-9]+:addr_trace_load' \
          "$lds" 'P:[0-9]+:addr_trace_atomic' 'R:[0-9]+:extra_payload_count=[0-9]+'
      else
        lane_fail "$n functions+barriers+addresses: compile" "$(tail -5 "$co.log")"
      fi
    done
  done
}
