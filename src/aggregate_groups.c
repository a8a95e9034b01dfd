/*-------------------------------------------------------------------------
 * aggregate_groups.c
 *	  The group sets of gpuhash_aggregate(): where groups and their
 *	  accumulators live, grown as groups come.
 *
 * A run has two sets.  The main set lives on the run's target (the GPU or
 * the CPU twin): a hash table that numbers the groups by hash, and the
 * accumulators of every group in one allocation (gh_agg_layout).  The
 * fallback set (aggregate_fallback.c) lives in host memory, with the same
 * accumulators, for the keys whose hash met another key's.  Both keep each
 * group's representative key unless the device keeps it (exact device keys).
 *
 * Sets only grow: accumulators and representatives double when a batch
 * could outgrow them (gh_agg_ensure_groups), the table doubles to stay
 * under gpuhash.load_factor (gh_agg_ensure_table).  At the end of a pass
 * the table goes back and the accumulators come to the host a window of
 * groups at a time as the result rows are made (gh_agg_set_fetch,
 * gh_agg_set_window); they go back with the pass.
 *
 * Device memory is allocated through the device layer, which frees it with
 * the resource owner on ERROR; the representatives and every other host
 * structure of the sets live in the run's set context, so that a pass of a
 * spilled run (aggregate_spill.c) gives all of it back at once
 * (gh_agg_sets_reset).  The exact device-key main set keeps its keys in its
 * accumulators and has no representatives on the host.
 *
 * What the sets hold is measured here (gh_agg_group_memory), for the budget
 * that aggregate_spill.c keeps and for EXPLAIN's peaks (gh_agg_note_memory),
 * since the sets' memory is this file's to allocate: the window of
 * accumulators, allocated when the first group is read, is such a peak.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "aggregate.h"

static Size set_device_bytes(GhGroupSet *s);

/*
 * gh_agg_set_init prepares an empty group set with room for 1024 groups:
 * the fallback set, or the main set on target.
 */
void
gh_agg_set_init(GhAggRun *run, GhGroupSet *s, bool fallback, GhTarget target)
{
	uint8		kind[GH_AGG_MAX_COLS];
	uint8		ops[GH_AGG_MAX_COLS];

	memset(s, 0, sizeof(*s));
	s->fallback = fallback;
	s->target = target;
	for (int c = 0; c < run->ncols; c++)
	{
		kind[c] = run->plan->cols[c].kind;
		ops[c] = run->plan->cols[c].ops;
	}
	gh_agg_layout_init(&s->layout, run->ncols, kind, ops,
					   run->exact && !fallback ? run->nkeys : 0, 0);
	gh_agg_ensure_groups(run, s, 1024);
}

/*
 * gh_agg_ensure_groups makes room for need groups: accumulators (moved to a
 * larger allocation, the new part initialised) and representatives.
 */
void
gh_agg_ensure_groups(GhAggRun *run, GhGroupSet *s, uint64 need)
{
	if (need > GH_AGG_MAX_GROUPS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("gpuhash_aggregate supports at most %llu groups",
						(unsigned long long) GH_AGG_MAX_GROUPS)));
	if (need > s->layout.group_cap)
	{
		uint64		newcap = Max(need, Max(s->layout.group_cap * 2, 1024));
		gh_agg_layout nl;
		void	   *nacc;

		newcap = Min(newcap, GH_AGG_MAX_GROUPS);
		gh_agg_layout_init(&nl, s->layout.ncols, s->layout.kind, s->layout.ops,
						   s->layout.nkeys, newcap);
		nacc = gh_dev_alloc(s->target, nl.bytes);
		if (s->acc)
			GH_AGG_DEVICE_CALL(gh_agg_acc_move, s->target,
							   "growing the aggregate's accumulators",
							   nacc, &nl, s->acc, &s->layout, s->ngroups);
		GH_AGG_DEVICE_CALL(gh_agg_acc_init, s->target,
						   "growing the aggregate's accumulators",
						   nacc, &nl, s->ngroups, newcap);
		if (s->acc)
			gh_dev_free(s->acc);
		s->acc = nacc;
		s->layout = nl;
	}
	if (need > s->rep_cap && (s->fallback || !run->exact))
	{
		uint64		newcap = Max(need, Max(s->rep_cap * 2, 1024));
		size_t		nk = Max(run->nkeys, 1);

		if (s->rep_vals == NULL)
		{
			s->rep_vals = MemoryContextAllocHuge(run->set_cxt, sizeof(Datum) * nk * newcap);
			s->rep_nulls = MemoryContextAllocHuge(run->set_cxt, sizeof(bool) * nk * newcap);
			s->rep_set = MemoryContextAllocHuge(run->set_cxt, sizeof(bool) * newcap);
		}
		else
		{
			s->rep_vals = repalloc_huge(s->rep_vals, sizeof(Datum) * nk * newcap);
			s->rep_nulls = repalloc_huge(s->rep_nulls, sizeof(bool) * nk * newcap);
			s->rep_set = repalloc_huge(s->rep_set, sizeof(bool) * newcap);
		}
		memset(s->rep_set + s->rep_cap, 0, newcap - s->rep_cap);
		s->rep_cap = newcap;
	}
}

/*
 * gh_agg_ensure_table keeps the device table's load at most gpuhash.load_factor
 * even if every one of the next n rows starts a new group.
 */
void
gh_agg_ensure_table(GhGroupSet *s, uint32 n)
{
	double		need = ((double) s->ngroups + n) / gpuhash_load_factor;
	uint64		cap = 1024;
	void	   *mem;

	if (s->table != NULL && need <= (double) s->table_cap)
		return;
	while ((double) cap < need)
		cap <<= 1;
	mem = gh_dev_alloc(s->target, gh_agg_table_bytes(cap));
	GH_AGG_DEVICE_CALL(gh_agg_table_init, s->target, "building the group table",
					   mem, cap);
	if (s->table)
		GH_AGG_DEVICE_CALL(gh_agg_table_rehash, s->target, "growing the group table",
						   s->table, s->table_cap, mem, cap);
	if (s->table)
		gh_dev_free(s->table);
	s->table = mem;
	s->table_cap = cap;
}

/*
 * gh_agg_set_fetch makes the set's accumulators readable on the host once
 * its pass has ended, window after window (gh_agg_set_window): the main
 * set's come back a window of groups at a time into one buffer of ordinary
 * memory, sized to a quarter of the memory budget, so that making the rows
 * of 10^7 GPU groups never holds them all on the host; the CPU twin's main
 * set does the same (a copy within host memory), so that the window is the
 * path tests run everywhere.  The fallback set is host memory and small:
 * read in place.  The hash table is no longer needed and goes back.
 */
void
gh_agg_set_fetch(GhAggRun *run, GhGroupSet *s)
{
	gh_agg_layout *l = &s->layout;

	gh_dev_free(s->table);
	s->table = NULL;
	if (s->fallback)
	{
		s->host_acc = s->acc;
		s->hl = s->layout;
		s->host_base = 0;
		s->host_n = s->ngroups;
		return;
	}
	if (s->window == 0)
	{
		gh_agg_layout one;
		Size		per_group;

		gh_agg_layout_init(&one, l->ncols, l->kind, l->ops, l->nkeys, 1024);
		per_group = Max(one.bytes / 1024, 1);
		s->window = Max((run->spill.budget / 4) / per_group, 1024);
	}
	s->host_base = 0;
	s->host_n = 0;
}

/*
 * gh_agg_set_window makes group g of a fetched set readable on the host
 * (GH_AGG_AT): the main set's window of groups from g on comes back.
 */
void
gh_agg_set_window(GhAggRun *run, GhGroupSet *s, uint64 g)
{
	gh_agg_layout *l = &s->layout;
	gh_agg_layout *hl = &s->hl;
	uint64		n;
	size_t		n8;
	char	   *d = s->acc;
	char	   *h;

	if (g >= s->host_base && g < s->host_base + s->host_n)
		return;
	Assert(!s->fallback && g < s->ngroups);
	n = Min(s->window, s->ngroups - g);
	n8 = (size_t) n * 8;
	if (s->host_acc == NULL)
	{
		gh_agg_layout_init(hl, l->ncols, l->kind, l->ops, l->nkeys,
						   Min(s->window, s->ngroups));
		s->host_acc = MemoryContextAllocHuge(run->set_cxt, hl->bytes);
		gh_agg_note_memory(run, gh_agg_group_memory(run, NULL), 0);
	}
	h = s->host_acc;
#define BACK(field, size) \
	gh_copy_dtoh(s->target, h + hl->field, d + l->field + (size_t) g * (size), \
				 (size_t) n * (size))
	BACK(rows_off, 8);
	for (int k = 0; k < l->nkeys; k++)
		BACK(key_off[k], 8);
	if (l->nkeys > 0)
		BACK(knull_off, 1);
	for (int c = 0; c < l->ncols; c++)
	{
		BACK(nonnull_off[c], 8);
		if (l->ops[c] & GH_AGG_OP_SUM)
		{
			BACK(sum_off[c], 8);
			if (l->kind[c] != GH_AGG_KIND_FLOAT)
				gh_copy_dtoh(s->target, h + hl->sum_off[c] + hl->group_cap * 8,
							 d + l->sum_off[c] + l->group_cap * 8 + (size_t) g * 8, n8);
			if (l->aux_off[c])
				BACK(aux_off[c], 4);
		}
		if (l->ops[c] & GH_AGG_OP_MIN)
			BACK(min_off[c], 8);
		if (l->ops[c] & GH_AGG_OP_MAX)
			BACK(max_off[c], 8);
	}
#undef BACK
	gh_sync(s->target);
	s->host_base = g;
	s->host_n = n;
}

/*
 * set_device_bytes returns what set s holds through the device layer:
 * its accumulators and its table (device memory on the GPU, host memory on
 * the CPU twin).
 */
static Size
set_device_bytes(GhGroupSet *s)
{
	Size		bytes = 0;

	if (s->acc)
		bytes += s->layout.bytes;
	if (s->table)
		bytes += gh_agg_table_bytes(s->table_cap);
	return bytes;
}

/*
 * gh_agg_group_memory returns the bytes the group sets hold now in host
 * memory (the set context, with the lookup copy of a GPU table and the
 * window of accumulators, and whatever the device layer holds in host
 * memory) and, when they have a budget of their own, on the device.
 */
Size
gh_agg_group_memory(GhAggRun *run, Size *device)
{
	Size		main = set_device_bytes(&run->main);
	Size		host = set_device_bytes(&run->fb) +
		MemoryContextMemAllocated(run->set_cxt, true);

	if (run->spill.device_budget > 0)
	{
		if (device)
			*device = main;
		return host;
	}
	if (device)
		*device = 0;
	return host + main;
}

/*
 * gh_agg_note_memory records what the run holds now: groups (now, bytes of
 * gh_agg_group_memory), and with them the batch arrays while they are
 * allocated, and copies, the bytes of by-reference copies of the batch just
 * run, for EXPLAIN's peaks.
 */
void
gh_agg_note_memory(GhAggRun *run, Size now, Size copies)
{
	GhAggSpill *sp = &run->spill;
	Size		staging = run->batch.h_hashes != NULL ? sp->staging : 0;

	sp->peak = Max(sp->peak, now);
	sp->batch_peak = Max(sp->batch_peak, copies);
	sp->total_peak = Max(sp->total_peak, now + staging + copies);
}

/*
 * gh_agg_sets_reset gives back everything both group sets hold, on the
 * device and on the host, and starts them empty, for the next pass of a
 * spilled run: NUMERIC column scales start again too, since they describe
 * only the accumulators of the sets.
 */
void
gh_agg_sets_reset(GhAggRun *run)
{
	GhGroupSet *sets[2] = {&run->main, &run->fb};

	for (int i = 0; i < 2; i++)
	{
		gh_dev_free(sets[i]->acc);
		gh_dev_free(sets[i]->table);
		sets[i]->acc = NULL;
		sets[i]->table = NULL;
	}
	/* the representatives' keys and the NUMERIC state are children */
	MemoryContextReset(run->set_cxt);
	run->rep_cxt = AllocSetContextCreate(run->set_cxt, "gpuhash_aggregate keys",
										 ALLOCSET_DEFAULT_SIZES);
	run->num.cxt = AllocSetContextCreate(run->set_cxt, "gpuhash_aggregate numeric",
										 ALLOCSET_DEFAULT_SIZES);
	for (int c = 0; c < run->ncols; c++)
		run->num.scale[c] = -1;
	/* the numbered keys' dictionaries were in rep_cxt */
	gh_agg_dict_reset(run);
	gh_agg_set_init(run, &run->main, false, run->target);
	gh_agg_set_init(run, &run->fb, true, GH_TARGET_CPU);
}
