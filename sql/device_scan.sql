-- device_scan: the device scan (heap pages deformed on the device, or its
-- CPU twin under gpuhash.device = cpu) returns a table's rows exactly as
-- PostgreSQL's own sequential scan does.  ds_same(t) compares
-- gpuhash_scan_table(NULL::t) with SELECT * FROM t both ways (EXCEPT ALL),
-- and gpuhash_scan_counts says which way each page and row went, so that
-- the checks are not vacuous: pages trusted as all-visible or checked tuple
-- by tuple on the CPU, tuples hidden, rows the device read and rows left to
-- PostgreSQL's tuple path.
SET jit = off;
SET client_min_messages = warning;
CREATE FUNCTION ds_same(tab regclass) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  missing bigint;
  extra bigint;
  n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM (SELECT * FROM %1$s EXCEPT ALL SELECT * FROM gpuhash_scan_table(NULL::%1$s)) x', tab) INTO missing;
  EXECUTE format('SELECT count(*) FROM (SELECT * FROM gpuhash_scan_table(NULL::%1$s) EXCEPT ALL SELECT * FROM %1$s) x', tab) INTO extra;
  EXECUTE format('SELECT count(*) FROM %s', tab) INTO n;
  RETURN format('rows=%s missing=%s extra=%s', n, missing, extra);
END $$;
RESET client_min_messages;

-- every kind of column: by value of 1, 2, 4 and 8 bytes, fixed length by
-- reference (uuid, name, interval, macaddr), varlena short and long (text,
-- numeric, bytea, arrays, jsonb), NULLs in every column
CREATE TABLE ds_types (
  i4 int, t text, i8 int8, n numeric, f8 float8, d date, b bool, i2 int2,
  u uuid, ts timestamptz, c "char", nm name, f4 float4, iv interval,
  m macaddr, ba bytea, arr int[], j jsonb, vc varchar(20), bp char(5));
INSERT INTO ds_types
SELECT CASE WHEN g % 11 = 0 THEN NULL ELSE g END,
       CASE WHEN g % 7 = 0 THEN NULL ELSE repeat(chr(97 + g % 26), g % 300) END,
       CASE WHEN g % 13 = 0 THEN NULL ELSE g * -1000000007::int8 END,
       CASE WHEN g % 17 = 0 THEN NULL WHEN g % 19 = 0 THEN 'NaN' ELSE g / 7.0 END,
       CASE WHEN g % 5 = 0 THEN NULL ELSE g * -0.25 END,
       CASE WHEN g % 23 = 0 THEN NULL ELSE '2000-01-01'::date + g END,
       CASE WHEN g % 3 = 0 THEN NULL ELSE g % 2 = 0 END,
       CASE WHEN g % 29 = 0 THEN NULL ELSE (g % 65535 - 32767)::int2 END,
       CASE WHEN g % 31 = 0 THEN NULL ELSE md5(g::text)::uuid END,
       CASE WHEN g % 37 = 0 THEN NULL ELSE '2000-01-01 UTC'::timestamptz + g * interval '7 minutes' END,
       CASE WHEN g % 41 = 0 THEN NULL ELSE chr(33 + g % 90)::"char" END,
       CASE WHEN g % 43 = 0 THEN NULL ELSE 'name' || g END,
       CASE WHEN g % 47 = 0 THEN NULL ELSE g / 3.0 END,
       CASE WHEN g % 53 = 0 THEN NULL ELSE g * interval '1 second' END,
       CASE WHEN g % 59 = 0 THEN NULL ELSE ('08:00:2b:01:02:' || lpad(to_hex(g % 256), 2, '0'))::macaddr END,
       CASE WHEN g % 61 = 0 THEN NULL ELSE decode(repeat(to_hex(g % 16), 2 * (g % 50)), 'hex') END,
       CASE WHEN g % 67 = 0 THEN NULL ELSE ARRAY[g, -g, g % 10] END,
       CASE WHEN g % 71 = 0 THEN NULL ELSE jsonb_build_object('g', g, 's', repeat('y', g % 40)) END,
       CASE WHEN g % 73 = 0 THEN NULL ELSE 'vc' || g END,
       CASE WHEN g % 79 = 0 THEN NULL ELSE (g % 1000)::text END
  FROM generate_series(1, 6000) g;
INSERT INTO ds_types (i4) VALUES (NULL);   -- a row of NULLs only
SELECT ds_same('ds_types');
SELECT pages > 1 AS several_pages, rows_device = 6001 AS all_on_device, rows_host
  FROM gpuhash_scan_counts(NULL::ds_types);
-- with one page a batch
SET gpuhash.scan_batch_pages = 1;
SELECT ds_same('ds_types');
SELECT batches = pages AS one_page_a_batch FROM gpuhash_scan_counts(NULL::ds_types);
RESET gpuhash.scan_batch_pages;
-- the batch stays within a quarter of work_mem * hash_mem_multiplier: at
-- the least work_mem, a page and its twenty columns' row slots a batch
SET work_mem = '64kB';
SELECT ds_same('ds_types');
SELECT batches = pages AS one_page_a_batch_at_64kB FROM gpuhash_scan_counts(NULL::ds_types);
RESET work_mem;
SELECT batches < pages AS several_pages_a_batch FROM gpuhash_scan_counts(NULL::ds_types);

-- empty and one-page tables, and a table of no columns
CREATE TABLE ds_empty (a int, b text);
SELECT ds_same('ds_empty');
SELECT * FROM gpuhash_scan_counts(NULL::ds_empty);
CREATE TABLE ds_one AS SELECT 1 AS a, 'one'::text AS b;
SELECT ds_same('ds_one');
SELECT pages, rows_device FROM gpuhash_scan_counts(NULL::ds_one);
CREATE TABLE ds_nocols ();
INSERT INTO ds_nocols DEFAULT VALUES;
INSERT INTO ds_nocols DEFAULT VALUES;
SELECT count(*) AS nocols_rows FROM gpuhash_scan_table(NULL::ds_nocols);

-- narrow rows (226 a page): three pages a batch hold fewer row slots than
-- two pages have, so every batch's last page waits for the next one
CREATE TABLE ds_narrow WITH (autovacuum_enabled = off) AS
  SELECT g AS a FROM generate_series(1, 5000) g;
SET gpuhash.scan_batch_pages = 3;
SELECT ds_same('ds_narrow');
SELECT pages, batches > pages / 3 AS pages_carried, rows_device
  FROM gpuhash_scan_counts(NULL::ds_narrow);
RESET gpuhash.scan_batch_pages;

-- visibility: all-visible pages after VACUUM go as they are; pages with
-- updated (HOT and not) and deleted rows are checked tuple by tuple
CREATE TABLE ds_vis (id int PRIMARY KEY, v int, pad text)
  WITH (fillfactor = 60, autovacuum_enabled = off);
INSERT INTO ds_vis SELECT g, g, repeat('p', 50) FROM generate_series(1, 5000) g;
VACUUM (FREEZE) ds_vis;
SELECT pages > 0 AND pages_checked = 0 AS all_visible_as_they_are, tuples_hidden
  FROM gpuhash_scan_counts(NULL::ds_vis);
UPDATE ds_vis SET v = -v WHERE id % 10 = 0;           -- HOT: v is not indexed
UPDATE ds_vis SET id = id + 100000 WHERE id % 97 = 0;  -- not HOT
DELETE FROM ds_vis WHERE id % 13 = 0;
SELECT ds_same('ds_vis');
SELECT pages_checked > 0 AS checked_on_cpu FROM gpuhash_scan_counts(NULL::ds_vis);
-- in a transaction: its own deletes and inserts, and a savepoint rolled back
BEGIN;
DELETE FROM ds_vis WHERE id % 3 = 0;
INSERT INTO ds_vis SELECT g, g, 'new' FROM generate_series(200001, 200500) g;
SAVEPOINT s;
UPDATE ds_vis SET v = 0 WHERE id % 5 = 0;
ROLLBACK TO s;
SELECT ds_same('ds_vis');
SELECT tuples_hidden > 0 AS hid_deleted_rows FROM gpuhash_scan_counts(NULL::ds_vis);
COMMIT;
SELECT ds_same('ds_vis');
VACUUM ds_vis;
SELECT ds_same('ds_vis');
SELECT pages_checked = 0 AS all_visible_again, tuples_hidden FROM gpuhash_scan_counts(NULL::ds_vis);
-- (other sessions' changes: the isolation spec gpuhash_scan_visibility)

-- SERIALIZABLE trusts no page as all-visible (the conflict checks run)
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT ds_same('ds_vis');
SELECT pages_checked = pages AS every_page_checked FROM gpuhash_scan_counts(NULL::ds_vis);
COMMIT;

-- TOAST: compressed in line and stored out of line go through the tuple
-- path, the other rows of their pages through the device
CREATE TABLE ds_toast (id int, t text, b bytea, i4 int DEFAULT 3, n numeric DEFAULT 1.5)
  WITH (autovacuum_enabled = off);
ALTER TABLE ds_toast ALTER COLUMN b SET STORAGE EXTERNAL;
INSERT INTO ds_toast SELECT g, repeat('compressible ', 500), NULL FROM generate_series(1, 20) g;
INSERT INTO ds_toast SELECT g, NULL, decode(repeat(md5(g::text), 200), 'hex') FROM generate_series(21, 40) g;
INSERT INTO ds_toast SELECT g, 'plain ' || g, '\x00ff'::bytea FROM generate_series(41, 400) g;
SELECT ds_same('ds_toast');
SELECT rows_host AS tuple_path_rows, rows_device FROM gpuhash_scan_counts(NULL::ds_toast);

-- dropped and added columns: a dropped column's bytes are stepped over; a
-- column added with a default is read from the rows that have it, the
-- older rows go through the tuple path (which supplies the default); one
-- added without a default is NULL in the older rows
CREATE TABLE ds_alter WITH (autovacuum_enabled = off) AS
  SELECT g AS a, 'drop me ' || g AS dropped, g * 2 AS b FROM generate_series(1, 2000) g;
ALTER TABLE ds_alter DROP COLUMN dropped;
ALTER TABLE ds_alter ADD COLUMN c text;
SELECT ds_same('ds_alter');
SELECT rows_device = 2000 AS dropped_and_null_on_device FROM gpuhash_scan_counts(NULL::ds_alter);
ALTER TABLE ds_alter ADD COLUMN d int DEFAULT 42;
INSERT INTO ds_alter SELECT g, g, 'new', g FROM generate_series(5001, 5100) g;
SELECT ds_same('ds_alter');
SELECT rows_host AS older_rows_by_tuple_path, rows_device AS newer_rows_on_device
  FROM gpuhash_scan_counts(NULL::ds_alter);

-- what the scan refuses: no table, a view's row type, a plain role without
-- SELECT, row-level security in force
SELECT * FROM gpuhash_scan_table(NULL::int);
CREATE VIEW ds_view AS SELECT 1 AS a;
SELECT * FROM gpuhash_scan_table(NULL::ds_view);
CREATE ROLE ds_plain;
GRANT USAGE ON SCHEMA public TO ds_plain;
SET ROLE ds_plain;
SELECT count(*) FROM gpuhash_scan_table(NULL::ds_one);
RESET ROLE;
GRANT SELECT ON ds_one TO ds_plain;
ALTER TABLE ds_one ENABLE ROW LEVEL SECURITY;
SET ROLE ds_plain;
SELECT count(*) FROM gpuhash_scan_table(NULL::ds_one);
RESET ROLE;
ALTER TABLE ds_one DISABLE ROW LEVEL SECURITY;
SET ROLE ds_plain;
SELECT count(*) AS plain_role_with_select FROM gpuhash_scan_table(NULL::ds_one);
RESET ROLE;
-- the statistics count the scans as sequential scans
SELECT pg_stat_force_next_flush();
SELECT seq_scan > 0 AND seq_tup_read > 0 AS counted FROM pg_stat_user_tables WHERE relname = 'ds_one';

-- GpuHashAgg reads its input with the device scan where the input is a
-- serial sequential scan of a heap table with no filter, returning the
-- table's columns: ds_agg(q) runs q with and without gpuhash and compares
-- the groups (as a multiset), and says whether the plan used the device
-- scan, so that each check sees both the rows and the path
CREATE FUNCTION ds_agg(q text, workers int DEFAULT 0) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  l text;
  used bool := false;
  packed bool := false;
  g text;
  n text;
  cnt bigint;
BEGIN
  PERFORM set_config('gpuhash.force_agg', 'on', true);
  PERFORM set_config('max_parallel_workers_per_gather', workers::text, true);
  IF workers > 0 THEN
    PERFORM set_config('parallel_setup_cost', '0', true);
    PERFORM set_config('parallel_tuple_cost', '0', true);
    PERFORM set_config('min_parallel_table_scan_size', '0', true);
  END IF;
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    IF l ~ 'Device Scan: ' THEN used := true; END IF;
    IF l ~ 'GpuHashAggPack' THEN packed := true; END IF;
  END LOOP;
  EXECUTE 'SELECT md5(string_agg(x::text, '','' ORDER BY x::text)) FROM (' || q || ') x' INTO g;
  PERFORM set_config('gpuhash.enabled', 'off', true);
  EXECUTE 'SELECT md5(string_agg(x::text, '','' ORDER BY x::text)), count(*) FROM (' || q || ') x' INTO n, cnt;
  PERFORM set_config('gpuhash.enabled', 'on', true);
  RETURN format('%s groups, %s%s, %s', cnt, CASE WHEN used THEN 'device scan' ELSE 'NO device scan' END,
                CASE WHEN packed THEN ' in workers' ELSE '' END,
                CASE WHEN g IS NOT DISTINCT FROM n THEN 'same' ELSE 'DIFFERENT' END);
END $$;
SELECT ds_agg('SELECT i2, count(*), sum(i8), avg(n), min(d), max(ts), sum(f8), count(t) FROM ds_types GROUP BY i2');
SELECT ds_agg('SELECT b, c, count(*), sum(i4), min(t), max(t), avg(f4) FROM ds_types GROUP BY b, c');
SELECT ds_agg('SELECT t, count(*), sum(n) FROM ds_types GROUP BY t');
SELECT ds_agg('SELECT n, count(*), sum(n), max(n) FROM ds_types GROUP BY n');
SELECT ds_agg('SELECT d, count(*) FROM ds_types GROUP BY d');
SELECT ds_agg('SELECT count(*), sum(i4), sum(i4 * 2), avg(n * 2) FROM ds_types');
SELECT ds_agg('SELECT v % 7, count(*), sum(id) FROM ds_vis GROUP BY 1');
SELECT ds_agg('SELECT length(t) % 5, count(*), max(id) FROM ds_toast GROUP BY 1');
SELECT ds_agg('SELECT id % 3, min(t), max(t), count(b) FROM ds_toast GROUP BY 1');
SELECT ds_agg('SELECT d, c, count(*), sum(b), sum(a) FROM ds_alter GROUP BY d, c');
SELECT ds_agg('SELECT a, count(*) FROM ds_empty GROUP BY a');
SELECT ds_agg('SELECT count(*) FROM ds_empty');
-- parallel: each worker's GpuHashAggPack reads its block ranges of the
-- parallel scan's shared state as pages, deformed by the CPU twin there
SELECT ds_agg('SELECT i2, count(*), sum(i8), avg(n), min(d), max(ts), sum(f8), count(t) FROM ds_types GROUP BY i2', 2);
SELECT ds_agg('SELECT t, count(*), sum(n) FROM ds_types GROUP BY t', 2);
SELECT ds_agg('SELECT v % 7, count(*), sum(id) FROM ds_vis GROUP BY 1', 2);
SELECT ds_agg('SELECT d, c, count(*), sum(b), sum(a) FROM ds_alter GROUP BY d, c', 2);
SELECT ds_agg('SELECT a % 10, count(*), sum(a) FROM ds_narrow GROUP BY 1', 2);
-- the packets of parallel workers are filled from the device scan's batches
-- column by column (GH_HS_ROW rows straight from the batch's arrays, the
-- tuple path's rows one by one): ds_packed(q) runs q in two workers and the
-- leader, then natively, compares the groups as multisets (EXCEPT ALL both
-- ways) and says from EXPLAIN ANALYZE whether the packed plan read the
-- table with the device scan, whether rows took the tuple path, and whether
-- the packets held at most gpuhash.batch_rows rows each
CREATE FUNCTION ds_packed(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  l text;
  packed bool := false;
  scanned bool := false;
  host bigint := 0;
  packets bigint := 0;
  rows_in bigint := 0;
  res_on text[];
  res_off text[];
  missing bigint;
  extra bigint;
  w text := 'SELECT array_agg(x::text) FROM (' || q || ') x';
BEGIN
  PERFORM set_config('gpuhash.force_agg', 'on', true);
  PERFORM set_config('max_parallel_workers_per_gather', '2', true);
  PERFORM set_config('parallel_setup_cost', '0', true);
  PERFORM set_config('parallel_tuple_cost', '0', true);
  PERFORM set_config('min_parallel_table_scan_size', '0', true);
  FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || w LOOP
    IF l ~ 'GpuHashAggPack' THEN
      packed := true;
      packets := substring(l from 'rows=(\d+)')::bigint * substring(l from 'loops=(\d+)')::bigint;
    END IF;
    IF l ~ '^\s+Device Scan: ds_' THEN scanned := true; END IF;
    IF l ~ 'tuple path=\d+' THEN host := substring(l from 'tuple path=(\d+)')::bigint; END IF;
    IF l ~ 'Rows In: \d+' THEN rows_in := substring(l from 'Rows In: (\d+)')::bigint; END IF;
  END LOOP;
  EXECUTE w INTO res_on;
  PERFORM set_config('gpuhash.enabled', 'off', true);
  EXECUTE w INTO res_off;
  PERFORM set_config('gpuhash.enabled', 'on', true);
  SELECT count(*) INTO missing FROM (SELECT unnest(res_off) EXCEPT ALL SELECT unnest(res_on)) x;
  SELECT count(*) INTO extra FROM (SELECT unnest(res_on) EXCEPT ALL SELECT unnest(res_off)) x;
  RETURN format('%s groups, %s, %s, %s, missing %s, extra %s',
                coalesce(cardinality(res_off), 0),
                CASE WHEN packed AND scanned THEN 'packed from the device scan' WHEN packed THEN 'packed, NO device scan' ELSE 'NOT packed' END,
                CASE WHEN host > 0 THEN 'tuple path rows' ELSE 'no tuple path rows' END,
                CASE WHEN packets > 0 AND packets * current_setting('gpuhash.batch_rows')::bigint >= rows_in
                     THEN 'packets within batch_rows' ELSE 'packets OVER batch_rows' END,
                missing, extra);
END $$;
-- keys of 2, 4 and 8 bytes and dates, text and bpchar keys of short
-- (1-byte header) and long (4-byte header, over 126 bytes) values, equal
-- bpchar values that differ in trailing blanks, NULLs in every column;
-- numeric arguments with NaN and 25 digits (listed whole in the packet),
-- text min and max (listed whole too); a dropped column before the others
CREATE TABLE ds_pk (gone text, i2 int2, i4 int, i8 int8, d date, t text,
                    bp bpchar, n numeric, v int, f4 float4)
  WITH (autovacuum_enabled = off);
INSERT INTO ds_pk
SELECT repeat('x', g % 40),
       CASE WHEN g % 17 = 0 THEN NULL ELSE (g % 50 - 25)::int2 END,
       CASE WHEN g % 13 = 0 THEN NULL ELSE g % 300 - 150 END,
       CASE WHEN g % 11 = 0 THEN NULL ELSE (g % 70) * 10000000007 END,
       CASE WHEN g % 19 = 0 THEN NULL ELSE date '2000-01-01' + g % 40 END,
       CASE WHEN g % 7 = 0 THEN NULL
            WHEN g % 5 = 0 THEN repeat('L', 130) || (g % 6)
            ELSE 's' || (g % 60) END,
       CASE WHEN g % 9 = 0 THEN NULL
            WHEN g % 4 = 0 THEN (rpad('b', 140, 'y') || (g % 3))::bpchar
            WHEN g % 4 = 1 THEN ('b' || (g % 30) || ' ')::bpchar
            ELSE ('b' || (g % 30))::bpchar END,
       CASE WHEN g % 23 = 0 THEN NULL
            WHEN g % 29 = 0 THEN 'NaN'
            WHEN g % 31 = 0 THEN 1234567890123456789012345 + g % 3
            ELSE (g % 1000) / 8.0 END,
       g % 100,
       CASE WHEN g % 37 = 0 THEN NULL ELSE (g % 64) / 4.0 END
  FROM generate_series(1, 20000) g;
ALTER TABLE ds_pk DROP COLUMN gone;
VACUUM ANALYZE ds_pk;
-- rows that the device leaves to the tuple path: keys compressed in line
-- (STORAGE MAIN) and stored out of line (EXTERNAL), among short ones
CREATE TABLE ds_pk_toast (id int, km text, ke text, v int)
  WITH (autovacuum_enabled = off);
ALTER TABLE ds_pk_toast ALTER COLUMN km SET STORAGE MAIN;
ALTER TABLE ds_pk_toast ALTER COLUMN ke SET STORAGE EXTERNAL;
INSERT INTO ds_pk_toast
SELECT g,
       CASE WHEN g % 3 = 0 THEN repeat('compressible ', 400) || (g % 5) ELSE 'm' || (g % 5) END,
       CASE WHEN g % 4 = 0 THEN repeat(md5((g % 6)::text), 80) ELSE 'e' || (g % 6) END,
       g % 10
  FROM generate_series(1, 4000) g;
VACUUM ANALYZE ds_pk_toast;
SELECT ds_packed('SELECT i2, count(*), sum(i4), sum(i8), sum(n), avg(i2), min(d) FROM ds_pk GROUP BY i2');
SELECT ds_packed('SELECT i4, d, count(*), sum(v), sum(i2), max(f4) FROM ds_pk GROUP BY i4, d');
SELECT ds_packed('SELECT i8, count(*), sum(n), avg(n), min(t), max(t) FROM ds_pk GROUP BY i8');
SELECT ds_packed('SELECT t, count(*), sum(v), sum(n), count(bp) FROM ds_pk GROUP BY t');
SELECT ds_packed('SELECT rtrim(bp), count(*), sum(i4), min(t) FROM ds_pk GROUP BY bp');
SELECT ds_packed('SELECT d, t, rtrim(bp), count(*), sum(n), sum(v) FROM ds_pk GROUP BY d, t, bp');
SELECT ds_packed('SELECT km, count(*), sum(v) FROM ds_pk_toast GROUP BY km');
SELECT ds_packed('SELECT ke, km, count(*), sum(id), max(ke) FROM ds_pk_toast GROUP BY ke, km');
-- small packets: a batch of the scan spans many of them
SET gpuhash.batch_rows = 50;
SELECT ds_packed('SELECT i2, count(*), sum(i4), sum(i8), sum(n), avg(i2), min(d) FROM ds_pk GROUP BY i2');
SELECT ds_packed('SELECT d, t, rtrim(bp), count(*), sum(n), sum(v), max(t) FROM ds_pk GROUP BY d, t, bp');
SELECT ds_packed('SELECT ke, km, count(*), sum(id), max(ke) FROM ds_pk_toast GROUP BY ke, km');
RESET gpuhash.batch_rows;
-- and the least work_mem: small packets, small batches, tight limits on
-- the values a packet lists whole
SET work_mem = '64kB';
SELECT ds_packed('SELECT i4, d, count(*), sum(v), sum(i2), max(f4) FROM ds_pk GROUP BY i4, d');
SELECT ds_packed('SELECT i8, count(*), sum(n), avg(n), min(t), max(t) FROM ds_pk GROUP BY i8');
SELECT ds_packed('SELECT d, t, rtrim(bp), count(*), sum(n), sum(v) FROM ds_pk GROUP BY d, t, bp');
SELECT ds_packed('SELECT ke, km, count(*), sum(id), max(ke) FROM ds_pk_toast GROUP BY ke, km');
RESET work_mem;
DROP FUNCTION ds_packed(text);
DROP TABLE ds_pk, ds_pk_toast;
-- a filter stays with the scan: PostgreSQL's scan reads the input
SELECT ds_agg('SELECT i2, count(*) FROM ds_types WHERE i4 > random() GROUP BY i2');
-- a WHERE that GpuHashAgg compiles (its Device Filter) leaves the scan
-- without a filter: the device scan reads the table and the device filters
-- its rows, for conditions on integers, dates, timestamps, numerics and
-- floats, with NULLs in every column
CREATE FUNCTION ds_filter(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  l text;
  f bool := false;
BEGIN
  PERFORM set_config('gpuhash.force_agg', 'on', true);
  PERFORM set_config('max_parallel_workers_per_gather', '0', true);
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    IF l ~ 'Device Filter: ' THEN f := true; END IF;
  END LOOP;
  RETURN CASE WHEN f THEN 'device filter, ' ELSE 'NO device filter, ' END || ds_agg(q);
END $$;
SELECT ds_filter('SELECT i2, count(*), sum(n) FROM ds_types WHERE i4 > 100 AND d < date ''2010-01-01'' GROUP BY i2');
SELECT ds_filter('SELECT c, count(*), sum(n) FROM ds_types WHERE n > 300.5 GROUP BY c');
SELECT ds_filter('SELECT b, count(*), sum(i8) FROM ds_types WHERE d <= date ''2012-01-01'' - interval ''90'' day AND i8 IS NOT NULL GROUP BY b');
SELECT ds_filter('SELECT i2, count(*), sum(i8) FROM ds_types WHERE i4 <> 7 OR d IS NULL GROUP BY 1');
-- numbered keys (text, numeric, char(n), floats, interval) through the device scan,
-- serially, so that each group keeps the first value met, as natively:
-- values equal but different in bytes (numeric 1.0 and 1.00, blank-padded
-- bpchar, float -0 and 0) are one group; 9,000 distinct short texts meet
-- in the byte cache's slots; past a tiny work_mem, values met for the first
-- time get no number and go to partitions.  With several keys, each key's
-- dictionary keeps the first value met of the key, not of the group, so
-- those keys are shown in a form that does not depend on it.
CREATE TABLE ds_keys AS
SELECT g AS id,
       CASE WHEN g % 13 = 0 THEN NULL ELSE round((g % 8)::numeric / 2, g % 3) END AS nk,
       CASE WHEN g % 11 = 0 THEN NULL ELSE rpad(chr(97 + g % 4), 1 + g % 3)::bpchar END AS bk,
       CASE WHEN g % 2 = 0 THEN -((g % 4) * 0.5)::float8 ELSE ((g % 4) * 0.5)::float8 END AS fk,
       'k' || (g % 9000) AS tk,
       g % 100 AS v,
       CASE WHEN g % 2 = 0 THEN interval '1 day' * (g % 5) ELSE interval '24 hours' * (g % 5) END AS ik,
       repeat('compressible ', 300) || (g % 3) AS ck
  FROM generate_series(1, 30000) g;
VACUUM ANALYZE ds_keys;
SELECT ds_agg('SELECT nk, count(*), sum(v) FROM ds_keys GROUP BY nk');
SELECT ds_agg('SELECT bk, count(*), sum(v) FROM ds_keys GROUP BY bk');
SELECT ds_agg('SELECT fk, count(*), sum(v) FROM ds_keys GROUP BY fk');
SELECT ds_agg('SELECT tk, count(*), sum(v) FROM ds_keys GROUP BY tk');
SELECT ds_agg('SELECT round(nk, 3), rtrim(bk), tk, count(*), max(id) FROM ds_keys GROUP BY nk, bk, tk');
-- a fixed-length key by reference (interval: '1 day' and '24 hours' are
-- equal), and compressed values (read through the tuple path, and by
-- PostgreSQL's scan as they are stored: compressed bytes are not cached)
SELECT ds_agg('SELECT ik, count(*), sum(v) FROM ds_keys GROUP BY ik');
SELECT ds_agg('SELECT md5(ck), count(*), sum(v) FROM ds_keys GROUP BY ck');
SET gpuhash.enable_scan = off;
SELECT ds_agg('SELECT md5(ck), count(*), sum(v) FROM ds_keys GROUP BY ck');
RESET gpuhash.enable_scan;
SET work_mem = '64kB';
CREATE FUNCTION ds_passes(q text) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE
  l text;
BEGIN
  PERFORM set_config('gpuhash.force_agg', 'on', true);
  PERFORM set_config('max_parallel_workers_per_gather', '0', true);
  FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    IF l ~ '^\s+Batches: ([2-9]|\d\d+)' THEN RETURN true; END IF;
  END LOOP;
  RETURN false;
END $$;
SELECT ds_passes('SELECT tk, count(*), sum(v) FROM ds_keys GROUP BY tk') AS spilled;
SELECT ds_agg('SELECT tk, count(*), sum(v) FROM ds_keys GROUP BY tk');
SELECT ds_agg('SELECT round(nk, 3), rtrim(bk), tk, count(*), max(id) FROM ds_keys GROUP BY nk, bk, tk');
RESET work_mem;
-- visible rows only, in a transaction with its own deletes
BEGIN;
DELETE FROM ds_vis WHERE v % 2 = 0;
SELECT ds_agg('SELECT v % 7, count(*), sum(id) FROM ds_vis GROUP BY 1');
ROLLBACK;
-- EXPLAIN: the device scan's table, and with ANALYZE which way pages and
-- rows went; with VERBOSE, why the input is not read so (ds_explain: the
-- plan's "Device Scan" lines only, which are the same on every device)
CREATE FUNCTION ds_explain(opts text, q text, pat text DEFAULT 'Device Scan')
RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  l text;
BEGIN
  FOR l IN EXECUTE format('EXPLAIN (%s) %s', opts, q) LOOP
    IF l ~ pat THEN RETURN NEXT l; END IF;
  END LOOP;
END $$;
SET gpuhash.force_agg = on;
SET max_parallel_workers_per_gather = 0;
SELECT ds_explain('COSTS OFF', 'SELECT b, count(*) FROM ds_alter GROUP BY b');
SELECT ds_explain('ANALYZE, COSTS OFF, TIMING OFF', 'SELECT d, count(*) FROM ds_alter GROUP BY d');
SELECT ds_explain('ANALYZE, COSTS OFF, TIMING OFF', 'SELECT i4 % 10, count(*), sum(n) FROM ds_toast GROUP BY 1');
DO $$
DECLARE j json;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, FORMAT JSON) SELECT d, count(*) FROM ds_alter GROUP BY d' INTO j;
  RAISE NOTICE 'sent % checked % device rows % tuple path rows % bytes % times %',
    j->0->'Plan'->>'Device Scan Pages Sent', j->0->'Plan'->>'Device Scan Pages Checked',
    j->0->'Plan'->>'Device Scan Rows', j->0->'Plan'->>'Device Scan Tuple Path Rows',
    j->0->'Plan'->>'Device Scan Bytes',
    (j->0->'Plan'->>'Device Scan Staging Time')::float8 >= 0 AND (j->0->'Plan'->>'Device Scan Device Time')::float8 >= 0;
END $$;
SET gpuhash.enable_scan = off;
SELECT ds_explain('VERBOSE, COSTS OFF', 'SELECT b, count(*) FROM ds_alter GROUP BY b');
RESET gpuhash.enable_scan;
SELECT ds_explain('VERBOSE, COSTS OFF', 'SELECT b, count(*) FROM ds_alter WHERE a + b > random() GROUP BY b');
SELECT ds_explain('VERBOSE, COSTS OFF', 'SELECT length(t), count(*) FROM ds_toast GROUP BY 1');
-- in parallel workers the scan node is not run, the workers' device scans
-- read the pages; they count their rows in the node's figures, as if it
-- had returned them
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
-- (the packets a worker sends depend on how the workers share the pages)
SELECT regexp_replace(l, 'actual rows=\d+ loops', 'actual rows=N loops') AS ds_explain
  FROM ds_explain('ANALYZE, COSTS OFF, TIMING OFF', 'SELECT a % 10, count(*) FROM ds_narrow GROUP BY 1',
                  'Device Scan|Seq Scan|GpuHashAggPack') l;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
DROP FUNCTION ds_explain(text, text, text);
RESET max_parallel_workers_per_gather;
RESET gpuhash.force_agg;
DROP FUNCTION ds_filter(text);
DROP FUNCTION ds_passes(text);
DROP FUNCTION ds_agg(text);

DROP VIEW ds_view;
DROP TABLE ds_types, ds_empty, ds_one, ds_nocols, ds_narrow, ds_vis, ds_toast, ds_alter, ds_keys;
REVOKE USAGE ON SCHEMA public FROM ds_plain;
DROP ROLE ds_plain;
DROP FUNCTION ds_same(regclass);
