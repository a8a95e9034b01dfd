/*-------------------------------------------------------------------------
 * agg_test_util.h
 *	  Shared by the aggregate kernel unit tests (C99 and CUDA C++): edge
 *	  values of every column kind, hashes that collide on purpose, exact keys
 *	  whose key hashes are equal, and the device expression programs that the
 *	  tests run with the inputs each needs.
 *
 * The PRNG, TAP output and the inverse of gh_mix64 come from the multimap's
 * mm_test_util.h.  Everything here only makes inputs: the expected results
 * are the tests' own (test_aggregate_cpu.c computes them from the API's
 * contract, test_aggregate_gpu.cu takes the CPU twin's).
 *-------------------------------------------------------------------------
 */
#ifndef AGG_TEST_UTIL_H
#define AGG_TEST_UTIL_H

#include <float.h>
#include <math.h>

#include "gh_aggregate.h"
#include "gh_devexpr.h"
/* the float extremes' "no value yet" words, which the tests check */
#include "aggregate_impl.h"
#include "mm_test_util.h"

static MT_UNUSED void *
at_alloc(size_t bytes)
{
	void *p = NULL;

	if (posix_memalign(&p, 64, bytes ? bytes : 16) != 0)
	{
		printf("Bail out! out of host memory (%zu bytes)\n", bytes);
		exit(2);
	}
	memset(p, 0xa5, bytes ? bytes : 16); /* not zero: nothing is free */
	return p;
}

static MT_UNUSED double
at_bitsd(uint64_t u)
{
	double d;

	memcpy(&d, &u, 8);
	return d;
}

static MT_UNUSED uint64_t
at_dbits(double d)
{
	uint64_t u;

	memcpy(&u, &d, 8);
	return u;
}

/* ---------------------------------------------------------------- values */

/* Integers: the ends of int64 and small values, so sums carry both ways. */
static MT_UNUSED int64_t
at_int_edge(mt_rng *r)
{
	switch (mt_below(r, 8))
	{
		case 0:
			return INT64_MAX;
		case 1:
			return INT64_MIN;
		case 2:
			return INT64_MAX - (int64_t) mt_below(r, 3);
		case 3:
			return INT64_MIN + (int64_t) mt_below(r, 3);
		case 4:
			return (int64_t) mt_below(r, 5) - 2;
		case 5:
			return (int64_t) mt_next(r);
		default:
			return (int64_t) mt_below(r, 2001) - 1000;
	}
}

/*
 * Doubles whose every partial sum is exact in any order (small multiples of
 * 1/4, 2^30), with the specials mixed in: NaN of both signs, infinities and
 * zeros of both signs.  any_order 0 adds values whose sums round (float4's
 * and double's extremes, denormals, random doubles): only for the twin's
 * row-order sums.
 */
static MT_UNUSED double
at_float_edge(mt_rng *r, int any_order)
{
	uint64_t k = mt_below(r, any_order ? 16 : 22);

	switch (k)
	{
		case 0:
			return NAN;
		case 1:
			return -NAN;
		case 2:
			return INFINITY;
		case 3:
			return -INFINITY;
		case 4:
			return 0.0;
		case 5:
			return -0.0;
		case 6:
			/* beside small values, float4's extremes round: twin order only */
			return any_order ? 1073741824.0 : (double) FLT_MAX;
		case 7:
			return any_order ? -0.75 : -(double) FLT_MIN;
		case 16:
			return DBL_MAX;
		case 17:
			return -DBL_MAX;
		case 18:
			return DBL_MIN / 4; /* a denormal */
		case 19:
			return (double) FLT_MIN * (double) FLT_EPSILON; /* float4 denormal */
		case 20:
		case 21:
			return (mt_unit(r) - 0.5) * 1e300 * mt_unit(r);
		default:
			return (double) ((int64_t) mt_below(r, 1 << 20) - (1 << 19)) / 4;
	}
}

/*
 * Packed NUMERIC values at the packing limits: |m| up to 2^55 - 1, display
 * scales up to 255.
 */
static MT_UNUSED int64_t
at_num_edge(mt_rng *r)
{
	int64_t lim = GH_AGG_NUM_MAX_ABS - 1;
	int64_t m;
	int d = (int) mt_below(r, 4) == 0 ? GH_AGG_NUM_MAX_DSCALE
									  : (int) mt_below(r, 20);

	switch (mt_below(r, 6))
	{
		case 0:
			m = lim;
			break;
		case 1:
			m = -lim;
			break;
		case 2:
			m = lim - (int64_t) mt_below(r, 4);
			break;
		case 3:
			m = (int64_t) (mt_next(r) % (uint64_t) lim) *
				(mt_below(r, 2) ? 1 : -1);
			break;
		default:
			m = (int64_t) mt_below(r, 201) - 100;
			break;
	}
	return gh_agg_num_pack(m, d);
}

/* ---------------------------------------------------------------- hashes */

/*
 * n distinct hashes that all start their probe in slot `slot` of any table
 * of at most 2^32 slots (gh_mix64 of each has those low 32 bits).
 */
static MT_UNUSED void
at_colliding_hashes(uint64_t *h, uint32_t n, uint64_t slot, mt_rng *r)
{
	uint64_t salt = mt_next(r) & 0xffff000000000000ULL;

	for (uint32_t i = 0; i < n; i++)
		h[i] = mt_unmix64(salt | ((uint64_t) (i + 1) << 32) | slot);
}

/*
 * Two-key exact keys that hash alike (gh_agg_key_hash_*): given the first
 * key word w0' and the NULL mask of the second key, the second word w1' such
 * that (mask', w0', w1') has the key hash of (mask, w0, w1).
 */
static MT_UNUSED uint64_t
at_colliding_w1(uint8_t mask, uint64_t w0, uint64_t w1, uint8_t mask2,
				uint64_t w0b)
{
	const uint64_t c = UINT64_C(0x9e3779b97f4a7c15);
	uint64_t target = mt_unmix64(
		gh_agg_key_hash_step(gh_agg_key_hash_step(gh_agg_key_hash_init(mask), w0),
							 w1));
	uint64_t mid = gh_agg_key_hash_step(gh_agg_key_hash_init(mask2), w0b);

	return target - mid - c;
}

/* ---------------------------------------------------------------- programs */

/*
 * The device expression programs of the tests.  Each op that reads an input
 * names its column in col[] (of at most AT_NCOLS columns, made by
 * at_prog_data); at_prog_build points the program at whichever copy of the
 * columns (host or device) it is given.
 */
#define AT_NCOLS 4

typedef enum at_prog_id
{
	AT_P_NUMARITH,	/* ((a * b) + c - 0.5), negated: numeric scales */
	AT_P_NUMMUL3,	/* a * b * c: the 2^62 factor bound */
	AT_P_NUMSCALE,	/* a at out_scale a's + 3: the packing limit */
	AT_P_INT,		/* x op y for every integer op and width (variant) */
	AT_P_INEG,		/* -x at every width (variant) */
	AT_P_CASE,		/* CASE WHEN x > y AND NOT z IS NULL THEN x - y ... */
	AT_P_LOGIC,		/* (x < y OR x = z) AND (y <> z OR x >= y OR NOT y <= z) */
	AT_P_NUMCOND,	/* CASE WHEN a > 1.5 THEN a ELSE -2 END: numeric NULLs */
	AT_P_DATE,		/* d1 - d2, d1 + k, d1 - k (variant) */
	AT_P_YEAR,		/* extract(year from a date or timestamp) (variant) */
	AT_P_FLOAT,		/* -((a + b) * c2f / k) or the like, float4/8 (variant) */
	AT_P_FLOATCMP,	/* CASE WHEN f = 0 OR f > 1.5 THEN 1 END: order keys */
	AT_P_ALLHOST,	/* all_host: every row with values to the host */
	AT_NPROGS
} at_prog_id;

static MT_UNUSED const char *at_prog_name[AT_NPROGS] = {
	"numeric arithmetic", "numeric a*b*c", "numeric to a larger scale",
	"integer op", "integer negation", "CASE over integers",
	"AND/OR/NOT/comparisons", "CASE over a numeric", "date arithmetic",
	"extract year", "float arithmetic", "float conditions", "all to the host"
};

/* how many variants each program has */
static const int at_prog_variants[AT_NPROGS] = { 1, 1, 1, 15, 3, 1, 1,
												 1, 3, 2, 10, 1, 1 };

static const uint8_t at_int_ops[5] = { GH_EXPR_IADD, GH_EXPR_ISUB, GH_EXPR_IMUL,
									   GH_EXPR_IDIV, GH_EXPR_IMOD };
static const int at_widths[3] = { 2, 4, 8 };
static const uint8_t at_float_ops[4] = { GH_EXPR_FADD, GH_EXPR_FSUB,
										 GH_EXPR_FMUL, GH_EXPR_FDIV };

/* The scales of the numeric columns a, b, c of the numeric programs. */
static const int at_num_scale[3] = { 2, 1, 0 };

typedef struct at_prog
{
	gh_expr e;
	int8_t col[GH_EXPR_MAX_OPS];
} at_prog;

static MT_UNUSED void
at_op(at_prog *p, uint8_t op, int64_t cm, int scale, int col)
{
	int o = p->e.nops++;

	p->e.op[o] = op;
	p->e.cm[o] = cm;
	p->e.scale[o] = (int8_t) scale;
	p->col[o] = (int8_t) col;
	if (GH_EXPR_IS_CONDITION(op))
		p->e.conditional = 1;
}

/* at_prog_make fills p with program id, variant v (column pointers unset). */
static MT_UNUSED void
at_prog_make(at_prog *p, int id, int v)
{
	memset(p, 0, sizeof(*p));
	switch (id)
	{
		case AT_P_NUMARITH:
			at_op(p, GH_EXPR_COL, 0, at_num_scale[0], 0);
			at_op(p, GH_EXPR_COL, 0, at_num_scale[1], 1);
			at_op(p, GH_EXPR_MUL, 0, 0, -1);
			at_op(p, GH_EXPR_COL, 0, at_num_scale[2], 2);
			at_op(p, GH_EXPR_ADD, 0, 0, -1);
			at_op(p, GH_EXPR_CONST, 5, 1, -1);
			at_op(p, GH_EXPR_SUB, 0, 0, -1);
			at_op(p, GH_EXPR_NEG, 0, 0, -1);
			p->e.out_scale = 4;
			break;
		case AT_P_NUMMUL3:
			at_op(p, GH_EXPR_COL, 0, at_num_scale[0], 0);
			at_op(p, GH_EXPR_COL, 0, at_num_scale[1], 1);
			at_op(p, GH_EXPR_MUL, 0, 0, -1);
			at_op(p, GH_EXPR_COL, 0, at_num_scale[2], 2);
			at_op(p, GH_EXPR_MUL, 0, 0, -1);
			p->e.out_scale = 3;
			break;
		case AT_P_NUMSCALE:
			at_op(p, GH_EXPR_COL, 0, at_num_scale[0], 0);
			p->e.out_scale = at_num_scale[0] + 3;
			break;
		case AT_P_INT:
			at_op(p, GH_EXPR_COLI, 0, 0, 0);
			at_op(p, GH_EXPR_COLI, 0, 0, 1);
			at_op(p, at_int_ops[v % 5], at_widths[v / 5], 0, -1);
			p->e.int_out = 1;
			break;
		case AT_P_INEG:
			at_op(p, GH_EXPR_COLI, 0, 0, 0);
			at_op(p, GH_EXPR_INEG, at_widths[v], 0, -1);
			p->e.int_out = 1;
			break;
		case AT_P_CASE:
			at_op(p, GH_EXPR_COLI, 0, 0, 0);	  /* 0 */
			at_op(p, GH_EXPR_COLI, 0, 0, 1);	  /* 1 */
			at_op(p, GH_EXPR_GT, 0, 0, -1);		  /* 2 */
			at_op(p, GH_EXPR_COLI, 0, 0, 2);	  /* 3 */
			at_op(p, GH_EXPR_ISNULL, 0, 0, -1);	  /* 4 */
			at_op(p, GH_EXPR_NOT, 0, 0, -1);	  /* 5 */
			at_op(p, GH_EXPR_AND, 0, 0, -1);	  /* 6 */
			at_op(p, GH_EXPR_JUMPF, 12, 0, -1);	  /* 7 */
			at_op(p, GH_EXPR_COLI, 0, 0, 0);	  /* 8 */
			at_op(p, GH_EXPR_COLI, 0, 0, 1);	  /* 9 */
			at_op(p, GH_EXPR_ISUB, 8, 0, -1);	  /* 10 */
			at_op(p, GH_EXPR_JUMP, 18, 0, -1);	  /* 11 */
			at_op(p, GH_EXPR_COLI, 0, 0, 2);	  /* 12 */
			at_op(p, GH_EXPR_NOTNULL, 0, 0, -1);  /* 13 */
			at_op(p, GH_EXPR_JUMPF, 17, 0, -1);	  /* 14 */
			at_op(p, GH_EXPR_COLI, 0, 0, 2);	  /* 15 */
			at_op(p, GH_EXPR_JUMP, 18, 0, -1);	  /* 16 */
			at_op(p, GH_EXPR_NULLV, 0, 0, -1);	  /* 17 */
			p->e.out_scale = 0;
			break;
		case AT_P_LOGIC:
			at_op(p, GH_EXPR_COLI, 0, 0, 0);
			at_op(p, GH_EXPR_COLI, 0, 0, 1);
			at_op(p, GH_EXPR_LT, 0, 0, -1);
			at_op(p, GH_EXPR_COLI, 0, 0, 0);
			at_op(p, GH_EXPR_COLI, 0, 0, 2);
			at_op(p, GH_EXPR_EQ, 0, 0, -1);
			at_op(p, GH_EXPR_OR, 0, 0, -1);
			at_op(p, GH_EXPR_COLI, 0, 0, 1);
			at_op(p, GH_EXPR_COLI, 0, 0, 2);
			at_op(p, GH_EXPR_NE, 0, 0, -1);
			at_op(p, GH_EXPR_COLI, 0, 0, 0);
			at_op(p, GH_EXPR_COLI, 0, 0, 1);
			at_op(p, GH_EXPR_GE, 0, 0, -1);
			at_op(p, GH_EXPR_OR, 0, 0, -1);
			at_op(p, GH_EXPR_COLI, 0, 0, 1);
			at_op(p, GH_EXPR_COLI, 0, 0, 2);
			at_op(p, GH_EXPR_LE, 0, 0, -1);
			at_op(p, GH_EXPR_NOT, 0, 0, -1);
			at_op(p, GH_EXPR_OR, 0, 0, -1);
			at_op(p, GH_EXPR_AND, 0, 0, -1);
			p->e.out_scale = 0;
			break;
		case AT_P_NUMCOND:
			at_op(p, GH_EXPR_COL, 0, at_num_scale[0], 0);  /* 0 */
			at_op(p, GH_EXPR_CONST, 15, 1, -1);			   /* 1: 1.5 */
			at_op(p, GH_EXPR_GT, 0, 0, -1);				   /* 2 */
			at_op(p, GH_EXPR_JUMPF, 6, 0, -1);			   /* 3 */
			at_op(p, GH_EXPR_COL, 0, at_num_scale[0], 0);  /* 4 */
			at_op(p, GH_EXPR_JUMP, 7, 0, -1);			   /* 5 */
			at_op(p, GH_EXPR_CONST, -2, 0, -1);			   /* 6 */
			p->e.out_scale = at_num_scale[0];
			break;
		case AT_P_DATE:
			at_op(p, GH_EXPR_COLI, 0, 0, 0);
			at_op(p, GH_EXPR_COLI, 0, 0, 1);
			at_op(p, v == 0 ? GH_EXPR_DDIFF : v == 1 ? GH_EXPR_DADDI
													  : GH_EXPR_DSUBI,
				  4, 0, -1);
			p->e.int_out = 1;
			break;
		case AT_P_YEAR:
			at_op(p, GH_EXPR_COLI, 0, 0, v == 0 ? 0 : 3);
			at_op(p, GH_EXPR_YEAR, v == 0 ? 4 : 8, 0, -1);
			p->e.out_scale = 0;
			break;
		case AT_P_FLOAT:
		{
			/* variants 0-7: one op at float4 (even) or float8 (odd) between
			 * a and b, then * c2f, / k and negated; 8, 9: a / b alone */
			int prec = (v & 1) ? 8 : 4;

			at_op(p, GH_EXPR_COLF, 0, 0, 0);
			at_op(p, GH_EXPR_COLF, 0, 0, 1);
			at_op(p, at_float_ops[v < 8 ? v / 2 : 3], prec, 0, -1);
			if (v < 8)
			{
				at_op(p, GH_EXPR_COLI2F, prec, 0, 2);
				at_op(p, GH_EXPR_FMUL, prec, 0, -1);
				at_op(p, GH_EXPR_FCONST, (int64_t) at_dbits(prec == 4 ? 3.0 : 0.1),
					  0, -1);
				at_op(p, GH_EXPR_FDIV, prec, 0, -1);
				at_op(p, GH_EXPR_FNEG, 0, 0, -1);
			}
			p->e.float_out = 1;
			break;
		}
		case AT_P_FLOATCMP:
			at_op(p, GH_EXPR_COLFK, 0, 0, 0);						 /* 0 */
			at_op(p, GH_EXPR_FKCONST, gh_agg_float_cmp_key(0.0), 0, -1); /* 1 */
			at_op(p, GH_EXPR_EQ, 0, 0, -1);							 /* 2 */
			at_op(p, GH_EXPR_COLFK, 0, 0, 0);						 /* 3 */
			at_op(p, GH_EXPR_FKCONST, gh_agg_float_cmp_key(1.5), 0, -1); /* 4 */
			at_op(p, GH_EXPR_GT, 0, 0, -1);							 /* 5 */
			at_op(p, GH_EXPR_OR, 0, 0, -1);							 /* 6 */
			at_op(p, GH_EXPR_JUMPF, 10, 0, -1);						 /* 7 */
			at_op(p, GH_EXPR_CONST, 1, 0, -1);						 /* 8 */
			at_op(p, GH_EXPR_JUMP, 11, 0, -1);						 /* 9 */
			at_op(p, GH_EXPR_NULLV, 0, 0, -1);						 /* 10 */
			p->e.out_scale = 0;
			break;
		case AT_P_ALLHOST:
			at_op(p, GH_EXPR_COL, 0, at_num_scale[0], 0);
			at_op(p, GH_EXPR_COL, 0, at_num_scale[1], 1);
			at_op(p, GH_EXPR_ADD, 0, 0, -1);
			p->e.out_scale = 2;
			p->e.all_host = 1;
			break;
	}
}

/* at_prog_point sets the input pointers of p to columns vals/valid. */
static MT_UNUSED void
at_prog_point(at_prog *p, int64_t *const *vals, uint8_t *const *valid)
{
	for (int o = 0; o < p->e.nops; o++)
		if (p->col[o] >= 0)
		{
			p->e.vals[o] = vals[p->col[o]];
			p->e.valid[o] = valid[p->col[o]];
		}
}

/* A value of integer width w (2, 4, 8 bytes), edges first. */
static MT_UNUSED int64_t
at_int_of_width(mt_rng *r, int w)
{
	int64_t hi = w == 2 ? INT16_MAX : w == 4 ? INT32_MAX : INT64_MAX;

	switch (mt_below(r, 8))
	{
		case 0:
			return hi;
		case 1:
			return -hi - 1;
		case 2:
			return -1;
		case 3:
			return 0;
		case 4:
			return (int64_t) mt_below(r, 7) - 3;
		case 5:
			return hi - (int64_t) mt_below(r, 3);
		default:
			return w == 8 ? (int64_t) mt_next(r)
						  : (int64_t) (mt_next(r) % (uint64_t) (2 * hi + 2)) - hi - 1;
	}
}

/* A date: the infinities, the ends of the range, and ordinary days. */
static MT_UNUSED int64_t
at_date_edge(mt_rng *r)
{
	switch (mt_below(r, 10))
	{
		case 0:
			return INT32_MAX;
		case 1:
			return INT32_MIN;
		case 2:
			return GH_DATE_MIN + (int64_t) mt_below(r, 3);
		case 3:
			return GH_DATE_END - 1 - (int64_t) mt_below(r, 3);
		case 4:
			return (int64_t) mt_below(r, 4000000) - 2000000;
		default:
			return (int64_t) mt_below(r, 40000) - 20000;
	}
}

/* A timestamp: the infinities, the ends of the range, ordinary times. */
static MT_UNUSED int64_t
at_ts_edge(mt_rng *r)
{
	const int64_t day = INT64_C(86400000000);

	switch (mt_below(r, 9))
	{
		case 0:
			return INT64_MAX;
		case 1:
			return INT64_MIN;
		case 2:
			return (int64_t) GH_DATE_MIN * day + (int64_t) mt_below(r, 3);
		case 3:
			return INT64_C(9223371331200000000) - 1 - (int64_t) mt_below(r, 3);
		case 4:
			return -(int64_t) mt_below(r, 3); /* just before 2000-01-01 */
		default:
			return ((int64_t) mt_below(r, 2000000) - 1000000) * day +
				   (int64_t) mt_below(r, (uint64_t) day);
	}
}

/*
 * at_prog_data fills the n rows of columns vals/valid with the inputs of
 * program id, variant v: a sixth of the rows NULL, with the rest at the
 * edges the program has.
 */
static MT_UNUSED void
at_prog_data(int id, int v, mt_rng *r, uint32_t n, int64_t *const *vals,
			 uint8_t *const *valid)
{
	for (int c = 0; c < AT_NCOLS; c++)
		for (uint32_t i = 0; i < n; i++)
		{
			int64_t x;

			valid[c][i] = mt_below(r, 6) != 0;
			switch (id)
			{
				case AT_P_NUMARITH:
				case AT_P_NUMMUL3:
				case AT_P_NUMSCALE:
				case AT_P_NUMCOND:
				case AT_P_ALLHOST:
					x = at_num_edge(r);
					break;
				case AT_P_INT:
					x = at_int_of_width(r, at_widths[v / 5]);
					break;
				case AT_P_INEG:
					x = at_int_of_width(r, at_widths[v]);
					break;
				case AT_P_CASE:
				case AT_P_LOGIC:
					x = mt_below(r, 2) ? (int64_t) mt_below(r, 5) : at_int_edge(r);
					break;
				case AT_P_DATE:
					x = c == 0 || (c == 1 && v == 0) ? at_date_edge(r)
													 : at_int_of_width(r, 4);
					break;
				case AT_P_YEAR:
					x = c == 0 ? at_date_edge(r) : at_ts_edge(r);
					break;
				case AT_P_FLOAT:
				case AT_P_FLOATCMP:
					if (c == 2)
						x = at_int_of_width(r, 8);
					else if (mt_below(r, 3) == 0)
					{
						/* float4 values, overflowing and underflowing */
						static const float f4[] = { FLT_MAX, -FLT_MAX, FLT_MIN,
													1e-30f, 1e30f, 1.5f, 0.1f };

						x = (int64_t) at_dbits((double) f4[mt_below(r, 7)]);
					}
					else
					{
						double d = at_float_edge(r, 0);

						/* a float4 program's columns are float4 values */
						if (id == AT_P_FLOAT && !(v & 1))
							d = (double) (float) d;
						x = (int64_t) at_dbits(d);
					}
					break;
				default:
					x = 0;
			}
			vals[c][i] = valid[c][i] ? x : 0;
		}
}

/* ---------------------------------------------------------------- accumulator inputs */

/* The columns of the accumulator tests: every kind, op set and no-op. */
#define AC_NCOLS 8
static const uint8_t ac_kind[AC_NCOLS] = {
	GH_AGG_KIND_INT, GH_AGG_KIND_FLOAT, GH_AGG_KIND_NUMERIC, GH_AGG_KIND_NONE,
	GH_AGG_KIND_INT, GH_AGG_KIND_FLOAT, GH_AGG_KIND_INT, GH_AGG_KIND_NUMERIC
};
static const uint8_t ac_ops[AC_NCOLS] = {
	GH_AGG_OP_SUM | GH_AGG_OP_MIN | GH_AGG_OP_MAX | GH_AGG_OP_COUNT,
	GH_AGG_OP_SUM | GH_AGG_OP_MIN | GH_AGG_OP_MAX | GH_AGG_OP_COUNT,
	GH_AGG_OP_SUM | GH_AGG_OP_MIN | GH_AGG_OP_MAX | GH_AGG_OP_COUNT,
	GH_AGG_OP_SUM | GH_AGG_OP_COUNT, /* NONE: only counted, whatever ops */
	0,								 /* an expression's input only */
	GH_AGG_OP_MIN | GH_AGG_OP_COUNT,
	GH_AGG_OP_COUNT,
	GH_AGG_OP_MAX | GH_AGG_OP_COUNT
};

typedef struct ac_data
{
	uint32_t n;
	uint32_t *ids;
	int64_t *vals[AC_NCOLS];
	uint8_t *valid[AC_NCOLS];
} ac_data;

typedef enum ac_shape
{
	AC_ONE_GROUP,
	AC_OWN_GROUP,
	AC_RANDOM,
	AC_SKIPPED /* random, a third of the rows GH_AGG_NO_GROUP */
} ac_shape;

static MT_UNUSED const char *ac_shape_name[] = { "one group", "every row its own group",
									   "random groups", "with skipped rows" };

static MT_UNUSED void
ac_make(ac_data *d, uint32_t n, ac_shape shape, uint32_t ngroups, int any_order,
		mt_rng *rng)
{
	d->n = n;
	d->ids = (uint32_t *) malloc(4 * (n + 1));
	for (int c = 0; c < AC_NCOLS; c++)
	{
		d->vals[c] = (int64_t *) malloc(8 * (n + 1));
		d->valid[c] = (uint8_t *) malloc(n + 1);
	}
	for (uint32_t i = 0; i < n; i++)
	{
		d->ids[i] = shape == AC_ONE_GROUP ? 0 : shape == AC_OWN_GROUP ? i
											   : (uint32_t) mt_below(rng, ngroups);
		if (shape == AC_SKIPPED && mt_below(rng, 3) == 0)
			d->ids[i] = GH_AGG_NO_GROUP;
		for (int c = 0; c < AC_NCOLS; c++)
		{
			d->valid[c][i] = mt_below(rng, 7) != 0;
			if (ac_kind[c] == GH_AGG_KIND_FLOAT)
				d->vals[c][i] = (int64_t) at_dbits(at_float_edge(rng, any_order));
			else if (ac_kind[c] == GH_AGG_KIND_NUMERIC)
				d->vals[c][i] = at_num_edge(rng);
			else
				d->vals[c][i] = at_int_edge(rng);
		}
	}
}

static MT_UNUSED void
ac_free(ac_data *d)
{
	free(d->ids);
	for (int c = 0; c < AC_NCOLS; c++)
	{
		free(d->vals[c]);
		free(d->valid[c]);
	}
}

static MT_UNUSED gh_agg_batch
ac_batch(const ac_data *d)
{
	gh_agg_batch b;

	memset(&b, 0, sizeof(b));
	b.n = d->n;
	b.ids = d->ids;
	for (int c = 0; c < AC_NCOLS; c++)
	{
		b.vals[c] = ac_kind[c] == GH_AGG_KIND_NONE ? NULL : d->vals[c];
		b.valid[c] = d->valid[c];
	}
	return b;
}

#endif /* AGG_TEST_UTIL_H */
