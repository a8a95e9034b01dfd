-- join_dml: the join feeding data-modifying statements and row locks, and
-- joins of partitioned tables, gpuhash against native.  The join must
-- carry the target's row identity (ctid, whole rows) through.
-- gh_check_dml (join_setup) runs each statement on two copies of a table
-- and compares them afterwards.
-- no JIT: its cost thresholds are irrelevant here, and some PostgreSQL
-- builds (the GPU host's) have no LLVM
SET jit = off;
SET gpuhash.enabled = off;
SET max_parallel_workers_per_gather = 0;

CREATE TABLE dml_base AS
  SELECT i AS id, CASE WHEN i % 41 = 0 THEN NULL ELSE i % 3000 END AS k, i % 100 AS v, 'r' || i AS t
    FROM generate_series(1, 6000) i;

SELECT what, gh_check_dml('dml_base', q) AS dml FROM (VALUES
  (1, 'update from', 'UPDATE %1$s d SET v = d.v + b.v, t = d.t || b.t FROM fb b WHERE d.k = b.k'),
  (2, 'update from, filter', 'UPDATE %1$s d SET v = b.v FROM fb b WHERE d.k = b.k AND b.v > d.v'),
  (3, 'update, semi', 'UPDATE %1$s d SET v = -1 WHERE d.k IN (SELECT k FROM fb WHERE v < 100)'),
  (4, 'update, anti', 'UPDATE %1$s d SET v = -2 WHERE NOT EXISTS (SELECT 1 FROM fb b WHERE b.k = d.k)'),
  (5, 'delete using', 'DELETE FROM %1$s d USING fb b WHERE d.k = b.k AND b.k2 = 1'),
  (6, 'delete, anti', 'DELETE FROM %1$s d WHERE NOT EXISTS (SELECT 1 FROM fa a WHERE a.k = d.k AND a.g = 4)'),
  (7, 'insert select', 'INSERT INTO %1$s SELECT a.id + 100000, b.k, a.v, a.t FROM fa a JOIN fb b ON a.k = b.k WHERE a.g = 1'),
  (8, 'insert, left', 'INSERT INTO %1$s SELECT a.id + 200000, b.k, a.v, b.t FROM fa a LEFT JOIN fb b ON a.k = b.k AND b.v < 50 WHERE a.g = 2'),
  (9, 'merge', 'MERGE INTO %1$s d USING (SELECT DISTINCT ON (k) k, v, t FROM fb WHERE k IS NOT NULL ORDER BY k, id) s ON d.k = s.k
                WHEN MATCHED AND s.v < 100 THEN DELETE
                WHEN MATCHED THEN UPDATE SET v = s.v, t = s.t
                WHEN NOT MATCHED THEN INSERT VALUES (s.k + 500000, s.k, s.v, s.t)'),
  (10, 'merge, insert only', 'MERGE INTO %1$s d USING fa s ON d.id = s.id + 5000
                WHEN NOT MATCHED AND s.g = 3 THEN INSERT VALUES (s.id + 700000, s.k, s.v, s.t)'),
  (11, 'update, two joins', 'UPDATE %1$s d SET t = d1.name FROM fact f JOIN dim1 d1 ON f.d1 = d1.id
                WHERE f.id = d.id AND d.k = f.d2')
) v(n, what, q) ORDER BY n;

-- the update really changed rows on both sides (native count of changes)
CREATE TABLE dml_n AS SELECT * FROM dml_base;
UPDATE dml_n d SET v = d.v + b.v FROM fb b WHERE d.k = b.k;
SELECT count(*) AS changed_rows FROM dml_n n JOIN dml_base o ON n.id = o.id WHERE n.v <> o.v;
DROP TABLE dml_n;

-- row locks through a join: the locked rows are the joined ones
SELECT gh_check('SELECT a.id, b.id AS b_id FROM fa a JOIN fb b ON a.k = b.k WHERE a.g = 3 FOR UPDATE') AS for_update;
SELECT gh_check('SELECT a.id, b.id AS b_id FROM fa a JOIN fb b ON a.k = b.k WHERE a.g = 3 FOR SHARE OF a') AS for_share_of;
SELECT gh_check('SELECT a.id, b.id AS b_id FROM fa a LEFT JOIN fb b ON a.k = b.k WHERE a.g = 3 FOR UPDATE OF a') AS left_for_update;

-- partitioned tables: a join over the partitions' Append, and a
-- partitionwise join (one join per pair of partitions)
CREATE TABLE part_a (id int, k int, v int) PARTITION BY HASH (k);
CREATE TABLE part_a0 PARTITION OF part_a FOR VALUES WITH (MODULUS 3, REMAINDER 0);
CREATE TABLE part_a1 PARTITION OF part_a FOR VALUES WITH (MODULUS 3, REMAINDER 1);
CREATE TABLE part_a2 PARTITION OF part_a FOR VALUES WITH (MODULUS 3, REMAINDER 2);
CREATE TABLE part_b (id int, k int, w text) PARTITION BY HASH (k);
CREATE TABLE part_b0 PARTITION OF part_b FOR VALUES WITH (MODULUS 3, REMAINDER 0);
CREATE TABLE part_b1 PARTITION OF part_b FOR VALUES WITH (MODULUS 3, REMAINDER 1);
CREATE TABLE part_b2 PARTITION OF part_b FOR VALUES WITH (MODULUS 3, REMAINDER 2);
INSERT INTO part_a SELECT id, k, v FROM fa;
INSERT INTO part_b SELECT id, k, t FROM fb;
ANALYZE part_a, part_b;
SELECT j.jt, gh_check(gh_jq(j.jt, 'part_a', 'part_b', 'a.k = b.k')) AS partitioned
  FROM gh_join_types j ORDER BY j.n;
SET enable_partitionwise_join = on;
SELECT j.jt, gh_check(gh_jq(j.jt, 'part_a', 'part_b', 'a.k = b.k'), 3) AS partitionwise
  FROM gh_join_types j ORDER BY j.n;
SELECT gh_check('SELECT a.k, count(*) AS n, max(b.w) AS mw FROM part_a a JOIN part_b b ON a.k = b.k GROUP BY a.k', 3) AS partitionwise_agg;
RESET enable_partitionwise_join;
-- a partitioned table joined with a plain one, and the update of a partitioned table
SELECT gh_check('SELECT a.id, b.id AS b_id FROM part_a a JOIN fb b ON a.k = b.k AND a.v < b.v') AS partitioned_plain;
-- an UPDATE ... FROM of a partitioned table (rows move between partitions)
CREATE TABLE part_u_native (id int, k int, v int) PARTITION BY LIST ((k % 2));
CREATE TABLE part_u_native_0 PARTITION OF part_u_native FOR VALUES IN (0);
CREATE TABLE part_u_native_1 PARTITION OF part_u_native FOR VALUES IN (1, NULL);
CREATE TABLE part_u_gpu (id int, k int, v int) PARTITION BY LIST ((k % 2));
CREATE TABLE part_u_gpu_0 PARTITION OF part_u_gpu FOR VALUES IN (0);
CREATE TABLE part_u_gpu_1 PARTITION OF part_u_gpu FOR VALUES IN (1, NULL);
INSERT INTO part_u_native SELECT id, k, v FROM fa WHERE id <= 8000;
INSERT INTO part_u_gpu SELECT id, k, v FROM fa WHERE id <= 8000;
ANALYZE part_u_native, part_u_gpu;
SELECT gh_plan_count('UPDATE part_u_gpu p SET k = p.k + 1, v = b.v FROM fb b WHERE p.k = b.k AND b.k2 = 2', 'gpuhash') > 0 AS gpu_joined;
UPDATE part_u_native p SET k = p.k + 1, v = b.v FROM fb b WHERE p.k = b.k AND b.k2 = 2;
SET gpuhash.enabled = on;
SET gpuhash.force_join = on;
UPDATE part_u_gpu p SET k = p.k + 1, v = b.v FROM fb b WHERE p.k = b.k AND b.k2 = 2;
RESET gpuhash.force_join;
SET gpuhash.enabled = off;
CREATE TEMP TABLE pu_n AS SELECT (id, k, v, tableoid = 'part_u_native_0'::regclass)::text AS r FROM part_u_native;
CREATE TEMP TABLE pu_g AS SELECT (id, k, v, tableoid = 'part_u_gpu_0'::regclass)::text AS r FROM part_u_gpu;
SELECT count(*) AS rows, gh_diff('pu_n', 'pu_g') AS diff,
       (SELECT count(*) FROM part_u_native p JOIN fa a ON a.id = p.id WHERE p.k <> a.k) AS native_moved_keys
  FROM pu_n;

RESET max_parallel_workers_per_gather;
RESET gpuhash.enabled;
