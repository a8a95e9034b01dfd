-- device_budget: gpuhash.server_device_memory, the server-wide device memory
-- budget.  Only a superuser or the configuration sets it; a plain role can
-- lower its own tables' share (gpuhash.device_memory_limit) but not lift the
-- server's; reservations come back after a join's end, an ERROR, a cancel and
-- a subtransaction's rollback; a reservation the budget has no room for waits
-- gpuhash.device_memory_wait and then falls back, with native's rows.
--
-- The CPU twin reserves nothing unless gpuhash.budget_cpu_twin (test-only,
-- superuser) asks it to reserve as the GPU does; this suite runs on the twin
-- so that it tests the same accounting with and without a GPU.  Backend exit,
-- the GPU service and concurrent sessions are checked by test/t/001_service.pl.
SET gpuhash.device = cpu;
SET max_parallel_workers_per_gather = 0;
CREATE TABLE db_o AS SELECT g AS id, g % 4000 AS k FROM generate_series(1, 50000) g;
CREATE TABLE db_i AS SELECT g AS k, g * 3 AS v FROM generate_series(0, 99999) g;
ANALYZE db_o, db_i;

-- db_budget: whether this backend holds nothing of the budget (beyond
-- db.own_base: its CUDA context's share once it has one), and whether
-- the budget is the server's (other processes may hold some: on a GPU host
-- the GPU service holds its CUDA context's share)
CREATE FUNCTION db_budget(OUT nothing_held bool, OUT server_wide bool)
LANGUAGE sql AS $$
  SELECT NOT EXISTS (SELECT FROM gpuhash_device_reservations()
                      WHERE pid = pg_backend_pid() AND
                            reserved_bytes > coalesce(nullif(current_setting('db.own_base', true), ''), '0')::bigint),
         server_wide
    FROM gpuhash_device_budget()
$$;
-- db_others_mb: the MB (rounded up) held apart from the tables to come, once
-- other processes that are ending (an earlier suite's backend) have given
-- back theirs: what is left is the GPU service's, which keeps it, and this
-- backend's CUDA context's share on a GPU
CREATE FUNCTION db_others_mb() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  service int := (SELECT pid FROM pg_stat_activity WHERE backend_type = 'gpuhash GPU service');
BEGIN
  FOR i IN 1..100 LOOP
    EXIT WHEN NOT EXISTS (SELECT FROM gpuhash_device_reservations()
                           WHERE pid <> pg_backend_pid() AND pid IS DISTINCT FROM service);
    PERFORM pg_sleep(0.1);
  END LOOP;
  -- this backend's own too: on a GPU, its CUDA context's share
  RETURN (SELECT coalesce(ceil(sum(reserved_bytes) / 1048576.0), 0)::bigint
            FROM gpuhash_device_reservations());
END $$;
CREATE TEMP TABLE db_seen (what text PRIMARY KEY, waits bigint, refusals bigint);
-- db_mark(what): remembers the counters now
CREATE FUNCTION db_mark(what text) RETURNS void LANGUAGE sql AS $$
  INSERT INTO db_seen SELECT what, waits, refusals FROM gpuhash_device_budget()
$$;
-- db_since(what): how many reservations waited and were refused since db_mark(what)
CREATE FUNCTION db_since(what text, OUT waited bigint, OUT refused bigint)
LANGUAGE sql AS $$
  SELECT b.waits - s.waits, b.refusals - s.refusals
    FROM gpuhash_device_budget() b, db_seen s WHERE s.what = db_since.what
$$;

-- the settings: the server's budget is the configuration's (reloaded), the
-- wait the session's, the twin's accounting a superuser's
SELECT name, boot_val, context, unit FROM pg_settings
 WHERE name IN ('gpuhash.server_device_memory', 'gpuhash.device_memory_wait',
                'gpuhash.budget_cpu_twin', 'gpuhash.device_memory_limit')
 ORDER BY name;
SELECT * FROM db_budget();
SET gpuhash.server_device_memory = '1GB';
CREATE ROLE gpuhash_budget_plain;
GRANT SELECT ON db_o, db_i TO gpuhash_budget_plain;
SET ROLE gpuhash_budget_plain;
SET gpuhash.server_device_memory = '1GB';
ALTER SYSTEM SET gpuhash.server_device_memory = '1GB';
SET gpuhash.budget_cpu_twin = on;
SET gpuhash.device_memory_limit = 1;
SET gpuhash.device_memory_wait = 0;
-- anyone sees the budget's totals; which processes hold what is for
-- pg_read_all_stats
SELECT reserved_bytes >= 0 AS sees_totals FROM gpuhash_device_budget();
SELECT count(*) FROM gpuhash_device_reservations();
RESET ROLE;
GRANT pg_read_all_stats TO gpuhash_budget_plain;
SET ROLE gpuhash_budget_plain;
SELECT count(*) >= 0 AS sees_holders FROM gpuhash_device_reservations();
RESET ROLE;

-- the twin reserves as the GPU does: while a join's table is held, the
-- reservation is this backend's; it comes back when the join ends
SET gpuhash.budget_cpu_twin = on;
SET gpuhash.force_join = on;
-- (the join returns its rows in no set order: the cursors show whether each
-- row fetched is a right match, not which rows came first)
BEGIN;
DECLARE c CURSOR FOR SELECT i.v = 3 * (o.id % 4000) AS matched FROM db_o o JOIN db_i i ON o.k = i.k;
FETCH 2 FROM c;
SELECT NOT nothing_held AS held_while_open FROM db_budget();
SELECT reserved_bytes <= gpuhash_device_memory() AS within_what_it_holds
  FROM gpuhash_device_reservations() WHERE pid = pg_backend_pid();
CLOSE c;
SELECT * FROM db_budget();
COMMIT;

-- an ERROR in the middle of the join: given back
SELECT sum(1 / (o.id - 20000)) FROM db_o o JOIN db_i i ON o.k = i.k;
SELECT nothing_held FROM db_budget();
-- a cancel (statement_timeout) in the middle of the join: given back
SET statement_timeout = '300ms';
SELECT count(*) FROM db_o o JOIN db_i i ON o.k = i.k WHERE pg_sleep(0.001) IS NOT NULL;
RESET statement_timeout;
SELECT nothing_held FROM db_budget();
-- a subtransaction rolled back with a cursor open: given back
BEGIN;
SAVEPOINT s;
DECLARE c CURSOR FOR SELECT i.v = 3 * (o.id % 4000) AS matched FROM db_o o JOIN db_i i ON o.k = i.k;
FETCH 1 FROM c;
SELECT NOT nothing_held AS held_in_savepoint FROM db_budget();
ROLLBACK TO s;
SELECT nothing_held FROM db_budget();
COMMIT;
-- gpuhash_aggregate's device memory too
SELECT * FROM gpuhash_aggregate('SELECT k % 5 AS g, count(*), sum(v) FROM db_i GROUP BY 1')
  AS t(g int, n bigint, s bigint) ORDER BY g;
SELECT nothing_held FROM db_budget();

-- the planner: a table larger than the server's budget is planned on the
-- GPU in batches that each fit it (join_batch.c), so it costs more than
-- with no budget; a plain role's gpuhash.device_memory_limit cannot lift
-- the budget (the cost stays), it can lower it (the cost rises).  EXPLAIN
-- only: no GPU is needed to plan for one.  work_mem is large, so that only
-- the device makes batches; force_join is off (it prices every GPU join
-- alike) and PostgreSQL's own joins are disabled instead.
CREATE FUNCTION db_cost(q text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
    j json;
BEGIN
    EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO j;
    RETURN (j->0->'Plan'->>'Total Cost')::float8;
END $$;
GRANT EXECUTE ON FUNCTION db_cost(text) TO gpuhash_budget_plain;
SET work_mem = '1GB';
RESET gpuhash.device_memory_limit;
SET gpuhash.force_join = off;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_nestloop = off;
SET gpuhash.device = gpu;
SELECT db_cost('SELECT * FROM db_o o JOIN db_i i ON o.k = i.k') AS cost_unbounded \gset
ALTER SYSTEM SET gpuhash.server_device_memory = '1MB';
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
SHOW gpuhash.server_device_memory;
SELECT gh_plan_count('SELECT * FROM db_o o JOIN db_i i ON o.k = i.k', 'gpuhash') AS gpu_joins_over_budget;
SELECT db_cost('SELECT * FROM db_o o JOIN db_i i ON o.k = i.k') AS cost_budget \gset
SELECT :cost_budget > :cost_unbounded AS over_budget_costs_its_batches;
SELECT gh_plan_count('SELECT * FROM db_o o JOIN db_i i ON o.k = i.k AND i.k < 100', 'gpuhash') AS gpu_joins_small;
SET ROLE gpuhash_budget_plain;
SET work_mem = '1GB';
SET gpuhash.device_memory_limit = 2147483647;
SELECT db_cost('SELECT * FROM db_o o JOIN db_i i ON o.k = i.k') = :cost_budget AS limit_raised_lifts_nothing;
RESET ROLE;
ALTER SYSTEM RESET gpuhash.server_device_memory;
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
SHOW gpuhash.server_device_memory;
SET ROLE gpuhash_budget_plain;
SET work_mem = '1GB';
SELECT db_cost('SELECT * FROM db_o o JOIN db_i i ON o.k = i.k') = :cost_unbounded AS no_budget_no_batches;
SET gpuhash.device_memory_limit = 1;
SELECT db_cost('SELECT * FROM db_o o JOIN db_i i ON o.k = i.k') > :cost_unbounded AS limit_lowered_makes_batches;
RESET ROLE;
RESET gpuhash.device_memory_limit;
-- the share of PostgreSQL's own price that GpuHashJoin is charged
-- (gpuhash.gpu_join_cost_fraction) counts where the inner side's hash table
-- outgrows a core's cache (db_o's 50,000 rows and db_i's 100,000 both
-- would), not where it stays in it (5,000 and 1,000 rows, whichever side is
-- the inner one): there the device saves PostgreSQL's probe nothing (the
-- plan is a GpuHashJoin, native's joins being off: its cost is below their
-- disable_cost)
SET gpuhash.gpu_join_cost_fraction = 0.25;
SELECT db_cost('SELECT * FROM db_o o JOIN db_i i ON o.k = i.k') < :cost_unbounded AS large_sides_fraction_counts;
SELECT db_cost('SELECT * FROM db_o o JOIN db_i i ON o.k = i.k AND i.k < 1000 AND o.id < 5000') AS small_quarter \gset
RESET gpuhash.gpu_join_cost_fraction;
SELECT db_cost('SELECT * FROM db_o o JOIN db_i i ON o.k = i.k AND i.k < 1000 AND o.id < 5000') = :small_quarter
       AND :small_quarter < 1e9 AS cached_sides_fraction_ignored;
RESET gpuhash.device;
RESET gpuhash.device_memory_limit;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_nestloop;
SET gpuhash.force_join = on;
DROP FUNCTION db_cost(text);

-- work_mem stays large, so that db_i's table is one batch: the budget, not
-- work_mem, decides what follows.
-- a budget with room for one of db_i's tables (about 4.6 MB on the twin),
-- not two: while a cursor holds one, the reservation of another is
-- refused, and the join finishes where the GPU's fall-back puts it, with
-- native's rows.  Whether it waits first depends on who holds the rest: it
-- does not where only this backend's holdings stand in the way (no wait
-- could help), it does where another process holds some, as the GPU
-- service's context on a GPU host (test/t/001_service.pl waits on another
-- session)
SET work_mem = '1GB';
-- (a join first: on a GPU it makes this backend's context, whose share the
-- budget then holds already)
SELECT count(*) > 0 AS joined FROM db_o o JOIN db_i i ON o.k = i.k;
-- db_budget's nothing_held from now on: nothing beyond the context's share
SELECT set_config('db.own_base', coalesce(sum(reserved_bytes), 0)::text, false) IS NOT NULL AS own_base
  FROM gpuhash_device_reservations() WHERE pid = pg_backend_pid();
SELECT 'gpuhash.server_device_memory = ''' || (db_others_mb() + 6) || 'MB''' AS budget \gset
ALTER SYSTEM SET :budget;
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
SELECT current_setting('gpuhash.server_device_memory') = substring(:'budget' FROM '''(.*)''') AS budget_reloaded;
BEGIN;
DECLARE c CURSOR FOR SELECT i.v = 3 * (o.id % 4000) AS matched FROM db_o o JOIN db_i i ON o.k = i.k;
FETCH 1 FROM c;
SELECT db_mark('held, no wait');
SET LOCAL gpuhash.device_memory_wait = 0;
SELECT gh_check('SELECT o.id, i.v FROM db_o o JOIN db_i i ON o.k = i.k');
SELECT waited = 0 AS did_not_wait, refused > 0 AS refused FROM db_since('held, no wait');
SELECT db_mark('held, 200 ms');
SET LOCAL gpuhash.device_memory_wait = '200ms';
SELECT gh_check('SELECT o.id, i.v FROM db_o o LEFT JOIN db_i i ON o.k = i.k');
SELECT refused > 0 AS refused FROM db_since('held, 200 ms');
COMMIT;
SELECT nothing_held FROM db_budget();
-- given back, there is room again
SELECT db_mark('given back');
SELECT gh_check('SELECT o.id, i.v FROM db_o o JOIN db_i i ON o.k = i.k');
SELECT waited, refused FROM db_since('given back');
-- a table larger than the whole budget is refused (at once where only this
-- backend's holdings stand in the way)
SELECT 'gpuhash.server_device_memory = ''' || (db_others_mb() + 2) || 'MB''' AS budget \gset
ALTER SYSTEM SET :budget;
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
SELECT current_setting('gpuhash.server_device_memory') = substring(:'budget' FROM '''(.*)''') AS budget_reloaded;
SELECT db_mark('over budget');
SET gpuhash.device_memory_wait = '10s';
SELECT gh_check('SELECT o.id, i.v FROM db_o o JOIN db_i i ON o.k = i.k');
SELECT refused > 0 AS refused FROM db_since('over budget');
RESET gpuhash.device_memory_wait;
ALTER SYSTEM RESET gpuhash.server_device_memory;
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
SHOW gpuhash.server_device_memory;

SELECT * FROM db_budget();
RESET work_mem;
RESET gpuhash.budget_cpu_twin;
RESET gpuhash.force_join;
DROP TABLE db_o, db_i;
DROP FUNCTION db_budget(), db_others_mb(), db_mark(text), db_since(text);
DROP OWNED BY gpuhash_budget_plain;
DROP ROLE gpuhash_budget_plain;
