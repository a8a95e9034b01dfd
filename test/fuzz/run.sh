#!/bin/bash
# test/fuzz/run.sh - the differential fuzzer (test/fuzz/fuzz.py) in a
# throwaway cluster, as TAP: one test per seed, one "not ok" per distinct
# failure with its minimal repro script.
#
#   test/fuzz/run.sh                     CI: seed 1, then a seed from the
#                                        clock, FUZZ_SECONDS (60) each
#   FUZZ_SECONDS=1800 FUZZ_SEEDS="7 8" FUZZ_SCALE=10 GPUHASH_TEST_DEVICE=gpu \
#     test/fuzz/run.sh                   longer, larger, on a GPU host
#
# The cluster plans with the GPU's cost model (gpuhash.cost_as_gpu) on the
# CPU twin, as the other suites do; each query also runs under the settings
# listed in fuzz.py's CONFIGS.  FUZZ_ARGS passes more options to fuzz.py.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
cd "$GPUHASH_ROOT"
device=${GPUHASH_TEST_DEVICE:-cpu}
case $device in cpu|gpu|auto) ;; *) echo "GPUHASH_TEST_DEVICE must be cpu, gpu or auto" >&2; exit 2 ;; esac
seconds=${FUZZ_SECONDS:-60}
seeds=${FUZZ_SEEDS:-"1 $(( $(date +%s) % 1000000 ))"}
command -v python3 >/dev/null 2>&1 || { echo "1..1"; echo "not ok 1 - python3 is installed"; exit 1; }

cl=$(gh_tmpdir)
port=${FUZZ_PORT:-$(gh_free_port)}
trap 'gh_cluster_stop "$cl"; [ -n "${GPUHASH_TEST_LOGDIR:-}" ] && cp "$cl/server.log" "$GPUHASH_TEST_LOGDIR/fuzz-server.log" 2>/dev/null; rm -rf "$cl"' EXIT
if ! gh_cluster_start "$cl" "$port" "gpuhash.device = $device
gpuhash.cost_as_gpu = on
max_connections = 20
restart_after_crash = on
log_min_messages = warning" >"$cl/start.log" 2>&1; then
  echo "1..1"; echo "not ok 1 - the fuzzer's cluster starts"; sed 's/^/# /' "$cl/start.log" | tail -20; exit 1
fi
args=()
for s in $seeds; do args+=(--seed "$s"); done
echo "# seeds: $seeds, $seconds s each (FUZZ_SEEDS, FUZZ_SECONDS)"
# shellcheck disable=SC2086
python3 "$here/fuzz.py" --dsn "host=$cl port=$port user=postgres dbname=postgres" \
  --seconds "$seconds" --scale "${FUZZ_SCALE:-1}" --shrink-seconds "${FUZZ_SHRINK_SECONDS:-60}" \
  --explain "${args[@]}" ${FUZZ_ARGS:-} 2>&1
