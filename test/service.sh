#!/bin/bash
# test/service.sh - the GPU service (gpuhash.gpu_service = on, src/service.c)
# in a cluster of its own, as TAP.  GPUHASH_TEST_DEVICE = cpu (default) or gpu
# is the device the service builds on.  Checks: the service runs and joins
# use it (EXPLAIN: "Table Held By: GPU service"); their rows equal native's
# (serial, parallel, every join type, text keys, repeated keys; the participants
# of a shared build share one table); device memory
# counted by the backend goes back to 0; a cancel during the probe and a
# terminated backend leave the service serving with native's rows; with the
# service stopped, joins run in the backend with the same rows, and the
# postmaster starts it again; DROP DATABASE and DROP TABLESPACE finish while
# it runs; a reload reaches it; gpuhash.device = gpu never runs on a service
# that is on the CPU twin; a shared build's hashes go through the service's
# own exchange area, which the next build has again (also after four builds
# at once, and after one that claimed it and spilled).  Then the
# default, gpu_service = parallel: serial joins in the backend, parallel ones
# in the service.  The server-wide device memory budget: the service's and the
# backends' reservations come back (a join's end, a terminated backend, a
# disconnect); a session that finds no room waits for another to give back,
# or falls back after gpuhash.device_memory_wait, with native's rows; a
# cancel ends the wait.  Last, with device = auto and no GPU the service
# stops for good.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$GPUHASH_ROOT"
device=${GPUHASH_TEST_DEVICE:-cpu}
case $device in cpu|gpu|auto) ;; *) echo "GPUHASH_TEST_DEVICE must be cpu, gpu or auto" >&2; exit 2 ;; esac

cl=$(gh_tmpdir)
port=$(gh_free_port)
gh_tap_start "$cl" service

if ! gh_cluster_start "$cl" "$port" "gpuhash.device = $device
gpuhash.gpu_service = on
max_parallel_workers_per_gather = 2" >"$cl/start.log" 2>&1; then
  notok "cluster with gpuhash.gpu_service = on starts" "$(tail -5 "$cl/start.log")"
  exit 1
fi
ok "cluster with gpuhash.gpu_service = on starts"
q() { gh_as_pg psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
q0() { gh_as_pg psql -X -q -At "$@"; }

svc_pid() { q -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'gpuhash GPU service'"; }
for _ in $(seq 1 50); do [ -n "$(svc_pid)" ] && break; sleep 0.1; done
pid0=$(svc_pid)
if [ -n "$pid0" ]; then ok "the service process runs (pid $pid0)"; else notok "the service process runs"; fi

q >/dev/null <<'SQL'
CREATE EXTENSION gpuhash;
CREATE TABLE sv_o AS SELECT i AS id, i % 5000 AS k, 'k' || (i % 5000) AS t, i % 7 AS g
  FROM generate_series(1, 200000) i;
CREATE TABLE sv_i AS SELECT i AS k, i * 3 AS v, 'k' || i AS t FROM generate_series(0, 5999) i;
CREATE TABLE sv_m AS SELECT i % 300 AS k, i AS v FROM generate_series(1, 20000) i;  -- repeated keys
INSERT INTO sv_i SELECT NULL, 1, NULL FROM generate_series(1, 10);
ANALYZE sv_o, sv_i, sv_m;
SQL

# md5 of a query's rows in a canonical order, under settings
digest() {
  local settings=$1 query=$2
  q -c "$settings" -c "SELECT md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) FROM ($query) x" | tail -1
}
explain() {
  q -c "SET gpuhash.force_join = on" -c "$1" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $2"
}
queries=(
  "SELECT o.id, i.v FROM sv_o o JOIN sv_i i ON o.k = i.k"
  "SELECT o.id, i.v FROM sv_o o LEFT JOIN sv_i i ON o.k = i.k"
  "SELECT o.id, i.v FROM sv_o o RIGHT JOIN sv_i i ON o.k = i.k"
  "SELECT o.id, i.v FROM sv_o o FULL JOIN sv_i i ON o.k = i.k"
  "SELECT o.id FROM sv_o o WHERE EXISTS (SELECT 1 FROM sv_i i WHERE i.k = o.k)"
  "SELECT o.id FROM sv_o o WHERE NOT EXISTS (SELECT 1 FROM sv_i i WHERE i.k = o.k)"
  "SELECT o.id, i.v FROM sv_o o JOIN sv_i i ON o.t = i.t"
  "SELECT o.id, m.v FROM sv_o o JOIN sv_m m ON o.k = m.k"
)
serial="SET max_parallel_workers_per_gather = 0; SET gpuhash.batch_rows = 4096"
parallel="SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0; SET gpuhash.batch_rows = 4096"
for query in "${queries[@]}"; do
  nat=$(digest "SET gpuhash.enabled = off" "$query")
  for mode in serial parallel; do
    set_=${!mode}
    plan=$(explain "$set_" "$query")
    if ! grep -q 'Table Held By: GPU service' <<<"$plan"; then
      notok "$mode: the join's table is held by the service: $query" "$(grep -E 'GpuHashJoin|Device' <<<"$plan" | head -3)"
      continue
    fi
    check "$(digest "SET gpuhash.force_join = on; $set_" "$query")" "$nat" "$mode, through the service, native's rows: $query"
  done
done
plan=$(explain "$parallel" "${queries[0]}")
if grep -q 'Workers Launched: [1-9]' <<<"$plan"; then ok "the parallel plan ran with workers"; else notok "the parallel plan ran with workers" "$(head -5 <<<"$plan")"; fi
# a shared build: the participants read the inner side together and use one table in the service
# (a participant that comes after the others' joins ended builds its own)
plan=$(explain "$parallel" "${queries[0]}" | sed 's/^/ /')
plan_v=$(q -c "SET gpuhash.force_join = on" -c "$parallel" -c "EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF) ${queries[0]}")
if grep -q 'Inner Side: read by all participants together' <<<"$plan" &&
   [ "$(grep -c 'one for all participants' <<<"$plan_v")" -ge 2 ]; then
  ok "a shared build's participants use one table in the service"
else
  notok "a shared build's participants use one table in the service" "$(grep -E 'Inner Side|Table Held|Worker [0-9]: Inner' <<<"$plan_v")"
fi
check "$(digest "SET gpuhash.force_join = on; $parallel; SET gpuhash.shared_build = off" "${queries[0]}")" \
  "$(digest "SET gpuhash.enabled = off" "${queries[0]}")" "parallel without the shared build (a table per participant), native's rows"

check "$(q -c "SET gpuhash.force_join = on" -c "SELECT count(*) FROM (${queries[0]}) x" -c "SELECT gpuhash_device_memory()" | tail -1)" "0" \
  "the backend counts no service memory after its join"

# a cancel while the join probes (a slow outer side): the next query is right
slow="SELECT count(*) FROM (SELECT o.id, i.v FROM (SELECT * FROM sv_o WHERE pg_sleep(0.0001) IS NOT NULL) o JOIN sv_i i ON o.k = i.k) x"
out=$(q -c "SET gpuhash.force_join = on; SET statement_timeout = '600ms'; SET gpuhash.batch_rows = 512" -c "$slow" 2>&1)
if grep -q 'canceling statement due to statement timeout' <<<"$out"; then ok "statement_timeout stops a join in the service"; else notok "statement_timeout stops a join in the service" "$out"; fi
nat=$(digest "SET gpuhash.enabled = off" "${queries[3]}")
check "$(q0 -c "SET gpuhash.force_join = on; SET statement_timeout = '600ms'; SET gpuhash.batch_rows = 512" -c "$slow" -c "SET statement_timeout = 0" \
         -c "SELECT md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) FROM (${queries[3]}) x" -c "SELECT gpuhash_device_memory()" 2>/dev/null | tail -2 | tr '\n' ' ')" \
  "$nat 0 " "after a cancel, the same session's next join is native's rows and holds nothing"

# a backend terminated in a join: the others go on with the service
(q -c "SET gpuhash.force_join = on; SET application_name = 'sv_victim'" -c "$slow" >/dev/null 2>&1 &)
sleep 0.8
q -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'sv_victim'" >/dev/null
sleep 0.3
check "$(digest "SET gpuhash.force_join = on" "${queries[0]}")" "$(digest "SET gpuhash.enabled = off" "${queries[0]}")" \
  "after another backend is terminated in a join, joins still return native's rows"
check "$(svc_pid)" "$pid0" "the service process is the same one"

# the service stopped: joins run in the backend
q -c "SELECT pg_terminate_backend($pid0)" >/dev/null
for _ in $(seq 1 50); do [ -z "$(svc_pid)" ] && break; sleep 0.1; done
plan=$(explain "$serial" "${queries[0]}")
if grep -q 'Table Held By' <<<"$plan"; then notok "without the service the backend holds the table"; else ok "without the service the backend holds the table"; fi
check "$(digest "SET gpuhash.force_join = on; $serial" "${queries[0]}")" "$(digest "SET gpuhash.enabled = off" "${queries[0]}")" \
  "without the service, native's rows"
# ... and the postmaster starts it again (bgw_restart_time 5 s): a
# terminated service exits with code 1, as PostgreSQL's own workers do
pid1=
for _ in $(seq 1 150); do pid1=$(svc_pid); [ -n "$pid1" ] && break; sleep 0.1; done
if [ -n "$pid1" ] && [ "$pid1" != "$pid0" ]; then ok "after pg_terminate_backend the postmaster starts the service again (pid $pid1)"
else notok "after pg_terminate_backend the postmaster starts the service again" "pid '$pid1'; $(grep 'GPU service' "$cl/server.log" | tail -3)"; fi
for _ in $(seq 1 50); do grep -q 'GPU service ready' <(tail -5 "$cl/server.log") && break; sleep 0.1; done
plan=$(explain "$serial" "${queries[0]}")
if grep -q 'Table Held By: GPU service' <<<"$plan"; then ok "the restarted service holds the tables again"; else notok "the restarted service holds the tables again" "$(grep -E 'Device|Table' <<<"$plan")"; fi
check "$(digest "SET gpuhash.force_join = on; $serial" "${queries[0]}")" "$(digest "SET gpuhash.enabled = off" "${queries[0]}")" \
  "through the restarted service, native's rows"

# the service absorbs ProcSignal barriers: DROP DATABASE and DROP TABLESPACE
# (which wait for every process with a PGPROC) finish while it runs
q -c "CREATE DATABASE sv_drop" >/dev/null
svc_before=$(svc_pid)
t0=$SECONDS
out=$(gh_as_pg timeout 60 psql -X -q -At -v ON_ERROR_STOP=1 -c "SET statement_timeout = '50s'" -c "DROP DATABASE sv_drop" 2>&1)
rc=$?
if [ -n "$svc_before" ] && [ "$(svc_pid)" = "$svc_before" ] && [ $rc -eq 0 ] &&
   [ "$(q -c "SELECT count(*) FROM pg_database WHERE datname = 'sv_drop'")" = 0 ]; then
  ok "DROP DATABASE finishes while the service runs ($((SECONDS - t0)) s, service pid $svc_before)"
else
  notok "DROP DATABASE finishes while the service runs" "service pid '$svc_before'; rc $rc: $out; $(grep -E 'ProcSignalBarrier' "$cl/server.log" | tail -2)"
fi
t0=$SECONDS
out=$(gh_as_pg timeout 60 psql -X -q -At -v ON_ERROR_STOP=1 -c "SET statement_timeout = '50s'" \
  -c "SET allow_in_place_tablespaces = on" -c "CREATE TABLESPACE sv_space LOCATION ''" \
  -c "CREATE TABLE sv_ts TABLESPACE sv_space AS SELECT 1 AS k" -c "DROP TABLE sv_ts" -c "DROP TABLESPACE sv_space" 2>&1)
rc=$?
if [ -n "$(svc_pid)" ] && [ $rc -eq 0 ]; then ok "DROP TABLESPACE with lingering files finishes while the service runs ($((SECONDS - t0)) s)"
else notok "DROP TABLESPACE with lingering files finishes while the service runs" "rc $rc: $out"; fi
# a configuration reload reaches it (and does not stop it)
q -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
check "$(svc_pid)" "$pid1" "after pg_reload_conf the service is the same process"
# gpuhash.device = gpu means a GPU: a service on the CPU twin does not stand
# in for one; gpuhash.device = cpu means the twin, not a service on the GPU
if [ "$device" = cpu ]; then
  out=$(q0 -c "SET gpuhash.force_join = on; SET gpuhash.device = gpu" -c "SELECT count(*) FROM (${queries[0]}) x" 2>&1)
  if [ -n "$(svc_pid)" ] && grep -q 'ERROR' <<<"$out" && ! grep -qE '^[0-9]+$' <<<"$out"; then
    ok "device = gpu with the service on the CPU twin: an ERROR, not the twin"
  else
    notok "device = gpu with the service on the CPU twin: an ERROR, not the twin" "$out"
  fi
else
  plan=$(explain "$serial; SET gpuhash.device = cpu" "${queries[0]}")
  if grep -q 'Table Held By' <<<"$plan" || ! grep -q 'Device: cpu' <<<"$plan"; then
    notok "device = cpu with the service on the GPU: the backend's CPU twin" "$(grep -E 'Device|Table' <<<"$plan")"
  else
    ok "device = cpu with the service on the GPU: the backend's CPU twin"
  fi
fi
# a shared build's hashes reach the service through the service's own
# exchange area, kept from one build to the next (the participants' DEBUG2
# accounts name it); builds at once that find it taken make their own; a
# build that claimed it and then spilled to partitions (the inner side
# underestimated: a = b, both of 10 values) gives it back without a table,
# and the next build has it again: native's rows every time
xarea() {  # the exchange areas a shared build's participants name
  q -c "SET gpuhash.force_join = on" -c "$parallel" -c "SET client_min_messages = debug2" -c "$1" 2>&1 >/dev/null |
    grep -o 'exchange [a-z]*' | sort -u | tr '\n' ' '
}
# xarea_again QUERY: xarea, run again (five times at most) while it says
# "none": no second participant came while the inner side was read, so
# nobody asked for an area (a worker that started late)
xarea_again() {
  local got
  for _ in 1 2 3 4 5; do
    got=$(xarea "$1")
    [ "$got" != "exchange none " ] && break
  done
  echo "$got"
}
# (an inner side of 300000 rows: the workers start while it is read)
q >/dev/null <<'SQL'
CREATE TABLE sv_x AS SELECT i AS k, i % 10 AS a, i % 10 AS b, 'x' || i AS t FROM generate_series(1, 300000) i;
ANALYZE sv_x;
SQL
xj="SELECT o.id, x.t FROM sv_o o JOIN sv_x x ON o.k = x.k"
check "$(xarea_again "$xj")" "exchange service " "a shared build's hashes go through the service's exchange area"
check "$(xarea_again "$xj")" "exchange service " "the next shared build has the service's exchange area again"
natt=$(digest "SET gpuhash.enabled = off" "$xj")
for k in 1 2 3 4; do
  digest "SET gpuhash.force_join = on; $parallel" "$xj" >"$cl/xarea.$k" 2>&1 &
done
wait
same=0
for k in 1 2 3 4; do [ "$(cat "$cl/xarea.$k")" = "$natt" ] && same=$((same + 1)); done
check "$same" 4 "four shared builds at once, one exchange area: native's rows in each"
xq="SELECT o.id, x.k FROM sv_o o JOIN sv_x x ON o.k = x.k WHERE x.a = 1 AND x.b = 1"
xplan=$(q -c "SET gpuhash.force_join = on" -c "$parallel" -c "SET work_mem = '64kB'" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $xq")
if grep -q 'Shared Partitions: [1-9]' <<<"$xplan"; then
  ok "an underestimated shared build spills to partitions"
else
  notok "an underestimated shared build spills to partitions" "$(grep -E 'Inner Side|Batches|Partition' <<<"$xplan")"
fi
check "$(digest "SET gpuhash.force_join = on; $parallel; SET work_mem = '64kB'" "$xq")" \
  "$(digest "SET gpuhash.enabled = off" "$xq")" "the spilled shared build: native's rows"
check "$(xarea_again "$xj")" "exchange service " "after the spilled build the next one has the service's exchange area"
check "$(digest "SET gpuhash.force_join = on; $parallel" "$xj")" "$natt" "and native's rows"

# the default, gpuhash.gpu_service = parallel: a parallel join's participants
# use the service, a serial join holds its table in the backend
restart() {
  printf '%s\n' "$1" >>"$cl/data/postgresql.conf"
  gh_as_pg "$(gh_pg_bindir)/pg_ctl" -D "$cl/data" -l "$cl/server.log" -m fast -w restart >/dev/null 2>&1
}
restart "gpuhash.gpu_service = parallel"
for _ in $(seq 1 50); do [ -n "$(svc_pid)" ] && break; sleep 0.1; done
check "$(q -c "SHOW gpuhash.gpu_service")" "parallel" "gpu_service = parallel after the restart"
plan=$(explain "$serial" "${queries[0]}")
if grep -q 'Table Held By' <<<"$plan"; then
  notok "parallel: a serial join holds its table in the backend" "$(grep 'Table Held' <<<"$plan")"
else
  ok "parallel: a serial join holds its table in the backend"
fi
plan=$(explain "$parallel" "${queries[1]}")
if grep -q 'Table Held By: GPU service' <<<"$plan" && grep -q 'Workers Launched: [1-9]' <<<"$plan"; then
  ok "parallel: a parallel join's table is in the service"
else
  notok "parallel: a parallel join's table is in the service" "$(grep -E 'Workers|Table Held|Device' <<<"$plan")"
fi
for mode in serial parallel; do
  set_=${!mode}
  check "$(digest "SET gpuhash.force_join = on; $set_" "${queries[1]}")" "$(digest "SET gpuhash.enabled = off" "${queries[1]}")" \
    "parallel, a $mode join: native's rows"
done

# the server-wide device memory budget (gpuhash.server_device_memory,
# src/device_budget.c), with the CPU twin reserving as the GPU does
# (gpuhash.budget_cpu_twin): the service's and the backends' reservations come
# back after a join, a terminated backend and a disconnect; a session whose
# reservation finds no room waits for another to give back, or falls back to
# the twin's host memory after gpuhash.device_memory_wait, with native's rows;
# a cancel ends the wait.  The budget is what the service holds for good (its
# CUDA context's share on a GPU) plus 6 MB: room for one bd_i table (about
# 4.6 MB on the twin), not two.  The joins here run on the CPU twin.
restart "gpuhash.budget_cpu_twin = on"
for _ in $(seq 1 50); do [ -n "$(svc_pid)" ] && break; sleep 0.1; done
q >/dev/null <<'SQL'
CREATE TABLE bd_i AS SELECT g AS k, g * 3 AS v FROM generate_series(0, 99999) g;
CREATE TABLE bd_o AS SELECT g AS id, g % 5000 AS k FROM generate_series(1, 20000) g;
ANALYZE bd_i, bd_o;
SQL
bq() { q -c "SELECT $1 FROM gpuhash_device_budget()"; }
others_bytes() { q -c "SELECT coalesce(sum(reserved_bytes), 0) FROM gpuhash_device_reservations() WHERE pid <> pg_backend_pid()"; }
svc_bytes() { q -c "SELECT coalesce(sum(reserved_bytes), 0) FROM gpuhash_device_reservations() WHERE pid = '$(svc_pid)'"; }
# wait_reserved BYTES: until the server's reservations are BYTES again (5 s at most)
wait_reserved() { for _ in $(seq 1 50); do [ "$(bq reserved_bytes)" = "$1" ] && return 0; sleep 0.1; done; return 1; }
base=$(others_bytes)
bjoin="SELECT o.id, i.v FROM bd_o o JOIN bd_i i ON o.k = i.k"
# work_mem large: bd_i's table is one batch, whose reservation is what waits
bset="SET gpuhash.device = cpu; SET gpuhash.force_join = on; SET max_parallel_workers_per_gather = 0; SET work_mem = '1GB'"
bnat=$(digest "SET gpuhash.enabled = off" "$bjoin")

# a parallel join's table in the service: reserved by the service while it
# runs, given back when it ends
slowpar="SELECT count(*) FROM sv_o o JOIN sv_i i ON o.k = i.k WHERE o.id <= 3000 AND pg_sleep(0.0003) IS NOT NULL"
(q -c "SET gpuhash.force_join = on; $parallel" -c "$slowpar" >/dev/null 2>&1 &)
held=0
for _ in $(seq 1 40); do
  [ "$(svc_bytes)" -gt "$base" ] 2>/dev/null && { held=1; break; }
  sleep 0.1
done
if [ $held = 1 ]; then ok "budget: the service reserves a parallel join's table"; else notok "budget: the service reserves a parallel join's table" "service holds $(svc_bytes), base $base"; fi
if wait_reserved "$base"; then ok "budget: the service gives it back when the join ends"
else notok "budget: the service gives it back when the join ends" "reserved $(bq reserved_bytes), base $base"; fi

# a backend terminated while its cursor holds a table, and one that
# disconnects in the middle of a transaction: both give back
hold() {  # hold NAME SECONDS: a session that holds bd_i's table for SECONDS
  q -c "$bset; SET application_name = '$1'" -c "BEGIN" -c "DECLARE c CURSOR FOR $bjoin" -c "FETCH 1 FROM c" \
    -c "SELECT pg_sleep($2)" -c "COMMIT" >/dev/null 2>&1
}
(hold bd_victim 30 &)
held=0
for _ in $(seq 1 50); do [ "$(bq reserved_bytes)" -gt "$base" ] && { held=1; break; }; sleep 0.1; done
q -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'bd_victim'" >/dev/null
if [ $held = 1 ] && wait_reserved "$base"; then ok "budget: a backend terminated while it holds a table gives it back"
else notok "budget: a backend terminated while it holds a table gives it back" "held $held; reserved $(bq reserved_bytes), base $base"; fi
q -c "$bset" -c "BEGIN" -c "DECLARE c CURSOR FOR $bjoin" -c "FETCH 1 FROM c" >/dev/null
if wait_reserved "$base"; then ok "budget: a backend that disconnects in a transaction gives back"
else notok "budget: a backend that disconnects in a transaction gives back" "reserved $(bq reserved_bytes), base $base"; fi

printf '%s\n' "gpuhash.server_device_memory = '$(( (base + 1048575) / 1048576 + 6 ))MB'" >>"$cl/data/postgresql.conf"
q -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
# ... and a session that needs room while another holds it
(hold bd_a1 1.5 &)
for _ in $(seq 1 50); do [ "$(bq reserved_bytes)" -gt "$base" ] && break; sleep 0.1; done
w0=$(bq waits) r0=$(bq refusals) t0=$(date +%s%N)
got=$(digest "$bset; SET gpuhash.device_memory_wait = '20s'" "$bjoin")
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "$got $(( $(bq waits) - w0 )) $(( $(bq refusals) - r0 ))" "$bnat 1 0" \
  "budget: a session waits for another to give back, then reserves: native's rows, one wait, no refusal (${ms} ms)"
wait_reserved "$base"
(hold bd_a2 4 &)
for _ in $(seq 1 50); do [ "$(bq reserved_bytes)" -gt "$base" ] && break; sleep 0.1; done
w0=$(bq waits) r0=$(bq refusals)
got=$(digest "$bset; SET gpuhash.device_memory_wait = '300ms'" "$bjoin")
check "$got $(( $(bq waits) - w0 )) $(( $(bq refusals) - r0 ))" "$bnat 1 1" \
  "budget: past gpuhash.device_memory_wait the join falls back: native's rows, one wait, one refusal"
out=$(q0 -c "$bset; SET gpuhash.device_memory_wait = '20s'; SET statement_timeout = '500ms'" -c "$bjoin" 2>&1 >/dev/null)
if grep -q 'canceling statement due to statement timeout' <<<"$out"; then ok "budget: a cancel ends the wait"
else notok "budget: a cancel ends the wait" "$out"; fi
if [ "$device" = gpu ]; then
  # on a GPU a backend's CUDA context counts 520 MB, which this budget (the
  # service's share and 6 MB) has no room for: device = auto stays on the CPU
  # twin, device = gpu is an ERROR that says why
  gset="SET gpuhash.force_join = on; SET max_parallel_workers_per_gather = 0; SET gpuhash.device_memory_wait = 0"
  plan=$(q -c "$gset; SET gpuhash.device = auto" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $bjoin")
  if grep -q 'Device: cpu' <<<"$plan"; then ok "budget: device = auto without room for a CUDA context runs on the CPU twin"
  else notok "budget: device = auto without room for a CUDA context runs on the CPU twin" "$(grep -E 'GpuHashJoin|Device' <<<"$plan")"; fi
  out=$(q0 -c "$gset; SET gpuhash.device = gpu" -c "SELECT count(*) FROM ($bjoin) x" 2>&1)
  if grep -q "has no room for this backend's CUDA context" <<<"$out"; then ok "budget: device = gpu without room for a CUDA context: an ERROR"
  else notok "budget: device = gpu without room for a CUDA context: an ERROR" "$out"; fi
  # with room for a context and the table the join runs on the GPU; the
  # context's share stays with the backend until it exits
  printf '%s\n' "gpuhash.server_device_memory = '$(( (base + 1048575) / 1048576 + 600 ))MB'" >>"$cl/data/postgresql.conf"
  q -c "SELECT pg_reload_conf()" >/dev/null
  sleep 0.5
  out=$(q -c "$gset; SET gpuhash.device = gpu" -c "SELECT md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) FROM ($bjoin) x" \
          -c "SELECT reserved_bytes FROM gpuhash_device_reservations() WHERE pid = pg_backend_pid()" | tail -2 | tr '\n' ' ')
  check "$out" "$bnat $((520 * 1024 * 1024)) " "budget: a GPU join under the budget: native's rows, and the backend keeps its context's 520 MB after it"
fi
if wait_reserved "$base"; then ok "budget: everything given back at the end"
else notok "budget: everything given back at the end" "reserved $(bq reserved_bytes), base $base"; fi
check "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'gpuhash GPU service'")" 1 "budget: the service still runs"

# under the default with gpuhash.device = auto, the service stays only where
# there is a GPU (on a host without one it stops for good and frees its slot)
restart "gpuhash.device = auto"
sleep 1
ngpu=$(q -c "SELECT count(*) FROM gpuhash_devices()")
if [ "$ngpu" -gt 0 ]; then
  if [ -n "$(svc_pid)" ]; then ok "device = auto with a GPU: the service runs"; else notok "device = auto with a GPU: the service runs"; fi
else
  if [ -z "$(svc_pid)" ] && grep -q 'gpuhash GPU service found no usable GPU and stops' "$cl/server.log"; then
    ok "device = auto without a GPU: the service stops"
  else
    notok "device = auto without a GPU: the service stops" "pid '$(svc_pid)'; $(grep 'GPU service' "$cl/server.log" | tail -2)"
  fi
  sleep 1
  if [ -z "$(svc_pid)" ]; then ok "and the postmaster does not start it again"; else notok "and the postmaster does not start it again"; fi
fi

if grep -qE 'PANIC|terminated by signal|server process .* was terminated' "$cl/server.log"; then
  notok "no server process crashed" "$(grep -E 'PANIC|terminated by signal' "$cl/server.log" | head -3)"
else
  ok "no server process crashed"
fi
