/*-------------------------------------------------------------------------
 * aggregate_cpu.c
 *	  CPU twin of cuda/aggregate.cu: the group-id hash table and the
 *	  accumulators of gpuhash_aggregate(), run sequentially on the host.
 *
 * The twin uses the table layout, the probe sequence (linear from
 * gh_mix64(hash)) and the accumulator layout of the GPU code, and applies
 * the same per-row updates in row order, so gpuhash.device = cpu exercises
 * every line of the host side.  The only difference a caller can see is the
 * numbering of groups: here ids follow first appearance, on the GPU they
 * follow whichever thread won the insert.  Plain C, no PostgreSQL headers
 * (see gh_aggregate.h for the layout and the encodings).
 *
 * gh_agg_layout_init also lives here: the host needs it with or without nvcc.
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "aggregate_impl.h"
#include "gh_error.h"

/* Array `type` at byte offset off of base. */
#define ARR(type, base, off) ((type *) ((char *) (base) + (off)))

/* Rounds up to a multiple of 16 bytes, so that every array is aligned. */
static size_t
align16(size_t x)
{
	return (x + 15) & ~(size_t) 15;
}

void
gh_agg_layout_init(gh_agg_layout *l, int ncols, const uint8_t *kind,
				   const uint8_t *ops, int nkeys, uint64_t group_cap)
{
	size_t off = 0;
	size_t n8 = align16((size_t) group_cap * 8);
	size_t n4 = align16((size_t) group_cap * 4);

	memset(l, 0, sizeof(*l));
	l->ncols = ncols;
	l->nkeys = nkeys;
	l->group_cap = group_cap;
	l->rows_off = off;
	off += n8;
	for (int k = 0; k < nkeys; k++)
	{
		l->key_off[k] = off;
		off += n8;
	}
	if (nkeys > 0)
	{
		l->knull_off = off;
		off += align16((size_t) group_cap);
	}
	for (int c = 0; c < ncols; c++)
	{
		l->kind[c] = kind[c];
		l->ops[c] = kind[c] == GH_AGG_KIND_NONE ? 0 : ops[c];
		l->nonnull_off[c] = off;
		off += n8;
		if (l->ops[c] & GH_AGG_OP_SUM)
		{
			l->sum_off[c] = off;
			off += kind[c] == GH_AGG_KIND_FLOAT ? n8 : 2 * n8;
			if (kind[c] != GH_AGG_KIND_INT)
			{
				l->aux_off[c] = off;
				off += n4;
			}
		}
		if (l->ops[c] & GH_AGG_OP_MIN)
		{
			l->min_off[c] = off;
			off += n8;
		}
		if (l->ops[c] & GH_AGG_OP_MAX)
		{
			l->max_off[c] = off;
			off += n8;
		}
	}
	l->bytes = off;
}

size_t
gh_agg_table_ctrl_offset(uint64_t capacity)
{
	return align16((size_t) capacity * 8) + align16((size_t) capacity * 4);
}

size_t
gh_agg_table_bytes(uint64_t capacity)
{
	return gh_agg_table_ctrl_offset(capacity) + sizeof(gh_agg_ctrl);
}

gh_status
gh_agg_table_init_cpu(void *mem, uint64_t capacity, gh_error *err)
{
	uint64_t *keys = (uint64_t *) mem;

	for (uint64_t s = 0; s < capacity; s++)
		keys[s] = GH_AGG_EMPTY;
	memset((char *) mem + gh_agg_table_ctrl_offset(capacity), 0,
		   sizeof(gh_agg_ctrl));
	return GH_OK;
}

/* The parts of one group table's allocation (gh_agg_table_bytes). */
typedef struct cpu_table
{
	uint64_t *keys;
	uint32_t *ids;
	gh_agg_ctrl *ctrl;
	uint64_t capacity;
} cpu_table;

static cpu_table
table_of(void *mem, uint64_t capacity)
{
	cpu_table t;

	t.keys = (uint64_t *) mem;
	t.ids = (uint32_t *) ((char *) mem + align16((size_t) capacity * 8));
	t.ctrl = (gh_agg_ctrl *) ((char *) mem +
							  gh_agg_table_ctrl_offset(capacity));
	t.capacity = capacity;
	return t;
}

/*
 * insert_or_find returns the slot of hash h (already a stored hash),
 * inserting it with the next id (or new_id, if not GH_AGG_NO_GROUP) if
 * absent, or UINT64_MAX if the table is full.
 */
static uint64_t
insert_or_find(const cpu_table *t, uint64_t h, uint32_t new_id)
{
	uint64_t mask = t->capacity - 1;
	uint64_t s = gh_mix64(h) & mask;

	for (uint64_t step = 0; step < t->capacity; step++)
	{
		if (t->keys[s] == h)
			return s;
		if (t->keys[s] == GH_AGG_EMPTY)
		{
			t->keys[s] = h;
			if (new_id == GH_AGG_NO_GROUP)
				t->ids[s] = (uint32_t) t->ctrl->ngroups++;
			else
				t->ids[s] = new_id;
			return s;
		}
		s = (s + 1) & mask;
	}
	t->ctrl->full = 1;
	return UINT64_MAX;
}

/* find says whether hash h (a stored hash) is in the table. */
static int
find(const cpu_table *t, uint64_t h)
{
	uint64_t mask = t->capacity - 1;
	uint64_t s = gh_mix64(h) & mask;

	for (uint64_t step = 0; step < t->capacity; step++)
	{
		if (t->keys[s] == h)
			return 1;
		if (t->keys[s] == GH_AGG_EMPTY)
			return 0;
		s = (s + 1) & mask;
	}
	return 0;
}

gh_status
gh_agg_table_rehash_cpu(const void *old_mem, uint64_t old_cap, void *new_mem,
						uint64_t new_cap, gh_error *err)
{
	cpu_table from = table_of((void *) old_mem, old_cap); /* only read */
	cpu_table to = table_of(new_mem, new_cap);

	for (uint64_t s = 0; s < old_cap; s++)
	{
		if (from.keys[s] == GH_AGG_EMPTY)
			continue;
		if (insert_or_find(&to, from.keys[s], from.ids[s]) == UINT64_MAX)
			return gh_error_set(err, GH_ERR_TABLE_FULL,
								"gh_agg_table_rehash_cpu");
	}
	to.ctrl->ngroups = from.ctrl->ngroups;
	return GH_OK;
}

gh_status
gh_agg_assign_cpu(void *mem, uint64_t capacity, const uint64_t *hashes,
				  uint32_t n, uint32_t *ids, gh_error *err)
{
	cpu_table t = table_of(mem, capacity);

	for (uint32_t i = 0; i < n; i++)
	{
		uint64_t s = insert_or_find(&t, gh_agg_stored_hash(hashes[i]),
									GH_AGG_NO_GROUP);

		if (s == UINT64_MAX)
			return gh_error_set(err, GH_ERR_TABLE_FULL, "gh_agg_assign_cpu");
		ids[i] = t.ids[s];
	}
	return GH_OK;
}

gh_status
gh_agg_assign_exact_cpu(void *mem, uint64_t capacity, void *acc,
						const gh_agg_layout *l, const gh_agg_keys *k,
						uint32_t n, uint32_t *ids, uint32_t *scratch,
						uint32_t *bad, gh_error *err)
{
	cpu_table t = table_of(mem, capacity);
	gh_agg_ctrl *ctrl = t.ctrl;
	uint8_t *rep_null = l->nkeys > 0 ? ARR(uint8_t, acc, l->knull_off) : NULL;

	ctrl->prev = ctrl->ngroups;
	ctrl->nbad = 0;
	for (uint32_t i = 0; i < n; i++)
	{
		uint8_t mask = k->nkeys > 0 ? k->nullmask[i] : 0;
		uint64_t h = gh_agg_key_hash_init(mask);
		uint64_t before = ctrl->ngroups;
		uint64_t s;
		uint32_t g;
		int same = 1;

		for (int j = 0; j < k->nkeys; j++)
			h = gh_agg_key_hash_step(h, k->vals[j][i]);
		if (k->frozen && !find(&t, gh_agg_stored_hash(h)))
		{
			ids[i] = GH_AGG_NO_GROUP;
			bad[ctrl->nbad++] = i | GH_AGG_BAD_ABSENT;
			continue;
		}
		s = insert_or_find(&t, gh_agg_stored_hash(h), GH_AGG_NO_GROUP);
		if (s == UINT64_MAX)
			return gh_error_set(err, GH_ERR_TABLE_FULL,
								"gh_agg_assign_exact_cpu");
		g = t.ids[s];
		if (ctrl->ngroups != before)
		{
			/* a new group: this row's key represents it */
			for (int j = 0; j < k->nkeys; j++)
				ARR(uint64_t, acc, l->key_off[j])[g] = k->vals[j][i];
			if (rep_null)
				rep_null[g] = mask;
		}
		else
		{
			if (rep_null && rep_null[g] != mask)
				same = 0;
			for (int j = 0; same && j < k->nkeys; j++)
				same = ARR(uint64_t, acc, l->key_off[j])[g] == k->vals[j][i];
		}
		if (same)
			ids[i] = g;
		else
		{
			ids[i] = GH_AGG_NO_GROUP;
			bad[ctrl->nbad++] = i;
		}
	}
	return GH_OK;
}

gh_status
gh_agg_key_from_col_cpu(const int64_t *vals, const uint8_t *valid, uint32_t n,
						int year_len, uint8_t bit, uint64_t *keys,
						uint8_t *nullmask, gh_error *err)
{
	(void) err;
	for (uint32_t i = 0; i < n; i++)
	{
		int ok = valid[i] != 0;

		keys[i] = ok ? gh_agg_key_word(vals[i], year_len) : 0;
		nullmask[i] = ok ? (uint8_t) (nullmask[i] & ~bit) : (uint8_t) (nullmask[i] | bit);
	}
	return GH_OK;
}

gh_status
gh_agg_skip_cpu(uint32_t *ids, const uint32_t *rows, uint32_t nrows,
				gh_error *err)
{
	for (uint32_t i = 0; i < nrows; i++)
		ids[rows[i]] = GH_AGG_NO_GROUP;
	return GH_OK;
}

gh_status
gh_agg_acc_init_cpu(void *acc, const gh_agg_layout *l, uint64_t from,
					uint64_t to, gh_error *err)
{
	size_t n = (size_t) (to - from);

	if (to <= from)
		return GH_OK;
	memset(ARR(uint64_t, acc, l->rows_off) + from, 0, n * 8);
	for (int k = 0; k < l->nkeys; k++)
		memset(ARR(uint64_t, acc, l->key_off[k]) + from, 0, n * 8);
	if (l->nkeys > 0)
		memset(ARR(uint8_t, acc, l->knull_off) + from, 0, n);
	for (int c = 0; c < l->ncols; c++)
	{
		memset(ARR(uint64_t, acc, l->nonnull_off[c]) + from, 0, n * 8);
		if (l->ops[c] & GH_AGG_OP_SUM)
		{
			memset(ARR(uint64_t, acc, l->sum_off[c]) + from, 0, n * 8);
			if (l->kind[c] != GH_AGG_KIND_FLOAT)
				memset(ARR(uint64_t, acc, l->sum_off[c]) + l->group_cap + from,
					   0, n * 8);
			if (l->aux_off[c])
				memset(ARR(uint32_t, acc, l->aux_off[c]) + from, 0, n * 4);
		}
		for (uint64_t g = from; g < to; g++)
		{
			if (l->ops[c] & GH_AGG_OP_MIN)
			{
				if (l->kind[c] == GH_AGG_KIND_FLOAT)
					ARR(uint64_t, acc, l->min_off[c])
				[g] = GH_AGG_FKEY_MIN_INIT;
				else ARR(int64_t, acc, l->min_off[c])[g] = GH_AGG_INT_MIN_INIT;
			}
			if (l->ops[c] & GH_AGG_OP_MAX)
			{
				if (l->kind[c] == GH_AGG_KIND_FLOAT)
					ARR(uint64_t, acc, l->max_off[c])
				[g] = GH_AGG_FKEY_MAX_INIT;
				else ARR(int64_t, acc, l->max_off[c])[g] = GH_AGG_INT_MAX_INIT;
			}
		}
	}
	return GH_OK;
}

gh_status
gh_agg_acc_move_cpu(void *dst, const gh_agg_layout *dl, const void *src,
					const gh_agg_layout *sl, uint64_t ngroups, gh_error *err)
{
	size_t n8 = (size_t) ngroups * 8;

	memcpy(ARR(char, dst, dl->rows_off), ARR(const char, src, sl->rows_off),
		   n8);
	for (int k = 0; k < dl->nkeys; k++)
		memcpy(ARR(char, dst, dl->key_off[k]),
			   ARR(const char, src, sl->key_off[k]), n8);
	if (dl->nkeys > 0)
		memcpy(ARR(char, dst, dl->knull_off),
			   ARR(const char, src, sl->knull_off), (size_t) ngroups);
	for (int c = 0; c < dl->ncols; c++)
	{
		memcpy(ARR(char, dst, dl->nonnull_off[c]),
			   ARR(const char, src, sl->nonnull_off[c]), n8);
		if (dl->ops[c] & GH_AGG_OP_SUM)
		{
			memcpy(ARR(char, dst, dl->sum_off[c]),
				   ARR(const char, src, sl->sum_off[c]), n8);
			if (dl->kind[c] != GH_AGG_KIND_FLOAT)
				memcpy(ARR(uint64_t, dst, dl->sum_off[c]) + dl->group_cap,
					   ARR(const uint64_t, src, sl->sum_off[c]) +
						   sl->group_cap,
					   n8);
			if (dl->aux_off[c])
				memcpy(ARR(char, dst, dl->aux_off[c]),
					   ARR(const char, src, sl->aux_off[c]),
					   (size_t) ngroups * 4);
		}
		if (dl->ops[c] & GH_AGG_OP_MIN)
			memcpy(ARR(char, dst, dl->min_off[c]),
				   ARR(const char, src, sl->min_off[c]), n8);
		if (dl->ops[c] & GH_AGG_OP_MAX)
			memcpy(ARR(char, dst, dl->max_off[c]),
				   ARR(const char, src, sl->max_off[c]), n8);
	}
	return GH_OK;
}

/*
 * add128 adds the signed v to the 128-bit (hi, lo) exactly the way the GPU
 * does with atomics: carry of the low word plus sign extension into hi.
 */
static inline void
add128(uint64_t *lo, int64_t *hi, int64_t v)
{
	uint64_t old = *lo;
	uint64_t add = (uint64_t) v;

	*lo = old + add;
	*hi += (int64_t) ((v < 0 ? UINT64_MAX : 0) + (old + add < old ? 1 : 0));
}

gh_status
gh_agg_accumulate_cpu(void *acc, const gh_agg_layout *l, uint64_t ngroups,
					  const gh_agg_batch *b, gh_error *err)
{
	uint64_t *rows = ARR(uint64_t, acc, l->rows_off);

	for (uint32_t i = 0; i < b->n; i++)
	{
		uint32_t g = b->ids[i];

		if (g == GH_AGG_NO_GROUP)
			continue;
		rows[g]++;
		for (int c = 0; c < l->ncols; c++)
		{
			uint8_t ops = l->ops[c];

			/* an expression's input that no aggregate reads accumulates nothing */
			if (!b->valid[c][i] || (ops == 0 && l->kind[c] != GH_AGG_KIND_NONE))
				continue;
			ARR(uint64_t, acc, l->nonnull_off[c])[g]++;
			if (l->kind[c] == GH_AGG_KIND_FLOAT)
			{
				double v = ((const double *) b->vals[c])[i];
				uint64_t key = gh_agg_float_key(v);

				if (ops & GH_AGG_OP_SUM)
				{
					ARR(double, acc, l->sum_off[c])[g] += v;
					if (v != v)
						ARR(uint32_t, acc, l->aux_off[c])[g] |= GH_AGG_SAW_NAN;
					else if (v - v != 0)
						ARR(uint32_t, acc, l->aux_off[c])[g] |= GH_AGG_SAW_INF;
				}
				if ((ops & GH_AGG_OP_MIN) &&
					key < ARR(uint64_t, acc, l->min_off[c])[g])
					ARR(uint64_t, acc, l->min_off[c])[g] = key;
				if ((ops & GH_AGG_OP_MAX) &&
					key > ARR(uint64_t, acc, l->max_off[c])[g])
					ARR(uint64_t, acc, l->max_off[c])[g] = key;
			}
			else if (l->kind[c] != GH_AGG_KIND_NONE)
			{
				int64_t v = ((const int64_t *) b->vals[c])[i];

				if (ops & GH_AGG_OP_SUM)
				{
					uint64_t *lo = ARR(uint64_t, acc, l->sum_off[c]) + g;
					int64_t *hi = ARR(int64_t, acc, l->sum_off[c]) +
								  l->group_cap + g;

					if (l->kind[c] == GH_AGG_KIND_NUMERIC)
					{
						uint32_t *ds = ARR(uint32_t, acc, l->aux_off[c]) + g;

						add128(lo, hi, gh_agg_num_m(v));
						if ((uint32_t) gh_agg_num_dscale(v) > *ds)
							*ds = (uint32_t) gh_agg_num_dscale(v);
					}
					else
						add128(lo, hi, v);
				}
				if ((ops & GH_AGG_OP_MIN) &&
					v < ARR(int64_t, acc, l->min_off[c])[g])
					ARR(int64_t, acc, l->min_off[c])[g] = v;
				if ((ops & GH_AGG_OP_MAX) &&
					v > ARR(int64_t, acc, l->max_off[c])[g])
					ARR(int64_t, acc, l->max_off[c])[g] = v;
			}
		}
	}
	return GH_OK;
}
