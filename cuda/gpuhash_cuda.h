/*-------------------------------------------------------------------------
 * gpuhash_cuda.h
 *	  The one C API between the PostgreSQL side (src/) and the device code
 *	  (cuda/).
 *
 * Everything declared here is plain C: it returns status codes, never throws,
 * never calls PostgreSQL and never allocates through PostgreSQL.  Device
 * pointers are opaque to the caller; streams are passed as void *.
 *
 * Two families of functions live behind this header:
 *	- gh_cuda_*: the CUDA runtime seen from a backend (devices, context,
 *	  allocation, copies, streams).  Implemented in cuda/device.cu, or by
 *	  cuda/nocuda.c when the library is built without nvcc.
 *	- gh_mm_*: the static multimap of 64-bit row hashes to 32-bit row indices:
 *	  size, build, the ranges probe and the row array, which is what the
 *	  join uses.  The *_gpu functions run kernels (cuda/multimap.cu); the
 *	  *_cpu functions are the CPU twin (cuda/multimap_cpu.c) with the same
 *	  slot layout and the same probe sequence (cuda/gh_layout.h).  The
 *	  count, retrieve and mark probes that the unit tests and the benchmark
 *	  also use live with them (test/cuda/mm_probes.h).
 *
 * Nothing here may be called in the postmaster: CUDA state does not survive
 * fork().
 *-------------------------------------------------------------------------
 */
#ifndef GPUHASH_CUDA_H
#define GPUHASH_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes returned by every function of this API. */
typedef enum gh_status
{
	GH_OK = 0,
	GH_ERR_CUDA,		  /* a CUDA call failed; see gh_error */
	GH_ERR_OOM,			  /* device (or pinned host) memory exhausted */
	GH_ERR_NO_DEVICE,	  /* no usable GPU, or no driver */
	GH_ERR_NO_CUDA_BUILD, /* library was built without nvcc */
	GH_ERR_TABLE_FULL,	  /* multimap probing bound reached */
	GH_ERR_INVALID,		  /* bad argument */
	GH_ERR_OVERFLOW		  /* output buffer smaller than the result */
} gh_status;

/*
 * Details of a failure.  Every string is static (never freed), so an error can
 * be reported after the failing call returned.
 */
typedef struct gh_error
{
	gh_status status;
	int cuda_code;			 /* cudaError_t value, 0 if not a CUDA error */
	const char *cuda_name;	 /* e.g. "cudaErrorMemoryAllocation", or NULL */
	const char *cuda_string; /* cudaGetErrorString(), or NULL */
	const char *where;		 /* the call that failed, e.g. "cudaMalloc" */
	int device_cc;			 /* GH_ERR_NO_DEVICE for a GPU this build has no
							  * code for: its compute capability (major * 10
							  * + minor); else 0 */
	int build_cc;			 /* then the lowest one the build has code for */
	const char *build_archs; /* and what it has code for, in words */
	int driver_version;		 /* GH_ERR_NO_DEVICE for the driver: the CUDA
							  * version it supports (0: no driver) */
	int runtime_version;	 /* then the CUDA version this build is of */
	int device_count;		 /* GH_ERR_NO_DEVICE for gpuhash.cuda_device past
							  * the GPUs there are: how many there are */
} gh_error;

/* ---------------------------------------------------------------------
 * Devices, context, memory, streams (cuda/device.cu)
 * ---------------------------------------------------------------------
 */
typedef struct gh_device_info
{
	int ordinal;
	char name[256];
	int cc_major;
	int cc_minor;
	int multiprocessors;
	size_t total_bytes;
	size_t free_bytes; /* only if a context exists on it, else 0 */
	size_t l2_bytes;
} gh_device_info;

/*
 * Number of visible devices, if device ordinal is one this build can use:
 * the driver supports this build's CUDA version and the build has code for
 * the GPU's architecture.  Loads the driver, creates no context; *count = 0
 * and GH_ERR_NO_DEVICE otherwise (err says why).
 */
gh_status gh_cuda_device_count(int ordinal, int *count, gh_error *err);
gh_status gh_cuda_device_info(int ordinal, gh_device_info *info,
							  gh_error *err);

/* Creates (or makes current) the primary context of device ordinal. */
gh_status gh_cuda_context_init(int ordinal, gh_error *err);

/*
 * Starts creating the primary context of device ordinal on a helper thread
 * (all signals blocked), so that the time it takes overlaps the caller's
 * work; gh_cuda_context_init waits for it.  Returns 0 if no
 * thread was started (one is running, the context exists, or no CUDA).
 * gh_cuda_context_prewarm_wait waits for a started thread to finish;
 * gh_cuda_context_prewarm_busy says, without waiting, whether it is still
 * at work (1) or done or never started (0).
 */
int gh_cuda_context_prewarm(int ordinal);
void gh_cuda_context_prewarm_wait(void);
int gh_cuda_context_prewarm_busy(void);

gh_status gh_cuda_malloc(void **ptr, size_t bytes, gh_error *err);
gh_status gh_cuda_free(void *ptr, gh_error *err);
/* pinned host memory */
gh_status gh_cuda_host_alloc(void **ptr, size_t bytes, gh_error *err);
gh_status gh_cuda_host_free(void *ptr, gh_error *err);
/* page-locks (and unlocks) existing host memory, e.g. a shared mapping */
gh_status gh_cuda_host_register(void *ptr, size_t bytes, gh_error *err);
gh_status gh_cuda_host_unregister(void *ptr, gh_error *err);

gh_status gh_cuda_stream_create(void **stream, gh_error *err);
gh_status gh_cuda_stream_sync(void *stream, gh_error *err);

gh_status gh_cuda_memcpy_htod(void *dst, const void *src, size_t bytes,
							  void *stream, gh_error *err);
gh_status gh_cuda_memcpy_dtoh(void *dst, const void *src, size_t bytes,
							  void *stream, gh_error *err);

/* ---------------------------------------------------------------------
 * Static multimap: 64-bit row hash -> 32-bit row index
 * (cuda/multimap.cu for *_gpu, cuda/multimap_cpu.c for *_cpu)
 * ---------------------------------------------------------------------
 */
#define GH_MAX_ROWS (UINT32_MAX - 1) /* row indices are < this */

typedef enum gh_probe_scheme
{
	GH_PROBE_LINEAR = 0,
	GH_PROBE_DOUBLE = 1
} gh_probe_scheme;

/* Tuning of one table; group_size is 1, 2, 4, 8, 16 or 32. */
typedef struct gh_mm_params
{
	double load_factor; /* in (0, 0.95] */
	int group_size;
	gh_probe_scheme scheme;

	/*
	 * Called by the CPU twin's build every 64K rows, if set, so that a
	 * caller can honour a cancel in a long build; it may not return (a
	 * PostgreSQL ERROR longjmps out: the build holds nothing of its own).
	 */
	void (*check_interrupts)(void);

	/*
	 * Nonzero: the caller promises that equal hashes are adjacent in the
	 * input (it is grouped, as a row store regrouped by another table's row
	 * array is).  The build then makes rows[] the identity, each group's
	 * offset being the index of its first row, so that tables built from
	 * one grouped array by different builders agree on every (first,
	 * count).  Input that is not grouped gives wrong groups: never set it
	 * otherwise.
	 */
	int grouped;
} gh_mm_params;

/*
 * A built table.  The struct itself is host memory owned by the caller; mem
 * is one allocation (device memory for *_gpu, host memory for *_cpu) of
 * gh_mm_bytes() bytes, also owned by the caller.
 */
typedef struct gh_mm
{
	void *mem;
	uint64_t capacity;	/* slots, a power of two */
	uint32_t nrows;		/* inner rows inserted */
	uint32_t ndistinct; /* distinct hashes (filled by build) */
	gh_mm_params params;
} gh_mm;

/* Bytes of the single allocation for nrows rows; sets *capacity. */
size_t gh_mm_bytes(uint32_t nrows, const gh_mm_params *params,
				   uint64_t *capacity);

/*
 * gh_mm_build_*: insert hashes[0..nrows) (row i has index i).  mm->mem must
 * point at gh_mm_bytes() bytes; the function fills every other field.
 */
gh_status gh_mm_build_gpu(gh_mm *mm, void *mem, const uint64_t *d_hashes,
						  uint32_t nrows, const gh_mm_params *params,
						  void *stream, gh_error *err);
gh_status gh_mm_build_cpu(gh_mm *mm, void *mem, const uint64_t *hashes,
						  uint32_t nrows, const gh_mm_params *params,
						  gh_error *err);

/*
 * gh_mm_probe_ranges_*: for each probe row p, the candidates are
 * rows[first[p] .. first[p] + count[p]) of the table's row array (count 0:
 * none).  This is the compact form the executor uses: 8 bytes per probe row
 * whatever the multiplicity.
 */
gh_status gh_mm_probe_ranges_gpu(const gh_mm *mm, const uint64_t *d_probe,
								 uint32_t nprobe, uint32_t *d_first,
								 uint32_t *d_count, void *stream,
								 gh_error *err);
gh_status gh_mm_probe_ranges_cpu(const gh_mm *mm, const uint64_t *probe,
								 uint32_t nprobe, uint32_t *first,
								 uint32_t *count, gh_error *err);

/* The table's row array (nrows entries, grouped by hash), inside mm->mem. */
const uint32_t *gh_mm_rows(const gh_mm *mm);

#ifdef __cplusplus
}
#endif

#endif /* GPUHASH_CUDA_H */
