-- supply_cost: lineitem joined with partsupp on two columns, neither of
-- them the partition key, and a supplier
SELECT s_nationkey, count(*) AS lines, sum(l_quantity * ps_supplycost) AS cost
  FROM lineitem JOIN partsupp ON ps_partkey = l_partkey AND ps_suppkey = l_suppkey
	   JOIN supplier ON s_suppkey = l_suppkey
 GROUP BY s_nationkey
 ORDER BY s_nationkey;
