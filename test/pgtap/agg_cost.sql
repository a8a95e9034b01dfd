-- test/pgtap/agg_cost.sql - the planner's own choice of GpuHashAgg, without
-- gpuhash.force_agg (gpuhash.enable_agg, on by default): plans only, under
-- device = gpu, which plans the same on a host without a GPU (EXPLAIN without
-- ANALYZE runs nothing).  Whether the choice is the faster plan is what
-- bench/agg, bench/join and bench/tpch measure on the GPU host.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
BEGIN;
CREATE EXTENSION IF NOT EXISTS gpuhash;
SELECT plan(16);
SET LOCAL jit = off;
SET LOCAL gpuhash.device = gpu;
SET LOCAL gpuhash.force_agg = off;
SET LOCAL gpuhash.force_join = off;
SET LOCAL work_mem = '64MB';
-- parallel plans over a table of this size, with the workers the table
-- asks for: the Gather of GpuHashAgg is then no wider than PostgreSQL's
SET LOCAL max_parallel_workers_per_gather = 4;
SET LOCAL max_parallel_workers = 8;
SET LOCAL parallel_setup_cost = 0;
SET LOCAL parallel_tuple_cost = 0.1;
SET LOCAL min_parallel_table_scan_size = 0;
SET LOCAL gpuhash.join_setup_cost = 0;

CREATE TABLE ac_t AS
SELECT i AS id, i % 50000 AS k, i % 7 AS v, (i % 1000) / 100.0 AS price, (i % 10) / 100.0 AS disc,
       'name-' || (i % 7) AS few, 'customer-' || (i % 200000) || '-' || md5((i % 200000)::text) AS many
  FROM generate_series(1, 400000) i;
ALTER TABLE ac_t SET (parallel_workers = 4);
ANALYZE ac_t;

\ir include/plan_text.sql

\set plain 'SELECT count(*), sum(v) FROM ac_t'
\set plainexpr 'SELECT count(*), sum(price * (1 - disc)) FROM ac_t'
\set grouped 'SELECT k, count(*), sum(v) FROM ac_t GROUP BY k'
\set fewcount 'SELECT v, count(id::text), sum(k) FROM ac_t GROUP BY v'
\set fewtext 'SELECT v, min(id::text), max(id::text) FROM ac_t GROUP BY v'

------------------------------------------------------------------------------
-- the planner's choice
SELECT alike(pg_temp.plan_text(:'grouped'), '%Custom Scan (GpuHashAgg)%',
            'GROUP BY of 50000 groups over 400000 rows is planned as a GpuHashAgg');
SELECT alike(pg_temp.plan_text(:'plainexpr'), '%Custom Scan (GpuHashAgg)%',
            'one group whose argument is NUMERIC arithmetic (a device expression): GpuHashAgg');
SELECT unalike(pg_temp.plan_text(:'plain'), '%GpuHashAgg%',
              'one group of plain columns under a Gather no wider than PostgreSQL''s: PostgreSQL''s partial aggregation');
SELECT alike(pg_temp.plan_text(:'plain'), '%Partial Aggregate%',
            'which is parallel, as PostgreSQL plans it with gpuhash off');

-- 7 groups: GpuHashAgg, unless the leader must keep a text min and max
-- of every row (priced GHA_TEXT_EXTREME_OPS operators a value), which
-- PostgreSQL's workers share in their partial aggregation
SELECT alike(pg_temp.plan_text(:'fewcount'), '%Custom Scan (GpuHashAgg)%',
            '7 groups, count and sum: GpuHashAgg');
SELECT unalike(pg_temp.plan_text(:'fewtext'), '%GpuHashAgg%',
              '7 groups, min and max of text over 400000 rows: PostgreSQL''s partial aggregation');

-- a text key is numbered: each packet's distinct values are looked up in
-- the leader (GHA_NUMBER_OPS a value new to a packet), so a key of 7 values
-- costs nearly nothing, and one of 200000 values over 400000 rows, a
-- lookup nearly every row, which PostgreSQL's plan does not pay
SELECT alike(pg_temp.plan_text('SELECT few, count(*), sum(v) FROM ac_t GROUP BY few'),
            '%Custom Scan (GpuHashAgg)%', 'a text key of 7 values: GpuHashAgg');
SELECT unalike(pg_temp.plan_text('SELECT many, count(*), sum(v) FROM ac_t GROUP BY many'),
              '%GpuHashAgg%', 'a text key of 200000 values over 400000 rows: PostgreSQL''s plan');

-- the table's quals on the device (Device Filter): every row is packed and
-- the quals leave the workers, and a row they remove costs a tuple, so a
-- selective qual stays in the scan, and an expensive one that keeps every
-- row (its expression's statistics say so) goes to the device
CREATE STATISTICS ac_t_expr ON (price * (1 - disc) * (1 + disc) * (1 + disc)) FROM ac_t;
ANALYZE ac_t;
SELECT unalike(pg_temp.plan_text('SELECT k, count(*), sum(v) FROM ac_t WHERE id < 4000 GROUP BY k'),
              '%Device Filter%', 'a qual that keeps 1 % of the rows stays in the scan');
SELECT alike(pg_temp.plan_text('SELECT k, count(*), sum(price) FROM ac_t WHERE price * (1 - disc) * (1 + disc) * (1 + disc) >= 0 GROUP BY k'),
            '%Device Filter%', 'NUMERIC arithmetic that keeps every row: on the device');
SELECT unalike(pg_temp.plan_text('SELECT k, count(*), sum(price) FROM ac_t WHERE price * (1 - disc) * (1 + disc) * (1 + disc) >= 5 GROUP BY k'),
              '%Device Filter%', 'the same arithmetic keeping half of the rows: in the scan');

-- wider than the table asks for (the Gather takes every worker it may
-- have): the same one group is GpuHashAgg's again
ALTER TABLE ac_t SET (parallel_workers = 2);
SELECT alike(pg_temp.plan_text(:'plain'), '%Custom Scan (GpuHashAgg)%',
            'one group of plain columns whose Gather GpuHashAgg widens from 2 workers to 4: GpuHashAgg');
ALTER TABLE ac_t SET (parallel_workers = 4);

-- the settings that switch it off, and gpuhash.enabled above them
SET LOCAL gpuhash.enable_agg = off;
SELECT unalike(pg_temp.plan_text(:'grouped'), '%GpuHashAgg%',
              'enable_agg = off: PostgreSQL''s plan for the GROUP BY');
-- (the plan taken into a variable: forced, pgTAP's own queries would plan
-- GpuHashAgg too, on a GPU this host may not have)
SET LOCAL gpuhash.force_agg = on;
SELECT pg_temp.plan_text(:'plain') AS forced \gset
SET LOCAL gpuhash.force_agg = off;
SELECT alike(:'forced'::text, '%Custom Scan (GpuHashAgg)%',
            'force_agg plans it wherever legal, the one group of plain columns too');
SET LOCAL gpuhash.enable_agg = on;
SET LOCAL gpuhash.enabled = off;
SELECT unalike(pg_temp.plan_text(:'grouped'), '%GpuHashAgg%',
              'gpuhash.enabled = off: PostgreSQL''s plan');
SET LOCAL gpuhash.enabled = on;
SET LOCAL gpuhash.device = cpu;
SELECT unalike(pg_temp.plan_text(:'grouped'), '%GpuHashAgg%',
              'device = cpu without cost_as_gpu: not offered (the CPU twin is for tests)');

SELECT * FROM finish();
ROLLBACK;
