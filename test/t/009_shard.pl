# test/t/009_shard.pl - gpuhash on the shards of a sharded layout: a
# coordinator with postgres_fdw and three shard servers with gpuhash, laid
# out by shard/setup.sh, against the same data unsharded on the coordinator.
#
# GPUHASH_TEST_DEVICE = cpu (default: the CPU twin), gpu or auto.  The data
# is TPC-H at scale 0.01 from bench/tpch's own tools (built from the
# tpch-dbgen sources by bench/tpch/build.sh when .dbgen/ is missing); where
# the sources are absent, or with GPUHASH_TEST_SHARD_DATA=sql, it is
# test/shard/generate.sql's TPC-H-shaped rows and the TPC-H queries are left
# out (the test says so).  lineitem and orders are hash-partitioned on their
# order keys over the shards; the other six tables are copied to every shard
# and stay local on the coordinator.
#
# Checks:
#   - every TPC-H query and every query of test/shard/queries returns, read
#     through the shards, exactly the rows PostgreSQL returns from the
#     unsharded tables (gpuhash.enabled = off), serially
#     (enable_async_append = off), with async Append, and with gpuhash's
#     operators forced on the coordinator too, above the shards' Foreign
#     Scans;
#   - the per-shard views of test/shard/views (shard/view.sh), merged on the
#     coordinator, return the rows of the unsharded query they stand for;
#   - EXPLAIN VERBOSE: a join of the co-located tables grouped by the
#     partition key goes to each shard as one remote query, an Async Foreign
#     Scan per shard, and the shard plans that query with GpuHashJoin and
#     GpuHashAgg; a GROUP BY without the partition key and a join with a
#     dimension stay on the coordinator (PostgreSQL 15 pushes neither down);
#     each shard counts the GPU operators it ran (gpuhash_stat_database);
#   - costs: without the developer options that force gpuhash's plans (the
#     TPC-H part forces them on the shards, its queries being small), a
#     pushed-down join and GROUP BY of 150000 rows a shard runs as
#     GpuHashJoin and GpuHashAgg on each shard, through postgres_fdw's
#     cursor, because setup.sh sets cursor_tuple_fraction = 1 for the
#     remote sessions; with PostgreSQL's default (0.1) the same cursor keeps
#     PostgreSQL's plan;
#   - eight coordinator sessions at once (eight remote sessions on every
#     shard), whose shards run every join in the GPU service within
#     gpuhash.server_device_memory, each return exact rows, and afterwards
#     the services are up, never restarted, and no ended session still holds
#     device memory.  A shard's aggregates run in its backends, and on a GPU
#     each such remote session holds a CUDA context (counted as about half a
#     GiB): the shards' budget is README's advice for that, 2 GB plus a
#     context's share per remote session;
#   - on a GPU, the same eight sessions again where the shards' budget holds
#     fewer contexts than sessions, under gpuhash.device = auto: every
#     session's rows are still exact, and the remote sessions that found no
#     room ran on the CPU twin, counted in gpuhash_stat_fallbacks as
#     context_budget.  (The twin makes no CUDA context, so this part is the
#     GPU's alone.)

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use File::Basename;
use GpuHash::Test;
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;

my $device = gh_device();
my $root = gh_root();
my $nshards = 3;
my $tmp = PostgreSQL::Test::Utils::tempdir();

# the CPU twin plans with the GPU's cost model, as a GPU host would
my $plan_conf = $device eq 'cpu' ? "gpuhash.cost_as_gpu = on\n" : '';
my $coord = gh_node(
	'coordinator', qq{
gpuhash.device = $device
$plan_conf
});
# each shard: the GPU service for every join, a share of the GPU (on the
# twin, whose allocations then count as the GPU's would); on a GPU, room
# for the contexts of the eight concurrent remote sessions below
my $concurrent = 8;
my $shard_mem = $device eq 'cpu' ? 2048 : 2048 + 520 * ($concurrent + 1);
my @shards = map {
	scalar gh_node(
		"shard$_", qq{
gpuhash.device = $device
$plan_conf
gpuhash.gpu_service = on
gpuhash.server_device_memory = $shard_mem
} . ($device eq 'cpu' ? "gpuhash.budget_cpu_twin = on\n" : ''))
} 1 .. $nshards;
for my $node ($coord, @shards)
{
	ok(psql_q($node, 'SELECT 1') eq '1', $node->name . ' is up')
	  or BAIL_OUT('a cluster did not start');
}

# conninfo(NODE, DB): the libpq string shard/setup.sh takes
sub conninfo
{
	my ($node, $db) = @_;
	return 'host=' . $node->host . ' port=' . $node->port . " dbname=$db";
}

# run_cmd(ENV, CMD...): a command with the environment ENV added; returns
# (exit status, stdout and stderr together)
sub run_cmd
{
	my ($env, @cmd) = @_;
	local %ENV = (%ENV, %$env);
	my ($in, $out) = ('', '');
	IPC::Run::run(\@cmd, '<', \$in, '>&', \$out);
	return ($? >> 8, $out);
}

# setup(DB, ARGS...): shard/setup.sh for database DB on the coordinator and
# the shards
sub setup
{
	my ($db, @args) = @_;
	return run_cmd({}, 'bash', "$root/shard/setup.sh",
		'--coordinator', conninfo($coord, $db),
		(map { ('--shard', conninfo($_, $db)) } @shards), @args);
}

# ---------------------------------------------------------------- data
my $dbgen = "$root/bench/tpch/.dbgen";
my $data = $ENV{GPUHASH_TEST_SHARD_DATA} // 'auto';
if ($data ne 'sql' && !-x "$dbgen/qgen")
{
	my ($rc, $out) = run_cmd({}, 'bash', "$root/bench/tpch/build.sh");
	diag("bench/tpch/build.sh: $out") if $rc != 0;
}
my $tpch = $data ne 'sql' && -x "$dbgen/qgen" && -x "$dbgen/dbgen";
psql_q($coord, 'CREATE DATABASE tpch');
my $pgenv = {
	PGHOST => $coord->host,
	PGPORT => $coord->port,
	PGDATABASE => 'tpch'
};
if ($tpch)
{
	my ($rc, $out) = run_cmd($pgenv, 'bash', "$root/bench/tpch/load.sh",
		'--scale', '0.01', '--jobs', '2');
	is($rc, 0, 'TPC-H at scale 0.01 loads on the coordinator')
	  or diag($out);
}
else
{
	diag( 'TPC-H\'s data and query generators are absent '
		  . '(bench/tpch/build.sh found no tpch-dbgen sources, or '
		  . 'GPUHASH_TEST_SHARD_DATA=sql): the 22 TPC-H queries are left out; '
		  . 'test/shard/generate.sql\'s TPC-H-shaped rows and test/shard/queries run instead'
	);
	my ($rc, $out) = run_cmd($pgenv, 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1',
		'-v', 'scale=1', '-f', "$root/bench/tpch/schema.sql",
		'-f', "$root/test/shard/generate.sql");
	is($rc, 0, 'TPC-H-shaped rows written by SQL on the coordinator')
	  or diag($out);
}

my @facts = ('--fact', 'lineitem:l_orderkey', '--fact', 'orders:o_orderkey');
my $dims = 'region nation part supplier partsupp customer';
my ($rc, $out) = setup('tpch', @facts, '--replicate', $dims);
is($rc, 0, 'shard/setup.sh lays out lineitem and orders over three shards')
  or diag($out);
like($out, qr/lineitem: \d+ rows over 3 shards: [1-9]\d* [1-9]\d* [1-9]\d*/,
	'every shard holds some of lineitem');

# the TPC-H queries are small for a shard: force gpuhash's plans there so
# that they run its operators (the part "costs" below plans by cost alone)
for my $s (@shards)
{
	psql_q(
		$s,
		{ db => 'tpch' },
		'ALTER DATABASE tpch SET gpuhash.force_join = on',
		'ALTER DATABASE tpch SET gpuhash.force_agg = on',
		'SELECT gpuhash_stat_reset()');
}

# ---------------------------------------------------------------- queries
my %queries;
if ($tpch)
{
	my ($qrc, $qout) = run_cmd({}, 'bash', "$root/bench/tpch/queries.sh",
		'--scale', '0.01', "$tmp/tpch");
	is($qrc, 0, 'qgen writes the 22 TPC-H queries') or diag($qout);
	$queries{"tpch q$_"} = slurp_file("$tmp/tpch/$_.sql") for 1 .. 22;
}
for my $f (glob("$root/test/shard/queries/*.sql"))
{
	$queries{ basename($f, '.sql') } = slurp_file($f);
}

# run(NODE, DB, SETTINGS, SQL): SQL after SET of each setting; returns
# (stdout, stderr, status)
sub run
{
	my ($node, $db, $settings, $sql) = @_;
	return psql_run($node, [ '-q', '-At', '-v', 'ON_ERROR_STOP=1' ],
		db => $db,
		stdin => join('', map { "SET $_;\n" } @$settings) . $sql);
}

my @native = ('gpuhash.enabled = off');
my @sharded = ('search_path = sharded, public');
my @serial = (@sharded, 'enable_async_append = off');
# gpuhash's operators above the shards' Foreign Scans on the coordinator
my @forced = (@sharded, 'gpuhash.force_join = on', 'gpuhash.force_agg = on');
my %expected;
for my $name (sort keys %queries)
{
	my ($want, $werr, $wrc) = run($coord, 'tpch', \@native, $queries{$name});
	$expected{$name} = $want;
	for my $mode ([ 'serial', \@serial ], [ 'async', \@sharded ],
		[ 'gpuhash forced on the coordinator', \@forced ])
	{
		my ($got, $err, $grc) = run($coord, 'tpch', $mode->[1], $queries{$name});
		ok( $wrc == 0 && $grc == 0 && $want ne '' && $got eq $want,
			"$name, sharded ($mode->[0]): the unsharded rows")
		  or diag("native (exit $wrc): $werr\nsharded (exit $grc): $err\n"
			  . "native:\n" . substr($want, 0, 400) . "\nsharded:\n" . substr($got, 0, 400));
	}
}

# ---------------------------------------------------------------- per-shard views
for my $f (glob("$root/test/shard/views/*.merge.sql"))
{
	my $view = basename($f, '.merge.sql');
	my ($vrc, $vout) = run_cmd({}, 'bash', "$root/shard/view.sh",
		'--coordinator', conninfo($coord, 'tpch'),
		(map { ('--shard', conninfo($_, 'tpch')) } @shards),
		$view, "$root/test/shard/views/$view.sql");
	is($vrc, 0, "shard/view.sh makes $view on every shard") or diag($vout);
	my $merge = slurp_file($f);
	my ($ref) = $merge =~ /same rows as: (\S+)/;
	my $want = $expected{ basename($ref, '.sql') };
	my ($got, $err) = run($coord, 'tpch', \@sharded, $merge);
	ok(defined $want && $want ne '' && $got eq $want,
		"$view merged on the coordinator: the rows of $ref unsharded")
	  or diag("$err\ngot:\n" . substr($got, 0, 400));
}

# ---------------------------------------------------------------- plans
# sql_of(NAME): a query of test/shard/queries without comments and ";"
sub sql_of
{
	my $q = $queries{ $_[0] };
	$q =~ s/^--.*\n//mg;
	$q =~ s/;\s*$//;
	return $q;
}

sub explain_plan
{
	my ($node, $db, $settings, $sql) = @_;
	my ($plan) = run($node, $db, $settings, "EXPLAIN (VERBOSE, COSTS OFF) $sql");
	return $plan;
}

# shard_plan(SHARD, DB, REMOTE): the shard's plan of a remote query, with
# the settings postgres_fdw gives its sessions
sub shard_plan
{
	my ($shard, $db, $remote) = @_;
	return explain_plan($shard, $db, [ 'search_path = pg_catalog', 'cursor_tuple_fraction = 1' ],
		$remote);
}

my $plan = explain_plan($coord, 'tpch', \@sharded, sql_of('key_group'));
my @async = $plan =~ /Async Foreign Scan/g;
is(scalar @async, $nshards,
	'key_group (join, GROUP BY the partition key): an Async Foreign Scan per shard')
  or diag($plan);
like(
	$plan,
	qr/Relations: Aggregate on \(\(sharded\.\w+_1 \w+\) INNER JOIN \(sharded\.\w+_1 \w+\)\)/,
	'the join and the aggregate go to the shard as one remote query');
my ($remote) = $plan =~ /Remote SQL: (.*)/;
my $splan = shard_plan($shards[0], 'tpch', $remote // 'SELECT');
like($splan, qr/Custom Scan \(GpuHashAgg\)/,
	'the shard plans that remote query with GpuHashAgg')
  or diag("$remote\n$splan");
like($splan, qr/Custom Scan \(GpuHashJoin\)/, 'and its join with GpuHashJoin');
unlike(explain_plan($coord, 'tpch', \@serial, sql_of('key_group')),
	qr/Async/, 'with enable_async_append off the shards are read one by one');

$plan = explain_plan($coord, 'tpch', \@sharded, sql_of('flags'));
like($plan, qr/Partial \w*Aggregate/,
	'flags (GROUP BY without the partition key): partial aggregates on the coordinator');
unlike(join("\n", $plan =~ /(Remote SQL: .*)/g),
	qr/GROUP BY/, 'and no GROUP BY goes to a shard (PostgreSQL 15)');
$plan = explain_plan($coord, 'tpch', \@sharded, sql_of('nation_orders'));
unlike(join("\n", $plan =~ /(Remote SQL: .*)/g),
	qr/JOIN/, 'nation_orders: the join with the dimensions stays on the coordinator');

$plan = explain_plan($coord, 'tpch', \@sharded, 'SELECT * FROM brand_partial');
like($plan, qr/Foreign Scan on sharded\.brand_partial_3/,
	'a per-shard view is read on the coordinator as a Foreign Scan a shard');
$splan = shard_plan($shards[0], 'tpch', 'SELECT * FROM public.brand_partial');
like($splan, qr/GpuHashAgg.*GpuHashJoin/s,
	'and the shard plans the view, its join with a dimension included, with gpuhash')
  or diag($splan);

# what the shards ran: the GPU operators each counted
for my $k (1 .. $nshards)
{
	my $counts = psql_q($shards[ $k - 1 ],
		{ db => 'tpch' },
		"SELECT joins_gpu + joins_cpu, aggs_gpu + aggs_cpu, joins_gpu + aggs_gpu FROM gpuhash_stat_database WHERE datname = 'tpch'"
	);
	my ($joins, $aggs, $gpu) = split /\|/, $counts;
	ok( $joins > 0 && $aggs > 0 && ($device eq 'cpu' || $gpu > 0),
		"shard $k ran GpuHashJoin and GpuHashAgg for the coordinator's queries"
		  . ($device eq 'cpu' ? '' : ' on the GPU'))
	  or diag($counts);
}

# ---------------------------------------------------------------- costs
# two co-located tables of 150000 rows a shard with primary keys, joined
# and grouped by the key, no forced plans: the GPU's cost model chooses for
# the shard's own query.  The coordinator plans without gpuhash here: with
# it, a GROUP BY that leaves as many groups as rows is aggregated on the
# coordinator's GPU over the rows the shards joined, which its cost model
# prices below three remote aggregates (the README's "Scaling out" says so).
psql_q($coord, 'CREATE DATABASE costs');
my $rows = 150000 * $nshards;
psql_q(
	$coord,
	{ db => 'costs' },
	"CREATE TABLE f AS SELECT g AS k, g % 1000 AS v FROM generate_series(1, $rows) g",
	"CREATE TABLE f2 AS SELECT g AS k, g % 7 AS w FROM generate_series(1, $rows) g",
	'ALTER TABLE f ADD PRIMARY KEY (k)',
	'ALTER TABLE f2 ADD PRIMARY KEY (k)',
	'VACUUM ANALYZE f, f2');
($rc, $out) = setup('costs', '--fact', 'f:k', '--fact', 'f2:k');
is($rc, 0, 'shard/setup.sh lays out the tables of the cost check') or diag($out);
my $costq =
  'SELECT count(*), sum(s) FROM (SELECT f.k, sum(f.v * f2.w) AS s FROM f JOIN f2 ON f2.k = f.k GROUP BY f.k) t';
my @plain = (@sharded, 'gpuhash.enabled = off');
my ($cwant) = run($coord, 'costs', \@native, $costq);
$plan = explain_plan($coord, 'costs', \@plain, $costq);
($remote) = $plan =~ /Remote SQL: (.*)/;
like($plan, qr/Relations: Aggregate on/, 'the cost check\'s join and GROUP BY go to the shards')
  or diag($plan);
$splan = shard_plan($shards[0], 'costs', $remote // 'SELECT');
like($splan, qr/GpuHashAgg.*GpuHashJoin/s,
	'by cost alone, a shard plans them with GpuHashAgg and GpuHashJoin')
  or diag($splan);

# shard_runs(K): GPU operators shard K has run in the database costs
sub shard_runs
{
	return psql_q($shards[ $_[0] - 1 ],
		{ db => 'costs' },
		"SELECT coalesce(sum(joins_gpu + joins_cpu + aggs_gpu + aggs_cpu), 0) FROM gpuhash_stat_database WHERE datname = 'costs'"
	);
}
my @before = map { shard_runs($_) } 1 .. $nshards;
my ($cgot) = run($coord, 'costs', \@plain, $costq);
is($cgot, $cwant, 'the sharded cost check returns the unsharded answer');
ok( (grep { shard_runs($_) >= $before[ $_ - 1 ] + 2 } 1 .. $nshards) == $nshards,
	'each shard ran its cursor with GpuHashJoin and GpuHashAgg (cursor_tuple_fraction = 1)');
psql_q($coord, { db => 'costs' }, 'ALTER SERVER shard_1 OPTIONS (DROP options)');
my $runs1 = shard_runs(1);
($cgot) = run($coord, 'costs', \@plain, $costq);
is($cgot, $cwant, 'again with PostgreSQL\'s cursor_tuple_fraction on shard 1: the same answer');
is(shard_runs(1), $runs1,
	'but shard 1 plans the cursor for its first rows: no GPU operator')
  or diag(slurp_file($shards[0]->logfile));
psql_q($coord, { db => 'costs' },
	"ALTER SERVER shard_1 OPTIONS (ADD options '-c cursor_tuple_fraction=1')");

# ---------------------------------------------------------------- sessions
# eight coordinator sessions at once, each with its own remote session on
# every shard, each running three sharded queries three times
my @conc = ('key_group', 'late_semi', 'brand_revenue');
my $script = join('', map { "SET $_;\n" } @sharded)
  . join('', map { $queries{$_} } (@conc) x 3);
my $want = join('', map { $expected{$_} } (@conc) x 3);

# concurrent_sessions(TAG): $concurrent coordinator sessions at once, each
# running $script; returns (sessions whose rows were exact, the most remote
# sessions seen at once on shard 1)
sub concurrent_sessions
{
	my ($tag) = @_;
	my @bg = map {
		psql_bg($coord, [ '-q', '-At', '-v', 'ON_ERROR_STOP=1' ],
			db => 'tpch',
			stdin => $script,
			timeout => 300,
			out => "$tmp/$tag$_.out")
	} 1 .. $concurrent;
	my $most = 0;
	for (1 .. 600)
	{
		my $n = psql_q($shards[0],
			"SELECT count(*) FROM pg_stat_activity WHERE application_name = 'postgres_fdw'");
		$most = $n if $n > $most;
		last unless grep { $_->pumpable } @bg;
		sleep_s(0.2);
	}
	my $exact = 0;
	for my $i (1 .. $concurrent)
	{
		my $done = $bg[ $i - 1 ]->finish;
		my $got = -e "$tmp/$tag$i.out" ? slurp_file("$tmp/$tag$i.out") : '';
		$exact++ if $done && $got eq $want;
		diag("$tag session $i:\n" . substr($got, 0, 400)) unless $done && $got eq $want;
	}
	return ($exact, $most);
}
my ($exact, $most) = concurrent_sessions('session');
is($exact, $concurrent, 'eight concurrent coordinator sessions: every one\'s rows exact');
ok($most >= 2, "the shards served several remote sessions at once (at most $most seen on shard 1)");
for my $k (1 .. $nshards)
{
	my $s = $shards[ $k - 1 ];
	is( psql_q($s, { db => 'tpch' },
			"SELECT state || ' ' || restarts || ' ' || coalesce(last_error, '-') FROM gpuhash_stat_service"),
		'up 0 -',
		"shard $k: its GPU service is up, never restarted, no error");
	# the GPU service keeps its share; this session's own query is left out
	my $held =
	  "SELECT r.pid, r.reserved_bytes, a.backend_type FROM gpuhash_device_reservations() r
		 LEFT JOIN pg_stat_activity a ON a.pid = r.pid
		WHERE r.pid <> pg_backend_pid() AND a.backend_type IS DISTINCT FROM 'gpuhash GPU service'";
	ok(wait_until(100, 0.1, sub { psql_q($s, { db => 'tpch' }, $held) eq '' }),
		"shard $k: no ended session holds device memory")
	  or diag(psql_q($s, { db => 'tpch' }, $held));
}

if ($device ne 'cpu')
{
	# room for the service's context and two more on every shard, fewer than
	# the sessions; auto runs what finds no room on the CPU twin
	my $fb = "SELECT coalesce(sum(fallbacks), 0) FROM gpuhash_stat_fallbacks
		WHERE reason = 'context_budget'";
	my $before = psql_q($shards[0], { db => 'tpch' }, $fb);
	for my $s (@shards)
	{
		psql_q($s, "ALTER SYSTEM SET gpuhash.server_device_memory = 2048");
		psql_q($s, "ALTER SYSTEM SET gpuhash.device = 'auto'");
		$s->reload;
	}
	my ($exact2) = concurrent_sessions('small');
	is($exact2, $concurrent,
		'a budget of fewer contexts than remote sessions, device auto: every session\'s rows exact');
	my $after = psql_q($shards[0], { db => 'tpch' }, $fb);
	ok($after > $before,
		"and shard 1's sessions that found no room ran on the CPU twin (context_budget fallbacks $before -> $after)");
}

$_->stop for ($coord, @shards);
done_testing();
