/*-------------------------------------------------------------------------
 * device_budget.c
 *	  The server-wide device memory budget: gpuhash.server_device_memory,
 *	  which every backend and the GPU service reserve from before they
 *	  allocate device memory and give back to when they free it.
 *
 * With gpuhash preloaded, one counter in shared memory holds what all
 * gpuhash processes of the server have reserved, beside one counter per
 * process (PGPROC) that the SQL functions below list.  A reservation is a
 * compare-and-swap on the server's counter that never passes the budget;
 * giving back subtracts and wakes the processes that wait on the budget's
 * condition variable.  The device layer (device.c) reserves for every
 * device allocation it hands out and gives back when it frees it, which it
 * does exactly once whatever the path (gh_dev_free, resource release on
 * ERROR or cancel); the GPU service does the same for its own tables.  At
 * exit a process gives back whatever it still holds (on_shmem_exit), its
 * CUDA context's share included, so a backend that ends in a join leaves
 * nothing behind; a crash reinitialises shared memory anyway.
 *
 * A reservation that the budget cannot take waits for others to give back,
 * up to gpuhash.device_memory_wait, interruptibly; then it is refused, and
 * the caller does what it does when the GPU itself is out of memory: a
 * join's table goes to the CPU twin, other allocations raise the out of
 * device memory ERROR.  The GPU service never waits: it serves every
 * backend, including those that would give back.
 *
 * Without preloading there is no shared memory: the budget then bounds
 * what this backend holds, alone.
 *
 * The CPU twin allocates host memory and reserves nothing, except under the
 * test-only gpuhash.budget_cpu_twin, where its "device" allocations are
 * reserved as the GPU's would be, so that the accounting, the waits and the
 * fall-back are tested on machines without a GPU.
 *-------------------------------------------------------------------------
 */
#include <limits.h>

#include "postgres.h"

#include "access/twophase.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "gpuhash.h"

int			gpuhash_device_memory_limit = 0;


/* What one process holds. */
typedef struct GhBudgetProc
{
	pg_atomic_uint64 held;
	int			pid;
} GhBudgetProc;

typedef struct GhBudgetShared
{
	pg_atomic_uint64 reserved;	/* bytes held by all processes */
	pg_atomic_uint64 waits;		/* reservations that waited */
	pg_atomic_uint64 refusals;	/* reservations refused */
	pg_atomic_flag no_gpu_logged;	/* "no usable GPU" was logged */
	ConditionVariable given_back;
	int			nprocs;
	GhBudgetProc procs[FLEXIBLE_ARRAY_MEMBER];
} GhBudgetShared;

int			gpuhash_server_device_memory = 0;
int			gpuhash_device_memory_wait = 1000;
bool		gpuhash_budget_cpu_twin = false;

static GhBudgetShared *gh_budget = NULL;

/* this process's reservations; without shared memory, the whole budget */
static uint64 my_held = 0;
static uint64 my_waits = 0;
static uint64 my_refusals = 0;
static bool my_exit_hook = false;
static bool my_exited = false;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static int	budget_nprocs(void);
static Size budget_shmem_size(void);
static void budget_shmem_request(void);
static void budget_shmem_startup(void);
static GhBudgetProc *budget_my_proc(void);
static void budget_add(uint64 bytes);
static bool budget_take(uint64 bytes);
static void budget_exit(int code, Datum arg);

PG_FUNCTION_INFO_V1(gpuhash_device_budget);
PG_FUNCTION_INFO_V1(gpuhash_device_reservations);

/* budget_nprocs is the number of per-process counters: one per PGPROC. */
static int
budget_nprocs(void)
{
	return MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts;
}

/* budget_shmem_size is the size of the budget's shared memory. */
static Size
budget_shmem_size(void)
{
	return add_size(offsetof(GhBudgetShared, procs),
					mul_size(budget_nprocs(), sizeof(GhBudgetProc)));
}

/* budget_shmem_request asks for the budget's shared memory. */
static void
budget_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(budget_shmem_size());
}

/* budget_shmem_startup creates the budget's shared memory, or attaches it. */
static void
budget_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	gh_budget = ShmemInitStruct("gpuhash device memory budget",
								budget_shmem_size(), &found);
	if (!found)
	{
		memset(gh_budget, 0, budget_shmem_size());
		pg_atomic_init_u64(&gh_budget->reserved, 0);
		pg_atomic_init_u64(&gh_budget->waits, 0);
		pg_atomic_init_u64(&gh_budget->refusals, 0);
		pg_atomic_init_flag(&gh_budget->no_gpu_logged);
		ConditionVariableInit(&gh_budget->given_back);
		gh_budget->nprocs = budget_nprocs();
		for (int i = 0; i < gh_budget->nprocs; i++)
			pg_atomic_init_u64(&gh_budget->procs[i].held, 0);
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * gh_budget_first_no_gpu_log says whether this process is the first since
 * the server started to find no usable GPU, so that the server log says why
 * once, not once per backend.  Without shared memory (gpuhash not
 * preloaded) every backend is the first of its own.
 */
bool
gh_budget_first_no_gpu_log(void)
{
	if (gh_budget == NULL)
		return true;
	return pg_atomic_test_set_flag(&gh_budget->no_gpu_logged);
}

/*
 * gpuhash_init_budget, from _PG_init: asks for the shared memory while the
 * library is preloaded.
 */
void
gpuhash_init_budget(void)
{
	DefineCustomIntVariable("gpuhash.device_memory_limit",
							"Device memory one hash table may use; 0 means what the GPU has.",
							"A join whose inner side needs more is planned and run in batches "
							"that each fit; a batch that cannot be split (one key's rows) is built "
							"on the CPU twin.  An aggregation's groups kept on the GPU spill past "
							"it (0: past half of the GPU).  It can only lower "
							"gpuhash.server_device_memory.",
							&gpuhash_device_memory_limit,
							0, 0, INT_MAX,
							PGC_USERSET,
							GUC_UNIT_MB,
							NULL, NULL, NULL);

	/*
	 * The server's budget is the configuration's or a superuser's (ALTER
	 * SYSTEM) and the same in every process: a plain role may lower its own
	 * tables' share (device_memory_limit) but not lift the server's.  No
	 * default cap: the postmaster never touches CUDA, so no size is known
	 * when the setting is read, and how much of the GPU PostgreSQL may have
	 * depends on what else runs on it.
	 */
	DefineCustomIntVariable("gpuhash.server_device_memory",
							"Device memory all of the server's gpuhash work may hold at once; 0 means no server-wide cap.",
							"Backends and the GPU service reserve from it before they allocate device memory, "
							"a CUDA context's share included; a reservation it cannot take waits up to "
							"gpuhash.device_memory_wait, then a join's table goes to the CPU twin.  Server-wide "
							"when gpuhash is in shared_preload_libraries, otherwise per backend.",
							&gpuhash_server_device_memory,
							0, 0, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gpuhash.device_memory_wait",
							"How long a device memory reservation waits for room in gpuhash.server_device_memory.",
							"Then a join's table goes to the CPU twin and other allocations fail as out of "
							"device memory; 0 does not wait.",
							&gpuhash_device_memory_wait,
							1000, 0, 3600 * 1000,
							PGC_USERSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("gpuhash.budget_cpu_twin",
							 "Makes the CPU twin's device allocations reserve from gpuhash.server_device_memory.",
							 "Developer option, for tests: lets the budget be tested without a GPU.",
							 &gpuhash_budget_cpu_twin,
							 false,
							 PGC_SUSET,
							 GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = budget_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = budget_shmem_startup;
}

/* gh_budget_cap is the budget in bytes; 0: none. */
uint64
gh_budget_cap(void)
{
	return (uint64) gpuhash_server_device_memory * 1024 * 1024;
}

/* budget_my_proc is this process's counter, NULL where there is none. */
static GhBudgetProc *
budget_my_proc(void)
{
	if (gh_budget == NULL || MyProc == NULL ||
		MyProc->pgprocno < 0 || MyProc->pgprocno >= gh_budget->nprocs)
		return NULL;
	return &gh_budget->procs[MyProc->pgprocno];
}

/* budget_add counts bytes, already taken from the server's total, as ours. */
static void
budget_add(uint64 bytes)
{
	GhBudgetProc *p = budget_my_proc();

	if (!my_exit_hook)
	{
		on_shmem_exit(budget_exit, (Datum) 0);
		my_exit_hook = true;
	}
	my_held += bytes;
	if (p)
	{
		p->pid = MyProcPid;
		pg_atomic_add_fetch_u64(&p->held, bytes);
	}
}

/*
 * budget_take takes bytes from the budget if it has room for them, without
 * waiting: from the server's total, or without shared memory from this
 * backend's own.
 */
static bool
budget_take(uint64 bytes)
{
	uint64		cap = gh_budget_cap();

	if (gh_budget == NULL)
	{
		if (cap > 0 && (my_held + bytes > cap || bytes > cap))
			return false;
		budget_add(bytes);
		return true;
	}
	for (;;)
	{
		uint64		cur = pg_atomic_read_u64(&gh_budget->reserved);

		if (cap > 0 && (bytes > cap || cur > cap - bytes))
			return false;
		if (pg_atomic_compare_exchange_u64(&gh_budget->reserved, &cur,
										   cur + bytes))
			break;
	}
	budget_add(bytes);
	return true;
}

/*
 * gh_budget_reserve reserves bytes of device memory from the budget before
 * they are allocated; false if it has no room for them.  may_wait: wait up
 * to gpuhash.device_memory_wait for other processes to give back (a cancel
 * ends the wait with its ERROR, holding nothing more).  Every reservation
 * is given back with gh_budget_release, or at exit.
 */
bool
gh_budget_reserve(uint64 bytes, bool may_wait)
{
	TimestampTz start;
	bool		ok = false;

	if (my_exited)
		return false;
	if (budget_take(bytes))
		return true;

	/*
	 * Only other processes give back, and only with shared memory; what is
	 * larger than the budget less what this process holds (its CUDA
	 * context's share, its other tables: none of it comes back while it
	 * waits) never fits.
	 */
	if (may_wait && gh_budget != NULL && gpuhash_device_memory_wait > 0 &&
		my_held <= gh_budget_cap() && bytes <= gh_budget_cap() - my_held)
	{
		pg_atomic_add_fetch_u64(&gh_budget->waits, 1);
		my_waits++;
		start = GetCurrentTimestamp();
		ConditionVariablePrepareToSleep(&gh_budget->given_back);
		for (;;)
		{
			long		left;

			if (budget_take(bytes))
			{
				ok = true;
				break;
			}
			left = gpuhash_device_memory_wait -
				(long) (TimestampDifferenceMilliseconds(start, GetCurrentTimestamp()));
			if (left <= 0)
				break;
			/* returns when someone gives back, at the timeout, or ERRORs on a cancel */
			(void) ConditionVariableTimedSleep(&gh_budget->given_back, left,
											   PG_WAIT_EXTENSION);
		}
		ConditionVariableCancelSleep();
	}
	if (!ok)
	{
		if (gh_budget)
			pg_atomic_add_fetch_u64(&gh_budget->refusals, 1);
		my_refusals++;
		ereport(DEBUG1,
				(errmsg_internal("gpuhash: gpuhash.server_device_memory has no room for %llu bytes",
								 (unsigned long long) bytes)));
	}
	return ok;
}

/*
 * gh_budget_count counts bytes that are held already, whatever the budget
 * says: the GPU service's CUDA context, made when the service starts.
 */
void
gh_budget_count(uint64 bytes)
{
	if (my_exited)
		return;
	if (gh_budget)
		pg_atomic_add_fetch_u64(&gh_budget->reserved, bytes);
	budget_add(bytes);
}

/*
 * gh_budget_release gives back bytes of gh_budget_reserve or
 * gh_budget_count, and wakes the processes waiting for room.  It raises
 * nothing: it runs in resource release and at exit.
 */
void
gh_budget_release(uint64 bytes)
{
	GhBudgetProc *p = budget_my_proc();

	if (my_exited || bytes == 0)
		return;
	Assert(bytes <= my_held);
	bytes = Min(bytes, my_held);
	my_held -= bytes;
	if (gh_budget == NULL)
		return;
	if (p)
		pg_atomic_sub_fetch_u64(&p->held, bytes);
	pg_atomic_sub_fetch_u64(&gh_budget->reserved, bytes);
	ConditionVariableBroadcast(&gh_budget->given_back);
}

/*
 * gh_budget_in_use is what is reserved now: by the server's processes, or
 * without shared memory by this backend.
 */
uint64
gh_budget_in_use(void)
{
	return gh_budget ? pg_atomic_read_u64(&gh_budget->reserved) : my_held;
}

/*
 * budget_exit gives back, as the process exits, whatever it still holds:
 * its CUDA context's share, and anything whose release did not run.  Later
 * releases (none are expected) then do nothing.
 */
static void
budget_exit(int code, Datum arg)
{
	GhBudgetProc *p = budget_my_proc();

	gh_budget_release(my_held);
	if (p)
		p->pid = 0;
	my_exited = true;
}

/*
 * gpuhash_device_budget returns one row: the budget (MB, 0: none), what is
 * reserved now and by how many processes, how many reservations waited and
 * how many were refused since the server started, and whether these are the
 * server's (gpuhash preloaded) or this backend's alone.
 */
Datum
gpuhash_device_budget(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[6];
	bool		nulls[6] = {false};
	uint64		reserved = my_held;
	int			holders = my_held > 0 ? 1 : 0;
	uint64		waits = my_waits;
	uint64		refusals = my_refusals;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (gh_budget)
	{
		reserved = pg_atomic_read_u64(&gh_budget->reserved);
		holders = 0;
		for (int i = 0; i < gh_budget->nprocs; i++)
			if (pg_atomic_read_u64(&gh_budget->procs[i].held) > 0)
				holders++;
		waits = pg_atomic_read_u64(&gh_budget->waits);
		refusals = pg_atomic_read_u64(&gh_budget->refusals);
	}
	values[0] = Int32GetDatum(gpuhash_server_device_memory);
	values[1] = Int64GetDatum((int64) reserved);
	values[2] = Int32GetDatum(holders);
	values[3] = Int64GetDatum((int64) waits);
	values[4] = Int64GetDatum((int64) refusals);
	values[5] = BoolGetDatum(gh_budget != NULL);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * gpuhash_device_reservations returns one row per process that holds part
 * of the budget now: its pid and bytes (this backend alone without
 * preloading).
 */
Datum
gpuhash_device_reservations(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		values[2];
	bool		nulls[2] = {false};

	InitMaterializedSRF(fcinfo, 0);
	if (gh_budget == NULL)
	{
		if (my_held > 0)
		{
			values[0] = Int32GetDatum(MyProcPid);
			values[1] = Int64GetDatum((int64) my_held);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
		return (Datum) 0;
	}
	for (int i = 0; i < gh_budget->nprocs; i++)
	{
		GhBudgetProc *p = &gh_budget->procs[i];
		uint64		held = pg_atomic_read_u64(&p->held);

		if (held == 0)
			continue;
		values[0] = Int32GetDatum(p->pid);
		values[1] = Int64GetDatum((int64) held);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
