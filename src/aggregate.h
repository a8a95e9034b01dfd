/*-------------------------------------------------------------------------
 * aggregate.h
 *	  Declarations shared by the parts of gpuhash_aggregate(): the query
 *	  checks and the driver (aggregate.c) and the group sets that aggregate
 *	  the input rows on the device (aggregate_groups.c), with their NUMERIC
 *	  results (aggregate_numeric.c), and the scan that returns the groups in
 *	  place of the function (aggregate_scan.c).
 *-------------------------------------------------------------------------
 */
#ifndef GPUHASH_AGGREGATE_H
#define GPUHASH_AGGREGATE_H

#include "access/tupdesc.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"
#include "utils/tuplestore.h"

#include "gpuhash.h"
/* the device API of the aggregate */
#include "../cuda/gpuhash_agg.h"

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

/* The input types of sum, avg, min and max. */
typedef enum GhValType
{
	GHV_OTHER,					/* only count(x) */
	GHV_INT2,
	GHV_INT4,
	GHV_INT8,
	GHV_FLOAT4,
	GHV_FLOAT8,
	GHV_NUMERIC
} GhValType;

/* How a row's key is compared with its group's representative. */
typedef enum GhKeyEq
{
	GHK_EQ_BYVAL,				/* equality is equality of the Datum */
	GHK_EQ_IMAGE,				/* equality is equality of the bytes */
	GHK_EQ_FUNC					/* call the equality function */
} GhKeyEq;

/*
 * One key column of the input: a GROUP BY expression (hashed and verified),
 * or a carried output expression of the keys (kept with the representative).
 */
typedef struct GhAggKey
{
	Expr	   *expr;
	bool		carried;
	Oid			type;
	Oid			collation;
	int16		typlen;
	bool		typbyval;
	Oid			hash_proc;		/* extended hash function */
	Oid			eq_proc;		/* equality function */
	GhKeyEq		eqmode;
	FmgrInfo	hash;
	FmgrInfo	eq;
} GhAggKey;

/* One input column: a distinct aggregate argument. */
typedef struct GhAggCol
{
	Expr	   *expr;
	Oid			type;
	GhValType	vtype;
	uint8		kind;			/* gh_agg_kind */
	uint8		ops;			/* GH_AGG_OP_* */
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
	GhAggKey   *keys;
	bool		device_keys;	/* every key by value with bitwise equality */
	int			ncols;
	GhAggCol   *cols;
	int			ncalls;
	GhAggCall  *calls;
	int			nout;
	GhAggOut   *out;
	/* the column definition list's typmods, applied to each result row */
	struct ExprState **coerce;	/* per output column, NULL where none */
	struct ExprContext *coerce_cxt;
} GhAggPlan;

/*
 * A device batch holds this many packets of gpuhash.batch_rows rows: a
 * packet is what a parallel worker sends at a time (aggregate_pack.c), a
 * batch is what one round trip to the device carries.
 */
#define GH_AGG_BATCH_PACKETS	16
#define GH_AGG_MAX_BATCH		(4 * 1024 * 1024)

/*
 * A packet of input rows in the form the device takes, as a bytea: this
 * header, then the 8-byte arrays (for each key of 8 bytes, uint64 vals[n];
 * for each input column of 8 bytes, int64 or double vals[n]), then the
 * 4-byte arrays (keys of at most 4 bytes and int2/int4 columns, int32
 * vals[n], widened by the receiver), then uint8 nullmask[n] (only if some key
 * is NULL in the packet: GH_PACKET_KEY_NULLS) and, for each column with a
 * NULL in the packet (bit c of nullcols), uint8 valid[n].  Count-only
 * columns have no values.  Narrow arrays and absent NULL arrays make a
 * packet of one int4 key and one int4 argument 8 bytes a row instead of 18:
 * every byte crosses a tuple queue and is copied by the one leader.
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
} GhAggPacketHeader;

#define GH_PACKET_KEY_NULLS		0x01

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
	return key->typbyval && key->typlen > 0 && key->typlen <= 4 ? 4 : 8;
}

static inline int
gh_agg_col_width(const GhAggCol *col)
{
	if (col->kind == GH_AGG_KIND_NONE)
		return 0;
	return col->vtype == GHV_INT2 || col->vtype == GHV_INT4 ? 4 : 8;
}

/*
 * GH_AGG_DEVICE_CALL runs the device operation op (gh_agg_assign,
 * gh_agg_accumulate, ...) on the GPU or its CPU twin as target says, so that
 * call sites name what they do and not where: every operation of
 * cuda/gpuhash_agg.h comes as op_gpu, which takes the target's stream before
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

/* A run: the group sets and the batch being filled (aggregate_groups.c). */
typedef struct GhAggRun GhAggRun;

/* aggregate.c */
extern PGDLLEXPORT Datum gpuhash_aggregate(PG_FUNCTION_ARGS);
extern GhAggRun *gh_agg_start(const char *sql, TupleDesc expected);

/* aggregate_scan.c */
extern void gh_agg_scan_init(void);

/* aggregate_groups.c */
extern GhAggRun *gh_agg_run_begin(GhAggPlan *plan, GhTarget target);
extern void gh_agg_run_add(GhAggRun *run, TupleTableSlot *slot);
extern void gh_agg_run_add_packet(GhAggRun *run, const GhAggPacketHeader *pkt);
extern void gh_agg_run_complete(GhAggRun *run);
extern bool gh_agg_run_next(GhAggRun *run, Datum *values, bool *nulls);
extern void gh_agg_coerce_row(GhAggPlan *plan, Datum *values, bool *nulls);
extern void gh_agg_run_rewind(GhAggRun *run);
extern void gh_agg_run_report(GhAggRun *run);
extern void gh_agg_run_finish(GhAggRun *run, Tuplestorestate *store,
							  TupleDesc desc);
extern void gh_agg_run_end(GhAggRun *run);
extern void gh_agg_run_note_input(GhAggRun *run, int workers_planned,
								  int workers_launched, double ms_input);

/* aggregate_numeric.c */
extern uint128 gh_pow10_u128(int k);
extern Datum gh_num_make(int128 v, int dscale);
extern Datum gh_num_avg(int128 v, int dscale, int64 n);

/* aggregate_pack.c */
extern void gpuhash_init_aggregate(void);
extern bool gh_agg_can_pack(GhAggPlan *plan);
extern bool gh_agg_try_pack(GhAggPlan *plan, PlannedStmt *pstmt);

/* settings this module reads (gpuhash.c) */
extern int	gpuhash_batch_rows;
extern double gpuhash_load_factor;

#endif							/* GPUHASH_AGGREGATE_H */
