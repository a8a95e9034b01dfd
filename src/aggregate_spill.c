/*-------------------------------------------------------------------------
 * aggregate_spill.c
 *	  The memory budget of gpuhash_aggregate(): past it, input rows of groups
 *	  not in memory go to partitions on temporary tapes, each aggregated in a
 *	  pass of its own.
 *
 * The budget is PostgreSQL's own for a hash aggregate, work_mem *
 * hash_mem_multiplier (get_hash_memory_limit), and it bounds the host memory
 * of the group sets: representatives and their by-reference keys, NUMERIC
 * side state, the fallback set, the window of accumulators brought back as
 * the rows are made, and the accumulators and table themselves where they
 * are host memory (the CPU twin) or copied to it (a GPU table whose keys the
 * host checks).  The exact device-key path on the GPU keeps its groups in
 * device memory only, and they have a budget of their own: the device
 * memory gpuhash.device_memory_limit and gpuhash.server_device_memory allow,
 * or half of the GPU's when neither is set, as GpuHashJoin's tables have.
 * So a GPU aggregation of 10^7 groups under a 4MB work_mem does not spill,
 * as long as the GPU holds them, and its host memory stays within work_mem.
 *
 * A run whose input parallel workers pack (aggregate_pack.c) holds the
 * groups of every participant's rows: its budget is work_mem *
 * hash_mem_multiplier times the participants the plan has (the Gather's
 * workers and the leader), as PostgreSQL gives a parallel hash join's
 * shared table and as its own parallel plan of the aggregate, a partial
 * hash aggregate in each participant, may hold in all
 * (gh_agg_spill_share).
 * The batch is in the host budget too, as a hash aggregate's input is in
 * PostgreSQL's: its arrays are sized so that they and the groups its rows
 * could start take at most half of the budget (aggregate_batch.c's
 * gh_agg_batch_cap, at least GH_AGG_MIN_BATCH rows), and the copies it
 * makes of by-reference values at most a quarter (it is flushed early past
 * that).  The first batch of a pass is never split, so a pass may hold the
 * groups of one batch: that is what the half was sized for.
 *
 * In the manner of nodeAgg.c's hash spill:
 *
 * 1. After every batch, gh_agg_spill_check measures the group sets and adds
 *	  what the next batch could make them grow by if each of its rows started
 *	  a group (the accumulators and the table double; the keys the last batch
 *	  copied), the batch arrays and the copies of a batch, and the window of
 *	  accumulators its end brings to the host.  Past the budget, the pass
 *	  takes no new group from then on.
 * 2. Each later row is looked up by its group hash in the main table (the
 *	  CPU twin's own table, or a host copy of the GPU's, taken once): a row
 *	  whose hash is there is staged as before, and the device finds its group
 *	  (a row whose key only shares the hash goes to the fallback set, as
 *	  always: such collisions are the only groups a pass can still add).  Any
 *	  other row is written to one of 2^bits partitions by the next bits of its
 *	  hash, as a MinimalTuple of its keys and arguments (count-only arguments
 *	  as a boolean).  Exact device keys are staged whole instead and the
 *	  device, frozen, lists the rows of no group (gh_agg_spill_absent).
 * 3. When the input ends the pass's groups are finished and returned; then
 *	  each partition is read back as the input of a fresh pass, which may
 *	  split again with the following bits of the hash.
 *
 * Every pass aggregates at least one batch before it can stop taking
 * groups, so every pass takes rows and the recursion ends; a single group
 * never spills (its rows all find it), nor does an aggregation without
 * GROUP BY.  When the hash has no bits left for another split the pass
 * keeps every group in memory.
 *
 * The tapes are one LogicalTapeSet (PostgreSQL's temporary files, under
 * temp_file_limit, removed on ERROR by the resource owner); a partition is
 * read with one block of buffer and its blocks are reused as it is read.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/nodeHash.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/date.h"
#include "utils/memutils.h"

#include "aggregate.h"

/* Partitions of a split: as nodeAgg.c, enough write buffers for a quarter */
#define SPILL_MIN_BITS	2
#define SPILL_MAX_BITS	8

static bool table_has(GhAggRun *run, uint64 h);
static void take_lookup(GhAggRun *run);
static uint64 exact_hash(GhAggRun *run, const uint64 *words, uint8 mask);
static Size device_budget(void);
static void write_row(GhAggRun *run, uint64 h, Datum *values, bool *nulls);

/*
 * spill_whole: whether a spilled row carries column col's value (every
 * column the device aggregates, and text whose extremes the host keeps), or
 * only whether it is NULL (count(x) of any other type, as a bool).
 */
static inline bool
spill_whole(const GhAggCol *col)
{
	return col->kind != GH_AGG_KIND_NONE || col->vtype == GHV_TEXT;
}

/*
 * gh_agg_spill_init sets run's budget and prepares what a spill needs but
 * does not create the tapes: a run that fits never touches a file.
 */
/* spill_bits: the partitions a pass writes, as many as a quarter of the budget buffers */
static void
spill_bits(GhAggSpill *sp)
{
	sp->bits = SPILL_MIN_BITS;
	while (sp->bits < SPILL_MAX_BITS &&
		   ((Size) BLCKSZ << (sp->bits + 1)) <= sp->budget / 4)
		sp->bits++;
}

/*
 * gh_agg_spill_share gives a run whose input comes from a parallel plan of
 * participants processes (workers and leader) the budget of all of them,
 * before its first row.
 */
void
gh_agg_spill_share(GhAggRun *run, int participants)
{
	GhAggSpill *sp = &run->spill;

	if (participants <= 1)
		return;
	sp->budget = (Size) Min((double) get_hash_memory_limit() * participants,
							(double) (SIZE_MAX / 4));
	/* the partitions stay those gh_agg_spill_init made room for */
}

void
gh_agg_spill_init(GhAggRun *run)
{
	GhAggSpill *sp = &run->spill;
	GhAggPlan  *plan = run->plan;
	int			natts = run->nkeys + run->ncols_in;

	sp->budget = get_hash_memory_limit();
	sp->device_budget = run->exact && run->target == GH_TARGET_GPU ?
		device_budget() : 0;
	spill_bits(sp);
	sp->cxt = AllocSetContextCreate(run->cxt, "gpuhash_aggregate spill",
									ALLOCSET_SMALL_SIZES);
	sp->desc = CreateTemplateTupleDesc(Max(natts, 1));
	for (int k = 0; k < run->nkeys; k++)
		TupleDescInitEntry(sp->desc, k + 1, NULL, plan->keys[k].type, -1, 0);
	for (int c = 0; c < run->ncols_in; c++)
		TupleDescInitEntry(sp->desc, run->nkeys + c + 1, NULL,
						   spill_whole(&plan->cols[c]) ? plan->cols[c].type : BOOLOID,
						   -1, 0);
	if (natts == 0)
		TupleDescInitEntry(sp->desc, 1, NULL, BOOLOID, -1, 0);
	sp->kv = palloc(sizeof(Datum) * Max(run->nkeys, 1));
	sp->kn = palloc(sizeof(bool) * Max(run->nkeys, 1));
	sp->out = palloc0(sizeof(LogicalTape *) << sp->bits);
	sp->out_rows = palloc0(sizeof(uint64) << sp->bits);
}

/*
 * gh_agg_device_limit is the device memory the exact device-key groups of a
 * GPU run may take as the settings give it: gpuhash.device_memory_limit,
 * within the server's budget; 0 when neither is set.
 */
Size
gh_agg_device_limit(void)
{
	uint64		limit = gh_budget_cap();

	if (gpuhash_device_memory_limit > 0 &&
		(limit == 0 || (uint64) gpuhash_device_memory_limit * 1024 * 1024 < limit))
		limit = (uint64) gpuhash_device_memory_limit * 1024 * 1024;
	return (Size) limit;
}

/*
 * device_budget is that limit, or half of the GPU's memory when no setting
 * gives one (read once per backend).
 */
static Size
device_budget(void)
{
	static Size half_gpu = 0;
	Size		limit = gh_agg_device_limit();

	if (limit > 0)
		return limit;
	if (half_gpu == 0)
	{
		gh_device_info info;
		gh_error	err = {0};

		gpuhash_report(gh_cuda_device_info(0, &info, &err), &err, "reading device properties");
		half_gpu = Max((Size) (info.total_bytes / 2), (Size) 1);
	}
	return half_gpu;
}

/*
 * gh_agg_spill_check, after a batch, stops the pass from taking new groups
 * when the next batch could take the run past the budget: the group sets,
 * what the next batch could make them grow by, the batch arrays and the
 * copies the next batch may make (as many as the last one made), and the
 * window of accumulators that the end of the pass brings to the host.  The
 * lookup copy of the table is taken only when a row needs it, so a check at
 * the end of the input costs nothing more.
 */
void
gh_agg_spill_check(GhAggRun *run)
{
	GhAggSpill *sp = &run->spill;
	GhGroupSet *s = &run->main;
	Size		dev_now;
	Size		now = gh_agg_group_memory(run, &dev_now);
	Size		more = run->batch.key_bytes + run->batch.dict_grew + run->batch.side_grew;
	Size		dev_more = 0;
	Size	   *grows = sp->device_budget > 0 ? &dev_more : &more;
	uint64		need = s->ngroups + run->batch.cap;
	double		slots = (double) need / gpuhash_load_factor;

	gh_agg_note_memory(run, now, run->batch.key_bytes);
	sp->device_peak = Max(sp->device_peak, dev_now);
	if (sp->active || run->nkeys == 0 || s->ngroups == 0 ||
		sp->used_bits + sp->bits > 64)
		return;
	more += sp->staging + run->batch.key_bytes;

	/*
	 * and the window of accumulators the pass's end brings to the host
	 * (aggregate_groups.c's gh_agg_set_fetch): a quarter of the budget, or
	 * all of them if fewer
	 */
	{
		Size		per_group = Max(s->layout.bytes / Max(s->layout.group_cap, 1), 1);

		more += Min(per_group * need, Max(sp->budget / 4, per_group * 1024));
	}
	if (need > s->layout.group_cap)
	{
		gh_agg_layout nl;

		gh_agg_layout_init(&nl, s->layout.ncols, s->layout.kind, s->layout.ops,
						   s->layout.nkeys, Max(need, s->layout.group_cap * 2));
		*grows += nl.bytes;
	}
	if (slots > (double) s->table_cap)
	{
		uint64		cap = s->table_cap;

		while ((double) cap < slots)
			cap <<= 1;
		*grows += gh_agg_table_bytes(cap);
	}
	if (!run->exact && need > s->rep_cap)
		more += (Size) Max(need, s->rep_cap * 2) * (Max(run->nkeys, 1) * 9 + 1);
	if (now + more > sp->budget ||
		(sp->device_budget > 0 && dev_now + dev_more > sp->device_budget))
	{
		sp->active = true;
		sp->lookup = NULL;
	}
}

/*
 * take_lookup makes the main table's hashes readable on the host: the CPU
 * twin's table is; a GPU table is copied once (no group comes after it).
 */
static void
take_lookup(GhAggRun *run)
{
	GhGroupSet *s = &run->main;
	GhAggSpill *sp = &run->spill;

	sp->lookup_cap = s->table_cap;
	if (s->target != GH_TARGET_GPU)
	{
		sp->lookup = (const uint64 *) s->table;
		return;
	}
	sp->lookup = MemoryContextAllocHuge(run->set_cxt, (Size) s->table_cap * 8);
	gh_copy_dtoh(s->target, (void *) sp->lookup, s->table, (Size) s->table_cap * 8);
	gh_sync(s->target);
}

/*
 * table_has says whether the main table holds group hash h: its probe, read
 * from the host (linear from gh_mix64 of the stored hash, to the first empty
 * slot; the table is never full).
 */
static bool
table_has(GhAggRun *run, uint64 h)
{
	GhAggSpill *sp = &run->spill;
	uint64		stored = gh_agg_stored_hash(h);
	uint64		mask;
	uint64		slot;

	if (sp->lookup == NULL)
		take_lookup(run);
	mask = sp->lookup_cap - 1;
	slot = gh_mix64(stored) & mask;
	for (;;)
	{
		uint64		k = sp->lookup[slot];

		if (k == stored)
			return true;
		if (k == GH_AGG_EMPTY)
			return false;
		slot = (slot + 1) & mask;
	}
}

/* exact_hash is the device's group hash of exact keys (gh_aggregate.h). */
static uint64
exact_hash(GhAggRun *run, const uint64 *words, uint8 mask)
{
	uint64		h = gh_agg_key_hash_init(mask);

	for (int k = 0; k < run->nkeys; k++)
		h = gh_agg_key_hash_step(h, words[k]);
	return h;
}

/*
 * write_row writes one row (keys, then input columns, as the spill's tuple
 * descriptor has them) to the partition the next bits of hash h choose.
 */
static void
write_row(GhAggRun *run, uint64 h, Datum *values, bool *nulls)
{
	GhAggSpill *sp = &run->spill;
	uint64		part = (h << sp->used_bits) >> (64 - sp->bits);
	MemoryContext old = MemoryContextSwitchTo(sp->cxt);
	MinimalTuple tuple;

	/* out-of-line values are read now: the file must hold the row itself */
	for (int a = 0; a < sp->desc->natts; a++)
	{
		if (!nulls[a] && TupleDescAttr(sp->desc, a)->attlen == -1 &&
			VARATT_IS_EXTERNAL(DatumGetPointer(values[a])))
			values[a] = PointerGetDatum(detoast_external_attr((struct varlena *)
															  DatumGetPointer(values[a])));
	}
	tuple = heap_form_minimal_tuple(sp->desc, values, nulls);

	/* the tapes and their buffers live as long as the run */
	MemoryContextSwitchTo(run->cxt);
	if (sp->out[part] == NULL)
	{
		if (sp->tapes == NULL)
			sp->tapes = LogicalTapeSetCreate(false, NULL, -1);
		sp->out[part] = LogicalTapeCreate(sp->tapes);
		sp->partitions++;
	}
	LogicalTapeWrite(sp->out[part], tuple, tuple->t_len);
	MemoryContextSwitchTo(old);
	sp->out_rows[part]++;
	sp->rows++;
	if ((sp->rows & 1023) == 0)
		CHECK_FOR_INTERRUPTS();
}

/*
 * gh_agg_spill_keep, for a pass that takes no new groups, says whether the
 * row in slot (all attributes deformed) belongs to a group in memory;
 * otherwise it writes the row to its partition and returns false.  Keys
 * checked on the host only: the exact device-key path stages every row and
 * the device says which have no group (gh_agg_spill_absent).
 */
bool
gh_agg_spill_keep(GhAggRun *run, TupleTableSlot *slot)
{
	GhAggSpill *sp = &run->spill;
	Datum	   *values = sp->kv;
	bool	   *nulls = sp->kn;
	uint64		h;
	bool		keep;

	Assert(!run->exact);
	h = gh_key_hash_group(&run->plan->group_keys, slot, values, nulls, sp->cxt);
	keep = table_has(run, h);
	if (!keep)
	{
		int			natts = run->nkeys + run->ncols_in;
		Datum	   *v = MemoryContextAlloc(sp->cxt, sizeof(Datum) * Max(natts, 1));
		bool	   *n = MemoryContextAlloc(sp->cxt, sizeof(bool) * Max(natts, 1));

		memcpy(v, slot->tts_values, sizeof(Datum) * natts);
		memcpy(n, slot->tts_isnull, sizeof(bool) * natts);
		for (int c = 0; c < run->ncols_in; c++)
		{
			if (!spill_whole(&run->plan->cols[c]) && !n[run->nkeys + c])
				v[run->nkeys + c] = BoolGetDatum(true);
		}
		write_row(run, h, v, n);
	}
	MemoryContextReset(sp->cxt);
	return keep;
}

/* cmp_side_row orders side rows by row, for qsort. */
static int
cmp_side_row(const void *a, const void *b)
{
	uint32		x = ((const GhSideRow *) a)->row;
	uint32		y = ((const GhSideRow *) b)->row;

	return x < y ? -1 : x > y ? 1 : 0;
}

/*
 * gh_agg_spill_absent writes the n staged rows listed in rows (each with
 * GH_AGG_BAD_ABSENT set, in row order) to their partitions: the exact
 * device-key path's rows whose group the device, frozen for a pass that
 * takes no new groups, did not have.  The batch has been prepared for the
 * device (NUMERIC values packed, aggregate_numeric.c); a row's values that
 * went to the side state come from its side rows, which then leave the
 * batch (the others stay, sorted by row).
 */
void
gh_agg_spill_absent(GhAggRun *run, const uint32 *rows, uint32 n)
{
	GhAggBatch *b = &run->batch;
	GhAggSpill *sp = &run->spill;
	Datum		values[GH_AGG_MAX_KEYS + GH_AGG_MAX_COLS];
	bool		nulls[GH_AGG_MAX_KEYS + GH_AGG_MAX_COLS];
	int			e = 0;
	int			kept = 0;

	Assert(run->exact);
	if (b->nside > 1)
		qsort(b->side_rows, b->nside, sizeof(GhSideRow), cmp_side_row);
	for (uint32 j = 0; j < n; j++)
	{
		uint32		i = rows[j] & ~GH_AGG_BAD_ABSENT;
		uint64		words[GH_AGG_MAX_KEYS];

		for (int k = 0; k < run->nkeys; k++)
		{
			words[k] = b->h_keys[k][i];
			nulls[k] = (b->h_knull[i] >> k) & 1;
			values[k] = nulls[k] ? (Datum) 0 : gh_agg_key_value(run, k, words[k], i);
		}
		for (int c = 0; c < run->ncols_in; c++)
		{
			GhAggCol   *col = &run->plan->cols[c];
			int64		v = b->h_vals[c][i];
			double		d;
			Datum	   *out = &values[run->nkeys + c];

			memcpy(&d, &b->h_vals[c][i], sizeof(d));
			nulls[run->nkeys + c] = !b->h_valid[c][i];
			if (nulls[run->nkeys + c])
				continue;
			if (!spill_whole(col))
			{
				*out = BoolGetDatum(true);
				continue;
			}
			/* a text value (whole spill_whole column) comes from its side row */
			switch (col->vtype)
			{
				case GHV_INT2:
					*out = Int16GetDatum((int16) v);
					break;
				case GHV_INT4:
					*out = Int32GetDatum((int32) v);
					break;
				case GHV_INT8:
				case GHV_TIMESTAMP:
					*out = Int64GetDatum(v);
					break;
				case GHV_DATE:
					*out = DateADTGetDatum((DateADT) v);
					break;
				case GHV_FLOAT4:
					*out = Float4GetDatum((float4) d);
					break;
				case GHV_FLOAT8:
					*out = Float8GetDatum(d);
					break;
				case GHV_NUMERIC:
					*out = gh_agg_num_unpack(run, c, v);
					break;
				case GHV_TEXT:
					*out = (Datum) 0;
					nulls[run->nkeys + c] = true;
					break;
				case GHV_OTHER:
					elog(ERROR, "gpuhash_aggregate: unexpected staged column %d", c);
			}
		}
		/* the values that went to the side state come whole */
		while (e < b->nside && b->side_rows[e].row < i)
			e++;
		for (; e < b->nside && b->side_rows[e].row == i; e++)
		{
			GhSideRow  *r = &b->side_rows[e];

			nulls[run->nkeys + r->col] = false;
			values[run->nkeys + r->col] = gh_agg_num_side_value(run, r);
			r->row = PG_UINT32_MAX;
		}
		if (run->nkeys + run->ncols_in == 0)
			nulls[0] = true;
		write_row(run, exact_hash(run, words, b->h_knull[i]), values, nulls);
		MemoryContextReset(sp->cxt);
	}
	/* counted again when their pass reads them */
	run->stats.rows -= n;
	/* the side rows that went with their rows leave the batch */
	for (int j = 0; j < b->nside; j++)
		if (b->side_rows[j].row != PG_UINT32_MAX)
			b->side_rows[kept++] = b->side_rows[j];
	b->nside = kept;
}

/*
 * gh_agg_spill_end_pass, when a pass's input has ended, makes its
 * partitions ready to be read and lists them for their passes; the next
 * pass starts taking groups again.
 */
void
gh_agg_spill_end_pass(GhAggRun *run)
{
	GhAggSpill *sp = &run->spill;
	MemoryContext old = MemoryContextSwitchTo(run->cxt);

	for (int p = 0; p < (1 << sp->bits); p++)
	{
		GhAggPart  *part;

		if (sp->out[p] == NULL)
			continue;
		LogicalTapeRewindForRead(sp->out[p], BLCKSZ);
		part = palloc(sizeof(GhAggPart));
		part->tape = sp->out[p];
		part->used_bits = sp->used_bits + sp->bits;
		part->rows = sp->out_rows[p];
		sp->pending = lappend(sp->pending, part);
		sp->out[p] = NULL;
		sp->out_rows[p] = 0;
	}
	MemoryContextSwitchTo(old);
	if (sp->tapes)
		sp->disk_kb = Max(sp->disk_kb, LogicalTapeSetBlocks(sp->tapes) * (BLCKSZ / 1024));
	sp->active = false;
	sp->lookup = NULL;
}

/*
 * gh_agg_spill_pop returns the next partition to aggregate (the last one
 * listed: the tapes' blocks are reused soonest), or NULL when none is left,
 * and makes its hash bits those of the pass.
 */
GhAggPart *
gh_agg_spill_pop(GhAggRun *run)
{
	GhAggSpill *sp = &run->spill;
	GhAggPart  *part;

	if (sp->pending == NIL)
		return NULL;
	part = llast(sp->pending);
	sp->pending = list_delete_last(sp->pending);
	sp->used_bits = part->used_bits;
	return part;
}

/*
 * gh_agg_spill_read returns the next row of partition part in a slot of
 * the spill's tuple descriptor (valid until the next call), or NULL at its
 * end, when the partition is closed and freed.
 */
TupleTableSlot *
gh_agg_spill_read(GhAggRun *run, GhAggPart *part)
{
	GhAggSpill *sp = &run->spill;
	uint32		len;
	MinimalTuple tuple;
	size_t		got;

	MemoryContext old = MemoryContextSwitchTo(run->cxt);

	if (sp->read_slot == NULL)
	{
		sp->read_slot = MakeSingleTupleTableSlot(sp->desc, &TTSOpsMinimalTuple);
		sp->read_cxt = AllocSetContextCreate(run->cxt, "gpuhash_aggregate spill read",
											 ALLOCSET_SMALL_SIZES);
	}
	ExecClearTuple(sp->read_slot);
	MemoryContextReset(sp->read_cxt);
	got = LogicalTapeRead(part->tape, &len, sizeof(len));
	if (got == 0)
	{
		LogicalTapeClose(part->tape);
		pfree(part);
		MemoryContextSwitchTo(old);
		return NULL;
	}
	if (got != sizeof(len) || len < SizeofMinimalTupleHeader)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("gpuhash_aggregate: unexpected end of a temporary file")));
	tuple = MemoryContextAlloc(sp->read_cxt, len);
	tuple->t_len = len;
	if (LogicalTapeRead(part->tape, (char *) tuple + sizeof(len), len - sizeof(len)) !=
		len - sizeof(len))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("gpuhash_aggregate: unexpected end of a temporary file")));
	MemoryContextSwitchTo(old);
	ExecStoreMinimalTuple(tuple, sp->read_slot, false);
	slot_getallattrs(sp->read_slot);
	return sp->read_slot;
}

/* gh_agg_spill_end closes the tapes, which removes their file. */
void
gh_agg_spill_end(GhAggRun *run)
{
	GhAggSpill *sp = &run->spill;

	if (sp->read_slot)
		ExecDropSingleTupleTableSlot(sp->read_slot);
	sp->read_slot = NULL;
	if (sp->tapes)
		LogicalTapeSetClose(sp->tapes);
	sp->tapes = NULL;
	sp->pending = NIL;
}
