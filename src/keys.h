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
 *	  plan time); gh_key_set_init and gh_key_set_hash fill a GhKeySet, the
 *	  latter asking gh_key_hash_kind whether the hash function can be
 *	  computed in line (GH_HASH_*); gh_key_int_mix_ok says whether both
 *	  sides of a key may use gh_key_int_mix instead; gh_key_eq_kind (a
 *	  join's operator) or gh_key_group_eq_kind (GROUP BY's) how the equality
 *	  is done (GH_EQ_*).
 *
 * 2. Per row: gh_key_hash_row evaluates one side's keys and returns the
 *	  row's hash, the row being left out when a key is NULL (a join: NULL
 *	  equals nothing); gh_key_hash_group does the same for GROUP BY, where
 *	  NULL is a value and NULL keys form a group of their own;
 *	  gh_key_int_mix_row hashes key values already read, when every key is
 *	  an integer hashed by gh_key_int_mix.
 *
 * 3. Per candidate: gh_key_equal compares two key values.
 *
 * Which hashing is which.  Everything here is the host's hashing of keys by
 * their type: a join's rows on both sides, and the aggregate's host-checked
 * keys (aggregate_batch.c).  These hashes are compared only with one
 * another, but they must stay the same bit for bit wherever one table's are
 * computed: a join's table built on the CPU twin moves to the GPU by copy,
 * and participants of a parallel join share one table.  The join mixes
 * integer keys with gh_key_int_mix; the aggregate does not, and its group
 * hashes are PostgreSQL's, because their collisions show: keys whose hashes
 * meet go to its fallback set, which its DEBUG1 account counts (and the
 * tests reach through int8's hash function).  The aggregate's exact device
 * keys (integers, dates, ... grouped on the device) are hashed elsewhere,
 * by gh_agg_key_hash_init and gh_agg_key_hash_step (cuda/gh_aggregate.h):
 * the device hashes the keys' 64-bit words, whatever their type, and the
 * host's fallback set (aggregate_fallback.c) hashes the rows the device
 * sends back with the same functions, over the same words.
 *
 * What is on the per-row path is static inline here, so the loops that call
 * it make no function call per row or per key.
 *-------------------------------------------------------------------------
 */
#ifndef GPUHASH_KEYS_H
#define GPUHASH_KEYS_H

#include "common/hashfn.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "nodes/execnodes.h"
#include "utils/datum.h"

#include "gh_hash.h"

/*
 * The extended hash functions computed in line (gh_key_hash_kind): the
 * integer types', whose arithmetic is hash_uint32_extended of the value,
 * and text's under a deterministic collation, which hashes the bytes.
 */
typedef enum GhKeyHashKind
{
	GH_HASH_CALL = 0,			/* call the function */
	/* the integer kinds, INT2 to OID together (gh_key_int_mix_ok) */
	GH_HASH_INT2,
	GH_HASH_INT4,
	GH_HASH_INT8,
	GH_HASH_OID,
	GH_HASH_TEXT				/* hashtextextended, deterministic collation */
} GhKeyHashKind;

/*
 * How gh_key_equal compares two keys.  A join's operator (gh_key_eq_kind):
 * int2eq, int4eq, oideq and int8eq compare their arguments' values, int48eq
 * and int84eq the int4 one widened to int8, texteq under a deterministic
 * collation the bytes.  GROUP BY's operator
 * (gh_key_group_eq_kind), whose two sides have one type: where that type's
 * equality is equality of the stored image, the Datums (by-value types) or
 * the bytes (by-reference ones) are compared.  Every other operator goes
 * through its function.
 */
typedef enum GhKeyEqKind
{
	GH_EQ_CALL = 0,
	GH_EQ_INT2,
	GH_EQ_INT4,					/* int4eq and oideq */
	GH_EQ_INT8,
	GH_EQ_INT48,
	GH_EQ_INT84,
	GH_EQ_DATUM,				/* equality of the Datums */
	GH_EQ_IMAGE,				/* equality of the bytes (datum_image_eq) */
	GH_EQ_TEXT					/* texteq, deterministic collation */
} GhKeyEqKind;

/*
 * The keys of one side of an operator (the outer or the inner side of a
 * join, say, or the GROUP BY keys of an aggregate), nkeys entries in each
 * array.  The arrays belong to the caller; two sides may share coll and
 * int_mix.
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
extern void gh_key_set_init(GhKeySet *keys, int nkeys, const Oid *coll,
							const bool *int_mix);
extern void gh_key_set_hash(GhKeySet *keys, int i, Oid hashfn, Oid type);
extern bool gh_key_int_mix_ok(uint8 kind1, uint8 kind2);
extern uint8 gh_key_eq_kind(Oid fn, Oid coll);
extern uint8 gh_key_group_eq_kind(Oid type, Oid eqop, Oid collation);

/*
 * gh_key_hash_fast computes the extended hash function of kind
 * (GH_HASH_INT2, ...) in line: the same arithmetic as PostgreSQL's
 * hashint2/4/8extended and hashoidextended (hash_uint32_extended of the
 * value, for int8 of its halves folded as int4 values are), which keeps
 * cross-type keys (int4 = int8) hashing alike.
 */
static inline uint64
gh_key_hash_fast(uint8 kind, Datum v)
{
	switch (kind)
	{
		case GH_HASH_INT2:
			return hash_bytes_uint32_extended((uint32) (int32) DatumGetInt16(v), 0);
		case GH_HASH_INT4:
			return hash_bytes_uint32_extended((uint32) DatumGetInt32(v), 0);
		case GH_HASH_OID:
			return hash_bytes_uint32_extended((uint32) DatumGetObjectId(v), 0);
		case GH_HASH_INT8:
			{
				int64		val = DatumGetInt64(v);
				uint32		lohalf = (uint32) val;
				uint32		hihalf = (uint32) (val >> 32);

				lohalf ^= (val >= 0) ? hihalf : ~hihalf;
				return hash_bytes_uint32_extended(lohalf, 0);
			}
	}
	return 0;
}

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
 * gh_key_hash_value returns the hash of key i of keys, whose value *v is not
 * NULL: gh_key_int_mix, the in-line form of its hash function, or, in
 * memory context tmp, where a varlena *v is detoasted first (*v is then the
 * detoasted value, in tmp), a call of that function or text's bytes hashed.
 */
static inline uint64
gh_key_hash_value(const GhKeySet *keys, int i, Datum *v, MemoryContext tmp)
{
	uint8		fast = keys->fast[i];
	MemoryContext old;
	uint64		h;

	if (keys->int_mix[i])
		return gh_key_int_mix(fast, *v);
	if (fast != GH_HASH_CALL && fast != GH_HASH_TEXT)
		return gh_key_hash_fast(fast, *v);
	old = MemoryContextSwitchTo(tmp);
	if (keys->typlen[i] == -1)
		*v = PointerGetDatum(PG_DETOAST_DATUM_PACKED(*v));
	if (fast == GH_HASH_TEXT)
		h = hash_bytes_extended((const unsigned char *) VARDATA_ANY(DatumGetPointer(*v)),
								VARSIZE_ANY_EXHDR(DatumGetPointer(*v)), 0);
	else
		h = DatumGetUInt64(FunctionCall2Coll(&keys->hash[i], keys->coll[i], *v,
											 UInt64GetDatum(0)));
	MemoryContextSwitchTo(old);
	return h;
}

/*
 * gh_key_null_hash is the hash of a NULL key at position i where NULL is a
 * value (GROUP BY): a constant of the position, so that NULLs make a group
 * of their own and a NULL in one key does not hash like one in another.
 */
static inline uint64
gh_key_null_hash(int i)
{
	return UINT64CONST(0x9e3779b97f4a7c15) * (uint64) (i + 1);
}

/*
 * gh_key_hash_keys is gh_key_hash_row and gh_key_hash_group: the keys of
 * the row into values[] (by-reference ones copied into cxt; with cxt NULL,
 * and an econtext, left where they are: valid until the next row) and the row's
 * 64-bit hash, the keys' hashes combined in key order with hash_combine64.
 * With nulls == NULL a NULL key sets *hasnull and ends the row; otherwise
 * nulls[i] says whether key i is NULL, which hashes as gh_key_null_hash.
 * What hashing allocates goes to econtext's per-tuple memory, or to cxt
 * when there is no econtext (every key is then a column of slot).
 */
static inline uint64
gh_key_hash_keys(const GhKeySet *keys, ExprContext *econtext,
				 TupleTableSlot *slot, Datum *values, bool *nulls,
				 MemoryContext cxt, bool *hasnull)
{
	MemoryContext tmp = econtext ? econtext->ecxt_per_tuple_memory : cxt;
	uint64		h = 0;

	*hasnull = false;
	for (int i = 0; i < keys->nkeys; i++)
	{
		AttrNumber	att = keys->att[i];
		bool		isnull;
		Datum		v;

		if (att > 0)
		{
			v = slot->tts_values[att - 1];
			isnull = slot->tts_isnull[att - 1];
		}
		else
			v = ExecEvalExprSwitchContext(keys->exprs[i], econtext, &isnull);
		if (isnull)
		{
			if (nulls == NULL)
			{
				*hasnull = true;
				return 0;
			}
			nulls[i] = true;
			values[i] = (Datum) 0;
			h = hash_combine64(h, gh_key_null_hash(i));
			continue;
		}
		if (nulls != NULL)
			nulls[i] = false;
		h = hash_combine64(h, gh_key_hash_value(keys, i, &v, tmp));
		if (keys->byval[i] || cxt == NULL)
			values[i] = v;
		else
		{
			MemoryContext old = MemoryContextSwitchTo(cxt);

			values[i] = datumCopy(v, false, keys->typlen[i]);
			MemoryContextSwitchTo(old);
		}
	}
	return h;
}

/*
 * gh_key_hash_row evaluates the keys of the row in econtext into values[],
 * copying by-reference values into cxt, and returns the row's 64-bit hash.
 * *hasnull is set if any key is NULL (the hash is then 0, and values[] is
 * filled only up to that key).  slot is the row's slot, all its attributes
 * deformed: a key that is a column of it (keys->att) is read from it without
 * evaluating an expression.
 */
static inline uint64
gh_key_hash_row(const GhKeySet *keys, ExprContext *econtext,
				TupleTableSlot *slot, Datum *values, MemoryContext cxt,
				bool *hasnull)
{
	return gh_key_hash_keys(keys, econtext, slot, values, NULL, cxt, hasnull);
}

/*
 * gh_key_hash_group is gh_key_hash_row for GROUP BY keys, every one a
 * column of slot (all its attributes deformed): NULL is a value, nulls[i]
 * says which keys are NULL, and the row is always hashed.  Hashing
 * allocates in cxt, where by-reference values are copied.
 */
static inline uint64
gh_key_hash_group(const GhKeySet *keys, TupleTableSlot *slot, Datum *values,
				  bool *nulls, MemoryContext cxt)
{
	bool		hasnull;

	return gh_key_hash_keys(keys, NULL, slot, values, nulls, cxt, &hasnull);
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
 * gh_key_equal applies a key's equality (kind, a GhKeyEqKind; the function
 * eq with collation coll; typlen, the keys' type length, read for
 * GH_EQ_IMAGE) to a and b, in line where the kind allows.  A caller that
 * may be given by-reference values runs it in a short-lived memory context:
 * the function may allocate.
 */
static inline bool
gh_key_equal(uint8 kind, FmgrInfo *eq, Oid coll, int16 typlen, Datum a,
			 Datum b)
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
		case GH_EQ_DATUM:
			return a == b;
		case GH_EQ_IMAGE:
			return datum_image_eq(a, b, false, typlen);
		case GH_EQ_TEXT:
			{
				const struct varlena *x = (const struct varlena *) DatumGetPointer(a);
				const struct varlena *y = (const struct varlena *) DatumGetPointer(b);

				/* compressed or out-of-line values: texteq detoasts them */
				if (VARATT_IS_COMPRESSED(x) || VARATT_IS_EXTERNAL(x) ||
					VARATT_IS_COMPRESSED(y) || VARATT_IS_EXTERNAL(y))
					break;
				return VARSIZE_ANY_EXHDR(x) == VARSIZE_ANY_EXHDR(y) &&
					memcmp(VARDATA_ANY(x), VARDATA_ANY(y), VARSIZE_ANY_EXHDR(x)) == 0;
			}
		default:
			break;
	}
	return DatumGetBool(FunctionCall2Coll(eq, coll, a, b));
}

#endif							/* GPUHASH_KEYS_H */
