#!/bin/bash
# bench/plan_depth.sh - planning time of deep left-deep parallel joins (issue
# 35's F5): for each size N of SIZES, EXPLAIN (SUMMARY) of
#   SELECT count(*) FROM t1 JOIN t2 ON t1.a = t2.b ... JOIN tN ON ...
# with join_collapse_limit = 1 and parallel plans made cheap, RUNS times
# with gpuhash.enabled on and RUNS times off (where gpuhash is loaded), each
# setting in one session after a first EXPLAIN that warms its caches, and
# prints the median of EXPLAIN's Planning Time.  Runs in the database that
# PGHOST, PGPORT, PGUSER and PGDATABASE name; makes t1..t100 (ten rows each)
# there when t100 is missing.
#
#   SIZES="20 22 100" RUNS=5 bench/plan_depth.sh
set -euo pipefail
SIZES=${SIZES:-"20 22 100"}
RUNS=${RUNS:-5}

psql -qAtX -v ON_ERROR_STOP=1 <<'SQL'
DO $$ BEGIN
  IF to_regclass('t100') IS NULL THEN
    FOR i IN 1..100 LOOP
      EXECUTE format('CREATE TABLE IF NOT EXISTS t%s(a int, b int)', i);
      EXECUTE format('INSERT INTO t%s SELECT g, g FROM generate_series(1,10) g', i);
    END LOOP;
  END IF;
END $$;
ANALYZE;
SQL

preload=$(psql -qAtX -c "SHOW shared_preload_libraries")
loaded=$(psql -qAtX -c "SELECT count(*) FROM pg_settings WHERE name = 'gpuhash.enabled'")
echo "shared_preload_libraries='$preload' runs=$RUNS"

# median of the numbers on stdin
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

for n in $SIZES; do
  q="SELECT count(*) FROM t1"
  for ((i = 2; i <= n; i++)); do q+=" JOIN t$i ON t$((i - 1)).a = t$i.b"; done
  modes=(on off)
  [ "$loaded" = 0 ] && modes=(none)
  for mode in "${modes[@]}"; do
    set_mode=""
    [ "$mode" != none ] && set_mode="SET gpuhash.enabled = $mode;"
    # one session: a first EXPLAIN warms its caches, then RUNS timed ones
    times=$( { echo "SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;
SET join_collapse_limit = 1; $set_mode"
      for ((r = 0; r <= RUNS; r++)); do echo "EXPLAIN (SUMMARY) $q;"; done; } |
      psql -qAtX -v ON_ERROR_STOP=1 | sed -n 's/^Planning Time: \([0-9.]*\) ms$/\1/p' | tail -n +2)
    printf '%4s tables  enabled=%-4s  median %10.3f ms  (runs: %s)\n' "$n" "$mode" \
      "$(echo "$times" | median)" "$(echo $times)"
  done
done
