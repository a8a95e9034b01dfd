/*-------------------------------------------------------------------------
 * keys.c
 *	  Hashing and equality of hash keys, shared by the join and the
 *	  aggregate (the API is described in keys.h).
 *
 * A key's hash is its type's extended hash function, called through fmgr,
 * except for the integer types: their hash functions are computed in line
 * (gh_key_hash_kind checks once per key that the in-line form equals the
 * function), and where both sides of a key are integers, their values are
 * mixed with gh_key_int_mix instead, which costs less and never gives two
 * distinct keys one hash.  A row's hash combines its keys' hashes in key
 * order with hash_combine64.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/hash.h"
#include "catalog/pg_amop.h"
#include "executor/executor.h"
#include "utils/catcache.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "keys.h"

static inline uint64 fast_hash(uint8 kind, Datum v);

/*
 * gpuhash_extended_hash_functions finds the extended hash support functions
 * of the two input types of opno in one of its hash families.  Used by the
 * join and by gpuhash_aggregate.
 */
bool
gpuhash_extended_hash_functions(Oid opno, Oid *lhs, Oid *rhs)
{
	CatCList   *catlist;
	bool		found = false;

	catlist = SearchSysCacheList1(AMOPOPID, ObjectIdGetDatum(opno));
	for (int i = 0; i < catlist->n_members && !found; i++)
	{
		Form_pg_amop aform = (Form_pg_amop) GETSTRUCT(&catlist->members[i]->tuple);

		if (aform->amopmethod != HASH_AM_OID ||
			aform->amopstrategy != HTEqualStrategyNumber)
			continue;
		*lhs = get_opfamily_proc(aform->amopfamily, aform->amoplefttype,
								 aform->amoplefttype, HASHEXTENDED_PROC);
		*rhs = get_opfamily_proc(aform->amopfamily, aform->amoprighttype,
								 aform->amoprighttype, HASHEXTENDED_PROC);
		found = OidIsValid(*lhs) && OidIsValid(*rhs);
	}
	ReleaseSysCacheList(catlist);
	return found;
}

/*
 * fast_hash computes the extended hash function of kind (GH_HASH_INT2, ...)
 * in line: the same arithmetic as PostgreSQL's hashint2/4/8extended and
 * hashoidextended (hash_uint32_extended of the value, for int8 of its halves
 * folded as int4 values are), which keeps cross-type keys (int4 = int8)
 * hashing alike.
 */
static inline uint64
fast_hash(uint8 kind, Datum v)
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
 * gh_key_hash_kind says whether the hash function fn can be computed in
 * line (a GhKeyHashKind), after checking on sample values that the in-line
 * form equals it.
 */
uint8
gh_key_hash_kind(FmgrInfo *fn, Oid coll)
{
	static const int64 samples[] = {0, 1, -1, 42, -42, 32767, -32768,
		PG_INT32_MAX, PG_INT32_MIN, INT64CONST(4294967296), INT64CONST(-4294967297),
	PG_INT64_MAX, PG_INT64_MIN};
	uint8		kind;

	switch (fn->fn_oid)
	{
		case F_HASHINT2EXTENDED:
			kind = GH_HASH_INT2;
			break;
		case F_HASHINT4EXTENDED:
			kind = GH_HASH_INT4;
			break;
		case F_HASHINT8EXTENDED:
			kind = GH_HASH_INT8;
			break;
		case F_HASHOIDEXTENDED:
			kind = GH_HASH_OID;
			break;
		default:
			return GH_HASH_CALL;
	}
	for (int i = 0; i < lengthof(samples); i++)
	{
		Datum		v;

		if (kind == GH_HASH_INT2)
			v = Int16GetDatum((int16) samples[i]);
		else if (kind == GH_HASH_INT4)
			v = Int32GetDatum((int32) samples[i]);
		else if (kind == GH_HASH_OID)
			v = ObjectIdGetDatum((Oid) samples[i]);
		else
			v = Int64GetDatum(samples[i]);
		if (DatumGetUInt64(FunctionCall2Coll(fn, coll, v, UInt64GetDatum(0))) !=
			fast_hash(kind, v))
			return GH_HASH_CALL;
	}
	return kind;
}

/*
 * gh_key_int_mix_ok says whether a key whose two sides hash as kind1 and
 * kind2 (GhKeyHashKind) may hash both with gh_key_int_mix.
 */
bool
gh_key_int_mix_ok(uint8 kind1, uint8 kind2)
{
	if (kind1 == GH_HASH_CALL || kind2 == GH_HASH_CALL)
		return false;
	/* oid compares with oid only; int2, int4 and int8 with one another */
	return (kind1 == GH_HASH_OID) == (kind2 == GH_HASH_OID);
}

/* gh_key_eq_kind says how the equality function fn is done (GhKeyEqKind). */
uint8
gh_key_eq_kind(Oid fn)
{
	switch (fn)
	{
		case F_INT2EQ:
			return GH_EQ_INT2;
		case F_INT4EQ:
		case F_OIDEQ:
			return GH_EQ_INT4;
		case F_INT8EQ:
			return GH_EQ_INT8;
		case F_INT48EQ:
			return GH_EQ_INT48;
		case F_INT84EQ:
			return GH_EQ_INT84;
	}
	return GH_EQ_CALL;
}

/*
 * gh_key_hash_row evaluates the keys of the row in econtext into values[],
 * copying by-reference values into cxt, and returns the row's 64-bit hash.
 * *hasnull is set if any key is NULL (the hash is then 0, and values[] is
 * filled only up to that key).  slot is the row's slot, all its attributes
 * deformed: a key that is a plain by-value column is read from it without
 * evaluating an expression.
 */
uint64
gh_key_hash_row(const GhKeySet *keys, ExprContext *econtext,
				TupleTableSlot *slot, Datum *values, MemoryContext cxt,
				bool *hasnull)
{
	uint64		h = 0;

	*hasnull = false;
	for (int i = 0; i < keys->nkeys; i++)
	{
		int16		typlen = keys->typlen[i];
		AttrNumber	att = keys->att[i];
		uint8		fast = keys->fast[i];
		bool		isnull;
		Datum		v;
		MemoryContext old;

		if (att > 0)
		{
			v = slot->tts_values[att - 1];
			isnull = slot->tts_isnull[att - 1];
		}
		else
			v = ExecEvalExprSwitchContext(keys->exprs[i], econtext, &isnull);
		if (isnull)
		{
			*hasnull = true;
			return 0;
		}
		if (keys->int_mix[i])
			h = hash_combine64(h, gh_key_int_mix(fast, v));
		else if (fast != GH_HASH_CALL)
			h = hash_combine64(h, fast_hash(fast, v));
		else
		{
			old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
			if (typlen == -1)
				v = PointerGetDatum(PG_DETOAST_DATUM_PACKED(v));
			h = hash_combine64(h, DatumGetUInt64(FunctionCall2Coll(&keys->hash[i],
																   keys->coll[i], v,
																   UInt64GetDatum(0))));
			MemoryContextSwitchTo(old);
		}
		if (keys->byval[i])
			values[i] = v;
		else
		{
			old = MemoryContextSwitchTo(cxt);
			values[i] = datumCopy(v, false, typlen);
			MemoryContextSwitchTo(old);
		}
	}
	return h;
}
