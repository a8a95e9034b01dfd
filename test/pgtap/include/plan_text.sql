-- test/pgtap/include/plan_text.sql - included (\ir) by the pgTAP files that
-- read plans; not a test of its own (pg_prove runs test/pgtap/*.sql only).
-- pg_temp.plan_text(q): EXPLAIN (COSTS OFF) of q under the current
-- settings, one string.
CREATE FUNCTION pg_temp.plan_text(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE l text; r text := '';
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP r := r || l || E'\n'; END LOOP;
  RETURN r;
END $$;
