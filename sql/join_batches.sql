-- join_batches: GpuHashJoin under small work_mem, where the inner side does
-- not fit work_mem * hash_mem_multiplier and both sides are split into
-- batches in temp files.  Each line is gh_check's "gpu_joins=N rows=R
-- diff=D" (see join_setup): D must be 0; R comes from the native run, which
-- runs under the same work_mem.  bb_batched says whether a query's
-- GpuHashJoin really ran with more than one batch, so the checks are not
-- vacuous; the numbers of batches themselves vary with the platform and
-- are not printed.
SET jit = off;

-- inner side: 10 rows per key, a hot key (0) of 3000 rows, larger than the
-- smallest budget on its own; text, numeric and two-column keys; NULL keys
CREATE TABLE bb_i AS
  SELECT CASE WHEN g % 997 = 0 THEN NULL WHEN g <= 3000 THEN 0 ELSE g % 2500 END AS k,
         (g % 2500)::text AS kt, (g % 2500)::numeric / 4 AS kn, g % 7 AS k2,
         g AS v, md5(g::text) AS pad
    FROM generate_series(1, 28000) g;
-- outer side: 2 rows per key, many keys with no partner, up to 1000 rows of
-- one key (7), NULL keys
CREATE TABLE bb_o AS
  SELECT CASE WHEN g % 501 = 0 THEN NULL WHEN g <= 1000 THEN 7 ELSE g % 4000 END AS k,
         (g % 4000)::text AS kt, (g % 4000)::numeric / 4 AS kn, g % 7 AS k2,
         g AS w
    FROM generate_series(1, 9000) g;
CREATE TABLE bb_empty (k int, kt text, kn numeric, k2 int, w int);
CREATE TABLE bb_few AS SELECT g AS x FROM generate_series(0, 5) g;
ANALYZE bb_i;
ANALYZE bb_o;
ANALYZE bb_empty;
ANALYZE bb_few;

-- bb_at(wm, plp, query): gh_check(query) under work_mem wm and
-- parallel_leader_participation plp, set here: a set_config beside the
-- check in a query may run at another time than the check (volatile target
-- list entries run after an ORDER BY's sort)
CREATE FUNCTION bb_at(wm text, plp text, q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('work_mem', wm, false);
  PERFORM set_config('parallel_leader_participation', plp, false);
  RETURN gh_check(q);
END $$;

-- bb_batched(wm, query): whether the query's GpuHashJoins ran with more
-- than one batch under work_mem wm (the largest "Batches" of its
-- EXPLAIN ANALYZE, forced)
CREATE FUNCTION bb_batched(wm text, q text) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE
  saved_enabled text := current_setting('gpuhash.enabled');
  saved_force text := current_setting('gpuhash.force_join');
  l text;
  n int := 0;
BEGIN
  PERFORM set_config('work_mem', wm, false);
  PERFORM gh_set_mode('gpuhash');
  FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    IF l ~ '^\s+Buckets: \d+  Load Factor: \S+  Batches: (\d+)' THEN
      n := greatest(n, substring(l FROM '^\s+Buckets: \d+  Load Factor: \S+  Batches: (\d+)')::int);
    END IF;
  END LOOP;
  PERFORM set_config('gpuhash.enabled', saved_enabled, false);
  PERFORM set_config('gpuhash.force_join', saved_force, false);
  RETURN n > 1;
END $$;

-- the queries: every join type on each kind of key
CREATE TABLE bb_q (name text, q text);
INSERT INTO bb_q VALUES
  ('inner int', 'SELECT o.w, i.v, i.pad FROM bb_o o JOIN bb_i i ON o.k = i.k'),
  ('left int', 'SELECT o.w, i.v FROM bb_o o LEFT JOIN bb_i i ON o.k = i.k'),
  ('right int', 'SELECT o.w, i.v, i.pad FROM bb_o o RIGHT JOIN bb_i i ON o.k = i.k'),
  ('full int', 'SELECT o.w, i.v FROM bb_o o FULL JOIN bb_i i ON o.k = i.k'),
  ('semi int', 'SELECT o.w FROM bb_o o WHERE EXISTS (SELECT 1 FROM bb_i i WHERE i.k = o.k)'),
  ('anti int', 'SELECT o.w FROM bb_o o WHERE NOT EXISTS (SELECT 1 FROM bb_i i WHERE i.k = o.k)'),
  ('inner text', 'SELECT o.w, i.v FROM bb_o o JOIN bb_i i ON o.kt = i.kt'),
  ('full text', 'SELECT o.w, i.v, i.kt FROM bb_o o FULL JOIN bb_i i ON o.kt = i.kt'),
  ('left numeric', 'SELECT o.w, i.v, i.kn FROM bb_o o LEFT JOIN bb_i i ON o.kn = i.kn'),
  ('anti numeric', 'SELECT o.w FROM bb_o o WHERE NOT EXISTS (SELECT 1 FROM bb_i i WHERE i.kn = o.kn)'),
  ('inner two keys', 'SELECT o.w, i.v FROM bb_o o JOIN bb_i i ON o.kt = i.kt AND o.k2 = i.k2'),
  ('right two keys', 'SELECT o.w, i.v FROM bb_o o RIGHT JOIN bb_i i ON o.kt = i.kt AND o.k2 = i.k2'),
  ('join filter', 'SELECT o.w, i.v FROM bb_o o LEFT JOIN bb_i i ON o.k = i.k AND i.v > o.w'),
  -- bb_o inner, with its 1000-row key, and an outer side with no rows for
  -- many batches: batches split again while others wait, and the rows of a
  -- batch with no outer rows must still be passed on to later batches
  ('left sparse outer', 'SELECT o.v, i.w FROM bb_i o LEFT JOIN bb_o i ON o.k = i.k WHERE o.v / 500 % 10 = 0'),
  ('inner sparse outer', 'SELECT o.v, i.w FROM bb_i o JOIN bb_o i ON o.k = i.k WHERE o.v / 500 % 5 = 0');

-- every query at 64kB, 256kB and 4MB (4MB: one batch, as before)
SELECT wm, name, bb_at(wm, 'on', q)
  FROM (VALUES ('64kB'), ('256kB'), ('4MB')) w(wm) CROSS JOIN bb_q
 ORDER BY wm, name;

-- the small budgets did split the joins into batches
SELECT wm, name, bb_batched(wm, q) AS batched
  FROM (VALUES ('64kB'), ('256kB')) w(wm) CROSS JOIN bb_q
 WHERE name IN ('inner int', 'full text', 'right two keys')
 ORDER BY wm, name;

SET work_mem = '64kB';
-- empty sides
SELECT gh_check('SELECT o.w, i.v FROM bb_empty o FULL JOIN bb_i i ON o.k = i.k');
SELECT gh_check('SELECT o.w, i.v FROM bb_empty o RIGHT JOIN bb_i i ON o.k = i.k');
SELECT gh_check('SELECT o.w, i.w FROM bb_o o LEFT JOIN bb_empty i ON o.k = i.k');
SELECT gh_check('SELECT o.w FROM bb_o o WHERE NOT EXISTS (SELECT 1 FROM bb_empty i WHERE i.k = o.k)');
SELECT gh_check('SELECT o.w, i.v FROM bb_o o JOIN bb_i i ON o.k = i.k WHERE i.v < 0');

-- the hot key alone: 3000 rows of one key, over the budget by itself; the
-- batches stop growing (EXPLAIN says "Over Budget") and the rows are right
SELECT gh_check('SELECT o.w, i.v FROM bb_o o FULL JOIN bb_i i ON o.k = i.k WHERE i.k = 0 OR i.k IS NULL');
CREATE FUNCTION bb_over_budget(q text) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE l text; found bool := false;
BEGIN
  PERFORM gh_set_mode('gpuhash');
  FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    found := found OR l ~ 'Over Budget:';
  END LOOP;
  PERFORM gh_set_mode('native');
  RETURN found;
END $$;
SELECT bb_over_budget('SELECT o.w, i.v FROM bb_o o JOIN bb_i i ON o.k = i.k') AS over_budget;
RESET gpuhash.enabled;
RESET gpuhash.force_join;

-- rescans: the join under a correlated subquery, its outer side filtered by
-- the parameter; with batches the table is built again for each rescan
SELECT gh_check('SELECT f.x, (SELECT count(*) FROM bb_o o JOIN bb_i i ON o.k = i.k WHERE o.k2 = f.x) FROM bb_few f');
SELECT gh_check('SELECT f.x, (SELECT count(*) FROM bb_o o RIGHT JOIN bb_i i ON o.k = i.k AND o.k2 = f.x) FROM bb_few f');
SELECT gh_check('SELECT f.x, (SELECT count(*) FROM bb_o o WHERE NOT EXISTS (SELECT 1 FROM bb_i i WHERE i.k = o.k AND i.k2 = f.x)) FROM bb_few f');

-- structured EXPLAIN: the batches as Hash names them
CREATE FUNCTION bb_json(q text) RETURNS json LANGUAGE plpgsql AS $$
DECLARE j json;
BEGIN
  PERFORM gh_set_mode('gpuhash');
  EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q INTO j;
  PERFORM gh_set_mode('native');
  RETURN j;
END $$;
SELECT (p ->> 'Hash Batches')::int > 1 AS hash_batches,
       (p ->> 'Original Hash Batches')::int >= 1 AS original,
       (p ->> 'Memory Usage')::int > 0 AS memory_usage
  FROM (SELECT bb_json('SELECT count(*) FROM bb_o o JOIN bb_i i ON o.k = i.k') -> 0 -> 'Plan' -> 'Plans' -> 0 AS p) x;
RESET gpuhash.enabled;
RESET gpuhash.force_join;

-- batches taken back: the planner expects about 3100 inner rows (v + 0 >
-- 27700 and k2 + 0 >= 0 have no statistics: a third of the table each),
-- fewer than the outer side's 9000, which start the join with batches at
-- 64kB; 300 rows come, which fit the store, so the rows in
-- the other batches' files come back and the outer side is read once, with
-- no file (EXPLAIN: "Batches: 1 (planned N)").  A full join
-- whose inner side has a NULL key (v = 27916) keeps its batches: that row
-- is emitted after the last one.  bb_taken_back says which
-- happened.
CREATE FUNCTION bb_taken_back(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE l text; back bool := false; batched bool := false;
BEGIN
  PERFORM gh_set_mode('gpuhash');
  FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    back := back OR l ~ '^\s+Buckets: \d+  Load Factor: \S+  Batches: 1 \(planned \d+\)';
    batched := batched OR coalesce(substring(l FROM '^\s+Buckets: \d+  Load Factor: \S+  Batches: (\d+)')::int, 0) > 1;
  END LOOP;
  PERFORM gh_set_mode('native');
  RETURN CASE WHEN back THEN 'taken back' WHEN batched THEN 'batches' ELSE 'one batch' END;
END $$;
SET work_mem = '64kB';
SELECT name, gh_check(q) AS check, bb_taken_back(q) AS batches
  FROM (VALUES
    ('inner', 'SELECT o.w, i.v FROM bb_o o JOIN (SELECT * FROM bb_i WHERE v + 0 > 27700 AND k2 + 0 >= 0) i ON o.k = i.k'),
    ('left', 'SELECT o.w, i.v FROM bb_o o LEFT JOIN (SELECT * FROM bb_i WHERE v + 0 > 27700 AND k2 + 0 >= 0) i ON o.k = i.k'),
    ('semi', 'SELECT o.w FROM bb_o o WHERE EXISTS (SELECT 1 FROM bb_i i WHERE i.v + 0 > 27700 AND i.k2 + 0 >= 0 AND i.k = o.k)'),
    ('anti', 'SELECT o.w FROM bb_o o WHERE NOT EXISTS (SELECT 1 FROM bb_i i WHERE i.v + 0 > 27700 AND i.k2 + 0 >= 0 AND i.k = o.k)'),
    ('inner text', 'SELECT o.w, i.v FROM bb_o o JOIN (SELECT * FROM bb_i WHERE v + 0 > 27700 AND k2 + 0 >= 0) i ON o.kt = i.kt'),
    ('full no null key', 'SELECT o.w, i.v FROM bb_o o FULL JOIN (SELECT * FROM bb_i WHERE v + 0 > 27700 AND k2 + 0 >= 0 AND k IS NOT NULL) i ON o.k = i.k'),
    ('full null key', 'SELECT o.w, i.v FROM bb_o o FULL JOIN (SELECT * FROM bb_i WHERE v + 0 > 27700 AND k2 + 0 >= 0) i ON o.k = i.k'),
    -- 3000 rows of the inner side come: they do not fit, the batches stay
    ('inner too big', 'SELECT o.w, i.v FROM bb_o o JOIN (SELECT * FROM bb_i WHERE v + 0 > 25000 AND k2 + 0 >= 0) i ON o.k = i.k')) v(name, q)
 ORDER BY name;
-- under a correlated subquery: each rescan builds again and takes back again
SELECT gh_check('SELECT f.x, (SELECT count(*) || ''/'' || sum(i.v) FROM bb_o o JOIN (SELECT * FROM bb_i WHERE v + 0 > 27700 AND k2 + 0 >= 0) i ON o.k = i.k WHERE o.k2 <> f.x) FROM bb_few f');
RESET gpuhash.enabled;
RESET gpuhash.force_join;
DROP FUNCTION bb_taken_back(text);

-- parallel: each participant builds its own table of the whole inner side
-- (shared_build off), each in batches
SET gpuhash.shared_build = off;
SET force_parallel_mode = regress;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SELECT gh_check('SELECT o.w, i.v FROM bb_o o JOIN bb_i i ON o.k = i.k');
SELECT gh_check('SELECT o.w, i.v FROM bb_o o LEFT JOIN bb_i i ON o.kt = i.kt');
SELECT gh_check('SELECT o.w FROM bb_o o WHERE NOT EXISTS (SELECT 1 FROM bb_i i WHERE i.k = o.k)');
SELECT gh_check('SELECT o.w FROM bb_o o WHERE EXISTS (SELECT 1 FROM bb_i i WHERE i.kn = o.kn)');
-- a worker's build that takes its batches back (see above)
SELECT gh_check('SELECT o.w, i.v FROM bb_o o LEFT JOIN (SELECT * FROM bb_i WHERE v + 0 > 27700 AND k2 + 0 >= 0) i ON o.k = i.k');
RESET gpuhash.shared_build;

-- parallel with a shared build whose inner side the planner underestimates
-- (k + 0 = k: 0.5 % of the rows expected, all there): the participants'
-- chunks pass their combined budget, both sides go to shared partitions,
-- and each partition is joined by one participant, in batches of its own
-- where the partition is still too big (the hot key's is)
CREATE TABLE bb_pq (name text, q text);
INSERT INTO bb_pq VALUES
  ('inner int', 'SELECT o.w, i.v, i.pad FROM bb_o o JOIN (SELECT * FROM bb_i WHERE k + 0 = k) i ON o.k = i.k'),
  ('left int', 'SELECT o.w, i.v FROM bb_o o LEFT JOIN (SELECT * FROM bb_i WHERE k + 0 = k) i ON o.k = i.k'),
  ('semi int', 'SELECT o.w FROM bb_o o WHERE EXISTS (SELECT 1 FROM bb_i i WHERE i.k + 0 = i.k AND i.k = o.k)'),
  ('anti int', 'SELECT o.w FROM bb_o o WHERE NOT EXISTS (SELECT 1 FROM bb_i i WHERE i.k + 0 = i.k AND i.k = o.k)'),
  ('inner text', 'SELECT o.w, i.v FROM bb_o o JOIN (SELECT * FROM bb_i WHERE k + 0 = k) i ON o.kt = i.kt'),
  ('left numeric', 'SELECT o.w, i.v, i.kn FROM bb_o o LEFT JOIN (SELECT * FROM bb_i WHERE k + 0 = k) i ON o.kn = i.kn'),
  ('anti two keys', 'SELECT o.w FROM bb_o o WHERE NOT EXISTS (SELECT 1 FROM bb_i i WHERE i.k + 0 = i.k AND i.kt = o.kt AND i.k2 = o.k2)'),
  ('join filter', 'SELECT o.w, i.v FROM bb_o o LEFT JOIN (SELECT * FROM bb_i WHERE k + 0 = k) i ON o.k = i.k AND i.v > o.w');
-- bb_shared_kind(wm, query): how the query's GpuHashJoin read its inner side
-- under work_mem wm, forced: 'partitions' (a shared build that went to
-- partitions: EXPLAIN ANALYZE's "Shared Partitions"), 'store' (a shared
-- build, one store), or 'none'
CREATE FUNCTION bb_shared_kind(wm text, q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  saved_enabled text := current_setting('gpuhash.enabled');
  saved_force text := current_setting('gpuhash.force_join');
  l text;
  shared bool := false;
  parts bool := false;
BEGIN
  PERFORM set_config('work_mem', wm, false);
  PERFORM gh_set_mode('gpuhash');
  FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    shared := shared OR l ~ 'Inner Side: read by all participants together';
    parts := parts OR l ~ 'Shared Partitions: \d+';
  END LOOP;
  PERFORM set_config('gpuhash.enabled', saved_enabled, false);
  PERFORM set_config('gpuhash.force_join', saved_force, false);
  RETURN CASE WHEN shared AND parts THEN 'partitions' WHEN shared THEN 'store' ELSE 'none' END;
END $$;
SET max_parallel_workers_per_gather = 2;
SELECT wm, plp, name, bb_at(wm, plp, q)
  FROM (VALUES ('64kB'), ('1MB')) w(wm) CROSS JOIN (VALUES ('on'), ('off')) p(plp)
       CROSS JOIN bb_pq
 ORDER BY wm, plp, name;
RESET parallel_leader_participation;
SELECT name, bb_shared_kind('64kB', q) = 'partitions' AS spilled
  FROM bb_pq
 WHERE name IN ('inner int', 'anti int', 'inner text')
 ORDER BY name;
-- a shared store that fits, whose text key is also an inner column the
-- join returns: the store keeps one copy of each such value, which both
-- fields refer to; beside it a key computed from that column, copied apart
SELECT name, bb_at('64MB', 'on', q) AS check, bb_shared_kind('64MB', q) AS kind
  FROM (VALUES ('key returned', 'SELECT o.w, i.kt, i.v FROM bb_o o JOIN (SELECT * FROM bb_i WHERE k + 0 = k) i ON o.kt = i.kt'),
               ('key expression', 'SELECT o.w, i.kt, i.pad FROM bb_o o LEFT JOIN (SELECT * FROM bb_i WHERE k + 0 = k) i ON upper(o.kt) = upper(i.kt)')) v(name, q)
 ORDER BY name;
-- a rescan of the Gather (a correlated subquery) empties the partitions'
-- files and runs the shared build again
SET work_mem = '64kB';
SELECT gh_check('SELECT f.x, (SELECT count(*) || ''/'' || sum(i.v) FROM bb_o o JOIN (SELECT * FROM bb_i WHERE k + 0 = k) i ON o.k = i.k WHERE i.k2 <> f.x) FROM bb_few f');
RESET max_parallel_workers_per_gather;
DROP FUNCTION bb_shared_kind(text, text);
DROP TABLE bb_pq;
RESET force_parallel_mode;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

-- gpuhash.device_memory_limit below the table's size: the planner still
-- plans the join (in batches on the GPU; the CPU twin has no such limit)
SET gpuhash.device_memory_limit = 1;
SELECT gh_check('SELECT o.w, i.v FROM bb_o o FULL JOIN bb_i i ON o.k = i.k');
-- on a GPU host (gpuhash_test.gpu) with work_mem large enough for one host
-- batch: partitioned passes on the GPU, each batch's table within the limit
SET work_mem = '1GB';
SELECT NOT current_setting('gpuhash_test.gpu')::bool OR
       (p ->> 'Device' = 'gpu' AND (p ->> 'Hash Batches')::int > 1 AND
        (p ->> 'Device Memory')::int <= 1024) AS gpu_passes_within_limit
  FROM (SELECT bb_json('SELECT count(*), sum(i.v) FROM bb_o o JOIN bb_i i ON o.k = i.k') -> 0 -> 'Plan' -> 'Plans' -> 0 AS p) x;
SELECT gh_check('SELECT count(*), sum(i.v) FROM bb_o o JOIN bb_i i ON o.k = i.k');
RESET gpuhash.device_memory_limit;

RESET work_mem;
DROP FUNCTION bb_at(text, text, text);
DROP FUNCTION bb_batched(text, text);
DROP FUNCTION bb_over_budget(text);
DROP FUNCTION bb_json(text);
DROP TABLE bb_q, bb_i, bb_o, bb_empty, bb_few;
