-- agg_shared_dict: a parallel GpuHashAgg's numbered keys (text, char(n),
-- numeric, ...) numbered through the participants' shared dictionary
-- (aggregate_dict.c), with packet entries past its share of the budget.
-- Every query runs natively and with gpuhash forced on a packed plan
-- (GpuHashAggPack under the Gather, two workers, packets of 100 rows), and
-- the rows must be the same multiset (EXCEPT ALL both ways, gh_diff of
-- join_setup).

-- sd_check(query, wm): "packed=t diff=D shared=t entries=t" with work_mem
-- wm: whether the plan packs, the rows that differ, and whether EXPLAIN
-- ANALYZE's figures say that the shared dictionary numbered values and
-- that packets carried entries of their own
CREATE FUNCTION sd_check(query text, wm text DEFAULT '4MB') RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  wrapped text := 'SELECT gh_q::text AS r FROM (' || query || ') gh_q';
  packs int := 0;
  l text;
  j jsonb;
  d bigint;
  shared bigint;
  entries bigint;
BEGIN
  PERFORM set_config('parallel_setup_cost', '0', true);
  PERFORM set_config('parallel_tuple_cost', '0', true);
  PERFORM set_config('min_parallel_table_scan_size', '0', true);
  PERFORM set_config('max_parallel_workers_per_gather', '2', true);
  PERFORM set_config('gpuhash.batch_rows', '100', true);
  PERFORM set_config('work_mem', wm, true);
  DROP TABLE IF EXISTS pg_temp.sd_native, pg_temp.sd_gpu;
  PERFORM set_config('gpuhash.enabled', 'off', true);
  EXECUTE 'CREATE TEMP TABLE sd_native AS ' || wrapped;
  PERFORM set_config('gpuhash.enabled', 'on', true);
  PERFORM set_config('gpuhash.force_agg', 'on', true);
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
    IF l ~ '\(GpuHashAggPack\)' THEN packs := packs + 1; END IF;
  END LOOP;
  EXECUTE 'CREATE TEMP TABLE sd_gpu AS ' || wrapped;
  EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON) ' || query INTO j;
  PERFORM set_config('gpuhash.force_agg', 'off', true);
  shared := coalesce((SELECT sum(v::text::bigint)
                        FROM jsonb_path_query(j, 'strict $.**."Shared Key Values"') v), 0);
  entries := coalesce((SELECT sum(v::text::bigint)
                         FROM jsonb_path_query(j, 'strict $.**."Packet Key Entries"') v), 0);
  d := gh_diff('pg_temp.sd_native', 'pg_temp.sd_gpu');
  RETURN format('packed=%s diff=%s shared=%s entries=%s', packs = 1, d, shared > 0, entries > 0);
END $$;

-- sd_explain(query, wm): EXPLAIN ANALYZE's lines of the packed plan that
-- tell of the dictionaries, numbers masked (they depend on the workers)
CREATE FUNCTION sd_explain(query text, fmt text, wm text DEFAULT '4MB') RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
  PERFORM set_config('parallel_setup_cost', '0', true);
  PERFORM set_config('parallel_tuple_cost', '0', true);
  PERFORM set_config('min_parallel_table_scan_size', '0', true);
  PERFORM set_config('max_parallel_workers_per_gather', '2', true);
  PERFORM set_config('gpuhash.batch_rows', '100', true);
  PERFORM set_config('work_mem', wm, true);
  PERFORM set_config('gpuhash.force_agg', 'on', true);
  FOR l IN EXECUTE format('EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, FORMAT %s) ', fmt) || query LOOP
    FOR l IN SELECT x FROM regexp_split_to_table(l, E'\n') x LOOP
      IF l ~ 'Key Values|Key Entries|Shared Dictionary|GpuHashAggPack' THEN
        RETURN NEXT regexp_replace(l, '[0-9]+', 'N', 'g');
      END IF;
    END LOOP;
  END LOOP;
  PERFORM set_config('gpuhash.force_agg', 'off', true);
END $$;

-- the rows: many distinct text values, each in rows of both workers' block
-- ranges (i % 20011), numeric spellings 1.0, 1.00, 1.000 of one value in
-- rows far apart, bpchar values of one value with and without trailing
-- blanks, NULL keys.  Which spelling a group shows is the first row's, on
-- either side, so the queries show the groups' keys in one spelling.
CREATE TABLE sd_t AS
SELECT i,
       CASE WHEN i % 97 = 0 THEN NULL ELSE 'v' || (i % 20011) END AS t,
       CASE i % 3 WHEN 0 THEN 1.0 WHEN 1 THEN 1.00 ELSE 1.000 END * (i % 50) AS n,
       ('ab' || (i % 7) || repeat(' ', i % 3))::bpchar AS c,
       CASE WHEN i % 5 = 0 THEN NULL ELSE (i % 13)::numeric / 4 END AS nn,
       i % 100 AS v
  FROM generate_series(1, 60000) i;
ANALYZE sd_t;
SELECT count(DISTINCT t) > 10000 AS many_values,
       count(DISTINCT n::text) > count(DISTINCT n) AS numeric_spellings,
       count(DISTINCT octet_length(c)) > 1 AS bpchar_spellings
  FROM sd_t;

-- a text key of 20,011 values over 60,000 rows: hundreds of packets; with
-- the default work_mem every value fits the shared dictionary
SELECT sd_check('SELECT t, count(*), sum(v) FROM sd_t GROUP BY t');
-- work_mem = 64kB: the shared dictionary's share fills, later values go
-- through packet entries, and the run spills
SELECT sd_check('SELECT t, count(*), sum(v) FROM sd_t GROUP BY t', '64kB');
-- numeric keys equal by the type but spelled differently, in rows of
-- different packets and workers: one group each, as natively
SELECT sd_check('SELECT round(n, 3) AS n, count(*), sum(v) FROM sd_t GROUP BY n');
SELECT sd_check('SELECT n::text AS spelled, count(*) FROM sd_t GROUP BY n::text');
-- bpchar trailing blanks, NULL keys, two numbered keys together
SELECT sd_check('SELECT rtrim(c) AS c, count(*), min(v) FROM sd_t GROUP BY c');
SELECT sd_check('SELECT nn, count(*), sum(v) FROM sd_t GROUP BY nn');
SELECT sd_check('SELECT t, rtrim(c) AS c, count(*), max(v) FROM sd_t GROUP BY t, c');
SELECT sd_check('SELECT round(n, 3) AS n, nn, rtrim(c) AS c, count(*) FROM sd_t GROUP BY n, nn, c', '64kB');

-- a nondeterministic collation: values that differ in case are one group
SET client_min_messages = warning;
CREATE COLLATION IF NOT EXISTS sd_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
RESET client_min_messages;
CREATE TABLE sd_ci_t AS
SELECT i, (CASE WHEN i % 2 = 0 THEN 'Key' ELSE 'kEY' END || (i % 500)) COLLATE sd_ci AS k, i % 10 AS v
  FROM generate_series(1, 30000) i;
ANALYZE sd_ci_t;
SELECT sd_check('SELECT lower(k) AS k, count(*), sum(v) FROM sd_ci_t GROUP BY k');
SELECT count(*) AS groups FROM (SELECT k FROM sd_ci_t GROUP BY k) g;

-- EXPLAIN ANALYZE: the packed node's shared dictionary and the leader's
-- figures, in text and in a structured format
SELECT sd_explain('SELECT t, count(*) FROM sd_t GROUP BY t', 'TEXT');
SELECT sd_explain('SELECT t, count(*) FROM sd_t GROUP BY t', 'YAML', '64kB');

-- a rescan: the aggregate read again for each outer row (a spilled run
-- keeps no groups to rewind), each time from an empty shared dictionary
CREATE TABLE sd_o AS SELECT g FROM generate_series(0, 2) g;
ANALYZE sd_o;
SELECT sd_check('SELECT o.g, (SELECT count(*) FROM (SELECT t, count(*) AS c FROM sd_t GROUP BY t) s
                                WHERE s.c > o.g) FROM sd_o o', '64kB');
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
SELECT sd_check('SELECT o.g, s.t, s.c FROM sd_o o, (SELECT t, count(*) AS c FROM sd_t GROUP BY t) s
                  WHERE s.c > o.g + 3', '64kB');
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;

DROP TABLE sd_t, sd_ci_t, sd_o;
DROP COLLATION sd_ci;
DROP FUNCTION sd_check(text, text), sd_explain(text, text, text);
