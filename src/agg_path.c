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
#include "gpuhash_agg.h"
#include "keys.h"

static void compile_args(GhaQuery *q, List *arg_calls, bool device);
static int	compile_key(GhaQuery *q, Expr *key, int *year);
static Expr *extract_year_arg(Node *n);

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
static bool prog_reads_numeric(List *prog);
static bool compile_cond(Node *n, List **prog, List **inputs, int *depth, int level);

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
 * NUMERIC where they read a NUMERIC (prog_reads_numeric).
 */
static Expr *
count_arg(List *quals)
{
	List	   *prog = NIL;
	List	   *inputs = NIL;
	int			depth = 0;

	(void) compile_cond((Node *) make_ands_explicit(quals), &prog, &inputs, &depth, 0);
	if (prog_reads_numeric(prog))
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

/* input_col returns expr's index in *inputs, adding it there if it is new. */
static int
input_col(List **inputs, Expr *expr)
{
	int			i = 0;
	ListCell   *lc;

	foreach(lc, *inputs)
	{
		if (equal(lfirst(lc), expr))
			return i;
		i++;
	}
	*inputs = lappend(*inputs, expr);
	return i;
}

static bool compile_num(Node *n, List **prog, List **inputs, int *depth,
						int level, bool lazy);
static bool compile_case(CaseExpr *c, List **prog, List **inputs, int *depth,
						 int level, bool numeric);
static bool compile_int(Node *n, List **prog, List **inputs, int *depth, int level);

static int	input_col(List **inputs, Expr *expr);
static bool emit(List **prog, int op, int *depth, int pops);

/* emit_checked counts the push of the op just appended to *prog. */
static bool
emit_checked(List **prog, int *depth)
{
	return ++(*depth) <= GH_EXPR_STACK && list_length(*prog) <= GH_EXPR_MAX_OPS;
}

/* emit_input appends op (COL, COLI, COLF) pushing input column expr. */
static bool
emit_input(List **prog, int op, List **inputs, Node *expr, int *depth)
{
	*prog = lappend(*prog, list_make2(makeInteger(op),
									  makeInteger(input_col(inputs, (Expr *) expr))));
	return emit_checked(prog, depth);
}

/*
 * emit_float_const appends op (FCONST, FKCONST) pushing float4 or float8
 * constant k as a double (a float4's exactly), or a NULL.
 */
static bool
emit_float_const(List **prog, int op, Const *k, int *depth)
{
	double		v;

	if (k->constisnull)
		return emit(prog, GH_EXPR_NULLV, depth, 0);
	v = k->consttype == FLOAT4OID ? (double) DatumGetFloat4(k->constvalue) :
		DatumGetFloat8(k->constvalue);
	*prog = lappend(*prog, list_make2(makeInteger(op),
									  makeConst(FLOAT8OID, -1, InvalidOid, 8,
												Float8GetDatum(v), false, true)));
	return emit_checked(prog, depth);
}

/* emit appends op (argument 0) to *prog, which pops pops and pushes one. */
static bool
emit(List **prog, int op, int *depth, int pops)
{
	*prog = lappend(*prog, list_make2(makeInteger(op), makeInteger(0)));
	*depth -= pops - 1;
	return list_length(*prog) <= GH_EXPR_MAX_OPS && *depth <= GH_EXPR_STACK;
}

/* emit_sized is emit for an op whose argument is a width in bytes. */
static bool
emit_sized(List **prog, int op, int *depth, int pops, int bytes)
{
	if (!emit(prog, op, depth, pops))
		return false;
	lsecond((List *) llast(*prog)) = makeInteger(bytes);
	return true;
}

/*
 * value_kind is how a program takes values of type t: 'n' NUMERIC, 'i' an
 * integer, 'd' a date or timestamp (both as their int64 values), 'f' a
 * float (in conditions, as its order key); 0 none.
 */
static int
value_kind(Oid t)
{
	if (t == NUMERICOID)
		return 'n';
	if (t == FLOAT4OID || t == FLOAT8OID)
		return 'f';
	if (t == INT2OID || t == INT4OID || t == INT8OID)
		return 'i';
	if (t == DATEOID || t == TIMESTAMPOID || t == TIMESTAMPTZOID)
		return 'd';
	return 0;
}

/*
 * cmp_op is the comparison op of operator opno between values of left
 * type t: its strategy in t's default btree family (integer_ops,
 * numeric_ops, datetime_ops), or the negator of that family's "=" for <>;
 * 0 where it is neither.
 */
static int
cmp_op(Oid opno, Oid t)
{
	static const int ops[] = {0, GH_EXPR_LT, GH_EXPR_LE, GH_EXPR_EQ, GH_EXPR_GE, GH_EXPR_GT};
	Oid			opclass = GetDefaultOpClass(t, BTREE_AM_OID);
	Oid			family;
	int			strategy;
	Oid			neg;

	if (!OidIsValid(opclass))
		return 0;
	family = get_opclass_family(opclass);
	strategy = get_op_opfamily_strategy(opno, family);
	if (strategy >= BTLessStrategyNumber && strategy <= BTGreaterStrategyNumber)
		return ops[strategy];
	neg = get_negator(opno);
	if (OidIsValid(neg) &&
		get_op_opfamily_strategy(neg, family) == BTEqualStrategyNumber)
		return GH_EXPR_NE;
	return 0;
}

/*
 * int_op is the program's op for integer arithmetic function f (the
 * functions of +, -, * and / between int2, int4 and int8, of % of one type,
 * and of unary -), 0 for any other.
 */
static int
int_op(Oid f)
{
	switch (f)
	{
		case F_INT2PL:
		case F_INT4PL:
		case F_INT8PL:
		case F_INT24PL:
		case F_INT42PL:
		case F_INT28PL:
		case F_INT82PL:
		case F_INT48PL:
		case F_INT84PL:
			return GH_EXPR_IADD;
		case F_INT2MI:
		case F_INT4MI:
		case F_INT8MI:
		case F_INT24MI:
		case F_INT42MI:
		case F_INT28MI:
		case F_INT82MI:
		case F_INT48MI:
		case F_INT84MI:
			return GH_EXPR_ISUB;
		case F_INT2MUL:
		case F_INT4MUL:
		case F_INT8MUL:
		case F_INT24MUL:
		case F_INT42MUL:
		case F_INT28MUL:
		case F_INT82MUL:
		case F_INT48MUL:
		case F_INT84MUL:
			return GH_EXPR_IMUL;
		case F_INT2UM:
		case F_INT4UM:
		case F_INT8UM:
			return GH_EXPR_INEG;
		case F_INT2DIV:
		case F_INT4DIV:
		case F_INT8DIV:
		case F_INT24DIV:
		case F_INT42DIV:
		case F_INT28DIV:
		case F_INT82DIV:
		case F_INT48DIV:
		case F_INT84DIV:
			return GH_EXPR_IDIV;
		case F_INT2MOD:
		case F_INT4MOD:
		case F_INT8MOD:
			return GH_EXPR_IMOD;
		case F_DATE_MI:
			return GH_EXPR_DDIFF;
		case F_DATE_PLI:
			return GH_EXPR_DADDI;
		case F_DATE_MII:
			return GH_EXPR_DSUBI;
		default:
			return 0;
	}
}

/*
 * extract_year_arg is x where n is extract(year from x), x a date or a
 * timestamp (not timestamptz, whose year depends on the session's time
 * zone); NULL otherwise.
 */
static Expr *
extract_year_arg(Node *n)
{
	FuncExpr   *f = (FuncExpr *) n;
	Node	   *field;

	if (!IsA(n, FuncExpr) || list_length(f->args) != 2 ||
		(f->funcid != F_EXTRACT_TEXT_DATE && f->funcid != F_EXTRACT_TEXT_TIMESTAMP))
		return NULL;
	field = linitial(f->args);
	if (!IsA(field, Const) || ((Const *) field)->constisnull ||
		pg_strcasecmp(TextDatumGetCString(((Const *) field)->constvalue), "year") != 0)
		return NULL;
	return lsecond(f->args);
}

/*
 * compile_int appends an integer, date or timestamp value: a column (an
 * input the engine packs as int64, pushed by COLI), a constant (as the
 * NUMERIC of its int64 value, which COLI's values compare with exactly), a
 * NULL constant, or, for integers, integer arithmetic (int_op: exact, then
 * checked against the range of the operator's result type, whose overflow
 * and division by zero the host raises as PostgreSQL does), a widening cast (int4(int2),
 * int8(int2), int8(int4)), a narrowing one (checked, as the arithmetic) and
 * a searched CASE of integer results.  Only
 * columns and constants are inputs, so nothing here is computed where
 * PostgreSQL would not.  level is the tree's depth at n.
 */
static bool
compile_int(Node *n, List **prog, List **inputs, int *depth, int level)
{
	if (level > GH_EXPR_MAX_OPS)
		return false;
	if (IsA(n, OpExpr) && value_kind(exprType(n)) != 0 && value_kind(exprType(n)) != 'n')
	{
		OpExpr	   *e = (OpExpr *) n;
		Oid			t = e->opresulttype;
		int			op;
		ListCell   *lc;

		set_opfuncid(e);
		op = int_op(e->opfuncid);
		if (op == 0 || list_length(e->args) != (op == GH_EXPR_INEG ? 1 : 2))
			return false;
		foreach(lc, e->args)
		{
			/* integers, but a date_mi's two dates and a date_pli's first */
			bool		date = op == GH_EXPR_DDIFF ||
				((op == GH_EXPR_DADDI || op == GH_EXPR_DSUBI) &&
				 foreach_current_index(lc) == 0);

			if (exprType(lfirst(lc)) != (date ? DATEOID : exprType(lfirst(lc))) ||
				value_kind(exprType(lfirst(lc))) != (date ? 'd' : 'i') ||
				!compile_int(lfirst(lc), prog, inputs, depth, level + 1))
				return false;
		}
		return emit_sized(prog, op, depth, op == GH_EXPR_INEG ? 1 : 2,
						  t == INT2OID ? 2 : t == INT4OID ? 4 : 8);
	}
	if (IsA(n, FuncExpr) && list_length(((FuncExpr *) n)->args) == 1 &&
		(((FuncExpr *) n)->funcid == F_INT4_INT2 ||
		 ((FuncExpr *) n)->funcid == F_INT8_INT2 ||
		 ((FuncExpr *) n)->funcid == F_INT8_INT4))
		return compile_int(linitial(((FuncExpr *) n)->args), prog, inputs, depth, level + 1);

	/*
	 * int4(int8), int2(int8), int2(int4): the value plus 0, checked against
	 * the narrower type's range as int84, int82 and int42 check it, with
	 * their "integer/smallint out of range"
	 */
	if (IsA(n, FuncExpr) && list_length(((FuncExpr *) n)->args) == 1 &&
		(((FuncExpr *) n)->funcid == F_INT4_INT8 ||
		 ((FuncExpr *) n)->funcid == F_INT2_INT8 ||
		 ((FuncExpr *) n)->funcid == F_INT2_INT4))
	{
		if (!compile_int(linitial(((FuncExpr *) n)->args), prog, inputs, depth, level + 1) ||
			!compile_int((Node *) makeConst(INT4OID, -1, InvalidOid, sizeof(int32),
											Int32GetDatum(0), false, true),
						 prog, inputs, depth, level + 1))
			return false;
		return emit_sized(prog, GH_EXPR_IADD, depth, 2,
						  ((FuncExpr *) n)->funcid == F_INT4_INT8 ? 4 : 2);
	}
	if (IsA(n, CaseExpr) && (value_kind(exprType(n)) == 'i' || exprType(n) == DATEOID))
		return compile_case((CaseExpr *) n, prog, inputs, depth, level, false);
	if (IsA(n, Const))
	{
		Const	   *k = (Const *) n;
		int64		v;
		Datum		num;
		int64		m;
		int			ds;

		if (k->constisnull)
			return emit(prog, GH_EXPR_NULLV, depth, 0);

		v = k->consttype == INT2OID ? DatumGetInt16(k->constvalue) :
			k->consttype == INT4OID || k->consttype == DATEOID ?
			DatumGetInt32(k->constvalue) : DatumGetInt64(k->constvalue);
		num = NumericGetDatum(int64_to_numeric(v));
		/* a constant of 19 digits (an infinite timestamp) is not fixed point */
		if (gh_agg_num_decode(num, &m, &ds) != GH_NUMV_FINITE)
			return false;
		*prog = lappend(*prog, list_make2(makeInteger(GH_EXPR_CONST),
										  makeConst(NUMERICOID, -1, InvalidOid, -1,
													num, false, false)));
		return emit_checked(prog, depth);
	}
	if (!IsA(n, Var))
		return false;
	return emit_input(prog, GH_EXPR_COLI, inputs, n, depth);
}

/*
 * compile_fkey appends a float4 or float8 value for a condition, as its
 * order key (gh_agg_float_cmp_key: PostgreSQL's float comparison as an
 * integer's): a column, float8(float4) of one (exact), a constant or a NULL.
 */
static bool
compile_fkey(Node *n, List **prog, List **inputs, int *depth)
{
	if (IsA(n, FuncExpr) && ((FuncExpr *) n)->funcid == F_FLOAT8_FLOAT4 &&
		list_length(((FuncExpr *) n)->args) == 1)
		n = linitial(((FuncExpr *) n)->args);
	if (value_kind(exprType(n)) != 'f')
		return false;
	if (IsA(n, Const))
		return emit_float_const(prog, GH_EXPR_FKCONST, (Const *) n, depth);
	if (!IsA(n, Var))
		return false;
	return emit_input(prog, GH_EXPR_COLFK, inputs, n, depth);
}

/*
 * prog_reads_numeric: whether prog reads or computes a NUMERIC (a column,
 * arithmetic, a year), which only a NUMERIC program does: an integer
 * program never leaves a row to the host but to raise an error, while a
 * NUMERIC's NULL, wide or host-held rows are the host's to compute
 * (aggregate.c's add_expr refuses such an integer program).
 */
static bool
prog_reads_numeric(List *prog)
{
	ListCell   *lp;

	foreach(lp, prog)
	{
		int			op = intVal(linitial((List *) lfirst(lp)));

		if (op == GH_EXPR_COL || op == GH_EXPR_ADD || op == GH_EXPR_SUB ||
			op == GH_EXPR_MUL || op == GH_EXPR_NEG || op == GH_EXPR_YEAR)
			return true;
	}
	return false;
}

/*
 * prog_may_raise: whether an op of prog from its op from on may leave a row
 * to the host to raise PostgreSQL's error (integer and date arithmetic out
 * of range, a zero divisor).  NUMERIC arithmetic raises none (a value past
 * the device's 128 bits is computed on the host), nor do the conditions'
 * floats, which are columns and constants.
 */
static bool
prog_may_raise(List *prog, int from)
{
	ListCell   *lp;

	for_each_from(lp, prog, from)
	{
		int			op = intVal(linitial((List *) lfirst(lp)));

		if (op >= GH_EXPR_IADD && op <= GH_EXPR_DSUBI)
			return true;
	}
	return false;
}

/*
 * compile_date_vs_stamp appends comparison e of a date (a column or date
 * arithmetic, compile_int) with a finite timestamp constant, on either
 * side, as a comparison of dates: date_lt_timestamp and its kin compare
 * the date's midnight with the timestamp (a date past the timestamps'
 * range as past every finite one, an infinite one as the infinity), so
 * against the constant's day t (its date, rounded down) d < c and d <= c
 * are d <= t, d > c and d >= c are d > t, unless c is that midnight, when
 * each keeps its operator.  Where c is not a midnight, = and <> do not
 * compile.
 */
static bool
compile_date_vs_stamp(OpExpr *e, List **prog, List **inputs, int *depth, int level)
{
	bool		date_left = exprType(linitial(e->args)) == DATEOID;
	Node	   *d = date_left ? linitial(e->args) : lsecond(e->args);
	Node	   *c = date_left ? lsecond(e->args) : linitial(e->args);
	int			op;
	Timestamp	t;
	int64		day;

	if (exprType(d) != DATEOID || exprType(c) != TIMESTAMPOID || !IsA(c, Const) ||
		((Const *) c)->constisnull)
		return false;
	t = DatumGetTimestamp(((Const *) c)->constvalue);
	if (TIMESTAMP_NOT_FINITE(t))
		return false;
	op = cmp_op(e->opno, exprType(linitial(e->args)));
	if (op == 0)
		return false;
	if (!date_left)				/* c op d is d op' c */
		op = op == GH_EXPR_LT ? GH_EXPR_GT : op == GH_EXPR_LE ? GH_EXPR_GE :
			op == GH_EXPR_GT ? GH_EXPR_LT : op == GH_EXPR_GE ? GH_EXPR_LE : op;
	day = t / USECS_PER_DAY;
	if (day * USECS_PER_DAY > t)
		day--;					/* rounded down */
	if (day * USECS_PER_DAY != t)
	{
		if (op == GH_EXPR_EQ || op == GH_EXPR_NE)
			return false;
		op = op == GH_EXPR_LT || op == GH_EXPR_LE ? GH_EXPR_LE : GH_EXPR_GT;
	}
	return compile_int(d, prog, inputs, depth, level + 1) &&
		compile_int((Node *) makeConst(DATEOID, -1, InvalidOid, sizeof(DateADT),
									   DateADTGetDatum((DateADT) day), false, true),
					prog, inputs, depth, level + 1) &&
		emit(prog, op, depth, 2);
}

/*
 * compile_cond appends the program of boolean expression n: a comparison
 * (< <= = <> >= > of the types' btree family) of two NUMERICs, whose sides
 * compile_num takes, of two integers, or of two dates or timestamps of one
 * type, whose sides are columns or constants (compile_int), of two floats
 * (compile_fkey); IS [NOT] NULL
 * of such a value; AND, OR and NOT of such conditions, where only an AND's
 * or OR's first argument may raise an error (prog_may_raise).  Anything
 * else does not compile (false): the whole argument is then the child's.
 */
static bool
compile_cond(Node *n, List **prog, List **inputs, int *depth, int level)
{
	if (level > GH_EXPR_MAX_OPS)
		return false;
	if (IsA(n, OpExpr) && list_length(((OpExpr *) n)->args) == 2)
	{
		OpExpr	   *e = (OpExpr *) n;
		Oid			lt = exprType(linitial(e->args));
		Oid			rt = exprType(lsecond(e->args));
		int			kl = value_kind(lt);
		int			op;

		/* a date against a timestamp constant (TPC-H: d <= date - interval) */
		if (kl == 'd' && lt != rt && kl == value_kind(rt))
			return compile_date_vs_stamp(e, prog, inputs, depth, level);
		/* the same kind on both sides, and the same type for dates and times */
		if (kl == 0 || kl != value_kind(rt) || (kl == 'd' && lt != rt))
			return false;
		op = cmp_op(e->opno, lt);
		if (op == 0)
			return false;
		if (kl == 'n')
			return compile_num(linitial(e->args), prog, inputs, depth, level + 1, true) &&
				compile_num(lsecond(e->args), prog, inputs, depth, level + 1, true) &&
				emit(prog, op, depth, 2);
		if (kl == 'f')
			return compile_fkey(linitial(e->args), prog, inputs, depth) &&
				compile_fkey(lsecond(e->args), prog, inputs, depth) &&
				emit(prog, op, depth, 2);
		return compile_int(linitial(e->args), prog, inputs, depth, level + 1) &&
			compile_int(lsecond(e->args), prog, inputs, depth, level + 1) &&
			emit(prog, op, depth, 2);
	}
	if (IsA(n, NullTest) && !((NullTest *) n)->argisrow &&
		value_kind(exprType((Node *) ((NullTest *) n)->arg)) != 0)
	{
		NullTest   *t = (NullTest *) n;
		Node	   *arg = (Node *) t->arg;

		return (value_kind(exprType(arg)) == 'n' ?
				compile_num(arg, prog, inputs, depth, level + 1, true) :
				value_kind(exprType(arg)) == 'f' ?
				compile_fkey(arg, prog, inputs, depth) :
				compile_int(arg, prog, inputs, depth, level + 1)) &&
			emit(prog, t->nulltesttype == IS_NULL ? GH_EXPR_ISNULL : GH_EXPR_NOTNULL,
				 depth, 1);
	}
	if (IsA(n, BoolExpr))
	{
		BoolExpr   *b = (BoolExpr *) n;
		int			op = b->boolop == AND_EXPR ? GH_EXPR_AND :
			b->boolop == OR_EXPR ? GH_EXPR_OR : GH_EXPR_NOT;
		ListCell   *lc;

		foreach(lc, b->args)
		{
			int			start = list_length(*prog);

			if (!compile_cond(lfirst(lc), prog, inputs, depth, level + 1))
				return false;

			/*
			 * PostgreSQL stops at the first false argument of an AND (true
			 * of an OR); the device computes them all.  An argument after
			 * the first may then raise no error of its own.
			 */
			if (foreach_current_index(lc) > 0 && prog_may_raise(*prog, start))
				return false;
			/* AND and OR fold each further argument into the first */
			if (op == GH_EXPR_NOT || foreach_current_index(lc) > 0)
				if (!emit(prog, op, depth, op == GH_EXPR_NOT ? 1 : 2))
					return false;
		}
		return true;
	}
	return false;
}

/*
 * compile_num appends to *prog the postfix program of NUMERIC expression n
 * (cuda/gh_aggregate.h): numeric_add, numeric_sub, numeric_mul,
 * numeric_uminus and numeric_uplus over constants that are fixed point, a
 * searched CASE whose conditions compile_cond takes (a missing ELSE is a
 * NULL), and any other subexpression as an input column (*inputs), which
 * the child computes on the CPU for every row: within a CASE (lazy) only a
 * column, a constant or a parameter, which raise no error where PostgreSQL
 * would not have computed them.  *depth is the stack depth after it, level
 * the tree's depth at n; returns false past the device's limits on ops and
 * depth.
 */
static bool
compile_num(Node *n, List **prog, List **inputs, int *depth, int level,
			bool lazy)
{
	int			op = 0;
	Expr	   *year_of;

	/* a tree deeper than a program's ops cannot compile: stop descending */
	if (level > GH_EXPR_MAX_OPS)
		return false;

	if (IsA(n, OpExpr))
	{
		OpExpr	   *e = (OpExpr *) n;
		Oid			f;

		set_opfuncid(e);
		f = e->opfuncid;
		if (list_length(e->args) == 2)
			op = f == F_NUMERIC_ADD ? GH_EXPR_ADD : f == F_NUMERIC_SUB ? GH_EXPR_SUB :
				f == F_NUMERIC_MUL ? GH_EXPR_MUL : 0;
		else if (list_length(e->args) == 1 && f == F_NUMERIC_UMINUS)
			op = GH_EXPR_NEG;
		else if (list_length(e->args) == 1 && f == F_NUMERIC_UPLUS)
			return compile_num(linitial(e->args), prog, inputs, depth, level + 1, lazy);
		if (op != 0)
		{
			ListCell   *lc;

			foreach(lc, e->args)
				if (!compile_num(lfirst(lc), prog, inputs, depth, level + 1, lazy))
					return false;
			return emit(prog, op, depth, op == GH_EXPR_NEG ? 1 : 2);
		}
	}
	if (IsA(n, CaseExpr) && ((CaseExpr *) n)->casetype == NUMERICOID)
		return compile_case((CaseExpr *) n, prog, inputs, depth, level, true);
	/*
	 * extract(year from a date or timestamp): its day's year, as
	 * extract_date and extract_timestamp give it
	 */
	year_of = extract_year_arg(n);
	if (year_of != NULL)
		return compile_int((Node *) year_of, prog, inputs, depth, level + 1) &&
			emit_sized(prog, GH_EXPR_YEAR, depth, 1,
					   exprType((Node *) year_of) == DATEOID ? 4 : 8);
	/* extract of another field: neither on the device nor an input */
	if (IsA(n, FuncExpr) && (((FuncExpr *) n)->funcid == F_EXTRACT_TEXT_DATE ||
							 ((FuncExpr *) n)->funcid == F_EXTRACT_TEXT_TIMESTAMP))
		return false;
	/* numeric(int2/int4/int8): the integer's value at scale 0, exactly */
	if (IsA(n, FuncExpr) && list_length(((FuncExpr *) n)->args) == 1 &&
		(((FuncExpr *) n)->funcid == F_NUMERIC_INT2 ||
		 ((FuncExpr *) n)->funcid == F_NUMERIC_INT4 ||
		 ((FuncExpr *) n)->funcid == F_NUMERIC_INT8) &&
		compile_int(linitial(((FuncExpr *) n)->args), prog, inputs, depth, level + 1))
		return true;
	if (IsA(n, Const) && ((Const *) n)->consttype == NUMERICOID &&
		((Const *) n)->constisnull)
		return emit(prog, GH_EXPR_NULLV, depth, 0);
	if (IsA(n, Const) && ((Const *) n)->consttype == NUMERICOID)
	{
		int64		m;
		int			ds;

		if (gh_agg_num_decode(((Const *) n)->constvalue, &m, &ds) == GH_NUMV_FINITE)
		{
			*prog = lappend(*prog, list_make2(makeInteger(GH_EXPR_CONST), copyObject(n)));
			return emit_checked(prog, depth);
		}
	}
	if (exprType(n) != NUMERICOID)
		return false;

	/*
	 * The child computes an input column for every row; under a CASE or a
	 * condition PostgreSQL computes it only where the branch is taken (CASE
	 * WHEN d <> 0 THEN n / d ...), so there only what cannot raise an
	 * error may be an input: a column, a constant, a parameter
	 */
	if (lazy && !IsA(n, Var) && !IsA(n, Const) && !IsA(n, Param))
		return false;
	return emit_input(prog, GH_EXPR_COL, inputs, n, depth);
}

/*
 * float_op is the program's op for float arithmetic function f (+, -, *, /
 * between float4 and float8, unary -), 0 for any other.
 */
static int
float_op(Oid f)
{
	switch (f)
	{
		case F_FLOAT4PL:
		case F_FLOAT8PL:
		case F_FLOAT48PL:
		case F_FLOAT84PL:
			return GH_EXPR_FADD;
		case F_FLOAT4MI:
		case F_FLOAT8MI:
		case F_FLOAT48MI:
		case F_FLOAT84MI:
			return GH_EXPR_FSUB;
		case F_FLOAT4MUL:
		case F_FLOAT8MUL:
		case F_FLOAT48MUL:
		case F_FLOAT84MUL:
			return GH_EXPR_FMUL;
		case F_FLOAT4DIV:
		case F_FLOAT8DIV:
		case F_FLOAT48DIV:
		case F_FLOAT84DIV:
			return GH_EXPR_FDIV;
		case F_FLOAT4UM:
		case F_FLOAT8UM:
			return GH_EXPR_FNEG;
		default:
			return 0;
	}
}

/*
 * compile_float appends float4 or float8 expression n: float arithmetic
 * (float_op, in the precision of the operator's result type), a float
 * column, an integer column cast to a float type, float8(float4) (exact),
 * a constant (as a double, a float4's exactly) or a NULL.  Such a program
 * is never conditional: PostgreSQL computes the whole argument for every
 * row, so its errors are raised where PostgreSQL raises them.
 */
static bool
compile_float(Node *n, List **prog, List **inputs, int *depth, int level)
{
	Oid			t = exprType(n);

	if (level > GH_EXPR_MAX_OPS || (t != FLOAT4OID && t != FLOAT8OID))
		return false;
	if (IsA(n, OpExpr))
	{
		OpExpr	   *e = (OpExpr *) n;
		int			op;
		ListCell   *lc;

		set_opfuncid(e);
		op = float_op(e->opfuncid);
		if (op == 0 || list_length(e->args) != (op == GH_EXPR_FNEG ? 1 : 2))
			return false;
		foreach(lc, e->args)
			if (!compile_float(lfirst(lc), prog, inputs, depth, level + 1))
				return false;
		return emit_sized(prog, op, depth, op == GH_EXPR_FNEG ? 1 : 2,
						  t == FLOAT4OID ? 4 : 8);
	}
	if (IsA(n, FuncExpr) && list_length(((FuncExpr *) n)->args) == 1)
	{
		FuncExpr   *f = (FuncExpr *) n;
		Node	   *arg = linitial(f->args);

		if (f->funcid == F_FLOAT8_FLOAT4)
			return compile_float(arg, prog, inputs, depth, level + 1);
		if ((f->funcid == F_FLOAT8_INT2 || f->funcid == F_FLOAT8_INT4 ||
			 f->funcid == F_FLOAT8_INT8 || f->funcid == F_FLOAT4_INT2 ||
			 f->funcid == F_FLOAT4_INT4 || f->funcid == F_FLOAT4_INT8) &&
			IsA(arg, Var) && value_kind(exprType(arg)) == 'i')
		{
			*prog = lappend(*prog,
							list_make2(makeInteger(GH_EXPR_COLI2F),
									   list_make2(makeInteger(input_col(inputs, (Expr *) arg)),
												  makeInteger(t == FLOAT4OID ? 4 : 8))));
			return emit_checked(prog, depth);
		}
		return false;
	}
	if (IsA(n, Const))
		return emit_float_const(prog, GH_EXPR_FCONST, (Const *) n, depth);
	if (!IsA(n, Var))
		return false;
	return emit_input(prog, GH_EXPR_COLF, inputs, n, depth);
}

/*
 * compile_case appends a searched CASE (a CASE with an operand is left to
 * the child) whose conditions compile_cond takes and whose results
 * compile_num (numeric) or compile_int takes: "c1 JUMPF(a) r1 JUMP(end) a:
 * c2 JUMPF(b) r2 JUMP(end) b: else end:", each JUMPF's target known once
 * its branch is compiled, each JUMP's at the end; the ELSE (a NULL where
 * there is none) starts at the depth a THEN did.
 */
static bool
compile_case(CaseExpr *c, List **prog, List **inputs, int *depth, int level,
			 bool numeric)
{
	List	   *ends = NIL;
	ListCell   *lc;

	if (c->arg != NULL)
		return false;
	foreach(lc, c->args)
	{
		CaseWhen   *w = lfirst_node(CaseWhen, lc);
		List	   *jumpf;

		if (!compile_cond((Node *) w->expr, prog, inputs, depth, level + 1) ||
			!emit(prog, GH_EXPR_JUMPF, depth, 1))
			return false;
		(*depth)--;				/* the condition is popped */
		jumpf = llast(*prog);
		if (!(numeric ?
			  compile_num((Node *) w->result, prog, inputs, depth, level + 1, true) :
			  compile_int((Node *) w->result, prog, inputs, depth, level + 1)) ||
			!emit(prog, GH_EXPR_JUMP, depth, 1))
			return false;
		(*depth)--;				/* the other branches start without it */
		ends = lappend(ends, llast(*prog));
		lsecond(jumpf) = makeInteger(list_length(*prog));
	}
	if (c->defresult == NULL ||
		(IsA(c->defresult, Const) && ((Const *) c->defresult)->constisnull))
	{
		if (!emit(prog, GH_EXPR_NULLV, depth, 0))
			return false;
	}
	else if (!(numeric ?
			   compile_num((Node *) c->defresult, prog, inputs, depth, level + 1, true) :
			   compile_int((Node *) c->defresult, prog, inputs, depth, level + 1)))
		return false;
	foreach(lc, ends)
		lsecond((List *) lfirst(lc)) = makeInteger(list_length(*prog));
	return true;
}

/*
 * compile_args decides the child's columns (q->inputs) and the device
 * expressions (q->exprs): with device, each NUMERIC argument of arithmetic
 * or CASE that compile_num takes, and each integer argument of integer
 * arithmetic that compile_int takes (an integer program, whose column has
 * the argument's type), becomes a program over input columns, run on the
 * device; every other argument is an input column.  Sets q->call_cols from
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
		Oid			type = exprType((Node *) arg);
		List	   *prog = NIL;
		List	   *inputs = list_copy(q->inputs);
		int			depth = 0;
		bool		compiled = false;

		if (device && type == NUMERICOID &&
			(IsA(arg, OpExpr) || IsA(arg, CaseExpr) || IsA(arg, FuncExpr)))
			compiled = compile_num((Node *) arg, &prog, &inputs, &depth, 0, false);
		else if (device && (type == FLOAT4OID || type == FLOAT8OID) && IsA(arg, OpExpr))
			compiled = compile_float((Node *) arg, &prog, &inputs, &depth, 0);
		else if (device && (value_kind(type) == 'i' || type == DATEOID) &&
				 (IsA(arg, OpExpr) || IsA(arg, CaseExpr) || IsA(arg, FuncExpr)))
		{
			compiled = compile_int((Node *) arg, &prog, &inputs, &depth, 0) &&
				!prog_reads_numeric(prog);
		}
		if (compiled && depth == 1 && list_length(prog) > 1)
		{
			q->inputs = inputs;
			/* led by the result's type (aggregate.h) */
			prog = lcons(list_make2(makeInteger(GH_EXPR_PROG_TYPE), makeInteger(type)), prog);
			q->exprs = lappend(q->exprs, prog);
			argcol[i++] = -list_length(q->exprs);
		}
		else
			argcol[i++] = input_col(&q->inputs, arg);
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
 * constants that compile_int takes (GROUP BY a + b, d - 30, CASE WHEN ...):
 * the device then computes the key from the program's inputs, which the
 * child returns instead of the key.  Returns minus the expression's number
 * (counting from 1, as compile_args numbers the arguments'), or 0 if the key
 * stays the child's.  A program's rows leave the device only where
 * PostgreSQL raises an error (out of range), so a key never needs a value
 * computed on the host.  A key that is extract(year from an input) sets
 * *year to that input's column instead, and returns 0.
 */
static int
compile_key(GhaQuery *q, Expr *key, int *year)
{
	Oid			type = exprType((Node *) key);
	List	   *prog = NIL;
	List	   *inputs = list_copy(q->inputs);
	int			depth = 0;
	bool		reads = false;
	Expr	   *arg;
	ListCell   *lp;

	/*
	 * extract(year from d), d a date or a timestamp (not timestamptz, whose
	 * year depends on the session's time zone): a NUMERIC of scale 0, which
	 * the device computes from d as an exact word (gh_agg_year_word)
	 */
	if ((arg = extract_year_arg((Node *) key)) != NULL)
	{
		if (!contain_volatile_functions((Node *) arg) &&
			list_length(q->inputs) + list_length(q->exprs) + 1 <= GH_AGG_MAX_COLS)
			*year = input_col(&q->inputs, arg);
		return 0;
	}
	if ((type != INT2OID && type != INT4OID && type != INT8OID && type != DATEOID) ||
		!(IsA(key, OpExpr) || IsA(key, CaseExpr) || IsA(key, FuncExpr)) ||
		contain_volatile_functions((Node *) key) ||
		!compile_int((Node *) key, &prog, &inputs, &depth, 0) ||
		depth != 1 || list_length(prog) < 2 || prog_reads_numeric(prog))
		return 0;
	foreach(lp, prog)
	{
		int			op = intVal(linitial((List *) lfirst(lp)));

		if (GH_EXPR_READS_INPUT(op))
			reads = true;
	}
	if (!reads || list_length(inputs) + list_length(q->exprs) + 1 > GH_AGG_MAX_COLS)
		return 0;
	q->inputs = inputs;
	q->exprs = lappend(q->exprs,
					   lcons(list_make2(makeInteger(GH_EXPR_PROG_TYPE), makeInteger(type)),
							 prog));
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
	List	   *prog;
	ListCell   *lp;

	if (list_nth_int(q->key_years, i) >= 0)
		return list_nth(q->inputs, list_nth_int(q->key_years, i));
	prog = list_nth(q->exprs, c - list_length(q->inputs));
	for_each_from(lp, prog, 1)
	{
		List	   *pair = lfirst(lp);

		if (GH_EXPR_READS_INPUT(intVal(linitial(pair))))
			return list_nth(q->inputs, intVal(lsecond(pair)));
	}
	elog(ERROR, "GpuHashAgg: a device key without an input");
	return NULL;				/* keep compiler quiet */
}

/*
 * gha_device_quals returns the quals of rel's scan that the device can evaluate
 * in GpuHashAgg instead (the scan then passes every row; each call reads
 * its argument where they hold, gha_call_input), or NIL: rel is a table, its
 * quals are neither security quals nor volatile, and compile_cond takes
 * their AND with no op that may raise an error (prog_may_raise: PostgreSQL
 * orders the quals by cost and stops at the first false one, so a qual's
 * error may not be its).  The GROUP BY keys, which are computed for every
 * row and so for rows the quals would have removed, are columns or the
 * year of one (no error).
 */
List *
gha_device_quals(RelOptInfo *rel, GhaQuery *q)
{
	List	   *quals = NIL;
	List	   *prog = NIL;
	List	   *inputs = NIL;
	int			depth = 0;
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
		Expr	   *year = extract_year_arg(lfirst(lc));

		if (!IsA(lfirst(lc), Var) && (year == NULL || !IsA(year, Var)))
			return NIL;
	}
	if (contain_volatile_functions((Node *) quals) ||
		!compile_cond((Node *) make_ands_explicit(quals), &prog, &inputs, &depth, 0) ||
		prog_may_raise(prog, 0))
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

