#!/bin/bash
# test/readme_samples.sh - README.md's SQL samples and settings reference
# checked against a throwaway cluster (test/readme_samples.py), as TAP.
#
#   test/readme_samples.sh             check (test/run.sh's part "readme")
#   test/readme_samples.sh --update    rewrite the README's samples from the cluster
#
# The cluster runs the CPU twin (gpuhash.device = cpu) and plans with the
# GPU's cost model (gpuhash.cost_as_gpu), so the plans are a GPU host's; it
# sees no GPU (CUDA_VISIBLE_DEVICES is empty), so the README's no-GPU error
# is the same on a GPU host; serial plans, whose counters do not depend on
# how many workers start.  GPUHASH_PG_BINDIR runs another installation's
# server (default: the system's).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$GPUHASH_ROOT"
command -v python3 >/dev/null 2>&1 || { echo "1..1"; echo "not ok 1 - python3 is installed"; exit 1; }
bin=${GPUHASH_PG_BINDIR:-$(gh_pg_bindir)}
cl=$(gh_tmpdir)
port=$(gh_free_port)
trap 'gh_as_pg "$bin/pg_ctl" -D "$cl/data" -m fast -w stop >/dev/null 2>&1; rm -rf "$cl"' EXIT
if ! gh_cluster_init "$cl" "$port" "gpuhash.device = cpu
gpuhash.cost_as_gpu = on
max_parallel_workers_per_gather = 0" "$bin" >"$cl/start.log" 2>&1 ||
   ! gh_as_pg env CUDA_VISIBLE_DEVICES= "$bin/pg_ctl" -D "$cl/data" -l "$cl/server.log" -w start >>"$cl/start.log" 2>&1; then
  echo "1..1"; echo "not ok 1 - the README samples' cluster starts"
  sed 's/^/# /' "$cl/start.log" "$cl/server.log" 2>/dev/null | tail -20; exit 1
fi
export PGHOST=$cl PGPORT=$port PGUSER=postgres
python3 "$here/readme_samples.py" "$@"
