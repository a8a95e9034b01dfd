/*-------------------------------------------------------------------------
 * agg_path.c
 *	  GpuHashAgg: GROUP BY and plain aggregates of unchanged SQL, grouped by
 *	  the device engine of gpuhash_aggregate (one engine, two front doors).
 *
 * create_upper_paths_hook offers, for the grouping stage of a query
 * (UPPERREL_GROUP_AGG) with no grouping sets, a custom path beside
 * PostgreSQL's own Agg paths when
 *	  - every GROUP BY clause is hashable with an extended (64-bit) hash
 *		function in its operator's family, as the engine hashes keys;
 *	  - every aggregate call of the target list and HAVING is one the engine
 *		runs as PostgreSQL does (gh_agg_call_supported: count, sum, avg, min,
 *		max over int2/4/8, float4/8 and numeric; min and max over date,
 *		timestamp, timestamptz, and text in a deterministic collation (its
 *		extremes kept on the host, aggregate_numeric.c); no DISTINCT or ORDER BY; a
 *		FILTER becomes the argument's CASE, gh_agg_call_input), over at most
 *		GH_AGG_MAX_COLS distinct arguments;
 *	  - the target list and HAVING refer to the input only through the GROUP
 *		BY expressions, those aggregate calls and columns that depend on a
 *		grouped primary key, which become keys too (add_dependent_keys).
 * Anything else keeps PostgreSQL's plan.
 *
 * The path's child is the input's cheapest path projected to the GROUP BY
 * expressions and then the distinct aggregate arguments: the engine's input
 * row (gh_agg_run_add).  Its CustomScan has no scan relation; its scan tuple
 * (custom_scan_tlist) is the keys and then the Aggrefs, the engine's output
 * row, so setrefs turns every reference of the target list and of HAVING
 * (the scan's qual) into an INDEX_VAR of that tuple and ExecScan evaluates
 * them per group.  custom_private: the GROUP BY equality operators (an OID
 * list) and each aggregate's input column (an integer list, -1 for
 * count(*)).
 *
 * The node reads its whole input on the first row asked for, then returns
 * the groups as the engine makes them (gh_agg_run_next): results, types,
 * NULL groups and numeric display scales as gpuhash_aggregate's, which are
 * PostgreSQL's (float sums to the tolerance README states).  A rescan
 * rewinds the groups unless the input's parameters changed or the run
 * spilled to disk, when the input is read again.
 *
 * Parallel input: the node itself runs in one process (it reads its input
 * whole), but two paths are offered, one over the input's cheapest path and
 * one over its cheapest partial path, projected in the workers under a
 * Gather.  Once the plan is finished, the planner hook (gha_planner) puts
 * gpuhash_aggregate's GpuHashAggPack between such a Gather and its child
 * when the engine takes packets (every GROUP BY key of a type whose values
 * can be copied, at most GH_AGG_MAX_KEYS of them; aggregate_dict.c numbers
 * the ones the device cannot compare as they are): the workers then send
 * device-ready packets, not rows
 * (custom_private's GHA_PRIV_PACKED).  gpuhash.force_agg plans GpuHashAgg
 * wherever it is legal, on the CPU twin too (the tests), and prefers the
 * parallel input; gpuhash.enable_agg (on by default) lets the cost model
 * offer it on a GPU, never on the CPU twin.
 *
 * Device filters: where the input is a table's sequential scan whose quals
 * the device can evaluate (device_quals) together with every aggregate
 * argument, the paths are offered a second time over the scan passing
 * every row (unfiltered_scan): each call reads its argument where the quals
 * and its own FILTER hold (call_input), and a hidden count of the rows that
 * pass (filter_count, GHA_PRIV_FILTER) drops, first in the node's qual, the
 * groups of none.  gpuhash.agg_device_filter (on) offers them.
 *
 * Device expressions: the language, its compiler and its host fallback are
 * devexpr.c's.  This file decides what the aggregate asks of it: which
 * arguments and GROUP BY keys become programs over the child's columns
 * (compile_args, compile_key), which scan quals the device evaluates
 * (device_quals), and what the child returns in a computed key's place
 * (key_placeholder).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "commands/explain.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planmain.h"
#include "optimizer/planner.h"
#include "optimizer/tlist.h"
#include "access/stratnum.h"
#include "catalog/pg_aggregate_d.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_opfamily_d.h"
#include "commands/defrem.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/timestamp.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/numeric.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/selfuncs.h"
#include "utils/typcache.h"

#include "aggregate.h"
#include "devexpr.h"
#include "gpuhash_join.h"
#include "keys.h"

#define GHA_NAME "GpuHashAgg"

/*
 * What a value of a text min or max costs the leader, in operators: on the
 * development VM, serial, 2*10^6 md5 texts in 100 groups, min and max of
 * one column took 75-100 ns a row more than its count, a staged integer
 * column 5-15 ns (priced a quarter of an operator below).
 */
#define GHA_TEXT_EXTREME_OPS 2.0

/* custom_private of the CustomScan */
enum
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
} GhaState;

/* What the hook found in the query (check_query). */
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
								 * (device_quals), or NIL */
	int			filter_call;	/* with quals, the index in aggs of the
								 * hidden count of the rows that pass them
								 * (filter_count), else -1 */
	double		filtered_rows;	/* with quals, the rows that pass them */
} GhaQuery;

static void gha_upper_paths(PlannerInfo *root, UpperRelationKind stage,
							RelOptInfo *input_rel, RelOptInfo *output_rel,
							void *extra);
static bool reads_unreturned(PathTarget *target, Path *path);
static void offer_paths(PlannerInfo *root, RelOptInfo *input_rel,
						RelOptInfo *output_rel, GhaQuery *q, List *having,
						double ngroups, double in_rows, Path *input,
						Path *partial);
static void add_gha_path(RelOptInfo *output_rel, Path *child, GhaQuery *q,
						 List *having, double ngroups);
static void compile_args(GhaQuery *q, List *arg_calls, bool device);
static int	compile_key(GhaQuery *q, Expr *key, int *year);
static Expr *key_placeholder(GhaQuery *q, int i);
static Plan *gha_plan_path(PlannerInfo *root, RelOptInfo *rel,
						   CustomPath *best_path, List *tlist, List *clauses,
						   List *custom_plans);
static Node *gha_create_state(CustomScan *cscan);
static void gha_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *gha_exec(CustomScanState *node);
static void gha_end(CustomScanState *node);
static void gha_rescan(CustomScanState *node);
static void gha_explain(CustomScanState *node, List *ancestors, ExplainState *es);

static PlannedStmt *gha_planner(Query *parse, const char *query_string,
								int cursorOptions, ParamListInfo boundParams);

static create_upper_paths_hook_type prev_upper_paths_hook = NULL;
static planner_hook_type prev_planner_hook = NULL;

static CustomPathMethods gha_path_methods = {
	.CustomName = GHA_NAME,
	.PlanCustomPath = gha_plan_path,
};

static CustomScanMethods gha_scan_methods = {
	.CustomName = GHA_NAME,
	.CreateCustomScanState = gha_create_state,
};

static CustomExecMethods gha_exec_methods = {
	.CustomName = GHA_NAME,
	.BeginCustomScan = gha_begin,
	.ExecCustomScan = gha_exec,
	.EndCustomScan = gha_end,
	.ReScanCustomScan = gha_rescan,
	.ExplainCustomScan = gha_explain,
};

/* gpuhash_init_agg_path installs the hook and registers the scan (_PG_init). */
void
gpuhash_init_agg_path(void)
{
	RegisterCustomScanMethods(&gha_scan_methods);
	prev_upper_paths_hook = create_upper_paths_hook;
	create_upper_paths_hook = gha_upper_paths;
	prev_planner_hook = planner_hook;
	planner_hook = gha_planner;
}

/* collect_aggs adds every Aggref of node to *aggs once (equal() ones once). */
static bool
collect_aggs(Node *node, List **aggs)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref))
	{
		*aggs = list_append_unique(*aggs, node);
		return false;			/* an aggregate's arguments hold no aggregate */
	}
	return expression_tree_walker(node, collect_aggs, aggs);
}

/*
 * outside_groups: whether node refers to the input other than through the
 * GROUP BY expressions keys and aggregate calls, matched as setrefs will
 * match it against the scan tuple (a whole expression equal to a key or an
 * Aggref, else its parts): through a Var that is no key, or a grouping
 * function.
 */
static bool
outside_groups(Node *node, List *keys)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref) || list_member(keys, node))
		return false;
	if (IsA(node, Var) || IsA(node, GroupingFunc))
		return true;
	return expression_tree_walker(node, outside_groups, keys);
}

/* The context of dependent_vars_failed. */
typedef struct DependentVars
{
	List	   *keys;
	List	  **vars;
} DependentVars;

static bool dependent_vars_failed(Node *node, DependentVars *context);

/*
 * dependent_vars adds to *vars (once each) the Vars of this query level
 * that node refers to outside the GROUP BY expressions keys and aggregate
 * calls, as outside_groups finds them; false where node has a grouping
 * function or a Var of an outer level there.
 */
static bool
dependent_vars(Node *node, List *keys, List **vars)
{
	DependentVars context = {keys, vars};

	return !dependent_vars_failed(node, &context);
}

/* dependent_vars_failed is dependent_vars as a walker: true on failure. */
static bool
dependent_vars_failed(Node *node, DependentVars *context)
{
	if (node == NULL || IsA(node, Aggref) || list_member(context->keys, node))
		return false;
	/* a placeholder outside the keys keeps its NULLs of an outer join: no */
	if (IsA(node, GroupingFunc) || IsA(node, PlaceHolderVar) ||
		(IsA(node, Var) && ((Var *) node)->varlevelsup > 0))
		return true;
	if (IsA(node, Var))
	{
		*context->vars = list_append_unique(*context->vars, node);
		return false;
	}
	/* the walker stops at the first "true", a failure */
	return expression_tree_walker(node, dependent_vars_failed, (void *) context);
}

/*
 * add_dependent_keys makes each column that the target list or HAVING
 * reads outside the GROUP BY expressions a key too.  The parser accepts
 * such a column only where it depends on a grouped primary key (and the
 * planner drops a grouped column that does, remove_useless_groupby_columns):
 * every row of a group has the same value there, so grouping by it as well
 * makes the same groups, and the node's scan tuple then holds it.  False
 * where such a column's type has no hashable equality with an extended
 * hash function, or a reference is not to a column of this query level.
 */
static bool
add_dependent_keys(PathTarget *target, List *having, GhaQuery *q)
{
	List	   *vars = NIL;
	ListCell   *lc;

	if (!dependent_vars((Node *) target->exprs, q->keys, &vars) ||
		!dependent_vars((Node *) having, q->keys, &vars))
		return false;
	foreach(lc, vars)
	{
		Var		   *v = lfirst_node(Var, lc);
		TypeCacheEntry *tc = lookup_type_cache(v->vartype, TYPECACHE_EQ_OPR | TYPECACHE_HASH_PROC);
		Oid			hash_proc;
		Oid			rhs_proc;

		if (!OidIsValid(tc->eq_opr) || !OidIsValid(tc->hash_proc) ||
			!gpuhash_extended_hash_functions(tc->eq_opr, &hash_proc, &rhs_proc))
			return false;
		q->keys = lappend(q->keys, v);
		q->eqops = lappend_oid(q->eqops, tc->eq_opr);
	}
	return true;
}

static Expr *count_arg(List *quals);

/*
 * call_input is what aggregate call agg reads per row (gh_agg_call_input)
 * when the device evaluates the scan's quals (device_quals; NIL: none):
 * its argument where they and its own FILTER hold, the quals first, as
 * PostgreSQL evaluates them first.
 */
static Expr *
call_input(Aggref *agg, List *quals)
{
	Aggref	   *a;

	if (quals == NIL)
		return gh_agg_call_input(agg);
	a = makeNode(Aggref);
	memcpy(a, agg, sizeof(Aggref));
	a->aggfilter = make_ands_explicit(agg->aggfilter == NULL ? quals :
									  lappend(list_copy(quals), agg->aggfilter));
	if (a->args == NIL)			/* count(*) */
		a->args = list_make1(makeTargetEntry(count_arg(quals), 1, NULL, false));
	return gh_agg_call_input(a);
}

/*
 * count_arg is what count(*) counts where quals hold: 1, an integer, or a
 * NUMERIC where they read a NUMERIC (gh_devexpr_reads_numeric).
 */
static Expr *
count_arg(List *quals)
{
	List	   *inputs = NIL;
	List	   *prog = gh_devexpr_compile_cond(make_ands_explicit(quals), &inputs);

	if (prog != NIL && gh_devexpr_reads_numeric(prog))
		return (Expr *) makeConst(NUMERICOID, -1, InvalidOid, -1,
								  NumericGetDatum(int64_to_numeric(1)), false, false);
	return (Expr *) makeConst(INT4OID, -1, InvalidOid, sizeof(int32),
							  Int32GetDatum(1), false, true);
}

/*
 * filter_count is the hidden call count(1) FILTER (WHERE quals): the rows
 * of a group that pass the quals the device evaluates.  A group of none
 * holds only rows PostgreSQL's scan would have removed, and the node's
 * qual drops it (gha_plan_path).
 */
static Aggref *
filter_count(List *quals)
{
	Aggref	   *a = makeNode(Aggref);

	a->aggfnoid = F_COUNT_ANY;
	a->aggtype = INT8OID;
	a->aggtranstype = INT8OID;
	a->args = list_make1(makeTargetEntry(count_arg(quals), 1, NULL, false));
	a->aggargtypes = list_make1_oid(exprType((Node *) linitial_node(TargetEntry, a->args)->expr));
	a->aggfilter = make_ands_explicit(quals);
	a->aggkind = AGGKIND_NORMAL;
	a->aggsplit = AGGSPLIT_SIMPLE;
	a->aggno = -1;
	a->aggtransno = -1;
	a->location = -1;
	return a;
}

/*
 * check_query fills q from the query's GROUP BY and the grouping target and
 * HAVING of its grouping stage; false where GpuHashAgg cannot run it.  With
 * quals (device_quals), every call reads its argument where they hold, and
 * the hidden filter_count joins the calls.
 */
static bool
check_query(PlannerInfo *root, PathTarget *target, List *having, GhaQuery *q,
			List *quals)
{
	Query	   *parse = root->parse;
	List	   *arg_calls;
	ListCell   *lc;

	memset(q, 0, sizeof(*q));
	q->quals = quals;
	q->filter_call = -1;
	if (parse->groupingSets != NIL || parse->hasTargetSRFs)
		return false;
	foreach(lc, parse->groupClause)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		Oid			hash_proc;
		Oid			rhs_proc;

		if (!sgc->hashable || !OidIsValid(sgc->eqop) ||
			!gpuhash_extended_hash_functions(sgc->eqop, &hash_proc, &rhs_proc))
			return false;
		q->keys = lappend(q->keys, get_sortgroupclause_expr(sgc, root->processed_tlist));
		q->eqops = lappend_oid(q->eqops, sgc->eqop);
	}
	q->ngrouped = list_length(q->keys);
	/* columns that depend on a grouped primary key become keys too */
	if ((outside_groups((Node *) target->exprs, q->keys) ||
		 outside_groups((Node *) having, q->keys)) &&
		!add_dependent_keys(target, having, q))
		return false;
	q->device_keys = list_length(q->keys) <= GH_AGG_MAX_KEYS;
	for (int i = 0; i < list_length(q->keys); i++)
	{
		Node	   *key = list_nth(q->keys, i);

		if (gh_agg_key_form(exprType(key), list_nth_oid(q->eqops, i),
							exprCollation(key)) == GH_AGG_KEY_HOST)
			q->device_keys = false;
	}
	q->inputs = NIL;
	q->exprs = NIL;
	(void) collect_aggs((Node *) target->exprs, &q->aggs);
	(void) collect_aggs((Node *) having, &q->aggs);
	if (outside_groups((Node *) target->exprs, q->keys) ||
		outside_groups((Node *) having, q->keys))
		return false;
	if (quals != NIL)
	{
		q->filter_call = list_length(q->aggs);
		q->aggs = lappend(q->aggs, filter_count(quals));
	}
	foreach(lc, q->aggs)
	{
		Aggref	   *agg = lfirst_node(Aggref, lc);
		int			col = -1;
		Expr	   *arg = foreach_current_index(lc) == q->filter_call ?
			gh_agg_call_input(agg) : call_input(agg, quals);

		/*
		 * equal inputs are read once; PostgreSQL computes a volatile one
		 * for each call (find_compatible_agg shares no such state)
		 */
		if (!gh_agg_call_supported(agg) || contain_volatile_functions((Node *) arg))
			return false;
		if (arg != NULL)
		{
			col = list_length(q->args);
			for (int i = 0; i < list_length(q->args); i++)
				if (equal(list_nth(q->args, i), arg))
					col = i;
			if (col == list_length(q->args))
				q->args = lappend(q->args, arg);
		}
		q->call_cols = lappend_int(q->call_cols, col);
	}
	if (list_length(q->args) > GH_AGG_MAX_COLS)
		return false;
	arg_calls = q->call_cols;
	compile_args(q, arg_calls, q->device_keys);
	if (list_length(q->inputs) + list_length(q->exprs) > GH_AGG_MAX_COLS)
		compile_args(q, arg_calls, false);
	return true;
}

/*
 * compile_args decides the child's columns (q->inputs) and the device
 * expressions (q->exprs): with device, each argument that gh_devexpr_compile
 * takes (NUMERIC, integer, date or float arithmetic, a CASE: a program whose
 * column has the argument's type) becomes a program over input columns, run
 * on the device; every other argument is an input column.  Sets q->call_cols from
 * arg_calls (each Aggref's argument, an index into q->args, or -1) to the
 * engine's columns: the inputs, then the expressions.
 */
static void
compile_args(GhaQuery *q, List *arg_calls, bool device)
{
	int			nargs = list_length(q->args);
	int		   *argcol = palloc(sizeof(int) * (nargs + 1));
	int			i = 0;
	ListCell   *lc;

	q->inputs = NIL;
	q->exprs = NIL;
	foreach(lc, q->args)
	{
		Expr	   *arg = lfirst(lc);
		List	   *prog = device ? gh_devexpr_compile(arg, &q->inputs) : NIL;

		if (prog != NIL)
		{
			q->exprs = lappend(q->exprs, prog);
			argcol[i++] = -list_length(q->exprs);
		}
		else
			argcol[i++] = gh_devexpr_input_col(&q->inputs, arg);
	}
	q->call_cols = NIL;
	/* the GROUP BY keys the device can compute (compile_key) */
	q->key_cols = NIL;
	q->key_years = NIL;
	foreach(lc, q->keys)
	{
		int			year = -1;

		q->key_cols = lappend_int(q->key_cols,
								  device && foreach_current_index(lc) < q->ngrouped ?
								  compile_key(q, lfirst(lc), &year) : 0);
		q->key_years = lappend_int(q->key_years, year);
	}
	foreach(lc, q->key_cols)
		lfirst_int(lc) = lfirst_int(lc) < 0 ?
			list_length(q->inputs) - lfirst_int(lc) - 1 : -1;
	foreach(lc, arg_calls)
	{
		int			a = lfirst_int(lc);

		if (a >= 0)
			a = argcol[a] >= 0 ? argcol[a] : list_length(q->inputs) - argcol[a] - 1;
		q->call_cols = lappend_int(q->call_cols, a);
	}
}

/*
 * compile_key compiles GROUP BY expression key into a device expression of
 * its own type when it is integer or date arithmetic over columns and
 * constants that gh_devexpr_compile takes (GROUP BY a + b, d - 30, CASE
 * WHEN ...): the device then computes the key from the program's inputs,
 * which the child returns instead of the key.  Returns minus the
 * expression's number (counting from 1, as compile_args numbers the
 * arguments'), or 0 if the key stays the child's.  An integer program's rows
 * leave the device only where PostgreSQL raises an error (out of range), so
 * a key never needs a value computed on the host.  A key that is
 * extract(year from an input) sets *year to that input's column instead,
 * and returns 0.
 */
static int
compile_key(GhaQuery *q, Expr *key, int *year)
{
	Oid			type = exprType((Node *) key);
	List	   *inputs = list_copy(q->inputs);
	List	   *prog;
	Expr	   *arg;

	/*
	 * extract(year from d), d a date or a timestamp (not timestamptz, whose
	 * year depends on the session's time zone): a NUMERIC of scale 0, which
	 * the device computes from d as an exact word (gh_agg_year_word)
	 */
	if ((arg = gh_devexpr_year_arg((Node *) key)) != NULL)
	{
		if (!contain_volatile_functions((Node *) arg) &&
			list_length(q->inputs) + list_length(q->exprs) + 1 <= GH_AGG_MAX_COLS)
			*year = gh_devexpr_input_col(&q->inputs, arg);
		return 0;
	}
	if ((type != INT2OID && type != INT4OID && type != INT8OID && type != DATEOID) ||
		contain_volatile_functions((Node *) key) ||
		(prog = gh_devexpr_compile(key, &inputs)) == NIL ||
		gh_devexpr_first_input(prog) < 0 ||
		list_length(inputs) + list_length(q->exprs) + 1 > GH_AGG_MAX_COLS)
		return 0;
	q->inputs = inputs;
	q->exprs = lappend(q->exprs, prog);
	return -list_length(q->exprs);
}

/*
 * key_placeholder is what the child returns in the place of a key the
 * device computes (key_cols[i] or key_years[i] >= 0): the first input its
 * program reads, or the input whose year it is, a column the child returns
 * anyway.  Its value is never used (the device
 * overwrites the key), but a Gather passes a column through where it would
 * evaluate a constant, and the workers can then pack the rows.
 */
static Expr *
key_placeholder(GhaQuery *q, int i)
{
	int			c = list_nth_int(q->key_cols, i);
	int			first;

	if (list_nth_int(q->key_years, i) >= 0)
		return list_nth(q->inputs, list_nth_int(q->key_years, i));
	first = gh_devexpr_first_input(list_nth(q->exprs, c - list_length(q->inputs)));
	if (first < 0)
		elog(ERROR, "GpuHashAgg: a device key without an input");
	return list_nth(q->inputs, first);
}

/*
 * device_quals returns the quals of rel's scan that the device can evaluate
 * in GpuHashAgg instead (the scan then passes every row; each call reads
 * its argument where they hold, call_input), or NIL: rel is a table, its
 * quals are neither security quals nor volatile, and gh_devexpr_compile_cond
 * takes their AND with no op that may raise an error (gh_devexpr_may_raise:
 * PostgreSQL
 * orders the quals by cost and stops at the first false one, so a qual's
 * error may not be its).  The GROUP BY keys, which are computed for every
 * row and so for rows the quals would have removed, are columns or the
 * year of one (no error).
 */
static List *
device_quals(RelOptInfo *rel, GhaQuery *q)
{
	List	   *quals = NIL;
	List	   *inputs = NIL;
	List	   *prog;
	ListCell   *lc;

	if (rel->reloptkind != RELOPT_BASEREL || rel->rtekind != RTE_RELATION ||
		rel->baserestrictinfo == NIL || !q->device_keys)
		return NIL;
	foreach(lc, rel->baserestrictinfo)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);

		if (ri->pseudoconstant || ri->security_level != 0)
			return NIL;
		quals = lappend(quals, ri->clause);
	}
	foreach(lc, q->keys)
	{
		Expr	   *year = gh_devexpr_year_arg(lfirst(lc));

		if (!IsA(lfirst(lc), Var) && (year == NULL || !IsA(year, Var)))
			return NIL;
	}
	if (contain_volatile_functions((Node *) quals))
		return NIL;
	prog = gh_devexpr_compile_cond(make_ands_explicit(quals), &inputs);
	if (prog == NIL || gh_devexpr_may_raise(prog))
		return NIL;
	return quals;
}

/*
 * all_on_device: whether the device computes every call's argument of q
 * (an expression column, past the inputs), so that with q->quals the child
 * computes none of them, and so none of the quals, per row.
 */
static bool
all_on_device(GhaQuery *q)
{
	ListCell   *lc;

	if (list_length(q->inputs) + list_length(q->exprs) > GH_AGG_MAX_COLS)
		return false;
	foreach(lc, q->call_cols)
		if (lfirst_int(lc) < list_length(q->inputs))
			return false;
	return true;
}

/*
 * unfiltered_scan is a copy of scan, rel's sequential scan, or the scan
 * under its projection (NULL where it is neither), that passes every row:
 * the quals the device evaluates instead are left out of its rows and its
 * CPU cost (cost_seqscan's baserestrictcost), and gha_plan_path takes them
 * out of its plan.
 */
static Path *
unfiltered_scan(Path *scan, RelOptInfo *rel)
{
	Path	   *p;
	double		ratio;

	/* the scan/join target's projection: the child projects anyway */
	if (scan != NULL && IsA(scan, ProjectionPath))
		scan = ((ProjectionPath *) scan)->subpath;
	if (scan == NULL || !IsA(scan, Path) || scan->pathtype != T_SeqScan ||
		scan->parent != rel || scan->param_info != NULL)
		return NULL;
	ratio = rel->rows > 0 && rel->tuples > rel->rows ? rel->tuples / rel->rows : 1.0;
	p = makeNode(Path);
	memcpy(p, scan, sizeof(Path));
	p->rows = clamp_row_est(scan->rows * ratio);
	p->startup_cost = Max(p->startup_cost - rel->baserestrictcost.startup, 0);
	p->total_cost = Max(p->total_cost - rel->baserestrictcost.startup -
						rel->baserestrictcost.per_tuple * p->rows, p->startup_cost);
	return p;
}

/*
 * spill_cost is the cost of the rows that do not fit the budget, see
 * cost_gha.
 */
static Cost
spill_cost(double rows, double ngroups, int nkeys, int ncols, bool device_keys)
{
	/* per group: count, keys and NULL mask, a column's accumulators, slots */
	double		group_bytes = 8 + 9.0 * nkeys + 44.0 * ncols + 16.0 / gpuhash_load_factor;
	double		need;
	double		budget = (double) get_hash_memory_limit();
	double		spilled;
	double		pages;

	/*
	 * Device keys on the GPU keep their groups in device memory, within the
	 * device budget of aggregate_spill.c: when no setting limits it, half of
	 * the GPU, which the planner does not ask the GPU for.
	 */
	if (device_keys)
	{
		Size		limit = gh_agg_device_limit();

		if (limit == 0)
			return 0;
		budget = (double) limit;
	}
	else
	{
		group_bytes += 24.0 * nkeys;	/* the representatives on the host */
		/* the batch takes up to the other half (gh_agg_batch_cap) */
		budget /= 2;
	}
	need = ngroups * group_bytes;
	if (need <= budget || nkeys == 0)
		return 0;
	spilled = rows * (1.0 - budget / need);
	pages = spilled * (8.0 * (nkeys + ncols) + 24) / BLCKSZ;
	return spilled * 10 * cpu_tuple_cost + 2 * pages * seq_page_cost;
}

/*
 * cost_gha prices the path over child, the projected input: a Gather of it
 * or the projection of a serial one.  Forced: nearly free.  Otherwise:
 *
 * - The input.  Packed (a Gather whose rows the workers pack, see
 *	 gha_planner: device keys), the partial plan and one Gather tuple per
 *	 packet, not per row; the workers' packing, a fraction of an operator a
 *	 column, over the workers; and the leader's copy of every row's bytes,
 *	 a smaller fraction, not divided.  A Gather widened past the workers its
 *	 partial plan was priced for (gha_upper_paths) divides half of that
 *	 plan's run among the added ones: PostgreSQL's model divides only a
 *	 partial plan's CPU, not a scan's page reads, while with the tables in
 *	 memory the workers' whole time divides (TPC-H scale 10 Q1 on an H100:
 *	 4.9 s with 7 workers, 3.2-3.5 s with 16 on a host slower by half,
 *	 bench/results/2026-11-25-gpuhashagg-dict-exprs-tpch-sf10.md).  Not
 *	 packed, the child as PostgreSQL prices it (a Gather passes every row)
 *	 and the leader's staging of every row, a quarter of an operator a
 *	 column.
 *	 One group of plain columns (no GROUP BY, no device expression) under
 *	 a Gather no wider than its partial plan's: the device saves the workers
 *	 nothing there, since PostgreSQL's own partial aggregation of such rows
 *	 is as cheap as packing them, while the leader, a participant of that
 *	 plan, only receives here.  The packing is then priced as those
 *	 transitions are, an operator an aggregate a row in the workers, which
 *	 leaves the plan to PostgreSQL: measured on an H200, bench/join's
 *	 count(*), sum(r.v) over a 16-worker GpuHashJoin took 1.30 s (int4
 *	 keys) and 1.86 s (text) with GpuHashAgg, 1.25 s and 1.63 s without.
 * - Each value of a text min or max, in the leader, which keeps the
 *	 extremes: GHA_TEXT_EXTREME_OPS operators.
 * - With the scan's quals on the device (device_quals), every row is the
 *	 input, the quals' CPU cost is out of the scan's (unfiltered_scan), and
 *	 each row they remove costs a tuple (cpu_tuple_cost): packed, copied and
 *	 sent to the device for nothing.  So a selective qual stays in the scan,
 *	 and one goes to the device where it keeps most rows and computes more
 *	 than the columns it adds to the packets cost.
 * - A fixed device set-up (gpuhash.join_setup_cost).
 * - Per group, the target list and HAVING.
 * - The spill, when the estimated groups need more than their budget
 *	 (aggregate_spill.c: the device budget for device keys on the GPU, else
 *	 work_mem * hash_mem_multiplier): the rows of the groups that do not fit are
 *	 written to partitions and read back, one by one in the leader: the
 *	 pages both ways and ten tuples' CPU a row.  On an H100 at TPC-H scale
 *	 10 under 4MB that was 0.2-0.4 us a spilled row (Q13's 1.5*10^6 groups,
 *	 Q18's 1.5*10^7), which made both slower than native with a factor of
 *	 four here.
 *
 * Measured against PostgreSQL's plans on an H100 (bench/agg, TPC-H): with
 * few groups both are near the scan's time, and with many the partial
 * groups that PostgreSQL's workers send through the Gather dominate native's
 * time and cost alike.
 */
/*
 * text_extremes counts q's distinct arguments of min or max of text: the
 * leader keeps their extremes row by row (aggregate_numeric.c's side
 * state), a copy, a hash lookup and a comparison in the collation a value.
 */
static int
text_extremes(GhaQuery *q)
{
	List	   *args = NIL;
	ListCell   *lc;

	foreach(lc, q->aggs)
	{
		Aggref	   *a = lfirst_node(Aggref, lc);

		if (gh_agg_call_host_extreme(a))
			args = list_append_unique(args, gh_agg_call_input(a));
	}
	return list_length(args);
}

static void
cost_gha(CustomPath *path, Path *child, PathTarget *target, double ngroups,
		 GhaQuery *q)
{
	int			nkeys = list_length(q->keys);
	int			ncols = list_length(q->inputs);
	bool		device_keys = q->device_keys;
	double		rows = child->rows;
	double		cols = nkeys + ncols;
	Cost		input;
	Cost		per_row;

	if (gpuhash_force_agg)
	{
		/*
		 * nearly free; the input read in parallel first, and the scan's
		 * quals on the device where it takes them
		 */
		path->path.startup_cost = 0;
		path->path.total_cost = (q->quals != NIL ? 0.5e-6 * q->filtered_rows : 1e-6 * rows) *
			(IsA(child, GatherPath) ? 1 : 2);
		return;
	}
	if (IsA(child, GatherPath) && device_keys)
	{
		GatherPath *gather = (GatherPath *) child;
		Path	   *sub = gather->subpath;
		double		workers = Max(gather->num_workers, 1);
		double		packets = ceil(rows / Max(gpuhash_batch_rows, 1));
		Cost		run = sub->total_cost - sub->startup_cost;
		bool		widened = gather->num_workers > sub->parallel_workers;

		if (widened)
			run *= 0.5 + 0.5 * gh_parallel_divisor(sub->parallel_workers) /
				gh_parallel_divisor(gather->num_workers);
		input = sub->startup_cost + run + parallel_setup_cost +
			packets * parallel_tuple_cost;
		per_row = cpu_operator_cost * cols * (0.1 / workers + 0.05);
		if (nkeys == 0 && q->exprs == NIL && !widened)
			per_row += cpu_operator_cost * Max(list_length(q->aggs), 1) / workers;
	}
	else
	{
		Path	   *in = IsA(child, ProjectionPath) ? ((ProjectionPath *) child)->subpath : child;

		input = in->total_cost;
		per_row = cpu_operator_cost * (0.1 + 0.25 * ncols);
	}
	/* every value of a text min or max: copied, looked up and compared */
	per_row += cpu_operator_cost * GHA_TEXT_EXTREME_OPS * text_extremes(q);
	path->path.startup_cost = input + gpuhash_join_setup_cost + rows * per_row +
		spill_cost(rows, ngroups, nkeys, ncols, device_keys);
	/* a row the device's quals remove is packed and sent for nothing: a tuple */
	if (q->quals != NIL)
		path->path.startup_cost += Max(rows - q->filtered_rows, 0) * cpu_tuple_cost;
	path->path.total_cost = path->path.startup_cost +
		ngroups * (cpu_tuple_cost + target->cost.per_tuple);
}

/*
 * gha_upper_paths offers the GpuHashAgg path for the grouping stage (see
 * the file's header).
 */
static void
gha_upper_paths(PlannerInfo *root, UpperRelationKind stage,
				RelOptInfo *input_rel, RelOptInfo *output_rel, void *extra)
{
	GroupPathExtraData *gextra = (GroupPathExtraData *) extra;
	GhTarget	target;
	Path	   *input;
	List	   *having;
	GhaQuery	q;
	GhaQuery	fq;
	Path	   *partial;
	List	   *quals;
	double		ngroups;
	int			workers = Min(max_parallel_workers_per_gather, max_parallel_workers);

	if (prev_upper_paths_hook)
		prev_upper_paths_hook(root, stage, input_rel, output_rel, extra);
	if (stage != UPPERREL_GROUP_AGG || extra == NULL ||
		(!gpuhash_force_agg && !gpuhash_enable_agg))
		return;
	target = gpuhash_plan_target();
	if (target == GH_TARGET_NONE || (!gpuhash_force_agg && target != GH_TARGET_GPU))
		return;
	input = input_rel->cheapest_total_path;
	if (input == NULL || input->param_info != NULL || IS_DUMMY_REL(input_rel))
		return;
	having = (List *) gextra->havingQual;
	if (!check_query(root, output_rel->reltarget, having, &q, NIL))
		return;
	/* the groups of the GROUP BY's own keys: the columns after them depend on them */
	ngroups = q.ngrouped == 0 ? 1 :
		estimate_num_groups(root, list_truncate(list_copy(q.keys), q.ngrouped),
							input_rel->rows, NULL, NULL);
	partial = input_rel->partial_pathlist != NIL && input_rel->consider_parallel ?
		linitial(input_rel->partial_pathlist) : NULL;

	/*
	 * The workers here only read and pack rows for the device: with the
	 * aggregation gone from them, more of them keep the device fed.  The
	 * Gather asks for every worker it may have, not the few the input's
	 * size gives it (see cost_gha).  A base relation's parallel scan is
	 * planned again for that many, priced by PostgreSQL.
	 */
	if (partial != NULL && partial->pathtype == T_SeqScan &&
		input_rel->reloptkind == RELOPT_BASEREL &&
		partial->parallel_workers > 0 && partial->parallel_workers < workers)
		partial = create_seqscan_path(root, input_rel, NULL, workers);
	offer_paths(root, input_rel, output_rel, &q, having, ngroups, input_rel->rows,
				input, partial);

	/*
	 * And with the scan's quals on the device, where it takes them and every
	 * argument with them: the scan then passes every row, and the cost
	 * model weighs the rows it packs against the quals it no longer
	 * computes.
	 */
	quals = gpuhash_agg_device_filter ? device_quals(input_rel, &q) : NIL;
	if (quals != NIL && check_query(root, output_rel->reltarget, having, &fq, quals) &&
		all_on_device(&fq))
	{
		Path	   *all = unfiltered_scan(input, input_rel);

		fq.filtered_rows = input_rel->rows;
		offer_paths(root, input_rel, output_rel, &fq, having, ngroups,
					all != NULL ? all->rows : Max(input_rel->tuples, input_rel->rows),
					all, unfiltered_scan(partial, input_rel));
	}
}

/*
 * offer_paths adds GpuHashAgg's paths for q over input, the input's
 * cheapest path, and over partial, its cheapest partial path (either may
 * be NULL), each projected to the keys and then q's inputs; in_rows: the
 * rows of the input.
 */
static void
offer_paths(PlannerInfo *root, RelOptInfo *input_rel, RelOptInfo *output_rel,
			GhaQuery *q, List *having, double ngroups, double in_rows,
			Path *input, Path *partial)
{
	PathTarget *child_target;
	Path	   *child;
	ListCell   *lc;

	/* the child: the input projected to the keys, then the arguments */
	child_target = create_empty_pathtarget();
	foreach(lc, q->keys)
		add_column_to_pathtarget(child_target,
								 list_nth_int(q->key_cols, foreach_current_index(lc)) >= 0 ||
								 list_nth_int(q->key_years, foreach_current_index(lc)) >= 0 ?
								 key_placeholder(q, foreach_current_index(lc)) :
								 (Expr *) lfirst(lc), 0);
	foreach(lc, q->inputs)
		add_column_to_pathtarget(child_target, (Expr *) lfirst(lc), 0);
	child_target = set_pathtarget_cost_width(root, child_target);

	if (input != NULL && !reads_unreturned(child_target, input))
	{
		child = (Path *) create_projection_path(root, input_rel, input, child_target);
		add_gha_path(output_rel, child, q, having, ngroups);
	}

	/*
	 * And the cheapest partial input, projected in the workers under a
	 * Gather: the planner hook (gha_planner) then packs the rows there when
	 * the engine can take packets.  Offered also where the input's cheapest
	 * path is already a Gather (apply_scanjoin_target_to_paths gathers the
	 * final scan/join relation), since then the first path's rows cross the
	 * Gather one by one and are projected in the leader.  Not offered where
	 * a key or an argument may not be computed in a worker (the projection
	 * is not parallel safe, as is_parallel_safe tells create_projection_path):
	 * a SubPlan, whose plan the workers are not given, a parameter only the
	 * leader has, a parallel-restricted function.  PostgreSQL computes those
	 * in the leader, above its Gather; here the input is then read serially.
	 */
	if (partial != NULL)
	{
		int			workers = Min(max_parallel_workers_per_gather, max_parallel_workers);
		double		rows = in_rows;
		GatherPath *gather;

		child = (Path *) create_projection_path(root, input_rel, partial, child_target);
		if (!child->parallel_safe)
			return;
		gather = create_gather_path(root, input_rel, child, child_target, NULL, &rows);
		if (gather->num_workers > 0 && gather->num_workers < workers)
			gather->num_workers = workers;
		add_gha_path(output_rel, (Path *) gather, q, having, ngroups);
	}
}

/*
 * returned_var: whether path's rows carry var's column (a plain Var of the
 * same relation and attribute in its target).
 */
static bool
returned_var(Var *var, Path *path)
{
	ListCell   *lc;

	foreach(lc, path->pathtarget->exprs)
	{
		Var		   *v = lfirst(lc);

		if (IsA(v, Var) && v->varno == var->varno && v->varattno == var->varattno &&
			v->varlevelsup == var->varlevelsup)
			return true;
	}
	return false;
}

/*
 * reads_unreturned says whether a projection of path to target would read
 * a column that path's rows do not carry.  A projection over a Gather (or
 * Gather Merge) goes onto that node, and over a node that cannot project
 * into a Result above it: either computes its target from the rows below,
 * which carry only path's target.  Where the input of a grouping is a
 * Gather, that is the scan/join target: its expressions, not always their
 * columns, so a key the device computes from a column (key_placeholder),
 * or an argument the leader computes from one, may not be there.  Other
 * nodes compute a projection from their own inputs, which carry every
 * column needed above them.
 */
static bool
reads_unreturned(PathTarget *target, Path *path)
{
	ListCell   *lc;

	if (!IsA(path, GatherPath) && !IsA(path, GatherMergePath) &&
		is_projection_capable_path(path))
		return false;
	foreach(lc, target->exprs)
	{
		Node	   *e = lfirst(lc);
		List	   *vars;
		ListCell   *lv;

		if (list_member(path->pathtarget->exprs, e))
			continue;
		vars = pull_var_clause(e, PVC_RECURSE_AGGREGATES | PVC_RECURSE_WINDOWFUNCS |
							   PVC_RECURSE_PLACEHOLDERS);
		foreach(lv, vars)
		{
			if (!returned_var(lfirst(lv), path))
				return true;
		}
	}
	return false;
}

/* add_gha_path adds a GpuHashAgg path over child, the projected input. */
static void
add_gha_path(RelOptInfo *output_rel, Path *child, GhaQuery *q, List *having,
			 double ngroups)
{
	CustomPath *cpath;

	cpath = makeNode(CustomPath);
	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = output_rel;
	cpath->path.pathtarget = output_rel->reltarget;
	cpath->path.param_info = NULL;
	cpath->path.parallel_aware = false;
	cpath->path.parallel_safe = false;
	cpath->path.parallel_workers = 0;
	cpath->path.rows = ngroups;
	cpath->path.pathkeys = NIL;
	cpath->flags = 0;
	cpath->custom_paths = list_make1(child);
	cpath->custom_private = list_make5(q->keys, q->eqops, q->aggs, q->call_cols, having);
	cpath->custom_private = lappend(cpath->custom_private, q->exprs);
	cpath->custom_private = lappend(cpath->custom_private, q->key_cols);
	cpath->custom_private = lappend(cpath->custom_private, q->key_years);
	cpath->custom_private = lappend(cpath->custom_private, q->quals);
	cpath->custom_private = lappend(cpath->custom_private, makeInteger(q->filter_call));
	cpath->methods = &gha_path_methods;
	cost_gha(cpath, child, output_rel->reltarget, ngroups, q);
	add_path(output_rel, &cpath->path);
}

/*
 * gha_plan_path makes the CustomScan: the scan tuple is the keys and then
 * the Aggrefs, HAVING is the scan's qual.
 */
static Plan *
gha_plan_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
			  List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	List	   *keys = linitial(best_path->custom_private);
	List	   *eqops = lsecond(best_path->custom_private);
	List	   *aggs = lthird(best_path->custom_private);
	List	   *call_cols = lfourth(best_path->custom_private);
	List	   *having = list_nth(best_path->custom_private, 4);
	List	   *exprs = list_nth(best_path->custom_private, 5);
	List	   *key_cols = list_nth(best_path->custom_private, 6);
	List	   *key_years = list_nth(best_path->custom_private, 7);
	List	   *quals = list_nth(best_path->custom_private, 8);
	int			filter_call = intVal(list_nth(best_path->custom_private, 9));
	Plan	   *child = linitial(custom_plans);
	List	   *scan_tlist = NIL;
	List	   *col_types = NIL;
	Oid			extfunc = gpuhash_extension_function();
	ListCell   *lc;

	gh_plans_made[GH_PLAN_AGG]++;	/* gha_planner walks the plan */
	/* DROP EXTENSION gpuhash invalidates the plan if it is cached */
	if (OidIsValid(extfunc))
		record_plan_function_dependency(root, extfunc);
	for (int i = list_length(eqops); i < list_length(child->targetlist); i++)
		col_types = lappend_oid(col_types,
								exprType((Node *) list_nth_node(TargetEntry, child->targetlist, i)->expr));

	foreach(lc, keys)
		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry(copyObject(lfirst(lc)),
											 list_length(scan_tlist) + 1, NULL, false));
	foreach(lc, aggs)
		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry(copyObject(lfirst(lc)),
											 list_length(scan_tlist) + 1, NULL, false));
	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = copyObject(having);
	if (quals != NIL)
	{
		Plan	   *scan = child;

		/*
		 * the scan passes every row (unfiltered_scan): the plan PostgreSQL
		 * made of it still has the quals.  Were they left there, the rows
		 * would be PostgreSQL's all the same.
		 */
		if (IsA(scan, Gather))
			scan = scan->lefttree;
		if (IsA(scan, Result) && scan->qual == NIL &&
			((Result *) scan)->resconstantqual == NULL && scan->lefttree != NULL)
			scan = scan->lefttree;
		if (IsA(scan, SeqScan))
			scan->qual = list_difference(scan->qual, quals);
		/* a group of no row that passes them is not PostgreSQL's: dropped first */
		if (keys != NIL)
			cscan->scan.plan.qual =
				lcons(make_opclause(get_opfamily_member(INTEGER_BTREE_FAM_OID, INT8OID, INT8OID,
														BTGreaterStrategyNumber),
									BOOLOID, false,
									(Expr *) copyObject(list_nth(aggs, filter_call)),
									(Expr *) makeConst(INT8OID, -1, InvalidOid, sizeof(int64),
													   Int64GetDatum(0), false, FLOAT8PASSBYVAL),
									InvalidOid, InvalidOid),
					  cscan->scan.plan.qual);
	}
	cscan->scan.scanrelid = 0;
	cscan->custom_plans = custom_plans;
	cscan->custom_scan_tlist = scan_tlist;
	cscan->custom_exprs = NIL;
	cscan->custom_private = list_make5(list_copy(eqops), list_copy(call_cols), col_types,
									   makeInteger(0), copyObject(exprs));
	cscan->custom_private = lappend(cscan->custom_private, list_copy(key_cols));
	cscan->custom_private = lappend(cscan->custom_private, list_copy(key_years));
	cscan->custom_private = lappend(cscan->custom_private, makeInteger(filter_call));
	cscan->flags = best_path->flags;
	cscan->methods = &gha_scan_methods;
	return &cscan->scan.plan;
}

static Node *
gha_create_state(CustomScan *cscan)
{
	GhaState   *st = (GhaState *) newNode(sizeof(GhaState), T_CustomScanState);

	st->css.methods = &gha_exec_methods;
	return (Node *) st;
}

/*
 * engine_plan makes the engine's plan of a GpuHashAgg: keys and Aggrefs from
 * the scan tuple, the equality operators, the input columns' types and each
 * call's column from custom_private.
 */
static GhAggPlan *
engine_plan(CustomScan *cscan)
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
	st->plan = engine_plan(cscan);
	st->filter_col = intVal(list_nth(cscan->custom_private, GHA_PRIV_FILTER));
	if (st->filter_col >= 0)
		st->filter_col += list_length((List *) linitial(cscan->custom_private));
	/* device = cpu runs the CPU twin, also where gpuhash.cost_as_gpu planned */
	st->target = gpuhash_device != GPUHASH_DEVICE_CPU &&
		gpuhash_plan_target() == GH_TARGET_GPU ? GH_TARGET_GPU : GH_TARGET_CPU;
}

/*
 * gha_group reads the whole input into a new run.  With packets the
 * leader's job is to drain the workers' queues: a leader busy filling a
 * packet of its own leaves them full and the workers waiting (on an H100
 * host, 16 workers, 3*10^7 rows: 0.94-1.2 s with the leader taking part,
 * 0.43 s without).  The Gather decides that on its first row, from
 * parallel_leader_participation, which is off until the input is read.
 */
static void
gha_group(GhaState *st)
{
	MemoryContext old = MemoryContextSwitchTo(st->css.ss.ps.state->es_query_cxt);
	int			nest = -1;
	instr_time	t0;

	st->run = gh_agg_run_begin(st->plan, gpuhash_exec_target());
	MemoryContextSwitchTo(old);
	if (st->packed)
	{
		nest = NewGUCNestLevel();
		(void) set_config_option("parallel_leader_participation", "off",
								 PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	}
	INSTR_TIME_SET_CURRENT(t0);
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

static bool
gha_recheck(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

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
	int			nkeys = list_length((List *) linitial(cscan->custom_private));
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
								  call_input(a, list_make1(filter->aggfilter)));
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

/* What find_packable collects from a finished plan. */
typedef struct PackWalk
{
	int			max_node_id;	/* the largest plan_node_id */
	List	   *aggs;			/* GpuHashAgg nodes over a Gather */
} PackWalk;

/*
 * find_packable adds to the PackWalk context each GpuHashAgg of the tree
 * below plan whose input comes through a Gather, and notes the largest
 * plan_node_id.
 */
static bool
find_packable(Plan *plan, void *context)
{
	PackWalk   *w = (PackWalk *) context;

	w->max_node_id = Max(w->max_node_id, plan->plan_node_id);
	if (IsA(plan, CustomScan) && ((CustomScan *) plan)->methods == &gha_scan_methods &&
		IsA(linitial(((CustomScan *) plan)->custom_plans), Gather))
		w->aggs = lappend(w->aggs, plan);
	return gh_plan_walk_children(plan, find_packable, context);
}

/*
 * gha_planner is the planner_hook: PostgreSQL's planner (or the hook before
 * this one), then the packing of GpuHashAgg inputs read in parallel: under
 * each GpuHashAgg whose input comes through a Gather, gh_agg_pack_gather
 * puts a GpuHashAggPack, numbered after every node of the plan, and the
 * workers then send device-ready packets, not rows.  Where this planning
 * made no GpuHashAgg (gh_plans_made), the plan is not walked.
 */
static PlannedStmt *
gha_planner(Query *parse, const char *query_string, int cursorOptions,
			ParamListInfo boundParams)
{
	PlannedStmt *stmt;
	uint64		made = gh_plans_made[GH_PLAN_AGG];
	PackWalk	w = {-1, NIL};
	ListCell   *lc;

	if (prev_planner_hook)
		stmt = prev_planner_hook(parse, query_string, cursorOptions, boundParams);
	else
		stmt = standard_planner(parse, query_string, cursorOptions, boundParams);
	if (!stmt->parallelModeNeeded || gh_plans_made[GH_PLAN_AGG] == made)
		return stmt;
	(void) gh_plan_walk_stmt(stmt, find_packable, &w);
	foreach(lc, w.aggs)
	{
		CustomScan *cscan = lfirst(lc);

		if (gh_agg_pack_gather(engine_plan(cscan), linitial(cscan->custom_plans),
							   w.max_node_id + 1))
		{
			w.max_node_id++;
			list_nth_cell(cscan->custom_private, GHA_PRIV_PACKED)->ptr_value = makeInteger(1);
		}
	}
	return stmt;
}
