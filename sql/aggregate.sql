-- aggregate: gpuhash_aggregate(query) against the same query run natively.
--
-- agg_check(query, column definitions) runs the query natively (with
-- gpuhash.enabled = off) and through gpuhash_aggregate, and compares the two
-- results as multisets of row texts, so a wrong value, a missing or extra
-- group, or a different display scale all show.  It prints the number of
-- groups (computed natively) and the rows missing from and extra in
-- gpuhash_aggregate's result: both must be 0.  Nothing here depends on the
-- device, so the expected output is the same for gpuhash.device = cpu and gpu.

CREATE FUNCTION agg_check(q text, coldef text,
                          OUT groups bigint, OUT missing bigint, OUT extra bigint)
LANGUAGE plpgsql AS $f$
DECLARE
  prev text := current_setting('gpuhash.enabled');
BEGIN
  PERFORM set_config('gpuhash.enabled', 'off', true);
  EXECUTE format('CREATE TEMP TABLE agg_native AS SELECT agg_row::text AS r FROM (%s) AS agg_row', q);
  PERFORM set_config('gpuhash.enabled', prev, true);
  EXECUTE format('CREATE TEMP TABLE agg_device AS SELECT agg_row::text AS r FROM gpuhash_aggregate(%L) AS agg_row(%s)',
                 q, coldef);
  SELECT count(*) INTO groups FROM agg_native;
  SELECT count(*) INTO missing FROM (SELECT r FROM agg_native EXCEPT ALL SELECT r FROM agg_device) x;
  SELECT count(*) INTO extra FROM (SELECT r FROM agg_device EXCEPT ALL SELECT r FROM agg_native) x;
  DROP TABLE agg_native;
  DROP TABLE agg_device;
END
$f$;

-- 20000 rows: every value type with NULLs, integers spread over their range,
-- floats that are multiples of 1/4 or 1/8 (so sums are exact in any order),
-- numerics of display scale 0 to 4.
CREATE TABLE agg_v AS
SELECT g AS id,
       g % 13 AS k13,
       g % 1000 AS k1000,
       CASE WHEN g % 11 = 0 THEN NULL ELSE ((g * 7919) % 60001 - 30000)::int2 END AS i2,
       CASE WHEN g % 13 = 1 THEN NULL ELSE (g::int8 * 104729 % 4000000001 - 2000000000)::int4 END AS i4,
       CASE WHEN g % 17 = 0 THEN NULL ELSE g::int8 * 2654435761 % 9000000000000000001 - 4500000000000000000 END AS i8,
       CASE WHEN g % 19 = 0 THEN NULL ELSE (((g * 37) % 2001 - 1000) / 4.0)::float4 END AS f4,
       CASE WHEN g % 23 = 0 THEN NULL ELSE (g::int8 * 7919 % 2000001 - 1000000)::float8 / 8 END AS f8,
       CASE WHEN g % 29 = 0 THEN NULL ELSE round((g::int8 * 6700417 % 20000001 - 10000000)::numeric / 1000, g % 5) END AS n,
       CASE WHEN g % 31 = 0 THEN NULL ELSE (g * 7 % 100000)::numeric(12,2) / 100 END::numeric(12,2) AS n2,
       CASE WHEN g % 37 = 0 THEN NULL ELSE 'text ' || (g % 97) END AS t
  FROM generate_series(1, 20000) g;
ANALYZE agg_v;

-- integers: every aggregate, with NULL values, one key
SELECT * FROM agg_check(
  'SELECT k13, count(*), count(i2), sum(i2), avg(i2), min(i2), max(i2),
          count(i4), sum(i4), avg(i4), min(i4), max(i4),
          count(i8), sum(i8), avg(i8), min(i8), max(i8)
     FROM agg_v GROUP BY k13',
  'k13 int, n bigint, c2 bigint, s2 bigint, a2 numeric, mi2 int2, ma2 int2,
   c4 bigint, s4 bigint, a4 numeric, mi4 int, ma4 int,
   c8 bigint, s8 numeric, a8 numeric, mi8 bigint, ma8 bigint');

-- floats with exact sums
SELECT * FROM agg_check(
  'SELECT k1000, count(f4), sum(f4), avg(f4), min(f4), max(f4),
          count(f8), sum(f8), avg(f8), min(f8), max(f8)
     FROM agg_v GROUP BY k1000',
  'k int, c4 bigint, s4 real, a4 float8, mi4 real, ma4 real,
   c8 bigint, s8 float8, a8 float8, mi8 float8, ma8 float8');

-- numeric: display scales differ by row; the result's scales must be native's
SELECT * FROM agg_check(
  'SELECT k1000, count(n), sum(n), avg(n), min(n), max(n),
          count(n2), sum(n2), avg(n2), min(n2), max(n2)
     FROM agg_v GROUP BY k1000',
  'k int, c bigint, s numeric, a numeric, mi numeric, ma numeric,
   c2 bigint, s2 numeric, a2 numeric, mi2 numeric, ma2 numeric');

-- the same with a small batch: many batches, groups spread over all of them
SET gpuhash.batch_rows = 700;
SELECT * FROM agg_check(
  'SELECT k1000, count(*), sum(i4), avg(i8), min(n), max(n), sum(n), avg(n), sum(f8), max(f4)
     FROM agg_v GROUP BY k1000',
  'k int, c bigint, s bigint, a numeric, mi numeric, ma numeric, sn numeric, an numeric,
   sf float8, mf real');
RESET gpuhash.batch_rows;

-- count(*) and count(x) of any type, and a column used by several aggregates
SELECT * FROM agg_check(
  'SELECT k13, count(t), count(*), count(id), count(n), count(f8), sum(id), min(id), max(id), avg(id)
     FROM agg_v GROUP BY k13',
  'k int, ct bigint, c bigint, ci bigint, cn bigint, cf bigint, s bigint, mi int, ma int, a numeric');

-- groups whose values are all NULL: count 0, every other aggregate NULL
SELECT * FROM agg_check(
  'SELECT id % 11 AS k, count(i2), sum(i2), avg(i2), min(i2), max(i2) FROM agg_v GROUP BY 1',
  'k int, c bigint, s bigint, a numeric, mi int2, ma int2');
SELECT count(*) AS all_null_groups
  FROM gpuhash_aggregate('SELECT id % 11 AS k, count(i2), sum(i2) FROM agg_v GROUP BY 1')
       AS t(k int, c bigint, s bigint)
 WHERE c = 0 AND s IS NULL;

-- no GROUP BY: one group; over no rows still one row, as in SQL
SELECT * FROM agg_check('SELECT count(*), sum(i8), avg(i4), min(n), max(f8) FROM agg_v',
                        'c bigint, s numeric, a numeric, mi numeric, ma float8');
SELECT * FROM agg_check('SELECT count(*), count(i2), sum(i8), avg(i4), min(n), max(f8) FROM agg_v WHERE id < 0',
                        'c bigint, c2 bigint, s numeric, a numeric, mi numeric, ma float8');
SELECT * FROM gpuhash_aggregate('SELECT count(*), count(i2), sum(i8) FROM agg_v WHERE false')
       AS t(c bigint, c2 bigint, s numeric);
-- empty input with GROUP BY: no groups
SELECT * FROM agg_check('SELECT k13, count(*), sum(i4) FROM agg_v WHERE id < 0 GROUP BY k13',
                        'k int, c bigint, s bigint');

-- output columns in any order, keys not in the output, repeated keys,
-- expressions of keys, and a column carried along a grouped primary key
SELECT * FROM agg_check('SELECT sum(i4), k13, count(*), k13 FROM agg_v GROUP BY k13, k1000',
                        's bigint, k int, c bigint, k2 int');
SELECT * FROM agg_check('SELECT count(*) FROM agg_v GROUP BY k13', 'c bigint');
SELECT * FROM agg_check('SELECT k13 + 1, k13 * 2 AS twice, max(i2) FROM agg_v GROUP BY k13',
                        'k int, t int, m int2');
ALTER TABLE agg_v ADD PRIMARY KEY (id);
SELECT * FROM agg_check('SELECT id, t, count(*) FROM agg_v WHERE id <= 3000 GROUP BY id',
                        'id int, t text, c bigint');

-- integer edges: sums beyond bigint are exact numerics; sum(int4) of
-- extremes; min and max of the extremes themselves
CREATE TABLE agg_edges (k int, i2 int2, i4 int4, i8 int8);
INSERT INTO agg_edges
SELECT g % 3, CASE WHEN g % 2 = 0 THEN 32767 ELSE -32768 END,
       CASE WHEN g % 3 = 0 THEN -2147483648 ELSE 2147483647 END,
       CASE WHEN g % 5 = 0 THEN -9223372036854775808 ELSE 9223372036854775807 END
  FROM generate_series(1, 3000) g;
INSERT INTO agg_edges VALUES (3, 32767, 2147483647, 9223372036854775807),
                             (4, -32768, -2147483648, -9223372036854775808),
                             (5, 0, 0, 0), (5, 0, 0, -1), (6, NULL, NULL, NULL);
SELECT * FROM agg_check(
  'SELECT k, count(*), sum(i2), avg(i2), min(i2), max(i2), sum(i4), avg(i4), min(i4), max(i4),
          sum(i8), avg(i8), min(i8), max(i8)
     FROM agg_edges GROUP BY k',
  'k int, c bigint, s2 bigint, a2 numeric, mi2 int2, ma2 int2, s4 bigint, a4 numeric, mi4 int, ma4 int,
   s8 numeric, a8 numeric, mi8 bigint, ma8 bigint');
SELECT k, s8, s8 > 9223372036854775807 AS beyond_bigint
  FROM gpuhash_aggregate('SELECT k, sum(i8) FROM agg_edges WHERE k IN (0, 1) GROUP BY k')
       AS t(k int, s8 numeric)
 ORDER BY k;

-- NaN and infinities: floats and numerics
CREATE TABLE agg_special (k int, f4 float4, f8 float8, n numeric);
INSERT INTO agg_special VALUES
  (1, 1, 1, 1), (1, 'NaN', 'NaN', 'NaN'), (1, 2, 2, 2),
  (2, 'Infinity', 'Infinity', 'Infinity'), (2, 5, 5, 5),
  (3, '-Infinity', '-Infinity', '-Infinity'), (3, -5, -5, -5),
  (4, 'Infinity', 'Infinity', 'Infinity'), (4, '-Infinity', '-Infinity', '-Infinity'),
  (5, 'NaN', 'NaN', 'NaN'), (5, 'Infinity', 'Infinity', 'Infinity'),
  (6, 'NaN', 'NaN', 'NaN'),
  (7, '-Infinity', '-Infinity', '-Infinity'), (7, 'NaN', 'NaN', 'NaN'), (7, 3, 3, 3.5),
  (8, 1.5, 1.5, 1.50), (8, NULL, NULL, NULL),
  (9, NULL, NULL, NULL);
SELECT * FROM agg_check(
  'SELECT k, count(f4), sum(f4), avg(f4), min(f4), max(f4), sum(f8), avg(f8), min(f8), max(f8),
          count(n), sum(n), avg(n), min(n), max(n)
     FROM agg_special GROUP BY k',
  'k int, c bigint, s4 real, a4 float8, mi4 real, ma4 real, s8 float8, a8 float8, mi8 float8, ma8 float8,
   cn bigint, sn numeric, an numeric, min numeric, man numeric');
SELECT * FROM gpuhash_aggregate('SELECT k, sum(f8), min(f8), max(f8), sum(n), min(n), max(n)
                                   FROM agg_special WHERE k IN (1, 4, 7) GROUP BY k')
       AS t(k int, sf float8, mif float8, maf float8, sn numeric, min numeric, man numeric)
 ORDER BY k;

-- float overflow: finite inputs, infinite sum, as natively
SELECT * FROM gpuhash_aggregate('SELECT sum(x) FROM (VALUES (1e308::float8), (1e308)) v(x)')
       AS t(s float8);
SELECT * FROM gpuhash_aggregate('SELECT sum(x) FROM (VALUES (3e38::float4), (3e38::float4)) v(x)')
       AS t(s real);

-- numerics the device cannot hold: more than 18 digits, scales above 24,
-- mixed with ordinary ones in the same groups; scales that grow batch by batch
CREATE TABLE agg_bignum AS
SELECT g % 7 AS k,
       CASE g % 4 WHEN 0 THEN (g::numeric * 1e20) + 0.5
                  WHEN 1 THEN g::numeric / 3
                  WHEN 2 THEN round(g::numeric / 7, 30)
                  ELSE -g::numeric END AS n,
       round(g::numeric / 11, g / 500) AS grow
  FROM generate_series(1, 5000) g;
SET gpuhash.batch_rows = 300;
SELECT * FROM agg_check('SELECT k, count(n), sum(n), avg(n), min(n), max(n) FROM agg_bignum GROUP BY k',
                        'k int, c bigint, s numeric, a numeric, mi numeric, ma numeric');
SELECT * FROM agg_check('SELECT k, sum(grow), avg(grow), min(grow), max(grow) FROM agg_bignum GROUP BY k',
                        'k int, s numeric, a numeric, mi numeric, ma numeric');
SELECT * FROM agg_check('SELECT k, sum(grow * 1e12), min(grow * 1e12), max(-grow * 1e12) FROM agg_bignum GROUP BY k',
                        'k int, s numeric, mi numeric, ma numeric');
RESET gpuhash.batch_rows;

-- float sums of arbitrary doubles: the order of additions differs, so
-- within 1e-12 relative of native
CREATE TABLE agg_float AS
SELECT g % 50 AS k, (g::float8 * 0.6180339887498949) - floor(g::float8 * 0.6180339887498949) + 1e-3 * g AS x,
       ((g * 0.7071067811865476) - floor(g * 0.7071067811865476))::float4 AS y
  FROM generate_series(1, 40000) g;
SELECT count(*) AS groups,
       count(*) FILTER (WHERE g.k IS NULL OR n.k IS NULL) AS unmatched,
       count(*) FILTER (WHERE abs(g.s - n.s) > 1e-12 * abs(n.s) OR abs(g.a - n.a) > 1e-12 * abs(n.a)
                           OR g.mi <> n.mi OR g.ma <> n.ma OR g.c <> n.c) AS off
  FROM gpuhash_aggregate('SELECT k, count(x), sum(x), avg(x), min(x), max(x) FROM agg_float GROUP BY k')
       AS g(k int, c bigint, s float8, a float8, mi float8, ma float8)
  FULL JOIN (SELECT k, count(x) AS c, sum(x) AS s, avg(x) AS a, min(x) AS mi, max(x) AS ma
               FROM agg_float GROUP BY k) n ON g.k = n.k;
-- real: PostgreSQL adds reals in single precision, gpuhash in double; the
-- sums agree to single precision
SELECT count(*) AS groups,
       count(*) FILTER (WHERE abs(g.s - n.s) > 1e-5 * abs(n.s) OR abs(g.a - n.a) > 1e-12 * abs(n.a)) AS off
  FROM gpuhash_aggregate('SELECT k, sum(y), avg(y) FROM agg_float GROUP BY k') AS g(k int, s real, a float8)
  JOIN (SELECT k, sum(y) AS s, avg(y) AS a FROM agg_float GROUP BY k) n ON g.k = n.k;

-- inputs that are joins, subqueries, CTEs, views and set operations below
-- the top level; a GpuHashJoin inside
CREATE TABLE agg_dim AS SELECT g AS k, 'region ' || (g % 5) AS region, g % 3 AS tier
  FROM generate_series(0, 999) g;
SELECT * FROM agg_check(
  'SELECT d.region, d.tier, count(*), sum(v.i4), avg(v.n), max(v.f8)
     FROM agg_v v JOIN agg_dim d ON d.k = v.k1000 GROUP BY d.region, d.tier',
  'region text, tier int, c bigint, s bigint, a numeric, m float8');
SELECT * FROM agg_check(
  'SELECT d.region, count(v.id), sum(v.i2)
     FROM agg_dim d LEFT JOIN agg_v v ON d.k = v.k1000 AND v.id < 500 GROUP BY d.region',
  'region text, c bigint, s bigint');
SELECT * FROM agg_check(
  'WITH big AS (SELECT * FROM agg_v WHERE i4 > 0)
   SELECT s.k13, count(*), sum(s.i8)
     FROM (SELECT k13, i8 FROM big UNION ALL SELECT k13, i8 FROM agg_v WHERE id % 2 = 0) s
    WHERE s.k13 IN (SELECT tier FROM agg_dim) GROUP BY s.k13',
  'k int, c bigint, s numeric');
CREATE VIEW agg_view AS SELECT k13, i4, n FROM agg_v WHERE id % 3 = 0;
SELECT * FROM agg_check('SELECT k13, sum(i4), sum(n) FROM agg_view GROUP BY k13',
                        'k int, s bigint, n numeric');
SET gpuhash.force_join = on;
SELECT * FROM agg_check(
  'SELECT d.region, count(*), sum(v.i4), min(v.n), max(v.n)
     FROM agg_v v JOIN agg_dim d ON d.k = v.k1000 GROUP BY d.region',
  'region text, c bigint, s bigint, mi numeric, ma numeric');
RESET gpuhash.force_join;

-- a parallel plan produces the input: rows one by one, or (keys and
-- arguments the device takes whole) packets made in the workers
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SELECT * FROM agg_check('SELECT k1000 % 7, count(*), sum(i8), avg(n), max(f4) FROM agg_v GROUP BY 1',
                        'k int, c bigint, s numeric, a numeric, m real');
SELECT * FROM agg_check('SELECT k1000, count(*), count(t), sum(i2), avg(i4), min(i8), max(i8), sum(f4), avg(f8), max(f8)
                           FROM agg_v GROUP BY k1000',
                        'k int, c bigint, ct bigint, s2 bigint, a4 numeric, mi8 bigint, ma8 bigint, sf real, af float8, mf float8');
SELECT * FROM agg_check('SELECT i2 % 5, id % 3 = 0, count(*), sum(id) FROM agg_v GROUP BY 1, 2',
                        'k int, b bool, c bigint, s bigint');
SELECT * FROM agg_check('SELECT count(*), count(i4), sum(i8) FROM agg_v', 'c bigint, c4 bigint, s numeric');
-- packets of a single row, and none at all
SELECT * FROM agg_check('SELECT count(*), count(i4) FROM agg_v WHERE id = 7', 'c bigint, c4 bigint');
SELECT * FROM agg_check('SELECT count(*), count(i4) FROM agg_v WHERE id = -7', 'c bigint, c4 bigint');
SELECT * FROM agg_check('SELECT k13, count(*) FROM agg_v WHERE id % 5000 = 1 GROUP BY k13', 'k int, c bigint');
SET gpuhash.batch_rows = 100;
SELECT * FROM agg_check('SELECT k1000 % 50, k13, count(*), sum(i4), min(f8) FROM agg_v GROUP BY 1, 2',
                        'k int, k2 int, c bigint, s bigint, m float8');
-- packets carry 4-byte keys and int2/int4 values as 4 bytes, and NULL masks
-- only when a packet has a NULL: negative and unsigned (oid) 4-byte keys,
-- 2- and 1-byte keys, NULLs in some packets and not in others
SELECT * FROM agg_check(
  'SELECT CASE WHEN id % 3001 = 0 THEN NULL ELSE i4 % 40 - 20 END, i2 % 3,
          ((k1000::int8 * 2000000 + 2147483000) % 4294967296)::oid, id % 4 = 0,
          count(*), count(i2), sum(i2), min(i2), max(CASE WHEN id % 1000 < 500 THEN NULL ELSE i4 END),
          avg(CASE WHEN id > 15000 THEN NULL ELSE i4 END), sum(i8), max(f4), count(t)
     FROM agg_v GROUP BY 1, 2, 3, 4',
  'k4 int, k2 int, ko oid, kb bool, c bigint, c2 bigint, s2 bigint, mi2 int2, ma4 int, a4 numeric,
   s8 numeric, mf real, ct bigint');
SELECT * FROM agg_check('SELECT (id % 7 - 3)::int2, (k13 - 6)::int8, date ''2000-01-01'' + (id % 5 - 2), count(*), sum(i4)
                           FROM agg_v GROUP BY 1, 2, 3',
                        'k2 int2, k8 int8, d date, c bigint, s bigint');
RESET gpuhash.batch_rows;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

-- NUMERIC results are written directly, not by numeric_in or numeric_div:
-- they must be PostgreSQL's own values, bytes included.  agg_num_check
-- compares each NUMERIC by text (value and display scale), numeric_send
-- (base-10000 digits, weight, sign, scale) and pg_column_size (header
-- form), both results stored in tables first so that both are packed alike.
CREATE FUNCTION agg_num_image(x numeric) RETURNS text LANGUAGE sql IMMUTABLE
  AS $$SELECT coalesce(x::text || '/' || encode(numeric_send(x), 'hex') || '/' || pg_column_size(x), 'NULL')$$;
CREATE FUNCTION agg_num_check(q text, coldef text,
                              OUT groups bigint, OUT missing bigint, OUT extra bigint)
LANGUAGE plpgsql AS $f$
DECLARE
  prev text := current_setting('gpuhash.enabled');
  img_native text;
  img_device text;
BEGIN
  PERFORM set_config('gpuhash.enabled', 'off', true);
  EXECUTE format('CREATE TEMP TABLE agg_native AS SELECT * FROM (%s) AS agg_row', q);
  PERFORM set_config('gpuhash.enabled', prev, true);
  EXECUTE format('CREATE TEMP TABLE agg_device AS SELECT * FROM gpuhash_aggregate(%L) AS agg_row(%s)',
                 q, coldef);
  SELECT string_agg(CASE WHEN a.atttypid = 'numeric'::regtype THEN format('agg_num_image(%I)', a.attname)
                         ELSE format('coalesce(%I::text, ''NULL'')', a.attname) END,
                    ' || '' | '' || ' ORDER BY a.attnum)
    INTO img_native FROM pg_attribute a WHERE a.attrelid = 'agg_native'::regclass AND a.attnum > 0;
  SELECT string_agg(CASE WHEN a.atttypid = 'numeric'::regtype THEN format('agg_num_image(%I)', a.attname)
                         ELSE format('coalesce(%I::text, ''NULL'')', a.attname) END,
                    ' || '' | '' || ' ORDER BY a.attnum)
    INTO img_device FROM pg_attribute a WHERE a.attrelid = 'agg_device'::regclass AND a.attnum > 0;
  SELECT count(*) INTO groups FROM agg_native;
  EXECUTE format('SELECT count(*) FROM (SELECT %s FROM agg_native EXCEPT ALL SELECT %s FROM agg_device) x',
                 img_native, img_device) INTO missing;
  EXECUTE format('SELECT count(*) FROM (SELECT %s FROM agg_device EXCEPT ALL SELECT %s FROM agg_native) x',
                 img_device, img_native) INTO extra;
  DROP TABLE agg_native;
  DROP TABLE agg_device;
END
$f$;
-- 60000 rows over 3001 groups of about 20 (hashes, so sums and counts have
-- all manner of first digits), every integer type over its whole range,
-- numerics of display scale 0 to 6; then groups made for the edges: a
-- quotient exactly half way at result scale 0, positive and negative; sums
-- whose first base-10000 digit equals the count's; a zero sum; counts
-- around 10^4; scales that put the quotient beyond 38 digits (numeric_div
-- computes those)
CREATE TABLE agg_num AS
SELECT abs(hashint4(g)) % 3001 AS k,
       (hashint4(g + 1) % 32768)::int2 AS i2,
       hashint4(g + 2) AS i4,
       hashint8extended(g, 3) AS i8,
       round(hashint4(g + 4)::numeric / 10::numeric ^ (g % 7), g % 7) AS n
  FROM generate_series(1, 60000) g;
INSERT INTO agg_num VALUES
  (10000, 1, 1, 1000000000000000000, 0.5), (10000, 2, 2, 1000000000000000001, 0.5),
  (10001, -1, -1, -1000000000000000000, -0.5), (10001, -2, -2, -1000000000000000001, -0.25),
  (10002, 1, 1, 1, 3.0), (10002, 1, 1, 1, 0), (10002, 1, 1, 1, 0),
  (10003, -1, -1, -1, -0.000001), (10003, 1, 1, 1, 0.000001),
  (10004, 3, 3, 9223372036854775807, 0.000001), (10004, 3, 3, 9223372036854775807, 0.000001),
  (10004, 3, 3, 9223372036854775807, 0.000001),
  (10005, 0, 0, 0, 0.000000000000000000000001), (10005, 0, 0, 0, 0.000000000000000000000002),
  (10005, 0, 0, 0, 0), (10005, 0, 0, 0, 0), (10005, 0, 0, 0, 0), (10005, 0, 0, 0, 0),
  (10005, 0, 0, 0, 0),
  (10006, 9999, 99999999, 999999999999999999, 99999999999.999999),
  (10006, 9999, 99999999, 999999999999999999, 99999999999.999999),
  (10006, 9999, 99999999, 999999999999999999, 99999999999.999998);
INSERT INTO agg_num SELECT 10007 + g % 3, 1, 1, 1, 1 FROM generate_series(1, 29999) g;
SELECT * FROM agg_num_check(
  'SELECT k, count(*) AS c, avg(i2) AS a2, avg(i4) AS a4, avg(i8) AS a8, sum(i8) AS s8,
          avg(n) AS an, sum(n) AS sn, min(n) AS mi, max(n) AS ma
     FROM agg_num GROUP BY k',
  'k int, c bigint, a2 numeric, a4 numeric, a8 numeric, s8 numeric, an numeric, sn numeric,
   mi numeric, ma numeric');
SELECT * FROM agg_num_check(
  'SELECT avg(i2) AS a2, avg(i4) AS a4, avg(i8) AS a8, sum(i8) AS s8, avg(n) AS an, sum(n) AS sn,
          min(n) AS mi, max(n) AS ma
     FROM agg_num',
  'a2 numeric, a4 numeric, a8 numeric, s8 numeric, an numeric, sn numeric, mi numeric, ma numeric');
SELECT k, a8, an FROM gpuhash_aggregate('SELECT k, avg(i8), avg(n) FROM agg_num WHERE k IN (10000, 10001, 10005) GROUP BY k')
       AS t(k int, a8 numeric, an numeric)
 ORDER BY k;

-- In FROM, a GpuHashAggregate scan returns the groups in place of the
-- function's tuplestore; ROWS FROM ... WITH ORDINALITY (or a LATERAL
-- argument) keeps the Function Scan.  Both give native's rows.
EXPLAIN (COSTS OFF)
SELECT * FROM gpuhash_aggregate('SELECT k13, count(*) FROM agg_v GROUP BY k13') AS t(k int, c bigint)
 WHERE c > 1000;
EXPLAIN (COSTS OFF)
SELECT * FROM ROWS FROM (gpuhash_aggregate('SELECT k13, count(*) FROM agg_v GROUP BY k13') AS (k int, c bigint))
       WITH ORDINALITY AS t(k, c, o);
SELECT gpuhash_test_plan_survives_copy($$SELECT t, k FROM gpuhash_aggregate('SELECT k13, count(*) FROM agg_v GROUP BY k13') AS t(k int, c bigint) WHERE c > 1$$)
       AS join_nodes;
CREATE TEMP TABLE agg_paths_native AS
SELECT k1000 AS k, count(*) AS c, sum(i8) AS s, avg(n) AS a FROM agg_v GROUP BY k1000;
SELECT (SELECT count(*) FROM agg_paths_native) AS groups,
       (SELECT count(*) FROM (SELECT * FROM agg_paths_native
                              EXCEPT ALL SELECT * FROM gpuhash_aggregate('SELECT k1000, count(*), sum(i8), avg(n) FROM agg_v GROUP BY k1000')
                                                       AS t(k int, c bigint, s numeric, a numeric)) x) AS scan_missing,
       (SELECT count(*) FROM (SELECT k, c, s, a
                                FROM ROWS FROM (gpuhash_aggregate('SELECT k1000, count(*), sum(i8), avg(n) FROM agg_v GROUP BY k1000')
                                                AS (k int, c bigint, s numeric, a numeric)) WITH ORDINALITY AS t(k, c, s, a, o)
                              EXCEPT ALL SELECT * FROM agg_paths_native) x) AS function_extra,
       (SELECT count(*) FROM gpuhash_aggregate('SELECT k1000, count(*), sum(i8), avg(n) FROM agg_v GROUP BY k1000')
                                                       AS t(k int, c bigint, s numeric, a numeric)) AS scan_rows,
       (SELECT count(*) FROM ROWS FROM (gpuhash_aggregate('SELECT k1000, count(*), sum(i8), avg(n) FROM agg_v GROUP BY k1000')
                                        AS (k int, c bigint, s numeric, a numeric)) WITH ORDINALITY AS t(k, c, s, a, o)) AS function_rows;
-- a filter on the scan, and the whole row
SELECT count(*) AS rows, count(*) FILTER (WHERE t::text = n::text) AS same_text
  FROM gpuhash_aggregate('SELECT k1000, count(*), sum(i8), avg(n) FROM agg_v GROUP BY k1000')
       AS t(k int, c bigint, s numeric, a numeric)
  JOIN agg_paths_native n ON n.k = t.k
 WHERE t.a > 0;
SELECT count(*) AS native_rows FROM agg_paths_native WHERE a > 0;
-- rescans: the inner side of a nested loop starts its rows again; an
-- argument that changes with the outer row runs the aggregation again
SET gpuhash.enabled = off;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
EXPLAIN (COSTS OFF)
SELECT s.g, t.c FROM generate_series(1, 3) s(g)
  JOIN gpuhash_aggregate('SELECT k13, count(*) FROM agg_v GROUP BY k13') AS t(k int, c bigint) ON t.k = s.g;
SELECT s.g, t.c, t.c = (SELECT count(*) FROM agg_v WHERE k13 = s.g) AS native
  FROM generate_series(1, 3) s(g)
  JOIN gpuhash_aggregate('SELECT k13, count(*) FROM agg_v GROUP BY k13') AS t(k int, c bigint) ON t.k = s.g
 ORDER BY s.g;
RESET gpuhash.enabled;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;
SELECT s.g,
       (SELECT sum(c) FROM gpuhash_aggregate('SELECT k13, count(*) FROM agg_v WHERE id % ' || s.g || ' = 0 GROUP BY k13')
                           AS t(k int, c bigint)) AS rows_counted,
       (SELECT count(*) FROM agg_v WHERE id % s.g = 0) AS native
  FROM generate_series(2, 4) s(g)
 ORDER BY s.g;
-- a LIMIT: the rest of the rows are never made
SELECT count(*) AS limited FROM (SELECT * FROM gpuhash_aggregate('SELECT k1000, count(*), avg(n) FROM agg_v GROUP BY k1000')
                                                AS t(k int, c bigint, a numeric) LIMIT 5) x;
SELECT gpuhash_device_memory() AS held_after_limit;
-- a NULL argument returns no rows (the function is strict); a parameter
PREPARE agg_param(text) AS SELECT count(*), sum(c) FROM gpuhash_aggregate($1) AS t(k int, c bigint);
EXECUTE agg_param('SELECT k13, count(*) FROM agg_v GROUP BY k13');
EXECUTE agg_param(NULL);
DEALLOCATE agg_param;
-- a scrollable cursor: a Material node on top goes backwards
CREATE FUNCTION agg_cursor_walk(OUT forward text, OUT backward text) LANGUAGE plpgsql AS $f$
DECLARE
  cur refcursor;
  r record;
  n int := 0;
  s bigint := 0;
BEGIN
  OPEN cur SCROLL FOR
    SELECT * FROM gpuhash_aggregate('SELECT k13, count(*) FROM agg_v GROUP BY k13') AS t(k int, c bigint);
  LOOP
    FETCH NEXT FROM cur INTO r;
    EXIT WHEN NOT FOUND;
    n := n + 1; s := s + r.k * 100000 + r.c;
  END LOOP;
  forward := n || ' rows, ' || s;
  n := 0; s := 0;
  LOOP
    FETCH PRIOR FROM cur INTO r;
    EXIT WHEN NOT FOUND;
    n := n + 1; s := s + r.k * 100000 + r.c;
  END LOOP;
  backward := n || ' rows, ' || s;
  CLOSE cur;
END
$f$;
SELECT *, (SELECT count(*) || ' rows, ' || sum(k * 100000 + c)
             FROM (SELECT k13 AS k, count(*) AS c FROM agg_v GROUP BY k13) x) AS native
  FROM agg_cursor_walk();
EXPLAIN (COSTS OFF)
DECLARE agg_cur SCROLL CURSOR FOR
  SELECT * FROM gpuhash_aggregate('SELECT k13, count(*) FROM agg_v GROUP BY k13') AS t(k int, c bigint);
-- EXECUTE permission on the function is checked on either path
CREATE ROLE regress_agg_noexec;
GRANT SELECT ON agg_v TO regress_agg_noexec;
REVOKE EXECUTE ON FUNCTION gpuhash_aggregate(text) FROM PUBLIC;
SET ROLE regress_agg_noexec;
SELECT * FROM gpuhash_aggregate('SELECT count(*) FROM agg_v') AS t(c bigint);
SELECT * FROM ROWS FROM (gpuhash_aggregate('SELECT count(*) FROM agg_v') AS (c bigint)) WITH ORDINALITY AS t(c, o);
RESET ROLE;
GRANT EXECUTE ON FUNCTION gpuhash_aggregate(text) TO PUBLIC;
REVOKE SELECT ON agg_v FROM regress_agg_noexec;
DROP ROLE regress_agg_noexec;

-- nothing held on the device afterwards
SELECT gpuhash_device_memory() AS held_after_aggregates;
