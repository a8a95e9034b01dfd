# test/perl/GpuHash/Test.pm - shared helpers for gpuhash's TAP tests (test/t).
#
# The tests run on PostgreSQL's own TAP framework: PostgreSQL::Test::Cluster
# makes, starts and tears down each throwaway cluster, Test::More counts.
# This module adds what every gpuhash test needs on top:
#
#   - the device the run tests (GPUHASH_TEST_DEVICE: cpu, the default, gpu or
#     auto), as test/run.sh chooses it for the whole suite;
#   - gh_node: a cluster with gpuhash preloaded and the settings the shell
#     helpers used to write (no JIT, two parallel workers a Gather, no
#     statement logging), then the test's own lines, which win; crash restart
#     on, as a server in production has it, because the robustness tests kill
#     backends and wait for the postmaster to recover;
#   - psql as the tests call it: psql_q (one value, unaligned, stop on
#     error), psql_q0 (no stop), psql_run (any arguments, stdin, both outputs) and
#     psql_bg (a session in the background), none of which dies, so a failing
#     query makes its own test fail and the script goes on;
#   - a port from GPUHASH_PORTS ("FIRST LAST"), where a shared machine gives
#     each run its own range;
#   - a deadline, GPUHASH_TAP_DEADLINE seconds from the test's start (none
#     when unset): past it the test bails out, its clusters stop and prove
#     ends, so that a run with a time limit of its own (a call on the GPU
#     host) keeps the logs that say where the test was.
#
# PERL5LIB (or prove -I) must name PostgreSQL's test modules, the pgxs
# directory's src/test/perl, and this directory; test/run.sh and the
# Makefile's TAP_TESTS do.  Clusters refuse root: run the tests as the user
# that owns the clusters (test/run.sh does, through gh_as_pg).

package GpuHash::Test;

use strict;
use warnings;

use Exporter 'import';
use File::Basename;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();

our @EXPORT = qw(gh_device gh_expect_gpu gh_node gh_root gh_standby psql_run
  psql_bg psql_q psql_q0 sleep_s wait_until);

# PostgreSQL::Test::Cluster->init runs pg_regress --config-auth; PGXS's
# prove_installcheck names it, a direct prove run finds it beside pgxs
BEGIN
{
	if (!defined $ENV{PG_REGRESS})
	{
		my $pg_config = $ENV{PG_CONFIG} // 'pg_config';
		my $pgxs = `$pg_config --pgxs`;
		chomp $pgxs;
		$ENV{PG_REGRESS} = dirname($pgxs) . '/../test/regress/pg_regress'
		  if $pgxs;
	}
}

if (my $deadline = $ENV{GPUHASH_TAP_DEADLINE})
{
	die "GPUHASH_TAP_DEADLINE must be a number of seconds\n"
	  unless $deadline =~ /^[0-9]+$/;
	$SIG{ALRM} = sub {
		BAIL_OUT("the test ran past GPUHASH_TAP_DEADLINE ($deadline s)");
	};
	alarm $deadline;
}

# gh_root: the checkout (or its readable copy) the tests run from
sub gh_root
{
	return File::Basename::dirname(__FILE__) . '/../../..';
}

# gh_device: the device the run tests; gh_expect_gpu: whether its joins are
# to run on a GPU (gpuhash_test.gpu, which the test-only probes read)
sub gh_device
{
	my $d = $ENV{GPUHASH_TEST_DEVICE} // 'cpu';
	BAIL_OUT("GPUHASH_TEST_DEVICE must be cpu, gpu or auto")
	  unless $d =~ /^(cpu|gpu|auto)$/;
	return $d;
}

sub gh_expect_gpu
{
	return gh_device() eq 'cpu' ? 'off' : 'on';
}

# pick_port: the first port of GPUHASH_PORTS that nothing binds and no
# cluster of this test uses; without GPUHASH_PORTS, the framework's choice
sub pick_port
{
	my ($first, $last) = split ' ', ($ENV{GPUHASH_PORTS} // '');
	return undef unless $first && $last;
	my %taken =
	  map { $_->port => 1 } @PostgreSQL::Test::Cluster::all_nodes;
	for my $p ($first .. $last)
	{
		next if $taken{$p};
		next if -e "/tmp/.s.PGSQL.$p";
		return $p if PostgreSQL::Test::Cluster::can_bind('127.0.0.1', $p);
	}
	BAIL_OUT("no free port in GPUHASH_PORTS ($first $last)");
}

# gh_node(NAME, CONF, %opts): a new cluster, initialised (with opts{init}'s
# options, such as allows_streaming => 1), gpuhash preloaded, then CONF's
# lines; started unless opts{start} is 0.  Returns the node and whether it
# started ((node, 1) in list context); the caller counts the start as a test
# where the old script did.
sub gh_node
{
	my ($name, $conf, %opts) = @_;
	my $port = pick_port();
	my $node = PostgreSQL::Test::Cluster->new($name,
		defined $port ? (port => $port) : ());
	$node->init(%{ $opts{init} // {} });
	$node->append_conf(
		'postgresql.conf', qq{
shared_preload_libraries = 'gpuhash'
jit = off
max_parallel_workers_per_gather = 2
restart_after_crash = on
log_statement = none
} . ($conf // ''));
	my $started = 0;
	$started = $node->start(fail_ok => 1)
	  unless defined $opts{start} && !$opts{start};
	return wantarray ? ($node, $started) : $node;
}

# gh_standby(PRIMARY, NAME, CONF): a streaming standby of PRIMARY (which
# allows streaming), from a new base backup, with PRIMARY's configuration
# and then CONF's lines, started
sub gh_standby
{
	my ($primary, $name, $conf) = @_;
	my $port = pick_port();
	$primary->backup("$name.backup");
	my $node = PostgreSQL::Test::Cluster->new($name,
		defined $port ? (port => $port) : ());
	$node->init_from_backup($primary, "$name.backup", has_streaming => 1);
	$node->append_conf('postgresql.conf', $conf // '');
	$node->start;
	return $node;
}

# psql_run(NODE, ARGS, %opts): psql -X ARGS against NODE (database
# opts{db}, default postgres; stdin opts{stdin}; killed after opts{timeout}
# seconds, as timeout(1) does); returns (stdout, stderr, exit status), with
# opts{merge} stdout and stderr in one string as they came.  Never dies.
sub psql_run
{
	my ($node, $args, %o) = @_;
	my @cmd = (($o{timeout} ? ('timeout', $o{timeout}) : ()),
		'psql', '-X', '-d', $node->connstr($o{db} // 'postgres'), @$args);
	my ($in, $out, $err) = ($o{stdin} // '', '', '');
	my @redir = $o{merge} ? ('>&', \$out) : ('>', \$out, '2>', \$err);
	IPC::Run::run(\@cmd, '<', \$in, @redir);
	my $rc = $? >> 8;
	print STDERR $err if $err ne '';
	return ($out, $err, $rc);
}

# the output as the shell's $(...) gives it: without trailing newlines
sub _trim
{
	my $s = shift;
	$s =~ s/\n+\z//;
	return $s;
}

# psql_q(NODE, SQL...): psql -q -At -v ON_ERROR_STOP=1 -c SQL for each SQL, in the
# database postgres; returns stdout.  psql_q0: the same without ON_ERROR_STOP.
# A leading hash of options passes to psql_run ({db => 'robust', merge => 1}).
sub psql_q
{
	my $node = shift;
	my %o = ref $_[0] eq 'HASH' ? %{ shift() } : ();
	my ($out) = psql_run($node,
		[ '-q', '-At', '-v', 'ON_ERROR_STOP=1', map { ('-c', $_) } @_ ], %o);
	return _trim($out);
}

sub psql_q0
{
	my $node = shift;
	my %o = ref $_[0] eq 'HASH' ? %{ shift() } : ();
	my ($out) = psql_run($node, [ '-q', '-At', map { ('-c', $_) } @_ ], %o);
	return _trim($out);
}

# psql_bg(NODE, ARGS, %opts): psql -X ARGS in the background (the script
# opts{stdin} on its standard input; opts{timeout} as psql_run's), its
# stdout and stderr to opts{out} (a file name, or a scalar reference for
# small outputs, filled as the harness is pumped or finished; default
# nowhere); returns the IPC::Run harness (->finish waits and is true when
# psql exited 0, ->kill_kill ends it)
sub psql_bg
{
	my ($node, $args, %o) = @_;
	my @cmd = (($o{timeout} ? ('timeout', $o{timeout}) : ()),
		'psql', '-X', '-d', $node->connstr($o{db} // 'postgres'), @$args);
	# a script from a file: IPC::Run would feed a string only while the
	# caller pumps the harness, and the session is to run meanwhile
	my $in = '/dev/null';
	if (defined $o{stdin})
	{
		$in = PostgreSQL::Test::Utils::tempdir() . '/stdin.sql';
		PostgreSQL::Test::Utils::append_to_file($in, $o{stdin});
	}
	my $out = $o{out} // '/dev/null';
	return IPC::Run::start(\@cmd, '<', $in, '>', $out, '2>&1');
}

# sleep_s(SECONDS): a fractional sleep
sub sleep_s
{
	Time::HiRes::sleep(shift);
	return;
}

# wait_until(TRIES, SECONDS, CODE): calls CODE up to TRIES times, SECONDS
# apart, until it returns true; returns its last value
sub wait_until
{
	my ($tries, $secs, $code) = @_;
	my $r;
	for (1 .. $tries)
	{
		$r = $code->();
		return $r if $r;
		sleep_s($secs);
	}
	return $r;
}

1;
