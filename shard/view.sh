#!/bin/bash
# shard/view.sh - a query that every shard runs on its own rows, and that
# the coordinator reads as one relation: what PostgreSQL 15 does not push
# down by itself (a GROUP BY without the partition key, a join with a
# dimension table) written as a view on each shard.
#
#   shard/view.sh --coordinator CONNINFO --shard CONNINFO [--shard ...]
#                 [--schema NAME] VIEW FILE
#
#   FILE     one SELECT over the shards' own tables (their part of the facts,
#            their copies of the dimensions), e.g. a join with a dimension
#            and a GROUP BY with partial aggregates: sum and count rather
#            than avg, which the coordinator cannot merge
#   --shard  the shards in the order shard/setup.sh was given them: shard k
#            is the coordinator's server shard_k
#   --schema the coordinator's schema (default sharded, as setup.sh's)
#
# Each shard gets the view public.VIEW; the coordinator gets, in SCHEMA, a
# foreign table VIEW_k on each shard's view (IMPORT FOREIGN SCHEMA) and the
# view VIEW, their UNION ALL: an Append whose Foreign Scans run at once
# (async_capable), each shard planning its view with gpuhash.  The
# coordinator merges what the shards return with a GROUP BY of its own:
#   SELECT g, sum(s), sum(s) / sum(n) FROM sharded.VIEW GROUP BY g
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

coord="" shards=() schema=sharded
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --coordinator) coord=$2; shift ;;
    --shard) shards+=("$2"); shift ;;
    --schema) schema=$2; shift ;;
    -h|--help) usage ;;
    -*) echo "unknown option $1" >&2; usage ;;
    *) break ;;
  esac
  shift
done
[ $# -eq 2 ] && [ -n "$coord" ] && [ ${#shards[@]} -ge 1 ] || usage
view=$1 file=$2
case $view in [a-z_]*) ;; *) echo "VIEW: a lower-case SQL identifier, not $view" >&2; exit 2 ;; esac
# the SELECT without a trailing semicolon
body=$(sed -e 's/;[[:space:]]*$//' "$file")
n=${#shards[@]}

for k in $(seq 1 "$n"); do
  shard_q "${shards[$((k - 1))]}" -c "CREATE OR REPLACE VIEW public.$view AS $body"
done

{
  echo "DROP VIEW IF EXISTS \"$schema\".$view;"
  echo "DROP SCHEMA IF EXISTS ${view}_import CASCADE;"
  echo "CREATE SCHEMA ${view}_import;"
  union=""
  for k in $(seq 1 "$n"); do
    echo "DROP FOREIGN TABLE IF EXISTS \"$schema\".${view}_$k;"
    echo "IMPORT FOREIGN SCHEMA public LIMIT TO ($view) FROM SERVER shard_$k INTO ${view}_import;"
    echo "ALTER FOREIGN TABLE ${view}_import.$view RENAME TO ${view}_$k;"
    echo "ALTER FOREIGN TABLE ${view}_import.${view}_$k SET SCHEMA \"$schema\";"
    union="$union${union:+ UNION ALL }SELECT * FROM \"$schema\".${view}_$k"
  done
  echo "DROP SCHEMA ${view}_import;"
  echo "CREATE VIEW \"$schema\".$view AS $union;"
} | shard_q "$coord" -f -
echo "$view: a view on $n shards, read on the coordinator as \"$schema\".$view" >&2
