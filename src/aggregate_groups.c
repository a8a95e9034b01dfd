/*-------------------------------------------------------------------------
 * aggregate_groups.c
 *	  The group sets of gpuhash_aggregate(): input rows in, PostgreSQL's
 *	  groups out.
 *
 * Rows arrive one at a time from the executor (gh_agg_run_add), or as
 * packets that parallel workers made (gh_agg_run_add_packet), and are staged
 * in a device batch of GH_AGG_BATCH_PACKETS x gpuhash.batch_rows rows: each
 * row's keys and each aggregate argument as the device wants it (int64,
 * double, or NUMERIC as fixed point).  A full batch is flushed one of two
 * ways.
 *
 * Exact device keys (every key by value with bitwise equality: integers,
 * dates, timestamps, bool, oid): the keys travel as Datums and the device
 * does the rest (gh_agg_assign_exact): it hashes them, numbers the groups,
 * keeps each group's key, checks every row against it, and accumulates.
 * The host only learns the group count and the rows whose key met another
 * key's hash; those go to the fallback set (below).
 *
 * Host-checked keys (anything else: text, numeric, floats, arrays, ...):
 *	1. The host hashes the keys with their extended hash functions, combined
 *	   (a NULL key hashes to a constant of its position, so NULLs form their
 *	   own group), and keeps a copy of them.
 *	2. The device table gives every row a group id by hash (gh_agg_assign).
 *	3. The host checks every row's key against its group's representative
 *	   with the keys' equality (the first row of a new group becomes its
 *	   representative).  Two different keys with one hash meet here: the
 *	   later row does not match, and is taken out of the device batch.
 *	4. The device accumulates the rest (gh_agg_accumulate).
 *
 * Either way, rows taken out go to the fallback set, a CPU group set keyed by
 * the whole key (hash, then equality), with the same accumulators; and
 * NUMERIC values the device cannot take (NaN, infinities, more than 18
 * digits, scale above 24, or too large once scaled) are added on the host,
 * per group, with PostgreSQL's numeric functions ("side" state).  Every
 * group thus lives in exactly one set, and every key in one group: a hash
 * collision costs a little CPU time, never a wrong merge.
 *
 * NUMERIC fixed point: each column has a scale S, the largest display scale
 * seen so far (at most 24).  When a batch brings a larger one, the existing
 * sums and extremes of that column are rescaled on the host (rescale_column);
 * what no longer fits moves to the side state.
 *
 * At the end (gh_agg_run_finish) the accumulators come back to the host and
 * every group becomes one result row.  NUMERIC results are written directly
 * (aggregate_numeric.c), byte for byte what PostgreSQL's numeric functions
 * return; numeric_div and numeric_add remain for the values that do not fit
 * that path and for the host-side state.
 *
 * Memory: device buffers and accumulators through the device layer (freed by
 * the resource owner on ERROR); keys and representatives in memory contexts
 * under the caller's; the batch context is reset after every batch.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "common/hashfn.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/float.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/numeric.h"

#include "aggregate.h"

/* Largest NUMERIC display scale that the device takes. */
#define NUM_SCALE_CAP	24

/* Result of num_decode. */
#define NUMV_FINITE		0
#define NUMV_NAN		1
#define NUMV_PINF		2
#define NUMV_NINF		3
#define NUMV_BIG		4		/* finite, but not for the device */

/* A NUMERIC value of the batch that the host aggregates. */
typedef struct GhSideRow
{
	uint32		row;
	int			col;
	int			kind;			/* NUMV_* */
	Datum		value;			/* NUMV_BIG: the value, in batch memory */
} GhSideRow;

/* Host-side NUMERIC state of one (group, column). */
typedef struct GhNumSide
{
	uint64		key;			/* (group << 8) | column */
	int64		count;			/* values counted here */
	int64		nan;
	int64		pinf;
	int64		ninf;
	Datum		sum;			/* finite values added here, or 0 */
	Datum		min;
	Datum		max;
} GhNumSide;

/* A set of groups: the device set, or the exact CPU fallback set. */
typedef struct GhGroupSet
{
	bool		fallback;		/* the exact CPU set of colliding keys */
	GhTarget	target;
	/* device set: the hash table on the target */
	void	   *table;
	uint64		table_cap;
	/* fallback set: open addressing over (hash, id + 1), host memory */
	uint64	   *ex_hash;
	uint32	   *ex_id;
	uint64		ex_cap;
	/* accumulators on the target */
	void	   *acc;
	gh_agg_layout layout;
	uint64		ngroups;
	/* representatives: ngroups x nkeys */
	Datum	   *rep_vals;
	bool	   *rep_nulls;
	bool	   *rep_set;
	uint64		rep_cap;
	HTAB	   *side;
	/* at the end: accumulators on the host, and their layout */
	char	   *host_acc;
	gh_agg_layout hl;
} GhGroupSet;

/* The batch being filled: host arrays (pinned for the GPU) and their target twins. */
typedef struct GhAggBatch
{
	MemoryContext cxt;			/* reset after every batch */
	uint32		cap;
	uint32		n;
	uint64	   *h_keys[GH_AGG_MAX_KEYS];	/* exact: key Datums */
	uint8	   *h_knull;		/* exact: NULL masks */
	uint64	   *h_hashes;
	uint32	   *h_ids;
	uint32	   *h_bad;
	int64	   *h_vals[GH_AGG_MAX_COLS];
	uint8	   *h_valid[GH_AGG_MAX_COLS];
	uint8	   *h_ds[GH_AGG_MAX_COLS];	/* NUMERIC: display scale */
	int			max_dscale[GH_AGG_MAX_COLS];	/* NUMERIC: largest h_ds, -1: none */
	Datum	   *keys;			/* cap x nkeys */
	bool	   *knulls;
	GhSideRow  *side_rows;
	int			nside;
	int			side_cap;
	/* the same on the target */
	uint64	   *d_keys[GH_AGG_MAX_KEYS];
	uint8	   *d_knull;
	uint32	   *d_scratch;		/* exact: 2 * cap */
	uint64	   *d_hashes;
	uint32	   *d_ids;
	uint32	   *d_bad;
	void	   *d_vals[GH_AGG_MAX_COLS];
	uint8	   *d_valid[GH_AGG_MAX_COLS];
	/* rows of the batch that go to the fallback set */
	uint32	   *fb_ids;
	int64	   *fb_vals[GH_AGG_MAX_COLS];
	uint8	   *fb_valid[GH_AGG_MAX_COLS];
} GhAggBatch;

/* NUMERIC state of a run that outlives its batches. */
typedef struct GhAggNumeric
{
	MemoryContext cxt;			/* host-side sums and extremes */
	int			scale[GH_AGG_MAX_COLS]; /* column scale, -1: none yet */
	Datum		nan;
	Datum		pinf;
	Datum		ninf;
} GhAggNumeric;

/* Counters and timings, for DEBUG1 and DEBUG2 (gh_agg_run_report). */
typedef struct GhAggStats
{
	uint64		rows;
	uint64		packets;
	uint64		batches;
	uint64		bad_rows;
	uint64		side_values;
	uint64		rescales;
	uint64		packet_bytes;
	uint64		worker_busy_us; /* sum over packets */
	int			workers_planned;
	int			workers_launched;
	double		ms_input;		/* the input query's executor, wall */
	double		ms_copy;		/* packets into the batch */
	double		ms_flush_input; /* ms_flush while the input ran */
	instr_time	t_begin;
	double		ms_flush;
	double		ms_device;
	double		ms_verify;
	double		ms_fetch;		/* accumulators to the host */
	double		ms_finish;		/* ms_fetch and the result rows */
} GhAggStats;

/*
 * The result rows: a cursor over the main set, the fallback set, then (no
 * GROUP BY, no group) the one row of an empty input.
 */
typedef struct GhAggCursor
{
	MemoryContext cxt;			/* the rows' memory, reset every 1024 rows */
	int			set;			/* 0 main, 1 fallback, 2 the empty row, 3 done */
	uint64		next;			/* next group of that set */
	uint64		rows;			/* rows made since the cursor started */
	instr_time	t_first;		/* when the first row was asked for */
	bool		reported;
} GhAggCursor;

struct GhAggRun
{
	GhAggPlan  *plan;
	GhTarget	target;
	int			nkeys;
	int			ncols;
	bool		exact;			/* keys grouped exactly on the device */
	MemoryContext cxt;
	MemoryContext rep_cxt;		/* representatives' by-reference keys */
	GhAggBatch	batch;
	GhGroupSet	main;
	GhGroupSet	fb;
	GhAggNumeric num;
	GhAggStats	stats;
	GhAggCursor out;
};

static void flush(GhAggRun *run);
static void set_init(GhAggRun *run, GhGroupSet *s, bool fallback, GhTarget target);
static void ensure_groups(GhAggRun *run, GhGroupSet *s, uint64 need);
static void ensure_table(GhAggRun *run, GhGroupSet *s, uint32 n);
static void set_rep(GhAggRun *run, GhGroupSet *s, uint64 g, uint32 row);
static bool row_equals_rep(GhAggRun *run, GhGroupSet *s, uint64 g, uint32 row);
static uint32 exact_find(GhAggRun *run, GhGroupSet *s, uint32 row, uint64 h);
static void to_fallback(GhAggRun *run, uint32 nbad);
static void apply_side_rows(GhAggRun *run, uint32 nbad);
static void prepare_numeric(GhAggRun *run);
static void rescale_column(GhAggRun *run, int c, int newscale);
static GhNumSide *side_entry(GhAggRun *run, GhGroupSet *s, uint64 g, int c);
static void side_add_finite(GhAggRun *run, GhNumSide *e, Datum v, bool count,
							bool sum, bool extremes);
static int	num_decode(Datum d, int64 *m, int *dscale);
static Datum num_make(int128 v, int scale, int dscale);
static Datum num_from_int128(int128 v);

/* pow10_128: 10^k, 0 <= k <= 38 (10^38 is the largest below 2^127). */
static inline int128
pow10_128(int k)
{
	return (int128) gh_pow10_u128(k);
}

/*
 * ON_TARGET words a device operation's action as its ERROR says it: "... on
 * the GPU" when the run's device is a GPU.
 */
#define ON_TARGET(run, action) \
	((run)->target == GH_TARGET_GPU ? action " on the GPU" : action)

static double
ms_since(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	return INSTR_TIME_GET_MILLISEC(now);
}

/*
 * gh_agg_run_begin allocates the batch buffers and the two group sets of
 * one gpuhash_aggregate() call.
 */
GhAggRun *
gh_agg_run_begin(GhAggPlan *plan, GhTarget target)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "gpuhash_aggregate",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	GhAggRun   *run = palloc0(sizeof(GhAggRun));
	size_t		hbytes;
	size_t		dbytes;
	char	   *h;
	char	   *d;
	uint32		cap;
	int			nk;

	INSTR_TIME_SET_CURRENT(run->stats.t_begin);
	run->plan = plan;
	run->target = target;
	run->nkeys = plan->nkeys;
	run->ncols = plan->ncols;
	run->cxt = cxt;
	run->batch.cxt = AllocSetContextCreate(cxt, "gpuhash_aggregate batch",
										   ALLOCSET_DEFAULT_SIZES);
	run->rep_cxt = AllocSetContextCreate(cxt, "gpuhash_aggregate keys",
										 ALLOCSET_DEFAULT_SIZES);
	run->num.cxt = AllocSetContextCreate(cxt, "gpuhash_aggregate numeric",
										  ALLOCSET_DEFAULT_SIZES);
	run->exact = plan->device_keys;
	cap = (uint32) Min((int64) Max(gpuhash_batch_rows, 1) * GH_AGG_BATCH_PACKETS,
					   GH_AGG_MAX_BATCH);
	run->batch.cap = cap;
	nk = run->exact ? run->nkeys : 0;

	/*
	 * One host and one target allocation for all the batch arrays: hashes
	 * (or, exact, key Datums and NULL masks), values, ids, bad rows, valid
	 * flags; the target also holds the exact path's scratch.
	 */
	hbytes = (size_t) cap * (8 + 4 + 4 + (size_t) plan->ncols * 9 + (size_t) nk * 8 + 1);
	dbytes = hbytes + (run->exact ? (size_t) cap * 8 : 0);
	h = gh_host_alloc(target, hbytes);
	d = gh_dev_alloc(target, dbytes);
	run->batch.h_hashes = (uint64 *) h;
	run->batch.d_hashes = (uint64 *) d;
	h += (size_t) cap * 8;
	d += (size_t) cap * 8;
	for (int k = 0; k < nk; k++)
	{
		run->batch.h_keys[k] = (uint64 *) h;
		run->batch.d_keys[k] = (uint64 *) d;
		h += (size_t) cap * 8;
		d += (size_t) cap * 8;
	}
	if (run->exact)
	{
		run->batch.d_scratch = (uint32 *) d;
		d += (size_t) cap * 8;
	}
	for (int c = 0; c < plan->ncols; c++)
	{
		run->batch.h_vals[c] = (int64 *) h;
		run->batch.d_vals[c] = d;
		h += (size_t) cap * 8;
		d += (size_t) cap * 8;
	}
	run->batch.h_ids = (uint32 *) h;
	run->batch.d_ids = (uint32 *) d;
	h += (size_t) cap * 4;
	d += (size_t) cap * 4;
	run->batch.h_bad = (uint32 *) h;
	run->batch.d_bad = (uint32 *) d;
	h += (size_t) cap * 4;
	d += (size_t) cap * 4;
	for (int c = 0; c < plan->ncols; c++)
	{
		run->batch.h_valid[c] = (uint8 *) h;
		run->batch.d_valid[c] = (uint8 *) d;
		h += cap;
		d += cap;
		run->num.scale[c] = -1;
		run->batch.max_dscale[c] = -1;
		if (plan->cols[c].kind == GH_AGG_KIND_NUMERIC)
			run->batch.h_ds[c] = palloc(cap);
	}
	run->batch.h_knull = (uint8 *) h;
	run->batch.d_knull = (uint8 *) d;
	run->batch.keys = palloc(sizeof(Datum) * cap * Max(run->nkeys, 1));
	run->batch.knulls = palloc(sizeof(bool) * cap * Max(run->nkeys, 1));

	run->num.nan = DirectFunctionCall3(numeric_in, CStringGetDatum("NaN"),
									   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
	run->num.pinf = DirectFunctionCall3(numeric_in, CStringGetDatum("Infinity"),
										ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
	run->num.ninf = DirectFunctionCall3(numeric_in, CStringGetDatum("-Infinity"),
										ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));

	set_init(run, &run->main, false, target);
	set_init(run, &run->fb, true, GH_TARGET_CPU);
	MemoryContextSwitchTo(old);
	return run;
}

/* set_init prepares an empty group set with room for 1024 groups. */
static void
set_init(GhAggRun *run, GhGroupSet *s, bool fallback, GhTarget target)
{
	uint8		kind[GH_AGG_MAX_COLS];
	uint8		ops[GH_AGG_MAX_COLS];

	memset(s, 0, sizeof(*s));
	s->fallback = fallback;
	s->target = target;
	for (int c = 0; c < run->ncols; c++)
	{
		kind[c] = run->plan->cols[c].kind;
		ops[c] = run->plan->cols[c].ops;
	}
	gh_agg_layout_init(&s->layout, run->ncols, kind, ops,
					   run->exact && !fallback ? run->nkeys : 0, 0);
	ensure_groups(run, s, 1024);
}

/*
 * ensure_groups makes room for need groups: accumulators (moved to a larger
 * allocation, the new part initialised) and representatives.
 */
static void
ensure_groups(GhAggRun *run, GhGroupSet *s, uint64 need)
{
	if (need > GH_AGG_MAX_GROUPS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("gpuhash_aggregate supports at most %llu groups",
						(unsigned long long) GH_AGG_MAX_GROUPS)));
	if (need > s->layout.group_cap)
	{
		uint64		newcap = Max(need, Max(s->layout.group_cap * 2, 1024));
		gh_agg_layout nl;
		void	   *nacc;

		newcap = Min(newcap, GH_AGG_MAX_GROUPS);
		gh_agg_layout_init(&nl, s->layout.ncols, s->layout.kind, s->layout.ops,
						   s->layout.nkeys, newcap);
		nacc = gh_dev_alloc(s->target, nl.bytes);
		if (s->acc)
			GH_AGG_DEVICE_CALL(gh_agg_acc_move, s->target,
							   "growing the aggregate's accumulators",
							   nacc, &nl, s->acc, &s->layout, s->ngroups);
		GH_AGG_DEVICE_CALL(gh_agg_acc_init, s->target,
						   "growing the aggregate's accumulators",
						   nacc, &nl, s->ngroups, newcap);
		if (s->acc)
			gh_dev_free(s->acc);
		s->acc = nacc;
		s->layout = nl;
	}
	if (need > s->rep_cap)
	{
		uint64		newcap = Max(need, Max(s->rep_cap * 2, 1024));
		size_t		nk = Max(run->nkeys, 1);

		if (s->rep_vals == NULL)
		{
			s->rep_vals = MemoryContextAllocHuge(run->cxt, sizeof(Datum) * nk * newcap);
			s->rep_nulls = MemoryContextAllocHuge(run->cxt, sizeof(bool) * nk * newcap);
			s->rep_set = MemoryContextAllocHuge(run->cxt, sizeof(bool) * newcap);
		}
		else
		{
			s->rep_vals = repalloc_huge(s->rep_vals, sizeof(Datum) * nk * newcap);
			s->rep_nulls = repalloc_huge(s->rep_nulls, sizeof(bool) * nk * newcap);
			s->rep_set = repalloc_huge(s->rep_set, sizeof(bool) * newcap);
		}
		memset(s->rep_set + s->rep_cap, 0, newcap - s->rep_cap);
		s->rep_cap = newcap;
	}
}

/*
 * ensure_table keeps the device table's load at most gpuhash.load_factor
 * even if every one of the next n rows starts a new group.
 */
static void
ensure_table(GhAggRun *run, GhGroupSet *s, uint32 n)
{
	double		need = ((double) s->ngroups + n) / gpuhash_load_factor;
	uint64		cap = 1024;
	void	   *mem;

	if (s->table != NULL && need <= (double) s->table_cap)
		return;
	while ((double) cap < need)
		cap <<= 1;
	mem = gh_dev_alloc(s->target, gh_agg_table_bytes(cap));
	GH_AGG_DEVICE_CALL(gh_agg_table_init, s->target, "building the group table",
					   mem, cap);
	if (s->table)
		GH_AGG_DEVICE_CALL(gh_agg_table_rehash, s->target, "growing the group table",
						   s->table, s->table_cap, mem, cap);
	if (s->table)
		gh_dev_free(s->table);
	s->table = mem;
	s->table_cap = cap;
}

/* add_side_row lists a NUMERIC value of the batch for the host. */
static void
add_side_row(GhAggRun *run, uint32 row, int col, int kind, Datum value)
{
	if (run->batch.nside == run->batch.side_cap)
	{
		run->batch.side_cap = Max(run->batch.side_cap * 2, 64);
		run->batch.side_rows = run->batch.side_rows
			? repalloc(run->batch.side_rows, sizeof(GhSideRow) * run->batch.side_cap)
			: MemoryContextAlloc(run->cxt, sizeof(GhSideRow) * run->batch.side_cap);
	}
	run->batch.side_rows[run->batch.nside].row = row;
	run->batch.side_rows[run->batch.nside].col = col;
	run->batch.side_rows[run->batch.nside].kind = kind;
	run->batch.side_rows[run->batch.nside].value = value;
	run->batch.nside++;
}

/* NULL keys hash to a constant of their position. */
static inline uint64
null_hash(int k)
{
	return UINT64CONST(0x9e3779b97f4a7c15) * (uint64) (k + 1);
}

/*
 * stage_values stages the aggregate arguments of row i of the batch.
 */
static void
stage_values(GhAggRun *run, uint32 i, Datum *values, bool *isnull)
{
	GhAggPlan  *plan = run->plan;

	for (int c = 0; c < run->ncols; c++)
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
				run->batch.h_vals[c][i] = DatumGetInt64(v);
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
				kind = num_decode(v, &m, &ds);
				if (kind == NUMV_FINITE)
				{
					run->batch.h_vals[c][i] = m;
					run->batch.h_ds[c][i] = (uint8) ds;
					run->batch.max_dscale[c] = Max(run->batch.max_dscale[c], ds);
					break;
				}
				run->batch.h_valid[c][i] = 0;
				add_side_row(run, i, c, kind,
							 kind == NUMV_BIG ? datumCopy(v, false, -1) : (Datum) 0);
				break;
			case GHV_OTHER:
				break;
		}
	}
}

/*
 * gh_agg_run_add stages one input row: its keys (as Datums for the exact
 * device path; otherwise a copy, and the group hash of the keys' hash
 * functions) and its aggregate arguments; flushes the batch when full.
 */
void
gh_agg_run_add(GhAggRun *run, TupleTableSlot *slot)
{
	GhAggPlan  *plan = run->plan;
	MemoryContext old = MemoryContextSwitchTo(run->batch.cxt);
	uint32		i = run->batch.n;

	slot_getallattrs(slot);
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
			else
				run->batch.h_keys[k][i] = (uint64) slot->tts_values[k];
		}
		run->batch.h_knull[i] = mask;
	}
	else
	{
		uint64		h = 0;
		Datum	   *kv = run->batch.keys + (size_t) i * run->nkeys;
		bool	   *kn = run->batch.knulls + (size_t) i * run->nkeys;

		for (int k = 0; k < run->nkeys; k++)
		{
			GhAggKey   *key = &plan->keys[k];
			Datum		v = slot->tts_values[k];

			kn[k] = slot->tts_isnull[k];
			if (kn[k])
			{
				kv[k] = (Datum) 0;
				if (!key->carried)
					h = hash_combine64(h, null_hash(k));
				continue;
			}
			if (key->typlen == -1)
				v = PointerGetDatum(PG_DETOAST_DATUM_PACKED(v));
			if (!key->carried)
				h = hash_combine64(h, DatumGetUInt64(FunctionCall2Coll(&key->hash,
																	   key->collation, v,
																	   UInt64GetDatum(0))));
			kv[k] = key->typbyval ? v : datumCopy(v, false, key->typlen);
		}
		run->batch.h_hashes[i] = h;
	}
	stage_values(run, i, slot->tts_values + run->nkeys, slot->tts_isnull + run->nkeys);
	run->batch.n++;
	run->stats.rows++;
	MemoryContextSwitchTo(old);
	if (run->batch.n == run->batch.cap)
		flush(run);
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
 * gh_agg_run_add_packet stages a packet of rows that a parallel worker
 * already put in the device's form (exact keys; no NUMERIC columns), widening
 * its 4-byte arrays and filling in the NULL arrays it left out.
 */
void
gh_agg_run_add_packet(GhAggRun *run, const GhAggPacketHeader *pkt)
{
	uint32		n = pkt->n;
	const char *p = (const char *) (pkt + 1);
	const char *end = (const char *) pkt + VARSIZE(pkt);
	size_t		need = 0;
	instr_time	t0;

	if (!run->exact || pkt->nkeys != (uint32) run->nkeys ||
		pkt->ncols != (uint32) run->ncols || n > run->batch.cap)
		elog(ERROR, "gpuhash_aggregate: malformed packet of %u rows", n);
	for (int k = 0; k < run->nkeys; k++)
		need += (size_t) n * gh_agg_key_width(&run->plan->keys[k]);
	for (int c = 0; c < run->ncols; c++)
		need += (size_t) n * (gh_agg_col_width(&run->plan->cols[c]) +
							  ((pkt->nullcols >> c) & 1));
	if (pkt->flags & GH_PACKET_KEY_NULLS)
		need += n;
	if ((size_t) (end - p) != need)
		elog(ERROR, "gpuhash_aggregate: malformed packet of %u rows", n);
	if (run->batch.n + n > run->batch.cap)
		flush(run);
	INSTR_TIME_SET_CURRENT(t0);
	for (int w = 8; w >= 4; w -= 4)
	{
		for (int k = 0; k < run->nkeys; k++)
		{
			if (gh_agg_key_width(&run->plan->keys[k]) != w)
				continue;
			if (w == 8)
				memcpy(run->batch.h_keys[k] + run->batch.n, p, (size_t) n * 8);
			else
				widen32((int64 *) run->batch.h_keys[k] + run->batch.n, p, n);
			p += (size_t) n * w;
		}
		for (int c = 0; c < run->ncols; c++)
		{
			if (gh_agg_col_width(&run->plan->cols[c]) != w)
				continue;
			if (w == 8)
				memcpy(run->batch.h_vals[c] + run->batch.n, p, (size_t) n * 8);
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
	for (int c = 0; c < run->ncols; c++)
	{
		if (pkt->nullcols & ((uint32) 1 << c))
		{
			memcpy(run->batch.h_valid[c] + run->batch.n, p, n);
			p += n;
		}
		else
			memset(run->batch.h_valid[c] + run->batch.n, 1, n);
	}
	run->batch.n += n;
	run->stats.rows += n;
	run->stats.packets++;
	run->stats.packet_bytes += VARSIZE(pkt);
	run->stats.worker_busy_us += pkt->busy_us;
	run->stats.ms_copy += ms_since(t0);
	if (run->batch.n == run->batch.cap)
		flush(run);
}

/*
 * gh_agg_run_note_input records, for the DEBUG2 account, how the input query
 * ran: its parallel workers and the wall time of the executor.
 */
void
gh_agg_run_note_input(GhAggRun *run, int workers_planned, int workers_launched,
					  double ms_input)
{
	run->stats.workers_planned = workers_planned;
	run->stats.workers_launched = workers_launched;
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
	uint32		nbad = 0;
	gh_agg_ctrl ctrl;
	gh_agg_batch b;
	instr_time	t0,
				t1;

	/* 1. group ids; the values travel meanwhile */
	INSTR_TIME_SET_CURRENT(t0);
	gh_copy_htod(run->target, run->batch.d_hashes, run->batch.h_hashes, (size_t) n * 8);
	GH_AGG_DEVICE_CALL(gh_agg_assign, run->target, ON_TARGET(run, "grouping rows"),
					   s->table, s->table_cap, run->batch.d_hashes, n, run->batch.d_ids);
	for (int c = 0; c < run->ncols; c++)
	{
		if (run->plan->cols[c].kind != GH_AGG_KIND_NONE)
			gh_copy_htod(run->target, run->batch.d_vals[c], run->batch.h_vals[c], (size_t) n * 8);
		gh_copy_htod(run->target, run->batch.d_valid[c], run->batch.h_valid[c], n);
	}
	gh_copy_dtoh(run->target, run->batch.h_ids, run->batch.d_ids, (size_t) n * 4);
	gh_copy_dtoh(run->target, &ctrl, (char *) s->table + gh_agg_table_ctrl_offset(s->table_cap),
				 sizeof(ctrl));
	gh_sync(run->target);
	INSTR_TIME_SET_CURRENT(t1);
	run->stats.ms_device += INSTR_TIME_GET_MILLISEC(t1) - INSTR_TIME_GET_MILLISEC(t0);
	if (ctrl.full)
		gpuhash_report(GH_ERR_TABLE_FULL, NULL, "grouping rows");
	ensure_groups(run, s, ctrl.ngroups);

	/* 2. every row against its group's representative */
	for (uint32 i = 0; i < n; i++)
	{
		uint32		g = run->batch.h_ids[i];

		if (g >= ctrl.ngroups)
			elog(ERROR, "gpuhash_aggregate: group id %u out of range", g);
		if (!s->rep_set[g])
			set_rep(run, s, g, i);
		else if (!row_equals_rep(run, s, g, i))
			run->batch.h_bad[nbad++] = i;
		if ((i & 0xffff) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	s->ngroups = ctrl.ngroups;
	run->stats.ms_verify += ms_since(t1);

	/* 3. accumulate what matched */
	INSTR_TIME_SET_CURRENT(t1);
	memset(&b, 0, sizeof(b));
	b.n = n;
	b.ids = run->batch.d_ids;
	for (int c = 0; c < run->ncols; c++)
	{
		b.vals[c] = run->batch.d_vals[c];
		b.valid[c] = run->batch.d_valid[c];
	}
	if (nbad > 0)
		gh_copy_htod(run->target, run->batch.d_bad, run->batch.h_bad, (size_t) nbad * 4);
	if (nbad > 0)
		GH_AGG_DEVICE_CALL(gh_agg_skip, run->target, ON_TARGET(run, "aggregating"),
						   run->batch.d_ids, run->batch.d_bad, nbad);
	GH_AGG_DEVICE_CALL(gh_agg_accumulate, run->target, ON_TARGET(run, "aggregating"),
					   s->acc, &s->layout, s->ngroups, &b);
	run->stats.ms_device += ms_since(t1);
	return nbad;
}

static int
cmp_uint32(const void *a, const void *b)
{
	uint32		x = *(const uint32 *) a;
	uint32		y = *(const uint32 *) b;

	return x < y ? -1 : x > y ? 1 : 0;
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
	gh_agg_ctrl ctrl;
	gh_agg_batch b;
	gh_agg_keys keys;
	instr_time	t0;

	/* room for every group this batch could create */
	ensure_groups(run, s, s->ngroups + n);

	INSTR_TIME_SET_CURRENT(t0);
	memset(&keys, 0, sizeof(keys));
	keys.nkeys = run->nkeys;
	for (int k = 0; k < run->nkeys; k++)
	{
		gh_copy_htod(run->target, run->batch.d_keys[k], run->batch.h_keys[k], (size_t) n * 8);
		keys.vals[k] = run->batch.d_keys[k];
	}
	if (run->nkeys > 0)
		gh_copy_htod(run->target, run->batch.d_knull, run->batch.h_knull, n);
	keys.nullmask = run->batch.d_knull;
	memset(&b, 0, sizeof(b));
	b.n = n;
	b.ids = run->batch.d_ids;
	for (int c = 0; c < run->ncols; c++)
	{
		if (run->plan->cols[c].kind != GH_AGG_KIND_NONE)
			gh_copy_htod(run->target, run->batch.d_vals[c], run->batch.h_vals[c], (size_t) n * 8);
		gh_copy_htod(run->target, run->batch.d_valid[c], run->batch.h_valid[c], n);
		b.vals[c] = run->batch.d_vals[c];
		b.valid[c] = run->batch.d_valid[c];
	}
	GH_AGG_DEVICE_CALL(gh_agg_assign_exact, run->target, ON_TARGET(run, "grouping rows"),
					   s->table, s->table_cap, s->acc, &s->layout, &keys, n,
					   run->batch.d_ids, run->batch.d_scratch, run->batch.d_bad);
	gh_copy_dtoh(run->target, &ctrl, (char *) s->table + gh_agg_table_ctrl_offset(s->table_cap),
				 sizeof(ctrl));
	gh_sync(run->target);
	if (ctrl.full)
		gpuhash_report(GH_ERR_TABLE_FULL, NULL, "grouping rows");
	s->ngroups = ctrl.ngroups;
	nbad = ctrl.nbad;

	/* accumulation runs on while the host stages the next batch */
	GH_AGG_DEVICE_CALL(gh_agg_accumulate, run->target, ON_TARGET(run, "aggregating"),
					   s->acc, &s->layout, s->ngroups, &b);

	if (nbad > 0 || run->batch.nside > 0)
	{
		if (nbad > 0)
			gh_copy_dtoh(run->target, run->batch.h_bad, run->batch.d_bad, (size_t) nbad * 4);
		if (run->batch.nside > 0)
			gh_copy_dtoh(run->target, run->batch.h_ids, run->batch.d_ids, (size_t) n * 4);
		gh_sync(run->target);
		qsort(run->batch.h_bad, nbad, sizeof(uint32), cmp_uint32);
		for (uint32 j = 0; j < nbad; j++)
		{
			uint32		i = run->batch.h_bad[j];

			for (int k = 0; k < run->nkeys; k++)
			{
				run->batch.keys[(size_t) i * run->nkeys + k] = (Datum) run->batch.h_keys[k][i];
				run->batch.knulls[(size_t) i * run->nkeys + k] = (run->batch.h_knull[i] >> k) & 1;
			}
		}
	}
	run->stats.ms_device += ms_since(t0);
	return nbad;
}

/*
 * flush aggregates the staged batch on the device; rows whose keys collided
 * go to the fallback set, and NUMERIC values the device cannot hold to the
 * host-side state.
 */
static void
flush(GhAggRun *run)
{
	uint32		nbad;
	MemoryContext old;
	instr_time	t0;

	if (run->batch.n == 0)
		return;
	INSTR_TIME_SET_CURRENT(t0);
	old = MemoryContextSwitchTo(run->batch.cxt);
	prepare_numeric(run);
	ensure_table(run, &run->main, run->batch.n);
	nbad = run->exact ? device_exact(run) : device_generic(run);
	if (nbad > 0)
		to_fallback(run, nbad);
	if (run->batch.nside > 0)
		apply_side_rows(run, nbad);

	run->stats.bad_rows += nbad;
	run->stats.batches++;
	run->batch.n = 0;
	run->batch.nside = 0;
	for (int c = 0; c < run->ncols; c++)
		run->batch.max_dscale[c] = -1;
	MemoryContextSwitchTo(old);
	MemoryContextReset(run->batch.cxt);
	run->stats.ms_flush += ms_since(t0);
}

/* set_rep makes row the representative of group g of set s. */
static void
set_rep(GhAggRun *run, GhGroupSet *s, uint64 g, uint32 row)
{
	Datum	   *rv = s->rep_vals + g * run->nkeys;
	bool	   *rn = s->rep_nulls + g * run->nkeys;
	Datum	   *kv = run->batch.keys + (size_t) row * run->nkeys;
	bool	   *kn = run->batch.knulls + (size_t) row * run->nkeys;

	for (int k = 0; k < run->nkeys; k++)
	{
		GhAggKey   *key = &run->plan->keys[k];

		rn[k] = kn[k];
		if (kn[k])
			rv[k] = (Datum) 0;
		else if (key->typbyval)
			rv[k] = kv[k];
		else
		{
			MemoryContext old = MemoryContextSwitchTo(run->rep_cxt);

			rv[k] = datumCopy(kv[k], false, key->typlen);
			MemoryContextSwitchTo(old);
		}
	}
	s->rep_set[g] = true;
}

/*
 * row_equals_rep compares row's group keys with group g's representative
 * with the keys' equality; NULL equals NULL, as in GROUP BY.
 */
static bool
row_equals_rep(GhAggRun *run, GhGroupSet *s, uint64 g, uint32 row)
{
	Datum	   *rv = s->rep_vals + g * run->nkeys;
	bool	   *rn = s->rep_nulls + g * run->nkeys;
	Datum	   *kv = run->batch.keys + (size_t) row * run->nkeys;
	bool	   *kn = run->batch.knulls + (size_t) row * run->nkeys;

	for (int k = 0; k < run->nkeys; k++)
	{
		GhAggKey   *key = &run->plan->keys[k];

		if (key->carried)
			continue;
		if (kn[k] || rn[k])
		{
			if (kn[k] != rn[k])
				return false;
			continue;
		}
		switch (key->eqmode)
		{
			case GHK_EQ_BYVAL:
				if (kv[k] != rv[k])
					return false;
				break;
			case GHK_EQ_IMAGE:
				if (!datum_image_eq(kv[k], rv[k], false, key->typlen))
					return false;
				break;
			case GHK_EQ_FUNC:
				if (!DatumGetBool(FunctionCall2Coll(&key->eq, key->collation,
													kv[k], rv[k])))
					return false;
				break;
		}
	}
	return true;
}

/*
 * exact_find returns the fallback group of row's key, creating it: open
 * addressing over the row hash, every hash match checked with the keys'
 * equality, so that keys sharing a hash get groups of their own.
 */
static uint32
exact_find(GhAggRun *run, GhGroupSet *s, uint32 row, uint64 h)
{
	uint64		mask;
	uint64		slot;

	if ((s->ngroups + 1) * 2 > s->ex_cap)
	{
		uint64		ncap = Max(s->ex_cap * 2, 64);
		uint64	   *nh = MemoryContextAllocHuge(run->cxt, sizeof(uint64) * ncap);
		uint32	   *ni = MemoryContextAllocHuge(run->cxt, sizeof(uint32) * ncap);

		memset(ni, 0, sizeof(uint32) * ncap);
		for (uint64 o = 0; o < s->ex_cap; o++)
		{
			if (s->ex_id[o] == 0)
				continue;
			slot = gh_agg_mix(s->ex_hash[o]) & (ncap - 1);
			while (ni[slot] != 0)
				slot = (slot + 1) & (ncap - 1);
			nh[slot] = s->ex_hash[o];
			ni[slot] = s->ex_id[o];
		}
		if (s->ex_hash)
		{
			pfree(s->ex_hash);
			pfree(s->ex_id);
		}
		s->ex_hash = nh;
		s->ex_id = ni;
		s->ex_cap = ncap;
	}
	mask = s->ex_cap - 1;
	slot = gh_agg_mix(h) & mask;
	for (;;)
	{
		uint32		id = s->ex_id[slot];

		if (id == 0)
		{
			uint32		g = (uint32) s->ngroups;

			ensure_groups(run, s, s->ngroups + 1);
			set_rep(run, s, g, row);
			s->ngroups++;
			s->ex_hash[slot] = h;
			s->ex_id[slot] = g + 1;
			return g;
		}
		if (s->ex_hash[slot] == h && row_equals_rep(run, s, id - 1, row))
			return id - 1;
		slot = (slot + 1) & mask;
	}
}

/*
 * to_fallback aggregates the rows listed in h_bad (keys that did not match
 * their device group's representative) in the fallback set.
 */
static void
to_fallback(GhAggRun *run, uint32 nbad)
{
	GhGroupSet *s = &run->fb;
	gh_agg_batch b;

	if (run->batch.fb_ids == NULL)
	{
		run->batch.fb_ids = MemoryContextAlloc(run->cxt, sizeof(uint32) * run->batch.cap);
		for (int c = 0; c < run->ncols; c++)
		{
			run->batch.fb_vals[c] = MemoryContextAlloc(run->cxt, sizeof(int64) * run->batch.cap);
			run->batch.fb_valid[c] = MemoryContextAlloc(run->cxt, run->batch.cap);
		}
	}
	memset(&b, 0, sizeof(b));
	for (uint32 j = 0; j < nbad; j++)
	{
		uint32		i = run->batch.h_bad[j];
		uint64		h = run->batch.h_hashes[i];

		if (run->exact)
		{
			h = gh_agg_key_hash_init(run->batch.h_knull[i]);
			for (int k = 0; k < run->nkeys; k++)
				h = gh_agg_key_hash_step(h, run->batch.h_keys[k][i]);
		}
		run->batch.fb_ids[j] = exact_find(run, s, i, h);
		for (int c = 0; c < run->ncols; c++)
		{
			run->batch.fb_vals[c][j] = run->batch.h_vals[c][i];
			run->batch.fb_valid[c][j] = run->batch.h_valid[c][i];
		}
	}
	b.n = nbad;
	b.ids = run->batch.fb_ids;
	for (int c = 0; c < run->ncols; c++)
	{
		b.vals[c] = run->batch.fb_vals[c];
		b.valid[c] = run->batch.fb_valid[c];
	}
	GH_AGG_DEVICE_CALL(gh_agg_accumulate, s->target, "aggregating colliding keys",
					   s->acc, &s->layout, s->ngroups, &b);
}

/*
 * apply_side_rows adds the batch's host-side NUMERIC values to their groups,
 * in whichever set their row went to.
 */
static void
apply_side_rows(GhAggRun *run, uint32 nbad)
{
	for (int j = 0; j < run->batch.nside; j++)
	{
		GhSideRow  *r = &run->batch.side_rows[j];
		GhGroupSet *s = &run->main;
		uint64		g = run->batch.h_ids[r->row];
		GhNumSide  *e;
		uint32		lo = 0,
					hi = nbad;

		/* h_bad is in row order: is this row one of them? */
		while (lo < hi)
		{
			uint32		mid = (lo + hi) / 2;

			if (run->batch.h_bad[mid] < r->row)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < nbad && run->batch.h_bad[lo] == r->row)
		{
			s = &run->fb;
			g = run->batch.fb_ids[lo];
		}
		e = side_entry(run, s, g, r->col);
		switch (r->kind)
		{
			case NUMV_NAN:
				e->count++;
				e->nan++;
				break;
			case NUMV_PINF:
				e->count++;
				e->pinf++;
				break;
			case NUMV_NINF:
				e->count++;
				e->ninf++;
				break;
			default:
				side_add_finite(run, e, r->value, true, true, true);
				break;
		}
		run->stats.side_values++;
	}
}

/* side_entry returns the host-side NUMERIC state of (g, c), creating it. */
static GhNumSide *
side_entry(GhAggRun *run, GhGroupSet *s, uint64 g, int c)
{
	uint64		key = (g << 8) | (uint64) c;
	GhNumSide  *e;
	bool		found;

	if (s->side == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(uint64);
		ctl.entrysize = sizeof(GhNumSide);
		ctl.hcxt = run->cxt;
		s->side = hash_create("gpuhash_aggregate numeric", 64, &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	e = hash_search(s->side, &key, HASH_ENTER, &found);
	if (!found)
	{
		memset(e, 0, sizeof(*e));
		e->key = key;
	}
	return e;
}

static int
num_cmp(Datum a, Datum b)
{
	return DatumGetInt32(DirectFunctionCall2(numeric_cmp, a, b));
}

/*
 * side_add_finite adds the finite NUMERIC v to e: to its count, its sum and
 * its extremes, as asked.
 */
static void
side_add_finite(GhAggRun *run, GhNumSide *e, Datum v, bool count, bool sum,
				bool extremes)
{
	MemoryContext old = MemoryContextSwitchTo(run->num.cxt);

	if (count)
		e->count++;
	if (sum)
	{
		if (e->sum == (Datum) 0)
			e->sum = datumCopy(v, false, -1);
		else
		{
			Datum		prev = e->sum;

			e->sum = DirectFunctionCall2(numeric_add, prev, v);
			pfree(DatumGetPointer(prev));
		}
	}
	if (extremes)
	{
		if (e->min == (Datum) 0 || num_cmp(v, e->min) < 0)
			e->min = datumCopy(v, false, -1);
		if (e->max == (Datum) 0 || num_cmp(v, e->max) > 0)
			e->max = datumCopy(v, false, -1);
	}
	MemoryContextSwitchTo(old);
}

/*
 * prepare_numeric brings the batch's NUMERIC values to their column's scale
 * and packs them; values that do not fit become host-side rows.
 */
static void
prepare_numeric(GhAggRun *run)
{
	for (int c = 0; c < run->ncols; c++)
	{
		int			scale;

		if (run->plan->cols[c].kind != GH_AGG_KIND_NUMERIC)
			continue;
		if (run->batch.max_dscale[c] > run->num.scale[c])
			rescale_column(run, c, run->batch.max_dscale[c]);
		scale = run->num.scale[c];
		for (uint32 i = 0; i < run->batch.n; i++)
		{
			int64		m = run->batch.h_vals[c][i];
			int			ds = run->batch.h_ds[c][i];
			int128		v;

			if (!run->batch.h_valid[c][i])
				continue;
			v = (int128) m * pow10_128(scale - ds);
			if (v > -(GH_AGG_NUM_MAX_ABS - 1) && v < GH_AGG_NUM_MAX_ABS - 1)
			{
				run->batch.h_vals[c][i] = gh_agg_num_pack((int64) v, ds);
				continue;
			}
			/* too large for the device at this scale: the host adds it */
			run->batch.h_valid[c][i] = 0;
			add_side_row(run, i, c, NUMV_BIG, num_make(m, ds, ds));
		}
	}
}

/*
 * rescale_groups multiplies the sums (lo, hi) and packed extremes (mins,
 * maxs; any may be NULL) of ng groups of set s, column c, by f = 10^k, on the
 * host.  A sum that would come near the 128-bit limit, or an extreme whose
 * scaled integer would no longer fit the packing, moves to the host-side
 * state (at the old scale, with its own display scale) and leaves the device
 * array empty.
 */
static void
rescale_groups(GhAggRun *run, GhGroupSet *s, int c, int oldscale, int128 f,
			   uint64 ng, uint64 *lo, int64 *hi, const uint32 *aux,
			   int64 *mins, int64 *maxs)
{
	const int128 sum_limit = (int128) 1 << 126;

	for (uint64 g = 0; g < ng; g++)
	{
		if (lo)
		{
			int128		v = ((int128) hi[g] << 64) | lo[g];
			int128		r = 0;

			if (v != 0 &&
				(__builtin_mul_overflow(v, f, &r) || r >= sum_limit || r <= -sum_limit))
			{
				side_add_finite(run, side_entry(run, s, g, c),
								num_make(v, oldscale, (int) aux[g]), false, true, false);
				r = 0;
			}
			lo[g] = (uint64) r;
			hi[g] = (int64) (r >> 64);
		}
		for (int mm = 0; mm < 2; mm++)
		{
			int64	   *arr = mm == 0 ? mins : maxs;
			int64		init = mm == 0 ? GH_AGG_INT_MIN_INIT : GH_AGG_INT_MAX_INIT;
			int128		r;

			if (arr == NULL || arr[g] == init)
				continue;
			r = (int128) gh_agg_num_m(arr[g]) * f;
			if (r <= -(GH_AGG_NUM_MAX_ABS - 1) || r >= GH_AGG_NUM_MAX_ABS - 1)
			{
				side_add_finite(run, side_entry(run, s, g, c),
								num_make(gh_agg_num_m(arr[g]), oldscale,
										 gh_agg_num_dscale(arr[g])),
								false, false, true);
				arr[g] = init;
			}
			else
				arr[g] = gh_agg_num_pack((int64) r, gh_agg_num_dscale(arr[g]));
		}
	}
}

/*
 * rescale_column raises NUMERIC column c's scale to newscale in both sets.
 * The GPU's arrays of that column make a round trip to the host; the CPU
 * twin's are rewritten where they are.  Scales only grow, at most
 * NUM_SCALE_CAP times per run, so this stays rare.
 */
static void
rescale_column(GhAggRun *run, int c, int newscale)
{
	int			oldscale = run->num.scale[c];
	GhGroupSet *sets[2] = {&run->main, &run->fb};

	run->num.scale[c] = newscale;
	if (oldscale < 0)
		return;
	Assert(newscale > oldscale && newscale <= NUM_SCALE_CAP);
	run->stats.rescales++;
	for (int si = 0; si < 2; si++)
	{
		GhGroupSet *s = sets[si];
		gh_agg_layout *l = &s->layout;
		uint64		ng = s->ngroups;
		char	   *acc = s->acc;
		/* device addresses of the column's arrays, NULL where absent */
		void	   *dev[5] = {NULL, NULL, NULL, NULL, NULL};
		size_t		size[5] = {8, 8, 4, 8, 8};
		void	   *host[5];

		if (ng == 0)
			continue;
		if (l->ops[c] & GH_AGG_OP_SUM)
		{
			dev[0] = acc + l->sum_off[c];
			dev[1] = acc + l->sum_off[c] + l->group_cap * 8;
			dev[2] = acc + l->aux_off[c];
		}
		if (l->ops[c] & GH_AGG_OP_MIN)
			dev[3] = acc + l->min_off[c];
		if (l->ops[c] & GH_AGG_OP_MAX)
			dev[4] = acc + l->max_off[c];
		for (int a = 0; a < 5; a++)
		{
			host[a] = dev[a];
			if (dev[a] && s->target == GH_TARGET_GPU)
			{
				host[a] = palloc(ng * size[a]);
				gh_copy_dtoh(s->target, host[a], dev[a], ng * size[a]);
			}
		}
		gh_sync(s->target);
		rescale_groups(run, s, c, oldscale, pow10_128(newscale - oldscale), ng,
					   host[0], host[1], host[2], host[3], host[4]);
		if (s->target == GH_TARGET_GPU)
		{
			for (int a = 0; a < 5; a++)
				if (dev[a] && a != 2)
					gh_copy_htod(s->target, dev[a], host[a], ng * size[a]);
			gh_sync(s->target);
		}
	}
}

/*
 * num_decode reads a NUMERIC's on-disk form (a stable format: pg_upgrade
 * keeps it) into m = value * 10^dscale.  Returns NUMV_FINITE with *m and
 * *dscale set, a special value's kind, or NUMV_BIG when the value has more
 * than 18 significant digits or a display scale above NUM_SCALE_CAP.
 *
 * The format: a uint16 header, then base-10000 int16 digits, the first of
 * weight w.  Header flags 0xC000: NaN (0xC000), +Inf (0xD000) or -Inf
 * (0xF000) by the top four bits; 0x8000: short form, sign 0x2000, display
 * scale in 0x1F80, weight in 0x007F (sign bit 0x0040); otherwise long form,
 * sign 0x4000 and display scale 0x3FFF, and an int16 weight follows.
 */
static int
num_decode(Datum d, int64 *m, int *dscale)
{
	struct varlena *v = PG_DETOAST_DATUM_PACKED(d);
	const char *p = VARDATA_ANY(v);
	int			len = VARSIZE_ANY_EXHDR(v);
	uint16		h;
	bool		neg;
	int			ds;
	int			weight;
	int			hdr;
	int128		acc = 0;

	memcpy(&h, p, sizeof(h));
	if ((h & 0xC000) == 0xC000)
	{
		if ((h & 0xF000) == 0xD000)
			return NUMV_PINF;
		if ((h & 0xF000) == 0xF000)
			return NUMV_NINF;
		return NUMV_NAN;
	}
	if (h & 0x8000)
	{
		neg = (h & 0x2000) != 0;
		ds = (h & 0x1F80) >> 7;
		weight = (h & 0x0040) ? (int) ((h & 0x003F) | ~0x003F) : (int) (h & 0x003F);
		hdr = 2;
	}
	else
	{
		int16		w;

		neg = (h & 0x4000) != 0;
		ds = h & 0x3FFF;
		memcpy(&w, p + 2, sizeof(w));
		weight = w;
		hdr = 4;
	}
	if (ds > NUM_SCALE_CAP)
		return NUMV_BIG;
	for (int i = 0; i < (len - hdr) / 2; i++)
	{
		int16		digit;
		int			e = 4 * (weight - i) + ds;

		memcpy(&digit, p + hdr + 2 * i, sizeof(digit));
		if (digit == 0)
			continue;
		if (e < 0)
		{
			int			div = e == -1 ? 10 : e == -2 ? 100 : 1000;

			if (e < -3 || digit % div != 0)
				return NUMV_BIG;	/* not a canonical value; let PostgreSQL add it */
			acc += digit / div;
		}
		else
		{
			if (e > 18)
				return NUMV_BIG;
			acc += (int128) digit * pow10_128(e);
		}
		if (acc > PG_INT64_MAX)
			return NUMV_BIG;
	}
	*m = neg ? -(int64) acc : (int64) acc;
	*dscale = ds;
	return NUMV_FINITE;
}

/*
 * num_make returns the NUMERIC v / 10^scale with display scale dscale
 * (dscale <= scale; v must be a multiple of 10^(scale - dscale)).
 */
static Datum
num_make(int128 v, int scale, int dscale)
{
	if (scale > dscale)
		v /= pow10_128(scale - dscale);
	return gh_num_make(v, dscale);
}

static Datum
num_from_int128(int128 v)
{
	return gh_num_make(v, 0);
}

/* ---- the result ---------------------------------------------------------- */

#define ACC(type, s, off) ((type *) ((s)->host_acc + (off)))

/*
 * fetch_accumulators makes the set's accumulators readable on the host.  A
 * GPU set's arrays come back into a layout for exactly ngroups groups, in
 * ordinary memory: pinning gigabytes for one copy would cost more than it
 * saves.
 */
static void
fetch_accumulators(GhAggRun *run, GhGroupSet *s)
{
	gh_agg_layout *l = &s->layout;
	gh_agg_layout *hl = &s->hl;
	size_t		n8 = s->ngroups * 8;
	char	   *d = s->acc;
	char	   *h;

	if (s->target != GH_TARGET_GPU)
	{
		s->host_acc = s->acc;
		s->hl = s->layout;
		return;
	}
	gh_agg_layout_init(hl, l->ncols, l->kind, l->ops, l->nkeys, Max(s->ngroups, 1));
	h = s->host_acc = MemoryContextAllocHuge(run->cxt, hl->bytes);
#define BACK(field, bytes) \
	gh_copy_dtoh(s->target, h + hl->field, d + l->field, (bytes))
	BACK(rows_off, n8);
	for (int k = 0; k < l->nkeys; k++)
		BACK(key_off[k], n8);
	if (l->nkeys > 0)
		BACK(knull_off, s->ngroups);
	for (int c = 0; c < l->ncols; c++)
	{
		BACK(nonnull_off[c], n8);
		if (l->ops[c] & GH_AGG_OP_SUM)
		{
			BACK(sum_off[c], n8);
			if (l->kind[c] != GH_AGG_KIND_FLOAT)
				gh_copy_dtoh(s->target, h + hl->sum_off[c] + hl->group_cap * 8,
							 d + l->sum_off[c] + l->group_cap * 8, n8);
			if (l->aux_off[c])
				BACK(aux_off[c], s->ngroups * 4);
		}
		if (l->ops[c] & GH_AGG_OP_MIN)
			BACK(min_off[c], n8);
		if (l->ops[c] & GH_AGG_OP_MAX)
			BACK(max_off[c], n8);
	}
#undef BACK
	gh_sync(s->target);
}

/* int_sum reads group g's 128-bit sum of column c. */
static int128
int_sum(GhGroupSet *s, uint64 g, int c)
{
	uint64	   *lo = ACC(uint64, s, s->hl.sum_off[c]);
	int64	   *hi = (int64 *) (lo + s->hl.group_cap);

	return ((int128) hi[g] << 64) | lo[g];
}

/*
 * float_sum reads group g's float sum of column c, raising PostgreSQL's
 * overflow ERROR when finite inputs gave an infinite (or NaN) sum.
 */
static double
float_sum(GhGroupSet *s, uint64 g, int c)
{
	double		d = ACC(double, s, s->hl.sum_off[c])[g];
	uint32		flags = ACC(uint32, s, s->hl.aux_off[c])[g];

	if (!isfinite(d) && (flags & (GH_AGG_SAW_INF | GH_AGG_SAW_NAN)) == 0)
		float_overflow_error();
	return d;
}

/* numeric_total: group g's NUMERIC sum of column c (no special values). */
static Datum
numeric_total(GhAggRun *run, GhGroupSet *s, uint64 g, int c, GhNumSide *e)
{
	uint64		nn = ACC(uint64, s, s->hl.nonnull_off[c])[g];
	Datum		dev = (Datum) 0;

	if (nn > 0)
		dev = num_make(int_sum(s, g, c), run->num.scale[c],
					   (int) ACC(uint32, s, s->hl.aux_off[c])[g]);
	if (e == NULL || e->sum == (Datum) 0)
		return dev;
	if (dev == (Datum) 0)
		return e->sum;
	return DirectFunctionCall2(numeric_add, dev, e->sum);
}

/* numeric_extreme: group g's NUMERIC min (want < 0) or max (want > 0). */
static Datum
numeric_extreme(GhAggRun *run, GhGroupSet *s, uint64 g, int c, GhNumSide *e,
				int want, bool *isnull)
{
	int64		packed;
	Datum		best = (Datum) 0;
	bool		nan = e && e->nan > 0;
	bool		pinf = e && e->pinf > 0;
	bool		ninf = e && e->ninf > 0;

	if (want > 0 && nan)
		return run->num.nan;
	if (want > 0 && pinf)
		return run->num.pinf;
	if (want < 0 && ninf)
		return run->num.ninf;
	packed = want < 0 ? ACC(int64, s, s->hl.min_off[c])[g]
		: ACC(int64, s, s->hl.max_off[c])[g];
	if (packed != (want < 0 ? GH_AGG_INT_MIN_INIT : GH_AGG_INT_MAX_INIT))
		best = num_make(gh_agg_num_m(packed), run->num.scale[c], gh_agg_num_dscale(packed));
	if (e)
	{
		Datum		side = want < 0 ? e->min : e->max;

		if (side != (Datum) 0 &&
			(best == (Datum) 0 || num_cmp(side, best) * want > 0))
			best = side;
	}
	if (best != (Datum) 0)
		return best;
	if (want < 0 && pinf)
		return run->num.pinf;
	if (want < 0 && nan)
		return run->num.nan;
	if (want > 0 && ninf)
		return run->num.ninf;
	*isnull = true;
	return (Datum) 0;
}

/*
 * call_value computes aggregate call k of group g of set s (g < 0: the one
 * group of an aggregation without GROUP BY over no rows).
 */
static Datum
call_value(GhAggRun *run, GhGroupSet *s, int64 g, GhAggCall *call, bool *isnull)
{
	int			c = call->col;
	GhValType	vt = c >= 0 ? run->plan->cols[c].vtype : GHV_OTHER;
	uint64		nn;
	GhNumSide  *e = NULL;

	*isnull = false;
	if (g < 0)
	{
		if (call->func == GHAF_COUNT_STAR || call->func == GHAF_COUNT)
			return Int64GetDatum(0);
		*isnull = true;
		return (Datum) 0;
	}
	if (call->func == GHAF_COUNT_STAR)
		return Int64GetDatum((int64) ACC(uint64, s, s->hl.rows_off)[g]);
	nn = ACC(uint64, s, s->hl.nonnull_off[c])[g];
	if (vt == GHV_NUMERIC && s->side != NULL && run->plan->cols[c].kind != GH_AGG_KIND_NONE)
	{
		uint64		key = ((uint64) g << 8) | (uint64) c;

		e = hash_search(s->side, &key, HASH_FIND, NULL);
	}
	if (call->func == GHAF_COUNT)
		return Int64GetDatum((int64) (nn + (e ? e->count : 0)));
	if (nn + (e ? e->count : 0) == 0)
	{
		*isnull = true;
		return (Datum) 0;
	}

	switch (vt)
	{
		case GHV_INT2:
		case GHV_INT4:
		case GHV_INT8:
			switch (call->func)
			{
				case GHAF_SUM:
					{
						int128		v = int_sum(s, g, c);

						if (vt == GHV_INT8)
							return num_from_int128(v);
						if (v < PG_INT64_MIN || v > PG_INT64_MAX)
							ereport(ERROR,
									(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
									 errmsg("bigint out of range")));
						return Int64GetDatum((int64) v);
					}
				case GHAF_AVG:
					{
						int128		v = int_sum(s, g, c);
						Datum		d = gh_num_avg(v, 0, (int64) nn);

						if (d != (Datum) 0)
							return d;
						return DirectFunctionCall2(numeric_div, num_from_int128(v),
												   NumericGetDatum(int64_to_numeric((int64) nn)));
					}
				case GHAF_MIN:
				case GHAF_MAX:
					{
						int64		v = call->func == GHAF_MIN
							? ACC(int64, s, s->hl.min_off[c])[g]
							: ACC(int64, s, s->hl.max_off[c])[g];

						if (vt == GHV_INT2)
							return Int16GetDatum((int16) v);
						if (vt == GHV_INT4)
							return Int32GetDatum((int32) v);
						return Int64GetDatum(v);
					}
				default:
					break;
			}
			break;
		case GHV_FLOAT4:
		case GHV_FLOAT8:
			switch (call->func)
			{
				case GHAF_SUM:
					{
						double		d = float_sum(s, g, c);

						if (vt == GHV_FLOAT4)
						{
							float4		f = (float4) d;

							if (isinf(f) && !isinf(d))
								float_overflow_error();
							return Float4GetDatum(f);
						}
						return Float8GetDatum(d);
					}
				case GHAF_AVG:
					return Float8GetDatum(float_sum(s, g, c) / (double) nn);
				case GHAF_MIN:
				case GHAF_MAX:
					{
						double		d = gh_agg_float_unkey(call->func == GHAF_MIN
														   ? ACC(uint64, s, s->hl.min_off[c])[g]
														   : ACC(uint64, s, s->hl.max_off[c])[g]);

						if (vt == GHV_FLOAT4)
							return Float4GetDatum((float4) d);
						return Float8GetDatum(d);
					}
				default:
					break;
			}
			break;
		case GHV_NUMERIC:
			if (call->func == GHAF_MIN || call->func == GHAF_MAX)
				return numeric_extreme(run, s, g, c, e, call->func == GHAF_MIN ? -1 : 1,
									   isnull);
			if (e && (e->nan > 0 || (e->pinf > 0 && e->ninf > 0)))
				return run->num.nan;
			if (e && e->pinf > 0)
				return run->num.pinf;
			if (e && e->ninf > 0)
				return run->num.ninf;
			if (call->func == GHAF_SUM)
				return numeric_total(run, s, g, c, e);
			if (e == NULL)
			{
				/* every value on the device: nn > 0 of them */
				int			ds = (int) ACC(uint32, s, s->hl.aux_off[c])[g];
				int128		v = int_sum(s, g, c) / pow10_128(run->num.scale[c] - ds);
				Datum		d = gh_num_avg(v, ds, (int64) nn);

				if (d != (Datum) 0)
					return d;
			}
			return DirectFunctionCall2(numeric_div, numeric_total(run, s, g, c, e),
									   NumericGetDatum(int64_to_numeric((int64) (nn + (e ? e->count : 0)))));
		case GHV_OTHER:
			break;
	}
	elog(ERROR, "gpuhash_aggregate: unexpected aggregate %u", call->fnoid);
	return (Datum) 0;
}

/*
 * build_row makes the result row of group g of set s (g < 0: the one group
 * of an aggregation without GROUP BY over no rows) in values and nulls.
 */
static void
build_row(GhAggRun *run, GhGroupSet *s, int64 g, Datum *values, bool *nulls)
{
	GhAggPlan  *plan = run->plan;

	for (int o = 0; o < plan->nout; o++)
	{
		GhAggOut   *out = &plan->out[o];

		if (out->is_key && s->hl.nkeys > 0)
		{
			/* a key the device grouped and kept */
			nulls[o] = (ACC(uint8, s, s->hl.knull_off)[g] >> out->index) & 1;
			values[o] = (Datum) ACC(uint64, s, s->hl.key_off[out->index])[g];
		}
		else if (out->is_key)
		{
			nulls[o] = s->rep_nulls[g * run->nkeys + out->index];
			values[o] = s->rep_vals[g * run->nkeys + out->index];
		}
		else
			values[o] = call_value(run, s, g, &plan->calls[out->index], &nulls[o]);
	}
}

/*
 * release_set gives back what set s holds on the device once its
 * accumulators are on the host: the hash table, and on the GPU the
 * accumulators themselves (the CPU twin's are the host copy).
 */
static void
release_set(GhGroupSet *s)
{
	gh_dev_free(s->table);
	s->table = NULL;
	if (s->target == GH_TARGET_GPU && s->acc != NULL)
	{
		gh_dev_free(s->acc);
		s->acc = NULL;
	}
}

/*
 * gh_agg_run_complete flushes the last batch, brings the accumulators of
 * both sets to the host and gives back the device memory: from here on the
 * run only makes result rows (gh_agg_run_next).
 */
void
gh_agg_run_complete(GhAggRun *run)
{
	instr_time	t0;

	flush(run);
	INSTR_TIME_SET_CURRENT(t0);
	gh_sync(run->target);
	fetch_accumulators(run, &run->main);
	fetch_accumulators(run, &run->fb);
	release_set(&run->main);
	release_set(&run->fb);
	gh_dev_free(run->batch.h_hashes);
	run->batch.h_hashes = NULL;
	gh_dev_free(run->batch.d_hashes);
	run->batch.d_hashes = NULL;
	run->out.cxt = AllocSetContextCreate(run->cxt, "gpuhash_aggregate row",
										 ALLOCSET_DEFAULT_SIZES);
	run->stats.ms_fetch = ms_since(t0);
	gh_agg_run_rewind(run);
}

/* gh_agg_run_rewind starts the result rows again from the first. */
void
gh_agg_run_rewind(GhAggRun *run)
{
	run->out.set = 0;
	run->out.next = 0;
	run->out.rows = 0;
}

/*
 * gh_agg_run_next makes the next result row in values and nulls (one entry
 * per output column) and returns true, or returns false after the last.
 * The row's by-reference values stay valid until the next call: their
 * memory is freed 1024 rows at a time.
 */
bool
gh_agg_run_next(GhAggRun *run, Datum *values, bool *nulls)
{
	for (;;)
	{
		GhGroupSet *s = run->out.set == 1 ? &run->fb : &run->main;
		int64		g;
		MemoryContext old;

		if (run->out.set == 3)
		{
			if (!run->out.reported)
				gh_agg_run_report(run);
			return false;
		}
		if (run->out.set == 2)
		{
			/* no GROUP BY: one group even over no rows, as in SQL */
			run->out.set = 3;
			if (run->nkeys != 0 || run->main.ngroups != 0 || run->fb.ngroups != 0)
				continue;
			g = -1;
		}
		else if (run->out.next < s->ngroups)
			g = (int64) run->out.next++;
		else
		{
			run->out.set++;
			run->out.next = 0;
			continue;
		}

		if (run->out.rows == 0 && !run->out.reported)
			INSTR_TIME_SET_CURRENT(run->out.t_first);
		if ((run->out.rows++ & 1023) == 0)
		{
			MemoryContextReset(run->out.cxt);
			CHECK_FOR_INTERRUPTS();
		}
		old = MemoryContextSwitchTo(run->out.cxt);
		build_row(run, s, g, values, nulls);
		if (run->plan->coerce)
			gh_agg_coerce_row(run->plan, values, nulls);
		MemoryContextSwitchTo(old);
		return true;
	}
}

/*
 * gh_agg_run_finish completes the run and puts every result row into
 * store, for the set-returning function.
 */
void
gh_agg_run_finish(GhAggRun *run, Tuplestorestate *store, TupleDesc desc)
{
	Datum	   *values = palloc(sizeof(Datum) * Max(run->plan->nout, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(run->plan->nout, 1));

	gh_agg_run_complete(run);
	while (gh_agg_run_next(run, values, nulls))
		tuplestore_putvalues(store, desc, values, nulls);
	pfree(values);
	pfree(nulls);
}

/*
 * gh_agg_run_report logs the counts (DEBUG1) and where the time went
 * (DEBUG2), once: when the last row has been made, or at the end if the
 * rows were not all asked for.  When rows are returned one by one (the
 * GpuHashAggregate scan), "result rows" includes the time of the plan nodes
 * above that took them.
 */
void
gh_agg_run_report(GhAggRun *run)
{
	if (run->out.reported)
		return;
	run->out.reported = true;
	run->stats.ms_finish = run->stats.ms_fetch + (run->out.rows > 0 ? ms_since(run->out.t_first) : 0);

	/* counts that do not depend on the device, then where the time went */
	elog(DEBUG1, "gpuhash_aggregate: %llu input rows, %llu groups on the device, "
		 "%llu colliding keys in the fallback set",
		 (unsigned long long) run->stats.rows, (unsigned long long) run->main.ngroups,
		 (unsigned long long) run->fb.ngroups);
	elog(DEBUG2, "gpuhash_aggregate on %s, %s keys: %llu packets from parallel workers, "
		 "%llu batches, %llu rows in the fallback set, "
		 "%llu numeric values on the host, %llu rescales; "
		 "ms: total %.1f, input and staging %.1f, device %.1f, key checks %.1f, "
		 "other batch work %.1f, result rows %.1f (of which accumulators to the host %.1f)",
		 gpuhash_target_name(run->target), run->exact ? "device" : "host-checked",
		 (unsigned long long) run->stats.packets, (unsigned long long) run->stats.batches, (unsigned long long) run->stats.bad_rows,
		 (unsigned long long) run->stats.side_values, (unsigned long long) run->stats.rescales,
		 ms_since(run->stats.t_begin), ms_since(run->stats.t_begin) - run->stats.ms_flush - run->stats.ms_finish,
		 run->stats.ms_device, run->stats.ms_verify,
		 run->stats.ms_flush - run->stats.ms_device - run->stats.ms_verify, run->stats.ms_finish, run->stats.ms_fetch);

	/*
	 * The input in detail: the executor's wall time splits into packets
	 * copied into batches, batches flushed to the device (both in this
	 * process) and the rest, which is waiting for and receiving rows (for
	 * packets: the Gather's copying out of the tuple queues, and waiting for
	 * the workers); the workers' own scan and packing time is summed over
	 * packets.
	 */
	elog(DEBUG2, "gpuhash_aggregate input: %d of %d planned workers launched, "
		 "%llu packet bytes (%.1f a row); ms: input wall %.1f, of which copying packets %.1f, "
		 "device batches %.1f, receiving and waiting %.1f; "
		 "workers' scan and packing %.1f in all, %.1f per worker",
		 run->stats.workers_launched, run->stats.workers_planned,
		 (unsigned long long) run->stats.packet_bytes,
		 run->stats.rows > 0 ? (double) run->stats.packet_bytes / run->stats.rows : 0.0,
		 run->stats.ms_input, run->stats.ms_copy, run->stats.ms_flush_input,
		 run->stats.ms_input - run->stats.ms_copy - run->stats.ms_flush_input,
		 run->stats.worker_busy_us / 1000.0,
		 run->stats.worker_busy_us / 1000.0 / Max(run->stats.workers_launched, 1));
}

/* gh_agg_run_end gives back the device memory and the run's memory. */
void
gh_agg_run_end(GhAggRun *run)
{
	GhGroupSet *sets[2] = {&run->main, &run->fb};

	for (int i = 0; i < 2; i++)
	{
		GhGroupSet *s = sets[i];

		if (s->acc)
			gh_dev_free(s->acc);
		if (s->table)
			gh_dev_free(s->table);
	}
	gh_dev_free(run->batch.h_hashes);
	gh_dev_free(run->batch.d_hashes);
	MemoryContextDelete(run->cxt);
}
