#!/bin/bash
# bench/join/plans.sh DIR - the planner's own choice, without
# gpuhash.force_join: for each workload and worker limit, the cost of
# PostgreSQL's plan (gpuhash.enabled = off), the cost of the best plan with
# GpuHashJoin (PostgreSQL's join methods disabled, so their paths cost
# disable_cost), and what the planner picks with gpuhash on.  Runs EXPLAIN
# only, on the cluster that `bench/join/run.sh --keep --datadir DIR` left
# running; set PLANS_WORKERS ("0 8 16"), PLANS_WORKLOADS and PLANS_DEVICE
# (auto) to change what it asks.  Compare the choice with run.sh's timings
# of the same workloads, which it does not measure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../test/lib.sh"
. "$here/workloads.sh"
cl=$1
export PGHOST=$cl PGPORT=$(sed -n 's/^port = //p' "$cl/data/postgresql.conf" | tail -1) PGUSER=postgres PGDATABASE=postgres
device=${PLANS_DEVICE:-auto}

# plan_of WORKER_LIMIT MODE QUERY: "total-cost gpuhashjoin-nodes workers-planned"
plan_of() {
  local nw=$1 mode=$2 q=$3 p
  p=$({
    echo "SET max_parallel_workers_per_gather = $nw;"
    echo "SET work_mem = '1GB';"
    echo "SET gpuhash.device = $device;"
    case $mode in
      native) echo "SET gpuhash.enabled = off;" ;;
      chosen) echo "SET gpuhash.enabled = on;" ;;
      gpu) echo "SET gpuhash.enabled = on;"
           echo "SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;" ;;
    esac
    echo "EXPLAIN $q;"
  } | gh_as_pg psql -X -q -At -v ON_ERROR_STOP=1)
  local cost gj wp
  cost=$(echo "$p" | head -1 | sed -E 's/.*cost=[0-9.]+\.\.([0-9.]+) .*/\1/')
  gj=$(echo "$p" | grep -c 'GpuHashJoin' || true)
  wp=$(echo "$p" | grep -oE 'Workers Planned: [0-9]+' | awk '{s += $3} END {print s + 0}')
  echo "$cost $gj $wp"
}

echo "| workload | worker limit | native plan: cost (workers) | best GpuHashJoin plan: cost (workers) | planner's choice with gpuhash on |"
echo "|---|---|---|---|---|"
for w in ${PLANS_WORKLOADS:-$all_workloads}; do
  [ "$w" = floor ] && continue
  for nw in ${PLANS_WORKERS:-0 8 16}; do
    read -r nc _ nwp <<<"$(plan_of "$nw" native "${Q[$w]}")"
    read -r gc ggj gwp <<<"$(plan_of "$nw" gpu "${Q[$w]}")"
    read -r _ cgj cwp <<<"$(plan_of "$nw" chosen "${Q[$w]}")"
    [ "$ggj" -gt 0 ] || gc="no GpuHashJoin path"
    if [ "$cgj" -gt 0 ]; then choice="GpuHashJoin x$cgj ($cwp workers)"; else choice="native ($cwp workers)"; fi
    echo "| $w | $nw | $nc ($nwp) | $gc ($gwp) | $choice |"
  done
done
echo
echo "device $device; work_mem 1GB; costs in PostgreSQL's units (EXPLAIN's total cost of the plan)."
