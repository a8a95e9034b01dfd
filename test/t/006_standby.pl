# test/t/006_standby.pl - the device scan on a hot standby (issue 37).
#
# A snapshot taken during recovery may not trust a page's all-visible bit
# (the primary may have set it for transactions the standby still sees as
# running), so heapgetpage checks every tuple there, and so must the device
# scan (src/heapscan.c).  On a streaming standby of a primary this test
# compares, with PostgreSQL's own scan of the same snapshot:
#   - the device scan's rows (gpuhash_scan_table) and its counts: every page
#     checked tuple by tuple, none trusted as all-visible;
#   - GpuHashAgg over the device scan (gpuhash.force_agg), whose groups must
#     be native's;
# after the primary VACUUMed the table (every page all-visible there), after
# it deleted and updated rows (tuples the standby's checks hide), and inside
# a REPEATABLE READ transaction on the standby that keeps its snapshot while
# the primary deletes and inserts more (hot_standby_feedback keeps the rows
# it still sees from being pruned).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use GpuHash::Test;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $device = gh_device();
my $primary = gh_node(
	'primary', qq{
gpuhash.device = $device
max_parallel_workers_per_gather = 0
}, init => { allows_streaming => 1 });

$primary->safe_psql(
	'postgres', q{
CREATE EXTENSION gpuhash;
CREATE TABLE sb (g int, k int, t text, n numeric, d date);
INSERT INTO sb
SELECT g, g % 7, md5(g::text), g / 3.0, date '2000-01-01' + g % 1000
  FROM generate_series(1, 20000) g;
VACUUM ANALYZE sb;
-- the device scan's rows against PostgreSQL's scan of the same snapshot
CREATE FUNCTION sb_same() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  missing bigint;
  extra bigint;
  n bigint;
BEGIN
  SELECT count(*) INTO missing FROM (SELECT * FROM sb EXCEPT ALL SELECT * FROM gpuhash_scan_table(NULL::sb)) x;
  SELECT count(*) INTO extra FROM (SELECT * FROM gpuhash_scan_table(NULL::sb) EXCEPT ALL SELECT * FROM sb) x;
  SELECT count(*) INTO n FROM sb;
  RETURN format('rows=%s missing=%s extra=%s', n, missing, extra);
END $$;
-- q through GpuHashAgg (and whether it read the table with the device
-- scan) against gpuhash.enabled = off, its groups as a multiset
CREATE FUNCTION sb_agg(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  l text;
  used bool := false;
  g text;
  n text;
BEGIN
  PERFORM set_config('gpuhash.force_agg', 'on', true);
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    IF l ~ 'Device Scan: sb' THEN used := true; END IF;
  END LOOP;
  EXECUTE 'SELECT md5(string_agg(x::text, '','' ORDER BY x::text)) FROM (' || q || ') x' INTO g;
  PERFORM set_config('gpuhash.enabled', 'off', true);
  EXECUTE 'SELECT md5(string_agg(x::text, '','' ORDER BY x::text)) FROM (' || q || ') x' INTO n;
  PERFORM set_config('gpuhash.enabled', 'on', true);
  RETURN CASE WHEN used THEN 'device scan, ' ELSE 'NO device scan, ' END ||
         CASE WHEN g IS NOT DISTINCT FROM n THEN 'same' ELSE 'DIFFERENT' END;
END $$;
});

my $standby = gh_standby($primary, 'standby', "hot_standby_feedback = on\n");
$primary->wait_for_catchup($standby);

my $AGG =
  "SELECT k, count(*), sum(n), min(t), max(d), sum(g) FROM sb GROUP BY k";

# standby_same(QUERY, ROWS, WHEN, WHAT): on the standby (QUERY runs a
# query there and returns its output), the device scan returns the ROWS
# rows PostgreSQL's scan sees (WHAT says which), and GpuHashAgg over it
# gives native's groups
sub standby_same
{
	my ($query, $rows, $when, $what) = @_;
	is($query->("SELECT sb_same()"), "rows=$rows missing=0 extra=0",
		"standby$when: the device scan returns $what");
	is($query->("SELECT sb_agg('$AGG')"), 'device scan, same',
		"standby$when: GpuHashAgg over the device scan gives native's groups");
	return;
}
my $on_standby = sub { return $standby->safe_psql('postgres', shift) };

# the primary's own scan trusts its all-visible pages: the test's premise
is( $primary->safe_psql('postgres',
		"SELECT pages_checked = 0 AND pages > 10 FROM gpuhash_scan_counts(NULL::sb)"),
	't',
	"primary: after VACUUM every page goes as it is (none checked tuple by tuple)");

# the standby reads the same table: every page checked
standby_same($on_standby, 20000, ' after VACUUM', "the table's rows");
is( $standby->safe_psql('postgres',
		"SELECT pages_checked = pages AND pages > 10 AND rows_device = 20000 FROM gpuhash_scan_counts(NULL::sb)"),
	't',
	"standby: no page is trusted as all-visible during recovery, each is checked tuple by tuple");

# deleted and updated rows, not vacuumed: the standby's checks hide them
$primary->safe_psql(
	'postgres', q{
DELETE FROM sb WHERE g % 5 = 0;
UPDATE sb SET k = k + 100, n = -n WHERE g % 11 = 0;
});
$primary->wait_for_catchup($standby);
standby_same($on_standby, 16000, ' after DELETE and UPDATE', 'the visible rows');
is( $standby->safe_psql('postgres',
		"SELECT tuples_hidden > 0 AND rows_device + rows_host = 16000 FROM gpuhash_scan_counts(NULL::sb)"),
	't',
	"standby: the checks hide what the snapshot does not see (deleted rows and old versions the primary has not pruned)");

# a REPEATABLE READ transaction on the standby keeps its snapshot while the
# primary goes on
my $rr = $standby->background_psql('postgres');
$rr->query_safe("BEGIN ISOLATION LEVEL REPEATABLE READ");
is($rr->query_safe("SELECT count(*) FROM sb"), '16000',
	"standby: the REPEATABLE READ transaction's snapshot");
$primary->safe_psql(
	'postgres', q{
DELETE FROM sb WHERE g % 3 = 0;
INSERT INTO sb SELECT g, g % 9, md5(g::text), g, date '2001-01-01' FROM generate_series(20001, 23000) g;
});
$primary->wait_for_catchup($standby);
standby_same(sub { return $rr->query_safe(shift) }, 16000, ', REPEATABLE READ',
	"the transaction's snapshot's rows after more changes were replayed");
$rr->query_safe("COMMIT");
$rr->quit;
standby_same($on_standby, 13667, ', a new snapshot', 'the rows after the replayed changes');

$standby->stop;
$primary->stop;
ok(!grep({ /PANIC|TRAP|terminated by signal/ } slurp_file($primary->logfile), slurp_file($standby->logfile)),
	"no crash on either server");
done_testing();
