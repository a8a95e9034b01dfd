/*-------------------------------------------------------------------------
 * keys.c
 *	  Hashing and equality of hash keys, shared by the join and the
 *	  aggregate: the decisions made once per key (the API is described in
 *	  keys.h, where the per-row code is).
 *
 * A key's hash is its type's extended hash function, called through fmgr,
 * except for the integer types: their hash functions are computed in line
 * (gh_key_hash_kind checks once per key that the in-line form equals the
 * function), and where both sides of a join's key are integers, their
 * values are mixed with gh_key_int_mix instead, which costs less and never
 * gives two distinct keys one hash.  A row's hash combines its keys' hashes
 * in key order with hash_combine64.
 *
 * A key's equality is its operator's function, except where it can be done
 * in line: a join's integer operators by their function, and text's under
 * a deterministic collation (gh_key_eq_kind), and GROUP BY's operators whose equality is that of the stored image
 * (gh_key_group_eq_kind), the same test that lets the aggregate group such
 * keys on the device.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/hash.h"
#include "access/nbtree.h"
#include "catalog/pg_amop.h"
#include "utils/builtins.h"
#include "utils/catcache.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "keys.h"

static uint8 gh_key_text_kind(FmgrInfo *fn, Oid coll);
static uint8 gh_key_hash_kind(FmgrInfo *fn, Oid coll);

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
 * gh_key_set_init allocates the arrays of a key set of nkeys keys, all of
 * them zero (no key a column of the row, no expression); coll and int_mix
 * are the caller's, which fills them in.
 */
void
gh_key_set_init(GhKeySet *keys, int nkeys, const Oid *coll,
				const bool *int_mix)
{
	keys->nkeys = nkeys;
	keys->exprs = palloc0(sizeof(ExprState *) * nkeys);
	keys->att = palloc0(sizeof(AttrNumber) * nkeys);
	keys->hash = palloc0(sizeof(FmgrInfo) * nkeys);
	keys->fast = palloc0(sizeof(uint8) * nkeys);
	keys->coll = coll;
	keys->int_mix = int_mix;
	keys->typlen = palloc0(sizeof(int16) * nkeys);
	keys->byval = palloc0(sizeof(bool) * nkeys);
}

/*
 * gh_key_set_hash sets key i of keys, of type type, to be hashed by the
 * extended hash function hashfn, in line where gh_key_hash_kind allows.
 * The key's collation must be set already.
 */
void
gh_key_set_hash(GhKeySet *keys, int i, Oid hashfn, Oid type)
{
	fmgr_info(hashfn, &keys->hash[i]);
	keys->fast[i] = gh_key_hash_kind(&keys->hash[i], keys->coll[i]);
	get_typlenbyval(type, &keys->typlen[i], &keys->byval[i]);
}

/*
 * gh_key_text_kind says whether text's hash function fn hashes the bytes of
 * the value under collation coll, as it does for a deterministic one: then
 * GH_HASH_TEXT, after checking on sample values that it does.
 */
static uint8
gh_key_text_kind(FmgrInfo *fn, Oid coll)
{
	static const char *const samples[] = {"", "a", "key-1234567", "MiXeD Case",
		"a string longer than one cache line, so that the hash runs over several blocks of its input"};

	if (!OidIsValid(coll) || !get_collation_isdeterministic(coll))
		return GH_HASH_CALL;
	for (int i = 0; i < lengthof(samples); i++)
	{
		text	   *v = cstring_to_text(samples[i]);
		bool		same = DatumGetUInt64(FunctionCall2Coll(fn, coll, PointerGetDatum(v),
															UInt64GetDatum(0))) ==
			hash_bytes_extended((const unsigned char *) VARDATA_ANY(v),
								VARSIZE_ANY_EXHDR(v), 0);

		pfree(v);
		if (!same)
			return GH_HASH_CALL;
	}
	return GH_HASH_TEXT;
}

/*
 * gh_key_hash_kind says whether the hash function fn can be computed in
 * line (a GhKeyHashKind), after checking on sample values that the in-line
 * form equals it.
 */
static uint8
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
		case F_HASHTEXTEXTENDED:
			return gh_key_text_kind(fn, coll);
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
			gh_key_hash_fast(kind, v))
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
	/* both integer kinds: oid with oid only; int2, int4 and int8 together */
	if (kind1 < GH_HASH_INT2 || kind1 > GH_HASH_OID ||
		kind2 < GH_HASH_INT2 || kind2 > GH_HASH_OID)
		return false;
	return (kind1 == GH_HASH_OID) == (kind2 == GH_HASH_OID);
}

/*
 * gh_key_eq_kind says how the equality function fn, under collation coll,
 * is done (GhKeyEqKind).  texteq under a deterministic collation compares
 * the values' bytes (it says so itself); under another it calls the
 * collation's comparison.
 */
uint8
gh_key_eq_kind(Oid fn, Oid coll)
{
	switch (fn)
	{
		case F_TEXTEQ:
			if (OidIsValid(coll) && get_collation_isdeterministic(coll))
				return GH_EQ_TEXT;
			return GH_EQ_CALL;
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
 * gh_key_group_eq_kind says how GROUP BY compares two keys of type with
 * its grouping operator eqop (a GhKeyEqKind): GH_EQ_DATUM or GH_EQ_IMAGE
 * where eqop is equality of the stored image, otherwise as gh_key_eq_kind
 * says of eqop's function.  The type's default btree opclass answers
 * through its equalimage support function, for this collation; only that
 * opclass's own equality counts (text's pattern opclass shares "=" and
 * calls it bytewise, which is not true for nondeterministic collations).
 */
uint8
gh_key_group_eq_kind(Oid type, Oid eqop, Oid collation)
{
	TypeCacheEntry *tc = lookup_type_cache(type, TYPECACHE_BTREE_OPFAMILY);
	Oid			proc;

	if (OidIsValid(tc->btree_opf) &&
		get_opfamily_member(tc->btree_opf, tc->btree_opintype, tc->btree_opintype,
							BTEqualStrategyNumber) == eqop)
	{
		proc = get_opfamily_proc(tc->btree_opf, tc->btree_opintype,
								 tc->btree_opintype, BTEQUALIMAGE_PROC);
		if (OidIsValid(proc) &&
			DatumGetBool(OidFunctionCall1Coll(proc, collation,
											  ObjectIdGetDatum(tc->btree_opintype))))
			return get_typbyval(type) ? GH_EQ_DATUM : GH_EQ_IMAGE;
	}
	return gh_key_eq_kind(get_opcode(eqop), collation);
}
