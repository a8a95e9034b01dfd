/*-------------------------------------------------------------------------
 * devexpr.cu
 *	  GPU kernel of the device expressions (gh_devexpr.h): one program run
 *	  over every row of a batch.
 *
 * One thread a row, in a grid-stride loop, runs the interpreter that the CPU
 * twin (devexpr_cpu.c) runs too (devexpr_interp.h).  Rows the device cannot
 * compute exactly are appended to host_rows through one atomic counter:
 * they are rare (an overflow, a host-held input), so the counter is not
 * contended.
 *
 * No PostgreSQL headers here.
 *-------------------------------------------------------------------------
 */
#include <cuda_runtime.h>

#include "devexpr_interp.h"
#include "gh_error.h"

namespace {

constexpr int kThreads = 256;

/* The grid for n rows: one thread each, at most 2^20 rows per pass. */
inline unsigned
grid_for(uint32_t n)
{
	uint32_t rows = n < 1048576 ? n : 1048576;
	uint32_t b = (rows + kThreads - 1) / kThreads;

	return b == 0 ? 1 : b;
}

/* expr_kernel: gh_expr_eval over every row (gh_expr_eval_gpu). */
__global__ void
expr_kernel(gh_expr e, uint32_t n, int64_t *out, uint8_t *out_valid,
			uint32_t *host_rows, uint32_t *nhost)
{
	for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
		 i += gridDim.x * blockDim.x)
	{
		int64_t v = 0;
		int r = gh_expr_eval(&e, i, &v);

		out[i] = v;
		out_valid[i] = r == GH_EXPR_OK;
		if (r == GH_EXPR_HOST)
			host_rows[atomicAdd(nhost, 1u)] = i;
	}
}

} // namespace

extern "C" gh_status
gh_expr_eval_gpu(const gh_expr *e, uint32_t n, int64_t *out,
				 uint8_t *out_valid, uint32_t *host_rows, uint32_t *nhost,
				 void *stream, gh_error *err)
{
	cudaStream_t s = (cudaStream_t) stream;

	GH_CUDA_TRY(cudaMemsetAsync(nhost, 0, sizeof(uint32_t), s),
				"cudaMemsetAsync");
	if (n == 0)
		return GH_OK;
	expr_kernel<<<grid_for(n), kThreads, 0, s>>>(*e, n, out, out_valid,
												 host_rows, nhost);
	GH_CUDA_LAUNCHED("expr_kernel");
	return GH_OK;
}
