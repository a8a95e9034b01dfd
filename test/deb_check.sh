#!/bin/bash
# test/deb_check.sh DEB - installs the Debian package DEB
# (postgresql-15-gpuhash_*.deb) on this machine and tests the installed
# files: test/fresh.sh --deb runs it as root in a fresh Debian 12 root, from a
# directory holding the project's tests alone (sql/, expected/, test/), never
# its sources, so that nothing here can build the extension.  In order:
#
#   1. apt-get install ./DEB, as a fresh machine would (its package lists
#      first); the package must not pull in the server headers
#   2. the library PostgreSQL loads is the package's: dpkg -S names the
#      package, its checksum is the one in DEB, dpkg --verify finds nothing
#      changed, and there is no other gpuhash library on the machine; and
#      dpkg-query shows which build it is (Gpuhash-Build)
#   3. with nothing but shared_preload_libraries = 'gpuhash' (and no NVIDIA
#      driver: the root has none): the server starts with the package's
#      library mapped, CREATE EXTENSION gpuhash works, gpuhash.device = auto
#      leaves a forced join's plan to PostgreSQL, and gpuhash.device = cpu
#      plans a GpuHashJoin whose rows are PostgreSQL's
#   4. postgresql-server-dev-15 for PGXS's pg_regress and
#      pg_isolation_regress alone (the library still the package's), then the
#      pg_regress suites of test/schedule and the isolation specs, each in a
#      temporary instance with test/regress.conf, as make installcheck runs
#      them, against the installed package
#
# Ends with "N passed, N failed": one for each check of 1-3 and each suite
# and spec; exits non-zero on any failure.  Must run as root (apt-get; the
# clusters run as the postgres user).
set -uo pipefail

deb=${1:-}
[ -n "$deb" ] && [ -f "$deb" ] || { echo "usage: test/deb_check.sh PACKAGE.deb" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "deb_check.sh: run it as root" >&2; exit 2; }
deb=$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")
tests=$(cd "$(dirname "$0")/.." && pwd) || exit 2

PG_BIN=/usr/lib/postgresql/15/bin
LIB=/usr/lib/postgresql/15/lib/gpuhash.so
PKG=$(dpkg-deb -f "$deb" Package)
APT=(apt-get -q -y -o DPkg::Lock::Timeout=300)
export DEBIAN_FRONTEND=noninteractive
passed=0 failed=0

say() { printf '== %s\n' "$*"; }

# check NAME CMD...: CMD's success is one test passed
check() {
  local name=$1; shift
  if "$@"; then
    passed=$((passed + 1)); echo "ok: $name"
  else
    failed=$((failed + 1)); echo "FAILED: $name"
  fi
}

as_pg() { runuser -u postgres -- "$@"; }

# ---------------------------------------------------------------------------
say "1. installing $(basename "$deb") ($PKG, Gpuhash-Build: $(dpkg-deb -f "$deb" Gpuhash-Build))"

no_driver() { ! ldconfig -p | grep -q 'libcuda\.so'; }
check "no NVIDIA driver (libcuda.so) on this machine" no_driver

install_pkg() {
  "${APT[@]}" update >/tmp/deb-apt.log 2>&1 &&
    "${APT[@]}" install "$deb" >>/tmp/deb-apt.log 2>&1 ||
    { tail -20 /tmp/deb-apt.log; return 1; }
  dpkg-query -W -f='${db:Status-Status}\n' "$PKG" | grep -qx installed
}
check "apt-get install $(basename "$deb")" install_pkg
no_headers() { ! dpkg -s postgresql-server-dev-15 >/dev/null 2>&1; }
check "the package does not pull in postgresql-server-dev-15" no_headers

# ---------------------------------------------------------------------------
say "2. the installed library is the package's"

deb_sum=$(dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ".$LIB" | sha256sum | cut -d' ' -f1)
lib_is_package() {
  local owner sum
  owner=$(dpkg -S "$LIB" 2>/dev/null | cut -d: -f1)
  sum=$(sha256sum <"$LIB" 2>/dev/null | cut -d' ' -f1)
  echo "   $LIB: package ${owner:-none}, sha256 ${sum:-none} (in the .deb: $deb_sum)"
  [ "$owner" = "$PKG" ] && [ -n "$sum" ] && [ "$sum" = "$deb_sum" ]
}
check "$LIB belongs to $PKG and has the .deb's checksum" lib_is_package
verify_pkg() {
  local out
  out=$(dpkg --verify "$PKG" 2>&1)
  [ -z "$out" ] || echo "$out"
  [ -z "$out" ]
}
check "dpkg --verify $PKG" verify_pkg
build_field() {
  local field
  field=$(dpkg-query -W -f='${Gpuhash-Build}' "$PKG")
  echo "   Gpuhash-Build: $field"
  [ -n "$field" ] && [ "$field" = "$(dpkg-deb -f "$deb" Gpuhash-Build)" ]
}
check "dpkg-query shows the installed package's Gpuhash-Build" build_field
one_library() {
  local libs
  libs=$(find / -xdev \( -name 'gpuhash*.so' -o -name 'gpuhash.control' \) 2>/dev/null | sort)
  echo "$libs" | sed 's/^/   /'
  [ "$libs" = "$LIB
/usr/share/postgresql/15/extension/gpuhash.control" ]
}
check "no other gpuhash library or control file on the machine" one_library

# ---------------------------------------------------------------------------
say "3. the package in a server with only shared_preload_libraries = 'gpuhash'"

work=$(mktemp -d /tmp/gpuhash-deb.XXXXXX)
chown postgres: "$work"
cd "$work" || exit 1
cl=$work/cluster
cleanup() {
  [ -f "$cl/data/postmaster.pid" ] && as_pg "$PG_BIN/pg_ctl" -D "$cl/data" -m immediate -w stop >/dev/null 2>&1
  for d in "$work"/tests/tmp_check_regress "$work"/tests/tmp_check_iso; do
    [ -f "$d/data/postmaster.pid" ] && as_pg "$PG_BIN/pg_ctl" -D "$d/data" -m immediate -w stop >/dev/null 2>&1
  done
  rm -rf "$work"
}
trap cleanup EXIT

# psql_at SQL: one value, from the smoke cluster's database
psql_at() { as_pg "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$cl" -d postgres -c "$1"; }

start_cluster() {
  as_pg mkdir -p "$cl" &&
    as_pg "$PG_BIN/initdb" -D "$cl/data" -A trust -U postgres >"$work/initdb.log" 2>&1 &&
    printf "shared_preload_libraries = 'gpuhash'\nlisten_addresses = ''\nunix_socket_directories = '%s'\n" "$cl" \
      >>"$cl/data/postgresql.conf" &&
    as_pg "$PG_BIN/pg_ctl" -D "$cl/data" -l "$cl/server.log" -w start >/dev/null ||
    { tail -20 "$work/initdb.log" "$cl/server.log" 2>/dev/null; return 1; }
}
check "a server with gpuhash preloaded starts" start_cluster

lib_mapped() {
  local pid
  pid=$(head -1 "$cl/data/postmaster.pid" 2>/dev/null)
  [ -n "$pid" ] && grep -q " $LIB\$" "/proc/$pid/maps"
}
check "the postmaster has the package's $LIB mapped" lib_mapped
check "CREATE EXTENSION gpuhash" psql_at "CREATE EXTENSION gpuhash"
psql_at "CREATE TABLE ta AS SELECT g AS k, g % 97 AS v FROM generate_series(1, 20000) g;
         CREATE TABLE tb AS SELECT g % 5000 AS k, g AS w FROM generate_series(1, 30000) g;
         ANALYZE ta; ANALYZE tb" >/dev/null

# plan_of SETTINGS: the join's plan under SETTINGS (SET ...;)
JOIN="SELECT ta.k, ta.v, tb.w FROM ta JOIN tb ON ta.k = tb.k"
plan_of() { psql_at "$1 EXPLAIN (COSTS OFF) $JOIN"; }
auto_leaves_plans() {
  local plan
  plan=$(plan_of "SET gpuhash.force_join = on;") || return 1
  ! grep -q GpuHashJoin <<<"$plan" || { echo "$plan"; return 1; }
}
check "no GPU: gpuhash.device = auto leaves a forced join's plan to PostgreSQL" auto_leaves_plans
cpu_join() {
  local plan diff
  plan=$(plan_of "SET gpuhash.device = cpu; SET gpuhash.force_join = on;") || return 1
  grep -q GpuHashJoin <<<"$plan" || { echo "no GpuHashJoin in:"; echo "$plan"; return 1; }
  # the rows as multisets, both ways, against PostgreSQL's own join
  diff=$(psql_at "SET gpuhash.device = cpu; SET gpuhash.force_join = on;
    CREATE TEMP TABLE gh AS $JOIN; SET gpuhash.enabled = off;
    CREATE TEMP TABLE pg AS $JOIN;
    SELECT (SELECT count(*) FROM (TABLE gh EXCEPT ALL TABLE pg) d)
         + (SELECT count(*) FROM (TABLE pg EXCEPT ALL TABLE gh) d)
         + abs((SELECT count(*) FROM gh) - (SELECT count(*) FROM pg))
         + (SELECT CASE WHEN count(*) > 0 THEN 0 ELSE 1 END FROM pg)") || return 1
  [ "$diff" = 0 ] || { echo "   GpuHashJoin's rows differ from PostgreSQL's ($diff)"; return 1; }
}
check "gpuhash.device = cpu: a GpuHashJoin with PostgreSQL's rows" cpu_join
stop_cluster() { as_pg "$PG_BIN/pg_ctl" -D "$cl/data" -m fast -w stop >/dev/null; }
check "the server stops cleanly" stop_cluster
grep -E 'gpuhash|FATAL|PANIC|ERROR' "$cl/server.log" | head -10 | sed 's/^/   | /'

# ---------------------------------------------------------------------------
say "4. pg_regress suites and isolation specs against the installed package"

install_regress() {
  "${APT[@]}" install postgresql-server-dev-15 >>/tmp/deb-apt.log 2>&1 || { tail -20 /tmp/deb-apt.log; return 1; }
}
check "apt-get install postgresql-server-dev-15 (pg_regress)" install_regress
check "$LIB is still the package's" lib_is_package

pgxs=$(dirname "$(pg_config --pgxs 2>/dev/null)")
# a copy of the tests that the postgres user may write in
mkdir -p "$work/tests/test"
cp -r "$tests/sql" "$tests/expected" "$work/tests/"
cp -r "$tests/test/schedule" "$tests/test/regress.conf" "$tests/test/isolation" "$work/tests/test/"
chown -R postgres: "$work/tests"

# suite LABEL CMD...: a pg_regress run in $work/tests; each test a count
suite() {
  local label=$1 log=$work/$1.log ok nok rc; shift
  (cd "$work/tests" && as_pg "$@") >"$log" 2>&1
  rc=$?
  grep -E '^(test|ok|not ok)|^ +[a-z_]+ +\.\.\.|tests (passed|failed)' "$log"
  ok=$(grep -cE '\.\.\. ok|^ok ' "$log")
  nok=$(grep -cE '\.\.\. FAILED|^not ok ' "$log")
  # no test counted, or pg_regress failed with none failed: one failure
  if [ $((ok + nok)) -eq 0 ] || { [ $rc -ne 0 ] && [ "$nok" -eq 0 ]; }; then
    nok=$((nok + 1)); echo "$label: pg_regress exited $rc"; tail -30 "$log"
  fi
  passed=$((passed + ok)); failed=$((failed + nok))
  for d in "$work/tests/regression.diffs" "$work/tests/output_iso/regression.diffs"; do
    [ -s "$d" ] && { head -60 "$d"; rm -f "$d"; }
  done
}
suite regress "$pgxs/../test/regress/pg_regress" --inputdir=. --bindir="$PG_BIN" \
  --temp-instance=./tmp_check_regress --temp-config=test/regress.conf \
  --dbname=contrib_regression --schedule=test/schedule
specs=$(cd "$tests/test/isolation/specs" && ls ./*.spec | sed 's|^\./||; s|\.spec$||')
# shellcheck disable=SC2086
suite isolation "$pgxs/../test/isolation/pg_isolation_regress" --inputdir=test/isolation \
  --outputdir=output_iso --bindir="$PG_BIN" --temp-instance=./tmp_check_iso \
  --temp-config=test/isolation/isolation.conf --temp-config=test/regress.conf \
  --dbname=isolation_regression $specs

echo
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
