/*-------------------------------------------------------------------------
 * join_build.c
 *	  The build of GpuHashJoin: the inner row store and the table.
 *
 * BUILD: the first call runs the inner child to completion.  Each inner row
 * with no NULL key becomes a record of Datums (its key values, its column
 * values, a null bitmap; its position is its row index), and its 64-bit row
 * hash is computed with the keys' extended hash functions (keys.c).  Rows
 * with a NULL key can never match; right and full joins keep them to emit
 * at the end.  The hashes go to the device, which builds the static
 * multimap (hashtable.c); the records are then regrouped into the table's
 * hash-group order, their by-reference data into one arena in the same
 * order, so that the probe (join_probe.c) reads a probe row's candidates as
 * consecutive records.
 *
 * The store holds at most the join's budget, work_mem *
 * hash_mem_multiplier (join_batch.c): past it, the rows are split into
 * batches by hash bits, the store keeps those of the current batch and the
 * others go to temp files, each batch later built the same way.  With a
 * single batch nothing of that runs per row beyond a budget check.
 *
 * The inner side is read by this process alone (ghj_build_private), or,
 * in a parallel join whose plan asks for it, together with the other
 * participants into one shared store that all of them probe
 * (ghj_build_shared; see join_parallel.c).  Either way the build ends in
 * ghj_finish_build, which is where the device is first needed: a GPU join's
 * CUDA context has been in the making since executor start-up, overlapping
 * the inner scan.  A table built on the CPU twin while the context was not
 * ready yet moves to the GPU once it is (ghj_move_to_gpu); one made by the
 * GPU service lives in the service.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/executor.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/memutils.h"

#include "join_exec.h"

static Size record_byref_size(GhjState *s, const Datum *rec);
static void store_columns(GhjState *s, TupleTableSlot *slot, Datum *rec,
						  MemoryContext cxt);
static inline Datum arena_copy(char *arena, Size *used, Datum v, int16 typlen);
static void ghj_regroup(GhjState *s);
static GhTable *ghj_service_table(GhjState *s, uint64 *hashes, bool grouped);
static void ghj_make_table(GhjState *s, uint64 *hashes, bool grouped);
static void ghj_note_fallback(GhjState *s, GhFallback why);
static void ghj_store_grow(GhjState *s);
static void ghj_route_inner(GhjState *s, ExprContext *econtext,
							TupleTableSlot *slot, bool keep_nullkeys);
static TupleTableSlot *ghj_next_inner(GhjState *s, ExprContext *econtext);
static void too_many_inner_rows(void) pg_attribute_noreturn();
static void ghj_load_shared(GhjState *s);
static void ghj_shared_table(GhjState *s);
static void ghj_build_parts(GhjState *s, int phase);
static void ghj_build_shared(GhjState *s);
static void ghj_build_private(GhjState *s);

/* record_byref_size is the arena room a record's by-reference values take. */
static Size
record_byref_size(GhjState *s, const Datum *rec)
{
	Size		bytes = 0;

	for (int j = 0; j < s->nbyref_pos; j++)
	{
		int			k = s->byref_pos[j];
		int16		typlen;

		(void) byref_attr(s, k, &typlen);
		if (!byref_null(s, rec, k))
			bytes += byref_size(rec[k], typlen);
	}
	return bytes;
}

/*
 * store_columns copies the inner row in slot into a record: the values of the
 * columns the record keeps after the keys, then a null bitmap.  By-reference
 * values are copied into cxt, or with cxt NULL left pointing into the slot's
 * row (valid until the slot's next row).
 */
static void
store_columns(GhjState *s, TupleTableSlot *slot, Datum *rec, MemoryContext cxt)
{
	Datum	   *vals = rec + s->nkeys;
	uint64	   *nulls = (uint64 *) (vals + s->ninner_cols);

	slot_getsomeattrs(slot, s->inner_deform);
	memset(nulls, 0, sizeof(uint64) * s->nullwords);
	for (int c = 0; c < s->ninner_cols; c++)
	{
		int			a = s->inner_col[c];

		if (slot->tts_isnull[a])
		{
			vals[c] = (Datum) 0;
			nulls[c / 64] |= UINT64CONST(1) << (c % 64);
		}
		else if (s->inner_attbyval[c] || cxt == NULL)
			vals[c] = slot->tts_values[a];
		else
		{
			MemoryContext old = MemoryContextSwitchTo(cxt);

			vals[c] = datumCopy(slot->tts_values[a], false, s->inner_attlen[c]);
			MemoryContextSwitchTo(old);
		}
	}
}

/* arena_copy moves a by-reference value into the arena. */
static inline Datum
arena_copy(char *arena, Size *used, Datum v, int16 typlen)
{
	Size		len = datumGetSize(v, false, typlen);
	char	   *dst = arena + *used;

	memcpy(dst, DatumGetPointer(v), len);
	*used += MAXALIGN(len);
	return PointerGetDatum(dst);
}

/*
 * ghj_regroup reorders the inner records into the order of the table's row
 * array, which groups rows by hash, and moves their by-reference data into
 * one arena in the same order.  From then on the candidates of a probe row
 * are the records first .. first + count - 1 themselves, and a batch visited
 * in the order of its first candidates reads the inner side front to back.
 */
static void
ghj_regroup(GhjState *s)
{
	const uint32 *rows = s->build.table->rows;
	size_t		stride = s->stride;
	Datum	   *recs;
	char	   *arena = NULL;
	Size		used = 0;

	/*
	 * Every hash distinct (the usual inner side of a key join): the table
	 * grouped row i as group i, so the records already are in its order and
	 * their by-reference data stays where the build put it, in scan order.
	 */
	if (s->build.table->rows_identity)
	{
		gh_table_drop_rows(s->build.table);
		return;
	}

	/* cache-line aligned, so that no record of 64 bytes or less straddles two */
	recs = palloc_extended(sizeof(Datum) * Max(s->build.ninner, 1) * stride + 64,
						   MCXT_ALLOC_HUGE);
	recs = (Datum *) TYPEALIGN(64, recs);
	gh_advise_huge(recs, sizeof(Datum) * s->build.ninner * stride);
	if (s->build.byref_bytes > 0)
	{
		arena = palloc_extended(s->build.byref_bytes, MCXT_ALLOC_HUGE);
		gh_advise_huge(arena, s->build.byref_bytes);
	}
	for (uint32 j = 0; j < s->build.ninner; j++)
	{
		Datum	   *dst = &recs[j * stride];

		if (j + 8 < s->build.ninner)
			__builtin_prefetch(&s->build.inner_recs[(size_t) rows[j + 8] * stride]);
		memcpy(dst, &s->build.inner_recs[(size_t) rows[j] * stride],
			   sizeof(Datum) * stride);
		if (arena)
		{
			for (int k = 0; k < s->nkeys + s->ninner_cols; k++)
			{
				int16		typlen;

				if (byref_attr(s, k, &typlen) && !byref_null(s, dst, k))
					dst[k] = arena_copy(arena, &used, dst[k], typlen);
			}
		}
		if ((j & 0xffff) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	Assert(used <= s->byref_bytes);
	s->build.inner_recs = recs;
	ghj_batch_note_peak(s, 0);	/* both copies of the store */
	MemoryContextReset(s->build_tmp_cxt);
	gh_table_drop_rows(s->build.table);
}

/*
 * ghj_service_table has the GPU service make the join's table: one for all
 * the participants of a shared build (see join_parallel.c), else its own.
 */
static GhTable *
ghj_service_table(GhjState *s, uint64 *hashes, bool grouped)
{
	GhjShared  *sh = s->par.shared;
	GhTable    *t = NULL;
	bool		identity = false;
	uint32		peer;

	if (!s->build.store_shared)
		return gh_table_build_service(hashes, s->build.ninner, s->probe.batch_cap, 0, false,
									  false, NULL);

	s->build.svc_builder = ghj_shared_table_claim(sh);
	if (s->build.svc_builder)
	{
		bool		attached;
		dsm_segment *xchg = ghj_shared_exchange(s, hashes, &attached);

		PG_TRY();
		{
			t = gh_table_build_service(hashes, s->build.ninner, s->probe.batch_cap, 0, true,
									   false, xchg);
		}
		PG_CATCH();
		{
			ghj_shared_table_failed(sh);
			PG_RE_THROW();
		}
		PG_END_TRY();
		if (attached)
			dsm_detach(xchg);
		/* every participant has written its range: the next build may take it */
		gh_table_release_exchange(sh->xchg_token);
		ghj_shared_table_built(sh, gh_table_service_id(t), t->rows_identity);
		return t;
	}

	/*
	 * A view of the peer's table; its own if that one is gone or failed.
	 * While the peer builds, this participant maps the store's pages.
	 */
	ghj_shared_prefault(s);
	peer = ghj_shared_table_wait(sh, &identity);
	t = gh_table_build_service(hashes, s->build.ninner, s->probe.batch_cap, peer, false,
							   identity, NULL);

	/*
	 * From regrouped hashes, the table's groups must be the store's: a view
	 * of the service table whose row array is the store's order has them,
	 * else only a grouped build promises them.  The service builds no
	 * grouped tables, so this backend does.
	 */
	if (grouped && !ghj_shared_in_order(s, t))
	{
		gh_table_free(t);
		t = gh_table_build_grouped(gpuhash_exec_target(), hashes, s->build.ninner);
	}
	return t;
}

/*
 * ghj_make_table makes the device ready and builds the table of the row
 * store's ninner hashes (grouped: equal hashes adjacent, see
 * gh_table_build_grouped).  Only now: a GPU join's context has been in the
 * making on a thread since executor start-up (gpuhash_prewarm_gpu), so the
 * inner scan overlapped it; what is left of it is Context Wait.
 */
static void
ghj_make_table(GhjState *s, uint64 *hashes, bool grouped)
{
	GhTableWhere where;
	MemoryContext old;
	instr_time	ctx_start;
	GhFallback	why = GH_FB_NONE;

	INSTR_TIME_SET_CURRENT(ctx_start);
	gh_table_where(s->css.ss.ps.plan->parallel_aware, &where);
	s->build.target = where.target;
	s->build.gpu_later = where.gpu_later;
	s->build.context_ms += gh_ms_since(ctx_start);

	old = MemoryContextSwitchTo(s->build_cxt);
	if (where.service)
		s->build.table = ghj_service_table(s, hashes, grouped);
	else if (grouped)
		s->build.table = gh_table_build_grouped(s->build.target, hashes, s->build.ninner);
	else
		s->build.table = gh_table_build(s->build.target, hashes, s->build.ninner);
	s->build.target = s->build.table->target;	/* the CPU twin if the GPU had no room */
	MemoryContextSwitchTo(old);

	/*
	 * Where the table went, against where it was to go.  Under the test-only
	 * gpuhash.budget_cpu_twin the twin's table stands for the GPU's, so one
	 * that the GPU's limits would have refused counts as fallen back (it
	 * stays where the GPU's fallback would have put it).
	 */
	if (where.target == GH_TARGET_GPU && s->build.target != GH_TARGET_GPU)
		why = gh_table_fits_device((double) s->build.ninner) ?
			GH_FB_DEVICE_MEMORY : GH_FB_TABLE_LIMIT;
	else if (where.target == GH_TARGET_CPU && !where.service && !where.gpu_later)
		why = gpuhash_exec_fallback();
	if (why == GH_FB_NONE && where.target == GH_TARGET_CPU &&
		gpuhash_budget_cpu_twin && !gh_table_fits_device((double) s->build.ninner))
		why = GH_FB_TABLE_LIMIT;
	ghj_note_fallback(s, why);
}

/*
 * ghj_note_fallback reports a fallback of the join's table to the CPU twin
 * (monitor.c's LOG line) and keeps the run's first for the statistics.
 */
static void
ghj_note_fallback(GhjState *s, GhFallback why)
{
	if (why == GH_FB_NONE)
		return;
	gh_mon_fallback(GH_PLAN_JOIN, why);
	if (s->build.fallback == GH_FB_NONE)
		s->build.fallback = why;
}

/*
 * ghj_finish_build builds the table of a private row store's hashes
 * (freeing them) and regroups the store.
 */
void
ghj_finish_build(GhjState *s, uint64 *hashes, bool keep_nullkeys)
{
	MemoryContext old;

	/*
	 * Growing stopped (see join_batch.c): this batch of a private build is
	 * as large as its rows' shared hash bits make it, whatever the budget.
	 */
	if (s->build.store_cap > 0 && !s->batch.grow_enabled &&
		ghj_batch_store_bytes(s, s->build.store_cap) > s->batch.store_limit)
		s->batch.over_budget |= GHJ_OVER_SKEW;

	ghj_make_table(s, hashes, false);
	s->build.dev_peak = Max(s->build.dev_peak, s->build.table->mem_bytes);
	ghj_batch_note_peak(s, 0);
	old = MemoryContextSwitchTo(s->build_cxt);
	pfree(hashes);
	s->build.store_hashes = NULL;
	ghj_regroup(s);
	if (keep_nullkeys)
		s->build.matched = palloc_extended(sizeof(uint32) * ((s->build.ninner + 31) / 32 + 1),
											MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	MemoryContextSwitchTo(old);
	s->build.built = true;
	s->build.n_builds++;
}

/*
 * ghj_free_table frees the table, the inner store and the outer batch's
 * arrays: at the end of each of the join's batches, and at its end.
 */
void
ghj_free_table(GhjState *s)
{
	if (s->build.table)
	{
		s->build.dev_ms_done += s->build.table->device_ms;
		gh_table_free(s->build.table);
	}
	s->build.table = NULL;
	if (s->probe.batch_hashes && !s->probe.batch_in_table)
	{
		gh_dev_free(s->probe.batch_hashes);
		gh_dev_free(s->probe.batch_first);
		gh_dev_free(s->probe.batch_count);
	}
	s->probe.batch_in_table = false;
	s->probe.batch_hashes = NULL;
	s->probe.batch_first = NULL;
	s->probe.batch_count = NULL;
	s->probe.batch_vals = NULL;
	s->probe.batch_isnull = NULL;
	s->probe.batch_keys = NULL;
	s->probe.batch_null = NULL;
	s->probe.batch_order = NULL;
	s->probe.visit_first = NULL;
	s->probe.visit_count = NULL;
	s->probe.visit_recs = NULL;
	s->probe.visit_bytes = NULL;
	s->build.inner_recs = NULL;
	if (s->build.store_shared)
		memset(s->build.rec_base, 0, sizeof(Datum) * (s->nkeys + s->ninner_cols));
	s->build.store_shared = false;
	s->par.order_provider = false;
	s->build.store_hashes = NULL;
	s->build.store_cap = 0;
	s->build.nullkey_recs = NULL;
	s->build.matched = NULL;
	s->build.ninner = 0;
	s->build.n_nullkey = 0;
	s->build.byref_bytes = 0;
	s->build.built = false;
	MemoryContextReset(s->batch_cxt);
	MemoryContextReset(s->build_tmp_cxt);
	MemoryContextReset(s->build_cxt);
}

/*
 * ghj_move_to_gpu moves a table built on the CPU twin, while this backend's
 * CUDA context was still in the making, to the GPU now that the context is
 * there.  It stays on the CPU twin if the GPU has no room for it.
 */
void
ghj_move_to_gpu(GhjState *s)
{
	s->build.gpu_later = false;
	if (gpuhash_exec_target() != GH_TARGET_GPU)
		ghj_note_fallback(s, gpuhash_exec_fallback());
	else if (gh_table_move_to_gpu(s->build.table))
		s->build.target = GH_TARGET_GPU;
	else
		ghj_note_fallback(s, gh_table_fits_device((double) s->build.table->mm.nrows) ?
						  GH_FB_DEVICE_MEMORY : GH_FB_TABLE_LIMIT);
}

/* ghj_next_inner fetches the next inner row into econtext, or NULL at the end. */
static TupleTableSlot *
ghj_next_inner(GhjState *s, ExprContext *econtext)
{
	TupleTableSlot *slot;

	CHECK_FOR_INTERRUPTS();
	slot = s->parts.curpart >= 0 ? ghj_parts_next_tuple(s, true) :
		ExecProcNode(s->inner_ps);
	if (TupIsNull(slot))
		return NULL;
	ghj_reset(econtext);
	econtext->ecxt_innertuple = slot;
	return slot;
}

/*
 * too_many_inner_rows reports an inner side too large for the table, whose
 * row indices are 32-bit.
 */
static void
too_many_inner_rows(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("inner side of GpuHashJoin has more than %u rows",
					(unsigned) GH_MAX_ROWS),
			 errhint("SET gpuhash.enabled = off to run the join without gpuhash.")));
}

/*
 * ghj_load_shared reads this participant's share of the inner side into
 * chunks (GHJ_PH_LOAD), which it later copies into the shared store; or,
 * once the participants' chunks pass their budget, into partitions.
 */
static void
ghj_load_shared(GhjState *s)
{
	ExprContext *econtext = s->css.ss.ps.ps_ExprContext;
	Datum	   *tmp = palloc(sizeof(Datum) * s->stride);
	bool		spilling = false;

	for (;;)
	{
		TupleTableSlot *slot;
		bool		hasnull;
		uint64		h;
		Size		grown;

		if ((slot = ghj_next_inner(s, econtext)) == NULL)
			break;
		slot_getsomeattrs(slot, s->inner_deform);

		/*
		 * By-reference keys and columns stay where they are, in the slot's
		 * row or the per-tuple memory, until ghj_shared_add copies them into
		 * the chunk: one copy, not two.
		 */
		h = gh_key_hash_row(&s->inner_keys, econtext, slot, tmp, NULL, &hasnull);
		if (hasnull)
			continue;			/* never matches; no right or full join here */
		if (spilling)
		{
			ghj_parts_put_inner(s, slot, h);
			continue;
		}
		store_columns(s, slot, tmp, NULL);
		grown = ghj_shared_add(s, tmp, h,
							   s->inner_has_byref ? record_byref_size(s, tmp) : 0);
		/* past the participants' budget: partitions (join_parts.c) */
		if (grown > 0)
			spilling = ghj_parts_check(s, grown);
	}
	ghj_batch_note_peak(s, 0);	/* this participant's chunks */
	pfree(tmp);
	ghj_reset(econtext);
}

/*
 * ghj_shared_table builds this participant's table from the shared store's
 * hashes (GHJ_PH_TABLES); if some hash repeats, it offers its row array as
 * the store's order.
 */
static void
ghj_shared_table(GhjState *s)
{
	ghj_shared_map(s);
	ghj_make_table(s, ghj_shared_hashes(s), false);
	ghj_shared_exchange_end(s);
	if (!s->build.table->rows_identity)
		ghj_shared_offer_order(s, s->build.table->rows, gh_table_shared(s->build.table));
	gh_table_drop_rows(s->build.table);
}

/*
 * ghj_next_part moves this participant to the next partition of a shared
 * build that spilled (ghj_parts_next) and, if it got one, frees the last
 * partition's table and forgets its batches: the partition is joined as a
 * private build of its own.  False when none is left; the last table then
 * stays, for EXPLAIN.
 */
bool
ghj_next_part(GhjState *s)
{
	if (!ghj_parts_next(s))
		return false;
	s->batch.nbatch_seen = Max(s->batch.nbatch_seen,
							   Max(s->batch.nbatch, s->batch.nbatch_original));
	ghj_free_table(s);
	ghj_batch_end(s);
	return true;
}

/*
 * ghj_build_parts goes on with a shared build that spilled to partitions
 * (join_parts.c), from phase on: a participant attached in time writes its
 * share of the outer side and waits for the others; then each claims a
 * partition and builds its private table from the partition's inner rows.
 * With none left to claim, this participant's join has no rows.
 */
static void
ghj_build_parts(GhjState *s, int phase)
{
	instr_time	t0;

	INSTR_TIME_SET_CURRENT(t0);
	ghj_shared_exchange_end(s);
	ghj_parts_write_outer(s, phase == GHJ_PH_ALLOCATE);
	ghj_batch_note_peak(s, 0);
	if (phase == GHJ_PH_ALLOCATE)
		(void) ghj_shared_next_phase(s);
	ghj_shared_detach(s);
	ghj_elapsed_ms(&t0, &s->build.store_ms);
	s->build.n_builds++;
	if (ghj_next_part(s))
		ghj_build_private(s);
	else
	{
		s->build.built = true;
		s->probe.outer_done = true;
	}
}

/*
 * The milestones of a participant's shared build, for its DEBUG2 account
 * (build_trace): where the phases' waits and serial steps went, which
 * EXPLAIN's three phase times sum up.  Times are CLOCK_MONOTONIC's, the
 * same in every process of the host, so the participants' accounts line up.
 */
typedef enum BuildMark
{
	BM_ATTACH,					/* attached to the build barrier */
	BM_PREALLOC,				/* the early store allocated (or not) */
	BM_LOADED,					/* its share of the inner side read */
	BM_ALLOCATED,				/* everyone loaded, the store allocated */
	BM_COMPACTED,				/* its chunks copied into the store */
	BM_STORED,					/* everyone compacted */
	BM_TABLE,					/* its table built or viewed */
	BM_TABLES,					/* everyone has a table */
	BM_DONE,					/* regrouped, mapped, built */
	BM_COUNT
} BuildMark;

static const char *const build_mark_names[BM_COUNT] = {
	"attach", "prealloc", "load", "allocate", "compact", "compact wait",
	"table", "table wait", "done"
};

typedef struct BuildTrace
{
	instr_time	at[BM_COUNT];
	bool		set[BM_COUNT];
} BuildTrace;

static inline void
build_mark(BuildTrace *tr, BuildMark m)
{
	INSTR_TIME_SET_CURRENT(tr->at[m]);
	tr->set[m] = true;
}

/*
 * build_trace writes a participant's DEBUG2 account of its shared build:
 * when it attached (ms of the host's monotonic clock), the phase it found,
 * the rows it loaded, and the ms from each milestone to the next.
 */
static void
build_trace(GhjState *s, BuildTrace *tr, int phase, uint64 nrows)
{
	StringInfoData buf;
	instr_time	prev = tr->at[BM_ATTACH];

	if (!message_level_is_interesting(DEBUG2))
		return;
	initStringInfo(&buf);
	for (int m = BM_ATTACH + 1; m < BM_COUNT; m++)
	{
		instr_time	d;

		if (!tr->set[m])
			continue;
		d = tr->at[m];
		INSTR_TIME_SUBTRACT(d, prev);
		appendStringInfo(&buf, ", %s %.1f", build_mark_names[m],
						 INSTR_TIME_GET_MILLISEC(d));
		prev = tr->at[m];
	}
	appendStringInfo(&buf, "; exchange %s",
					 s->par.shared->xchg == DSM_HANDLE_INVALID ? "none" :
					 s->par.shared->xchg_token != 0 ? "service's" : "query's");
	if (s->build.table && gh_table_shared(s->build.table))
	{
		double		ms[GH_SVC_TIMES];

		gh_table_service_times(ms);
		appendStringInfo(&buf, "; service %s %.1f (map %.1f, area %.1f, table %.1f: memory %.1f, copy %.1f, build %.1f)",
						 s->build.svc_builder ? "build" : "view", ms[0], ms[1], ms[2],
						 ms[3], ms[4], ms[5], ms[6]);
	}
	elog(DEBUG2, "GpuHashJoin shared build: participant %d at %.3f ms, phase %d, %llu rows%s",
		 IsParallelWorker() ? ParallelWorkerNumber + 1 : 0,
		 INSTR_TIME_GET_MILLISEC(tr->at[BM_ATTACH]), phase,
		 (unsigned long long) nrows, buf.data);
	pfree(buf.data);
}

/*
 * ghj_build_shared is the build of a parallel join whose participants read
 * the inner side together into one shared store (join_parallel.c walks
 * through the phases).  A participant joins the phase it finds; at the end
 * it has mapped the final store and holds a table whose groups are in the
 * store's order.
 */
static void
ghj_build_shared(GhjState *s)
{
	instr_time	t0;
	int			phase;
	int			found;
	uint64		loaded = 0;
	BuildTrace	tr;

	memset(&tr, 0, sizeof(tr));
	INSTR_TIME_SET_CURRENT(t0);
	build_mark(&tr, BM_ATTACH);
	phase = found = ghj_shared_attach(s);
	if (phase == GHJ_PH_LOAD)
	{
		ghj_shared_preallocate(s);
		build_mark(&tr, BM_PREALLOC);
		ghj_load_shared(s);
		ghj_elapsed_ms(&t0, &s->build.load_ms);
		build_mark(&tr, BM_LOADED);
		/* the service maps its probe area while the participants compact */
		if (!ghj_parts_spilling(s))
			gh_table_service_send_area(s->probe.batch_cap);
		if (ghj_shared_loaded(s, &loaded))
			ghj_shared_allocate(s, ghj_parts_spilling(s));
		phase = GHJ_PH_ALLOCATE;
	}
	if (ghj_parts_spilling(s))
	{
		ghj_build_parts(s, phase);
		return;
	}
	switch (phase)
	{
		case GHJ_PH_ALLOCATE:
			(void) ghj_shared_next_phase(s);
			build_mark(&tr, BM_ALLOCATED);
			/* FALLTHROUGH */
		case GHJ_PH_COMPACT:
			if (ghj_shared_nrows(s) > GH_MAX_ROWS)
				too_many_inner_rows();
			ghj_shared_compact(s);
			build_mark(&tr, BM_COMPACTED);
			(void) ghj_shared_next_phase(s);
			ghj_elapsed_ms(&t0, &s->build.store_ms);
			build_mark(&tr, BM_STORED);
			/* FALLTHROUGH */
		case GHJ_PH_TABLES:
			ghj_shared_table(s);
			ghj_elapsed_ms(&t0, &s->build.table_ms);
			build_mark(&tr, BM_TABLE);
			(void) ghj_shared_next_phase(s);
			build_mark(&tr, BM_TABLES);
			/* FALLTHROUGH */
		case GHJ_PH_REGROUP:
			ghj_shared_regroup(s);
			if (ghj_shared_next_phase(s))
				ghj_shared_regrouped(s);
			/* FALLTHROUGH */
		default:
			break;
	}
	ghj_shared_detach(s);
	ghj_elapsed_ms(&t0, &s->build.store_ms);

	ghj_shared_map(s);
	if (s->build.table != NULL && !ghj_shared_in_order(s, s->build.table))
	{
		gh_table_free(s->build.table);
		s->build.table = NULL;
	}
	if (s->build.table == NULL)
		ghj_make_table(s, ghj_shared_hashes(s), s->par.shared->regroup);
	ghj_elapsed_ms(&t0, &s->build.table_ms);
	build_mark(&tr, BM_DONE);
	build_trace(s, &tr, found, loaded);
	s->build.built = true;
	s->build.n_builds++;
}

/*
 * ghj_store_grow makes room for more records in the inner store: twice as
 * many, or as many as the budget still allows.  When the budget allows too
 * few more, the join's batches double instead (join_batch.c), which moves
 * rows out; arrays grow past the budget only once growing batches stopped
 * splitting the rows (skew).
 */
static void
ghj_store_grow(GhjState *s)
{
	uint32		cap = s->build.store_cap;
	uint32		newcap;

	if (cap >= GH_MAX_ROWS)
		too_many_inner_rows();
	newcap = (uint32) Min((uint64) Max(cap, 32) * 2, (uint64) GH_MAX_ROWS);
	if (s->batch.grow_enabled)
	{
		/* no more than the budget and the device allow, in steps of cap / 8 */
		while (newcap - cap > cap / 8 &&
			   (ghj_batch_store_bytes(s, newcap) > s->batch.store_limit ||
				(!s->batch.table_on_host && !gh_table_fits_device(newcap))))
			newcap = cap + (newcap - cap) / 2;
		if (newcap - cap <= cap / 8)
		{
			ghj_batch_increase(s);
			if (s->build.ninner < s->build.store_cap)
				return;
			newcap = (uint32) Min((uint64) cap * 2, (uint64) GH_MAX_ROWS);
		}
	}
	s->build.inner_recs = repalloc_huge(s->build.inner_recs,
										sizeof(Datum) * newcap * s->stride);
	s->build.store_hashes = repalloc_huge(s->build.store_hashes, sizeof(uint64) * newcap);
	s->build.store_cap = newcap;
}

/*
 * ghj_store_row adds the record rec of hash hash to the inner store,
 * copying its by-reference values into the store's context (rec may be
 * anywhere else).  Used once the join has batches; a single batch stores
 * rows in place (ghj_build_private).
 */
void
ghj_store_row(GhjState *s, const Datum *rec, uint64 hash)
{
	Datum	   *dst;

	if (s->build.ninner == s->build.store_cap)
	{
		int			was = s->batch.nbatch;

		ghj_store_grow(s);
		/* more batches: the row may now belong to a later one */
		if (s->batch.nbatch != was && ghj_batch_of(s, hash) != s->batch.curbatch)
		{
			ghj_batch_save_inner(s, ghj_batch_of(s, hash), rec, hash);
			return;
		}
	}
	dst = &s->build.inner_recs[(size_t) s->build.ninner * s->stride];
	memcpy(dst, rec, sizeof(Datum) * s->stride);
	if (s->inner_has_byref)
	{
		MemoryContext old = MemoryContextSwitchTo(s->build_tmp_cxt);

		for (int k = 0; k < s->nkeys + s->ninner_cols; k++)
		{
			int16		typlen;

			if (byref_attr(s, k, &typlen) && !byref_null(s, dst, k))
			{
				dst[k] = datumCopy(dst[k], false, typlen);
				s->build.byref_bytes += byref_size(dst[k], typlen);
			}
		}
		MemoryContextSwitchTo(old);
	}
	s->build.store_hashes[s->build.ninner++] = hash;

	/* by-reference data too can take the store past its limit */
	if (s->batch.grow_enabled && (s->build.ninner & 15) == 0 &&
		ghj_batch_store_bytes(s, s->build.store_cap) > s->batch.store_limit)
		ghj_batch_increase(s);
}

/*
 * ghj_route_inner sends the inner row in slot, once the join has batches,
 * to the store if it belongs to the current batch, else to its batch's
 * file; a row with a NULL key to the NULL-key file if the join emits it.
 */
static void
ghj_route_inner(GhjState *s, ExprContext *econtext, TupleTableSlot *slot,
				bool keep_nullkeys)
{
	Datum	   *rec = s->batch.spill_rec;
	bool		hasnull;
	uint64		h;

	/* evaluated into scratch, by-reference values in per-tuple memory */
	h = gh_key_hash_row(&s->inner_keys, econtext, slot, rec,
						econtext->ecxt_per_tuple_memory, &hasnull);
	if (hasnull && !keep_nullkeys)
		return;
	s->build.n_inner_read++;
	if (hasnull)
		memset(rec, 0, sizeof(Datum) * s->nkeys);
	store_columns(s, slot, rec, econtext->ecxt_per_tuple_memory);
	if (hasnull)
		ghj_batch_save_nullkey(s, rec);
	else if (ghj_batch_of(s, h) != s->batch.curbatch)
		ghj_batch_save_inner(s, ghj_batch_of(s, h), rec, h);
	else
		ghj_store_row(s, rec, h);
}

/*
 * ghj_build_private is the build of a process reading the whole inner side.
 * While the join has one batch, rows are stored in place as they are read;
 * once it has more (from the start, for a large estimate, or when the store
 * passes its limit), each row goes to the store or to its batch's file
 * (join_batch.c).  The table is built for batch 0.
 */
static void
ghj_build_private(GhjState *s)
{
	ExprContext *econtext = s->css.ss.ps.ps_ExprContext;
	uint32		cap;
	uint32		nullcap = 0;
	bool		keep_nullkeys = (s->jointype == JOIN_RIGHT ||
								 s->jointype == JOIN_FULL);
	MemoryContext old;

	ghj_batch_init(s);

	/*
	 * Size the arrays for the planner's estimate, to spare most regrowing,
	 * but no more than 4M rows ahead of seeing them (estimates can be far
	 * off), and no more than the budget allows.  Records are regrouped into
	 * build_cxt once the table exists (unless the table leaves them in
	 * place: see ghj_regroup).
	 */
	cap = (uint32) Min(Max(ghj_inner_estimate(s, NULL) * 1.1, 1024.0), 4194304.0);
	s->build.store_cap = 0;
	while (cap > 64 && (ghj_batch_store_bytes(s, cap) > s->batch.store_limit ||
						(!s->batch.table_on_host && !gh_table_fits_device(cap))))
		cap /= 2;
	old = MemoryContextSwitchTo(s->build_tmp_cxt);
	s->build.inner_recs = palloc_extended(sizeof(Datum) * cap * s->stride, MCXT_ALLOC_HUGE);
	gh_advise_huge(s->build.inner_recs, sizeof(Datum) * cap * s->stride);
	s->build.store_hashes = palloc_extended(sizeof(uint64) * cap, MCXT_ALLOC_HUGE);
	MemoryContextSwitchTo(old);
	s->build.store_cap = cap;
	s->build.ninner = 0;
	s->build.n_nullkey = 0;
	s->build.byref_bytes = 0;
	s->build.n_inner_read = 0;

	for (;;)
	{
		TupleTableSlot *slot;
		bool		hasnull;
		uint64		h;
		Datum	   *rec;

		if ((slot = ghj_next_inner(s, econtext)) == NULL)
			break;
		slot_getsomeattrs(slot, s->inner_deform);
		if (s->batch.nbatch == 1 && s->build.ninner == s->build.store_cap)
			ghj_store_grow(s);
		if (s->batch.nbatch > 1)
		{
			ghj_route_inner(s, econtext, slot, keep_nullkeys);
			continue;
		}
		rec = &s->build.inner_recs[(size_t) s->build.ninner * s->stride];
		h = gh_key_hash_row(&s->inner_keys, econtext, slot, rec,
							s->build_tmp_cxt, &hasnull);
		if (!hasnull)
		{
			store_columns(s, slot, rec, s->build_tmp_cxt);
			if (s->inner_has_byref)
				s->build.byref_bytes += record_byref_size(s, rec);
			s->build.store_hashes[s->build.ninner++] = h;
		}
		else if (keep_nullkeys)
		{
			/* can never match; only right and full joins still emit it */
			if (s->build.n_nullkey == nullcap)
			{
				old = MemoryContextSwitchTo(s->build_cxt);
				nullcap = Max(nullcap * 2, 64);
				s->build.nullkey_recs = s->build.nullkey_recs ?
					repalloc_huge(s->build.nullkey_recs, sizeof(Datum) * s->stride * nullcap) :
					palloc(sizeof(Datum) * s->stride * nullcap);
				MemoryContextSwitchTo(old);
			}
			rec = &s->build.nullkey_recs[(size_t) s->build.n_nullkey++ * s->stride];
			memset(rec, 0, sizeof(Datum) * s->nkeys);
			store_columns(s, slot, rec, s->build_cxt);
		}
		else
			continue;
		s->build.n_inner_read++;

		/* one batch so far: is the store still within its limit? */
		if ((s->build.n_inner_read & 15) == 0 && s->batch.grow_enabled &&
			ghj_batch_store_bytes(s, s->build.store_cap) > s->batch.store_limit)
		{
			ghj_batch_increase(s);
			nullcap = 0;
		}
	}
	ghj_reset(econtext);
	ghj_batch_shrink(s);
	s->batch.nbatch_outstart = s->batch.nbatch;
	ghj_batch_note_peak(s, 0);
	ghj_finish_build(s, s->build.store_hashes, keep_nullkeys);
}

/*
 * ghj_build runs the inner side to completion and builds the table: read
 * together with the other participants where the plan asks for it and a
 * parallel segment is there, else by this process alone (the partial inner
 * path then scans the whole relation).
 */
void
ghj_build(GhjState *s)
{
	instr_time	start;

	INSTR_TIME_SET_CURRENT(start);
	if (s->parts.curpart >= 0)
		ghj_build_private(s);	/* a partition of a spilled shared build */
	else if (s->shared_build && s->par.shared != NULL &&
			 s->par.shared->store_area != DSM_HANDLE_INVALID &&
			 s->css.ss.ps.state->es_query_dsa != NULL)
		ghj_build_shared(s);
	else
		ghj_build_private(s);
	s->build.build_ms += gh_ms_since(start);
}

