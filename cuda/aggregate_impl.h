/*-------------------------------------------------------------------------
 * aggregate_impl.h
 *	  What the aggregate's kernels (aggregate.cu) and their CPU twin
 *	  (aggregate_cpu.c) share beyond the C API of gh_aggregate.h.
 *
 * An implementation header: src/ does not include it.  It holds the
 * accumulators' "nothing yet" words for float extremes and the word an
 * exact key computed on the device groups by.
 *
 * Exact 128-bit integer sums: each atomicAdd on the low word returns the
 * old value, from which the carry of that one addition is known exactly;
 * the carry and the sign extension go to the high word.  The sum of all
 * those parts is the exact 128-bit sum however the additions interleave.
 *-------------------------------------------------------------------------
 */
#ifndef AGGREGATE_IMPL_H
#define AGGREGATE_IMPL_H

#include "gh_aggregate.h"

/* "No value yet" of the min and max arrays of a FLOAT column. */
#define GH_AGG_FKEY_MIN_INIT UINT64_MAX
#define GH_AGG_FKEY_MAX_INIT ((uint64_t) 0)

GH_HD uint64_t
gh_agg_key_word(int64_t v, int year_len)
{
	return (uint64_t) (year_len == 0 ? v : gh_agg_year_word(v, year_len));
}

#endif /* AGGREGATE_IMPL_H */
