# test/t/004_robust.pl - robustness tests for gpuhash (issue 6).
#
#   prove test/t/004_robust.pl [:: --long] [--no-smith] [--only SECTIONS]
#
# A throwaway cluster (gpuhash preloaded, gpuhash.device from
# GPUHASH_TEST_DEVICE: cpu by default, gpu on a GPU host; GPUHASH_ROBUST_CONF
# adds postgresql.conf lines).  Every test is followed by "nothing lost"
# checks: the same session (or, for a killed backend, a new one) still
# answers; the postmaster did not restart (no "terminated by
# signal"/"reinitializing" in the server log, pg_postmaster_start_time()
# unchanged); gpuhash_device_memory() = 0 in the session; the session's
# memory contexts are back at their baseline; the rows equal those of
# gpuhash.enabled = off.
#
# On a GPU (GPUHASH_TEST_DEVICE=gpu) "nothing lost" also means device
# memory: in a session, gpuhash_devices().free_mb back at the value it had
# after the warm-up (within GPU_TOL_MB: 4 MiB; the tests' tables are tens of
# MB); and, when no session is left (after pg_terminate_backend, after kill
# -9 and crash recovery, at the end), the GPU's used memory (nvidia-smi) back
# at its value before any backend created a context.
#
# Memory-context baseline: sum(total_bytes) of pg_backend_memory_contexts,
# taken after a warm-up run of the same statements (so catalog caches and
# plan caches are already filled), must come back to within MEM_TOL bytes
# (256 kB: one or two allocator blocks of CacheMemoryContext and
# ErrorContext; a leaked build of the tests' inner sides is tens of MB, so a
# leak cannot hide in it).  The 10,000-join test compares after 1,000 and
# after 10,000 joins within 64 kB: a leak of 8 bytes per join would show as
# 72 kB.
#
#   --long      pgbench with 32 clients for 5 minutes (the issue's run)
#               instead of 8 clients for 30 s (GPUHASH_PGBENCH_SECS)
#   --no-smith  skip the short sqlsmith run (test/robust/sqlsmith.sh,
#               GPUHASH_SMITH_SECONDS: 60)
#   --only SECTIONS
#               run only these of the sections (a comma-separated list of
#               interrupts, kill, inject, many, pgbench, lifecycle); the
#               setup and the whole-server checks at the end always run.
#               E.g. --long --no-smith --only pgbench: the issue's pgbench alone
#
# The sessions' outputs (NAME.out) stay beside the server's log.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use GpuHash::Test;
use Getopt::Long;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();

my ($long, $smith, $only) = (0, 1, '');
GetOptions('long' => \$long, 'smith!' => \$smith, 'only=s' => \$only)
  or BAIL_OUT(
	"usage: $0 [--long] [--no-smith] [--only interrupts,kill,inject,many,pgbench,lifecycle]"
  );
my %only = map { $_ => 1 } split /,/, $only;
for (keys %only)
{
	BAIL_OUT("unknown section $_")
	  unless /^(interrupts|kill|inject|many|pgbench|lifecycle)$/;
}
# want(SECTION): the section is to run
sub want { return !%only || $only{ $_[0] }; }

my $device = gh_device();
BAIL_OUT("GPUHASH_TEST_DEVICE must be cpu or gpu") unless $device =~ /^(cpu|gpu)$/;
my $expect_gpu = gh_expect_gpu();
my $MEM_TOL = 262144;
my $GPU_TOL_MB = $ENV{GPUHASH_GPU_TOL_MB} // 4;
my $FLAT_TOL = 65536;
my $CANCEL_BOUND = 1.0;    # the issue's "stops within one second"
my $outdir = $PostgreSQL::Test::Utils::log_path;
my $sqldir = PostgreSQL::Test::Utils::tempdir;
my $robust_conf = $ENV{GPUHASH_ROBUST_CONF} // '';

my ($node, $started) = gh_node(
	'robust', qq{
gpuhash.device = $device
gpuhash_test.gpu = $expect_gpu
log_line_prefix = '%m [%p] %e '
max_connections = 60
$robust_conf
});
unless ($started)
{
	fail("cluster start");
	done_testing();
	exit 1;
}
my $log = $node->logfile;
sub server_log { return slurp_file($log); }

# the lines of TEXT that match RE, at most N, and TEXT's last N lines
sub grep_lines
{
	my ($re, $text, $n) = @_;
	my @l = grep { /$re/ } split /\n/, ($text // '');
	splice(@l, $n) if defined $n && @l > $n;
	return join("\n", @l);
}

sub tail_lines
{
	my ($text, $n) = @_;
	my @l = split /\n/, ($text // '');
	splice(@l, 0, @l - $n) if @l > $n;
	return join("\n", @l);
}

# the GPU's used memory (MiB) with no backend holding a context
sub gpu_used
{
	my $u = `nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 2>/dev/null`;
	($u) = split /\n/, ($u // '');
	$u //= '';
	$u =~ s/ //g;
	return $u;
}
my $gpu_check = 0;
my $gpu_base;

# the GPU service (gpu_service = parallel, the default) holds a context of its
# own for as long as the server runs, and the postmaster starts it again after
# it is terminated or crashes: take the baseline once it is ready
wait_until(
	100, 0.1,
	sub {
		server_log() =~ /GPU service ready|GPU service found no usable GPU/
		  || $robust_conf =~ /gpuhash.gpu_service = off/;
	});
if ($device eq 'gpu' && system('command -v nvidia-smi >/dev/null 2>&1') == 0
	&& gpu_used() ne '')
{
	$gpu_check = 1;
	$gpu_base = gpu_used();
}

# gpu_settled: wait (at most 15 s: exiting backends give their contexts
# back) until the GPU's used memory is within GPU_TOL_MB of gpu_base;
# returns (settled, the last reading)
sub gpu_settled
{
	my $u;
	for (1 .. 60)
	{
		$u = gpu_used();
		return (1, $u)
		  if $u =~ /^[0-9]+$/ && abs($u - $gpu_base) <= $GPU_TOL_MB;
		sleep_s(0.25);
	}
	return (0, or_else($u, '?'));
}

# free_ok(F0, F1): device free memory (gpuhash_devices().free_mb, 'none'
# without a GPU) back at its baseline
sub free_ok
{
	my ($f0, $f1) = @_;
	return 0 unless defined $f0 && defined $f1 && $f0 ne '' && $f1 ne '';
	return 1 if $f0 eq 'none' && $f1 eq 'none';
	return 0 if $f0 eq 'none' || $f1 eq 'none';
	return $f0 - $f1 <= $GPU_TOL_MB;
}
my $FREEQ =
  "SELECT coalesce((SELECT free_mb FROM gpuhash_devices() WHERE ordinal = 0)::text, 'none')";

# P: a psql script (stdin) in the database robust, stop on error; returns
# its output (stdout and stderr) and exit status.  q: one value, unaligned.
sub P
{
	my ($script, @args) = @_;
	my ($out, undef, $rc) = psql_run($node,
		[ '-q', '-v', 'ON_ERROR_STOP=1', @args ],
		db => 'robust',
		stdin => $script,
		merge => 1);
	return wantarray ? ($out, $rc) : $out;
}
sub q1 { return psql_q($node, { db => 'robust' }, shift); }

# save(NAME, TEXT): keep a session's output beside the server's log
sub save
{
	my ($name, $text) = @_;
	append_to_file("$outdir/$name", $text);
	return $text;
}

# sqlfile(NAME, TEXT): a script for psql -f
sub sqlfile
{
	my ($name, $text) = @_;
	my $f = "$sqldir/$name";
	unlink $f;
	append_to_file($f, $text);
	return $f;
}

# value(KEY, TEXT): the first "KEY=value" line's value; values: all of them
sub value
{
	my ($k, $text) = @_;
	return ($text // '') =~ /^\Q$k\E=(.*)$/m ? $1 : '';
}

sub values_of
{
	my ($k, $text) = @_;
	return (($text // '') =~ /^\Q$k\E=(.*)$/mg);
}

# or_else(VALUE, DEFAULT): VALUE, or DEFAULT where it is empty (a shell's
# ${VALUE:-DEFAULT}: 0 stays 0)
sub or_else
{
	my ($v, $default) = @_;
	return defined $v && $v ne '' ? $v : $default;
}

# numeric tests that are false, not errors, on an empty value
sub num { return defined $_[0] && $_[0] =~ /^-?[0-9]+(\.[0-9]+)?$/; }

psql_q($node, "CREATE DATABASE robust");
my ($setup, $src) = P(<<'SQL');
CREATE EXTENSION gpuhash;
-- big inner side (build), big outer side (probe), small tables (10,000 joins)
CREATE TABLE big AS SELECT g AS id, g % 1000003 AS k, g % 7 AS v FROM generate_series(1, 3000000) g;
CREATE TABLE fan AS SELECT g AS id, g % 20000 AS k FROM generate_series(1, 400000) g;
CREATE TABLE rb_delay (d numeric);
CREATE TABLE tiny AS SELECT g AS id, g % 50 AS k FROM generate_series(1, 20) g;
CREATE TABLE sa AS SELECT g AS id, CASE WHEN g % 9 = 0 THEN NULL ELSE g % 37 END AS k, g % 5 AS v FROM generate_series(1, 120) g;
CREATE TABLE sb AS SELECT g AS id, CASE WHEN g % 7 = 0 THEN NULL ELSE g % 41 END AS k, md5(g::text) AS t FROM generate_series(1, 90) g;
CREATE TABLE ma AS SELECT g AS id, g % 3001 AS k, g % 11 AS v FROM generate_series(1, 30000) g;
CREATE TABLE mb AS SELECT g AS id, g % 2999 AS k, (g % 13)::text AS t FROM generate_series(1, 12000) g;
ANALYZE;
CREATE FUNCTION rb_mem() RETURNS bigint LANGUAGE sql AS $$
  SELECT sum(total_bytes)::bigint FROM pg_backend_memory_contexts
$$;
SQL

# rb_hash, rb_same, inject_loop, the raising operator ===, ...
my ($setup2, $frc) =
  P('', '-f', gh_root() . '/test/robust/functions.sql');
save('setup.log', $setup . $setup2);
if ($src != 0 || $frc != 0)
{
	diag($setup . $setup2);
	fail("setup");
	done_testing();
	exit 1;
}
my $start_time = q1("SELECT pg_postmaster_start_time()");
my $CHECKQ = 'SELECT a.id, a.v, b.t FROM sa a FULL JOIN sb b ON a.k = b.k';

# the server log's lines before this one are a crash the test caused
my $crashlines = 0;

# server_intact: the postmaster did not restart and no backend crashed
sub server_intact
{
	my @l = split /\n/, server_log();
	splice(@l, 0, $crashlines);
	return q1("SELECT pg_postmaster_start_time()") eq $start_time
	  && !grep { /terminated by signal|reinitializing|PANIC|TRAP:/ } @l;
}

# ---------------------------------------------------------------------------
# 1. cancel and timeout during the build and the probe
# ---------------------------------------------------------------------------
# the build: inner side big (3M rows, an md5 key computed in the build
# loop), outer tiny: nearly all of the time is the build; the probe: inner
# 400k rows, outer 400k rows x 160 matches each through a join filter:
# nearly all of the time is the probe.  The interrupt comes halfway through
# the query's uninterrupted duration, measured in the same session just
# before.  (Defined for every section: the kill section's victim runs
# PROBEQ.)
my $BUILDQ =
  "SELECT count(*) FROM tiny t JOIN big b ON md5(t.k::text) = md5(b.k::text)";
my $PROBEQ =
  "SELECT count(*), sum(f1.id) FROM fan f1 JOIN fan f2 ON f1.k % 2500 = f2.k % 2500 WHERE f1.id + f2.id > 0";

# interrupt_test(NAME, QUERY, HOW): HOW = cancel | timeout.  Session A warms
# up (runs QUERY to the end: its duration D must exceed 1 s), records its
# baseline, runs QUERY again and is interrupted D/2 in (statement_timeout =
# D/2, or pg_cancel_backend at D/2), then reports memory, device memory and
# a checked join.  For cancel, a second session sends pg_cancel_backend()
# and waits, polling pg_stat_activity every 5 ms, for A to leave the query:
# that wait is the stop time.
sub interrupt_test
{
	my ($name, $query, $how) = @_;
	my @sql = (
		"SET gpuhash.force_join = on; SET jit = off; SET max_parallel_workers_per_gather = 0;",
		"SELECT extract(epoch FROM clock_timestamp()) AS t0 \\gset",
		"$query;",
		"SELECT extract(epoch FROM clock_timestamp()) - :t0 AS full \\gset",
		"SELECT 'full=' || :full;",
		"SELECT round(greatest(:full / 2, 0.2), 3) AS delay \\gset",
		"TRUNCATE rb_delay; INSERT INTO rb_delay VALUES (:delay);",
		"SELECT rb_same('$CHECKQ') AS warm \\gset",
		"SELECT 'base=' || rb_mem();",
		"SELECT 'free0=' || ($FREEQ);",
		"SELECT 'pid=' || pg_backend_pid();");
	push @sql,
	  "SELECT set_config('statement_timeout', (:delay * 1000)::int::text, false);"
	  if $how eq 'timeout';
	push @sql,
	  "SELECT extract(epoch FROM clock_timestamp()) AS t0 \\gset",
	  "/* interrupt me */ $query;",
	  "\\set t1 `date +%s.%N`",
	  "RESET statement_timeout;",
	  "SELECT 'elapsed=' || (:t1 - :t0 - :delay);",
	  "SELECT 'after=' || rb_mem();",
	  "SELECT 'devmem=' || gpuhash_device_memory();",
	  "SELECT 'free1=' || ($FREEQ);",
	  "SELECT 'check=' || rb_same('$CHECKQ');";
	my $f = sqlfile("int-$name.sql", join("\n", @sql) . "\n");
	my $out = '';
	my $bg = psql_bg($node, [ '-At', '-f', $f ], db => 'robust', out => \$out);
	my $ctl = '';
	if ($how eq 'cancel')
	{
		# wait (at most 120 s) for the interruptible run to start, then D/2
		($ctl) = psql_run(
			$node, ['-At'],
			db => 'robust',
			merge => 1,
			stdin => <<'SQL');
DO $$
DECLARE p int; t0 timestamptz; i int := 0;
BEGIN
  LOOP
    PERFORM pg_stat_clear_snapshot();
    SELECT pid INTO p FROM pg_stat_activity WHERE query LIKE '/* interrupt me */%' AND state = 'active' AND pid <> pg_backend_pid();
    EXIT WHEN p IS NOT NULL;
    i := i + 1; IF i > 24000 THEN RAISE EXCEPTION 'the query never started'; END IF;
    PERFORM pg_sleep(0.005);
  END LOOP;
  PERFORM pg_sleep((SELECT d FROM rb_delay));
  PERFORM pg_stat_clear_snapshot();
  IF NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = p AND state = 'active' AND query LIKE '/* interrupt me */%') THEN
    RAISE NOTICE 'stop=finished-before-cancel'; RETURN;
  END IF;
  t0 := clock_timestamp();
  PERFORM pg_cancel_backend(p);
  i := 0;
  LOOP
    PERFORM pg_stat_clear_snapshot();
    EXIT WHEN NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = p AND state = 'active' AND query LIKE '/* interrupt me */%');
    i := i + 1; EXIT WHEN i > 6000;
    PERFORM pg_sleep(0.005);
  END LOOP;
  RAISE NOTICE 'stop=%', extract(epoch FROM clock_timestamp() - t0);
END $$;
SQL
		save("int-$name.ctl", $ctl);
	}
	$bg->finish;
	save("int-$name.out", $out);
	my $full = value('full', $out);
	my $stop;
	if ($how eq 'cancel')
	{
		($stop) = $ctl =~ /stop=([0-9.a-z-]*)/;
	}
	else
	{
		my $e = value('elapsed', $out);
		$stop = sprintf("%.3f", $e) if num($e);
	}
	my $code = $out =~ /ERROR: +canceling statement due to (user request|statement timeout)/;
	my ($base, $after) = (value('base', $out), value('after', $out));
	my ($f0, $f1) = (value('free0', $out), value('free1', $out));
	my ($devmem, $chk) = (value('devmem', $out), value('check', $out));
	ok( num($full) && $full > 1.0,
		"$name: the uninterrupted query runs long enough to be interrupted halfway, in that phase ("
		  . or_else($full, '?')
		  . " s > 1 s)");
	ok($code, "$name: the query ends with the cancel ERROR (57014)")
	  or diag(tail_lines($out, 5));
	ok( defined $stop && $stop =~ /^[0-9.]+$/ && $stop <= $CANCEL_BOUND,
		"$name: the query stops within $CANCEL_BOUND s of the interrupt ("
		  . or_else($stop, '?')
		  . " s)");
	ok( $devmem eq '0'
		  && num($base)
		  && num($after)
		  && $after - $base <= $MEM_TOL
		  && free_ok($f0, $f1),
		"$name: nothing lost: device memory 0 ("
		  . or_else($devmem, '?')
		  . "), memory contexts back at baseline ($base -> $after bytes), device free memory back ($f0 -> $f1 MiB)"
	);
	ok( $chk eq 'same' && server_intact(),
		"$name: the same session answers with native's rows ("
		  . or_else($chk, 'no answer')
		  . "), the server did not restart");
	return;
}

if (want('interrupts'))
{
	interrupt_test("pg_cancel_backend during the build", $BUILDQ, 'cancel');
	interrupt_test("statement_timeout during the build", $BUILDQ, 'timeout');
	interrupt_test("pg_cancel_backend during the probe", $PROBEQ, 'cancel');
	interrupt_test("statement_timeout during the probe", $PROBEQ, 'timeout');

	# statement_timeout during gpuhash_device_selftest(1 GiB): host loops and
	# copies of 1 GiB; 100 ms in, three times in one session
	my @sql = (
		"SELECT gpuhash_device_selftest(1073741824) AS warm \\gset",
		"SELECT rb_mem() AS base \\gset",
		"SELECT ($FREEQ) AS free0 \\gset");
	for (1 .. 3)
	{
		push @sql,
		  "SET statement_timeout = 100;",
		  "SELECT extract(epoch FROM clock_timestamp()) AS t0 \\gset",
		  "SELECT gpuhash_device_selftest(1073741824);",
		  "\\set st :SQLSTATE",
		  "\\set t1 `date +%s.%N`",
		  "RESET statement_timeout;",
		  "SELECT 'run ' || round(:t1 - :t0 - 0.1, 3) || ' ' || :'st' || ' ' || gpuhash_device_memory();";
	}
	push @sql,
	  "SELECT 'after=' || rb_mem() - :base;",
	  "SELECT 'free=' || :'free0' || ' ' || ($FREEQ);",
	  "SELECT 'again=' || gpuhash_device_selftest(1048576);";
	my $sf = sqlfile('selftest.sql', join("\n", @sql) . "\n");
	my ($out) = psql_run($node, [ '-At', '-f', $sf ], db => 'robust', merge => 1);
	save('selftest.out', $out);
	my @runs = grep { /^run / } split /\n/, $out;
	my $bad = grep {
		my @w = split / /;
		!(($w[2] // '') eq '57014' && num($w[1]) && $w[1] <= $CANCEL_BOUND && ($w[3] // '') eq '0')
	} @runs;
	ok( @runs == 3 && $bad == 0,
		"statement_timeout during gpuhash_device_selftest(1 GiB): each of 3 stops within $CANCEL_BOUND s of the timeout, device memory 0 ("
		  . join('', map { (split / /)[1] . " s " } @runs) . ")")
	  or diag(grep_lines(qr/^(?!run|after|free|again)/, $out, 3));
	my $d = value('after', $out);
	my $fr = value('free', $out);
	my ($fa, $fb) = split / /, $fr;
	ok( num($d)
		  && $d <= $MEM_TOL
		  && $fr ne ''
		  && free_ok($fa, $fb)
		  && $out =~ /^again=t/m
		  && server_intact(),
		"gpuhash_device_selftest timeouts: nothing lost (memory contexts +"
		  . or_else($d, '?')
		  . " bytes, device free MiB before/after: "
		  . or_else($fr, '?')
		  . ", the session's next selftest passes)");
}

# ---------------------------------------------------------------------------
# 2. pg_terminate_backend and kill -9 of a backend in a join
# ---------------------------------------------------------------------------
# start_victim(OUT): a session running PROBEQ; returns its harness and its
# pid once it runs (0.5 s in)
sub start_victim
{
	my $out = shift;
	my $h = psql_bg(
		$node,
		[
			'-At', '-c', "SET gpuhash.force_join = on",
			'-c', "SET max_parallel_workers_per_gather = 0",
			'-c', "/* victim */ $PROBEQ"
		],
		db => 'robust',
		out => $out);
	my $p = wait_until(
		400, 0.05,
		sub {
			q1("SELECT pid FROM pg_stat_activity WHERE query LIKE '/* victim */%' AND state = 'active' AND backend_type = 'client backend'"
			);
		});
	return ($h, undef) unless $p;
	sleep_s(0.5);
	return ($h, $p);
}

if (want('kill'))
{
	# other session: 40 checked joins, one after another, across the kill
	my $oout = '';
	my $other = psql_bg(
		$node,
		[ '-At', '-v', 'ON_ERROR_STOP=1' ],
		db => 'robust',
		out => \$oout,
		stdin => <<"SQL");
SET gpuhash.force_join = on;
DO \$\$ DECLARE r text; BEGIN
  FOR i IN 1..40 LOOP
    r := rb_same('$CHECKQ');
    IF r <> 'same' THEN RAISE EXCEPTION 'join % gave %', i, r; END IF;
    PERFORM pg_sleep(0.05);
  END LOOP; END \$\$;
SELECT 'other=done';
SQL
	my $vout = '';
	my ($victim, $vpid) = start_victim(\$vout);
	if ($vpid)
	{
		q1("SELECT pg_terminate_backend($vpid)");
		$other->finish;
		save('other.out', $oout);
		ok($oout =~ /other=done/,
			"pg_terminate_backend: other sessions' joins unaffected (40 checked joins across it)"
		) or diag(tail_lines($oout, 3));
		sleep_s(0.5);
		ok(server_intact(),
			"pg_terminate_backend: the server did not restart, no backend crashed"
		);
		$victim->finish;
		save('victim.out', $vout);
		ok($vout =~ /terminating connection due to administrator command/,
			"pg_terminate_backend: the victim ended with FATAL 57P01")
		  or diag(tail_lines($vout, 2));
		is(q1("SELECT rb_same('$CHECKQ')"),
			'same', "pg_terminate_backend: a new session runs checked joins");
		if ($gpu_check)
		{
			my ($settled, $u) = gpu_settled();
			ok($settled,
				"pg_terminate_backend: with every session gone the GPU's used memory is back at its baseline ($gpu_base -> $u MiB)"
			);
		}
	}
	else
	{
		fail("pg_terminate_backend: the victim query never started");
		$other->finish;
		$victim->kill_kill;
	}

	# kill -9: crash recovery, then joins again
	$vout = '';
	q1("CHECKPOINT");    # keep crash recovery short
	($victim, $vpid) = start_victim(\$vout);
	if ($vpid)
	{
		kill 'KILL', $vpid;
		$victim->finish;
		save('victim9.out', $vout);

		# a connection made before the postmaster has noticed the crash still
		# succeeds: wait for the reinitialization, then for recovery to end
		wait_until(240, 0.25,
			sub { server_log() =~ /all server processes terminated; reinitializing/ });
		my $up = wait_until(
			240, 0.5,
			sub {
				my (undef, undef, $rc) =
				  psql_run($node, [ '-Atq', '-c', 'SELECT 1' ], db => 'robust');
				$rc == 0;
			});
		ok( server_log() =~ /terminated by signal 9/
			  && server_log() =~ /all server processes terminated; reinitializing/,
			"kill -9: the postmaster saw the crash and reinitialized");
		ok($up, "kill -9: the server accepts connections again after crash recovery");
		ok( psql_q($node, { db => 'robust' }, "SET gpuhash.force_join = on",
				"SELECT rb_same('$CHECKQ')") eq 'same'
			  && psql_q($node, { db => 'robust' }, "SET gpuhash.force_join = on",
				"SELECT rb_same('$PROBEQ')") eq 'same',
			"kill -9: new sessions run GpuHashJoins with native's rows (device $device)"
		);
		is(q1("SELECT gpuhash_active_device()"),
			$device, "kill -9: new sessions use device $device again");
		if ($gpu_check)
		{
			my ($settled, $u) = gpu_settled();
			ok($settled,
				"kill -9: with every session gone the GPU's used memory is back at its baseline ($gpu_base -> $u MiB)"
			);
		}

		# from here on the crash is history: count only new crash lines
		$crashlines = () = server_log() =~ /\n/g;
		$start_time = q1("SELECT pg_postmaster_start_time()");
	}
	else
	{
		fail("kill -9: the victim query never started");
		$victim->kill_kill;
	}
}

# ---------------------------------------------------------------------------
# 3. injected allocation failure at each allocation site in turn;
#    savepoints; an ERROR inside the join's equality function
# ---------------------------------------------------------------------------
if (want('inject'))
{
	my $out = save('inject.out', scalar P(<<'SQL', '-At'));
SET gpuhash.force_join = on;
SELECT rb_same('SELECT a.id, b.id FROM ma a FULL JOIN mb b ON a.k = b.k') AS warm \gset
SELECT * FROM gpuhash_aggregate('SELECT k, count(*), sum(v) FROM ma GROUP BY k') AS t(k int, n bigint, s bigint) LIMIT 1 \gset
SELECT rb_mem() AS base \gset
SELECT coalesce((SELECT free_mb FROM gpuhash_devices() WHERE ordinal = 0)::text, 'none') AS free0 \gset
SELECT 'join=' || inject_loop('SELECT a.id, b.id FROM ma a FULL JOIN mb b ON a.k = b.k');
SELECT 'multi=' || inject_loop('SELECT a.id, b.id, c.id FROM ma a JOIN mb b ON a.k = b.k LEFT JOIN sa c ON b.id = c.id');
SELECT 'agg=' || inject_loop($q$SELECT * FROM gpuhash_aggregate('SELECT k, count(*), sum(v) FROM ma GROUP BY k') AS t(k int, n bigint, s bigint)$q$);
SELECT 'after=' || rb_mem() - :base;
SELECT 'devmem=' || gpuhash_device_memory();
SELECT 'free=' || :'free0' || ' ' || coalesce((SELECT free_mb FROM gpuhash_devices() WHERE ordinal = 0)::text, 'none');
SELECT 'check=' || rb_same('SELECT a.id, b.id FROM ma a FULL JOIN mb b ON a.k = b.k');
SQL
	for my $k (qw(join multi agg))
	{
		my $r = value($k, $out);
		my $nerr = () = $r =~ /:53200/g;
		ok( $r =~ /^clean/ && $nerr >= 1,
			"injected out-of-memory at each allocation site ($k): every N a clean 53200 or native's rows, nothing held: "
			  . ($r ne '' ? $r : tail_lines($out, 3)));
	}
	my $d = value('after', $out);
	my $fr = value('free', $out);
	my ($fa, $fb) = split / /, $fr;
	my @checks = values_of('check', $out);
	ok( num($d)
		  && $d <= $MEM_TOL
		  && value('devmem', $out) eq '0'
		  && ($checks[-1] // '') eq 'same'
		  && server_intact()
		  && $fr ne ''
		  && free_ok($fa, $fb),
		"injected out-of-memory: nothing lost (memory contexts +"
		  . or_else($d, '?')
		  . " bytes, device memory 0, device free MiB before/after: "
		  . or_else($fr, '?')
		  . ", same session answers)");

	# the savepoint statements, run twice: a warm-up (temp namespace, catalog
	# caches), then the measured run
	my $spf = sqlfile('savepoint.sql', <<'SQL');
-- a cursor over a join declared inside a savepoint, partly fetched, rolled back
BEGIN;
SAVEPOINT s1;
DECLARE c1 CURSOR FOR SELECT a.id, b.id FROM ma a JOIN mb b ON a.k = b.k;
FETCH 100 FROM c1 \g /dev/null
SELECT 'held_in_subxact=' || (gpuhash_device_memory() > 0);
ROLLBACK TO s1;
SELECT 'after_rollback_to=' || gpuhash_device_memory();
SELECT 'in_xact_check=' || rb_same('SELECT a.id, b.id FROM ma a JOIN mb b ON a.k = b.k');
COMMIT;
-- a cursor declared before the savepoint, fetched inside and after it:
-- all its rows, across the rollback, are native's
BEGIN;
DECLARE c2 CURSOR FOR SELECT a.id, b.id FROM ma a LEFT JOIN mb b ON a.k = b.k ORDER BY 1, 2;
SAVEPOINT s2;
FETCH 500 FROM c2 \g /dev/null
ROLLBACK TO s2;
SELECT 'cursor_survives=' || count(*) FROM pg_cursors WHERE name = 'c2';
MOVE ALL FROM c2;
COMMIT;
-- plpgsql: an ERROR after part of a join, caught by an EXCEPTION block
SELECT 'plpgsql=' || rb_partial();
SQL
	$out = save('savepoint.out', scalar P(<<"SQL", '-At'));
SET gpuhash.force_join = on;
CREATE FUNCTION rb_partial() RETURNS text LANGUAGE plpgsql AS \$\$
DECLARE r record; i int := 0;
BEGIN
  BEGIN
    FOR r IN SELECT a.id, b.id AS bid FROM ma a JOIN mb b ON a.k = b.k LOOP
      i := i + 1;
      IF i = 1000 THEN RAISE EXCEPTION 'stop here' USING ERRCODE = 'RB001'; END IF;
    END LOOP;
  EXCEPTION WHEN SQLSTATE 'RB001' THEN
    RETURN 'caught after ' || i || ' rows, device memory ' || gpuhash_device_memory();
  END;
  RETURN 'not caught';
END \$\$;
SELECT 'check=' || rb_same('SELECT a.id, b.id FROM ma a LEFT JOIN mb b ON a.k = b.k');
\\i $spf
SELECT rb_mem() AS base0 \\gset
\\i $spf
SELECT 'after=' || rb_mem() - :base0;
SELECT 'devmem=' || gpuhash_device_memory();
SELECT 'check=' || rb_same('SELECT a.id, b.id FROM ma a LEFT JOIN mb b ON a.k = b.k');
SQL
	ok( $out =~ /^held_in_subxact=true/m
		  && $out =~ /^after_rollback_to=0$/m
		  && $out =~ /^in_xact_check=same$/m,
		"savepoint: ROLLBACK TO a savepoint holding a half-read GpuHashJoin cursor frees its device memory; the transaction goes on"
	) or diag(grep_lines(qr/=|ERROR/, $out, 5));
	ok($out =~ /^cursor_survives=1$/m,
		"savepoint: a cursor declared before the savepoint survives ROLLBACK TO")
	  or diag(grep_lines(qr/ERROR/, $out, 3));
	ok($out =~ /^plpgsql=caught after 1000 rows, device memory 0$/m,
		"plpgsql EXCEPTION block around a partly read join: caught, device memory freed at the subtransaction's end"
	) or diag(grep_lines(qr/^plpgsql|ERROR/, $out));
	$d = value('after', $out);
	@checks = values_of('check', $out);
	ok( num($d)
		  && $d <= $MEM_TOL
		  && value('devmem', $out) eq '0'
		  && ($checks[-1] // '') eq 'same'
		  && server_intact(),
		"savepoints: nothing lost (memory contexts +"
		  . or_else($d, '?')
		  . " bytes, device memory 0, same session answers)");

	# an equality function that raises, in a hash opclass: the ERROR surfaces
	# from the verification of a candidate pair, cleanly
	$out = save('raise.out', scalar P(<<'SQL', '-At'));
SET gpuhash.force_join = on;
CREATE FUNCTION pg_temp.state_of(q text, mode text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN PERFORM rb_hash(q, mode); RETURN 'ok';
EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ' ' || SQLERRM; END $$;
SELECT rb_same('SELECT a.id, b.id FROM sa a JOIN sb b ON a.k === b.k WHERE a.k <> 13') AS warm \gset
SELECT rb_mem() AS base \gset
SELECT 'gpu_joins=' || rb_gpu_joins('SELECT a.id, b.id FROM sa a JOIN sb b ON a.k === b.k');
SELECT 'native=' || pg_temp.state_of('SELECT a.id, b.id FROM sa a JOIN sb b ON a.k === b.k', 'native');
SELECT 'gpu=' || pg_temp.state_of('SELECT a.id, b.id FROM sa a JOIN sb b ON a.k === b.k', 'gpu');
SELECT 'gpu_left=' || pg_temp.state_of('SELECT a.id, b.id FROM sa a LEFT JOIN sb b ON a.k === b.k', 'gpu');
SET gpuhash.enabled = on;
-- and at the top level, not inside a function
\set ON_ERROR_STOP 0
SELECT a.id, b.id FROM sa a JOIN sb b ON a.k === b.k;
\set ON_ERROR_STOP 1
SELECT 'without13=' || rb_same('SELECT a.id, b.id FROM sa a JOIN sb b ON a.k === b.k WHERE a.k <> 13');
SELECT 'after=' || rb_mem() - :base;
SELECT 'devmem=' || gpuhash_device_memory();
SELECT 'check=' || rb_same('SELECT a.id, b.id FROM sa a FULL JOIN sb b ON a.k = b.k');
SQL
	my $gj = value('gpu_joins', $out);
	ok(num($gj) && $gj >= 1,
		"raising equality function: the join on === is a GpuHashJoin when forced")
	  or diag(grep_lines(qr/gpu_joins|ERROR/, $out, 3));
	my ($nat, $gpu) = (value('native', $out), value('gpu', $out));
	ok( $nat =~ /^RB013/
		  && $gpu eq $nat
		  && value('gpu_left', $out) =~ /^RB013/
		  && $out =~ /ERROR:  rb_eq13 refuses 13/,
		"raising equality function: GpuHashJoin raises the function's own ERROR (RB013), as the native plan does"
	) or diag("native: $nat; gpu: $gpu");
	$d = value('after', $out);
	@checks = values_of('check', $out);
	ok( value('without13', $out) eq 'same'
		  && num($d)
		  && $d <= $MEM_TOL
		  && value('devmem', $out) eq '0'
		  && ($checks[-1] // '') eq 'same'
		  && server_intact(),
		"raising equality function: nothing lost (rows without 13 equal native's, memory contexts +"
		  . or_else($d, '?')
		  . " bytes, device memory 0)");
}

# ---------------------------------------------------------------------------
# 4. 10,000 joins in one session: memory flat
# ---------------------------------------------------------------------------
if (want('many'))
{
	my @jq = (
		"SELECT count(*), sum(b.id) FROM sa a JOIN sb b ON a.k = b.k",
		"SELECT count(*), sum(coalesce(b.id, 0)) FROM sa a LEFT JOIN sb b ON a.k = b.k",
		"SELECT count(*), sum(coalesce(a.id, 0) + coalesce(b.id, 0)) FROM sa a FULL JOIN sb b ON a.k = b.k",
		"SELECT count(*), sum(a.id) FROM sa a WHERE EXISTS (SELECT 1 FROM sb b WHERE b.k = a.k)",
		"SELECT count(*), sum(a.id) FROM sa a WHERE NOT EXISTS (SELECT 1 FROM sb b WHERE b.k = a.k)"
	);
	my @sql = ("SET gpuhash.force_join = on;");
	for my $i (0 .. 4)
	{
		push @sql,
		  "SELECT 'gpu$i=' || rb_gpu_joins('$jq[$i]');",
		  "SELECT (row(x.*))::text AS e$i FROM ($jq[$i]) x \\gset",
		  "SET gpuhash.enabled = off; SELECT (row(x.*))::text AS n$i FROM ($jq[$i]) x \\gset",
		  "SET gpuhash.enabled = on; SELECT CASE WHEN :'e$i' = :'n$i' THEN 'pre$i=same' ELSE 'pre$i=DIFFERENT' END;";
	}
	for my $r (1, 2)
	{
		for (1 .. ($r == 1 ? 200 : 1800))
		{
			for my $k (0 .. 4)
			{
				push @sql,
				  "SELECT 1/(((row(x.*))::text = :'n$k')::int) FROM ($jq[$k]) x \\g /dev/null";
			}
		}
		push @sql,
		  "SELECT 'mem$r=' || rb_mem(); SELECT 'dev$r=' || gpuhash_device_memory();";
	}
	my $sqlf = sqlfile('many.sql', join("\n", @sql) . "\n");
	my ($out, undef, $rc) = psql_run($node,
		[ '-At', '-v', 'ON_ERROR_STOP=1', '-f', $sqlf ],
		db => 'robust',
		merge => 1);
	save('many.out', $out);
	my $gpu_ok = 1;
	for my $i (0 .. 4)
	{
		my $g = value("gpu$i", $out);
		$gpu_ok = 0 unless num($g) && $g >= 1;
	}
	ok( $rc == 0 && $gpu_ok && $out !~ /DIFFERENT/,
		"10,000 GpuHashJoins (inner, left, full, semi, anti) in one session, each with native's result"
	) or diag(grep_lines(qr/ERROR|DIFFERENT|gpu[0-9]=0/, $out, 3));
	my ($m1, $m2) = (value('mem1', $out), value('mem2', $out));
	ok( num($m1)
		  && num($m2)
		  && $m2 - $m1 <= $FLAT_TOL
		  && value('dev1', $out) eq '0'
		  && value('dev2', $out) eq '0'
		  && server_intact(),
		"10,000 joins: memory contexts flat between join 1,000 and 10,000 ($m1 -> $m2 bytes), device memory 0 at both"
	);
}

# ---------------------------------------------------------------------------
# 5. concurrency: pgbench, GpuHashJoins and gpuhash_aggregate, every result
#    checked against the native value computed beforehand
# ---------------------------------------------------------------------------
if (want('pgbench'))
{
  SKIP:
	{
		skip "pgbench not installed", 1
		  unless system('command -v pgbench >/dev/null 2>&1') == 0;
		my ($clients, $secs) =
		  $long ? (32, 300) : (8, $ENV{GPUHASH_PGBENCH_SECS} // 30);
		my $J1 =
		  "SELECT count(*) FROM ma a JOIN mb b ON a.k = b.k WHERE a.id % 97 = :r";
		my $J2 =
		  "SELECT count(*) + sum(b.id) FROM ma a LEFT JOIN mb b ON a.k = b.k AND b.id % 5 = 0 WHERE a.id % 89 = :r";
		my $A1 =
		  "SELECT sum(hashtext(t::text)) FROM gpuhash_aggregate(\$\$SELECT k % 101, count(*), sum(v), max(id) FROM ma WHERE id % 83 = :r GROUP BY 1\$\$) AS t(k int, n bigint, s bigint, m int)";
		my $A1N =
		  "SELECT sum(hashtext(t::text)) FROM (SELECT k % 101, count(*), sum(v), max(id) FROM ma WHERE id % 83 = r GROUP BY 1) AS t(k, n, s, m)";

		# the expected values, natively, for r = 0..9
		psql_q(
			$node,
			{ db => 'robust' },
			"SET gpuhash.enabled = off; CREATE TABLE bench_expect AS SELECT r,
        (SELECT count(*) FROM ma a JOIN mb b ON a.k = b.k WHERE a.id % 97 = r) AS j1,
        (SELECT count(*) + sum(b.id) FROM ma a LEFT JOIN mb b ON a.k = b.k AND b.id % 5 = 0 WHERE a.id % 89 = r) AS j2,
        ($A1N) AS a1 FROM generate_series(0, 9) r");
		my $bf = sqlfile('bench.sql', <<"EOF");
\\set r random(0, 9)
SET gpuhash.force_join = on;
SELECT j1, j2, a1 FROM bench_expect WHERE r = :r \\gset
SELECT 1 / (($J1) = :j1)::int AS j1_ok;
SELECT 1 / (($J2) = :j2)::int AS j2_ok;
SELECT 1 / (($A1) = :a1)::int AS a1_ok;
EOF
		(my $j1 = $J1) =~ s/:r/1/g;
		(my $j2 = $J2) =~ s/:r/1/g;
		my $gj = q1("SELECT rb_gpu_joins('$j1') + rb_gpu_joins('$j2')");
		ok(num($gj) && $gj >= 2,
			"pgbench: the benchmark's joins are GpuHashJoins");
		my $prelines = () = server_log() =~ /\n/g;
		my ($out, $err) = ('', '');
		IPC::Run::run(
			[
				'pgbench', '-n', '-h', $node->host, '-p', $node->port,
				'-c', $clients, '-j', 2, '-T', $secs, '-f', $bf, 'robust'
			],
			'>&', \$out);
		my $rc = $? >> 8;
		save('pgbench.out', $out);
		my ($tx) = $out =~ /^number of transactions actually processed: ([0-9]*)/m;
		my ($failed) = $out =~ /^number of failed transactions: ([0-9]*)/m;
		$tx ||= 0;
		$failed ||= 0;
		my $aborted = () = $out =~ /client [0-9]* aborted/g;

		# every ERROR of the run, as the server logged it; context creation
		# failures among them
		my @l = split /\n/, server_log();
		my $run_log = join("\n", @l[ $prelines .. $#l ]);
		save('pgbench-server.log', $run_log);
		my $nerr = () = $run_log =~ /\] [0-9A-Z]{5} (ERROR|FATAL|PANIC):/g;
		my $nctx = () = $run_log =~ /\] [0-9A-Z]{5} (?:ERROR|FATAL):.*CUDA context/g;
		diag(   "pgbench: $clients clients, $secs s: $tx transactions ("
			  . ($tx * 3)
			  . " checked queries: "
			  . ($tx * 2)
			  . " GpuHashJoins, $tx gpuhash_aggregate), $failed failed, $aborted clients aborted, exit $rc; server log: $nerr ERROR/FATAL/PANIC lines, $nctx context-creation failures"
		);
		ok( $rc == 0 && $tx > 0 && $aborted == 0 && $failed == 0,
			"pgbench: $clients clients for $secs s of GpuHashJoins and gpuhash_aggregate: $tx transactions, every result correct, no client aborted"
		) or diag(grep_lines(qr/ERROR|aborted|FATAL/, $out, 5));
		ok($nerr == 0,
			"pgbench: no ERROR in the server log during the run ($nerr; context-creation failures: $nctx)"
		) or diag(grep_lines(qr/\] [0-9A-Z]{5} (ERROR|FATAL|PANIC):/, $run_log, 5));
		@l = split /\n/, server_log();
		splice(@l, 0, $crashlines);
		my $fatal = grep {
			/FATAL|could not create/
			  && !/terminating connection due to administrator command/
		} @l;
		ok(server_intact() && $fatal == 0,
			"pgbench: no backend crashed or died with FATAL, the server did not restart"
		);
		is(q1("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"),
			'0', "pgbench: nothing left waiting on a lock (no deadlock)");
	}
}

# ---------------------------------------------------------------------------
# 6. extension lifecycle: DROP, re-CREATE, use without preload
# ---------------------------------------------------------------------------
if (want('lifecycle'))
{
	psql_q($node, "CREATE DATABASE life");
	my ($out) = psql_run($node, ['-At'], db => 'life', merge => 1, stdin => <<'SQL');
CREATE TABLE la AS SELECT g AS id, g % 10 AS k FROM generate_series(1, 100) g;
CREATE TABLE lb AS SELECT g AS id, g % 12 AS k FROM generate_series(1, 80) g;
SET gpuhash.force_join = on;
SET gpuhash.enabled = off;
SELECT count(*) AS native FROM la JOIN lb USING (k) \gset
SET gpuhash.enabled = on;
SELECT 'before_create=' || (count(*) = :native) FROM la JOIN lb USING (k);
CREATE EXTENSION gpuhash;
SELECT 'created=' || (count(*) = :native) FROM la JOIN lb USING (k);
DROP EXTENSION gpuhash;
-- the library stays loaded; joins still run (or are planned natively)
SELECT 'dropped=' || (count(*) = :native) FROM la JOIN lb USING (k);
SELECT gpuhash_device_memory();
CREATE EXTENSION gpuhash;
SELECT 'recreated=' || (count(*) = :native) FROM la JOIN lb USING (k);
SELECT 'devmem=' || gpuhash_device_memory();
DROP EXTENSION gpuhash;
CREATE EXTENSION gpuhash;
SELECT 'twice=' || (count(*) = :native) FROM la JOIN lb USING (k);
SQL
	save('lifecycle.out', $out);
	ok( $out =~ /^before_create=true/m
		  && $out =~ /^created=true/m
		  && $out =~ /^dropped=true/m
		  && $out =~ /ERROR:  function gpuhash_device_memory\(\) does not exist/
		  && $out =~ /^recreated=true/m
		  && $out =~ /^devmem=0/m
		  && $out =~ /^twice=true/m
		  && server_intact(),
		"lifecycle (preloaded): CREATE, use, DROP (functions gone: a clean ERROR), re-CREATE, use: right rows, no crash"
	) or diag(grep_lines(qr/^(?!.*(=true|=0))/, $out, 5));

	my ($node2, $started2) = gh_node(
		'nopreload', qq{
gpuhash.device = $device
shared_preload_libraries = ''
});
	if ($started2)
	{
		($out) = psql_run($node2, ['-At'], merge => 1, stdin => <<'SQL');
SELECT 'preload=' || current_setting('shared_preload_libraries');
CREATE TABLE la AS SELECT g AS id, g % 10 AS k FROM generate_series(1, 100) g;
CREATE TABLE lb AS SELECT g AS id, g % 12 AS k FROM generate_series(1, 80) g;
SELECT count(*) AS native FROM la JOIN lb USING (k) \gset
-- a placeholder setting before the library is loaded
SET gpuhash.force_join = on;
SELECT 'unloaded=' || (count(*) = :native) FROM la JOIN lb USING (k);
SELECT gpuhash_device_memory();
CREATE EXTENSION gpuhash;
SET gpuhash.device = cpu;
SELECT 'loaded_by_create=' || (count(*) = :native) FROM la JOIN lb USING (k);
SELECT 'devmem=' || gpuhash_device_memory();
\c
-- a new session: the library is not loaded until something loads it
SET gpuhash.force_join = on;
SELECT count(*) AS native FROM la JOIN lb USING (k) \gset
SELECT 'new_session=' || (count(*) = :native) FROM la JOIN lb USING (k);
LOAD 'gpuhash';
SET gpuhash.device = cpu;
SELECT 'after_load=' || (count(*) = :native) FROM la JOIN lb USING (k);
DROP EXTENSION gpuhash;
SELECT 'after_drop=' || (count(*) = :native) FROM la JOIN lb USING (k);
CREATE EXTENSION gpuhash;
SELECT 'recreated=' || (count(*) = :native) FROM la JOIN lb USING (k);
SQL
		save('nopreload.out', $out);
		ok( $out =~ /^preload=$/m
			  && $out =~ /^unloaded=true/m
			  && $out =~ /ERROR:  function gpuhash_device_memory\(\) does not exist/
			  && $out =~ /^loaded_by_create=true/m
			  && $out =~ /^devmem=0/m
			  && $out =~ /^new_session=true/m
			  && $out =~ /^after_load=true/m
			  && $out =~ /^after_drop=true/m
			  && $out =~ /^recreated=true/m
			  && slurp_file($node2->logfile) !~ /terminated by signal|PANIC|TRAP:/,
			"lifecycle without preload: use before CREATE, CREATE loads it, new session, LOAD, DROP, re-CREATE: right rows, clean ERRORs, no crash"
		) or diag(grep_lines(qr/^(?!.*(=true|=0))/, $out, 6));

		# a GpuHashJoin really runs after LOAD in a session without preload
		($out) = psql_run($node2, ['-At'], merge => 1, stdin => <<'SQL');
LOAD 'gpuhash';
SET gpuhash.device = cpu; SET gpuhash.force_join = on;
EXPLAIN (COSTS OFF) SELECT count(*) FROM la JOIN lb USING (k);
SQL
		save('nopreload2.out', $out);
		ok($out =~ /GpuHashJoin/,
			"lifecycle without preload: after LOAD 'gpuhash' the session plans GpuHashJoins"
		) or diag(tail_lines(join("\n", (split /\n/, $out)[ 0 .. 2 ]), 3));
		$node2->stop;
	}
	else
	{
		fail("lifecycle without preload: could not start the second cluster");
	}
}

# ---------------------------------------------------------------------------
# 7. the server as a whole
# ---------------------------------------------------------------------------
ok(server_intact(),
	"the server ran the whole suite without a restart or crash after the kill -9 test"
);
if ($gpu_check)
{
	my ($settled, $u) = gpu_settled();
	ok($settled,
		"the whole suite: with every session gone the GPU's used memory is back at its baseline ($gpu_base -> $u MiB)"
	);
}
my $xx = () = server_log() =~ /\] XX000 ERROR/g;
ok($xx == 0, "no internal error (XX000) in the server log ($xx)")
  or diag(grep_lines(qr/\] XX000 ERROR/, server_log(), 3));

# ---------------------------------------------------------------------------
# 8. a short sqlsmith run in its own cluster
# ---------------------------------------------------------------------------
if ($smith)
{
	my $out = '';
	IPC::Run::run(
		[
			'bash', gh_root() . '/test/robust/sqlsmith.sh',
			$ENV{GPUHASH_SMITH_SECONDS} // 60, "$outdir/sqlsmith"
		],
		'>&', \$out);
	save('sqlsmith.tap', $out);
	for my $line (split /\n/, $out)
	{
		if ($line =~ /^ok [0-9]* - (.*) # SKIP (.*)$/)
		{
		  SKIP: { skip "sqlsmith: $1: $2", 1; }
		}
		elsif ($line =~ /^ok [0-9]* - (.*)$/)
		{
			pass("sqlsmith: $1");
		}
		elsif ($line =~ /^not ok [0-9]* - (.*)$/)
		{
			fail("sqlsmith: $1");
		}
		elsif ($line =~ /^#\s?(.*)$/)
		{
			note($1);
		}
	}
}

done_testing();
