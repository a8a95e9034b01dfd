-- GpuHashAgg: GROUP BY and aggregates of unchanged SQL on the device engine
-- (src/agg_path.c).  Every query runs natively (gpuhash.enabled = off) and
-- with gpuhash.force_agg = on, and the two results are compared as
-- multisets of rows in text form (join_setup's gh_diff); the plan of the
-- second must hold a GpuHashAgg where the query is one it runs, and none
-- where it is one it leaves to PostgreSQL.
-- (on the device the suite runs with: gpuhash.device of the test instance)
SET max_parallel_workers_per_gather = 0;

-- gha_check(query, expect_nodes): "aggs=N rows=R diff=D" (N GpuHashAgg nodes
-- in the forced plan, R native rows, D rows in the symmetric difference),
-- plus WRONG-NODES where N is not expect_nodes; an ERROR on either side
-- comes back as a line.
CREATE FUNCTION gha_check(query text, expect_nodes int DEFAULT 1) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  wrapped text := 'SELECT gh_q::text AS r FROM (' || query || ') gh_q';
  nodes int := 0;
  nrows bigint;
  d bigint;
  side text := 'native';
  l text;
  res text;
BEGIN
  BEGIN
    DROP TABLE IF EXISTS pg_temp.gha_native, pg_temp.gha_gpu;
    PERFORM set_config('gpuhash.enabled', 'off', true);
    EXECUTE 'CREATE TEMP TABLE gha_native AS ' || wrapped;
    GET DIAGNOSTICS nrows = ROW_COUNT;
    side := 'gpuhash';
    PERFORM set_config('gpuhash.enabled', 'on', true);
    PERFORM set_config('gpuhash.force_agg', 'on', true);
    FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || wrapped LOOP
      IF l ~ '\(GpuHashAgg\)' THEN nodes := nodes + 1; END IF;
    END LOOP;
    EXECUTE 'CREATE TEMP TABLE gha_gpu AS ' || wrapped;
    PERFORM set_config('gpuhash.force_agg', 'off', true);
    d := gh_diff('pg_temp.gha_native', 'pg_temp.gha_gpu');
  EXCEPTION WHEN OTHERS THEN
    PERFORM set_config('gpuhash.force_agg', 'off', true);
    RETURN format('ERROR (%s side): %s', side, SQLERRM);
  END;
  res := format('aggs=%s rows=%s diff=%s', nodes, nrows, d);
  IF nodes <> expect_nodes THEN
    res := res || format(' WRONG-NODES(expected %s)', expect_nodes);
  END IF;
  RETURN res;
END $$;

-- gha_check_packed(query): gha_check with the input read by two workers
-- that pack it in packets of 100 rows (the settings local to the call)
CREATE FUNCTION gha_check_packed(query text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('parallel_setup_cost', '0', true);
  PERFORM set_config('parallel_tuple_cost', '0', true);
  PERFORM set_config('min_parallel_table_scan_size', '0', true);
  PERFORM set_config('max_parallel_workers_per_gather', '2', true);
  PERFORM set_config('gpuhash.batch_rows', '100', true);
  RETURN gha_check(query);
END $$;

CREATE TABLE gha_t AS
SELECT i,
       i % 7 AS g,
       CASE WHEN i % 11 = 0 THEN NULL ELSE i % 5 END AS gn,
       (i % 3)::int2 AS s2,
       i::int4 AS a4,
       CASE WHEN i % 13 = 0 THEN NULL ELSE i::int8 * 1000003 END AS a8,
       (i / 4.0)::float4 AS f4,
       CASE WHEN i % 17 = 0 THEN NULL ELSE i / 8.0 END::float8 AS f8,
       (i * 1.25)::numeric(12,2) AS n2,
       (i / 7.0)::numeric AS nx,
       CASE WHEN i % 19 = 0 THEN NULL ELSE 'k' || (i % 9) END AS t,
       date '2020-01-01' + (i % 40) AS d
  FROM generate_series(1, 20000) i;
ANALYZE gha_t;

-- every aggregate over every type, NULLs in arguments and keys
SELECT q, gha_check(q) FROM (VALUES
  ('SELECT g, count(*), count(a8), count(t), count(gn) FROM gha_t GROUP BY g'),
  ('SELECT g, sum(s2), sum(a4), sum(a8), sum(f8), sum(n2), sum(nx) FROM gha_t GROUP BY g'),
  ('SELECT g, avg(s2), avg(a4), avg(a8), avg(f4), avg(f8), avg(n2), avg(nx) FROM gha_t GROUP BY g'),
  ('SELECT g, min(s2), min(a4), min(a8), min(f4), min(f8), min(n2), min(nx) FROM gha_t GROUP BY g'),
  ('SELECT g, max(s2), max(a4), max(a8), max(f4), max(f8), max(n2), max(nx) FROM gha_t GROUP BY g'),
  ('SELECT gn, count(*), sum(a4), max(f8) FROM gha_t GROUP BY gn'),
  ('SELECT t, count(*), avg(n2) FROM gha_t GROUP BY t'),
  ('SELECT t, gn, s2, count(*), sum(a8) FROM gha_t GROUP BY t, gn, s2'),
  ('SELECT d, count(*), min(nx) FROM gha_t GROUP BY d'),
  ('SELECT n2 % 10 AS k, count(*) FROM gha_t GROUP BY n2 % 10'),
  ('SELECT i, sum(a4) FROM gha_t GROUP BY i'),
  ('SELECT count(*) FROM gha_t GROUP BY a8 IS NULL')
) v(q);

-- expressions over the groups, HAVING, GROUP BY expressions
SELECT q, gha_check(q) FROM (VALUES
  ('SELECT g + 1 AS g1, sum(a4) * 2 AS s, sum(a4) / count(*) AS m FROM gha_t GROUP BY g'),
  ('SELECT lower(t) AS l, count(*) FROM gha_t GROUP BY lower(t)'),
  ('SELECT i % 100 AS k, CASE WHEN sum(a4) > 200000 THEN ''big'' ELSE ''small'' END FROM gha_t GROUP BY i % 100'),
  ('SELECT g, sum(a4) FROM gha_t GROUP BY g HAVING sum(a4) > 28570000'),
  ('SELECT g, count(*) FROM gha_t GROUP BY g HAVING g > 2 AND max(f8) IS NOT NULL'),
  ('SELECT t FROM gha_t GROUP BY t HAVING count(*) > 2000'),
  ('SELECT sum(a4 + s2), sum(a4) + sum(s2), min(n2 * 2), max(-f8) FROM gha_t'),
  ('SELECT g, sum(a4) OVER () FROM gha_t GROUP BY g, a4 ORDER BY 1, 2 LIMIT 5')
) v(q);

-- no GROUP BY, empty inputs, one group to many
SELECT q, gha_check(q) FROM (VALUES
  ('SELECT count(*), sum(a4), avg(n2), min(f4), max(f8) FROM gha_t'),
  ('SELECT count(*), count(a4), sum(a4), avg(n2), min(f8), max(nx) FROM gha_t WHERE i < 0'),
  ('SELECT g, count(*), sum(a4) FROM gha_t WHERE i < 0 GROUP BY g'),
  ('SELECT 1 AS one, count(*) FROM gha_t GROUP BY 1'),
  ('SELECT i, count(*), sum(n2), min(f8) FROM gha_t GROUP BY i HAVING min(a4) > 10'),
  ('SELECT g, count(*) FROM gha_t WHERE a8 IS NULL GROUP BY g')
) v(q);

-- grouping on joins and subqueries, and as a subquery's inner side
SELECT q, gha_check(q, n) FROM (VALUES
  ('SELECT a.g, count(*), sum(b.a4) FROM gha_t a JOIN gha_t b ON a.i = b.i + 1 GROUP BY a.g', 1),
  ('SELECT x.g, x.s FROM (SELECT g, sum(a4) AS s FROM gha_t GROUP BY g) x JOIN gha_t y ON y.i = x.g', 1),
  ('SELECT g, (SELECT count(*) FROM gha_t b WHERE b.g = a.g AND b.i < 100) FROM gha_t a GROUP BY g', 2)
) v(q, n);
-- a rescanned GpuHashAgg: once with a changed parameter (the input read
-- again), once without (the groups rewound)
SELECT gha_check('SELECT x, (SELECT sum(a4) FROM gha_t WHERE g = x) FROM generate_series(0, 8) x');
SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_material = off;
SELECT gha_check('SELECT x, s.c FROM generate_series(0, 8) x JOIN (SELECT g, count(*) AS c FROM gha_t GROUP BY g) s ON s.g <= x');
RESET enable_hashjoin; RESET enable_mergejoin; RESET enable_material;

-- a parallel input: projected in the workers under a Gather, and packed
-- there where the engine takes packets (every GROUP BY key: by value with
-- bitwise equality as it is, any other as a number into the packet's
-- dictionary)
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET gpuhash.force_agg = on;
SELECT q, (SELECT count(*) FROM gh_plan_lines(q, 'gpuhash') l WHERE l ~ 'GpuHashAggPack') AS packs,
       (SELECT count(*) FROM gh_plan_lines(q, 'gpuhash') l WHERE l ~ 'Gather') AS gathers
  FROM (VALUES
  ('SELECT g, count(*), sum(a4), min(f8), max(a8) FROM gha_t GROUP BY g'),
  ('SELECT i % 1000 AS k, count(*), avg(a4) FROM gha_t GROUP BY i % 1000'),
  ('SELECT t, count(*) FROM gha_t GROUP BY t'),
  ('SELECT g, sum(n2) FROM gha_t GROUP BY g'),
  ('SELECT n2 % 10 AS k, f8, count(*) FROM gha_t GROUP BY 1, 2')
) v(q);
RESET gpuhash.force_agg;
SELECT q, gha_check(q) FROM (VALUES
  ('SELECT g, count(*), sum(a4), min(f8), max(a8) FROM gha_t GROUP BY g'),
  ('SELECT i % 1000 AS k, count(*), avg(a4), sum(s2) FROM gha_t GROUP BY i % 1000'),
  ('SELECT count(*), sum(a8), max(f4) FROM gha_t'),
  ('SELECT gn, count(*), max(f8) FROM gha_t GROUP BY gn'),
  ('SELECT t, count(*), min(a4) FROM gha_t GROUP BY t'),
  ('SELECT g, sum(n2), avg(nx) FROM gha_t GROUP BY g')
) v(q);
-- NUMERIC arguments in packets: fixed point with each value's display
-- scale, and whole where they are not fixed point (NaN, infinities, more
-- than 18 digits, a display scale above the device's); small packets, so
-- that some carry such values and some do not
CREATE TABLE gha_num AS
SELECT i, i % 50 AS k,
       CASE WHEN i % 31 = 0 THEN NULL
            WHEN i % 997 = 0 THEN 'NaN'::numeric
            WHEN i % 1499 = 0 THEN 'Infinity'::numeric
            WHEN i % 1801 = 0 THEN '-Infinity'::numeric
            WHEN i % 211 = 0 THEN (i::numeric * 1e22 + 0.5)
            WHEN i % 223 = 0 THEN round(i::numeric / 3, 30)
            ELSE round((i * 7919 % 100003 - 50000)::numeric / 100, i % 5) END AS nv,
       (i % 1000 - 500)::numeric(9,2) / 4 AS nq
  FROM generate_series(1, 30000) i;
ANALYZE gha_num;
SET gpuhash.batch_rows = 500;
SET gpuhash.force_agg = on;
SELECT (SELECT count(*) FROM gh_plan_lines('SELECT k, sum(nv) FROM gha_num GROUP BY k', 'gpuhash') l
         WHERE l ~ 'GpuHashAggPack') AS packs;
RESET gpuhash.force_agg;
SELECT q, gha_check(q) FROM (VALUES
  ('SELECT k, count(nv), sum(nv), avg(nv), min(nv), max(nv), sum(nq), avg(nq) FROM gha_num GROUP BY k'),
  ('SELECT count(*), sum(nv), min(nv), max(nv), avg(nq) FROM gha_num'),
  ('SELECT k % 3, sum(nq), min(nq), max(nq) FROM gha_num WHERE nv IS NOT NULL AND nv <> ''NaN'' GROUP BY 1')
) v(q);
-- min and max over date, timestamp and timestamptz, the infinities
-- included, serial, packed and spilled
CREATE TABLE gha_time AS
SELECT i, i % 40 AS k,
       CASE WHEN i % 29 = 0 THEN NULL
            WHEN i % 997 = 0 THEN '-infinity'::date
            WHEN i % 991 = 0 THEN 'infinity'::date
            ELSE date '2000-02-29' + (i * 7919 % 200000 - 100000) END AS d,
       CASE WHEN i % 31 = 0 THEN NULL
            WHEN i % 983 = 0 THEN '-infinity'::timestamp
            WHEN i % 977 = 0 THEN 'infinity'::timestamp
            ELSE timestamp '1999-12-31 23:59:59.999999' + (i::int8 * 104729 % 2000003 - 1000000) * interval '1 minute 0.000001 s' END AS ts,
       CASE WHEN i % 37 = 0 THEN NULL
            WHEN i % 971 = 0 THEN '-infinity'::timestamptz
            WHEN i % 967 = 0 THEN 'infinity'::timestamptz
            ELSE timestamptz '2020-03-29 01:30:00+00' + (i * 6007 % 400009 - 200000) * interval '37 minutes' END AS tz
  FROM generate_series(1, 30000) i;
ANALYZE gha_time;
SET gpuhash.force_agg = on;
SELECT (SELECT count(*) FROM gh_plan_lines('SELECT k, min(d), max(ts), min(tz) FROM gha_time GROUP BY k', 'gpuhash') l
         WHERE l ~ 'GpuHashAggPack') AS packs;
RESET gpuhash.force_agg;
SELECT q, gha_check(q) FROM (VALUES
  ('SELECT k, min(d), max(d), min(ts), max(ts), min(tz), max(tz), count(d) FROM gha_time GROUP BY k'),
  ('SELECT min(d), max(d), min(ts), max(ts), min(tz), max(tz) FROM gha_time'),
  ('SELECT k % 3, max(d), min(tz) FROM gha_time WHERE d IS NULL OR d < ''-infinity''::date GROUP BY 1'),
  ('SELECT i % 5000, min(d), max(ts), max(tz) FROM gha_time GROUP BY 1')
) v(q);
SET work_mem = '64kB';
SELECT q, gha_check(q) FROM (VALUES
  ('SELECT i, min(d), max(ts), min(tz) FROM gha_time GROUP BY i')
) v(q);
SET max_parallel_workers_per_gather = 0;
SELECT q, gha_check(q) FROM (VALUES
  ('SELECT i, min(d), max(ts), min(tz) FROM gha_time GROUP BY i'),
  ('SELECT k, min(d), max(d), min(ts), max(ts), min(tz), max(tz) FROM gha_time GROUP BY k')
) v(q);
RESET work_mem;
SET max_parallel_workers_per_gather = 2;
RESET gpuhash.batch_rows;
-- a packed input is read with the leader draining the queues only; the
-- setting is the session's again afterwards
SHOW parallel_leader_participation;
-- GpuHashAgg's Gather asks for every worker a Gather may have
-- (max_parallel_workers_per_gather, at most max_parallel_workers), not the
-- few its partial plan was priced for: a base relation's scan planned again
-- for that many, any other partial plan (here a join, priced for its outer
-- side's one worker) as it is under the wider Gather
ALTER TABLE gha_t SET (parallel_workers = 1);
SET max_parallel_workers_per_gather = 3;
SET gpuhash.force_agg = on;
SELECT q, (SELECT string_agg(substring(l from 'Workers Planned: [0-9]+'), ', ')
             FROM gh_plan_lines(q, 'gpuhash') l WHERE l ~ 'Workers Planned') AS gpuhash,
          (SELECT string_agg(substring(l from 'Workers Planned: [0-9]+'), ', ')
             FROM gh_plan_lines(q, 'native') l WHERE l ~ 'Workers Planned') AS native
  FROM (VALUES
  ('SELECT a.g, count(*), sum(b.a4), max(b.d) FROM gha_t a JOIN gha_t b ON a.i = b.i + 1 GROUP BY a.g'),
  ('SELECT g, count(*), sum(a8) FROM gha_t GROUP BY g')
) v(q);
SET max_parallel_workers = 2;
SELECT string_agg(substring(l from 'Workers Planned: [0-9]+'), ', ')
  FROM gh_plan_lines('SELECT a.g, count(*) FROM gha_t a JOIN gha_t b ON a.i = b.i + 1 GROUP BY a.g', 'gpuhash') l
 WHERE l ~ 'Workers Planned';
RESET max_parallel_workers;
RESET gpuhash.force_agg;
SELECT q, gha_check(q) FROM (VALUES
  ('SELECT a.g, count(*), sum(b.a4), max(b.d) FROM gha_t a JOIN gha_t b ON a.i = b.i + 1 GROUP BY a.g'),
  ('SELECT a.t, b.gn, count(*), sum(b.n2), avg(a.f8) FROM gha_t a JOIN gha_t b ON a.i = b.i GROUP BY 1, 2'),
  ('SELECT count(*), sum(a.a8), min(b.d) FROM gha_t a JOIN gha_t b ON a.i = b.i * 2')
) v(q);
ALTER TABLE gha_t RESET (parallel_workers);
SET max_parallel_workers_per_gather = 2;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
SET max_parallel_workers_per_gather = 0;

-- left to PostgreSQL: no GpuHashAgg in the plan, the same rows
SELECT q, gha_check(q, 0) FROM (VALUES
  ('SELECT g, count(DISTINCT a4) FROM gha_t GROUP BY g'),
  ('SELECT g, string_agg(t, '','' ORDER BY t) FROM gha_t WHERE i < 50 GROUP BY g'),
  ('SELECT g, gn, count(*) FROM gha_t GROUP BY GROUPING SETS ((g), (gn))'),
  ('SELECT g, bit_or(a4) FROM gha_t GROUP BY g'),
  ('SELECT DISTINCT g FROM gha_t'),
  ('SELECT g, max(t::bpchar) FROM gha_t GROUP BY g'),
  ('SELECT g, count(*) FILTER (WHERE random() < 2), sum(a4 + (random() * 0)::int) FROM gha_t GROUP BY g')
) v(q);
-- FILTER (WHERE c): the aggregate reads CASE WHEN c THEN argument END
-- (count(*): THEN 1), which its strict transition skips where c is not
-- true, as PostgreSQL skips the row; on the device where c compiles, else
-- computed by the child
CREATE VIEW gha_filter_q(q) AS VALUES
  ('SELECT g, count(*) FILTER (WHERE a4 > 5), sum(a4) FILTER (WHERE g > 0) IS NULL AS x FROM gha_t GROUP BY g'),
  ('SELECT g, count(*) FILTER (WHERE a8 IS NULL), sum(n2) FILTER (WHERE f8 > 100), avg(a8) FILTER (WHERE t LIKE ''%1%''), min(nx) FILTER (WHERE i % 2 = 0), max(s2) FILTER (WHERE a4 < 0), count(gn) FILTER (WHERE gn > 2) FROM gha_t GROUP BY g'),
  ('SELECT count(*) FILTER (WHERE a4 > 100), sum(n2 * 2) FILTER (WHERE n2 > 10 AND a4 < 5000), count(*), avg(f8) FILTER (WHERE d < date ''2020-01-15'') FROM gha_t'),
  ('SELECT g, sum(a4) FILTER (WHERE false), count(*) FILTER (WHERE a4 IS NULL), max(d) FILTER (WHERE t IS NULL) FROM gha_t GROUP BY g'),
  ('SELECT g, sum(a4 * 2) FILTER (WHERE a4 > 10000), count(*) FILTER (WHERE a4 > 10000) FROM gha_t GROUP BY g HAVING count(*) FILTER (WHERE a4 > 19990) > 1');
SELECT q, gha_check(q) FROM gha_filter_q;
SELECT q, gha_check_packed(q) FROM gha_filter_q;
-- a column that depends on a grouped primary key (the parser accepts it in
-- the target list and HAVING, and the planner drops it from an explicit
-- GROUP BY) is grouped by too: the same groups, and the node returns it
CREATE TABLE gha_pk (id int PRIMARY KEY, v int);
INSERT INTO gha_pk SELECT i, i % 4 FROM generate_series(1, 100) i;
SELECT gha_check('SELECT id, v, count(*) FROM gha_pk GROUP BY id');
CREATE TABLE gha_cust (ck int PRIMARY KEY, name text, bal numeric(12,2), since date, loc point,
                       note varchar(40));
INSERT INTO gha_cust
SELECT i, 'Customer#' || lpad(i::text, 6, '0'), CASE WHEN i % 9 = 0 THEN NULL ELSE (i * 7.31) % 1000 END,
       date '2000-01-01' + i, point(i, -i), CASE WHEN i % 5 = 0 THEN NULL ELSE repeat('x', i % 40) END
  FROM generate_series(1, 3000) i;
ANALYZE gha_cust;
CREATE VIEW gha_dep_q(q) AS VALUES
  ('SELECT c.ck, c.name, c.bal, count(*), sum(t.a4) FROM gha_cust c JOIN gha_t t ON t.i % 3000 + 1 = c.ck GROUP BY c.ck'),
  ('SELECT c.ck, c.name, c.since, c.note, sum(t.n2) AS s FROM gha_cust c JOIN gha_t t ON t.i % 3000 + 1 = c.ck GROUP BY c.ck, c.name, c.since, c.note HAVING c.bal > 100 OR c.bal IS NULL'),
  ('SELECT c.name || ''!'' AS n, max(t.a8) FROM gha_cust c JOIN gha_t t ON t.i % 3000 + 1 = c.ck GROUP BY c.ck ORDER BY 1 LIMIT 20');
SELECT q, gha_check(q) FROM gha_dep_q;
SET gpuhash.force_agg = on;
SELECT l FROM gh_plan_lines('SELECT c.ck, c.name, count(*) FROM gha_cust c JOIN gha_t t ON t.i % 3000 + 1 = c.ck GROUP BY c.ck', 'gpuhash') l
 WHERE l ~ 'Group Key';
RESET gpuhash.force_agg;
-- a dependent column of a type with no hash function (point) stays
-- PostgreSQL's
SELECT gha_check('SELECT c.ck, c.loc, count(*) FROM gha_cust c JOIN gha_t t ON t.i % 3000 + 1 = c.ck GROUP BY c.ck', 0);
SELECT q, gha_check_packed(q) FROM gha_dep_q;

-- edge values: NaN, infinities, -0, the largest integers
CREATE TABLE gha_e (g int, f float8, n numeric, b int8);
INSERT INTO gha_e VALUES
  (1, 'NaN', 'NaN', 9223372036854775807), (1, 1, 1, 9223372036854775807),
  (2, 'Infinity', 'Infinity', -9223372036854775808), (2, '-Infinity', '-Infinity', -1),
  (3, 'Infinity', 'Infinity', 1), (3, 2.5, 2.5, 2),
  (4, NULL, NULL, NULL), (5, 1e150, 1e100, 0), (5, -1e150, 1e100, 0);
SELECT q, gha_check(q) FROM (VALUES
  ('SELECT g, sum(f), avg(f), min(f), max(f) FROM gha_e GROUP BY g'),
  ('SELECT g, sum(n), avg(n), min(n), max(n) FROM gha_e GROUP BY g'),
  ('SELECT g, sum(b), avg(b), min(b), max(b) FROM gha_e GROUP BY g'),
  ('SELECT sum(b), avg(b), count(f), sum(n) FROM gha_e')
) v(q);
-- float4 sums: PostgreSQL adds in float4, in input order; the engine in
-- float8, then rounds once (README: the tolerance of float sums)
CREATE TEMP TABLE gha_f4n AS SELECT g, sum(f4) AS s FROM gha_t GROUP BY g;
SET gpuhash.force_agg = on;
SELECT count(*) AS gpuhashagg
  FROM gh_plan_lines('SELECT g, sum(f4) AS s FROM gha_t GROUP BY g', 'gpuhash') l
 WHERE l ~ 'GpuHashAgg';
CREATE TEMP TABLE gha_f4g AS SELECT g, sum(f4) AS s FROM gha_t GROUP BY g;
RESET gpuhash.force_agg;
CREATE TEMP TABLE gha_f4x AS SELECT g, sum(f4::numeric) AS s FROM gha_t GROUP BY g;
SELECT count(*) AS groups,
       count(*) FILTER (WHERE abs(g.s - x.s) <= 6e-8 * abs(x.s)) AS engine_rounded_once,
       count(*) FILTER (WHERE abs(n.s - x.s) <= 1e-4 * abs(x.s)) AS native_within_1e4
  FROM gha_f4n n JOIN gha_f4g g USING (g) JOIN gha_f4x x USING (g);
DROP TABLE gha_f4n, gha_f4g, gha_f4x;

-- the errors PostgreSQL raises are raised, with its message: gha_errors
-- runs the query natively and forced, and shows each side's error
CREATE FUNCTION gha_errors(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  res text := '';
  mode text;
BEGIN
  FOREACH mode IN ARRAY ARRAY['off', 'on'] LOOP
    PERFORM set_config('gpuhash.force_agg', mode, true);
    BEGIN
      EXECUTE query;
      res := res || format('%s: no error; ', mode);
    EXCEPTION WHEN OTHERS THEN
      res := res || format('%s: %s; ', mode, SQLERRM);
    END;
  END LOOP;
  PERFORM set_config('gpuhash.force_agg', 'off', true);
  RETURN res;
END $$;
INSERT INTO gha_e VALUES (6, 1e308, 0, 0), (6, 1e308, 0, 0);
SET gpuhash.force_agg = on;
SELECT count(*) AS gpuhashagg
  FROM gh_plan_lines('SELECT g, sum(f) FROM gha_e GROUP BY g', 'gpuhash') l
 WHERE l ~ 'GpuHashAgg';
RESET gpuhash.force_agg;
SELECT gha_errors('SELECT g, sum(f) FROM gha_e GROUP BY g');
SET gpuhash.force_agg = on;
SELECT count(*) AS gpuhashagg
  FROM gh_plan_lines('SELECT sum((3e38 + i)::float4) FROM generate_series(1, 2) i', 'gpuhash') l
 WHERE l ~ 'GpuHashAgg';
RESET gpuhash.force_agg;
SELECT gha_errors('SELECT sum((3e38 + i)::float4) FROM generate_series(1, 2) i');
DELETE FROM gha_e WHERE g = 6;
SELECT gha_check('SELECT g, sum(v) FROM (VALUES (1, 9223372036854775807::int8), (1, 1)) v(g, v) GROUP BY g');

-- small work_mem: the groups spill, the rows stay (batches of 16 * 256
-- rows: the engine checks its budget after each)
CREATE FUNCTION gha_analyze(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || query LOOP
    RETURN NEXT l;
  END LOOP;
END $$;
SET work_mem = '64kB';
SET gpuhash.batch_rows = 256;
-- (on the GPU, device keys spill past their device budget: 1MB here)
SET gpuhash.device_memory_limit = '1MB';
SELECT gha_check('SELECT i, count(*), sum(n2), max(n2) FROM gha_t GROUP BY i');
SET gpuhash.force_agg = on;
SELECT count(*) FILTER (WHERE l ~ '^\s+Batches: ([2-9]|\d\d+)  ') AS batches_past_one,
       count(*) FILTER (WHERE l ~ '  Disk Usage: [1-9]\d*kB') AS disk_used,
       -- rows in and groups over all passes: every input row once, every group once
       max(substring(l FROM '^\s+Rows In: (\d+)  ')::bigint) = (SELECT count(*) FROM gha_t) AS rows_in_ok,
       max(substring(l FROM '^\s+Rows In: \d+  Groups: (\d+)')::bigint) = (SELECT count(DISTINCT i) FROM gha_t) AS groups_ok
  FROM gha_analyze('SELECT i, count(*), sum(n2), max(n2) FROM gha_t GROUP BY i') l;
RESET gpuhash.force_agg;
RESET gpuhash.batch_rows;
RESET gpuhash.device_memory_limit;
RESET work_mem;

-- numbered keys (src/aggregate_dict.c): values that are equal but differ
-- in bytes make one group, as natively: numeric 1.0 and 1.00, char(n)'s
-- trailing blanks, float -0 and 0, a nondeterministic collation; NaN is one
-- group.  The output shows each key in a form that does not depend on
-- which of its values a group kept.  Serial, packed in packets of 50 rows,
-- and spilled (past the budget, values met for the first time get no
-- number and their rows go to partitions).
CREATE COLLATION gha_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE gha_dict AS
SELECT i,
       CASE WHEN i % 23 = 0 THEN NULL ELSE round((i % 40)::numeric / 4, 1 + i % 3) END AS nk,
       CASE WHEN i % 29 = 0 THEN NULL ELSE rpad(chr(65 + i % 5), 1 + i % 3)::bpchar END AS bk,
       CASE WHEN i % 31 = 0 THEN 'NaN'::float8
            WHEN i % 2 = 0 THEN -((i % 6) * 0.5)::float8 ELSE ((i % 6) * 0.5)::float8 END AS fk,
       (CASE WHEN i % 2 = 0 THEN 'Key' ELSE 'kEY' END || (i % 300))::text COLLATE gha_ci AS ck,
       repeat('long value ', 40) || (i % 7000) AS lk,
       (i % 100)::numeric(12,2) / 3 AS v
  FROM generate_series(1, 20000) i;
ANALYZE gha_dict;
CREATE VIEW gha_dict_q(q) AS VALUES
  ('SELECT round(nk, 3) AS k, count(*), sum(v), min(v) FROM gha_dict GROUP BY nk'),
  ('SELECT rtrim(bk) AS k, count(*), sum(v) FROM gha_dict GROUP BY bk'),
  ('SELECT fk + 0 AS k, count(*), avg(v) FROM gha_dict GROUP BY fk'),
  ('SELECT lower(ck) AS k, count(*), max(v) FROM gha_dict GROUP BY ck'),
  ('SELECT lk, count(*), sum(v) FROM gha_dict GROUP BY lk'),
  ('SELECT round(nk, 3), rtrim(bk), fk + 0, i % 3 AS m, count(*), sum(v) FROM gha_dict GROUP BY nk, bk, fk, i % 3');
SELECT q, gha_check(q) FROM gha_dict_q;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET gpuhash.batch_rows = 50;
SET gpuhash.force_agg = on;
SELECT count(*) FILTER (WHERE (SELECT count(*) FROM gh_plan_lines(q, 'gpuhash') l
                                WHERE l ~ 'GpuHashAggPack') = 1) AS packed
  FROM gha_dict_q;
RESET gpuhash.force_agg;
SELECT q, gha_check(q) FROM gha_dict_q;
SET work_mem = '64kB';
SET gpuhash.device_memory_limit = '1MB';
SELECT q, gha_check(q) FROM gha_dict_q;
SET gpuhash.force_agg = on;
SELECT count(*) FILTER (WHERE l ~ '^\s+Batches: ([2-9]|\d\d+)  ') AS batches_past_one,
       max(substring(l FROM '^\s+Rows In: (\d+)  ')::bigint) = 20000 AS rows_in_ok,
       max(substring(l FROM '^\s+Rows In: \d+  Groups: (\d+)')::bigint) =
         (SELECT count(DISTINCT lk) FROM gha_dict) AS groups_ok
  FROM gha_analyze('SELECT lk, count(*) FROM gha_dict GROUP BY lk') l;
RESET gpuhash.force_agg;
SET max_parallel_workers_per_gather = 0;
SELECT q, gha_check(q) FROM gha_dict_q;
RESET work_mem;
RESET gpuhash.device_memory_limit;
RESET gpuhash.batch_rows;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

-- device expressions: NUMERIC arguments of +, -, * and unary - over
-- columns and constants run on the device, exact, with PostgreSQL's
-- display scales; rows out of the device's bounds (products past 2^62,
-- results past the packing) and rows with NaN, infinities or values of more
-- than 18 digits are computed on the host with PostgreSQL's functions.  The
-- child then returns only the expressions' inputs.  Serial, packed, spilled.
CREATE TABLE gha_x AS
SELECT i, i % 4 AS g,
       (1 + i % 50)::numeric(15,2) AS q,
       (900 + (i * 7919) % 100000 / 100.0)::numeric(15,2) AS ep,
       ((i % 11) / 100.0)::numeric(15,2) AS disc,
       ((i % 9) / 100.0)::numeric(15,2) AS tax,
       CASE WHEN i % 97 = 0 THEN NULL
            WHEN i % 89 = 0 THEN 'NaN'::numeric
            WHEN i % 83 = 0 THEN 'Infinity'::numeric
            WHEN i % 79 = 0 THEN '-Infinity'::numeric
            WHEN i % 73 = 0 THEN (i::numeric * 1e25)
            WHEN i % 71 = 0 THEN 9223372036854775.807 * (i % 5)
            ELSE round((i * 31 % 2003 - 1000)::numeric / 7, i % 6) END AS w
  FROM generate_series(1, 20000) i;
ANALYZE gha_x;
CREATE VIEW gha_x_q(q) AS VALUES
  ('SELECT g, sum(ep * (1 - disc)), sum(ep * (1 - disc) * (1 + tax)), avg(ep * disc), count(*) FROM gha_x GROUP BY g'),
  ('SELECT g, sum(w * 3), sum(w * w), avg(-w + q), min(w - 1.5), max(w * w * w) FROM gha_x GROUP BY g'),
  ('SELECT g, sum(w * 1e10 * w), min(-(w * q)), max(w + 0.001), sum(2.50 * q - w) FROM gha_x GROUP BY g'),
  ('SELECT sum(ep * (1 - disc)), avg(w * q), max(w * tax) FROM gha_x'),
  ('SELECT i % 7 AS k, sum(w * w * w * w), sum(q * (1 + tax) * (1 - disc) * ep) FROM gha_x GROUP BY 1');
SELECT q, gha_check(q) FROM gha_x_q;
-- count(x) of a device expression, and of a column that is also an
-- expression's input: the rows the host computes (NaN, infinities, more
-- than 18 digits) count too
SELECT gha_check('SELECT g, count(w - 0), count(w), count(w * q), sum(q - 1), count(q) FROM gha_x GROUP BY g');
-- the child's columns (EXPLAIN VERBOSE, below the GpuHashAgg) hold no product
CREATE FUNCTION gha_verbose(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF, VERBOSE) ' || query LOOP
    RETURN NEXT l;
  END LOOP;
END $$;
-- gha_child_computes(query, ops): whether the child of query's forced
-- GpuHashAgg returns a column with one of the characters ops (an
-- operator it computes, where the device computes none)
CREATE FUNCTION gha_child_computes(query text, ops text) RETURNS bool LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('gpuhash.force_agg', 'on', true);
  RETURN EXISTS (SELECT FROM gha_verbose(query) l WHERE l ~ ('^\s{6,}Output: .*' || ops));
END $$;
SET gpuhash.force_agg = on;
SELECT count(*) AS queries,
       count(*) FILTER (WHERE (SELECT count(*) FROM gha_verbose(q) l
                                WHERE l ~ '^\s{6,}Output: .*\*') = 0) AS children_without_products
  FROM gha_x_q;
RESET gpuhash.force_agg;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET gpuhash.batch_rows = 100;
SELECT q, gha_check(q) FROM gha_x_q;
SET work_mem = '64kB';
SET gpuhash.device_memory_limit = '1MB';
SELECT gha_check('SELECT i, sum(w * q), max(ep * (1 - disc)) FROM gha_x GROUP BY i');
RESET max_parallel_workers_per_gather;
SET max_parallel_workers_per_gather = 0;
SELECT gha_check('SELECT i, sum(w * q), max(ep * (1 - disc)) FROM gha_x GROUP BY i');
SELECT gha_check('SELECT i % 1000, count(w * q), count(w), count(CASE WHEN w > 0 THEN w END) FROM gha_x GROUP BY 1');
RESET work_mem;
RESET gpuhash.device_memory_limit;
RESET gpuhash.batch_rows;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
-- each operator against PostgreSQL's own function, value by value: one
-- group per pair of edge values (zero, signs, scales 0 to 24, 18 digits,
-- past 18 digits, NaN, infinities, NULL), so every sum is one result
CREATE TABLE gha_edge AS
SELECT row_number() OVER () AS i, a.v AS a, b.v AS b
  FROM (VALUES (0::numeric), (-0.00), (1), (-1), (0.5), (-2.25), (1.000000000000000000000001),
               (999999999999999999), (-999999999999999999), (12345678901234.5678),
               (0.000000000000000000000009), (1234567890123456789), (3e30), (-7.1e-30),
               ('NaN'), ('Infinity'), ('-Infinity'), (NULL)) a(v),
       (VALUES (0::numeric), (-3), (0.10), (2.000), (-0.000001), (99999999.99999999),
               (4611686018427387904), ('NaN'), ('-Infinity'), (NULL)) b(v);
ANALYZE gha_edge;
SELECT q, gha_check(q) FROM (VALUES
  ('SELECT i, sum(a + b), sum(a - b), sum(a * b), sum(-a), min(b - a), max(a * -b) FROM gha_edge GROUP BY i'),
  ('SELECT i, sum(a * b * a), sum(1.5 * a - b * 0.25), avg(a + 1e-20) FROM gha_edge GROUP BY i')
) v(q);
-- NUMERIC arguments as the host reads them into fixed point (up to four
-- base-10000 digits at once, longer ones digit by digit): values at the
-- edges of both ways, three rows a group, serial and packed by workers;
-- 9999999999999999.000 and 9.3e18 do not fit 64 bits at their scale and
-- travel whole
CREATE TABLE gha_dec AS
SELECT i, v FROM (VALUES (1, 9999999999999999), (2, 9999999999999999.0), (3, 9999999999999999.000),
  (4, 999999999999.9999), (5, 0.001), (6, 0.1), (7, 12.5), (8, 12.50), (9, -0.05), (10, 1e15),
  (11, 1e18), (12, 9e18), (13, 9.3e18), (14, 922337203685477.5807), (15, -9999999999999999),
  (16, 0.00000000000000001), (17, 0.00000), (18, 92233720368547758.07), (19, -922337203685477.5808),
  (20, 1234.5678), (21, 0.12345), (22, 100000000), (23, 99999999999999.99)) d(i, v),
  generate_series(1, 3);
ANALYZE gha_dec;
SELECT q, gha_check(q), gha_check_packed(q) FROM (VALUES
  ('SELECT i, sum(v), min(v), max(v), avg(v), sum(v * 2), sum(-v) FROM gha_dec GROUP BY i')
) v(q);
-- a batch's packets whose NUMERIC values share one display scale, the
-- column's, are packed as they are staged; a packet of another scale or of
-- values past 32 bits unpacks the batch's earlier rows again: scales 2,
-- then 3, then 2, values of 12 digits and more, and NULLs, in table order
-- (packets of 100 rows, 16 a batch)
CREATE TABLE gha_prepack AS
SELECT i, i % 5 AS g,
       CASE WHEN i % 97 = 0 THEN NULL
            WHEN i BETWEEN 3001 AND 4000 THEN round(i / 7.0, 3)
            WHEN i BETWEEN 6001 AND 6200 THEN (i * 1e9)::numeric(20,2)
            ELSE round(i / 3.0, 2) END AS v
  FROM generate_series(1, 10000) i;
ANALYZE gha_prepack;
SELECT q, gha_check(q), gha_check_packed(q) FROM (VALUES
  ('SELECT g, sum(v), min(v), max(v), avg(v), count(v), sum(v * 2) FROM gha_prepack GROUP BY g'),
  ('SELECT sum(v), min(v), max(v), avg(v) FROM gha_prepack WHERE i <= 3000 OR i > 4000')
) v(q);
-- conditions: NUMERIC comparisons, AND, OR, NOT and searched CASE in an
-- aggregate's argument run on the device too (EXPLAIN VERBOSE shows each
-- query's arguments as Device Expressions); a row with a NULL, NaN,
-- infinite or wider-than-18-digit input goes to the host, which runs the
-- same program with PostgreSQL's functions; a branch not taken is not
-- computed, so an overflow there is no error, as in PostgreSQL
CREATE VIEW gha_c_q(q) AS VALUES
  ('SELECT g, sum(CASE WHEN disc > 0.05 THEN ep * (1 - disc) ELSE 0 END), sum(CASE WHEN q < 10 OR tax >= 0.04 THEN q END), count(CASE WHEN NOT (w > 0) THEN w END) FROM gha_x GROUP BY g'),
  ('SELECT g, sum(CASE WHEN w < 0 AND q > 20 THEN w * q WHEN w = 0 THEN 1.5 WHEN w IS NULL THEN -1 ELSE w END), max(CASE WHEN w <> q THEN w - q END), min(CASE WHEN ep <= 950 THEN -ep ELSE ep * 2 END) FROM gha_x GROUP BY g'),
  ('SELECT g, avg(CASE WHEN q > 25 THEN CASE WHEN disc < 0.03 THEN q * 2 ELSE q END ELSE -q END), sum(CASE WHEN w > 1e300 THEN w * 1e131000 * 1e131000 ELSE tax END) FROM gha_x GROUP BY g'),
  ('SELECT sum(CASE WHEN ep >= 1000 AND NOT (disc = 0.01 OR disc = 0.02) THEN ep END), max(CASE WHEN w < -100 THEN w END) FROM gha_x');
-- integers, dates and timestamps in conditions (columns against columns or
-- constants of their kind, compared as their int64 values) and integers
-- cast to numeric in branches, with NULLs, infinite dates and timestamps
-- and the int8 extremes (a 19-digit constant keeps its argument in the
-- child; a 19-digit value goes to the host)
CREATE VIEW gha_ci_q(q) AS VALUES
  ('SELECT k, sum(CASE WHEN d < date ''2000-01-01'' THEN 1.5 WHEN d >= ''2001-06-30'' THEN i::numeric END), count(CASE WHEN ts > timestamp ''2000-01-01 12:00'' AND tz <= timestamptz ''2020-03-30 00:00+00'' THEN 1.0 END), sum(CASE WHEN i <> k THEN i::numeric * 2 ELSE k::numeric END), min(CASE WHEN d = ''infinity'' THEN 0.0 WHEN d = ''-infinity'' THEN -1.0 WHEN d IS NULL THEN -2.0 ELSE k::numeric END) FROM gha_time GROUP BY k'),
  ('SELECT g, sum(CASE WHEN b > 0 THEN b::numeric ELSE -1 END), max(CASE WHEN b < g THEN b::numeric END), count(CASE WHEN b = 9223372036854775807 THEN 1.0 END) FROM gha_e GROUP BY g');
CREATE VIEW gha_cond_q(q) AS
  SELECT q FROM gha_c_q UNION ALL SELECT q FROM gha_ci_q;
SELECT q, gha_check(q) FROM gha_cond_q;
SET gpuhash.force_agg = on;
SELECT count(*) AS queries,
       count(*) FILTER (WHERE (SELECT count(*) FROM gha_verbose(q) l
                                WHERE l ~ 'Device Expressions: .*CASE') = 1) AS with_device_case
  FROM gha_cond_q;
RESET gpuhash.force_agg;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET gpuhash.batch_rows = 100;
SELECT q, gha_check(q) FROM gha_cond_q;
RESET max_parallel_workers_per_gather;
RESET gpuhash.batch_rows;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
-- what the device does not run (a division) under a CASE or in a
-- condition: PostgreSQL computes it only where the branch is taken, so
-- there is no division by zero; the child computes the whole argument
SELECT gha_check('SELECT g, sum(CASE WHEN disc <> 0 THEN q / disc ELSE 0 END), sum(CASE WHEN disc <> 0 AND q / disc > 100 THEN q END) FROM gha_x GROUP BY g');
-- each comparison, AND, OR and NOT on the edge values, NULL included
SELECT q, gha_check(q) FROM (VALUES
  ('SELECT i, sum(CASE WHEN a < b THEN a ELSE b END), sum(CASE WHEN a <= b THEN b END), sum(CASE WHEN a = b THEN a * b ELSE 0.5 END), sum(CASE WHEN a <> b THEN a - b END), sum(CASE WHEN a >= b THEN 1.0 ELSE 2.00 END), sum(CASE WHEN a > b THEN -a END) FROM gha_edge GROUP BY i'),
  ('SELECT i, sum(CASE WHEN a > 0 AND b > 0 THEN 1.0 WHEN NOT (a > 0 OR b > 0) THEN 2.0 WHEN a > 0 OR b > 0 THEN 3.0 END), sum(CASE WHEN NOT (a = b) THEN 4.0 ELSE 5.0 END), sum(CASE WHEN a IS NULL THEN 6.0 WHEN b IS NOT NULL THEN b END) FROM gha_edge GROUP BY i')
) v(q);
-- the branch taken overflows: PostgreSQL's error on both sides
SELECT gha_errors('SELECT g, sum(CASE WHEN w > 0 THEN w * 1e131000 * 1e131000 ELSE 0 END) FROM gha_x WHERE i % 73 = 0 GROUP BY g');
-- integer arithmetic: an integer aggregate argument of +, -, * and unary -
-- over int2, int4 and int8 columns and constants (any mix of widths) is an
-- integer program on the device, whose column has the argument's type (sum
-- of int4 is int8, avg numeric, min and max int4 ...); integer arithmetic
-- also runs inside NUMERIC programs (a numeric(int) cast) and conditions.
-- Each op's result is checked against its operator's result type: out of
-- it, PostgreSQL's error ("smallint/integer/bigint out of range"), raised
-- by the host for the row the device listed; a branch not taken is not
-- computed.  A searched CASE of integer results (widening casts included)
-- over conditions of integers is an integer program too, and a narrowing
-- cast is checked as int84, int82 and int42 check it.  Rows 5001-5003
-- hold the types' extremes.
CREATE TABLE gha_int AS
SELECT i, i % 5 AS g,
       CASE WHEN i % 9 = 0 THEN NULL ELSE i * 37 % 2001 - 1000 END::int2 AS s,
       CASE WHEN i % 7 = 0 THEN NULL ELSE i * 7919 % 200001 - 100000 END::int4 AS a,
       CASE WHEN i % 11 = 0 THEN NULL ELSE i::int8 * 1000000007 - 2500000000000 END AS b
  FROM generate_series(1, 5000) i;
INSERT INTO gha_int VALUES
  (5001, 0, 32767, 2147483647, 9223372036854775807),
  (5002, 0, -32768, -2147483648, -9223372036854775808),
  (5003, 1, 181, 46340, 3037000499);
ANALYZE gha_int;
CREATE VIEW gha_int_q(q) AS VALUES
  ('SELECT g, sum(b - a), avg(s - a), min(a * 1), max(s + 0), count(b - s), sum(b - b), max(s * 1 - s) FROM gha_int GROUP BY g'),
  ('SELECT g, sum(a * s), avg(b - a), min(-a), max(s * 2 - s), sum(a + s * 3), sum(a * b), min(b * 2 + a), avg(s * 30) FROM gha_int WHERE i <= 5000 GROUP BY g'),
  ('SELECT g, sum(CASE WHEN a + s > 0 THEN 1.5 WHEN a * 2 < -1000 THEN (a - s)::numeric END), sum((b - a)::numeric * 0.5), max((s * 30)::numeric), count(CASE WHEN -a >= s THEN 1.0 END) FROM gha_int WHERE i <= 5000 GROUP BY g'),
  ('SELECT sum(a + 0), max(b - 0), min(s * 1), sum(CASE WHEN i > 5000 THEN 1.0 ELSE (b * 2)::numeric END) FROM gha_int'),
  ('SELECT i, sum(b * b), min(a * a), max(s * s) FROM gha_int WHERE i = 5003 GROUP BY i'),
  ('SELECT g, sum((s * 2)::int2), min((b - b)::int4 + a), max((a - a + s)::int2), count(b::int2) FILTER (WHERE b = 0) FROM gha_int WHERE i <= 5000 GROUP BY g'),
  ('SELECT g, sum(CASE WHEN a > 0 THEN 1 ELSE 0 END), count(CASE WHEN s IS NULL THEN 1 END), sum(CASE WHEN a > s THEN a - s WHEN b IS NULL THEN -1 END), sum(CASE WHEN s > 0 THEN s ELSE a END), min(CASE WHEN b > 0 AND i <= 5000 THEN b * 2 END), max(CASE WHEN i > 5000 THEN 0 ELSE s * 2::int2 END), avg(CASE WHEN a IS NOT NULL OR s < 0 THEN s - 1 END) FROM gha_int GROUP BY g');
SELECT q, gha_check(q) FROM gha_int_q;
SELECT count(*) AS queries,
       count(*) FILTER (WHERE NOT gha_child_computes(q, '[-+*]')) AS children_without_arithmetic
  FROM gha_int_q;
SELECT gha_errors('SELECT g, sum(a * a) FROM gha_int GROUP BY g');
SELECT gha_errors('SELECT g, max(s * 100::int2) FROM gha_int GROUP BY g');
SELECT gha_errors('SELECT sum(-b) FROM gha_int');
SELECT gha_errors('SELECT g, avg(b + a) FROM gha_int GROUP BY g');
SELECT gha_errors('SELECT g, sum(CASE WHEN a * a > 0 THEN 1.0 END) FROM gha_int GROUP BY g');
SELECT gha_errors('SELECT g, min((b * 3)::numeric) FROM gha_int GROUP BY g');
SELECT gha_errors('SELECT g, sum(CASE WHEN b > 0 THEN b * 2 ELSE 0 END) FROM gha_int GROUP BY g');
SELECT gha_errors('SELECT g, sum(b::int4) FROM gha_int GROUP BY g');
SELECT gha_errors('SELECT g, max(a::int2) FROM gha_int GROUP BY g');
-- integer / and % (int2div ... int84div, int2mod, int4mod, int8mod):
-- truncated as PostgreSQL truncates, x % -1 is 0, a zero divisor raises
-- "division by zero" and the smallest value over -1 its type's "out of
-- range"; under a CASE only the branch taken divides; as a GROUP BY key too
CREATE VIEW gha_idiv_q(q) AS VALUES
  ('SELECT g, sum(a / 7), sum(a % 7), min(b / 1000003), max(b % 1000), avg(s / 3::int2), sum(s % 4::int2) FROM gha_int GROUP BY g'),
  ('SELECT g, sum(a / s), sum(b / a), min(a % s), max(b % a), sum(s / a), min(b / s) FROM gha_int WHERE s <> 0 AND a <> 0 GROUP BY g'),
  ('SELECT i, min(a / -1), max(a % -1), sum(b % -1), min(s / -1::int2), max(b / -1) FROM gha_int WHERE i = 5001 GROUP BY i'),
  ('SELECT g, sum(CASE WHEN s <> 0 THEN a / s ELSE 0 END), count(CASE WHEN a % 2 = 0 THEN 1 END) FROM gha_int GROUP BY g'),
  ('SELECT a / 1000 AS k, count(*), sum(s) FROM gha_int GROUP BY 1'),
  ('SELECT b / 4611686018427387904 AS k, s % 10::int2 AS k2, count(*) FROM gha_int GROUP BY 1, 2');
SELECT q, gha_check(q) FROM gha_idiv_q;
SELECT q, gha_check_packed(q) FROM gha_idiv_q;
SELECT count(*) AS queries,
       count(*) FILTER (WHERE NOT gha_child_computes(q, '[/%]')) AS children_without_division
  FROM gha_idiv_q;
SELECT gha_errors('SELECT g, sum(a / (s - s)) FROM gha_int GROUP BY g');
SELECT gha_errors('SELECT g, max(a % (i - i)) FROM gha_int GROUP BY g');
SELECT gha_errors('SELECT sum(a / -1) FROM gha_int');
SELECT gha_errors('SELECT min(b / -1) FROM gha_int');
SELECT gha_errors('SELECT max(s / -1::int2) FROM gha_int');
SELECT gha_errors('SELECT a / (i - i) AS k, count(*) FROM gha_int GROUP BY 1');
DROP VIEW gha_idiv_q;
-- an AND stops at its first false argument and an OR at its first true one,
-- where the device computes them all: an argument after the first whose
-- arithmetic may raise (s is 0 on some rows, a * 100000 overflows on most)
-- stays in the child, and no error arises where PostgreSQL raises none
CREATE VIEW gha_shortcut_q(q) AS VALUES
  ('SELECT g, sum(a) FILTER (WHERE s <> 0 AND a / s > 1) FROM gha_int GROUP BY g'),
  ('SELECT g, count(*) FILTER (WHERE a > -10 AND a < 10 AND a * 100000 > 5) FROM gha_int GROUP BY g'),
  ('SELECT g, sum(CASE WHEN s = 0 OR a % s = 0 THEN 1 ELSE 0 END) FROM gha_int GROUP BY g'),
  ('SELECT g, sum(CASE WHEN s IS NULL OR NOT (s = 0 OR b / s > 0) THEN 1 END) FROM gha_int GROUP BY g');
SELECT q, gha_check(q) FROM gha_shortcut_q;
SELECT q, gha_check_packed(q) FROM gha_shortcut_q;
SELECT count(*) AS queries,
       count(*) FILTER (WHERE gha_child_computes(q, '[/%*]')) AS children_compute_it
  FROM gha_shortcut_q;
-- the first argument is computed wherever PostgreSQL computes it: the device
SELECT gha_errors('SELECT g, sum(a) FILTER (WHERE a / s > 1 AND s <> 0) FROM gha_int GROUP BY g');
SELECT gha_child_computes('SELECT g, sum(a) FILTER (WHERE a / s > 1 AND s <> 0) FROM gha_int GROUP BY g', '/') AS child_divides;
DROP VIEW gha_shortcut_q;
-- an integer CASE whose condition reads a NUMERIC stays in the child
SELECT gha_check('SELECT g, sum(CASE WHEN w > 0 THEN 1 ELSE 0 END), count(CASE WHEN q IS NULL THEN 1 END) FROM gha_x GROUP BY g');
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET gpuhash.batch_rows = 100;
SELECT q, gha_check(q) FROM gha_int_q;
SELECT gha_errors('SELECT g, sum(a * a) FROM gha_int GROUP BY g');
SET work_mem = '64kB';
SET gpuhash.device_memory_limit = '1MB';
SELECT gha_check('SELECT i, sum(a * s), min(b - a), max(-s) FROM gha_int WHERE i <= 5000 GROUP BY i');
RESET max_parallel_workers_per_gather;
SET max_parallel_workers_per_gather = 0;
SELECT gha_check('SELECT i, sum(a * s), min(b - a), max(-s) FROM gha_int WHERE i <= 5000 GROUP BY i');
RESET work_mem;
RESET gpuhash.device_memory_limit;
RESET gpuhash.batch_rows;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
-- date arithmetic: date - date (days), date + integer and date - integer in
-- integer programs (a date argument too: min(d + 7)) and conditions, as
-- date_mi, date_pli and date_mii compute them: an infinite date stays
-- infinite, past the dates' range "date out of range", an infinite date
-- subtracted "cannot subtract infinite dates"
CREATE TABLE gha_dates AS
SELECT i, i % 4 AS g, date '1992-01-01' + (i * 37 % 2500) AS d1,
       CASE WHEN i % 13 = 0 THEN NULL ELSE date '1992-01-01' + (i * 53 % 2600) END AS d2,
       CASE WHEN i % 11 = 0 THEN NULL ELSE i % 61 - 30 END::int4 AS n, true AS fin
  FROM generate_series(1, 3000) i;
INSERT INTO gha_dates VALUES (3001, 0, 'infinity', '2000-01-01', 5, false),
  (3002, 1, '-infinity', 'infinity', -5, false), (3003, 2, '5874897-12-31', '4714-11-24 BC', 0, false);
ANALYZE gha_dates;
CREATE VIEW gha_d_q(q) AS VALUES
  ('SELECT g, avg(d2 - d1), sum(d2 - d1), min(d1 - d2), sum(CASE WHEN d2 - d1 > 10 THEN 1 ELSE 0 END), count(CASE WHEN d1 + 30 < d2 THEN 1 END), sum(CASE WHEN d2 - d1 >= n THEN (d2 - d1)::numeric * 1.5 END) FROM gha_dates WHERE fin GROUP BY g'),
  ('SELECT g, min(d1 + n), max(d1 - n), max(d2 + 1), min(CASE WHEN n > 0 THEN d1 - n ELSE d2 END), count(CASE WHEN d1 - 1 > d2 THEN 1 END) FROM gha_dates WHERE i <> 3003 GROUP BY g'),
  ('SELECT g, min(d1 - 0), max(d2 + 0), max(CASE WHEN d1 > date ''2000-01-01'' THEN d1 ELSE d2 - 1 END) FROM gha_dates WHERE i <> 3003 OR d2 IS NOT NULL GROUP BY g');
SELECT q, gha_check(q) FROM gha_d_q;
SELECT count(*) AS queries,
       count(*) FILTER (WHERE NOT gha_child_computes(q, '[-+*]')) AS children_without_arithmetic
  FROM gha_d_q;
SELECT gha_errors('SELECT g, avg(d2 - d1) FROM gha_dates GROUP BY g');
SELECT gha_errors('SELECT g, max(d1 + 1) FROM gha_dates GROUP BY g');
SELECT gha_errors('SELECT g, min(d2 - 1) FROM gha_dates WHERE i = 3003 GROUP BY g');
SELECT gha_errors('SELECT g, sum(CASE WHEN d1 + 1 > d2 THEN 1 END) FROM gha_dates GROUP BY g');
SELECT q, gha_check_packed(q) FROM gha_d_q;
-- extract(year from a date or timestamp) in NUMERIC programs: every day
-- from 1800 to 2200 and days around the calendar's edges (BC years, leap
-- days, the first and last dates and timestamps, infinities, which the
-- host computes), one group a value, against extract's own
CREATE TABLE gha_years AS
SELECT row_number() OVER () AS i, d,
       CASE WHEN d < '294276-12-31' THEN d::timestamp + (row_number() OVER () % 86400) * interval '1 second' END AS ts
  FROM (SELECT date '1800-01-01' + k AS d FROM generate_series(0, 146097) k
        UNION ALL
        SELECT v::date FROM (VALUES ('4714-11-24 BC'), ('0001-12-31 BC'), ('0001-01-01'), ('0005-02-29 BC'),
                                    ('1900-02-28'), ('1900-03-01'), ('2000-02-29'), ('5874897-12-31'),
                                    ('infinity'), ('-infinity')) x(v)) y;
INSERT INTO gha_years VALUES (200001, NULL, '294276-12-31 23:59:59.999999'),
  (200002, NULL, '4714-11-24 00:00:00 BC'), (200003, NULL, '1999-12-31 23:59:59.999999'),
  (200004, NULL, '0001-12-31 23:59:59.999999 BC'), (200005, NULL, 'infinity'), (200006, NULL, '-infinity');
UPDATE gha_years SET ts = 'infinity' WHERE d = 'infinity';
ANALYZE gha_years;
CREATE VIEW gha_y_q(q) AS VALUES
  ('SELECT i, sum(extract(year from d)), min(extract(year from ts)), max(extract(year from d) * 2 - 1) FROM gha_years GROUP BY i'),
  ('SELECT extract(year from d) AS y, count(*), sum(CASE WHEN extract(year from d) = 1996 THEN 1.5 WHEN extract(year from ts) < 1900 THEN -1 END) FROM gha_years GROUP BY 1'),
  ('SELECT sum(extract(YEAR from d + 365)) FROM gha_years WHERE d < ''5874896-01-01''');
SELECT q, gha_check(q) FROM gha_y_q;
SET gpuhash.force_agg = on;
SELECT count(*) AS queries,
       count(*) FILTER (WHERE (SELECT count(*) FROM gha_verbose(q) l
                                WHERE l ~ 'Device Expressions: .*EXTRACT') = 1) AS with_device_extract
  FROM gha_y_q;
RESET gpuhash.force_agg;
-- float arithmetic: a float4 or float8 aggregate argument of +, -, *, /
-- and unary - over float columns, integer columns cast to a float type and
-- constants is a float program on the device, each op in its result
-- type's precision with float.h's checks: value by value over pairs of
-- edge values (gha_fok: where PostgreSQL computes the op without an
-- error), one group a pair, so each min and max is one value, compared as
-- text; PostgreSQL's overflow, underflow and division-by-zero errors
CREATE FUNCTION gha_fok(a float8, b float8, op text) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE r float8;
BEGIN
  r := CASE op WHEN '+' THEN a + b WHEN '-' THEN a - b WHEN '*' THEN a * b ELSE a / b END;
  RETURN true;
EXCEPTION WHEN OTHERS THEN RETURN false;
END $$;
CREATE FUNCTION gha_f4ok(a float4, b float4, op text) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE r float4;
BEGIN
  r := CASE op WHEN '+' THEN a + b WHEN '-' THEN a - b WHEN '*' THEN a * b ELSE a / b END;
  RETURN true;
EXCEPTION WHEN OTHERS THEN RETURN false;
END $$;
CREATE TABLE gha_fpair AS
SELECT row_number() OVER () AS i, a.v AS a, b.v AS b, a.v::float4 AS a4, b.v::float4 AS b4,
       (row_number() OVER () * 7919 % 40 - 20)::int4 AS n
  FROM (VALUES (0::float8), ('-0'), (1), (-1), (0.1), (3.5), (1e30), (-3e38), (1e-30), (1e-40),
               ('NaN'), ('Infinity'), ('-Infinity'), (NULL)) a(v),
       (VALUES (0::float8), (2), (-0.5), (1e10), (1e-10), (3e-39), ('NaN'), ('Infinity'), (NULL),
               (7e37)) b(v);
INSERT INTO gha_fpair VALUES (1001, 1e308, 1e308, 3e38, 3e38, 16777217),
  (1002, 5e-324, -5e-324, 1e-45, -1e-45, -2147483648), (1003, 1e-300, 1e-300, 1e-30, 1e-30, 2147483647);
CREATE TABLE gha_fint AS
SELECT i, v AS b FROM (VALUES (1, 9007199254740993::int8), (2, -9223372036854775808), (3, 16777217),
                              (4, 9223372036854775807), (5, NULL), (6, 123456789012345678)) x(i, v);
ALTER TABLE gha_fpair ADD COLUMN ok8 text, ADD COLUMN ok4 text, ADD COLUMN ok48 text;
UPDATE gha_fpair SET
  ok8 = concat(CASE WHEN gha_fok(a, b, '+') THEN '+' END, CASE WHEN gha_fok(a, b, '-') THEN '-' END,
               CASE WHEN gha_fok(a, b, '*') THEN '*' END, CASE WHEN gha_fok(a, b, '/') THEN '/' END),
  ok4 = concat(CASE WHEN gha_f4ok(a4, b4, '+') THEN '+' END, CASE WHEN gha_f4ok(a4, b4, '-') THEN '-' END,
               CASE WHEN gha_f4ok(a4, b4, '*') THEN '*' END, CASE WHEN gha_f4ok(a4, b4, '/') THEN '/' END),
  ok48 = concat(CASE WHEN gha_fok(a4, b, '*') THEN '*' END, CASE WHEN gha_fok(a, b4, '/') THEN '/' END);
ANALYZE gha_fpair;
SELECT count(*) AS pairs, count(*) FILTER (WHERE ok8 <> '+-*/') AS float8_errors,
       count(*) FILTER (WHERE ok4 <> '+-*/') AS float4_errors
  FROM gha_fpair;
CREATE VIEW gha_f_q(q) AS VALUES
  ('SELECT i, min(a + b), max(a - b), min(-a) FROM gha_fpair WHERE ok8 ~ ''\+'' AND ok8 ~ ''-'' GROUP BY i'),
  ('SELECT i, min(a * b), max(a * b) FROM gha_fpair WHERE ok8 ~ ''\*'' GROUP BY i'),
  ('SELECT i, min(a / b), max(-(a / b)) FROM gha_fpair WHERE ok8 ~ ''/'' GROUP BY i'),
  ('SELECT i, min(a4 + b4), max(a4 - b4), min(-a4) FROM gha_fpair WHERE ok4 ~ ''\+'' AND ok4 ~ ''-'' GROUP BY i'),
  ('SELECT i, min(a4 * b4), max(a4 / b4) FROM gha_fpair WHERE ok4 ~ ''\*'' AND ok4 ~ ''/'' GROUP BY i'),
  ('SELECT i, min(a4 * b), max(a / b4) FROM gha_fpair WHERE ok48 = ''*/'' GROUP BY i'),
  ('SELECT i, min(n::float8 * 0.1), max(n::float4 / 3), min(n::float8 - 1e-17), max(n * 1.5::float8) FROM gha_fpair GROUP BY i'),
  ('SELECT i, min(b::float8), max(b::float4 * 1), min(b::float8 + 1) FROM gha_fint GROUP BY i'),
  ('SELECT n % 3 AS k, sum(n * 0.25::float8), avg(n::float8 - 0.5), count(a * 0), sum(n::float4 * 2) FROM gha_fpair WHERE i <= 1000 GROUP BY 1');
SELECT q, gha_check(q) FROM gha_f_q;
SELECT count(*) AS queries,
       count(*) FILTER (WHERE NOT gha_child_computes(q, '[-+*/]')) AS children_without_arithmetic
  FROM gha_f_q;
-- float comparisons in conditions (< <= = <> >= > and IS NULL of float4
-- and float8, each other and constants), compared through an order key
-- that is PostgreSQL's: -0 = 0, NaN = NaN and above Infinity
CREATE VIEW gha_fc_q(q) AS VALUES
  ('SELECT i, count(CASE WHEN a < b THEN 1 END), count(CASE WHEN a <= b THEN 1 END), count(CASE WHEN a = b THEN 1 END), count(CASE WHEN a <> b THEN 1 END), count(CASE WHEN a >= b THEN 1 END), count(CASE WHEN a > b THEN 1 END) FROM gha_fpair GROUP BY i'),
  ('SELECT i, count(CASE WHEN a4 < b THEN 1 END), count(CASE WHEN a4 = b4 THEN 1 END), count(CASE WHEN a > 0.5 THEN 1 END), count(CASE WHEN a = ''NaN'' THEN 1 END), count(CASE WHEN b = ''-0'' THEN 1 END), count(CASE WHEN a4 IS NULL OR b > ''Infinity'' THEN 1 END) FROM gha_fpair GROUP BY i'),
  ('SELECT n % 4 AS k, sum(CASE WHEN a > 1 AND b < 1e20 THEN n::numeric * 1.5 WHEN a IS NULL THEN -1 END), sum(CASE WHEN a4 >= -1 THEN n ELSE 0 END) FROM gha_fpair GROUP BY 1');
SELECT q, gha_check(q) FROM gha_fc_q;
SELECT q, gha_check_packed(q) FROM gha_fc_q;
SELECT count(*) AS queries,
       count(*) FILTER (WHERE NOT gha_child_computes(q, '[<>=]')) AS children_without_comparisons
  FROM gha_fc_q;
SELECT gha_errors('SELECT i, sum(a * b) FROM gha_fpair GROUP BY i');
SELECT gha_errors('SELECT sum(a + a) FROM gha_fpair WHERE i = 1001');
SELECT gha_errors('SELECT sum(a * b) FROM gha_fpair WHERE i = 1003');
SELECT gha_errors('SELECT max(a / b) FROM gha_fpair WHERE b = 0');
SELECT gha_errors('SELECT min(a4 * 10::float4) FROM gha_fpair WHERE i = 1001');
SELECT gha_errors('SELECT min(a4 * b4) FROM gha_fpair WHERE i = 1002');
SELECT q, gha_check_packed(q) FROM gha_f_q;
-- a FILTER's CASE on the device (gha_filter_q above); the filtered argument
-- is computed only where the filter is true
SET gpuhash.force_agg = on;
SELECT l FROM gha_verbose('SELECT g, count(*) FILTER (WHERE a4 > 5), sum(n2) FILTER (WHERE n2 > 10) FROM gha_t GROUP BY g') l
 WHERE l ~ 'Device Expressions';
RESET gpuhash.force_agg;
-- the filtered argument is computed only where the filter is true
SELECT gha_errors('SELECT g, sum(1 / (a4 - 5)) FILTER (WHERE a4 <> 5) FROM gha_t GROUP BY g');
SELECT gha_errors('SELECT g, sum(a4 * 200000) FILTER (WHERE a4 < 10000) FROM gha_t GROUP BY g');
SELECT gha_errors('SELECT g, sum(a4 * 200000) FILTER (WHERE a4 < 11000) FROM gha_t GROUP BY g');
-- force_parallel_mode = regress: every plan that may run in a worker does
-- (GpuHashAgg itself stays in the leader: it reads its input whole); the
-- device expressions of each kind, against native under the same setting
SET force_parallel_mode = regress;
SELECT q, gha_check(q) FROM (
  SELECT q FROM gha_x_q UNION ALL SELECT q FROM gha_cond_q UNION ALL SELECT q FROM gha_int_q
  UNION ALL SELECT q FROM gha_d_q UNION ALL SELECT q FROM gha_f_q UNION ALL SELECT q FROM gha_fc_q) v;
RESET force_parallel_mode;
-- more expression inputs than the engine's columns (34 inputs for 17
-- products), and an expression of more operations than a program takes (39
-- additions): the child computes such arguments, with no device
-- expression, and the rows stay native's
DO $$ BEGIN
  EXECUTE 'CREATE TABLE gha_wide AS SELECT i % 3 AS g, ' ||
    (SELECT string_agg(format('(i + %s)::numeric / 4 AS c%s', n, n), ', ')
       FROM generate_series(1, 34) n) ||
    ' FROM generate_series(1, 1000) i';
END $$;
CREATE VIEW gha_wide_q(q) AS
SELECT 'SELECT g, ' || string_agg(format('sum(c%s * c%s)', 2 * n - 1, 2 * n), ', ') ||
       ' FROM gha_wide GROUP BY g'
  FROM generate_series(1, 17) n
UNION ALL
SELECT 'SELECT g, sum(' || string_agg(format('c%s', 1 + n % 34), ' + ') || ') FROM gha_wide GROUP BY g'
  FROM generate_series(1, 40) n;
SELECT gha_check(q) FROM gha_wide_q;
SET gpuhash.force_agg = on;
SELECT count(*) FILTER (WHERE l ~ 'Device Expressions') AS device_expression_lines
  FROM gha_wide_q, gha_verbose(q) l;
RESET gpuhash.force_agg;
-- numeric overflow: PostgreSQL's error on both sides (the device hands
-- such rows to the host, which calls numeric_mul)
SELECT gha_errors('SELECT g, sum(w * 1e131000 * 1e131000) FROM gha_x WHERE i % 73 = 0 GROUP BY g');

-- the plan, and what EXPLAIN ANALYZE adds
SET gpuhash.force_agg = on;
CREATE FUNCTION gha_plan(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF, VERBOSE) ' || query LOOP
    IF l !~ '^\s+Device: (cpu|gpu)$' THEN RETURN NEXT l; END IF;
  END LOOP;
END $$;
SELECT gha_plan('SELECT g + 1, sum(a4) FROM gha_t GROUP BY g HAVING count(*) > 1 ORDER BY 1');
-- device expressions: named in VERBOSE; the child returns their inputs
SELECT gha_plan('SELECT g, sum(ep * (1 - disc)), avg(ep * (1 - disc)), max(-q) FROM gha_x GROUP BY g');
SELECT count(*) AS device_lines FROM gh_plan_lines('SELECT g, sum(a4) FROM gha_t GROUP BY g', 'gpuhash') l
 WHERE l ~ '^\s+Device: (cpu|gpu)$';
SELECT count(*) FILTER (WHERE l ~ '^\s+Batches: \d+  Memory Usage: \d+kB') AS memory,
       count(*) FILTER (WHERE l ~ '^\s+Batches: 1  ') AS batches,
       count(*) FILTER (WHERE l ~ 'GpuHashAgg\) \(actual rows=7 ') AS groups,
       -- the device evaluates the scan's qual (device_quals): every row comes in
       count(*) FILTER (WHERE l ~ '^\s+Device Filter: \(i > 5\)$') AS device_filter,
       max(substring(l FROM '^\s+Rows In: (\d+)  ')::bigint) = (SELECT count(*) FROM gha_t) AS rows_in_ok,
       max(substring(l FROM '^\s+Rows Removed by Device Filter: (\d+)$')::bigint) =
         (SELECT count(*) FROM gha_t WHERE NOT i > 5) AS removed_ok,
       max(substring(l FROM '^\s+Rows In: \d+  Groups: (\d+)')::bigint) = (SELECT count(DISTINCT g) FROM gha_t WHERE i > 5) AS groups_ok
  FROM gha_analyze('SELECT g, sum(a4) FROM gha_t WHERE i > 5 GROUP BY g') l;
-- counted over the groups the node returned: those of no row that passes
-- too (the node's qual drops them after), and with a LIMIT that stops the
-- node early, not shown
SELECT max(substring(l FROM '^\s+Rows Removed by Device Filter: (\d+)$')::bigint) =
         (SELECT count(*) FROM gha_t WHERE NOT (a4 > 19995 OR g = 3)) AS removed_ok
  FROM gha_analyze('SELECT g, sum(a4) FROM gha_t WHERE a4 > 19995 OR g = 3 GROUP BY g') l;
SELECT count(*) FILTER (WHERE l ~ 'Rows Removed by Device Filter') AS removed_lines
  FROM gha_analyze('SELECT g, sum(a4) FROM gha_t WHERE i > 5 GROUP BY g LIMIT 1') l;
-- with gpuhash.agg_device_filter off the scan filters: the rows that pass come in
SET gpuhash.agg_device_filter = off;
SELECT count(*) FILTER (WHERE l ~ 'Device Filter') AS device_filter,
       count(*) FILTER (WHERE l ~ '^\s+Filter: \(i > 5\)$') AS scan_filter,
       max(substring(l FROM '^\s+Rows In: (\d+)  ')::bigint) = (SELECT count(*) FROM gha_t WHERE i > 5) AS rows_in_ok
  FROM gha_analyze('SELECT g, sum(a4) FROM gha_t WHERE i > 5 GROUP BY g') l;
RESET gpuhash.agg_device_filter;
-- the device's time under EXPLAIN (ANALYZE) with TIMING, and not with
-- TIMING OFF, as PostgreSQL's own times
SELECT count(*) AS device_time
  FROM gh_plan_lines('SELECT g, sum(a4) FROM gha_t GROUP BY g', 'gpuhash') l WHERE l ~ 'Device Time';
DO $$
DECLARE l text; timed int := 0; untimed int := 0;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, SUMMARY OFF) SELECT g, sum(a4) FROM gha_t GROUP BY g' LOOP
    IF l ~ '^\s+Rows In: \d+  Groups: \d+  Device Time: \d+\.\d{3} ms$' THEN timed := timed + 1; END IF;
  END LOOP;
  FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT g, sum(a4) FROM gha_t GROUP BY g' LOOP
    IF l ~ 'Time:' THEN untimed := untimed + 1; END IF;
  END LOOP;
  RAISE NOTICE 'device time lines with TIMING: %, with TIMING OFF: %', timed, untimed;
END $$;
-- without force_agg the cost model keeps a table this small PostgreSQL's
RESET gpuhash.force_agg;
SELECT count(*) AS gpuhashagg FROM gh_plan_lines('SELECT g, sum(a4) FROM gha_t GROUP BY g', 'gpuhash') l
 WHERE l ~ 'GpuHashAgg';

-- GROUP BY keys the device computes: integer and date arithmetic over
-- columns and constants, and a searched CASE of them (compile_key), grouped
-- by the value the device computes; and extract(year ...) of a date or a
-- timestamp (a numeric of scale 0 as extract gives it, no year 0, Infinity
-- and -Infinity for the infinities).  NULL results make their group, an
-- infinite date stays infinite, and the errors are PostgreSQL's
CREATE TABLE gha_kx AS
SELECT i, (i % 7)::int2 AS s, CASE WHEN i % 11 = 0 THEN NULL ELSE i % 5 END AS n,
       (i % 13)::int8 * 1000000000000 AS l, date '2020-01-01' + (i % 40) AS d,
       CASE WHEN i % 17 = 0 THEN NULL ELSE date '1999-12-25' + (i % 9) END AS dn,
       timestamp '1999-12-31 22:00' + i * interval '7 hours 13 minutes' AS ts
  FROM generate_series(1, 5000) i;
INSERT INTO gha_kx VALUES (NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  (5001, -32768, -2147483648, -9223372036854775807, 'infinity', '-infinity', 'infinity'),
  (5002, 32767, 2147483647, 9223372036854775807, '-infinity', 'infinity', '-infinity'),
  (5003, NULL, NULL, NULL, date '0001-01-01', date '0001-01-01' - 1,
   timestamp '0001-01-01 00:00' - interval '1 microsecond'),
  (5004, NULL, NULL, NULL, date '4713-01-01 BC', date '5874897-12-31', timestamp '4713-01-01 00:00 BC'),
  (5005, NULL, NULL, NULL, date '1969-12-31', date '2000-02-29', timestamp '294276-12-31 23:59:59');
CREATE TABLE gha_kx_q (q text);
INSERT INTO gha_kx_q VALUES
  ('SELECT s + 1 AS k, count(*), sum(i) FROM gha_kx GROUP BY s + 1'),
  ('SELECT n * 2 AS k, count(*), min(i), max(s) FROM gha_kx WHERE coalesce(i, 0) < 5001 GROUP BY n * 2'),
  ('SELECT l / 1000000000000 + i AS k, count(*) FROM gha_kx WHERE i < 5001 GROUP BY 1'),
  ('SELECT l - i AS k, count(*), sum(n) FROM gha_kx WHERE i < 5001 GROUP BY l - i'),
  ('SELECT d + 3 AS k, s, count(*) FROM gha_kx WHERE coalesce(i, 0) < 5003 GROUP BY d + 3, s'),
  ('SELECT dn - 1 AS k, count(*), max(d) FROM gha_kx WHERE coalesce(i, 0) < 5003 GROUP BY dn - 1'),
  ('SELECT d - date ''2020-01-01'' AS k, count(*) FROM gha_kx WHERE i < 5001 GROUP BY 1'),
  ('SELECT CASE WHEN s > 3 THEN s * 10 WHEN n IS NULL THEN -1 ELSE -s END AS k, count(*) FROM gha_kx WHERE coalesce(i, 0) < 5001 GROUP BY 1'),
  ('SELECT (s + 1) * 2 AS k2, count(*) FROM gha_kx GROUP BY s + 1 HAVING s + 1 > 2'),
  ('SELECT n::int8 + l AS k, s::int4 - 1 AS k2, count(*) FROM gha_kx WHERE coalesce(i, 0) < 5001 GROUP BY 1, 2'),
  ('SELECT extract(year FROM d) AS y, count(*), sum(i) FROM gha_kx GROUP BY 1'),
  ('SELECT extract(year FROM dn) AS y, s, count(*), min(d) FROM gha_kx GROUP BY 1, 2'),
  ('SELECT extract(YEAR FROM ts) AS y, extract(year FROM d) AS y2, count(*) FROM gha_kx GROUP BY 1, 2'),
  ('SELECT extract(year FROM d + 400) AS y, count(*) FROM gha_kx WHERE coalesce(i, 0) < 5001 GROUP BY 1'),
  ('SELECT extract(year FROM d) * 2 AS y2, count(*) FROM gha_kx GROUP BY extract(year FROM d) HAVING extract(year FROM d) > 2000'),
  ('SELECT extract(year FROM ts::timestamptz) AS y, count(*) FROM gha_kx WHERE coalesce(i, 0) < 5001 GROUP BY 1');
SELECT q, gha_check(q) FROM gha_kx_q;
-- which keys the device computes: then the child returns no sum,
-- difference, product or extract, and EXPLAIN (VERBOSE) names them (a
-- timestamp with time zone's year depends on the session's zone: the
-- child computes it)
SET gpuhash.force_agg = on;
SELECT q,
       (SELECT count(*) FROM gha_verbose(q) l WHERE l ~ '^\s{6,}Output: .*([-+*/]|EXTRACT)') = 0 AS child_computes_none,
       (SELECT string_agg(substring(l FROM 'Device Expressions: (.*)$'), '') FROM gha_verbose(q) l
         WHERE l ~ '^\s+Device Expressions: ') AS device_expressions
  FROM gha_kx_q;
RESET gpuhash.force_agg;
-- read by two workers in packets of 100 rows
SELECT q, gha_check_packed(q) FROM gha_kx_q;
-- past the budget, the groups spill and later passes compute the keys again
SET work_mem = '64kB';
SET gpuhash.device_memory_limit = '1MB';
SELECT gha_check('SELECT l - i AS k, extract(year FROM ts) AS y, count(*), sum(s) FROM gha_kx WHERE i < 5001 GROUP BY 1, 2');
SELECT gha_check_packed('SELECT l - i AS k, n * 3 AS k2, extract(year FROM d) AS y, count(*) FROM gha_kx WHERE i < 5001 GROUP BY 1, 2, 3');
RESET work_mem;
RESET gpuhash.device_memory_limit;
-- PostgreSQL's errors: out of range, and infinite dates subtracted
SELECT gha_errors('SELECT s * 2::int2 AS k, count(*) FROM gha_kx GROUP BY 1');
SELECT gha_errors('SELECT n + 1 AS k, count(*) FROM gha_kx GROUP BY 1');
SELECT gha_errors('SELECT l * 2 AS k, count(*) FROM gha_kx GROUP BY 1');
SELECT gha_errors('SELECT d - dn AS k, count(*) FROM gha_kx GROUP BY 1');
SELECT gha_errors('SELECT dn + 2147483647 AS k, count(*) FROM gha_kx GROUP BY 1');
DROP TABLE gha_kx, gha_kx_q;

-- min and max of text: the device groups and counts, the host keeps each
-- group's extremes, compared in the argument's collation as text_smaller
-- and text_larger compare.  Values whose order by bytes is not their order
-- in "und-x-icu" (an ICU root collation), NULLs, the empty string,
-- compressed and out-of-line values, text keys, up to 20000 groups.
CREATE TABLE gha_tx AS
SELECT i, i % 50 AS g, (i % 7)::int2 AS s,
       CASE WHEN i % 9 = 0 THEN NULL
            ELSE (ARRAY['apple', 'Apple', 'äpfel', 'Zebra', 'zebra', '', ' ', 'b', 'B', 'ß'])[(i / 3) % 10 + 1]
                 || CASE WHEN i % 4 = 0 THEN '' ELSE (i % 23)::text END END AS t,
       CASE WHEN i % 1000 = 0 THEN repeat('x', 3000) || i
            WHEN i % 2000 = 1 THEN (SELECT string_agg(md5((i * j)::text), '') FROM generate_series(1, 150) j)
            ELSE md5(i::text) END AS big
  FROM generate_series(1, 20000) i;
CREATE TABLE gha_txp (id int PRIMARY KEY, v int, t text);
INSERT INTO gha_txp SELECT i, i % 4, 'p' || (i % 37) FROM generate_series(1, 3000) i;
CREATE TABLE gha_tx_q (q text);
INSERT INTO gha_tx_q VALUES
  ('SELECT g, min(t), max(t), count(t) FROM gha_tx GROUP BY g'),
  ('SELECT g, min(t COLLATE "und-x-icu"), max(t COLLATE "und-x-icu"), min(t COLLATE "C") FROM gha_tx GROUP BY g'),
  ('SELECT min(t), max(t), max(big) FROM gha_tx'),
  ('SELECT min(t), max(t), count(*) FROM gha_tx WHERE i < 0'),
  ('SELECT g, min(t), max(t), count(*) FROM gha_tx WHERE t IS NULL GROUP BY g'),
  ('SELECT s, t, count(*), max(big), min(big) FROM gha_tx GROUP BY s, t'),
  ('SELECT i, min(t), max(big) FROM gha_tx GROUP BY i'),
  ('SELECT g, max(t) FROM gha_tx GROUP BY g HAVING min(t) > ''B'''),
  ('SELECT g, min(t::varchar(3)), max(upper(t)) FROM gha_tx GROUP BY g'),
  ('SELECT g, min(t) FILTER (WHERE i % 2 = 0), max(t) FILTER (WHERE s = 3), sum(s) FROM gha_tx GROUP BY g');
SELECT q, gha_check(q) FROM gha_tx_q;
SELECT q, gha_check_packed(q) FROM gha_tx_q;
-- a carried key (a column of a grouped primary key) keeps the keys on the host
SELECT gha_check('SELECT id, v, min(t), max(t) FROM gha_txp GROUP BY id');
-- past the budget: the groups spill with their text values, and batches
-- flush early once their text copies pass a quarter of the budget
SET work_mem = '64kB';
SELECT gha_check('SELECT i, min(t), max(big) FROM gha_tx GROUP BY i');
SET gpuhash.force_agg = on;
SELECT count(*) FILTER (WHERE l ~ '^\s+Batches: ([2-9]|\d\d+)  ') AS batches_past_one,
       count(*) FILTER (WHERE l ~ '  Disk Usage: [1-9]\d*kB') AS disk_used
  FROM gha_analyze('SELECT i, min(t), max(big) FROM gha_tx GROUP BY i') l;
RESET gpuhash.force_agg;
SELECT gha_check_packed('SELECT i % 5000 AS k, min(big), max(t COLLATE "und-x-icu") FROM gha_tx GROUP BY 1');
SELECT gha_check('SELECT id, v, min(t), max(t) FROM gha_txp GROUP BY id');
RESET work_mem;
-- a nondeterministic collation (gha_ci, above): which of two equal values
-- min returns depends on the order of the rows, so PostgreSQL keeps it
SELECT gha_check('SELECT g, min(t COLLATE gha_ci) FROM gha_tx GROUP BY g', 0);
-- the quals of the table GpuHashAgg reads, evaluated on the device
-- (device_quals): the scan passes every row, each call reads its argument
-- where the quals hold, and a group of no row that passes them is dropped
-- before HAVING.  Dates against timestamp constants (TPC-H Q1's
-- d <= date - interval), at midnight or not, on either side; infinite
-- dates; NULLs; numeric, integer and date quals; AND, OR, NOT, IS NULL;
-- with FILTER; a group (99) and a whole input of rows that do not pass; a
-- correlated subquery's parameter in the quals (the input read again)
CREATE TABLE gha_df AS
SELECT i % 7 AS g, 'k' || (i % 4) AS k,
       CASE WHEN i % 13 = 0 THEN NULL ELSE i END::int4 AS a,
       i::int8 * 1000003 AS b,
       CASE WHEN i % 17 = 0 THEN NULL ELSE i * 1.25 END::numeric(12,2) AS n,
       i / 3.0::float8 AS f,
       CASE WHEN i % 19 = 0 THEN NULL ELSE date '2020-01-01' + i % 600 END AS d
  FROM generate_series(1, 6000) i;
INSERT INTO gha_df VALUES
  (99, 'x', -1, 1, -5, 0, date '1990-01-01'), (99, 'x', NULL, 2, NULL, 0, NULL),
  (8, 'inf', 1, 3, 1, 0, 'infinity'), (9, 'ninf', 1, 4, 1, 0, '-infinity');
ANALYZE gha_df;
CREATE VIEW gha_df_q(q) AS VALUES
  ('SELECT g, count(*), sum(n), avg(a), max(d), min(b) FROM gha_df WHERE d <= date ''2021-06-01'' - interval ''90'' day GROUP BY g'),
  ('SELECT g, count(*), sum(n), min(d) FROM gha_df WHERE d < timestamp ''2021-03-03 12:00'' GROUP BY g'),
  ('SELECT g, count(*), max(d) FROM gha_df WHERE timestamp ''2021-03-03 12:00'' <= d GROUP BY g'),
  ('SELECT g, count(*), max(d) FROM gha_df WHERE d > timestamp ''2020-12-31 23:59:59.999999'' AND d <> timestamp ''2021-01-03'' GROUP BY g'),
  ('SELECT g, count(*), sum(a) FROM gha_df WHERE d = timestamp ''2021-01-05'' OR d >= timestamp ''2021-08-20 06:00'' GROUP BY g'),
  ('SELECT g, count(*), sum(n), count(n) FROM gha_df WHERE n BETWEEN 100 AND 5000 AND a <> 7 GROUP BY g'),
  ('SELECT g, count(*), sum(b), max(a) FROM gha_df WHERE a IS NULL OR NOT (a > 5000 AND b < 4000000000) GROUP BY g'),
  ('SELECT k, count(*), sum(a) FROM gha_df WHERE a > 10 GROUP BY k'),
  ('SELECT extract(year FROM d), count(*), sum(n) FROM gha_df WHERE d >= date ''2020-06-01'' GROUP BY 1'),
  ('SELECT g, count(*) FROM gha_df WHERE a > 0 GROUP BY g HAVING 100 / count(*) > 0'),
  ('SELECT count(*), sum(n), max(d), avg(a) FROM gha_df WHERE a > 1000000'),
  ('SELECT g, count(*) FROM gha_df WHERE a > 1000000 GROUP BY g'),
  ('SELECT g, sum(n) FILTER (WHERE a > 100), count(*) FILTER (WHERE d IS NULL) FROM gha_df WHERE n > 10 GROUP BY g'),
  ('SELECT g, sum(100 / (a - 5)), max(d + 1) FROM gha_df WHERE a <> 5 GROUP BY g'),
  ('SELECT g, sum(n * (1 - 0.05) * (1 + 0.08)), count(*) FROM gha_df WHERE d <= date ''2021-01-01'' AND n > 0 GROUP BY g'),
  ('SELECT x, (SELECT sum(n) FROM gha_df WHERE n > x AND g = 1) FROM generate_series(0::numeric, 8000, 1000) x');
SELECT q, gha_check(q) FROM gha_df_q;
-- past the budget: the groups spill with their hidden counts, and a
-- group of no row that passes is dropped in every pass
SET work_mem = '64kB';
SET gpuhash.batch_rows = 256;
SET gpuhash.device_memory_limit = '1MB';
SELECT gha_check('SELECT a, count(*), sum(n), max(d) FROM gha_df WHERE d <= timestamp ''2021-01-01 06:00'' GROUP BY a');
SELECT gha_check_packed('SELECT a, k, count(*), sum(n) FROM gha_df WHERE n > 5 OR d IS NULL GROUP BY a, k');
SET gpuhash.force_agg = on;
SELECT count(*) FILTER (WHERE l ~ '^\s+Batches: ([2-9]|\d\d+)  ') AS batches_past_one,
       count(*) FILTER (WHERE l ~ '^\s+Device Filter: ') AS device_filter
  FROM gha_analyze('SELECT a, count(*), sum(n), max(d) FROM gha_df WHERE d <= timestamp ''2021-01-01 06:00'' GROUP BY a') l;
SELECT count(*) AS device_filter
  FROM gha_verbose('SELECT a, k, count(*), sum(n) FROM gha_df WHERE n > 5 OR d IS NULL GROUP BY a, k') l
 WHERE l ~ '^\s+Device Filter: ';
RESET gpuhash.force_agg;
RESET gpuhash.device_memory_limit;
RESET gpuhash.batch_rows;
RESET work_mem;
-- an integer argument whose condition computes a NUMERIC (a year, a
-- product) is the child's: the device computes such conditions only in a
-- NUMERIC program (it raised "malformed device expression" before)
SELECT gha_check('SELECT g, count(CASE WHEN extract(year FROM d) > 2020 THEN 1 END), sum(CASE WHEN n * 2 > 10 THEN 1 ELSE 0 END) FROM gha_df GROUP BY g');
SELECT q, gha_check_packed(q) FROM gha_df_q;
SET gpuhash.force_agg = on;
SELECT count(*) AS queries,
       count(*) FILTER (WHERE (SELECT count(*) FROM gha_verbose(q) l WHERE l ~ '^\s+Device Filter: ') = 1 AND
                              (SELECT count(*) FROM gha_verbose(q) l WHERE l ~ '^\s{6,}Filter: ') = 0) AS filtered_on_device
  FROM gha_df_q;
SELECT l FROM gha_verbose('SELECT g, count(*), sum(n) FROM gha_df WHERE d <= date ''2021-06-01'' - interval ''90'' day GROUP BY g') l
 WHERE l ~ 'Filter';
RESET gpuhash.force_agg;
-- and where the scan keeps them: a volatile qual, one that may raise
-- (PostgreSQL orders quals by cost, so its error may not be PostgreSQL's),
-- one the device does not compute, a computed key, arguments the device
-- does not compute with the quals (float, text; an integer under a numeric
-- qual), an infinite timestamp, and the setting off
CREATE VIEW gha_df_kept(q) AS VALUES
  ('SELECT g, count(*) FROM gha_df WHERE a > 10 AND random() < 2 GROUP BY g'),
  ('SELECT g, count(*) FROM gha_df WHERE a / 2 > 10 GROUP BY g'),
  ('SELECT g, count(*) FROM gha_df WHERE k = ''k1'' GROUP BY g'),
  ('SELECT g + 1, count(*) FROM gha_df WHERE a > 10 GROUP BY g + 1'),
  ('SELECT g, max(f) FROM gha_df WHERE a > 10 GROUP BY g'),
  ('SELECT g, max(k) FROM gha_df WHERE a > 10 GROUP BY g'),
  ('SELECT g, sum(a) FROM gha_df WHERE n > 10 GROUP BY g'),
  ('SELECT g, count(*) FROM gha_df WHERE d >= timestamp ''infinity'' - interval ''1 day'' GROUP BY g');
SELECT q, gha_check(q) FROM gha_df_kept;
SET gpuhash.force_agg = on;
SELECT count(*) AS queries,
       count(*) FILTER (WHERE (SELECT count(*) FROM gha_verbose(q) l WHERE l ~ 'Device Filter') = 0 AND
                              (SELECT count(*) FROM gha_verbose(q) l WHERE l ~ '^\s{6,}Filter: ') = 1) AS filtered_by_scan
  FROM gha_df_kept;
SET gpuhash.agg_device_filter = off;
SELECT count(*) AS device_filters
  FROM gha_verbose('SELECT g, count(*), sum(n) FROM gha_df WHERE a > 10 GROUP BY g') l WHERE l ~ 'Device Filter';
RESET gpuhash.agg_device_filter;
-- row-level security: the policy's quals are the scan's, and so the user's
CREATE ROLE gha_rls_user;
GRANT SELECT ON gha_df TO gha_rls_user;
ALTER TABLE gha_df ENABLE ROW LEVEL SECURITY;
CREATE POLICY gha_df_pos ON gha_df TO gha_rls_user USING (a > 100);
SET ROLE gha_rls_user;
SELECT count(*) AS device_filters
  FROM gha_verbose('SELECT g, count(*), sum(n) FROM gha_df WHERE n > 10 GROUP BY g') l WHERE l ~ 'Device Filter';
SELECT g, count(*), sum(n) FROM gha_df WHERE n > 10 GROUP BY g ORDER BY g;
RESET gpuhash.force_agg;
SELECT g, count(*), sum(n) FROM gha_df WHERE n > 10 GROUP BY g ORDER BY g;
RESET ROLE;
DROP POLICY gha_df_pos ON gha_df;
ALTER TABLE gha_df DISABLE ROW LEVEL SECURITY;
REVOKE SELECT ON gha_df FROM gha_rls_user;
DROP ROLE gha_rls_user;
-- random queries (setseed: the same ones every run): quals, aggregates,
-- FILTERs and keys drawn from what the device computes and what it does
-- not, against native, serial and packed
CREATE FUNCTION gha_pick(VARIADIC xs text[]) RETURNS text LANGUAGE sql AS
  'SELECT xs[1 + floor(random() * array_length(xs, 1))::int]';
CREATE FUNCTION gha_rcond(depth int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r float8 := random(); cmp text := gha_pick('<', '<=', '=', '<>', '>=', '>');
BEGIN
  IF depth < 2 AND r < 0.2 THEN
    RETURN format('(%s %s %s)', gha_rcond(depth + 1), gha_pick('AND', 'OR'), gha_rcond(depth + 1));
  ELSIF depth < 2 AND r < 0.27 THEN
    RETURN format('NOT (%s)', gha_rcond(depth + 1));
  ELSIF r < 0.45 THEN
    RETURN format('%s %s %s', gha_pick('a', 'g', 'a + 1', 'a * 2', 'a - g', 'b'), cmp,
                  gha_pick('0', '-1', '100', '4000', '-4000'));
  ELSIF r < 0.6 THEN
    RETURN format('%s %s %s', gha_pick('n', 'n * 2', 'n * (1 - 0.05)', 'n + a'), cmp,
                  gha_pick('10', '50.5', '0', '99.99'));
  ELSIF r < 0.7 THEN
    RETURN format('%s IS %sNULL', gha_pick('a', 'n', 'd'), gha_pick('', 'NOT '));
  ELSIF r < 0.9 THEN
    RETURN format(gha_pick('d %1$s %2$s', '%2$s %1$s d'), cmp,
                  gha_pick('timestamp ''2020-06-01''', 'timestamp ''2020-06-01 12:30''',
                           'date ''2021-01-01'' - interval ''90'' day'));
  END IF;
  RETURN format('d %s date %L', cmp, gha_pick('2020-03-01', '2021-05-05'));
END $$;
CREATE FUNCTION gha_rquery() RETURNS text LANGUAGE plpgsql AS $$
DECLARE keys text := gha_pick('', '', 'g', 'k', 'g, k', 'extract(year FROM d)');
        aggs text := '';
BEGIN
  FOR j IN 1 .. 1 + floor(random() * 3)::int LOOP
    aggs := aggs || CASE WHEN j > 1 THEN ', ' ELSE '' END ||
      gha_pick('count(*)', 'count(a)', 'sum(a)', 'avg(n)', 'sum(n)', 'min(d)', 'max(d)', 'sum(b)',
               'max(f)', 'min(k)', 'sum(n * (1 + 0.08))', 'sum(a * 2)') ||
      CASE WHEN random() < 0.15 THEN format(' FILTER (WHERE %s)', gha_rcond(1)) ELSE '' END;
  END LOOP;
  RETURN format('SELECT %s%s FROM gha_df WHERE %s%s', keys || CASE WHEN keys <> '' THEN ', ' ELSE '' END,
                aggs, gha_rcond(0) || CASE WHEN random() < 0.3 THEN ' AND ' || gha_rcond(0) ELSE '' END,
                CASE WHEN keys <> '' THEN ' GROUP BY ' || keys ELSE '' END);
END $$;
SELECT setseed(0.25);
CREATE TABLE gha_df_r AS SELECT i, gha_rquery() AS q FROM generate_series(1, 120) i;
SET gpuhash.force_agg = on;
ALTER TABLE gha_df_r ADD COLUMN on_device bool;
UPDATE gha_df_r SET on_device = (SELECT count(*) FROM gha_verbose(q) l WHERE l ~ 'Device Filter') = 1;
RESET gpuhash.force_agg;
SELECT q, c FROM (SELECT q, gha_check(q) AS c FROM gha_df_r) x WHERE c !~ '^aggs=1 rows=\d+ diff=0$';
SELECT q, c FROM (SELECT q, gha_check_packed(q) AS c FROM gha_df_r) x WHERE c !~ '^aggs=1 rows=\d+ diff=0$';
SELECT count(*) AS queries, count(*) FILTER (WHERE on_device) AS with_device_filter FROM gha_df_r;
DROP TABLE gha_df_r;
DROP FUNCTION gha_rquery(), gha_rcond(int), gha_pick(VARIADIC text[]);
DROP VIEW gha_df_q, gha_df_kept;
DROP TABLE gha_df;
DROP TABLE gha_tx, gha_txp, gha_tx_q;
DROP TABLE gha_dec, gha_prepack, gha_t, gha_pk, gha_cust, gha_e, gha_num, gha_time, gha_int, gha_fpair, gha_fint, gha_dates, gha_years CASCADE;
DROP FUNCTION gha_fok(float8, float8, text), gha_f4ok(float4, float4, text);
DROP FUNCTION gha_child_computes(text, text), gha_check_packed(text), gha_check(text, int), gha_analyze(text), gha_errors(text), gha_plan(text);
