#!/usr/bin/env bash
# Installs what sqtt-hipcc needs to build and test on Debian 12 (bookworm): Debian's hipcc on
# clang-15, the LLVM 15 development files the plugin builds against, cmake for the CMake example,
# clang-16 for the LLVM 16 lane, and protoc (protobuf-compiler), which the tools tests decode
# `sqtt perfetto` traces with. Idempotent: a second run installs nothing.
set -euo pipefail

packages=(hipcc llvm-15-dev clang-15 clang-tools-15 lld-15 cmake make clang-16 llvm-16-dev clang-tools-16 lld-16 librocprim-dev librocrand-dev bc ccache ninja-build protobuf-compiler)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "ci/setup.sh: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
command -v cargo >/dev/null || { echo "ci/setup.sh: cargo is not installed (rustup)" >&2; exit 1; }
