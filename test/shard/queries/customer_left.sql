-- customer_left: a dimension LEFT JOIN the sharded orders, counted per
-- number of orders (customers without orders included)
SELECT c_count, count(*) AS customers
  FROM (SELECT c_custkey, count(o_orderkey) AS c_count
		  FROM customer LEFT JOIN orders ON c_custkey = o_custkey AND o_comment NOT LIKE '%9%'
		 GROUP BY c_custkey) c
 GROUP BY c_count
 ORDER BY customers DESC, c_count DESC;
