/*-------------------------------------------------------------------------
 * aggregate.cu
 *	  GPU kernels of gpuhash_aggregate(): the group-id hash table and the
 *	  per-group accumulators (see gh_aggregate.h for the layout and the order
 *	  in which the host calls these functions).  The device expressions that
 *	  compute columns from columns are devexpr.cu's.
 *
 * Group ids.  The table maps a 64-bit group hash to a dense uint32 id.  One
 * thread per row probes linearly from gh_mix64(hash); the thread whose
 * atomicCAS turns an empty slot into the hash takes the next id from a 64-bit
 * counter and writes it into the slot's id.  Other threads that find the hash
 * would have to wait for that write, so the insert kernel only records each
 * row's slot, and a second kernel, after the first has finished, reads the
 * ids: no thread ever spins on another.  The host keeps the load at most
 * gpuhash.load_factor (at most 0.95, 0.5 by default), so a probe always ends.
 *
 * Exact device keys (gh_agg_assign_exact_gpu) take four kernels, each
 * starting when the previous one has finished, so that no thread waits for
 * another: remember the group count; insert each row's key hash (the thread
 * that creates a group records itself as the group's winner row); resolve
 * ids and let each winner copy its key into the group's representative;
 * compare every row with its representative and list the ones that differ.
 *
 * Accumulation.  Two kernels apply the same per-row update (acc_row):
 *	- few groups (all of their accumulators fit in 48 kB of shared memory):
 *	  each block aggregates its share of the rows into a private copy in
 *	  shared memory, then adds that copy to the global accumulators once.
 *	  With ten groups and 10^8 rows, global atomics would otherwise all hit
 *	  the same few addresses.
 *	- otherwise: global atomics straight into the accumulators, where many
 *	  groups spread the atomics over many addresses.
 * Both use the layout functions of the host (gh_agg_layout), with a layout
 * of ngroups groups for the shared-memory copy.
 *
 * No PostgreSQL headers here.
 *-------------------------------------------------------------------------
 */
#include <cuda_runtime.h>
#include <string.h>

#include "aggregate_impl.h"
#include "gh_error.h"

namespace {

constexpr int kThreads = 256;
constexpr size_t kSharedBudget = 48 * 1024;

__host__ __device__ inline size_t
align16(size_t x)
{
	return (x + 15) & ~(size_t) 15;
}

inline unsigned
grid_for(uint64_t n)
{
	uint64_t b = (n + kThreads - 1) / kThreads;
	if (b == 0)
		b = 1;
	if (b > 0x7fffffff)
		b = 0x7fffffff;
	return (unsigned) b;
}

template <typename T>
__device__ inline T *
arr(char *base, size_t off)
{
	return (T *) (base + off);
}

/* ---- the table ---------------------------------------------------------- */

struct TableView
{
	unsigned long long *keys;
	uint32_t *ids;
	gh_agg_ctrl *ctrl;
	uint64_t mask;
};

__host__ TableView
table_view(void *mem, uint64_t capacity)
{
	TableView t;
	t.keys = (unsigned long long *) mem;
	t.ids = (uint32_t *) ((char *) mem + align16((size_t) capacity * 8));
	t.ctrl = (gh_agg_ctrl *) ((char *) mem +
							  gh_agg_table_ctrl_offset(capacity));
	t.mask = capacity - 1;
	return t;
}

__global__ void
table_init_kernel(TableView t, uint64_t capacity)
{
	for (uint64_t s = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x;
		 s < capacity; s += (uint64_t) gridDim.x * blockDim.x)
		t.keys[s] = GH_AGG_EMPTY;
	if (blockIdx.x == 0 && threadIdx.x == 0)
	{
		/*
		 * every field: the host copies the whole struct back (the CPU twin
		 * memsets it)
		 */
		t.ctrl->ngroups = 0;
		t.ctrl->prev = 0;
		t.ctrl->full = 0;
		t.ctrl->nbad = 0;
	}
}

/*
 * probe_insert returns the slot of h, claiming an empty one if h is absent;
 * *won is set when this thread claimed it.  UINT64_MAX: no free slot.
 */
__device__ uint64_t
probe_insert(const TableView &t, unsigned long long h, bool *won)
{
	uint64_t s = gh_mix64(h) & t.mask;

	*won = false;
	for (uint64_t step = 0; step <= t.mask; step++)
	{
		/* a stale read can only show EMPTY, which the CAS then corrects */
		unsigned long long k = t.keys[s];
		if (k == h)
			return s;
		if (k == GH_AGG_EMPTY)
		{
			unsigned long long old = atomicCAS(
				&t.keys[s], (unsigned long long) GH_AGG_EMPTY, h);
			if (old == GH_AGG_EMPTY)
			{
				*won = true;
				return s;
			}
			if (old == h)
				return s;
		}
		s = (s + 1) & t.mask;
	}
	return UINT64_MAX;
}

/* probe_find returns the slot of h, or UINT64_MAX if h is absent. */
__device__ uint64_t
probe_find(const TableView &t, unsigned long long h)
{
	uint64_t s = gh_mix64(h) & t.mask;

	for (uint64_t step = 0; step <= t.mask; step++)
	{
		unsigned long long k = t.keys[s];
		if (k == h)
			return s;
		if (k == GH_AGG_EMPTY)
			return UINT64_MAX;
		s = (s + 1) & t.mask;
	}
	return UINT64_MAX;
}

/* slots[i] of a row whose key is absent from a frozen table */
constexpr uint32_t kSlotAbsent = UINT32_MAX - 1;

__global__ void
assign_insert_kernel(TableView t, const uint64_t *hashes, uint32_t n,
					 uint32_t *slots)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;

	bool won;
	uint64_t s = probe_insert(t, gh_agg_stored_hash(hashes[i]), &won);
	if (s == UINT64_MAX)
	{
		t.ctrl->full = 1;
		slots[i] = UINT32_MAX;
		return;
	}
	if (won)
		t.ids[s] = (uint32_t) atomicAdd(
			(unsigned long long *) &t.ctrl->ngroups, 1ULL);
	slots[i] = (uint32_t) s;
}

__global__ void
assign_resolve_kernel(TableView t, uint32_t n, uint32_t *ids)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	uint32_t s = ids[i];
	ids[i] = s == UINT32_MAX ? GH_AGG_NO_GROUP : t.ids[s];
}

__global__ void
rehash_kernel(TableView from, uint64_t from_cap, TableView to)
{
	uint64_t s = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x;
	if (s >= from_cap)
		return;
	unsigned long long h = from.keys[s];
	if (h == GH_AGG_EMPTY)
		return;

	bool won;
	uint64_t d = probe_insert(to, h, &won);
	if (d == UINT64_MAX || !won)
	{
		to.ctrl->full = 1; /* a full table, or a duplicate: both impossible */
		return;
	}
	to.ids[d] = from.ids[s];
}

__global__ void
copy_ngroups_kernel(TableView from, TableView to)
{
	to.ctrl->ngroups = from.ctrl->ngroups;
}

/* ---- exact device keys ---------------------------------------------------- */

__global__ void
exact_begin_kernel(TableView t)
{
	t.ctrl->prev = t.ctrl->ngroups;
	t.ctrl->nbad = 0;
}

__device__ inline uint64_t
exact_hash(const gh_agg_keys &k, uint32_t i, uint8_t *mask)
{
	uint8_t m = k.nkeys > 0 ? k.nullmask[i] : 0;
	uint64_t h = gh_agg_key_hash_init(m);
	for (int j = 0; j < k.nkeys; j++)
		h = gh_agg_key_hash_step(h, k.vals[j][i]);
	*mask = m;
	return h;
}

/* slots[i]: row i's slot; winners[id - prev]: the row that created group id */
__global__ void
exact_insert_kernel(TableView t, gh_agg_keys k, uint32_t n, uint32_t *slots,
					uint32_t *winners)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;

	uint8_t mask;
	bool won;
	uint64_t h = gh_agg_stored_hash(exact_hash(k, i, &mask));
	if (k.frozen)
	{
		uint64_t f = probe_find(t, h);
		slots[i] = f == UINT64_MAX ? kSlotAbsent : (uint32_t) f;
		return;
	}
	uint64_t s = probe_insert(t, h, &won);
	if (s == UINT64_MAX)
	{
		t.ctrl->full = 1;
		slots[i] = UINT32_MAX;
		return;
	}
	if (won)
	{
		uint64_t id = atomicAdd((unsigned long long *) &t.ctrl->ngroups, 1ULL);
		t.ids[s] = (uint32_t) id;
		winners[id - t.ctrl->prev] = i;
	}
	slots[i] = (uint32_t) s;
}

__global__ void
exact_resolve_kernel(TableView t, char *acc, gh_agg_layout l, gh_agg_keys k,
					 uint32_t n, const uint32_t *slots,
					 const uint32_t *winners, uint32_t *ids, uint32_t *bad)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	uint32_t s = slots[i];
	if (s == UINT32_MAX)
	{
		ids[i] = GH_AGG_NO_GROUP;
		return;
	}
	if (s == kSlotAbsent)
	{
		ids[i] = GH_AGG_NO_GROUP;
		bad[atomicAdd(&t.ctrl->nbad, 1u)] = i | GH_AGG_BAD_ABSENT;
		return;
	}
	uint32_t g = t.ids[s];
	uint64_t prev = t.ctrl->prev;
	ids[i] = g;
	if (g >= prev && winners[g - prev] == i)
	{
		for (int j = 0; j < k.nkeys; j++)
			arr<unsigned long long>(acc, l.key_off[j])[g] = k.vals[j][i];
		if (k.nkeys > 0)
			arr<uint8_t>(acc, l.knull_off)[g] = k.nullmask[i];
	}
}

__global__ void
exact_verify_kernel(TableView t, char *acc, gh_agg_layout l, gh_agg_keys k,
					uint32_t n, uint32_t *ids, uint32_t *bad)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	uint32_t g = ids[i];
	if (g == GH_AGG_NO_GROUP || k.nkeys == 0)
		return;

	bool same = arr<uint8_t>(acc, l.knull_off)[g] == k.nullmask[i];
	for (int j = 0; same && j < k.nkeys; j++)
		same = arr<unsigned long long>(acc, l.key_off[j])[g] == k.vals[j][i];
	if (!same)
	{
		ids[i] = GH_AGG_NO_GROUP;
		bad[atomicAdd(&t.ctrl->nbad, 1u)] = i;
	}
}

__global__ void
key_from_col_kernel(const int64_t *vals, const uint8_t *valid, uint32_t n,
					int year_len, uint8_t bit, uint64_t *keys, uint8_t *nullmask)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	bool ok = valid[i] != 0;
	keys[i] = ok ? gh_agg_key_word(vals[i], year_len) : 0;
	nullmask[i] = ok ? (uint8_t) (nullmask[i] & ~bit) : (uint8_t) (nullmask[i] | bit);
}

__global__ void
skip_kernel(uint32_t *ids, const uint32_t *rows, uint32_t nrows)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < nrows)
		ids[rows[i]] = GH_AGG_NO_GROUP;
}

/* ---- accumulators ------------------------------------------------------- */

__device__ void
acc_init_group(char *base, const gh_agg_layout &l, uint64_t g)
{
	arr<unsigned long long>(base, l.rows_off)[g] = 0;
	for (int k = 0; k < l.nkeys; k++)
		arr<unsigned long long>(base, l.key_off[k])[g] = 0;
	if (l.nkeys > 0)
		arr<uint8_t>(base, l.knull_off)[g] = 0;
	for (int c = 0; c < l.ncols; c++)
	{
		arr<unsigned long long>(base, l.nonnull_off[c])[g] = 0;
		if (l.ops[c] & GH_AGG_OP_SUM)
		{
			arr<unsigned long long>(base, l.sum_off[c])[g] = 0;
			if (l.kind[c] != GH_AGG_KIND_FLOAT)
				arr<unsigned long long>(base,
										l.sum_off[c])[l.group_cap + g] = 0;
			if (l.aux_off[c])
				arr<uint32_t>(base, l.aux_off[c])[g] = 0;
		}
		bool fl = l.kind[c] == GH_AGG_KIND_FLOAT;
		if (l.ops[c] & GH_AGG_OP_MIN)
			arr<unsigned long long>(base, l.min_off[c])[g] =
				fl ? (unsigned long long) GH_AGG_FKEY_MIN_INIT
				   : (unsigned long long) GH_AGG_INT_MIN_INIT;
		if (l.ops[c] & GH_AGG_OP_MAX)
			arr<unsigned long long>(base, l.max_off[c])[g] =
				fl ? (unsigned long long) GH_AGG_FKEY_MAX_INIT
				   : (unsigned long long) GH_AGG_INT_MAX_INIT;
	}
}

__global__ void
acc_init_kernel(char *base, gh_agg_layout l, uint64_t from, uint64_t to)
{
	for (uint64_t g = from + blockIdx.x * (uint64_t) blockDim.x + threadIdx.x;
		 g < to; g += (uint64_t) gridDim.x * blockDim.x)
		acc_init_group(base, l, g);
}

/* add128 adds v (sign-extended) to the 128-bit (hi, lo) with atomics. */
__device__ inline void
add128(unsigned long long *lo, unsigned long long *hi, long long v)
{
	unsigned long long add = (unsigned long long) v;
	unsigned long long old = atomicAdd(lo, add);
	unsigned long long h = (v < 0 ? ~0ULL : 0ULL) +
						   (old + add < old ? 1ULL : 0ULL);
	if (h)
		atomicAdd(hi, h);
}

/*
 * acc_row adds value i of every column of b to group g of the accumulators
 * at base (global memory, or a block's shared copy).
 */
__device__ void
acc_row(char *base, const gh_agg_layout &l, const gh_agg_batch &b, uint32_t i,
		uint32_t g)
{
	atomicAdd(arr<unsigned long long>(base, l.rows_off) + g, 1ULL);
	for (int c = 0; c < l.ncols; c++)
	{
		/* an expression's input that no aggregate reads accumulates nothing */
		if (!b.valid[c][i] || (l.ops[c] == 0 && l.kind[c] != GH_AGG_KIND_NONE))
			continue;
		atomicAdd(arr<unsigned long long>(base, l.nonnull_off[c]) + g, 1ULL);
		uint8_t ops = l.ops[c];
		if (l.kind[c] == GH_AGG_KIND_FLOAT)
		{
			double v = ((const double *) b.vals[c])[i];
			if (ops & GH_AGG_OP_SUM)
			{
				atomicAdd(arr<double>(base, l.sum_off[c]) + g, v);
				if (v != v)
					atomicOr(arr<unsigned>(base, l.aux_off[c]) + g,
							 (unsigned) GH_AGG_SAW_NAN);
				else if (v - v != 0)
					atomicOr(arr<unsigned>(base, l.aux_off[c]) + g,
							 (unsigned) GH_AGG_SAW_INF);
			}
			unsigned long long key = gh_agg_float_key(v);
			if (ops & GH_AGG_OP_MIN)
				atomicMin(arr<unsigned long long>(base, l.min_off[c]) + g,
						  key);
			if (ops & GH_AGG_OP_MAX)
				atomicMax(arr<unsigned long long>(base, l.max_off[c]) + g,
						  key);
		}
		else if (l.kind[c] != GH_AGG_KIND_NONE)
		{
			long long v = ((const long long *) b.vals[c])[i];
			if (ops & GH_AGG_OP_SUM)
			{
				unsigned long long *lo =
					arr<unsigned long long>(base, l.sum_off[c]) + g;
				unsigned long long *hi = lo + l.group_cap;
				if (l.kind[c] == GH_AGG_KIND_NUMERIC)
				{
					add128(lo, hi, gh_agg_num_m(v));
					unsigned ds = (unsigned) gh_agg_num_dscale(v);
					unsigned *aux = arr<unsigned>(base, l.aux_off[c]) + g;
					if (ds > *(volatile unsigned *) aux)
						atomicMax(aux, ds);
				}
				else
					add128(lo, hi, v);
			}
			if (ops & GH_AGG_OP_MIN)
				atomicMin(arr<long long>(base, l.min_off[c]) + g, v);
			if (ops & GH_AGG_OP_MAX)
				atomicMax(arr<long long>(base, l.max_off[c]) + g, v);
		}
	}
}

__global__ void
accumulate_global_kernel(char *acc, gh_agg_layout l, gh_agg_batch b)
{
	for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < b.n;
		 i += gridDim.x * blockDim.x)
	{
		uint32_t g = b.ids[i];
		if (g != GH_AGG_NO_GROUP)
			acc_row(acc, l, b, i, g);
	}
}

/*
 * flush_extreme folds group g of one min or max array of a block's shared
 * copy into the global one: order keys (unsigned) for FLOAT columns, values
 * (signed) otherwise.
 */
template <typename T>
__device__ inline void
fold_extreme(T *dst, const T *src, bool is_max)
{
	if (is_max)
		atomicMax(dst, *src);
	else
		atomicMin(dst, *src);
}

__device__ inline void
flush_extreme(char *gbase, size_t goff, char *sbase, size_t soff, uint32_t g,
			  bool fl, bool is_max)
{
	if (fl)
		fold_extreme(arr<unsigned long long>(gbase, goff) + g,
					 arr<unsigned long long>(sbase, soff) + g, is_max);
	else
		fold_extreme(arr<long long>(gbase, goff) + g,
					 arr<long long>(sbase, soff) + g, is_max);
}

/*
 * flush_group adds group g of a block's shared copy (layout sl) to the
 * global accumulators (layout gl).  Only called for groups the block saw.
 */
__device__ void
flush_group(char *gbase, const gh_agg_layout &gl, char *sbase,
			const gh_agg_layout &sl, uint32_t g)
{
	atomicAdd(arr<unsigned long long>(gbase, gl.rows_off) + g,
			  arr<unsigned long long>(sbase, sl.rows_off)[g]);
	for (int c = 0; c < gl.ncols; c++)
	{
		unsigned long long nn = arr<unsigned long long>(sbase,
														sl.nonnull_off[c])[g];
		if (nn == 0)
			continue;
		atomicAdd(arr<unsigned long long>(gbase, gl.nonnull_off[c]) + g, nn);
		uint8_t ops = gl.ops[c];
		if (ops & GH_AGG_OP_SUM)
		{
			if (gl.kind[c] == GH_AGG_KIND_FLOAT)
			{
				atomicAdd(arr<double>(gbase, gl.sum_off[c]) + g,
						  arr<double>(sbase, sl.sum_off[c])[g]);
				unsigned f = arr<unsigned>(sbase, sl.aux_off[c])[g];
				if (f)
					atomicOr(arr<unsigned>(gbase, gl.aux_off[c]) + g, f);
			}
			else
			{
				unsigned long long slo = arr<unsigned long long>(
					sbase, sl.sum_off[c])[g];
				unsigned long long shi = arr<unsigned long long>(
					sbase, sl.sum_off[c])[sl.group_cap + g];
				unsigned long long *lo =
					arr<unsigned long long>(gbase, gl.sum_off[c]) + g;
				unsigned long long old = atomicAdd(lo, slo);
				unsigned long long h = shi + (old + slo < old ? 1ULL : 0ULL);
				if (h)
					atomicAdd(lo + gl.group_cap, h);
				if (gl.kind[c] == GH_AGG_KIND_NUMERIC)
					atomicMax(arr<unsigned>(gbase, gl.aux_off[c]) + g,
							  arr<unsigned>(sbase, sl.aux_off[c])[g]);
			}
		}
		if (ops & GH_AGG_OP_MIN)
			flush_extreme(gbase, gl.min_off[c], sbase, sl.min_off[c], g,
						  gl.kind[c] == GH_AGG_KIND_FLOAT, false);
		if (ops & GH_AGG_OP_MAX)
			flush_extreme(gbase, gl.max_off[c], sbase, sl.max_off[c], g,
						  gl.kind[c] == GH_AGG_KIND_FLOAT, true);
	}
}

__global__ void
accumulate_shared_kernel(char *acc, gh_agg_layout gl, gh_agg_layout sl,
						 uint32_t ngroups, gh_agg_batch b)
{
	extern __shared__ __align__(16) char smem[];

	for (uint32_t g = threadIdx.x; g < ngroups; g += blockDim.x)
		acc_init_group(smem, sl, g);
	__syncthreads();
	for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < b.n;
		 i += gridDim.x * blockDim.x)
	{
		uint32_t g = b.ids[i];
		if (g != GH_AGG_NO_GROUP)
			acc_row(smem, sl, b, i, g);
	}
	__syncthreads();
	for (uint32_t g = threadIdx.x; g < ngroups; g += blockDim.x)
		if (arr<unsigned long long>(smem, sl.rows_off)[g] != 0)
			flush_group(acc, gl, smem, sl, g);
}

} // namespace

/* ---- the C API ------------------------------------------------------------ */

extern "C" gh_status
gh_agg_table_init_gpu(void *mem, uint64_t capacity, void *stream,
					  gh_error *err)
{
	cudaStream_t s = (cudaStream_t) stream;
	table_init_kernel<<<grid_for(capacity < 1048576 ? capacity : 1048576),
						kThreads, 0, s>>>(table_view(mem, capacity), capacity);
	GH_CUDA_LAUNCHED("table_init_kernel");
	return GH_OK;
}

extern "C" gh_status
gh_agg_table_rehash_gpu(const void *old_mem, uint64_t old_cap, void *new_mem,
						uint64_t new_cap, void *stream, gh_error *err)
{
	cudaStream_t s = (cudaStream_t) stream;
	TableView from = table_view((void *) old_mem, old_cap);
	TableView to = table_view(new_mem, new_cap);

	rehash_kernel<<<grid_for(old_cap), kThreads, 0, s>>>(from, old_cap, to);
	GH_CUDA_LAUNCHED("rehash_kernel");
	copy_ngroups_kernel<<<1, 1, 0, s>>>(from, to);
	GH_CUDA_LAUNCHED("copy_ngroups_kernel");
	return GH_OK;
}

extern "C" gh_status
gh_agg_assign_gpu(void *mem, uint64_t capacity, const uint64_t *hashes,
				  uint32_t n, uint32_t *ids, void *stream, gh_error *err)
{
	cudaStream_t s = (cudaStream_t) stream;
	TableView t = table_view(mem, capacity);

	if (n == 0)
		return GH_OK;
	assign_insert_kernel<<<grid_for(n), kThreads, 0, s>>>(t, hashes, n, ids);
	GH_CUDA_LAUNCHED("assign_insert_kernel");
	assign_resolve_kernel<<<grid_for(n), kThreads, 0, s>>>(t, n, ids);
	GH_CUDA_LAUNCHED("assign_resolve_kernel");
	return GH_OK;
}

extern "C" gh_status
gh_agg_assign_exact_gpu(void *mem, uint64_t capacity, void *acc,
						const gh_agg_layout *l, const gh_agg_keys *k,
						uint32_t n, uint32_t *ids, uint32_t *scratch,
						uint32_t *bad, void *stream, gh_error *err)
{
	cudaStream_t s = (cudaStream_t) stream;
	TableView t = table_view(mem, capacity);

	exact_begin_kernel<<<1, 1, 0, s>>>(t);
	GH_CUDA_LAUNCHED("exact_begin_kernel");
	if (n == 0)
		return GH_OK;
	exact_insert_kernel<<<grid_for(n), kThreads, 0, s>>>(t, *k, n, scratch,
														 scratch + n);
	GH_CUDA_LAUNCHED("exact_insert_kernel");
	exact_resolve_kernel<<<grid_for(n), kThreads, 0, s>>>(
		t, (char *) acc, *l, *k, n, scratch, scratch + n, ids, bad);
	GH_CUDA_LAUNCHED("exact_resolve_kernel");
	exact_verify_kernel<<<grid_for(n), kThreads, 0, s>>>(t, (char *) acc, *l,
														 *k, n, ids, bad);
	GH_CUDA_LAUNCHED("exact_verify_kernel");
	return GH_OK;
}

extern "C" gh_status
gh_agg_key_from_col_gpu(const int64_t *vals, const uint8_t *valid, uint32_t n,
						int year_len, uint8_t bit, uint64_t *keys,
						uint8_t *nullmask, void *stream, gh_error *err)
{
	if (n == 0)
		return GH_OK;
	key_from_col_kernel<<<grid_for(n), kThreads, 0, (cudaStream_t) stream>>>(
		vals, valid, n, year_len, bit, keys, nullmask);
	GH_CUDA_LAUNCHED("key_from_col_kernel");
	return GH_OK;
}

extern "C" gh_status
gh_agg_skip_gpu(uint32_t *ids, const uint32_t *rows, uint32_t nrows,
				void *stream, gh_error *err)
{
	if (nrows == 0)
		return GH_OK;
	skip_kernel<<<grid_for(nrows), kThreads, 0, (cudaStream_t) stream>>>(
		ids, rows, nrows);
	GH_CUDA_LAUNCHED("skip_kernel");
	return GH_OK;
}

extern "C" gh_status
gh_agg_acc_init_gpu(void *acc, const gh_agg_layout *l, uint64_t from,
					uint64_t to, void *stream, gh_error *err)
{
	if (to <= from)
		return GH_OK;
	uint64_t n = to - from;
	acc_init_kernel<<<grid_for(n < 1048576 ? n : 1048576), kThreads, 0,
					  (cudaStream_t) stream>>>((char *) acc, *l, from, to);
	GH_CUDA_LAUNCHED("acc_init_kernel");
	return GH_OK;
}

extern "C" gh_status
gh_agg_acc_move_gpu(void *dst, const gh_agg_layout *dl, const void *src,
					const gh_agg_layout *sl, uint64_t ngroups, void *stream,
					gh_error *err)
{
	cudaStream_t s = (cudaStream_t) stream;
	size_t n8 = (size_t) ngroups * 8;
	char *d = (char *) dst;
	const char *r = (const char *) src;

#define MOVE(doff, soff, bytes)                                  \
	GH_CUDA_TRY(cudaMemcpyAsync(d + (doff), r + (soff), (bytes), \
								cudaMemcpyDeviceToDevice, s),    \
				"cudaMemcpyAsync")
	if (ngroups == 0)
		return GH_OK;
	MOVE(dl->rows_off, sl->rows_off, n8);
	for (int k = 0; k < dl->nkeys; k++)
		MOVE(dl->key_off[k], sl->key_off[k], n8);
	if (dl->nkeys > 0)
		MOVE(dl->knull_off, sl->knull_off, (size_t) ngroups);
	for (int c = 0; c < dl->ncols; c++)
	{
		MOVE(dl->nonnull_off[c], sl->nonnull_off[c], n8);
		if (dl->ops[c] & GH_AGG_OP_SUM)
		{
			MOVE(dl->sum_off[c], sl->sum_off[c], n8);
			if (dl->kind[c] != GH_AGG_KIND_FLOAT)
				MOVE(dl->sum_off[c] + dl->group_cap * 8,
					 sl->sum_off[c] + sl->group_cap * 8, n8);
			if (dl->aux_off[c])
				MOVE(dl->aux_off[c], sl->aux_off[c], (size_t) ngroups * 4);
		}
		if (dl->ops[c] & GH_AGG_OP_MIN)
			MOVE(dl->min_off[c], sl->min_off[c], n8);
		if (dl->ops[c] & GH_AGG_OP_MAX)
			MOVE(dl->max_off[c], sl->max_off[c], n8);
	}
#undef MOVE
	return GH_OK;
}

extern "C" gh_status
gh_agg_accumulate_gpu(void *acc, const gh_agg_layout *l, uint64_t ngroups,
					  const gh_agg_batch *b, void *stream, gh_error *err)
{
	cudaStream_t s = (cudaStream_t) stream;
	gh_agg_layout sl;

	if (b->n == 0 || ngroups == 0)
		return GH_OK;
	/* the shared copy needs no keys: only the global one holds them */
	gh_agg_layout_init(&sl, l->ncols, l->kind, l->ops, 0, ngroups);
	if (sl.bytes <= kSharedBudget)
	{
		static int nblocks = 0;
		if (nblocks == 0)
		{
			int dev = 0, sms = 0;
			GH_CUDA_TRY(cudaGetDevice(&dev), "cudaGetDevice");
			GH_CUDA_TRY(cudaDeviceGetAttribute(
							&sms, cudaDevAttrMultiProcessorCount, dev),
						"cudaDeviceGetAttribute");
			nblocks = sms * 4;
		}
		/* enough rows per block that the flush is a small part of the work */
		unsigned grid = grid_for(b->n / 16);
		if (grid > (unsigned) nblocks)
			grid = (unsigned) nblocks;
		accumulate_shared_kernel<<<grid, kThreads, sl.bytes, s>>>(
			(char *) acc, *l, sl, (uint32_t) ngroups, *b);
		GH_CUDA_LAUNCHED("accumulate_shared_kernel");
		return GH_OK;
	}
	accumulate_global_kernel<<<grid_for(b->n), kThreads, 0, s>>>((char *) acc,
																 *l, *b);
	GH_CUDA_LAUNCHED("accumulate_global_kernel");
	return GH_OK;
}
