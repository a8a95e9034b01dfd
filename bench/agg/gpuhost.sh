#!/bin/bash
# bench/agg/gpuhost.sh - gpuhash_aggregate on a GPU host in one call: build,
# the device code alone (bench/agg/kernels.cu: GPU vs CPU twin, then kernel
# timings), the aggregate regression suites and pgTAP file with
# gpuhash.device = gpu, then the benchmark (bench/agg/run.sh).
#
#   bash bench/agg/gpuhost.sh [BENCH_ROWS [GROUPS...]]    (BENCH_ROWS 0: no benchmark)
#
# AGG_KERNEL_TIME=0 skips the kernel timings, AGG_KERNELS=0 the device code
# (its build, check and timings), AGG_TESTS=0 every check (build and
# benchmark only); the benchmark's own settings
# (REPEATS, CONFIGS, BENCH_LOAD_JOBS, ...) pass through to bench/agg/run.sh.
# GPUHOST_BUDGET (seconds for this whole script, e.g. the device call's
# limit less a margin) sets the benchmark's deadlines from what is left of it
# (BENCH_HARD_DEADLINE 15 s before the end, BENCH_DEADLINE 90 s before
# that, unless given); every timing also goes to $OUT/bench.log as taken.
#
# Logs and results go under $OUT (default /tmp/agg-gpuhost).  Carries
# PostgreSQL from .gpuhost/ (see ../../test/gpuhost.sh).  Exits non-zero if a
# check failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
t_start=$(date +%s)
out=${OUT:-/tmp/agg-gpuhost}
mkdir -p "$out"
chmod -R a+rX .
# not 5432: a warm host may still run someone else's cluster there
source .gpuhost/pg.sh "${GPUHOST_PG_PORT:-5437}" >"$out/pg.log" 2>&1 || { cat "$out/pg.log"; exit 1; }
# pg.sh starts a cluster of its own; this script starts the ones it needs
su pgrun -c "env LD_LIBRARY_PATH=$LD_LIBRARY_PATH pg_ctl -D $PGDATA -m fast -w stop" >/dev/null 2>&1
unset PGHOST PGPORT PGDATA
export GPUHASH_SKIP_DEPS=1
. test/lib.sh
rc=0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"

echo "== build"
if ! { make -s -j"$(nproc)" && make -s install; } >"$out/build.log" 2>&1; then
  tail -30 "$out/build.log"; exit 1
fi
grep -E 'warning' "$out/build.log" | head

if [ "${AGG_TESTS:-1}" != 0 ]; then
if [ "${AGG_KERNELS:-1}" != 0 ]; then
echo "== device code: GPU vs CPU twin, then timings"
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if $nvcc -O3 -std=c++17 -Icuda -gencode=arch=compute_90,code=sm_90 -o /tmp/agg_kernels \
     bench/agg/kernels.cu cuda/aggregate.cu cuda/aggregate_cpu.c >"$out/kernels-build.log" 2>&1; then
  /tmp/agg_kernels check 2>&1 | tee "$out/kernels.txt" || rc=1
  if [ "${AGG_KERNEL_TIME:-1}" != 0 ]; then
    timeout 240 /tmp/agg_kernels time 100000000 10 1000000 50000000 2>&1 | tee -a "$out/kernels.txt" || rc=1
  fi
else
  tail -20 "$out/kernels-build.log"; rc=1
fi
fi

echo "== pg_regress (gpuhash.device = gpu)"
work=$(gh_tmpdir)
cat >"$work/regress.conf" <<CONF
shared_preload_libraries = 'gpuhash'
gpuhash.device = gpu
gpuhash_test.gpu = on
max_parallel_workers_per_gather = 2
jit = off
CONF
pgxs=$(dirname "$(pg_config --pgxs)")/..
gh_as_pg "$pgxs/test/regress/pg_regress" --inputdir="$root" --outputdir="$work" \
  --temp-instance="$work/tmp_check" --temp-config="$work/regress.conf" \
  --bindir="$(gh_pg_bindir)" --dbname=contrib_regression \
  setup aggregate aggregate_keys aggregate_refuse >"$out/regress.log" 2>&1 || rc=1
grep -E '^(test|ok|not ok)|tests (passed|failed)' "$out/regress.log"
if [ -f "$work/regression.diffs" ]; then
  cp "$work/regression.diffs" "$out/"; head -80 "$work/regression.diffs"; rc=1
fi

echo "== pgTAP (gpuhash.device = gpu)"
cl=$(gh_tmpdir)
port=$(gh_free_port)
if gh_cluster_start "$cl" "$port" "gpuhash.device = gpu
jit = off"; then
  gh_as_pg psql -X -q -d postgres -c "CREATE DATABASE agg_tap" -c "\\c agg_tap" -c "CREATE EXTENSION pgtap" >/dev/null
  cp test/pgtap/aggregate.sql "$cl/aggregate.sql" && chmod a+r "$cl/aggregate.sql"
  gh_as_pg pg_prove -h "$cl" -p "$port" -U postgres -d agg_tap "$cl/aggregate.sql" >"$out/pgtap.log" 2>&1 || rc=1
  tail -3 "$out/pgtap.log"
  gh_cluster_stop "$cl"
else
  rc=1
fi

fi

rows=${1:-20000000}
if [ "$rows" != 0 ]; then
  echo "== benchmark (setup took $(( $(date +%s) - t_start )) s)"
  shift || true
  if [ -n "${GPUHOST_BUDGET:-}" ]; then
    left=$(( GPUHOST_BUDGET - ($(date +%s) - t_start) ))
    export BENCH_HARD_DEADLINE=${BENCH_HARD_DEADLINE:-$(( left - 15 ))}
    export BENCH_DEADLINE=${BENCH_DEADLINE:-$(( left - 105 ))}
  fi
  BENCH_LOG=${BENCH_LOG:-$out/bench.log} bash bench/agg/run.sh "$rows" "$@" 2>"$out/bench.err" | tee "$out/bench.md" || rc=1
  tail -5 "$out/bench.err"
fi
exit $rc
