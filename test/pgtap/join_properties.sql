-- test/pgtap/join_properties.sql - GpuHashJoin properties that are awkward
-- in pg_regress: gpuhash.enabled = off and gpuhash.device = auto on a host
-- without a GPU leave every plan PostgreSQL's own; gpuhash rows equal
-- native rows (ordered and as bags); nothing stays held after a query, an
-- ERROR in the middle of a join, or a statement_timeout; the session works
-- afterwards.  Runs on the device the cluster is configured with
-- (gpuhash.device = cpu or gpu; gpuhash_test.gpu says whether a GPU is expected).
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
BEGIN;
CREATE EXTENSION IF NOT EXISTS gpuhash;
SELECT plan(64);
SET LOCAL jit = off;   -- some PostgreSQL builds (the GPU host's) have no LLVM

SELECT current_setting('gpuhash_test.gpu')::bool AS gpu \gset

-- data (deterministic: setseed before random())
SELECT setseed(0.4242) \gset
CREATE TABLE jp_l AS
  SELECT i AS id, CASE WHEN i % 53 = 0 THEN NULL ELSE (random() * 4000)::int END AS k,
         (random() * 1000)::int AS v, 't' || (i % 3000) AS t, i % 10 AS g
    FROM generate_series(1, 20000) i;
CREATE TABLE jp_r AS
  SELECT i AS id, CASE WHEN i % 47 = 0 THEN NULL ELSE (random() * 5000)::int END AS k,
         (random() * 1000)::int AS v, 't' || (i % 4000) AS t
    FROM generate_series(1, 8000) i;
CREATE TABLE jp_d AS SELECT i AS id, 'd' || i AS name FROM generate_series(0, 9) i;
ANALYZE jp_l, jp_r, jp_d;

-- plan text of a query under the current settings
\ir include/plan_text.sql
-- the SQLSTATE a statement ends with ('ok' when it succeeds); catches
-- query_canceled too, so that a statement_timeout can be observed
-- EXPLAIN (ANALYZE, FORMAT JSON) of a query under the current settings
CREATE FUNCTION pg_temp.explain_json(q text) RETURNS SETOF json LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY EXECUTE 'EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) ' || q;
END $$;
CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE q;
  RETURN 'ok';
EXCEPTION
  WHEN query_canceled THEN RETURN SQLSTATE;
  WHEN OTHERS THEN RETURN SQLSTATE;
END $$;
-- a join run with the Nth gpuhash allocation from its start failing:
-- 'same' (same rows as native), 'DIFFERENT', or the SQLSTATE it failed with
CREATE FUNCTION pg_temp.injected(n int, q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  wrapped text := 'SELECT md5(string_agg(x::text, '','' ORDER BY x::text)) FROM (' || q || ') x';
  nat text;
  gh text;
BEGIN
  PERFORM set_config('gpuhash.enabled', 'off', true);
  EXECUTE wrapped INTO nat;
  PERFORM set_config('gpuhash.enabled', 'on', true);
  PERFORM set_config('gpuhash.force_join', 'on', true);
  PERFORM set_config('gpuhash.inject_alloc_failure', n::text, true);
  BEGIN
    EXECUTE wrapped INTO gh;
  EXCEPTION WHEN OTHERS THEN
    PERFORM set_config('gpuhash.inject_alloc_failure', '0', true);
    RETURN SQLSTATE;
  END;
  PERFORM set_config('gpuhash.inject_alloc_failure', '0', true);
  RETURN CASE WHEN gh = nat THEN 'same' ELSE 'DIFFERENT' END;
END $$;
-- a slow join qual: sleeps 1 ms per call
CREATE FUNCTION pg_temp.slow(a int, b int) RETURNS bool LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_sleep(0.001);
  RETURN a IS NOT NULL OR b IS NOT NULL;
END $$;

CREATE TEMP TABLE queries (n int, q text);
INSERT INTO queries VALUES
  (1, 'SELECT l.id, r.id FROM jp_l l JOIN jp_r r ON l.k = r.k'),
  (2, 'SELECT l.id, r.id FROM jp_l l LEFT JOIN jp_r r ON l.k = r.k AND l.v < r.v'),
  (3, 'SELECT l.id, r.id FROM jp_l l FULL JOIN jp_r r ON l.t = r.t'),
  (4, 'SELECT l.id FROM jp_l l WHERE EXISTS (SELECT 1 FROM jp_r r WHERE r.k = l.k)'),
  (5, 'SELECT l.id FROM jp_l l WHERE NOT EXISTS (SELECT 1 FROM jp_r r WHERE r.k = l.k)'),
  (6, 'SELECT d.name, count(*) FROM jp_l l JOIN jp_r r ON l.k = r.k JOIN jp_d d ON d.id = l.g GROUP BY d.name');

------------------------------------------------------------------------------
-- gpuhash.enabled = off: no plan has a GpuHashJoin, even with force_join
SET LOCAL gpuhash.enabled = off;
SET LOCAL gpuhash.force_join = off;
SELECT is((SELECT count(*) FROM queries WHERE pg_temp.plan_text(q) ~ 'GpuHashJoin'), 0::bigint,
          'enabled = off: no GpuHashJoin in any plan');
SET LOCAL gpuhash.force_join = on;
SELECT is((SELECT count(*) FROM queries WHERE pg_temp.plan_text(q) ~ 'GpuHashJoin'), 0::bigint,
          'enabled = off and force_join = on: still no GpuHashJoin');
-- the same queries do get GpuHashJoins when enabled (the check above can fail)
SET LOCAL gpuhash.enabled = on;
SELECT is((SELECT count(*) FROM queries WHERE pg_temp.plan_text(q) ~ 'GpuHashJoin'),
          (SELECT count(*) FROM queries),
          'enabled = on and force_join = on: every query has a GpuHashJoin');

------------------------------------------------------------------------------
-- gpuhash.device = auto: without a GPU, plans are PostgreSQL's own
-- (whatever force_join says); with one, force_join gives GpuHashJoins
CREATE TEMP TABLE native_plans AS SELECT n, q, ''::text AS p FROM queries;
SET LOCAL gpuhash.enabled = off;
UPDATE native_plans SET p = pg_temp.plan_text(q);
SET LOCAL gpuhash.enabled = on;
SET LOCAL gpuhash.device = auto;
SET LOCAL gpuhash.force_join = off;
SELECT CASE WHEN :'gpu'::bool
  THEN pass(format('device = auto on a GPU host: query %s may be planned either way', n))
  ELSE is(pg_temp.plan_text(q), p, format('device = auto without a GPU: plan of query %s unchanged', n))
END FROM native_plans ORDER BY n;
SET LOCAL gpuhash.force_join = on;
SELECT CASE WHEN :'gpu'::bool
  THEN is((SELECT count(*) FROM native_plans WHERE pg_temp.plan_text(q) ~ 'GpuHashJoin'),
          (SELECT count(*) FROM native_plans),
          'device = auto on a GPU host with force_join: every query has a GpuHashJoin')
  ELSE is((SELECT count(*) FROM native_plans WHERE pg_temp.plan_text(q) <> p), 0::bigint,
          'device = auto without a GPU, even with force_join: every plan unchanged')
END;
RESET gpuhash.device;
SET LOCAL gpuhash.force_join = on;

------------------------------------------------------------------------------
-- gpuhash rows = native rows: ordered (cursors planned under each
-- setting) and as bags; nothing held after each query
SET LOCAL gpuhash.enabled = off;
DECLARE n1 CURSOR FOR SELECT l.id, r.id FROM jp_l l JOIN jp_r r ON l.k = r.k ORDER BY 1, 2;
DECLARE n2 CURSOR FOR SELECT l.id, r.id FROM jp_l l FULL JOIN jp_r r ON l.k = r.k AND l.v > r.v ORDER BY 1, 2;
DECLARE n3 CURSOR FOR SELECT l.id FROM jp_l l WHERE NOT EXISTS (SELECT 1 FROM jp_r r WHERE r.t = l.t) ORDER BY 1;
DECLARE n4 CURSOR FOR SELECT d.name, count(*), sum(r.v) FROM jp_l l JOIN jp_r r ON l.k = r.k
                       JOIN jp_d d ON d.id = l.g GROUP BY d.name ORDER BY 1;
SET LOCAL gpuhash.enabled = on;
DECLARE g1 CURSOR FOR SELECT l.id, r.id FROM jp_l l JOIN jp_r r ON l.k = r.k ORDER BY 1, 2;
DECLARE g2 CURSOR FOR SELECT l.id, r.id FROM jp_l l FULL JOIN jp_r r ON l.k = r.k AND l.v > r.v ORDER BY 1, 2;
DECLARE g3 CURSOR FOR SELECT l.id FROM jp_l l WHERE NOT EXISTS (SELECT 1 FROM jp_r r WHERE r.t = l.t) ORDER BY 1;
DECLARE g4 CURSOR FOR SELECT d.name, count(*), sum(r.v) FROM jp_l l JOIN jp_r r ON l.k = r.k
                       JOIN jp_d d ON d.id = l.g GROUP BY d.name ORDER BY 1;
SELECT ok(pg_temp.plan_text('SELECT l.id, r.id FROM jp_l l FULL JOIN jp_r r ON l.k = r.k AND l.v > r.v')
          ~ 'GpuHashJoin', 'the gpuhash cursors are GpuHashJoins');
SELECT results_eq('n1'::refcursor, 'g1'::refcursor, 'inner join: same rows, in order');
SELECT results_eq('n2'::refcursor, 'g2'::refcursor, 'full join with a join filter: same rows, in order');
SELECT results_eq('n3'::refcursor, 'g3'::refcursor, 'anti join on text: same rows, in order');
SELECT results_eq('n4'::refcursor, 'g4'::refcursor, 'three-way join with GROUP BY: same rows, in order');
-- a cursor read to its end keeps its executor state (and the join's table)
-- until it is closed, as PostgreSQL's own hash join keeps its hash table
CLOSE n1; CLOSE n2; CLOSE n3; CLOSE n4;
CLOSE g1; CLOSE g2; CLOSE g3; CLOSE g4;
SELECT is(gpuhash_device_memory(), 0::bigint, 'nothing held after the cursors are closed');

SET LOCAL gpuhash.enabled = off;
CREATE TEMP TABLE bag_n1 AS SELECT l.id AS lid, r.id AS rid FROM jp_l l LEFT JOIN jp_r r ON l.k = r.k AND l.v < r.v;
CREATE TEMP TABLE bag_n2 AS SELECT l.k, l.v FROM jp_l l WHERE EXISTS (SELECT 1 FROM jp_r r WHERE r.k = l.k AND r.v <> l.v);
CREATE TEMP TABLE bag_n3 AS SELECT l.t, r.t AS rt FROM jp_l l RIGHT JOIN jp_r r ON l.t = r.t AND l.g = 3;
SET LOCAL gpuhash.enabled = on;
CREATE TEMP TABLE bag_g1 AS SELECT l.id AS lid, r.id AS rid FROM jp_l l LEFT JOIN jp_r r ON l.k = r.k AND l.v < r.v;
SELECT is(gpuhash_device_memory(), 0::bigint, 'nothing held after a left join');
CREATE TEMP TABLE bag_g2 AS SELECT l.k, l.v FROM jp_l l WHERE EXISTS (SELECT 1 FROM jp_r r WHERE r.k = l.k AND r.v <> l.v);
SELECT is(gpuhash_device_memory(), 0::bigint, 'nothing held after a semi join');
CREATE TEMP TABLE bag_g3 AS SELECT l.t, r.t AS rt FROM jp_l l RIGHT JOIN jp_r r ON l.t = r.t AND l.g = 3;
SELECT is(gpuhash_device_memory(), 0::bigint, 'nothing held after a right join');
SELECT bag_eq('SELECT * FROM bag_n1', 'SELECT * FROM bag_g1', 'left join with a join filter: same bag of rows');
SELECT bag_eq('SELECT * FROM bag_n2', 'SELECT * FROM bag_g2', 'semi join with a join filter: same bag of rows');
SELECT bag_eq('SELECT * FROM bag_n3', 'SELECT * FROM bag_g3', 'right join on text: same bag of rows');

------------------------------------------------------------------------------
-- an open cursor holds the join's table; closing it releases it
DECLARE held CURSOR FOR SELECT l.id, r.id FROM jp_l l JOIN jp_r r ON l.k = r.k;
MOVE FORWARD 10 IN held;
SELECT cmp_ok(gpuhash_device_memory(), '>', 0::bigint, 'a half-read GpuHashJoin cursor holds its table');
CLOSE held;
SELECT is(gpuhash_device_memory(), 0::bigint, 'closing the cursor releases it');
SELECT is(pg_temp.sqlstate_of('SELECT count(*) FROM jp_l l JOIN jp_r r ON l.k = r.k'), 'ok',
          'a join after that works');

------------------------------------------------------------------------------
-- an ERROR in the middle of a join: in the join filter (after
-- several probe batches) and while reading the inner side
SET LOCAL gpuhash.batch_rows = 500;
SELECT ok(pg_temp.plan_text('SELECT count(*) FROM jp_l l JOIN jp_r r ON l.k = r.k AND 1 / (l.id - 15000 + r.id * 0) >= 0')
          ~ 'GpuHashJoin(.|\n)*Join Filter: .*l.id - 15000',
          'the dividing qual is the GpuHashJoin''s join filter');
SELECT ok((SELECT count(*) FROM jp_l l JOIN jp_r r ON l.k = r.k WHERE l.id = 15000) > 0,
          'row 15000 has a match, so the join filter divides by zero there');
SELECT throws_ok('SELECT count(*) FROM jp_l l JOIN jp_r r ON l.k = r.k AND 1 / (l.id - 15000 + r.id * 0) >= 0',
                 '22012', 'division by zero', 'an ERROR in the join filter midway comes out');
SELECT is(gpuhash_device_memory(), 0::bigint, 'nothing held after the ERROR in the join filter');
SELECT throws_ok('SELECT count(r.x) FROM jp_l l JOIN (SELECT k, 1 / (id - 7000) AS x FROM jp_r) r ON l.k = r.k',
                 '22012', 'division by zero', 'an ERROR in an input of the join comes out');
SELECT is(gpuhash_device_memory(), 0::bigint, 'nothing held after the ERROR in the input');
RESET gpuhash.batch_rows;
SET LOCAL gpuhash.force_join = on;
SET LOCAL gpuhash.enabled = on;

------------------------------------------------------------------------------
-- statement_timeout stops a slow join (its join filter sleeps); the
-- session and the join work afterwards
SELECT ok(pg_temp.plan_text('SELECT count(*) FROM jp_l l JOIN jp_r r ON l.k = r.k AND pg_temp.slow(l.id, r.id)')
          ~ 'GpuHashJoin', 'the slow join is a GpuHashJoin');
SET LOCAL statement_timeout = '300ms';
SELECT is(pg_temp.sqlstate_of('SELECT count(*) FROM jp_l l JOIN jp_r r ON l.k = r.k AND pg_temp.slow(l.id, r.id)'),
          '57014', 'statement_timeout cancels the slow join');
SET LOCAL statement_timeout = 0;
SELECT is(gpuhash_device_memory(), 0::bigint, 'nothing held after the cancel');
SELECT is(pg_temp.sqlstate_of('SELECT count(*) FROM jp_l l JOIN jp_r r ON l.k = r.k'), 'ok',
          'a join after the cancel works');
SET LOCAL gpuhash.enabled = off;
SELECT count(*) AS native_count FROM jp_l l JOIN jp_r r ON l.k = r.k \gset
SET LOCAL gpuhash.enabled = on;
SELECT is((SELECT count(*) FROM jp_l l JOIN jp_r r ON l.k = r.k), :native_count::bigint,
          'and counts the same rows as PostgreSQL');
SELECT is(gpuhash_device_memory(), 0::bigint, 'nothing held at the end');

------------------------------------------------------------------------------
-- an allocation failing inside a join (gpuhash.inject_alloc_failure): on
-- the CPU twin an out-of-memory ERROR (53200); on a GPU the join may
-- instead finish on the CPU twin (README), but never with other rows
SELECT CASE WHEN :'gpu'::bool
  THEN ok(pg_temp.injected(n, 'SELECT l.id, r.id FROM jp_l l FULL JOIN jp_r r ON l.k = r.k') IN ('same', '53200'),
          format('allocation %s fails in a full join: the same rows or an out-of-memory ERROR', n))
  ELSE is(pg_temp.injected(n, 'SELECT l.id, r.id FROM jp_l l FULL JOIN jp_r r ON l.k = r.k'), '53200',
          format('allocation %s fails in a full join: an out-of-memory ERROR', n))
END FROM generate_series(1, 3) n;
SELECT is(gpuhash_device_memory(), 0::bigint, 'nothing held after the failed allocations');

------------------------------------------------------------------------------
-- parallel workers: the same rows, nothing held in the leader after
SET LOCAL max_parallel_workers_per_gather = 2;
SET LOCAL parallel_setup_cost = 0;
SET LOCAL parallel_tuple_cost = 0;
SET LOCAL min_parallel_table_scan_size = 0;
SELECT ok(pg_temp.plan_text('SELECT count(*), sum(r.v) FROM jp_l l JOIN jp_r r ON l.k = r.k')
          ~ 'Gather(.|\n)*GpuHashJoin', 'a parallel plan with the GpuHashJoin under Gather');
SET LOCAL gpuhash.enabled = off;
SELECT count(*) || '/' || sum(r.v) AS native_par FROM jp_l l JOIN jp_r r ON l.k = r.k \gset
SELECT count(*) || '/' || sum(l.v) AS native_par_anti FROM jp_l l WHERE NOT EXISTS (SELECT 1 FROM jp_r r WHERE r.k = l.k) \gset
SET LOCAL gpuhash.enabled = on;
SELECT is((SELECT count(*) || '/' || sum(r.v) FROM jp_l l JOIN jp_r r ON l.k = r.k), :'native_par',
          'parallel inner join: same count and sum');
SELECT is((SELECT count(*) || '/' || sum(l.v) FROM jp_l l WHERE NOT EXISTS (SELECT 1 FROM jp_r r WHERE r.k = l.k)),
          :'native_par_anti', 'parallel anti join: same count and sum');
SELECT is(gpuhash_device_memory(), 0::bigint, 'nothing held in the leader after parallel joins');

-- the shared build: the participants read the inner side together (a
-- parallel scan of jp_r); with it off each reads all of jp_r
SELECT ok(pg_temp.plan_text('SELECT count(*), sum(r.v) FROM jp_l l JOIN jp_r r ON l.k = r.k')
          ~ 'Inner Side: read by all participants together(.|\n)*Parallel Seq Scan on jp_r',
          'a shared build over a parallel scan of the inner side');
SET LOCAL parallel_leader_participation = off;
SELECT is((SELECT count(*) || '/' || sum(r.v) FROM jp_l l JOIN jp_r r ON l.k = r.k), :'native_par',
          'shared build, workers only: same count and sum');
RESET parallel_leader_participation;
-- by-reference keys and columns travel through the shared chunks as offsets
SET LOCAL gpuhash.enabled = off;
SELECT count(*) || '/' || sum(r.v) || '/' || sum(length(r.t)) || '/' || count(r.k) AS native_text
  FROM jp_l l JOIN jp_r r ON l.t = r.t \gset
SET LOCAL gpuhash.enabled = on;
SELECT ok(pg_temp.plan_text('SELECT count(*), sum(r.v), sum(length(r.t)), count(r.k) FROM jp_l l JOIN jp_r r ON l.t = r.t')
          ~ 'Inner Side: read by all participants together', 'a shared build of a text-keyed inner side');
SELECT is((SELECT count(*) || '/' || sum(r.v) || '/' || sum(length(r.t)) || '/' || count(r.k)
             FROM jp_l l JOIN jp_r r ON l.t = r.t), :'native_text',
          'shared build with text keys and NULL columns: same count and sums');
-- a Gather rescanned under a nested loop: the shared build starts over each time
SET LOCAL enable_material = off;
SELECT ok(pg_temp.plan_text('SELECT * FROM (SELECT count(*), sum(r.v) FROM jp_l l JOIN jp_r r ON l.t = r.t) ss RIGHT JOIN (VALUES (1), (2), (3)) v(x) ON true')
          ~ 'Nested Loop(.|\n)*Gather(.|\n)*Inner Side: read by all participants together',
          'a rescanned Gather over a shared build');
SELECT is((SELECT string_agg(c::text || '/' || s::text, ' ' ORDER BY x)
             FROM (SELECT count(*) c, sum(r.v) s FROM jp_l l JOIN jp_r r ON l.t = r.t) ss
                  RIGHT JOIN (VALUES (1), (2), (3)) v(x) ON true),
          (SELECT string_agg(split_part(:'native_text', '/', 1) || '/' || split_part(:'native_text', '/', 2), ' ')
             FROM generate_series(1, 3)),
          'rescans of a shared build: the same rows every time');
SELECT is(gpuhash_device_memory(), 0::bigint, 'nothing held after the rescanned shared builds');
RESET enable_material;
-- four workers and the leader probe one shared store of jp_r, whose keys
-- and texts repeat (so it is regrouped, and every participant but the first
-- to build builds from grouped hashes): native's rows, run after run, with
-- which participants come in time left to chance
CREATE FUNCTION pg_temp.runs(q text, n int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    r text;
    acc text := '';
BEGIN
    FOR i IN 1..n LOOP
        EXECUTE q INTO r;
        acc := acc || r || ';';
    END LOOP;
    RETURN acc;
END $$;
SET LOCAL max_parallel_workers_per_gather = 4;
SELECT ok(pg_temp.plan_text('SELECT count(*), sum(r.v), sum(length(r.t)) FROM jp_l l JOIN jp_r r ON l.t = r.t AND l.k = r.k')
          ~ 'Workers Planned: 4(.|\n)*Inner Side: read by all participants together',
          'a shared build with four workers');
SET LOCAL gpuhash.enabled = off;
SELECT count(*) || '/' || sum(r.v) || '/' || sum(length(r.t)) AS native_two
  FROM jp_l l JOIN jp_r r ON l.t = r.t AND l.k = r.k \gset
SET LOCAL gpuhash.enabled = on;
SELECT is(pg_temp.runs('SELECT count(*) || ''/'' || sum(r.v) || ''/'' || sum(length(r.t)) FROM jp_l l JOIN jp_r r ON l.t = r.t AND l.k = r.k', 8),
          repeat(:'native_two' || ';', 8),
          'a shared store with repeated hashes, five participants: native''s rows in eight runs');
SELECT is(pg_temp.runs('SELECT count(*) || ''/'' || sum(r.v) FROM jp_l l JOIN jp_r r ON l.k = r.k', 8),
          repeat(:'native_par' || ';', 8),
          'a shared store of integer keys, five participants: native''s rows in eight runs');
SELECT is(gpuhash_device_memory(), 0::bigint, 'nothing held after the five-participant shared builds');
-- the store allocated early for the planner's estimate of the inner rows:
-- far too few (k + 0 = k: 0.5 % expected, every row there), so it is
-- allocated again once the rows are counted, and far too many (k + 0 < k:
-- a third expected, a tenth there), so it is kept, larger than the rows
CREATE FUNCTION pg_temp.est_join(cond text) RETURNS text LANGUAGE sql AS $$
  SELECT format('SELECT count(*) || ''/'' || sum(r.v) FROM jp_l l JOIN (SELECT * FROM jp_r WHERE %s) r ON l.k = r.k', cond)
$$;
CREATE FUNCTION pg_temp.native_runs(q text, n int) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('gpuhash.enabled', 'off', true);
    q := pg_temp.runs(q, n);
    PERFORM set_config('gpuhash.enabled', 'on', true);
    RETURN q;
END $$;
SELECT ok(pg_temp.plan_text(pg_temp.est_join(cond))
          ~ 'Inner Side: read by all participants together(.|\n)*Parallel Seq Scan on jp_r',
          'a shared build whose inner rows the planner ' || what)
  FROM (VALUES ('k + 0 = k', 'underestimates'), ('k + 0 < k OR k % 10 = 0', 'overestimates')) v(cond, what);
SELECT is(pg_temp.runs(pg_temp.est_join(cond), 4), pg_temp.native_runs(pg_temp.est_join(cond), 4),
          what || ' inner rows than estimated: native''s rows in four runs')
  FROM (VALUES ('k + 0 = k', 'more'), ('k + 0 < k OR k % 10 = 0', 'fewer')) v(cond, what);
SET LOCAL max_parallel_workers_per_gather = 2;
SET LOCAL gpuhash.shared_build = off;
SELECT ok(pg_temp.plan_text('SELECT count(*), sum(r.v) FROM jp_l l JOIN jp_r r ON l.k = r.k')
          !~ 'Inner Side: read by all', 'shared_build = off: every participant reads the inner side');
SELECT is((SELECT count(*) || '/' || sum(r.v) FROM jp_l l JOIN jp_r r ON l.k = r.k), :'native_par',
          'without the shared build: same count and sum');
RESET gpuhash.shared_build;

-- EXPLAIN ANALYZE accounts for every participant: the leader's verified
-- matches plus each worker's add up to the join's rows (the leader does not
-- take part, so that the workers' counters must carry the count)
SET LOCAL parallel_leader_participation = off;
CREATE TEMP TABLE par_explain AS
  SELECT x::json -> 0 -> 'Plan' AS p FROM pg_temp.explain_json(
    'SELECT count(*), sum(r.v) FROM jp_l l JOIN jp_r r ON l.k = r.k') x;
CREATE TEMP TABLE par_node AS
  WITH RECURSIVE n(j) AS (SELECT p FROM par_explain
                          UNION ALL SELECT c FROM n, json_array_elements(n.j -> 'Plans') c)
  SELECT j FROM n WHERE j ->> 'Custom Plan Provider' = 'GpuHashJoin';
SELECT is((SELECT (j ->> 'Parallel Aware')::bool FROM par_node), true,
          'the parallel GpuHashJoin shares its counters through the parallel segment');
RESET parallel_leader_participation;
SELECT is((SELECT coalesce((j ->> 'Verified Matches')::bigint, 0)
                  + coalesce((SELECT sum((w ->> 'Verified Matches')::bigint)
                                FROM json_array_elements(j -> 'Join Workers') w), 0)::bigint
             FROM par_node),
          (SELECT split_part(:'native_par', '/', 1)::bigint),
          'leader and workers'' verified matches add up to the join''s rows');

SELECT * FROM finish();
ROLLBACK;
