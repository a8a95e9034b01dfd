-- robust_estimates: GpuHashJoin sizes its build arrays from the planner's
-- estimate of the inner side.  An absurd estimate (here 10^10 rows from a
-- function's ROWS, empty in fact; sqlsmith found one through a chain of
-- cross joins) must not turn into an allocation of that size: found by
-- test/robust/sqlsmith.sh on a build of 2026-11-22 00:47, where it failed
-- with "out of memory ... Failed on request of size 34359738352 in memory
-- context GpuHashJoin build" while PostgreSQL returned the rows.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuhash;
RESET client_min_messages;
SET jit = off;
SET gpuhash.force_join = on;
CREATE FUNCTION rb_many() RETURNS SETOF int ROWS 10000000000 LANGUAGE sql AS 'SELECT 1 WHERE false';
CREATE FUNCTION rb_some() RETURNS SETOF int ROWS 10000000000 LANGUAGE sql AS 'SELECT g FROM generate_series(1, 50) g';
CREATE TABLE est_a AS SELECT g AS k FROM generate_series(1, 100) g;
ANALYZE est_a;
CREATE FUNCTION rb_gpujoins(q text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE l text; c int := 0;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP IF l ~ 'GpuHashJoin' THEN c := c + 1; END IF; END LOOP;
  RETURN c;
END $$;
CREATE FUNCTION rb_native(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
  PERFORM set_config('gpuhash.enabled', 'off', true);
  EXECUTE 'SELECT (' || q || ')::text' INTO r;
  PERFORM set_config('gpuhash.enabled', 'on', true);
  RETURN r;
END $$;
-- each query has a GpuHashJoin with the huge estimate on one side; the
-- native count, for the GpuHashJoin counts below
SELECT q, rb_gpujoins(q) AS gpu_joins, rb_native(q) AS native
  FROM (VALUES
    ('SELECT count(*) FROM est_a a JOIN rb_many() m(k) ON a.k = m.k'),
    ('SELECT count(*) FROM est_a a RIGHT JOIN rb_many() m(k) ON a.k = m.k'),
    ('SELECT count(*) FROM rb_many() m(k) LEFT JOIN est_a a ON a.k = m.k'),
    ('SELECT count(*) FROM est_a a JOIN rb_some() m(k) ON a.k = m.k'),
    ('SELECT count(*) FROM est_a a FULL JOIN rb_some() m(k) ON a.k = m.k')) v(q);
-- and the GpuHashJoin results themselves, next to native's
SELECT count(*) FROM est_a a JOIN rb_many() m(k) ON a.k = m.k;
SELECT count(*) FROM est_a a RIGHT JOIN rb_many() m(k) ON a.k = m.k;
SELECT count(*) FROM rb_many() m(k) LEFT JOIN est_a a ON a.k = m.k;
SELECT count(*) FROM est_a a JOIN rb_some() m(k) ON a.k = m.k;
SELECT count(*) FROM est_a a FULL JOIN rb_some() m(k) ON a.k = m.k;
SELECT gpuhash_device_memory() AS device_memory_held;
DROP TABLE est_a;
DROP FUNCTION rb_many(), rb_some(), rb_gpujoins(text), rb_native(text);
