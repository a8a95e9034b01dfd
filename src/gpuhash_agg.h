/*-------------------------------------------------------------------------
 * gpuhash_agg.h
 *	  GpuHashAgg, the transparent GROUP BY: what its planner, its executor
 *	  and its reading of the query share.
 *
 * Three files, each calling only those listed before it (aggregate.h's
 * layering, of which they are the top):
 *
 *	agg_path.c		the query as the engine takes it: the checks of the
 *					grouping stage and the device expressions compiled
 *					from its arguments, keys and quals
 *	agg_exec.c		the CustomScan node over the engine, and its EXPLAIN
 *	agg_plan.c		the path hook, the cost model, the CustomScan plan and
 *					the planner_hook that packs a parallel input; the
 *					module's set-up
 *
 * The plan hands the executor a CustomScan whose custom_scan_tlist is the
 * keys and then the Aggrefs (the engine's output row), whose qual is HAVING
 * and whose custom_private is laid out as GHA_PRIV_* below, all of it safe
 * for copyObject.  Declarations are grouped by the file that defines them.
 *-------------------------------------------------------------------------
 */
#ifndef GPUHASH_AGG_H
#define GPUHASH_AGG_H

#include "nodes/pathnodes.h"
#include "nodes/plannodes.h"

#include "aggregate.h"

#define GHA_NAME "GpuHashAgg"

/*
 * custom_private of a GpuHashAgg CustomScan, a List in this order.  nkeys
 * is the length of GHA_PRIV_EQOPS: the first nkeys entries of
 * custom_scan_tlist are the keys, the others the Aggrefs, one per entry of
 * GHA_PRIV_CALL_COLS.  The child returns the nkeys keys (or, for a key the
 * device computes, a placeholder column), then the input columns, one per
 * entry of GHA_PRIV_COL_TYPES; the engine's columns are those input
 * columns, then the device expressions' results.
 */
enum GhaScanPrivateIndex
{
	GHA_PRIV_EQOPS,				/* OID list: the GROUP BY equality operators */
	GHA_PRIV_CALL_COLS,			/* integer list: each Aggref's input column */
	GHA_PRIV_COL_TYPES,			/* OID list: the input columns' types */
	GHA_PRIV_PACKED,			/* Integer: the child returns packets */
	GHA_PRIV_EXPRS,				/* list: device expressions' programs
								 * (devexpr.h's GhDevProgField) */
	GHA_PRIV_KEY_COLS,			/* integer list: per key, the device
								 * expression's column that computes it, or
								 * -1 */
	GHA_PRIV_KEY_YEARS,			/* integer list: per key, the input column
								 * whose year (extract) the device computes
								 * as the key, or -1 */
	GHA_PRIV_FILTER				/* Integer: the call that counts the rows
								 * passing the scan's quals the device
								 * evaluates (filter_count), or -1 */
};

/*
 * What agg_path.c finds in the query (gha_check_query), for the paths of
 * agg_plan.c.
 */
typedef struct GhaQuery
{
	List	   *keys;			/* GROUP BY expressions */
	List	   *eqops;			/* their equality operators */
	List	   *aggs;			/* distinct Aggrefs of the target and HAVING */
	List	   *args;			/* distinct aggregate arguments */
	List	   *call_cols;		/* per Aggref, its column or -1 (after
								 * compile_args: an input column, or past
								 * them a device expression) */
	List	   *inputs;			/* the child's columns after the keys */
	List	   *exprs;			/* device expressions' programs
								 * (gh_agg_plan_node) */
	bool		device_keys;	/* keys grouped exactly on the device: a
								 * parallel input can be packed */
	List	   *key_cols;		/* per key, the engine column of the device
								 * expression that computes it, or -1 */
	List	   *key_years;		/* per key, the input column (date or
								 * timestamp) whose year the device computes
								 * as the key, or -1 */
	int			ngrouped;		/* the GROUP BY's own keys, the first of
								 * keys; after them, dependent columns */
	List	   *quals;			/* the scan's quals the device evaluates
								 * (gha_device_quals), or NIL */
	int			filter_call;	/* with quals, the index in aggs of the
								 * hidden count of the rows that pass them
								 * (filter_count), else -1 */
	double		filtered_rows;	/* with quals, the rows that pass them */
	int			nnumbered;		/* keys the device groups by number */
	double		numbered_per_row;	/* the leader's lookups of values new to
									 * a packet, per input row
									 * (agg_plan.c's numbered_lookups) */
	double		numbered_values;	/* the numbered keys' distinct values */
	double		numbered_bytes; /* what the shared dictionary holds of them */
} GhaQuery;


/* in agg_path.c */
extern bool gha_check_query(PlannerInfo *root, PathTarget *target, List *having,
							GhaQuery *q, List *quals);
extern Expr *gha_call_input(Aggref *agg, List *quals);
extern Expr *gha_key_placeholder(GhaQuery *q, int i);
extern List *gha_device_quals(RelOptInfo *rel, GhaQuery *q);
extern bool gha_all_on_device(GhaQuery *q);

/* in agg_exec.c */
extern Node *gha_create_state(CustomScan *cscan);
extern GhAggPlan *gha_engine_plan(CustomScan *cscan);

#endif							/* GPUHASH_AGG_H */
