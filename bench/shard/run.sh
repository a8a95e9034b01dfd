#!/bin/bash
# bench/shard/run.sh - the same data on one server and spread over K shard
# servers on the same host, which share its GPU (shard/setup.sh's layout:
# postgres_fdw, lineitem and orders hashed on their order keys, the other
# tables copied to every shard), natively and with gpuhash.  Markdown on
# stdout, progress on stderr.
#
#   bench/shard/run.sh [--scale S] [--shards "1 2 3 4"] [--repeats R]
#                      [--queries "1 3 ..."] [--no-extra] [--extra "a b ..."]
#                      [--data tpch|sql]
#                      [--device gpu|cpu] [--workers W] [--server-memory MB]
#                      [--out DIR] [--datadir DIR] [--keep] [--reuse DIR]
#
#   --scale S       TPC-H scale factor (default 1; bench/tpch/load.sh's rules)
#   --shards        the numbers of shard servers to measure, each in turn
#                   (default 1 2 3 4); the largest is how many are started
#   --repeats R     timed runs per query and variant after one warm-up
#                   (default 3); times are medians
#   --queries       TPC-H query numbers (default 1 to 22; "" for none)
#   --no-extra      leave out test/shard/queries (this project's own joins
#                   and GROUP BYs over the TPC-H tables, run after TPC-H's)
#   --extra NAMES   only these of test/shard/queries (file names without .sql)
#   --data sql      test/shard/generate.sql's TPC-H-shaped rows instead of
#                   dbgen's (no TPC-H queries then); default: dbgen's where
#                   bench/tpch/.dbgen is or can be built
#   --device        gpuhash.device (default gpu; cpu: the CPU twin planning
#                   with the GPU's costs, a dry run of the script, no
#                   measurement)
#   --workers W     max_parallel_workers_per_gather of the single server
#                   (default 16); a shard runs its remote query serially
#                   whatever it is, since PostgreSQL runs no cursor's query
#                   in parallel and postgres_fdw reads through cursors
#   --server-memory gpuhash.server_device_memory of each server (default: the
#                   GPU's memory divided among the single server and the
#                   shards; 0 on the twin)
#   --out DIR       every timing, result and sharded plan (default: a
#                   temporary folder, named on stderr)
#   --datadir, --keep, --reuse: as bench/tpch/run.sh's, for the whole set of
#                   clusters (DIR/single, DIR/shard1...): a later call on a
#                   still warm machine measures more shard counts without
#                   loading again
#
# Variants, each in a new coordinator session per query (one warm-up, then
# R runs): "single native" and "single gpuhash", the unsharded tables on
# the single server with gpuhash.enabled off and on (measured once); then
# for each K "K native" and "K gpuhash", the same query through the
# coordinator (the single server, reading the sharded tables: search_path
# sharded, public) with gpuhash off or on both on the coordinator and, through
# the postgres_fdw server option "options", on every shard.  Each variant's
# rows must be single native's.
#
# Per-shard times: each shard preloads pg_stat_statements; before each
# timed run its statistics are reset and after it the execution times of
# the remote cursor's statements (DECLARE, FETCH, CLOSE) are summed, per
# shard.  "shard max" is the slowest shard's (the coordinator waits for it:
# its Foreign Scans run at once), "coordinator" the rest of the total: its
# planning (with remote EXPLAINs), the transfer, the merge above the
# Append.  Without pg_stat_statements those columns are empty.
#
# Model: from the measured figures, N servers each with a GPU of its own
# and 1/N of the data: shard time T1 / N (T1: the shard time with one
# shard, which holds everything), coordinator time a + b N, a line fitted
# to the measured coordinator times over K.  A paper figure, stated with
# its assumptions (shard time linear in rows, no sharing between servers).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$root/test/lib.sh"
. "$root/bench/lib.sh"

scale=1 shard_counts="1 2 3 4" repeats=3 queries="$(seq -s ' ' 1 22)" extra=1 extra_names="" data=auto
device=gpu workers=16 server_mem="" out="" datadir="" keep=0 reuse=""
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --scale) scale=$2; shift ;;
    --shards) shard_counts=$2; shift ;;
    --repeats) repeats=$2; shift ;;
    --queries) queries=$2; shift ;;
    --no-extra) extra=0 ;;
    --extra) extra=1; extra_names=$2; shift ;;
    --data) data=$2; shift ;;
    --device) device=$2; shift ;;
    --workers) workers=$2; shift ;;
    --server-memory) server_mem=$2; shift ;;
    --out) out=$2; shift ;;
    --datadir) datadir=$2; shift ;;
    --keep) keep=1 ;;
    --reuse) reuse=$2; shift ;;
    -h|--help) usage ;;
    *) echo "unknown option $1" >&2; usage ;;
  esac
  shift
done
case $device in gpu|cpu) ;; *) echo "--device gpu or cpu" >&2; exit 2 ;; esac
case $data in auto|tpch|sql) ;; *) echo "--data tpch or sql" >&2; exit 2 ;; esac
[ "$repeats" -ge 1 ] || { echo "--repeats must be at least 1" >&2; exit 2; }
maxk=0
for k in $shard_counts; do
  [ "$k" -ge 1 ] || { echo "--shards: numbers of 1 or more" >&2; exit 2; }
  [ "$k" -gt "$maxk" ] && maxk=$k
done
t0=$(date +%s)
say() { echo "[$(( $(date +%s) - t0 ))s] $*" >&2; }

# ---------------------------------------------------------------- clusters
if [ -n "$reuse" ]; then
  top=$(cd "$reuse" && pwd)
elif [ -n "$datadir" ]; then
  mkdir -p "$datadir"; top=$(cd "$datadir" && pwd)
  [ "$(id -u)" -eq 0 ] && chown "$GH_OSUSER" "$top"
else
  top=$(gh_tmpdir)
fi
out=${out:-$(mktemp -d /tmp/shard-bench.XXXXXX)}
mkdir -p "$out/results" "$out/plans"
log=$out/bench.log
: >"$log"
work=$(gh_tmpdir)
chmod 777 "$work"

if [ -z "$server_mem" ]; then
  server_mem=0
  if [ "$device" = gpu ] && command -v nvidia-smi >/dev/null 2>&1; then
    total=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i 0 | tr -d ' ')
    server_mem=$(( total * 9 / 10 / (maxk + 1) ))
  fi
fi
mem_kb=$(awk '/^MemTotal/ { print $2 }' /proc/meminfo)
buffers=$(( mem_kb / 4 / 1024 / (maxk + 1) ))
[ "$buffers" -gt 16384 ] && buffers=16384
pgss=0
[ -f "$(pg_config --sharedir)/extension/pg_stat_statements.control" ] && pgss=1

dev_conf="gpuhash.device = $device
gpuhash.server_device_memory = $server_mem"
[ "$device" = cpu ] && dev_conf="$dev_conf
gpuhash.cost_as_gpu = on"

# cluster NAME CONF: starts (or, left by --keep, restarts) the cluster
# DIR/NAME; prints its connection string
cluster() {
  local name=$1 conf=$2 dir=$top/$1 port
  if [ -d "$dir/data" ]; then
    port=$(sed -n 's/^port = //p' "$dir/data/postgresql.conf" | tail -1)
    gh_as_pg "$(gh_pg_bindir)/pg_ctl" -D "$dir/data" status >/dev/null 2>&1 ||
      gh_as_pg "$(gh_pg_bindir)/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w start >/dev/null
  else
    mkdir -p "$dir"; [ "$(id -u)" -eq 0 ] && chown "$GH_OSUSER" "$dir"
    port=$(gh_free_port)
    gh_cluster_start "$dir" "$port" "$(bench_conf)
shared_buffers = ${buffers}MB
$conf" >>"$log" 2>&1 || { tail -20 "$log" >&2; exit 1; }
  fi
  echo "host=$dir port=$port dbname=bench user=postgres"
}
stop_all() {
  local d
  for d in "$top"/single "$top"/shard*; do
    [ -d "$d/data" ] && gh_cluster_stop "$d"
  done
}
finish() {
  if [ "$keep" = 1 ] || [ -n "$reuse" ]; then
    say "clusters left running in $top: --reuse $top"
  else
    stop_all; rm -rf "$top"
  fi
  rm -rf "$work"
}
trap finish EXIT

say "clusters in $top: single server and $maxk shards, device $device, server_device_memory $server_mem MB each"
single=$(cluster single "$dev_conf
max_parallel_workers_per_gather = $workers")
[ -n "$single" ] || exit 1
shard_conf="$dev_conf"
[ "$pgss" = 1 ] && shard_conf="$shard_conf
shared_preload_libraries = 'gpuhash,pg_stat_statements'
pg_stat_statements.track_utility = on"
shard_conn=()
for k in $(seq 1 "$maxk"); do
  c=$(cluster "shard$k" "$shard_conf")
  [ -n "$c" ] || exit 1
  shard_conn+=("$c")
done
q() { gh_as_pg psql -X -qAt -v ON_ERROR_STOP=1 -d "$@"; }

# ---------------------------------------------------------------- data
if [ "$data" != sql ] && [ ! -x "$root/bench/tpch/.dbgen/qgen" ]; then
  bash "$root/bench/tpch/build.sh" >>"$log" 2>&1 || true
fi
if [ "$data" = auto ]; then
  data=sql; [ -x "$root/bench/tpch/.dbgen/qgen" ] && data=tpch
fi
if [ "$data" = sql ] && [ -n "$queries" ]; then
  say "no TPC-H generator (bench/tpch/build.sh found no sources, or --data sql): own queries only, over generated rows"
  queries=""
  extra=1
fi
q "$(echo "$single" | sed 's/dbname=bench/dbname=postgres/')" \
  -c "SELECT 1 FROM pg_database WHERE datname = 'bench'" | grep -q 1 ||
  q "$(echo "$single" | sed 's/dbname=bench/dbname=postgres/')" -c "CREATE DATABASE bench"
loaded=$(q "$single" -c "SELECT scale || ' ' || source FROM tpch_meta WHERE done" 2>/dev/null || true)
want_source=$([ "$data" = sql ] && echo test/shard/generate.sql || echo dbgen)
if [ "$(echo "$loaded" | awk '{ print $1 + 0 }')" != "$(awk -v s="$scale" 'BEGIN { print s + 0 }')" ] ||
   { [ "$data" = sql ] && [[ "$loaded" != *generate.sql* ]]; } ||
   { [ "$data" = tpch ] && [[ "$loaded" == *generate.sql* ]]; }; then
  say "loading $want_source's rows at scale $scale into the single server"
  if [ "$data" = tpch ]; then
    PGHOST=$top/single PGPORT=$(echo "$single" | sed 's/.*port=\([0-9]*\).*/\1/') PGUSER=postgres PGDATABASE=bench \
      bash "$root/bench/tpch/load.sh" --scale "$scale" >>"$log" 2>&1 || { tail -20 "$log" >&2; exit 1; }
  else
    hundredths=$(awk -v s="$scale" 'BEGIN { print s * 100 }')
    cp "$root/bench/tpch/schema.sql" "$root/test/shard/generate.sql" "$work/" && chmod a+r "$work"/*.sql
    gh_as_pg psql -X -q -v ON_ERROR_STOP=1 -d "$single" -v scale="$hundredths" \
      -f "$work/schema.sql" -f "$work/generate.sql" >>"$log" 2>&1 ||
      { tail -20 "$log" >&2; exit 1; }
  fi
fi
q "$single" -c "CREATE EXTENSION IF NOT EXISTS gpuhash"

# ---------------------------------------------------------------- queries
mkdir -p "$work/q"
names=()
if [ -n "$queries" ]; then
  bash "$root/bench/tpch/queries.sh" --scale "$scale" "$work/q" $queries >>"$log" 2>&1 ||
    { tail -20 "$log" >&2; exit 1; }
  for n in $queries; do mv "$work/q/$n.sql" "$work/q/q$n.sql"; names+=("q$n"); done
fi
if [ "$extra" = 1 ]; then
  for f in "$root"/test/shard/queries/*.sql; do
    name=$(basename "$f" .sql)
    if [ -n "$extra_names" ] && [[ " $extra_names " != *" $name "* ]]; then
      continue
    fi
    cp "$f" "$work/q/"; names+=("$name")
  done
fi
chmod -R a+rX "$work/q"

# helper scripts the coordinator's session runs between runs (psql's \!):
# reset the shards' statistics, and sum each shard's cursor time into a file
cat >"$work/shard_reset.sh" <<'EOF'
#!/bin/bash
for c in "$@"; do psql -X -qAt -d "$c" -c "SELECT pg_stat_statements_reset()" >/dev/null; done
EOF
cat >"$work/shard_times.sh" <<'EOF'
#!/bin/bash
# shard_times.sh RUN FILE CONNINFO...: appends "RUN ms ms ..." to FILE
run=$1 file=$2; shift 2
line=$run
for c in "$@"; do
  line="$line $(psql -X -qAt -d "$c" -c "SELECT coalesce(sum(total_exec_time), 0)
    FROM pg_stat_statements WHERE query ~* '^[[:space:]]*(declare|fetch|close)'")"
done
echo "$line" >>"$file"
EOF
chmod a+rx "$work"/shard_*.sh

# median: the median of the numbers on stdin, one a line
median() {
  sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else if (NR) print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# measure LABEL SETTINGS NAME [SHARDS...]: one session on the single server:
# SETTINGS, a warm-up and the timed runs of query NAME, with each shard's
# cursor time per run when SHARDS are given.  Prints "median_s shardmax_s"
# (shardmax empty without shards or pg_stat_statements) and keeps the
# warm-up's rows as $out/results/NAME.LABEL.txt
measure() {
  local label=$1 settings=$2 name=$3 f=$work/s.sql o=$work/s.out k c cq=""; shift 3
  for c in "$@"; do cq="$cq '$c'"; done
  rm -f "$work/times"
  {
    echo "$settings"
    echo "\\pset tuples_only on"
    echo "\\pset format unaligned"
    echo "\\pset null '(null)'"
    for k in $(seq 0 "$repeats"); do
      [ -n "$cq" ] && [ "$pgss" = 1 ] && echo "\\! bash $work/shard_reset.sh$cq"
      echo "\\echo RUN $k"
      echo "\\timing on"
      echo "\\o $work/res.$k"
      echo "\\i $work/q/$name.sql"
      echo "\\o"
      echo "\\timing off"
      [ -n "$cq" ] && [ "$pgss" = 1 ] && echo "\\! bash $work/shard_times.sh $k $work/times$cq"
    done
  } >"$f"
  chmod a+r "$f"
  rm -f "$work"/res.*
  if ! gh_as_pg psql -X -q -v ON_ERROR_STOP=1 -d "$single" -f "$f" >"$o" 2>&1; then
    { echo "### $name / $label: FAILED"; cat "$o"; } >>"$log"
    echo "FAIL"
    return 0
  fi
  cp "$work/res.0" "$out/results/$name.$label.txt"
  {
    echo "### $name / $label"; grep -E '^(RUN|Time:)' "$o"
    [ -f "$work/times" ] && { echo "shard ms per run:"; cat "$work/times"; }
  } >>"$log"
  local med shard=""
  # per run: the sum of its statements' times (only Q15 has more than one)
  med=$(awk '/^RUN / { r = $2 } /^Time:/ && r > 0 { t[r] += $2 / 1000 } END { for (k in t) print t[k] }' "$o" | median)
  if [ -f "$work/times" ]; then
    shard=$(awk '$1 > 0 { m = 0; for (i = 2; i <= NF; i++) if ($i + 0 > m) m = $i + 0; print m / 1000 }' "$work/times" | median)
  fi
  echo "$med $shard"
}

# check NAME LABEL: whether LABEL's rows are single native's
check() {
  if cmp -s "$out/results/$1.single-native.txt" "$out/results/$1.$2.txt"; then echo same
  else echo differs; fi
}
status=0

say "single server: ${#names[@]} queries, native and gpuhash"
declare -A single_native single_gpuhash
for name in "${names[@]}"; do
  single_native[$name]=$(measure single-native "SET gpuhash.enabled = off;" "$name" | cut -d' ' -f1)
  single_gpuhash[$name]=$(measure single-gpuhash "SET gpuhash.enabled = on;" "$name" | cut -d' ' -f1)
done

# s SECONDS: seconds with three decimals, "-" for none
s() { awk -v t="$1" 'BEGIN { if (t == "" || t == "FAIL") print (t == "" ? "-" : t); else printf "%.3f", t }'; }

echo "# Sharded over postgres_fdw: one server against K shard servers on one host"
echo
echo "$(date -u +%F), commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown), device $device$(command -v nvidia-smi >/dev/null 2>&1 && [ "$device" = gpu ] && echo ", $(nvidia-smi --query-gpu=name --format=csv,noheader -i 0)"), data: $want_source at scale $scale, $repeats run(s) after a warm-up (medians, seconds), single server with up to $workers workers a Gather, shards serial (cursors), gpuhash.server_device_memory $server_mem MB per server$( [ "$pgss" = 1 ] || echo ', no pg_stat_statements: no shard times')."
summary=()
for k in $shard_counts; do
  conns=("${shard_conn[@]:0:$k}")
  say "laying out $k shard(s)"
  args=(--coordinator "$single" --fact lineitem:l_orderkey --fact orders:o_orderkey
        --replicate "region nation part supplier partsupp customer")
  for c in "${conns[@]}"; do args+=(--shard "$c"); done
  bash "$root/shard/setup.sh" "${args[@]}" >>"$log" 2>&1 || { tail -20 "$log" >&2; exit 1; }
  if [ "$pgss" = 1 ]; then
    for c in "${conns[@]}"; do
      q "$c" -c "SET client_min_messages = warning" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"
    done
  fi
  echo
  echo "## $k shard(s)"
  echo
  echo "| query | single native | single gpuhash | $k native | $k gpuhash | shard max native | shard max gpuhash | coordinator native | coordinator gpuhash | rows |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  tot=(0 0 0 0 0 0 0 0)
  for name in "${names[@]}"; do
    row=()
    for v in native gpuhash; do
      flag=$([ "$v" = native ] && echo off || echo on)
      for i in $(seq 1 "$k"); do
        q "$single" -c "ALTER SERVER shard_$i OPTIONS (SET options '-c cursor_tuple_fraction=1 -c gpuhash.enabled=$flag')"
      done
      row+=("$(measure "k$k-$v" "SET search_path = sharded, public; SET gpuhash.enabled = $flag;" "$name" "${conns[@]}")")
    done
    gh_as_pg psql -X -q -d "$single" -c "SET search_path = sharded, public" \
      -c "EXPLAIN (VERBOSE, COSTS OFF) $(grep -v '^--' "$work/q/$name.sql" | sed 's/;[[:space:]]*$//' | tr '\n' ' ')" \
      >"$out/plans/$name.k$k.txt" 2>&1 || true
    read -r tn sn <<<"${row[0]}"; read -r tg sg <<<"${row[1]}"
    cn=$(awk -v t="$tn" -v s="$sn" 'BEGIN { if (s != "" && t != "FAIL") print t - s }')
    cg=$(awk -v t="$tg" -v s="$sg" 'BEGIN { if (s != "" && t != "FAIL") print t - s }')
    rows="$(check "$name" "k$k-native")/$(check "$name" "k$k-gpuhash")"
    if [ "$rows" = same/same ]; then rows=same; else status=1; fi
    echo "| $name | $(s "${single_native[$name]}") | $(s "${single_gpuhash[$name]}") | $(s "$tn") | $(s "$tg") | $(s "$sn") | $(s "$sg") | $(s "$cn") | $(s "$cg") | $rows |"
    j=0
    for x in "${single_native[$name]}" "${single_gpuhash[$name]}" "$tn" "$tg" "$sn" "$sg" "$cn" "$cg"; do
      tot[$j]=$(awk -v a="${tot[$j]}" -v b="$x" 'BEGIN { print a + ((b == "FAIL" || b == "") ? 0 : b) }')
      j=$((j + 1))
    done
  done
  echo "| **sum** | $(s "${tot[0]}") | $(s "${tot[1]}") | $(s "${tot[2]}") | $(s "${tot[3]}") | $(s "${tot[4]}") | $(s "${tot[5]}") | $(s "${tot[6]}") | $(s "${tot[7]}") | |"
  summary+=("$k ${tot[*]}")
done

echo
echo "## Growth with the number of shards (sums over the queries, seconds)"
echo
echo "| shards | single native | single gpuhash | sharded native | sharded gpuhash | shard max native | shard max gpuhash | coordinator native | coordinator gpuhash |"
echo "|---|---|---|---|---|---|---|---|---|"
for line in "${summary[@]}"; do
  # shellcheck disable=SC2086
  set -- $line
  echo "| $1 | $(s "$2") | $(s "$3") | $(s "$4") | $(s "$5") | $(s "$6") | $(s "$7") | $(s "$8") | $(s "$9") |"
done
if [ "$pgss" = 1 ] && printf '%s\n' "${summary[@]}" | awk '$1 == 1 { found = 1 } END { exit !found }'; then
  echo
  echo "## Model: N servers with a GPU each (on paper, from the figures above)"
  echo
  echo "Shard time T1 / N, T1 the shard time with one shard (all rows on one server, no sharing); coordinator time a + b N, fitted to the coordinator times above. Assumes shard time linear in rows and servers that share nothing; ignores the network."
  echo
  echo "| variant | T1 | a | b | N = 4 | N = 16 | single server |"
  echo "|---|---|---|---|---|---|---|"
  for v in native gpuhash; do
    col=$([ "$v" = native ] && echo 6 || echo 7)     # shard max column (1-based, after K)
    ccol=$([ "$v" = native ] && echo 8 || echo 9)
    scol=$([ "$v" = native ] && echo 2 || echo 3)
    printf '%s\n' "${summary[@]}" | awk -v v="$v" -v c="$col" -v cc="$ccol" -v sc="$scol" '
      { k[NR] = $1; sh[NR] = $c; co[NR] = $cc; if ($1 == 1) t1 = $c; single = $sc }
      END {
        n = NR; sx = sy = sxx = sxy = 0
        for (i = 1; i <= n; i++) { sx += k[i]; sy += co[i]; sxx += k[i] * k[i]; sxy += k[i] * co[i] }
        if (n > 1 && n * sxx - sx * sx != 0) { b = (n * sxy - sx * sy) / (n * sxx - sx * sx); a = (sy - b * sx) / n }
        else { b = 0; a = sy / n }
        printf "| %s | %.3f | %.3f | %.4f | %.3f | %.3f | %.3f |\n", v, t1, a, b, t1 / 4 + a + 4 * b, t1 / 16 + a + 16 * b, single
      }'
  done
fi
echo
echo "Every run's time, the shards' per-run times, results and the sharded plans (EXPLAIN VERBOSE): $out"
exit $status
