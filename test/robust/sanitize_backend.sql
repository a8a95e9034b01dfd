-- test/robust/sanitize_backend.sql - the GPU work that sanitize_backend.sh
-- runs in one single-user backend under compute-sanitizer (statements end
-- with a semicolon and an empty line: postgres --single -j).
--
-- Every check is one row "r = name=RESULT" on standard output; RESULT
-- begins with "same" (gpuhash's rows equal gpuhash.enabled = off's) or
-- "clean" (an injection sweep gave only 53200 or native's rows), or is a
-- value the script checks (device, EXPLAIN lines, device memory).  ERRORs
-- the statements expect are caught in functions, except statement timeouts
-- (57014), which the script allows.  Tables and functions: sanitize_setup.sql.

SET gpuhash.force_join = on;

-- the first GPU use is a join: its context is made on the prewarm thread
SELECT 'inner_int=' || rb_same($q$SELECT a.id, b.id FROM sa a JOIN sb b ON a.k = b.k$q$) AS r;

SELECT 'active=' || gpuhash_active_device() AS r;

SELECT 'devices=' || count(*) || ' ' || coalesce(max(free_mb)::text, 'none') AS r FROM gpuhash_devices();

-- the sanitizer's libraries in this process (0 without one)
SELECT 'maps=' || count(*) AS r
  FROM regexp_split_to_table(pg_read_file('/proc/self/maps'), E'\n') l
 WHERE l ~* 'sanitizer|TreeLauncher';

SELECT 'selftest=' || gpuhash_device_selftest(67108864) AS r;

-- joins: every type, int4 = int8 and text keys, NULL keys, two keys, a join
-- filter, duplicates, three tables; one probe batch, then many
SELECT 'batches_1:' || rb_join_suite() AS r;

SET gpuhash.batch_rows = 1000;

SELECT 'batches_many:' || rb_join_suite() AS r;

SELECT 'explain=' || rb_explain($q$SELECT count(*) FROM sa a JOIN sb b ON a.k = b.k$q$) AS r;

-- the probe kernels' other shapes
SET gpuhash.group_size = 1;

SELECT 'group1_full=' || rb_same($q$SELECT a.id, b.id FROM sa a FULL JOIN sb b ON a.k = b.k$q$) AS r;

SET gpuhash.group_size = 32;

SELECT 'group32_full=' || rb_same($q$SELECT a.id, b.id FROM sa a FULL JOIN sb b ON a.k = b.k$q$) AS r;

SET gpuhash.probe_scheme = linear;

SELECT 'linear_left_text=' || rb_same($q$SELECT a.id, b.id FROM sa a LEFT JOIN sb b ON a.t = b.t$q$) AS r;

RESET gpuhash.group_size;

RESET gpuhash.probe_scheme;

RESET gpuhash.batch_rows;

-- a table over gpuhash.device_memory_limit: finished on the CPU
SET gpuhash.device_memory_limit = 1;

SELECT 'memlimit=' || rb_same($q$SELECT a.id, b.id FROM sb b JOIN sa a ON a.k = b.k$q$) AS r;

RESET gpuhash.device_memory_limit;

-- gpuhash_aggregate: device keys and host-checked keys, every value type,
-- few groups (shared-memory accumulators) and many (a growing table)
SELECT 'agg_int=' || agg_same($q$SELECT k13, count(*), count(i2), sum(i2), avg(i2), min(i2), max(i2),
  sum(i4), avg(i4), min(i4), max(i4), sum(i8), avg(i8), min(i8), max(i8) FROM agg_v GROUP BY k13$q$,
  'k int, n bigint, c2 bigint, s2 bigint, a2 numeric, mi2 int2, ma2 int2, s4 bigint, a4 numeric,
   mi4 int, ma4 int, s8 numeric, a8 numeric, mi8 bigint, ma8 bigint') AS r;

SELECT 'agg_float=' || agg_same($q$SELECT k1000, count(f4), sum(f4), avg(f4), min(f4), max(f4),
  sum(f8), avg(f8), min(f8), max(f8) FROM agg_v GROUP BY k1000$q$,
  'k int, c bigint, s4 real, a4 double precision, mi4 real, ma4 real, s8 double precision,
   a8 double precision, mi8 double precision, ma8 double precision') AS r;

SELECT 'agg_numeric=' || agg_same($q$SELECT k13, count(n), sum(n), avg(n), min(n), max(n), sum(n2), avg(n2)
  FROM agg_v GROUP BY k13$q$,
  'k int, c bigint, s numeric, a numeric, mi numeric, ma numeric, s2 numeric, a2 numeric') AS r;

SELECT 'agg_text_keys=' || agg_same($q$SELECT t, k13, count(*), sum(i4), max(f8) FROM agg_v GROUP BY t, k13$q$,
  't text, k int, n bigint, s bigint, m double precision') AS r;

SELECT 'agg_null_keys=' || agg_same($q$SELECT i2 % 100, count(*), sum(i8) FROM agg_v GROUP BY 1$q$,
  'k int, n bigint, s numeric') AS r;

SELECT 'agg_many_groups=' || agg_same($q$SELECT id, count(*), sum(i4), min(n), max(f4) FROM agg_v GROUP BY id$q$,
  'id int, n bigint, s bigint, mi numeric, ma real') AS r;

SET gpuhash.batch_rows = 300;

SELECT 'agg_growing=' || agg_same($q$SELECT id % 20011, count(*), sum(i8), avg(n) FROM agg_v GROUP BY 1$q$,
  'k int, n bigint, s numeric, a numeric') AS r;

SELECT 'agg_growing_text=' || agg_same($q$SELECT t || (id % 3001), count(*), sum(i2) FROM agg_v GROUP BY 1$q$,
  'k text, n bigint, s bigint') AS r;

RESET gpuhash.batch_rows;

-- an allocation failing at each site in turn
SELECT 'inject_full=' || inject_loop($q$SELECT a.id, b.id FROM sa a FULL JOIN sb b ON a.k = b.k$q$, true) AS r;

SELECT 'inject_text=' || inject_loop($q$SELECT a.id, b.id FROM sa a JOIN sb b ON a.t = b.t$q$, true) AS r;

SELECT 'inject_3way=' || inject_loop($q$SELECT a.id, b.id, c.id FROM sa a JOIN sb b ON a.k = b.k LEFT JOIN sk c ON b.id = c.id$q$, true) AS r;

SELECT 'inject_agg=' || inject_loop($q$SELECT * FROM gpuhash_aggregate('SELECT k13, count(*), sum(i8), avg(n) FROM agg_v GROUP BY k13')
  AS t(k int, n bigint, s numeric, a numeric)$q$, true) AS r;

SELECT 'inject_agg_text=' || inject_loop($q$SELECT * FROM gpuhash_aggregate('SELECT t, count(*), sum(i4) FROM agg_v GROUP BY t')
  AS t(k text, n bigint, s bigint)$q$, true) AS r;

-- an ERROR from the equality function in the middle of a probe
SELECT 'raise=' || rb_same_error($q$SELECT a.id, b.id FROM sa a JOIN sb b ON a.k === b.id$q$) AS r;

-- a half-read cursor over a join, rolled back to a savepoint
BEGIN;

SAVEPOINT s1;

DECLARE c1 CURSOR FOR SELECT a.id, b.id FROM sa a JOIN sb b ON a.t = b.t;

MOVE 100 IN c1;

SELECT 'cursor_held=' || (gpuhash_device_memory() > 0) AS r;

ROLLBACK TO s1;

SELECT 'cursor_rolled_back=' || gpuhash_device_memory() AS r;

COMMIT;

-- statement timeouts during device copies and a join: each either
-- finishes or ends with 57014 (allowed on standard error), nothing held
SET statement_timeout = 20;

SELECT gpuhash_device_selftest(268435456) IS NOT NULL AS timed;

SET statement_timeout = 150;

SELECT gpuhash_device_selftest(268435456) IS NOT NULL AS timed;

SET statement_timeout = 60;

SELECT count(*) AS timed FROM sb b JOIN big g ON b.k = g.k;

SET statement_timeout = 400;

SELECT count(*) AS timed FROM sb b JOIN big g ON b.k = g.k;

RESET statement_timeout;

SELECT 'after_timeouts=' || gpuhash_device_memory() AS r;

SELECT 'big=' || rb_same($q$SELECT count(*), sum(g.id) FROM sb b JOIN big g ON b.k = g.k$q$) AS r;

SELECT 'devmem=' || gpuhash_device_memory() AS r;

SELECT 'done=1' AS r;

