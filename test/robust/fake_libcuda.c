/*-------------------------------------------------------------------------
 * fake_libcuda.c
 *	  A broken or failing NVIDIA driver library, for test/t/005_robust_gpu.pl.
 *
 * Built as libcuda.so.1 into a directory put first on LD_LIBRARY_PATH of a
 * postmaster, it is what the CUDA runtime loads instead of the real driver:
 *   -DGH_FAKE_EMPTY   a library that exports no driver function at all (a
 *                     damaged or mismatched installation);
 *   otherwise         a driver that loads, reports version 13.0 and hands
 *                     out an entry point for every symbol asked for, each
 *                     of which (cuInit first) fails with CUDA_ERROR_UNKNOWN
 *                     (999).
 *-------------------------------------------------------------------------
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef GH_FAKE_EMPTY
int			gh_fake_libcuda_is_empty = 1;
#else

#define GH_FAKE_FAIL 999

int			cuInit(unsigned int flags);
int			cuDriverGetVersion(int *version);
int			cuGetProcAddress(const char *symbol, void **pfn, int version,
							 uint64_t flags);
int			cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
								uint64_t flags, int *status);
int			cuDeviceGetCount(int *count);
int			cuGetErrorName(int error, const char **name);
int			cuGetErrorString(int error, const char **str);

int
cuInit(unsigned int flags)
{
	(void) flags;
	return GH_FAKE_FAIL;
}

int
cuDriverGetVersion(int *version)
{
	if (version)
		*version = 13000;
	return 0;
}

static int
gh_fake_fail_all(void)
{
	return GH_FAKE_FAIL;
}

int
cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags)
{
	(void) version;
	(void) flags;
	if (pfn == NULL || symbol == NULL)
		return 1;				/* CUDA_ERROR_INVALID_VALUE */
	if (strcmp(symbol, "cuDriverGetVersion") == 0)
		*pfn = (void *) cuDriverGetVersion;
	else if (strcmp(symbol, "cuGetProcAddress") == 0)
		*pfn = (void *) cuGetProcAddress_v2;
	else if (strcmp(symbol, "cuGetErrorName") == 0)
		*pfn = (void *) cuGetErrorName;
	else if (strcmp(symbol, "cuGetErrorString") == 0)
		*pfn = (void *) cuGetErrorString;
	else
		*pfn = (void *) gh_fake_fail_all;
	return 0;
}

int
cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
					uint64_t flags, int *status)
{
	if (status)
		*status = 0;
	return cuGetProcAddress(symbol, pfn, version, flags);
}

int
cuDeviceGetCount(int *count)
{
	if (count)
		*count = 0;
	return GH_FAKE_FAIL;
}

int
cuGetErrorName(int error, const char **name)
{
	(void) error;
	if (name)
		*name = "CUDA_ERROR_UNKNOWN";
	return 0;
}

int
cuGetErrorString(int error, const char **str)
{
	(void) error;
	if (str)
		*str = "unknown error (fake driver)";
	return 0;
}
#endif
