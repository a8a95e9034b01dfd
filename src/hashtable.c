/*-------------------------------------------------------------------------
 * hashtable.c
 *	  The device hash table of one join, wherever it lives: this backend's
 *	  GPU, the CPU twin, or the GPU service.
 *
 * A thin layer over gh_mm_* (cuda/gpuhash_cuda.h) that owns the table's
 * memory, keeps a host view of the table's row array (the executor walks it
 * for every candidate), and reuses device buffers across probe batches.
 * This is the only code that knows where a table lives: it decides where a
 * join's table goes (gh_table_where: the GPU service, this backend's GPU,
 * or the CPU twin while the backend's CUDA context is made), the join asks
 * for it there (gh_table_build, or gh_table_build_service through
 * service_client.c), and then probes, describes and frees it the same way.
 * The join's other dealings with the service go through here too: whether
 * its table would go there (the planner's cost of CUDA contexts depends on
 * it), and a shared build's exchange and probe areas, prepared while the
 * participants still read the inner side.  One other file names the
 * service's tables: device.c, whose resource owner frees a service table as
 * it frees device memory (gh_track_service_table), so that an ERROR
 * anywhere releases it without this file's state.
 *
 * Building a table goes in this order: on the GPU if the table may go there
 * (gpuhash.device_memory_limit and gpuhash.server_device_memory allow it)
 * and the device memory for the table and the staging copy of its hashes
 * can be had; else on the CPU twin.  When the GPU has no room for a table
 * (a wrong estimate, or other work holding the memory or the budget), the
 * join finishes on the CPU twin with the same rows: slower, never wrong.
 * Then, when some hash repeats, the row array comes back to the host.  A
 * probe grows the table's device buffers to the batch, copies the hashes
 * in, and the candidate ranges out.
 *
 * The GPU service builds and probes its tables with the very same functions
 * (gh_table_place, gh_table_copy_rows, gh_table_probe_launch,
 * gh_table_release): a GhTableEnv says how each side allocates and what a
 * failure does.  A backend's memory goes through the device layer, under
 * the current resource owner, and a failure is an ERROR at once
 * (gpuhash_report), so nothing else here cleans up after one; the service
 * gets the failure back and answers its backend with it.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "portability/instr_time.h"
#include "storage/dsm.h"
#include "utils/memutils.h"

#include "gpuhash_join.h"		/* the join's settings */
#include "hashtable.h"

static void gh_check_interrupts(void);
static void table_params(gh_mm_params *params);
static GhTable *table_build(GhTarget target, const uint64 *hashes,
							 uint32 nrows, bool grouped);
static void table_add_time(GhTable *t, instr_time start);
static gh_status table_fail(const GhTableEnv *env, gh_status st,
							const gh_error *err, const char *action);
static gh_status place_gpu(GhTable *t, const uint64 *hashes, uint32 nrows,
						   const gh_mm_params *params, size_t bytes,
						   const GhTableEnv *env, void *stream, bool *no_room,
						   gh_error *err);
static void release_probe_buffers(GhTable *t, const GhTableEnv *env);
static gh_status backend_alloc(GhTarget target, size_t bytes, bool oom_ok,
							   void **ptr, gh_error *err);
static void backend_free(GhTarget target, void *ptr);
static bool backend_gpu_allows(uint32 nrows);
static void backend_no_gpu_room(uint32 nrows);

/* A backend's tables: the device layer's memory, failures are ERRORs. */
static const GhTableEnv backend_env = {
	.alloc = backend_alloc,
	.free = backend_free,
	.report = gpuhash_report,
	.gpu_allows = backend_gpu_allows,
	.no_gpu_room = backend_no_gpu_room
};

/* gh_check_interrupts lets a cancel stop a long build on the CPU twin. */
static void
gh_check_interrupts(void)
{
	CHECK_FOR_INTERRUPTS();
}

/* table_params sets params from the session's settings. */
static void
table_params(gh_mm_params *params)
{
	memset(params, 0, sizeof(*params));
	params->check_interrupts = gh_check_interrupts;
	params->load_factor = gpuhash_load_factor;
	params->group_size = gpuhash_group_size;
	params->scheme = (gh_probe_scheme) gpuhash_probe_scheme;
}

/* table_add_time adds the time since start to t's device time. */
static void
table_add_time(GhTable *t, instr_time start)
{
	t->device_ms += gh_ms_since(start);
}

/*
 * table_fail hands the failure st of action to env: a backend's raises the
 * ERROR here; the service's returns st to the caller.
 */
static gh_status
table_fail(const GhTableEnv *env, gh_status st, const gh_error *err,
		   const char *action)
{
	if (env->report != NULL)
		env->report(st, err, action);
	return st;
}

/*
 * gh_table_where decides where a join's table is built: in the GPU service
 * where a session may use it (parallel_aware: for a parallel join's
 * participants), else in this backend, on the CPU twin while the backend's
 * CUDA context is still in the making (the table moves to the GPU once it
 * is made), else on the device gpuhash.device names.  It may wait for the
 * context: callers time it as Context Wait.
 */
void
gh_table_where(bool parallel_aware, GhTableWhere *where)
{
	where->service = gh_svc_available(parallel_aware);
	where->gpu_later = false;
	if (where->service)
		where->target = gh_svc_target();
	else if (gpuhash_gpu_warming())
	{
		where->target = GH_TARGET_CPU;
		where->gpu_later = true;
	}
	else
		where->target = gpuhash_exec_target();
}

/*
 * gh_table_fits_device says whether a table of nrows inner rows, with the
 * staging copy of their hashes, stays within gpuhash.device_memory_limit
 * and gpuhash.server_device_memory.  The planner asks it before offering a
 * GPU path, the executor before building on the GPU, so both apply the
 * same limit.
 */
bool
gh_table_fits_device(double nrows)
{
	gh_mm_params params;

	table_params(&params);
	return gh_table_fits(nrows, &params, gpuhash_device_memory_limit);
}

/*
 * gh_table_fits says whether a table of nrows with params, and the staging
 * copy of its hashes, fits in limit_mb (0: no limit of its own) and in the
 * server's budget: a session's limit can only lower the server's.  The GPU
 * service asks it with the limit of the session it builds for.
 */
bool
gh_table_fits(double nrows, const gh_mm_params *params, int limit_mb)
{
	double		limit = (double) gh_budget_cap();
	uint64_t	capacity;

	if (limit_mb > 0 && (limit == 0 || (double) limit_mb * 1024 * 1024 < limit))
		limit = (double) limit_mb * 1024 * 1024;
	if (limit == 0)
		return true;
	if (nrows >= (double) GH_MAX_ROWS)
		return false;
	return (double) gh_mm_bytes((uint32) Max(nrows, 1), params, &capacity) +
		nrows * sizeof(uint64) <= limit;
}

/*
 * gh_table_place builds the multimap of hashes[0..nrows) (row i has index i)
 * into t on target, or on the CPU twin when target is the GPU and env finds
 * no room there; t->target says where it went.  A table on the CPU twin
 * gets its host view of the row array here; one on the GPU, whose row array
 * is not the identity, needs gh_table_copy_rows.
 */
gh_status
gh_table_place(GhTable *t, GhTarget target, const uint64 *hashes,
			   uint32 nrows, const gh_mm_params *params, const GhTableEnv *env,
			   void *stream, gh_error *err)
{
	uint64_t	capacity;
	size_t		bytes = gh_mm_bytes(nrows, params, &capacity);
	gh_status	st;

	t->target = target;
	if (target == GH_TARGET_GPU)
	{
		bool		no_room = (env->gpu_allows != NULL && !env->gpu_allows(nrows));

		if (!no_room)
		{
			st = place_gpu(t, hashes, nrows, params, bytes, env, stream,
						   &no_room, err);
			if (st != GH_OK || !no_room)
				return st;
		}
		if (env->no_gpu_room != NULL)
			env->no_gpu_room(nrows);
		memset(err, 0, sizeof(*err));
		t->target = GH_TARGET_CPU;
	}
	t->mem_bytes = bytes;
	st = env->alloc(GH_TARGET_CPU, bytes, false, &t->mem, err);
	if (st != GH_OK)
		return table_fail(env, st, err, "allocating device memory");
	st = gh_mm_build_cpu(&t->mm, t->mem, hashes, nrows, params, err);
	if (st != GH_OK)
		return table_fail(env, st, err, "building the hash table");
	t->rows = gh_mm_rows(&t->mm);
	t->rows_identity = (t->mm.ndistinct == nrows || params->grouped);
	return GH_OK;
}

/*
 * place_gpu builds the table on the GPU, waiting for it.  *no_room (and
 * nothing left allocated) if the device memory it needs is not available.
 */
static gh_status
place_gpu(GhTable *t, const uint64 *hashes, uint32 nrows,
		  const gh_mm_params *params, size_t bytes, const GhTableEnv *env,
		  void *stream, bool *no_room, gh_error *err)
{
	void	   *d_hashes = NULL;
	const char *action = "allocating device memory";
	gh_status	st;
	instr_time	start;

	INSTR_TIME_SET_CURRENT(start);
	memset(t->place_ms, 0, sizeof(t->place_ms));
	st = env->alloc(GH_TARGET_GPU, bytes, true, &t->mem, err);
	if (st == GH_OK)
	{
		st = env->alloc(GH_TARGET_GPU, Max(nrows, 1) * sizeof(uint64), true,
						&d_hashes, err);
		if (st != GH_OK)
		{
			env->free(GH_TARGET_GPU, t->mem);
			t->mem = NULL;
		}
	}
	if (st == GH_ERR_OOM)
	{
		*no_room = true;
		return GH_OK;
	}
	if (st != GH_OK)
		return table_fail(env, st, err, action);

	t->mem_bytes = bytes;
	action = "copying to the GPU";
	t->place_ms[0] = gh_ms_since(start);
	gh_mon_copied(true, (uint64) nrows * sizeof(uint64));
	st = gh_cuda_memcpy_htod(d_hashes, hashes, nrows * sizeof(uint64), stream, err);
	t->place_ms[1] = gh_ms_since(start) - t->place_ms[0];
	if (st == GH_OK)
	{
		action = "building the hash table";
		st = gh_mm_build_gpu(&t->mm, t->mem, d_hashes, nrows, params, stream, err);
	}
	if (st == GH_OK)
	{
		action = "waiting for the GPU";
		st = gh_cuda_stream_sync(stream, err);
	}
	t->place_ms[2] = gh_ms_since(start) - t->place_ms[0] - t->place_ms[1];
	if (st != GH_OK)
		(void) table_fail(env, st, err, action);
	env->free(GH_TARGET_GPU, d_hashes);
	/* every hash distinct: rows[] is the identity, nothing to copy back */
	t->rows_identity = (st == GH_OK &&
						 (t->mm.ndistinct == nrows || params->grouped));
	return st;
}

/*
 * gh_table_copy_rows copies t's row array (grouped by hash) to rows, host
 * memory of t->mm.nrows entries.
 */
gh_status
gh_table_copy_rows(const GhTable *t, uint32 *rows, const GhTableEnv *env,
				   void *stream, gh_error *err)
{
	size_t		bytes = (size_t) t->mm.nrows * sizeof(uint32);
	gh_status	st;

	if (t->target != GH_TARGET_GPU)
	{
		memcpy(rows, gh_mm_rows(&t->mm), bytes);
		return GH_OK;
	}
	gh_mon_copied(false, bytes);
	st = gh_cuda_memcpy_dtoh(rows, gh_mm_rows(&t->mm), bytes, stream, err);
	if (st != GH_OK)
		return table_fail(env, st, err, "copying from the GPU");
	st = gh_cuda_stream_sync(stream, err);
	if (st != GH_OK)
		return table_fail(env, st, err, "waiting for the GPU");
	return GH_OK;
}

/*
 * gh_table_probe_launch finds, for each of hashes[0..n), the range of t's
 * row array holding its candidates, written to first and count (host
 * memory).  A table on the CPU twin is probed at once; on the GPU the probe
 * is queued on stream (*launched), and the caller waits for the stream
 * before it reads the ranges.
 */
gh_status
gh_table_probe_launch(GhTable *t, const uint64 *hashes, uint32 n,
					  uint32 *first, uint32 *count, const GhTableEnv *env,
					  void *stream, bool *launched, gh_error *err)
{
	const char *action = "allocating device memory";
	gh_status	st = GH_OK;

	*launched = false;
	if (t->target != GH_TARGET_GPU)
	{
		st = gh_mm_probe_ranges_cpu(&t->mm, hashes, n, first, count, err);
		if (st != GH_OK)
			return table_fail(env, st, err, "probing the hash table");
		return GH_OK;
	}
	if (n > t->probe_cap)
	{
		release_probe_buffers(t, env);
		st = env->alloc(GH_TARGET_GPU, (size_t) n * sizeof(uint64), false,
						&t->d_probe, err);
		if (st == GH_OK)
			st = env->alloc(GH_TARGET_GPU, (size_t) n * sizeof(uint32), false,
							&t->d_first, err);
		if (st == GH_OK)
			st = env->alloc(GH_TARGET_GPU, (size_t) n * sizeof(uint32), false,
							&t->d_count, err);
		if (st == GH_OK)
			t->probe_cap = n;
	}
	if (st == GH_OK)
	{
		action = "copying to the GPU";
		gh_mon_copied(true, (uint64) n * sizeof(uint64));
		gh_mon_copied(false, (uint64) n * 2 * sizeof(uint32));
		st = gh_cuda_memcpy_htod(t->d_probe, hashes, (size_t) n * sizeof(uint64),
								 stream, err);
	}
	if (st == GH_OK)
	{
		action = "probing the hash table";
		st = gh_mm_probe_ranges_gpu(&t->mm, t->d_probe, n, t->d_first,
									t->d_count, stream, err);
	}
	if (st == GH_OK)
	{
		action = "copying from the GPU";
		st = gh_cuda_memcpy_dtoh(first, t->d_first, (size_t) n * sizeof(uint32),
								 stream, err);
	}
	if (st == GH_OK)
		st = gh_cuda_memcpy_dtoh(count, t->d_count, (size_t) n * sizeof(uint32),
								 stream, err);
	if (st != GH_OK)
	{
		gh_error	err2;

		(void) table_fail(env, st, err, action);
		/* what was queued before the failure still runs: wait for it */
		memset(&err2, 0, sizeof(err2));
		(void) gh_cuda_stream_sync(stream, &err2);
		return st;
	}
	*launched = true;
	return GH_OK;
}

/* release_probe_buffers frees t's device buffers for probe batches. */
static void
release_probe_buffers(GhTable *t, const GhTableEnv *env)
{
	if (t->d_probe)
		env->free(GH_TARGET_GPU, t->d_probe);
	if (t->d_first)
		env->free(GH_TARGET_GPU, t->d_first);
	if (t->d_count)
		env->free(GH_TARGET_GPU, t->d_count);
	t->d_probe = t->d_first = t->d_count = NULL;
	t->probe_cap = 0;
}

/*
 * gh_table_release frees t's probe buffers and, with_table, the table's
 * memory itself (a view shares it with other tables).
 */
void
gh_table_release(GhTable *t, const GhTableEnv *env, bool with_table)
{
	release_probe_buffers(t, env);
	if (with_table && t->mem)
		env->free(t->target, t->mem);
	t->mem = NULL;
}

/*
 * backend_alloc allocates through the device layer, under the current
 * resource owner.  Only oom_ok returns a failure (GH_ERR_OOM); every other
 * failure is an ERROR there.
 */
static gh_status
backend_alloc(GhTarget target, size_t bytes, bool oom_ok, void **ptr,
			  gh_error *err)
{
	*ptr = oom_ok ? gh_dev_try_alloc(target, bytes) : gh_dev_alloc(target, bytes);
	if (*ptr != NULL)
		return GH_OK;
	err->status = GH_ERR_OOM;
	err->where = "allocation";
	return GH_ERR_OOM;
}

/* backend_free frees an allocation of backend_alloc. */
static void
backend_free(GhTarget target, void *ptr)
{
	gh_dev_free(ptr);
}

/* backend_gpu_allows applies gpuhash.device_memory_limit. */
static bool
backend_gpu_allows(uint32 nrows)
{
	return gh_table_fits_device((double) nrows);
}

/* backend_no_gpu_room says why a join's table went to the CPU twin. */
static void
backend_no_gpu_room(uint32 nrows)
{
	ereport(DEBUG1,
			(errmsg("GpuHashJoin: no room on the GPU for %u inner rows; using the CPU twin",
					nrows)));
}

/*
 * gh_table_build builds the multimap of hashes[0..nrows) (row i has index i)
 * in this backend on target, or on the CPU twin when the GPU has no room
 * for it.
 */
GhTable *
gh_table_build(GhTarget target, const uint64 *hashes, uint32 nrows)
{
	return table_build(target, hashes, nrows, false);
}

/*
 * gh_table_build_grouped is gh_table_build for hashes whose equal values are
 * adjacent (see gh_mm_params.grouped): its row array is the identity, and
 * every table built from the same array, in any process, groups the rows
 * the same way.
 */
GhTable *
gh_table_build_grouped(GhTarget target, const uint64 *hashes, uint32 nrows)
{
	return table_build(target, hashes, nrows, true);
}

/* table_build is gh_table_build, of grouped hashes or not. */
static GhTable *
table_build(GhTarget target, const uint64 *hashes, uint32 nrows, bool grouped)
{
	GhTable    *t = palloc0(sizeof(GhTable));
	gh_mm_params params;
	gh_error	err;
	instr_time	start;

	table_params(&params);
	params.grouped = grouped;
	INSTR_TIME_SET_CURRENT(start);
	memset(&err, 0, sizeof(err));
	(void) gh_table_place(t, target, hashes, nrows, &params, &backend_env,
						  gh_stream(target), &err);
	if (t->target == GH_TARGET_GPU && !t->rows_identity)
	{
		t->rows_copy = palloc_extended(Max(nrows, 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
		(void) gh_table_copy_rows(t, t->rows_copy, &backend_env,
								  gh_stream(GH_TARGET_GPU), &err);
		t->rows = t->rows_copy;
	}
	table_add_time(t, start);
	return t;
}

/*
 * gh_table_build_service has the GPU service build the table: this backend
 * keeps only the table's shape and, when some hash repeats, a copy of its
 * row array.  With peer_table, a table that a participant of the same
 * parallel join built from the same hashes (then hashes is not read), the
 * service gives this backend a view of it instead of a copy; peer_identity
 * says that table's rows are the identity, so that the view needs no copy
 * of its row array (nor room in the exchange area for one).  for_peers:
 * the table is built for every participant of a parallel join (they take
 * views of it), which EXPLAIN says.  xchg: an exchange area that holds the
 * hashes already (a shared build's, GhjShared.xchg), sent as it is.
 */
GhTable *
gh_table_build_service(const uint64 *hashes, uint32 nrows, uint32 probe_cap,
					   uint32 peer_table, bool for_peers, bool peer_identity,
					   dsm_segment *xchg)
{
	GhTable    *t = palloc0(sizeof(GhTable));
	gh_mm_params params;
	GhSvcTableInfo info;
	gh_error	err;
	uint32	   *rows;
	bool		attached;
	instr_time	start;

	table_params(&params);
	INSTR_TIME_SET_CURRENT(start);
	rows = (peer_table != 0 && peer_identity) ? NULL :
		palloc_extended(Max(nrows, 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
	/* a peer's table that is gone already (its join ended) is built again */
	attached = peer_table != 0 &&
		gh_svc_attach(peer_table, nrows, &params, probe_cap, &info, rows, &err) == GH_OK;
	if (attached && rows == NULL && info.ndistinct != nrows)
		elog(ERROR, "GpuHashJoin: the GPU service's shared table has repeated hashes, its builder said none");
	if (!attached)
	{
		gh_status	st;

		if (rows == NULL)
			rows = palloc_extended(Max(nrows, 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
		st = gh_svc_build(hashes, nrows, &params, probe_cap, &info, rows, xchg,
						  &err);

		gpuhash_report(st, &err, "building the hash table in the GPU service");
	}
	t->shared_view = attached || for_peers;
	gh_track_service_table(info.id, info.mem_bytes);
	t->svc = info;
	t->target = info.on_gpu ? GH_TARGET_GPU : GH_TARGET_CPU;
	t->mem_bytes = info.mem_bytes;
	t->mm.capacity = info.capacity;
	t->mm.nrows = nrows;
	t->mm.ndistinct = info.ndistinct;
	t->mm.params = params;
	t->rows_identity = (info.ndistinct == nrows);
	if (t->rows_identity)
	{
		if (rows)
			pfree(rows);
	}
	else
	{
		t->rows_copy = rows;
		t->rows = rows;
	}
	table_add_time(t, start);
	return t;
}

/*
 * gh_table_service_available says whether gh_table_where would send a
 * join's table to the GPU service now (parallel_aware: for a parallel
 * join's participants): what the planner charges for CUDA contexts, and
 * whether a shared build prepares the service's side of its build, depend
 * on it.
 */
bool
gh_table_service_available(bool parallel_aware)
{
	return gh_svc_available(parallel_aware);
}

/*
 * gh_table_service_send_area has the GPU service, where a parallel join's
 * table goes there, map the probe area of the table this backend is about
 * to ask for (probe_cap rows) while the backend still works on its share of
 * a shared build, so that the table's build does not wait for it.
 */
void
gh_table_service_send_area(uint32 probe_cap)
{
	if (gh_svc_available(true))
		gh_svc_send_area(probe_cap);
}

/*
 * gh_table_claim_exchange claims the GPU service's exchange area for the
 * nrows hashes of a shared build's one service table
 * (gh_table_build_service's xchg), where gh_table_service_available says
 * the table goes there, which the participants then fill as they go; *token
 * is the claim, given back with gh_table_release_exchange.  NULL if the
 * service refused (another build holds the area, or it has no room): the
 * caller then makes an area of its own.
 */
dsm_segment *
gh_table_claim_exchange(uint32 nrows, uint64 *token)
{
	return gh_svc_claim_exchange(nrows, token);
}

/*
 * gh_table_release_exchange gives back the claim token (0: none) on the
 * service's exchange area once the table is built from it: every
 * participant has written its range, so the next build may take it.
 */
void
gh_table_release_exchange(uint64 token)
{
	gh_svc_release_exchange(token, true);
}

/*
 * gh_table_service_times copies the times of this backend's last build or
 * view of a service table into ms (GH_SVC_TIMES of them), for DEBUG2
 * accounts.
 */
void
gh_table_service_times(double *ms)
{
	gh_svc_last_times(ms);
}

/* gh_table_service_id is the GPU service's id of the table; 0: not there. */
uint32
gh_table_service_id(const GhTable *table)
{
	return table->svc.id;
}

/*
 * gh_table_shared says whether the table is one the GPU service holds for
 * every participant of a parallel join.
 */
bool
gh_table_shared(const GhTable *table)
{
	return table->shared_view;
}

/* gh_table_holder says, for EXPLAIN, who holds the table; NULL: this backend. */
const char *
gh_table_holder(const GhTable *table)
{
	if (table->svc.id == 0)
		return NULL;
	return table->shared_view ? "GPU service, one for all participants" : "GPU service";
}

/*
 * gh_table_probe_area gives the buffers of a table held by the GPU service,
 * which a join must use as its batch buffers (false for other tables): it
 * was built for batches of up to cap rows.
 */
bool
gh_table_probe_area(GhTable *t, uint32 cap, uint64 **hashes, uint32 **first,
					uint32 **count)
{
	if (t->svc.id == 0)
		return false;
	Assert(cap <= t->svc.probe_cap);
	*hashes = t->svc.hashes;
	*first = t->svc.first;
	*count = t->svc.count;
	return true;
}

/*
 * gh_table_move_to_gpu copies a table built on the CPU twin to the GPU,
 * whose context was not ready when the table was built; true if it is now
 * there.  The two share one layout and probe sequence (cuda/gh_layout.h),
 * so the copy answers every probe as the original did, ranges included: the
 * caller's rows, already in the table's group order, stay valid.  false
 * (the table stays on the CPU twin, nothing held) if the GPU has no room.
 */
bool
gh_table_move_to_gpu(GhTable *t)
{
	void	   *dmem;
	instr_time	start;

	Assert(t->target == GH_TARGET_CPU);
	if (!gh_table_fits_device((double) t->mm.nrows))
		return false;
	INSTR_TIME_SET_CURRENT(start);
	dmem = gh_dev_try_alloc(GH_TARGET_GPU, t->mem_bytes);
	if (dmem == NULL)
		return false;
	gh_copy_htod(GH_TARGET_GPU, dmem, t->mem, t->mem_bytes);
	gh_sync(GH_TARGET_GPU);
	gh_dev_free(t->mem);
	t->mem = dmem;
	t->mm.mem = dmem;
	t->rows = NULL;				/* it pointed into the CPU twin's table */
	t->target = GH_TARGET_GPU;
	table_add_time(t, start);
	return true;
}

/*
 * gh_table_probe finds, for each of hashes[0..n), the range of the row array
 * holding its candidates.  hashes, first and count are host buffers from
 * gh_host_alloc (pinned for the GPU), or the table's probe area when the
 * service holds it (gh_table_probe_area).
 */
void
gh_table_probe(GhTable *t, const uint64 *hashes, uint32 n, uint32 *first,
			   uint32 *count)
{
	gh_error	err;
	instr_time	start;

	INSTR_TIME_SET_CURRENT(start);
	memset(&err, 0, sizeof(err));
	if (t->svc.id != 0)
	{
		gh_status	st;

		Assert(n <= t->svc.probe_cap && hashes == t->svc.hashes &&
			   first == t->svc.first && count == t->svc.count);
		st = gh_svc_probe(t->svc.id, n, &err);
		gpuhash_report(st, &err, "probing the hash table in the GPU service");
	}
	else
	{
		bool		launched;

		(void) gh_table_probe_launch(t, hashes, n, first, count, &backend_env,
									 gh_stream(t->target), &launched, &err);
		if (launched)
			gh_sync(GH_TARGET_GPU);
	}
	table_add_time(t, start);
}

/*
 * gh_table_drop_rows forgets the host view of the row array once the caller
 * has reordered its own rows by it.  Probe ranges still index that order.
 */
void
gh_table_drop_rows(GhTable *t)
{
	if (t->rows_copy)
		pfree(t->rows_copy);
	t->rows_copy = NULL;
	t->rows = NULL;
}

/* gh_table_free gives back the table's memory (host copies go with their context). */
void
gh_table_free(GhTable *t)
{
	if (t->svc.id != 0)
	{
		gh_untrack_service_table(t->svc.id);
		dsm_detach(t->svc.area);
		memset(&t->svc, 0, sizeof(t->svc));
		return;
	}
	gh_table_release(t, &backend_env, true);
}
