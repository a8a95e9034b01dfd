-- brand_partial.merge: the coordinator's merge of the shards' brands;
-- same rows as: queries/brand_revenue.sql
SELECT p_brand, sum(lines) AS lines, sum(revenue) AS revenue
  FROM brand_partial
 GROUP BY p_brand
 ORDER BY p_brand;
