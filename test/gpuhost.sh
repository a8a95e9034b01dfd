#!/bin/bash
# test/gpuhost.sh - one call on a GPU host without PostgreSQL (see
# ../shared/gpuhost): carry PostgreSQL there, then run the given steps and
# keep their logs under $OUT (or /tmp/gpuhost-out).
#
#   test/gpuhost.sh tests device     steps: tests (test/run.sh with
#                                    gpuhash.device = gpu), device
#                                    (bench/run_device.sh), multimap
#                                    (bench/run_multimap.sh), joinbench
#                                    (bench/join/run.sh $JOINBENCH_ARGS), sanitize
#                                    (compute-sanitizer on the CUDA tests)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/gpuhost-out}
mkdir -p "$out"
chmod -R a+rX .
source .gpuhost/pg.sh ${GPUHOST_PORT:-5432} >"$out/pg.log" 2>&1 || { cat "$out/pg.log"; exit 1; }
export GPUHASH_SKIP_DEPS=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
rc=0
for step in "$@"; do
  echo "== $step"
  case $step in
    tests)
      GPUHASH_TEST_DEVICE=gpu GPUHASH_TEST_LOGDIR=/tmp/gh-logs bash test/run.sh >"$out/tests.log" 2>&1 || rc=1
      tail -25 "$out/tests.log"
      tar czf "$out/test-logs.tgz" -C /tmp gh-logs 2>/dev/null ;;
    device)
      bash bench/run_device.sh 5 2>"$out/device.err" | tee "$out/device.md" || rc=1 ;;
    joinbench)
      # JOINBENCH_ARGS: e.g. "--scale 0.1 --workloads 'int4 text left floor'"
      eval "bash bench/join/run.sh --out /tmp/joinbench ${JOINBENCH_ARGS:-}" 2>&1 | tee "$out/joinbench.md" || rc=1
      tar czf "$out/joinbench-logs.tgz" -C /tmp joinbench 2>/dev/null ;;
    joinexplain)
      bash bench/join/explain.sh /tmp/jbdata 2>&1 | tee "$out/joinexplain.txt" || rc=1 ;;
    multimap)
      bash bench/run_multimap.sh 2>&1 | tee "$out/multimap.md" || rc=1 ;;
    sanitize)
      make -s -C test/cuda sanitize >"$out/sanitize.log" 2>&1 || rc=1
      tail -20 "$out/sanitize.log" ;;
    *) echo "unknown step $step"; rc=2 ;;
  esac
done
exit $rc
