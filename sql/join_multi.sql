-- join_multi: the join inside bigger queries, gpuhash against native:
-- multi-way joins (3-5 tables, the join at any depth, mixed join types),
-- aggregates over joins, CTEs, UNION ALL, joins of grouped subqueries,
-- self-joins.  gh_check's gpu_joins counts every GpuHashJoin of the plan.
-- no JIT: its cost thresholds are irrelevant here, and some PostgreSQL
-- builds (the GPU host's) have no LLVM
SET jit = off;
SET gpuhash.enabled = off;

-- star: fact with 1, 2, 3 and 4 dimensions
SELECT gh_check('SELECT f.id, d1.name FROM fact f JOIN dim1 d1 ON f.d1 = d1.id', 1) AS star1;
SELECT gh_check('SELECT f.id, d1.name AS n1, d2.name AS n2 FROM fact f
                   JOIN dim1 d1 ON f.d1 = d1.id JOIN dim2 d2 ON f.d2 = d2.id', 2) AS star2;
SELECT gh_check('SELECT f.id, d1.name AS n1, d2.name AS n2, d3.name AS n3 FROM fact f
                   JOIN dim1 d1 ON f.d1 = d1.id JOIN dim2 d2 ON f.d2 = d2.id
                   JOIN dim3 d3 ON f.d3 = d3.id', 3) AS star3;
SELECT gh_check('SELECT f.id, d1.name AS n1, d2.name AS n2, d3.name AS n3, d4.name AS n4 FROM fact f
                   JOIN dim1 d1 ON f.d1 = d1.id JOIN dim2 d2 ON f.d2 = d2.id
                   JOIN dim3 d3 ON f.d3 = d3.id JOIN dim4 d4 ON f.d4 = d4.id', 4) AS star4;
-- mixed join types in one query
SELECT gh_check('SELECT f.id, d1.name AS n1, d3.name AS n3, d4.name AS n4 FROM fact f
                   LEFT JOIN dim1 d1 ON f.d1 = d1.id
                   LEFT JOIN dim3 d3 ON f.d3 = d3.id
                   JOIN dim4 d4 ON f.d4 = d4.id AND d4.grp = 1', 3) AS star_left_inner;
SELECT gh_check('SELECT f.id, d1.id AS i1, d3.id AS i3 FROM dim1 d1
                   FULL JOIN fact f ON f.d1 = d1.id AND f.id % 7 = 0
                   FULL JOIN dim3 d3 ON f.d3 = d3.id', 2) AS star_full;
SELECT gh_check('SELECT f.id FROM fact f
                  WHERE EXISTS (SELECT 1 FROM dim3 d3 WHERE d3.id = f.d3 AND d3.grp = 2)
                    AND NOT EXISTS (SELECT 1 FROM dim1 d1 WHERE d1.id = f.d1 AND d1.grp = 0)
                    AND f.d2 IN (SELECT id FROM dim2 WHERE grp <> 3)', 3) AS star_semi_anti;
-- a chain: the result of one join is the input of the next, on a
-- different key, and joins nested on both sides of a join (bushy)
SELECT gh_check('SELECT a.id AS a_id, b.id AS b_id, c.id AS c_id FROM fa a
                   JOIN fb b ON a.k = b.k
                   JOIN fa c ON b.v = c.v AND c.g = 1', 2) AS chain3;
SELECT gh_check('SELECT count(*) AS n, sum(x.v) AS sv FROM
                   (SELECT a.k, a.v FROM fa a JOIN fb b ON a.k = b.k) x
                   JOIN (SELECT c.k FROM fa c JOIN dup_build d ON c.k2 = d.k WHERE d.id < 50) y
                   ON x.k = y.k', 3) AS bushy;
SELECT gh_check('SELECT a.id AS a_id, b.id AS b_id, c.id AS c_id, d.id AS d_id, e.id AS e_id FROM fa a
                   JOIN fb b ON a.k = b.k
                   LEFT JOIN mk_a c ON c.a = a.v
                   JOIN xt_a d ON d.i4 = b.v AND d.id < 2000
                   LEFT JOIN dim1 e ON e.id = a.g
                  WHERE a.g < 5', 4) AS five_way;

-- aggregates over joins
SELECT gh_check('SELECT count(*) AS n, sum(a.v) AS sa, sum(b.v) AS sb, min(b.t) AS mt, max(a.t) AS xt
                   FROM fa a JOIN fb b ON a.k = b.k') AS agg_plain;
SELECT gh_check('SELECT a.g, count(*) AS n, sum(b.v) AS sb, avg(b.v) AS ab
                   FROM fa a LEFT JOIN fb b ON a.k = b.k GROUP BY a.g') AS agg_group;
SELECT gh_check('SELECT d1.grp, d2.grp AS grp2, count(*) AS n, sum(f.m) AS sm
                   FROM fact f JOIN dim1 d1 ON f.d1 = d1.id JOIN dim2 d2 ON f.d2 = d2.id
                  GROUP BY d1.grp, d2.grp HAVING count(*) > 100', 2) AS agg_star;
SELECT gh_check('SELECT count(DISTINCT b.k) AS nk, string_agg(DISTINCT b.t, '','' ORDER BY b.t) AS ts
                   FROM fa a JOIN fb b ON a.k = b.k WHERE a.g = 2 AND b.v < 20') AS agg_distinct;
SELECT gh_check('SELECT a.g, count(b.id) AS matched, count(*) - count(b.id) AS unmatched
                   FROM fa a LEFT JOIN fb b ON a.k = b.k GROUP BY ROLLUP (a.g)') AS agg_rollup;
SELECT gh_check('SELECT b.k2, count(*) FILTER (WHERE a.id IS NULL) AS lonely_b, count(*) AS n
                   FROM fa a FULL JOIN fb b ON a.k = b.k GROUP BY b.k2') AS agg_full;
-- a window function over a join
SELECT gh_check('SELECT a.id, b.id AS b_id, rank() OVER (PARTITION BY a.g ORDER BY a.id, b.id) AS r
                   FROM fa a JOIN fb b ON a.k = b.k WHERE a.g < 3') AS window_over_join;

-- CTEs: materialized and inlined, the join inside and the CTE joined
SELECT gh_check('WITH j AS MATERIALIZED (SELECT a.id, a.k, b.v FROM fa a JOIN fb b ON a.k = b.k)
                 SELECT j.id, j.v, d.id AS d_id FROM j JOIN dup_build d ON d.k = j.v % 20 AND d.id < 30', 2) AS cte_materialized;
SELECT gh_check('WITH j AS NOT MATERIALIZED (SELECT a.id, a.k, b.v FROM fa a JOIN fb b ON a.k = b.k)
                 SELECT j.id, j.v FROM j WHERE j.v < 50') AS cte_inlined;
SELECT gh_check('WITH s AS (SELECT k, count(*) AS c FROM fa GROUP BY k)
                 SELECT b.id, s.c FROM fb b LEFT JOIN s ON s.k = b.k') AS cte_grouped;
SELECT gh_check('WITH RECURSIVE r(n, k) AS (SELECT 1, k FROM fb WHERE id <= 20 UNION ALL
                   SELECT r.n + 1, b.v FROM r JOIN fb b ON b.k = r.k * 3 % 7000 WHERE r.n < 6)
                 SELECT n, k, count(*) AS c FROM r GROUP BY n, k') AS cte_recursive;

-- UNION ALL of joins, and a join over a UNION ALL
SELECT gh_check('SELECT a.id, b.v FROM fa a JOIN fb b ON a.k = b.k
                 UNION ALL SELECT a.id, b.v FROM fa a LEFT JOIN fb b ON a.t = b.t AND a.g = 3
                 UNION ALL SELECT b.id, NULL FROM fb b WHERE NOT EXISTS (SELECT 1 FROM fa a WHERE a.k = b.k)', 3) AS union_all_of_joins;
SELECT gh_check('SELECT u.src, u.id, b.id AS b_id FROM
                   (SELECT ''a'' AS src, id, k FROM fa UNION ALL SELECT ''s'', id, k FROM skew_b) u
                   JOIN fb b ON u.k = b.k') AS join_of_union_all;
SELECT gh_check('SELECT a.id, b.v FROM fa a JOIN fb b ON a.k = b.k
                 UNION SELECT a.id, b.v FROM fa a JOIN fb b ON a.k = b.k + 1', 2) AS union_distinct;

-- joins of subqueries with GROUP BY (the grouped side as build and probe)
SELECT gh_check('SELECT x.k, x.c, y.s FROM
                   (SELECT k, count(*) AS c FROM fa GROUP BY k) x
                   JOIN (SELECT k, sum(v) AS s FROM fb GROUP BY k) y ON x.k = y.k') AS grouped_both;
SELECT gh_check('SELECT a.id, x.c FROM fa a
                   JOIN (SELECT k2, count(*) AS c FROM fb GROUP BY k2) x ON a.k2 = x.k2 AND a.g < 5') AS grouped_one;
SELECT gh_check('SELECT x.g, x.n, y.n AS m FROM
                   (SELECT g, count(*) AS n FROM fa GROUP BY g) x
                   FULL JOIN (SELECT v % 30 AS g, count(*) AS n FROM fb GROUP BY 1) y ON x.g = y.g') AS grouped_full;
SELECT gh_check('SELECT d.k, d.c FROM (SELECT DISTINCT k, k2 AS c FROM fa) d
                   WHERE d.k IN (SELECT k FROM fb WHERE v = 7)') AS distinct_semi;

-- self-joins
SELECT gh_check('SELECT a.id AS a_id, b.id AS b_id FROM fa a JOIN fa b ON a.k = b.k AND a.id < b.id') AS self_join;
SELECT gh_check('SELECT a.id AS a_id, b.id AS b_id FROM fa a LEFT JOIN fa b ON a.k = b.v AND a.g = b.g AND b.id % 4 = 0') AS self_left;
SELECT gh_check('SELECT a.id FROM fa a WHERE NOT EXISTS (SELECT 1 FROM fa b WHERE b.k = a.k + 1)') AS self_anti;
SELECT gh_check('SELECT a.id AS a_id, b.id AS b_id, c.id AS c_id FROM fb a JOIN fb b ON a.k = b.v JOIN fb c ON b.k = c.v', 2) AS self_three;

RESET gpuhash.enabled;
