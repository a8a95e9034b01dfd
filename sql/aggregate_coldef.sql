-- aggregate_coldef: the type modifiers of gpuhash_aggregate's column
-- definition list apply to its rows as an assignment does (as PostgreSQL's
-- own record-returning functions apply them): a value is coerced to the
-- declared type or refused, never returned or stored in a column whose type
-- cannot hold it.  Both ways the function runs: the GpuHashAggregate scan,
-- and the function itself (WITH ORDINALITY).
CREATE TABLE cd_t AS
  SELECT g, g || 'abcdef' AS s, (g / 3.0)::numeric AS n, (g % 3)::text AS t1
    FROM generate_series(1, 6) g;
ANALYZE cd_t;

-- PostgreSQL's own record-returning function, for comparison
SELECT * FROM jsonb_to_record('{"k": "1abcdef"}') AS t(k varchar(2));
SELECT * FROM jsonb_to_record('{"k": "12.345"}') AS t(k numeric(4,1));

-- values that fit: char pads, numeric rounds, as native casts do
SELECT * FROM gpuhash_aggregate('SELECT t1, count(*), sum(n) FROM cd_t GROUP BY t1')
  AS t(k char(3), c bigint, s numeric(4,1)) ORDER BY k;
SELECT t1::char(3) AS k, count(*) AS c, sum(n)::numeric(4,1) AS s
  FROM cd_t GROUP BY t1 ORDER BY k;
SELECT pg_typeof(k), octet_length(k), s::text
  FROM gpuhash_aggregate('SELECT t1, count(*), sum(n) FROM cd_t GROUP BY t1')
  AS t(k char(3), c bigint, s numeric(4,1)) ORDER BY k LIMIT 1;
SELECT k, s, o > 0 AS numbered
  FROM ROWS FROM (gpuhash_aggregate('SELECT t1, sum(n) FROM cd_t GROUP BY t1')
                  AS (k varchar(1), s numeric(5,2))) WITH ORDINALITY AS t(k, s, o) ORDER BY k;

-- too long, or too large: the ERROR an assignment raises
SELECT * FROM gpuhash_aggregate('SELECT s, count(*) FROM cd_t GROUP BY s')
  AS t(k varchar(2), c bigint);
SELECT * FROM gpuhash_aggregate('SELECT s, count(*) FROM cd_t GROUP BY s')
  AS t(k char(1), c bigint);
SELECT * FROM ROWS FROM (gpuhash_aggregate('SELECT s, count(*) FROM cd_t GROUP BY s')
                         AS (k varchar(2), c bigint)) WITH ORDINALITY AS t(k, c, o);
SELECT * FROM gpuhash_aggregate('SELECT g, sum(n * 1000) FROM cd_t GROUP BY g')
  AS t(g int, s numeric(3,1));
-- trailing spaces beyond the length are cut, as in an assignment
SELECT k, length(k) FROM gpuhash_aggregate($$SELECT 'ab   '::text AS k, count(*) FROM cd_t GROUP BY 1$$)
  AS t(k varchar(2), c bigint);

-- INSERT ... SELECT stores nothing a varchar(2) column cannot hold
CREATE TABLE cd_dst (k varchar(2), c bigint);
INSERT INTO cd_dst SELECT * FROM gpuhash_aggregate('SELECT s, count(*) FROM cd_t GROUP BY s')
  AS t(k varchar(2), c bigint);
SELECT count(*) AS stored FROM cd_dst;
INSERT INTO cd_dst SELECT * FROM gpuhash_aggregate('SELECT t1, count(*) FROM cd_t GROUP BY t1')
  AS t(k varchar(2), c bigint);
SELECT k, c FROM cd_dst ORDER BY k;
-- and a column list without modifiers keeps the values as they are
SELECT max(length(k)) FROM gpuhash_aggregate('SELECT s, count(*) FROM cd_t GROUP BY s')
  AS t(k varchar, c bigint);

DROP TABLE cd_t, cd_dst;
