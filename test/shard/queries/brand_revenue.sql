-- brand_revenue: the co-located join of lineitem and orders, then a
-- dimension (part) and a GROUP BY of its column
SELECT p_brand, count(*) AS lines, sum(l_extendedprice * (1 - l_discount)) AS revenue
  FROM lineitem JOIN orders ON o_orderkey = l_orderkey JOIN part ON p_partkey = l_partkey
 WHERE o_orderdate < date '1995-01-01'
 GROUP BY p_brand
 ORDER BY p_brand;
