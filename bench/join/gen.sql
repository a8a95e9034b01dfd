-- bench/join/gen.sql - data for the join benchmark (bench/join/run.sh).
--
--   psql -v scale=1.0 -f bench/join/gen.sql            everything, one session
--
-- scale 1.0 = s: 100M rows, r: 10M rows (about 10 GB in all).  run.sh
-- fills the big tables in parallel sessions instead:
--   psql -v scale=S -v step=schema -f gen.sql          tables, small tables
--   psql -v scale=S -v step=fill -v lo=A -v hi=B ...   rows A..B of s and fact
--   psql -v scale=S -v step=finish ...                 VACUUM (FREEZE, ANALYZE)
--
-- Tables (UNLOGGED; deterministic: arithmetic on generate_series only):
--   r(k, v, t, k2)       build side: k = 1..R unique, t = 'key-' || k, k2 = k % 7
--   s(k, v, t, k2)       probe side: S rows, k spread over 1..1.1 R (about 91 %
--                        of the probes hit one r row), t and k2 follow k
--   r_sel(k, v)          R rows of which 1 % have keys in s's range: most probes miss
--   s_mult(k, v), r_mult(k, v)
--                        high multiplicity: S/100 rows each, S/10000 keys, 100
--                        rows per key on both sides (output S rows)
--   fact(d1, d2, d3, d4, m) S/2 rows, and dim1..dim4 (1000, R/100, 10, R/10
--                        rows) for a star join
\set ON_ERROR_STOP 1
\if :{?scale}
\else
\set scale 1.0
\endif
\if :{?step}
\else
\set step all
\endif
SELECT greatest((100000000 * :scale)::bigint, 100) AS s_rows,
       greatest((10000000 * :scale)::bigint, 10) AS r_rows,
       greatest((1000000 * :scale)::bigint, 100) AS m_rows,
       greatest((10000 * :scale)::bigint, 1) AS m_keys,
       greatest((50000000 * :scale)::bigint, 50) AS f_rows,
       greatest((100000 * :scale)::bigint, 10) AS d2_rows,
       greatest((1000000 * :scale)::bigint, 10) AS d4_rows \gset
SELECT :'step' IN ('all', 'schema') AS do_schema, :'step' IN ('all', 'fill') AS do_fill,
       :'step' IN ('all', 'finish') AS do_finish \gset

\if :do_schema
DROP TABLE IF EXISTS s, r, r_sel, s_mult, r_mult, fact, dim1, dim2, dim3, dim4, bench_meta;
CREATE UNLOGGED TABLE bench_meta (scale float8, s_rows bigint, r_rows bigint, done bool);
INSERT INTO bench_meta VALUES (:scale, :s_rows, :r_rows, false);

CREATE UNLOGGED TABLE r (k int4, v int4, t text, k2 int4);
INSERT INTO r SELECT i, i % 1000, 'key-' || i, i % 7 FROM generate_series(1, :r_rows) i;

CREATE UNLOGGED TABLE s (k int4, v int4, t text, k2 int4);

CREATE UNLOGGED TABLE r_sel (k int4, v int4);
INSERT INTO r_sel
  SELECT CASE WHEN i % 100 = 0 THEN i ELSE i + 2 * :r_rows END, i % 1000
    FROM generate_series(1, :r_rows) i;

CREATE UNLOGGED TABLE s_mult (k int4, v int4);
INSERT INTO s_mult SELECT i % :m_keys, i % 1000 FROM generate_series(1, :m_rows) i;
CREATE UNLOGGED TABLE r_mult (k int4, v int4);
INSERT INTO r_mult SELECT (i * 7) % :m_keys, i % 997 FROM generate_series(1, :m_rows) i;

CREATE UNLOGGED TABLE fact (d1 int4, d2 int4, d3 int4, d4 int4, m int4);
CREATE UNLOGGED TABLE dim1 AS SELECT i AS id, i % 10 AS grp, 'd1-' || i AS name FROM generate_series(0, 999) i;
CREATE UNLOGGED TABLE dim2 AS SELECT i AS id, i % 7 AS grp, 'd2-' || i AS name FROM generate_series(0, :d2_rows - 1) i;
CREATE UNLOGGED TABLE dim3 AS SELECT i AS id, i % 3 AS grp, 'd3-' || i AS name FROM generate_series(0, 9) i;
CREATE UNLOGGED TABLE dim4 AS SELECT i AS id, i % 5 AS grp, 'd4-' || i AS name FROM generate_series(0, :d4_rows - 1) i;
\endif

\if :do_fill
\if :{?lo}
\else
\set lo 1
\endif
\if :{?hi}
\else
\set hi :s_rows
\endif
-- s: k = a multiplicative hash of i into 1 .. 1.1 R
INSERT INTO s
  SELECT x.k, i % 1000, 'key-' || x.k, x.k % 7
    FROM generate_series(:lo::bigint, least(:hi::bigint, :s_rows)) i,
         LATERAL (SELECT ((i * 2654435761) % (:r_rows * 11 / 10) + 1)::int4 AS k) x;
-- fact: half as many rows, over the same range of i
INSERT INTO fact
  SELECT (i * 7919) % 1000, (i * 104729) % :d2_rows, i % 10, (i * 15485863) % :d4_rows, i % 100
    FROM generate_series(:lo::bigint, least(:hi::bigint, :s_rows)) i
   WHERE i % 2 = 0;
\endif

\if :do_finish
VACUUM (FREEZE, ANALYZE) s, r, r_sel, s_mult, r_mult, fact, dim1, dim2, dim3, dim4;
-- let the planner use up to 16 workers on the big tables
ALTER TABLE s SET (parallel_workers = 16);
ALTER TABLE fact SET (parallel_workers = 16);
ALTER TABLE r SET (parallel_workers = 16);
ALTER TABLE r_sel SET (parallel_workers = 16);
ALTER TABLE s_mult SET (parallel_workers = 16);
UPDATE bench_meta SET done = true;
SELECT relname, reltuples::bigint AS rows, pg_size_pretty(pg_relation_size(oid)) AS size
  FROM pg_class WHERE relname IN ('s', 'r', 'r_sel', 's_mult', 'r_mult', 'fact', 'dim1', 'dim2', 'dim3', 'dim4')
 ORDER BY pg_relation_size(oid) DESC;
\endif
