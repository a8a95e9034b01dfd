/*-------------------------------------------------------------------------
 * hs_test_util.h
 *	  Heap pages for the device scan's unit tests (C99 and CUDA C++), written
 *	  the way PostgreSQL's heap_fill_tuple and PageAddItem lay them out, and
 *	  what the deformer must read from each.
 *
 * The writer is the tests' own, independent of cuda/heapscan_deform.h:
 * attributes in order, each aligned to its alignment unless it is a varlena
 * written with a one-byte header (which is never padded), NULLs in the
 * bitmap and taking no space, t_hoff the MAXALIGNed header with its bitmap,
 * tuples from the end of the page down, line pointers from the header up.
 * Varlenas come in every form the heap stores: one-byte header, four-byte
 * header, compressed in line, and a TOAST pointer.  Each tuple's expected
 * status and output columns are recorded as it is written.
 *-------------------------------------------------------------------------
 */
#ifndef HS_TEST_UTIL_H
#define HS_TEST_UTIL_H

#include "gh_heapscan.h"
#include "mm_test_util.h"

#define HT_MAXATTS 12
#define HT_MAXCOLS HT_MAXATTS

/* a varlena's form on the page */
#define HT_V1B 0		 /* one-byte header */
#define HT_V4B 1		 /* four-byte header */
#define HT_VCOMPRESSED 2 /* four-byte header, compressed in line */
#define HT_VEXTERNAL 3	 /* TOAST pointer */

/* the table's row type: natts attributes, out[] as the device scan reads */
typedef struct ht_table
{
	int natts;
	gh_hs_att atts[HT_MAXATTS];
	int ncols;
} ht_table;

/* what the deformer must write for one row slot */
typedef struct ht_expect
{
	uint8_t status;
	uint64_t words[HT_MAXCOLS];
	uint8_t valid[HT_MAXCOLS];
} ht_expect;

static MT_UNUSED void
ht_put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t) v;
	p[1] = (uint8_t) (v >> 8);
}

static MT_UNUSED void
ht_put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t) (v >> (8 * i));
}

static MT_UNUSED uint32_t
ht_align(uint32_t off, uint32_t a)
{
	return (off + a - 1) & ~(a - 1);
}

/* a random row type: by-value, fixed by reference, varlena, some read */
static MT_UNUSED void
ht_random_table(mt_rng *r, ht_table *t)
{
	static const int16_t lens[] = {1, 2, 4, 8, 16, 6, -1, -1, 64, 4, 8, -1};
	static const uint8_t aligns[] = {1, 2, 4, 8, 8, 4, 4, 1, 1, 4, 8, 8};
	static const uint8_t byvals[] = {1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 0};

	memset(t, 0, sizeof(*t));
	t->natts = 1 + (int) mt_below(r, HT_MAXATTS);
	for (int a = 0; a < t->natts; a++)
	{
		int k = (int) mt_below(r, 12);

		t->atts[a].attlen = lens[k];
		t->atts[a].align = aligns[k];
		t->atts[a].byval = byvals[k];
		t->atts[a].has_missing = mt_below(r, 8) == 0;
		t->atts[a].out = -1;
	}
	for (int a = 0; a < t->natts; a++)
		if (a == t->natts - 1 || mt_below(r, 3) != 0)
			t->atts[a].out = (int16_t) t->ncols++;
}

/* the line pointers of a page as the host counts them (0: pd_lower not sane) */
static MT_UNUSED uint32_t
gh_hs_nitems_host(const uint8_t *page)
{
	uint32_t lower = (uint32_t) page[GH_PAGE_LOWER_OFF] |
		((uint32_t) page[GH_PAGE_LOWER_OFF + 1] << 8);

	if (lower < GH_PAGE_HEADER_SIZE || lower > GH_BLCKSZ)
		return 0;
	return (lower - GH_PAGE_HEADER_SIZE) / 4;
}

static MT_UNUSED void
ht_page_init(uint8_t *page)
{
	memset(page, 0, GH_BLCKSZ);
	ht_put16(page + GH_PAGE_LOWER_OFF, GH_PAGE_HEADER_SIZE);
	ht_put16(page + 14, GH_BLCKSZ); /* pd_upper */
	ht_put16(page + 16, GH_BLCKSZ); /* pd_special */
}

/* ht_add_item adds a line pointer of the given flags, offset and length */
static MT_UNUSED uint32_t
ht_add_item(uint8_t *page, uint32_t flags, uint32_t off, uint32_t len)
{
	uint32_t lower = (uint32_t) page[GH_PAGE_LOWER_OFF] |
		((uint32_t) page[GH_PAGE_LOWER_OFF + 1] << 8);

	ht_put32(page + lower, off | (flags << 15) | (len << 17));
	ht_put16(page + GH_PAGE_LOWER_OFF, lower + 4);
	return (lower - GH_PAGE_HEADER_SIZE) / 4 + 1;
}

/*
 * ht_add_tuple writes a random tuple of t with tnatts attributes (fewer than
 * t->natts: a row older than the columns after) onto page, whose bytes start
 * at base in the batch; fills *e.  Returns 0 when the page has no room.
 */
static MT_UNUSED int
ht_add_tuple(mt_rng *r, uint8_t *page, uint32_t base, const ht_table *t,
			 int tnatts, ht_expect *e)
{
	uint8_t data[GH_BLCKSZ];
	uint8_t nulls[HT_MAXATTS];
	uint32_t at[HT_MAXATTS];
	uint32_t size[HT_MAXATTS];
	uint32_t off = 0;
	int hasnull = 0;
	uint32_t hoff;
	uint32_t len;
	uint32_t upper;
	uint32_t lower;
	uint32_t lp_off;

	memset(e, 0, sizeof(*e));
	e->status = GH_HS_ROW;
	memset(data, 0, sizeof(data));
	for (int a = 0; a < tnatts; a++)
	{
		const gh_hs_att *att = &t->atts[a];

		nulls[a] = mt_below(r, 5) == 0;
		hasnull |= nulls[a];
		if (nulls[a])
			continue;
		if (att->attlen > 0)
		{
			off = ht_align(off, att->align);
			at[a] = off;
			size[a] = (uint32_t) att->attlen;
			for (uint32_t i = 0; i < size[a]; i++)
				data[off + i] = (uint8_t) mt_next(r);
			off += size[a];
		}
		else
		{
			int form = (int) mt_below(r, 8);
			uint32_t body = (uint32_t) mt_below(r, 100);

			form = form < 4 ? HT_V1B : form < 6 ? HT_V4B : form - 4;
			if (form == HT_V1B)
			{
				at[a] = off;
				size[a] = body + 1;
				data[off] = (uint8_t) ((size[a] << 1) | 1);
			}
			else if (form == HT_VEXTERNAL)
			{
				at[a] = off;
				size[a] = 18;
				data[off] = 0x01;
				data[off + 1] = 18;
				if (att->out >= 0)
					e->status = GH_HS_HOST;
			}
			else
			{
				off = ht_align(off, att->align);
				at[a] = off;
				size[a] = body + 4;
				ht_put32(data + off,
						 (size[a] << 2) | (form == HT_VCOMPRESSED ? 2 : 0));
				if (form == HT_VCOMPRESSED && att->out >= 0)
					e->status = GH_HS_HOST;
			}
			for (uint32_t i = (form == HT_V1B ? 1 : form == HT_VEXTERNAL ? 2 : 4);
				 i < size[a]; i++)
				data[off + i] = (uint8_t) mt_next(r);
			off += size[a];
		}
	}
	hoff = ht_align(GH_TUPLE_BITS_OFF + (hasnull ? (tnatts + 7) / 8 : 0), 8);
	len = hoff + off;
	upper = (uint32_t) page[14] | ((uint32_t) page[15] << 8);
	lower = (uint32_t) page[GH_PAGE_LOWER_OFF] |
		((uint32_t) page[GH_PAGE_LOWER_OFF + 1] << 8);
	if (upper < ht_align(len, 8) + lower + 4)
		return 0;
	lp_off = (upper - ht_align(len, 8)) & ~7u;
	memset(page + lp_off, 0, GH_TUPLE_BITS_OFF);
	ht_put16(page + lp_off + GH_TUPLE_INFOMASK2_OFF, (uint32_t) tnatts);
	ht_put16(page + lp_off + GH_TUPLE_INFOMASK_OFF, hasnull ? GH_HEAP_HASNULL : 0);
	page[lp_off + GH_TUPLE_HOFF_OFF] = (uint8_t) hoff;
	if (hasnull)
	{
		for (int a = 0; a < tnatts; a++)
			if (!nulls[a])
				page[lp_off + GH_TUPLE_BITS_OFF + a / 8] |= (uint8_t) (1 << (a % 8));
	}
	memcpy(page + lp_off + hoff, data, off);
	ht_put16(page + 14, lp_off);
	ht_add_item(page, GH_LP_NORMAL, lp_off, len);

	/* what the deformer must read */
	for (int a = 0; a < t->natts; a++)
	{
		const gh_hs_att *att = &t->atts[a];
		int o = att->out;

		if (o < 0)
			continue;
		if (a >= tnatts)
		{
			if (att->has_missing)
				e->status = GH_HS_HOST;
			continue;
		}
		if (nulls[a])
			continue;
		e->valid[o] = 1;
		if (att->byval)
		{
			const uint8_t *v = page + lp_off + hoff + at[a];
			uint64_t w = 0;

			for (int i = 0; i < att->attlen; i++)
				w |= (uint64_t) v[i] << (8 * i);
			if (att->attlen < 8 && (w >> (8 * att->attlen - 1)) & 1)
				w |= ~(uint64_t) 0 << (8 * att->attlen);
			e->words[o] = w;
		}
		else
			e->words[o] = ((uint64_t) size[a] << 32) | (base + lp_off + hoff + at[a]);
	}
	if (e->status != GH_HS_ROW)
		memset(e->valid, 0, sizeof(e->valid));
	return 1;
}

/*
 * ht_random_batch fills npages pages of t (rows older than some columns
 * included, and unused, dead and redirect line pointers among the tuples),
 * numbers their row slots in first[] and writes each slot's expectation to
 * expect[] (cap slots); returns the number of slots.
 */
static MT_UNUSED uint32_t
ht_random_batch(mt_rng *r, const ht_table *t, uint8_t *pages, uint32_t npages,
				uint32_t *first, ht_expect *expect, uint32_t cap)
{
	uint32_t nrows = 0;

	for (uint32_t p = 0; p < npages; p++)
	{
		uint8_t *page = pages + (size_t) p * GH_BLCKSZ;
		uint32_t want = 1 + (uint32_t) mt_below(r, 120);

		ht_page_init(page);
		first[p] = nrows;
		for (uint32_t i = 0; i < want && nrows < cap; i++)
		{
			ht_expect *e = &expect[nrows];

			if (mt_below(r, 10) == 0)
			{
				/* unused, redirect or dead: no row */
				ht_add_item(page, (uint32_t) mt_below(r, 4) == 0 ? 0 : 2 + (uint32_t) mt_below(r, 2),
							0, 0);
				memset(e, 0, sizeof(*e));
				e->status = GH_HS_NONE;
				nrows++;
				continue;
			}
			if (!ht_add_tuple(r, page, p * GH_BLCKSZ, t,
							  mt_below(r, 6) == 0 ? (int) mt_below(r, (uint64_t) t->natts + 1) : t->natts,
							  e))
				break;
			nrows++;
		}
	}
	return nrows;
}

/* ht_check compares n row slots of an output with the expectations */
static MT_UNUSED int
ht_check(const ht_table *t, const ht_expect *expect, uint32_t n,
		 const uint8_t *status, uint64_t *const *words, uint8_t *const *valid)
{
	for (uint32_t i = 0; i < n; i++)
	{
		if (status[i] != expect[i].status)
			return mt_fail("row %u: status %d, expected %d", i, status[i], expect[i].status);
		if (status[i] != GH_HS_ROW)
			continue;
		for (int c = 0; c < t->ncols; c++)
		{
			if (valid[c][i] != expect[i].valid[c])
				return mt_fail("row %u column %d: valid %d, expected %d", i, c,
							   valid[c][i], expect[i].valid[c]);
			if (valid[c][i] && words[c][i] != expect[i].words[c])
				return mt_fail("row %u column %d: word %llx, expected %llx", i, c,
							   (unsigned long long) words[c][i],
							   (unsigned long long) expect[i].words[c]);
		}
	}
	return 1;
}

#endif /* HS_TEST_UTIL_H */
