-- aggregate_differences: what README says of gpuhash_aggregate against the
-- native query, checked: where results may differ, and exactly how; what a
-- volatile function in the query can and cannot write.
SET max_parallel_workers_per_gather = 0;

-- sum(real) is added in double precision and rounded to real once;
-- PostgreSQL adds in single precision (here 1e8 first, then ten ones, each
-- lost below real's spacing of 8 at 1e8)
CREATE TABLE ad_r (x real);
INSERT INTO ad_r VALUES (1e8);
INSERT INTO ad_r SELECT 1 FROM generate_series(1, 10);
SELECT sum(x) AS native FROM ad_r;
SELECT s AS gpuhash, s = (SELECT sum(x::float8)::real FROM ad_r) AS double_rounded_once
  FROM gpuhash_aggregate('SELECT sum(x) FROM ad_r') AS t(s real);

-- min/max of equal numerics written with different scales: the same
-- value; which one (and so its display scale) may differ
CREATE TABLE ad_n (g int, v numeric);
INSERT INTO ad_n VALUES (1, 1.0), (1, 1.00), (1, 0.50), (1, 0.5), (2, 7), (2, 7.000);
SELECT g, min(v), max(v) FROM ad_n GROUP BY g ORDER BY g;
SELECT count(*) AS equal_values
  FROM gpuhash_aggregate('SELECT g, min(v), max(v) FROM ad_n GROUP BY g')
       AS t(g int, lo numeric, hi numeric)
  JOIN (SELECT g, min(v) AS lo, max(v) AS hi FROM ad_n GROUP BY g) n USING (g)
 WHERE t.lo = n.lo AND t.hi = n.hi;

-- read-only: a volatile function in the query cannot write a permanent
-- table, a permanent sequence or DDL, but can write an existing temporary
-- table, as in any read-only transaction
CREATE TABLE ad_perm (k int);
CREATE SEQUENCE ad_seq;
CREATE TEMP TABLE ad_temp (k int);
CREATE FUNCTION ad_write(tbl text, k int) RETURNS int LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  EXECUTE format('INSERT INTO %s VALUES (%s)', tbl, k);
  RETURN k;
END $$;
CREATE FUNCTION ad_ddl(k int) RETURNS int LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  EXECUTE 'CREATE TEMP TABLE ad_new (k int)';
  RETURN k;
END $$;
SELECT * FROM gpuhash_aggregate('SELECT ad_write(''ad_perm'', g) % 2, count(*) FROM ad_n GROUP BY 1')
  AS t(k int, n bigint);
SELECT * FROM gpuhash_aggregate('SELECT nextval(''ad_seq'') % 2, count(*) FROM ad_n GROUP BY 1')
  AS t(k bigint, n bigint);
SELECT * FROM gpuhash_aggregate('SELECT ad_ddl(g) % 2, count(*) FROM ad_n GROUP BY 1')
  AS t(k int, n bigint);
SELECT * FROM gpuhash_aggregate('SELECT ad_write(''ad_temp'', g) % 2, count(*) FROM ad_n GROUP BY 1')
  AS t(k int, n bigint) ORDER BY k;
SELECT (SELECT count(*) FROM ad_perm) AS permanent_rows, (SELECT count(*) FROM ad_temp) AS temporary_rows;

DROP FUNCTION ad_write, ad_ddl;
DROP TABLE ad_r, ad_n, ad_perm, ad_temp;
DROP SEQUENCE ad_seq;
RESET max_parallel_workers_per_gather;
