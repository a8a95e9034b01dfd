/*-------------------------------------------------------------------------
 * aggregate_scan.c
 *	  GpuHashAggregate: gpuhash_aggregate() in a FROM clause, returning its
 *	  groups straight to the plan node above.
 *
 * A set-returning function in FROM is run by a Function Scan, which asks
 * the function for all of its rows into a tuplestore and then reads them
 * back.  For gpuhash_aggregate that is a second copy of a result that
 * already sits in the group sets' arrays: at 5*10^7 groups, forming,
 * writing (past work_mem, to temporary files) and reading back every row
 * took longer than the aggregation itself.
 *
 * So set_rel_pathlist_hook replaces the Function Scan's path of
 *
 *	  FROM gpuhash_aggregate(expr) AS t(column definitions)
 *
 * (one function, no WITH ORDINALITY, an argument that refers to no other
 * relation of the query) by a custom path with the same costs and rows, so
 * the plan around it is what it would have been.  Its CustomScan has no
 * scan relation: custom_scan_tlist holds one Var per column of the
 * function's result, which is the scan tuple (plus the whole-row Var when
 * the query uses the row as a whole, which the scan forms), and
 * custom_exprs the function call itself (its argument is evaluated at run
 * time, and the plan depends on the function as a Function Scan's would).
 *
 * At run time the node checks EXECUTE permission at start-up, as a
 * Function Scan does; the first row asked for runs the aggregation
 * (gh_agg_start and gh_agg_run_complete, exactly what the function runs),
 * and every row after it is made from the group sets on demand
 * (gh_agg_run_next) into the virtual scan slot.  A NULL argument returns
 * no rows, as for the strict function.  A rescan whose changed parameters
 * reach the argument runs the aggregation again; any other rescan starts
 * the rows from the first again.  Backward scans are not supported (the
 * planner puts a Material node on top where a cursor needs one).
 *
 * Where the hook does not apply (LATERAL arguments, WITH ORDINALITY, ROWS
 * FROM several functions, or a backend that loaded gpuhash only after
 * planning the query) the function itself runs, with the same rows.
 *
 * This file is the top of the aggregate's files: it calls aggregate.c (the
 * function, gh_agg_start) and the run, none of them calls it.  The module's
 * set-up, gpuhash_init_aggregate, is here, beside the hook it installs.
 *
 * EXPLAIN ANALYZE shows the run's memory as HashAggregate shows its own:
 * Batches (passes: 1, or 1 + the partitions a spilled run aggregated),
 * Memory Usage (the peak of what the budget counts: groups, batch arrays and
 * a batch's copies), Disk Usage (the temporary files' largest size), with
 * the budget, the rows spilled, and Memory Usage's two parts: Group Memory
 * and Staging Memory, with the rows a batch holds.  A rescan of a run that spilled runs the query again:
 * the groups of its passes are gone by then.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/objectaccess.h"
#include "access/htup_details.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "pgstat.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "aggregate.h"

#define GH_AGG_SCAN_NAME "GpuHashAggregate"

typedef struct AggScanState
{
	CustomScanState css;
	FuncExpr   *fexpr;
	ExprState  *arg;			/* the query text */
	Bitmapset  *arg_params;		/* PARAM_EXEC ids the argument uses */
	FmgrInfo	flinfo;			/* gpuhash_aggregate, for its statistics */
	TupleDesc	coldesc;		/* the column definition list */
	bool		wholerow;		/* the scan tuple ends with the whole row */
	bool		started;		/* the aggregation ran (or the argument was NULL) */
	GhAggRun   *run;			/* NULL before, and for a NULL argument */
} AggScanState;

static void agg_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti,
							 RangeTblEntry *rte);
static Plan *agg_plan_path(PlannerInfo *root, RelOptInfo *rel,
						   CustomPath *best_path, List *tlist, List *clauses,
						   List *custom_plans);
static Node *agg_create_state(CustomScan *cscan);
static void agg_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *agg_exec(CustomScanState *node);
static void agg_end(CustomScanState *node);
static void agg_rescan(CustomScanState *node);
static void agg_explain(CustomScanState *node, List *ancestors, ExplainState *es);
static bool is_gpuhash_aggregate(Oid funcid);
static void agg_start(AggScanState *st);
static TupleTableSlot *agg_next(ScanState *ss);
static bool agg_recheck(ScanState *ss, TupleTableSlot *slot);

static set_rel_pathlist_hook_type prev_rel_pathlist_hook = NULL;

static CustomPathMethods agg_path_methods = {
	.CustomName = GH_AGG_SCAN_NAME,
	.PlanCustomPath = agg_plan_path,
};

static CustomScanMethods agg_scan_methods = {
	.CustomName = GH_AGG_SCAN_NAME,
	.CreateCustomScanState = agg_create_state,
};

static CustomExecMethods agg_exec_methods = {
	.CustomName = GH_AGG_SCAN_NAME,
	.BeginCustomScan = agg_begin,
	.ExecCustomScan = agg_exec,
	.EndCustomScan = agg_end,
	.ReScanCustomScan = agg_rescan,
	.ExplainCustomScan = agg_explain,
};

/*
 * gpuhash_init_aggregate sets up gpuhash_aggregate() in _PG_init: installs
 * the planner hook that puts a GpuHashAggregate in place of the function,
 * registers the scan, and registers the pack node (aggregate_pack.c) that
 * parallel workers must be able to read.
 */
void
gpuhash_init_aggregate(void)
{
	RegisterCustomScanMethods(&agg_scan_methods);
	prev_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = agg_rel_pathlist;
	gh_agg_pack_init();
}

/*
 * is_gpuhash_aggregate: whether funcid is this library's gpuhash_aggregate,
 * in whatever schema the extension lives.
 */
static bool
is_gpuhash_aggregate(Oid funcid)
{
	char	   *name = get_func_name(funcid);
	FmgrInfo	fi;

	if (name == NULL || strcmp(name, "gpuhash_aggregate") != 0)
		return false;
	fmgr_info(funcid, &fi);
	return fi.fn_addr == gpuhash_aggregate;
}

/*
 * agg_rel_pathlist replaces the Function Scan path of a plain
 * gpuhash_aggregate(...) AS t(...) in FROM by a GpuHashAggregate path of the
 * same costs.
 */
static void
agg_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti,
				 RangeTblEntry *rte)
{
	RangeTblFunction *rtfunc;
	Path	   *fpath = NULL;
	CustomPath *cpath;
	ListCell   *lc;

	if (prev_rel_pathlist_hook)
		prev_rel_pathlist_hook(root, rel, rti, rte);

	if (rte->rtekind != RTE_FUNCTION || rte->funcordinality ||
		list_length(rte->functions) != 1 || rel->lateral_relids != NULL ||
		IS_DUMMY_REL(rel))
		return;
	rtfunc = linitial_node(RangeTblFunction, rte->functions);
	if (!IsA(rtfunc->funcexpr, FuncExpr) || rtfunc->funccolcount < 1 ||
		list_length(rtfunc->funccoltypes) != rtfunc->funccolcount ||
		!is_gpuhash_aggregate(((FuncExpr *) rtfunc->funcexpr)->funcid))
		return;
	foreach(lc, rel->pathlist)
	{
		Path	   *p = (Path *) lfirst(lc);

		if (p->pathtype == T_FunctionScan && p->param_info == NULL)
		{
			fpath = p;
			break;
		}
	}
	if (fpath == NULL)
		return;

	cpath = makeNode(CustomPath);
	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = rel;
	cpath->path.pathtarget = rel->reltarget;
	cpath->path.param_info = NULL;
	cpath->path.parallel_aware = false;
	cpath->path.parallel_safe = false;
	cpath->path.parallel_workers = 0;
	cpath->path.rows = fpath->rows;
	cpath->path.startup_cost = fpath->startup_cost;
	cpath->path.total_cost = fpath->total_cost;
	cpath->path.pathkeys = NIL;
	cpath->flags = 0;
	cpath->methods = &agg_path_methods;

	/* the Function Scan goes; add_path would keep either of two equals */
	foreach(lc, rel->pathlist)
	{
		if (((Path *) lfirst(lc))->pathtype == T_FunctionScan)
			rel->pathlist = foreach_delete_current(rel->pathlist, lc);
	}
	add_path(rel, &cpath->path);
}

/*
 * agg_plan_path makes the CustomScan: no scan relation, the function's
 * result columns as the scan tuple, the call in custom_exprs.
 */
static Plan *
agg_plan_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
			  List *tlist, List *clauses, List *custom_plans)
{
	RangeTblEntry *rte = planner_rt_fetch(rel->relid, root);
	RangeTblFunction *rtfunc = linitial_node(RangeTblFunction, rte->functions);
	CustomScan *cscan = makeNode(CustomScan);
	List	   *scan_tlist = NIL;
	List	   *quals;
	bool		wholerow = false;
	ListCell   *ltype,
			   *ltypmod,
			   *lcoll,
			   *lname,
			   *lc;
	int			attno = 1;

	forfour(ltype, rtfunc->funccoltypes, ltypmod, rtfunc->funccoltypmods,
			lcoll, rtfunc->funccolcollations, lname, rtfunc->funccolnames)
	{
		Var		   *var = makeVar(rel->relid, attno, lfirst_oid(ltype),
								  lfirst_int(ltypmod), lfirst_oid(lcoll), 0);

		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry((Expr *) var, attno,
											 pstrdup(strVal(lfirst(lname))), false));
		attno++;
	}

	/*
	 * A whole-row reference to the result (t in "SELECT t::text FROM
	 * gpuhash_aggregate(...) t") cannot be rebuilt from the columns by the
	 * nodes above: the scan makes it, as one more column of its tuple.
	 */
	quals = extract_actual_clauses(clauses, false);
	foreach(lc, pull_var_clause((Node *) list_concat_copy(tlist, quals),
								PVC_RECURSE_PLACEHOLDERS))
	{
		Var		   *var = lfirst_node(Var, lc);

		if (var->varno == rel->relid && var->varattno == 0)
		{
			scan_tlist = lappend(scan_tlist,
								 makeTargetEntry((Expr *) copyObject(var), attno,
												 pstrdup("wholerow"), false));
			wholerow = true;
			break;
		}
	}

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = quals;
	cscan->scan.scanrelid = 0;
	cscan->flags = best_path->flags;
	cscan->custom_plans = NIL;
	cscan->custom_exprs = list_make1(copyObject(rtfunc->funcexpr));
	cscan->custom_private = list_make1_int(wholerow ? 1 : 0);
	cscan->custom_scan_tlist = scan_tlist;
	cscan->methods = &agg_scan_methods;
	return &cscan->scan.plan;
}

static Node *
agg_create_state(CustomScan *cscan)
{
	AggScanState *st = (AggScanState *) newNode(sizeof(AggScanState),
												T_CustomScanState);

	st->css.methods = &agg_exec_methods;
	return (Node *) st;
}

/*
 * agg_begin checks EXECUTE permission on the function, as a Function Scan
 * does at start-up, and prepares the argument; nothing runs yet.
 */
static void
agg_begin(CustomScanState *node, EState *estate, int eflags)
{
	AggScanState *st = (AggScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	AclResult	aclresult;
	TupleDesc	scandesc;
	int			ncols;

	st->fexpr = linitial_node(FuncExpr, cscan->custom_exprs);
	aclresult = pg_proc_aclcheck(st->fexpr->funcid, GetUserId(), ACL_EXECUTE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_FUNCTION, get_func_name(st->fexpr->funcid));
	InvokeFunctionExecuteHook(st->fexpr->funcid);
	fmgr_info(st->fexpr->funcid, &st->flinfo);
	if (list_length(st->fexpr->args) != 1)
		elog(ERROR, "gpuhash_aggregate takes one argument");
	st->arg = ExecInitExpr(linitial(st->fexpr->args), &node->ss.ps);
	st->arg_params = pull_paramids((Expr *) st->fexpr->args);

	/* the columns of the definition list: the scan tuple, less any whole row */
	st->wholerow = linitial_int(cscan->custom_private) != 0;
	scandesc = node->ss.ss_ScanTupleSlot->tts_tupleDescriptor;
	ncols = scandesc->natts - (st->wholerow ? 1 : 0);
	st->coldesc = CreateTemplateTupleDesc(ncols);
	for (int i = 0; i < ncols; i++)
		TupleDescCopyEntry(st->coldesc, i + 1, scandesc, i + 1);
	if (st->wholerow)
		BlessTupleDesc(st->coldesc);
}

/*
 * agg_start evaluates the argument and runs the aggregation, counted in
 * the function's statistics as a call of it.
 */
static void
agg_start(AggScanState *st)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	LOCAL_FCINFO(fcinfo, 1);
	PgStat_FunctionCallUsage fcusage;
	Datum		arg;
	bool		isnull;
	char	   *sql;

	st->started = true;
	ResetExprContext(econtext);
	arg = ExecEvalExprSwitchContext(st->arg, econtext, &isnull);
	if (isnull)
		return;
	sql = text_to_cstring(DatumGetTextPP(arg));

	InitFunctionCallInfoData(*fcinfo, &st->flinfo, 1, InvalidOid, NULL, NULL);
	pgstat_init_function_usage(fcinfo, &fcusage);
	st->run = gh_agg_start(sql, st->coldesc);
	gh_agg_run_complete(st->run);
	pgstat_end_function_usage(&fcusage, true);
}

static TupleTableSlot *
agg_next(ScanState *ss)
{
	AggScanState *st = (AggScanState *) ss;
	TupleTableSlot *slot = ss->ss_ScanTupleSlot;

	if (!st->started)
		agg_start(st);
	ExecClearTuple(slot);
	if (st->run == NULL ||
		!gh_agg_run_next(st->run, slot->tts_values, slot->tts_isnull))
		return slot;
	if (st->wholerow)
	{
		int			n = st->coldesc->natts;
		MemoryContext old;
		HeapTuple	tuple;

		/* in per-tuple memory, which the next ExecScan call resets */
		old = MemoryContextSwitchTo(ss->ps.ps_ExprContext->ecxt_per_tuple_memory);
		tuple = heap_form_tuple(st->coldesc, slot->tts_values, slot->tts_isnull);
		slot->tts_values[n] = HeapTupleGetDatum(tuple);
		slot->tts_isnull[n] = false;
		MemoryContextSwitchTo(old);
	}
	ExecStoreVirtualTuple(slot);
	return slot;
}

static bool
agg_recheck(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

static TupleTableSlot *
agg_exec(CustomScanState *node)
{
	return ExecScan(&node->ss, agg_next, agg_recheck);
}

static void
agg_end(CustomScanState *node)
{
	AggScanState *st = (AggScanState *) node;

	if (st->run != NULL)
	{
		gh_agg_run_report(st->run);
		gh_agg_run_end(st->run);
		st->run = NULL;
	}
}

static void
agg_rescan(CustomScanState *node)
{
	AggScanState *st = (AggScanState *) node;

	if (node->ss.ps.chgParam != NULL &&
		bms_overlap(node->ss.ps.chgParam, st->arg_params))
	{
		agg_end(node);
		st->started = false;
	}
	else if (st->run != NULL && !gh_agg_run_rewind(st->run))
	{
		/* a spilled run kept no groups to start again from: run it again */
		agg_end(node);
		st->started = false;
	}
	ExecScanReScan(&node->ss);
}

/*
 * agg_explain shows, under EXPLAIN ANALYZE, the run's memory budget and
 * what it took, in the manner of HashAggregate's Batches, Memory Usage and
 * Disk Usage.
 */
static void
agg_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	AggScanState *st = (AggScanState *) node;

	if (es->analyze && st->run != NULL)
		gh_agg_explain_memory(st->run, es);
}

/*
 * gh_agg_explain_memory shows a run's memory as HashAggregate shows its own
 * (EXPLAIN ANALYZE of GpuHashAggregate and of GpuHashAgg): Memory Usage is
 * everything the budget counts, at its peak (the groups, the batch arrays
 * and a batch's copies), against Memory Budget; Group Memory and Staging
 * Memory are its two parts, each at its own peak; where packets carried
 * numbered keys, how many values the participants' shared dictionary
 * numbered, how often they were introduced, and how many packet entries the
 * leader looked up one by one (aggregate_dict.c).  TEXT groups the figures
 * on three lines (four with numbered keys), as HashAggregate's
 * "Batches: 1  Memory Usage: 24kB";
 * the device's time appears only under TIMING.
 */
void
gh_agg_explain_memory(GhAggRun *run, ExplainState *es)
{
	GhAggMemory mem;
	uint64		usage_kb;
	uint64		group_kb;
	uint64		staging_kb;
	uint64		device_kb;

	gh_agg_run_memory(run, &mem);
	usage_kb = (mem.total_peak + 1023) / 1024;
	group_kb = (mem.peak + 1023) / 1024;
	staging_kb = (mem.staging + 1023) / 1024;
	device_kb = (mem.device_peak + 1023) / 1024;
	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		appendStringInfoSpaces(es->str, es->indent * 2);
		appendStringInfo(es->str, "Rows In: " UINT64_FORMAT "  Groups: " UINT64_FORMAT,
						 (uint64) mem.rows_in, (uint64) mem.groups);
		if (es->timing)
			appendStringInfo(es->str, "  Device Time: %.3f ms", mem.ms_device);
		appendStringInfoChar(es->str, '\n');

		appendStringInfoSpaces(es->str, es->indent * 2);
		appendStringInfo(es->str, "Batches: " UINT64_FORMAT "  Memory Usage: " UINT64_FORMAT
						 "kB  Disk Usage: " INT64_FORMAT "kB  Spilled Rows: " UINT64_FORMAT "\n",
						 (uint64) mem.passes, usage_kb, (int64) mem.disk_kb,
						 (uint64) mem.spilled_rows);

		appendStringInfoSpaces(es->str, es->indent * 2);
		appendStringInfo(es->str, "Memory Budget: " UINT64_FORMAT "kB  Group Memory: " UINT64_FORMAT
						 "kB  Staging Memory: " UINT64_FORMAT "kB  Staging Rows: " UINT64_FORMAT,
						 (uint64) mem.budget / 1024, group_kb, staging_kb,
						 (uint64) mem.batch_rows);
		if (mem.device_budget > 0)
			appendStringInfo(es->str, "  Device Memory Usage: " UINT64_FORMAT
							 "kB  Device Memory Budget: " UINT64_FORMAT "kB",
							 device_kb, (uint64) mem.device_budget / 1024);
		appendStringInfoChar(es->str, '\n');
		if (mem.dict_global + mem.dict_packet > 0)
		{
			appendStringInfoSpaces(es->str, es->indent * 2);
			appendStringInfo(es->str, "Key Values: shared=" UINT64_FORMAT
							 " introduced=" UINT64_FORMAT " packet entries=" UINT64_FORMAT "\n",
							 mem.dict_global, mem.dict_intro, mem.dict_packet);
		}
		return;
	}
	ExplainPropertyUInteger("Rows In", NULL, mem.rows_in, es);
	ExplainPropertyUInteger("Groups", NULL, mem.groups, es);
	if (es->timing)
		ExplainPropertyFloat("Device Time", "ms", mem.ms_device, 3, es);
	ExplainPropertyUInteger("Batches", NULL, mem.passes, es);
	ExplainPropertyUInteger("Memory Usage", "kB", usage_kb, es);
	ExplainPropertyInteger("Disk Usage", "kB", mem.disk_kb, es);
	ExplainPropertyUInteger("Spilled Rows", NULL, mem.spilled_rows, es);
	ExplainPropertyUInteger("Memory Budget", "kB", mem.budget / 1024, es);
	ExplainPropertyUInteger("Group Memory", "kB", group_kb, es);
	ExplainPropertyUInteger("Staging Memory", "kB", staging_kb, es);
	ExplainPropertyUInteger("Staging Rows", NULL, mem.batch_rows, es);
	if (mem.device_budget > 0)
	{
		ExplainPropertyUInteger("Device Memory Usage", "kB", device_kb, es);
		ExplainPropertyUInteger("Device Memory Budget", "kB", mem.device_budget / 1024, es);
	}
	if (mem.dict_global + mem.dict_packet > 0)
	{
		ExplainPropertyUInteger("Shared Key Values", NULL, mem.dict_global, es);
		ExplainPropertyUInteger("Introduced Key Values", NULL, mem.dict_intro, es);
		ExplainPropertyUInteger("Packet Key Entries", NULL, mem.dict_packet, es);
	}
}
