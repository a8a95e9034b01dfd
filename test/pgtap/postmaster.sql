-- test/pgtap/postmaster.sql - CUDA never enters the postmaster: with gpuhash
-- preloaded, the postmaster maps no CUDA driver and opens no NVIDIA device,
-- even after a backend has used the GPU.  A backend that used the GPU does
-- map the driver (on a GPU host), which shows the check can see it.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
BEGIN;
CREATE EXTENSION IF NOT EXISTS gpuhash;
SELECT plan(6);

SELECT current_setting('gpuhash_test.gpu')::bool AS gpu \gset
SELECT split_part(pg_read_file('postmaster.pid'), E'\n', 1)::int AS pm_pid \gset

SELECT ok(current_setting('shared_preload_libraries') ~ 'gpuhash',
          'gpuhash is preloaded');
SELECT cmp_ok(length(pg_read_file('/proc/' || :pm_pid || '/maps')), '>', 0,
              'the postmaster''s memory map is readable');
SELECT ok(pg_read_file('/proc/' || :pm_pid || '/maps') ~ 'gpuhash\.so',
          'the postmaster has gpuhash.so mapped');

-- use the device in this backend first (creates the context on a GPU host)
SET LOCAL gpuhash.device = auto;
SELECT gpuhash_active_device() AS used \gset

SELECT ok(pg_read_file('/proc/' || :pm_pid || '/maps') !~ '(libcuda|libnvidia|/dev/nvidia)',
          'the postmaster maps no CUDA driver and no NVIDIA device');
SELECT is(pg_read_file('/proc/' || pg_backend_pid() || '/maps') ~ 'libcuda\.so', :'gpu'::bool,
          'a backend that used the device maps the CUDA driver exactly when there is a GPU');

-- a new backend forked after that still starts clean (no inherited context)
SELECT is(gpuhash_device_memory(), 0::bigint, 'this backend holds no device memory between queries');

SELECT * FROM finish();
ROLLBACK;
