/*-------------------------------------------------------------------------
 * devexpr.h
 *	  Device expressions on the host (devexpr.c): compiling PostgreSQL
 *	  expressions into programs of cuda/gh_devexpr.h, loading them, and
 *	  evaluating on the host the rows the device leaves there.
 *
 * A caller (the aggregate today; the device scan's and the join's quals
 * next) keeps a list of input columns, expressions it computes on the CPU
 * for every row and hands the device as arrays.  It compiles an expression
 * against that list at plan time and keeps the program in its plan; at run
 * time it loads the program, runs it through gh_expr_eval_gpu/_cpu over its
 * batches, and for every row the device lists evaluates it here with
 * PostgreSQL's executor.  Nothing here knows the caller.
 *-------------------------------------------------------------------------
 */
#ifndef GPUHASH_DEVEXPR_H
#define GPUHASH_DEVEXPR_H

#include "nodes/pg_list.h"
#include "nodes/primnodes.h"

#include "gh_devexpr.h"
#include "gh_values.h"

/*
 * A program as a plan keeps it: a List of three nodes, so that the plan
 * copies, prints and reads back with it (copyObject, nodeToString).
 */
typedef enum GhDevProgField
{
	GH_DEVX_TYPE,				/* Integer: the result's type: NUMERIC, int2,
								 * int4, int8, date, float4, float8, or bool
								 * for a condition */
	GH_DEVX_HOST,				/* Expr: the expression compiled, each input
								 * replaced by a Var (INDEX_VAR, attribute:
								 * the input's number plus one) */
	GH_DEVX_OPS					/* List of (Integer op, argument) pairs: the
								 * argument an input's Integer number for the
								 * ops that read one ((Integer number, Integer
								 * width) for COLI2F), a NUMERIC Const for
								 * CONST, a float8 Const for FCONST and
								 * FKCONST, the Integer index of the op to go
								 * to for JUMP and JUMPF, the result's width
								 * in bytes for the integer, date and float
								 * ops, else 0 */
} GhDevProgField;

/* A program loaded from a plan (gh_devexpr_load). */
typedef struct GhDevProg
{
	Oid			type;			/* the result's type (GH_DEVX_TYPE) */
	int			nops;
	uint8		op[GH_EXPR_MAX_OPS];	/* gh_expr_op */
	int16		col[GH_EXPR_MAX_OPS];	/* ops that read an input: its number */
	int64		cm[GH_EXPR_MAX_OPS];	/* gh_expr's cm; CONST: m at its
										 * display scale */
	uint8		cds[GH_EXPR_MAX_OPS];	/* CONST: display scale */
	Expr	   *host;			/* GH_DEVX_HOST */
} GhDevProg;

/* A host expression ready to run (gh_devexpr_host_begin). */
typedef struct GhDevHost GhDevHost;

/* planning */
extern List *gh_devexpr_compile(Expr *expr, List **inputs);
extern List *gh_devexpr_compile_cond(Expr *cond, List **inputs);
extern int	gh_devexpr_input_col(List **inputs, Expr *expr);
extern Oid	gh_devexpr_type(List *prog);
extern int	gh_devexpr_first_input(List *prog);
extern bool gh_devexpr_reads_numeric(List *prog);
extern bool gh_devexpr_may_raise(List *prog);
extern Expr *gh_devexpr_year_arg(Node *n);

/* loading */
extern void gh_devexpr_load(List *prog, int ninputs, const Oid *input_types,
							GhDevProg *x);
extern int	gh_devexpr_result_scale(const GhDevProg *x, const int *input_scale);
extern void gh_devexpr_describe(const GhDevProg *x, const int *input_scale,
								gh_expr *e);

/* host rows */
extern Datum gh_devexpr_word_datum(Oid type, int64 word);
extern GhDevHost *gh_devexpr_host_begin(const GhDevProg *x);
extern Datum gh_devexpr_host_eval(GhDevHost *h, const Datum *values,
								  const bool *isnull, bool *resnull);

#endif							/* GPUHASH_DEVEXPR_H */
