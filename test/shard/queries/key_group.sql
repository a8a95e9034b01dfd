-- key_group: a GROUP BY of the partition key over the co-located join of
-- orders and lineitem: the join and the aggregate go to the shards whole
SELECT o_orderkey, o_orderdate, count(*) AS lines, sum(l_extendedprice * (1 - l_discount)) AS revenue
  FROM orders JOIN lineitem ON l_orderkey = o_orderkey
 WHERE l_shipdate > date '1995-03-15'
 GROUP BY o_orderkey, o_orderdate
 ORDER BY revenue DESC, o_orderkey;
