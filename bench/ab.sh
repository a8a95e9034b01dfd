#!/bin/bash
# bench/ab.sh - two builds of gpuhash side by side: the join or the aggregate
# benchmark for a "before" source tree and for this tree ("after"), with
# native PostgreSQL, on the same data, in one run.  What a change that must
# not alter speed (a refactor) is measured with.  Markdown on stdout; logs
# under $OUT (or /tmp/ab-out).
#
#   bench/ab.sh BEFORE_TREE join     bench/join/run.sh: data generated once at
#                                    $AB_SCALE (1.0), native once, then gpuhash
#                                    with each build, alternating $AB_ROUNDS
#                                    times (1: before, after), $AB_WORKERS (16)
#                                    workers, workloads $AB_WORKLOADS
#                                    ("int4 text left star"), force_join on
#   bench/ab.sh BEFORE_TREE agg      bench/agg/run.sh at $AB_ROWS (10^8) rows
#                                    and $AB_GROUPS (10^6) groups, native with
#                                    16 workers and gpuhash_aggregate, once per
#                                    build (each loads its own cluster)
#
# BEFORE_TREE is a copy of the sources to compare with, e.g.
#   mkdir .before && git archive COMMIT | tar -x -C .before
# (.before is git-ignored; pass it in the device call's carry).  Both trees
# are built first (make, PG_CONFIG from the environment); "installing" a
# build is its make install, and the cluster restarts after each, because
# gpuhash is preloaded.  Every run's results must equal native's.
# The commits compared are read from .ab-commit in each tree when present.
# On a GPU host: source .gpuhost/pg.sh first (it exports PG_CONFIG).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$root/test/lib.sh"

before=${1:?usage: bench/ab.sh BEFORE_TREE join|agg}
what=${2:?usage: bench/ab.sh BEFORE_TREE join|agg}
before=$(cd "$before" && pwd) || exit 2
out=${OUT:-/tmp/ab-out}
mkdir -p "$out"
pgc=${PG_CONFIG:-pg_config}
jobs=$(nproc)

# build TREE NAME: make in TREE; log in $out/build-NAME.log.  A tree that
# this script built already on this host with the same make settings (an
# earlier call on a warm GPU host) is not built again unless AB_REBUILD=1;
# a library built anywhere else (another machine, without nvcc) always is.
build() {
  local stamp="$(hostname) ${GPUHASH_CUDA:-default} $pgc"
  if [ "${AB_REBUILD:-0}" != 1 ] && [ -f "$1/gpuhash.so" ] && [ "$(cat "$1/.ab-built" 2>/dev/null)" = "$stamp" ]; then
    echo "$2: $1/gpuhash.so already built here ($stamp)" >"$out/build-$2.log"; return 0
  fi
  rm -f "$1/.ab-built"
  (cd "$1" && make -s clean >/dev/null 2>&1; make -s -j"$jobs" PG_CONFIG="$pgc") >"$out/build-$2.log" 2>&1 ||
    { echo "build of $2 ($1) failed:"; tail -20 "$out/build-$2.log"; exit 1; }
  echo "$stamp" >"$1/.ab-built"
}
# use TREE: install TREE's build (library and SQL scripts)
use() {
  (cd "$1" && make -s install PG_CONFIG="$pgc") >>"$out/install.log" 2>&1 ||
    { echo "install of $1 failed"; tail -20 "$out/install.log"; exit 1; }
}
build "$before" before
build "$root" after
chmod -R a+rX "$before" "$root"
declare -A TREE=([before]=$before [after]=$root)
echo "before: $before ($(cat "$before/.ab-commit" 2>/dev/null || echo 'commit not recorded'))"
echo "after: $root ($(cat "$root/.ab-commit" 2>/dev/null || git -C "$root" rev-parse --short HEAD 2>/dev/null || echo 'commit not recorded'))"
echo

rounds=${AB_ROUNDS:-1}
order=""
for _ in $(seq 1 "$rounds"); do order="$order before after"; done

case $what in
join)
  data=/tmp/ab-join-data
  args=(--scale "${AB_SCALE:-1.0}" --workers "${AB_WORKERS:-16}" --no-serial --force-join
        --workloads "${AB_WORKLOADS:-int4 text left star}" --repeats "${AB_REPEATS:-3}")
  use "$before"
  if [ -d "$data/data" ]; then reuse=(--reuse "$data"); else reuse=(--keep --datadir "$data"); fi
  echo "### native"
  bash "$here/join/run.sh" "${args[@]}" "${reuse[@]}" --variants native --out "$out/join-native" \
    >"$out/join-native.md" 2>>"$out/join.err" || { cat "$out/join-native.md"; exit 1; }
  cat "$out/join-native.md"
  n=0
  for b in $order; do
    n=$((n + 1))
    gh_cluster_stop "$data"
    use "${TREE[$b]}"
    echo; echo "### gpuhash, $b (run $n)"
    bash "$here/join/run.sh" "${args[@]}" --reuse "$data" --variants gpuhash --out "$out/join-$n-$b" \
      >"$out/join-$n-$b.md" 2>>"$out/join.err"
    cat "$out/join-$n-$b.md"
  done
  gh_cluster_stop "$data"
  # every run's result against native's, and the medians side by side
  echo
  echo "| workload | native s | gpuhash before s | gpuhash after s | after / before | before vs native | after vs native | results | GpuHashJoin nodes (before, after) |"
  echo "|---|---|---|---|---|---|---|---|---|"
  status=0
  for w in ${AB_WORKLOADS:-int4 text left star}; do
    ref=$(sed -n "s/^$w native [^:]*: .*, result //p" "$out/join-native/bench.log" | head -1)
    nat=$(sed -n "s/^$w native [^:]*: median \([0-9.]*\) s.*/\1/p" "$out/join-native/bench.log" | head -1)
    ok=same
    declare -A med=() nodes=()
    for d in "$out"/join-*-before "$out"/join-*-after; do
      [ -f "$d/bench.log" ] || continue
      b=${d##*-}
      m=$(sed -n "s/^$w gpuhash [^:]*: median \([0-9.]*\) s.*/\1/p" "$d/bench.log" | head -1)
      r=$(sed -n "s/^$w gpuhash [^:]*: .*, result //p" "$d/bench.log" | head -1)
      [ -n "$r" ] && [ "$r" = "$ref" ] || { ok=DIFFERENT; status=1; }
      med[$b]="${med[$b]:+${med[$b]} }$m"
      # a gpuhash run without a GPU join measured nothing of gpuhash's
      g=$(sed -n "s/^$w gpuhash [^:]*: .*GpuHashJoin\/GpuHashAgg nodes \([0-9]*\)\/.*/\1/p" "$d/bench.log" | head -1)
      [ "${g:-0}" -gt 0 ] || { ok="NO GPU JOIN"; status=1; }
      nodes[$b]="${nodes[$b]:+${nodes[$b]} }${g:-0}"
    done
    # with several rounds, the median of the rounds' medians (the lower of two)
    mb=$(printf '%s\n' ${med[before]:-} | sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]}')
    ma=$(printf '%s\n' ${med[after]:-} | sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]}')
    awk -v w="$w" -v n="$nat" -v b="$mb" -v a="$ma" -v ok="$ok" -v g="${nodes[before]:-} / ${nodes[after]:-}" 'BEGIN {
      printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", w, n, b, a,
        (b > 0 && a > 0) ? sprintf("%.3f", a / b) : "",
        (b > 0) ? sprintf("%.2fx", n / b) : "", (a > 0) ? sprintf("%.2fx", n / a) : "", ok, g }'
  done
  exit $status ;;
agg)
  rows=${AB_ROWS:-100000000} groups=${AB_GROUPS:-1000000}
  status=0
  n=0
  for b in $order; do
    n=$((n + 1))
    use "${TREE[$b]}"
    echo "### $b (run $n)"
    CONFIGS=${AB_AGG_CONFIGS:-"p16 gpu_p16"} REPEATS=${AB_REPEATS:-5} BENCH_LOG="$out/agg-$n-$b.log" \
      bash "$here/agg/run.sh" "$rows" "$groups" >"$out/agg-$n-$b.md" 2>>"$out/agg.err" || status=1
    cat "$out/agg-$n-$b.md"
    echo
  done
  exit $status ;;
*) echo "usage: bench/ab.sh BEFORE_TREE join|agg" >&2; exit 2 ;;
esac
