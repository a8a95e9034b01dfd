#!/bin/bash
# bench/h2o/run.sh - group-by and join queries shaped like the H2O.ai
# db-benchmark (the groupby and join tasks of its "G1" and "J1" data),
# native against gpuhash as the planner chooses, same data, same settings,
# one cluster.  Markdown on stdout, progress on stderr.
#
#   bench/h2o/run.sh [--rows N] [--groups K] [--part groupby|join|all]
#                    [--queries "q1 q3 j2"] [--repeats R] [--workers W]
#                    [--device gpu|cpu] [--keep] [--reuse DIR] [--plans DIR]
#                    [--gpuhash-set "SET ...;"]
#
# Defaults: 5*10^7 rows, K = 100, all parts, every query, 3 timed runs after
# a warm-up, 16 workers, device gpu.  Needs gpuhash built and installed and
# PostgreSQL's programs on PATH (on a GPU host: source .gpuhost/pg.sh).
# --keep leaves the cluster and its data for a later --reuse DIR (a second
# call on a still warm GPU host).  With --device cpu the planner plans with
# the GPU's cost model (gpuhash.cost_as_gpu) and the CPU twin runs the plans:
# a check of the script and of the rows, not a measurement.  --plans DIR
# keeps each query's last plans, EXPLAIN (ANALYZE, VERBOSE), as
# DIR/QUERY-native.txt and DIR/QUERY-gpuhash.txt.  --gpuhash-set SQL runs
# SQL (e.g. "SET gpuhash.force_agg = on;") in the gpuhash side's sessions
# only: gpuhash's plans where the planner would not choose them, to
# measure them; the table's header says so.
#
# The data, written by SQL here (the benchmark's own generator is R), with
# its columns and cardinalities:
#   h2o_g  N rows: id1, id2 text of K values ("id001"), id3 text of N/K values
#          ("id0000000001"); id4, id5 int of K values, id6 int of N/K values;
#          v1 int 1..5, v2 int 1..15, v3 float8 in [0, 100) with 6 decimals.
#   h2o_x  N rows, h2o_small N/10^6 rows, h2o_medium N/10^3 rows, h2o_big N
#          rows: int keys id1 (small's), id2 (medium's), id3 (big's), and the
#          same keys as text id4, id5, id6 ("id" || key); x's keys miss their
#          table one time in ten; v1 (x), v2 (the others) float8.
# The queries (the benchmark's numbering; its result tables become one
# aggregate row or a checksum here, so that a run times the query, not the
# client):
#   q1  sum(v1) by id1                 q6  median(v3), stddev(v3) by id4, id5
#   q2  sum(v1) by id1, id2            q7  max(v1) - min(v2) by id3
#   q3  sum(v1), avg(v3) by id3        q8  the two largest v3 by id6
#   q4  avg(v1, v2, v3) by id4         q9  corr(v1, v2)^2 by id2, id4
#   q5  sum(v1, v2, v3) by id6         q10 sum(v3), count(*) by id1..id6
#   j1  x JOIN small ON id1 (int)      j4  x JOIN medium ON id5 (text)
#   j2  x JOIN medium ON id2 (int)     j5  x JOIN big ON id3 (int)
#   j3  x LEFT JOIN medium ON id2
# Each query is timed natively (gpuhash.enabled = off) and with gpuhash as
# the planner chooses (its default settings), EXPLAIN ANALYZE's Execution
# Time, medians in one session (see run below); the table says whether the plan has a GpuHashAgg or
# GpuHashJoin and whether the rows are the same: every row of one side
# pairs with one of the other, equal but for decimal numbers, which must
# agree to 9 significant digits (float8 sums depend on the order of the
# additions, natively too).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../test/lib.sh"
. "$here/../lib.sh"

rows=50000000 groups=100 part=all queries="" repeats=3 workers=16 device=gpu keep=0 reuse="" plans=""
while [ $# -gt 0 ]; do
  case $1 in
    --rows) rows=$2; shift 2 ;;
    --groups) groups=$2; shift 2 ;;
    --part) part=$2; shift 2 ;;
    --queries) queries=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --reuse) reuse=$2; shift 2 ;;
    --plans) plans=$2; shift 2 ;;
    --gpuhash-set) gset=$2; shift 2 ;;
    *) echo "usage: bench/h2o/run.sh [--rows N] [--groups K] [--part groupby|join|all] [--queries Q] [--repeats R] [--workers W] [--device gpu|cpu] [--keep] [--reuse DIR] [--plans DIR] [--gpuhash-set SQL]" >&2; exit 2 ;;
  esac
done
t0=$(date +%s)
say() { echo "[$(( $(date +%s) - t0 ))s] $*" >&2; }
log=$(mktemp)
planf=$(mktemp)
chmod a+r "$planf"
conf="gpuhash.device = $device
max_parallel_workers_per_gather = $workers"
[ "$device" = cpu ] && conf="$conf
gpuhash.cost_as_gpu = on"
bench_cluster "$reuse" "" "$conf" "" "$log"
trap 'bench_cluster_done "$keep" "$reuse"; rm -rf "$log" "$planf" "${pdir:-}"' EXIT
q() { gh_as_pg psql -X -qAt -v ON_ERROR_STOP=1 "$@"; }

# --- data ---------------------------------------------------------------
# load TABLE SQL [N]: SQL's rows into TABLE in parallel jobs, each over its
# part of 1..N (default rows) as "@G" (generate_series(lo, hi) g), after a
# setseed of its own
jobs=$(( $(nproc) < 16 ? $(nproc) : 16 ))
load() {
  local table=$1 sql=$2 n=${3:-$rows} chunk pids=() j lo hi
  chunk=$(( (n + jobs - 1) / jobs ))
  for j in $(seq 0 $((jobs - 1))); do
    lo=$(( j * chunk + 1 )); hi=$(( (j + 1) * chunk )); [ $hi -gt "$n" ] && hi=$n
    [ $lo -gt $hi ] && continue
    q -c "SELECT setseed($j / 64.0)" \
      -c "INSERT INTO $table ${sql//@G/generate_series($lo::int8, $hi::int8) g}" >/dev/null &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
}
has() { q -c "SELECT to_regclass('$1') IS NOT NULL"; }
want() { [ "$part" = all ] || [ "$part" = "$1" ]; }

q -c "CREATE EXTENSION IF NOT EXISTS gpuhash"
if want groupby && [ "$(has h2o_g)" = f ]; then
  say "loading h2o_g: $rows rows, K = $groups"
  nk=$(( rows / groups > 0 ? rows / groups : 1 ))
  q -c "CREATE UNLOGGED TABLE h2o_g (id1 text, id2 text, id3 text, id4 int, id5 int, id6 int,
        v1 int, v2 int, v3 float8)"
  load h2o_g "SELECT 'id' || lpad((1 + floor(random() * $groups))::text, 3, '0'),
              'id' || lpad((1 + floor(random() * $groups))::text, 3, '0'),
              'id' || lpad((1 + floor(random() * $nk))::text, 10, '0'),
              1 + floor(random() * $groups)::int, 1 + floor(random() * $groups)::int,
              1 + floor(random() * $nk)::int,
              1 + floor(random() * 5)::int, 1 + floor(random() * 15)::int,
              round((random() * 100)::numeric, 6)::float8 FROM @G"
  q -c "VACUUM (FREEZE, ANALYZE) h2o_g" -c "ALTER TABLE h2o_g SET (parallel_workers = $workers)"
fi
if want join && [ "$(has h2o_x)" = f ]; then
  ns=$(( rows / 1000000 > 10 ? rows / 1000000 : 10 ))
  nm=$(( rows / 1000 > 10 ? rows / 1000 : 10 ))
  say "loading h2o_x, h2o_big: $rows rows each; h2o_medium $nm, h2o_small $ns"
  q -c "CREATE UNLOGGED TABLE h2o_small (id1 int, id4 text, v2 float8)" \
    -c "CREATE UNLOGGED TABLE h2o_medium (id1 int, id2 int, id4 text, id5 text, v2 float8)" \
    -c "CREATE UNLOGGED TABLE h2o_big (id1 int, id2 int, id3 int, id4 text, id5 text, id6 text, v2 float8)" \
    -c "CREATE UNLOGGED TABLE h2o_x (id1 int, id2 int, id3 int, id4 text, id5 text, id6 text, v1 float8)"
  load h2o_small "SELECT g, 'id' || g, round((random() * 100)::numeric, 6)::float8 FROM @G" "$ns"
  load h2o_medium "SELECT 1 + (g % $ns), g, 'id' || (1 + (g % $ns)), 'id' || g,
                   round((random() * 100)::numeric, 6)::float8 FROM @G" "$nm"
  load h2o_big "SELECT 1 + (g % $ns), 1 + (g % $nm), g, 'id' || (1 + (g % $ns)), 'id' || (1 + (g % $nm)),
                'id' || g, round((random() * 100)::numeric, 6)::float8 FROM @G"
  # x's keys: one in ten past its table's (no match), as the benchmark's
  load h2o_x "SELECT k1, k2, k3, 'id' || k1, 'id' || k2, 'id' || k3, round((random() * 100)::numeric, 6)::float8
              FROM (SELECT 1 + floor(random() * $ns * 1.1)::int AS k1,
                           1 + floor(random() * $nm * 1.1)::int AS k2,
                           1 + floor(random() * $rows * 1.1)::int AS k3
                      FROM @G) k"
  for t in h2o_small h2o_medium h2o_big h2o_x; do
    q -c "VACUUM (FREEZE, ANALYZE) $t" -c "ALTER TABLE $t SET (parallel_workers = $workers)"
  done
fi

# --- queries ------------------------------------------------------------
declare -A sql
sql[q1]="SELECT id1, sum(v1) AS v1 FROM h2o_g GROUP BY id1"
sql[q2]="SELECT id1, id2, sum(v1) AS v1 FROM h2o_g GROUP BY id1, id2"
sql[q3]="SELECT id3, sum(v1) AS v1, avg(v3) AS v3 FROM h2o_g GROUP BY id3"
sql[q4]="SELECT id4, avg(v1) AS v1, avg(v2) AS v2, avg(v3) AS v3 FROM h2o_g GROUP BY id4"
sql[q5]="SELECT id6, sum(v1) AS v1, sum(v2) AS v2, sum(v3) AS v3 FROM h2o_g GROUP BY id6"
sql[q6]="SELECT id4, id5, percentile_cont(0.5) WITHIN GROUP (ORDER BY v3) AS median_v3, stddev(v3) AS sd_v3
           FROM h2o_g GROUP BY id4, id5"
sql[q7]="SELECT id3, max(v1) - min(v2) AS range_v1_v2 FROM h2o_g GROUP BY id3"
sql[q8]="SELECT id6, v3 FROM (SELECT id6, v3, row_number() OVER (PARTITION BY id6 ORDER BY v3 DESC) AS r
           FROM h2o_g WHERE v3 IS NOT NULL) t WHERE r <= 2"
sql[q9]="SELECT id2, id4, power(corr(v1, v2), 2) AS r2 FROM h2o_g GROUP BY id2, id4"
sql[q10]="SELECT id1, id2, id3, id4, id5, id6, sum(v3) AS v3, count(*) AS count FROM h2o_g
            GROUP BY id1, id2, id3, id4, id5, id6"
sql[j1]="SELECT count(*) AS n, sum(x.v1) AS v1, sum(s.v2) AS v2 FROM h2o_x x JOIN h2o_small s ON x.id1 = s.id1"
sql[j2]="SELECT count(*) AS n, sum(x.v1) AS v1, sum(m.v2) AS v2 FROM h2o_x x JOIN h2o_medium m ON x.id2 = m.id2"
sql[j3]="SELECT count(*) AS n, count(m.id2) AS matched, sum(x.v1) AS v1, sum(m.v2) AS v2 FROM h2o_x x LEFT JOIN h2o_medium m ON x.id2 = m.id2"
sql[j4]="SELECT count(*) AS n, sum(x.v1) AS v1, sum(m.v2) AS v2 FROM h2o_x x JOIN h2o_medium m ON x.id5 = m.id5"
sql[j5]="SELECT count(*) AS n, sum(x.v1) AS v1, sum(b.v2) AS v2 FROM h2o_x x JOIN h2o_big b ON x.id3 = b.id3"
if [ -z "$queries" ]; then
  want groupby && queries="q1 q2 q3 q4 q5 q6 q7 q8 q9 q10"
  want join && queries="$queries j1 j2 j3 j4 j5"
fi

# The comparison: each side's rows into a temporary table, each row split
# into its text with every number taken out and those numbers as float8[];
# rows pair up by that text and their rank among equal texts (ordered by
# their numbers: the keys first) and must have the same numbers to 9
# significant digits.  Integers are numbers too: a float8 sum that is a
# whole number prints without a decimal point (4447), and one added in
# another order may not (4446.999999999999); on an H200 one group of
# 200,000 in q5 did that once.
q -c "CREATE OR REPLACE FUNCTION h2o_split(t text, OUT skel text, OUT f float8[]) LANGUAGE sql IMMUTABLE AS \$\$
        SELECT regexp_replace(t, '-?[0-9]+(\\.[0-9]+)?(e[-+][0-9]+)?', '#', 'g'),
               ARRAY(SELECT m[1]::float8 FROM regexp_matches(t, '(-?[0-9]+(?:\\.[0-9]+)?(?:e[-+][0-9]+)?)', 'g') m) \$\$" \
  -c "CREATE OR REPLACE FUNCTION h2o_close(a float8[], b float8[]) RETURNS bool LANGUAGE sql IMMUTABLE AS \$\$
        SELECT cardinality(a) = cardinality(b) AND
               coalesce(bool_and(abs(x - y) <= 1e-9 * greatest(abs(x), abs(y)) OR abs(x - y) < 1e-12), true)
          FROM unnest(a, b) u(x, y) \$\$"
# compare SQL: the number of native's and gpuhash's rows of SQL that do not pair up
compare() {
  q -c "$native" -c "CREATE TEMP TABLE h2o_rn AS $1" -c "RESET gpuhash.enabled" \
    -c "${gset:-SET gpuhash.enabled = on;}" -c "CREATE TEMP TABLE h2o_rg AS $1" \
    -c "WITH a AS (SELECT s.*, row_number() OVER (PARTITION BY s.skel ORDER BY s.f) AS k
                     FROM h2o_rn t, LATERAL h2o_split(t::text) s),
             b AS (SELECT s.*, row_number() OVER (PARTITION BY s.skel ORDER BY s.f) AS k
                     FROM h2o_rg t, LATERAL h2o_split(t::text) s)
        SELECT count(*) FROM a FULL JOIN b USING (skel, k)
         WHERE a.skel IS NULL OR b.skel IS NULL OR NOT h2o_close(a.f, b.f)"
}
# run SETTINGS SQL [NAME]: one session that runs SQL under EXPLAIN ANALYZE
# once as a warm-up and then REPEATS timed times, as an application with
# pooled connections would; prints the median Execution Time in ms and
# then the warm-up's, the first query of a new session (where a backend
# makes its CUDA context, about 150 ms on an H200), and keeps the last plan
# in the file $planf (and, with --plans, in $plans/NAME.txt)
explain="ANALYZE, COSTS OFF"
[ -n "$plans" ] && { explain="ANALYZE, VERBOSE, COSTS OFF"; mkdir -p "$plans"; }
pdir=$(mktemp -d)
chmod 777 "$pdir"
run() {
  local set=$1 s=$2 args=() i ts
  rm -f "$pdir"/p.*
  args=(-c "$set")
  for i in $(seq 0 "$repeats"); do
    args+=(-c "\\o $pdir/p.$i" -c "EXPLAIN ($explain) $s")
  done
  q "${args[@]}" >/dev/null
  cp "$pdir/p.$repeats" "$planf"
  [ -n "$plans" ] && [ -n "${3:-}" ] && cp "$planf" "$plans/$3.txt"
  ts=$(for i in $(seq 1 "$repeats"); do grep -o 'Execution Time: [0-9.]*' "$pdir/p.$i" | awk '{print $3}'; done |
       sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  echo "$ts $(grep -o 'Execution Time: [0-9.]*' "$pdir/p.0" | awk '{print $3}')"
}
native="SET gpuhash.enabled = off;"
echo "# bench/h2o: $rows rows, K = $groups, device $device, $workers workers, medians of $repeats"
[ -n "${gset:-}" ] && { echo; echo "gpuhash side's sessions ran \`$gset\` first."; }
echo
echo "Times: the median of $repeats runs in one session after a warm-up; \"first\": the warm-up, a new"
echo "session's first run of the query (gpuhash's includes its backend's CUDA context)."
echo
echo "| query | native ms | gpuhash ms | speed-up | first: native ms | first: gpuhash ms | GpuHashAgg / GpuHashJoin | rows |"
echo "|---|---|---|---|---|---|---|---|"
fail=0
for n in $queries; do
  [ -n "${sql[$n]:-}" ] || { echo "unknown query $n" >&2; exit 2; }
  say "$n"
  read -r tn fn <<<"$(run "$native" "${sql[$n]}" "$n-native")"
  read -r tg fg <<<"$(run "${gset:-SET gpuhash.enabled = on;}" "${sql[$n]}" "$n-gpuhash")"
  nodes="$(grep -c 'GpuHashAgg' "$planf" || true) / $(grep -c 'GpuHashJoin' "$planf" || true)"
  bad=$(compare "${sql[$n]}")
  same=same; [ "$bad" = 0 ] || { same="DIFFERENT ($bad rows)"; fail=1; }
  echo "| $n | $tn | $tg | $(awk -v a="$tn" -v b="$tg" 'BEGIN { printf "%.2fx", a / b }') | $fn | $fg | $nodes | $same |"
done
echo
say "done"
exit $fail
