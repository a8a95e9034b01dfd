/* gpuhash--0.1--0.2.sql */
/*
 * Updates an installation of 0.1 to 0.2.  A new installation runs the
 * current version's full script; sql/upgrade.sql checks that every update
 * path gives the catalog that script gives.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION gpuhash UPDATE TO '0.2'" to load this file. \quit

-- a test aid, not an API: the tests define it for themselves (superusers only)
DROP FUNCTION gpuhash_plan_survives_copy(text);

COMMENT ON FUNCTION gpuhash_device_selftest(bigint) IS
'Copies nbytes (at most 1 GiB) to the active device and back through pinned host memory; true if they came back intact';

-- it holds up to 2 GiB of pinned host memory and 1 GiB of device memory
-- while it runs: for superusers and the roles they grant it to
REVOKE EXECUTE ON FUNCTION gpuhash_device_selftest(bigint) FROM PUBLIC;
