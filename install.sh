#!/usr/bin/env bash
# Builds sqtt-hipcc, sqtt and the pass plugin for the LLVM of the hipcc it finds (ROCm's when
# ROCM_PATH, HIP_PATH or /opt/rocm has one, Debian's otherwise), or for the majors given.
#
#   ./install.sh                      plugin for the hipcc found; all under target/release/
#   ./install.sh --llvm 15,22         plugins for LLVM 15 and 22 side by side
#   ./install.sh --prefix ~/.local    also install: PREFIX/bin/{sqtt-hipcc,sqtt},
#                                     PREFIX/lib/sqtt-hipcc/llvm-<N>/libsqtt_plugin.so,
#                                     PREFIX/lib/cmake/SqttHipcc/ (find_package(SqttHipcc)),
#                                     PREFIX/share/{bash-completion,zsh,fish,man/man1,doc/sqtt-hipcc},
#                                     PREFIX/include/sqtt-hipcc/{markers.hpp,sqtt_m0_record.h,amd_sqtt_marker/}
#
# Plugins go to target/release/lib/sqtt-hipcc/llvm-<N>/ (where target/release/sqtt-hipcc looks)
# and, with --prefix, to PREFIX/lib/sqtt-hipcc/llvm-<N>/. sqtt-hipcc picks the one matching its
# hipcc's clang. Each build needs that LLVM's headers and llvm-config: ROCm's llvm directory, or
# Debian's llvm-<N>-dev. Exit status 2 on bad arguments, nothing built.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

usage() {
  sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

prefix="" majors=""
while [ $# -gt 0 ]; do
  case $1 in
  --prefix) [ $# -ge 2 ] || usage; prefix=$2; shift 2 ;;
  --prefix=*) prefix=${1#--prefix=}; shift ;;
  --llvm) [ $# -ge 2 ] || usage; majors=$2; shift 2 ;;
  --llvm=*) majors=${1#--llvm=}; shift ;;
  -h | --help) usage ;;
  *) echo "install.sh: unknown argument '$1' (accepted: --prefix DIR, --llvm N[,N...])" >&2; exit 2 ;;
  esac
done
for n in ${majors//,/ }; do
  case $n in
  1[5-9] | 2[0-3]) ;;
  *) echo "install.sh: --llvm '$n' is not a supported LLVM major (15 to 23)" >&2; exit 2 ;;
  esac
done

cargo build --release --locked -p sqtt-hipcc -p sqtt-tools
out=target/release

# What the wrapper finds: hipcc, its clang's major, that LLVM's directory (one home for the
# discovery rules: driver/src/locate.rs).
toolchain=""
if toolchain=$("$out/sqtt-hipcc" --sqtt-toolchain 2>/dev/null); then :; else toolchain=""; fi
found_major=$(sed -n 's/^llvm_major=//p' <<<"$toolchain")
found_dir=$(sed -n 's/^llvm_dir=//p' <<<"$toolchain")
if [ -z "$majors" ]; then
  [ -n "$found_major" ] || {
    echo "install.sh: no hipcc found (ROCM_PATH, HIP_PATH, PATH, /opt/rocm): give --llvm N" >&2
    exit 2
  }
  majors=$found_major
  echo "install.sh: $(sed -n 's/^hipcc=//p' <<<"$toolchain") uses clang $found_major" >&2
fi

llvm_config_for() { # major -> path of llvm-config, or nothing
  local n=$1 c
  for c in ${found_dir:+"$found_dir/bin/llvm-config"} "llvm-config-$n" "/usr/lib/llvm-$n/bin/llvm-config" llvm-config; do
    if command -v "$c" >/dev/null 2>&1 && [ "$("$c" --version 2>/dev/null | cut -d. -f1)" = "$n" ]; then
      command -v "$c"
      return
    fi
  done
}

for n in ${majors//,/ }; do
  config=$(llvm_config_for "$n")
  [ -n "$config" ] || {
    echo "install.sh: no llvm-config for LLVM $n: install llvm-$n-dev (Debian) or point ROCM_PATH at a ROCm with LLVM $n" >&2
    exit 1
  }
  minor=0
  [ "$n" -ge 19 ] && minor=1
  feature="llvm$n-$minor"
  echo "install.sh: building the plugin for LLVM $n ($feature, $config)" >&2
  env "LLVM_SYS_${n}${minor}_PREFIX=$("$config" --prefix)" \
    cargo build --release --locked -p sqtt-plugin --no-default-features --features "$feature" \
    --target-dir "target/llvm$n"
  mkdir -p "$out/lib/sqtt-hipcc/llvm-$n"
  cp "target/llvm$n/release/libsqtt_plugin.so" "$out/lib/sqtt-hipcc/llvm-$n/"
  if [ -n "$prefix" ]; then
    mkdir -p "$prefix/lib/sqtt-hipcc/llvm-$n"
    cp "target/llvm$n/release/libsqtt_plugin.so" "$prefix/lib/sqtt-hipcc/llvm-$n/"
  fi
done
if [ -n "$prefix" ]; then
  mkdir -p "$prefix/bin"
  cp "$out/sqtt-hipcc" "$out/sqtt" "$prefix/bin/"
  mkdir -p "$prefix/lib/cmake/SqttHipcc"
  cp cmake/SqttHipccConfig.cmake "$prefix/lib/cmake/SqttHipcc/"
  # Completions and man pages (clap_complete / clap_mangen, from the binary), and the docs
  # --sqtt-help points to.
  mkdir -p "$prefix/share/bash-completion/completions" "$prefix/share/zsh/site-functions" \
    "$prefix/share/fish/vendor_completions.d" "$prefix/share/man/man1" "$prefix/share/doc/sqtt-hipcc"
  "$out/sqtt-hipcc" --sqtt-completions=bash >"$prefix/share/bash-completion/completions/sqtt-hipcc"
  "$out/sqtt-hipcc" --sqtt-completions=zsh >"$prefix/share/zsh/site-functions/_sqtt-hipcc"
  "$out/sqtt-hipcc" --sqtt-completions=fish >"$prefix/share/fish/vendor_completions.d/sqtt-hipcc.fish"
  "$out/sqtt-hipcc" --sqtt-man >"$prefix/share/man/man1/sqtt-hipcc.1"
  "$out/sqtt-hipcc" --sqtt-man=check >"$prefix/share/man/man1/sqtt-hipcc-check.1"
  cp README.md docs/*.md sqtt.toml.example "$prefix/share/doc/sqtt-hipcc/"
  mkdir -p "$prefix/include/sqtt-hipcc/amd_sqtt_marker"
  cp markers/include/markers.hpp markers/include/sqtt_m0_record.h "$prefix/include/sqtt-hipcc/"
  cp markers/include/amd_sqtt_marker/sqtt_marker.h "$prefix/include/sqtt-hipcc/amd_sqtt_marker/"
  echo "install.sh: installed into $prefix (bin/, lib/sqtt-hipcc/, lib/cmake/SqttHipcc/, share/)" >&2
fi
"$out/sqtt-hipcc" --sqtt-toolchain 2>/dev/null | sed 's/^/install.sh: /' >&2 || true
