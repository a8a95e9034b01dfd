-- upgrade: every earlier version, updated, has the catalog of a new
-- installation of the current version (gpuhash--X.sql, the full script):
-- the same member objects, and for each function its signature, result,
-- kind, volatility, strictness, parallel safety, security, cost, rows,
-- symbol, privileges and comment, and for each view its definition and
-- privileges.  The comparison can fail: a privilege
-- taken away after an update (what an update script that forgot a GRANT
-- leaves) shows as a difference.
SET client_min_messages = warning;
CREATE FUNCTION gh_ext_catalog() RETURNS TABLE (obj text, descr text)
LANGUAGE sql AS $$
  SELECT 'function ' || p.oid::regprocedure::text,
         concat_ws(' | ', pg_get_function_result(p.oid), p.prokind, p.provolatile,
                   p.proisstrict, p.proparallel, p.prosecdef, p.procost, p.prorows,
                   p.probin, p.prosrc, p.proacl::text,
                   coalesce(obj_description(p.oid, 'pg_proc'), '(no comment)'))
    FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
   WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'gpuhash')
     AND d.refclassid = 'pg_extension'::regclass
     AND d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
  UNION ALL
  SELECT pg_describe_object(d.classid, d.objid, d.objsubid),
         CASE WHEN d.classid = 'pg_class'::regclass
              THEN (SELECT concat_ws(' | ', c.relkind, c.relacl::text, pg_get_viewdef(c.oid))
                      FROM pg_class c WHERE c.oid = d.objid)
              ELSE '' END
    FROM pg_depend d
   WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'gpuhash')
     AND d.refclassid = 'pg_extension'::regclass
     AND d.classid <> 'pg_proc'::regclass AND d.deptype = 'e'
$$;
RESET client_min_messages;

-- the current version, as a new installation makes it
DROP EXTENSION gpuhash;
CREATE EXTENSION gpuhash;
SELECT extversion = (SELECT default_version FROM pg_available_extensions WHERE name = 'gpuhash') AS current
  FROM pg_extension WHERE extname = 'gpuhash';
CREATE TEMP TABLE fresh_catalog AS SELECT * FROM gh_ext_catalog();
-- gh_ext_diff: the rows of the installed catalog not in fresh_catalog and
-- those of fresh_catalog not installed
CREATE FUNCTION gh_ext_diff() RETURNS TABLE (side text, obj text, descr text)
LANGUAGE sql AS $$
  (SELECT 'installed only', * FROM gh_ext_catalog() EXCEPT SELECT 'installed only', * FROM fresh_catalog)
  UNION ALL
  (SELECT 'fresh only', * FROM fresh_catalog EXCEPT SELECT 'fresh only', * FROM gh_ext_catalog())
$$;
SELECT count(*) > 0 AS functions FROM fresh_catalog WHERE obj LIKE 'function %';

-- every earlier version the update scripts start from, updated
CREATE FUNCTION gh_ext_upgrade_from(v text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  n bigint;
  first text;
BEGIN
  DROP EXTENSION gpuhash;
  EXECUTE format('CREATE EXTENSION gpuhash VERSION %L', v);
  ALTER EXTENSION gpuhash UPDATE;
  SELECT count(*), min(side || ': ' || obj || ' ' || descr) INTO n, first FROM gh_ext_diff();
  RETURN format('from %s to %s: %s differences%s', v,
                (SELECT extversion FROM pg_extension WHERE extname = 'gpuhash'), n,
                coalesce(' (' || first || ')', ''));
END $$;
SELECT gh_ext_upgrade_from(version)
  FROM pg_available_extension_versions
 WHERE name = 'gpuhash' AND version <> (SELECT default_version FROM pg_available_extensions WHERE name = 'gpuhash')
 ORDER BY version;

-- the comparison sees a missing GRANT
REVOKE EXECUTE ON FUNCTION gpuhash_device_reservations() FROM pg_read_all_stats;
SELECT side, obj FROM gh_ext_diff() ORDER BY 1;
GRANT EXECUTE ON FUNCTION gpuhash_device_reservations() TO pg_read_all_stats;
SELECT count(*) AS differences_after_grant FROM gh_ext_diff();
-- and a view's
REVOKE SELECT ON gpuhash_stat_database FROM pg_read_all_stats;
SELECT side, obj FROM gh_ext_diff() ORDER BY 1;
GRANT SELECT ON gpuhash_stat_database TO pg_read_all_stats;
SELECT count(*) AS differences_after_grant FROM gh_ext_diff();

-- and a new installation again for the suites after this one
DROP EXTENSION gpuhash;
CREATE EXTENSION gpuhash;
SELECT count(*) AS differences_fresh FROM gh_ext_diff();
DROP FUNCTION gh_ext_upgrade_from(text);
DROP FUNCTION gh_ext_diff();
DROP FUNCTION gh_ext_catalog();
DROP TABLE fresh_catalog;
