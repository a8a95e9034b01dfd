/*-------------------------------------------------------------------------
 * gh_error.h
 *	  How cuda/ fills a gh_error: the one mapping from cudaError_t to
 *	  gh_status, and the checks that every CUDA call and launch goes through.
 *
 * Internal to cuda/ and its tests; src/ sees only gh_status and gh_error
 * (gpuhash_cuda.h).  gh_error_set is plain C, for the CPU twins and the
 * stubs of a build without nvcc; gh_cuda_fail, GH_CUDA_TRY and
 * GH_CUDA_LAUNCHED exist only under nvcc.  Header-only, so that a test or a
 * benchmark that compiles one .cu file needs nothing else from cuda/.
 *-------------------------------------------------------------------------
 */
#ifndef GH_ERROR_H
#define GH_ERROR_H

#include <stddef.h>

#include "gpuhash_cuda.h"

/*
 * gh_error_set fills err (if any) for a failure that is not CUDA's, or for
 * success with GH_OK and no where, and returns status.
 */
static inline gh_status
gh_error_set(gh_error *err, gh_status status, const char *where)
{
	if (err != NULL)
	{
		err->status = status;
		err->cuda_code = 0;
		err->cuda_name = NULL;
		err->cuda_string = NULL;
		err->where = where;
		err->device_cc = 0;
		err->build_cc = 0;
		err->build_archs = NULL;
		err->driver_version = 0;
		err->runtime_version = 0;
		err->device_count = 0;
	}
	return status;
}

#ifdef __CUDACC__
#include <cuda_runtime.h>

/*
 * gh_cuda_status maps a CUDA error to what the caller can do about it: out
 * of memory (free something, or fall back), no usable device (run on the
 * CPU twin), or anything else.
 */
static inline gh_status
gh_cuda_status(cudaError_t rc)
{
	switch (rc)
	{
		case cudaErrorMemoryAllocation:
			return GH_ERR_OOM;
		case cudaErrorNoDevice:
		case cudaErrorInsufficientDriver:
		case cudaErrorInvalidDevice:
		case cudaErrorDevicesUnavailable:
		case cudaErrorCompatNotSupportedOnDevice:
		case cudaErrorSystemDriverMismatch:
		case cudaErrorNoKernelImageForDevice:
			return GH_ERR_NO_DEVICE;
		default:
			return GH_ERR_CUDA;
	}
}

/*
 * gh_cuda_fail fills err (if any) from the CUDA error rc of the call named
 * where, and returns the matching status.
 *
 * It also resets the runtime's last error: a failed cudaMalloc (which
 * callers with a fallback expect) would otherwise be returned by the next
 * cudaGetLastError(), the launch check of a later, successful kernel, and
 * reported as that kernel's out-of-memory.  Sticky errors stay.
 */
static inline gh_status
gh_cuda_fail(gh_error *err, cudaError_t rc, const char *where)
{
	gh_status st = gh_cuda_status(rc);

	if (err != NULL)
	{
		err->status = st;
		err->cuda_code = (int) rc;
		err->cuda_name = cudaGetErrorName(rc);
		err->cuda_string = cudaGetErrorString(rc);
		err->where = where;
		err->device_cc = 0;
		err->build_cc = 0;
		err->build_archs = NULL;
		err->driver_version = 0;
		err->runtime_version = 0;
		err->device_count = 0;
	}
	(void) cudaGetLastError();
	return st;
}

/* GH_CUDA_TRY returns from a function with err in scope if call fails. */
#define GH_CUDA_TRY(call, where)                       \
	do                                                 \
	{                                                  \
		cudaError_t gh_rc_ = (call);                   \
                                                       \
		if (gh_rc_ != cudaSuccess)                     \
			return gh_cuda_fail(err, gh_rc_, (where)); \
	} while (0)

/* GH_CUDA_LAUNCHED checks the launch just made (where: the kernel's name). */
#define GH_CUDA_LAUNCHED(where) GH_CUDA_TRY(cudaGetLastError(), (where))

#endif /* __CUDACC__ */

#endif /* GH_ERROR_H */
