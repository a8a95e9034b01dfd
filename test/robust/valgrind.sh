#!/bin/bash
# test/robust/valgrind.sh [SUITE...] - pg_regress suites against a server
# run under valgrind memcheck (every backend: --trace-children), gpuhash
# preloaded, gpuhash.device = cpu.  Debian's PostgreSQL is not built with
# USE_VALGRIND, so memcheck sees malloc-level errors (invalid reads and
# writes, uninitialised values used in branches or system calls) and the
# CPU twin's malloc'd "device" buffers, not palloc chunk overruns inside a
# block.  Default suites: setup join_setup join_keys join_exec aggregate
# aggregate_keys (aggregate_keys needs aggregate's helpers).
# Prints TAP; errors other than the suppressed PostgreSQL-internal ones fail.
# Slow: expect 5-10 minutes for the default suites on 2 cores.
# GPUHASH_VALGRIND_CONF: more postgresql.conf lines, e.g. "gpuhash.gpu_service = on"
# (the GPU service's process runs under valgrind too).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
cd "$GPUHASH_ROOT"
command -v valgrind >/dev/null || { echo "1..0 # SKIP valgrind not installed"; exit 0; }
suites=${*:-setup join_setup join_keys join_exec aggregate aggregate_keys}
logdir=${GPUHASH_TEST_LOGDIR:-$(mktemp -d /tmp/gpuhash-vg.XXXXXX)}
mkdir -p "$logdir"
cl=$(gh_tmpdir); port=$(gh_free_port); bin=$(gh_pg_bindir)
trap 'gh_as_pg "$bin/pg_ctl" -D "$cl/data" -m immediate -w stop >/dev/null 2>&1; cp "$cl"/vg.*.log "$logdir/" 2>/dev/null; rm -rf "$cl"' EXIT
gh_cluster_init "$cl" "$port" "gpuhash.device = cpu
gpuhash_test.gpu = off
max_parallel_workers_per_gather = 0
autovacuum = off
${GPUHASH_VALGRIND_CONF:-}" "$bin" || exit 1
# PostgreSQL's own known valgrind reports: padding bytes written to files
# and sockets, and regexp.c's cache shuffle (a memmove the compiler turned
# into __memcpy_chk)
cat >"$cl/pg.supp" <<'SUPP'
{
   pg_padding_in_write
   Memcheck:Param
   write(buf)
   fun:*
   ...
}
{
   pg_padding_in_sendto
   Memcheck:Param
   sendto(msg)
   fun:*
   ...
}
{
   pg_padding_in_pwrite
   Memcheck:Param
   pwrite64(buf)
   fun:*
   ...
}
{
   pg_regex_cache_memmove_as_memcpy
   Memcheck:Overlap
   fun:__memcpy_chk
   fun:RE_compile_and_cache
}
SUPP
chmod a+r "$cl/pg.supp"
gh_as_pg bash -c "cd $cl && nohup valgrind --quiet --trace-children=yes --track-origins=no --leak-check=no \
  --suppressions=$cl/pg.supp --error-limit=no --log-file=$cl/vg.%p.log \
  $bin/postgres -D $cl/data >$cl/server.log 2>&1 &"
for i in $(seq 1 240); do gh_as_pg "$bin/pg_isready" -h "$cl" -p "$port" -q && break; sleep 1; done
gh_as_pg "$bin/pg_isready" -h "$cl" -p "$port" -q || { cat "$cl"/vg.*.log "$cl/server.log" | head -20; echo "1..1"; echo "not ok 1 - the server did not start under valgrind"; exit 1; }
pgxs=$(dirname "$(pg_config --pgxs)")/..
out=$(gh_tmpdir)
gh_readable_copy "$out/input" sql expected
gh_as_pg "$pgxs/test/regress/pg_regress" --inputdir="$out/input" --outputdir="$out" \
  --host="$cl" --port="$port" --user=postgres --dbname=vg_regression $suites >"$logdir/valgrind-regress.log" 2>&1
grep -E '^(test| +[a-z_]+ +\.\.\.|ok|not ok)' "$logdir/valgrind-regress.log"
nerr=$(cat "$cl"/vg.*.log 2>/dev/null | grep -cE '^==[0-9]+== (Invalid|Conditional|Use of uninit|Syscall param|Mismatched|Source and destination)')
ngh=$(cat "$cl"/vg.*.log 2>/dev/null | grep -cE 'gpuhash\.so')
echo "1..2"
grep -qE 'tests passed|All [0-9]+ tests passed' "$logdir/valgrind-regress.log" && echo "ok 1 - pg_regress suites under valgrind: $suites" \
  || echo "not ok 1 - pg_regress under valgrind: $(grep -E 'failed' "$logdir/valgrind-regress.log" | tail -1)"
[ "$nerr" = 0 ] && echo "ok 2 - valgrind memcheck: no error ($ngh stack lines in gpuhash.so)" \
  || { echo "not ok 2 - valgrind memcheck: $nerr errors ($ngh stack lines in gpuhash.so; logs in $logdir)"; }
cp "$out/regression.diffs" "$logdir/" 2>/dev/null
rm -rf "$out"
[ "$nerr" = 0 ]
