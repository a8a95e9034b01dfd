/*-------------------------------------------------------------------------
 * hashtable.c
 *	  The static multimap of one join, on the GPU or the CPU twin.
 *
 * A thin layer over gh_mm_* (cuda/gpuhash_cuda.h) that owns the table's
 * memory through the device layer, keeps a host view of the table's row
 * array (the executor walks it for every candidate), and reuses device
 * buffers across probe batches.  When the GPU has no room for a table (a
 * wrong estimate, or other work holding the memory), the join finishes on
 * the CPU twin with the same rows: slower, never wrong.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "portability/instr_time.h"
#include "storage/dsm.h"
#include "utils/memutils.h"

#include "gpuhash_join.h"

/* gh_check_interrupts lets a cancel stop a long build on the CPU twin. */
static void
gh_check_interrupts(void)
{
	CHECK_FOR_INTERRUPTS();
}

static void
table_params(gh_mm_params *params)
{
	memset(params, 0, sizeof(*params));
	params->check_interrupts = gh_check_interrupts;
	params->load_factor = gpuhash_load_factor;
	params->group_size = gpuhash_group_size;
	params->scheme = (gh_probe_scheme) gpuhash_probe_scheme;
}

/*
 * gh_table_fits_device says whether a table of nrows inner rows, with the
 * staging copy of their hashes, stays within gpuhash.device_memory_limit.
 * The planner asks it before offering a GPU path, the executor before
 * building on the GPU, so both apply the same limit.
 */
bool
gh_table_fits_device(double nrows)
{
	gh_mm_params params;
	uint64_t	capacity;

	if (gpuhash_device_memory_limit <= 0)
		return true;
	if (nrows >= (double) GH_MAX_ROWS)
		return false;
	table_params(&params);
	return (double) gh_mm_bytes((uint32) Max(nrows, 1), &params, &capacity) +
		nrows * sizeof(uint64) <=
		(double) gpuhash_device_memory_limit * 1024 * 1024;
}

static void
check(gh_status st, gh_error *err, const char *action)
{
	if (st != GH_OK)
		gpuhash_report(st, err, action);
}

/*
 * build_gpu tries to build the table on the GPU; false if the device memory
 * it needs is not available (then nothing is left allocated).
 */
static bool
build_gpu(GhTable *t, const uint64 *hashes, uint32 nrows, gh_mm_params *params)
{
	uint64_t	capacity;
	size_t		bytes = gh_mm_bytes(nrows, params, &capacity);
	void	   *d_hashes;
	gh_error	err;

	if (!gh_table_fits_device((double) nrows))
		return false;
	t->mem = gh_dev_try_alloc(GH_TARGET_GPU, bytes);
	if (t->mem == NULL)
		return false;
	d_hashes = gh_dev_try_alloc(GH_TARGET_GPU, Max(nrows, 1) * sizeof(uint64));
	if (d_hashes == NULL)
	{
		gh_dev_free(t->mem);
		t->mem = NULL;
		return false;
	}
	t->mem_bytes = bytes;
	gh_copy_htod(GH_TARGET_GPU, d_hashes, hashes, nrows * sizeof(uint64));
	memset(&err, 0, sizeof(err));
	check(gh_mm_build_gpu(&t->mm, t->mem, d_hashes, nrows, params,
						  gh_stream(GH_TARGET_GPU), &err),
		  &err, "building the hash table");
	/* every hash distinct: rows[] is the identity, nothing to copy back */
	t->rows_identity = (t->mm.ndistinct == nrows);
	if (!t->rows_identity)
	{
		t->rows_copy = palloc_extended(Max(nrows, 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
		gh_copy_dtoh(GH_TARGET_GPU, t->rows_copy, gh_mm_rows(&t->mm),
					 nrows * sizeof(uint32));
		t->rows = t->rows_copy;
	}
	gh_sync(GH_TARGET_GPU);
	gh_dev_free(d_hashes);
	return true;
}

/*
 * gh_table_build builds the multimap of hashes[0..nrows) (row i has index i)
 * on target, or on the CPU twin when the GPU has no room for it.
 */
GhTable *
gh_table_build(GhTarget target, const uint64 *hashes, uint32 nrows)
{
	GhTable    *t = palloc0(sizeof(GhTable));
	gh_mm_params params;
	instr_time	start,
				end;

	table_params(&params);
	INSTR_TIME_SET_CURRENT(start);
	t->target = target;
	if (target == GH_TARGET_GPU && !build_gpu(t, hashes, nrows, &params))
	{
		ereport(DEBUG1,
				(errmsg("GpuHashJoin: no room on the GPU for %u inner rows; using the CPU twin",
						nrows)));
		t->target = GH_TARGET_CPU;
	}
	if (t->target == GH_TARGET_CPU)
	{
		uint64_t	capacity;
		gh_error	err;

		t->mem_bytes = gh_mm_bytes(nrows, &params, &capacity);
		t->mem = gh_dev_alloc(GH_TARGET_CPU, t->mem_bytes);
		memset(&err, 0, sizeof(err));
		check(gh_mm_build_cpu(&t->mm, t->mem, hashes, nrows, &params, &err),
			  &err, "building the hash table");
		t->rows = gh_mm_rows(&t->mm);
		t->rows_identity = (t->mm.ndistinct == nrows);
	}
	INSTR_TIME_SET_CURRENT(end);
	INSTR_TIME_SUBTRACT(end, start);
	t->device_ms += INSTR_TIME_GET_MILLISEC(end);
	return t;
}

/*
 * gh_table_build_service has the GPU service build the table (service.c):
 * this backend keeps only the table's shape and, when some hash repeats,
 * a copy of its row array.  With peer_table, a table that a participant of
 * the same parallel join built from the same hashes (then hashes is not
 * read), the service gives this backend a view of it instead of a copy.
 */
GhTable *
gh_table_build_service(const uint64 *hashes, uint32 nrows, uint32 probe_cap,
					   uint32 peer_table)
{
	GhTable    *t = palloc0(sizeof(GhTable));
	gh_mm_params params;
	GhSvcTableInfo info;
	gh_error	err;
	uint32	   *rows;
	instr_time	start,
				end;

	table_params(&params);
	INSTR_TIME_SET_CURRENT(start);
	rows = palloc_extended(Max(nrows, 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
	/* a peer's table that is gone already (its join ended) is built again */
	if (peer_table == 0 ||
		gh_svc_attach(peer_table, nrows, &params, probe_cap, &info, rows, &err) != GH_OK)
		check(gh_svc_build(hashes, nrows, &params, probe_cap, &info, rows, &err),
			  &err, "building the hash table in the GPU service");
	else
		t->shared_view = true;
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
		pfree(rows);
	else
	{
		t->rows_copy = rows;
		t->rows = rows;
	}
	INSTR_TIME_SET_CURRENT(end);
	INSTR_TIME_SUBTRACT(end, start);
	t->device_ms += INSTR_TIME_GET_MILLISEC(end);
	return t;
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
	instr_time	start,
				end;

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
	INSTR_TIME_SET_CURRENT(end);
	INSTR_TIME_SUBTRACT(end, start);
	t->device_ms += INSTR_TIME_GET_MILLISEC(end);
	return true;
}

/*
 * gh_table_probe finds, for each of hashes[0..n), the range of the row array
 * holding its candidates.  hashes, first and count are host buffers from
 * gh_host_alloc (pinned for the GPU).
 */
void
gh_table_probe(GhTable *t, const uint64 *hashes, uint32 n, uint32 *first,
			   uint32 *count)
{
	gh_error	err;
	instr_time	start,
				end;

	INSTR_TIME_SET_CURRENT(start);
	memset(&err, 0, sizeof(err));
	if (t->svc.id != 0)
	{
		/* the batch is in the table's probe area (gh_table_probe_area) */
		Assert(n <= t->svc.probe_cap && hashes == t->svc.hashes &&
			   first == t->svc.first && count == t->svc.count);
		check(gh_svc_probe(t->svc.id, n, &err), &err,
			  "probing the hash table in the GPU service");
	}
	else if (t->target == GH_TARGET_CPU)
		check(gh_mm_probe_ranges_cpu(&t->mm, hashes, n, first, count, &err),
			  &err, "probing the hash table");
	else
	{
		void	   *stream = gh_stream(GH_TARGET_GPU);

		if (n > t->probe_cap)
		{
			if (t->d_probe)
			{
				gh_dev_free(t->d_probe);
				gh_dev_free(t->d_first);
				gh_dev_free(t->d_count);
				t->d_probe = t->d_first = t->d_count = NULL;
			}
			t->d_probe = gh_dev_alloc(GH_TARGET_GPU, n * sizeof(uint64));
			t->d_first = gh_dev_alloc(GH_TARGET_GPU, n * sizeof(uint32));
			t->d_count = gh_dev_alloc(GH_TARGET_GPU, n * sizeof(uint32));
			t->probe_cap = n;
		}
		gh_copy_htod(GH_TARGET_GPU, t->d_probe, hashes, n * sizeof(uint64));
		check(gh_mm_probe_ranges_gpu(&t->mm, t->d_probe, n, t->d_first,
									 t->d_count, stream, &err),
			  &err, "probing the hash table");
		gh_copy_dtoh(GH_TARGET_GPU, first, t->d_first, n * sizeof(uint32));
		gh_copy_dtoh(GH_TARGET_GPU, count, t->d_count, n * sizeof(uint32));
		gh_sync(GH_TARGET_GPU);
	}
	INSTR_TIME_SET_CURRENT(end);
	INSTR_TIME_SUBTRACT(end, start);
	t->device_ms += INSTR_TIME_GET_MILLISEC(end);
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
	if (t->d_probe)
	{
		gh_dev_free(t->d_probe);
		gh_dev_free(t->d_first);
		gh_dev_free(t->d_count);
	}
	if (t->mem)
		gh_dev_free(t->mem);
	t->mem = t->d_probe = t->d_first = t->d_count = NULL;
}
