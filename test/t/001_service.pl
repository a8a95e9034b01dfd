# test/t/001_service.pl - the GPU service (gpuhash.gpu_service, src/service.c)
# in a cluster of its own.
#
# GPUHASH_TEST_DEVICE = cpu (default), gpu or auto is the device the service
# builds on.  Checks: the service runs and joins use it (EXPLAIN: "Table Held
# By: GPU service"); their rows equal native's (serial, parallel, every join
# type, text keys, repeated keys; the participants of a shared build share
# one table); device memory counted by the backend goes back to 0; a cancel
# during the probe and a terminated backend leave the service serving with
# native's rows; with the service stopped, joins run in the backend with the
# same rows, and the postmaster starts it again; DROP DATABASE and DROP
# TABLESPACE finish while it runs; a reload reaches it; gpuhash.device = gpu
# never runs on a service that is on the CPU twin; a shared build's hashes go
# through the service's own exchange area, which the next build has again
# (also after four builds at once, and after one that claimed it and
# spilled).  Then the default, gpu_service = parallel: serial joins in the
# backend, parallel ones in the service.  The server-wide device memory
# budget: the service's and the backends' reservations come back (a join's
# end, a terminated backend, a disconnect); a session that finds no room
# waits for another to give back, or falls back after
# gpuhash.device_memory_wait, with native's rows; a cancel ends the wait.
# Last, with device = auto and no GPU the service stops for good.
#
# Every query goes through psql, as a client would send it; the checks read
# pg_stat_activity, EXPLAIN ANALYZE and the server log.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use GpuHash::Test;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $device = gh_device();
my @bg;    # background sessions, ended at the end

my ($node, $started) = gh_node(
	'service', qq{
gpuhash.device = $device
gpuhash.gpu_service = on
max_parallel_workers_per_gather = 2
});
ok($started, "cluster with gpuhash.gpu_service = on starts")
  or do { done_testing(); exit 1; };

sub q1 { return psql_q($node, @_); }
sub q0 { return psql_q0($node, @_); }
sub server_log { return slurp_file($node->logfile); }

sub svc_pid
{
	return q1(
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'gpuhash GPU service'"
	);
}
# service_ready OFFSET: until the service has logged, past OFFSET of the
# server log, that it is ready or that it found no GPU and stops.  It is in
# pg_stat_activity before that, while it still makes its CUDA context, whose
# share of the device budget it reserves only then.
sub service_ready
{
	my $offset = shift;
	return $node->wait_for_log(
		qr/gpuhash GPU service (ready|found no usable GPU and stops)/,
		$offset);
}
service_ready(0);
my $pid0 = svc_pid();
ok($pid0 ne '', "the service process runs (pid $pid0)");

psql_run(
	$node,
	[ '-q', '-At', '-v', 'ON_ERROR_STOP=1' ],
	stdin => q{
CREATE EXTENSION gpuhash;
CREATE TABLE sv_o AS SELECT i AS id, i % 5000 AS k, 'k' || (i % 5000) AS t, i % 7 AS g
  FROM generate_series(1, 200000) i;
CREATE TABLE sv_i AS SELECT i AS k, i * 3 AS v, 'k' || i AS t FROM generate_series(0, 5999) i;
CREATE TABLE sv_m AS SELECT i % 300 AS k, i AS v FROM generate_series(1, 20000) i;  -- repeated keys
INSERT INTO sv_i SELECT NULL, 1, NULL FROM generate_series(1, 10);
ANALYZE sv_o, sv_i, sv_m;
});

# md5 of a query's rows in a canonical order, under settings
sub md5_of
{
	my $query = shift;
	return
	  "SELECT md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) FROM ($query) x";
}

sub digest
{
	my ($settings, $query) = @_;
	my @l = split /\n/, q1($settings, md5_of($query));
	return $l[-1] // '';
}

sub explain_plan
{
	my ($settings, $query) = @_;
	return q1("SET gpuhash.force_join = on", $settings,
		"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $query");
}

# the lines of TEXT that match RE, at most N
sub grep_lines
{
	my ($re, $text, $n) = @_;
	my @l = grep { /$re/ } split /\n/, $text;
	splice(@l, $n) if defined $n && @l > $n;
	return join("\n", @l);
}

my @queries = (
	"SELECT o.id, i.v FROM sv_o o JOIN sv_i i ON o.k = i.k",
	"SELECT o.id, i.v FROM sv_o o LEFT JOIN sv_i i ON o.k = i.k",
	"SELECT o.id, i.v FROM sv_o o RIGHT JOIN sv_i i ON o.k = i.k",
	"SELECT o.id, i.v FROM sv_o o FULL JOIN sv_i i ON o.k = i.k",
	"SELECT o.id FROM sv_o o WHERE EXISTS (SELECT 1 FROM sv_i i WHERE i.k = o.k)",
	"SELECT o.id FROM sv_o o WHERE NOT EXISTS (SELECT 1 FROM sv_i i WHERE i.k = o.k)",
	"SELECT o.id, i.v FROM sv_o o JOIN sv_i i ON o.t = i.t",
	"SELECT o.id, m.v FROM sv_o o JOIN sv_m m ON o.k = m.k");
my %mode = (
	serial =>
	  "SET max_parallel_workers_per_gather = 0; SET gpuhash.batch_rows = 4096",
	parallel =>
	  "SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0; SET gpuhash.batch_rows = 4096"
);
my ($serial, $parallel) = @mode{qw(serial parallel)};
my $native = "SET gpuhash.enabled = off";

for my $query (@queries)
{
	my $nat = digest($native, $query);
	for my $mode (qw(serial parallel))
	{
		my $set = $mode{$mode};
		my $plan = explain_plan($set, $query);
		if ($plan !~ /Table Held By: GPU service/)
		{
			fail("$mode: the join's table is held by the service: $query");
			diag(grep_lines(qr/GpuHashJoin|Device/, $plan, 3));
			next;
		}
		is(digest("SET gpuhash.force_join = on; $set", $query),
			$nat, "$mode, through the service, native's rows: $query");
	}
}
my $plan = explain_plan($parallel, $queries[0]);
ok($plan =~ /Workers Launched: [1-9]/, "the parallel plan ran with workers")
  or diag(join("\n", (split /\n/, $plan)[ 0 .. 4 ]));

# a shared build: the participants read the inner side together and use one
# table in the service (a participant that comes after the others' joins
# ended builds its own)
$plan = explain_plan($parallel, $queries[0]);
my $plan_v = q1("SET gpuhash.force_join = on", $parallel,
	"EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF) $queries[0]");
my $one_for_all = () = $plan_v =~ /one for all participants/g;
ok($plan =~ /Inner Side: read by all participants together/
	  && $one_for_all >= 2,
	"a shared build's participants use one table in the service")
  or diag(grep_lines(qr/Inner Side|Table Held|Worker [0-9]: Inner/, $plan_v));
is( digest(
		"SET gpuhash.force_join = on; $parallel; SET gpuhash.shared_build = off",
		$queries[0]),
	digest($native, $queries[0]),
	"parallel without the shared build (a table per participant), native's rows"
);

my @l = split /\n/,
  q1("SET gpuhash.force_join = on", "SELECT count(*) FROM ($queries[0]) x",
	"SELECT gpuhash_device_memory()");
is($l[-1], "0", "the backend counts no service memory after its join");

# a cancel while the join probes (a slow outer side): the next query is right
my $slow =
  "SELECT count(*) FROM (SELECT o.id, i.v FROM (SELECT * FROM sv_o WHERE pg_sleep(0.0001) IS NOT NULL) o JOIN sv_i i ON o.k = i.k) x";
my $slow_set =
  "SET gpuhash.force_join = on; SET statement_timeout = '600ms'; SET gpuhash.batch_rows = 512";
my $out = q1({ merge => 1 }, $slow_set, $slow);
ok($out =~ /canceling statement due to statement timeout/,
	"statement_timeout stops a join in the service")
  or diag($out);
my $nat = digest($native, $queries[3]);
@l = split /\n/, q0($slow_set, $slow, "SET statement_timeout = 0",
	md5_of($queries[3]), "SELECT gpuhash_device_memory()");
is( join(' ', @l[ -2, -1 ]),
	"$nat 0",
	"after a cancel, the same session's next join is native's rows and holds nothing"
);

# a backend terminated in a join: the others go on with the service
push @bg,
  psql_bg(
	$node,
	[
		'-q', '-At', '-v', 'ON_ERROR_STOP=1', '-c',
		"SET gpuhash.force_join = on; SET application_name = 'sv_victim'",
		'-c', $slow
	]);
sleep_s(0.8);
q1("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'sv_victim'"
);
sleep_s(0.3);
is( digest("SET gpuhash.force_join = on", $queries[0]),
	digest($native, $queries[0]),
	"after another backend is terminated in a join, joins still return native's rows"
);
is(svc_pid(), $pid0, "the service process is the same one");

# the service stopped: joins run in the backend
my $log_at = -s $node->logfile;
q1("SELECT pg_terminate_backend($pid0)");
wait_until(50, 0.1, sub { svc_pid() eq '' });
$plan = explain_plan($serial, $queries[0]);
ok($plan !~ /Table Held By/, "without the service the backend holds the table");
is( digest("SET gpuhash.force_join = on; $serial", $queries[0]),
	digest($native, $queries[0]),
	"without the service, native's rows");

# ... and the postmaster starts it again (bgw_restart_time 5 s): a
# terminated service exits with code 1, as PostgreSQL's own workers do
my $pid1 = wait_until(150, 0.1, sub { svc_pid() }) // '';
ok( $pid1 ne '' && $pid1 ne $pid0,
	"after pg_terminate_backend the postmaster starts the service again (pid $pid1)"
) or diag("pid '$pid1'; " . grep_lines(qr/GPU service/, server_log()));
service_ready($log_at);
$plan = explain_plan($serial, $queries[0]);
ok($plan =~ /Table Held By: GPU service/,
	"the restarted service holds the tables again")
  or diag(grep_lines(qr/Device|Table/, $plan));
is( digest("SET gpuhash.force_join = on; $serial", $queries[0]),
	digest($native, $queries[0]),
	"through the restarted service, native's rows");

# the service absorbs ProcSignal barriers: DROP DATABASE and DROP TABLESPACE
# (which wait for every process with a PGPROC) finish while it runs
q1("CREATE DATABASE sv_drop");
my $svc_before = svc_pid();
my $t0 = time;
my ($o, $e, $rc) = psql_run(
	$node,
	[
		'-q', '-At', '-v', 'ON_ERROR_STOP=1', '-c',
		"SET statement_timeout = '50s'", '-c', "DROP DATABASE sv_drop"
	],
	timeout => 60,
	merge => 1);
ok( $svc_before ne ''
	  && svc_pid() eq $svc_before
	  && $rc == 0
	  && q1("SELECT count(*) FROM pg_database WHERE datname = 'sv_drop'") eq
	  '0',
	sprintf(
		"DROP DATABASE finishes while the service runs (%d s, service pid %s)",
		time - $t0, $svc_before)
  )
  or diag("service pid '$svc_before'; rc $rc: $o; "
	  . grep_lines(qr/ProcSignalBarrier/, server_log()));
$t0 = time;
($o, $e, $rc) = psql_run(
	$node,
	[
		'-q', '-At', '-v', 'ON_ERROR_STOP=1',
		'-c', "SET statement_timeout = '50s'",
		'-c', "SET allow_in_place_tablespaces = on",
		'-c', "CREATE TABLESPACE sv_space LOCATION ''",
		'-c', "CREATE TABLE sv_ts TABLESPACE sv_space AS SELECT 1 AS k",
		'-c', "DROP TABLE sv_ts",
		'-c', "DROP TABLESPACE sv_space"
	],
	timeout => 60,
	merge => 1);
ok( svc_pid() ne '' && $rc == 0,
	sprintf(
		"DROP TABLESPACE with lingering files finishes while the service runs (%d s)",
		time - $t0))
  or diag("rc $rc: $o");

# a configuration reload reaches it (and does not stop it)
q1("SELECT pg_reload_conf()");
sleep_s(0.5);
is(svc_pid(), $pid1, "after pg_reload_conf the service is the same process");

# gpuhash.device = gpu means a GPU: a service on the CPU twin does not stand
# in for one; gpuhash.device = cpu means the twin, not a service on the GPU
if ($device eq 'cpu')
{
	$out = q0({ merge => 1 },
		"SET gpuhash.force_join = on; SET gpuhash.device = gpu",
		"SELECT count(*) FROM ($queries[0]) x");
	ok( svc_pid() ne '' && $out =~ /ERROR/ && $out !~ /^[0-9]+$/m,
		"device = gpu with the service on the CPU twin: an ERROR, not the twin"
	) or diag($out);
}
else
{
	$plan = explain_plan("$serial; SET gpuhash.device = cpu", $queries[0]);
	ok( $plan !~ /Table Held By/ && $plan =~ /Device: cpu/,
		"device = cpu with the service on the GPU: the backend's CPU twin")
	  or diag(grep_lines(qr/Device|Table/, $plan));
}

# a shared build's hashes reach the service through the service's own
# exchange area, kept from one build to the next (the participants' DEBUG2
# accounts name it); builds at once that find it taken make their own; a
# build that claimed it and then spilled to partitions (the inner side
# underestimated: a = b, both of 10 values) gives it back without a table,
# and the next build has it again: native's rows every time
sub xarea    # the exchange areas a shared build's participants name
{
	my $query = shift;
	my (undef, $err) = psql_run(
		$node,
		[
			'-q', '-At', '-v', 'ON_ERROR_STOP=1', '-c',
			"SET gpuhash.force_join = on", '-c', $parallel, '-c',
			"SET client_min_messages = debug2", '-c', $query
		]);
	my %seen = map { $_ => 1 } $err =~ /(exchange [a-z]*)/g;
	return join('', map { "$_ " } sort keys %seen);
}

# xarea_again QUERY: xarea, run again (five times at most) while it says
# "none": no second participant came while the inner side was read, so
# nobody asked for an area (a worker that started late)
sub xarea_again
{
	my $query = shift;
	my $got;
	for (1 .. 5)
	{
		$got = xarea($query);
		last if $got ne "exchange none ";
	}
	return $got;
}

# (an inner side of 300000 rows: the workers start while it is read)
psql_run(
	$node,
	[ '-q', '-At', '-v', 'ON_ERROR_STOP=1' ],
	stdin => q{
CREATE TABLE sv_x AS SELECT i AS k, i % 10 AS a, i % 10 AS b, 'x' || i AS t FROM generate_series(1, 300000) i;
ANALYZE sv_x;
});
my $xj = "SELECT o.id, x.t FROM sv_o o JOIN sv_x x ON o.k = x.k";
is(xarea_again($xj), "exchange service ",
	"a shared build's hashes go through the service's exchange area");
is(xarea_again($xj), "exchange service ",
	"the next shared build has the service's exchange area again");
my $natt = digest($native, $xj);
my @four;
for my $k (1 .. 4)
{
	my $got = '';
	push @four, [
		psql_bg(
			$node,
			[
				'-q', '-At', '-v', 'ON_ERROR_STOP=1', '-c',
				"SET gpuhash.force_join = on; $parallel", '-c', md5_of($xj)
			],
			out => \$got),
		\$got
	];
}
my $same = 0;
for my $f (@four)
{
	$f->[0]->finish;
	(my $got = ${ $f->[1] }) =~ s/\n+\z//;
	$same++ if $got eq $natt;
}
is($same, 4,
	"four shared builds at once, one exchange area: native's rows in each");
my $xq =
  "SELECT o.id, x.k FROM sv_o o JOIN sv_x x ON o.k = x.k WHERE x.a = 1 AND x.b = 1";
my $xplan = q1("SET gpuhash.force_join = on", $parallel,
	"SET work_mem = '64kB'", "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $xq");
ok($xplan =~ /Shared Partitions: [1-9]/,
	"an underestimated shared build spills to partitions")
  or diag(grep_lines(qr/Inner Side|Batches|Chunks|Partition/, $xplan));
is( digest("SET gpuhash.force_join = on; $parallel; SET work_mem = '64kB'",
		$xq),
	digest($native, $xq),
	"the spilled shared build: native's rows");
is(xarea_again($xj), "exchange service ",
	"after the spilled build the next one has the service's exchange area");
is(digest("SET gpuhash.force_join = on; $parallel", $xj),
	$natt, "and native's rows");

# the default, gpuhash.gpu_service = parallel: a parallel join's participants
# use the service, a serial join holds its table in the backend
sub restart_with
{
	$node->append_conf('postgresql.conf', shift);
	my $offset = -s $node->logfile;
	$node->restart;
	service_ready($offset);
	return;
}
restart_with("gpuhash.gpu_service = parallel");
is(q1("SHOW gpuhash.gpu_service"),
	"parallel", "gpu_service = parallel after the restart");
$plan = explain_plan($serial, $queries[0]);
ok($plan !~ /Table Held By/,
	"parallel: a serial join holds its table in the backend")
  or diag(grep_lines(qr/Table Held/, $plan));
$plan = explain_plan($parallel, $queries[1]);
ok( $plan =~ /Table Held By: GPU service/
	  && $plan =~ /Workers Launched: [1-9]/,
	"parallel: a parallel join's table is in the service")
  or diag(grep_lines(qr/Workers|Table Held|Device/, $plan));
for my $mode (qw(serial parallel))
{
	is( digest("SET gpuhash.force_join = on; $mode{$mode}", $queries[1]),
		digest($native, $queries[1]),
		"parallel, a $mode join: native's rows");
}

# the server-wide device memory budget (gpuhash.server_device_memory,
# src/device_budget.c), with the CPU twin reserving as the GPU does
# (gpuhash.budget_cpu_twin): the service's and the backends' reservations come
# back after a join, a terminated backend and a disconnect; a session whose
# reservation finds no room waits for another to give back, or falls back to
# the twin's host memory after gpuhash.device_memory_wait, with native's rows;
# a cancel ends the wait.  The budget is what the service holds for good (its
# CUDA context's share on a GPU) plus 6 MB: room for one bd_i table, not two.
# The joins here run on the CPU twin.
restart_with("gpuhash.budget_cpu_twin = on");
psql_run(
	$node,
	[ '-q', '-At', '-v', 'ON_ERROR_STOP=1' ],
	stdin => q{
CREATE TABLE bd_i AS SELECT g AS k, g * 3 AS v FROM generate_series(0, 99999) g;
CREATE TABLE bd_o AS SELECT g AS id, g % 5000 AS k FROM generate_series(1, 20000) g;
ANALYZE bd_i, bd_o;
});
sub bq { return q1("SELECT $_[0] FROM gpuhash_device_budget()"); }

sub others_bytes
{
	return q1(
		"SELECT coalesce(sum(reserved_bytes), 0) FROM gpuhash_device_reservations() WHERE pid <> pg_backend_pid()"
	);
}

sub svc_bytes
{
	my $p = svc_pid();
	return q1(
		"SELECT coalesce(sum(reserved_bytes), 0) FROM gpuhash_device_reservations() WHERE pid = '$p'"
	);
}

# numeric comparison of strings that may be empty (as the shell's [ -gt ]
# with its errors hidden: false)
sub more_than
{
	my ($x, $y) = @_;
	return 0
	  unless defined $x && defined $y && $x =~ /^-?\d+$/ && $y =~ /^-?\d+$/;
	return $x > $y;
}

# wait_reserved BYTES: until the server's reservations are BYTES again (5 s at most)
sub wait_reserved
{
	my $bytes = shift;
	return wait_until(50, 0.1, sub { bq('reserved_bytes') eq $bytes });
}
my $base = others_bytes();
my $bjoin = "SELECT o.id, i.v FROM bd_o o JOIN bd_i i ON o.k = i.k";

# work_mem large: bd_i's table is one batch, whose reservation is what waits
my $bset =
  "SET gpuhash.device = cpu; SET gpuhash.force_join = on; SET max_parallel_workers_per_gather = 0; SET work_mem = '1GB'";
my $bnat = digest($native, $bjoin);

# a parallel join's table in the service: reserved by the service while it
# runs, given back when it ends
my $slowpar =
  "SELECT count(*) FROM sv_o o JOIN sv_i i ON o.k = i.k WHERE o.id <= 3000 AND pg_sleep(0.0003) IS NOT NULL";
push @bg,
  psql_bg(
	$node,
	[
		'-q', '-At', '-v', 'ON_ERROR_STOP=1', '-c',
		"SET gpuhash.force_join = on; $parallel", '-c', $slowpar
	]);
my $held = wait_until(40, 0.1, sub { more_than(svc_bytes(), $base) }) ? 1 : 0;
ok($held, "budget: the service reserves a parallel join's table")
  or diag("service holds " . svc_bytes() . ", base $base");
ok(wait_reserved($base), "budget: the service gives it back when the join ends")
  or diag("reserved " . bq('reserved_bytes') . ", base $base");

# a backend terminated while its cursor holds a table, and one that
# disconnects in the middle of a transaction: both give back
sub hold    # hold NAME SECONDS: a session that holds bd_i's table for SECONDS
{
	my ($name, $secs) = @_;
	return psql_bg(
		$node,
		[
			'-q', '-At', '-v', 'ON_ERROR_STOP=1',
			'-c', "$bset; SET application_name = '$name'",
			'-c', "BEGIN",
			'-c', "DECLARE c CURSOR FOR $bjoin",
			'-c', "FETCH 1 FROM c",
			'-c', "SELECT pg_sleep($secs)",
			'-c', "COMMIT"
		]);
}
push @bg, hold('bd_victim', 30);
$held = wait_until(50, 0.1, sub { more_than(bq('reserved_bytes'), $base) }) ? 1 : 0;
q1("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'bd_victim'"
);
ok($held && wait_reserved($base),
	"budget: a backend terminated while it holds a table gives it back")
  or diag("held $held; reserved " . bq('reserved_bytes') . ", base $base");
q1($bset, "BEGIN", "DECLARE c CURSOR FOR $bjoin", "FETCH 1 FROM c");
ok(wait_reserved($base),
	"budget: a backend that disconnects in a transaction gives back")
  or diag("reserved " . bq('reserved_bytes') . ", base $base");

my $base_mb = int(($base + 1048575) / 1048576);
$node->append_conf('postgresql.conf',
	"gpuhash.server_device_memory = '" . ($base_mb + 6) . "MB'");
q1("SELECT pg_reload_conf()");
sleep_s(0.5);

# ... and a session that needs room while another holds it
push @bg, hold('bd_a1', 1.5);
wait_until(50, 0.1, sub { more_than(bq('reserved_bytes'), $base) });
my ($w0, $r0) = (bq('waits'), bq('refusals'));
$t0 = time;
my $got = digest("$bset; SET gpuhash.device_memory_wait = '20s'", $bjoin);
my $ms = int((time - $t0) * 1000);
is( "$got " . (bq('waits') - $w0) . " " . (bq('refusals') - $r0),
	"$bnat 1 0",
	"budget: a session waits for another to give back, then reserves: native's rows, one wait, no refusal ($ms ms)"
);
wait_reserved($base);
push @bg, hold('bd_a2', 4);
wait_until(50, 0.1, sub { more_than(bq('reserved_bytes'), $base) });
($w0, $r0) = (bq('waits'), bq('refusals'));
$got = digest("$bset; SET gpuhash.device_memory_wait = '300ms'", $bjoin);
is( "$got " . (bq('waits') - $w0) . " " . (bq('refusals') - $r0),
	"$bnat 1 1",
	"budget: past gpuhash.device_memory_wait the join falls back: native's rows, one wait, one refusal"
);
(undef, $e) = psql_run(
	$node,
	[
		'-q', '-At', '-c',
		"$bset; SET gpuhash.device_memory_wait = '20s'; SET statement_timeout = '500ms'",
		'-c', $bjoin
	]);
ok($e =~ /canceling statement due to statement timeout/,
	"budget: a cancel ends the wait")
  or diag($e);
if ($device eq 'gpu')
{
	# on a GPU a backend's CUDA context counts 520 MB, which this budget (the
	# service's share and 6 MB) has no room for: device = auto stays on the
	# CPU twin, device = gpu is an ERROR that says why
	my $gset =
	  "SET gpuhash.force_join = on; SET max_parallel_workers_per_gather = 0; SET gpuhash.device_memory_wait = 0";
	$plan = q1("$gset; SET gpuhash.device = auto",
		"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $bjoin");
	ok($plan =~ /Device: cpu/,
		"budget: device = auto without room for a CUDA context runs on the CPU twin"
	) or diag(grep_lines(qr/GpuHashJoin|Device/, $plan));
	$out = q0({ merge => 1 }, "$gset; SET gpuhash.device = gpu",
		"SELECT count(*) FROM ($bjoin) x");
	ok($out =~ /has no room for this backend's CUDA context/,
		"budget: device = gpu without room for a CUDA context: an ERROR")
	  or diag($out);

	# with room for a context and the table the join runs on the GPU; the
	# context's share stays with the backend until it exits
	$node->append_conf('postgresql.conf',
		"gpuhash.server_device_memory = '" . ($base_mb + 600) . "MB'");
	q1("SELECT pg_reload_conf()");
	sleep_s(0.5);
	@l = split /\n/, q1("$gset; SET gpuhash.device = gpu", md5_of($bjoin),
		"SELECT reserved_bytes FROM gpuhash_device_reservations() WHERE pid = pg_backend_pid()"
	);
	is( join(' ', @l[ -2, -1 ]),
		"$bnat " . (520 * 1024 * 1024),
		"budget: a GPU join under the budget: native's rows, and the backend keeps its context's 520 MB after it"
	);
}
ok(wait_reserved($base), "budget: everything given back at the end")
  or diag("reserved " . bq('reserved_bytes') . ", base $base");
is( q1("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'gpuhash GPU service'"),
	1,
	"budget: the service still runs");

# under the default with gpuhash.device = auto, the service stays only where
# there is a GPU (on a host without one it stops for good and frees its slot)
restart_with("gpuhash.device = auto");
sleep_s(1);    # a service that stops is gone from pg_stat_activity by now
my $ngpu = q1("SELECT count(*) FROM gpuhash_devices()");
if (more_than($ngpu, 0))
{
	ok(svc_pid() ne '', "device = auto with a GPU: the service runs");
}
else
{
	ok( svc_pid() eq ''
		  && server_log() =~
		  /gpuhash GPU service found no usable GPU and stops/,
		"device = auto without a GPU: the service stops")
	  or diag("pid '" . svc_pid() . "'; "
		  . grep_lines(qr/GPU service/, server_log()));
	sleep_s(1);
	ok(svc_pid() eq '', "and the postmaster does not start it again");
}

ok(server_log() !~ /PANIC|terminated by signal|server process .* was terminated/,
	"no server process crashed")
  or diag(grep_lines(qr/PANIC|terminated by signal/, server_log(), 3));

$_->kill_kill for @bg;
done_testing();
