#!/bin/bash
# bench/join/run.sh - the join benchmark: native PostgreSQL hash joins against
# GpuHashJoin, serial and parallel, on data from bench/join/gen.sql.  Writes a
# markdown table to stdout; logs (plans, every timing, results) go to the
# output directory.  Needs gpuhash built and installed (make && make install).
#
#   bench/join/run.sh [options]
#     --scale S          data scale: 1.0 = s 100M rows x r 10M rows (default 1.0)
#     --repeats N        timed runs per variant, after one warm-up (default 3)
#     --out DIR          logs and results (default bench/join/out-<date>)
#     --device D         gpuhash.device of the gpuhash variants: auto, gpu or cpu
#                        (default auto, the users' default: a join starts on the
#                        CPU twin while its process's CUDA context is made)
#     --workers "A B"    parallel worker counts (default "8 16")
#     --workloads "..."  subset of: int4 text twocol mult selective left star floor
#     --variants "..."   subset of: native gpuhash gpuhash-noagg (default: native
#                        gpuhash); gpuhash-noagg is gpuhash with
#                        gpuhash.enable_agg = off: the aggregate above the join
#                        stays PostgreSQL's, whatever GpuHashAgg's cost
#     --force-join       gpuhash variants also set gpuhash.force_join = on
#     --timeout SEC      statement_timeout per query (default 0: none)
#     --datadir DIR      cluster directory to create (default: a temporary one);
#                        with --keep the cluster and data stay for another run
#     --keep             leave the cluster running and its data in place
#     --gen-only         generate the data (with --keep --datadir) and stop
#     --no-serial        only the parallel variants (--workers)
#     --reuse DIR        use the cluster left in DIR by --keep (data of the same
#                        scale is not generated again)
#     --gen-jobs J       parallel sessions that generate s and fact (default: cores)
#     --conf "LINES"     extra postgresql.conf lines (newline-separated); with
#                        --reuse they are appended and the cluster restarted
#     --work-mem M       work_mem for every variant (default 1GB: native hash
#                        joins of the big sides stay in memory, as GpuHashJoin does)
#   BENCH_SHARED_BUFFERS (environment) shared_buffers of the cluster it starts
#                        (default: a quarter of the memory, at most 16 GB)
#
# Every variant must return the same result text as the first one run for
# its workload (the queries return aggregates); a difference is reported in
# the table (result column) and makes the script exit 1.
#
# Run as root (psql and the cluster run as the cluster user, see test/lib.sh)
# or as a user that can run initdb.  On a GPU host without PostgreSQL, source
# .gpuhost/pg.sh first (see ../shared/gpuhost/README.md).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../test/lib.sh"
. "$here/../lib.sh"

scale=1.0 repeats=3 out="" device=auto workers="8 16" workloads="" variants="native gpuhash"
force=0 timeout=0 datadir="" keep=0 gen_only=0 serial=1 reuse="" gen_jobs=$(nproc) extra_conf="" work_mem=1GB
while [ $# -gt 0 ]; do
  case $1 in
    --scale) scale=$2; shift ;;
    --repeats) repeats=$2; shift ;;
    --out) out=$2; shift ;;
    --device) device=$2; shift ;;
    --workers) workers=$2; shift ;;
    --workloads) workloads=$2; shift ;;
    --variants) variants=$2; shift ;;
    --force-join) force=1 ;;
    --timeout) timeout=$2; shift ;;
    --datadir) datadir=$2; shift ;;
    --keep) keep=1 ;;
    --gen-only) gen_only=1 ;;
    --no-serial) serial=0 ;;
    --reuse) reuse=$2; shift ;;
    --gen-jobs) gen_jobs=$2; shift ;;
    --conf) extra_conf=$2; shift ;;
    --work-mem) work_mem=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
case $device in auto|gpu|cpu) ;; *) echo "--device is auto, gpu or cpu" >&2; exit 2 ;; esac
[ "$repeats" -ge 1 ] || { echo "--repeats must be at least 1" >&2; exit 2; }
out=${out:-$here/out-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
log=$out/bench.log
: >"$log"
say() { echo "$*" >&2; echo "$*" >>"$log"; }

. "$here/workloads.sh"
workloads=${workloads:-$all_workloads}
for w in $workloads; do [ -n "${Q[$w]:-}" ] || { echo "unknown workload $w" >&2; exit 2; }; done

# ---------------------------------------------------------------- cluster
bench_cluster "$reuse" "$datadir" "max_parallel_workers_per_gather = 0
gpuhash.device = $device" "$extra_conf" "$log"
cleanup() { bench_cluster_done "$keep" "$reuse"; }
trap cleanup EXIT

psqlq() { gh_as_pg psql -X -q -v ON_ERROR_STOP=1 "$@"; }
psqlq -c "CREATE EXTENSION IF NOT EXISTS gpuhash" >>"$log" 2>&1
# gen.sql is read by the cluster user: give psql a readable copy
work=$(gh_tmpdir)
cp "$here/gen.sql" "$work/gen.sql"; chmod a+r "$work/gen.sql"

# ---------------------------------------------------------------- data
have=$(psqlq -At -c "SELECT scale FROM bench_meta WHERE done" 2>/dev/null || true)
if [ -n "$have" ] && awk -v a="$have" -v b="$scale" 'BEGIN { exit !(a == b) }'; then
  say "data of scale $scale already there"
else
  say "generating data at scale $scale with $gen_jobs sessions"
  t0=$(date +%s)
  psqlq -v scale="$scale" -v step=schema -f "$work/gen.sql" >>"$log" 2>&1
  s_rows=$(psqlq -At -c "SELECT s_rows FROM bench_meta")
  chunk=$(( (s_rows + gen_jobs - 1) / gen_jobs ))
  pids=()
  for j in $(seq 0 $((gen_jobs - 1))); do
    lo=$(( j * chunk + 1 )); hi=$(( (j + 1) * chunk ))
    [ "$lo" -le "$s_rows" ] || break
    psqlq -v scale="$scale" -v step=fill -v lo=$lo -v hi=$hi -f "$work/gen.sql" >>"$log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { say "data generation failed (see $log)"; exit 1; }; done
  psqlq -v scale="$scale" -v step=finish -f "$work/gen.sql" >>"$log" 2>&1
  say "data generated in $(( $(date +%s) - t0 )) s"
fi
[ "$gen_only" -eq 1 ] && exit 0
psqlq -c "SELECT relname, reltuples::bigint AS rows, pg_size_pretty(pg_relation_size(oid)) AS size
            FROM pg_class WHERE relname IN ('s','r','r_sel','s_mult','r_mult','fact','dim1','dim2','dim3','dim4')
           ORDER BY 1" >>"$log" 2>&1

# ---------------------------------------------------------------- runs
# settings of a variant: native|gpuhash and a worker count (0 = serial)
settings() {
  local kind=$1 nw=$2
  echo "SET max_parallel_workers_per_gather = $nw;"
  echo "SET work_mem = '$work_mem';"
  echo "SET statement_timeout = '${timeout}s';"
  if [ "$kind" = native ]; then
    echo "SET gpuhash.enabled = off;"
  else
    echo "SET gpuhash.enabled = on;"
    echo "SET gpuhash.device = $device;"
    [ "$force" -eq 1 ] && echo "SET gpuhash.force_join = on;"
    [ "$kind" = gpuhash-noagg ] && echo "SET gpuhash.enable_agg = off;"
  fi
  return 0
}

# run_variant WORKLOAD KIND NW: prints "median min first nodes workers result"
# (nodes: GpuHashJoin/GpuHashAgg), or FAIL
run_variant() {
  local w=$1 kind=$2 nw=$3 f="$work/q.sql" o="$work/q.out"
  local q="SELECT 'RESULT', string_agg(x::text, ';' ORDER BY x::text) FROM (${Q[$w]}) x"
  {
    settings "$kind" "$nw"
    echo "\\o $work/plan.out"
    echo "EXPLAIN (COSTS OFF) ${Q[$w]};"
    echo "\\o"
    echo "\\timing on"
    echo "$q;"                      # warm-up: a new session's first query
    for _ in $(seq 1 "$repeats"); do echo "$q;"; done
  } >"$f"
  chmod a+r "$f"
  if ! psqlq -At -f "$f" >"$o" 2>&1; then
    { echo "### $w / $kind / $nw workers: FAILED"; cat "$o"; } >>"$log"
    echo "FAIL"
    return 0
  fi
  {
    echo "### $w / $kind / $nw workers"
    echo '```'; cat "$work/plan.out"; echo '```'
    grep -E '^Time:' "$o"
  } >>"$log"
  local res gj times
  res=$(grep -m1 '^RESULT|' "$o" | cut -d'|' -f2-)
  if [ "$(grep '^RESULT|' "$o" | sort -u | wc -l)" -ne 1 ]; then res="INCONSISTENT:$res"; fi
  gj="$(grep -c 'GpuHashJoin' "$work/plan.out" || true)/$(grep -c 'GpuHashAgg)' "$work/plan.out" || true)"
  wp=$(grep -oE 'Workers Planned: [0-9]+' "$work/plan.out" | awk '{s += $3} END {print s + 0}')
  times=$(grep -E '^Time:' "$o" | tail -n "$repeats" | awk '{print $2 / 1000}' | sort -g)
  local first; first=$(grep -E '^Time:' "$o" | head -1 | awk '{print $2 / 1000}')
  local med min
  min=$(echo "$times" | head -1)
  med=$(echo "$times" | awk '{a[NR] = $1} END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }')
  echo "$med $min $first $gj $wp $res"
}

declare -A MED
status=0
echo "| workload | variant | workers planned | GpuHashJoin / GpuHashAgg nodes | median s | min s | first run s | speed-up vs native, same workers | result |"
echo "|---|---|---|---|---|---|---|---|---|"
for w in $workloads; do
  say "== $w: ${Q[$w]}"
  ref=""
  for nw in $( [ "$serial" -eq 1 ] && echo 0 ) $workers; do
    for kind in $variants; do
      [ "$w" = floor ] && [ "$kind" != native ] && continue
      r=$(run_variant "$w" "$kind" "$nw")
      label="$kind $( [ "$nw" -eq 0 ] && echo serial || echo "parallel $nw")"
      if [ "$r" = FAIL ]; then
        echo "| $w | $label | | | failed | | | | see log |"; status=1; continue
      fi
      read -r med min first gj wp res <<<"$r"
      MED[$w/$kind/$nw]=$med
      if [ -z "$ref" ]; then ref=$res; ok=same; elif [ "$res" = "$ref" ]; then ok=same; else ok="DIFFERENT"; status=1; fi
      case $res in INCONSISTENT:*) ok="INCONSISTENT"; status=1 ;; esac
      sp=""
      if [ "$kind" != native ] && [ -n "${MED[$w/native/$nw]:-}" ]; then
        sp=$(awk -v n="${MED[$w/native/$nw]}" -v g="$med" 'BEGIN { if (g > 0) printf "%.2fx", n / g }')
      fi
      say "$w $label: median $med s, min $min s, GpuHashJoin/GpuHashAgg nodes $gj, result $res"
      echo "| $w | $label | $wp | $gj | $med | $min | $first | $sp | $ok |"
    done
  done
done
echo
echo "scale $scale, $repeats timed runs after one warm-up, median (first run: the warm-up, a new session's first query, which for gpuhash includes creating the CUDA context); device $device; work_mem $work_mem$( [ "$force" -eq 1 ] && echo ', gpuhash.force_join = on')."
echo "Plans and every timing: $log"
rm -rf "$work"
exit $status
