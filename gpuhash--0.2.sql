/* gpuhash--0.2.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION gpuhash" to load this file. \quit

CREATE FUNCTION gpuhash_devices(
    OUT ordinal int,
    OUT name text,
    OUT compute_capability text,
    OUT multiprocessors int,
    OUT total_mb bigint,
    OUT free_mb bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'gpuhash_devices'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION gpuhash_devices() IS
'GPUs this backend can use; free_mb is NULL until this backend has used the device';

CREATE FUNCTION gpuhash_active_device()
RETURNS text
AS 'MODULE_PATHNAME', 'gpuhash_active_device'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION gpuhash_active_device() IS
'Device (gpu or cpu) that gpuhash operators use in this backend now; creates the CUDA context on first use';

CREATE FUNCTION gpuhash_device_selftest(nbytes bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'gpuhash_device_selftest'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION gpuhash_device_selftest(bigint) IS
'Copies nbytes (at most 1 GiB) to the active device and back through pinned host memory; true if they came back intact';

-- it holds up to 2 GiB of pinned host memory and 1 GiB of device memory
-- while it runs: for superusers and the roles they grant it to
REVOKE EXECUTE ON FUNCTION gpuhash_device_selftest(bigint) FROM PUBLIC;

CREATE FUNCTION gpuhash_device_memory()
RETURNS bigint
AS 'MODULE_PATHNAME', 'gpuhash_device_memory'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION gpuhash_device_memory() IS
'Bytes of device and pinned host memory this backend holds through gpuhash now';

CREATE FUNCTION gpuhash_aggregate(query text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'gpuhash_aggregate'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION gpuhash_aggregate(text) IS
'Runs one SELECT ... GROUP BY with grouping and aggregation on the device; call as SELECT * FROM gpuhash_aggregate(query) AS t(column definitions)';
