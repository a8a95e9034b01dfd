# test/t/007_monitoring.pl - what the statistics views (src/monitor.c) need a
# cluster of their own for: the fallbacks' LOG lines, the GPU service's
# state across a restart, and gpuhash without shared_preload_libraries.
#
# GPUHASH_TEST_DEVICE = cpu (default), gpu or auto.  Checks: a fallback is
# logged at LOG once per reason, operator and database, however many
# sessions fall back, and once more after gpuhash_stat_reset(), while every
# fallen-back run is counted; a second database logs its own; the service
# shows the tables it holds while a join holds one, and "restarting" then
# "up" with one restart after it is terminated; without preloading, the
# views show a backend its own counts only, the service is "off", and each
# backend logs a fallback once.
#
# The fallback is a table past gpuhash.device_memory_limit: on the GPU the
# join's table goes to the CPU twin; on the twin, under the test-only
# gpuhash.budget_cpu_twin, the twin's table counts as the GPU's would.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use GpuHash::Test;
use PostgreSQL::Test::Utils;
use Test::More;

my $device = gh_device();
my $fallback_re =
  qr/LOG:  GpuHashJoin ran on the CPU twin instead of the GPU: the hash table was larger than/;

my ($node, $started) = gh_node(
	'monitoring', qq{
gpuhash.device = $device
gpuhash.gpu_service = on
max_parallel_workers_per_gather = 0
});
ok($started, "preloaded cluster starts") or do { done_testing(); exit 1; };

# the data and the extension in two databases
for my $db ('mon_a', 'mon_b')
{
	psql_q($node, "CREATE DATABASE $db");
	psql_q(
		$node,
		{ db => $db },
		'CREATE EXTENSION gpuhash',
		'CREATE TABLE o AS SELECT g AS id, g % 4000 AS k FROM generate_series(1, 50000) g',
		'CREATE TABLE i AS SELECT g AS k, g * 3 AS v FROM generate_series(0, 99999) g',
		# two keys of 50000 rows: no batching splits its table below 1MB
		'CREATE TABLE s AS SELECT g % 2 AS k, g AS v FROM generate_series(1, 100000) g',
		'ANALYZE o, i, s');
}
my $native = psql_q($node, { db => 'mon_a' },
	'SET gpuhash.enabled = off',
	'SELECT count(*), sum(i.v) FROM o JOIN s i ON o.k = i.k');

# fall_back(DB, N): one session that plans the join, then executes it N
# times with its table past the limit; returns the rows of the last run
sub fall_back
{
	my ($db, $n, $nd) = @_;
	$nd //= $node;
	my $out = psql_q(
		$nd,
		{ db => $db },
		"LOAD 'gpuhash'",
		'SET gpuhash.force_join = on',
		'SET gpuhash.budget_cpu_twin = on',
		'PREPARE p AS SELECT count(*), sum(i.v) FROM o JOIN s i ON o.k = i.k',
		'EXECUTE p',
		'SET gpuhash.device_memory_limit = 1',
		('EXECUTE p') x $n);
	return (split /\n/, $out)[-1];
}

# log_lines(NODE, OFFSET): the fallback's LOG lines past OFFSET of the log
sub log_lines
{
	my ($nd, $offset) = @_;
	my $log = slurp_file($nd->logfile, $offset);
	my @lines = grep { /$fallback_re/ } split /\n/, $log;
	return scalar @lines;
}

# fallbacks(DB): table_limit fallbacks of GpuHashJoin counted for DB
sub fallbacks
{
	my ($db, $nd) = @_;
	$nd //= $node;
	return psql_q(
		$nd,
		{ db => $db },
		"SELECT coalesce(sum(fallbacks), 0) FROM gpuhash_stat_fallbacks "
		  . "WHERE datname = current_database() AND operator = 'GpuHashJoin' AND reason = 'table_limit'"
	);
}

my $offset = -s $node->logfile;
my $rows = fall_back('mon_a', 3);
is($rows, $native, 'the fallen-back join returns native rows');
is(fallbacks('mon_a'), 3, 'each fallen-back run is counted');
fall_back('mon_a', 2);
is(fallbacks('mon_a'), 5, 'another session\'s runs are counted too');
is(log_lines($node, $offset), 1,
	'the fallback is logged once for the database, whatever the sessions');
like(slurp_file($node->logfile, $offset),
	qr/DETAIL:  Fallbacks are counted in gpuhash_stat_fallbacks as "table_limit".*\n.*HINT:  Raise gpuhash.device_memory_limit/,
	'the LOG line says where it is counted and what to do');

fall_back('mon_b', 2);
is(log_lines($node, $offset), 2, 'a second database logs its own, once');
is(fallbacks('mon_b'), 2, 'and counts its own');
is(fallbacks('mon_a'), 5, 'the first database\'s counts are its own');

psql_q($node, { db => 'mon_a' }, 'SELECT gpuhash_stat_reset()');
is(fallbacks('mon_a'), 0, 'the reset zeroes the counts');
is(fallbacks('mon_b'), 0, 'of every database');
fall_back('mon_a', 2);
is(log_lines($node, $offset), 3, 'after the reset the fallback is logged again');
is(fallbacks('mon_a'), 2, 'and counted from zero');

sub q_a { return psql_q($node, { db => 'mon_a' }, @_); }

# the GPU service: up, then holding a table while a cursor's join holds it
# (gpu_service = on: every join's table is the service's)
wait_until(100, 0.1,
	sub { q_a("SELECT state FROM gpuhash_stat_service()") eq 'up' });
is(q_a("SELECT state || ' ' || restarts FROM gpuhash_stat_service()"),
	'up 0', 'the service is up, never restarted');
my $held = psql_q(
	$node,
	{ db => 'mon_a' },
	'SET gpuhash.force_join = on',
	'BEGIN',
	'DECLARE c CURSOR FOR SELECT o.id FROM o JOIN i ON o.k = i.k',
	'FETCH 1 FROM c',
	"SELECT tables_held > 0 AND table_bytes > 0 FROM gpuhash_stat_service()",
	'COMMIT');
like($held, qr/\nt$/, 'the service counts the table it holds for a join');
ok( wait_until(50, 0.1,
		sub { q_a('SELECT tables_held FROM gpuhash_stat_service()') eq '0' }),
	'and none once the join has ended');

my $svc = psql_q($node,
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'gpuhash GPU service'");
psql_q($node, "SELECT pg_terminate_backend($svc)");
ok( wait_until(100, 0.05,
		sub { q_a('SELECT state FROM gpuhash_stat_service()') eq 'restarting' }),
	'a terminated service shows as restarting');
ok( wait_until(200, 0.1,
		sub { q_a("SELECT state || ' ' || restarts FROM gpuhash_stat_service()") eq 'up 1' }),
	'and up again, with one restart');
isnt(q_a('SELECT pid FROM gpuhash_stat_service()'), $svc, 'in a new process');
$node->stop;

# without shared_preload_libraries (each session LOADs gpuhash, whose
# planner hook makes the GPU plans): a backend's own counts, no service, and
# a fallback logged once per backend
my ($plain, $pstarted) = gh_node(
	'monitoring_plain', qq{
shared_preload_libraries = ''
gpuhash.device = $device
max_parallel_workers_per_gather = 0
});
ok($pstarted, 'cluster without preloading starts')
  or do { done_testing(); exit 1; };
psql_q($plain, 'CREATE DATABASE mon_a');
psql_q(
	$plain,
	{ db => 'mon_a' },
	'CREATE EXTENSION gpuhash',
	'CREATE TABLE o AS SELECT g AS id, g % 4000 AS k FROM generate_series(1, 50000) g',
	'CREATE TABLE i AS SELECT g AS k, g * 3 AS v FROM generate_series(0, 99999) g',
	'CREATE TABLE s AS SELECT g % 2 AS k, g AS v FROM generate_series(1, 100000) g',
	'ANALYZE o, i, s');
$offset = -s $plain->logfile;
my $own = psql_q(
	$plain,
	{ db => 'mon_a' },
	"LOAD 'gpuhash'",
	'SET gpuhash.force_join = on',
	'SELECT count(*) FROM o JOIN i ON o.k = i.k',
	'SELECT joins_gpu + joins_cpu FROM gpuhash_stat_database');
like($own, qr/\n1$/, 'a backend sees its own run');
is( psql_q(
		$plain, { db => 'mon_a' },
		'SELECT coalesce(sum(joins_gpu + joins_cpu), 0) FROM gpuhash_stat_database'),
	0,
	'another backend does not');
is(psql_q($plain, { db => 'mon_a' }, 'SELECT state FROM gpuhash_stat_service()'),
	'off', 'the service is off');
is(fall_back('mon_a', 2, $plain), $native, 'the fallback returns native rows');
fall_back('mon_a', 2, $plain);
is(log_lines($plain, $offset), 2, 'each backend logs its fallback once');
$plain->stop;

done_testing();
