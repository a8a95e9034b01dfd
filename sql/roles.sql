-- roles: no statement handed to gpuhash's functions ends the backend, and a
-- role without superuser keeps what gpuhash offers it (joins, the
-- aggregate, the device listings) but not the superuser's tools.

-- the tests' aid (declared in setup) refuses what has no plan, with an ERROR
SELECT gpuhash_test_plan_survives_copy('SHOW work_mem');
SELECT gpuhash_test_plan_survives_copy('VACUUM');
SELECT gpuhash_test_plan_survives_copy('CHECKPOINT');
SELECT gpuhash_test_plan_survives_copy('NOTIFY x');
SELECT gpuhash_test_plan_survives_copy('EXPLAIN SELECT 1');
SELECT gpuhash_test_plan_survives_copy('DO $$BEGIN END$$');
SELECT gpuhash_test_plan_survives_copy('SELECT 1');
SELECT 'the backend is still here' AS alive;

CREATE ROLE gpuhash_plain;
CREATE TABLE roles_secret (k int);
CREATE TABLE roles_open AS SELECT g AS k, g % 7 AS v FROM generate_series(1, 2000) g;
ANALYZE roles_open;
GRANT SELECT ON roles_open TO gpuhash_plain;
-- even granted EXECUTE, the aid is the superuser's: it plans without
-- checking privileges
GRANT EXECUTE ON FUNCTION gpuhash_test_plan_survives_copy(text) TO gpuhash_plain;

SET ROLE gpuhash_plain;
SELECT gpuhash_test_plan_survives_copy('SELECT * FROM roles_secret a JOIN roles_secret b USING (k)');
SELECT gpuhash_test_plan_survives_copy('SHOW work_mem');
-- the selftest holds up to 2 GiB of pinned memory: not for every role
SELECT gpuhash_device_selftest(1073741824);
SELECT gpuhash_device_selftest(1);
-- what a plain role keeps
SELECT count(*) >= 0 AS lists_devices FROM gpuhash_devices();
SELECT gpuhash_device_memory() AS holds;
SET gpuhash.force_join = on;
EXPLAIN (COSTS OFF) SELECT count(*) FROM roles_open a JOIN roles_open b USING (k);
SELECT count(*), sum(a.v * b.v) FROM roles_open a JOIN roles_open b USING (k);
SELECT * FROM gpuhash_aggregate('SELECT v, count(*) FROM roles_open GROUP BY v')
  AS t(v int, n bigint) ORDER BY v;
-- and is refused what it may not read, as without gpuhash
SELECT count(*) FROM roles_secret a JOIN roles_open b USING (k);
SELECT * FROM gpuhash_aggregate('SELECT k, count(*) FROM roles_secret GROUP BY k')
  AS t(k int, n bigint);
RESET gpuhash.force_join;
RESET ROLE;

SET gpuhash.enabled = off;
SELECT count(*), sum(a.v * b.v) FROM roles_open a JOIN roles_open b USING (k);
RESET gpuhash.enabled;

DROP TABLE roles_secret, roles_open;
DROP OWNED BY gpuhash_plain;
DROP ROLE gpuhash_plain;
