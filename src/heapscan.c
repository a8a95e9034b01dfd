/*-------------------------------------------------------------------------
 * heapscan.c
 *	  The device scan (heapscan.h): heap pages read, checked for visibility
 *	  and staged on the host, deformed on the target; and the SQL functions
 *	  that return a table as the device scan reads it, and what the scan
 *	  did, so that the tests compare it with PostgreSQL's own scan.
 *
 * The order of the work is heapam.c's for a sequential scan (heapgetpage):
 * a predicate lock on the relation for SERIALIZABLE, then for each block a
 * pin through the bulk-read strategy for big tables, opportunistic pruning,
 * a share lock while the page is copied and its tuples are checked.  A page
 * is trusted as all-visible exactly where heapgetpage trusts it.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <stddef.h>

#include "access/detoast.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_type_d.h"
#include "commands/explain.h"
#include "executor/instrument.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "storage/predicate.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "heapscan.h"

/* the page layout cuda/gh_heapscan.h restates */
StaticAssertDecl(BLCKSZ == GH_BLCKSZ, "gh_heapscan.h: BLCKSZ");
StaticAssertDecl(SizeOfPageHeaderData == GH_PAGE_HEADER_SIZE,
				 "gh_heapscan.h: page header");
StaticAssertDecl(offsetof(PageHeaderData, pd_lower) == GH_PAGE_LOWER_OFF,
				 "gh_heapscan.h: pd_lower");
StaticAssertDecl(offsetof(HeapTupleHeaderData, t_infomask2) ==
				 GH_TUPLE_INFOMASK2_OFF, "gh_heapscan.h: t_infomask2");
StaticAssertDecl(offsetof(HeapTupleHeaderData, t_infomask) ==
				 GH_TUPLE_INFOMASK_OFF, "gh_heapscan.h: t_infomask");
StaticAssertDecl(offsetof(HeapTupleHeaderData, t_hoff) == GH_TUPLE_HOFF_OFF,
				 "gh_heapscan.h: t_hoff");
StaticAssertDecl(offsetof(HeapTupleHeaderData, t_bits) == GH_TUPLE_BITS_OFF,
				 "gh_heapscan.h: t_bits");
StaticAssertDecl(HEAP_HASNULL == GH_HEAP_HASNULL, "gh_heapscan.h: HASNULL");
StaticAssertDecl(HEAP_NATTS_MASK == GH_HEAP_NATTS_MASK,
				 "gh_heapscan.h: NATTS_MASK");
StaticAssertDecl(LP_NORMAL == GH_LP_NORMAL, "gh_heapscan.h: LP_NORMAL");
StaticAssertDecl(sizeof(ItemIdData) == 4, "gh_heapscan.h: ItemIdData");

PG_FUNCTION_INFO_V1(gpuhash_scan_table);
PG_FUNCTION_INFO_V1(gpuhash_scan_counts);

/* GUCs: whether operators read tables with the device scan; its batch */
bool		gpuhash_enable_scan = true;
int			gpuhash_scan_batch_pages = 1024;

/* row slots a batch holds per page, on average, before it is full */
#define HS_ROWS_PER_PAGE	96

struct GhHeapScan
{
	Relation	rel;
	TupleDesc	tupdesc;
	Snapshot	snapshot;
	GhTarget	target;
	BufferAccessStrategy strategy;
	bool		check_all;		/* trust no page as all-visible */
	/* the blocks: serial, or a parallel scan's ranges */
	BlockNumber nblocks;
	BlockNumber next;
	ParallelBlockTableScanDesc pscan;
	ParallelBlockTableScanWorkerData pwork;
	bool		pstarted;
	bool		done;
	/* what the target reads */
	int			ncols;
	int			natts;
	gh_hs_att  *atts;
	void	   *d_atts;
	bool	   *col_byval;		/* per output column */
	/* the batch */
	uint32		cap_pages;
	uint32		cap_rows;
	uint8	   *pages;			/* staging, host (pinned for the GPU) */
	uint32	   *first;
	BlockNumber *blocks;
	uint32		npages;
	uint32		nrows;
	bool		carry;			/* pages[npages] is staged for the next batch */
	uint32		carry_items;
	void	   *d_pages;
	void	   *d_first;
	/* the columns: on the host; on the device too for the GPU */
	uint8	   *status;
	uint64	  **words;
	uint8	  **valid;
	uint8	   *d_status;
	void	  **d_words;		/* host array of device pointers */
	void	  **d_valid;
	void	   *d_words_arr;	/* the same arrays, on the device */
	void	   *d_valid_arr;
	GhHeapScanCounts counts;
};

void
gpuhash_init_heapscan(void)
{
	DefineCustomBoolVariable("gpuhash.enable_scan",
							 "Lets GpuHashAgg read its input table, and GpuHashJoin its outer table, as heap pages that the device deforms.",
							 "Off: those rows come through PostgreSQL's own scan, row by row.",
							 &gpuhash_enable_scan,
							 true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuhash.scan_batch_pages",
							"Heap pages the device scan stages and sends to the device at a time.",
							"An upper bound: each participant holds at most this many 8 kB pages, with the columns read from them, in host memory (page-locked for the GPU) and as much again on the device, and no more than a quarter of work_mem * hash_mem_multiplier.",
							&gpuhash_scan_batch_pages,
							1024, 1, 131072,
							PGC_USERSET, 0, NULL, NULL, NULL);
}

/*
 * gh_heapscan_refusal says why rel cannot be read by the device scan under
 * snapshot, or NULL if it can.
 */
const char *
gh_heapscan_refusal(Relation rel, Snapshot snapshot)
{
	if (rel->rd_rel->relkind != RELKIND_RELATION &&
		rel->rd_rel->relkind != RELKIND_MATVIEW &&
		rel->rd_rel->relkind != RELKIND_TOASTVALUE)
		return "not a table";
	if (rel->rd_rel->relam != HEAP_TABLE_AM_OID)
		return "not a heap table";
	if (snapshot == NULL || !IsMVCCSnapshot(snapshot))
		return "not an MVCC snapshot";
	return NULL;
}

/* hs_check_itemid: the page layout of ItemIdData that the device decodes */
static void
hs_check_itemid(void)
{
	ItemIdData	id;
	uint32		w;

	ItemIdSetNormal(&id, 0x1238, 0x155);
	memcpy(&w, &id, sizeof(w));
	if ((w & 0x7FFF) != 0x1238 || ((w >> 15) & 3) != LP_NORMAL ||
		(w >> 17) != 0x155)
		elog(ERROR, "gpuhash: line pointers are laid out otherwise than the device scan reads them");
}

/*
 * hs_columns allocates ncols arrays of rows elements of width bytes, on the
 * target's device or in host memory suited for copies to it; returns the
 * array of their pointers (host memory).
 */
static void **
hs_columns(GhTarget target, bool device, int ncols, uint32 rows, Size width)
{
	void	  **cols = palloc0(sizeof(void *) * Max(ncols, 1));

	for (int c = 0; c < ncols; c++)
		cols[c] = device ? gh_dev_alloc(target, width * rows) :
			gh_host_alloc(target, width * rows);
	return cols;
}

/* hs_columns_free frees what hs_columns allocated */
static void
hs_columns_free(void **cols, int ncols)
{
	for (int c = 0; c < ncols; c++)
		gh_dev_free(cols[c]);
	pfree(cols);
}

GhHeapScan *
gh_heapscan_begin(Relation rel, Snapshot snapshot, const AttrNumber *attnums,
				  int ncols, ParallelBlockTableScanDesc pscan, GhTarget target)
{
	GhHeapScan *s = palloc0(sizeof(GhHeapScan));
	TupleDesc	desc = RelationGetDescr(rel);
	const char *why = gh_heapscan_refusal(rel, snapshot);
	size_t		bytes;
	Size		per_page;

	if (why != NULL)
		elog(ERROR, "gpuhash: the device scan cannot read \"%s\": %s",
			 RelationGetRelationName(rel), why);
	hs_check_itemid();
	s->rel = rel;
	s->tupdesc = desc;
	s->snapshot = snapshot;
	s->target = target;
	s->ncols = ncols;
	s->pscan = pscan;
	s->check_all = snapshot->takenDuringRecovery || IsolationIsSerializable();

	/* the attributes up to the last one read */
	s->natts = 0;
	for (int c = 0; c < ncols; c++)
	{
		if (attnums[c] < 1 || attnums[c] > desc->natts)
			elog(ERROR, "gpuhash: the device scan reads no attribute %d",
				 attnums[c]);
		s->natts = Max(s->natts, attnums[c]);
	}
	s->atts = palloc0(sizeof(gh_hs_att) * Max(s->natts, 1));
	for (int a = 0; a < s->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);

		s->atts[a].attlen = att->attlen;
		s->atts[a].align = att->attalign == TYPALIGN_DOUBLE ? 8 :
			att->attalign == TYPALIGN_INT ? 4 :
			att->attalign == TYPALIGN_SHORT ? 2 : 1;
		s->atts[a].byval = att->attbyval;
		s->atts[a].has_missing = att->atthasmissing;
		s->atts[a].out = -1;
	}
	s->col_byval = palloc(sizeof(bool) * Max(ncols, 1));
	for (int c = 0; c < ncols; c++)
	{
		s->col_byval[c] = s->atts[attnums[c] - 1].byval;
		if (s->atts[attnums[c] - 1].out >= 0)
			elog(ERROR, "gpuhash: the device scan reads attribute %d twice",
				 attnums[c]);
		s->atts[attnums[c] - 1].out = c;
	}

	/* the blocks, and the buffer strategy of heapam's initscan */
	if (pscan == NULL)
	{
		s->nblocks = RelationGetNumberOfBlocks(rel);
		if ((BlockNumber) s->nblocks > (BlockNumber) (NBuffers / 4))
			s->strategy = GetAccessStrategy(BAS_BULKREAD);
	}
	else
	{
		s->nblocks = pscan->phs_nblocks;
		if (s->nblocks > (BlockNumber) (NBuffers / 4))
			s->strategy = GetAccessStrategy(BAS_BULKREAD);
	}
	PredicateLockRelation(rel, snapshot);
	pgstat_count_heap_scan(rel);

	/*
	 * The batch: staging, row slots and columns, within a quarter of the
	 * memory a hash operator may use (work_mem * hash_mem_multiplier), as
	 * the operator reading the scan holds its own within the rest, and no
	 * more pages than the table has.
	 */
	per_page = BLCKSZ + HS_ROWS_PER_PAGE * (1 + ncols * (sizeof(uint64) + 1));
	s->cap_pages = (uint32) Min((Size) gpuhash_scan_batch_pages,
								Max(get_hash_memory_limit() / 4 / per_page, (Size) 1));
	if (s->nblocks < s->cap_pages)
		s->cap_pages = Max(s->nblocks, 1);
	s->cap_rows = Max(s->cap_pages * HS_ROWS_PER_PAGE, MaxHeapTuplesPerPage);
	/* one page more: a page that did not fit waits there for the next batch */
	bytes = (size_t) (s->cap_pages + 1) * BLCKSZ;
	s->pages = gh_host_alloc(target, bytes);
	s->first = palloc(sizeof(uint32) * (s->cap_pages + 1));
	s->blocks = palloc(sizeof(BlockNumber) * (s->cap_pages + 1));
	s->status = gh_host_alloc(target, s->cap_rows);
	s->words = (uint64 **) hs_columns(target, false, ncols, s->cap_rows, 8);
	s->valid = (uint8 **) hs_columns(target, false, ncols, s->cap_rows, 1);
	if (target == GH_TARGET_GPU)
	{
		s->d_pages = gh_dev_alloc(target, (size_t) s->cap_pages * BLCKSZ);
		s->d_first = gh_dev_alloc(target, sizeof(uint32) * s->cap_pages);
		s->d_atts = gh_dev_alloc(target, sizeof(gh_hs_att) * Max(s->natts, 1));
		gh_copy_htod(target, s->d_atts, s->atts,
					 sizeof(gh_hs_att) * Max(s->natts, 1));
		s->d_status = gh_dev_alloc(target, s->cap_rows);
		s->d_words = hs_columns(target, true, ncols, s->cap_rows, 8);
		s->d_valid = hs_columns(target, true, ncols, s->cap_rows, 1);
		s->d_words_arr = gh_dev_alloc(target, sizeof(void *) * Max(ncols, 1));
		s->d_valid_arr = gh_dev_alloc(target, sizeof(void *) * Max(ncols, 1));
		gh_copy_htod(target, s->d_words_arr, s->d_words,
					 sizeof(void *) * Max(ncols, 1));
		gh_copy_htod(target, s->d_valid_arr, s->d_valid,
					 sizeof(void *) * Max(ncols, 1));
		gh_sync(target);
	}
	return s;
}

/* hs_next_block: the next block to read, or InvalidBlockNumber */
static BlockNumber
hs_next_block(GhHeapScan *s)
{
	if (s->pscan != NULL)
	{
		if (!s->pstarted)
		{
			table_block_parallelscan_startblock_init(s->rel, &s->pwork,
													 s->pscan);
			s->pstarted = true;
		}
		return table_block_parallelscan_nextpage(s->rel, &s->pwork, s->pscan);
	}
	if (s->next >= s->nblocks)
		return InvalidBlockNumber;
	return s->next++;
}

/*
 * hs_stage_page copies block blk into staging slot slot, clearing in the copy
 * the line pointers of tuples the snapshot does not see; returns the page's
 * line pointers.
 */
static uint32
hs_stage_page(GhHeapScan *s, BlockNumber blk, uint32 slot)
{
	Buffer		buf;
	Page		page;
	Page		copy = (Page) (s->pages + (size_t) slot * BLCKSZ);
	OffsetNumber nitems;

	buf = ReadBufferExtended(s->rel, MAIN_FORKNUM, blk, RBM_NORMAL,
							 s->strategy);
	heap_page_prune_opt(s->rel, buf);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	TestForOldSnapshot(s->snapshot, s->rel, page);
	nitems = PageGetMaxOffsetNumber(page);
	memcpy(copy, page, BLCKSZ);
	if (s->check_all || !PageIsAllVisible(page))
	{
		for (OffsetNumber off = FirstOffsetNumber; off <= nitems; off++)
		{
			ItemId		lpp = PageGetItemId(page, off);
			HeapTupleData tup;
			bool		valid;

			if (!ItemIdIsNormal(lpp))
				continue;
			tup.t_tableOid = RelationGetRelid(s->rel);
			tup.t_data = (HeapTupleHeader) PageGetItem(page, lpp);
			tup.t_len = ItemIdGetLength(lpp);
			ItemPointerSet(&tup.t_self, blk, off);
			valid = HeapTupleSatisfiesVisibility(&tup, s->snapshot, buf);
			HeapCheckForSerializableConflictOut(valid, s->rel, &tup, buf,
												s->snapshot);
			if (!valid)
			{
				ItemIdSetUnused(PageGetItemId(copy, off));
				s->counts.tuples_hidden++;
			}
		}
		s->counts.pages_checked++;
	}
	LockBuffer(buf, BUFFER_LOCK_UNLOCK);
	ReleaseBuffer(buf);
	s->blocks[slot] = blk;
	s->counts.pages++;
	return nitems;
}

/* hs_deform runs the batch through the target */
static void
hs_deform(GhHeapScan *s)
{
	gh_hs_spec	spec;
	gh_hs_out	out;
	gh_error	err = {0};
	gh_status	st;

	spec.natts = s->natts;
	spec.ncols = s->ncols;
	if (s->target == GH_TARGET_GPU)
	{
		spec.atts = s->d_atts;
		out.status = s->d_status;
		out.words = s->d_words_arr;
		out.valid = s->d_valid_arr;
		gh_copy_htod(s->target, s->d_pages, s->pages,
					 (size_t) s->npages * BLCKSZ);
		gh_copy_htod(s->target, s->d_first, s->first,
					 sizeof(uint32) * s->npages);
		st = gh_hs_deform_gpu(s->d_pages, s->d_first, s->npages, s->nrows,
							  &spec, &out, gh_stream(s->target), &err);
		gpuhash_report(st, &err, "deforming heap pages");
		gh_copy_dtoh(s->target, s->status, s->d_status, s->nrows);
		for (int c = 0; c < s->ncols; c++)
		{
			gh_copy_dtoh(s->target, s->words[c], s->d_words[c],
						 sizeof(uint64) * s->nrows);
			gh_copy_dtoh(s->target, s->valid[c], s->d_valid[c], s->nrows);
		}
		gh_sync(s->target);
	}
	else
	{
		spec.atts = s->atts;
		out.status = s->status;
		out.words = s->words;
		out.valid = s->valid;
		st = gh_hs_deform_cpu(s->pages, s->first, s->npages, s->nrows,
							  &spec, &out, &err);
		gpuhash_report(st, &err, "deforming heap pages");
	}
}

/*
 * gh_heapscan_next reads the next batch of pages and deforms it; false when
 * the table is done.
 */
bool
gh_heapscan_next(GhHeapScan *s)
{
	instr_time	t0;
	uint64		rows_device = 0,
				rows_host = 0;

	if (s->done && !s->carry)
		return false;
	INSTR_TIME_SET_CURRENT(t0);
	s->npages = 0;
	s->nrows = 0;
	if (s->carry)
	{
		/* the page that did not fit the last batch comes first */
		memcpy(s->pages, s->pages + (size_t) s->cap_pages * BLCKSZ, BLCKSZ);
		s->blocks[0] = s->blocks[s->cap_pages];
		s->first[0] = 0;
		s->nrows = s->carry_items;
		s->npages = 1;
		s->carry = false;
	}
	while (!s->done && s->npages < s->cap_pages)
	{
		BlockNumber blk;
		uint32		nitems;

		CHECK_FOR_INTERRUPTS();
		blk = hs_next_block(s);
		if (blk == InvalidBlockNumber)
		{
			s->done = true;
			break;
		}
		nitems = hs_stage_page(s, blk, s->npages);
		if (s->nrows + nitems > s->cap_rows)
		{
			/* its rows do not fit: it waits in the spare slot */
			memcpy(s->pages + (size_t) s->cap_pages * BLCKSZ,
				   s->pages + (size_t) s->npages * BLCKSZ, BLCKSZ);
			s->blocks[s->cap_pages] = blk;
			s->carry = true;
			s->carry_items = nitems;
			break;
		}
		s->first[s->npages] = s->nrows;
		s->nrows += nitems;
		s->npages++;
	}
	s->counts.stage_ms += gh_ms_since(t0);
	if (s->npages == 0)
		return false;
	INSTR_TIME_SET_CURRENT(t0);
	hs_deform(s);
	s->counts.device_ms += gh_ms_since(t0);
	s->counts.batches++;
	for (uint32 r = 0; r < s->nrows; r++)
	{
		if (s->status[r] == GH_HS_ROW)
			rows_device++;
		else if (s->status[r] == GH_HS_HOST)
			rows_host++;
	}
	s->counts.rows_device += rows_device;
	s->counts.rows_host += rows_host;
	/* as heap_getnext counts the tuples it returns */
	if (pgstat_should_count_relation(s->rel))
		s->rel->pgstat_info->t_counts.t_tuples_returned +=
			rows_device + rows_host;
	return true;
}

uint32
gh_heapscan_nrows(GhHeapScan *s)
{
	return s->nrows;
}

uint8
gh_heapscan_status(GhHeapScan *s, uint32 row)
{
	Assert(row < s->nrows);
	return s->status[row];
}

/*
 * gh_heapscan_batch describes the scan's current batch in *batch, for a
 * caller that reads its columns in place.
 */
void
gh_heapscan_batch(GhHeapScan *s, GhHeapScanBatch *batch)
{
	batch->nrows = s->nrows;
	batch->status = s->status;
	batch->words = (const uint64 *const *) s->words;
	batch->valid = (const uint8 *const *) s->valid;
	batch->pages = (const char *) s->pages;
}

/*
 * hs_value: output column col of a GH_HS_ROW row (gh_heapscan_value's work,
 * static so that the row source's loop over every row has it in line).
 */
static inline Datum
hs_value(GhHeapScan *s, int col, uint32 row, bool *isnull)
{
	uint64		w = s->words[col][row];

	*isnull = !s->valid[col][row];
	if (*isnull)
		return (Datum) 0;
	return s->col_byval[col] ? (Datum) w :
		PointerGetDatum(s->pages + (uint32) w);
}

/*
 * gh_heapscan_value: output column col of a GH_HS_ROW row, as a Datum that
 * points into the staged page where the type is not by value (valid until
 * the next batch).
 */
Datum
gh_heapscan_value(GhHeapScan *s, int col, uint32 row, bool *isnull)
{
	Assert(s->status[row] == GH_HS_ROW);
	return hs_value(s, col, row, isnull);
}

/*
 * gh_heapscan_host_row reads row (GH_HS_HOST) through PostgreSQL's tuple
 * path: heap_deform_tuple on the staged copy, every attribute of the table
 * into values and isnull (the table's natts entries), values that are
 * compressed or out of line detoasted into the current memory context.
 */
void
gh_heapscan_host_row(GhHeapScan *s, uint32 row, Datum *values, bool *isnull)
{
	uint32		lo = 0,
				hi = s->npages;
	Page		page;
	OffsetNumber off;
	ItemId		lpp;
	HeapTupleData tup;

	Assert(s->status[row] == GH_HS_HOST);
	/* the page whose slots hold row: the last with first <= row */
	while (hi - lo > 1)
	{
		uint32		mid = lo + (hi - lo) / 2;

		if (s->first[mid] <= row)
			lo = mid;
		else
			hi = mid;
	}
	page = (Page) (s->pages + (size_t) lo * BLCKSZ);
	off = (OffsetNumber) (row - s->first[lo] + 1);
	lpp = PageGetItemId(page, off);
	tup.t_tableOid = RelationGetRelid(s->rel);
	tup.t_data = (HeapTupleHeader) PageGetItem(page, lpp);
	tup.t_len = ItemIdGetLength(lpp);
	ItemPointerSet(&tup.t_self, s->blocks[lo], off);
	heap_deform_tuple(&tup, s->tupdesc, values, isnull);
	for (int a = 0; a < s->tupdesc->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(s->tupdesc, a);

		if (!isnull[a] && att->attlen == -1 &&
			VARATT_IS_EXTENDED(DatumGetPointer(values[a])))
			values[a] = PointerGetDatum(detoast_attr((struct varlena *)
													 DatumGetPointer(values[a])));
	}
}

const GhHeapScanCounts *
gh_heapscan_counts(GhHeapScan *s)
{
	return &s->counts;
}

void
gh_heapscan_end(GhHeapScan *s)
{
	if (s->strategy != NULL)
		FreeAccessStrategy(s->strategy);
	gh_dev_free(s->pages);
	gh_dev_free(s->status);
	hs_columns_free((void **) s->words, s->ncols);
	hs_columns_free((void **) s->valid, s->ncols);
	if (s->target == GH_TARGET_GPU)
	{
		gh_dev_free(s->d_pages);
		gh_dev_free(s->d_first);
		gh_dev_free(s->d_atts);
		gh_dev_free(s->d_status);
		hs_columns_free(s->d_words, s->ncols);
		hs_columns_free(s->d_valid, s->ncols);
		gh_dev_free(s->d_words_arr);
		gh_dev_free(s->d_valid_arr);
	}
}

/* ---- a row source for operators over a sequential scan ---- */

struct GhScanSource
{
	GhHeapScan *scan;
	Instrumentation *instr;		/* the child's, under EXPLAIN ANALYZE */
	TupleTableSlot *slot;		/* the scan's output columns, virtual */
	int			ninput;
	int		   *map;			/* per output column, its index in attnos */
	AttrNumber *input_att;		/* per output column, its attribute */
	Datum	   *hvals;			/* a tuple-path row, the table's natts */
	bool	   *hnulls;
	MemoryContext rowcxt;
	uint32		row;			/* the next row slot of the batch */
	uint32		nrows;
	bool		done;
};

/*
 * gh_scan_source_refusal says why the child cannot be read by the device
 * scan, or NULL if it can.
 */
const char *
gh_scan_source_refusal(PlanState *child, EState *estate)
{
	Plan	   *plan = child->plan;
	Relation	rel;
	ListCell   *lc;

	if (!gpuhash_enable_scan)
		return "gpuhash.enable_scan is off";
	if (!IsA(plan, SeqScan))
		return "the input is not a sequential scan";
	if (plan->qual != NIL)
		return "the scan has a filter";
	rel = ((ScanState *) child)->ss_currentRelation;
	if (rel == NULL)
		return "the scan has no table";
	foreach(lc, plan->targetlist)
	{
		Var		   *var = (Var *) lfirst_node(TargetEntry, lc)->expr;

		if (!IsA(var, Var) || var->varno != ((Scan *) plan)->scanrelid ||
			var->varlevelsup != 0 || var->varattno <= 0 ||
			var->varattno > RelationGetDescr(rel)->natts)
			return "the scan computes expressions";
	}
	return gh_heapscan_refusal(rel, estate->es_snapshot);
}

/* gh_scan_source_table: the name of the child's table */
const char *
gh_scan_source_table(PlanState *child)
{
	return RelationGetRelationName(((ScanState *) child)->ss_currentRelation);
}

/*
 * gh_scan_source_begin starts the device scan of child, which
 * gh_scan_source_refusal accepted.  A parallel scan takes its block ranges
 * from the scan's shared state; NULL where that is not there (a process
 * that runs the scan without it), and the caller runs the child.
 */
GhScanSource *
gh_scan_source_begin(PlanState *child, EState *estate, GhTarget target)
{
	Plan	   *plan = child->plan;
	ScanState  *ss = (ScanState *) child;
	Relation	rel = ss->ss_currentRelation;
	ParallelBlockTableScanDesc pscan = NULL;
	GhScanSource *src;
	int			n = list_length(plan->targetlist);
	AttrNumber *attnos = palloc(sizeof(AttrNumber) * (n + 1));
	int			nattnos = 0;
	int			i = 0;
	ListCell   *lc;

	if (plan->parallel_aware)
	{
		if (ss->ss_currentScanDesc == NULL ||
			ss->ss_currentScanDesc->rs_parallel == NULL)
			return NULL;
		pscan = (ParallelBlockTableScanDesc) ss->ss_currentScanDesc->rs_parallel;
	}
	src = palloc0(sizeof(GhScanSource));
	src->ninput = n;
	src->map = palloc(sizeof(int) * (n + 1));
	src->input_att = palloc(sizeof(AttrNumber) * (n + 1));
	foreach(lc, plan->targetlist)
	{
		Var		   *var = (Var *) lfirst_node(TargetEntry, lc)->expr;
		int			j;

		for (j = 0; j < nattnos; j++)
			if (attnos[j] == var->varattno)
				break;
		if (j == nattnos)
			attnos[nattnos++] = var->varattno;
		src->map[i] = j;
		src->input_att[i] = var->varattno;
		i++;
	}
	src->slot = MakeSingleTupleTableSlot(ExecGetResultType(child),
										 &TTSOpsVirtual);
	src->hvals = palloc(sizeof(Datum) * (RelationGetDescr(rel)->natts + 1));
	src->hnulls = palloc(sizeof(bool) * (RelationGetDescr(rel)->natts + 1));
	src->rowcxt = AllocSetContextCreate(CurrentMemoryContext,
										"gpuhash device scan row",
										ALLOCSET_SMALL_SIZES);
	src->scan = gh_heapscan_begin(rel, estate->es_snapshot, attnos, nattnos,
								  pscan, target);
	src->instr = child->instrument;
	return src;
}

/*
 * scan_source_row returns the next visible row as a virtual slot, its
 * values valid until the next call, or NULL at the end.
 */
static TupleTableSlot *
scan_source_row(GhScanSource *src)
{
	TupleTableSlot *slot = src->slot;

	for (;;)
	{
		uint8		status;

		if (src->row >= src->nrows)
		{
			if (src->done || !gh_heapscan_next(src->scan))
			{
				src->done = true;
				return NULL;
			}
			src->row = 0;
			src->nrows = gh_heapscan_nrows(src->scan);
			continue;
		}
		status = src->scan->status[src->row];
		if (status == GH_HS_NONE)
		{
			src->row++;
			continue;
		}
		ExecClearTuple(slot);
		if (status == GH_HS_ROW)
		{
			for (int i = 0; i < src->ninput; i++)
				slot->tts_values[i] = hs_value(src->scan, src->map[i], src->row,
											   &slot->tts_isnull[i]);
		}
		else
			gh_scan_source_host_row(src, src->row, slot->tts_values,
									slot->tts_isnull);
		src->row++;
		return ExecStoreVirtualTuple(slot);
	}
}

/*
 * gh_scan_source_next returns the next visible row as a virtual slot, its
 * values valid until the next call, or NULL at the end.  Under EXPLAIN
 * ANALYZE it counts the row (and the time and buffers of reading it) in
 * the scan node's own instrumentation, as ExecProcNode would have, so
 * that the plan shows the sequential scan's rows where the device scan
 * read them in its place.
 */
TupleTableSlot *
gh_scan_source_next(GhScanSource *src)
{
	TupleTableSlot *slot;

	if (src->instr == NULL)
		return scan_source_row(src);
	InstrStartNode(src->instr);
	slot = scan_source_row(src);
	InstrStopNode(src->instr, slot == NULL ? 0.0 : 1.0);
	return slot;
}

/*
 * gh_scan_source_next_batch reads the scan's next batch into *batch, its
 * arrays valid until the next call; false at the end.
 */
bool
gh_scan_source_next_batch(GhScanSource *src, GhHeapScanBatch *batch)
{
	const GhHeapScanCounts *c = gh_heapscan_counts(src->scan);
	uint64		before = c->rows_device + c->rows_host;
	bool		more;

	/* under EXPLAIN ANALYZE, the batch's rows count as the scan node's */
	if (src->instr != NULL)
		InstrStartNode(src->instr);
	more = !src->done && gh_heapscan_next(src->scan);
	if (src->instr != NULL)
		InstrStopNode(src->instr, more ? (double) (c->rows_device + c->rows_host - before) : 0.0);
	if (!more)
	{
		src->done = true;
		return false;
	}
	gh_heapscan_batch(src->scan, batch);
	/* nothing of it is left for gh_scan_source_next */
	src->row = src->nrows = batch->nrows;
	return true;
}

/*
 * gh_scan_source_column is the column of the source's batches that holds
 * column i (from 0) of the scan's output.
 */
int
gh_scan_source_column(GhScanSource *src, int i)
{
	Assert(i >= 0 && i < src->ninput);
	return src->map[i];
}

/*
 * gh_scan_source_host_row reads row (GH_HS_HOST) of the current batch
 * through the tuple path into values and isnull, one entry per column of
 * the scan's output, valid until the next call.
 */
void
gh_scan_source_host_row(GhScanSource *src, uint32 row, Datum *values,
						bool *isnull)
{
	MemoryContext old = MemoryContextSwitchTo(src->rowcxt);

	MemoryContextReset(src->rowcxt);
	gh_heapscan_host_row(src->scan, row, src->hvals, src->hnulls);
	MemoryContextSwitchTo(old);
	for (int i = 0; i < src->ninput; i++)
	{
		values[i] = src->hvals[src->input_att[i] - 1];
		isnull[i] = src->hnulls[src->input_att[i] - 1];
	}
}

const GhHeapScanCounts *
gh_scan_source_counts(GhScanSource *src)
{
	return gh_heapscan_counts(src->scan);
}

void
gh_scan_source_end(GhScanSource *src)
{
	gh_heapscan_end(src->scan);
	ExecDropSingleTupleTableSlot(src->slot);
	MemoryContextDelete(src->rowcxt);
}

/*
 * gh_scan_counts_add adds the counts of add to sum.
 */
void
gh_scan_counts_add(GhHeapScanCounts *sum, const GhHeapScanCounts *add)
{
	sum->pages += add->pages;
	sum->pages_checked += add->pages_checked;
	sum->tuples_hidden += add->tuples_hidden;
	sum->rows_device += add->rows_device;
	sum->rows_host += add->rows_host;
	sum->batches += add->batches;
	sum->stage_ms += add->stage_ms;
	sum->device_ms += add->device_ms;
}

/*
 * gh_explain_scan_text appends gh_explain_scan_counts' TEXT line to str,
 * without its indent or line end (GpuHashJoin puts a worker's prefix
 * before it).
 */
void
gh_explain_scan_text(StringInfo str, const GhHeapScanCounts *c, bool workers,
					 bool timing)
{
	double		mb = (double) c->pages * BLCKSZ / (1024.0 * 1024.0);

	appendStringInfo(str, "Device Scan Pages: sent=%llu checked=%llu",
					 (unsigned long long) c->pages,
					 (unsigned long long) c->pages_checked);
	if (workers)
		appendStringInfoString(str, " (in workers)");
	else
		appendStringInfo(str, " chunks=%llu", (unsigned long long) c->batches);
	appendStringInfo(str, "  Rows: device=%llu tuple path=%llu hidden=%llu  Read: %.1f MB",
					 (unsigned long long) c->rows_device,
					 (unsigned long long) c->rows_host,
					 (unsigned long long) c->tuples_hidden, mb);
	if (timing && workers)
		appendStringInfo(str, "  Time: %.3f ms summed over the workers",
						 c->stage_ms);
	else if (timing)
		appendStringInfo(str, "  Time: staging=%.3f ms device=%.3f ms",
						 c->stage_ms, c->device_ms);
}

/*
 * gh_explain_scan_counts shows what a device scan did (GpuHashAgg's input,
 * GpuHashJoin's outer side), on one line in TEXT as a scan shows its
 * buffers: pages sent (and how many of them were checked
 * tuple by tuple on the CPU) in how many chunks, rows the device read and
 * rows the tuple path read, the bytes read, and under TIMING the time of
 * staging and of the device.  workers: the counts are the workers' sums,
 * whose deforming is the CPU twin's.
 */
void
gh_explain_scan_counts(const GhHeapScanCounts *c, bool workers, ExplainState *es)
{
	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		appendStringInfoSpaces(es->str, es->indent * 2);
		gh_explain_scan_text(es->str, c, workers, es->timing);
		appendStringInfoChar(es->str, '\n');
		return;
	}
	ExplainPropertyBool("Device Scan In Workers", workers, es);
	ExplainPropertyUInteger("Device Scan Pages Sent", NULL, c->pages, es);
	ExplainPropertyUInteger("Device Scan Pages Checked", NULL, c->pages_checked, es);
	if (!workers)
		ExplainPropertyUInteger("Device Scan Chunks", NULL, c->batches, es);
	ExplainPropertyUInteger("Device Scan Rows", NULL, c->rows_device, es);
	ExplainPropertyUInteger("Device Scan Tuple Path Rows", NULL, c->rows_host, es);
	ExplainPropertyUInteger("Device Scan Tuples Hidden", NULL, c->tuples_hidden, es);
	ExplainPropertyUInteger("Device Scan Bytes", NULL, c->pages * BLCKSZ, es);
	if (es->timing)
	{
		ExplainPropertyFloat("Device Scan Staging Time", "ms", c->stage_ms, 3, es);
		if (!workers)
			ExplainPropertyFloat("Device Scan Device Time", "ms", c->device_ms, 3, es);
	}
}

/* ---- SQL: the device scan of a whole table, for the tests ---- */

/*
 * hs_open_checked opens the table of row type relid for reading as the
 * caller may: SELECT on the table, no row security in force.
 */
static Relation
hs_open_checked(Oid relid)
{
	Relation	rel;
	AclResult	acl;

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("the device scan reads a table"),
				 errhint("Pass a value of the table's row type, such as NULL::mytable.")));
	rel = table_open(relid, AccessShareLock);
	acl = pg_class_aclcheck(relid, GetUserId(), ACL_SELECT);
	if (acl != ACLCHECK_OK)
		aclcheck_error(acl, get_relkind_objtype(rel->rd_rel->relkind),
					   RelationGetRelationName(rel));
	if (check_enable_rls(relid, InvalidOid, false) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the device scan does not read \"%s\": it has row-level security",
						RelationGetRelationName(rel))));
	if (gh_heapscan_refusal(rel, GetActiveSnapshot()) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the device scan does not read \"%s\": %s",
						RelationGetRelationName(rel),
						gh_heapscan_refusal(rel, GetActiveSnapshot()))));
	return rel;
}

/* hs_begin_all: a serial device scan of every live column of rel */
static GhHeapScan *
hs_begin_all(Relation rel, GhTarget target)
{
	TupleDesc	desc = RelationGetDescr(rel);
	AttrNumber *attnums = palloc(sizeof(AttrNumber) * Max(desc->natts, 1));
	int			n = 0;

	for (int a = 0; a < desc->natts; a++)
	{
		if (!TupleDescAttr(desc, a)->attisdropped)
			attnums[n++] = a + 1;
	}
	return gh_heapscan_begin(rel, GetActiveSnapshot(), attnums, n, NULL,
							 target);
}

/*
 * gpuhash_scan_table(NULL::t) returns the rows of table t as the device
 * scan reads them, in t's row type.
 */
Datum
gpuhash_scan_table(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			type = get_fn_expr_argtype(fcinfo->flinfo, 0);
	Relation	rel;
	TupleDesc	desc;
	GhHeapScan *s;
	Datum	   *values;
	bool	   *isnull;
	MemoryContext rowcxt;
	GhTarget	target;

	rel = hs_open_checked(type == InvalidOid ? InvalidOid : get_typ_typrelid(type));
	desc = RelationGetDescr(rel);
	target = gpuhash_exec_target();
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	if (rsinfo->setDesc->natts != desc->natts)
		elog(ERROR, "gpuhash: the row type of \"%s\" changed",
			 RelationGetRelationName(rel));
	s = hs_begin_all(rel, target);
	values = palloc(sizeof(Datum) * Max(desc->natts, 1));
	isnull = palloc(sizeof(bool) * Max(desc->natts, 1));
	rowcxt = AllocSetContextCreate(CurrentMemoryContext, "gpuhash scan row",
								   ALLOCSET_DEFAULT_SIZES);
	while (gh_heapscan_next(s))
	{
		uint32		n = gh_heapscan_nrows(s);

		for (uint32 r = 0; r < n; r++)
		{
			uint8		st = gh_heapscan_status(s, r);
			MemoryContext old;

			if (st == GH_HS_NONE)
				continue;
			old = MemoryContextSwitchTo(rowcxt);
			if (st == GH_HS_HOST)
				gh_heapscan_host_row(s, r, values, isnull);
			else
			{
				int			c = 0;

				for (int a = 0; a < desc->natts; a++)
				{
					if (TupleDescAttr(desc, a)->attisdropped)
					{
						values[a] = (Datum) 0;
						isnull[a] = true;
					}
					else
						values[a] = gh_heapscan_value(s, c++, r, &isnull[a]);
				}
			}
			MemoryContextSwitchTo(old);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc,
								 values, isnull);
			MemoryContextReset(rowcxt);
		}
	}
	gh_heapscan_end(s);
	table_close(rel, AccessShareLock);
	return (Datum) 0;
}

/*
 * gpuhash_scan_counts(NULL::t) runs the device scan over table t and says
 * what it did: pages sent, pages checked tuple by tuple, tuples those checks
 * hid, rows the device read, rows left to the tuple path, batches.
 */
Datum
gpuhash_scan_counts(PG_FUNCTION_ARGS)
{
	Oid			type = get_fn_expr_argtype(fcinfo->flinfo, 0);
	Relation	rel;
	GhHeapScan *s;
	const GhHeapScanCounts *c;
	TupleDesc	rdesc;
	Datum		values[6];
	bool		nulls[6] = {0};

	if (get_call_result_type(fcinfo, NULL, &rdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "gpuhash: return type must be a row type");
	rel = hs_open_checked(type == InvalidOid ? InvalidOid : get_typ_typrelid(type));
	s = hs_begin_all(rel, gpuhash_exec_target());
	while (gh_heapscan_next(s))
		;
	c = gh_heapscan_counts(s);
	values[0] = Int64GetDatum((int64) c->pages);
	values[1] = Int64GetDatum((int64) c->pages_checked);
	values[2] = Int64GetDatum((int64) c->tuples_hidden);
	values[3] = Int64GetDatum((int64) c->rows_device);
	values[4] = Int64GetDatum((int64) c->rows_host);
	values[5] = Int64GetDatum((int64) c->batches);
	gh_heapscan_end(s);
	table_close(rel, AccessShareLock);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(rdesc),
													  values, nulls)));
}
