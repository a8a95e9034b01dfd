-- join_types: every join type x every key type, gpuhash against native.
-- Each line is gh_check's "gpu_joins=N rows=R diff=D" (see join_setup):
-- D must be 0; R comes from the native run.  ta and tb (join_setup) hold
-- the same base values spelt in every key type, with NULL keys on both
-- sides, 3 rows per key in ta and 1-2 in tb, partially overlapping; tb
-- spells equal values differently where the type allows (numeric scale,
-- -0.0, bpchar trailing blanks, interval units).
-- no JIT: its cost thresholds are irrelevant here, and some PostgreSQL
-- builds (the GPU host's) have no LLVM
SET jit = off;
SET gpuhash.enabled = off;

-- the spellings really differ on the two sides (so the joins below test
-- equality, not byte identity)
SELECT count(*) FILTER (WHERE a.k_numeric::text <> b.k_numeric::text) > 0 AS numeric_scales_differ,
       count(*) FILTER (WHERE concat(a.k_bpchar) <> concat(b.k_bpchar)) > 0 AS bpchar_blanks_differ,
       count(*) FILTER (WHERE a.k_interval::text <> b.k_interval::text) > 0 AS interval_units_differ,
       count(*) FILTER (WHERE a.k_float8::text <> b.k_float8::text) > 0 AS minus_zero_differs
  FROM ta a JOIN tb b ON a.b = b.b;
SELECT count(*) FILTER (WHERE k_float8::text = 'NaN') > 0 AS has_nan,
       count(*) FILTER (WHERE k_float8::text = '-0') > 0 AS has_minus_zero,
       count(*) FILTER (WHERE length(k_text) > 3000) > 0 AS has_long_text,
       count(*) FILTER (WHERE k_text ~ 'ключ') > 0 AS has_multibyte_text,
       count(*) FILTER (WHERE pg_column_size(k_text) < length(k_text)) > 0 AS has_compressed_text
  FROM ta;

CREATE TEMP TABLE key_types (n int, col text);
INSERT INTO key_types VALUES
  (1, 'k_int2'), (2, 'k_int4'), (3, 'k_int8'), (4, 'k_oid'), (5, 'k_numeric'),
  (6, 'k_float4'), (7, 'k_float8'), (8, 'k_text'), (9, 'k_varchar'), (10, 'k_bpchar'),
  (11, 'k_bytea'), (12, 'k_date'), (13, 'k_timestamp'), (14, 'k_timestamptz'),
  (15, 'k_interval'), (16, 'k_uuid');

-- INNER
SELECT col, gh_check(format(
  'SELECT a.id AS a_id, b.id AS b_id, a.%1$I AS a_key, b.%1$I AS b_key
     FROM ta a JOIN tb b ON a.%1$I = b.%1$I', col)) AS inner_join
  FROM key_types ORDER BY n;

-- LEFT
SELECT col, gh_check(format(
  'SELECT a.id AS a_id, b.id AS b_id, a.%1$I AS a_key, b.%1$I AS b_key
     FROM ta a LEFT JOIN tb b ON a.%1$I = b.%1$I', col)) AS left_join
  FROM key_types ORDER BY n;

-- RIGHT
SELECT col, gh_check(format(
  'SELECT a.id AS a_id, b.id AS b_id, a.%1$I AS a_key, b.%1$I AS b_key
     FROM ta a RIGHT JOIN tb b ON a.%1$I = b.%1$I', col)) AS right_join
  FROM key_types ORDER BY n;

-- FULL
SELECT col, gh_check(format(
  'SELECT a.id AS a_id, b.id AS b_id, a.%1$I AS a_key, b.%1$I AS b_key
     FROM ta a FULL JOIN tb b ON a.%1$I = b.%1$I', col)) AS full_join
  FROM key_types ORDER BY n;

-- SEMI (EXISTS)
SELECT col, gh_check(format(
  'SELECT a.id, a.%1$I AS a_key FROM ta a
    WHERE EXISTS (SELECT 1 FROM tb b WHERE b.%1$I = a.%1$I)', col)) AS semi_exists
  FROM key_types ORDER BY n;

-- SEMI (IN), from the other side
SELECT col, gh_check(format(
  'SELECT b.id, b.%1$I AS b_key FROM tb b
    WHERE b.%1$I IN (SELECT a.%1$I FROM ta a)', col)) AS semi_in
  FROM key_types ORDER BY n;

-- ANTI (NOT EXISTS): rows with NULL keys are kept
SELECT col, gh_check(format(
  'SELECT a.id, a.%1$I AS a_key FROM ta a
    WHERE NOT EXISTS (SELECT 1 FROM tb b WHERE b.%1$I = a.%1$I)', col)) AS anti
  FROM key_types ORDER BY n;

-- ANTI from the other side
SELECT col, gh_check(format(
  'SELECT b.id, b.%1$I AS b_key FROM tb b
    WHERE NOT EXISTS (SELECT 1 FROM ta a WHERE a.%1$I = b.%1$I)', col)) AS anti_other_side
  FROM key_types ORDER BY n;

-- bool keys (two values: small tables), every join type
SELECT jt, gh_check(q) AS bool_key FROM (VALUES
  (1, 'inner', 'SELECT a.id AS a_id, b.id AS b_id FROM ta_small a JOIN tb_small b ON a.k_bool = b.k_bool'),
  (2, 'left',  'SELECT a.id AS a_id, b.id AS b_id FROM ta_small a LEFT JOIN tb_small b ON a.k_bool = b.k_bool'),
  (3, 'right', 'SELECT a.id AS a_id, b.id AS b_id FROM ta_small a RIGHT JOIN tb_small b ON a.k_bool = b.k_bool'),
  (4, 'full',  'SELECT a.id AS a_id, b.id AS b_id FROM ta_small a FULL JOIN tb_small b ON a.k_bool = b.k_bool'),
  (5, 'semi',  'SELECT a.id FROM ta_small a WHERE EXISTS (SELECT 1 FROM tb_small b WHERE b.k_bool = a.k_bool)'),
  (6, 'anti',  'SELECT a.id FROM ta_small a WHERE NOT EXISTS (SELECT 1 FROM tb_small b WHERE b.k_bool = a.k_bool)')
) v(n, jt, q) ORDER BY n;

-- the equalities PostgreSQL defines and a byte-wise hash would miss: how
-- many joined rows pair differently spelt keys (native), and gpuhash agrees
SELECT col, gh_check(format(
  'SELECT a.id AS a_id, b.id AS b_id FROM ta a JOIN tb b ON a.%1$I = b.%1$I
    WHERE concat(a.%1$I) <> concat(b.%1$I)', col)) AS differently_spelt_matches
  FROM key_types WHERE col IN ('k_numeric', 'k_float4', 'k_float8', 'k_bpchar', 'k_interval')
 ORDER BY n;

-- a text key under a non-deterministic collation (case-insensitive with
-- ICU).  Only diff is printed: the row counts depend on whether the server
-- has ICU.
SELECT jt, gh_check(q, 1, false) AS nondeterministic_collation FROM (VALUES
  (1, 'inner', 'SELECT a.id AS a_id, b.id AS b_id FROM ci_a a JOIN ci_b b ON a.t = b.t'),
  (2, 'left',  'SELECT a.id AS a_id, b.id AS b_id FROM ci_a a LEFT JOIN ci_b b ON a.t = b.t'),
  (3, 'full',  'SELECT a.id AS a_id, b.id AS b_id FROM ci_a a FULL JOIN ci_b b ON a.t = b.t'),
  (4, 'semi',  'SELECT a.id FROM ci_a a WHERE EXISTS (SELECT 1 FROM ci_b b WHERE b.t = a.t)'),
  (5, 'anti',  'SELECT b.id FROM ci_b b WHERE NOT EXISTS (SELECT 1 FROM ci_a a WHERE a.t = b.t)')
) v(n, jt, q) ORDER BY n;
-- and the collation is really case-insensitive when it is the ICU one
-- (prints true either way: a deterministic stand-in matches nothing
-- case-insensitively)
SELECT CASE WHEN NOT (SELECT collisdeterministic FROM pg_collation WHERE collname = 'gh_ci')
            THEN (SELECT count(*) FROM ci_a a JOIN ci_b b ON a.t = b.t WHERE a.t COLLATE "C" <> b.t COLLATE "C") > 0
            ELSE (SELECT count(*) FROM ci_a a JOIN ci_b b ON a.t = b.t WHERE a.t COLLATE "C" <> b.t COLLATE "C") = 0
       END AS collation_as_expected;

-- more hashable types: arrays, composite values, enums, ranges, jsonb,
-- inet, macaddr, "char", name, pg_lsn, time, timetz
CREATE TYPE gh_mood AS ENUM ('sad', 'ok', 'happy', 'ecstatic');
CREATE TYPE gh_pair AS (x int, y text);
CREATE TABLE more_a AS
  SELECT i AS id,
         ARRAY[i % 40, i % 7] AS k_intarr,
         ARRAY['a' || i % 300, NULL] AS k_textarr,
         ROW(i % 50, 'p' || i % 3)::gh_pair AS k_composite,
         (ARRAY['sad', 'ok', 'happy', 'ecstatic']::gh_mood[])[1 + i % 4] AS k_enum,
         int4range(i % 60, i % 60 + 1 + i % 2) AS k_range,
         jsonb_build_object('a', i % 450, 'b', ARRAY[1, 2]) AS k_jsonb,
         ('10.0.' || i % 5 || '.' || i % 37)::inet AS k_inet,
         ('08:00:2b:01:02:' || lpad(to_hex(i % 256), 2, '0'))::macaddr AS k_macaddr,
         chr(65 + i % 26)::"char" AS k_char,
         ('n' || i % 550)::name AS k_name,
         ('0/' || to_hex(i % 700))::pg_lsn AS k_lsn,
         time '00:00' + (i % 800) * interval '1.5 seconds' AS k_time,
         (time '00:00' + (i % 800) * interval '1.5 seconds')::timetz AS k_timetz
    FROM generate_series(1, 1500) i;
CREATE TABLE more_b AS
  SELECT i AS id,
         ARRAY[i % 50, i % 7] AS k_intarr,
         ARRAY['a' || i % 350, NULL] AS k_textarr,
         ROW(i % 60, 'p' || i % 4)::gh_pair AS k_composite,
         CASE WHEN i <= 40 THEN (ARRAY['sad', 'ok', 'happy', 'ecstatic']::gh_mood[])[1 + i % 3] END AS k_enum,
         int4range(i % 70, i % 70 + 1 + i % 3) AS k_range,
         jsonb_build_object('b', ARRAY[1, 2], 'a', i % 500) AS k_jsonb,
         ('10.0.' || i % 6 || '.' || i % 41)::inet AS k_inet,
         ('08:00:2b:01:02:' || lpad(to_hex(i % 200), 2, '0'))::macaddr AS k_macaddr,
         CASE WHEN i <= 60 THEN chr(65 + i % 30)::"char" END AS k_char,
         ('n' || i % 660)::name AS k_name,
         ('0/' || to_hex(i % 900))::pg_lsn AS k_lsn,
         time '00:00' + (i % 1000) * interval '1.5 seconds' AS k_time,
         (time '00:00' + (i % 1000) * interval '1.5 seconds')::timetz AS k_timetz
    FROM generate_series(1, 1000) i;
UPDATE more_a SET k_intarr = NULL, k_composite = NULL, k_jsonb = NULL WHERE id % 29 = 0;
ANALYZE more_a, more_b;
CREATE TEMP TABLE more_types (n int, col text);
INSERT INTO more_types VALUES (1, 'k_intarr'), (2, 'k_textarr'), (3, 'k_composite'), (4, 'k_enum'),
  (5, 'k_range'), (6, 'k_jsonb'), (7, 'k_inet'), (8, 'k_macaddr'), (9, 'k_char'), (10, 'k_name'),
  (11, 'k_lsn'), (12, 'k_time'), (13, 'k_timetz');
SELECT t.col, j.jt, gh_check(replace(gh_jq(j.jt, 'more_a', 'more_b', format('a.%1$I = b.%1$I', t.col)),
                                     'b.id AS b_id', format('b.id AS b_id, b.%I AS b_key', t.col))) AS more_key_types
  FROM more_types t, gh_join_types j WHERE j.jt IN ('inner', 'full', 'anti') ORDER BY t.n, j.n;

RESET gpuhash.enabled;
