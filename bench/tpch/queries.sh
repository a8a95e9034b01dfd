#!/bin/bash
# bench/tpch/queries.sh - writes the 22 TPC-H queries in PostgreSQL's SQL:
# qgen (built by build.sh) fills its templates with the default substitution
# parameters (qgen -d, the validation parameters of the specification), and
# the output is adapted here, at run time, so that no query text is kept in
# the repository.
#
#   bench/tpch/queries.sh [--scale S] [--decorrelate] OUTDIR [QUERY...]
#     --scale S   the data's scale factor: Q11's FRACTION is 0.0001 / S
#                 (default 1)
#     --decorrelate  Q17 and Q20 in the decorrelated form that TPC-H
#                 studies commonly run (see below); other queries unchanged
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
#
# --decorrelate rewrites the correlated scalar subquery of Q17 and of Q20
# into a GROUP BY of lineitem joined on its correlation columns:
#   Q17: l_quantity < (SELECT c * avg(l_quantity) FROM lineitem WHERE
#        l_partkey = p_partkey) becomes l_quantity < agg_quantity with
#        (SELECT l_partkey AS agg_partkey, c * avg(l_quantity) AS
#        agg_quantity FROM lineitem GROUP BY l_partkey) joined on
#        agg_partkey = l_partkey;
#   Q20: ps_availqty > (SELECT c * sum(l_quantity) FROM lineitem WHERE
#        l_partkey = ps_partkey AND l_suppkey = ps_suppkey AND <dates>)
#        becomes ps_availqty > agg_quantity with the same GROUP BY
#        l_partkey, l_suppkey (the dates as its WHERE) joined on both.
# Both give the same rows: a part (a part and supplier) with no lineitem
# row makes the subquery NULL and the comparison not true, and has no
# group to join.  The substitution parameters stay qgen's.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dbgen=${TPCH_DBGEN_DIR:-$here/.dbgen}

scale=1 decorrelate=0
while [ $# -gt 0 ]; do
  case $1 in
    --scale) scale=$2; shift ;;
    --decorrelate) decorrelate=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
[ $# -ge 1 ] || { echo "usage: $0 [--scale S] [--decorrelate] OUTDIR [QUERY...]" >&2; exit 2; }
outdir=$1; shift
queries=${*:-$(seq 1 22)}
[ -x "$dbgen/qgen" ] || { echo "$dbgen/qgen missing: run bench/tpch/build.sh first" >&2; exit 1; }
mkdir -p "$outdir"

# decorrelate_query N FILE: rewrites Q17 or Q20 in FILE (see above); fails
# when qgen's text is not the form it expects
decorrelate_query() {
  local q=$1 f=$2
  QUERY=$q perl -0777 -i -pe '
    my $ws = qr/\s+/;
    if ($ENV{QUERY} == 17) {
      s/and${ws}l_quantity\s*<\s*\(\s*select${ws}([0-9.]+)\s*\*\s*avg\(l_quantity\)${ws}from${ws}lineitem${ws}where${ws}l_partkey\s*=\s*p_partkey\s*\)/and l_quantity < agg_quantity/
        or die "Q17: no correlated subquery of the expected form\n";
      my $c = $1;
      s/from${ws}lineitem,${ws}part${ws}where${ws}/from\n\tlineitem,\n\tpart,\n\t(select l_partkey as agg_partkey, $c * avg(l_quantity) as agg_quantity\n\t   from lineitem group by l_partkey) part_agg\nwhere\n\tagg_partkey = l_partkey\n\tand /
        or die "Q17: no FROM clause of the expected form\n";
    } else {
      s/from${ws}partsupp${ws}where${ws}(ps_partkey${ws}in${ws}\([^()]*\))${ws}and${ws}ps_availqty\s*>\s*\(\s*select${ws}([0-9.]+)\s*\*\s*sum\(l_quantity\)${ws}from${ws}lineitem${ws}where${ws}l_partkey\s*=\s*ps_partkey${ws}and${ws}l_suppkey\s*=\s*ps_suppkey${ws}and${ws}(l_shipdate[^()]*?year)\s*\)/from\n\t\t\tpartsupp,\n\t\t\t(select l_partkey as agg_partkey, l_suppkey as agg_suppkey, $2 * sum(l_quantity) as agg_quantity\n\t\t\t   from lineitem where $3\n\t\t\t  group by l_partkey, l_suppkey) agg_lineitem\n\t\twhere\n\t\t\tagg_partkey = ps_partkey\n\t\t\tand agg_suppkey = ps_suppkey\n\t\t\tand $1\n\t\t\tand ps_availqty > agg_quantity/s
        or die "Q20: no correlated subquery of the expected form\n";
    }' "$f" || { echo "query $q: could not decorrelate qgen's text" >&2; return 1; }
}

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
  if [ "$decorrelate" -eq 1 ] && { [ "$q" = 17 ] || [ "$q" = 20 ]; }; then
    decorrelate_query "$q" "$outdir/$q.sql" || exit 1
  fi
  # what the adaptation leaves must be plain SQL: no qgen directive or DB2 syntax
  if grep -qE '^--#|:[a-z0-9]|day \(|rownum' "$outdir/$q.sql"; then
    echo "query $q: qgen's output has a form this script does not adapt:" >&2
    grep -nE '^--#|:[a-z0-9]|day \(|rownum' "$outdir/$q.sql" >&2
    exit 1
  fi
done
