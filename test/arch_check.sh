#!/bin/bash
# test/arch_check.sh - a GPU this build of gpuhash has no device code for
# (issue 38): on a GPU host, builds gpuhash for an architecture above the
# GPU's (NVCC_ARCH of compute capability ARCH_CHECK_CC, default the GPU's
# plus 1.0, SASS and PTX) into a private copy of PostgreSQL
# (gh_private_pg), starts a cluster of that copy and checks, TAP output:
#   - gpuhash.device = auto leaves plans alone (a join forced by
#     gpuhash.force_join is planned natively) with native's rows, and logs
#     once why, naming both compute capabilities, with a HINT;
#   - gpuhash.device = gpu gives a clean ERROR 0A000 with that DETAIL;
#   - the GPU service logs the same and stops;
#   - no backend crashed.
# The system's installation is not touched.  test/gpuhost.sh archcheck runs it.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$GPUHASH_ROOT" || exit 1

n=0 failed=0
check() {
  n=$((n + 1))
  if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed + 1)); fi
}

# ARCH_CHECK_GPU_CC: the GPU's compute capability (major and minor digits)
# instead of nvidia-smi's, for a dry run of the script's mechanics
gpu_cc=${ARCH_CHECK_GPU_CC:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader -i 0 2>/dev/null | tr -d ' .')}
if [ -z "$gpu_cc" ]; then
  echo "1..0 # SKIP no GPU (nvidia-smi)"
  exit 0
fi
cc=${ARCH_CHECK_CC:-$((gpu_cc + 10))}
echo "# the GPU's compute capability: ${gpu_cc:0:-1}.${gpu_cc: -1}; the build's: ${cc:0:-1}.${cc: -1}"

work=$(gh_tmpdir)
cl=$(gh_tmpdir)
trap 'gh_cluster_stop "$cl"; rm -rf "$work" "$cl"' EXIT
pgc=$(gh_private_pg "$work/pg") || { echo "Bail out! no private copy of PostgreSQL"; exit 1; }
gh_readable_copy "$work/tree" Makefile gpuhash.control gpuhash--*.sql src cuda
arch="-gencode=arch=compute_$cc,code=sm_$cc -gencode=arch=compute_$cc,code=compute_$cc"
# a clean build: the copy's objects are this tree's, built for its NVCC_ARCH
(make -C "$work/tree" -s clean PG_CONFIG="$pgc" &&
  make -C "$work/tree" -s -j"$(nproc)" PG_CONFIG="$pgc" NVCC_ARCH="$arch" &&
  make -C "$work/tree" -s install PG_CONFIG="$pgc" NVCC_ARCH="$arch") >"$work/build.log" 2>&1
[ $? -eq 0 ] &&
  grep -q -- "-DGH_BUILD_MIN_CC=$cc" <(make -C "$work/tree" -n -B cuda/device.o PG_CONFIG="$pgc" NVCC_ARCH="$arch" 2>/dev/null) &&
  [ -f "$work/tree/cuda/device.o" ]
check $? "gpuhash built with nvcc for compute capability $cc alone, installed into a private copy of PostgreSQL"
[ $failed -eq 0 ] || { tail -20 "$work/build.log" | sed 's/^/# /'; echo "1..$n"; exit 1; }

gh_cluster_start "$cl" "$(gh_free_port)" "gpuhash.device = auto
gpuhash.gpu_service = on
log_line_prefix = '%m [%p] %e '" "$(dirname "$pgc")" >/dev/null
check $? "the server starts with this build preloaded"
q() { gh_as_pg psql -X -q -At "$@" 2>&1; }

q -q -c "CREATE EXTENSION gpuhash" \
  -c "CREATE TABLE aa AS SELECT g AS k, g % 7 AS v FROM generate_series(1, 20000) g" \
  -c "CREATE TABLE ab AS SELECT g * 3 AS k, g AS w FROM generate_series(1, 20000) g" \
  -c "ANALYZE aa, ab" >/dev/null
J="SELECT count(*), sum(v), sum(w) FROM aa JOIN ab USING (k)"
plan=$(q -c "SET gpuhash.force_join = on" -c "EXPLAIN (COSTS OFF) $J")
got=$(q -c "SET gpuhash.force_join = on" -c "$J")
want=$(q -c "SET gpuhash.enabled = off" -c "$J")
echo "$plan" | grep -q GpuHashJoin
nogpu=$?
[ "$nogpu" -ne 0 ] && [[ "$want" =~ ^[0-9]+\|[0-9]+\|[0-9]+$ ]] && [ "$got" = "$want" ]
check $? "device = auto: the forced join is planned natively, with native's rows ($got)"

# the LOG line of the backend (and the service's), with both capabilities
sleep 1
log=$(cat "$cl/server.log")
echo "$log" | grep -A2 'gpuhash found no usable GPU' | sed 's/^/# /' | head -3
want_detail="compute capability is ${gpu_cc:0:-1}.${gpu_cc: -1}; this build of gpuhash has machine code for sm_$cc and PTX for compute_$cc"
echo "$log" | grep -A2 'gpuhash found no usable GPU' | grep -q "$want_detail" &&
  echo "$log" | grep -A3 'gpuhash found no usable GPU' | grep -q "HINT:  Build gpuhash for the GPU's architecture too: make GPUHASH_CUDA_ARCHS=\"$gpu_cc\""
check $? "device = auto: one LOG line says why, naming both compute capabilities, with a HINT"
echo "$log" | grep -A2 'GPU service found no usable GPU' | grep -q "$want_detail"
check $? "the GPU service logs the same reason"

err=$(q -v VERBOSITY=verbose -c "SET gpuhash.device = gpu" -c "SET gpuhash.force_join = on" -c "$J")
echo "$err" | head -3 | sed 's/^/# /'
echo "$err" | grep -q 'ERROR:  0A000' && echo "$err" | grep -q "$want_detail"
check $? "device = gpu: a clean ERROR 0A000 with that DETAIL"
[ "$(q -c 'SELECT 1')" = 1 ]
check $? "the server answers after it"

[ -s "$cl/server.log" ] && ! grep -qE 'PANIC|terminated by signal|was terminated' "$cl/server.log"
check $? "no backend crashed"
echo "1..$n"
[ $failed -eq 0 ]
