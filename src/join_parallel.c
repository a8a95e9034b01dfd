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
 * partial path too, and the participants read it together:
 *
 * 1. Each participant that attaches to the build barrier in phase 0 reads
 *	  its share of the inner rows (join_build.c hashes them and fills their
 *	  records) into chunks of the query's DSA area (ghj_shared_add): hashes,
 *	  records, and the records' by-reference data, referred to by offsets
 *	  since each process maps the area at its own address.  A filled chunk
 *	  goes on a list under a spinlock.
 *
 * 2. It then waits on the barrier for the others (ghj_shared_loaded).
 *	  Nobody emits a row before the barrier, so no participant waits there
 *	  on one blocked on a full tuple queue.  A participant that arrives
 *	  later (phase 1 or after) finds the chunks complete and skips step 1.
 *
 * 3. Every participant copies all the chunks' records into its own row
 *	  store (ghj_shared_copy_out), turning offsets into pointers to the
 *	  chunks' data, which stays where it is, and builds its own table.  With
 *	  the GPU service, whose participants' hashes are the same array, the
 *	  first one to get there builds one table for all and the others take
 *	  views of it (ghj_shared_table_claim and the functions after it).
 *
 * A rescan of the Gather starts the shared build over (ghj_shared_reinit).
 * This file knows the layout of the records (join_exec.h) but reads no row
 * and builds no table itself.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "miscadmin.h"
#include "utils/wait_event.h"

#include "join_exec.h"

/* GhjShared.svc_state */
#define GHJ_SVC_NONE		0
#define GHJ_SVC_BUILDING	1
#define GHJ_SVC_BUILT		2
#define GHJ_SVC_FAILED		3

/*
 * A chunk of the shared inner side: hashes, records, then the records'
 * by-reference data.  In a chunk a by-reference value is its offset in the
 * chunk's data (each process maps the area at its own address); a
 * participant turns offsets into pointers when it copies the records out.
 */
#define GHJ_CHUNK_ROWS 16384
#define GHJ_CHUNK_DATA (1024 * 1024)
typedef struct GhjChunk
{
	dsa_pointer next;
	uint32		nrows;
	Size		data_size;
	Size		data_used;
	uint64		hashes[GHJ_CHUNK_ROWS];
} GhjChunk;
#define GhjChunkRecs(c) ((Datum *) ((char *) (c) + MAXALIGN(sizeof(GhjChunk))))
#define GhjChunkData(c, stride) \
	((char *) GhjChunkRecs(c) + sizeof(Datum) * GHJ_CHUNK_ROWS * (stride))

static void ghj_publish_chunk(GhjShared *sh, GhjChunk *chunk, dsa_pointer dp);

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
	BarrierInit(&sh->build_barrier, 0);
	SpinLockInit(&sh->mutex);
	sh->chunks = InvalidDsaPointer;
	sh->svc_state = GHJ_SVC_NONE;
	ConditionVariableInit(&sh->svc_cv);
}

/*
 * ghj_shared_reinit prepares the segment for another run (a rescan of the
 * Gather, its workers gone): the shared build starts over, and its chunks
 * are freed when the query's area is at hand (else they go with the query).
 */
void
ghj_shared_reinit(GhjShared *sh, dsa_area *area)
{
	if (area != NULL)
	{
		for (dsa_pointer dp = sh->chunks; DsaPointerIsValid(dp);)
		{
			GhjChunk   *c = dsa_get_address(area, dp);
			dsa_pointer next = c->next;

			dsa_free(area, dp);
			dp = next;
		}
	}
	sh->chunks = InvalidDsaPointer;
	sh->svc_state = GHJ_SVC_NONE;
	sh->svc_table = 0;
	BarrierInit(&sh->build_barrier, 0);
	memset(sh->stats, 0, sizeof(GhjStats) * sh->nworkers);
}

/*
 * ghj_shared_attach attaches to the build barrier, and says whether this
 * participant came in time to read a share of the inner side (phase 0).
 */
bool
ghj_shared_attach(GhjState *s)
{
	s->chunk = NULL;
	s->chunk_dp = InvalidDsaPointer;
	return BarrierAttach(&s->shared->build_barrier) == 0;
}

/* ghj_publish_chunk adds a filled chunk to the shared list. */
static void
ghj_publish_chunk(GhjShared *sh, GhjChunk *chunk, dsa_pointer dp)
{
	SpinLockAcquire(&sh->mutex);
	chunk->next = sh->chunks;
	sh->chunks = dp;
	SpinLockRelease(&sh->mutex);
}

/*
 * ghj_shared_add copies the record tmp with its hash into the chunk being
 * filled, its by-reference values (byref_bytes in the arena's measure)
 * into the chunk's data, and starts a new chunk when this one is full.
 */
void
ghj_shared_add(GhjState *s, const Datum *tmp, uint64 hash, Size byref_bytes)
{
	dsa_area   *area = s->css.ss.ps.state->es_query_dsa;
	int			nfields = s->nkeys + s->ninner_cols;
	Size		recs_size = sizeof(Datum) * GHJ_CHUNK_ROWS * s->stride;
	GhjChunk   *chunk = s->chunk;
	Datum	   *rec;
	char	   *data;

	if (chunk == NULL || chunk->nrows == GHJ_CHUNK_ROWS ||
		chunk->data_used + byref_bytes > chunk->data_size)
	{
		Size		data_size = Max(GHJ_CHUNK_DATA, byref_bytes);

		if (chunk)
			ghj_publish_chunk(s->shared, chunk, s->chunk_dp);
		s->chunk_dp = dsa_allocate_extended(area,
											MAXALIGN(sizeof(GhjChunk)) + recs_size +
											(s->inner_has_byref ? data_size : 0),
											DSA_ALLOC_HUGE);
		chunk = s->chunk = dsa_get_address(area, s->chunk_dp);
		chunk->next = InvalidDsaPointer;
		chunk->nrows = 0;
		chunk->data_size = s->inner_has_byref ? data_size : 0;
		chunk->data_used = 0;
	}
	rec = GhjChunkRecs(chunk) + (size_t) chunk->nrows * s->stride;
	memcpy(rec, tmp, sizeof(Datum) * s->stride);
	data = GhjChunkData(chunk, s->stride);
	for (int k = 0; k < nfields; k++)
	{
		int16		typlen;
		Size		len;

		if (!byref_attr(s, k, &typlen) || byref_null(s, rec, k))
			continue;
		len = datumGetSize(rec[k], false, typlen);
		memcpy(data + chunk->data_used, DatumGetPointer(rec[k]), len);
		rec[k] = (Datum) chunk->data_used;	/* an offset, in the chunk */
		chunk->data_used += MAXALIGN(len);
	}
	chunk->hashes[chunk->nrows++] = hash;
}

/*
 * ghj_shared_loaded publishes the last chunk of this participant's share
 * and waits for the other participants to finish theirs.
 */
void
ghj_shared_loaded(GhjState *s)
{
	if (s->chunk)
		ghj_publish_chunk(s->shared, s->chunk, s->chunk_dp);
	s->chunk = NULL;
	s->chunk_dp = InvalidDsaPointer;
	BarrierArriveAndWait(&s->shared->build_barrier, PG_WAIT_EXTENSION);
}

/* ghj_shared_detach leaves the build barrier: the chunks are complete. */
void
ghj_shared_detach(GhjState *s)
{
	BarrierDetach(&s->shared->build_barrier);
}

/* ghj_shared_nrows counts the rows of all the chunks. */
uint64
ghj_shared_nrows(GhjState *s)
{
	dsa_area   *area = s->css.ss.ps.state->es_query_dsa;
	uint64		n = 0;

	/* every chunk is in the list now, and the list no longer changes */
	for (dsa_pointer dp = s->shared->chunks; DsaPointerIsValid(dp);)
	{
		GhjChunk   *c = dsa_get_address(area, dp);

		n += c->nrows;
		dp = c->next;
	}
	return n;
}

/*
 * ghj_shared_copy_out copies every chunk's records into recs and their
 * hashes into hashes (room for ghj_shared_nrows rows), turning by-reference
 * offsets into pointers to the chunks' data, and returns the arena room
 * those values take (byref_size).
 */
Size
ghj_shared_copy_out(GhjState *s, Datum *recs, uint64 *hashes)
{
	dsa_area   *area = s->css.ss.ps.state->es_query_dsa;
	int			nfields = s->nkeys + s->ninner_cols;
	Size		byref_bytes = 0;
	uint64		n = 0;

	for (dsa_pointer dp = s->shared->chunks; DsaPointerIsValid(dp);)
	{
		GhjChunk   *c = dsa_get_address(area, dp);
		Datum	   *dst = &recs[(size_t) n * s->stride];

		memcpy(&hashes[n], c->hashes, sizeof(uint64) * c->nrows);
		memcpy(dst, GhjChunkRecs(c), sizeof(Datum) * c->nrows * s->stride);
		if (s->inner_has_byref)
		{
			char	   *data = GhjChunkData(c, s->stride);

			for (uint32 j = 0; j < c->nrows; j++)
			{
				Datum	   *rec = &dst[(size_t) j * s->stride];

				for (int k = 0; k < nfields; k++)
				{
					int16		typlen;

					if (!byref_attr(s, k, &typlen) || byref_null(s, rec, k))
						continue;
					rec[k] = PointerGetDatum(data + (Size) rec[k]);
					byref_bytes += byref_size(rec[k], typlen);
				}
			}
		}
		n += c->nrows;
		dp = c->next;
		CHECK_FOR_INTERRUPTS();
	}
	return byref_bytes;
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

/* ghj_shared_table_built announces the service table table_id to the others. */
void
ghj_shared_table_built(GhjShared *sh, uint32 table_id)
{
	SpinLockAcquire(&sh->mutex);
	sh->svc_table = table_id;
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
 * service table, and returns the table's id, or 0 if its build failed.
 */
uint32
ghj_shared_table_wait(GhjShared *sh)
{
	int			state;
	uint32		peer;

	ConditionVariablePrepareToSleep(&sh->svc_cv);
	for (;;)
	{
		SpinLockAcquire(&sh->mutex);
		state = sh->svc_state;
		peer = sh->svc_table;
		SpinLockRelease(&sh->mutex);
		if (state != GHJ_SVC_BUILDING)
			break;
		ConditionVariableSleep(&sh->svc_cv, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	return state == GHJ_SVC_BUILT ? peer : 0;
}

/* ghj_publish_stats: a parallel worker puts its counters into shared memory. */
void
ghj_publish_stats(GhjState *s)
{
	GhjStats   *st;

	if (s->shared == NULL || !IsParallelWorker() ||
		ParallelWorkerNumber < 0 || ParallelWorkerNumber >= s->shared->nworkers)
		return;
	st = &s->shared->stats[ParallelWorkerNumber];
	st->inner_rows = s->ninner + s->n_nullkey;
	st->batches = s->n_batches;
	st->candidates = s->n_candidates;
	st->matches = s->n_matches;
	st->build_ms = s->build_ms;
	st->context_ms = s->context_ms;
	st->device_ms = s->table ? s->table->device_ms : 0;
	st->cpu_batches = s->n_cpu_batches;
	st->shared_table = s->table && gh_table_shared(s->table);
	st->valid = s->n_builds > 0;
}
