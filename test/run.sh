#!/bin/bash
# test/run.sh - build, install and run every gpuhash test; exits non-zero on
# any failure and ends with a "N passed, N failed" line.
#
#   test/run.sh                      CPU twin (any machine, CI)
#   test/run.sh --quick              the same without the robustness suite and
#                                    the single-user backend (minutes less;
#                                    what is skipped is not counted as passed)
#   GPUHASH_TEST_DEVICE=gpu test/run.sh   on a GPU host: the same suites with
#                                    gpuhash.device = gpu, plus the CUDA tests
#
# Suites: the layering of src/ (test/callgraph.py: no call circle between
# files but the one admitted, each header's order of files true); the
# README's SQL samples and settings reference (test/readme_samples.sh, part
# "readme": each sample's output as a cluster gives it now); the CUDA
# unit tests of the multimap and the aggregate (test/cuda); PGXS's make
# installcheck, the pg_regress suites (sql/, expected/, in test/schedule's order) and the
# isolation specs (test/isolation), each in a temporary preloaded instance,
# and the pg_regress suites again under auto_explain; pgTAP (test/pgtap) via
# pg_prove in a throwaway cluster; the TAP tests on PostgreSQL's own
# framework (test/t, PostgreSQL::Test::Cluster, run with prove as the
# cluster user: gh_prove in test/lib.sh), each starting clusters of its own:
# the GPU service (001_service.pl, part "service"), the statistics views
# (007_monitoring.pl, part "service" too), memory within work_mem
# (002_memory.pl, 003_memory_agg.pl, part "memory"), the device scan on a
# hot standby (006_standby.pl, part "standby"), a driver or GPU the build
# cannot serve (008_gpu_refusal.pl, part "refusal"), a sharded layout over
# postgres_fdw, a coordinator and three shards, against the same TPC-H data
# unsharded (009_shard.pl, part "shard") and the robustness suite
# (004_robust.pl: cancels, kills, injected failures, pgbench, sqlsmith); the
# differential fuzzer (test/fuzz: random queries against native, about 2
# minutes); a backend's GPU work in single-user mode
# (test/robust/sanitize_backend.sh).  Each TAP stream's "ok" and "not ok"
# lines count into the totals; a suite that ran nothing or exited non-zero
# without a "not ok" counts as one failure.  Logs go to $GPUHASH_TEST_LOGDIR
# (default: a temp dir), a TAP test's servers' logs to LOGDIR/PART/.
#
# The shell scripts left under test/robust are what TAP cannot drive:
# sanitize_backend.sh (a single-user backend, under compute-sanitizer on a
# GPU host), valgrind.sh and sqlsmith.sh (a cluster of its own, also run by
# 004_robust.pl).  005_robust_gpu.pl (GPU-only robustness) runs on a GPU
# host only, as test/gpuhost.sh robustgpu.
set -u
quick=0
case "${1:-}" in --quick) quick=1 ;; "") ;; *) echo "usage: test/run.sh [--quick]" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$GPUHASH_ROOT"

device=${GPUHASH_TEST_DEVICE:-cpu}
export GPUHASH_TEST_DEVICE=$device
# auto (a GPU host): joins start on the CPU twin while a session's or a
# parallel worker's CUDA context is made, then move to the GPU
case $device in cpu) expect_gpu=off ;; gpu|auto) expect_gpu=on ;;
  *) echo "GPUHASH_TEST_DEVICE must be cpu, gpu or auto" >&2; exit 2 ;; esac
logdir=${GPUHASH_TEST_LOGDIR:-$(mktemp -d /tmp/gpuhash-test-logs.XXXXXX)}
mkdir -p "$logdir"
passed=0 failed=0

note() { printf '\n== %s\n' "$*"; }
# count_tap FILE: add a TAP stream's ok / not ok lines to the totals
count_tap() {
  local ok nok
  ok=$(grep -cE '^ *ok [0-9]+' "$1" || true)
  nok=$(grep -cE '^ *not ok [0-9]+' "$1" || true)
  # a suite that ran no test at all is a failure, not a pass
  [ $((ok + nok)) -eq 0 ] && nok=1 && echo "no test ran in $(basename "$1")"
  passed=$((passed + ok)); failed=$((failed + nok))
  echo "$ok passed, $nok failed in $(basename "$1")"
}

# run_tap LOG CMD...: runs a script that prints TAP into LOG, counts it,
# shows its failures and diagnostics, and counts a script that failed
# without a "not ok" line as one failure
run_tap() {
  local log=$1 rc
  shift
  "$@" >"$log" 2>&1
  rc=$?
  count_tap "$log"
  grep -E '^ *not ok|^#' "$log" | head -20
  if [ $rc -ne 0 ] && ! grep -qE '^ *not ok' "$log"; then
    failed=$((failed + 1)); echo "$(basename "$log" .tap) exited $rc"; tail -20 "$log"; fi
}

# run_prove LABEL TEST... [:: ARGS]: runs TAP tests of test/t on
# PostgreSQL's framework (gh_prove: as GH_OSUSER, device $device) into
# LABEL.tap, counted as run_tap counts; their servers' logs go to LABEL/
run_prove() {
  local label=$1; shift
  run_tap "$logdir/$label.tap" gh_prove "$logdir/$label" "$@"
}

# part NAME: whether this run includes that part (GPUHASH_TEST_PARTS, a list
# of layering readme cuda regress autoexplain pgtap service memory standby
# refusal shard fuzz single; unset: all;
# robust follows GPUHASH_TEST_SKIP_ROBUST).  For a GPU
# host, whose calls are limited in time, to run the suite in two calls; CI
# never sets it.
part() {
  [ -z "${GPUHASH_TEST_PARTS:-}" ] && return 0
  case " $GPUHASH_TEST_PARTS " in *" $1 "*) return 0 ;; esac
  echo "skipped: not in GPUHASH_TEST_PARTS (not counted as passed)"
  return 1
}

note "dependencies"
gh_install_deps || exit 1

note "build and install (log: $logdir/build.log)"
if ! gh_build_install "$logdir/build.log"; then
  echo "build failed"; echo "0 passed, 1 failed"; exit 1
fi
grep -E 'warning' "$logdir/build.log" | head -20

note "layering: src/'s file-level call graph against its headers (test/callgraph.py)"
if part layering; then
run_tap "$logdir/layering.tap" python3 test/callgraph.py --tap
fi

note "README.md's SQL samples and settings reference against a cluster (test/readme_samples.sh)"
if part readme; then
run_tap "$logdir/readme.tap" bash test/readme_samples.sh
fi

note "CUDA unit tests (CPU twins: multimap, aggregate)"
if part cuda && [ -f test/cuda/Makefile ]; then
  if make -s -C test/cuda cpu >"$logdir/multimap-cpu.tap" 2>&1; then :; else
    failed=$((failed + 1)); echo "a CUDA unit test on the CPU twin exited non-zero"; fi
  count_tap "$logdir/multimap-cpu.tap"
  grep -E '^ *not ok' "$logdir/multimap-cpu.tap" | head -20
  if [ "$device" = gpu ]; then
    note "CUDA unit tests (GPU vs CPU: multimap, aggregate)"
    # GPUHASH_TEST_CUDA_QUICK=1: the quick subset (minutes less), for a run
    # on a tree whose cuda/ passed the whole test already
    cudatest=run-gpu
    [ -n "${GPUHASH_TEST_CUDA_QUICK:-}" ] && cudatest=run-gpu-quick
    if make -s -C test/cuda $cudatest >"$logdir/multimap-gpu.tap" 2>&1; then :; else
      failed=$((failed + 1)); echo "a CUDA unit test on the GPU exited non-zero"; fi
    count_tap "$logdir/multimap-gpu.tap"
    grep -E '^ *not ok' "$logdir/multimap-gpu.tap" | head -20
  fi
fi

# run_installcheck LABEL EXTRA_CONF [MAKE ARGS]: PGXS's make installcheck
# (the pg_regress suites of test/schedule, then the isolation specs), each in
# a temporary instance with test/regress.conf and then this run's device and
# EXTRA_CONF (GPUHASH_TEST_CONF: its lines win); adds to the totals.  It runs
# as GH_OSUSER in a copy of the tree, which that user may not be able to
# read where it is (a clone in /root).
run_installcheck() {
  local label=$1 extra=$2 work ok nok; shift 2
  work=$(gh_tmpdir)
  # GPUHASH_TEST_REGRESS="setup ...": only these suites, and no isolation
  # specs unless GPUHASH_TEST_ISOLATION=on (a GPU host's later calls); CI
  # never sets them
  local only=()
  if [ -n "${GPUHASH_TEST_REGRESS:-}" ]; then
    only=(REGRESS="$GPUHASH_TEST_REGRESS")
    [ "${GPUHASH_TEST_ISOLATION:-}" = on ] || only+=(ISOLATION=)
  fi
  gh_installcheck "$work" "$device" "$expect_gpu" "$extra" "$logdir/$label.log" "${only[@]}" "$@"
  grep -E '^(test|ok|not ok)|^ +[a-z_]+ +\.\.\.|tests (passed|failed)' "$logdir/$label.log" || true
  ok=$(grep -cE '\.\.\. ok|^ok ' "$logdir/$label.log" || true)
  nok=$(grep -cE '\.\.\. FAILED|^not ok ' "$logdir/$label.log" || true)
  if [ $((ok + nok)) -eq 0 ]; then nok=1; tail -30 "$logdir/$label.log"; fi
  passed=$((passed + ok)); failed=$((failed + nok))
  rm -rf "$logdir/$label-results"; mkdir -p "$logdir/$label-results"
  cp -r "$work/tree/results" "$work/tree/output_iso" "$logdir/$label-results/" 2>/dev/null
  cp "$work/tree/tmp_check_regress/log/postmaster.log" "$logdir/$label-server.log" 2>/dev/null
  cat "$work/tree/regression.diffs" "$work/tree/output_iso/regression.diffs" >"$logdir/$label.diffs" 2>/dev/null
  [ -s "$logdir/$label.diffs" ] && head -60 "$logdir/$label.diffs"
  [ -s "$logdir/$label.diffs" ] || rm -f "$logdir/$label.diffs"
  rm -rf "$work"
}

note "make installcheck: pg_regress suites and isolation specs (gpuhash.device = $device)"
part regress && run_installcheck regress ""

# The pg_regress suites again with auto_explain explaining every statement,
# nested ones too, with ANALYZE, VERBOSE, BUFFERS, WAL, SETTINGS and
# triggers, in XML (an EXPLAIN that fails makes its statement fail, so the
# expected output changes).  The plans go nowhere (log level DEBUG5); making
# them is the test.  This pass also plans with the GPU's cost model
# (gpuhash.cost_as_gpu; on the CPU twin it then runs the plans a GPU host
# would choose), whose results must be the same expected output.
note "pg_regress under auto_explain (VERBOSE, ANALYZE, FORMAT XML; gpuhash.device = $device, GPU costs)"
part autoexplain && run_installcheck regress-auto-explain "gpuhash.cost_as_gpu = on
session_preload_libraries = 'auto_explain'
auto_explain.log_min_duration = 0
auto_explain.log_analyze = on
auto_explain.log_verbose = on
auto_explain.log_buffers = on
auto_explain.log_wal = on
auto_explain.log_settings = on
auto_explain.log_triggers = on
auto_explain.log_nested_statements = on
auto_explain.log_format = xml
auto_explain.log_level = debug5" ISOLATION=

note "pgTAP (gpuhash.device = $device)"
if part pgtap; then
cl=$(gh_tmpdir)
port=$(gh_free_port)
if gh_cluster_start "$cl" "$port" "gpuhash.device = $device
gpuhash_test.gpu = $expect_gpu"; then
  gh_as_pg psql -X -q -d postgres -c "CREATE DATABASE gpuhash_tap" >/dev/null
  gh_as_pg psql -X -q -d gpuhash_tap -c "CREATE EXTENSION pgtap" >/dev/null
  # pg_prove reads the files as GH_OSUSER: give it a readable copy
  cp -r test/pgtap "$cl/pgtap" && chmod -R a+rX "$cl/pgtap"
  gh_as_pg pg_prove --verbose -h "$cl" -p "$port" -U postgres -d gpuhash_tap \
    "$cl"/pgtap/*.sql >"$logdir/pgtap.log" 2>&1
  rc=$?
  count_tap "$logdir/pgtap.log"
  grep -E '^ *not ok|Dubious|Parse errors|Failed' "$logdir/pgtap.log" | head -20
  # a file that died or planned a different count: one more failure each
  dubious=$(grep -cE '^Dubious|Parse errors' "$logdir/pgtap.log" || true)
  failed=$((failed + dubious))
  if [ $rc -ne 0 ] && [ "$dubious" -eq 0 ] && ! grep -qE '^ *not ok' "$logdir/pgtap.log"; then
    failed=$((failed + 1)); echo "pg_prove exited $rc"; tail -20 "$logdir/pgtap.log"; fi
  cp "$cl/server.log" "$logdir/pgtap-server.log" 2>/dev/null
  gh_cluster_stop "$cl"
else
  failed=$((failed + 1)); echo "could not start the pgTAP cluster"
fi
rm -rf "$cl"
fi

note "the GPU service (gpuhash.gpu_service = on, device = $device: test/t/001_service.pl)"
if part service; then
run_prove service test/t/001_service.pl
fi

note "the statistics views: fallbacks' LOG lines, the service's state, no preloading (device = $device: test/t/007_monitoring.pl)"
if part service; then
run_prove monitoring test/t/007_monitoring.pl
fi

note "memory within work_mem * hash_mem_multiplier (device = $device: test/t/002_memory.pl)"
if part memory; then
run_prove memory test/t/002_memory.pl
fi

note "gpuhash_aggregate within its budget: 10^7 groups, int keys (device = $device: test/t/003_memory_agg.pl)"
if part memory; then
MEMAGG_DEVICE=$device MEMAGG_KEYS=int run_prove memory_agg test/t/003_memory_agg.pl :: 10000000
fi

note "the device scan on a streaming hot standby (device = $device: test/t/006_standby.pl)"
if part standby; then
run_prove standby test/t/006_standby.pl
fi

note "a driver or GPU this build cannot serve, emulated (test/t/008_gpu_refusal.pl)"
if part refusal; then
run_prove refusal test/t/008_gpu_refusal.pl
fi

note "a sharded layout: postgres_fdw coordinator, three shards, TPC-H sharded and not (device = $device: test/t/009_shard.pl)"
if part shard; then
run_prove shard test/t/009_shard.pl
fi

note "differential fuzzer against native, seed 1 and one from the clock (device = $device: test/fuzz/run.sh)"
if part fuzz; then
run_tap "$logdir/fuzz.tap" env GPUHASH_TEST_DEVICE=$device GPUHASH_TEST_LOGDIR=$logdir \
  FUZZ_SECONDS=${FUZZ_SECONDS:-60} bash test/fuzz/run.sh
fi

note "robustness (cancel, terminate, kill -9, injected OOM, savepoints, 10,000 joins, pgbench, lifecycle, sqlsmith)"
if [ "$quick" = 1 ]; then
  echo "skipped: --quick (not counted as passed)"
elif [ "${GPUHASH_TEST_SKIP_ROBUST:-}" = 1 ]; then
  # for a GPU host short of time only (test/gpuhost.sh runs it as its own step); CI never sets it
  echo "skipped: GPUHASH_TEST_SKIP_ROBUST=1 (not counted as passed)"
else
run_prove robust test/t/004_robust.pl
fi

note "a backend's GPU work in single-user mode (test/robust/sanitize_backend.sh without the sanitizer; test/gpuhost.sh sanitize-backend runs it under compute-sanitizer)"
if [ "$quick" = 1 ]; then
  echo "skipped: --quick (not counted as passed)"
elif ! part single; then
  :
else
run_tap "$logdir/single.tap" env GPUHASH_TEST_DEVICE=${device/auto/gpu} GPUHASH_TEST_LOGDIR=$logdir/single \
  bash test/robust/sanitize_backend.sh --no-sanitizer
fi

echo
echo "logs: $logdir"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
