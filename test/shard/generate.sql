-- test/shard/generate.sql - rows for bench/tpch/schema.sql's eight tables
-- written by SQL, for where TPC-H's own generator (dbgen) is absent: the
-- same tables, keys and cardinalities per unit of scale as TPC-H's
-- (2000 parts, 100 suppliers, 8000 partsupp rows, 1500 customers, 15000
-- orders with 1 to 7 lineitems each, at scale 0.01, about 60000 lineitems)
-- and values in TPC-H's ranges, derived from the keys by arithmetic, so
-- that every run loads the same rows.  Not TPC-H's data: its queries'
-- answers differ.  psql variable scale: hundredths of TPC-H's scale
-- factor (psql -v scale=1 for 0.01).  Run after schema.sql; keys and
-- statistics follow here.

SET client_min_messages = warning;

INSERT INTO region
SELECT g, (ARRAY['AFRICA', 'AMERICA', 'ASIA', 'EUROPE', 'MIDDLE EAST'])[g + 1], 'region ' || g
  FROM generate_series(0, 4) g;

INSERT INTO nation
SELECT g, 'NATION' || lpad(g::text, 2, '0'), g % 5, 'nation ' || g
  FROM generate_series(0, 24) g;

INSERT INTO part
SELECT g, 'part ' || (ARRAY['almond', 'blue', 'forest', 'green', 'lace', 'navy'])[1 + g % 6] || ' ' || g,
	   'Manufacturer#' || (1 + g % 5), 'Brand#' || (1 + g % 5) || (1 + g / 5 % 5),
	   (ARRAY['STANDARD', 'SMALL', 'MEDIUM', 'LARGE', 'ECONOMY', 'PROMO'])[1 + g % 6] || ' ' ||
	   (ARRAY['ANODIZED', 'BURNISHED', 'PLATED', 'POLISHED', 'BRUSHED'])[1 + g / 6 % 5] || ' ' ||
	   (ARRAY['TIN', 'NICKEL', 'BRASS', 'STEEL', 'COPPER'])[1 + g / 30 % 5],
	   1 + g % 50, (ARRAY['SM', 'MED', 'LG', 'JUMBO', 'WRAP'])[1 + g % 5] || ' ' ||
	   (ARRAY['CASE', 'BOX', 'BAG', 'JAR', 'PKG', 'PACK', 'CAN', 'DRUM'])[1 + g / 5 % 8],
	   900 + (g % 20001) / 100.0, 'part ' || g
  FROM generate_series(1, (2000 * :scale)::int) g;

INSERT INTO supplier
SELECT g, 'Supplier#' || lpad(g::text, 9, '0'), 'address ' || g, g % 25,
	   lpad((10 + g % 25)::text, 2, '0') || '-' || lpad((g * 7 % 1000)::text, 3, '0') || '-555-0100',
	   (g * 7919 % 1099999) / 100.0 - 999.99, 'supplier ' || g
  FROM generate_series(1, (100 * :scale)::int) g;

-- four suppliers per part, as TPC-H's partsupp has
INSERT INTO partsupp
SELECT p, 1 + (p + s * ((100 * :scale)::int / 4 + (p - 1) / (100 * :scale)::int)) % (100 * :scale)::int,
	   1 + (p * 31 + s * 17) % 9999, 1 + (p * 13 + s * 7) % 100000 / 100.0, 'partsupp ' || p || ' ' || s
  FROM generate_series(1, (2000 * :scale)::int) p, generate_series(0, 3) s;

INSERT INTO customer
SELECT g, 'Customer#' || lpad(g::text, 9, '0'), 'address ' || g, g % 25,
	   lpad((10 + g % 25)::text, 2, '0') || '-' || lpad((g * 11 % 1000)::text, 3, '0') || '-555-0199',
	   (g * 6007 % 1099999) / 100.0 - 999.99,
	   (ARRAY['AUTOMOBILE', 'BUILDING', 'FURNITURE', 'MACHINERY', 'HOUSEHOLD'])[1 + g % 5], 'customer ' || g
  FROM generate_series(1, (1500 * :scale)::int) g;

-- a third of the customers place no order, as in TPC-H
INSERT INTO orders
SELECT g, 1 + (g * 7 % ((1500 * :scale)::int * 2 / 3)) * 3 / 2,
	   CASE WHEN g % 4 = 0 THEN 'O' WHEN g % 4 = 1 THEN 'F' ELSE 'P' END,
	   (g * 104729 % 50000000) / 100.0 + 850,
	   date '1992-01-01' + (g * 37 % 2406),
	   (ARRAY['1-URGENT', '2-HIGH', '3-MEDIUM', '4-NOT SPECIFIED', '5-LOW'])[1 + g % 5],
	   'Clerk#' || lpad((1 + g % 1000)::text, 9, '0'), 0, 'order ' || g
  FROM generate_series(1, (15000 * :scale)::int) g;

INSERT INTO lineitem
SELECT o_orderkey, l_partkey,
	   1 + (l_partkey + (l % 4) * ((100 * :scale)::int / 4 + (l_partkey - 1) / (100 * :scale)::int)) % (100 * :scale)::int,
	   l, l_quantity, l_quantity * (900 + (l_partkey % 20001) / 100.0), (o_orderkey + l) % 11 / 100.0,
	   (o_orderkey * l) % 9 / 100.0,
	   CASE WHEN receipt > date '1995-06-17' THEN 'N' WHEN (o_orderkey + l) % 2 = 0 THEN 'R' ELSE 'A' END,
	   CASE WHEN ship > date '1995-06-17' THEN 'O' ELSE 'F' END,
	   ship, o_orderdate + 30 + (o_orderkey + l) % 61, receipt,
	   (ARRAY['DELIVER IN PERSON', 'COLLECT COD', 'NONE', 'TAKE BACK RETURN'])[1 + (o_orderkey + l) % 4],
	   (ARRAY['REG AIR', 'AIR', 'RAIL', 'SHIP', 'TRUCK', 'MAIL', 'FOB'])[1 + (o_orderkey * l) % 7],
	   'lineitem ' || o_orderkey || ' ' || l
  FROM orders, generate_series(1, 1 + o_orderkey % 7) l,
	   LATERAL (SELECT 1 + (o_orderkey * 31 + l * 17) % (2000 * :scale)::int AS l_partkey,
					   1 + (o_orderkey * l) % 50 AS l_quantity,
					   o_orderdate + 1 + (o_orderkey * l) % 121 AS ship) a,
	   LATERAL (SELECT ship + 1 + (o_orderkey * l * 3) % 30 AS receipt) b;

ALTER TABLE region ADD PRIMARY KEY (r_regionkey);
ALTER TABLE nation ADD PRIMARY KEY (n_nationkey);
ALTER TABLE part ADD PRIMARY KEY (p_partkey);
ALTER TABLE supplier ADD PRIMARY KEY (s_suppkey);
ALTER TABLE partsupp ADD PRIMARY KEY (ps_partkey, ps_suppkey);
ALTER TABLE customer ADD PRIMARY KEY (c_custkey);
ALTER TABLE orders ADD PRIMARY KEY (o_orderkey);
ALTER TABLE lineitem ADD PRIMARY KEY (l_orderkey, l_linenumber);
CREATE INDEX ON orders (o_custkey);
CREATE INDEX ON lineitem (l_partkey, l_suppkey);
INSERT INTO tpch_meta (scale, done, source, loaded_at)
	VALUES (:scale / 100.0, true, 'test/shard/generate.sql', now());
VACUUM (FREEZE, ANALYZE);
