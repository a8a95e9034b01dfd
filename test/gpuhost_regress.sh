#!/bin/bash
# test/gpuhost_regress.sh - the pg_regress suites with gpuhash.device = gpu,
# in two groups at once, for a GPU host whose calls are short: each group is
# PGXS's make installcheck in its own copy of the tree and its own temporary
# instance (pg_regress moves to the next free port).  setup and join_setup
# run first in each group, as the later suites need.  Run after the
# extension is built and installed (test/gpuhost.sh install); prints each
# group's pg_regress summary and exits non-zero if one failed.
#
#   GROUP_A="aggregate ..." GROUP_B="join_types ..." test/gpuhost_regress.sh
#   (GPUHASH_TEST_DEVICE=cpu: on the CPU twin instead)
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$GPUHASH_ROOT"
out=${OUT:-/tmp/gpuhost-out}
# GPUHASH_TEST_DEVICE=cpu: the same on the CPU twin (to try the script anywhere)
device=${GPUHASH_TEST_DEVICE:-gpu}
expect=on
[ "$device" = cpu ] && expect=off
run_group() {
  local name=$1 suites=$2 work rc
  work=$(gh_tmpdir)
  gh_installcheck "$work" "$device" "$expect" "" "$out/regress-$name.log" \
    REGRESS="setup join_setup $suites" ISOLATION=
  rc=$?
  cp "$work/tree/regression.diffs" "$out/regress-$name.diffs" 2>/dev/null
  rm -rf "$work"
  return $rc
}
run_group a "${GROUP_A:?}" & pa=$!
run_group b "${GROUP_B:?}" & pb=$!
rc=0
wait $pa || rc=1
wait $pb || rc=1
for g in a b; do
  echo "== group $g"
  grep -E '^(ok|not ok) |\.\.\. (ok|FAILED)|tests (passed|failed)' "$out/regress-$g.log"
done
exit $rc
