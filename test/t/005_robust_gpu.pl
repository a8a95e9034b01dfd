# test/t/005_robust_gpu.pl - robustness tests that need a real GPU (issue 6).
#
#   A. a server whose GPU driver is missing, broken or failing still starts;
#      gpuhash.device = auto leaves plans alone with at most one WARNING
#      (none expected: one LOG line per backend), device = gpu gives a clean
#      ERROR with a hint.  Driver variants: CUDA_VISIBLE_DEVICES=-1 (no
#      device), a libcuda.so.1 that exports nothing, and one whose every
#      entry point fails (test/robust/fake_libcuda.c, first on
#      LD_LIBRARY_PATH).
#   B. device memory exhausted by other work (test/robust/hog.cu holds all
#      but a few MiB of the GPU): a session that already has its context
#      falls back to the CPU twin or fails cleanly (53200); a session without
#      one fails cleanly and uses the GPU again once the memory is back;
#      many concurrent sessions with the GPU shrunk to a few contexts' worth:
#      every query native's rows or 53200, none hangs, the GPU's memory back
#      at its baseline afterwards.
#   C. statement_timeout during the device phase of a big build (the copy of
#      the inner side's hashes to the device, the build kernel, the copy of
#      the row array back): a sweep of timeouts across that phase; each query
#      stops within 1 s, nothing held afterwards.  Also timeouts during
#      gpuhash_device_selftest of 1 GiB (copies through pinned memory).
#
# GPUHASH_TEST_DEVICE is gpu by default here where nvidia-smi sees a GPU, cpu
# elsewhere (make installcheck on any machine).  With cpu (or no GPU) part A
# runs as is (a host without a driver is the "missing" case), B runs with a
# hog that holds nothing (a dry run of the SQL and the checks), C runs on the
# CPU twin.  GPUHASH_B2_EXTRA (8), GPUHASH_B3_SESSIONS (24),
# GPUHASH_B3_LEAVE_MB (6144), GPUHASH_SWEEP (16) and GPUHASH_GPU_TOL_MB (4)
# size the parts.  The server is restarted with each driver variant's
# environment; each start writes a log of its own.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use GpuHash::Test;
use IPC::Run;
use POSIX qw(WNOHANG);
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $has_gpu = system('nvidia-smi -L >/dev/null 2>&1') == 0;
my $device = $ENV{GPUHASH_TEST_DEVICE} // ($has_gpu ? 'gpu' : 'cpu');
BAIL_OUT("GPUHASH_TEST_DEVICE must be cpu or gpu")
  unless $device =~ /^(cpu|gpu)$/;
my $expect_gpu = $device eq 'gpu' ? 'on' : 'off';
my $real = ($device eq 'gpu' && $has_gpu) ? 1 : 0;
my $CANCEL_BOUND = 1.0;
my $GPU_TOL_MB = $ENV{GPUHASH_GPU_TOL_MB} // 4;
my $robust = gh_root() . '/test/robust';
my $outdir = $PostgreSQL::Test::Utils::log_path;
my $tmp = PostgreSQL::Test::Utils::tempdir;

my $node = gh_node(
	'gpu', qq{
max_parallel_workers_per_gather = 0
max_connections = 60
log_line_prefix = '%m [%p] %e '
gpuhash_test.gpu = $expect_gpu
}, start => 0);

# start_server(%ENV): (re)start the postmaster with these environment
# variables, into a log of its own; true when it started
sub start_server
{
	my %env = @_;
	$node->stop('fast', fail_ok => 1);
	$node->rotate_logfile;
	local @ENV{ keys %env } = values %env;
	return $node->start(fail_ok => 1);
}

sub P
{
	my ($script, @args) = @_;
	my ($out, undef, $rc) = psql_run($node,
		[ '-q', '-v', 'ON_ERROR_STOP=1', @args ],
		db => 'rbg',
		stdin => $script,
		merge => 1);
	return wantarray ? ($out, $rc) : $out;
}
sub q1 { return psql_q($node, { db => 'rbg' }, shift); }
sub crashed { return slurp_file(shift) =~ /terminated by signal|reinitializing|PANIC|TRAP:/; }

sub save
{
	my ($name, $text) = @_;
	append_to_file("$outdir/$name", $text);
	return $text;
}

sub sqlfile
{
	my ($name, $text) = @_;
	my $f = "$tmp/$name";
	unlink $f;
	append_to_file($f, $text);
	return $f;
}

sub value
{
	my ($k, $text) = @_;
	return ($text // '') =~ /^\Q$k\E=(.*)$/m ? $1 : '';
}

sub grep_lines
{
	my ($re, $text, $n) = @_;
	my @l = grep { /$re/ } split /\n/, ($text // '');
	splice(@l, $n) if defined $n && @l > $n;
	return join("\n", @l);
}

sub slurp { my $f = shift; return -e $f ? slurp_file($f) : ''; }
sub num { return defined $_[0] && $_[0] =~ /^-?[0-9]+(\.[0-9]+)?$/; }

sub gpu_used
{
	my $u = `nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 2>/dev/null`;
	($u) = split /\n/, ($u // '');
	$u //= '';
	$u =~ s/ //g;
	return $u;
}

# gpu_settle(BASE): wait (at most 15 s) for the GPU's used memory to come
# back within GPU_TOL_MB of BASE (MiB); returns (settled, the last value)
sub gpu_settle
{
	my $base = shift;
	my $u;
	for (1 .. 60)
	{
		$u = gpu_used();
		return (1, $u) if num($u) && abs($u - $base) <= $GPU_TOL_MB;
		sleep_s(0.25);
	}
	return (0, ($u // '') ne '' ? $u : '?');
}

# ---------------------------------------------------------------------------
# A. missing, broken and failing driver
# ---------------------------------------------------------------------------
mkdir "$tmp/empty";
mkdir "$tmp/fail";
ok( system(
		'gcc', '-shared', '-fPIC', '-O1', '-o', "$tmp/empty/libcuda.so.1",
		'-Wl,-soname,libcuda.so.1', '-DGH_FAKE_EMPTY', "$robust/fake_libcuda.c"
	  ) == 0
	  && system(
		'gcc', '-shared', '-fPIC', '-O1', '-o', "$tmp/fail/libcuda.so.1",
		'-Wl,-soname,libcuda.so.1', "$robust/fake_libcuda.c") == 0,
	"fake driver libraries built");
unless (start_server())
{
	fail("server start");
	done_testing();
	exit 1;
}
psql_q($node, "CREATE DATABASE rbg");
my ($setup, $src) = P(<<'SQL');
CREATE EXTENSION gpuhash;
CREATE TABLE da AS SELECT g AS id, g % 97 AS k FROM generate_series(1, 5000) g;
CREATE TABLE db AS SELECT g AS id, g % 89 AS k FROM generate_series(1, 3000) g;
ANALYZE;
SQL
save('setup.log', $setup);
if ($src != 0)
{
	diag($setup);
	fail("setup");
	done_testing();
	exit 1;
}
my $drv_sql = sqlfile('driver.sql', <<'SQL');
\set VERBOSITY verbose
SELECT 'ndev=' || count(*) FROM gpuhash_devices();
SELECT 'setting=' || current_setting('gpuhash.device');
SET gpuhash.force_join = on;
SET gpuhash.enabled = off;
SELECT count(*) || ':' || sum(da.id + db.id) AS native FROM da JOIN db USING (k) \gset
SET gpuhash.enabled = on;
EXPLAIN (COSTS OFF) SELECT count(*) FROM da JOIN db USING (k);
SELECT 'auto_rows=' || (count(*) || ':' || sum(da.id + db.id) = :'native') FROM da JOIN db USING (k);
SELECT 'active=' || gpuhash_active_device();
SELECT 'devmem=' || gpuhash_device_memory();
SET gpuhash.device = gpu;
SELECT count(*) FROM da JOIN db USING (k);
SELECT * FROM gpuhash_aggregate('SELECT k, count(*) FROM da GROUP BY k') AS t(k int, n bigint) LIMIT 1;
SELECT gpuhash_device_selftest(1024);
SET gpuhash.device = cpu;
SELECT 'cpu_rows=' || (count(*) || ':' || sum(da.id + db.id) = :'native') FROM da JOIN db USING (k);
SELECT 'alive=yes';
SQL
my $ldp = $ENV{LD_LIBRARY_PATH};
my %variants = (
	'no-device' => { CUDA_VISIBLE_DEVICES => -1 },
	'broken-libcuda' =>
	  { LD_LIBRARY_PATH => "$tmp/empty" . ($ldp ? ":$ldp" : '') },
	'failing-libcuda' =>
	  { LD_LIBRARY_PATH => "$tmp/fail" . ($ldp ? ":$ldp" : '') });
for my $variant (qw(no-device broken-libcuda failing-libcuda))
{
	my $started = start_server(%{ $variants{$variant} });
	my $slog = $node->logfile;
	ok($started, "driver $variant: the server starts with gpuhash preloaded")
	  or diag(join("\n", (split /\n/, slurp($slog))[-3 .. -1]));
	my ($out) =
	  psql_run($node, [ '-At', '-f', $drv_sql ], db => 'rbg', merge => 1);
	save("driver-$variant.out", $out);

	# two more sessions using gpuhash with device = auto
	my $more = '';
	for (1, 2)
	{
		my ($o) = psql_run(
			$node,
			[
				'-At', '-c', "SET gpuhash.force_join = on",
				'-c', "SELECT count(*) FROM da JOIN db USING (k)",
				'-c', "SELECT count(*) FROM gpuhash_devices()"
			],
			db => 'rbg',
			merge => 1);
		$more .= $o;
	}
	save("driver-$variant.more", $more);
	my $plans = () = $out =~ /GpuHashJoin/g;
	ok( value('ndev', $out) eq '0'
		  && value('setting', $out) eq 'auto'
		  && $plans == 0
		  && $out =~ /^auto_rows=true/m
		  && $out =~ /^active=cpu/m
		  && $out =~ /^devmem=0/m,
		"driver $variant: device = auto sees no GPU, leaves the plan alone (forced join planned natively), native's rows"
	) or diag(grep_lines(qr/^(?!.*=)(?! )/, $out, 4));
	my $ngpuerr = () = $out =~
	  /ERROR:  0A000: gpuhash.device is "gpu" but no usable GPU was found/g;
	my $nhint = () = $out =~ /HINT:  Set gpuhash.device to "auto"/g;
	ok( $ngpuerr == 3
		  && $nhint == 3
		  && $out =~ /^cpu_rows=true/m
		  && $out =~ /^alive=yes/m,
		"driver $variant: device = gpu gives a clean ERROR 0A000 with a hint (join, gpuhash_aggregate, selftest: $ngpuerr of 3), the session goes on"
	) or diag(grep_lines(qr/ERROR|DETAIL|HINT/, $out, 6));
	note("$variant: " . grep_lines(qr/DETAIL/, $out, 1));
	my $server = slurp($slog);
	my $nwarn = () = ($server . $out . $more) =~ /WARNING/g;
	my $nlog = () = $server =~ /LOG:  gpuhash found no usable GPU/g;
	ok( $nwarn <= 1
		  && !crashed($slog)
		  && $more !~ /ERROR|FATAL/,
		"driver $variant: at most one WARNING (server log and clients: $nwarn; 'no usable GPU' LOG lines: $nlog), no crash"
	) or diag(grep_lines(qr/WARNING|ERROR|FATAL/, $server . $more, 3));
	my ($first) = $server =~ /^(.*LOG:  gpuhash found no usable GPU.*\n.*)$/m;
	note("$variant log: $first") if $first;
}

# back to the plain environment for the rest, device from GPUHASH_TEST_DEVICE
$node->append_conf('postgresql.conf', "gpuhash.device = $device");
ok(start_server(), "the server starts again with the real driver");
my $log = $node->logfile;

# ---------------------------------------------------------------------------
# B. device memory exhausted by other work
# ---------------------------------------------------------------------------
my $hog = '';
if ($real)
{
	$hog = "$tmp/hog";
	my $blog = '';
	IPC::Run::run([ 'nvcc', '-O2', '-o', $hog, "$robust/hog.cu" ],
		'>&', \$blog);
	ok($? == 0, "hog built with nvcc") or diag($blog);
}

# hog_start(LEAVE_MB): hold all but LEAVE_MB of the GPU (a dry run holds
# nothing); returns the hog's report
my $hog_pid;
END { kill 'TERM', $hog_pid if $hog_pid; }

sub hog_alive
{
	return $hog_pid && waitpid($hog_pid, WNOHANG) == 0;
}

sub hog_start
{
	my $leave = shift;
	my $ready = "$tmp/hog.ready";
	unlink $ready;
	my @cmd = $hog ? ($hog, $leave, 600, $ready) : ('sleep', 600);
	append_to_file($ready, "held=0 free=dry-run\n") unless $hog;
	$hog_pid = fork();
	if (defined $hog_pid && $hog_pid == 0)
	{
		open STDIN, '<', '/dev/null';
		open STDOUT, '>', "$tmp/hog.err";
		open STDERR, '>&', \*STDOUT;
		{ exec(@cmd) };
		POSIX::_exit(127);
	}
	for (1 .. 300)
	{
		last if -s $ready;
		last unless hog_alive();
		sleep_s(0.1);
	}
	my $rep = -s $ready ? slurp_file($ready) : slurp("$tmp/hog.err");
	chomp $rep;
	return $rep;
}

my $gpu_base;

# hog_stop: end the hog and wait (at most 15 s) until the driver has taken
# its memory back (the GPU's used memory back at gpu_base)
sub hog_stop
{
	if ($hog_pid)
	{
		kill 'TERM', $hog_pid;
		waitpid($hog_pid, 0);
		$hog_pid = undef;
	}
	gpu_settle($gpu_base) if $real && defined $gpu_base;
	return;
}

my ($setupb, $brc) = P(<<'SQL');
-- a big inner side (its table does not fit in a few MiB), a small one, an outer side
CREATE TABLE ex_big AS SELECT g::int8 AS k, g % 7 AS v FROM generate_series(1, 4000000) g;
CREATE TABLE ex_small AS SELECT g::int8 * 7 AS k, g % 5 AS v FROM generate_series(1, 2000) g;
CREATE TABLE ex_probe AS SELECT (g * 13)::int8 AS k, g AS id FROM generate_series(1, 200000) g;
ANALYZE;
-- wm: the query's work_mem.  join_big's lets it build its table in one
-- batch, well over the 48 MiB the hog leaves; within the default work_mem
-- it would split into batches of a few MiB, which fit beside the hog and
-- stay on the GPU
CREATE TABLE ex_expect (name text PRIMARY KEY, query text, val text, wm text);
INSERT INTO ex_expect (name, query) VALUES
 ('join_big', 'SELECT (count(*), sum(b.v), sum(p.id))::text FROM ex_probe p JOIN ex_big b ON p.k = b.k'),
 ('left_small', 'SELECT (count(*), sum(s.v), sum(p.id))::text FROM ex_probe p LEFT JOIN ex_small s ON p.k = s.k'),
 ('agg', $q$SELECT sum(hashtext(t::text))::text FROM gpuhash_aggregate('SELECT k % 1000, count(*), sum(v), max(k) FROM ex_big GROUP BY 1') AS t(g int8, n bigint, s bigint, m int8)$q$);
SET gpuhash.enabled = off;
UPDATE ex_expect SET val = (SELECT (count(*), sum(b.v), sum(p.id))::text FROM ex_probe p JOIN ex_big b ON p.k = b.k) WHERE name = 'join_big';
UPDATE ex_expect SET val = (SELECT (count(*), sum(s.v), sum(p.id))::text FROM ex_probe p LEFT JOIN ex_small s ON p.k = s.k) WHERE name = 'left_small';
UPDATE ex_expect SET val = (SELECT sum(hashtext(t::text))::text FROM (SELECT k % 1000, count(*), sum(v), max(k) FROM ex_big GROUP BY 1) t(g, n, s, m)) WHERE name = 'agg';
RESET gpuhash.enabled;
UPDATE ex_expect SET wm = '1GB' WHERE name = 'join_big';
-- ex_try(name): 'same' (native's value), 'DIFFERENT', or the SQLSTATE of
-- the ERROR, then the seconds it took; the ERROR is caught in a
-- subtransaction, whose abort frees what the query held
-- every ERROR ex_try caught, with its message and detail
CREATE TABLE ex_errors (at timestamptz DEFAULT clock_timestamp(), pid int DEFAULT pg_backend_pid(), name text, state text, msg text, detail text);
CREATE FUNCTION ex_try(name text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE qq text; e text; r text; m text; d text; w text; w0 text := current_setting('work_mem');
  t0 timestamptz := clock_timestamp();
BEGIN
  SELECT x.query, x.val, x.wm INTO qq, e, w FROM ex_expect x WHERE x.name = ex_try.name;
  PERFORM set_config('gpuhash.force_join', 'on', true);
  PERFORM set_config('work_mem', coalesce(w, w0), true);
  BEGIN
    EXECUTE qq INTO r;
    r := CASE WHEN r = e THEN 'same' ELSE 'DIFFERENT' END;
  EXCEPTION WHEN OTHERS THEN
    r := SQLSTATE;
    GET STACKED DIAGNOSTICS m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL;
    INSERT INTO ex_errors (name, state, msg, detail) VALUES (ex_try.name, r, m, d);
  END;
  PERFORM set_config('work_mem', w0, true);
  RETURN r || ' ' || round(extract(epoch FROM clock_timestamp() - t0)::numeric, 2) || 's';
END $$;
CREATE FUNCTION ex_all() RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(name || ':' || ex_try(name), ', ' ORDER BY name) FROM ex_expect
$$;
CREATE FUNCTION ex_free() RETURNS text LANGUAGE sql AS $$
  SELECT coalesce((SELECT free_mb FROM gpuhash_devices() WHERE ordinal = 0)::text, 'none')
$$;
-- a session waits here until the test says go (gate = name)
CREATE TABLE ex_gate (name text);
CREATE FUNCTION ex_wait(g text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1..3000 LOOP
    PERFORM pg_stat_clear_snapshot();
    IF EXISTS (SELECT 1 FROM ex_gate WHERE name = g) THEN RETURN 'go'; END IF;
    PERFORM pg_sleep(0.1);
  END LOOP;
  RETURN 'timeout';
END $$;
SQL
save('setupB.log', $setupb);
if ($brc != 0) { diag($setupb); fail("setup B"); }
sub gate { q1("INSERT INTO ex_gate VALUES ('$_[0]')"); return; }

# wait_line(FILE, RE): wait (at most 120 s) until FILE has a line matching
# RE; RE is matched line by line (a qr// keeps its own flags, so matching it
# against the whole file with /m would not anchor ^ at each line); a wait
# that ends without the line is a failed test, naming FILE and RE
sub wait_line
{
	my ($f, $re) = @_;
	my $r = wait_until(1200, 0.1, sub { grep { $_ =~ $re } split /\n/, slurp($f) });
	fail("$f has a line matching $re within 120 s") unless $r;
	return $r;
}

# outcome_ok(TEXT): every "name:RESULT Ns" in TEXT is same or 53200
sub outcome_ok
{
	my @r = shift =~ /([a-z_]+:[A-Z0-9a-z]+) /g;
	return !grep { !/:(same|53200)$/ } @r;
}

# errors_caught: ex_errors by name, state and message
sub errors_caught
{
	return q1(
		"SELECT string_agg(n || ' x ' || name || ' ' || state || ': ' || msg || coalesce(' (' || detail || ')', ''), '; ') FROM (SELECT count(*) AS n, name, state, msg, detail FROM ex_errors GROUP BY 2, 3, 4, 5) e"
	);
}

# the devices of the first and the last "Device:" lines of EXPLAIN ANALYZE
# in TEXT, squeezed ("Device:cpu"); the times that may follow are left out
sub device_lines
{
	my @d = map { /^ +Device: (\S+)/ ? "Device:$1" : () } split /\n/, shift;
	return @d;
}

if ($real)
{
	$gpu_base = gpu_used();
	note("GPU used memory with no session holding a context: $gpu_base MiB");
}

# B1: a session that has its context, then the device fills up
my $b1 = "$outdir/b1.out";
my $bh = psql_bg(
	$node, ['-At'],
	db => 'rbg',
	out => $b1,
	stdin => <<'SQL');
\set VERBOSITY verbose
SELECT 'warm=' || ex_all();
SELECT 'warm_active=' || gpuhash_active_device();
SELECT 'free0=' || ex_free();
SELECT 'ready=1';
SELECT 'gate=' || ex_wait('b1_hog');
SET client_min_messages = debug1;
SELECT 'full1=' || ex_all();
SELECT 'full2=' || ex_all();
SELECT 'full3=' || ex_all();
RESET client_min_messages;
SET gpuhash.force_join = on;
SET work_mem = '1GB';
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM ex_probe p JOIN ex_big b ON p.k = b.k;
RESET work_mem;
SELECT 'devmem_full=' || gpuhash_device_memory();
SELECT 'done_full=1';
SELECT 'gate=' || ex_wait('b1_free');
SELECT 'again=' || ex_all();
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM ex_probe p JOIN ex_big b ON p.k = b.k;
SELECT 'devmem=' || gpuhash_device_memory();
SELECT 'free1=' || ex_free();
SQL
if (wait_line($b1, qr/^ready=1/))
{
	note("B1 hog (leave 48 MiB): " . hog_start(48));
	gate('b1_hog');
	wait_line($b1, qr/^done_full=1/);
	hog_stop();
	gate('b1_free');
}
else
{
	# let the session run to its end (it would wait for each gate 300 s)
	gate($_) for ('b1_hog', 'b1_free');
}
$bh->finish;
my $out = slurp($b1);
my $r1 = join("\n", grep { /^full[123]=/ } split /\n/, $out);
my $nfb = () = $out =~ /no room on the GPU/g;
ok( $r1 ne ''
	  && outcome_ok($r1 . "\n")
	  && $out =~ /^devmem_full=0/m
	  && $out =~ /^warm_active=(gpu|cpu)/m,
	"B1 device full, session with its context: every query native's rows or a clean 53200, nothing held ("
	  . join(' ', split /\n/, $r1) . " )")
  or diag(grep_lines(qr/ERROR|warm/, $out, 4));
my @dev = device_lines($out);
note(   "B1: $nfb 'no room on the GPU; using the CPU twin' fallbacks; EXPLAIN ANALYZE under the hog: "
	  . ($dev[0] // ''));
if ($real)
{
	ok($nfb >= 3 && ($dev[0] // '') eq 'Device:cpu',
		"B1: the big join fell back to the CPU twin (EXPLAIN shows Device: cpu) while the GPU was full"
	);

	# regression test: a failed cudaMalloc left the runtime's last error set,
	# and the next kernel launch check reported it as that kernel's
	# out-of-memory (left_small, whose table fits in the 48 MiB left, failed
	# with 53200 right after another query's allocation had failed)
	my %ls = map { $_ => 1 } $r1 =~ /(left_small:[A-Z0-9a-z]*)/g;
	ok( join(' ', sort keys %ls) eq 'left_small:same',
		"B1: a join whose table fits in what is left runs with native's rows after other queries' allocations failed (no stale CUDA error)"
	) or diag(join(' ', $r1 =~ /(left_small:[^,]*)/g));
}
my ($f0, $f1) = (value('free0', $out), value('free1', $out));
my $again = join("\n", grep { /^again=/ } split /\n/, $out);
ok( outcome_ok($again . "\n")
	  && $again !~ /53200/
	  && $out =~ /^devmem=0/m
	  && ($f0 eq 'none'
		|| (num($f1) && num($f0) && $f0 - $f1 <= $GPU_TOL_MB))
	  && (!$real || ($dev[-1] // '') eq 'Device:gpu'),
	"B1 memory back: the same session runs on the GPU again with native's rows, device free memory back at its baseline ($f0 -> $f1 MiB)"
) or diag(grep_lines(qr/^again|ERROR/, $out, 3));

# B2: sessions without a context while the device is full (gpu and auto)
note("B2 hog (leave 48 MiB): " . hog_start(48));
my %b2;
for my $s ($device, 'auto')
{
	my $f = $s eq 'auto' ? "$outdir/b2auto.out" : "$outdir/b2.out";
	$b2{$s} = [
		$f,
		psql_bg(
			$node, ['-At'],
			db => 'rbg',
			out => $f,
			stdin => <<"SQL")];
\\set VERBOSITY verbose
SET gpuhash.device = $s;
SELECT 'full=' || ex_all();
SELECT 'devmem_full=' || gpuhash_device_memory();
SELECT 'done_full=1';
SELECT 'gate=' || ex_wait('b2_free');
SELECT 'again=' || ex_all();
SELECT 'active=' || gpuhash_active_device();
SELECT 'devmem=' || gpuhash_device_memory();
SQL
}
wait_line($b2{$_}[0], qr/^done_full=1/) for ($device, 'auto');

# more new sessions, two at a time (device gpu and auto), while the GPU is
# still full: context creation failed once as 0A000 ("no usable GPU") here
# instead of 53200 (cudaErrorDevicesUnavailable, now reported as out of
# memory); each failure's CUDA error is kept in ex_errors
my $nextra = $ENV{GPUHASH_B2_EXTRA} // 8;
my @b2x;
for my $i (1 .. int($nextra / 2))
{
	my @h;
	for my $s ($device, 'auto')
	{
		my $f = "$outdir/b2x.$i.$s.out";
		push @b2x, $f;
		push @h,
		  psql_bg(
			$node,
			[
				'-At', '-c', "SET gpuhash.device = $s",
				'-c', "SELECT 'full=' || ex_all()",
				'-c', "SELECT 'devmem=' || gpuhash_device_memory()"
			],
			db => 'rbg',
			out => $f);
	}
	$_->finish for @h;
}
hog_stop();
gate('b2_free');
$b2{$_}[1]->finish for ($device, 'auto');
for my $s ($device, 'auto')
{
	my $t = slurp($b2{$s}[0]);
	my $r = value('full', $t);
	ok( $r ne '' && outcome_ok("$r, ") && $t =~ /^devmem_full=0/m,
		"B2 device full, new session, device = $s: every query native's rows or a clean 53200, nothing held ($r)"
	) or diag(grep_lines(qr/ERROR|FATAL/, $t, 3));
	my ($e53) = $t =~ /^(.*ERROR:  53200.*\n.*)$/m;
	note("B2 $s: $e53") if $e53;
	my $ag = value('again', $t);
	ok( $ag ne ''
		  && outcome_ok("$ag, ")
		  && $ag !~ /53200/
		  && $t =~ /^active=\Q$device\E/m
		  && $t =~ /^devmem=0/m,
		"B2 memory back, device = $s: the same session creates its context and runs on device $device ($ag)"
	) or diag(grep_lines(qr/^active|ERROR/, $t, 3));
}
if ($nextra > 0)
{
	my $all = join('', map { slurp($_) } @b2x);
	my @rx = map { /^full=(.*)$/ ? $1 : () } split /\n/, $all;
	my @res = map { /([a-z_]+:[A-Z0-9a-z]+) /g } map { "$_, " } @rx;
	my $ndev = () = $all =~ /^devmem=0$/mg;
	my %tally;
	$tally{ (split /:/, $_)[1] }++ for @res;
	my $tally = join(', ', map { "$tally{$_} x $_" } sort keys %tally);
	my $nsess = int($nextra / 2) * 2;
	ok( @res == $nsess * 3
		  && outcome_ok(join(' ', map { "$_, " } @rx))
		  && $ndev == $nsess,
		"B2 device full, $nsess more new sessions (device $device and auto, two at a time): every query native's rows or a clean 53200, nothing held ($tally)"
	) or diag(grep_lines(qr/^(?!full=|devmem=)/, $all, 5));
}
ok(!crashed($log), "B: no backend crashed");
note("B1/B2 ERRORs caught: " . errors_caught());
q1("TRUNCATE ex_errors");

# B3: many concurrent sessions with the GPU shrunk to a few contexts' worth
my $nsess = $ENV{GPUHASH_B3_SESSIONS} // 24;
$gpu_base = (gpu_settle($gpu_base))[1] if $real;
my $leave = $ENV{GPUHASH_B3_LEAVE_MB} // 6144;
note("B3 hog (leave $leave MiB): " . hog_start($leave));
my $hog_used = $real ? gpu_used() : undef;
my $t0 = time;
my @h;
for my $i (1 .. $nsess)
{
	push @h,
	  psql_bg(
		$node,
		[
			'-At', '-c', "SET statement_timeout = '120s'",
			'-c', "SELECT 'r1=' || ex_all()",
			'-c', "SELECT 'r2=' || ex_all()",
			'-c', "SELECT 'devmem=' || gpuhash_device_memory()"
		],
		db => 'rbg',
		out => "$outdir/b3.$i.out",
		timeout => 300);
}
my $hung = 0;
for (@h) { $hung++ unless $_->finish; }
my $secs = int(time - $t0);
my $b3 = join('', map { slurp("$outdir/b3.$_.out") } 1 .. $nsess);
my @allr = map { /^r[12]=(.*)$/ ? $1 : () } split /\n/, $b3;
my $allr = join(' ', map { "$_ " } @allr);
my @res = $allr =~ /([a-z_]+:[A-Z0-9a-z]+) /g;
my $nsame = grep { /:same$/ } @res;
my $noom = grep { /:53200$/ } @res;
my $nfin = () = $b3 =~ /^devmem=0/mg;
note(   "B3: $nsess sessions x 2 x 3 queries in $secs s: "
	  . scalar(@res)
	  . " results, $nsame native's rows, $noom clean 53200, "
	  . (@res - $nsame - $noom)
	  . " other; $hung psql exits non-zero");
ok( @res == $nsess * 6 && outcome_ok($allr) && $nfin == $nsess && $hung == 0,
	"B3 $nsess concurrent sessions on a GPU shrunk by other work: every query native's rows or a clean 53200, none hung (all done in $secs s), nothing held"
) or diag(grep_lines(qr/^(?!r[12]=|devmem=)/, $b3, 5));
if ($real)
{
	my ($st, $u) = gpu_settle($hog_used);
	ok($st,
		"B3: with every session gone the GPU's used memory is back at the hog's level ($hog_used -> $u MiB)"
	);
}
hog_stop();
if ($real)
{
	my ($st, $u) = gpu_settle($gpu_base);
	ok($st,
		"B: with the hog gone the GPU's used memory is back at its baseline ($gpu_base -> $u MiB)"
	);
}
ok(!crashed($log) && q1("SELECT 1") eq '1',
	"B3: no backend crashed, the server answers");
note("B3 ERRORs caught: " . errors_caught());

# ---------------------------------------------------------------------------
# C. statement_timeout during the device copies of a big build
# ---------------------------------------------------------------------------
my ($setupc, $crc) = P(<<'SQL');
CREATE TABLE cc_big AS SELECT g::int8 AS k FROM generate_series(1, 8000000) g;
CREATE TABLE cc_tiny AS SELECT (g * 1000)::int8 AS k FROM generate_series(1, 50) g;
ANALYZE cc_big, cc_tiny;
SQL
save('setupC.log', $setupc);
if ($crc != 0) { diag($setupc); fail("setup C"); }
my $CQ = "SELECT count(*) FROM cc_tiny t JOIN cc_big b ON t.k = b.k";
my $nsweep = $ENV{GPUHASH_SWEEP} // 16;
my @sql = (
	"SET gpuhash.force_join = on;",
	"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $CQ;",
	"SELECT extract(epoch FROM clock_timestamp()) AS t0 \\gset",
	"$CQ;",
	"SELECT round((extract(epoch FROM clock_timestamp()) - :t0) * 1000) AS dur \\gset",
	"SELECT 'dur=' || :dur;",
	"SELECT 'free0=' || ex_free();");

# the device phase is the end of the build, i.e. the last tens of ms of the
# query (the probe of 50 rows is nothing): sweep the last 240 ms
for my $i (0 .. $nsweep - 1)
{
	push @sql,
	  "SELECT greatest(:dur - $i * 240 / $nsweep, 20)::int AS to \\gset",
	  "SELECT set_config('statement_timeout', :'to', false) \\g /dev/null",
	  "SELECT extract(epoch FROM clock_timestamp()) AS t0 \\gset",
	  "$CQ \\g /dev/null",
	  "\\set st :SQLSTATE",
	  "\\set t1 `date +%s.%N`",
	  "RESET statement_timeout;",
	  "SELECT 'res $i ' || :to || ' ' || round((:t1 - :t0) * 1000) || ' ' || gpuhash_device_memory() || ' ' || :'st';";
}
push @sql, "SELECT 'free1=' || ex_free();", "SELECT 'check=' || ex_all();",

  # selftest: 1 GiB through pinned host memory, timeouts at a quarter, half,
  # three quarters of its duration
  "SELECT extract(epoch FROM clock_timestamp()) AS t0 \\gset",
  "SELECT gpuhash_device_selftest(1073741824) \\g /dev/null",
  "SELECT round((extract(epoch FROM clock_timestamp()) - :t0) * 1000) AS sdur \\gset",
  "SELECT 'sdur=' || :sdur;";
for my $i (1 .. 3)
{
	push @sql,
	  "SELECT greatest(:sdur * $i / 4, 20)::int AS to \\gset",
	  "SELECT set_config('statement_timeout', :'to', false) \\g /dev/null",
	  "SELECT extract(epoch FROM clock_timestamp()) AS t0 \\gset",
	  "SELECT gpuhash_device_selftest(1073741824) \\g /dev/null",
	  "\\set st :SQLSTATE",
	  "\\set t1 `date +%s.%N`",
	  "RESET statement_timeout;",
	  "SELECT 'sres $i ' || :to || ' ' || round((:t1 - :t0) * 1000) || ' ' || gpuhash_device_memory() || ' ' || :'st';";
}
push @sql, "SELECT 'free2=' || ex_free();";
my $sf = sqlfile('sweep.sql', join("\n", @sql) . "\n");
($out) = psql_run($node, [ '-At', '-f', $sf ], db => 'rbg', merge => 1);
save('sweep.out', $out);
note("C: "
	  . join(';',
		map { (my $l = $_) =~ s/ +/ /g; $l }
		grep { /^ +(Device|Build Time|Device Time|Inner Rows):/ } split /\n/,
		$out));

# per run: "res I TIMEOUT_MS ELAPSED_MS DEVMEM SQLSTATE" (00000: finished first)
sub runs
{
	my ($tag, $text) = @_;
	return map { [ split / / ] } map { s/ 00000$/ finished/r }
	  grep { /^\Q$tag\E / } split /\n/, $text;
}

# bad(RUN...): the runs that held device memory, ended otherwise than by the
# timeout or by finishing, or stopped later than CANCEL_BOUND after it
sub bad
{
	return grep {
		my ($to, $el, $dm, $st) = @$_[ 2 .. 5 ];
		($dm // '') ne '0'
		  || (($st // '') ne '57014' && ($st // '') ne 'finished')
		  || (($st // '') eq '57014' && ($el - $to) / 1000 > $CANCEL_BOUND);
	} @_;
}
my @res_c = runs('res', $out);
save('sweep.txt', join("\n", map { join(' ', @$_) } @res_c) . "\n");
my $ncanc = grep { ($_->[5] // '') eq '57014' } @res_c;
my $worst = 0;
for (grep { ($_->[5] // '') eq '57014' } @res_c)
{
	my $d = ($_->[3] - $_->[2]) / 1000;
	$worst = $d if $d > $worst;
}
$worst = sprintf("%.3f", $worst);
note(   "C: "
	  . value('dur', $out)
	  . " ms uninterrupted; "
	  . scalar(@res_c)
	  . " runs with timeouts over its last 240 ms: $ncanc canceled (57014), "
	  . (@res_c - $ncanc)
	  . " finished first; slowest stop after the timeout: $worst s");
ok( @res_c == $nsweep && $ncanc >= 1 && bad(@res_c) == 0,
	"C: statement_timeout across the device phase of an 8M-row build: every run stops within $CANCEL_BOUND s of its timeout (worst $worst s), device memory 0 after each"
) or diag(join("\n", map { join(' ', @$_) } @res_c[ 0 .. ($#res_c < 19 ? $#res_c : 19) ]));
($f0, $f1) = (value('free0', $out), value('free1', $out));
my $f2 = value('free2', $out);
my $chk = value('check', $out);
ok( $chk ne ''
	  && outcome_ok("$chk, ")
	  && ($f0 eq 'none' || (num($f1) && num($f0) && $f0 - $f1 <= $GPU_TOL_MB))
	  && !crashed($log),
	"C: nothing lost: the same session runs checked queries, device free memory back at its baseline ($f0 -> $f1 MiB)"
) or diag(grep_lines(qr/^check|FATAL|server closed/, $out, 3));
my @sres = runs('sres', $out);
note(   "C selftest (1 GiB): "
	  . value('sdur', $out)
	  . " ms uninterrupted; runs (i timeout_ms elapsed_ms devmem outcome): "
	  . join(';', map { join(' ', @$_) } @sres));
ok( @sres == 3
	  && bad(@sres) == 0
	  && ($f0 eq 'none' || (num($f2) && num($f0) && $f0 - $f2 <= $GPU_TOL_MB)),
	"C: statement_timeout during gpuhash_device_selftest(1 GiB): stops within $CANCEL_BOUND s, nothing held ($f0 -> $f2 MiB free)"
) or diag(join("\n", map { join(' ', @$_) } @sres));

ok(!crashed($log) && q1("SELECT 1") eq '1',
	"the server ran parts B and C without a crash or restart");

hog_stop();
done_testing();
