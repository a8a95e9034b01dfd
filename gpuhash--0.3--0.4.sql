/* gpuhash--0.3--0.4.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION gpuhash UPDATE TO '0.4'" to load this file. \quit

-- the device scan (heap pages deformed on the device) of a whole table,
-- returned as rows of the table's type: what the tests compare with
-- PostgreSQL's own scan.  The caller needs SELECT on the table, which may
-- not have row-level security in force.
CREATE FUNCTION gpuhash_scan_table(rowtype anyelement)
RETURNS SETOF anyelement
AS 'MODULE_PATHNAME', 'gpuhash_scan_table'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION gpuhash_scan_table(anyelement) IS
'The rows of a table (pass NULL::the_table) as gpuhash''s device scan reads them from its heap pages';

CREATE FUNCTION gpuhash_scan_counts(
    rowtype anyelement,
    OUT pages bigint,
    OUT pages_checked bigint,
    OUT tuples_hidden bigint,
    OUT rows_device bigint,
    OUT rows_host bigint,
    OUT batches bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'gpuhash_scan_counts'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION gpuhash_scan_counts(anyelement) IS
'What gpuhash''s device scan of a table (pass NULL::the_table) does: pages sent, pages checked tuple by tuple on the CPU, tuples those checks hid, rows the device read, rows read through PostgreSQL''s tuple path, batches';

-- monitoring: what gpuhash did in each database since the server started
-- (or gpuhash_stat_reset()), and the GPU service's state.  For superusers
-- and pg_read_all_stats, as PostgreSQL's own statistics of other sessions
-- are; the reset is a superuser's unless granted, as
-- pg_stat_statements_reset is.

CREATE FUNCTION gpuhash_stat_database(
    OUT datid oid,
    OUT joins_gpu bigint,
    OUT joins_cpu bigint,
    OUT joins_fallback bigint,
    OUT aggs_gpu bigint,
    OUT aggs_cpu bigint,
    OUT aggs_fallback bigint,
    OUT join_device_time double precision,
    OUT agg_device_time double precision,
    OUT join_batches_spilled bigint,
    OUT agg_batches_spilled bigint,
    OUT bytes_to_device bigint,
    OUT bytes_from_device bigint,
    OUT stats_reset timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'gpuhash_stat_database'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION gpuhash_stat_database() IS
'GpuHashJoin and GpuHashAgg runs per database on the GPU, on the CPU twin and fallen back to the twin, their device time (ms), batches spilled to disk, bytes copied to and from the GPU; datid 0 holds the databases past the first 64; without shared_preload_libraries, this backend''s alone';

CREATE VIEW gpuhash_stat_database AS
  SELECT s.datid, d.datname,
         s.joins_gpu, s.joins_cpu, s.joins_fallback,
         s.aggs_gpu, s.aggs_cpu, s.aggs_fallback,
         s.join_device_time, s.agg_device_time,
         s.join_batches_spilled, s.agg_batches_spilled,
         s.bytes_to_device, s.bytes_from_device, s.stats_reset
    FROM gpuhash_stat_database() s
    LEFT JOIN pg_catalog.pg_database d ON d.oid = s.datid;

CREATE FUNCTION gpuhash_stat_fallbacks(
    OUT datid oid,
    OUT operator text,
    OUT reason text,
    OUT fallbacks bigint,
    OUT last_fallback timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'gpuhash_stat_fallbacks'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION gpuhash_stat_fallbacks() IS
'Runs per database, operator and reason that were to use the GPU and ran on the CPU twin, and when the last one ended';

CREATE VIEW gpuhash_stat_fallbacks AS
  SELECT s.datid, d.datname, s.operator, s.reason, s.fallbacks, s.last_fallback
    FROM gpuhash_stat_fallbacks() s
    LEFT JOIN pg_catalog.pg_database d ON d.oid = s.datid;

CREATE FUNCTION gpuhash_stat_service(
    OUT state text,
    OUT pid int,
    OUT device text,
    OUT started_at timestamptz,
    OUT restarts int,
    OUT tables_held int,
    OUT table_bytes bigint,
    OUT last_error text,
    OUT last_error_at timestamptz)
RETURNS record
AS 'MODULE_PATHNAME', 'gpuhash_stat_service'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION gpuhash_stat_service() IS
'The GPU service: off, starting, up, restarting or stopped; its pid, device, start and restarts, the tables it holds and their bytes, the last error it answered a backend with';

CREATE VIEW gpuhash_stat_service AS
  SELECT * FROM gpuhash_stat_service();

CREATE FUNCTION gpuhash_stat_reset()
RETURNS void
AS 'MODULE_PATHNAME', 'gpuhash_stat_reset'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION gpuhash_stat_reset() IS
'Zeroes gpuhash_stat_database and gpuhash_stat_fallbacks (each fallback reason is logged again once) and forgets dropped databases';

REVOKE ALL ON FUNCTION gpuhash_stat_database() FROM PUBLIC;
REVOKE ALL ON FUNCTION gpuhash_stat_fallbacks() FROM PUBLIC;
REVOKE ALL ON FUNCTION gpuhash_stat_service() FROM PUBLIC;
REVOKE ALL ON FUNCTION gpuhash_stat_reset() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gpuhash_stat_database() TO pg_read_all_stats;
GRANT EXECUTE ON FUNCTION gpuhash_stat_fallbacks() TO pg_read_all_stats;
GRANT EXECUTE ON FUNCTION gpuhash_stat_service() TO pg_read_all_stats;
GRANT SELECT ON gpuhash_stat_database TO pg_read_all_stats;
GRANT SELECT ON gpuhash_stat_fallbacks TO pg_read_all_stats;
GRANT SELECT ON gpuhash_stat_service TO pg_read_all_stats;
