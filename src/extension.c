/*-------------------------------------------------------------------------
 * extension.c
 *	  Whether CREATE EXTENSION gpuhash has run in the current database.
 *
 * The library is preloaded for the whole server, but acts only in the
 * databases that asked for it.  Every planner hook asks here first, so this
 * file sits at the bottom of src/: it calls no other file of gpuhash.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_proc.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/syscache.h"

#include "gpuhash.h"

/* whether this database has the extension: unknown until asked */
typedef enum ExtensionState
{
	EXT_UNKNOWN,
	EXT_PRESENT,
	EXT_ABSENT
} ExtensionState;
static ExtensionState extension_state = EXT_UNKNOWN;
static Oid	extension_function = InvalidOid;
static bool extension_callback = false;

/*
 * extension_changed forgets what gpuhash_extension_created found.  CREATE
 * EXTENSION, DROP EXTENSION and ALTER EXTENSION UPDATE create or drop the
 * extension's functions, and every change to pg_proc, in this backend or
 * another, reaches this callback (pg_extension itself has no catalog cache,
 * so its changes send no invalidation of their own).
 */
static void
extension_changed(Datum arg, int cacheid, uint32 hashvalue)
{
	extension_state = EXT_UNKNOWN;
}

/* extension_schema is pg_extension.extnamespace of the extension ext. */
static Oid
extension_schema(Oid ext)
{
	Relation	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	Oid			nsp = InvalidOid;

	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(ext));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
		nsp = ((Form_pg_extension) GETSTRUCT(tuple))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return nsp;
}

/*
 * gpuhash_extension_created says whether CREATE EXTENSION gpuhash has run in
 * the current database.  The planner offers gpuhash's paths only there: a
 * library preloaded for the whole server acts only in the databases that
 * asked for it, and DROP EXTENSION switches it off again.  The answer is
 * cached until the extension's functions change.
 */
bool
gpuhash_extension_created(void)
{
	if (!IsTransactionState() || !OidIsValid(MyDatabaseId))
		return false;
	if (!extension_callback)
	{
		CacheRegisterSyscacheCallback(PROCOID, extension_changed, (Datum) 0);
		extension_callback = true;
	}
	if (extension_state == EXT_UNKNOWN)
	{
		Oid			ext = get_extension_oid("gpuhash", true);

		extension_function = InvalidOid;
		if (OidIsValid(ext))
			extension_function =
				GetSysCacheOid3(PROCNAMEARGSNSP, Anum_pg_proc_oid,
								CStringGetDatum("gpuhash_devices"),
								PointerGetDatum(buildoidvector(NULL, 0)),
								ObjectIdGetDatum(extension_schema(ext)));
		extension_state = OidIsValid(ext) ? EXT_PRESENT : EXT_ABSENT;
	}
	return extension_state == EXT_PRESENT;
}

/*
 * gpuhash_extension_function is one function of the extension in this
 * database (InvalidOid if there is none).  A plan that uses gpuhash records
 * a dependency on it, so that DROP EXTENSION (or an update) invalidates the
 * cached plans that hold gpuhash's nodes, as it would a plan calling one of
 * its functions.
 */
Oid
gpuhash_extension_function(void)
{
	return gpuhash_extension_created() ? extension_function : InvalidOid;
}
