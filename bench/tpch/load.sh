#!/bin/bash
# bench/tpch/load.sh - generates TPC-H data with dbgen and loads it into the
# PostgreSQL cluster that PGHOST, PGPORT, PGUSER and PGDATABASE name (run.sh
# calls it on the cluster it starts).  Needs build.sh's .dbgen/.
#
#   bench/tpch/load.sh [options]
#     --scale S       scale factor: a whole number >= 1 (1 = about 1 GB of
#                     text; 6M lineitem rows per unit) or a fraction below 1
#                     (steps of 0.001) for small tests (default 1)
#     --jobs J        dbgen processes, COPY and index sessions at once
#                     (default: cores)
#     --tbl-dir DIR   where dbgen writes its .tbl files (default: a
#                     temporary folder under /tmp); they are deleted after
#                     the load
#     --keep-tbl      keep the .tbl files
#     --no-fk         no foreign-key constraints (their indexes stay); saves
#                     the constraint checks' scans of lineitem at large scales
#
# Steps:
#   1. dbgen: with S >= 1, J chunks (dbgen -C J -S k), one process and one
#      folder each, which together give exactly the rows of one dbgen run;
#      below 1, one process.
#   2. schema.sql, then COPY of every file, J at a time, each file through
#      sed, which strips the "|" that dbgen ends every line with.
#   3. Keys, as common PostgreSQL TPC-H setups add them: the primary keys of
#      the specification (clause 1.4.2), the foreign keys dbgen's dss.ri
#      declares, and an index on every foreign key that no primary key
#      leads with:
#        n_regionkey, s_nationkey, c_nationkey, ps_suppkey, o_custkey,
#        (l_partkey, l_suppkey)
#      (ps_partkey and l_orderkey lead partsupp's and lineitem's primary
#      keys).  No other indexes (none on dates).
#   4. VACUUM (FREEZE, ANALYZE) of every table, so that no timed run sets
#      hint bits and the planner has statistics.
# The load runs with gpuhash.enabled = off: the constraint checks' joins are
# PostgreSQL's own.
#
# Run as root (psql runs as the cluster user, see test/lib.sh) or as a user
# that can connect.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../test/lib.sh"
dbgen=${TPCH_DBGEN_DIR:-$here/.dbgen}

scale=1 jobs=$(nproc) tbl_dir="" keep_tbl=0 fk=1
while [ $# -gt 0 ]; do
  case $1 in
    --scale) scale=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --tbl-dir) tbl_dir=$2; shift ;;
    --keep-tbl) keep_tbl=1 ;;
    --no-fk) fk=0 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
# dbgen truncates a scale of 1 or more to a whole number, and integer keys
# (schema.sql) hold order keys up to scale 300
if ! awk -v s="$scale" 'BEGIN { exit !((s > 0 && s < 1) || (s >= 1 && s <= 300 && s == int(s))) }'; then
  echo "--scale: a whole number from 1 to 300, or a fraction below 1" >&2
  exit 2
fi
[ "$jobs" -ge 1 ] || { echo "--jobs must be at least 1" >&2; exit 2; }
for f in dbgen dists.dss; do
  [ -e "$dbgen/$f" ] || { echo "$dbgen/$f missing: run bench/tpch/build.sh first" >&2; exit 1; }
done

psqlq() { gh_as_pg psql -X -q -v ON_ERROR_STOP=1 "$@"; }
# every load session: PostgreSQL's own joins for the constraint checks, room
# for index builds
export PGOPTIONS="${PGOPTIONS:-} -c gpuhash.enabled=off -c maintenance_work_mem=1GB"

# run_jobs CMD...: each CMD (a string for bash -c) J at a time; fails if any failed
run_jobs() {
  local running=0 failed=0 c
  for c in "$@"; do
    bash -c "$c" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
      wait -n || failed=1
      running=$((running - 1))
    fi
  done
  while [ "$running" -gt 0 ]; do
    wait -n || failed=1
    running=$((running - 1))
  done
  return $failed
}
export -f gh_as_pg psqlq
export GH_OSUSER

# ---------------------------------------------------------------- generate
if [ -n "$tbl_dir" ]; then
  mkdir -p "$tbl_dir"; tbl_dir=$(cd "$tbl_dir" && pwd)
else
  tbl_dir=$(mktemp -d /tmp/tpch-tbl.XXXXXX)
fi
cleanup() {
  if [ "$keep_tbl" -eq 1 ]; then echo "tbl files kept in $tbl_dir" >&2; else rm -rf "$tbl_dir"; fi
}
trap cleanup EXIT

t0=$(date +%s)
chunks=1
if awk -v s="$scale" 'BEGIN { exit !(s >= 1) }'; then chunks=$jobs; fi
gen=()
for k in $(seq 1 "$chunks"); do
  # each chunk in its own folder: every chunk writes nation.tbl and region.tbl
  mkdir -p "$tbl_dir/$k"
  if [ "$chunks" -gt 1 ]; then
    gen+=("cd '$tbl_dir/$k' && DSS_CONFIG='$dbgen' '$dbgen/dbgen' -q -f -s $scale -C $chunks -S $k")
  else
    gen+=("cd '$tbl_dir/$k' && DSS_CONFIG='$dbgen' '$dbgen/dbgen' -q -f -s $scale")
  fi
done
echo "dbgen: scale $scale in $chunks chunk(s) into $tbl_dir"
run_jobs "${gen[@]}" || { echo "dbgen failed" >&2; exit 1; }
echo "dbgen: $(du -sh "$tbl_dir" | cut -f1) in $(( $(date +%s) - t0 )) s"

# ---------------------------------------------------------------- load
t1=$(date +%s)
psqlq -f - <"$here/schema.sql"
psqlq -c "INSERT INTO tpch_meta (scale, source) VALUES ($scale, '$(sed "s/'/''/g" "$dbgen/SOURCE" 2>/dev/null || true)')"
tables="region nation part supplier partsupp customer orders lineitem"
copies=()
for t in $tables; do
  files=$(ls "$tbl_dir"/*/"$t".tbl* 2>/dev/null || true)
  [ -n "$files" ] || { echo "dbgen wrote no $t.tbl" >&2; exit 1; }
  # nation and region are whole in every chunk: load one copy
  case $t in nation|region) files=$(echo "$files" | head -1) ;; esac
  for f in $files; do
    copies+=("sed 's/|\$//' '$f' | psqlq -c \"COPY $t FROM STDIN (DELIMITER '|')\"")
  done
done
run_jobs "${copies[@]}" || { echo "COPY failed" >&2; exit 1; }
[ "$keep_tbl" -eq 1 ] || rm -rf "${tbl_dir:?}"/*
echo "COPY: ${#copies[@]} files in $(( $(date +%s) - t1 )) s"

# ---------------------------------------------------------------- keys
t2=$(date +%s)
declare -A KEYS=(
  [region]="ALTER TABLE region ADD PRIMARY KEY (r_regionkey);"
  [nation]="ALTER TABLE nation ADD PRIMARY KEY (n_nationkey);
            CREATE INDEX ON nation (n_regionkey);"
  [part]="ALTER TABLE part ADD PRIMARY KEY (p_partkey);"
  [supplier]="ALTER TABLE supplier ADD PRIMARY KEY (s_suppkey);
              CREATE INDEX ON supplier (s_nationkey);"
  [partsupp]="ALTER TABLE partsupp ADD PRIMARY KEY (ps_partkey, ps_suppkey);
              CREATE INDEX ON partsupp (ps_suppkey);"
  [customer]="ALTER TABLE customer ADD PRIMARY KEY (c_custkey);
              CREATE INDEX ON customer (c_nationkey);"
  [orders]="ALTER TABLE orders ADD PRIMARY KEY (o_orderkey);
            CREATE INDEX ON orders (o_custkey);"
  [lineitem]="ALTER TABLE lineitem ADD PRIMARY KEY (l_orderkey, l_linenumber);
              CREATE INDEX ON lineitem (l_partkey, l_suppkey);"
)
keys=()
for t in $tables; do keys+=("psqlq -c \"${KEYS[$t]}\""); done
run_jobs "${keys[@]}" || { echo "primary keys or indexes failed" >&2; exit 1; }
if [ "$fk" -eq 1 ]; then
  # one session: each check locks both of its tables, so checks that share a
  # table would only wait for each other
  psqlq <<'SQL' || { echo "foreign keys failed" >&2; exit 1; }
ALTER TABLE nation ADD FOREIGN KEY (n_regionkey) REFERENCES region;
ALTER TABLE supplier ADD FOREIGN KEY (s_nationkey) REFERENCES nation;
ALTER TABLE customer ADD FOREIGN KEY (c_nationkey) REFERENCES nation;
ALTER TABLE partsupp ADD FOREIGN KEY (ps_partkey) REFERENCES part;
ALTER TABLE partsupp ADD FOREIGN KEY (ps_suppkey) REFERENCES supplier;
ALTER TABLE orders ADD FOREIGN KEY (o_custkey) REFERENCES customer;
ALTER TABLE lineitem ADD FOREIGN KEY (l_orderkey) REFERENCES orders;
ALTER TABLE lineitem ADD FOREIGN KEY (l_partkey, l_suppkey) REFERENCES partsupp;
SQL
fi
echo "keys and indexes$( [ "$fk" -eq 1 ] || echo ' (no foreign keys)') in $(( $(date +%s) - t2 )) s"

t3=$(date +%s)
vac=()
for t in $tables; do vac+=("psqlq -c 'VACUUM (FREEZE, ANALYZE) $t'"); done
run_jobs "${vac[@]}" || { echo "VACUUM failed" >&2; exit 1; }
psqlq -c "UPDATE tpch_meta SET done = true, loaded_at = now()"
echo "VACUUM (FREEZE, ANALYZE) in $(( $(date +%s) - t3 )) s; loaded scale $scale in $(( $(date +%s) - t0 )) s"
psqlq -c "SELECT relname AS table, reltuples::bigint AS rows, pg_size_pretty(pg_total_relation_size(oid)) AS size
            FROM pg_class WHERE relname IN ($(echo "$tables" | sed "s/\([a-z]*\)/'\1'/g; s/ /, /g")) ORDER BY 1"
