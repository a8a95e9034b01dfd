/*-------------------------------------------------------------------------
 * devexpr_cpu.c
 *	  CPU twin of cuda/devexpr.cu: device expression programs (gh_devexpr.h)
 *	  run row by row on the host.
 *
 * The twin runs the interpreter the GPU kernel runs (devexpr_interp.h), in
 * row order, so gpuhash.device = cpu computes every value and lists every
 * host row exactly as a GPU does; only the order of host_rows differs.
 * gh_expr_eval_rows_cpu serves the host with or without nvcc: it runs a
 * program over a few listed rows of host arrays (rows the host took back
 * from the device).  Plain C, no PostgreSQL headers.
 *-------------------------------------------------------------------------
 */
#include "devexpr_interp.h"
#include "gh_error.h"

gh_status
gh_expr_eval_cpu(const gh_expr *e, uint32_t n, int64_t *out,
				 uint8_t *out_valid, uint32_t *host_rows, uint32_t *nhost,
				 gh_error *err)
{
	uint32_t nh = 0;

	(void) err;
	for (uint32_t i = 0; i < n; i++)
	{
		int64_t v = 0;
		int r = gh_expr_eval(e, i, &v);

		out[i] = v;
		out_valid[i] = r == GH_EXPR_OK;
		if (r == GH_EXPR_HOST)
			host_rows[nh++] = i;
	}
	*nhost = nh;
	return GH_OK;
}

gh_status
gh_expr_eval_rows_cpu(const gh_expr *e, const uint32_t *rows, uint32_t nrows,
					  int64_t *out, uint8_t *out_valid, gh_error *err)
{
	(void) err;
	for (uint32_t j = 0; j < nrows; j++)
	{
		uint32_t i = rows[j];
		int64_t v = 0;

		out_valid[i] = gh_expr_eval(e, i, &v) == GH_EXPR_OK;
		out[i] = v;
	}
	return GH_OK;
}
