/* gpuhash--0.2--0.3.sql */
/*
 * Updates an installation of 0.2 to 0.3.  A new installation runs the
 * current version's full script; sql/upgrade.sql checks that every update
 * path gives the catalog that script gives.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION gpuhash UPDATE TO '0.3'" to load this file. \quit

CREATE FUNCTION gpuhash_device_budget(
    OUT server_device_memory_mb int,
    OUT reserved_bytes bigint,
    OUT holders int,
    OUT waits bigint,
    OUT refusals bigint,
    OUT server_wide boolean)
RETURNS record
AS 'MODULE_PATHNAME', 'gpuhash_device_budget'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION gpuhash_device_budget() IS
'gpuhash.server_device_memory, the bytes reserved from it now and by how many processes, the reservations that waited and that were refused; server_wide is false without shared_preload_libraries (this backend only)';

CREATE FUNCTION gpuhash_device_reservations(
    OUT pid int,
    OUT reserved_bytes bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'gpuhash_device_reservations'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION gpuhash_device_reservations() IS
'The processes holding part of gpuhash.server_device_memory now, with their bytes (join pg_stat_activity on pid)';

-- which processes use the GPU, and how much: for monitoring roles, as
-- pg_stat_activity's details are
REVOKE EXECUTE ON FUNCTION gpuhash_device_reservations() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gpuhash_device_reservations() TO pg_read_all_stats;
