/*-------------------------------------------------------------------------
 * join_exec.c
 *	  Execution of GpuHashJoin.
 *
 * BUILD: the first call runs the inner child to completion.  Each inner row
 * with no NULL key becomes a record of Datums (its key values, its column
 * values, a null bitmap; its position is its row index), and its 64-bit row
 * hash is computed with the keys' extended hash functions.  Rows with a NULL
 * key can never match; right and full joins keep them to emit at the end.
 * The hashes go to the device, which builds the static multimap
 * (hashtable.c); the records are then regrouped into the table's hash-group
 * order, their by-reference data into one arena in the same order.
 *
 * PROBE: outer rows are pulled in batches of gpuhash.batch_rows, kept as
 * Datum arrays and hashed; the device returns, per outer row, the range of
 * records holding its candidates.  The batch is visited in the order of the
 * first candidates, so the inner records are read front to back.  Every
 * candidate is verified on the CPU with the join operators' own equality
 * functions (a shared 64-bit hash is only a hint), then the remaining join
 * quals are evaluated, and the pair is filtered by the pushed-down quals and
 * projected from two virtual slots.  Left, full and anti joins emit unmatched
 * outer rows; right and full joins mark matched inner rows and emit the
 * others at the end.
 *
 * Expressions: setrefs made every Var of the targetlist and quals an
 * INDEX_VAR reference into the scan tuple (outer columns, then inner).  At
 * start-up they are rewritten to OUTER_VAR and INNER_VAR references, so a
 * pair is evaluated straight from its two slots, filled from the records.
 *
 * Device memory belongs to the device layer's resource-owner tracking, so an
 * ERROR or cancel at any point frees it; EndCustomScan frees it normally.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/mman.h>

#include "access/parallel.h"
#include "access/sysattr.h"
#include "storage/barrier.h"
#include "storage/condition_variable.h"
#include "storage/spin.h"
#include "utils/dsa.h"
#include "utils/wait_event.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "executor/nodeCustom.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "portability/instr_time.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/ruleutils.h"
#include "commands/explain.h"

#include "gpuhash_join.h"
#include "keys.h"

/*
 * How many visits ahead the probe loop prefetches inner records.  On a 10M x
 * 1M join with the CPU twin, 24 to 96 spent 0.15 s less CPU than 8 (whose
 * prefetches arrived too late) and 4; 32 sits in the flat middle.
 */
#define GHJ_PREFETCH 32

/*
 * What one participant of a parallel GpuHashJoin did, for EXPLAIN ANALYZE.
 * Workers write theirs into dynamic shared memory when their outer side is
 * done (before their last tuple reaches the Gather); the leader copies the
 * array out when the plan shuts down, before the segment goes away.
 */
typedef struct GhjStats
{
	bool		valid;
	uint64		inner_rows;
	uint64		batches;
	uint64		candidates;
	uint64		matches;
	double		build_ms;
	double		context_ms;
	double		device_ms;
	uint64		cpu_batches;
	bool		shared_table;	/* a service table shared by the participants */
} GhjStats;

#define GHJ_SVC_NONE		0
#define GHJ_SVC_BUILDING	1
#define GHJ_SVC_BUILT		2
#define GHJ_SVC_FAILED		3

typedef struct GhjShared
{
	int			nworkers;

	/*
	 * A shared build (GHJ_PRIV_SHARED): the participants attached in phase 0
	 * read their shares of the partial inner path into chunks in the query's
	 * DSA area and wait for one another; from phase 1 on the chunks are
	 * complete and every participant builds its own table from all of them.
	 */
	Barrier		build_barrier;
	slock_t		mutex;
	dsa_pointer chunks;			/* the filled chunks, newest first */

	/*
	 * With the GPU service, the participants of a shared build, whose
	 * hashes are the same array, share one table: the first to get here
	 * builds it (svc_state BUILDING, then BUILT with svc_table), the others
	 * wait on svc_cv and take views of it.  FAILED: each builds its own.
	 */
	int			svc_state;
	uint32		svc_table;
	ConditionVariable svc_cv;

	GhjStats	stats[FLEXIBLE_ARRAY_MEMBER];
} GhjShared;

/*
 * A chunk of the shared inner side: hashes, records, then the records'
 * by-reference data.  In a chunk a by-reference value is its offset in the
 * chunk's data (each process maps the area at its own address); a
 * participant turns offsets into pointers when it copies the records out.
 */
#define GHJ_CHUNK_ROWS 16384
#define GHJ_CHUNK_DATA (1024 * 1024)
typedef struct GhjChunk
{
	dsa_pointer next;
	uint32		nrows;
	Size		data_size;
	Size		data_used;
	uint64		hashes[GHJ_CHUNK_ROWS];
} GhjChunk;
#define GhjChunkRecs(c) ((Datum *) ((char *) (c) + MAXALIGN(sizeof(GhjChunk))))
#define GhjChunkData(c, stride) \
	((char *) GhjChunkRecs(c) + sizeof(Datum) * GHJ_CHUNK_ROWS * (stride))

typedef struct GhjState
{
	CustomScanState css;

	/* what the plan says */
	JoinType	jointype;
	int			nkeys;
	int			nouter;
	bool		single_match;	/* stop at the first match of an outer row */
	PlanState  *outer_ps;
	PlanState  *inner_ps;
	List	   *hashclauses;	/* for EXPLAIN */
	List	   *joinquals_expr;	/* for EXPLAIN */

	GhKeySet	outer_keys;		/* the hash clauses' outer arguments */
	GhKeySet	inner_keys;		/* and their inner ones */
	bool	   *own_mix;		/* both sides hash with gh_key_int_mix */
	bool		outer_keys_plain;	/* every outer key a plain column hashed by
									 * gh_key_int_mix */
	FmgrInfo   *eq;
	uint8	   *eq_fast;		/* GhKeyEqKind: the equality done in line */
	Oid		   *coll;
	bool	   *swapped;
	Bitmapset  *inner_key_params;	/* PARAM_EXEC ids the inner keys use */
	ExprState  *joinqual;
	ExprState  *otherqual;
	ProjectionInfo *proj;

	/*
	 * Direct projection: with no join filter and no other qual, and a
	 * target list of plain columns, the result slot is filled straight from
	 * the outer batch row and the inner record (proj_inner[c], proj_col[c]
	 * for result column c), without loading either side's slot or running
	 * the expression interpreter.  Null-extended rows take the general way.
	 */
	bool		direct_proj;
	int			nproj;
	bool	   *proj_inner;
	int		   *proj_col;

	TupleTableSlot *outer_slot;
	TupleTableSlot *inner_slot;
	TupleTableSlot *null_outer;
	TupleTableSlot *null_inner;
	MemoryContext build_cxt;
	MemoryContext batch_cxt;

	/* build side */
	bool		built;
	GhTarget	target;
	int			ninner_cols;	/* columns of the inner child's rows */
	int16	   *inner_attlen;
	bool	   *inner_attbyval;
	bool		inner_has_byref;	/* a by-reference key or column */
	bool		inner_key_byref;	/* a by-reference key */
	int			nullwords;		/* uint64 words of a record's null bitmap */
	int			stride;			/* Datums per record: keys, columns, nulls */
	uint32		ninner;
	Datum	   *inner_recs;		/* ninner records, in hash-group order */
	bool		shared_build;	/* the plan asks for a shared build */
	Size		byref_bytes;	/* by-reference data the records point to */
	Datum	   *nullkey_recs;	/* right/full joins: rows with a NULL key */
	uint32		n_nullkey;
	uint32	   *matched;		/* bitmap over ninner: right/full joins */
	GhTable    *table;
	MemoryContext build_tmp_cxt;	/* by-reference data before regrouping */

	/* probe side */
	int16	   *outer_attlen;
	bool	   *outer_attbyval;
	bool		outer_has_byref;	/* a stored column is by reference */

	/*
	 * The outer columns the join reads (its target list and quals), which
	 * are all a batch keeps: the outer child may return more than that (a
	 * Seq Scan returning the heap tuple as it is, see join_plan.c).
	 */
	int			nstored;
	int		   *stored_col;		/* outer child column of each stored one */
	int			outer_deform;	/* columns of the child's slot to deform */
	uint32		batch_cap;
	uint32		batch_n;
	Datum	   *batch_vals;		/* batch_cap x nstored column values */
	bool	   *batch_isnull;
	Datum	   *batch_keys;		/* batch_cap x nkeys */
	bool	   *batch_null;
	uint64	   *batch_hashes;	/* pinned for the GPU */
	uint32	   *batch_first;
	uint32	   *batch_count;
	uint32	   *batch_order;	/* the rows to visit, by first candidate */
	uint32	   *visit_first;	/* first and count of each visit, in order */
	uint32	   *visit_count;
	uint32	   *sort_tmp;
	uint32		n_order;
	uint32		cur;			/* position in batch_order */
	uint32		cur_cand;
	bool		cur_loaded;		/* outer_slot holds the row at cur */
	bool		cur_matched;
	bool		outer_done;
	bool		emitting_inner;
	uint32		inner_pos;

	/* for EXPLAIN ANALYZE */
	uint64		n_batches;
	uint64		n_candidates;
	uint64		n_matches;
	uint64		n_builds;
	double		build_ms;
	double		context_ms;		/* waiting for the device to be ready */
	bool		gpu_later;		/* on the CPU twin until the context is made */
	bool		batch_in_table;	/* batch buffers lent by the table (service) */
	uint64		n_cpu_batches;	/* batches probed on the CPU twin meanwhile */
	GhjShared  *shared;			/* parallel: the participants' stats (DSM) */
	GhjShared  *shared_copy;	/* leader: copied out at shutdown */
} GhjState;

static void ghj_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *ghj_exec(CustomScanState *node);
static void ghj_end(CustomScanState *node);
static void ghj_rescan(CustomScanState *node);
static void ghj_explain(CustomScanState *node, List *ancestors,
						ExplainState *es);

static Size ghj_estimate_dsm(CustomScanState *node, ParallelContext *pcxt);
static void ghj_init_dsm(CustomScanState *node, ParallelContext *pcxt,
						 void *coordinate);
static void ghj_reinit_dsm(CustomScanState *node, ParallelContext *pcxt,
						   void *coordinate);
static void ghj_init_worker(CustomScanState *node, shm_toc *toc,
							void *coordinate);
static void ghj_shutdown(CustomScanState *node);

static CustomExecMethods ghj_exec_methods = {
	.CustomName = GPUHASH_JOIN_NAME,
	.BeginCustomScan = ghj_begin,
	.ExecCustomScan = ghj_exec,
	.EndCustomScan = ghj_end,
	.ReScanCustomScan = ghj_rescan,
	.EstimateDSMCustomScan = ghj_estimate_dsm,
	.InitializeDSMCustomScan = ghj_init_dsm,
	.ReInitializeDSMCustomScan = ghj_reinit_dsm,
	.InitializeWorkerCustomScan = ghj_init_worker,
	.ShutdownCustomScan = ghj_shutdown,
	.ExplainCustomScan = ghj_explain,
};

Node *
gpuhash_join_create_state(CustomScan *cscan)
{
	GhjState   *s = (GhjState *) newNode(sizeof(GhjState), T_CustomScanState);

	s->css.methods = &ghj_exec_methods;
	return (Node *) s;
}

/*
 * remap_index_vars rewrites INDEX_VAR references into the scan tuple (outer
 * columns 1..nouter, then inner columns) as OUTER_VAR / INNER_VAR ones.
 */
static Node *
remap_index_vars(Node *node, void *context)
{
	int			nouter = *(int *) context;

	if (node == NULL)
		return NULL;
	if (IsA(node, Var) && ((Var *) node)->varno == INDEX_VAR)
	{
		Var		   *var = (Var *) copyObject(node);

		if (var->varattno <= nouter)
			var->varno = OUTER_VAR;
		else
		{
			var->varno = INNER_VAR;
			var->varattno -= nouter;
		}
		return (Node *) var;
	}
	return expression_tree_mutator(node, remap_index_vars, context);
}

/*
 * ghj_init_direct_proj decides whether the join can project directly (see
 * direct_proj) and maps its result columns: tlist is the target list with
 * OUTER_VAR / INNER_VAR references.
 */
static void
ghj_init_direct_proj(GhjState *s, List *tlist)
{
	ListCell   *lc;
	int			n = list_length(tlist);

	s->direct_proj = (s->joinqual == NULL && s->otherqual == NULL);
	s->nproj = n;
	s->proj_inner = palloc0(sizeof(bool) * Max(n, 1));
	s->proj_col = palloc0(sizeof(int) * Max(n, 1));
	foreach(lc, tlist)
	{
		TargetEntry *te = lfirst_node(TargetEntry, lc);
		Var		   *var = (Var *) te->expr;
		int			c = te->resno - 1;

		if (!s->direct_proj)
			break;
		if (!IsA(var, Var) || var->varattno <= 0 || c < 0 || c >= n ||
			(var->varno != OUTER_VAR && var->varno != INNER_VAR))
		{
			s->direct_proj = false;
			break;
		}
		s->proj_inner[c] = (var->varno == INNER_VAR);
		s->proj_col[c] = var->varattno - 1;
		if (s->proj_col[c] >= (s->proj_inner[c] ? s->ninner_cols : s->nouter))
		{
			s->direct_proj = false;
			break;
		}
		if (!s->proj_inner[c])
		{
			/* an outer column is read from the batch, where it is stored */
			int			j = 0;

			while (j < s->nstored && s->stored_col[j] != s->proj_col[c])
				j++;
			if (j == s->nstored)
				s->direct_proj = false;
			s->proj_col[c] = j;
		}
	}
}

/*
 * ghj_init_stored chooses the outer columns a batch keeps: those that exprs
 * (the target list and quals, with OUTER_VAR references) read.  A reference
 * to a whole row or a system column keeps them all.
 */
static void
ghj_init_stored(GhjState *s, List *exprs)
{
	Bitmapset  *need = NULL;
	bool		all = false;
	int			x = -1;

	pull_varattnos((Node *) exprs, OUTER_VAR, &need);
	s->stored_col = palloc(sizeof(int) * Max(s->nouter, 1));
	s->nstored = 0;
	while ((x = bms_next_member(need, x)) >= 0)
	{
		AttrNumber	att = x + FirstLowInvalidHeapAttributeNumber;

		if (att <= 0 || att > s->nouter)
			all = true;
		else
			s->stored_col[s->nstored++] = att - 1;
	}
	if (all)
	{
		s->nstored = s->nouter;
		for (int c = 0; c < s->nouter; c++)
			s->stored_col[c] = c;
	}
	s->outer_has_byref = false;
	s->outer_deform = 0;
	for (int j = 0; j < s->nstored; j++)
	{
		if (!s->outer_attbyval[s->stored_col[j]])
			s->outer_has_byref = true;
		s->outer_deform = Max(s->outer_deform, s->stored_col[j] + 1);
	}
	for (int k = 0; k < s->nkeys; k++)
		s->outer_deform = Max(s->outer_deform, s->outer_keys.att[k]);
	/* only ghj_load_outer fills outer_slot, and only the stored columns */
	memset(s->outer_slot->tts_isnull, true, sizeof(bool) * s->nouter);
}

/* collect_exec_params adds the ids of the PARAM_EXEC Params in node. */
static bool
collect_exec_params(Node *node, Bitmapset **ids)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXEC)
		*ids = bms_add_member(*ids, ((Param *) node)->paramid);
	return expression_tree_walker(node, collect_exec_params, ids);
}

/* collect_subplans lists the SubPlan nodes of an expression tree. */
static bool
collect_subplans(Node *node, List **subplans)
{
	if (node == NULL)
		return false;
	if (IsA(node, SubPlan))
		*subplans = lappend(*subplans, node);
	return expression_tree_walker(node, collect_subplans, subplans);
}

/*
 * ghj_explainable_subplans points each SubPlanState made from the remapped
 * expressions back at the plan's own SubPlan node.  EXPLAIN VERBOSE shows a
 * correlated subplan's parameters by deparsing the SubPlan's arguments in
 * this node's context, which knows the scan tuple (INDEX_VAR, through
 * custom_scan_tlist) but no OUTER_VAR or INNER_VAR child: the remapped
 * arguments gave "bogus varno".  Both nodes have the same plan, parameters
 * and test expression; the executor runs the SubPlanState's own compiled
 * arguments, so only EXPLAIN reads the node it points at.
 */
static void
ghj_explainable_subplans(CustomScanState *node, CustomScan *cscan)
{
	List	   *plan_subplans = NIL;
	ListCell   *lc;

	collect_subplans((Node *) cscan->custom_exprs, &plan_subplans);
	collect_subplans((Node *) cscan->scan.plan.targetlist, &plan_subplans);
	collect_subplans((Node *) cscan->scan.plan.qual, &plan_subplans);
	foreach(lc, node->ss.ps.subPlan)
	{
		SubPlanState *sps = lfirst(lc);
		ListCell   *lc2;

		foreach(lc2, plan_subplans)
		{
			SubPlan    *sp = lfirst(lc2);

			if (sp->plan_id == sps->subplan->plan_id)
			{
				sps->subplan = sp;
				break;
			}
		}
	}
}

static void *
remap(void *node, int nouter)
{
	return remap_index_vars((Node *) node, &nouter);
}

/* describe_columns notes the length and by-value flag of each column. */
static void
describe_columns(TupleDesc desc, int16 **attlen, bool **attbyval,
				 bool *has_byref)
{
	*attlen = palloc(sizeof(int16) * Max(desc->natts, 1));
	*attbyval = palloc(sizeof(bool) * Max(desc->natts, 1));
	*has_byref = false;
	for (int c = 0; c < desc->natts; c++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, c);

		(*attlen)[c] = att->attlen;
		(*attbyval)[c] = att->attbyval;
		if (!att->attbyval)
			*has_byref = true;
	}
}

/*
 * init_key_set allocates a side's key arrays for nkeys keys; the sides share
 * the clauses' collations and own_mix.
 */
static void
init_key_set(GhKeySet *keys, int nkeys, Oid *coll, bool *own_mix)
{
	keys->nkeys = nkeys;
	keys->exprs = palloc(sizeof(ExprState *) * nkeys);
	keys->att = palloc0(sizeof(AttrNumber) * nkeys);
	keys->hash = palloc0(sizeof(FmgrInfo) * nkeys);
	keys->fast = palloc0(sizeof(uint8) * nkeys);
	keys->coll = coll;
	keys->int_mix = own_mix;
	keys->typlen = palloc(sizeof(int16) * nkeys);
	keys->byval = palloc(sizeof(bool) * nkeys);
}

/*
 * init_key sets up key i of a side: expr, remapped to varno (OUTER_VAR or
 * INNER_VAR) references, hashed by the function hashfn.  Its collation must
 * be set already.
 */
static void
init_key(GhKeySet *keys, int i, Expr *expr, int varno, Oid hashfn,
		 PlanState *ps)
{
	keys->exprs[i] = ExecInitExpr(expr, ps);
	fmgr_info(hashfn, &keys->hash[i]);
	keys->fast[i] = gh_key_hash_kind(&keys->hash[i], keys->coll[i]);
	get_typlenbyval(exprType((Node *) expr), &keys->typlen[i], &keys->byval[i]);
	if (IsA(expr, Var) && ((Var *) expr)->varno == varno &&
		((Var *) expr)->varattno > 0 && keys->byval[i])
		keys->att[i] = ((Var *) expr)->varattno;
}

static void
ghj_begin(CustomScanState *node, EState *estate, int eflags)
{
	GhjState   *s = (GhjState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *priv = cscan->custom_private;
	List	   *outer_hash = list_nth(priv, GHJ_PRIV_OUTER_HASH);
	List	   *inner_hash = list_nth(priv, GHJ_PRIV_INNER_HASH);
	List	   *eqfuncs = list_nth(priv, GHJ_PRIV_EQ);
	List	   *colls = list_nth(priv, GHJ_PRIV_COLL);
	List	   *swapped = list_nth(priv, GHJ_PRIV_SWAPPED);
	bool		inner_unique;
	List	   *tlist,
			   *joinquals,
			   *otherquals;
	ListCell   *lc;
	int			i;

	s->jointype = (JoinType) intVal(list_nth(priv, GHJ_PRIV_JOINTYPE));
	s->nouter = intVal(list_nth(priv, GHJ_PRIV_NOUTER));
	inner_unique = intVal(list_nth(priv, GHJ_PRIV_INNER_UNIQUE)) != 0;
	s->nkeys = intVal(list_nth(priv, GHJ_PRIV_NHASH));
	s->single_match = inner_unique || s->jointype == JOIN_SEMI;
	s->shared_build = intVal(list_nth(priv, GHJ_PRIV_SHARED)) != 0;

	eflags &= ~(EXEC_FLAG_BACKWARD | EXEC_FLAG_MARK);
	s->outer_ps = ExecInitNode(linitial(cscan->custom_plans), estate, eflags);
	s->inner_ps = ExecInitNode(lsecond(cscan->custom_plans), estate, eflags);
	node->custom_ps = list_make2(s->outer_ps, s->inner_ps);

	s->outer_slot = ExecInitExtraTupleSlot(estate, ExecGetResultType(s->outer_ps),
										   &TTSOpsVirtual);
	s->inner_slot = ExecInitExtraTupleSlot(estate, ExecGetResultType(s->inner_ps),
										   &TTSOpsVirtual);
	describe_columns(ExecGetResultType(s->outer_ps), &s->outer_attlen,
					 &s->outer_attbyval, &s->outer_has_byref);
	describe_columns(ExecGetResultType(s->inner_ps), &s->inner_attlen,
					 &s->inner_attbyval, &s->inner_has_byref);
	Assert(ExecGetResultType(s->outer_ps)->natts == s->nouter);
	s->ninner_cols = ExecGetResultType(s->inner_ps)->natts;
	s->nullwords = (s->ninner_cols + 63) / 64;
	s->null_outer = ExecInitNullTupleSlot(estate, ExecGetResultType(s->outer_ps),
										  &TTSOpsVirtual);
	s->null_inner = ExecInitNullTupleSlot(estate, ExecGetResultType(s->inner_ps),
										  &TTSOpsVirtual);

	/* keys: the arguments of the hash clauses, outer first */
	s->hashclauses = list_copy_head(cscan->custom_exprs, s->nkeys);
	s->joinquals_expr = list_copy_tail(cscan->custom_exprs, s->nkeys);
	s->own_mix = palloc0(sizeof(bool) * s->nkeys);
	s->eq = palloc0(sizeof(FmgrInfo) * s->nkeys);
	s->eq_fast = palloc0(sizeof(uint8) * s->nkeys);
	s->coll = palloc(sizeof(Oid) * s->nkeys);
	s->swapped = palloc(sizeof(bool) * s->nkeys);
	init_key_set(&s->outer_keys, s->nkeys, s->coll, s->own_mix);
	init_key_set(&s->inner_keys, s->nkeys, s->coll, s->own_mix);
	i = 0;
	foreach(lc, s->hashclauses)
	{
		OpExpr	   *op = lfirst_node(OpExpr, lc);
		Expr	   *okey = remap(linitial(op->args), s->nouter);
		Expr	   *ikey = remap(lsecond(op->args), s->nouter);

		s->coll[i] = list_nth_oid(colls, i);
		init_key(&s->outer_keys, i, okey, OUTER_VAR,
				 list_nth_oid(outer_hash, i), &node->ss.ps);
		init_key(&s->inner_keys, i, ikey, INNER_VAR,
				 list_nth_oid(inner_hash, i), &node->ss.ps);
		collect_exec_params((Node *) ikey, &s->inner_key_params);
		fmgr_info(list_nth_oid(eqfuncs, i), &s->eq[i]);
		s->eq_fast[i] = gh_key_eq_kind(s->eq[i].fn_oid);
		s->own_mix[i] = gh_key_int_mix_ok(s->outer_keys.fast[i],
										  s->inner_keys.fast[i]);
		s->swapped[i] = list_nth_int(swapped, i) != 0;
		if (!s->inner_keys.byval[i])
			s->inner_has_byref = s->inner_key_byref = true;
		i++;
	}
	s->outer_keys_plain = true;
	for (int k = 0; k < s->nkeys; k++)
		if (s->outer_keys.att[k] <= 0 || !s->own_mix[k])
			s->outer_keys_plain = false;
	s->stride = s->nkeys + s->ninner_cols + s->nullwords;
	tlist = remap(cscan->scan.plan.targetlist, s->nouter);
	joinquals = remap(s->joinquals_expr, s->nouter);
	otherquals = remap(cscan->scan.plan.qual, s->nouter);
	s->joinqual = ExecInitQual(joinquals, &node->ss.ps);
	s->otherqual = ExecInitQual(otherquals, &node->ss.ps);
	s->proj = ExecBuildProjectionInfo(tlist, node->ss.ps.ps_ExprContext,
									  node->ss.ps.ps_ResultTupleSlot,
									  &node->ss.ps, NULL);
	ghj_init_stored(s, list_make3(tlist, joinquals, otherquals));
	ghj_init_direct_proj(s, tlist);
	ghj_explainable_subplans(node, cscan);

	s->build_cxt = AllocSetContextCreate(CurrentMemoryContext,
										 "GpuHashJoin build",
										 ALLOCSET_DEFAULT_SIZES);
	s->build_tmp_cxt = AllocSetContextCreate(CurrentMemoryContext,
											 "GpuHashJoin build copies",
											 ALLOCSET_DEFAULT_SIZES);
	s->batch_cxt = AllocSetContextCreate(CurrentMemoryContext,
										 "GpuHashJoin batch",
										 ALLOCSET_DEFAULT_SIZES);
	/*
	 * A batch never needs to hold much more than the outer side is expected
	 * to return: a large gpuhash.batch_rows does not make a small join
	 * allocate arrays for millions of rows.  Never below the default, so a
	 * low estimate cannot make a large join take many small batches.
	 */
	s->batch_cap = (uint32)
		Min((double) gpuhash_batch_rows,
			Max((double) GPUHASH_BATCH_ROWS_DEFAULT,
				2.0 * ((Plan *) linitial(cscan->custom_plans))->plan_rows));

	/* a GPU join's context can be made while the inner side is read */
	if ((eflags & EXEC_FLAG_EXPLAIN_ONLY) == 0)
		gpuhash_prewarm_gpu(cscan->scan.plan.parallel_aware);
}

/*
 * ghj_reset is ResetExprContext without the call when there is nothing to
 * reset, which is the usual case once per outer row and per candidate.
 */
static inline void
ghj_reset(ExprContext *econtext)
{
	MemoryContext cxt = econtext->ecxt_per_tuple_memory;

	if (!cxt->isReset || cxt->firstchild != NULL)
		MemoryContextReset(cxt);
}

/* byref_size is the room a by-reference value takes in the record arena. */
static inline Size
byref_size(Datum v, int16 typlen)
{
	return MAXALIGN(datumGetSize(v, false, typlen));
}

/*
 * byref_attr says whether record position k (keys, then columns) holds a
 * by-reference value, and gives its length.
 */
static inline bool
byref_attr(GhjState *s, int k, int16 *typlen)
{
	if (k < s->nkeys)
	{
		*typlen = s->inner_keys.typlen[k];
		return !s->inner_keys.byval[k];
	}
	*typlen = s->inner_attlen[k - s->nkeys];
	return !s->inner_attbyval[k - s->nkeys];
}

/* byref_null: is record position k a NULL column? (keys are never NULL) */
static inline bool
byref_null(GhjState *s, const Datum *rec, int k)
{
	const uint64 *nulls = (const uint64 *) &rec[s->nkeys + s->ninner_cols];
	int			c = k - s->nkeys;

	return k >= s->nkeys && (nulls[c / 64] & (UINT64CONST(1) << (c % 64))) != 0;
}

/* record_byref_size is the arena room a record's by-reference values take. */
static Size
record_byref_size(GhjState *s, const Datum *rec)
{
	Size		bytes = 0;

	for (int k = 0; k < s->nkeys + s->ninner_cols; k++)
	{
		int16		typlen;

		if (byref_attr(s, k, &typlen) && !byref_null(s, rec, k))
			bytes += byref_size(rec[k], typlen);
	}
	return bytes;
}

/*
 * store_columns copies the inner row in slot into a record: its column values
 * after the keys, then a null bitmap.  By-reference values are copied into
 * cxt.
 */
static void
store_columns(GhjState *s, TupleTableSlot *slot, Datum *rec, MemoryContext cxt)
{
	Datum	   *vals = rec + s->nkeys;
	uint64	   *nulls = (uint64 *) (vals + s->ninner_cols);

	slot_getallattrs(slot);
	memset(nulls, 0, sizeof(uint64) * s->nullwords);
	for (int c = 0; c < s->ninner_cols; c++)
	{
		if (slot->tts_isnull[c])
		{
			vals[c] = (Datum) 0;
			nulls[c / 64] |= UINT64CONST(1) << (c % 64);
		}
		else if (s->inner_attbyval[c])
			vals[c] = slot->tts_values[c];
		else
		{
			MemoryContext old = MemoryContextSwitchTo(cxt);

			vals[c] = datumCopy(slot->tts_values[c], false, s->inner_attlen[c]);
			MemoryContextSwitchTo(old);
		}
	}
}

/*
 * advise_huge asks the kernel for huge pages behind a large array that is
 * about to be written: the probe reads the inner records and their arena
 * at addresses far apart, and with 4 kB pages nearly every such read would
 * also miss the TLB.  Only a hint; nothing changes where it is not honoured.
 */
static void
advise_huge(void *p, Size len)
{
#ifdef MADV_HUGEPAGE
	const uintptr_t huge = 2 * 1024 * 1024;
	uintptr_t	start = TYPEALIGN(huge, (uintptr_t) p);
	uintptr_t	end = TYPEALIGN_DOWN(huge, (uintptr_t) p + len);

	if (end > start)
		(void) madvise((void *) start, end - start, MADV_HUGEPAGE);
#endif
}

/* arena_copy moves a by-reference value into the arena. */
static inline Datum
arena_copy(char *arena, Size *used, Datum v, int16 typlen)
{
	Size		len = datumGetSize(v, false, typlen);
	char	   *dst = arena + *used;

	memcpy(dst, DatumGetPointer(v), len);
	*used += MAXALIGN(len);
	return PointerGetDatum(dst);
}

/*
 * ghj_regroup reorders the inner records into the order of the table's row
 * array, which groups rows by hash, and moves their by-reference data into
 * one arena in the same order.  From then on the candidates of a probe row
 * are the records first .. first + count - 1 themselves, and a batch visited
 * in the order of its first candidates reads the inner side front to back.
 */
static void
ghj_regroup(GhjState *s)
{
	const uint32 *rows = s->table->rows;
	size_t		stride = s->stride;
	Datum	   *recs;
	char	   *arena = NULL;
	Size		used = 0;

	/*
	 * Every hash distinct (the usual inner side of a key join): the table
	 * grouped row i as group i, so the records already are in its order and
	 * their by-reference data stays where the build put it, in scan order.
	 */
	if (s->table->rows_identity)
	{
		gh_table_drop_rows(s->table);
		return;
	}

	/* cache-line aligned, so that no record of 64 bytes or less straddles two */
	recs = palloc_extended(sizeof(Datum) * Max(s->ninner, 1) * stride + 64,
						   MCXT_ALLOC_HUGE);
	recs = (Datum *) TYPEALIGN(64, recs);
	advise_huge(recs, sizeof(Datum) * s->ninner * stride);
	if (s->byref_bytes > 0)
	{
		arena = palloc_extended(s->byref_bytes, MCXT_ALLOC_HUGE);
		advise_huge(arena, s->byref_bytes);
	}
	for (uint32 j = 0; j < s->ninner; j++)
	{
		Datum	   *dst = &recs[j * stride];

		if (j + 8 < s->ninner)
			__builtin_prefetch(&s->inner_recs[(size_t) rows[j + 8] * stride]);
		memcpy(dst, &s->inner_recs[(size_t) rows[j] * stride],
			   sizeof(Datum) * stride);
		if (arena)
		{
			for (int k = 0; k < s->nkeys + s->ninner_cols; k++)
			{
				int16		typlen;

				if (byref_attr(s, k, &typlen) && !byref_null(s, dst, k))
					dst[k] = arena_copy(arena, &used, dst[k], typlen);
			}
		}
		if ((j & 0xffff) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	Assert(used <= s->byref_bytes);
	s->inner_recs = recs;
	MemoryContextReset(s->build_tmp_cxt);
	gh_table_drop_rows(s->table);
}

/*
 * ghj_service_table has the GPU service make the join's table: one for all
 * the participants of a shared build (see GhjShared), else its own.
 */
static GhTable *
ghj_service_table(GhjState *s, uint64 *hashes)
{
	GhjShared  *sh = s->shared;
	GhTable    *t = NULL;
	bool		builder = false;
	int			state;
	uint32		peer;

	if (sh == NULL || !s->shared_build)
		return gh_table_build_service(hashes, s->ninner, s->batch_cap, 0);

	SpinLockAcquire(&sh->mutex);
	if (sh->svc_state == GHJ_SVC_NONE)
	{
		sh->svc_state = GHJ_SVC_BUILDING;
		builder = true;
	}
	SpinLockRelease(&sh->mutex);
	if (builder)
	{
		PG_TRY();
		{
			t = gh_table_build_service(hashes, s->ninner, s->batch_cap, 0);
		}
		PG_CATCH();
		{
			SpinLockAcquire(&sh->mutex);
			sh->svc_state = GHJ_SVC_FAILED;
			SpinLockRelease(&sh->mutex);
			ConditionVariableBroadcast(&sh->svc_cv);
			PG_RE_THROW();
		}
		PG_END_TRY();
		t->shared_view = true;
		SpinLockAcquire(&sh->mutex);
		sh->svc_table = t->svc.id;
		sh->svc_state = GHJ_SVC_BUILT;
		SpinLockRelease(&sh->mutex);
		ConditionVariableBroadcast(&sh->svc_cv);
		return t;
	}

	ConditionVariablePrepareToSleep(&sh->svc_cv);
	for (;;)
	{
		SpinLockAcquire(&sh->mutex);
		state = sh->svc_state;
		peer = sh->svc_table;
		SpinLockRelease(&sh->mutex);
		if (state != GHJ_SVC_BUILDING)
			break;
		ConditionVariableSleep(&sh->svc_cv, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	/* a view of the peer's table; its own if that one is gone or failed */
	return gh_table_build_service(hashes, s->ninner, s->batch_cap,
								  state == GHJ_SVC_BUILT ? peer : 0);
}

/*
 * ghj_finish_build makes the device ready, builds the table of the row
 * store's hashes (freeing them) and regroups the store.  Only now: a GPU
 * join's context has been in the making on a thread since executor start-up
 * (gpuhash_prewarm_gpu), so the inner scan overlapped it; what is left of
 * it is Context Wait.
 */
static void
ghj_finish_build(GhjState *s, uint64 *hashes, bool keep_nullkeys)
{
	bool		svc = gh_svc_available(s->css.ss.ps.plan->parallel_aware);
	MemoryContext old;
	instr_time	ctx_start,
				ctx_end;

	INSTR_TIME_SET_CURRENT(ctx_start);
	if (svc)
	{
		/* the GPU service holds the context and the table */
		s->target = gh_svc_target();
		s->gpu_later = false;
	}
	else if (gpuhash_gpu_warming())
	{
		/* start on the CPU twin; ghj_move_to_gpu follows once it is made */
		s->target = GH_TARGET_CPU;
		s->gpu_later = true;
	}
	else
	{
		s->target = gpuhash_exec_target();
		s->gpu_later = false;
	}
	INSTR_TIME_SET_CURRENT(ctx_end);
	INSTR_TIME_SUBTRACT(ctx_end, ctx_start);
	s->context_ms += INSTR_TIME_GET_MILLISEC(ctx_end);

	old = MemoryContextSwitchTo(s->build_cxt);
	if (svc)
		s->table = ghj_service_table(s, hashes);
	else
		s->table = gh_table_build(s->target, hashes, s->ninner);
	s->target = s->table->target;	/* the CPU twin if the GPU had no room */
	pfree(hashes);
	ghj_regroup(s);
	if (keep_nullkeys)
		s->matched = palloc_extended(sizeof(uint32) * ((s->ninner + 31) / 32 + 1),
									  MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	MemoryContextSwitchTo(old);
	s->built = true;
	s->n_builds++;
}

/*
 * ghj_move_to_gpu moves a table built on the CPU twin, while this backend's
 * CUDA context was still in the making, to the GPU now that the context is
 * there.  It stays on the CPU twin if the GPU has no room for it.
 */
static void
ghj_move_to_gpu(GhjState *s)
{
	s->gpu_later = false;
	if (gpuhash_exec_target() == GH_TARGET_GPU &&
		gh_table_move_to_gpu(s->table))
		s->target = GH_TARGET_GPU;
}

/* ghj_next_inner fetches the next inner row into econtext, or NULL at the end. */
static TupleTableSlot *
ghj_next_inner(GhjState *s, ExprContext *econtext)
{
	TupleTableSlot *slot;

	CHECK_FOR_INTERRUPTS();
	slot = ExecProcNode(s->inner_ps);
	if (TupIsNull(slot))
		return NULL;
	ghj_reset(econtext);
	econtext->ecxt_innertuple = slot;
	return slot;
}

/* too_many_inner_rows: the table's row indices are 32-bit */
static void too_many_inner_rows(void) pg_attribute_noreturn();

static void
too_many_inner_rows(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("inner side of GpuHashJoin has more than %u rows",
					(unsigned) GH_MAX_ROWS),
			 errhint("SET gpuhash.enabled = off to run the join without gpuhash.")));
}

/* ghj_publish_chunk adds a filled chunk to the shared list. */
static void
ghj_publish_chunk(GhjShared *sh, GhjChunk *chunk, dsa_pointer dp)
{
	SpinLockAcquire(&sh->mutex);
	chunk->next = sh->chunks;
	sh->chunks = dp;
	SpinLockRelease(&sh->mutex);
}

/*
 * ghj_build_shared is the build of a parallel join whose participants read
 * the inner side together.  Those that arrive while it is being read put
 * their shares into shared chunks and wait for one another; then each, late
 * arrivals too, copies every chunk's records into its own row store (turning
 * by-reference offsets into pointers to the chunks' data, which stay where
 * they are) and finishes as a private build does.  Nobody emits a row before
 * the barrier, so no participant waits there on one blocked on a full tuple
 * queue.
 */
static void
ghj_build_shared(GhjState *s)
{
	GhjShared  *sh = s->shared;
	dsa_area   *area = s->css.ss.ps.state->es_query_dsa;
	ExprContext *econtext = s->css.ss.ps.ps_ExprContext;
	int			nfields = s->nkeys + s->ninner_cols;
	Size		recs_size = sizeof(Datum) * GHJ_CHUNK_ROWS * s->stride;
	uint64		n = 0;
	uint64	   *hashes;
	MemoryContext old;

	if (BarrierAttach(&sh->build_barrier) == 0)
	{
		GhjChunk   *chunk = NULL;
		dsa_pointer chunk_dp = InvalidDsaPointer;
		Datum	   *tmp = palloc(sizeof(Datum) * s->stride);

		for (;;)
		{
			TupleTableSlot *slot;
			bool		hasnull;
			uint64		h;
			Size		need;
			Datum	   *rec;
			char	   *data;

			if ((slot = ghj_next_inner(s, econtext)) == NULL)
				break;
			slot_getallattrs(slot);
			h = gh_key_hash_row(&s->inner_keys, econtext, slot, tmp,
								econtext->ecxt_per_tuple_memory, &hasnull);
			if (hasnull)
				continue;		/* never matches; no right or full join here */
			store_columns(s, slot, tmp, econtext->ecxt_per_tuple_memory);
			need = s->inner_has_byref ? record_byref_size(s, tmp) : 0;

			if (chunk == NULL || chunk->nrows == GHJ_CHUNK_ROWS ||
				chunk->data_used + need > chunk->data_size)
			{
				Size		data_size = Max(GHJ_CHUNK_DATA, need);

				if (chunk)
					ghj_publish_chunk(sh, chunk, chunk_dp);
				chunk_dp = dsa_allocate_extended(area,
												 MAXALIGN(sizeof(GhjChunk)) + recs_size +
												 (s->inner_has_byref ? data_size : 0),
												 DSA_ALLOC_HUGE);
				chunk = dsa_get_address(area, chunk_dp);
				chunk->next = InvalidDsaPointer;
				chunk->nrows = 0;
				chunk->data_size = s->inner_has_byref ? data_size : 0;
				chunk->data_used = 0;
			}
			rec = GhjChunkRecs(chunk) + (size_t) chunk->nrows * s->stride;
			memcpy(rec, tmp, sizeof(Datum) * s->stride);
			data = GhjChunkData(chunk, s->stride);
			for (int k = 0; k < nfields; k++)
			{
				int16		typlen;
				Size		len;

				if (!byref_attr(s, k, &typlen) || byref_null(s, rec, k))
					continue;
				len = datumGetSize(rec[k], false, typlen);
				memcpy(data + chunk->data_used, DatumGetPointer(rec[k]), len);
				rec[k] = (Datum) chunk->data_used;	/* an offset, in the chunk */
				chunk->data_used += MAXALIGN(len);
			}
			chunk->hashes[chunk->nrows++] = h;
		}
		if (chunk)
			ghj_publish_chunk(sh, chunk, chunk_dp);
		pfree(tmp);
		BarrierArriveAndWait(&sh->build_barrier, PG_WAIT_EXTENSION);
	}
	BarrierDetach(&sh->build_barrier);
	ghj_reset(econtext);

	/* every chunk is in the list now, and the list no longer changes */
	for (dsa_pointer dp = sh->chunks; DsaPointerIsValid(dp);)
	{
		GhjChunk   *c = dsa_get_address(area, dp);

		n += c->nrows;
		dp = c->next;
	}
	if (n > GH_MAX_ROWS)
		too_many_inner_rows();
	s->ninner = (uint32) n;
	s->n_nullkey = 0;
	s->byref_bytes = 0;
	old = MemoryContextSwitchTo(s->build_tmp_cxt);
	hashes = palloc_extended(sizeof(uint64) * Max(n, 1), MCXT_ALLOC_HUGE);
	s->inner_recs = palloc_extended(sizeof(Datum) * Max(n, 1) * s->stride,
									MCXT_ALLOC_HUGE);
	advise_huge(s->inner_recs, sizeof(Datum) * n * s->stride);
	MemoryContextSwitchTo(old);
	n = 0;
	for (dsa_pointer dp = sh->chunks; DsaPointerIsValid(dp);)
	{
		GhjChunk   *c = dsa_get_address(area, dp);
		Datum	   *dst = &s->inner_recs[(size_t) n * s->stride];

		memcpy(&hashes[n], c->hashes, sizeof(uint64) * c->nrows);
		memcpy(dst, GhjChunkRecs(c), sizeof(Datum) * c->nrows * s->stride);
		if (s->inner_has_byref)
		{
			char	   *data = GhjChunkData(c, s->stride);

			for (uint32 j = 0; j < c->nrows; j++)
			{
				Datum	   *rec = &dst[(size_t) j * s->stride];

				for (int k = 0; k < nfields; k++)
				{
					int16		typlen;

					if (!byref_attr(s, k, &typlen) || byref_null(s, rec, k))
						continue;
					rec[k] = PointerGetDatum(data + (Size) rec[k]);
					s->byref_bytes += byref_size(rec[k], typlen);
				}
			}
		}
		n += c->nrows;
		dp = c->next;
		CHECK_FOR_INTERRUPTS();
	}

	ghj_finish_build(s, hashes, false);
}

/* ghj_build_private: this process reads the whole inner side itself. */
static void
ghj_build_private(GhjState *s)
{
	ExprContext *econtext = s->css.ss.ps.ps_ExprContext;
	Plan	   *inner_plan = s->inner_ps->plan;
	uint32		cap;
	uint32		nullcap = 0;
	uint64	   *hashes;
	bool		keep_nullkeys = (s->jointype == JOIN_RIGHT ||
								 s->jointype == JOIN_FULL);
	MemoryContext old;

	/*
	 * Size the arrays for the planner's estimate, to spare most regrowing,
	 * but no more than 4M rows ahead of seeing them: estimates can be far off.
	 * Records are regrouped into build_cxt once the table exists (unless the
	 * table leaves them in place: see ghj_regroup).
	 */
	cap = (uint32) Min(Max(inner_plan->plan_rows * 1.1, 1024.0), 4194304.0);
	old = MemoryContextSwitchTo(s->build_tmp_cxt);
	s->inner_recs = palloc_extended(sizeof(Datum) * cap * s->stride, MCXT_ALLOC_HUGE);
	advise_huge(s->inner_recs, sizeof(Datum) * cap * s->stride);
	hashes = palloc_extended(sizeof(uint64) * cap, MCXT_ALLOC_HUGE);
	MemoryContextSwitchTo(old);
	s->ninner = 0;
	s->n_nullkey = 0;
	s->byref_bytes = 0;

	for (;;)
	{
		TupleTableSlot *slot;
		bool		hasnull;
		uint64		h;
		Datum	   *rec;

		if ((slot = ghj_next_inner(s, econtext)) == NULL)
			break;
		if (s->ninner == cap)
		{
			if (cap >= GH_MAX_ROWS)
				too_many_inner_rows();
			cap = (uint32) Min((uint64) cap * 2, (uint64) GH_MAX_ROWS);
			s->inner_recs = repalloc_huge(s->inner_recs,
										  sizeof(Datum) * cap * s->stride);
			hashes = repalloc_huge(hashes, sizeof(uint64) * cap);
		}
		rec = &s->inner_recs[(size_t) s->ninner * s->stride];
		slot_getallattrs(slot);
		h = gh_key_hash_row(&s->inner_keys, econtext, slot, rec,
							s->build_tmp_cxt, &hasnull);
		if (!hasnull)
		{
			store_columns(s, slot, rec, s->build_tmp_cxt);
			if (s->inner_has_byref)
				s->byref_bytes += record_byref_size(s, rec);
			hashes[s->ninner++] = h;
		}
		else if (keep_nullkeys)
		{
			/* can never match; only right and full joins still emit it */
			if (s->n_nullkey == nullcap)
			{
				old = MemoryContextSwitchTo(s->build_cxt);
				nullcap = Max(nullcap * 2, 64);
				s->nullkey_recs = s->nullkey_recs ?
					repalloc_huge(s->nullkey_recs, sizeof(Datum) * s->stride * nullcap) :
					palloc(sizeof(Datum) * s->stride * nullcap);
				MemoryContextSwitchTo(old);
			}
			rec = &s->nullkey_recs[(size_t) s->n_nullkey++ * s->stride];
			memset(rec, 0, sizeof(Datum) * s->nkeys);
			store_columns(s, slot, rec, s->build_cxt);
		}
	}
	ghj_reset(econtext);
	ghj_finish_build(s, hashes, keep_nullkeys);
}

/*
 * ghj_build runs the inner side to completion and builds the table: read
 * together with the other participants where the plan asks for it and a
 * parallel segment is there, else by this process alone (the partial inner
 * path then scans the whole relation).
 */
static void
ghj_build(GhjState *s)
{
	instr_time	start,
				end;

	INSTR_TIME_SET_CURRENT(start);
	if (s->shared_build && s->shared != NULL &&
		s->css.ss.ps.state->es_query_dsa != NULL)
		ghj_build_shared(s);
	else
		ghj_build_private(s);
	INSTR_TIME_SET_CURRENT(end);
	INSTR_TIME_SUBTRACT(end, start);
	s->build_ms += INSTR_TIME_GET_MILLISEC(end);
}

/*
 * store_outer copies the stored columns of the outer row in slot into batch
 * row n, after deforming the row as far as they and the keys need.
 */
static inline void
store_outer(GhjState *s, TupleTableSlot *slot, uint32 n)
{
	Datum	   *vals = &s->batch_vals[(size_t) n * s->nstored];
	bool	   *isnull = &s->batch_isnull[(size_t) n * s->nstored];

	slot_getsomeattrs(slot, s->outer_deform);
	for (int j = 0; j < s->nstored; j++)
	{
		int			c = s->stored_col[j];

		vals[j] = slot->tts_values[c];
		isnull[j] = slot->tts_isnull[c];
	}
	if (s->outer_has_byref)
	{
		MemoryContext old = MemoryContextSwitchTo(s->batch_cxt);

		for (int j = 0; j < s->nstored; j++)
		{
			int			c = s->stored_col[j];

			if (!isnull[j] && !s->outer_attbyval[c])
				vals[j] = datumCopy(vals[j], false, s->outer_attlen[c]);
		}
		MemoryContextSwitchTo(old);
	}
}

/*
 * sort_by_first orders the batch rows in order[0 .. n-1] by their first
 * candidate (a least-significant-digit radix sort; first < limit).
 */
static void
sort_by_first(uint32 *order, uint32 *tmp, const uint32 *first, uint32 n,
			  uint32 limit)
{
	uint32		counts[4096];
	int			nbits = limit > 1 ? 32 - __builtin_clz(limit - 1) : 0;
	int			passes = (nbits + 11) / 12;
	int			digit;
	uint32		mask;
	uint32	   *src = order,
			   *dst = tmp;

	if (n < 2 || passes == 0)
		return;
	digit = (nbits + passes - 1) / passes;
	mask = (1U << digit) - 1;
	for (int p = 0, shift = 0; p < passes; p++, shift += digit)
	{
		uint32		sum = 0;
		uint32	   *swap;

		memset(counts, 0, sizeof(uint32) * (mask + 1));
		for (uint32 j = 0; j < n; j++)
			counts[(first[src[j]] >> shift) & mask]++;
		for (uint32 b = 0; b <= mask; b++)
		{
			uint32		c = counts[b];

			counts[b] = sum;
			sum += c;
		}
		for (uint32 j = 0; j < n; j++)
		{
			uint32		i = src[j];

			dst[counts[(first[i] >> shift) & mask]++] = i;
		}
		swap = src;
		src = dst;
		dst = swap;
	}
	if (src != order)
		memcpy(order, src, sizeof(uint32) * n);
}

/*
 * ghj_next_batch pulls, copies and hashes the next batch of outer rows,
 * probes the table with it, and lists the rows to visit: those with
 * candidates in the order of their first candidate (so the inner records are
 * read front to back, not at random), then, for joins that emit unmatched
 * outer rows, the others.  Returns false when the outer side is done.
 */
static bool
ghj_next_batch(GhjState *s)
{
	ExprContext *econtext = s->css.ss.ps.ps_ExprContext;
	MemoryContext old;
	uint32		n = 0;
	uint32		m = 0;

	MemoryContextReset(s->batch_cxt);
	if (s->batch_vals == NULL)
	{
		old = MemoryContextSwitchTo(s->build_cxt);
		/* gpuhash.batch_rows may ask for more than 1 GB per array */
		s->batch_vals = palloc_extended(sizeof(Datum) * s->batch_cap * Max(s->nstored, 1),
										MCXT_ALLOC_HUGE);
		s->batch_isnull = palloc_extended(sizeof(bool) * s->batch_cap * Max(s->nstored, 1),
										  MCXT_ALLOC_HUGE);
		s->batch_keys = palloc_extended(sizeof(Datum) * s->batch_cap * s->nkeys,
										MCXT_ALLOC_HUGE);
		s->batch_null = palloc_extended(sizeof(bool) * s->batch_cap, MCXT_ALLOC_HUGE);
		s->batch_order = palloc_extended(sizeof(uint32) * s->batch_cap, MCXT_ALLOC_HUGE);
		s->visit_first = palloc_extended(sizeof(uint32) * s->batch_cap, MCXT_ALLOC_HUGE);
		s->visit_count = palloc_extended(sizeof(uint32) * s->batch_cap, MCXT_ALLOC_HUGE);
		s->sort_tmp = palloc_extended(sizeof(uint32) * s->batch_cap, MCXT_ALLOC_HUGE);
		MemoryContextSwitchTo(old);
		/* a table in the GPU service lends its probe area: nothing is copied */
		s->batch_in_table = gh_table_probe_area(s->table, s->batch_cap,
												&s->batch_hashes, &s->batch_first,
												&s->batch_count);
		if (!s->batch_in_table)
		{
			s->batch_hashes = gh_host_alloc(s->target, sizeof(uint64) * s->batch_cap);
			s->batch_first = gh_host_alloc(s->target, sizeof(uint32) * s->batch_cap);
			s->batch_count = gh_host_alloc(s->target, sizeof(uint32) * s->batch_cap);
		}
	}

	while (n < s->batch_cap)
	{
		TupleTableSlot *slot;

		CHECK_FOR_INTERRUPTS();
		slot = ExecProcNode(s->outer_ps);
		if (TupIsNull(slot))
		{
			s->outer_done = true;
			break;
		}
		ghj_reset(econtext);
		econtext->ecxt_outertuple = slot;
		store_outer(s, slot, n);	/* deforms the whole row */
		if (s->outer_keys_plain)
		{
			/* plain integer columns: keys now, hashes for the whole batch below */
			Datum	   *keys = &s->batch_keys[(size_t) n * s->nkeys];

			s->batch_null[n] = false;
			for (int k = 0; k < s->nkeys; k++)
			{
				keys[k] = slot->tts_values[s->outer_keys.att[k] - 1];
				s->batch_null[n] |= slot->tts_isnull[s->outer_keys.att[k] - 1];
			}
		}
		else
			s->batch_hashes[n] = gh_key_hash_row(&s->outer_keys, econtext, slot,
												 &s->batch_keys[(size_t) n * s->nkeys],
												 s->batch_cxt, &s->batch_null[n]);
		n++;
	}
	if (s->outer_keys_plain)
	{
		/* one tight loop: the multiplications of many rows overlap */
		for (uint32 r = 0; r < n; r++)
			s->batch_hashes[r] = s->batch_null[r] ? 0 :
				gh_key_int_mix_row(&s->outer_keys,
								   &s->batch_keys[(size_t) r * s->nkeys]);
	}
	ghj_reset(econtext);
	s->batch_n = n;
	s->n_order = 0;
	s->cur = 0;
	s->cur_cand = 0;
	s->cur_loaded = false;
	s->cur_matched = false;
	if (n == 0)
		return false;

	if (s->gpu_later && !gpuhash_gpu_warming())
		ghj_move_to_gpu(s);
	if (s->gpu_later)
		s->n_cpu_batches++;
	gh_table_probe(s->table, s->batch_hashes, n, s->batch_first, s->batch_count);
	for (uint32 i = 0; i < n; i++)
	{
		if (s->batch_null[i])
			s->batch_count[i] = 0;
		else if (s->batch_count[i] > 0)
			s->batch_order[m++] = i;
	}
	sort_by_first(s->batch_order, s->sort_tmp, s->batch_first, m, s->ninner);
	if (s->jointype == JOIN_LEFT || s->jointype == JOIN_FULL ||
		s->jointype == JOIN_ANTI)
	{
		for (uint32 i = 0; i < n; i++)
			if (s->batch_count[i] == 0)
				s->batch_order[m++] = i;
	}
	s->n_order = m;
	for (uint32 p = 0; p < m; p++)
	{
		s->visit_first[p] = s->batch_first[s->batch_order[p]];
		s->visit_count[p] = s->batch_count[s->batch_order[p]];
	}
	s->n_batches++;
	return true;
}

/* ghj_verify checks outer row i against inner record rec with the operators. */
static inline bool
ghj_verify(GhjState *s, uint32 i, const Datum *ik)
{
	Datum	   *ok = &s->batch_keys[(size_t) i * s->nkeys];

	for (int k = 0; k < s->nkeys; k++)
	{
		Datum		a = s->swapped[k] ? ik[k] : ok[k];
		Datum		b = s->swapped[k] ? ok[k] : ik[k];

		if (!gh_key_equal(s->eq_fast[k], &s->eq[k], s->coll[k], a, b))
			return false;
	}
	return true;
}

/*
 * ghj_load_outer puts batch row i into outer_slot.  The columns the batch
 * does not keep, which nothing reads, stay null (ghj_init_stored).
 */
static inline void
ghj_load_outer(GhjState *s, uint32 i)
{
	TupleTableSlot *slot = s->outer_slot;

	const Datum *vals = &s->batch_vals[(size_t) i * s->nstored];
	const bool *isnull = &s->batch_isnull[(size_t) i * s->nstored];

	ExecClearTuple(slot);
	for (int j = 0; j < s->nstored; j++)
	{
		slot->tts_values[s->stored_col[j]] = vals[j];
		slot->tts_isnull[s->stored_col[j]] = isnull[j];
	}
	ExecStoreVirtualTuple(slot);
}

/* ghj_load_inner puts the columns of inner record rec into inner_slot. */
static inline void
ghj_load_inner(GhjState *s, const Datum *rec)
{
	TupleTableSlot *slot = s->inner_slot;
	const Datum *vals = rec + s->nkeys;
	const uint64 *nulls = (const uint64 *) (vals + s->ninner_cols);

	ExecClearTuple(slot);
	for (int c = 0; c < s->ninner_cols; c++)
	{
		slot->tts_values[c] = vals[c];
		slot->tts_isnull[c] = (nulls[c / 64] >> (c % 64)) & 1;
	}
	ExecStoreVirtualTuple(slot);
}

/*
 * ghj_emit_direct builds the result row of outer batch row i and inner
 * record rec by copying columns (see direct_proj).
 */
static inline TupleTableSlot *
ghj_emit_direct(GhjState *s, uint32 i, const Datum *rec)
{
	TupleTableSlot *slot = s->css.ss.ps.ps_ResultTupleSlot;
	const Datum *ovals = &s->batch_vals[(size_t) i * s->nstored];
	const bool *onull = &s->batch_isnull[(size_t) i * s->nstored];
	const Datum *ivals = rec + s->nkeys;
	const uint64 *inull = (const uint64 *) (ivals + s->ninner_cols);

	ExecClearTuple(slot);
	for (int c = 0; c < s->nproj; c++)
	{
		int			col = s->proj_col[c];

		if (s->proj_inner[c])
		{
			slot->tts_values[c] = ivals[col];
			slot->tts_isnull[c] = (inull[col / 64] >> (col % 64)) & 1;
		}
		else
		{
			slot->tts_values[c] = ovals[col];
			slot->tts_isnull[c] = onull[col];
		}
	}
	return ExecStoreVirtualTuple(slot);
}

/* ghj_emit filters the pair in econtext by the pushed-down quals and projects it. */
static inline TupleTableSlot *
ghj_emit(GhjState *s, ExprContext *econtext)
{
	if (s->otherqual == NULL || ExecQual(s->otherqual, econtext))
		return ExecProject(s->proj);
	InstrCountFiltered1(&s->css, 1);
	return NULL;
}

/* ghj_next_unmatched_inner emits inner rows no outer row matched. */
static TupleTableSlot *
ghj_next_unmatched_inner(GhjState *s, ExprContext *econtext)
{
	while (s->inner_pos < s->ninner + s->n_nullkey)
	{
		uint32		p = s->inner_pos++;
		const Datum *rec;
		TupleTableSlot *result;

		CHECK_FOR_INTERRUPTS();
		if (p < s->ninner)
		{
			if (s->matched[p / 32] & (1U << (p % 32)))
				continue;
			rec = &s->inner_recs[(size_t) p * s->stride];
		}
		else
			rec = &s->nullkey_recs[(size_t) (p - s->ninner) * s->stride];
		ghj_reset(econtext);
		ghj_load_inner(s, rec);
		econtext->ecxt_outertuple = s->null_outer;
		econtext->ecxt_innertuple = s->inner_slot;
		result = ghj_emit(s, econtext);
		if (result)
			return result;
	}
	return NULL;
}

/* ghj_publish_stats: a parallel worker puts its counters into shared memory. */
static void
ghj_publish_stats(GhjState *s)
{
	GhjStats   *st;

	if (s->shared == NULL || !IsParallelWorker() ||
		ParallelWorkerNumber < 0 || ParallelWorkerNumber >= s->shared->nworkers)
		return;
	st = &s->shared->stats[ParallelWorkerNumber];
	st->inner_rows = s->ninner + s->n_nullkey;
	st->batches = s->n_batches;
	st->candidates = s->n_candidates;
	st->matches = s->n_matches;
	st->build_ms = s->build_ms;
	st->context_ms = s->context_ms;
	st->device_ms = s->table ? s->table->device_ms : 0;
	st->cpu_batches = s->n_cpu_batches;
	st->shared_table = s->table && s->table->shared_view;
	st->valid = s->n_builds > 0;
}

static TupleTableSlot *
ghj_exec(CustomScanState *node)
{
	GhjState   *s = (GhjState *) node;
	ExprContext *econtext = node->ss.ps.ps_ExprContext;

	ghj_reset(econtext);
	if (!s->built)
	{
		ghj_build(s);
		/* no inner row can match: inner, semi and right joins are done */
		if (s->ninner == 0 &&
			(s->jointype == JOIN_INNER || s->jointype == JOIN_SEMI))
			s->outer_done = true;
	}

	for (;;)
	{
		uint32		i;
		bool		emit_null;

		CHECK_FOR_INTERRUPTS();
		if (s->emitting_inner)
			return ghj_next_unmatched_inner(s, econtext);

		if (s->cur >= s->n_order)
		{
			if (s->outer_done || !ghj_next_batch(s))
			{
				if (s->jointype == JOIN_RIGHT || s->jointype == JOIN_FULL)
				{
					s->emitting_inner = true;
					s->inner_pos = 0;
					continue;
				}
				ghj_publish_stats(s);
				return NULL;
			}
			continue;
		}

		i = s->batch_order[s->cur];
		if (!s->cur_loaded)
		{
			/*
			 * Ask for the records of the row GHJ_PREFETCH visits ahead.
			 * Visits go up the inner side in order, so this mostly runs
			 * ahead of the hardware prefetcher across page boundaries.
			 * (Written in line: GCC drops a static function holding only
			 * prefetches.)
			 */
			if (s->cur + GHJ_PREFETCH < s->n_order)
			{
				uint32		ahead = s->cur + GHJ_PREFETCH;

				if (s->visit_count[ahead] > 0)
				{
					const Datum *rec = &s->inner_recs[(size_t) s->visit_first[ahead] * s->stride];

					__builtin_prefetch(rec);
					__builtin_prefetch(&rec[s->stride - 1]);
				}
				__builtin_prefetch(&s->batch_vals[(size_t) s->batch_order[ahead] * s->nstored]);
				__builtin_prefetch(&s->batch_keys[(size_t) s->batch_order[ahead] * s->nkeys]);
			}

			/*
			 * A by-reference key (text, numeric, ...) is verified through
			 * its pointer: half as far ahead, where the record asked for
			 * above has arrived, ask for the data its keys point to.
			 */
			if (s->inner_key_byref && s->cur + GHJ_PREFETCH / 2 < s->n_order &&
				s->visit_count[s->cur + GHJ_PREFETCH / 2] > 0)
			{
				const Datum *rec = &s->inner_recs[(size_t) s->visit_first[s->cur + GHJ_PREFETCH / 2] *
												  s->stride];

				for (int k = 0; k < s->nkeys; k++)
					if (!s->inner_keys.byval[k])
						__builtin_prefetch(DatumGetPointer(rec[k]));
			}
			if (!s->direct_proj)
				ghj_load_outer(s, i);
			s->cur_loaded = true;
		}
		econtext->ecxt_outertuple = s->outer_slot;
		while (s->cur_cand < s->visit_count[s->cur])
		{
			uint32		r = s->visit_first[s->cur] + s->cur_cand;
			const Datum *rec = &s->inner_recs[(size_t) r * s->stride];
			MemoryContext old;
			bool		ok;

			s->cur_cand++;
			s->n_candidates++;
			ghj_reset(econtext);
			old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
			ok = ghj_verify(s, i, rec);
			MemoryContextSwitchTo(old);
			if (!ok)
				continue;
			if (!s->direct_proj)
			{
				ghj_load_inner(s, rec);
				econtext->ecxt_innertuple = s->inner_slot;
				if (s->joinqual && !ExecQual(s->joinqual, econtext))
					continue;
			}

			s->n_matches++;
			s->cur_matched = true;
			if (s->matched)
				s->matched[r / 32] |= 1U << (r % 32);
			if (s->jointype == JOIN_ANTI || s->single_match)
				s->cur_cand = s->visit_count[s->cur];
			if (s->jointype == JOIN_ANTI)
				break;
			if (s->direct_proj)
				return ghj_emit_direct(s, i, rec);
			{
				TupleTableSlot *result = ghj_emit(s, econtext);

				if (result)
					return result;
			}
		}

		/* outer row i is done */
		emit_null = !s->cur_matched &&
			(s->jointype == JOIN_LEFT || s->jointype == JOIN_FULL ||
			 s->jointype == JOIN_ANTI);
		s->cur++;
		s->cur_cand = 0;
		s->cur_loaded = false;
		s->cur_matched = false;
		if (emit_null)
		{
			TupleTableSlot *result;

			ghj_reset(econtext);
			if (s->direct_proj)
				ghj_load_outer(s, i);
			econtext->ecxt_innertuple = s->null_inner;
			result = ghj_emit(s, econtext);
			if (result)
				return result;
		}
	}
}

/* ghj_release frees the table and everything the build made. */
static void
ghj_release(GhjState *s)
{
	if (s->table)
		gh_table_free(s->table);
	s->table = NULL;
	if (s->batch_hashes && !s->batch_in_table)
	{
		gh_dev_free(s->batch_hashes);
		gh_dev_free(s->batch_first);
		gh_dev_free(s->batch_count);
	}
	s->batch_in_table = false;
	s->batch_hashes = NULL;
	s->batch_first = NULL;
	s->batch_count = NULL;
	s->batch_vals = NULL;
	s->batch_isnull = NULL;
	s->batch_keys = NULL;
	s->batch_null = NULL;
	s->batch_order = NULL;
	s->visit_first = NULL;
	s->visit_count = NULL;
	s->sort_tmp = NULL;
	s->inner_recs = NULL;
	s->nullkey_recs = NULL;
	s->matched = NULL;
	s->ninner = 0;
	s->n_nullkey = 0;
	s->byref_bytes = 0;
	s->built = false;
	MemoryContextReset(s->batch_cxt);
	MemoryContextReset(s->build_tmp_cxt);
	MemoryContextReset(s->build_cxt);
}

static void
ghj_reset_probe(GhjState *s)
{
	s->batch_n = 0;
	s->n_order = 0;
	s->cur = 0;
	s->cur_cand = 0;
	s->cur_loaded = false;
	s->cur_matched = false;
	s->outer_done = false;
	s->emitting_inner = false;
	s->inner_pos = 0;
}

static void
ghj_end(CustomScanState *node)
{
	GhjState   *s = (GhjState *) node;

	ghj_release(s);
	ExecEndNode(s->outer_ps);
	ExecEndNode(s->inner_ps);
}

/*
 * ghj_rescan keeps the table unless the inner side depends on a changed
 * parameter, as nodeHashjoin.c does; the outer side is always read again.
 */
static void
ghj_rescan(CustomScanState *node)
{
	GhjState   *s = (GhjState *) node;
	Bitmapset  *chg = node->ss.ps.chgParam;

	if (chg != NULL)
	{
		UpdateChangedParamSet(s->outer_ps, chg);
		UpdateChangedParamSet(s->inner_ps, chg);
	}
	if (s->built && s->shared_build)
	{
		/* a shared build's chunks go with the parallel segment: read again */
		ghj_release(s);
		if (s->inner_ps->chgParam == NULL)
			ExecReScan(s->inner_ps);
	}
	else if (s->built)
	{
		/*
		 * Rebuild when the inner rows or their hashes may differ: the inner
		 * side depends on a changed parameter, or an inner key expression of
		 * this node does (the child then knows of no change, so rescan it).
		 */
		if (s->inner_ps->chgParam != NULL)
			ghj_release(s);		/* ExecProcNode rescans the inner side */
		else if (bms_overlap(chg, s->inner_key_params))
		{
			ghj_release(s);
			ExecReScan(s->inner_ps);
		}
		else if (s->matched)
			memset(s->matched, 0, sizeof(uint32) * ((s->ninner + 31) / 32 + 1));
	}
	else if (s->inner_ps->chgParam == NULL)
		ExecReScan(s->inner_ps);
	ghj_reset_probe(s);
	if (s->outer_ps->chgParam == NULL)
		ExecReScan(s->outer_ps);
}

static Size
ghj_estimate_dsm(CustomScanState *node, ParallelContext *pcxt)
{
	return add_size(offsetof(GhjShared, stats),
					mul_size(sizeof(GhjStats), pcxt->nworkers));
}

static void
ghj_init_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	GhjState   *s = (GhjState *) node;

	memset(coordinate, 0, ghj_estimate_dsm(node, pcxt));
	s->shared = (GhjShared *) coordinate;
	s->shared->nworkers = pcxt->nworkers;
	BarrierInit(&s->shared->build_barrier, 0);
	SpinLockInit(&s->shared->mutex);
	s->shared->chunks = InvalidDsaPointer;
	s->shared->svc_state = GHJ_SVC_NONE;
	ConditionVariableInit(&s->shared->svc_cv);
}

/*
 * ghj_reinit_dsm prepares the segment for another run (a rescan of the
 * Gather, its workers gone): the shared build starts over, and its chunks
 * are freed when the query's area is at hand (else they go with the query).
 */
static void
ghj_reinit_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	GhjState   *s = (GhjState *) node;
	GhjShared  *sh = (GhjShared *) coordinate;
	dsa_area   *area = node->ss.ps.state->es_query_dsa;

	s->shared = sh;
	if (area != NULL)
	{
		for (dsa_pointer dp = sh->chunks; DsaPointerIsValid(dp);)
		{
			GhjChunk   *c = dsa_get_address(area, dp);
			dsa_pointer next = c->next;

			dsa_free(area, dp);
			dp = next;
		}
	}
	sh->chunks = InvalidDsaPointer;
	sh->svc_state = GHJ_SVC_NONE;
	sh->svc_table = 0;
	BarrierInit(&sh->build_barrier, 0);
	memset(sh->stats, 0, sizeof(GhjStats) * sh->nworkers);
}

static void
ghj_init_worker(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	GhjState   *s = (GhjState *) node;

	s->shared = (GhjShared *) coordinate;
}

/*
 * ghj_shutdown runs before the parallel segment is detached: a worker
 * publishes its counters (again: a LIMIT above may have stopped it early),
 * the leader keeps a copy of everyone's for EXPLAIN.
 */
static void
ghj_shutdown(CustomScanState *node)
{
	GhjState   *s = (GhjState *) node;
	Size		size;

	if (s->shared == NULL)
		return;
	if (IsParallelWorker())
	{
		ghj_publish_stats(s);
		return;
	}
	size = offsetof(GhjShared, stats) + sizeof(GhjStats) * s->shared->nworkers;
	if (s->shared_copy == NULL)
		s->shared_copy = MemoryContextAlloc(node->ss.ps.state->es_query_cxt, size);
	memcpy(s->shared_copy, s->shared, size);
	s->shared = NULL;
}

static const char *
jointype_name(JoinType jointype)
{
	switch (jointype)
	{
		case JOIN_INNER:
			return "Inner";
		case JOIN_LEFT:
			return "Left";
		case JOIN_RIGHT:
			return "Right";
		case JOIN_FULL:
			return "Full";
		case JOIN_SEMI:
			return "Semi";
		case JOIN_ANTI:
			return "Anti";
		default:
			return "?";
	}
}

static void
ghj_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	GhjState   *s = (GhjState *) node;
	List	   *context;
	bool		useprefix = list_length(es->rtable) > 1 || es->verbose;

	ExplainPropertyText("Join Type", jointype_name(s->jointype), es);
	if (s->shared_build)
		ExplainPropertyText("Inner Side", "read by all participants together", es);
	context = set_deparse_context_plan(es->deparse_cxt, node->ss.ps.plan,
									   ancestors);
	ExplainPropertyText("Hash Cond",
						deparse_expression((Node *) make_ands_explicit(s->hashclauses),
										   context, useprefix, false), es);
	if (s->joinquals_expr != NIL)
		ExplainPropertyText("Join Filter",
							deparse_expression((Node *) make_ands_explicit(s->joinquals_expr),
											   context, useprefix, false), es);
	if (es->analyze && s->n_builds > 0)
	{
		ExplainPropertyText("Device", gpuhash_target_name(s->target), es);
		ExplainPropertyUInteger("Inner Rows", NULL, s->ninner + s->n_nullkey, es);
		ExplainPropertyUInteger("Batches", NULL, s->n_batches, es);
		ExplainPropertyUInteger("Candidates", NULL, s->n_candidates, es);
		ExplainPropertyUInteger("Verified Matches", NULL, s->n_matches, es);
		ExplainPropertyFloat("Build Time", "ms", s->build_ms, 3, es);
		if (s->table)
		{
			double		lf = s->table->mm.capacity ?
				(double) s->table->mm.ndistinct / s->table->mm.capacity : 0;

			ExplainPropertyFloat("Device Time", "ms", s->table->device_ms, 3, es);
			ExplainPropertyFloat("Load Factor", NULL, lf, 3, es);
			ExplainPropertyUInteger("Device Memory", "kB",
									(s->table->mem_bytes + 1023) / 1024, es);
		}
		if (s->context_ms >= 1.0)
			ExplainPropertyFloat("Context Wait", "ms", s->context_ms, 3, es);
		if (s->n_cpu_batches > 0)
			ExplainPropertyUInteger("Batches Before GPU", NULL, s->n_cpu_batches, es);
		if (s->table && s->table->svc.id != 0)
			ExplainPropertyText("Table Held By",
								s->table->shared_view ?
								"GPU service, one for all participants" : "GPU service",
								es);
	}
	if (es->analyze && s->shared_copy != NULL)
	{
		for (int w = 0; w < s->shared_copy->nworkers; w++)
		{
			GhjStats   *st = &s->shared_copy->stats[w];
			char		label[32];
			char	   *text;

			if (!st->valid)
				continue;
			snprintf(label, sizeof(label), "Worker %d", w);
			text = psprintf("Inner Rows: " UINT64_FORMAT ", Batches: " UINT64_FORMAT
							", Candidates: " UINT64_FORMAT ", Verified Matches: " UINT64_FORMAT
							", Build Time: %.3f ms, Context Wait: %.3f ms, Device Time: %.3f ms"
							", Batches Before GPU: " UINT64_FORMAT "%s",
							st->inner_rows, st->batches, st->candidates, st->matches,
							st->build_ms, st->context_ms, st->device_ms, st->cpu_batches,
							st->shared_table ? ", Table: one for all participants" : "");
			ExplainPropertyText(label, text, es);
		}
	}
}
