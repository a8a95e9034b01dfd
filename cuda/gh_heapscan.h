/*-------------------------------------------------------------------------
 * gh_heapscan.h
 *	  The device scan's C API: heap pages, copied as they are into a
 *	  staging area, deformed on the device (or its CPU twin) into columns.
 *
 * A batch is npages pages of BLCKSZ bytes each, one after the other, as
 * PostgreSQL's heap keeps them (bufpage.h, itemid.h, htup_details.h).  The
 * host has already decided visibility: on a page it checked tuple by tuple
 * it cleared the line pointers of the tuples the snapshot does not see, in
 * its copy only, so every normal line pointer of the batch is a visible
 * tuple.  Row slots are line pointers: page p's line pointer i (1-based) is
 * row first[p] + i - 1, first[] being the host's running count of the
 * pages' line pointers (from pd_lower), so the device needs no pass to
 * number rows.  A slot that holds no tuple has status GH_HS_NONE.
 *
 * The device reads attributes 1 to natts of the table's row type (spec),
 * walking every one to find the next (dropped columns included: they keep
 * their length and alignment), and writes the ones the plan reads (out >= 0)
 * into column arrays:
 *	- a by-value attribute: the Datum as PostgreSQL's fetch_att makes it
 *	  (1, 2 and 4 bytes sign-extended to 64 bits);
 *	- any other: the byte offset of the value in the batch (the varlena
 *	  header's, for varlena) in the low 32 bits, its size (VARSIZE_ANY, or
 *	  attlen) in the high 32, so that the value can be read in place;
 *	- valid: 0 for NULL.
 * A row the device cannot read exactly gets GH_HS_HOST: the host reads it
 * through PostgreSQL's own tuple path (heap_deform_tuple, detoasting).
 * That is a read varlena that is compressed or stored out of line, a read
 * attribute past the tuple's natts whose column has a default for old rows
 * (atthasmissing), a cstring, and anything whose offsets do not fit its
 * line pointer (a corrupt page: PostgreSQL's own checks then decide).
 *
 * No PostgreSQL headers here: the page layout is restated below and
 * checked against PostgreSQL's at compile time by src/heapscan.c.
 *-------------------------------------------------------------------------
 */
#ifndef GH_HEAPSCAN_H
#define GH_HEAPSCAN_H

#include <stdint.h>

#include "gpuhash_cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

/* PostgreSQL's heap page layout (checked in src/heapscan.c) */
#define GH_BLCKSZ				8192
#define GH_PAGE_HEADER_SIZE		24	/* SizeOfPageHeaderData */
#define GH_PAGE_LOWER_OFF		12	/* offsetof(PageHeaderData, pd_lower) */
#define GH_TUPLE_INFOMASK2_OFF	18	/* offsetof(HeapTupleHeaderData, t_infomask2) */
#define GH_TUPLE_INFOMASK_OFF	20	/* offsetof(HeapTupleHeaderData, t_infomask) */
#define GH_TUPLE_HOFF_OFF		22	/* offsetof(HeapTupleHeaderData, t_hoff) */
#define GH_TUPLE_BITS_OFF		23	/* offsetof(HeapTupleHeaderData, t_bits) */
#define GH_HEAP_HASNULL			0x0001
#define GH_HEAP_NATTS_MASK		0x07FF
#define GH_LP_NORMAL			1
#define GH_MAX_ITEMS_PER_PAGE	((GH_BLCKSZ - GH_PAGE_HEADER_SIZE) / 4)

/* Row status. */
#define GH_HS_NONE		0		/* no visible tuple in this slot */
#define GH_HS_ROW		1		/* read by the device */
#define GH_HS_HOST		2		/* a tuple the host reads (see above) */

/* One attribute of the table's row type, 1 to natts. */
typedef struct gh_hs_att
{
	int16_t		attlen;			/* > 0, -1 varlena, -2 cstring */
	uint8_t		align;			/* 1, 2, 4 or 8 */
	uint8_t		byval;
	uint8_t		has_missing;	/* a default for rows older than the column */
	uint8_t		pad;
	int16_t		out;			/* output column, or -1 */
} gh_hs_att;

/* What the device reads: the atts, the last one read being natts. */
typedef struct gh_hs_spec
{
	int			natts;
	int			ncols;			/* output columns: 0 .. ncols - 1 */
	const gh_hs_att *atts;		/* natts entries; on the device for _gpu */
} gh_hs_spec;

/*
 * The output of one batch of nrows row slots: status[nrows], and for each
 * output column c, words[c][nrows] and valid[c][nrows].  On the device for
 * _gpu; words and valid are arrays of ncols pointers, themselves on the
 * device.
 */
typedef struct gh_hs_out
{
	uint8_t    *status;
	uint64_t  **words;
	uint8_t   **valid;
} gh_hs_out;

/*
 * gh_hs_deform_*: reads the npages pages of pages (page p's row slots start
 * at first[p]; nrows slots in all) into out.  The _gpu form takes device
 * pointers and its stream; the twin host pointers.
 */
gh_status	gh_hs_deform_gpu(const uint8_t *pages, const uint32_t *first,
							 uint32_t npages, uint32_t nrows,
							 const gh_hs_spec *spec, const gh_hs_out *out,
							 void *stream, gh_error *err);
gh_status	gh_hs_deform_cpu(const uint8_t *pages, const uint32_t *first,
							 uint32_t npages, uint32_t nrows,
							 const gh_hs_spec *spec, const gh_hs_out *out,
							 gh_error *err);

#ifdef __cplusplus
}
#endif

#endif							/* GH_HEAPSCAN_H */
