#!/bin/bash
# test/memory.sh - GpuHashJoin keeps within work_mem * hash_mem_multiplier,
# as TAP.  In a cluster of its own with small shared buffers (16MB, so that
# the shared memory a backend maps stays small), a join whose inner side is
# about 20 times work_mem (4MB: an 80 MB inner side) runs serial, with 4
# parallel workers (each building its own table: gpuhash.shared_build off),
# in 4 sessions at once, and with 4 workers sharing a build whose inner
# side the planner underestimates (it goes to shared partitions).  Every backend and worker is sampled every
# 20 ms: RssAnon (its private memory) and VmHWM (the kernel's own peak of
# its resident memory).  With budget the join's work_mem *
# hash_mem_multiplier (8 MB here), each process must stay within
#
#   RssAnon <= base RssAnon + 2 x budget + 8 MB
#   VmHWM   <= base VmHWM + shared_buffers + 2 x budget + 8 MB
#
# where base is a backend of the same cluster that scanned both tables and
# ran a tiny GpuHashJoin (the backend itself and its caches, on a GPU its
# CUDA context's host memory; its scans go through a small
# ring of buffers, while the join's process may touch all of them, hence
# shared_buffers in the second bound), 2 x budget is the inner store and its
# one copy while it is regrouped into the table's order (src/join_batch.c),
# and 8 MB covers the batch files' buffers, the outer side's slot and
# allocator slack.  Also: the joins wrote temp files
# (pg_stat_database.temp_bytes), and their rows equal native's.
# GPUHASH_TEST_DEVICE: cpu (default) or gpu.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
device=${GPUHASH_TEST_DEVICE:-cpu}
inner_rows=${GPUHASH_MEM_INNER_ROWS:-800000}

cl=$(gh_tmpdir)
port=$(gh_free_port)
gh_tap_start "$cl" memory

if ! gh_cluster_start "$cl" "$port" "gpuhash.device = $device
shared_buffers = 16MB
max_worker_processes = 16
max_parallel_workers = 8
work_mem = 4MB
hash_mem_multiplier = 2.0
jit = off"; then
  notok "cluster starts"; exit 1
fi
psqlq() { gh_as_pg psql -X -q -v ON_ERROR_STOP=1 "$@"; }
psqlq -c "CREATE EXTENSION gpuhash" >/dev/null
psqlq <<SQL >/dev/null
CREATE TABLE r (k int4, pad text);
CREATE TABLE s (k int4, w int4);
INSERT INTO r SELECT g, repeat(md5(g::text), 2) FROM generate_series(1, $inner_rows) g;
INSERT INTO s SELECT 1 + (g * 7) % $inner_rows, g FROM generate_series(1, $inner_rows) g;
VACUUM ANALYZE r;
VACUUM ANALYZE s;
SQL
budget_kb=$(psqlq -At -c "SELECT (pg_size_bytes(current_setting('work_mem')) *
                                  current_setting('hash_mem_multiplier')::float8 / 1024)::bigint")
inner_mb=$(psqlq -At -c "SELECT pg_relation_size('r') / 1048576")
echo "# inner side $inner_mb MB, budget $((budget_kb / 1024)) MB, device $device"

query="SELECT count(*), sum(length(r.pad)), sum(s.w) FROM s JOIN r USING (k)"
par="SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;
     SET gpuhash.shared_build = off;"

# kb_of PID FIELD: a /proc status field in kB (0 if the process is gone)
kb_of() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }

# run_sessions NSESSIONS SQL [BODY]: runs SQL (settings) and then BODY (the
# query, by default) in NSESSIONS sessions at once, sampling them and their
# workers; sets peak_kb (largest VmHWM), anon_kb (largest RssAnon), results
# (the distinct result lines) and temp_kb.  Each session waits 0.2 s before
# it ends, so that its VmHWM (a peak) is read even when it ran faster than
# the sampling.
run_sessions() {
  local ns=$1 sql=$2 body=${3:-"SELECT 'RESULT', * FROM ($query) q"} i p w h r t0 t1 out
  t0=$(psqlq -At -c "SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()")
  peak_kb=0 anon_kb=0
  for i in $(seq 1 "$ns"); do
    out=$cl/out.$i
    : >"$out"; chmod a+w "$out"
    ( psqlq -At -c "SELECT pg_backend_pid()" -c "$sql" -c "$body" \
        -c "SELECT pg_stat_force_next_flush()" -c "SELECT pg_sleep(0.2)" -c "SELECT 'DONE'" >"$out" 2>&1 ) &
  done
  local running=1
  while [ "$running" = 1 ]; do
    running=0
    for i in $(seq 1 "$ns"); do
      out=$cl/out.$i
      grep -q '^DONE' "$out" 2>/dev/null && continue
      grep -q 'ERROR' "$out" 2>/dev/null && continue
      running=1
      p=$(head -1 "$out" 2>/dev/null | grep -E '^[0-9]+$' || true)
      [ -n "$p" ] || continue
      for w in "$p" $(pgrep -f "parallel worker for PID $p" || true); do
        h=$(kb_of "$w" VmHWM); [ "${h:-0}" -gt "$peak_kb" ] && peak_kb=$h
        r=$(kb_of "$w" RssAnon); [ "${r:-0}" -gt "$anon_kb" ] && anon_kb=$r
      done
    done
    sleep 0.02
  done
  wait
  results=$(cat "$cl"/out.* | grep -E '^RESULT|ERROR' | sort -u)
  t1=$(psqlq -At -c "SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()")
  temp_kb=$(( (t1 - t0) / 1024 ))
  rm -f "$cl"/out.*
}

# base: a backend's peak after scanning both tables and a tiny GpuHashJoin,
# which on a GPU makes its CUDA context (whose host memory, about 120 MB on
# an H100, every GPU process has whatever the join's size)
run_sessions 1 "SET gpuhash.force_join = on;" "SELECT count(*) FROM r; SELECT count(*) FROM s;
  SELECT count(*) FROM (SELECT * FROM s LIMIT 1000) s2 JOIN (SELECT * FROM r LIMIT 1000) r2 USING (k);"
base_kb=$peak_kb base_anon_kb=$anon_kb
sb_kb=$(psqlq -At -c "SELECT pg_size_bytes(current_setting('shared_buffers')) / 1024")
run_sessions 1 "SET gpuhash.enabled = off;"
native=$results
bound_kb=$((base_kb + sb_kb + 2 * budget_kb + 8192))
anon_bound_kb=$((base_anon_kb + 2 * budget_kb + 8192))
echo "# base VmHWM $((base_kb / 1024)) MB, RssAnon $((base_anon_kb / 1024)) MB; bounds $((bound_kb / 1024)) MB and $((anon_bound_kb / 1024)) MB"
echo "# native: peak VmHWM $((peak_kb / 1024)) MB, RssAnon $((anon_kb / 1024)) MB, temp files $((temp_kb / 1024)) MB"

check_run() {
  local label=$1
  echo "# $label: peak VmHWM $((peak_kb / 1024)) MB, RssAnon $((anon_kb / 1024)) MB, temp files $((temp_kb / 1024)) MB"
  if [ "$results" = "$native" ]; then ok "$label: rows equal native's"
  else notok "$label: rows equal native's" "got '$results', native '$native'"; fi
  if [ "$anon_kb" -gt 0 ] && [ "$anon_kb" -le "$anon_bound_kb" ]; then
    ok "$label: every process's private peak ($((anon_kb / 1024)) MB) within base + 2 x budget + 8 MB ($((anon_bound_kb / 1024)) MB)"
  else
    notok "$label: every process's private peak within base + 2 x budget + 8 MB" "RssAnon $anon_kb kB, bound $anon_bound_kb kB"
  fi
  if [ "$peak_kb" -gt 0 ] && [ "$peak_kb" -le "$bound_kb" ]; then
    ok "$label: every process's VmHWM ($((peak_kb / 1024)) MB) within base + shared_buffers + 2 x budget + 8 MB ($((bound_kb / 1024)) MB)"
  else
    notok "$label: every process's VmHWM within base + shared_buffers + 2 x budget + 8 MB" "VmHWM $peak_kb kB, bound $bound_kb kB"
  fi
  if [ "$temp_kb" -gt 0 ]; then ok "$label: temp files written ($((temp_kb / 1024)) MB)"
  else notok "$label: temp files written" "temp_bytes did not grow"; fi
}

run_sessions 1 "SET gpuhash.force_join = on; SET max_parallel_workers_per_gather = 0;"
check_run "serial"
run_sessions 1 "SET gpuhash.force_join = on; SET max_parallel_workers_per_gather = 4; $par"
check_run "4 workers"
run_sessions 4 "SET gpuhash.force_join = on; SET max_parallel_workers_per_gather = 0;"
check_run "4 sessions at once"

# a shared build (the participants read the inner side together) whose
# inner side the planner expects to be 0.5 % of what it is (k + 0 = k):
# its participants' chunks pass their budget, both sides go to shared
# partitions, and each participant joins partitions within its own budget
shared_query="SELECT count(*), sum(length(r.pad)), sum(s.w) FROM s JOIN (SELECT * FROM r WHERE k + 0 = k) r USING (k)"
run_sessions 1 "SET gpuhash.force_join = on; SET max_parallel_workers_per_gather = 4;
  SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;" \
  "SELECT 'RESULT', * FROM ($shared_query) q"
check_run "4 workers, a shared build past its budget"
plan=$(psqlq -At -c "SET gpuhash.force_join = on" -c "SET max_parallel_workers_per_gather = 4" \
  -c "SET parallel_setup_cost = 0" -c "SET parallel_tuple_cost = 0" -c "SET min_parallel_table_scan_size = 0" \
  -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $shared_query" |
  grep -E 'Inner Side|Shared Partitions' | tr -s ' ' | tr '\n' ';')
if echo "$plan" | grep -q 'read by all participants together' && echo "$plan" | grep -qE 'Shared Partitions: [0-9]+'; then
  ok "that join is a shared build that went to partitions ($plan)"
else
  notok "that join is a shared build that went to partitions" "$plan"
fi

# the plans were GpuHashJoins, in batches
plan=$(psqlq -At -c "SET gpuhash.force_join = on" -c "SET max_parallel_workers_per_gather = 0" \
  -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $query" | grep -E 'GpuHashJoin|Hash Batches' | tr -s ' ' | tr '\n' ';')
if echo "$plan" | grep -q 'GpuHashJoin' && echo "$plan" | grep -qE 'Hash Batches: ([2-9]|[1-9][0-9]+)'; then
  ok "the join is a GpuHashJoin in batches ($plan)"
else
  notok "the join is a GpuHashJoin in batches" "$plan"
fi
