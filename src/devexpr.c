/*-------------------------------------------------------------------------
 * devexpr.c
 *	  Device expressions on the host: PostgreSQL expressions compiled into
 *	  the postfix programs of cuda/gh_devexpr.h, the programs checked and
 *	  loaded for a run, and the rows the device leaves to the host evaluated
 *	  by PostgreSQL's executor.
 *
 * The language.  A program computes one value per row from input columns
 * that the caller computes (on the CPU, for every row) and constants:
 * NUMERIC arithmetic (+, -, *, unary -) in exact fixed point, integer and
 * date arithmetic with PostgreSQL's range checks, float4/float8 arithmetic
 * rounded as PostgreSQL rounds it, comparisons, IS [NOT] NULL, AND, OR,
 * NOT, a searched CASE, extract(year ...) and the exact casts between
 * those types.  Anything else does not compile: the caller then computes
 * the whole expression itself.  cuda/gh_devexpr.h describes the ops and
 * their values; one interpreter runs them on the GPU and on the CPU twin.
 *
 * What happens, in order:
 *
 *	1. Planning.  gh_devexpr_compile (a value) and gh_devexpr_compile_cond (a
 *	   condition) compile an Expr against the caller's list of input columns,
 *	   adding those it needs, into a program kept as plain nodes
 *	   (GhDevProgField), so that a plan copies, prints and reads back with
 *	   it: the result's type, the ops, and the original expression with each
 *	   input replaced by a Var of the input's number (the host expression).
 *	   The compiler refuses what the device could not compute as PostgreSQL
 *	   does: an input under a CASE or a condition that might raise where
 *	   PostgreSQL would not have computed it, a second argument of AND or OR
 *	   that may raise, and anything past the device's ops and stack.
 *	2. Loading.  gh_devexpr_load checks a program read back from a plan
 *	   (ops, jump targets, stack depth, the inputs' types) into a GhDevProg;
 *	   gh_devexpr_describe and gh_devexpr_result_scale make the gh_expr the
 *	   device runs once the inputs' NUMERIC scales are known.
 *	3. Host rows.  The device lists the rows it cannot compute exactly
 *	   (overflow, a value past its fixed point, a division by zero, an
 *	   infinite date, a NULL or host-held NUMERIC in a conditional program).
 *	   For those the caller fills the row's input values and
 *	   gh_devexpr_host_eval runs the host expression through ExecEvalExpr,
 *	   as PG-Strom's CPU fallback does: the value, its display scale and
 *	   every error are PostgreSQL's own.
 *
 * Callers: the aggregate (agg_path.c compiles the arguments, keys and scan
 * quals of GpuHashAgg, aggregate.c loads them, aggregate_numeric.c runs the
 * host rows).  This file calls no aggregate or join file.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/stratnum.h"
#include "access/tupdesc.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_type_d.h"
#include "commands/defrem.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "devexpr.h"

/* A program's host expression, ready for ExecEvalExpr (gh_devexpr_host_eval). */
struct GhDevHost
{
	ExprState  *state;
	ExprContext *econtext;
	TupleTableSlot *slot;		/* virtual: the row's inputs */
	int			natts;
};

static bool const_fixed(Datum num, int64 *m, int *dscale);
static bool compile_num(Node *n, List **prog, List **inputs, int *depth,
						int level, bool lazy);
static bool compile_case(CaseExpr *c, List **prog, List **inputs, int *depth,
						 int level, bool numeric);
static bool compile_int(Node *n, List **prog, List **inputs, int *depth, int level);
static bool compile_cond(Node *n, List **prog, List **inputs, int *depth, int level);
static bool emit(List **prog, int op, int *depth, int pops);
static List *make_prog(Oid type, Expr *expr, List *ops, List *inputs);
static Node *host_inputs_mutator(Node *node, void *context);
static bool host_only_inputs(Node *node, void *context);
static bool depth_ok(const GhDevProg *x);

/* ---- the compiler ----------------------------------------------------- */

/*
 * const_fixed: whether NUMERIC constant num is fixed point as the device
 * takes it (gh_values.h): finite, of display scale at most
 * GH_NUM_SCALE_CAP, and num * 10^dscale within int64, which it sets *m to
 * (and *dscale to the display scale).  Run at plan and load time only, so
 * it reads the value through numeric_out, whose digits after the point are
 * exactly the display scale's.
 */
static bool
const_fixed(Datum num, int64 *m, int *dscale)
{
	Numeric		n = DatumGetNumeric(num);
	char	   *s;
	bool		neg;
	uint64		u = 0;
	int			ds;

	if (numeric_is_nan(n) || numeric_is_inf(n))
		return false;
	ds = DatumGetInt32(DirectFunctionCall1(numeric_scale, num));
	if (ds > GH_NUM_SCALE_CAP)
		return false;
	s = DatumGetCString(DirectFunctionCall1(numeric_out, num));
	neg = s[0] == '-';
	for (const char *p = s + (neg ? 1 : 0); *p != '\0'; p++)
	{
		int			d = *p - '0';

		if (*p == '.')
			continue;
		if (u > (uint64) (PG_INT64_MAX - d) / 10)
			return false;
		u = u * 10 + d;
	}
	pfree(s);
	*m = neg ? -(int64) u : (int64) u;
	*dscale = ds;
	return true;
}

/*
 * gh_devexpr_input_col returns expr's index in *inputs, adding it there if it
 * is new: equal expressions are one input.
 */
int
gh_devexpr_input_col(List **inputs, Expr *expr)
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
									  makeInteger(gh_devexpr_input_col(inputs, (Expr *) expr))));
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
 * gh_devexpr_year_arg is x where n is extract(year from x), x a date or a
 * timestamp (not timestamptz, whose year depends on the session's time
 * zone); NULL otherwise.
 */
Expr *
gh_devexpr_year_arg(Node *n)
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
		if (!const_fixed(num, &m, &ds))
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
 * (gh_devexpr_load refuses such an integer program).
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
 * (cuda/gh_devexpr.h): numeric_add, numeric_sub, numeric_mul,
 * numeric_uminus and numeric_uplus over constants that are fixed point, a
 * searched CASE whose conditions compile_cond takes (a missing ELSE is a
 * NULL), and any other subexpression as an input column (*inputs), which
 * the caller computes on the CPU for every row: within a CASE (lazy) only a
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
	year_of = gh_devexpr_year_arg(n);
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

		if (const_fixed(((Const *) n)->constvalue, &m, &ds))
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
									   list_make2(makeInteger(gh_devexpr_input_col(inputs, (Expr *) arg)),
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
 * host_inputs_mutator replaces every subexpression of a host expression that
 * is one of the program's inputs (context: the List of input expressions,
 * NULL where the program does not read that input) by a Var of its number
 * plus one over the input row (INDEX_VAR: no range table entry).  Outermost
 * first, so that an input computed by the caller is never computed again.
 */
static Node *
host_inputs_mutator(Node *node, void *context)
{
	List	   *inputs = (List *) context;
	ListCell   *lc;

	if (node == NULL)
		return NULL;
	foreach(lc, inputs)
	{
		Node	   *in = lfirst(lc);

		if (in != NULL && equal(node, in))
			return (Node *) makeVar(INDEX_VAR, foreach_current_index(lc) + 1,
									exprType(in), exprTypmod(in),
									exprCollation(in), 0);
	}
	return expression_tree_mutator(node, host_inputs_mutator, context);
}

/*
 * host_only_inputs is true where node reads something other than the input
 * row: a Var of a relation, a parameter, a subplan, an aggregate.
 */
static bool
host_only_inputs(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
		return ((Var *) node)->varno != INDEX_VAR;
	if (IsA(node, Param) || IsA(node, SubPlan) || IsA(node, AlternativeSubPlan) ||
		IsA(node, Aggref) || IsA(node, WindowFunc) || IsA(node, PlaceHolderVar))
		return true;
	return expression_tree_walker(node, host_only_inputs, context);
}

/*
 * make_prog makes the program (GhDevProgField) of ops, a value of type
 * type, compiled from expr over inputs: its host expression reads only the
 * inputs the ops read.  NIL where that expression would read anything else
 * (the compiler makes every leaf but a constant an input, so never).
 */
static List *
make_prog(Oid type, Expr *expr, List *ops, List *inputs)
{
	List	   *read = NIL;
	Node	   *host;
	ListCell   *lc;

	foreach(lc, inputs)
		read = lappend(read, NULL);
	foreach(lc, ops)
	{
		List	   *pair = lfirst(lc);
		int			op = intVal(linitial(pair));
		int			c;

		if (!GH_EXPR_READS_INPUT(op))
			continue;
		c = intVal(op == GH_EXPR_COLI2F ? linitial(lsecond(pair)) : lsecond(pair));
		lfirst(list_nth_cell(read, c)) = list_nth(inputs, c);
	}
	host = host_inputs_mutator((Node *) expr, read);
	if (host_only_inputs(host, NULL))
		return NIL;
	fix_opfuncids(host);
	return list_make3(makeInteger(type), host, ops);
}

/*
 * gh_devexpr_compile compiles value expr (an operator, a CASE or a function
 * call of NUMERIC, integer or date type, or a float operator) into a program
 * over *inputs, the caller's input columns, to which it adds those it
 * needs; NIL (and *inputs unchanged) where it does not compile, or where
 * the program would only push one input.  An integer program reads no
 * NUMERIC: its rows go to the host only where PostgreSQL raises an error.
 */
List *
gh_devexpr_compile(Expr *expr, List **inputs)
{
	Oid			type = exprType((Node *) expr);
	List	   *ops = NIL;
	List	   *in = list_copy(*inputs);
	int			depth = 0;
	bool		compiled = false;
	List	   *prog;

	if (type == NUMERICOID &&
		(IsA(expr, OpExpr) || IsA(expr, CaseExpr) || IsA(expr, FuncExpr)))
		compiled = compile_num((Node *) expr, &ops, &in, &depth, 0, false);
	else if ((type == FLOAT4OID || type == FLOAT8OID) && IsA(expr, OpExpr))
		compiled = compile_float((Node *) expr, &ops, &in, &depth, 0);
	else if ((value_kind(type) == 'i' || type == DATEOID) &&
			 (IsA(expr, OpExpr) || IsA(expr, CaseExpr) || IsA(expr, FuncExpr)))
		compiled = compile_int((Node *) expr, &ops, &in, &depth, 0) &&
			!prog_reads_numeric(ops);
	if (!compiled || depth != 1 || list_length(ops) < 2)
		return NIL;
	prog = make_prog(type, expr, ops, in);
	if (prog != NIL)
		*inputs = in;
	return prog;
}

/*
 * gh_devexpr_compile_cond compiles boolean expression cond (comparisons, IS
 * [NOT] NULL, AND, OR, NOT: compile_cond) into a program of type bool over
 * *inputs, as gh_devexpr_compile does; NIL where it does not compile.
 */
List *
gh_devexpr_compile_cond(Expr *cond, List **inputs)
{
	List	   *ops = NIL;
	List	   *in = list_copy(*inputs);
	int			depth = 0;
	List	   *prog;

	if (!compile_cond((Node *) cond, &ops, &in, &depth, 0))
		return NIL;
	prog = make_prog(BOOLOID, cond, ops, in);
	if (prog != NIL)
		*inputs = in;
	return prog;
}

/* gh_devexpr_type is the type of program prog's result. */
Oid
gh_devexpr_type(List *prog)
{
	return (Oid) intVal(list_nth(prog, GH_DEVX_TYPE));
}

/*
 * gh_devexpr_first_input is the first input column program prog reads, -1
 * where it reads none (its value is a constant).
 */
int
gh_devexpr_first_input(List *prog)
{
	ListCell   *lp;

	foreach(lp, (List *) list_nth(prog, GH_DEVX_OPS))
	{
		List	   *pair = lfirst(lp);
		int			op = intVal(linitial(pair));

		if (GH_EXPR_READS_INPUT(op))
			return intVal(op == GH_EXPR_COLI2F ? linitial(lsecond(pair)) : lsecond(pair));
	}
	return -1;
}

/*
 * gh_devexpr_reads_numeric: whether program prog reads or computes a
 * NUMERIC, whose NULL, wide or host-held inputs send rows to the host.
 */
bool
gh_devexpr_reads_numeric(List *prog)
{
	return prog_reads_numeric((List *) list_nth(prog, GH_DEVX_OPS));
}

/*
 * gh_devexpr_may_raise: whether program prog may leave a row to the host
 * to raise an error (integer or date arithmetic out of range, a zero
 * divisor).  A caller that evaluates it where PostgreSQL might not have
 * (scan quals, in an order of its own) takes only programs that may not.
 */
bool
gh_devexpr_may_raise(List *prog)
{
	return prog_may_raise((List *) list_nth(prog, GH_DEVX_OPS), 0);
}

/* ---- loading ---------------------------------------------------------- */

/*
 * depth_ok: whether program x, read op by op (a branch's JUMP pops its
 * value; the next branch, or the ELSE, pushes its own), never pops what is
 * not there nor pushes past the device's stack, and ends with one value.
 */
static bool
depth_ok(const GhDevProg *x)
{
	int			sp = 0;

	for (int o = 0; o < x->nops; o++)
	{
		int			pops;
		int			pushes;

		switch (x->op[o])
		{
			case GH_EXPR_COL:
			case GH_EXPR_COLI:
			case GH_EXPR_CONST:
			case GH_EXPR_NULLV:
			case GH_EXPR_COLF:
			case GH_EXPR_COLI2F:
			case GH_EXPR_FCONST:
			case GH_EXPR_COLFK:
			case GH_EXPR_FKCONST:
				pops = 0, pushes = 1;
				break;
			case GH_EXPR_NEG:
			case GH_EXPR_NOT:
			case GH_EXPR_ISNULL:
			case GH_EXPR_NOTNULL:
			case GH_EXPR_INEG:
			case GH_EXPR_YEAR:
			case GH_EXPR_FNEG:
				pops = 1, pushes = 1;
				break;
			case GH_EXPR_JUMPF:
			case GH_EXPR_JUMP:
				pops = 1, pushes = 0;
				break;
			default:
				pops = 2, pushes = 1;
				break;
		}
		if (sp < pops)
			return false;
		sp += pushes - pops;
		if (sp > GH_EXPR_STACK)
			return false;
	}
	return sp == 1;
}

/*
 * gh_devexpr_load checks program prog, as a plan holds it, against the
 * types of the caller's ninputs input columns and fills x: every op known,
 * an integer program with no NUMERIC column or arithmetic, a float program
 * with nothing but its own ops and NULLs and no other program with float
 * ops, every input of its op's type, jumps forward only, the stack within
 * the device's, one value at the end.  A plan is trusted no further than
 * that: anything else is an internal error.
 */
void
gh_devexpr_load(List *prog, int ninputs, const Oid *input_types, GhDevProg *x)
{
	List	   *ops;
	ListCell   *lc;

	memset(x, 0, sizeof(*x));
	if (list_length(prog) != 3)
		elog(ERROR, "malformed device expression");
	ops = list_nth_node(List, prog, GH_DEVX_OPS);
	x->type = (Oid) intVal(list_nth(prog, GH_DEVX_TYPE));
	x->host = (Expr *) list_nth(prog, GH_DEVX_HOST);
	if (ops == NIL || list_length(ops) > GH_EXPR_MAX_OPS || x->host == NULL ||
		(x->type != NUMERICOID && x->type != INT2OID && x->type != INT4OID &&
		 x->type != INT8OID && x->type != DATEOID && x->type != FLOAT4OID &&
		 x->type != FLOAT8OID && x->type != BOOLOID))
		elog(ERROR, "malformed device expression");
	foreach(lc, ops)
	{
		List	   *pair = lfirst_node(List, lc);
		int			o = x->nops++;
		int			op = intVal(linitial(pair));

		if (op < GH_EXPR_COL || op > GH_EXPR_OP_LAST)
			elog(ERROR, "malformed device expression");
		x->op[o] = (uint8) op;

		/*
		 * an integer program has no NUMERIC column or arithmetic, and a
		 * float program nothing but its own ops and NULLs; no other has
		 * float ops
		 */
		if ((x->type != NUMERICOID &&
			 (op == GH_EXPR_COL || op == GH_EXPR_ADD || op == GH_EXPR_SUB ||
			  op == GH_EXPR_MUL || op == GH_EXPR_NEG || op == GH_EXPR_YEAR)) ||
			((x->type == FLOAT4OID || x->type == FLOAT8OID) !=
			 GH_EXPR_IS_FLOAT_OP(op) && op != GH_EXPR_NULLV))
			elog(ERROR, "malformed device expression");
		if (op == GH_EXPR_FCONST || op == GH_EXPR_FKCONST)
		{
			Const	   *k = lsecond_node(Const, pair);

			if (k->consttype != FLOAT8OID || k->constisnull)
				elog(ERROR, "malformed device expression");
			x->cm[o] = op == GH_EXPR_FCONST ?
				gh_fbits(DatumGetFloat8(k->constvalue)) :
				gh_agg_float_cmp_key(DatumGetFloat8(k->constvalue));
			continue;
		}
		if (op >= GH_EXPR_IADD && op <= GH_EXPR_FNEG && op != GH_EXPR_COLF)
		{
			x->cm[o] = op == GH_EXPR_COLI2F ?
				intVal(lsecond(lsecond(pair))) : intVal(lsecond(pair));
			if (x->cm[o] != 8 && x->cm[o] != 4 &&
				(x->cm[o] != 2 || op >= GH_EXPR_COLF))
				elog(ERROR, "malformed device expression");
		}
		if (GH_EXPR_READS_INPUT(op))
		{
			int			c = intVal(op != GH_EXPR_COLI2F ? lsecond(pair) :
								   linitial(lsecond(pair)));
			int			kind;

			if (c < 0 || c >= ninputs)
				elog(ERROR, "malformed device expression");
			kind = value_kind(input_types[c]);
			if (op == GH_EXPR_COL ? input_types[c] != NUMERICOID :
				op == GH_EXPR_COLI ? kind != 'i' && kind != 'd' :
				op == GH_EXPR_COLI2F ? kind != 'i' : kind != 'f')
				elog(ERROR, "malformed device expression");
			x->col[o] = (int16) c;
		}
		else if (op == GH_EXPR_JUMP || op == GH_EXPR_JUMPF)
		{
			/* forward only, to an op of the program or its end */
			x->cm[o] = intVal(lsecond(pair));
			if (x->cm[o] <= o || x->cm[o] > list_length(ops))
				elog(ERROR, "malformed device expression");
		}
		else if (op == GH_EXPR_CONST)
		{
			Const	   *k = lsecond_node(Const, pair);
			int			ds;

			if (k->consttype != NUMERICOID || k->constisnull ||
				!const_fixed(k->constvalue, &x->cm[o], &ds))
				elog(ERROR, "malformed device expression");
			x->cds[o] = (uint8) ds;
		}
	}
	if (!depth_ok(x))
		elog(ERROR, "malformed device expression");
}

/*
 * gh_devexpr_result_scale is the scale of NUMERIC program x's result with
 * its input columns at scales input_scale[] (one below 0, no value yet,
 * counts as 0: all its rows are NULL).  A CASE's result has the largest
 * scale of its branches.
 */
int
gh_devexpr_result_scale(const GhDevProg *x, const int *input_scale)
{
	int			st[GH_EXPR_STACK + 1];
	int			joined[GH_EXPR_MAX_OPS + 1];
	int			sp = 0;

	for (int o = 0; o <= GH_EXPR_MAX_OPS; o++)
		joined[o] = -1;
	for (int o = 0; o < x->nops; o++)
	{
		switch (x->op[o])
		{
			case GH_EXPR_COL:
				st[sp++] = Max(input_scale[x->col[o]], 0);
				break;
			case GH_EXPR_CONST:
				st[sp++] = x->cds[o];
				break;
			case GH_EXPR_ADD:
			case GH_EXPR_SUB:
				st[sp - 2] = Max(st[sp - 2], st[sp - 1]);
				sp--;
				break;
			case GH_EXPR_MUL:
				st[sp - 2] += st[sp - 1];
				sp--;
				break;
			case GH_EXPR_NULLV:
			case GH_EXPR_COLI:
			case GH_EXPR_COLFK:
			case GH_EXPR_FKCONST:
				st[sp++] = 0;
				break;
			case GH_EXPR_LT:
			case GH_EXPR_LE:
			case GH_EXPR_EQ:
			case GH_EXPR_NE:
			case GH_EXPR_GE:
			case GH_EXPR_GT:
			case GH_EXPR_AND:
			case GH_EXPR_OR:
				if (sp < 2)
					elog(ERROR, "malformed device expression");
				st[sp - 2] = 0;
				sp--;
				break;
			case GH_EXPR_JUMPF:
				sp--;
				break;
			case GH_EXPR_ISNULL:
			case GH_EXPR_NOTNULL:
			case GH_EXPR_INEG:
			case GH_EXPR_YEAR:
				st[sp - 1] = 0;
				break;
			case GH_EXPR_IADD:
			case GH_EXPR_ISUB:
			case GH_EXPR_IMUL:
			case GH_EXPR_IDIV:
			case GH_EXPR_IMOD:
			case GH_EXPR_DDIFF:
			case GH_EXPR_DADDI:
			case GH_EXPR_DSUBI:
				if (sp < 2)
					elog(ERROR, "malformed device expression");
				st[sp - 2] = 0;
				sp--;
				break;
			case GH_EXPR_JUMP:
				/* the end of a branch: its result is one of the target's */
				if (sp < 1)
					elog(ERROR, "malformed device expression");
				joined[x->cm[o]] = Max(joined[x->cm[o]], st[sp - 1]);
				sp--;
				break;
			default:
				break;
		}
		if (o + 1 < x->nops && joined[o + 1] >= 0 && sp >= 1)
			st[sp - 1] = Max(st[sp - 1], joined[o + 1]);
		if (x->op[o] != GH_EXPR_JUMP && x->op[o] != GH_EXPR_JUMPF &&
			(sp < 1 || sp > GH_EXPR_STACK))
			elog(ERROR, "malformed device expression");
	}
	if (sp != 1)
		elog(ERROR, "malformed device expression");
	return Max(st[0], joined[x->nops]);
}

/*
 * gh_devexpr_describe fills e with program x as the device runs it, its
 * inputs at scales input_scale[]: everything but the input arrays
 * (vals, valid) and, for a NUMERIC program, the output column's scale
 * (out_scale, all_host), which are the caller's.
 */
void
gh_devexpr_describe(const GhDevProg *x, const int *input_scale, gh_expr *e)
{
	memset(e, 0, sizeof(*e));
	e->nops = x->nops;
	for (int o = 0; o < x->nops; o++)
	{
		e->op[o] = x->op[o];
		/* gh_devexpr_load set cm for the ops that have one, 0 for the others */
		e->cm[o] = x->cm[o];
		if (GH_EXPR_IS_CONDITION(x->op[o]))
			e->conditional = 1;
		if (x->op[o] == GH_EXPR_COL)
			e->scale[o] = (int8) Max(input_scale[x->col[o]], 0);
		else if (x->op[o] == GH_EXPR_CONST)
			e->scale[o] = (int8) x->cds[o];
	}
	/* an integer program's values are the int64s, a float program's the doubles */
	if (x->type == FLOAT4OID || x->type == FLOAT8OID)
		e->float_out = 1;
	else if (x->type != NUMERICOID)
		e->int_out = 1;
}

/* ---- host rows -------------------------------------------------------- */

/*
 * gh_devexpr_word_datum is the Datum of an input value of type (an integer,
 * a date, a timestamp or a float) as programs read it: the int64 value, or
 * for a float the double's bits.
 */
Datum
gh_devexpr_word_datum(Oid type, int64 word)
{
	switch (type)
	{
		case INT2OID:
			return Int16GetDatum((int16) word);
		case INT4OID:
			return Int32GetDatum((int32) word);
		case DATEOID:
			return DateADTGetDatum((DateADT) word);
		case FLOAT4OID:
			return Float4GetDatum((float4) gh_bitsf(word));
		case FLOAT8OID:
			return Float8GetDatum(gh_bitsf(word));
		case INT8OID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			return Int64GetDatum(word);
		default:
			elog(ERROR, "device expression input of type %u", type);
			return (Datum) 0;	/* keep compiler quiet */
	}
}

/*
 * gh_devexpr_host_begin prepares program x's host expression for
 * ExecEvalExpr, in the current memory context: a virtual slot of the
 * program's input row (an attribute per input up to the last it reads,
 * typed as its Var) and the expression's state.
 */
GhDevHost *
gh_devexpr_host_begin(const GhDevProg *x)
{
	GhDevHost  *h = palloc0(sizeof(GhDevHost));
	List	   *vars = pull_var_clause((Node *) x->host, 0);
	TupleDesc	desc;
	ListCell   *lc;

	foreach(lc, vars)
		h->natts = Max(h->natts, lfirst_node(Var, lc)->varattno);
	desc = CreateTemplateTupleDesc(Max(h->natts, 1));
	/* an input the program does not read: always NULL */
	for (int a = 1; a <= Max(h->natts, 1); a++)
		TupleDescInitEntry(desc, a, NULL, INT8OID, -1, 0);
	foreach(lc, vars)
	{
		Var		   *v = lfirst_node(Var, lc);

		TupleDescInitEntry(desc, v->varattno, NULL, v->vartype, v->vartypmod, 0);
		TupleDescInitEntryCollation(desc, v->varattno, v->varcollid);
	}
	h->slot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
	h->econtext = CreateStandaloneExprContext();
	h->state = ExecInitExpr(x->host, NULL);
	return h;
}

/*
 * gh_devexpr_host_eval is the program's value for one row whose inputs are
 * values[] and isnull[] (indexed by input column, Datums as PostgreSQL
 * keeps them): ExecEvalExpr of the host expression, so that the value,
 * its display scale and any error are PostgreSQL's.  The value is in the
 * current memory context, or the expression's own (a constant).
 */
Datum
gh_devexpr_host_eval(GhDevHost *h, const Datum *values, const bool *isnull,
					 bool *resnull)
{
	TupleTableSlot *slot = h->slot;

	ExecClearTuple(slot);
	for (int a = 0; a < h->natts; a++)
	{
		slot->tts_values[a] = values[a];
		slot->tts_isnull[a] = isnull[a];
	}
	ExecStoreVirtualTuple(slot);
	h->econtext->ecxt_scantuple = slot;
	return ExecEvalExpr(h->state, h->econtext, resnull);
}
