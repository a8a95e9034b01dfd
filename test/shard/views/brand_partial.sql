-- brand_partial: run by every shard: its lineitem and orders joined with
-- its copy of part, grouped by brand, which brand_partial.merge.sql merges
SELECT p_brand, count(*) AS lines, sum(l_extendedprice * (1 - l_discount)) AS revenue
  FROM lineitem JOIN orders ON o_orderkey = l_orderkey JOIN part ON p_partkey = l_partkey
 WHERE o_orderdate < date '1995-01-01'
 GROUP BY p_brand
