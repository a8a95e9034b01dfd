/*-------------------------------------------------------------------------
 * gpuhash_agg.h
 *	  Declarations shared by the parts of gpuhash_aggregate(): the query
 *	  checks and the driver (aggregate.c) and the group sets that aggregate
 *	  the input rows on the device (aggregate_groups.c).
 *-------------------------------------------------------------------------
 */
#ifndef GPUHASH_AGG_SRC_H
#define GPUHASH_AGG_SRC_H

#include "access/tupdesc.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"
#include "utils/tuplestore.h"

#include "gpuhash.h"
/* the device API; same file name as this one, hence the path */
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
 * header, then for each key uint64 vals[n], then uint8 nullmask[n] (if any
 * key), then for each input column 8-byte vals[n] (int64 or double; none for
 * count-only columns) and uint8 valid[n].
 */
typedef struct GhAggPacketHeader
{
	int32		vl_len_;
	uint32		n;
	uint32		nkeys;
	uint32		ncols;
} GhAggPacketHeader;

/* A run: the group sets and the batch being filled (aggregate_groups.c). */
typedef struct GhAggRun GhAggRun;

/* aggregate_groups.c */
extern GhAggRun *gh_agg_run_begin(GhAggPlan *plan, GhTarget target);
extern void gh_agg_run_add(GhAggRun *run, TupleTableSlot *slot);
extern void gh_agg_run_add_packet(GhAggRun *run, const GhAggPacketHeader *pkt);
extern void gh_agg_run_finish(GhAggRun *run, Tuplestorestate *store,
							  TupleDesc desc);
extern void gh_agg_run_end(GhAggRun *run);

/* aggregate_pack.c */
extern void gpuhash_init_aggregate(void);
extern bool gh_agg_can_pack(GhAggPlan *plan);
extern bool gh_agg_try_pack(GhAggPlan *plan, PlannedStmt *pstmt);

/* settings this module reads (gpuhash.c) */
extern int	gpuhash_batch_rows;
extern double gpuhash_load_factor;

#endif							/* GPUHASH_AGG_SRC_H */
