/*-------------------------------------------------------------------------
 * gh_layout.h
 *	  Memory layout and probe sequence of the static multimap, shared by the
 *	  GPU kernels (multimap.cu, multimap_warp.cuh) and the CPU twin
 *	  (multimap_cpu.c).
 *
 * Design.  The table is hash-grouped: one 16-byte slot per *distinct* 64-bit
 * hash, {hash, count, offset}, and the inner row indices grouped by hash in a
 * row array after the slots: the rows of slot s are rows[offset, offset+count).
 * Grouping keeps probing linear in the input even when millions of rows share
 * one hash, and makes "the candidates of one outer row are contiguous" free.
 *
 * One allocation, in this order:
 *	  gh_slot slots[capacity]    open addressing, empty iff hash == EMPTY
 *	  gh_slot sentinel           the group of the hash equal to GH_EMPTY_HASH
 *	  gh_ctrl ctrl               32 bytes of device-side counters and flags
 *	  uint32  rows[nrows]
 * The extra sentinel slot is what lets every 64-bit value be a real hash:
 * a row whose hash is GH_EMPTY_HASH never enters the open-addressing part.
 *
 * The order of the groups in rows[] is the builder's choice (the GPU's is not
 * even deterministic), with one exception both builders keep: when every
 * hash is distinct, the group of row i is rows[i, i+1), i.e. offset = i and
 * rows[] is the identity.  The inner side of a key join usually has unique
 * keys, and then the build needs no offsets pass and no scatter: the row
 * that creates a slot writes its own index as the offset (the GPU in the
 * claiming CAS), and rows[] is written in one sequential pass.
 *
 * Probing works on windows of G adjacent slots (G = group size): window w is
 * slots[w*G, w*G+G).  The sequence of windows starts at a window taken from a
 * strong 64-bit mix of the hash (gh_mix64) and moves by +1 window (linear)
 * or by an odd step taken from other bits of the mix (double hashing), modulo
 * the power-of-two number of windows, for at most nwindows steps.  An insert puts a new
 * hash in the first empty slot of the first window that has one; a lookup
 * stops at the first window that holds the hash or an empty slot.  Both sides
 * must use exactly these functions so that a table built by one can be probed
 * by the other.
 *
 * Plain C99 for gcc (PostgreSQL's CFLAGS) and C++17 for nvcc.
 *-------------------------------------------------------------------------
 */
#ifndef GH_LAYOUT_H
#define GH_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "gh_hash.h"
#include "gpuhash_cuda.h"

/* The empty-slot marker; its own hash value lives in the sentinel slot. */
#define GH_EMPTY_HASH UINT64_MAX

/* Returned by lookups that find nothing. */
#define GH_NO_SLOT UINT64_MAX

/* Largest capacity gh_mm_bytes accepts (16 TiB of slots): beyond any device. */
#define GH_MAX_CAPACITY ((uint64_t) 1 << 40)

typedef struct gh_slot
{
	uint64_t hash;	 /* GH_EMPTY_HASH: empty (regular slots only) */
	uint32_t count;	 /* rows with this hash */
	uint32_t offset; /* first row of the group in rows[] (after the build) */
} __attribute__((aligned(16))) gh_slot;

/*
 * Device-side scratch of the GPU functions.  The build uses placed, distinct
 * and full; the tests' count and retrieve probes (test/cuda/mm_probes_gpu.cu)
 * use out_cursor, so two of those must not run at the same time on one table
 * (they synchronize before returning, so calls from one host thread never
 * do).  The CPU twin leaves it zero.
 */
typedef struct gh_ctrl
{
	uint64_t placed;	 /* rows given an offset (when some hash repeats) */
	uint64_t out_cursor; /* pairs reserved (retrieve) or counted (count) */
	uint64_t distinct;	 /* slots created by the insert: distinct hashes */
	uint32_t full;		 /* nonzero: some insert ran out of probe steps */
	uint32_t pad;
} gh_ctrl;

#ifndef __cplusplus
typedef char gh_slot_is_16_bytes[sizeof(gh_slot) == 16 ? 1 : -1];
typedef char gh_ctrl_is_32_bytes[sizeof(gh_ctrl) == 32 ? 1 : -1];
#else
static_assert(sizeof(gh_slot) == 16, "gh_slot must be 16 bytes");
static_assert(sizeof(gh_ctrl) == 32, "gh_ctrl must be 32 bytes");
#endif

/* Byte offsets inside the single allocation. */
GH_HD size_t
gh_ctrl_offset(uint64_t capacity)
{
	return (size_t) (capacity + 1) * sizeof(gh_slot);
}

GH_HD size_t
gh_rows_offset(uint64_t capacity)
{
	return gh_ctrl_offset(capacity) + sizeof(gh_ctrl);
}

GH_HD size_t
gh_total_bytes(uint64_t capacity, uint32_t nrows)
{
	size_t bytes = gh_rows_offset(capacity) +
				   (size_t) nrows * sizeof(uint32_t);

	/* Round up so that arrays placed after the table stay 16-byte aligned. */
	return (bytes + 15) & ~(size_t) 15;
}

GH_HD int
gh_group_size_valid(int g)
{
	return g == 1 || g == 2 || g == 4 || g == 8 || g == 16 || g == 32;
}

GH_HD int
gh_params_valid(const gh_mm_params *p)
{
	return p != NULL && p->load_factor > 0.0 && p->load_factor <= 0.95 &&
		   gh_group_size_valid(p->group_size) &&
		   (p->scheme == GH_PROBE_LINEAR || p->scheme == GH_PROBE_DOUBLE);
}

/*
 * Slots for nrows rows: the smallest power of two >= nrows / load_factor and
 * >= the group size.  Since load_factor <= 0.95 this is > nrows, so a valid
 * table always has an empty slot and a lookup always terminates early.
 * Returns 0 for invalid parameters or an absurd size (more than GH_MAX_ROWS
 * rows, or more than GH_MAX_CAPACITY slots).
 */
GH_HD uint64_t
gh_capacity_for(uint32_t nrows, const gh_mm_params *p)
{
	double want;
	uint64_t need;
	uint64_t cap;

	if (nrows > GH_MAX_ROWS || !gh_params_valid(p))
		return 0;
	want = (double) nrows / p->load_factor;
	if (want > (double) GH_MAX_CAPACITY)
		return 0;
	need = (uint64_t) want;
	if ((double) need < want)
		need++;
	cap = (uint64_t) p->group_size;
	while (cap < need)
		cap <<= 1;
	return cap;
}

/* A table's capacity: a power of two, at least one window, not absurd. */
GH_HD int
gh_capacity_valid(uint64_t capacity, int group_size)
{
	return capacity != 0 && capacity <= GH_MAX_CAPACITY &&
		   (capacity & (capacity - 1)) == 0 &&
		   capacity >= (uint64_t) group_size;
}

/* gh_mm_valid says whether mm can be probed: what a build leaves behind. */
GH_HD int
gh_mm_valid(const gh_mm *mm)
{
	return mm != NULL && mm->mem != NULL && gh_params_valid(&mm->params) &&
		   gh_capacity_valid(mm->capacity, mm->params.group_size);
}

/*
 * gh_build_start checks the arguments of a build of nrows rows into mem (16-
 * byte aligned) at the given capacity and, when they are valid, fills every
 * field of mm but ndistinct, which the build sets.  Both builders start with
 * it, so that they accept and refuse the same calls.
 */
GH_HD int
gh_build_start(gh_mm *mm, void *mem, const uint64_t *hashes, uint32_t nrows,
			   const gh_mm_params *params, uint64_t capacity)
{
	if (mm == NULL || mem == NULL || ((uintptr_t) mem & 15) != 0 ||
		!gh_params_valid(params) || nrows > GH_MAX_ROWS ||
		(nrows > 0 && hashes == NULL) ||
		!gh_capacity_valid(capacity, params->group_size))
		return 0;
	mm->mem = mem;
	mm->capacity = capacity;
	mm->nrows = nrows;
	mm->ndistinct = 0;
	mm->params = *params;
	return 1;
}

typedef struct gh_seq
{
	uint64_t window; /* current window */
	uint64_t step;	 /* windows to move each step: 1, or odd for double */
	uint64_t mask;	 /* nwindows - 1 */
} gh_seq;

/*
 * The start of the sequence.  The start window comes from the low bits of
 * the mix and the double-hashing step from its high bits, so two hashes with
 * the same start window still part ways.  An odd step is coprime with the
 * power-of-two window count, so the sequence visits every window once.
 */
GH_HD gh_seq
gh_seq_start(uint64_t hash, uint64_t nwindows, int scheme)
{
	gh_seq s;
	uint64_t m = gh_mix64(hash);

	s.mask = nwindows - 1;
	s.window = m & s.mask;
	s.step = scheme == GH_PROBE_DOUBLE ? (((m >> 32) | 1) & s.mask) : 1;
	/* With one window the step is irrelevant; keep it well defined. */
	if (s.mask == 0)
		s.step = 0;
	return s;
}

GH_HD uint64_t
gh_seq_next_window(const gh_seq *s)
{
	return (s->window + s->step) & s->mask;
}

/*
 * Internal entry points for the unit tests: build into a table of a given
 * capacity (a power of two >= group size), which may be too small on purpose
 * to reach GH_ERR_TABLE_FULL.  mem must hold gh_total_bytes(capacity, nrows).
 */
#ifdef __cplusplus
extern "C" {
#endif
gh_status gh_mm_build_cpu_capacity(gh_mm *mm, void *mem,
								   const uint64_t *hashes, uint32_t nrows,
								   const gh_mm_params *params,
								   uint64_t capacity, gh_error *err);
gh_status gh_mm_build_gpu_capacity(gh_mm *mm, void *mem,
								   const uint64_t *d_hashes, uint32_t nrows,
								   const gh_mm_params *params,
								   uint64_t capacity, void *stream,
								   gh_error *err);
#ifdef __cplusplus
}
#endif

#endif /* GH_LAYOUT_H */
