-- aggregate_spill: gpuhash_aggregate under a small memory budget.
--
-- Past work_mem * hash_mem_multiplier the groups not in memory spill to
-- partitions on temporary files, aggregated one pass at a time.  Every
-- query here is compared with the same query run natively (gpuhash.enabled
-- = off) at the same work_mem, as multisets of row texts: sp_check prints
-- the number of groups (computed natively) and the rows missing from and
-- extra in gpuhash_aggregate's result (both must be 0), and whether the
-- spill behaved as it must (spill_ok), read from EXPLAIN ANALYZE's Spilled
-- Rows, Disk Usage and Batches of the GpuHashAggregate scan:
--   - it must spill when the groups cannot fit the budget (every group holds
--     at least its 8-byte count and an 8-byte table slot) and are more than
--     one batch can hold (the first batch of a pass is never split:
--     16 x gpuhash.batch_rows rows);
--   - it must not spill where expect says 'memory' (one group, no GROUP BY,
--     a large work_mem).
-- Batches are small here (gpuhash.batch_rows = 1000) so that 64kB to 4MB
-- budgets hold many of them.  Floats are multiples of 1/8, so that sums do
-- not depend on the order of the additions.

SET gpuhash.batch_rows = 1000;
-- On the GPU, exact device keys (integers, dates, ...) keep their groups in
-- device memory, under a device budget of their own rather than work_mem:
-- 1MB here (the least the setting takes), so that they spill there too.
-- On the CPU twin the groups are host memory, under work_mem.
SET gpuhash.device_memory_limit = '1MB';

CREATE FUNCTION sp_spilled(q text, coldef text) RETURNS boolean
LANGUAGE plpgsql AS $f$
DECLARE
  plan json;
  node json;
BEGIN
  EXECUTE format('EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, FORMAT JSON) SELECT * FROM gpuhash_aggregate(%L) AS t(%s)',
                 q, coldef) INTO plan;
  node := plan->0->'Plan';
  IF node->>'Custom Plan Provider' IS DISTINCT FROM 'GpuHashAggregate' THEN
    RAISE EXCEPTION 'not a GpuHashAggregate: %', node;
  END IF;
  RETURN (node->>'Spilled Rows')::bigint > 0 AND (node->>'Disk Usage')::bigint > 0
         AND (node->>'Batches')::bigint > 1;
END
$f$;

CREATE FUNCTION sp_check(q text, coldef text, wm text, expect text DEFAULT NULL,
                         OUT groups bigint, OUT missing bigint, OUT extra bigint,
                         OUT spill_ok boolean)
LANGUAGE plpgsql AS $f$
DECLARE
  spilled boolean;
BEGIN
  PERFORM set_config('work_mem', wm, true);
  PERFORM set_config('gpuhash.enabled', 'off', true);
  EXECUTE format('CREATE TEMP TABLE sp_native AS SELECT sp_row::text AS r FROM (%s) AS sp_row', q);
  PERFORM set_config('gpuhash.enabled', 'on', true);
  EXECUTE format('CREATE TEMP TABLE sp_device AS SELECT sp_row::text AS r FROM gpuhash_aggregate(%L) AS sp_row(%s)',
                 q, coldef);
  spilled := sp_spilled(q, coldef);
  -- the comparison itself need not be short of memory
  PERFORM set_config('work_mem', '64MB', true);
  SELECT count(*) INTO groups FROM sp_native;
  SELECT count(*) INTO missing FROM (SELECT r FROM sp_native EXCEPT ALL SELECT r FROM sp_device) x;
  SELECT count(*) INTO extra FROM (SELECT r FROM sp_device EXCEPT ALL SELECT r FROM sp_native) x;
  IF expect = 'memory' THEN
    spill_ok := NOT spilled;
  ELSIF groups * 16 > sp_budget(wm)
        AND groups > 16 * current_setting('gpuhash.batch_rows')::bigint THEN
    spill_ok := spilled;
  ELSE
    spill_ok := expect IS DISTINCT FROM 'spill' OR spilled;
  END IF;
  DROP TABLE sp_native;
  DROP TABLE sp_device;
END
$f$;

-- the budget of a work_mem, as PostgreSQL computes it for a hash aggregate
CREATE FUNCTION sp_budget(wm text) RETURNS bigint LANGUAGE plpgsql AS $f$
BEGIN
  PERFORM set_config('work_mem', wm, true);
  RETURN (SELECT setting::bigint * 1024 FROM pg_settings WHERE name = 'work_mem')
         * current_setting('hash_mem_multiplier')::float8;
END
$f$;

-- 100000 rows: keys with 1 to 100000 groups, every value type with NULLs
CREATE TABLE sp_t AS
SELECT g AS id,
       g % 100000 AS k100k,
       g % 1000 AS k1000,
       g % 10 AS k10,
       CASE WHEN g % 7 = 0 THEN NULL ELSE g % 3000 END AS knull,
       'key ' || (g % 20000) AS tk,
       CASE WHEN g % 9 = 0 THEN NULL ELSE 'k' || (g % 700) END AS tnull,
       round((g % 5000)::numeric / 7, g % 4) AS nk,
       CASE WHEN g % 11 = 0 THEN NULL ELSE ((g * 7919) % 60001 - 30000)::int2 END AS i2,
       CASE WHEN g % 13 = 1 THEN NULL ELSE (g::int8 * 104729 % 4000000001 - 2000000000)::int4 END AS i4,
       CASE WHEN g % 17 = 0 THEN NULL ELSE g::int8 * 2654435761 % 9000000000000000001 - 4500000000000000000 END AS i8,
       CASE WHEN g % 19 = 0 THEN NULL ELSE (((g * 37) % 2001 - 1000) / 4.0)::float4 END AS f4,
       CASE WHEN g % 23 = 0 THEN NULL ELSE (g::int8 * 7919 % 2000001 - 1000000)::float8 / 8 END AS f8,
       CASE WHEN g % 29 = 0 THEN NULL ELSE round((g::int8 * 6700417 % 20000001 - 10000000)::numeric / 1000, g % 5) END AS n
  FROM generate_series(1, 100000) g;
ANALYZE sp_t;
SET max_parallel_workers_per_gather = 0;

-- int keys, 100000 groups, every aggregate, from 64kB to 4MB
SELECT wm, (sp_check(
  'SELECT k100k, count(*), count(i2), sum(i2), avg(i2), min(i2), max(i2),
          sum(i4), avg(i4), min(i4), max(i4), sum(i8), avg(i8), min(i8), max(i8),
          sum(f4), avg(f4), min(f4), max(f4), sum(f8), avg(f8), min(f8), max(f8),
          count(n), sum(n), avg(n), min(n), max(n), count(tk)
     FROM sp_t GROUP BY k100k',
  'k int, c bigint, c2 bigint, s2 bigint, a2 numeric, mi2 int2, ma2 int2,
   s4 bigint, a4 numeric, mi4 int, ma4 int, s8 numeric, a8 numeric, mi8 bigint, ma8 bigint,
   sf4 real, af4 float8, mif4 real, maf4 real, sf8 float8, af8 float8, mif8 float8, maf8 float8,
   cn bigint, sn numeric, an numeric, min numeric, man numeric, ct bigint', wm, 'spill')).*
  FROM unnest(ARRAY['64kB', '256kB', '1MB', '4MB']) wm;

-- 1, 10, 1000 and 100000 groups at 64kB
SELECT k, (sp_check(format('SELECT %s, count(*), sum(i8), max(n) FROM sp_t GROUP BY 1', k),
                    'k int, c bigint, s numeric, m numeric', '64kB')).*
  FROM unnest(ARRAY['k10', 'k1000', 'k100k']) k;
SELECT (sp_check('SELECT 1 AS one, count(*), sum(i4), avg(n) FROM sp_t GROUP BY 1',
                 'one int, c bigint, s bigint, a numeric', '64kB', 'memory')).*;

-- text keys (host-checked), 20000 groups
SELECT wm, (sp_check('SELECT tk, count(*), sum(i4), min(n), max(f8) FROM sp_t GROUP BY tk',
                     'tk text, c bigint, s bigint, mi numeric, ma float8', wm)).*
  FROM unnest(ARRAY['64kB', '1MB']) wm;

-- numeric keys of several display scales: equal values are one group
SELECT (sp_check('SELECT nk, count(*), sum(n), avg(i2) FROM sp_t GROUP BY nk',
                 'nk numeric, c bigint, s numeric, a numeric', '64kB')).*;

-- several keys, NULL keys, a carried expression of a key
SELECT (sp_check('SELECT knull, tnull, k10, count(*), sum(i8), max(i2) FROM sp_t GROUP BY knull, tnull, k10',
                 'kn int, tn text, k int, c bigint, s numeric, m int2', '64kB')).*;
SELECT (sp_check('SELECT knull, knull + 1, count(*), min(f4) FROM sp_t GROUP BY knull',
                 'kn int, kn1 int, c bigint, m real', '64kB')).*;

-- one huge group, and no GROUP BY: never spilled
SELECT (sp_check('SELECT k10 * 0 AS z, count(*), sum(i8), avg(n), min(f4), max(i2) FROM sp_t GROUP BY 1',
                 'z int, c bigint, s numeric, a numeric, mi real, ma int2', '64kB', 'memory')).*;
SELECT (sp_check('SELECT count(*), sum(i8), avg(n), min(f4), max(i2) FROM sp_t',
                 'c bigint, s numeric, a numeric, mi real, ma int2', '64kB', 'memory')).*;

-- empty input
SELECT (sp_check('SELECT k100k, count(*), sum(i4) FROM sp_t WHERE id < 0 GROUP BY k100k',
                 'k int, c bigint, s bigint', '64kB')).*;
SELECT (sp_check('SELECT count(*), sum(i4) FROM sp_t WHERE id < 0',
                 'c bigint, s bigint', '64kB')).*;

-- a large work_mem (and, on the GPU, device limit): the same groups in
-- memory, nothing spilled
SET gpuhash.device_memory_limit = '256MB';
SELECT (sp_check('SELECT k100k, count(*), sum(i4) FROM sp_t GROUP BY k100k',
                 'k int, c bigint, s bigint', '256MB', 'memory')).*;
SET gpuhash.device_memory_limit = '1MB';

-- the default batch (16 x gpuhash.batch_rows = 1048576 rows) would hold
-- the whole input, but a batch holds no more than the budget does: the
-- groups spill as with small batches
RESET gpuhash.batch_rows;
SELECT wm, (sp_check('SELECT k100k, count(*), sum(i4), max(n) FROM sp_t GROUP BY k100k',
                     'k int, c bigint, s bigint, m numeric', wm, 'spill')).*
  FROM unnest(ARRAY['64kB', '1MB']) wm;

-- smaller batches still: passes that split again
SET gpuhash.batch_rows = 200;
SELECT wm, (sp_check('SELECT k100k, count(*), sum(i4), max(n) FROM sp_t GROUP BY k100k',
                     'k int, c bigint, s bigint, m numeric', wm)).*
  FROM unnest(ARRAY['64kB', '1MB']) wm;
SELECT (sp_check('SELECT tk, knull, count(*), avg(f8) FROM sp_t GROUP BY tk, knull',
                 'tk text, kn int, c bigint, a float8', '64kB')).*;
SET gpuhash.batch_rows = 1000;

-- parallel input: workers pack rows (int keys), and
-- packets of groups not in memory are split row by row into partitions
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SELECT wm, (sp_check('SELECT k100k, knull, count(*), count(tk), sum(i2), avg(i4), min(i8), max(f4), sum(f8) FROM sp_t GROUP BY k100k, knull',
                     'k int, kn int, c bigint, ct bigint, s2 bigint, a4 numeric, mi8 bigint, mf4 real, sf8 float8', wm)).*
  FROM unnest(ARRAY['64kB', '1MB']) wm;
-- NUMERIC arguments travel in packets as fixed point, the values that are
-- not (NaN, infinities, more than 18 digits) whole: spilled rows keep both
SELECT wm, (sp_check('SELECT k100k, count(n), sum(n), min(n), avg(nk),
                             max(CASE WHEN id % 997 = 0 THEN ''NaN''::numeric
                                      WHEN id % 991 = 0 THEN n * 1e20 ELSE n END)
                        FROM sp_t GROUP BY k100k',
                     'k int, c bigint, s numeric, mi numeric, a numeric, ma numeric', wm)).*
  FROM unnest(ARRAY['64kB', '1MB']) wm;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
SET max_parallel_workers_per_gather = 0;

-- the function itself (WITH ORDINALITY: no GpuHashAggregate scan), spilled
SET work_mem = '64kB';
SELECT count(*) AS groups, sum(c) AS rows, sum(s) = (SELECT sum(i8) FROM sp_t) AS sums_equal
  FROM ROWS FROM (gpuhash_aggregate('SELECT k100k, count(*), sum(i8) FROM sp_t GROUP BY k100k')
                  AS (k int, c bigint, s numeric)) WITH ORDINALITY;

-- a rescan of a spilled scan (the inner side of a nested loop, no
-- Material) runs the aggregation again and returns the same rows
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
EXPLAIN (COSTS OFF)
SELECT v.x, count(*) AS groups, sum(t.c) AS rows
  FROM (VALUES (0), (1), (2)) v(x),
       gpuhash_aggregate('SELECT k100k, count(*) FROM sp_t GROUP BY k100k') AS t(k int, c bigint)
 WHERE t.k % 3 - v.x = 0
 GROUP BY v.x ORDER BY v.x;
SELECT v.x, count(*) AS groups, sum(t.c) AS rows
  FROM (VALUES (0), (1), (2)) v(x),
       gpuhash_aggregate('SELECT k100k, count(*) FROM sp_t GROUP BY k100k') AS t(k int, c bigint)
 WHERE t.k % 3 - v.x = 0
 GROUP BY v.x ORDER BY v.x;
SELECT v.x, count(*) AS groups, sum(t.c) AS rows
  FROM (VALUES (0), (1), (2)) v(x),
       (SELECT k100k AS k, count(*) AS c FROM sp_t GROUP BY k100k) t
 WHERE t.k % 3 - v.x = 0
 GROUP BY v.x ORDER BY v.x;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;

-- a LIMIT stops early: the tapes go with the run
SELECT count(*) FROM (SELECT * FROM gpuhash_aggregate('SELECT k100k, count(*) FROM sp_t GROUP BY k100k')
                      AS t(k int, c bigint) LIMIT 10) x;

-- an ERROR in any pass (an allocation made to fail, the first, second, ...)
-- leaves no temporary file and no device memory behind
DO $$
DECLARE
  c bigint;
  errors int := 0;
BEGIN
  FOR n IN 1..40 LOOP
    BEGIN
      PERFORM set_config('gpuhash.inject_alloc_failure', n::text, true);
      SELECT count(*) INTO c
        FROM gpuhash_aggregate('SELECT tk, count(*), sum(i4) FROM sp_t WHERE id <= 40000 GROUP BY tk')
             AS t(tk text, c bigint, s bigint);
    EXCEPTION WHEN out_of_memory THEN
      errors := errors + 1;
    END;
  END LOOP;
  RAISE NOTICE 'failed runs: %', CASE WHEN errors > 10 THEN 'more than 10' ELSE errors::text END;
END
$$;
RESET gpuhash.inject_alloc_failure;
SELECT count(*) AS temp_files FROM pg_ls_tmpdir();
SELECT gpuhash_device_memory() AS device_bytes;
RESET work_mem;
RESET max_parallel_workers_per_gather;
RESET gpuhash.batch_rows;

DROP TABLE sp_t;
DROP FUNCTION sp_check(text, text, text, text);
DROP FUNCTION sp_spilled(text, text);
DROP FUNCTION sp_budget(text);
RESET gpuhash.device_memory_limit;
