-- flags_partial.merge: the coordinator's merge of the shards' groups;
-- same rows as: queries/flags.sql
SELECT l_returnflag, l_linestatus, sum(lines) AS lines, sum(qty) AS qty, sum(disc) / sum(lines) AS disc,
	   min(first_ship) AS first_ship, max(top_price) AS top_price
  FROM flags_partial
 GROUP BY l_returnflag, l_linestatus
 ORDER BY l_returnflag, l_linestatus;
