#!/bin/bash
# bench/join/explain.sh DIR - where the time of a GpuHashJoin goes: EXPLAIN
# ANALYZE of the int4 workload (serial and 8 workers, gpuhash and native) on
# the cluster that `bench/join/run.sh --keep --datadir DIR` left running.
# JOINEXPLAIN=parallel: the int4 GpuHashJoin with 8 and 16 workers only.
# JOINEXPLAIN=serial: the serial int4 GpuHashJoin alone, three times.
# JOINEXPLAIN=quick: only the int4 GpuHashJoins (serial, then 8 workers with
# VERBOSE), for a scale where native serial runs take a minute.
# JOINEXPLAIN=phases: the int4 and text workloads with 16 workers at the
# planner's choice, each join's build and probe phases (VERBOSE), the scan
# floors, and the int4 join's time at three gpuhash.batch_rows.
# JOINEXPLAIN=build: the int4 and text joins with 16 workers, three times
# each, with every participant's DEBUG2 account of the shared build.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../test/lib.sh"
cl=$1
export PGHOST=$cl PGPORT=$(sed -n 's/^port = //p' "$cl/data/postgresql.conf" | tail -1) PGUSER=postgres PGDATABASE=postgres
# each mode's SQL after the common settings; :q is the int4 workload's join.
# EXPLAIN ANALYZE keeps TIMING on: the join shows its build, device and
# probe times only then, as PostgreSQL shows its own (VERBOSE adds the
# phases); the clock reads of the nodes below it are part of what it shows.
explain() {
  { printf '%s\n' "SET work_mem = '1GB';" "SET gpuhash.device = :'dev';" "SET gpuhash.force_join = on;"; cat; } |
    gh_as_pg psql -X -v dev="${EXPLAIN_DEVICE:-auto}" -v q='SELECT count(*), sum(r.v) FROM s JOIN r ON s.k = r.k'
}
case ${JOINEXPLAIN:-} in
  parallel)
    # only the int4 GpuHashJoin with 8 and 16 workers
    explain <<'SQL'
SET parallel_setup_cost = 0;
\timing on
\echo == gpuhash 8 workers (forced)
SET max_parallel_workers_per_gather = 8;
EXPLAIN (ANALYZE, VERBOSE) :q;
\echo == gpuhash 16 workers (forced)
SET max_parallel_workers_per_gather = 16;
EXPLAIN (ANALYZE, VERBOSE) :q;
SQL
    ;;
  phases)
    explain <<'SQL'
RESET gpuhash.force_join;
SET max_parallel_workers_per_gather = 16;
\timing on
\echo == floors: the scan alone, and with the key read
SELECT count(*) FROM s;
SELECT count(*) FROM s;
SELECT count(*), sum(k) FROM s;
\echo == int4, text: gpuhash as the planner chooses, twice each
EXPLAIN (ANALYZE, VERBOSE) :q;
EXPLAIN (ANALYZE, VERBOSE) :q;
EXPLAIN (ANALYZE, VERBOSE) SELECT count(*), sum(r.v) FROM s JOIN r ON s.t = r.t;
EXPLAIN (ANALYZE, VERBOSE) SELECT count(*), sum(r.v) FROM s JOIN r ON s.t = r.t;
\echo == int4 without EXPLAIN at batch_rows 16384, 65536, 262144
SET gpuhash.batch_rows = 16384;
:q;
:q;
SET gpuhash.batch_rows = 65536;
:q;
:q;
SET gpuhash.batch_rows = 262144;
:q;
:q;
SQL
    ;;
  build)
    # the int4 and text joins with 16 workers at the planner's choice, three
    # times each, with every participant's DEBUG2 account of its shared
    # build (the milestones of join_build.c's build_trace)
    explain <<'SQL'
RESET gpuhash.force_join;
SET max_parallel_workers_per_gather = 16;
SET client_min_messages = debug2;
\timing on
\echo == int4
EXPLAIN (ANALYZE, VERBOSE) :q;
EXPLAIN (ANALYZE, VERBOSE) :q;
EXPLAIN (ANALYZE, VERBOSE) :q;
\echo == text
EXPLAIN (ANALYZE, VERBOSE) SELECT count(*), sum(r.v) FROM s JOIN r ON s.t = r.t;
EXPLAIN (ANALYZE, VERBOSE) SELECT count(*), sum(r.v) FROM s JOIN r ON s.t = r.t;
EXPLAIN (ANALYZE, VERBOSE) SELECT count(*), sum(r.v) FROM s JOIN r ON s.t = r.t;
SQL
    ;;
  serial)
    # the serial int4 GpuHashJoin, the session's first join then again
    explain <<'SQL'
SET max_parallel_workers_per_gather = 0;
SHOW gpuhash.gpu_service;
\timing on
EXPLAIN (ANALYZE) :q;
EXPLAIN (ANALYZE) :q;
EXPLAIN (ANALYZE) :q;
SQL
    ;;
  quick)
    explain <<'SQL'
SET max_parallel_workers_per_gather = 0;
\timing on
\echo == gpuhash serial (forced), first query of the session, then again
EXPLAIN (ANALYZE) :q;
EXPLAIN (ANALYZE) :q;
\echo == the scan alone, serial
SELECT count(*), sum(v) FROM s;
\echo == gpuhash 8 workers (forced)
SET max_parallel_workers_per_gather = 8;
SET parallel_setup_cost = 0;
EXPLAIN (ANALYZE, VERBOSE) :q;
SQL
    ;;
  *)
    explain <<'SQL'
SET max_parallel_workers_per_gather = 0;
\echo == gpuhash serial (forced)
EXPLAIN (ANALYZE) :q;
EXPLAIN (ANALYZE) SELECT count(*), sum(r.v) FROM s JOIN r ON s.t = r.t;
SET max_parallel_workers_per_gather = 8;
SET parallel_setup_cost = 0;
\echo == gpuhash 8 workers (forced)
EXPLAIN (ANALYZE) :q;
RESET gpuhash.force_join;
SET gpuhash.enabled = off;
SET max_parallel_workers_per_gather = 0;
\echo == native serial
EXPLAIN (ANALYZE) :q;
SQL
    ;;
esac
