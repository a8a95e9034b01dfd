/*-------------------------------------------------------------------------
 * keys.h
 *	  Hashing and equality of hash keys, shared by the join and the
 *	  aggregate: which hash function a key type has, the 64-bit hash of a
 *	  row's keys, and the equality that verifies a candidate.
 *
 * The API takes arrays (one entry per key: kinds, FmgrInfos, collations) and
 * no executor node's state, so any operator that hashes rows on the CPU for
 * the device can use it:
 *
 * 1. At start-up, per key: gpuhash_extended_hash_functions finds the
 *	  extended hash functions of an equality operator's two input types (at
 *	  plan time); gh_key_hash_kind says whether such a function can be
 *	  computed in line (GH_HASH_*); gh_key_int_mix_ok whether both sides of
 *	  a key may use gh_key_int_mix instead; gh_key_eq_kind whether the
 *	  equality function can be done in line (GH_EQ_*).
 *
 * 2. Per row: gh_key_hash_row evaluates one side's keys (a GhKeySet) and
 *	  returns the row's hash; gh_key_int_mix_row does the same from key values
 *	  already read, when every key is an integer hashed by gh_key_int_mix.
 *
 * 3. Per candidate: gh_key_equal compares two key values.
 *
 * The hashes are the executor's own (compared only with one another and
 * handed to the device and the GPU service), but they must stay the same
 * bit for bit wherever they are computed: a table built on the CPU twin
 * moves to the GPU by copy, and participants of a parallel join share one
 * table.  What is on the per-row path is static inline here, so the loops
 * that call it make no function call per key.
 *-------------------------------------------------------------------------
 */
#ifndef GPUHASH_KEYS_H
#define GPUHASH_KEYS_H

#include "common/hashfn.h"
#include "fmgr.h"
#include "nodes/execnodes.h"

#include "gh_layout.h"

/*
 * The extended hash functions computed in line (gh_key_hash_kind): the
 * integer types', whose arithmetic is hash_uint32_extended of the value.
 */
typedef enum GhKeyHashKind
{
	GH_HASH_CALL = 0,			/* call the function */
	GH_HASH_INT2,
	GH_HASH_INT4,
	GH_HASH_INT8,
	GH_HASH_OID
} GhKeyHashKind;

/*
 * The equality functions done in line (gh_key_eq_kind): int2eq, int4eq,
 * oideq and int8eq compare their arguments' values, int48eq and int84eq the
 * int4 one widened to int8.  Every other operator goes through its function.
 */
typedef enum GhKeyEqKind
{
	GH_EQ_CALL = 0,
	GH_EQ_INT2,
	GH_EQ_INT4,					/* int4eq and oideq */
	GH_EQ_INT8,
	GH_EQ_INT48,
	GH_EQ_INT84
} GhKeyEqKind;

/*
 * The keys of one side of an operator (the outer or the inner side of a
 * join, say), nkeys entries in each array.  The arrays belong to the
 * caller; two sides may share coll and int_mix.
 */
typedef struct GhKeySet
{
	int			nkeys;
	ExprState **exprs;			/* the key expressions */
	AttrNumber *att;			/* > 0: the key is that column of the row's
								 * slot, read without evaluating exprs[i]
								 * (which may then be NULL) */
	FmgrInfo   *hash;			/* extended hash function */
	uint8	   *fast;			/* GhKeyHashKind of hash */
	const bool *int_mix;		/* hash with gh_key_int_mix (gh_key_int_mix_ok) */
	const Oid  *coll;			/* collation of each key */
	int16	   *typlen;
	bool	   *byval;
} GhKeySet;

/* keys.c */
extern bool gpuhash_extended_hash_functions(Oid opno, Oid *lhs, Oid *rhs);
extern uint8 gh_key_hash_kind(FmgrInfo *fn, Oid coll);
extern bool gh_key_int_mix_ok(uint8 kind1, uint8 kind2);
extern uint8 gh_key_eq_kind(Oid fn);
extern uint64 gh_key_hash_row(const GhKeySet *keys, ExprContext *econtext,
							  TupleTableSlot *slot, Datum *values,
							  MemoryContext cxt, bool *hasnull);

/*
 * gh_key_int_mix hashes an integer key (kind: GH_HASH_INT2, INT4, INT8 or
 * OID) by its value as an int64 (an oid as its unsigned value), so that
 * equal values of int2, int4 and int8 hash alike, with a bijective 64-bit
 * finalizer (gh_mix64, the one of MurmurHash3): distinct keys never share a
 * hash, and it is computed in line.  Both sides of a key must use it
 * (gh_key_int_mix_ok); the values differ from PostgreSQL's hash functions',
 * which is fine for hashes compared only with one another.
 */
static inline uint64
gh_key_int_mix(uint8 kind, Datum v)
{
	uint64		k;

	switch (kind)
	{
		case GH_HASH_INT2:
			k = (uint64) (int64) DatumGetInt16(v);
			break;
		case GH_HASH_INT4:
			k = (uint64) (int64) DatumGetInt32(v);
			break;
		case GH_HASH_OID:
			k = (uint64) DatumGetObjectId(v);
			break;
		default:
			k = (uint64) DatumGetInt64(v);
			break;
	}
	return gh_mix64(k);
}

/*
 * gh_key_int_mix_row is gh_key_hash_row for a row whose keys all use
 * gh_key_int_mix and are not NULL: the same value, from the key values
 * already read.
 */
static inline uint64
gh_key_int_mix_row(const GhKeySet *keys, const Datum *values)
{
	uint64		h = 0;

	for (int i = 0; i < keys->nkeys; i++)
		h = hash_combine64(h, gh_key_int_mix(keys->fast[i], values[i]));
	return h;
}

/*
 * gh_key_equal applies a key's equality function (eq, of GhKeyEqKind kind,
 * with collation coll) to a and b, in line where the kind allows.  A caller
 * that may be given by-reference values runs it in a short-lived memory
 * context: the function may allocate.
 */
static inline bool
gh_key_equal(uint8 kind, FmgrInfo *eq, Oid coll, Datum a, Datum b)
{
	switch (kind)
	{
		case GH_EQ_INT2:
			return DatumGetInt16(a) == DatumGetInt16(b);
		case GH_EQ_INT4:
			return DatumGetInt32(a) == DatumGetInt32(b);
		case GH_EQ_INT8:
			return DatumGetInt64(a) == DatumGetInt64(b);
		case GH_EQ_INT48:
			return (int64) DatumGetInt32(a) == DatumGetInt64(b);
		case GH_EQ_INT84:
			return DatumGetInt64(a) == (int64) DatumGetInt32(b);
		default:
			return DatumGetBool(FunctionCall2Coll(eq, coll, a, b));
	}
}

#endif							/* GPUHASH_KEYS_H */
