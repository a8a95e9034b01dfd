/*-------------------------------------------------------------------------
 * test_aggregate_cpu.c
 *	  CI unit test of the CPU twin of the aggregate's device code
 *	  (cuda/aggregate_cpu.c) against references computed here; TAP output.
 *
 * Usage: test_aggregate_cpu [seed]   (default: seed from the clock, printed)
 *
 * Each reference follows the contract of gh_aggregate.h, never the twin's
 * code: group ids by first appearance found by sorting rows (not through a
 * table), 128-bit sums and extremes by plain loops, years by counting leap
 * days, expression results by evaluating each program's SQL meaning with
 * the device's documented bounds.  The table itself is checked for its
 * invariants (each hash once, reachable from its start slot without an
 * empty slot, ids a permutation).  test_aggregate_gpu.cu then holds the GPU
 * to this twin.
 *-------------------------------------------------------------------------
 */
#include "agg_test_util.h"

static gh_error err;

/* ---------------------------------------------------------------- table */

static uint64_t
stored(uint64_t h)
{
	return h == UINT64_MAX ? UINT64_MAX - 1 : h;
}

static uint64_t *
tkeys(void *mem)
{
	return (uint64_t *) mem;
}

static uint32_t *
tids(void *mem, uint64_t cap)
{
	return (uint32_t *) ((char *) mem + ((cap * 8 + 15) & ~(uint64_t) 15));
}

static gh_agg_ctrl *
tctrl(void *mem, uint64_t cap)
{
	return (gh_agg_ctrl *) ((char *) mem + gh_agg_table_ctrl_offset(cap));
}

static void *
new_table(uint64_t cap)
{
	void *mem = at_alloc(gh_agg_table_bytes(cap));

	if (gh_agg_table_init_cpu(mem, cap, &err) != GH_OK)
	{
		printf("Bail out! gh_agg_table_init_cpu\n");
		exit(2);
	}
	return mem;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *) a;
	uint64_t y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

/*
 * check_table: ngroups slots hold distinct hashes, each reachable from its
 * start slot over occupied slots only, with ids a permutation of
 * [0, ngroups).
 */
static int
check_table(void *mem, uint64_t cap, uint64_t ngroups)
{
	uint64_t *k = tkeys(mem);
	uint32_t *id = tids(mem, cap);
	uint64_t mask = cap - 1;
	uint64_t used = 0;
	uint64_t *sorted = (uint64_t *) malloc(sizeof(uint64_t) * (ngroups + 1));
	uint8_t *seen = (uint8_t *) calloc(ngroups + 1, 1);
	int ok = 1;

	if (tctrl(mem, cap)->ngroups != ngroups)
		ok = mt_fail("ctrl.ngroups %llu, expected %llu",
					 (unsigned long long) tctrl(mem, cap)->ngroups,
					 (unsigned long long) ngroups);
	for (uint64_t s = 0; ok && s < cap; s++)
	{
		if (k[s] == GH_AGG_EMPTY)
			continue;
		if (used == ngroups)
		{
			ok = mt_fail("more than %llu slots used", (unsigned long long) ngroups);
			break;
		}
		sorted[used++] = k[s];
		if (id[s] >= ngroups || seen[id[s]]++)
			ok = mt_fail("slot %llu: id %u repeated or >= %llu",
						 (unsigned long long) s, id[s], (unsigned long long) ngroups);
		for (uint64_t t = gh_mix64(k[s]) & mask; ok && t != s; t = (t + 1) & mask)
			if (k[t] == GH_AGG_EMPTY)
				ok = mt_fail("slot %llu not reachable: slot %llu empty",
							 (unsigned long long) s, (unsigned long long) t);
	}
	if (ok && used != ngroups)
		ok = mt_fail("%llu slots used, expected %llu", (unsigned long long) used,
					 (unsigned long long) ngroups);
	qsort(sorted, used, sizeof(uint64_t), cmp_u64);
	for (uint64_t j = 1; ok && j < used; j++)
		if (sorted[j] == sorted[j - 1])
			ok = mt_fail("hash %llx stored twice", (unsigned long long) sorted[j]);
	free(sorted);
	free(seen);
	return ok;
}

/* The table's (hash, id) pairs, sorted by hash, for lookups by bisection. */
typedef struct tab_pairs
{
	uint64_t n;
	uint64_t *k;
	uint32_t *id;
} tab_pairs;

/* the keys qsort orders slots by (tab_read) */
static const uint64_t *sort_keys;

static int
cmp_slot_q(const void *a, const void *b)
{
	uint64_t x = sort_keys[*(const uint64_t *) a];
	uint64_t y = sort_keys[*(const uint64_t *) b];

	return x < y ? -1 : x > y;
}

static tab_pairs
tab_read(void *mem, uint64_t cap)
{
	tab_pairs t;
	uint64_t *slots = (uint64_t *) malloc(sizeof(uint64_t) * cap);

	t.n = 0;
	for (uint64_t s = 0; s < cap; s++)
		if (tkeys(mem)[s] != GH_AGG_EMPTY)
			slots[t.n++] = s;
	sort_keys = tkeys(mem);
	qsort(slots, t.n, sizeof(uint64_t), cmp_slot_q);
	t.k = (uint64_t *) malloc(sizeof(uint64_t) * (t.n + 1));
	t.id = (uint32_t *) malloc(sizeof(uint32_t) * (t.n + 1));
	for (uint64_t j = 0; j < t.n; j++)
	{
		t.k[j] = tkeys(mem)[slots[j]];
		t.id[j] = tids(mem, cap)[slots[j]];
	}
	free(slots);
	return t;
}

static void
tab_free(tab_pairs *t)
{
	free(t->k);
	free(t->id);
}

/* tab_id: the id the table gives stored hash h; -1 if absent */
static int64_t
tab_id(const tab_pairs *t, uint64_t h)
{
	uint64_t lo = 0, hi = t->n;

	while (lo < hi)
	{
		uint64_t mid = lo + (hi - lo) / 2;

		if (t->k[mid] < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->n && t->k[lo] == h ? (int64_t) t->id[lo] : -1;
}

static int64_t
table_id(void *mem, uint64_t cap, uint64_t h)
{
	tab_pairs t = tab_read(mem, cap);
	int64_t r = tab_id(&t, h);

	tab_free(&t);
	return r;
}

/*
 * ref_ids: ids by first appearance of each stored hash among h[0 .. n),
 * found by sorting (mt_ref); returns the number of distinct hashes.
 */
static uint32_t
ref_ids(const uint64_t *h, uint32_t n, uint32_t *ids)
{
	uint64_t *s = (uint64_t *) malloc(sizeof(uint64_t) * (n + 1));
	uint32_t *byfirst = (uint32_t *) malloc(sizeof(uint32_t) * (n + 1));
	uint32_t next = 0;
	mt_ref ref;

	for (uint32_t i = 0; i < n; i++)
		s[i] = stored(h[i]);
	mt_ref_build(&ref, s, n);
	for (uint32_t i = 0; i < n; i++)
	{
		uint32_t lo = 0;
		uint32_t first;

		mt_ref_find(&ref, s[i], &lo);
		first = ref.p[lo].row; /* the smallest row of the hash */
		if (first == i)
			byfirst[i] = next++;
		ids[i] = byfirst[first];
	}
	mt_ref_free(&ref);
	free(s);
	free(byfirst);
	return next;
}

static uint64_t
pow2_at_least(uint64_t x)
{
	uint64_t c = 2;

	while (c < x)
		c <<= 1;
	return c;
}

/*
 * run_assign: assigns h[0 .. n) in batches of at most `batch` rows, growing
 * the table by rehash (to `grow` times its size) whenever a batch could
 * take it past half full, and checks ids, ngroups and the table after each
 * batch, and that a rehash keeps every id.
 */
static void
run_assign(const char *name, const uint64_t *h, uint32_t n, uint32_t batch,
		   uint64_t cap0, int grow)
{
	uint32_t *want = (uint32_t *) malloc(sizeof(uint32_t) * (n + 1));
	uint32_t *got = (uint32_t *) malloc(sizeof(uint32_t) * (n + 1));
	uint64_t cap = cap0;
	void *mem = new_table(cap);
	int ok = 1;
	int rehashes = 0;

	for (uint32_t done = 0; ok && done <= n;)
	{
		uint32_t m = n - done < batch ? n - done : batch;
		uint32_t ndist;

		while (tctrl(mem, cap)->ngroups + m > cap / 2)
		{
			uint64_t ncap = cap * (uint64_t) grow;
			void *nmem = new_table(ncap);

			if (gh_agg_table_rehash_cpu(mem, cap, nmem, ncap, &err) != GH_OK)
				ok = mt_fail("rehash %llu -> %llu failed", (unsigned long long) cap,
							 (unsigned long long) ncap);
			/* every hash of the old table, with its id */
			{
				tab_pairs t = tab_read(nmem, ncap);

				for (uint64_t s = 0; ok && s < cap; s++)
					if (tkeys(mem)[s] != GH_AGG_EMPTY &&
						tab_id(&t, tkeys(mem)[s]) != tids(mem, cap)[s])
						ok = mt_fail("rehash lost or renumbered hash %llx",
									 (unsigned long long) tkeys(mem)[s]);
				ok = ok && check_table(nmem, ncap, tctrl(mem, cap)->ngroups);
				tab_free(&t);
			}
			free(mem);
			mem = nmem;
			cap = ncap;
			rehashes++;
		}
		if (gh_agg_assign_cpu(mem, cap, h + done, m, got + done, &err) != GH_OK)
		{
			ok = mt_fail("assign failed at row %u", done);
			break;
		}
		done += m;
		ndist = ref_ids(h, done, want);
		for (uint32_t i = 0; ok && i < done; i++)
			if (got[i] != want[i])
				ok = mt_fail("row %u: id %u, expected %u", i, got[i], want[i]);
		ok = ok && check_table(mem, cap, ndist);
		{
			tab_pairs t = tab_read(mem, cap);

			for (uint32_t i = 0; ok && i < done; i++)
				if (tab_id(&t, stored(h[i])) != (int64_t) want[i])
					ok = mt_fail("row %u: its hash is not in the table with its id", i);
			tab_free(&t);
		}
		/* the earlier rows again: no new group, the same ids */
		if (ok && done > 0)
		{
			uint32_t again = done < 3000 ? done : 3000;

			if (gh_agg_assign_cpu(mem, cap, h, again, got, &err) != GH_OK ||
				tctrl(mem, cap)->ngroups != ndist)
				ok = mt_fail("assigning known hashes again changed the table");
			for (uint32_t i = 0; ok && i < again; i++)
				if (got[i] != want[i])
					ok = mt_fail("row %u again: id %u, expected %u", i, got[i], want[i]);
		}
		if (m == 0)
			break;
	}
	mt_result(ok, "assign %s: %u rows, batches of %u, capacity %llu, %d rehashes",
			  name, n, batch, (unsigned long long) cap0, rehashes);
	free(mem);
	free(want);
	free(got);
}

static void
test_assign(mt_rng *rng)
{
	static const uint32_t sizes[] = { 0, 1, 2, 31, 32, 33, 1000, 100000 };
	uint32_t nmax = 100000;
	uint64_t *h = (uint64_t *) malloc(sizeof(uint64_t) * nmax);

	/* every row its own group, and repeated hashes, at every size */
	for (size_t j = 0; j < sizeof(sizes) / sizeof(sizes[0]); j++)
	{
		uint32_t n = sizes[j];

		mt_generate(h, n, MT_RANDOM, 0, rng);
		run_assign("unique", h, n, n ? n : 1, pow2_at_least(2 * (uint64_t) n), 2);
		mt_generate(h, n, MT_MULT, 7, rng);
		run_assign("mult7", h, n, n ? n : 1, pow2_at_least(2 * (uint64_t) n), 2);
	}
	mt_generate(h, 50000, MT_EQUAL, 0, rng);
	run_assign("one group", h, 50000, 50000, 2, 2);
	mt_generate(h, 20000, MT_SENTINEL, 0, rng);
	run_assign("sentinel-like", h, 20000, 20000, 65536, 2);
	mt_generate(h, 1000, MT_ALLMAX, 0, rng);
	run_assign("all the empty marker", h, 1000, 1000, 2, 2);
	mt_generate(h, 5000, MT_UNIQMAX, 0, rng);
	run_assign("unique with the empty marker", h, 5000, 5000, 16384, 2);
	mt_generate(h, 20000, MT_SKEW, 0, rng);
	run_assign("skew", h, 20000, 20000, 65536, 2);

	/* growth: small batches into a small table, rehash by 2 and by 4 */
	mt_generate(h, 30000, MT_MULT, 3, rng);
	run_assign("growth x2", h, 30000, 1000, 2, 2);
	run_assign("growth x4", h, 30000, 777, 4, 4);
	run_assign("one-row batches", h, 3000, 1, 2, 2);

	/* forced collisions: one start slot, and the last slot (wrapping) */
	at_colliding_hashes(h, 3000, 0, rng);
	run_assign("collide slot 0", h, 3000, 3000, 8192, 2);
	run_assign("collide slot 0, growth", h, 3000, 100, 2, 2);
	at_colliding_hashes(h, 700, 2047, rng);
	run_assign("collide last slot, wraps", h, 700, 700, 2048, 2);
	for (uint32_t i = 700; i < 1400; i++)
		h[i] = h[i - 700];
	run_assign("collide last slot, repeated", h, 1400, 100, 2048, 2);

	/* the empty marker and its neighbour are one group; 0 is another */
	{
		uint64_t hm[6] = { UINT64_MAX, UINT64_MAX - 1, 0, UINT64_MAX, 1,
						   UINT64_MAX - 2 };
		uint32_t ids[6];
		const uint32_t want[6] = { 0, 0, 1, 0, 2, 3 };
		void *mem = new_table(16);
		int ok = gh_agg_assign_cpu(mem, 16, hm, 6, ids, &err) == GH_OK;

		for (int i = 0; ok && i < 6; i++)
			if (ids[i] != want[i])
				ok = mt_fail("row %d: id %u, expected %u", i, ids[i], want[i]);
		ok = ok && check_table(mem, 16, 4) && table_id(mem, 16, UINT64_MAX) == -1;
		mt_result(ok, "assign: a hash equal to the empty marker");
		free(mem);
	}
	free(h);
}

static void
test_table_edges(mt_rng *rng)
{
	uint64_t h[9];
	uint32_t ids[9];
	void *mem = at_alloc(gh_agg_table_bytes(64));
	int ok;

	/* init over garbage: every slot empty, the whole ctrl zero */
	ok = gh_agg_table_init_cpu(mem, 64, &err) == GH_OK;
	for (int s = 0; ok && s < 64; s++)
		if (tkeys(mem)[s] != GH_AGG_EMPTY)
			ok = mt_fail("slot %d not empty", s);
	ok = ok && tctrl(mem, 64)->ngroups == 0 && tctrl(mem, 64)->prev == 0 &&
		 tctrl(mem, 64)->full == 0 && tctrl(mem, 64)->nbad == 0;
	mt_result(ok, "table init: empty slots, zero ctrl");

	/* a rehash of an empty table */
	{
		void *big = at_alloc(gh_agg_table_bytes(256));

		gh_agg_table_init_cpu(big, 256, &err);
		ok = gh_agg_table_rehash_cpu(mem, 64, big, 256, &err) == GH_OK &&
			 check_table(big, 256, 0);
		mt_result(ok, "rehash of an empty table");
		free(big);
	}
	free(mem);

	/* a table of 8 slots takes 8 hashes (all colliding), not a 9th */
	mem = new_table(8);
	at_colliding_hashes(h, 9, 5, rng);
	ok = gh_agg_assign_cpu(mem, 8, h, 8, ids, &err) == GH_OK &&
		 check_table(mem, 8, 8);
	ok = ok && gh_agg_assign_cpu(mem, 8, h + 3, 2, ids, &err) == GH_OK &&
		 ids[0] == 3 && ids[1] == 4;
	ok = ok && gh_agg_assign_cpu(mem, 8, h + 8, 1, ids, &err) == GH_ERR_TABLE_FULL &&
		 err.status == GH_ERR_TABLE_FULL && tctrl(mem, 8)->full != 0;
	mt_result(ok, "a full table: known hashes found, a new one GH_ERR_TABLE_FULL");
	free(mem);
}

/* ---------------------------------------------------------------- exact keys */

typedef struct ex_batch
{
	int nkeys;
	uint32_t n;
	uint64_t *vals[GH_AGG_MAX_KEYS];
	uint8_t *mask;
} ex_batch;

static void
ex_alloc(ex_batch *b, int nkeys, uint32_t n)
{
	memset(b, 0, sizeof(*b));
	b->nkeys = nkeys;
	b->n = n;
	for (int k = 0; k < GH_AGG_MAX_KEYS; k++)
		b->vals[k] = (uint64_t *) calloc(n + 1, 8);
	b->mask = (uint8_t *) calloc(n + 1, 1);
}

static void
ex_free(ex_batch *b)
{
	for (int k = 0; k < GH_AGG_MAX_KEYS; k++)
		free(b->vals[k]);
	free(b->mask);
}

/* ex_same: whether row i of a and row j of b have the same key */
static int
ex_same(const ex_batch *a, uint32_t i, const ex_batch *b, uint32_t j)
{
	if (a->mask[i] != b->mask[j])
		return 0;
	for (int k = 0; k < a->nkeys; k++)
		if (a->vals[k][i] != b->vals[k][j])
			return 0;
	return 1;
}

/*
 * The reference of the exact path over a run of batches: groups are keys,
 * numbered by first appearance; keys listed in `rep` (the representatives,
 * in id order).  A key that collides with an existing group's hash (the
 * tests make such keys deliberately, and tell the reference which key's
 * hash each key has through `hash_of`) is bad.
 */
typedef struct ex_ref
{
	ex_batch rep;	  /* representatives, row g = group g */
	uint64_t *h;	  /* their key hashes */
	uint32_t ngroups; /* groups so far */
} ex_ref;

static void
ref_alloc(ex_ref *ref, int nkeys, uint32_t cap)
{
	ex_alloc(&ref->rep, nkeys, cap);
	ref->h = (uint64_t *) calloc(cap + 1, 8);
	ref->ngroups = 0;
}

static void
ref_free(ex_ref *ref)
{
	ex_free(&ref->rep);
	free(ref->h);
}

static uint64_t
ex_hash(const ex_batch *b, uint32_t i)
{
	uint64_t h = gh_agg_key_hash_init(b->nkeys > 0 ? b->mask[i] : 0);

	for (int k = 0; k < b->nkeys; k++)
		h = gh_agg_key_hash_step(h, b->vals[k][i]);
	return h;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *) a;
	uint32_t y = *(const uint32_t *) b;

	return x < y ? -1 : x > y;
}

/*
 * run_exact_batch runs one batch through gh_agg_assign_exact_cpu and checks
 * it against the reference, which it then advances.  Colliding keys are
 * recognised by equal key hashes (ex_hash, the API's documented hash) with
 * different keys; everything else is by key.
 */
static int
run_exact_batch(void *mem, uint64_t cap, void *acc, const gh_agg_layout *l,
				ex_batch *b, int frozen, ex_ref *ref)
{
	gh_agg_keys k;
	uint32_t n = b->n;
	uint32_t *ids = (uint32_t *) malloc(sizeof(uint32_t) * (n + 1));
	uint32_t *bad = (uint32_t *) malloc(sizeof(uint32_t) * (n + 1));
	uint32_t *wbad = (uint32_t *) malloc(sizeof(uint32_t) * (n + 1));
	uint32_t *scratch = (uint32_t *) malloc(sizeof(uint32_t) * (2 * n + 1));
	uint32_t nwbad = 0;
	uint64_t prev = ref->ngroups;
	int ok = 1;
	gh_status st;

	memset(&k, 0, sizeof(k));
	k.nkeys = b->nkeys;
	for (int j = 0; j < b->nkeys; j++)
		k.vals[j] = b->vals[j];
	k.nullmask = b->mask;
	k.frozen = frozen;
	st = gh_agg_assign_exact_cpu(mem, cap, acc, l, &k, n, ids, scratch, bad, &err);
	if (st != GH_OK)
		ok = mt_fail("assign_exact status %d", (int) st);
	if (ok && tctrl(mem, cap)->prev != prev)
		ok = mt_fail("ctrl.prev %llu, expected %llu",
					 (unsigned long long) tctrl(mem, cap)->prev,
					 (unsigned long long) prev);
	for (uint32_t i = 0; ok && i < n; i++)
	{
		uint32_t want = GH_AGG_NO_GROUP;
		uint32_t g;
		uint64_t h = ex_hash(b, i);

		for (g = 0; g < ref->ngroups; g++)
			if (ref->h[g] == h)
				break;
		if (g == ref->ngroups)
		{
			if (frozen)
				wbad[nwbad++] = i | GH_AGG_BAD_ABSENT;
			else
			{
				/* a new group, represented by this row */
				for (int j = 0; j < b->nkeys; j++)
					ref->rep.vals[j][g] = b->vals[j][i];
				ref->rep.mask[g] = b->nkeys > 0 ? b->mask[i] : 0;
				ref->h[g] = h;
				ref->ngroups++;
				want = g;
			}
		}
		else if (b->nkeys == 0 || ex_same(b, i, &ref->rep, g))
			want = g;
		else
			wbad[nwbad++] = i;
		if (ids[i] != want)
			ok = mt_fail("row %u: id %u, expected %u", i, ids[i], want);
	}
	if (ok && (tctrl(mem, cap)->ngroups != ref->ngroups ||
			   tctrl(mem, cap)->nbad != nwbad))
		ok = mt_fail("ngroups %llu nbad %u, expected %u and %u",
					 (unsigned long long) tctrl(mem, cap)->ngroups,
					 tctrl(mem, cap)->nbad, ref->ngroups, nwbad);
	if (ok)
	{
		qsort(bad, nwbad, sizeof(uint32_t), cmp_u32);
		qsort(wbad, nwbad, sizeof(uint32_t), cmp_u32);
		for (uint32_t j = 0; ok && j < nwbad; j++)
			if (bad[j] != wbad[j])
				ok = mt_fail("bad[%u] = %x, expected %x", j, bad[j], wbad[j]);
	}
	/* the representatives in the accumulators' key arrays */
	for (uint32_t g = 0; ok && g < ref->ngroups && b->nkeys > 0; g++)
	{
		if (((uint8_t *) acc + l->knull_off)[g] != ref->rep.mask[g])
			ok = mt_fail("group %u: representative mask", g);
		for (int j = 0; ok && j < b->nkeys; j++)
			if (((uint64_t *) ((char *) acc + l->key_off[j]))[g] != ref->rep.vals[j][g])
				ok = mt_fail("group %u: representative key %d", g, j);
	}
	ok = ok && check_table(mem, cap, ref->ngroups);
	free(ids);
	free(bad);
	free(wbad);
	free(scratch);
	return ok;
}

/* fill_keys: keys of rows [from, to) from a domain of `dom` values per key */
static void
fill_keys(ex_batch *b, uint32_t from, uint32_t to, uint64_t dom, mt_rng *rng)
{
	static const uint64_t words[] = { 0, 1, UINT64_MAX, (uint64_t) INT64_MIN,
									  (uint64_t) INT64_MAX, 2 };

	for (uint32_t i = from; i < to; i++)
	{
		b->mask[i] = 0;
		for (int k = 0; k < b->nkeys; k++)
		{
			if (mt_below(rng, 8) == 0)
			{
				b->mask[i] |= (uint8_t) (1 << k);
				b->vals[k][i] = 0;
			}
			else
				b->vals[k][i] = mt_below(rng, 2) ? words[mt_below(rng, 6)]
												 : mt_below(rng, dom);
		}
	}
}

static void
test_exact(mt_rng *rng)
{
	static const uint32_t sizes[] = { 0, 1, 33, 5000 };
	uint8_t kinds[1] = { GH_AGG_KIND_INT };
	uint8_t ops[1] = { GH_AGG_OP_SUM };

	for (int nkeys = 0; nkeys <= 3; nkeys++)
		for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++)
		{
			uint32_t n = sizes[z];
			uint64_t cap = pow2_at_least(4 * (uint64_t) n + 8);
			void *mem = new_table(cap);
			gh_agg_layout l;
			void *acc;
			ex_batch b;
			ex_ref ref;
			int ok = 1;

			gh_agg_layout_init(&l, 1, kinds, ops, nkeys, 2 * (uint64_t) n + 2);
			acc = at_alloc(l.bytes);
			gh_agg_acc_init_cpu(acc, &l, 0, l.group_cap, &err);
			ex_alloc(&b, nkeys, n);
			ref_alloc(&ref, nkeys, 2 * n + 2);
			ref.ngroups = 0;
			/* two batches: the second repeats keys of the first */
			for (int pass = 0; ok && pass < 2; pass++)
			{
				fill_keys(&b, 0, n, n / 4 + 2, rng);
				ok = run_exact_batch(mem, cap, acc, &l, &b, 0, &ref);
			}
			mt_result(ok, "assign_exact: %d keys, %u rows, two batches", nkeys, n);
			ex_free(&b);
			ref_free(&ref);
			free(acc);
			free(mem);
		}

	/* colliding keys: across batches, within one, NULL masks differing */
	{
		uint32_t n = 4000;
		uint64_t cap = 16384;
		void *mem = new_table(cap);
		gh_agg_layout l;
		void *acc;
		ex_batch b;
		ex_ref ref;
		int ok = 1;
		uint32_t i;

		gh_agg_layout_init(&l, 1, kinds, ops, 2, n * 2);
		acc = at_alloc(l.bytes);
		gh_agg_acc_init_cpu(acc, &l, 0, l.group_cap, &err);
		ex_alloc(&b, 2, n);
		ref_alloc(&ref, 2, n * 2);
		ref.ngroups = 0;
		fill_keys(&b, 0, n, 1000000, rng);
		ok = run_exact_batch(mem, cap, acc, &l, &b, 0, &ref);
		/* second batch: every third row a different key with the hash of a
		 * key of the first batch; some rows the first batch's keys */
		for (i = 0; i < n; i++)
		{
			uint32_t j = (uint32_t) mt_below(rng, n);

			if (i % 3 == 0)
			{
				uint8_t m2 = (uint8_t) mt_below(rng, 2); /* the first key NULL or not */
				uint64_t w0 = m2 ? 0 : mt_next(rng);

				b.mask[i] = m2;
				b.vals[0][i] = w0;
				b.vals[1][i] = at_colliding_w1(ref.rep.mask[j % ref.ngroups],
											   ref.rep.vals[0][j % ref.ngroups],
											   ref.rep.vals[1][j % ref.ngroups], m2, w0);
			}
			else if (i % 3 == 1)
			{
				b.mask[i] = ref.rep.mask[j % ref.ngroups];
				b.vals[0][i] = ref.rep.vals[0][j % ref.ngroups];
				b.vals[1][i] = ref.rep.vals[1][j % ref.ngroups];
			}
			else
				fill_keys(&b, i, i + 1, 1000000, rng);
		}
		ok = ok && run_exact_batch(mem, cap, acc, &l, &b, 0, &ref);
		/* within one batch: row 2i + 1 collides with row 2i, a new key */
		for (i = 0; i + 1 < n; i += 2)
		{
			b.mask[i] = 0;
			b.vals[0][i] = mt_next(rng);
			b.vals[1][i] = mt_next(rng);
			b.mask[i + 1] = 1; /* the first key NULL (word 0) */
			b.vals[0][i + 1] = 0;
			b.vals[1][i + 1] = at_colliding_w1(0, b.vals[0][i], b.vals[1][i], 1, 0);
		}
		ok = ok && run_exact_batch(mem, cap, acc, &l, &b, 0, &ref);
		mt_result(ok, "assign_exact: colliding key hashes listed in bad[]");

		/* frozen: known keys keep their groups, new keys are absent */
		for (i = 0; i < n; i++)
		{
			uint32_t j = (uint32_t) mt_below(rng, ref.ngroups);

			if (i % 2)
			{
				b.mask[i] = ref.rep.mask[j];
				b.vals[0][i] = ref.rep.vals[0][j];
				b.vals[1][i] = ref.rep.vals[1][j];
			}
			else
				fill_keys(&b, i, i + 1, 1000000, rng);
		}
		ok = run_exact_batch(mem, cap, acc, &l, &b, 1, &ref);
		mt_result(ok, "assign_exact frozen: no group created, absent rows flagged");

		/* NULL is not 0: one key, 0 with and without the NULL bit */
		ex_free(&b);
		free(acc);
		free(mem);
		ref_free(&ref);
	}
	{
		gh_agg_layout l;
		void *mem = new_table(16);
		void *acc;
		ex_batch b;
		ex_ref ref;
		int ok;

		gh_agg_layout_init(&l, 1, kinds, ops, 1, 8);
		acc = at_alloc(l.bytes);
		gh_agg_acc_init_cpu(acc, &l, 0, 8, &err);
		ex_alloc(&b, 1, 4);
		ref_alloc(&ref, 1, 8);
		ref.ngroups = 0;
		b.mask[0] = 1;
		b.mask[2] = 1;		/* vals all 0 */
		ok = run_exact_batch(mem, 16, acc, &l, &b, 0, &ref) && ref.ngroups == 2;
		mt_result(ok, "assign_exact: a NULL key is not the key 0");
		ex_free(&b);
		ref_free(&ref);
		free(acc);
		free(mem);
	}
	{
		/* more groups than a table of 8 holds */
		gh_agg_layout l;
		void *mem = new_table(8);
		void *acc;
		ex_batch b;
		gh_agg_keys k;
		uint32_t ids[9], bad[9], scratch[18];
		int ok;

		gh_agg_layout_init(&l, 1, kinds, ops, 1, 16);
		acc = at_alloc(l.bytes);
		ex_alloc(&b, 1, 9);
		for (int i = 0; i < 9; i++)
			b.vals[0][i] = (uint64_t) i * 7919;
		memset(&k, 0, sizeof(k));
		k.nkeys = 1;
		k.vals[0] = b.vals[0];
		k.nullmask = b.mask;
		ok = gh_agg_assign_exact_cpu(mem, 8, acc, &l, &k, 9, ids, scratch, bad,
									 &err) == GH_ERR_TABLE_FULL;
		mt_result(ok, "assign_exact: a ninth group in 8 slots is GH_ERR_TABLE_FULL");
		ex_free(&b);
		free(acc);
		free(mem);
	}
}

/* ---------------------------------------------------------------- key_from_col, skip */

static int64_t
fdiv(int64_t a, int64_t b)
{
	int64_t q = a / b;

	if (a % b != 0 && ((a < 0) != (b < 0)))
		q--;
	return q;
}

/* days from 0000-01-01 (proleptic Gregorian, year 0 a leap year) to y-01-01 */
static int64_t
days_before_year(int64_t y)
{
	return 365 * y + fdiv(y + 3, 4) - fdiv(y + 99, 100) + fdiv(y + 399, 400);
}

/* ref_year: the year of day z (days from 2000-01-01), by bisection */
static int64_t
ref_year(int64_t z)
{
	int64_t d = z + days_before_year(2000);
	int64_t lo = -400000, hi = 6000000;

	while (hi - lo > 1)
	{
		int64_t mid = lo + (hi - lo) / 2;

		if (days_before_year(mid) <= d)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* ref_year_word: gh_agg_key_from_col's word for a date (4) or timestamp (8) */
static int64_t
ref_year_word(int64_t v, int len)
{
	int64_t y;

	if (len == 4 && (v == INT32_MAX || v == INT32_MIN))
		return v == INT32_MAX ? GH_AGG_YEAR_PINF : GH_AGG_YEAR_NINF;
	if (len == 8 && (v == INT64_MAX || v == INT64_MIN))
		return v == INT64_MAX ? GH_AGG_YEAR_PINF : GH_AGG_YEAR_NINF;
	y = ref_year(len == 4 ? v : fdiv(v, INT64_C(86400000000)));
	return y > 0 ? y : y - 1; /* no year 0: 1 BC is -1 */
}

static void
test_key_from_col(mt_rng *rng)
{
	uint32_t n = 20000;
	int64_t *vals = (int64_t *) malloc(8 * n);
	uint8_t *valid = (uint8_t *) malloc(n);
	uint64_t *keys = (uint64_t *) malloc(8 * n);
	uint8_t *mask = (uint8_t *) malloc(n);
	uint8_t *mask0 = (uint8_t *) malloc(n);

	for (int yl = 0; yl <= 8; yl += 4)
		for (int bit = 0; bit < 8; bit += 7)
		{
			int ok = 1;

			for (uint32_t i = 0; i < n; i++)
			{
				valid[i] = mt_below(rng, 5) != 0;
				vals[i] = yl == 4 ? at_date_edge(rng) : yl == 8 ? at_ts_edge(rng)
																: at_int_edge(rng);
				mask0[i] = mask[i] = (uint8_t) mt_next(rng);
				keys[i] = 0x5555;
			}
			/* years either side of New Year, from 4714 BC to 5874897 */
			if (yl != 0)
				for (uint32_t i = 0; i < 2000; i++)
				{
					int64_t y = -4713 + (int64_t) mt_below(rng, 5874897 + 4713);
					int64_t z = days_before_year(y) - days_before_year(2000) -
								(int64_t) mt_below(rng, 2);

					if (z < GH_DATE_MIN)
						z = GH_DATE_MIN;
					vals[i] = yl == 4 ? z : z * INT64_C(86400000000) +
												(int64_t) mt_below(rng, 2) *
													(INT64_C(86400000000) - 1);
				}
			if (gh_agg_key_from_col_cpu(vals, valid, n, yl, (uint8_t) (1 << bit),
										keys, mask, &err) != GH_OK)
				ok = mt_fail("status");
			for (uint32_t i = 0; ok && i < n; i++)
			{
				uint64_t want = !valid[i] ? 0 : yl == 0 ? (uint64_t) vals[i]
														: (uint64_t) ref_year_word(vals[i], yl);
				uint8_t wmask = valid[i] ? (uint8_t) (mask0[i] & ~(1 << bit))
										 : (uint8_t) (mask0[i] | (1 << bit));

				if (keys[i] != want || mask[i] != wmask)
					ok = mt_fail("row %u: value %lld: key %lld mask %x, expected %lld %x",
								 i, (long long) vals[i], (long long) keys[i], mask[i],
								 (long long) want, wmask);
			}
			mt_result(ok, "key_from_col: year_len %d, bit %d", yl, bit);
		}
	{
		/* n = 0 writes nothing */
		keys[0] = 7;
		mask[0] = 3;
		gh_agg_key_from_col_cpu(vals, valid, 0, 4, 1, keys, mask, &err);
		mt_result(keys[0] == 7 && mask[0] == 3, "key_from_col: an empty batch");
	}
	free(vals);
	free(valid);
	free(keys);
	free(mask);
	free(mask0);
}

static void
test_skip(mt_rng *rng)
{
	uint32_t n = 5000;
	uint32_t *ids = (uint32_t *) malloc(4 * n);
	uint32_t *rows = (uint32_t *) malloc(4 * n);
	uint8_t *skipped = (uint8_t *) calloc(n, 1);
	uint32_t nrows = 3000;
	int ok = 1;

	for (uint32_t i = 0; i < n; i++)
		ids[i] = i;
	for (uint32_t j = 0; j < nrows; j++)
	{
		rows[j] = (uint32_t) mt_below(rng, n); /* repeats allowed */
		skipped[rows[j]] = 1;
	}
	ok = gh_agg_skip_cpu(ids, rows, 0, &err) == GH_OK;
	for (uint32_t i = 0; ok && i < n; i++)
		ok = ids[i] == i;
	ok = ok && gh_agg_skip_cpu(ids, rows, nrows, &err) == GH_OK;
	for (uint32_t i = 0; ok && i < n; i++)
		if (ids[i] != (skipped[i] ? GH_AGG_NO_GROUP : i))
			ok = mt_fail("row %u: id %u", i, ids[i]);
	mt_result(ok, "skip: listed rows (repeats too) leave, the others stay");
	free(ids);
	free(rows);
	free(skipped);
}

/* ---------------------------------------------------------------- accumulators */

/* PostgreSQL's float order for min/max: NaN above all; -0 below +0 here */
static int
float_less(double a, double b)
{
	if (isnan(a))
		return 0;
	if (isnan(b))
		return 1;
	if (a == b)
		return signbit(a) && !signbit(b);
	return a < b;
}

/* the packed numeric order: by m, then by display scale */
static int
num_less(int64_t a, int64_t b)
{
	int64_t ma = a >> 8, mb = b >> 8;

	return ma != mb ? ma < mb : (a & 0xff) < (b & 0xff);
}

/* One group's reference of one column. */
typedef struct ac_ref
{
	uint64_t nn;
	__int128 isum;
	double fsum;
	uint32_t flags, ds;
	int64_t imin, imax;
	double fmin, fmax;
	int any;
} ac_ref;

/* ac_ref_add adds value v of a column of kind `kind` to r. */
static void
ac_ref_add(ac_ref *r, uint8_t kind, int64_t v)
{
	double f = at_bitsd((uint64_t) v);

	r->nn++;
	if (kind == GH_AGG_KIND_FLOAT)
	{
		r->fsum += f;
		r->flags |= isnan(f) ? GH_AGG_SAW_NAN : isinf(f) ? GH_AGG_SAW_INF : 0;
		if (!r->any || float_less(f, r->fmin))
			r->fmin = f;
		if (!r->any || float_less(r->fmax, f))
			r->fmax = f;
	}
	else if (kind == GH_AGG_KIND_NUMERIC)
	{
		r->isum += v >> 8;
		r->ds = (uint32_t) (v & 0xff) > r->ds ? (uint32_t) (v & 0xff) : r->ds;
		if (!r->any || num_less(v, r->imin))
			r->imin = v;
		if (!r->any || num_less(r->imax, v))
			r->imax = v;
	}
	else
	{
		r->isum += v;
		if (!r->any || v < r->imin)
			r->imin = v;
		if (!r->any || v > r->imax)
			r->imax = v;
	}
	r->any = 1;
}

/* check_col compares group g of column c of acc with its reference r. */
static int
check_col(const char *a, const gh_agg_layout *l, int c, uint64_t g, const ac_ref *r)
{
	int fl = ac_kind[c] == GH_AGG_KIND_FLOAT;

	if (((const uint64_t *) (a + l->nonnull_off[c]))[g] != r->nn)
		return mt_fail("col %d group %llu: nonnull %llu, expected %llu", c,
					   (unsigned long long) g,
					   (unsigned long long) ((const uint64_t *) (a + l->nonnull_off[c]))[g],
					   (unsigned long long) r->nn);
	if (l->ops[c] & GH_AGG_OP_SUM)
	{
		if (fl)
		{
			double got = ((const double *) (a + l->sum_off[c]))[g];

			/* a NaN's sign and payload follow the order of the additions
			 * and the compiler's choice of operands */
			if (isnan(r->fsum) ? !isnan(got) : at_dbits(got) != at_dbits(r->fsum))
				return mt_fail("col %d group %llu: sum %a, expected %a", c,
							   (unsigned long long) g, got, r->fsum);
			if (((const uint32_t *) (a + l->aux_off[c]))[g] != r->flags)
				return mt_fail("col %d group %llu: flags %u, expected %u", c,
							   (unsigned long long) g,
							   ((const uint32_t *) (a + l->aux_off[c]))[g], r->flags);
		}
		else
		{
			uint64_t lo = ((const uint64_t *) (a + l->sum_off[c]))[g];
			int64_t hi = ((const int64_t *) (a + l->sum_off[c]))[l->group_cap + g];
			__int128 got = (__int128) (((unsigned __int128) (uint64_t) hi << 64) | lo);

			if (got != r->isum)
				return mt_fail("col %d group %llu: 128-bit sum %llx:%llx, expected %llx:%llx",
							   c, (unsigned long long) g, (unsigned long long) hi,
							   (unsigned long long) lo, (unsigned long long) (r->isum >> 64),
							   (unsigned long long) r->isum);
			if (ac_kind[c] == GH_AGG_KIND_NUMERIC &&
				((const uint32_t *) (a + l->aux_off[c]))[g] != r->ds)
				return mt_fail("col %d group %llu: dscale %u, expected %u", c,
							   (unsigned long long) g,
							   ((const uint32_t *) (a + l->aux_off[c]))[g], r->ds);
		}
	}
	for (int mx = 0; mx < 2; mx++)
	{
		uint8_t op = mx ? GH_AGG_OP_MAX : GH_AGG_OP_MIN;
		uint64_t got;

		if (!(l->ops[c] & op))
			continue;
		got = ((const uint64_t *) (a + (mx ? l->max_off[c] : l->min_off[c])))[g];
		if (fl)
		{
			double gd = gh_agg_float_unkey(got);
			double want = mx ? r->fmax : r->fmin;

			if (!r->any ? got != (mx ? GH_AGG_FKEY_MAX_INIT : GH_AGG_FKEY_MIN_INIT)
						: isnan(want) ? !isnan(gd) : at_dbits(gd) != at_dbits(want))
				return mt_fail("col %d group %llu: %s key %llx, expected %a", c,
							   (unsigned long long) g, mx ? "max" : "min",
							   (unsigned long long) got, want);
		}
		else
		{
			int64_t want = !r->any ? (mx ? GH_AGG_INT_MAX_INIT : GH_AGG_INT_MIN_INIT)
								   : mx ? r->imax : r->imin;

			if ((int64_t) got != want)
				return mt_fail("col %d group %llu: %s %lld, expected %lld", c,
							   (unsigned long long) g, mx ? "max" : "min",
							   (long long) got, (long long) want);
		}
	}
	return 1;
}

/*
 * check_acc compares groups [0, ngroups) of acc (layout l) with the
 * reference of batches d[0 .. nb), computed in one pass over the rows.
 */
static int
check_acc(const void *acc, const gh_agg_layout *l, const ac_data *d, int nb,
		  uint64_t ngroups)
{
	const char *a = (const char *) acc;
	uint64_t *rows = (uint64_t *) calloc(ngroups + 1, 8);
	ac_ref *ref = (ac_ref *) calloc((ngroups + 1) * AC_NCOLS, sizeof(ac_ref));
	int ok = 1;

	for (int j = 0; j < nb; j++)
		for (uint32_t i = 0; i < d[j].n; i++)
		{
			uint32_t g = d[j].ids[i];

			if (g == GH_AGG_NO_GROUP)
				continue;
			rows[g]++;
			for (int c = 0; c < AC_NCOLS; c++)
				if (d[j].valid[c][i] && (ac_kind[c] == GH_AGG_KIND_NONE || ac_ops[c] != 0))
					ac_ref_add(&ref[(size_t) g * AC_NCOLS + c], ac_kind[c], d[j].vals[c][i]);
		}
	for (uint64_t g = 0; ok && g < ngroups; g++)
	{
		if (((const uint64_t *) (a + l->rows_off))[g] != rows[g])
			ok = mt_fail("group %llu: rows %llu, expected %llu", (unsigned long long) g,
						 (unsigned long long) ((const uint64_t *) (a + l->rows_off))[g],
						 (unsigned long long) rows[g]);
		for (int c = 0; ok && c < AC_NCOLS; c++)
			ok = check_col(a, l, c, g, &ref[g * AC_NCOLS + c]);
	}
	free(rows);
	free(ref);
	return ok;
}

static void
test_accumulate(mt_rng *rng)
{
	static const uint32_t sizes[] = { 0, 1, 1000, 50000 };

	for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++)
		for (int shape = AC_ONE_GROUP; shape <= AC_SKIPPED; shape++)
		{
			uint32_t n = sizes[z];
			uint64_t ngroups = shape == AC_ONE_GROUP ? 1 : shape == AC_OWN_GROUP ? n : 37;
			gh_agg_layout l;
			void *acc;
			ac_data d[2];
			int ok = 1;

			if (ngroups == 0)
				ngroups = 1;
			gh_agg_layout_init(&l, AC_NCOLS, ac_kind, ac_ops, 0, ngroups + 3);
			acc = at_alloc(l.bytes);
			ok = gh_agg_acc_init_cpu(acc, &l, 0, l.group_cap, &err) == GH_OK;
			/* two batches into the same accumulators */
			ac_make(&d[0], n, (ac_shape) shape, (uint32_t) ngroups, 0, rng);
			ac_make(&d[1], n, (ac_shape) shape, (uint32_t) ngroups, 0, rng);
			for (int j = 0; ok && j < 2; j++)
			{
				gh_agg_batch b = ac_batch(&d[j]);

				ok = gh_agg_accumulate_cpu(acc, &l, ngroups, &b, &err) == GH_OK &&
					 check_acc(acc, &l, d, j + 1, ngroups);
			}
			mt_result(ok, "accumulate: %u rows, %s, every kind and op", n,
					  ac_shape_name[shape]);
			ac_free(&d[0]);
			ac_free(&d[1]);
			free(acc);
		}

	/* the extremes of a group that saw only one of each special value */
	{
		static const double sp[] = { NAN, INFINITY, -INFINITY, 0.0, -0.0, -NAN };
		uint8_t k1[1] = { GH_AGG_KIND_FLOAT };
		uint8_t o1[1] = { GH_AGG_OP_SUM | GH_AGG_OP_MIN | GH_AGG_OP_MAX };
		gh_agg_layout l;
		void *acc;
		int ok = 1;

		gh_agg_layout_init(&l, 1, k1, o1, 0, 64);
		acc = at_alloc(l.bytes);
		gh_agg_acc_init_cpu(acc, &l, 0, 64, &err);
		for (int a = 0; a < 6; a++)
			for (int b2 = 0; b2 < 6; b2++)
			{
				double v[2] = { sp[a], sp[b2] };
				uint32_t ids[2] = { (uint32_t) (a * 6 + b2) % 64,
									(uint32_t) (a * 6 + b2) % 64 };
				uint8_t valid[2] = { 1, 1 };
				gh_agg_batch b;
				double mn, mx;

				memset(&b, 0, sizeof(b));
				b.n = 2;
				b.ids = ids;
				b.vals[0] = v;
				b.valid[0] = valid;
				gh_agg_accumulate_cpu(acc, &l, 64, &b, &err);
				mn = gh_agg_float_unkey(((uint64_t *) ((char *) acc + l.min_off[0]))[ids[0]]);
				mx = gh_agg_float_unkey(((uint64_t *) ((char *) acc + l.max_off[0]))[ids[0]]);
				/* NaN the largest; -0 the smaller zero; min <= max */
				if ((isnan(v[0]) || isnan(v[1])) != isnan(mx) ||
					(isnan(v[0]) && isnan(v[1])) != isnan(mn) ||
					(!isnan(mn) && !isnan(mx) && mn > mx) ||
					(v[0] == 0 && v[1] == 0 && (signbit(mn) != (signbit(v[0]) || signbit(v[1])))))
					ok = mt_fail("%a and %a: min %a max %a", v[0], v[1], mn, mx);
			}
		mt_result(ok, "float min/max of NaN, infinities and signed zeros pairwise");
		free(acc);
	}
}

static void
test_acc_init_move(mt_rng *rng)
{
	gh_agg_layout l, l2;
	char *acc, *dst;
	uint64_t cap = 100, cap2 = 260, from = 17, to = 61, ng = 83;
	int ok = 1;

	for (int nkeys = 0; nkeys <= 2; nkeys += 2)
	{
		gh_agg_layout_init(&l, AC_NCOLS, ac_kind, ac_ops, nkeys, cap);
		acc = (char *) at_alloc(l.bytes);
		ok = gh_agg_acc_init_cpu(acc, &l, from, to, &err) == GH_OK;
		/* inside [from, to): the markers; outside: untouched (0xa5) */
		for (uint64_t g = 0; ok && g < cap; g++)
		{
			int in = g >= from && g < to;
			uint64_t gar = UINT64_C(0xa5a5a5a5a5a5a5a5);

			if (((uint64_t *) (acc + l.rows_off))[g] != (in ? 0 : gar))
				ok = mt_fail("rows[%llu]", (unsigned long long) g);
			for (int k = 0; k < nkeys; k++)
				if (((uint64_t *) (acc + l.key_off[k]))[g] != (in ? 0 : gar) ||
					((uint8_t *) (acc + l.knull_off))[g] != (in ? 0 : 0xa5))
					ok = mt_fail("key %d of group %llu", k, (unsigned long long) g);
			for (int c = 0; ok && c < AC_NCOLS; c++)
			{
				int fl = ac_kind[c] == GH_AGG_KIND_FLOAT;

				if (((uint64_t *) (acc + l.nonnull_off[c]))[g] != (in ? 0 : gar))
					ok = mt_fail("nonnull of col %d", c);
				if (l.ops[c] & GH_AGG_OP_SUM)
				{
					if (((uint64_t *) (acc + l.sum_off[c]))[g] != (in ? 0 : gar) ||
						(!fl && ((uint64_t *) (acc + l.sum_off[c]))[cap + g] != (in ? 0 : gar)) ||
						(l.aux_off[c] && ((uint32_t *) (acc + l.aux_off[c]))[g] !=
											 (in ? 0 : 0xa5a5a5a5u)))
						ok = mt_fail("sum of col %d group %llu", c, (unsigned long long) g);
				}
				if ((l.ops[c] & GH_AGG_OP_MIN) &&
					((uint64_t *) (acc + l.min_off[c]))[g] !=
						(!in ? gar : fl ? GH_AGG_FKEY_MIN_INIT : (uint64_t) GH_AGG_INT_MIN_INIT))
					ok = mt_fail("min of col %d group %llu", c, (unsigned long long) g);
				if ((l.ops[c] & GH_AGG_OP_MAX) &&
					((uint64_t *) (acc + l.max_off[c]))[g] !=
						(!in ? gar : fl ? GH_AGG_FKEY_MAX_INIT : (uint64_t) GH_AGG_INT_MAX_INIT))
					ok = mt_fail("max of col %d group %llu", c, (unsigned long long) g);
				if (l.ops[c] == 0 && (l.sum_off[c] || l.min_off[c] || l.max_off[c]))
					ok = mt_fail("col %d without ops has arrays", c);
			}
		}
		ok = ok && gh_agg_acc_init_cpu(acc, &l, 5, 5, &err) == GH_OK &&
			 ((uint64_t *) (acc + l.rows_off))[5] == UINT64_C(0xa5a5a5a5a5a5a5a5);
		mt_result(ok, "acc_init: [%llu, %llu) set to nothing yet, the rest untouched (%d keys)",
				  (unsigned long long) from, (unsigned long long) to, nkeys);

		/* move: random bytes to a larger layout, groups [0, ng) */
		for (size_t j = 0; j < l.bytes; j++)
			acc[j] = (char) mt_next(rng);
		gh_agg_layout_init(&l2, AC_NCOLS, ac_kind, ac_ops, nkeys, cap2);
		dst = (char *) at_alloc(l2.bytes);
		ok = gh_agg_acc_move_cpu(dst, &l2, acc, &l, ng, &err) == GH_OK;
#define SAME(off2, off1, w, what)                                                  \
	do                                                                             \
	{                                                                              \
		if (ok && memcmp(dst + (off2), acc + (off1), (size_t) ng * (w)) != 0)      \
			ok = mt_fail("%s differs", what);                                      \
		if (ok && (uint8_t) dst[(off2) + ng * (w)] != 0xa5)                        \
			ok = mt_fail("%s written past ngroups", what);                         \
	} while (0)
		SAME(l2.rows_off, l.rows_off, 8, "rows");
		for (int k = 0; k < nkeys; k++)
			SAME(l2.key_off[k], l.key_off[k], 8, "key");
		if (nkeys)
			SAME(l2.knull_off, l.knull_off, 1, "key NULL mask");
		for (int c = 0; c < AC_NCOLS; c++)
		{
			SAME(l2.nonnull_off[c], l.nonnull_off[c], 8, "nonnull");
			if (l.ops[c] & GH_AGG_OP_SUM)
			{
				SAME(l2.sum_off[c], l.sum_off[c], 8, "sum");
				if (ac_kind[c] != GH_AGG_KIND_FLOAT)
					SAME(l2.sum_off[c] + cap2 * 8, l.sum_off[c] + cap * 8, 8, "sum hi");
				if (l.aux_off[c])
					SAME(l2.aux_off[c], l.aux_off[c], 4, "aux");
			}
			if (l.ops[c] & GH_AGG_OP_MIN)
				SAME(l2.min_off[c], l.min_off[c], 8, "min");
			if (l.ops[c] & GH_AGG_OP_MAX)
				SAME(l2.max_off[c], l.max_off[c], 8, "max");
		}
#undef SAME
		mt_result(ok, "acc_move: groups [0, %llu) from capacity %llu to %llu (%d keys)",
				  (unsigned long long) ng, (unsigned long long) cap,
				  (unsigned long long) cap2, nkeys);
		free(acc);
		free(dst);
	}
}

/* ---------------------------------------------------------------- expressions */

#define LIM55 ((__int128) GH_AGG_NUM_MAX_ABS - 1)
#define LIM62 ((__int128) 1 << 62)

/* ref_pack: the device's final step for a numeric value m at scale sg */
static int
ref_pack(__int128 m, int sg, int d, int out_scale, int64_t *out)
{
	for (int k = sg; k < out_scale; k++)
	{
		if (m >= LIM62 || m <= -LIM62)
			return GH_EXPR_HOST;
		m *= 10;
	}
	if (m >= LIM55 || m <= -LIM55 || d > GH_AGG_NUM_MAX_DSCALE)
		return GH_EXPR_HOST;
	*out = (int64_t) (((uint64_t) (int64_t) m << 8) | (uint64_t) d);
	return GH_EXPR_OK;
}

/* three-valued logic: 0 false, 1 true, 2 NULL */
static int
tv_and(int a, int b)
{
	return a == 0 || b == 0 ? 0 : a == 2 || b == 2 ? 2 : 1;
}

static int
tv_or(int a, int b)
{
	return a == 1 || b == 1 ? 1 : a == 2 || b == 2 ? 2 : 0;
}

static int
tv_cmp(int null, int c)
{
	return null ? 2 : c;
}

/*
 * ref_float_op: a op b in PostgreSQL's float4/float8 arithmetic, with
 * float.h's errors; returns 0 where PostgreSQL would raise.
 */
static int
ref_float_op(uint8_t op, int prec, double a, double b, double *r)
{
	if (op == GH_EXPR_FDIV && b == 0 && !isnan(a))
		return 0;
	if (prec == 4)
	{
		volatile float x = (float) a, y = (float) b, z;

		z = op == GH_EXPR_FADD ? x + y : op == GH_EXPR_FSUB ? x - y
									 : op == GH_EXPR_FMUL ? x * y : x / y;
		*r = z;
	}
	else
	{
		volatile double z;

		z = op == GH_EXPR_FADD ? a + b : op == GH_EXPR_FSUB ? a - b
									 : op == GH_EXPR_FMUL ? a * b : a / b;
		*r = z;
	}
	if (isinf(*r) && !isinf(a) && (op == GH_EXPR_FDIV || !isinf(b)))
		return 0;
	if (*r == 0 && a != 0 &&
		((op == GH_EXPR_FMUL && b != 0) || (op == GH_EXPR_FDIV && !isinf(b))))
		return 0;
	return 1;
}

/* ref_expr: the expected result of program id, variant v over row i */
static int
ref_expr(int id, int v, int64_t *const *x, uint8_t *const *ok, uint32_t i,
		 int64_t *out)
{
	int64_t a = x[0][i], b = x[1][i], c = x[2][i];
	int na = !ok[0][i], nb = !ok[1][i], nc = !ok[2][i];

	switch (id)
	{
		case AT_P_NUMARITH:
		{
			__int128 m;

			if (na || nb || nc)
				return GH_EXPR_NULL;
			m = (__int128) (a >> 8) * (b >> 8) + (__int128) (c >> 8) * 1000 - 500;
			{
				int d = (int) (a & 0xff) + (int) (b & 0xff);

				d = d > (int) (c & 0xff) ? d : (int) (c & 0xff);
				d = d > 1 ? d : 1;
				return ref_pack(-m, 3, d, 4, out);
			}
		}
		case AT_P_NUMMUL3:
		{
			__int128 p;

			if (na || nb || nc)
				return GH_EXPR_NULL;
			p = (__int128) (a >> 8) * (b >> 8);
			if (p >= LIM62 || p <= -LIM62)
				return GH_EXPR_HOST;
			return ref_pack(p * (c >> 8), 3,
							(int) (a & 0xff) + (int) (b & 0xff) + (int) (c & 0xff), 3, out);
		}
		case AT_P_NUMSCALE:
			if (na)
				return GH_EXPR_NULL;
			return ref_pack(a >> 8, at_num_scale[0], (int) (a & 0xff),
							at_num_scale[0] + 3, out);
		case AT_P_INT:
		case AT_P_INEG:
		{
			int w = id == AT_P_INEG ? at_widths[v] : at_widths[v / 5];
			uint8_t op = id == AT_P_INEG ? GH_EXPR_INEG : at_int_ops[v % 5];
			__int128 hi = w == 2 ? INT16_MAX : w == 4 ? INT32_MAX : INT64_MAX;
			__int128 r;

			if (na || (op != GH_EXPR_INEG && nb))
				return GH_EXPR_NULL;
			if ((op == GH_EXPR_IDIV || op == GH_EXPR_IMOD) && b == 0)
				return GH_EXPR_HOST;
			r = op == GH_EXPR_IADD ? (__int128) a + b :
				op == GH_EXPR_ISUB ? (__int128) a - b :
				op == GH_EXPR_IMUL ? (__int128) a * b :
				op == GH_EXPR_IDIV ? (__int128) a / b :
				op == GH_EXPR_IMOD ? (__int128) a % b : -(__int128) a;
			if (r > hi || r < -hi - 1)
				return GH_EXPR_HOST;
			*out = (int64_t) r;
			return GH_EXPR_OK;
		}
		case AT_P_CASE:
		{
			int cond = tv_and(tv_cmp(na || nb, a > b), !nc);
			__int128 r;

			if (cond == 1)
			{
				r = (__int128) a - b;
				if (r > INT64_MAX || r < INT64_MIN)
					return GH_EXPR_HOST;
			}
			else if (!nc)
				r = c;
			else
				return GH_EXPR_NULL;
			return ref_pack(r, 0, 0, 0, out);
		}
		case AT_P_LOGIC:
		{
			int l1 = tv_or(tv_cmp(na || nb, a < b), tv_cmp(na || nc, a == c));
			int r1 = tv_cmp(nb || nc, b <= c);
			int l2 = tv_or(tv_or(tv_cmp(nb || nc, b != c), tv_cmp(na || nb, a >= b)),
						   r1 == 2 ? 2 : !r1);
			int t = tv_and(l1, l2);

			if (t == 2)
				return GH_EXPR_NULL;
			return ref_pack(t, 0, 0, 0, out);
		}
		case AT_P_NUMCOND:
			if (na)
				return GH_EXPR_HOST; /* conditional: a NULL numeric input */
			if ((a >> 8) > 150)
				return ref_pack(a >> 8, at_num_scale[0], (int) (a & 0xff),
								at_num_scale[0], out);
			return ref_pack(-2, 0, 0, at_num_scale[0], out);
		case AT_P_DATE:
		{
			int ainf = a == INT32_MIN || a == INT32_MAX;
			__int128 r;

			if (na || nb)
				return GH_EXPR_NULL;
			if (v == 0)
			{
				if (ainf || b == INT32_MIN || b == INT32_MAX)
					return GH_EXPR_HOST;
				*out = a - b;
				return GH_EXPR_OK;
			}
			if (ainf)
			{
				*out = a;
				return GH_EXPR_OK;
			}
			r = v == 1 ? (__int128) a + b : (__int128) a - b;
			if (r < GH_DATE_MIN || r >= GH_DATE_END)
				return GH_EXPR_HOST;
			*out = (int64_t) r;
			return GH_EXPR_OK;
		}
		case AT_P_YEAR:
		{
			int64_t t = v == 0 ? a : x[3][i];

			if (v == 0 ? na : !ok[3][i])
				return GH_EXPR_NULL;
			if (v == 0 ? (t == INT32_MIN || t == INT32_MAX)
					   : (t == INT64_MIN || t == INT64_MAX))
				return GH_EXPR_HOST;
			return ref_pack(ref_year_word(t, v == 0 ? 4 : 8), 0, 0, 0, out);
		}
		case AT_P_FLOAT:
		{
			int prec = (v & 1) ? 8 : 4;
			double r, t;

			if (na || nb)
				return GH_EXPR_NULL;
			if (!ref_float_op(at_float_ops[v < 8 ? v / 2 : 3], prec, at_bitsd((uint64_t) a),
							  at_bitsd((uint64_t) b), &r))
				return GH_EXPR_HOST;
			if (v < 8)
			{
				double cf;

				if (nc)
					return GH_EXPR_NULL;
				if (prec == 4)
				{
					volatile float f = (float) c;

					cf = f;
				}
				else
					cf = (double) c;
				if (!ref_float_op(GH_EXPR_FMUL, prec, r, cf, &t) ||
					!ref_float_op(GH_EXPR_FDIV, prec, t, prec == 4 ? 3.0 : 0.1, &r))
					return GH_EXPR_HOST;
				r = -r;
			}
			*out = (int64_t) at_dbits(r);
			return GH_EXPR_OK;
		}
		case AT_P_FLOATCMP:
		{
			double f = at_bitsd((uint64_t) a);

			if (na)
				return GH_EXPR_NULL;
			if (isnan(f) || f == 0 || f > 1.5)
				return ref_pack(1, 0, 0, 0, out);
			return GH_EXPR_NULL;
		}
		case AT_P_ALLHOST:
			return na || nb ? GH_EXPR_NULL : GH_EXPR_HOST;
	}
	return -1;
}

static void
test_expr(mt_rng *rng)
{
	static const uint32_t sizes[] = { 0, 1, 3000 };
	uint32_t nmax = 3000;
	int64_t *vals[AT_NCOLS];
	uint8_t *valid[AT_NCOLS];
	int64_t *out = (int64_t *) malloc(8 * nmax);
	uint8_t *outv = (uint8_t *) malloc(nmax);
	uint32_t *host = (uint32_t *) malloc(4 * nmax);

	for (int c = 0; c < AT_NCOLS; c++)
	{
		vals[c] = (int64_t *) malloc(8 * nmax);
		valid[c] = (uint8_t *) malloc(nmax);
	}
	for (int id = 0; id < AT_NPROGS; id++)
		for (int v = 0; v < at_prog_variants[id]; v++)
			for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++)
			{
				uint32_t n = sizes[z];
				uint32_t nhost = 12345, wn = 0;
				uint32_t counts[3] = { 0, 0, 0 };
				at_prog p;
				int ok;

				at_prog_make(&p, id, v);
				at_prog_data(id, v, rng, n, vals, valid);
				at_prog_point(&p, vals, valid);
				ok = gh_expr_eval_cpu(&p.e, n, out, outv, host, &nhost, &err) == GH_OK;
				for (uint32_t i = 0; ok && i < n; i++)
				{
					int64_t want = 0;
					int r = ref_expr(id, v, vals, valid, i, &want);

					counts[r]++;
					if (r == GH_EXPR_HOST)
					{
						/* the twin lists in row order; the API allows any */
						if (wn >= nhost || host[wn] != i)
							ok = mt_fail("row %u not listed for the host", i);
						wn++;
					}
					if (outv[i] != (r == GH_EXPR_OK) ||
						(r == GH_EXPR_OK && out[i] != want))
						ok = mt_fail("program %d/%d row %u (%llx %llx %llx): valid %d out %llx,"
									 " expected %d %llx", id, v, i,
									 (unsigned long long) vals[0][i],
									 (unsigned long long) vals[1][i],
									 (unsigned long long) vals[2][i], outv[i],
									 (unsigned long long) out[i], r,
									 (unsigned long long) want);
				}
				if (ok && nhost != wn)
					ok = mt_fail("nhost %u, expected %u", nhost, wn);
				mt_result(ok, "expr %s, variant %d, %u rows (%u ok, %u NULL, %u host)",
						  at_prog_name[id], v, n, counts[0], counts[1], counts[2]);
			}
	for (int c = 0; c < AT_NCOLS; c++)
	{
		free(vals[c]);
		free(valid[c]);
	}
	free(out);
	free(outv);
	free(host);
}

/* The value encodings: the float order key and the numeric packing. */
static void
test_encodings(void)
{
	static const double ordered[] = { -INFINITY, -DBL_MAX, -1.0, -DBL_MIN,
									  -DBL_MIN / 8, -0.0, 0.0, DBL_MIN / 8,
									  DBL_MIN, 1.0, DBL_MAX, INFINITY, NAN };
	int n = (int) (sizeof(ordered) / sizeof(ordered[0]));
	int ok = 1;

	for (int i = 0; i + 1 < n; i++)
		if (!(gh_agg_float_key(ordered[i]) < gh_agg_float_key(ordered[i + 1])))
			ok = mt_fail("key(%a) >= key(%a)", ordered[i], ordered[i + 1]);
	for (int i = 0; ok && i + 1 < n; i++)
		if (at_dbits(gh_agg_float_unkey(gh_agg_float_key(ordered[i]))) !=
			at_dbits(ordered[i]))
			ok = mt_fail("unkey(key(%a))", ordered[i]);
	ok = ok && gh_agg_float_key(-NAN) == gh_agg_float_key(NAN) &&
		 isnan(gh_agg_float_unkey(gh_agg_float_key(NAN))) &&
		 gh_agg_float_key(-INFINITY) > GH_AGG_FKEY_MAX_INIT &&
		 gh_agg_float_key(NAN) < GH_AGG_FKEY_MIN_INIT;
	mt_result(ok, "float order key: -inf < ... < -0 < +0 < ... < inf < NaN, and back");

	ok = 1;
	{
		static const int64_t ms[] = { -(GH_AGG_NUM_MAX_ABS - 1), -1, 0, 1,
									  GH_AGG_NUM_MAX_ABS - 1 };

		for (int i = 0; i < 5; i++)
			for (int d = 0; d <= GH_AGG_NUM_MAX_DSCALE; d += 85)
			{
				int64_t p = gh_agg_num_pack(ms[i], d);

				if (gh_agg_num_m(p) != ms[i] || gh_agg_num_dscale(p) != d)
					ok = mt_fail("pack(%lld, %d)", (long long) ms[i], d);
				if (i > 0 && !(gh_agg_num_pack(ms[i - 1], GH_AGG_NUM_MAX_DSCALE) < p))
					ok = mt_fail("packing order at %lld", (long long) ms[i]);
			}
	}
	mt_result(ok, "numeric packing: m and dscale back, order of m kept at the limits");
}

int
main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : (uint64_t) time(NULL);
	mt_rng rng;
	double t0 = mt_now();

	rng.s = seed;
	printf("# test_aggregate_cpu seed %llu (rerun: test_aggregate_cpu %llu)\n",
		   (unsigned long long) seed, (unsigned long long) seed);
	test_encodings();
	test_table_edges(&rng);
	test_assign(&rng);
	test_exact(&rng);
	test_key_from_col(&rng);
	test_skip(&rng);
	test_acc_init_move(&rng);
	test_accumulate(&rng);
	test_expr(&rng);
	printf("# total %.1f s\n", mt_now() - t0);
	return mt_finish();
}
