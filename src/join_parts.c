/*-------------------------------------------------------------------------
 * join_parts.c
 *	  The partitions of a shared build past its budget: both sides of a
 *	  parallel GpuHashJoin written to shared temp files by hash bits, each
 *	  partition then joined by one participant as a private build.
 *
 * BUDGET: the participants of a shared build (join_parallel.c) together
 * hold at most get_hash_memory_limit() per planned participant, workers and
 * leader, which is what PostgreSQL's Parallel Hash allows itself
 * (ExecChooseHashTableSize's combined budget).  The planner offers a shared
 * build only where the inner side is expected to fit it.  When it does not,
 * the first participant whose new chunk takes the participants' chunks
 * past the sum, or its own past twice its own budget (the private memory
 * a process may hold, join_batch.c), sets up the partitions
 * (ghj_parts_check): nparts shared
 * tuplestores for each side, in the file set of the join's part of the
 * parallel segment.  Every participant, when it next starts a chunk or
 * when its share is read, writes its chunks' rows to their partitions, and
 * the rest of its share straight there.  A participant so holds at most
 * one chunk beyond what it held when the budget was passed, plus a write
 * buffer per partition (which caps nparts).
 *
 * OUTER: then each participant writes its share of the outer side to the
 * outer partitions (ghj_parts_write_outer) and waits for the others on the
 * build barrier.  No participant has emitted a row yet, so none waits for
 * one blocked on a full tuple queue.  One that attaches after that finds
 * the outer side read.
 *
 * PARTITIONS: each participant then claims partitions one at a time
 * (ghj_parts_next) and joins each alone, as a private build whose inner and
 * outer rows come from the partition's stores instead of the children
 * (ghj_parts_next_tuple): its own budget, its own batches if the partition
 * is still larger than that (join_batch.c, whose batch bits are other bits
 * of the same mix), its own table.  Only inner, left, semi and anti joins
 * have a shared build, and each outer row is in exactly one partition with
 * every inner row it can match, so each partition's join is exact on its
 * own; an outer row with a NULL key, which matches nothing, goes to
 * partition 0, where left and anti joins emit it.  No participant waits for
 * another after the outer side.
 *
 * A partition's row is its child's tuple as it was; its keys and hash are
 * evaluated again when the partition is joined.  The files belong to the
 * file set, which the end of the query or an ERROR deletes, and which a
 * rescan of the Gather empties (ghj_parts_reinit).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/sharedtuplestore.h"

#include "join_exec.h"

/* at most this many partitions: within them, join_batch.c's batches */
#define GHJ_MAX_PARTS 1024

/* a write buffer of one partition: a shared tuplestore's chunk and file */
#define GHJ_PART_BUFFER (5 * BLCKSZ)

/* what a partition's inner rows came to, for its join's first batches */
typedef struct GhjPartCount
{
	pg_atomic_uint64 rows;
	pg_atomic_uint64 bytes;
} GhjPartCount;

static int	part_of(int nparts, uint64 hash);
static int	participant(void);
static Size sts_room(GhjShared *sh);
static SharedTuplestore *part_sts(GhjState *s, int i);
static GhjPartCount *part_counts(GhjState *s);
static void setup_parts(GhjState *s, uint64 loaded);
static void attach_parts(GhjState *s);
static void put_inner(GhjState *s, int p, MinimalTuple tup);
static void put_record(GhjState *s, const Datum *rec, const char *data,
					   uint64 hash);
static void spill_chunks(GhjState *s);
static void end_inner_writes(GhjState *s);

/*
 * part_of is the partition of a row of hash hash: bits 16 and up of its
 * second mix, below those of join_batch.c's batches (ghj_batch_mix).
 */
static int
part_of(int nparts, uint64 hash)
{
	return (int) ((ghj_batch_mix(hash) >> 16) & (uint64) (nparts - 1));
}

/* participant is this process's number among the stores' writers. */
static int
participant(void)
{
	return IsParallelWorker() ? ParallelWorkerNumber + 1 : 0;
}

/* sts_room is the room of one shared tuplestore, for all participants. */
static Size
sts_room(GhjShared *sh)
{
	return MAXALIGN(sts_estimate(sh->nworkers + 1));
}

/* part_sts is store i: inner partition i, or outer partition i - nparts. */
static SharedTuplestore *
part_sts(GhjState *s, int i)
{
	GhjShared  *sh = s->par.shared;
	char	   *base = dsa_get_address(s->css.ss.ps.state->es_query_dsa, sh->parts);

	return (SharedTuplestore *) (base + sts_room(sh) * i);
}

/* part_counts is the partitions' counts, after their stores. */
static GhjPartCount *
part_counts(GhjState *s)
{
	GhjShared  *sh = s->par.shared;
	char	   *base = dsa_get_address(s->css.ss.ps.state->es_query_dsa, sh->parts);

	return (GhjPartCount *) (base + sts_room(sh) * 2 * sh->nparts);
}

/*
 * ghj_parts_init sets up the file set of the join's part of the parallel
 * segment seg, which deletes its files when the last process detaches.
 * Without a segment (no workers could be planned for) nothing spills.
 */
void
ghj_parts_init(GhjShared *sh, dsm_segment *seg)
{
	if (seg == NULL)
		return;
	SharedFileSetInit(&sh->fileset, seg);
	sh->can_spill = true;
}

/*
 * ghj_parts_reinit empties the file set and frees the partitions' stores
 * for another run (a rescan of the Gather, its workers gone).
 */
void
ghj_parts_reinit(GhjShared *sh, dsa_area *area)
{
	if (sh->can_spill)
		SharedFileSetDeleteAll(&sh->fileset);
	if (area != NULL && DsaPointerIsValid(sh->parts))
		dsa_free(area, sh->parts);
	sh->parts = InvalidDsaPointer;
}

/*
 * ghj_parts_begin prepares a shared build's join for partitions, at
 * executor start-up: the slots the partitions' rows are read into.
 */
void
ghj_parts_begin(GhjState *s)
{
	EState	   *estate = s->css.ss.ps.state;

	s->parts.curpart = -1;
	if (!s->shared_build)
		return;
	s->parts.part_cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "GpuHashJoin partitions",
											  ALLOCSET_DEFAULT_SIZES);
	s->parts.part_inner_slot = ExecInitExtraTupleSlot(estate,
													  ExecGetResultType(s->inner_ps),
													  &TTSOpsMinimalTuple);
	s->parts.part_vals = palloc(sizeof(Datum) * Max(ExecGetResultType(s->inner_ps)->natts, 1));
	s->parts.part_null = palloc(sizeof(bool) * Max(ExecGetResultType(s->inner_ps)->natts, 1));
	s->parts.part_outer_slot = ExecInitExtraTupleSlot(estate,
													  ExecGetResultType(s->outer_ps),
													  &TTSOpsMinimalTuple);
}

/*
 * setup_parts makes the partitions (one participant, the first to find the
 * chunks past the budget, with loaded bytes in them): enough that each
 * partition's share of the inner side, as the planner expects it or at
 * least twice what is loaded, fits one participant's budget, and at least
 * two per participant to share the work out; no more than one
 * participant's budget can buffer (half of it, for one side at a time).
 */
static void
setup_parts(GhjState *s, uint64 loaded)
{
	GhjShared  *sh = s->par.shared;
	dsa_area   *area = s->css.ss.ps.state->es_query_dsa;
	Plan	   *inner_plan = s->inner_ps->plan;
	double		rec_bytes = sizeof(uint64) + sizeof(Datum) * s->stride +
		inner_plan->plan_width;
	double		est = Max(2.0 * loaded, inner_plan->plan_rows *
						  gh_parallel_divisor(sh->nworkers) * rec_bytes);
	int			nparts = 2;
	MemoryContext old;
	GhjPartCount *counts;

	while (nparts < 2 * (sh->nworkers + 1))
		nparts *= 2;
	while (nparts < GHJ_MAX_PARTS && nparts * (double) s->batch.store_limit < est)
		nparts *= 2;
	while (nparts > 2 && (Size) nparts * GHJ_PART_BUFFER > s->batch.mem_budget / 2)
		nparts /= 2;

	sh->parts = dsa_allocate0(area, sts_room(sh) * 2 * nparts +
							  sizeof(GhjPartCount) * nparts);
	sh->nparts = nparts;
	old = MemoryContextSwitchTo(s->parts.part_cxt);
	s->parts.part_acc = palloc0(sizeof(SharedTuplestoreAccessor *) * 2 * nparts);
	s->parts.part_rows = palloc0(sizeof(uint64) * nparts);
	s->parts.part_bytes = palloc0(sizeof(uint64) * nparts);
	for (int i = 0; i < 2 * nparts; i++)
	{
		char		name[32];

		snprintf(name, sizeof(name), "ghj%d.%s%d",
				 s->css.ss.ps.plan->plan_node_id, i < nparts ? "i" : "o",
				 i % nparts);
		s->parts.part_acc[i] = sts_initialize(part_sts(s, i), sh->nworkers + 1,
											  participant(), 0,
											  SHARED_TUPLESTORE_SINGLE_PASS,
											  &sh->fileset, name);
	}
	MemoryContextSwitchTo(old);
	counts = part_counts(s);
	for (int p = 0; p < nparts; p++)
	{
		pg_atomic_init_u64(&counts[p].rows, 0);
		pg_atomic_init_u64(&counts[p].bytes, 0);
	}
	/* the others read nparts and parts once they see this */
	pg_write_barrier();
	pg_atomic_write_u32(&sh->parts_ready, 1);
}

/* attach_parts attaches this participant to the partitions' stores. */
static void
attach_parts(GhjState *s)
{
	GhjShared  *sh = s->par.shared;
	MemoryContext old;

	if (s->parts.part_acc != NULL)
		return;
	pg_read_barrier();
	old = MemoryContextSwitchTo(s->parts.part_cxt);
	s->parts.part_acc = palloc0(sizeof(SharedTuplestoreAccessor *) * 2 * sh->nparts);
	s->parts.part_rows = palloc0(sizeof(uint64) * sh->nparts);
	s->parts.part_bytes = palloc0(sizeof(uint64) * sh->nparts);
	for (int i = 0; i < 2 * sh->nparts; i++)
		s->parts.part_acc[i] = sts_attach(part_sts(s, i), participant(), &sh->fileset);
	MemoryContextSwitchTo(old);
}

/*
 * ghj_parts_check counts grown bytes more of this participant's chunks
 * (GHJ_PH_LOAD) and says whether its rows now go to partitions: they do
 * once any participant found the chunks past the participants' combined
 * budget, or its own past twice its own budget (its share of the rows is
 * larger than the others' when they start late), and set the partitions
 * up; this participant's chunks are then written to them and freed.
 */
bool
ghj_parts_check(GhjState *s, Size grown)
{
	GhjShared  *sh = s->par.shared;
	uint64		loaded;

	if (s->parts.part_acc != NULL)
		return true;
	if (!sh->can_spill)
		return false;
	loaded = pg_atomic_add_fetch_u64(&sh->loaded_bytes, grown);
	s->parts.own_loaded += grown;
	if (pg_atomic_read_u32(&sh->parts_ready) == 0)
	{
		if ((loaded <= (uint64) s->batch.mem_budget * (sh->nworkers + 1) &&
			 s->parts.own_loaded <= 2 * s->batch.mem_budget) ||
			!ghj_shared_claim(sh, &sh->spill_claimed))
			return false;
		setup_parts(s, loaded);
	}
	attach_parts(s);
	spill_chunks(s);
	return true;
}

/* ghj_parts_spilling says whether the shared build went to partitions. */
bool
ghj_parts_spilling(GhjState *s)
{
	return pg_atomic_read_u32(&s->par.shared->parts_ready) != 0;
}

/* put_inner writes an inner row to partition p and counts it. */
static void
put_inner(GhjState *s, int p, MinimalTuple tup)
{
	sts_puttuple(s->parts.part_acc[p], NULL, tup);
	s->parts.part_rows[p]++;
	s->parts.part_bytes[p] += tup->t_len;
}

/*
 * ghj_parts_put_inner writes the inner row in slot, of hash hash: the
 * columns the join keeps or reads its keys from, the others NULL (a Seq
 * Scan child may return whole rows: join_plan.c).
 */
void
ghj_parts_put_inner(GhjState *s, TupleTableSlot *slot, uint64 hash)
{
	TupleDesc	desc = slot->tts_tupleDescriptor;
	Datum	   *vals = s->parts.part_vals;
	bool	   *nulls = s->parts.part_null;
	MinimalTuple tup;

	slot_getsomeattrs(slot, s->inner_deform);
	memset(nulls, true, sizeof(bool) * desc->natts);
	for (int k = 0; k < s->nkeys; k++)
	{
		int			a = s->inner_key_col[k];

		if (a >= 0)
		{
			nulls[a] = slot->tts_isnull[a];
			vals[a] = slot->tts_values[a];
		}
	}
	for (int c = 0; c < s->ninner_cols; c++)
	{
		int			a = s->inner_col[c];

		nulls[a] = slot->tts_isnull[a];
		vals[a] = slot->tts_values[a];
	}
	tup = heap_form_minimal_tuple(desc, vals, nulls);
	put_inner(s, part_of(s->par.shared->nparts, hash), tup);
	pfree(tup);
}

/*
 * put_record writes an inner row held as a chunk's record (its
 * by-reference values offsets into data) back as its child's tuple: the
 * columns the record keeps, and those that are keys from the keys' values
 * (the keys are evaluated again from the tuple when the partition is
 * joined); the others, which nothing reads, NULL.
 */
static void
put_record(GhjState *s, const Datum *rec, const char *data, uint64 hash)
{
	TupleDesc	desc = ExecGetResultType(s->inner_ps);
	Datum	   *vals = s->parts.part_vals;
	bool	   *nulls = s->parts.part_null;
	MinimalTuple tup;

	memset(nulls, true, sizeof(bool) * desc->natts);
	for (int k = 0; k < s->nkeys; k++)
	{
		int			a = s->inner_key_col[k];

		if (a < 0)
			continue;
		nulls[a] = false;
		vals[a] = s->inner_keys.byval[k] ? rec[k] : PointerGetDatum(data + rec[k]);
	}
	for (int c = 0; c < s->ninner_cols; c++)
	{
		int			k = s->nkeys + c;
		int			a = s->inner_col[c];

		nulls[a] = byref_null(s, rec, k);
		vals[a] = nulls[a] ? (Datum) 0 :
			s->inner_attbyval[c] ? rec[k] : PointerGetDatum(data + rec[k]);
	}
	tup = heap_form_minimal_tuple(desc, vals, nulls);
	put_inner(s, part_of(s->par.shared->nparts, hash), tup);
	pfree(tup);
}

/*
 * spill_chunks writes the rows of this participant's chunks (join_parallel.c)
 * to the partitions, and frees the chunks.
 */
static void
spill_chunks(GhjState *s)
{
	for (GhjChunk *c = ghj_shared_chunks(s); c; c = c->next)
	{
		const char *data = GhjChunkData(c, s->stride);

		for (uint32 j = 0; j < c->nrows; j++)
		{
			if ((j & 0xfff) == 0)
				CHECK_FOR_INTERRUPTS();
			put_record(s, GhjChunkRecs(c) + (size_t) j * s->stride,
					   data, c->hashes[j]);
		}
	}
	ghj_shared_free_chunks(s);
}

/*
 * end_inner_writes ends this participant's writes of inner rows and adds
 * its counts to the partitions'.
 */
static void
end_inner_writes(GhjState *s)
{
	GhjPartCount *counts = part_counts(s);

	for (int p = 0; p < s->par.shared->nparts; p++)
	{
		sts_end_write(s->parts.part_acc[p]);
		pg_atomic_fetch_add_u64(&counts[p].rows, s->parts.part_rows[p]);
		pg_atomic_fetch_add_u64(&counts[p].bytes, s->parts.part_bytes[p]);
	}
}

/*
 * ghj_parts_write_outer writes this participant's share of the outer side
 * to the outer partitions (the phase after GHJ_PH_LOAD once the build
 * spilled), after its inner rows: those of its chunks not yet written, and
 * the end of its inner writes.  in_time: it attached before the outer side
 * was read; one that did not finds no outer row left.
 */
void
ghj_parts_write_outer(GhjState *s, bool in_time)
{
	ExprContext *econtext = s->css.ss.ps.ps_ExprContext;
	int			nparts;
	bool		emit_null = (s->jointype == JOIN_LEFT || s->jointype == JOIN_ANTI);
	Datum	   *keys = palloc(sizeof(Datum) * s->nkeys);

	(void) ghj_parts_check(s, 0);
	nparts = s->par.shared->nparts;
	if (in_time)
		end_inner_writes(s);
	for (;;)
	{
		TupleTableSlot *slot;
		MinimalTuple tup;
		bool		should_free;
		bool		isnull;
		uint64		h;

		CHECK_FOR_INTERRUPTS();
		slot = ghj_outer_next(s);
		if (TupIsNull(slot))
			break;
		if (!in_time)
			elog(ERROR, "GpuHashJoin found outer rows after its partitions were written");
		ghj_reset(econtext);
		econtext->ecxt_outertuple = slot;
		/* plain column keys are read from the deformed values */
		slot_getsomeattrs(slot, s->outer_deform);
		/* the keys are not kept: by-reference ones are not copied */
		h = gh_key_hash_row(&s->outer_keys, econtext, slot, keys, NULL, &isnull);
		if (isnull && !emit_null)
			continue;			/* matches nothing, and is not emitted */
		tup = ExecFetchSlotMinimalTuple(slot, &should_free);
		sts_puttuple(s->parts.part_acc[nparts + (isnull ? 0 : part_of(nparts, h))],
					 NULL, tup);
		if (should_free)
			pfree(tup);
	}
	ghj_reset(econtext);
	if (in_time)
	{
		for (int p = 0; p < nparts; p++)
			sts_end_write(s->parts.part_acc[nparts + p]);
	}
	pfree(keys);
}

/*
 * ghj_parts_next ends the partition this participant was joining, if any,
 * and claims the next one not yet claimed: its rows are then what the
 * children return (ghj_parts_next_tuple), and its counts the estimate of
 * the private build's first batches.  False when none is left.  The caller
 * frees the last partition's table (ghj_next_part), which otherwise stays,
 * for EXPLAIN.
 */
bool
ghj_parts_next(GhjState *s)
{
	GhjShared  *sh = s->par.shared;
	GhjPartCount *counts;
	uint32		p;
	uint64		rows;

	if (s->parts.curpart >= 0)
	{
		sts_end_parallel_scan(s->parts.part_acc[s->parts.curpart]);
		sts_end_parallel_scan(s->parts.part_acc[sh->nparts + s->parts.curpart]);
		s->parts.part_inner_rows += s->build.n_inner_read;
		s->parts.curpart = -1;
	}
	p = pg_atomic_fetch_add_u32(&sh->next_part, 1);
	if (p >= (uint32) sh->nparts)
		return false;
	counts = part_counts(s);
	rows = pg_atomic_read_u64(&counts[p].rows);
	s->parts.part_est_rows = (double) rows;
	s->parts.part_est_width = rows > 0 ?
		(int) Min(pg_atomic_read_u64(&counts[p].bytes) / rows, (uint64) MaxAllocSize) : 0;
	sts_begin_parallel_scan(s->parts.part_acc[p]);
	sts_begin_parallel_scan(s->parts.part_acc[sh->nparts + p]);
	s->parts.curpart = (int) p;
	s->parts.nparts_joined++;
	s->probe.outer_done = false;
	return true;
}

/*
 * ghj_parts_next_tuple is the next row of the partition being joined, of
 * its inner or its outer side, in a slot of that child's row type; NULL at
 * the end.
 */
TupleTableSlot *
ghj_parts_next_tuple(GhjState *s, bool inner)
{
	int			i = inner ? s->parts.curpart : s->par.shared->nparts + s->parts.curpart;
	TupleTableSlot *slot = inner ? s->parts.part_inner_slot : s->parts.part_outer_slot;
	MinimalTuple tup = sts_parallel_scan_next(s->parts.part_acc[i], NULL);

	if (tup == NULL)
		return NULL;
	return ExecStoreMinimalTuple(tup, slot, false);
}

/*
 * ghj_parts_end forgets the partitions: at the end of the join, or before
 * a rescan builds it again.  A partition being joined is closed (a rescan
 * may stop the join in one); writes are always done by then, since no
 * participant returns a row before its writes end.
 */
void
ghj_parts_end(GhjState *s)
{
	if (s->parts.curpart >= 0 && s->parts.part_acc != NULL)
	{
		sts_end_parallel_scan(s->parts.part_acc[s->parts.curpart]);
		sts_end_parallel_scan(s->parts.part_acc[s->par.shared->nparts + s->parts.curpart]);
	}
	s->parts.curpart = -1;
	s->parts.nparts_joined = 0;
	s->parts.part_inner_rows = 0;
	s->parts.part_acc = NULL;
	s->parts.part_rows = NULL;
	s->parts.part_bytes = NULL;
	if (s->parts.part_cxt != NULL)
		MemoryContextReset(s->parts.part_cxt);
}
