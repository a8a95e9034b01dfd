/*-------------------------------------------------------------------------
 * heapscan.h
 *	  The device scan: a heap table read as pages, whose tuples the device
 *	  (or its CPU twin) deforms into columns (cuda/gh_heapscan.h).
 *
 * The host reads block after block as a sequential scan does (pin, share
 * lock, opportunistic pruning), decides visibility with PostgreSQL's own
 * rules and copies each page into a staging area:
 *	- a page marked all-visible, under an MVCC snapshot not taken during
 *	  recovery, outside SERIALIZABLE, goes as it is;
 *	- any other page is checked tuple by tuple (HeapTupleSatisfiesVisibility,
 *	  and the serializable conflict check), and the line pointers of the
 *	  tuples the snapshot does not see are cleared in the copy.
 * A batch of pages then goes to the target, which writes the columns the
 * caller reads; the rows the device leaves to the host (GH_HS_HOST: a value
 * compressed or out of line, a column added with a default since the row
 * was written) are read through heap_deform_tuple on the staged copy.
 *-------------------------------------------------------------------------
 */
#ifndef GPUHASH_HEAPSCAN_H
#define GPUHASH_HEAPSCAN_H

#include "access/relscan.h"
#include "nodes/execnodes.h"
#include "utils/rel.h"
#include "utils/snapshot.h"

#include "gpuhash.h"
#include "gh_heapscan.h"

/* What a scan did, for EXPLAIN and the tests. */
typedef struct GhHeapScanCounts
{
	uint64		pages;			/* pages sent to the target */
	uint64		pages_checked;	/* of those, checked tuple by tuple */
	uint64		tuples_hidden;	/* tuples those checks found invisible */
	uint64		rows_device;	/* rows the target read */
	uint64		rows_host;		/* rows read through the tuple path */
	uint64		batches;
	double		stage_ms;		/* reading and copying pages on the host */
	double		device_ms;		/* copies to the target and deforming */
} GhHeapScanCounts;

typedef struct GhHeapScan GhHeapScan;

/*
 * One deformed batch of a device scan, to be read in place, column by
 * column (cuda/gh_heapscan.h says what the arrays hold): status of each of
 * the nrows row slots; for each output column its words and valid flags;
 * and the staged pages, from which a word that is not a Datum is an
 * offset.  Valid until the scan's next batch.
 */
typedef struct GhHeapScanBatch
{
	uint32		nrows;
	const uint8 *status;
	const uint64 *const *words;
	const uint8 *const *valid;
	const char *pages;
} GhHeapScanBatch;

extern bool gpuhash_enable_scan;
extern int	gpuhash_scan_batch_pages;

extern void gpuhash_init_heapscan(void);
extern const char *gh_heapscan_refusal(Relation rel, Snapshot snapshot);
extern GhHeapScan *gh_heapscan_begin(Relation rel, Snapshot snapshot,
									 const AttrNumber *attnums, int ncols,
									 ParallelBlockTableScanDesc pscan,
									 GhTarget target);
extern bool gh_heapscan_next(GhHeapScan *scan);
extern uint32 gh_heapscan_nrows(GhHeapScan *scan);
extern uint8 gh_heapscan_status(GhHeapScan *scan, uint32 row);
extern void gh_heapscan_batch(GhHeapScan *scan, GhHeapScanBatch *batch);
extern Datum gh_heapscan_value(GhHeapScan *scan, int col, uint32 row,
							   bool *isnull);
extern void gh_heapscan_host_row(GhHeapScan *scan, uint32 row,
								 Datum *values, bool *isnull);
extern const GhHeapScanCounts *gh_heapscan_counts(GhHeapScan *scan);
extern void gh_heapscan_end(GhHeapScan *scan);

/*
 * A row source for an operator over a sequential scan (GpuHashAgg,
 * GpuHashAggPack): the scan's table read with the device scan, each row
 * returned as a virtual slot of the scan's output columns, the scan node
 * itself never run.  gh_scan_source_refusal says whether the child can be
 * read so (a plain or parallel sequential scan of a heap table, no filter,
 * output columns that are the table's attributes, an MVCC snapshot), or
 * why not; a parallel scan's source reads the block ranges of the scan's
 * shared state, as the scan would have.
 *
 * A caller that can take the scan's columns as they are reads whole
 * batches instead (gh_scan_source_next_batch), the slot's column i being
 * the batch's column gh_scan_source_column(i), and its GH_HS_HOST rows
 * through gh_scan_source_host_row; it uses one way or the other, not both.
 */
typedef struct GhScanSource GhScanSource;

extern const char *gh_scan_source_refusal(PlanState *child, EState *estate);
extern GhScanSource *gh_scan_source_begin(PlanState *child, EState *estate,
										  GhTarget target);
extern TupleTableSlot *gh_scan_source_next(GhScanSource *src);
extern bool gh_scan_source_next_batch(GhScanSource *src,
									  GhHeapScanBatch *batch);
extern int	gh_scan_source_column(GhScanSource *src, int i);
extern void gh_scan_source_host_row(GhScanSource *src, uint32 row,
									Datum *values, bool *isnull);
extern const GhHeapScanCounts *gh_scan_source_counts(GhScanSource *src);
extern const char *gh_scan_source_table(PlanState *child);
extern void gh_scan_source_end(GhScanSource *src);

struct ExplainState;
extern void gh_scan_counts_add(GhHeapScanCounts *sum,
							   const GhHeapScanCounts *add);
extern void gh_explain_scan_text(StringInfo str, const GhHeapScanCounts *c,
								 bool workers, bool timing);
extern void gh_explain_scan_counts(const GhHeapScanCounts *c, bool workers,
								   struct ExplainState *es);

#endif							/* GPUHASH_HEAPSCAN_H */
