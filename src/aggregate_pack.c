/*-------------------------------------------------------------------------
 * aggregate_pack.c
 *	  GpuHashAggPack: packs gpuhash_aggregate()'s input rows into device-ready
 *	  packets inside parallel workers.
 *
 * When the planner makes the input query parallel (Gather over a partial
 * plan that already computes the keys and aggregate arguments), one process
 * would otherwise receive every row through the tuple queues and take each
 * apart: at 10^8 rows that alone costs more than the aggregation.  Instead,
 * gh_agg_try_pack puts a GpuHashAggPack custom scan between the Gather and
 * its partial plan.  In every participant it pulls gpuhash.batch_rows rows
 * (fewer where the leader's batch holds fewer under the memory budget:
 * aggregate_batch.c's gh_agg_batch_cap; see packet_rows) from the partial plan,
 * writes their keys (Datum bits, 4 bytes for keys of
 * at most 4 bytes, and a NULL mask if any is NULL) and arguments (int32,
 * int64 or double, with valid flags if any is NULL) column by column into
 * one bytea packet, and returns the packet as a one-column tuple; the Gather
 * hands packets to gpuhash_aggregate's receiver, which copies them into the
 * device batch with a few memcpys and widening loops
 * (gh_agg_run_add_packet).  The single leader copies every byte that the
 * workers send, so packets carry no byte they need not: an int4 key and an
 * int4 argument with no NULLs take 8 bytes a row.
 *
 * Only the exact device-key path is packed (the device then groups without
 * any host check): keys by value with bitwise equality travel as their
 * Datums; other keys (text, char(n), numeric, ...) as numbers that all
 * participants give values together, compared by their bytes, in a shared
 * dictionary in the parallel query's DSA (aggregate_dict.c, THE SHARED
 * DICTIONARY; the node is parallel_aware for the DSM that holds its
 * handle): a participant introduces a number's value once and then sends
 * only the number, which the leader numbers again by the type's equality
 * once per pass.  Past the shared dictionary's share of the budget, values
 * go as numbers into a dictionary of the packet's distinct values, which
 * the leader numbers once per packet.  Carried keys keep a run on the
 * host; such queries take rows one by one in the leader.  NUMERIC arguments travel as the fixed point the device
 * takes (gh_agg_num_decode: a scaled int64 and its display scale); the few
 * values that are not fixed point (NaN, infinities, more than 18 digits)
 * travel whole at the end of the packet, for the leader's host-side state,
 * as do the text values of a column whose min or max the leader keeps (the
 * device counts them: their valid flags are 1).
 *
 * Where the partial plan is a parallel sequential scan that the device
 * scan can read (heapscan.h), no input row becomes a slot: pack_batches
 * takes the scan's deformed batches and appends a chunk of a batch's rows
 * to the packet key by key and column by column, each a tight loop over
 * the rows the device read (GH_HS_ROW), straight from the batch's Datum
 * words, valid flags and staged pages (a numbered key's value is numbered
 * where it lies, NUMERICs are decoded there); the rows left to the tuple
 * path (GH_HS_HOST: compressed or out-of-line values) follow one by one as
 * any child's rows do (pack_row).  A packet that cannot take a batch whole
 * takes the rest on the next call.  Rows so come out of scan order, which
 * packets never promised (bench/results/2026-11-29-pack-columns-twin.md
 * measures it on the CPU twin).
 *
 * The plan is changed after planning, so nothing here runs through setrefs:
 * the node has no expressions of its own, reads its child's output columns
 * by position, and its one output column is described by custom_scan_tlist.
 * Workers find the node's methods by name, which needs gh_agg_pack_init()
 * to have run in _PG_init; until it has, queries are simply not packed.
 *
 * aggregate.c calls this file (gh_agg_can_pack, gh_agg_try_pack) while it
 * plans the input query, and agg_plan.c once GpuHashAgg's plan is finished
 * (gh_agg_pack_gather); this file calls only files below it in aggregate.h's
 * list: aggregate_batch.c for the size of a batch's row and its cap, and
 * aggregate_numeric.c through gh_agg_num_decode.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "access/parallel.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "portability/instr_time.h"
#include "utils/date.h"

#include "aggregate.h"
#include "heapscan.h"

#define GH_PACK_NAME "GpuHashAggPack"

/*
 * custom_private of a GpuHashAggPack: an IntList of the bytes a row of the
 * leader's batch takes (gh_agg_batch_row_bytes, as the CPU twin counts it at
 * the least load factor: the most, whatever the execution's settings),
 * number of keys, number of input columns, then each column's GhValType,
 * gh_agg_kind and packet width, then each key's packet width, whether it is numbered
 * (GhAggKey.dict), its typlen and typbyval, and last, for each key and then
 * each column, the child's column (from 1) that holds it.
 */
enum
{
	PACK_PRIV_ROW_BYTES,
	PACK_PRIV_NKEYS,
	PACK_PRIV_NCOLS,
	PACK_PRIV_COLS
};

/*
 * The packet's dictionary of one numbered key: its distinct values, by
 * their bytes, in the packet's format (aggregate.h), found through an open
 * addressing table of entry + 1.
 */
typedef struct PackDict
{
	StringInfoData ent;			/* the entries, each MAXALIGNed */
	uint32	   *slots;
	uint32		nslots;			/* a power of two, at least 2 * cap */
	uint32	   *hash;			/* per entry */
	uint32	   *off;			/* per entry: its offset in ent */
	uint32	   *tag;			/* per entry: its global number, or
								 * GH_PACKET_LOCAL */
	uint32		n;
	int32		last;			/* the entry of the row before, -1: none */
} PackDict;

/*
 * The participant's cache of one numbered key's shared dictionary: the
 * values it has introduced (aggregate_dict.c's SHARED DICTIONARY), by
 * their bytes, with their global numbers, for the whole scan.  It grows to
 * the participant's share of the budget and then takes no more values:
 * those are looked up in the shared table.  Either way a participant
 * introduces a global number once: a bitmap of the numbers it introduced
 * (one bit a value) lets a value the cache has no room for travel as its
 * number after its first packet, the leader having read that packet
 * before (one worker's packets keep their order in its queue).
 */
typedef struct PackCache
{
	StringInfoData bytes;		/* the values' bytes, one after another */
	uint32	   *slots;			/* open addressing: entry + 1 */
	uint32		nslots;			/* a power of two, 0: none yet */
	uint32	   *hash;			/* per entry */
	uint32	   *off;			/* per entry: its offset in bytes */
	uint32	   *len;
	uint32	   *num;			/* per entry: its global number */
	uint32		n;
	uint32		cap;
	int32		last;			/* the entry of the row before, -1: none */
	/* bit g: global number g introduced by this participant already */
	uint64	   *sent;
	uint32		sent_words;
} PackCache;

#define PACK_KEY_PRIV	4		/* custom_private entries per key */

/*
 * Row slots of a device scan batch that pack_batches takes at a time: the
 * packet's lists of values and dictionaries are checked against their limit
 * between chunks, so a chunk can pass it by at most this many rows' values
 * (each in a staged page, so less than a page).
 */
#define PACK_CHUNK_ROWS	1024

/* A value to be listed whole at the end of the packet, for its row. */
typedef struct PackWhole
{
	uint32		row;
	Datum		value;
} PackWhole;

typedef struct PackState
{
	CustomScanState css;
	PlanState  *child;
	uint32		cap;
	int			nkeys;
	int			ncols;
	GhValType	vtype[GH_AGG_MAX_COLS];
	uint8		kind[GH_AGG_MAX_COLS];
	uint8		cwidth[GH_AGG_MAX_COLS];	/* 0, 4 or 8 */
	uint8		kwidth[GH_AGG_MAX_KEYS];	/* 4 or 8 */
	bool		kdict[GH_AGG_MAX_KEYS]; /* numbered: keys[k] holds entries */
	int16		ktyplen[GH_AGG_MAX_KEYS];
	bool		kbyval[GH_AGG_MAX_KEYS];
	PackDict	dict[GH_AGG_MAX_KEYS];
	Size		dict_bytes;		/* the packet's dictionaries, headers included */
	/* the participants' shared dictionary, where the plan runs in parallel */
	bool		anydict;		/* some key is numbered */
	GhSharedDict *shared;		/* in the parallel query's DSM */
	GhSharedDictRef *sref;		/* attached; NULL: packet entries only */
	PackCache	cache[GH_AGG_MAX_KEYS];
	Size		cache_bytes;
	Size		cache_limit;
	uint64		shared_numbered;	/* at shutdown (leader): values numbered */
	bool		shared_full;	/* ... and whether a value found no room */
	AttrNumber	from[GH_AGG_MAX_KEYS + GH_AGG_MAX_COLS];	/* child column
																 * of each key,
																 * then column */
	bool		done;
	/* one packet being filled, column by column (arrays of cap entries) */
	void	   *keys[GH_AGG_MAX_KEYS];
	uint8	   *nullmask;
	void	   *vals[GH_AGG_MAX_COLS];
	uint8	   *valid[GH_AGG_MAX_COLS];
	uint8	   *ds[GH_AGG_MAX_COLS];	/* NUMERIC: display scales */
	StringInfoData exc;			/* NUMERIC values that are not fixed point */
	uint32		nexc;
	Size		packet_cap;		/* bytes allocated for packet */
	Size		exc_limit;		/* bytes of values listed whole, and of
								 * dictionaries, past which a packet ends */
	MemoryContext detoast_cxt;	/* NUMERICs detoasted for a packet */
	bytea	   *packet;
	/*
	 * The device scan of the input (heapscan.h's row source, deformed by
	 * the CPU twin in this process): where scan_refusal is NULL, started
	 * at the first row, when the parallel scan's shared state is there.
	 */
	const char *scan_refusal;
	GhScanSource *src;
	bool		src_tried;
	GhHeapScanCounts scan_sent;	/* the counts the packets have carried */
	/*
	 * Reading the device scan's batches column by column (pack_batches):
	 * the batch and its next row slot, each key's and column's column of
	 * the batch, a chunk's rows by status, the values of a chunk's rows
	 * listed whole (per column, in row order), and one tuple-path row.
	 */
	GhHeapScanBatch batch;
	uint32		brow;
	int			scol[GH_AGG_MAX_KEYS + GH_AGG_MAX_COLS];
	uint32	   *sel;			/* GH_HS_ROW row slots of a chunk */
	uint32	   *hsel;			/* GH_HS_HOST row slots of a chunk */
	PackWhole  *whole[GH_AGG_MAX_COLS];
	uint32		nwhole[GH_AGG_MAX_COLS];
	Datum	   *hvals;
	bool	   *hnulls;
} PackState;

static Node *pack_create_state(CustomScan *cscan);
static void pack_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *pack_exec(CustomScanState *node);
static void pack_end(CustomScanState *node);
static void pack_rescan(CustomScanState *node);
static bool max_node_id_walker(Plan *plan, void *context);
static uint32 packet_rows(Size batch_row_bytes, Size row_bytes);

/*
 * packet_row_bytes is the most a packet row of nkeys keys and ncols columns
 * takes: 8 bytes a key, a NULL mask, and per column 8 bytes of value, a
 * valid flag and a display scale.
 */
static inline Size
packet_row_bytes(int nkeys, int ncols)
{
	return (Size) nkeys * 8 + 1 + (Size) ncols * 10;
}
static void pack_whole(PackState *ps, int c, uint32 n, Datum v);
static uint32 pack_dict_entry(PackState *ps, int k, Datum v);
static void pack_row(PackState *ps, uint32 n, const Datum *values,
					 const bool *isnull, uint8 *anynull, uint32 *nullcols);
static uint32 pack_batches(PackState *ps, uint8 *anynull, uint32 *nullcols);

static CustomScanMethods pack_scan_methods = {
	.CustomName = GH_PACK_NAME,
	.CreateCustomScanState = pack_create_state,
};

static void pack_explain(CustomScanState *node, List *ancestors,
						 ExplainState *es);
static Size pack_estimate_dsm(CustomScanState *node, ParallelContext *pcxt);
static void pack_init_dsm(CustomScanState *node, ParallelContext *pcxt,
						  void *coordinate);
static void pack_reinit_dsm(CustomScanState *node, ParallelContext *pcxt,
							void *coordinate);
static void pack_init_worker(CustomScanState *node, shm_toc *toc,
							 void *coordinate);
static void pack_shutdown(CustomScanState *node);
static void pack_cache_reset(PackState *ps);

static CustomExecMethods pack_exec_methods = {
	.CustomName = GH_PACK_NAME,
	.BeginCustomScan = pack_begin,
	.ExecCustomScan = pack_exec,
	.EndCustomScan = pack_end,
	.ReScanCustomScan = pack_rescan,
	.EstimateDSMCustomScan = pack_estimate_dsm,
	.InitializeDSMCustomScan = pack_init_dsm,
	.ReInitializeDSMCustomScan = pack_reinit_dsm,
	.InitializeWorkerCustomScan = pack_init_worker,
	.ShutdownCustomScan = pack_shutdown,
	.ExplainCustomScan = pack_explain,
};

static bool pack_registered = false;

/*
 * gh_agg_pack_init registers GpuHashAggPack so that parallel workers, which
 * load the library and run _PG_init (gpuhash_init_aggregate), can read
 * plans that contain it.
 */
void
gh_agg_pack_init(void)
{
	RegisterCustomScanMethods(&pack_scan_methods);
	pack_registered = true;
}

/*
 * max_node_id_walker keeps in *context, an int, the largest plan_node_id of
 * the tree below plan, plan's included.
 */
static bool
max_node_id_walker(Plan *plan, void *context)
{
	int		   *m = (int *) context;

	*m = Max(*m, plan->plan_node_id);
	return gh_plan_walk_children(plan, max_node_id_walker, context);
}

/*
 * gh_agg_can_pack says whether the run could take packets, before planning:
 * the pack node is registered and the keys go to the device as they are.
 */
bool
gh_agg_can_pack(GhAggPlan *plan)
{
	return pack_registered && plan->device_keys;
}

/*
 * gh_agg_try_pack puts a GpuHashAggPack under the Gather at the top of
 * pstmt when the run can take packets.  Returns whether it did; the query
 * then returns one bytea packet per row.
 */
bool
gh_agg_try_pack(GhAggPlan *plan, PlannedStmt *pstmt)
{
	if (!IsA(pstmt->planTree, Gather) || !gh_agg_can_pack(plan))
		return false;
	return gh_agg_pack_gather(plan, (Gather *) pstmt->planTree,
							  gh_agg_max_node_id(pstmt) + 1);
}

/*
 * gh_agg_max_node_id is the largest plan_node_id of pstmt (its tree and its
 * subplans): a node added after planning takes the next.
 */
int
gh_agg_max_node_id(PlannedStmt *pstmt)
{
	int			m = -1;

	(void) gh_plan_walk_stmt(pstmt, max_node_id_walker, &m);
	return m;
}

/*
 * gh_agg_pack_gather puts a GpuHashAggPack, of plan_node_id node_id, under
 * gather (a finished plan's, whose targetlist passes its child's columns,
 * the run's keys and then its input columns, through) when the run can take
 * packets.  Returns whether it did; the Gather then returns one bytea
 * packet per row.
 */
bool
gh_agg_pack_gather(GhAggPlan *plan, Gather *gather, int node_id)
{
	Plan	   *child;
	CustomScan *cs;
	List	   *priv;
	Size		batch_row_bytes;
	Size		cap;
	int			i;
	ListCell   *lc;

	if (!gh_agg_can_pack(plan))
		return false;
	child = outerPlan(gather);
	/* the pack runs in the workers, and so must all that it reads */
	if (child == NULL || !child->parallel_safe || gather->plan.qual != NIL ||
		list_length(gather->plan.targetlist) != plan->nkeys + plan->ncols_in)
		return false;
	/*
	 * The Gather must pass its child's columns through, in any order (the
	 * child may have put an expression first); the pack node reads them
	 * where they are.
	 */
	foreach(lc, gather->plan.targetlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		Var		   *var = (Var *) tle->expr;

		if (!IsA(var, Var) || var->varno != OUTER_VAR || var->varattno < 1 ||
			var->varattno > list_length(child->targetlist))
			return false;
	}

	/* rows per packet as the settings give them now, for the estimates */
	batch_row_bytes = gh_agg_batch_row_bytes(plan, GH_TARGET_CPU, GH_LOAD_FACTOR_MIN);
	cap = packet_rows(batch_row_bytes, packet_row_bytes(plan->nkeys, plan->ncols_in));
	priv = list_make3(makeInteger((int) batch_row_bytes), makeInteger(plan->nkeys),
					  makeInteger(plan->ncols_in));
	for (i = 0; i < plan->ncols_in; i++)
	{
		priv = lappend(priv, makeInteger(plan->cols[i].vtype));
		priv = lappend(priv, makeInteger(plan->cols[i].kind));
		priv = lappend(priv, makeInteger(gh_agg_col_width(&plan->cols[i])));
	}
	for (i = 0; i < plan->nkeys; i++)
	{
		priv = lappend(priv, makeInteger(gh_agg_key_width(&plan->keys[i])));
		priv = lappend(priv, makeInteger(plan->keys[i].dict));
		priv = lappend(priv, makeInteger(plan->keys[i].typlen));
		priv = lappend(priv, makeInteger(plan->keys[i].typbyval));
	}
	foreach(lc, gather->plan.targetlist)
		priv = lappend(priv, makeInteger(((Var *) lfirst_node(TargetEntry, lc)->expr)->varattno));

	cs = makeNode(CustomScan);
	cs->scan.plan.startup_cost = child->startup_cost;
	cs->scan.plan.total_cost = child->total_cost;
	cs->scan.plan.plan_rows = Max(1.0, child->plan_rows / cap);
	cs->scan.plan.plan_width = (int) Min((double) child->plan_width * cap,
										 (double) MaxAllocSize);
	/* for its DSM: the participants' shared dictionary of numbered keys */
	cs->scan.plan.parallel_aware = true;
	cs->scan.plan.parallel_safe = true;
	cs->scan.plan.plan_node_id = node_id;
	cs->scan.plan.extParam = bms_copy(child->extParam);
	cs->scan.plan.allParam = bms_copy(child->allParam);
	cs->scan.plan.targetlist =
		list_make1(makeTargetEntry((Expr *) makeVar(INDEX_VAR, 1, BYTEAOID, -1, InvalidOid, 0),
								   1, NULL, false));
	cs->scan.scanrelid = 0;
	cs->custom_scan_tlist =
		list_make1(makeTargetEntry((Expr *) makeNullConst(BYTEAOID, -1, InvalidOid),
								   1, NULL, false));
	cs->custom_plans = list_make1(child);
	cs->custom_private = priv;
	cs->methods = &pack_scan_methods;

	outerPlan(gather) = (Plan *) cs;
	gather->plan.targetlist =
		list_make1(makeTargetEntry((Expr *) makeVar(OUTER_VAR, 1, BYTEAOID, -1, InvalidOid, 0),
								   1, NULL, false));
	return true;
}

/*
 * packet_rows is how many rows of row_bytes a packet takes: at most
 * gpuhash.batch_rows, and at most the leader's whole batch of rows of
 * batch_row_bytes (gh_agg_batch_cap, which holds GH_AGG_BATCH_PACKETS
 * packets where the memory budget allows and fewer rows where it does
 * not), so that a packet always fits one batch; and a packet is one bytea,
 * below 1 GB.
 *
 * A packet is not cut to a sixteenth of a small batch: under the default
 * work_mem the CPU twin's batch of a two-key GROUP BY holds about 4,000
 * rows, and packets of 264 rows made the leader look up each numbered key's
 * distinct values once per 264 rows.  On an H200 host that was most of the
 * time of H2O's q2 (two text keys of 100 values, 10^7 rows: 600 ms against
 * native's 420; bench/results/2026-11-29-h2o-packets.md).  A worker's
 * packet then takes at most what the leader's batch takes, within the
 * budget each parallel worker has of its own, as PostgreSQL's do.
 */
static uint32
packet_rows(Size batch_row_bytes, Size row_bytes)
{
	Size		cap = Min((Size) Max(gpuhash_batch_rows, 1),
						  (Size) gh_agg_batch_cap(batch_row_bytes));

	return (uint32) Max(Min(cap, (MaxAllocSize - sizeof(GhAggPacketHeader)) / row_bytes), 1);
}

/*
 * gh_agg_pack_rows_estimate is, for the planner's costs, about how many rows
 * a packet of a GROUP BY with nkeys device keys, ncols input columns and
 * nexprs device expressions takes: packet_rows of a plan whose columns are
 * sums of integers (the kinds change a row's bytes little).
 */
double
gh_agg_pack_rows_estimate(int nkeys, int ncols, int nexprs)
{
	GhAggPlan	plan = {0};
	GhAggCol	cols[GH_AGG_MAX_COLS] = {{0}};

	plan.device_keys = true;
	plan.nkeys = Min(nkeys, GH_AGG_MAX_KEYS);
	plan.ncols = Min(ncols + nexprs, GH_AGG_MAX_COLS);
	plan.ncols_in = Min(ncols, plan.ncols);
	plan.nexprs = plan.ncols - plan.ncols_in;
	plan.cols = cols;
	for (int c = 0; c < plan.ncols; c++)
	{
		cols[c].kind = GH_AGG_KIND_INT;
		cols[c].ops = GH_AGG_OP_SUM;
		cols[c].vtype = GHV_INT8;
	}
	return packet_rows(gh_agg_batch_row_bytes(&plan, GH_TARGET_CPU, GH_LOAD_FACTOR_MIN),
					   packet_row_bytes(plan.nkeys, plan.ncols_in));
}

static Node *
pack_create_state(CustomScan *cscan)
{
	PackState  *ps = (PackState *) newNode(sizeof(PackState), T_CustomScanState);

	ps->css.methods = &pack_exec_methods;
	return (Node *) ps;
}

static void
pack_begin(CustomScanState *node, EState *estate, int eflags)
{
	PackState  *ps = (PackState *) node;
	CustomScan *cs = (CustomScan *) node->ss.ps.plan;
	List	   *priv = cs->custom_private;

	ps->child = ExecInitNode(linitial(cs->custom_plans), estate, eflags);
	node->custom_ps = list_make1(ps->child);
	ps->nkeys = intVal(list_nth(priv, PACK_PRIV_NKEYS));
	ps->ncols = intVal(list_nth(priv, PACK_PRIV_NCOLS));
	if (ps->nkeys > GH_AGG_MAX_KEYS || ps->ncols > GH_AGG_MAX_COLS ||
		intVal(list_nth(priv, PACK_PRIV_ROW_BYTES)) <= 0)
		elog(ERROR, "GpuHashAggPack: malformed plan");
	/* the settings of this execution, which the leader's run shares */
	ps->cap = packet_rows((Size) intVal(list_nth(priv, PACK_PRIV_ROW_BYTES)),
						  packet_row_bytes(ps->nkeys, ps->ncols));
	ps->exc_limit = Min((Size) GH_PACKET_EXC_LIMIT,
						Max(get_hash_memory_limit() / GH_AGG_BATCH_PACKETS, (Size) 64 * 1024));
	if (list_length(priv) != PACK_PRIV_COLS + 3 * ps->ncols + PACK_KEY_PRIV * ps->nkeys +
		ps->nkeys + ps->ncols)
		elog(ERROR, "GpuHashAggPack: malformed plan");
	for (int j = 0; j < ps->nkeys + ps->ncols; j++)
	{
		int			at = PACK_PRIV_COLS + 3 * ps->ncols + PACK_KEY_PRIV * ps->nkeys + j;

		ps->from[j] = (AttrNumber) intVal(list_nth(priv, at));
		if (ps->from[j] < 1 ||
			ps->from[j] > list_length(((Plan *) linitial(cs->custom_plans))->targetlist))
			elog(ERROR, "GpuHashAggPack: malformed plan");
	}
	for (int c = 0; c < ps->ncols; c++)
	{
		ps->vtype[c] = (GhValType) intVal(list_nth(priv, PACK_PRIV_COLS + 3 * c));
		ps->kind[c] = (uint8) intVal(list_nth(priv, PACK_PRIV_COLS + 3 * c + 1));
		ps->cwidth[c] = (uint8) intVal(list_nth(priv, PACK_PRIV_COLS + 3 * c + 2));
	}
	for (int k = 0; k < ps->nkeys; k++)
	{
		int			at = PACK_PRIV_COLS + 3 * ps->ncols + PACK_KEY_PRIV * k;

		ps->kwidth[k] = (uint8) intVal(list_nth(priv, at));
		ps->kdict[k] = intVal(list_nth(priv, at + 1)) != 0;
		ps->ktyplen[k] = (int16) intVal(list_nth(priv, at + 2));
		ps->kbyval[k] = intVal(list_nth(priv, at + 3)) != 0;
		if (ps->kdict[k] && (ps->kwidth[k] != 4 || ps->ktyplen[k] == -2 ||
							 (ps->kbyval[k] && ps->ktyplen[k] > (int16) sizeof(Datum))))
			elog(ERROR, "GpuHashAggPack: malformed plan");
	}
	for (int k = 0; k < ps->nkeys; k++)
	{
		PackDict   *d = &ps->dict[k];

		ps->keys[k] = palloc((size_t) ps->kwidth[k] * ps->cap);
		if (!ps->kdict[k])
			continue;
		initStringInfo(&d->ent);
		d->nslots = 16;
		while (d->nslots < 2 * ps->cap)
			d->nslots *= 2;
		d->slots = palloc0(sizeof(uint32) * d->nslots);
		d->hash = palloc(sizeof(uint32) * ps->cap);
		d->off = palloc(sizeof(uint32) * ps->cap);
		d->tag = palloc(sizeof(uint32) * ps->cap);
		d->last = -1;
		ps->anydict = true;
		initStringInfo(&ps->cache[k].bytes);
		ps->cache[k].last = -1;
	}
	/*
	 * Half of this process's work_mem * hash_mem_multiplier: the cache is
	 * the participant's one hash table, beside a packet of a sixteenth.
	 */
	ps->cache_limit = get_hash_memory_limit() / 2;
	ps->nullmask = palloc(ps->cap);
	for (int c = 0; c < ps->ncols; c++)
	{
		ps->vals[c] = ps->cwidth[c] ? palloc((size_t) ps->cwidth[c] * ps->cap) : NULL;
		ps->valid[c] = palloc(ps->cap);
		if (ps->kind[c] == GH_AGG_KIND_NUMERIC)
			ps->ds[c] = palloc(ps->cap);
	}
	initStringInfo(&ps->exc);
	ps->detoast_cxt = AllocSetContextCreate(CurrentMemoryContext, "GpuHashAggPack detoast",
											ALLOCSET_SMALL_SIZES);
	ps->packet_cap = sizeof(GhAggPacketHeader) +
		(Size) ps->cap * packet_row_bytes(ps->nkeys, ps->ncols);
	ps->packet = palloc(ps->packet_cap);
	ps->scan_refusal = gh_scan_source_refusal(ps->child, estate);
}

/*
 * pack_source returns the device scan of the input, started at the first
 * call where it can read the input, or NULL: the child then runs.  The
 * packet's columns are then read from the scan's batches (pack_batches),
 * for which it sets up what the batches need.
 */
static GhScanSource *
pack_source(PackState *ps)
{
	int			ninput;

	if (ps->scan_refusal != NULL || ps->src_tried)
		return ps->src;
	ps->src_tried = true;
	ps->src = gh_scan_source_begin(ps->child, ps->css.ss.ps.state,
								   GH_TARGET_CPU);
	if (ps->src == NULL)
		return NULL;
	memset(&ps->batch, 0, sizeof(ps->batch));
	ps->brow = 0;
	for (int j = 0; j < ps->nkeys + ps->ncols; j++)
		ps->scol[j] = gh_scan_source_column(ps->src, ps->from[j] - 1);
	if (ps->sel == NULL)
	{
		ninput = list_length(ps->child->plan->targetlist);
		ps->sel = palloc(sizeof(uint32) * PACK_CHUNK_ROWS);
		ps->hsel = palloc(sizeof(uint32) * PACK_CHUNK_ROWS);
		ps->hvals = palloc(sizeof(Datum) * Max(ninput, 1));
		ps->hnulls = palloc(sizeof(bool) * Max(ninput, 1));
		for (int c = 0; c < ps->ncols; c++)
			if (ps->vtype[c] == GHV_TEXT ||
				(ps->vtype[c] == GHV_NUMERIC && ps->kind[c] == GH_AGG_KIND_NUMERIC))
				ps->whole[c] = palloc(sizeof(PackWhole) * PACK_CHUNK_ROWS);
	}
	return ps->src;
}

/*
 * pack_scan_counts puts into the packet what the device scan did since the
 * last packet (pages that come after the last row of the input are not
 * counted: no packet follows them).
 */
static void
pack_scan_counts(PackState *ps, GhAggPacketHeader *hdr)
{
	const GhHeapScanCounts *c;
	GhHeapScanCounts *sent = &ps->scan_sent;

	hdr->scan_pages = hdr->scan_checked = hdr->scan_hidden = 0;
	hdr->scan_rows_host = hdr->scan_us = 0;
	if (ps->src == NULL)
		return;
	c = gh_scan_source_counts(ps->src);
	hdr->scan_pages = (uint32) (c->pages - sent->pages);
	hdr->scan_checked = (uint32) (c->pages_checked - sent->pages_checked);
	hdr->scan_hidden = (uint32) (c->tuples_hidden - sent->tuples_hidden);
	hdr->scan_rows_host = (uint32) (c->rows_host - sent->rows_host);
	hdr->scan_us = (uint32) Min((c->stage_ms + c->device_ms -
								 sent->stage_ms - sent->device_ms) * 1000.0,
								(double) PG_UINT32_MAX);
	*sent = *c;
}

/* pack_explain names the table the device scan reads, or says why not. */
static void
pack_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	PackState  *ps = (PackState *) node;

	if (ps->scan_refusal == NULL)
		ExplainPropertyText("Device Scan", gh_scan_source_table(ps->child), es);
	else if (es->verbose)
		ExplainPropertyText("Device Scan",
							psprintf("off (%s)", ps->scan_refusal), es);
	if (es->analyze && ps->shared != NULL)
	{
		if (es->format == EXPLAIN_FORMAT_TEXT)
		{
			appendStringInfoSpaces(es->str, es->indent * 2);
			appendStringInfo(es->str, "Shared Dictionary: values=" UINT64_FORMAT "%s\n",
							 ps->shared_numbered, ps->shared_full ? " full" : "");
		}
		else
		{
			ExplainPropertyUInteger("Shared Dictionary Values", NULL, ps->shared_numbered, es);
			ExplainPropertyBool("Shared Dictionary Full", ps->shared_full, es);
		}
	}
}

/*
 * pack_numeric puts the NUMERIC v, row n of column c, into the packet being
 * filled: as fixed point, or whole in the list of exceptions (its valid
 * flag then 0, as for a NULL).  Returns whether it was fixed point.
 */
static bool
pack_numeric(PackState *ps, int c, uint32 n, Datum v)
{
	int64		m;
	int			ds;
	MemoryContext old = CurrentMemoryContext;
	bool		fixed;

	/* decoding allocates only for a compressed or out-of-line value */
	if (VARATT_IS_EXTERNAL(DatumGetPointer(v)) || VARATT_IS_COMPRESSED(DatumGetPointer(v)))
		MemoryContextSwitchTo(ps->detoast_cxt);
	fixed = gh_agg_num_decode(v, &m, &ds) == GH_NUMV_FINITE;

	if (fixed)
	{
		((int64 *) ps->vals[c])[n] = m;
		ps->ds[c][n] = (uint8) ds;
	}
	else
	{
		((int64 *) ps->vals[c])[n] = 0;
		ps->ds[c][n] = 0;
		pack_whole(ps, c, n, v);
	}
	MemoryContextSwitchTo(old);
	return fixed;
}

/*
 * pack_whole appends value v, row n of column c, whole (detoasted, with a
 * 4-byte header) to the packet's list of exceptions: a NUMERIC that is not
 * fixed point, or a text value whose extremes the leader keeps.
 */
static void
pack_whole(PackState *ps, int c, uint32 n, Datum v)
{
	MemoryContext old = MemoryContextSwitchTo(ps->detoast_cxt);
	struct varlena *whole = PG_DETOAST_DATUM(v);
	uint32		len = VARSIZE(whole);
	uint16		col = (uint16) c;

	appendBinaryStringInfo(&ps->exc, (char *) &n, 4);
	appendBinaryStringInfo(&ps->exc, (char *) &col, 2);
	appendBinaryStringInfo(&ps->exc, (char *) &len, 4);
	appendBinaryStringInfo(&ps->exc, (char *) whole, len);
	ps->nexc++;
	MemoryContextSwitchTo(old);
}

/* d_entry_equals says whether entry e of key k's dictionary has these bytes. */
static inline bool
d_entry_equals(PackState *ps, int k, uint32 e, const char *data, Size len)
{
	const char *stored = ps->dict[k].ent.data + ps->dict[k].off[e];

	if (ps->ktyplen[k] == -1 && !ps->kbyval[k])
		return VARSIZE(stored) - VARHDRSZ == len &&
			memcmp(stored + VARHDRSZ, data, len) == 0;
	return memcmp(stored, data, len) == 0;
}

/*
 * d_entry_word is the packet word of entry e of dictionary d: the entry,
 * or the global number it introduces.
 */
static inline uint32
d_entry_word(PackDict *d, uint32 e)
{
	return d->tag[e] == GH_PACKET_LOCAL ? e : (GH_PACKET_GLOBAL | d->tag[e]);
}

/* c_entry_equals says whether entry e of cache c has these bytes. */
static inline bool
c_entry_equals(PackCache *c, uint32 e, const char *data, Size len)
{
	return c->len[e] == len && memcmp(c->bytes.data + c->off[e], data, len) == 0;
}

/*
 * pack_cache_find returns the entry of cache c with these bytes, of hash h,
 * or -1.
 */
static int32
pack_cache_find(PackCache *c, uint32 h, const char *data, Size len)
{
	uint32		mask = c->nslots - 1;
	uint32		e;

	if (c->nslots == 0)
		return -1;
	for (uint32 slot = h & mask; (e = c->slots[slot]) != 0; slot = (slot + 1) & mask)
		if (c->hash[e - 1] == h && c_entry_equals(c, e - 1, data, len))
			return (int32) (e - 1);
	return -1;
}

/* pack_grow makes p (NULL: none yet) an array of ncap uint32s. */
static uint32 *
pack_grow(uint32 *p, uint32 ncap)
{
	Size		bytes = sizeof(uint32) * (Size) ncap;

	return p ? repalloc_huge(p, bytes) : palloc_extended(bytes, MCXT_ALLOC_HUGE);
}

/*
 * pack_cache_add remembers that these bytes, of hash h, have global number
 * num and have been introduced, unless the cache is at its share of the
 * budget.
 */
static void
pack_cache_add(PackState *ps, PackCache *c, uint32 h, const char *data,
			   Size len, uint32 num)
{
	Size		cost = len + 6 * sizeof(uint32);
	uint32		slot;

	if (ps->cache_bytes + cost > ps->cache_limit || len > PG_INT32_MAX / 2)
		return;
	if (c->n == c->cap)
	{
		uint32		ncap = c->cap == 0 ? 256 : c->cap * 2;

		c->hash = pack_grow(c->hash, ncap);
		c->off = pack_grow(c->off, ncap);
		c->len = pack_grow(c->len, ncap);
		c->num = pack_grow(c->num, ncap);
		ps->cache_bytes += (Size) (ncap - c->cap) * 4 * sizeof(uint32);
		c->cap = ncap;
	}
	if ((c->n + 1) * 2 > c->nslots)
	{
		uint32		nslots = Max(c->nslots * 2, 512);

		if (c->slots)
			pfree(c->slots);
		c->slots = palloc_extended(sizeof(uint32) * nslots, MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
		for (uint32 i = 0; i < c->n; i++)
		{
			for (slot = c->hash[i] & (nslots - 1); c->slots[slot] != 0;
				 slot = (slot + 1) & (nslots - 1))
				;
			c->slots[slot] = i + 1;
		}
		ps->cache_bytes += (Size) (nslots - c->nslots) * sizeof(uint32);
		c->nslots = nslots;
	}
	for (slot = h & (c->nslots - 1); c->slots[slot] != 0; slot = (slot + 1) & (c->nslots - 1))
		;
	c->hash[c->n] = h;
	c->off[c->n] = (uint32) c->bytes.len;
	c->len[c->n] = (uint32) len;
	c->num[c->n] = num;
	appendBinaryStringInfo(&c->bytes, data, (int) len);
	ps->cache_bytes += len;
	c->slots[slot] = c->n + 1;
	c->last = (int32) c->n++;
}

/* pack_sent says whether this participant introduced global number num. */
static inline bool
pack_sent(PackCache *c, uint32 num)
{
	return (num >> 6) < c->sent_words &&
		(c->sent[num >> 6] & ((uint64) 1 << (num & 63))) != 0;
}

/* pack_set_sent notes that this participant introduces global number num. */
static void
pack_set_sent(PackState *ps, PackCache *c, uint32 num)
{
	if ((num >> 6) >= c->sent_words)
	{
		uint32		nwords = Max(c->sent_words * 2, (num >> 6) + 1);

		nwords = Max(nwords, 64);
		if (c->sent == NULL)
			c->sent = palloc_extended(sizeof(uint64) * nwords, MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
		else
		{
			c->sent = repalloc_huge(c->sent, sizeof(uint64) * nwords);
			memset(c->sent + c->sent_words, 0,
				   sizeof(uint64) * (nwords - c->sent_words));
		}
		ps->cache_bytes += sizeof(uint64) * (nwords - c->sent_words);
		c->sent_words = nwords;
	}
	c->sent[num >> 6] |= (uint64) 1 << (num & 63);
}

/*
 * pack_cache_reset forgets what the participant introduced: a rescan's
 * packets go to a new run, and its shared dictionary starts empty.
 */
static void
pack_cache_reset(PackState *ps)
{
	for (int k = 0; k < ps->nkeys; k++)
	{
		PackCache  *c = &ps->cache[k];

		if (!ps->kdict[k])
			continue;
		if (c->nslots > 0)
			memset(c->slots, 0, sizeof(uint32) * c->nslots);
		if (c->sent_words > 0)
			memset(c->sent, 0, sizeof(uint64) * c->sent_words);
		c->n = 0;
		c->last = -1;
		resetStringInfo(&c->bytes);
	}
}

/*
 * pack_dict_entry returns the packet word of numbered key k's value v (not
 * NULL).  Where the participants share a dictionary, a value this
 * participant introduced is its global number (GH_PACKET_GLOBAL); else it
 * is an entry of the packet's dictionary, added if it is not there, and
 * tagged with the value's global number where the shared dictionary gives
 * it one (the entry then introduces it, and the word is the number).
 * Values are compared by bytes (the leader numbers values by the type's
 * own equality, so equal values of other bytes only cost an entry).
 */
static uint32
pack_dict_entry(PackState *ps, int k, Datum v)
{
	PackDict   *d = &ps->dict[k];
	PackCache  *c = &ps->cache[k];
	const char *data;
	Size		len;
	uint32		h;
	uint32		mask = d->nslots - 1;
	uint32		slot;
	uint32		e;
	uint32		tag = GH_PACKET_LOCAL;

	if (ps->kbyval[k])
	{
		data = (const char *) &v;
		len = sizeof(Datum);
	}
	else if (ps->ktyplen[k] > 0)
	{
		data = DatumGetPointer(v);
		len = ps->ktyplen[k];
	}
	else
	{
		MemoryContext old = MemoryContextSwitchTo(ps->detoast_cxt);
		struct varlena *p = PG_DETOAST_DATUM_PACKED(v);

		MemoryContextSwitchTo(old);
		data = VARDATA_ANY(p);
		len = VARSIZE_ANY_EXHDR(p);
	}
	/* rows in scan order often repeat the value before: no hash then */
	if (ps->sref != NULL && c->last >= 0 && c_entry_equals(c, (uint32) c->last, data, len))
		return GH_PACKET_GLOBAL | c->num[c->last];
	if (d->last >= 0 && d_entry_equals(ps, k, (uint32) d->last, data, len))
		return d_entry_word(d, (uint32) d->last);
	h = hash_bytes((const unsigned char *) data, (int) len);
	if (ps->sref != NULL)
	{
		int32		ce = pack_cache_find(c, h, data, len);

		if (ce >= 0)
		{
			c->last = ce;
			return GH_PACKET_GLOBAL | c->num[ce];
		}
	}
	for (slot = h & mask; (e = d->slots[slot]) != 0; slot = (slot + 1) & mask)
	{
		if (d->hash[e - 1] == h && d_entry_equals(ps, k, e - 1, data, len))
		{
			d->last = e - 1;
			return d_entry_word(d, e - 1);
		}
	}
	if (ps->sref != NULL && len <= PG_INT32_MAX / 2)
	{
		int64		num = gh_shared_dict_number(ps->sref, k, data, (uint32) len, h);

		if (num >= 0)
		{
			tag = (uint32) num;
			pack_cache_add(ps, c, h, data, len, tag);
			/* introduced in an earlier packet: the number alone */
			if (pack_sent(c, tag))
				return GH_PACKET_GLOBAL | tag;
			pack_set_sent(ps, c, tag);
		}
	}
	e = d->n++;
	d->hash[e] = h;
	d->off[e] = (uint32) d->ent.len;
	d->tag[e] = tag;
	if (ps->ktyplen[k] == -1 && !ps->kbyval[k])
	{
		uint64		hdr = 0;	/* as large as SET_VARSIZE's union */

		SET_VARSIZE(&hdr, len + VARHDRSZ);
		appendBinaryStringInfo(&d->ent, (const char *) &hdr, VARHDRSZ);
	}
	appendBinaryStringInfo(&d->ent, data, (int) len);
	while (d->ent.len % MAXIMUM_ALIGNOF != 0)
		appendStringInfoCharMacro(&d->ent, '\0');
	d->slots[slot] = e + 1;
	/* the entry and its tag, less the tags' padding counted at the end */
	ps->dict_bytes += d->ent.len - d->off[e] + 4;
	d->last = (int32) e;
	return d_entry_word(d, e);
}

/* pack_array appends n entries of width w from src at *p. */
static inline void
pack_array(char **p, const void *src, uint32 n, int w)
{
	memcpy(*p, src, (size_t) n * w);
	*p += (size_t) n * w;
}

/*
 * pack_fits32 says whether column c's n values, 8-byte integers (int8,
 * timestamp, NUMERIC's scaled m; 0 where not valid), all fit an int32.
 */
static bool
pack_fits32(PackState *ps, int c, uint32 n)
{
	const int64 *v = (const int64 *) ps->vals[c];
	int64		lo = 0;
	int64		hi = 0;

	if (ps->cwidth[c] != 8 || !gh_agg_vtype_narrows(ps->vtype[c]))
		return false;
	for (uint32 i = 0; i < n; i++)
	{
		lo = Min(lo, v[i]);
		hi = Max(hi, v[i]);
	}
	return lo >= PG_INT32_MIN && hi <= PG_INT32_MAX;
}

/*
 * pack_one_ds says whether NUMERIC column c's valid rows, at least one, all
 * have one display scale, and sets *ds to it.
 */
static bool
pack_one_ds(PackState *ps, int c, uint32 n, uint8 *ds)
{
	const uint8 *valid = ps->valid[c];
	const uint8 *d = ps->ds[c];
	int			first = -1;
	bool		same = true;

	for (uint32 i = 0; i < n; i++)
	{
		if (!valid[i])
			continue;
		if (first < 0)
			first = d[i];
		same &= d[i] == first;
	}
	*ds = (uint8) Max(first, 0);
	return first >= 0 && same;
}

/* pack_narrow appends n int64 values that fit 32 bits as int32s at *p. */
static inline void
pack_narrow(char **p, const void *src, uint32 n)
{
	const int64 *s = (const int64 *) src;
	int32	   *d = (int32 *) *p;

	for (uint32 i = 0; i < n; i++)
		d[i] = (int32) s[i];
	*p += (size_t) n * 4;
}

/*
 * pack_row writes one input row, whose columns are values and isnull (the
 * child's output), as row n of the packet being filled, adding to *anynull
 * the NULL keys and to *nullcols the columns it leaves not valid.
 */
static void
pack_row(PackState *ps, uint32 n, const Datum *values, const bool *isnull,
		 uint8 *anynull, uint32 *nullcols)
{
	uint8		mask = 0;

	for (int k = 0; k < ps->nkeys; k++)
	{
		int			a = ps->from[k] - 1;
		bool		knull = isnull[a];
		Datum		v = knull ? (Datum) 0 : values[a];

		mask |= (uint8) (knull << k);
		if (ps->kdict[k])
			((uint32 *) ps->keys[k])[n] = knull ? 0 : pack_dict_entry(ps, k, v);
		else if (ps->kwidth[k] == 4)
			((int32 *) ps->keys[k])[n] = (int32) v;
		else
			((uint64 *) ps->keys[k])[n] = (uint64) v;
	}
	ps->nullmask[n] = mask;
	*anynull |= mask;
	for (int c = 0; c < ps->ncols; c++)
	{
		int			a = ps->from[ps->nkeys + c] - 1;
		Datum		v = values[a];

		if (isnull[a])
		{
			ps->valid[c][n] = 0;
			*nullcols |= (uint32) 1 << c;
			if (ps->cwidth[c] == 4)
				((int32 *) ps->vals[c])[n] = 0;
			else if (ps->cwidth[c] == 8)
				((int64 *) ps->vals[c])[n] = 0;
			continue;
		}
		ps->valid[c][n] = 1;
		switch (ps->vtype[c])
		{
			case GHV_INT2:
				if (ps->cwidth[c])
					((int32 *) ps->vals[c])[n] = DatumGetInt16(v);
				break;
			case GHV_INT4:
				if (ps->cwidth[c])
					((int32 *) ps->vals[c])[n] = DatumGetInt32(v);
				break;
			case GHV_INT8:
			case GHV_TIMESTAMP:
				if (ps->cwidth[c])
					((int64 *) ps->vals[c])[n] = DatumGetInt64(v);
				break;
			case GHV_DATE:
				if (ps->cwidth[c])
					((int32 *) ps->vals[c])[n] = DatumGetDateADT(v);
				break;
			case GHV_FLOAT4:
				if (ps->cwidth[c])
					((double *) ps->vals[c])[n] = (double) DatumGetFloat4(v);
				break;
			case GHV_FLOAT8:
				if (ps->cwidth[c])
					((double *) ps->vals[c])[n] = DatumGetFloat8(v);
				break;
			case GHV_NUMERIC:
				if (ps->kind[c] == GH_AGG_KIND_NUMERIC && !pack_numeric(ps, c, n, v))
				{
					ps->valid[c][n] = 0;
					*nullcols |= (uint32) 1 << c;
				}
				break;
			case GHV_TEXT:
				/* counted on the device (valid 1), the value for the leader */
				pack_whole(ps, c, n, v);
				break;
			default:
				break;
		}
	}
}

/*
 * batch_datum is the Datum of word w of a batch column whose type is by
 * value or not (then w is the value's place in the staged pages).
 */
static inline Datum
batch_datum(const GhHeapScanBatch *b, bool byval, uint64 w)
{
	return byval ? (Datum) w : PointerGetDatum(b->pages + (uint32) w);
}

/*
 * pack_key_columns writes the keys of the m GH_HS_ROW rows ps->sel[] of
 * the batch as rows n0 on of the packet, one key at a time; returns the
 * keys found NULL, as the NULL mask's bits.
 */
static uint8
pack_key_columns(PackState *ps, uint32 n0, uint32 m)
{
	const GhHeapScanBatch *b = &ps->batch;
	const uint32 *sel = ps->sel;
	uint8	   *mask = ps->nullmask + n0;
	uint8		any = 0;

	memset(mask, 0, m);
	for (int k = 0; k < ps->nkeys; k++)
	{
		const uint64 *w = b->words[ps->scol[k]];
		const uint8 *valid = b->valid[ps->scol[k]];

		for (uint32 i = 0; i < m; i++)
			mask[i] |= (uint8) ((valid[sel[i]] == 0) << k);
		if (ps->kdict[k])
		{
			uint32	   *out = (uint32 *) ps->keys[k] + n0;
			bool		byval = ps->kbyval[k];

			for (uint32 i = 0; i < m; i++)
				out[i] = valid[sel[i]] == 0 ? 0 :
					pack_dict_entry(ps, k, batch_datum(b, byval, w[sel[i]]));
		}
		else if (ps->kwidth[k] == 4)
		{
			int32	   *out = (int32 *) ps->keys[k] + n0;

			for (uint32 i = 0; i < m; i++)
				out[i] = valid[sel[i]] ? (int32) w[sel[i]] : 0;
		}
		else
		{
			uint64	   *out = (uint64 *) ps->keys[k] + n0;

			for (uint32 i = 0; i < m; i++)
				out[i] = valid[sel[i]] ? w[sel[i]] : 0;
		}
	}
	for (uint32 i = 0; i < m; i++)
		any |= mask[i];
	return any;
}

/*
 * pack_arg_columns writes the input columns of the m GH_HS_ROW rows
 * ps->sel[] of the batch as rows n0 on of the packet, one column at a time,
 * converted as pack_row converts them; the values to be listed whole go to
 * ps->whole[c], in row order, for pack_flush_whole.  Returns the columns
 * left not valid somewhere, as nullcols' bits.
 */
static uint32
pack_arg_columns(PackState *ps, uint32 n0, uint32 m)
{
	const GhHeapScanBatch *b = &ps->batch;
	const uint32 *sel = ps->sel;
	uint32		nullcols = 0;

	for (int c = 0; c < ps->ncols; c++)
	{
		const uint64 *w = b->words[ps->scol[ps->nkeys + c]];
		const uint8 *bvalid = b->valid[ps->scol[ps->nkeys + c]];
		uint8	   *valid = ps->valid[c] + n0;
		uint8		all = 1;

		for (uint32 i = 0; i < m; i++)
		{
			valid[i] = bvalid[sel[i]] != 0;
			all &= valid[i];
		}
		if (!all)
			nullcols |= (uint32) 1 << c;
		ps->nwhole[c] = 0;
		switch (ps->vtype[c])
		{
			case GHV_INT2:
				if (ps->cwidth[c])
				{
					int32	   *out = (int32 *) ps->vals[c] + n0;

					for (uint32 i = 0; i < m; i++)
						out[i] = valid[i] ? (int32) DatumGetInt16((Datum) w[sel[i]]) : 0;
				}
				break;
			case GHV_INT4:
			case GHV_DATE:
				if (ps->cwidth[c])
				{
					int32	   *out = (int32 *) ps->vals[c] + n0;

					for (uint32 i = 0; i < m; i++)
						out[i] = valid[i] ? DatumGetInt32((Datum) w[sel[i]]) : 0;
				}
				break;
			case GHV_INT8:
			case GHV_TIMESTAMP:
				if (ps->cwidth[c])
				{
					int64	   *out = (int64 *) ps->vals[c] + n0;

					for (uint32 i = 0; i < m; i++)
						out[i] = valid[i] ? DatumGetInt64((Datum) w[sel[i]]) : 0;
				}
				break;
			case GHV_FLOAT4:
				if (ps->cwidth[c])
				{
					double	   *out = (double *) ps->vals[c] + n0;

					for (uint32 i = 0; i < m; i++)
						out[i] = valid[i] ? (double) DatumGetFloat4((Datum) w[sel[i]]) : 0;
				}
				break;
			case GHV_FLOAT8:
				if (ps->cwidth[c])
				{
					double	   *out = (double *) ps->vals[c] + n0;

					for (uint32 i = 0; i < m; i++)
						out[i] = valid[i] ? DatumGetFloat8((Datum) w[sel[i]]) : 0;
				}
				break;
			case GHV_NUMERIC:
				if (ps->kind[c] == GH_AGG_KIND_NUMERIC)
				{
					int64	   *out = (int64 *) ps->vals[c] + n0;
					uint8	   *ds = ps->ds[c] + n0;

					/* in place: never compressed nor out of line in a ROW */
					for (uint32 i = 0; i < m; i++)
					{
						Datum		v;
						int64		mv;
						int			dsv;

						out[i] = 0;
						ds[i] = 0;
						if (!valid[i])
							continue;
						v = batch_datum(b, false, w[sel[i]]);
						if (gh_agg_num_decode(v, &mv, &dsv) == GH_NUMV_FINITE)
						{
							out[i] = mv;
							ds[i] = (uint8) dsv;
							continue;
						}
						valid[i] = 0;
						nullcols |= (uint32) 1 << c;
						ps->whole[c][ps->nwhole[c]].row = n0 + i;
						ps->whole[c][ps->nwhole[c]++].value = v;
					}
				}
				else if (ps->cwidth[c])
					memset((char *) ps->vals[c] + (size_t) n0 * ps->cwidth[c], 0,
						   (size_t) m * ps->cwidth[c]);
				break;
			case GHV_TEXT:
				/* counted on the device (valid 1), the value for the leader */
				for (uint32 i = 0; i < m; i++)
				{
					if (!valid[i])
						continue;
					ps->whole[c][ps->nwhole[c]].row = n0 + i;
					ps->whole[c][ps->nwhole[c]++].value =
						batch_datum(b, false, w[sel[i]]);
				}
				break;
			default:
				if (ps->cwidth[c])
					memset((char *) ps->vals[c] + (size_t) n0 * ps->cwidth[c], 0,
						   (size_t) m * ps->cwidth[c]);
				break;
		}
	}
	return nullcols;
}

/*
 * pack_flush_whole lists the values pack_arg_columns set aside in the
 * packet's list of exceptions, in the order of their rows as the leader
 * reads them (read_exceptions): a merge of the columns' lists.
 */
static void
pack_flush_whole(PackState *ps)
{
	uint32		at[GH_AGG_MAX_COLS] = {0};

	for (;;)
	{
		int			best = -1;

		for (int c = 0; c < ps->ncols; c++)
		{
			if (at[c] >= ps->nwhole[c])
				continue;
			if (best < 0 || ps->whole[c][at[c]].row < ps->whole[best][at[best]].row)
				best = c;
		}
		if (best < 0)
			break;
		pack_whole(ps, best, ps->whole[best][at[best]].row,
				   ps->whole[best][at[best]].value);
		at[best]++;
	}
	memset(ps->nwhole, 0, sizeof(ps->nwhole));
}

/*
 * pack_batches fills the packet from the device scan's batches, returning
 * its rows: a chunk of the batch's row slots at a time, its GH_HS_ROW rows
 * key by key and column by column straight from the batch's arrays, then
 * its GH_HS_HOST rows one by one through the tuple path (pack_row, so they
 * come out exactly as from the child).  The rows are counted once but not
 * kept in the scan's order.  A batch that the packet cannot take whole is
 * continued on the next call.
 */
static uint32
pack_batches(PackState *ps, uint8 *anynull, uint32 *nullcols)
{
	uint32		n = 0;

	while (!ps->done && n < ps->cap &&
		   ps->exc.len + ps->dict_bytes < ps->exc_limit)
	{
		const uint8 *status = ps->batch.status;
		uint32		room = Min(ps->cap - n, (uint32) PACK_CHUNK_ROWS);
		uint32		m = 0;
		uint32		h = 0;
		uint32		r;

		if (ps->brow >= ps->batch.nrows)
		{
			if (!gh_scan_source_next_batch(ps->src, &ps->batch))
				ps->done = true;
			ps->brow = 0;
			continue;
		}
		CHECK_FOR_INTERRUPTS();
		for (r = ps->brow; r < ps->batch.nrows && m + h < room; r++)
		{
			ps->sel[m] = r;
			m += status[r] == GH_HS_ROW;
			if (unlikely(status[r] == GH_HS_HOST))
				ps->hsel[h++] = r;
		}
		ps->brow = r;
		*anynull |= pack_key_columns(ps, n, m);
		*nullcols |= pack_arg_columns(ps, n, m);
		pack_flush_whole(ps);
		n += m;
		for (uint32 i = 0; i < h; i++)
		{
			gh_scan_source_host_row(ps->src, ps->hsel[i], ps->hvals, ps->hnulls);
			pack_row(ps, n++, ps->hvals, ps->hnulls, anynull, nullcols);
		}
	}
	return n;
}

/*
 * pack_exec returns the next packet: up to cap rows of the child, as one
 * bytea in the form gh_agg_run_add_packet reads.
 */
static TupleTableSlot *
pack_exec(CustomScanState *node)
{
	PackState  *ps = (PackState *) node;
	TupleTableSlot *out = node->ss.ss_ScanTupleSlot;
	GhAggPacketHeader *hdr = (GhAggPacketHeader *) ps->packet;
	uint32		n = 0;
	uint8		anynull = 0;
	uint32		nullcols = 0;
	uint32		narrowcols = 0;
	uint32		onedscols = 0;
	uint8		onedsval[GH_AGG_MAX_COLS];
	uint32		pad = 0;
	instr_time	t0;
	char	   *p;

	StaticAssertStmt(MAXIMUM_ALIGNOF == 8, "a dictionary's tags are padded to 8 bytes");

	INSTR_TIME_SET_CURRENT(t0);
	ExecClearTuple(out);
	resetStringInfo(&ps->exc);
	ps->nexc = 0;
	MemoryContextReset(ps->detoast_cxt);
	ps->dict_bytes = 0;
	for (int k = 0; k < ps->nkeys; k++)
	{
		PackDict   *d = &ps->dict[k];

		if (!ps->kdict[k])
			continue;
		if (d->n > 0)
			memset(d->slots, 0, sizeof(uint32) * d->nslots);
		d->n = 0;
		d->last = -1;
		resetStringInfo(&d->ent);
		ps->dict_bytes += 8;
	}
	if (pack_source(ps) != NULL)
		n = pack_batches(ps, &anynull, &nullcols);
	else
	{
		while (!ps->done && n < ps->cap &&
			   ps->exc.len + ps->dict_bytes < ps->exc_limit)
		{
			TupleTableSlot *slot = ExecProcNode(ps->child);

			if (TupIsNull(slot))
			{
				ps->done = true;
				break;
			}
			slot_getallattrs(slot);
			pack_row(ps, n++, slot->tts_values, slot->tts_isnull, &anynull,
					 &nullcols);
		}
	}
	if (n == 0)
		return out;

	/* the dictionaries exactly: each key's tags padded to MAXALIGN */
	ps->dict_bytes = 0;
	for (int k = 0; k < ps->nkeys; k++)
		if (ps->kdict[k])
			ps->dict_bytes += 8 + ps->dict[k].ent.len +
				MAXALIGN((Size) ps->dict[k].n * 4);

	/*
	 * The packet: header, the 8-byte arrays, the 4-byte ones, then the byte
	 * arrays that NULLs and NUMERICs need, so that every array stays aligned
	 * to its element within the (4-aligned) bytea; the exceptions last.
	 */
	if (ps->packet_cap < sizeof(GhAggPacketHeader) +
		(Size) n * packet_row_bytes(ps->nkeys, ps->ncols) + ps->exc.len + ps->dict_bytes)
	{
		ps->packet_cap = sizeof(GhAggPacketHeader) +
			(Size) ps->cap * packet_row_bytes(ps->nkeys, ps->ncols) + ps->exc.len +
			ps->dict_bytes;
		ps->packet = repalloc(ps->packet, ps->packet_cap);
		hdr = (GhAggPacketHeader *) ps->packet;
	}
	for (int c = 0; c < ps->ncols; c++)
	{
		if (pack_fits32(ps, c, n))
			narrowcols |= (uint32) 1 << c;
		if (ps->kind[c] == GH_AGG_KIND_NUMERIC && pack_one_ds(ps, c, n, &onedsval[c]))
			onedscols |= (uint32) 1 << c;
	}
	p = (char *) (hdr + 1);
	for (int w = 8; w >= 4; w -= 4)
	{
		for (int k = 0; k < ps->nkeys; k++)
			if (ps->kwidth[k] == w)
				pack_array(&p, ps->keys[k], n, w);
		for (int c = 0; c < ps->ncols; c++)
		{
			bool		narrow = (narrowcols >> c) & 1;

			if ((narrow ? 4 : ps->cwidth[c]) != w)
				continue;
			if (narrow)
				pack_narrow(&p, ps->vals[c], n);
			else
				pack_array(&p, ps->vals[c], n, w);
		}
	}
	if (anynull)
		pack_array(&p, ps->nullmask, n, 1);
	for (int c = 0; c < ps->ncols; c++)
		if (nullcols & ((uint32) 1 << c))
			pack_array(&p, ps->valid[c], n, 1);
	for (int c = 0; c < ps->ncols; c++)
	{
		if (ps->kind[c] != GH_AGG_KIND_NUMERIC)
			continue;
		if ((onedscols >> c) & 1)
			pack_array(&p, &onedsval[c], 1, 1);
		else
			pack_array(&p, ps->ds[c], n, 1);
	}
	pack_array(&p, ps->exc.data, ps->exc.len, 1);
	for (int k = 0; k < ps->nkeys; k++)
	{
		PackDict   *d = &ps->dict[k];
		uint32		bytes = (uint32) d->ent.len;

		if (!ps->kdict[k])
			continue;
		pack_array(&p, &d->n, 1, 4);
		pack_array(&p, &bytes, 1, 4);
		pack_array(&p, d->ent.data, bytes, 1);
		pack_array(&p, d->tag, d->n, 4);
		if (d->n % 2 != 0)
			pack_array(&p, &pad, 1, 4);
	}
	hdr->dict_bytes = (uint32) ps->dict_bytes;
	hdr->nexc = ps->nexc;
	hdr->exc_bytes = (uint32) ps->exc.len;
	hdr->n = n;
	hdr->nkeys = (uint16) ps->nkeys;
	hdr->ncols = (uint16) ps->ncols;
	hdr->flags = anynull ? GH_PACKET_KEY_NULLS : 0;
	hdr->nullcols = nullcols;
	hdr->narrowcols = narrowcols;
	hdr->onedscols = onedscols;
	hdr->busy_us = (uint32) Min(gh_ms_since(t0) * 1000.0, (double) PG_UINT32_MAX);
	pack_scan_counts(ps, hdr);
	SET_VARSIZE(ps->packet, p - (char *) ps->packet);
	out->tts_values[0] = PointerGetDatum(ps->packet);
	out->tts_isnull[0] = false;
	return ExecStoreVirtualTuple(out);
}

static void
pack_end(CustomScanState *node)
{
	PackState  *ps = (PackState *) node;

	if (ps->src != NULL)
		gh_scan_source_end(ps->src);
	if (ps->sref != NULL)
		gh_shared_dict_detach(ps->sref);
	ps->sref = NULL;
	ExecEndNode(ps->child);
}

/*
 * pack_estimate_dsm is the DSM the node takes: its shared dictionary,
 * where some key is numbered.
 */
static Size
pack_estimate_dsm(CustomScanState *node, ParallelContext *pcxt)
{
	PackState  *ps = (PackState *) node;

	return ps->anydict ? gh_shared_dict_size() : 0;
}

/*
 * pack_init_dsm, in the leader before the workers start, creates the
 * shared dictionary in the parallel query's DSA, with a quarter of the
 * aggregate's memory budget (work_mem * hash_mem_multiplier for each
 * participant, as the run's: gh_agg_spill_share), and attaches the leader
 * to it.  Without a DSA
 * (no DSM segment could be made) the packets carry their own dictionaries.
 */
static void
pack_init_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	PackState  *ps = (PackState *) node;
	dsa_area   *area = node->ss.ps.state->es_query_dsa;

	if (!ps->anydict || area == NULL)
		return;
	ps->shared = (GhSharedDict *) coordinate;
	pack_cache_reset(ps);
	/* a quarter of the run's budget, which is every participant's */
	gh_shared_dict_create(ps->shared, area,
						  get_hash_memory_limit() / 4 * (Size) (pcxt->nworkers + 1));
	ps->sref = gh_shared_dict_attach(ps->shared, area);
}

/*
 * pack_reinit_dsm, for a rescan, empties the shared dictionary, and what
 * the leader remembers of it: the packets go to a new run.
 */
static void
pack_reinit_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	PackState  *ps = (PackState *) node;

	if (ps->sref == NULL)
		return;
	gh_shared_dict_reset(ps->shared, ps->sref);
	pack_cache_reset(ps);
}

/* pack_init_worker attaches a parallel worker to the shared dictionary. */
static void
pack_init_worker(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	PackState  *ps = (PackState *) node;
	dsa_area   *area = node->ss.ps.state->es_query_dsa;

	if (!ps->anydict || area == NULL)
		return;
	ps->shared = (GhSharedDict *) coordinate;
	ps->sref = gh_shared_dict_attach(ps->shared, area);
}

/*
 * pack_shutdown, before the DSM goes, keeps what EXPLAIN shows of the
 * shared dictionary and detaches from it.
 */
static void
pack_shutdown(CustomScanState *node)
{
	PackState  *ps = (PackState *) node;

	if (ps->sref == NULL)
		return;
	gh_shared_dict_counts(ps->sref, &ps->shared_numbered, &ps->shared_full);
	gh_shared_dict_detach(ps->sref);
	ps->sref = NULL;
}

static void
pack_rescan(CustomScanState *node)
{
	PackState  *ps = (PackState *) node;

	if (ps->src != NULL)
		gh_scan_source_end(ps->src);
	ps->src = NULL;
	ps->src_tried = false;
	memset(&ps->scan_sent, 0, sizeof(ps->scan_sent));
	ExecReScan(ps->child);
	ps->done = false;
	pack_cache_reset(ps);
}
