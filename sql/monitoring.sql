-- monitoring: the cumulative statistics (gpuhash_stat_database,
-- gpuhash_stat_fallbacks), the GPU service's state (gpuhash_stat_service),
-- their privileges and the reset.  Every check compares the counters before
-- and after a statement, never their values, and holds on the CPU twin and
-- on a GPU host alike: where the device matters the check asks
-- gpuhash.device or gpuhash_test.gpu.  Fallbacks are forced with plans made
-- before a setting changes (prepared statements keep their plan): a plan of
-- gpuhash.device = cpu executed under "auto" on a host without a GPU, and a
-- table past gpuhash.device_memory_limit (on the twin under the test-only
-- gpuhash.budget_cpu_twin, which accounts its tables as the GPU's).
SET max_parallel_workers_per_gather = 0;
SET gpuhash.force_join = on;
CREATE TABLE mon_o AS SELECT g AS id, g % 4000 AS k FROM generate_series(1, 50000) g;
CREATE TABLE mon_i AS SELECT g AS k, g * 3 AS v FROM generate_series(0, 99999) g;
-- two keys of 50000 rows each: a hash table that no batching splits below
-- gpuhash.device_memory_limit = 1 (MB), on the GPU as on the twin
CREATE TABLE mon_s AS SELECT g % 2 AS k, g AS v FROM generate_series(1, 100000) g;
ANALYZE mon_o, mon_i, mon_s;

-- mon_now: this database's counters now (zeros before its first count).
-- The helpers run with gpuhash off: their own joins and aggregates are not
-- counted.
CREATE FUNCTION mon_now(OUT joins_gpu bigint, OUT joins_cpu bigint, OUT joins_fallback bigint,
                        OUT aggs_gpu bigint, OUT aggs_cpu bigint, OUT aggs_fallback bigint,
                        OUT join_ms float8, OUT agg_ms float8,
                        OUT join_spilled bigint, OUT agg_spilled bigint,
                        OUT to_device bigint, OUT from_device bigint)
LANGUAGE sql SET gpuhash.enabled = off AS $$
  SELECT coalesce(sum(joins_gpu), 0)::bigint, coalesce(sum(joins_cpu), 0)::bigint,
         coalesce(sum(joins_fallback), 0)::bigint, coalesce(sum(aggs_gpu), 0)::bigint,
         coalesce(sum(aggs_cpu), 0)::bigint, coalesce(sum(aggs_fallback), 0)::bigint,
         coalesce(sum(join_device_time), 0), coalesce(sum(agg_device_time), 0),
         coalesce(sum(join_batches_spilled), 0)::bigint, coalesce(sum(agg_batches_spilled), 0)::bigint,
         coalesce(sum(bytes_to_device), 0)::bigint, coalesce(sum(bytes_from_device), 0)::bigint
    FROM gpuhash_stat_database WHERE datname = current_database()
$$;
-- mon_fb_now(op, reason): this database's fallbacks of op for reason now
CREATE FUNCTION mon_fb_now(op text, why text) RETURNS bigint LANGUAGE sql
SET gpuhash.enabled = off AS $$
  SELECT coalesce(sum(fallbacks), 0)::bigint FROM gpuhash_stat_fallbacks
   WHERE datname = current_database() AND operator = op AND reason = why
$$;
CREATE TEMP TABLE mon_seen AS SELECT ''::text AS what, * FROM mon_now() WITH NO DATA;
-- mon_mark(what): remembers the counters now
CREATE FUNCTION mon_mark(what text) RETURNS void LANGUAGE sql
SET gpuhash.enabled = off AS $$
  DELETE FROM mon_seen WHERE mon_seen.what = mon_mark.what;
  INSERT INTO mon_seen SELECT what, * FROM mon_now();
$$;
-- mon_since(what): how much each counter grew since mon_mark(what)
CREATE FUNCTION mon_since(what text, OUT joins bigint, OUT joins_gpu bigint, OUT joins_cpu bigint,
                          OUT joins_fallback bigint, OUT aggs bigint, OUT aggs_gpu bigint,
                          OUT aggs_cpu bigint, OUT aggs_fallback bigint,
                          OUT join_ms float8, OUT agg_ms float8,
                          OUT join_spilled bigint, OUT agg_spilled bigint,
                          OUT to_device bigint, OUT from_device bigint)
LANGUAGE sql SET gpuhash.enabled = off AS $$
  SELECT (n.joins_gpu + n.joins_cpu + n.joins_fallback) - (s.joins_gpu + s.joins_cpu + s.joins_fallback),
         n.joins_gpu - s.joins_gpu, n.joins_cpu - s.joins_cpu, n.joins_fallback - s.joins_fallback,
         (n.aggs_gpu + n.aggs_cpu + n.aggs_fallback) - (s.aggs_gpu + s.aggs_cpu + s.aggs_fallback),
         n.aggs_gpu - s.aggs_gpu, n.aggs_cpu - s.aggs_cpu, n.aggs_fallback - s.aggs_fallback,
         n.join_ms - s.join_ms, n.agg_ms - s.agg_ms,
         n.join_spilled - s.join_spilled, n.agg_spilled - s.agg_spilled,
         n.to_device - s.to_device, n.from_device - s.from_device
    FROM mon_now() n, mon_seen s WHERE s.what = mon_since.what
$$;
-- on_gpu: whether this run's operators use a GPU (where they do not, they
-- run on the twin: gpuhash.device = cpu)
CREATE FUNCTION on_gpu() RETURNS bool LANGUAGE sql AS $$
  SELECT current_setting('gpuhash.device') <> 'cpu'
$$;
-- mon_nodes(stmt, node): how many nodes named node the plan of stmt has
CREATE FUNCTION mon_nodes(stmt text, node text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
  l text;
  n int := 0;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || stmt LOOP
    IF l LIKE '%' || node || '%' THEN n := n + 1; END IF;
  END LOOP;
  RETURN n;
END $$;
-- mon_batches(stmt): the batches of the first GpuHashJoin of stmt's
-- EXPLAIN ANALYZE (stmt runs)
CREATE FUNCTION mon_batches(stmt text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
  plan json;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, FORMAT JSON) ' || stmt INTO plan;
  RETURN (SELECT (j->>'Hash Batches')::int
            FROM jsonb_path_query(plan::jsonb, 'strict $.**') j
           WHERE j->>'Custom Plan Provider' = 'GpuHashJoin' LIMIT 1);
END $$;

-- the objects: views and functions for pg_read_all_stats, the reset for
-- superusers
SELECT p.oid::regprocedure AS function,
       has_function_privilege('pg_read_all_stats', p.oid, 'EXECUTE') AS read_all_stats,
       has_function_privilege('public', p.oid, 'EXECUTE') AS public
  FROM pg_proc p WHERE p.proname LIKE 'gpuhash\_stat\_%' ORDER BY 1;
SELECT c.relname AS view,
       has_table_privilege('pg_read_all_stats', c.oid, 'SELECT') AS read_all_stats,
       has_table_privilege('public', c.oid, 'SELECT') AS public
  FROM pg_class c WHERE c.relname LIKE 'gpuhash\_stat\_%' AND c.relkind = 'v' ORDER BY 1;

-- one serial join: one run, on the GPU or on the twin, with device time; a
-- join on the twin copies nothing to a GPU, one on the GPU does
SELECT mon_nodes('SELECT count(*) FROM mon_o o JOIN mon_i i ON o.k = i.k', 'GpuHashJoin') AS joins;
SELECT mon_mark('join');
SELECT count(*), sum(i.v) FROM mon_o o JOIN mon_i i ON o.k = i.k;
SELECT joins, joins_fallback,
       (CASE WHEN on_gpu() THEN joins_gpu ELSE joins_cpu END) = 1 AS on_its_device,
       join_ms > 0 AS device_time, (to_device > 0) = on_gpu() AS copies, aggs
  FROM mon_since('join');
-- PostgreSQL's rows, as a check that the counted join returned them
SET gpuhash.enabled = off;
SELECT count(*), sum(i.v) FROM mon_o o JOIN mon_i i ON o.k = i.k;
RESET gpuhash.enabled;
-- EXPLAIN without ANALYZE runs nothing and counts nothing; with ANALYZE,
-- one run
SELECT mon_mark('explain');
EXPLAIN (COSTS OFF) SELECT count(*) FROM mon_o o JOIN mon_i i ON o.k = i.k;
SELECT joins FROM mon_since('explain');
SELECT mon_batches('SELECT count(*) FROM mon_o o JOIN mon_i i ON o.k = i.k') > 0 AS batches;
SELECT joins FROM mon_since('explain');
-- a join rescanned (a correlated subquery's, once per outer row) is one run
SELECT mon_nodes('SELECT x, (SELECT count(*) FROM mon_o o JOIN mon_i i ON o.k = i.k WHERE o.id % 3 = v.x - 1) FROM (VALUES (1), (2), (3)) v(x)', 'SubPlan') AS subplans;
SELECT mon_mark('rescan');
SELECT x, (SELECT count(*) FROM mon_o o JOIN mon_i i ON o.k = i.k WHERE o.id % 3 = v.x - 1)
  FROM (VALUES (1), (2), (3)) v(x) ORDER BY x;
SELECT joins FROM mon_since('rescan');

-- a join in batches: the batches written to temporary files, as EXPLAIN
-- ANALYZE counts them (all but the first)
SET work_mem = '64kB';
SELECT mon_mark('batches');
CREATE TEMP TABLE mon_b AS
  SELECT mon_batches('SELECT count(*) FROM mon_o o JOIN mon_i i ON o.k = i.k') AS batches;
RESET work_mem;
SELECT batches > 1 AS batched, join_spilled = batches - 1 AS spilled_counted, joins
  FROM mon_b, mon_since('batches');

-- GpuHashAgg: one run per node (force_agg makes both aggregations of the
-- query GpuHashAggs), and one per gpuhash_aggregate() call
SET gpuhash.force_agg = on;
CREATE TEMP TABLE mon_q AS
  SELECT mon_nodes('SELECT count(*), sum(n), sum(s) FROM (SELECT k, count(*) AS n, sum(id) AS s FROM mon_o GROUP BY k) g',
                   'GpuHashAgg') AS nodes;
SELECT nodes > 0 AS planned FROM mon_q;
SELECT mon_mark('agg');
SELECT count(*), sum(n), sum(s) FROM (SELECT k, count(*) AS n, sum(id) AS s FROM mon_o GROUP BY k) g;
SELECT aggs = nodes AS one_each, aggs_fallback,
       (CASE WHEN on_gpu() THEN aggs_gpu ELSE aggs_cpu END) = nodes AS on_its_device,
       agg_ms > 0 AS device_time, joins
  FROM mon_since('agg'), mon_q;
RESET gpuhash.force_agg;
SET gpuhash.enabled = off;
SELECT count(*), sum(n), sum(s) FROM (SELECT k, count(*) AS n, sum(id) AS s FROM mon_o GROUP BY k) g;
RESET gpuhash.enabled;
SELECT mon_mark('gpuhash_aggregate');
SELECT count(*), sum(n) FROM gpuhash_aggregate('SELECT k, count(*) FROM mon_i GROUP BY k')
  AS t(k int, n bigint);
SELECT aggs FROM mon_since('gpuhash_aggregate');
-- an aggregate past its memory spills, and its passes over the spilled
-- partitions are counted
SET work_mem = '64kB';
SELECT mon_mark('agg spill');
SELECT count(*), sum(n) FROM gpuhash_aggregate('SELECT id, count(*) FROM mon_o GROUP BY id')
  AS t(id int, n bigint);
RESET work_mem;
SELECT aggs, agg_spilled > 0 AS spilled FROM mon_since('agg spill');

-- fallbacks.  A plan made for gpuhash.device = cpu, executed under "auto":
-- on a host without a GPU both operators fall back ("no_gpu"), on a GPU
-- host they run there
PREPARE mon_join AS SELECT count(*), sum(i.v) FROM mon_o o JOIN mon_i i ON o.k = i.k;
PREPARE mon_agg AS SELECT count(*), sum(n) FROM (SELECT k, count(*) AS n FROM mon_o GROUP BY k) g;
SET gpuhash.device = cpu;
EXECUTE mon_join;
SET gpuhash.force_agg = on;
EXECUTE mon_agg;
RESET gpuhash.force_agg;
CREATE TEMP TABLE mon_q2 AS
  SELECT mon_nodes('EXECUTE mon_join', 'GpuHashJoin') AS joins, mon_nodes('EXECUTE mon_join', 'GpuHashAgg') AS join_aggs,
         mon_nodes('EXECUTE mon_agg', 'GpuHashAgg') AS aggs;
SELECT joins, join_aggs, aggs > 0 AS aggs_planned FROM mon_q2;
SELECT mon_mark('no gpu');
CREATE TEMP TABLE mon_fb AS
  SELECT mon_fb_now('GpuHashJoin', 'no_gpu') AS join_no_gpu, mon_fb_now('GpuHashAgg', 'no_gpu') AS agg_no_gpu;
SET gpuhash.device = auto;
EXECUTE mon_join;
EXECUTE mon_agg;
RESET gpuhash.device;
SELECT d.joins, d.aggs = q.aggs AS aggs,
       CASE WHEN current_setting('gpuhash_test.gpu')::bool
            THEN d.joins_gpu = 1 AND d.aggs_gpu = q.aggs
            ELSE d.joins_fallback = 1 AND d.aggs_fallback = q.aggs AND
                 mon_fb_now('GpuHashJoin', 'no_gpu') = join_no_gpu + 1 AND
                 mon_fb_now('GpuHashAgg', 'no_gpu') = agg_no_gpu + q.aggs
       END AS counted
  FROM mon_since('no gpu') d, mon_fb, mon_q2 q;
DROP TABLE mon_fb, mon_q2;
SELECT current_setting('gpuhash_test.gpu')::bool OR
       (SELECT last_fallback >= now() - interval '1 hour'
          FROM gpuhash_stat_fallbacks
         WHERE datname = current_database() AND reason = 'no_gpu' AND operator = 'GpuHashJoin') AS recent;

-- a table past gpuhash.device_memory_limit: the join finishes on the twin
-- ("table_limit"), with PostgreSQL's rows
SET gpuhash.budget_cpu_twin = on;
PREPARE mon_limit AS SELECT count(*), sum(i.v) FROM mon_o o JOIN mon_s i ON o.k = i.k;
EXECUTE mon_limit;
SELECT mon_mark('limit');
CREATE TEMP TABLE mon_fb AS SELECT mon_fb_now('GpuHashJoin', 'table_limit') AS before;
SET gpuhash.device_memory_limit = 1;
EXECUTE mon_limit;
EXECUTE mon_limit;
RESET gpuhash.device_memory_limit;
SELECT joins, joins_fallback, mon_fb_now('GpuHashJoin', 'table_limit') - before AS table_limit
  FROM mon_since('limit'), mon_fb;
DROP TABLE mon_fb;

-- a parallel join whose workers fall back, the leader taking no part: one
-- run, fallen back, its workers' fallback not lost
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
PREPARE mon_par AS SELECT count(*), sum(i.v) FROM mon_o o JOIN mon_s i ON o.k = i.k;
SELECT mon_nodes('EXECUTE mon_par', 'Parallel Custom Scan (GpuHashJoin)') AS parallel_joins;
EXECUTE mon_par;
SELECT mon_mark('parallel');
CREATE TEMP TABLE mon_fb AS SELECT mon_fb_now('GpuHashJoin', 'table_limit') AS before;
SET gpuhash.device_memory_limit = 1;
EXECUTE mon_par;
RESET gpuhash.device_memory_limit;
SELECT joins, joins_fallback, mon_fb_now('GpuHashJoin', 'table_limit') - before AS table_limit
  FROM mon_since('parallel'), mon_fb;
DROP TABLE mon_fb;
RESET parallel_leader_participation;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
SET max_parallel_workers_per_gather = 0;
RESET gpuhash.budget_cpu_twin;
SET gpuhash.enabled = off;
EXECUTE mon_par;
-- parallel workers add their last copies as they exit: wait for them
DO $$
BEGIN
  FOR i IN 1..200 LOOP
    PERFORM pg_stat_clear_snapshot();
    EXIT WHEN NOT EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'parallel worker');
    PERFORM pg_sleep(0.05);
  END LOOP;
END $$;
RESET gpuhash.enabled;
DEALLOCATE mon_join;
DEALLOCATE mon_agg;
DEALLOCATE mon_limit;
DEALLOCATE mon_par;

-- every fallen-back run has one reason
SELECT d.joins_fallback + d.aggs_fallback =
       (SELECT coalesce(sum(f.fallbacks), 0) FROM gpuhash_stat_fallbacks f WHERE f.datid = d.datid)
       AS reasons_add_up
  FROM gpuhash_stat_database d WHERE d.datname = current_database();

-- the GPU service: up (wait for it: an earlier suite's server may have just
-- started it), on the device the server's configuration names
DO $$
BEGIN
  FOR i IN 1..100 LOOP
    EXIT WHEN (SELECT state FROM gpuhash_stat_service) = 'up';
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
SELECT s.state, s.pid = a.pid AS its_pid,
       s.device = CASE WHEN current_setting('gpuhash_test.gpu')::bool THEN 'gpu' ELSE 'cpu' END AS device,
       s.started_at <= now() AS started, s.restarts >= 0 AS restarts,
       s.tables_held >= 0 AND s.table_bytes >= 0 AS holds
  FROM gpuhash_stat_service s
  LEFT JOIN pg_stat_activity a ON a.backend_type = 'gpuhash GPU service';

-- privileges: a plain role reads nothing and resets nothing; with
-- pg_read_all_stats it reads, and still cannot reset
CREATE ROLE mon_plain;
SET ROLE mon_plain;
SELECT count(*) FROM gpuhash_stat_database;
SELECT count(*) FROM gpuhash_stat_database();
SELECT count(*) FROM gpuhash_stat_fallbacks;
SELECT state FROM gpuhash_stat_service;
SELECT gpuhash_stat_reset();
RESET ROLE;
GRANT pg_read_all_stats TO mon_plain;
SET ROLE mon_plain;
SELECT count(*) > 0 AS reads FROM gpuhash_stat_database WHERE datname = current_database();
SELECT count(*) >= 0 AS reads FROM gpuhash_stat_fallbacks;
SELECT state IS NOT NULL AS reads FROM gpuhash_stat_service;
SELECT gpuhash_stat_reset();
RESET ROLE;
-- the reset is grantable
CREATE TEMP TABLE mon_bytes AS
  SELECT bytes_to_device + bytes_from_device AS before
    FROM gpuhash_stat_database WHERE datname = current_database();
GRANT EXECUTE ON FUNCTION gpuhash_stat_reset() TO mon_plain;
SET ROLE mon_plain;
SELECT gpuhash_stat_reset();
RESET ROLE;
SELECT joins_gpu + joins_cpu + joins_fallback + aggs_gpu + aggs_cpu + aggs_fallback AS runs,
       join_batches_spilled + agg_batches_spilled AS spilled,
       -- on a GPU a control word of an earlier run may still arrive
       CASE WHEN current_setting('gpuhash_test.gpu')::bool
            THEN bytes_to_device + bytes_from_device < before
            ELSE bytes_to_device + bytes_from_device = 0 END AS bytes_reset,
       stats_reset >= now() - interval '1 hour' AS reset_now
  FROM gpuhash_stat_database, mon_bytes WHERE datname = current_database();
DROP TABLE mon_bytes;
SELECT count(*) AS fallbacks FROM gpuhash_stat_fallbacks WHERE datname = current_database();
-- and counting goes on after it
SELECT mon_mark('after reset');
SELECT count(*) FROM mon_o o JOIN mon_i i ON o.k = i.k;
SELECT joins FROM mon_since('after reset');
REVOKE EXECUTE ON FUNCTION gpuhash_stat_reset() FROM mon_plain;
DROP ROLE mon_plain;

RESET gpuhash.force_join;
RESET max_parallel_workers_per_gather;
DROP FUNCTION mon_since(text), mon_mark(text), mon_now(), mon_fb_now(text, text), on_gpu(),
  mon_nodes(text, text), mon_batches(text);
DROP TABLE mon_o, mon_i, mon_seen, mon_b, mon_q;
