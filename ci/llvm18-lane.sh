#!/usr/bin/env bash
# LLVM 18 lane: LLVM 15/16 know neither gfx942 nor gfx12, so this lane builds the plugin for
# LLVM 18 inside a cached Debian trixie chroot (nothing from trixie goes onto the bookworm host)
# and runs the lane's suites there on gfx942 / gfx1200 / gfx1201 (ci/llvm18-lane-inner.sh).
#
# Usage:
#   ci/llvm18-lane.sh                 create/reuse the chroot, build, run the suites
#   ci/llvm18-lane.sh -- CMD ARGS...  create/reuse the chroot, build, then run CMD inside it in
#                                     /src (the worktree) with SQTT_PLUGIN, SQTT_LLVM_MAJOR=18,
#                                     SQTT_LLVM_BIN set (e.g. `-- cargo test -p sqtt-e2e`)
#
# Settings: SQTT_LANE18_HIPCC=0 leaves hipcc 5.7.1 out (and its download; hip_fixtures needs it),
# SQTT_TRIXIE_ROOT (chroot, default /var/cache/sqtt-trixie), SQTT_DEBIAN_MIRROR,
# SQTT_NET_TIMEOUT (seconds per network step, default 900), SQTT_BUILD_TIMEOUT (default 1500),
# CARGO_BUILD_JOBS (default 2). Needs root (debootstrap, chroot, mount namespaces).
set -euo pipefail

LANE_NAME=llvm18-lane
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=ci/lane-lib.sh
source "$REPO/ci/lane-lib.sh"
# What the lane needs in the chroot; hipcc 5.7.1 (trixie) driving clang-18 unless
# SQTT_LANE18_HIPCC=0: ~110 MB more to download (it pulls clang-17 and the ROCm 6.0 device libs;
# libclang-rt-18-dev lets hipcc link programs).
HIPCC_CASES=${SQTT_LANE18_HIPCC:-1}
PACKAGES=(clang-18 llvm-18 llvm-18-dev lld-18 g++ libc6-dev ca-certificates)
[ "$HIPCC_CASES" = 0 ] || PACKAGES+=(hipcc clang-tools-18 libclang-rt-18-dev)
TRIXIE_ROOT=${SQTT_TRIXIE_ROOT:-/var/cache/sqtt-trixie}
# shellcheck source=ci/chroot.sh
source "$REPO/ci/chroot.sh"

lane_in_chroot trixie "$TRIXIE_ROOT" llvm18-lane-inner.sh "SQTT_LANE18_HIPCC=$HIPCC_CASES" "$@"
