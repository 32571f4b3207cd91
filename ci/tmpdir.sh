# Sourced by ci/test.sh and ci/lanes.sh: the run's own TMPDIR.
# The compilers the tests run leave empty directories in TMPDIR (clang of LLVM 15: two a HIP
# compile, never removed): the run gets a directory of its own under /tmp, removed at the end,
# and world-writable with the sticky bit as /tmp is (some tests run the wrapper as another user).
# A run started by another that made one (.ci/run calls both scripts) keeps that one.
if [ -z "${SQTT_CI_TMPDIR:-}" ]; then
  SQTT_CI_TMPDIR=$(mktemp -d /tmp/sqtt-ci.XXXXXX)
  chmod 1777 "$SQTT_CI_TMPDIR"
  trap 'rm -rf "$SQTT_CI_TMPDIR"' EXIT
  export SQTT_CI_TMPDIR TMPDIR=$SQTT_CI_TMPDIR
fi
