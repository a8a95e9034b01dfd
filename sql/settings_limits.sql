-- settings_limits: every gpuhash setting at each end of its range (and
-- work_mem at its smallest) plans and runs joins, gpuhash_aggregate and
-- GpuHashAgg (with its table's quals on the device) with native's rows, or
-- is refused by the setting's own range.
CREATE TABLE sl_o AS
  SELECT g AS id, g % 4000 AS k, 'k' || (g % 4000) AS t, (g * 7)::int8 AS c1,
         (g % 97)::numeric(10, 2) / 3 AS c2, g * 0.5::float8 AS c3,
         date '2020-01-01' + g % 900 AS c4, g % 3 = 0 AS c5, repeat('x', g % 40) AS c6,
         CASE WHEN g % 11 = 0 THEN NULL ELSE g % 13 END AS c7
    FROM generate_series(1, 20000) g;
CREATE TABLE sl_i AS
  SELECT g AS k, 'k' || g AS t, g * 3 AS v FROM generate_series(0, 4999) g;
INSERT INTO sl_i VALUES (NULL, NULL, 0), (7, 'k7', 1);
ANALYZE sl_o, sl_i;

-- digest: md5 of a query's rows in a canonical order
CREATE FUNCTION sl_digest(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE d text;
BEGIN
  EXECUTE format('SELECT md5(coalesce(string_agg(x::text, %L ORDER BY x::text), %L)) FROM (%s) x',
                 E'\n', '', q) INTO d;
  RETURN d;
END $$;
-- same: the query's rows under the settings in force equal native's
CREATE FUNCTION sl_same(q text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE mine text; native text;
BEGIN
  mine := sl_digest(q);
  PERFORM set_config('gpuhash.enabled', 'off', true);
  native := sl_digest(q);
  PERFORM set_config('gpuhash.enabled', 'on', true);
  RETURN mine = native;
END $$;

CREATE TABLE sl_queries (name text, q text);
INSERT INTO sl_queries VALUES
  ('inner, 10 outer columns', 'SELECT o.*, i.v FROM sl_o o JOIN sl_i i ON o.k = i.k'),
  ('left, text keys', 'SELECT o.id, o.c6, i.v FROM sl_o o LEFT JOIN sl_i i ON o.t = i.t'),
  ('full', 'SELECT o.id, i.k FROM sl_o o FULL JOIN sl_i i ON o.k = i.k AND o.c7 < 5'),
  ('anti', 'SELECT i.k FROM sl_i i WHERE NOT EXISTS (SELECT 1 FROM sl_o o WHERE o.k = i.k)'),
  ('group by, device filter', $q$SELECT c7, count(*), sum(c2), max(c4), sum(c1) FROM sl_o WHERE c4 <= timestamp '2021-06-01 12:00' AND c1 > 700 GROUP BY c7$q$),
  ('aggregate', $q$SELECT * FROM gpuhash_aggregate('SELECT k % 10 AS g, count(*), sum(c1), sum(c2), avg(c3), min(c2), max(c7), count(c6) FROM sl_o GROUP BY 1') AS t(g int, n bigint, s1 numeric, s2 numeric, a3 float8, m2 numeric, m7 int, n6 bigint)$q$);
CREATE TABLE sl_values (setting text, value text);
INSERT INTO sl_values VALUES
  ('gpuhash.batch_rows', '1'), ('gpuhash.batch_rows', '16777216'),
  ('gpuhash.load_factor', '0.05'), ('gpuhash.load_factor', '0.95'),
  ('gpuhash.group_size', '1'), ('gpuhash.group_size', '32'),
  ('gpuhash.probe_scheme', 'linear'), ('gpuhash.probe_scheme', 'double'),
  ('gpuhash.device_memory_limit', '1'), ('gpuhash.device_memory_limit', '2147483647'),
  ('gpuhash.join_setup_cost', '0'), ('gpuhash.join_setup_cost', '1e12'),
  ('gpuhash.gpu_join_cost_fraction', '0'), ('gpuhash.gpu_join_cost_fraction', '100'),
  ('gpuhash.worker_context_cost', '0'), ('gpuhash.worker_context_cost', '1e12'),
  ('gpuhash.inject_alloc_failure', '2147483647'),
  ('gpuhash.shared_build', 'off'),
  ('gpuhash.agg_device_filter', 'off'),
  ('work_mem', '64'), ('work_mem', '2147483647');

-- each value, serial and with two workers, forced and at the planner's
-- choice: the rows that differ from native's (none expected)
CREATE FUNCTION sl_check(parallel boolean, force boolean)
RETURNS TABLE (setting text, value text, query text) LANGUAGE plpgsql AS $$
DECLARE v record; q record;
BEGIN
  FOR v IN SELECT * FROM sl_values LOOP
    FOR q IN SELECT * FROM sl_queries LOOP
      PERFORM set_config(v.setting, v.value, true);
      PERFORM set_config('gpuhash.force_join', force::text, true);
      PERFORM set_config('gpuhash.force_agg', force::text, true);
      IF parallel THEN
        PERFORM set_config('max_parallel_workers_per_gather', '2', true);
        PERFORM set_config('parallel_setup_cost', '0', true);
        PERFORM set_config('parallel_tuple_cost', '0', true);
        PERFORM set_config('min_parallel_table_scan_size', '0', true);
      ELSE
        PERFORM set_config('max_parallel_workers_per_gather', '0', true);
      END IF;
      IF NOT sl_same(q.q) THEN
        setting := v.setting; value := v.value; query := q.name;
        RETURN NEXT;
      END IF;
    END LOOP;
    EXECUTE format('RESET %s', v.setting);
    RESET max_parallel_workers_per_gather;
    RESET parallel_setup_cost;
    RESET parallel_tuple_cost;
    RESET min_parallel_table_scan_size;
    RESET gpuhash.force_join;
    RESET gpuhash.force_agg;
  END LOOP;
END $$;
BEGIN;
SELECT * FROM sl_check(false, true);
ROLLBACK;
BEGIN;
SELECT * FROM sl_check(true, true);
ROLLBACK;
BEGIN;
SELECT * FROM sl_check(false, false);
ROLLBACK;

-- the checks above did run GpuHashJoins at the ends of the ranges
SET gpuhash.force_join = on;
SET gpuhash.batch_rows = 16777216;
SELECT gpuhash_test_plan_survives_copy(q) AS gpu_joins FROM sl_queries WHERE name LIKE 'inner%';
SELECT count(*) AS joined_rows FROM (SELECT o.*, i.v FROM sl_o o JOIN sl_i i ON o.k = i.k) x;
SET gpuhash.batch_rows = 1;
SET gpuhash.group_size = 32;
SET gpuhash.load_factor = 0.95;
CREATE FUNCTION sl_plan(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    -- the memory, which differs between devices, masked
    IF l ~ 'GpuHashJoin|Batches|Verified' THEN
      RETURN NEXT regexp_replace(l, '(Memory Usage|Device Memory): \d+kB', '\1: NkB', 'g');
    END IF;
  END LOOP;
END $$;
SELECT sl_plan('SELECT count(*) FROM sl_o o JOIN sl_i i ON o.k = i.k');
RESET ALL;

-- and GpuHashAggs with their table's quals on the device, whose packets of
-- one row (batch_rows 1) the workers send
SET gpuhash.force_agg = on;
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET gpuhash.batch_rows = 1;
CREATE FUNCTION sl_agg_plan(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    IF l ~ 'GpuHashAgg|Device Filter' THEN RETURN NEXT regexp_replace(l, '^\s+(->\s+)?', ''); END IF;
  END LOOP;
END $$;
SELECT sl_agg_plan(q) FROM sl_queries WHERE name LIKE 'group by%';
SELECT sl_same(q) AS same_rows FROM sl_queries WHERE name LIKE 'group by%';
RESET ALL;

-- out of range: refused by the setting itself
SET gpuhash.batch_rows = 0;
SET gpuhash.batch_rows = 16777217;
SET gpuhash.load_factor = 0.04;
SET gpuhash.load_factor = 0.96;
SET gpuhash.group_size = 64;
SET gpuhash.group_size = 3;
SET gpuhash.device_memory_limit = -1;
SET gpuhash.gpu_join_cost_fraction = -0.1;
SET gpuhash.join_setup_cost = 1e13;

DROP FUNCTION sl_check, sl_same, sl_digest, sl_plan, sl_agg_plan;
DROP TABLE sl_o, sl_i, sl_queries, sl_values;
