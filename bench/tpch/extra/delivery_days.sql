-- days from shipping to receipt and past the commit date, per ship mode:
-- date - date and FILTER on the device (gpuhash's own query, not TPC-H's)
select
	l_shipmode,
	avg(l_receiptdate - l_shipdate) as avg_transit,
	max(l_receiptdate - l_commitdate) as worst_delay,
	count(*) filter (where l_receiptdate > l_commitdate) as late,
	count(*) as lines
from
	lineitem
group by
	l_shipmode
order by
	l_shipmode;
