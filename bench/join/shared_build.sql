-- bench/join/shared_build.sql - where a parallel GpuHashJoin's time goes with
-- 16 workers (EXPLAIN ANALYZE's Build Phases, per worker), on bench/join's
-- data (psql -f, on the cluster `bench/join/run.sh --keep` left running):
-- the shared store with the default batch size, with larger probe batches,
-- and every participant reading the inner side itself (shared_build off).
SET work_mem = '1GB';
SET gpuhash.force_join = on;
SET max_parallel_workers_per_gather = 16;
SET parallel_setup_cost = 0;
\timing on
\echo == warm-up
SELECT count(*), sum(r.v) FROM s JOIN r ON s.k = r.k;
\echo == shared store, batch_rows 65536
EXPLAIN (ANALYZE, VERBOSE, COSTS OFF) SELECT count(*), sum(r.v) FROM s JOIN r ON s.k = r.k;
SELECT count(*), sum(r.v) FROM s JOIN r ON s.k = r.k;
\echo == shared store, batch_rows 1048576
SET gpuhash.batch_rows = 1048576;
SELECT count(*), sum(r.v) FROM s JOIN r ON s.k = r.k;
SELECT count(*), sum(r.v) FROM s JOIN r ON s.k = r.k;
RESET gpuhash.batch_rows;
\echo == every participant reads the inner side (shared_build off)
SET gpuhash.shared_build = off;
SELECT count(*), sum(r.v) FROM s JOIN r ON s.k = r.k;
SELECT count(*), sum(r.v) FROM s JOIN r ON s.k = r.k;
EXPLAIN (ANALYZE, VERBOSE, COSTS OFF) SELECT count(*), sum(r.v) FROM s JOIN r ON s.k = r.k;
