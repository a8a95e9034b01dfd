-- test/pgtap/join_cost.sql - the planner's own choice, without
-- gpuhash.force_join: GpuHashJoin on the GPU is priced as
-- gpuhash.gpu_join_cost_fraction of PostgreSQL's own hash join of the same
-- inputs, plus gpuhash.join_setup_cost.  Plans only (EXPLAIN without
-- ANALYZE runs nothing on the device), so device = gpu is planned the same
-- on a host without a GPU.  Whether the choice is the faster plan is what
-- bench/join/run.sh and bench/join/plans.sh measure on the GPU host.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
BEGIN;
CREATE EXTENSION IF NOT EXISTS gpuhash;
SELECT plan(16);
SET LOCAL jit = off;
SET LOCAL gpuhash.device = gpu;
SET LOCAL gpuhash.force_join = off;
-- this file's own counting queries run, on a host that may have no GPU:
-- no GpuHashAgg for them (its price also falls with join_setup_cost)
SET LOCAL gpuhash.enable_agg = off;
SET LOCAL max_parallel_workers_per_gather = 0;
SET LOCAL work_mem = '64MB';

-- a small pair and a large pair of tables
CREATE TABLE jc_small_o AS SELECT i AS k, i % 7 AS v FROM generate_series(1, 200) i;
CREATE TABLE jc_small_i AS SELECT i AS k, i % 5 AS w FROM generate_series(1, 100) i;
CREATE TABLE jc_big_o AS SELECT ((i::bigint * 7919) % 60000)::int AS k, i % 7 AS v FROM generate_series(1, 400000) i;
CREATE TABLE jc_big_i AS SELECT i AS k, i % 5 AS w FROM generate_series(1, 50000) i;
ANALYZE jc_small_o, jc_small_i, jc_big_o, jc_big_i;

-- the plan of a query under the current settings, as text and as JSON
\ir include/plan_text.sql
CREATE FUNCTION pg_temp.total_cost(q text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE j json;
BEGIN
  EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO j;
  RETURN (j -> 0 -> 'Plan' ->> 'Total Cost')::float8;
END $$;

\set small 'SELECT count(*), sum(o.v + i.w) FROM jc_small_o o JOIN jc_small_i i ON o.k = i.k'
\set big 'SELECT count(*), sum(o.v + i.w) FROM jc_big_o o JOIN jc_big_i i ON o.k = i.k'
\set bigleft 'SELECT count(*), sum(i.w) FROM jc_big_o o LEFT JOIN jc_big_i i ON o.k = i.k'

------------------------------------------------------------------------------
-- the default model
SELECT unalike(pg_temp.plan_text(:'small'), '%GpuHashJoin%',
              'a join of 200 x 100 rows keeps PostgreSQL''s plan: the setup cost outweighs the saving');
SELECT alike(pg_temp.plan_text(:'big'), '%Custom Scan (GpuHashJoin)%',
            'a join of 400000 x 50000 rows is planned as a GpuHashJoin');
SELECT alike(pg_temp.plan_text(:'bigleft'), '%GpuHashJoin%',
            'so is the LEFT join of the same tables');

-- the chosen plan costs less than PostgreSQL's own, by less than the
-- fraction says (the scans are charged in full)
SET LOCAL gpuhash.enabled = off;
SELECT pg_temp.total_cost(:'big') AS native_cost \gset
SET LOCAL gpuhash.enabled = on;
SELECT pg_temp.total_cost(:'big') AS gpu_cost \gset
SELECT cmp_ok(:gpu_cost::float8, '<', :native_cost::float8, 'the GpuHashJoin plan is priced below PostgreSQL''s');
SELECT cmp_ok(:gpu_cost::float8, '>', 0.5 * :native_cost::float8, 'but above half of it: both read the same tables');

------------------------------------------------------------------------------
-- the fraction decides: at 1 (as dear as PostgreSQL's hash join) plus the
-- setup cost, PostgreSQL's plan wins.  But not where the inner side's hash
-- table stays in a core's cache (under 256 kB): there PostgreSQL's probe waits
-- on no memory and the device saves nothing, so even at a tenth and without
-- the setup cost the small join keeps PostgreSQL's plan, and priced as a
-- GpuHashJoin (PostgreSQL's joins off) it costs what it costs at 0.5
SET LOCAL gpuhash.gpu_join_cost_fraction = 1.0;
SELECT unalike(pg_temp.plan_text(:'big'), '%GpuHashJoin%',
              'gpu_join_cost_fraction = 1: the large join keeps PostgreSQL''s plan');
SET LOCAL gpuhash.gpu_join_cost_fraction = 0.1;
SET LOCAL gpuhash.join_setup_cost = 0;
SELECT unalike(pg_temp.plan_text(:'small'), '%GpuHashJoin%',
              'gpu_join_cost_fraction = 0.1 and no setup cost: the join over 100 cached inner rows keeps PostgreSQL''s plan');
SET LOCAL enable_hashjoin = off;
SET LOCAL enable_mergejoin = off;
SET LOCAL enable_nestloop = off;
SELECT pg_temp.total_cost(:'small') AS small_tenth \gset
RESET gpuhash.gpu_join_cost_fraction;
SELECT is(pg_temp.total_cost(:'small'), :small_tenth::float8,
          'as a GpuHashJoin it costs the same at 0.1 and at 0.5');
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_nestloop;
RESET gpuhash.join_setup_cost;

------------------------------------------------------------------------------
-- every join type and key shape is priced through PostgreSQL's hash join
-- model: with the GPU's work nearly free each is planned as a GpuHashJoin
SET LOCAL gpuhash.gpu_join_cost_fraction = 0.01;
SET LOCAL gpuhash.join_setup_cost = 0;
CREATE TEMP TABLE jc_q (q text);
INSERT INTO jc_q VALUES
  ('SELECT count(*) FROM jc_big_o o LEFT JOIN jc_big_i i ON o.k = i.k AND o.v < i.w'),
  ('SELECT count(*) FROM jc_big_o o RIGHT JOIN jc_big_i i ON o.k = i.k'),
  ('SELECT count(*) FROM jc_big_o o FULL JOIN jc_big_i i ON o.k = i.k'),
  ('SELECT count(*) FROM jc_big_o o WHERE EXISTS (SELECT 1 FROM jc_big_i i WHERE i.k = o.k)'),
  ('SELECT count(*) FROM jc_big_o o WHERE NOT EXISTS (SELECT 1 FROM jc_big_i i WHERE i.k = o.k)'),
  ('SELECT count(*) FROM jc_big_o o WHERE o.k IN (SELECT i.w FROM jc_big_i i)'),
  ('SELECT count(*) FROM jc_big_o o JOIN jc_big_i i ON o.k = i.k AND o.v = i.w'),
  ('SELECT count(*) FROM jc_big_o o JOIN jc_big_i i ON o.k::int8 = i.k'),
  ('SELECT count(*) FROM jc_big_o o JOIN jc_big_i i ON o.k + 1 = i.k * 2');
SELECT is((SELECT count(*) FROM jc_q WHERE pg_temp.plan_text(q) ~ 'GpuHashJoin'), (SELECT count(*) FROM jc_q),
          'every join type, multi-column, cross-type and expression keys: a GpuHashJoin when the GPU is nearly free');
RESET gpuhash.gpu_join_cost_fraction;
RESET gpuhash.join_setup_cost;

------------------------------------------------------------------------------
-- a key expression is computed once per row of its side, on the CPU
-- (GpuHashJoin compares the stored values), not once per bucket comparison
-- as PostgreSQL's model charges its own hash clauses: a key of COST 10000
-- around jc_big_i.k adds its 50,000 rows' evaluations to the price in full,
-- however small the fraction (the per-comparison charge, scaled by the
-- fraction, added about a twentieth of that), and not the 400,000 of the
-- other side
CREATE FUNCTION pg_temp.dear(int) RETURNS int LANGUAGE plpgsql IMMUTABLE STRICT COST 10000
  AS 'BEGIN RETURN $1; END';
\set dear 'SELECT count(*) FROM jc_big_o o JOIN jc_big_i i ON o.k = pg_temp.dear(i.k)'
SET LOCAL gpuhash.gpu_join_cost_fraction = 0.01;
SET LOCAL gpuhash.join_setup_cost = 0;
SELECT pg_temp.total_cost(:'big') AS plain_key_cost \gset
SELECT pg_temp.total_cost(:'dear') AS dear_key_cost \gset
SELECT alike(pg_temp.plan_text(:'dear'), '%GpuHashJoin%', 'the join on a costly key is a GpuHashJoin');
SELECT cmp_ok(:dear_key_cost::float8 - :plain_key_cost::float8, '>=',
              0.99 * 50000 * 10000 * current_setting('cpu_operator_cost')::float8,
              'the costly key is priced once per row of its side, in full');
SELECT cmp_ok(:dear_key_cost::float8 - :plain_key_cost::float8, '<',
              2 * 50000 * 10000 * current_setting('cpu_operator_cost')::float8,
              'and only for that side''s rows');
RESET gpuhash.gpu_join_cost_fraction;
RESET gpuhash.join_setup_cost;

------------------------------------------------------------------------------
-- PostgreSQL's own penalties on its hash joins do not carry over:
-- enable_hashjoin = off leaves the GpuHashJoin plan as it was
SET LOCAL gpuhash.enabled = on;
SELECT pg_temp.total_cost(:'big') AS before_cost \gset
SET LOCAL enable_hashjoin = off;
SELECT is(pg_temp.total_cost(:'big'), :before_cost::float8,
          'enable_hashjoin = off: the GpuHashJoin plan costs the same');
RESET enable_hashjoin;

------------------------------------------------------------------------------
-- parallel plans: with 2 workers allowed and the fixed costs waived (a
-- participant's share of this join is too small to pay the setup cost;
-- worker_context_cost 0: the same whether the GPU service runs or not), the
-- large join runs as a partial GpuHashJoin under a Gather
SET LOCAL max_parallel_workers_per_gather = 2;
SET LOCAL parallel_setup_cost = 0;
SET LOCAL parallel_tuple_cost = 0;
SET LOCAL min_parallel_table_scan_size = 0;
SET LOCAL gpuhash.worker_context_cost = 0;
SET LOCAL gpuhash.join_setup_cost = 0;
SELECT alike(pg_temp.plan_text(:'big'), '%Gather%Parallel Custom Scan (GpuHashJoin)%',
            'two workers: a partial GpuHashJoin under Gather');
SET LOCAL gpuhash.enabled = off;
SELECT alike(pg_temp.plan_text(:'big'), '%Gather%Parallel Hash Join%',
            'and PostgreSQL''s own plan of it is a parallel hash join (the comparison above is with that)');
-- device = cpu: the CPU twin's own model, which this fraction does not touch
SET LOCAL gpuhash.enabled = on;
SET LOCAL gpuhash.device = cpu;
SELECT pg_temp.total_cost(:'big') AS cpu_cost \gset
SET LOCAL gpuhash.gpu_join_cost_fraction = 0.01;
SELECT is(pg_temp.total_cost(:'big'), :cpu_cost::float8,
          'device = cpu: gpu_join_cost_fraction does not change the plan''s cost');

SELECT * FROM finish();
ROLLBACK;
