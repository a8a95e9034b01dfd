-- join_plan: GpuHashJoin plans survive copyObject and serialization, the
-- planner leaves plans alone when gpuhash is off, and a table too large for
-- gpuhash.device_memory_limit still gives PostgreSQL's rows.
CREATE TABLE jp_a AS SELECT g AS k, g % 10 AS v, md5(g::text) AS t FROM generate_series(1, 20000) g;
CREATE TABLE jp_b AS SELECT g % 5000 AS k, g AS w, md5((g % 5000)::text) AS t FROM generate_series(1, 40000) g;
ANALYZE jp_a;
ANALYZE jp_b;
SET gpuhash.force_join = on;

-- each returns how many GpuHashJoin nodes the plan holds (0 would be vacuous)
SELECT gpuhash_test_plan_survives_copy('SELECT count(*) FROM jp_a JOIN jp_b ON jp_a.k = jp_b.k');
SELECT gpuhash_test_plan_survives_copy('SELECT * FROM jp_a LEFT JOIN jp_b ON jp_a.k = jp_b.k AND jp_b.w > jp_a.v');
SELECT gpuhash_test_plan_survives_copy('SELECT count(*) FROM jp_a a1 JOIN jp_b ON a1.t = jp_b.t JOIN jp_a a2 ON a2.k = jp_b.w');
SELECT gpuhash_test_plan_survives_copy('SELECT * FROM jp_a WHERE NOT EXISTS (SELECT 1 FROM jp_b WHERE jp_b.k = jp_a.k)');
SELECT gpuhash_test_plan_survives_copy('SELECT 1; SELECT 2');

-- gpuhash.enabled = off: no GpuHashJoin anywhere
SET gpuhash.enabled = off;
SELECT gpuhash_test_plan_survives_copy('SELECT count(*) FROM jp_a JOIN jp_b ON jp_a.k = jp_b.k');
RESET gpuhash.enabled;

-- gpuhash.enable_join is GpuHashJoin's switch, PostgreSQL's enable_hashjoin
-- is not: planned as on a GPU host (gpuhash.cost_as_gpu), with PostgreSQL's
-- hash join priced out, the cost model chooses GpuHashJoin; with
-- enable_join off it offers none, unless force_join plans it anyway
SET gpuhash.force_join = off;
SET gpuhash.cost_as_gpu = on;
SET enable_hashjoin = off;
SELECT gpuhash_test_plan_survives_copy('SELECT count(*) FROM jp_a JOIN jp_b ON jp_a.k = jp_b.k') AS enable_hashjoin_off;
SET gpuhash.enable_join = off;
SELECT gpuhash_test_plan_survives_copy('SELECT count(*) FROM jp_a JOIN jp_b ON jp_a.k = jp_b.k') AS enable_join_off;
SET gpuhash.force_join = on;
SELECT gpuhash_test_plan_survives_copy('SELECT count(*) FROM jp_a JOIN jp_b ON jp_a.k = jp_b.k') AS enable_join_off_forced;
RESET gpuhash.enable_join;
RESET enable_hashjoin;
RESET gpuhash.cost_as_gpu;

-- a table that does not fit the device memory limit: same rows (on a GPU the
-- join finishes on the CPU twin)
SET gpuhash.device_memory_limit = 1;
SELECT count(*), sum(jp_b.w), count(DISTINCT jp_a.t)
  FROM jp_a JOIN jp_b ON jp_a.k = jp_b.k;
RESET gpuhash.device_memory_limit;
SET gpuhash.enabled = off;
SELECT count(*), sum(jp_b.w), count(DISTINCT jp_a.t)
  FROM jp_a JOIN jp_b ON jp_a.k = jp_b.k;
RESET gpuhash.enabled;

-- tuning settings change nothing in the rows
SET gpuhash.batch_rows = 7;
SET gpuhash.group_size = 32;
SET gpuhash.probe_scheme = double;
SET gpuhash.load_factor = 0.95;
SELECT count(*), sum(jp_b.w) FROM jp_a JOIN jp_b ON jp_a.t = jp_b.t;
SET gpuhash.group_size = 3;
RESET ALL;
SET gpuhash.enabled = off;
SELECT count(*), sum(jp_b.w) FROM jp_a JOIN jp_b ON jp_a.t = jp_b.t;
RESET ALL;
DROP TABLE jp_a, jp_b;
