-- join_shapes: data shapes and qual placements, gpuhash against native:
-- duplicates (1000 rows per key), skew (one key with 10000 rows), empty
-- sides, extra join quals (Join Filter) and filters above outer joins.
-- no JIT: its cost thresholds are irrelevant here, and some PostgreSQL
-- builds (the GPU host's) have no LLVM
SET jit = off;
SET gpuhash.enabled = off;

-- the shapes are what they claim (native counts)
SELECT max(c) AS dup_build_rows_per_key FROM (SELECT count(*) c FROM dup_build GROUP BY k) x;
SELECT max(c) AS skew_rows_of_top_key FROM (SELECT count(*) c FROM skew_a GROUP BY k) x;

-- duplicates: every join type, both tables on either side of the query
-- (the planner picks the build side; both orders get exercised), rows and
-- an aggregate over them
SELECT j.jt, gh_check(gh_jq(j.jt, 'dup_probe', 'dup_build', 'a.k = b.k')) AS dup_probe_vs_build
  FROM gh_join_types j ORDER BY j.n;
SELECT j.jt, gh_check(gh_jq(j.jt, 'dup_build', 'dup_probe', 'a.k = b.k')) AS dup_build_vs_probe
  FROM gh_join_types j ORDER BY j.n;
-- 1000 x 1000 rows per key on both sides (2 keys): a million joined rows, counted
SELECT gh_check('SELECT count(*) AS n, sum(a.v * b.v) AS s, count(DISTINCT a.id) AS da
                   FROM dup_build a JOIN dup_build b ON a.k = b.k
                  WHERE a.k IN (3, 17) AND b.k IN (3, 17)') AS dup_million;
-- with a join filter cutting most of them
SELECT gh_check('SELECT a.id AS a_id, b.id AS b_id FROM dup_build a JOIN dup_probe b
                   ON a.k = b.k AND a.v = b.v') AS dup_with_filter;

-- skew: the 10000-row key on the build or the probe side
SELECT j.jt, gh_check(gh_jq(j.jt, 'skew_a', 'skew_b', 'a.k = b.k')) AS skew_a_first
  FROM gh_join_types j ORDER BY j.n;
SELECT j.jt, gh_check(gh_jq(j.jt, 'skew_b', 'skew_a', 'a.k = b.k')) AS skew_b_first
  FROM gh_join_types j ORDER BY j.n;
SELECT gh_check('SELECT count(*) AS n, sum(a.v + b.v) AS s FROM skew_a a JOIN skew_a b ON a.k = b.k
                  WHERE b.id % 10 = 0') AS skew_self;

-- empty sides: an empty table, and a side that a filter empties at run time
SELECT j.jt, gh_check(gh_jq(j.jt, 'fa', 'fb_empty', 'a.k = b.k')) AS empty_inner
  FROM gh_join_types j ORDER BY j.n;
SELECT j.jt, gh_check(gh_jq(j.jt, 'fb_empty', 'fa', 'a.k = b.k')) AS empty_outer
  FROM gh_join_types j ORDER BY j.n;
SELECT j.jt, gh_check(gh_jq(j.jt, 'fb_empty', '(SELECT * FROM fa WHERE v > 5000)', 'a.k = b.k')) AS both_empty
  FROM gh_join_types j ORDER BY j.n;
SELECT j.jt, gh_check(gh_jq(j.jt, 'fa', '(SELECT * FROM fb WHERE v > 100000 - id * 0)', 'a.k = b.k')) AS emptied_by_filter
  FROM gh_join_types j ORDER BY j.n;
SELECT j.jt, gh_check(gh_jq(j.jt, '(SELECT * FROM fa WHERE id < 0)', 'fb', 'a.k = b.k')) AS outer_emptied
  FROM gh_join_types j ORDER BY j.n;
-- one row each
SELECT j.jt, gh_check(gh_jq(j.jt, '(SELECT * FROM fa WHERE id = 5)', '(SELECT * FROM fb WHERE t = ''v5'')', 'a.k = b.k')) AS one_row_each
  FROM gh_join_types j ORDER BY j.n;

-- extra join quals: Join Filter in every join type (for outer joins a failed
-- filter means NULL-extended rows, for semi/anti it decides the match)
CREATE TEMP TABLE filter_conds (n int, cond text);
INSERT INTO filter_conds VALUES
  (1, 'a.k = b.k AND a.v < b.v'),
  (2, 'a.k = b.k AND a.v + b.v > 600'),
  (3, 'a.k = b.k AND a.t <> b.t || ''x'''),
  (4, 'a.k = b.k AND (a.v % 3 = 0 OR b.v % 5 = 0)'),
  (5, 'a.k = b.k AND a.k2 = b.k2 AND a.v <> b.v'),
  (6, 'a.k = b.k AND b.v IS NOT NULL AND a.id > b.id');
SELECT f.cond, j.jt, gh_check(gh_jq(j.jt, 'fa', 'fb', f.cond)) AS join_filter
  FROM filter_conds f, gh_join_types j ORDER BY f.n, j.n;
-- a join filter that is never true: inner/semi empty, outer joins all NULL-extended
SELECT j.jt, gh_check(gh_jq(j.jt, 'fa', 'fb', 'a.k = b.k AND a.v > b.v + 100000')) AS never_true_filter
  FROM gh_join_types j ORDER BY j.n;
-- a join filter that is NULL (not false) for some pairs
SELECT j.jt, gh_check(gh_jq(j.jt, 'fa', 'fb', 'a.k = b.k AND nullif(a.v, 3) < b.v')) AS null_filter
  FROM gh_join_types j ORDER BY j.n;

-- filters above outer joins (WHERE, not ON): on the nullable side, IS NULL
-- (which PostgreSQL may turn into an anti join), and on the kept side
SELECT q, gh_check(q) AS where_above_outer FROM (VALUES
  ('SELECT a.id AS a_id, b.id AS b_id FROM fa a LEFT JOIN fb b ON a.k = b.k WHERE b.v > 250'),
  ('SELECT a.id AS a_id, b.id AS b_id FROM fa a LEFT JOIN fb b ON a.k = b.k WHERE b.id IS NULL'),
  ('SELECT a.id AS a_id, b.id AS b_id FROM fa a LEFT JOIN fb b ON a.k = b.k WHERE coalesce(b.v, -1) < 10'),
  ('SELECT a.id AS a_id, b.id AS b_id FROM fa a LEFT JOIN fb b ON a.k = b.k WHERE a.g = 3'),
  ('SELECT a.id AS a_id, b.id AS b_id FROM fa a FULL JOIN fb b ON a.k = b.k WHERE a.id IS NULL OR b.id IS NULL'),
  ('SELECT a.id AS a_id, b.id AS b_id FROM fa a FULL JOIN fb b ON a.k = b.k WHERE coalesce(a.v, 0) + coalesce(b.v, 0) > 700'),
  ('SELECT a.id AS a_id, b.id AS b_id FROM fa a RIGHT JOIN fb b ON a.k = b.k AND a.g = 5 WHERE b.k2 = 1'),
  ('SELECT a.id AS a_id, b.id AS b_id FROM fa a LEFT JOIN fb b ON a.k = b.k AND b.v < 100 WHERE a.v < 100')
) v(q);

-- restrictions pushed to one side only (ON clause of an inner join)
SELECT gh_check('SELECT a.id AS a_id, b.id AS b_id FROM fa a JOIN fb b ON a.k = b.k AND a.g = 7 AND b.k2 = 4') AS pushed_down;

-- quals of an outer join's ON clause that reference one side only: the
-- kept side's stay in the join (they decide matching, not the rows), the
-- nullable side's go down to its scan
SELECT j.jt, gh_check(gh_jq(j.jt, 'fa', 'fb', q)) AS one_sided_on_quals
  FROM gh_join_types j,
       (VALUES ('a.k = b.k AND a.g = 3'), ('a.k = b.k AND b.v < 10'), ('a.k = b.k AND a.g = 3 AND b.v < 100')) v(q)
 ORDER BY q, j.n;

-- what the join emits: whole rows, system columns, and values computed
-- below an outer join (PlaceHolderVars: NULL in NULL-extended rows, even
-- when they are constants)
SELECT q, gh_check(q) AS targetlists FROM (VALUES
  ('SELECT a, b FROM fa a LEFT JOIN fb b ON a.k = b.k'),
  ('SELECT row_to_json(b) AS jb, a.id FROM fa a FULL JOIN fb b ON a.k = b.k'),
  ('SELECT a.ctid AS actid, b.ctid AS bctid, b.tableoid::regclass AS btab FROM fa a JOIN fb b ON a.k = b.k'),
  ('SELECT a.id, b.x, b.y, b.z FROM fa a LEFT JOIN (SELECT k, 1 AS x, k IS NULL AS y, coalesce(v, 0) + 1 AS z FROM fb) b ON a.k = b.k'),
  ('SELECT a.x, b.x AS bx, a.id, b.id AS b_id FROM (SELECT id, k, ''a'' AS x FROM fa) a FULL JOIN (SELECT id, k, ''b'' AS x FROM fb) b ON a.k = b.k'),
  ('SELECT a.id, b.c FROM fa a LEFT JOIN (SELECT k, count(*) AS c FROM fb GROUP BY k) b ON a.k = b.k'),
  ('SELECT b.id, b.k FROM fa a RIGHT JOIN fb b ON a.k = b.k'),
  ('SELECT 1 AS one FROM fa a JOIN fb b ON a.k = b.k'),
  ('SELECT a.k, b.k AS bk, a.k = b.k AS eq, a.k + b.k AS s FROM fa a FULL JOIN fb b ON a.k = b.k')
) v(q);

-- a table with dropped columns (attribute numbers with holes) on either side
CREATE TABLE dropped_cols AS SELECT id, 'x' || id AS junk1, k, v, id * 2 AS junk2, t FROM fb;
ALTER TABLE dropped_cols DROP COLUMN junk1;
ALTER TABLE dropped_cols DROP COLUMN junk2;
ANALYZE dropped_cols;
SELECT j.jt, gh_check(gh_jq(j.jt, 'fa', 'dropped_cols', 'a.k = b.k AND a.v <> b.v')) AS dropped_columns_inner
  FROM gh_join_types j ORDER BY j.n;
SELECT gh_check('SELECT d, a.id FROM dropped_cols d JOIN fa a ON d.k = a.k') AS dropped_columns_whole_row;

-- keys stored out of line (TOAST): 10 kB strings that compress badly
CREATE TABLE toast_a AS
  SELECT i AS id, (SELECT string_agg(md5((i % 40)::text || '-' || j), '') FROM generate_series(1, 320) j) AS t
    FROM generate_series(1, 200) i;
CREATE TABLE toast_b AS
  SELECT i AS id, (SELECT string_agg(md5((i % 50)::text || '-' || j), '') FROM generate_series(1, 320) j) AS t
    FROM generate_series(1, 120) i;
SELECT count(*) FILTER (WHERE pg_column_size(t) > 2000) = count(*) AS all_keys_large,
       min(length(t)) AS key_length FROM toast_a;
SELECT j.jt, gh_check(replace(gh_jq(j.jt, 'toast_a', 'toast_b', 'a.t = b.t'), 'b.id AS b_id', 'b.id AS b_id, md5(b.t) AS bt')) AS toasted_keys
  FROM gh_join_types j ORDER BY j.n;

RESET gpuhash.enabled;
