#!/bin/bash
# test/lib.sh - shared helpers for test/run.sh and demo.sh: installing what a
# fresh Debian 12 machine lacks, running PostgreSQL programs as a non-root
# user (initdb and postgres refuse root), throwaway clusters for the shell
# scripts, and running the TAP tests (test/t, on PostgreSQL's own framework:
# their clusters and counting are PostgreSQL::Test::Cluster's and
# Test::More's, their shared Perl helpers test/perl/GpuHash/Test.pm).

GPUHASH_ROOT=${GPUHASH_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}

# gh_install_deps [--build-only | --all]: install build and test dependencies
# when they are missing and we may (root with apt-get); --all, the default,
# is what test/run.sh needs.  --build-only (demo.sh) stops at what building,
# installing and running the extension needs: the server, its headers and
# PGXS, a C and C++ toolchain and make, without the test tools (pgTAP,
# pg_prove, IPC::Run, sqlsmith, pgbench).  A GPU host has them from .gpuhost/
# instead.
gh_install_deps() {
  [ -n "${GPUHASH_SKIP_DEPS:-}" ] && return 0
  local need=() incdir pkglib sharedir build_only=0
  [ "${1:-}" = --build-only ] && build_only=1
  # each thing the build and the tests read, checked on its own: pg_config on
  # PATH (libpq-dev ships it) proves neither the server headers nor PGXS
  command -v pg_config >/dev/null 2>&1 || need+=(postgresql-server-dev-15)
  incdir=$(pg_config --includedir-server 2>/dev/null)
  [ -n "$incdir" ] && [ -f "$incdir/postgres.h" ] || need+=(postgresql-server-dev-15)
  pkglib=$(pg_config --pgxs 2>/dev/null)
  [ -n "$pkglib" ] && [ -f "$pkglib" ] || need+=(postgresql-server-dev-15)
  [ -x /usr/lib/postgresql/15/bin/postgres ] || command -v postgres >/dev/null 2>&1 || need+=(postgresql-15)
  command -v make >/dev/null 2>&1 || need+=(make)
  command -v gcc >/dev/null 2>&1 || need+=(gcc)
  # nvcc's host compiler
  command -v g++ >/dev/null 2>&1 || need+=(g++)
  if [ "$build_only" = 1 ]; then
    gh_apt_install --build-only "${need[@]}"
    return
  fi
  [ -x "$(dirname "${pkglib:-/nonexistent}")/../test/regress/pg_regress" ] || need+=(postgresql-server-dev-15)
  command -v pg_prove >/dev/null 2>&1 || need+=(libtap-parser-sourcehandler-pgtap-perl)
  # the TAP tests (test/t): PostgreSQL::Test::Cluster comes with the server
  # headers (above), prove with perl, IPC::Run apart
  command -v prove >/dev/null 2>&1 || need+=(perl)
  perl -MIPC::Run -e 1 >/dev/null 2>&1 || need+=(libipc-run-perl)
  command -v sqlsmith >/dev/null 2>&1 || need+=(sqlsmith)
  command -v python3 >/dev/null 2>&1 || need+=(python3)
  command -v pgbench >/dev/null 2>&1 || [ -x /usr/lib/postgresql/15/bin/pgbench ] || need+=(postgresql-contrib)
  # make coverage (GPUHASH_COVERAGE=1) only: gcov comes with gcc, lcov apart
  if [ "${GPUHASH_COVERAGE:-}" = 1 ]; then
    command -v lcov >/dev/null 2>&1 && command -v genhtml >/dev/null 2>&1 || need+=(lcov)
  fi
  sharedir=$(pg_config --sharedir 2>/dev/null)
  [ -n "$sharedir" ] && [ -f "$sharedir/extension/pgtap.control" ] || need+=(postgresql-15-pgtap)
  gh_apt_install --all "${need[@]}"
}

# gh_apt_install MODE PACKAGE...: apt-get install the packages named (none:
# does nothing), then gh_install_deps once more in the same MODE
# (--build-only or --all) to check that they brought what it looks for
gh_apt_install() {
  local mode=$1; shift
  local need=("$@")
  [ ${#need[@]} -eq 0 ] && return 0
  # shellcheck disable=SC2207
  need=($(printf '%s\n' "${need[@]}" | sort -u))
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "missing: ${need[*]}; install them (Debian: apt-get install ${need[*]})" >&2
    return 1
  fi
  echo "installing ${need[*]}"
  if ! { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive \
         apt-get install -y -qq "${need[@]}" >/dev/null; }; then
    echo "apt-get could not install ${need[*]}" >&2
    return 1
  fi
  # check again: a package that installed but did not bring what we look for
  GPUHASH_DEPS_RETRY=${GPUHASH_DEPS_RETRY:-0}
  if [ "$GPUHASH_DEPS_RETRY" = 0 ]; then
    GPUHASH_DEPS_RETRY=1 gh_install_deps "$mode"
  else
    echo "still missing after installing: ${need[*]}" >&2
    return 1
  fi
}

# gh_pg_bindir: PostgreSQL's server programs (initdb, pg_ctl, postgres)
gh_pg_bindir() { pg_config --bindir; }

# GH_OSUSER: the user that runs clusters (postgres here, pgrun on a GPU host)
if [ "$(id -u)" -eq 0 ]; then
  GH_OSUSER=${GPUHASH_OSUSER:-$(id -u postgres >/dev/null 2>&1 && echo postgres || echo pgrun)}
  id "$GH_OSUSER" >/dev/null 2>&1 || useradd -m "$GH_OSUSER"
else
  GH_OSUSER=$(id -un)
fi

# gh_as_pg CMD...: run a command as GH_OSUSER, keeping the paths we need
gh_as_pg() {
  if [ "$(id -u)" -eq 0 ]; then
    local q v envs=(PATH="$PATH")
    # GCOV_*: where a coverage build's servers write their counts
    # (test/coverage.sh); EXTRA_REGRESS_OPTS: pg_regress's, e.g. --port
    for v in LD_LIBRARY_PATH PERL5LIB PGHOST PGPORT PGUSER PGDATABASE PGOPTIONS \
             GCOV_PREFIX GCOV_PREFIX_STRIP EXTRA_REGRESS_OPTS; do
      [ -n "${!v:-}" ] && envs+=("$v=${!v}")
    done
    q=$(printf '%q ' env "${envs[@]}" "$@")
    su -s /bin/bash "$GH_OSUSER" -c "cd /tmp && $q"
  else
    "$@"
  fi
}

# gh_tmpdir: a fresh directory owned by GH_OSUSER
gh_tmpdir() {
  local d
  d=$(mktemp -d /tmp/gpuhash.XXXXXX)
  chmod 755 "$d"
  [ "$(id -u)" -eq 0 ] && chown "$GH_OSUSER" "$d"
  echo "$d"
}

# gh_readable_copy DIR PATH...: copy the checkout's PATHs into DIR, at the
# same relative paths (bench/tpch is DIR/bench/tpch), readable by GH_OSUSER
# (who may not read the checkout itself: /root is mode 700)
gh_readable_copy() {
  local dir=$1; shift
  mkdir -p "$dir" && (cd "$GPUHASH_ROOT" && cp -r --parents "$@" "$dir/") && chmod -R a+rX "$dir"
}

# gh_regress_suites: the pg_regress suites (sql/NAME.sql) in test/schedule's
# order, as the Makefile's REGRESS reads them
gh_regress_suites() { sed -n 's/^test: *//p' "$GPUHASH_ROOT/test/schedule"; }

# gh_free_port: a port that no server uses, from GPUHASH_PORTS ("FIRST
# LAST", default 54320 54420: a machine shared by several runs gives each its
# own range): nothing listens on it over TCP, and no Unix socket of that
# port is bound in any directory (/proc/net/unix), since the clusters of
# other runs listen only on sockets in their own directories
gh_free_port() {
  local p
  # shellcheck disable=SC2086
  for p in $(seq ${GPUHASH_PORTS:-54320 54420}); do
    if ! (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null && [ ! -e /tmp/.s.PGSQL.$p ] &&
       ! grep -q "/\.s\.PGSQL\.$p\$" /proc/net/unix 2>/dev/null; then
      echo $p; return 0
    fi
  done
  return 1
}

# gh_cluster_start DIR PORT [EXTRA_CONF] [BINDIR]: initdb + start with gpuhash
# preloaded, with the PostgreSQL of BINDIR (default the system's); exports
# PGHOST, PGPORT, PGUSER, PGDATABASE for the clients that follow.
gh_cluster_start() {
  local dir=$1 port=$2 extra=${3:-} bin=${4:-$(gh_pg_bindir)}
  gh_cluster_init "$dir" "$port" "$extra" "$bin" || return 1
  gh_as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w start >/dev/null \
    || { cat "$dir/server.log"; return 1; }
  export PGHOST=$dir PGPORT=$port PGUSER=postgres PGDATABASE=postgres
}

# gh_cluster_init DIR PORT [EXTRA_CONF] [BINDIR]: initdb a throwaway cluster in
# DIR/data (socket in DIR, gpuhash preloaded, fsync and JIT off), then append
# EXTRA_CONF, whose lines win over the ones before; for scripts that start the
# server their own way (under valgrind, compute-sanitizer, ASan)
gh_cluster_init() {
  local dir=$1 port=$2 extra=${3:-} bin=${4:-$(gh_pg_bindir)}
  gh_as_pg "$bin/initdb" -D "$dir/data" -U postgres --no-sync -A trust >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log"; return 1; }
  cat >>"$dir/data/postgresql.conf" <<CONF
port = $port
listen_addresses = ''
unix_socket_directories = '$dir'
shared_preload_libraries = 'gpuhash'
fsync = off
jit = off
max_parallel_workers_per_gather = 2
$extra
CONF
}

# gh_private_pg PREFIX: copy the system's PostgreSQL installation (the
# directory above bindir, sharedir and the server headers) under PREFIX, so
# that an extension can be installed into the copy without touching the
# system's.  Debian's installation is relocatable (pg_config and the server
# find their directories relative to the binaries).  Prints the copy's
# pg_config; fails when the copy does not find its own directories.
gh_private_pg() {
  local prefix=$1 sysbin d pgc
  sysbin=$(pg_config --bindir)			# e.g. /usr/lib/postgresql/15/bin
  for d in "$(dirname "$sysbin")" "$(pg_config --sharedir)" "$(dirname "$(pg_config --includedir-server)")"; do
    mkdir -p "$prefix$(dirname "$d")" && cp -a "$d" "$prefix$(dirname "$d")/" || return 1
  done
  pgc=$prefix$sysbin/pg_config
  if [ "$("$pgc" --pkglibdir)" != "$prefix$(pg_config --pkglibdir)" ]; then
    echo "the copied installation is not relocatable ($("$pgc" --pkglibdir))" >&2
    return 1
  fi
  echo "$pgc"
}

# gh_installcheck WORK DEVICE EXPECT_GPU EXTRA_CONF LOG [MAKE ARGS]: PGXS's
# make installcheck without the TAP tests, as GH_OSUSER in a readable copy
# of the tree (WORK/tree, which the caller removes with WORK), each instance
# with test/regress.conf and then gpuhash.device = DEVICE, the tests'
# expectation of a GPU (on or off) and EXTRA_CONF; output to LOG, make's
# status returned.  test/run.sh and test/gpuhost_regress.sh run the suites so.
gh_installcheck() {
  local work=$1 device=$2 expect=$3 extra=$4 log=$5; shift 5
  gh_readable_copy "$work/tree" Makefile gpuhash.control gpuhash--*.sql src cuda sql expected test || return 1
  [ "$(id -u)" -eq 0 ] && chown -R "$GH_OSUSER" "$work/tree"
  printf 'gpuhash.device = %s\ngpuhash_test.gpu = %s\n%s\n' "$device" "$expect" "$extra" >"$work/device.conf"
  chmod a+r "$work/device.conf"
  gh_as_pg make -C "$work/tree" --no-print-directory installcheck PG_CONFIG="$(command -v pg_config)" \
    GPUHASH_TEST_CONF="$work/device.conf" TAP_TESTS= "$@" >"$log" 2>&1
}

# gh_cluster_stop DIR
gh_cluster_stop() {
  gh_as_pg "$(gh_pg_bindir)/pg_ctl" -D "$1/data" -m fast -w stop >/dev/null 2>&1 || true
}

# gh_build_install LOG [MAKE ARGS]: build and install the extension (needs
# write access to pg_config's directories: root, or a user who owns them)
gh_build_install() {
  local log=$1; shift
  if ! (cd "$GPUHASH_ROOT" && make clean && make "$@" && make install "$@") >"$log" 2>&1; then
    tail -40 "$log"; return 1
  fi
}

# gh_tap_perl5lib: where PostgreSQL's TAP modules (PostgreSQL::Test::Cluster,
# shipped with the server headers under pgxs) and gpuhash's own
# (test/perl) are, then PERL5LIB as it was (a GPU host's IPC::Run)
gh_tap_perl5lib() {
  local pgxs
  pgxs=$(pg_config --pgxs) || return 1
  echo "$(cd "$(dirname "$pgxs")/../test/perl" && pwd):$GPUHASH_ROOT/test/perl${PERL5LIB:+:$PERL5LIB}"
}

# gh_tap_check: whether perl, prove, IPC::Run and PostgreSQL's TAP modules
# are all here; says which is missing (perl -c: loads them without running
# PostgreSQL::Test::Utils's INIT, which makes tmp_check/ where it stands)
gh_tap_check() {
  local m
  command -v perl >/dev/null 2>&1 || { echo "perl is not installed: the TAP tests cannot run" >&2; return 1; }
  command -v prove >/dev/null 2>&1 || { echo "prove (perl's Test::Harness) is not installed: the TAP tests cannot run" >&2; return 1; }
  for m in Test::More IPC::Run PostgreSQL::Test::Cluster; do
    PERL5LIB=$(gh_tap_perl5lib) perl -M"$m" -c -e 1 >/dev/null 2>&1 ||
      { echo "perl cannot load $m (Debian: libipc-run-perl, postgresql-server-dev-15): the TAP tests cannot run" >&2; return 1; }
  done
}

# gh_prove LOGDIR TEST... [:: ARGS]: run TAP tests (test/t/NNN_name.pl) with
# prove -v as GH_OSUSER, from a copy of the checkout's test/, sql/, shard/
# and bench/tpch/ (with the TPC-H tools build.sh left there) that this user
# can read; the TAP goes to stdout, the tests' own logs
# (regress_log_NAME, the servers' logs) to LOGDIR; ARGS after :: go to each
# test.  Passes GPUHASH_* and MEMAGG_* through; returns prove's status.
gh_prove() {
  local logdir=$1 work rc v tests=() envs=(); shift
  gh_tap_check || return 1
  work=$(gh_tmpdir)
  gh_readable_copy "$work/tree" test sql shard bench/tpch || return 1
  [ "$(id -u)" -eq 0 ] && chown -R "$GH_OSUSER" "$work"
  while [ $# -gt 0 ] && [ "$1" != :: ]; do tests+=("$work/tree/$1"); shift; done
  for v in $(compgen -e); do
    case $v in GPUHASH_ROOT) ;; GPUHASH_*|MEMAGG_*) envs+=("$v=${!v}") ;; esac
  done
  # PostgreSQL::Test::Cluster runs initdb, pg_ctl and postgres by name:
  # Debian keeps them in the version's bindir, which is not on PATH
  PERL5LIB=$(GPUHASH_ROOT=$work/tree gh_tap_perl5lib) gh_as_pg env "${envs[@]}" TESTDIR="$work" \
    PATH="$(gh_pg_bindir):$PATH" \
    PG_REGRESS="$(dirname "$(pg_config --pgxs)")/../test/regress/pg_regress" \
    prove -v "${tests[@]}" "$@"
  rc=$?
  mkdir -p "$logdir" && cp -r "$work/tmp_check/log/." "$logdir/" 2>/dev/null
  rm -rf "$work"
  return $rc
}
