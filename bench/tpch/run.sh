#!/bin/bash
# bench/tpch/run.sh - the 22 TPC-H queries on PostgreSQL: native (gpuhash
# off) against gpuhash (the planner's choice with gpuhash on), same session
# settings otherwise.  Writes a markdown table to stdout; logs (plans, every
# timing, results) go to the output directory.  Needs build.sh's .dbgen/ and,
# for the gpuhash variant, gpuhash built and installed (make && make install).
#
#   bench/tpch/run.sh [options]
#     --scale S          TPC-H scale factor (default 1; see load.sh)
#     --repeats N        timed runs per query and variant, after one warm-up
#                        (default 3)
#     --short-repeats M  M timed runs (M > N) where the warm-up took less than
#     --short-below S    S seconds: more runs of the short queries, whose one
#                        run moves most from run to run, for little time
#     --workers W        max_parallel_workers_per_gather of every variant
#                        (default 16; 0 = serial)
#     --queries "..."    query numbers (default "1 2 ... 22")
#     --variants "..."   subset of: native native-wide gpuhash (default:
#                        native gpuhash).  native-wide is native with
#                        min_parallel_table_scan_size and
#                        min_parallel_index_scan_size 0, so that PostgreSQL
#                        gives each parallel scan as many workers as its size
#                        allows up to --workers (13 for scale 10's lineitem,
#                        against 7 by default): how much of gpuhash's gain
#                        its wider Gathers alone would give
#     --device D         gpuhash.device of the gpuhash variant: auto, gpu or
#                        cpu (default auto)
#     --work-mem M       work_mem of every variant (default: not set, i.e.
#                        PostgreSQL's default of 4MB, as a stock server runs)
#     --timeout SEC      statement_timeout per statement (default 0: none)
#     --decorrelate      Q17 and Q20 in their decorrelated forms (queries.sh
#                        --decorrelate), marked as such in the table
#     --extra DIR        after the TPC-H queries, every DIR/NAME.sql (queries
#                        of this project's own over the TPC-H tables, e.g.
#                        bench/tpch/extra), run and checked the same way,
#                        shown as "NAME (not TPC-H)" and left out of the
#                        geometric mean; --queries "" runs them alone
#     --explain-timing   the logged EXPLAIN with every node's time and VERBOSE
#                        (EXPLAIN (ANALYZE, VERBOSE)), to see where a query's
#                        time goes; its run is not one of the timed ones
#                        (gpuhash's device times show only with TIMING)
#     --out DIR          logs and results (default bench/tpch/out-<date>)
#     --conf "LINES"     extra postgresql.conf lines (newline-separated); with
#                        --reuse they are appended and the cluster restarted
#     --datadir DIR      cluster directory to create (default: a temporary one);
#                        with --keep the cluster and data stay for another run
#     --keep             leave the cluster running and its data in place
#     --reuse DIR        use the cluster left in DIR by --keep (data of the same
#                        scale is not loaded again)
#     --load-only        load the data (with --keep --datadir) and stop
#     --jobs J           dbgen processes and load sessions (default: cores)
#     --tbl-dir DIR      where dbgen writes (default: a temporary folder)
#     --keep-tbl         keep dbgen's .tbl files after the load
#   BENCH_SHARED_BUFFERS (environment) shared_buffers of the cluster it starts
#                        (default: a quarter of the memory, at most 16 GB)
#
# For each query and variant, one new session: the settings, one warm-up run,
# --repeats timed runs (psql's \timing; Q15's time is the sum of its three
# statements), then one EXPLAIN (ANALYZE, TIMING OFF) for the log (for
# gpuhash with the DEBUG2 account of each GpuHashAgg after the plan).  Every run
# of a variant must return the same text as its warm-up (else INCONSISTENT;
# "(order of rows)" when only the order of rows differs, which only ties of
# the ORDER BY can cause),
# and every variant the same text as the first variant run (else "differs",
# with a diff in the output directory); either makes the script exit 1, as
# does a failed query.  A query stopped by --timeout shows as "timeout" and
# does not change the exit status.  The speed-up is native's median over
# gpuhash's; the geometric mean is over the queries that ran on both.
#
# Run as root (psql and the cluster run as the cluster user, see test/lib.sh)
# or as a user that can run initdb.  On a GPU host without PostgreSQL, source
# .gpuhost/pg.sh first (see ../shared/gpuhost/README.md).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../test/lib.sh"
. "$here/../lib.sh"

scale=1 repeats=3 workers=16 queries="$(seq -s ' ' 1 22)" variants="native gpuhash" device=auto
work_mem="" timeout=0 out="" short_repeats=0 short_below=0"" extra_conf="" datadir="" keep=0 explain_opts="analyze, timing off" reuse="" load_only=0 jobs=$(nproc)
tbl_dir="" keep_tbl=0 decorrelate="" extra_dir="" extras=""
while [ $# -gt 0 ]; do
  case $1 in
    --scale) scale=$2; shift ;;
    --repeats) repeats=$2; shift ;;
    --short-repeats) short_repeats=$2; shift ;;
    --short-below) short_below=$2; shift ;;
    --workers) workers=$2; shift ;;
    --queries) queries=$2; shift ;;
    --variants) variants=$2; shift ;;
    --device) device=$2; shift ;;
    --work-mem) work_mem=$2; shift ;;
    --timeout) timeout=$2; shift ;;
    --out) out=$2; shift ;;
    --conf) extra_conf=$2; shift ;;
    --datadir) datadir=$2; shift ;;
    --keep) keep=1 ;;
    --explain-timing) explain_opts="analyze, verbose" ;;
    --decorrelate) decorrelate=--decorrelate ;;
    --extra) extra_dir=$2; shift ;;
    --reuse) reuse=$2; shift ;;
    --load-only) load_only=1 ;;
    --jobs) jobs=$2; shift ;;
    --tbl-dir) tbl_dir=$2; shift ;;
    --keep-tbl) keep_tbl=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
case $device in auto|gpu|cpu) ;; *) echo "--device is auto, gpu or cpu" >&2; exit 2 ;; esac
[ "$repeats" -ge 1 ] || { echo "--repeats must be at least 1" >&2; exit 2; }
if [ "$short_repeats" -gt 0 ]; then
  [ "$short_repeats" -gt "$repeats" ] || { echo "--short-repeats must be more than --repeats" >&2; exit 2; }
  awk -v s="$short_below" 'BEGIN { exit !(s + 0 > 0) }' || { echo "--short-repeats needs --short-below SECONDS" >&2; exit 2; }
fi
for v in $variants; do
  case $v in native|native-wide|gpuhash) ;; *) echo "unknown variant $v (native, native-wide, gpuhash)" >&2; exit 2 ;; esac
done
for q in $queries; do
  case $q in [1-9]|1[0-9]|2[0-2]) ;; *) echo "no TPC-H query $q" >&2; exit 2 ;; esac
done
if [ -n "$extra_dir" ]; then
  for f in "$extra_dir"/*.sql; do
    [ -f "$f" ] || { echo "--extra $extra_dir: no .sql file there" >&2; exit 2; }
    x=$(basename "$f" .sql)
    case $x in [0-9]*|*[!A-Za-z0-9_]*) echo "--extra: $x.sql: a name of letters, digits and _ that starts with a letter" >&2; exit 2 ;; esac
    extras="$extras $x"
  done
fi
[ -n "$queries$extras" ] || { echo "no query to run" >&2; exit 2; }
if [ ! -x "$here/.dbgen/qgen" ]; then
  echo "bench/tpch/.dbgen not built: running build.sh" >&2
  "$here/build.sh" >&2 || exit 1
fi
out=${out:-$here/out-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out/plans" "$out/results"
out=$(cd "$out" && pwd)
log=$out/bench.log
: >"$log"
say() { echo "$*" >&2; echo "$*" >>"$log"; }
with_gpuhash=0 both=0 wide=0
case " $variants " in *" gpuhash "*) with_gpuhash=1 ;; esac
case " $variants " in *" native "*) [ "$with_gpuhash" -eq 1 ] && both=1 ;; esac
case " $variants " in *" native-wide "*) [ "$with_gpuhash" -eq 1 ] && wide=1 ;; esac

# ---------------------------------------------------------------- cluster
# max_parallel_workers_per_gather is set per session; the pool is large
# enough for any --workers up to 32.  gpuhash is preloaded wherever it is
# installed, so that native numbers are always taken with the library
# loaded and off; where it is not, native runs still work.
preload=1
if [ -z "$reuse" ] && [ ! -f "$(pg_config --pkglibdir)/gpuhash.so" ]; then
  [ "$with_gpuhash" -eq 1 ] && { echo "gpuhash is not installed (make && make install), or run --variants native" >&2; exit 1; }
  preload=0
fi
bench_cluster "$reuse" "$datadir" \
  "$( [ "$preload" -eq 1 ] && echo "gpuhash.device = $device" || echo "shared_preload_libraries = ''")" \
  "$extra_conf" "$log"
work=$(gh_tmpdir)
cleanup() {
  rm -rf "$work"
  bench_cluster_done "$keep" "$reuse"
}
trap cleanup EXIT

psqlq() { gh_as_pg psql -X -q -v ON_ERROR_STOP=1 "$@"; }
if [ "$with_gpuhash" -eq 1 ] && ! psqlq -c "CREATE EXTENSION IF NOT EXISTS gpuhash" >>"$log" 2>&1; then
  say "CREATE EXTENSION gpuhash failed (see $log)"; exit 1
fi

# ---------------------------------------------------------------- data
have=$(psqlq -At -c "SELECT scale FROM tpch_meta WHERE done" 2>/dev/null || true)
if [ -n "$have" ] && awk -v a="$have" -v b="$scale" 'BEGIN { exit !(a == b) }'; then
  say "data of scale $scale already there"
else
  say "loading scale $scale with $jobs jobs"
  largs=(--scale "$scale" --jobs "$jobs")
  [ -n "$tbl_dir" ] && largs+=(--tbl-dir "$tbl_dir")
  [ "$keep_tbl" -eq 1 ] && largs+=(--keep-tbl)
  if ! "$here/load.sh" "${largs[@]}" 2>&1 | tee -a "$log" >&2; then
    say "load failed (see $log)"; exit 1
  fi
fi
[ "$load_only" -eq 1 ] && exit 0
psqlq -c "SELECT relname, reltuples::bigint AS rows, pg_size_pretty(pg_total_relation_size(oid)) AS size
            FROM pg_class WHERE relname IN ('region','nation','part','supplier','partsupp','customer','orders','lineitem')
           ORDER BY 1" >>"$log" 2>&1

# the queries, as qgen writes them for this scale; psql (the cluster user) reads them
mkdir -p "$work/q"
[ -z "$queries" ] || "$here/queries.sh" --scale "$scale" $decorrelate "$work/q" $queries
for x in $extras; do cp "$extra_dir/$x.sql" "$work/q/$x.sql"; done
for q in $queries $extras; do
  # the EXPLAIN form: the statement that returns rows (Q15: the select
  # between its create view and drop view) under EXPLAIN (ANALYZE, TIMING OFF),
  # or (ANALYZE, VERBOSE) with --explain-timing
  awk -v opts="$explain_opts" 'start && /^[[:space:]]*select/ { print "explain (" opts ")" }
       /[^[:space:]]/ && !/^[[:space:]]*--/ { start = 0 }
       { print }
       /;[[:space:]]*$/ { start = 1 }
       BEGIN { start = 1 }' "$work/q/$q.sql" >"$work/q/$q.explain.sql"
  cp "$work/q/$q.sql" "$out/results/q$q.sql"
done
chmod -R a+rX "$work"

# ---------------------------------------------------------------- runs
# settings of a variant: the same for both but gpuhash.enabled (and the
# device that gpuhash uses)
settings() {
  local kind=$1
  echo "SET max_parallel_workers_per_gather = $workers;"
  [ -n "$work_mem" ] && echo "SET work_mem = '$work_mem';"
  echo "SET statement_timeout = '${timeout}s';"
  if [ "$kind" = native ] || [ "$kind" = native-wide ]; then
    echo "SET gpuhash.enabled = off;"
    if [ "$kind" = native-wide ]; then
      echo "SET min_parallel_table_scan_size = 0;"
      echo "SET min_parallel_index_scan_size = 0;"
    fi
  else
    echo "SET gpuhash.enabled = on;"
    echo "SET gpuhash.device = $device;"
  fi
  return 0
}

# run_variant QUERY KIND: prints "median min first gpuhashjoins workers rows" or
# "FAIL why"; the result text of run k is in $work/res.QUERY.KIND.k
run_variant() {
  local q=$1 kind=$2 f="$work/s.sql" o="$work/s.out" k
  local views
  views=$(sed -nE 's/^[[:space:]]*create view ([a-z0-9_]+).*/\1/Ip' "$work/q/$q.sql")
  {
    settings "$kind"
    # a view left by a run stopped in the middle (Q15)
    for v in $views; do echo "DROP VIEW IF EXISTS $v;"; done
    echo "\\pset tuples_only on"
    echo "\\pset format unaligned"
    echo "\\pset null '(null)'"
    # the warm-up's wall time decides whether the short runs happen
    echo "SELECT extract(epoch FROM clock_timestamp()) AS gh_t0 \\gset"
    echo "\\timing on"
    for k in $(seq 0 $((short_repeats > repeats ? short_repeats : repeats))); do
      if [ "$k" -eq $((repeats + 1)) ]; then
        echo "\\timing off"
        echo "\\if :gh_short"
        echo "\\timing on"
      fi
      echo "\\echo RUN $k"         # run 0: the warm-up, a new session's first
      echo "\\o $work/res.$q.$kind.$k"
      echo "\\i $work/q/$q.sql"
      echo "\\o"
      if [ "$k" -eq 0 ]; then
        echo "\\timing off"
        echo "SELECT extract(epoch FROM clock_timestamp()) - :gh_t0 < ${short_below:-0} AS gh_short \\gset"
        echo "\\timing on"
      fi
    done
    [ "$short_repeats" -gt "$repeats" ] && echo "\\endif"
    echo "\\timing off"
    echo "\\echo PLAN"
    echo "\\pset tuples_only off"
    echo "\\pset format aligned"
    # gpuhash's DEBUG2 account of each GpuHashAgg (where its time went)
    [ "$kind" = gpuhash ] && echo "SET client_min_messages = debug2;"
    echo "\\o $work/plan.$q.$kind"
    echo "\\i $work/q/$q.explain.sql"
    echo "\\o"
    [ "$kind" = gpuhash ] && echo "RESET client_min_messages;"
  } >"$f"
  chmod a+r "$f"
  rm -f "$work"/res."$q"."$kind".* "$work/plan.$q.$kind"
  if ! psqlq -f "$f" >"$o" 2>&1; then
    { echo "### Q$q / $kind: FAILED"; cat "$o"; } >>"$log"
    if grep -q 'canceling statement due to statement timeout' "$o"; then echo "FAIL timeout"; else echo "FAIL failed"; fi
    return 0
  fi
  cp "$work/plan.$q.$kind" "$out/plans/q$q.$kind.txt"
  awk '/^PLAN/ { p = 1 } p && /DEBUG: +gpuhash_aggregate/' "$o" >>"$out/plans/q$q.$kind.txt"
  cp "$work/res.$q.$kind.0" "$out/results/q$q.$kind.txt"
  # per run: the sum of its statements' times (only Q15 has more than one)
  local times first med min
  times=$(awk '/^RUN / { r = $2 } /^PLAN/ { r = -1 } /^Time:/ && r >= 0 { t[r] += $2 / 1000 }
               END { for (k in t) print k, t[k] }' "$o" | sort -n)
  {
    echo "### Q$q / $kind"
    echo "run seconds (run 0: warm-up)"; echo "$times"
  } >>"$log"
  first=$(echo "$times" | awk '$1 == 0 { print $2 }')
  local sorted
  sorted=$(echo "$times" | awk '$1 > 0 { print $2 }' | sort -g)
  min=$(echo "$sorted" | head -1)
  med=$(echo "$sorted" | awk '{a[NR] = $1} END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }')
  # 1: every run returned the warm-up's text; 2: the same rows, some run in
  # another order (ties of ORDER BY); 0: other rows
  local consistent=1 runs
  runs=$(echo "$times" | awk '$1 > 0' | wc -l)
  for k in $(seq 1 "$runs"); do
    cmp -s "$work/res.$q.$kind.0" "$work/res.$q.$kind.$k" && continue
    if [ "$consistent" -ne 0 ] &&
       cmp -s <(sort "$work/res.$q.$kind.0") <(sort "$work/res.$q.$kind.$k"); then
      consistent=2
    else
      consistent=0
    fi
  done
  if [ "$consistent" -ne 1 ]; then
    for k in $(seq 1 "$runs"); do cp "$work/res.$q.$kind.$k" "$out/results/q$q.$kind.run$k.txt"; done
  fi
  local gj wl rows
  gj=$(grep -c 'GpuHashJoin' "$work/plan.$q.$kind" || true)/$(grep -c 'GpuHashAgg)' "$work/plan.$q.$kind" || true)
  wl=$(grep -oE 'Workers Launched: [0-9]+' "$work/plan.$q.$kind" | awk '$3 > m { m = $3 } END { print m + 0 }')
  rows=$(wc -l <"$work/res.$q.$kind.0")
  echo "$med $min $first $gj $wl $rows $consistent"
}

fmt() { awk -v x="$1" 'BEGIN { printf "%.3f", x }'; }

declare -A MED
status=0

# speedup QUERY REF: REF's median over gpuhash's for QUERY ("" where either
# did not run); a TPC-H query's ratio (a number, not an --extra query's name)
# is kept in $work/sp.REF for the geometric mean
speedup() {
  local q=$1 ref=$2 sp=""
  if [ -n "${MED[$q/$ref]:-}" ] && [ -n "${MED[$q/gpuhash]:-}" ]; then
    sp=$(awk -v n="${MED[$q/$ref]}" -v g="${MED[$q/gpuhash]}" 'BEGIN { if (n > 0 && g > 0) printf "%.6f", n / g }')
    case $q in [0-9]*) [ -n "$sp" ] && echo "$sp" >>"$work/sp.$ref" ;; esac
  fi
  [ -n "$sp" ] && awk -v x="$sp" 'BEGIN { printf "%.2fx", x }'
  return 0
}
# the table: one row per query, median and min of each variant
hdr="| query |" sep="|---|"
for v in $variants; do hdr="$hdr $v median s | $v min s |"; sep="$sep---|---|"; done
if [ "$with_gpuhash" -eq 1 ]; then hdr="$hdr GpuHashJoin / GpuHashAgg nodes |"; sep="$sep---|"; fi
if [ "$both" -eq 1 ]; then hdr="$hdr speed-up |"; sep="$sep---|"; fi
if [ "$wide" -eq 1 ]; then hdr="$hdr speed-up over native-wide |"; sep="$sep---|"; fi
echo "$hdr rows | max workers launched | result |"
echo "$sep---|---|---|"
for q in $queries $extras; do
  say "== Q$q"
  case $q in [0-9]*) label=Q$q ;; *) label="$q (not TPC-H)" ;; esac
  [ -n "$decorrelate" ] && { [ "$q" = 17 ] || [ "$q" = 20 ]; } && label="Q$q (decorrelated)"
  row="| $label |" ref="" ok="" gjs="" rows="" wls=""
  for kind in $variants; do
    r=$(run_variant "$q" "$kind")
    case $r in
      FAIL*)
        why=${r#FAIL }
        row="$row $why | |"
        [ "$why" = timeout ] || status=1
        ok="${ok:+$ok, }$kind $why"
        say "Q$q $kind: $why"
        continue ;;
    esac
    read -r med min first gj wl nrows consistent <<<"$r"
    MED[$q/$kind]=$med
    row="$row $(fmt "$med") | $(fmt "$min") |"
    [ "$kind" = gpuhash ] && gjs=$gj
    rows=${rows:-$nrows}
    wls="${wls:+$wls/}$wl"
    say "Q$q $kind: median $med s, min $min s, first $first s, GpuHashJoin/GpuHashAgg nodes $gj, workers launched $wl, $nrows rows"
    if [ "$consistent" -eq 0 ]; then
      ok="${ok:+$ok, }$kind INCONSISTENT"; status=1
    elif [ "$consistent" -eq 2 ]; then
      ok="${ok:+$ok, }$kind INCONSISTENT (order of rows)"; status=1
    fi
    if [ -z "$ref" ]; then
      ref=$kind
    elif ! cmp -s "$work/res.$q.$ref.0" "$work/res.$q.$kind.0"; then
      # the same rows in another order can only come from ties of ORDER BY
      if cmp -s <(sort "$work/res.$q.$ref.0") <(sort "$work/res.$q.$kind.0"); then
        ok="${ok:+$ok, }differs (order of rows)"
      else
        ok="${ok:+$ok, }differs"
      fi
      diff "$work/res.$q.$ref.0" "$work/res.$q.$kind.0" >"$out/results/q$q.diff" || true
      say "Q$q: $kind's result differs from $ref's: $out/results/q$q.diff"
      status=1
    fi
  done
  [ "$with_gpuhash" -eq 1 ] && row="$row ${gjs} |"
  [ "$both" -eq 1 ] && row="$row $(speedup "$q" native) |"
  [ "$wide" -eq 1 ] && row="$row $(speedup "$q" native-wide) |"
  echo "$row $rows | $wls | ${ok:-same} |"
done
echo
for ref in native native-wide; do
  [ -s "$work/sp.$ref" ] || continue
  n=$(wc -l <"$work/sp.$ref")
  gm=$(awk '{ s += log($1) } END { printf "%.2fx", exp(s / NR) }' "$work/sp.$ref")
  if [ "$ref" = native ]; then
    echo "Geometric mean of the speed-ups (native median / gpuhash median) over the $n queries that ran on both: $gm."
  else
    echo "Geometric mean of the speed-ups over native-wide (native-wide median / gpuhash median; native-wide: min_parallel_table_scan_size and min_parallel_index_scan_size 0) over the $n queries that ran on both: $gm."
  fi
done
wm=${work_mem:-"PostgreSQL's default (4MB)"}
echo "TPC-H scale $scale, queries from qgen -d (the default substitution parameters); max_parallel_workers_per_gather $workers; work_mem $wm; $repeats timed runs$( [ "$short_repeats" -gt 0 ] && echo " ($short_repeats where the warm-up took under $short_below s)") after one warm-up per query and variant, median and min in seconds$( [ "$with_gpuhash" -eq 1 ] && echo "; gpuhash.device $device")."
[ -n "$decorrelate" ] && echo "Q17 and Q20 ran in their decorrelated forms (bench/tpch/queries.sh --decorrelate: the correlated subquery as a GROUP BY of lineitem joined on its correlation columns; same rows)."
echo "Not a TPC-H result: no refresh functions, no throughput test, not audited. Plans (EXPLAIN ANALYZE of one more run), results and every timing: $out"
exit $status
