/*-------------------------------------------------------------------------
 * aggregate_numeric.c
 *	  NUMERIC results of gpuhash_aggregate() built from 128-bit integers.
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
