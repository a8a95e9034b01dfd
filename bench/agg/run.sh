#!/bin/bash
# bench/agg/run.sh - gpuhash_aggregate against native GROUP BY, on a GPU host
# (or anywhere, with BENCH_DEVICE=cpu).  Markdown on stdout.
#
#   bench/agg/run.sh [ROWS [GROUPS...]]     default: 100000000 rows, all three group counts
#
# Needs gpuhash built and installed (make install) and PostgreSQL's programs on
# PATH (on a GPU host: source .gpuhost/pg.sh first).  It starts a throwaway
# cluster (gpuhash preloaded, 16 parallel workers), fills an unlogged table
#   bench_agg(k10, kmid, kbig, v int4)   with generate_series, ROWS rows;
#   k10 has 10 groups, kmid min(10^6, ROWS/100), kbig min(5*10^7, ROWS/2)
# and runs, for each group count G, the query
#   SELECT k, count(*), sum(v), avg(v), min(v), max(v) FROM bench_agg GROUP BY k
# natively (serial, 8 and 16 workers) and through gpuhash_aggregate (input
# from 16 workers, packed there; "gpu": input read by the leader alone).
# Each configuration: one warm-up run that also checksums the result (a hash
# of each row's columns, the numeric avg by its text so that display scales
# count, summed over rows so that row order does not matter; all must equal
# the first configuration's checksum), then REPEATS timed runs (EXPLAIN
# ANALYZE with TIMING OFF: planning plus execution, the result is computed
# but not sent); the table shows medians.  For gpuhash it also prints its
# DEBUG2 account of where the time went.  Before the group counts, the scan
# floor: SELECT count(*), sum(v) FROM bench_agg with 16 workers.
#
# Environment: REPEATS (3), CONFIGS (serial p8 p16 gpu_p16; also gpu, agg:
# the same SQL with gpuhash.force_agg, a GpuHashAgg above a Gather, and
# chosen: the same SQL at the planner's choice with gpuhash on; the native
# configurations set gpuhash.enabled = off),
# and for one group count G: CONFIGS_G (the configurations run at G, a
# subset of CONFIGS, in that order), REPEATS_G_CONFIG (timed runs of CONFIG
# at G; 0: the warm-up and its checksum only), WARMUP_G_CONFIG=0 (no warm-up
# and no checksum: for native runs too long to repeat, timed once),
# BENCH_REF_SUMS ("G=CHECKSUM;..." with CHECKSUM as the checksum query prints
# it: a checksum of native's result taken earlier on the same data, which
# the configurations at G are also compared with),
# BENCH_WARM_CONTEXT_GROUPS (group counts at which gpuhash_aggregate is also
# timed in one session, its CUDA context created beforehand),
# BENCH_DEVICE (gpu), BENCH_WORK_MEM (1GB, native hash tables; larger ones
# spill, as they would), BENCH_SHARED_BUFFERS (24GB), BENCH_LOAD_JOBS (16),
# BENCH_DEADLINE (seconds after the start; a configuration is not begun, and
# no further repeat is begun, past it: the table then says how many runs each
# median has), BENCH_HARD_DEADLINE (seconds after the start: every
# statement gets a statement_timeout that ends it by then, and a run cut off
# counts as not run), BENCH_LOG (a file that gets every single timing as it
# is taken, so a run cut short still leaves its numbers).
# Rough duration at 10^8 rows on 16 cores: 1-2 minutes to load, then a few
# minutes per group count; 5*10^7 groups with native serial takes longest.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../test/lib.sh"
. "$here/../lib.sh"

rows=${1:-100000000}
shift || true
groups=("$@")
repeats=${REPEATS:-3}
configs=${CONFIGS:-"serial p8 p16 gpu_p16"}
device=${BENCH_DEVICE:-gpu}
jobs=${BENCH_LOAD_JOBS:-16}
deadline=${BENCH_DEADLINE:-0}
hard=${BENCH_HARD_DEADLINE:-0}
log=${BENCH_LOG:-/dev/null}
start=$(date +%s)
# cfg NAME G CONFIG DEFAULT: the per-group-count setting NAME_G_CONFIG
cfg() { local v="$1_$2_$3"; printf '%s' "${!v:-$4}"; }
ref_sum() {  # ref_sum G: the reference checksum for G, if given
  local e
  IFS=';' read -ra e <<<"${BENCH_REF_SUMS:-}"
  for x in "${e[@]}"; do [ "${x%%=*}" = "$1" ] && { printf '%s' "${x#*=}"; return 0; }; done
  return 0
}
past_deadline() { [ "$deadline" -gt 0 ] && [ $(( $(date +%s) - start )) -ge "$deadline" ]; }
logline() { echo "$(date +%T) $*" >>"$log"; }

mid=$(( rows / 100 < 1000000 ? rows / 100 : 1000000 )); [ $mid -lt 1 ] && mid=1
big=$(( rows / 2 < 50000000 ? rows / 2 : 50000000 )); [ $big -lt 1 ] && big=1
[ ${#groups[@]} -eq 0 ] && groups=(10 $mid $big)

dir=$(gh_tmpdir)
port=$(gh_free_port)
trap 'gh_cluster_stop "$dir"; rm -rf "$dir"' EXIT
# bench/lib.sh's settings of every benchmark cluster (shared buffers
# BENCH_SHARED_BUFFERS, 24GB here), then this benchmark's
gh_cluster_start "$dir" "$port" "$(BENCH_SHARED_BUFFERS=${BENCH_SHARED_BUFFERS:-24GB} bench_conf)
gpuhash.device = $device
work_mem = ${BENCH_WORK_MEM:-1GB}
max_parallel_workers_per_gather = 16" >/dev/null

q() {
  local left
  if [ "$hard" -gt 0 ]; then
    left=$(( hard - ($(date +%s) - start) )); [ $left -lt 1 ] && left=1
    PGOPTIONS="-c statement_timeout=${left}s" gh_as_pg psql -X -qAt -v ON_ERROR_STOP=1 "$@"
  else
    gh_as_pg psql -X -qAt -v ON_ERROR_STOP=1 "$@"
  fi
}

# --- data ---------------------------------------------------------------
t0=$(date +%s.%N)
q -c "CREATE EXTENSION gpuhash" \
  -c "CREATE UNLOGGED TABLE bench_agg (k10 int, kmid int, kbig int, v int)"
chunk=$(( (rows + jobs - 1) / jobs ))
pids=()
for j in $(seq 0 $((jobs - 1))); do
  lo=$(( j * chunk + 1 )); hi=$(( (j + 1) * chunk )); [ $hi -gt $rows ] && hi=$rows
  [ $lo -gt $hi ] && continue
  q -c "INSERT INTO bench_agg
        SELECT g % 10, (g * 7919) % $mid, (g * 7919) % $big, (g * 104729) % 1000000
          FROM generate_series($lo::int8, $hi::int8) g" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
q -c "VACUUM (FREEZE, ANALYZE) bench_agg" -c "ALTER TABLE bench_agg SET (parallel_workers = 16)"
size=$(q -c "SELECT pg_size_pretty(pg_relation_size('bench_agg'))")
t1=$(date +%s.%N)

# --- runs ---------------------------------------------------------------
setting() {
  case $1 in
    # native: gpuhash off, or GpuHashAgg (enable_agg, on by default) would
    # take PostgreSQL's place on a GPU host
    serial) echo "SET max_parallel_workers_per_gather = 0; SET gpuhash.enabled = off;" ;;
    p8) echo "SET max_parallel_workers_per_gather = 8; SET gpuhash.enabled = off;" ;;
    p16) echo "SET max_parallel_workers_per_gather = 16; SET gpuhash.enabled = off;" ;;
    gpu) echo "SET max_parallel_workers_per_gather = 0;" ;;
    gpu_p16) echo "SET max_parallel_workers_per_gather = 16;" ;;
    agg) echo "SET max_parallel_workers_per_gather = 16; SET gpuhash.force_agg = on;" ;;
    chosen) echo "SET max_parallel_workers_per_gather = 16;" ;;
  esac
}
query() {  # query CONFIG COLUMN
  local inner="SELECT $2 AS k, count(*) AS n, sum(v) AS s, avg(v) AS a, min(v) AS mi, max(v) AS ma FROM bench_agg GROUP BY $2"
  case $1 in
    gpu|gpu_p16) echo "SELECT * FROM gpuhash_aggregate('$inner') AS t(k int, n bigint, s bigint, a numeric, mi int, ma int)" ;;
    *) echo "$inner" ;;
  esac
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
# checksum of a result: per row, a hash of every column (avg by its text),
# summed; cheaper than hashing each row's whole text at 5*10^7 groups
checksum="count(*) || ' ' || sum(((hashint4extended(t.k, 0) # hashint8extended(t.n, 1)
  # hashint8extended(t.s, 2) # hashtextextended(t.a::text, 3) # hashint4extended(t.mi, 4)
  # hashint4extended(t.ma, 5)) >> 4)::numeric)"
explain_ms() {  # explain_ms SETTINGS QUERY: planning + execution time, ms
  local out plan exec
  out=$(q <<SQL
$1
EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF, SUMMARY ON) $2;
SQL
) || { echo "-"; return 0; }
  plan=$(echo "$out" | sed -n 's/^Planning Time: \([0-9.]*\) ms/\1/p')
  exec=$(echo "$out" | sed -n 's/^Execution Time: \([0-9.]*\) ms/\1/p')
  awk -v a="$plan" -v b="$exec" 'BEGIN {printf "%.1f", a + b}'
}

declare -A ms sum
notes=()
allsame=1
gpu=$(q -c "SELECT coalesce((SELECT name FROM gpuhash_devices() WHERE ordinal = 0), 'no GPU')")
printf '## gpuhash_aggregate vs native GROUP BY\n\n'
printf '%s rows (%s table, loaded in %.0f s), %s cores, %s, PostgreSQL %s, gpuhash.device = %s, work_mem %s.\n' \
  "$rows" "$size" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')" "$(nproc)" "$gpu" \
  "$(q -c 'SHOW server_version')" "$device" "${BENCH_WORK_MEM:-1GB}"
printf 'Query: SELECT k, count(*), sum(v), avg(v), min(v), max(v) FROM bench_agg GROUP BY k (v int4).\n'
printf 'Median of %s runs after a warm-up, ms (planning + execution, result not sent to the client).\n\n' "$repeats"

# the scan floor: what reading the table costs with 16 workers
times=()
explain_ms "$(setting p16)" "SELECT count(*), sum(v) FROM bench_agg" >/dev/null
for r in $(seq 1 "$repeats"); do
  times+=("$(explain_ms "$(setting p16)" "SELECT count(*), sum(v) FROM bench_agg")")
  logline "scan floor p16 run $r: ${times[-1]} ms"
done
printf 'Scan floor, SELECT count(*), sum(v) FROM bench_agg with 16 workers: %s ms (median).\n\n' \
  "$(printf '%s\n' "${times[@]}" | median)"

# gpuhash_aggregate in a session whose CUDA context already exists: the
# difference to the table's gpuhash column (a new session per run) is the
# context's creation
for g in ${BENCH_WARM_CONTEXT_GROUPS:-}; do
  case $g in 10) col=k10 ;; $mid) col=kmid ;; $big) col=kbig ;; *) continue ;; esac
  out=$(q <<SQL
SET max_parallel_workers_per_gather = 16;
SELECT gpuhash_active_device();
$(for r in $(seq 0 "$repeats"); do echo "EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF, SUMMARY ON) $(query gpu_p16 $col);"; done)
SQL
) || { logline "warm context G=$g failed"; continue; }
  times=($(echo "$out" | awk '/^Planning Time:/ {p = $3} /^Execution Time:/ {printf "%.1f\n", p + $3}'))
  logline "warm context G=$g gpu_p16: ${times[*]} ms (first one is the warm-up)"
  printf 'gpuhash_aggregate at %s groups in a session that already has its CUDA context: %s ms (median of %s after a warm-up).\n\n' \
    "$g" "$(printf '%s\n' "${times[@]:1}" | median)" "$repeats"
done
hdr="| groups |"; sep="|---|"
for c in $configs; do
  case $c in serial) h="native serial" ;; p8) h="native 8 workers" ;; p16) h="native 16 workers" ;;
    gpu) h="gpuhash, serial input" ;; gpu_p16) h="gpuhash, 16-worker input" ;;
    agg) h="GpuHashAgg (force_agg), input through a Gather" ;;
    chosen) h="the planner's choice, gpuhash on" ;; esac
  hdr="$hdr $h |"; sep="$sep---|"
done
case " $configs " in *" p16 "*) hdr="$hdr best gpuhash vs native 16 workers |"; sep="$sep---|" ;; esac
hdr="$hdr results identical |"; sep="$sep---|"
echo "$hdr"; echo "$sep"

# warmup G CONFIG COL: one run that checksums the result (and, for gpuhash,
# keeps its own account of the time); sum[G,CONFIG] gets the checksum
warmup() {
  local g=$1 c=$2 col=$3 out dbg
  if ! out=$(q 2>&1 <<SQL
$(setting $c)
SET client_min_messages = debug2;
SELECT $checksum FROM ($(query $c $col)) t;
SQL
); then
    logline "G=$g $c warm-up failed: $(echo "$out" | grep -v '^DEBUG' | tail -2 | tr '\n' ' ')"
    return 1
  fi
  sum[$g,$c]=$(echo "$out" | grep -v '^DEBUG' | tail -1)
  logline "G=$g $c warm-up checksum: ${sum[$g,$c]}"
  dbg=$(echo "$out" | grep -E 'gpuhash_aggregate (on|input)' | sed 's/^DEBUG: *//' || true)
  if [ -n "$dbg" ]; then
    while IFS= read -r d; do notes+=("G=$g $c: $d"); logline "G=$g $c: $d"; done <<<"$dbg"
  fi
}

# one table row per group count, printed as soon as it is measured
for g in "${groups[@]}"; do
  case $g in 10) col=k10 ;; $mid) col=kmid ;; $big) col=kbig ;;
    *) echo "groups must be 10, $mid or $big at $rows rows" >&2; exit 2 ;; esac
  for c in $configs; do ms[$g,$c]="-"; sum[$g,$c]=""; done
  gconfigs_var="CONFIGS_$g"
  for c in ${!gconfigs_var:-$configs}; do
    if past_deadline; then logline "G=$g $c: not run (deadline)"; continue; fi
    reps=$(cfg REPEATS "$g" "$c" "$repeats")
    if [ "$(cfg WARMUP "$g" "$c" 1)" = 0 ]; then
      logline "G=$g $c: no warm-up, no checksum"
    elif ! warmup "$g" "$c" "$col"; then
      continue
    fi
    times=()
    for r in $(seq 1 "$reps"); do
      past_deadline && break
      t=$(explain_ms "$(setting $c)" "$(query $c $col)")
      logline "G=$g $c run $r: $t ms"
      [ "$t" = "-" ] && break
      times+=("$t")
    done
    if [ ${#times[@]} -gt 0 ]; then
      ms[$g,$c]=$(printf '%s\n' "${times[@]}" | median)
      if [ ${#times[@]} -eq 1 ]; then ms[$g,$c]="${ms[$g,$c]} (1 run)"
      elif [ ${#times[@]} -ne "$repeats" ]; then ms[$g,$c]="${ms[$g,$c]} (${#times[@]} runs)"; fi
    fi
  done

  # results: every checksum taken at G, and the reference, must be one
  line="| $g |"; ref=$(ref_sum "$g"); same=yes; best=""; checked=()
  if [ -n "$ref" ]; then checked+=("native earlier"); logline "G=$g reference checksum: $ref"; fi
  for c in $configs; do
    line="$line ${ms[$g,$c]} |"
    [ -z "${sum[$g,$c]}" ] && continue
    checked+=("$c")
    [ -z "$ref" ] && ref=${sum[$g,$c]}
    [ "${sum[$g,$c]}" != "$ref" ] && { same=NO; allsame=0; }
    case $c in gpu|gpu_p16|agg|chosen)
      [ "${ms[$g,$c]}" = "-" ] && continue
      v=${ms[$g,$c]%% *}
      if [ -z "$best" ] || awk -v a="$v" -v b="$best" 'BEGIN {exit !(a < b)}'; then
        best=$v; fi ;; esac
  done
  case " $configs " in *" p16 "*)
    if [ -n "$best" ] && [ "${ms[$g,p16]}" != "-" ]; then
      line="$line $(awk -v a="${ms[$g,p16]%% *}" -v b="$best" 'BEGIN {printf "%.2f", a / b}')x |"
    else line="$line - |"; fi ;; esac
  if [ ${#checked[@]} -lt 2 ]; then
    echo "$line not checked (checksum of ${checked[*]:-none}) |"
  else
    echo "$line $same ($(echo "$ref" | cut -d' ' -f1) groups; $(IFS=,; echo "${checked[*]}" | sed 's/,/, /g')) |"
  fi
done

if [ ${#notes[@]} -gt 0 ]; then
  printf '\nWhere gpuhash_aggregate spent its time (its DEBUG2 lines, warm-up run):\n\n'
  for n in "${notes[@]}"; do echo "- $n"; done
fi
[ $allsame = 1 ]
