-- integer and float arithmetic over lineitem's integer columns (gpuhash's
-- own query, not TPC-H's)
select
	l_linestatus,
	sum(l_linenumber * l_suppkey) as int_product,
	max(l_partkey - l_suppkey) as int_diff,
	min(l_suppkey::float8 / l_linenumber) as float_ratio,
	max(l_orderkey::float8 * 0.5 + l_linenumber) as float_mix
from
	lineitem
group by
	l_linestatus
order by
	l_linestatus;
