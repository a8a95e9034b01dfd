/*-------------------------------------------------------------------------
 * gh_values.h
 *	  Value encodings shared by src/, the kernels and the CPU twin: packed
 *	  NUMERIC fixed point, the order keys of floats, and the year of a date
 *	  or timestamp.
 *
 * The aggregate keeps its input columns in these forms (gh_aggregate.h) and
 * the device expression programs read and write them (gh_devexpr.h), so
 * both include this header; src/ calls the same inline functions when it
 * stages values and reads results.  Plain C99 and nvcc, no PostgreSQL.
 *
 * NUMERIC values travel as fixed point: the host scales every value to one
 * column scale S and packs the scaled integer m with the value's own display
 * scale d as (m << 8) | d.  The packing keeps the order of m (d only breaks
 * ties), so min and max are plain 64-bit comparisons and still return a
 * value with its own display scale.  Values that do not fit (|m| >= 2^55,
 * d > 255, NaN, infinities) never reach the device.
 *-------------------------------------------------------------------------
 */
#ifndef GH_VALUES_H
#define GH_VALUES_H

#include <stdint.h>

#include "gh_hash.h"

#ifdef __cplusplus
extern "C" {
#endif

/* NUMERIC packing limits. */
#define GH_AGG_NUM_MAX_ABS	  ((int64_t) 1 << 55) /* |m| must be below */
#define GH_AGG_NUM_MAX_DSCALE 255

/* Largest NUMERIC display scale that the device takes. */
#define GH_NUM_SCALE_CAP 24

/* extract(year ...)'s words for the infinities (gh_agg_year_word) */
#define GH_AGG_YEAR_PINF INT64_MAX
#define GH_AGG_YEAR_NINF INT64_MIN

/*
 * gh_agg_float_key maps a double to a uint64 whose unsigned order is
 * PostgreSQL's float order: every NaN is one value above +Infinity.
 * -0 sorts just below +0; PostgreSQL calls them equal, so either is a right
 * minimum.
 */
GH_HD uint64_t
gh_agg_float_key(double d)
{
	union
	{
		double d;
		uint64_t u;
	} v;

	if (d != d)
		return UINT64_C(0xfff8000000000000) | UINT64_C(0x8000000000000000);
	v.d = d;
	return (v.u & UINT64_C(0x8000000000000000))
			   ? ~v.u
			   : v.u | UINT64_C(0x8000000000000000);
}

GH_HD double
gh_agg_float_unkey(uint64_t k)
{
	union
	{
		double d;
		uint64_t u;
	} v;

	v.u = (k & UINT64_C(0x8000000000000000))
			  ? k & ~UINT64_C(0x8000000000000000)
			  : ~k;
	return v.d;
}

/* Packed NUMERIC value: scaled integer m and display scale d. */
GH_HD int64_t
gh_agg_num_pack(int64_t m, int d)
{
	return (int64_t) ((uint64_t) m << 8) | (int64_t) d;
}

GH_HD int64_t
gh_agg_num_m(int64_t packed)
{
	return packed >> 8; /* arithmetic shift: gcc, clang and nvcc */
}

GH_HD int
gh_agg_num_dscale(int64_t packed)
{
	return (int) (packed & 0xff);
}

/*
 * gh_year_of_days is the proleptic Gregorian year (astronomical: 0 is 1
 * BC) of the day z days after 2000-01-01, by eras of 400 years counted
 * from 0000-03-01, so that a leap day ends its year.
 */
GH_HD int64_t
gh_year_of_days(int64_t z)
{
	int64_t days = z + 730425; /* 2000-01-01 is day 730425 of 0000-03-01 */
	int64_t era = (days >= 0 ? days : days - 146096) / 146097;
	int64_t doe = days - era * 146097; /* day of the era, 0 to 146096 */
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153; /* month from March, 0 to 11 */

	return yoe + era * 400 + (mp >= 10);
}

/*
 * gh_agg_year_word is a GROUP BY key's word for extract(year from v), v a
 * date (len 4) or timestamp (len 8): its day's year in the proleptic
 * Gregorian calendar, 1 BC being -1, or GH_AGG_YEAR_PINF / _NINF for an
 * infinite v (whose extract is numeric's Infinity and -Infinity).
 */
GH_HD int64_t
gh_agg_year_word(int64_t v, int len)
{
	int64_t day;
	int64_t y;

	if (len == 4 ? v == INT32_MAX : v == INT64_MAX)
		return GH_AGG_YEAR_PINF;
	if (len == 4 ? v == INT32_MIN : v == INT64_MIN)
		return GH_AGG_YEAR_NINF;
	day = len == 4 ? v :
		(v >= 0 ? v : v - (INT64_C(86400000000) - 1)) / INT64_C(86400000000);
	y = gh_year_of_days(day);
	return y > 0 ? y : y - 1;
}


/*
 * gh_agg_float_cmp_key is a signed int64 whose order is PostgreSQL's float
 * comparison (float8_cmp_internal): -0 equals 0, every NaN equals every
 * other and is above +Infinity.  Conditions compare floats through it, so
 * they compare as integers do.
 */
GH_HD int64_t
gh_agg_float_cmp_key(double d)
{
	return (int64_t) (gh_agg_float_key(d == 0 ? 0.0 : d) ^ UINT64_C(0x8000000000000000));
}

/* gh_fbits and gh_bitsf move a double to and from its bits. */
GH_HD int64_t
gh_fbits(double d)
{
	union
	{
		double d;
		int64_t i;
	} v;

	v.d = d;
	return v.i;
}

GH_HD double
gh_bitsf(int64_t i)
{
	union
	{
		double d;
		int64_t i;
	} v;

	v.i = i;
	return v.d;
}

#ifdef __cplusplus
}
#endif

#endif /* GH_VALUES_H */
