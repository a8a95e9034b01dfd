-- join_exec: executor paths, gpuhash against native: parallel plans,
-- rescans (the join under a nested loop, a SubPlan, LATERAL, a LIMIT),
-- generic plans with parameters, cursors (forward, SCROLL backward, WITH
-- HOLD), errors in the middle of a join, and the join's tuning settings.
-- no JIT: its cost thresholds are irrelevant here, and some PostgreSQL
-- builds (the GPU host's) have no LLVM
SET jit = off;
SET gpuhash.enabled = off;

------------------------------------------------------------------------------
-- parallel plans
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET min_parallel_index_scan_size = 0;

-- gpu_joins: GpuHashJoin nodes; under_gather: how many of them run in the
-- workers (a partial path: inner, left, semi and anti joins)
CREATE TEMP TABLE par_q (n int, q text);
INSERT INTO par_q VALUES
  (1, 'SELECT a.id AS a_id, b.id AS b_id FROM fa a JOIN fb b ON a.k = b.k'),
  (2, 'SELECT a.id AS a_id, b.id AS b_id FROM fa a LEFT JOIN fb b ON a.k = b.k AND a.v < b.v'),
  (3, 'SELECT a.id FROM fa a WHERE EXISTS (SELECT 1 FROM fb b WHERE b.k = a.k AND b.v > 100)'),
  (4, 'SELECT a.id FROM fa a WHERE NOT EXISTS (SELECT 1 FROM fb b WHERE b.k = a.k)'),
  (5, 'SELECT a.g, count(*) AS n, sum(b.v) AS s FROM fa a JOIN fb b ON a.k = b.k GROUP BY a.g'),
  (6, 'SELECT count(*) AS n, sum(a.v) AS s FROM dup_build a JOIN dup_probe b ON a.k = b.k'),
  (7, 'SELECT f.id, d1.name AS n1, d2.name AS n2 FROM fact f JOIN dim1 d1 ON f.d1 = d1.id JOIN dim2 d2 ON f.d2 = d2.id'),
  (8, 'SELECT a.id AS a_id, b.id AS b_id FROM fa a RIGHT JOIN fb b ON a.k = b.k'),
  (9, 'SELECT a.id AS a_id, b.id AS b_id FROM fa a FULL JOIN fb b ON a.k = b.k'),
  (10, 'SELECT a.id AS a_id, b.id AS b_id FROM ta a JOIN tb b ON a.k_text = b.k_text'),
  (11, 'SELECT a.id AS a_id, b.id AS b_id FROM skew_a a JOIN skew_b b ON a.k = b.k');
SELECT n, gh_check(q) AS parallel, gh_parallel_joins(q) AS under_gather FROM par_q ORDER BY n;
-- the parallel plans are really parallel, natively too
SELECT n, gh_plan_count(q, 'native', 'Gather') > 0 AS native_parallel FROM par_q WHERE n <= 7 ORDER BY n;

-- every plan run in a worker (force_parallel_mode = regress)
SET force_parallel_mode = regress;
SELECT n, gh_check(q) AS in_worker FROM par_q ORDER BY n;
RESET force_parallel_mode;

RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET min_parallel_index_scan_size;
-- serial from here on
SET max_parallel_workers_per_gather = 0;

------------------------------------------------------------------------------
-- rescans: the join as the inner side of a nested loop over outer_g (22
-- values and a NULL), with the parameter on either input, in the join
-- filter, in the hash key, above the join only, and with LIMIT (a rescan
-- before the join has finished)
CREATE TEMP TABLE rescan_q (n int, what text, q text);
INSERT INTO rescan_q VALUES
  (1, 'param on fa', 'SELECT o.g, s.c, s.sv FROM outer_g o, LATERAL (SELECT count(*) AS c, sum(b.v) AS sv
       FROM fa a JOIN fb b ON a.k = b.k WHERE a.g = o.g OFFSET 0) s'),
  (2, 'param on fb', 'SELECT o.g, s.c, s.sv FROM outer_g o, LATERAL (SELECT count(*) AS c, sum(a.v) AS sv
       FROM fa a JOIN fb b ON a.k = b.k WHERE b.k2 = o.g % 5 OFFSET 0) s'),
  (3, 'param on both', 'SELECT o.g, s.a_id, s.b_id FROM outer_g o, LATERAL (SELECT a.id AS a_id, b.id AS b_id
       FROM fa a JOIN fb b ON a.k = b.k WHERE a.g = o.g AND b.v < o.g * 10 OFFSET 0) s'),
  (4, 'param in join filter', 'SELECT o.g, s.c FROM outer_g o, LATERAL (SELECT count(*) AS c
       FROM fa a JOIN fb b ON a.k = b.k AND a.v + b.v > o.g * 50 OFFSET 0) s'),
  (5, 'param in hash key', 'SELECT o.g, s.c FROM outer_g o, LATERAL (SELECT count(*) AS c
       FROM fa a JOIN fb b ON a.k = b.k + o.g OFFSET 0) s'),
  (6, 'param above join', 'SELECT o.g, s.c FROM outer_g o, LATERAL (SELECT count(*) FILTER (WHERE a.v > o.g * 40) AS c
       FROM fa a JOIN fb b ON a.k = b.k) s'),
  (7, 'left, param in filter', 'SELECT o.g, s.c, s.cb FROM outer_g o, LATERAL (SELECT count(*) AS c, count(b.id) AS cb
       FROM fa a LEFT JOIN fb b ON a.k = b.k AND b.v > o.g * 20 OFFSET 0) s'),
  (8, 'full, param above', 'SELECT o.g, s.c, s.ca, s.cb FROM outer_g o, LATERAL (SELECT count(*) AS c, count(a.id) AS ca, count(b.id) AS cb
       FROM fa a FULL JOIN fb b ON a.k = b.k WHERE coalesce(a.g, -1) <> o.g OFFSET 0) s'),
  (9, 'right, param in filter', 'SELECT o.g, s.c, s.ca FROM outer_g o, LATERAL (SELECT count(*) AS c, count(a.id) AS ca
       FROM fa a RIGHT JOIN fb b ON a.k = b.k AND a.g <> o.g OFFSET 0) s'),
  (10, 'anti, param on fa', 'SELECT o.g, s.c FROM outer_g o, LATERAL (SELECT count(*) AS c FROM fa a
       WHERE a.g = o.g AND NOT EXISTS (SELECT 1 FROM fb b WHERE b.k = a.k) OFFSET 0) s'),
  (11, 'semi, param on fb', 'SELECT o.g, s.c FROM outer_g o, LATERAL (SELECT count(*) AS c FROM fa a
       WHERE EXISTS (SELECT 1 FROM fb b WHERE b.k = a.k AND b.k2 = o.g % 5) OFFSET 0) s'),
  (12, 'limit', 'SELECT o.g, (SELECT count(*) FROM (SELECT 1 FROM fa a JOIN fb b ON a.k = b.k
       WHERE b.v = o.g LIMIT 3) x) AS c FROM outer_g o'),
  (13, 'subplan', 'SELECT o.g, (SELECT sum(a.v + b.v) FROM fa a JOIN fb b ON a.k = b.k WHERE a.g = o.g) AS s
       FROM outer_g o'),
  (14, 'subplan in where', 'SELECT o.g FROM outer_g o WHERE o.g * 100 < (SELECT count(*) FROM fa a
       JOIN fb b ON a.k = b.k WHERE a.g = o.g AND b.v > 200)'),
  (15, 'multi-way, param', 'SELECT o.g, s.c FROM outer_g o, LATERAL (SELECT count(*) AS c FROM fact f
       JOIN dim1 d1 ON f.d1 = d1.id JOIN dim2 d2 ON f.d2 = d2.id WHERE d1.grp = o.g % 5 OFFSET 0) s'),
  (16, 'param in probe key', 'SELECT o.g, s.c FROM outer_g o, LATERAL (SELECT count(*) AS c
       FROM fa a JOIN fb b ON a.k - o.g = b.k OFFSET 0) s'),
  (17, 'param in both keys', 'SELECT o.g, s.c FROM outer_g o, LATERAL (SELECT count(*) AS c
       FROM fa a JOIN fb b ON a.k + o.g = b.k * (o.g % 3 + 1) OFFSET 0) s');
SELECT n, what, gh_check(q) AS rescan FROM rescan_q ORDER BY n;
-- the joins really are rescanned (the nested loop or SubPlan is above them)
SELECT n, what, gh_plan_count(q, 'gpuhash', 'Nested Loop|SubPlan') > 0 AS rescanned FROM rescan_q ORDER BY n;

-- rescans with no parameter change at all: a nested loop whose inner side
-- is the join, without a Material in between
SET enable_material = off;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT gh_check('SELECT o.g, j.a_id FROM (SELECT * FROM outer_g WHERE g < 4) o,
                   (SELECT a.id AS a_id, a.g FROM fa a JOIN fb b ON a.k = b.k WHERE b.v < 30 OFFSET 0) j
                  WHERE j.g < o.g') AS rescan_unchanged;
SELECT gh_check('SELECT o.g, j.a_id, j.b_id FROM (SELECT * FROM outer_g WHERE g < 4) o,
                   (SELECT a.id AS a_id, b.id AS b_id, a.g FROM fa a FULL JOIN fb b ON a.k = b.k
                     WHERE coalesce(b.v, 0) < 30 OFFSET 0) j
                  WHERE coalesce(j.g, 0) <= o.g') AS rescan_unchanged_full;
RESET enable_material;
RESET enable_hashjoin;
RESET enable_mergejoin;

------------------------------------------------------------------------------
-- generic plans with parameters: each statement prepared twice, one for
-- native and one for gpuhash planning
SET plan_cache_mode = force_generic_plan;
PREPARE pn_inner(int, int) AS
  SELECT a.id AS a_id, b.id AS b_id FROM fa a JOIN fb b ON a.k = b.k WHERE a.g = $1 AND b.v < $2;
PREPARE pg_inner(int, int) AS
  SELECT a.id AS a_id, b.id AS b_id FROM fa a JOIN fb b ON a.k = b.k WHERE a.g = $1 AND b.v < $2;
PREPARE pn_left(int) AS
  SELECT a.id AS a_id, b.id AS b_id FROM fa a LEFT JOIN fb b ON a.k = b.k + $1 AND a.v > b.v - $1 WHERE a.g < 4;
PREPARE pg_left(int) AS
  SELECT a.id AS a_id, b.id AS b_id FROM fa a LEFT JOIN fb b ON a.k = b.k + $1 AND a.v > b.v - $1 WHERE a.g < 4;
PREPARE pn_anti(text) AS
  SELECT a.id FROM fa a WHERE NOT EXISTS (SELECT 1 FROM fb b WHERE b.t = a.t AND b.t > $1);
PREPARE pg_anti(text) AS
  SELECT a.id FROM fa a WHERE NOT EXISTS (SELECT 1 FROM fb b WHERE b.t = a.t AND b.t > $1);
PREPARE pn_agg(numeric) AS
  SELECT d1.grp, count(*) AS n, sum(f.m) AS s FROM fact f JOIN dim1 d1 ON f.d1 = d1.id
   WHERE f.m > $1 GROUP BY d1.grp;
PREPARE pg_agg(numeric) AS
  SELECT d1.grp, count(*) AS n, sum(f.m) AS s FROM fact f JOIN dim1 d1 ON f.d1 = d1.id
   WHERE f.m > $1 GROUP BY d1.grp;
-- the gpuhash statements' plans are generic ($n in them) and GpuHashJoins
SELECT s, gh_plan_count(format('EXECUTE %s', s), 'gpuhash', 'GpuHashJoin') AS gpu_joins,
       gh_plan_count(format('EXECUTE %s', s), 'gpuhash', '\$1') > 0 AS generic
  FROM (VALUES ('pg_inner(3, 100)'), ('pg_left(2)'), ('pg_anti(''v2'')'), ('pg_agg(10)')) v(s);
SELECT args, gh_check_prepared('pn_inner', 'pg_inner', args) AS generic_inner
  FROM (VALUES ('3, 100'), ('0, 500'), ('19, 0'), ('NULL, 100'), ('7, 250')) v(args);
SELECT args, gh_check_prepared('pn_left', 'pg_left', args) AS generic_left
  FROM (VALUES ('0'), ('1'), ('3'), ('-3'), ('NULL')) v(args);
SELECT args, gh_check_prepared('pn_anti', 'pg_anti', args) AS generic_anti
  FROM (VALUES ('''v'''), ('''v3'''), ('''v9'''), ('''w''')) v(args);
SELECT args, gh_check_prepared('pn_agg', 'pg_agg', args) AS generic_agg
  FROM (VALUES ('0'), ('50.5'), ('96'), ('1000')) v(args);
DEALLOCATE ALL;
RESET plan_cache_mode;

------------------------------------------------------------------------------
-- cursors: a SCROLL cursor planned under gpuhash read forward, backward
-- (PostgreSQL adds a Material: GpuHashJoin does not scan backwards),
-- rewound and read again (gh_cursor_check in join_setup)
SELECT what, gh_cursor_check(q) AS scroll_cursor FROM (VALUES
  (1, 'inner', 'SELECT a.id AS a_id, b.id AS b_id FROM fa a JOIN fb b ON a.k = b.k WHERE a.g < 5'),
  (2, 'left', 'SELECT a.id AS a_id, b.v FROM fa a LEFT JOIN fb b ON a.k = b.k AND b.v < 100 WHERE a.g < 5'),
  (3, 'full', 'SELECT a.id AS a_id, b.id AS b_id FROM fa a FULL JOIN fb b ON a.k = b.k AND a.g < 5'),
  (4, 'semi', 'SELECT a.id FROM fa a WHERE a.k IN (SELECT k FROM fb WHERE v < 50)'),
  (5, 'anti', 'SELECT b.id FROM fb b WHERE NOT EXISTS (SELECT 1 FROM fa a WHERE a.k = b.k)'),
  (6, 'star', 'SELECT f.id, d1.name AS n1, d3.name AS n3 FROM fact f JOIN dim1 d1 ON f.d1 = d1.id
                JOIN dim3 d3 ON f.d3 = d3.id WHERE f.id % 3 = 0'),
  (7, 'empty', 'SELECT a.id AS a_id FROM fa a JOIN fb_empty b ON a.k = b.k')
) v(n, what, q) ORDER BY n;

-- a plain (NO SCROLL) cursor read in chunks: the MOVE counts add up to the
-- native row count, and going backwards is refused
SELECT count(*) AS native_rows FROM fa a JOIN fb b ON a.k = b.k WHERE a.g < 5;
BEGIN;
SET LOCAL gpuhash.enabled = on;
SET LOCAL gpuhash.force_join = on;
DECLARE c NO SCROLL CURSOR FOR
  SELECT a.id AS a_id, b.id AS b_id FROM fa a JOIN fb b ON a.k = b.k WHERE a.g < 5;
SELECT gh_move('c', 'forward', 1000) AS moved;
SELECT gh_move('c', 'forward', 1000) AS moved;
SELECT gh_move('c', 'forward', 1000) AS moved;
SELECT gh_move('c', 'forward') AS moved_rest;
SELECT gh_move('c', 'forward', 1) AS moved_past_end;
FETCH BACKWARD 1 FROM c;
ROLLBACK;

-- a SCROLL cursor at the SQL level: whole passes in both directions
BEGIN;
SET LOCAL gpuhash.enabled = on;
SET LOCAL gpuhash.force_join = on;
DECLARE c SCROLL CURSOR FOR
  SELECT a.id AS a_id, b.id AS b_id FROM fa a LEFT JOIN fb b ON a.k = b.k WHERE a.g < 5;
SELECT gh_move('c', 'forward', 777) AS moved;
SELECT gh_move('c', 'backward', 500) AS moved_back;
SELECT gh_move('c', 'forward') AS moved_rest;
SELECT gh_move('c', 'backward') AS moved_back_all;
SELECT gh_move('c', 'forward') AS moved_all_again;
COMMIT;
SELECT count(*) AS native_left_rows FROM fa a LEFT JOIN fb b ON a.k = b.k WHERE a.g < 5;

-- a cursor WITH HOLD outlives its transaction (materialized at COMMIT)
BEGIN;
SET LOCAL gpuhash.enabled = on;
SET LOCAL gpuhash.force_join = on;
DECLARE h CURSOR WITH HOLD FOR
  SELECT d1.grp, count(*) AS n FROM fact f JOIN dim1 d1 ON f.d1 = d1.id GROUP BY d1.grp ORDER BY d1.grp;
FETCH 2 FROM h;
COMMIT;
FETCH ALL FROM h;
CLOSE h;
SELECT d1.grp, count(*) AS n FROM fact f JOIN dim1 d1 ON f.d1 = d1.id GROUP BY d1.grp ORDER BY d1.grp;
SELECT gpuhash_device_memory() AS held_after_cursors;
-- a half-read cursor holds the join's table (so the zeros above can fail);
-- closing it releases the table
BEGIN;
SET LOCAL gpuhash.enabled = on;
SET LOCAL gpuhash.force_join = on;
DECLARE half CURSOR FOR SELECT a.id FROM fa a JOIN fb b ON a.k = b.k;
SELECT gh_move('half', 'forward', 10) AS moved;
SELECT gpuhash_device_memory() > 0 AS held_while_open;
CLOSE half;
SELECT gpuhash_device_memory() AS held_after_close;
COMMIT;

------------------------------------------------------------------------------
-- an ERROR in the middle of a join (a join filter dividing by zero on one
-- pair of rows): the ERROR comes out, nothing stays held, the session goes on
SET gpuhash.force_join = on;
SET gpuhash.enabled = on;
SELECT count(*) FROM gh_plan_lines('SELECT count(*) FROM fa a JOIN fb b ON a.k = b.k AND 1 / (a.id - 4321 + b.id * 0) >= 0', 'gpuhash') l
 WHERE l ~ 'GpuHashJoin|Join Filter';
SELECT count(*) FROM fa a JOIN fb b ON a.k = b.k AND 1 / (a.id - 4321 + b.id * 0) >= 0;
SELECT gpuhash_device_memory() AS held_after_error;
-- an ERROR while the inner side is read
SELECT count(b.x) FROM fa a JOIN (SELECT k, 1 / (id - 77) AS x FROM fb) b ON a.k = b.k;
SELECT gpuhash_device_memory() AS held_after_inner_error;
-- and in a subtransaction that is rolled back
BEGIN;
SAVEPOINT s1;
SELECT count(*) FROM fa a LEFT JOIN fb b ON a.k = b.k AND 1 / (b.id - 5000 + a.id * 0) >= 0;
ROLLBACK TO SAVEPOINT s1;
SELECT gpuhash_device_memory() AS held_after_savepoint;
SELECT count(*) = (SELECT count(*) FROM gh_rows('SELECT 1 FROM fa a JOIN fb b ON a.k = b.k', 'native')) AS works_after_rollback
  FROM fa a JOIN fb b ON a.k = b.k;
COMMIT;
RESET gpuhash.force_join;
SET gpuhash.enabled = off;

------------------------------------------------------------------------------
-- the join's tuning settings change how it runs, never its rows:
-- tiny probe batches, every cooperative group size, double hashing,
-- sparse and nearly full tables
CREATE TEMP TABLE tune_q (n int, q text);
INSERT INTO tune_q VALUES
  (1, 'SELECT a.id AS a_id, b.id AS b_id FROM fa a JOIN fb b ON a.k = b.k'),
  (2, 'SELECT a.id AS a_id, b.id AS b_id FROM fa a FULL JOIN fb b ON a.k = b.k AND a.v < b.v'),
  (3, 'SELECT a.id FROM fa a WHERE NOT EXISTS (SELECT 1 FROM fb b WHERE b.t = a.t AND b.v < 250)'),
  (4, 'SELECT a.id AS a_id, b.id AS b_id FROM dup_probe a JOIN dup_build b ON a.k = b.k'),
  (5, 'SELECT a.id AS a_id, b.id AS b_id FROM skew_b a LEFT JOIN skew_a b ON a.k = b.k'),
  (6, 'SELECT a.id AS a_id, b.id AS b_id FROM ta a JOIN tb b ON a.k_numeric = b.k_numeric');
SELECT s.name || ' = ' || s.val AS setting, n, gh_check_with(s.name, s.val, q) AS tuned
  FROM tune_q,
  (VALUES (1, 'gpuhash.batch_rows', '1'), (2, 'gpuhash.batch_rows', '7'), (3, 'gpuhash.batch_rows', '1000'),
          (4, 'gpuhash.group_size', '1'), (5, 'gpuhash.group_size', '2'), (6, 'gpuhash.group_size', '8'),
          (7, 'gpuhash.group_size', '16'), (8, 'gpuhash.group_size', '32'),
          (9, 'gpuhash.probe_scheme', 'double'),
          (10, 'gpuhash.load_factor', '0.05'), (11, 'gpuhash.load_factor', '0.95')) s(o, name, val)
 WHERE n <= CASE WHEN s.o = 1 THEN 3 ELSE 6 END
 ORDER BY s.o, n;
RESET gpuhash.batch_rows;
RESET gpuhash.group_size;
RESET gpuhash.probe_scheme;
RESET gpuhash.load_factor;

------------------------------------------------------------------------------
-- the outer Seq Scan returns its heap tuples as they are (no projection) and
-- the join keeps only the outer columns it reads: by-reference columns and
-- NULLs after the key, a column read only by the join filter, a whole-row
-- reference (the scan projects), and tables whose rows need converting (a
-- dropped column, a column added with a default after rows were written),
-- where the scan projects as before
CREATE TEMP TABLE wide_o (c1 text, k int, c3 numeric, c4 text, c5 int, c6 bytea, c7 int8);
INSERT INTO wide_o
  SELECT CASE WHEN i % 5 = 0 THEN NULL ELSE 'a' || i END, CASE WHEN i % 11 = 0 THEN NULL ELSE i % 300 END,
         i * 1.5, repeat('x', i % 40), CASE WHEN i % 7 = 0 THEN NULL ELSE i END,
         decode(md5(i::text), 'hex'), i::int8 * 1000
    FROM generate_series(1, 3000) i;
CREATE TEMP TABLE wide_i (k int, w text);
INSERT INTO wide_i SELECT i % 250, 'w' || i FROM generate_series(1, 400) i;
CREATE TEMP TABLE wide_d AS SELECT * FROM wide_o;
ALTER TABLE wide_d DROP COLUMN c3;
CREATE TEMP TABLE wide_m AS SELECT * FROM wide_o;
ALTER TABLE wide_m ADD COLUMN c8 int DEFAULT 42;
INSERT INTO wide_m SELECT c1, k, c3, c4, c5, c6, c7, k * 2 FROM wide_o WHERE k < 20;
ANALYZE wide_o, wide_i, wide_d, wide_m;
CREATE TEMP TABLE wide_q (n int, q text);
INSERT INTO wide_q VALUES
  (1, 'SELECT o.c7, o.c4, o.c1, i.w FROM wide_o o JOIN wide_i i ON o.k = i.k'),
  (2, 'SELECT o.c1, i.w FROM wide_o o JOIN wide_i i ON o.k = i.k AND o.c5 < i.k * 10'),
  (3, 'SELECT o.c6, o.c3, i.w FROM wide_o o LEFT JOIN wide_i i ON o.k = i.k'),
  (4, 'SELECT o, i.w FROM wide_o o JOIN wide_i i ON o.k = i.k'),
  (5, 'SELECT o.c6, o.c7, i.w FROM wide_d o LEFT JOIN wide_i i ON o.k = i.k'),
  (6, 'SELECT o.c8, o.c1, i.w FROM wide_m o JOIN wide_i i ON o.k = i.k'),
  (7, 'SELECT count(*), sum(o.c7), max(o.c4) FROM wide_o o WHERE NOT EXISTS (SELECT 1 FROM wide_i i WHERE i.k = o.k)'),
  (8, 'SELECT o.c5, o.c4 FROM wide_o o WHERE EXISTS (SELECT 1 FROM wide_i i WHERE i.k = o.k AND i.w > o.c1)');
SELECT n, gh_check(q) AS whole_rows FROM wide_q ORDER BY n;
-- the outer scan's output: wide_o's whole rows (all seven columns), not with
-- the whole-row reference, the dropped column or the added one
CREATE FUNCTION pg_temp.outer_output(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  l text;
  seen bool := false;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || q LOOP
    IF seen AND l ~ '^\s*Output:' THEN RETURN btrim(l); END IF;
    seen := l ~ 'Seq Scan on \S+\.wide_[a-z]+ o$';
  END LOOP;
  RETURN 'no outer Seq Scan';
END $$;
SET gpuhash.enabled = on;
SET gpuhash.force_join = on;
SELECT n, pg_temp.outer_output(q) AS outer_scan FROM wide_q WHERE n IN (1, 4, 5, 6) ORDER BY n;
RESET gpuhash.force_join;
SET gpuhash.enabled = off;

SELECT gpuhash_device_memory() AS held_at_end;
RESET max_parallel_workers_per_gather;
RESET gpuhash.enabled;
