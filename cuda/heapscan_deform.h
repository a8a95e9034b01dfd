/*-------------------------------------------------------------------------
 * heapscan_deform.h
 *	  Reading one heap tuple of a staged page into output columns: the one
 *	  implementation that the device scan's kernel (heapscan.cu) and its CPU
 *	  twin (heapscan_cpu.c) both run.
 *
 * The rules are PostgreSQL's own deforming (heaptuple.c's
 * heap_deform_tuple and tupmacs.h): attributes in order, each aligned to its
 * attalign, except that a varlena whose first byte is not zero has a
 * one-byte header and no padding before it; a NULL takes no space; an
 * attribute past the tuple's natts is NULL unless its column has a default
 * for older rows.  Every offset is checked against the line pointer's
 * length, so a damaged page makes the tuple GH_HS_HOST, never a read past
 * the page.
 *
 * Loads go byte by byte where the heap does not promise alignment (line
 * pointers and headers are aligned, values after a one-byte varlena header
 * are not always).
 *-------------------------------------------------------------------------
 */
#ifndef HEAPSCAN_DEFORM_H
#define HEAPSCAN_DEFORM_H

#include "gh_heapscan.h"

#ifdef __CUDACC__
#define GH_HS_FN __host__ __device__ static inline
#else
#define GH_HS_FN static inline
#endif

GH_HS_FN uint32_t
gh_hs_u16(const uint8_t *p)
{
	return (uint32_t) p[0] | ((uint32_t) p[1] << 8);
}

GH_HS_FN uint32_t
gh_hs_u32(const uint8_t *p)
{
	return (uint32_t) p[0] | ((uint32_t) p[1] << 8) |
		((uint32_t) p[2] << 16) | ((uint32_t) p[3] << 24);
}

GH_HS_FN uint64_t
gh_hs_u64(const uint8_t *p)
{
	return (uint64_t) gh_hs_u32(p) | ((uint64_t) gh_hs_u32(p + 4) << 32);
}

/* the number of line pointers on a page, 0 when pd_lower is not sane */
GH_HS_FN uint32_t
gh_hs_nitems(const uint8_t *page)
{
	uint32_t	lower = gh_hs_u16(page + GH_PAGE_LOWER_OFF);

	if (lower < GH_PAGE_HEADER_SIZE || lower > GH_BLCKSZ)
		return 0;
	return (lower - GH_PAGE_HEADER_SIZE) / 4;
}

/*
 * gh_hs_varsize: the size, header included, of the varlena at p (avail bytes
 * readable from there); sets *inline_plain to whether it is an uncompressed
 * value stored in line.  0 when it cannot be sized here.
 */
GH_HS_FN uint32_t
gh_hs_varsize(const uint8_t *p, uint32_t avail, int *inline_plain)
{
	uint8_t		b0 = p[0];

	*inline_plain = 0;
	if (b0 & 0x01)
	{
		if (b0 == 0x01)
		{
			/* out of line (VARATT_IS_1B_E): only TOAST pointers on disk */
			if (avail < 2 || p[1] != 18)
				return 0;
			return 2 + 16;
		}
		*inline_plain = 1;
		return b0 >> 1;
	}
	if (avail < 4)
		return 0;
	{
		uint32_t	h = gh_hs_u32(p);

		/* 4B_U when the two low bits are 00; 10 is compressed in line */
		uint32_t	size = (h >> 2) & 0x3FFFFFFF;

		*inline_plain = (h & 0x03) == 0;
		return size < 4 ? 0 : size;
	}
}

/*
 * gh_hs_deform_one: reads line pointer item (1-based) of page, which starts
 * at byte base of the batch, into row slot row of out.  Returns the row's
 * status, also written to out->status[row].
 */
GH_HS_FN int
gh_hs_deform_one(const uint8_t *page, uint32_t base, uint32_t item,
				 const gh_hs_spec *spec, const gh_hs_out *out, uint32_t row)
{
	uint32_t	lp = gh_hs_u32(page + GH_PAGE_HEADER_SIZE + 4 * (item - 1));
	uint32_t	lp_off = lp & 0x7FFF;
	uint32_t	lp_flags = (lp >> 15) & 0x03;
	uint32_t	lp_len = lp >> 17;
	const uint8_t *tup;
	uint32_t	natts_t;
	int			hasnull;
	uint32_t	hoff;
	const uint8_t *data;
	uint32_t	len;
	uint32_t	off = 0;
	int			status = GH_HS_ROW;

	for (int c = 0; c < spec->ncols; c++)
		out->valid[c][row] = 0;
	if (lp_flags != GH_LP_NORMAL)
	{
		out->status[row] = GH_HS_NONE;
		return GH_HS_NONE;
	}
	if (lp_off < GH_PAGE_HEADER_SIZE || (lp_off & 7) != 0 ||
		lp_off + lp_len > GH_BLCKSZ || lp_len < GH_TUPLE_BITS_OFF)
	{
		out->status[row] = GH_HS_HOST;
		return GH_HS_HOST;
	}
	tup = page + lp_off;
	natts_t = gh_hs_u16(tup + GH_TUPLE_INFOMASK2_OFF) & GH_HEAP_NATTS_MASK;
	hasnull = (gh_hs_u16(tup + GH_TUPLE_INFOMASK_OFF) & GH_HEAP_HASNULL) != 0;
	hoff = tup[GH_TUPLE_HOFF_OFF];
	if (hoff < GH_TUPLE_BITS_OFF || hoff > lp_len ||
		(hasnull && GH_TUPLE_BITS_OFF + (natts_t + 7) / 8 > hoff))
	{
		out->status[row] = GH_HS_HOST;
		return GH_HS_HOST;
	}
	data = tup + hoff;
	len = lp_len - hoff;

	for (int a = 0; a < spec->natts && status == GH_HS_ROW; a++)
	{
		const gh_hs_att *att = &spec->atts[a];
		int			o = att->out;
		uint32_t	size;

		if ((uint32_t) a >= natts_t)
		{
			/* missing from this tuple: NULL, or the column's default */
			if (o >= 0 && att->has_missing)
				status = GH_HS_HOST;
			continue;
		}
		if (hasnull && !(tup[GH_TUPLE_BITS_OFF + (a >> 3)] & (1 << (a & 7))))
			continue;			/* NULL: valid stays 0 */
		if (att->attlen > 0)
		{
			off = (off + att->align - 1) & ~(uint32_t) (att->align - 1);
			size = (uint32_t) att->attlen;
			if (off + size > len)
			{
				status = GH_HS_HOST;
				break;
			}
			if (o >= 0)
			{
				const uint8_t *v = data + off;
				uint64_t	w;

				if (!att->byval)
					w = ((uint64_t) size << 32) | (base + lp_off + hoff + off);
				else if (size == 1)
					w = (uint64_t) (int64_t) (int8_t) v[0];
				else if (size == 2)
					w = (uint64_t) (int64_t) (int16_t) gh_hs_u16(v);
				else if (size == 4)
					w = (uint64_t) (int64_t) (int32_t) gh_hs_u32(v);
				else if (size == 8)
					w = gh_hs_u64(v);
				else
				{
					status = GH_HS_HOST;
					break;
				}
				out->words[o][row] = w;
				out->valid[o][row] = 1;
			}
			off += size;
		}
		else if (att->attlen == -1)
		{
			int			plain;

			if (off >= len)
			{
				status = GH_HS_HOST;
				break;
			}
			/* no padding before a one-byte header (a pad byte is zero) */
			if (data[off] == 0)
				off = (off + att->align - 1) & ~(uint32_t) (att->align - 1);
			if (off >= len)
			{
				status = GH_HS_HOST;
				break;
			}
			size = gh_hs_varsize(data + off, len - off, &plain);
			if (size == 0 || off + size > len || (o >= 0 && !plain))
			{
				status = GH_HS_HOST;
				break;
			}
			if (o >= 0)
			{
				out->words[o][row] =
					((uint64_t) size << 32) | (base + lp_off + hoff + off);
				out->valid[o][row] = 1;
			}
			off += size;
		}
		else
		{
			/* a cstring: the host's */
			status = GH_HS_HOST;
			break;
		}
	}
	if (status != GH_HS_ROW)
	{
		for (int c = 0; c < spec->ncols; c++)
			out->valid[c][row] = 0;
	}
	out->status[row] = (uint8_t) status;
	return status;
}

#endif							/* HEAPSCAN_DEFORM_H */
