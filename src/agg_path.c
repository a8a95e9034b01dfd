/*-------------------------------------------------------------------------
 * agg_path.c
 *	  GpuHashAgg's reading of the query: whether the engine of
 *	  gpuhash_aggregate runs a grouping stage, with which input row, and the
 *	  device expressions compiled from its arguments, keys and quals.
 *
 * gha_check_query, which the path hook of agg_plan.c calls for the grouping
 * stage (UPPERREL_GROUP_AGG) of a query with no grouping sets, takes it
 * when
 *	  - every GROUP BY clause is hashable with an extended (64-bit) hash
 *		function in its operator's family, as the engine hashes keys;
 *	  - every aggregate call of the target list and HAVING is one the engine
 *		runs as PostgreSQL does (gh_agg_call_supported: count, sum, avg, min,
 *		max over int2/4/8, float4/8 and numeric; min and max over date,
 *		timestamp, timestamptz, and text in a deterministic collation (its
 *		extremes kept on the host, aggregate_numeric.c); no DISTINCT or
 *		ORDER BY; a FILTER becomes the argument's CASE, gh_agg_call_input),
 *		over at most GH_AGG_MAX_COLS distinct arguments;
 *	  - the target list and HAVING refer to the input only through the GROUP
 *		BY expressions, those aggregate calls and columns that depend on a
 *		grouped primary key, which become keys too (add_dependent_keys).
 * It then decides the engine's input row, the GROUP BY keys and then the
 * distinct aggregate arguments, and compiles into device expressions
 * (compile_args, compile_key) the arguments and keys that the device can
 * compute from columns and constants: the child then returns the
 * programs' inputs instead, and the device computes every row's value.
 *
 * Device filters: gha_device_quals says whether the device can evaluate
 * the quals of the input's sequential scan instead of the scan.  With
 * them, each call reads its argument where the quals and its own FILTER
 * hold (gha_call_input), and a hidden count of the rows that pass
 * (filter_count) joins the calls, so that the node can drop the groups of
 * none.
 *
 * Nothing here makes a path or a plan: agg_plan.c does, from GhaQuery
 * (gpuhash_agg.h).  agg_exec.c calls gha_call_input to show, in EXPLAIN,
 * what a call's device expression computes.
 *
 * Device expressions: the language, its compiler and its host fallback are
 * devexpr.c's.  This file decides what the aggregate asks of it: which
 * arguments and GROUP BY keys become programs over the child's columns
 * (compile_args, compile_key), which scan quals the device evaluates
 * (gha_device_quals), and what the child returns in a computed key's place
 * (gha_key_placeholder).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/stratnum.h"
#include "catalog/pg_aggregate_d.h"
#include "catalog/pg_am_d.h"
#include "commands/defrem.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "aggregate.h"
#include "devexpr.h"
#include "gpuhash_agg.h"
#include "keys.h"

static void compile_args(GhaQuery *q, List *arg_calls, bool device);
static int	compile_key(GhaQuery *q, Expr *key, int *year);

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
 * gha_call_input is what aggregate call agg reads per row (gh_agg_call_input)
 * when the device evaluates the scan's quals (gha_device_quals; NIL: none):
 * its argument where they and its own FILTER hold, the quals first, as
 * PostgreSQL evaluates them first.
 */
Expr *
gha_call_input(Aggref *agg, List *quals)
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
 * gha_check_query fills q from the query's GROUP BY and the grouping target and
 * HAVING of its grouping stage; false where GpuHashAgg cannot run it.  With
 * quals (gha_device_quals), every call reads its argument where they hold, and
 * the hidden filter_count joins the calls.
 */
bool
gha_check_query(PlannerInfo *root, PathTarget *target, List *having, GhaQuery *q,
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
			gh_agg_call_input(agg) : gha_call_input(agg, quals);

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
 * gha_key_placeholder is what the child returns in the place of a key the
 * device computes (key_cols[i] or key_years[i] >= 0): the first input its
 * program reads, or the input whose year it is, a column the child returns
 * anyway.  Its value is never used (the device
 * overwrites the key), but a Gather passes a column through where it would
 * evaluate a constant, and the workers can then pack the rows.
 */
Expr *
gha_key_placeholder(GhaQuery *q, int i)
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
 * gha_device_quals returns the quals of rel's scan that the device can evaluate
 * in GpuHashAgg instead (the scan then passes every row; each call reads
 * its argument where they hold, gha_call_input), or NIL: rel is a table, its
 * quals are neither security quals nor volatile, and gh_devexpr_compile_cond
 * takes their AND with no op that may raise an error (gh_devexpr_may_raise:
 * PostgreSQL
 * orders the quals by cost and stops at the first false one, so a qual's
 * error may not be its).  The GROUP BY keys, which are computed for every
 * row and so for rows the quals would have removed, are columns or the
 * year of one (no error).
 */
List *
gha_device_quals(RelOptInfo *rel, GhaQuery *q)
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
 * gha_all_on_device: whether the device computes every call's argument of q
 * (an expression column, past the inputs), so that with q->quals the child
 * computes none of them, and so none of the quals, per row.
 */
bool
gha_all_on_device(GhaQuery *q)
{
	ListCell   *lc;

	if (list_length(q->inputs) + list_length(q->exprs) > GH_AGG_MAX_COLS)
		return false;
	foreach(lc, q->call_cols)
		if (lfirst_int(lc) < list_length(q->inputs))
			return false;
	return true;
}

