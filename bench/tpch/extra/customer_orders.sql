-- orders per customer with the customer's columns, which depend on the
-- grouped primary key (gpuhash's own query, not TPC-H's)
select
	c_custkey,
	c_name,
	c_mktsegment,
	count(*) as orders,
	sum(o_totalprice) as total
from
	customer,
	orders
where
	o_custkey = c_custkey
group by
	c_custkey
order by
	total desc,
	c_custkey
limit 20;
