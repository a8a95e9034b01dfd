/*-------------------------------------------------------------------------
 * heapscan.cu
 *	  The device scan's kernel (gh_heapscan.h): a batch of staged heap pages
 *	  deformed into columns.
 *
 * One warp a page: its lanes take the page's line pointers 32 at a time, so
 * that the tuples of a page, which lie together, are read by neighbouring
 * threads.  Each thread reads its tuple with the code the CPU twin runs
 * (heapscan_deform.h).  The host has numbered the row slots (first[]), so
 * the kernel needs no count or scan of its own.
 *
 * No PostgreSQL headers here.
 *-------------------------------------------------------------------------
 */
#include <cuda_runtime.h>

#include "heapscan_deform.h"
#include "gh_error.h"

namespace {

constexpr int kWarpsPerBlock = 8;

__global__ void
deform_kernel(const uint8_t *pages, const uint32_t *first, uint32_t npages,
			  uint32_t nrows, gh_hs_spec spec, gh_hs_out out)
{
	uint32_t	lane = threadIdx.x & 31;
	uint32_t	warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	uint32_t	nwarps = (gridDim.x * blockDim.x) >> 5;

	for (uint32_t p = warp; p < npages; p += nwarps)
	{
		const uint8_t *page = pages + (size_t) p * GH_BLCKSZ;
		uint32_t	start = first[p];
		uint32_t	end = p + 1 < npages ? first[p + 1] : nrows;
		uint32_t	nitems = gh_hs_nitems(page);

		if (end < start || end > nrows)
			continue;			/* the host checked first[]: never */
		for (uint32_t i = 1 + lane; start + i - 1 < end; i += 32)
		{
			uint32_t	row = start + i - 1;

			if (i <= nitems)
				gh_hs_deform_one(page, p * GH_BLCKSZ, i, &spec, &out, row);
			else
			{
				out.status[row] = GH_HS_NONE;
				for (int c = 0; c < spec.ncols; c++)
					out.valid[c][row] = 0;
			}
		}
	}
}

} // namespace

extern "C" gh_status
gh_hs_deform_gpu(const uint8_t *pages, const uint32_t *first,
				 uint32_t npages, uint32_t nrows, const gh_hs_spec *spec,
				 const gh_hs_out *out, void *stream, gh_error *err)
{
	cudaStream_t s = (cudaStream_t) stream;
	uint32_t	blocks;

	if (spec == NULL || out == NULL || spec->natts < 0 || spec->ncols < 0 ||
		npages > UINT32_MAX / GH_BLCKSZ)
		return gh_error_set(err, GH_ERR_INVALID, "gh_hs_deform_gpu");
	if (npages == 0)
		return gh_error_set(err, GH_OK, NULL);
	blocks = (npages + kWarpsPerBlock - 1) / kWarpsPerBlock;
	if (blocks > 65536)
		blocks = 65536;
	deform_kernel<<<blocks, kWarpsPerBlock * 32, 0, s>>>(pages, first, npages,
														 nrows, *spec, *out);
	GH_CUDA_LAUNCHED("deform_kernel");
	return gh_error_set(err, GH_OK, NULL);
}
