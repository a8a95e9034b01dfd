-- extension_scope: with the library preloaded for the whole server, gpuhash
-- plans only in a database where CREATE EXTENSION gpuhash ran; DROP
-- EXTENSION switches it off there (cached plans too), and DROP DATABASE
-- works while the GPU service runs.
SELECT current_database() AS regress_db \gset
CREATE TABLE es_a AS SELECT g AS k, g % 5 AS v FROM generate_series(1, 3000) g;
CREATE TABLE es_b AS SELECT g AS k FROM generate_series(1, 3000, 3) g;
ANALYZE es_a, es_b;
SET gpuhash.force_join = on;
PREPARE es_q AS SELECT count(*), sum(v) FROM es_a JOIN es_b USING (k);
EXPLAIN (COSTS OFF) EXECUTE es_q;
EXECUTE es_q;

-- dropped: every plan is PostgreSQL's, the prepared one too
DROP EXTENSION gpuhash;
EXPLAIN (COSTS OFF) EXECUTE es_q;
EXPLAIN (COSTS OFF) SELECT count(*), sum(v) FROM es_a JOIN es_b USING (k);
EXECUTE es_q;
-- created again (in the same transaction as a query planned before it)
BEGIN;
EXPLAIN (COSTS OFF) SELECT count(*) FROM es_a JOIN es_b USING (k);
CREATE EXTENSION gpuhash;
EXPLAIN (COSTS OFF) SELECT count(*) FROM es_a JOIN es_b USING (k);
COMMIT;
-- a plan cached while the extension was absent is PostgreSQL's own and
-- depends on nothing of gpuhash: it stays until it is planned again
EXPLAIN (COSTS OFF) EXECUTE es_q;
EXECUTE es_q;
DEALLOCATE es_q;

-- a database that never created the extension
CREATE DATABASE gpuhash_no_extension;
\c gpuhash_no_extension
SELECT count(*) AS gpuhash_extensions FROM pg_extension WHERE extname = 'gpuhash';
SHOW gpuhash.gpu_service;
SET gpuhash.force_join = on;
SET gpuhash.device = cpu;
CREATE TABLE es_a AS SELECT g AS k FROM generate_series(1, 3000) g;
ANALYZE es_a;
EXPLAIN (COSTS OFF) SELECT count(*) FROM es_a x JOIN es_a y USING (k);
SELECT count(*) FROM es_a x JOIN es_a y USING (k);
CREATE EXTENSION gpuhash;
EXPLAIN (COSTS OFF) SELECT count(*) FROM es_a x JOIN es_a y USING (k);
SELECT count(*) FROM es_a x JOIN es_a y USING (k);
\c :regress_db
-- the GPU service (gpu_service = parallel, the default) takes part in the
-- barrier DROP DATABASE waits for; a bounded wait, so a hang is a failure
SET statement_timeout = '60s';
SELECT pid IS NOT NULL AS service_running
  FROM pg_stat_activity WHERE backend_type = 'gpuhash GPU service';
DROP DATABASE gpuhash_no_extension;
SELECT count(*) AS left_over FROM pg_database WHERE datname = 'gpuhash_no_extension';
-- DROP TABLESPACE waits for the same barrier when files linger in it
SET allow_in_place_tablespaces = on;
CREATE TABLESPACE es_space LOCATION '';
CREATE TABLE es_t TABLESPACE es_space AS SELECT 1 AS k;
DROP TABLE es_t;
DROP TABLESPACE es_space;
SELECT count(*) AS left_over FROM pg_tablespace WHERE spcname = 'es_space';
RESET statement_timeout;
DROP TABLE es_a, es_b;
RESET gpuhash.force_join;
