/*-------------------------------------------------------------------------
 * nocuda.c
 *	  Stand-ins for the CUDA side when the library is built without nvcc.
 *
 * The Makefile compiles this file instead of the .cu files when no CUDA toolkit
 * is found, so that gpuhash still builds, installs and runs its CPU twin.
 * Every GPU entry point reports GH_ERR_NO_CUDA_BUILD, after clearing the
 * pointer or count it would have returned; the context prewarm starts
 * nothing.  The stubs are generated from one list, in the order of
 * gpuhash_cuda.h, gh_aggregate.h and gh_devexpr.h, so that they stay in
 * step with the headers: a stub whose parameters differ from its
 * declaration does not compile.
 *-------------------------------------------------------------------------
 */
#include "gh_aggregate.h"
#include "gh_devexpr.h"
#include "gh_error.h"
#include "gh_heapscan.h"
#include "gpuhash_cuda.h"

/*
 * NOCUDA_STUB(name, params) defines GPU entry point name, whose parameter
 * list params ends with gh_error *err, as a function that reports
 * GH_ERR_NO_CUDA_BUILD.  NOCUDA_STUB_OUT first sets the output *out to none.
 */
#define NOCUDA_STUB(name, params)                              \
	gh_status name params                                      \
	{                                                          \
		return gh_error_set(err, GH_ERR_NO_CUDA_BUILD, #name); \
	}

#define NOCUDA_STUB_OUT(name, params, out, none)               \
	gh_status name params                                      \
	{                                                          \
		*(out) = (none);                                       \
		return gh_error_set(err, GH_ERR_NO_CUDA_BUILD, #name); \
	}

/* Devices, context, memory, streams (gpuhash_cuda.h) */
NOCUDA_STUB_OUT(gh_cuda_device_count, (int ordinal, int *count, gh_error *err), count, 0)
NOCUDA_STUB(gh_cuda_device_info,
			(int ordinal, gh_device_info *info, gh_error *err))
NOCUDA_STUB(gh_cuda_context_init, (int ordinal, gh_error *err))

int
gh_cuda_context_prewarm(int ordinal)
{
	return 0;
}

void
gh_cuda_context_prewarm_wait(void)
{}

int
gh_cuda_context_prewarm_busy(void)
{
	return 0;
}

NOCUDA_STUB_OUT(gh_cuda_malloc, (void **ptr, size_t bytes, gh_error *err), ptr,
				NULL)
NOCUDA_STUB(gh_cuda_free, (void *ptr, gh_error *err))
NOCUDA_STUB_OUT(gh_cuda_host_alloc, (void **ptr, size_t bytes, gh_error *err),
				ptr, NULL)
NOCUDA_STUB(gh_cuda_host_free, (void *ptr, gh_error *err))
NOCUDA_STUB(gh_cuda_host_register, (void *ptr, size_t bytes, gh_error *err))
NOCUDA_STUB(gh_cuda_host_unregister, (void *ptr, gh_error *err))
NOCUDA_STUB_OUT(gh_cuda_stream_create, (void **stream, gh_error *err), stream,
				NULL)
NOCUDA_STUB(gh_cuda_stream_sync, (void *stream, gh_error *err))
NOCUDA_STUB(gh_cuda_memcpy_htod, (void *dst, const void *src, size_t bytes,
								  void *stream, gh_error *err))
NOCUDA_STUB(gh_cuda_memcpy_dtoh, (void *dst, const void *src, size_t bytes,
								  void *stream, gh_error *err))

/* The multimap's GPU functions (gpuhash_cuda.h) */
NOCUDA_STUB(gh_mm_build_gpu,
			(gh_mm * mm, void *mem, const uint64_t *d_hashes, uint32_t nrows,
			 const gh_mm_params *params, void *stream, gh_error *err))
NOCUDA_STUB(gh_mm_probe_ranges_gpu,
			(const gh_mm *mm, const uint64_t *d_probe, uint32_t nprobe,
			 uint32_t *d_first, uint32_t *d_count, void *stream,
			 gh_error *err))

/* gpuhash_aggregate's GPU functions (gh_aggregate.h) */
NOCUDA_STUB(gh_agg_table_init_gpu,
			(void *mem, uint64_t capacity, void *stream, gh_error *err))
NOCUDA_STUB(gh_agg_table_rehash_gpu,
			(const void *old_mem, uint64_t old_cap, void *new_mem,
			 uint64_t new_cap, void *stream, gh_error *err))
NOCUDA_STUB(gh_agg_assign_gpu,
			(void *mem, uint64_t capacity, const uint64_t *hashes, uint32_t n,
			 uint32_t *ids, void *stream, gh_error *err))
NOCUDA_STUB(gh_agg_assign_exact_gpu,
			(void *mem, uint64_t capacity, void *acc, const gh_agg_layout *l,
			 const gh_agg_keys *k, uint32_t n, uint32_t *ids,
			 uint32_t *scratch, uint32_t *bad, void *stream, gh_error *err))
NOCUDA_STUB(gh_agg_key_from_col_gpu,
			(const int64_t *vals, const uint8_t *valid, uint32_t n, int year_len,
			 uint8_t bit, uint64_t *keys, uint8_t *nullmask, void *stream,
			 gh_error *err))
NOCUDA_STUB(gh_agg_skip_gpu, (uint32_t * ids, const uint32_t *rows,
							  uint32_t nrows, void *stream, gh_error *err))
NOCUDA_STUB(gh_agg_acc_init_gpu,
			(void *acc, const gh_agg_layout *l, uint64_t from, uint64_t to,
			 void *stream, gh_error *err))
NOCUDA_STUB(gh_agg_acc_move_gpu,
			(void *dst, const gh_agg_layout *dl, const void *src,
			 const gh_agg_layout *sl, uint64_t ngroups, void *stream,
			 gh_error *err))
NOCUDA_STUB(gh_agg_accumulate_gpu,
			(void *acc, const gh_agg_layout *l, uint64_t ngroups,
			 const gh_agg_batch *b, void *stream, gh_error *err))
NOCUDA_STUB(gh_hs_deform_gpu,
			(const uint8_t *pages, const uint32_t *first, uint32_t npages,
			 uint32_t nrows, const gh_hs_spec *spec, const gh_hs_out *out,
			 void *stream, gh_error *err))
NOCUDA_STUB(gh_expr_eval_gpu,
			(const gh_expr *e, uint32_t n, int64_t *out,
			 uint8_t *out_valid, uint32_t *host_rows, uint32_t *nhost,
			 void *stream, gh_error *err))
