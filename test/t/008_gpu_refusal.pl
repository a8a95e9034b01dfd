# test/t/008_gpu_refusal.pl - a GPU or driver this build cannot serve, on
# any host (issue 38).
#
# cuda/device.cu refuses, before any context exists, a driver older than the
# CUDA version the build is of, a GPU whose architecture the build has no
# code for, and a gpuhash.cuda_device past the GPUs there are.  The server
# must then leave plans alone under gpuhash.device = auto, log why once (not
# once per backend) with a HINT, raise a clean ERROR under device = gpu, and
# the GPU service must log the same reason and stop.  The environment
# variables GPUHASH_EMULATE_DRIVER and GPUHASH_EMULATE_CC stand in for the
# driver's version and device 0's compute capability, so the refusals run
# here on the CPU twin's hosts too; test/arch_check.sh shows the
# architecture refusal on a real GPU.
#
# Each case starts a cluster of its own with the emulation in the server's
# environment and checks:
#   - device = auto: a join forced by gpuhash.force_join is planned natively,
#     with native's rows, from two backends;
#   - the server log holds exactly one "found no usable GPU" line from the
#     backends, with the case's DETAIL and HINT;
#   - device = gpu: ERROR 0A000 with the same DETAIL;
#   - the GPU service (gpu_service = parallel) logs the same DETAIL and stops.
# A build without CUDA says so instead, for every case.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use GpuHash::Test;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my @cases = (
	{
		name => 'architecture',
		env => { GPUHASH_EMULATE_DRIVER => 13000, GPUHASH_EMULATE_CC => 70 },
		conf => '',
		detail => qr/The GPU's compute capability is 7\.0; this build of gpuhash has machine code for sm_\d+/,
		hint => qr/HINT:  Build gpuhash for the GPU's architecture too: make GPUHASH_CUDA_ARCHS="70"/,
	},
	{
		name => 'driver',
		env => { GPUHASH_EMULATE_DRIVER => 11080 },
		conf => '',
		detail => qr/The NVIDIA driver supports CUDA 11\.8; this build of gpuhash needs CUDA \d+\.0 or later\./,
		hint => qr/HINT:  Upgrade the NVIDIA driver to one for CUDA \d+/,
	},
	{
		name => 'cuda_device',
		env => { GPUHASH_EMULATE_DRIVER => 13000, GPUHASH_EMULATE_CC => 90 },
		conf => "gpuhash.cuda_device = 2\n",
		detail => qr/gpuhash\.cuda_device is 2, but CUDA sees 1 GPU\./,
		hint => qr/HINT:  Set gpuhash\.cuda_device to an ordinal below 1/,
	});

my $join = 'SELECT count(*), sum(v), sum(w) FROM ra JOIN rb USING (k)';

foreach my $c (@cases)
{
	my $name = $c->{name};
	local @ENV{ keys %{ $c->{env} } } = values %{ $c->{env} };
	my ($node, $started) = gh_node(
		"refuse_$name", qq{
gpuhash.device = auto
gpuhash.gpu_service = parallel
log_min_messages = log
$c->{conf}});
	ok($started, "$name: the server starts with the emulation");
	next unless $started;

	psql_q($node, 'CREATE EXTENSION gpuhash',
		'CREATE TABLE ra AS SELECT g AS k, g % 7 AS v FROM generate_series(1, 20000) g',
		'CREATE TABLE rb AS SELECT g * 3 AS k, g AS w FROM generate_series(1, 20000) g',
		'ANALYZE ra, rb');
	my $want = psql_q($node, 'SET gpuhash.enabled = off', $join);
	for my $backend (1, 2)
	{
		my $plan = psql_q($node, 'SET gpuhash.force_join = on',
			"EXPLAIN (COSTS OFF) $join");
		my $got = psql_q($node, 'SET gpuhash.force_join = on', $join);
		ok($plan !~ /GpuHash/ && $got eq $want && $want =~ /^\d+\|\d+\|\d+$/,
			"$name: device = auto, backend $backend: the forced join is planned natively, with native's rows ($got)");
	}

	my ($out, $err) = psql_run($node,
		[ '-q', '-At', '-v', 'VERBOSITY=verbose',
		  '-c', 'SET gpuhash.device = gpu', '-c', 'SET gpuhash.force_join = on',
		  '-c', $join ]);
	$node->stop;
	my $log = slurp_file($node->logfile);

	if ($log =~ /gpuhash was built without CUDA/)
	{
		# the emulation lives in the CUDA build's device layer
		like($err, qr/ERROR:  0A000: gpuhash.device is "gpu" but no usable GPU was found/,
			"$name: a build without CUDA: device = gpu is a clean ERROR");
		next;
	}
	my @lines = ($log =~ /^.*LOG:  gpuhash found no usable GPU.*$/mg);
	is(scalar @lines, 1, "$name: the backends logged why exactly once");
	my ($entry) = ($log =~ /(LOG:  gpuhash found no usable GPU[^\n]*\n[^\n]*\n[^\n]*)/);
	$entry //= '';
	like($entry, $c->{detail}, "$name: the LOG line's DETAIL says why");
	like($entry, $c->{hint}, "$name: and its HINT what to do");
	like($err, qr/ERROR:  0A000: gpuhash.device is "gpu" but no usable GPU was found/,
		"$name: device = gpu is a clean ERROR 0A000");
	like($err, $c->{detail}, "$name: with the same DETAIL");
	my ($svc) = ($log =~ /(LOG:  gpuhash GPU service found no usable GPU and stops\n[^\n]*)/);
	like($svc // '', $c->{detail}, "$name: the GPU service logs the same reason and stops");
	unlike($log, qr/PANIC|terminated by signal/, "$name: no process crashed");
}

done_testing();
