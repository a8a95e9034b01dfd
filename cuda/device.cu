/*-------------------------------------------------------------------------
 * device.cu
 *	  The CUDA runtime as a backend sees it: devices, context, memory,
 *	  streams.
 *
 * Thin wrappers that turn every cudaError_t into a gh_status plus a static
 * description (gh_cuda_fail, gh_error.h), so that the PostgreSQL side can
 * raise a proper ERROR without any C++ frame in between.  The only state is which device's context this
 * process created: the primary context of the chosen device, created by
 * gh_cuda_context_init (cudaSetDevice, then cudaFree(NULL) to force it).
 *-------------------------------------------------------------------------
 */
#include <cuda_runtime.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gh_error.h"
#include "gpuhash_cuda.h"

#ifndef GH_BUILD_MIN_CC
#error "GH_BUILD_MIN_CC (the lowest compute capability of NVCC_ARCH) is set by the Makefile"
#endif
/* NVCC_ARCH's machine code (sm_XY) and PTX (compute_XY), as lists "75:80" */
#ifndef GH_BUILD_SASS
#error "GH_BUILD_SASS (the sm_XX of NVCC_ARCH) is set by the Makefile"
#endif
#ifndef GH_BUILD_PTX
#error "GH_BUILD_PTX (the compute_XX of NVCC_ARCH kept as PTX) is set by the Makefile"
#endif

/* Ordinal of the device whose primary context this process created, or -1. */
static int gh_context_ordinal = -1;

/* GH_TRY checks a CUDA call and names it in the error as written. */
#define GH_TRY(call) GH_CUDA_TRY(call, #call)

/*
 * gh_arch_next reads the next capability of a list of them ("75:80:90")
 * from *p into *cc and steps past it; false at the list's end.
 */
static bool
gh_arch_next(const char **p, int *cc)
{
	char	   *end;
	long		a = strtol(*p, &end, 10);

	if (end == *p)
		return false;
	*cc = (int) a;
	*p = *end == ':' ? end + 1 : end;
	return true;
}

/*
 * gh_arch_in says whether one of list's capabilities meets the test of cc:
 * sass, the same major version and a minor at or below cc's; else (PTX)
 * any capability at or below cc.
 */
static bool
gh_arch_in(const char *list, int cc, bool sass)
{
	int			a;

	while (gh_arch_next(&list, &a))
		if (a > 0 && a <= cc && (!sass || a / 10 == cc / 10))
			return true;
	return false;
}

/*
 * gh_build_serves says whether this build's device code runs on a GPU of
 * compute capability cc (major * 10 + minor), by CUDA's rules: machine code
 * for sm_XY runs on GPUs of the same major version and a minor version at
 * or above Y; PTX for compute_XY is compiled by the driver for any GPU at
 * or above XY.  A GPU between the two (machine code of an older major, PTX
 * of a newer one) gets no kernel at all.
 */
static bool
gh_build_serves(int cc)
{
	return gh_arch_in(GH_BUILD_SASS, cc, true) ||
		gh_arch_in(GH_BUILD_PTX, cc, false);
}

/*
 * gh_build_archs_text says what the build has code for, in words: "machine
 * code for sm_75, sm_90 and PTX for compute_90".
 */
static const char *
gh_build_archs_text(void)
{
	static char text[256];
	const char *lists[2] = {GH_BUILD_SASS, GH_BUILD_PTX};
	const char *words[2][2] = {{"machine code for sm_", ", sm_"},
							   {" and PTX for compute_", ", compute_"}};
	size_t		len = 0;

	if (text[0])
		return text;
	for (int k = 0; k < 2; k++)
	{
		const char *p = lists[k];
		bool		first = true;
		int			a;

		while (len < sizeof(text) && gh_arch_next(&p, &a))
		{
			len += snprintf(text + len, sizeof(text) - len, "%s%d",
							words[k][first ? 0 : 1], a);
			first = false;
		}
	}
	return text;
}

/*
 * gh_emulated reads a test's emulation of the driver or the GPU from the
 * environment (GPUHASH_EMULATE_DRIVER: the CUDA version the driver
 * supports, e.g. 12080; GPUHASH_EMULATE_CC: device 0's compute capability,
 * e.g. 70), so that the refusal paths run on a host without either.  0
 * when unset.
 */
static int
gh_emulated(const char *name)
{
	const char *v = getenv(name);

	return v ? atoi(v) : 0;
}

/*
 * gh_cuda_check_arch says whether this build has device code for GPU
 * ordinal (gh_build_serves).  Without it every kernel launch would fail
 * with cudaErrorNoKernelImageForDevice; such a GPU counts as no usable GPU
 * (GH_ERR_NO_DEVICE, with device_cc and build_cc set), so that
 * gpuhash.device = auto leaves plans alone.  Reads two attributes; creates
 * no context.
 */
static gh_status
gh_cuda_check_arch(int ordinal, gh_error *err)
{
	int major = 0;
	int minor = 0;
	int cc = gh_emulated("GPUHASH_EMULATE_CC");

	if (cc == 0)
	{
		GH_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ordinal));
		GH_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, ordinal));
		cc = major * 10 + minor;
	}
	if (gh_build_serves(cc))
		return GH_OK;
	if (err)
	{
		gh_error_set(err, GH_ERR_NO_DEVICE, "the GPU's compute capability");
		err->cuda_name = "a GPU this build of gpuhash has no device code for";
		err->device_cc = cc;
		err->build_cc = GH_BUILD_MIN_CC;
		err->build_archs = gh_build_archs_text();
	}
	return GH_ERR_NO_DEVICE;
}

/*
 * gh_cuda_check_driver says whether the driver can run this build: it must
 * support the CUDA major version the runtime linked in is of (minor
 * versions are compatible across a major version).  No driver at all reads
 * as version 0.
 */
static gh_status
gh_cuda_check_driver(gh_error *err)
{
	int version = gh_emulated("GPUHASH_EMULATE_DRIVER");
	const int needed = (CUDART_VERSION / 1000) * 1000;

	if (version == 0 && cudaDriverGetVersion(&version) != cudaSuccess)
		version = 0;
	if (version >= needed)
		return GH_OK;
	if (err)
	{
		gh_error_set(err, GH_ERR_NO_DEVICE, "cudaDriverGetVersion");
		err->cuda_name = version == 0 ? "no NVIDIA driver" : "an NVIDIA driver too old for this build";
		err->driver_version = version;
		err->runtime_version = CUDART_VERSION;
	}
	(void) cudaGetLastError();
	return GH_ERR_NO_DEVICE;
}

extern "C" gh_status
gh_cuda_device_count(int ordinal, int *count, gh_error *err)
{
	cudaError_t rc;
	gh_status st;

	/*
	 * No GPU or no driver is a normal situation: the count is 0 and the
	 * status GH_ERR_NO_DEVICE, which the caller takes as "use the CPU twin".
	 * Nor are a driver too old for this build, a GPU this build has no code
	 * for, or an ordinal past the GPUs there are.
	 */
	*count = 0;
	st = gh_cuda_check_driver(err);
	if (st != GH_OK)
		return st;
	if (gh_emulated("GPUHASH_EMULATE_CC") > 0)
		*count = 1;
	else
	{
		rc = cudaGetDeviceCount(count);
		if (rc != cudaSuccess)
		{
			*count = 0;
			return gh_cuda_fail(err, rc, "cudaGetDeviceCount");
		}
	}
	if (*count == 0)
		return gh_cuda_fail(err, cudaErrorNoDevice, "cudaGetDeviceCount");
	if (ordinal >= *count)
	{
		if (err)
		{
			gh_error_set(err, GH_ERR_NO_DEVICE, "gpuhash.cuda_device");
			err->cuda_name = "no GPU of that ordinal";
			err->device_count = *count;
		}
		*count = 0;
		return GH_ERR_NO_DEVICE;
	}
	st = gh_cuda_check_arch(ordinal, err);
	if (st != GH_OK)
		*count = 0;
	return st;
}

extern "C" gh_status
gh_cuda_device_info(int ordinal, gh_device_info *info, gh_error *err)
{
	cudaDeviceProp prop;
	GH_TRY(cudaGetDeviceProperties(&prop, ordinal));
	memset(info, 0, sizeof(*info));
	info->ordinal = ordinal;
	strncpy(info->name, prop.name, sizeof(info->name) - 1);
	info->cc_major = prop.major;
	info->cc_minor = prop.minor;
	info->multiprocessors = prop.multiProcessorCount;
	info->total_bytes = prop.totalGlobalMem;
	info->l2_bytes = (size_t) prop.l2CacheSize;

	/*
	 * Free memory needs a context.  Report it only for the device whose
	 * context this backend already created; never create one here.
	 */
	if (gh_context_ordinal == ordinal)
	{
		size_t free_b, total_b;

		if (cudaSetDevice(ordinal) == cudaSuccess &&
			cudaMemGetInfo(&free_b, &total_b) == cudaSuccess)
			info->free_bytes = free_b;
	}
	cudaGetLastError(); /* clear anything the probes above left */
	return GH_OK;
}

/*
 * The prewarm thread only makes the driver create the primary context; its
 * errors are not kept, since gh_cuda_context_init makes the same calls again
 * on the backend's own thread and reports what fails there.
 */
static pthread_t gh_prewarm_thread;
static bool gh_prewarm_running = false;
static int gh_prewarm_ordinal = -1;
static volatile int gh_prewarm_finished = 0; /* set by the thread, last */

static void *
gh_prewarm_main(void *arg)
{
	if (cudaSetDevice(gh_prewarm_ordinal) == cudaSuccess)
		(void) cudaFree(NULL);
	(void) cudaGetLastError();
	__atomic_store_n(&gh_prewarm_finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

extern "C" int
gh_cuda_context_prewarm(int ordinal)
{
	sigset_t all, old;
	int rc;

	if (gh_prewarm_running || gh_context_ordinal == ordinal)
		return 0;
	/* the thread inherits a full mask: signals stay with the backend's thread */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	gh_prewarm_ordinal = ordinal;
	gh_prewarm_finished = 0;
	rc = pthread_create(&gh_prewarm_thread, NULL, gh_prewarm_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	gh_prewarm_running = (rc == 0);
	return gh_prewarm_running ? 1 : 0;
}

extern "C" int
gh_cuda_context_prewarm_busy(void)
{
	if (gh_prewarm_running &&
		__atomic_load_n(&gh_prewarm_finished, __ATOMIC_ACQUIRE))
		gh_cuda_context_prewarm_wait(); /* done: this join is immediate */
	return gh_prewarm_running ? 1 : 0;
}

extern "C" void
gh_cuda_context_prewarm_wait(void)
{
	if (gh_prewarm_running)
	{
		pthread_join(gh_prewarm_thread, NULL);
		gh_prewarm_running = false;
	}
}

/*
 * gh_context_fail is gh_cuda_fail for the calls that create the context.  CUDA
 * documents cudaErrorDevicesUnavailable for a device held by another process
 * (exclusive-process compute mode) and for "memory constraints on a device
 * that already has active CUDA work".  A context created while another
 * process holds nearly all of the memory can fail so (seen in the tests of
 * bench/results/robustness-2026-11-22.md, beside cudaErrorMemoryAllocation
 * for the same condition).  A device that exists and is not
 * prohibited is usable, just not now: report it as out of memory, like the
 * same condition's cudaErrorMemoryAllocation.
 */
static gh_status
gh_context_fail(gh_error *err, cudaError_t rc, int ordinal, const char *where)
{
	gh_status st = gh_cuda_fail(err, rc, where);
	int mode = -1;

	if (rc == cudaErrorDevicesUnavailable &&
		cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, ordinal) ==
			cudaSuccess &&
		mode != cudaComputeModeProhibited)
	{
		st = GH_ERR_OOM;
		if (err)
			err->status = st;
	}
	cudaGetLastError();
	return st;
}

extern "C" gh_status
gh_cuda_context_init(int ordinal, gh_error *err)
{
	cudaError_t rc;

	gh_cuda_context_prewarm_wait();
	/*
	 * before cudaSetDevice, which since CUDA 12 creates the primary context:
	 * a GPU this build cannot serve gets no context (and its memory) at all
	 */
	if (gh_context_ordinal != ordinal)
	{
		int			count;
		gh_status	st = gh_cuda_device_count(ordinal, &count, err);

		if (st != GH_OK)
			return st;
	}
	rc = cudaSetDevice(ordinal);
	if (rc != cudaSuccess)
		return gh_context_fail(err, rc, ordinal, "cudaSetDevice(ordinal)");
	if (gh_context_ordinal != ordinal)
	{
		rc = cudaFree(NULL);
		if (rc != cudaSuccess)
			return gh_context_fail(err, rc, ordinal, "cudaFree(NULL)");
		gh_context_ordinal = ordinal;
	}
	return GH_OK;
}

/*
 * gh_alloc and gh_release are the pattern of the allocation calls: *ptr is
 * NULL unless the allocation succeeded, and releasing NULL does nothing.
 * where names the call as the error reports it.
 */
static gh_status
gh_alloc(cudaError_t (*alloc)(void **, size_t), const char *where, void **ptr,
		 size_t bytes, gh_error *err)
{
	*ptr = NULL;
	GH_CUDA_TRY(alloc(ptr, bytes), where);
	return GH_OK;
}

static gh_status
gh_release(cudaError_t (*release)(void *), const char *where, void *ptr,
		   gh_error *err)
{
	if (ptr)
		GH_CUDA_TRY(release(ptr), where);
	return GH_OK;
}

extern "C" gh_status
gh_cuda_malloc(void **ptr, size_t bytes, gh_error *err)
{
	return gh_alloc(cudaMalloc, "cudaMalloc(ptr, bytes)", ptr, bytes, err);
}

extern "C" gh_status
gh_cuda_free(void *ptr, gh_error *err)
{
	return gh_release(cudaFree, "cudaFree(ptr)", ptr, err);
}

extern "C" gh_status
gh_cuda_host_alloc(void **ptr, size_t bytes, gh_error *err)
{
	return gh_alloc(cudaMallocHost, "cudaMallocHost(ptr, bytes)", ptr, bytes,
					err);
}

extern "C" gh_status
gh_cuda_host_free(void *ptr, gh_error *err)
{
	return gh_release(cudaFreeHost, "cudaFreeHost(ptr)", ptr, err);
}

extern "C" gh_status
gh_cuda_host_register(void *ptr, size_t bytes, gh_error *err)
{
	GH_TRY(cudaHostRegister(ptr, bytes, cudaHostRegisterDefault));
	return GH_OK;
}

extern "C" gh_status
gh_cuda_host_unregister(void *ptr, gh_error *err)
{
	GH_TRY(cudaHostUnregister(ptr));
	return GH_OK;
}

extern "C" gh_status
gh_cuda_stream_create(void **stream, gh_error *err)
{
	cudaStream_t s = NULL;

	*stream = NULL;
	GH_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	*stream = (void *) s;
	return GH_OK;
}

extern "C" gh_status
gh_cuda_stream_sync(void *stream, gh_error *err)
{
	GH_TRY(cudaStreamSynchronize((cudaStream_t) stream));
	return GH_OK;
}

/*
 * gh_copy enqueues one copy of kind on stream, nothing for 0 bytes.  The
 * error names the call as the two copy functions wrote it.
 */
static gh_status
gh_copy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
		void *stream, gh_error *err)
{
	const char *where =
		kind == cudaMemcpyHostToDevice
			? "cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, "
			  "(cudaStream_t) stream)"
			: "cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, "
			  "(cudaStream_t) stream)";

	if (bytes == 0)
		return GH_OK;
	GH_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, kind, (cudaStream_t) stream),
				where);
	return GH_OK;
}

extern "C" gh_status
gh_cuda_memcpy_htod(void *dst, const void *src, size_t bytes, void *stream,
					gh_error *err)
{
	return gh_copy(dst, src, bytes, cudaMemcpyHostToDevice, stream, err);
}

extern "C" gh_status
gh_cuda_memcpy_dtoh(void *dst, const void *src, size_t bytes, void *stream,
					gh_error *err)
{
	return gh_copy(dst, src, bytes, cudaMemcpyDeviceToHost, stream, err);
}
