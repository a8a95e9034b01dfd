#!/bin/bash
# demo.sh - the main job: build and install gpuhash, start a throwaway cluster
# in a temporary directory on a free port, load sample data, show what gpuhash
# does (devices, settings, a join and a plain GROUP BY, each with its plan,
# its timings natively and with gpuhash, and a check that the rows are
# PostgreSQL's), then stop the cluster.  Every step says how long the demo
# has run so far ("[ 12.3s] ...").  It installs only what the build needs
# (gh_install_deps --build-only), not the test tools.
#
#   ./demo.sh                     rows: 1000000 x 100000 (GPUHASH_DEMO_ROWS)
#   GPUHASH_DEMO_DEVICE=gpu ./demo.sh    on a GPU host
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/test/lib.sh"
rows=${GPUHASH_DEMO_ROWS:-1000000}
device=${GPUHASH_DEMO_DEVICE:-auto}
buildlog=/tmp/gpuhash-demo-build.log

# say MESSAGE: MESSAGE after the time since the demo started
t0=${EPOCHREALTIME/[.,]/}
say() {
  local us=$((${EPOCHREALTIME/[.,]/} - t0))
  printf '[%5d.%ds] %s\n' $((us / 1000000)) $((us / 100000 % 10)) "$*"
}

# long MESSAGE COMMAND...: say MESSAGE, run COMMAND and say every 20 seconds
# that it still runs, then how long it took; returns COMMAND's status
long() {
  local msg=$1 start=${EPOCHREALTIME/[.,]/} pid rc=0 n=0 us; shift
  say "$msg ..."
  # 0<&0: a background job's stdin is otherwise /dev/null, and psql reads its heredoc
  "$@" 0<&0 & pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 0.2
    n=$((n + 1))
    [ $((n % 100)) -eq 0 ] && kill -0 "$pid" 2>/dev/null && say "  ... still running"
  done
  wait "$pid" || rc=$?
  us=$((${EPOCHREALTIME/[.,]/} - start))
  if [ "$rc" -eq 0 ]; then
    say "  done in $((us / 1000000)).$((us / 100000 % 10))s"
  else
    say "  FAILED (exit $rc)"
  fi
  return "$rc"
}

do_build() { (cd "$here" && make clean && make) >"$buildlog" 2>&1 || { tail -40 "$buildlog"; return 1; }; }
do_install() { (cd "$here" && make install) >>"$buildlog" 2>&1 || { tail -40 "$buildlog"; return 1; }; }
q() { gh_as_pg psql -X -q -v ON_ERROR_STOP=1 -d postgres "$@"; }

long "installing the build dependencies if missing (PostgreSQL 15's server headers, gcc)" \
  gh_install_deps --build-only
long "building gpuhash (log: $buildlog; nvcc makes this the longest step)" do_build
long "installing gpuhash into $(pg_config --pkglibdir)" do_install
dir=$(gh_tmpdir)
port=$(gh_free_port)
trap 'gh_cluster_stop "$dir"; rm -rf "$dir"' EXIT
long "starting a throwaway cluster in $dir on port $port" \
  gh_cluster_start "$dir" "$port" "gpuhash.device = $device"
# gh_cluster_start exports PGHOST and PGPORT for psql, which a background job cannot
export PGHOST=$dir PGPORT=$port PGUSER=postgres PGDATABASE=postgres

long "loading $rows rows into s and $((rows / 10)) into r" q <<SQL
CREATE EXTENSION gpuhash;
CREATE TABLE r AS SELECT g AS k, g % 1000 AS v FROM generate_series(1, $rows / 10) g;
CREATE TABLE s AS SELECT (random() * ($rows / 10))::int AS k, g AS v FROM generate_series(1, $rows) g;
ANALYZE r; ANALYZE s;
SQL

gpus=$(q -At -c "SELECT count(*) FROM gpuhash_devices()")
if [ "$gpus" -gt 0 ]; then
  dev=gpu force=off costgpu=off
  say "$gpus GPU(s): gpuhash runs on the GPU and plans its nodes where its cost model says they are faster"
else
  dev=cpu force=on costgpu=on
  say "no GPU here: gpuhash runs on its CPU twin (gpuhash.device = cpu), the same executor path"
  echo "          without the GPU; the twin is not meant to beat PostgreSQL, so the join is forced"
  echo "          (gpuhash.force_join = on) and the GROUP BY is planned with the GPU's cost model"
  echo "          (gpuhash.cost_as_gpu = on): the plans a GPU host chooses, run on the CPU"
fi

q <<'SQL'
\echo '== GPUs this backend can use (none on a host without a GPU)'
SELECT * FROM gpuhash_devices();
\echo '== settings (developer options left out)'
SELECT name, setting, short_desc FROM pg_settings
 WHERE name LIKE 'gpuhash.%' AND category <> 'Developer Options' ORDER BY name;
SQL

# gpuhash's settings for the "with gpuhash" halves
gpuhash_on="SET gpuhash.enabled = on; SET gpuhash.device = $dev; SET gpuhash.force_join = $force;
SET gpuhash.cost_as_gpu = $costgpu;"

# plan_has QUERY NODE: fails the demo unless QUERY's plan with gpuhash has NODE
plan_has() {
  if ! q -At -c "$gpuhash_on" -c "EXPLAIN (COSTS OFF) $1" | grep -q "Custom Scan ($2)"; then
    say "  the plan with gpuhash has no $2: gpuhash did not take this query"
    exit 1
  fi
}

join="SELECT count(*), sum(r.v) FROM s JOIN r ON s.k = r.k"
say "the join, natively (gpuhash.enabled = off): $join"
q -v query="$join" <<'SQL'
SET gpuhash.enabled = off;
EXPLAIN (COSTS OFF) :query;
\timing on
:query;
:query;
\timing off
SQL
native_join=$(q -At -c "SET gpuhash.enabled = off" -c "$join")

say "the same join with gpuhash, on device '$dev' ($([ "$dev" = gpu ] && echo "the GPU" || echo "the CPU twin: no GPU here"))"
q -v query="$join" <<SQL
$gpuhash_on
SELECT gpuhash_active_device() AS "device that runs gpuhash";
EXPLAIN (ANALYZE, COSTS OFF) :query;
\\timing on
:query;
:query;
\\timing off
SQL
gpuhash_join=$(q -At -c "$gpuhash_on" -c "$join")
plan_has "$join" GpuHashJoin
if [ "$native_join" = "$gpuhash_join" ]; then
  say "  the join's result is PostgreSQL's: count|sum = $gpuhash_join both ways"
else
  say "  DIFFERENT results: PostgreSQL $native_join, gpuhash $gpuhash_join"
  exit 1
fi

agg="SELECT k, count(*), sum(v) FROM s GROUP BY k"
say "a plain GROUP BY, natively (gpuhash.enabled = off): $agg"
q -v query="$agg" <<'SQL'
SET gpuhash.enabled = off;
EXPLAIN (COSTS OFF) :query;
\echo '(result rows not shown: one per k)'
\timing on
\o /dev/null
:query;
:query;
\o
\timing off
SQL

say "the same GROUP BY with gpuhash, on device '$dev', as GpuHashAgg with no change to the SQL"
q -v query="$agg" <<SQL
$gpuhash_on
SELECT gpuhash_active_device() AS "device that runs gpuhash";
EXPLAIN (ANALYZE, COSTS OFF) :query;
\\echo '(result rows not shown: one per k)'
\\timing on
\\o /dev/null
:query;
:query;
\\o
\\timing off
SQL

plan_has "$agg" GpuHashAgg
say "checking that the GROUP BY's rows are PostgreSQL's (EXCEPT ALL both ways)"
q -v query="$agg" <<SQL
SET gpuhash.enabled = off;
CREATE TABLE agg_native AS :query;
$gpuhash_on
CREATE TABLE agg_gpuhash AS :query;
SET gpuhash.enabled = off;
SELECT (SELECT count(*) FROM agg_gpuhash) AS groups, g.n AS only_gpuhash, n.n AS only_native,
       g.n = 0 AND n.n = 0 AS same
  FROM (SELECT count(*) AS n FROM (TABLE agg_gpuhash EXCEPT ALL TABLE agg_native) d) g,
       (SELECT count(*) AS n FROM (TABLE agg_native EXCEPT ALL TABLE agg_gpuhash) d) n \\gset
\\if :same
\\echo '          the GROUP BY''s' :groups 'rows are PostgreSQL''s: none only with gpuhash, none only natively'
\\else
\\echo '          DIFFERENT rows:' :only_gpuhash 'only with gpuhash,' :only_native 'only natively'
DO \$\$BEGIN RAISE EXCEPTION 'gpuhash''s GROUP BY rows differ from PostgreSQL''s'; END\$\$;
\\endif
SQL

say "an ad-hoc GROUP BY over a join with gpuhash_aggregate(query), then the same query natively"
q -v dev="$dev" <<'SQL'
SET gpuhash.device = :'dev';
\timing on
SELECT * FROM gpuhash_aggregate('SELECT s.k % 5 AS g, count(*), sum(s.v), avg(r.v), min(r.v), max(r.v)
                                  FROM s JOIN r ON s.k = r.k GROUP BY 1')
         AS t(g int, n bigint, total bigint, mean numeric, lo int, hi int) ORDER BY g;
\timing off
SET gpuhash.enabled = off;
\timing on
SELECT s.k % 5 AS g, count(*), sum(s.v), avg(r.v), min(r.v), max(r.v)
  FROM s JOIN r ON s.k = r.k GROUP BY 1 ORDER BY g;
\timing off
SQL
long "stopping the cluster" gh_cluster_stop "$dir"
say "demo finished"
