#!/bin/bash
# test/gpuhost.sh - one call on a GPU host without PostgreSQL (see
# ../shared/gpuhost): carry PostgreSQL there, then run the given steps and
# keep their logs under $OUT (or /tmp/gpuhost-out).
#
#   test/gpuhost.sh tests device     steps: tests (test/run.sh with
#                                    gpuhash.device = gpu), device
#                                    (bench/run_device.sh), multimap
#                                    (bench/run_multimap.sh), joinbench
#                                    (bench/join/run.sh $JOINBENCH_ARGS), joingen
#                                    (its data only, kept in /tmp/jbdata), sanitize
#                                    (compute-sanitizer on the CUDA tests)
#
#   Robustness (issue 6), added steps: install (build and install the
#   extension), robust (test/t/004_robust.pl --no-smith with device = gpu),
#   robustgpu (test/t/005_robust_gpu.pl: driver, memory exhaustion, timeouts in
#   device copies), smith (test/robust/sqlsmith.sh $SMITH_SECONDS, default
#   180, device = gpu; sqlsmith from .robust-carry/ when carried),
#   sanitize-backend (test/robust/sanitize_backend.sh: a single-user backend
#   under compute-sanitizer, tools from $SANITIZE_TOOLS).  A step written
#   bg:STEP runs in the background; the step "wait" waits for them.  The
#   steps' log folders end up in $OUT/step-logs.tgz.
#
#   archcheck: test/arch_check.sh, a GPU this build has no device code for.
#   oldarch: the multimap's CUDA test as compute_80 PTX (the path below sm_90).
#   refusal: test/t/008_gpu_refusal.pl on a host with a driver.
#   prove:NNN: the TAP test test/t/NNN_*.pl with device = gpu.
#   h2o: bench/h2o/run.sh $H2O_ARGS, the H2O-shaped group-bys and joins.
#   shard: bench/shard/run.sh $SHARD_ARGS, one server against 1 to 4 shard
#   servers (postgres_fdw) sharing the GPU; needs bench/tpch/.dbgen carried.
#   aggbench: bench/agg/run.sh (AGGBENCH_ROWS, AGGBENCH_GROUPS, AGGBENCH_CONFIGS).
#   scanbench: bench/scan/run.sh (SCANBENCH_ROWS): the device scan's speed.
#
#   The suite on an H100 no longer fits one call of 600 s beside tpch-load
#   (it ended inside join_batches at 583 s); split it over two calls on the
#   same warm machine with test/run.sh's GPUHASH_TEST_PARTS and
#   GPUHASH_TEST_REGRESS (the schedule's suites to run; later suites need
#   setup and join_setup, aggregate_keys/_refuse/_coldef need aggregate):
#     GPUHASH_TEST_PARTS="cuda regress" GPUHASH_TEST_REGRESS="setup roles
#       extension_scope settings devices join_setup join_types join_keys
#       join_multi join_shapes join_exec join_explain join_explain_forms
#       join_dml join_plan" ... install bg:tpch-load tests wait
#     GPUHASH_TEST_PARTS="regress" GPUHASH_TEST_REGRESS="setup join_setup
#       join_batches settings_limits device_budget aggregate aggregate_keys
#       aggregate_refuse aggregate_coldef aggregate_differences aggregate_spill
#       agg_transparent robust_estimates" ... tests
#
#   tpch-load, tpch: TPC-H at $TPCH_SCALE (default 10) loaded once and kept
#   in /tmp/tpchdata, then bench/tpch/run.sh $TPCH_ARGS against it, in this
#   call or the next one on the still warm machine; $OUT/$TPCH_TAG.md.
#
#   ab-join, ab-agg: bench/ab.sh .before join|agg, the benchmark for the
#   tree in .before (carried) and this one side by side ($AB_* settings pass
#   through); the tables in $OUT/ab-join.md, $OUT/ab-agg.md.
#
#   The TAP tests (test/t: the service, memory and robustness parts of
#   "tests", "robust" and "robustgpu") run on PostgreSQL's TAP framework, which needs
#   perl (with its core modules and prove) on the host, PostgreSQL::Test
#   (in the bundle's postgresql-server-dev-15) and IPC::Run, which the host
#   lacks.  Before the call, where the packages are installed, run
#     test/gpuhost.sh --carry-perl
#   which copies IPC::Run and PostgreSQL's TAP modules into .gpuhost/perl5
#   (carried with .gpuhost); each call checks that all of it loads and says
#   what is missing, and the TAP parts then count as failed, not as passed.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --carry-perl ]; then
  # here, not on the GPU host: the modules the TAP tests load that the host lacks
  pgperl=$(dirname "$(pg_config --pgxs)")/../test/perl
  [ -f /usr/share/perl5/IPC/Run.pm ] || { echo "IPC::Run is not installed here (apt-get install libipc-run-perl)" >&2; exit 1; }
  [ -f "$pgperl/PostgreSQL/Test/Cluster.pm" ] || { echo "no PostgreSQL::Test::Cluster in $pgperl" >&2; exit 1; }
  rm -rf .gpuhost/perl5 && mkdir -p .gpuhost/perl5/IPC &&
    cp -r /usr/share/perl5/IPC/Run.pm /usr/share/perl5/IPC/Run .gpuhost/perl5/IPC/ &&
    cp -r "$pgperl/PostgreSQL" .gpuhost/perl5/ || exit 1
  find .gpuhost/perl5 -name '*.pm' | sort
  exit 0
fi
out=${OUT:-/tmp/gpuhost-out}
mkdir -p "$out"
chmod -R a+rX .
# the next free port from GPUHOST_PORT (5432): a call made on a still warm
# machine finds the cluster of the one before it running
port=${GPUHOST_PORT:-5432}
while [ -e "/tmp/.s.PGSQL.$port.lock" ]; do port=$((port + 1)); done
source .gpuhost/pg.sh "$port" >"$out/pg.log" 2>&1 || { cat "$out/pg.log"; exit 1; }
export GPUHASH_SKIP_DEPS=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
# sqlsmith and its libpqxx, when carried (the GPU hosts have no package access)
if [ -d .robust-carry ]; then
  export PATH=$PWD/.robust-carry/bin:$PATH
  export LD_LIBRARY_PATH=$PWD/.robust-carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
# the TAP tests' perl modules, where the cluster user can read them
if [ -d .gpuhost/perl5 ]; then
  rm -rf /tmp/gh-perl5 && cp -r .gpuhost/perl5 /tmp/gh-perl5 && chmod -R a+rX /tmp/gh-perl5
  export PERL5LIB=/tmp/gh-perl5${PERL5LIB:+:$PERL5LIB}
fi
. test/lib.sh
if gh_tap_check 2>"$out/tap-check.txt"; then
  echo "TAP tests: perl $(perl -e 'print $^V'), IPC::Run and PostgreSQL::Test load" | tee "$out/tap-check.txt"
else
  echo "TAP tests cannot run here (test/gpuhost.sh --carry-perl before the call?): $(cat "$out/tap-check.txt")"
fi
rc=0
bgpids=""
run_step() {
  local step=$1 rc=0
  case $step in
    tests)
      GPUHASH_TEST_DEVICE=${GPUHOST_TEST_DEVICE:-gpu} GPUHASH_TEST_LOGDIR=/tmp/gh-logs bash test/run.sh >"$out/tests.log" 2>&1 || rc=1
      tail -25 "$out/tests.log"
      tar czf "$out/test-logs.tgz" -C /tmp gh-logs 2>/dev/null ;;
    device)
      bash bench/run_device.sh 5 2>"$out/device.err" | tee "$out/device.md" || rc=1 ;;
    joinbench)
      # JOINBENCH_ARGS: e.g. "--scale 0.1 --workloads 'int4 text left floor'"
      eval "bash bench/join/run.sh --out /tmp/joinbench ${JOINBENCH_ARGS:-}" 2>&1 | tee "$out/joinbench.md" || rc=1
      tar czf "$out/joinbench-logs.tgz" -C /tmp joinbench 2>/dev/null ;;
    joingen)
      # the join benchmark's data at $JOINBENCH_SCALE in /tmp/jbdata, kept running
      # for "joinbench" with JOINBENCH_ARGS="--reuse /tmp/jbdata ..."
      bash bench/join/run.sh --out /tmp/joingen --gen-only --keep --datadir /tmp/jbdata \
        --scale "${JOINBENCH_SCALE:-1.0}" >"$out/joingen.log" 2>&1 || { rc=1; tail -5 "$out/joingen.log"; } ;;
    scanbench)
      # bench/scan/run.sh at SCANBENCH_ROWS (5*10^7) rows: the device scan's
      # heap bytes per second against PostgreSQL's scan, and a Q1-shaped
      # GROUP BY with and without it
      bash bench/scan/run.sh "${SCANBENCH_ROWS:-50000000}" >"$out/scanbench.md" 2>&1 || rc=1
      cat "$out/scanbench.md" ;;
    aggbench)
      # bench/agg/run.sh at AGGBENCH_ROWS (10^8) rows and AGGBENCH_GROUPS (10^6)
      # groups, configurations AGGBENCH_CONFIGS (p16 gpu_p16 agg chosen)
      CONFIGS=${AGGBENCH_CONFIGS:-"p16 gpu_p16 agg chosen"} BENCH_LOG="$out/aggbench.log" \
        bash bench/agg/run.sh "${AGGBENCH_ROWS:-100000000}" ${AGGBENCH_GROUPS:-1000000} \
        2>"$out/aggbench.err" | tee "$out/aggbench.md" || rc=1 ;;
    joinexplain)
      bash bench/join/explain.sh /tmp/jbdata 2>&1 | tee "$out/joinexplain.txt" || rc=1 ;;
    multimap)
      bash bench/run_multimap.sh 2>&1 | tee "$out/multimap.md" || rc=1 ;;
    sanitize)
      make -s -C test/cuda sanitize >"$out/sanitize.log" 2>&1 || rc=1
      tail -20 "$out/sanitize.log" ;;
    install)
      (make clean && make -j"$(nproc)" PG_CONFIG="$PG_CONFIG" && make install PG_CONFIG="$PG_CONFIG") >"$out/install.log" 2>&1 || { rc=1; tail -20 "$out/install.log"; } ;;
    robust)
      # ROBUST_ARGS: more arguments, e.g. "--long --only pgbench" (the issue's pgbench alone)
      # shellcheck disable=SC2086
      GPUHASH_TEST_DEVICE=gpu gh_prove /tmp/gh-robust test/t/004_robust.pl :: --no-smith ${ROBUST_ARGS:-} >"$out/robust.tap" 2>&1 || rc=1
      grep -E '^(not ok|#)' "$out/robust.tap" | head -20; tail -4 "$out/robust.tap" ;;
    oldarch)
      # the multimap below sm_90, which has no 16-byte atomicCAS: its GPU test
      # built as compute_80 PTX alone, which the driver compiles for this GPU
      # with __CUDA_ARCH__ = 800, so the 8-byte claim path runs here
      rm -rf /tmp/gh-oldarch && cp -r test/cuda /tmp/gh-oldarch &&
        make -s -C /tmp/gh-oldarch clean &&
        make -s -C /tmp/gh-oldarch SRC="$PWD/cuda" GENCODE="-gencode=arch=compute_80,code=compute_80" \
          test_multimap_gpu >"$out/oldarch.log" 2>&1 &&
        (cd /tmp/gh-oldarch && ./test_multimap_gpu) >"$out/oldarch.tap" 2>&1 || rc=1
      cuobjdump --list-ptx /tmp/gh-oldarch/test_multimap_gpu 2>&1 | head -3
      grep -E '^(not ok|# )' "$out/oldarch.tap" | head; tail -3 "$out/oldarch.tap" ;;
    refusal)
      # test/t/008_gpu_refusal.pl with a real driver beside the emulation
      GPUHASH_TEST_DEVICE=gpu gh_prove /tmp/gh-refusal test/t/008_gpu_refusal.pl >"$out/refusal.tap" 2>&1 || rc=1
      grep -E '^(not ok|#)' "$out/refusal.tap" | head -20; tail -3 "$out/refusal.tap" ;;
    prove:*)
      # one TAP test of test/t by its number, e.g. prove:007, device = gpu
      local t=(test/t/"${step#prove:}"_*.pl)
      GPUHASH_TAP_DEADLINE=${PROVE_SECONDS:-300} GPUHASH_TEST_DEVICE=gpu \
        gh_prove "/tmp/gh-$step" "${t[0]}" >"$out/${step/:/-}.tap" 2>&1 || rc=1
      grep -E '^(not ok|#)' "$out/${step/:/-}.tap" | head -20; tail -3 "$out/${step/:/-}.tap" ;;
    h2o)
      # bench/h2o/run.sh $H2O_ARGS (e.g. "--rows 10000000 --part groupby"),
      # its table as it grows in $OUT/h2o.md
      eval "bash bench/h2o/run.sh ${H2O_ARGS:-}" >"$out/h2o.md" 2>"$out/h2o.err" || rc=1
      cat "$out/h2o.md" ;;
    shard)
      # bench/shard/run.sh $SHARD_ARGS (e.g. "--scale 1 --shards '1 2 3 4'"),
      # its tables in $OUT/shard.md, every timing and plan in $OUT/shard-logs.tgz
      eval "bash bench/shard/run.sh --out /tmp/shard ${SHARD_ARGS:-}" >"$out/shard.md" 2>"$out/shard.err" || rc=1
      cat "$out/shard.md"
      tar czf "$out/shard-logs.tgz" -C /tmp shard 2>/dev/null ;;
    archcheck)
      # test/arch_check.sh: a build for an architecture above the GPU's
      # (ARCH_CHECK_CC) leaves plans alone, with one LOG line and a HINT
      bash test/arch_check.sh >"$out/archcheck.tap" 2>&1 || rc=1
      cat "$out/archcheck.tap" ;;
    robustgpu)
      # ROBUSTGPU_SECONDS (400): bail out then, keeping the logs of a test
      # that would run past the call's time limit
      GPUHASH_TAP_DEADLINE=${ROBUSTGPU_SECONDS:-400} GPUHASH_TEST_DEVICE=gpu \
        gh_prove /tmp/gh-robustgpu test/t/005_robust_gpu.pl >"$out/robust-gpu.tap" 2>&1 || rc=1
      grep -E '^(not ok|#)' "$out/robust-gpu.tap" | head -30; tail -4 "$out/robust-gpu.tap" ;;
    smith)
      # GPUHOST_DEADLINE (epoch seconds): end in time for it
      local secs=${SMITH_SECONDS:-180}
      [ -n "${GPUHOST_DEADLINE:-}" ] && secs=$(( GPUHOST_DEADLINE - $(date +%s) - 30 < secs ? GPUHOST_DEADLINE - $(date +%s) - 30 : secs ))
      [ "$secs" -ge 10 ] || { echo "smith: no time left"; return 1; }
      GPUHASH_TEST_DEVICE=gpu bash test/robust/sqlsmith.sh "$secs" /tmp/gh-smith >"$out/smith.tap" 2>&1 || rc=1
      cat "$out/smith.tap" ;;
    sanitize-backend)
      # SANITIZE_TOOLS: compute-sanitizer tools, one run of the SQL each
      # (default memcheck); a tool that would end past GPUHOST_DEADLINE is skipped
      local lim=3600
      [ -n "${GPUHOST_DEADLINE:-}" ] && lim=$(( GPUHOST_DEADLINE - $(date +%s) - 10 ))
      [ "$lim" -ge 10 ] || { echo "sanitize-backend: no time left"; return 1; }
      GPUHASH_TEST_LOGDIR=/tmp/gh-cs GPUHASH_SANITIZE_TOOLS="${SANITIZE_TOOLS:-memcheck}" \
        GPUHASH_SANITIZE_DEADLINE=$(( $(date +%s) + lim )) \
        timeout "$lim" bash test/robust/sanitize_backend.sh >"$out/sanitize-backend.tap" 2>&1 || rc=1
      cat "$out/sanitize-backend.tap" ;;
    tpch-load)
      # TPC-H at $TPCH_SCALE (default 10) loaded and kept running in
      # /tmp/tpchdata for the "tpch" step (needs bench/tpch/.dbgen carried)
      bash bench/tpch/run.sh --scale "${TPCH_SCALE:-10}" --load-only --keep --datadir /tmp/tpchdata \
        --out /tmp/tpch-load >"$out/tpch-load.log" 2>&1 || { rc=1; tail -20 "$out/tpch-load.log"; }
      grep -iE 'seconds|took|load' "$out/tpch-load.log" | tail -12 ;;
    tpch)
      # the queries against the data of tpch-load; TPCH_ARGS: e.g.
      # "--repeats 1 --queries '1 2 3' --conf 'gpuhash.enable_agg = on'";
      # TPCH_TAG names the output (several calls on one warm machine)
      tag=${TPCH_TAG:-tpch}
      eval "bash bench/tpch/run.sh --reuse /tmp/tpchdata --scale ${TPCH_SCALE:-10} --keep --out /tmp/$tag ${TPCH_ARGS:-}" \
        2>"$out/$tag.err" | tee "$out/$tag.md" || rc=1
      tar czf "$out/$tag-logs.tgz" -C /tmp "$tag" 2>/dev/null ;;
    ab-join|ab-agg)
      # the cluster pg.sh started is not needed: bench/ab.sh starts its own
      OUT="$out/${step}-logs" bash bench/ab.sh .before "${step#ab-}" 2>&1 | tee "$out/$step.md"
      rc=${PIPESTATUS[0]} ;;
    *) echo "unknown step $step"; rc=2 ;;
  esac
  return $rc
}
for step in "$@"; do
  echo "== $step"
  case $step in
    bg:*) run_step "${step#bg:}" >"$out/${step#bg:}.stdout" 2>&1 & bgpids="$bgpids $!" ;;
    wait) for p in $bgpids; do wait "$p" || rc=1; done; bgpids="" ;;
    *) run_step "$step" || rc=$(( $? == 2 ? 2 : 1 )) ;;
  esac
done
for p in $bgpids; do wait "$p" || rc=1; done
# the steps' own log folders, in one file
logs=$(cd /tmp && ls -d gh-logs gh-robust gh-robustgpu gh-smith gh-cs 2>/dev/null)
[ -n "$logs" ] && tar czf "$out/step-logs.tgz" -C /tmp $logs 2>/dev/null
exit $rc
