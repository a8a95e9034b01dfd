/*-------------------------------------------------------------------------
 * gh_aggregate.h
 *	  The C API of gpuhash_aggregate()'s device code: a hash table that gives
 *	  every 64-bit group hash a dense group id, and per-group accumulators.
 *
 * Same conventions as gpuhash_cuda.h: plain C, status codes, never throws,
 * never calls PostgreSQL, the caller owns every allocation and passes the
 * stream.  The *_gpu functions run kernels (cuda/aggregate.cu); the *_cpu
 * functions are the CPU twin (cuda/aggregate_cpu.c) with the same table
 * layout, the same probe sequence and the same accumulator layout, so that
 * gpuhash.device = cpu runs exactly the host code that a GPU run does.
 * This header is what src/ calls; what only the kernels and the twin share
 * is in aggregate_impl.h, the value encodings in gh_values.h, and the
 * device expressions that compute columns from other columns in
 * gh_devexpr.h.
 *
 * The design, in the order a batch of input rows meets it:
 *
 *	1. gh_agg_assign_*: every row's group hash is inserted into (or found in)
 *	   an open-addressing table of 64-bit hashes; the first insertion of a hash
 *	   takes the next dense group id from a counter.  Each row gets its group
 *	   id.  The table only knows hashes: the host then checks every row's key
 *	   against its group's representative key, because two different keys can
 *	   share a hash.
 *	2. gh_agg_skip_*: rows whose key did not match are taken out of the
 *	   batch (their id becomes GH_AGG_NO_GROUP); the host aggregates them in
 *	   an exact CPU table keyed by the whole key.
 *	3. gh_agg_accumulate_*: every remaining row adds itself to its group's
 *	   accumulators with atomics.
 *
 * Accumulators are a structure of arrays indexed by group id, in one
 * allocation described by gh_agg_layout.  Per input column (one aggregate
 * argument, shared by every aggregate that uses it):
 *	nonnull		uint64		rows whose value is not NULL (count(x), avg)
 *	sum			INT, NUMERIC: 128-bit two's complement as uint64 lo[] and
 *				int64 hi[]; FLOAT: double
 *	aux			FLOAT: uint32 flags (GH_AGG_SAW_INF, GH_AGG_SAW_NAN);
 *				NUMERIC: uint32 largest display scale seen
 *	min, max	INT: int64; FLOAT: uint64 order key (gh_agg_float_key);
 *				NUMERIC: int64 packed value (gh_agg_num_pack)
 * plus one uint64 rows[] for count(*).  A column with values and no ops (the
 * input of a device expression that no aggregate reads) accumulates nothing.
 * Sums are exact in 128 bits however the atomics interleave
 * (aggregate_impl.h).
 *
 * Exact device keys.  When every group key is a by-value type whose equality
 * is equality of the value's bits (integers, dates, timestamps, bool, oid),
 * the host sends the keys' Datum bits and a NULL mask instead of a hash, and
 * gh_agg_assign_exact_* does everything on the device: it hashes the key,
 * assigns ids, stores each new group's key as its representative (in the
 * accumulators' key arrays), checks every row against its representative
 * and lists the rows that differ (true hash collisions) for the host.  The
 * host then handles no row at all unless it collided.
 *
 * NUMERIC values travel as fixed point (gh_values.h): the host scales every
 * value of a column to one scale S (the largest display scale seen so far)
 * and packs it with its own display scale; sums use the scaled integers and
 * the largest display scale.  Values that do not fit never reach the
 * device: the host aggregates them.
 *-------------------------------------------------------------------------
 */
#ifndef GH_AGGREGATE_H
#define GH_AGGREGATE_H

#include <stddef.h>
#include <stdint.h>

#include "gh_hash.h"
#include "gh_values.h"
#include "gpuhash_cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most input columns (distinct aggregate arguments) of one aggregation. */
#define GH_AGG_MAX_COLS 32

/* Most keys of the exact device-key path (one bit each in the NULL mask). */
#define GH_AGG_MAX_KEYS 8

/* A row taken out of the device aggregation, and "no group yet". */
#define GH_AGG_NO_GROUP UINT32_MAX

/* Most groups one table can number: ids are uint32, one is reserved. */
#define GH_AGG_MAX_GROUPS ((uint64_t) UINT32_MAX - 1)

/* Empty table slot; a real hash equal to it is stored as GH_AGG_EMPTY - 1. */
#define GH_AGG_EMPTY UINT64_MAX

/* Value kinds of an input column. */
typedef enum gh_agg_kind
{
	GH_AGG_KIND_NONE = 0, /* only NULL or not: count(x) of any type */
	GH_AGG_KIND_INT,	  /* int64 */
	GH_AGG_KIND_FLOAT,	  /* double */
	GH_AGG_KIND_NUMERIC	  /* packed fixed point, see above */
} gh_agg_kind;

/*
 * What is accumulated for an input column: its non-NULL count where an
 * aggregate reads it (COUNT, which every aggregate of the column sets), and
 * the sums and extremes.  A column no aggregate reads (ops 0: an input of a
 * device expression only) accumulates nothing; a KIND_NONE column (count(x)
 * only) its count alone, whatever its ops.
 */
#define GH_AGG_OP_SUM 0x01
#define GH_AGG_OP_MIN 0x02
#define GH_AGG_OP_MAX 0x04
#define GH_AGG_OP_COUNT 0x08

/* Bits of the FLOAT aux word. */
#define GH_AGG_SAW_INF 0x01
#define GH_AGG_SAW_NAN 0x02

/* "No value yet" of an INT column's min and max arrays. */
#define GH_AGG_INT_MIN_INIT	 INT64_MAX
#define GH_AGG_INT_MAX_INIT	 INT64_MIN

/*
 * Where each accumulator array lives inside one allocation of `bytes` bytes
 * for group_cap groups.  Offsets of arrays a column does not have are 0.
 */
typedef struct gh_agg_layout
{
	int ncols;
	int nkeys; /* exact device keys, else 0 */
	uint8_t kind[GH_AGG_MAX_COLS];
	uint8_t ops[GH_AGG_MAX_COLS];
	uint64_t group_cap;
	size_t bytes;
	size_t rows_off;
	size_t key_off[GH_AGG_MAX_KEYS]; /* uint64 representative key */
	size_t knull_off; /* uint8 NULL mask of the representative */
	size_t nonnull_off[GH_AGG_MAX_COLS];
	size_t sum_off[GH_AGG_MAX_COLS]; /* lo[]; hi[] follows for INT/NUMERIC */
	size_t aux_off[GH_AGG_MAX_COLS];
	size_t min_off[GH_AGG_MAX_COLS];
	size_t max_off[GH_AGG_MAX_COLS];
} gh_agg_layout;

/*
 * One batch of input rows as the accumulate step sees it.  All pointers are
 * on the target (device memory for *_gpu).  vals[c] holds n int64, double or
 * packed numeric values (NULL for KIND_NONE); valid[c][i] is 1 where row i's
 * value is to be aggregated on the device.
 */
typedef struct gh_agg_batch
{
	uint32_t n;
	const uint32_t *ids;
	const void *vals[GH_AGG_MAX_COLS];
	const uint8_t *valid[GH_AGG_MAX_COLS];
} gh_agg_batch;

/*
 * The keys of a batch for the exact path, on the target: vals[k][i] is the
 * Datum of key k of row i (0 if NULL), nullmask[i] has bit k set if it is
 * NULL.
 */
typedef struct gh_agg_keys
{
	int nkeys;
	const uint64_t *vals[GH_AGG_MAX_KEYS];
	const uint8_t *nullmask;
	int frozen; /* no new group: see gh_agg_assign_exact_* */
} gh_agg_keys;

/*
 * In bad[] of a frozen gh_agg_assign_exact_*, a row whose key has no group
 * (rather than a group whose representative differs) has this bit set.
 */
#define GH_AGG_BAD_ABSENT 0x80000000u

/*
 * Fills l for ncols columns of the given kinds and ops, nkeys exact device
 * keys (0 when the host keeps the representatives) and group_cap groups.
 */
void gh_agg_layout_init(gh_agg_layout *l, int ncols, const uint8_t *kind,
						const uint8_t *ops, int nkeys, uint64_t group_cap);

/*
 * The hash table: one allocation of gh_agg_table_bytes(capacity) bytes holding
 * uint64 keys[capacity], uint32 ids[capacity] and a gh_agg_ctrl.  capacity is
 * a power of two; the caller keeps the number of groups at most half of it
 * (gpuhash.load_factor), which bounds every probe.
 */
typedef struct gh_agg_ctrl
{
	uint64_t ngroups; /* ids handed out */
	uint64_t prev;	  /* ngroups before the current batch (exact) */
	uint32_t full;	  /* nonzero: an insert found no free slot */
	uint32_t nbad;	  /* rows listed in bad[] (exact) */
} gh_agg_ctrl;

size_t gh_agg_table_bytes(uint64_t capacity);
size_t gh_agg_table_ctrl_offset(uint64_t capacity);

gh_status gh_agg_table_init_gpu(void *mem, uint64_t capacity, void *stream,
								gh_error *err);
gh_status gh_agg_table_init_cpu(void *mem, uint64_t capacity, gh_error *err);

/* Moves every hash and its id of old_mem into the empty table new_mem. */
gh_status gh_agg_table_rehash_gpu(const void *old_mem, uint64_t old_cap,
								  void *new_mem, uint64_t new_cap,
								  void *stream, gh_error *err);
gh_status gh_agg_table_rehash_cpu(const void *old_mem, uint64_t old_cap,
								  void *new_mem, uint64_t new_cap,
								  gh_error *err);

/*
 * gh_agg_assign_*: ids[i] = the group id of hashes[i], inserting new hashes.
 * The table's ctrl then holds the new number of groups (the GPU version
 * returns before the kernels finish; copy ctrl back on the same stream).
 */
gh_status gh_agg_assign_gpu(void *mem, uint64_t capacity,
							const uint64_t *hashes, uint32_t n, uint32_t *ids,
							void *stream, gh_error *err);
gh_status gh_agg_assign_cpu(void *mem, uint64_t capacity,
							const uint64_t *hashes, uint32_t n, uint32_t *ids,
							gh_error *err);

/*
 * gh_agg_assign_exact_*: the exact device-key path.  Gives every row of the
 * batch its group id by the keys in k, stores the keys of new groups as
 * their representatives in acc (layout l, which must have room for every
 * group the batch can create), and sets ids[i] = GH_AGG_NO_GROUP for rows
 * whose key differs from their group's representative, listing them in
 * bad[0 .. ctrl.nbad) in no particular order.  scratch holds 2 * n uint32.
 * With k->frozen, no group is created: a row whose key hash is not in the
 * table also gets GH_AGG_NO_GROUP and is listed as row | GH_AGG_BAD_ABSENT
 * (the host spills it; rows are fewer than 2^31).
 */
gh_status gh_agg_assign_exact_gpu(void *mem, uint64_t capacity, void *acc,
								  const gh_agg_layout *l, const gh_agg_keys *k,
								  uint32_t n, uint32_t *ids, uint32_t *scratch,
								  uint32_t *bad, void *stream, gh_error *err);
gh_status gh_agg_assign_exact_cpu(void *mem, uint64_t capacity, void *acc,
								  const gh_agg_layout *l, const gh_agg_keys *k,
								  uint32_t n, uint32_t *ids, uint32_t *scratch,
								  uint32_t *bad, gh_error *err);

/*
 * A GROUP BY key computed on the device becomes exact key `bit` (1 << its
 * position) of rows i < n, as gh_agg_assign_exact_* takes a key the host
 * sent: where valid[i], keys[i] = vals[i] (a device expression's column,
 * gh_expr_eval_*; year_len 0) or the year of the date (year_len 4) or
 * timestamp (8) vals[i] as gh_agg_year_word gives it, with bit cleared in
 * nullmask[i]; elsewhere keys[i] = 0 with bit set.
 */
gh_status gh_agg_key_from_col_gpu(const int64_t *vals, const uint8_t *valid,
								  uint32_t n, int year_len, uint8_t bit,
								  uint64_t *keys, uint8_t *nullmask,
								  void *stream, gh_error *err);
gh_status gh_agg_key_from_col_cpu(const int64_t *vals, const uint8_t *valid,
								  uint32_t n, int year_len, uint8_t bit,
								  uint64_t *keys, uint8_t *nullmask,
								  gh_error *err);


/* ids[rows[i]] = GH_AGG_NO_GROUP for i < nrows. */
gh_status gh_agg_skip_gpu(uint32_t *ids, const uint32_t *rows, uint32_t nrows,
						  void *stream, gh_error *err);
gh_status gh_agg_skip_cpu(uint32_t *ids, const uint32_t *rows, uint32_t nrows,
						  gh_error *err);

/* Sets groups [from, to) of every accumulator array to "nothing yet". */
gh_status gh_agg_acc_init_gpu(void *acc, const gh_agg_layout *l, uint64_t from,
							  uint64_t to, void *stream, gh_error *err);
gh_status gh_agg_acc_init_cpu(void *acc, const gh_agg_layout *l, uint64_t from,
							  uint64_t to, gh_error *err);

/* Copies groups [0, ngroups) of every array from src (layout sl) to dst (dl). */
gh_status gh_agg_acc_move_gpu(void *dst, const gh_agg_layout *dl,
							  const void *src, const gh_agg_layout *sl,
							  uint64_t ngroups, void *stream, gh_error *err);
gh_status gh_agg_acc_move_cpu(void *dst, const gh_agg_layout *dl,
							  const void *src, const gh_agg_layout *sl,
							  uint64_t ngroups, gh_error *err);

/*
 * gh_agg_accumulate_*: adds every row of b whose id is not GH_AGG_NO_GROUP to
 * its group.  ngroups (the number of groups, all below l->group_cap) lets the
 * GPU choose a shared-memory path when there are few groups.
 */
gh_status gh_agg_accumulate_gpu(void *acc, const gh_agg_layout *l,
								uint64_t ngroups, const gh_agg_batch *b,
								void *stream, gh_error *err);
gh_status gh_agg_accumulate_cpu(void *acc, const gh_agg_layout *l,
								uint64_t ngroups, const gh_agg_batch *b,
								gh_error *err);

/* ---------------------------------------------------------------------
 * Hashing of exact device keys, shared by the host, the kernels and the
 * CPU twin
 * ---------------------------------------------------------------------
 */

/* The slot where the probe for hash h starts is gh_mix64(h) (gh_hash.h). */

/*
 * The group hash of exact device keys: a chain of mixes, started from the
 * NULL mask, over the key words.  The mask is mixed first so that a NULL
 * key (word 0) does not hash like a key that is 1 and not NULL.
 */
GH_HD uint64_t
gh_agg_key_hash_init(uint8_t nullmask)
{
	return gh_mix64((uint64_t) nullmask + UINT64_C(0x2545f4914f6cdd1d));
}

GH_HD uint64_t
gh_agg_key_hash_step(uint64_t h, uint64_t word)
{
	return gh_mix64(h + word + UINT64_C(0x9e3779b97f4a7c15));
}

/* The key stored for hash h: every 64-bit value except the empty marker. */
GH_HD uint64_t
gh_agg_stored_hash(uint64_t h)
{
	return h == GH_AGG_EMPTY ? GH_AGG_EMPTY - 1 : h;
}

#ifdef __cplusplus
}
#endif

#endif /* GH_AGGREGATE_H */
