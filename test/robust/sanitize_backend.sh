#!/bin/bash
# test/robust/sanitize_backend.sh [--no-sanitizer] - a backend's GPU work
# under compute-sanitizer (issue 6).
#
# compute-sanitizer follows exec'd children, not forks: with the postmaster
# under it, the backends (forks that create their CUDA context after the
# fork) ran unchecked (H200, CUDA 13.0, 2026-11-22).  So the backend runs
# alone: PostgreSQL's single-user mode (postgres --single, one process, no
# fork) reads test/robust/sanitize_backend.sql from standard input under
# compute-sanitizer, gpuhash preloaded (-c shared_preload_libraries=gpuhash)
# and gpuhash.device = gpu.  It covers the kernels and CUDA calls of cuda/*.cu
# as a backend drives them: GpuHashJoin of every join type with int and text
# keys, one and many probe batches, the probe shapes; gpuhash_aggregate with
# device and host-checked keys, every value type, few and many groups and a
# growing table; an allocation failing at each site in turn; an ERROR from an
# equality function in the middle of a probe; a cursor rolled back to a
# savepoint; statement timeouts during device copies and a join; the
# selftest.  The tables and functions are made first in a single-user run
# of their own (test/robust/sanitize_setup.sql), not under the sanitizer.
#
# The tools: GPUHASH_SANITIZE_TOOLS (default "memcheck", run with
# --leak-check full; racecheck and initcheck may be added), each a run of
# the whole SQL file.  GPUHASH_SANITIZE_DEADLINE (epoch seconds): skip a tool
# that would not end before it, judging by the one before.
#
# Coverage is checked, not assumed: the backend must find the sanitizer's
# libraries in its own /proc/self/maps and run on device gpu.  With
# --no-sanitizer or GPUHASH_TEST_DEVICE=cpu (a host without a GPU) the same
# SQL runs in single-user mode without the sanitizer: a dry run of the
# script and the checks.  Prints TAP; exit status 0 when every test passed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
cd "$GPUHASH_ROOT"
device=${GPUHASH_TEST_DEVICE:-gpu}
case $device in cpu|gpu) ;; *) echo "GPUHASH_TEST_DEVICE must be cpu or gpu" >&2; exit 2 ;; esac
use_cs=1
[ "$device" = cpu ] && use_cs=0
for a in "$@"; do
  case $a in --no-sanitizer) use_cs=0 ;; *) echo "usage: $0 [--no-sanitizer]" >&2; exit 2 ;; esac
done
cs=$(command -v compute-sanitizer 2>/dev/null || echo /usr/local/cuda/bin/compute-sanitizer)
if [ $use_cs = 1 ] && [ ! -x "$cs" ]; then echo "1..0 # SKIP compute-sanitizer not found"; exit 0; fi
tools=${GPUHASH_SANITIZE_TOOLS:-memcheck}
[ $use_cs = 0 ] && tools=none
logdir=${GPUHASH_TEST_LOGDIR:-$(mktemp -d /tmp/gpuhash-cs.XXXXXX)}
mkdir -p "$logdir"

n=0 nfail=0
ok()  { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); nfail=$((nfail + 1)); echo "not ok $n - $*"; }
check() { if [ "$1" = 0 ]; then ok "$2"; else nok "$2"; [ -n "${3:-}" ] && echo "$3" | sed 's/^/# /'; fi; }
diag() { echo "$*" | sed 's/^/# /'; }

cl=$(gh_tmpdir); bin=$(gh_pg_bindir)
trap 'cp "$cl"/*.out "$cl"/*.err "$cl"/cs-*.log "$logdir/" 2>/dev/null; rm -rf "$cl"' EXIT
trap 'exit 143' TERM INT
gh_cluster_init "$cl" "$(gh_free_port)" "gpuhash.device = $device
max_parallel_workers_per_gather = 0
autovacuum = off" "$bin" || { echo "1..1"; echo "not ok 1 - initdb"; exit 1; }
cat "$here/functions.sql" "$here/sanitize_setup.sql" >"$cl/sanitize_setup.sql"
cp "$here/sanitize_backend.sql" "$cl/"; chmod 644 "$cl"/*.sql

# single NAME SQLFILE [TOOL]: one single-user backend reading SQLFILE, under
# compute-sanitizer --tool TOOL when given; NAME.out (rows), NAME.err (the
# server's messages), cs-NAME.log (the sanitizer's report)
single() {
  local name=$1 sql=$2 tool=${3:-} pre=()
  case $tool in
    "") ;;
    memcheck) pre=("$cs" --tool memcheck --leak-check full --print-limit 200 --log-file "$cl/cs-$name.log") ;;
    *) pre=("$cs" --tool "$tool" --print-limit 200 --log-file "$cl/cs-$name.log") ;;
  esac
  gh_as_pg "${pre[@]}" "$bin/postgres" --single -j -D "$cl/data" \
    -c shared_preload_libraries=gpuhash -c gpuhash.device="$device" -c max_parallel_workers_per_gather=0 \
    postgres <"$sql" >"$cl/$name.out" 2>"$cl/$name.err"
}
# val NAME FILE: the value of check NAME (the row "r = NAME=VALUE")
val() { sed -n "s/^[[:space:]]*1: r = \"$1=\(.*\)\"[[:space:]]*(typeid.*/\1/p" "$2" | head -1; }

single setup "$cl/sanitize_setup.sql"; rc=$?
bad=$(grep -E 'ERROR|FATAL|PANIC|WARNING' "$cl/setup.err" | head -5)
[ $rc = 0 ] && [ -z "$bad" ]; check $? "setup in a single-user backend (tables, functions)" "$bad"

nchecks=$(grep -c ' AS r' "$here/sanitize_backend.sql")
prev=0
for tool in $tools; do
  label=$tool; [ "$tool" = none ] && label="no sanitizer"
  if [ -n "${GPUHASH_SANITIZE_DEADLINE:-}" ] && [ $prev -gt 0 ] &&
     [ $(( $(date +%s) + prev * 3 / 2 )) -gt "$GPUHASH_SANITIZE_DEADLINE" ]; then
    ok "$label: the GPU work in a single-user backend # SKIP not enough time left (the last tool took $prev s)"
    continue
  fi
  name=$tool
  t0=$SECONDS
  if [ "$tool" = none ]; then single "$name" "$cl/sanitize_backend.sql"; else single "$name" "$cl/sanitize_backend.sql" "$tool"; fi
  rc=$?
  prev=$((SECONDS - t0))
  out="$cl/$name.out" err="$cl/$name.err"
  diag "$label: $prev s, exit status $rc"

  # coverage: the backend ran on the device, under the sanitizer
  act=$(val active "$out"); maps=$(val maps "$out")
  if [ "$tool" = none ]; then
    [ "$act" = "$device" ]; check $? "$label: the single-user backend ran its GPU operators on device $device (${act:-no answer})" "$(tail -5 "$err")"
  else
    [ "$act" = gpu ] && [ "${maps:-0}" -gt 0 ] && grep -qE '(ERROR|RACECHECK) SUMMARY' "$cl/cs-$name.log" 2>/dev/null
    check $? "$label: the backend ran on the GPU under compute-sanitizer (device ${act:-?}, $maps sanitizer mappings in its /proc/self/maps, a summary in the sanitizer's log)" "$(tail -5 "$err"; head -5 "$cl/cs-$name.log" 2>/dev/null)"
  fi
  diag "$label: devices=$(val devices "$out"); selftest=$(val selftest "$out"); explain: $(val explain "$out")"
  ex=$(val explain "$out")
  [[ "$ex" == *"Device: $device"* ]] && [ "$(echo "$ex" | grep -oE 'Probe Chunks: [0-9]+' | grep -oE '[0-9]+$' | sort -n | tail -1)" -gt 1 ] 2>/dev/null
  check $? "$label: EXPLAIN ANALYZE shows a GpuHashJoin on device $device probing in several chunks ($ex)"

  # every check answered, each with native's rows
  got=$(grep -c '^[[:space:]]*1: r = "' "$out")
  nsame=0 wrong=""
  for k in inner_int group1_full group32_full linear_left_text memlimit agg_int agg_float agg_numeric agg_text_keys \
           agg_null_keys agg_many_groups agg_growing agg_growing_text raise big; do
    v=$(val "$k" "$out")
    if [[ "$v" == same* ]]; then nsame=$((nsame + 1)); else wrong="$wrong $k=${v:-missing};"; fi
  done
  for k in batches_1 batches_many; do
    v=$(sed -n "s/^[[:space:]]*1: r = \"$k:\(.*\)\"[[:space:]]*(typeid.*/\1/p" "$out")
    nj=$(echo "$v" | grep -oE '[a-z_0-9]+:[^ ]+' | wc -l)
    nbad=$(echo "$v" | grep -oE '[a-z_0-9]+:[^ ]+' | grep -vc ':same$')
    if [ "$nj" = 15 ] && [ "$nbad" = 0 ]; then nsame=$((nsame + 15)); else wrong="$wrong $k: ${v:-missing};"; fi
  done
  [ "$got" = "$nchecks" ] && [ -z "$wrong" ] && [ "$(val raise "$out" | cut -d' ' -f2)" = RB013 ]
  check $? "$label: $got of $nchecks checks answered; $nsame queries (15 join shapes x 2 batch sizes, probe shapes, a table over the memory limit, 8 gpuhash_aggregate, an equality function raising RB013 mid-probe, a 2M-row build) with native's rows or native's ERROR" "$wrong"
  wrong=""
  for k in inject_full inject_text inject_3way inject_agg inject_agg_text; do
    v=$(val "$k" "$out"); [[ "$v" == clean* ]] || wrong="$wrong $k=${v:-missing};"
    diag "$label: $k: $v"
  done
  [ -z "$wrong" ]; check $? "$label: an allocation failing at each site in turn (5 queries x N = 1..20): every N a clean 53200 or native's rows, nothing held" "$wrong"
  [ "$(val cursor_held "$out")" = true ] && [ "$(val cursor_rolled_back "$out")" = 0 ] &&
    [ "$(val after_timeouts "$out")" = 0 ] && [ "$(val devmem "$out")" = 0 ] && [ "$(val done "$out")" = 1 ]
  check $? "$label: device memory freed by ROLLBACK TO a savepoint holding a half-read join cursor, after the statement timeouts, at the end" \
    "cursor_held=$(val cursor_held "$out") cursor_rolled_back=$(val cursor_rolled_back "$out") after_timeouts=$(val after_timeouts "$out") devmem=$(val devmem "$out") done=$(val done "$out")"
  ntimed=$(grep -c 'timed = ' "$out"); ncanc=$(grep -c 'canceling statement due to statement timeout' "$err")
  diag "$label: 4 statements under statement_timeout: $ncanc canceled, $ntimed finished"
  bad=$(grep -E 'ERROR|FATAL|PANIC|WARNING|TRAP' "$err" | grep -v 'canceling statement due to statement timeout' | head -5)
  [ $rc = 0 ] && [ -z "$bad" ] && [ $((ntimed + ncanc)) = 4 ]
  check $? "$label: the backend exited normally; no ERROR besides the statement timeouts, no WARNING (such as a device memory leak), no crash" "$bad"

  # the sanitizer's verdict
  if [ "$tool" != none ]; then
    log="$cl/cs-$name.log"
    summ=$(grep -E 'ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY' "$log" | sed 's/^========= //' | tr '\n' ';')
    nerr=$(grep -E 'ERROR SUMMARY' "$log" | grep -oE '[0-9]+ error' | awk '{ s += $1 } END { print s + 0 }')
    nleak=$(grep -E 'LEAK SUMMARY' "$log" | grep -oE '[0-9]+ bytes leaked' | awk '{ s += $1 } END { print s + 0 }')
    nhaz=$(grep -E 'RACECHECK SUMMARY' "$log" | grep -oE '\([0-9]+ error' | tr -d '(' | awk '{ s += $1 } END { print s + 0 }')
    nrep=$(grep -cE '^========= +(Invalid|Program hit|Leaked|Malloc/Free|Uninitialized|Race|Error|Fatal|Out-of-range|Misaligned|Cuda API error|Device heap|Host API memory access)' "$log")
    [ -n "$summ" ] && [ "$nerr" = 0 ] && [ "$nleak" = 0 ] && [ "$nhaz" = 0 ]
    check $? "$label: no error reported by compute-sanitizer ($summ $nrep report lines)" "$(grep -E '^========= ' "$log" | grep -vE 'SUMMARY|COMPUTE-SANITIZER' | head -20)"
  fi
done
echo "1..$n"
echo "# logs: $logdir"
[ $nfail = 0 ]
