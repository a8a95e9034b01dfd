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
# MEMAGG_KEYS ("int text": the key types to run), MEMAGG_SHAPE_ROWS (5000000
# rows for the staging shapes below; 0 skips them), MEMAGG_PORT (a free
# port).  Needs gpuhash installed
# (make install) in the PostgreSQL that pg_config names.
#
# The bound.  VmHWM, a process's peak resident memory, counts everything:
# the process itself, the shared buffers it touched (shared_buffers is 16MB
# here) and what the aggregation allocated.  So first a session runs the
# same aggregation over 1000 groups, which fits any budget: its VmHWM is the
# base.  The large aggregation may then add at most
#     2 x budget                 what the budget counts (the groups of a
#                                pass, the batch's arrays and copies: the
#                                batch holds what the budget holds, whatever
#                                gpuhash.batch_rows asks), and beyond it the
#                                copy of the groups made as the rows are
#                                made (device = gpu: their host copy, and the
#                                lookup copy of the GPU's table)
#   + 16 MB                      tape buffers, result rows, the input
#                                query's executor
# above the base.  Native's peak is printed beside it.
#
# Then the staging within the budget (issue 35's F4), at work_mem = 1MB and
# the largest gpuhash.batch_rows, over MEMAGG_SHAPE_ROWS rows (5000000): one
# group (count(*), sum(k) with no GROUP BY), as many groups as rows by
# GpuHashAgg, and the same by gpuhash_aggregate.  Each runs natively first;
# gpuhash's peak may exceed native's by at most 2 x budget + 8 MB, plus
# the difference of their fixed overheads (the same query over 1000 rows:
# a GPU's CUDA context) (native
# keeps its own hash table within the budget too; the rest is the
# difference of two executors), where before the batch took 16 x
# batch_rows rows whatever the budget (hundreds of MB).  The plan must be
# GpuHashAgg and the rows native's.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

groups=${1:-10000000}
work_mem=${MEMAGG_WORK_MEM:-4MB}
device=${MEMAGG_DEVICE:-cpu}
keys=${MEMAGG_KEYS:-"int text"}
passed=0 failed=0

dir=$(gh_tmpdir)
port=${MEMAGG_PORT:-$(gh_free_port)}
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

# peak SQL: runs SQL (which leaves one row in table out) in a fresh session
# and prints "VmHWM_kB temp_bytes seconds"
peak() {
  local f=$dir/peak.out
  psqlq -At >"$f" 2>&1 <<SQL
SET work_mem = '${peak_work_mem:-$work_mem}';
${peak_settings:-}
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
  bound=$((base + 2 * budget_kb + 16 * 1024))
  echo "# $kt keys: base ${base} kB; gpuhash_aggregate VmHWM ${gpu} kB, temp files $((gtemp / 1048576)) MB, ${gsecs} s;" \
       "native VmHWM ${nat} kB, temp files $((ntemp / 1048576)) MB, ${nsecs} s; budget ${budget_kb} kB; bound ${bound} kB"
  check "$kt keys: peak within the bound" "$([ "${gpu:-0}" -gt 0 ] && [ "$gpu" -le "$bound" ] && echo ok || echo "${gpu} kB > ${bound} kB")"
  # the CPU twin's groups are host memory and must spill; a GPU's groups
  # are device memory, within the device's budget (aggregate_spill.c), so
  # there the budget holds without temporary files
  if [ "$device" = cpu ]; then
    check "$kt keys: temporary files written" "$([ "${gtemp:-0}" -gt 0 ] && echo ok || echo "no temp bytes")"
  fi
  diff=$(psqlq -At -c "SELECT count(*) FROM ((TABLE out_native EXCEPT ALL TABLE out_gpu) UNION ALL (TABLE out_gpu EXCEPT ALL TABLE out_native)) x")
  rows=$(psqlq -At -c "SELECT count(*) FROM out_gpu")
  check "$kt keys: rows equal native's" "$([ "$diff" = 0 ] && [ "$rows" = "$groups" ] && echo ok || echo "$diff rows differ, $rows groups")"
done

# the staging within the budget: issue 35's three shapes
shape_rows=${MEMAGG_SHAPE_ROWS:-5000000}
[ "$shape_rows" -gt 0 ] || { echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit; }
peak_work_mem=1MB
max_batch_rows=16777216
t0=$(date +%s)
psqlq <<SQL >/dev/null || { echo "setup failed"; failed=$((failed + 1)); }
DROP TABLE IF EXISTS m, out_native, out_gpu;
CREATE UNLOGGED TABLE ms AS SELECT g AS k, g AS v FROM generate_series(1, $shape_rows) g;
VACUUM ANALYZE ms;
SQL
budget_kb=$(psqlq -At -c "SET work_mem = '$peak_work_mem'" -c \
  "SELECT (setting::bigint * current_setting('hash_mem_multiplier')::float8)::bigint FROM pg_settings WHERE name = 'work_mem'")
echo "# $shape_rows rows made in $(( $(date +%s) - t0 )) s; work_mem $peak_work_mem, gpuhash.batch_rows $max_batch_rows"
force="SET gpuhash.force_agg = on; SET gpuhash.batch_rows = $max_batch_rows;"
for shape in one groups function; do
  case $shape in
    one) q="SELECT count(*), sum(k) FROM ms"; gq=$q; gset=$force ;;
    groups) q="SELECT k, count(*), sum(v) FROM ms GROUP BY k"; gq=$q; gset=$force ;;
    function) q="SELECT k, count(*), sum(v) FROM ms GROUP BY k"
              gq="SELECT * FROM gpuhash_aggregate('$q') AS t(k int, c bigint, s bigint)"
              gset="SET gpuhash.batch_rows = $max_batch_rows;" ;;
  esac
  psqlq -c "DROP TABLE IF EXISTS out_native, out_gpu" >/dev/null 2>&1
  plan=$(psqlq -At -c "SET work_mem = '$peak_work_mem'; $gset" -c "EXPLAIN (COSTS OFF) $gq" 2>&1)
  # each side's fixed overhead first: the same query over 1000 rows (on a
  # GPU, gpuhash's includes the CUDA context's host memory)
  small_q=${q//FROM ms/FROM (SELECT * FROM ms WHERE k <= 1000) ms}
  small_gq=${gq//FROM ms/FROM (SELECT * FROM ms WHERE k <= 1000) ms}
  read -r nbase _ _ <<<"$(peak_settings="SET gpuhash.enabled = off;" peak "CREATE TEMP TABLE o AS $small_q;")"
  read -r gbase _ _ <<<"$(peak_settings=$gset peak "CREATE TEMP TABLE o AS $small_gq;")"
  read -r nat _ nsecs <<<"$(peak_settings="SET gpuhash.enabled = off;" peak "CREATE TABLE out_native AS $q;")"
  read -r gpu _ gsecs <<<"$(peak_settings=$gset peak "CREATE TABLE out_gpu AS $gq;")"
  over=$(( ${gbase:-0} > ${nbase:-0} ? ${gbase:-0} - ${nbase:-0} : 0 ))
  bound=$((nat + over + 2 * budget_kb + 8 * 1024))
  echo "# $shape: native VmHWM ${nat} kB, ${nsecs} s; gpuhash VmHWM ${gpu} kB, ${gsecs} s; fixed overheads over 1000 rows: native ${nbase} kB, gpuhash ${gbase} kB; bound ${bound} kB"
  check "$shape: GpuHashAgg plans it" "$(grep -qE 'GpuHashAgg' <<<"$plan" && echo ok || echo "plan: $plan")"
  check "$shape: peak within native's + 2 x budget + 8 MB" \
    "$([ "${gpu:-0}" -gt 0 ] && [ "${nat:-0}" -gt 0 ] && [ "$gpu" -le "$bound" ] && echo ok || echo "${gpu} kB > ${bound} kB")"
  diff=$(psqlq -At -c "SELECT count(*) FROM ((TABLE out_native EXCEPT ALL TABLE out_gpu) UNION ALL (TABLE out_gpu EXCEPT ALL TABLE out_native)) x")
  rows=$(psqlq -At -c "SELECT count(*) FROM out_gpu")
  check "$shape: rows equal native's" "$([ "$diff" = 0 ] && [ "${rows:-0}" -gt 0 ] && echo ok || echo "$diff rows differ, $rows rows")"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
