/*-------------------------------------------------------------------------
 * aggregate.h
 *	  The private header of gpuhash_aggregate(): what its src/ files share.
 *
 * The files, lowest layer first: each calls only files listed before it,
 * so no two call each other.
 *
 *	aggregate_numeric.c		NUMERIC: fixed point for the device, host-side
 *							state for what does not fit, results written
 *							directly in the stored format
 *	aggregate_dict.c		numbered keys: keys of any other hashable type
 *							given dense numbers that the device groups;
 *							the parallel participants' shared dictionary
 *	aggregate_groups.c		the group sets: accumulators, representatives and
 *							the device's hash table, grown as groups come,
 *							and the memory they hold
 *	aggregate_fallback.c	keys checked on the host: representatives, and the
 *							exact set for keys whose hash collides
 *	aggregate_spill.c		the memory budget: past it, rows of groups not
 *							in memory go to partitions on temporary tapes
 *	aggregate_batch.c		a run: rows staged in device batches, each batch
 *							run through the device
 *	aggregate_result.c		the groups as result rows
 *	aggregate_pack.c		GpuHashAggPack: parallel workers pack input rows
 *	aggregate.c				gpuhash_aggregate(): checks and plans the query,
 *							runs its input into a run
 *	aggregate_scan.c		GpuHashAggregate: the function's groups returned
 *							by a scan; the module's set-up
 *	agg_path.c				GpuHashAgg, the transparent GROUP BY: whether the
 *							engine runs a grouping stage, and the device
 *							expressions compiled from it
 *	agg_exec.c				GpuHashAgg's node over a run, and its EXPLAIN
 *	agg_plan.c				GpuHashAgg's paths, costs and plan, and the
 *							planner hooks; its set-up
 *
 * The last three share a header of their own, gpuhash_agg.h.
 *
 * The query's plan (GhAggPlan) is made by aggregate.c and read by all; the
 * inside of a run (GhAggRun) belongs to the files from aggregate_numeric.c
 * to aggregate_result.c, and the others hold it as an opaque pointer.
 * Declarations are grouped by the file that defines them, as postgres_fdw.h
 * does.  How GROUP BY keys are hashed and compared on the host is keys.c's
 * (keys.h), shared with the join; the device expressions that compute
 * arguments and keys from input columns are devexpr.c's (devexpr.h),
 * which calls none of these files: agg_path.c compiles them, aggregate.c
 * loads them into the plan, aggregate_batch.c runs them on the device and
 * aggregate_numeric.c evaluates the rows they leave to the host.
 *-------------------------------------------------------------------------
 */
#ifndef GPUHASH_AGGREGATE_H
#define GPUHASH_AGGREGATE_H

#include "access/tupdesc.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"
#include "portability/instr_time.h"
#include "utils/dsa.h"
#include "utils/hsearch.h"
#include "utils/logtape.h"
#include "utils/tuplestore.h"

#include "devexpr.h"
#include "gpuhash.h"
#include "keys.h"
/* the device API of the aggregate */
#include "gh_aggregate.h"

/* The aggregates gpuhash_aggregate() runs. */
typedef enum GhAggFunc
{
	GHAF_COUNT_STAR,
	GHAF_COUNT,
	GHAF_SUM,
	GHAF_AVG,
	GHAF_MIN,
	GHAF_MAX
} GhAggFunc;

/*
 * The input types of sum, avg, min and max.  date, timestamp and timestamptz
 * (min and max only) are integers whose order is the types' own, the
 * infinities included (DATEVAL_NOBEGIN and DT_NOBEGIN are the smallest
 * values of their integers, the NOEND ones the largest): the device keeps
 * them as it keeps int4 and int8.
 */
typedef enum GhValType
{
	GHV_OTHER,					/* only count(x) */
	GHV_INT2,
	GHV_INT4,
	GHV_INT8,
	GHV_FLOAT4,
	GHV_FLOAT8,
	GHV_NUMERIC,
	GHV_DATE,					/* int32 */
	GHV_TIMESTAMP,				/* int64: timestamp and timestamptz */
	GHV_TEXT					/* min and max of text in a deterministic
								 * collation: the device counts, the host
								 * keeps the extremes (aggregate_numeric.c's
								 * side state) */
} GhValType;

/*
 * One key column of the input: a GROUP BY expression (hashed and verified),
 * or a carried output expression of the keys (kept with the representative).
 * How a GROUP BY key is hashed is in the plan's group_keys (keys.h).
 */
typedef struct GhAggKey
{
	Expr	   *expr;
	bool		carried;
	Oid			type;
	Oid			collation;
	int16		typlen;
	bool		typbyval;
	uint8		eq_kind;		/* GhKeyEqKind: how gh_key_equal compares */
	bool		dict;			/* numbered: the device groups the key's number
								 * in the run's dictionary (aggregate_dict.c) */
	int			prog_col;		/* computed on the device: the column of its
								 * device expression (the input row's key
								 * column is a placeholder); -1 if not */
	int			year_col;		/* extract(year from the date or timestamp
								 * input column year_col), computed on the
								 * device as an exact word (gh_agg_year_word);
								 * -1 if not */
	FmgrInfo	eq;				/* equality function */
} GhAggKey;

/*
 * How a GROUP BY key reaches the device (gh_agg_key_form): its Datum's bits
 * (by value, bitwise equality), its number in the run's dictionary (any
 * other type whose values can be copied: equal values get one number by
 * the type's own hash and equality), or not at all (hashed and checked on
 * the host).
 */
#define GH_AGG_KEY_HOST		0
#define GH_AGG_KEY_WORD		1
#define GH_AGG_KEY_DICT		2

/*
 * One column of the run: an input column (a distinct aggregate argument, or
 * an input of a device expression), or, after the ncols_in input columns, a
 * device expression's result (dexpr >= 0), computed on the target.
 */
typedef struct GhAggCol
{
	Expr	   *expr;
	Oid			type;
	GhValType	vtype;
	uint8		kind;			/* gh_agg_kind */
	uint8		ops;			/* GH_AGG_OP_* */
	Oid			collation;		/* GHV_TEXT: the collation min and max
								 * compare in */
	bool		leaf;			/* an input of a device expression */
	int			dexpr;			/* index into the plan's exprs (device
								 * expressions, devexpr.h), or -1 */
} GhAggCol;

/* One aggregate call of the query. */
typedef struct GhAggCall
{
	GhAggFunc	func;
	int			col;			/* input column; -1 for count(*) */
	Oid			fnoid;
	Oid			result_type;
} GhAggCall;

/* One output column: a key or an aggregate. */
typedef struct GhAggOut
{
	bool		is_key;
	int			index;			/* into keys or calls */
	Oid			type;
	int32		typmod;
	char	   *name;
} GhAggOut;

/* What the checks of the query produce, and what the executor needs. */
typedef struct GhAggPlan
{
	const char *sql;
	Query	   *input;			/* keys, then input columns, FROM/WHERE */
	int			nkeys;
	GhAggKey   *keys;			/* the GROUP BY keys, then the carried ones */
	GhKeySet	group_keys;		/* hashing of the GROUP BY keys: keys[0] to
								 * keys[group_keys.nkeys - 1], columns 1 to
								 * group_keys.nkeys of an input row */
	bool		device_keys;	/* every key grouped on the device: by value
								 * with bitwise equality, or numbered */
	int			ncols;
	GhAggCol   *cols;
	int			ncols_in;		/* input columns: cols[0 .. ncols_in) */
	int			nexprs;			/* device expressions: the columns after */
	GhDevProg  *exprs;
	int			ncalls;
	GhAggCall  *calls;
	int			nout;
	GhAggOut   *out;
	/* the column definition list's typmods, applied to each result row */
	struct ExprState **coerce;	/* per output column, NULL where none */
	struct ExprContext *coerce_cxt;
} GhAggPlan;

/*
 * A device batch holds at most this many packets of gpuhash.batch_rows rows:
 * a packet is what a parallel worker sends at a time (aggregate_pack.c), a
 * batch is what one round trip to the device carries.  Fewer where the
 * memory budget holds fewer (gh_agg_batch_cap), but never fewer than
 * GH_AGG_MIN_BATCH rows, so that every batch makes progress.
 */
#define GH_AGG_BATCH_PACKETS	16
#define GH_AGG_MAX_BATCH		(4 * 1024 * 1024)
#define GH_AGG_MIN_BATCH		64

/*
 * A packet of input rows in the form the device takes, as a bytea: this
 * header, then the 8-byte arrays (for each key of 8 bytes, uint64 vals[n];
 * for each input column of 8 bytes, int64 or double vals[n], NUMERIC as the
 * scaled integer m of gh_agg_num_decode), then the 4-byte arrays (keys of at
 * most 4 bytes and int2/int4 columns, int32 vals[n], widened by the
 * receiver), then uint8 nullmask[n] (only if some key is NULL in the packet:
 * GH_PACKET_KEY_NULLS), for each column with a NULL in the packet (bit c of
 * nullcols) uint8 valid[n], for each NUMERIC column uint8 dscale[n], and last
 * the nexc NUMERIC values that are not fixed point (NaN, infinities, too many
 * digits): each as uint32 row, uint16 column, uint32 length and the value's
 * varlena bytes (4-byte header), unaligned, the row's valid[] being 0.
 * A numbered key (GhAggKey.dict) travels as uint32 numbers into the
 * packet's own dictionary of that key's distinct values, which comes last:
 * for each numbered key, in key order, uint32 count, uint32 bytes, then
 * count values, each MAXALIGNed from the dictionary's start (by value: the
 * 8-byte Datum; fixed length: the typlen bytes; varlena: 4-byte header and
 * data), then uint32 tag[count] padded to MAXALIGN.  The leader gives each
 * value its run-wide number.  Where the participants share a dictionary
 * (aggregate_dict.c's shared dictionary), a row's word may instead be
 * GH_PACKET_GLOBAL and the value's number in it; an entry whose tag is not
 * GH_PACKET_LOCAL introduces that global number's value, which the packet
 * carries before any row of its sender uses the number.
 * Count-only columns have no values.  Narrow arrays and absent NULL arrays
 * make a packet of one int4 key and one int4 argument 8 bytes a row instead
 * of 18: every byte crosses a tuple queue and is copied by the one leader.
 * For the same reason a packet whose 8-byte integers of a column all fit 32
 * bits sends them as int32 (narrowcols), and a NUMERIC column whose values
 * share one display scale sends that scale once (onedscols): TPC-H's Q1,
 * four numeric(15,2) arguments and two numbered keys, takes 24 bytes a row
 * instead of 44.
 */
typedef struct GhAggPacketHeader
{
	int32		vl_len_;
	uint32		n;
	uint16		nkeys;
	uint16		ncols;
	uint32		flags;			/* GH_PACKET_* */
	uint32		nullcols;		/* bit c: column c has valid[] */
	uint32		busy_us;		/* worker time spent making this packet */
	uint32		nexc;			/* NUMERIC values listed at the end */
	uint32		exc_bytes;		/* bytes of that list */
	uint32		dict_bytes;		/* bytes of the numbered keys' dictionaries */
	uint32		narrowcols;		/* bit c: column c's 8-byte integers (int8,
								 * timestamp, NUMERIC's m) all fit 32 bits and
								 * travel as int32, among the 4-byte arrays */
	uint32		onedscols;		/* bit c: NUMERIC column c's valid rows share
								 * one display scale, which travels as one
								 * byte instead of dscale[n] */
	/* the worker's device scan since its last packet (heapscan.h), or 0 */
	uint32		scan_pages;
	uint32		scan_checked;
	uint32		scan_hidden;
	uint32		scan_rows_host;
	uint32		scan_us;		/* staging and deforming */
} GhAggPacketHeader;

/* One entry of a packet's list of NUMERIC values that are not fixed point. */
#define GH_PACKET_EXC_HEADER	(4 + 2 + 4)

/*
 * A packet stops taking rows once its list of such values (with its
 * dictionaries) passes this many bytes, or a sixteenth of the memory budget
 * if that is less, so that a packet of wide NUMERICs stays far below 1 GB
 * and within the budget's share of one packet.
 */
#define GH_PACKET_EXC_LIMIT		(64 * 1024 * 1024)

#define GH_PACKET_KEY_NULLS		0x01

/* A numbered key's packet word: a global number (shared dictionary) */
#define GH_PACKET_GLOBAL		0x80000000U
/* A packet dictionary entry's tag: the value has no global number */
#define GH_PACKET_LOCAL			0xFFFFFFFFU

/*
 * gh_agg_key_width, gh_agg_col_width: bytes a key or an input column's
 * value takes in a packet.  By-value keys of at most 4 bytes travel as int32
 * and are sign-extended back, which gives the Datum that Int32GetDatum,
 * Int16GetDatum, CharGetDatum and BoolGetDatum give (unsigned 4-byte types
 * such as oid get other upper bits, the same for every row, which equality
 * and the result's 4-byte store do not see).
 */
static inline int
gh_agg_key_width(const GhAggKey *key)
{
	/* a key the device computes travels only as its placeholder */
	if (key->dict || key->prog_col >= 0 || key->year_col >= 0)
		return 4;
	return key->typbyval && key->typlen > 0 && key->typlen <= 4 ? 4 : 8;
}

static inline int
gh_agg_col_width(const GhAggCol *col)
{
	if (col->kind == GH_AGG_KIND_NONE)
		return 0;
	return col->vtype == GHV_INT2 || col->vtype == GHV_INT4 ||
		col->vtype == GHV_DATE ? 4 : 8;
}

/*
 * gh_agg_vtype_narrows: whether a packet may send a column of this type,
 * when it is 8 bytes wide, as int32 (narrowcols): integers, not floats.
 */
static inline bool
gh_agg_vtype_narrows(GhValType vtype)
{
	return vtype == GHV_INT8 || vtype == GHV_TIMESTAMP || vtype == GHV_NUMERIC;
}

/* gh_agg_col_has_ds: whether a packet has a display-scale array for col. */
static inline bool
gh_agg_col_has_ds(const GhAggCol *col)
{
	return col->kind == GH_AGG_KIND_NUMERIC;
}

/*
 * GH_AGG_DEVICE_CALL runs the device operation op (gh_agg_assign,
 * gh_agg_accumulate, ...) on the GPU or its CPU twin as target says, so that
 * call sites name what they do and not where: every operation of
 * cuda/gh_aggregate.h comes as op_gpu, which takes the target's stream before
 * its gh_error, and op_cpu.  A failure becomes gpuhash_report's ERROR, worded
 * with action ("while ...").
 */
#define GH_AGG_DEVICE_CALL(op, target, action, ...) \
	do { \
		gh_error	err_ = {0}; \
		gh_status	st_; \
		\
		if ((target) == GH_TARGET_GPU) \
			st_ = op##_gpu(__VA_ARGS__, gh_stream(target), &err_); \
		else \
			st_ = op##_cpu(__VA_ARGS__, &err_); \
		gpuhash_report(st_, &err_, (action)); \
	} while (0)

/* A run of the aggregation (aggregate_batch.c). */
typedef struct GhAggRun GhAggRun;

/* ---- the inside of a run (aggregate_numeric.c to aggregate_result.c) ---- */

/* Result of gh_agg_num_decode. */
#define GH_NUMV_FINITE		0
#define GH_NUMV_NAN		1
#define GH_NUMV_PINF		2
#define GH_NUMV_NINF		3
#define GH_NUMV_BIG		4		/* finite, but not for the device */
#define GH_NUMV_TEXT		5		/* a GHV_TEXT column's value (not NUMERIC) */

/*
 * A value of the batch that the host aggregates: a NUMERIC the device cannot
 * take, or a text value of a GHV_TEXT column (its extremes are the host's).
 */
typedef struct GhSideRow
{
	uint32		row;
	int			col;
	int			kind;			/* GH_NUMV_* */
	Datum		value;			/* GH_NUMV_BIG, GH_NUMV_TEXT: the value, in
								 * batch memory */
} GhSideRow;

/*
 * Host-side state of one (group, column): NUMERIC values the device could
 * not take, or a GHV_TEXT column's extremes (min and max only; the device
 * counts its values).
 */
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
	HTAB	   *side;			/* host-side NUMERIC state (GhNumSide), or NULL */
	/*
	 * at the end: accumulators of groups host_base to host_base + host_n - 1
	 * on the host, and their layout; window: groups a GPU set's window holds
	 */
	char	   *host_acc;
	gh_agg_layout hl;
	uint64		host_base;
	uint64		host_n;
	uint64		window;
} GhGroupSet;

/*
 * The dictionary of one numbered key (aggregate_dict.c): every distinct
 * value the pass has met, numbered densely from 0, in the representatives'
 * memory (rep_cxt), given back with the group sets after each pass.
 */
typedef struct GhAggDict
{
	Datum	   *vals;			/* number -> value */
	uint64	   *hash;			/* number -> the type's hash of the value */
	uint32		n;
	uint32		cap;
	uint32	   *slots;			/* open addressing over hash: number + 1 */
	uint64		nslots;
	Size		value_bytes;	/* the by-reference values' copies */
	Size		bytes;			/* all of the above */
	struct GhDictCacheEnt *cache;	/* bytes -> number, in front of the
									 * above (aggregate_dict.c) */
	uint32		cache_slots;	/* a power of two; 0: no cache yet */
} GhAggDict;

/*
 * The leader's view of one numbered key's shared dictionary: the value of
 * each global number some packet introduced (in the run's memory, for all
 * passes), and the number the present pass gave it, looked up once per
 * global number and pass.
 */
typedef struct GhAggGlobal
{
	Datum	   *vals;			/* global number -> value */
	int64	   *ids;			/* -> the pass's number, or GH_GLOBAL_* */
	uint64	   *hash;			/* GH_GLOBAL_MISS: the value's hash */
	uint32		cap;
	Size		bytes;			/* all of the above */
} GhAggGlobal;

#define GH_GLOBAL_UNKNOWN	(-3)	/* no packet introduced the value yet */
#define GH_GLOBAL_MISS		(-2)	/* past the budget: no number this pass */
#define GH_GLOBAL_UNSEEN	(-1)	/* not looked up in this pass */

/*
 * Past the budget, a value that is not in its key's dictionary is not
 * numbered (its group cannot be in memory, and the dictionary must not
 * grow): its word is this bit and its hash's upper bits, the same for every
 * row of that value, so that its rows go to one partition; the batch keeps
 * the value for the spill (GhDictMiss).
 */
#define GH_DICT_MISS		(UINT64CONST(1) << 63)

/* A staged row's key value that has no number (GH_DICT_MISS). */
typedef struct GhDictMiss
{
	uint32		row;
	int			key;
	Datum		value;			/* in batch memory */
} GhDictMiss;

/*
 * The batch being filled: host arrays (pinned for the GPU) and their twins
 * on the target.
 */
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
	bool		prepacked[GH_AGG_MAX_COLS]; /* NUMERIC: h_vals of every row
											 * staged is packed already, at
											 * the column's scale (packets
											 * of one display scale, equal
											 * to it): gh_agg_prepare_numeric
											 * has nothing to do */
	Datum	   *keys;			/* cap x nkeys */
	bool	   *knulls;
	GhSideRow  *side_rows;
	int			nside;
	int			side_cap;
	Size		bytes_limit;	/* by-reference copies (batch memory, the side
								 * rows with them) past which the batch is
								 * flushed: gh_agg_batch_bytes_limit */
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
	/* device expressions: the rows for the host, per result column */
	uint32	   *d_xhost[GH_AGG_MAX_COLS];
	uint32	   *d_xn;			/* GH_AGG_MAX_COLS counts */
	uint32		h_xn[GH_AGG_MAX_COLS];
	gh_expr xe[GH_AGG_MAX_COLS];	/* on the target's arrays */
	uint32	   *fb_ids;
	int64	   *fb_vals[GH_AGG_MAX_COLS];
	uint8	   *fb_valid[GH_AGG_MAX_COLS];
	Size		key_bytes;		/* the last batch's memory: by-reference keys
								 * and values it copied, its side rows */
	GhDictMiss *miss;			/* in row order, batch memory */
	int			nmiss;
	int			miss_cap;
	bool		miss_sorted;
	Size		dict_grew;		/* dictionary bytes the last batch added */
	Size		side_grew;		/* host-side state (text extremes, NUMERIC
								 * values) the last batch added */
} GhAggBatch;

/* NUMERIC state of a run that outlives its batches. */
typedef struct GhAggNumeric
{
	MemoryContext cxt;			/* host-side sums and extremes */
	int			scale[GH_AGG_MAX_COLS]; /* column scale, -1: none yet */
	/* device expressions' host evaluators, made when first needed */
	GhDevHost  *xhost[GH_AGG_MAX_COLS];
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
	uint64		text_values;	/* values of text min/max kept by the host */
	uint64		rescales;
	uint64		packet_bytes;
	uint64		dict_global;	/* numbered keys: global numbers learned */
	uint64		dict_intro;		/* values introduced with a global number */
	uint64		dict_packet;	/* values sent as packet entries only */
	uint64		worker_busy_us; /* sum over packets */
	/* the workers' device scans, as their packets tell */
	uint64		scan_pages;
	uint64		scan_checked;
	uint64		scan_hidden;
	uint64		scan_rows_host;
	uint64		scan_us;
	int			workers_planned;
	int			workers_launched;
	double		ms_input;		/* the input query's executor, wall */
	double		ms_copy;		/* packets into the batch */
	double		ms_flush_input; /* ms_flush while the input ran */
	instr_time	t_begin;
	double		ms_flush;
	double		ms_device;
	double		ms_device_passes;	/* ms_device of the passes after the first */
	double		ms_verify;
	double		ms_fetch;		/* accumulators to the host */
	double		ms_finish;		/* ms_fetch and the result rows */
	double		ms_passes;		/* partitions aggregated while rows were made */
} GhAggStats;

/*
 * A partition of spilled input rows, waiting for its pass: the rows whose
 * group hashes agree in their top used_bits bits.
 */
typedef struct GhAggPart
{
	LogicalTape *tape;
	int			used_bits;
	uint64		rows;
} GhAggPart;

/*
 * The memory budget and the spill (aggregate_spill.c).  A pass aggregates
 * rows in memory until its groups reach the budget; from then on (active)
 * it takes no new group, and rows of groups it does not hold go to out[],
 * split by the next bits of their hash.  Each partition is a later pass.
 */
typedef struct GhAggSpill
{
	Size		budget;			/* bytes of group memory on the host */
	Size		device_budget;	/* exact keys on the GPU: bytes of their groups
								 * there; 0: counted in budget */
	Size		device_peak;	/* largest device memory measured */
	bool		active;			/* this pass takes no new groups */
	int			used_bits;		/* hash bits shared by this pass's rows */
	int			bits;			/* log2 of the partitions of a split */
	const uint64 *lookup;		/* the main table's stored hashes, on the host */
	uint64		lookup_cap;
	LogicalTapeSet *tapes;		/* NULL until a row is spilled */
	LogicalTape **out;			/* this pass's partitions, NULL until written */
	uint64	   *out_rows;
	List	   *pending;		/* GhAggPart, waiting for their pass */
	TupleDesc	desc;			/* a spilled row: keys, then input columns */
	TupleTableSlot *read_slot;	/* a row read back from a partition */
	Datum	   *kv;				/* scratch keys of a looked-up row */
	bool	   *kn;
	MemoryContext cxt;			/* per-row scratch */
	MemoryContext read_cxt;		/* the row read back last */
	/* counters, over all passes */
	uint64		rows;			/* rows written to partitions */
	uint64		partitions;		/* partitions written */
	uint64		passes;			/* passes after the first */
	uint64		groups;			/* groups of the finished passes */
	Size		peak;			/* largest group memory measured */
	Size		staging;		/* bytes of the batch arrays in host memory
								 * (and the CPU twin's target copies) */
	Size		batch_peak;		/* largest by-reference copies of a batch */
	Size		total_peak;		/* largest of groups + staging + copies */
	long		disk_kb;		/* largest size of the tapes */
} GhAggSpill;

/*
 * What EXPLAIN ANALYZE shows of a run (gh_agg_run_memory): its rows and
 * groups over all passes, the device's time, and its memory.
 */
typedef struct GhAggMemory
{
	uint64		rows_in;
	uint64		groups;
	double		ms_device;
	Size		budget;
	Size		peak;
	Size		device_budget;	/* 0: none of its own */
	Size		device_peak;
	Size		staging;		/* the batch arrays, and the largest copies
								 * one batch made */
	Size		total_peak;		/* groups, staging and copies at once */
	uint32		batch_rows;		/* rows a batch holds */
	uint64		passes;			/* 1 + partitions aggregated */
	uint64		spilled_rows;
	long		disk_kb;
	/* the device scans of the workers that packed the input */
	uint64		scan_pages;
	uint64		scan_checked;
	uint64		scan_hidden;
	uint64		scan_rows_host;
	double		scan_ms;		/* summed over the workers */
	/* numbered keys that came in packets (GhAggStats' dict_*) */
	uint64		dict_global;
	uint64		dict_intro;
	uint64		dict_packet;
} GhAggMemory;

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
	bool		reported;		/* gh_agg_run_report has logged the run */
} GhAggCursor;

/*
 * A run: one gpuhash_aggregate() call's batch, group sets and result rows,
 * from gh_agg_run_begin to gh_agg_run_end.
 */
struct GhAggRun
{
	GhAggPlan  *plan;
	GhTarget	target;
	GhFallback	fallback;		/* why target is the twin where the GPU was
								 * wanted (monitor.c) */
	int			nkeys;
	int			ncols;
	int			ncols_in;		/* columns of an input row */
	bool		exact;			/* keys grouped exactly on the device */
	MemoryContext cxt;
	MemoryContext set_cxt;		/* the group sets' host memory: one pass */
	MemoryContext rep_cxt;		/* representatives' by-reference keys */
	GhAggBatch	batch;
	GhGroupSet	main;
	GhGroupSet	fb;
	GhAggNumeric num;
	GhAggStats	stats;
	GhAggSpill	spill;
	GhAggCursor out;
	GhAggDict	dict[GH_AGG_MAX_KEYS];	/* numbered keys' dictionaries */
	GhAggGlobal global[GH_AGG_MAX_KEYS];	/* their shared dictionaries */
};

/* in aggregate_numeric.c */
extern uint128 gh_pow10_u128(int k);
extern Datum gh_num_make(int128 v, int dscale);
extern Datum gh_num_avg(int128 v, int dscale, int64 n);
extern void gh_agg_add_side_row(GhAggRun *run, uint32 row, int col, int kind,
								Datum value);
extern void gh_agg_unprepack(GhAggRun *run, int c);
extern void gh_agg_prepare_numeric(GhAggRun *run);
extern void gh_agg_apply_side_rows(GhAggRun *run, uint32 nbad);
extern Datum gh_agg_num_unpack(GhAggRun *run, int c, int64 packed);
extern Datum gh_agg_num_side_value(GhAggRun *run, const GhSideRow *r);
extern Datum gh_agg_numeric_value(GhAggRun *run, GhGroupSet *s, uint64 g,
								  GhAggCall *call, bool *isnull);
extern void gh_agg_add_text_row(GhAggRun *run, uint32 row, int col, Datum v);
extern Datum gh_agg_text_value(GhAggRun *run, GhGroupSet *s, uint64 g,
							   GhAggCall *call, bool *isnull);
extern void gh_expr_fixups(GhAggRun *run, const uint32 *absent,
							   uint32 nabsent, uint32 nbad);

/*
 * The participants' shared dictionary of numbered keys (aggregate_dict.c):
 * GhSharedDict in the parallel query's shared memory, GhSharedDictRef a
 * process's attachment to it.
 */
typedef struct GhSharedDict GhSharedDict;
typedef struct GhSharedDictRef GhSharedDictRef;

/* in aggregate_dict.c */
extern uint64 gh_agg_dict_encode(GhAggRun *run, int k, Datum v, uint32 row);
extern Datum gh_agg_key_value(GhAggRun *run, int k, uint64 word, uint32 row);
extern Datum gh_agg_dict_value(GhAggRun *run, int k, uint64 word, uint32 row);
extern void gh_agg_dict_packet(GhAggRun *run, int k, const char *dict,
							   uint32 count, uint32 bytes, const char *tags,
							   uint64 *words, Datum *vals);
extern uint64 gh_agg_dict_global(GhAggRun *run, int k, uint32 g, uint32 row);
extern Size gh_shared_dict_size(void);
extern void gh_shared_dict_create(GhSharedDict *sd, dsa_area *area, Size budget);
extern void gh_shared_dict_reset(GhSharedDict *sd, GhSharedDictRef *ref);
extern GhSharedDictRef *gh_shared_dict_attach(GhSharedDict *sd, dsa_area *area);
extern void gh_shared_dict_detach(GhSharedDictRef *ref);
extern int64 gh_shared_dict_number(GhSharedDictRef *ref, int k, const char *data,
								   uint32 len, uint32 hash);
extern void gh_shared_dict_counts(GhSharedDictRef *ref, uint64 *numbered,
								  bool *full);
extern void gh_agg_dict_miss(GhAggRun *run, uint32 row, int k, Datum v);
extern void gh_agg_dict_reset(GhAggRun *run);
extern Size gh_agg_dict_bytes(GhAggRun *run);

/* in aggregate_groups.c */
extern void gh_agg_set_init(GhAggRun *run, GhGroupSet *s, bool fallback,
							GhTarget target);
extern void gh_agg_ensure_groups(GhAggRun *run, GhGroupSet *s, uint64 need);
extern void gh_agg_ensure_table(GhGroupSet *s, uint32 n);
extern void gh_agg_set_fetch(GhAggRun *run, GhGroupSet *s);
extern void gh_agg_set_window(GhAggRun *run, GhGroupSet *s, uint64 g);
extern void gh_agg_sets_reset(GhAggRun *run);
extern Size gh_agg_group_memory(GhAggRun *run, Size *device);
extern void gh_agg_note_memory(GhAggRun *run, Size now, Size copies);

/* in aggregate_fallback.c */
extern uint32 gh_agg_check_keys(GhAggRun *run, GhGroupSet *s, uint64 ngroups);
extern void gh_agg_to_fallback(GhAggRun *run, uint32 nbad);

/* in aggregate_spill.c */
extern void gh_agg_spill_init(GhAggRun *run);
extern void gh_agg_spill_share(GhAggRun *run, int participants);
extern Size gh_agg_device_limit(void);
extern void gh_agg_spill_check(GhAggRun *run);
extern bool gh_agg_spill_keep(GhAggRun *run, TupleTableSlot *slot);
extern void gh_agg_spill_absent(GhAggRun *run, const uint32 *rows, uint32 n);
extern void gh_agg_spill_end_pass(GhAggRun *run);
extern GhAggPart *gh_agg_spill_pop(GhAggRun *run);
extern TupleTableSlot *gh_agg_spill_read(GhAggRun *run, GhAggPart *part);
extern void gh_agg_spill_end(GhAggRun *run);

/* in aggregate_batch.c */
extern GhAggRun *gh_agg_run_begin(GhAggPlan *plan, GhTarget target);
extern Size gh_agg_batch_row_bytes(GhAggPlan *plan, GhTarget target,
									double load_factor);
extern uint32 gh_agg_batch_cap(Size row_bytes);
extern Size gh_agg_batch_bytes_limit(GhAggRun *run);
extern Size gh_agg_batch_bytes(GhAggRun *run);
extern void gh_agg_staging_alloc(GhAggRun *run);
extern void gh_agg_staging_free(GhAggRun *run);
extern void gh_agg_run_add(GhAggRun *run, TupleTableSlot *slot);
extern void gh_agg_run_add_packet(GhAggRun *run, const GhAggPacketHeader *pkt);
extern void gh_agg_run_add_packet_slot(GhAggRun *run, TupleTableSlot *slot,
									   const char *who);
extern void gh_agg_run_note_input(GhAggRun *run, struct PlanState *input,
								  double ms_input);
extern void gh_agg_flush(GhAggRun *run);
extern void gh_agg_run_end(GhAggRun *run);

/* in aggregate_result.c */
extern void gh_agg_run_complete(GhAggRun *run);
extern bool gh_agg_run_next(GhAggRun *run, Datum *values, bool *nulls);
extern bool gh_agg_run_rewind(GhAggRun *run);
extern void gh_agg_run_memory(GhAggRun *run, GhAggMemory *mem);
extern void gh_agg_run_finish(GhAggRun *run, Tuplestorestate *store,
							  TupleDesc desc);
extern void gh_agg_run_report(GhAggRun *run);

/* in aggregate_pack.c */
extern void gh_agg_pack_init(void);
extern bool gh_agg_can_pack(GhAggPlan *plan);
extern bool gh_agg_try_pack(GhAggPlan *plan, PlannedStmt *pstmt);
extern int	gh_agg_max_node_id(PlannedStmt *pstmt);
extern bool gh_agg_pack_gather(GhAggPlan *plan, Gather *gather, int node_id);
extern double gh_agg_pack_rows_estimate(int nkeys, int ncols, int nexprs);

/* in aggregate.c */
extern PGDLLEXPORT Datum gpuhash_aggregate(PG_FUNCTION_ARGS);
extern GhAggRun *gh_agg_start(const char *sql, TupleDesc expected);
extern bool gh_agg_call_supported(Aggref *agg);
extern bool gh_agg_call_host_extreme(Aggref *agg);
extern Expr *gh_agg_call_input(Aggref *agg);
extern int	gh_agg_key_form(Oid type, Oid eqop, Oid collation);
extern GhAggPlan *gh_agg_plan_node(int nkeys, const Oid *key_types,
								   const Oid *key_colls, const Oid *eqops,
								   int ncols, const Oid *col_types, int ncalls,
								   Aggref **aggs, const int *call_cols,
								   List *exprs, const int *key_cols,
								   const int *key_years);

/* in aggregate_scan.c */
extern void gpuhash_init_aggregate(void);
struct ExplainState;
extern void gh_agg_explain_memory(GhAggRun *run, struct ExplainState *es);

/* in agg_plan.c */
extern void gpuhash_init_agg_path(void);

/* the join's settings the aggregate reads (join_plan.c) */
extern int	gpuhash_batch_rows;
extern double gpuhash_load_factor;

/* gpuhash.load_factor's least value (its definition in join_plan.c) */
#define GH_LOAD_FACTOR_MIN	0.05

/* gh_pow10_i128: 10^k, 0 <= k <= 38 (10^38 is the largest below 2^127). */
static inline int128
gh_pow10_i128(int k)
{
	return (int128) gh_pow10_u128(k);
}

/*
 * GH_AGG_AT reads group g's entry of an accumulator array of set s on the
 * host: the set's window of groups (gh_agg_set_window) must hold g.
 * gh_agg_int_sum reads group g's 128-bit sum of column c.
 */
#define GH_AGG_AT(type, s, off, g) \
	(((type *) ((s)->host_acc + (off)))[(g) - (s)->host_base])

static inline int128
gh_agg_int_sum(GhGroupSet *s, uint64 g, int c)
{
	uint64		lo = GH_AGG_AT(uint64, s, s->hl.sum_off[c], g);
	int64		hi = GH_AGG_AT(int64, s, s->hl.sum_off[c] + s->hl.group_cap * 8, g);

	return ((int128) hi << 64) | lo;
}

/*
 * gh_agg_num_decode reads a NUMERIC's on-disk form (a stable format: pg_upgrade
 * keeps it) into m = value * 10^dscale.  Returns GH_NUMV_FINITE with *m and
 * *dscale set, a special value's kind, or GH_NUMV_BIG when the value has more
 * than 18 significant digits or a display scale above GH_NUM_SCALE_CAP.
 *
 * The format: a uint16 header, then base-10000 int16 digits, the first of
 * weight w.  Header flags 0xC000: NaN (0xC000), +Inf (0xD000) or -Inf
 * (0xF000) by the top four bits; 0x8000: short form, sign 0x2000, display
 * scale in 0x1F80, weight in 0x007F (sign bit 0x0040); otherwise long form,
 * sign 0x4000 and display scale 0x3FFF, and an int16 weight follows.
 *
 * It is here, not in aggregate_numeric.c, because staging a row
 * (aggregate_batch.c) decodes every NUMERIC argument: inline, that costs no
 * function call per row.
 */
static inline int
gh_agg_num_decode(Datum d, int64 *m, int *dscale)
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
			return GH_NUMV_PINF;
		if ((h & 0xF000) == 0xF000)
			return GH_NUMV_NINF;
		return GH_NUMV_NAN;
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
	if (ds > GH_NUM_SCALE_CAP)
		return GH_NUMV_BIG;

	/*
	 * At most four base-10000 digits (the common case: below 10^16 at the
	 * value's own precision): Horner's rule in 64 bits gives value *
	 * 10000^f, f the digits after the point, then one scaling by 10^(ds -
	 * 4f) with constant divisors.  Anything else takes the general loop,
	 * which gives the same answer.
	 */
	if (len - hdr <= 8)
	{
		uint64		u = 0;
		int			nd = (len - hdr) / 2;
		int			e = ds - 4 * (nd - 1 - weight);
		bool		ok = true;

		for (int i = 0; i < nd; i++)
		{
			int16		digit;

			memcpy(&digit, p + hdr + 2 * i, sizeof(digit));
			ok &= digit >= 0 && digit < 10000;
			u = u * 10000 + (uint64) (uint16) digit;
		}
		if (e >= 0 && e <= 18)
		{
			static const uint64 pow10[19] = {
				1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000,
				1000000000, UINT64CONST(10000000000), UINT64CONST(100000000000),
				UINT64CONST(1000000000000), UINT64CONST(10000000000000),
				UINT64CONST(100000000000000), UINT64CONST(1000000000000000),
				UINT64CONST(10000000000000000), UINT64CONST(100000000000000000),
				UINT64CONST(1000000000000000000)};

			ok &= !__builtin_mul_overflow(u, pow10[e], &u) &&
				u <= (uint64) PG_INT64_MAX;
		}
		else if (e == -1)
		{
			ok &= u % 10 == 0;
			u /= 10;
		}
		else if (e == -2)
		{
			ok &= u % 100 == 0;
			u /= 100;
		}
		else if (e == -3)
		{
			ok &= u % 1000 == 0;
			u /= 1000;
		}
		else
			ok = false;
		if (ok)
		{
			*m = neg ? -(int64) u : (int64) u;
			*dscale = ds;
			return GH_NUMV_FINITE;
		}
	}
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
				return GH_NUMV_BIG;	/* not a canonical value; let PostgreSQL add it */
			acc += digit / div;
		}
		else
		{
			if (e > 18)
				return GH_NUMV_BIG;
			acc += (int128) digit * gh_pow10_i128(e);
		}
		if (acc > PG_INT64_MAX)
			return GH_NUMV_BIG;
	}
	*m = neg ? -(int64) acc : (int64) acc;
	*dscale = ds;
	return GH_NUMV_FINITE;
}

#endif							/* GPUHASH_AGGREGATE_H */
