-- test/pgtap/join_gpu_start.sql - a GpuHashJoin that starts before its
-- backend's CUDA context exists (gpuhash.device = auto, the first GPU join
-- of a session) probes on the CPU twin meanwhile, then moves its table to
-- the GPU and finishes there, with native's rows.  Must be the first GPU
-- work of its session: pg_prove runs each file in a new one.
--
-- With a GPU (gpuhash_test.gpu): the join's EXPLAIN ANALYZE shows batches
-- probed before the GPU, fewer than all, the device gpu at the end, and the
-- rows it produced (EXPLAIN ANALYZE CREATE TABLE AS keeps them) equal
-- native's.  Without one: device = auto leaves the plan native and the CPU
-- twin has nothing to wait for.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
BEGIN;
CREATE EXTENSION IF NOT EXISTS gpuhash;
SELECT plan(4);
SET LOCAL jit = off;

SELECT current_setting('gpuhash_test.gpu')::bool AS gpu \gset

CREATE TABLE gs_inner AS SELECT i AS k, i * 7 AS v FROM generate_series(1, 50) i;
CREATE TABLE gs_outer AS SELECT i AS id, i % 60 AS k FROM generate_series(1, 1200) i;
ANALYZE gs_inner, gs_outer;
-- 1.5 ms per outer row: with 100-row batches the join takes about 1.8 s,
-- several times what a CUDA context takes to create (0.3 to 0.4 s)
CREATE FUNCTION pg_temp.slow(i int) RETURNS bool LANGUAGE sql VOLATILE AS
  'SELECT pg_sleep(0.0015) IS NOT NULL';
CREATE FUNCTION pg_temp.explain_json(q text) RETURNS json LANGUAGE plpgsql AS $$
DECLARE j json;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) ' || q INTO j;
  RETURN j;
END $$;
-- the GpuHashJoin node of a JSON plan (NULL if there is none)
CREATE FUNCTION pg_temp.ghj_node(j json) RETURNS json LANGUAGE sql AS $$
  WITH RECURSIVE n(node) AS (
    SELECT j -> 0 -> 'Plan'
    UNION ALL
    SELECT c FROM n, json_array_elements(n.node -> 'Plans') c)
  SELECT node FROM n WHERE node ->> 'Custom Plan Provider' = 'GpuHashJoin' LIMIT 1
$$;

SET LOCAL gpuhash.force_join = on;
SET LOCAL gpuhash.batch_rows = 100;
SET LOCAL gpuhash.device = auto;
SELECT coalesce(pg_temp.ghj_node(pg_temp.explain_json(
  'CREATE TABLE gs_res AS SELECT o.id, i.v FROM gs_outer o JOIN gs_inner i ON o.k = i.k
    WHERE pg_temp.slow(o.id)'))::text, '') AS node \gset
SET LOCAL gpuhash.enabled = off;
CREATE TABLE gs_native AS SELECT o.id, i.v FROM gs_outer o JOIN gs_inner i ON o.k = i.k;
SET LOCAL gpuhash.enabled = on;

\if :gpu
SELECT is(:'node'::json ->> 'Device', 'gpu',
          'a first join of the session under device = auto ends on the GPU');
SELECT cmp_ok(coalesce((:'node'::json ->> 'Chunks Before GPU')::int, 0), '>', 0,
              'its first probe chunks were probed on the CPU twin while the context was made');
SELECT cmp_ok((:'node'::json ->> 'Chunks Before GPU')::int, '<',
              (:'node'::json ->> 'Probe Chunks')::int,
              'and the rest on the GPU');
\else
SELECT ok(:'node' = '', 'without a GPU, device = auto leaves the join to PostgreSQL');
SET LOCAL gpuhash.device = cpu;
SELECT ok(pg_temp.ghj_node(pg_temp.explain_json(
  'SELECT o.id, i.v FROM gs_outer o JOIN gs_inner i ON o.k = i.k')) ->> 'Chunks Before GPU' IS NULL,
  'the CPU twin never waits for a GPU');
SELECT is((SELECT count(*) FROM gs_outer o JOIN gs_inner i ON o.k = i.k),
          (SELECT count(*) FROM gs_native), 'the CPU twin join returns native''s row count');
\endif
SELECT bag_eq('SELECT id, v FROM gs_res', 'SELECT id, v FROM gs_native',
              'the join''s rows equal native''s');

SELECT * FROM finish();
ROLLBACK;
