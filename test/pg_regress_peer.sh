#!/bin/bash
# test/pg_regress_peer.sh - PostgreSQL 15's own regression suite (its
# src/test/regress/parallel_schedule), run twice in temporary instances with
# gpuhash preloaded and created in the regression database:
#
#   native    gpuhash.enabled = off: every plan is PostgreSQL's own
#   gpuhash   gpuhash.force_join and force_agg on: a GpuHashJoin and a
#             GpuHashAgg wherever one is legal (GPUHASH_PEER_FORCE),
#             on gpuhash.device = $GPUHASH_TEST_DEVICE (default cpu, the
#             CPU twin; gpu on a GPU host)
#
# and the two runs' results compared statement by statement
# (test/pg_regress_peer_compare.py): they may differ only in plan text
# (EXPLAIN output), in the order of the rows of a query without ORDER BY,
# and in which rows an unordered LIMIT returns.  Also checked: no backend
# crashed (server logs), no statement ran into statement_timeout, no
# statement waited on a process that does not absorb ProcSignalBarriers,
# and neither pass hung (each runs under timeout).
# Upstream's expected files play no part: some upstream tests fail in both
# runs because of the environment (a preloaded library, the locale), and
# that is not what this checks.
#
# Prints one line per test of the schedule and ends with "N passed, N
# failed"; exits non-zero on any failure.  Takes about 5 minutes on 2 idle
# cores, 10 to 20 on a busy machine or when statements hang.
#
#   test/pg_regress_peer.sh                       as root from the project root
#   GPUHASH_TEST_DEVICE=gpu test/pg_regress_peer.sh    on a GPU host
#
# A host without network access (a GPU host) needs the cache (.pgsrc/, a few
# MB) made elsewhere: run the script once on a Debian 12 machine and carry
# .pgsrc/ along.
#
# Environment:
#   GPUHASH_TEST_DEVICE     cpu (default), gpu or auto
#   GPUHASH_PEER_FORCE      what the gpuhash pass forces: "join agg" (default:
#                           gpuhash.force_join and gpuhash.force_agg), "join",
#                           or "" (nothing: the planner's choice by cost)
#   GPUHASH_PEER_CONF       more lines for the gpuhash pass's configuration,
#                           e.g. "gpuhash.cost_as_gpu = on" (with device cpu:
#                           the plans a GPU host would choose, on the CPU twin)
#   GPUHASH_PGSRC_CACHE     where PostgreSQL's test sources are kept between
#                           runs (default .pgsrc/ in the project, git-ignored);
#                           fetched with apt-get source when empty
#   GPUHASH_PEER_TIMEOUT    seconds each pass may take (default 1200)
#   GPUHASH_PEER_STATEMENT_TIMEOUT  statement_timeout of both instances
#                           (default 300s: a statement that hangs becomes
#                           an ERROR in its test instead of stopping the pass)
#   GPUHASH_PEER_GPU_SERVICE  gpuhash.gpu_service of both instances (default:
#                           not set, gpuhash's default)
#   GPUHASH_PEER_AUTO_EXPLAIN=1  load auto_explain in both instances (every
#                           executed plan goes to the server log, VERBOSE) and count
#                           the statements that ran a GpuHashJoin, not only
#                           the EXPLAIN outputs that show one (a plan that
#                           EXPLAIN cannot print then fails its statement)
#   GPUHASH_PEER_PASSES     "native gpuhash" (default); one name runs only it
#                           and compares it with the results kept from before
#   GPUHASH_TEST_LOGDIR     where results, server logs and diffs are kept
#                           (default: a new directory under /tmp)
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$GPUHASH_ROOT" || exit 2

device=${GPUHASH_TEST_DEVICE:-cpu}
force=${GPUHASH_PEER_FORCE-join agg}
peer_conf=${GPUHASH_PEER_CONF:-}
case $device in cpu|gpu|auto) ;; *) echo "GPUHASH_TEST_DEVICE must be cpu, gpu or auto" >&2; exit 2 ;; esac
cache=${GPUHASH_PGSRC_CACHE:-$GPUHASH_ROOT/.pgsrc}
pass_timeout=${GPUHASH_PEER_TIMEOUT:-1200}
stmt_timeout=${GPUHASH_PEER_STATEMENT_TIMEOUT:-300s}
gpu_service=${GPUHASH_PEER_GPU_SERVICE:-}
auto_explain=${GPUHASH_PEER_AUTO_EXPLAIN:-}
passes=${GPUHASH_PEER_PASSES:-native gpuhash}
logdir=${GPUHASH_TEST_LOGDIR:-$(mktemp -d /tmp/gpuhash-pgregress.XXXXXX)}
mkdir -p "$logdir"
note() { printf '\n== %s\n' "$*"; }
die() { echo "$*" >&2; echo "0 passed, 1 failed"; exit 1; }

# ------------------------------------------------------------ dependencies
note "dependencies"
need=()
command -v pg_config >/dev/null 2>&1 || need+=(postgresql-server-dev-15)
[ -f "$(pg_config --includedir-server 2>/dev/null)/postgres.h" ] || need+=(postgresql-server-dev-15)
[ -x "$(pg_config --bindir 2>/dev/null)/postgres" ] || need+=(postgresql-15)
command -v make >/dev/null 2>&1 || need+=(make)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v diff >/dev/null 2>&1 || need+=(diffutils)
[ -f "$cache/VERSION" ] || command -v dpkg-source >/dev/null 2>&1 || need+=(dpkg-dev)
if [ ${#need[@]} -gt 0 ]; then
  # shellcheck disable=SC2207
  need=($(printf '%s\n' "${need[@]}" | sort -u))
  [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1 || die "missing: ${need[*]}"
  echo "installing ${need[*]}"
  { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null; } \
    || die "apt-get could not install ${need[*]}"
fi
installed=$(pg_config --version | sed 's/^PostgreSQL //')		# e.g. 15.20 (Debian 15.20-0+deb12u1)
installed_deb=$(dpkg-query -W -f='${Version}' postgresql-15 2>/dev/null || true)

# ---------------------------------------------------- PostgreSQL's test sources
# apt-get source postgresql-15 (the installed version when the mirror serves
# it, else the newest 15.x it serves), with deb-src lines made from the
# host's bookworm mirrors in a private apt configuration under the cache
# (the host's own apt sources and lists are left as they are).  Only the
# parts the suite needs are kept: src/test/regress and contrib/spi.
#
# When the suite is not the installed minor's, its psql comes with it (from
# postgresql-client-15 of the suite's version, apt-get download): pg_regress
# compares what psql echoes, and psql's reading of the input changes between
# minors (15.20's psql, after a COPY ... FROM STDIN that fails, takes every
# line up to the next "\." as COPY data, where 15.18's tests expect the
# lines to run; whole parts of copy2, rowsecurity, generated and
# alter_table would not run in either pass).
fetch_pgsrc() {
  local apt=$cache/apt dl opts v versions f
  rm -rf "$apt" && mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/sources.list.d" || return 1
  : >"$apt/sources.list"
  # one-line sources: deb [options] URI SUITE COMPONENT...
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    awk '$1 == "deb" && / bookworm/ { print; $1 = "deb-src"; print }' "$f" >>"$apt/sources.list"
  done
  # deb822 sources: stanzas of Types/URIs/Suites/Components/Signed-By
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk 'function flush() {
           if (types ~ /(^| )deb( |$)/ && suites ~ /bookworm/ && enabled !~ /^[Nn]o/)
             for (i = 1; i <= nu; i++) for (j = 1; j <= ns; j++)
               for (t = 0; t < 2; t++)
                 printf "%s %s%s %s %s\n", (t ? "deb-src" : "deb"), (signed != "" ? "[signed-by=" signed "] " : ""), u[i], s[j], comps
           types = suites = comps = signed = enabled = ""; nu = ns = 0
         }
         /^[ \t]*#/ { next }
         /^[ \t]*$/ { flush(); next }
         /^[A-Za-z-]+:/ { key = tolower(substr($1, 1, length($1) - 1)); $1 = ""; val = substr($0, 2)
           if (key == "types") types = val
           else if (key == "uris") nu = split(val, u, " ")
           else if (key == "suites") { suites = val; ns = split(val, s, " ") }
           else if (key == "components") comps = val
           else if (key == "signed-by") signed = val
           else if (key == "enabled") enabled = val
           next }
         END { flush() }' "$f" >>"$apt/sources.list"
  done
  sort -u -o "$apt/sources.list" "$apt/sources.list"
  [ -s "$apt/sources.list" ] || { echo "no bookworm mirror in /etc/apt/sources.list*" >&2; return 1; }
  echo "the host's bookworm mirrors, with deb-src lines (private apt configuration in $apt):"
  sed 's/^/  /' "$apt/sources.list"
  opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=$apt/sources.list.d"
        -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache")
  apt-get "${opts[@]}" update >"$apt/update.log" 2>&1 || { tail "$apt/update.log" >&2; return 1; }
  versions=$(apt-cache "${opts[@]}" showsrc postgresql-15 | sed -n 's/^Version: //p' | sort -u)
  [ -n "$versions" ] || { echo "the mirrors serve no postgresql-15 source" >&2; return 1; }
  dl=$cache/download; rm -rf "$dl"; mkdir -p "$dl"
  id _apt >/dev/null 2>&1 && chown _apt "$dl"
  # the installed version first, then the others, newest first
  for v in "$installed_deb" $(printf '%s\n' $versions | sort -r -V | grep -vxF "${installed_deb:-none}"); do
    [ -n "$v" ] && printf '%s\n' $versions | grep -qxF "$v" || continue
    echo "apt-get source postgresql-15=$v"
    if (cd "$dl" && apt-get "${opts[@]}" source "postgresql-15=$v") >"$dl/source.log" 2>&1; then
      local tree
      tree=$(find "$dl" -mindepth 1 -maxdepth 1 -type d -name 'postgresql-15-*' | head -1)
      [ -f "$tree/src/test/regress/parallel_schedule" ] || continue
      rm -rf "$cache/src" && mkdir -p "$cache/src/src/test" "$cache/src/contrib" &&
        cp -a "$tree/src/test/regress" "$cache/src/src/test/" &&
        cp -a "$tree/contrib/spi" "$cache/src/contrib/" || return 1
      rm -rf "$dl"
      if [ "$v" != "$installed_deb" ]; then
        mkdir -p "$dl" && { id _apt >/dev/null 2>&1 && chown _apt "$dl"; }
        echo "apt-get download postgresql-client-15=$v (its psql)"
        (cd "$dl" && apt-get "${opts[@]}" download "postgresql-client-15=$v" &&
          dpkg-deb -x postgresql-client-15_*.deb x) >"$dl/download.log" 2>&1 &&
          mkdir -p "$cache/src/bin" && cp "$dl"/x/usr/lib/postgresql/15/bin/psql "$cache/src/bin/psql" ||
          { tail -3 "$dl/download.log" >&2; return 1; }
        rm -rf "$dl"
      fi
      echo "$v" >"$cache/VERSION"
      rm -rf "$apt"		# the package lists: the cache stays small enough to carry
      return 0
    fi
    grep -E '^(E|W):' "$dl/source.log" | head -3 | sed 's/^/  /'
    find "$dl" -mindepth 1 -delete
  done
  echo "apt-get source postgresql-15 failed for every version served: $versions" >&2
  return 1
}

note "PostgreSQL test sources"
if [ ! -f "$cache/VERSION" ] || [ ! -f "$cache/src/src/test/regress/parallel_schedule" ] ||
   { [ "$(cat "$cache/VERSION")" != "$installed_deb" ] && [ ! -x "$cache/src/bin/psql" ]; }; then
  [ "$(id -u)" -eq 0 ] || die "no cached sources in $cache, and fetching them needs root (apt-get)"
  fetch_pgsrc || die "could not fetch PostgreSQL's sources"
fi
srcversion=$(cat "$cache/VERSION")
echo "installed PostgreSQL: $installed"
echo "regression suite from: postgresql-15 $srcversion source ($cache)"
[ -x "$cache/src/bin/psql" ] && echo "psql: from postgresql-client-15 $srcversion, the suite's own"
pgsrc=$cache/src

# ------------------------------------------------- private installation
work=$(gh_tmpdir)
trap 'for p in $passes; do [ -f "$work/$p/tmp_check/data/postmaster.pid" ] && gh_as_pg "${pgbin:-}/pg_ctl" -D "$work/$p/tmp_check/data" -m immediate -w stop >/dev/null 2>&1; done; rm -rf "$work"' EXIT
note "private PostgreSQL installation, gpuhash and the suite's modules (logs: $logdir)"
pgc=$(gh_private_pg "$work/pg" 2>"$logdir/copy.log") || die "private copy of PostgreSQL: $(tail -1 "$logdir/copy.log")"
pgbin=$(dirname "$pgc")
# the suite's own psql when it is not the installed minor's (fetch_pgsrc)
[ -x "$pgsrc/bin/psql" ] && cp "$pgsrc/bin/psql" "$pgbin/psql"
# gpuhash from the working tree, built in a copy (the tree stays clean);
# the Makefile uses nvcc when it finds it
mkdir -p "$work/gpuhash"
cp -a Makefile gpuhash.control gpuhash--*.sql src cuda "$work/gpuhash/"
if ! (cd "$work/gpuhash" && make clean >/dev/null 2>&1; make -j"$(nproc)" PG_CONFIG="$pgc" && make install PG_CONFIG="$pgc") >"$logdir/build.log" 2>&1; then
  tail -20 "$logdir/build.log"; die "gpuhash build failed"
fi
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD -- src cuda Makefile gpuhash--*.sql 2>/dev/null || commit="$commit+changes"
echo "gpuhash $commit installed into $("$pgc" --pkglibdir) ($(grep -qE '^[^ ]*nvcc .* -c ' "$logdir/build.log" && echo with CUDA || echo CPU twin only))"
# regress.so (src/test/regress/regress.c) and contrib/spi's autoinc.so and
# refint.so (the triggers test), built with PGXS into the --dlpath directory
mkdir -p "$work/mods" "$work/dlpath"
cp "$pgsrc/src/test/regress/regress.c" "$pgsrc/contrib/spi/autoinc.c" "$pgsrc/contrib/spi/refint.c" "$work/mods/"
printf 'MODULES = regress autoinc refint\nPGXS := $(shell $(PG_CONFIG) --pgxs)\ninclude $(PGXS)\n' >"$work/mods/Makefile"
if ! (cd "$work/mods" && make PG_CONFIG="$pgc" with_llvm=no) >"$logdir/modules.log" 2>&1; then
  tail -20 "$logdir/modules.log"; die "the suite's modules did not build"
fi
cp "$work/mods"/*.so "$work/dlpath/"
echo "modules: $(cd "$work/dlpath" && echo *.so)"
# the suite, where the server (running as $GH_OSUSER) can read its data files
cp -a "$pgsrc/src/test/regress" "$work/suite"
chmod -R a+rX "$work"
[ "$(id -u)" -eq 0 ] && chown -R "$GH_OSUSER" "$work/suite"

# ------------------------------------------------------------------ passes
run_pass() {
  local name=$1 conf out t0 rc
  out=$work/$name
  mkdir -p "$out"; chmod 755 "$out"; [ "$(id -u)" -eq 0 ] && chown "$GH_OSUSER" "$out"
  conf=$out/peer.conf
  {
    if [ -n "$auto_explain" ]; then
      echo "shared_preload_libraries = 'gpuhash,auto_explain'"
      echo "auto_explain.log_min_duration = 0"
      echo "auto_explain.log_nested_statements = on"
      echo "auto_explain.log_verbose = on"
    else
      echo "shared_preload_libraries = 'gpuhash'"
    fi
    echo "gpuhash.device = $device"
    # JIT is not what this compares, and a GPU host's carried PostgreSQL has
    # no LLVM: with jit on, only the native pass's costlier plans failed
    echo "jit = off"
    if [ "$name" = native ]; then
      echo "gpuhash.enabled = off"
    else
      echo "gpuhash.enabled = on"
      for f in $force; do echo "gpuhash.force_$f = on"; done
      [ -n "$peer_conf" ] && printf '%s\n' "$peer_conf"
    fi
    echo "statement_timeout = '$stmt_timeout'"
    [ -n "$gpu_service" ] && echo "gpuhash.gpu_service = $gpu_service"
  } >"$conf"
  chmod a+r "$conf"
  note "pass $name: $(grep gpuhash "$conf" | grep -v preload | tr '\n' ' ')(timeout ${pass_timeout}s)"
  t0=$SECONDS
  # the options of upstream's "make check" (src/test/regress/GNUmakefile), and
  # gpuhash created in the regression database
  gh_as_pg timeout -k 30 "$pass_timeout" "$("$pgc" --pkglibdir)/pgxs/src/test/regress/pg_regress" \
    --temp-instance="$out/tmp_check" --temp-config="$conf" \
    --bindir="$pgbin" --inputdir="$work/suite" --outputdir="$out" \
    --dlpath="$work/dlpath" --max-concurrent-tests=20 \
    --schedule="$work/suite/parallel_schedule" --load-extension=gpuhash \
    --no-locale --encoding=UTF8 >"$out/pg_regress.log" 2>&1
  rc=$?
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    eval "hung_$name=1"
    echo "pass $name did not finish in ${pass_timeout}s (HANG)"
  else
    eval "hung_$name="
  fi
  # pg_regress stops its instance, unless it was stopped itself
  [ -f "$out/tmp_check/data/postmaster.pid" ] &&
    gh_as_pg "$pgbin/pg_ctl" -D "$out/tmp_check/data" -m immediate -w stop >/dev/null 2>&1
  grep -E '^(# )?(All|[0-9]+ of) [0-9]+ tests' "$out/pg_regress.log" | sed 's/^/pg_regress (against upstream expected files): /'
  echo "pass $name: $((SECONDS - t0)) s"
  # keep what the comparison and a reader need
  rm -rf "${logdir:?}/$name"; mkdir -p "$logdir/$name"
  cp -a "$out/results" "$out/pg_regress.log" "$conf" "$logdir/$name/" 2>/dev/null
  cp "$out/regression.diffs" "$logdir/$name/upstream.diffs" 2>/dev/null
  cp "$out/log/postmaster.log" "$logdir/$name/" 2>/dev/null
  echo "$((SECONDS - t0))" >"$logdir/$name/seconds"
  [ -n "$(eval echo "\$hung_$name")" ] && echo hung >"$logdir/$name/hung"
  rm -rf "$out/tmp_check"
}

for p in $passes; do run_pass "$p"; done

# ---------------------------------------------------------------- compare
note "comparison: native vs gpuhash (forced: $force; device $device)"
for p in native gpuhash; do
  [ -d "$logdir/$p/results" ] || die "no results of the $p pass in $logdir"
done
# crashes and hangs
extra=()
barrier_hang=
for p in native gpuhash; do
  log=$logdir/$p/postmaster.log
  ncrash=$(grep -cE 'terminated by signal|PANIC:|was terminated|TRAP:' "$log" 2>/dev/null)
  eval "crash_$p=${ncrash:-0}"
  if [ "${ncrash:-0}" -gt 0 ]; then
    echo "CRASH in the $p pass ($log):"
    grep -E 'terminated by signal|PANIC:|was terminated|TRAP:' "$log" | head -10 | sed 's/^/  /'
    grep -B2 -E 'terminated by signal|was terminated' "$log" | grep -E 'Failed process was running' | head -10 | sed 's/^/  /'
  fi
  [ -f "$logdir/$p/hung" ] && echo "HANG: the $p pass was stopped after ${pass_timeout}s"
  # a process that never absorbs a ProcSignalBarrier blocks DROP DATABASE
  # and DROP TABLESPACE for good
  for pid in $(sed -n 's/.*still waiting for backend with PID \([0-9]*\) to accept ProcSignalBarrier.*/\1/p' "$log" 2>/dev/null | sort -u); do
    # log_line_prefix of pg_regress's instance: "%m %b[%p] ": date time zone type[pid]
    who=$(sed -nE "s/^[^ ]+ [^ ]+ [^ ]+ ([^[]*)\[$pid\].*/\1/p" "$log" | head -1)
    echo "HANG in the $p pass: statements waited for PID $pid (${who:-unknown process}) to accept a ProcSignalBarrier, $(grep -c "PID $pid to accept ProcSignalBarrier" "$log") log lines"
    grep -A1 "PID $pid to accept ProcSignalBarrier" "$log" | grep -oE 'STATEMENT: .*' | sort | uniq -c | head -5 | sed 's/^/  /'
    barrier_hang="$barrier_hang $p"
  done
done
# tests whose own output shows a lost connection fail whatever the rest
for f in "$logdir"/{native,gpuhash}/results/*.out; do
  [ -f "$f" ] || continue
  t=$(basename "$f" .out) run=$(basename "$(dirname "$(dirname "$f")")")
  if grep -qE 'server closed the connection unexpectedly|terminating connection because of crash' "$f"; then
    extra+=("$t=lost its connection in the $run run")
  elif grep -q 'canceling statement due to statement timeout' "$f"; then
    extra+=("$t=a statement ran into statement_timeout ($stmt_timeout) in the $run run")
  fi
done
# GpuHashJoin nodes in the EXPLAIN outputs of the results
ngpu=$(cat "$logdir"/gpuhash/results/*.out 2>/dev/null | grep -c 'Custom Scan (GpuHashJoin)')
ngpu_tests=$(grep -l 'Custom Scan (GpuHashJoin)' "$logdir"/gpuhash/results/*.out 2>/dev/null | wc -l)
nnative=$(cat "$logdir"/native/results/*.out 2>/dev/null | grep -c 'GpuHashJoin')
# with auto_explain: the executed plans (a log entry and its continuation
# lines) that hold a GpuHashJoin; EXPLAIN's own (its query text starts with
# EXPLAIN) are not counted
count_plans() {
  awk 'function done() { if (inplan && !explain) { n++; if (gpu) g++ } }
       /^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9] / { done(); inplan = / plan:$/; gpu = explain = 0; next }
       inplan && /^\tQuery Text: *[Ee][Xx][Pp][Ll][Aa][Ii][Nn]/ { explain = 1 }
       inplan && /GpuHashJoin/ { gpu = 1 }
       END { done(); printf "%d %d\n", n, g }' "$1"
}
python3 "$here/pg_regress_peer_compare.py" --sql="$pgsrc/src/test/regress/sql" \
  --schedule="$pgsrc/src/test/regress/parallel_schedule" \
  --a="native=$logdir/native/results" --b="gpuhash=$logdir/gpuhash/results" \
  --diffs="$logdir/peer.diffs" --failed-extra="$(IFS=,; echo "${extra[*]:-}")" >"$logdir/compare.out"
rc=$?
sed '/^summary:/,$d' "$logdir/compare.out"
echo
echo "PostgreSQL: installed $installed; suite from the postgresql-15 $srcversion source"
echo "gpuhash: $commit, device $device"
echo "wall time: native pass $(cat "$logdir/native/seconds" 2>/dev/null || echo ?) s, gpuhash pass $(cat "$logdir/gpuhash/seconds" 2>/dev/null || echo ?) s"
echo "GpuHashJoin in the results (EXPLAIN output): $ngpu plan nodes in $ngpu_tests tests (gpuhash pass), $nnative lines (native pass)"
if grep -q auto_explain "$logdir/gpuhash/peer.conf" 2>/dev/null; then
  read -r nplans_g ngplans_g < <(count_plans "$logdir/gpuhash/postmaster.log")
  read -r nplans_n ngplans_n < <(count_plans "$logdir/native/postmaster.log")
  echo "executed plans (auto_explain): gpuhash pass $nplans_g, $ngplans_g of them with a GpuHashJoin; native pass $nplans_n, $ngplans_n with a GpuHashJoin"
fi
echo "crashes: native ${crash_native:-0}, gpuhash ${crash_gpuhash:-0}; passes stopped by the timeout: $( [ -f "$logdir/native/hung" ] && echo native) $( [ -f "$logdir/gpuhash/hung" ] && echo gpuhash); waits for a ProcSignalBarrier:${barrier_hang:- none}"
echo "every difference: $logdir/peer.diffs; results and server logs: $logdir/{native,gpuhash}"
grep -E '^summary:' "$logdir/compare.out"
# the per-test count, plus the checks that belong to no test
read -r passed failed < <(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$logdir/compare.out")
[ -n "${passed:-}" ] || { echo "the comparison did not finish (exit $rc)"; passed=0 failed=1; }
[ "${crash_native:-0}" = 0 ] && [ "${crash_gpuhash:-0}" = 0 ] || [ "$failed" -gt 0 ] ||
  { echo "FAILED: a backend crashed, no test shows it"; failed=$((failed + 1)); }
{ [ -f "$logdir/native/hung" ] || [ -f "$logdir/gpuhash/hung" ] || [ -n "$barrier_hang" ]; } && [ "$failed" = 0 ] &&
  { echo "FAILED: a pass hung"; failed=$((failed + 1)); }
[ "$nnative" = 0 ] || { echo "FAILED: the native pass planned GpuHashJoins"; failed=$((failed + 1)); }
[ "$ngpu" -gt 0 ] || { echo "FAILED: the gpuhash pass planned no GpuHashJoin"; failed=$((failed + 1)); }
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
