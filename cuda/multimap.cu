/*-------------------------------------------------------------------------
 * multimap.cu
 *	  GPU static multimap (64-bit row hash -> 32-bit row index): the build and
 *	  ranges kernels and the extern "C" gh_mm_*_gpu functions of
 *	  gpuhash_cuda.h.
 *
 * Design.  The kernels are written on multimap_warp.cuh's frame: tiles of G
 * threads look up one key per window load, warps take batches of 32*B rows,
 * and every global write of a batch is coalesced.
 *
 * Build = init slots; insert (claim the slot with a 16-byte CAS that also
 * counts the row and writes the row as the group's offset, else count it,
 * one atomic per distinct slot per warp thanks to match_any; count the slots
 * created).  If every hash was distinct (the inner side of a key join), the
 * offsets the claims wrote are the layout (gh_layout.h) and the last pass
 * writes rows[] as the identity, sequentially: no re-probe, no atomics.
 * Otherwise: give each group an end offset, a group of one its start (one
 * atomic per block of 2048 slots hands out row ranges; groups need not be in
 * slot order, so no scan and no scratch); scatter (re-probe; a row of a group
 * of one goes straight to its start; bigger groups take places with an
 * atomicSub on the offset, once per slot per warp, which leaves it at the
 * group's start).  Grouped input (gh_mm_params.grouped) skips the offsets
 * and the scatter: each group's first row writes itself as the offset
 * (k_starts) and rows[] is the identity.  The build is bound by random DRAM traffic: with repeated
 * hashes the scatter is its largest part (bench/results/multimap-2026-11-21.md),
 * with distinct hashes only the insert is left (multimap-2026-11-22.md).
 *
 * Ranges: each probe row gets its group's (first, count) in the row array,
 * written coalesced; it runs at the device's random read ceiling.
 *
 * Asynchrony: the build ends with a synchronization of the caller's stream
 * (it returns the number of distinct hashes); ranges only enqueues work on
 * it.
 *
 * Library code: never prints, exits or throws; every CUDA call and launch is
 * checked and reported through gh_error (gh_error.h).
 *-------------------------------------------------------------------------
 */
#include "multimap_warp.cuh"

namespace {

/* ---------------------------------------------------------------------
 * Build kernels
 * ---------------------------------------------------------------------
 */
__global__ void __launch_bounds__(kBlock)
k_init(ulonglong2 *slots, uint64_t nslots, gh_ctrl *ctrl)
{
	const uint64_t stride = (uint64_t) gridDim.x * blockDim.x;

	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x;
		 i < nslots; i += stride)
		slots[i] = make_ulonglong2(GH_EMPTY_HASH, 0);
	if (blockIdx.x == 0 && threadIdx.x == 0)
	{
		ctrl->placed = 0;
		ctrl->out_cursor = 0;
		ctrl->distinct = 0;
		ctrl->full = 0;
		/* read_ctrl copies all 32 bytes (as the CPU twin's memset) */
		ctrl->pad = 0;
	}
}

/*
 * Insert and count.  A row that created its slot is already counted (and
 * written as the slot's offset) by the claiming CAS; lanes whose other rows
 * landed in one slot add to its count with one atomic (match_any), which
 * matters for skewed and adversarial inputs where thousands of rows share a
 * slot.  The sentinel slot is never claimed: the add that finds its count 0
 * creates its group and writes the offset.  Created groups are counted in
 * ctrl->distinct.
 */
template <int G>
__global__ void __launch_bounds__(kBlock, kMinBlocks)
k_insert(Table T, const uint64_t *__restrict__ hashes, uint64_t n,
		 gh_ctrl *ctrl)
{
	const unsigned lane = lane_id();
	uint64_t created = 0;

	for_each_batch<G, kInsert>(
		T, hashes, n, &ctrl->full,
		[&](uint64_t base, const auto &ok, const auto &slot)
		{
#pragma unroll
			for (int b = 0; b < Batch<G>::B; b++)
			{
				const uint64_t r = ok[b] ? slot[b] : GH_NO_SLOT;
				const bool claimed = r != GH_NO_SLOT && (r & kFlag) != 0;
				const uint64_t s = r == GH_NO_SLOT ? r : (r & ~kFlag);
				const unsigned peers = __match_any_sync(
					kFull, (unsigned long long) s);
				const unsigned nclaimed = __popc(
					peers & __ballot_sync(kFull, claimed));
				const unsigned add = __popc(peers) - nclaimed;

				if (s != GH_NO_SLOT && lane == (unsigned) (__ffs(peers) - 1))
				{
					created += nclaimed;
					if (add != 0 &&
						atomicAdd(reinterpret_cast<unsigned *>(&T.slots[s].y),
								  add) == 0)
					{
						created++;
						reinterpret_cast<unsigned *>(&T.slots[s].y)[1] =
							(uint32_t) (base + 32 * (uint64_t) b + lane);
					}
				}
			}
		});
	block_add(created,
			  reinterpret_cast<unsigned long long *>(&ctrl->distinct));
}

/*
 * Hand each group the end of a row range (a group of one: its start).  A
 * block takes K*256 slots, scans their counts and reserves the rows of all
 * its groups with one atomic on ctrl->placed: all blocks hit that one
 * address, so it is one atomic per 2048 slots, not per warp.  Nothing to do
 * when every hash is distinct: the insert wrote each slot's row as its
 * offset, and that is the layout (gh_layout.h).
 */
constexpr int kOffsetsPerThread = 8;
constexpr int kOffsetsChunk = kOffsetsPerThread * kBlock;

__global__ void __launch_bounds__(kBlock)
k_offsets(ulonglong2 *slots, uint64_t nslots, uint64_t n, gh_ctrl *ctrl)
{
	constexpr int K = kOffsetsPerThread;
	__shared__ uint32_t warp_rows[kWarpsPerBlock];
	__shared__ unsigned long long block_start;
	const unsigned lane = lane_id();
	const unsigned warp = threadIdx.x / 32;

	if (ctrl->distinct == n)
		return;
	for (uint64_t base = (uint64_t) blockIdx.x * kOffsetsChunk; base < nslots;
		 base += (uint64_t) gridDim.x * kOffsetsChunk)
	{
		uint32_t c[K];
		uint32_t sum = 0;

#pragma unroll
		for (int k = 0; k < K; k++)
		{
			const uint64_t i = base + (uint64_t) k * kBlock + threadIdx.x;

			c[k] = i < nslots ? (uint32_t) slots[i].y : 0;
			sum += c[k];
		}
		const uint32_t incl = (uint32_t) warp_scan(sum);

		if (lane == 31)
			warp_rows[warp] = incl;
		__syncthreads();
		if (threadIdx.x == 0)
		{
			uint32_t rows = 0;

			for (int w = 0; w < kWarpsPerBlock; w++)
				rows += warp_rows[w];
			block_start = rows ? atomicAdd(
									 reinterpret_cast<unsigned long long *>(
										 &ctrl->placed),
									 (unsigned long long) rows)
							   : 0;
		}
		__syncthreads();
		uint32_t end = (uint32_t) block_start + incl - sum;

		for (unsigned w = 0; w < warp; w++)
			end += warp_rows[w];
#pragma unroll
		for (int k = 0; k < K; k++)
		{
			if (c[k] != 0)
			{
				const uint64_t i = base + (uint64_t) k * kBlock + threadIdx.x;

				end += c[k];
				reinterpret_cast<unsigned *>(&slots[i].y)[1] = c[k] == 1
																   ? end - 1
																   : end;
			}
		}
		/* warp_rows and block_start are rewritten by the next chunk. */
		__syncthreads();
	}
}

/*
 * Grouped input (gh_mm_params.grouped: equal hashes adjacent): the group's
 * offset becomes its first row, whichever row's CAS claimed the slot, and
 * rows[] is the identity.  Only the first row of a group of more than one
 * writes (a group of one already holds its own row): no race.
 */
template <int G>
__global__ void __launch_bounds__(kBlock, kMinBlocks)
k_starts(Table T, const uint64_t *__restrict__ hashes, uint64_t n,
		 const gh_ctrl *ctrl)
{
	const unsigned lane = lane_id();

	if (ctrl->distinct == n)
		return;
	for_each_batch<G, kPlace>(
		T, hashes, n, nullptr,
		[&](uint64_t base, const auto &ok, const auto &res)
		{
#pragma unroll
			for (int b = 0; b < Batch<G>::B; b++)
			{
				const uint64_t row = base + 32 * (uint64_t) b + lane;

				if (ok[b] && res[b] != GH_NO_SLOT && (res[b] & kFlag) == 0 &&
					(row == 0 || hashes[row - 1] != hashes[row]))
					reinterpret_cast<unsigned *>(&T.slots[res[b]].y)[1] =
						(uint32_t) row;
			}
		});
}

/*
 * Place row indices into their groups.  Every hash distinct, or grouped
 * input: rows[] is the identity, one sequential pass.  Otherwise a row of a
 * group of one goes to the group's start; bigger groups' offsets walk down
 * from the end to the start with one atomicSub per slot per warp.
 */
template <int G>
__global__ void __launch_bounds__(kBlock, kMinBlocks)
k_scatter(Table T, const uint64_t *__restrict__ hashes, uint64_t n,
		  uint32_t *rows, const gh_ctrl *ctrl, int identity)
{
	const unsigned lane = lane_id();

	if (identity || ctrl->distinct == n)
	{
		/* rows is 16-byte aligned (gh_layout.h). */
		const uint64_t tid = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x;
		const uint64_t stride = (uint64_t) gridDim.x * blockDim.x;

		for (uint64_t i = tid; i < n / 4; i += stride)
		{
			const uint32_t r = (uint32_t) (4 * i);

			reinterpret_cast<uint4 *>(rows)[i] = make_uint4(r, r + 1, r + 2,
															r + 3);
		}
		if (tid < n % 4)
			rows[n / 4 * 4 + tid] = (uint32_t) (n / 4 * 4 + tid);
		return;
	}

	for_each_batch<G, kPlace>(
		T, hashes, n, nullptr,
		[&](uint64_t base, const auto &ok, const auto &res)
		{
#pragma unroll
			for (int b = 0; b < Batch<G>::B; b++)
			{
				const uint64_t r = ok[b] ? res[b] : GH_NO_SLOT;
				const bool one = r != GH_NO_SLOT && (r & kFlag) != 0;
				const uint64_t s = one ? GH_NO_SLOT : r;
				const uint32_t row = (uint32_t) (base + 32 * (uint64_t) b +
												 lane);
				const unsigned peers = __match_any_sync(
					kFull, (unsigned long long) s);
				const int leader = __ffs(peers) - 1;
				const unsigned npeers = __popc(peers);
				const unsigned rank = __popc(peers & ((1u << lane) - 1));
				unsigned end = 0;

				if (one)
					rows[(uint32_t) r] = row;
				if (s != GH_NO_SLOT && lane == (unsigned) leader)
					end = atomicSub(
						reinterpret_cast<unsigned *>(&T.slots[s].y) + 1,
						npeers);
				end = __shfl_sync(kFull, end, leader);
				if (s != GH_NO_SLOT)
					rows[end - npeers + rank] = row;
			}
		});
}

/* ---------------------------------------------------------------------
 * Probe kernel
 * ---------------------------------------------------------------------
 */
template <int G>
__global__ void __launch_bounds__(kBlock, kMinBlocks)
k_ranges(Table T, const uint64_t *__restrict__ probe, uint64_t n,
		 uint32_t *__restrict__ first, uint32_t *__restrict__ count)
{
	const unsigned lane = lane_id();

	for_each_batch<G, kProbe>(
		T, probe, n, nullptr,
		[&](uint64_t base, const auto &ok, const auto &y)
		{
#pragma unroll
			for (int b = 0; b < Batch<G>::B; b++)
			{
				if (ok[b])
				{
					const uint64_t row = base + 32 * (uint64_t) b + lane;
					const uint32_t c = group_count(y[b]);

					__stcs(&first[row], c ? group_offset(y[b]) : 0u);
					__stcs(&count[row], c);
				}
			}
		});
}

/* ---------------------------------------------------------------------
 * Host side
 * ---------------------------------------------------------------------
 */

template <int G>
gh_status
build_g(const gh_mm *mm, const uint64_t *d_hashes, cudaStream_t st,
		gh_error *err)
{
	const Table T = make_table(mm);
	gh_ctrl *ctrl = ctrl_of(mm);
	const uint64_t n = mm->nrows;
	const uint64_t nslots = mm->capacity + 1;
	int grid;
	gh_status s;

	if ((s = grid_for(k_init, (nslots + 255) / 32, &grid, err)) != GH_OK)
		return s;
	GH_LAUNCH("k_init", k_init, grid, T.slots, nslots, ctrl);
	if (n == 0)
		return GH_OK;
	if ((s = launch_rows<G>("k_insert", k_insert<G>, n, st, err, T, d_hashes,
							n, ctrl)) != GH_OK)
		return s;
	if (mm->params.grouped)
	{
		if ((s = launch_rows<G>("k_starts", k_starts<G>, n, st, err, T,
								d_hashes, n, (const gh_ctrl *) ctrl)) != GH_OK)
			return s;
		return launch_rows<G>("k_scatter", k_scatter<G>, n, st, err, T,
							  d_hashes, n, rows_of(mm), (const gh_ctrl *) ctrl,
							  1);
	}
	if ((s = grid_for(k_offsets,
					  (nslots + kOffsetsChunk - 1) / kOffsetsChunk *
						  kWarpsPerBlock,
					  &grid, err)) != GH_OK)
		return s;
	GH_LAUNCH("k_offsets", k_offsets, grid, T.slots, nslots, n, ctrl);
	return launch_rows<G>("k_scatter", k_scatter<G>, n, st, err, T, d_hashes,
						  n, rows_of(mm), (const gh_ctrl *) ctrl, 0);
}

} /* namespace */

extern "C" {

gh_status
gh_mm_build_gpu_capacity(gh_mm *mm, void *mem, const uint64_t *d_hashes,
						 uint32_t nrows, const gh_mm_params *params,
						 uint64_t capacity, void *stream, gh_error *err)
{
	const cudaStream_t st = static_cast<cudaStream_t>(stream);
	gh_ctrl ctrl;
	gh_status s;

	if (!gh_build_start(mm, mem, d_hashes, nrows, params, capacity))
		return gh_error_set(err, GH_ERR_INVALID, "gh_mm_build_gpu");
	if ((s = with_group(mm, err,
						[&](auto g)
						{
							return build_g<decltype(g)::value>(mm, d_hashes,
															   st, err);
						})) != GH_OK)
		return s;
	if ((s = read_ctrl(mm, &ctrl, st, err)) != GH_OK)
		return s;
	if (ctrl.full)
		return gh_error_set(err, GH_ERR_TABLE_FULL, "gh_mm_build_gpu");
	mm->ndistinct = (uint32_t) ctrl.distinct;
	return gh_error_set(err, GH_OK, nullptr);
}

gh_status
gh_mm_build_gpu(gh_mm *mm, void *mem, const uint64_t *d_hashes, uint32_t nrows,
				const gh_mm_params *params, void *stream, gh_error *err)
{
	uint64_t capacity = gh_capacity_for(nrows, params);

	if (capacity == 0)
		return gh_error_set(err, GH_ERR_INVALID, "gh_mm_build_gpu");
	return gh_mm_build_gpu_capacity(mm, mem, d_hashes, nrows, params, capacity,
									stream, err);
}

gh_status
gh_mm_probe_ranges_gpu(const gh_mm *mm, const uint64_t *d_probe,
					   uint32_t nprobe, uint32_t *d_first, uint32_t *d_count,
					   void *stream, gh_error *err)
{
	const cudaStream_t st = static_cast<cudaStream_t>(stream);
	gh_status s;

	if (!gh_mm_valid(mm) ||
		(nprobe > 0 &&
		 (d_probe == nullptr || d_first == nullptr || d_count == nullptr)))
		return gh_error_set(err, GH_ERR_INVALID, "gh_mm_probe_ranges_gpu");
	if (nprobe > 0 && (s = with_group(mm, err,
									  [&](auto g)
									  {
										  constexpr int G = decltype(g)::value;
										  return launch_rows<G>(
											  "k_ranges", k_ranges<G>, nprobe,
											  st, err, make_table(mm), d_probe,
											  (uint64_t) nprobe, d_first,
											  d_count);
									  })) != GH_OK)
		return s;
	return gh_error_set(err, GH_OK, nullptr);
}

} /* extern "C" */
