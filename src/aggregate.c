/*-------------------------------------------------------------------------
 * aggregate.c
 *	  gpuhash_aggregate(query text): an ad-hoc GROUP BY run on the device.
 *
 * The query goes through four steps, and the first three execute nothing:
 *
 * 1. Parse (pg_parse_query): exactly one statement, a plain SELECT with no
 *	  INTO, no locking clause, no set operation and no data-modifying WITH.
 * 2. Analyze and rewrite it to a Query as PostgreSQL would, then check the
 *	  tree: no window functions, grouping sets, HAVING, DISTINCT, ORDER BY,
 *	  LIMIT or set-returning functions at the top level, no locking anywhere,
 *	  and every output column is either a GROUP BY expression, an expression
 *	  of the group keys, or one call of a supported aggregate (count(*),
 *	  count(x), and sum, avg, min, max over smallint, integer, bigint, real,
 *	  double precision and numeric) with no DISTINCT, ORDER BY or FILTER.
 *	  Anything else is an ERROR with a hint listing what is supported.
 * 3. Check the caller's column definition list against the result types.
 * 4. Build the input query, a copy of the Query whose target list is the
 *	  group keys followed by the distinct aggregate arguments, with the
 *	  grouping removed; plan it with the planner (parallel plans allowed) and
 *	  run it with the executor under transaction_read_only = on, with the
 *	  caller's privileges and snapshot.  A DestReceiver hands every row to
 *	  a run (aggregate_batch.c), which stages rows in batches that the
 *	  device hashes, groups and aggregates.  The result rows
 *	  (aggregate_result.c) go into the function's tuplestore, or, when the
 *	  GpuHashAggregate scan stands in for the function (aggregate_scan.c),
 *	  straight to the plan node above it.
 *
 * When the plan is parallel and the keys suit the device, the workers pack
 * rows into device-ready packets (aggregate_pack.c) and only packets reach
 * this process.
 *
 * transaction_read_only = on (set for the duration, like a function's SET
 * clause) is what makes "runs the query read-only" hold even for volatile
 * functions that the query calls: any write they attempt is an ERROR.
 *
 * Output columns that are expressions of the keys but not GROUP BY
 * expressions themselves (a column functionally dependent on a grouped
 * primary key, or "a + 1" with GROUP BY a) are carried: evaluated per input
 * row, never hashed or compared, and taken from the row that became the
 * group's representative, as PostgreSQL takes them from one row of the group.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_aggregate.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "parser/parsetree.h"
#include "portability/instr_time.h"
#include "tcop/tcopprot.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "aggregate.h"

PG_FUNCTION_INFO_V1(gpuhash_aggregate);

/* What every refusal's hint says. */
#define GH_AGG_HINT \
	"gpuhash_aggregate runs one SELECT ... GROUP BY whose output columns are " \
	"GROUP BY expressions and the aggregates count(*), count(x), and sum, avg, " \
	"min, max of smallint, integer, bigint, real, double precision or numeric, " \
	"without DISTINCT, ORDER BY or FILTER in the aggregates; its FROM and " \
	"WHERE may be anything. Sort, filter or limit the result in the calling query."

#define REFUSE(...) \
	ereport(ERROR, \
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED), \
			 errmsg(__VA_ARGS__), \
			 errhint(GH_AGG_HINT)))

#define REFUSE_DETAIL(detail, ...) \
	ereport(ERROR, \
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED), \
			 errmsg(__VA_ARGS__), \
			 errdetail_internal("%s", detail), \
			 errhint(GH_AGG_HINT)))

/* The aggregates we run, by function OID. */
typedef struct GhAggDef
{
	Oid			fnoid;
	GhAggFunc	func;
	GhValType	vtype;
} GhAggDef;

static const GhAggDef gh_agg_defs[] = {
	{F_COUNT_, GHAF_COUNT_STAR, GHV_OTHER},
	{F_COUNT_ANY, GHAF_COUNT, GHV_OTHER},
	{F_SUM_INT2, GHAF_SUM, GHV_INT2},
	{F_SUM_INT4, GHAF_SUM, GHV_INT4},
	{F_SUM_INT8, GHAF_SUM, GHV_INT8},
	{F_SUM_FLOAT4, GHAF_SUM, GHV_FLOAT4},
	{F_SUM_FLOAT8, GHAF_SUM, GHV_FLOAT8},
	{F_SUM_NUMERIC, GHAF_SUM, GHV_NUMERIC},
	{F_AVG_INT2, GHAF_AVG, GHV_INT2},
	{F_AVG_INT4, GHAF_AVG, GHV_INT4},
	{F_AVG_INT8, GHAF_AVG, GHV_INT8},
	{F_AVG_FLOAT4, GHAF_AVG, GHV_FLOAT4},
	{F_AVG_FLOAT8, GHAF_AVG, GHV_FLOAT8},
	{F_AVG_NUMERIC, GHAF_AVG, GHV_NUMERIC},
	{F_MIN_INT2, GHAF_MIN, GHV_INT2},
	{F_MIN_INT4, GHAF_MIN, GHV_INT4},
	{F_MIN_INT8, GHAF_MIN, GHV_INT8},
	{F_MIN_FLOAT4, GHAF_MIN, GHV_FLOAT4},
	{F_MIN_FLOAT8, GHAF_MIN, GHV_FLOAT8},
	{F_MIN_NUMERIC, GHAF_MIN, GHV_NUMERIC},
	{F_MAX_INT2, GHAF_MAX, GHV_INT2},
	{F_MAX_INT4, GHAF_MAX, GHV_INT4},
	{F_MAX_INT8, GHAF_MAX, GHV_INT8},
	{F_MAX_FLOAT4, GHAF_MAX, GHV_FLOAT4},
	{F_MAX_FLOAT8, GHAF_MAX, GHV_FLOAT8},
	{F_MAX_NUMERIC, GHAF_MAX, GHV_NUMERIC},
	{F_MIN_DATE, GHAF_MIN, GHV_DATE},
	{F_MAX_DATE, GHAF_MAX, GHV_DATE},
	{F_MIN_TIMESTAMP, GHAF_MIN, GHV_TIMESTAMP},
	{F_MAX_TIMESTAMP, GHAF_MAX, GHV_TIMESTAMP},
	{F_MIN_TIMESTAMPTZ, GHAF_MIN, GHV_TIMESTAMP},
	{F_MAX_TIMESTAMPTZ, GHAF_MAX, GHV_TIMESTAMP},
	{F_MIN_TEXT, GHAF_MIN, GHV_TEXT},
	{F_MAX_TEXT, GHAF_MAX, GHV_TEXT},
};

/* The DestReceiver that feeds the input rows to a run. */
typedef struct GhAggDest
{
	DestReceiver pub;
	GhAggRun   *run;
	bool		packed;			/* rows come as packets (aggregate_pack.c) */
} GhAggDest;

static void check_raw(List *raws);
static Query *analyze(const char *sql);
static void check_query(Query *q);
static bool find_row_marks(Node *node, void *context);
static GhAggPlan *plan_aggregation(Query *q, const char *sql);
static Oid	add_group_key(GhAggPlan *plan, Expr *expr, Oid eqop, bool hashable,
						  int position);
static void plan_group_keys(GhAggPlan *plan, const Oid *hashfn);
static int	add_carried(GhAggPlan *plan, Expr *expr, int position, const char *name);
static int	add_call(GhAggPlan *plan, Aggref *agg, int position, const char *name);
static Oid	add_key(GhAggPlan *plan, Expr *expr, Oid type, Oid collation, Oid eqop,
					bool hashable, int position);
static void add_col(GhAggPlan *plan, Expr *expr, Oid type);
static void add_expr(GhAggPlan *plan, List *prog, int ninputs,
					 const Oid *input_types);
static const GhAggDef *agg_def(Oid fnoid);
static int	set_call(GhAggPlan *plan, const GhAggDef *def, Aggref *agg, int c);
static void finish_plan(GhAggPlan *plan);
static void check_coldef(GhAggPlan *plan, TupleDesc expected);
static void plan_coercions(GhAggPlan *plan, TupleDesc expected);
static char *describe_columns(GhAggPlan *plan);
static GhValType col_vtype(Oid type);
static bool text_extreme_ok(Aggref *agg);
static void run_input(GhAggPlan *plan, GhAggRun *run);
static bool dest_receive(TupleTableSlot *slot, DestReceiver *self);
static void dest_startup(DestReceiver *self, int operation, TupleDesc typeinfo);
static void dest_shutdown(DestReceiver *self);
static void dest_destroy(DestReceiver *self);

/*
 * gpuhash_aggregate runs the GROUP BY query in its argument with grouping
 * and aggregation on the device and returns PostgreSQL's groups.  In a plain
 * FROM clause the GpuHashAggregate scan (aggregate_scan.c) takes its place
 * and returns the same rows without this tuplestore.
 */
Datum
gpuhash_aggregate(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *sql = text_to_cstring(PG_GETARG_TEXT_PP(0));
	GhAggRun   *run;

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	run = gh_agg_start(sql, rsinfo->setDesc);
	gh_agg_run_finish(run, rsinfo->setResult, rsinfo->setDesc);
	gh_agg_run_end(run);
	return (Datum) 0;
}

/*
 * gh_agg_start checks and plans the query sql, checks the column definition
 * list (expected) against its result, and runs its input through a new
 * run, which it returns for gh_agg_run_complete.
 */
GhAggRun *
gh_agg_start(const char *sql, TupleDesc expected)
{
	GhAggPlan  *plan;
	GhAggRun   *run;

	plan = plan_aggregation(analyze(sql), sql);
	check_coldef(plan, expected);
	plan_coercions(plan, expected);
	run = gh_agg_run_begin(plan, gpuhash_exec_target());
	run_input(plan, run);
	return run;
}

/*
 * check_raw checks what only the raw parse tree shows well: the number and
 * kind of statements, INTO, locking clauses, set operations and
 * data-modifying WITH.
 */
static void
check_raw(List *raws)
{
	RawStmt    *raw;
	SelectStmt *sel;

	if (list_length(raws) != 1)
		REFUSE_DETAIL(psprintf("The query string holds %d statements.", list_length(raws)),
					  "gpuhash_aggregate takes exactly one SQL statement");
	raw = linitial_node(RawStmt, raws);
	if (!IsA(raw->stmt, SelectStmt))
		REFUSE_DETAIL(psprintf("The statement is %s.", CreateCommandName(raw->stmt)),
					  "gpuhash_aggregate accepts only a SELECT statement");
	sel = (SelectStmt *) raw->stmt;
	if (sel->intoClause)
		REFUSE("gpuhash_aggregate does not accept SELECT ... INTO");
	if (sel->op != SETOP_NONE)
		REFUSE("gpuhash_aggregate does not accept UNION, INTERSECT or EXCEPT at the top level");
	if (sel->lockingClause != NIL)
		REFUSE("gpuhash_aggregate does not accept locking clauses such as FOR UPDATE");
	if (sel->valuesLists != NIL)
		REFUSE("gpuhash_aggregate does not accept a VALUES list as the query");
	if (sel->withClause)
	{
		ListCell   *lc;

		foreach(lc, sel->withClause->ctes)
		{
			CommonTableExpr *cte = lfirst_node(CommonTableExpr, lc);

			if (!IsA(cte->ctequery, SelectStmt))
				REFUSE_DETAIL(psprintf("WITH query \"%s\" is %s.", cte->ctename,
									   CreateCommandName(cte->ctequery)),
							  "gpuhash_aggregate does not accept data-modifying statements in WITH");
		}
	}
}

/*
 * analyze parses sql, checks the raw tree, and returns the analyzed and
 * rewritten Query after checking it.  Nothing is executed.
 */
static Query *
analyze(const char *sql)
{
	List	   *raws = pg_parse_query(sql);
	RawStmt    *raw;
	List	   *queries;
	Query	   *q;

	check_raw(raws);
	raw = linitial_node(RawStmt, raws);
	queries = pg_analyze_and_rewrite_fixedparams(raw, sql, NULL, 0, NULL);
	if (list_length(queries) != 1)
		REFUSE("gpuhash_aggregate accepts only a SELECT statement");
	q = linitial_node(Query, queries);
	check_query(q);
	return q;
}

/* find_row_marks: true if any query in the tree locks rows. */
static bool
find_row_marks(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		Query	   *q = (Query *) node;

		if (q->rowMarks != NIL)
			return true;
		return query_tree_walker(q, find_row_marks, context, 0);
	}
	return expression_tree_walker(node, find_row_marks, context);
}

/* check_query refuses every top-level feature we do not run. */
static void
check_query(Query *q)
{
	if (q->commandType != CMD_SELECT || q->utilityStmt != NULL)
		REFUSE("gpuhash_aggregate accepts only a SELECT statement");
	if (q->hasModifyingCTE)
		REFUSE("gpuhash_aggregate does not accept data-modifying statements in WITH");
	if (find_row_marks((Node *) q, NULL))
		REFUSE("gpuhash_aggregate does not accept locking clauses such as FOR UPDATE");
	if (q->setOperations)
		REFUSE("gpuhash_aggregate does not accept UNION, INTERSECT or EXCEPT at the top level");
	if (q->hasWindowFuncs)
		REFUSE("gpuhash_aggregate does not run window functions");
	if (q->groupingSets != NIL)
		REFUSE("gpuhash_aggregate does not run GROUPING SETS, ROLLUP or CUBE");
	if (q->hasTargetSRFs)
		REFUSE("gpuhash_aggregate does not accept set-returning functions in the select list");
	if (q->distinctClause != NIL)
		REFUSE("gpuhash_aggregate does not accept SELECT DISTINCT");
	if (q->havingQual != NULL)
		REFUSE("gpuhash_aggregate does not accept HAVING");
	if (q->sortClause != NIL)
		REFUSE("gpuhash_aggregate does not accept ORDER BY in the query");
	if (q->limitCount != NULL || q->limitOffset != NULL)
		REFUSE("gpuhash_aggregate does not accept LIMIT or OFFSET in the query");
	if (!q->hasAggs && q->groupClause == NIL)
		REFUSE("the query given to gpuhash_aggregate has neither GROUP BY nor aggregates");
}

/*
 * plan_aggregation turns a checked Query into a GhAggPlan: the keys, the
 * input columns, the aggregate calls, the output columns and the input
 * query.  Refuses unsupported output columns, aggregates and key types.
 */
static GhAggPlan *
plan_aggregation(Query *q, const char *sql)
{
	GhAggPlan  *plan = palloc0(sizeof(GhAggPlan));
	int			ntle = list_length(q->targetList);
	int			ngroup = list_length(q->groupClause);
	int		   *group_key;		/* key index of each groupClause entry */
	Oid		   *hashfn;			/* extended hash function of each */
	List	   *tlist = NIL;
	ListCell   *lc;
	int			i;
	Query	   *input;

	plan->sql = sql;
	plan->keys = palloc0(sizeof(GhAggKey) * (ngroup + ntle));
	plan->cols = palloc0(sizeof(GhAggCol) * (ntle + 1));
	plan->calls = palloc0(sizeof(GhAggCall) * (ntle + 1));
	plan->out = palloc0(sizeof(GhAggOut) * (ntle + 1));
	group_key = palloc(sizeof(int) * (ngroup + 1));
	hashfn = palloc(sizeof(Oid) * (ngroup + 1));

	/* the group keys, in GROUP BY order */
	i = 0;
	foreach(lc, q->groupClause)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		TargetEntry *tle = get_sortgroupclause_tle(sgc, q->targetList);

		group_key[i] = plan->nkeys;
		hashfn[i] = add_group_key(plan, tle->expr, sgc->eqop, sgc->hashable, i + 1);
		i++;
	}
	plan_group_keys(plan, hashfn);

	/* the output columns */
	foreach(lc, q->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		GhAggOut   *out;
		ListCell   *gc;
		int			k = -1;

		if (tle->resjunk)
			continue;
		out = &plan->out[plan->nout];
		out->name = tle->resname ? pstrdup(tle->resname) : psprintf("column%d", tle->resno);
		out->type = exprType((Node *) tle->expr);
		out->typmod = exprTypmod((Node *) tle->expr);

		/* a GROUP BY expression, referenced or repeated */
		i = 0;
		foreach(gc, q->groupClause)
		{
			SortGroupClause *sgc = lfirst_node(SortGroupClause, gc);

			if ((tle->ressortgroupref != 0 &&
				 sgc->tleSortGroupRef == tle->ressortgroupref) ||
				equal(get_sortgroupclause_expr(sgc, q->targetList), tle->expr))
			{
				k = group_key[i];
				break;
			}
			i++;
		}
		if (k >= 0)
		{
			out->is_key = true;
			out->index = k;
		}
		else if (IsA(tle->expr, Aggref))
		{
			out->is_key = false;
			out->index = add_call(plan, (Aggref *) tle->expr, plan->nout + 1, out->name);
			out->type = plan->calls[out->index].result_type;
			out->typmod = -1;
		}
		else if (!contain_agg_clause((Node *) tle->expr))
		{
			out->is_key = true;
			out->index = add_carried(plan, tle->expr, plan->nout + 1, out->name);
		}
		else
			REFUSE_DETAIL("Each output column must be a GROUP BY expression or one aggregate call; compute expressions of aggregates in the calling query.",
						  "output column %d (\"%s\") of the query is an expression of aggregates",
						  plan->nout + 1, out->name);
		plan->nout++;
	}

	finish_plan(plan);

	/* the input query: keys, then aggregate arguments, no grouping */
	for (i = 0; i < plan->nkeys; i++)
		tlist = lappend(tlist, makeTargetEntry(copyObject(plan->keys[i].expr),
											   list_length(tlist) + 1,
											   psprintf("k%d", i + 1), false));
	for (i = 0; i < plan->ncols; i++)
		tlist = lappend(tlist, makeTargetEntry(copyObject(plan->cols[i].expr),
											   list_length(tlist) + 1,
											   psprintf("v%d", i + 1), false));
	input = copyObject(q);
	input->targetList = tlist;
	input->groupClause = NIL;
	input->groupDistinct = false;
	input->hasAggs = false;
	input->havingQual = NULL;
	plan->input = input;
	return plan;
}

/*
 * gh_agg_key_form says how a GROUP BY key of type, grouped by eqop under
 * collation, reaches the device (GH_AGG_KEY_*): the rule finish_plan
 * applies, for the planner's costs (agg_path.c).
 */
int
gh_agg_key_form(Oid type, Oid eqop, Oid collation)
{
	if (gh_key_group_eq_kind(type, eqop, collation) == GH_EQ_DATUM)
		return GH_AGG_KEY_WORD;
	if (get_typlen(type) == -2)
		return GH_AGG_KEY_HOST;
	return GH_AGG_KEY_DICT;
}

/*
 * finish_plan decides what the plan's keys and columns send to the device:
 * keys that are by value with bitwise equality go as their Datums, other
 * GROUP BY keys as their numbers in the run's dictionary (aggregate_dict.c),
 * and all of them are then grouped exactly on the device, with no checking
 * on the host; carried keys (and cstrings) keep every key on the host.
 * Input columns that only count(x) reads need no values, only NULL or not;
 * an expression's column keeps its values, whose rows the host computed
 * count too, and an expression's input column keeps them for the device.
 */
static void
finish_plan(GhAggPlan *plan)
{
	plan->device_keys = plan->nkeys <= GH_AGG_MAX_KEYS;
	for (int i = 0; i < plan->nkeys; i++)
	{
		GhAggKey   *key = &plan->keys[i];

		key->dict = false;
		if (key->carried || key->typlen == -2)
			plan->device_keys = false;
		else if (key->eq_kind != GH_EQ_DATUM && key->year_col < 0)
			key->dict = true;
	}
	if (!plan->device_keys)
		for (int i = 0; i < plan->nkeys; i++)
			plan->keys[i].dict = false;
	plan->ncols_in = plan->ncols - plan->nexprs;
	/* a key computed on the device is grouped exactly there, or not at all */
	for (int i = 0; i < plan->nkeys; i++)
		if ((plan->keys[i].prog_col >= 0 || plan->keys[i].year_col >= 0) &&
			(!plan->device_keys || plan->keys[i].dict))
			elog(ERROR, "GpuHashAgg: malformed plan");
	for (int i = 0; i < plan->ncols; i++)
		if (plan->cols[i].ops == GH_AGG_OP_COUNT && !plan->cols[i].leaf &&
			plan->cols[i].dexpr < 0)
			plan->cols[i].kind = GH_AGG_KIND_NONE;
}

/*
 * add_expr adds a device expression's result column: prog is its program as
 * the planner wrote it (agg_path.c, devexpr.h's GhDevProgField) over the
 * ninputs input columns of types input_types.  gh_devexpr_load checks it;
 * a condition alone is no aggregate argument.
 */
static void
add_expr(GhAggPlan *plan, List *prog, int ninputs, const Oid *input_types)
{
	GhDevProg  *x = &plan->exprs[plan->nexprs];

	gh_devexpr_load(prog, ninputs, input_types, x);
	if (x->type == BOOLOID)
		elog(ERROR, "GpuHashAgg: malformed device expression");
	for (int o = 0; o < x->nops; o++)
		if (GH_EXPR_READS_INPUT(x->op[o]))
			plan->cols[x->col[o]].leaf = true;
	add_col(plan, NULL, x->type);
	plan->cols[plan->ncols - 1].dexpr = plan->nexprs++;
}

/*
 * gh_agg_plan_node makes the engine's plan for a GpuHashAgg node
 * (agg_exec.c), whose child returns the nkeys GROUP BY keys and then the
 * ncols aggregate arguments, of types key_types and col_types, and whose
 * rows are the keys and then the ncalls aggregates aggs (over input column
 * call_cols[i], -1 for count(*)).  The planner checked every part
 * (gh_agg_call_supported, gpuhash_extended_hash_functions).
 */
GhAggPlan *
gh_agg_plan_node(int nkeys, const Oid *key_types, const Oid *key_colls,
				 const Oid *eqops, int ncols, const Oid *col_types,
				 int ncalls, Aggref **aggs, const int *call_cols, List *exprs,
				 const int *key_cols, const int *key_years)
{
	GhAggPlan  *plan = palloc0(sizeof(GhAggPlan));
	Oid		   *hashfn = palloc(sizeof(Oid) * (nkeys + 1));
	ListCell   *lc;

	plan->sql = "GROUP BY";
	plan->keys = palloc0(sizeof(GhAggKey) * (nkeys + 1));
	plan->cols = palloc0(sizeof(GhAggCol) * (ncols + list_length(exprs) + 1));
	plan->exprs = palloc0(sizeof(GhDevProg) * (list_length(exprs) + 1));
	plan->calls = palloc0(sizeof(GhAggCall) * (ncalls + 1));
	plan->out = palloc0(sizeof(GhAggOut) * (nkeys + ncalls + 1));
	for (int i = 0; i < nkeys; i++)
		hashfn[i] = add_key(plan, NULL, key_types[i], key_colls[i], eqops[i],
							true, i + 1);
	plan_group_keys(plan, hashfn);
	for (int c = 0; c < ncols; c++)
		add_col(plan, NULL, col_types[c]);
	foreach(lc, exprs)
		add_expr(plan, lfirst_node(List, lc), ncols, col_types);
	if (plan->ncols > GH_AGG_MAX_COLS)
		elog(ERROR, "GpuHashAgg: malformed plan");
	/* keys the device computes: a device expression of the key's own type */
	for (int i = 0; key_cols != NULL && i < nkeys; i++)
	{
		int			c = key_cols[i];

		if (c < 0)
			continue;
		if (c < ncols || c >= plan->ncols || plan->cols[c].dexpr < 0 ||
			plan->exprs[plan->cols[c].dexpr].type != key_types[i] ||
			!plan->keys[i].typbyval)
			elog(ERROR, "GpuHashAgg: malformed plan");
		plan->keys[i].prog_col = c;
	}
	/* keys that are the year of an input column, which the device computes */
	for (int i = 0; key_years != NULL && i < nkeys; i++)
	{
		int			c = key_years[i];

		if (c < 0)
			continue;
		if (c >= ncols || key_types[i] != NUMERICOID || plan->keys[i].prog_col >= 0 ||
			(plan->cols[c].vtype != GHV_DATE && plan->cols[c].vtype != GHV_TIMESTAMP))
			elog(ERROR, "GpuHashAgg: malformed plan");
		plan->keys[i].year_col = c;
		plan->cols[c].leaf = true;
	}
	for (int i = 0; i < ncalls; i++)
	{
		const GhAggDef *def = agg_def(aggs[i]->aggfnoid);

		/* count(*) FILTER (WHERE c) counts its input, CASE WHEN c THEN 1 END */
		if (def->func == GHAF_COUNT_STAR && call_cols[i] >= 0)
			def = agg_def(F_COUNT_ANY);
		(void) set_call(plan, def, aggs[i], call_cols[i]);
	}
	for (int i = 0; i < nkeys + ncalls; i++)
	{
		GhAggOut   *out = &plan->out[plan->nout++];

		out->is_key = i < nkeys;
		out->index = i < nkeys ? i : i - nkeys;
		out->type = i < nkeys ? key_types[i] : plan->calls[i - nkeys].result_type;
		out->typmod = -1;
		out->name = psprintf("column%d", i + 1);
	}
	finish_plan(plan);
	return plan;
}

/*
 * add_group_key adds a GROUP BY expression as a hashed and verified key,
 * with the equality of its grouping operator, and returns the extended hash
 * function that hashes it (for plan_group_keys).
 */
static Oid
add_group_key(GhAggPlan *plan, Expr *expr, Oid eqop, bool hashable, int position)
{
	return add_key(plan, expr, exprType((Node *) expr), exprCollation((Node *) expr),
				   eqop, hashable, position);
}

/* add_key is add_group_key for a key of type and collation (expr may be NULL). */
static Oid
add_key(GhAggPlan *plan, Expr *expr, Oid type, Oid collation, Oid eqop,
		bool hashable, int position)
{
	GhAggKey   *key = &plan->keys[plan->nkeys];
	Oid			hash_proc;
	Oid			rhs_proc;

	key->expr = expr;
	key->type = type;
	key->collation = collation;
	key->prog_col = -1;
	key->year_col = -1;
	get_typlenbyval(key->type, &key->typlen, &key->typbyval);
	if (!hashable || !gpuhash_extended_hash_functions(eqop, &hash_proc, &rhs_proc))
		REFUSE_DETAIL(psprintf("GROUP BY expression %d has type %s, which has no hash operator class with an extended hash function.",
							   position, format_type_be(key->type)),
					  "gpuhash_aggregate cannot hash GROUP BY expression %d", position);
	key->eq_kind = gh_key_group_eq_kind(key->type, eqop, key->collation);
	fmgr_info(get_opcode(eqop), &key->eq);
	plan->nkeys++;
	return hash_proc;
}

/*
 * plan_group_keys sets up the hashing of the GROUP BY keys, the plan's
 * first nkeys keys (keys.h): hashfn[i] hashes key i, which is column i + 1
 * of the input query's rows.  No key uses gh_key_int_mix: the groups'
 * hashes stay the keys' hash functions' (integers' computed in line), whose
 * collisions are what the DEBUG1 account counts as colliding keys.
 */
static void
plan_group_keys(GhAggPlan *plan, const Oid *hashfn)
{
	GhKeySet   *keys = &plan->group_keys;
	Oid		   *coll = palloc(sizeof(Oid) * (plan->nkeys + 1));

	gh_key_set_init(keys, plan->nkeys, coll,
					palloc0(sizeof(bool) * (plan->nkeys + 1)));
	for (int i = 0; i < plan->nkeys; i++)
	{
		coll[i] = plan->keys[i].collation;
		gh_key_set_hash(keys, i, hashfn[i], plan->keys[i].type);
		keys->att[i] = i + 1;
	}
}

/*
 * add_carried adds an output expression of the keys that is not a GROUP BY
 * expression: carried along with the representative row, never hashed.
 * Volatile expressions are refused: PostgreSQL evaluates them once per
 * group, we would evaluate them once per row.
 */
static int
add_carried(GhAggPlan *plan, Expr *expr, int position, const char *name)
{
	GhAggKey   *key;

	for (int i = 0; i < plan->nkeys; i++)
		if (plan->keys[i].carried && equal(plan->keys[i].expr, expr))
			return i;
	if (contain_volatile_functions((Node *) expr))
		REFUSE("output column %d (\"%s\") is neither a GROUP BY expression nor an aggregate, and it calls volatile functions",
			   position, name);
	key = &plan->keys[plan->nkeys];
	key->expr = expr;
	key->type = exprType((Node *) expr);
	key->collation = exprCollation((Node *) expr);
	key->prog_col = -1;
	key->year_col = -1;
	get_typlenbyval(key->type, &key->typlen, &key->typbyval);
	key->carried = true;
	return plan->nkeys++;
}

/* col_vtype maps a type to the value type of an input column. */
static GhValType
col_vtype(Oid type)
{
	switch (type)
	{
		case INT2OID:
			return GHV_INT2;
		case INT4OID:
			return GHV_INT4;
		case INT8OID:
			return GHV_INT8;
		case FLOAT4OID:
			return GHV_FLOAT4;
		case FLOAT8OID:
			return GHV_FLOAT8;
		case NUMERICOID:
			return GHV_NUMERIC;
		case DATEOID:
			return GHV_DATE;
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			return GHV_TIMESTAMP;
		default:
			return GHV_OTHER;
	}
}

/* agg_def is the GhAggDef of aggregate function fnoid, NULL if none. */
static const GhAggDef *
agg_def(Oid fnoid)
{
	for (int i = 0; i < lengthof(gh_agg_defs); i++)
		if (gh_agg_defs[i].fnoid == fnoid)
			return &gh_agg_defs[i];
	return NULL;
}

/*
 * gh_agg_call_supported: whether the engine runs aggregate call agg as
 * PostgreSQL would, in one stage (no DISTINCT or ORDER BY, an aggregate of
 * this level, one of gh_agg_defs over its own argument type).  A FILTER is
 * the caller's (agg_path.c makes it its argument's CASE, gh_agg_call_input);
 * gpuhash_aggregate's add_call refuses it.  The planner's test for the
 * GpuHashAgg path; add_call raises the same refusals for gpuhash_aggregate.
 */
bool
gh_agg_call_supported(Aggref *agg)
{
	const GhAggDef *def = agg_def(agg->aggfnoid);

	if (def == NULL || agg->aggdistinct != NIL || agg->aggorder != NIL ||
		agg->aggkind != AGGKIND_NORMAL ||
		agg->agglevelsup != 0 || agg->aggsplit != AGGSPLIT_SIMPLE)
		return false;
	if (def->func == GHAF_COUNT_STAR || def->func == GHAF_COUNT)
		return true;
	if (list_length(agg->args) != 1)
		return false;
	if (def->vtype == GHV_TEXT)
		return text_extreme_ok(agg);
	return col_vtype(exprType((Node *) linitial_node(TargetEntry, agg->args)->expr)) == def->vtype;
}

/*
 * gh_agg_call_host_extreme: whether call agg is a min or max whose extremes
 * the host keeps (text), the leader's work row by row.
 */
bool
gh_agg_call_host_extreme(Aggref *agg)
{
	const GhAggDef *def = agg_def(agg->aggfnoid);

	return def != NULL && def->vtype == GHV_TEXT;
}

/*
 * text_extreme_ok: whether min or max of text call agg is exact here, so
 * that the host may keep it whatever order the rows come in: its collation
 * is deterministic (two values that compare equal have equal bytes).
 */
static bool
text_extreme_ok(Aggref *agg)
{
	Expr	   *arg = linitial_node(TargetEntry, agg->args)->expr;

	return exprType((Node *) arg) == TEXTOID && OidIsValid(agg->inputcollid) &&
		get_collation_isdeterministic(agg->inputcollid);
}

/*
 * gh_agg_call_input is what aggregate call agg reads per row: its argument,
 * NULL for count(*); with a FILTER, CASE WHEN filter THEN argument END
 * (count(*)'s: THEN 1), which count, sum, avg, min and max, all strict,
 * aggregate as PostgreSQL aggregates the filtered rows: a row whose filter
 * is not true gives a NULL, which they skip, and its argument is computed
 * only where the filter is true.
 */
Expr *
gh_agg_call_input(Aggref *agg)
{
	Expr	   *arg = agg->args != NIL ? linitial_node(TargetEntry, agg->args)->expr : NULL;
	CaseExpr   *c;
	CaseWhen   *w;

	if (agg->aggfilter == NULL)
		return arg;
	if (arg == NULL)
		arg = (Expr *) makeConst(INT4OID, -1, InvalidOid, sizeof(int32),
								 Int32GetDatum(1), false, true);
	w = makeNode(CaseWhen);
	w->expr = copyObject(agg->aggfilter);
	w->result = copyObject(arg);
	w->location = -1;
	c = makeNode(CaseExpr);
	c->casetype = exprType((Node *) arg);
	c->casecollid = exprCollation((Node *) arg);
	c->arg = NULL;
	c->args = list_make1(w);
	c->defresult = (Expr *) makeNullConst(c->casetype, exprTypmod((Node *) arg), c->casecollid);
	c->location = -1;
	return (Expr *) c;
}

/*
 * add_call checks one aggregate call and adds it, and its argument as an
 * input column (shared with other calls on the same expression).
 */
static int
add_call(GhAggPlan *plan, Aggref *agg, int position, const char *name)
{
	const GhAggDef *def = NULL;
	Expr	   *arg;
	int			c;

	if (agg->aggdistinct != NIL)
		REFUSE("gpuhash_aggregate does not run DISTINCT inside aggregates (output column %d, \"%s\")",
			   position, name);
	if (agg->aggorder != NIL || agg->aggkind != AGGKIND_NORMAL)
		REFUSE("gpuhash_aggregate does not run ordered aggregates (output column %d, \"%s\")",
			   position, name);
	if (agg->aggfilter != NULL)
		REFUSE("gpuhash_aggregate does not run FILTER clauses (output column %d, \"%s\")",
			   position, name);
	def = agg_def(agg->aggfnoid);
	if (def == NULL || agg->agglevelsup != 0)
		REFUSE_DETAIL(psprintf("Output column %d (\"%s\") calls %s.", position, name,
							   format_procedure(agg->aggfnoid)),
					  "gpuhash_aggregate does not run the aggregate %s",
					  format_procedure(agg->aggfnoid));

	if (def->func == GHAF_COUNT_STAR)
		return set_call(plan, def, agg, -1);

	arg = linitial_node(TargetEntry, agg->args)->expr;
	for (c = 0; c < plan->ncols; c++)
		if (equal(plan->cols[c].expr, arg))
			break;
	if (c == plan->ncols)
	{
		if (plan->ncols == GH_AGG_MAX_COLS)
			REFUSE("gpuhash_aggregate runs aggregates over at most %d distinct arguments",
				   GH_AGG_MAX_COLS);
		add_col(plan, arg, exprType((Node *) arg));
	}
	return set_call(plan, def, agg, c);
}

/* add_col adds an input column of expression expr (may be NULL) and type. */
static void
add_col(GhAggPlan *plan, Expr *expr, Oid type)
{
	GhAggCol   *col = &plan->cols[plan->ncols++];

	col->expr = expr;
	col->type = type;
	col->vtype = col_vtype(type);
	col->dexpr = -1;
	switch (col->vtype)
	{
		case GHV_INT2:
		case GHV_INT4:
		case GHV_INT8:
		case GHV_DATE:
		case GHV_TIMESTAMP:
			col->kind = GH_AGG_KIND_INT;
			break;
		case GHV_FLOAT4:
		case GHV_FLOAT8:
			col->kind = GH_AGG_KIND_FLOAT;
			break;
		case GHV_NUMERIC:
			col->kind = GH_AGG_KIND_NUMERIC;
			break;
		case GHV_OTHER:
		case GHV_TEXT:
			col->kind = GH_AGG_KIND_NONE;
			break;
	}
}

/*
 * set_call adds call agg of aggregate def over input column c (-1 for
 * count(*)), asking that column for what the call needs.
 */
static int
set_call(GhAggPlan *plan, const GhAggDef *def, Aggref *agg, int c)
{
	GhAggCall  *call = &plan->calls[plan->ncalls];

	call->func = def->func;
	call->fnoid = agg->aggfnoid;
	call->result_type = agg->aggtype;
	call->col = c;
	if (c < 0)
		return plan->ncalls++;
	if (def->vtype == GHV_TEXT)
	{
		/*
		 * min or max of text: the column stays of kind NONE (the device
		 * counts its values), its extremes are the host's
		 */
		if (plan->cols[c].type != TEXTOID ||
			(plan->cols[c].vtype == GHV_TEXT && plan->cols[c].collation != agg->inputcollid))
			elog(ERROR, "gpuhash_aggregate: argument of %s has type %s",
				 format_procedure(agg->aggfnoid), format_type_be(plan->cols[c].type));
		if (!text_extreme_ok(agg))
			REFUSE("gpuhash_aggregate does not run %s in a nondeterministic collation",
				   format_procedure(agg->aggfnoid));
		plan->cols[c].vtype = GHV_TEXT;
		plan->cols[c].collation = agg->inputcollid;
	}
	else if (def->func != GHAF_COUNT && plan->cols[c].vtype != def->vtype)
		elog(ERROR, "gpuhash_aggregate: argument of %s has type %s",
			 format_procedure(agg->aggfnoid), format_type_be(plan->cols[c].type));
	plan->cols[c].ops |= GH_AGG_OP_COUNT;
	switch (def->func)
	{
		case GHAF_SUM:
		case GHAF_AVG:
			plan->cols[c].ops |= GH_AGG_OP_SUM;
			break;
		case GHAF_MIN:
			plan->cols[c].ops |= GH_AGG_OP_MIN;
			break;
		case GHAF_MAX:
			plan->cols[c].ops |= GH_AGG_OP_MAX;
			break;
		default:
			break;
	}
	return plan->ncalls++;
}

/* describe_columns: "name type, ..." of the query's result. */
static char *
describe_columns(GhAggPlan *plan)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < plan->nout; i++)
		appendStringInfo(&buf, "%s%s %s", i ? ", " : "",
						 quote_identifier(plan->out[i].name),
						 format_type_be(plan->out[i].type));
	return buf.data;
}

/*
 * check_coldef compares the caller's column definition list with the
 * query's result types, as PostgreSQL compares a function's result row with
 * the one the query expects (same count; each type the same or binary
 * coercible to the declared one), and shows the right list when they differ.
 */
static void
check_coldef(GhAggPlan *plan, TupleDesc expected)
{
	bool		ok = expected->natts == plan->nout;

	for (int i = 0; ok && i < plan->nout; i++)
	{
		Oid			declared = TupleDescAttr(expected, i)->atttypid;

		ok = declared == plan->out[i].type ||
			IsBinaryCoercible(plan->out[i].type, declared);
	}
	if (!ok)
	{
		StringInfoData got;

		initStringInfo(&got);
		for (int i = 0; i < expected->natts; i++)
			appendStringInfo(&got, "%s%s %s", i ? ", " : "",
							 quote_identifier(NameStr(TupleDescAttr(expected, i)->attname)),
							 format_type_be(TupleDescAttr(expected, i)->atttypid));
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column definition list does not match the result of the query given to gpuhash_aggregate"),
				 errdetail("The query returns (%s); the column definition list says (%s).",
						   describe_columns(plan), got.data),
				 errhint("Use AS t(%s).", describe_columns(plan))));
	}
}

/*
 * plan_coercions prepares, for each column whose definition in the caller's
 * list has a type modifier the query's result does not already have (or a
 * binary-compatible type of its own, as varchar for text), the assignment
 * coercion PostgreSQL applies when it stores a value in such a column:
 * varchar(2) and char(1) raise "value too long", numeric(3,1) rounds or
 * raises "numeric field overflow".  A record-returning function's rows
 * then never hold a value its declared column type could not.
 */
static void
plan_coercions(GhAggPlan *plan, TupleDesc expected)
{
	plan->coerce = NULL;
	for (int i = 0; i < plan->nout; i++)
	{
		Form_pg_attribute att = TupleDescAttr(expected, i);
		CaseTestExpr *in;
		Node	   *expr;

		if (att->atttypid == plan->out[i].type &&
			(att->atttypmod < 0 || att->atttypmod == plan->out[i].typmod))
			continue;
		in = makeNode(CaseTestExpr);
		in->typeId = plan->out[i].type;
		in->typeMod = plan->out[i].typmod;
		in->collation = att->attcollation;
		expr = coerce_to_target_type(NULL, (Node *) in, in->typeId,
									 att->atttypid, att->atttypmod,
									 COERCION_ASSIGNMENT, COERCE_IMPLICIT_CAST, -1);
		if (expr == NULL)
			elog(ERROR, "no coercion from %s to %s",
				 format_type_be(in->typeId), format_type_be(att->atttypid));
		/* a relabelling alone changes nothing in the value */
		while (IsA(expr, RelabelType))
			expr = (Node *) ((RelabelType *) expr)->arg;
		if (IsA(expr, CaseTestExpr))
			continue;
		if (plan->coerce == NULL)
		{
			plan->coerce = palloc0(sizeof(ExprState *) * plan->nout);
			plan->coerce_cxt = CreateStandaloneExprContext();
		}
		plan->coerce[i] = ExecInitExpr((Expr *) expr, NULL);
	}
}

/*
 * dest_receive hands one row of the input query to the run, or, when
 * parallel workers pack the rows, one packet of rows.
 */
static bool
dest_receive(TupleTableSlot *slot, DestReceiver *self)
{
	GhAggDest  *dest = (GhAggDest *) self;

	if (dest->packed)
		gh_agg_run_add_packet_slot(dest->run, slot, "gpuhash_aggregate");
	else
		gh_agg_run_add(dest->run, slot);
	return true;
}

/* dest_startup and the others do nothing: the run outlives the executor. */
static void
dest_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
}

static void
dest_shutdown(DestReceiver *self)
{
}

static void
dest_destroy(DestReceiver *self)
{
}

/*
 * run_input plans the input query and runs it to completion with the
 * executor, read-only, every row going to run.
 */
static void
run_input(GhAggPlan *plan, GhAggRun *run)
{
	GhAggDest	dest;
	PlannedStmt *pstmt;
	QueryDesc  *qd;
	int			nestlevel;
	instr_time	t0;

	memset(&dest, 0, sizeof(dest));
	dest.pub.receiveSlot = dest_receive;
	dest.pub.rStartup = dest_startup;
	dest.pub.rShutdown = dest_shutdown;
	dest.pub.rDestroy = dest_destroy;
	dest.pub.mydest = DestNone;
	dest.run = run;

	nestlevel = NewGUCNestLevel();
	(void) set_config_option("transaction_read_only", "on",
							 PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);

	/*
	 * Rows that workers pack cross the Gather a packet of thousands at a
	 * time, so the planner's per-row charge for the Gather does not apply;
	 * with it, a plan that returns every row of a large scan is never
	 * parallel.
	 */
	if (gh_agg_can_pack(plan))
		(void) set_config_option("parallel_tuple_cost", "0",
								 PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	pstmt = pg_plan_query(plan->input, plan->sql, CURSOR_OPT_PARALLEL_OK, NULL);
	dest.packed = gh_agg_try_pack(plan, pstmt);
	/* the groups of every participant's rows: their budgets together */
	if (IsA(pstmt->planTree, Gather))
		gh_agg_spill_share(run, ((Gather *) pstmt->planTree)->num_workers + 1);

	/*
	 * With packets, the leader's job is to drain the workers' queues: a
	 * leader busy filling a packet of its own leaves them full and the
	 * workers waiting.
	 */
	if (dest.packed)
		(void) set_config_option("parallel_leader_participation", "off",
								 PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	qd = CreateQueryDesc(pstmt, plan->sql, GetActiveSnapshot(), InvalidSnapshot,
						 (DestReceiver *) &dest, NULL, NULL, 0);
	INSTR_TIME_SET_CURRENT(t0);
	ExecutorStart(qd, 0);
	ExecutorRun(qd, ForwardScanDirection, 0, true);
	gh_agg_run_note_input(run, qd->planstate, gh_ms_since(t0));
	ExecutorFinish(qd);
	ExecutorEnd(qd);
	FreeQueryDesc(qd);

	AtEOXact_GUC(true, nestlevel);
}
