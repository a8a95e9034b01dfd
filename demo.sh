#!/bin/bash
# demo.sh - the main job: build and install gpuhash, start a throwaway cluster
# in a temporary directory on a free port, load sample data, show what gpuhash
# does (devices, settings, a join plan and its timings natively and with
# gpuhash), then stop the cluster.
#
#   ./demo.sh                     rows: 1000000 x 100000 (GPUHASH_DEMO_ROWS)
#   GPUHASH_DEMO_DEVICE=gpu ./demo.sh    on a GPU host
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/test/lib.sh"
rows=${GPUHASH_DEMO_ROWS:-1000000}
device=${GPUHASH_DEMO_DEVICE:-auto}

echo "== installing dependencies (if missing)"
gh_install_deps
echo "== building and installing gpuhash"
gh_build_install /tmp/gpuhash-demo-build.log
dir=$(gh_tmpdir)
port=$(gh_free_port)
trap 'gh_cluster_stop "$dir"; rm -rf "$dir"' EXIT
echo "== starting a throwaway cluster in $dir on port $port"
gh_cluster_start "$dir" "$port" "gpuhash.device = $device"
q() { gh_as_pg psql -X -v ON_ERROR_STOP=1 -d postgres "$@"; }

q -q <<SQL
CREATE EXTENSION gpuhash;
CREATE TABLE r AS SELECT g AS k, g % 1000 AS v FROM generate_series(1, $rows / 10) g;
CREATE TABLE s AS SELECT (random() * ($rows / 10))::int AS k, g AS v FROM generate_series(1, $rows) g;
ANALYZE r; ANALYZE s;
SQL

gpus=$(q -qAt -c "SELECT count(*) FROM gpuhash_devices()")
if [ "$gpus" -gt 0 ]; then
  dev=gpu force=off
  echo "== $gpus GPU(s): gpuhash plans GpuHashJoin where its cost model says it is faster"
else
  dev=cpu force=on
  echo "== no GPU here: the demo runs gpuhash's CPU twin (gpuhash.device = cpu) and forces the"
  echo "   GPU join plan (gpuhash.force_join = on), since the twin is not meant to beat PostgreSQL"
fi

q -v dev="$dev" -v force="$force" <<'SQL'
\echo '== GPUs this backend can use (none on a host without a GPU)'
SELECT * FROM gpuhash_devices();
\echo '== settings'
SELECT name, setting, short_desc FROM pg_settings WHERE name LIKE 'gpuhash.%' ORDER BY name;
\echo '== the join, natively (gpuhash.enabled = off)'
SET gpuhash.enabled = off;
EXPLAIN (COSTS OFF) SELECT count(*), sum(r.v) FROM s JOIN r ON s.k = r.k;
\timing on
SELECT count(*), sum(r.v) FROM s JOIN r ON s.k = r.k;
SELECT count(*), sum(r.v) FROM s JOIN r ON s.k = r.k;
\timing off
\echo '== the same join with gpuhash'
SET gpuhash.enabled = on;
SET gpuhash.device = :'dev';
SET gpuhash.force_join = :'force';
SELECT gpuhash_active_device() AS device;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT count(*), sum(r.v) FROM s JOIN r ON s.k = r.k;
\timing on
SELECT count(*), sum(r.v) FROM s JOIN r ON s.k = r.k;
SELECT count(*), sum(r.v) FROM s JOIN r ON s.k = r.k;
\timing off
\echo '== an ad-hoc GROUP BY on the device: gpuhash_aggregate, then the same query natively'
\timing on
SELECT * FROM gpuhash_aggregate('SELECT s.k % 5 AS g, count(*), sum(s.v), avg(r.v), min(r.v), max(r.v)
                                  FROM s JOIN r ON s.k = r.k GROUP BY 1')
         AS t(g int, n bigint, total bigint, mean numeric, lo int, hi int) ORDER BY g;
SET gpuhash.enabled = off;
SELECT s.k % 5 AS g, count(*), sum(s.v), avg(r.v), min(r.v), max(r.v)
  FROM s JOIN r ON s.k = r.k GROUP BY 1 ORDER BY g;
\timing off
SQL
echo "== stopping the cluster"
