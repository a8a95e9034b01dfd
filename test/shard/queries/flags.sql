-- flags: a GROUP BY without the partition key: PostgreSQL 15 fetches the
-- rows and aggregates them on the coordinator (partial aggregates per
-- shard, finalized above)
SELECT l_returnflag, l_linestatus, count(*) AS lines, sum(l_quantity) AS qty, avg(l_discount) AS disc,
	   min(l_shipdate) AS first_ship, max(l_extendedprice) AS top_price
  FROM lineitem
 GROUP BY l_returnflag, l_linestatus
 ORDER BY l_returnflag, l_linestatus;
