#!/usr/bin/env bash
# Debian experimental lane: ci/sid-lane.sh with SQTT_LANE_SUITE=experimental (hipcc 7.2.4 on
# clang 22, gfx1250; a chroot of its own, /var/cache/sqtt-experimental). Same arguments.
set -euo pipefail
SQTT_LANE_SUITE=experimental exec bash "$(dirname "${BASH_SOURCE[0]}")/sid-lane.sh" "$@"
