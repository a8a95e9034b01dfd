/*-------------------------------------------------------------------------
 * service.c
 *	  The GPU service's set-up: its shared memory and the registration of
 *	  its background worker, from _PG_init while the library is preloaded.
 *
 * The GPU service is one background process that owns the CUDA context and
 * the joins' hash tables for every backend (gpuhash.gpu_service: the
 * participants of parallel joins under "parallel", every join under "on").
 * Without it each backend, and each parallel worker, creates a CUDA context
 * of its own the first time it uses the GPU, which costs time and about
 * half a GiB of device memory apiece, and the driver creates the contexts
 * of processes started together nearly one after another.
 * With it, a join sends the service its inner side's row hashes and then
 * its probe batches, and gets back what hashtable.c would have computed
 * itself: the table's shape, its row array when some hash repeats, and each
 * probe row's candidate range.  Nothing else changes in the executor.
 *
 * Four files: this one sets up; service.h is the protocol both sides agree
 * on; service_worker.c is the service process; service_client.c is the
 * backends' side, which hashtable.c calls for a table the service holds.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <dlfcn.h>

#include "access/twophase.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/guc.h"

#include "service.h"

static const struct config_enum_entry service_options[] = {
	{"off", GPUHASH_SERVICE_OFF, false},
	{"parallel", GPUHASH_SERVICE_PARALLEL, false},
	{"on", GPUHASH_SERVICE_ON, false},
	{"true", GPUHASH_SERVICE_ON, true},
	{"false", GPUHASH_SERVICE_OFF, true},
	{"yes", GPUHASH_SERVICE_ON, true},
	{"no", GPUHASH_SERVICE_OFF, true},
	{"1", GPUHASH_SERVICE_ON, true},
	{"0", GPUHASH_SERVICE_OFF, true},
	{NULL, 0, false}
};

int			gpuhash_gpu_service = GPUHASH_SERVICE_OFF;
GhSvcShared *gh_svc = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static int	svc_nslots(void);
static Size svc_shmem_size(void);
static void svc_shmem_request(void);
static void svc_shmem_startup(void);

/* svc_nslots is the number of request slots: one per PGPROC. */
static int
svc_nslots(void)
{
	return MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts;
}

/* svc_shmem_size is the size of the service's shared memory. */
static Size
svc_shmem_size(void)
{
	return add_size(offsetof(GhSvcShared, slots),
					mul_size(svc_nslots(), sizeof(GhSvcSlot)));
}

/* svc_shmem_request asks for the service's shared memory. */
static void
svc_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(svc_shmem_size());
}

/* svc_shmem_startup creates the service's shared memory, or attaches it. */
static void
svc_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	gh_svc = ShmemInitStruct("gpuhash GPU service", svc_shmem_size(), &found);
	if (!found)
	{
		memset(gh_svc, 0, svc_shmem_size());
		gh_svc->nslots = svc_nslots();
		SpinLockInit(&gh_svc->xarea_mutex);
		SpinLockInit(&gh_svc->state_mutex);
		pg_atomic_init_u32(&gh_svc->tables_held, 0);
		pg_atomic_init_u64(&gh_svc->table_bytes, 0);
		for (int i = 0; i < gh_svc->nslots; i++)
			pg_atomic_init_u32(&gh_svc->slots[i].state, SVC_IDLE);
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * gpuhash_init_service, from _PG_init while the library is preloaded: asks
 * for the shared memory and registers the service.  Touches no CUDA.
 */
void
gpuhash_init_service(void)
{
	BackgroundWorker worker;

	/*
	 * A postmaster setting can be defined only while the library is
	 * preloaded (later it is a FATAL error); loaded later, gpuhash has no
	 * service and the setting does not exist in that session.
	 */
	if (process_shared_preload_libraries_in_progress)
		DefineCustomEnumVariable("gpuhash.gpu_service",
								 "Runs the GPU work of joins in one service process that owns the CUDA context: off, parallel (parallel joins) or on (every join).",
								 "Needs gpuhash in shared_preload_libraries.  Without the service each backend and each parallel worker creates a CUDA context of its own; a serial join probes fastest in its own backend, the participants of a parallel join share one table in the service.",
								 &gpuhash_gpu_service,
								 GPUHASH_SERVICE_PARALLEL,
								 service_options,
								 PGC_POSTMASTER,
								 0,
								 NULL, NULL, NULL);

	if (!process_shared_preload_libraries_in_progress ||
		gpuhash_gpu_service == GPUHASH_SERVICE_OFF)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = svc_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = svc_shmem_startup;

	memset(&worker, 0, sizeof(worker));
	/* connected to no database: only so that pg_stat_activity lists it */
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 5;

	/*
	 * The service runs this very library (the file holding this function),
	 * whatever shared_preload_libraries called it (a path, or a name found
	 * in $libdir).
	 */
	{
		Dl_info		info;

		if (dladdr((void *) gpuhash_init_service, &info) != 0 && info.dli_fname &&
			strlen(info.dli_fname) < BGW_MAXLEN)
			strlcpy(worker.bgw_library_name, info.dli_fname, BGW_MAXLEN);
		else
			strlcpy(worker.bgw_library_name, "gpuhash", BGW_MAXLEN);
	}
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "gpuhash_service_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "gpuhash GPU service");
	snprintf(worker.bgw_type, BGW_MAXLEN, "gpuhash GPU service");
	RegisterBackgroundWorker(&worker);
}
