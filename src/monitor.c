/*-------------------------------------------------------------------------
 * monitor.c
 *	  Cumulative statistics per database (GpuHashJoin and GpuHashAgg runs,
 *	  their fallbacks, device time, copies, spilled batches), the fallbacks'
 *	  LOG lines, and the GPU service's state, for the gpuhash_stat_* views.
 *
 * PostgreSQL 15 has no cumulative statistics kinds for extensions, so, as
 * the device memory budget does (device_budget.c), gpuhash keeps its own in
 * shared memory when it is preloaded: a fixed array of GH_MON_DATABASES
 * entries, each claimed by the first database that counts something, and
 * one more entry for every database that finds the array full (shown with
 * datid 0).  An entry's counters are atomics, added to once at the end of
 * each operator's run, never per row; a backend finds its entry once (its
 * database does not change) and keeps the pointer.  gpuhash_stat_reset
 * zeroes every counter and frees the entries of databases dropped since.
 *
 * What counts as a run: one execution of a GpuHashJoin or GpuHashAgg node,
 * from executor start to end, its rescans included (an aggregate counts
 * each pass of its engine over the input: a rescan that reads the input
 * again is another run), and one call of gpuhash_aggregate(); a run that
 * ends in an ERROR is not counted.  A run is
 * on the GPU, on the CPU twin (gpuhash.device = cpu, or a GPU service that
 * builds on the twin) or fallen back: it was to use the GPU and some of it
 * ran on the twin instead, for the first reason GhFallback names.  The
 * leader of a parallel join counts it once, with the participants'
 * device time and batches and, if any participant fell back, as fallen
 * back; each participant adds its own copies' bytes to the database's
 * counters before it exits.
 *
 * A fallback also goes to the server log at LOG, once per reason, operator
 * and database since the server started or the statistics were last reset
 * (in the process where it happens, a parallel worker's too); later ones are
 * DEBUG1.  The twin's warm start (gpuhash.device = auto runs a join on the
 * twin while the backend's CUDA context is made) is counted but never
 * logged: it is the setting's design, not a fault.
 *
 * Without preloading there is no shared memory: the functions then show
 * this backend's own counts, for its database alone, and a fallback is
 * logged once per backend and reason.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/parallel.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "gpuhash.h"
#include "service.h"

/* the entries of the array; one more takes the databases it has no room for */
#define GH_MON_DATABASES 64

/* Where a run went. */
typedef enum GhMonWhere
{
	GH_MON_GPU,
	GH_MON_CPU,
	GH_MON_FALLBACK,
	GH_MON_WHERES
} GhMonWhere;

/* One database's counters. */
typedef struct GhMonEntry
{
	Oid			datid;			/* InvalidOid: free, or the overflow entry */
	pg_atomic_uint64 runs[GH_PLAN_KINDS][GH_MON_WHERES];
	pg_atomic_uint64 fallbacks[GH_PLAN_KINDS][GH_FB_KINDS];
	pg_atomic_uint64 fallback_at[GH_PLAN_KINDS][GH_FB_KINDS];	/* TimestampTz */
	pg_atomic_uint32 logged[GH_PLAN_KINDS][GH_FB_KINDS];
	pg_atomic_uint64 device_us[GH_PLAN_KINDS];
	pg_atomic_uint64 spilled[GH_PLAN_KINDS];
	pg_atomic_uint64 bytes_to_device;
	pg_atomic_uint64 bytes_from_device;
} GhMonEntry;

typedef struct GhMonShared
{
	slock_t		mutex;			/* claims and frees of entries */
	pg_atomic_uint64 reset_at;	/* TimestampTz of the last reset, 0: none */
	GhMonEntry	entries[GH_MON_DATABASES + 1];	/* the last: the overflow */
} GhMonShared;

/* The reasons as the views name them, with a sentence for the LOG line. */
static const struct
{
	const char *name;
	const char *why;
	const char *hint;
}			fallback_text[GH_FB_KINDS] = {
	[GH_FB_NONE] = {"none", NULL, NULL},
	[GH_FB_NO_GPU] = {
		"no_gpu",
		"gpuhash.device is \"auto\" and this process found no usable GPU",
		"Check the GPU and its driver, or set gpuhash.device to \"cpu\" where no GPU is meant to be used."
	},
	[GH_FB_CONTEXT_BUDGET] = {
		"context_budget",
		"gpuhash.server_device_memory had no room for this process's CUDA context",
		"Raise gpuhash.server_device_memory or gpuhash.device_memory_wait, or run fewer GPU queries at once."
	},
	[GH_FB_TABLE_LIMIT] = {
		"table_limit",
		"the hash table was larger than gpuhash.device_memory_limit or gpuhash.server_device_memory allows",
		"Raise gpuhash.device_memory_limit or gpuhash.server_device_memory, or ANALYZE the tables so that the join is planned in batches that fit."
	},
	[GH_FB_DEVICE_MEMORY] = {
		"device_memory",
		"the GPU, or gpuhash.server_device_memory, had no room for the hash table at the time",
		"See gpuhash_device_reservations() and gpuhash_device_budget() for the work that held the device memory."
	},
	[GH_FB_CONTEXT_NOT_READY] = {"context_not_ready", NULL, NULL},
};

static const char *const op_names[GH_PLAN_KINDS] = {
	[GH_PLAN_JOIN] = "GpuHashJoin",
	[GH_PLAN_AGG] = "GpuHashAgg",
};

static GhMonShared *gh_mon = NULL;

/* this backend's entry; without shared memory, its only one */
static GhMonEntry *my_entry = NULL;
static GhMonEntry local_entry;

/* copies not yet added to the database's counters */
static uint64 pending_to_device = 0;
static uint64 pending_from_device = 0;
static bool exit_hook = false;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void mon_shmem_request(void);
static void mon_shmem_startup(void);
static void mon_entry_init(GhMonEntry *e, Oid datid);
static void mon_entry_zero(GhMonEntry *e);
static GhMonEntry *mon_entry(void);
static void mon_exit(int code, Datum arg);
static Datum mon_timestamp(uint64 t, bool *isnull);

PG_FUNCTION_INFO_V1(gpuhash_stat_database);
PG_FUNCTION_INFO_V1(gpuhash_stat_fallbacks);
PG_FUNCTION_INFO_V1(gpuhash_stat_service);
PG_FUNCTION_INFO_V1(gpuhash_stat_reset);

/* mon_shmem_request asks for the statistics' shared memory. */
static void
mon_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(sizeof(GhMonShared));
}

/* mon_entry_init makes e an empty entry of datid. */
static void
mon_entry_init(GhMonEntry *e, Oid datid)
{
	memset(e, 0, sizeof(*e));
	e->datid = datid;
	for (int op = 0; op < GH_PLAN_KINDS; op++)
	{
		for (int w = 0; w < GH_MON_WHERES; w++)
			pg_atomic_init_u64(&e->runs[op][w], 0);
		for (int r = 0; r < GH_FB_KINDS; r++)
		{
			pg_atomic_init_u64(&e->fallbacks[op][r], 0);
			pg_atomic_init_u64(&e->fallback_at[op][r], 0);
			pg_atomic_init_u32(&e->logged[op][r], 0);
		}
		pg_atomic_init_u64(&e->device_us[op], 0);
		pg_atomic_init_u64(&e->spilled[op], 0);
	}
	pg_atomic_init_u64(&e->bytes_to_device, 0);
	pg_atomic_init_u64(&e->bytes_from_device, 0);
}

/* mon_shmem_startup creates the statistics' shared memory, or attaches it. */
static void
mon_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	gh_mon = ShmemInitStruct("gpuhash statistics", sizeof(GhMonShared), &found);
	if (!found)
	{
		SpinLockInit(&gh_mon->mutex);
		pg_atomic_init_u64(&gh_mon->reset_at, 0);
		for (int i = 0; i <= GH_MON_DATABASES; i++)
			mon_entry_init(&gh_mon->entries[i], InvalidOid);
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * gpuhash_init_monitor, from _PG_init: asks for the shared memory while the
 * library is preloaded.
 */
void
gpuhash_init_monitor(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = mon_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = mon_shmem_startup;
}

/*
 * mon_entry returns this backend's database's entry: found or claimed once
 * in shared memory (the overflow entry when the array is full), else the
 * backend's own.  NULL in a process without a database (the GPU service).
 */
static GhMonEntry *
mon_entry(void)
{
	if (my_entry != NULL)
		return my_entry;
	if (!OidIsValid(MyDatabaseId))
		return NULL;
	if (gh_mon == NULL)
	{
		mon_entry_init(&local_entry, MyDatabaseId);
		my_entry = &local_entry;
		return my_entry;
	}
	SpinLockAcquire(&gh_mon->mutex);
	for (int i = 0; i < GH_MON_DATABASES && my_entry == NULL; i++)
		if (gh_mon->entries[i].datid == MyDatabaseId)
			my_entry = &gh_mon->entries[i];
	for (int i = 0; i < GH_MON_DATABASES && my_entry == NULL; i++)
		if (gh_mon->entries[i].datid == InvalidOid)
		{
			gh_mon->entries[i].datid = MyDatabaseId;
			my_entry = &gh_mon->entries[i];
		}
	if (my_entry == NULL)
		my_entry = &gh_mon->entries[GH_MON_DATABASES];
	SpinLockRelease(&gh_mon->mutex);
	return my_entry;
}

/*
 * gh_mon_copied notes bytes copied between host memory and the GPU by this
 * process; they reach the database's counters at the end of the next run,
 * or when the process exits.  The CPU twin copies nothing.
 */
void
gh_mon_copied(bool to_device, uint64 bytes)
{
	if (to_device)
		pending_to_device += bytes;
	else
		pending_from_device += bytes;
	if (!exit_hook)
	{
		before_shmem_exit(mon_exit, (Datum) 0);
		exit_hook = true;
	}
}

/*
 * gh_mon_flush adds the copies noted so far to the database's counters: at
 * the end of a run, as a parallel worker's part of a run ends, and at exit.
 */
void
gh_mon_flush(void)
{
	GhMonEntry *e;

	if (pending_to_device == 0 && pending_from_device == 0)
		return;
	e = mon_entry();
	if (e != NULL)
	{
		pg_atomic_fetch_add_u64(&e->bytes_to_device, pending_to_device);
		pg_atomic_fetch_add_u64(&e->bytes_from_device, pending_from_device);
	}
	pending_to_device = pending_from_device = 0;
}

/* mon_exit adds what this process copied since its last run, as it exits. */
static void
mon_exit(int code, Datum arg)
{
	gh_mon_flush();
}

/*
 * gh_mon_fallback reports that an operator of kind op ran (some of) its
 * work on the CPU twin instead of the GPU, for reason why: at LOG the first
 * time for this reason, operator and database (see the file's comment),
 * else at DEBUG1.  The run counts it at its end (gh_mon_run).
 */
void
gh_mon_fallback(GhPlanKind op, GhFallback why)
{
	GhMonEntry *e;
	bool		first;

	if (why == GH_FB_NONE)
		return;
	e = mon_entry();
	first = (e != NULL && fallback_text[why].why != NULL &&
			 pg_atomic_exchange_u32(&e->logged[op][why], 1) == 0);
	if (fallback_text[why].why == NULL)
		return;
	ereport(first ? LOG : DEBUG1,
			(errmsg("%s ran on the CPU twin instead of the GPU: %s",
					op_names[op], fallback_text[why].why),
			 gh_mon ?
			 errdetail("Fallbacks are counted in gpuhash_stat_fallbacks as \"%s\"; "
					   "this one is logged once per database until gpuhash_stat_reset().",
					   fallback_text[why].name) :
			 errdetail("Fallbacks are counted in gpuhash_stat_fallbacks as \"%s\"; "
					   "without shared_preload_libraries, once per session.",
					   fallback_text[why].name),
			 errhint("%s", fallback_text[why].hint)));
}

/*
 * gh_mon_run counts one run of an operator of kind op at its end: where it
 * ran (target, or fallen back for reason why), its device time (the GPU's
 * or the twin's, as EXPLAIN ANALYZE shows it) and the batches it wrote to
 * temporary files; and adds this process's copies.
 */
void
gh_mon_run(GhPlanKind op, GhTarget target, GhFallback why, double device_ms,
		   uint64 spilled)
{
	GhMonEntry *e = mon_entry();
	GhMonWhere	where;

	if (e == NULL)
		return;
	where = why != GH_FB_NONE ? GH_MON_FALLBACK :
		target == GH_TARGET_GPU ? GH_MON_GPU : GH_MON_CPU;
	pg_atomic_fetch_add_u64(&e->runs[op][where], 1);
	if (why != GH_FB_NONE)
	{
		pg_atomic_fetch_add_u64(&e->fallbacks[op][why], 1);
		pg_atomic_write_u64(&e->fallback_at[op][why],
							(uint64) GetCurrentTimestamp());
	}
	if (device_ms > 0)
		pg_atomic_fetch_add_u64(&e->device_us[op], (uint64) (device_ms * 1000.0));
	if (spilled > 0)
		pg_atomic_fetch_add_u64(&e->spilled[op], spilled);
	gh_mon_flush();
}

/* mon_timestamp is t (a TimestampTz, 0: none) as a Datum. */
static Datum
mon_timestamp(uint64 t, bool *isnull)
{
	*isnull = (t == 0);
	return TimestampTzGetDatum((TimestampTz) t);
}

/*
 * gpuhash_stat_database returns a row per database with counts: its runs of
 * each operator on the GPU, on the CPU twin and fallen back, their device
 * time, batches spilled, the bytes its processes copied to and from the GPU,
 * and when the statistics were last reset.  datid 0 is the databases the
 * array had no room for.  This process's copies are added first.
 */
Datum
gpuhash_stat_database(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			n = gh_mon ? GH_MON_DATABASES + 1 : 1;

	gh_mon_flush();
	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < n; i++)
	{
		GhMonEntry *e = gh_mon ? &gh_mon->entries[i] : mon_entry();
		Datum		values[14];
		bool		nulls[14] = {false};
		uint64		total = 0;
		int			c = 0;

		if (e == NULL || (gh_mon && i < GH_MON_DATABASES && e->datid == InvalidOid))
			continue;
		for (int op = 0; op < GH_PLAN_KINDS; op++)
			for (int w = 0; w < GH_MON_WHERES; w++)
				total += pg_atomic_read_u64(&e->runs[op][w]);
		/* the overflow entry, once something is counted in it */
		if (gh_mon && i == GH_MON_DATABASES && total == 0 &&
			pg_atomic_read_u64(&e->bytes_to_device) == 0)
			continue;
		values[c++] = ObjectIdGetDatum(e->datid);
		for (int op = 0; op < GH_PLAN_KINDS; op++)
			for (int w = 0; w < GH_MON_WHERES; w++)
				values[c++] = Int64GetDatum((int64) pg_atomic_read_u64(&e->runs[op][w]));
		for (int op = 0; op < GH_PLAN_KINDS; op++)
			values[c++] = Float8GetDatum(pg_atomic_read_u64(&e->device_us[op]) / 1000.0);
		for (int op = 0; op < GH_PLAN_KINDS; op++)
			values[c++] = Int64GetDatum((int64) pg_atomic_read_u64(&e->spilled[op]));
		values[c++] = Int64GetDatum((int64) pg_atomic_read_u64(&e->bytes_to_device));
		values[c++] = Int64GetDatum((int64) pg_atomic_read_u64(&e->bytes_from_device));
		values[c] = mon_timestamp(gh_mon ? pg_atomic_read_u64(&gh_mon->reset_at) : 0,
								  &nulls[c]);
		c++;
		Assert(c == lengthof(values));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * gpuhash_stat_fallbacks returns a row per database, operator and reason
 * with fallen-back runs: how many, and when the last one ended.
 */
Datum
gpuhash_stat_fallbacks(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			n = gh_mon ? GH_MON_DATABASES + 1 : 1;

	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < n; i++)
	{
		GhMonEntry *e = gh_mon ? &gh_mon->entries[i] : mon_entry();

		if (e == NULL)
			continue;
		for (int op = 0; op < GH_PLAN_KINDS; op++)
			for (int r = GH_FB_NONE + 1; r < GH_FB_KINDS; r++)
			{
				Datum		values[5];
				bool		nulls[5] = {false};
				uint64		count = pg_atomic_read_u64(&e->fallbacks[op][r]);

				if (count == 0)
					continue;
				values[0] = ObjectIdGetDatum(e->datid);
				values[1] = CStringGetTextDatum(op_names[op]);
				values[2] = CStringGetTextDatum(fallback_text[r].name);
				values[3] = Int64GetDatum((int64) count);
				values[4] = mon_timestamp(pg_atomic_read_u64(&e->fallback_at[op][r]),
										  &nulls[4]);
				tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
			}
	}
	return (Datum) 0;
}

/*
 * gpuhash_stat_service returns the GPU service's state: off (not
 * configured, or gpuhash not preloaded), starting, up, restarting (its
 * process ended and the postmaster starts another), or stopped (it found
 * no GPU under gpu_service = parallel); its pid, where it builds tables,
 * when it became ready and how often it restarted, the tables it holds now
 * and their memory, and the last error it answered a backend with.
 */
Datum
gpuhash_stat_service(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[9];
	bool		nulls[9] = {false};
	const char *state;
	char		err[sizeof(((GhSvcShared *) 0)->last_error)];
	TimestampTz err_at = 0;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (gh_svc == NULL)
	{
		values[0] = CStringGetTextDatum("off");
		for (int c = 1; c < lengthof(values); c++)
			nulls[c] = true;
		PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
	}
	if (gh_svc->service_pid != 0)
		state = "up";
	else if (gh_svc->stopped)
		state = "stopped";
	else if (gh_svc->starts == 0)
		state = "starting";
	else
		state = "restarting";
	SpinLockAcquire(&gh_svc->state_mutex);
	strlcpy(err, gh_svc->last_error, sizeof(err));
	err_at = gh_svc->last_error_at;
	SpinLockRelease(&gh_svc->state_mutex);

	values[0] = CStringGetTextDatum(state);
	values[1] = Int32GetDatum(gh_svc->service_pid);
	nulls[1] = (gh_svc->service_pid == 0);
	values[2] = CStringGetTextDatum(gh_svc->on_gpu ? "gpu" : "cpu");
	nulls[2] = (gh_svc->starts == 0);
	values[3] = mon_timestamp((uint64) gh_svc->started_at, &nulls[3]);
	values[4] = Int32GetDatum(Max((int) gh_svc->starts - 1, 0));
	values[5] = Int32GetDatum((int32) pg_atomic_read_u32(&gh_svc->tables_held));
	values[6] = Int64GetDatum((int64) pg_atomic_read_u64(&gh_svc->table_bytes));
	values[7] = CStringGetTextDatum(err);
	nulls[7] = (err[0] == '\0');
	values[8] = mon_timestamp((uint64) err_at, &nulls[8]);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/* mon_entry_zero zeroes e's counters and forgets which fallbacks it logged. */
static void
mon_entry_zero(GhMonEntry *e)
{
	for (int op = 0; op < GH_PLAN_KINDS; op++)
	{
		for (int w = 0; w < GH_MON_WHERES; w++)
			pg_atomic_write_u64(&e->runs[op][w], 0);
		for (int r = 0; r < GH_FB_KINDS; r++)
		{
			pg_atomic_write_u64(&e->fallbacks[op][r], 0);
			pg_atomic_write_u64(&e->fallback_at[op][r], 0);
			pg_atomic_write_u32(&e->logged[op][r], 0);
		}
		pg_atomic_write_u64(&e->device_us[op], 0);
		pg_atomic_write_u64(&e->spilled[op], 0);
	}
	pg_atomic_write_u64(&e->bytes_to_device, 0);
	pg_atomic_write_u64(&e->bytes_from_device, 0);
}

/*
 * gpuhash_stat_reset zeroes every database's counters (without preloading:
 * this backend's), so that each reason's next fallback is logged again, and
 * frees the entries of databases that no longer exist.  Superuser only
 * unless granted, as pg_stat_statements_reset.
 */
Datum
gpuhash_stat_reset(PG_FUNCTION_ARGS)
{
	GhMonEntry *e;

	gh_mon_flush();
	if (gh_mon == NULL)
	{
		if ((e = mon_entry()) != NULL)
			mon_entry_zero(e);
		PG_RETURN_VOID();
	}
	for (int i = 0; i <= GH_MON_DATABASES; i++)
	{
		Oid			datid;

		e = &gh_mon->entries[i];
		SpinLockAcquire(&gh_mon->mutex);
		datid = e->datid;
		SpinLockRelease(&gh_mon->mutex);
		mon_entry_zero(e);

		/*
		 * A dropped database's entry is free again: no process of it is
		 * left to hold a pointer to it.
		 */
		if (OidIsValid(datid) && i < GH_MON_DATABASES &&
			!SearchSysCacheExists1(DATABASEOID, ObjectIdGetDatum(datid)))
		{
			SpinLockAcquire(&gh_mon->mutex);
			if (e->datid == datid)
				e->datid = InvalidOid;
			SpinLockRelease(&gh_mon->mutex);
		}
	}
	pg_atomic_write_u64(&gh_mon->reset_at, (uint64) GetCurrentTimestamp());
	PG_RETURN_VOID();
}
