/*-------------------------------------------------------------------------
 * gh_devexpr.h
 *	  Device expressions: the opcodes of the postfix programs that the
 *	  device runs over a batch's columns, the program struct, and the C
 *	  entry points that run one.
 *
 * A program is compiled at plan time from a PostgreSQL expression
 * (src/devexpr.c), checked and loaded by the host (src/devexpr.c again),
 * and run row by row by one interpreter (devexpr_interp.h) that both the
 * GPU kernel (devexpr.cu) and the CPU twin (devexpr_cpu.c) include.  Same
 * conventions as gpuhash_cuda.h: plain C, status codes, never throws, never
 * calls PostgreSQL, the caller owns every allocation and passes the stream.
 * Values are in gh_values.h's encodings.
 *-------------------------------------------------------------------------
 */
#ifndef GH_DEVEXPR_H
#define GH_DEVEXPR_H

#include <stdint.h>

#include "gpuhash_cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The language.  A value of NUMERIC arithmetic (+, -, *, unary -) over input
 * columns and constants is a postfix program; the device runs it over a
 * batch's packed input columns and writes a packed column.  Every value on
 * the stack is exact: a 128-bit integer m at a scale sigma (value = m /
 * 10^sigma), with the display scale d that PostgreSQL's numeric_add,
 * numeric_sub and numeric_mul give (max(d1, d2) for + and -, d1 + d2 for
 * *).  A row whose arithmetic leaves the bounds below, or whose result does
 * not fit the packing at the output column's scale, is listed for the host,
 * which evaluates the original expression with PostgreSQL's executor; a row
 * with a NULL (or host-held) input gets no value (valid 0): the caller knows
 * which of those it holds.
 *
 * Conditions: comparisons (of numerics, or of integers, dates or
 * timestamps as COLI pushes them: their int64 values, at scale 0) and IS
 * [NOT] NULL push a boolean (m 0 or 1), AND, OR and NOT combine them with SQL's three-valued logic, and a searched CASE is
 * jumps, as PostgreSQL's executor runs it: "c1 JUMPF(a) r1 JUMP(end) a: c2
 * JUMPF(b) r2 JUMP(end) b: else end:", where JUMPF pops a condition and
 * jumps when it is false or NULL, and every jump goes forward (to op index
 * cm[o], at most nops), so a branch not taken is not computed and the
 * result keeps its own scale and display scale; NULLV pushes a NULL (a
 * CASE with no ELSE).  In a program with a condition, a NULL or host-held
 * NUMERIC input column (COL) sends the row to the host (the device cannot
 * tell the two apart), which evaluates the expression; a NULL integer, date or timestamp (COLI), never host-held, is
 * a NULL on the stack.
 */
#define GH_EXPR_MAX_OPS 32
#define GH_EXPR_STACK 8

typedef enum gh_expr_op
{
	GH_EXPR_COL = 1, /* push input column vals[o] (packed NUMERIC) */
	GH_EXPR_CONST,	 /* push the constant cm[o] at scale scale[o] */
	GH_EXPR_ADD,
	GH_EXPR_SUB,
	GH_EXPR_MUL,
	GH_EXPR_NEG,
	GH_EXPR_LT, /* comparisons: two numerics to a boolean */
	GH_EXPR_LE,
	GH_EXPR_EQ,
	GH_EXPR_NE,
	GH_EXPR_GE,
	GH_EXPR_GT,
	GH_EXPR_AND, /* two booleans to one, three-valued */
	GH_EXPR_OR,
	GH_EXPR_NOT,
	GH_EXPR_JUMPF, /* pop a condition; false or NULL: go to op cm[o] */
	GH_EXPR_JUMP,  /* go to op cm[o] */
	GH_EXPR_NULLV, /* push a NULL */
	GH_EXPR_ISNULL, /* a value to a boolean: IS NULL */
	GH_EXPR_NOTNULL, /* IS NOT NULL */
	GH_EXPR_COLI,	/* push input column vals[o] (int64: integers, dates,
					 * timestamps) as a value of scale 0 */
	GH_EXPR_IADD,	/* integer arithmetic of int2, int4 and int8 values: */
	GH_EXPR_ISUB,	/* exact, then checked against the range of the */
	GH_EXPR_IMUL,	/* operator's result type, cm[o] bytes wide (2, 4 or */
	GH_EXPR_INEG,	/* 8); out of it, the host raises PostgreSQL's error */
	GH_EXPR_IDIV,	/* integer / and % as int4div and int4mod compute them */
	GH_EXPR_IMOD,	/* (truncated); a zero divisor: the host raises */
	GH_EXPR_DDIFF,	/* date - date: days (an infinite date: the host raises) */
	GH_EXPR_DADDI,	/* date + integer, date - integer: an infinite date as */
	GH_EXPR_DSUBI,	/* it is; past the dates' range the host raises */
	GH_EXPR_YEAR,	/* extract(year from a date (cm[o] 4) or timestamp (8)):
					 * a NUMERIC of scale 0; an infinite one to the host */
	GH_EXPR_COLF,	/* float programs: push float column vals[o] (doubles) */
	GH_EXPR_COLI2F, /* push integer column vals[o] as a float (cm[o] 4) or
					 * a double (8), rounded as float4(int) and float8(int) */
	GH_EXPR_FCONST, /* push the double whose bits are cm[o] */
	GH_EXPR_FADD,	/* float arithmetic in the precision of the operator's */
	GH_EXPR_FSUB,	/* result type, cm[o] 4 (float4) or 8 (float8), with */
	GH_EXPR_FMUL,	/* float.h's checks: out of them, the host raises */
	GH_EXPR_FDIV,	/* PostgreSQL's overflow, underflow or division by */
	GH_EXPR_FNEG,	/* zero error */
	GH_EXPR_COLFK,	/* conditions: push float column vals[o] as its order
					 * key (gh_agg_float_cmp_key), a value of scale 0 */
	GH_EXPR_FKCONST /* push the order key cm[o] of a float constant */
} gh_expr_op;

#define GH_EXPR_OP_LAST GH_EXPR_FKCONST

/* the ops that push an input column vals[o] */
#define GH_EXPR_READS_INPUT(op) \
	((op) == GH_EXPR_COL || (op) == GH_EXPR_COLI || (op) == GH_EXPR_COLF || \
	 (op) == GH_EXPR_COLI2F || (op) == GH_EXPR_COLFK)

/* the ops of float programs (and only theirs) */
#define GH_EXPR_IS_FLOAT_OP(op) ((op) >= GH_EXPR_COLF && (op) <= GH_EXPR_FNEG)

/*
 * The dates PostgreSQL allows, in its numbering (days from 2000-01-01):
 * Julian day 0 up to, not including, 5874898-01-01; INT32_MIN and INT32_MAX
 * are -infinity and infinity.
 */
#define GH_DATE_MIN (-2451545)
#define GH_DATE_END 2145031949


/* ops that make a program conditional (see above) */
#define GH_EXPR_IS_CONDITION(op) \
	((op) >= GH_EXPR_LT && (op) <= GH_EXPR_NOTNULL)

/*
 * Integer programs: a value of integer or date arithmetic over integer and
 * date columns (COLI) and constants has no NUMERIC column or arithmetic,
 * and int_out set: its result is the int64 value, a column of the
 * expression's type.  The same ops
 * compute integer operands inside NUMERIC programs and conditions.  Every
 * integer on the stack is within int64, so each op is exact in 128 bits
 * before its range check; a row that leaves the range is listed for the
 * host, where PostgreSQL raises its "out of range" error for it.  A
 * condition alone (a boolean program) is an integer program too: 0 or 1.
 */

/*
 * Float programs: a value of float4 or float8 arithmetic (+,
 * -, *, /, unary -) over float columns (COLF), integer columns cast to a
 * float type (COLI2F) and constants (FCONST) has those ops alone, and
 * float_out set: its values are doubles (a float4's exactly), as float
 * columns travel.  Each op computes in its result type's
 * precision, rounded to nearest with no fused multiply-add (on the GPU
 * through the _rn intrinsics), so every value is the one PostgreSQL's
 * float4pl, float8mul, float48div ... compute; where float.h's checks
 * would raise (an infinite result of finite operands, a zero product or
 * quotient of non-zero ones, a division by zero) the row goes to the host,
 * where PostgreSQL raises that error.
 */

/* Results of gh_expr_eval for one row. */
#define GH_EXPR_OK 0
#define GH_EXPR_NULL 1 /* an input has no value on the device */
#define GH_EXPR_HOST 2 /* out of the device's bounds: the host computes it */

/*
 * One program, with the pointers of its input columns on the target.
 * scale[o]: for COL, the column's scale (its packed m is value * 10^scale);
 * for CONST, the constant's display scale.  out_scale is the output
 * column's scale, at least the program's result scale; all_host sends every
 * row with values to the host (a result scale beyond the device's).
 */
typedef struct gh_expr
{
	int nops;
	int int_out;	 /* an integer program: out is the int64 value itself */
	int float_out;	 /* a float program: out is the double's bits */
	int out_scale;
	int all_host;
	int conditional; /* has a condition: NULL inputs go to the host */
	uint8_t op[GH_EXPR_MAX_OPS];
	int8_t scale[GH_EXPR_MAX_OPS];
	int64_t cm[GH_EXPR_MAX_OPS];
	const int64_t *vals[GH_EXPR_MAX_OPS];
	const uint8_t *valid[GH_EXPR_MAX_OPS];
} gh_expr;

/*
 * gh_expr_eval_*: for every row i < n, out[i] = the program's packed
 * value and out_valid[i] = 1, or out_valid[i] = 0; the rows to compute on
 * the host are listed in host_rows[0 .. *nhost) in no particular order
 * (*nhost is set; the GPU version returns before the kernel finishes).
 */
gh_status gh_expr_eval_gpu(const gh_expr *e, uint32_t n, int64_t *out,
							   uint8_t *out_valid, uint32_t *host_rows,
							   uint32_t *nhost, void *stream, gh_error *err);
gh_status gh_expr_eval_cpu(const gh_expr *e, uint32_t n, int64_t *out,
							   uint8_t *out_valid, uint32_t *host_rows,
							   uint32_t *nhost, gh_error *err);

/*
 * gh_expr_eval_rows_cpu runs program e (over host arrays) for the nrows rows
 * listed in rows only: out[rows[j]] and out_valid[rows[j]] as
 * gh_expr_eval_cpu sets them, a row for the host being not valid.
 */
gh_status gh_expr_eval_rows_cpu(const gh_expr *e, const uint32_t *rows,
								uint32_t nrows, int64_t *out,
								uint8_t *out_valid, gh_error *err);

#ifdef __cplusplus
}
#endif

#endif /* GH_DEVEXPR_H */
