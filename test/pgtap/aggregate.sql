-- test/pgtap/aggregate.sql - gpuhash_aggregate's properties: results equal
-- native GROUP BY as multisets, refusals carry the right SQLSTATE and
-- execute nothing, the query runs read-only, and nothing stays on the device.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
BEGIN;
CREATE EXTENSION IF NOT EXISTS gpuhash;
SELECT plan(17);

CREATE TEMP TABLE tap_agg AS
SELECT g AS id, g % 17 AS k, CASE WHEN g % 5 = 0 THEN NULL ELSE g % 3 END AS k2,
       g::int8 * 1000003 AS v8, (g % 100) / 8.0 AS f, round(g::numeric / 7, g % 4) AS n
  FROM generate_series(1, 5000) g;
CREATE TABLE tap_log (n int);
CREATE FUNCTION tap_touch() RETURNS bool LANGUAGE plpgsql AS
$$ BEGIN INSERT INTO tap_log VALUES (1); RETURN true; END $$;

SELECT bag_eq(
  $$SELECT * FROM gpuhash_aggregate('SELECT k, k2, count(*), sum(v8), avg(n), min(f), max(n) FROM tap_agg GROUP BY k, k2')
       AS t(k int, k2 int, c bigint, s numeric, a numeric, mi numeric, ma numeric)$$,
  $$SELECT k, k2, count(*), sum(v8), avg(n), min(f), max(n) FROM tap_agg GROUP BY k, k2$$,
  'two keys with NULLs: the same groups and values as native GROUP BY');
SELECT bag_eq(
  $$SELECT * FROM gpuhash_aggregate('SELECT k2, min(id::text), max(id::text COLLATE "C"), min(n::text) FROM tap_agg GROUP BY k2')
       AS t(k2 int, mi text, ma text, mn text)$$,
  $$SELECT k2, min(id::text) AS mi, max(id::text COLLATE "C") AS ma, min(n::text) AS mn FROM tap_agg GROUP BY k2$$,
  'min and max of text, with NULL keys: native''s values');
SELECT bag_eq(
  $$SELECT * FROM gpuhash_aggregate('SELECT count(*), sum(v8), avg(v8) FROM tap_agg WHERE id > 5000')
       AS t(c bigint, s numeric, a numeric)$$,
  $$SELECT count(*), sum(v8), avg(v8) FROM tap_agg WHERE id > 5000$$,
  'no GROUP BY over no rows: one row, as native');
SELECT is((SELECT count(*) FROM gpuhash_aggregate(
             'SELECT k, count(*) FROM tap_agg WHERE id < 0 GROUP BY k') AS t(k int, c bigint)),
          0::bigint, 'GROUP BY over no rows: no groups');
SELECT bag_eq(
  $$SELECT * FROM gpuhash_aggregate('SELECT k, count(*) FROM (VALUES (0::int8), (4294967297), (1), (4294967296)) v(k) GROUP BY k')
       AS t(k int8, c bigint)$$,
  $$VALUES (0::int8, 1::bigint), (4294967297, 1), (1, 1), (4294967296, 1)$$,
  'bigint keys with equal 64-bit hashes stay apart');

SELECT throws_ok($$SELECT * FROM gpuhash_aggregate('DELETE FROM tap_log') AS t(n int)$$,
                 '0A000', 'gpuhash_aggregate accepts only a SELECT statement',
                 'DML is refused');
SELECT throws_ok($$SELECT * FROM gpuhash_aggregate('SELECT 1; SELECT 2') AS t(n int)$$,
                 '0A000', 'gpuhash_aggregate takes exactly one SQL statement',
                 'two statements are refused');
SELECT throws_ok($$SELECT * FROM gpuhash_aggregate('SELECT k, count(*) FROM tap_agg WHERE tap_touch() GROUP BY k HAVING count(*) > 0') AS t(k int, c bigint)$$,
                 '0A000', 'gpuhash_aggregate does not accept HAVING',
                 'HAVING is refused');
SELECT throws_ok($$SELECT * FROM gpuhash_aggregate('SELECT k, sum(DISTINCT id) FROM tap_agg WHERE tap_touch() GROUP BY k') AS t(k int, s bigint)$$,
                 '0A000', NULL, 'DISTINCT inside an aggregate is refused');
SELECT throws_ok($$SELECT * FROM gpuhash_aggregate('SELECT k, max(id::text::bpchar) FROM tap_agg GROUP BY k') AS t(k int, m bpchar)$$,
                 '0A000', 'gpuhash_aggregate does not run the aggregate max(character)',
                 'an unsupported aggregate is refused');
SELECT throws_ok($$SELECT * FROM gpuhash_aggregate('SELECT k, count(*) FROM tap_agg WHERE tap_touch() GROUP BY k') AS t(k int, c int)$$,
                 '42804', NULL, 'a wrong column definition list is refused');
SELECT is((SELECT count(*) FROM tap_log), 0::bigint, 'refused queries executed nothing');

SELECT throws_ok($$SELECT * FROM gpuhash_aggregate('SELECT k, count(*) FROM tap_agg WHERE tap_touch() GROUP BY k') AS t(k int, c bigint)$$,
                 '25006', NULL, 'a write by a function the query calls fails: the query runs read-only');
SELECT is(current_setting('transaction_read_only'), 'off', 'transaction_read_only is back afterwards');
SELECT is((SELECT count(*) FROM tap_log), 0::bigint, 'and nothing was written');

SELECT lives_ok($$SELECT * FROM gpuhash_aggregate('SELECT k, sum(n) FROM tap_agg GROUP BY k') AS t(k int, s numeric)$$,
                'a supported query runs');
SELECT is(gpuhash_device_memory(), 0::bigint, 'nothing held on the device afterwards');

SELECT * FROM finish();
ROLLBACK;
