/*-------------------------------------------------------------------------
 * multimap_cpu.c
 *	  The CPU twin of the static multimap (gpuhash.device = cpu), plus the
 *	  size and row-array helpers that both twins share.
 *
 * Same layout and probe sequence as the GPU (gh_layout.h), run sequentially,
 * so that a table built on either side can be probed on either side and the
 * GPU tests can use this file as their reference.  The build inserts every
 * hash (counting rows per distinct hash; the row that creates a slot writes
 * its index as the slot's offset).  If every hash was distinct, that is the
 * layout already (group of row i = rows[i], rows[] the identity, as on the
 * GPU).  Otherwise it turns the counts into group ends by a running sum in
 * slot order, then scatters row indices from the last row to the first, so
 * each group lists its rows in ascending order.  Grouped input (equal hashes
 * adjacent, gh_mm_params.grouped) needs neither: the first row of a group
 * is its start.
 *
 * Plain C99: no PostgreSQL, no allocation, no output; errors come back as
 * status codes.
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "gh_error.h"
#include "gh_layout.h"

size_t
gh_mm_bytes(uint32_t nrows, const gh_mm_params *params, uint64_t *capacity)
{
	uint64_t cap = gh_capacity_for(nrows, params);

	if (capacity != NULL)
		*capacity = cap;
	return cap ? gh_total_bytes(cap, nrows) : 0;
}

const uint32_t *
gh_mm_rows(const gh_mm *mm)
{
	if (mm == NULL || mm->mem == NULL)
		return NULL;
	return (const uint32_t *) ((const char *) mm->mem +
							   gh_rows_offset(mm->capacity));
}

/*
 * cpu_find returns the slot holding hash h, or GH_NO_SLOT; h == EMPTY is
 * the sentinel slot.  The lookup ends at the first window that holds h or an
 * empty slot; with insert, a new h claims the first empty slot of that
 * window, as the GPU's insert does.
 */
static uint64_t
cpu_find(gh_slot *slots, uint64_t capacity, int g, int scheme, uint64_t h,
		 int insert)
{
	uint64_t nwindows = capacity / (uint64_t) g;
	gh_seq seq;
	uint64_t step;

	if (h == GH_EMPTY_HASH)
		return capacity;
	seq = gh_seq_start(h, nwindows, scheme);
	for (step = 0; step < nwindows; step++)
	{
		uint64_t base = seq.window * (uint64_t) g;
		uint64_t first_empty = GH_NO_SLOT;
		int j;

		for (j = 0; j < g; j++)
		{
			uint64_t sh = slots[base + j].hash;

			if (sh == h)
				return base + j;
			if (sh == GH_EMPTY_HASH && first_empty == GH_NO_SLOT)
				first_empty = base + j;
		}
		if (first_empty != GH_NO_SLOT)
		{
			if (!insert)
				return GH_NO_SLOT;
			slots[first_empty].hash = h;
			return first_empty;
		}
		seq.window = gh_seq_next_window(&seq);
	}
	return GH_NO_SLOT;
}

gh_status
gh_mm_build_cpu_capacity(gh_mm *mm, void *mem, const uint64_t *hashes,
						 uint32_t nrows, const gh_mm_params *params,
						 uint64_t capacity, gh_error *err)
{
	gh_slot *slots;
	uint32_t *rows;
	uint64_t s;
	uint64_t sum = 0;
	uint32_t ndistinct = 0;
	int g;
	int scheme;
	uint32_t i;

	if (!gh_build_start(mm, mem, hashes, nrows, params, capacity))
		return gh_error_set(err, GH_ERR_INVALID, "gh_mm_build_cpu");
	g = params->group_size;
	scheme = params->scheme;

	slots = (gh_slot *) mem;
	rows = (uint32_t *) ((char *) mem + gh_rows_offset(capacity));
	for (s = 0; s <= capacity; s++)
	{
		slots[s].hash = GH_EMPTY_HASH;
		slots[s].count = 0;
		slots[s].offset = 0;
	}
	memset((char *) mem + gh_ctrl_offset(capacity), 0, sizeof(gh_ctrl));

	for (i = 0; i < nrows; i++)
	{
		uint64_t slot;

		if ((i & 0xffff) == 0xffff && params->check_interrupts)
			params->check_interrupts();
		slot = cpu_find(slots, capacity, g, scheme, hashes[i], 1);

		if (slot == GH_NO_SLOT)
			return gh_error_set(err, GH_ERR_TABLE_FULL, "gh_mm_build_cpu");
		if (slots[slot].count++ == 0)
		{
			slots[slot].offset = i;
			ndistinct++;
		}
	}
	mm->ndistinct = ndistinct;

	/*
	 * Every hash distinct: the offsets are the rows, rows[] the identity.
	 * Grouped input: the first row of each group, which wrote the offset
	 * above, is its start, so the same holds.
	 */
	if (ndistinct == nrows || params->grouped)
	{
		for (i = 0; i < nrows; i++)
			rows[i] = i;
		return gh_error_set(err, GH_OK, NULL);
	}

	/* Group ends in slot order; the scatter below walks them back to starts. */
	for (s = 0; s <= capacity; s++)
	{
		if (slots[s].count == 0)
			continue;
		sum += slots[s].count;
		slots[s].offset = (uint32_t) sum;
	}

	for (i = nrows; i-- > 0;)
	{
		uint64_t slot;

		if ((i & 0xffff) == 0 && params->check_interrupts)
			params->check_interrupts();
		slot = cpu_find(slots, capacity, g, scheme, hashes[i], 0);

		/* Cannot happen unless the table changed under us: fail, never
		 * write through a missing slot. */
		if (slot == GH_NO_SLOT || slots[slot].offset == 0)
			return gh_error_set(err, GH_ERR_INVALID,
								"gh_mm_build_cpu: table changed during build");
		rows[--slots[slot].offset] = i;
	}
	return gh_error_set(err, GH_OK, NULL);
}

gh_status
gh_mm_build_cpu(gh_mm *mm, void *mem, const uint64_t *hashes, uint32_t nrows,
				const gh_mm_params *params, gh_error *err)
{
	uint64_t capacity = gh_capacity_for(nrows, params);

	if (capacity == 0)
		return gh_error_set(err, GH_ERR_INVALID, "gh_mm_build_cpu");
	return gh_mm_build_cpu_capacity(mm, mem, hashes, nrows, params, capacity,
									err);
}

/* The group (first row in rows[], count) of probe hash h; count 0: none. */
static void
cpu_group(const gh_mm *mm, uint64_t h, uint32_t *first, uint32_t *count)
{
	gh_slot *slots = (gh_slot *) mm->mem;
	uint64_t slot = cpu_find(slots, mm->capacity, mm->params.group_size,
							 mm->params.scheme, h, 0);

	if (slot == GH_NO_SLOT || slots[slot].count == 0)
	{
		*first = 0;
		*count = 0;
		return;
	}
	*first = slots[slot].offset;
	*count = slots[slot].count;
}

gh_status
gh_mm_probe_ranges_cpu(const gh_mm *mm, const uint64_t *probe, uint32_t nprobe,
					   uint32_t *first, uint32_t *count, gh_error *err)
{
	uint32_t p;

	if (!gh_mm_valid(mm) ||
		(nprobe > 0 && (probe == NULL || first == NULL || count == NULL)))
		return gh_error_set(err, GH_ERR_INVALID, "gh_mm_probe_ranges_cpu");
	/*
	 * Probes are independent cache misses into a table much larger than the
	 * caches: ask for the first window of the probe 16 ahead, so that many
	 * are in flight at once (the GPU hides the same latency with warps).
	 */
	for (p = 0; p < nprobe; p++)
	{
		if (p + 16 < nprobe && probe[p + 16] != GH_EMPTY_HASH)
		{
			uint64_t nwindows = mm->capacity /
								(uint64_t) mm->params.group_size;
			gh_seq seq = gh_seq_start(probe[p + 16], nwindows,
									  mm->params.scheme);

			__builtin_prefetch(
				&((const gh_slot *)
					  mm->mem)[seq.window * (uint64_t) mm->params.group_size]);
		}
		cpu_group(mm, probe[p], &first[p], &count[p]);
	}
	return gh_error_set(err, GH_OK, NULL);
}
