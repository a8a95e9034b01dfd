# test/t/002_memory.pl - GpuHashJoin keeps within work_mem * hash_mem_multiplier.
#
# In a cluster of its own with small shared buffers (16MB, so that the shared
# memory a backend maps stays small), a join whose inner side is about 20
# times work_mem (4MB: an 80 MB inner side) runs serial, with 4 parallel
# workers (each building its own table: gpuhash.shared_build off), in 4
# sessions at once, and with 4 workers sharing a build whose inner side the
# planner underestimates (it goes to shared partitions).  Every backend and
# worker is sampled every 20 ms: RssAnon (its private memory) and VmHWM (the
# kernel's own peak of its resident memory).  With budget the join's
# work_mem * hash_mem_multiplier (8 MB here), each process must stay within
#
#   RssAnon <= base RssAnon + 2 x budget + 8 MB
#   VmHWM   <= base VmHWM + shared_buffers + 2 x budget + 8 MB
#
# where base is a backend of the same cluster that scanned both tables and
# ran a tiny GpuHashJoin (the backend itself and its caches, on a GPU its
# CUDA context's host memory; its scans go through a small ring of buffers,
# while the join's process may touch all of them, hence shared_buffers in the
# second bound), 2 x budget is the inner store and its one copy while it is
# regrouped into the table's order (src/join_batch.c), and 8 MB covers the
# batch files' buffers, the outer side's slot and allocator slack.  Also: the
# joins wrote temp files (pg_stat_database.temp_bytes), and their rows equal
# native's.  GPUHASH_TEST_DEVICE: cpu (default) or gpu; GPUHASH_MEM_INNER_ROWS
# the inner side's rows (800000).
#
# The sampling reads /proc, so the test runs as the user that owns the
# cluster's processes.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use GpuHash::Test;
use PostgreSQL::Test::Utils;
use Test::More;

my $device = gh_device();
my $inner_rows = $ENV{GPUHASH_MEM_INNER_ROWS} // 800000;

my ($node, $started) = gh_node(
	'memory', qq{
gpuhash.device = $device
shared_buffers = 16MB
max_worker_processes = 16
max_parallel_workers = 8
work_mem = 4MB
hash_mem_multiplier = 2.0
jit = off
});
unless ($started)
{
	fail("cluster starts");
	done_testing();
	exit 1;
}

sub q1 { return psql_q($node, @_); }

psql_run(
	$node,
	[ '-q', '-v', 'ON_ERROR_STOP=1' ],
	stdin => qq{
CREATE EXTENSION gpuhash;
CREATE TABLE r (k int4, pad text);
CREATE TABLE s (k int4, w int4);
INSERT INTO r SELECT g, repeat(md5(g::text), 2) FROM generate_series(1, $inner_rows) g;
INSERT INTO s SELECT 1 + (g * 7) % $inner_rows, g FROM generate_series(1, $inner_rows) g;
VACUUM ANALYZE r;
VACUUM ANALYZE s;
});
my $budget_kb = q1(
	"SELECT (pg_size_bytes(current_setting('work_mem')) *
	        current_setting('hash_mem_multiplier')::float8 / 1024)::bigint");
my $inner_mb = q1("SELECT pg_relation_size('r') / 1048576");
note("inner side $inner_mb MB, budget " . int($budget_kb / 1024)
	  . " MB, device $device");

my $query =
  "SELECT count(*), sum(length(r.pad)), sum(s.w) FROM s JOIN r USING (k)";
my $par =
  "SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;
     SET gpuhash.shared_build = off;";

# kb_of(PID, FIELD): a /proc status field in kB (0 if the process is gone)
sub kb_of
{
	my ($pid, $field) = @_;
	open my $fh, '<', "/proc/$pid/status" or return 0;
	while (<$fh>)
	{
		return $1 if /^\Q$field\E:\s+(\d+)/;
	}
	return 0;
}

sub mb { return int(shift() / 1024); }

# run_sessions(NSESSIONS, SQL, BODY): runs SQL (settings) and then BODY (the
# query, by default) in NSESSIONS sessions at once, sampling them and their
# workers; returns peak_kb (largest VmHWM), anon_kb (largest RssAnon),
# results (the distinct result lines) and temp_kb.  Each session waits 0.2 s
# before it ends, so that its VmHWM (a peak) is read even when it ran faster
# than the sampling.
my $outdir = PostgreSQL::Test::Utils::tempdir;

sub run_sessions
{
	my ($ns, $sql, $body) = @_;
	$body //= "SELECT 'RESULT', * FROM ($query) q";
	my $tq =
	  "SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()";
	my $t0 = q1($tq);
	my %r = (peak_kb => 0, anon_kb => 0);
	my @h;
	for my $i (1 .. $ns)
	{
		unlink "$outdir/out.$i";
		push @h,
		  psql_bg(
			$node,
			[
				'-q', '-v', 'ON_ERROR_STOP=1', '-At',
				'-c', "SELECT pg_backend_pid()",
				'-c', $sql,
				'-c', $body,
				'-c', "SELECT pg_stat_force_next_flush()",
				'-c', "SELECT pg_sleep(0.2)",
				'-c', "SELECT 'DONE'"
			],
			out => "$outdir/out.$i");
	}
	my $running = 1;
	while ($running)
	{
		$running = 0;
		for my $i (1 .. $ns)
		{
			my $out = -e "$outdir/out.$i" ? slurp_file("$outdir/out.$i") : '';
			next if $out =~ /^DONE/m || $out =~ /ERROR/;
			$running = 1;
			my ($p) = $out =~ /\A([0-9]+)\n/;
			next unless $p;
			my @workers = split ' ', `pgrep -f "parallel worker for PID $p"`;
			for my $w ($p, @workers)
			{
				my $h = kb_of($w, 'VmHWM');
				$r{peak_kb} = $h if $h > $r{peak_kb};
				my $an = kb_of($w, 'RssAnon');
				$r{anon_kb} = $an if $an > $r{anon_kb};
			}
		}
		sleep_s(0.02);
	}
	$_->finish for @h;
	my %res;
	for my $i (1 .. $ns)
	{
		$res{$_} = 1
		  for grep { /^RESULT|ERROR/ } split /\n/,
		  slurp_file("$outdir/out.$i");
	}
	$r{results} = join("\n", sort keys %res);
	$r{temp_kb} = int((q1($tq) - $t0) / 1024);
	return \%r;
}

# base: a backend's peak after scanning both tables and a tiny GpuHashJoin,
# which on a GPU makes its CUDA context (whose host memory every GPU process
# has whatever the join's size)
my $bs = run_sessions(
	1, "SET gpuhash.force_join = on;",
	"SELECT count(*) FROM r; SELECT count(*) FROM s;
  SELECT count(*) FROM (SELECT * FROM s LIMIT 1000) s2 JOIN (SELECT * FROM r LIMIT 1000) r2 USING (k);"
);
my ($base_kb, $base_anon_kb) = ($bs->{peak_kb}, $bs->{anon_kb});
my $sb_kb = q1(
	"SELECT pg_size_bytes(current_setting('shared_buffers')) / 1024");
my $n = run_sessions(1, "SET gpuhash.enabled = off;");
my $native = $n->{results};
my $bound_kb = $base_kb + $sb_kb + 2 * $budget_kb + 8192;
my $anon_bound_kb = $base_anon_kb + 2 * $budget_kb + 8192;
note("base VmHWM " . mb($base_kb) . " MB, RssAnon " . mb($base_anon_kb)
	  . " MB; bounds " . mb($bound_kb) . " MB and " . mb($anon_bound_kb) . " MB");
note("native: peak VmHWM " . mb($n->{peak_kb}) . " MB, RssAnon "
	  . mb($n->{anon_kb}) . " MB, temp files " . mb($n->{temp_kb}) . " MB");

sub check_run
{
	my ($label, $r) = @_;
	my ($peak, $anon, $temp) = @$r{qw(peak_kb anon_kb temp_kb)};
	note("$label: peak VmHWM " . mb($peak) . " MB, RssAnon " . mb($anon)
		  . " MB, temp files " . mb($temp) . " MB");
	is($r->{results}, $native, "$label: rows equal native's");
	ok( $anon > 0 && $anon <= $anon_bound_kb,
		"$label: every process's private peak ("
		  . mb($anon)
		  . " MB) within base + 2 x budget + 8 MB ("
		  . mb($anon_bound_kb) . " MB)")
	  or diag("RssAnon $anon kB, bound $anon_bound_kb kB");
	ok( $peak > 0 && $peak <= $bound_kb,
		"$label: every process's VmHWM ("
		  . mb($peak)
		  . " MB) within base + shared_buffers + 2 x budget + 8 MB ("
		  . mb($bound_kb) . " MB)")
	  or diag("VmHWM $peak kB, bound $bound_kb kB");
	ok($temp > 0, "$label: temp files written (" . mb($temp) . " MB)")
	  or diag("temp_bytes did not grow");
	return;
}

check_run("serial",
	run_sessions(
		1,
		"SET gpuhash.force_join = on; SET max_parallel_workers_per_gather = 0;"
	));
check_run("4 workers",
	run_sessions(
		1,
		"SET gpuhash.force_join = on; SET max_parallel_workers_per_gather = 4; $par"
	));
check_run("4 sessions at once",
	run_sessions(
		4,
		"SET gpuhash.force_join = on; SET max_parallel_workers_per_gather = 0;"
	));

# a shared build (the participants read the inner side together) whose
# inner side the planner expects to be 0.5 % of what it is (k + 0 = k):
# its participants' chunks pass their budget, both sides go to shared
# partitions, and each participant joins partitions within its own budget
my $shared_query =
  "SELECT count(*), sum(length(r.pad)), sum(s.w) FROM s JOIN (SELECT * FROM r WHERE k + 0 = k) r USING (k)";
my $par4 =
  "SET gpuhash.force_join = on; SET max_parallel_workers_per_gather = 4;
  SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;";
check_run("4 workers, a shared build past its budget",
	run_sessions(1, $par4, "SELECT 'RESULT', * FROM ($shared_query) q"));

# the plan's lines that match RE, squeezed and joined with ';'
sub plan_lines
{
	my ($re, $plan) = @_;
	return join('', map { (my $l = $_) =~ s/ +/ /g; "$l;" }
		  grep { /$re/ } split /\n/, $plan);
}
my $plan = plan_lines(
	qr/Inner Side|Shared Partitions/,
	q1( "SET gpuhash.force_join = on",
		"SET max_parallel_workers_per_gather = 4",
		"SET parallel_setup_cost = 0",
		"SET parallel_tuple_cost = 0",
		"SET min_parallel_table_scan_size = 0",
		"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $shared_query"));
ok( $plan =~ /read by all participants together/
	  && $plan =~ /Shared Partitions: [0-9]+/,
	"that join is a shared build that went to partitions ($plan)")
  or diag($plan);

# the plans were GpuHashJoins, in batches
$plan = plan_lines(
	qr/GpuHashJoin|Batches:/,
	q1( "SET gpuhash.force_join = on",
		"SET max_parallel_workers_per_gather = 0",
		"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $query"));
ok( $plan =~ /GpuHashJoin/
	  && $plan =~
	  /Buckets: \d+\s+Load Factor: \S+\s+Batches: ([2-9]|[1-9][0-9]+)/,
	"the join is a GpuHashJoin in batches ($plan)")
  or diag($plan);

done_testing();
