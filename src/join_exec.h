/*-------------------------------------------------------------------------
 * join_exec.h
 *	  The executor state of GpuHashJoin, private to its six files: the node
 *	  (join_exec.c), the probe of outer batches (join_probe.c), the build
 *	  of the inner row store and the table (join_build.c), the batches of a
 *	  build larger than its budget (join_batch.c), the partitions of a
 *	  shared build larger than its budget (join_parts.c) and the shared
 *	  memory of a parallel build (join_parallel.c).
 *
 * Calls go down this list, and back up only once: join_exec.c calls the
 * others; join_probe.c calls join_build.c (a table's move to the GPU),
 * join_batch.c (outer rows from and to batch files) and join_parts.c (a
 * partition's outer rows); join_build.c calls join_batch.c, join_parts.c
 * (a shared build that spilled) and join_parallel.c (the shared build's
 * phases); join_parts.c calls join_parallel.c (the participants' chunks and
 * claims); join_parallel.c calls none of them.  The one call back up is the
 * one PostgreSQL's nodeHash.c and nodeHashjoin.c share: join_batch.c calls
 * join_build.c (a store that grows past its budget splits into more
 * batches, whose rows it stores again; a loaded batch is built like the
 * first), so those two call each other, and test/callgraph.py admits that
 * circle and no other.  Below them all, hashtable.c is the table and the
 * only code that talks to the GPU service about it.  All use the in-line
 * helpers at the end of this file.
 *
 * GhjState holds what join_exec.c sets up at executor start-up, which the
 * others read (the keys, the quals, the layouts of an inner record and an
 * outer row), and then one part per file, the state that file keeps:
 * build (GhjBuild), probe (GhjProbe), batch (GhjBatches), par (GhjParallel)
 * and parts (GhjParts).  The others read a part freely, and set some of
 * it where their work reaches into it: join_batch.c loads each batch into
 * the build's store, ghj_shared_map points that store at the shared one,
 * ghj_free_table forgets the probe's buffers with the table that lent them.
 *-------------------------------------------------------------------------
 */
#ifndef GPUHASH_JOIN_EXEC_H
#define GPUHASH_JOIN_EXEC_H

#include "executor/executor.h"
#include "nodes/execnodes.h"
#include "portability/instr_time.h"
#include "port/atomics.h"
#include "storage/buffile.h"
#include "storage/barrier.h"
#include "storage/condition_variable.h"
#include "storage/sharedfileset.h"
#include "storage/spin.h"
#include "utils/datum.h"
#include "utils/dsa.h"

#include "gh_hash.h"
#include "gpuhash_join.h"
#include "heapscan.h"
#include "keys.h"

/*
 * The states of ExecCustomScan (ghj_exec), in the order a join goes through
 * them; a rescan goes back to GHJ_NEXT_BATCH, or to GHJ_BUILD_TABLE when the
 * table has to be built again.  Two kinds of batch: an outer batch is up to
 * batch_cap outer rows probed together (GHJ_NEXT_BATCH); a batch of the
 * join, as Hash Join's, is the share of both sides whose hashes fall in one
 * of nbatch partitions (join_batch.c), all of the join when nbatch is 1.
 */
typedef enum GhjExecState
{
	GHJ_BUILD_TABLE = 0,		/* read the inner side, build batch 0's table */
	GHJ_NEXT_BATCH,				/* pull, hash and probe the next outer batch */
	GHJ_PROBE_BATCH,			/* verify the batch's candidates and emit */
	GHJ_UNMATCHED_INNER,		/* right and full joins: emit unmatched inner */
	GHJ_NEED_NEW_BATCH,			/* load the next batch of the join's inner side */
	GHJ_DONE
} GhjExecState;

/* Why a batch of the join held more than its budget (join_batch.c). */
#define GHJ_OVER_SKEW	0x01	/* its rows share their hash bits */
#define GHJ_OVER_FILES	0x02	/* more batches' file buffers would cost more */

/*
 * What one participant of a parallel GpuHashJoin did, for EXPLAIN ANALYZE.
 * Workers write theirs into dynamic shared memory when their outer side is
 * done (before their last tuple reaches the Gather); the leader copies the
 * array out when the plan shuts down, before the segment goes away.
 */
typedef struct GhjStats
{
	bool		valid;
	uint64		inner_rows;
	uint64		batches;
	uint64		candidates;
	uint64		matches;
	double		build_ms;
	double		load_ms;		/* a shared build's phases (GhjState's) */
	double		store_ms;
	double		table_ms;
	double		outer_ms;		/* the probe's phases (GhjState's) */
	double		order_ms;
	double		rows_ms;
	double		context_ms;
	double		device_ms;
	uint64		cpu_batches;
	bool		shared_table;	/* a service table shared by the participants */
	GhTarget	target;			/* where its table was */
	GhFallback	fallback;		/* its first fallback to the CPU twin */
	bool		outer_scanned;	/* the device scan read its outer side */
	GhHeapScanCounts outer_scan;	/* what that scan did */
	/* filled by join_exec.c after ghj_publish_stats (ghj_fill_stats) */
	int			nbatch;			/* the join's batches (join_batch.c) */
	int			nbatch_original;
	int			nbatch_planned; /* batches taken back (ghj_batch_shrink) */
	Size		mem_peak;		/* host bytes, counted as join_batch.c does */
	Size		dev_peak;		/* the largest table */
	uint8		over_budget;	/* GHJ_OVER_*: why a batch exceeded the budget */
} GhjStats;

/*
 * The phases of a shared build's barrier (join_parallel.c's header says
 * what each does).  A participant that attaches late joins the phase it
 * finds; one that attaches at GHJ_PH_DONE finds the store complete.
 */
#define GHJ_PH_LOAD			0	/* read shares of the inner side into chunks */
#define GHJ_PH_ALLOCATE		1	/* one participant allocates the store */
#define GHJ_PH_COMPACT		2	/* all copy the chunks into it */
#define GHJ_PH_TABLES		3	/* each builds its table */
#define GHJ_PH_REGROUP		4	/* all put the store in its group order */
#define GHJ_PH_DONE			5	/* the store is complete and read-only */

/* The join's part of the parallel segment (join_parallel.c). */
typedef struct GhjShared
{
	int			nworkers;

	/*
	 * A shared build (GHJ_PRIV_SHARED): the participants read their shares
	 * of the partial inner path into chunks of their own memory, then each
	 * copies its share into one store in the store's DSA area that every
	 * participant probes in place (the GHJ_PH_* phases of build_barrier).
	 */
	Barrier		build_barrier;
	slock_t		mutex;

	/*
	 * The store's own DSA area (DSM_HANDLE_INVALID: no shared build), which
	 * the leader creates with the parallel segment and keeps to the end.
	 * Not the query's area: creating the store's segments takes the kernel
	 * tens of milliseconds, under the lock of the area that holds them, and
	 * every worker takes the query area's lock as it starts.
	 */
	dsa_handle	store_area;

	/* the store, from GHJ_PH_ALLOCATE on */
	uint64		nrows;			/* rows the participants loaded */
	Size		arena_bytes;	/* their by-reference data */
	pg_atomic_uint64 next_row;	/* GHJ_PH_COMPACT: where the next share goes */
	pg_atomic_uint64 next_arena;
	bool		prealloc_claimed;	/* ghj_shared_preallocate's participant */
	bool		xchg_claimed;	/* the one that makes xchg */
	uint64		store_cap;		/* rows store_hashes and store_recs hold */
	Size		arena_cap;		/* bytes store_arena holds */
	dsa_pointer store_hashes;	/* uint64[nrows] */
	dsa_pointer store_recs;		/* Datum[nrows * stride] */
	dsa_pointer store_arena;	/* by-reference values, as offsets in it */

	/*
	 * From GHJ_PH_TABLES on: when some hash repeats, one table's row array
	 * (canon_rows) is the store's order, into which GHJ_PH_REGROUP copies
	 * the records and hashes (group_recs, group_hashes); the tables not
	 * already in that order are then built again from the grouped hashes,
	 * which gives them the same groups (gh_table_build_grouped).
	 * order_svc: that row array is of the GPU service's table that the
	 * participants share, so its views are in store order too.
	 */
	bool		order_claimed;
	bool		regroup;
	bool		order_svc;
	dsa_pointer canon_rows;		/* uint32[nrows] */
	dsa_pointer group_hashes;
	dsa_pointer group_recs;
	pg_atomic_uint32 next_range;	/* GHJ_PH_REGROUP: the next to copy */

	/*
	 * With the GPU service, the participants of a shared build, whose
	 * hashes are the same array, share one table: the first to get here
	 * builds it (svc_state BUILDING, then BUILT with svc_table), the others
	 * wait on svc_cv and take views of it.  FAILED: each builds its own.
	 */
	int			svc_state;
	uint32		svc_table;
	bool		svc_identity;	/* its rows are the identity (no hash repeats) */
	ConditionVariable svc_cv;

	/*
	 * The exchange area that table's build sends to the service, made while
	 * the participants load (ghj_shared_preallocate, DSM_HANDLE_INVALID if
	 * none) and filled with the store's hashes as they compact, each its own
	 * range: the builder then copies nothing.  It holds xchg_cap hashes;
	 * xchg_broken: a participant could not write its range.  Usually it is
	 * the GPU service's own area, which the service keeps from one build
	 * to the next: xchg_token is then the claim the builder gives back once
	 * the table is built (gh_table_claim_exchange), 0 for an area of the
	 * query's own.
	 */
	dsm_handle	xchg;
	uint64		xchg_cap;
	bool		xchg_broken;
	uint64		xchg_token;

	/*
	 * A shared build past the participants' combined budget (join_parts.c):
	 * both sides partitioned by hash bits into shared tuplestores in
	 * fileset, each partition then joined by one participant alone.
	 * parts_ready is set once nparts and parts are.
	 */
	bool		can_spill;		/* fileset is set up (the segment is in DSM) */
	SharedFileSet fileset;
	pg_atomic_uint64 loaded_bytes;	/* the participants' chunks, allocated */
	bool		spill_claimed;	/* a participant is setting up the parts */
	pg_atomic_uint32 parts_ready;
	int			nparts;
	dsa_pointer parts;			/* 2 * nparts stores (inner, outer), counts */
	pg_atomic_uint32 next_part; /* the next partition to claim */

	GhjStats	stats[FLEXIBLE_ARRAY_MEMBER];
} GhjShared;

/*
 * A chunk of a participant's share of a shared build's inner side
 * (join_parallel.c): hashes, records, then the records' by-reference data.
 * In a chunk a by-reference value is its offset in the chunk's data, which
 * compaction turns into an offset in the store's arena.  The chunks go
 * either to the store (ghj_shared_compact) or, when the build spills, to
 * the partitions (join_parts.c).
 */
typedef struct GhjChunk
{
	struct GhjChunk *next;
	uint32		cap;			/* rows it has room for */
	uint32		nrows;
	Size		data_size;
	Size		data_used;
	uint64		hashes[FLEXIBLE_ARRAY_MEMBER];	/* cap of them */
} GhjChunk;
#define GhjChunkRecs(c) \
	((Datum *) ((char *) (c) + MAXALIGN(offsetof(GhjChunk, hashes) + \
										sizeof(uint64) * (c)->cap)))
#define GhjChunkData(c, stride) \
	((char *) GhjChunkRecs(c) + sizeof(Datum) * (c)->cap * (stride))

/*
 * The inner row store and the table (join_build.c).  A record is stride
 * Datums (GhjState's record layout); the store holds ninner of them.
 */
typedef struct GhjBuild
{
	bool		built;
	GhTarget	target;
	GhFallback	fallback;		/* the run's first fallback to the CPU twin */
	uint32		ninner;
	Datum	   *inner_recs;		/* ninner records, in hash-group order */
	Size		byref_bytes;	/* by-reference data the records point to */
	Datum	   *nullkey_recs;	/* right/full joins: rows with a NULL key */
	uint32		n_nullkey;
	uint32	   *matched;		/* bitmap over ninner: right/full joins */
	GhTable    *table;
	uint32		store_cap;		/* records inner_recs has room for */
	uint64	   *store_hashes;	/* their hashes, while the store fills */

	/*
	 * What to add to record position k (keys, then columns) to read it:
	 * zero but for the by-reference values of a shared store, which hold
	 * offsets into its arena (mapped at another address in each process).
	 */
	Datum	   *rec_base;
	bool		store_shared;	/* inner_recs is the shared store */
	bool		svc_builder;	/* it built the service table the others view */
	bool		gpu_later;		/* on the CPU twin until the context is made */
	uint64		n_inner_read;	/* inner rows kept (stored or spilled) */
	Size		dev_peak;		/* the largest table */
	double		dev_ms_done;	/* device time of tables already freed */

	/* for EXPLAIN ANALYZE */
	uint64		n_builds;
	double		build_ms;
	double		load_ms;		/* shared build: reading the inner side */
	double		store_ms;		/* shared build: the store, waits included */
	double		table_ms;		/* shared build: the table */
	double		context_ms;		/* waiting for the device to be ready */
} GhjBuild;

/* The outer batch and its probe (join_probe.c). */
typedef struct GhjProbe
{
	uint32		batch_cap;
	uint32		batch_n;
	Datum	   *batch_vals;		/* batch_cap x nstored column values */
	bool	   *batch_isnull;
	Datum	   *batch_keys;		/* batch_cap x nkeys */
	bool	   *batch_null;
	uint64	   *batch_hashes;	/* pinned for the GPU */
	uint32	   *batch_first;
	uint32	   *batch_count;
	uint32	   *batch_order;	/* the rows to visit: matched first */
	uint32	   *visit_first;	/* first and count of each visit, in order */
	uint32	   *visit_count;
	Datum	   *visit_recs;		/* each visit's first candidate, copied */
	char	   *visit_bytes;	/* and its short by-reference keys */
	uint32		n_order;
	uint32		cur;			/* position in batch_order */
	uint32		cur_cand;
	bool		cur_loaded;		/* outer_slot holds the row at cur */
	bool		cur_matched;
	bool		outer_done;		/* the outer side has returned its last row */
	uint32		inner_pos;		/* GHJ_UNMATCHED_INNER: the next record */
	bool		batch_in_table;	/* batch buffers lent by the table (service) */

	/* for EXPLAIN ANALYZE */
	uint64		n_batches;
	uint64		n_candidates;
	uint64		n_matches;
	double		outer_ms;		/* reading and hashing outer batches */
	double		order_ms;		/* ordering a batch's visits */
	double		rows_ms;		/* a batch's rows, the plan above included */
	instr_time	probe_mark;		/* the last of these phases ended here */
	bool		probe_marked;
	uint64		n_cpu_batches;	/* batches probed on the CPU twin meanwhile */
} GhjProbe;

/*
 * The join's batches (join_batch.c): the inner side partitioned by hash
 * bits into nbatch batches when it does not fit mem_budget, the rows of
 * batches other than curbatch in temp files, as Hash Join's; see
 * join_batch.c.
 */
typedef struct GhjBatches
{
	Size		mem_budget;		/* get_hash_memory_limit() */
	Size		store_limit;	/* of it, what the inner store may take */
	bool		table_on_host;	/* the table counts as host memory (CPU twin) */
	int			nbatch;
	int			nbatch_original;	/* when the build began */
	int			nbatch_outstart;	/* when the outer side began */
	int			nbatch_seen;	/* the most of partitions already joined */
	int			nbatch_planned; /* the most batches taken back (ghj_batch_shrink) */
	int64		spill_inner_bytes;	/* written to the inner files */
	int			curbatch;
	bool		grow_enabled;	/* false once doubling stopped splitting rows */
	uint8		over_budget;	/* GHJ_OVER_*: why a batch exceeded the budget */
	MemoryContext spill_cxt;	/* the files and their buffers */
	BufFile   **inner_files;	/* nbatch each; NULL: no rows */
	BufFile   **outer_files;
	BufFile    *nullkey_file;	/* right/full: NULL-key inner rows, nbatch > 1 */
	bool		nullkey_reading;	/* ghj_next_unmatched_inner reads it */
	TupleDesc	rec_desc;		/* a spilled inner row: keys, then columns */
	TupleDesc	outer_desc;		/* a spilled outer row: keys, then stored */
	Datum	   *spill_vals;		/* scratch for forming and deforming them */
	bool	   *spill_null;
	Datum	   *spill_rec;		/* one record read back from nullkey_file */
	uint32		batch_byref_limit;	/* by-reference bytes of one outer batch */
	Size		mem_peak;		/* host bytes, the largest counted */
} GhjBatches;

/* A parallel join (join_parallel.c). */
typedef struct GhjParallel
{
	GhjShared  *shared;			/* the parallel segment's part (DSM) */
	dsa_area   *store_area;		/* GhjShared.store_area, once attached */
	GhjChunk   *chunk;			/* shared build: the chunk being filled */
	GhjChunk   *chunks;			/* and those filled, in build_tmp_cxt */
	dsm_segment *xchg_seg;		/* GhjShared.xchg, if this participant made it */
	bool		order_provider; /* its table's rows are the store's order */
} GhjParallel;

/*
 * A shared build that spilled (join_parts.c): this participant's accessors
 * of the partitions' stores, and the partition it is joining (curpart, -1
 * for none), whose rows the children's places take (ghj_next_inner,
 * next_outer).
 */
typedef struct GhjParts
{
	MemoryContext part_cxt;
	struct SharedTuplestoreAccessor **part_acc; /* 2 * nparts, NULL: none */
	uint64	   *part_rows;		/* inner rows and bytes this one wrote */
	uint64	   *part_bytes;
	int			curpart;
	int			nparts_joined;	/* partitions this participant joined */
	uint64		part_inner_rows;	/* and their inner rows */
	Size		own_loaded;		/* bytes of chunks this participant made */
	TupleTableSlot *part_inner_slot;
	TupleTableSlot *part_outer_slot;
	Datum	   *part_vals;		/* an inner row written back (put_record) */
	bool	   *part_null;
	double		part_est_rows;	/* the partition's inner rows and width */
	int			part_est_width;
} GhjParts;

/*
 * The node's state: what the plan says and what the node sets up at
 * executor start-up (join_exec.c), which the other files read, then one
 * part per file that owns it.
 */
typedef struct GhjState
{
	CustomScanState css;
	GhjExecState state;

	/* what the plan says (join_exec.c) */
	JoinType	jointype;
	int			nkeys;
	int			nouter;
	bool		single_match;	/* stop at the first match of an outer row */
	bool		shared_build;	/* the plan asks for a shared build */
	PlanState  *outer_ps;
	PlanState  *inner_ps;
	/* the outer side read as pages by the device scan (ghj_outer_next) */
	const char *outer_scan_refusal; /* why not, or NULL */
	GhScanSource *outer_src;	/* the current read of the outer side */
	bool		outer_src_tried;
	GhHeapScanCounts outer_scan;	/* what earlier reads did (rescans) */
	List	   *hashclauses;	/* for EXPLAIN */
	List	   *joinquals_expr;	/* for EXPLAIN */

	/* the hash clauses (keys.h) */
	GhKeySet	outer_keys;		/* the hash clauses' outer arguments */
	GhKeySet	inner_keys;		/* and their inner ones */
	bool	   *own_mix;		/* both sides hash with gh_key_int_mix */
	bool		outer_keys_plain;	/* every outer key a plain column hashed by
									 * gh_key_int_mix */
	FmgrInfo   *eq;
	uint8	   *eq_fast;		/* GhKeyEqKind: the equality done in line */
	Oid		   *coll;
	bool	   *swapped;
	Bitmapset  *inner_key_params;	/* PARAM_EXEC ids the inner keys use */
	ExprState  *joinqual;
	ExprState  *otherqual;
	ProjectionInfo *proj;

	/*
	 * Direct projection: with no join filter and no other qual, and a
	 * target list of plain columns, the result slot is filled straight from
	 * the outer batch row and the inner record (proj_inner[c], proj_col[c]
	 * for result column c), without loading either side's slot or running
	 * the expression interpreter.  Null-extended rows take the general way.
	 */
	bool		direct_proj;
	bool		probe_direct;	/* ghj_probe_batch_direct serves the batches */
	int			nproj;
	bool	   *proj_inner;
	int		   *proj_col;

	TupleTableSlot *outer_slot;
	TupleTableSlot *inner_slot;
	TupleTableSlot *null_outer;
	TupleTableSlot *null_inner;
	MemoryContext build_cxt;
	MemoryContext batch_cxt;
	MemoryContext build_tmp_cxt;	/* by-reference data before regrouping */

	/*
	 * The layout of an inner record (GhjBuild's store).  A record is stride
	 * Datums: the row's key values, the values of the inner child's columns
	 * it keeps (those the join reads: ghj_init_inner_stored), then a null
	 * bitmap of nullwords uint64 words over those columns (keys are never
	 * NULL).
	 */
	int			ninner_cols;	/* columns a record keeps */
	int		   *inner_col;		/* record column j: the child's column */
	int		   *inner_key_col;	/* key k: the child's column it is, or -1 */
	int16	   *inner_attlen;	/* of the kept columns */
	bool	   *inner_attbyval;
	bool		inner_has_byref;	/* a by-reference key or column */
	int			inner_deform;	/* the inner row's attributes read, 1 .. n */
	int		   *byref_pos;		/* the record's by-reference positions */
	int			nbyref_pos;		/* how many */
	bool		inner_key_byref;	/* a by-reference key */
	int			nbyref_keys;	/* how many */
	int			nullwords;		/* uint64 words of a record's null bitmap */
	int			stride;			/* Datums per record: keys, columns, nulls */

	/*
	 * The outer columns the join reads (its target list and quals), which
	 * are all an outer batch (GhjProbe) keeps: the outer child may return
	 * more than that (a Seq Scan returning the heap tuple as it is, see
	 * join_plan.c).
	 */
	int16	   *outer_attlen;
	bool	   *outer_attbyval;
	bool		outer_has_byref;	/* a stored column is by reference */
	int			nstored;
	int		   *stored_col;		/* outer child column of each stored one */
	int			outer_deform;	/* columns of the child's slot to deform */

	GhjShared  *shared_copy;	/* leader: the segment's part, copied out at
								 * shutdown for EXPLAIN */

	GhjBuild	build;			/* join_build.c */
	GhjProbe	probe;			/* join_probe.c */
	GhjBatches	batch;			/* join_batch.c */
	GhjParallel par;			/* join_parallel.c */
	GhjParts	parts;			/* join_parts.c */
} GhjState;

/*
 * ghj_elapsed_ms adds the time since *start to *ms and restarts *start: the
 * phase timers of EXPLAIN ANALYZE, read a few times per batch.
 */
static inline void
ghj_elapsed_ms(instr_time *start, double *ms)
{
	instr_time	now;
	instr_time	d;

	INSTR_TIME_SET_CURRENT(now);
	d = now;
	INSTR_TIME_SUBTRACT(d, *start);
	*ms += INSTR_TIME_GET_MILLISEC(d);
	*start = now;
}

/* join_build.c */
extern void ghj_build(GhjState *s);
extern void ghj_move_to_gpu(GhjState *s);
extern void ghj_store_row(GhjState *s, const Datum *rec, uint64 hash);
extern void ghj_finish_build(GhjState *s, uint64 *hashes, bool keep_nullkeys);
extern void ghj_free_table(GhjState *s);
extern bool ghj_next_part(GhjState *s);

/* join_batch.c */
extern void ghj_batch_setup(GhjState *s);
extern void ghj_batch_descs(GhjState *s, TupleDesc inner_desc,
							TupleDesc outer_desc);
extern void ghj_batch_init(GhjState *s);
extern double ghj_inner_estimate(GhjState *s, int *width);
extern Size ghj_batch_store_bytes(GhjState *s, uint32 cap);
extern void ghj_batch_note_peak(GhjState *s, Size extra);
extern int	ghj_batch_of(GhjState *s, uint64 hash);
extern void ghj_batch_increase(GhjState *s);
extern void ghj_batch_shrink(GhjState *s);
extern void ghj_batch_save_inner(GhjState *s, int batchno, const Datum *rec,
								 uint64 hash);
extern void ghj_batch_save_nullkey(GhjState *s, const Datum *rec);
extern void ghj_batch_save_outer(GhjState *s, int batchno, uint64 hash,
								 const Datum *keys, TupleTableSlot *slot);
extern bool ghj_batch_read_outer(GhjState *s, uint32 n);
extern const Datum *ghj_batch_read_nullkey(GhjState *s);
extern bool ghj_batch_advance(GhjState *s);
extern void ghj_batch_end(GhjState *s);

/* join_parallel.c */
extern Size ghj_shared_size(int nworkers);
extern void ghj_shared_init(GhjShared *sh, int nworkers);
extern void ghj_shared_reinit(GhjShared *sh, dsa_area *store);
extern void ghj_shared_create_area(GhjState *s);
extern void ghj_shared_end(GhjState *s);
extern int	ghj_shared_attach(GhjState *s);
extern Size ghj_shared_add(GhjState *s, const Datum *rec, uint64 hash,
						   Size byref_bytes);
extern bool ghj_shared_claim(GhjShared *sh, bool *claimed);
extern GhjChunk *ghj_shared_chunks(GhjState *s);
extern void ghj_shared_free_chunks(GhjState *s);
extern void ghj_shared_preallocate(GhjState *s);
extern bool ghj_shared_loaded(GhjState *s, uint64 *loaded);
extern bool ghj_shared_next_phase(GhjState *s);
extern void ghj_shared_allocate(GhjState *s, bool spilled);
extern void ghj_shared_compact(GhjState *s);
extern uint64 ghj_shared_nrows(GhjState *s);
extern uint64 *ghj_shared_hashes(GhjState *s);
extern void ghj_shared_prefault(GhjState *s);
extern dsm_segment *ghj_shared_exchange(GhjState *s, const uint64 *hashes,
										bool *attached);
extern void ghj_shared_exchange_end(GhjState *s);
extern void ghj_shared_offer_order(GhjState *s, const uint32 *rows,
								   bool service_shared);
extern bool ghj_shared_in_order(GhjState *s, const GhTable *table);
extern void ghj_shared_regroup(GhjState *s);
extern void ghj_shared_regrouped(GhjState *s);
extern void ghj_shared_detach(GhjState *s);
extern void ghj_shared_map(GhjState *s);
extern bool ghj_shared_table_claim(GhjShared *sh);
extern void ghj_shared_table_built(GhjShared *sh, uint32 table_id,
								   bool identity);
extern void ghj_shared_table_failed(GhjShared *sh);
extern uint32 ghj_shared_table_wait(GhjShared *sh, bool *identity);
extern void ghj_fill_stats(GhjState *s, GhjStats *st);
extern void ghj_publish_stats(GhjState *s);

/* join_parts.c */
extern void ghj_parts_init(GhjShared *sh, dsm_segment *seg);
extern void ghj_parts_reinit(GhjShared *sh, dsa_area *area);
extern void ghj_parts_begin(GhjState *s);
extern bool ghj_parts_check(GhjState *s, Size grown);
extern bool ghj_parts_spilling(GhjState *s);
extern void ghj_parts_put_inner(GhjState *s, TupleTableSlot *slot, uint64 hash);
extern void ghj_parts_write_outer(GhjState *s, bool in_time);
extern bool ghj_parts_next(GhjState *s);
extern void ghj_parts_end(GhjState *s);
extern TupleTableSlot *ghj_parts_next_tuple(GhjState *s, bool inner);

/* join_probe.c */
extern bool ghj_next_batch(GhjState *s);
extern TupleTableSlot *ghj_probe_batch(GhjState *s, ExprContext *econtext);
extern TupleTableSlot *ghj_probe_batch_direct(GhjState *s);
extern TupleTableSlot *ghj_next_unmatched_inner(GhjState *s,
												ExprContext *econtext);
extern void ghj_reset_probe(GhjState *s);

/*
 * ghj_reset is ResetExprContext without the call when there is nothing to
 * reset, which is the usual case once per outer row and per candidate.
 */
static inline void
ghj_reset(ExprContext *econtext)
{
	MemoryContext cxt = econtext->ecxt_per_tuple_memory;

	if (!cxt->isReset || cxt->firstchild != NULL)
		MemoryContextReset(cxt);
}

/*
 * byref_len is datumGetSize of a by-reference value, in line for the
 * lengths a record's values mostly have.
 */
static inline Size
byref_len(Datum v, int16 typlen)
{
	if (typlen == -1)
		return VARSIZE_ANY(DatumGetPointer(v));
	if (typlen > 0)
		return typlen;
	return datumGetSize(v, false, typlen);
}

/* byref_size is the room a by-reference value takes in the record arena. */
static inline Size
byref_size(Datum v, int16 typlen)
{
	return MAXALIGN(byref_len(v, typlen));
}

/* ghj_kept_index is the position of col in cols[0..n), or -1. */
static inline int
ghj_kept_index(const int *cols, int n, int col)
{
	for (int j = 0; j < n; j++)
		if (cols[j] == col)
			return j;
	return -1;
}

/*
 * byref_attr says whether record position k (keys, then columns) holds a
 * by-reference value, and gives its length.
 */
static inline bool
byref_attr(GhjState *s, int k, int16 *typlen)
{
	if (k < s->nkeys)
	{
		*typlen = s->inner_keys.typlen[k];
		return !s->inner_keys.byval[k];
	}
	*typlen = s->inner_attlen[k - s->nkeys];
	return !s->inner_attbyval[k - s->nkeys];
}

/*
 * ghj_batch_mix is the second mix of a row's hash whose bits split the
 * rows: bits 32 and up give join_batch.c's batches (ghj_batch_of), bits 16
 * and up a spilled shared build's partitions (join_parts.c), so that a
 * partition's rows still spread over its batches; both are independent of
 * the bits the table uses (it starts from gh_mix64 of the hash itself).
 */
static inline uint64
ghj_batch_mix(uint64 hash)
{
	return gh_mix64(hash ^ UINT64CONST(0x2545f4914f6cdd1d));
}

/*
 * The by-reference keys of a visit's first candidate up to this size are
 * copied beside it (join_probe.c, gather_first): one cache line.
 */
#define GHJ_KEY_COPY_MAX 64

/* byref_null: is record position k a NULL column? (keys are never NULL) */
static inline bool
byref_null(GhjState *s, const Datum *rec, int k)
{
	const uint64 *nulls = (const uint64 *) &rec[s->nkeys + s->ninner_cols];
	int			c = k - s->nkeys;

	return k >= s->nkeys && (nulls[c / 64] & (UINT64CONST(1) << (c % 64))) != 0;
}

/*
 * ghj_run_fallback is why this participant's join ran on the CPU twin where
 * the GPU was wanted: its first fallback, or a table that waited for the
 * CUDA context to the end (gpuhash.device = auto); GH_FB_NONE if neither.
 */
static inline GhFallback
ghj_run_fallback(GhjState *s)
{
	if (s->build.fallback != GH_FB_NONE)
		return s->build.fallback;
	return s->build.gpu_later ? GH_FB_CONTEXT_NOT_READY : GH_FB_NONE;
}


/*
 * ghj_outer_next returns the outer side's next row: from the device scan
 * where it reads the outer side (started on the first call after
 * ghj_begin or a rescan), else from the child; NULL at the end.  The row's
 * values are valid until the next call.  (Here, not in join_probe.c: the
 * probe and the shared partitions both read the outer side.)
 */
static inline TupleTableSlot *
ghj_outer_next(GhjState *s)
{
	if (s->outer_scan_refusal == NULL && !s->outer_src_tried)
	{
		s->outer_src_tried = true;
		s->outer_src = gh_scan_source_begin(s->outer_ps, s->css.ss.ps.state,
											GH_TARGET_CPU);
	}
	if (s->outer_src != NULL)
		return gh_scan_source_next(s->outer_src);
	return ExecProcNode(s->outer_ps);
}

/*
 * ghj_outer_scan_counts gives what the device scan of the outer side did
 * in this participant so far: ended reads and the current one.
 */
static inline void
ghj_outer_scan_counts(GhjState *s, GhHeapScanCounts *c)
{
	*c = s->outer_scan;
	if (s->outer_src != NULL)
		gh_scan_counts_add(c, gh_scan_source_counts(s->outer_src));
}

/*
 * ghj_outer_scan_end ends the current device scan of the outer side, if
 * any, keeping its counts; the next ghj_outer_next starts another (a
 * rescan).
 */
static inline void
ghj_outer_scan_end(GhjState *s)
{
	if (s->outer_src != NULL)
	{
		gh_scan_counts_add(&s->outer_scan, gh_scan_source_counts(s->outer_src));
		gh_scan_source_end(s->outer_src);
		s->outer_src = NULL;
	}
	s->outer_src_tried = false;
}

#endif							/* GPUHASH_JOIN_EXEC_H */
