/*-------------------------------------------------------------------------
 * service.c
 *	  The GPU service: one background process that owns the CUDA context and
 *	  the joins' hash tables for every backend (gpuhash.gpu_service: the
 *	  participants of parallel joins under "parallel", every join under "on").
 *
 * Without it each backend, and each parallel worker, creates a CUDA context
 * of its own the first time it uses the GPU: about 0.35 s and 0.5 GiB of
 * device memory apiece, and the driver creates the contexts of processes
 * started together nearly one after another (16 workers: 2.7 s on an H200).
 * With it, a join sends the service its inner side's row hashes and then
 * its probe batches, and gets back what hashtable.c would have computed
 * itself: the table's shape, its row array when some hash repeats, and each
 * probe row's candidate range.  Nothing else changes in the executor.
 *
 * Protocol.  Shared memory holds one request slot per PGPROC.  A backend
 * writes its data into an exchange segment of its own (a DSM segment it
 * keeps mapped for the session; the service attaches it by handle), fills
 * its slot, sets the slot to REQUEST and the service's latch, and waits on
 * its own latch for DONE.  The service serves the waiting requests in slot
 * order, except that the probes on the GPU run together (svc_serve_all).  A
 * backend interrupted while it waits (cancel, timeout) leaves the
 * request to finish: its next request, or its exit, first waits for DONE,
 * and frees a table whose build it abandoned.  A backend's exit frees all
 * its tables (BYE); a backend that died without one is found by its pid.
 * The service never raises an ERROR for a request: failures go back to the
 * backend as a gh_status and the CUDA names, and the backend reports them
 * as it would its own.
 *
 * The service uses the GPU unless gpuhash.device = cpu in its configuration.
 * Finding no GPU, it stops for good under gpu_service = parallel and uses
 * the CPU twin under "on" (its LOG says why).  A table
 * that does not fit on the GPU is built on the CPU twin in the service.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include "access/twophase.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "gpuhash.h"
#include "gpuhash_join.h"

PGDLLEXPORT void gpuhash_service_main(Datum arg);

/* slot states */
#define SVC_IDLE	0
#define SVC_REQUEST	1
#define SVC_DONE	2

/* requests */
typedef enum SvcOp
{
	SVC_OP_BUILD,
	SVC_OP_ATTACH,				/* another view of a table built for a peer */
	SVC_OP_PROBE,
	SVC_OP_FREE,
	SVC_OP_BYE
} SvcOp;

typedef struct GhSvcSlot
{
	pg_atomic_uint32 state;
	int			pid;			/* the backend using the slot, 0 if none */
	Latch	   *client_latch;
	/* request */
	SvcOp		op;
	dsm_handle	seg;			/* the backend's exchange segment */
	uint32		seg_gen;		/* changes whenever seg does */
	dsm_handle	probe_seg;		/* BUILD: the table's probe area */
	uint32		probe_cap;		/* rows it holds */
	uint32		table;			/* PROBE, FREE: the table */
	uint32		n;				/* BUILD: inner rows; PROBE: probe rows */
	double		load_factor;
	int			group_size;
	int			scheme;
	/* reply */
	gh_status	status;
	uint32		out_table;		/* BUILD */
	uint32		ndistinct;
	uint64		capacity;
	uint64		mem_bytes;
	bool		on_gpu;
	char		err_name[64];
	char		err_where[64];
	char		err_text[128];
} GhSvcSlot;

typedef struct GhSvcShared
{
	pid_t		service_pid;	/* 0 while no service is serving */
	Latch	   *service_latch;
	bool		on_gpu;			/* where the service builds tables */
	int			nslots;
	GhSvcSlot	slots[FLEXIBLE_ARRAY_MEMBER];
} GhSvcShared;

int			gpuhash_gpu_service = GPUHASH_SERVICE_OFF;

static GhSvcShared *gh_svc = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static int
svc_nslots(void)
{
	return MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts;
}

static Size
svc_shmem_size(void)
{
	return add_size(offsetof(GhSvcShared, slots),
					mul_size(svc_nslots(), sizeof(GhSvcSlot)));
}

static void
svc_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(svc_shmem_size());
}

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
		for (int i = 0; i < gh_svc->nslots; i++)
			pg_atomic_init_u32(&gh_svc->slots[i].state, SVC_IDLE);
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * gpuhash_service_init, from _PG_init while the library is preloaded:
 * asks for the shared memory and registers the service.  Touches no CUDA.
 */
void
gpuhash_service_init(void)
{
	BackgroundWorker worker;

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
	 * The service runs this very file, whatever shared_preload_libraries
	 * called it (a path, or a name found in $libdir).
	 */
	{
		Dl_info		info;

		if (dladdr((void *) gpuhash_service_main, &info) != 0 && info.dli_fname &&
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

/* ====================================================================
 * The service process
 * ====================================================================
 */
typedef struct SvcTable
{
	bool		used;
	int			slot;			/* the owner's slot */
	int			owner_pid;
	uint32		id;
	bool		on_gpu;
	gh_mm		mm;
	void	   *mem;
	size_t		bytes;
	int		   *refs;			/* views sharing mem (ATTACH); freed at 0 */
	/* the table's probe area (shared with its backend) */
	dsm_segment *area;
	uint32		area_cap;
	bool		area_pinned;	/* page-locked for the GPU's copies */
	/* GPU probe buffers */
	uint32		probe_cap;
	void	   *d_probe;
	void	   *d_first;
	void	   *d_count;
} SvcTable;

typedef struct SvcMapping
{
	dsm_segment *seg;
	uint32		gen;
	int			pid;
} SvcMapping;

static SvcTable *svc_tables = NULL;
static int	svc_ntables = 0;
static uint32 svc_next_id = 1;
static SvcMapping *svc_maps = NULL;
/* how long a backend waits awake for an answer before it sleeps (svc_wait) */
#define SVC_SPIN_US 2000

/*
 * The service's streams: builds use the first; the probes waiting together
 * use one each, up to SVC_STREAMS at a time.
 */
#define SVC_STREAMS 16
static void *svc_streams[SVC_STREAMS];
#define svc_stream (svc_streams[0])

static void
svc_set_error(GhSvcSlot *slot, gh_status st, const gh_error *err, const char *where)
{
	slot->status = st;
	strlcpy(slot->err_name, err && err->cuda_name ? err->cuda_name : "", sizeof(slot->err_name));
	strlcpy(slot->err_where, err && err->where ? err->where : where, sizeof(slot->err_where));
	strlcpy(slot->err_text, err && err->cuda_string ? err->cuda_string : "", sizeof(slot->err_text));
}

static void
svc_free_table(SvcTable *t)
{
	gh_error	err;
	bool		last = (t->refs == NULL || --(*t->refs) == 0);

	if (last && t->refs)
		free(t->refs);
	if (t->on_gpu)
	{
		if (t->d_probe)
		{
			(void) gh_cuda_free(t->d_probe, &err);
			(void) gh_cuda_free(t->d_first, &err);
			(void) gh_cuda_free(t->d_count, &err);
		}
		if (last && t->mem)
			(void) gh_cuda_free(t->mem, &err);
	}
	else if (last)
		free(t->mem);
	if (t->area_pinned)
		(void) gh_cuda_host_unregister(dsm_segment_address(t->area), &err);
	if (t->area)
		dsm_detach(t->area);
	memset(t, 0, sizeof(*t));
}

/* svc_find_any: the table of that id (ids are unique), whoever holds it */
static SvcTable *
svc_find_any(uint32 id)
{
	for (int i = 0; i < svc_ntables; i++)
		if (svc_tables[i].used && svc_tables[i].id == id)
			return &svc_tables[i];
	return NULL;
}

/* svc_find: the table of that id if slot holds it */
static SvcTable *
svc_find(int slot, uint32 id)
{
	SvcTable   *t = svc_find_any(id);

	return (t && t->slot == slot) ? t : NULL;
}

static SvcTable *
svc_new_table(void)
{
	for (int i = 0; i < svc_ntables; i++)
		if (!svc_tables[i].used)
			return &svc_tables[i];
	svc_tables = realloc(svc_tables, sizeof(SvcTable) * (svc_ntables * 2 + 16));
	if (svc_tables == NULL)
		elog(FATAL, "gpuhash GPU service: out of memory");
	memset(&svc_tables[svc_ntables], 0, sizeof(SvcTable) * (svc_ntables + 16));
	svc_ntables = svc_ntables * 2 + 16;
	return svc_new_table();
}

/* svc_forget frees every table of slot i and its exchange mapping. */
static void
svc_forget(int i)
{
	for (int k = 0; k < svc_ntables; k++)
		if (svc_tables[k].used && svc_tables[k].slot == i)
			svc_free_table(&svc_tables[k]);
	if (svc_maps[i].seg)
		dsm_detach(svc_maps[i].seg);
	memset(&svc_maps[i], 0, sizeof(SvcMapping));
}

/* svc_exchange maps slot i's exchange segment; NULL if it cannot. */
static char *
svc_exchange(int i, GhSvcSlot *slot)
{
	SvcMapping *m = &svc_maps[i];

	if (m->seg == NULL || m->gen != slot->seg_gen || m->pid != slot->pid)
	{
		if (m->seg)
			dsm_detach(m->seg);
		m->seg = dsm_attach(slot->seg);
		m->gen = slot->seg_gen;
		m->pid = slot->pid;
		if (m->seg == NULL)
			return NULL;
	}
	return dsm_segment_address(m->seg);
}

static void svc_register(int i, GhSvcSlot *slot, SvcTable *t);

/*
 * svc_fail answers the request in slot with a failure of the service's own
 * (not a CUDA call's): where failed, with what.
 */
static void
svc_fail(GhSvcSlot *slot, gh_status st, const char *where, const char *what)
{
	gh_error	err;

	memset(&err, 0, sizeof(err));
	err.where = where;
	err.cuda_name = what;
	svc_set_error(slot, st, &err, where);
}

/* svc_oom answers a request that the service's own memory could not serve. */
static void
svc_oom(GhSvcSlot *slot, SvcTable *t)
{
	svc_fail(slot, GH_ERR_OOM, "malloc", "ENOMEM");
	svc_free_table(t);
}

/*
 * svc_copy_rows writes the row array of t (grouped by hash) to x, for a
 * backend whose table has repeated hashes.
 */
static gh_status
svc_copy_rows(SvcTable *t, char *x, gh_error *err)
{
	size_t		bytes = (size_t) t->mm.nrows * sizeof(uint32);
	gh_status	st;

	if (!t->on_gpu)
	{
		memcpy(x, gh_mm_rows(&t->mm), bytes);
		return GH_OK;
	}
	st = gh_cuda_memcpy_dtoh(x, gh_mm_rows(&t->mm), bytes, svc_stream, err);
	if (st == GH_OK)
		st = gh_cuda_stream_sync(svc_stream, err);
	return st;
}

/* svc_attach_area maps the probe area of the request in slot into t. */
static bool
svc_attach_area(GhSvcSlot *slot, SvcTable *t)
{
	gh_error	err;

	memset(&err, 0, sizeof(err));
	t->area = dsm_attach(slot->probe_seg);
	if (t->area == NULL)
	{
		svc_fail(slot, GH_ERR_INVALID, "dsm_attach", "no probe area");
		return false;
	}
	t->area_cap = slot->probe_cap;
	/* page-locked, the batches' copies run at full speed; else they are slower */
	if (gh_svc->on_gpu)
		t->area_pinned =
			gh_cuda_host_register(dsm_segment_address(t->area),
								  dsm_segment_map_length(t->area), &err) == GH_OK;
	return true;
}

/*
 * svc_attach gives slot i a view of table slot->table, built for a peer of
 * the same parallel join from the same hashes: the view shares its memory
 * and has a probe area of its own.  The row array goes to x when some hash
 * repeats.
 */
static void
svc_attach(int i, GhSvcSlot *slot, char *x)
{
	SvcTable   *src = svc_find_any(slot->table);
	SvcTable   *t;
	gh_error	err;
	gh_status	st;

	memset(&err, 0, sizeof(err));
	if (src == NULL || src->mm.nrows != slot->n)
	{
		svc_fail(slot, GH_ERR_INVALID, "the GPU service", "an unknown table");
		return;
	}
	if (src->mm.ndistinct != src->mm.nrows &&
		(st = svc_copy_rows(src, x, &err)) != GH_OK)
	{
		svc_set_error(slot, st, &err, "attach");
		return;
	}
	t = svc_new_table();
	src = svc_find_any(slot->table);	/* svc_new_table may have moved it */
	if (!svc_attach_area(slot, t))
		return;
	t->on_gpu = src->on_gpu;
	t->mm = src->mm;
	t->mem = src->mem;
	t->bytes = src->bytes;
	t->refs = src->refs;
	(*t->refs)++;
	svc_register(i, slot, t);
}

static void
svc_build(int i, GhSvcSlot *slot, char *x)
{
	const uint64_t *hashes = (const uint64_t *) x;
	uint32		n = slot->n;
	gh_mm_params params;
	SvcTable   *t = svc_new_table();
	gh_error	err;
	gh_status	st = GH_OK;
	uint64_t	capacity;
	void	   *d_hashes = NULL;

	if (!svc_attach_area(slot, t))
		return;

	memset(&params, 0, sizeof(params));
	params.load_factor = slot->load_factor;
	params.group_size = slot->group_size;
	params.scheme = (gh_probe_scheme) slot->scheme;
	memset(&err, 0, sizeof(err));
	t->bytes = gh_mm_bytes(Max(n, 1), &params, &capacity);

	if (gh_svc->on_gpu)
	{
		st = gh_cuda_malloc(&t->mem, t->bytes, &err);
		if (st == GH_OK)
			st = gh_cuda_malloc(&d_hashes, Max(n, 1) * sizeof(uint64), &err);
		if (st == GH_OK)
			st = gh_cuda_memcpy_htod(d_hashes, hashes, n * sizeof(uint64), svc_stream, &err);
		if (st == GH_OK)
			st = gh_mm_build_gpu(&t->mm, t->mem, d_hashes, n, &params, svc_stream, &err);
		if (st == GH_OK)
			st = gh_cuda_stream_sync(svc_stream, &err);
		if (d_hashes)
			(void) gh_cuda_free(d_hashes, &err);
		if (st == GH_OK)
			t->on_gpu = true;
		else
		{
			if (t->mem)
				(void) gh_cuda_free(t->mem, &err);
			t->mem = NULL;
			if (st != GH_ERR_OOM)
			{
				svc_set_error(slot, st, &err, "building the table");
				svc_free_table(t);
				return;
			}
			/* no room on the GPU: the CPU twin, here */
			memset(&err, 0, sizeof(err));
			st = GH_OK;
		}
	}
	if (!t->on_gpu)
	{
		t->mem = malloc(t->bytes);
		if (t->mem == NULL)
		{
			svc_oom(slot, t);
			return;
		}
		st = gh_mm_build_cpu(&t->mm, t->mem, hashes, n, &params, &err);
		if (st != GH_OK)
		{
			svc_set_error(slot, st, &err, "building the table");
			svc_free_table(t);
			return;
		}
	}
	if (t->mm.ndistinct != n && (st = svc_copy_rows(t, x, &err)) != GH_OK)
	{
		svc_set_error(slot, st, &err, "building the table");
		svc_free_table(t);
		return;
	}
	t->refs = malloc(sizeof(int));
	if (t->refs == NULL)
	{
		svc_oom(slot, t);
		return;
	}
	*t->refs = 1;
	svc_register(i, slot, t);
}

/*
 * svc_register makes t, complete, a table of slot i and replies with its
 * shape.
 */
static void
svc_register(int i, GhSvcSlot *slot, SvcTable *t)
{
	t->used = true;
	t->slot = i;
	t->owner_pid = slot->pid;
	t->id = svc_next_id++;
	if (svc_next_id == 0)
		svc_next_id = 1;
	slot->out_table = t->id;
	slot->ndistinct = t->mm.ndistinct;
	slot->capacity = t->mm.capacity;
	slot->mem_bytes = t->bytes;
	slot->on_gpu = t->on_gpu;
	slot->status = GH_OK;
}

/*
 * svc_probe_launch starts the probe asked for in slot i on stream: the copy
 * of its hashes to the device, the kernel and the copies of the ranges
 * back, which svc_probes_finish waits for.  Returns false when the request
 * is answered already (an error, or a table on the CPU twin, probed here).
 */
static bool
svc_probe_launch(int i, GhSvcSlot *slot, void *stream)
{
	SvcTable   *t = svc_find(i, slot->table);
	uint32		n = slot->n;
	char	   *x;
	uint64_t   *hashes;
	uint32_t   *first;
	uint32_t   *count;
	gh_error	err;
	gh_status	st;

	memset(&err, 0, sizeof(err));
	if (t == NULL || n > t->area_cap)
	{
		svc_fail(slot, GH_ERR_INVALID, "the GPU service", "an unknown table");
		return false;
	}
	x = dsm_segment_address(t->area);
	hashes = (uint64_t *) x;
	first = (uint32_t *) (x + (size_t) t->area_cap * sizeof(uint64));
	count = first + t->area_cap;
	if (!t->on_gpu)
	{
		st = gh_mm_probe_ranges_cpu(&t->mm, hashes, n, first, count, &err);
		if (st != GH_OK)
			svc_set_error(slot, st, &err, "probing");
		return false;
	}
	st = GH_OK;
	if (n > t->probe_cap)
	{
		if (t->d_probe)
		{
			(void) gh_cuda_free(t->d_probe, &err);
			(void) gh_cuda_free(t->d_first, &err);
			(void) gh_cuda_free(t->d_count, &err);
			t->d_probe = t->d_first = t->d_count = NULL;
		}
		t->probe_cap = 0;
		st = gh_cuda_malloc(&t->d_probe, (size_t) n * sizeof(uint64), &err);
		if (st == GH_OK)
			st = gh_cuda_malloc(&t->d_first, (size_t) n * sizeof(uint32), &err);
		if (st == GH_OK)
			st = gh_cuda_malloc(&t->d_count, (size_t) n * sizeof(uint32), &err);
		if (st == GH_OK)
			t->probe_cap = n;
	}
	if (st == GH_OK)
		st = gh_cuda_memcpy_htod(t->d_probe, hashes, (size_t) n * sizeof(uint64), stream, &err);
	if (st == GH_OK)
		st = gh_mm_probe_ranges_gpu(&t->mm, t->d_probe, n, t->d_first, t->d_count,
									stream, &err);
	if (st == GH_OK)
		st = gh_cuda_memcpy_dtoh(first, t->d_first, (size_t) n * sizeof(uint32), stream, &err);
	if (st == GH_OK)
		st = gh_cuda_memcpy_dtoh(count, t->d_count, (size_t) n * sizeof(uint32), stream, &err);
	if (st != GH_OK)
	{
		gh_error	err2;

		/* what was queued before the failure still runs: wait for it */
		svc_set_error(slot, st, &err, "probing");
		(void) gh_cuda_stream_sync(stream, &err2);
		return false;
	}
	return true;
}

/* svc_reply tells slot i's backend that its request is done. */
static void
svc_reply(GhSvcSlot *slot)
{
	pg_write_barrier();
	pg_atomic_write_u32(&slot->state, SVC_DONE);
	if (slot->client_latch)
		SetLatch(slot->client_latch);
}

/*
 * svc_probes_finish waits for the n probes that svc_probe_launch started in
 * the slots launched[k], on svc_streams[k], and answers them.
 */
static void
svc_probes_finish(const int *launched, int n)
{
	for (int k = 0; k < n; k++)
	{
		GhSvcSlot  *slot = &gh_svc->slots[launched[k]];
		gh_error	err;
		gh_status	st;

		memset(&err, 0, sizeof(err));
		st = gh_cuda_stream_sync(svc_streams[k], &err);
		if (st != GH_OK)
			svc_set_error(slot, st, &err, "probing");
		svc_reply(slot);
	}
}

/*
 * svc_take reads slot i's request and clears its answer, before it is
 * served.
 */
static void
svc_take(GhSvcSlot *slot)
{
	pg_read_barrier();
	slot->status = GH_OK;
	slot->err_name[0] = slot->err_where[0] = slot->err_text[0] = '\0';
}

static void
svc_serve(int i)
{
	GhSvcSlot  *slot = &gh_svc->slots[i];
	char	   *x = NULL;

	svc_take(slot);
	switch (slot->op)
	{
		case SVC_OP_PROBE:
			/* svc_serve_all's */
			Assert(false);
			break;
		case SVC_OP_BUILD:
		case SVC_OP_ATTACH:
			x = svc_exchange(i, slot);
			if (x == NULL)
			{
				svc_fail(slot, GH_ERR_INVALID, "dsm_attach", "no exchange segment");
				break;
			}
			if (slot->op == SVC_OP_BUILD)
				svc_build(i, slot, x);
			else
				svc_attach(i, slot, x);
			break;
		case SVC_OP_FREE:
			{
				SvcTable   *t = svc_find(i, slot->table);

				if (t)
					svc_free_table(t);
			}
			break;
		case SVC_OP_BYE:
			svc_forget(i);
			break;
	}
	svc_reply(slot);
}

/*
 * svc_serve_all serves every request waiting now.  The probes on the GPU
 * run together, each on a stream of its own, before the service waits for
 * them: the copies of one overlap the kernels and copies of the others (a
 * probe of a table on the CPU twin is answered at once).  Returns whether
 * it found any.
 */
static bool
svc_serve_all(void)
{
	int			launched[SVC_STREAMS];
	int			nlaunched = 0;
	bool		served = false;

	for (int i = 0; i < gh_svc->nslots; i++)
	{
		GhSvcSlot  *slot = &gh_svc->slots[i];

		if (pg_atomic_read_u32(&slot->state) != SVC_REQUEST)
			continue;
		served = true;
		if (slot->op != SVC_OP_PROBE)
		{
			svc_serve(i);
			continue;
		}
		svc_take(slot);
		if (svc_probe_launch(i, slot, svc_streams[nlaunched]))
			launched[nlaunched++] = i;
		else
			svc_reply(slot);
		if (nlaunched == SVC_STREAMS)
		{
			svc_probes_finish(launched, nlaunched);
			nlaunched = 0;
		}
	}
	svc_probes_finish(launched, nlaunched);
	return served;
}

/* svc_reap frees what backends that ended without a BYE (crashes aside) left. */
static void
svc_reap(void)
{
	for (int i = 0; i < gh_svc->nslots; i++)
	{
		bool		held = (svc_maps[i].seg != NULL);

		for (int k = 0; !held && k < svc_ntables; k++)
			held = svc_tables[k].used && svc_tables[k].slot == i;
		if (!held)
			continue;
		if (svc_maps[i].pid != 0 && kill(svc_maps[i].pid, 0) != 0 && errno == ESRCH)
			svc_forget(i);
		else
			for (int k = 0; k < svc_ntables; k++)
				if (svc_tables[k].used && svc_tables[k].slot == i &&
					kill(svc_tables[k].owner_pid, 0) != 0 && errno == ESRCH)
					svc_free_table(&svc_tables[k]);
	}
}

static void
svc_shutdown(int code, Datum arg)
{
	if (gh_svc)
	{
		gh_svc->service_pid = 0;
		gh_svc->service_latch = NULL;
	}
}

void
gpuhash_service_main(Datum arg)
{
	gh_error	err;

	/*
	 * Signals as PostgreSQL's own background workers take them: SIGTERM
	 * (shutdown, pg_terminate_backend) and the ProcSignal barriers that DROP
	 * DATABASE and DROP TABLESPACE wait for are handled by
	 * CHECK_FOR_INTERRUPTS; SIGHUP reloads the configuration.  A terminated
	 * service exits with code 1, so the postmaster starts it again.  It has
	 * no statement to cancel: SIGINT is ignored.
	 */
	pqsignal(SIGTERM, die);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGINT, SIG_IGN);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	if (gh_svc == NULL)
		elog(FATAL, "gpuhash GPU service: no shared memory (is gpuhash preloaded?)");

	svc_maps = calloc(gh_svc->nslots, sizeof(SvcMapping));
	if (svc_maps == NULL)
		elog(FATAL, "gpuhash GPU service: out of memory");

	/* the service's own context, if the GPU is to be used */
	gh_svc->on_gpu = false;
	if (gpuhash_device != GPUHASH_DEVICE_CPU)
	{
		gh_status	st;

		memset(&err, 0, sizeof(err));
		st = gh_cuda_context_init(0, &err);
		for (int k = 0; st == GH_OK && k < SVC_STREAMS; k++)
			st = gh_cuda_stream_create(&svc_streams[k], &err);
		if (st == GH_OK)
			gh_svc->on_gpu = true;
		else if (gpuhash_gpu_service == GPUHASH_SERVICE_PARALLEL)
		{
			/*
			 * The default setting on a host without a GPU: nothing would
			 * use the service (device = auto plans no GPU join there).  An
			 * exit with code 0 is final: the postmaster does not start it
			 * again, and its worker slot is free for parallel queries.
			 */
			ereport(LOG,
					(errmsg("gpuhash GPU service found no usable GPU and stops"),
					 errdetail("%s failed with %s.", err.where ? err.where : "?",
							   err.cuda_name ? err.cuda_name : "?")));
			proc_exit(0);
		}
		else
			ereport(LOG,
					(errmsg("gpuhash GPU service found no usable GPU; it builds tables on the CPU twin"),
					 errdetail("%s failed with %s.", err.where ? err.where : "?",
							   err.cuda_name ? err.cuda_name : "?")));
	}
	on_shmem_exit(svc_shutdown, (Datum) 0);

	/*
	 * A request left by backends that waited on an earlier service process
	 * (it stopped or failed) is answered with an error, not served: its
	 * tables and segments are gone with that process.
	 */
	for (int i = 0; i < gh_svc->nslots; i++)
	{
		GhSvcSlot  *slot = &gh_svc->slots[i];

		if (pg_atomic_read_u32(&slot->state) != SVC_REQUEST)
			continue;
		svc_fail(slot, GH_ERR_CUDA, "the GPU service", "a restart of the service");
		pg_write_barrier();
		pg_atomic_write_u32(&slot->state, SVC_DONE);
		if (slot->client_latch)
			SetLatch(slot->client_latch);
	}
	gh_svc->service_latch = MyLatch;
	pg_write_barrier();
	gh_svc->service_pid = MyProcPid;
	ereport(LOG,
			(errmsg("gpuhash GPU service ready, building tables on the %s",
					gh_svc->on_gpu ? "GPU" : "CPU twin")));

	for (;;)
	{
		int			rc;

		/* SIGTERM ends here (FATAL, exit code 1); barriers are absorbed */
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (svc_serve_all())
			continue;
		rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					   1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		if (rc & WL_TIMEOUT)
			svc_reap();
	}
}

/* ====================================================================
 * The backend's side
 * ====================================================================
 */
static dsm_segment *my_xseg = NULL;
static size_t my_xseg_size = 0;
static uint32 my_seg_gen = 0;
static bool my_build_pending = false;	/* a BUILD we stopped waiting for */
static bool my_bye_hook = false;
static char my_err_name[64];
static char my_err_where[64];
static char my_err_text[128];

/*
 * gh_svc_available says whether a join can use the service now: a parallel
 * join's participants (parallel), or any join with gpu_service = on.
 */
bool
gh_svc_available(bool parallel)
{
	if (gpuhash_gpu_service == GPUHASH_SERVICE_OFF ||
		(gpuhash_gpu_service == GPUHASH_SERVICE_PARALLEL && !parallel))
		return false;
	if (gh_svc == NULL || gh_svc->service_pid == 0 || MyProc == NULL)
		return false;

	/*
	 * The session's gpuhash.device decides, not the service's: gpu means a
	 * GPU (a service on the CPU twin is no GPU, and the backend's own path
	 * raises the ERROR), cpu means the twin.
	 */
	if (gpuhash_device == GPUHASH_DEVICE_GPU && !gh_svc->on_gpu)
		return false;
	if (gpuhash_device == GPUHASH_DEVICE_CPU && gh_svc->on_gpu)
		return false;
	return true;
}

/* gh_svc_target is where the service builds tables. */
GhTarget
gh_svc_target(void)
{
	return (gh_svc && gh_svc->on_gpu) ? GH_TARGET_GPU : GH_TARGET_CPU;
}

static GhSvcSlot *
my_slot(void)
{
	return &gh_svc->slots[MyProc->pgprocno];
}

/* svc_post hands the request filled in the slot to the service. */
static void
svc_post(GhSvcSlot *slot)
{
	Latch	   *service = gh_svc->service_latch;

	pg_write_barrier();
	pg_atomic_write_u32(&slot->state, SVC_REQUEST);
	/* the service may just have stopped: then svc_wait says so */
	if (service)
		SetLatch(service);
}

/*
 * svc_wait waits for the slot's request to be DONE.  interruptible: a
 * cancel may end the wait (with the request left to finish); otherwise it
 * waits at most 10 s (an exit or a release must not hang on a dead service).
 */
static bool
svc_wait(GhSvcSlot *slot, bool interruptible)
{
	int			waited_ms = 0;
	instr_time	start,
				now;

	/*
	 * A probe is answered within a fraction of a millisecond: wait for that
	 * awake.  Sleeping on the latch costs two wake-ups a batch and often
	 * moves the backend to another core, away from its batch in the cache.
	 */
	INSTR_TIME_SET_CURRENT(start);
	for (uint32 spins = 1; pg_atomic_read_u32(&slot->state) == SVC_REQUEST; spins++)
	{
		pg_spin_delay();
		if (spins % 256 == 0)
		{
			INSTR_TIME_SET_CURRENT(now);
			INSTR_TIME_SUBTRACT(now, start);
			if (INSTR_TIME_GET_MICROSEC(now) >= SVC_SPIN_US)
				break;
		}
	}
	while (pg_atomic_read_u32(&slot->state) == SVC_REQUEST)
	{
		if (gh_svc->service_pid == 0)
		{
			if (!interruptible)
				return false;
			ereport(ERROR,
					(errcode(ERRCODE_SYSTEM_ERROR),
					 errmsg("the gpuhash GPU service stopped while serving this backend"),
					 errhint("The server log says why; it restarts by itself.")));
		}
		if (!interruptible && waited_ms >= 10000)
			return false;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 100L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		waited_ms += 100;
		if (interruptible)
			CHECK_FOR_INTERRUPTS();
	}
	pg_read_barrier();
	return true;
}

/* svc_settle finishes what an interrupted request left in the slot. */
static bool
svc_settle(GhSvcSlot *slot, bool interruptible)
{
	if (!svc_wait(slot, interruptible))
		return false;
	if (pg_atomic_read_u32(&slot->state) == SVC_DONE)
	{
		bool		orphan = my_build_pending && slot->op == SVC_OP_BUILD &&
			slot->status == GH_OK;

		pg_atomic_write_u32(&slot->state, SVC_IDLE);
		my_build_pending = false;
		if (orphan)
		{
			slot->op = SVC_OP_FREE;
			slot->table = slot->out_table;
			svc_post(slot);
			if (!svc_wait(slot, interruptible))
				return false;
			pg_atomic_write_u32(&slot->state, SVC_IDLE);
		}
	}
	return true;
}

/*
 * svc_quiet_request sends op (FREE of table, or BYE) from resource release
 * or exit: it raises nothing and does not wait for ever.  false if there is
 * no service or this process has no slot.
 */
static bool
svc_quiet_request(SvcOp op, uint32 table)
{
	GhSvcSlot  *slot;

	if (gh_svc == NULL || gh_svc->service_pid == 0 || MyProc == NULL)
		return false;
	slot = my_slot();
	if (slot->pid != MyProcPid || !svc_settle(slot, false))
		return false;
	slot->op = op;
	slot->table = table;
	svc_post(slot);
	if (svc_wait(slot, false))
		pg_atomic_write_u32(&slot->state, SVC_IDLE);
	return true;
}

/* svc_bye, at exit: the service frees this process's tables and mapping. */
static void
svc_bye(int code, Datum arg)
{
	if (svc_quiet_request(SVC_OP_BYE, 0))
	{
		my_slot()->pid = 0;
		my_slot()->client_latch = NULL;
	}
}

/* svc_exchange_for returns this backend's exchange area of at least bytes. */
static char *
svc_exchange_for(size_t bytes)
{
	if (my_xseg == NULL || my_xseg_size < bytes)
	{
		size_t		size = Max((size_t) 4 << 20, bytes);

		if (my_xseg)
			dsm_detach(my_xseg);
		my_xseg = NULL;
		my_xseg = dsm_create(size, 0);
		dsm_pin_mapping(my_xseg);
		my_xseg_size = size;
		my_seg_gen++;
	}
	return dsm_segment_address(my_xseg);
}

/* svc_call sends the request in the slot and returns its reply's status. */
static gh_status
svc_call(GhSvcSlot *slot, gh_error *err)
{
	slot->seg = my_xseg ? dsm_segment_handle(my_xseg) : DSM_HANDLE_INVALID;
	slot->seg_gen = my_seg_gen;
	my_build_pending = (slot->op == SVC_OP_BUILD);
	svc_post(slot);
	(void) svc_wait(slot, true);
	my_build_pending = false;
	pg_atomic_write_u32(&slot->state, SVC_IDLE);
	memset(err, 0, sizeof(*err));
	if (slot->status != GH_OK)
	{
		strlcpy(my_err_name, slot->err_name, sizeof(my_err_name));
		strlcpy(my_err_where, slot->err_where, sizeof(my_err_where));
		strlcpy(my_err_text, slot->err_text, sizeof(my_err_text));
		err->status = slot->status;
		err->cuda_name = my_err_name;
		err->where = my_err_where;
		err->cuda_string = my_err_text;
	}
	return slot->status;
}

/* svc_begin makes this backend's slot ready for a new request. */
static GhSvcSlot *
svc_begin(void)
{
	GhSvcSlot  *slot = my_slot();

	if (!my_bye_hook)
	{
		on_shmem_exit(svc_bye, (Datum) 0);
		my_bye_hook = true;
	}
	if (slot->pid != MyProcPid)
	{
		/* a slot left by an earlier process of this PGPROC is the service's to clear */
		pg_atomic_write_u32(&slot->state, SVC_IDLE);
		slot->pid = MyProcPid;
		slot->client_latch = &MyProc->procLatch;
	}
	else
		(void) svc_settle(slot, true);
	return slot;
}

/*
 * svc_make_table has the service make a table for this backend: BUILD from
 * hashes[0..n), or ATTACH (hashes NULL) a view of table src_id that a peer
 * built from the same n hashes.  On success fills *info; rows (n entries)
 * receives the row array when some hash repeats.
 */
static gh_status
svc_make_table(SvcOp op, uint32 src_id, const uint64 *hashes, uint32 n,
			   const gh_mm_params *params, uint32 probe_cap,
			   GhSvcTableInfo *info, uint32 *rows, gh_error *err)
{
	GhSvcSlot  *slot = svc_begin();
	char	   *x = svc_exchange_for(Max((size_t) n, 1) * sizeof(uint64));
	gh_status	st;
	dsm_segment *area;

	/*
	 * The table's probe area: the join writes each batch's hashes into it
	 * and reads the ranges from it, so that a probe copies nothing.  It
	 * belongs to the current resource owner (the query); the service maps
	 * it too, until the table is freed.
	 */
	probe_cap = Max(probe_cap, 1);
	area = dsm_create((Size) probe_cap * (sizeof(uint64) + 2 * sizeof(uint32)), 0);
	info->area = area;
	info->hashes = (uint64 *) dsm_segment_address(area);
	info->first = (uint32 *) (info->hashes + probe_cap);
	info->count = info->first + probe_cap;
	info->probe_cap = probe_cap;

	if (hashes)
		memcpy(x, hashes, (size_t) n * sizeof(uint64));
	slot->probe_seg = dsm_segment_handle(area);
	slot->probe_cap = probe_cap;
	slot->op = op;
	slot->table = src_id;
	slot->n = n;
	slot->load_factor = params->load_factor;
	slot->group_size = params->group_size;
	slot->scheme = (int) params->scheme;
	st = svc_call(slot, err);
	if (st != GH_OK)
	{
		dsm_detach(area);
		info->area = NULL;
		return st;
	}
	info->id = slot->out_table;
	info->ndistinct = slot->ndistinct;
	info->capacity = slot->capacity;
	info->mem_bytes = slot->mem_bytes;
	info->on_gpu = slot->on_gpu;
	if (slot->ndistinct != n && rows != NULL)
		memcpy(rows, x, (size_t) n * sizeof(uint32));
	/* a big inner side's exchange area is not kept for the small probes */
	if (my_xseg_size > ((size_t) 64 << 20))
	{
		dsm_detach(my_xseg);
		my_xseg = NULL;
		my_xseg_size = 0;
	}
	return GH_OK;
}

/* gh_svc_build builds the table of hashes[0..n) in the service. */
gh_status
gh_svc_build(const uint64 *hashes, uint32 n, const gh_mm_params *params,
			 uint32 probe_cap, GhSvcTableInfo *info, uint32 *rows, gh_error *err)
{
	return svc_make_table(SVC_OP_BUILD, 0, hashes, n, params, probe_cap, info,
						  rows, err);
}

/*
 * gh_svc_attach gives this backend its own view of table src_id, which a
 * peer of the same parallel join built from the same n hashes.
 */
gh_status
gh_svc_attach(uint32 src_id, uint32 n, const gh_mm_params *params,
			  uint32 probe_cap, GhSvcTableInfo *info, uint32 *rows, gh_error *err)
{
	return svc_make_table(SVC_OP_ATTACH, src_id, NULL, n, params, probe_cap,
						  info, rows, err);
}

/*
 * gh_svc_probe: the candidate ranges of the n hashes in table id's probe
 * area (info->hashes of gh_svc_build), written to info->first and ->count.
 */
gh_status
gh_svc_probe(uint32 id, uint32 n, gh_error *err)
{
	GhSvcSlot  *slot = svc_begin();

	slot->op = SVC_OP_PROBE;
	slot->table = id;
	slot->n = n;
	return svc_call(slot, err);
}

/*
 * gh_svc_free_table frees table id in the service.  It may run during
 * resource release: it does not wait for ever and raises nothing.
 */
void
gh_svc_free_table(uint32 id)
{
	(void) svc_quiet_request(SVC_OP_FREE, id);
}
