-- test/robust/functions.sql - the robustness checks' functions, for
-- test/t/004_robust.pl (psql) and test/robust/sanitize_backend.sh (a
-- single-user backend: statements end with a semicolon and an empty line).

-- an equality operator whose function raises on 13, in a hash opclass
CREATE FUNCTION rb_eq13(a int4, b int4) RETURNS bool LANGUAGE plpgsql IMMUTABLE STRICT AS $$
BEGIN
  IF a = 13 OR b = 13 THEN RAISE EXCEPTION 'rb_eq13 refuses 13' USING ERRCODE = 'RB013'; END IF;
  RETURN a = b;
END $$;

CREATE OPERATOR === (LEFTARG = int4, RIGHTARG = int4, FUNCTION = rb_eq13, COMMUTATOR = ===, HASHES);

CREATE OPERATOR FAMILY rb_fam USING hash;

CREATE OPERATOR CLASS rb_ops FOR TYPE int4 USING hash FAMILY rb_fam AS
  OPERATOR 1 === (int4, int4), FUNCTION 1 hashint4(int4), FUNCTION 2 hashint4extended(int4, int8);

-- the rows of q as one hash, in mode native (gpuhash off) or gpu (forced);
-- the settings are back as they were afterwards, after an ERROR too
CREATE FUNCTION rb_hash(q text, mode text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text; se text := current_setting('gpuhash.enabled'); sf text := current_setting('gpuhash.force_join');
BEGIN
  PERFORM set_config('gpuhash.enabled', CASE WHEN mode = 'native' THEN 'off' ELSE 'on' END, false);
  PERFORM set_config('gpuhash.force_join', CASE WHEN mode = 'native' THEN 'off' ELSE 'on' END, false);
  EXECUTE 'SELECT count(*) || '':'' || coalesce(md5(string_agg(x::text, '','' ORDER BY x::text)), '''') FROM (' || q || ') x' INTO r;
  PERFORM set_config('gpuhash.enabled', se, false);
  PERFORM set_config('gpuhash.force_join', sf, false);
  RETURN r;
EXCEPTION WHEN OTHERS THEN
  PERFORM set_config('gpuhash.enabled', se, false);
  PERFORM set_config('gpuhash.force_join', sf, false);
  RAISE;
END $$;

-- how many GpuHashJoin nodes q has when forced
CREATE FUNCTION rb_gpu_joins(q text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE l text; c int := 0; se text := current_setting('gpuhash.enabled'); sf text := current_setting('gpuhash.force_join');
BEGIN
  PERFORM set_config('gpuhash.enabled', 'on', false);
  PERFORM set_config('gpuhash.force_join', 'on', false);
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP IF l ~ 'GpuHashJoin' THEN c := c + 1; END IF; END LOOP;
  PERFORM set_config('gpuhash.enabled', se, false);
  PERFORM set_config('gpuhash.force_join', sf, false);
  RETURN c;
END $$;

-- 'same' when q gives native's rows with a GpuHashJoin in its plan
CREATE FUNCTION rb_same(q text) RETURNS text LANGUAGE sql AS $$
  SELECT CASE WHEN rb_gpu_joins(q) = 0 THEN 'NO GpuHashJoin IN PLAN'
              WHEN rb_hash(q, 'gpu') = rb_hash(q, 'native') THEN 'same' ELSE 'DIFFERENT' END
$$;

-- q with the nth device allocation from its start failing, n = 1..20: each
-- must give native's rows (no failure, or a fallback) or SQLSTATE 53200,
-- with no device memory held afterwards.  Once n passes the number of
-- allocations q makes nothing fires: the last three must be native's rows
-- (every allocation site was reached before them).  must_fail: some n must
-- also have failed with 53200.
CREATE FUNCTION inject_loop(q text, must_fail bool DEFAULT false) RETURNS text LANGUAGE plpgsql AS $$
DECLARE nat text := rb_hash(q, 'native'); gh text; res text := ''; st text; bad int := 0;
BEGIN
  FOR n IN 1..20 LOOP
    PERFORM set_config('gpuhash.inject_alloc_failure', n::text, false);
    BEGIN
      gh := rb_hash(q, 'gpu'); st := CASE WHEN gh = nat THEN 'same' ELSE 'DIFFERENT' END;
    EXCEPTION WHEN OTHERS THEN st := SQLSTATE;
    END;
    PERFORM set_config('gpuhash.inject_alloc_failure', '0', false);
    IF gpuhash_device_memory() <> 0 THEN st := st || '+HELD'; END IF;
    res := res || n || ':' || st || ' ';
    IF st NOT IN ('same', '53200') THEN bad := bad + 1; END IF;
  END LOOP;
  RETURN CASE WHEN bad = 0 AND res ~ '18:same 19:same 20:same $' AND (NOT must_fail OR res ~ ':53200 ')
              THEN 'clean ' ELSE 'BAD ' END || res;
END $$;

