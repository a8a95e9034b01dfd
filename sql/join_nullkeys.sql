-- join_nullkeys: outer joins whose sides have NULL keys of every key type,
-- by reference above all (numeric, text, varchar, bpchar, bytea, interval,
-- uuid, text under an ICU collation), where the inner side outgrows the
-- budget: a right or full join writes its NULL-key inner rows to a file of
-- their own once it has batches, which once read such a key through a null
-- pointer (a segfault).  Each line is gh_check's "gpu_joins=N rows=R diff=D"
-- (see join_setup): D must be 0 and N at least 1.  The last queries say
-- which join types and how many batches the checks really ran, so that they
-- are not vacuous.
SET jit = off;

-- the key columns of join_setup's ta and tb (NULL every 23rd and 19th
-- row), one by value as a control; ta is the larger side
CREATE TABLE nk_col (col text);
INSERT INTO nk_col VALUES ('k_int4'), ('k_numeric'), ('k_text'), ('k_varchar'),
  ('k_bpchar'), ('k_bytea'), ('k_interval'), ('k_uuid');

-- the joins: FULL, LEFT with either side preserved (the planner hashes the
-- smaller side, so one of them runs as Right), RIGHT and ANTI
CREATE TABLE nk_shape (shape text, q text);
INSERT INTO nk_shape VALUES
  ('full', 'SELECT a.id, b.id FROM ta a FULL JOIN tb b ON a.%1$s = b.%1$s'),
  ('left', 'SELECT a.id, b.id, b.%1$s FROM ta a LEFT JOIN tb b ON a.%1$s = b.%1$s'),
  ('left small', 'SELECT a.id, b.id, a.%1$s FROM tb a LEFT JOIN ta b ON a.%1$s = b.%1$s'),
  ('right', 'SELECT a.id, b.id, b.%1$s FROM tb a RIGHT JOIN ta b ON a.%1$s = b.%1$s'),
  ('anti', 'SELECT a.id FROM ta a WHERE NOT EXISTS (SELECT 1 FROM tb b WHERE a.%1$s = b.%1$s)'),
  ('anti small', 'SELECT a.id FROM tb a WHERE NOT EXISTS (SELECT 1 FROM ta b WHERE a.%1$s = b.%1$s)');

-- text under the case-insensitive collation of join_setup (ci_a, ci_b)
-- with NULL keys, and two-column keys whose second column is NULL
CREATE TABLE nk_ci_a AS
  SELECT id, CASE WHEN id % 13 = 0 THEN NULL ELSE t END AS t FROM ci_a;
CREATE TABLE nk_ci_b AS
  SELECT id, CASE WHEN id % 11 = 0 THEN NULL ELSE t END AS t FROM ci_b;
ANALYZE nk_ci_a;
ANALYZE nk_ci_b;
CREATE TABLE nk_extra (name text, q text);
INSERT INTO nk_extra VALUES
  ('ci full', 'SELECT a.id, b.id FROM nk_ci_a a FULL JOIN nk_ci_b b ON a.t = b.t'),
  ('ci left', 'SELECT a.id, b.id FROM nk_ci_b a LEFT JOIN nk_ci_a b ON a.t = b.t'),
  ('ci anti', 'SELECT a.id FROM nk_ci_a a WHERE NOT EXISTS (SELECT 1 FROM nk_ci_b b WHERE a.t = b.t)'),
  ('two keys full', 'SELECT a.id, b.id FROM ta a FULL JOIN tb b ON a.k_text = b.k_text AND a.k_numeric = b.k_numeric'),
  ('two keys right', 'SELECT a.id, b.k_bpchar FROM tb a RIGHT JOIN ta b ON a.k_bpchar = b.k_bpchar AND a.k_uuid = b.k_uuid'),
  ('expression key full', 'SELECT a.id, b.id FROM ta a FULL JOIN tb b ON a.k_text || ''x'' = b.k_text || ''x''');

-- nk_run(wm, parallel): every check under work_mem wm, serial or with two
-- workers; each participant of a parallel join builds its own table
-- (shared_build off) or all share one (on)
CREATE FUNCTION nk_run(wm text, par text)
RETURNS TABLE (name text, result text, parallel bool) LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('work_mem', wm, true);
  IF par = 'serial' THEN
    PERFORM set_config('max_parallel_workers_per_gather', '0', true);
  ELSE
    PERFORM set_config('max_parallel_workers_per_gather', '2', true);
    PERFORM set_config('parallel_setup_cost', '0', true);
    PERFORM set_config('parallel_tuple_cost', '0', true);
    PERFORM set_config('min_parallel_table_scan_size', '0', true);
    PERFORM set_config('gpuhash.shared_build', CASE WHEN par = 'shared' THEN 'on' ELSE 'off' END, true);
  END IF;
  RETURN QUERY
    SELECT x.name, gh_check(x.q, 1, false), gh_parallel_joins(x.q) > 0
      FROM (SELECT s.shape || ' ' || c.col AS name, format(s.q, c.col) AS q
              FROM nk_shape s CROSS JOIN nk_col c
            UNION ALL
            SELECT e.name, e.q FROM nk_extra e) x;
END $$;

-- every check, once, kept for the two views below
CREATE TEMP TABLE nk_results AS
  SELECT p.wm, p.par, r.name, r.result, r.parallel
    FROM (VALUES ('64kB', 'serial'), ('64kB', 'private'), ('64kB', 'shared'),
                 ('4MB', 'serial')) p(wm, par)
   CROSS JOIN LATERAL nk_run(p.wm, p.par) r;
RESET work_mem;
RESET max_parallel_workers_per_gather;

-- one line per setting and distinct result, with the number of checks
-- that gave it (all "diff=0", none VACUOUS or an ERROR) and of those whose
-- GpuHashJoin ran under a Gather (full and right joins never do)
SELECT wm, par, regexp_replace(result, 'gpu_joins=\d+ ', '') AS result, count(*),
       count(*) FILTER (WHERE parallel) AS parallel
  FROM nk_results GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;

-- any failing check by name (none expected)
SELECT wm, par, name, result FROM nk_results
 WHERE result !~ '^gpu_joins=\d+ diff=0$' ORDER BY 1, 2, 3;

-- what the checks ran: the join types of the GpuHashJoins at 64kB,
-- serial, and whether any of each type had batches and NULL-key inner rows
-- in a file (a right or full join with batches)
CREATE FUNCTION nk_plan(q text)
RETURNS TABLE (join_type text, batches int) LANGUAGE plpgsql AS $$
DECLARE l text; jt text;
BEGIN
  PERFORM gh_set_mode('gpuhash');
  FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    IF l ~ 'Join Type: ' THEN
      jt := substring(l FROM 'Join Type: (\w+)');
    ELSIF l ~ '^\s+Buckets: \d+  Load Factor: \S+  Batches: (\d+)' AND jt IS NOT NULL THEN
      join_type := jt;
      batches := substring(l FROM '^\s+Buckets: \d+  Load Factor: \S+  Batches: (\d+)')::int;
      RETURN NEXT;
      jt := NULL;
    END IF;
  END LOOP;
  PERFORM gh_set_mode('native');
END $$;
SET work_mem = '64kB';
SET max_parallel_workers_per_gather = 0;
SELECT p.join_type, count(*) AS joins, bool_or(p.batches > 1) AS batched
  FROM (SELECT format(s.q, c.col) AS q FROM nk_shape s CROSS JOIN nk_col c
        UNION ALL SELECT q FROM nk_extra) x
 CROSS JOIN LATERAL nk_plan(x.q) p
 GROUP BY 1 ORDER BY 1;

-- the issue's repro, at the planner's own choice under its costs for a GPU
-- (force_join off): a full join of text keys with NULLs past the budget
CREATE TABLE nk_f2a AS
  SELECT g AS id, CASE WHEN g % 10 = 0 THEN NULL ELSE 't' || (g % 200) END AS kt
    FROM generate_series(1, 10000) g;
CREATE TABLE nk_f2b AS
  SELECT g AS id, CASE WHEN g % 10 = 0 THEN NULL ELSE 't' || (g % 250) END AS kt
    FROM generate_series(1, 20000) g;
ANALYZE nk_f2a;
ANALYZE nk_f2b;
SELECT gh_check('SELECT count(*), count(a.id), count(b.id) FROM nk_f2a a FULL JOIN nk_f2b b ON a.kt = b.kt');

-- a LEFT join that the planner runs with its preserved side hashed (Join
-- Type: Right) under its costs for a GPU, force_join off: its plan, then
-- its rows against native's
CREATE TABLE nk_big AS
  SELECT g AS id, CASE WHEN g % 10 = 0 THEN NULL ELSE 'key' || (g % 30000) END AS kt
    FROM generate_series(1, 200000) g;
CREATE TABLE nk_small AS
  SELECT g AS id, CASE WHEN g % 10 = 0 THEN NULL ELSE 'key' || (g % 40000) END AS kt
    FROM generate_series(1, 40000) g;
ANALYZE nk_big;
ANALYZE nk_small;
SET gpuhash.cost_as_gpu = on;
SET gpuhash.enabled = on;
SET gpuhash.force_join = off;
SET max_parallel_workers_per_gather = 0;
SET work_mem = '64kB';
CREATE FUNCTION nk_planner(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE l text; plan text := ''; mine text; theirs text;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    IF l ~ 'Join Type: ' THEN
      plan := plan || substring(l FROM 'Join Type: \w+') || ', ';
    ELSIF l ~ '^\s+Buckets: \d+  Load Factor: \S+  Batches: (\d+)' THEN
      plan := plan || CASE WHEN substring(l FROM '^\s+Buckets: \d+  Load Factor: \S+  Batches: (\d+)')::int > 1
                           THEN 'batches' ELSE 'one batch' END || ': ';
    END IF;
  END LOOP;
  EXECUTE 'SELECT row(x.*)::text FROM (' || q || ') x' INTO mine;
  PERFORM set_config('gpuhash.enabled', 'off', true);
  EXECUTE 'SELECT row(x.*)::text FROM (' || q || ') x' INTO theirs;
  PERFORM set_config('gpuhash.enabled', 'on', true);
  RETURN plan || CASE WHEN mine = theirs THEN 'same as native' ELSE 'DIFFERS: ' || mine || ' <> ' || theirs END;
END $$;
SELECT nk_planner('SELECT count(*), count(a.id), count(b.id) FROM nk_f2a a FULL JOIN nk_f2b b ON a.kt = b.kt');
SELECT nk_planner('SELECT count(*), count(b.id), sum(b.id) FROM nk_small a LEFT JOIN nk_big b ON a.kt = b.kt');
RESET gpuhash.enabled;
RESET gpuhash.cost_as_gpu;
RESET gpuhash.force_join;
RESET work_mem;
RESET max_parallel_workers_per_gather;
DROP FUNCTION nk_planner(text);

-- the same join inside gpuhash_aggregate's query, serial and parallel,
-- against the query run natively
CREATE FUNCTION nk_agg(par bool) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE d bigint;
BEGIN
  PERFORM set_config('max_parallel_workers_per_gather', CASE WHEN par THEN '2' ELSE '0' END, true);
  PERFORM set_config('parallel_setup_cost', '0', true);
  PERFORM set_config('parallel_tuple_cost', '0', true);
  PERFORM set_config('min_parallel_table_scan_size', '0', true);
  PERFORM set_config('gpuhash.force_join', 'on', true);
  CREATE TEMP TABLE nk_dev AS
    SELECT x::text AS r FROM gpuhash_aggregate(
      'SELECT a.kt, count(*), count(b.id), sum(b.id) FROM nk_f2a a FULL JOIN nk_f2b b ON a.kt = b.kt GROUP BY a.kt')
      AS x(kt text, n bigint, nb bigint, s bigint);
  PERFORM set_config('gpuhash.enabled', 'off', true);
  CREATE TEMP TABLE nk_nat AS
    SELECT x::text AS r FROM (SELECT a.kt, count(*), count(b.id), sum(b.id)
                                FROM nk_f2a a FULL JOIN nk_f2b b ON a.kt = b.kt GROUP BY a.kt) x;
  PERFORM set_config('gpuhash.enabled', 'on', true);
  -- a result with no group would make the comparison vacuous
  d := gh_diff('nk_dev', 'nk_nat') +
       CASE WHEN (SELECT count(*) FROM nk_nat) < 2 THEN 1000 ELSE 0 END;
  DROP TABLE nk_dev;
  DROP TABLE nk_nat;
  RETURN d;
END $$;
SET work_mem = '64kB';
SELECT nk_agg(false) AS serial_diff, nk_agg(true) AS parallel_diff;
RESET work_mem;
RESET max_parallel_workers_per_gather;

DROP FUNCTION nk_agg(bool);
DROP FUNCTION nk_plan(text);
DROP FUNCTION nk_run(text, text);
DROP TABLE nk_col, nk_shape, nk_extra, nk_ci_a, nk_ci_b, nk_f2a, nk_f2b, nk_big, nk_small;
