#!/bin/bash
# test/asan/run.sh [SUITE...] - the pg_regress suites against gpuhash built
# with AddressSanitizer (src/ and the CPU twin in cuda/*.c), gpuhash.device =
# cpu.  No GPU needed.
#
# The system's PostgreSQL is not touched: its installation (Debian's is
# relocatable: paths are found relative to the binaries) is copied to a
# scratch prefix, gpuhash is built there without CUDA and with
# -fsanitize=address.  LeakSanitizer is off (backends exit without
# freeing, by design).
#
# Two ways to bring the ASan runtime into the server:
#   ASAN_PRELOAD=1  LD_PRELOAD libasan into the postmaster, so that every
#                   malloc goes through ASan's allocator (the CPU twin's
#                   "device" buffers get redzones).  On Debian 12 this
#                   deadlocks before main() work is done: any PostgreSQL
#                   program (postgres -V, psql, initdb) with libasan or
#                   clang's runtime preloaded hangs on a glibc locale lock
#                   (bindtextdomain's _nl_state_lock, or __libc_setlocale_lock
#                   in libp11-kit's destructor); the script gives up after
#                   30 s.
#   default         libasan is loaded with gpuhash.so (its DT_NEEDED) when
#                   the postmaster preloads it (ASAN_OPTIONS
#                   verify_asan_link_order=0).  gpuhash's own code is fully
#                   instrumented (every load and store checked against the
#                   shadow: stack and global objects have redzones, freed
#                   ASan-visible memory is poisoned), but malloc stays
#                   glibc's (the executable binds it first), so heap
#                   buffers, like palloc chunks, have no redzones.  ASan's
#                   siglongjmp interceptor is not in effect either, so
#                   test/asan/longjmp_shim.c is preloaded: it unpoisons the
#                   stack before PostgreSQL's ERROR longjmp (without it,
#                   every ERROR raised inside gpuhash frames leaves stale
#                   redzones that later calls report as stack overflows).
#
# Default suites: every pg_regress suite of test/schedule.  Prints TAP; exit
# status 0 when pg_regress passed and ASan reported nothing.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
cd "$GPUHASH_ROOT"
suites=${*:-$(gh_regress_suites)}
logdir=${GPUHASH_TEST_LOGDIR:-$(mktemp -d /tmp/gpuhash-asan.XXXXXX)}
mkdir -p "$logdir"
libasan=$(gcc -print-file-name=libasan.so)
libasan=$(readlink -f "$libasan")
[ -f "$libasan" ] || { echo "1..0 # SKIP libasan not found"; exit 0; }

work=$(gh_tmpdir)
cl=$(gh_tmpdir); port=$(gh_free_port)
trap 'gh_as_pg "$pgbin/pg_ctl" -D "$cl/data" -m immediate -w stop >/dev/null 2>&1; cp "$cl"/asan.* "$cl/server.log" "$logdir/" 2>/dev/null; rm -rf "$cl" "$work"' EXIT

# a private copy of the PostgreSQL installation
prefix=$work/pg
pgc=$(gh_private_pg "$prefix" 2>"$logdir/asan-copy.log") || { echo "1..1"; echo "not ok 1 - private copy of PostgreSQL: $(tail -1 "$logdir/asan-copy.log")"; exit 1; }
pgbin=$(dirname "$pgc")

# gpuhash with ASan, from the working tree
src=$work/src
mkdir -p "$src"
cp -a Makefile gpuhash.control gpuhash--*.sql src cuda sql expected test "$src/"
if ! (cd "$src" && make clean >/dev/null 2>&1; make -j"$(nproc)" GPUHASH_CUDA=no PG_CONFIG="$pgc" \
      COPT="-fsanitize=address -fno-omit-frame-pointer -fno-common -O1 -g" &&
      make install GPUHASH_CUDA=no PG_CONFIG="$pgc") >"$logdir/asan-build.log" 2>&1; then
  tail -20 "$logdir/asan-build.log"; echo "1..1"; echo "not ok 1 - ASan build"; exit 1
fi
nasan=$(nm -D "$("$pgc" --pkglibdir)/gpuhash.so" | grep -c '__asan_report')
chmod -R a+rX "$work"

gh_cluster_init "$cl" "$port" "gpuhash.device = cpu
gpuhash_test.gpu = off
autovacuum = off" "$pgbin" || exit 1
aopts="detect_leaks=0:log_path=$cl/asan:halt_on_error=1:abort_on_error=0:detect_stack_use_after_return=0:allow_user_segv_handler=1:verify_asan_link_order=0"
if [ -n "${ASAN_PRELOAD:-}" ]; then
  mode="libasan preloaded"
  gh_as_pg env LD_PRELOAD="$libasan" ASAN_OPTIONS="$aopts" timeout -s KILL 30 "$pgbin/pg_ctl" -D "$cl/data" -l "$cl/server.log" -w -t 25 start >/dev/null
else
  mode="libasan loaded with gpuhash.so, longjmp shim preloaded"
  gcc -shared -fPIC -O1 -o "$work/longjmp_shim.so" "$here/longjmp_shim.c" -ldl && chmod a+r "$work/longjmp_shim.so" &&
  gh_as_pg env LD_PRELOAD="$work/longjmp_shim.so" ASAN_OPTIONS="$aopts" "$pgbin/pg_ctl" -D "$cl/data" -l "$cl/server.log" -w start >/dev/null
fi || { tail -20 "$cl/server.log"; cat "$cl"/asan.* 2>/dev/null | head; echo "1..1"; echo "not ok 1 - the server did not start with ASan ($mode)"; exit 1; }

# ASan is there: the postmaster (whose backends are its forks) has libasan mapped
mapped=$(grep -c libasan /proc/"$(head -1 "$cl/data/postmaster.pid")"/maps 2>/dev/null)

out=$(gh_tmpdir)
t0=$SECONDS
gh_as_pg "$prefix$(pg_config --pkglibdir)/pgxs/src/test/regress/pg_regress" --inputdir="$src" --outputdir="$out" \
  --bindir="$pgbin" --host="$cl" --port="$port" --user=postgres --dbname=asan_regression $suites >"$logdir/asan-regress.log" 2>&1
secs=$((SECONDS - t0))
cp "$out/regression.diffs" "$logdir/asan-regression.diffs" 2>/dev/null
grep -E '^(test| +[a-z_]+ +\.\.\.|ok|not ok)' "$logdir/asan-regress.log" | sed 's/^/# /'
nrep=$(cat "$cl"/asan.* 2>/dev/null | grep -c 'ERROR: AddressSanitizer')
crash=$(grep -cE 'terminated by signal|was terminated|PANIC|TRAP:' "$cl/server.log")
echo "1..3"
[ "$nasan" -gt 0 ] && [ "${mapped:-0}" -gt 0 ]
if [ $? = 0 ]; then echo "ok 1 - gpuhash.so built with ASan ($nasan __asan_report symbols), libasan mapped in the server ($mode)"
else echo "not ok 1 - ASan not in effect (report symbols $nasan, libasan mappings ${mapped:-0})"; fi
if grep -qE 'tests passed' "$logdir/asan-regress.log"; then echo "ok 2 - pg_regress with ASan ($secs s): $suites"
else echo "not ok 2 - pg_regress with ASan ($secs s): $(grep -E 'failed' "$logdir/asan-regress.log" | tail -1)"; fi
if [ "$nrep" = 0 ] && [ "$crash" = 0 ]; then echo "ok 3 - AddressSanitizer: no report, no backend crashed"
else echo "not ok 3 - AddressSanitizer: $nrep reports, $crash crash lines"; cat "$cl"/asan.* 2>/dev/null | grep -A12 'ERROR: AddressSanitizer' | head -40 | sed 's/^/# /'; fi
[ "$nrep" = 0 ] && [ "$crash" = 0 ] && grep -qE 'tests passed' "$logdir/asan-regress.log"
