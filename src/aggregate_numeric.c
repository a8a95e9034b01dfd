/*-------------------------------------------------------------------------
 * aggregate_numeric.c
 *	  NUMERIC in gpuhash_aggregate(): fixed point on the device, host-side
 *	  state for what does not fit, and results written directly.
 *
 * Input.  Staging decodes each NUMERIC argument's stored form into an int64
 * and a display scale (gh_agg_num_decode, inline in aggregate.h).  Each
 * column has a scale S, the largest display scale seen so far (at most
 * GH_NUM_SCALE_CAP); before a batch goes to the device its values are
 * brought to S and packed with their display scale (gh_agg_prepare_numeric).
 * When a batch brings a larger scale, the existing sums and extremes of that
 * column are rescaled on the host (rescale_column); what no longer fits
 * moves to the side state.
 *
 * Side state.  NUMERIC values the device cannot take (NaN, infinities, more
 * than 18 digits, scale above GH_NUM_SCALE_CAP, or too large once scaled)
 * are listed as side rows of the batch (gh_agg_add_side_row) and, once the
 * batch's rows have their groups, added on the host per (group, column) with
 * PostgreSQL's numeric functions (gh_agg_apply_side_rows), in whichever set
 * the row went to.
 *
 * Results.  gh_agg_numeric_value combines a group's device accumulators with
 * its side state into the value PostgreSQL's aggregate returns.
 *
 * The same side state keeps the extremes of text min and max (below, "text:
 * min and max kept on the host"), whose values the device only counts.
 *
 * Device expressions.  Before a batch goes to the device, each program's
 * column is raised to its result's scale (prepare_exprs); after, the rows a
 * program left to the host (out of the device's bounds, or with a
 * host-held input) are evaluated by PostgreSQL's executor on the
 * expression the program was compiled from (gh_expr_fixups, devexpr.c),
 * and become side rows of its column.
 *
 * Every group of a result row may need a NUMERIC: sum(bigint), sum and
 * min/max of numeric, and avg of any integer or numeric.  Going through
 * PostgreSQL's functions for each (numeric_in of a digit string,
 * int64_to_numeric, numeric_div) costs several hundred nanoseconds and a few
 * pallocs a value, which at 5*10^7 groups was most of the run.  Here the
 * value is written directly in the stored format, from an int128 and a
 * decimal scale, with 64-bit arithmetic for the digits.
 *
 * The results are the bytes PostgreSQL's own functions return, not only
 * equal values:
 *
 * - gh_num_make(v, dscale): v / 10^dscale with display scale dscale, as
 *	 numeric_in of its text would give.
 * - gh_num_avg(v, dscale, n): what numeric_div gives for the NUMERIC
 *	 v / 10^dscale (display scale dscale) divided by the NUMERIC n.  Its
 *	 result scale follows numeric_div's rule: enough fractional digits for
 *	 at least 16 significant ones, judged from the weights and first
 *	 base-10000 digits of the two operands (when the first digits are equal
 *	 the quotient is assumed to be below one unit of that weight), and never
 *	 fewer than the dividend's display scale.  numeric_div computes the
 *	 quotient exactly to that scale and rounds half away from zero; an exact
 *	 integer division with remainder does the same.  When the scaled
 *	 dividend would not fit in 128 bits, or the scale exceeds what the
 *	 digit writer takes, it returns (Datum) 0 and the caller uses
 *	 numeric_div itself.
 *
 * The stored format: a varlena of a uint16 header and base-10000 int16
 * digits, most significant first, with no leading or trailing zero digit
 * (zero has none, weight 0 and a positive sign).  The short header, used
 * whenever the display scale is at most 63 and the weight within -64..63
 * (always, for the values made here), holds 0x8000, the sign in 0x2000, the
 * display scale in 0x1F80 and the weight in 0x007F (two's complement in
 * seven bits).  sql/aggregate.sql compares these results with native ones by
 * text, numeric_send and pg_column_size.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/int.h"

#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/timestamp.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/varlena.h"

#include "aggregate.h"

#define NBASE			10000
#define E16				UINT64CONST(10000000000000000)

/* The largest display scale gh_num_make takes. */
#define NUM_MAX_SCALE	38

/* Stored-format header bits (short form). */
#define NUMH_SHORT		0x8000
#define NUMH_NEG		0x2000
#define NUMH_DSCALE_SHIFT 7
#define NUMH_WEIGHT_NEG 0x0040
#define NUMH_WEIGHT_MASK 0x003F
#define NUMH_DSCALE_MAX 63

/* Base-10000 digits of a magnitude at a decimal scale. */
typedef struct NumDigits
{
	int			n;				/* digits, no leading or trailing zero */
	int			weight;			/* weight of d[0]; 0 when n = 0 */
	int16		d[12];			/* most significant first */
} NumDigits;

static void num_digits(uint128 u, int scale, NumDigits *out);
static void num_top(uint128 u, int scale, int *weight, int *first);
static Datum num_store(const NumDigits *nd, bool neg, int dscale);
static Datum num_make(int128 v, int scale, int dscale);
static int	num_cmp(Datum a, Datum b);
static void rescale_column(GhAggRun *run, int c, int newscale);
static void prepare_exprs(GhAggRun *run);
static int	cmp_side_row_col(const void *a, const void *b);
static void rescale_groups(GhAggRun *run, GhGroupSet *s, int c, int oldscale,
						   int128 f, uint64 ng, uint64 *lo, int64 *hi,
						   const uint32 *aux, int64 *mins, int64 *maxs);
static GhNumSide *side_entry(GhAggRun *run, GhGroupSet *s, uint64 g, int c);
static void side_text(GhAggRun *run, GhNumSide *e, int c, Datum v);
static void side_add_finite(GhAggRun *run, GhNumSide *e, Datum v, bool count,
							bool sum, bool extremes);
static Datum numeric_total(GhAggRun *run, GhGroupSet *s, uint64 g, int c,
						   GhNumSide *e);
static Datum numeric_extreme(GhAggRun *run, GhGroupSet *s, uint64 g, int c,
							 GhNumSide *e, int want, bool *isnull);

static const uint64 pow10_64[20] = {
	UINT64CONST(1), UINT64CONST(10), UINT64CONST(100), UINT64CONST(1000),
	UINT64CONST(10000), UINT64CONST(100000), UINT64CONST(1000000),
	UINT64CONST(10000000), UINT64CONST(100000000), UINT64CONST(1000000000),
	UINT64CONST(10000000000), UINT64CONST(100000000000),
	UINT64CONST(1000000000000), UINT64CONST(10000000000000),
	UINT64CONST(100000000000000), UINT64CONST(1000000000000000),
	UINT64CONST(10000000000000000), UINT64CONST(100000000000000000),
	UINT64CONST(1000000000000000000), UINT64CONST(10000000000000000000)
};

/* gh_pow10_u128 returns 10^k, 0 <= k <= 38. */
uint128
gh_pow10_u128(int k)
{
	Assert(k >= 0 && k <= 38);
	if (k <= 19)
		return pow10_64[k];
	return (uint128) pow10_64[19] * pow10_64[k - 19];
}

/*
 * num_digits splits u / 10^scale (scale <= NUM_MAX_SCALE) into base-10000
 * digits aligned on the decimal point, leading and trailing zeros stripped.
 */
static void
num_digits(uint128 u, int scale, NumDigits *out)
{
	int			pad = (4 - scale % 4) % 4;
	int			fracdigits = (scale + pad) / 4;
	uint64		c[3];			/* 16 decimal digits each, least first */
	int16		all[12];		/* base-10000 digits, least first */
	int			lo;
	int			hi;

	if ((u >> 64) == 0)
	{
		uint64		x = (uint64) u;

		c[0] = x % E16;
		c[1] = x / E16;
		c[2] = 0;
	}
	else
	{
		uint128		q = u / E16;

		c[0] = (uint64) (u - q * E16);
		c[2] = (uint64) (q / E16);
		c[1] = (uint64) (q - (uint128) c[2] * E16);
	}

	/*
	 * Multiply by 10^pad so that the digits of four meet the decimal point;
	 * each chunk times 1000 stays below 2^64, and the top one (u / 10^32 <
	 * 3.5 * 10^6) never carries out.
	 */
	if (pad > 0)
	{
		uint64		carry = 0;

		for (int i = 0; i < 3; i++)
		{
			uint64		t = c[i] * pow10_64[pad] + carry;

			c[i] = t % E16;
			carry = t / E16;
		}
		Assert(carry == 0);
	}
	memset(all, 0, sizeof(all));
	for (int i = 0; i < 3; i++)
	{
		uint32		hi8;
		uint32		lo8;

		if (c[i] == 0)
			continue;
		hi8 = (uint32) (c[i] / 100000000);
		lo8 = (uint32) (c[i] % 100000000);
		all[4 * i] = (int16) (lo8 % NBASE);
		all[4 * i + 1] = (int16) (lo8 / NBASE);
		all[4 * i + 2] = (int16) (hi8 % NBASE);
		all[4 * i + 3] = (int16) (hi8 / NBASE);
	}
	hi = 11;
	while (hi >= 0 && all[hi] == 0)
		hi--;
	if (hi < 0)
	{
		out->n = 0;
		out->weight = 0;
		return;
	}
	lo = 0;
	while (all[lo] == 0)
		lo++;
	out->n = hi - lo + 1;
	out->weight = hi - fracdigits;
	for (int k = hi; k >= lo; k--)
		out->d[hi - k] = all[k];
}

/*
 * num_top finds the weight and the first base-10000 digit of u / 10^scale
 * (u > 0) as num_digits would, without making the other digits.
 */
static void
num_top(uint128 u, int scale, int *weight, int *first)
{
	int			pad = (4 - scale % 4) % 4;
	int			k = 0;

	/*
	 * u * 10^pad has k + 1 base-10000 digits when u >= 10^(4k - pad); below
	 * 2^128, 4k - pad never needs to pass 38.
	 */
	while (4 * (k + 1) - pad <= 38 && u >= gh_pow10_u128(4 * (k + 1) - pad))
		k++;
	*weight = k - (scale + pad) / 4;
	if (k == 0)
		*first = (int) (u * pow10_64[pad]);
	else if ((u >> 64) == 0)
		*first = (int) ((uint64) u / (uint64) gh_pow10_u128(4 * k - pad));
	else
		*first = (int) (u / gh_pow10_u128(4 * k - pad));
}

/* num_store writes digits, a sign and a display scale as a NUMERIC. */
static Datum
num_store(const NumDigits *nd, bool neg, int dscale)
{
	Size		len = VARHDRSZ + sizeof(uint16) + nd->n * sizeof(int16);
	char	   *p = palloc(len);
	uint16		h;

	Assert(dscale >= 0 && dscale <= NUMH_DSCALE_MAX);
	Assert(nd->weight >= -(NUMH_WEIGHT_MASK + 1) && nd->weight <= NUMH_WEIGHT_MASK);
	SET_VARSIZE(p, len);
	h = NUMH_SHORT | (uint16) (dscale << NUMH_DSCALE_SHIFT) |
		(uint16) (nd->weight & NUMH_WEIGHT_MASK);
	if (nd->weight < 0)
		h |= NUMH_WEIGHT_NEG;
	if (neg && nd->n > 0)
		h |= NUMH_NEG;
	memcpy(p + VARHDRSZ, &h, sizeof(h));
	memcpy(p + VARHDRSZ + sizeof(h), nd->d, nd->n * sizeof(int16));
	return PointerGetDatum(p);
}

/*
 * gh_num_make returns the NUMERIC v / 10^dscale with display scale dscale
 * (0 <= dscale <= 38).
 */
Datum
gh_num_make(int128 v, int dscale)
{
	NumDigits	nd;
	bool		neg = v < 0;

	Assert(dscale >= 0 && dscale <= NUM_MAX_SCALE);
	num_digits(neg ? -(uint128) v : (uint128) v, dscale, &nd);
	return num_store(&nd, neg, dscale);
}

/*
 * gh_num_avg returns numeric_div's quotient of the NUMERIC v / 10^dscale
 * (display scale dscale <= 38) by the NUMERIC n (n > 0), or (Datum) 0 when
 * the caller must call numeric_div.
 */
Datum
gh_num_avg(int128 v, int dscale, int64 n)
{
	bool		neg = v < 0;
	uint128		u = neg ? -(uint128) v : (uint128) v;
	NumDigits	nd;
	int			weight1 = 0;
	int			first1 = 0;
	int			weight2 = 0;
	int64		first2 = n;
	int			qweight;
	int			rscale;
	uint128		num;
	uint128		q;
	uint128		r;

	Assert(n > 0 && dscale >= 0 && dscale <= NUM_MAX_SCALE);
	if (u > 0)
		num_top(u, dscale, &weight1, &first1);
	while (first2 >= NBASE)
	{
		first2 /= NBASE;
		weight2++;
	}
	qweight = weight1 - weight2 - (first1 <= first2 ? 1 : 0);
	rscale = Max(16 - 4 * qweight, dscale);
	rscale = Max(rscale, 0);
	if (rscale > NUM_MAX_SCALE)
		return (Datum) 0;

	/* rscale >= dscale: the quotient is round(u * 10^(rscale - dscale) / n) */
	if (__builtin_mul_overflow(u, gh_pow10_u128(rscale - dscale), &num))
		return (Datum) 0;
	if ((num >> 64) == 0)
	{
		q = (uint64) num / (uint64) n;
		r = (uint64) num - (uint64) q * (uint64) n;
	}
	else
	{
		q = num / (uint64) n;
		r = num - q * (uint64) n;
	}
	if (r >= (uint64) n - r)
		q++;
	num_digits(q, rscale, &nd);
	return num_store(&nd, neg, rscale);
}

/*
 * num_make returns the NUMERIC v / 10^scale with display scale dscale
 * (dscale <= scale; v must be a multiple of 10^(scale - dscale)).
 */
static Datum
num_make(int128 v, int scale, int dscale)
{
	if (scale > dscale)
		v /= gh_pow10_i128(scale - dscale);
	return gh_num_make(v, dscale);
}

/* num_cmp compares two NUMERICs as numeric_cmp does. */
static int
num_cmp(Datum a, Datum b)
{
	return DatumGetInt32(DirectFunctionCall2(numeric_cmp, a, b));
}

/* ---- input: fixed point, and the host-side state -------------------- */

/*
 * gh_agg_add_side_row lists a value of the batch for the host: a NUMERIC, or
 * a text (GH_NUMV_TEXT).  The list is batch memory, with the values' copies:
 * both count towards the batch's limit of by-reference copies
 * (gh_agg_batch_bytes_limit).
 */
void
gh_agg_add_side_row(GhAggRun *run, uint32 row, int col, int kind, Datum value)
{
	if (run->batch.nside == run->batch.side_cap)
	{
		run->batch.side_cap = Max(run->batch.side_cap * 2, 64);
		run->batch.side_rows = run->batch.side_rows
			? repalloc_huge(run->batch.side_rows, sizeof(GhSideRow) * (Size) run->batch.side_cap)
			: MemoryContextAllocHuge(run->batch.cxt, sizeof(GhSideRow) * (Size) run->batch.side_cap);
	}
	run->batch.side_rows[run->batch.nside].row = row;
	run->batch.side_rows[run->batch.nside].col = col;
	run->batch.side_rows[run->batch.nside].kind = kind;
	run->batch.side_rows[run->batch.nside].value = value;
	run->batch.nside++;
}

/*
 * gh_agg_unprepack turns column c's staged rows back from packed values
 * into scaled integers (their display scales are in h_ds), for rows that
 * gh_agg_prepare_numeric is to pack: the batch then mixes scales.
 */
void
gh_agg_unprepack(GhAggRun *run, int c)
{
	int64	   *vals = run->batch.h_vals[c];

	if (!run->batch.prepacked[c])
		return;
	run->batch.prepacked[c] = false;
	for (uint32 i = 0; i < run->batch.n; i++)
		vals[i] = gh_agg_num_m(vals[i]);
}

/*
 * gh_agg_prepare_numeric brings the batch's NUMERIC values to their column's
 * scale and packs them; values that do not fit become host-side rows.
 */
void
gh_agg_prepare_numeric(GhAggRun *run)
{
	uint32		n = run->batch.n;

	for (int c = 0; c < run->ncols_in; c++)
	{
		int64	   *vals = run->batch.h_vals[c];
		uint8	   *valid = run->batch.h_valid[c];
		const uint8 *dss = run->batch.h_ds[c];
		int			scale;

		if (run->plan->cols[c].kind != GH_AGG_KIND_NUMERIC)
			continue;
		if (run->batch.max_dscale[c] > run->num.scale[c])
		{
			gh_agg_unprepack(run, c);
			rescale_column(run, c, run->batch.max_dscale[c]);
		}
		if (run->batch.prepacked[c])
			continue;			/* packed as the packets were staged */
		scale = run->num.scale[c];
		/* the arrays in locals: the stores below cannot alias run's fields */
		for (uint32 i = 0; i < n; i++)
		{
			int64		m = vals[i];
			int			ds = dss[i];
			int128		v;

			if (!valid[i])
				continue;
			/* the usual case, a column of one scale: no multiplication */
			if (likely(ds == scale && m > -(GH_AGG_NUM_MAX_ABS - 1) &&
					   m < GH_AGG_NUM_MAX_ABS - 1))
			{
				vals[i] = gh_agg_num_pack(m, ds);
				continue;
			}
			v = (int128) m * gh_pow10_i128(scale - ds);
			if (v > -(GH_AGG_NUM_MAX_ABS - 1) && v < GH_AGG_NUM_MAX_ABS - 1)
			{
				vals[i] = gh_agg_num_pack((int64) v, ds);
				continue;
			}
			/* too large for the device at this scale: the host adds it */
			valid[i] = 0;
			gh_agg_add_side_row(run, i, c, GH_NUMV_BIG, num_make(m, ds, ds));
		}
	}
	prepare_exprs(run);
}

/* ---- device expressions (devexpr.h) ---------------------------------- */

/*
 * prepare_exprs, once the input columns are at their scales, raises each
 * device expression's column to the scale of its result
 * (gh_devexpr_result_scale) and describes the program over the target's
 * arrays (batch.xe).  A result scale beyond the device's sends the batch's
 * rows of that expression to the host.
 */
static void
prepare_exprs(GhAggRun *run)
{
	GhAggPlan  *plan = run->plan;

	for (int c = run->ncols_in; c < run->ncols; c++)
	{
		const GhDevProg *x = &plan->exprs[plan->cols[c].dexpr];
		gh_expr    *e = &run->batch.xe[c];
		int			sc;

		gh_devexpr_describe(x, run->num.scale, e);
		for (int o = 0; o < x->nops; o++)
			if (GH_EXPR_READS_INPUT(x->op[o]))
			{
				e->vals[o] = (const int64_t *) run->batch.d_vals[x->col[o]];
				e->valid[o] = run->batch.d_valid[x->col[o]];
			}
		if (x->type != NUMERICOID)
			continue;
		sc = gh_devexpr_result_scale(x, run->num.scale);
		if (sc > GH_NUM_SCALE_CAP)
			e->all_host = 1;
		else if (sc > run->num.scale[c])
			rescale_column(run, c, sc);
		e->out_scale = Max(run->num.scale[c], 0);
	}
}

/* cmp_side_row_col orders side rows by row, then column. */
static int
cmp_side_row_col(const void *a, const void *b)
{
	const GhSideRow *x = a;
	const GhSideRow *y = b;

	if (x->row != y->row)
		return x->row < y->row ? -1 : 1;
	return x->col < y->col ? -1 : x->col > y->col ? 1 : 0;
}

/*
 * host_value is device expression x's value for staged row, x the program
 * of column c: PostgreSQL's executor runs the expression it was compiled
 * from (gh_devexpr_host_eval) over the row's inputs, a NUMERIC input being
 * the device's fixed point or one of the side rows among the first nsorted
 * (in cmp_side_row_col order), or NULL.
 */
static Datum
host_value(GhAggRun *run, int c, const GhDevProg *x, uint32 row, int nsorted,
		   bool *isnull)
{
	GhAggBatch *b = &run->batch;
	Datum		values[GH_AGG_MAX_COLS];
	bool		nulls[GH_AGG_MAX_COLS];

	if (run->num.xhost[c] == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(run->cxt);

		run->num.xhost[c] = gh_devexpr_host_begin(x);
		MemoryContextSwitchTo(old);
	}
	for (int i = 0; i < run->ncols_in; i++)
	{
		values[i] = (Datum) 0;
		nulls[i] = true;
	}
	for (int o = 0; o < x->nops; o++)
	{
		int			in = x->col[o];

		if (!GH_EXPR_READS_INPUT(x->op[o]))
			continue;
		if (b->h_valid[in][row])
		{
			values[in] = x->op[o] == GH_EXPR_COL ?
				gh_agg_num_unpack(run, in, b->h_vals[in][row]) :
				gh_devexpr_word_datum(run->plan->cols[in].type, b->h_vals[in][row]);
			nulls[in] = false;
		}
		else if (x->op[o] == GH_EXPR_COL)
		{
			/* held on the host (integers, dates and floats never are) */
			GhSideRow	want;
			GhSideRow  *r;

			want.row = row;
			want.col = in;
			r = bsearch(&want, b->side_rows, nsorted, sizeof(GhSideRow),
						cmp_side_row_col);
			if (r != NULL)
			{
				values[in] = gh_agg_num_side_value(run, r);
				nulls[in] = false;
			}
		}
	}
	return gh_devexpr_host_eval(run->num.xhost[c], values, nulls, isnull);
}

/* cmp_row_absent orders rows by their number, GH_AGG_BAD_ABSENT ignored. */
static int
cmp_row_absent(const void *a, const void *b)
{
	uint32		x = *(const uint32 *) a & ~GH_AGG_BAD_ABSENT;
	uint32		y = *(const uint32 *) b & ~GH_AGG_BAD_ABSENT;

	return x < y ? -1 : x > y ? 1 : 0;
}

/*
 * gh_expr_fixups, after the device ran the batch's expressions, does on
 * the host what they left: the results of the nbad colliding rows (h_bad's
 * first, for the fallback set) with the device's own interpreter
 * (gh_expr_eval_rows_cpu), and, with PostgreSQL's executor (host_value),
 * every row the device listed as out of its bounds and every row with a
 * host-held input (a side row of an input column), as side rows of the
 * expression's column; rows that went to a partition (absent, nabsent of
 * them in row order) are left for their pass.  A program of another type
 * than NUMERIC lists a row only where PostgreSQL raises an error, which
 * the executor then raises.
 */
void
gh_expr_fixups(GhAggRun *run, const uint32 *absent, uint32 nabsent,
				   uint32 nbad)
{
	GhAggPlan  *plan = run->plan;
	GhAggBatch *b = &run->batch;
	int			nsorted = b->nside;
	uint32	   *dev_rows[GH_AGG_MAX_COLS] = {0};
	bool		copied = false;

	if (plan->nexprs == 0)
		return;
	for (int c = run->ncols_in; c < run->ncols; c++)
	{
		if (b->h_xn[c] == 0)
			continue;
		if (b->h_xn[c] > b->n)
			elog(ERROR, "gpuhash_aggregate: device expression listed %u of %u rows",
				 b->h_xn[c], b->n);
		dev_rows[c] = palloc(sizeof(uint32) * b->h_xn[c]);
		gh_copy_dtoh(run->target, dev_rows[c], b->d_xhost[c], sizeof(uint32) * b->h_xn[c]);
		copied = true;
	}
	if (copied)
		gh_sync(run->target);
	if (nsorted > 1)
		qsort(b->side_rows, nsorted, sizeof(GhSideRow), cmp_side_row_col);

	for (int c = run->ncols_in; c < run->ncols; c++)
	{
		const GhDevProg *x = &plan->exprs[plan->cols[c].dexpr];
		gh_expr		he = b->xe[c];
		gh_error	err;
		uint32	   *rows;
		uint32		nrows = 0;

		/* the colliding rows' values, for the fallback set */
		for (int o = 0; o < x->nops; o++)
			if (GH_EXPR_READS_INPUT(x->op[o]))
			{
				he.vals[o] = (const int64_t *) b->h_vals[x->col[o]];
				he.valid[o] = b->h_valid[x->col[o]];
			}
		gpuhash_report(gh_expr_eval_rows_cpu(&he, b->h_bad, nbad, b->h_vals[c],
											 b->h_valid[c], &err),
					   &err, "computing aggregate arguments");

		/* the rows for PostgreSQL's functions: listed, or with a side input */
		rows = palloc(sizeof(uint32) * (b->h_xn[c] + nsorted + 1));
		for (uint32 j = 0; j < b->h_xn[c]; j++)
			rows[nrows++] = dev_rows[c][j];
		for (int j = 0; j < nsorted; j++)
			for (int o = 0; o < x->nops; o++)
				if (x->op[o] == GH_EXPR_COL && x->col[o] == b->side_rows[j].col)
				{
					rows[nrows++] = b->side_rows[j].row;
					break;
				}
		if (nrows > 1)
			qsort(rows, nrows, sizeof(uint32), cmp_row_absent);
		for (uint32 j = 0; j < nrows; j++)
		{
			uint32		i = rows[j];
			bool		isnull;
			Datum		v;
			int64		m;
			int			ds;
			int			kind;

			if ((j > 0 && rows[j - 1] == i) ||
				(nabsent > 0 && bsearch(&i, absent, nabsent, sizeof(uint32), cmp_row_absent)))
				continue;
			v = host_value(run, c, x, i, nsorted, &isnull);
			if (isnull)
				continue;
			/* any other program leaves a row to the host only to raise */
			if (x->type != NUMERICOID)
				elog(ERROR, "gpuhash_aggregate: device expression of type %u left row %u to the host",
					 x->type, i);
			kind = gh_agg_num_decode(v, &m, &ds);
			gh_agg_add_side_row(run, i, c, kind == GH_NUMV_FINITE ? GH_NUMV_BIG : kind,
								kind == GH_NUMV_FINITE || kind == GH_NUMV_BIG ? v : (Datum) 0);
		}
		pfree(rows);
	}
}

/*
 * rescale_groups multiplies the sums (lo, hi) and packed extremes (mins,
 * maxs; any may be NULL) of ng groups of set s, column c, by f = 10^k, on the
 * host.  A sum that would come near the 128-bit limit, or an extreme whose
 * scaled integer would no longer fit the packing, moves to the host-side
 * state (at the old scale, with its own display scale) and leaves the device
 * array empty.
 */
static void
rescale_groups(GhAggRun *run, GhGroupSet *s, int c, int oldscale, int128 f,
			   uint64 ng, uint64 *lo, int64 *hi, const uint32 *aux,
			   int64 *mins, int64 *maxs)
{
	const int128 sum_limit = (int128) 1 << 126;

	for (uint64 g = 0; g < ng; g++)
	{
		if (lo)
		{
			int128		v = ((int128) hi[g] << 64) | lo[g];
			int128		r = 0;

			if (v != 0 &&
				(__builtin_mul_overflow(v, f, &r) || r >= sum_limit || r <= -sum_limit))
			{
				side_add_finite(run, side_entry(run, s, g, c),
								num_make(v, oldscale, (int) aux[g]), false, true, false);
				r = 0;
			}
			lo[g] = (uint64) r;
			hi[g] = (int64) (r >> 64);
		}
		for (int mm = 0; mm < 2; mm++)
		{
			int64	   *arr = mm == 0 ? mins : maxs;
			int64		init = mm == 0 ? GH_AGG_INT_MIN_INIT : GH_AGG_INT_MAX_INIT;
			int128		r;

			if (arr == NULL || arr[g] == init)
				continue;
			r = (int128) gh_agg_num_m(arr[g]) * f;
			if (r <= -(GH_AGG_NUM_MAX_ABS - 1) || r >= GH_AGG_NUM_MAX_ABS - 1)
			{
				side_add_finite(run, side_entry(run, s, g, c),
								num_make(gh_agg_num_m(arr[g]), oldscale,
										 gh_agg_num_dscale(arr[g])),
								false, false, true);
				arr[g] = init;
			}
			else
				arr[g] = gh_agg_num_pack((int64) r, gh_agg_num_dscale(arr[g]));
		}
	}
}

/*
 * rescale_column raises NUMERIC column c's scale to newscale in both sets.
 * The GPU's arrays of that column make a round trip to the host; the CPU
 * twin's are rewritten where they are.  Scales only grow, at most
 * GH_NUM_SCALE_CAP times per run, so this stays rare.
 */
static void
rescale_column(GhAggRun *run, int c, int newscale)
{
	int			oldscale = run->num.scale[c];
	GhGroupSet *sets[2] = {&run->main, &run->fb};

	run->num.scale[c] = newscale;
	if (oldscale < 0)
		return;
	Assert(newscale > oldscale && newscale <= GH_NUM_SCALE_CAP);
	run->stats.rescales++;
	for (int si = 0; si < 2; si++)
	{
		GhGroupSet *s = sets[si];
		gh_agg_layout *l = &s->layout;
		uint64		ng = s->ngroups;
		char	   *acc = s->acc;
		/* device addresses of the column's arrays, NULL where absent */
		void	   *dev[5] = {NULL, NULL, NULL, NULL, NULL};
		size_t		size[5] = {8, 8, 4, 8, 8};
		void	   *host[5];

		if (ng == 0)
			continue;
		if (l->ops[c] & GH_AGG_OP_SUM)
		{
			dev[0] = acc + l->sum_off[c];
			dev[1] = acc + l->sum_off[c] + l->group_cap * 8;
			dev[2] = acc + l->aux_off[c];
		}
		if (l->ops[c] & GH_AGG_OP_MIN)
			dev[3] = acc + l->min_off[c];
		if (l->ops[c] & GH_AGG_OP_MAX)
			dev[4] = acc + l->max_off[c];
		for (int a = 0; a < 5; a++)
		{
			host[a] = dev[a];
			if (dev[a] && s->target == GH_TARGET_GPU)
			{
				host[a] = palloc(ng * size[a]);
				gh_copy_dtoh(s->target, host[a], dev[a], ng * size[a]);
			}
		}
		gh_sync(s->target);
		rescale_groups(run, s, c, oldscale, gh_pow10_i128(newscale - oldscale), ng,
					   host[0], host[1], host[2], host[3], host[4]);
		if (s->target == GH_TARGET_GPU)
		{
			for (int a = 0; a < 5; a++)
				if (dev[a] && a != 2)
					gh_copy_htod(s->target, dev[a], host[a], ng * size[a]);
			gh_sync(s->target);
		}
	}
}

/*
 * gh_agg_apply_side_rows adds the batch's host-side NUMERIC values to their
 * groups, in whichever set their row went to.
 */
void
gh_agg_apply_side_rows(GhAggRun *run, uint32 nbad)
{
	for (int j = 0; j < run->batch.nside; j++)
	{
		GhSideRow  *r = &run->batch.side_rows[j];
		GhGroupSet *s = &run->main;
		uint64		g = run->batch.h_ids[r->row];
		GhNumSide  *e;
		uint32		lo = 0,
					hi = nbad;

		/* h_bad is in row order: is this row one of them? */
		while (lo < hi)
		{
			uint32		mid = (lo + hi) / 2;

			if (run->batch.h_bad[mid] < r->row)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < nbad && run->batch.h_bad[lo] == r->row)
		{
			s = &run->fb;
			g = run->batch.fb_ids[lo];
		}
		e = side_entry(run, s, g, r->col);
		switch (r->kind)
		{
			case GH_NUMV_TEXT:
				side_text(run, e, r->col, r->value);
				run->stats.text_values++;
				continue;
			case GH_NUMV_NAN:
				e->count++;
				e->nan++;
				break;
			case GH_NUMV_PINF:
				e->count++;
				e->pinf++;
				break;
			case GH_NUMV_NINF:
				e->count++;
				e->ninf++;
				break;
			default:
				side_add_finite(run, e, r->value, true, true, true);
				break;
		}
		run->stats.side_values++;
	}
}

/*
 * gh_agg_num_unpack is the NUMERIC of a value of column c that
 * gh_agg_prepare_numeric packed for the device: its scaled integer at the
 * column's scale, with its own display scale.
 */
Datum
gh_agg_num_unpack(GhAggRun *run, int c, int64 packed)
{
	return num_make(gh_agg_num_m(packed), run->num.scale[c], gh_agg_num_dscale(packed));
}

/* gh_agg_num_side_value is the value of side row r: a NUMERIC, or a text. */
Datum
gh_agg_num_side_value(GhAggRun *run, const GhSideRow *r)
{
	switch (r->kind)
	{
		case GH_NUMV_NAN:
			return run->num.nan;
		case GH_NUMV_PINF:
			return run->num.pinf;
		case GH_NUMV_NINF:
			return run->num.ninf;
		default:
			return r->value;
	}
}

/* ---- text: min and max kept on the host ------------------------------ */

/*
 * Text min and max.  The device groups the rows and counts each text
 * column's values (a column of kind NONE); every value that is not NULL
 * becomes a side row of the batch, a copy in batch memory, and the host
 * keeps each group's extremes in its side state, compared with varstr_cmp
 * in the column's collation, as text_smaller and text_larger compare.  The
 * planner takes only deterministic collations (gh_agg_call_supported):
 * there, two values compare equal only if their bytes are equal, so which of
 * two equal values a group keeps cannot show, and the result is native's
 * whatever the order of the rows.
 *
 * The copies a batch stages are bounded (gh_agg_batch_bytes_limit): past
 * the bound, gh_agg_run_add flushes the batch early.
 */

/*
 * gh_agg_add_text_row lists text value v, row row of GHV_TEXT column col,
 * for the host: detoasted and copied into batch memory.
 */
void
gh_agg_add_text_row(GhAggRun *run, uint32 row, int col, Datum v)
{
	MemoryContext old = MemoryContextSwitchTo(run->batch.cxt);
	struct varlena *copy = PG_DETOAST_DATUM_COPY(v);

	MemoryContextSwitchTo(old);
	gh_agg_add_side_row(run, row, col, GH_NUMV_TEXT, PointerGetDatum(copy));
}

/* side_text_cmp compares two detoasted texts as text_cmp does in collation coll. */
static int
side_text_cmp(Datum a, Datum b, Oid coll)
{
	text	   *x = (text *) DatumGetPointer(a);
	text	   *y = (text *) DatumGetPointer(b);

	return varstr_cmp(VARDATA_ANY(x), VARSIZE_ANY_EXHDR(x),
					  VARDATA_ANY(y), VARSIZE_ANY_EXHDR(y), coll);
}

/*
 * side_text takes text v of column c into e's extremes, the ones the
 * column's calls ask for; a replaced extreme is freed.
 */
static void
side_text(GhAggRun *run, GhNumSide *e, int c, Datum v)
{
	GhAggCol   *col = &run->plan->cols[c];
	MemoryContext old = MemoryContextSwitchTo(run->num.cxt);

	if ((col->ops & GH_AGG_OP_MIN) &&
		(e->min == (Datum) 0 || side_text_cmp(v, e->min, col->collation) < 0))
	{
		if (e->min != (Datum) 0)
			pfree(DatumGetPointer(e->min));
		e->min = datumCopy(v, false, -1);
	}
	if ((col->ops & GH_AGG_OP_MAX) &&
		(e->max == (Datum) 0 || side_text_cmp(v, e->max, col->collation) > 0))
	{
		if (e->max != (Datum) 0)
			pfree(DatumGetPointer(e->max));
		e->max = datumCopy(v, false, -1);
	}
	e->count++;
	MemoryContextSwitchTo(old);
}

/*
 * gh_agg_text_value is min or max (call) of GHV_TEXT column call->col for
 * group g of set s: NULL when the device counted no value, else the
 * extreme the side state kept.
 */
Datum
gh_agg_text_value(GhAggRun *run, GhGroupSet *s, uint64 g, GhAggCall *call,
				  bool *isnull)
{
	int			c = call->col;
	uint64		key = (g << 8) | (uint64) c;
	GhNumSide  *e = s->side ? hash_search(s->side, &key, HASH_FIND, NULL) : NULL;
	uint64		nn = GH_AGG_AT(uint64, s, s->hl.nonnull_off[c], g);
	Datum		v;

	if (nn == 0)
	{
		*isnull = true;
		return (Datum) 0;
	}
	v = e == NULL ? (Datum) 0 : call->func == GHAF_MIN ? e->min : e->max;
	if (v == (Datum) 0 || e->count != nn)
		elog(ERROR, "gpuhash_aggregate: group %llu's text extremes are missing",
			 (unsigned long long) g);
	*isnull = false;
	return v;
}

/*
 * side_entry returns the host-side state of (g, c), NUMERIC or text extremes,
 * creating it.
 */
static GhNumSide *
side_entry(GhAggRun *run, GhGroupSet *s, uint64 g, int c)
{
	uint64		key = (g << 8) | (uint64) c;
	GhNumSide  *e;
	bool		found;

	if (s->side == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(uint64);
		ctl.entrysize = sizeof(GhNumSide);
		ctl.hcxt = run->set_cxt;
		s->side = hash_create("gpuhash_aggregate side state", 64, &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	e = hash_search(s->side, &key, HASH_ENTER, &found);
	if (!found)
	{
		memset(e, 0, sizeof(*e));
		e->key = key;
	}
	return e;
}

/*
 * side_add_finite adds the finite NUMERIC v to e: to its count, its sum and
 * its extremes, as asked.
 */
static void
side_add_finite(GhAggRun *run, GhNumSide *e, Datum v, bool count, bool sum,
				bool extremes)
{
	MemoryContext old = MemoryContextSwitchTo(run->num.cxt);

	if (count)
		e->count++;
	if (sum)
	{
		if (e->sum == (Datum) 0)
			e->sum = datumCopy(v, false, -1);
		else
		{
			Datum		prev = e->sum;

			e->sum = DirectFunctionCall2(numeric_add, prev, v);
			pfree(DatumGetPointer(prev));
		}
	}
	if (extremes)
	{
		if (e->min == (Datum) 0 || num_cmp(v, e->min) < 0)
			e->min = datumCopy(v, false, -1);
		if (e->max == (Datum) 0 || num_cmp(v, e->max) > 0)
			e->max = datumCopy(v, false, -1);
	}
	MemoryContextSwitchTo(old);
}

/* ---- results ---------------------------------------------------------- */

/* numeric_total: group g's NUMERIC sum of column c (no special values). */
static Datum
numeric_total(GhAggRun *run, GhGroupSet *s, uint64 g, int c, GhNumSide *e)
{
	uint64		nn = GH_AGG_AT(uint64, s, s->hl.nonnull_off[c], g);
	Datum		dev = (Datum) 0;

	if (nn > 0)
		dev = num_make(gh_agg_int_sum(s, g, c), run->num.scale[c],
					   (int) GH_AGG_AT(uint32, s, s->hl.aux_off[c], g));
	if (e == NULL || e->sum == (Datum) 0)
		return dev;
	if (dev == (Datum) 0)
		return e->sum;
	return DirectFunctionCall2(numeric_add, dev, e->sum);
}

/* numeric_extreme: group g's NUMERIC min (want < 0) or max (want > 0). */
static Datum
numeric_extreme(GhAggRun *run, GhGroupSet *s, uint64 g, int c, GhNumSide *e,
				int want, bool *isnull)
{
	int64		packed;
	Datum		best = (Datum) 0;
	bool		nan = e && e->nan > 0;
	bool		pinf = e && e->pinf > 0;
	bool		ninf = e && e->ninf > 0;

	if (want > 0 && nan)
		return run->num.nan;
	if (want > 0 && pinf)
		return run->num.pinf;
	if (want < 0 && ninf)
		return run->num.ninf;
	packed = want < 0 ? GH_AGG_AT(int64, s, s->hl.min_off[c], g)
		: GH_AGG_AT(int64, s, s->hl.max_off[c], g);
	if (packed != (want < 0 ? GH_AGG_INT_MIN_INIT : GH_AGG_INT_MAX_INIT))
		best = num_make(gh_agg_num_m(packed), run->num.scale[c], gh_agg_num_dscale(packed));
	if (e)
	{
		Datum		side = want < 0 ? e->min : e->max;

		if (side != (Datum) 0 &&
			(best == (Datum) 0 || num_cmp(side, best) * want > 0))
			best = side;
	}
	if (best != (Datum) 0)
		return best;
	if (want < 0 && pinf)
		return run->num.pinf;
	if (want < 0 && nan)
		return run->num.nan;
	if (want > 0 && ninf)
		return run->num.ninf;
	*isnull = true;
	return (Datum) 0;
}

/*
 * gh_agg_numeric_value computes aggregate call (count, sum, avg, min or max
 * of a NUMERIC column that the device aggregates) of group g of set s from
 * the group's accumulators and its host-side state.
 */
Datum
gh_agg_numeric_value(GhAggRun *run, GhGroupSet *s, uint64 g, GhAggCall *call,
					 bool *isnull)
{
	int			c = call->col;
	uint64		nn = GH_AGG_AT(uint64, s, s->hl.nonnull_off[c], g);
	GhNumSide  *e = NULL;

	if (s->side != NULL)
	{
		uint64		key = (g << 8) | (uint64) c;

		e = hash_search(s->side, &key, HASH_FIND, NULL);
	}
	if (call->func == GHAF_COUNT)
		return Int64GetDatum((int64) (nn + (e ? e->count : 0)));
	if (nn + (e ? e->count : 0) == 0)
	{
		*isnull = true;
		return (Datum) 0;
	}
	if (call->func == GHAF_MIN || call->func == GHAF_MAX)
		return numeric_extreme(run, s, g, c, e, call->func == GHAF_MIN ? -1 : 1,
							   isnull);
	if (e && (e->nan > 0 || (e->pinf > 0 && e->ninf > 0)))
		return run->num.nan;
	if (e && e->pinf > 0)
		return run->num.pinf;
	if (e && e->ninf > 0)
		return run->num.ninf;
	if (call->func == GHAF_SUM)
		return numeric_total(run, s, g, c, e);
	if (e == NULL)
	{
		/* every value on the device: nn > 0 of them */
		int			ds = (int) GH_AGG_AT(uint32, s, s->hl.aux_off[c], g);
		int128		v = gh_agg_int_sum(s, g, c) / gh_pow10_i128(run->num.scale[c] - ds);
		Datum		d = gh_num_avg(v, ds, (int64) nn);

		if (d != (Datum) 0)
			return d;
	}
	return DirectFunctionCall2(numeric_div, numeric_total(run, s, g, c, e),
							   NumericGetDatum(int64_to_numeric((int64) (nn + (e ? e->count : 0)))));
}
