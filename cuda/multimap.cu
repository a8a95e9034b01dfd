/*
 * multimap.cu
 *     GPU static multimap (64-bit row hash -> 32-bit row index): the kernels
 *     and the extern "C" gh_mm_*_gpu functions of gpuhash_cuda.h.
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
 * group's start).  The build is bound by random DRAM traffic: with repeated
 * hashes the scatter is its largest part (bench/results/multimap-2026-11-21.md),
 * with distinct hashes only the insert is left (multimap-2026-11-22.md).
 *
 * Retrieve: each warp computes its batch's output counts, scans them with
 * shuffles, reserves room for the whole batch with ONE global atomicAdd, and
 * writes each row's pairs contiguously.  The per-row descriptors (offset,
 * count, scan) stay in registers and are read across lanes by shuffles, which
 * is the per-warp staging: rows with at most one pair write straight to
 * consecutive positions, bigger groups are copied by the whole warp, 128
 * pairs per step with all their row loads in flight, so stores are coalesced
 * at any multiplicity.  Retrieve, count and ranges run at the device's random
 * read ceiling.
 *
 * Asynchrony: build, count and retrieve end with a synchronization of the
 * caller's stream (they return numbers); ranges and mark_matched only enqueue
 * work on it.
 *
 * Library code: never prints, exits or throws; every CUDA call and launch is
 * checked and reported through gh_error.
 */
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
/* Steps of 32 pairs that a warp copies at once when groups are big. */
constexpr int kCopyUnroll = 4;

/* Rows per lane per batch: more rows amortize the reservation atomic and add
 * loads in flight; big tiles already have G rounds per batch, and more than
 * 16 unrolled rounds spill under the 64-register cap. */
template <int G>
struct Batch
{
    static constexpr int B = G >= 16 ? 1 : (G == 8 ? 2 : 4);
    static constexpr int ROUNDS = G * B;          /* tile rounds per batch */
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
    kProbe,  /* result: the slot's {count | offset << 32}, 0 if absent */
    kPlace,  /* result: offset | kFlag for a group of one, else the slot index;
              * GH_NO_SLOT if absent */
    kInsert  /* result: the slot index, claimed if absent (| kFlag); GH_NO_SLOT if full */
};

__device__ __forceinline__ uint32_t group_count(uint64_t y)
{
    return (uint32_t) y;
}

__device__ __forceinline__ uint32_t group_offset(uint64_t y)
{
    return (uint32_t) (y >> 32);
}

/* kPlace's result for slot s holding y: a group of one row needs no
 * reservation, its place is known. */
__device__ __forceinline__ uint64_t place_result(uint64_t s, uint64_t y)
{
    return group_count(y) == 1 ? (group_offset(y) | kFlag) : s;
}

/* Window loads.  Probes run on a finished table: read-only path.  The build
 * reads slots that other threads are claiming: L2 (coherent) only. */
template <int MODE>
__device__ __forceinline__ ulonglong2 load_slot(const ulonglong2 *p)
{
    if (MODE == kProbe)
        return __ldg(p);
    return __ldcg(p);
}

__device__ __forceinline__ unsigned lane_id()
{
    return threadIdx.x & 31;
}

/*
 * Resolve one key in a tile: window 0 was already loaded into v.  Returns the
 * mode's result in every lane of the tile.  hash != GH_EMPTY_HASH; row is the
 * key's row, which kInsert writes as the offset of a slot it creates.
 */
template <int G, int MODE>
__device__ __forceinline__ uint64_t resolve(const cg::thread_block_tile<G> &tile,
                                            const Table &T, uint64_t hash, uint32_t row,
                                            gh_seq seq, ulonglong2 v, uint32_t *full)
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
             * ours, so look at the window again. */
            const int f = __ffs(empty) - 1;
            unsigned long long old = 0;

            if (j == (unsigned) f)
                old = atomicCAS(&T.slots[base + f], make_ulonglong2(GH_EMPTY_HASH, 0),
                                make_ulonglong2(hash, 1 | ((uint64_t) row << 32)))
                          .x;
            old = tile.shfl(old, f);
            if (old == GH_EMPTY_HASH)
                return (base + f) | kFlag;
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
__device__ __forceinline__ void warp_lookup(const Table &T, uint64_t base,
                                            const uint64_t (&hash)[Batch<G>::B],
                                            const bool (&ok)[Batch<G>::B],
                                            uint64_t (&res)[Batch<G>::B], uint32_t *full)
{
    constexpr int B = Batch<G>::B;
    constexpr int NT = 32 / G; /* tiles per warp */
    constexpr int ROUNDS = Batch<G>::ROUNDS;
    constexpr int PF = Batch<G>::PF;
    const cg::thread_block_tile<G> tile = cg::tiled_partition<G>(cg::this_thread_block());
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
                    &T.slots[gh_seq_start(kh[q], T.mask + 1, T.scheme).window * G + j]);
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
                        r = place_result(T.capacity, __ldcg(&T.slots[T.capacity]).y);
                    else
                        r = T.capacity;
                }
                else
                {
                    const uint32_t row = (uint32_t) (base + 32 * (uint64_t) b + (k * NT) % 32 + t);

                    /* The sequence is recomputed (a few multiplies) rather
                     * than kept in registers across the prefetch. */
                    r = resolve<G, MODE>(tile, T, kh[q], row,
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
__device__ __forceinline__ uint64_t warp_scan(uint64_t x)
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

/* Number of entries of the warp's nondecreasing incl[] that are <= item. */
__device__ __forceinline__ unsigned warp_upper_bound(uint64_t incl, uint64_t item)
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

/*
 * Every row kernel's frame: the warp walks its batches of 32*B rows (grid
 * stride), loads their hashes coalesced, looks them up in MODE and hands
 * f(base, ok, res) the batch's rows (row base + 32*b + lane) and results.
 * f is called by all 32 lanes; a return from it ends the batch.
 */
template <int G, int MODE, typename F>
__device__ __forceinline__ void for_each_batch(const Table &T, const uint64_t *__restrict__ src,
                                               uint64_t n, uint32_t *full, F &&f)
{
    constexpr int B = Batch<G>::B;
    const uint64_t warp = ((uint64_t) blockIdx.x * blockDim.x + threadIdx.x) / 32;
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
            h[b] = ok[b] ? __ldcs(reinterpret_cast<const unsigned long long *>(src + row)) : 0;
        }
        warp_lookup<G, MODE>(T, base, h, ok, res, full);
        f(base, ok, res);
    }
}

/* Adds every thread's v to *dst with one atomic per block.  Called by all
 * threads of the block. */
__device__ __forceinline__ void block_add(uint64_t v, unsigned long long *dst)
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
 * Build kernels
 * ---------------------------------------------------------------------
 */
__global__ void __launch_bounds__(kBlock) k_init(ulonglong2 *slots, uint64_t nslots, gh_ctrl *ctrl)
{
    const uint64_t stride = (uint64_t) gridDim.x * blockDim.x;

    for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < nslots; i += stride)
        slots[i] = make_ulonglong2(GH_EMPTY_HASH, 0);
    if (blockIdx.x == 0 && threadIdx.x == 0)
    {
        ctrl->placed = 0;
        ctrl->out_cursor = 0;
        ctrl->distinct = 0;
        ctrl->full = 0;
        ctrl->pad = 0; /* read_ctrl copies all 32 bytes (as the CPU twin's memset) */
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
__global__ void __launch_bounds__(kBlock, kMinBlocks) k_insert(Table T, const uint64_t *__restrict__ hashes,
                                                   uint64_t n, gh_ctrl *ctrl)
{
    const unsigned lane = lane_id();
    uint64_t created = 0;

    for_each_batch<G, kInsert>(T, hashes, n, &ctrl->full, [&](uint64_t base, const auto &ok,
                                                               const auto &slot) {
#pragma unroll
        for (int b = 0; b < Batch<G>::B; b++)
        {
            const uint64_t r = ok[b] ? slot[b] : GH_NO_SLOT;
            const bool claimed = r != GH_NO_SLOT && (r & kFlag) != 0;
            const uint64_t s = r == GH_NO_SLOT ? r : (r & ~kFlag);
            const unsigned peers = __match_any_sync(kFull, (unsigned long long) s);
            const unsigned nclaimed = __popc(peers & __ballot_sync(kFull, claimed));
            const unsigned add = __popc(peers) - nclaimed;

            if (s != GH_NO_SLOT && lane == (unsigned) (__ffs(peers) - 1))
            {
                created += nclaimed;
                if (add != 0 &&
                    atomicAdd(reinterpret_cast<unsigned *>(&T.slots[s].y), add) == 0)
                {
                    created++;
                    reinterpret_cast<unsigned *>(&T.slots[s].y)[1] =
                        (uint32_t) (base + 32 * (uint64_t) b + lane);
                }
            }
        }
    });
    block_add(created, reinterpret_cast<unsigned long long *>(&ctrl->distinct));
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

__global__ void __launch_bounds__(kBlock) k_offsets(ulonglong2 *slots, uint64_t nslots, uint64_t n,
                                                    gh_ctrl *ctrl)
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
            block_start = rows ? atomicAdd(reinterpret_cast<unsigned long long *>(&ctrl->placed),
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
                reinterpret_cast<unsigned *>(&slots[i].y)[1] = c[k] == 1 ? end - 1 : end;
            }
        }
        /* warp_rows and block_start are rewritten by the next chunk. */
        __syncthreads();
    }
}

/*
 * Place row indices into their groups.  Every hash distinct: rows[] is the
 * identity, one sequential pass.  Otherwise a row of a group of one goes to
 * the group's start; bigger groups' offsets walk down from the end to the
 * start with one atomicSub per slot per warp.
 */
template <int G>
__global__ void __launch_bounds__(kBlock, kMinBlocks) k_scatter(Table T, const uint64_t *__restrict__ hashes,
                                                    uint64_t n, uint32_t *rows, const gh_ctrl *ctrl)
{
    const unsigned lane = lane_id();

    if (ctrl->distinct == n)
    {
        /* rows is 16-byte aligned (gh_layout.h). */
        const uint64_t tid = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x;
        const uint64_t stride = (uint64_t) gridDim.x * blockDim.x;

        for (uint64_t i = tid; i < n / 4; i += stride)
        {
            const uint32_t r = (uint32_t) (4 * i);

            reinterpret_cast<uint4 *>(rows)[i] = make_uint4(r, r + 1, r + 2, r + 3);
        }
        if (tid < n % 4)
            rows[n / 4 * 4 + tid] = (uint32_t) (n / 4 * 4 + tid);
        return;
    }

    for_each_batch<G, kPlace>(T, hashes, n, nullptr, [&](uint64_t base, const auto &ok,
                                                         const auto &res) {
#pragma unroll
        for (int b = 0; b < Batch<G>::B; b++)
        {
            const uint64_t r = ok[b] ? res[b] : GH_NO_SLOT;
            const bool one = r != GH_NO_SLOT && (r & kFlag) != 0;
            const uint64_t s = one ? GH_NO_SLOT : r;
            const uint32_t row = (uint32_t) (base + 32 * (uint64_t) b + lane);
            const unsigned peers = __match_any_sync(kFull, (unsigned long long) s);
            const int leader = __ffs(peers) - 1;
            const unsigned npeers = __popc(peers);
            const unsigned rank = __popc(peers & ((1u << lane) - 1));
            unsigned end = 0;

            if (one)
                rows[(uint32_t) r] = row;
            if (s != GH_NO_SLOT && lane == (unsigned) leader)
                end = atomicSub(reinterpret_cast<unsigned *>(&T.slots[s].y) + 1, npeers);
            end = __shfl_sync(kFull, end, leader);
            if (s != GH_NO_SLOT)
                rows[end - npeers + rank] = row;
        }
    });
}

/* ---------------------------------------------------------------------
 * Probe kernels
 * ---------------------------------------------------------------------
 */
__device__ __forceinline__ uint64_t out_count(int kind, uint32_t count)
{
    return gh_out_count((gh_probe_kind) kind, count);
}

template <int G>
__global__ void __launch_bounds__(kBlock, kMinBlocks) k_count(Table T, const uint64_t *__restrict__ probe,
                                                  uint64_t n, int kind, gh_ctrl *ctrl)
{
    uint64_t sum = 0;

    for_each_batch<G, kProbe>(T, probe, n, nullptr, [&](uint64_t, const auto &ok, const auto &y) {
#pragma unroll
        for (int b = 0; b < Batch<G>::B; b++)
            if (ok[b])
                sum += out_count(kind, group_count(y[b]));
    });
    block_add(sum, reinterpret_cast<unsigned long long *>(&ctrl->out_cursor));
}

template <int G>
__global__ void __launch_bounds__(kBlock, kMinBlocks) k_retrieve(Table T, const uint32_t *__restrict__ rows,
                                                     const uint64_t *__restrict__ probe,
                                                     uint64_t n, int kind,
                                                     uint32_t *__restrict__ out_outer,
                                                     uint32_t *__restrict__ out_inner,
                                                     uint64_t out_capacity, gh_ctrl *ctrl)
{
    constexpr int B = Batch<G>::B;
    const unsigned lane = lane_id();

    for_each_batch<G, kProbe>(T, probe, n, nullptr, [&](uint64_t base, const auto &ok,
                                                        const auto &y) {
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
            at = atomicAdd(reinterpret_cast<unsigned long long *>(&ctrl->out_cursor),
                           (unsigned long long) batch_total);
        at = __shfl_sync(kFull, at, 0);

        /* First candidates of all B rows, loaded together (independent
         * random loads in flight) before any store. */
        uint32_t first_row[B];

#pragma unroll
        for (int b = 0; b < B; b++)
            first_row[b] = nout[b] != 0 && group_count(y[b]) != 0 ? __ldg(&rows[group_offset(y[b])])
                                                                  : GH_NO_ROW;

#pragma unroll
        for (int b = 0; b < B; b++)
        {
            const uint64_t first = at + start[b];
            const uint32_t outer = (uint32_t) (base + 32 * (uint64_t) b + lane);

            if (__ballot_sync(kFull, nout[b] > 1) == 0)
            {
                /* At most one pair per row: consecutive lanes, consecutive slots. */
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
                    const unsigned seg = warp_upper_bound(incl[b], item < total ? item : total - 1);
                    const uint64_t seg_first = __shfl_sync(kFull, incl[b] - nout[b], seg);
                    const uint64_t seg_y = __shfl_sync(kFull, y[b], seg);

                    outer_of[u] = (uint32_t) (base + 32 * (uint64_t) b + seg);
                    inner[u] = item < total && group_count(seg_y) != 0
                                   ? __ldg(&rows[group_offset(seg_y) + (item - seg_first)])
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

template <int G>
__global__ void __launch_bounds__(kBlock, kMinBlocks) k_ranges(Table T, const uint64_t *__restrict__ probe,
                                                   uint64_t n, uint32_t *__restrict__ first,
                                                   uint32_t *__restrict__ count)
{
    const unsigned lane = lane_id();

    for_each_batch<G, kProbe>(T, probe, n, nullptr, [&](uint64_t base, const auto &ok,
                                                        const auto &y) {
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

/*
 * Mark matched inner rows.  The bit of a group's first row is its claim: the
 * lane that sets it marks the rest of the group (with the whole warp, as in
 * retrieve), every later probe of the group stops at that one bit.
 */
template <int G>
__global__ void __launch_bounds__(kBlock, kMinBlocks) k_mark(Table T, const uint32_t *__restrict__ rows,
                                                 const uint64_t *__restrict__ probe, uint64_t n,
                                                 uint32_t *matched)
{
    const unsigned lane = lane_id();

    for_each_batch<G, kProbe>(T, probe, n, nullptr, [&](uint64_t, const auto &ok, const auto &y) {
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
                const unsigned seg = warp_upper_bound(incl, item < total ? item : total - 1);
                const uint64_t seg_first = __shfl_sync(kFull, incl - rest, seg);
                const uint64_t seg_y = __shfl_sync(kFull, y[b], seg);

                if (item < total)
                {
                    const uint32_t r = __ldg(&rows[group_offset(seg_y) + 1 + (item - seg_first)]);

                    atomicOr(&matched[r >> 5], 1u << (r & 31));
                }
            }
        }
    });
}

/* ---------------------------------------------------------------------
 * Host side
 * ---------------------------------------------------------------------
 */
/* A launch: the kernel, then the launch error, named after the kernel. */
#define GH_LAUNCH(where, kernel, grid, ...)                                                        \
    do                                                                                             \
    {                                                                                              \
        kernel<<<(grid), kBlock, 0, st>>>(__VA_ARGS__);                                            \
        GH_CUDA_LAUNCHED(where);                                                                   \
    } while (0)

/*
 * Blocks for a grid-stride kernel over `units` warp batches: no more than fill
 * the device once (more blocks only add scheduling), and no more than the
 * work.
 */
template <typename K>
gh_status grid_for(K kernel, uint64_t units, int *grid, gh_error *err)
{
    int dev = 0;
    int sms = 0;
    int per_sm = 0;

    GH_CUDA_TRY(cudaGetDevice(&dev), "cudaGetDevice");
    GH_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev),
            "cudaDeviceGetAttribute");
    GH_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kBlock, 0),
            "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    if (per_sm < 1)
        per_sm = 1;
    const uint64_t full = (uint64_t) sms * per_sm;
    const uint64_t blocks = (units + kWarpsPerBlock - 1) / kWarpsPerBlock;

    *grid = (int) (blocks < full ? (blocks ? blocks : 1) : full);
    return GH_OK;
}

Table make_table(const gh_mm *mm)
{
    Table T;

    T.slots = static_cast<ulonglong2 *>(mm->mem);
    T.capacity = mm->capacity;
    T.mask = mm->capacity / (uint64_t) mm->params.group_size - 1;
    T.scheme = mm->params.scheme;
    return T;
}

gh_ctrl *ctrl_of(const gh_mm *mm)
{
    return reinterpret_cast<gh_ctrl *>(static_cast<char *>(mm->mem) + gh_ctrl_offset(mm->capacity));
}

uint32_t *rows_of(const gh_mm *mm)
{
    return reinterpret_cast<uint32_t *>(static_cast<char *>(mm->mem) + gh_rows_offset(mm->capacity));
}

bool mm_valid(const gh_mm *mm)
{
    return mm != nullptr && mm->mem != nullptr && gh_params_valid(&mm->params) &&
           mm->capacity >= (uint64_t) mm->params.group_size &&
           mm->capacity <= GH_MAX_CAPACITY && (mm->capacity & (mm->capacity - 1)) == 0;
}

/* Launches row kernel `kernel` (group size G) over n rows. */
template <int G, typename K, typename... A>
gh_status launch_rows(const char *where, K kernel, uint64_t n, cudaStream_t st, gh_error *err,
                      A... args)
{
    constexpr int B = Batch<G>::B;
    int grid;
    gh_status s;

    if ((s = grid_for(kernel, (n + 32 * B - 1) / (32 * B), &grid, err)) != GH_OK)
        return s;
    GH_LAUNCH(where, kernel, grid, args...);
    return GH_OK;
}

/*
 * Calls f(std::integral_constant<int, G>()) for the table's run-time group
 * size, which picks one of the six instantiations of a kernel.
 */
template <typename F>
gh_status with_group(const gh_mm *mm, gh_error *err, F &&f)
{
    switch (mm->params.group_size)
    {
        case 1: return f(std::integral_constant<int, 1>());
        case 2: return f(std::integral_constant<int, 2>());
        case 4: return f(std::integral_constant<int, 4>());
        case 8: return f(std::integral_constant<int, 8>());
        case 16: return f(std::integral_constant<int, 16>());
        case 32: return f(std::integral_constant<int, 32>());
    }
    return gh_error_set(err, GH_ERR_INVALID, "group_size");
}

template <int G>
gh_status build_g(const gh_mm *mm, const uint64_t *d_hashes, cudaStream_t st, gh_error *err)
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
    if ((s = launch_rows<G>("k_insert", k_insert<G>, n, st, err, T, d_hashes, n, ctrl)) != GH_OK)
        return s;
    if ((s = grid_for(k_offsets, (nslots + kOffsetsChunk - 1) / kOffsetsChunk * kWarpsPerBlock,
                      &grid, err)) != GH_OK)
        return s;
    GH_LAUNCH("k_offsets", k_offsets, grid, T.slots, nslots, n, ctrl);
    return launch_rows<G>("k_scatter", k_scatter<G>, n, st, err, T, d_hashes, n, rows_of(mm),
                          (const gh_ctrl *) ctrl);
}

/* Reads the control block back; the one host synchronization of a call. */
gh_status read_ctrl(const gh_mm *mm, gh_ctrl *out, cudaStream_t st, gh_error *err)
{
    GH_CUDA_TRY(cudaMemcpyAsync(out, ctrl_of(mm), sizeof(gh_ctrl), cudaMemcpyDeviceToHost, st),
            "cudaMemcpyAsync");
    GH_CUDA_TRY(cudaStreamSynchronize(st), "cudaStreamSynchronize");
    return GH_OK;
}

gh_status reset_cursor(const gh_mm *mm, cudaStream_t st, gh_error *err)
{
    GH_CUDA_TRY(cudaMemsetAsync(&ctrl_of(mm)->out_cursor, 0, sizeof(uint64_t), st), "cudaMemsetAsync");
    return GH_OK;
}

} /* namespace */

extern "C" {

gh_status gh_mm_build_gpu_capacity(gh_mm *mm, void *mem, const uint64_t *d_hashes, uint32_t nrows,
                                   const gh_mm_params *params, uint64_t capacity, void *stream,
                                   gh_error *err)
{
    const cudaStream_t st = static_cast<cudaStream_t>(stream);
    gh_ctrl ctrl;
    gh_status s;

    if (mm == nullptr || mem == nullptr || ((uintptr_t) mem & 15) != 0 ||
        !gh_params_valid(params) || nrows > GH_MAX_ROWS || (nrows > 0 && d_hashes == nullptr) ||
        capacity == 0 || capacity > GH_MAX_CAPACITY || (capacity & (capacity - 1)) != 0 ||
        capacity < (uint64_t) params->group_size)
        return gh_error_set(err, GH_ERR_INVALID, "gh_mm_build_gpu");

    mm->mem = mem;
    mm->capacity = capacity;
    mm->nrows = nrows;
    mm->ndistinct = 0;
    mm->params = *params;

    if ((s = with_group(mm, err, [&](auto g) {
             return build_g<decltype(g)::value>(mm, d_hashes, st, err);
         })) != GH_OK)
        return s;
    if ((s = read_ctrl(mm, &ctrl, st, err)) != GH_OK)
        return s;
    if (ctrl.full)
        return gh_error_set(err, GH_ERR_TABLE_FULL, "gh_mm_build_gpu");
    mm->ndistinct = (uint32_t) ctrl.distinct;
    return gh_error_set(err, GH_OK, nullptr);
}

gh_status gh_mm_build_gpu(gh_mm *mm, void *mem, const uint64_t *d_hashes, uint32_t nrows,
                          const gh_mm_params *params, void *stream, gh_error *err)
{
    uint64_t capacity = 0;

    if (nrows <= GH_MAX_ROWS)
        capacity = gh_capacity_for(nrows, params);
    if (capacity == 0)
        return gh_error_set(err, GH_ERR_INVALID, "gh_mm_build_gpu");
    return gh_mm_build_gpu_capacity(mm, mem, d_hashes, nrows, params, capacity, stream, err);
}

gh_status gh_mm_probe_count_gpu(const gh_mm *mm, const uint64_t *d_probe, uint32_t nprobe,
                                gh_probe_kind kind, uint64_t *total, void *stream, gh_error *err)
{
    const cudaStream_t st = static_cast<cudaStream_t>(stream);
    gh_ctrl ctrl;
    gh_status s;

    if (!mm_valid(mm) || (nprobe > 0 && d_probe == nullptr) || !gh_kind_valid(kind) ||
        total == nullptr)
        return gh_error_set(err, GH_ERR_INVALID, "gh_mm_probe_count_gpu");
    if ((s = reset_cursor(mm, st, err)) != GH_OK)
        return s;
    if (nprobe > 0 && (s = with_group(mm, err, [&](auto g) {
                           constexpr int G = decltype(g)::value;
                           return launch_rows<G>("k_count", k_count<G>, nprobe, st, err,
                                                 make_table(mm), d_probe, (uint64_t) nprobe,
                                                 (int) kind, ctrl_of(mm));
                       })) != GH_OK)
        return s;
    if ((s = read_ctrl(mm, &ctrl, st, err)) != GH_OK)
        return s;
    *total = ctrl.out_cursor;
    return gh_error_set(err, GH_OK, nullptr);
}

gh_status gh_mm_probe_retrieve_gpu(const gh_mm *mm, const uint64_t *d_probe, uint32_t nprobe,
                                   gh_probe_kind kind, uint32_t *d_out_outer,
                                   uint32_t *d_out_inner, uint64_t out_capacity,
                                   uint64_t *written, void *stream, gh_error *err)
{
    const cudaStream_t st = static_cast<cudaStream_t>(stream);
    gh_ctrl ctrl;
    gh_status s;

    if (written != nullptr)
        *written = 0;
    if (!mm_valid(mm) || (nprobe > 0 && d_probe == nullptr) || !gh_kind_valid(kind) ||
        written == nullptr ||
        (out_capacity > 0 && (d_out_outer == nullptr || d_out_inner == nullptr)))
        return gh_error_set(err, GH_ERR_INVALID, "gh_mm_probe_retrieve_gpu");
    if ((s = reset_cursor(mm, st, err)) != GH_OK)
        return s;
    if (nprobe > 0 && (s = with_group(mm, err, [&](auto g) {
                           constexpr int G = decltype(g)::value;
                           return launch_rows<G>("k_retrieve", k_retrieve<G>, nprobe, st, err,
                                                 make_table(mm), (const uint32_t *) rows_of(mm),
                                                 d_probe, (uint64_t) nprobe, (int) kind,
                                                 d_out_outer, d_out_inner, out_capacity,
                                                 ctrl_of(mm));
                       })) != GH_OK)
        return s;
    if ((s = read_ctrl(mm, &ctrl, st, err)) != GH_OK)
        return s;
    /* The cursor counts every pair reserved, written or not. */
    *written = ctrl.out_cursor < out_capacity ? ctrl.out_cursor : out_capacity;
    if (ctrl.out_cursor > out_capacity)
        return gh_error_set(err, GH_ERR_OVERFLOW, "gh_mm_probe_retrieve_gpu");
    return gh_error_set(err, GH_OK, nullptr);
}

gh_status gh_mm_probe_ranges_gpu(const gh_mm *mm, const uint64_t *d_probe, uint32_t nprobe,
                                 uint32_t *d_first, uint32_t *d_count, void *stream, gh_error *err)
{
    const cudaStream_t st = static_cast<cudaStream_t>(stream);
    gh_status s;

    if (!mm_valid(mm) ||
        (nprobe > 0 && (d_probe == nullptr || d_first == nullptr || d_count == nullptr)))
        return gh_error_set(err, GH_ERR_INVALID, "gh_mm_probe_ranges_gpu");
    if (nprobe > 0 && (s = with_group(mm, err, [&](auto g) {
                           constexpr int G = decltype(g)::value;
                           return launch_rows<G>("k_ranges", k_ranges<G>, nprobe, st, err,
                                                 make_table(mm), d_probe, (uint64_t) nprobe,
                                                 d_first, d_count);
                       })) != GH_OK)
        return s;
    return gh_error_set(err, GH_OK, nullptr);
}

gh_status gh_mm_mark_matched_gpu(const gh_mm *mm, const uint64_t *d_probe, uint32_t nprobe,
                                 uint32_t *d_matched, void *stream, gh_error *err)
{
    const cudaStream_t st = static_cast<cudaStream_t>(stream);
    gh_status s;

    if (!mm_valid(mm) || (nprobe > 0 && d_probe == nullptr) ||
        (mm->nrows > 0 && d_matched == nullptr))
        return gh_error_set(err, GH_ERR_INVALID, "gh_mm_mark_matched_gpu");
    if (nprobe > 0 && mm->nrows > 0 && (s = with_group(mm, err, [&](auto g) {
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
