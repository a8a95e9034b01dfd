#!/bin/bash
# bench/tpch/queries.sh - writes the 22 TPC-H queries in PostgreSQL's SQL:
# qgen (built by build.sh) fills its templates with the default substitution
# parameters (qgen -d, the validation parameters of the specification), and
# the output is adapted here, at run time, so that no query text is kept in
# the repository.
#
#   bench/tpch/queries.sh [--scale S] OUTDIR [QUERY...]
#     --scale S   the data's scale factor: Q11's FRACTION is 0.0001 / S
#                 (default 1)
#     QUERY       query numbers (default 1 to 22); writes OUTDIR/N.sql
#
# The adaptation (qgen built with DATABASE=DB2, see build.sh):
#   - "interval 'n' day (3)": PostgreSQL takes no precision on a DAY field;
#     the "(3)" goes.
#   - "--#SET ROWS_FETCH n" after a query: with n > 0 the query's final ";"
#     becomes "limit n;" (Q2, Q3, Q10, Q18, Q21); n = -1 (no limit) is
#     dropped.
# Nothing else changes: Q15 stays three statements (create view, select,
# drop view).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dbgen=${TPCH_DBGEN_DIR:-$here/.dbgen}

scale=1
while [ $# -gt 0 ]; do
  case $1 in
    --scale) scale=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
[ $# -ge 1 ] || { echo "usage: $0 [--scale S] OUTDIR [QUERY...]" >&2; exit 2; }
outdir=$1; shift
queries=${*:-$(seq 1 22)}
[ -x "$dbgen/qgen" ] || { echo "$dbgen/qgen missing: run bench/tpch/build.sh first" >&2; exit 1; }
mkdir -p "$outdir"

for q in $queries; do
  case $q in [1-9]|1[0-9]|2[0-2]) ;; *) echo "no TPC-H query $q" >&2; exit 2 ;; esac
  # qgen reads its templates from DSS_QUERY and dists.dss from DSS_CONFIG
  DSS_QUERY=$dbgen/queries DSS_CONFIG=$dbgen "$dbgen/qgen" -d -s "$scale" "$q" >"$outdir/$q.raw"
  sed -E "s/(interval '[^']*' (year|month|day))[[:space:]]*\([0-9]+\)/\1/Ig" "$outdir/$q.raw" |
    awk '
      /^--#SET ROWS_FETCH/ {
        n = $3 + 0
        if (n > 0) {
          for (i = nl; i > 0; i--)
            if (line[i] ~ /;[[:space:]]*$/) { sub(/;[[:space:]]*$/, "\nlimit " n ";", line[i]); break }
          if (i == 0) { print "row limit without a statement before it" > "/dev/stderr"; exit 1 }
        }
        next
      }
      { line[++nl] = $0 }
      END { for (i = 1; i <= nl; i++) print line[i] }' >"$outdir/$q.sql"
  rm -f "$outdir/$q.raw"
  # what the adaptation leaves must be plain SQL: no qgen directive or DB2 syntax
  if grep -qE '^--#|:[a-z0-9]|day \(|rownum' "$outdir/$q.sql"; then
    echo "query $q: qgen's output has a form this script does not adapt:" >&2
    grep -nE '^--#|:[a-z0-9]|day \(|rownum' "$outdir/$q.sql" >&2
    exit 1
  fi
done
