-- join_setup: helpers and data for the GpuHashJoin differential suite
-- (join_*.sql).  Every join_* test compares gpuhash's results against
-- PostgreSQL's own plan for the same query in the same run, so the expected
-- outputs hold no numbers copied from a wished-for result, and they are the
-- same with gpuhash.device = cpu and = gpu: they print no device names,
-- timings or memory sizes.
--
-- Modes: "native"  = gpuhash.enabled off (PostgreSQL's own plan);
--        "gpuhash" = gpuhash.enabled on + gpuhash.force_join on (a
--                    GpuHashJoin wherever one is legal).
-- no JIT: its cost thresholds are irrelevant here, and some PostgreSQL
-- builds (the GPU host's) have no LLVM
SET jit = off;
-- (setup normally created it already; quiet either way)
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuhash;
RESET client_min_messages;

-- gh_set_mode(mode): switch the planner settings for this session; callers
-- save and restore the previous values.
CREATE FUNCTION gh_set_mode(mode text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF mode = 'native' THEN
    PERFORM set_config('gpuhash.enabled', 'off', false);
    PERFORM set_config('gpuhash.force_join', 'off', false);
  ELSIF mode = 'gpuhash' THEN
    PERFORM set_config('gpuhash.enabled', 'on', false);
    PERFORM set_config('gpuhash.force_join', 'on', false);
  ELSE
    RAISE EXCEPTION 'gh_set_mode: unknown mode %', mode;
  END IF;
END $$;

-- gh_plan_lines(stmt, mode): the EXPLAIN (COSTS OFF) lines of stmt planned in mode
CREATE FUNCTION gh_plan_lines(stmt text, mode text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
  saved_enabled text := current_setting('gpuhash.enabled');
  saved_force text := current_setting('gpuhash.force_join');
  l text;
BEGIN
  PERFORM gh_set_mode(mode);
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || stmt LOOP
    RETURN NEXT l;
  END LOOP;
  PERFORM set_config('gpuhash.enabled', saved_enabled, false);
  PERFORM set_config('gpuhash.force_join', saved_force, false);
END $$;

-- gh_plan_count(stmt, mode, pattern): how many plan lines match a regex
CREATE FUNCTION gh_plan_count(stmt text, mode text, pattern text DEFAULT 'GpuHashJoin')
RETURNS int LANGUAGE sql AS $$
  SELECT count(*)::int FROM gh_plan_lines(stmt, mode) l WHERE l ~ pattern
$$;

-- gh_explain(stmt, mode): plan shape for printing.  Keeps the node lines and
-- the properties whose text is the same on every device; drops anything
-- else gpuhash might add (device, memory, batches).
CREATE FUNCTION gh_explain(stmt text, mode text DEFAULT 'gpuhash') RETURNS SETOF text
LANGUAGE sql AS $$
  SELECT l FROM gh_plan_lines(stmt, mode) l
   WHERE l !~ '^\s*[A-Za-z ]+:' OR
         l ~ '^\s*(Join Type|Hash Cond|Join Filter|Filter|One-Time Filter|Sort Key|Group Key|Workers Planned|Index Cond|Merge Cond|Recheck Cond|Output|Inner Unique|Single Copy|Cache Key|Cache Mode|Presorted Key):'
$$;

-- gh_explain_analyze(stmt, mode): EXPLAIN ANALYZE without timing, keeping only
-- node lines (with their actual row counts) and the same properties as
-- gh_explain plus the rows removed by filters.  For serial plans only (the
-- row counts of parallel workers vary).
CREATE FUNCTION gh_explain_analyze(stmt text, mode text DEFAULT 'gpuhash') RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
  saved_enabled text := current_setting('gpuhash.enabled');
  saved_force text := current_setting('gpuhash.force_join');
  l text;
BEGIN
  PERFORM gh_set_mode(mode);
  FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || stmt LOOP
    IF l !~ '^\s*[A-Za-z ]+:' OR
       l ~ '^\s*(Join Type|Hash Cond|Join Filter|Filter|Sort Key|Group Key|Rows Removed by Join Filter|Rows Removed by Filter|Inner Unique):' THEN
      RETURN NEXT l;
    END IF;
  END LOOP;
  PERFORM set_config('gpuhash.enabled', saved_enabled, false);
  PERFORM set_config('gpuhash.force_join', saved_force, false);
END $$;

-- gh_diff(t1, t2): size of the symmetric multiset difference of two
-- one-column (r text) tables
CREATE FUNCTION gh_diff(t1 text, t2 text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE d bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((SELECT r FROM %1$s EXCEPT ALL SELECT r FROM %2$s)
                  UNION ALL (SELECT r FROM %2$s EXCEPT ALL SELECT r FROM %1$s)) x', t1, t2)
    INTO d;
  RETURN d;
END $$;

-- gh_check(query, min_gpu_joins, show_rows): the differential check.
--   1. plans "CREATE TEMP TABLE ... AS <query>" natively and under gpuhash
--      and counts the GpuHashJoin nodes of each (the plans that run);
--   2. materializes the rows of both runs, each row as its text form (so
--      that 1.0 and 1.00, -0 and 0, 'a ' and 'a' stay distinct);
--   3. compares them as multisets both ways.
-- Returns "gpu_joins=N rows=R diff=D": N GpuHashJoin nodes in the gpuhash
-- plan, R rows from the native run, D rows in the symmetric multiset
-- difference (0 = same result).  Flags a gpuhash plan with fewer than
-- min_gpu_joins GpuHashJoin nodes (a vacuous test) and a native plan with
-- any.  An ERROR on either side comes back as a line, so that one failing
-- query does not hide the others of a multi-row SELECT.
CREATE FUNCTION gh_check(query text, min_gpu_joins int DEFAULT 1, show_rows bool DEFAULT true)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  saved_enabled text := current_setting('gpuhash.enabled');
  saved_force text := current_setting('gpuhash.force_join');
  wrapped text := 'SELECT gh_q::text AS r FROM (' || query || ') gh_q';
  native_gpu int;
  n_gpu int;
  nrows bigint;
  grows bigint;
  d bigint;
  side text := 'native';
  res text;
BEGIN
  BEGIN
    IF to_regclass('pg_temp.gh_r_native') IS NOT NULL THEN DROP TABLE pg_temp.gh_r_native; END IF;
    IF to_regclass('pg_temp.gh_r_gpu') IS NOT NULL THEN DROP TABLE pg_temp.gh_r_gpu; END IF;
    native_gpu := gh_plan_count('CREATE TEMP TABLE gh_r_native AS ' || wrapped, 'native');
    PERFORM gh_set_mode('native');
    EXECUTE 'CREATE TEMP TABLE gh_r_native AS ' || wrapped;
    GET DIAGNOSTICS nrows = ROW_COUNT;
    side := 'gpuhash';
    n_gpu := gh_plan_count('CREATE TEMP TABLE gh_r_gpu AS ' || wrapped, 'gpuhash');
    PERFORM gh_set_mode('gpuhash');
    EXECUTE 'CREATE TEMP TABLE gh_r_gpu AS ' || wrapped;
    GET DIAGNOSTICS grows = ROW_COUNT;
    PERFORM set_config('gpuhash.enabled', saved_enabled, false);
    PERFORM set_config('gpuhash.force_join', saved_force, false);
    d := gh_diff('pg_temp.gh_r_native', 'pg_temp.gh_r_gpu');
    DROP TABLE pg_temp.gh_r_native;
    DROP TABLE pg_temp.gh_r_gpu;
  EXCEPTION WHEN OTHERS THEN
    RETURN format('ERROR (%s side): %s', side, SQLERRM);
  END;
  res := format('gpu_joins=%s', n_gpu);
  IF show_rows THEN res := res || format(' rows=%s', nrows); END IF;
  res := res || format(' diff=%s', d);
  IF grows <> nrows THEN res := res || format(' GPUHASH-ROWS=%s', grows); END IF;
  IF n_gpu < min_gpu_joins THEN
    res := res || format(' VACUOUS(expected at least %s GpuHashJoin)', min_gpu_joins);
  END IF;
  IF native_gpu <> 0 THEN res := res || ' NATIVE-PLAN-HAS-GPUHASHJOIN'; END IF;
  RETURN res;
END $$;

-- gh_rows(query, mode): the rows of query, as text, in the order the query
-- returns them (give it an ORDER BY)
CREATE FUNCTION gh_rows(query text, mode text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
  saved_enabled text := current_setting('gpuhash.enabled');
  saved_force text := current_setting('gpuhash.force_join');
BEGIN
  PERFORM gh_set_mode(mode);
  RETURN QUERY EXECUTE 'SELECT gh_q::text FROM (' || query || ') gh_q';
  PERFORM set_config('gpuhash.enabled', saved_enabled, false);
  PERFORM set_config('gpuhash.force_join', saved_force, false);
END $$;

-- gh_side_by_side(query): native and gpuhash rows of an ORDER BY query next
-- to each other, with whether they are the same
CREATE FUNCTION gh_side_by_side(query text)
RETURNS TABLE (native text, gpuhash text, same bool) LANGUAGE plpgsql AS $$
BEGIN
  CREATE TEMP TABLE gh_sbs_n AS SELECT * FROM gh_rows(query, 'native') WITH ORDINALITY AS x(r, i);
  CREATE TEMP TABLE gh_sbs_g AS SELECT * FROM gh_rows(query, 'gpuhash') WITH ORDINALITY AS x(r, i);
  RETURN QUERY SELECT n.r, g.r, n.r IS NOT DISTINCT FROM g.r
    FROM gh_sbs_n n FULL JOIN gh_sbs_g g ON n.i = g.i ORDER BY coalesce(n.i, g.i);
  DROP TABLE gh_sbs_n;
  DROP TABLE gh_sbs_g;
END $$;

-- gh_cursor_check(query): reads query through a SCROLL cursor planned under
-- gpuhash: all rows forward, then all backward (must be the forward rows
-- reversed), then rewinds and reads forward again (same multiset); and
-- compares the forward rows with the native rows as a multiset.
CREATE FUNCTION gh_cursor_check(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  saved_enabled text := current_setting('gpuhash.enabled');
  saved_force text := current_setting('gpuhash.force_join');
  c refcursor;
  rec record;
  n int := 0;
  m int := 0;
  bad_backward int;
  d_native bigint;
  d_again bigint;
BEGIN
  CREATE TEMP TABLE gh_cur_native (r text);
  CREATE TEMP TABLE gh_cur_fwd (i int, r text);
  CREATE TEMP TABLE gh_cur_bwd (i int, r text);
  CREATE TEMP TABLE gh_cur_again (r text);
  PERFORM gh_set_mode('native');
  EXECUTE 'INSERT INTO gh_cur_native SELECT gh_q::text FROM (' || query || ') gh_q';
  PERFORM gh_set_mode('gpuhash');
  OPEN c SCROLL FOR EXECUTE query;
  PERFORM set_config('gpuhash.enabled', saved_enabled, false);
  PERFORM set_config('gpuhash.force_join', saved_force, false);
  LOOP
    FETCH NEXT FROM c INTO rec;
    EXIT WHEN NOT FOUND;
    n := n + 1;
    INSERT INTO gh_cur_fwd VALUES (n, rec::text);
  END LOOP;
  LOOP
    FETCH PRIOR FROM c INTO rec;
    EXIT WHEN NOT FOUND;
    m := m + 1;
    INSERT INTO gh_cur_bwd VALUES (m, rec::text);
  END LOOP;
  SELECT count(*) INTO bad_backward
    FROM gh_cur_fwd f FULL JOIN gh_cur_bwd b ON f.i = n + 1 - b.i
   WHERE f.r IS DISTINCT FROM b.r;
  MOVE ABSOLUTE 0 FROM c;
  LOOP
    FETCH NEXT FROM c INTO rec;
    EXIT WHEN NOT FOUND;
    INSERT INTO gh_cur_again VALUES (rec::text);
  END LOOP;
  CLOSE c;
  d_native := gh_diff('gh_cur_native', 'gh_cur_fwd');
  d_again := gh_diff('gh_cur_again', 'gh_cur_fwd');
  DROP TABLE gh_cur_native, gh_cur_fwd, gh_cur_bwd, gh_cur_again;
  RETURN format('forward=%s backward=%s backward_mismatch=%s diff_vs_native=%s diff_after_rewind=%s',
                n, m, bad_backward, d_native, d_again);
END $$;

-- gh_move(cursor, direction, n): MOVE a cursor forward or backward n rows
-- (all rows when n is NULL); returns how many rows it moved over
CREATE FUNCTION gh_move(c refcursor, direction text, n int DEFAULT NULL) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE moved bigint;
BEGIN
  IF direction = 'forward' AND n IS NULL THEN MOVE FORWARD ALL FROM c;
  ELSIF direction = 'forward' THEN MOVE FORWARD n FROM c;
  ELSIF direction = 'backward' AND n IS NULL THEN MOVE BACKWARD ALL FROM c;
  ELSIF direction = 'backward' THEN MOVE BACKWARD n FROM c;
  ELSE RAISE EXCEPTION 'gh_move: direction is forward or backward';
  END IF;
  GET DIAGNOSTICS moved = ROW_COUNT;
  RETURN moved;
END $$;

-- gh_slow(a, b): true, after a short sleep (a join qual that makes a join slow)
CREATE FUNCTION gh_slow(a int, b int) RETURNS bool LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_sleep(0.001);
  RETURN true;
END $$;

-- gh_parallel_joins(query): GpuHashJoin nodes of the gpuhash plan that lie
-- below a Gather or Gather Merge (found by the plan text's indentation)
CREATE FUNCTION gh_parallel_joins(query text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
  l text;
  ind int;
  gather_ind int := NULL;
  n int := 0;
BEGIN
  FOR l IN SELECT * FROM gh_plan_lines(query, 'gpuhash') LOOP
    ind := length(l) - length(ltrim(l));
    IF l ~ '^\s*(->\s+)?[A-Z]' AND l !~ '^\s*[A-Za-z ]+:' THEN   -- a node line
      IF gather_ind IS NOT NULL AND ind <= gather_ind THEN gather_ind := NULL; END IF;
      IF l ~ 'Gather' AND gather_ind IS NULL THEN gather_ind := ind;
      ELSIF l ~ 'GpuHashJoin' AND gather_ind IS NOT NULL THEN n := n + 1;
      END IF;
    END IF;
  END LOOP;
  RETURN n;
END $$;

-- gh_check_prepared(native_stmt, gpu_stmt, args): runs two prepared
-- statements of the same query, one prepared for native and one for
-- gpuhash planning, with the same arguments; returns the row count and the
-- multiset difference.  The mode is set before each EXECUTE so that a
-- re-plan (after a cache invalidation) keeps the statement's mode.
CREATE FUNCTION gh_check_prepared(native_stmt text, gpu_stmt text, args text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  saved_enabled text := current_setting('gpuhash.enabled');
  saved_force text := current_setting('gpuhash.force_join');
  nrows bigint;
  d bigint;
BEGIN
  PERFORM gh_set_mode('native');
  EXECUTE format('CREATE TEMP TABLE gh_p_native AS EXECUTE %I(%s)', native_stmt, args);
  GET DIAGNOSTICS nrows = ROW_COUNT;
  PERFORM gh_set_mode('gpuhash');
  EXECUTE format('CREATE TEMP TABLE gh_p_gpu AS EXECUTE %I(%s)', gpu_stmt, args);
  PERFORM set_config('gpuhash.enabled', saved_enabled, false);
  PERFORM set_config('gpuhash.force_join', saved_force, false);
  CREATE TEMP TABLE gh_p_native_r AS SELECT t::text AS r FROM gh_p_native t;
  CREATE TEMP TABLE gh_p_gpu_r AS SELECT t::text AS r FROM gh_p_gpu t;
  d := gh_diff('gh_p_native_r', 'gh_p_gpu_r');
  DROP TABLE gh_p_native, gh_p_gpu, gh_p_native_r, gh_p_gpu_r;
  RETURN format('rows=%s diff=%s', nrows, d);
END $$;

-- gh_check_with(name, value, query): gh_check with one more setting, for
-- this check only
CREATE FUNCTION gh_check_with(name text, value text, query text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  saved text := current_setting(name);
  res text;
BEGIN
  PERFORM set_config(name, value, false);
  res := gh_check(query);
  PERFORM set_config(name, saved, false);
  RETURN res;
END $$;

-- gh_check_dml(base, dml): runs a data-modifying statement (dml, with %1$s
-- for the target table's name) on two copies of table base, one natively
-- and one under gpuhash, and compares the copies afterwards and the
-- statements' row counts.  gpu_joins counts the GpuHashJoins of the
-- statement's gpuhash plan (EXPLAIN without ANALYZE: not executed).
CREATE FUNCTION gh_check_dml(base text, dml text, min_gpu_joins int DEFAULT 1) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  saved_enabled text := current_setting('gpuhash.enabled');
  saved_force text := current_setting('gpuhash.force_join');
  n_gpu int;
  nrows bigint;
  grows bigint;
  d bigint;
  res text;
BEGIN
  EXECUTE format('CREATE TABLE gh_dml_native AS SELECT * FROM %s', base);
  EXECUTE format('CREATE TABLE gh_dml_gpu AS SELECT * FROM %s', base);
  ANALYZE gh_dml_native, gh_dml_gpu;
  n_gpu := gh_plan_count(format(dml, 'gh_dml_gpu'), 'gpuhash');
  PERFORM gh_set_mode('native');
  EXECUTE format(dml, 'gh_dml_native');
  GET DIAGNOSTICS nrows = ROW_COUNT;
  PERFORM gh_set_mode('gpuhash');
  EXECUTE format(dml, 'gh_dml_gpu');
  GET DIAGNOSTICS grows = ROW_COUNT;
  PERFORM set_config('gpuhash.enabled', saved_enabled, false);
  PERFORM set_config('gpuhash.force_join', saved_force, false);
  CREATE TEMP TABLE gh_dml_native_r AS SELECT t::text AS r FROM gh_dml_native t;
  CREATE TEMP TABLE gh_dml_gpu_r AS SELECT t::text AS r FROM gh_dml_gpu t;
  d := gh_diff('gh_dml_native_r', 'gh_dml_gpu_r');
  DROP TABLE gh_dml_native, gh_dml_gpu, gh_dml_native_r, gh_dml_gpu_r;
  res := format('gpu_joins=%s rows=%s diff=%s', n_gpu, nrows, d);
  IF grows <> nrows THEN res := res || format(' GPUHASH-ROWS=%s', grows); END IF;
  IF n_gpu < min_gpu_joins THEN
    res := res || format(' VACUOUS(expected at least %s GpuHashJoin)', min_gpu_joins);
  END IF;
  RETURN res;
END $$;

-- gh_jq(jt, a, b, cond): a join query of type jt (inner, left, right, full,
-- semi, anti) between tables a and b (aliased a and b) on cond
CREATE FUNCTION gh_jq(jt text, ta text, tb text, cond text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE jt
    WHEN 'inner' THEN format('SELECT a.id AS a_id, b.id AS b_id FROM %s a JOIN %s b ON %s', ta, tb, cond)
    WHEN 'left' THEN format('SELECT a.id AS a_id, b.id AS b_id FROM %s a LEFT JOIN %s b ON %s', ta, tb, cond)
    WHEN 'right' THEN format('SELECT a.id AS a_id, b.id AS b_id FROM %s a RIGHT JOIN %s b ON %s', ta, tb, cond)
    WHEN 'full' THEN format('SELECT a.id AS a_id, b.id AS b_id FROM %s a FULL JOIN %s b ON %s', ta, tb, cond)
    WHEN 'semi' THEN format('SELECT a.id FROM %s a WHERE EXISTS (SELECT 1 FROM %s b WHERE %s)', ta, tb, cond)
    WHEN 'anti' THEN format('SELECT a.id FROM %s a WHERE NOT EXISTS (SELECT 1 FROM %s b WHERE %s)', ta, tb, cond)
  END
$$;
CREATE TABLE gh_join_types (n int, jt text);
INSERT INTO gh_join_types VALUES (1, 'inner'), (2, 'left'), (3, 'right'), (4, 'full'), (5, 'semi'), (6, 'anti');

------------------------------------------------------------------------------
-- Data.  Deterministic: generate_series and arithmetic only.

-- gh_typed(n, step, modulus, shift, null_every, side): one row per i in
-- 1..n with base value b = (i * step) % modulus + shift (NULL every
-- null_every-th row) spelt in every key type.  side 0 and side 1 spell
-- equal values differently where the type allows it: numeric scale, -0.0,
-- trailing blanks of bpchar, interval units.
CREATE FUNCTION gh_typed(n int, step int, modulus int, shift int, null_every int, side int)
RETURNS TABLE (id int, b int, k_int2 int2, k_int4 int4, k_int8 int8, k_oid oid,
               k_numeric numeric, k_float4 float4, k_float8 float8, k_text text,
               k_varchar varchar, k_bpchar bpchar, k_bytea bytea, k_date date,
               k_timestamp timestamp, k_timestamptz timestamptz, k_interval interval,
               k_uuid uuid, k_bool bool)
LANGUAGE sql AS $$
  SELECT i, x.b,
         x.b::int2,
         x.b,
         x.b::int8 * 4294967311,
         x.b::oid,
         CASE WHEN side = 0 THEN x.b::numeric / 8
              ELSE round(x.b::numeric / 8, 3 + i % 3) END,
         CASE WHEN x.b = 0 AND (i + side) % 2 = 0 THEN '-0'::float4
              WHEN x.b = 7 THEN 'NaN'::float4
              WHEN x.b = 13 THEN 'Infinity'::float4
              WHEN x.b = -13 THEN '-Infinity'::float4
              ELSE (x.b / 4.0)::float4 END,
         CASE WHEN x.b = 0 AND (i + side) % 2 = 0 THEN '-0'::float8
              WHEN x.b = 7 THEN 'NaN'::float8
              WHEN x.b = 13 THEN 'Infinity'::float8
              ELSE x.b::float8 / 3 END,
         CASE WHEN x.b % 50 = 0 THEN repeat('long-', 700) || x.b
              WHEN x.b % 7 = 0 THEN 'ключ-' || x.b
              ELSE 'k' || x.b END,
         ('v' || x.b)::varchar,
         CASE WHEN side = 0 THEN ('c' || x.b)::bpchar
              ELSE ('c' || x.b || repeat(' ', i % 3))::bpchar END,
         CASE WHEN x.b % 3 = 0 THEN '\x00'::bytea || int4send(x.b)
              ELSE decode(md5(x.b::text), 'hex') END,
         date '2000-01-01' + x.b * 37,
         timestamp '2000-01-01' + x.b * interval '1 hour 17 minutes 3.25 seconds',
         timestamptz '2000-01-01 00:00:00+00' + x.b * interval '5 hours 0.5 seconds',
         CASE WHEN side = 0 OR i % 3 = 0 THEN make_interval(days => x.b)
              WHEN i % 3 = 1 THEN make_interval(hours => 24 * x.b)
              WHEN x.b % 30 = 0 THEN make_interval(months => x.b / 30)
              ELSE make_interval(days => x.b) END,
         md5(x.b::text)::uuid,
         x.b % 2 = 0
    FROM generate_series(1, n) i,
         LATERAL (SELECT CASE WHEN i % null_every = 0 THEN NULL
                              ELSE (i * step) % modulus + shift END AS b) x
$$;

-- typed keys: ta has b in [-500, 1499], 3 rows each; tb has b in [0, 2499],
-- 1-2 rows each; NULLs on both sides
CREATE TABLE ta AS SELECT * FROM gh_typed(6000, 1, 2000, -500, 23, 0);
CREATE TABLE tb AS SELECT * FROM gh_typed(4000, 7, 2500, 0, 19, 1);
-- small ones for bool keys (few distinct values: big products otherwise)
CREATE TABLE ta_small AS SELECT * FROM ta WHERE id <= 60;
CREATE TABLE tb_small AS SELECT * FROM tb WHERE id <= 45;
-- empty, same columns
CREATE TABLE t_empty AS SELECT * FROM ta WHERE false;

-- text under a non-deterministic (case-insensitive) ICU collation when the
-- server has ICU; otherwise the collation is deterministic ("C") and the
-- tests that use it print only whether the results agree.
DO $$
BEGIN
  IF (SELECT count(*) FROM pg_collation WHERE collprovider = 'i') > 0 THEN
    BEGIN
      EXECUTE $c$CREATE COLLATION gh_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false)$c$;
    EXCEPTION WHEN OTHERS THEN
      NULL;   -- e.g. a database encoding ICU does not support
    END;
  END IF;
  IF to_regcollation('gh_ci') IS NULL THEN
    EXECUTE $c$CREATE COLLATION gh_ci FROM "C"$c$;
  END IF;
END $$;
CREATE TABLE ci_a AS
  SELECT i AS id,
         (CASE i % 4 WHEN 0 THEN 'Key' WHEN 1 THEN 'KEY' WHEN 2 THEN 'key' ELSE 'kEy' END
          || (i % 300))::text COLLATE gh_ci AS t
    FROM generate_series(1, 3000) i;
CREATE TABLE ci_b AS
  SELECT i AS id,
         (CASE i % 3 WHEN 0 THEN 'KEY' WHEN 1 THEN 'key' ELSE 'Straße' END
          || (i % 400))::text COLLATE gh_ci AS t
    FROM generate_series(1, 2000) i;

-- general tables: fa (20000 rows, k in [0, 4999], 4 each) and fb (10000
-- rows, k in [0, 6999] spread by 3s), with NULL keys, a group column g,
-- values v, a text t and a second key k2
CREATE TABLE fa AS
  SELECT i AS id,
         CASE WHEN i % 97 = 0 THEN NULL ELSE i % 5000 END AS k,
         i % 20 AS g,
         i % 1000 AS v,
         'v' || (i % 5000) AS t,
         i % 7 AS k2
    FROM generate_series(1, 20000) i;
CREATE TABLE fb AS
  SELECT i AS id,
         CASE WHEN i % 89 = 0 THEN NULL ELSE (i * 3) % 7000 END AS k,
         i % 500 AS v,
         'v' || ((i * 3) % 7000) AS t,
         i % 5 AS k2
    FROM generate_series(1, 10000) i;
CREATE TABLE fb_empty AS SELECT * FROM fb WHERE false;

-- duplicates: 1000 rows per key (20 keys) on one side, 2 per key (25
-- keys) on the other
CREATE TABLE dup_build AS
  SELECT i AS id, i % 20 AS k, i % 13 AS v FROM generate_series(1, 20000) i;
CREATE TABLE dup_probe AS
  SELECT i AS id, i % 25 AS k, i % 11 AS v FROM generate_series(1, 50) i;

-- skew: key 0 has 10000 rows, every other key one
CREATE TABLE skew_a AS
  SELECT i AS id, CASE WHEN i <= 10000 THEN 0 ELSE i END AS k, i % 17 AS v
    FROM generate_series(1, 12000) i;
CREATE TABLE skew_b AS
  SELECT i AS id, i % 2500 AS k, i % 19 AS v FROM generate_series(1, 5000) i;

-- multi-column keys of mixed types
CREATE TABLE mk_a AS
  SELECT i AS id, i % 1000 AS a, 'm' || (i % 7) AS b, date '2020-01-01' + i % 5 AS c,
         (i % 11)::int8 AS d, i % 2 = 0 AS e, (i % 800)::numeric / 4 AS n,
         CASE WHEN i % 31 = 0 THEN NULL ELSE i % 13 END AS z
    FROM generate_series(1, 6000) i;
CREATE TABLE mk_b AS
  SELECT i AS id, (i * 3) % 1100 AS a, 'm' || (i % 6) AS b, date '2020-01-01' + i % 4 AS c,
         (i % 12)::int8 AS d, i % 3 = 0 AS e, round(((i * 3) % 900)::numeric / 4, 2) AS n,
         CASE WHEN i % 37 = 0 THEN NULL ELSE i % 12 END AS z
    FROM generate_series(1, 4000) i;

-- cross-type keys: the same base value in types of one hash opfamily and
-- in neighbouring types
CREATE TABLE xt_a AS
  SELECT i AS id, x.b::int2 AS i2, x.b AS i4, x.b::int8 AS i8,
         (x.b / 4.0)::float4 AS f4, (x.b / 4.0)::float8 AS f8,
         ('x' || x.b) AS t, ('x' || x.b)::varchar AS vc, ('x' || x.b)::char(12) AS bc,
         ('x' || x.b)::name AS nm, x.b::numeric AS n, date '2010-01-01' + x.b AS d,
         timestamp '2010-01-01' + x.b * interval '1 day' AS ts
    FROM generate_series(1, 5000) i,
         LATERAL (SELECT CASE WHEN i % 41 = 0 THEN NULL ELSE i % 3000 - 1000 END AS b) x;
CREATE TABLE xt_b AS
  SELECT i AS id, x.b::int2 AS i2, x.b AS i4,
         CASE WHEN i % 5 = 0 THEN x.b::int8 + 4294967296 ELSE x.b::int8 END AS i8,
         (x.b / 4.0)::float4 AS f4,
         CASE WHEN i % 4 = 0 THEN (x.b / 10.0)::float8 ELSE (x.b / 4.0)::float8 END AS f8,
         ('x' || x.b) AS t, ('x' || x.b)::varchar AS vc, ('x' || x.b)::char(12) AS bc,
         ('x' || x.b)::name AS nm, round(x.b::numeric, 1 + i % 2) AS n,
         date '2010-01-01' + x.b AS d,
         timestamp '2010-01-01' + x.b * interval '1 day' + CASE WHEN i % 2 = 0 THEN interval '0' ELSE interval '1 hour' END AS ts
    FROM generate_series(1, 4000) i,
         LATERAL (SELECT CASE WHEN i % 43 = 0 THEN NULL ELSE (i * 7) % 2500 END AS b) x;

-- star: a fact table and four dimensions
CREATE TABLE fact AS
  SELECT i AS id, i % 50 AS d1, i % 40 AS d2, CASE WHEN i % 101 = 0 THEN NULL ELSE i % 30 END AS d3,
         i % 25 AS d4, (i % 97)::numeric AS m
    FROM generate_series(1, 30000) i;
CREATE TABLE dim1 AS SELECT i AS id, 'd1-' || i AS name, i % 5 AS grp FROM generate_series(0, 44) i;
CREATE TABLE dim2 AS SELECT i AS id, 'd2-' || i AS name, i % 4 AS grp FROM generate_series(0, 39) i;
CREATE TABLE dim3 AS SELECT i AS id, 'd3-' || i AS name, i % 3 AS grp FROM generate_series(5, 34) i;
CREATE TABLE dim4 AS SELECT i AS id, 'd4-' || i AS name, i % 2 AS grp FROM generate_series(0, 24) i, generate_series(1, 2) dup;

-- outer rows for rescans
CREATE TABLE outer_g AS SELECT g FROM generate_series(0, 21) g UNION ALL SELECT NULL;

-- a small pair for printing rows
CREATE TABLE pa AS
  SELECT * FROM (VALUES (1, 10, 'one'), (2, 20, 'two'), (3, 30, 'three'), (4, NULL, 'four'),
                        (5, 20, 'five'), (6, 60, 'six')) v(id, k, t);
CREATE TABLE pb AS
  SELECT * FROM (VALUES (101, 20, 'B'), (102, 30, 'C'), (103, 30, 'C2'), (104, NULL, 'N'),
                        (105, 70, 'Z')) v(id, k, t);

ANALYZE;

SELECT count(*) AS ta_rows, count(b) AS ta_keys FROM ta;
SELECT count(*) AS tb_rows, count(b) AS tb_keys FROM tb;
-- the spellings differ but the values are equal: the tests below depend on it
SELECT '-0'::float8 = 0::float8 AS minus_zero, 'NaN'::float4 = 'NaN'::float4 AS nan,
       1.0 = 1.00 AS numeric_scale, 'c1 '::bpchar = 'c1'::bpchar AS bpchar_blanks,
       interval '1 day' = interval '24 hours' AS day_hours,
       interval '1 mon' = interval '30 days' AS month_days;
