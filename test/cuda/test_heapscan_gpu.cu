/*-------------------------------------------------------------------------
 * test_heapscan_gpu.cu
 *	  Unit test of the device scan's kernel (cuda/heapscan.cu) against its
 *	  CPU twin on the same pages: written pages (hs_test_util.h), whose
 *	  expectations the GPU must meet too, and pages of random bytes, where
 *	  the GPU must write what the twin writes, byte for byte.  TAP output.
 *
 * Usage: test_heapscan_gpu [--quick] [seed]
 *-------------------------------------------------------------------------
 */
#include <cuda_runtime.h>

#include "hs_test_util.h"

#define NPAGES_MAX 64
#define NROWS_MAX (NPAGES_MAX * GH_MAX_ITEMS_PER_PAGE)

static uint8_t h_pages[NPAGES_MAX * GH_BLCKSZ];
static uint32_t h_first[NPAGES_MAX];
static ht_expect expect[NROWS_MAX];
static uint8_t c_status[NROWS_MAX], g_status[NROWS_MAX];
static uint64_t c_words[HT_MAXCOLS][NROWS_MAX], g_words[HT_MAXCOLS][NROWS_MAX];
static uint8_t c_valid[HT_MAXCOLS][NROWS_MAX], g_valid[HT_MAXCOLS][NROWS_MAX];

static void
check_cuda(cudaError_t rc, const char *what)
{
	if (rc != cudaSuccess)
	{
		printf("Bail out! %s: %s\n", what, cudaGetErrorString(rc));
		exit(2);
	}
}

/* device buffers, made once */
static uint8_t *d_pages, *d_status;
static uint32_t *d_first;
static gh_hs_att *d_atts;
static uint64_t *d_words[HT_MAXCOLS];
static uint8_t *d_valid[HT_MAXCOLS];
static uint64_t **d_words_arr;
static uint8_t **d_valid_arr;

static void
setup(void)
{
	check_cuda(cudaMalloc(&d_pages, sizeof(h_pages)), "cudaMalloc");
	check_cuda(cudaMalloc(&d_first, sizeof(h_first)), "cudaMalloc");
	check_cuda(cudaMalloc(&d_status, NROWS_MAX), "cudaMalloc");
	check_cuda(cudaMalloc(&d_atts, sizeof(gh_hs_att) * HT_MAXATTS), "cudaMalloc");
	for (int c = 0; c < HT_MAXCOLS; c++)
	{
		check_cuda(cudaMalloc(&d_words[c], 8 * NROWS_MAX), "cudaMalloc");
		check_cuda(cudaMalloc(&d_valid[c], NROWS_MAX), "cudaMalloc");
	}
	check_cuda(cudaMalloc(&d_words_arr, sizeof(d_words)), "cudaMalloc");
	check_cuda(cudaMalloc(&d_valid_arr, sizeof(d_valid)), "cudaMalloc");
	check_cuda(cudaMemcpy(d_words_arr, d_words, sizeof(d_words), cudaMemcpyHostToDevice), "copy");
	check_cuda(cudaMemcpy(d_valid_arr, d_valid, sizeof(d_valid), cudaMemcpyHostToDevice), "copy");
}

/* runs the twin and the GPU over the batch in h_pages; false if either failed */
static int
run_both(const ht_table *t, uint32_t npages, uint32_t nrows)
{
	uint64_t *cw[HT_MAXCOLS];
	uint8_t *cv[HT_MAXCOLS];
	gh_hs_spec spec = {t->natts, t->ncols, t->atts};
	gh_hs_spec dspec = {t->natts, t->ncols, d_atts};
	gh_hs_out cout, gout;
	gh_error err;

	for (int c = 0; c < HT_MAXCOLS; c++)
	{
		cw[c] = c_words[c];
		cv[c] = c_valid[c];
	}
	cout.status = c_status;
	cout.words = cw;
	cout.valid = cv;
	if (gh_hs_deform_cpu(h_pages, h_first, npages, nrows, &spec, &cout, &err) != GH_OK)
		return mt_fail("the twin failed");
	check_cuda(cudaMemcpy(d_pages, h_pages, (size_t) npages * GH_BLCKSZ, cudaMemcpyHostToDevice), "copy");
	check_cuda(cudaMemcpy(d_first, h_first, sizeof(uint32_t) * npages, cudaMemcpyHostToDevice), "copy");
	check_cuda(cudaMemcpy(d_atts, t->atts, sizeof(gh_hs_att) * HT_MAXATTS, cudaMemcpyHostToDevice), "copy");
	check_cuda(cudaMemset(d_status, 0xee, NROWS_MAX), "memset");
	gout.status = d_status;
	gout.words = d_words_arr;
	gout.valid = d_valid_arr;
	if (gh_hs_deform_gpu(d_pages, d_first, npages, nrows, &dspec, &gout, 0, &err) != GH_OK)
		return mt_fail("the kernel failed: %s", err.cuda_string ? err.cuda_string : "?");
	check_cuda(cudaDeviceSynchronize(), "sync");
	check_cuda(cudaMemcpy(g_status, d_status, nrows, cudaMemcpyDeviceToHost), "copy");
	for (int c = 0; c < t->ncols; c++)
	{
		check_cuda(cudaMemcpy(g_words[c], d_words[c], 8 * (size_t) nrows, cudaMemcpyDeviceToHost), "copy");
		check_cuda(cudaMemcpy(g_valid[c], d_valid[c], nrows, cudaMemcpyDeviceToHost), "copy");
	}
	for (uint32_t i = 0; i < nrows; i++)
	{
		if (g_status[i] != c_status[i])
			return mt_fail("row %u: GPU status %d, twin %d", i, g_status[i], c_status[i]);
		for (int c = 0; c < t->ncols; c++)
		{
			if (g_valid[c][i] != c_valid[c][i])
				return mt_fail("row %u column %d: GPU valid %d, twin %d", i, c, g_valid[c][i], c_valid[c][i]);
			if (c_valid[c][i] && g_words[c][i] != c_words[c][i])
				return mt_fail("row %u column %d: GPU %llx, twin %llx", i, c,
							   (unsigned long long) g_words[c][i], (unsigned long long) c_words[c][i]);
		}
	}
	return 1;
}

int
main(int argc, char **argv)
{
	int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
	const char *seedarg = argc > 1 + quick ? argv[1 + quick] : NULL;
	uint64_t seed = seedarg ? strtoull(seedarg, NULL, 0) : (uint64_t) time(NULL);
	int iters = quick ? 20 : 200;
	mt_rng r;
	int ok = 1;
	uint64_t rows = 0;

	r.s = seed;
	printf("# test_heapscan_gpu seed %llu (rerun: test_heapscan_gpu %llu)\n",
		   (unsigned long long) seed, (unsigned long long) seed);
	setup();
	for (int it = 0; it < iters && ok; it++)
	{
		ht_table t;
		uint32_t npages = 1 + (uint32_t) mt_below(&r, NPAGES_MAX);
		uint32_t nrows;
		uint64_t *gw[HT_MAXCOLS];
		uint8_t *gv[HT_MAXCOLS];

		ht_random_table(&r, &t);
		nrows = ht_random_batch(&r, &t, h_pages, npages, h_first, expect, NROWS_MAX);
		ok = run_both(&t, npages, nrows);
		for (int c = 0; c < HT_MAXCOLS; c++)
		{
			gw[c] = g_words[c];
			gv[c] = g_valid[c];
		}
		ok = ok && ht_check(&t, expect, nrows, g_status, gw, gv);
		rows += nrows;
	}
	mt_result(ok, "written pages: the GPU reads every row slot as the writer wrote it and as the twin reads it (%llu slots)",
			  (unsigned long long) rows);

	ok = 1;
	rows = 0;
	for (int it = 0; it < iters * 5 && ok; it++)
	{
		ht_table t;
		uint32_t npages = 1 + (uint32_t) mt_below(&r, NPAGES_MAX);
		uint32_t nrows = 0;

		ht_random_table(&r, &t);
		for (size_t i = 0; i < (size_t) npages * GH_BLCKSZ; i++)
			h_pages[i] = (uint8_t) mt_next(&r);
		for (uint32_t p = 0; p < npages; p++)
		{
			uint8_t *page = h_pages + (size_t) p * GH_BLCKSZ;

			if (mt_below(&r, 8) != 0)
				ht_put16(page + GH_PAGE_LOWER_OFF,
						 GH_PAGE_HEADER_SIZE + 4 * (uint32_t) mt_below(&r, GH_MAX_ITEMS_PER_PAGE));
			h_first[p] = nrows;
			nrows += gh_hs_nitems_host(page);
		}
		ok = run_both(&t, npages, nrows);
		rows += nrows;
	}
	mt_result(ok, "pages of random bytes: the GPU writes what the twin writes (%llu slots)",
			  (unsigned long long) rows);
	return mt_finish();
}
