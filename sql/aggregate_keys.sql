-- aggregate_keys: group keys of every kind against native GROUP BY: each
-- hashable type, NULL keys, one to three keys, keys whose 64-bit hashes
-- collide, and up to a million groups.  Uses agg_check from aggregate.sql.
--
-- agg_check_typed compares with each type's equality instead of the row
-- text, for keys where equal values can be written differently (0 and -0,
-- 1.0 and 1.00, '1 day' and '24 hours', case-insensitive text): the group is
-- the same, and which of its rows shows the key is not defined by SQL.
CREATE FUNCTION agg_check_typed(q text, coldef text,
                                OUT groups bigint, OUT missing bigint, OUT extra bigint)
LANGUAGE plpgsql AS $f$
DECLARE
  prev text := current_setting('gpuhash.enabled');
BEGIN
  PERFORM set_config('gpuhash.enabled', 'off', true);
  EXECUTE format('CREATE TEMP TABLE agg_native AS SELECT * FROM (%s) AS agg_row', q);
  PERFORM set_config('gpuhash.enabled', prev, true);
  EXECUTE format('CREATE TEMP TABLE agg_device AS SELECT * FROM gpuhash_aggregate(%L) AS agg_row(%s)',
                 q, coldef);
  SELECT count(*) INTO groups FROM agg_native;
  SELECT count(*) INTO missing FROM (TABLE agg_native EXCEPT ALL TABLE agg_device) x;
  SELECT count(*) INTO extra FROM (TABLE agg_device EXCEPT ALL TABLE agg_native) x;
  DROP TABLE agg_native;
  DROP TABLE agg_device;
END
$f$;

CREATE TYPE agg_mood AS ENUM ('sad', 'ok', 'happy');
CREATE TYPE agg_pair AS (a int, b text);
CREATE COLLATION agg_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);

-- 6000 rows, keys of every type repeating with different periods, NULLs
-- in each, and one value column
CREATE TABLE agg_k AS
SELECT g AS id,
       g AS v,
       CASE WHEN g % 50 = 0 THEN NULL ELSE (g % 300 - 150)::int2 END AS k_int2,
       CASE WHEN g % 51 = 0 THEN NULL ELSE g % 997 END AS k_int4,
       CASE WHEN g % 52 = 0 THEN NULL ELSE (g % 500) * 1000000000007 - 250000000000000 END AS k_int8,
       CASE WHEN g % 53 = 0 THEN NULL WHEN g % 7 = 1 THEN 'NaN' WHEN g % 7 = 2 THEN '-0'
            WHEN g % 7 = 3 THEN 'Infinity' ELSE (g % 40) / 4.0 END::float4 AS k_float4,
       CASE WHEN g % 54 = 0 THEN NULL WHEN g % 9 = 1 THEN 'NaN' WHEN g % 9 = 2 THEN '-0'
            WHEN g % 9 = 3 THEN '-Infinity' ELSE (g % 80) / 8.0 END::float8 AS k_float8,
       CASE WHEN g % 55 = 0 THEN NULL WHEN g % 11 = 1 THEN 'NaN'
            ELSE round((g % 60)::numeric, g % 3) END AS k_numeric,
       CASE WHEN g % 56 = 0 THEN NULL WHEN g % 13 = 1 THEN ''
            WHEN g % 13 = 2 THEN repeat('long key ', 400) || (g % 3)
            ELSE 'key ' || (g % 321) END AS k_text,
       CASE WHEN g % 57 = 0 THEN NULL ELSE ('v' || (g % 77))::varchar(20) END AS k_varchar,
       CASE WHEN g % 58 = 0 THEN NULL ELSE ('c' || (g % 66))::char(8) END AS k_char,
       CASE WHEN g % 59 = 0 THEN NULL ELSE g % 3 = 0 END AS k_bool,
       CASE WHEN g % 60 = 0 THEN NULL ELSE date '2024-01-01' + (g % 400) END AS k_date,
       CASE WHEN g % 61 = 0 THEN NULL ELSE timestamp '2024-01-01' + (g % 500) * interval '37 minutes' END AS k_ts,
       CASE WHEN g % 62 = 0 THEN NULL ELSE timestamptz '2024-01-01 00:00+00' + (g % 450) * interval '1 hour' END AS k_tstz,
       CASE WHEN g % 63 = 0 THEN NULL WHEN g % 2 = 0 THEN (g % 20) * interval '1 day'
            ELSE (g % 20) * interval '24 hours' END AS k_interval,
       CASE WHEN g % 64 = 0 THEN NULL ELSE md5((g % 333)::text)::uuid END AS k_uuid,
       CASE WHEN g % 65 = 0 THEN NULL ELSE decode(md5((g % 222)::text), 'hex') END AS k_bytea,
       CASE WHEN g % 66 = 0 THEN NULL ELSE ('10.0.' || (g % 17) || '.' || (g % 5))::inet END AS k_inet,
       CASE WHEN g % 67 = 0 THEN NULL WHEN g % 2 = 0 THEN jsonb_build_object('a', g % 30, 'b', 'x')
            ELSE jsonb_build_object('b', 'x', 'a', (g % 30)::numeric(6,1)) END AS k_jsonb,
       CASE WHEN g % 68 = 0 THEN NULL ELSE ARRAY[g % 7, g % 5] END AS k_array,
       CASE WHEN g % 69 = 0 THEN NULL ELSE (ARRAY['sad', 'ok', 'happy'])[g % 3 + 1]::agg_mood END AS k_enum,
       CASE WHEN g % 70 = 0 THEN NULL ELSE ROW(g % 4, 'p' || (g % 3))::agg_pair END AS k_pair,
       CASE WHEN g % 71 = 0 THEN NULL ELSE (g % 44)::oid END AS k_oid,
       CASE WHEN g % 72 = 0 THEN NULL ELSE chr(65 + g % 20)::"char" END AS k_qchar,
       CASE WHEN g % 73 = 0 THEN NULL ELSE ('name' || (g % 33))::name END AS k_name,
       CASE WHEN g % 74 = 0 THEN NULL WHEN g % 2 = 0 THEN 'Word ' || (g % 25)
            ELSE 'WORD ' || (g % 25) END AS k_ci
  FROM generate_series(1, 6000) g;

-- one key of each type, with every aggregate kind
SELECT * FROM agg_check('SELECT k_int2, count(*), sum(v), min(v) FROM agg_k GROUP BY 1', 'k int2, c bigint, s bigint, m int');
SELECT * FROM agg_check('SELECT k_int4, count(*), sum(v), max(v) FROM agg_k GROUP BY 1', 'k int4, c bigint, s bigint, m int');
SELECT * FROM agg_check('SELECT k_int8, count(*), avg(v) FROM agg_k GROUP BY 1', 'k int8, c bigint, a numeric');
SELECT * FROM agg_check_typed('SELECT k_float4, count(*), sum(v) FROM agg_k GROUP BY 1', 'k float4, c bigint, s bigint');
SELECT * FROM agg_check_typed('SELECT k_float8, count(*), sum(v) FROM agg_k GROUP BY 1', 'k float8, c bigint, s bigint');
SELECT * FROM agg_check_typed('SELECT k_numeric, count(*), sum(v) FROM agg_k GROUP BY 1', 'k numeric, c bigint, s bigint');
SELECT * FROM agg_check('SELECT k_text, count(*), sum(v) FROM agg_k GROUP BY 1', 'k text, c bigint, s bigint');
SELECT * FROM agg_check('SELECT k_varchar, count(*), sum(v) FROM agg_k GROUP BY 1', 'k varchar, c bigint, s bigint');
SELECT * FROM agg_check('SELECT k_char, count(*), sum(v) FROM agg_k GROUP BY 1', 'k char(8), c bigint, s bigint');
SELECT * FROM agg_check('SELECT k_bool, count(*), sum(v) FROM agg_k GROUP BY 1', 'k bool, c bigint, s bigint');
SELECT * FROM agg_check('SELECT k_date, count(*), sum(v) FROM agg_k GROUP BY 1', 'k date, c bigint, s bigint');
SELECT * FROM agg_check('SELECT k_ts, count(*), sum(v) FROM agg_k GROUP BY 1', 'k timestamp, c bigint, s bigint');
SELECT * FROM agg_check('SELECT k_tstz, count(*), sum(v) FROM agg_k GROUP BY 1', 'k timestamptz, c bigint, s bigint');
SELECT * FROM agg_check_typed('SELECT k_interval, count(*), sum(v) FROM agg_k GROUP BY 1', 'k interval, c bigint, s bigint');
SELECT * FROM agg_check('SELECT k_uuid, count(*), sum(v) FROM agg_k GROUP BY 1', 'k uuid, c bigint, s bigint');
SELECT * FROM agg_check('SELECT k_bytea, count(*), sum(v) FROM agg_k GROUP BY 1', 'k bytea, c bigint, s bigint');
SELECT * FROM agg_check('SELECT k_inet, count(*), sum(v) FROM agg_k GROUP BY 1', 'k inet, c bigint, s bigint');
SELECT * FROM agg_check_typed('SELECT k_jsonb, count(*), sum(v) FROM agg_k GROUP BY 1', 'k jsonb, c bigint, s bigint');
SELECT * FROM agg_check('SELECT k_array, count(*), sum(v) FROM agg_k GROUP BY 1', 'k int[], c bigint, s bigint');
SELECT * FROM agg_check('SELECT k_enum, count(*), sum(v) FROM agg_k GROUP BY 1', 'k agg_mood, c bigint, s bigint');
SELECT * FROM agg_check('SELECT k_pair, count(*), sum(v) FROM agg_k GROUP BY 1', 'k agg_pair, c bigint, s bigint');
SELECT * FROM agg_check('SELECT k_oid, count(*), sum(v) FROM agg_k GROUP BY 1', 'k oid, c bigint, s bigint');
SELECT * FROM agg_check('SELECT k_qchar, count(*), sum(v) FROM agg_k GROUP BY 1', 'k "char", c bigint, s bigint');
SELECT * FROM agg_check('SELECT k_name, count(*), sum(v) FROM agg_k GROUP BY 1', 'k name, c bigint, s bigint');
SELECT * FROM agg_check('SELECT k_text COLLATE "C", count(*), sum(v) FROM agg_k GROUP BY 1', 'k text, c bigint, s bigint');
-- a nondeterministic collation: 'Word 1' and 'WORD 1' are one group
SELECT * FROM agg_check_typed('SELECT k_ci COLLATE agg_ci, count(*), sum(v) FROM agg_k GROUP BY 1',
                              'k text COLLATE agg_ci, c bigint, s bigint');
SELECT count(*) AS ci_groups
  FROM gpuhash_aggregate('SELECT k_ci COLLATE agg_ci, count(*) FROM agg_k GROUP BY 1')
       AS t(k text COLLATE agg_ci, c bigint);
-- equal values written differently are one group
SELECT count(*) AS interval_groups, sum(c) AS interval_rows
  FROM gpuhash_aggregate('SELECT k_interval, count(*) FROM agg_k GROUP BY 1') AS t(k interval, c bigint);
SELECT count(*) AS float_groups, count(*) FILTER (WHERE k = 0) AS zero_groups,
       count(*) FILTER (WHERE k = 'NaN') AS nan_groups
  FROM gpuhash_aggregate('SELECT k_float8, count(*) FROM agg_k GROUP BY 1') AS t(k float8, c bigint);
-- an expression as key
SELECT * FROM agg_check('SELECT lower(k_text), length(k_text) > 100, count(*) FROM agg_k GROUP BY 1, 2',
                        'k text, l bool, c bigint');

-- NULL keys: their own group, per position
SELECT * FROM agg_check('SELECT k_int4 % 3, k_text IS NULL, count(*), sum(v) FROM agg_k GROUP BY 1, 2',
                        'a int, b bool, c bigint, s bigint');
SELECT * FROM gpuhash_aggregate(
  'SELECT a, b, count(*) FROM (VALUES (1, NULL), (NULL, 1), (NULL, NULL), (NULL, NULL), (1, NULL), (1, 1)) v(a, b)
    GROUP BY a, b') AS t(a int, b int, c bigint)
 ORDER BY a NULLS FIRST, b NULLS FIRST;

-- two and three keys of different types, every aggregate and value type
SELECT * FROM agg_check(
  'SELECT k_int4 % 10, k_text, count(*), sum(k_int2), avg(k_int8), min(k_float8), max(k_numeric)
     FROM agg_k GROUP BY 1, 2',
  'a int, b text, c bigint, s bigint, a8 numeric, mi float8, ma numeric');
SELECT * FROM agg_check(
  'SELECT k_date, k_bool, k_enum, count(*), sum(v), avg(v), min(v), max(v), count(k_uuid)
     FROM agg_k GROUP BY 1, 2, 3',
  'd date, b bool, e agg_mood, c bigint, s bigint, a numeric, mi int, ma int, cu bigint');
SELECT * FROM agg_check(
  'SELECT k_int2 % 3, k_varchar, k_bytea IS NULL, sum(k_float4), avg(k_float4), min(k_int4), max(k_int8),
          sum(k_numeric), avg(k_numeric)
     FROM agg_k GROUP BY 1, 2, 3',
  'a int, b varchar, n bool, sf real, af float8, mi int, ma int8, sn numeric, an numeric');

-- keys whose 64-bit hashes collide: bigint's hash folds the high half into
-- the low one, so j, 2^32 + (j # 1) and 2^33 + (j # 2) share a hash, and so
-- do -1 and 4294967295.  Each must stay its own group.
SELECT count(*) AS colliding_pairs
  FROM generate_series(1, 1000) j
 WHERE hashint8extended(j, 0) = hashint8extended(4294967296 + (j # 1), 0)
   AND hashint8extended(j, 0) = hashint8extended(8589934592 + (j # 2), 0);
SELECT hashint8extended(-1, 0) = hashint8extended(4294967295, 0) AS minus_one_collides;
CREATE TABLE agg_coll AS
SELECT CASE r % 3 WHEN 0 THEN j WHEN 1 THEN 4294967296 + (j # 1) ELSE 8589934592 + (j # 2) END AS k,
       r % 4 AS k2, r AS v
  FROM generate_series(1, 1000) j, generate_series(1, 9) r
 ORDER BY (j * 7919 + r * 104729) % 9001;
INSERT INTO agg_coll SELECT CASE g % 2 WHEN 0 THEN -1 ELSE 4294967295 END, g % 4, g
  FROM generate_series(1, 100) g;
SELECT * FROM agg_check('SELECT k, count(*), sum(v), min(v), max(v) FROM agg_coll GROUP BY k',
                        'k int8, c bigint, s bigint, mi int, ma int');
SELECT * FROM agg_check('SELECT k, k2, count(*), sum(v), avg(v) FROM agg_coll GROUP BY k, k2',
                        'k int8, k2 int, c bigint, s bigint, a numeric');
-- the same when the colliding keys meet in different batches
SET gpuhash.batch_rows = 50;
SELECT * FROM agg_check('SELECT k, count(*), sum(v), min(v), max(v) FROM agg_coll GROUP BY k',
                        'k int8, c bigint, s bigint, mi int, ma int');
SELECT * FROM agg_check('SELECT k % 1000, k, count(*) FROM agg_coll GROUP BY 1, 2',
                        'a int8, k int8, c bigint');
RESET gpuhash.batch_rows;

-- Those bigint keys take the exact device-key path, which does not use
-- PostgreSQL's hash functions.  The host-checked path does: an output column
-- computed from the key (carried along, not a GROUP BY expression) makes the
-- query take it.  The DEBUG1 line counts the keys that collided with another
-- key's hash: 2001 of the 3002 (1001 hashes).
SET client_min_messages = debug1;
SELECT count(*) AS groups, sum(c) AS rows
  FROM gpuhash_aggregate('SELECT k, k * 2 AS twice, count(*) FROM agg_coll GROUP BY k')
       AS t(k int8, t int8, c bigint);
SET gpuhash.batch_rows = 50;
SELECT count(*) AS groups, sum(c) AS rows
  FROM gpuhash_aggregate('SELECT k, k * 2 AS twice, count(*) FROM agg_coll GROUP BY k')
       AS t(k int8, t int8, c bigint);
RESET gpuhash.batch_rows;
RESET client_min_messages;
SELECT * FROM agg_check('SELECT k, k * 2 AS twice, count(*), sum(v), avg(v), min(v), max(v) FROM agg_coll GROUP BY k',
                        'k int8, t int8, c bigint, s bigint, a numeric, mi int, ma int');
-- text extremes of colliding keys' groups (the host keeps them per group)
SELECT * FROM agg_check('SELECT k, k * 2 AS twice, min(v::text), max(''v'' || v), count(v::text) FROM agg_coll GROUP BY k',
                        'k int8, t int8, mi text, ma text, c bigint');

-- Collisions on the exact device-key path.  Its group hash chains
-- gh_agg_mix (murmur3's 64-bit finalizer) over the key Datums, starting from
-- a mix of the NULL mask; agg_mix computes the mix in SQL (checked against
-- two values from the C code).  For two bigint keys that are not NULL, the
-- hash after the first key a is h1(a) = mix(a + D), D being the start value
-- plus the step constant (6212776320184721948), and the key
-- (a2, b + h1(a) - h1(a2)) has the same hash as (a, b).
CREATE FUNCTION agg_wrap(x numeric) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT (CASE WHEN r >= 9223372036854775808 THEN r - 18446744073709551616 ELSE r END)::bigint
    FROM (SELECT mod(mod(x, 18446744073709551616) + 18446744073709551616, 18446744073709551616) AS r) s $$;
CREATE FUNCTION agg_shr33(x bigint) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT (x::bit(64) >> 33)::bigint $$;
CREATE FUNCTION agg_mix(h bigint) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT h3 # agg_shr33(h3)
    FROM (SELECT agg_wrap((h2 # agg_shr33(h2))::numeric * -4265267296055464877) AS h3
            FROM (SELECT agg_wrap((h # agg_shr33(h))::numeric * -49064778989728563) AS h2) a) b $$;
CREATE FUNCTION agg_h1(w bigint) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT agg_mix(agg_wrap(w::numeric + 6212776320184721948)) $$;
SELECT agg_mix(12345) = 1716623506685013753 AND agg_mix(1) = -5451962507482445012 AS agg_mix_is_the_c_mix;
CREATE TABLE agg_xcoll AS
SELECT j::int8 AS a, j::int8 * 3 AS b, r AS v FROM generate_series(1, 500) j, generate_series(1, 3) r
UNION ALL
SELECT j + 1000000, agg_wrap(j * 3 + agg_h1(j)::numeric - agg_h1(j + 1000000)::numeric), r + 10
  FROM generate_series(1, 500) j, generate_series(1, 2) r
UNION ALL
SELECT NULL, j, 1 FROM generate_series(1, 5) j;
SET client_min_messages = debug1;
SELECT count(*) AS groups, sum(c) AS rows
  FROM gpuhash_aggregate('SELECT a, b, count(*) FROM agg_xcoll GROUP BY a, b') AS t(a int8, b int8, c bigint);
RESET client_min_messages;
SELECT * FROM agg_check('SELECT a, b, count(*), sum(v), avg(v), min(v), max(v) FROM agg_xcoll GROUP BY a, b',
                        'a int8, b int8, c bigint, s bigint, a2 numeric, mi int, ma int');
SELECT * FROM agg_check('SELECT a, b, min(v::text), max(v::text), count(*) FROM agg_xcoll GROUP BY a, b',
                        'a int8, b int8, mi text, ma text, c bigint');
SET gpuhash.batch_rows = 40;
SELECT * FROM agg_check('SELECT b, a, count(*), sum(v) FROM agg_xcoll GROUP BY a, b',
                        'b int8, a int8, c bigint, s bigint');
SELECT * FROM agg_check('SELECT a, b, min(v::text), max(v::text) FROM agg_xcoll GROUP BY a, b',
                        'a int8, b int8, mi text, ma text');
RESET gpuhash.batch_rows;
-- The same collisions in a GpuHashAgg whose second key the device computes:
-- c + d is b (c = b - 7, d = 7), a device expression of the two columns,
-- so the keys (a, c + d) collide as (a, b) do above.  The rows that collide
-- leave the device with the key it computed, which the fallback set groups
-- them by (the child returns c in the key's place, which is not the key).
CREATE TABLE agg_xsum AS SELECT a, b - 7 AS c, 7::int8 AS d, v FROM agg_xcoll;
SET gpuhash.force_agg = on;
DO $$
DECLARE
  l text;
  plan text := '';
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) SELECT a, c + d, count(*), sum(v) FROM agg_xsum GROUP BY a, c + d' LOOP
    plan := plan || l || E'\n';
  END LOOP;
  RAISE NOTICE 'GpuHashAgg: %, the device computes c + d: %, the child computes a sum: %',
    plan ~ 'GpuHashAgg', plan ~ '\n\s+Device Expressions: \(agg_xsum\.c \+ agg_xsum\.d\)\n',
    plan ~ '\n\s{6,}Output: [^\n]*\+';
END $$;
CREATE TEMP TABLE agg_xk_dev AS SELECT a, c + d AS k, count(*) AS n, sum(v) AS s FROM agg_xsum GROUP BY a, c + d;
SET gpuhash.batch_rows = 40;
CREATE TEMP TABLE agg_xk_dev40 AS SELECT a, c + d AS k, count(*) AS n, sum(v) AS s FROM agg_xsum GROUP BY a, c + d;
RESET gpuhash.batch_rows;
RESET gpuhash.force_agg;
SET gpuhash.enabled = off;
CREATE TEMP TABLE agg_xk_native AS SELECT a, c + d AS k, count(*) AS n, sum(v) AS s FROM agg_xsum GROUP BY a, c + d;
RESET gpuhash.enabled;
SELECT (SELECT count(*) FROM agg_xk_native) AS groups,
       (SELECT count(*) FROM ((TABLE agg_xk_native EXCEPT ALL TABLE agg_xk_dev)
                              UNION ALL (TABLE agg_xk_dev EXCEPT ALL TABLE agg_xk_native)) d) AS diff,
       (SELECT count(*) FROM ((TABLE agg_xk_native EXCEPT ALL TABLE agg_xk_dev40)
                              UNION ALL (TABLE agg_xk_dev40 EXCEPT ALL TABLE agg_xk_native)) d) AS diff_batches_of_40;
DROP TABLE agg_xk_dev, agg_xk_dev40, agg_xk_native, agg_xsum;

-- from one group to a million
SELECT * FROM agg_check('SELECT 1 AS one, count(*), sum(v) FROM agg_k GROUP BY 1', 'o int, c bigint, s bigint');
SELECT * FROM agg_check('SELECT g % 10 AS k, count(*), sum(g), min(g) FROM generate_series(1, 300000) g GROUP BY 1',
                        'k int, c bigint, s bigint, m int');
SELECT * FROM agg_check('SELECT g AS k, count(*), sum(g::int8 * 3), max(g) FROM generate_series(1, 1000000) g GROUP BY 1',
                        'k int, c bigint, s numeric, m int');
SELECT * FROM agg_check('SELECT g % 250000, g % 3, count(*), avg(g) FROM generate_series(1, 750000) g GROUP BY 1, 2',
                        'k int, k2 int, c bigint, a numeric');

SELECT gpuhash_device_memory() AS held_after_key_tests;
