-- ontime_anti: NOT EXISTS on the partition key, an anti-join of
-- co-located tables
SELECT o_orderstatus, count(*) AS orders, sum(o_totalprice) AS total
  FROM orders
 WHERE NOT EXISTS (SELECT 1 FROM lineitem WHERE l_orderkey = o_orderkey AND l_receiptdate > l_commitdate)
 GROUP BY o_orderstatus
 ORDER BY o_orderstatus;
