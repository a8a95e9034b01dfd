# bench/lib.sh - the cluster the join and TPC-H benchmarks run in (sourced
# after test/lib.sh, by bench/join/run.sh and bench/tpch/run.sh), and the
# settings every benchmark cluster starts with (bench_conf, also for
# bench/agg/run.sh and bench/scan/run.sh).
#
#   bench_cluster REUSE DATADIR CONF EXTRA_CONF LOG
#     sets cl (its directory) and port, and exports PGHOST and friends for
#     psql.  With REUSE, the cluster a --keep run left there: started if it
#     is down, and with EXTRA_CONF appended to its postgresql.conf (later
#     lines win) and restarted.  Otherwise a new cluster in DATADIR (a
#     temporary directory when empty) with bench_conf's lines, then CONF,
#     then EXTRA_CONF; the caller's say() reports where.
#   bench_cluster_done KEEP REUSE
#     stops and removes a new cluster unless KEEP, else says how to reuse it.

# bench_conf: the postgresql.conf lines every benchmark cluster starts with:
# a worker pool for up to 32 parallel workers, a quarter of the memory
# (at most 16 GB, or BENCH_SHARED_BUFFERS) as shared buffers, no checkpoint
# or JIT in the middle of a timing.
bench_conf() {
  echo "max_worker_processes = 40
max_parallel_workers = 32
shared_buffers = ${BENCH_SHARED_BUFFERS:-$(awk '/^MemTotal/ { m = int($2 / 4 / 1024); if (m > 16384) m = 16384; print m "MB" }' /proc/meminfo)}
huge_pages = try
checkpoint_timeout = 30min
max_wal_size = 20GB
jit = off"
}

bench_cluster() {
  local reuse=$1 datadir=$2 conf=$3 extra_conf=$4 log=$5
  if [ -n "$reuse" ]; then
    cl=$(cd "$reuse" && pwd)
    port=$(sed -n 's/^port = //p' "$cl/data/postgresql.conf" | tail -1)
    if [ -n "$extra_conf" ]; then
      printf '%s\n' "$extra_conf" >>"$cl/data/postgresql.conf"
      gh_as_pg "$(gh_pg_bindir)/pg_ctl" -D "$cl/data" -m fast -w stop >/dev/null 2>&1 || true
    fi
    if ! gh_as_pg "$(gh_pg_bindir)/pg_ctl" -D "$cl/data" status >/dev/null 2>&1; then
      gh_as_pg "$(gh_pg_bindir)/pg_ctl" -D "$cl/data" -l "$cl/server.log" -w start >/dev/null
    fi
    export PGHOST=$cl PGPORT=$port PGUSER=postgres PGDATABASE=postgres
    return
  fi
  if [ -n "$datadir" ]; then
    mkdir -p "$datadir"; cl=$(cd "$datadir" && pwd)
    [ "$(id -u)" -eq 0 ] && chown "$GH_OSUSER" "$cl"
  else
    cl=$(gh_tmpdir)
  fi
  port=$(gh_free_port)
  say "cluster in $cl (port $port)"
  gh_cluster_start "$cl" "$port" "$(bench_conf)
$conf
$extra_conf" >>"$log" 2>&1 || { cat "$log" >&2; exit 1; }
}

bench_cluster_done() {
  local keep=$1 reuse=$2
  if [ "$keep" -eq 0 ] && [ -z "$reuse" ]; then
    gh_cluster_stop "$cl"; rm -rf "$cl"
  else
    say "cluster left running in $cl (port $port): --reuse $cl"
  fi
}
