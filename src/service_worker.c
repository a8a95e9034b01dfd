/*-------------------------------------------------------------------------
 * service_worker.c
 *	  The GPU service process: builds, attaches, probes and frees the hash
 *	  tables of the backends it serves, on the GPU or the CPU twin.
 *
 * gpuhash_service_main creates the service's CUDA context and streams,
 * answers with an error what backends asked of an earlier service process
 * (its tables are gone with it), and then loops: it serves every waiting
 * request (svc_serve_all), sleeps on its latch until a backend sets it, and
 * every second frees what backends that ended without a BYE left behind
 * (svc_reap).  The probes on the GPU that wait together run together, each
 * on a stream of its own, so that the copies of one overlap the kernels and
 * copies of the others; everything else is served in slot order.
 *
 * The service uses the GPU unless gpuhash.device = cpu in its configuration.
 * Finding no GPU, it stops for good under gpu_service = parallel and uses
 * the CPU twin under "on" (its LOG says why).  A table that does not fit on
 * the GPU is built on the CPU twin in the service: one larger than the
 * gpuhash.device_memory_limit of the session it is built for, or than what
 * the server-wide budget (gpuhash.server_device_memory) has room for now,
 * or than the GPU has free.  The service reserves every device allocation
 * from that budget, its CUDA context's share from its start, and gives it
 * back as it frees them (and at exit); it never waits for room.
 *
 * A parallel join's shared build sends its hashes through the service's own
 * exchange area, which the service makes, page-locks once and keeps from
 * one build to the next (svc_xarea_claim; one build holds it at a time),
 * and each participant sends its probe area ahead while the others still
 * work on the build (SVC_OP_AREA), so that the views of the shared table,
 * served one after another, map nothing.
 *
 * The service never raises an ERROR for a request: failures go back to the
 * backend in its slot (service.h).  Its tables live across transactions in
 * memory of its own (malloc and the CUDA runtime), not under resource
 * owners.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>
#include <unistd.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "hashtable.h"
#include "service.h"

/* One table the service holds for a backend, or a view of a peer's. */
typedef struct SvcTable
{
	bool		used;
	int			slot;			/* the owner's slot */
	int			owner_pid;
	uint32		id;
	GhTable		table;			/* where it lives, its memory and probe buffers */
	int		   *refs;			/* views sharing its memory (ATTACH); freed at 0 */
	/* the table's probe area (shared with its backend) */
	dsm_segment *area;
	uint32		area_cap;
	bool		area_pinned;	/* page-locked for the GPU's copies */
} SvcTable;

/* The service's mapping of one slot's exchange segment. */
typedef struct SvcMapping
{
	dsm_segment *seg;
	uint32		gen;
	int			pid;
} SvcMapping;

/*
 * A probe area a backend sent ahead (AREA), mapped and page-locked while the
 * backend still works on its share of a parallel build, for the BUILD or
 * ATTACH that names it next: the views of a shared table, which the service
 * serves one after another once the table is built, then take no time for
 * it.  One a slot; a newer AREA or the slot's next table replaces it.
 */
typedef struct SvcArea
{
	dsm_segment *seg;
	dsm_handle	handle;
	uint32		cap;
	bool		pinned;
	int			pid;
} SvcArea;

static SvcTable *svc_tables = NULL;
static int	svc_ntables = 0;
static uint32 svc_next_id = 1;
static SvcMapping *svc_maps = NULL;
static SvcArea *svc_areas = NULL;

/*
 * The service's exchange area (GhSvcShared.xarea_owner): its mapping, whether it
 * is page-locked, and when a claim last took it.  It is given back to the
 * system once no build claimed it for SVC_XAREA_IDLE_S seconds; areas past
 * SVC_XAREA_MAX bytes are not kept (those builds make their own).
 */
static dsm_segment *svc_xseg = NULL;
static bool svc_xseg_pinned = false;
static TimestampTz svc_xarea_used = 0;
#define SVC_XAREA_MIN ((Size) 16 << 20)
#define SVC_XAREA_MAX ((Size) 1 << 30)
#define SVC_XAREA_IDLE_S 60

/*
 * The service's device allocations and the budget each reserved, so that
 * svc_free gives back what svc_alloc took: a few per table.
 */
typedef struct SvcReservation
{
	void	   *ptr;
	uint64		bytes;
} SvcReservation;
static SvcReservation *svc_reservations = NULL;
static int	svc_nreservations = 0;
static int	svc_reservations_cap = 0;

/* the BUILD being served: its parameters and its session's limit */
static gh_mm_params svc_build_params;
static int	svc_build_limit_mb = 0;

/*
 * The service's streams: builds use the first; the probes waiting together
 * use one each, up to SVC_STREAMS at a time.
 */
#define SVC_STREAMS 16
static void *svc_streams[SVC_STREAMS];
#define svc_stream (svc_streams[0])

static gh_status svc_alloc(GhTarget target, size_t bytes, bool oom_ok,
						   void **ptr, gh_error *err);
static void svc_free(GhTarget target, void *ptr);
static bool svc_gpu_allows(uint32 nrows);
static bool svc_remember(void *ptr, uint64 bytes);
static void svc_set_error(GhSvcSlot *slot, gh_status st, const gh_error *err,
						  const char *where);
static void svc_fail(GhSvcSlot *slot, gh_status st, const char *where,
					 const char *what);
static SvcTable *svc_new_table(void);
static SvcTable *svc_find_any(uint32 id);
static SvcTable *svc_find(int slot, uint32 id);
static void svc_free_table(SvcTable *t);
static void svc_forget(int i);
static char *svc_exchange(int i, GhSvcSlot *slot, Size *len);
static void svc_xarea_drop(void);
static void svc_xarea_claim(GhSvcSlot *slot);
static void svc_xarea_idle(void);
static bool svc_pin(dsm_segment *seg);
static void svc_unmap(dsm_segment *seg, bool pinned);
static bool svc_map_area(GhSvcSlot *slot, dsm_segment **seg, bool *pinned);
static void svc_area_drop(int i);
static bool svc_attach_area(int i, GhSvcSlot *slot, SvcTable *t);
static void svc_build(int i, GhSvcSlot *slot, char *x, Size xlen);
static void svc_attach(int i, GhSvcSlot *slot, char *x, Size xlen);
static void svc_register(int i, GhSvcSlot *slot, SvcTable *t);
static bool svc_probe_launch(int i, GhSvcSlot *slot, void *stream);
static void svc_probes_finish(const int *launched, int n);
static void svc_take(GhSvcSlot *slot);
static void svc_reply(GhSvcSlot *slot);
static void svc_serve(int i);
static bool svc_serve_all(void);
static void svc_reap(void);
static void svc_shutdown(int code, Datum arg);
static void svc_open_device(void);
static void svc_refuse_stale(void);
static void svc_publish_state(void);

/*
 * The service's tables (hashtable.h): memory of its own, kept across
 * transactions.  No report: a failure goes back to the backend.  A table
 * goes to the CPU twin when the session's gpuhash.device_memory_limit or
 * the server's budget is too small for it, or the GPU is out of memory.
 */
static const GhTableEnv svc_env = {
	.alloc = svc_alloc,
	.free = svc_free,
	.gpu_allows = svc_gpu_allows,
};

/*
 * svc_set_error answers the request in slot with the failure st: err's
 * names, or where when err names no call.  The backend rebuilds the
 * gh_error from them (svc_call) and reports it with gpuhash_report.
 */
static void
svc_set_error(GhSvcSlot *slot, gh_status st, const gh_error *err, const char *where)
{
	slot->status = st;
	strlcpy(slot->err_name, err && err->cuda_name ? err->cuda_name : "", sizeof(slot->err_name));
	strlcpy(slot->err_where, err && err->where ? err->where : where, sizeof(slot->err_where));
	strlcpy(slot->err_text, err && err->cuda_string ? err->cuda_string : "", sizeof(slot->err_text));

	/* the last failure, for gpuhash_stat_service */
	SpinLockAcquire(&gh_svc->state_mutex);
	snprintf(gh_svc->last_error, sizeof(gh_svc->last_error), "%s failed with %s%s%s",
			 slot->err_where, slot->err_name[0] ? slot->err_name : "an error",
			 slot->err_text[0] ? ": " : "", slot->err_text);
	gh_svc->last_error_at = GetCurrentTimestamp();
	SpinLockRelease(&gh_svc->state_mutex);
}

/*
 * svc_publish_state counts, for gpuhash_stat_service, the tables the
 * service holds and their memory, each table's memory once however many
 * views share it.
 */
static void
svc_publish_state(void)
{
	uint32		n = 0;
	uint64		bytes = 0;

	for (int i = 0; i < svc_ntables; i++)
	{
		bool		seen = false;

		if (!svc_tables[i].used)
			continue;
		n++;
		for (int k = 0; k < i && !seen; k++)
			seen = svc_tables[k].used && svc_tables[k].table.mem != NULL &&
				svc_tables[k].table.mem == svc_tables[i].table.mem;
		if (!seen)
			bytes += svc_tables[i].table.mem_bytes;
	}
	pg_atomic_write_u32(&gh_svc->tables_held, n);
	pg_atomic_write_u64(&gh_svc->table_bytes, bytes);
}

/*
 * svc_free_table frees table t: its probe buffers and area, and its memory
 * once no view shares it.
 */
static void
svc_free_table(SvcTable *t)
{
	bool		last = (t->refs == NULL || --(*t->refs) == 0);

	if (last && t->refs)
		free(t->refs);
	gh_table_release(&t->table, &svc_env, last);
	svc_unmap(t->area, t->area_pinned);
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

/* svc_new_table returns an unused table entry, making room if need be. */
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
	svc_area_drop(i);
}

/*
 * svc_exchange maps slot i's exchange segment, or finds that it is the
 * service's own area; NULL if it cannot.  *len: its length.
 */
static char *
svc_exchange(int i, GhSvcSlot *slot, Size *len)
{
	SvcMapping *m = &svc_maps[i];

	if (svc_xseg != NULL && slot->seg == dsm_segment_handle(svc_xseg))
	{
		*len = dsm_segment_map_length(svc_xseg);
		return dsm_segment_address(svc_xseg);
	}

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
	*len = dsm_segment_map_length(m->seg);
	return dsm_segment_address(m->seg);
}

/* svc_xarea_drop gives the service's exchange area back, claimed or not. */
static void
svc_xarea_drop(void)
{
	SpinLockAcquire(&gh_svc->xarea_mutex);
	gh_svc->xarea_owner = 0;
	gh_svc->xarea_dirty = false;
	SpinLockRelease(&gh_svc->xarea_mutex);
	svc_unmap(svc_xseg, svc_xseg_pinned);	/* a peer still attached keeps it a while */
	svc_xseg = NULL;
	svc_xseg_pinned = false;
}

/*
 * svc_xarea_claim gives the XAREA request in slot the service's exchange
 * area for slot->n hashes, made (or made again, larger or clean) if need
 * be: its handle and the claim's token, 0 if another build holds it, it
 * would pass SVC_XAREA_MAX, or the system has no room for it (the backend
 * then makes an area of its own).
 */
static void
svc_xarea_claim(GhSvcSlot *slot)
{
	Size		need = Max((Size) slot->n, 1) * sizeof(uint64);
	bool		busy;
	bool		dirty;

	slot->xarea_token = 0;
	slot->xarea = DSM_HANDLE_INVALID;
	if (need > SVC_XAREA_MAX)
		return;
	SpinLockAcquire(&gh_svc->xarea_mutex);
	busy = (gh_svc->xarea_owner != 0);
	dirty = gh_svc->xarea_dirty;
	SpinLockRelease(&gh_svc->xarea_mutex);
	if (busy)
		return;
	if (svc_xseg != NULL && (dirty || dsm_segment_map_length(svc_xseg) < need))
		svc_xarea_drop();
	if (svc_xseg == NULL)
	{
		/* a quarter more, for the next build's estimate */
		Size		size = Min(Max(need + need / 4, SVC_XAREA_MIN), SVC_XAREA_MAX);
		MemoryContext cxt = CurrentMemoryContext;

		/* never an ERROR for a request: a full /dev/shm refuses the claim */
		PG_TRY();
		{
			svc_xseg = dsm_create(size, DSM_CREATE_NULL_IF_MAXSEGMENTS);
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(cxt);
			EmitErrorReport();
			FlushErrorState();
			LWLockReleaseAll();
			svc_xseg = NULL;
		}
		PG_END_TRY();
		if (svc_xseg == NULL)
			return;
		dsm_pin_mapping(svc_xseg);
		svc_xseg_pinned = svc_pin(svc_xseg);
	}
	SpinLockAcquire(&gh_svc->xarea_mutex);
	gh_svc->xarea_dirty = false;
	gh_svc->xarea_owner = ++gh_svc->xarea_tokens;
	slot->xarea_token = gh_svc->xarea_owner;
	SpinLockRelease(&gh_svc->xarea_mutex);
	slot->xarea = dsm_segment_handle(svc_xseg);
	svc_xarea_used = GetCurrentTimestamp();
}

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

/* svc_gpu_allows applies the limits of the session whose BUILD is served. */
static bool
svc_gpu_allows(uint32 nrows)
{
	return gh_table_fits((double) nrows, &svc_build_params, svc_build_limit_mb);
}

/* svc_remember notes that ptr holds bytes of the budget; false if it cannot. */
static bool
svc_remember(void *ptr, uint64 bytes)
{
	if (svc_nreservations == svc_reservations_cap)
	{
		int			cap = svc_reservations_cap * 2 + 16;
		SvcReservation *r = realloc(svc_reservations, sizeof(SvcReservation) * cap);

		if (r == NULL)
			return false;
		svc_reservations = r;
		svc_reservations_cap = cap;
	}
	svc_reservations[svc_nreservations].ptr = ptr;
	svc_reservations[svc_nreservations].bytes = bytes;
	svc_nreservations++;
	return true;
}

/*
 * svc_alloc allocates the service's own memory: device memory for the GPU,
 * reserved from the server's budget first, or malloc'd for the CPU twin
 * (reserved only under gpuhash.budget_cpu_twin; see device_budget.c).  No
 * room, in the budget or on the device, is GH_ERR_OOM either way (the
 * caller's oom_ok only decides what it does).
 */
static gh_status
svc_alloc(GhTarget target, size_t bytes, bool oom_ok, void **ptr,
		  gh_error *err)
{
	bool		counted = (target == GH_TARGET_GPU || gpuhash_budget_cpu_twin);
	uint64		reserved = 0;
	gh_status	st = GH_OK;

	*ptr = NULL;
	if (counted && gh_budget_reserve(bytes, false))
		reserved = bytes;
	else if (target == GH_TARGET_GPU)
	{
		err->status = GH_ERR_OOM;
		err->where = "the GPU service";
		err->cuda_name = "no room in gpuhash.server_device_memory";
		return GH_ERR_OOM;
	}
	if (target == GH_TARGET_GPU)
		st = gh_cuda_malloc(ptr, bytes, err);
	else
	{
		*ptr = malloc(bytes);
		if (*ptr == NULL)
		{
			err->status = st = GH_ERR_OOM;
			err->where = "malloc";
			err->cuda_name = "ENOMEM";
		}
	}
	if (st == GH_OK && reserved > 0 && !svc_remember(*ptr, reserved))
	{
		svc_free(target, *ptr);
		*ptr = NULL;
		err->status = st = GH_ERR_OOM;
		err->where = "malloc";
		err->cuda_name = "ENOMEM";
	}
	if (st != GH_OK)
		gh_budget_release(reserved);
	return st;
}

/* svc_free frees memory of svc_alloc and gives back its reservation. */
static void
svc_free(GhTarget target, void *ptr)
{
	gh_error	err;

	if (target == GH_TARGET_GPU)
		(void) gh_cuda_free(ptr, &err);
	else
		free(ptr);
	for (int i = 0; i < svc_nreservations; i++)
		if (svc_reservations[i].ptr == ptr)
		{
			gh_budget_release(svc_reservations[i].bytes);
			svc_reservations[i] = svc_reservations[--svc_nreservations];
			break;
		}
}

/*
 * svc_pin page-locks the service's mapping of seg on the GPU, so that the
 * GPU's copies from and to it run at full speed; false if it is not (on the
 * CPU twin, or the driver refused: the copies are then slower).
 */
static bool
svc_pin(dsm_segment *seg)
{
	gh_error	err;

	memset(&err, 0, sizeof(err));
	return gh_svc->on_gpu &&
		gh_cuda_host_register(dsm_segment_address(seg),
							  dsm_segment_map_length(seg), &err) == GH_OK;
}

/* svc_unmap undoes svc_pin (if pinned) and detaches seg, if any. */
static void
svc_unmap(dsm_segment *seg, bool pinned)
{
	gh_error	err;

	if (seg == NULL)
		return;
	if (pinned)
		(void) gh_cuda_host_unregister(dsm_segment_address(seg), &err);
	dsm_detach(seg);
}

/*
 * svc_map_area maps the probe area the request in slot names (*seg) and
 * page-locks it if it can (*pinned).  False, the request answered, if it
 * is gone.
 */
static bool
svc_map_area(GhSvcSlot *slot, dsm_segment **seg, bool *pinned)
{
	*pinned = false;
	*seg = dsm_attach(slot->probe_seg);
	if (*seg == NULL)
	{
		svc_fail(slot, GH_ERR_INVALID, "dsm_attach", "no probe area");
		return false;
	}
	*pinned = svc_pin(*seg);
	return true;
}

/* svc_area_drop unmaps the probe area slot i sent ahead, if any. */
static void
svc_area_drop(int i)
{
	SvcArea    *a = &svc_areas[i];

	svc_unmap(a->seg, a->pinned);
	memset(a, 0, sizeof(*a));
}

/*
 * svc_attach_area gives t the probe area of the request in slot i: the one
 * the slot's backend sent ahead if it is that one, else mapped now.
 */
static bool
svc_attach_area(int i, GhSvcSlot *slot, SvcTable *t)
{
	SvcArea    *a = &svc_areas[i];
	instr_time	start;

	INSTR_TIME_SET_CURRENT(start);
	if (a->seg != NULL && a->handle == slot->probe_seg && a->pid == slot->pid &&
		a->cap == slot->probe_cap)
	{
		t->area = a->seg;
		t->area_pinned = a->pinned;
		memset(a, 0, sizeof(*a));	/* t's now */
	}
	else
	{
		svc_area_drop(i);
		if (!svc_map_area(slot, &t->area, &t->area_pinned))
			return false;
	}
	t->area_cap = slot->probe_cap;
	slot->ms[SVC_MS_AREA] = (float) gh_ms_since(start);
	return true;
}

/*
 * svc_attach gives slot i a view of table slot->table, built for a peer of
 * the same parallel join from the same hashes: the view shares its memory
 * and has a probe area of its own.  The row array goes to x when some hash
 * repeats.
 */
static void
svc_attach(int i, GhSvcSlot *slot, char *x, Size xlen)
{
	SvcTable   *src = svc_find_any(slot->table);
	SvcTable   *t;
	gh_error	err;
	gh_status	st;

	memset(&err, 0, sizeof(err));
	if (src == NULL || src->table.mm.nrows != slot->n)
	{
		svc_fail(slot, GH_ERR_INVALID, "the GPU service", "an unknown table");
		return;
	}
	if (!src->table.rows_identity)
	{
		if (xlen < (Size) slot->n * sizeof(uint32))
		{
			svc_fail(slot, GH_ERR_INVALID, "the GPU service", "no room for the row array");
			return;
		}
		st = gh_table_copy_rows(&src->table, (uint32 *) x, &svc_env, svc_stream, &err);
		if (st != GH_OK)
		{
			svc_set_error(slot, st, &err, "attach");
			return;
		}
	}
	t = svc_new_table();
	src = svc_find_any(slot->table);	/* svc_new_table may have moved it */
	if (!svc_attach_area(i, slot, t))
		return;
	t->table.target = src->table.target;
	t->table.mm = src->table.mm;
	t->table.mem = src->table.mem;
	t->table.mem_bytes = src->table.mem_bytes;
	t->table.rows_identity = src->table.rows_identity;
	t->refs = src->refs;
	(*t->refs)++;
	svc_register(i, slot, t);
}

/*
 * svc_build builds the table of the n hashes in slot i's exchange segment x
 * and writes its row array back to x when some hash repeats.
 */
static void
svc_build(int i, GhSvcSlot *slot, char *x, Size xlen)
{
	gh_mm_params params;
	SvcTable   *t = svc_new_table();
	gh_error	err;
	gh_status	st;
	instr_time	start;

	if (xlen < (Size) slot->n * sizeof(uint64))
	{
		/* t stays unused */
		svc_fail(slot, GH_ERR_INVALID, "the GPU service", "fewer hashes than rows");
		return;
	}
	if (!svc_attach_area(i, slot, t))
		return;

	memset(&params, 0, sizeof(params));
	params.load_factor = slot->load_factor;
	params.group_size = slot->group_size;
	params.scheme = (gh_probe_scheme) slot->scheme;
	svc_build_params = params;
	svc_build_limit_mb = slot->mem_limit_mb;
	memset(&err, 0, sizeof(err));
	INSTR_TIME_SET_CURRENT(start);
	st = gh_table_place(&t->table, gh_svc->on_gpu ? GH_TARGET_GPU : GH_TARGET_CPU,
						(const uint64 *) x, slot->n, &params, &svc_env,
						svc_stream, &err);
	if (st == GH_OK && !t->table.rows_identity)
		st = gh_table_copy_rows(&t->table, (uint32 *) x, &svc_env, svc_stream,
								&err);
	slot->ms[SVC_MS_TABLE] = (float) gh_ms_since(start);
	for (int k = 0; k < 3; k++)
		slot->ms[SVC_MS_ALLOC + k] = (float) t->table.place_ms[k];
	if (st == GH_OK && (t->refs = malloc(sizeof(int))) == NULL)
	{
		st = GH_ERR_OOM;
		err.where = "malloc";
		err.cuda_name = "ENOMEM";
	}
	if (st != GH_OK)
	{
		svc_set_error(slot, st, &err, "building the table");
		svc_free_table(t);
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
	slot->ndistinct = t->table.mm.ndistinct;
	slot->capacity = t->table.mm.capacity;
	slot->mem_bytes = t->table.mem_bytes;
	slot->on_gpu = (t->table.target == GH_TARGET_GPU);
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
	uint64	   *hashes;
	uint32	   *first;
	uint32	   *count;
	gh_error	err;
	gh_status	st;
	bool		launched;

	if (t == NULL || slot->n > t->area_cap)
	{
		svc_fail(slot, GH_ERR_INVALID, "the GPU service", "an unknown table");
		return false;
	}
	svc_probe_area_layout(dsm_segment_address(t->area), t->area_cap,
						  &hashes, &first, &count);
	memset(&err, 0, sizeof(err));
	st = gh_table_probe_launch(&t->table, hashes, slot->n, first, count,
							   &svc_env, stream, &launched, &err);
	if (st != GH_OK)
		svc_set_error(slot, st, &err, "probing");
	return launched;
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
	memset(slot->ms, 0, sizeof(slot->ms));
	slot->err_name[0] = slot->err_where[0] = slot->err_text[0] = '\0';
}

/* svc_serve serves the request waiting in slot i, a probe's aside. */
static void
svc_serve(int i)
{
	GhSvcSlot  *slot = &gh_svc->slots[i];
	char	   *x = NULL;
	Size		xlen = 0;

	svc_take(slot);
	switch (slot->op)
	{
		case SVC_OP_PROBE:
			/* svc_serve_all's */
			Assert(false);
			break;
		case SVC_OP_BUILD:
		case SVC_OP_ATTACH:
			{
				instr_time	start;

				INSTR_TIME_SET_CURRENT(start);
				x = svc_exchange(i, slot, &xlen);
				slot->ms[SVC_MS_MAP] = (float) gh_ms_since(start);
			}
			if (x == NULL)
			{
				svc_fail(slot, GH_ERR_INVALID, "dsm_attach", "no exchange segment");
				break;
			}
			if (slot->op == SVC_OP_BUILD)
				svc_build(i, slot, x, xlen);
			else
				svc_attach(i, slot, x, xlen);
			break;
		case SVC_OP_XAREA:
			svc_xarea_claim(slot);
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
		case SVC_OP_AREA:
			{
				SvcArea    *a = &svc_areas[i];

				svc_area_drop(i);
				if (svc_map_area(slot, &a->seg, &a->pinned))
				{
					a->handle = slot->probe_seg;
					a->cap = slot->probe_cap;
					a->pid = slot->pid;
				}
			}
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

		if (svc_areas[i].seg != NULL && kill(svc_areas[i].pid, 0) != 0 &&
			errno == ESRCH)
			svc_area_drop(i);

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

/*
 * svc_xarea_idle gives the service's exchange area back once no build has
 * claimed it for SVC_XAREA_IDLE_S seconds.
 */
static void
svc_xarea_idle(void)
{
	bool		owned;

	if (svc_xseg == NULL ||
		!TimestampDifferenceExceeds(svc_xarea_used, GetCurrentTimestamp(),
									SVC_XAREA_IDLE_S * 1000))
		return;
	SpinLockAcquire(&gh_svc->xarea_mutex);
	owned = (gh_svc->xarea_owner != 0);
	SpinLockRelease(&gh_svc->xarea_mutex);
	if (!owned)
		svc_xarea_drop();
}

/* svc_shutdown tells the backends, at exit, that no service is serving. */
static void
svc_shutdown(int code, Datum arg)
{
	if (gh_svc)
	{
		gh_svc->service_pid = 0;
		gh_svc->service_latch = NULL;
		pg_atomic_write_u32(&gh_svc->tables_held, 0);
		pg_atomic_write_u64(&gh_svc->table_bytes, 0);
	}
}

/*
 * svc_open_device creates the service's CUDA context and streams unless
 * gpuhash.device = cpu, and says where the service builds tables.  With no
 * usable GPU the service stops for good under gpu_service = parallel.
 */
static void
svc_open_device(void)
{
	gh_error	err;
	gh_status	st;
	const char *where;
	const char *name;

	gh_svc->on_gpu = false;
	if (gpuhash_device == GPUHASH_DEVICE_CPU)
		return;
	memset(&err, 0, sizeof(err));
	st = gh_cuda_context_init(gpuhash_cuda_device, &err);
	for (int k = 0; st == GH_OK && k < SVC_STREAMS; k++)
		st = gh_cuda_stream_create(&svc_streams[k], &err);
	if (st == GH_OK)
	{
		/* the context is made: counted whatever the budget says */
		gh_budget_count(GH_CONTEXT_BUDGET_BYTES);
		gh_svc->on_gpu = true;
		return;
	}
	where = err.where ? err.where : "?";
	name = err.cuda_name ? err.cuda_name : "?";
	if (gpuhash_gpu_service == GPUHASH_SERVICE_PARALLEL)
	{
		/*
		 * The default setting on a host without a GPU: nothing would use the
		 * service (device = auto plans no GPU join there).  An exit with code
		 * 0 is final: the postmaster does not start it again, and its worker
		 * slot is free for parallel queries.
		 */
		ereport(LOG,
				(errmsg("gpuhash GPU service found no usable GPU and stops"),
				 err.status == GH_ERR_NO_DEVICE ? gh_errdetail_no_gpu(&err) :
				 errdetail("%s failed with %s.", where, name)));
		gh_svc->stopped = true;
		proc_exit(0);
	}
	ereport(LOG,
			(errmsg("gpuhash GPU service found no usable GPU; it builds tables on the CPU twin"),
			 err.status == GH_ERR_NO_DEVICE ? gh_errdetail_no_gpu(&err) :
			 errdetail("%s failed with %s.", where, name)));
}

/*
 * svc_refuse_stale answers with an error the requests left by backends that
 * waited on an earlier service process (it stopped or failed), instead of
 * serving them: their tables and segments are gone with that process.
 */
static void
svc_refuse_stale(void)
{
	for (int i = 0; i < gh_svc->nslots; i++)
	{
		GhSvcSlot  *slot = &gh_svc->slots[i];

		if (pg_atomic_read_u32(&slot->state) != SVC_REQUEST)
			continue;
		svc_fail(slot, GH_ERR_CUDA, "the GPU service", "a restart of the service");
		svc_reply(slot);
	}
}

/* gpuhash_service_main is the service process (see the opening comment). */
void
gpuhash_service_main(Datum arg)
{
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
	svc_areas = calloc(gh_svc->nslots, sizeof(SvcArea));
	if (svc_maps == NULL || svc_areas == NULL)
		elog(FATAL, "gpuhash GPU service: out of memory");

	svc_open_device();
	/* an earlier service process's exchange area went with it */
	svc_xarea_drop();
	on_shmem_exit(svc_shutdown, (Datum) 0);
	svc_refuse_stale();
	gh_svc->service_latch = MyLatch;
	pg_write_barrier();
	gh_svc->service_pid = MyProcPid;
	gh_svc->starts++;
	gh_svc->started_at = GetCurrentTimestamp();
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
		{
			svc_publish_state();
			continue;
		}
		rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					   1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		if (rc & WL_TIMEOUT)
		{
			svc_reap();
			svc_xarea_idle();
			svc_publish_state();
		}
	}
}

