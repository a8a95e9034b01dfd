-- join_explain: what GpuHashJoin plans look like (EXPLAIN COSTS OFF, and
-- EXPLAIN ANALYZE without timings, through gh_explain / gh_explain_analyze
-- which drop the device-specific lines), real rows side by side for a small
-- pair of tables, and checks that the differential helper itself can fail.
-- no JIT: its cost thresholds are irrelevant here, and some PostgreSQL
-- builds (the GPU host's) have no LLVM
SET jit = off;
SET gpuhash.enabled = off;
SET max_parallel_workers_per_gather = 0;

-- the helper is not vacuous: a query whose rows depend on the mode differs
-- (diff = twice the rows), and a query without a join is flagged
SELECT gh_check('SELECT a.id, current_setting(''gpuhash.force_join'') AS f FROM pa a JOIN pb b ON a.k = b.k') AS must_differ;
SELECT gh_check('SELECT 1 AS one') AS must_be_flagged;
SELECT gh_check('SELECT 1 / 0 AS boom') AS must_report_error;

-- the small pair
SELECT * FROM pa ORDER BY id;
SELECT * FROM pb ORDER BY id;

-- every join type: native rows | gpuhash rows | same
SELECT * FROM gh_side_by_side('SELECT a.id, a.t, b.id, b.t FROM pa a JOIN pb b ON a.k = b.k ORDER BY 1, 3');
SELECT * FROM gh_side_by_side('SELECT a.id, a.t, b.id, b.t FROM pa a LEFT JOIN pb b ON a.k = b.k ORDER BY 1, 3');
SELECT * FROM gh_side_by_side('SELECT a.id, a.t, b.id, b.t FROM pa a RIGHT JOIN pb b ON a.k = b.k ORDER BY 3, 1');
SELECT * FROM gh_side_by_side('SELECT a.id, a.t, b.id, b.t FROM pa a FULL JOIN pb b ON a.k = b.k ORDER BY 1, 3');
SELECT * FROM gh_side_by_side('SELECT a.id, a.t FROM pa a WHERE EXISTS (SELECT 1 FROM pb b WHERE b.k = a.k) ORDER BY 1');
SELECT * FROM gh_side_by_side('SELECT a.id, a.t FROM pa a WHERE NOT EXISTS (SELECT 1 FROM pb b WHERE b.k = a.k) ORDER BY 1');
SELECT * FROM gh_side_by_side('SELECT a.id, a.t, b.id, b.t FROM pa a LEFT JOIN pb b ON a.k = b.k AND b.t <> ''C'' ORDER BY 1, 3');
SELECT * FROM gh_side_by_side('SELECT a.id, a.t, b.id, b.t FROM pa a FULL JOIN pb b ON a.k = b.k AND a.id + 100 <> b.id ORDER BY 1, 3');
-- equal values spelt differently, printed as they are stored
SELECT * FROM gh_side_by_side($$
  SELECT x.v AS a_val, y.v AS b_val FROM
    (VALUES ('-0'::float8), ('NaN'), ('1.5'), (NULL)) x(v)
    JOIN (VALUES ('0'::float8), ('NaN'), ('1.50'), (NULL)) y(v) ON x.v = y.v ORDER BY 1$$);
SELECT * FROM gh_side_by_side($$
  SELECT x.v AS a_val, y.v AS b_val FROM
    (VALUES (1.0::numeric), (2.50), (-0.0)) x(v)
    JOIN (VALUES (1.00::numeric), (2.5), (0)) y(v) ON x.v = y.v ORDER BY 1$$);
SELECT * FROM gh_side_by_side($$
  SELECT concat('[', x.v, ']') AS a_val, concat('[', y.v, ']') AS b_val FROM
    (VALUES ('a '::bpchar), ('b'), ('c  ')) x(v)
    JOIN (VALUES ('a'::bpchar), ('b   '), ('c ')) y(v) ON x.v = y.v ORDER BY 1$$);
SELECT * FROM gh_side_by_side($$
  SELECT x.v AS a_val, y.v AS b_val FROM
    (VALUES ('1 day'::interval), ('1 mon'), ('36 hours')) x(v)
    JOIN (VALUES ('24 hours'::interval), ('30 days'), ('1 day 12 hours')) y(v) ON x.v = y.v ORDER BY 1$$);

-- plan shapes under gpuhash.force_join
SELECT gh_explain('SELECT * FROM pa a JOIN pb b ON a.k = b.k');
SELECT gh_explain('SELECT * FROM pa a LEFT JOIN pb b ON a.k = b.k');
SELECT gh_explain('SELECT * FROM pa a FULL JOIN pb b ON a.k = b.k AND a.id < b.id');
SELECT gh_explain('SELECT * FROM pa a WHERE EXISTS (SELECT 1 FROM pb b WHERE b.k = a.k)');
SELECT gh_explain('SELECT * FROM pa a WHERE NOT EXISTS (SELECT 1 FROM pb b WHERE b.k = a.k)');
SELECT gh_explain('SELECT * FROM mk_a a JOIN mk_b b ON a.a = b.a AND a.b = b.b AND a.c = b.c AND a.n > b.n');
SELECT gh_explain('SELECT * FROM xt_a a JOIN xt_b b ON a.i4 = b.i8 AND lower(a.t) = lower(b.t)');
SELECT gh_explain('SELECT * FROM fa a LEFT JOIN fb b ON a.k = b.k WHERE coalesce(b.v, 0) < 10');
SELECT gh_explain('SELECT count(*) FROM fact f JOIN dim1 d1 ON f.d1 = d1.id JOIN dim2 d2 ON f.d2 = d2.id JOIN dim3 d3 ON f.d3 = d3.id');
-- not hash-joinable: no GpuHashJoin
SELECT gh_explain('SELECT * FROM pa a JOIN pb b ON a.k < b.k');
-- gpuhash.enabled = off: PostgreSQL's own plan, even with force_join on
SET gpuhash.force_join = on;
SELECT gh_plan_count('SELECT * FROM fa a JOIN fb b ON a.k = b.k', 'native') AS native_gpu_joins;
SET gpuhash.enabled = on;
SELECT count(*) AS forced_gpu_joins FROM gh_plan_lines('SELECT * FROM fa a JOIN fb b ON a.k = b.k', 'gpuhash') l
 WHERE l ~ 'GpuHashJoin';
RESET gpuhash.force_join;
SET gpuhash.enabled = off;

-- EXPLAIN ANALYZE: actual row counts of every node (serial plans)
SELECT gh_explain_analyze('SELECT * FROM pa a JOIN pb b ON a.k = b.k');
SELECT gh_explain_analyze('SELECT * FROM pa a FULL JOIN pb b ON a.k = b.k AND a.id < b.id');
SELECT gh_explain_analyze('SELECT * FROM pa a WHERE NOT EXISTS (SELECT 1 FROM pb b WHERE b.k = a.k)');
SELECT gh_explain_analyze('SELECT count(*) FROM fa a JOIN fb b ON a.k = b.k AND a.v < b.v');
-- and the row counts match the native plan's for the same nodes
SELECT gh_explain_analyze('SELECT count(*) FROM fa a JOIN fb b ON a.k = b.k AND a.v < b.v', 'native');

-- EXPLAIN VERBOSE: the output columns of the join and of its inputs; the
-- join computes a target list of expressions itself, with no Result above
SET gpuhash.enabled = on;
SET gpuhash.force_join = on;
EXPLAIN (VERBOSE, COSTS OFF) SELECT a.id, b.t, a.k + b.k AS s FROM pa a LEFT JOIN pb b ON a.k = b.k AND a.id < b.id;
EXPLAIN (VERBOSE, COSTS OFF) SELECT a.id FROM pa a WHERE NOT EXISTS (SELECT 1 FROM pb b WHERE b.k = a.k + 1);
EXPLAIN (VERBOSE, COSTS OFF) SELECT b, x.c FROM pb b JOIN (SELECT k, count(*) AS c FROM pa GROUP BY k) x ON x.k = b.k;
RESET gpuhash.force_join;
-- the expressions the join computes itself, over NULL-extended rows too,
-- give native's rows
SELECT gh_check('SELECT a.id, b.t, a.k + b.k AS s, coalesce(b.t, ''none'') || a.id AS c
                   FROM pa a LEFT JOIN pb b ON a.k = b.k AND a.id < b.id');
SELECT gh_check('SELECT a.id, b.id, coalesce(a.k, b.k) * 2 AS k2, (a.t IS NULL) <> (b.t IS NULL) AS one
                   FROM pa a FULL JOIN pb b ON a.k = b.k');
SET gpuhash.enabled = off;

RESET max_parallel_workers_per_gather;
RESET gpuhash.enabled;
