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
 * input of a device expression that no aggregate reads) accumulates nothing.  Exact 128-bit integer sums: each
 * atomicAdd on the low word returns the old value, from which the carry of
 * that one addition is known exactly; the carry and the sign extension go to
 * the high word.  The sum of all those parts is the exact 128-bit sum however
 * the additions interleave.
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
 * NUMERIC values travel as fixed point: the host scales every value to one
 * column scale S (the largest display scale seen so far), and packs the
 * scaled integer m with the value's own display scale d as (m << 8) | d.
 * The packing keeps the order of m (d only breaks ties), so min/max are plain
 * 64-bit atomics and still return a value with its own display scale; sums
 * use m and the largest d.  Values that do not fit (|m| >= 2^55, d > 255,
 * NaN, infinities) never reach the device: the host aggregates them.
 *-------------------------------------------------------------------------
 */
#ifndef GH_AGGREGATE_H
#define GH_AGGREGATE_H

#include <stddef.h>
#include <stdint.h>

#include "gh_hash.h"
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

/* NUMERIC packing limits. */
#define GH_AGG_NUM_MAX_ABS	  ((int64_t) 1 << 55) /* |m| must be below */
#define GH_AGG_NUM_MAX_DSCALE 255

/* "No value yet" of the min and max arrays, by kind. */
#define GH_AGG_INT_MIN_INIT	 INT64_MAX
#define GH_AGG_INT_MAX_INIT	 INT64_MIN
#define GH_AGG_FKEY_MIN_INIT UINT64_MAX
#define GH_AGG_FKEY_MAX_INIT ((uint64_t) 0)

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

/* extract(year ...)'s words for the infinities (gh_agg_year_word) */
#define GH_AGG_YEAR_PINF INT64_MAX
#define GH_AGG_YEAR_NINF INT64_MIN

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
 * Expression programs: aggregate arguments computed on the device
 * ---------------------------------------------------------------------
 *
 * An aggregate argument of NUMERIC arithmetic (+, -, *, unary -) over input
 * columns and constants is compiled at plan time into a postfix program; the
 * device runs it over the batch's packed input columns and writes a packed
 * column the accumulate step takes like any other.  Every value on the stack
 * is exact: a 128-bit integer m at a scale sigma (value = m / 10^sigma),
 * with the display scale d that PostgreSQL's numeric_add, numeric_sub and
 * numeric_mul give (max(d1, d2) for + and -, d1 + d2 for *).  A row whose
 * arithmetic leaves the bounds below, or whose result does not fit the
 * packing at the output column's scale, is listed for the host, which
 * computes it with PostgreSQL's own functions; a row with a NULL (or
 * host-held) input gets no value (valid 0): the host knows which of those
 * it holds.
 *
 * Conditions: comparisons (of numerics, or of integers, dates or
 * timestamps as COLI pushes them: their int64 values, at scale 0) and IS
 * [NOT] NULL push a boolean (m 0 or 1), AND, OR and NOT combine them with SQL's three-valued logic, and a searched CASE is
 * jumps, as PostgreSQL's executor runs it: "c1 JUMPF(a) r1 JUMP(end) a: c2
 * JUMPF(b) r2 JUMP(end) b: else end:", where JUMPF pops a condition and
 * jumps when it is false or NULL, and every jump goes forward (to op index
 * cm[o], at most nops), so a branch not taken is not computed and the
 * result keeps its own scale and display scale; NULLV pushes a NULL (a
 * CASE with no ELSE).  In a program with a condition, a NULL or host-held
 * NUMERIC input column (COL) sends the row to the host (the device cannot
 * tell the two apart), which runs the same program with PostgreSQL's
 * functions; a NULL integer, date or timestamp (COLI), never host-held, is
 * a NULL on the stack.
 */
#define GH_EXPR_MAX_OPS 32
#define GH_EXPR_STACK 8

typedef enum gh_expr_op
{
	GH_EXPR_COL = 1, /* push input column vals[o] (packed NUMERIC) */
	GH_EXPR_CONST,	 /* push the constant cm[o] at scale scale[o] */
	GH_EXPR_ADD,
	GH_EXPR_SUB,
	GH_EXPR_MUL,
	GH_EXPR_NEG,
	GH_EXPR_LT, /* comparisons: two numerics to a boolean */
	GH_EXPR_LE,
	GH_EXPR_EQ,
	GH_EXPR_NE,
	GH_EXPR_GE,
	GH_EXPR_GT,
	GH_EXPR_AND, /* two booleans to one, three-valued */
	GH_EXPR_OR,
	GH_EXPR_NOT,
	GH_EXPR_JUMPF, /* pop a condition; false or NULL: go to op cm[o] */
	GH_EXPR_JUMP,  /* go to op cm[o] */
	GH_EXPR_NULLV, /* push a NULL */
	GH_EXPR_ISNULL, /* a value to a boolean: IS NULL */
	GH_EXPR_NOTNULL, /* IS NOT NULL */
	GH_EXPR_COLI,	/* push input column vals[o] (int64: integers, dates,
					 * timestamps) as a value of scale 0 */
	GH_EXPR_IADD,	/* integer arithmetic of int2, int4 and int8 values: */
	GH_EXPR_ISUB,	/* exact, then checked against the range of the */
	GH_EXPR_IMUL,	/* operator's result type, cm[o] bytes wide (2, 4 or */
	GH_EXPR_INEG,	/* 8); out of it, the host raises PostgreSQL's error */
	GH_EXPR_IDIV,	/* integer / and % as int4div and int4mod compute them */
	GH_EXPR_IMOD,	/* (truncated); a zero divisor: the host raises */
	GH_EXPR_DDIFF,	/* date - date: days (an infinite date: the host raises) */
	GH_EXPR_DADDI,	/* date + integer, date - integer: an infinite date as */
	GH_EXPR_DSUBI,	/* it is; past the dates' range the host raises */
	GH_EXPR_YEAR,	/* extract(year from a date (cm[o] 4) or timestamp (8)):
					 * a NUMERIC of scale 0; an infinite one to the host */
	GH_EXPR_COLF,	/* float programs: push float column vals[o] (doubles) */
	GH_EXPR_COLI2F, /* push integer column vals[o] as a float (cm[o] 4) or
					 * a double (8), rounded as float4(int) and float8(int) */
	GH_EXPR_FCONST, /* push the double whose bits are cm[o] */
	GH_EXPR_FADD,	/* float arithmetic in the precision of the operator's */
	GH_EXPR_FSUB,	/* result type, cm[o] 4 (float4) or 8 (float8), with */
	GH_EXPR_FMUL,	/* float.h's checks: out of them, the host raises */
	GH_EXPR_FDIV,	/* PostgreSQL's overflow, underflow or division by */
	GH_EXPR_FNEG,	/* zero error */
	GH_EXPR_COLFK,	/* conditions: push float column vals[o] as its order
					 * key (gh_agg_float_cmp_key), a value of scale 0 */
	GH_EXPR_FKCONST /* push the order key cm[o] of a float constant */
} gh_expr_op;

#define GH_EXPR_OP_LAST GH_EXPR_FKCONST

/* the ops that push an input column vals[o] */
#define GH_EXPR_READS_INPUT(op) \
	((op) == GH_EXPR_COL || (op) == GH_EXPR_COLI || (op) == GH_EXPR_COLF || \
	 (op) == GH_EXPR_COLI2F || (op) == GH_EXPR_COLFK)

/* the ops of float programs (and only theirs) */
#define GH_EXPR_IS_FLOAT_OP(op) ((op) >= GH_EXPR_COLF && (op) <= GH_EXPR_FNEG)

/*
 * The dates PostgreSQL allows, in its numbering (days from 2000-01-01):
 * Julian day 0 up to, not including, 5874898-01-01; INT32_MIN and INT32_MAX
 * are -infinity and infinity.
 */
#define GH_DATE_MIN (-2451545)
#define GH_DATE_END 2145031949

/* why a float program left a row to the host (gh_expr_float_eval) */
#define GH_FEXPR_OVERFLOW 1
#define GH_FEXPR_UNDERFLOW 2
#define GH_FEXPR_DIV_ZERO 3

/* ops that make a program conditional (see above) */
#define GH_EXPR_IS_CONDITION(op) \
	((op) >= GH_EXPR_LT && (op) <= GH_EXPR_NOTNULL)

/*
 * Integer programs: an aggregate argument of integer arithmetic (+, -, *,
 * unary -) over integer columns (COLI) and constants has IADD, ISUB, IMUL
 * and INEG only, and int_out set: its result is the int64 value, which the
 * accumulate step takes as a column of the argument's type.  The same ops
 * compute integer operands inside NUMERIC programs and conditions.  Every
 * integer on the stack is within int64, so each op is exact in 128 bits
 * before its range check; a row that leaves the range is listed for the
 * host, which raises PostgreSQL's "out of range" error for it.
 */

/*
 * Float programs: an aggregate argument of float4 or float8 arithmetic (+,
 * -, *, /, unary -) over float columns (COLF), integer columns cast to a
 * float type (COLI2F) and constants (FCONST) has those ops alone, and
 * float_out set: its values are doubles (a float4's exactly), as the
 * engine keeps float columns.  Each op computes in its result type's
 * precision, rounded to nearest with no fused multiply-add (on the GPU
 * through the _rn intrinsics), so every value is the one PostgreSQL's
 * float4pl, float8mul, float48div ... compute; where float.h's checks
 * would raise (an infinite result of finite operands, a zero product or
 * quotient of non-zero ones, a division by zero) the row goes to the host,
 * which raises that error.
 */

/* Results of gh_expr_eval for one row. */
#define GH_EXPR_OK 0
#define GH_EXPR_NULL 1 /* an input has no value on the device */
#define GH_EXPR_HOST 2 /* out of the device's bounds: the host computes it */

/*
 * One program, with the pointers of its input columns on the target.
 * scale[o]: for COL, the column's scale (its packed m is value * 10^scale);
 * for CONST, the constant's display scale.  out_scale is the output
 * column's scale, at least the program's result scale; all_host sends every
 * row with values to the host (a result scale beyond the device's).
 */
typedef struct gh_expr
{
	int nops;
	int int_out;	 /* an integer program: out is the int64 value itself */
	int float_out;	 /* a float program: out is the double's bits */
	int out_scale;
	int all_host;
	int conditional; /* has a condition: NULL inputs go to the host */
	uint8_t op[GH_EXPR_MAX_OPS];
	int8_t scale[GH_EXPR_MAX_OPS];
	int64_t cm[GH_EXPR_MAX_OPS];
	const int64_t *vals[GH_EXPR_MAX_OPS];
	const uint8_t *valid[GH_EXPR_MAX_OPS];
} gh_expr;

/*
 * gh_expr_eval_*: for every row i < n, out[i] = the program's packed
 * value and out_valid[i] = 1, or out_valid[i] = 0; the rows to compute on
 * the host are listed in host_rows[0 .. *nhost) in no particular order
 * (*nhost is set; the GPU version returns before the kernel finishes).
 */
gh_status gh_expr_eval_gpu(const gh_expr *e, uint32_t n, int64_t *out,
							   uint8_t *out_valid, uint32_t *host_rows,
							   uint32_t *nhost, void *stream, gh_error *err);
gh_status gh_expr_eval_cpu(const gh_expr *e, uint32_t n, int64_t *out,
							   uint8_t *out_valid, uint32_t *host_rows,
							   uint32_t *nhost, gh_error *err);

/* ---------------------------------------------------------------------
 * Value encodings, shared by the host, the kernels and the CPU twin
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

/*
 * gh_agg_float_key maps a double to a uint64 whose unsigned order is
 * PostgreSQL's float order: every NaN is one value above +Infinity.
 * -0 sorts just below +0; PostgreSQL calls them equal, so either is a right
 * minimum.
 */
GH_HD uint64_t
gh_agg_float_key(double d)
{
	union
	{
		double d;
		uint64_t u;
	} v;

	if (d != d)
		return UINT64_C(0xfff8000000000000) | UINT64_C(0x8000000000000000);
	v.d = d;
	return (v.u & UINT64_C(0x8000000000000000))
			   ? ~v.u
			   : v.u | UINT64_C(0x8000000000000000);
}

GH_HD double
gh_agg_float_unkey(uint64_t k)
{
	union
	{
		double d;
		uint64_t u;
	} v;

	v.u = (k & UINT64_C(0x8000000000000000))
			  ? k & ~UINT64_C(0x8000000000000000)
			  : ~k;
	return v.d;
}

/* Packed NUMERIC value: scaled integer m and display scale d. */
GH_HD int64_t
gh_agg_num_pack(int64_t m, int d)
{
	return (int64_t) ((uint64_t) m << 8) | (int64_t) d;
}

GH_HD int64_t
gh_agg_num_m(int64_t packed)
{
	return packed >> 8; /* arithmetic shift: gcc, clang and nvcc */
}

GH_HD int
gh_agg_num_dscale(int64_t packed)
{
	return (int) (packed & 0xff);
}

/*
 * gh_expr_scale_up multiplies *m by 10^k (0 <= k <= 18) where the result
 * stays far inside 128 bits (|m| < 2^62); returns 0 where it would not.
 */
GH_HD int
gh_expr_scale_up(__int128 *m, int k)
{
	const __int128 lim = (__int128) 1 << 62;
	__int128 f = 1;

	if (k == 0)
		return 1;
	if (k < 0 || k > 18 || *m >= lim || *m <= -lim)
		return 0;
	for (int j = 0; j < k; j++)
		f *= 10;
	*m *= f;
	return 1;
}

/*
 * gh_year_of_days is the proleptic Gregorian year (astronomical: 0 is 1
 * BC) of the day z days after 2000-01-01, by eras of 400 years counted
 * from 0000-03-01, so that a leap day ends its year.
 */
GH_HD int64_t
gh_year_of_days(int64_t z)
{
	int64_t days = z + 730425; /* 2000-01-01 is day 730425 of 0000-03-01 */
	int64_t era = (days >= 0 ? days : days - 146096) / 146097;
	int64_t doe = days - era * 146097; /* day of the era, 0 to 146096 */
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153; /* month from March, 0 to 11 */

	return yoe + era * 400 + (mp >= 10);
}

/*
 * gh_agg_year_word is a GROUP BY key's word for extract(year from v), v a
 * date (len 4) or timestamp (len 8): its day's year in the proleptic
 * Gregorian calendar, 1 BC being -1, or GH_AGG_YEAR_PINF / _NINF for an
 * infinite v (whose extract is numeric's Infinity and -Infinity).
 */
GH_HD int64_t
gh_agg_year_word(int64_t v, int len)
{
	int64_t day;
	int64_t y;

	if (len == 4 ? v == INT32_MAX : v == INT64_MAX)
		return GH_AGG_YEAR_PINF;
	if (len == 4 ? v == INT32_MIN : v == INT64_MIN)
		return GH_AGG_YEAR_NINF;
	day = len == 4 ? v :
		(v >= 0 ? v : v - (INT64_C(86400000000) - 1)) / INT64_C(86400000000);
	y = gh_year_of_days(day);
	return y > 0 ? y : y - 1;
}

/* gh_agg_key_word is keys[i] of gh_agg_key_from_col_* for a valid value v. */
GH_HD uint64_t
gh_agg_key_word(int64_t v, int year_len)
{
	return (uint64_t) (year_len == 0 ? v : gh_agg_year_word(v, year_len));
}

/*
 * gh_agg_float_cmp_key is a signed int64 whose order is PostgreSQL's float
 * comparison (float8_cmp_internal): -0 equals 0, every NaN equals every
 * other and is above +Infinity.  Conditions compare floats through it, so
 * they compare as integers do.
 */
GH_HD int64_t
gh_agg_float_cmp_key(double d)
{
	return (int64_t) (gh_agg_float_key(d == 0 ? 0.0 : d) ^ UINT64_C(0x8000000000000000));
}

/* gh_fbits and gh_bitsf move a double to and from its bits. */
GH_HD int64_t
gh_fbits(double d)
{
	union
	{
		double d;
		int64_t i;
	} v;

	v.d = d;
	return v.i;
}

GH_HD double
gh_bitsf(int64_t i)
{
	union
	{
		double d;
		int64_t i;
	} v;

	v.i = i;
	return v.d;
}

/*
 * gh_fexpr_op is float op (FADD, FSUB, FMUL, FDIV) of a and b in single
 * (prec 4: both are float4 values) or double precision, rounded to
 * nearest, with float.h's checks: *why is set where PostgreSQL would raise.
 */
GH_HD double
gh_fexpr_op(int op, int prec, double a, double b, int *why)
{
	double r;
	int ainf = a - a != 0 && a == a; /* infinite, not NaN */
	int binf = b - b != 0 && b == b;

	*why = 0;
	if (op == GH_EXPR_FDIV && b == 0.0 && a == a)
	{
		*why = GH_FEXPR_DIV_ZERO;
		return 0;
	}
#ifdef __CUDA_ARCH__
	if (prec == 4)
		r = op == GH_EXPR_FADD ? __fadd_rn((float) a, (float) b) :
			op == GH_EXPR_FSUB ? __fsub_rn((float) a, (float) b) :
			op == GH_EXPR_FMUL ? __fmul_rn((float) a, (float) b) :
			__fdiv_rn((float) a, (float) b);
	else
		r = op == GH_EXPR_FADD ? __dadd_rn(a, b) :
			op == GH_EXPR_FSUB ? __dsub_rn(a, b) :
			op == GH_EXPR_FMUL ? __dmul_rn(a, b) : __ddiv_rn(a, b);
#else
	if (prec == 4)
	{
		volatile float fr = op == GH_EXPR_FADD ? (float) a + (float) b :
			op == GH_EXPR_FSUB ? (float) a - (float) b :
			op == GH_EXPR_FMUL ? (float) a * (float) b : (float) a / (float) b;

		r = fr;
	}
	else
	{
		volatile double dr = op == GH_EXPR_FADD ? a + b : op == GH_EXPR_FSUB ? a - b :
			op == GH_EXPR_FMUL ? a * b : a / b;

		r = dr;
	}
#endif
	if (r - r != 0 && r == r && !ainf && !(binf && op != GH_EXPR_FDIV))
		*why = GH_FEXPR_OVERFLOW;
	else if (r == 0.0 && a != 0.0 &&
			 ((op == GH_EXPR_FMUL && b != 0.0) || (op == GH_EXPR_FDIV && !binf)))
		*why = GH_FEXPR_UNDERFLOW;
	return r;
}

/*
 * gh_expr_float_eval runs float program e over row i (gh_expr_eval's
 * contract; *out the double's bits); where it returns GH_EXPR_HOST, *why
 * (when not NULL) says which of PostgreSQL's errors the row raises.
 */
GH_HD int
gh_expr_float_eval(const gh_expr *e, uint32_t i, int64_t *out, int *why)
{
	double st[GH_EXPR_STACK];
	uint8_t nul[GH_EXPR_STACK];
	int sp = 0;

	for (int o = 0; o < e->nops; o++)
	{
		int op = e->op[o];
		int w = 0;

		switch (op)
		{
			case GH_EXPR_COLF:
			case GH_EXPR_COLI2F:
				if (!e->valid[o][i])
					return GH_EXPR_NULL;
				if (op == GH_EXPR_COLF)
					st[sp] = gh_bitsf(e->vals[o][i]);
				else if (e->cm[o] == 4)
				{
#ifdef __CUDA_ARCH__
					st[sp] = __ll2float_rn((long long) e->vals[o][i]);
#else
					volatile float f = (float) e->vals[o][i];

					st[sp] = f;
#endif
				}
				else
				{
#ifdef __CUDA_ARCH__
					st[sp] = __ll2double_rn((long long) e->vals[o][i]);
#else
					st[sp] = (double) e->vals[o][i];
#endif
				}
				nul[sp++] = 0;
				break;
			case GH_EXPR_FCONST:
				st[sp] = gh_bitsf(e->cm[o]);
				nul[sp++] = 0;
				break;
			case GH_EXPR_NULLV:
				st[sp] = 0;
				nul[sp++] = 1;
				break;
			case GH_EXPR_FNEG:
				st[sp - 1] = -st[sp - 1];
				break;
			case GH_EXPR_FADD:
			case GH_EXPR_FSUB:
			case GH_EXPR_FMUL:
			case GH_EXPR_FDIV:
				sp--;
				nul[sp - 1] |= nul[sp];
				if (nul[sp - 1])
					break;
				st[sp - 1] = gh_fexpr_op(op, (int) e->cm[o], st[sp - 1], st[sp], &w);
				if (w != 0)
				{
					if (why)
						*why = w;
					return GH_EXPR_HOST;
				}
				break;
			default:
				return GH_EXPR_HOST;
		}
	}
	if (nul[0])
		return GH_EXPR_NULL;
	*out = gh_fbits(st[0]);
	return GH_EXPR_OK;
}

/*
 * gh_expr_eval runs program e over row i: GH_EXPR_OK with *out the
 * packed result at e->out_scale, GH_EXPR_NULL, or GH_EXPR_HOST.  The bounds
 * are kept simple and safe: a product's factors below 2^62, a value scaled
 * up below 2^62 first, every sum below 2^124; anything else goes to the
 * host, which is exact whatever the size.
 */
GH_HD int
gh_expr_eval(const gh_expr *e, uint32_t i, int64_t *out)
{
	const __int128 lim62 = (__int128) 1 << 62;
	const __int128 lim124 = (__int128) 1 << 124;
	__int128 m[GH_EXPR_STACK];
	int sg[GH_EXPR_STACK];
	int d[GH_EXPR_STACK];
	uint8_t nul[GH_EXPR_STACK];
	int sp = 0;

	if (e->float_out)
		return gh_expr_float_eval(e, i, out, NULL);

	for (int o = 0; o < e->nops; o++)
	{
		int a = sp - 2;
		int b = sp - 1;
		int op = e->op[o];

		switch (op)
		{
			case GH_EXPR_COL:
			{
				int64_t p;

				if (!e->valid[o][i])
					return e->conditional ? GH_EXPR_HOST : GH_EXPR_NULL;
				p = e->vals[o][i];
				m[sp] = gh_agg_num_m(p);
				d[sp] = gh_agg_num_dscale(p);
				sg[sp] = e->scale[o];
				nul[sp] = 0;
				sp++;
				break;
			}
			case GH_EXPR_COLI:
				/* integers, dates and timestamps are never held on the host:
				 * not valid is NULL */
				if (!e->valid[o][i] && !e->conditional)
					return GH_EXPR_NULL;
				m[sp] = e->valid[o][i] ? e->vals[o][i] : 0;
				d[sp] = 0;
				sg[sp] = 0;
				nul[sp] = !e->valid[o][i];
				sp++;
				break;
			case GH_EXPR_CONST:
				m[sp] = e->cm[o];
				d[sp] = e->scale[o];
				sg[sp] = e->scale[o];
				nul[sp] = 0;
				sp++;
				break;
			case GH_EXPR_COLFK:
			case GH_EXPR_FKCONST:
				/* a float column is never held on the host: not valid is NULL */
				if (op == GH_EXPR_COLFK && !e->valid[o][i] && !e->conditional)
					return GH_EXPR_NULL;
				nul[sp] = op == GH_EXPR_COLFK && !e->valid[o][i];
				m[sp] = op == GH_EXPR_FKCONST ? e->cm[o] :
					nul[sp] ? 0 : gh_agg_float_cmp_key(gh_bitsf(e->vals[o][i]));
				d[sp] = 0;
				sg[sp] = 0;
				sp++;
				break;
			case GH_EXPR_NULLV:
				m[sp] = 0;
				d[sp] = 0;
				sg[sp] = 0;
				nul[sp] = 1;
				sp++;
				break;
			case GH_EXPR_NEG:
				m[b] = -m[b];
				break;
			case GH_EXPR_NOT:
				m[b] = !m[b];
				break;
			case GH_EXPR_YEAR:
			{
				int64_t v = (int64_t) m[b];

				if (nul[b])
					break;
				if (e->cm[o] == 4 ? v == INT32_MIN || v == INT32_MAX :
					v == INT64_MIN || v == INT64_MAX)
					return GH_EXPR_HOST;
				m[b] = gh_agg_year_word(v, (int) e->cm[o]);
				sg[b] = d[b] = 0;
				break;
			}
			case GH_EXPR_ISNULL:
			case GH_EXPR_NOTNULL:
				m[b] = nul[b] == (op == GH_EXPR_ISNULL);
				sg[b] = d[b] = 0;
				nul[b] = 0;
				break;
			case GH_EXPR_ADD:
			case GH_EXPR_SUB:
			case GH_EXPR_LT:
			case GH_EXPR_LE:
			case GH_EXPR_EQ:
			case GH_EXPR_NE:
			case GH_EXPR_GE:
			case GH_EXPR_GT:
			{
				int s = sg[a] > sg[b] ? sg[a] : sg[b];

				nul[a] |= nul[b];
				if (nul[a])
				{
					m[a] = 0;
					sg[a] = d[a] = 0;
					sp--;
					break;
				}
				if (!gh_expr_scale_up(&m[a], s - sg[a]) ||
					!gh_expr_scale_up(&m[b], s - sg[b]) || m[a] >= lim124 ||
					m[a] <= -lim124 || m[b] >= lim124 || m[b] <= -lim124)
					return GH_EXPR_HOST;
				if (op == GH_EXPR_ADD || op == GH_EXPR_SUB)
				{
					m[a] = op == GH_EXPR_ADD ? m[a] + m[b] : m[a] - m[b];
					sg[a] = s;
					d[a] = d[a] > d[b] ? d[a] : d[b];
				}
				else
				{
					int c = m[a] < m[b] ? -1 : m[a] > m[b] ? 1 : 0;

					m[a] = op == GH_EXPR_LT ? c < 0 : op == GH_EXPR_LE ? c <= 0 :
						op == GH_EXPR_EQ ? c == 0 : op == GH_EXPR_NE ? c != 0 :
						op == GH_EXPR_GE ? c >= 0 : c > 0;
					sg[a] = d[a] = 0;
				}
				sp--;
				break;
			}
			case GH_EXPR_MUL:
				nul[a] |= nul[b];
				if (!nul[a] &&
					(m[a] >= lim62 || m[a] <= -lim62 || m[b] >= lim62 ||
					 m[b] <= -lim62))
					return GH_EXPR_HOST;
				m[a] *= m[b];
				sg[a] += sg[b];
				d[a] += d[b];
				sp--;
				break;
			case GH_EXPR_AND:
			case GH_EXPR_OR:
			{
				/* false (AND) or true (OR) on either side decides it */
				__int128 decide = op == GH_EXPR_OR;

				if ((!nul[a] && m[a] == decide) || (!nul[b] && m[b] == decide))
				{
					m[a] = decide;
					nul[a] = 0;
				}
				else if (nul[a] || nul[b])
					nul[a] = 1;
				else
					m[a] = !decide;
				sp--;
				break;
			}
			case GH_EXPR_JUMPF:
				sp--;
				if (nul[b] || m[b] == 0)
					o = (int) e->cm[o] - 1;
				break;
			case GH_EXPR_JUMP:
				o = (int) e->cm[o] - 1;
				break;
			case GH_EXPR_IADD:
			case GH_EXPR_ISUB:
			case GH_EXPR_IMUL:
			case GH_EXPR_INEG:
			case GH_EXPR_IDIV:
			case GH_EXPR_IMOD:
			case GH_EXPR_DDIFF:
			case GH_EXPR_DADDI:
			case GH_EXPR_DSUBI:
			{
				int x = op == GH_EXPR_INEG ? b : a;
				__int128 hi = e->cm[o] == 2 ? 32767 :
					e->cm[o] == 4 ? (__int128) 2147483647 :
					(__int128) INT64_MAX;
				/* a date operand (the first of DDIFF, DADDI, DSUBI) infinite */
				int ainf = op != GH_EXPR_INEG && (m[a] == INT32_MIN || m[a] == INT32_MAX);

				if (op != GH_EXPR_INEG)
				{
					nul[a] |= nul[b];
					sp--;
				}
				if (nul[x])
				{
					m[x] = 0;
					break;
				}
				sg[x] = d[x] = 0;
				if (op == GH_EXPR_DDIFF)
				{
					if (ainf || m[b] == INT32_MIN || m[b] == INT32_MAX)
						return GH_EXPR_HOST;
					m[a] -= m[b];
					break;
				}
				if (op == GH_EXPR_DADDI || op == GH_EXPR_DSUBI)
				{
					if (ainf)
						break;
					m[a] = op == GH_EXPR_DADDI ? m[a] + m[b] : m[a] - m[b];
					if (m[a] < GH_DATE_MIN || m[a] >= GH_DATE_END)
						return GH_EXPR_HOST;
					break;
				}
				if ((op == GH_EXPR_IDIV || op == GH_EXPR_IMOD) && m[b] == 0)
					return GH_EXPR_HOST;	/* division by zero */
				/*
				 * both operands are within 64 bits: in 128 bits neither
				 * / nor % overflows, and both truncate as C's int64 ones
				 * do (a quotient past the type is checked below; x % -1
				 * is 0, as int4mod makes it)
				 */
				m[x] = op == GH_EXPR_IADD ? m[a] + m[b] :
					op == GH_EXPR_ISUB ? m[a] - m[b] :
					op == GH_EXPR_IMUL ? m[a] * m[b] :
					op == GH_EXPR_IDIV ? m[a] / m[b] :
					op == GH_EXPR_IMOD ? m[a] % m[b] : -m[b];
				if (m[x] > hi || m[x] < -hi - 1)
					return GH_EXPR_HOST;
				break;
			}
			default:
				return GH_EXPR_HOST;
		}
	}
	if (nul[0])
		return GH_EXPR_NULL;
	if (e->all_host)
		return GH_EXPR_HOST;
	if (e->int_out)
	{
		*out = (int64_t) m[0];
		return GH_EXPR_OK;
	}
	if (!gh_expr_scale_up(&m[0], e->out_scale - sg[0]) ||
		m[0] <= -(__int128) (GH_AGG_NUM_MAX_ABS - 1) ||
		m[0] >= (__int128) (GH_AGG_NUM_MAX_ABS - 1) || d[0] > GH_AGG_NUM_MAX_DSCALE)
		return GH_EXPR_HOST;
	*out = gh_agg_num_pack((int64_t) m[0], d[0]);
	return GH_EXPR_OK;
}

#ifdef __cplusplus
}
#endif

#endif /* GH_AGGREGATE_H */
