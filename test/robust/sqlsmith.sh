#!/bin/bash
# test/robust/sqlsmith.sh SECONDS [LOGDIR] - random SQL against gpuhash.
#
# A throwaway cluster (gpuhash preloaded, gpuhash.device from
# GPUHASH_TEST_DEVICE, default cpu, gpuhash.force_join and gpuhash.force_agg
# on: GpuHashJoin and GpuHashAgg wherever they are legal), a database
# loaded with every regression suite's tables (sql/*.sql run in
# test/schedule's order) plus test/robust/smith_tables.sql, then sqlsmith
# for SECONDS (restarted with a new seed whenever it exits early).  Afterwards:
#   - the server log must hold no PANIC, TRAP (assertion), "terminated by
#     signal" and the postmaster must not have restarted;
#   - every statement that failed with SQLSTATE XX000 (the first 100) is
#     run again: if PostgreSQL alone (gpuhash.enabled = off, up to three
#     tries) raises XX000 too, or the forced plan has no GpuHashJoin and the
#     query calls no gpuhash function, it is not gpuhash's; if it raises
#     XX000 again with gpuhash it counts as a gpuhash failure.
# GPUHASH_SMITH_ROLE=NAME runs sqlsmith as NAME, a plain role (no
# superuser, no CREATEROLE) that may read the tables; GPUHASH_SMITH_CONF
# adds postgresql.conf lines (gpuhash.gpu_service = on, say).
# Prints TAP (4 tests) and a summary line
#   sqlsmith: N queries, E errors, X XX000 (G from gpuhash), C crashes
# Exit status 0 when every test passed.
set -u
secs=${1:-60}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
cd "$GPUHASH_ROOT"
device=${GPUHASH_TEST_DEVICE:-cpu}
case $device in cpu) expect_gpu=off ;; gpu) expect_gpu=on ;; *) exit 2 ;; esac
logdir=${2:-$(mktemp -d /tmp/gpuhash-smith.XXXXXX)}
mkdir -p "$logdir"
command -v sqlsmith >/dev/null 2>&1 || {
  echo "1..1"; echo "ok 1 - sqlsmith # SKIP sqlsmith not installed (Debian: apt-get install sqlsmith)"; exit 0; }

cl=$(gh_tmpdir)
port=$(gh_free_port)
trap 'gh_cluster_stop "$cl"; cp "$cl/server.log" "$logdir/smith-server.log" 2>/dev/null; rm -rf "$cl"' EXIT
gh_cluster_start "$cl" "$port" "gpuhash.device = $device
gpuhash_test.gpu = $expect_gpu
gpuhash.force_join = on
gpuhash.force_agg = on
log_line_prefix = '%m [%p] %e '
log_min_messages = warning
max_connections = 20
${GPUHASH_SMITH_CONF:-}" || { echo "1..1"; echo "not ok 1 - cluster start"; exit 1; }
smith_user=${GPUHASH_SMITH_ROLE:-postgres}
psqlq() { gh_as_pg psql -X -q -v ON_ERROR_STOP=0 "$@"; }
gh_as_pg createdb smith
# the regression suites' tables and types, in test/schedule's order (their
# errors, which some suites expect, do not matter here)
tests=$(gh_regress_suites)
cat >"$cl/load.sql" <<'SQL'
SET client_min_messages = error;
SQL
for t in $tests; do
  [ -f "sql/$t.sql" ] || { echo "1..1"; echo "not ok 1 - the suite sql/$t.sql named by test/schedule exists"; exit 1; }
  cat "sql/$t.sql" >>"$cl/load.sql"; echo >>"$cl/load.sql"
done
cat "$here/smith_tables.sql" >>"$cl/load.sql"
chmod a+r "$cl/load.sql"
psqlq -d smith -f "$cl/load.sql" >"$logdir/smith-load.log" 2>&1
# the suites leave the settings they change at the database level alone;
# make sure the forced mode is what sqlsmith sees
psqlq -d smith -c "ALTER DATABASE smith SET gpuhash.force_join = on" -c "ALTER DATABASE smith SET gpuhash.force_agg = on" -c "ALTER DATABASE smith SET gpuhash.enabled = on" -c "ANALYZE" >>"$logdir/smith-load.log" 2>&1
if [ "$smith_user" != postgres ]; then
  psqlq -d smith -c "CREATE ROLE $smith_user LOGIN NOSUPERUSER NOCREATEROLE NOCREATEDB" \
    -c "GRANT SELECT ON ALL TABLES IN SCHEMA public TO $smith_user" \
    -c "GRANT USAGE ON SCHEMA public TO $smith_user" >>"$logdir/smith-load.log" 2>&1
  [ "$(gh_as_pg psql -X -Atq -d smith -U "$smith_user" -c 'SELECT rolsuper FROM pg_roles WHERE rolname = current_user')" = f ] ||
    { echo "1..1"; echo "not ok 1 - sqlsmith's role $smith_user is a plain role"; exit 1; }
fi
ntab=$(gh_as_pg psql -X -Atq -d smith -c "SELECT count(*) FROM pg_tables WHERE schemaname NOT IN ('pg_catalog','information_schema')")
start_time=$(gh_as_pg psql -X -Atq -d smith -c "SELECT pg_postmaster_start_time()")
# sqlsmith on one core (cpu 1 when there are two), the server's new
# backends too
cpus=$(nproc); core=$((cpus > 1 ? 1 : 0))
pm=$(head -1 "$cl/data/postmaster.pid")
taskset -a -p -c $core "$pm" >/dev/null 2>&1 || true
end=$((SECONDS + secs)); runs=0
: >"$logdir/smith.log"
while [ $SECONDS -lt $((end - 2)) ] && [ $runs -lt 200 ]; do
  runs=$((runs + 1))
  seed=$((RANDOM * 32768 + RANDOM))
  echo "== run $runs seed $seed" >>"$logdir/smith.log"
  # sqlsmith sets statement_timeout = 1s itself
  gh_as_pg timeout -s INT $((end - SECONDS)) taskset -c $core sqlsmith --verbose --seed=$seed \
    --target="host=$cl port=$port dbname=smith user=$smith_user" >>"$logdir/smith.log" 2>&1
  echo "== exit $?" >>"$logdir/smith.log"
done
# sqlsmith --verbose prints one character per query run: . ok, e error,
# S syntax error, t timeout, C connection broken
queries=$(grep -E '^[.eSCt]+$' "$logdir/smith.log" | tr -d '\n' | wc -c)
log="$cl/server.log"
errors=$(grep -cE '^[0-9-]+ [0-9:.]+ [A-Z]+ \[[0-9]+\] [0-9A-Z]{5} ERROR:' "$log" || true)
crashes=$(grep -cE 'PANIC|TRAP:|terminated by signal|was terminated|server process .* exited' "$log" || true)
now_start=$(gh_as_pg psql -X -Atq -d smith -c "SELECT pg_postmaster_start_time()" 2>/dev/null)
# XX000 statements: the STATEMENT line after each XX000 ERROR (one line of
# sqlsmith SQL; it writes each query on several lines, so take everything
# up to the next log line)
awk '
  /^[0-9-]+ [0-9:.]+ [A-Z]+ \[[0-9]+\] XX000 ERROR:/ { want=1; next }
  /^[0-9-]+ [0-9:.]+ [A-Z]+ \[[0-9]+\] / { if (grab) { print stmt "\n;\n--END--"; grab=0 }
      if (want && $0 ~ / STATEMENT: /) { sub(/^.* STATEMENT: +/, ""); stmt=$0; grab=1 } want=0; next }
  { if (grab) stmt = stmt "\n" $0 }
  END { if (grab) print stmt "\n;\n--END--" }' "$log" >"$logdir/smith-xx000.sql"
xx=$(grep -c -- '--END--' "$logdir/smith-xx000.sql" || true)
grep -E ' XX000 ERROR:' "$log" | sed 's/^.* ERROR: *//' | sort | uniq -c | sort -rn >"$logdir/smith-xx000-messages.txt"
ours=0; n=0
: >"$logdir/smith-xx000-classified.txt"
if [ "$xx" -gt 0 ]; then
  csplit -s -z -f "$cl/xx." "$logdir/smith-xx000.sql" '/^--END--$/+1' '{*}' 2>/dev/null
  for f in "$cl"/xx.*; do
    n=$((n + 1)); [ $n -gt 100 ] && break
    q=$(grep -v -- '--END--' "$f")
    # gpuhash can only be the cause if the forced plan has a GpuHashJoin or
    # a GpuHashAgg, or the query calls a gpuhash function; sqlsmith's queries are often
    # nondeterministic (TABLESAMPLE, LIMIT without ORDER BY, volatile
    # functions), so the native side gets three tries to raise XX000 too
    inplan=$(printf 'SET statement_timeout = %s; EXPLAIN (COSTS OFF) %s\n' "'5s'" "$q" |
      gh_as_pg psql -X -At -d smith 2>/dev/null | grep -cE 'GpuHashJoin|GpuHashAgg')
    native=""
    for try in 1 2 3; do
      native=$(printf 'SET statement_timeout = %s; SET gpuhash.enabled = off; %s\n' "'5s'" "$q" |
        gh_as_pg psql -X -q -d smith -v VERBOSITY=verbose 2>&1 >/dev/null | grep -oE 'ERROR: +[0-9A-Z]{5}' | head -1)
      [[ "$native" == *XX000* ]] && break
    done
    forced_err=$(printf 'SET statement_timeout = %s; %s\n' "'5s'" "$q" |
      gh_as_pg psql -X -q -d smith -v VERBOSITY=verbose 2>&1 >/dev/null | grep -m1 -E 'ERROR: +[0-9A-Z]{5}')
    forced=$(grep -oE 'ERROR: +[0-9A-Z]{5}' <<<"$forced_err")
    if [[ "$native" == *XX000* ]]; then verdict="postgres (native XX000 too)"
    # pg_stop_making_pinned_objects() raises this whenever a row reaches it;
    # which rows do depends on row order (LIMIT/OFFSET without ORDER BY over
    # a view whose joins the forced plan runs as GpuHashJoins)
    elif [[ "$forced_err" == *"cannot advance OID counter anymore"* ]] &&
         grep -qi 'pg_stop_making_pinned_objects' <<<"$q"; then
      verdict="postgres (pg_stop_making_pinned_objects() raised it for a row the native order did not reach)"
    elif [ "${inplan:-0}" = 0 ] && ! grep -qi 'gpuhash' <<<"$q"; then verdict="postgres (no GpuHashJoin or GpuHashAgg in the plan, no gpuhash function)"
    elif [[ "$forced" != *XX000* ]]; then verdict="not reproduced (now: ${forced:-no error})"
    else verdict="GPUHASH (native: ${native:-no error})"; ours=$((ours + 1)); fi
    { echo "-- $verdict"; echo "$q"; echo; } >>"$logdir/smith-xx000-classified.txt"
  done
fi
echo "1..4"
[ "$queries" -gt 0 ] && echo "ok 1 - sqlsmith ran $queries queries in $runs runs on $ntab tables" \
  || echo "not ok 1 - sqlsmith ran no query (see $logdir/smith.log)"
[ "$crashes" -eq 0 ] && echo "ok 2 - no crash, PANIC or assertion failure in the server log" \
  || { echo "not ok 2 - $crashes crash lines in the server log"; grep -E 'PANIC|TRAP:|terminated by signal|was terminated' "$log" | head -5 | sed 's/^/# /'; }
[ -n "$now_start" ] && [ "$now_start" = "$start_time" ] && echo "ok 3 - the server still answers and did not restart" \
  || echo "not ok 3 - the server restarted or does not answer ($start_time -> ${now_start:-none})"
[ "$ours" -eq 0 ] && echo "ok 4 - no internal error (XX000) caused by gpuhash ($xx XX000 in all)" \
  || { echo "not ok 4 - $ours XX000 caused by gpuhash (see $logdir/smith-xx000-classified.txt)"; head -5 "$logdir/smith-xx000-messages.txt" | sed 's/^/# /'; }
echo "# sqlsmith as $smith_user: $queries queries, $errors errors, $xx XX000 ($ours from gpuhash), $crashes crash lines, $runs runs; logs in $logdir"
[ "$queries" -gt 0 ] && [ "$crashes" -eq 0 ] && [ "$ours" -eq 0 ] && [ "$now_start" = "$start_time" ]
