#!/bin/bash
# test/isolation/run.sh - the gpuhash isolation specs (test/isolation/specs)
# with pg_isolation_regress in a temporary preloaded instance, gpuhash.device
# from GPUHASH_TEST_DEVICE (default cpu).  Prints pg_regress's lines
# ("ok N - name" in PostgreSQL 15: "test name ... ok") and exits non-zero
# on a failure.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
device=${GPUHASH_TEST_DEVICE:-cpu}
case $device in cpu) expect_gpu=off ;; gpu) expect_gpu=on ;; *) exit 2 ;; esac
pgxs=$(dirname "$(pg_config --pgxs)")/..
iso=$pgxs/test/isolation/pg_isolation_regress
[ -x "$iso" ] || { echo "pg_isolation_regress not found at $iso (postgresql-server-dev-15)"; exit 1; }
work=$(gh_tmpdir)
trap 'rm -rf "$work"' EXIT
cp -r "$here/specs" "$here/expected" "$work/" && chmod -R a+rX "$work"
cat >"$work/iso.conf" <<CONF
shared_preload_libraries = 'gpuhash'
gpuhash.device = $device
gpuhash_test.gpu = $expect_gpu
max_parallel_workers_per_gather = 0
jit = off
CONF
tests=$(cd "$here/specs" && ls *.spec | sed 's/\.spec$//' | sort)
gh_as_pg "$iso" --inputdir="$work" --outputdir="$work" \
  --temp-instance="$work/tmp_check" --temp-config="$work/iso.conf" \
  --bindir="$(gh_pg_bindir)" $tests
rc=$?
mkdir -p "${GPUHASH_TEST_LOGDIR:-/tmp}"
[ -f "$work/regression.diffs" ] && cp "$work/regression.diffs" "${GPUHASH_TEST_LOGDIR:-/tmp}/isolation.diffs" && head -80 "$work/regression.diffs"
mkdir -p "${GPUHASH_TEST_LOGDIR:-/tmp}/isolation-results" && cp "$work"/results/* "${GPUHASH_TEST_LOGDIR:-/tmp}/isolation-results/" 2>/dev/null
exit $rc
