/*-------------------------------------------------------------------------
 * service_client.c
 *	  The backends' side of the GPU service: whether a join may use it, and
 *	  the requests that build, attach, probe and free a table there.
 *
 * A request takes the backend's slot (service.h), posts it and waits: awake
 * for a moment, since a probe is answered within a fraction of a
 * millisecond, then on the backend's latch.  A backend interrupted while it
 * waits (cancel, timeout) leaves the request to finish: its next request,
 * or its exit, first waits for DONE, and frees a table whose build it
 * abandoned.  A backend's exit frees all its tables (BYE).  What may run in
 * resource release or at exit (FREE, BYE) raises nothing and does not wait
 * for ever, for the service may be gone.
 *
 * hashtable.c is the only caller of the table requests: a GhTable held by
 * the service is still a GhTable to the join.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"

#include "gpuhash_join.h"		/* gpuhash.device_memory_limit */
#include "service.h"

/* how long a backend waits awake for an answer before it sleeps (svc_wait) */
#define SVC_SPIN_US 2000

static dsm_segment *my_xseg = NULL;
static size_t my_xseg_size = 0;
static uint32 my_seg_gen = 0;
static bool my_build_pending = false;	/* a BUILD we stopped waiting for */
static bool my_xarea_pending = false;	/* an XAREA we stopped waiting for */
static bool my_bye_hook = false;
static bool my_sent_other = false;	/* the last request sent another area */
/*
 * The probe area sent ahead (gh_svc_send_area) for this backend's next
 * table, until svc_make_table takes it or it is detached (the query ended).
 */
static dsm_segment *my_area = NULL;
static uint32 my_area_cap = 0;
static char my_err_name[64];
static char my_err_where[64];
static char my_err_text[128];

static GhSvcSlot *my_slot(void);
static void svc_post(GhSvcSlot *slot);
static bool svc_wait(GhSvcSlot *slot, bool interruptible);
static bool svc_settle(GhSvcSlot *slot, bool interruptible);
static bool svc_quiet_request(SvcOp op, uint32 table);
static void svc_bye(int code, Datum arg);
static char *svc_exchange_for(size_t bytes);
static gh_status svc_call(GhSvcSlot *slot, dsm_segment *xchg, gh_error *err);
static GhSvcSlot *svc_begin(void);
static gh_status svc_make_table(SvcOp op, uint32 src_id, dsm_segment *xchg,
								const uint64 *hashes, uint32 n,
								const gh_mm_params *params,
								uint32 probe_cap, GhSvcTableInfo *info,
								uint32 *rows, gh_error *err);

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

/* my_slot is this backend's request slot. */
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

		/* a claim nobody took: nothing was written into the area */
		if (my_xarea_pending && slot->op == SVC_OP_XAREA && slot->status == GH_OK)
			gh_svc_release_exchange(slot->xarea_token, true);
		my_xarea_pending = false;
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

/*
 * svc_call sends the request in the slot and returns its reply's status.
 * The request's exchange area is xchg if given (a segment of a shared
 * build), else this backend's own.
 */
static gh_status
svc_call(GhSvcSlot *slot, dsm_segment *xchg, gh_error *err)
{
	/* the service maps an area again when its generation changes */
	if (xchg != NULL || my_sent_other)
		my_seg_gen++;
	my_sent_other = (xchg != NULL);
	if (xchg == NULL)
		xchg = my_xseg;
	slot->seg = xchg ? dsm_segment_handle(xchg) : DSM_HANDLE_INVALID;
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

/* forget_area: the area sent ahead is detached (its query ended) */
static void
forget_area(dsm_segment *seg, Datum arg)
{
	if (seg == my_area)
	{
		my_area = NULL;
		my_area_cap = 0;
	}
}

/*
 * gh_svc_send_area creates the probe area of this backend's next table in
 * the service, of probe_cap rows, and sends it to the service without
 * waiting: the service maps and page-locks it while this backend goes on
 * (a participant's share of a parallel build), so that the table's BUILD
 * or ATTACH, which takes it, does not.  The area is the current resource
 * owner's, as svc_make_table's own would be.
 */
void
gh_svc_send_area(uint32 probe_cap)
{
	GhSvcSlot  *slot = svc_begin();
	dsm_segment *area;

	probe_cap = Max(probe_cap, 1);
	if (my_area != NULL)
		dsm_detach(my_area);	/* forget_area clears it */
	area = dsm_create(svc_probe_area_bytes(probe_cap), 0);
	on_dsm_detach(area, forget_area, (Datum) 0);
	my_area = area;
	my_area_cap = probe_cap;
	slot->op = SVC_OP_AREA;
	slot->probe_seg = dsm_segment_handle(area);
	slot->probe_cap = probe_cap;
	svc_post(slot);
	/* svc_begin settles the answer, before the next request */
}

/*
 * The service's exchange area as this backend claimed it (the claimant of a
 * shared build, gh_svc_claim_exchange): its mapping and the claim's token.
 */
static dsm_segment *my_xarea = NULL;
static uint64 my_xarea_token = 0;

/*
 * gh_svc_release_exchange gives back the claim token on the service's
 * exchange area, if it still holds it.  clean: no participant of the build
 * writes into the area any more (they all passed the phase that writes);
 * otherwise the service makes a new area for the next claim.
 */
void
gh_svc_release_exchange(uint64 token, bool clean)
{
	if (gh_svc == NULL || token == 0)
		return;
	SpinLockAcquire(&gh_svc->xarea_mutex);
	if (gh_svc->xarea_owner == token)
	{
		gh_svc->xarea_owner = 0;
		if (!clean)
			gh_svc->xarea_dirty = true;
	}
	SpinLockRelease(&gh_svc->xarea_mutex);
}

/*
 * release_on_detach: the claimant's mapping of the area is detached (its
 * query ended, or failed): a claim still held then ends dirty, since
 * nothing says that the participants stopped writing.
 */
static void
release_on_detach(dsm_segment *seg, Datum arg)
{
	if (seg != my_xarea)
		return;
	gh_svc_release_exchange(my_xarea_token, false);
	my_xarea = NULL;
	my_xarea_token = 0;
}

/*
 * gh_svc_claim_exchange claims the service's exchange area for the n hashes
 * of a parallel join's shared build and maps it (under the current resource
 * owner); *token is the claim.  NULL if the service refused (another build
 * holds it, or it has no room): the caller then makes an area of its own.
 * The builder gives the claim back once the table is built
 * (gh_svc_release_exchange), or the mapping's detach does.
 */
dsm_segment *
gh_svc_claim_exchange(uint32 n, uint64 *token)
{
	GhSvcSlot  *slot = svc_begin();
	dsm_segment *seg;

	*token = 0;
	/* a join of this process holds it (one build inside another's load) */
	if (my_xarea != NULL)
		return NULL;
	slot->op = SVC_OP_XAREA;
	slot->n = n;
	my_xarea_pending = true;
	svc_post(slot);
	(void) svc_wait(slot, true);
	my_xarea_pending = false;
	pg_atomic_write_u32(&slot->state, SVC_IDLE);
	if (slot->status != GH_OK || slot->xarea_token == 0)
		return NULL;
	seg = dsm_attach(slot->xarea);
	if (seg == NULL)
	{
		gh_svc_release_exchange(slot->xarea_token, true);
		return NULL;
	}
	my_xarea = seg;
	my_xarea_token = slot->xarea_token;
	on_dsm_detach(seg, release_on_detach, (Datum) 0);
	*token = my_xarea_token;
	return seg;
}

/*
 * The last BUILD or ATTACH of this backend, for DEBUG2 accounts: the ms of
 * the call as this backend waited for it, then the service's own ms
 * (GhSvcSlot.ms: mapping the exchange segment, the probe area, the table).
 */
static double my_last_ms[GH_SVC_TIMES];

StaticAssertDecl(GH_SVC_TIMES == 1 + SVC_MS_COUNT,
				 "gh_svc_last_times gives the call's time and the service's");

/* gh_svc_last_times copies my_last_ms into ms (GH_SVC_TIMES of them). */
void
gh_svc_last_times(double *ms)
{
	memcpy(ms, my_last_ms, sizeof(my_last_ms));
}

/*
 * svc_make_table has the service make a table for this backend: BUILD from
 * hashes[0..n), or ATTACH (hashes NULL) a view of table src_id that a peer
 * built from the same n hashes.  xchg: an exchange area of a BUILD that
 * holds the n hashes already (hashes is then not read), else this
 * backend's own is used.  On success fills *info; rows (n entries)
 * receives the row array when some hash repeats.
 */
static gh_status
svc_make_table(SvcOp op, uint32 src_id, dsm_segment *xchg,
			   const uint64 *hashes, uint32 n,
			   const gh_mm_params *params, uint32 probe_cap,
			   GhSvcTableInfo *info, uint32 *rows, gh_error *err)
{
	GhSvcSlot  *slot = svc_begin();
	/*
	 * A build sends its hashes; an attach only gets the row array back, and
	 * not even that when the caller knows the rows are the identity (rows
	 * NULL): then the exchange area this backend has, however small, does.
	 */
	size_t		xbytes = op == SVC_OP_BUILD ? Max((size_t) n, 1) * sizeof(uint64) :
		rows != NULL ? Max((size_t) n, 1) * sizeof(uint32) : 1;
	char	   *x;
	gh_status	st;
	dsm_segment *area;
	instr_time	start;

	if (xchg != NULL && dsm_segment_map_length(xchg) < xbytes)
		elog(ERROR, "GpuHashJoin: the shared build's exchange area is too small");
	x = xchg ? dsm_segment_address(xchg) : svc_exchange_for(xbytes);

	/*
	 * The table's probe area: the join writes each batch's hashes into it
	 * and reads the ranges from it, so that a probe copies nothing.  It
	 * belongs to the current resource owner (the query); the service maps
	 * it too, until the table is freed.
	 */
	probe_cap = Max(probe_cap, 1);
	if (my_area != NULL && my_area_cap == probe_cap)
	{
		area = my_area;			/* the service has it mapped already */
		my_area = NULL;
		my_area_cap = 0;
	}
	else
		area = dsm_create(svc_probe_area_bytes(probe_cap), 0);
	info->area = area;
	svc_probe_area_layout(dsm_segment_address(area), probe_cap,
						  &info->hashes, &info->first, &info->count);
	info->probe_cap = probe_cap;

	if (hashes && xchg == NULL)
	{
		/* the source too: a shared store's pages are mostly its peers' */
		gh_populate(hashes, (size_t) n * sizeof(uint64), false);
		gh_populate(x, (size_t) n * sizeof(uint64), true);
		memcpy(x, hashes, (size_t) n * sizeof(uint64));
	}
	slot->probe_seg = dsm_segment_handle(area);
	slot->probe_cap = probe_cap;
	slot->op = op;
	slot->table = src_id;
	slot->n = n;
	slot->load_factor = params->load_factor;
	slot->group_size = params->group_size;
	slot->scheme = (int) params->scheme;
	slot->mem_limit_mb = gpuhash_device_memory_limit;
	INSTR_TIME_SET_CURRENT(start);
	st = svc_call(slot, xchg, err);
	my_last_ms[0] = gh_ms_since(start);
	for (int k = 0; k < SVC_MS_COUNT; k++)
		my_last_ms[1 + k] = slot->ms[k];
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

/*
 * gh_svc_build builds the table of hashes[0..n) in the service, or of the n
 * hashes already in exchange area xchg (hashes is then not read).
 */
gh_status
gh_svc_build(const uint64 *hashes, uint32 n, const gh_mm_params *params,
			 uint32 probe_cap, GhSvcTableInfo *info, uint32 *rows,
			 dsm_segment *xchg, gh_error *err)
{
	return svc_make_table(SVC_OP_BUILD, 0, xchg, hashes, n, params, probe_cap,
						  info, rows, err);
}

/*
 * gh_svc_attach gives this backend its own view of table src_id, which a
 * peer of the same parallel join built from the same n hashes.
 */
gh_status
gh_svc_attach(uint32 src_id, uint32 n, const gh_mm_params *params,
			  uint32 probe_cap, GhSvcTableInfo *info, uint32 *rows, gh_error *err)
{
	return svc_make_table(SVC_OP_ATTACH, src_id, NULL, NULL, n, params,
						  probe_cap, info, rows, err);
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
	return svc_call(slot, NULL, err);
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
