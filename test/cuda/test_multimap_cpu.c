/*-------------------------------------------------------------------------
 * test_multimap_cpu.c
 *	  CI unit test of the CPU twin of the static multimap against a
 *	  brute-force reference (sorted (hash, row) pairs); TAP output.
 *
 * Usage: test_multimap_cpu [seed]   (default: seed from the clock, printed)
 *
 * Every case builds a table, then checks the table's invariants (capacity
 * rule, distinct count, row array a permutation), ranges, and through the
 * test probes built on ranges (mm_probes_cpu.c) count and retrieve for every
 * probe kind (sorted pairs equal to the reference's, candidates of one outer
 * row contiguous), mark_matched, and the overflow contract.
 *-------------------------------------------------------------------------
 */
#include "mm_test_util.h"

static const gh_probe_kind kinds[] = { GH_JOIN_INNER, GH_JOIN_OUTER,
									   GH_JOIN_SEMI, GH_JOIN_ANTI };
static const char *kind_names[] = { "inner", "outer", "semi", "anti" };
static const int groups[] = { 1, 2, 4, 8, 16, 32 };

static void *
alloc16(size_t bytes)
{
	void *p = NULL;

	if (posix_memalign(&p, 64, bytes ? bytes : 16) != 0)
		return NULL;
	return p;
}

/* Reference pairs of one kind, packed outer << 32 | inner, ascending. */
static uint64_t
ref_pairs(const mt_ref *ref, const uint32_t *reflo, const uint32_t *refcnt,
		  uint32_t np, gh_probe_kind kind, uint64_t *out)
{
	uint64_t n = 0;
	uint32_t p;

	for (p = 0; p < np; p++)
	{
		uint32_t lo = reflo[p];
		uint32_t c = refcnt[p];
		uint64_t k;
		uint64_t nout = gh_out_count(kind, c);

		for (k = 0; k < nout; k++)
		{
			uint32_t inner = c ? ref->p[lo + k].row : GH_NO_ROW;

			if (out != NULL)
				out[n] = ((uint64_t) p << 32) | inner;
			n++;
		}
	}
	return n;
}

/*
 * One full case.  probe2 (np2 rows) is a second batch for the accumulating
 * mark_matched check.
 */
static int
check_case(const uint64_t *h, uint32_t n, const gh_mm_params *prm,
		   const uint64_t *probe, uint32_t np, const mt_ref *ref,
		   const uint32_t *reflo, const uint32_t *refcnt)
{
	gh_mm mm;
	gh_error err;
	uint64_t cap = 0;
	size_t bytes = gh_mm_bytes(n, prm, &cap);
	void *mem = alloc16(bytes);
	uint32_t *first = (uint32_t *) malloc(sizeof(uint32_t) * (np ? np : 1));
	uint32_t *count = (uint32_t *) malloc(sizeof(uint32_t) * (np ? np : 1));
	uint32_t *scratch = (uint32_t *) malloc(sizeof(uint32_t) *
											(n / 32 + 1 + (size_t) n));
	unsigned char *seen = (unsigned char *) malloc(np ? np : 1);
	uint32_t *matched = (uint32_t *) calloc(n / 32 + 1, sizeof(uint32_t));
	uint32_t *refmatched = (uint32_t *) calloc(n / 32 + 1, sizeof(uint32_t));
	const uint32_t *rows;
	double want = (double) n / prm->load_factor;
	int ok = 1;
	size_t ki;
	uint32_t p;
	gh_status st;

	if (!mem || !first || !count || !scratch || !seen || !matched ||
		!refmatched)
	{
		ok = mt_fail("out of host memory");
		goto done;
	}

	/* Capacity: the smallest power of two >= n / lf and >= G. */
	if (!mt_is_pow2(cap) || cap < (uint64_t) prm->group_size ||
		(double) cap < want ||
		(cap > (uint64_t) prm->group_size && (double) (cap / 2) >= want))
	{
		ok = mt_fail("capacity %llu for %u rows at %.2f, G %d",
					 (unsigned long long) cap, n, prm->load_factor,
					 prm->group_size);
		goto done;
	}
	if (bytes != gh_total_bytes(cap, n) ||
		bytes < (cap + 1) * 16 + (size_t) n * 4)
	{
		ok = mt_fail("gh_mm_bytes %zu", bytes);
		goto done;
	}

	st = gh_mm_build_cpu(&mm, mem, h, n, prm, &err);
	if (st != GH_OK || err.status != GH_OK)
	{
		ok = mt_fail("build: status %d", (int) st);
		goto done;
	}
	if (mm.mem != mem || mm.capacity != cap || mm.nrows != n ||
		mm.ndistinct != ref->ndistinct ||
		mm.params.group_size != prm->group_size ||
		mm.params.scheme != prm->scheme)
	{
		ok = mt_fail(
			"gh_mm fields: capacity %llu nrows %u ndistinct %u (expected %u)",
			(unsigned long long) mm.capacity, mm.nrows, mm.ndistinct,
			ref->ndistinct);
		goto done;
	}
	rows = gh_mm_rows(&mm);
	if (!mt_check_permutation(rows, n, scratch) ||
		!mt_check_unique_layout(rows, n, ref->ndistinct))
	{
		ok = 0;
		goto done;
	}

	/* Ranges: exactly the reference's rows, ascending, for every probe. */
	st = gh_mm_probe_ranges_cpu(&mm, probe, np, first, count, &err);
	if (st != GH_OK)
	{
		ok = mt_fail("ranges: status %d", (int) st);
		goto done;
	}
	for (p = 0; p < np && ok; p++)
	{
		uint32_t lo = reflo[p];
		uint32_t c = refcnt[p];
		uint32_t k;

		if (count[p] != c)
			ok = mt_fail("ranges: probe %u count %u, expected %u", p, count[p],
						 c);
		for (k = 0; k < c && ok; k++)
			if ((uint64_t) first[p] + c > n ||
				rows[first[p] + k] != ref->p[lo + k].row)
				ok = mt_fail("ranges: probe %u row %u differs", p, k);
	}
	if (!ok)
		goto done;

	/* Count and retrieve, every kind. */
	for (ki = 0; ki < 4 && ok; ki++)
	{
		gh_probe_kind kind = kinds[ki];
		uint64_t total = UINT64_MAX;
		uint64_t expect = ref_pairs(ref, reflo, refcnt, np, kind, NULL);
		uint64_t *want_pairs = (uint64_t *) malloc(sizeof(uint64_t) *
												   (expect + 1));
		uint64_t *got = (uint64_t *) malloc(sizeof(uint64_t) * (expect + 1));
		uint32_t *outer = (uint32_t *) malloc(sizeof(uint32_t) *
											  (expect + 17));
		uint32_t *inner = (uint32_t *) malloc(sizeof(uint32_t) *
											  (expect + 17));
		uint64_t written = UINT64_MAX;
		uint64_t i;

		if (!want_pairs || !got || !outer || !inner)
			ok = mt_fail("out of host memory");
		if (ok && ((st = mt_probe_count_cpu(&mm, probe, np, kind, &total,
											&err)) != GH_OK ||
				   total != expect))
			ok = mt_fail("%s count: status %d, %llu pairs, expected %llu",
						 kind_names[ki], (int) st, (unsigned long long) total,
						 (unsigned long long) expect);
		if (ok)
		{
			for (i = 0; i < expect + 17; i++)
				outer[i] = inner[i] = 0xabababab;
			st = mt_probe_retrieve_cpu(&mm, probe, np, kind, outer, inner,
									   expect, &written, &err);
			if (st != GH_OK || written != expect)
				ok = mt_fail("%s retrieve: status %d, wrote %llu of %llu",
							 kind_names[ki], (int) st,
							 (unsigned long long) written,
							 (unsigned long long) expect);
			for (i = expect; i < expect + 17 && ok; i++)
				if (outer[i] != 0xabababab || inner[i] != 0xabababab)
					ok = mt_fail("%s retrieve wrote past its capacity",
								 kind_names[ki]);
		}
		if (ok)
			ok = mt_check_pairs(kind, h, n, probe, np, count, outer, inner,
								written, scratch, seen);
		if (ok)
		{
			ref_pairs(ref, reflo, refcnt, np, kind, want_pairs);
			for (i = 0; i < expect; i++)
				got[i] = ((uint64_t) outer[i] << 32) | inner[i];
			mt_sort_packed(got, expect);
			if (memcmp(got, want_pairs, sizeof(uint64_t) * expect) != 0)
				ok = mt_fail("%s retrieve: pairs differ from the reference",
							 kind_names[ki]);
		}
		/* Overflow: one pair short must say so, fill exactly the buffer and
		 * write the same prefix. */
		if (ok && expect > 0)
		{
			uint32_t *o2 = (uint32_t *) malloc(sizeof(uint32_t) *
											   (expect + 16));
			uint32_t *i2 = (uint32_t *) malloc(sizeof(uint32_t) *
											   (expect + 16));

			for (i = 0; i < expect + 16; i++)
				o2[i] = i2[i] = 0xcdcdcdcd;
			st = mt_probe_retrieve_cpu(&mm, probe, np, kind, o2, i2,
									   expect - 1, &written, &err);
			if (st != GH_ERR_OVERFLOW || err.status != GH_ERR_OVERFLOW ||
				written != expect - 1)
				ok = mt_fail("%s overflow: status %d written %llu",
							 kind_names[ki], (int) st,
							 (unsigned long long) written);
			for (i = 0; i < expect - 1 && ok; i++)
				if (o2[i] != outer[i] || i2[i] != inner[i])
					ok = mt_fail("%s overflow: prefix differs",
								 kind_names[ki]);
			for (i = expect - 1; i < expect + 16 && ok; i++)
				if (o2[i] != 0xcdcdcdcd || i2[i] != 0xcdcdcdcd)
					ok = mt_fail("%s overflow wrote past the buffer",
								 kind_names[ki]);
			if (ok &&
				mt_probe_retrieve_cpu(&mm, probe, np, kind, NULL, NULL, 0,
									  &written, &err) != GH_ERR_OVERFLOW)
				ok = mt_fail("%s overflow with capacity 0 not reported",
							 kind_names[ki]);
			free(o2);
			free(i2);
		}
		free(want_pairs);
		free(got);
		free(outer);
		free(inner);
	}
	if (!ok)
		goto done;

	/* mark_matched: the probe set in two batches, bits accumulate. */
	for (p = 0; p < np; p++)
	{
		uint32_t lo = reflo[p];
		uint32_t c = refcnt[p];
		uint32_t k;

		for (k = 0; k < c; k++)
		{
			uint32_t r = ref->p[lo + k].row;

			refmatched[r >> 5] |= 1u << (r & 31);
		}
	}
	if (mt_mark_matched_cpu(&mm, probe, np / 2, matched, &err) != GH_OK ||
		mt_mark_matched_cpu(&mm, probe + np / 2, np - np / 2, matched, &err) !=
			GH_OK ||
		memcmp(matched, refmatched, sizeof(uint32_t) * (n / 32 + 1)) != 0)
		ok = mt_fail("mark_matched differs from the reference");

done:
	free(mem);
	free(first);
	free(count);
	free(scratch);
	free(seen);
	free(matched);
	free(refmatched);
	return ok;
}

/* Builds a data set, a probe set, and runs check_case for each parameter set. */
static void
run_data(mt_rng *rng, uint32_t n, mt_gen gen, uint32_t param, uint32_t np,
		 int match_pct, int specials, const double *lfs, int nlf,
		 const int *gs, int ng, int both_schemes)
{
	uint64_t *h = (uint64_t *) malloc(sizeof(uint64_t) * (n ? n : 1));
	uint64_t *probe = (uint64_t *) malloc(sizeof(uint64_t) * (np ? np : 1));
	uint32_t *reflo = (uint32_t *) malloc(sizeof(uint32_t) * (np ? np : 1));
	uint32_t *refcnt = (uint32_t *) malloc(sizeof(uint32_t) * (np ? np : 1));
	mt_ref ref;
	uint32_t p;
	int li;
	int gi;
	int s;

	mt_generate(h, n, gen, param, rng);
	mt_ref_build(&ref, h, n);
	mt_make_probe(probe, np, h, n, &ref, match_pct, specials, rng);
	for (p = 0; p < np; p++)
		refcnt[p] = mt_ref_find(&ref, probe[p], &reflo[p]);
	for (li = 0; li < nlf; li++)
		for (gi = 0; gi < ng; gi++)
			for (s = 0; s < (both_schemes ? 2 : 1); s++)
			{
				gh_mm_params prm = { 0 };
				double t0 = mt_now();
				int ok;

				prm.load_factor = lfs[li];
				prm.group_size = gs[gi];
				prm.scheme = s ? GH_PROBE_DOUBLE : GH_PROBE_LINEAR;
				ok = check_case(h, n, &prm, probe, np, &ref, reflo, refcnt);
				mt_result(
					ok,
					"%s(%u) n=%u distinct=%u probes=%u match=%d%%%s lf=%.2f G=%d %s (%.0f ms)",
					mt_gen_name(gen), param, n, ref.ndistinct, np, match_pct,
					specials ? "+special" : "", lfs[li], gs[gi],
					s ? "double" : "linear", 1e3 * (mt_now() - t0));
			}
	mt_ref_free(&ref);
	free(h);
	free(probe);
	free(reflo);
	free(refcnt);
}

/*
 * Grouped input (gh_mm_params.grouped): identity rows and each group's first
 * row as its offset, whatever the multiplicities.
 */
static void
test_grouped(mt_rng *rng)
{
	static const mt_gen gens[] = { MT_RANDOM, MT_MULT, MT_EQUAL, MT_SENTINEL,
								   MT_ONEDUP };
	static const uint32_t params[] = { 0, 7, 0, 0, 0 };
	const uint32_t n = 20000;
	uint64_t *h = malloc(sizeof(uint64_t) * n);
	uint32_t *first = malloc(sizeof(uint32_t) * n);
	uint32_t *count = malloc(sizeof(uint32_t) * n);
	int gi;

	for (gi = 0; gi < 5; gi++)
	{
		gh_mm_params prm = { 0.5, 4, GH_PROBE_DOUBLE, NULL, 1 };
		uint64_t cap;
		void *mem = alloc16(gh_mm_bytes(n, &prm, &cap));
		gh_mm mm;
		gh_error err;
		int ok;

		mt_generate(h, n, gens[gi], params[gi], rng);
		mt_sort_packed(h, n);
		ok = gh_mm_build_cpu(&mm, mem, h, n, &prm, &err) == GH_OK &&
			gh_mm_probe_ranges_cpu(&mm, h, n, first, count, &err) == GH_OK &&
			mt_check_grouped(h, n, gh_mm_rows(&mm), first, count);
		mt_result(ok, "CPU grouped %s n=%u: identity rows, first row of each "
				  "group as its offset", mt_gen_name(gens[gi]), n);
		free(mem);
	}
	free(h);
	free(first);
	free(count);
}

static void
test_errors(mt_rng *rng)
{
	gh_mm mm;
	gh_error err;
	gh_mm_params prm = { 0.5, 4, GH_PROBE_LINEAR, NULL, 0 };
	gh_mm_params bad = { 0 };
	volatile double zero = 0.0;
	uint64_t h[64];
	uint64_t cap;
	uint64_t total;
	uint64_t written;
	void *mem = alloc16(1 << 16);
	uint32_t o[4];
	uint32_t i;
	int ok;
	gh_status st;

	mt_generate(h, 64, MT_RANDOM, 0, rng);

	/* Invalid parameters. */
	ok = 1;
	bad = prm;
	bad.load_factor = 0.0;
	ok &= gh_mm_bytes(10, &bad, &cap) == 0 && cap == 0;
	ok &= gh_mm_build_cpu(&mm, mem, h, 10, &bad, &err) == GH_ERR_INVALID;
	ok &= err.status == GH_ERR_INVALID && err.where != NULL &&
		  err.cuda_code == 0;
	bad.load_factor = 0.951;
	ok &= gh_mm_build_cpu(&mm, mem, h, 10, &bad, &err) == GH_ERR_INVALID;
	bad.load_factor = zero / zero;
	ok &= gh_mm_build_cpu(&mm, mem, h, 10, &bad, &err) == GH_ERR_INVALID;
	bad.load_factor = -0.5;
	ok &= gh_mm_bytes(10, &bad, NULL) == 0;
	bad = prm;
	bad.group_size = 3;
	ok &= gh_mm_bytes(10, &bad, &cap) == 0;
	ok &= gh_mm_build_cpu(&mm, mem, h, 10, &bad, &err) == GH_ERR_INVALID;
	bad.group_size = 64;
	ok &= gh_mm_build_cpu(&mm, mem, h, 10, &bad, &err) == GH_ERR_INVALID;
	bad.group_size = 0;
	ok &= gh_mm_build_cpu(&mm, mem, h, 10, &bad, &err) == GH_ERR_INVALID;
	bad = prm;
	bad.scheme = (gh_probe_scheme) 2;
	ok &= gh_mm_build_cpu(&mm, mem, h, 10, &bad, &err) == GH_ERR_INVALID;
	ok &= gh_mm_build_cpu(&mm, mem, h, 10, NULL, &err) == GH_ERR_INVALID;
	ok &= gh_mm_build_cpu(&mm, NULL, h, 10, &prm, &err) == GH_ERR_INVALID;
	ok &= gh_mm_build_cpu(&mm, (char *) mem + 8, h, 10, &prm, &err) ==
		  GH_ERR_INVALID;
	ok &= gh_mm_build_cpu(&mm, mem, NULL, 10, &prm, &err) == GH_ERR_INVALID;
	ok &= gh_mm_build_cpu(NULL, mem, h, 10, &prm, &err) == GH_ERR_INVALID;
	ok &= gh_mm_bytes(UINT32_MAX, &prm, &cap) == 0;
	/* err may be NULL. */
	ok &= gh_mm_build_cpu(&mm, mem, h, 10, NULL, NULL) == GH_ERR_INVALID;
	if (!ok)
		mt_fail("an invalid build argument was accepted");
	mt_result(ok, "invalid build arguments give GH_ERR_INVALID");

	/* gh_mm_bytes at the edges. */
	ok = gh_mm_bytes(0, &prm, &cap) == gh_total_bytes(4, 0) && cap == 4;
	prm.group_size = 32;
	ok &= gh_mm_bytes(1, &prm, &cap) > 0 && cap == 32;
	prm.group_size = 1;
	ok &= gh_mm_bytes(1, &prm, &cap) > 0 && cap == 2;
	prm.load_factor = 0.95;
	ok &= gh_mm_bytes(19, &prm, &cap) > 0 && cap == 32;
	prm.load_factor = 0.1;
	ok &= gh_mm_bytes(GH_MAX_ROWS, &prm, &cap) > 0 &&
		  cap == ((uint64_t) 1 << 36);
	ok &= gh_total_bytes(8, 3) % 16 == 0 &&
		  gh_total_bytes(8, 3) >= 9 * 16 + 32 + 12;
	if (!ok)
		mt_fail("gh_mm_bytes: capacity %llu", (unsigned long long) cap);
	mt_result(ok, "gh_mm_bytes: capacity rule at the edges");

	/* Probe argument checks on a good table. */
	prm.load_factor = 0.5;
	prm.group_size = 4;
	ok = gh_mm_build_cpu(&mm, mem, h, 64, &prm, &err) == GH_OK;
	ok &= mt_probe_count_cpu(&mm, h, 8, (gh_probe_kind) 9, &total, &err) ==
		  GH_ERR_INVALID;
	ok &= mt_probe_count_cpu(&mm, NULL, 8, GH_JOIN_INNER, &total, &err) ==
		  GH_ERR_INVALID;
	ok &= mt_probe_count_cpu(&mm, h, 8, GH_JOIN_INNER, NULL, &err) ==
		  GH_ERR_INVALID;
	ok &= mt_probe_count_cpu(NULL, h, 8, GH_JOIN_INNER, &total, &err) ==
		  GH_ERR_INVALID;
	ok &= mt_probe_retrieve_cpu(&mm, h, 8, GH_JOIN_INNER, NULL, o, 4, &written,
								&err) == GH_ERR_INVALID;
	ok &= mt_probe_retrieve_cpu(&mm, h, 8, GH_JOIN_INNER, o, o, 4, NULL,
								&err) == GH_ERR_INVALID;
	ok &= gh_mm_probe_ranges_cpu(&mm, h, 8, NULL, o, &err) == GH_ERR_INVALID;
	ok &= mt_mark_matched_cpu(&mm, h, 8, NULL, &err) == GH_ERR_INVALID;
	/* Empty probes are fine with NULL arrays. */
	ok &= mt_probe_count_cpu(&mm, NULL, 0, GH_JOIN_OUTER, &total, &err) ==
			  GH_OK &&
		  total == 0;
	ok &= mt_probe_retrieve_cpu(&mm, NULL, 0, GH_JOIN_ANTI, NULL, NULL, 0,
								&written, &err) == GH_OK &&
		  written == 0;
	ok &= gh_mm_probe_ranges_cpu(&mm, NULL, 0, NULL, NULL, &err) == GH_OK;
	if (!ok)
		mt_fail("an invalid probe argument was accepted");
	mt_result(
		ok, "invalid probe arguments give GH_ERR_INVALID; empty probes pass");

	/* Table full: 64 distinct hashes into 32 slots must stop, not loop. */
	for (i = 0; i < 2; i++)
	{
		prm.scheme = i ? GH_PROBE_DOUBLE : GH_PROBE_LINEAR;
		st = gh_mm_build_cpu_capacity(&mm, mem, h, 64, &prm, 32, &err);
		ok = st == GH_ERR_TABLE_FULL && err.status == GH_ERR_TABLE_FULL &&
			 err.where != NULL;
		if (!ok)
			mt_fail("status %d", (int) st);
		mt_result(ok, "table full gives GH_ERR_TABLE_FULL (%s)",
				  i ? "double" : "linear");
	}

	/* Exactly full: 32 distinct hashes in 32 slots; lookups of absent hashes
	 * must end after visiting every window. */
	for (i = 0; i < 4; i++)
	{
		uint64_t absent[16];
		uint32_t first[16];
		uint32_t count[16];
		uint32_t k;

		prm.scheme = (i & 1) ? GH_PROBE_DOUBLE : GH_PROBE_LINEAR;
		prm.group_size = (i & 2) ? 8 : 1;
		mt_generate(absent, 16, MT_RANDOM, 0, rng);
		st = gh_mm_build_cpu_capacity(&mm, mem, h, 32, &prm, 32, &err);
		ok = st == GH_OK && mm.ndistinct == 32;
		ok = ok && gh_mm_probe_ranges_cpu(&mm, absent, 16, first, count,
										  &err) == GH_OK;
		for (k = 0; k < 16 && ok; k++)
			ok = count[k] == 0;
		ok = ok &&
			 gh_mm_probe_ranges_cpu(&mm, h, 16, first, count, &err) == GH_OK;
		for (k = 0; k < 16 && ok; k++)
			ok = count[k] == 1 && gh_mm_rows(&mm)[first[k]] == k;
		if (!ok)
			mt_fail("status %d", (int) st);
		mt_result(ok,
				  "completely full table: present found, absent end (G=%d %s)",
				  prm.group_size, (i & 1) ? "double" : "linear");
	}
	free(mem);
}

int
main(int argc, char **argv)
{
	static const double lf3[] = { 0.1, 0.5, 0.95 };
	static const double lf1[] = { 0.5 };
	static const double lf7[] = { 0.7 };
	static const double lf95[] = { 0.95 };
	static const double lf_all[] = { 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95 };
	static const uint32_t small[] = { 0, 1, 31, 32, 33, 1000 };
	static const uint32_t mults[] = { 1, 2, 3, 10, 100, 1000 };
	static const int g_few[] = { 1, 4, 32 };
	static const int g_two[] = { 1, 8 };
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0)
							 : (uint64_t) time(NULL);
	mt_rng rng;
	double t0 = mt_now();
	size_t i;

	rng.s = seed;
	printf("# test_multimap_cpu seed %llu (rerun: test_multimap_cpu %llu)\n",
		   (unsigned long long) seed, (unsigned long long) seed);

	test_errors(&rng);
	test_grouped(&rng);

	/* Small sizes, every group size, both schemes, three load factors. */
	for (i = 0; i < sizeof(small) / sizeof(small[0]); i++)
		run_data(&rng, small[i], MT_RANDOM, 0, small[i] + 20, 50, 1, lf3, 3,
				 groups, 6, 1);

	/* Probe sets: empty, no match, every probe matching. */
	run_data(&rng, 1000, MT_MULT, 3, 0, 50, 0, lf1, 1, groups, 6, 1);
	run_data(&rng, 1000, MT_MULT, 3, 2000, 0, 1, lf1, 1, g_few, 3, 1);
	run_data(&rng, 1000, MT_MULT, 3, 2000, 100, 0, lf1, 1, g_few, 3, 1);

	/* Multiplicity 1 to 1000. */
	for (i = 0; i < sizeof(mults) / sizeof(mults[0]); i++)
		run_data(&rng, 10000, MT_MULT, mults[i], 5000, 90, 0, lf1, 1, g_few, 3,
				 1);

	/* Heavy skew, all-equal hashes, sentinel patterns, clustered starts. */
	run_data(&rng, 100000, MT_SKEW, 0, 5000, 80, 1, lf7, 1, g_two, 2, 1);
	run_data(&rng, 1000, MT_EQUAL, 0, 200, 100, 0, lf1, 1, groups, 6, 1);
	run_data(&rng, 100000, MT_EQUAL, 0, 50, 50, 1, lf1, 1, g_few, 3, 1);
	run_data(&rng, 1000, MT_ALLMAX, 0, 300, 50, 1, lf1, 1, g_few, 3, 1);
	run_data(&rng, 20000, MT_SENTINEL, 0, 20000, 50, 1, lf1, 1, groups, 6, 1);
	run_data(&rng, 3000, MT_COLLIDE, 0, 3000, 50, 0, lf95, 1, g_few, 3, 1);
	/* Unique hashes (rows[] the identity), with the sentinel's hash among
	 * them; and all singletons but one pair. */
	run_data(&rng, 5000, MT_UNIQMAX, 0, 5000, 60, 1, lf1, 1, g_few, 3, 1);
	run_data(&rng, 5000, MT_ONEDUP, 0, 5000, 60, 1, lf1, 1, g_few, 3, 1);

	/* Load factors 0.1 .. 0.95. */
	run_data(&rng, 100000, MT_MULT, 2, 50000, 70, 1, lf_all, 8, g_two, 2, 1);

	/* 1e6 rows: a few representative parameter sets. */
	{
		static const double lf5[] = { 0.5 };
		static const double lf9[] = { 0.9 };
		static const int g1[] = { 1 };
		static const int g4[] = { 4 };
		static const int g8[] = { 8 };
		static const int g16[] = { 16 };

		run_data(&rng, 1000000, MT_RANDOM, 0, 1000000, 60, 1, lf5, 1, g1, 1,
				 1);
		run_data(&rng, 1000000, MT_MULT, 4, 500000, 90, 0, lf9, 1, g4, 1, 1);
		run_data(&rng, 1000000, MT_SKEW, 0, 20000, 80, 0, lf95, 1, g8, 1, 0);
		run_data(&rng, 1000000, MT_EQUAL, 0, 20, 50, 0, lf5, 1, g16, 1, 0);
	}

	printf("# total %.1f s\n", mt_now() - t0);
	return mt_finish();
}
