-- rare_paths: paths that no other suite reached under make coverage, each
-- compared with PostgreSQL's own result (gpuhash.enabled = off):
--   - a parallel GpuHashJoin below a Gather that a nested loop rescans, so
--     that the shared state is set up again for each run (the custom scan's
--     ReInitializeDSM), with and without batches;
--   - a GROUP BY of more keys than the device takes (GH_AGG_MAX_KEYS, 8), so
--     that the keys are checked on the host, past its budget: rows of groups
--     not in memory go to their partitions (gh_agg_spill_keep);
--   - a parallel join's DEBUG2 account of its shared build, in the log.
-- Uses join_setup's gh_check and gh_plan_count.

CREATE TABLE rp_a AS SELECT g AS k, g % 100 AS k2, g AS v FROM generate_series(1, 20000) g;
CREATE TABLE rp_b AS SELECT g % 5000 AS k, g AS w,
    CASE WHEN g % 10 = 0 THEN NULL ELSE 't' || (g % 5000) END AS kt
  FROM generate_series(1, 30000) g;
CREATE TABLE rp_f AS SELECT g AS x FROM generate_series(1, 3) g;
-- the outer side of the nested loop stays serial: the Gather is the inner
ALTER TABLE rp_f SET (parallel_workers = 0);
ANALYZE rp_a, rp_b, rp_f;

SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET enable_material = off;

-- the Gather of a parallel GpuHashJoin is the inner side of the nested
-- loop (the only join for j.k2 < f.x), run once per outer row (OFFSET 0
-- keeps the subquery whole, enable_material = off keeps it from being
-- read once and kept)
CREATE TEMP TABLE rp_q (n int, q text);
INSERT INTO rp_q VALUES
  (1, 'SELECT f.x, count(*), sum(j.w) FROM rp_f f JOIN (SELECT a.k2, b.w FROM rp_a a JOIN rp_b b ON a.k = b.k OFFSET 0) j ON j.k2 < f.x GROUP BY f.x'),
  (2, 'SELECT f.x, count(*), sum(j.w) FROM rp_f f JOIN (SELECT a.k2, b.w FROM rp_a a LEFT JOIN rp_b b ON a.k = b.k OFFSET 0) j ON j.k2 < f.x GROUP BY f.x'),
  (3, 'SELECT f.x, count(*), count(j.kt) FROM rp_f f JOIN (SELECT a.k2, b.kt FROM rp_a a JOIN rp_b b ON ''t'' || a.k = b.kt OFFSET 0) j ON j.k2 < f.x GROUP BY f.x');
-- the plans that run: a Gather under the nested loop, holding the join
SELECT n, gh_plan_count(q, 'gpuhash', 'Nested Loop') > 0 AS nested,
       gh_plan_count(q, 'gpuhash', 'Gather') > 0 AS gather,
       gh_plan_count(q, 'gpuhash', 'Parallel Custom Scan \(GpuHashJoin\)') > 0 AS parallel_join
  FROM rp_q ORDER BY n;
SELECT n, gh_check(q) AS rescanned_gather FROM rp_q ORDER BY n;
-- again with batches: each run partitions the inner side afresh
SET work_mem = '64kB';
SELECT n, gh_check(q) AS rescanned_gather_batches FROM rp_q ORDER BY n;
RESET work_mem;

-- the participants' DEBUG2 accounts of the shared build go to the log
-- (log_min_messages; the client sees nothing): writing them must not fail
SET log_min_messages = debug2;
SELECT gh_check('SELECT a.k2, b.w FROM rp_a a JOIN rp_b b ON a.k = b.k') AS debug2_accounts;
RESET log_min_messages;
RESET enable_material;

-- an UPDATE of a partitioned table carries row identity columns through the
-- joins; a join whose columns include an expression (here the placeholder
-- for coalesce under the outer join) is checked for them.  The same UPDATE
-- runs natively on a copy, and the two tables must end up equal.
CREATE TABLE rp_pt (k int, v int) PARTITION BY RANGE (k);
CREATE TABLE rp_pt1 PARTITION OF rp_pt FOR VALUES FROM (0) TO (500);
CREATE TABLE rp_pt2 PARTITION OF rp_pt FOR VALUES FROM (500) TO (1000);
CREATE TABLE rp_pn (k int, v int) PARTITION BY RANGE (k);
CREATE TABLE rp_pn1 PARTITION OF rp_pn FOR VALUES FROM (0) TO (500);
CREATE TABLE rp_pn2 PARTITION OF rp_pn FOR VALUES FROM (500) TO (1000);
INSERT INTO rp_pt SELECT g, g FROM generate_series(0, 999) g;
INSERT INTO rp_pn SELECT * FROM rp_pt;
CREATE TABLE rp_pb AS SELECT g AS k FROM generate_series(0, 999, 3) g;
CREATE TABLE rp_pc AS SELECT g AS k, CASE WHEN g % 4 = 0 THEN g END AS w FROM generate_series(0, 999, 2) g;
ANALYZE rp_pt, rp_pn, rp_pb, rp_pc;
SELECT gh_plan_count('UPDATE rp_pt SET v = s.c FROM rp_pb b LEFT JOIN (SELECT k, coalesce(w, -1) AS c FROM rp_pc) s ON s.k = b.k WHERE rp_pt.k = b.k',
                     'gpuhash') AS gpu_joins_in_update;
SELECT gh_set_mode('native');
UPDATE rp_pn SET v = s.c FROM rp_pb b LEFT JOIN (SELECT k, coalesce(w, -1) AS c FROM rp_pc) s ON s.k = b.k WHERE rp_pn.k = b.k;
SELECT gh_set_mode('gpuhash');
UPDATE rp_pt SET v = s.c FROM rp_pb b LEFT JOIN (SELECT k, coalesce(w, -1) AS c FROM rp_pc) s ON s.k = b.k WHERE rp_pt.k = b.k;
RESET gpuhash.force_join;
RESET gpuhash.enabled;
CREATE TEMP TABLE rp_pn_r AS SELECT t::text AS r FROM rp_pn t;
CREATE TEMP TABLE rp_pt_r AS SELECT t::text AS r FROM rp_pt t;
SELECT count(*) AS updated_rows, gh_diff('rp_pn_r', 'rp_pt_r') AS diff FROM rp_pn WHERE v IS DISTINCT FROM k;
DROP TABLE rp_pt, rp_pn, rp_pb, rp_pc, rp_pn_r, rp_pt_r;

-- nine GROUP BY keys: more than the device groups, so the host checks them;
-- a 64kB budget spills most rows to partitions.  rp_agg_check compares the
-- rows of query under GpuHashAgg (forced) or gpuhash_aggregate with the
-- native rows as multisets, and says whether the run spilled.
CREATE TABLE rp_mk AS
  SELECT g % 7 AS a, g % 11 AS b, g % 13 AS c, g % 17 AS d, g % 19 AS e,
         g % 23 AS f, g % 29 AS h, g % 31 AS i, (g % 37)::text AS j, g AS v
    FROM generate_series(1, 60000) g;
ANALYZE rp_mk;
CREATE FUNCTION rp_agg_check(query text, via text, OUT groups bigint, OUT diff bigint,
                             OUT spilled boolean)
LANGUAGE plpgsql AS $f$
DECLARE
  run text := CASE via WHEN 'node' THEN query
    ELSE format('SELECT * FROM gpuhash_aggregate(%L) AS t(a int, b int, c int, d int, e int, f int, h int, i int, j text, count bigint, sum bigint)', query) END;
  plan json;
BEGIN
  PERFORM set_config('gpuhash.enabled', 'off', true);
  EXECUTE format('CREATE TEMP TABLE rp_native AS SELECT r::text AS r FROM (%s) r', query);
  GET DIAGNOSTICS groups = ROW_COUNT;
  PERFORM set_config('gpuhash.enabled', 'on', true);
  PERFORM set_config('gpuhash.force_agg', 'on', true);
  EXECUTE format('CREATE TEMP TABLE rp_gpu AS SELECT r::text AS r FROM (%s) r', run);
  EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, FORMAT JSON) ' || run INTO plan;
  spilled := (plan->0->'Plan'->>'Spilled Rows')::bigint > 0;
  diff := gh_diff('rp_native', 'rp_gpu');
  DROP TABLE rp_native, rp_gpu;
END
$f$;
SET max_parallel_workers_per_gather = 0;
SET gpuhash.batch_rows = 1000;
SET work_mem = '64kB';
SELECT via, (rp_agg_check('SELECT a, b, c, d, e, f, h, i, j, count(*), sum(v) FROM rp_mk GROUP BY a, b, c, d, e, f, h, i, j', via)).*
  FROM (VALUES ('node'), ('function')) v(via) ORDER BY via;
RESET work_mem;
RESET gpuhash.batch_rows;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

DROP FUNCTION rp_agg_check(text, text);
DROP TABLE rp_a, rp_b, rp_f, rp_mk;
