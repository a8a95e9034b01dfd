-- join_scan: GpuHashJoin reads its outer side as heap pages (the device
-- scan, heapscan.h) where that side is a plain sequential scan of a table
-- with no filter, and its rows are PostgreSQL's.  Every query is compared
-- with PostgreSQL's own plan (gh_check, join_setup.sql), and js_scanned
-- says from EXPLAIN ANALYZE that the device scan did read the outer side:
-- its pages, and its rows split between the device (here the CPU twin,
-- which deforms in every participant) and PostgreSQL's tuple path
-- (compressed values, columns added since the row was written).
SET jit = off;

CREATE TABLE js_outer (
  id int, k int, t text, n numeric, d date, dropme int, f8 float8, big text);
INSERT INTO js_outer
SELECT g,
       CASE WHEN g % 17 = 0 THEN NULL ELSE g % 600 END,
       CASE WHEN g % 13 = 0 THEN NULL
            WHEN g % 5 = 0 THEN repeat('long', 40) || (g % 300)
            ELSE 't' || (g % 300) END,
       CASE WHEN g % 19 = 0 THEN NULL WHEN g % 23 = 0 THEN 'NaN' ELSE g / 7.0 END,
       '2020-01-01'::date + g % 400,
       g,
       CASE WHEN g % 11 = 0 THEN NULL ELSE g * 0.5 END,
       CASE WHEN g % 997 = 0 THEN repeat('compressible text ', 500) || g END
  FROM generate_series(1, 20000) g;
ALTER TABLE js_outer DROP COLUMN dropme;
-- rows written before this column have its default only in the catalog
ALTER TABLE js_outer ADD COLUMN added int DEFAULT 7;
INSERT INTO js_outer (id, k, t, n, d, f8, added)
SELECT g, g % 600, 't' || (g % 300), g, '2021-01-01', g, g FROM generate_series(20001, 20500) g;
VACUUM ANALYZE js_outer;
-- some pages not all-visible: updated rows, dead tuples, HOT chains
UPDATE js_outer SET f8 = -f8 WHERE id % 101 = 0;

CREATE TABLE js_inner AS
SELECT g AS k, 't' || (g % 300) AS t, g % 7 AS v, (g * 3)::numeric / 4 AS w
  FROM generate_series(0, 449) g;
INSERT INTO js_inner VALUES (NULL, NULL, 0, 0);
ANALYZE js_inner;

CREATE TABLE js_empty (LIKE js_outer);

-- js_scanned(query, workers): EXPLAIN ANALYZE of query with gpuhash forced
-- (and with workers, a parallel plan): "outer device scan of T, P pages,
-- R rows (D device, H tuple path)" from the join's figures (summed over
-- its participants and loops), or "NO outer device scan"; then the rows
-- that js_outer's scan node shows (actual rows times loops): the device
-- scan counts its rows there, as if the node had returned them
CREATE FUNCTION js_scanned(q text, workers int DEFAULT 0) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  l text;
  tab text;
  m text[];
  pages bigint := 0;
  dev bigint := 0;
  host bigint := 0;
  node bigint := 0;
BEGIN
  PERFORM gh_set_mode('gpuhash');
  PERFORM set_config('max_parallel_workers_per_gather', workers::text, true);
  IF workers > 0 THEN
    PERFORM set_config('parallel_setup_cost', '0', true);
    PERFORM set_config('parallel_tuple_cost', '0', true);
    PERFORM set_config('min_parallel_table_scan_size', '0', true);
    PERFORM set_config('parallel_leader_participation', 'off', true);
  END IF;
  FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    m := regexp_match(l, 'Seq Scan on js_outer .*actual rows=(\d+) loops=(\d+)');
    IF m IS NOT NULL THEN node := node + m[1]::bigint * m[2]::bigint; END IF;
    m := regexp_match(l, 'Outer Device Scan: (\S+)');
    IF m IS NOT NULL THEN tab := m[1]; END IF;
    m := regexp_match(l, 'Device Scan Pages: sent=(\d+) .*Rows: device=(\d+) tuple path=(\d+)');
    IF m IS NOT NULL THEN
      pages := pages + m[1]::bigint;
      dev := dev + m[2]::bigint;
      host := host + m[3]::bigint;
    END IF;
  END LOOP;
  PERFORM gh_set_mode('native');
  RESET gpuhash.enabled;
  RESET gpuhash.force_join;
  IF tab IS NULL THEN RETURN format('NO outer device scan; scan node %s rows', node); END IF;
  RETURN format('outer device scan of %s, %s pages, %s rows (%s device, %s tuple path); scan node %s rows',
                tab, CASE WHEN pages > 0 THEN 'some' ELSE 'no' END,
                dev + host, CASE WHEN dev > 0 THEN 'some' ELSE 'none' END,
                CASE WHEN host > 0 THEN 'some' ELSE 'none' END, node);
END $$;

-- every join type over the scanned outer side, keys and carried columns of
-- every kind, NULL keys, NaN, a dropped and an added column
SELECT gh_check('SELECT o.id, o.t, o.n, o.d, o.f8, o.added, i.v FROM js_outer o JOIN js_inner i ON o.k = i.k');
SELECT gh_check('SELECT o.id, o.k, o.big IS NULL, i.w FROM js_outer o LEFT JOIN js_inner i ON o.k = i.k');
SELECT gh_check('SELECT o.id, i.k, i.w FROM js_outer o FULL JOIN js_inner i ON o.k = i.k + 1000');
SELECT gh_check('SELECT o.id, o.n FROM js_outer o WHERE EXISTS (SELECT 1 FROM js_inner i WHERE i.t = o.t)');
SELECT gh_check('SELECT o.id, o.added FROM js_outer o WHERE NOT EXISTS (SELECT 1 FROM js_inner i WHERE i.k = o.k)');
SELECT gh_check('SELECT o.t, i.v, o.n * i.w AS x FROM js_outer o JOIN js_inner i ON o.t = i.t AND o.k = i.k');
SELECT gh_check('SELECT md5(o.big), i.v FROM js_outer o JOIN js_inner i ON o.k = i.k');
SELECT js_scanned('SELECT o.id, i.v FROM js_outer o JOIN js_inner i ON o.k = i.k');
-- the compressed values and the rows older than the added column take the
-- tuple path (the device reads the rest)
SELECT js_scanned('SELECT md5(o.big), o.added, i.v FROM js_outer o JOIN js_inner i ON o.k = i.k');
-- an empty table
SELECT gh_check('SELECT e.id, i.v FROM js_empty e RIGHT JOIN js_inner i ON e.k = i.k', 1);
-- a filter stays with PostgreSQL's scan; off, nothing is read as pages
SELECT js_scanned('SELECT o.id, i.v FROM js_outer o JOIN js_inner i ON o.k = i.k WHERE o.id % 3 = 0');
SET gpuhash.enable_scan = off;
SELECT js_scanned('SELECT o.id, i.v FROM js_outer o JOIN js_inner i ON o.k = i.k');
RESET gpuhash.enable_scan;
-- several batches (a tiny work_mem): the outer rows of later batches go to
-- files as the scan reads them
SET work_mem = '64kB';
SELECT gh_check('SELECT o.id, o.t, i.v FROM js_outer o JOIN js_inner i ON o.k = i.k');
SELECT gh_check('SELECT o.id, i.w FROM js_outer o LEFT JOIN js_inner i ON o.t = i.t');
RESET work_mem;
-- visibility: this transaction's own deletes and updates
BEGIN;
DELETE FROM js_outer WHERE id % 4 = 0;
UPDATE js_outer SET k = k + 1 WHERE id % 9 = 0;
SELECT gh_check('SELECT o.id, o.k, i.v FROM js_outer o JOIN js_inner i ON o.k = i.k');
ROLLBACK;
-- rescans: the join inside a correlated subquery reads its outer side
-- again for every outer row of the query
SELECT gh_check('SELECT s.v, (SELECT count(*) FROM js_outer o JOIN js_inner i ON o.k = i.k WHERE i.v = s.v) FROM (VALUES (1), (2), (3)) s(v)');
SELECT js_scanned('SELECT s.v, (SELECT count(*) FROM js_outer o JOIN js_inner i ON o.k = i.k WHERE i.v = s.v) FROM (VALUES (1), (2), (3)) s(v)');
-- parallel: each worker reads its block ranges as pages
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT gh_check('SELECT o.id, o.t, o.n, i.v FROM js_outer o JOIN js_inner i ON o.k = i.k');
SELECT gh_check('SELECT o.id, i.w FROM js_outer o LEFT JOIN js_inner i ON o.t = i.t');
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
SELECT js_scanned('SELECT o.id, i.v FROM js_outer o JOIN js_inner i ON o.k = i.k', 2);

DROP FUNCTION js_scanned(text, int);
DROP TABLE js_outer, js_inner, js_empty;
