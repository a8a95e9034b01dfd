-- aggregate_staging: the batch of GpuHashAgg and gpuhash_aggregate is part
-- of the memory budget (work_mem * hash_mem_multiplier).
--
-- A batch holds what half of the budget holds (its arrays and the groups
-- its rows could start), at most 16 x gpuhash.batch_rows rows and at least
-- 64.  Before, it was 16 x gpuhash.batch_rows rows whatever the budget, and
-- its keys' array (keys x rows Datums) failed past 1 GB: 128 keys at the
-- default batch_rows, 32 at 262144.  Every query is compared with the same
-- query run natively (gpuhash.enabled = off), as multisets of row texts:
-- st_diff prints the rows and those that differ either way (must be 0).

SET max_parallel_workers_per_gather = 0;

-- the custom plan providers of q's plan, in plan order
CREATE FUNCTION st_nodes(q text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
  plan json;
BEGIN
  EXECUTE 'EXPLAIN (COSTS OFF, FORMAT JSON) ' || q INTO plan;
  RETURN (SELECT string_agg(m[1], ',')
            FROM regexp_matches(plan::text, '"Custom Plan Provider": "([A-Za-z]+)"', 'g') m);
END
$f$;

-- rows of q (run with gpuhash) and how many differ from native's, both ways
CREATE FUNCTION st_diff(q text, OUT rows bigint, OUT diff bigint)
LANGUAGE plpgsql AS $f$
BEGIN
  EXECUTE format('CREATE TEMP TABLE st_device AS SELECT r::text AS r FROM (%s) r', q);
  PERFORM set_config('gpuhash.enabled', 'off', true);
  EXECUTE format('CREATE TEMP TABLE st_native AS SELECT r::text AS r FROM (%s) r', q);
  PERFORM set_config('gpuhash.enabled', 'on', true);
  SELECT count(*) INTO rows FROM st_device;
  SELECT count(*) INTO diff FROM
    ((TABLE st_device EXCEPT ALL TABLE st_native)
     UNION ALL (TABLE st_native EXCEPT ALL TABLE st_device)) x;
  DROP TABLE st_device;
  DROP TABLE st_native;
END
$f$;

-- EXPLAIN ANALYZE's memory lines of the first GpuHashAgg or
-- GpuHashAggregate node of q
CREATE FUNCTION st_memory(q text, OUT usage_kb bigint, OUT budget_kb bigint,
                          OUT group_kb bigint, OUT staging_kb bigint,
                          OUT staging_rows bigint)
LANGUAGE plpgsql AS $f$
DECLARE
  plan json;
  node json;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, FORMAT JSON) ' || q INTO plan;
  node := plan->0->'Plan';
  WHILE node->>'Custom Plan Provider' IS DISTINCT FROM 'GpuHashAgg'
        AND node->>'Custom Plan Provider' IS DISTINCT FROM 'GpuHashAggregate' LOOP
    node := node->'Plans'->0;
    IF node IS NULL THEN
      RAISE EXCEPTION 'no GpuHashAgg in %', plan;
    END IF;
  END LOOP;
  usage_kb := node->>'Memory Usage';
  budget_kb := node->>'Memory Budget';
  group_kb := node->>'Group Memory';
  staging_kb := node->>'Staging Memory';
  staging_rows := node->>'Staging Rows';
END
$f$;

CREATE TABLE st_t AS
SELECT g AS id, g % 7 AS a, g % 5000 AS k, 'v' || (g % 300) AS t, (g % 1000) / 8.0 AS n
  FROM generate_series(1, 20000) g;
ANALYZE st_t;

-- 128 GROUP BY keys (host-checked: computed expressions), the planner's own
-- choice with a GPU host's costs
SET gpuhash.cost_as_gpu = on;
SELECT format('SELECT %s, count(*), sum(id) FROM st_t GROUP BY %s',
              string_agg(format('a + %s', i), ', '),
              string_agg(i::text, ', ')) AS q128
  FROM generate_series(1, 128) i \gset
SELECT st_nodes(:'q128');
SELECT * FROM st_diff(:'q128');

-- 32 keys with the largest batch gpuhash.batch_rows asks for
SET gpuhash.batch_rows = 262144;
SELECT format('SELECT %s, count(*), sum(id), max(t) FROM st_t GROUP BY %s',
              string_agg(format('k + %s', i), ', '),
              string_agg(i::text, ', ')) AS q32
  FROM generate_series(1, 32) i \gset
SELECT st_nodes(:'q32');
SELECT * FROM st_diff(:'q32');
SET gpuhash.batch_rows = 16777216;
SELECT * FROM st_diff(:'q32');
RESET gpuhash.batch_rows;
RESET gpuhash.cost_as_gpu;

-- gpuhash_aggregate() of the same queries
SELECT format('SELECT * FROM gpuhash_aggregate(%L) AS t(%s, c bigint, s bigint)',
              :'q128', string_agg(format('k%s int', i), ', ')) AS f128
  FROM generate_series(1, 128) i \gset
SELECT * FROM st_diff(:'f128');
SELECT format('SELECT * FROM gpuhash_aggregate(%L) AS t(%s, c bigint, s bigint, m text)',
              :'q32', string_agg(format('k%s int', i), ', ')) AS f32
  FROM generate_series(1, 32) i \gset
SET gpuhash.batch_rows = 262144;
SELECT * FROM st_diff(:'f32');
SET gpuhash.batch_rows = 16777216;
SELECT * FROM st_diff(:'f32');

-- the batch within the budget: at the largest batch_rows and work_mem =
-- 1MB, everything EXPLAIN counts (groups, batch arrays, a batch's copies)
-- stays within the budget, and so do its parts
SET work_mem = '1MB';
SET gpuhash.force_agg = on;
SELECT usage_kb <= budget_kb AS usage_within,
       group_kb + staging_kb >= usage_kb AS parts_cover_usage,
       staging_kb <= budget_kb / 2 AS staging_within_half,
       staging_rows BETWEEN 64 AND 16 * 16777216 AS rows_ok
  FROM st_memory('SELECT k, count(*), sum(id), max(t), sum(n) FROM st_t GROUP BY k');
SELECT usage_kb <= budget_kb AS usage_within,
       staging_kb <= budget_kb / 2 AS staging_within_half
  FROM st_memory('SELECT count(*), sum(k) FROM st_t');
SELECT usage_kb <= budget_kb AS usage_within,
       staging_kb <= budget_kb / 2 AS staging_within_half
  FROM st_memory('SELECT * FROM gpuhash_aggregate(''SELECT k, count(*), sum(id) FROM st_t GROUP BY k'')
                    AS t(k int, c bigint, s bigint)');
SELECT * FROM st_diff('SELECT k, count(*), sum(id), max(t), sum(n) FROM st_t GROUP BY k');
-- a smaller batch_rows still decides where it asks for fewer rows
SET gpuhash.batch_rows = 10;
SELECT staging_rows FROM st_memory('SELECT k, count(*) FROM st_t GROUP BY k');
-- the floor: 64 rows of 128 keys, whatever the budget
SET work_mem = '64kB';
SET gpuhash.batch_rows = 16777216;
SELECT staging_rows FROM st_memory(:'q128');
SELECT * FROM st_diff(:'q128');
RESET gpuhash.force_agg;

-- parallel workers size their packets from the same budget: at the largest
-- batch_rows and a small work_mem, packets never outgrow the leader's batch
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET work_mem = '64kB';
SET gpuhash.force_agg = on;
SELECT st_nodes('SELECT k, count(*), sum(id), sum(n), min(n) FROM st_t GROUP BY k');
SELECT * FROM st_diff('SELECT k, count(*), sum(id), sum(n), min(n) FROM st_t GROUP BY k');
RESET gpuhash.force_agg;
SELECT * FROM st_diff('SELECT * FROM gpuhash_aggregate(''SELECT k, count(*), sum(id), sum(n), min(n) FROM st_t GROUP BY k'')
                         AS t(k int, c bigint, s bigint, sn numeric, mn numeric)');
SELECT * FROM st_diff('SELECT * FROM gpuhash_aggregate(''SELECT t, count(*), sum(id) FROM st_t GROUP BY t'')
                         AS t(t text, c bigint, s bigint)');
RESET work_mem;
RESET gpuhash.batch_rows;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

DROP TABLE st_t;
DROP FUNCTION st_nodes(text);
DROP FUNCTION st_diff(text);
DROP FUNCTION st_memory(text);
