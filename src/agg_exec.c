/*-------------------------------------------------------------------------
 * agg_exec.c
 *	  Execution of GpuHashAgg: the CustomScan node over the engine of
 *	  gpuhash_aggregate, and its EXPLAIN.
 *
 * The node, in the order a query meets it:
 *
 * 1. gha_begin starts the child and makes the engine's plan (GhAggPlan)
 *	  from the CustomScan: keys and Aggrefs from its scan tuple, the rest
 *	  from custom_private (gpuhash_agg.h's GHA_PRIV_*).  No row is read yet.
 * 2. The first row asked for reads the whole input into a run (gha_group):
 *	  the child's rows, or, where the planner_hook packed a parallel input
 *	  (GHA_PRIV_PACKED), the workers' packets, the leader then taking no
 *	  part in the Gather so that it only drains the workers' queues.
 * 3. Then each row is a group as the engine makes it (gh_agg_run_next),
 *	  stored as the scan tuple: ExecScan evaluates HAVING and the target
 *	  list over it.  Results, types, NULL groups and numeric display scales
 *	  are gpuhash_aggregate's, which are PostgreSQL's (float sums to the
 *	  tolerance README states).  The hidden count of a device filter
 *	  (GHA_PRIV_FILTER) is summed over the groups returned, for EXPLAIN
 *	  ANALYZE's rows removed.
 * 4. A rescan rewinds the groups unless the input's parameters changed or
 *	  the run spilled to disk (its groups are gone), when the input is read
 *	  again; the end ends the run, which gives back what it holds, on the
 *	  device too.
 *
 * Reading the input whole before the first group is what a hash aggregate
 * does; here it also lets the device take the rows in batches.  The node
 * runs in one process: its parallelism is the Gather below it.
 *
 * EXPLAIN shows the group keys as HashAggregate does, the quals the device
 * evaluates, with VERBOSE the expressions the device computes, where the
 * run groups, and with ANALYZE the run's memory (aggregate_scan.c's
 * gh_agg_explain_memory, shared with gpuhash_aggregate's scan).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/explain.h"
#include "executor/executor.h"
#include "nodes/extensible.h"
#include "nodes/nodeFuncs.h"
#include "utils/guc.h"
#include "utils/ruleutils.h"

#include "aggregate.h"
#include "gpuhash_agg.h"
#include "heapscan.h"

/* The state of a GpuHashAgg node. */
typedef struct GhaState
{
	CustomScanState css;
	PlanState  *child;
	bool		packed;			/* the child returns GpuHashAggPack packets */
	GhAggPlan  *plan;
	GhTarget	target;			/* where the run groups */
	GhAggRun   *run;			/* NULL before the first row */
	bool		grouped;		/* the run has read the input */
	int			filter_col;		/* the scan tuple's column of the hidden
								 * count of rows passing the device's quals
								 * (GHA_PRIV_FILTER), or -1 */
	uint64		passed;			/* the sum of that count over the groups
								 * returned */
	bool		drained;		/* every group has been returned */
	/*
	 * The device scan of the input (gha_scan_choose): the child's table
	 * read as pages, the child (a sequential scan) never run.  Where
	 * scan_refusal is not NULL it says why the child's rows are read.
	 */
	const char *scan_refusal;
	GhHeapScanCounts scan_counts;	/* of the last run's scan */
	bool		scanned;
} GhaState;

static void gha_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *gha_exec(CustomScanState *node);
static void gha_end(CustomScanState *node);
static void gha_rescan(CustomScanState *node);
static void gha_explain(CustomScanState *node, List *ancestors, ExplainState *es);
static const char *gha_scan_choose(GhaState *st, EState *estate);

static CustomExecMethods gha_exec_methods = {
	.CustomName = GHA_NAME,
	.BeginCustomScan = gha_begin,
	.ExecCustomScan = gha_exec,
	.EndCustomScan = gha_end,
	.ReScanCustomScan = gha_rescan,
	.ExplainCustomScan = gha_explain,
};

/*
 * gha_create_state makes the node's state (CreateCustomScanState of the
 * scan methods that agg_plan.c registers).
 */
Node *
gha_create_state(CustomScan *cscan)
{
	GhaState   *st = (GhaState *) newNode(sizeof(GhaState), T_CustomScanState);

	st->css.methods = &gha_exec_methods;
	return (Node *) st;
}

/*
 * gha_engine_plan makes the engine's plan of a GpuHashAgg: keys and Aggrefs
 * from the scan tuple, the equality operators, the input columns' types and
 * each call's column from custom_private.  The planner_hook (agg_plan.c)
 * makes one too, to see whether the engine takes packets.
 */
GhAggPlan *
gha_engine_plan(CustomScan *cscan)
{
	List	   *eqops = list_nth(cscan->custom_private, GHA_PRIV_EQOPS);
	List	   *call_cols = list_nth(cscan->custom_private, GHA_PRIV_CALL_COLS);
	List	   *col_types = list_nth(cscan->custom_private, GHA_PRIV_COL_TYPES);
	int			nkeys = list_length(eqops);
	int			ncalls = list_length(call_cols);
	int			ncols = list_length(col_types);
	Oid		   *key_types = palloc(sizeof(Oid) * (nkeys + 1));
	Oid		   *key_colls = palloc(sizeof(Oid) * (nkeys + 1));
	Oid		   *key_eqops = palloc(sizeof(Oid) * (nkeys + 1));
	Oid		   *types = palloc(sizeof(Oid) * (ncols + 1));
	Aggref	  **aggs = palloc(sizeof(Aggref *) * (ncalls + 1));
	int		   *cols = palloc(sizeof(int) * (ncalls + 1));
	int		   *key_cols = palloc(sizeof(int) * (nkeys + 1));
	int		   *key_years = palloc(sizeof(int) * (nkeys + 1));

	if (list_length(cscan->custom_scan_tlist) != nkeys + ncalls ||
		list_length(list_nth(cscan->custom_private, GHA_PRIV_KEY_COLS)) != nkeys ||
		list_length(list_nth(cscan->custom_private, GHA_PRIV_KEY_YEARS)) != nkeys)
		elog(ERROR, "GpuHashAgg: malformed plan");
	for (int i = 0; i < nkeys; i++)
	{
		Expr	   *key = list_nth_node(TargetEntry, cscan->custom_scan_tlist, i)->expr;

		key_types[i] = exprType((Node *) key);
		key_colls[i] = exprCollation((Node *) key);
		key_eqops[i] = list_nth_oid(eqops, i);
	}
	for (int i = 0; i < ncols; i++)
		types[i] = list_nth_oid(col_types, i);
	for (int i = 0; i < ncalls; i++)
	{
		aggs[i] = (Aggref *) list_nth_node(TargetEntry, cscan->custom_scan_tlist,
										   nkeys + i)->expr;
		cols[i] = list_nth_int(call_cols, i);
	}
	for (int i = 0; i < nkeys; i++)
	{
		key_cols[i] = list_nth_int(list_nth(cscan->custom_private, GHA_PRIV_KEY_COLS), i);
		key_years[i] = list_nth_int(list_nth(cscan->custom_private, GHA_PRIV_KEY_YEARS), i);
	}
	return gh_agg_plan_node(nkeys, key_types, key_colls, key_eqops,
							ncols, types, ncalls, aggs, cols,
							list_nth(cscan->custom_private, GHA_PRIV_EXPRS), key_cols,
							key_years);
}

/* gha_begin starts the child and makes the engine's plan. */
static void
gha_begin(CustomScanState *node, EState *estate, int eflags)
{
	GhaState   *st = (GhaState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;

	st->child = ExecInitNode(linitial(cscan->custom_plans), estate, eflags);
	node->custom_ps = list_make1(st->child);
	st->packed = intVal(list_nth(cscan->custom_private, GHA_PRIV_PACKED)) != 0;
	st->plan = gha_engine_plan(cscan);
	st->filter_col = intVal(list_nth(cscan->custom_private, GHA_PRIV_FILTER));
	if (st->filter_col >= 0)
		st->filter_col += list_length(list_nth(cscan->custom_private, GHA_PRIV_EQOPS));
	/* device = cpu runs the CPU twin, also where gpuhash.cost_as_gpu planned */
	st->target = gpuhash_device != GPUHASH_DEVICE_CPU &&
		gpuhash_plan_target() == GH_TARGET_GPU ? GH_TARGET_GPU : GH_TARGET_CPU;
	st->scan_refusal = gha_scan_choose(st, estate);
}

/*
 * gha_scan_choose decides whether the run reads its input with the device
 * scan (heapscan.h's row source); NULL if so, or why not.
 */
static const char *
gha_scan_choose(GhaState *st, EState *estate)
{
	if (st->packed)
		return "the input comes from parallel workers";
	return gh_scan_source_refusal(st->child, estate);
}

/*
 * gha_group_scan reads the whole input into the run with the device scan;
 * false where the scan cannot start (the caller runs the child).
 */
static bool
gha_group_scan(GhaState *st)
{
	GhScanSource *src;
	TupleTableSlot *slot;

	src = gh_scan_source_begin(st->child, st->css.ss.ps.state,
							   gpuhash_exec_target());
	if (src == NULL)
		return false;
	while ((slot = gh_scan_source_next(src)) != NULL)
		gh_agg_run_add(st->run, slot);
	st->scan_counts = *gh_scan_source_counts(src);
	st->scanned = true;
	gh_scan_source_end(src);
	return true;
}

/*
 * gha_group reads the whole input into a new run.  With packets the
 * leader's job is to drain the workers' queues: a leader busy filling a
 * packet of its own leaves them full and the workers waiting, which costs
 * more than its packets bring
 * (bench/results/2026-11-29-gpuhashagg-comment-measurements.md).  The
 * Gather decides that on its first row, from parallel_leader_participation,
 * which is off until the input is read.
 */
static void
gha_group(GhaState *st)
{
	MemoryContext old = MemoryContextSwitchTo(st->css.ss.ps.state->es_query_cxt);
	int			nest = -1;
	instr_time	t0;

	st->run = gh_agg_run_begin(st->plan, gpuhash_exec_target());
	MemoryContextSwitchTo(old);
	/* the groups of every participant's rows: their budgets together */
	if (IsA(st->child->plan, Gather))
		gh_agg_spill_share(st->run, ((Gather *) st->child->plan)->num_workers + 1);
	if (st->packed)
	{
		nest = NewGUCNestLevel();
		(void) set_config_option("parallel_leader_participation", "off",
								 PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	}
	INSTR_TIME_SET_CURRENT(t0);
	/* the device scan's rows, or the child's */
	if (st->scan_refusal != NULL || !gha_group_scan(st))
	{
		for (;;)
		{
			TupleTableSlot *slot = ExecProcNode(st->child);

			if (TupIsNull(slot))
				break;
			if (st->packed)
				gh_agg_run_add_packet_slot(st->run, slot, "GpuHashAgg");
			else
				gh_agg_run_add(st->run, slot);
		}
	}
	/* the input's workers and wall time, for the DEBUG2 account */
	gh_agg_run_note_input(st->run, st->child, gh_ms_since(t0));
	if (nest >= 0)
		AtEOXact_GUC(true, nest);
	gh_agg_run_complete(st->run);
	st->grouped = true;
}

/* gha_next returns the next group as the scan tuple (ExecScan's access). */
static TupleTableSlot *
gha_next(ScanState *ss)
{
	GhaState   *st = (GhaState *) ss;
	TupleTableSlot *slot = ss->ss_ScanTupleSlot;

	if (!st->grouped)
		gha_group(st);
	ExecClearTuple(slot);
	if (!gh_agg_run_next(st->run, slot->tts_values, slot->tts_isnull))
	{
		st->drained = true;
		return slot;
	}
	if (st->filter_col >= 0 && !slot->tts_isnull[st->filter_col])
		st->passed += (uint64) DatumGetInt64(slot->tts_values[st->filter_col]);
	return ExecStoreVirtualTuple(slot);
}

/*
 * gha_recheck is ExecScan's recheck: EvalPlanQual never reaches the groups
 * of a GROUP BY, whose scan has no relation.
 */
static bool
gha_recheck(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

/* gha_exec returns the next group that passes HAVING, projected. */
static TupleTableSlot *
gha_exec(CustomScanState *node)
{
	return ExecScan(&node->ss, gha_next, gha_recheck);
}

/* gha_forget ends the run. */
static void
gha_forget(GhaState *st)
{
	if (st->run != NULL)
		gh_agg_run_end(st->run);
	st->run = NULL;
	st->grouped = false;
}

/* gha_end ends the run and the child. */
static void
gha_end(CustomScanState *node)
{
	GhaState   *st = (GhaState *) node;

	gha_forget(st);
	ExecEndNode(st->child);
}

/*
 * gha_rescan returns the same groups again where it can; the input is read
 * again if its parameters changed or the run spilled (its groups are gone).
 */
static void
gha_rescan(CustomScanState *node)
{
	GhaState   *st = (GhaState *) node;

	/* ExecReScan passes changed parameters on to lefttree, not to custom_ps */
	if (node->ss.ps.chgParam != NULL)
		UpdateChangedParamSet(st->child, node->ss.ps.chgParam);
	st->passed = 0;
	st->drained = false;
	if (st->grouped && st->child->chgParam == NULL && gh_agg_run_rewind(st->run))
		return;
	gha_forget(st);
	if (st->child->chgParam == NULL)
		ExecReScan(st->child);
}

/*
 * gha_explain shows the group keys as HashAggregate does, where it groups,
 * and with ANALYZE the run's memory.
 */
static void
gha_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	GhaState   *st = (GhaState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	int			nkeys = list_length(list_nth(cscan->custom_private, GHA_PRIV_EQOPS));
	int			filter_call = intVal(list_nth(cscan->custom_private, GHA_PRIV_FILTER));
	Aggref	   *filter = filter_call < 0 ? NULL :
		(Aggref *) list_nth_node(TargetEntry, cscan->custom_scan_tlist, nkeys + filter_call)->expr;
	List	   *context;
	List	   *keys = NIL;

	context = set_deparse_context_plan(es->deparse_cxt, &cscan->scan.plan, ancestors);
	for (int i = 0; i < nkeys; i++)
		keys = lappend(keys,
					   deparse_expression((Node *) list_nth_node(TargetEntry,
																 cscan->custom_scan_tlist,
																 i)->expr,
										  context, es->verbose, false));
	if (keys != NIL)
		ExplainPropertyList("Group Key", keys, es);
	/* the scan's quals, which the device evaluates here */
	if (filter_call >= 0)
		ExplainPropertyText("Device Filter",
							deparse_expression((Node *) filter->aggfilter, context,
											   es->verbose, false),
							es);
	if (es->verbose)
	{
		/* the aggregate arguments and keys the device computes, one per program */
		List	   *call_cols = list_nth(cscan->custom_private, GHA_PRIV_CALL_COLS);
		List	   *key_cols = list_nth(cscan->custom_private, GHA_PRIV_KEY_COLS);
		List	   *key_years = list_nth(cscan->custom_private, GHA_PRIV_KEY_YEARS);
		int			ncols_in = list_length(list_nth(cscan->custom_private, GHA_PRIV_COL_TYPES));
		int			nexprs = list_length(list_nth(cscan->custom_private, GHA_PRIV_EXPRS));
		List	   *shown = NIL;

		for (int x = 0; x < nexprs; x++)
		{
			Node	   *e = NULL;

			for (int i = 0; e == NULL && i < list_length(call_cols); i++)
				if (list_nth_int(call_cols, i) == ncols_in + x)
				{
					Aggref	   *a = (Aggref *) list_nth_node(TargetEntry, cscan->custom_scan_tlist,
															 nkeys + i)->expr;

					e = (Node *) (filter == NULL || i == filter_call ? gh_agg_call_input(a) :
								  gha_call_input(a, list_make1(filter->aggfilter)));
				}
			for (int i = 0; e == NULL && i < nkeys; i++)
				if (list_nth_int(key_cols, i) == ncols_in + x)
					e = (Node *) list_nth_node(TargetEntry, cscan->custom_scan_tlist, i)->expr;
			if (e != NULL)
				shown = lappend(shown, deparse_expression(e, context, true, false));
		}
		/* and the keys that are an input's year */
		for (int i = 0; i < nkeys; i++)
			if (list_nth_int(key_years, i) >= 0)
				shown = lappend(shown,
								deparse_expression((Node *) list_nth_node(TargetEntry, cscan->custom_scan_tlist, i)->expr,
												   context, true, false));
		if (shown != NIL)
			ExplainPropertyList("Device Expressions", shown, es);
	}
	ExplainPropertyText("Device", st->target == GH_TARGET_GPU ? "gpu" : "cpu", es);
	if (st->scan_refusal == NULL)
		ExplainPropertyText("Device Scan", gh_scan_source_table(st->child), es);
	else if (es->verbose)
		ExplainPropertyText("Device Scan", psprintf("off (%s)", st->scan_refusal), es);
	if (es->analyze && st->scanned)
		gh_explain_scan_counts(&st->scan_counts, false, es);
	else if (es->analyze && st->run != NULL && st->packed)
	{
		GhAggMemory mem;

		/* the workers' device scans, as their packets told */
		gh_agg_run_memory(st->run, &mem);
		if (mem.scan_pages > 0)
		{
			GhHeapScanCounts c = {0};

			c.pages = mem.scan_pages;
			c.pages_checked = mem.scan_checked;
			c.tuples_hidden = mem.scan_hidden;
			c.rows_host = mem.scan_rows_host;
			c.rows_device = mem.rows_in - Min(mem.rows_in, mem.scan_rows_host);
			c.stage_ms = mem.scan_ms;
			gh_explain_scan_counts(&c, true, es);
		}
	}
	if (es->analyze && st->run != NULL)
	{
		/* as a scan's Rows Removed by Filter, once every group was returned */
		if (filter != NULL && st->drained)
		{
			GhAggMemory mem;

			gh_agg_run_memory(st->run, &mem);
			ExplainPropertyUInteger("Rows Removed by Device Filter", NULL,
									mem.rows_in - Min(st->passed, mem.rows_in), es);
		}
		gh_agg_explain_memory(st->run, es);
	}
}
