/*-------------------------------------------------------------------------
 * gpuhash_join.h
 *	  What the GpuHashJoin planner (join_plan.c) hands the executor
 *	  (join_exec.c), and the device hash table both use (hashtable.c).
 *-------------------------------------------------------------------------
 */
#ifndef GPUHASH_JOIN_H
#define GPUHASH_JOIN_H

#include "nodes/execnodes.h"
#include "nodes/extensible.h"

#include "gpuhash.h"

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

/* settings of the join (gpuhash.c) */
extern int	gpuhash_batch_rows;
extern double gpuhash_load_factor;
extern int	gpuhash_group_size;
extern int	gpuhash_probe_scheme;
extern int	gpuhash_device_memory_limit;
extern double gpuhash_join_setup_cost;
extern double gpuhash_worker_context_cost;
extern double gpuhash_gpu_join_cost_fraction;
extern bool gpuhash_shared_build;

/* The device hash table of one join (hashtable.c). */
typedef struct GhTable
{
	GhTarget	target;
	gh_mm		mm;
	void	   *mem;			/* table allocation on the target */
	size_t		mem_bytes;
	const uint32 *rows;			/* host view of the table's row array */
	uint32	   *rows_copy;		/* host copy of it (GPU), else NULL */
	bool		rows_identity;	/* every hash distinct: rows[i] = i (rows may
								 * then be NULL; see cuda/gh_layout.h) */
	/* probe buffers */
	uint32		probe_cap;
	void	   *d_probe;
	void	   *d_first;
	void	   *d_count;
	double		device_ms;		/* time spent in device calls */
	GhSvcTableInfo svc;			/* held by the GPU service: svc.id != 0, and the
								 * join probes through svc's probe area */
	bool		shared_view;	/* a view of a parallel peer's service table */
} GhTable;

extern bool gh_table_fits_device(double nrows);
extern GhTable *gh_table_build(GhTarget target, const uint64 *hashes,
							   uint32 nrows);
extern void gh_table_probe(GhTable *table, const uint64 *hashes, uint32 n,
						   uint32 *first, uint32 *count);
extern bool gh_table_move_to_gpu(GhTable *table);
extern bool gh_table_probe_area(GhTable *table, uint32 cap, uint64 **hashes,
								uint32 **first, uint32 **count);
extern GhTable *gh_table_build_service(const uint64 *hashes, uint32 nrows,
									   uint32 probe_cap, uint32 peer_table);
extern void gh_table_drop_rows(GhTable *table);
extern void gh_table_free(GhTable *table);

#endif							/* GPUHASH_JOIN_H */
