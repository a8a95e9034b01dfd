#!/bin/bash
# shard/setup.sh - spreads a database's fact tables over shard servers with
# PostgreSQL's own means: on the coordinator a hash-partitioned table whose
# partitions are postgres_fdw foreign tables, one per shard; on every shard
# plain tables that gpuhash accelerates, and the dimension tables copied
# whole, so that a shard can join its part of the facts with them.
#
#   shard/setup.sh --coordinator CONNINFO --shard CONNINFO [--shard ...]
#                  --fact TABLE:KEY [--fact ...] [--replicate "T1 T2 ..."]
#                  [--schema NAME] [--no-post-data] [--no-gpuhash]
#
#   --coordinator   the database that holds the tables now, with their rows,
#                   in schema public (libpq keyword=value string, see
#                   shard/lib.sh); it keeps them
#   --shard         a shard's database, once per shard (made when missing);
#                   shard k is postgres_fdw server shard_k on the
#                   coordinator, and holds the rows of hash remainder k - 1
#   --fact T:KEY    a table to spread, by the hash of KEY (a column, or
#                   columns "a,b"); tables joined on their keys (TPC-H's
#                   lineitem:l_orderkey and orders:o_orderkey) land together
#   --replicate     tables copied whole to every shard (dimensions)
#   --schema        the coordinator's schema for the partitioned tables
#                   (default sharded): with search_path = sharded, public
#                   a query reads the sharded facts and the local dimensions
#   --no-post-data  no primary keys, foreign keys or indexes on the shards
#   --no-gpuhash    do not require gpuhash on the shards
#
# Steps:
#   1. Coordinator: CREATE EXTENSION postgres_fdw (and gpuhash where it is
#      installed); a server per shard with async_capable (its Foreign Scans
#      run at once under an Append), use_remote_estimate (without it
#      postgres_fdw prices a pushed-down join as a cross product and never
#      ships one), fetch_size 10000 and batch_size 1000 (fewer round trips),
#      and options '-c cursor_tuple_fraction=1': postgres_fdw reads every
#      remote query through a cursor and fetches all of it, but a cursor is
#      planned for its first tenth of rows, which prefers index-ordered merge
#      joins and group aggregates to hash joins and hash aggregates, the
#      GPU's among them; a user mapping for the current user.
#   2. Coordinator: each fact table again as SCHEMA.T, PARTITION BY HASH
#      (KEY), with one foreign partition per shard (MODULUS N, REMAINDER
#      k - 1) reading public.T there.
#   3. Shards, at once: gpuhash, the tables' definitions (pg_dump's
#      pre-data section), the dimensions' rows, each fact's rows that its
#      partition's constraint admits (satisfies_hash_partition, the very
#      test the coordinator routes rows by), then keys and indexes
#      (post-data), VACUUM (FREEZE, ANALYZE).
#   4. Coordinator: ANALYZE of the partitioned tables and their partitions;
#      ALTER DATABASE ... SET enable_partitionwise_join and
#      enable_partitionwise_aggregate on, so that joins of co-located facts
#      and GROUP BYs of the partition key go to the shards.
#   5. A check that the shards hold every row once: each fact's rows over
#      the shards add up to the coordinator's count.
#
# Dimensions stay on the coordinator as local tables: PostgreSQL 15 joins a
# partitioned table with an unpartitioned one above the Append, so those
# joins run on the coordinator (with gpuhash where it is installed) whatever
# the shards hold, and a local copy spares them a remote read per query.
# The shards' copies serve what the shard runs itself: shard/view.sh.
# Rerunning the script drops and remakes what it made (the servers, the
# shards' copies of the tables named).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

coord="" shards=() facts=() replicate="" schema=sharded post_data=1 need_gpuhash=1
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --coordinator) coord=$2; shift ;;
    --shard) shards+=("$2"); shift ;;
    --fact) facts+=("$2"); shift ;;
    --replicate) replicate="$replicate $2"; shift ;;
    --schema) schema=$2; shift ;;
    --no-post-data) post_data=0 ;;
    --no-gpuhash) need_gpuhash=0 ;;
    -h|--help) usage ;;
    *) echo "unknown option $1" >&2; usage ;;
  esac
  shift
done
[ -n "$coord" ] && [ ${#shards[@]} -ge 1 ] && [ ${#facts[@]} -ge 1 ] || usage
for tool in psql pg_dump; do
  command -v $tool >/dev/null 2>&1 || { echo "$tool is not on PATH" >&2; exit 1; }
done
n=${#shards[@]}
t0=$(date +%s)
say() { echo "[$(( $(date +%s) - t0 ))s] $*" >&2; }

fact_tables=() fact_keys=()
for f in "${facts[@]}"; do
  case $f in *:*) ;; *) echo "--fact TABLE:KEY, not $f" >&2; exit 2 ;; esac
  fact_tables+=("${f%%:*}"); fact_keys+=("${f#*:}")
done
# shellcheck disable=SC2206
dims=($replicate)
all_tables=("${fact_tables[@]}" "${dims[@]}")
for t in "${all_tables[@]}"; do
  [ "$(shard_q "$coord" -c "SELECT to_regclass('public.$t') IS NOT NULL")" = t ] ||
    { echo "the coordinator has no table public.$t" >&2; exit 1; }
done

# ---------------------------------------------------------------- shards' databases
for k in $(seq 1 "$n"); do
  conn=${shards[$((k - 1))]}
  if ! shard_q "$conn" -c 'SELECT 1' >/dev/null 2>&1; then
    db=$(shard_conn_value "$conn" dbname)
    [ -n "$db" ] || { echo "cannot connect to shard $k ($conn)" >&2; exit 1; }
    say "shard $k: CREATE DATABASE $db"
    shard_q "$(shard_conn_with "$conn" dbname postgres)" -c "CREATE DATABASE \"$db\""
  fi
  if [ "$(shard_q "$conn" -c "SELECT count(*) FROM pg_available_extensions WHERE name = 'gpuhash'")" = 1 ]; then
    shard_q "$conn" -c 'CREATE EXTENSION IF NOT EXISTS gpuhash'
  elif [ "$need_gpuhash" = 1 ]; then
    echo "shard $k has no gpuhash installed (--no-gpuhash to go on without it)" >&2; exit 1
  fi
done

# ---------------------------------------------------------------- coordinator
say "coordinator: postgres_fdw, $n servers, schema $schema"
{
  echo "CREATE EXTENSION IF NOT EXISTS postgres_fdw;"
  if [ "$(shard_q "$coord" -c "SELECT count(*) FROM pg_available_extensions WHERE name = 'gpuhash'")" = 1 ]; then
    echo "CREATE EXTENSION IF NOT EXISTS gpuhash;"
  fi
  echo "CREATE SCHEMA IF NOT EXISTS \"$schema\";"
  for k in $(seq 1 "$n"); do
    conn=${shards[$((k - 1))]}
    echo "DROP SERVER IF EXISTS shard_$k CASCADE;"
    echo "CREATE SERVER shard_$k FOREIGN DATA WRAPPER postgres_fdw OPTIONS ($(shard_fdw_options "$conn" server),
            async_capable 'true', use_remote_estimate 'true', fetch_size '10000', batch_size '1000',
            options '-c cursor_tuple_fraction=1');"
    mapping=$(shard_fdw_options "$conn" mapping)
    echo "CREATE USER MAPPING FOR CURRENT_USER SERVER shard_$k${mapping:+ OPTIONS ($mapping)};"
  done
  for i in "${!fact_tables[@]}"; do
    t=${fact_tables[$i]}
    echo "DROP TABLE IF EXISTS \"$schema\".$t;"
    echo "CREATE TABLE \"$schema\".$t (LIKE public.$t) PARTITION BY HASH (${fact_keys[$i]});"
    for k in $(seq 1 "$n"); do
      echo "CREATE FOREIGN TABLE \"$schema\".${t}_$k PARTITION OF \"$schema\".$t
              FOR VALUES WITH (MODULUS $n, REMAINDER $((k - 1)))
              SERVER shard_$k OPTIONS (schema_name 'public', table_name '$t');"
    done
  done
} | shard_q "$coord" -f -

# ---------------------------------------------------------------- shards' rows
dump_args=(--no-owner --no-privileges)
for t in "${all_tables[@]}"; do dump_args+=(-t "public.$t"); done
# fill_shard K: the tables, rows, keys and statistics of shard K
fill_shard() {
  local k=$1 conn=${shards[$(($1 - 1))]} t i
  {
    for t in "${all_tables[@]}"; do echo "DROP TABLE IF EXISTS public.$t CASCADE;"; done
  } | shard_q "$conn" -f -
  pg_dump -d "$coord" --section=pre-data "${dump_args[@]}" | shard_q "$conn" -f - >/dev/null
  for t in "${dims[@]}"; do
    shard_q "$coord" -c "COPY public.$t TO STDOUT" | shard_q "$conn" -c "COPY public.$t FROM STDIN"
  done
  for i in "${!fact_tables[@]}"; do
    t=${fact_tables[$i]}
    shard_q "$coord" -c "COPY (SELECT * FROM public.$t WHERE satisfies_hash_partition('\"$schema\".$t'::regclass, $n, $((k - 1)), ${fact_keys[$i]})) TO STDOUT" |
      shard_q "$conn" -c "COPY public.$t FROM STDIN"
  done
  if [ "$post_data" = 1 ]; then
    pg_dump -d "$coord" --section=post-data "${dump_args[@]}" | shard_q "$conn" -f - >/dev/null
  fi
  shard_q "$conn" -c "VACUUM (FREEZE, ANALYZE)"
}
say "shards: tables, rows$( [ "$post_data" = 1 ] && echo ', keys'), statistics"
pids=()
for k in $(seq 1 "$n"); do fill_shard "$k" & pids+=($!); done
failed=0
for p in "${pids[@]}"; do wait "$p" || failed=1; done
[ "$failed" = 0 ] || { echo "filling a shard failed" >&2; exit 1; }

# ---------------------------------------------------------------- statistics, settings
say "coordinator: ANALYZE, partitionwise settings"
{
  for t in "${fact_tables[@]}"; do
    echo "ANALYZE \"$schema\".$t;"
    for k in $(seq 1 "$n"); do echo "ANALYZE \"$schema\".${t}_$k;"; done
  done
  echo "DO \$\$ BEGIN
  EXECUTE format('ALTER DATABASE %I SET enable_partitionwise_join = on', current_database());
  EXECUTE format('ALTER DATABASE %I SET enable_partitionwise_aggregate = on', current_database());
END \$\$;"
} | shard_q "$coord" -f -

# ---------------------------------------------------------------- check
for t in "${fact_tables[@]}"; do
  total=$(shard_q "$coord" -c "SELECT count(*) FROM public.$t")
  spread=0 parts=""
  for k in $(seq 1 "$n"); do
    c=$(shard_q "${shards[$((k - 1))]}" -c "SELECT count(*) FROM public.$t")
    spread=$((spread + c)); parts="$parts $c"
  done
  if [ "$spread" != "$total" ]; then
    echo "$t: the shards hold $spread rows ($parts), the coordinator $total" >&2; exit 1
  fi
  say "$t: $total rows over $n shards:$parts"
done
say "done: SET search_path = \"$schema\", public to query the sharded tables"
