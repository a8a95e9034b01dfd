-- flags_partial: run by every shard over its own lineitem rows: the groups
-- of queries/flags.sql with partial aggregates (a sum and a count for the
-- average), which flags_partial.merge.sql merges on the coordinator
SELECT l_returnflag, l_linestatus, count(*) AS lines, sum(l_quantity) AS qty, sum(l_discount) AS disc,
	   min(l_shipdate) AS first_ship, max(l_extendedprice) AS top_price
  FROM lineitem
 GROUP BY l_returnflag, l_linestatus
