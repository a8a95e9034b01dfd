-- test/robust/sanitize_setup.sql - tables and functions for
-- sanitize_backend.sql, run by sanitize_backend.sh in a single-user backend
-- of its own (without the sanitizer) first, after test/robust/functions.sql.
-- Statements end with a semicolon and an empty line (postgres --single -j).

CREATE EXTENSION gpuhash;

-- outer and inner sides: int4 = int8 keys and text keys, with NULL keys
CREATE TABLE sa AS
SELECT g AS id, CASE WHEN g % 11 = 0 THEN NULL ELSE g % 7001 END AS k,
       md5((g % 7001)::text) AS t, g % 5 AS v
  FROM generate_series(1, 40000) g;

CREATE TABLE sb AS
SELECT g AS id, CASE WHEN g % 13 = 0 THEN NULL ELSE (g % 5003)::int8 END AS k,
       md5((g % 5003)::text) AS t
  FROM generate_series(1, 15000) g;

-- three keys for 2,000 rows: long duplicate chains
CREATE TABLE sk AS SELECT g AS id, g % 3 AS k FROM generate_series(1, 2000) g;

-- a bigger inner side for the statement timeouts
CREATE TABLE big AS SELECT g AS id, (g % 1000003)::int8 AS k FROM generate_series(1, 2000000) g;

-- every value type gpuhash_aggregate takes, with NULLs (as sql/aggregate.sql)
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
  FROM generate_series(1, 30000) g;

ANALYZE;

-- 'same STATE' when q raises the same ERROR natively and with a GpuHashJoin
CREATE FUNCTION rb_same_error(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE n text := 'no error'; g text := 'no error';
BEGIN
  IF rb_gpu_joins(q) = 0 THEN RETURN 'NO GpuHashJoin IN PLAN'; END IF;
  BEGIN PERFORM rb_hash(q, 'native'); EXCEPTION WHEN OTHERS THEN n := SQLSTATE || ' ' || SQLERRM; END;
  BEGIN PERFORM rb_hash(q, 'gpu'); EXCEPTION WHEN OTHERS THEN g := SQLSTATE || ' ' || SQLERRM; END;
  RETURN CASE WHEN n = g THEN 'same ' ELSE 'DIFFERENT native ' || n || ', gpu ' END || g;
END $$;

-- every join shape, 'name:RESULT ' each
CREATE FUNCTION rb_join_suite() RETURNS text LANGUAGE plpgsql AS $$
DECLARE res text := ''; q record;
BEGIN
  FOR q IN SELECT * FROM (VALUES
    ('inner_int', 'SELECT a.id, b.id FROM sa a JOIN sb b ON a.k = b.k'),
    ('left_int', 'SELECT a.id, b.id FROM sa a LEFT JOIN sb b ON a.k = b.k'),
    ('right_int', 'SELECT a.id, b.id FROM sa a RIGHT JOIN sb b ON a.k = b.k'),
    ('full_int', 'SELECT a.id, b.id FROM sa a FULL JOIN sb b ON a.k = b.k'),
    ('semi_int', 'SELECT a.id FROM sa a WHERE EXISTS (SELECT 1 FROM sb b WHERE b.k = a.k)'),
    ('anti_int', 'SELECT a.id FROM sa a WHERE NOT EXISTS (SELECT 1 FROM sb b WHERE b.k = a.k)'),
    ('inner_text', 'SELECT a.id, b.id FROM sa a JOIN sb b ON a.t = b.t'),
    ('left_text', 'SELECT a.id, b.id FROM sb b LEFT JOIN sa a ON a.t = b.t'),
    ('full_text', 'SELECT a.id, b.id FROM sa a FULL JOIN sb b ON a.t = b.t'),
    ('semi_text', 'SELECT b.id FROM sb b WHERE b.t IN (SELECT a.t FROM sa a)'),
    ('anti_text', 'SELECT b.id FROM sb b WHERE NOT EXISTS (SELECT 1 FROM sa a WHERE a.t = b.t)'),
    ('two_keys', 'SELECT a.id, b.id FROM sa a JOIN sb b ON a.k = b.k AND a.t = b.t'),
    ('join_filter', 'SELECT a.id, b.id FROM sa a LEFT JOIN sb b ON a.k = b.k AND a.id % 7 < b.id % 5'),
    ('duplicates', 'SELECT count(*), sum(x.id * y.id) FROM sk x JOIN sk y ON x.k = y.k'),
    ('three_tables', 'SELECT a.id, b.id, c.id FROM sa a JOIN sb b ON a.k = b.k LEFT JOIN sk c ON b.id = c.id')
  ) v(name, query) LOOP
    res := res || q.name || ':' || replace(rb_same(q.query), ' ', '_') || ' ';
  END LOOP;
  RETURN res;
END $$;

-- the Device and Probe Chunks lines of q's EXPLAIN ANALYZE, forced
CREATE FUNCTION rb_explain(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE l text; res text := '';
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    IF l ~ '(Device|Probe Chunks):' THEN res := res || regexp_replace(btrim(l), '\s+', ' ', 'g') || '; '; END IF;
  END LOOP;
  RETURN res;
END $$;

-- 'same (N groups)' when gpuhash_aggregate(q) returns the multiset of rows q
-- returns natively
CREATE FUNCTION agg_same(q text, coldef text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE n bigint; missing bigint; extra bigint;
BEGIN
  PERFORM set_config('gpuhash.enabled', 'off', true);
  EXECUTE format('CREATE TEMP TABLE agg_n AS SELECT agg_row::text AS r FROM (%s) AS agg_row', q);
  PERFORM set_config('gpuhash.enabled', 'on', true);
  EXECUTE format('CREATE TEMP TABLE agg_d AS SELECT agg_row::text AS r FROM gpuhash_aggregate(%L) AS agg_row(%s)', q, coldef);
  SELECT count(*) INTO n FROM agg_n;
  SELECT count(*) INTO missing FROM (SELECT r FROM agg_n EXCEPT ALL SELECT r FROM agg_d) x;
  SELECT count(*) INTO extra FROM (SELECT r FROM agg_d EXCEPT ALL SELECT r FROM agg_n) x;
  DROP TABLE agg_n;
  DROP TABLE agg_d;
  RETURN CASE WHEN missing = 0 AND extra = 0 AND n > 0 THEN 'same' ELSE 'DIFFERENT' END
         || ' (' || n || ' groups, ' || missing || ' missing, ' || extra || ' extra)';
END $f$;


