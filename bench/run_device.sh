#!/bin/bash
# bench/run_device.sh - on a GPU host: the cost of a backend's lazy CUDA
# context creation (time of the first GPU use against the second, device
# memory the backend holds), written as markdown to stdout.
# Needs a built and installed gpuhash and PostgreSQL clients on PATH.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../test/lib.sh"
repeats=${1:-5}
dir=$(gh_tmpdir)
port=$(gh_free_port)
trap 'gh_cluster_stop "$dir"; rm -rf "$dir"' EXIT
gh_cluster_start "$dir" "$port" "gpuhash.device = gpu" >/dev/null
gh_as_pg psql -X -q -c "CREATE EXTENSION gpuhash" >/dev/null

gpu=$(gh_as_pg psql -X -qAt -c "SELECT name FROM gpuhash_devices() WHERE ordinal = 0")
echo "| run | first use (context creation) ms | second use ms | backend device memory MiB (nvidia-smi) | free MiB before -> after |"
echo "|---|---|---|---|---|"
for i in $(seq 1 "$repeats"); do
  before=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 | tr -d ' ')
  # one backend: time the first and the second use, then hold the session
  # open while nvidia-smi reads its memory
  gh_as_pg psql -X -qAt >"$dir/out.$i" 2>&1 <<'SQL' &
\timing on
SELECT gpuhash_active_device();
SELECT gpuhash_active_device();
SELECT pg_sleep(3);
SQL
  pid=$!
  sleep 2
  apps=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits)
  after=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 | tr -d ' ')
  wait $pid
  out=$(cat "$dir/out.$i")
  echo "$apps" >&2
  t1=$(echo "$out" | grep -m1 '^Time:' | awk '{print $2}')
  t2=$(echo "$out" | grep '^Time:' | sed -n 2p | awk '{print $2}')
  mem=$(echo "$apps" | awk -F', *' 'NR==1{print $2}')
  echo "| $i | $t1 | $t2 | ${mem:-?} | $before -> $after used |"
done
echo
echo "GPU: $gpu"
