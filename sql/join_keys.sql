-- join_keys: cross-type keys, expression keys, multi-column keys, NULL
-- keys, and join conditions gpuhash must leave to PostgreSQL; gpuhash
-- against native for every join type (gh_check, gh_jq: join_setup).
-- no JIT: its cost thresholds are irrelevant here, and some PostgreSQL
-- builds (the GPU host's) have no LLVM
SET jit = off;
SET gpuhash.enabled = off;

-- the data has what the tests need: cross-type pairs that match and pairs
-- that differ only beyond the narrower type
SELECT count(*) FILTER (WHERE a.i8 <> b.i8) > 0 AS int8_high_bits_differ,
       count(*) FILTER (WHERE a.f8 <> b.f8) > 0 AS float8_differs
  FROM xt_a a JOIN xt_b b ON a.i4 = b.i4;

-- cross-type keys within one hash opfamily (integer_ops, float_ops,
-- text_ops), binary-compatible types (varchar), and keys the planner casts
-- (bpchar to text, int4 to numeric or float8)
CREATE TEMP TABLE cross_keys (n int, cond text);
INSERT INTO cross_keys VALUES
  (1, 'a.i4 = b.i8'), (2, 'a.i2 = b.i8'), (3, 'a.i2 = b.i4'), (4, 'a.i8 = b.i2'),
  (5, 'a.f4 = b.f8'), (6, 'a.f8 = b.f4'), (7, 'a.t = b.vc'), (8, 'a.vc = b.t'),
  (9, 'a.nm = b.t'), (10, 'a.t = b.nm'), (11, 'a.bc = b.t'), (12, 'a.i4 = b.n'),
  (13, 'a.f8 = b.i4'), (14, 'a.i8 = b.n');
SELECT k.cond, j.jt, gh_check(gh_jq(j.jt, 'xt_a', 'xt_b', k.cond)) AS cross_type
  FROM cross_keys k, gh_join_types j ORDER BY k.n, j.n;

-- expression keys
CREATE TEMP TABLE expr_keys (n int, cond text);
INSERT INTO expr_keys VALUES
  (1, 'a.i4 + 1 = b.i4'),
  (2, 'lower(a.t) = lower(b.t)'),
  (3, 'a.i4 / 3 = b.i4 / 2'),
  (4, 'a.t || ''-'' || a.i2 = b.t || ''-'' || b.i2'),
  (5, 'abs(a.i4) = b.i8 - 1'),
  (6, 'coalesce(a.i4, -1) = coalesce(b.i4, -1)'),
  (7, 'upper(a.bc) = upper(b.vc)'),
  (8, 'a.d + 1 = b.d'),
  (9, 'date_trunc(''day'', a.ts) = date_trunc(''day'', b.ts)'),
  (10, 'a.i4::text = substr(b.t, 2)');
SELECT k.cond, j.jt, gh_check(gh_jq(j.jt, 'xt_a', 'xt_b', k.cond)) AS expression_key
  FROM expr_keys k, gh_join_types j ORDER BY k.n, j.n;

-- multi-column keys of mixed types, with NULLs in z
CREATE TEMP TABLE multi_keys (n int, cond text);
INSERT INTO multi_keys VALUES
  (1, 'a.a = b.a AND a.b = b.b'),
  (2, 'a.a = b.a AND a.b = b.b AND a.c = b.c'),
  (3, 'a.d = b.d AND a.e = b.e AND a.a = b.a'),
  (4, 'a.n = b.n AND a.a = b.a'),
  (5, 'a.z = b.z AND a.b = b.b AND a.a = b.a'),
  (6, '(a.a, a.c) = (b.a, b.c)'),
  (7, 'a.a = b.a AND a.a = b.z');
SELECT k.cond, j.jt, gh_check(gh_jq(j.jt, 'mk_a', 'mk_b', k.cond)) AS multi_column
  FROM multi_keys k, gh_join_types j ORDER BY k.n, j.n;

-- NULL keys never match: a side whose keys are all NULL
SELECT j.jt, gh_check(gh_jq(j.jt, '(SELECT id, nullif(id, id) AS k FROM fa WHERE id <= 500)', 'fb', 'a.k = b.k')) AS all_null_outer
  FROM gh_join_types j ORDER BY j.n;
SELECT j.jt, gh_check(gh_jq(j.jt, 'fa', '(SELECT id, nullif(id, id) AS k FROM fb WHERE id <= 500)', 'a.k = b.k')) AS all_null_inner
  FROM gh_join_types j ORDER BY j.n;
-- one NULL column of a two-column key is enough to never match
SELECT j.jt, gh_check(gh_jq(j.jt,
         '(SELECT id, k, CASE WHEN id % 2 = 0 THEN NULL ELSE k2 END AS k2 FROM fa) ',
         '(SELECT id, k, CASE WHEN id % 3 = 0 THEN NULL ELSE k2 END AS k2 FROM fb)',
         'a.k = b.k AND a.k2 = b.k2')) AS half_null_two_column
  FROM gh_join_types j ORDER BY j.n;
-- and the NULL-keyed rows are there to be lost: native counts of them
SELECT (SELECT count(*) FROM fa WHERE k IS NULL) > 0 AS fa_has_null_keys,
       (SELECT count(*) FROM fb WHERE k IS NULL) > 0 AS fb_has_null_keys;
SELECT j.jt, gh_check(gh_jq(j.jt, 'fa', 'fb', 'a.k = b.k')) AS nulls_both_sides
  FROM gh_join_types j ORDER BY j.n;

-- text keys on both sides of the 64 bytes up to which the probe copies a
-- candidate's key beside its record (lengths 56 to 72 and 300), some
-- compressed (3000 repeated bytes): the copied and the uncopied ones
-- verify alike; duplicates on both sides, and keys that differ only in
-- their last byte or their length
CREATE TEMP TABLE lk_a AS
  SELECT id, CASE WHEN id % 50 = 0 THEN repeat('z', 3000) || (id % 7)
                  ELSE rpad('k' || (id % 97), 56 + id % 17, 'x') END AS t
    FROM generate_series(1, 3000) id;
CREATE TEMP TABLE lk_b AS
  SELECT id, CASE WHEN id % 40 = 0 THEN repeat('z', 3000) || (id % 9)
                  WHEN id % 11 = 0 THEN rpad('k' || (id % 97), 300, 'x')
                  ELSE rpad('k' || (id % 89), 56 + id % 19, 'x') END AS t
    FROM generate_series(1, 2000) id;
ANALYZE lk_a, lk_b;
SELECT min(octet_length(t)) < 63 AND max(octet_length(t)) > 64 AS both_sides_of_64,
       bool_or(pg_column_size(t) < octet_length(t)) AS some_compressed
  FROM lk_b;
SELECT j.jt, gh_check(gh_jq(j.jt, 'lk_a', 'lk_b', 'a.t = b.t')) AS long_text_keys
  FROM gh_join_types j ORDER BY j.n;

-- conditions that are not hash-joinable: gpuhash must not take them
-- (gpu_joins=0 expected), and the results stay PostgreSQL's
SELECT q, gh_check(gh_jq('inner', '(SELECT * FROM xt_a WHERE id BETWEEN 1001 AND 2000)',
                         '(SELECT * FROM xt_b WHERE id <= 800)', q), 0) AS not_hashable FROM (VALUES
  ('a.d = b.ts'),
  ('a.i4 IS NOT DISTINCT FROM b.i4'),
  ('a.i4 = b.i4 OR a.t = b.t'),
  ('a.i4 < b.i4 AND b.i4 < a.i4 + 2')) v(q);
SELECT q, gh_check(gh_jq('full', '(SELECT * FROM xt_a WHERE id BETWEEN 1001 AND 2000)',
                         '(SELECT * FROM xt_b WHERE id <= 800)', q), 0) AS not_hashable_full FROM (VALUES
  ('a.d = b.ts')) v(q);

RESET gpuhash.enabled;
