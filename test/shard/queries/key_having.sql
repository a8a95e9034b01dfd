-- key_having: the partition key's groups with a HAVING, as a subquery of
-- an IN: the aggregate goes to the shards, the semi-join stays above
SELECT o_custkey, count(*) AS orders, sum(o_totalprice) AS total
  FROM orders
 WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem GROUP BY l_orderkey HAVING sum(l_quantity) > 150)
 GROUP BY o_custkey
 ORDER BY total DESC, o_custkey;
