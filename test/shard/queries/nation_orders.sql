-- nation_orders: the sharded orders joined with two dimensions, which
-- PostgreSQL 15 joins on the coordinator
SELECT n_name, count(*) AS orders, sum(o_totalprice) AS total
  FROM orders JOIN customer ON c_custkey = o_custkey JOIN nation ON n_nationkey = c_nationkey
 GROUP BY n_name
 ORDER BY n_name;
