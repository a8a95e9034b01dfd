# test/t/003_memory_agg.pl - gpuhash_aggregate keeps its memory within its budget.
#
# With many more groups than work_mem * hash_mem_multiplier holds, a
# backend's peak memory stays within the stated bound, temporary files are
# written, and the rows are native's.
#
#   prove test/t/003_memory_agg.pl [:: GROUPS]     default 10000000 (two rows a group)
#
# Environment: MEMAGG_WORK_MEM (4MB), MEMAGG_DEVICE (the run's device,
# GPUHASH_TEST_DEVICE, by default), MEMAGG_KEYS ("int text": the key types to
# run), MEMAGG_SHAPE_ROWS (5000000 rows for the staging shapes below; 0
# skips them).
#
# The bound.  VmHWM, a process's peak resident memory, counts everything:
# the process itself, the shared buffers it touched (shared_buffers is 16MB
# here) and what the aggregation allocated.  So first a session runs the
# same aggregation over 1000 groups, which fits any budget: its VmHWM is the
# base.  The large aggregation may then add at most
#     2 x budget                 what the budget counts (the groups of a
#                                pass, the batch's arrays and copies: the
#                                batch holds what the budget holds, whatever
#                                gpuhash.batch_rows asks), and beyond it the
#                                copy of the groups made as the rows are
#                                made (device = gpu: their host copy, and the
#                                lookup copy of the GPU's table)
#   + 16 MB                      tape buffers, result rows, the input
#                                query's executor
# above the base.  Native's peak is printed beside it.
#
# Then the staging within the budget (issue 35's F4), at work_mem = 1MB and
# the largest gpuhash.batch_rows, over MEMAGG_SHAPE_ROWS rows: one group
# (count(*), sum(k) with no GROUP BY), as many groups as rows by GpuHashAgg,
# and the same by gpuhash_aggregate.  Each runs natively first; gpuhash's
# peak may exceed native's by at most 2 x budget + 8 MB, plus the difference
# of their fixed overheads (the same query over 1000 rows: a GPU's CUDA
# context) (native keeps its own hash table within the budget too; the rest
# is the difference of two executors), where before the batch took 16 x
# batch_rows rows whatever the budget.  The plan must be GpuHashAgg and the
# rows native's.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use GpuHash::Test;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $groups = $ARGV[0] // 10000000;
my $work_mem = $ENV{MEMAGG_WORK_MEM} // '4MB';
my $device = $ENV{MEMAGG_DEVICE} // gh_device();
my @keys = split ' ', ($ENV{MEMAGG_KEYS} // 'int text');

my ($node, $started) = gh_node(
	'memory_agg', qq{
gpuhash.device = $device
shared_buffers = 16MB
max_parallel_workers_per_gather = 0
jit = off
});
unless ($started)
{
	fail("cluster starts");
	done_testing();
	exit 1;
}

sub q1 { return psql_q($node, @_); }

# run SQL as a script (psql -q, stop on error); true when it ran to the end
sub script
{
	my (undef, undef, $rc) =
	  psql_run($node, [ '-q', '-v', 'ON_ERROR_STOP=1' ], stdin => shift);
	return $rc == 0;
}

my $t0 = time;
unless (
	script(
		qq{
CREATE EXTENSION gpuhash;
CREATE UNLOGGED TABLE m AS
  SELECT g % $groups AS k, 'key ' || (g % $groups) AS t, g AS v
    FROM generate_series(1, 2 * $groups) g;
VACUUM ANALYZE m;
}))
{
	fail("setup");
	done_testing();
	exit 1;
}
note(sprintf("%d rows in %d groups made in %d s; work_mem %s, gpuhash.device %s",
		2 * $groups, $groups, time - $t0, $work_mem, $device));

sub budget_kb
{
	my $wm = shift;
	return q1("SET work_mem = '$wm'",
		"SELECT (setting::bigint * current_setting('hash_mem_multiplier')::float8)::bigint FROM pg_settings WHERE name = 'work_mem'"
	);
}
my $budget_kb = budget_kb($work_mem);

# peak(SQL, WORK_MEM, SETTINGS): runs SQL (which leaves one row in table out)
# in a fresh session; returns (VmHWM_kB, temp_bytes, seconds)
sub peak
{
	my ($sql, $wm, $settings) = @_;
	$settings //= '';
	my ($f) = psql_run(
		$node,
		[ '-q', '-v', 'ON_ERROR_STOP=1', '-At' ],
		merge => 1,
		stdin => qq{
SET work_mem = '$wm';
$settings
SELECT pg_backend_pid() AS pid \\gset
SELECT temp_bytes AS t0 FROM pg_stat_database WHERE datname = current_database() \\gset
\\setenv BPID :pid
SELECT extract(epoch FROM clock_timestamp()) AS s0 \\gset
$sql
SELECT extract(epoch FROM clock_timestamp()) - :s0 AS secs \\gset
\\! awk '\$1 == "VmHWM:" { print "HWM", \$2 }' /proc/\$BPID/status
SELECT pg_stat_force_next_flush();
\\c
SELECT 'TEMP', temp_bytes - :t0, :secs FROM pg_stat_database WHERE datname = current_database();
});
	my ($temp, $secs) = $f =~ /^TEMP\|([^|\n]*)\|([^|\n]*)$/m;
	unless (defined $temp)
	{
		diag($f);
		return (0, 0, 0);
	}
	my ($hwm) = $f =~ /^HWM ([0-9]+)$/m;
	return ($hwm // 0, $temp, $secs);
}

# EXCEPT ALL both ways: the rows in which out_native and out_gpu differ
sub differ
{
	return q1(
		"SELECT count(*) FROM ((TABLE out_native EXCEPT ALL TABLE out_gpu) UNION ALL (TABLE out_gpu EXCEPT ALL TABLE out_native)) x"
	);
}

for my $kt (@keys)
{
	my ($key, $coldef);
	if ($kt eq 'int')
	{
		($key, $coldef) = ('k', "k int, c bigint, s bigint, mi int, ma int");
	}
	elsif ($kt eq 'text')
	{
		($key, $coldef) = ('t', "k text, c bigint, s bigint, mi int, ma int");
	}
	else
	{
		BAIL_OUT("unknown key type $kt");
	}
	my $q = "SELECT $key, count(*), sum(v), min(v), max(v) FROM m GROUP BY $key";
	my $qsmall =
	  "SELECT $key, count(*), sum(v), min(v), max(v) FROM m WHERE k < 1000 GROUP BY $key";
	psql_q0($node, "DROP TABLE IF EXISTS out_native, out_gpu");
	my ($base) = peak(
		"CREATE TEMP TABLE o AS SELECT * FROM gpuhash_aggregate('$qsmall') AS t($coldef);",
		$work_mem);
	my ($nat, $ntemp, $nsecs) =
	  peak("SET gpuhash.enabled = off; CREATE TABLE out_native AS $q;",
		$work_mem);
	my ($gpu, $gtemp, $gsecs) = peak(
		"CREATE TABLE out_gpu AS SELECT * FROM gpuhash_aggregate('$q') AS t($coldef);",
		$work_mem);
	my $bound = $base + 2 * $budget_kb + 16 * 1024;
	note(
		sprintf(
			"%s keys: base %d kB; gpuhash_aggregate VmHWM %d kB, temp files %d MB, %s s; native VmHWM %d kB, temp files %d MB, %s s; budget %d kB; bound %d kB",
			$kt, $base, $gpu, $gtemp / 1048576, $gsecs, $nat,
			$ntemp / 1048576, $nsecs, $budget_kb, $bound));
	ok($gpu > 0 && $gpu <= $bound, "$kt keys: peak within the bound")
	  or diag("$gpu kB > $bound kB");

	# the CPU twin's groups are host memory and must spill; a GPU's groups
	# are device memory, within the device's budget (aggregate_spill.c), so
	# there the budget holds without temporary files
	if ($device eq 'cpu')
	{
		ok($gtemp > 0, "$kt keys: temporary files written")
		  or diag("no temp bytes");
	}
	my $diff = differ();
	my $rows = q1("SELECT count(*) FROM out_gpu");
	ok($diff eq '0' && $rows eq $groups, "$kt keys: rows equal native's")
	  or diag("$diff rows differ, $rows groups");
}

# the staging within the budget: issue 35's three shapes
my $shape_rows = $ENV{MEMAGG_SHAPE_ROWS} // 5000000;
if ($shape_rows <= 0)
{
	done_testing();
	exit 0;
}
my $peak_work_mem = '1MB';
my $max_batch_rows = 16777216;
$t0 = time;
fail("setup") unless script(
	qq{
DROP TABLE IF EXISTS m, out_native, out_gpu;
CREATE UNLOGGED TABLE ms AS SELECT g AS k, g AS v FROM generate_series(1, $shape_rows) g;
VACUUM ANALYZE ms;
});
$budget_kb = budget_kb($peak_work_mem);
note(sprintf("%d rows made in %d s; work_mem %s, gpuhash.batch_rows %d",
		$shape_rows, time - $t0, $peak_work_mem, $max_batch_rows));
my $force =
  "SET gpuhash.force_agg = on; SET gpuhash.batch_rows = $max_batch_rows;";
my $off = "SET gpuhash.enabled = off;";
for my $shape (qw(one groups function))
{
	my ($q, $gq, $gset);
	if ($shape eq 'one')
	{
		$q = "SELECT count(*), sum(k) FROM ms";
		($gq, $gset) = ($q, $force);
	}
	elsif ($shape eq 'groups')
	{
		$q = "SELECT k, count(*), sum(v) FROM ms GROUP BY k";
		($gq, $gset) = ($q, $force);
	}
	else
	{
		$q = "SELECT k, count(*), sum(v) FROM ms GROUP BY k";
		$gq =
		  "SELECT * FROM gpuhash_aggregate('$q') AS t(k int, c bigint, s bigint)";
		$gset = "SET gpuhash.batch_rows = $max_batch_rows;";
	}
	psql_q0($node, "DROP TABLE IF EXISTS out_native, out_gpu");
	my $plan = psql_q($node, { merge => 1 },
		"SET work_mem = '$peak_work_mem'; $gset",
		"EXPLAIN (COSTS OFF) $gq");

	# each side's fixed overhead first: the same query over 1000 rows (on a
	# GPU, gpuhash's includes the CUDA context's host memory)
	(my $small_q = $q) =~
	  s/FROM ms/FROM (SELECT * FROM ms WHERE k <= 1000) ms/g;
	(my $small_gq = $gq) =~
	  s/FROM ms/FROM (SELECT * FROM ms WHERE k <= 1000) ms/g;
	my ($nbase) =
	  peak("CREATE TEMP TABLE o AS $small_q;", $peak_work_mem, $off);
	my ($gbase) =
	  peak("CREATE TEMP TABLE o AS $small_gq;", $peak_work_mem, $gset);
	my ($nat, undef, $nsecs) =
	  peak("CREATE TABLE out_native AS $q;", $peak_work_mem, $off);
	my ($gpu, undef, $gsecs) =
	  peak("CREATE TABLE out_gpu AS $gq;", $peak_work_mem, $gset);
	my $over = $gbase > $nbase ? $gbase - $nbase : 0;
	my $bound = $nat + $over + 2 * $budget_kb + 8 * 1024;
	note(
		sprintf(
			"%s: native VmHWM %d kB, %s s; gpuhash VmHWM %d kB, %s s; fixed overheads over 1000 rows: native %d kB, gpuhash %d kB; bound %d kB",
			$shape, $nat, $nsecs, $gpu, $gsecs, $nbase, $gbase, $bound));
	ok($plan =~ /GpuHashAgg/, "$shape: GpuHashAgg plans it")
	  or diag("plan: $plan");
	ok( $gpu > 0 && $nat > 0 && $gpu <= $bound,
		"$shape: peak within native's + 2 x budget + 8 MB")
	  or diag("$gpu kB > $bound kB");
	my $diff = differ();
	my $rows = q1("SELECT count(*) FROM out_gpu");
	ok($diff eq '0' && $rows =~ /^[0-9]+$/ && $rows > 0,
		"$shape: rows equal native's")
	  or diag("$diff rows differ, $rows rows");
}

done_testing();
