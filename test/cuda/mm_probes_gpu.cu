/*-------------------------------------------------------------------------
 * mm_probes_gpu.cu
 *	  The multimap's count, retrieve and mark probes on the GPU: test code.
 *	  The extension uses only the ranges probe (gh_mm_probe_ranges_gpu);
 *	  these three are kept here, on the same lookup frame
 *	  (cuda/multimap_warp.cuh), so that the unit tests compare every kind of
 *	  probe with the CPU twin and the benchmark can time them.
 *
 * Retrieve: each warp computes its batch's output counts, scans them with
 * shuffles, reserves room for the whole batch with ONE global atomicAdd, and
 * writes each row's pairs contiguously.  The per-row descriptors (offset,
 * count, scan) stay in registers and are read across lanes by shuffles, which
 * is the per-warp staging: rows with at most one pair write straight to
 * consecutive positions, bigger groups are copied by the whole warp, 128
 * pairs per step with all their row loads in flight, so stores are coalesced
 * at any multiplicity.  Retrieve and count run at the device's random read
 * ceiling.
 *
 * Asynchrony: count and retrieve end with a synchronization of the caller's
 * stream (they return numbers); mark_matched only enqueues work on it.
 *-------------------------------------------------------------------------
 */
#include "mm_probes.h"
#include "multimap_warp.cuh"

namespace {

/* Steps of 32 pairs that a warp copies at once when groups are big. */
constexpr int kCopyUnroll = 4;

/* Number of entries of the warp's nondecreasing incl[] that are <= item. */
__device__ __forceinline__ unsigned
warp_upper_bound(uint64_t incl, uint64_t item)
{
	unsigned lo = 0;

#pragma unroll
	for (unsigned s = 16; s > 0; s >>= 1)
	{
		const uint64_t v = __shfl_sync(kFull, incl, lo + s - 1);

		if (v <= item)
			lo += s;
	}
	return lo;
}

/* ---------------------------------------------------------------------
 * Probe kernels
 * ---------------------------------------------------------------------
 */
__device__ __forceinline__ uint64_t
out_count(int kind, uint32_t count)
{
	return gh_out_count((gh_probe_kind) kind, count);
}

template <int G>
__global__ void __launch_bounds__(kBlock, kMinBlocks)
k_count(Table T, const uint64_t *__restrict__ probe, uint64_t n, int kind,
		gh_ctrl *ctrl)
{
	uint64_t sum = 0;

	for_each_batch<G, kProbe>(T, probe, n, nullptr,
							  [&](uint64_t, const auto &ok, const auto &y)
							  {
#pragma unroll
								  for (int b = 0; b < Batch<G>::B; b++)
									  if (ok[b])
										  sum += out_count(kind,
														   group_count(y[b]));
							  });
	block_add(sum, reinterpret_cast<unsigned long long *>(&ctrl->out_cursor));
}

template <int G>
__global__ void __launch_bounds__(kBlock, kMinBlocks)
k_retrieve(Table T, const uint32_t *__restrict__ rows,
		   const uint64_t *__restrict__ probe, uint64_t n, int kind,
		   uint32_t *__restrict__ out_outer, uint32_t *__restrict__ out_inner,
		   uint64_t out_capacity, gh_ctrl *ctrl)
{
	constexpr int B = Batch<G>::B;
	const unsigned lane = lane_id();

	for_each_batch<G, kProbe>(
		T, probe, n, nullptr,
		[&](uint64_t base, const auto &ok, const auto &y)
		{
			uint64_t nout[B];
			uint64_t incl[B];
			uint64_t start[B];
			uint64_t batch_total = 0;

#pragma unroll
			for (int b = 0; b < B; b++)
			{
				nout[b] = ok[b] ? out_count(kind, group_count(y[b])) : 0;
				incl[b] = warp_scan(nout[b]);
				start[b] = batch_total;
				batch_total += __shfl_sync(kFull, incl[b], 31);
			}
			if (batch_total == 0)
				return;

			/* The batch's one reservation in the output. */
			unsigned long long at = 0;

			if (lane == 0)
				at = atomicAdd(
					reinterpret_cast<unsigned long long *>(&ctrl->out_cursor),
					(unsigned long long) batch_total);
			at = __shfl_sync(kFull, at, 0);

			/* First candidates of all B rows, loaded together (independent
			 * random loads in flight) before any store. */
			uint32_t first_row[B];

#pragma unroll
			for (int b = 0; b < B; b++)
				first_row[b] = nout[b] != 0 && group_count(y[b]) != 0
								   ? __ldg(&rows[group_offset(y[b])])
								   : GH_NO_ROW;

#pragma unroll
			for (int b = 0; b < B; b++)
			{
				const uint64_t first = at + start[b];
				const uint32_t outer = (uint32_t) (base + 32 * (uint64_t) b +
												   lane);

				if (__ballot_sync(kFull, nout[b] > 1) == 0)
				{
					/* At most one pair per row: consecutive lanes,
					 * consecutive slots. */
					if (nout[b] != 0)
					{
						const uint64_t pos = first + incl[b] - 1;
						const uint32_t inner = first_row[b];

						if (pos < out_capacity)
						{
							__stcs(&out_outer[pos], outer);
							__stcs(&out_inner[pos], inner);
						}
					}
					continue;
				}

				/* Whole warp copies the groups, kCopyUnroll*32 pairs a step: all
				 * the step's row loads are issued before its stores, or each
				 * step would wait out one memory latency. */
				const uint64_t total = __shfl_sync(kFull, incl[b], 31);

				for (uint64_t i0 = 0; i0 < total; i0 += 32 * kCopyUnroll)
				{
					uint32_t inner[kCopyUnroll];
					uint32_t outer_of[kCopyUnroll];

#pragma unroll
					for (int u = 0; u < kCopyUnroll; u++)
					{
						const uint64_t item = i0 + 32 * u + lane;
						const unsigned seg = warp_upper_bound(
							incl[b], item < total ? item : total - 1);
						const uint64_t seg_first = __shfl_sync(
							kFull, incl[b] - nout[b], seg);
						const uint64_t seg_y = __shfl_sync(kFull, y[b], seg);

						outer_of[u] = (uint32_t) (base + 32 * (uint64_t) b +
												  seg);
						inner[u] = item < total && group_count(seg_y) != 0
									   ? __ldg(&rows[group_offset(seg_y) +
													 (item - seg_first)])
									   : GH_NO_ROW;
					}
#pragma unroll
					for (int u = 0; u < kCopyUnroll; u++)
					{
						const uint64_t item = i0 + 32 * u + lane;
						const uint64_t pos = first + item;

						if (item < total && pos < out_capacity)
						{
							__stcs(&out_outer[pos], outer_of[u]);
							__stcs(&out_inner[pos], inner[u]);
						}
					}
				}
			}
		});
}

/*
 * Mark matched inner rows.  The bit of a group's first row is its claim: the
 * lane that sets it marks the rest of the group (with the whole warp, as in
 * retrieve), every later probe of the group stops at that one bit.
 */
template <int G>
__global__ void __launch_bounds__(kBlock, kMinBlocks)
k_mark(Table T, const uint32_t *__restrict__ rows,
	   const uint64_t *__restrict__ probe, uint64_t n, uint32_t *matched)
{
	const unsigned lane = lane_id();

	for_each_batch<G, kProbe>(
		T, probe, n, nullptr,
		[&](uint64_t, const auto &ok, const auto &y)
		{
#pragma unroll
			for (int b = 0; b < Batch<G>::B; b++)
			{
				const uint32_t count = ok[b] ? group_count(y[b]) : 0;
				uint64_t rest = 0;

				if (count != 0)
				{
					const uint32_t r = __ldg(&rows[group_offset(y[b])]);
					const uint32_t bit = 1u << (r & 31);

					if ((atomicOr(&matched[r >> 5], bit) & bit) == 0)
						rest = count - 1;
				}
				const uint64_t incl = warp_scan(rest);
				const uint64_t total = __shfl_sync(kFull, incl, 31);

				for (uint64_t i0 = 0; i0 < total; i0 += 32)
				{
					const uint64_t item = i0 + lane;
					const unsigned seg = warp_upper_bound(
						incl, item < total ? item : total - 1);
					const uint64_t seg_first = __shfl_sync(kFull, incl - rest,
														   seg);
					const uint64_t seg_y = __shfl_sync(kFull, y[b], seg);

					if (item < total)
					{
						const uint32_t r = __ldg(
							&rows[group_offset(seg_y) + 1 +
								  (item - seg_first)]);

						atomicOr(&matched[r >> 5], 1u << (r & 31));
					}
				}
			}
		});
}

/*
 * cursor_probe runs launch (a with_group launch of a kernel that counts into
 * ctrl->out_cursor) between zeroing the cursor and reading the control block
 * back into *ctrl.
 */
template <typename F>
gh_status
cursor_probe(const gh_mm *mm, uint32_t nprobe, cudaStream_t st, gh_ctrl *ctrl,
			 gh_error *err, F &&launch)
{
	gh_status s;

	GH_CUDA_TRY(
		cudaMemsetAsync(&ctrl_of(mm)->out_cursor, 0, sizeof(uint64_t), st),
		"cudaMemsetAsync");
	if (nprobe > 0 && (s = with_group(mm, err, launch)) != GH_OK)
		return s;
	return read_ctrl(mm, ctrl, st, err);
}

} /* namespace */

extern "C" {

gh_status
mt_probe_count_gpu(const gh_mm *mm, const uint64_t *d_probe, uint32_t nprobe,
				   gh_probe_kind kind, uint64_t *total, void *stream,
				   gh_error *err)
{
	const cudaStream_t st = static_cast<cudaStream_t>(stream);
	gh_ctrl ctrl;
	gh_status s;

	if (!gh_mm_valid(mm) || (nprobe > 0 && d_probe == nullptr) ||
		!gh_kind_valid(kind) || total == nullptr)
		return gh_error_set(err, GH_ERR_INVALID, "mt_probe_count_gpu");
	if ((s = cursor_probe(mm, nprobe, st, &ctrl, err,
						  [&](auto g)
						  {
							  constexpr int G = decltype(g)::value;
							  return launch_rows<G>(
								  "k_count", k_count<G>, nprobe, st, err,
								  make_table(mm), d_probe, (uint64_t) nprobe,
								  (int) kind, ctrl_of(mm));
						  })) != GH_OK)
		return s;
	*total = ctrl.out_cursor;
	return gh_error_set(err, GH_OK, nullptr);
}

gh_status
mt_probe_retrieve_gpu(const gh_mm *mm, const uint64_t *d_probe,
					  uint32_t nprobe, gh_probe_kind kind,
					  uint32_t *d_out_outer, uint32_t *d_out_inner,
					  uint64_t out_capacity, uint64_t *written, void *stream,
					  gh_error *err)
{
	const cudaStream_t st = static_cast<cudaStream_t>(stream);
	gh_ctrl ctrl;
	gh_status s;

	if (written != nullptr)
		*written = 0;
	if (!gh_mm_valid(mm) || (nprobe > 0 && d_probe == nullptr) ||
		!gh_kind_valid(kind) || written == nullptr ||
		(out_capacity > 0 &&
		 (d_out_outer == nullptr || d_out_inner == nullptr)))
		return gh_error_set(err, GH_ERR_INVALID, "mt_probe_retrieve_gpu");
	if ((s = cursor_probe(mm, nprobe, st, &ctrl, err,
						  [&](auto g)
						  {
							  constexpr int G = decltype(g)::value;
							  return launch_rows<G>(
								  "k_retrieve", k_retrieve<G>, nprobe, st, err,
								  make_table(mm),
								  (const uint32_t *) rows_of(mm), d_probe,
								  (uint64_t) nprobe, (int) kind, d_out_outer,
								  d_out_inner, out_capacity, ctrl_of(mm));
						  })) != GH_OK)
		return s;
	/* The cursor counts every pair reserved, written or not. */
	*written = ctrl.out_cursor < out_capacity ? ctrl.out_cursor : out_capacity;
	if (ctrl.out_cursor > out_capacity)
		return gh_error_set(err, GH_ERR_OVERFLOW, "mt_probe_retrieve_gpu");
	return gh_error_set(err, GH_OK, nullptr);
}

gh_status
mt_mark_matched_gpu(const gh_mm *mm, const uint64_t *d_probe, uint32_t nprobe,
					uint32_t *d_matched, void *stream, gh_error *err)
{
	const cudaStream_t st = static_cast<cudaStream_t>(stream);
	gh_status s;

	if (!gh_mm_valid(mm) || (nprobe > 0 && d_probe == nullptr) ||
		(mm->nrows > 0 && d_matched == nullptr))
		return gh_error_set(err, GH_ERR_INVALID, "mt_mark_matched_gpu");
	if (nprobe > 0 && mm->nrows > 0 &&
		(s = with_group(mm, err,
						[&](auto g)
						{
							constexpr int G = decltype(g)::value;
							return launch_rows<G>(
								"k_mark", k_mark<G>, nprobe, st, err,
								make_table(mm), (const uint32_t *) rows_of(mm),
								d_probe, (uint64_t) nprobe, d_matched);
						})) != GH_OK)
		return s;
	return gh_error_set(err, GH_OK, nullptr);
}

} /* extern "C" */
