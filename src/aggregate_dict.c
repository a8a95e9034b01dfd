/*-------------------------------------------------------------------------
 * aggregate_dict.c
 *	  Numbered keys: GROUP BY keys of types the device cannot compare (text,
 *	  char(n), numeric, floats, arrays, ...) given dense numbers that it can.
 *
 * The device groups 64-bit words exactly (cuda/gh_aggregate.h); a key whose
 * equality is not equality of its Datum's bits is first numbered: the run
 * keeps, per such key, a dictionary of the distinct values the pass has met,
 * found by the type's own extended hash function and equality operator
 * (keys.h), and the row's word is the value's number.  Equal values, which
 * may differ in bytes (1.0 and 1.00, char(n) padding, a nondeterministic
 * collation), get one number, so the device's groups are PostgreSQL's; the
 * result turns numbers back into the first value met, as a hash aggregate
 * keeps its first row's.  Parallel workers number values through a
 * dictionary they share (below), and past its budget send with a packet a
 * dictionary of the packet's distinct values (compared by bytes only:
 * aggregate_pack.c), so the leader looks up a value once per global number,
 * or once per packet, never each row.
 *
 * In front of each dictionary, a byte cache: a direct-mapped table from
 * the bytes of a short value (its data, whatever its varlena header) to its
 * number.  Equal bytes are one value, so a hit is the number dict_find
 * would give, without the type's hash function, collation lookup and
 * equality; a value whose bytes differ from its group's (1.0 against 1.00,
 * char(n) padding) misses, and dict_find finds its number as before.  The
 * few distinct values of a low-cardinality key (TPC-H's flags) then cost a
 * hash of a few bytes and a memcmp a row.  Only numbers are cached: a value
 * past the budget, which has none, always goes to dict_find.
 *
 * A dictionary is representatives' memory: it lives in rep_cxt, counts
 * against the budget with the group sets and is given back with them after
 * each pass (gh_agg_dict_reset).  Past the budget a pass takes no new group,
 * so a value not yet numbered gets no number either: its rows are bound for
 * a partition, and their word is GH_DICT_MISS with the value's hash (the
 * same for every row of the value, which keeps its rows in one partition);
 * the batch keeps the value for the spill (GhDictMiss).
 *
 * THE SHARED DICTIONARY.  With a text key of 10^5 values over 10^7 rows,
 * packets of a few thousand rows each hold most of the values, and a leader
 * that looked up each packet's values spent most of the query doing so.  So
 * the participants of a parallel GpuHashAggPack number values together: one
 * dshash table in the Gather's DSA, keyed by (GROUP BY key, the value's
 * bytes), gives each value a global number, dense per key, handed out
 * under the table's partition lock.  aggregate_pack.c creates the table in
 * its InitializeDSMCustomScan (so the handle is in the DSM before any worker
 * starts, and no participant races to create it), attaches it in each
 * worker, empties it in ReInitializeDSMCustomScan and detaches at shutdown;
 * its memory is the DSA's, which goes with the parallel context.  Each
 * participant keeps a cache of bytes -> global number in front of it (up
 * to half of its own work_mem * hash_mem_multiplier), so that a value
 * costs one lookup in the shared table per participant while the cache
 * has room, and one per row of it after.
 *
 * A participant sends a global number only after it has introduced it: the
 * first packet of that participant that uses the number carries the value
 * and the number as a dictionary entry (its tag), once, whether or not its
 * cache kept the value (a bitmap of the numbers it introduced).  A tuple queue keeps a
 * participant's packets in order, so the leader knows every global number's
 * value before a row uses it, without reading the DSA itself (which the
 * leader has installed only while it runs the plan below the Gather).  The
 * leader keeps the value of each global number (GhAggGlobal) and gives it
 * the run's number once per pass, by the type's hash and equality as any
 * value (dict_lookup): values equal by the type but not in bytes (1.0 and
 * 1.00, char(n) padding, nondeterministic collations) have two global
 * numbers and one run number, as before.  Past the budget such a lookup
 * gives no number, and the rows of that global number go to the spill with
 * its kept value, as rows of a packet entry do.
 *
 * The shared table counts its values against a quarter of the aggregate's
 * memory budget (work_mem * hash_mem_multiplier for each participant, as
 * the run's: aggregate_spill.c): past it no participant adds a value, and a value not yet
 * numbered travels as today, an entry of its packet's own dictionary.  The
 * result never depends on the room there was.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "lib/dshash.h"
#include "storage/lwlock.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/numeric.h"

#include "aggregate.h"

static int64 dict_find(GhAggRun *run, int k, Datum *v, uint64 *hash);
static void global_learn(GhAggRun *run, int k, uint32 g, Datum v);
static int	shared_key_compare(const void *a, const void *b, size_t size, void *arg);
static dshash_hash shared_key_hash(const void *key, size_t size, void *arg);

/*
 * The shared dictionary in the parallel query's DSM: the table's handle,
 * the numbers given so far per key and the bytes its values take.
 */
struct GhSharedDict
{
	dshash_table_handle handle;
	int			tranche_id;
	Size		budget;
	pg_atomic_uint64 bytes;
	pg_atomic_uint32 full;		/* 1: a value found no room */
	pg_atomic_uint32 next[GH_AGG_MAX_KEYS];
};

/* A process's attachment to the shared dictionary. */
struct GhSharedDictRef
{
	GhSharedDict *sd;
	dsa_area   *area;
	dshash_table *table;
};

/*
 * A key of the shared table: the GROUP BY key, the value's bytes and their
 * hash.  A stored key keeps the bytes in the DSA (data); a key looked up
 * points at them in the process's memory (local), as typcache.c's shared
 * record registry does with tuple descriptors.
 */
typedef struct GhSharedKey
{
	uint32		hash;
	uint32		key;
	uint32		len;
	dsa_pointer data;
	const char *local;
} GhSharedKey;

typedef struct GhSharedEntry
{
	GhSharedKey key;
	uint32		num;
} GhSharedEntry;

/* what a value costs the budget: its entry, its bytes, the DSA's chunk */
#define SHARED_VALUE_BYTES(len) \
	(MAXALIGN(sizeof(GhSharedEntry)) + MAXALIGN(len) + 2 * sizeof(dsa_pointer))

static int	shared_tranche_id = 0;

/*
 * The byte cache: entries of a value's number + 1 (0: empty), the length of
 * its bytes and the bytes, for values of at most GH_DICT_CACHE_DATA bytes.
 * It takes at most a thirty-second of the memory budget, and at most
 * GH_DICT_CACHE_SLOTS entries; a key gets none where that is fewer than
 * GH_DICT_CACHE_MIN (the budget then is tens of kB).
 */
#define GH_DICT_CACHE_SLOTS 4096
#define GH_DICT_CACHE_MIN	64
#define GH_DICT_CACHE_DATA	26

typedef struct GhDictCacheEnt
{
	uint32		id1;
	uint16		len;
	char		data[GH_DICT_CACHE_DATA];
} GhDictCacheEnt;


/*
 * cache_bytes finds the bytes that stand for value *v of key: a by-value
 * Datum's bits, a fixed-length value's typlen bytes, a varlena's data (any
 * header; not one compressed or stored out of line, which would have to be
 * expanded first).  False where the value has no such bytes or they are too
 * long for the cache.
 */
static inline bool
cache_bytes(const GhAggKey *key, const Datum *v, const char **p, Size *len)
{
	if (key->typbyval)
	{
		*p = (const char *) v;
		*len = sizeof(Datum);
	}
	else if (key->typlen > 0)
	{
		*p = DatumGetPointer(*v);
		*len = key->typlen;
	}
	else if (key->typlen == -1)
	{
		struct varlena *x = (struct varlena *) DatumGetPointer(*v);

		if (VARATT_IS_EXTERNAL(x) || VARATT_IS_COMPRESSED(x))
			return false;
		*p = VARDATA_ANY(x);
		*len = VARSIZE_ANY_EXHDR(x);
	}
	else
		return false;
	return *len <= GH_DICT_CACHE_DATA;
}

/*
 * dict_lookup is dict_find with the byte cache in front: the number of value
 * *v of numbered key k, or -1 past the budget (*hash then set, as by
 * dict_find; on a hit it is not).
 */
static int64
dict_lookup(GhAggRun *run, int k, Datum *v, uint64 *hash)
{
	GhAggDict  *d = &run->dict[k];
	const char *p = NULL;
	Size		len = 0;
	GhDictCacheEnt *e = NULL;
	int64		id;

	if (d->cache_slots == 0)
	{
		uint32		n = GH_DICT_CACHE_SLOTS;

		while (n >= GH_DICT_CACHE_MIN &&
			   (Size) n * sizeof(GhDictCacheEnt) > run->spill.budget / 32)
			n /= 2;
		d->cache_slots = n >= GH_DICT_CACHE_MIN ? n : 1;
		if (d->cache_slots > 1)
			d->cache = MemoryContextAllocZero(run->rep_cxt,
											  sizeof(GhDictCacheEnt) * d->cache_slots);
	}
	if (d->cache != NULL && cache_bytes(&run->plan->keys[k], v, &p, &len))
	{
		uint32		h = hash_bytes((const unsigned char *) p, (int) len);

		e = &d->cache[h & (d->cache_slots - 1)];
		if (e->id1 != 0 && e->len == len && memcmp(e->data, p, len) == 0)
			return (int64) e->id1 - 1;
		/* dict_find may replace *v; p stays the bytes of the value given */
	}
	id = dict_find(run, k, v, hash);
	if (e != NULL && id >= 0)
	{
		e->id1 = (uint32) id + 1;
		e->len = (uint16) len;
		memcpy(e->data, p, len);
	}
	return id;
}

/*
 * dict_find returns the number of value *v (not NULL) of numbered key k,
 * numbering it if it is new and the pass still takes groups; -1 when it is
 * new past the budget.  *hash is set to the value's hash; *v may be
 * replaced by its detoasted form, in batch memory.
 */
static int64
dict_find(GhAggRun *run, int k, Datum *v, uint64 *hash)
{
	GhAggDict  *d = &run->dict[k];
	GhAggKey   *key = &run->plan->keys[k];
	MemoryContext old = MemoryContextSwitchTo(run->batch.cxt);
	uint64		h = gh_key_hash_value(&run->plan->group_keys, k, v, run->batch.cxt);
	uint64		slot = 0;
	uint32		id;

	*hash = h;
	if (d->nslots > 0)
	{
		uint64		mask = d->nslots - 1;

		for (slot = gh_mix64(h) & mask; (id = d->slots[slot]) != 0; slot = (slot + 1) & mask)
		{
			if (d->hash[id - 1] == h &&
				gh_key_equal(key->eq_kind, &key->eq, key->collation, key->typlen,
							 *v, d->vals[id - 1]))
			{
				MemoryContextSwitchTo(old);
				return id - 1;
			}
		}
	}
	MemoryContextSwitchTo(old);
	if (run->spill.active)
		return -1;

	if (d->n >= GH_AGG_MAX_GROUPS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("gpuhash_aggregate: more than %llu distinct values of GROUP BY key %d",
						(unsigned long long) GH_AGG_MAX_GROUPS, k + 1)));
	old = MemoryContextSwitchTo(run->rep_cxt);
	if (d->n == d->cap)
	{
		uint32		ncap = d->cap == 0 ? 256 : (uint32) Min((uint64) d->cap * 2,
															   GH_AGG_MAX_GROUPS);

		d->vals = d->vals ? repalloc_huge(d->vals, sizeof(Datum) * ncap) :
			MemoryContextAllocHuge(run->rep_cxt, sizeof(Datum) * ncap);
		d->hash = d->hash ? repalloc_huge(d->hash, sizeof(uint64) * ncap) :
			MemoryContextAllocHuge(run->rep_cxt, sizeof(uint64) * ncap);
		d->cap = ncap;
	}
	if ((uint64) (d->n + 1) * 2 > d->nslots)
	{
		uint64		nslots = Max(d->nslots * 2, 512);
		uint64		mask = nslots - 1;

		if (d->slots)
			pfree(d->slots);
		d->slots = MemoryContextAllocHuge(run->rep_cxt, sizeof(uint32) * nslots);
		memset(d->slots, 0, sizeof(uint32) * nslots);
		for (uint32 i = 0; i < d->n; i++)
		{
			uint64		s = gh_mix64(d->hash[i]) & mask;

			while (d->slots[s] != 0)
				s = (s + 1) & mask;
			d->slots[s] = i + 1;
		}
		d->nslots = nslots;
		for (slot = gh_mix64(h) & mask; d->slots[slot] != 0; slot = (slot + 1) & mask)
			;
	}
	d->vals[d->n] = datumCopy(*v, key->typbyval, key->typlen);
	if (!key->typbyval)
		d->value_bytes += datumGetSize(d->vals[d->n], false, key->typlen);
	d->bytes = (Size) d->cap * (sizeof(Datum) + sizeof(uint64)) +
		(Size) d->nslots * sizeof(uint32) + d->value_bytes +
		(d->cache ? sizeof(GhDictCacheEnt) * d->cache_slots : 0);
	d->hash[d->n] = h;
	d->slots[slot] = d->n + 1;
	MemoryContextSwitchTo(old);
	return d->n++;
}

/*
 * gh_agg_dict_miss records that staged row's key k, value v (in batch
 * memory), has no number.
 */
void
gh_agg_dict_miss(GhAggRun *run, uint32 row, int k, Datum v)
{
	GhAggBatch *b = &run->batch;

	if (b->nmiss == b->miss_cap)
	{
		int			ncap = b->miss_cap == 0 ? 64 : b->miss_cap * 2;

		b->miss = b->miss ? repalloc_huge(b->miss, sizeof(GhDictMiss) * ncap) :
			MemoryContextAllocHuge(b->cxt, sizeof(GhDictMiss) * ncap);
		b->miss_cap = ncap;
	}
	b->miss[b->nmiss].row = row;
	b->miss[b->nmiss].key = k;
	b->miss[b->nmiss].value = v;
	b->nmiss++;
	b->miss_sorted = false;
}

/* miss_word is the word of a value that has no number (GH_DICT_MISS). */
static inline uint64
miss_word(uint64 hash)
{
	return GH_DICT_MISS | (hash >> 1);
}

/*
 * gh_agg_dict_encode returns the word of value v (not NULL) of numbered key
 * k for staged row row: its number, or past the budget a GH_DICT_MISS word
 * (the value then kept for the spill).
 */
uint64
gh_agg_dict_encode(GhAggRun *run, int k, Datum v, uint32 row)
{
	uint64		h;
	int64		id = dict_lookup(run, k, &v, &h);
	GhAggKey   *key = &run->plan->keys[k];

	if (id >= 0)
		return (uint64) id;
	gh_agg_dict_miss(run, row, k, datumCopy(v, key->typbyval, key->typlen));
	return miss_word(h);
}

/*
 * gh_agg_dict_packet reads a packet's dictionary of numbered key k: count
 * values in bytes bytes at dict (MAXALIGNed memory that lasts as long as
 * the batch), each MAXALIGNed from dict (aggregate.h tells the format).
 * words[j] becomes value j's word and vals[j] the value; a GH_DICT_MISS
 * word's rows are for the caller to record (gh_agg_dict_miss).  An entry
 * whose tag (uint32 tags[count], unaligned) names a global number
 * introduces that number's value: its word is PG_UINT64_MAX, which no row
 * may use.
 */
void
gh_agg_dict_packet(GhAggRun *run, int k, const char *dict, uint32 count,
				   uint32 bytes, const char *tags, uint64 *words, Datum *vals)
{
	GhAggKey   *key = &run->plan->keys[k];
	Size		off = 0;

	for (uint32 j = 0; j < count; j++)
	{
		Size		len;
		Datum		v;
		uint64		h;
		int64		id;
		uint32		tag;

		if (key->typbyval)
		{
			len = sizeof(Datum);
			if (bytes - off < len)
				elog(ERROR, "gpuhash_aggregate: malformed packet dictionary");
			memcpy(&v, dict + off, sizeof(Datum));
		}
		else
		{
			if (key->typlen > 0)
				len = key->typlen;
			else
			{
				if (bytes - off < VARHDRSZ)
					elog(ERROR, "gpuhash_aggregate: malformed packet dictionary");
				if (!VARATT_IS_4B_U(dict + off))
					elog(ERROR, "gpuhash_aggregate: malformed packet dictionary");
				len = VARSIZE(dict + off);
				if (len < VARHDRSZ)
					elog(ERROR, "gpuhash_aggregate: malformed packet dictionary");
			}
			if (bytes - off < len)
				elog(ERROR, "gpuhash_aggregate: malformed packet dictionary");
			v = PointerGetDatum(dict + off);
		}
		off += MAXALIGN(len);
		if (off > bytes)
			elog(ERROR, "gpuhash_aggregate: malformed packet dictionary");
		memcpy(&tag, tags + 4 * (Size) j, 4);
		vals[j] = v;
		if (tag != GH_PACKET_LOCAL)
		{
			/* rows use the global number; the value is learned once */
			if (tag >= GH_PACKET_GLOBAL)
				elog(ERROR, "gpuhash_aggregate: malformed packet dictionary");
			global_learn(run, k, tag, v);
			words[j] = PG_UINT64_MAX;	/* rows name it by number only */
			run->stats.dict_intro++;
			continue;
		}
		id = dict_lookup(run, k, &v, &h);
		words[j] = id >= 0 ? (uint64) id : miss_word(h);
		vals[j] = v;
		run->stats.dict_packet++;
	}
	if (off != bytes)
		elog(ERROR, "gpuhash_aggregate: malformed packet dictionary");
}

/*
 * global_learn keeps value v (in batch memory) of global number g of
 * numbered key k, unless a packet introduced it before.
 */
static void
global_learn(GhAggRun *run, int k, uint32 g, Datum v)
{
	GhAggGlobal *gl = &run->global[k];
	GhAggKey   *key = &run->plan->keys[k];
	MemoryContext old;

	if (g < gl->cap && gl->ids[g] != GH_GLOBAL_UNKNOWN)
		return;
	old = MemoryContextSwitchTo(run->cxt);
	if (g >= gl->cap)
	{
		uint32		ncap = Max(gl->cap, 256);

		while (ncap <= g)
			ncap = (uint32) Min((uint64) ncap * 2, (uint64) GH_PACKET_GLOBAL);
		gl->vals = gl->vals ? repalloc_huge(gl->vals, sizeof(Datum) * ncap) :
			MemoryContextAllocHuge(run->cxt, sizeof(Datum) * ncap);
		gl->ids = gl->ids ? repalloc_huge(gl->ids, sizeof(int64) * ncap) :
			MemoryContextAllocHuge(run->cxt, sizeof(int64) * ncap);
		gl->hash = gl->hash ? repalloc_huge(gl->hash, sizeof(uint64) * ncap) :
			MemoryContextAllocHuge(run->cxt, sizeof(uint64) * ncap);
		for (uint32 i = gl->cap; i < ncap; i++)
			gl->ids[i] = GH_GLOBAL_UNKNOWN;
		gl->bytes += (Size) (ncap - gl->cap) * (sizeof(Datum) + sizeof(int64) + sizeof(uint64));
		gl->cap = ncap;
	}
	gl->vals[g] = datumCopy(v, key->typbyval, key->typlen);
	if (!key->typbyval)
		gl->bytes += datumGetSize(gl->vals[g], false, key->typlen);
	gl->ids[g] = GH_GLOBAL_UNSEEN;
	run->stats.dict_global++;
	MemoryContextSwitchTo(old);
}

/*
 * gh_agg_dict_global returns the word of global number g of numbered key k
 * for staged row row: the pass's number of its value, looked up once per
 * pass, or past the budget a GH_DICT_MISS word (the value then recorded
 * for the spill).
 */
uint64
gh_agg_dict_global(GhAggRun *run, int k, uint32 g, uint32 row)
{
	GhAggGlobal *gl = &run->global[k];
	int64		id;

	if (g >= gl->cap || gl->ids[g] == GH_GLOBAL_UNKNOWN)
		elog(ERROR, "gpuhash_aggregate: packet uses global key number %u before its value", g);
	id = gl->ids[g];
	if (id == GH_GLOBAL_UNSEEN)
	{
		Datum		v = gl->vals[g];
		uint64		h;

		id = dict_lookup(run, k, &v, &h);
		if (id < 0)
		{
			id = GH_GLOBAL_MISS;
			gl->hash[g] = h;
		}
		gl->ids[g] = id;
	}
	if (id >= 0)
		return (uint64) id;
	gh_agg_dict_miss(run, row, k, gl->vals[g]);
	return miss_word(gl->hash[g]);
}

/* cmp_miss orders GhDictMiss by row, then key, for bsearch. */
static int
cmp_miss(const void *a, const void *b)
{
	const GhDictMiss *x = a;
	const GhDictMiss *y = b;

	if (x->row != y->row)
		return x->row < y->row ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key ? 1 : 0;
}

/*
 * gh_agg_key_value returns the value of word (not NULL) of device key k for
 * staged row row: a numbered key's value (gh_agg_dict_value), the NUMERIC
 * year of a key the device computed with gh_agg_year_word (in the current
 * memory context), or the word itself, a by-value key's Datum.
 */
Datum
gh_agg_key_value(GhAggRun *run, int k, uint64 word, uint32 row)
{
	GhAggKey   *key = &run->plan->keys[k];

	if (key->dict)
		return gh_agg_dict_value(run, k, word, row);
	if (key->year_col >= 0)
	{
		if ((int64) word == GH_AGG_YEAR_PINF || (int64) word == GH_AGG_YEAR_NINF)
			return DirectFunctionCall3(numeric_in,
									   CStringGetDatum((int64) word == GH_AGG_YEAR_PINF ?
													   "Infinity" : "-Infinity"),
									   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
		return NumericGetDatum(int64_to_numeric((int64) word));
	}
	return (Datum) word;
}

/*
 * gh_agg_dict_value returns the value of word (not NULL) of numbered key k
 * for staged row row.
 */
Datum
gh_agg_dict_value(GhAggRun *run, int k, uint64 word, uint32 row)
{
	GhAggDict  *d = &run->dict[k];
	GhAggBatch *b = &run->batch;
	GhDictMiss	want;
	GhDictMiss *hit;

	if (!(word & GH_DICT_MISS))
	{
		if (word >= d->n)
			elog(ERROR, "gpuhash_aggregate: key number " UINT64_FORMAT " out of range", word);
		return d->vals[word];
	}
	if (!b->miss_sorted)
	{
		if (b->nmiss > 1)
			qsort(b->miss, b->nmiss, sizeof(GhDictMiss), cmp_miss);
		b->miss_sorted = true;
	}
	want.row = row;
	want.key = k;
	hit = bsearch(&want, b->miss, b->nmiss, sizeof(GhDictMiss), cmp_miss);
	if (hit == NULL)
		elog(ERROR, "gpuhash_aggregate: no value for key %d of row %u", k + 1, row);
	return hit->value;
}

/*
 * gh_agg_dict_reset forgets every dictionary: their memory went with the
 * representatives' (gh_agg_sets_reset).
 */
void
gh_agg_dict_reset(GhAggRun *run)
{
	memset(run->dict, 0, sizeof(run->dict));
	/* a run of more keys than GH_AGG_MAX_KEYS checks them all on the host */
	for (int k = 0; k < Min(run->nkeys, GH_AGG_MAX_KEYS); k++)
	{
		GhAggGlobal *gl = &run->global[k];

		for (uint32 g = 0; g < gl->cap; g++)
			if (gl->ids[g] != GH_GLOBAL_UNKNOWN)
				gl->ids[g] = GH_GLOBAL_UNSEEN;
	}
}

/* gh_agg_dict_bytes is the host memory the dictionaries hold. */
Size
gh_agg_dict_bytes(GhAggRun *run)
{
	Size		bytes = 0;

	for (int k = 0; k < Min(run->nkeys, GH_AGG_MAX_KEYS); k++)
		bytes += run->dict[k].bytes + run->global[k].bytes;
	return bytes;
}

/*
 * shared_key_bytes is where the bytes of a shared table's key are: in this
 * process's memory for a key looked up, in the DSA for a stored one.
 */
static inline const char *
shared_key_bytes(const GhSharedKey *key, dsa_area *area)
{
	return key->local ? key->local : dsa_get_address(area, key->data);
}

/* shared_key_compare is the shared table's key equality: bytes alike. */
static int
shared_key_compare(const void *a, const void *b, size_t size, void *arg)
{
	const GhSharedKey *x = a;
	const GhSharedKey *y = b;
	dsa_area   *area = ((GhSharedDictRef *) arg)->area;

	if (x->hash != y->hash || x->key != y->key || x->len != y->len)
		return 1;
	return memcmp(shared_key_bytes(x, area), shared_key_bytes(y, area), x->len);
}

/* shared_key_hash is the shared table's hash: the bytes', and the key's. */
static dshash_hash
shared_key_hash(const void *key, size_t size, void *arg)
{
	const GhSharedKey *x = key;

	return x->hash ^ (x->key * 0x9E3779B1U);
}

/* shared_params fills in the shared table's dshash parameters. */
static void
shared_params(dshash_parameters *params, int tranche_id)
{
	params->key_size = sizeof(GhSharedKey);
	params->entry_size = sizeof(GhSharedEntry);
	params->compare_function = shared_key_compare;
	params->hash_function = shared_key_hash;
	params->tranche_id = tranche_id;
}

/* gh_shared_dict_size is the DSM a shared dictionary takes. */
Size
gh_shared_dict_size(void)
{
	return sizeof(GhSharedDict);
}

/*
 * gh_shared_dict_create makes an empty shared dictionary in sd (DSM) with
 * its table in area, of budget bytes of values.  Only the leader calls it,
 * before the workers start; it attaches with gh_shared_dict_attach.
 */
void
gh_shared_dict_create(GhSharedDict *sd, dsa_area *area, Size budget)
{
	dshash_parameters params;
	GhSharedDictRef ref = {sd, area, NULL};
	dshash_table *table;

	if (shared_tranche_id == 0)
		shared_tranche_id = LWLockNewTrancheId();
	LWLockRegisterTranche(shared_tranche_id, "gpuhash_dictionary");
	sd->tranche_id = shared_tranche_id;
	sd->budget = budget;
	pg_atomic_init_u64(&sd->bytes, 0);
	pg_atomic_init_u32(&sd->full, 0);
	for (int k = 0; k < GH_AGG_MAX_KEYS; k++)
		pg_atomic_init_u32(&sd->next[k], 0);
	shared_params(&params, sd->tranche_id);
	/* the functions' argument is only read while the table is used */
	table = dshash_create(area, &params, &ref);
	sd->handle = dshash_get_hash_table_handle(table);
	dshash_detach(table);
}

/*
 * gh_shared_dict_attach attaches this process to the shared dictionary sd
 * whose table is in area.
 */
GhSharedDictRef *
gh_shared_dict_attach(GhSharedDict *sd, dsa_area *area)
{
	GhSharedDictRef *ref = palloc0(sizeof(GhSharedDictRef));
	dshash_parameters params;

	LWLockRegisterTranche(sd->tranche_id, "gpuhash_dictionary");
	ref->sd = sd;
	ref->area = area;
	shared_params(&params, sd->tranche_id);
	ref->table = dshash_attach(area, &params, sd->handle, ref);
	return ref;
}

/* gh_shared_dict_detach ends this process's attachment. */
void
gh_shared_dict_detach(GhSharedDictRef *ref)
{
	if (ref->table != NULL)
		dshash_detach(ref->table);
	ref->table = NULL;
}

/*
 * gh_shared_dict_reset empties the shared dictionary for a rescan: its
 * values and table are given back to the DSA and a new, empty table takes
 * its place, ref (the leader's attachment, the only one left: the workers
 * of the last scan have ended) attached to it.
 */
void
gh_shared_dict_reset(GhSharedDict *sd, GhSharedDictRef *ref)
{
	dshash_seq_status status;
	GhSharedEntry *e;
	dsa_area   *area = ref->area;

	if (ref->table == NULL)
		ref->table = gh_shared_dict_attach(sd, area)->table;
	dshash_seq_init(&status, ref->table, true);
	while ((e = dshash_seq_next(&status)) != NULL)
		dsa_free(area, e->key.data);
	dshash_seq_term(&status);
	dshash_destroy(ref->table);
	ref->table = NULL;
	gh_shared_dict_create(sd, area, sd->budget);
	ref->table = gh_shared_dict_attach(sd, area)->table;
}

/*
 * gh_shared_dict_number returns the global number of the value of numbered
 * key k whose len bytes at data hash to hash, numbering it if it is new
 * and the dictionary has room; -1 if it is new past the budget.
 */
int64
gh_shared_dict_number(GhSharedDictRef *ref, int k, const char *data,
					  uint32 len, uint32 hash)
{
	GhSharedDict *sd = ref->sd;
	GhSharedKey key;
	GhSharedEntry *e;
	bool		found;
	dsa_pointer dp;
	uint32		num;
	Size		cost = SHARED_VALUE_BYTES(len);

	key.hash = hash;
	key.key = (uint32) k;
	key.len = len;
	key.data = InvalidDsaPointer;
	key.local = data;
	e = dshash_find(ref->table, &key, false);
	if (e != NULL)
	{
		num = e->num;
		dshash_release_lock(ref->table, e);
		return num;
	}
	if (pg_atomic_read_u64(&sd->bytes) + cost > sd->budget ||
		pg_atomic_read_u32(&sd->next[k]) >= GH_PACKET_GLOBAL - 1)
	{
		pg_atomic_write_u32(&sd->full, 1);
		return -1;
	}
	e = dshash_find_or_insert(ref->table, &key, &found);
	if (found)
	{
		num = e->num;
		dshash_release_lock(ref->table, e);
		return num;
	}
	dp = dsa_allocate_extended(ref->area, Max(len, 1), DSA_ALLOC_NO_OOM);
	if (!DsaPointerIsValid(dp))
	{
		dshash_delete_entry(ref->table, e);
		pg_atomic_write_u32(&sd->full, 1);
		return -1;
	}
	memcpy(dsa_get_address(ref->area, dp), data, len);
	e->key.data = dp;
	e->key.local = NULL;
	num = pg_atomic_fetch_add_u32(&sd->next[k], 1);
	e->num = num;
	dshash_release_lock(ref->table, e);
	pg_atomic_fetch_add_u64(&sd->bytes, cost);
	return num;
}

/*
 * gh_shared_dict_counts tells how many values the shared dictionary has
 * numbered, over all keys, and whether a value found no room.
 */
void
gh_shared_dict_counts(GhSharedDictRef *ref, uint64 *numbered, bool *full)
{
	*numbered = 0;
	for (int k = 0; k < GH_AGG_MAX_KEYS; k++)
		*numbered += pg_atomic_read_u32(&ref->sd->next[k]);
	*full = pg_atomic_read_u32(&ref->sd->full) != 0;
}
