# shellcheck shell=bash
# Sourced by ci/llvm18-lane.sh: a cached Debian trixie chroot with LLVM 18, and a way to run
# commands in it with the worktree and the host's Rust toolchain mounted.
#
# Nothing from trixie is installed on the bookworm host: the host only gets `debootstrap`
# (a bookworm package). Mounts are made inside a private mount namespace (unshare -m), so they
# vanish when the command ends, even if it is killed.
#
# Settings (environment):
#   SQTT_TRIXIE_ROOT    chroot directory (default /var/cache/sqtt-trixie)
#   SQTT_TRIXIE_MIRROR  Debian mirror (default http://deb.debian.org/debian)
#   SQTT_NET_TIMEOUT    seconds allowed for each network step (default 900)

TRIXIE_ROOT=${SQTT_TRIXIE_ROOT:-/var/cache/sqtt-trixie}
TRIXIE_MIRROR=${SQTT_TRIXIE_MIRROR:-http://deb.debian.org/debian}
NET_TIMEOUT=${SQTT_NET_TIMEOUT:-900}
# What the lane needs inside the chroot (plus TRIXIE_EXTRA_PACKAGES). A package missing from the
# stamp re-runs apt-get in the chroot.
TRIXIE_PACKAGES="clang-18 llvm-18 llvm-18-dev lld-18 g++ libc6-dev ca-certificates ${TRIXIE_EXTRA_PACKAGES:-}"
TRIXIE_STAMP="$TRIXIE_ROOT/.sqtt-lane-ready"

trixie_log() { echo "[trixie] $*" >&2; }
trixie_die() {
  echo "[trixie] FAIL: $*" >&2
  echo "== ${LANE_NAME:-trixie}: FAIL (setup: $*)" >&2
  exit 1
}

# Host prerequisites (bookworm packages only).
trixie_host_tools() {
  local missing=()
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  command -v unshare >/dev/null || missing+=(util-linux)
  [ -e /usr/share/keyrings/debian-archive-keyring.gpg ] || missing+=(debian-archive-keyring)
  if [ ${#missing[@]} -gt 0 ]; then
    trixie_log "installing on the host: ${missing[*]}"
    timeout "$NET_TIMEOUT" apt-get update -qq ||
      trixie_die "apt-get update on the host failed or timed out (${NET_TIMEOUT}s)"
    DEBIAN_FRONTEND=noninteractive timeout "$NET_TIMEOUT" \
      apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
      trixie_die "apt-get install ${missing[*]} on the host failed or timed out"
  fi
}

# Runs a shell command inside the chroot. The worktree is at /src, the host's Rust toolchain
# (the sysroot of the host's rustc: bin/cargo, bin/rustc, lib/) read-only at /opt/rust. Host
# binaries run there: trixie's glibc is newer than bookworm's. The mounts live in a private
# namespace.
#   trixie_run REPO 'command'
trixie_run() {
  local repo=$1
  shift
  local sysroot
  sysroot=$(cd "$repo" && rustc --print sysroot 2>/dev/null) || sysroot=""
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
    # The host'"'"'s CA bundle (it may trust a local TLS proxy); used by cargo inside.
    cp -L "${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}" "$root/etc/ssl/sqtt-host-ca.crt" 2>/dev/null || true
    pass=()
    for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
      [ -n "${!v:-}" ] && pass+=("$v=${!v}")
    done
    exec chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
      PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
      SSL_CERT_FILE=/etc/ssl/sqtt-host-ca.crt CARGO_HTTP_CAINFO=/etc/ssl/sqtt-host-ca.crt \
      "${pass[@]}" /bin/bash -euo pipefail -c "$*"
  ' trixie_run "$TRIXIE_ROOT" "$repo" "$sysroot" "$@"
}

# Creates (or completes) the chroot. Quick when the stamp lists every wanted package.
trixie_ensure() {
  local repo=$1
  local p have=1
  for p in $TRIXIE_PACKAGES; do
    grep -qx -- "$p" "$TRIXIE_STAMP" 2>/dev/null || have=0
  done
  if [ $have = 1 ]; then
    trixie_log "reusing $TRIXIE_ROOT"
    return 0
  fi
  trixie_host_tools
  if [ ! -x "$TRIXIE_ROOT/usr/bin/apt-get" ] || [ ! -f "$TRIXIE_ROOT/.sqtt-debootstrap-done" ]; then
    local tmp="$TRIXIE_ROOT.partial"
    rm -rf "$tmp"
    mkdir -p "$(dirname "$TRIXIE_ROOT")"
    trixie_log "debootstrap trixie into $TRIXIE_ROOT (minbase; ${NET_TIMEOUT}s limit)"
    if ! timeout "$NET_TIMEOUT" debootstrap --variant=minbase \
      --keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
      trixie "$tmp" "$TRIXIE_MIRROR" >"$tmp.log" 2>&1; then
      tail -20 "$tmp.log" >&2
      trixie_die "debootstrap of trixie from $TRIXIE_MIRROR failed or timed out (log: $tmp.log)"
    fi
    rm -f "$tmp/debootstrap/debootstrap.log" 2>/dev/null || true
    rm -rf "$TRIXIE_ROOT"
    mv "$tmp" "$TRIXIE_ROOT"
    rm -f "$tmp.log"
    touch "$TRIXIE_ROOT/.sqtt-debootstrap-done"
  fi
  trixie_log "apt-get install in the chroot: $TRIXIE_PACKAGES"
  printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' \
    >"$TRIXIE_ROOT/etc/apt/apt.conf.d/90sqtt-norecommends"
  trixie_run "$repo" "
    export DEBIAN_FRONTEND=noninteractive
    dpkg --configure -a >/dev/null 2>&1 || true
    timeout $NET_TIMEOUT apt-get update -qq || { echo 'apt-get update in the chroot failed or timed out' >&2; exit 1; }
    timeout $NET_TIMEOUT apt-get install -y -qq $TRIXIE_PACKAGES >/tmp/apt.log 2>&1 || { tail -20 /tmp/apt.log >&2; echo 'apt-get install in the chroot failed or timed out' >&2; exit 1; }
    apt-get clean
  " || trixie_die "could not install LLVM 18 in the chroot"
  { cat "$TRIXIE_STAMP" 2>/dev/null || true; printf '%s\n' $TRIXIE_PACKAGES; } | sort -u >"$TRIXIE_STAMP.new"
  mv "$TRIXIE_STAMP.new" "$TRIXIE_STAMP"
}
