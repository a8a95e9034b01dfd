#!/bin/bash
# bench/tpch/build.sh - builds the TPC-H data generator (dbgen) and query
# generator (qgen) from a copy of their sources into bench/tpch/.dbgen/,
# which git ignores: third-party code and the query templates never enter
# the repository.  Needs gcc and make only.
#
#   bench/tpch/build.sh [SOURCE]
#     SOURCE   the tpch-dbgen 2.14 sources (github.com/electrum/tpch-dbgen):
#              a bare git directory (a mirror or snapshot), a clone, or a
#              plain source folder.  Default: $TPCH_DBGEN_SRC, else
#              /work/.mirror/electrum+tpch-dbgen/repo.
#
# Result, everything run.sh and load.sh read (carry this folder, not the
# sources, to a machine without network):
#   .dbgen/dbgen  .dbgen/qgen   the programs
#   .dbgen/dists.dss            dbgen's and qgen's distributions (DSS_CONFIG)
#   .dbgen/queries/N.sql        qgen's query templates (DSS_QUERY)
#   .dbgen/SOURCE               where the sources came from, and their commit
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=$here/.dbgen

case ${1:-} in -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;; esac
src=${1:-${TPCH_DBGEN_SRC:-/work/.mirror/electrum+tpch-dbgen/repo}}

if [ ! -e "$src" ]; then
  cat >&2 <<EOF
tpch-dbgen sources not found at $src.
Get them with the library's fetch tool (fetch github:electrum/tpch-dbgen, which
leaves a bare git directory under /work/.mirror/) or with
  git clone https://github.com/electrum/tpch-dbgen
and pass the path: bench/tpch/build.sh PATH (or set TPCH_DBGEN_SRC).
EOF
  exit 1
fi
tools="gcc make"
# a bare git directory (a mirror) is read with git archive
[ -f "$src/HEAD" ] && [ -d "$src/objects" ] && tools="$tools git"
for tool in $tools; do
  command -v $tool >/dev/null 2>&1 || { echo "$tool is missing (Debian: apt-get install $tool)" >&2; exit 1; }
done

# a scratch copy of the sources: the build writes objects beside them, and a
# bare git directory has no files to build in
work=$(mktemp -d /tmp/tpch-dbgen.XXXXXX)
trap 'rm -rf "$work"' EXIT
if git --git-dir="$src" rev-parse --verify -q HEAD >/dev/null 2>&1; then
  git --git-dir="$src" archive HEAD | tar x -C "$work"
  origin="$src (bare git directory), commit $(git --git-dir="$src" rev-parse HEAD)"
elif git -C "$src" rev-parse --verify -q HEAD >/dev/null 2>&1 && [ -f "$src/driver.c" ]; then
  git -C "$src" archive HEAD | tar x -C "$work"
  origin="$src (clone), commit $(git -C "$src" rev-parse HEAD)"
elif [ -f "$src/driver.c" ]; then
  cp -r "$src"/. "$work"/
  origin="$src (source folder)"
else
  echo "$src holds no tpch-dbgen sources (no driver.c)" >&2
  exit 1
fi
for f in makefile.suite dists.dss qgen.c driver.c; do
  [ -f "$work/$f" ] || { echo "$src: $f missing, not the tpch-dbgen sources?" >&2; exit 1; }
done

# The sources know no PostgreSQL dialect.  DATABASE=DB2 gives the closest
# SQL: qgen's row-count directive becomes a comment line (--#SET ROWS_FETCH
# n) that queries.sh turns into a LIMIT, and DB2's other directives appear
# only under qgen flags that are not used here.  MACHINE=LINUX: 64-bit
# integers and the C library's getopt.  The makefile's own CFLAGS (no
# optimisation) are kept: generation is a small part of a load, and the data
# must be exactly what the sources produce.
echo "building dbgen and qgen from $origin"
if ! make -C "$work" -f makefile.suite -j"$(nproc)" CC=gcc DATABASE=DB2 MACHINE=LINUX WORKLOAD=TPCH \
     dbgen qgen >"$work/build.log" 2>&1; then
  tail -30 "$work/build.log" >&2
  echo "build failed" >&2
  exit 1
fi

rm -rf "$dest"
mkdir -p "$dest/queries"
cp "$work/dbgen" "$work/qgen" "$work/dists.dss" "$dest/"
cp "$work"/queries/[0-9]*.sql "$dest/queries/"
echo "$origin" >"$dest/SOURCE"
chmod -R a+rX "$dest"
echo "built: $dest/dbgen, $dest/qgen ($(ls "$dest/queries" | wc -l) query templates)"
