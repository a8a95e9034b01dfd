#!/bin/bash
# test/cuda/device_run.sh - one GPU-host session for the static multimap and
# the aggregate: GPU unit tests (full), compute-sanitizer memcheck and
# racecheck (quick subsets), the multimap's microbenchmark.  Logs go to $OUT (or
# /tmp/mm_out); a summary is printed last.  Binaries built elsewhere (x86-64,
# CUDA 13) are used when present, else built here.
# Usage: test/cuda/device_run.sh [seed] [commit]
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:-/tmp/mm_out}
mkdir -p "$out"
seed=${1:-$(date +%s)}
commit=${2:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
export PATH=$PATH:/usr/local/cuda/bin

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv
} >"$out/gpu.txt" 2>&1

[ -x test/cuda/test_multimap_gpu ] && [ -x test/cuda/test_aggregate_gpu ] ||
  make -C test/cuda -s -j"$(nproc)" gpu >>"$out/gpu.txt" 2>&1
[ -x bench/multimap_bench ] || make -C bench -s multimap_bench >>"$out/gpu.txt" 2>&1

t0=$(date +%s)
timeout 180 test/cuda/test_multimap_gpu "$seed" >"$out/gpu_test.log" 2>&1
echo "exit $?" >>"$out/gpu_test.log"
timeout 120 test/cuda/test_aggregate_gpu "$seed" >"$out/agg_test.log" 2>&1
echo "exit $?" >>"$out/agg_test.log"
t1=$(date +%s)
timeout 180 bench/run_multimap.sh "$commit" >"$out/bench.md" 2>"$out/bench.err"
echo "exit $?" >>"$out/bench.err"
t2=$(date +%s)
{
  timeout 90 "$san" --tool memcheck --leak-check full --error-exitcode 3 test/cuda/test_multimap_gpu --quick "$seed"
  echo "memcheck exit $?"
  timeout 80 "$san" --tool racecheck --error-exitcode 3 test/cuda/test_multimap_gpu --quick "$seed"
  echo "racecheck exit $?"
  timeout 90 "$san" --tool memcheck --leak-check full --error-exitcode 3 test/cuda/test_aggregate_gpu --quick "$seed"
  echo "aggregate memcheck exit $?"
  timeout 80 "$san" --tool racecheck --error-exitcode 3 test/cuda/test_aggregate_gpu --quick "$seed"
  echo "aggregate racecheck exit $?"
} >"$out/sanitize.log" 2>&1
t3=$(date +%s)
# Per-kernel times of a few 10M builds and joins (clocks left as they are).
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout 120 "$ncu" --clock-control none --metrics gpu__time_duration.sum -k regex:k_ --csv \
  bench/multimap_bench --profile --reps 1 >"$out/ncu.csv" 2>&1
echo "ncu exit $?" >>"$out/ncu.csv"
t4=$(date +%s)

echo "== times: gpu test $((t1 - t0)) s, bench $((t2 - t1)) s, sanitizers $((t3 - t2)) s, ncu $((t4 - t3)) s"
for log in gpu_test agg_test; do
  echo "== $log: $(grep -c '^ok' "$out/$log.log") ok, $(grep -c '^not ok' "$out/$log.log") not ok"
  grep -A1 '^not ok' "$out/$log.log" | head -20
  grep -E '^#|^1\.\.|^exit|Bail' "$out/$log.log" | tail -5
done
echo "== sanitizers"
grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY|exit|not ok|Bail' "$out/sanitize.log" | head -20
echo "== bench"
tail -3 "$out/bench.err"
grep -E 'G reads/s' "$out/bench.md"
grep -E '^\| 0.5 \| (1|16) \| (1|2) \| linear' "$out/bench.md"
sed -n '/^## Inner join/,$p' "$out/bench.md" | grep -E '^\| 0.(5|9) \| (1|2) \|'
echo "== ncu (kernel: mean us over launches, in launch order of first appearance)"
grep -E '^profile|ncu exit' "$out/ncu.csv"
python3 - "$out/ncu.csv" <<'PY' || true
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 14 and r[12] == "gpu__time_duration.sum"]
seq = []
for r in rows:
    name = r[4].split("(")[0].split("::")[-1].split("<")[0]
    grid = r[8]
    seq.append((name + " " + r[7] + "x" + grid, float(r[14].replace(",", "")), r[13]))
for k, v, u in seq:
    print(f"{k:50s} {v:12.1f} {u}")
PY
