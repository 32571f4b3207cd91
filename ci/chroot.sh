# shellcheck shell=bash
# Cached Debian chroots for the lanes (trixie for LLVM 18, sid for hipcc 7.0.2 / LLVM 21,
# experimental for hipcc 7.2.4 / LLVM 22), and a way to run commands in them with the worktree
# and the host's Rust toolchain mounted. Sourced by the lane scripts:
#
#   chroot_ensure SUITE ROOT PACKAGES...  create ROOT (debootstrap) or complete it (apt-get) so
#                                         that it has PACKAGES; quick when its stamp lists them.
#                                         Takes ROOT's lock and keeps it until the process exits.
#   chroot_run ROOT 'command'             run a bash command inside ROOT (-euo pipefail), with
#                                         the worktree at /src and the host's Rust at /opt/rust
#
# or run directly: `ci/chroot.sh ensure SUITE ROOT PACKAGES...`, `ci/chroot.sh run ROOT CMD...`.
#
# SUITE is a Debian suite debootstrap knows (trixie, sid, ...), or `experimental`: a sid chroot
# with experimental added to its sources, PACKAGES then installed with `-t experimental`.
# sid's and experimental's Release files on the mirror may carry an expired Valid-Until, so
# those chroots get `Acquire::Check-Valid-Until "false"` in their apt configuration.
#
# Nothing from the chroot's suite goes onto the bookworm host: the host only gets debootstrap
# (and util-linux, debian-archive-keyring), bookworm packages. Mounts are made inside a private
# mount namespace (unshare -m): they vanish when the command ends, even if it is killed.
#
# Stamp: ROOT/.sqtt-chroot-ready holds `suite=SUITE` and one installed package a line. A package
# missing from it re-runs apt-get; a stamp for another suite is an error (remove ROOT).
#
# Settings (environment):
#   SQTT_DEBIAN_MIRROR  Debian mirror (default http://deb.debian.org/debian)
#   SQTT_NET_TIMEOUT    seconds allowed for each network step (default 900)
#   SQTT_LOCK_TIMEOUT   seconds to wait for another run holding ROOT's lock (default 1800)
#   CHROOT_SEED         a ready chroot of SUITE's base (sid for experimental) to copy instead of
#                       running debootstrap, when ROOT does not exist yet (set by the lanes)

CHROOT_MIRROR=${SQTT_DEBIAN_MIRROR:-${SQTT_TRIXIE_MIRROR:-http://deb.debian.org/debian}}
CHROOT_NET_TIMEOUT=${SQTT_NET_TIMEOUT:-900}
CHROOT_LOCK_TIMEOUT=${SQTT_LOCK_TIMEOUT:-1800}
CHROOT_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CHROOT_LOCKED=" "

chroot_log() { echo "[chroot] $*" >&2; }
chroot_die() {
  echo "[chroot] FAIL: $*" >&2
  echo "== ${LANE_NAME:-chroot}: FAIL (setup: $*)" >&2
  exit 1
}

# Runs a time-limited network step; on failure says which step, and whether it timed out.
#   chroot_net STEP LOG CMD ARGS...
chroot_net() {
  local step=$1 log=$2 rc=0
  shift 2
  local t0=$SECONDS
  timeout "$CHROOT_NET_TIMEOUT" "$@" >"$log" 2>&1 || rc=$?
  if [ $rc = 124 ]; then
    tail -20 "$log" >&2
    chroot_die "$step timed out after ${CHROOT_NET_TIMEOUT}s (SQTT_NET_TIMEOUT; log: $log)"
  elif [ $rc != 0 ]; then
    tail -20 "$log" >&2
    chroot_die "$step failed with exit code $rc (log: $log)"
  fi
  chroot_log "$step: $((SECONDS - t0))s"
}

# Host prerequisites (bookworm packages only).
chroot_host_tools() {
  local missing=()
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  command -v unshare >/dev/null || missing+=(util-linux)
  command -v flock >/dev/null || missing+=(util-linux)
  [ -e /usr/share/keyrings/debian-archive-keyring.gpg ] || missing+=(debian-archive-keyring)
  if [ ${#missing[@]} -gt 0 ]; then
    chroot_log "installing on the host: ${missing[*]}"
    # The lock is lane-lib.sh's: lanes run two at a time and share the host's dpkg.
    chroot_net "apt-get update on the host" /tmp/sqtt-chroot-host-apt.log \
      flock -w 1800 /var/lock/sqtt-host-apt.lock apt-get update -qq
    chroot_net "apt-get install ${missing[*]} on the host" /tmp/sqtt-chroot-host-apt.log \
      flock -w 1800 /var/lock/sqtt-host-apt.lock env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

# Takes ROOT's lock (once per process; released when the process exits).
chroot_lock() {
  local root=$1 fd
  case $CHROOT_LOCKED in *" $root "*) return 0 ;; esac
  mkdir -p "$(dirname "$root")"
  exec {fd}>"$root.lock"
  if ! flock -n "$fd"; then
    chroot_log "waiting for $root.lock (another run uses this chroot)"
    flock -w "$CHROOT_LOCK_TIMEOUT" "$fd" ||
      chroot_die "timed out after ${CHROOT_LOCK_TIMEOUT}s waiting for $root.lock"
  fi
  CHROOT_LOCKED="$CHROOT_LOCKED$root "
}

# Runs a shell command inside the chroot. The worktree is at /src, the host's Rust toolchain
# (the sysroot of the host's rustc: bin/cargo, bin/rustc, lib/) read-only at /opt/rust. Host
# binaries run there as long as the chroot's glibc is at least bookworm's (trixie, sid). The
# mounts live in a private namespace.
#   chroot_run ROOT 'command'
chroot_run() {
  local root=$1
  shift
  [ -x "$root/bin/bash" ] || chroot_die "$root is not a chroot (no bin/bash)"
  local sysroot
  sysroot=$(cd "$CHROOT_REPO" && rustc --print sysroot 2>/dev/null) || sysroot=""
  # shellcheck disable=SC2016 # the inner script expands its own arguments
  unshare --mount --propagation private -- /bin/bash -euo pipefail -c '
    root=$1 repo=$2 rust=$3
    shift 3
    mkdir -p "$root/proc" "$root/dev" "$root/src" "$root/opt/rust" "$root/tmp"
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    mount --bind "$repo" "$root/src"
    if [ -n "$rust" ] && [ -x "$rust/bin/cargo" ]; then
      mount --bind "$rust" "$root/opt/rust"
      mount -o remount,bind,ro "$root/opt/rust"
    fi
    cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
    # The CA bundle of the host (it may trust a local TLS proxy); used by cargo inside.
    mkdir -p "$root/etc/ssl"
    cp -L "${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}" "$root/etc/ssl/sqtt-host-ca.crt" 2>/dev/null || true
    pass=()
    for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
      [ -n "${!v:-}" ] && pass+=("$v=${!v}")
    done
    exec chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
      PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
      SSL_CERT_FILE=/etc/ssl/sqtt-host-ca.crt CARGO_HTTP_CAINFO=/etc/ssl/sqtt-host-ca.crt \
      "${pass[@]}" /bin/bash -euo pipefail -c "$*"
  ' chroot_run "$root" "$CHROOT_REPO" "$sysroot" "$@"
}

# Creates (or completes) the chroot. Quick when the stamp lists every wanted package.
#   chroot_ensure SUITE ROOT PACKAGES...
chroot_ensure() {
  local suite=$1 root=$2
  shift 2
  local packages=("$@")
  local stamp="$root/.sqtt-chroot-ready" p have=1 t0=$SECONDS
  local base=$suite target="" novalid=0
  case $suite in
  experimental) base=sid target=experimental novalid=1 ;;
  sid | unstable) novalid=1 ;;
  esac
  chroot_lock "$root"
  if [ -f "$stamp" ] && ! grep -qx "suite=$suite" "$stamp"; then
    chroot_die "$root was made for $(grep -m1 '^suite=' "$stamp" || echo 'another suite'), not $suite: remove it or pick another root"
  fi
  for p in "${packages[@]}"; do
    grep -qx -- "$p" "$stamp" 2>/dev/null || have=0
  done
  if [ $have = 1 ]; then
    chroot_log "reusing $root ($suite)"
    return 0
  fi
  chroot_host_tools
  if [ ! -x "$root/usr/bin/apt-get" ] || [ ! -f "$root/.sqtt-debootstrap-done" ]; then
    local tmp="$root.partial" seed=${CHROOT_SEED:-}
    rm -rf "$tmp"
    if [ -n "$seed" ] && [ "$seed" != "$root" ] && grep -qx "suite=$base" "$seed/.sqtt-chroot-ready" 2>/dev/null; then
      # A ready chroot of the base suite (experimental's sid): a local copy is quicker than
      # debootstrap, and its packages (compilers, cmake, the crates in /root/.cargo) are not
      # downloaded again. Under the seed's lock, so that no apt run changes it meanwhile.
      chroot_log "copying $seed into $root (instead of debootstrap $base)"
      local t1=$SECONDS
      flock -w "$CHROOT_LOCK_TIMEOUT" "$seed.lock" cp -a --reflink=auto "$seed" "$tmp" ||
        chroot_die "copying the $base chroot $seed to $tmp failed"
      rm -f "$tmp/.sqtt-chroot-ready"
      chroot_log "copy of $seed: $((SECONDS - t1))s"
    else
      chroot_log "debootstrap $base into $root (minbase; ${CHROOT_NET_TIMEOUT}s limit)"
      chroot_net "debootstrap $base from $CHROOT_MIRROR" "$root.debootstrap.log" \
        debootstrap --variant=minbase --keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
        "$base" "$tmp" "$CHROOT_MIRROR"
    fi
    rm -rf "$root"
    mv "$tmp" "$root"
    rm -f "$root.debootstrap.log"
    touch "$root/.sqtt-debootstrap-done"
  fi
  printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' \
    >"$root/etc/apt/apt.conf.d/90sqtt-norecommends"
  if [ $novalid = 1 ]; then
    echo 'Acquire::Check-Valid-Until "false";' >"$root/etc/apt/apt.conf.d/90sqtt-valid-until"
  fi
  if [ -n "$target" ]; then
    echo "deb $CHROOT_MIRROR $target main" >"$root/etc/apt/sources.list.d/sqtt-$target.list"
  fi
  chroot_log "apt-get install in the $suite chroot: ${packages[*]}"
  local tflag=""
  [ -n "$target" ] && tflag="-t $target"
  local q
  q=$(printf '%q ' "${packages[@]}")
  local rc=0
  chroot_run "$root" "
    export DEBIAN_FRONTEND=noninteractive
    dpkg --configure -a >/dev/null 2>&1 || true
    t0=\$SECONDS
    timeout $CHROOT_NET_TIMEOUT apt-get update -qq >/tmp/sqtt-apt.log 2>&1 || {
      rc=\$?; tail -20 /tmp/sqtt-apt.log >&2; exit \$((rc == 124 ? 124 : 10)); }
    echo \"[chroot] apt-get update in the $suite chroot: \$((SECONDS - t0))s\" >&2
    t0=\$SECONDS
    timeout $CHROOT_NET_TIMEOUT apt-get install -y -qq $tflag $q >/tmp/sqtt-apt.log 2>&1 || {
      rc=\$?; tail -20 /tmp/sqtt-apt.log >&2; exit \$((rc == 124 ? 125 : 11)); }
    echo \"[chroot] apt-get install in the $suite chroot: \$((SECONDS - t0))s\" >&2
    apt-get clean
  " || rc=$?
  case $rc in
  0) ;;
  124) chroot_die "apt-get update in the $suite chroot timed out after ${CHROOT_NET_TIMEOUT}s (SQTT_NET_TIMEOUT)" ;;
  125) chroot_die "apt-get install in the $suite chroot timed out after ${CHROOT_NET_TIMEOUT}s (SQTT_NET_TIMEOUT)" ;;
  10) chroot_die "apt-get update in the $suite chroot failed (log: $root/tmp/sqtt-apt.log)" ;;
  11) chroot_die "apt-get install ${packages[*]} in the $suite chroot failed (log: $root/tmp/sqtt-apt.log)" ;;
  *) chroot_die "setting up the $suite chroot failed (exit code $rc)" ;;
  esac
  { echo "suite=$suite"; grep -v '^suite=' "$stamp" 2>/dev/null || true; printf '%s\n' "${packages[@]}"; } |
    awk '!seen[$0]++' >"$stamp.new"
  mv "$stamp.new" "$stamp"
  chroot_log "$suite chroot ready in $((SECONDS - t0))s ($root)"
}

# Direct use: ci/chroot.sh ensure SUITE ROOT PACKAGES... | ci/chroot.sh run ROOT CMD...
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  case "${1:-}" in
  ensure) shift; [ $# -ge 2 ] || { echo "usage: $0 ensure SUITE ROOT PACKAGES..." >&2; exit 2; }
    chroot_ensure "$@" ;;
  run) shift; [ $# -ge 2 ] || { echo "usage: $0 run ROOT CMD..." >&2; exit 2; }
    root=$1; shift; chroot_lock "$root"; chroot_run "$root" "$*" ;;
  *) echo "usage: $0 ensure SUITE ROOT PACKAGES... | run ROOT CMD..." >&2; exit 2 ;;
  esac
fi
