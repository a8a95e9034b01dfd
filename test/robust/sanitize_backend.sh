#!/bin/bash
# test/robust/sanitize_backend.sh [SUITE...] - pg_regress suites against a
# server run under compute-sanitizer memcheck (--target-processes all, so
# every backend forked by the postmaster is checked once it initialises
# CUDA), gpuhash preloaded, gpuhash.device = gpu.  Covers the kernels and
# CUDA calls of cuda/*.cu as the backends drive them (joins, aggregate,
# selftest), with device-side leak checking at each backend's exit.
#
# Coverage is checked, not assumed: while a session holds its CUDA context
# the script looks for the sanitizer's injection library in that backend's
# /proc/PID/maps.  On the H200 (CUDA 13.0, 2026-11-22) it found none: the
# sanitizer follows exec'd children, and backends are forks of the
# postmaster that initialise CUDA after the fork, so they ran unchecked
# (one ERROR SUMMARY, the postmaster's).  Test 1 fails in that case.  Default suites: setup devices join_setup join_types
# join_keys aggregate (a reduced run: memcheck slows kernels many times).
# Prints TAP; exit status 0 when the sanitizer reported no error.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
cd "$GPUHASH_ROOT"
cs=$(command -v compute-sanitizer 2>/dev/null || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$cs" ] || { echo "1..0 # SKIP compute-sanitizer not found"; exit 0; }
suites=${*:-setup devices join_setup join_types join_keys aggregate}
logdir=${GPUHASH_TEST_LOGDIR:-$(mktemp -d /tmp/gpuhash-cs.XXXXXX)}
mkdir -p "$logdir"
cl=$(gh_tmpdir); port=$(gh_free_port); bin=$(gh_pg_bindir)
stop_server() {
  gh_as_pg "$bin/pg_ctl" -D "$cl/data" -m fast -w -t 120 stop >/dev/null 2>&1
  local i; for i in $(seq 1 120); do [ -s "$cl/cs.pid" ] && kill -0 "$(cat "$cl/cs.pid")" 2>/dev/null || break; sleep 0.5; done
}
trap 'stop_server; cp "$cl"/cs.*.log "$cl/server.log" "$logdir/" 2>/dev/null; rm -rf "$cl"' EXIT
gh_cluster_init "$cl" "$port" "gpuhash.device = gpu
gpuhash_test.gpu = on
max_parallel_workers_per_gather = 0
autovacuum = off
max_connections = 20" "$bin" || exit 1
gh_as_pg bash -c "cd $cl && nohup $cs --tool memcheck --target-processes all --leak-check full --print-limit 100 \
  --log-file $cl/cs.%p.log $bin/postgres -D $cl/data >$cl/server.log 2>&1 & echo \$! >$cl/cs.pid"
for i in $(seq 1 120); do gh_as_pg "$bin/pg_isready" -h "$cl" -p "$port" -q && break; sleep 0.5; done
gh_as_pg "$bin/pg_isready" -h "$cl" -p "$port" -q || { tail -20 "$cl/server.log" "$cl"/cs.*.log; echo "1..1"; echo "not ok 1 - the server did not start under compute-sanitizer"; exit 1; }

# coverage probe: a backend that used the GPU has the sanitizer mapped in
probe=$(gh_tmpdir)/probe.out
gh_as_pg psql -X -At -h "$cl" -p "$port" -d postgres -c "CREATE EXTENSION IF NOT EXISTS gpuhash" \
  -c "SELECT 'selftest=' || gpuhash_device_selftest(16777216)" -c "SELECT 'pid=' || pg_backend_pid()" \
  -c "SELECT pg_sleep(4)" >"$probe" 2>&1 &
ppid_=$!
bpid=""; for i in $(seq 1 100); do bpid=$(sed -n 's/^pid=//p' "$probe"); [ -n "$bpid" ] && break; sleep 0.2; done
mapped=0
[ -n "$bpid" ] && mapped=$(grep -ciE 'sanitizer|TreeLauncher' /proc/"$bpid"/maps 2>/dev/null)
wait $ppid_
gh_as_pg psql -X -Atq -h "$cl" -p "$port" -d postgres -c "DROP EXTENSION gpuhash" >/dev/null 2>&1

pgxs=$(dirname "$(pg_config --pgxs)")/..
out=$(gh_tmpdir)
t0=$SECONDS
gh_as_pg "$pgxs/test/regress/pg_regress" --inputdir="$GPUHASH_ROOT" --outputdir="$out" \
  --bindir="$bin" --host="$cl" --port="$port" --user=postgres --dbname=cs_regression $suites >"$logdir/cs-regress.log" 2>&1
secs=$((SECONDS - t0))
cp "$out/regression.diffs" "$logdir/cs-regression.diffs" 2>/dev/null
stop_server
cat "$cl"/cs.*.log >"$cl/cs-all.txt" 2>/dev/null
grep -E '^(test| +[a-z_]+ +\.\.\.|ok|not ok)' "$logdir/cs-regress.log" | sed 's/^/# /'
nerr=$(grep -cE '^========= (Invalid|Program hit|Leaked|Malloc/Free|Uninitialized|Race|Barrier|Error|Fatal|Out-of-range|Misaligned|Cuda API error|Device heap)' "$cl/cs-all.txt")
summaries=$(grep -E 'ERROR SUMMARY|LEAK SUMMARY' "$cl/cs-all.txt" | sort | uniq -c | tr -s ' ' | tr '\n' ';')
echo "1..3"
[ "$(sed -n 's/^selftest=//p' "$probe")" = t ] && [ "${mapped:-0}" -gt 0 ]
if [ $? = 0 ]; then echo "ok 1 - a backend that used the GPU runs under the sanitizer ($mapped sanitizer mappings in /proc/$bpid/maps)"
else echo "not ok 1 - no sanitizer mapping found in backend $bpid ($(head -3 "$probe" | tr '\n' ' '))"; fi
if grep -qE 'tests passed' "$logdir/cs-regress.log"; then echo "ok 2 - pg_regress under compute-sanitizer ($secs s): $suites"
else echo "not ok 2 - pg_regress under compute-sanitizer ($secs s): $(grep -E 'failed' "$logdir/cs-regress.log" | tail -1)"; fi
if [ "$nerr" = 0 ] && [ -s "$cl/cs-all.txt" ]; then echo "ok 3 - compute-sanitizer memcheck: no error, no device leak ($summaries)"
else echo "not ok 3 - compute-sanitizer memcheck: $nerr reports ($summaries)"; grep -E '^========= ' "$cl/cs-all.txt" | head -20 | sed 's/^/# /'; fi
[ "$nerr" = 0 ]
