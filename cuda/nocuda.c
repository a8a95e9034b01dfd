/*-------------------------------------------------------------------------
 * nocuda.c
 *	  Stand-ins for the CUDA side when the library is built without nvcc.
 *
 * The Makefile compiles this file instead of the .cu files when no CUDA toolkit
 * is found, so that gpuhash still builds, installs and runs its CPU twin.
 * Every GPU entry point reports GH_ERR_NO_CUDA_BUILD.
 *-------------------------------------------------------------------------
 */
#include "gh_aggregate.h"
#include "gh_error.h"
#include "gpuhash_cuda.h"

static gh_status
nocuda(gh_error *err, const char *where)
{
	return gh_error_set(err, GH_ERR_NO_CUDA_BUILD, where);
}

gh_status
gh_cuda_device_count(int *count, gh_error *err)
{
	*count = 0;
	return nocuda(err, "gh_cuda_device_count");
}

gh_status
gh_cuda_device_info(int ordinal, gh_device_info *info, gh_error *err)
{
	return nocuda(err, "gh_cuda_device_info");
}

gh_status
gh_cuda_context_init(int ordinal, gh_error *err)
{
	return nocuda(err, "gh_cuda_context_init");
}

int
gh_cuda_context_prewarm(int ordinal)
{
	return 0;
}

void
gh_cuda_context_prewarm_wait(void)
{
}

int
gh_cuda_context_prewarm_busy(void)
{
	return 0;
}

gh_status
gh_cuda_malloc(void **ptr, size_t bytes, gh_error *err)
{
	*ptr = NULL;
	return nocuda(err, "gh_cuda_malloc");
}

gh_status
gh_cuda_free(void *ptr, gh_error *err)
{
	return nocuda(err, "gh_cuda_free");
}

gh_status
gh_cuda_host_alloc(void **ptr, size_t bytes, gh_error *err)
{
	*ptr = NULL;
	return nocuda(err, "gh_cuda_host_alloc");
}

gh_status
gh_cuda_host_free(void *ptr, gh_error *err)
{
	return nocuda(err, "gh_cuda_host_free");
}

gh_status
gh_cuda_host_register(void *ptr, size_t bytes, gh_error *err)
{
	return nocuda(err, "gh_cuda_host_register");
}

gh_status
gh_cuda_host_unregister(void *ptr, gh_error *err)
{
	return nocuda(err, "gh_cuda_host_unregister");
}

gh_status
gh_cuda_stream_create(void **stream, gh_error *err)
{
	*stream = NULL;
	return nocuda(err, "gh_cuda_stream_create");
}

gh_status
gh_cuda_stream_destroy(void *stream, gh_error *err)
{
	return nocuda(err, "gh_cuda_stream_destroy");
}

gh_status
gh_cuda_stream_sync(void *stream, gh_error *err)
{
	return nocuda(err, "gh_cuda_stream_sync");
}

gh_status
gh_cuda_memcpy_htod(void *dst, const void *src, size_t bytes, void *stream,
					gh_error *err)
{
	return nocuda(err, "gh_cuda_memcpy_htod");
}

gh_status
gh_cuda_memcpy_dtoh(void *dst, const void *src, size_t bytes, void *stream,
					gh_error *err)
{
	return nocuda(err, "gh_cuda_memcpy_dtoh");
}

gh_status
gh_mm_build_gpu(gh_mm *mm, void *mem, const uint64_t *d_hashes,
				uint32_t nrows, const gh_mm_params *params,
				void *stream, gh_error *err)
{
	return nocuda(err, "gh_mm_build_gpu");
}

gh_status
gh_mm_probe_ranges_gpu(const gh_mm *mm, const uint64_t *d_probe,
					   uint32_t nprobe, uint32_t *d_first,
					   uint32_t *d_count, void *stream, gh_error *err)
{
	return nocuda(err, "gh_mm_probe_ranges_gpu");
}

/* gpuhash_aggregate's GPU entry points (cuda/gh_aggregate.h) */

gh_status
gh_agg_table_init_gpu(void *mem, uint64_t capacity, void *stream, gh_error *err)
{
	return nocuda(err, "gh_agg_table_init_gpu");
}

gh_status
gh_agg_table_rehash_gpu(const void *old_mem, uint64_t old_cap, void *new_mem,
						uint64_t new_cap, void *stream, gh_error *err)
{
	return nocuda(err, "gh_agg_table_rehash_gpu");
}

gh_status
gh_agg_assign_gpu(void *mem, uint64_t capacity, const uint64_t *hashes,
				  uint32_t n, uint32_t *ids, void *stream, gh_error *err)
{
	return nocuda(err, "gh_agg_assign_gpu");
}

gh_status
gh_agg_assign_exact_gpu(void *mem, uint64_t capacity, void *acc,
						const gh_agg_layout *l, const gh_agg_keys *k,
						uint32_t n, uint32_t *ids, uint32_t *scratch,
						uint32_t *bad, void *stream, gh_error *err)
{
	return nocuda(err, "gh_agg_assign_exact_gpu");
}

gh_status
gh_agg_skip_gpu(uint32_t *ids, const uint32_t *rows, uint32_t nrows,
				void *stream, gh_error *err)
{
	return nocuda(err, "gh_agg_skip_gpu");
}

gh_status
gh_agg_acc_init_gpu(void *acc, const gh_agg_layout *l, uint64_t from,
					uint64_t to, void *stream, gh_error *err)
{
	return nocuda(err, "gh_agg_acc_init_gpu");
}

gh_status
gh_agg_acc_move_gpu(void *dst, const gh_agg_layout *dl, const void *src,
					const gh_agg_layout *sl, uint64_t ngroups, void *stream,
					gh_error *err)
{
	return nocuda(err, "gh_agg_acc_move_gpu");
}

gh_status
gh_agg_accumulate_gpu(void *acc, const gh_agg_layout *l, uint64_t ngroups,
					  const gh_agg_batch *b, void *stream, gh_error *err)
{
	return nocuda(err, "gh_agg_accumulate_gpu");
}
