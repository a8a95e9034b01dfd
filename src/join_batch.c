/*-------------------------------------------------------------------------
 * join_batch.c
 *	  The batches of GpuHashJoin's private build: both sides partitioned by
 *	  hash bits into temp files when the inner side exceeds its budget.
 *
 * BUDGET: a join holds at most get_hash_memory_limit() bytes of host memory
 * (work_mem * hash_mem_multiplier, as Hash and HashAgg do): the outer batch
 * arrays take a bounded share of it (ghj_batch_setup caps batch_cap), the
 * inner store the rest (store_limit): its records, their by-reference data,
 * their hashes, and the table where it lives in host memory (the CPU twin).
 * What counts is what the memory contexts and the table really allocated.
 * Regrouping the store into the table's order (join_build.c) copies it once
 * more, so a join's peak stays within twice the budget plus fixed overheads.
 * A table on the GPU counts as device memory instead, where a batch must
 * fit gpuhash.device_memory_limit (gh_table_fits_device).
 *
 * PARTITIONS: a row's batch is the low bits of a second mix of its 64-bit
 * hash (ghj_batch_of), independent of the bits the table uses (it starts
 * from gh_mix64 of the hash itself); nbatch is a power of two, so a row of
 * batch b moves only to b + k * nbatch_old when nbatch doubles, never to an
 * earlier batch.  As in nodeHash.c, the join starts with the number of
 * batches ExecChooseHashTableSize gives for the planner's estimate; while
 * the inner side is read, rows of batches other than the current one go to
 * their inner files, and when the store passes its limit nbatch doubles
 * and the rows that now belong elsewhere move to their files
 * (ghj_batch_increase).  Outer rows of other batches go to outer files as
 * they are read.  After batch 0 the join loads each batch's inner file into
 * a fresh store, builds its table and probes it with that batch's outer
 * file (ghj_batch_advance); a loaded batch still too big doubles nbatch
 * again.
 *
 * FILES: each batch has two BufFiles with a BLCKSZ buffer each, so batches
 * do not come free: once doubling them would cost more memory than the
 * store holds, the store's limit doubles instead, which keeps the sum of
 * the two smallest (and EXPLAIN says the budget was exceeded).
 *
 * SKEW: when doubling moves none of the store's rows, or all of them, the
 * rows share their hash bits (one hot key, or a few): growing further would
 * only make empty batches, so it stops, as nodeHash.c's growEnabled does,
 * and that batch is built over the budget (EXPLAIN says so).  A single key
 * larger than the budget thus ends in one over-budget batch, never a loop.
 *
 * NULL keys: outer rows with a NULL key never match; left, full and anti
 * joins keep them in the batch being read, which emits them at once, and
 * never spill them.  Inner rows with a NULL key (kept by right and full
 * joins) go to a file of their own once there is more than one batch, and
 * are emitted after the last batch's unmatched rows.
 *
 * A spilled row is its hash followed by a MinimalTuple of its keys and
 * columns.  The files are BufFiles, made in the executor's resource owner,
 * so an ERROR or cancel deletes them; each is closed when its batch is done,
 * and all at the end or a rescan (ghj_batch_end).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "executor/executor.h"
#include "executor/nodeHash.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "utils/memutils.h"

#include "gh_hash.h"
#include "hashtable.h"
#include "join_exec.h"

/* more than this many batches would mostly be file buffers */
#define GHJ_MAX_NBATCH 65536

/* a batch's outer rows are at least this many, whatever the budget */
#define GHJ_MIN_BATCH_ROWS 256

static Size outer_row_bytes(GhjState *s);
static Size table_host_bytes(GhjState *s, uint32 nrows);
static BufFile *batch_file(GhjState *s, BufFile **files, int batchno);
static void write_tuple(BufFile *file, uint64 hash, MinimalTuple tup);
static MinimalTuple read_tuple(BufFile *file, uint64 *hash, MemoryContext cxt);
static void deform(TupleDesc desc, MinimalTuple tup, Datum *values,
				   bool *isnull);
static MinimalTuple form_record(GhjState *s, const Datum *rec, bool nullkey);
static Datum *deform_record(GhjState *s, MinimalTuple tup);
static void close_file(BufFile **file);
static void load_batch(GhjState *s);
static void reload_inner(GhjState *s, BufFile *file);
static bool batch_needed(GhjState *s, int batchno);

/*
 * outer_row_bytes is what one row of an outer batch takes in its arrays
 * (see ghj_next_batch): stored columns and their null flags, keys, the
 * NULL-key flag, the hash, the candidate range, three visit arrays and the
 * copy of the visit's first record with its short by-reference keys.
 */
static Size
outer_row_bytes(GhjState *s)
{
	return Max(s->nstored, 1) * (sizeof(Datum) + sizeof(bool)) +
		s->nkeys * sizeof(Datum) + sizeof(bool) + sizeof(uint64) +
		5 * sizeof(uint32) + s->stride * sizeof(Datum) +
		s->nbyref_keys * GHJ_KEY_COPY_MAX;
}

/* table_host_bytes is the host memory a table of nrows takes (CPU twin). */
static Size
table_host_bytes(GhjState *s, uint32 nrows)
{
	gh_mm_params params;
	uint64_t	capacity;

	if (!s->batch.table_on_host)
		return 0;
	memset(&params, 0, sizeof(params));
	params.load_factor = gpuhash_load_factor;
	params.group_size = gpuhash_group_size;
	params.scheme = (gh_probe_scheme) gpuhash_probe_scheme;
	return gh_mm_bytes(Max(nrows, 1), &params, &capacity);
}

/*
 * ghj_batch_setup sets the join's budget, caps the outer batch so that its
 * arrays take at most half of it (never fewer than GHJ_MIN_BATCH_ROWS rows,
 * whatever gpuhash.batch_rows asks), and leaves the inner store the rest.
 * Called once at executor start-up, after batch_cap is chosen.
 */
void
ghj_batch_setup(GhjState *s)
{
	Size		row = outer_row_bytes(s);
	Size		arrays;

	s->batch.mem_budget = get_hash_memory_limit();
	s->probe.batch_cap = (uint32) Min((Size) s->probe.batch_cap,
									  Max((Size) GHJ_MIN_BATCH_ROWS,
										  s->batch.mem_budget / 2 / row));
	arrays = (Size) s->probe.batch_cap * row;

	/* the outer rows' own by-reference values, copied into batch_cxt */
	s->batch.batch_byref_limit = (uint32) Min((Size) PG_UINT32_MAX / 2,
											  Max(s->batch.mem_budget / 8, (Size) 16384));
	s->batch.store_limit = s->batch.mem_budget > arrays + s->batch.batch_byref_limit ?
		s->batch.mem_budget - arrays - s->batch.batch_byref_limit : 0;
	s->batch.store_limit = Max(s->batch.store_limit, s->batch.mem_budget / 2);
	s->batch.nbatch = 1;
	s->batch.nbatch_original = 1;
}

/*
 * ghj_batch_init prepares a private build: where the table will count,
 * and the initial number of batches, ExecChooseHashTableSize's for the
 * planner's estimate of the inner side (as ExecHashTableCreate starts).
 */
void
ghj_batch_init(GhjState *s)
{
	double		rows;
	int			width;
	size_t		space;
	int			nbuckets,
				nbatch,
				nskew;

	ghj_batch_end(s);
	/*
	 * Where the table will go, without making the CUDA context here: that
	 * would wait for it, which the build overlaps with the inner scan
	 * (gh_table_where decides when the rows are in).
	 */
	s->batch.table_on_host = (gpuhash_device == GPUHASH_DEVICE_CPU ||
							  gpuhash_gpu_count() == 0);
	s->batch.grow_enabled = true;
	s->batch.over_budget = 0;
	s->batch.curbatch = 0;
	rows = ghj_inner_estimate(s, &width);
	ExecChooseHashTableSize(rows, width, false, false, 0, &space, &nbuckets,
							&nbatch, &nskew);
	nbatch = Min(nbatch, GHJ_MAX_NBATCH);
	s->batch.nbatch = 1;
	while (s->batch.nbatch < nbatch)
		s->batch.nbatch *= 2;
	s->batch.nbatch_original = s->batch.nbatch;
	s->batch.spill_inner_bytes = 0;
	if (s->batch.nbatch > 1)
	{
		MemoryContext old = MemoryContextSwitchTo(s->batch.spill_cxt);

		s->batch.inner_files = palloc0(sizeof(BufFile *) * s->batch.nbatch);
		s->batch.outer_files = palloc0(sizeof(BufFile *) * s->batch.nbatch);
		MemoryContextSwitchTo(old);
	}
}

/*
 * ghj_inner_estimate is how many inner rows a private build expects, and
 * how wide (width may be NULL): the planner's estimate, or for a partition
 * of a shared build that spilled (join_parts.c) what its rows came to.
 */
double
ghj_inner_estimate(GhjState *s, int *width)
{
	bool		part = s->parts.curpart >= 0;

	if (width)
		*width = part ? s->parts.part_est_width : s->inner_ps->plan->plan_width;
	return part ? s->parts.part_est_rows : s->inner_ps->plan->plan_rows;
}

/*
 * ghj_batch_store_bytes is the host memory the inner store would take with
 * room for cap records: its arrays at that size, the by-reference data and
 * NULL-key rows already held, and the table of cap rows where it is on the
 * host.
 */
Size
ghj_batch_store_bytes(GhjState *s, uint32 cap)
{
	Size		arrays_now = (Size) s->build.store_cap *
		(s->stride * sizeof(Datum) + sizeof(uint64));
	Size		arrays = (Size) cap * (s->stride * sizeof(Datum) + sizeof(uint64));
	Size		held = MemoryContextMemAllocated(s->build_tmp_cxt, true) +
		MemoryContextMemAllocated(s->build_cxt, true);

	return (held > arrays_now ? held - arrays_now : 0) + arrays +
		table_host_bytes(s, cap);
}

/*
 * ghj_batch_note_peak records the host memory the join holds now, plus
 * extra bytes that are about to be freed or not yet in a context, as the
 * peak if it is the largest so far.  It counts what is allocated: the
 * contexts of the store, the table and the batch, the table on the CPU
 * twin, the batch's hash and candidate arrays, and the batch files'
 * buffers (a spilled shared build's partitions' too).
 */
void
ghj_batch_note_peak(GhjState *s, Size extra)
{
	Size		now = MemoryContextMemAllocated(s->build_tmp_cxt, true) +
		MemoryContextMemAllocated(s->build_cxt, true) +
		MemoryContextMemAllocated(s->batch_cxt, true) +
		MemoryContextMemAllocated(s->batch.spill_cxt, true) + extra;

	if (s->parts.part_cxt != NULL)
		now += MemoryContextMemAllocated(s->parts.part_cxt, true);

	if (s->build.table && s->build.table->target == GH_TARGET_CPU && s->build.table->mem)
		now += s->build.table->mem_bytes;
	if (s->probe.batch_hashes && !s->probe.batch_in_table)
		now += (Size) s->probe.batch_cap * (sizeof(uint64) + 2 * sizeof(uint32));
	s->batch.mem_peak = Max(s->batch.mem_peak, now);
}

/*
 * ghj_batch_of is the batch of a row of hash h: the low bits of the upper
 * half of its second mix (ghj_batch_mix).
 */
int
ghj_batch_of(GhjState *s, uint64 hash)
{
	return (int) ((ghj_batch_mix(hash) >> 32) & (uint64) (s->batch.nbatch - 1));
}

/* batch_file returns files[batchno], created on first use. */
static BufFile *
batch_file(GhjState *s, BufFile **files, int batchno)
{
	if (files[batchno] == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(s->batch.spill_cxt);

		files[batchno] = BufFileCreateTemp(false);
		MemoryContextSwitchTo(old);
	}
	return files[batchno];
}

/* write_tuple appends a spilled row: its hash, then the tuple. */
static void
write_tuple(BufFile *file, uint64 hash, MinimalTuple tup)
{
	BufFileWrite(file, &hash, sizeof(hash));
	BufFileWrite(file, tup, tup->t_len);
}

/*
 * read_tuple reads the next spilled row of file into cxt, setting *hash;
 * NULL at the end of the file.
 */
static MinimalTuple
read_tuple(BufFile *file, uint64 *hash, MemoryContext cxt)
{
	uint32		len;
	MinimalTuple tup;
	size_t		got;

	got = BufFileRead(file, hash, sizeof(uint64));
	if (got == 0)
		return NULL;
	if (got != sizeof(uint64) ||
		BufFileRead(file, &len, sizeof(len)) != sizeof(len) ||
		len < sizeof(len) || len > MaxAllocSize)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read from GpuHashJoin temporary file: read only part of a row")));
	tup = MemoryContextAlloc(cxt, len);
	tup->t_len = len;
	if (BufFileRead(file, (char *) tup + sizeof(len), len - sizeof(len)) !=
		len - sizeof(len))
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read from GpuHashJoin temporary file: read only part of a row")));
	return tup;
}

/* deform splits a spilled tuple into values and null flags. */
static void
deform(TupleDesc desc, MinimalTuple tup, Datum *values, bool *isnull)
{
	HeapTupleData htup;

	htup.t_len = tup->t_len + MINIMAL_TUPLE_OFFSET;
	htup.t_data = (HeapTupleHeader) ((char *) tup - MINIMAL_TUPLE_OFFSET);
	ItemPointerSetInvalid(&htup.t_self);
	htup.t_tableOid = InvalidOid;
	heap_deform_tuple(&htup, desc, values, isnull);
}

/*
 * form_record makes the spilled form of an inner record (keys, columns),
 * in the current memory context.  The record of a row with a NULL key
 * (nullkey) holds no keys, only zeroes where they would be: its keys are
 * written as NULLs, never read through those zeroes as pointers, and read
 * back as zeroes (deform_record), which nothing reads either.
 */
static MinimalTuple
form_record(GhjState *s, const Datum *rec, bool nullkey)
{
	for (int k = 0; k < s->nkeys + s->ninner_cols; k++)
	{
		s->batch.spill_vals[k] = rec[k];
		s->batch.spill_null[k] = k < s->nkeys ? nullkey : byref_null(s, rec, k);
	}
	return heap_form_minimal_tuple(s->batch.rec_desc, s->batch.spill_vals, s->batch.spill_null);
}

/*
 * deform_record turns a spilled inner row back into a record, in spill_rec;
 * its by-reference values point into tup.
 */
static Datum *
deform_record(GhjState *s, MinimalTuple tup)
{
	uint64	   *nulls = (uint64 *) &s->batch.spill_rec[s->nkeys + s->ninner_cols];

	deform(s->batch.rec_desc, tup, s->batch.spill_vals, s->batch.spill_null);
	memset(nulls, 0, sizeof(uint64) * s->nullwords);
	for (int k = 0; k < s->nkeys + s->ninner_cols; k++)
	{
		s->batch.spill_rec[k] = s->batch.spill_vals[k];
		if (k >= s->nkeys && s->batch.spill_null[k])
			nulls[(k - s->nkeys) / 64] |= UINT64CONST(1) << ((k - s->nkeys) % 64);
	}
	return s->batch.spill_rec;
}

/* ghj_batch_save_inner writes an inner record to batch batchno's file. */
void
ghj_batch_save_inner(GhjState *s, int batchno, const Datum *rec, uint64 hash)
{
	MinimalTuple tup = form_record(s, rec, false);

	Assert(batchno > s->curbatch);
	write_tuple(batch_file(s, s->batch.inner_files, batchno), hash, tup);
	s->batch.spill_inner_bytes += sizeof(hash) + tup->t_len;
	pfree(tup);
}

/*
 * ghj_batch_save_nullkey writes an inner row with a NULL key (a record
 * without keys: see form_record) to its file.
 */
void
ghj_batch_save_nullkey(GhjState *s, const Datum *rec)
{
	MinimalTuple tup = form_record(s, rec, true);

	if (s->batch.nullkey_file == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(s->batch.spill_cxt);

		s->batch.nullkey_file = BufFileCreateTemp(false);
		MemoryContextSwitchTo(old);
	}
	write_tuple(s->batch.nullkey_file, 0, tup);
	pfree(tup);
}

/*
 * ghj_batch_save_outer writes the outer row in slot (its keys already
 * evaluated, hash hash) to batch batchno's outer file: the keys and the
 * stored columns, which is all a batch keeps of it.
 */
void
ghj_batch_save_outer(GhjState *s, int batchno, uint64 hash, const Datum *keys,
					 TupleTableSlot *slot)
{
	MinimalTuple tup;

	for (int k = 0; k < s->nkeys; k++)
	{
		s->batch.spill_vals[k] = keys[k];
		s->batch.spill_null[k] = false;
	}
	for (int j = 0; j < s->nstored; j++)
	{
		s->batch.spill_vals[s->nkeys + j] = slot->tts_values[s->stored_col[j]];
		s->batch.spill_null[s->nkeys + j] = slot->tts_isnull[s->stored_col[j]];
	}
	tup = heap_form_minimal_tuple(s->batch.outer_desc, s->batch.spill_vals,
								  s->batch.spill_null);
	write_tuple(batch_file(s, s->batch.outer_files, batchno), hash, tup);
	pfree(tup);
}

/*
 * ghj_batch_read_outer reads the current batch's next outer row from its
 * file into outer batch row n (its by-reference values stay in the tuple,
 * in batch_cxt).  Rows that a later doubling moved to another batch go on
 * to that batch's file.  Returns false at the end of the file.
 */
bool
ghj_batch_read_outer(GhjState *s, uint32 n)
{
	BufFile    *file = s->batch.outer_files[s->batch.curbatch];

	if (file == NULL)
		return false;
	for (;;)
	{
		uint64		hash;
		MinimalTuple tup;
		int			b;

		CHECK_FOR_INTERRUPTS();
		tup = read_tuple(file, &hash, s->batch_cxt);
		if (tup == NULL)
			return false;
		b = ghj_batch_of(s, hash);
		if (b != s->batch.curbatch)
		{
			write_tuple(batch_file(s, s->batch.outer_files, b), hash, tup);
			pfree(tup);
			continue;
		}
		deform(s->batch.outer_desc, tup, s->batch.spill_vals, s->batch.spill_null);
		for (int k = 0; k < s->nkeys; k++)
			s->probe.batch_keys[(size_t) n * s->nkeys + k] = s->batch.spill_vals[k];
		for (int j = 0; j < s->nstored; j++)
		{
			s->probe.batch_vals[(size_t) n * s->nstored + j] =
				s->batch.spill_vals[s->nkeys + j];
			s->probe.batch_isnull[(size_t) n * s->nstored + j] =
				s->batch.spill_null[s->nkeys + j];
		}
		s->probe.batch_null[n] = false;
		s->probe.batch_hashes[n] = hash;
		return true;
	}
}

/*
 * ghj_batch_read_nullkey returns the next inner row with a NULL key from
 * its file, as a record whose by-reference values live in batch_cxt until
 * the next call; NULL when there are no more.
 */
const Datum *
ghj_batch_read_nullkey(GhjState *s)
{
	MinimalTuple tup;
	uint64		hash;

	if (s->batch.nullkey_file == NULL)
		return NULL;
	if (!s->batch.nullkey_reading)
	{
		if (BufFileSeek(s->batch.nullkey_file, 0, 0, SEEK_SET) != 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not rewind GpuHashJoin temporary file")));
		s->batch.nullkey_reading = true;
	}
	MemoryContextReset(s->batch_cxt);
	tup = read_tuple(s->batch.nullkey_file, &hash, s->batch_cxt);
	if (tup == NULL)
		return NULL;
	return deform_record(s, tup);
}

/*
 * ghj_batch_increase doubles nbatch and moves the store's rows that now
 * belong to a later batch to their files.  The kept records, with their
 * by-reference data, are compacted into a fresh context, so that what the
 * store holds is what it counts.  Going from one batch to two also moves the
 * NULL-key rows of right and full joins to their file.  When doubling
 * moves none of the rows, or all of them, their hashes share the bits that
 * decide batches: growing stops and the batch stays over the budget.
 */
void
ghj_batch_increase(GhjState *s)
{
	MemoryContext old;
	MemoryContext fresh;
	Datum	   *recs;
	uint64	   *hashes;
	uint32		kept = 0;
	uint32		moved = 0;
	int			oldn = s->batch.nbatch;

	if (s->batch.nbatch >= GHJ_MAX_NBATCH)
	{
		s->batch.grow_enabled = false;
		return;
	}

	/*
	 * Every batch has two files, each with a buffer of BLCKSZ.  Once
	 * doubling them would take more memory than the store itself, the store
	 * is given twice the room instead (PostgreSQL 18's hash join does the
	 * same): the two together stay smallest that way.
	 */
	if ((Size) s->batch.nbatch * 2 * 2 * BLCKSZ > s->batch.store_limit)
	{
		s->batch.store_limit *= 2;
		s->batch.over_budget |= GHJ_OVER_FILES;
		return;
	}
	s->batch.nbatch *= 2;
	old = MemoryContextSwitchTo(s->batch.spill_cxt);
	if (s->batch.inner_files == NULL)
	{
		s->batch.inner_files = palloc0(sizeof(BufFile *) * s->batch.nbatch);
		s->batch.outer_files = palloc0(sizeof(BufFile *) * s->batch.nbatch);
	}
	else
	{
		s->batch.inner_files = repalloc(s->batch.inner_files,
										sizeof(BufFile *) * s->batch.nbatch);
		s->batch.outer_files = repalloc(s->batch.outer_files,
										sizeof(BufFile *) * s->batch.nbatch);
		memset(s->batch.inner_files + oldn, 0, sizeof(BufFile *) * oldn);
		memset(s->batch.outer_files + oldn, 0, sizeof(BufFile *) * oldn);
	}
	MemoryContextSwitchTo(old);

	if (oldn == 1 && s->build.n_nullkey > 0)
	{
		for (uint32 i = 0; i < s->build.n_nullkey; i++)
			ghj_batch_save_nullkey(s, &s->build.nullkey_recs[(size_t) i * s->stride]);
		s->build.nullkey_recs = NULL;
		s->build.n_nullkey = 0;
		MemoryContextReset(s->build_cxt);
	}

	fresh = AllocSetContextCreate(s->css.ss.ps.state->es_query_cxt,
								  "GpuHashJoin build copies",
								  ALLOCSET_DEFAULT_SIZES);
	recs = MemoryContextAllocExtended(fresh, sizeof(Datum) * s->build.store_cap * s->stride,
									  MCXT_ALLOC_HUGE);
	hashes = MemoryContextAllocExtended(fresh, sizeof(uint64) * s->build.store_cap,
										MCXT_ALLOC_HUGE);
	s->build.byref_bytes = 0;
	for (uint32 i = 0; i < s->build.ninner; i++)
	{
		const Datum *rec = &s->build.inner_recs[(size_t) i * s->stride];
		uint64		h = s->build.store_hashes[i];
		int			b = ghj_batch_of(s, h);
		Datum	   *dst;

		if ((i & 0xfff) == 0)
			CHECK_FOR_INTERRUPTS();
		if (b != s->batch.curbatch)
		{
			ghj_batch_save_inner(s, b, rec, h);
			moved++;
			continue;
		}
		dst = &recs[(size_t) kept * s->stride];
		memcpy(dst, rec, sizeof(Datum) * s->stride);
		if (s->inner_has_byref)
		{
			for (int k = 0; k < s->nkeys + s->ninner_cols; k++)
			{
				int16		typlen;

				if (byref_attr(s, k, &typlen) && !byref_null(s, dst, k))
				{
					old = MemoryContextSwitchTo(fresh);
					dst[k] = datumCopy(dst[k], false, typlen);
					MemoryContextSwitchTo(old);
					s->build.byref_bytes += byref_size(dst[k], typlen);
				}
			}
		}
		hashes[kept++] = h;
	}
	ghj_batch_note_peak(s, MemoryContextMemAllocated(fresh, true));
	MemoryContextDelete(s->build_tmp_cxt);
	s->build_tmp_cxt = fresh;
	s->build.inner_recs = recs;
	s->build.store_hashes = hashes;
	s->build.ninner = kept;

	/* the rows share their batch bits: more batches would not split them */
	if (moved == 0 || kept == 0)
		s->batch.grow_enabled = false;
}

/*
 * reload_inner reads an inner batch file back: rows of the current batch go
 * to the store, the others (the join has doubled its batches since they
 * were written, or doubles them while the store fills) to their own batch's
 * file, as they are.  The file is passed by value and closed by the caller:
 * doubling reallocates s->inner_files, where it may be held.
 */
static void
reload_inner(GhjState *s, BufFile *file)
{
	uint64		hash;
	MinimalTuple tup;

	if (BufFileSeek(file, 0, 0, SEEK_SET) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not rewind GpuHashJoin temporary file")));
	while ((tup = read_tuple(file, &hash, s->batch_cxt)) != NULL)
	{
		int			b = ghj_batch_of(s, hash);

		CHECK_FOR_INTERRUPTS();
		if (b != s->batch.curbatch)
			write_tuple(batch_file(s, s->batch.inner_files, b), hash, tup);
		else
			ghj_store_row(s, deform_record(s, tup), hash);
		pfree(tup);
	}
}

/*
 * ghj_batch_shrink runs after a private build has read its whole inner
 * side, before any outer row: when the rows in the other batches' files
 * would fit in the store beside batch 0's, it takes them back and the join
 * runs as one batch, so that no outer row goes to a file.  The join starts
 * with the batches the planner's estimate asks for, as nodeHash.c does, and
 * nodeHash.c never goes back; but an estimate can be far too high (TPC-H
 * Q18's IN subquery: 410435 rows estimated, 624 read, and every row of a
 * 60M-row outer side then written and read once more).  What must fit is
 * counted high: the store's arrays for all rows, the table where it lives
 * on the host, what batch 0 already holds, and all of the files' bytes for
 * the by-reference data.  Right and full joins with NULL-key inner rows in
 * their file keep their batches (those rows are emitted after the last
 * batch).  Should the store still pass its limit while the rows come back,
 * it doubles its batches as while reading the inner side, and the rows of
 * later batches go to the new files: no row is lost either way.
 */
void
ghj_batch_shrink(GhjState *s)
{
	BufFile   **inner = s->batch.inner_files;
	BufFile   **outer = s->batch.outer_files;
	int			oldn = s->batch.nbatch;
	double		rows;

	if (oldn <= 1 || s->batch.curbatch != 0 || s->batch.nullkey_file != NULL ||
		inner == NULL)
		return;
	for (int b = 0; b < oldn; b++)
	{
		if (outer[b] != NULL)
			return;				/* outer rows were written: too late */
	}
	rows = (double) s->build.n_inner_read - s->build.ninner - s->build.n_nullkey;
	if (rows < 0 || rows + s->build.ninner >= (double) PG_UINT32_MAX / 2)
		return;
	if (ghj_batch_store_bytes(s, (uint32) (s->build.ninner + rows)) +
		(Size) s->batch.spill_inner_bytes > s->batch.store_limit)
		return;
	if (!s->batch.table_on_host && !gh_table_fits_device((uint32) (s->build.ninner + rows)))
		return;

	s->batch.inner_files = NULL;
	s->batch.outer_files = NULL;
	s->batch.nbatch = 1;
	s->batch.nbatch_original = 1;
	s->batch.nbatch_planned = Max(s->batch.nbatch_planned, oldn);
	s->batch.spill_inner_bytes = 0;
	for (int b = 1; b < oldn; b++)
	{
		if (inner[b] != NULL)
			reload_inner(s, inner[b]);
		close_file(&inner[b]);
	}
	MemoryContextReset(s->batch_cxt);
	pfree(inner);
	pfree(outer);
	ghj_batch_note_peak(s, 0);
}

/* close_file closes *file if it is open. */
static void
close_file(BufFile **file)
{
	if (*file != NULL)
		BufFileClose(*file);
	*file = NULL;
}

/*
 * batch_needed says whether batch batchno must be loaded and probed: it has
 * inner rows that may be emitted or matched, or outer rows that may be
 * emitted unmatched; the last batch also emits the NULL-key inner rows.  As
 * in nodeHashjoin.c, a batch whose files were written under fewer batches
 * than there are now is read even when one side is empty, because some of
 * its rows belong to later batches and must be passed on (skipping it would
 * strand them).
 */
static bool
batch_needed(GhjState *s, int batchno)
{
	bool		inner = s->batch.inner_files[batchno] != NULL;
	bool		outer = s->batch.outer_files[batchno] != NULL;
	bool		right = (s->jointype == JOIN_RIGHT || s->jointype == JOIN_FULL);

	if (right && batchno == s->batch.nbatch - 1 && s->batch.nullkey_file != NULL)
		return true;
	if (inner && s->batch.nbatch != s->batch.nbatch_original)
		return true;
	if (outer && s->batch.nbatch != s->batch.nbatch_outstart)
		return true;
	if (!outer && !right)
		return false;
	if (!inner && (s->jointype == JOIN_INNER || s->jointype == JOIN_SEMI ||
				   s->jointype == JOIN_RIGHT))
		return false;
	return inner || outer;
}

/*
 * load_batch reads the current batch's inner file into a fresh store,
 * passing rows that belong to a later batch (after a doubling) on to their
 * files, and builds its table.
 */
static void
load_batch(GhjState *s)
{
	MemoryContext old;

	s->build.ninner = 0;
	s->build.n_nullkey = 0;
	s->build.byref_bytes = 0;
	s->build.store_cap = 64;
	old = MemoryContextSwitchTo(s->build_tmp_cxt);
	s->build.inner_recs = palloc_extended(sizeof(Datum) * s->build.store_cap * s->stride,
										  MCXT_ALLOC_HUGE);
	s->build.store_hashes = palloc_extended(sizeof(uint64) * s->build.store_cap,
											MCXT_ALLOC_HUGE);
	MemoryContextSwitchTo(old);
	if (s->batch.inner_files[s->batch.curbatch] != NULL)
	{
		reload_inner(s, s->batch.inner_files[s->batch.curbatch]);
		close_file(&s->batch.inner_files[s->batch.curbatch]);
	}
	MemoryContextReset(s->batch_cxt);
	ghj_batch_note_peak(s, 0);
	ghj_finish_build(s, s->build.store_hashes,
					 s->jointype == JOIN_RIGHT || s->jointype == JOIN_FULL);
	if (s->batch.outer_files[s->batch.curbatch] != NULL &&
		BufFileSeek(s->batch.outer_files[s->batch.curbatch], 0, 0, SEEK_SET) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not rewind GpuHashJoin temporary file")));
}

/*
 * ghj_batch_advance ends the current batch of the join and loads the next
 * one that can produce rows; false when there is none (and always with a
 * single batch, whose table a rescan may keep).
 */
bool
ghj_batch_advance(GhjState *s)
{
	int			next = s->batch.curbatch + 1;

	if (s->batch.nbatch == 1)
		return false;
	while (next < s->batch.nbatch && !batch_needed(s, next))
		next++;
	close_file(&s->batch.inner_files[s->batch.curbatch]);
	close_file(&s->batch.outer_files[s->batch.curbatch]);
	if (next >= s->batch.nbatch)
		return false;			/* the last table stays for EXPLAIN */
	ghj_free_table(s);
	s->batch.curbatch = next;
	load_batch(s);
	return true;
}

/*
 * ghj_batch_end closes every file and forgets the batches: at the end of
 * the join, and before a rebuild.
 */
void
ghj_batch_end(GhjState *s)
{
	if (s->batch.inner_files != NULL)
	{
		for (int b = 0; b < s->batch.nbatch; b++)
		{
			close_file(&s->batch.inner_files[b]);
			close_file(&s->batch.outer_files[b]);
		}
	}
	close_file(&s->batch.nullkey_file);
	s->batch.nullkey_reading = false;
	s->batch.inner_files = NULL;
	s->batch.outer_files = NULL;
	MemoryContextReset(s->batch.spill_cxt);
	s->batch.nbatch = 1;
	s->batch.curbatch = 0;
}

/*
 * ghj_batch_descs makes the tuple descriptors of spilled rows: an inner
 * record's keys and columns, and an outer row's keys and stored columns.
 * Called at executor start-up.
 */
void
ghj_batch_descs(GhjState *s, TupleDesc inner_desc, TupleDesc outer_desc)
{
	int			n = s->nkeys;
	ListCell   *lc;

	s->batch.rec_desc = CreateTemplateTupleDesc(s->nkeys + s->ninner_cols);
	s->batch.outer_desc = CreateTemplateTupleDesc(s->nkeys + s->nstored);
	n = 0;
	foreach(lc, s->hashclauses)
	{
		OpExpr	   *op = lfirst_node(OpExpr, lc);

		n++;
		TupleDescInitEntry(s->batch.outer_desc, n, NULL,
						   exprType(linitial(op->args)), -1, 0);
		TupleDescInitEntry(s->batch.rec_desc, n, NULL,
						   exprType(lsecond(op->args)), -1, 0);
	}
	for (int c = 0; c < s->ninner_cols; c++)
		TupleDescCopyEntry(s->batch.rec_desc, s->nkeys + c + 1, inner_desc,
						   s->inner_col[c] + 1);
	for (int j = 0; j < s->nstored; j++)
		TupleDescCopyEntry(s->batch.outer_desc, s->nkeys + j + 1, outer_desc,
						   s->stored_col[j] + 1);
	n = Max(s->nkeys + s->ninner_cols, s->nkeys + s->nstored);
	s->batch.spill_vals = palloc(sizeof(Datum) * Max(n, 1));
	s->batch.spill_null = palloc(sizeof(bool) * Max(n, 1));
	s->batch.spill_rec = palloc0(sizeof(Datum) * s->stride);
	s->batch.spill_cxt = AllocSetContextCreate(CurrentMemoryContext,
											   "GpuHashJoin batch files",
											   ALLOCSET_DEFAULT_SIZES);
}
