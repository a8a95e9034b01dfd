#!/bin/bash
# bench/scan/run.sh - the device scan's speed: heap pages read, checked and
# staged on the host, deformed on the device, against PostgreSQL's own scan
# of the same table.  Markdown on stdout.
#
#   bench/scan/run.sh [ROWS]        default 50000000 rows (about 5 GB of heap)
#
# Needs gpuhash built and installed and PostgreSQL's programs on PATH (on a
# GPU host: source .gpuhost/pg.sh first).  It starts a throwaway cluster
# (gpuhash preloaded, 16 parallel workers, the table in shared_buffers after
# a warm-up), fills an unlogged table shaped like TPC-H's lineitem
#   bench_scan(k int8, flag char(1), status char(1), qty numeric(15,2),
#              price numeric(15,2), disc numeric(15,2), ship date, note text)
# VACUUMs it (every page all-visible) and times, one after the other on the
# same data and settings, each a warm-up and REPEATS timed runs (EXPLAIN
# ANALYZE's Execution Time, medians):
#   native count(*) with 16 workers and serial (gpuhash.enabled = off): the
#     floor of PostgreSQL's own scan;
#   gpuhash_scan_counts(NULL::bench_scan): the device scan of every column
#     alone, serial (staging on the host, deforming on the device, the
#     columns copied back);
#   a Q1-shaped GROUP BY (flag, status; count and sums of three numerics)
#     through GpuHashAgg with gpuhash.force_agg, serial and with 16 workers,
#     with gpuhash.enable_scan on and off, and natively with 16 workers.
# For the device scan it reports the heap's bytes per second, from the
# table's size and the run's time, and from the Time of EXPLAIN ANALYZE's
# "Device Scan Pages" line (staging and device separately, serial; shown
# with TIMING, which is on here), against the 55 GB/s that
# pinned copies reach on an H200.
#
# Environment: REPEATS (3), BENCH_DEVICE (gpu), BENCH_SHARED_BUFFERS (24GB),
# BENCH_LOAD_JOBS (16).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../test/lib.sh"
. "$here/../lib.sh"

rows=${1:-50000000}
repeats=${REPEATS:-3}
device=${BENCH_DEVICE:-gpu}
jobs=${BENCH_LOAD_JOBS:-16}

dir=$(gh_tmpdir)
port=$(gh_free_port)
trap 'gh_cluster_stop "$dir"; rm -rf "$dir"' EXIT
# bench/lib.sh's settings of every benchmark cluster (shared buffers
# BENCH_SHARED_BUFFERS, 24GB here), then this benchmark's
gh_cluster_start "$dir" "$port" "$(BENCH_SHARED_BUFFERS=${BENCH_SHARED_BUFFERS:-24GB} bench_conf)
gpuhash.device = $device
max_parallel_workers_per_gather = 16" >/dev/null
q() { gh_as_pg psql -X -qAt -v ON_ERROR_STOP=1 "$@"; }

# --- data ---------------------------------------------------------------
q -c "CREATE EXTENSION gpuhash" \
  -c "CREATE UNLOGGED TABLE bench_scan (k int8, flag char(1), status char(1), qty numeric(15,2),
        price numeric(15,2), disc numeric(15,2), ship date, note text)"
chunk=$(( (rows + jobs - 1) / jobs ))
pids=()
for j in $(seq 0 $((jobs - 1))); do
  lo=$(( j * chunk + 1 )); hi=$(( (j + 1) * chunk )); [ $hi -gt $rows ] && hi=$rows
  [ $lo -gt $hi ] && continue
  q -c "INSERT INTO bench_scan
        SELECT g, substr('ANR', (g % 3)::int + 1, 1), substr('OF', (g % 2)::int + 1, 1),
               (g % 50) + 1, ((g * 7919) % 100000) / 100.0 + 900, (g % 11) / 100.0,
               '1992-01-01'::date + (g % 2500)::int, 'note ' || (g % 100000)
          FROM generate_series($lo::int8, $hi::int8) g" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
q -c "VACUUM (FREEZE, ANALYZE) bench_scan" -c "ALTER TABLE bench_scan SET (parallel_workers = 16)"
bytes=$(q -c "SELECT pg_relation_size('bench_scan')")
pages=$(( bytes / 8192 ))

# --- runs ---------------------------------------------------------------
q1sql="SELECT flag, status, count(*), sum(qty), sum(price), sum(price * (1 - disc)) FROM bench_scan GROUP BY flag, status"
# TPC-H Q1's own shape: its WHERE (a date against a timestamp, which
# GpuHashAgg evaluates on the device with the scan passing every row) and avg
q1wsql="SELECT flag, status, sum(qty), sum(price), sum(price * (1 - disc)), avg(qty), avg(disc), count(*)
          FROM bench_scan WHERE ship <= date '1998-12-01' - interval '90' day GROUP BY flag, status"
# run NAME SETTINGS SQL: REPEATS timed runs after a warm-up; prints the median ms
declare -A med out
run() {
  local name=$1 set=$2 sql=$3 ts=() i
  q -c "$set" -c "$sql" >/dev/null
  for i in $(seq 1 "$repeats"); do
    out[$name]=$(q -c "$set" -c "EXPLAIN (ANALYZE, COSTS OFF) $sql")
    ts+=("$(grep -o 'Execution Time: [0-9.]*' <<<"${out[$name]}" | awk '{print $3}')")
  done
  med[$name]=$(printf '%s\n' "${ts[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
}
gbps() { awk -v b="$bytes" -v ms="$1" 'BEGIN { printf "%.2f", b / (ms / 1000) / 1e9 }'; }
native="SET gpuhash.enabled = off;"
run count_p16 "$native SET max_parallel_workers_per_gather = 16;" "SELECT count(*) FROM bench_scan"
run count_serial "$native SET max_parallel_workers_per_gather = 0;" "SELECT count(*) FROM bench_scan"
run scan_only "SET max_parallel_workers_per_gather = 0;" "SELECT * FROM gpuhash_scan_counts(NULL::bench_scan)"
forced="SET gpuhash.force_agg = on;"
run agg_serial_scan "$forced SET max_parallel_workers_per_gather = 0; SET gpuhash.enable_scan = on;" "$q1sql"
run agg_serial_noscan "$forced SET max_parallel_workers_per_gather = 0; SET gpuhash.enable_scan = off;" "$q1sql"
run agg_p16_scan "$forced SET max_parallel_workers_per_gather = 16; SET gpuhash.enable_scan = on;" "$q1sql"
run agg_p16_noscan "$forced SET max_parallel_workers_per_gather = 16; SET gpuhash.enable_scan = off;" "$q1sql"
run native_p16 "$native SET max_parallel_workers_per_gather = 16;" "$q1sql"
# Q1 itself: forced, as the cost model chooses, and native (16 workers)
run q1_p16_forced "$forced SET max_parallel_workers_per_gather = 16;" "$q1wsql"
run q1_p16_chosen "SET max_parallel_workers_per_gather = 16;" "$q1wsql"
run q1_native_p16 "$native SET max_parallel_workers_per_gather = 16;" "$q1wsql"

# the same rows everywhere
sums=$(for s in "$native" "$forced SET gpuhash.enable_scan = on; SET max_parallel_workers_per_gather = 0;" \
                 "$forced SET gpuhash.enable_scan = on;"; do
  q -c "$s" -c "SELECT md5(string_agg(x::text, ',' ORDER BY x::text)) FROM ($q1sql) x"
done | sort -u | wc -l)
wsums=$(for s in "$native" "$forced" ""; do
  q -c "$s SET max_parallel_workers_per_gather = 16;" -c "SELECT md5(string_agg(x::text, ',' ORDER BY x::text)) FROM ($q1wsql) x"
done | sort -u | wc -l)

echo "# bench/scan: $rows rows, $pages pages ($(( bytes / 1048576 )) MB), device $device, medians of $repeats"
echo
echo "| run | ms | heap GB/s |"
echo "|---|---|---|"
for n in count_p16 count_serial scan_only agg_serial_scan agg_serial_noscan agg_p16_scan agg_p16_noscan native_p16 \
         q1_p16_forced q1_p16_chosen q1_native_p16; do
  echo "| $n | ${med[$n]} | $(gbps "${med[$n]}") |"
done
echo
echo "Serial device scan inside GpuHashAgg (EXPLAIN ANALYZE of the last run):"
grep -E "Device Scan (Pages|Rows|Time)" <<<"${out[agg_serial_scan]}" | sed 's/^ */    /'
echo
echo "Workers' device scans (16 workers, the last run):"
grep -E "Device Scan (Pages|Rows|Time)" <<<"${out[agg_p16_scan]}" | sed 's/^ */    /'
echo
echo "Q1 with 16 workers, forced (the plan's GpuHashAgg lines of the last run):"
grep -E "Custom Scan|Device (Filter|Scan)|Rows (In|Removed)|Execution Time" <<<"${out[q1_p16_forced]}" | cut -c1-160 | sed 's/^ */    /'
echo
echo "Q1 as the cost model chose (16 workers): $(grep -cE 'GpuHashAgg' <<<"${out[q1_p16_chosen]}") GpuHashAgg node(s)"
echo
if [ "$sums" = 1 ] && [ "$wsums" = 1 ]; then
  echo "The GROUP BY's result: the same natively, through the serial device scan and through the workers'; Q1's the same natively, forced and chosen."
else
  echo "RESULTS DIFFER between native and the device scan's runs"
  exit 1
fi
