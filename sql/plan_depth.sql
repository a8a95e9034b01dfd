-- plan_depth: the walks of finished plans (plan_walk.c) visit each node once,
-- and only where gpuhash planned something (issue 35's F5: a walk doubled
-- per level, and a 22-table join took seconds to plan on every database of
-- a server that preloads gpuhash).  Not timed: the number of nodes the
-- walks visited (gpuhash_test_plan_walk_visits, a test aid) is compared with
-- the number of nodes of the plan, counted from EXPLAIN (FORMAT JSON).  The
-- plans are deep: left-deep joins of up to 100 ten-row tables in the order
-- written (join_collapse_limit = 1), in parallel.  A statement timeout turns
-- a walk grown exponential again into a failure rather than a hang.
SET statement_timeout = '60s';
CREATE FUNCTION gpuhash_test_plan_walk_visits() RETURNS bigint
  AS '$libdir/gpuhash', 'gpuhash_plan_walk_visits' LANGUAGE C STRICT VOLATILE;
DO $$ BEGIN FOR i IN 0..100 LOOP
  EXECUTE format('CREATE TABLE pd%s AS SELECT g AS a, g AS b FROM generate_series(1, 10) g', i);
  EXECUTE format('ANALYZE pd%s', i);
END LOOP; END $$;

-- pd_from(n): pd1 JOIN pd2 ON pd1.a = pd2.b ... JOIN pdn ON pdn-1.a = pdn.b
CREATE FUNCTION pd_from(n int) RETURNS text LANGUAGE sql AS $$
  SELECT 'pd1' || string_agg(format(' JOIN pd%s ON pd%s.a = pd%s.b', i, i - 1, i), '' ORDER BY i)
    FROM generate_series(2, n) i
$$;
-- pd_join(n, target, tail): SELECT target FROM pd_from(n) tail
CREATE FUNCTION pd_join(n int, target text DEFAULT 'count(*)', tail text DEFAULT '')
RETURNS text LANGUAGE sql AS $$
  SELECT 'SELECT ' || target || ' FROM ' || pd_from(n) || ' ' || tail
$$;

-- pd_depth(plan): the levels of an EXPLAIN (FORMAT JSON) plan node
CREATE FUNCTION pd_depth(plan jsonb) RETURNS int LANGUAGE sql AS $$
  SELECT 1 + coalesce((SELECT max(pd_depth(p)) FROM jsonb_array_elements(plan -> 'Plans') p), 0)
$$;

-- pd_walk(stmt): the nodes and levels of stmt's plan (its subplans'
-- nodes too) and the nodes the walks visited while planning it
CREATE FUNCTION pd_walk(stmt text, OUT nodes int, OUT depth int, OUT visits bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v0 bigint := gpuhash_test_plan_walk_visits();
  j jsonb;
BEGIN
  EXECUTE 'EXPLAIN (COSTS OFF, FORMAT JSON) ' || stmt INTO j;
  visits := gpuhash_test_plan_walk_visits() - v0;
  nodes := jsonb_array_length(jsonb_path_query_array(j, 'strict $.**."Node Type"'));
  depth := pd_depth(j -> 0 -> 'Plan');
END $$;

-- pd_plan(stmt): stmt's plan as text
CREATE FUNCTION pd_plan(stmt text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  l text;
  res text := '';
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || stmt LOOP
    res := res || l || E'\n';
  END LOOP;
  RETURN res;
END $$;

SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET join_collapse_limit = 1;

-- gpuhash plans no GpuHashAgg and there is no result relation: no walk,
-- with gpuhash.enabled on (GpuHashJoins planned) or off
SELECT nodes > 150 AS big, depth >= 100 AS deep, visits
  FROM pd_walk(pd_join(100));
SET gpuhash.enabled = off;
SELECT nodes > 150 AS big, depth >= 100 AS deep, visits
  FROM pd_walk(pd_join(100));
RESET gpuhash.enabled;

-- a GpuHashAgg over the deep join read in parallel: gha_planner walks the
-- plan once to pack the input (the pack node, added after, is not walked)
SET gpuhash.force_agg = on;
SELECT nodes > 150 AS big, depth >= 100 AS deep,
       visits >= nodes - 1 AS walked, visits <= 2 * nodes AS linear
  FROM pd_walk(pd_join(100, 'pd1.a % 3, count(*), sum(pd100.a)', 'GROUP BY 1'));
SELECT count(*) AS packs FROM regexp_matches(pd_plan(pd_join(100, 'pd1.a % 3, count(*)', 'GROUP BY 1')),
                                             'GpuHashAggPack', 'g');
-- and its result, against PostgreSQL's
SELECT pd_join(100, 'pd1.a % 3, count(*), sum(pd100.a)', 'GROUP BY 1') AS q_agg \gset
CREATE TEMP TABLE pd_gpu AS SELECT x::text AS r FROM (:q_agg) x;
SET gpuhash.enabled = off;
CREATE TEMP TABLE pd_native AS SELECT x::text AS r FROM (:q_agg) x;
RESET gpuhash.enabled;
SELECT count(*) AS groups, gh_diff('pd_native', 'pd_gpu') AS diff FROM pd_native;
RESET gpuhash.force_agg;

-- gpuhash_aggregate of the deep join, packed in parallel: one walk of its
-- input's plan (gh_agg_try_pack), counted from outside the call
SELECT gpuhash_test_plan_walk_visits() AS v0 \gset
CREATE TEMP TABLE pd_aggregate AS
  SELECT x::text AS r FROM gpuhash_aggregate(:'q_agg') AS x(k int, c bigint, s bigint);
SELECT gpuhash_test_plan_walk_visits() - :v0 AS aggregate_visits \gset
SELECT gh_diff('pd_native', 'pd_aggregate') AS aggregate_diff;
SELECT :aggregate_visits >= nodes - 2 AS walked, :aggregate_visits <= 2 * nodes AS linear
  FROM pd_walk(pd_join(100, 'pd1.a % 3, pd1.a'));

-- an UPDATE over a deep join of GpuHashJoins: gpuhash_planner walks it once
-- to name the row identity columns
SET gpuhash.force_join = on;
SELECT nodes > 150 AS big, depth >= 50 AS deep,
       visits >= nodes AS walked, visits <= 2 * nodes AS linear,
       pd_plan(q) ~ 'GpuHashJoin' AS gpu_joins
  FROM (SELECT 'UPDATE pd0 SET b = pd0.b FROM ' || pd_from(100) || ' WHERE pd0.a = pd1.b') s(q),
       LATERAL pd_walk(q);
RESET gpuhash.force_join;

-- where gpuhash plans nothing, the plan is PostgreSQL's and nothing is
-- walked: with gpuhash.enabled = off here, and in a database that never
-- created the extension, with it on or off
SET gpuhash.enabled = off;
SELECT pd_plan(pd_join(22)) AS plan_native \gset
SELECT visits FROM pd_walk(pd_join(22));
RESET gpuhash.enabled;
SELECT current_database() AS regress_db \gset
CREATE DATABASE gpuhash_plan_depth;
\c gpuhash_plan_depth
SET statement_timeout = '60s';
SELECT count(*) AS gpuhash_extensions FROM pg_extension WHERE extname = 'gpuhash';
CREATE FUNCTION gpuhash_test_plan_walk_visits() RETURNS bigint
  AS '$libdir/gpuhash', 'gpuhash_plan_walk_visits' LANGUAGE C STRICT VOLATILE;
DO $$ BEGIN FOR i IN 1..22 LOOP
  EXECUTE format('CREATE TABLE pd%s AS SELECT g AS a, g AS b FROM generate_series(1, 10) g', i);
  EXECUTE format('ANALYZE pd%s', i);
END LOOP; END $$;
CREATE FUNCTION pd_plan(stmt text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  l text;
  res text := '';
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || stmt LOOP
    res := res || l || E'\n';
  END LOOP;
  RETURN res;
END $$;
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET join_collapse_limit = 1;
SET gpuhash.force_join = on;
SET gpuhash.force_agg = on;
SELECT gpuhash_test_plan_walk_visits() AS v0 \gset
SELECT pd_plan(q) = :'plan_native' AS same_plan, pd_plan(q) ~ 'Gather' AS parallel
  FROM (SELECT 'SELECT count(*) FROM pd1' ||
               string_agg(format(' JOIN pd%s ON pd%s.a = pd%s.b', i, i - 1, i), '' ORDER BY i)
          FROM generate_series(2, 22) i) s(q);
SET gpuhash.enabled = off;
SELECT pd_plan(q) = :'plan_native' AS same_plan
  FROM (SELECT 'SELECT count(*) FROM pd1' ||
               string_agg(format(' JOIN pd%s ON pd%s.a = pd%s.b', i, i - 1, i), '' ORDER BY i)
          FROM generate_series(2, 22) i) s(q);
SELECT gpuhash_test_plan_walk_visits() - :v0 AS visits;
\c :regress_db
DROP DATABASE gpuhash_plan_depth;

RESET join_collapse_limit;
RESET min_parallel_table_scan_size;
RESET parallel_tuple_cost;
RESET parallel_setup_cost;
RESET max_parallel_workers_per_gather;
RESET statement_timeout;
DROP FUNCTION gpuhash_test_plan_walk_visits(), pd_walk(text), pd_plan(text), pd_depth(jsonb), pd_join(int, text, text), pd_from(int);
DO $$ BEGIN FOR i IN 0..100 LOOP EXECUTE format('DROP TABLE pd%s', i); END LOOP; END $$;
