#!/bin/bash
# bench/memory.sh - how much memory a join takes, native PostgreSQL against
# GpuHashJoin, under a given work_mem: each participant's peak resident
# memory and the temp files the query wrote.  The yardstick for bounding the
# inner side by work_mem * hash_mem_multiplier, as PostgreSQL's hash join is
# bounded.  Markdown on stdout.  Needs gpuhash installed (make install).
#
#   bench/memory.sh [INNER_ROWS [OUTER_ROWS]]     default 2000000 and 4000000
#
# Environment: MEM_WORK_MEM ("4MB 64MB": work_mem values), MEM_WORKERS
# ("0 4": parallel workers per query), MEM_DEVICE (cpu: gpuhash.device of
# the gpuhash runs; gpu on a GPU host), MEM_VARIANTS ("native gpuhash").
#
# Data: r(k int4, pad text) with INNER_ROWS rows and a 64-character pad, s(k
# int4) with OUTER_ROWS rows, every s.k matching one r.k; the query is
#   SELECT count(*), sum(length(r.pad)) FROM s JOIN r USING (k)
# (force_join for the gpuhash runs, so the join is GpuHashJoin whatever the
# cost model says).  Memory: each process's private (anonymous) resident
# memory, RssAnon, sampled every 20 ms while the query runs, the largest
# sample of the leader and of any worker: what the query allocates, without
# the shared buffers it touches (which VmRSS and VmHWM count).  A peak
# shorter than 20 ms may be missed.  Temp files: pg_stat_database.temp_bytes
# before and after (the query's session flushes its statistics before it
# says DONE, so they are counted whenever its exit is).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../test/lib.sh"

inner=${1:-2000000}
outer=${2:-4000000}
work_mems=${MEM_WORK_MEM:-"4MB 64MB"}
workers=${MEM_WORKERS:-"0 4"}
device=${MEM_DEVICE:-cpu}
variants=${MEM_VARIANTS:-"native gpuhash"}

dir=$(gh_tmpdir)
port=$(gh_free_port)
trap 'gh_cluster_stop "$dir"; rm -rf "$dir"' EXIT
gh_cluster_start "$dir" "$port" "gpuhash.device = $device
max_worker_processes = 16
max_parallel_workers = 8
shared_buffers = 256MB
jit = off" >/dev/null || { echo "cluster did not start" >&2; exit 1; }
psqlq() { gh_as_pg psql -X -q -v ON_ERROR_STOP=1 "$@"; }
psqlq -c "CREATE EXTENSION gpuhash" >/dev/null
psqlq <<SQL >/dev/null
CREATE TABLE r (k int4, pad text);
CREATE TABLE s (k int4);
INSERT INTO r SELECT g, repeat(md5(g::text), 2) FROM generate_series(1, $inner) g;
INSERT INTO s SELECT 1 + (g % $inner) FROM generate_series(1, $outer) g;
VACUUM ANALYZE r;
VACUUM ANALYZE s;
SQL
inner_mb=$(psqlq -At -c "SELECT pg_relation_size('r') / 1048576")

# kb_of PID FIELD: a /proc status field in kB (0 if the process is gone)
kb_of() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }

echo "## Memory of a join: native against GpuHashJoin"
echo
echo "Inner side r: $inner rows, $inner_mb MB; outer side s: $outer rows; gpuhash.device = $device; $(nproc) cores."
echo "Query: SELECT count(*), sum(length(r.pad)) FROM s JOIN r USING (k)."
echo
echo "| variant | work_mem | workers | plan | leader private MB | largest worker private MB | temp files MB | seconds | result |"
echo "|---|---|---|---|---|---|---|---|---|"
ref=""
for wm in $work_mems; do
  for nw in $workers; do
    for v in $variants; do
      if [ "$v" = native ]; then set_v="SET gpuhash.enabled = off;"; else set_v="SET gpuhash.force_join = on;"; fi
      sql="$set_v SET work_mem = '$wm'; SET max_parallel_workers_per_gather = $nw;
           SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;"
      plan=$(psqlq -At -c "$sql" -c "EXPLAIN (COSTS OFF) SELECT count(*), sum(length(r.pad)) FROM s JOIN r USING (k)" |
        grep -oE 'GpuHashJoin|Parallel Hash Join|Hash Join' | head -1)
      t0=$(psqlq -At -c "SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()")
      # the leader: a session that prints its pid, then runs the query
      fifo=$dir/out.$$
      ( psqlq -At -c "$sql" -c "SELECT pg_backend_pid()" \
          -c "SELECT 'RESULT', count(*), sum(length(r.pad)) FROM s JOIN r USING (k)" \
          -c "SELECT pg_stat_force_next_flush()" -c "SELECT 'DONE'" >"$fifo" 2>&1 ) &
      qpid=$!
      pid="" start=$(date +%s.%N) wmax=0 lmax=0
      while kill -0 "$qpid" 2>/dev/null; do
        [ -z "$pid" ] && pid=$(head -1 "$fifo" 2>/dev/null | grep -E '^[0-9]+$' || true)
        grep -q '^DONE' "$fifo" 2>/dev/null && break
        if [ -n "$pid" ]; then
          r=$(kb_of "$pid" RssAnon); [ "${r:-0}" -gt "$lmax" ] && lmax=$r
          for w in $(pgrep -f "parallel worker for PID $pid" || true); do
            r=$(kb_of "$w" RssAnon); [ "${r:-0}" -gt "$wmax" ] && wmax=$r
          done
        fi
        sleep 0.02
      done
      secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
      wait "$qpid" || true
      res=$(grep '^RESULT' "$fifo" | cut -d'|' -f2- || true)
      [ -n "$res" ] || res="FAILED: $(tail -1 "$fifo")"
      [ -z "$ref" ] && ref=$res
      ok=$([ "$res" = "$ref" ] && echo same || echo "DIFFERENT ($res)")
      t1=$(psqlq -At -c "SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()")
      echo "| $v | $wm | $nw | ${plan:-?} | $((lmax / 1024)) | $((wmax / 1024)) | $(( (t1 - t0) / 1048576 )) | $secs | $ok |"
    done
  done
done
echo
echo "Private MB: the largest RssAnon sampled every 20 ms in the leader and in any one worker (shared buffers"
echo "not counted, nor is a parallel hash join's shared table, which lives in dynamic shared memory); seconds"
echo "include the 20 ms sampling's granularity and the session's start."
