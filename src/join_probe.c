/*-------------------------------------------------------------------------
 * join_probe.c
 *	  The probe of GpuHashJoin: outer batches, their candidates, verified
 *	  and emitted, and the unmatched inner rows of right and full joins.
 *
 * PROBE: outer rows are pulled in batches of gpuhash.batch_rows, kept as
 * Datum arrays and hashed (keys.c); the device returns, per outer row, the
 * range of records holding its candidates (ghj_next_batch); when the join
 * has batches (join_batch.c), outer rows of other batches go to their files
 * as they are read, and later batches read theirs back.  The first
 * candidate record of every row is copied out of the store in one tight
 * loop (gather_first), whose independent loads the processor overlaps, so
 * the per-row work reads its records in order (ghj_probe_batch).  Every
 * candidate is verified on the CPU with the join operators' own equality
 * functions (a shared 64-bit hash is only a hint), then the remaining join
 * quals are evaluated, and the pair is filtered by the pushed-down quals
 * and projected from two virtual slots, or copied column by column where
 * the projection allows (see direct_proj).  Left, full and anti joins emit unmatched outer rows; right
 * and full joins mark matched inner rows and emit the others at the end
 * (ghj_next_unmatched_inner).
 *
 * OUTER SIDE: a plain sequential scan of a table (no filter, plain columns)
 * is read by the device scan (heapscan.h: pages staged, checked for
 * visibility and deformed by the CPU twin in every participant, as
 * GpuHashAggPack does) instead of PostgreSQL's tuple-at-a-time scan; its
 * rows arrive as virtual slots in the scan's columns (ghj_outer_next).
 * Anything else, or gpuhash.enable_scan off, reads the child.
 *
 * Inner records are read where the build left them: this process's own
 * store, or the shared store of a parallel join, whose by-reference values
 * are offsets that rec_base turns into this process's addresses.
 *
 * Expressions: setrefs made every Var of the targetlist and quals an
 * INDEX_VAR reference into the scan tuple (outer columns, then inner).  At
 * start-up (join_exec.c) they are rewritten to OUTER_VAR and INNER_VAR
 * references, so a pair is evaluated straight from its two slots, filled
 * from the batch row and the record.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/executor.h"
#include "miscadmin.h"
#include "utils/datum.h"
#include "utils/memutils.h"

#include "join_exec.h"

/*
 * How many visits ahead the probe loop asks for the arena data of a
 * by-reference key that gather_first did not copy.
 */
#define GHJ_PREFETCH 16

/*
 * How many visits ahead gather_first asks for a record, and for a key's
 * data: its loops do little else, so they need more loads in flight than
 * the probe loop to cover a miss to memory.
 */
#define GHJ_GATHER_AHEAD 32

/*
 * PREFETCH_KEYS asks for the data of record rec's by-reference keys.  A
 * macro: GCC drops a static function holding only prefetches.
 */
#define PREFETCH_KEYS(s, rec) \
	do { \
		for (int k_ = 0; k_ < (s)->nkeys; k_++) \
			if (!(s)->inner_keys.byval[k_]) \
				__builtin_prefetch(DatumGetPointer((rec)[k_] + (s)->build.rec_base[k_])); \
	} while (0)

static inline void store_outer(GhjState *s, TupleTableSlot *slot, uint32 n);
static inline TupleTableSlot *next_outer(GhjState *s, ExprContext *econtext);
static uint32 fill_partitioned(GhjState *s, ExprContext *econtext);
static void gather_first(GhjState *s);
static inline bool ghj_verify(GhjState *s, uint32 i, const Datum *ik);
static inline void ghj_load_outer(GhjState *s, uint32 i);
static inline void ghj_load_inner(GhjState *s, const Datum *rec);
static inline TupleTableSlot *ghj_emit_direct(GhjState *s, uint32 i,
											  const Datum *rec);
static inline TupleTableSlot *ghj_emit(GhjState *s, ExprContext *econtext);
static const Datum *next_unmatched(GhjState *s);

/*
 * store_outer copies the stored columns of the outer row in slot into batch
 * row n, after deforming the row as far as they and the keys need.
 */
static inline void
store_outer(GhjState *s, TupleTableSlot *slot, uint32 n)
{
	Datum	   *vals = &s->probe.batch_vals[(size_t) n * s->nstored];
	bool	   *isnull = &s->probe.batch_isnull[(size_t) n * s->nstored];

	slot_getsomeattrs(slot, s->outer_deform);
	for (int j = 0; j < s->nstored; j++)
	{
		int			c = s->stored_col[j];

		vals[j] = slot->tts_values[c];
		isnull[j] = slot->tts_isnull[c];
	}
	if (s->outer_has_byref)
	{
		MemoryContext old = MemoryContextSwitchTo(s->batch_cxt);

		for (int j = 0; j < s->nstored; j++)
		{
			int			c = s->stored_col[j];

			if (!isnull[j] && !s->outer_attbyval[c])
				vals[j] = datumCopy(vals[j], false, s->outer_attlen[c]);
		}
		MemoryContextSwitchTo(old);
	}
}

/*
 * next_outer pulls the next outer row (of the partition being joined, in a
 * shared build that spilled) and makes it econtext's outer tuple; NULL,
 * with outer_done set, when the outer side has no more.
 */
static inline TupleTableSlot *
next_outer(GhjState *s, ExprContext *econtext)
{
	TupleTableSlot *slot = s->parts.curpart >= 0 ? ghj_parts_next_tuple(s, false) :
		ghj_outer_next(s);

	if (TupIsNull(slot))
	{
		s->probe.outer_done = true;
		return NULL;
	}
	ghj_reset(econtext);
	econtext->ecxt_outertuple = slot;
	return slot;
}

/*
 * fill_partitioned fills an outer batch when the join has more than one
 * batch (join_batch.c): in batch 0 from the outer child, whose rows of
 * other batches go to their files as they come, later from the current
 * batch's file.  Rows with a NULL key stay in the batch that reads them if
 * the join emits them (left, full, anti), and are dropped otherwise: they
 * never match.  The batch also ends when the by-reference values it holds
 * reach their share of the budget.  Returns the rows filled.
 */
static uint32
fill_partitioned(GhjState *s, ExprContext *econtext)
{
	bool		emit_null = (s->jointype == JOIN_LEFT || s->jointype == JOIN_FULL ||
							 s->jointype == JOIN_ANTI);
	uint32		n = 0;

	while (n < s->probe.batch_cap &&
		   s->batch_cxt->mem_allocated < s->batch.batch_byref_limit)
	{
		TupleTableSlot *slot;
		Datum	   *keys = &s->probe.batch_keys[(size_t) n * s->nkeys];
		uint64		h;
		int			b;

		CHECK_FOR_INTERRUPTS();
		if (s->batch.curbatch > 0)
		{
			if (!ghj_batch_read_outer(s, n))
			{
				s->probe.outer_done = true;
				break;
			}
			n++;
			continue;
		}
		if ((slot = next_outer(s, econtext)) == NULL)
			break;
		slot_getsomeattrs(slot, s->outer_deform);
		h = gh_key_hash_row(&s->outer_keys, econtext, slot, keys,
							econtext->ecxt_per_tuple_memory, &s->probe.batch_null[n]);
		if (s->probe.batch_null[n])
		{
			if (!emit_null)
				continue;
		}
		else if ((b = ghj_batch_of(s, h)) != s->batch.curbatch)
		{
			ghj_batch_save_outer(s, b, h, keys, slot);
			continue;
		}
		store_outer(s, slot, n);
		for (int k = 0; k < s->nkeys && !s->probe.batch_null[n]; k++)
		{
			if (!s->outer_keys.byval[k])
			{
				MemoryContext old = MemoryContextSwitchTo(s->batch_cxt);

				keys[k] = datumCopy(keys[k], false, s->outer_keys.typlen[k]);
				MemoryContextSwitchTo(old);
			}
		}
		s->probe.batch_hashes[n] = h;
		n++;
	}
	return n;
}

/*
 * ghj_next_batch pulls, copies and hashes the next batch of outer rows,
 * probes the table with it, and lists the rows to visit: those with
 * candidates, their first candidates copied beside them (gather_first),
 * then, for joins that emit unmatched outer rows, the others.  Returns
 * false when the outer side is done.
 */
bool
ghj_next_batch(GhjState *s)
{
	ExprContext *econtext = s->css.ss.ps.ps_ExprContext;
	MemoryContext old;
	uint32		n = 0;
	uint32		m = 0;
	uint32		cap;

	/* the previous batch's rows end here (EXPLAIN ANALYZE's Probe Phases) */
	if (s->probe.probe_marked)
		ghj_elapsed_ms(&s->probe.probe_mark, &s->probe.rows_ms);
	else
		INSTR_TIME_SET_CURRENT(s->probe.probe_mark);
	s->probe.probe_marked = true;
	MemoryContextReset(s->batch_cxt);
	if (s->probe.batch_vals == NULL)
	{
		old = MemoryContextSwitchTo(s->build_cxt);
		/* gpuhash.batch_rows may ask for more than 1 GB per array */
		s->probe.batch_vals = palloc_extended(sizeof(Datum) * s->probe.batch_cap * Max(s->nstored, 1),
											  MCXT_ALLOC_HUGE);
		s->probe.batch_isnull = palloc_extended(sizeof(bool) * s->probe.batch_cap * Max(s->nstored, 1),
												MCXT_ALLOC_HUGE);
		s->probe.batch_keys = palloc_extended(sizeof(Datum) * s->probe.batch_cap * s->nkeys,
											  MCXT_ALLOC_HUGE);
		s->probe.batch_null = palloc_extended(sizeof(bool) * s->probe.batch_cap, MCXT_ALLOC_HUGE);
		s->probe.batch_order = palloc_extended(sizeof(uint32) * s->probe.batch_cap, MCXT_ALLOC_HUGE);
		s->probe.visit_first = palloc_extended(sizeof(uint32) * s->probe.batch_cap, MCXT_ALLOC_HUGE);
		s->probe.visit_count = palloc_extended(sizeof(uint32) * s->probe.batch_cap, MCXT_ALLOC_HUGE);
		s->probe.visit_recs = palloc_extended(sizeof(Datum) * s->stride * s->probe.batch_cap,
											  MCXT_ALLOC_HUGE);
		if (s->nbyref_keys > 0)
			s->probe.visit_bytes = palloc_extended((Size) GHJ_KEY_COPY_MAX * s->nbyref_keys *
												   s->probe.batch_cap, MCXT_ALLOC_HUGE);
		MemoryContextSwitchTo(old);
		/* a table in the GPU service lends its probe area: nothing is copied */
		s->probe.batch_in_table = gh_table_probe_area(s->build.table, s->probe.batch_cap,
													  &s->probe.batch_hashes,
													  &s->probe.batch_first,
													  &s->probe.batch_count);
		if (!s->probe.batch_in_table)
		{
			s->probe.batch_hashes = gh_host_alloc(s->build.target,
												  sizeof(uint64) * s->probe.batch_cap);
			s->probe.batch_first = gh_host_alloc(s->build.target,
												 sizeof(uint32) * s->probe.batch_cap);
			s->probe.batch_count = gh_host_alloc(s->build.target,
												 sizeof(uint32) * s->probe.batch_cap);
		}
	}

	/* with batches the rows are sorted into them as they come */
	if (s->batch.nbatch > 1)
		n = fill_partitioned(s, econtext);
	cap = s->batch.nbatch > 1 ? 0 : s->probe.batch_cap;
	while (n < cap)
	{
		TupleTableSlot *slot;

		CHECK_FOR_INTERRUPTS();
		if ((slot = next_outer(s, econtext)) == NULL)
			break;
		store_outer(s, slot, n);	/* deforms the whole row */
		if (s->outer_keys_plain)
		{
			/* plain integer columns: keys now, hashes for the whole batch below */
			Datum	   *keys = &s->probe.batch_keys[(size_t) n * s->nkeys];

			s->probe.batch_null[n] = false;
			for (int k = 0; k < s->nkeys; k++)
			{
				keys[k] = slot->tts_values[s->outer_keys.att[k] - 1];
				s->probe.batch_null[n] |= slot->tts_isnull[s->outer_keys.att[k] - 1];
			}
		}
		else
			s->probe.batch_hashes[n] = gh_key_hash_row(&s->outer_keys, econtext, slot,
													   &s->probe.batch_keys[(size_t) n * s->nkeys],
													   s->batch_cxt, &s->probe.batch_null[n]);
		n++;
		/* by-reference values count against the budget too */
		if (s->batch_cxt->mem_allocated >= s->batch.batch_byref_limit)
			break;
	}
	if (s->outer_keys_plain && s->batch.nbatch == 1)
	{
		/* one tight loop: the multiplications of many rows overlap */
		for (uint32 r = 0; r < n; r++)
			s->probe.batch_hashes[r] = s->probe.batch_null[r] ? 0 :
				gh_key_int_mix_row(&s->outer_keys,
								   &s->probe.batch_keys[(size_t) r * s->nkeys]);
	}
	ghj_reset(econtext);
	s->probe.batch_n = n;
	s->probe.n_order = 0;
	s->probe.cur = 0;
	s->probe.cur_cand = 0;
	s->probe.cur_loaded = false;
	s->probe.cur_matched = false;
	ghj_batch_note_peak(s, 0);
	ghj_elapsed_ms(&s->probe.probe_mark, &s->probe.outer_ms);
	if (n == 0)
	{
		s->probe.probe_marked = false;
		return false;
	}

	if (s->build.gpu_later && !gpuhash_gpu_warming())
		ghj_move_to_gpu(s);
	if (s->build.gpu_later)
		s->probe.n_cpu_batches++;
	gh_table_probe(s->build.table, s->probe.batch_hashes, n, s->probe.batch_first,
				   s->probe.batch_count);
	INSTR_TIME_SET_CURRENT(s->probe.probe_mark);	/* the table counts device time */
	for (uint32 i = 0; i < n; i++)
	{
		if (s->probe.batch_null[i])
			s->probe.batch_count[i] = 0;
		else if (s->probe.batch_count[i] > 0)
			s->probe.batch_order[m++] = i;
	}
	if (s->jointype == JOIN_LEFT || s->jointype == JOIN_FULL ||
		s->jointype == JOIN_ANTI)
	{
		for (uint32 i = 0; i < n; i++)
			if (s->probe.batch_count[i] == 0)
				s->probe.batch_order[m++] = i;
	}
	s->probe.n_order = m;
	for (uint32 p = 0; p < m; p++)
	{
		s->probe.visit_first[p] = s->probe.batch_first[s->probe.batch_order[p]];
		s->probe.visit_count[p] = s->probe.batch_count[s->probe.batch_order[p]];
	}
	gather_first(s);
	s->probe.n_batches++;
	ghj_elapsed_ms(&s->probe.probe_mark, &s->probe.order_ms);
	return true;
}

/*
 * gather_first copies the first candidate record of every visit into
 * visit_recs, in visit order, then its by-reference keys of up to
 * GHJ_KEY_COPY_MAX bytes into visit_bytes (the copy's key then points
 * there, as an offset from rec_base like any record's): tight loops of
 * independent loads, which the processor overlaps far better than the same
 * loads spread through the per-row work of ghj_probe_batch; the visits then
 * read their records and keys in order, which was faster than sorting the
 * visits by first candidate and reading them in the loop.  The keys' data are gathered in a second pass, from the
 * copies: a key's address is known only once its record has arrived, and
 * asking for it in the records' pass stalled that pass on the record.
 */
static void
gather_first(GhjState *s)
{
	const uint32 stride = s->stride;
	const Datum *recs = s->build.inner_recs;
	Datum	   *out = s->probe.visit_recs;
	char	   *bytes = s->probe.visit_bytes;
	uint32		n = 0;

	/* the visits with candidates come first */
	while (n < s->probe.n_order && s->probe.visit_count[n] > 0)
		n++;
	for (uint32 p = 0; p < n; p++)
	{
		const Datum *src;
		Datum	   *dst = &out[(size_t) p * stride];

		if (p + GHJ_GATHER_AHEAD < n)
		{
			const Datum *ahead = &recs[(size_t) s->probe.visit_first[p + GHJ_GATHER_AHEAD] * stride];

			__builtin_prefetch(ahead);
			__builtin_prefetch(&ahead[stride - 1]);
		}
		src = &recs[(size_t) s->probe.visit_first[p] * stride];
		for (uint32 w = 0; w < stride; w++)
			dst[w] = src[w];
	}
	if (s->nbyref_keys == 0)
		return;
	for (uint32 p = 0; p < n; p++)
	{
		Datum	   *dst = &out[(size_t) p * stride];

		if (p + GHJ_GATHER_AHEAD < n)
		{
			PREFETCH_KEYS(s, &out[(size_t) (p + GHJ_GATHER_AHEAD) * stride]);
		}
		for (int k = 0; k < s->nkeys; k++)
		{
			const char *v;
			Size		len;

			if (s->inner_keys.byval[k])
				continue;
			v = DatumGetPointer(dst[k] + s->build.rec_base[k]);
			len = datumGetSize(PointerGetDatum(v), false, s->inner_keys.typlen[k]);
			if (len > GHJ_KEY_COPY_MAX)
				continue;
			memcpy(bytes, v, len);
			dst[k] = PointerGetDatum(bytes) - s->build.rec_base[k];
			bytes += GHJ_KEY_COPY_MAX;
		}
	}
}

/* ghj_verify checks outer row i against inner record rec with the operators. */
static inline bool
ghj_verify(GhjState *s, uint32 i, const Datum *ik)
{
	Datum	   *ok = &s->probe.batch_keys[(size_t) i * s->nkeys];

	for (int k = 0; k < s->nkeys; k++)
	{
		Datum		iv = ik[k] + s->build.rec_base[k];
		Datum		a = s->swapped[k] ? iv : ok[k];
		Datum		b = s->swapped[k] ? ok[k] : iv;

		if (!gh_key_equal(s->eq_fast[k], &s->eq[k], s->coll[k],
						  s->inner_keys.typlen[k], a, b))
			return false;
	}
	return true;
}

/*
 * ghj_load_outer puts batch row i into outer_slot.  The columns the batch
 * does not keep, which nothing reads, stay null (ghj_init_stored).
 */
static inline void
ghj_load_outer(GhjState *s, uint32 i)
{
	TupleTableSlot *slot = s->outer_slot;

	const Datum *vals = &s->probe.batch_vals[(size_t) i * s->nstored];
	const bool *isnull = &s->probe.batch_isnull[(size_t) i * s->nstored];

	ExecClearTuple(slot);
	for (int j = 0; j < s->nstored; j++)
	{
		slot->tts_values[s->stored_col[j]] = vals[j];
		slot->tts_isnull[s->stored_col[j]] = isnull[j];
	}
	ExecStoreVirtualTuple(slot);
}

/*
 * ghj_load_inner puts the columns of inner record rec into inner_slot.  The
 * columns the record does not keep, which nothing reads, stay null
 * (ghj_init_inner_stored).
 */
static inline void
ghj_load_inner(GhjState *s, const Datum *rec)
{
	TupleTableSlot *slot = s->inner_slot;
	const Datum *vals = rec + s->nkeys;
	const uint64 *nulls = (const uint64 *) (vals + s->ninner_cols);
	const Datum *base = s->build.rec_base + s->nkeys;

	ExecClearTuple(slot);
	for (int c = 0; c < s->ninner_cols; c++)
	{
		int			a = s->inner_col[c];

		slot->tts_values[a] = vals[c] + base[c];
		slot->tts_isnull[a] = (nulls[c / 64] >> (c % 64)) & 1;
	}
	ExecStoreVirtualTuple(slot);
}

/*
 * ghj_emit_direct builds the result row of outer batch row i and inner
 * record rec by copying columns (see direct_proj).
 */
static inline TupleTableSlot *
ghj_emit_direct(GhjState *s, uint32 i, const Datum *rec)
{
	TupleTableSlot *slot = s->css.ss.ps.ps_ResultTupleSlot;
	const Datum *ovals = &s->probe.batch_vals[(size_t) i * s->nstored];
	const bool *onull = &s->probe.batch_isnull[(size_t) i * s->nstored];
	const Datum *ivals = rec + s->nkeys;
	const uint64 *inull = (const uint64 *) (ivals + s->ninner_cols);
	const Datum *ibase = s->build.rec_base + s->nkeys;

	ExecClearTuple(slot);
	for (int c = 0; c < s->nproj; c++)
	{
		int			col = s->proj_col[c];

		if (s->proj_inner[c])
		{
			slot->tts_values[c] = ivals[col] + ibase[col];
			slot->tts_isnull[c] = (inull[col / 64] >> (col % 64)) & 1;
		}
		else
		{
			slot->tts_values[c] = ovals[col];
			slot->tts_isnull[c] = onull[col];
		}
	}
	return ExecStoreVirtualTuple(slot);
}

/* ghj_emit filters the pair in econtext by the pushed-down quals and projects it. */
static inline TupleTableSlot *
ghj_emit(GhjState *s, ExprContext *econtext)
{
	if (s->otherqual == NULL || ExecQual(s->otherqual, econtext))
		return ExecProject(s->proj);
	InstrCountFiltered1(&s->css, 1);
	return NULL;
}

/*
 * next_unmatched returns the next inner record no outer row matched, a
 * record with a NULL key (right and full joins), or NULL when there are no
 * more.  With batches, the NULL-key rows are in a file of their own, read
 * after the last batch's unmatched rows.
 */
static const Datum *
next_unmatched(GhjState *s)
{
	while (s->probe.inner_pos < s->build.ninner + s->build.n_nullkey)
	{
		uint32		p = s->probe.inner_pos++;

		CHECK_FOR_INTERRUPTS();
		if (p >= s->build.ninner)
			return &s->build.nullkey_recs[(size_t) (p - s->build.ninner) * s->stride];
		if ((s->build.matched[p / 32] & (1U << (p % 32))) == 0)
			return &s->build.inner_recs[(size_t) p * s->stride];
	}
	if (s->batch.nullkey_file != NULL && s->batch.curbatch == s->batch.nbatch - 1)
		return ghj_batch_read_nullkey(s);
	return NULL;
}

/* ghj_next_unmatched_inner emits inner rows no outer row matched. */
TupleTableSlot *
ghj_next_unmatched_inner(GhjState *s, ExprContext *econtext)
{
	const Datum *rec;

	while ((rec = next_unmatched(s)) != NULL)
	{
		TupleTableSlot *result;

		CHECK_FOR_INTERRUPTS();
		ghj_reset(econtext);
		ghj_load_inner(s, rec);
		econtext->ecxt_outertuple = s->null_outer;
		econtext->ecxt_innertuple = s->inner_slot;
		result = ghj_emit(s, econtext);
		if (result)
			return result;
	}
	return NULL;
}

/*
 * ghj_probe_batch returns the next joined row of the current batch, or NULL
 * when the batch is done: it visits the batch's rows in order (cur), each
 * row's candidates (cur_cand), and, for joins that emit unmatched outer
 * rows, the null-extended row of an outer row no candidate matched.
 */
TupleTableSlot *
ghj_probe_batch(GhjState *s, ExprContext *econtext)
{
	while (s->probe.cur < s->probe.n_order)
	{
		uint32		i;
		bool		emit_null;

		CHECK_FOR_INTERRUPTS();
		i = s->probe.batch_order[s->probe.cur];
		if (!s->probe.cur_loaded)
		{
			/*
			 * A by-reference key (text, numeric, ...) is verified through
			 * its pointer into the arena: ask for the data of the visit
			 * GHJ_PREFETCH ahead.
			 */
			if (s->inner_key_byref && s->probe.cur + GHJ_PREFETCH < s->probe.n_order &&
				s->probe.visit_count[s->probe.cur + GHJ_PREFETCH] > 0)
			{
				PREFETCH_KEYS(s, &s->probe.visit_recs[(size_t) (s->probe.cur + GHJ_PREFETCH) *
													  s->stride]);
			}
			if (!s->direct_proj)
				ghj_load_outer(s, i);
			s->probe.cur_loaded = true;
		}
		econtext->ecxt_outertuple = s->outer_slot;
		while (s->probe.cur_cand < s->probe.visit_count[s->probe.cur])
		{
			uint32		r = s->probe.visit_first[s->probe.cur] + s->probe.cur_cand;
			const Datum *rec = s->probe.cur_cand == 0 ?
				&s->probe.visit_recs[(size_t) s->probe.cur * s->stride] :
				&s->build.inner_recs[(size_t) r * s->stride];
			MemoryContext old;
			bool		ok;

			s->probe.cur_cand++;
			s->probe.n_candidates++;
			ghj_reset(econtext);
			old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
			ok = ghj_verify(s, i, rec);
			MemoryContextSwitchTo(old);
			if (!ok)
				continue;
			if (!s->direct_proj)
			{
				ghj_load_inner(s, rec);
				econtext->ecxt_innertuple = s->inner_slot;
				if (s->joinqual && !ExecQual(s->joinqual, econtext))
					continue;
			}

			s->probe.n_matches++;
			s->probe.cur_matched = true;
			if (s->build.matched)
				s->build.matched[r / 32] |= 1U << (r % 32);
			if (s->jointype == JOIN_ANTI || s->single_match)
				s->probe.cur_cand = s->probe.visit_count[s->probe.cur];
			if (s->jointype == JOIN_ANTI)
				break;
			if (s->direct_proj)
				return ghj_emit_direct(s, i, rec);
			{
				TupleTableSlot *result = ghj_emit(s, econtext);

				if (result)
					return result;
			}
		}

		/* outer row i is done */
		emit_null = !s->probe.cur_matched &&
			(s->jointype == JOIN_LEFT || s->jointype == JOIN_FULL ||
			 s->jointype == JOIN_ANTI);
		s->probe.cur++;
		s->probe.cur_cand = 0;
		s->probe.cur_loaded = false;
		s->probe.cur_matched = false;
		if (emit_null)
		{
			TupleTableSlot *result;

			ghj_reset(econtext);
			if (s->direct_proj)
				ghj_load_outer(s, i);
			econtext->ecxt_innertuple = s->null_inner;
			result = ghj_emit(s, econtext);
			if (result)
				return result;
		}
	}
	return NULL;
}

/*
 * ghj_probe_batch_direct is ghj_probe_batch for the joins that
 * ghj_probe_direct_ok accepts: inner and semi joins projected directly,
 * whose keys compare in line.  Every visit has candidates and nothing is
 * evaluated, so the loop reads the batch and the records and fills the
 * result slot, with no slot of either side, no memory context and no
 * per-row bookkeeping for unmatched rows.  A GPU join's time per matched
 * row is mostly this loop and the plan above it.
 */
TupleTableSlot *
ghj_probe_batch_direct(GhjState *s)
{
	const uint32 stride = s->stride;

	while (s->probe.cur < s->probe.n_order)
	{
		uint32		cur = s->probe.cur;
		uint32		count = s->probe.visit_count[cur];
		uint32		i = s->probe.batch_order[cur];

		/* a long key that gather_first did not copy: ask for it ahead */
		if (s->inner_key_byref && s->probe.cur_cand == 0 &&
			cur + GHJ_PREFETCH < s->probe.n_order)
		{
			PREFETCH_KEYS(s, &s->probe.visit_recs[(size_t) (cur + GHJ_PREFETCH) * stride]);
		}
		while (s->probe.cur_cand < count)
		{
			uint32		cand = s->probe.cur_cand++;
			const Datum *rec = cand == 0 ?
				&s->probe.visit_recs[(size_t) cur * stride] :
				&s->build.inner_recs[(size_t) (s->probe.visit_first[cur] + cand) * stride];

			s->probe.n_candidates++;
			if (!ghj_verify(s, i, rec))
				continue;
			s->probe.n_matches++;
			if (s->single_match)
				s->probe.cur_cand = count;
			return ghj_emit_direct(s, i, rec);
		}
		s->probe.cur++;
		s->probe.cur_cand = 0;
		if ((s->probe.cur & 0x3ff) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	return NULL;
}

/*
 * ghj_reset_probe forgets the current batch and the end of the outer side,
 * for a rescan: the next batch comes from the outer side read again.
 */
void
ghj_reset_probe(GhjState *s)
{
	s->probe.batch_n = 0;
	s->probe.n_order = 0;
	s->probe.cur = 0;
	s->probe.cur_cand = 0;
	s->probe.cur_loaded = false;
	s->probe.cur_matched = false;
	s->probe.outer_done = false;
	s->probe.inner_pos = 0;
	s->probe.probe_marked = false;
}

