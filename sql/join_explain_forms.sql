-- join_explain_forms: every EXPLAIN form (VERBOSE, ANALYZE, BUFFERS, WAL,
-- SETTINGS, FORMAT TEXT/JSON/XML/YAML) works on every shape of plan gpuhash
-- makes: join types, key shapes, correlated SubPlans in keys and filters,
-- parallel plans, and UPDATE/DELETE/MERGE on partitioned targets.
SET gpuhash.force_join = on;
CREATE TABLE ef_a AS SELECT g AS a, g % 10 AS b, 't' || g AS t FROM generate_series(1, 500) g;
CREATE TABLE ef_b AS SELECT g AS a, g % 7 AS b, 't' || g AS t FROM generate_series(1, 300) g;
CREATE TABLE ef_p (a int, b int) PARTITION BY RANGE (a);
CREATE TABLE ef_p1 PARTITION OF ef_p FOR VALUES FROM (0) TO (100);
CREATE TABLE ef_p2 PARTITION OF ef_p FOR VALUES FROM (100) TO (1000);
INSERT INTO ef_p SELECT g, g FROM generate_series(1, 400) g;
CREATE TABLE ef_i (a int, b int);
CREATE TABLE ef_i1 () INHERITS (ef_i);
INSERT INTO ef_i1 SELECT g, g FROM generate_series(1, 400) g;
ANALYZE ef_a, ef_b, ef_p, ef_i, ef_i1;

-- the repros: a correlated SubPlan in a hash key and in the join filter
EXPLAIN (VERBOSE, COSTS OFF) SELECT a.b, c.b FROM ef_a a JOIN ef_b c ON a.a = (SELECT c.a);
EXPLAIN (VERBOSE, COSTS OFF)
  SELECT a.b, c.b FROM ef_a a JOIN ef_b c ON a.a = c.a AND a.b < (SELECT max(x.b) FROM ef_a x WHERE x.a = c.b);
-- and UPDATE of a partitioned target joined to a table: the row identity
-- columns (tableoid, ctid) pass through the GpuHashJoin and are shown
EXPLAIN (VERBOSE, COSTS OFF) UPDATE ef_p SET b = ef_p.b + 1 FROM ef_b WHERE ef_p.a = ef_b.a;

CREATE TABLE ef_queries (name text, q text, gpu boolean);
INSERT INTO ef_queries VALUES
  ('inner', 'SELECT * FROM ef_a JOIN ef_b USING (a)', true),
  ('left', 'SELECT * FROM ef_a LEFT JOIN ef_b ON ef_a.a = ef_b.a AND ef_b.b < ef_a.b', true),
  ('right', 'SELECT * FROM ef_a RIGHT JOIN ef_b ON ef_a.t = ef_b.t', true),
  ('full', 'SELECT * FROM ef_a FULL JOIN ef_b ON ef_a.a = ef_b.a', true),
  ('semi', 'SELECT * FROM ef_a WHERE EXISTS (SELECT 1 FROM ef_b WHERE ef_b.a = ef_a.a)', true),
  ('anti', 'SELECT * FROM ef_a WHERE NOT EXISTS (SELECT 1 FROM ef_b WHERE ef_b.a = ef_a.a)', true),
  ('two keys', 'SELECT * FROM ef_a JOIN ef_b ON ef_a.a = ef_b.a AND ef_a.b = ef_b.b', true),
  ('expression key', 'SELECT * FROM ef_a JOIN ef_b ON ef_a.a + 1 = ef_b.a * 2', true),
  ('subplan in key', 'SELECT a.b, c.b FROM ef_a a JOIN ef_b c ON a.a = (SELECT c.a)', true),
  ('subplan in filter', 'SELECT a.b FROM ef_a a JOIN ef_b c ON a.a = c.a AND a.b < (SELECT max(x.b) FROM ef_a x WHERE x.a = c.b)', true),
  ('subplan qual on the inner side', 'SELECT * FROM ef_a a JOIN ef_b b ON a.a = (SELECT 1 WHERE b.b = 1)', true),
  ('subplan qual on the outer side', 'SELECT * FROM ef_a a JOIN ef_b b ON (SELECT 1 WHERE a.b = 1) = b.a', true),
  ('subplan in target list', 'SELECT (SELECT count(*) FROM ef_a x WHERE x.b = c.b) FROM ef_a a JOIN ef_b c USING (a)', true),
  ('three-way', 'SELECT * FROM ef_a JOIN ef_b USING (a) JOIN ef_a z ON z.b = ef_b.b', true),
  ('update partitioned', 'UPDATE ef_p SET b = ef_p.b + 1 FROM ef_b WHERE ef_p.a = ef_b.a', true),
  ('delete inherited', 'DELETE FROM ef_i USING ef_b WHERE ef_i.a = ef_b.a', true),
  ('merge partitioned', 'MERGE INTO ef_p USING ef_b ON ef_p.a = ef_b.a WHEN MATCHED THEN UPDATE SET b = ef_p.b + 1', true),
  ('update plain', 'UPDATE ef_a SET b = ef_a.b + 1 FROM ef_b WHERE ef_a.a = ef_b.a', true),
  ('insert select', 'INSERT INTO ef_b SELECT ef_a.* FROM ef_a JOIN ef_b USING (a)', true);

-- each query in each form: errors and forms without the GpuHashJoin the
-- query is expected to have (inside a transaction rolled back, since
-- ANALYZE runs the DML)
CREATE FUNCTION ef_forms(parallel boolean) RETURNS TABLE (query text, form text, problem text)
LANGUAGE plpgsql AS $$
DECLARE
  q record; f text; out text; l text;
  forms text[] := ARRAY['VERBOSE, COSTS OFF', 'ANALYZE, VERBOSE, COSTS OFF, TIMING OFF',
                        'ANALYZE, VERBOSE, BUFFERS, WAL, SETTINGS, FORMAT JSON',
                        'VERBOSE, FORMAT XML', 'ANALYZE, VERBOSE, FORMAT YAML',
                        'SETTINGS, VERBOSE, FORMAT TEXT'];
BEGIN
  IF parallel THEN
    PERFORM set_config('max_parallel_workers_per_gather', '2', true);
    PERFORM set_config('parallel_setup_cost', '0', true);
    PERFORM set_config('parallel_tuple_cost', '0', true);
    PERFORM set_config('min_parallel_table_scan_size', '0', true);
  END IF;
  FOR q IN SELECT * FROM ef_queries LOOP
    FOREACH f IN ARRAY forms LOOP
      BEGIN
        out := '';
        FOR l IN EXECUTE format('EXPLAIN (%s) %s', f, q.q) LOOP
          out := out || l || E'\n';
        END LOOP;
        IF (out ~ 'GpuHashJoin') <> q.gpu THEN
          query := q.name; form := f;
          problem := CASE WHEN q.gpu THEN 'no GpuHashJoin' ELSE 'a GpuHashJoin' END;
          RETURN NEXT;
        END IF;
      EXCEPTION WHEN OTHERS THEN
        query := q.name; form := f; problem := SQLERRM;
        RETURN NEXT;
      END;
    END LOOP;
  END LOOP;
END $$;
BEGIN;
SELECT * FROM ef_forms(false);
ROLLBACK;
BEGIN;
SELECT * FROM ef_forms(true);
ROLLBACK;

-- the DML ran with native's rows
SET gpuhash.enabled = off;
CREATE TEMP TABLE ef_native AS SELECT * FROM ef_p;
UPDATE ef_native SET b = ef_native.b + 1 FROM ef_b WHERE ef_native.a = ef_b.a;
RESET gpuhash.enabled;
UPDATE ef_p SET b = ef_p.b + 1 FROM ef_b WHERE ef_p.a = ef_b.a;
SELECT count(*) AS differing_rows FROM
  ((SELECT * FROM ef_p EXCEPT ALL SELECT * FROM ef_native)
   UNION ALL (SELECT * FROM ef_native EXCEPT ALL SELECT * FROM ef_p)) d;

-- the node's figures in PostgreSQL's manner: times only under TIMING,
-- in every format; in TEXT the figures grouped as Hash groups its own,
-- Batches being the inner side's partitions on the table's line; per
-- worker, groups of their own properties in JSON and XML
CREATE FUNCTION ef_times(opts text, q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE l text; n bigint := 0;
BEGIN
  FOR l IN EXECUTE format('EXPLAIN (ANALYZE, COSTS OFF, SUMMARY OFF, %s) %s', opts, q) LOOP
    n := n + (SELECT count(*) FROM regexp_matches(l, '(Build|Device|Context Wait|Staging|Probe \w+|Load|Store|Table) Time|Time:|"[^"]*Time"|<[^>]*Time>', 'g'));
  END LOOP;
  RETURN n;
END $$;
SET max_parallel_workers_per_gather = 0;
SET gpuhash.force_agg = on;
SELECT f AS format,
       ef_times(f || ', TIMING OFF', 'SELECT ef_a.b, count(*) FROM ef_a JOIN ef_b USING (a) GROUP BY 1') AS times_timing_off,
       ef_times(f, 'SELECT ef_a.b, count(*) FROM ef_a JOIN ef_b USING (a) GROUP BY 1') > 0 AS times_with_timing
  FROM unnest(ARRAY['FORMAT TEXT', 'FORMAT JSON', 'FORMAT XML', 'FORMAT YAML', 'VERBOSE']) f;
RESET gpuhash.force_agg;
CREATE FUNCTION ef_text(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE l text; inside bool := false;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    IF l ~ 'GpuHashJoin' THEN inside := true; ELSIF l ~ '->' THEN inside := false; END IF;
    -- the figures that depend on the table's size are masked, and the
    -- device must be the one gpuhash.device names (cpu here, gpu on a GPU host)
    IF inside THEN
      IF l ~ ('Device: ' || current_setting('gpuhash.device') || '$') OR
         (current_setting('gpuhash.device') = 'auto' AND l ~ 'Device: (cpu|gpu)$') THEN
        l := regexp_replace(l, 'Device: \w+$', 'Device: as gpuhash.device');
      END IF;
      RETURN NEXT regexp_replace(regexp_replace(l, 'Buckets: \d+  Load Factor: [\d.]+', 'Buckets: N  Load Factor: F'),
                                 '(Memory Usage|Device Memory): \d+kB', '\1: NkB', 'g');
    END IF;
  END LOOP;
END $$;
SELECT ef_text('SELECT * FROM ef_a JOIN ef_b USING (a)');
-- the outer side read in chunks of gpuhash.batch_rows rows
SET gpuhash.batch_rows = 64;
SELECT count(*) FILTER (WHERE l ~ '^\s+Inner Rows: \d+  Probe Chunks: \d+  ') AS chunk_lines,
       max(substring(l FROM 'Probe Chunks: (\d+)')::int) >= (SELECT count(*) FROM ef_a) / 64 AS probe_chunks
  FROM ef_text('SELECT * FROM ef_a JOIN ef_b USING (a)') l;
RESET gpuhash.batch_rows;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
CREATE FUNCTION ef_plan(stmt text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
  EXECUTE stmt INTO r;
  RETURN r;
END $$;
CREATE TEMP TABLE ef_par AS
  SELECT f, x AS plan FROM unnest(ARRAY['JSON', 'XML']) f,
    LATERAL (SELECT ef_plan('EXPLAIN (ANALYZE, VERBOSE, FORMAT ' || f || ') SELECT count(*) FROM ef_a JOIN ef_b USING (a)')) y(x);
RESET parallel_leader_participation;
RESET max_parallel_workers_per_gather;
-- JSON: the join's node; its own and its workers' Verified Matches add
-- up to the join's rows, every worker a group with its Worker Number and
-- no figure packed in a string
WITH RECURSIVE n(j) AS (SELECT plan::json -> 0 -> 'Plan' FROM ef_par WHERE f = 'JSON'
                        UNION ALL SELECT c FROM n, json_array_elements(n.j -> 'Plans') c),
  node AS (SELECT j FROM n WHERE j ->> 'Custom Plan Provider' = 'GpuHashJoin')
SELECT (SELECT coalesce((j ->> 'Verified Matches')::bigint, 0) FROM node)
       + coalesce((SELECT sum((w ->> 'Verified Matches')::bigint)
                     FROM node, json_array_elements(j -> 'Join Workers') w), 0)
       = (SELECT count(*) FROM ef_a JOIN ef_b USING (a)) AS matches_add_up,
       (SELECT bool_and(json_typeof(w -> 'Worker Number') = 'number' AND json_typeof(w -> 'Probe Chunks') = 'number')
          FROM node, json_array_elements(j -> 'Join Workers') w) IS NOT FALSE AS workers_are_groups,
       (SELECT count(*) FROM node, json_each_text(j) p WHERE p.value ~ 'Matches: ') AS packed_strings;
-- XML: the same figures, as elements of Worker elements
SELECT coalesce(nullif((xpath('string(//e:Plan[e:Custom-Plan-Provider="GpuHashJoin"]/e:Verified-Matches)', plan::xml,
                              ARRAY[ARRAY['e', 'http://www.postgresql.org/2009/explain']]))[1]::text, '')::bigint, 0)
       + coalesce((SELECT sum(m::text::bigint)
                     FROM unnest(xpath('//e:Plan[e:Custom-Plan-Provider="GpuHashJoin"]/e:Join-Workers/e:Worker/e:Verified-Matches/text()',
                                       plan::xml, ARRAY[ARRAY['e', 'http://www.postgresql.org/2009/explain']])) m), 0)
       = (SELECT count(*) FROM ef_a JOIN ef_b USING (a)) AS xml_matches_add_up
  FROM ef_par WHERE f = 'XML';
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
DROP FUNCTION ef_times;
DROP FUNCTION ef_text;
DROP FUNCTION ef_plan;

DROP FUNCTION ef_forms;
DROP TABLE ef_a, ef_b, ef_p, ef_i, ef_queries CASCADE;
RESET gpuhash.force_join;
