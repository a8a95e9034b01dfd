/*-------------------------------------------------------------------------
 * aggregate_batch.c
 *	  A run of gpuhash_aggregate(): input rows staged in device batches, and
 *	  each full batch run through the device.
 *
 * Rows arrive one at a time from the executor (gh_agg_run_add), or as
 * packets that parallel workers made (gh_agg_run_add_packet), and are staged
 * in a device batch of as many rows as half of the memory budget holds, at
 * most GH_AGG_BATCH_PACKETS x gpuhash.batch_rows (gh_agg_batch_cap): each
 * row's keys and each aggregate argument as the device wants it (int64,
 * double, or NUMERIC as fixed point, aggregate_numeric.c).  A full batch is
 * flushed (gh_agg_flush) one of two ways.
 *
 * Exact device keys (every key by value with bitwise equality: integers,
 * dates, timestamps, bool, oid): the keys travel as Datums and the device
 * does the rest (gh_agg_assign_exact): it hashes them, numbers the groups,
 * keeps each group's key, checks every row against it, and accumulates.
 * The host only learns the group count and the rows whose key met another
 * key's hash; those go to the fallback set (aggregate_fallback.c).  A key
 * the device computes (integer arithmetic, extract(year ...): agg_path.c's
 * compile_key) arrives as a placeholder and is written on the device, from
 * its inputs, before the grouping (gh_agg_key_from_col);
 * rows that collide or spill bring the computed keys back.
 *
 * Host-checked keys (anything else: text, numeric, floats, arrays, ...):
 *	1. The host hashes the GROUP BY keys as keys.h hashes a join's
 *	   (gh_key_hash_group: their extended hash functions, integers in line),
 *	   except that a NULL key hashes to a constant of its position, so that
 *	   NULLs form their own group, and keeps a copy of every key.
 *	2. The device table gives every row a group id by hash (gh_agg_assign).
 *	3. The host checks every row's key against its group's representative
 *	   with the keys' equality (gh_agg_check_keys).  Two different keys with
 *	   one hash meet here: the later row does not match, and is taken out of
 *	   the device batch.
 *	4. The device accumulates the rest (gh_agg_accumulate).
 *
 * Either way, rows taken out go to the fallback set, and NUMERIC values the
 * device cannot take go to the host-side state (aggregate_numeric.c).  When
 * the input ends, aggregate_result.c flushes the last batch and makes the
 * result rows from the group sets (aggregate_groups.c).
 *
 * Memory: the batch arrays are one host allocation (pinned for the GPU) and
 * one on the target, through the device layer (freed by the resource owner
 * on ERROR); keys and representatives in memory contexts under the
 * caller's; the batch context, whose copies end a batch early past a
 * quarter of the budget, is reset after every batch.  After every
 * batch the spill (aggregate_spill.c) measures the groups and, past the
 * memory budget, the next rows of groups not in memory go to partitions
 * instead of a batch.  A run that fits its budget does no more than that
 * measurement.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "executor/tuptable.h"
#include "nodes/execnodes.h"
#include "miscadmin.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datum.h"
#include "utils/memutils.h"

#include "aggregate.h"

/*
 * ON_TARGET words a device operation's action as its ERROR says it: "... on
 * the GPU" when the run's device is a GPU.
 */
#define ON_TARGET(run, action) \
	((run)->target == GH_TARGET_GPU ? action " on the GPU" : action)

static void stage_values(GhAggRun *run, uint32 i, Datum *values, bool *isnull);
static void widen32(int64 *dst, const char *src, uint32 n);
static void widen32_pack(int64 *dst, const char *src, uint32 n, int ds);
static void packet_prepack(GhAggRun *run, const GhAggPacketHeader *pkt,
						   const char *dsp, int *pre_ds);
static uint32 device_generic(GhAggRun *run);
static uint32 device_exact(GhAggRun *run);
static void send_values(GhAggRun *run, gh_agg_batch *b);
static void read_ctrl(GhAggRun *run, gh_agg_ctrl *ctrl);
static int	cmp_uint32(const void *a, const void *b);

/*
 * batch_full: whether the staged batch goes to the device now: its rows are
 * at its capacity, or its by-reference copies past their limit.
 */
static inline bool
batch_full(GhAggRun *run)
{
	return run->batch.n == run->batch.cap ||
		gh_agg_batch_bytes(run) > run->batch.bytes_limit;
}

/*
 * gh_agg_run_begin prepares one gpuhash_aggregate() call: its memory
 * budget, the batch buffers and the two group sets.  target is what
 * gpuhash_exec_target answered just now: where it is the CPU twin instead of
 * the GPU, the fallback is reported and the run counts it at its end.
 */
GhAggRun *
gh_agg_run_begin(GhAggPlan *plan, GhTarget target)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "gpuhash_aggregate",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	GhAggRun   *run = palloc0(sizeof(GhAggRun));

	INSTR_TIME_SET_CURRENT(run->stats.t_begin);
	run->plan = plan;
	run->target = target;
	run->fallback = target == GH_TARGET_CPU ? gpuhash_exec_fallback() : GH_FB_NONE;
	gh_mon_fallback(GH_PLAN_AGG, run->fallback);
	run->nkeys = plan->nkeys;
	run->ncols = plan->ncols;
	run->ncols_in = plan->ncols_in;
	run->cxt = cxt;
	run->batch.cxt = AllocSetContextCreate(cxt, "gpuhash_aggregate batch",
										   ALLOCSET_DEFAULT_SIZES);
	run->set_cxt = AllocSetContextCreate(cxt, "gpuhash_aggregate groups",
										 ALLOCSET_DEFAULT_SIZES);
	run->rep_cxt = AllocSetContextCreate(run->set_cxt, "gpuhash_aggregate keys",
										 ALLOCSET_DEFAULT_SIZES);
	run->num.cxt = AllocSetContextCreate(run->set_cxt, "gpuhash_aggregate numeric",
										 ALLOCSET_DEFAULT_SIZES);
	run->exact = plan->device_keys;
	if (plan->nexprs > 0 && !run->exact)
		elog(ERROR, "gpuhash_aggregate: device expressions need keys grouped on the device");
	gh_agg_spill_init(run);

	/* as many rows as the budget holds: staging is part of it */
	run->batch.cap = gh_agg_batch_cap(gh_agg_batch_row_bytes(plan, target,
															  gpuhash_load_factor));
	run->batch.bytes_limit = gh_agg_batch_bytes_limit(run);
	gh_agg_staging_alloc(run);

	run->num.nan = DirectFunctionCall3(numeric_in, CStringGetDatum("NaN"),
									   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
	run->num.pinf = DirectFunctionCall3(numeric_in, CStringGetDatum("Infinity"),
										ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
	run->num.ninf = DirectFunctionCall3(numeric_in, CStringGetDatum("-Infinity"),
										ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
	for (int c = 0; c < plan->ncols; c++)
		run->num.scale[c] = -1;

	gh_agg_set_init(run, &run->main, false, target);
	gh_agg_set_init(run, &run->fb, true, GH_TARGET_CPU);
	MemoryContextSwitchTo(old);
	return run;
}

/*
 * gh_agg_batch_row_bytes is what one row of a batch of plan's costs in
 * host memory on target, the row's share of everything that is sized by
 * the batch's rows (gh_agg_staging_alloc): the batch arrays (on the CPU
 * twin their target copies too), the NUMERIC display scales, the keys'
 * copies and the fallback set's arrays; and the groups the row could start,
 * where they are counted in the host budget: slots of the group table
 * (three times 12 bytes over load_factor, for the rounding of its capacity
 * to a power of two and the old table while it grows), the group's
 * accumulators and representative (three times: the doubling, and the old
 * copy while they move), and the host's entry for the extremes of each
 * text column (not the values themselves, whose length is the data's).
 * Exact device keys on the GPU keep their groups on the device, under the
 * device budget.  The CPU twin's count at gpuhash.load_factor's least value
 * is the largest, which is what GpuHashAggPack sizes its packets by.
 */
Size
gh_agg_batch_row_bytes(GhAggPlan *plan, GhTarget target, double load_factor)
{
	bool		exact = plan->device_keys;
	Size		nk = exact ? plan->nkeys : 0;
	Size		ncols = plan->ncols;
	Size		host = 8 + 4 + 4 + ncols * 9 + nk * 8 + 1;
	Size		row = host;
	uint8		kind[GH_AGG_MAX_COLS];
	uint8		ops[GH_AGG_MAX_COLS];
	gh_agg_layout l;

	if (target != GH_TARGET_GPU)
		row += host + (exact ? 8 : 0) + (Size) plan->nexprs * 4;
	for (int c = 0; c < plan->ncols; c++)
	{
		kind[c] = plan->cols[c].kind;
		ops[c] = plan->cols[c].ops;
		if (plan->cols[c].kind == GH_AGG_KIND_NUMERIC)
			row += 1;
		/* a text column's extremes: the group's host-side entry, growing */
		if (plan->cols[c].vtype == GHV_TEXT)
			row += 3 * (MAXALIGN(sizeof(GhNumSide)) + 64);
	}
	row += (Size) Max(plan->nkeys, 1) * (sizeof(Datum) + sizeof(bool));
	row += sizeof(uint32) + ncols * (sizeof(int64) + 1);
	if (!(exact && target == GH_TARGET_GPU))
	{
		gh_agg_layout_init(&l, plan->ncols, kind, ops, exact ? plan->nkeys : 0, 1024);
		row += (Size) ceil(36.0 / load_factor);
		row += 3 * ((l.bytes + 1023) / 1024);
	}
	if (!exact)
		row += 3 * ((Size) Max(plan->nkeys, 1) * (sizeof(Datum) + sizeof(bool)) + 1);
	return row;
}

/*
 * gh_agg_batch_cap is how many rows a batch of rows of row_bytes holds:
 * what half of the memory budget (work_mem * hash_mem_multiplier, as
 * PostgreSQL's hash aggregate has) holds, at most GH_AGG_BATCH_PACKETS x
 * gpuhash.batch_rows and GH_AGG_MAX_BATCH, and at least GH_AGG_MIN_BATCH
 * (or what gpuhash.batch_rows asks, if fewer), so that a batch always
 * makes progress.  The other half is the groups', and the copies a batch
 * makes of by-reference values (gh_agg_batch_bytes_limit).  The result
 * depends only on row_bytes and settings that parallel workers share with
 * their leader, so a worker sizes its packets by it (aggregate_pack.c).
 */
uint32
gh_agg_batch_cap(Size row_bytes)
{
	uint64		want = Min((uint64) Max(gpuhash_batch_rows, 1) * GH_AGG_BATCH_PACKETS,
						   (uint64) GH_AGG_MAX_BATCH);
	uint64		rows = (uint64) (get_hash_memory_limit() / 2) / Max(row_bytes, 1);

	rows = Min(rows, want);
	rows = Max(rows, Min((uint64) GH_AGG_MIN_BATCH, want));
	return (uint32) rows;
}

/*
 * gh_agg_batch_bytes_limit is how many bytes of by-reference copies a batch
 * may make (keys the host checks, text values whose extremes the host
 * keeps, NUMERICs the device cannot take, values without a number, and
 * the list of them): a quarter of the memory budget, at least 64kB.  A
 * batch is flushed once past it, so one row's copies may go beyond it.
 */
Size
gh_agg_batch_bytes_limit(GhAggRun *run)
{
	return Max(run->spill.budget / 4, (Size) 64 * 1024);
}

/*
 * gh_agg_batch_bytes is what the batch's by-reference copies hold now.
 */
Size
gh_agg_batch_bytes(GhAggRun *run)
{
	return MemoryContextMemAllocated(run->batch.cxt, true);
}

/*
 * gh_agg_staging_alloc allocates the batch buffers, unless they are there:
 * one host allocation (pinned for the GPU) and one on the target for all
 * the batch arrays, and the host's key arrays.  A spilled run keeps them
 * for its later passes.  Sizes are computed with overflow checks: a batch
 * is what the budget holds, which work_mem and hash_mem_multiplier may
 * make larger than MaxAllocSize, so the arrays are huge allocations.
 */
void
gh_agg_staging_alloc(GhAggRun *run)
{
	GhAggPlan  *plan = run->plan;
	GhTarget	target = run->target;
	Size		cap = run->batch.cap;
	int			nk = run->exact ? run->nkeys : 0;
	Size		keys = Max(run->nkeys, 1);
	Size		hbytes;
	Size		dbytes;
	char	   *h;
	char	   *d;

	if (run->batch.h_hashes != NULL)
		return;

	/*
	 * Hashes (or, exact, key Datums and NULL masks), values, ids, bad rows,
	 * valid flags; the target also holds the exact path's scratch.
	 */
	hbytes = mul_size(cap, 8 + 4 + 4 + (Size) plan->ncols * 9 + (Size) nk * 8 + 1);
	dbytes = add_size(add_size(hbytes, run->exact ? mul_size(cap, 8) : 0),
					  add_size(mul_size(mul_size(plan->nexprs, cap), 4),
							   GH_AGG_MAX_COLS * 4));
	h = gh_host_alloc(target, hbytes);
	d = gh_dev_alloc(target, dbytes);
	run->spill.staging = hbytes + (target == GH_TARGET_GPU ? 0 : dbytes);
	run->batch.h_hashes = (uint64 *) h;
	run->batch.d_hashes = (uint64 *) d;
	h += cap * 8;
	d += cap * 8;
	for (int k = 0; k < nk; k++)
	{
		run->batch.h_keys[k] = (uint64 *) h;
		run->batch.d_keys[k] = (uint64 *) d;
		h += cap * 8;
		d += cap * 8;
	}
	if (run->exact)
	{
		run->batch.d_scratch = (uint32 *) d;
		d += cap * 8;
	}
	for (int c = 0; c < plan->ncols; c++)
	{
		run->batch.h_vals[c] = (int64 *) h;
		run->batch.d_vals[c] = d;
		h += cap * 8;
		d += cap * 8;
	}
	run->batch.h_ids = (uint32 *) h;
	run->batch.d_ids = (uint32 *) d;
	h += cap * 4;
	d += cap * 4;
	run->batch.h_bad = (uint32 *) h;
	run->batch.d_bad = (uint32 *) d;
	h += cap * 4;
	d += cap * 4;
	for (int c = 0; c < plan->ncols; c++)
	{
		run->batch.h_valid[c] = (uint8 *) h;
		run->batch.d_valid[c] = (uint8 *) d;
		h += cap;
		d += cap;
		run->batch.max_dscale[c] = -1;
		run->batch.prepacked[c] = plan->cols[c].kind == GH_AGG_KIND_NUMERIC;
		if (plan->cols[c].kind == GH_AGG_KIND_NUMERIC && run->batch.h_ds[c] == NULL)
		{
			run->batch.h_ds[c] = MemoryContextAllocHuge(run->cxt, cap);
			run->spill.staging += cap;
		}
	}
	run->batch.h_knull = (uint8 *) h;
	run->batch.d_knull = (uint8 *) d;
	d += cap;
	/* device expressions' lists of rows for the host, and their counts */
	d = (char *) TYPEALIGN(4, d);
	for (int c = plan->ncols_in; c < plan->ncols; c++)
	{
		run->batch.d_xhost[c] = (uint32 *) d;
		d += cap * 4;
	}
	run->batch.d_xn = (uint32 *) d;
	if (run->batch.keys == NULL)
	{
		Size		kbytes = mul_size(mul_size(cap, keys), sizeof(Datum));

		run->batch.keys = MemoryContextAllocHuge(run->cxt, kbytes);
		run->batch.knulls = MemoryContextAllocHuge(run->cxt,
												   mul_size(mul_size(cap, keys), sizeof(bool)));
		run->spill.staging += kbytes + cap * keys * sizeof(bool);
	}
}

/*
 * gh_agg_staging_free gives back the batch buffers of the device layer once
 * no batch is to come.
 */
void
gh_agg_staging_free(GhAggRun *run)
{
	gh_dev_free(run->batch.h_hashes);
	run->batch.h_hashes = NULL;
	gh_dev_free(run->batch.d_hashes);
	run->batch.d_hashes = NULL;
}

/*
 * gh_agg_run_end counts the run in the statistics (monitor.c) and gives back
 * the device memory, the tapes and the run's memory.
 */
void
gh_agg_run_end(GhAggRun *run)
{
	GhGroupSet *sets[2] = {&run->main, &run->fb};

	gh_mon_run(GH_PLAN_AGG, run->target, run->fallback,
			   run->stats.ms_device + run->stats.ms_device_passes,
			   run->spill.passes);

	for (int i = 0; i < 2; i++)
	{
		GhGroupSet *s = sets[i];

		if (s->acc)
			gh_dev_free(s->acc);
		if (s->table)
			gh_dev_free(s->table);
	}
	gh_agg_staging_free(run);
	gh_agg_spill_end(run);
	MemoryContextDelete(run->cxt);
}

/*
 * stage_values stages the aggregate arguments of row i of the batch.
 */
static void
stage_values(GhAggRun *run, uint32 i, Datum *values, bool *isnull)
{
	GhAggPlan  *plan = run->plan;

	for (int c = 0; c < run->ncols_in; c++)
	{
		GhAggCol   *col = &plan->cols[c];
		Datum		v = values[c];
		int64		m;
		int			ds;
		int			kind;

		if (isnull[c])
		{
			run->batch.h_valid[c][i] = 0;
			continue;
		}
		run->batch.h_valid[c][i] = 1;
		switch (col->vtype)
		{
			case GHV_INT2:
				run->batch.h_vals[c][i] = DatumGetInt16(v);
				break;
			case GHV_INT4:
				run->batch.h_vals[c][i] = DatumGetInt32(v);
				break;
			case GHV_INT8:
			case GHV_TIMESTAMP:
				run->batch.h_vals[c][i] = DatumGetInt64(v);
				break;
			case GHV_DATE:
				run->batch.h_vals[c][i] = DatumGetDateADT(v);
				break;
			case GHV_FLOAT4:
				((double *) run->batch.h_vals[c])[i] = (double) DatumGetFloat4(v);
				break;
			case GHV_FLOAT8:
				((double *) run->batch.h_vals[c])[i] = DatumGetFloat8(v);
				break;
			case GHV_NUMERIC:
				if (col->kind == GH_AGG_KIND_NONE)
					break;
				kind = gh_agg_num_decode(v, &m, &ds);
				if (run->batch.prepacked[c])
					gh_agg_unprepack(run, c);	/* rows come unpacked */
				if (kind == GH_NUMV_FINITE)
				{
					run->batch.h_vals[c][i] = m;
					run->batch.h_ds[c][i] = (uint8) ds;
					run->batch.max_dscale[c] = Max(run->batch.max_dscale[c], ds);
					break;
				}
				run->batch.h_valid[c][i] = 0;
				gh_agg_add_side_row(run, i, c, kind,
							 kind == GH_NUMV_BIG ? datumCopy(v, false, -1) : (Datum) 0);
				break;
			case GHV_TEXT:
				gh_agg_add_text_row(run, i, c, v);
				break;
			case GHV_OTHER:
				break;
		}
	}
}

/*
 * gh_agg_run_add stages one input row: its keys (as Datums for the exact
 * device path; otherwise a copy, and the group hash of the keys' hash
 * functions) and its aggregate arguments; flushes the batch when full.  Past
 * the budget, a row of a group not in memory goes to its partition instead.
 */
void
gh_agg_run_add(GhAggRun *run, TupleTableSlot *slot)
{
	GhAggPlan  *plan = run->plan;
	MemoryContext old;
	uint32		i = run->batch.n;

	slot_getallattrs(slot);
	if (run->spill.active && !run->exact && !gh_agg_spill_keep(run, slot))
		return;
	old = MemoryContextSwitchTo(run->batch.cxt);
	if (run->exact)
	{
		uint8		mask = 0;

		for (int k = 0; k < run->nkeys; k++)
		{
			if (slot->tts_isnull[k])
			{
				mask |= 1 << k;
				run->batch.h_keys[k][i] = 0;
			}
			else if (plan->keys[k].dict)
				run->batch.h_keys[k][i] = gh_agg_dict_encode(run, k, slot->tts_values[k], i);
			else
				run->batch.h_keys[k][i] = (uint64) slot->tts_values[k];
		}
		run->batch.h_knull[i] = mask;
	}
	else
	{
		Datum	   *kv = run->batch.keys + (size_t) i * run->nkeys;
		bool	   *kn = run->batch.knulls + (size_t) i * run->nkeys;

		run->batch.h_hashes[i] = gh_key_hash_group(&plan->group_keys, slot, kv, kn,
												   run->batch.cxt);
		/* the carried keys, after the GROUP BY ones: kept, not hashed */
		for (int k = plan->group_keys.nkeys; k < run->nkeys; k++)
		{
			GhAggKey   *key = &plan->keys[k];
			Datum		v = slot->tts_values[k];

			kn[k] = slot->tts_isnull[k];
			if (kn[k])
			{
				kv[k] = (Datum) 0;
				continue;
			}
			if (key->typlen == -1)
				v = PointerGetDatum(PG_DETOAST_DATUM_PACKED(v));
			kv[k] = key->typbyval ? v : datumCopy(v, false, key->typlen);
		}
	}
	stage_values(run, i, slot->tts_values + run->nkeys, slot->tts_isnull + run->nkeys);
	run->batch.n++;
	run->stats.rows++;
	MemoryContextSwitchTo(old);
	if (batch_full(run))
		gh_agg_flush(run);
}

/* widen32 sign-extends n int32 values (4-aligned) to 64 bits. */
static void
widen32(int64 *dst, const char *src, uint32 n)
{
	const int32 *s = (const int32 *) src;

	for (uint32 i = 0; i < n; i++)
		dst[i] = s[i];
}

/*
 * widen32_pack is widen32 of NUMERIC scaled integers of display scale ds,
 * packed as gh_agg_prepare_numeric would pack them at that scale (every
 * int32 is within the packing's bounds).
 */
static void
widen32_pack(int64 *dst, const char *src, uint32 n, int ds)
{
	const int32 *s = (const int32 *) src;

	for (uint32 i = 0; i < n; i++)
		dst[i] = gh_agg_num_pack(s[i], ds);
}

/*
 * gh_agg_run_add_packet_slot stages the packet in column 1 of slot, a row of
 * a Gather over GpuHashAggPack (aggregate_pack.c); who names the caller in
 * the error for a NULL packet.
 */
void
gh_agg_run_add_packet_slot(GhAggRun *run, TupleTableSlot *slot, const char *who)
{
	bool		isnull;
	Datum		v = slot_getattr(slot, 1, &isnull);
	bytea	   *packet;

	if (isnull)
		elog(ERROR, "%s: NULL packet", who);
	/* a tiny packet may have been given a short header on the way */
	packet = DatumGetByteaP(v);
	gh_agg_run_add_packet(run, (GhAggPacketHeader *) packet);
	if ((Pointer) packet != DatumGetPointer(v))
		pfree(packet);
}

/*
 * read_exceptions reads the packet's list of NUMERIC values that are not
 * fixed point (nexc entries in bytes at p, rows relative to the packet's n
 * rows, staged from row first on) and makes each a side row of the batch,
 * its value copied into batch memory.
 */
static void
read_exceptions(GhAggRun *run, const char *p, uint32 bytes, uint32 nexc,
				uint32 first, uint32 n)
{
	const char *end = p + bytes;
	uint32		prev = 0;

	for (uint32 j = 0; j < nexc; j++)
	{
		uint32		row;
		uint16		col;
		uint32		len;
		struct varlena *v;
		int64		m;
		int			ds;
		int			kind;

		if (end - p < GH_PACKET_EXC_HEADER)
			elog(ERROR, "gpuhash_aggregate: malformed packet of %u rows", n);
		memcpy(&row, p, 4);
		memcpy(&col, p + 4, 2);
		memcpy(&len, p + 6, 4);
		p += GH_PACKET_EXC_HEADER;
		if (row >= n || col >= run->ncols_in || len < VARHDRSZ || len > (uint32) (end - p) ||
			(run->plan->cols[col].kind != GH_AGG_KIND_NUMERIC &&
			 run->plan->cols[col].vtype != GHV_TEXT) || row < prev)
			elog(ERROR, "gpuhash_aggregate: malformed packet of %u rows", n);
		v = MemoryContextAlloc(run->batch.cxt, len);
		memcpy(v, p, len);
		if (VARSIZE(v) != len)
			elog(ERROR, "gpuhash_aggregate: malformed packet of %u rows", n);
		p += len;
		prev = row;
		if (run->plan->cols[col].vtype == GHV_TEXT)
		{
			/* a text value of a column whose extremes the host keeps */
			gh_agg_add_side_row(run, first + row, col, GH_NUMV_TEXT, PointerGetDatum(v));
			continue;
		}
		kind = gh_agg_num_decode(PointerGetDatum(v), &m, &ds);
		if (kind == GH_NUMV_FINITE)
			elog(ERROR, "gpuhash_aggregate: malformed packet of %u rows", n);
		gh_agg_add_side_row(run, first + row, col, kind,
							kind == GH_NUMV_BIG ? PointerGetDatum(v) : (Datum) 0);
	}
	if (p != end)
		elog(ERROR, "gpuhash_aggregate: malformed packet of %u rows", n);
}

/*
 * number_packet_keys gives the packet's n rows, staged from row batch.n on,
 * the words of their numbered keys: local[k] is key k's array of numbers
 * into the packet's own dictionary, whose bytes (dict_bytes of them) are
 * at p, or of global numbers (GH_PACKET_GLOBAL) of the participants' shared
 * dictionary.  Each packet entry is looked up once (gh_agg_dict_packet),
 * each global number once per pass (gh_agg_dict_global).
 */
static void
number_packet_keys(GhAggRun *run, const uint32 *const *local, const char *p,
				   uint32 dict_bytes, uint32 n)
{
	uint32		first = run->batch.n;
	char	   *dict = NULL;
	Size		off = 0;

	if (dict_bytes > 0)
	{
		/* MAXALIGNed for the values, in batch memory for the spill */
		dict = MemoryContextAllocHuge(run->batch.cxt, dict_bytes);
		memcpy(dict, p, dict_bytes);
	}
	for (int k = 0; k < run->nkeys; k++)
	{
		uint32		count;
		uint32		bytes;
		uint64	   *words;
		Datum	   *vals;
		uint64	   *out = run->batch.h_keys[k] + first;
		const uint8 *knull = run->batch.h_knull + first;

		if (!run->plan->keys[k].dict)
			continue;
		if (dict_bytes - off < 8)
			elog(ERROR, "gpuhash_aggregate: malformed packet of %u rows", n);
		memcpy(&count, dict + off, 4);
		memcpy(&bytes, dict + off + 4, 4);
		off += 8;
		if (count > n || bytes > dict_bytes - off ||
			MAXALIGN((Size) count * 4) > dict_bytes - off - bytes)
			elog(ERROR, "gpuhash_aggregate: malformed packet of %u rows", n);
		words = palloc(sizeof(uint64) * (count + 1));
		vals = palloc(sizeof(Datum) * (count + 1));
		gh_agg_dict_packet(run, k, dict + off, count, bytes, dict + off + bytes,
						   words, vals);
		off += bytes + MAXALIGN((Size) count * 4);
		for (uint32 i = 0; i < n; i++)
		{
			uint32		j = local[k][i];

			if ((knull[i] >> k) & 1)
			{
				out[i] = 0;
				continue;
			}
			if (j & GH_PACKET_GLOBAL)
			{
				out[i] = gh_agg_dict_global(run, k, j & ~GH_PACKET_GLOBAL, first + i);
				continue;
			}
			if (j >= count || words[j] == PG_UINT64_MAX)
				elog(ERROR, "gpuhash_aggregate: malformed packet of %u rows", n);
			out[i] = words[j];
			if (words[j] & GH_DICT_MISS)
				gh_agg_dict_miss(run, first + i, k, vals[j]);
		}
	}
	if (off != dict_bytes)
		elog(ERROR, "gpuhash_aggregate: malformed packet of %u rows", n);
}

/*
 * packet_prepack decides, for each NUMERIC column of the (checked) packet
 * whose display scales begin at dsp, whether its values are packed as they
 * are copied (pre_ds[c], their one display scale) or left to
 * gh_agg_prepare_numeric (-1): packed where the packet sends them as int32
 * of one display scale equal to the column's present scale and the batch's
 * rows so far are packed too.  A column that cannot be is unpacked.
 * Packing as they are copied spares the leader a pass of its own over every
 * NUMERIC argument, a large share of its time where such arguments abound
 * (TPC-H's Q1).
 */
static void
packet_prepack(GhAggRun *run, const GhAggPacketHeader *pkt, const char *dsp,
			   int *pre_ds)
{
	uint32		n = pkt->n;

	for (int c = 0; c < run->ncols_in; c++)
	{
		const GhAggCol *col = &run->plan->cols[c];
		bool		oneds = (pkt->onedscols >> c) & 1;
		int			ds = oneds ? (uint8) dsp[0] : -1;

		pre_ds[c] = -1;
		if (!gh_agg_col_has_ds(col))
			continue;
		dsp += oneds ? 1 : n;
		if (col->kind != GH_AGG_KIND_NUMERIC)
			continue;
		if (oneds && ((pkt->narrowcols >> c) & 1) && run->batch.prepacked[c] &&
			ds == run->num.scale[c])
			pre_ds[c] = ds;
		else
			gh_agg_unprepack(run, c);
	}
}

/*
 * gh_agg_run_add_packet stages a packet of rows that a parallel worker
 * already put in the device's form (exact keys), widening its 4-byte arrays
 * and filling in the NULL arrays it left out; its NUMERIC values that are
 * not fixed point become side rows.  Past the budget, the device says at
 * the flush which of its rows have no group in memory (gh_agg_spill_absent).
 */
void
gh_agg_run_add_packet(GhAggRun *run, const GhAggPacketHeader *pkt)
{
	uint32		n = pkt->n;
	const char *p = (const char *) (pkt + 1);
	const char *end = (const char *) pkt + VARSIZE(pkt);
	size_t		need = 0;
	size_t		ds_bytes = 0;
	const uint32 *local[GH_AGG_MAX_KEYS] = {0};
	int			pre_ds[GH_AGG_MAX_COLS];
	instr_time	t0;

	if (!run->exact || pkt->nkeys != (uint32) run->nkeys ||
		pkt->ncols != (uint32) run->ncols_in || n > run->batch.cap ||
		(size_t) pkt->nexc > (size_t) n * run->ncols_in)
		elog(ERROR, "gpuhash_aggregate: malformed packet of %u rows", n);
	for (int k = 0; k < run->nkeys; k++)
		need += (size_t) n * gh_agg_key_width(&run->plan->keys[k]);
	if (run->ncols_in < GH_AGG_MAX_COLS &&
		((pkt->narrowcols | pkt->onedscols | pkt->nullcols) >> run->ncols_in) != 0)
		elog(ERROR, "gpuhash_aggregate: malformed packet of %u rows", n);
	for (int c = 0; c < run->ncols_in; c++)
	{
		const GhAggCol *col = &run->plan->cols[c];
		bool		narrow = (pkt->narrowcols >> c) & 1;
		bool		oneds = (pkt->onedscols >> c) & 1;

		if ((narrow && (gh_agg_col_width(col) != 8 || !gh_agg_vtype_narrows(col->vtype))) ||
			(oneds && !gh_agg_col_has_ds(col)))
			elog(ERROR, "gpuhash_aggregate: malformed packet of %u rows", n);
		need += (size_t) n * ((narrow ? 4 : gh_agg_col_width(col)) +
							  ((pkt->nullcols >> c) & 1));
		if (gh_agg_col_has_ds(col))
			ds_bytes += oneds ? 1 : n;
	}
	need += ds_bytes;
	if (pkt->flags & GH_PACKET_KEY_NULLS)
		need += n;
	need += pkt->exc_bytes;
	need += pkt->dict_bytes;
	if ((size_t) (end - p) != need)
		elog(ERROR, "gpuhash_aggregate: malformed packet of %u rows", n);
	if (run->batch.n + n > run->batch.cap)
		gh_agg_flush(run);
	INSTR_TIME_SET_CURRENT(t0);
	/* the display scales come last before the exceptions and dictionaries */
	packet_prepack(run, pkt, end - pkt->exc_bytes - pkt->dict_bytes - ds_bytes, pre_ds);
	for (int w = 8; w >= 4; w -= 4)
	{
		for (int k = 0; k < run->nkeys; k++)
		{
			if (gh_agg_key_width(&run->plan->keys[k]) != w)
				continue;
			if (run->plan->keys[k].dict)
				local[k] = (const uint32 *) p;	/* numbered below */
			else if (w == 8)
				memcpy(run->batch.h_keys[k] + run->batch.n, p, (size_t) n * 8);
			else
				widen32((int64 *) run->batch.h_keys[k] + run->batch.n, p, n);
			p += (size_t) n * w;
		}
		for (int c = 0; c < run->ncols_in; c++)
		{
			bool		narrow = (pkt->narrowcols >> c) & 1;

			if ((narrow ? 4 : gh_agg_col_width(&run->plan->cols[c])) != w)
				continue;
			if (w == 8)
				memcpy(run->batch.h_vals[c] + run->batch.n, p, (size_t) n * 8);
			else if (pre_ds[c] >= 0)
				widen32_pack(run->batch.h_vals[c] + run->batch.n, p, n, pre_ds[c]);
			else
				widen32(run->batch.h_vals[c] + run->batch.n, p, n);
			p += (size_t) n * w;
		}
	}
	if (pkt->flags & GH_PACKET_KEY_NULLS)
	{
		memcpy(run->batch.h_knull + run->batch.n, p, n);
		p += n;
	}
	else
		memset(run->batch.h_knull + run->batch.n, 0, n);
	for (int c = 0; c < run->ncols_in; c++)
	{
		if (pkt->nullcols & ((uint32) 1 << c))
		{
			memcpy(run->batch.h_valid[c] + run->batch.n, p, n);
			p += n;
		}
		else
			memset(run->batch.h_valid[c] + run->batch.n, 1, n);
	}
	for (int c = 0; c < run->ncols_in; c++)
	{
		const uint8 *valid = run->batch.h_valid[c] + run->batch.n;
		int			maxds = run->batch.max_dscale[c];

		if (!gh_agg_col_has_ds(&run->plan->cols[c]))
			continue;
		if ((pkt->onedscols >> c) & 1)
		{
			/* the scale of every valid row, at least one */
			memset(run->batch.h_ds[c] + run->batch.n, (uint8) p[0], n);
			maxds = Max(maxds, (uint8) p[0]);
			p += 1;
		}
		else
		{
			memcpy(run->batch.h_ds[c] + run->batch.n, p, n);
			for (uint32 i = 0; i < n; i++)
				if (valid[i] && (uint8) p[i] > maxds)
					maxds = (uint8) p[i];
			p += n;
		}
		if (maxds > GH_NUM_SCALE_CAP)
			elog(ERROR, "gpuhash_aggregate: malformed packet of %u rows", n);
		run->batch.max_dscale[c] = maxds;
	}
	read_exceptions(run, p, pkt->exc_bytes, pkt->nexc, run->batch.n, n);
	p += pkt->exc_bytes;
	if (pkt->dict_bytes > 0 || run->nkeys > 0)
		number_packet_keys(run, local, p, pkt->dict_bytes, n);
	run->batch.n += n;
	run->stats.rows += n;
	run->stats.packets++;
	run->stats.packet_bytes += VARSIZE(pkt);
	run->stats.worker_busy_us += pkt->busy_us;
	run->stats.scan_pages += pkt->scan_pages;
	run->stats.scan_checked += pkt->scan_checked;
	run->stats.scan_hidden += pkt->scan_hidden;
	run->stats.scan_rows_host += pkt->scan_rows_host;
	run->stats.scan_us += pkt->scan_us;
	run->stats.ms_copy += gh_ms_since(t0);
	if (batch_full(run))
		gh_agg_flush(run);
}

/*
 * gh_agg_run_note_input records, for the DEBUG2 account, how the input ran:
 * the workers planned and launched where input (the plan state the rows
 * came from) is a Gather, and the wall time of reading it.
 */
void
gh_agg_run_note_input(GhAggRun *run, PlanState *input, double ms_input)
{
	bool		gather = IsA(input, GatherState);

	run->stats.workers_planned = gather ? ((Gather *) input->plan)->num_workers : 0;
	run->stats.workers_launched = gather ? ((GatherState *) input)->nworkers_launched : 0;
	run->stats.ms_input = ms_input;
	run->stats.ms_flush_input = run->stats.ms_flush;
}

/*
 * device_generic runs a batch through the device with the host checking
 * keys: group ids by hash, every row against its group's representative,
 * then accumulation of the rows that matched.  Returns the number of rows
 * listed in h_bad (in row order) for the fallback set.
 */
static uint32
device_generic(GhAggRun *run)
{
	GhGroupSet *s = &run->main;
	uint32		n = run->batch.n;
	uint32		nbad;
	gh_agg_ctrl ctrl;
	gh_agg_batch b;
	instr_time	t0,
				t1;

	/* 1. group ids; the values travel meanwhile */
	INSTR_TIME_SET_CURRENT(t0);
	gh_copy_htod(run->target, run->batch.d_hashes, run->batch.h_hashes, (size_t) n * 8);
	GH_AGG_DEVICE_CALL(gh_agg_assign, run->target, ON_TARGET(run, "grouping rows"),
					   s->table, s->table_cap, run->batch.d_hashes, n, run->batch.d_ids);
	send_values(run, &b);
	gh_copy_dtoh(run->target, run->batch.h_ids, run->batch.d_ids, (size_t) n * 4);
	read_ctrl(run, &ctrl);
	if (run->spill.active && ctrl.ngroups != s->ngroups)
		elog(ERROR, "gpuhash_aggregate: a group was created past the memory budget");
	INSTR_TIME_SET_CURRENT(t1);
	run->stats.ms_device += INSTR_TIME_GET_MILLISEC(t1) - INSTR_TIME_GET_MILLISEC(t0);
	gh_agg_ensure_groups(run, s, ctrl.ngroups);

	/* 2. every row against its group's representative */
	nbad = gh_agg_check_keys(run, s, ctrl.ngroups);
	s->ngroups = ctrl.ngroups;
	run->stats.ms_verify += gh_ms_since(t1);

	/* 3. accumulate what matched */
	INSTR_TIME_SET_CURRENT(t1);
	if (nbad > 0)
	{
		gh_copy_htod(run->target, run->batch.d_bad, run->batch.h_bad, (size_t) nbad * 4);
		GH_AGG_DEVICE_CALL(gh_agg_skip, run->target, ON_TARGET(run, "aggregating"),
						   run->batch.d_ids, run->batch.d_bad, nbad);
	}
	GH_AGG_DEVICE_CALL(gh_agg_accumulate, run->target, ON_TARGET(run, "aggregating"),
					   s->acc, &s->layout, s->ngroups, &b);
	run->stats.ms_device += gh_ms_since(t1);
	return nbad;
}

/*
 * send_values copies the batch's aggregate arguments and their valid flags
 * to the target, and describes them in b for gh_agg_accumulate.
 */
static void
send_values(GhAggRun *run, gh_agg_batch *b)
{
	GhAggBatch *batch = &run->batch;

	memset(b, 0, sizeof(*b));
	b->n = batch->n;
	b->ids = batch->d_ids;
	for (int c = 0; c < run->ncols; c++)
	{
		b->vals[c] = batch->d_vals[c];
		b->valid[c] = batch->d_valid[c];
		if (c >= run->ncols_in)
			continue;			/* a device expression's: made there */
		if (run->plan->cols[c].kind != GH_AGG_KIND_NONE)
			gh_copy_htod(run->target, batch->d_vals[c], batch->h_vals[c],
						 (size_t) batch->n * 8);
		gh_copy_htod(run->target, batch->d_valid[c], batch->h_valid[c], batch->n);
	}
}

/*
 * run_exprs runs the batch's device expressions on the target (their input
 * columns sent), each into its column, and brings back, with the next
 * synchronization, how many rows each left for the host (batch.h_xn).
 */
static void
run_exprs(GhAggRun *run)
{
	GhAggBatch *batch = &run->batch;

	if (run->plan->nexprs == 0)
		return;
	for (int c = run->ncols_in; c < run->ncols; c++)
		GH_AGG_DEVICE_CALL(gh_expr_eval, run->target,
						   ON_TARGET(run, "computing aggregate arguments"),
						   &batch->xe[c], batch->n, (int64_t *) batch->d_vals[c],
						   batch->d_valid[c], batch->d_xhost[c], batch->d_xn + c);
	gh_copy_dtoh(run->target, batch->h_xn, batch->d_xn, sizeof(uint32) * run->ncols);
}

/*
 * exprs_need_host says whether the batch's device expressions left rows
 * for the host: listed by the device, or with an input the host holds.
 */
static bool
exprs_need_host(GhAggRun *run)
{
	for (int c = run->ncols_in; c < run->ncols; c++)
		if (run->batch.h_xn[c] > 0)
			return true;
	for (int j = 0; j < run->batch.nside; j++)
		if (run->plan->cols[run->batch.side_rows[j].col].leaf)
			return true;
	return false;
}

/*
 * read_ctrl copies the main table's control block back once the device has
 * done the work queued so far, and raises the ERROR of a full table.
 */
static void
read_ctrl(GhAggRun *run, gh_agg_ctrl *ctrl)
{
	GhGroupSet *s = &run->main;

	gh_copy_dtoh(run->target, ctrl,
				 (char *) s->table + gh_agg_table_ctrl_offset(s->table_cap),
				 sizeof(*ctrl));
	gh_sync(run->target);
	if (ctrl->full)
		gpuhash_report(GH_ERR_TABLE_FULL, NULL, "grouping rows");
}

/* cmp_uint32 orders uint32s, for qsort. */
static int
cmp_uint32(const void *a, const void *b)
{
	uint32		x = *(const uint32 *) a;
	uint32		y = *(const uint32 *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

/*
 * unnumbered_to_absent moves, among the nbad colliding rows listed first in
 * h_bad (in row order; the nabsent rows of no group follow), those with an
 * unnumbered key (GH_DICT_MISS: their group cannot be in memory, however
 * their word's hash met another's) to the rows of no group.  Returns the
 * colliding rows left; h_bad stays colliding rows first, each part in row
 * order.
 */
static uint32
unnumbered_to_absent(GhAggRun *run, uint32 nbad, uint32 *nabsent)
{
	uint32	   *bad = run->batch.h_bad;
	uint32	   *absent = bad + nbad;
	uint32	   *moved = palloc(sizeof(uint32) * (nbad + *nabsent));
	uint32		keep = 0;
	uint32		nmoved = 0;
	uint32		a = 0;
	uint32		m = 0;
	uint32		o = 0;

	for (uint32 j = 0; j < nbad; j++)
	{
		uint32		i = bad[j];
		bool		miss = false;

		for (int k = 0; k < run->nkeys; k++)
			if (run->plan->keys[k].dict && !((run->batch.h_knull[i] >> k) & 1) &&
				(run->batch.h_keys[k][i] & GH_DICT_MISS))
				miss = true;
		if (miss)
			moved[nmoved++] = i | GH_AGG_BAD_ABSENT;
		else
			bad[keep++] = i;
	}
	if (nmoved == 0)
	{
		pfree(moved);
		return nbad;
	}
	/* the moved rows, then the absent ones, each in row order: merge them */
	memmove(moved + nmoved, absent, sizeof(uint32) * *nabsent);
	while (m < nmoved || a < *nabsent)
	{
		if (a == *nabsent ||
			(m < nmoved && moved[m] < moved[nmoved + a]))
			bad[keep + o++] = moved[m++];
		else
			bad[keep + o++] = moved[nmoved + a++];
	}
	*nabsent += nmoved;
	pfree(moved);
	return keep;
}

/*
 * device_exact runs a batch through the exact device-key path: the device
 * groups, checks and accumulates; the host only learns the group count and
 * the rows whose key collided with another's hash (listed in h_bad, in row
 * order, with their keys put where the fallback set reads them).
 */
static uint32
device_exact(GhAggRun *run)
{
	GhGroupSet *s = &run->main;
	uint32		n = run->batch.n;
	uint32		nbad;
	uint32		nabsent;
	bool		fix;
	gh_agg_ctrl ctrl;
	gh_agg_batch b;
	gh_agg_keys keys;
	instr_time	t0;

	/* room for every group this batch could create; past the budget, none */
	if (!run->spill.active)
		gh_agg_ensure_groups(run, s, s->ngroups + n);

	INSTR_TIME_SET_CURRENT(t0);
	memset(&keys, 0, sizeof(keys));
	keys.nkeys = run->nkeys;
	keys.frozen = run->spill.active;
	for (int k = 0; k < run->nkeys; k++)
	{
		gh_copy_htod(run->target, run->batch.d_keys[k], run->batch.h_keys[k], (size_t) n * 8);
		keys.vals[k] = run->batch.d_keys[k];
	}
	if (run->nkeys > 0)
		gh_copy_htod(run->target, run->batch.d_knull, run->batch.h_knull, n);
	keys.nullmask = run->batch.d_knull;
	send_values(run, &b);
	run_exprs(run);
	/* keys the device computed, in place of the child's placeholders */
	for (int k = 0; k < run->nkeys; k++)
	{
		GhAggKey   *key = &run->plan->keys[k];
		int			c = key->prog_col >= 0 ? key->prog_col : key->year_col;

		if (c >= 0)
			GH_AGG_DEVICE_CALL(gh_agg_key_from_col, run->target,
							   ON_TARGET(run, "grouping rows"),
							   (const int64_t *) run->batch.d_vals[c], run->batch.d_valid[c], n,
							   key->year_col < 0 ? 0 :
							   run->plan->cols[c].vtype == GHV_DATE ? 4 : 8,
							   (uint8) (1 << k), run->batch.d_keys[k], run->batch.d_knull);
	}
	GH_AGG_DEVICE_CALL(gh_agg_assign_exact, run->target, ON_TARGET(run, "grouping rows"),
					   s->table, s->table_cap, s->acc, &s->layout, &keys, n,
					   run->batch.d_ids, run->batch.d_scratch, run->batch.d_bad);
	read_ctrl(run, &ctrl);
	if (run->spill.active && ctrl.ngroups != s->ngroups)
		elog(ERROR, "gpuhash_aggregate: a group was created past the memory budget");
	s->ngroups = ctrl.ngroups;
	nbad = ctrl.nbad;

	/* accumulation runs on while the host stages the next batch */
	GH_AGG_DEVICE_CALL(gh_agg_accumulate, run->target, ON_TARGET(run, "aggregating"),
					   s->acc, &s->layout, s->ngroups, &b);

	fix = run->plan->nexprs > 0 && exprs_need_host(run);
	if (nbad > 0 || run->batch.nside > 0 || fix)
	{
		if (nbad > 0)
		{
			bool		computed = false;

			gh_copy_dtoh(run->target, run->batch.h_bad, run->batch.d_bad, (size_t) nbad * 4);
			/* the keys the device computed, for the fallback set and the spill */
			for (int k = 0; k < run->nkeys; k++)
				if (run->plan->keys[k].prog_col >= 0 || run->plan->keys[k].year_col >= 0)
				{
					gh_copy_dtoh(run->target, run->batch.h_keys[k], run->batch.d_keys[k],
								 (size_t) n * 8);
					computed = true;
				}
			if (computed)
				gh_copy_dtoh(run->target, run->batch.h_knull, run->batch.d_knull, n);
		}
		if (run->batch.nside > 0 || fix)
			gh_copy_dtoh(run->target, run->batch.h_ids, run->batch.d_ids, (size_t) n * 4);
		gh_sync(run->target);
		/* colliding rows first, then (frozen) rows of no group in memory */
		qsort(run->batch.h_bad, nbad, sizeof(uint32), cmp_uint32);
		for (nabsent = 0; nabsent < nbad; nabsent++)
			if (!(run->batch.h_bad[nbad - 1 - nabsent] & GH_AGG_BAD_ABSENT))
				break;
		nbad -= nabsent;
		if (run->batch.nmiss > 0)
			nbad = unnumbered_to_absent(run, nbad, &nabsent);
		if (nabsent > 0)
			gh_agg_spill_absent(run, run->batch.h_bad + nbad, nabsent);
		for (uint32 j = 0; j < nbad; j++)
		{
			uint32		i = run->batch.h_bad[j];

			for (int k = 0; k < run->nkeys; k++)
			{
				Datum	   *kv = &run->batch.keys[(size_t) i * run->nkeys + k];
				bool	   *kn = &run->batch.knulls[(size_t) i * run->nkeys + k];

				*kn = (run->batch.h_knull[i] >> k) & 1;
				*kv = *kn ? (Datum) 0 : gh_agg_key_value(run, k, run->batch.h_keys[k][i], i);
			}
		}
		if (fix || (nbad > 0 && run->plan->nexprs > 0))
			gh_expr_fixups(run, run->batch.h_bad + nbad, nabsent, nbad);
	}
	run->stats.ms_device += gh_ms_since(t0);
	return nbad;
}

/*
 * gh_agg_flush aggregates the staged batch on the device; rows whose keys
 * collided go to the fallback set, and NUMERIC values the device cannot hold
 * to the host-side state.
 */
void
gh_agg_flush(GhAggRun *run)
{
	uint32		nbad;
	MemoryContext old;
	instr_time	t0;

	Size		dict_before = gh_agg_dict_bytes(run);

	if (run->batch.n == 0)
		return;
	INSTR_TIME_SET_CURRENT(t0);
	old = MemoryContextSwitchTo(run->batch.cxt);
	gh_agg_prepare_numeric(run);
	if (!run->spill.active)
		gh_agg_ensure_table(&run->main, run->batch.n);
	nbad = run->exact ? device_exact(run) : device_generic(run);
	if (nbad > 0)
		gh_agg_to_fallback(run, nbad);
	run->batch.side_grew = 0;
	if (run->batch.nside > 0)
	{
		Size		before = MemoryContextMemAllocated(run->set_cxt, true);

		gh_agg_apply_side_rows(run, nbad);
		run->batch.side_grew = MemoryContextMemAllocated(run->set_cxt, true) - before;
	}

	run->stats.bad_rows += nbad;
	run->stats.batches++;
	run->batch.n = 0;
	run->batch.nside = 0;
	for (int c = 0; c < run->ncols; c++)
	{
		run->batch.max_dscale[c] = -1;
		run->batch.prepacked[c] = run->plan->cols[c].kind == GH_AGG_KIND_NUMERIC;
	}
	MemoryContextSwitchTo(old);
	run->batch.key_bytes = gh_agg_batch_bytes(run);
	run->batch.dict_grew = gh_agg_dict_bytes(run) - dict_before;
	MemoryContextReset(run->batch.cxt);
	run->batch.side_rows = NULL;
	run->batch.side_cap = 0;
	run->batch.miss = NULL;
	run->batch.nmiss = 0;
	run->batch.miss_cap = 0;
	gh_agg_spill_check(run);
	run->stats.ms_flush += gh_ms_since(t0);
}
