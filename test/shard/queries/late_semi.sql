-- late_semi: EXISTS on the partition key, a semi-join of co-located
-- tables that goes to the shards, grouped above
SELECT o_orderpriority, count(*) AS orders
  FROM orders
 WHERE o_orderdate >= date '1993-07-01' AND o_orderdate < date '1996-07-01'
   AND EXISTS (SELECT 1 FROM lineitem WHERE l_orderkey = o_orderkey AND l_commitdate < l_receiptdate)
 GROUP BY o_orderpriority
 ORDER BY o_orderpriority;
