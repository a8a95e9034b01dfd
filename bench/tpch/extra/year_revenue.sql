-- revenue by year and return flag through CASE over extract(year) and
-- date conditions (gpuhash's own query, not TPC-H's)
select
	l_returnflag,
	sum(case when extract(year from l_shipdate) = 1995 then l_extendedprice * (1 - l_discount) end) as rev_1995,
	sum(case when extract(year from l_shipdate) = 1996 then l_extendedprice * (1 - l_discount) end) as rev_1996,
	sum(case when l_shipdate + 30 < l_receiptdate then 1 else 0 end) as slow_lines
from
	lineitem
group by
	l_returnflag
order by
	l_returnflag;
