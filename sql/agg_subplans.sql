-- agg_subplans: GROUP BY keys and aggregate arguments that a parallel worker
-- may not compute (issue 35's F3): a correlated SubPlan (whose plan the
-- workers are not given), an uncorrelated InitPlan, a parameter of an
-- outer query, a parallel-restricted function.  GpuHashAgg must compute
-- them in the leader, never in the workers' projection or GpuHashAggPack.
-- Each query runs natively (gpuhash.enabled = off) and through gpuhash,
-- serial and with two workers, forced (gpuhash.force_agg) and by the cost
-- model (gpuhash.cost_as_gpu), and the results are compared as multisets
-- (join_setup's gh_diff).
SET client_min_messages = warning;
CREATE TABLE sp_t AS
SELECT g AS id, g % 50 AS k, g % 7 AS grp, CASE WHEN g % 9 = 0 THEN NULL ELSE g % 13 END AS n
  FROM generate_series(1, 6000) g;
CREATE TABLE sp_s AS SELECT k, k * 10 AS w FROM generate_series(0, 44) k;
ANALYZE sp_t, sp_s;
CREATE FUNCTION sp_restricted(int) RETURNS int LANGUAGE plpgsql IMMUTABLE
  PARALLEL RESTRICTED AS $$ BEGIN RETURN $1 + 1; END $$;

-- sp_check(query, forced, parallel): "diff=D" (rows in the symmetric
-- difference of the native and gpuhash results), and where forced,
-- "aggs=N packs=P" (GpuHashAgg and GpuHashAggPack nodes in the plan); an
-- ERROR on either side comes back as a line.  The settings are local to
-- the call.
CREATE FUNCTION sp_check(query text, forced bool, parallel bool) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  wrapped text := 'SELECT sp_q::text AS r FROM (' || query || ') sp_q';
  aggs int := 0;
  packs int := 0;
  d bigint;
  side text := 'native';
  l text;
BEGIN
  BEGIN
    DROP TABLE IF EXISTS pg_temp.sp_native, pg_temp.sp_gpu;
    IF parallel THEN
      PERFORM set_config('max_parallel_workers_per_gather', '2', true);
      PERFORM set_config('parallel_setup_cost', '0', true);
      PERFORM set_config('parallel_tuple_cost', '0', true);
      PERFORM set_config('min_parallel_table_scan_size', '0', true);
      PERFORM set_config('gpuhash.batch_rows', '500', true);
    ELSE
      PERFORM set_config('max_parallel_workers_per_gather', '0', true);
    END IF;
    PERFORM set_config('gpuhash.enabled', 'off', true);
    EXECUTE 'CREATE TEMP TABLE sp_native AS ' || wrapped;
    side := 'gpuhash';
    PERFORM set_config('gpuhash.enabled', 'on', true);
    PERFORM set_config('gpuhash.force_agg', forced::text, true);
    PERFORM set_config('gpuhash.cost_as_gpu', (NOT forced)::text, true);
    FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || wrapped LOOP
      IF l ~ '\(GpuHashAgg\)' THEN aggs := aggs + 1; END IF;
      IF l ~ '\(GpuHashAggPack\)' THEN packs := packs + 1; END IF;
    END LOOP;
    EXECUTE 'CREATE TEMP TABLE sp_gpu AS ' || wrapped;
    PERFORM set_config('gpuhash.force_agg', 'off', true);
    PERFORM set_config('gpuhash.cost_as_gpu', 'off', true);
    d := gh_diff('pg_temp.sp_native', 'pg_temp.sp_gpu');
  EXCEPTION WHEN OTHERS THEN
    PERFORM set_config('gpuhash.enabled', 'on', true);
    PERFORM set_config('gpuhash.force_agg', 'off', true);
    PERFORM set_config('gpuhash.cost_as_gpu', 'off', true);
    RETURN format('ERROR (%s side): %s', side, SQLERRM);
  END;
  IF forced THEN
    RETURN format('aggs=%s packs=%s diff=%s', aggs, packs, d);
  END IF;
  RETURN format('diff=%s', d);
END $$;

CREATE TABLE sp_q (id int, q text);
INSERT INTO sp_q VALUES
  -- a control: nothing restricted, so the forced parallel plan packs
  (1, 'SELECT grp, count(*), sum(k) FROM sp_t GROUP BY grp'),
  -- a correlated SubPlan in an argument, without and with GROUP BY
  (2, 'SELECT count(*), sum((SELECT w FROM sp_s WHERE sp_s.k = sp_t.k)) FROM sp_t'),
  (3, 'SELECT grp, count(*), sum((SELECT w FROM sp_s WHERE sp_s.k = sp_t.k)), max(id) FROM sp_t GROUP BY grp'),
  -- an uncorrelated InitPlan in an argument
  (4, 'SELECT grp, sum(k + (SELECT max(w) FROM sp_s)), count(*) FROM sp_t GROUP BY grp'),
  -- a correlated subquery in a FILTER clause
  (5, 'SELECT grp, count(*) FILTER (WHERE k < (SELECT w FROM sp_s WHERE sp_s.k = sp_t.k) / 20), sum(n) FROM sp_t GROUP BY grp'),
  -- a correlated subquery as the GROUP BY key, and an EXISTS
  (6, 'SELECT (SELECT w FROM sp_s WHERE sp_s.k = sp_t.k) AS wk, count(*), sum(id) FROM sp_t GROUP BY 1'),
  (7, 'SELECT EXISTS (SELECT 1 FROM sp_s WHERE sp_s.k = sp_t.k + 20) AS e, count(*), sum(n) FROM sp_t GROUP BY 1'),
  -- an argument with a parameter of the outer query (the grouping query
  -- is a correlated subquery)
  (8, 'SELECT s.k, (SELECT sum(sp_t.id + s.k) FROM sp_t) AS x FROM sp_s s'),
  -- a parallel-restricted function in an argument and in a key
  (9, 'SELECT grp, sum(sp_restricted(k)), count(*) FROM sp_t GROUP BY grp'),
  (10, 'SELECT sp_restricted(grp), count(*) FROM sp_t GROUP BY 1'),
  -- a key the device computes from a column, and a correlated SubPlan in
  -- an argument, over a join: the input's cheapest path is a Gather, whose
  -- rows carry the key's expression but not its column
  (11, 'SELECT b.k % 7, sum((SELECT w FROM sp_s WHERE sp_s.k = c.grp)) FROM sp_t b JOIN sp_t c ON b.id = c.id + 1 GROUP BY b.k % 7');

SELECT id, sp_check(q, true, false) AS forced_serial,
       sp_check(q, true, true) AS forced_parallel,
       sp_check(q, false, false) AS cost_serial,
       sp_check(q, false, true) AS cost_parallel
  FROM sp_q ORDER BY id;

-- gpuhash_aggregate with such a query, serial and parallel: the planner
-- keeps the SubPlan above its Gather, and the packing leaves it there
-- (gpuhash_aggregate takes no FILTER: the correlated condition is a CASE)
CREATE FUNCTION sp_aggregate(query text, coldef text, parallel bool) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  d bigint;
BEGIN
  IF parallel THEN
    PERFORM set_config('max_parallel_workers_per_gather', '2', true);
    PERFORM set_config('parallel_setup_cost', '0', true);
    PERFORM set_config('parallel_tuple_cost', '0', true);
    PERFORM set_config('min_parallel_table_scan_size', '0', true);
    PERFORM set_config('gpuhash.batch_rows', '500', true);
  ELSE
    PERFORM set_config('max_parallel_workers_per_gather', '0', true);
  END IF;
  DROP TABLE IF EXISTS pg_temp.sp_native, pg_temp.sp_gpu;
  PERFORM set_config('gpuhash.enabled', 'off', true);
  EXECUTE format('CREATE TEMP TABLE sp_native AS SELECT sp_r::text AS r FROM (%s) sp_r', query);
  PERFORM set_config('gpuhash.enabled', 'on', true);
  EXECUTE format('CREATE TEMP TABLE sp_gpu AS SELECT sp_r::text AS r FROM gpuhash_aggregate(%L) AS sp_r(%s)',
                 query, coldef);
  d := gh_diff('pg_temp.sp_native', 'pg_temp.sp_gpu');
  RETURN format('rows=%s diff=%s', (SELECT count(*) FROM pg_temp.sp_native), d);
EXCEPTION WHEN OTHERS THEN
  RETURN 'ERROR: ' || SQLERRM;
END $$;

SELECT q, sp_aggregate(q, c, false) AS serial, sp_aggregate(q, c, true) AS parallel
  FROM (VALUES
  ('SELECT grp, count(*), sum((SELECT w FROM sp_s WHERE sp_s.k = sp_t.k)) FROM sp_t GROUP BY grp',
   'g int, c bigint, s bigint'),
  ('SELECT grp, sum(k + (SELECT max(w) FROM sp_s)) FROM sp_t GROUP BY grp', 'g int, s bigint'),
  ('SELECT grp, count(CASE WHEN k < (SELECT w FROM sp_s WHERE sp_s.k = sp_t.k) / 20 THEN 1 END) FROM sp_t GROUP BY grp',
   'g int, c bigint'),
  ('SELECT (SELECT w FROM sp_s WHERE sp_s.k = sp_t.k) AS wk, count(*) FROM sp_t GROUP BY 1', 'wk int, c bigint'),
  ('SELECT sp_restricted(grp), sum(sp_restricted(k)) FROM sp_t GROUP BY 1', 'g int, s bigint')
  ) v(q, c);

DROP FUNCTION sp_check(text, bool, bool), sp_aggregate(text, text, bool), sp_restricted(int);
DROP TABLE sp_q, sp_t, sp_s;
RESET client_min_messages;
