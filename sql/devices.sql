-- devices: what the backend sees matches what the test run expects
-- (gpuhash_test.gpu is set by test/run.sh: on for a GPU host run), and the
-- device layer's copies, allocations and clean-up on ERROR.
SELECT current_setting('gpuhash_test.gpu')::bool AS expect_gpu \gset

-- one row per GPU with a GPU, zero rows and no error without
SELECT (count(*) > 0) = :'expect_gpu'::bool AS devices_as_expected FROM gpuhash_devices();
SELECT bool_and(ordinal >= 0 AND length(name) > 0
                AND compute_capability ~ '^[0-9]+\.[0-9]+$'
                AND multiprocessors > 0 AND total_mb > 0) IS NOT FALSE AS rows_well_formed
  FROM gpuhash_devices();

-- auto picks the GPU when there is one, else the CPU twin
SET gpuhash.device = auto;
SELECT gpuhash_active_device() = CASE WHEN :'expect_gpu'::bool THEN 'gpu' ELSE 'cpu' END AS auto_as_expected;
SET gpuhash.device = cpu;
SELECT gpuhash_active_device();
RESET gpuhash.device;

-- after first use a GPU reports its free memory; never more than its total
SELECT bool_and(free_mb IS NOT NULL AND free_mb <= total_mb) IS NOT FALSE AS free_mb_sane
  FROM gpuhash_devices() WHERE ordinal = 0;

-- a round trip through the configured device, small and large
SELECT gpuhash_device_selftest(1) AS one_byte;
SELECT gpuhash_device_selftest(10000019) AS ten_mb;
SELECT gpuhash_device_selftest(0);
SELECT gpuhash_device_memory() AS held_after_selftests;

-- an allocation failing at each of the three allocation sites: a clean
-- ERROR and nothing held afterwards
SET gpuhash.inject_alloc_failure = 1;
SELECT gpuhash_device_selftest(4096);
SELECT gpuhash_device_memory() AS held_after_failure_1;
SET gpuhash.inject_alloc_failure = 2;
SELECT gpuhash_device_selftest(4096);
SELECT gpuhash_device_memory() AS held_after_failure_2;
SET gpuhash.inject_alloc_failure = 3;
SELECT gpuhash_device_selftest(4096);
SELECT gpuhash_device_memory() AS held_after_failure_3;
-- only the Nth allocation fails: the next call works again
SELECT gpuhash_device_selftest(4096) AS works_after_injection;
RESET gpuhash.inject_alloc_failure;

-- the same inside a subtransaction that is rolled back
BEGIN;
SAVEPOINT s1;
SET LOCAL gpuhash.inject_alloc_failure = 3;
SELECT gpuhash_device_selftest(4096);
ROLLBACK TO SAVEPOINT s1;
SELECT gpuhash_device_memory() AS held_after_savepoint_rollback;
SELECT gpuhash_device_selftest(4096) AS works_in_same_transaction;
COMMIT;
