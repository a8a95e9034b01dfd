/*-------------------------------------------------------------------------
 * test_heapscan_cpu.c
 *	  CI unit test of the device scan's CPU twin (cuda/heapscan_cpu.c, which
 *	  runs cuda/heapscan_deform.h) against heap pages written by the test
 *	  itself (hs_test_util.h); TAP output.
 *
 * Usage: test_heapscan_cpu [seed]   (default: seed from the clock, printed)
 *
 * Random row types (by value of 1 to 8 bytes, fixed length by reference,
 * varlena of any alignment, some attributes read, some not), random tuples
 * (NULLs, every varlena form, rows older than some columns, with and
 * without defaults for them) and line pointers that hold no tuple: every
 * row slot's status and columns are the writer's.  Then pages of random
 * bytes: the twin must stay inside the batch (every value it reports lies
 * in the pages) and never fail.  test_heapscan_gpu.cu holds the GPU to the
 * twin on the same pages.
 *-------------------------------------------------------------------------
 */
#include "hs_test_util.h"

#define NPAGES_MAX 8
#define NROWS_MAX (NPAGES_MAX * GH_MAX_ITEMS_PER_PAGE)

static uint8_t pages[NPAGES_MAX * GH_BLCKSZ];
static uint32_t first[NPAGES_MAX];
static ht_expect expect[NROWS_MAX];
static uint8_t status[NROWS_MAX];
static uint64_t wordbuf[HT_MAXCOLS][NROWS_MAX];
static uint8_t validbuf[HT_MAXCOLS][NROWS_MAX];

static gh_status
run(const ht_table *t, uint32_t npages, uint32_t nrows)
{
	uint64_t *words[HT_MAXCOLS];
	uint8_t *valid[HT_MAXCOLS];
	gh_hs_spec spec = {t->natts, t->ncols, t->atts};
	gh_hs_out out;
	gh_error err;

	for (int c = 0; c < HT_MAXCOLS; c++)
	{
		words[c] = wordbuf[c];
		valid[c] = validbuf[c];
	}
	memset(status, 0xee, sizeof(status));
	out.status = status;
	out.words = words;
	out.valid = valid;
	return gh_hs_deform_cpu(pages, first, npages, nrows, &spec, &out, &err);
}

static void
test_written(mt_rng *r)
{
	int ok = 1;
	uint64_t rows = 0, host = 0, none = 0;

	for (int it = 0; it < 300 && ok; it++)
	{
		ht_table t;
		uint32_t npages = 1 + (uint32_t) mt_below(r, NPAGES_MAX);
		uint32_t nrows;
		uint64_t *words[HT_MAXCOLS];
		uint8_t *valid[HT_MAXCOLS];

		ht_random_table(r, &t);
		nrows = ht_random_batch(r, &t, pages, npages, first, expect, NROWS_MAX);
		if (run(&t, npages, nrows) != GH_OK)
			ok = mt_fail("iteration %d: the twin failed", it);
		for (int c = 0; c < HT_MAXCOLS; c++)
		{
			words[c] = wordbuf[c];
			valid[c] = validbuf[c];
		}
		if (ok)
			ok = ht_check(&t, expect, nrows, status, words, valid);
		for (uint32_t i = 0; i < nrows; i++)
		{
			rows += expect[i].status == GH_HS_ROW;
			host += expect[i].status == GH_HS_HOST;
			none += expect[i].status == GH_HS_NONE;
		}
	}
	ok = ok && rows > 0 && host > 0 && none > 0;
	mt_result(ok, "written pages: every row slot's status and columns are the writer's (%llu rows, %llu for the host, %llu without a tuple)",
			  (unsigned long long) rows, (unsigned long long) host, (unsigned long long) none);
}

static void
test_garbage(mt_rng *r)
{
	int ok = 1;
	uint64_t rows = 0;

	for (int it = 0; it < 2000 && ok; it++)
	{
		ht_table t;
		uint32_t npages = 1 + (uint32_t) mt_below(r, NPAGES_MAX);
		uint32_t nrows = 0;

		ht_random_table(r, &t);
		for (size_t i = 0; i < (size_t) npages * GH_BLCKSZ; i++)
			pages[i] = (uint8_t) mt_next(r);
		for (uint32_t p = 0; p < npages; p++)
		{
			uint8_t *page = pages + (size_t) p * GH_BLCKSZ;
			uint32_t n = (uint32_t) mt_below(r, 300);

			/* a sane pd_lower mostly, sometimes not */
			if (mt_below(r, 8) != 0)
				ht_put16(page + GH_PAGE_LOWER_OFF, GH_PAGE_HEADER_SIZE + 4 * (n % GH_MAX_ITEMS_PER_PAGE));
			first[p] = nrows;
			nrows += gh_hs_nitems_host(page);
		}
		if (run(&t, npages, nrows) != GH_OK)
		{
			ok = mt_fail("iteration %d: the twin failed", it);
			break;
		}
		for (uint32_t i = 0; i < nrows && ok; i++)
		{
			if (status[i] > GH_HS_HOST)
				ok = mt_fail("row %u: status %d", i, status[i]);
			if (status[i] != GH_HS_ROW)
				continue;
			rows++;
			for (int a = 0; a < t.natts; a++)
			{
				int c = t.atts[a].out;
				uint64_t w = wordbuf[c < 0 ? 0 : c][i];

				if (c < 0 || !validbuf[c][i] || t.atts[a].byval)
					continue;
				if ((w & 0xFFFFFFFFu) + (w >> 32) > (uint64_t) npages * GH_BLCKSZ)
					ok = mt_fail("row %u column %d: %llu bytes at %llu, past the batch", i, c,
								 (unsigned long long) (w >> 32), (unsigned long long) (w & 0xFFFFFFFFu));
			}
		}
	}
	mt_result(ok, "pages of random bytes: the twin never fails and every value it reports lies in the batch (%llu rows read)",
			  (unsigned long long) rows);
}

static void
test_args(void)
{
	ht_table t;
	mt_rng r = {7};
	gh_hs_spec spec;
	gh_hs_out out = {status, NULL, NULL};
	gh_error err;
	int ok;

	ht_random_table(&r, &t);
	spec.natts = t.natts;
	spec.ncols = -1;
	spec.atts = t.atts;
	ok = gh_hs_deform_cpu(pages, first, 0, 0, &spec, &out, &err) == GH_ERR_INVALID;
	spec.ncols = 0;
	ok = ok && gh_hs_deform_cpu(pages, first, 0, 0, &spec, &out, &err) == GH_OK;
	/* first[] that do not fit nrows */
	ht_page_init(pages);
	first[0] = 5;
	ok = ok && gh_hs_deform_cpu(pages, first, 1, 2, &spec, &out, &err) == GH_ERR_INVALID;
	mt_result(ok, "bad arguments are GH_ERR_INVALID; an empty batch is GH_OK");
}

int
main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : (uint64_t) time(NULL);
	mt_rng rng;

	rng.s = seed;
	printf("# test_heapscan_cpu seed %llu (rerun: test_heapscan_cpu %llu)\n",
		   (unsigned long long) seed, (unsigned long long) seed);
	test_written(&rng);
	test_garbage(&rng);
	test_args();
	return mt_finish();
}
