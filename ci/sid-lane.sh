#!/usr/bin/env bash
# Debian sid lane: the real hipcc 7.0.2 on clang 21 (ROCm 6.4 HIP headers, ROCm 7.0 device
# libraries for gfx942/gfx950/gfx1100/gfx1200/gfx1201) in a cached sid chroot; the plugin built
# there with --features llvm21-1 into target/sid-llvm21 (ci/sid-lane-inner.sh). With
# SQTT_LANE_SUITE=experimental (or ci/experimental-lane.sh): experimental on top of sid, hipcc
# 7.2.4 on clang 22, gfx1250, --features llvm22-1 into target/experimental-llvm22.
#
# Usage:
#   ci/sid-lane.sh                 create/reuse the chroot, build, toolchain checks, the suites
#   ci/sid-lane.sh -- CMD ARGS...  create/reuse the chroot, build, then run CMD inside it in /src
#                                  (the worktree) with SQTT_PLUGIN, SQTT_LLVM_MAJOR, SQTT_LLVM_BIN,
#                                  SQTT_TEST_LLVM_SUFFIX, HIP_CLANG_PATH, SQTT_DEVICE_LIB_PATH and
#                                  CARGO_TARGET_DIR set (e.g. `-- cargo test -p sqtt-e2e ...`)
#
# Settings: SQTT_LANE_SUITE (sid | experimental), SQTT_SID_ROOT (default /var/cache/sqtt-sid),
# SQTT_EXPERIMENTAL_ROOT (default /var/cache/sqtt-experimental), SQTT_DEBIAN_MIRROR,
# SQTT_NET_TIMEOUT (seconds per network step, default 900), SQTT_BUILD_TIMEOUT (default 1500),
# CARGO_BUILD_JOBS (default 2), SQTT_LANE_EXTRA_PACKAGES (space-separated packages of the suite
# installed into the chroot on top of the lane's own, once, and kept: for callers outside the CI
# lanes such as ci/bench-pass.sh's librocprim-dev). Needs root (debootstrap, chroot, mount
# namespaces).
set -euo pipefail

SUITE=${SQTT_LANE_SUITE:-sid}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
case $SUITE in
sid) LANE_NAME=sid-lane MAJOR=21 ROOT=${SQTT_SID_ROOT:-/var/cache/sqtt-sid} ;;
experimental) LANE_NAME=experimental-lane MAJOR=22
  ROOT=${SQTT_EXPERIMENTAL_ROOT:-/var/cache/sqtt-experimental}
  # A cold experimental chroot starts as a copy of the sid one when that exists (.ci/run runs
  # the sid lane first): quicker than a second debootstrap and download of the common packages.
  CHROOT_SEED=${SQTT_SID_ROOT:-/var/cache/sqtt-sid} ;;
*) echo "SQTT_LANE_SUITE must be sid or experimental, not $SUITE" >&2; exit 2 ;;
esac
# shellcheck source=ci/lane-lib.sh
source "$REPO/ci/lane-lib.sh"
# shellcheck source=ci/chroot.sh
source "$REPO/ci/chroot.sh"
# Package names of Debian's ROCm packaging (no hip-dev, no rocm-llvm): hipcc pulls clang-N and
# rocm-device-libs-N; libclang-rt-N-dev lets it link programs; clang-tools-N has
# clang-offload-bundler; cmake, ninja, make and ccache for the build-system suites (rebuilds.rs);
# librocprim-dev (headers) for the rocPRIM corpus of tests/tests/cost_report.rs.
PACKAGES=(hipcc libamdhip64-dev "clang-$MAJOR" "llvm-$MAJOR" "llvm-$MAJOR-dev" "lld-$MAJOR"
  "clang-tools-$MAJOR" "rocm-device-libs-$MAJOR" "libclang-rt-$MAJOR-dev" g++ cmake ninja-build
  make ccache ca-certificates librocprim-dev)
# shellcheck disable=SC2206 # a word list on purpose
PACKAGES+=(${SQTT_LANE_EXTRA_PACKAGES:-})

lane_in_chroot "$SUITE" "$ROOT" sid-lane-inner.sh "SQTT_LANE_SUITE=$SUITE" "$@"
