-- test/pgtap/device.sql - device resolution per gpuhash.device, on the host
-- the run expects (gpuhash_test.gpu, set by test/run.sh).
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
BEGIN;
CREATE EXTENSION IF NOT EXISTS gpuhash;
SELECT plan(9);

SELECT current_setting('gpuhash_test.gpu')::bool AS gpu \gset

SELECT is((SELECT count(*) > 0 FROM gpuhash_devices()), :'gpu'::bool,
          'gpuhash_devices() has rows exactly when a GPU is expected');

SET LOCAL gpuhash.device = gpu;
SELECT CASE WHEN :'gpu'::bool
  THEN is(gpuhash_active_device(), 'gpu', 'device = gpu uses the GPU')
  ELSE throws_ok('SELECT gpuhash_active_device()', '0A000',
                 'gpuhash.device is "gpu" but no usable GPU was found',
                 'device = gpu without a GPU raises a clear ERROR')
END;
SELECT CASE WHEN :'gpu'::bool
  THEN ok(gpuhash_device_selftest(1 << 20), 'a copy round trip through the GPU')
  ELSE throws_ok('SELECT gpuhash_device_selftest(1024)', '0A000', NULL,
                 'device = gpu without a GPU: the first use of the device fails cleanly')
END;
SELECT is(gpuhash_device_memory(), 0::bigint, 'nothing held after device = gpu was used');

SET LOCAL gpuhash.device = auto;
SELECT is(gpuhash_active_device(), CASE WHEN :'gpu'::bool THEN 'gpu' ELSE 'cpu' END,
          'device = auto: the GPU when present, else the CPU twin');

SET LOCAL gpuhash.device = cpu;
SELECT is(gpuhash_active_device(), 'cpu', 'device = cpu uses the CPU twin');
SELECT ok(gpuhash_device_selftest(3 << 20), 'a copy round trip through the CPU twin');

SET LOCAL gpuhash.inject_alloc_failure = 2;
SELECT throws_ok('SELECT gpuhash_device_selftest(1024)', '53200', NULL,
                 'an injected allocation failure is an out-of-memory ERROR');
SELECT is(gpuhash_device_memory(), 0::bigint, 'nothing held after the failed allocation');

SELECT * FROM finish();
ROLLBACK;
