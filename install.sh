#!/usr/bin/env bash
# Builds sqtt-hipcc, sqtt and the pass plugin for the LLVM of the hipcc it finds (ROCm's when
# ROCM_PATH, HIP_PATH or /opt/rocm has one, Debian's otherwise), or for the majors given.
#
#   ./install.sh                      plugin for the hipcc found; all under target/release/
#   ./install.sh --llvm 15,22         plugins for LLVM 15 and 22 side by side
#   ./install.sh --prefix ~/.local    also install (below) into PREFIX
#   ./install.sh --prefix P --from D  install what D holds (a build's target/release: D/sqtt-hipcc,
#                                     D/sqtt, D/lib/sqtt-hipcc/llvm-<N>/), building nothing
#   ./install.sh --uninstall --prefix P   remove what installs into P put there (its manifest)
#
# Installed: PREFIX/bin/{sqtt-hipcc,sqtt}, PREFIX/lib/sqtt-hipcc/llvm-<N>/libsqtt_plugin.so,
# PREFIX/lib/cmake/SqttHipcc/ (find_package(SqttHipcc)), PREFIX/include/sqtt-hipcc/ (markers.hpp,
# sqtt_m0_record.h, amd_sqtt_marker/), man pages and bash/zsh/fish completions of both commands,
# the docs, and PREFIX/share/sqtt-hipcc/install-manifest.txt listing every file (what --uninstall
# removes).
# DESTDIR=D stages the files under D/PREFIX (for packaging); the manifest names them as PREFIX/...
#
# Plugins go to target/release/lib/sqtt-hipcc/llvm-<N>/ (where target/release/sqtt-hipcc looks)
# and, with --prefix, to PREFIX/lib/sqtt-hipcc/llvm-<N>/. sqtt-hipcc picks the one matching its
# hipcc's clang. Each build needs that LLVM's headers and llvm-config: ROCm's llvm directory, or
# Debian's llvm-<N>-dev. Exit status 2 on bad arguments, nothing built or installed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

usage() {
  sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
die() {
  echo "install.sh: $*" >&2
  exit 2
}

prefix="" majors="" from="" uninstall=false
while [ $# -gt 0 ]; do
  case $1 in
  --prefix) [ $# -ge 2 ] || usage; prefix=$2; shift 2 ;;
  --prefix=*) prefix=${1#--prefix=}; shift ;;
  --llvm) [ $# -ge 2 ] || usage; majors=$2; shift 2 ;;
  --llvm=*) majors=${1#--llvm=}; shift ;;
  --from) [ $# -ge 2 ] || usage; from=$2; shift 2 ;;
  --from=*) from=${1#--from=}; shift ;;
  --uninstall) uninstall=true; shift ;;
  -h | --help) usage ;;
  *) die "unknown argument '$1' (accepted: --prefix DIR, --llvm N[,N...], --from DIR, --uninstall)" ;;
  esac
done
for n in ${majors//,/ }; do
  case $n in
  1[5-9] | 2[0-3]) ;;
  *) die "--llvm '$n' is not a supported LLVM major (15 to 23)" ;;
  esac
done
if [ -n "$prefix" ]; then
  [[ $prefix == /* ]] || prefix=$PWD/$prefix
  prefix=${prefix%/}
fi
DESTDIR=${DESTDIR:-}
MANIFEST_REL=share/sqtt-hipcc/install-manifest.txt

# --- uninstall -----------------------------------------------------------------------------------
if $uninstall; then
  [ -n "$prefix" ] || die "--uninstall needs --prefix DIR"
  [ -z "$from$majors" ] || die "--uninstall takes only --prefix (and DESTDIR)"
  manifest=$DESTDIR$prefix/$MANIFEST_REL
  [ -f "$manifest" ] || die "no $manifest: nothing was installed into $prefix by install.sh"
  removed=0
  while IFS= read -r f; do
    # Only what lies below the prefix: a manifest edited to name other files removes nothing else.
    case $f in "$prefix"/*) ;; *) echo "install.sh: skipping $f (not below $prefix)" >&2; continue ;; esac
    case $f in */../* | */..) echo "install.sh: skipping $f (..)" >&2; continue ;; esac
    if [ -f "$DESTDIR$f" ] || [ -L "$DESTDIR$f" ]; then
      rm -f "$DESTDIR$f"
      removed=$((removed + 1))
    fi
    # The directories install.sh made, once empty (never PREFIX itself).
    d=$(dirname "$f")
    while [ "$d" != "$prefix" ] && [ "${d#"$prefix"/}" != "$d" ]; do
      rmdir "$DESTDIR$d" 2>/dev/null || break
      d=$(dirname "$d")
    done
  done <"$manifest"
  rm -f "$manifest"
  rmdir "$DESTDIR$prefix/share/sqtt-hipcc" 2>/dev/null || true
  echo "install.sh: removed $removed file(s) from $DESTDIR$prefix" >&2
  exit 0
fi

# --- build (or take a build) ---------------------------------------------------------------------
if [ -n "$from" ]; then
  [ -n "$prefix" ] || die "--from DIR installs: give --prefix too"
  [ -x "$from/sqtt-hipcc" ] || die "--from $from: no executable $from/sqtt-hipcc"
  out=$from
  if [ -z "$majors" ]; then
    # Every plugin the build holds.
    for p in "$from"/lib/sqtt-hipcc/llvm-*/libsqtt_plugin.so; do
      [ -f "$p" ] || continue
      d=$(basename "$(dirname "$p")")
      majors="$majors ${d#llvm-}"
    done
  fi
  [ -n "${majors// /}" ] || die "--from $from: no plugin in $from/lib/sqtt-hipcc/llvm-<N>/"
  for n in ${majors//,/ }; do
    [ -f "$from/lib/sqtt-hipcc/llvm-$n/libsqtt_plugin.so" ] ||
      die "--from $from: no plugin for LLVM $n ($from/lib/sqtt-hipcc/llvm-$n/libsqtt_plugin.so)"
  done
else
  cargo build --release --locked -p sqtt-hipcc -p sqtt-tools
  out=target/release

  # What the wrapper finds: hipcc, its clang's major, that LLVM's directory (one home for the
  # discovery rules: driver/src/locate.rs).
  toolchain=""
  if toolchain=$("$out/sqtt-hipcc" --sqtt-toolchain 2>/dev/null); then :; else toolchain=""; fi
  found_major=$(sed -n 's/^llvm_major=//p' <<<"$toolchain")
  found_dir=$(sed -n 's/^llvm_dir=//p' <<<"$toolchain")
  if [ -z "$majors" ]; then
    [ -n "$found_major" ] || die "no hipcc found (ROCM_PATH, HIP_PATH, PATH, /opt/rocm): give --llvm N"
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
  done
fi

# --- install -------------------------------------------------------------------------------------
if [ -n "$prefix" ]; then
  root=$DESTDIR$prefix
  manifest=$root/$MANIFEST_REL
  installed=()
  # put SRC REL MODE: SRC as PREFIX/REL, recorded in the manifest.
  put() {
    install -D -m "$3" "$1" "$root/$2"
    installed+=("$prefix/$2")
  }
  gen=$(mktemp -d)
  trap 'rm -rf "$gen"' EXIT
  # gen REL CMD...: CMD's stdout installed as PREFIX/REL (a failed CMD fails the install).
  gen() {
    local rel=$1
    shift
    "$@" >"$gen/file"
    put "$gen/file" "$rel" 644
  }

  # (A --from build without sqtt, such as a CI lane's, installs sqtt-hipcc alone.)
  tools=false
  [ -x "$out/sqtt" ] && tools=true
  put "$out/sqtt-hipcc" bin/sqtt-hipcc 755
  if $tools; then put "$out/sqtt" bin/sqtt 755; fi
  for n in ${majors//,/ }; do
    put "$out/lib/sqtt-hipcc/llvm-$n/libsqtt_plugin.so" "lib/sqtt-hipcc/llvm-$n/libsqtt_plugin.so" 755
  done
  put cmake/SqttHipccConfig.cmake lib/cmake/SqttHipcc/SqttHipccConfig.cmake 644
  version=$("$out/sqtt-hipcc" --sqtt-version)
  sed "s/@SQTT_VERSION@/$version/" cmake/SqttHipccConfigVersion.cmake.in >"$gen/version.cmake"
  put "$gen/version.cmake" lib/cmake/SqttHipcc/SqttHipccConfigVersion.cmake 644
  put markers/include/markers.hpp include/sqtt-hipcc/markers.hpp 644
  put markers/include/sqtt_m0_record.h include/sqtt-hipcc/sqtt_m0_record.h 644
  put markers/include/amd_sqtt_marker/sqtt_marker.h include/sqtt-hipcc/amd_sqtt_marker/sqtt_marker.h 644

  # Man pages and completions, from the binaries being installed (clap_mangen, clap_complete).
  gen share/man/man1/sqtt-hipcc.1 "$out/sqtt-hipcc" --sqtt-man
  gen share/man/man1/sqtt-hipcc-check.1 "$out/sqtt-hipcc" --sqtt-man=check
  if $tools; then
    gen share/man/man1/sqtt.1 "$out/sqtt" man
    for sub in $("$out/sqtt" --help | sed -n '/^Commands:/,/^$/s/^  \([a-z-]*\) .*/\1/p'); do
      case $sub in help | completions | man) continue ;; esac
      gen "share/man/man1/sqtt-$sub.1" "$out/sqtt" man "$sub"
    done
  fi
  for b in sqtt-hipcc sqtt; do
    [ "$b" = sqtt ] && ! $tools && continue
    c() { if [ "$b" = sqtt-hipcc ]; then "$out/$b" "--sqtt-completions=$1"; else "$out/$b" completions "$1"; fi; }
    gen "share/bash-completion/completions/$b" c bash
    gen "share/zsh/site-functions/_$b" c zsh
    gen "share/fish/vendor_completions.d/$b.fish" c fish
  done
  # The docs --sqtt-help and the man pages point to.
  for f in README.md sqtt.toml.example docs/*.md; do
    put "$f" "share/doc/sqtt-hipcc/$(basename "$f")" 644
  done

  # The manifest: this install's files, plus those of earlier installs still there (plugins of
  # other LLVM majors), each once.
  mkdir -p "$(dirname "$manifest")"
  {
    printf '%s\n' "${installed[@]}"
    if [ -f "$manifest" ]; then
      while IFS= read -r f; do
        [ -e "$DESTDIR$f" ] && printf '%s\n' "$f"
      done <"$manifest"
    fi
  } | sort -u >"$gen/manifest"
  cp "$gen/manifest" "$manifest"
  echo "install.sh: installed ${#installed[@]} files into $root (manifest: $prefix/$MANIFEST_REL)" >&2
fi
"$out/sqtt-hipcc" --sqtt-toolchain 2>/dev/null | sed 's/^/install.sh: /' >&2 || true
