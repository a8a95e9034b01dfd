/*-------------------------------------------------------------------------
 * join_parallel.c
 *	  The shared memory of a parallel GpuHashJoin: the inner side that the
 *	  participants of a shared build read together, the one service table
 *	  they may share, and their counters for EXPLAIN ANALYZE.
 *
 * PARALLELISM: a GpuHashJoin under Gather runs in every participant, each
 * with its own table and its own outer batches: the outer side is a partial
 * path, so every outer row is probed by one participant only.  The inner
 * side is read in one of two ways.  Without a shared build, each participant
 * reads the whole inner side (a full, non-partial path) and builds alone.
 * With one (GHJ_PRIV_SHARED, gpuhash.shared_build), the inner side is a
 * partial path too, the participants read it together, and they all probe
 * one read-only store of it in a DSA area of its own (the leader creates it
 * with the parallel segment), which none of them copies.  The phases of the build barrier (GHJ_PH_*, join_exec.h):
 *
 * LOAD: each participant attached in time reads its share of the inner
 *	  rows (join_build.c hashes them and fills their records) into chunks
 *	  of its own memory (ghj_shared_add): hashes, records, and the records'
 *	  by-reference data, referred to by offsets in the chunk.  Its totals
 *	  go into the shared counters when its share is read.  Nobody emits a
 *	  row before the store is complete, so no participant waits on the
 *	  barrier for one blocked on a full tuple queue.
 * ALLOCATE: one participant allocates the store from the totals: hashes,
 *	  records, and one arena for all by-reference data
 *	  (ghj_shared_allocate).  The hashes and records are usually there
 *	  already: the first participant to start loading allocated them for
 *	  the rows the planner expected while the others read their shares
 *	  (ghj_shared_preallocate), since creating that much shared memory
 *	  takes the kernel a while.
 * COMPACT: each participant that loaded rows takes a range of the store
 *	  for them and copies its chunks there, turning chunk offsets into
 *	  arena offsets (ghj_shared_compact).  Each row is copied once in all,
 *	  by the participant that read it: the store costs the participants
 *	  together what a private build costs one.  (Chunks in the DSA area
 *	  cost as much again in new shared memory, which the kernel clears and
 *	  maps page by page in every process.)
 * TABLES: each participant maps the store at its own address
 *	  (ghj_shared_map) and builds its table from the store's hashes, as it
 *	  would from its own.  Every hash distinct (a key join's usual inner
 *	  side): every table's groups are the rows in store order, and the build
 *	  is done.  Otherwise the first participant to finish offers its table's
 *	  row array as the store's order (ghj_shared_offer_order).
 * REGROUP: if so, all participants copy ranges of records and hashes into
 *	  that order (ghj_shared_regroup), and those whose tables are not in it
 *	  build them again from the grouped hashes, which gives every table the
 *	  store's groups (gh_table_build_grouped).  With the GPU service the
 *	  participants share one table (the first to ask builds it, the others
 *	  take views of it: ghj_shared_table_claim and the functions after it).
 * DONE: the store is read-only; a late participant maps it and builds its
 *	  table.
 *
 * A late participant joins the phase it finds.  A rescan of the Gather
 * starts the shared build over (ghj_shared_reinit).  This file knows the
 * layout of the records (join_exec.h) but reads no row and builds no table
 * itself.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "miscadmin.h"
#include "optimizer/optimizer.h"
#include "utils/wait_event.h"

#include "join_exec.h"

/* GhjShared.svc_state */
#define GHJ_SVC_NONE		0
#define GHJ_SVC_BUILDING	1
#define GHJ_SVC_BUILT		2
#define GHJ_SVC_FAILED		3

/*
 * A chunk (GhjChunk, join_exec.h) holds up to GHJ_CHUNK_ROWS rows and
 * GHJ_CHUNK_DATA bytes of data, less under a small budget (ghj_shared_add):
 * the participants count their chunks against the budget (join_parts.c).
 */
#define GHJ_CHUNK_ROWS 65536
#define GHJ_CHUNK_DATA (4 * 1024 * 1024)

/* Store positions one participant regroups at a time. */
#define GHJ_REGROUP_RANGE 65536

static void chunks_done(GhjState *s, uint64 *nrows, Size *nbytes);
static void free_dp(dsa_area *area, dsa_pointer *dp);
static void *store_addr(GhjState *s, dsa_pointer dp);
static uint64 prealloc_rows(GhjState *s, Size *arena);
static double prealloc_arena_row(GhjState *s);
static dsm_segment *exchange_map(GhjState *s);

/* ghj_shared_size is the room GhjShared takes for nworkers workers. */
Size
ghj_shared_size(int nworkers)
{
	return add_size(offsetof(GhjShared, stats),
					mul_size(sizeof(GhjStats), nworkers));
}

/* ghj_shared_init sets up a zeroed GhjShared for nworkers workers. */
void
ghj_shared_init(GhjShared *sh, int nworkers)
{
	sh->nworkers = nworkers;
	sh->store_area = DSM_HANDLE_INVALID;
	BarrierInit(&sh->build_barrier, 0);
	SpinLockInit(&sh->mutex);
	sh->store_hashes = InvalidDsaPointer;
	sh->store_recs = InvalidDsaPointer;
	sh->store_arena = InvalidDsaPointer;
	sh->canon_rows = InvalidDsaPointer;
	sh->group_hashes = InvalidDsaPointer;
	sh->group_recs = InvalidDsaPointer;
	pg_atomic_init_u64(&sh->next_row, 0);
	pg_atomic_init_u64(&sh->next_arena, 0);
	pg_atomic_init_u32(&sh->next_range, 0);
	sh->svc_state = GHJ_SVC_NONE;
	ConditionVariableInit(&sh->svc_cv);
	pg_atomic_init_u64(&sh->loaded_bytes, 0);
	pg_atomic_init_u32(&sh->parts_ready, 0);
	pg_atomic_init_u32(&sh->next_part, 0);
	sh->parts = InvalidDsaPointer;
}

/* free_dp frees *dp if it is valid, and forgets it. */
static void
free_dp(dsa_area *area, dsa_pointer *dp)
{
	if (DsaPointerIsValid(*dp))
		dsa_free(area, *dp);
	*dp = InvalidDsaPointer;
}

/*
 * ghj_shared_create_area creates the store's DSA area (GhjShared.store_area)
 * for a shared build, in the leader as it sets up the parallel segment; the
 * leader keeps it attached until the join ends (ghj_shared_end), so that it
 * outlives every participant that might still map the store.  The workers
 * attach it when they first need it (store_area).
 */
void
ghj_shared_create_area(GhjState *s)
{
	MemoryContext old = MemoryContextSwitchTo(s->css.ss.ps.state->es_query_cxt);

	s->par.store_area = dsa_create(LWTRANCHE_PARALLEL_QUERY_DSA);
	MemoryContextSwitchTo(old);
	s->par.shared->store_area = dsa_get_handle(s->par.store_area);
}

/* store_area is the store's DSA area, attached on first use. */
static dsa_area *
store_area(GhjState *s)
{
	if (s->par.store_area == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(s->css.ss.ps.state->es_query_cxt);

		Assert(s->shared->store_area != DSM_HANDLE_INVALID);
		s->par.store_area = dsa_attach(s->par.shared->store_area);
		MemoryContextSwitchTo(old);
	}
	return s->par.store_area;
}

/*
 * ghj_shared_end detaches the store's area (the leader's detach, the last,
 * frees it); the store's addresses are gone with it.
 */
void
ghj_shared_end(GhjState *s)
{
	if (s->par.store_area != NULL)
		dsa_detach(s->par.store_area);
	s->par.store_area = NULL;
}

/*
 * ghj_shared_reinit prepares the segment for another run (a rescan of the
 * Gather, its workers gone): the shared build starts over, and its store is
 * freed (the leader's store area, when at hand; else it goes with the
 * query).  The partitions' files and stores are emptied first
 * (ghj_parts_reinit), whose file set this keeps.
 */
void
ghj_shared_reinit(GhjShared *sh, dsa_area *store)
{
	int			nworkers = sh->nworkers;
	bool		can_spill = sh->can_spill;
	SharedFileSet fileset = sh->fileset;
	dsa_handle	handle = sh->store_area;

	if (store != NULL)
	{
		free_dp(store, &sh->store_hashes);
		free_dp(store, &sh->store_recs);
		free_dp(store, &sh->store_arena);
		free_dp(store, &sh->canon_rows);
		free_dp(store, &sh->group_hashes);
		free_dp(store, &sh->group_recs);
	}
	memset(sh, 0, ghj_shared_size(nworkers));
	ghj_shared_init(sh, nworkers);
	/* the file set, emptied, and the store's area stay */
	sh->can_spill = can_spill;
	sh->fileset = fileset;
	sh->store_area = handle;
}

/*
 * ghj_shared_attach attaches to the build barrier and returns its phase:
 * GHJ_PH_LOAD if this participant came in time to read a share of the
 * inner side.
 */
int
ghj_shared_attach(GhjState *s)
{
	s->par.chunk = NULL;
	s->par.chunks = NULL;
	s->parts.own_loaded = 0;
	return BarrierAttach(&s->par.shared->build_barrier);
}

/*
 * chunks_done puts the chunk being filled on this participant's list of
 * filled ones and, if asked (nrows not NULL), counts their rows and their
 * by-reference bytes.
 */
static void
chunks_done(GhjState *s, uint64 *nrows, Size *nbytes)
{
	if (s->par.chunk)
	{
		s->par.chunk->next = s->par.chunks;
		s->par.chunks = s->par.chunk;
		s->par.chunk = NULL;
	}
	if (nrows == NULL)
		return;
	*nrows = 0;
	*nbytes = 0;
	for (GhjChunk *c = s->par.chunks; c; c = c->next)
	{
		*nrows += c->nrows;
		*nbytes += c->data_used;
	}
}

/* ghj_shared_free_chunks frees this participant's chunks. */
void
ghj_shared_free_chunks(GhjState *s)
{
	chunks_done(s, NULL, NULL);
	while (s->par.chunks)
	{
		GhjChunk   *next = s->par.chunks->next;

		pfree(s->par.chunks);
		s->par.chunks = next;
	}
}

/*
 * shared_value: if an earlier by-reference field of the record tmp holds
 * the same value of the row as its i-th, field k = byref_pos[i] (the same
 * pointer, a field of the same type length), field k of its copy rec takes
 * that field's offset in the chunk, and true.
 */
static inline bool
shared_value(GhjState *s, const Datum *tmp, Datum *rec, int i, int16 typlen)
{
	int			k = s->byref_pos[i];

	for (int p = 0; p < i; p++)
	{
		int			j = s->byref_pos[p];
		int16		jlen;

		if (tmp[j] == tmp[k] && byref_attr(s, j, &jlen) && jlen == typlen &&
			!byref_null(s, tmp, j))
		{
			rec[k] = rec[j];
			return true;
		}
	}
	return false;
}

/*
 * ghj_shared_add copies the record tmp with its hash into the chunk being
 * filled, its by-reference values (byref_bytes in the arena's measure, at
 * most) into the chunk's data, and starts a new chunk when this one is
 * full.  A value that an earlier field of the record holds too (a key that
 * is also a column: the same Datum of the row) is copied once, and both
 * fields refer to the copy.  Returns the bytes of the chunk it started,
 * zero if none.
 */
Size
ghj_shared_add(GhjState *s, const Datum *tmp, uint64 hash, Size byref_bytes)
{
	GhjChunk   *chunk = s->par.chunk;
	Datum	   *rec;
	char	   *data;
	Size		grown = 0;

	if (chunk == NULL || chunk->nrows == chunk->cap ||
		chunk->data_used + byref_bytes > chunk->data_size)
	{
		/* a sixteenth of the budget, at least 64 rows and one row's data */
		Size		part = s->batch.mem_budget / 16;
		uint32		cap = (uint32) Max(Min((Size) GHJ_CHUNK_ROWS,
										   part / (sizeof(Datum) * s->stride + sizeof(uint64))),
									   64);
		Size		data_size = Max(Min((Size) GHJ_CHUNK_DATA, part), byref_bytes);

		chunks_done(s, NULL, NULL);
		grown = MAXALIGN(offsetof(GhjChunk, hashes) + sizeof(uint64) * cap) +
			sizeof(Datum) * cap * s->stride +
			(s->inner_has_byref ? data_size : 0);
		chunk = s->par.chunk = MemoryContextAllocHuge(s->build_tmp_cxt, grown);
		gh_advise_huge(chunk, grown);
		chunk->cap = cap;
		chunk->next = NULL;
		chunk->nrows = 0;
		chunk->data_size = s->inner_has_byref ? data_size : 0;
		chunk->data_used = 0;
	}
	rec = GhjChunkRecs(chunk) + (size_t) chunk->nrows * s->stride;
	memcpy(rec, tmp, sizeof(Datum) * s->stride);
	data = GhjChunkData(chunk, s->stride);
	for (int i = 0; i < s->nbyref_pos; i++)
	{
		int			k = s->byref_pos[i];
		int16		typlen;
		Size		len;

		(void) byref_attr(s, k, &typlen);
		if (byref_null(s, rec, k) || shared_value(s, tmp, rec, i, typlen))
			continue;
		len = byref_len(rec[k], typlen);
		memcpy(data + chunk->data_used, DatumGetPointer(rec[k]), len);
		rec[k] = (Datum) chunk->data_used;	/* an offset, in the chunk */
		chunk->data_used += MAXALIGN(len);
	}
	chunk->hashes[chunk->nrows++] = hash;
	return grown;
}

/*
 * ghj_shared_chunks is this participant's list of chunks, the one being
 * filled included, for a shared build that spilled to write to its
 * partitions (join_parts.c) before it frees them (ghj_shared_free_chunks).
 */
GhjChunk *
ghj_shared_chunks(GhjState *s)
{
	chunks_done(s, NULL, NULL);
	return s->par.chunks;
}

/* ghj_shared_claim sets *claimed; true for the one participant that set it. */
bool
ghj_shared_claim(GhjShared *sh, bool *claimed)
{
	bool		first;

	SpinLockAcquire(&sh->mutex);
	first = !*claimed;
	*claimed = true;
	SpinLockRelease(&sh->mutex);
	return first;
}

/*
 * prealloc_rows is the rows ghj_shared_preallocate makes room for: what the
 * planner expects of the inner side (its partial plan's rows times the
 * parallel divisor) and a tenth more, since that is an estimate: a store
 * one row short is allocated again, serially, after the rows are loaded.
 * Zero where that does not fit in the participants' combined budget
 * (records, hashes and the arena's estimate, prealloc_arena) or in a table.
 */
static uint64
prealloc_rows(GhjState *s, Size *arena)
{
	GhjShared  *sh = s->par.shared;
	double		est = s->inner_ps->plan->plan_rows * gh_parallel_divisor(sh->nworkers);
	double		rows = est * 1.1 + 1024;

	*arena = 0;
	if (est < 1.0 || rows > (double) GH_MAX_ROWS)
		return 0;
	*arena = (Size) (rows * prealloc_arena_row(s));
	if (rows * (sizeof(uint64) + sizeof(Datum) * s->stride) + (double) *arena >
		(double) get_hash_memory_limit() * (sh->nworkers + 1))
		return 0;
	return (uint64) rows;
}

/*
 * prealloc_arena_row is the arena bytes a row is expected to take: the
 * inner plan's width less its by-value columns' (the planner keeps no width
 * per column), shared evenly among the by-reference columns the record
 * keeps and the by-reference keys that are not such a column, each with a
 * varlena header, rounded up as the arena rounds them, and a quarter more.
 * A key that is a column the record keeps shares that column's copy
 * (ghj_shared_add).
 */
static double
prealloc_arena_row(GhjState *s)
{
	double		width = s->inner_ps->plan->plan_width;
	int			nbyref = 0;

	for (int c = 0; c < s->ninner_cols; c++)
	{
		if (s->inner_attbyval[c])
			width -= s->inner_attlen[c];
		else
			nbyref++;
	}
	for (int k = 0; k < s->nkeys; k++)
		if (!s->inner_keys.byval[k] &&
			ghj_kept_index(s->inner_col, s->ninner_cols, s->inner_key_col[k]) < 0)
			nbyref++;
	if (nbyref == 0)
		return 0;
	width = Max(width, 0) / nbyref;
	return 1.25 * nbyref * MAXALIGN((Size) width + VARHDRSZ);
}

/*
 * ghj_shared_preallocate has the first participant to start loading
 * allocate the store's hashes, records and arena for the rows the planner
 * expects of the inner side (prealloc_rows) while the others read their
 * shares; ghj_shared_allocate keeps each if the rows fit in it.  Nothing
 * is allocated if the area has no room: ghj_shared_allocate then does it.
 * With the GPU service, the second participant gets the exchange area of
 * its one table's build at the same time: the service's own, which the
 * service keeps from one build to the next (gh_table_claim_exchange), or,
 * while another build holds that, a segment of its own (not the area's,
 * whose lock the first holds while it allocates); the participants fill it
 * as they compact (ghj_shared_compact).  Creating that much shared
 * memory takes the kernel a while, which the first participant spends
 * while the others load.  (In the query's area, whose lock every
 * worker takes as it starts, that held up the workers' start as long.)
 */
void
ghj_shared_preallocate(GhjState *s)
{
	GhjShared  *sh = s->par.shared;
	dsa_area   *area;
	uint64		rows;
	Size		arena;
	dsa_pointer h;
	dsa_pointer r;
	dsa_pointer a = InvalidDsaPointer;

	if (!ghj_shared_claim(sh, &sh->prealloc_claimed))
	{
		ghj_shared_exchange_end(s);
		if (ghj_shared_claim(sh, &sh->xchg_claimed) && gh_table_service_available(true) &&
			(rows = prealloc_rows(s, &arena)) > 0)
		{
			uint64		token = 0;

			/* the service's own area if it is free, else one of the query's */
			s->par.xchg_seg = rows <= GH_MAX_ROWS ?
				gh_table_claim_exchange((uint32) rows, &token) : NULL;
			if (s->par.xchg_seg == NULL)
				s->par.xchg_seg = dsm_create(sizeof(uint64) * rows,
											 DSM_CREATE_NULL_IF_MAXSEGMENTS);
			if (s->par.xchg_seg != NULL)
			{
				/* ghj_shared_compact reads these after the barrier */
				sh->xchg_cap = dsm_segment_map_length(s->par.xchg_seg) / sizeof(uint64);
				sh->xchg_token = token;
				sh->xchg = dsm_segment_handle(s->par.xchg_seg);
			}
		}
		return;
	}
	if ((rows = prealloc_rows(s, &arena)) == 0)
		return;
	/* only now: the others would wait on the area's lock while this allocates */
	area = store_area(s);
	h = dsa_allocate_extended(area, sizeof(uint64) * rows,
							  DSA_ALLOC_HUGE | DSA_ALLOC_NO_OOM);
	if (!DsaPointerIsValid(h))
		return;
	r = dsa_allocate_extended(area, sizeof(Datum) * s->stride * rows,
							  DSA_ALLOC_HUGE | DSA_ALLOC_NO_OOM);
	if (!DsaPointerIsValid(r))
	{
		dsa_free(area, h);
		return;
	}
	if (arena > 0)
		a = dsa_allocate_extended(area, arena, DSA_ALLOC_HUGE | DSA_ALLOC_NO_OOM);
	/* ghj_shared_allocate reads these after the barrier */
	sh->store_hashes = h;
	sh->store_recs = r;
	sh->store_cap = rows;
	if (DsaPointerIsValid(a))
	{
		sh->store_arena = a;
		sh->arena_cap = arena;
	}
}

/*
 * ghj_shared_exchange is the exchange area holding the store's hashes for
 * the GPU service's build of the shared table (see GhjShared.xchg), if
 * hashes are those and every participant wrote its range; NULL if not.
 * *attached: this participant attached it, and detaches it after the build.
 */
dsm_segment *
ghj_shared_exchange(GhjState *s, const uint64 *hashes, bool *attached)
{
	GhjShared  *sh = s->par.shared;
	dsm_segment *seg;

	*attached = false;
	/* regrouped hashes are not the store's: the area holds the store's */
	if (sh->xchg_broken || hashes != store_addr(s, sh->store_hashes) ||
		(seg = exchange_map(s)) == NULL)
		return NULL;
	*attached = (seg != s->par.xchg_seg);
	return seg;
}

/*
 * exchange_map is this participant's mapping of the exchange area, its own
 * or attached now (which the caller detaches); NULL if there is none, it
 * has no room for the store's rows, or it is gone.
 */
static dsm_segment *
exchange_map(GhjState *s)
{
	GhjShared  *sh = s->par.shared;

	if (sh->xchg == DSM_HANDLE_INVALID || sh->nrows > sh->xchg_cap)
		return NULL;
	return s->par.xchg_seg ? s->par.xchg_seg : dsm_attach(sh->xchg);
}

/*
 * ghj_shared_exchange_end detaches the exchange area this participant made,
 * once the shared table is built (or the build starts over): a peer that
 * still builds from it has attached it too.
 */
void
ghj_shared_exchange_end(GhjState *s)
{
	if (s->par.xchg_seg != NULL)
		dsm_detach(s->par.xchg_seg);
	s->par.xchg_seg = NULL;
}

/*
 * ghj_shared_loaded adds this participant's share to the shared totals and
 * waits for the other participants to finish theirs.  True for the one
 * participant that is then to allocate the store (ghj_shared_allocate).
 * *loaded: the rows of this participant's share.
 */
bool
ghj_shared_loaded(GhjState *s, uint64 *loaded)
{
	GhjShared  *sh = s->par.shared;
	uint64		n;
	Size		arena;

	chunks_done(s, &n, &arena);
	*loaded = n;
	SpinLockAcquire(&sh->mutex);
	sh->nrows += n;
	sh->arena_bytes += arena;
	SpinLockRelease(&sh->mutex);
	return ghj_shared_next_phase(s);
}

/*
 * ghj_shared_next_phase waits for the other participants at the end of the
 * current phase; true for the one participant that is to do the next
 * phase's serial work.
 */
bool
ghj_shared_next_phase(GhjState *s)
{
	return BarrierArriveAndWait(&s->par.shared->build_barrier, PG_WAIT_EXTENSION);
}

/*
 * ghj_shared_allocate allocates the store for the rows the participants
 * loaded (GHJ_PH_ALLOCATE, one participant), keeping the hashes, records
 * and arena ghj_shared_preallocate allocated where the rows fit in them.
 * An inner side too large for the table gets no store: every participant
 * reports it after the phase (ghj_shared_nrows).  spilled: the rows went
 * to partitions instead (join_parts.c), so there is no store either.
 */
void
ghj_shared_allocate(GhjState *s, bool spilled)
{
	GhjShared  *sh = s->par.shared;
	dsa_area   *area = store_area(s);
	uint64		n = sh->nrows;
	/* the rows went to partitions, or are too many for a table: no store */
	bool		no_store = spilled || n > GH_MAX_ROWS;

	if (no_store || sh->store_cap < Max(n, 1))
	{
		/* nor the early one, if it is too small: the rows outran the estimate */
		free_dp(area, &sh->store_hashes);
		free_dp(area, &sh->store_recs);
		sh->store_cap = 0;
	}
	if (no_store || sh->arena_cap < sh->arena_bytes || sh->arena_bytes == 0)
	{
		free_dp(area, &sh->store_arena);
		sh->arena_cap = 0;
	}
	if (no_store)
		return;
	if (sh->store_cap == 0)
	{
		sh->store_hashes = dsa_allocate_extended(area, sizeof(uint64) * Max(n, 1),
												 DSA_ALLOC_HUGE);
		sh->store_recs = dsa_allocate_extended(area,
											   sizeof(Datum) * s->stride * Max(n, 1),
											   DSA_ALLOC_HUGE);
		sh->store_cap = Max(n, 1);
	}
	if (sh->arena_bytes > 0 && sh->arena_cap == 0)
	{
		sh->store_arena = dsa_allocate_extended(area, sh->arena_bytes,
												DSA_ALLOC_HUGE);
		sh->arena_cap = sh->arena_bytes;
	}
	pg_atomic_write_u64(&sh->next_row, 0);
	pg_atomic_write_u64(&sh->next_arena, 0);
	pg_atomic_write_u32(&sh->next_range, 0);
}

/*
 * compact_exchange maps the shared table's exchange area (GhjShared.xchg)
 * for ghj_shared_compact to write the hashes of rows [row, row + nrows)
 * there too, its pages populated first; NULL, with *seg NULL, where there
 * is none or it has no room (the builder then copies the store's hashes).
 * *seg is the segment, which the caller detaches unless it is its own.
 */
static uint64 *
compact_exchange(GhjState *s, uint64 row, uint64 nrows, dsm_segment **seg)
{
	GhjShared  *sh = s->par.shared;
	uint64	   *x;

	if (sh->xchg == DSM_HANDLE_INVALID || sh->nrows > sh->xchg_cap)
	{
		*seg = NULL;
		return NULL;
	}
	if ((*seg = exchange_map(s)) == NULL)
	{
		SpinLockAcquire(&sh->mutex);
		sh->xchg_broken = true;
		SpinLockRelease(&sh->mutex);
		return NULL;
	}
	x = dsm_segment_address(*seg);
	gh_populate(&x[row], sizeof(uint64) * nrows, true);
	return x;
}

/*
 * ghj_shared_compact copies this participant's chunks into a range of the
 * store it takes for them (GHJ_PH_COMPACT, every participant): hashes and
 * records as they are, each chunk's by-reference data as one block into the
 * arena, whose offsets the records' by-reference values then become; and
 * frees them.  Its ranges of the store are populated first (gh_populate),
 * as the exchange area's are.
 */
void
ghj_shared_compact(GhjState *s)
{
	GhjShared  *sh = s->par.shared;
	dsa_area   *area = store_area(s);
	uint64		nrows;
	Size		nbytes;
	uint64		row;
	Size		base;
	uint64	   *hashes;
	Datum	   *recs;
	char	   *arena;
	uint64	   *xchg;
	dsm_segment *xseg;

	if (sh->nrows > GH_MAX_ROWS || s->par.chunks == NULL)
	{
		ghj_shared_free_chunks(s);
		return;
	}
	chunks_done(s, &nrows, &nbytes);
	row = pg_atomic_fetch_add_u64(&sh->next_row, nrows);
	base = (Size) pg_atomic_fetch_add_u64(&sh->next_arena, nbytes);
	Assert(row + nrows <= sh->nrows && base + nbytes <= sh->arena_bytes);
	hashes = dsa_get_address(area, sh->store_hashes);
	recs = dsa_get_address(area, sh->store_recs);
	arena = sh->arena_bytes > 0 ? dsa_get_address(area, sh->store_arena) : NULL;
	xchg = compact_exchange(s, row, nrows, &xseg);
	/* this participant's ranges, mapped at once rather than a fault a page */
	gh_populate(&hashes[row], sizeof(uint64) * nrows, true);
	gh_populate(&recs[row * s->stride], sizeof(Datum) * nrows * s->stride, true);
	if (nbytes > 0)
		gh_populate(arena + base, nbytes, true);
	for (GhjChunk *c = s->par.chunks; c; c = c->next)
	{
		Datum	   *dst = &recs[row * s->stride];

		CHECK_FOR_INTERRUPTS();
		memcpy(&hashes[row], c->hashes, sizeof(uint64) * c->nrows);
		if (xchg)
			memcpy(&xchg[row], c->hashes, sizeof(uint64) * c->nrows);
		memcpy(dst, GhjChunkRecs(c), sizeof(Datum) * c->nrows * s->stride);
		if (c->data_used > 0)
		{
			memcpy(arena + base, GhjChunkData(c, s->stride), c->data_used);
			for (uint32 j = 0; j < c->nrows; j++)
			{
				Datum	   *rec = &dst[(size_t) j * s->stride];

				for (int i = 0; i < s->nbyref_pos; i++)
				{
					int			k = s->byref_pos[i];

					if (!byref_null(s, rec, k))
						rec[k] += base;
				}
			}
		}
		row += c->nrows;
		base += c->data_used;
	}
	if (xseg != NULL && xseg != s->par.xchg_seg)
		dsm_detach(xseg);
	ghj_shared_free_chunks(s);
}

/* ghj_shared_nrows is the number of rows of the store. */
uint64
ghj_shared_nrows(GhjState *s)
{
	return s->par.shared->nrows;
}

/* store_addr is this process's address of a part of the store. */
static void *
store_addr(GhjState *s, dsa_pointer dp)
{
	return dsa_get_address(store_area(s), dp);
}

/*
 * ghj_shared_hashes is the store's hashes, in its final order once the
 * phases are done (in compaction order before GHJ_PH_REGROUP ends).
 */
uint64 *
ghj_shared_hashes(GhjState *s)
{
	GhjShared  *sh = s->par.shared;

	return store_addr(s, sh->regroup ? sh->group_hashes : sh->store_hashes);
}

/*
 * ghj_shared_offer_order offers rows, the row array of this participant's
 * table (equal hashes adjacent), as the store's order (GHJ_PH_TABLES, a
 * participant whose table's rows are not the identity).  The first offer is
 * taken: GHJ_PH_REGROUP then copies records and hashes into it.
 * service_shared: the table is the GPU service's one for all participants.
 */
void
ghj_shared_offer_order(GhjState *s, const uint32 *rows, bool service_shared)
{
	GhjShared  *sh = s->par.shared;
	dsa_area   *area = store_area(s);
	uint64		n = sh->nrows;

	if (!ghj_shared_claim(sh, &sh->order_claimed))
		return;

	/* the others read these only after the barrier */
	sh->canon_rows = dsa_allocate_extended(area, sizeof(uint32) * Max(n, 1),
										   DSA_ALLOC_HUGE);
	memcpy(store_addr(s, sh->canon_rows), rows, sizeof(uint32) * n);
	sh->group_hashes = dsa_allocate_extended(area, sizeof(uint64) * Max(n, 1),
											 DSA_ALLOC_HUGE);
	sh->group_recs = dsa_allocate_extended(area,
										   sizeof(Datum) * s->stride * Max(n, 1),
										   DSA_ALLOC_HUGE);
	sh->order_svc = service_shared;
	sh->regroup = true;
	s->par.order_provider = true;
}

/*
 * ghj_shared_in_order says whether table, this participant's, groups the
 * rows in the store's order (after GHJ_PH_REGROUP): its rows are the
 * identity (a grouped build, or no hash repeats), or they are the order
 * itself: it offered them, or it is a view of the service table that did.
 */
bool
ghj_shared_in_order(GhjState *s, const GhTable *table)
{
	GhjShared  *sh = s->par.shared;

	/* with repeated hashes only a grouped build has the identity */
	if (!sh->regroup || s->par.order_provider || table->rows_identity)
		return true;
	return gh_table_shared(table) && sh->order_svc;
}

/*
 * ghj_shared_regroup copies ranges of records and hashes into the order
 * ghj_shared_offer_order took until none is left (GHJ_PH_REGROUP, every
 * participant).  The arena stays as it is: the records keep their offsets.
 */
void
ghj_shared_regroup(GhjState *s)
{
	GhjShared  *sh = s->par.shared;
	const uint32 *order;
	const uint64 *hashes;
	const Datum *recs;
	uint64	   *ghashes;
	Datum	   *grecs;
	size_t		stride = s->stride;

	if (!sh->regroup)
		return;
	order = store_addr(s, sh->canon_rows);
	hashes = store_addr(s, sh->store_hashes);
	recs = store_addr(s, sh->store_recs);
	ghashes = store_addr(s, sh->group_hashes);
	grecs = store_addr(s, sh->group_recs);
	for (;;)
	{
		uint64		lo = (uint64) pg_atomic_fetch_add_u32(&sh->next_range, 1) *
			GHJ_REGROUP_RANGE;
		uint64		hi = Min(lo + GHJ_REGROUP_RANGE, sh->nrows);

		if (lo >= sh->nrows)
			break;
		CHECK_FOR_INTERRUPTS();
		for (uint64 j = lo; j < hi; j++)
		{
			uint32		r = order[j];

			if (j + 8 < hi)
				__builtin_prefetch(&recs[(size_t) order[j + 8] * stride]);
			ghashes[j] = hashes[r];
			memcpy(&grecs[j * stride], &recs[(size_t) r * stride],
				   sizeof(Datum) * stride);
		}
	}
}

/*
 * ghj_shared_regrouped frees what regrouping left behind (after
 * GHJ_PH_REGROUP, one participant, while the others map the regrouped
 * store: they no longer read these).
 */
void
ghj_shared_regrouped(GhjState *s)
{
	GhjShared  *sh = s->par.shared;
	dsa_area   *area = store_area(s);

	if (!sh->regroup)
		return;
	free_dp(area, &sh->canon_rows);
	free_dp(area, &sh->store_hashes);
	free_dp(area, &sh->store_recs);
}

/* ghj_shared_detach leaves the build barrier: the store is complete. */
void
ghj_shared_detach(GhjState *s)
{
	BarrierDetach(&s->par.shared->build_barrier);
}

/*
 * ghj_shared_prefault maps pages of the store's records and arena into this
 * participant (ghj_shared_map set them up), as its probe will read them, in
 * steps of GHJ_PREFAULT_STEP bytes for as long as the peer building the
 * shared table has not announced it: time the participant would otherwise
 * sleep through.  The probe then takes fewer page faults.  Only then:
 * mapping a large store so takes longer than the table's build from a
 * prepared exchange area, and page faults on shared memory map a page's
 * neighbours too.
 */
#define GHJ_PREFAULT_STEP ((Size) 8 << 20)

void
ghj_shared_prefault(GhjState *s)
{
	GhjShared  *sh = s->par.shared;
	char	   *range[2];
	Size		len[2];

	range[0] = (char *) s->build.inner_recs;
	len[0] = sizeof(Datum) * s->stride * (Size) s->build.ninner;
	range[1] = s->build.byref_bytes > 0 ? store_addr(s, sh->store_arena) : NULL;
	len[1] = s->build.byref_bytes;
	for (int i = 0; i < 2; i++)
	{
		for (Size off = 0; range[i] != NULL && off < len[i]; off += GHJ_PREFAULT_STEP)
		{
			int			state;

			SpinLockAcquire(&sh->mutex);
			state = sh->svc_state;
			SpinLockRelease(&sh->mutex);
			if (state != GHJ_SVC_BUILDING)
				return;
			gh_populate(range[i] + off, Min(GHJ_PREFAULT_STEP, len[i] - off), false);
		}
	}
}

/*
 * ghj_shared_map points this participant's row store at the shared store:
 * its records, and the base its by-reference values are offsets from.
 */
void
ghj_shared_map(GhjState *s)
{
	GhjShared  *sh = s->par.shared;
	Datum		base = 0;

	s->build.ninner = (uint32) sh->nrows;
	s->build.n_nullkey = 0;
	s->build.byref_bytes = sh->arena_bytes;
	s->build.inner_recs = store_addr(s, sh->regroup ? sh->group_recs : sh->store_recs);
	if (sh->arena_bytes > 0)
		base = PointerGetDatum(store_addr(s, sh->store_arena));
	for (int k = 0; k < s->nkeys + s->ninner_cols; k++)
	{
		int16		typlen;

		s->build.rec_base[k] = byref_attr(s, k, &typlen) ? base : 0;
	}
	s->build.store_shared = true;
}

/*
 * ghj_shared_table_claim says whether this participant is the first to ask
 * for the shared service table, which it is then to build and announce
 * with ghj_shared_table_built or ghj_shared_table_failed.
 */
bool
ghj_shared_table_claim(GhjShared *sh)
{
	bool		builder = false;

	SpinLockAcquire(&sh->mutex);
	if (sh->svc_state == GHJ_SVC_NONE)
	{
		sh->svc_state = GHJ_SVC_BUILDING;
		builder = true;
	}
	SpinLockRelease(&sh->mutex);
	return builder;
}

/*
 * ghj_shared_table_built announces the service table table_id to the
 * others, and whether its rows are the identity (then their views need no
 * copy of its row array).
 */
void
ghj_shared_table_built(GhjShared *sh, uint32 table_id, bool identity)
{
	SpinLockAcquire(&sh->mutex);
	sh->svc_table = table_id;
	sh->svc_identity = identity;
	sh->svc_state = GHJ_SVC_BUILT;
	SpinLockRelease(&sh->mutex);
	ConditionVariableBroadcast(&sh->svc_cv);
}

/* ghj_shared_table_failed tells the others to build their own tables. */
void
ghj_shared_table_failed(GhjShared *sh)
{
	SpinLockAcquire(&sh->mutex);
	sh->svc_state = GHJ_SVC_FAILED;
	SpinLockRelease(&sh->mutex);
	ConditionVariableBroadcast(&sh->svc_cv);
}

/*
 * ghj_shared_table_wait waits for the participant that claimed the shared
 * service table, and returns the table's id, or 0 if its build failed;
 * *identity says whether the table's rows are the identity.
 */
uint32
ghj_shared_table_wait(GhjShared *sh, bool *identity)
{
	int			state;
	uint32		peer;

	ConditionVariablePrepareToSleep(&sh->svc_cv);
	for (;;)
	{
		SpinLockAcquire(&sh->mutex);
		state = sh->svc_state;
		peer = sh->svc_table;
		*identity = sh->svc_identity;
		SpinLockRelease(&sh->mutex);
		if (state != GHJ_SVC_BUILDING)
			break;
		ConditionVariableSleep(&sh->svc_cv, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	return state == GHJ_SVC_BUILT ? peer : 0;
}

/*
 * ghj_fill_stats puts this participant's counters into st (the part of
 * GhjStats above its batches' figures): what a worker publishes, and what
 * the leader's EXPLAIN shows of its own share.
 */
void
ghj_fill_stats(GhjState *s, GhjStats *st)
{
	st->inner_rows = s->build.ninner + s->build.n_nullkey;
	st->batches = s->probe.n_batches;
	st->candidates = s->probe.n_candidates;
	st->matches = s->probe.n_matches;
	st->build_ms = s->build.build_ms;
	st->load_ms = s->build.load_ms;
	st->store_ms = s->build.store_ms;
	st->table_ms = s->build.table_ms;
	st->outer_ms = s->probe.outer_ms;
	st->order_ms = s->probe.order_ms;
	st->rows_ms = s->probe.rows_ms;
	st->context_ms = s->build.context_ms;
	st->device_ms = s->build.table ? s->build.table->device_ms : 0;
	st->cpu_batches = s->probe.n_cpu_batches;
	st->shared_table = s->build.table && gh_table_shared(s->build.table);
	st->target = s->build.target;
	st->fallback = ghj_run_fallback(s);
	st->outer_scanned = s->outer_scan_refusal == NULL;
	if (st->outer_scanned)
		ghj_outer_scan_counts(s, &st->outer_scan);
	st->valid = s->build.n_builds > 0;
}

/* ghj_publish_stats: a parallel worker puts its counters into shared memory. */
void
ghj_publish_stats(GhjState *s)
{
	if (s->par.shared == NULL || !IsParallelWorker() ||
		ParallelWorkerNumber < 0 || ParallelWorkerNumber >= s->par.shared->nworkers)
		return;
	ghj_fill_stats(s, &s->par.shared->stats[ParallelWorkerNumber]);
}
