#!/bin/bash
# test/memory_agg.sh - gpuhash_aggregate keeps its memory within its budget:
# with many more groups than work_mem * hash_mem_multiplier holds, a
# backend's peak memory stays within the stated bound, temporary files are
# written, and the rows are native's.  Exits non-zero on any failure; ends
# with "N passed, N failed".
#
#   test/memory_agg.sh [GROUPS]          default 10000000 (two rows a group)
#
# Environment: MEMAGG_WORK_MEM (4MB), MEMAGG_DEVICE (cpu; gpu on a GPU host),
# MEMAGG_KEYS ("int text": the key types to run).  Needs gpuhash installed
# (make install) in the PostgreSQL that pg_config names.
#
# The bound.  VmHWM, a process's peak resident memory, counts everything:
# the process itself, the shared buffers it touched (shared_buffers is 16MB
# here) and what the aggregation allocated.  So first a session runs the
# same aggregation over 1000 groups, which fits any budget: its VmHWM is the
# base.  The large aggregation may then add at most
#     2 x budget                 the groups of a pass, and their copy when
#                                its rows are made (device = gpu: their host
#                                copy, and the lookup copy of the GPU's table)
#   + 256 bytes a row of a batch the batch (16 x gpuhash.batch_rows rows),
#                                whose size is the setting's, not the
#                                groups': its buffers, host and target, and
#                                copies of its keys (about 100 bytes a row);
#                                and the groups its rows make, since a batch
#                                is never split (about 130 bytes a group with
#                                a 12-byte text key: accumulators, table,
#                                representative and its copy, some of it
#                                doubled while it grows)
#   + 16 MB                      tape buffers, result rows, the input
#                                query's executor
# above the base.  Native's peak is printed beside it.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

groups=${1:-10000000}
work_mem=${MEMAGG_WORK_MEM:-4MB}
device=${MEMAGG_DEVICE:-cpu}
keys=${MEMAGG_KEYS:-"int text"}
passed=0 failed=0

dir=$(gh_tmpdir)
port=$(gh_free_port)
trap 'gh_cluster_stop "$dir"; rm -rf "$dir"' EXIT
gh_cluster_start "$dir" "$port" "gpuhash.device = $device
shared_buffers = 16MB
max_parallel_workers_per_gather = 0
jit = off" >/dev/null || { echo "cluster did not start" >&2; echo "0 passed, 1 failed"; exit 1; }
psqlq() { gh_as_pg psql -X -q -v ON_ERROR_STOP=1 "$@"; }

check() { # check NAME CONDITION-TEXT: count a result
  if [ "$2" = ok ]; then passed=$((passed + 1)); echo "ok $((passed + failed)) - $1"
  else failed=$((failed + 1)); echo "not ok $((passed + failed)) - $1: $2"; fi
}

t0=$(date +%s)
psqlq <<SQL >/dev/null || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }
CREATE EXTENSION gpuhash;
CREATE UNLOGGED TABLE m AS
  SELECT g % $groups AS k, 'key ' || (g % $groups) AS t, g AS v
    FROM generate_series(1, 2 * $groups) g;
VACUUM ANALYZE m;
SQL
echo "# $((2 * groups)) rows in $groups groups made in $(( $(date +%s) - t0 )) s; work_mem $work_mem, gpuhash.device $device"
budget_kb=$(psqlq -At -c "SET work_mem = '$work_mem'" -c \
  "SELECT (setting::bigint * current_setting('hash_mem_multiplier')::float8)::bigint FROM pg_settings WHERE name = 'work_mem'")
batch_rows=$(psqlq -At -c "SHOW gpuhash.batch_rows")

# peak SQL: runs SQL (which leaves one row in table out) in a fresh session
# and prints "VmHWM_kB temp_bytes seconds"
peak() {
  local f=$dir/peak.out
  psqlq -At >"$f" 2>&1 <<SQL
SET work_mem = '$work_mem';
SELECT pg_backend_pid() AS pid \gset
SELECT temp_bytes AS t0 FROM pg_stat_database WHERE datname = current_database() \gset
\setenv BPID :pid
SELECT extract(epoch FROM clock_timestamp()) AS s0 \gset
$1
SELECT extract(epoch FROM clock_timestamp()) - :s0 AS secs \gset
\! awk '\$1 == "VmHWM:" { print "HWM", \$2 }' /proc/\$BPID/status
SELECT pg_stat_force_next_flush();
\c
SELECT 'TEMP', temp_bytes - :t0, :secs FROM pg_stat_database WHERE datname = current_database();
SQL
  if ! grep -q '^TEMP' "$f"; then cat "$f" >&2; echo "0 0 0"; return; fi
  echo "$(awk '$1 == "HWM" { print $2 }' "$f") $(grep '^TEMP' "$f" | cut -d'|' -f2,3 | tr '|' ' ')"
}

for kt in $keys; do
  case $kt in
    int) key=k; coldef="k int, c bigint, s bigint, mi int, ma int" ;;
    text) key=t; coldef="k text, c bigint, s bigint, mi int, ma int" ;;
    *) echo "unknown key type $kt" >&2; exit 2 ;;
  esac
  q="SELECT $key, count(*), sum(v), min(v), max(v) FROM m GROUP BY $key"
  qsmall="SELECT $key, count(*), sum(v), min(v), max(v) FROM m WHERE k < 1000 GROUP BY $key"
  psqlq -c "DROP TABLE IF EXISTS out_native, out_gpu" >/dev/null 2>&1
  read -r base _ _ <<<"$(peak "CREATE TEMP TABLE o AS SELECT * FROM gpuhash_aggregate('$qsmall') AS t($coldef);")"
  read -r nat ntemp nsecs <<<"$(peak "SET gpuhash.enabled = off; CREATE TABLE out_native AS $q;")"
  read -r gpu gtemp gsecs <<<"$(peak "CREATE TABLE out_gpu AS SELECT * FROM gpuhash_aggregate('$q') AS t($coldef);")"
  bound=$((base + 2 * budget_kb + 16 * batch_rows * 256 / 1024 + 16 * 1024))
  echo "# $kt keys: base ${base} kB; gpuhash_aggregate VmHWM ${gpu} kB, temp files $((gtemp / 1048576)) MB, ${gsecs} s;" \
       "native VmHWM ${nat} kB, temp files $((ntemp / 1048576)) MB, ${nsecs} s; budget ${budget_kb} kB; bound ${bound} kB"
  check "$kt keys: peak within the bound" "$([ "${gpu:-0}" -gt 0 ] && [ "$gpu" -le "$bound" ] && echo ok || echo "${gpu} kB > ${bound} kB")"
  check "$kt keys: temporary files written" "$([ "${gtemp:-0}" -gt 0 ] && echo ok || echo "no temp bytes")"
  diff=$(psqlq -At -c "SELECT count(*) FROM ((TABLE out_native EXCEPT ALL TABLE out_gpu) UNION ALL (TABLE out_gpu EXCEPT ALL TABLE out_native)) x")
  rows=$(psqlq -At -c "SELECT count(*) FROM out_gpu")
  check "$kt keys: rows equal native's" "$([ "$diff" = 0 ] && [ "$rows" = "$groups" ] && echo ok || echo "$diff rows differ, $rows groups")"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
