#!/bin/bash
# test/robust/gpu.sh - robustness tests that need a real GPU (issue 6).
#
#   A. a server whose GPU driver is missing, broken or failing still starts;
#      gpuhash.device = auto leaves plans alone with at most one WARNING
#      (none expected: one LOG line per backend), device = gpu gives a clean
#      ERROR with a hint.  Driver variants: CUDA_VISIBLE_DEVICES=-1 (no
#      device), a libcuda.so.1 that exports nothing, and one whose every
#      entry point fails (test/robust/fake_libcuda.c, first on
#      LD_LIBRARY_PATH).
#   B. device memory exhausted by other work (test/robust/hog.cu holds all
#      but a few MiB of the GPU): a session that already has its context
#      falls back to the CPU twin or fails cleanly (53200); a session without
#      one fails cleanly and uses the GPU again once the memory is back;
#      many concurrent sessions with the GPU shrunk to a few contexts' worth:
#      every query native's rows or 53200, none hangs, the GPU's memory back
#      at its baseline afterwards.
#   C. statement_timeout during the device phase of a big build (the copy of
#      the inner side's hashes to the device, the build kernel, the copy of
#      the row array back): a sweep of timeouts across that phase; each query
#      stops within 1 s, nothing held afterwards.  Also timeouts during
#      gpuhash_device_selftest of 1 GiB (copies through pinned memory).
#
# With GPUHASH_TEST_DEVICE=cpu (or no GPU) part A runs as is (a host without
# a driver is the "missing" case), B runs with a hog that holds nothing (a
# dry run of the SQL and the checks), C runs on the CPU twin.  Prints TAP;
# exit status 0 when every test passed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
cd "$GPUHASH_ROOT"
device=${GPUHASH_TEST_DEVICE:-gpu}
case $device in cpu) expect_gpu=off ;; gpu) expect_gpu=on ;; *) exit 2 ;; esac
logdir=${GPUHASH_TEST_LOGDIR:-$(mktemp -d /tmp/gpuhash-robust-gpu.XXXXXX)}
mkdir -p "$logdir"
real=0
[ "$device" = gpu ] && command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && real=1
CANCEL_BOUND=1.0
GPU_TOL_MB=${GPUHASH_GPU_TOL_MB:-4}

n=0 nfail=0
ok()  { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); nfail=$((nfail + 1)); echo "not ok $n - $*"; }
check() { if [ "$1" = 0 ]; then ok "$2"; else nok "$2"; [ -n "${3:-}" ] && echo "$3" | sed 's/^/# /'; fi; }
skip() { n=$((n + 1)); echo "ok $n - $* # SKIP no GPU"; }
diag() { echo "$*" | sed 's/^/# /'; }

cl=$(gh_tmpdir)
port=$(gh_free_port)
bin=$(gh_pg_bindir)
hogpid=""
cleanup() {
  [ -n "$hogpid" ] && kill "$hogpid" 2>/dev/null
  gh_as_pg "$bin/pg_ctl" -D "$cl/data" -m fast -w stop >/dev/null 2>&1
  cp "$cl"/*.log "$cl"/*.out "$logdir/" 2>/dev/null
  rm -rf "$cl"
}
trap cleanup EXIT
gh_cluster_init "$cl" "$port" "max_parallel_workers_per_gather = 0
max_connections = 60
log_line_prefix = '%m [%p] %e '
gpuhash_test.gpu = $expect_gpu" "$bin" || exit 1
export PGHOST=$cl PGPORT=$port PGUSER=postgres PGDATABASE=postgres
# start_server LOGNAME [ENV...]: (re)start the postmaster with ENV
start_server() {
  local logf="$cl/$1"; shift
  gh_as_pg "$bin/pg_ctl" -D "$cl/data" -m fast -w stop >/dev/null 2>&1
  : >"$logf"; chmod 666 "$logf"
  gh_as_pg env "$@" "$bin/pg_ctl" -D "$cl/data" -l "$logf" -w start >/dev/null 2>&1
}
P() { gh_as_pg psql -X -q -v ON_ERROR_STOP=1 -d rbg "$@"; }
q() { gh_as_pg psql -X -Atq -v ON_ERROR_STOP=1 -d rbg -c "$1"; }
tmpf() { local f="$cl/$1"; : >"$f"; chmod 666 "$f"; echo "$f"; }
crashed() { grep -qE 'terminated by signal|reinitializing|PANIC|TRAP:' "$1"; }
gpu_used() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 2>/dev/null | head -1 | tr -d ' '; }
# gpu_settle BASE: wait (at most 15 s) for the GPU's used memory to come
# back within GPU_TOL_MB of BASE (MiB); echo the last value
gpu_settle() {
  local u i
  for i in $(seq 1 60); do
    u=$(gpu_used)
    [ -n "$u" ] && [ $((u - $1)) -le $GPU_TOL_MB ] && [ $(($1 - u)) -le $GPU_TOL_MB ] && { echo "$u"; return 0; }
    sleep 0.25
  done
  echo "${u:-?}"; return 1
}

# ---------------------------------------------------------------------------
# A. missing, broken and failing driver
# ---------------------------------------------------------------------------
fk=$(gh_tmpdir)
mkdir -p "$fk/empty" "$fk/fail"
gcc -shared -fPIC -O1 -o "$fk/empty/libcuda.so.1" -Wl,-soname,libcuda.so.1 -DGH_FAKE_EMPTY "$here/fake_libcuda.c" &&
  gcc -shared -fPIC -O1 -o "$fk/fail/libcuda.so.1" -Wl,-soname,libcuda.so.1 "$here/fake_libcuda.c"
check $? "fake driver libraries built"
chmod -R a+rX "$fk"
start_server server-setup.log || { echo "not ok - server start"; cat "$cl/server-setup.log"; exit 1; }
gh_as_pg createdb rbg
P >"$cl/setup.log" 2>&1 <<'SQL' || { cat "$cl/setup.log"; echo "not ok - setup"; exit 1; }
CREATE EXTENSION gpuhash;
CREATE TABLE da AS SELECT g AS id, g % 97 AS k FROM generate_series(1, 5000) g;
CREATE TABLE db AS SELECT g AS id, g % 89 AS k FROM generate_series(1, 3000) g;
ANALYZE;
SQL
DRV_SQL="$cl/driver.sql"
cat >"$DRV_SQL" <<'SQL'
\set VERBOSITY verbose
SELECT 'ndev=' || count(*) FROM gpuhash_devices();
SELECT 'setting=' || current_setting('gpuhash.device');
SET gpuhash.force_join = on;
SET gpuhash.enabled = off;
SELECT count(*) || ':' || sum(da.id + db.id) AS native FROM da JOIN db USING (k) \gset
SET gpuhash.enabled = on;
EXPLAIN (COSTS OFF) SELECT count(*) FROM da JOIN db USING (k);
SELECT 'auto_rows=' || (count(*) || ':' || sum(da.id + db.id) = :'native') FROM da JOIN db USING (k);
SELECT 'active=' || gpuhash_active_device();
SELECT 'devmem=' || gpuhash_device_memory();
SET gpuhash.device = gpu;
SELECT count(*) FROM da JOIN db USING (k);
SELECT * FROM gpuhash_aggregate('SELECT k, count(*) FROM da GROUP BY k') AS t(k int, n bigint) LIMIT 1;
SELECT gpuhash_device_selftest(1024);
SET gpuhash.device = cpu;
SELECT 'cpu_rows=' || (count(*) || ':' || sum(da.id + db.id) = :'native') FROM da JOIN db USING (k);
SELECT 'alive=yes';
SQL
chmod 644 "$DRV_SQL"
for variant in no-device broken-libcuda failing-libcuda; do
  case $variant in
    no-device) envs=(CUDA_VISIBLE_DEVICES=-1) ;;
    broken-libcuda) envs=(LD_LIBRARY_PATH="$fk/empty${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}") ;;
    failing-libcuda) envs=(LD_LIBRARY_PATH="$fk/fail${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}") ;;
  esac
  slog="server-$variant.log"
  start_server "$slog" "${envs[@]}"
  check $? "driver $variant: the server starts with gpuhash preloaded" "$(tail -3 "$cl/$slog")"
  out=$(tmpf "driver-$variant.out")
  gh_as_pg psql -X -At -d rbg -f "$DRV_SQL" >"$out" 2>&1
  # two more sessions using gpuhash with device = auto
  for i in 1 2; do
    gh_as_pg psql -X -At -d rbg -c "SET gpuhash.force_join = on" -c "SELECT count(*) FROM da JOIN db USING (k)" \
      -c "SELECT count(*) FROM gpuhash_devices()" >>"$cl/driver-$variant.more" 2>&1
  done
  plans=$(grep -c 'GpuHashJoin' "$out")
  [ "$(sed -n 's/^ndev=//p' "$out")" = 0 ] && [ "$(sed -n 's/^setting=//p' "$out")" = auto ] && [ "$plans" = 0 ] &&
    grep -q '^auto_rows=true' "$out" && grep -q '^active=cpu' "$out" && grep -q '^devmem=0' "$out"
  check $? "driver $variant: device = auto sees no GPU, leaves the plan alone (forced join planned natively), native's rows" "$(grep -vE '=|^ ' "$out" | head -4)"
  ngpuerr=$(grep -c 'ERROR:  0A000: gpuhash.device is "gpu" but no usable GPU was found' "$out")
  nhint=$(grep -c 'HINT:  Set gpuhash.device to "auto"' "$out")
  [ "$ngpuerr" = 3 ] && [ "$nhint" = 3 ] && grep -q '^cpu_rows=true' "$out" && grep -q '^alive=yes' "$out"
  check $? "driver $variant: device = gpu gives a clean ERROR 0A000 with a hint (join, gpuhash_aggregate, selftest: $ngpuerr of 3), the session goes on" "$(grep -E 'ERROR|DETAIL|HINT' "$out" | head -6)"
  grep -E 'DETAIL' "$out" | head -1 | sed "s/^/# $variant: /"
  nwarn=$(cat "$cl/$slog" "$out" "$cl/driver-$variant.more" | grep -c 'WARNING')
  nlog=$(grep -c 'LOG:  gpuhash found no usable GPU' "$cl/$slog")
  [ "$nwarn" -le 1 ] && ! crashed "$cl/$slog" && ! grep -qE 'ERROR|FATAL' "$cl/driver-$variant.more"
  check $? "driver $variant: at most one WARNING (server log and clients: $nwarn; 'no usable GPU' LOG lines: $nlog), no crash" "$(grep -E 'WARNING|ERROR|FATAL' "$cl/$slog" "$cl/driver-$variant.more" | head -3)"
  grep -m1 'LOG:  gpuhash found no usable GPU' -A1 "$cl/$slog" | sed "s/^/# $variant log: /"
done
# back to the plain environment for the rest, device from GPUHASH_TEST_DEVICE
echo "gpuhash.device = $device" >>"$cl/data/postgresql.conf"
start_server server.log
check $? "the server starts again with the real driver"
log="$cl/server.log"

# ---------------------------------------------------------------------------
# B. device memory exhausted by other work
# ---------------------------------------------------------------------------
hog=""
if [ $real = 1 ]; then
  hog=$(gh_tmpdir)/hog
  nvcc -O2 -o "$hog" "$here/hog.cu" >"$cl/hog-build.log" 2>&1
  check $? "hog built with nvcc" "$(tail -3 "$cl/hog-build.log")"
  chmod a+rx "$hog" "$(dirname "$hog")"
fi
# hog_start LEAVE_MB: hold all but LEAVE_MB of the GPU (a dry run holds
# nothing); sets hogpid and rep (the hog's report).  Not to be called in $( ).
hog_start() {
  local ready="$cl/hog.ready" i
  rm -f "$ready"
  if [ -n "$hog" ]; then
    "$hog" "$1" 600 "$ready" >"$cl/hog.err" 2>&1 </dev/null &
    hogpid=$!
  else
    echo "held=0 free=dry-run" >"$ready"
    sleep 600 >/dev/null 2>&1 </dev/null &
    hogpid=$!
  fi
  for i in $(seq 1 300); do [ -s "$ready" ] && break; kill -0 $hogpid 2>/dev/null || break; sleep 0.1; done
  rep=$(cat "$ready" 2>/dev/null || cat "$cl/hog.err")
}
# hog_stop: end the hog and wait (at most 15 s) until the driver has taken
# its memory back (the GPU's used memory back at gpu_base)
hog_stop() {
  [ -n "$hogpid" ] && { kill "$hogpid" 2>/dev/null; wait "$hogpid" 2>/dev/null; }
  hogpid=""
  [ $real = 1 ] && [ -n "${gpu_base:-}" ] && gpu_settle "$gpu_base" >/dev/null
  return 0
}

P >"$cl/setupB.log" 2>&1 <<'SQL' || { cat "$cl/setupB.log"; nok "setup B"; }
-- a big inner side (its table does not fit in a few MiB), a small one, an outer side
CREATE TABLE ex_big AS SELECT g::int8 AS k, g % 7 AS v FROM generate_series(1, 4000000) g;
CREATE TABLE ex_small AS SELECT g::int8 * 7 AS k, g % 5 AS v FROM generate_series(1, 2000) g;
CREATE TABLE ex_probe AS SELECT (g * 13)::int8 AS k, g AS id FROM generate_series(1, 200000) g;
ANALYZE;
CREATE TABLE ex_expect (name text PRIMARY KEY, query text, val text);
INSERT INTO ex_expect (name, query) VALUES
 ('join_big', 'SELECT (count(*), sum(b.v), sum(p.id))::text FROM ex_probe p JOIN ex_big b ON p.k = b.k'),
 ('left_small', 'SELECT (count(*), sum(s.v), sum(p.id))::text FROM ex_probe p LEFT JOIN ex_small s ON p.k = s.k'),
 ('agg', $q$SELECT sum(hashtext(t::text))::text FROM gpuhash_aggregate('SELECT k % 1000, count(*), sum(v), max(k) FROM ex_big GROUP BY 1') AS t(g int8, n bigint, s bigint, m int8)$q$);
SET gpuhash.enabled = off;
UPDATE ex_expect SET val = (SELECT (count(*), sum(b.v), sum(p.id))::text FROM ex_probe p JOIN ex_big b ON p.k = b.k) WHERE name = 'join_big';
UPDATE ex_expect SET val = (SELECT (count(*), sum(s.v), sum(p.id))::text FROM ex_probe p LEFT JOIN ex_small s ON p.k = s.k) WHERE name = 'left_small';
UPDATE ex_expect SET val = (SELECT sum(hashtext(t::text))::text FROM (SELECT k % 1000, count(*), sum(v), max(k) FROM ex_big GROUP BY 1) t(g, n, s, m)) WHERE name = 'agg';
RESET gpuhash.enabled;
-- ex_try(name): 'same' (native's value), 'DIFFERENT', or the SQLSTATE of
-- the ERROR, then the seconds it took; the ERROR is caught in a
-- subtransaction, whose abort frees what the query held
-- every ERROR ex_try caught, with its message and detail
CREATE TABLE ex_errors (at timestamptz DEFAULT clock_timestamp(), pid int DEFAULT pg_backend_pid(), name text, state text, msg text, detail text);
CREATE FUNCTION ex_try(name text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE qq text; e text; r text; m text; d text; t0 timestamptz := clock_timestamp();
BEGIN
  SELECT x.query, x.val INTO qq, e FROM ex_expect x WHERE x.name = ex_try.name;
  PERFORM set_config('gpuhash.force_join', 'on', true);
  BEGIN
    EXECUTE qq INTO r;
    r := CASE WHEN r = e THEN 'same' ELSE 'DIFFERENT' END;
  EXCEPTION WHEN OTHERS THEN
    r := SQLSTATE;
    GET STACKED DIAGNOSTICS m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL;
    INSERT INTO ex_errors (name, state, msg, detail) VALUES (ex_try.name, r, m, d);
  END;
  RETURN r || ' ' || round(extract(epoch FROM clock_timestamp() - t0)::numeric, 2) || 's';
END $$;
CREATE FUNCTION ex_all() RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(name || ':' || ex_try(name), ', ' ORDER BY name) FROM ex_expect
$$;
CREATE FUNCTION ex_free() RETURNS text LANGUAGE sql AS $$
  SELECT coalesce((SELECT free_mb FROM gpuhash_devices() WHERE ordinal = 0)::text, 'none')
$$;
-- a session waits here until the shell says go (gate = name)
CREATE TABLE ex_gate (name text);
CREATE FUNCTION ex_wait(g text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1..3000 LOOP
    PERFORM pg_stat_clear_snapshot();
    IF EXISTS (SELECT 1 FROM ex_gate WHERE name = g) THEN RETURN 'go'; END IF;
    PERFORM pg_sleep(0.1);
  END LOOP;
  RETURN 'timeout';
END $$;
SQL
gate() { q "INSERT INTO ex_gate VALUES ('$1')" >/dev/null; }
# wait_line FILE PATTERN: wait (at most 120 s) until FILE has a line matching PATTERN
wait_line() { local i; for i in $(seq 1 1200); do grep -q "$2" "$1" && return 0; sleep 0.1; done; return 1; }
# outcome_ok TEXT: every "name:RESULT Ns" in TEXT is same or 53200
outcome_ok() { ! echo "$1" | grep -oE '[a-z_]+:[A-Z0-9a-z]+ ' | grep -vqE ':(same|53200) $'; }
[ $real = 1 ] && gpu_base=$(gpu_used) && diag "GPU used memory with no session holding a context: $gpu_base MiB"

# B1: a session that has its context, then the device fills up
out=$(tmpf b1.out)
gh_as_pg psql -X -At -d rbg >"$out" 2>&1 <<'SQL' &
\set VERBOSITY verbose
SELECT 'warm=' || ex_all();
SELECT 'warm_active=' || gpuhash_active_device();
SELECT 'free0=' || ex_free();
SELECT 'ready=1';
SELECT 'gate=' || ex_wait('b1_hog');
SET client_min_messages = debug1;
SELECT 'full1=' || ex_all();
SELECT 'full2=' || ex_all();
SELECT 'full3=' || ex_all();
RESET client_min_messages;
SET gpuhash.force_join = on;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM ex_probe p JOIN ex_big b ON p.k = b.k;
SELECT 'devmem_full=' || gpuhash_device_memory();
SELECT 'done_full=1';
SELECT 'gate=' || ex_wait('b1_free');
SELECT 'again=' || ex_all();
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM ex_probe p JOIN ex_big b ON p.k = b.k;
SELECT 'devmem=' || gpuhash_device_memory();
SELECT 'free1=' || ex_free();
SQL
bpid=$!
if wait_line "$out" '^ready=1'; then
  hog_start 48; diag "B1 hog (leave 48 MiB): $rep"
  gate b1_hog
  wait_line "$out" '^done_full=1'
  hog_stop
  gate b1_free
fi
wait $bpid
r1=$(grep -E '^full[123]=' "$out")
nfb=$(grep -c 'no room on the GPU' "$out")
[ -n "$r1" ] && outcome_ok "$r1" && grep -q '^devmem_full=0' "$out" && grep -q '^warm_active=gpu\|^warm_active=cpu' "$out"
check $? "B1 device full, session with its context: every query native's rows or a clean 53200, nothing held ($(echo "$r1" | tr '\n' ' '))" "$(grep -E 'ERROR|warm' "$out" | head -4)"
diag "B1: $nfb 'no room on the GPU; using the CPU twin' fallbacks; EXPLAIN ANALYZE under the hog: $(grep -m1 -E '^ +Device:' "$out" | tr -s ' ')"
if [ $real = 1 ]; then
  [ "$nfb" -ge 3 ] && [ "$(grep -E '^ +Device:' "$out" | head -1 | tr -d ' ')" = "Device:cpu" ]
  check $? "B1: the big join fell back to the CPU twin (EXPLAIN shows Device: cpu) while the GPU was full"
  # regression test: a failed cudaMalloc left the runtime's last error set,
  # and the next kernel launch check reported it as that kernel's
  # out-of-memory (left_small, whose table fits in the 48 MiB left, failed
  # with 53200 right after another query's allocation had failed)
  [ "$(echo "$r1" | grep -o 'left_small:[A-Z0-9a-z]*' | sort -u)" = "left_small:same" ]
  check $? "B1: a join whose table fits in what is left runs with native's rows after other queries' allocations failed (no stale CUDA error)" "$(echo "$r1" | grep -o 'left_small:[^,]*' | tr '\n' ' ')"
fi
f0=$(sed -n 's/^free0=//p' "$out"); f1=$(sed -n 's/^free1=//p' "$out")
outcome_ok "$(grep '^again=' "$out")" && ! grep -q '^again=.*53200' "$out" && grep -q '^devmem=0' "$out" &&
  { [ "$f0" = none ] || { [ -n "$f1" ] && [ "$f1" != none ] && [ $((f0 - f1)) -le $GPU_TOL_MB ]; }; } &&
  { [ $real = 0 ] || [ "$(grep -E '^ +Device:' "$out" | tail -1 | tr -d ' ')" = "Device:gpu" ]; }
check $? "B1 memory back: the same session runs on the GPU again with native's rows, device free memory back at its baseline ($f0 -> $f1 MiB)" "$(grep -E '^again|ERROR' "$out" | head -3)"

# B2: sessions without a context while the device is full (gpu and auto)
out=$(tmpf b2.out); out2=$(tmpf b2auto.out)
hog_start 48; diag "B2 hog (leave 48 MiB): $rep"
for s in $device auto; do
  f=$out; [ $s = auto ] && f=$out2
  gh_as_pg psql -X -At -d rbg >"$f" 2>&1 <<SQL &
\\set VERBOSITY verbose
SET gpuhash.device = $s;
SELECT 'full=' || ex_all();
SELECT 'devmem_full=' || gpuhash_device_memory();
SELECT 'done_full=1';
SELECT 'gate=' || ex_wait('b2_free');
SELECT 'again=' || ex_all();
SELECT 'active=' || gpuhash_active_device();
SELECT 'devmem=' || gpuhash_device_memory();
SQL
  [ $s = auto ] && b2pid_auto=$! || b2pid_dev=$!
done
wait_line "$out" '^done_full=1'; wait_line "$out2" '^done_full=1'
# more new sessions, two at a time (device gpu and auto), while the GPU is
# still full: context creation failed once as 0A000 ("no usable GPU") here
# instead of 53200 (cudaErrorDevicesUnavailable, now reported as out of
# memory); each failure's CUDA error is kept in ex_errors
nextra=${GPUHASH_B2_EXTRA:-8}
for i in $(seq 1 $((nextra / 2))); do
  xpids=""
  for s in $device auto; do
    f=$(tmpf "b2x.$i.$s.out")
    gh_as_pg psql -X -At -d rbg -c "SET gpuhash.device = $s" -c "SELECT 'full=' || ex_all()" \
      -c "SELECT 'devmem=' || gpuhash_device_memory()" >"$f" 2>&1 &
    xpids="$xpids $!"
  done
  wait $xpids
done
hog_stop
gate b2_free
wait $b2pid_dev $b2pid_auto
for s in $device auto; do
  f=$out; [ $s = auto ] && f=$out2
  r=$(sed -n 's/^full=//p' "$f")
  [ -n "$r" ] && outcome_ok "$r, " && grep -q '^devmem_full=0' "$f"
  check $? "B2 device full, new session, device = $s: every query native's rows or a clean 53200, nothing held ($r)" "$(grep -E 'ERROR|FATAL' "$f" | head -3)"
  grep -m1 -A1 'ERROR:  53200' "$f" | sed "s/^/# B2 $s: /"
  a=$(sed -n 's/^again=//p' "$f")
  [ -n "$a" ] && outcome_ok "$a, " && ! echo "$a" | grep -q 53200 && grep -q "^active=$device" "$f" && grep -q '^devmem=0' "$f"
  check $? "B2 memory back, device = $s: the same session creates its context and runs on device $device ($a)" "$(grep -E '^active|ERROR' "$f" | head -3)"
done
if [ "$nextra" -gt 0 ]; then
  rx=$(cat "$cl"/b2x.*.out 2>/dev/null | sed -n 's/^full=//p')
  nx=$(echo "$rx" | grep -oE '[a-z_]+:[A-Z0-9a-z]+ ' | wc -l)
  [ "$nx" = $(( nextra / 2 * 2 * 3 )) ] && outcome_ok "$(echo "$rx" | sed 's/$/, /' | tr '\n' ' ')" &&
    [ "$(cat "$cl"/b2x.*.out | grep -c '^devmem=0$')" = $(( nextra / 2 * 2 )) ]
  check $? "B2 device full, $((nextra / 2 * 2)) more new sessions (device $device and auto, two at a time): every query native's rows or a clean 53200, nothing held ($(echo "$rx" | grep -oE ':[A-Z0-9a-z]+ ' | sort | uniq -c | awk '{ printf "%s%s x %s", (NR > 1 ? ", " : ""), $1, substr($2, 2) }'))" "$(cat "$cl"/b2x.*.out | grep -vE '^(full|devmem)=' | sort | uniq -c | head -5)"
fi
! crashed "$log"; check $? "B: no backend crashed"
diag "B1/B2 ERRORs caught: $(q "SELECT string_agg(n || ' x ' || name || ' ' || state || ': ' || msg || coalesce(' (' || detail || ')', ''), '; ') FROM (SELECT count(*) AS n, name, state, msg, detail FROM ex_errors GROUP BY 2, 3, 4, 5) e")"
q "TRUNCATE ex_errors" >/dev/null

# B3: many concurrent sessions with the GPU shrunk to a few contexts' worth
nsess=${GPUHASH_B3_SESSIONS:-24}
[ $real = 1 ] && gpu_base=$(gpu_settle "$gpu_base")
hog_start ${GPUHASH_B3_LEAVE_MB:-6144}; diag "B3 hog (leave ${GPUHASH_B3_LEAVE_MB:-6144} MiB): $rep"
[ $real = 1 ] && hog_used=$(gpu_used)
t0=$SECONDS
pids=""
for i in $(seq 1 $nsess); do
  f=$(tmpf "b3.$i.out")
  gh_as_pg timeout 300 psql -X -At -d rbg -c "SET statement_timeout = '120s'" -c "SELECT 'r1=' || ex_all()" -c "SELECT 'r2=' || ex_all()" \
    -c "SELECT 'devmem=' || gpuhash_device_memory()" >"$f" 2>&1 &
  pids="$pids $!"
done
hung=0; for p in $pids; do wait $p || hung=$((hung + 1)); done
secs=$((SECONDS - t0))
allr=$(cat "$cl"/b3.*.out | grep -E '^r[12]=' | sed 's/^r[12]=//')
nq=$(echo "$allr" | grep -oE '[a-z_]+:[A-Z0-9a-z]+ ' | wc -l)
nsame=$(echo "$allr" | grep -oE ':same ' | wc -l)
noom=$(echo "$allr" | grep -oE ':53200 ' | wc -l)
nfin=$(cat "$cl"/b3.*.out | grep -c '^devmem=0')
diag "B3: $nsess sessions x 2 x 3 queries in $secs s: $nq results, $nsame native's rows, $noom clean 53200, $((nq - nsame - noom)) other; $hung psql exits non-zero"
[ "$nq" = $((nsess * 6)) ] && outcome_ok "$(echo "$allr" | tr '\n' ' ')" && [ "$nfin" = "$nsess" ] && [ $hung = 0 ]
check $? "B3 $nsess concurrent sessions on a GPU shrunk by other work: every query native's rows or a clean 53200, none hung (all done in $secs s), nothing held" "$(cat "$cl"/b3.*.out | grep -vE '^(r[12]|devmem)=' | sort | uniq -c | head -5)"
if [ $real = 1 ]; then
  u=$(gpu_settle "$hog_used"); st=$?
  check $st "B3: with every session gone the GPU's used memory is back at the hog's level ($hog_used -> $u MiB)"
fi
hog_stop
if [ $real = 1 ]; then
  u=$(gpu_settle "$gpu_base"); st=$?
  check $st "B: with the hog gone the GPU's used memory is back at its baseline ($gpu_base -> $u MiB)"
fi
! crashed "$log" && [ "$(q "SELECT 1")" = 1 ]; check $? "B3: no backend crashed, the server answers"
diag "B3 ERRORs caught: $(q "SELECT string_agg(n || ' x ' || name || ' ' || state || ': ' || msg || coalesce(' (' || detail || ')', ''), '; ') FROM (SELECT count(*) AS n, name, state, msg, detail FROM ex_errors GROUP BY 2, 3, 4, 5) e")"

# ---------------------------------------------------------------------------
# C. statement_timeout during the device copies of a big build
# ---------------------------------------------------------------------------
P >"$cl/setupC.log" 2>&1 <<'SQL' || { cat "$cl/setupC.log"; nok "setup C"; }
CREATE TABLE cc_big AS SELECT g::int8 AS k FROM generate_series(1, 8000000) g;
CREATE TABLE cc_tiny AS SELECT (g * 1000)::int8 AS k FROM generate_series(1, 50) g;
ANALYZE cc_big, cc_tiny;
SQL
CQ="SELECT count(*) FROM cc_tiny t JOIN cc_big b ON t.k = b.k"
nsweep=${GPUHASH_SWEEP:-16}
sf="$cl/sweep.sql"
{
  echo "SET gpuhash.force_join = on;"
  echo "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $CQ;"
  echo "SELECT extract(epoch FROM clock_timestamp()) AS t0 \\gset"
  echo "$CQ;"
  echo "SELECT round((extract(epoch FROM clock_timestamp()) - :t0) * 1000) AS dur \\gset"
  echo "SELECT 'dur=' || :dur;"
  echo "SELECT 'free0=' || ex_free();"
  # the device phase is the end of the build, i.e. the last tens of ms of the
  # query (the probe of 50 rows is nothing): sweep the last 240 ms
  for i in $(seq 0 $((nsweep - 1))); do
    echo "SELECT greatest(:dur - $i * 240 / $nsweep, 20)::int AS to \\gset"
    echo "SELECT set_config('statement_timeout', :'to', false) \\g /dev/null"
    echo "SELECT extract(epoch FROM clock_timestamp()) AS t0 \\gset"
    echo "$CQ \\g /dev/null"
    echo "\\set st :SQLSTATE"
    echo "\\set t1 \`date +%s.%N\`"
    echo "RESET statement_timeout;"
    echo "SELECT 'res $i ' || :to || ' ' || round((:t1 - :t0) * 1000) || ' ' || gpuhash_device_memory() || ' ' || :'st';"
  done
  echo "SELECT 'free1=' || ex_free();"
  echo "SELECT 'check=' || ex_all();"
  # selftest: 1 GiB through pinned host memory, timeouts at a quarter, half,
  # three quarters of its duration
  echo "SELECT extract(epoch FROM clock_timestamp()) AS t0 \\gset"
  echo "SELECT gpuhash_device_selftest(1073741824) \\g /dev/null"
  echo "SELECT round((extract(epoch FROM clock_timestamp()) - :t0) * 1000) AS sdur \\gset"
  echo "SELECT 'sdur=' || :sdur;"
  for i in 1 2 3; do
    echo "SELECT greatest(:sdur * $i / 4, 20)::int AS to \\gset"
    echo "SELECT set_config('statement_timeout', :'to', false) \\g /dev/null"
    echo "SELECT extract(epoch FROM clock_timestamp()) AS t0 \\gset"
    echo "SELECT gpuhash_device_selftest(1073741824) \\g /dev/null"
    echo "\\set st :SQLSTATE"
    echo "\\set t1 \`date +%s.%N\`"
    echo "RESET statement_timeout;"
    echo "SELECT 'sres $i ' || :to || ' ' || round((:t1 - :t0) * 1000) || ' ' || gpuhash_device_memory() || ' ' || :'st';"
  done
  echo "SELECT 'free2=' || ex_free();"
} >"$sf"; chmod 644 "$sf"
out=$(tmpf sweep.out)
gh_as_pg psql -X -At -d rbg -f "$sf" >"$out" 2>&1
cp "$out" "$logdir/sweep.out"
diag "C: $(grep -E '^ +(Device|Build Time|Device Time|Inner Rows):' "$out" | tr -s ' ' | tr '\n' ';')"
# per run: "res I TIMEOUT_MS ELAPSED_MS DEVMEM SQLSTATE" (00000: finished first)
res=$(grep '^res ' "$out" | sed 's/ 00000$/ finished/')
echo "$res" >"$logdir/sweep.txt"
nrun=$(echo "$res" | grep -c '^res'); ncanc=$(echo "$res" | grep -c ' 57014$')
worst=$(echo "$res" | awk '$6 == "57014" { d = ($4 - $3) / 1000; if (d > w) w = d } END { printf "%.3f", w + 0 }')
bad=$(echo "$res" | awk -v b=$CANCEL_BOUND '$5 != 0 || ($6 != "57014" && $6 != "finished") || ($6 == "57014" && ($4 - $3) / 1000 > b)' | wc -l)
diag "C: $(sed -n 's/^dur=//p' "$out") ms uninterrupted; $nrun runs with timeouts over its last 240 ms: $ncanc canceled (57014), $((nrun - ncanc)) finished first; slowest stop after the timeout: $worst s"
[ "$nrun" = "$nsweep" ] && [ "$ncanc" -ge 1 ] && [ "$bad" = 0 ]
check $? "C: statement_timeout across the device phase of an 8M-row build: every run stops within $CANCEL_BOUND s of its timeout (worst $worst s), device memory 0 after each" "$(echo "$res" | head -20)"
f0=$(sed -n 's/^free0=//p' "$out"); f1=$(sed -n 's/^free1=//p' "$out"); f2=$(sed -n 's/^free2=//p' "$out")
outcome_ok "$(sed -n 's/^check=//p' "$out"), " && [ -n "$(sed -n 's/^check=//p' "$out")" ] &&
  { [ "$f0" = none ] || { [ -n "$f1" ] && [ $((f0 - f1)) -le $GPU_TOL_MB ]; }; } && ! crashed "$log"
check $? "C: nothing lost: the same session runs checked queries, device free memory back at its baseline ($f0 -> $f1 MiB)" "$(grep -E '^check|FATAL|server closed' "$out" | head -3)"
sres=$(grep '^sres ' "$out" | sed 's/ 00000$/ finished/')
diag "C selftest (1 GiB): $(sed -n 's/^sdur=//p' "$out") ms uninterrupted; runs (i timeout_ms elapsed_ms devmem outcome): $(echo "$sres" | tr '\n' ';')"
sbad=$(echo "$sres" | awk -v b=$CANCEL_BOUND '$5 != 0 || ($6 != "57014" && $6 != "finished") || ($6 == "57014" && ($4 - $3) / 1000 > b)' | wc -l)
[ "$(echo "$sres" | grep -c .)" = 3 ] && [ "$sbad" = 0 ] && { [ "$f0" = none ] || [ $((f0 - f2)) -le $GPU_TOL_MB ]; }
check $? "C: statement_timeout during gpuhash_device_selftest(1 GiB): stops within $CANCEL_BOUND s, nothing held ($f0 -> $f2 MiB free)" "$sres"

! crashed "$log" && [ "$(q "SELECT 1")" = 1 ]; check $? "the server ran parts B and C without a crash or restart"
echo "1..$n"
echo "# logs: $logdir"
[ $nfail = 0 ]
