-- aggregate_refuse: what gpuhash_aggregate refuses, before executing
-- anything, and how it runs the query it accepts: read-only, with the
-- caller's privileges, its column definition list checked.
--
-- agg_touch() records every call in agg_log and says so with a NOTICE, so a
-- refused query that would have called it shows no NOTICE.  After every
-- refusal, agg_unchanged() checks that nothing changed: agg_log still holds
-- exactly its one seed row (an INSERT, UPDATE, DELETE or MERGE would show),
-- agg_v its 20000 rows, agg_seq was never called, no table agg_new exists
-- and work_mem is as it was.  Uses agg_v from aggregate.sql.
CREATE TABLE agg_log (n int);
INSERT INTO agg_log VALUES (0);
CREATE SEQUENCE agg_seq;
CREATE FUNCTION agg_touch() RETURNS bool LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  RAISE NOTICE 'agg_touch ran';
  INSERT INTO agg_log VALUES (1);
  RETURN true;
END $$;
SELECT current_setting('work_mem') AS work_mem_before \gset
CREATE FUNCTION agg_unchanged() RETURNS bool LANGUAGE sql AS $$
  SELECT (SELECT array_agg(n) FROM agg_log) = ARRAY[0]
     AND (SELECT count(*) = 20000 AND sum(id) = 200010000 FROM agg_v)
     AND (SELECT NOT is_called FROM agg_seq)
     AND to_regclass('agg_new') IS NULL $$;

-- not one SELECT
SELECT * FROM gpuhash_aggregate('') AS t(c bigint);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT count(*) FROM agg_v; INSERT INTO agg_log VALUES (2)') AS t(c bigint);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('INSERT INTO agg_log VALUES (3) RETURNING n') AS t(n int);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('UPDATE agg_log SET n = 4 RETURNING n') AS t(n int);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('DELETE FROM agg_log RETURNING n') AS t(n int);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('MERGE INTO agg_log l USING agg_v v ON l.n = v.id WHEN NOT MATCHED THEN INSERT VALUES (5)') AS t(n int);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('CREATE TABLE agg_new (a int)') AS t(n int);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('DROP TABLE agg_log') AS t(n int);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('TRUNCATE agg_v') AS t(n int);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('DO $$ BEGIN PERFORM agg_touch(); END $$') AS t(n int);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('CALL agg_nothing()') AS t(n int);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SET work_mem = ''1MB''') AS t(n int);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('COPY agg_log FROM STDIN') AS t(n int);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('EXPLAIN SELECT count(*) FROM agg_v') AS t(n int);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('VALUES (1)') AS t(n int);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT k13, count(*) INTO agg_new FROM agg_v GROUP BY k13') AS t(k int, c bigint);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('WITH w AS (INSERT INTO agg_log VALUES (6) RETURNING n) SELECT count(*) FROM w') AS t(c bigint);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('WITH w AS (DELETE FROM agg_log RETURNING n) SELECT n, count(*) FROM w GROUP BY n') AS t(n int, c bigint);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT count(*) FROM agg_v UNION SELECT count(*) FROM agg_v') AS t(c bigint);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;

-- locking clauses, at the top or inside
SELECT * FROM gpuhash_aggregate('SELECT k13, count(*) FROM agg_v WHERE agg_touch() GROUP BY k13 FOR UPDATE') AS t(k int, c bigint);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT count(*) FROM (SELECT * FROM agg_v WHERE agg_touch() FOR SHARE) s') AS t(c bigint);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT count(*) FROM agg_v WHERE id IN (SELECT n FROM agg_log FOR UPDATE)') AS t(c bigint);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;

-- features of the top-level query
SELECT * FROM gpuhash_aggregate('SELECT k13, count(*), rank() OVER (ORDER BY k13) FROM agg_v WHERE agg_touch() GROUP BY k13') AS t(k int, c bigint, r bigint);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT k13, k1000, count(*) FROM agg_v WHERE agg_touch() GROUP BY GROUPING SETS ((k13), (k1000))') AS t(k int, k2 int, c bigint);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT k13, count(*) FROM agg_v GROUP BY ROLLUP (k13)') AS t(k int, c bigint);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT k13, count(*) FROM agg_v GROUP BY CUBE (k13)') AS t(k int, c bigint);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT k13, count(*) FROM agg_v WHERE agg_touch() GROUP BY k13 HAVING count(*) > 1') AS t(k int, c bigint);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT k13, count(*) FROM agg_v WHERE agg_touch() GROUP BY k13 ORDER BY k13') AS t(k int, c bigint);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT k13, count(*) FROM agg_v GROUP BY k13 LIMIT 3') AS t(k int, c bigint);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT k13, count(*) FROM agg_v GROUP BY k13 OFFSET 3') AS t(k int, c bigint);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT DISTINCT k13, count(*) FROM agg_v GROUP BY k13') AS t(k int, c bigint);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT k13, generate_series(1, 2), count(*) FROM agg_v GROUP BY k13') AS t(k int, g int, c bigint);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT k13 FROM agg_v WHERE agg_touch()') AS t(k int);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT 1') AS t(k int);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;

-- aggregates: DISTINCT, ORDER BY and FILTER inside; ordered-set and
-- unsupported aggregates and types; expressions of aggregates
SELECT * FROM gpuhash_aggregate('SELECT k13, count(DISTINCT i4) FROM agg_v WHERE agg_touch() GROUP BY k13') AS t(k int, c bigint);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT k13, sum(i4 ORDER BY i4) FROM agg_v GROUP BY k13') AS t(k int, s bigint);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT k13, count(*) FILTER (WHERE i4 > 0) FROM agg_v GROUP BY k13') AS t(k int, c bigint);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT k13, percentile_cont(0.5) WITHIN GROUP (ORDER BY i4) FROM agg_v GROUP BY k13') AS t(k int, p float8);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT k13, string_agg(t, '','') FROM agg_v GROUP BY k13') AS t(k int, s text);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT k13, bool_and(i4 > 0) FROM agg_v GROUP BY k13') AS t(k int, b bool);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT k13, min(t::bpchar) FROM agg_v GROUP BY k13') AS t(k int, m bpchar);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT k13, sum(id * interval ''1 day'') FROM agg_v GROUP BY k13') AS t(k int, s interval);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT k13, sum(id::money) FROM agg_v GROUP BY k13') AS t(k int, s money);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT k13, stddev(i4) FROM agg_v GROUP BY k13') AS t(k int, s numeric);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT k13, sum(i4) / count(*) FROM agg_v WHERE agg_touch() GROUP BY k13') AS t(k int, a bigint);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT k13, count(*) + 1 FROM agg_v GROUP BY k13') AS t(k int, c bigint);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT k13, k13 + random() > 0, count(*) FROM agg_v GROUP BY k13') AS t(k int, r bool, c bigint);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
-- a key type without a hash opclass
SELECT * FROM gpuhash_aggregate('SELECT id::money, count(*) FROM agg_v WHERE agg_touch() GROUP BY 1') AS t(m money, c bigint);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT B''101''::varbit, count(*) FROM agg_v GROUP BY 1') AS t(b varbit, c bigint);
SELECT agg_unchanged() AND current_setting('work_mem') = :'work_mem_before' AS unchanged;

-- none of the above ran anything
SELECT n FROM agg_log;
SELECT to_regclass('agg_new') AS agg_new;
SELECT count(*) AS agg_v_rows FROM agg_v;

-- the column definition list: wrong count or type is an ERROR showing the
-- right list; a binary-compatible type is accepted
SELECT * FROM gpuhash_aggregate('SELECT k13, count(*) FROM agg_v WHERE agg_touch() GROUP BY k13') AS t(k int);
SELECT agg_unchanged() AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT k13, count(*), sum(i8) FROM agg_v WHERE agg_touch() GROUP BY k13') AS t(k int, c int, s bigint);
SELECT agg_unchanged() AS unchanged;
SELECT * FROM gpuhash_aggregate('SELECT k13 AS "the key", avg(i4) FROM agg_v GROUP BY k13') AS t(k int, a float8);
SELECT count(*) AS groups FROM gpuhash_aggregate('SELECT t::varchar, count(*) FROM agg_v GROUP BY 1') AS t(k text, c bigint);
SELECT agg_unchanged() AS unchanged;

-- the query runs read-only: writes by functions it calls are refused
SELECT * FROM gpuhash_aggregate('SELECT k13, count(*) FROM agg_v WHERE agg_touch() GROUP BY k13') AS t(k int, c bigint);
SELECT * FROM gpuhash_aggregate('SELECT count(*) FROM agg_v WHERE nextval(''agg_seq'') > 0') AS t(c bigint);
SELECT agg_unchanged() AS unchanged;
SELECT last_value, is_called FROM agg_seq;
-- and the setting is back afterwards, after an error or a success
BEGIN;
SELECT * FROM gpuhash_aggregate('SELECT count(*) FROM agg_v WHERE id < 10') AS t(c bigint);
SHOW transaction_read_only;
INSERT INTO agg_log VALUES (7);
SAVEPOINT s;
SELECT * FROM gpuhash_aggregate('SELECT count(*) FROM agg_v WHERE agg_touch()') AS t(c bigint);
ROLLBACK TO SAVEPOINT s;
SHOW transaction_read_only;
INSERT INTO agg_log VALUES (8);
COMMIT;
SELECT n FROM agg_log ORDER BY n;
-- inside a read-only transaction it still runs
BEGIN READ ONLY;
SELECT * FROM gpuhash_aggregate('SELECT count(*), sum(id) FROM agg_v') AS t(c bigint, s bigint);
COMMIT;

-- the caller's privileges
CREATE TABLE agg_secret AS SELECT g AS k FROM generate_series(1, 10) g;
CREATE ROLE regress_agg_reader;
GRANT SELECT ON agg_v TO regress_agg_reader;
SET ROLE regress_agg_reader;
SELECT * FROM gpuhash_aggregate('SELECT count(*) FROM agg_secret') AS t(c bigint);
SELECT * FROM gpuhash_aggregate('SELECT count(*) FROM agg_v WHERE id <= 10') AS t(c bigint);
RESET ROLE;
-- row-level security applies as for the query itself
ALTER TABLE agg_secret ENABLE ROW LEVEL SECURITY;
CREATE POLICY agg_small ON agg_secret USING (k <= 3);
GRANT SELECT ON agg_secret TO regress_agg_reader;
SET ROLE regress_agg_reader;
SELECT * FROM gpuhash_aggregate('SELECT count(*), sum(k) FROM agg_secret') AS t(c bigint, s bigint);
RESET ROLE;
DROP TABLE agg_secret;
REVOKE SELECT ON agg_v FROM regress_agg_reader;
DROP ROLE regress_agg_reader;

-- errors while running: nothing is left on the device
SELECT * FROM gpuhash_aggregate('SELECT k13, sum(i4 / (id - 100)) FROM agg_v GROUP BY k13') AS t(k int, s bigint);
SELECT gpuhash_device_memory() AS held_after_division_error;
SET gpuhash.inject_alloc_failure = 4;
SELECT * FROM gpuhash_aggregate('SELECT k13, count(*) FROM agg_v GROUP BY k13') AS t(k int, c bigint);
SELECT gpuhash_device_memory() AS held_after_alloc_failure;
-- the sixth allocation is the group table growing, in the second batch
SET gpuhash.batch_rows = 1000;
SET gpuhash.inject_alloc_failure = 6;
SELECT count(*) FROM gpuhash_aggregate('SELECT id % 5000, count(*), sum(n) FROM agg_v GROUP BY 1') AS t(k int, c bigint, s numeric);
SELECT gpuhash_device_memory() AS held_after_alloc_failure;
RESET gpuhash.inject_alloc_failure;
SELECT count(*) AS groups_after_failures
  FROM gpuhash_aggregate('SELECT id % 5000, count(*), sum(n) FROM agg_v GROUP BY 1') AS t(k int, c bigint, s numeric);
RESET gpuhash.batch_rows;
