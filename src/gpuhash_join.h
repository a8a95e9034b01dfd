/*-------------------------------------------------------------------------
 * gpuhash_join.h
 *	  What the GpuHashJoin planner (join_plan.c) hands the executor
 *	  (join_exec.c and the files of join_exec.h); the device hash table
 *	  both use is in hashtable.h.
 *-------------------------------------------------------------------------
 */
#ifndef GPUHASH_JOIN_H
#define GPUHASH_JOIN_H

#include "nodes/execnodes.h"
#include "nodes/extensible.h"

#include "gpuhash.h"
#include "hashtable.h"

#define GPUHASH_JOIN_NAME "GpuHashJoin"

/*
 * custom_private of a GpuHashJoin CustomScan, a List in this order (all
 * copyObject-safe):
 *	0 Integer jointype
 *	1 Integer number of outer columns in custom_scan_tlist (the rest: inner)
 *	2 Integer inner_unique (1: at most one inner row matches an outer row)
 *	3 Integer number of hash clauses (the first custom_exprs)
 *	4 OidList outer side's extended hash function, one per hash clause
 *	5 OidList inner side's extended hash function
 *	6 OidList equality function of each hash clause
 *	7 OidList input collation of each hash clause
 *	8 IntList 1 where the clause's operator takes (inner, outer)
 *	9 Integer 1: a parallel join whose participants read a partial inner
 *	  path together into shared memory
 * custom_exprs: the hash clauses as OpExprs with the outer argument first,
 * then the remaining join quals.  custom_scan_tlist: the outer child's
 * targetlist followed by the inner child's.
 */
enum
{
	GHJ_PRIV_JOINTYPE,
	GHJ_PRIV_NOUTER,
	GHJ_PRIV_INNER_UNIQUE,
	GHJ_PRIV_NHASH,
	GHJ_PRIV_OUTER_HASH,
	GHJ_PRIV_INNER_HASH,
	GHJ_PRIV_EQ,
	GHJ_PRIV_COLL,
	GHJ_PRIV_SWAPPED,
	GHJ_PRIV_SHARED,
	GHJ_PRIV_ROWID,				/* (scan tlist resno, attno) of row identity columns */
	GHJ_PRIV_COUNT
};

extern CustomScanMethods gpuhash_join_scan_methods;

extern void gpuhash_init_join_plan(void);
extern Node *gpuhash_join_create_state(CustomScan *cscan);

/* settings of the join (join_plan.c) */
extern int	gpuhash_batch_rows;
extern double gpuhash_load_factor;
extern int	gpuhash_group_size;
extern int	gpuhash_probe_scheme;
extern double gpuhash_join_setup_cost;
extern double gpuhash_worker_context_cost;
extern double gpuhash_gpu_join_cost_fraction;
extern bool gpuhash_shared_build;

#endif							/* GPUHASH_JOIN_H */
