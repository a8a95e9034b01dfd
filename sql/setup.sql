-- setup: the library is preloaded; the extension can be created, dropped and
-- created again, and owns exactly its functions.
SELECT current_setting('shared_preload_libraries') ~ 'gpuhash' AS preloaded;

CREATE EXTENSION gpuhash;
SELECT extname, extversion FROM pg_extension WHERE extname = 'gpuhash';
SELECT p.proname
  FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
 WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'gpuhash')
   AND d.classid = 'pg_proc'::regclass
 ORDER BY 1;

DROP EXTENSION gpuhash;
SELECT count(*) AS gpuhash_functions_left FROM pg_proc WHERE proname LIKE 'gpuhash%';
-- the settings belong to the library, not the extension: still there
SHOW gpuhash.enabled;

CREATE EXTENSION gpuhash;
CREATE EXTENSION gpuhash;
CREATE EXTENSION IF NOT EXISTS gpuhash;
SELECT count(*) AS gpuhash_functions FROM pg_proc WHERE proname LIKE 'gpuhash%';

-- the update path from 0.1 gives what a fresh CREATE EXTENSION gives: the
-- same functions, the test aid gone, the selftest not executable by PUBLIC
CREATE TEMP TABLE fresh_procs AS
  SELECT p.oid::regprocedure::text AS fn, p.proacl::text AS acl
    FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
   WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'gpuhash')
     AND d.classid = 'pg_proc'::regclass;
DROP EXTENSION gpuhash;
CREATE EXTENSION gpuhash VERSION '0.1';
SELECT count(*) AS v01_has_test_aid FROM pg_proc WHERE proname = 'gpuhash_plan_survives_copy';
ALTER EXTENSION gpuhash UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'gpuhash';
SELECT count(*) AS differences FROM (
  (SELECT p.oid::regprocedure::text, p.proacl::text
     FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
    WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'gpuhash')
      AND d.classid = 'pg_proc'::regclass
   EXCEPT SELECT fn, acl FROM fresh_procs)
  UNION ALL
  (SELECT fn, acl FROM fresh_procs
   EXCEPT SELECT p.oid::regprocedure::text, p.proacl::text
     FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
    WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'gpuhash')
      AND d.classid = 'pg_proc'::regclass)) diff;
SELECT has_function_privilege('public', 'gpuhash_device_selftest(bigint)', 'EXECUTE') AS public_may_selftest;
DROP TABLE fresh_procs;

-- the tests' own aid, not part of the extension (only a superuser can
-- declare a C function; the function itself refuses other roles too)
CREATE FUNCTION gpuhash_test_plan_survives_copy(query text) RETURNS integer
  AS '$libdir/gpuhash', 'gpuhash_plan_survives_copy'
  LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
