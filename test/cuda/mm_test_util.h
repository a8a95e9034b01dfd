/*-------------------------------------------------------------------------
 * mm_test_util.h
 *	  Shared by the multimap unit tests (C99 and CUDA C++): a seeded PRNG,
 *	  hash-set generators (multiplicity, skew, adversarial, sentinel-like
 *	  values), a brute-force reference built by sorting, checks of retrieve
 *	  output against it, and TAP output.
 *
 * The reference never uses the hash table: it sorts (hash, row) pairs and
 * answers "which rows have hash h" by binary search, so a wrong probe
 * sequence or layout in the table cannot hide behind it.
 *-------------------------------------------------------------------------
 */
#ifndef MM_TEST_UTIL_H
#define MM_TEST_UTIL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mm_probes.h"

#define MT_UNUSED __attribute__((unused))

/* ---------------------------------------------------------------- PRNG */
typedef struct mt_rng
{
	uint64_t s;
} mt_rng;

static MT_UNUSED uint64_t
mt_next(mt_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static MT_UNUSED uint64_t
mt_below(mt_rng *r, uint64_t n)
{
	return n ? mt_next(r) % n : 0;
}

static MT_UNUSED double
mt_unit(mt_rng *r)
{
	return (double) (mt_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* ---------------------------------------------------------------- TAP */
static int mt_ntests = 0;
static int mt_nfailed = 0;
static char mt_diag[4096];

/* Records the first failure of the current test, for the "not ok" line. */
static MT_UNUSED int
mt_fail(const char *fmt, ...)
{
	va_list ap;

	if (mt_diag[0] == '\0')
	{
		va_start(ap, fmt);
		vsnprintf(mt_diag, sizeof(mt_diag), fmt, ap);
		va_end(ap);
	}
	return 0;
}

static MT_UNUSED void
mt_result(int ok, const char *fmt, ...)
{
	va_list ap;

	mt_ntests++;
	if (!ok)
		mt_nfailed++;
	printf("%s %d - ", ok ? "ok" : "not ok", mt_ntests);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!ok)
		printf("# %s\n", mt_diag[0] ? mt_diag : "(no detail)");
	mt_diag[0] = '\0';
	fflush(stdout);
}

static MT_UNUSED int
mt_finish(void)
{
	printf("1..%d\n", mt_ntests);
	if (mt_nfailed)
		printf("# %d of %d tests failed\n", mt_nfailed, mt_ntests);
	return mt_nfailed ? 1 : 0;
}

static MT_UNUSED double
mt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

/* ---------------------------------------------------------------- generators */
typedef enum mt_gen
{
	MT_RANDOM,	 /* distinct random hashes */
	MT_MULT,	 /* each of n/param hashes param times, shuffled */
	MT_SKEW,	 /* Zipf-like: a few hashes own most rows */
	MT_EQUAL,	 /* every row the same hash */
	MT_ALLMAX,	 /* every row GH_EMPTY_HASH: all in the sentinel slot */
	MT_SENTINEL, /* sentinel-like bit patterns mixed with random hashes */
	MT_COLLIDE,	 /* distinct hashes that all start in window 0 */
	MT_UNIQMAX,	 /* distinct hashes, one of them GH_EMPTY_HASH (sentinel) */
	MT_ONEDUP	 /* distinct hashes but for one hash on two rows */
} mt_gen;

static MT_UNUSED const char *
mt_gen_name(mt_gen g)
{
	switch (g)
	{
		case MT_RANDOM:
			return "random";
		case MT_MULT:
			return "mult";
		case MT_SKEW:
			return "skew";
		case MT_EQUAL:
			return "equal";
		case MT_ALLMAX:
			return "allmax";
		case MT_SENTINEL:
			return "sentinel";
		case MT_COLLIDE:
			return "collide";
		case MT_UNIQMAX:
			return "uniqmax";
		case MT_ONEDUP:
			return "onedup";
	}
	return "?";
}

static const uint64_t mt_special[] = {
	UINT64_MAX,
	0,
	UINT64_MAX - 1,
	0x8000000000000000ULL,
	0x7fffffffffffffffULL,
	0xffffffffULL,
	0xffffffff00000000ULL,
	1,
	0xfffffffffffffffeULL >> 1,
};
#define MT_NSPECIAL (sizeof(mt_special) / sizeof(mt_special[0]))

static uint64_t
mt_inv_odd(uint64_t c)
{
	uint64_t x = c;
	int i;

	for (i = 0; i < 6; i++)
		x *= 2 - c * x;
	return x;
}

/* Inverse of gh_mix64, to make hashes with chosen start windows. */
static MT_UNUSED uint64_t
mt_unmix64(uint64_t h)
{
	h ^= h >> 33;
	h *= mt_inv_odd(0xc4ceb9fe1a85ec53ULL);
	h ^= h >> 33;
	h *= mt_inv_odd(0xff51afd7ed558ccdULL);
	h ^= h >> 33;
	return h;
}

/* A random hash that is none of the special values. */
static uint64_t
mt_plain(mt_rng *r)
{
	for (;;)
	{
		uint64_t h = mt_next(r);
		size_t i;
		int special = 0;

		for (i = 0; i < MT_NSPECIAL; i++)
			special |= h == mt_special[i];
		if (!special)
			return h;
	}
}

static MT_UNUSED void
mt_generate(uint64_t *h, uint32_t n, mt_gen gen, uint32_t param, mt_rng *r)
{
	uint32_t i;

	switch (gen)
	{
		case MT_RANDOM:
			for (i = 0; i < n; i++)
				h[i] = mt_plain(r);
			break;
		case MT_MULT:
		{
			uint32_t m = param ? param : 1;

			for (i = 0; i < n; i++)
				h[i] = mt_plain(r);
			/* Downwards, so h[i / m] is still one of the distinct ones. */
			for (i = n; i-- > 0;)
				h[i] = h[i / m];
			/* Shuffle, so equal hashes are not neighbours. */
			for (i = n; i > 1; i--)
			{
				uint32_t j = (uint32_t) mt_below(r, i);
				uint64_t t = h[i - 1];

				h[i - 1] = h[j];
				h[j] = t;
			}
			break;
		}
		case MT_SKEW:
		{
			uint32_t d = n / 2 + 1;
			uint64_t salt = mt_next(r);

			/* P(key < x) = (x/d)^(1/3): the top key owns ~n/d^(1/3) rows. */
			for (i = 0; i < n; i++)
			{
				double u = mt_unit(r);
				uint32_t k = (uint32_t) ((double) d * u * u * u);

				h[i] = gh_mix64(k ^ salt);
			}
			break;
		}
		case MT_EQUAL:
		{
			uint64_t v = mt_plain(r);

			for (i = 0; i < n; i++)
				h[i] = v;
			break;
		}
		case MT_ALLMAX:
			for (i = 0; i < n; i++)
				h[i] = UINT64_MAX;
			break;
		case MT_SENTINEL:
			/* A quarter of the rows special in small sets; fewer in big
			 * ones, so special groups stay ~1000 rows and outputs small. */
			for (i = 0; i < n; i++)
			{
				uint64_t k = mt_below(r, n < 40000 ? 4 : n / 10000);

				h[i] = k == 0 ? mt_special[mt_below(r, MT_NSPECIAL)]
							  : (k == 1 && i > 0 ? h[mt_below(r, i)]
												 : mt_plain(r));
			}
			break;
		case MT_COLLIDE:
			/* Mixed values with 24 zero low bits: one start window for any
			 * table up to 2^24 windows; the high bits make them distinct. */
			for (i = 0; i < n; i++)
				h[i] = mt_unmix64(((uint64_t) (i + 1) << 24) ^
								  (mt_next(r) & 0xffffff0000000000ULL));
			break;
		case MT_UNIQMAX:
		case MT_ONEDUP:
			/* Random 64-bit values: a repeat among 1e7 has odds ~3e-6. */
			for (i = 0; i < n; i++)
				h[i] = mt_plain(r);
			if (gen == MT_UNIQMAX && n > 0)
				h[mt_below(r, n)] = UINT64_MAX;
			if (gen == MT_ONEDUP && n > 1)
			{
				uint32_t a = (uint32_t) mt_below(r, n);
				uint32_t b = (uint32_t) mt_below(r, n - 1);

				h[b >= a ? b + 1 : b] = h[a];
			}
			break;
	}
}

/* ---------------------------------------------------------------- reference */
typedef struct mt_pair
{
	uint64_t h;
	uint32_t row;
} mt_pair;

typedef struct mt_ref
{
	mt_pair *p; /* sorted by (h, row) */
	uint32_t n;
	uint32_t ndistinct;
} mt_ref;

static int
mt_pair_cmp(const void *a, const void *b)
{
	const mt_pair *x = (const mt_pair *) a;
	const mt_pair *y = (const mt_pair *) b;

	if (x->h != y->h)
		return x->h < y->h ? -1 : 1;
	return x->row < y->row ? -1 : x->row > y->row;
}

static MT_UNUSED void
mt_ref_build(mt_ref *ref, const uint64_t *h, uint32_t n)
{
	uint32_t i;

	ref->p = (mt_pair *) malloc(sizeof(mt_pair) * (n ? n : 1));
	ref->n = n;
	for (i = 0; i < n; i++)
	{
		ref->p[i].h = h[i];
		ref->p[i].row = i;
	}
	qsort(ref->p, n, sizeof(mt_pair), mt_pair_cmp);
	ref->ndistinct = 0;
	for (i = 0; i < n; i++)
		ref->ndistinct += i == 0 || ref->p[i].h != ref->p[i - 1].h;
}

static MT_UNUSED void
mt_ref_free(mt_ref *ref)
{
	free(ref->p);
	ref->p = NULL;
}

/* Rows with hash h are ref->p[*lo .. *lo + return). */
static MT_UNUSED uint32_t
mt_ref_find(const mt_ref *ref, uint64_t h, uint32_t *lo)
{
	uint32_t a = 0;
	uint32_t b = ref->n;
	uint32_t e;

	while (a < b)
	{
		uint32_t m = a + (b - a) / 2;

		if (ref->p[m].h < h)
			a = m + 1;
		else
			b = m;
	}
	*lo = a;
	e = a;
	while (e < ref->n && ref->p[e].h == h)
		e++;
	return e - a;
}

/*
 * Probe hashes: match_pct percent drawn from the build hashes, the rest
 * random hashes absent from the build (with special values among them when
 * specials is set).
 */
static MT_UNUSED void
mt_make_probe(uint64_t *out, uint32_t nprobe, const uint64_t *build,
			  uint32_t nbuild, const mt_ref *ref, int match_pct, int specials,
			  mt_rng *r)
{
	uint32_t i;

	for (i = 0; i < nprobe; i++)
	{
		if (nbuild > 0 && (int) mt_below(r, 100) < match_pct)
			out[i] = build[mt_below(r, nbuild)];
		else
		{
			for (;;)
			{
				uint32_t lo;
				uint64_t h = specials && mt_below(r, 8) == 0
								 ? mt_special[mt_below(r, MT_NSPECIAL)]
								 : mt_next(r);

				if (mt_ref_find(ref, h, &lo) == 0)
				{
					out[i] = h;
					break;
				}
			}
		}
	}
}

/*
 * Checks pairs (outer[i], inner[i]), i < n, against the reference for this
 * kind, without sorting: every outer row must appear in exactly one
 * contiguous run, of gh_out_count(kind, c) pairs where c is the reference's
 * candidate count; each inner row must be a distinct row with the probe's
 * hash (GH_NO_ROW when c == 0).  With the counts equal this is equality of
 * the pair sets (for SEMI: one valid candidate per matching outer row).
 * stamp: nrows scratch words, seen: nprobe scratch bytes.
 */
static MT_UNUSED int
mt_check_pairs(gh_probe_kind kind, const uint64_t *build, uint32_t nbuild,
			   const uint64_t *probe, uint32_t nprobe,
			   const uint32_t *refcount, const uint32_t *outer,
			   const uint32_t *inner, uint64_t n, uint32_t *stamp,
			   unsigned char *seen)
{
	uint64_t i = 0;
	uint64_t expect = 0;
	uint32_t p;

	for (p = 0; p < nprobe; p++)
		expect += gh_out_count(kind, refcount[p]);
	if (n != expect)
		return mt_fail("kind %d: %llu pairs, expected %llu", (int) kind,
					   (unsigned long long) n, (unsigned long long) expect);
	memset(seen, 0, nprobe);
	memset(stamp, 0, sizeof(uint32_t) * (nbuild ? nbuild : 1));
	while (i < n)
	{
		uint32_t o = outer[i];
		uint64_t len;
		uint64_t k;

		if (o >= nprobe)
			return mt_fail("kind %d: pair %llu has outer row %u >= %u",
						   (int) kind, (unsigned long long) i, o, nprobe);
		if (seen[o])
			return mt_fail("kind %d: outer row %u not contiguous", (int) kind,
						   o);
		seen[o] = 1;
		len = gh_out_count(kind, refcount[o]);
		if (len == 0)
			return mt_fail("kind %d: outer row %u should have no pair",
						   (int) kind, o);
		for (k = 0; k < len; k++, i++)
		{
			uint32_t r = inner[i];

			if (i >= n || outer[i] != o)
				return mt_fail(
					"kind %d: outer row %u has %llu pairs, expected %llu",
					(int) kind, o, (unsigned long long) k,
					(unsigned long long) len);
			if (refcount[o] == 0)
			{
				if (r != GH_NO_ROW)
					return mt_fail(
						"kind %d: outer %u has no candidate but got inner %u",
						(int) kind, o, r);
				continue;
			}
			if (r >= nbuild || build[r] != probe[o])
				return mt_fail("kind %d: pair (%u, %u) is not a candidate",
							   (int) kind, o, r);
			if (stamp[r] == o + 1)
				return mt_fail("kind %d: pair (%u, %u) repeated", (int) kind,
							   o, r);
			stamp[r] = o + 1;
		}
	}
	return 1;
}

/*
 * With every hash distinct, both builders must give the same layout: the
 * group of row i is rows[i, i+1) (gh_layout.h).  ndistinct: the reference's.
 */
static MT_UNUSED int
mt_check_unique_layout(const uint32_t *rows, uint32_t n, uint32_t ndistinct)
{
	uint32_t i;

	if (ndistinct != n)
		return 1;
	for (i = 0; i < n; i++)
		if (rows[i] != i)
			return mt_fail(
				"every hash distinct, but rows[%u] = %u (not the identity)", i,
				rows[i]);
	return 1;
}

/* Rows array of a table: a permutation of 0..n-1?  mark: n/32+1 words. */
static MT_UNUSED int
mt_check_permutation(const uint32_t *rows, uint32_t n, uint32_t *mark)
{
	uint32_t i;

	memset(mark, 0, sizeof(uint32_t) * (n / 32 + 1));
	for (i = 0; i < n; i++)
	{
		uint32_t r = rows[i];

		if (r >= n)
			return mt_fail("rows[%u] = %u out of range", i, r);
		if (mark[r >> 5] & (1u << (r & 31)))
			return mt_fail("row %u appears twice in the row array", r);
		mark[r >> 5] |= 1u << (r & 31);
	}
	return 1;
}

static int
mt_u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *) a;
	uint64_t y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

/* Sorts pairs packed as outer << 32 | inner. */
static MT_UNUSED void
mt_sort_packed(uint64_t *v, uint64_t n)
{
	qsort(v, n, sizeof(uint64_t), mt_u64_cmp);
}

/*
 * mt_check_grouped checks a table built from grouped input h[0..n) (equal
 * hashes adjacent) and probed with h itself: rows[] must be the identity
 * and row i's range the run of h[i] (its first row, its length).
 */
static MT_UNUSED int
mt_check_grouped(const uint64_t *h, uint32_t n, const uint32_t *rows,
				 const uint32_t *first, const uint32_t *count)
{
	uint32_t start = 0;
	uint32_t i;

	for (i = 0; i < n; i++)
	{
		uint32_t end = start;

		if (rows[i] != i)
			return mt_fail("rows[%u] = %u, not the identity", i, rows[i]);
		if (i > 0 && h[i] != h[i - 1])
			start = i;
		end = start;
		while (end < n && h[end] == h[start])
			end++;
		if (first[i] != start || count[i] != end - start)
			return mt_fail("row %u: range (%u,%u), want (%u,%u)", i, first[i],
						   count[i], start, end - start);
	}
	return 1;
}

static MT_UNUSED int
mt_is_pow2(uint64_t x)
{
	return x != 0 && (x & (x - 1)) == 0;
}

#endif /* MM_TEST_UTIL_H */
