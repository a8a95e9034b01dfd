/*-------------------------------------------------------------------------
 * multimap_warp.cuh
 *	  The device side of the static multimap's lookups: tiles, warp batches
 *	  and the host helpers that launch a row kernel, shared by the kernels of
 *	  multimap.cu and the test-only probes of test/cuda/mm_probes_gpu.cu.
 *
 * Design.  The layout and the probe sequence are gh_layout.h's (one slot per
 * distinct hash, rows grouped by hash after the slots, one allocation).  A
 * tile of G threads (cg::tiled_partition<G>, G chosen at run time among
 * 1..32) handles one key at a time: each thread loads one 16-byte slot of the
 * key's window, so a window is one coalesced load, and ballots decide "hash
 * here" / "empty slot here".
 *
 * Every kernel works on warp batches of 32*B consecutive rows.  Lane i loads
 * the hashes of rows base + 32*b + i (coalesced); the tiles then take those
 * rows round by round through shuffles, with the first window of several
 * rounds loaded before any is examined so that each thread keeps several
 * independent random loads in flight; each result goes back by shuffle to the
 * lane that owns the row.  So each lane ends up with its own rows' groups and
 * every global write of the batch is coalesced.  for_each_batch is that
 * frame; each kernel only says what to do with a batch's results.
 *
 * Everything here is in an anonymous namespace: each .cu file that includes
 * it gets its own copy, and nothing of it is exported (the host helpers are
 * inline, so a file that does not use one is not warned about it).
 *-------------------------------------------------------------------------
 */
#ifndef MULTIMAP_WARP_CUH
#define MULTIMAP_WARP_CUH

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <type_traits>

#include "gh_error.h"
#include "gh_layout.h"

namespace cg = cooperative_groups;

namespace {

constexpr int kBlock = 256;
constexpr int kWarpsPerBlock = kBlock / 32;
constexpr unsigned kFull = 0xffffffffu;
/* Lookup kernels: at least 4 blocks (32 warps) per SM, i.e. <= 64 registers;
 * random loads need many warps in flight more than they need registers. */
constexpr int kMinBlocks = 4;

/* Rows per lane per batch: more rows amortize the reservation atomic and add
 * loads in flight; big tiles already have G rounds per batch, and more than
 * 16 unrolled rounds spill under the 64-register cap. */
template <int G>
struct Batch
{
	static constexpr int B = G >= 16 ? 1 : (G == 8 ? 2 : 4);
	static constexpr int ROUNDS = G * B; /* tile rounds per batch */
	static constexpr int PF = ROUNDS < 4 ? ROUNDS : 4; /* windows in flight */
};

struct Table
{
	ulonglong2 *slots; /* capacity + 1 slots as {hash, count | offset << 32} */
	uint64_t capacity;
	uint64_t mask; /* nwindows - 1 */
	int scheme;
};

/* A flag in kInsert and kPlace results (slot indices and row offsets stay
 * below 2^41): kInsert, this row's CAS created the slot (and its count of 1);
 * kPlace, the low 32 bits are the start of a group of one row. */
constexpr uint64_t kFlag = (uint64_t) 1 << 62;

enum LookupMode
{
	/* result: the slot's {count | offset << 32}, 0 if absent */
	kProbe,
	/* result: offset | kFlag for a group of one, else the slot index;
	 * GH_NO_SLOT if absent */
	kPlace,
	/* result: the slot index, claimed if absent (| kFlag); GH_NO_SLOT if
	 * full */
	kInsert
};

__device__ __forceinline__ uint32_t
group_count(uint64_t y)
{
	return (uint32_t) y;
}

__device__ __forceinline__ uint32_t
group_offset(uint64_t y)
{
	return (uint32_t) (y >> 32);
}

/* kPlace's result for slot s holding y: a group of one row needs no
 * reservation, its place is known. */
__device__ __forceinline__ uint64_t
place_result(uint64_t s, uint64_t y)
{
	return group_count(y) == 1 ? (group_offset(y) | kFlag) : s;
}

/* Window loads.  Probes run on a finished table: read-only path.  The build
 * reads slots that other threads are claiming: L2 (coherent) only. */
template <int MODE>
__device__ __forceinline__ ulonglong2
load_slot(const ulonglong2 *p)
{
	if (MODE == kProbe)
		return __ldg(p);
	return __ldcg(p);
}

__device__ __forceinline__ unsigned
lane_id()
{
	return threadIdx.x & 31;
}

/*
 * Resolve one key in a tile: window 0 was already loaded into v.  Returns the
 * mode's result in every lane of the tile.  hash != GH_EMPTY_HASH; row is the
 * key's row, which kInsert writes as the offset of a slot it creates.
 */
template <int G, int MODE>
__device__ __forceinline__ uint64_t
resolve(const cg::thread_block_tile<G> &tile, const Table &T, uint64_t hash,
		uint32_t row, gh_seq seq, ulonglong2 v, uint32_t *full)
{
	const unsigned j = tile.thread_rank();
	uint64_t step = 0;

	for (;;)
	{
		const uint64_t base = seq.window * G;
		const unsigned hit = tile.ballot(v.x == hash);

		if (hit)
		{
			const int src = __ffs(hit) - 1;

			if (MODE == kProbe)
				return tile.shfl(v.y, src);
			if (MODE == kPlace)
				return place_result(base + src, tile.shfl(v.y, src));
			return base + src;
		}
		const unsigned empty = tile.ballot(v.x == GH_EMPTY_HASH);

		if (empty)
		{
			if (MODE != kInsert)
				return MODE == kProbe ? 0 : GH_NO_SLOT;

			/* Claim the first empty slot, counting this row and writing it
			 * as the offset in the same 16-byte CAS (empty slots are exactly
			 * {EMPTY, 0}); a lost race shows the winner's hash, which may be
			 * ours, so look at the window again.  Below sm_90 there is no
			 * 16-byte CAS: the hash alone is claimed, and the slot is
			 * returned unflagged, so that the caller counts the row with
			 * the atomicAdd every later row of the key takes; the first
			 * adder (count 0 before) writes the offset (k_insert). */
			const int f = __ffs(empty) - 1;
			unsigned long long old = 0;

			if (j == (unsigned) f)
			{
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
				const ulonglong2 none = make_ulonglong2(GH_EMPTY_HASH, 0);
				const ulonglong2 claim = make_ulonglong2(
					hash, 1 | ((uint64_t) row << 32));

				old = atomicCAS(&T.slots[base + f], none, claim).x;
#else
				old = atomicCAS(reinterpret_cast<unsigned long long *>(
									&T.slots[base + f].x),
								(unsigned long long) GH_EMPTY_HASH,
								(unsigned long long) hash);
#endif
			}
			old = tile.shfl(old, f);
			if (old == GH_EMPTY_HASH)
			{
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
				return (base + f) | kFlag;
#else
				return base + f;
#endif
			}
			if (j == (unsigned) f)
				v.x = old;
			continue;
		}
		if (++step > T.mask)
		{
			if (MODE == kInsert && j == 0)
				*full = 1;
			return MODE == kProbe ? 0 : GH_NO_SLOT;
		}
		seq.window = gh_seq_next_window(&seq);
		v = load_slot<MODE>(&T.slots[seq.window * G + j]);
	}
}

/*
 * The batch lookup.  Lane i brings hash[b] / ok[b] of row base + 32*b + i and
 * gets back res[b] for that row (undefined where !ok[b]).  Must be called by
 * all 32 lanes of the warp.
 */
template <int G, int MODE>
__device__ __forceinline__ void
warp_lookup(const Table &T, uint64_t base, const uint64_t (&hash)[Batch<G>::B],
			const bool (&ok)[Batch<G>::B], uint64_t (&res)[Batch<G>::B],
			uint32_t *full)
{
	constexpr int B = Batch<G>::B;
	constexpr int NT = 32 / G; /* tiles per warp */
	constexpr int ROUNDS = Batch<G>::ROUNDS;
	constexpr int PF = Batch<G>::PF;
	const cg::thread_block_tile<G> tile = cg::tiled_partition<G>(
		cg::this_thread_block());
	const unsigned lane = lane_id();
	const unsigned t = lane / G;
	const unsigned j = lane % G;

#pragma unroll
	for (int b = 0; b < B; b++)
		res[b] = MODE == kProbe ? 0 : GH_NO_SLOT;

#pragma unroll
	for (int k0 = 0; k0 < ROUNDS; k0 += PF)
	{
		uint64_t kh[PF];
		bool kv[PF];
		ulonglong2 w[PF];

		/* Issue the first window of PF rounds before examining any. */
#pragma unroll
		for (int q = 0; q < PF; q++)
		{
			const int k = k0 + q;
			const int b = k / G; /* rows of round k all come from hash[b] */
			const unsigned src = (unsigned) ((k * NT) % 32) + t;

			kh[q] = G == 1 ? hash[b] : __shfl_sync(kFull, hash[b], src);
			kv[q] = G == 1 ? ok[b] : __shfl_sync(kFull, (int) ok[b], src) != 0;
			if (kv[q] && kh[q] != GH_EMPTY_HASH)
				w[q] = load_slot<MODE>(
					&T.slots[gh_seq_start(kh[q], T.mask + 1, T.scheme).window *
								 G +
							 j]);
			else
				w[q] = make_ulonglong2(0, 0);
		}

#pragma unroll
		for (int q = 0; q < PF; q++)
		{
			const int k = k0 + q;
			const int b = k / G;
			uint64_t r = MODE == kProbe ? 0 : GH_NO_SLOT;

			if (kv[q])
			{
				if (kh[q] == GH_EMPTY_HASH)
				{
					if (MODE == kProbe)
						r = __ldg(&T.slots[T.capacity]).y;
					else if (MODE == kPlace)
						r = place_result(T.capacity,
										 __ldcg(&T.slots[T.capacity]).y);
					else
						r = T.capacity;
				}
				else
				{
					const uint32_t row = (uint32_t) (base + 32 * (uint64_t) b +
													 (k * NT) % 32 + t);

					/* The sequence is recomputed (a few multiplies) rather
					 * than kept in registers across the prefetch. */
					r = resolve<G, MODE>(
						tile, T, kh[q], row,
						gh_seq_start(kh[q], T.mask + 1, T.scheme), w[q], full);
				}
			}
			/* Round k's tile t worked on the row of lane (k*NT)%32 + t. */
			if (G == 1)
				res[b] = r;
			else
			{
				const uint64_t got = __shfl_sync(kFull, r, (lane % NT) * G);

				if (lane / NT == (unsigned) (((k * NT) % 32) / NT))
					res[b] = got;
			}
		}
	}
}

/* Inclusive warp scan. */
__device__ __forceinline__ uint64_t
warp_scan(uint64_t x)
{
	const unsigned lane = lane_id();

#pragma unroll
	for (int d = 1; d < 32; d <<= 1)
	{
		const uint64_t y = __shfl_up_sync(kFull, x, d);

		if (lane >= (unsigned) d)
			x += y;
	}
	return x;
}

/*
 * Every row kernel's frame: the warp walks its batches of 32*B rows (grid
 * stride), loads their hashes coalesced, looks them up in MODE and hands
 * f(base, ok, res) the batch's rows (row base + 32*b + lane) and results.
 * f is called by all 32 lanes; a return from it ends the batch.
 */
template <int G, int MODE, typename F>
__device__ __forceinline__ void
for_each_batch(const Table &T, const uint64_t *__restrict__ src, uint64_t n,
			   uint32_t *full, F &&f)
{
	constexpr int B = Batch<G>::B;
	const uint64_t warp = ((uint64_t) blockIdx.x * blockDim.x + threadIdx.x) /
						  32;
	const uint64_t stride = ((uint64_t) gridDim.x * blockDim.x) / 32 * 32 * B;
	const unsigned lane = lane_id();

	for (uint64_t base = warp * 32 * B; base < n; base += stride)
	{
		uint64_t h[B];
		bool ok[B];
		uint64_t res[B];

#pragma unroll
		for (int b = 0; b < B; b++)
		{
			const uint64_t row = base + 32 * (uint64_t) b + lane;

			ok[b] = row < n;
			/* Read once: stream past L2 so the table keeps the cache. */
			h[b] = ok[b] ? __ldcs(reinterpret_cast<const unsigned long long *>(
							   src + row))
						 : 0;
		}
		warp_lookup<G, MODE>(T, base, h, ok, res, full);
		f(base, ok, res);
	}
}

/* Adds every thread's v to *dst with one atomic per block.  Called by all
 * threads of the block. */
__device__ __forceinline__ void
block_add(uint64_t v, unsigned long long *dst)
{
	__shared__ unsigned long long warp_sums[kWarpsPerBlock];

#pragma unroll
	for (int d = 16; d > 0; d >>= 1)
		v += __shfl_down_sync(kFull, v, d);
	if (lane_id() == 0)
		warp_sums[threadIdx.x / 32] = v;
	__syncthreads();
	if (threadIdx.x == 0)
	{
		unsigned long long total = 0;

		for (int w = 0; w < kWarpsPerBlock; w++)
			total += warp_sums[w];
		if (total != 0)
			atomicAdd(dst, total);
	}
}

/* ---------------------------------------------------------------------
 * Host side
 * ---------------------------------------------------------------------
 */
/* A launch: the kernel, then the launch error, named after the kernel. */
#define GH_LAUNCH(where, kernel, grid, ...)             \
	do                                                  \
	{                                                   \
		kernel<<<(grid), kBlock, 0, st>>>(__VA_ARGS__); \
		GH_CUDA_LAUNCHED(where);                        \
	} while (0)

/*
 * Blocks for a grid-stride kernel over `units` warp batches: no more than fill
 * the device once (more blocks only add scheduling), and no more than the
 * work.
 */
template <typename K>
gh_status
grid_for(K kernel, uint64_t units, int *grid, gh_error *err)
{
	int dev = 0;
	int sms = 0;
	int per_sm = 0;

	GH_CUDA_TRY(cudaGetDevice(&dev), "cudaGetDevice");
	GH_CUDA_TRY(
		cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev),
		"cudaDeviceGetAttribute");
	GH_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel,
															  kBlock, 0),
				"cudaOccupancyMaxActiveBlocksPerMultiprocessor");
	if (per_sm < 1)
		per_sm = 1;
	const uint64_t full = (uint64_t) sms * per_sm;
	const uint64_t blocks = (units + kWarpsPerBlock - 1) / kWarpsPerBlock;

	*grid = (int) (blocks < full ? (blocks ? blocks : 1) : full);
	return GH_OK;
}

inline Table
make_table(const gh_mm *mm)
{
	Table T;

	T.slots = static_cast<ulonglong2 *>(mm->mem);
	T.capacity = mm->capacity;
	T.mask = mm->capacity / (uint64_t) mm->params.group_size - 1;
	T.scheme = mm->params.scheme;
	return T;
}

inline gh_ctrl *
ctrl_of(const gh_mm *mm)
{
	return reinterpret_cast<gh_ctrl *>(static_cast<char *>(mm->mem) +
									   gh_ctrl_offset(mm->capacity));
}

inline uint32_t *
rows_of(const gh_mm *mm)
{
	return reinterpret_cast<uint32_t *>(static_cast<char *>(mm->mem) +
										gh_rows_offset(mm->capacity));
}

/* Launches row kernel `kernel` (group size G) over n rows. */
template <int G, typename K, typename... A>
gh_status
launch_rows(const char *where, K kernel, uint64_t n, cudaStream_t st,
			gh_error *err, A... args)
{
	constexpr int B = Batch<G>::B;
	int grid;
	gh_status s;

	if ((s = grid_for(kernel, (n + 32 * B - 1) / (32 * B), &grid, err)) !=
		GH_OK)
		return s;
	GH_LAUNCH(where, kernel, grid, args...);
	return GH_OK;
}

/*
 * Calls f(std::integral_constant<int, G>()) for the table's run-time group
 * size, which picks one of the six instantiations of a kernel.
 */
template <typename F>
gh_status
with_group(const gh_mm *mm, gh_error *err, F &&f)
{
	switch (mm->params.group_size)
	{
		case 1:
			return f(std::integral_constant<int, 1>());
		case 2:
			return f(std::integral_constant<int, 2>());
		case 4:
			return f(std::integral_constant<int, 4>());
		case 8:
			return f(std::integral_constant<int, 8>());
		case 16:
			return f(std::integral_constant<int, 16>());
		case 32:
			return f(std::integral_constant<int, 32>());
	}
	return gh_error_set(err, GH_ERR_INVALID, "group_size");
}

/* Reads the control block back; the one host synchronization of a call. */
inline gh_status
read_ctrl(const gh_mm *mm, gh_ctrl *out, cudaStream_t st, gh_error *err)
{
	GH_CUDA_TRY(cudaMemcpyAsync(out, ctrl_of(mm), sizeof(gh_ctrl),
								cudaMemcpyDeviceToHost, st),
				"cudaMemcpyAsync");
	GH_CUDA_TRY(cudaStreamSynchronize(st), "cudaStreamSynchronize");
	return GH_OK;
}

} /* namespace */

#endif /* MULTIMAP_WARP_CUH */
