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
