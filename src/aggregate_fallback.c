/*-------------------------------------------------------------------------
 * aggregate_fallback.c
 *	  Keys checked on the host: each group's representative, and the exact
 *	  fallback set for keys whose hash meets another key's.
 *
 * The device groups rows by a 64-bit hash of their keys, so two different
 * keys with one hash would land in one group.  The host therefore checks:
 * with host-checked keys (text, numeric, floats, arrays, ...), every row of
 * a batch against the representative of the group the device gave it
 * (gh_agg_check_keys: the first row of a new group becomes its
 * representative); with exact device keys the device checks and only lists
 * the rows that failed.  Either way, rows that fail are taken out of the
 * device batch and go to the fallback set (gh_agg_to_fallback), a CPU group
 * set keyed by the whole key (hash, then the keys' equality) with the same
 * accumulators, aggregated by the CPU twin.  Every group thus lives in
 * exactly one set, and every key in one group: a hash collision costs a
 * little CPU time, never a wrong merge.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/datum.h"
#include "utils/memutils.h"

#include "aggregate.h"

static bool row_matches_rep(GhAggRun *run, GhGroupSet *s, uint64 g, uint32 row);
static uint32 exact_find(GhAggRun *run, GhGroupSet *s, uint32 row, uint64 h);

/*
 * gh_agg_check_keys checks every row of the batch against the representative
 * of its group in set s (the ids the device gave, h_ids; the set now has
 * ngroups groups).  A row that starts a group becomes its representative;
 * rows whose key differs are listed in h_bad, in row order, for the fallback
 * set.  Returns how many.
 */
uint32
gh_agg_check_keys(GhAggRun *run, GhGroupSet *s, uint64 ngroups)
{
	uint32		nbad = 0;

	for (uint32 i = 0; i < run->batch.n; i++)
	{
		uint32		g = run->batch.h_ids[i];

		if (g >= ngroups)
			elog(ERROR, "gpuhash_aggregate: group id %u out of range", g);
		if (!row_matches_rep(run, s, g, i))
			run->batch.h_bad[nbad++] = i;
		if ((i & 0xffff) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	return nbad;
}

/*
 * row_matches_rep compares row's group keys with group g's representative
 * with the keys' equality (gh_key_equal; NULL equals NULL, as in GROUP BY).
 * A group that has no representative yet takes row's keys as its own, and
 * row matches.
 */
static bool
row_matches_rep(GhAggRun *run, GhGroupSet *s, uint64 g, uint32 row)
{
	Datum	   *rv = s->rep_vals + g * run->nkeys;
	bool	   *rn = s->rep_nulls + g * run->nkeys;
	Datum	   *kv = run->batch.keys + (size_t) row * run->nkeys;
	bool	   *kn = run->batch.knulls + (size_t) row * run->nkeys;

	if (!s->rep_set[g])
	{
		MemoryContext old = MemoryContextSwitchTo(run->rep_cxt);

		for (int k = 0; k < run->nkeys; k++)
		{
			GhAggKey   *key = &run->plan->keys[k];

			rn[k] = kn[k];
			if (kn[k])
				rv[k] = (Datum) 0;
			else
				rv[k] = key->typbyval ? kv[k] : datumCopy(kv[k], false, key->typlen);
		}
		MemoryContextSwitchTo(old);
		s->rep_set[g] = true;
		return true;
	}
	/* the GROUP BY keys, which come first; the carried ones are not compared */
	for (int k = 0; k < run->plan->group_keys.nkeys; k++)
	{
		GhAggKey   *key = &run->plan->keys[k];

		if (kn[k] || rn[k])
		{
			if (kn[k] != rn[k])
				return false;
			continue;
		}
		if (!gh_key_equal(key->eq_kind, &key->eq, key->collation, key->typlen,
						  kv[k], rv[k]))
			return false;
	}
	return true;
}

/*
 * exact_find returns the fallback group of row's key, creating it: open
 * addressing over the row hash, every hash match checked with the keys'
 * equality, so that keys sharing a hash get groups of their own.
 */
static uint32
exact_find(GhAggRun *run, GhGroupSet *s, uint32 row, uint64 h)
{
	uint64		mask;
	uint64		slot;

	if ((s->ngroups + 1) * 2 > s->ex_cap)
	{
		uint64		ncap = Max(s->ex_cap * 2, 64);
		uint64	   *nh = MemoryContextAllocHuge(run->set_cxt, sizeof(uint64) * ncap);
		uint32	   *ni = MemoryContextAllocHuge(run->set_cxt, sizeof(uint32) * ncap);

		memset(ni, 0, sizeof(uint32) * ncap);
		for (uint64 o = 0; o < s->ex_cap; o++)
		{
			if (s->ex_id[o] == 0)
				continue;
			slot = gh_mix64(s->ex_hash[o]) & (ncap - 1);
			while (ni[slot] != 0)
				slot = (slot + 1) & (ncap - 1);
			nh[slot] = s->ex_hash[o];
			ni[slot] = s->ex_id[o];
		}
		if (s->ex_hash)
		{
			pfree(s->ex_hash);
			pfree(s->ex_id);
		}
		s->ex_hash = nh;
		s->ex_id = ni;
		s->ex_cap = ncap;
	}
	mask = s->ex_cap - 1;
	slot = gh_mix64(h) & mask;
	for (;;)
	{
		uint32		id = s->ex_id[slot];

		if (id == 0)
		{
			uint32		g = (uint32) s->ngroups;

			gh_agg_ensure_groups(run, s, s->ngroups + 1);
			(void) row_matches_rep(run, s, g, row); /* the new group's keys */
			s->ngroups++;
			s->ex_hash[slot] = h;
			s->ex_id[slot] = g + 1;
			return g;
		}
		if (s->ex_hash[slot] == h && row_matches_rep(run, s, id - 1, row))
			return id - 1;
		slot = (slot + 1) & mask;
	}
}

/*
 * gh_agg_to_fallback aggregates the rows listed in h_bad (keys that did not
 * match their device group's representative) in the fallback set.
 */
void
gh_agg_to_fallback(GhAggRun *run, uint32 nbad)
{
	GhGroupSet *s = &run->fb;
	gh_agg_batch b;

	if (run->batch.fb_ids == NULL)
	{
		run->batch.fb_ids = MemoryContextAlloc(run->cxt, sizeof(uint32) * run->batch.cap);
		for (int c = 0; c < run->ncols; c++)
		{
			run->batch.fb_vals[c] = MemoryContextAlloc(run->cxt, sizeof(int64) * run->batch.cap);
			run->batch.fb_valid[c] = MemoryContextAlloc(run->cxt, run->batch.cap);
		}
		run->spill.staging += (Size) run->batch.cap * (sizeof(uint32) +
													   run->ncols * (sizeof(int64) + 1));
	}
	memset(&b, 0, sizeof(b));
	for (uint32 j = 0; j < nbad; j++)
	{
		uint32		i = run->batch.h_bad[j];
		uint64		h = run->batch.h_hashes[i];

		/* exact device keys have no host hash: the device's, over their words */
		if (run->exact)
		{
			h = gh_agg_key_hash_init(run->batch.h_knull[i]);
			for (int k = 0; k < run->nkeys; k++)
				h = gh_agg_key_hash_step(h, run->batch.h_keys[k][i]);
		}
		run->batch.fb_ids[j] = exact_find(run, s, i, h);
		for (int c = 0; c < run->ncols; c++)
		{
			run->batch.fb_vals[c][j] = run->batch.h_vals[c][i];
			run->batch.fb_valid[c][j] = run->batch.h_valid[c][i];
		}
	}
	b.n = nbad;
	b.ids = run->batch.fb_ids;
	for (int c = 0; c < run->ncols; c++)
	{
		b.vals[c] = run->batch.fb_vals[c];
		b.valid[c] = run->batch.fb_valid[c];
	}
	GH_AGG_DEVICE_CALL(gh_agg_accumulate, s->target, "aggregating colliding keys",
					   s->acc, &s->layout, s->ngroups, &b);
}
