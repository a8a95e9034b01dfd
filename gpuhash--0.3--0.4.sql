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
