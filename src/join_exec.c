/*-------------------------------------------------------------------------
 * join_exec.c
 *	  The GpuHashJoin executor node: its CustomScan callbacks.
 *
 * A GpuHashJoin joins its outer child (the probe side) with its inner child
 * (the build side) the way PostgreSQL's Hash Join does, with the hash table
 * on the GPU or its CPU twin.  This file is the node; the work is done in
 * join_build.c (BUILD: the inner row store and the table), join_probe.c
 * (PROBE: outer batches, verified candidates, emitted rows) and
 * join_parallel.c (PARALLELISM: what the participants of a parallel join
 * share), which share join_exec.h; key hashing and equality are keys.c's.
 *
 * ghj_begin turns the plan (gpuhash_join.h's custom_private) into the
 * state: the children, the keys with their hash and equality functions, the
 * quals and projection rewritten for two slots (see join_probe.c), and the
 * outer columns a batch keeps.  ghj_exec is an explicit state machine, in
 * the manner of nodeHashjoin.c's HJ_* states: GHJ_BUILD_TABLE on the first
 * call, then GHJ_NEXT_BATCH and GHJ_PROBE_BATCH in turn until the outer
 * side is done, then, for right and full joins, GHJ_UNMATCHED_INNER; then
 * GHJ_NEED_NEW_BATCH, which, when the inner side was split into batches
 * (join_batch.c), loads the next batch and starts again at GHJ_NEXT_BATCH
 * with that batch's outer rows, and otherwise ends in GHJ_DONE.  A rescan
 * keeps the table when there is one batch and the inner side cannot have
 * changed, and reads the outer side again; batch files are closed at the
 * end of their batch, at the end and at a rescan.  The DSM callbacks set up and
 * reset the join's part of the parallel segment (join_parallel.c) and bring
 * the workers' counters back for EXPLAIN ANALYZE.
 *
 * Device memory belongs to the device layer's resource-owner tracking, so an
 * ERROR or cancel at any point frees it; EndCustomScan frees it normally.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/sysattr.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/nodeCustom.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/memutils.h"
#include "utils/ruleutils.h"

#include "join_exec.h"

static void ghj_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *ghj_exec(CustomScanState *node);
static void ghj_end(CustomScanState *node);
static void ghj_rescan(CustomScanState *node);
static void explain_text_line(int worker, ExplainState *es);
static void explain_join_figures(const GhjStats *st, bool timed,
								 bool shared_build, int worker,
								 ExplainState *es);
static void explain_join_table(GhjState *s, int nbatch, int nbatch_original,
							   int nbatch_planned, Size mem_peak,
							   Size dev_peak, ExplainState *es);
static void explain_join_workers(GhjState *s, ExplainState *es);
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

static Node *remap_index_vars(Node *node, void *context);
static void *remap(void *node, int nouter);
static void ghj_init_direct_proj(GhjState *s, List *tlist);
static void ghj_init_inner_stored(GhjState *s, List *exprs);
static bool ghj_probe_direct_ok(GhjState *s);
static void ghj_init_stored(GhjState *s, List *exprs);
static bool collect_exec_params(Node *node, Bitmapset **ids);
static bool collect_subplans(Node *node, List **subplans);
static void ghj_explainable_subplans(CustomScanState *node, CustomScan *cscan);
static void describe_columns(TupleDesc desc, int16 **attlen, bool **attbyval,
							 bool *has_byref);
static void init_key(GhKeySet *keys, int i, Expr *expr, int varno, Oid hashfn,
					 PlanState *ps);
static void ghj_release(GhjState *s);
static void ghj_publish(GhjState *s);
static void ghj_count_run(GhjState *s);
static const char *jointype_name(JoinType jointype);

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

/*
 * gpuhash_join_create_state makes the executor state of a GpuHashJoin plan
 * (its CreateCustomScanState callback).
 */
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
		/*
		 * An inner column is read from the record, where it is kept; an
		 * outer one from the batch, where it is stored.
		 */
		s->proj_col[c] = s->proj_inner[c] ?
			ghj_kept_index(s->inner_col, s->ninner_cols, s->proj_col[c]) :
			ghj_kept_index(s->stored_col, s->nstored, s->proj_col[c]);
		if (s->proj_col[c] < 0)
		{
			s->direct_proj = false;
			break;
		}
	}
}

/*
 * ghj_probe_direct_ok says whether ghj_probe_batch_direct can serve the
 * join: an inner or semi join projected directly, marking no inner rows,
 * whose keys are compared in line without allocating (so that a candidate
 * needs no per-tuple memory).
 */
static bool
ghj_probe_direct_ok(GhjState *s)
{
	if (!s->direct_proj ||
		(s->jointype != JOIN_INNER && s->jointype != JOIN_SEMI))
		return false;
	for (int k = 0; k < s->nkeys; k++)
		if (s->eq_fast[k] == GH_EQ_CALL || s->eq_fast[k] == GH_EQ_IMAGE)
			return false;
	return true;
}

/*
 * kept_columns lists in cols the columns (0-based) of a row of natts whose
 * attribute numbers are in need (pull_varattnos's offsets), all of them
 * where need holds a whole row or a system column; returns how many.
 */
static int
kept_columns(Bitmapset *need, int natts, int *cols)
{
	int			n = 0;
	int			x = -1;

	while ((x = bms_next_member(need, x)) >= 0)
	{
		AttrNumber	att = x + FirstLowInvalidHeapAttributeNumber;

		if (att <= 0 || att > natts)
		{
			for (int c = 0; c < natts; c++)
				cols[c] = c;
			return natts;
		}
		cols[n++] = att - 1;
	}
	return n;
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

	pull_varattnos((Node *) exprs, OUTER_VAR, &need);
	s->stored_col = palloc(sizeof(int) * Max(s->nouter, 1));
	s->nstored = kept_columns(need, s->nouter, s->stored_col);
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

/*
 * ghj_init_inner_stored chooses the inner columns a record keeps (after its
 * keys): those that exprs (the target list and quals, with INNER_VAR
 * references) read, and those that a key computed from an expression
 * reads, since a shared build that spills evaluates the keys again from the
 * rows it wrote (join_parts.c).  A key that is a column itself needs no
 * copy of that column: the record's key is its value (inner_key_col).  A
 * reference to a whole row or a system column keeps them all.  Sets
 * inner_col, ninner_cols, the kept columns' lengths, nullwords and
 * inner_has_byref (a kept column or a key by reference; the keys are set
 * up first).
 */
static void
ghj_init_inner_stored(GhjState *s, List *exprs)
{
	TupleDesc	desc = ExecGetResultType(s->inner_ps);
	Bitmapset  *need = NULL;
	int16	   *attlen;
	bool	   *attbyval;
	bool		unused;

	pull_varattnos((Node *) exprs, INNER_VAR, &need);
	s->inner_key_col = palloc(sizeof(int) * Max(s->nkeys, 1));
	for (int k = 0; k < s->nkeys; k++)
	{
		Expr	   *e = s->inner_keys.exprs[k]->expr;

		if (IsA(e, Var) && ((Var *) e)->varno == INNER_VAR &&
			((Var *) e)->varattno > 0 && ((Var *) e)->varattno <= desc->natts)
			s->inner_key_col[k] = ((Var *) e)->varattno - 1;
		else
		{
			s->inner_key_col[k] = -1;
			pull_varattnos((Node *) e, INNER_VAR, &need);
		}
	}
	describe_columns(desc, &attlen, &attbyval, &unused);
	s->inner_col = palloc(sizeof(int) * Max(desc->natts, 1));
	s->ninner_cols = kept_columns(need, desc->natts, s->inner_col);
	s->inner_attlen = palloc(sizeof(int16) * Max(s->ninner_cols, 1));
	s->inner_attbyval = palloc(sizeof(bool) * Max(s->ninner_cols, 1));
	s->inner_has_byref = s->inner_key_byref;
	for (int j = 0; j < s->ninner_cols; j++)
	{
		s->inner_attlen[j] = attlen[s->inner_col[j]];
		s->inner_attbyval[j] = attbyval[s->inner_col[j]];
		if (!s->inner_attbyval[j])
			s->inner_has_byref = true;
	}
	s->nullwords = (s->ninner_cols + 63) / 64;
	/*
	 * The build deforms the inner row up to the last column it keeps or
	 * reads a key from (a Seq Scan child may return whole rows: join_plan.c);
	 * a key expression deforms what it reads itself.
	 */
	s->inner_deform = 0;
	for (int j = 0; j < s->ninner_cols; j++)
		s->inner_deform = Max(s->inner_deform, s->inner_col[j] + 1);
	for (int k = 0; k < s->nkeys; k++)
		s->inner_deform = Max(s->inner_deform, s->inner_key_col[k] + 1);
	/* the record's by-reference positions, keys first (ghj_shared_add) */
	s->byref_pos = palloc(sizeof(int) * (s->nkeys + s->ninner_cols));
	s->nbyref_pos = 0;
	for (int k = 0; k < s->nkeys + s->ninner_cols; k++)
	{
		int16		typlen;

		if (byref_attr(s, k, &typlen))
			s->byref_pos[s->nbyref_pos++] = k;
	}
	/* only ghj_load_inner fills inner_slot, and only the kept columns */
	memset(s->inner_slot->tts_isnull, true, sizeof(bool) * desc->natts);
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

/* remap is remap_index_vars of node, for a join of nouter outer columns. */
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
 * init_key sets up key i of a side: expr, remapped to varno (OUTER_VAR or
 * INNER_VAR) references, hashed by the function hashfn.  Its collation must
 * be set already.
 */
static void
init_key(GhKeySet *keys, int i, Expr *expr, int varno, Oid hashfn,
		 PlanState *ps)
{
	keys->exprs[i] = ExecInitExpr(expr, ps);
	gh_key_set_hash(keys, i, hashfn, exprType((Node *) expr));
	if (IsA(expr, Var) && ((Var *) expr)->varno == varno &&
		((Var *) expr)->varattno > 0)
		keys->att[i] = ((Var *) expr)->varattno;
}

/*
 * ghj_begin initializes the children and turns the plan into the state:
 * keys, quals and projection over the outer and inner slots, the columns a
 * batch keeps, the memory contexts and the batch size.
 */
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
	s->outer_scan_refusal = gh_scan_source_refusal(s->outer_ps, estate);

	s->outer_slot = ExecInitExtraTupleSlot(estate, ExecGetResultType(s->outer_ps),
										   &TTSOpsVirtual);
	s->inner_slot = ExecInitExtraTupleSlot(estate, ExecGetResultType(s->inner_ps),
										   &TTSOpsVirtual);
	describe_columns(ExecGetResultType(s->outer_ps), &s->outer_attlen,
					 &s->outer_attbyval, &s->outer_has_byref);
	Assert(ExecGetResultType(s->outer_ps)->natts == s->nouter);
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
	gh_key_set_init(&s->outer_keys, s->nkeys, s->coll, s->own_mix);
	gh_key_set_init(&s->inner_keys, s->nkeys, s->coll, s->own_mix);
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
		s->eq_fast[i] = gh_key_eq_kind(s->eq[i].fn_oid, s->coll[i]);
		s->own_mix[i] = gh_key_int_mix_ok(s->outer_keys.fast[i],
										  s->inner_keys.fast[i]);
		s->swapped[i] = list_nth_int(swapped, i) != 0;
		if (!s->inner_keys.byval[i])
		{
			s->inner_key_byref = true;
			s->nbyref_keys++;
		}
		i++;
	}
	s->outer_keys_plain = true;
	for (int k = 0; k < s->nkeys; k++)
		if (s->outer_keys.att[k] <= 0 || !s->own_mix[k])
			s->outer_keys_plain = false;
	tlist = remap(cscan->scan.plan.targetlist, s->nouter);
	joinquals = remap(s->joinquals_expr, s->nouter);
	otherquals = remap(cscan->scan.plan.qual, s->nouter);
	ghj_init_inner_stored(s, list_make3(tlist, joinquals, otherquals));
	s->stride = s->nkeys + s->ninner_cols + s->nullwords;
	s->build.rec_base = palloc0(sizeof(Datum) * (s->nkeys + s->ninner_cols));
	s->joinqual = ExecInitQual(joinquals, &node->ss.ps);
	s->otherqual = ExecInitQual(otherquals, &node->ss.ps);
	s->proj = ExecBuildProjectionInfo(tlist, node->ss.ps.ps_ExprContext,
									  node->ss.ps.ps_ResultTupleSlot,
									  &node->ss.ps, NULL);
	ghj_init_stored(s, list_make3(tlist, joinquals, otherquals));
	ghj_init_direct_proj(s, tlist);
	s->probe_direct = ghj_probe_direct_ok(s);
	ghj_explainable_subplans(node, cscan);

	s->build_cxt = AllocSetContextCreate(CurrentMemoryContext,
										 "GpuHashJoin build",
										 ALLOCSET_DEFAULT_SIZES);
	s->build_tmp_cxt = AllocSetContextCreate(CurrentMemoryContext,
											 "GpuHashJoin build copies",
											 ALLOCSET_DEFAULT_SIZES);
	/* small blocks: what it holds counts against the budget (join_batch.c) */
	s->batch_cxt = AllocSetContextCreate(CurrentMemoryContext,
										 "GpuHashJoin batch",
										 ALLOCSET_DEFAULT_MINSIZE,
										 ALLOCSET_DEFAULT_INITSIZE,
										 64 * 1024);
	/*
	 * A batch never needs to hold much more than the outer side is expected
	 * to return: a large gpuhash.batch_rows does not make a small join
	 * allocate arrays for millions of rows.  Never below the default, so a
	 * low estimate cannot make a large join take many small batches.
	 */
	s->probe.batch_cap = (uint32)
		Min((double) gpuhash_batch_rows,
			Max((double) GPUHASH_BATCH_ROWS_DEFAULT,
				2.0 * ((Plan *) linitial(cscan->custom_plans))->plan_rows));
	ghj_batch_setup(s);
	ghj_parts_begin(s);
	ghj_batch_descs(s, ExecGetResultType(s->inner_ps),
					ExecGetResultType(s->outer_ps));

	/* a GPU join's context can be made while the inner side is read */
	if ((eflags & EXEC_FLAG_EXPLAIN_ONLY) == 0)
		gpuhash_prewarm_gpu(cscan->scan.plan.parallel_aware);
}

/*
 * ghj_exec returns the next row of the join, or NULL when there is none:
 * see GhjExecState for the states it goes through.
 */
static TupleTableSlot *
ghj_exec(CustomScanState *node)
{
	GhjState   *s = (GhjState *) node;
	ExprContext *econtext = node->ss.ps.ps_ExprContext;
	TupleTableSlot *result;

	ghj_reset(econtext);
	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		switch (s->state)
		{
			case GHJ_BUILD_TABLE:
				ghj_build(s);

				/*
				 * No inner row can match: inner and semi joins are done,
				 * unless later batches hold inner rows.
				 */
				if (s->build.ninner == 0 && s->batch.nbatch == 1 &&
					(s->jointype == JOIN_INNER || s->jointype == JOIN_SEMI))
					s->probe.outer_done = true;
				s->state = GHJ_NEXT_BATCH;
				break;

			case GHJ_NEXT_BATCH:
				if (!s->probe.outer_done && ghj_next_batch(s))
				{
					s->state = GHJ_PROBE_BATCH;
					break;
				}
				if (s->jointype == JOIN_RIGHT || s->jointype == JOIN_FULL)
				{
					s->state = GHJ_UNMATCHED_INNER;
					s->probe.inner_pos = 0;
					break;
				}
				s->state = GHJ_NEED_NEW_BATCH;
				break;

			case GHJ_PROBE_BATCH:
				result = s->probe_direct ? ghj_probe_batch_direct(s) :
					ghj_probe_batch(s, econtext);
				if (result)
					return result;
				s->state = GHJ_NEXT_BATCH;
				break;

			case GHJ_UNMATCHED_INNER:
				result = ghj_next_unmatched_inner(s, econtext);
				if (result)
					return result;
				s->state = GHJ_NEED_NEW_BATCH;
				break;

			case GHJ_NEED_NEW_BATCH:
				if (ghj_batch_advance(s))
				{
					ghj_reset_probe(s);
					s->state = GHJ_NEXT_BATCH;
					break;
				}
				/* a spilled shared build: the next partition (join_parts.c) */
				if (s->parts.curpart >= 0 && ghj_next_part(s))
				{
					ghj_reset_probe(s);
					s->state = GHJ_BUILD_TABLE;
					break;
				}
				ghj_publish(s);
				s->state = GHJ_DONE;
				return NULL;

			case GHJ_DONE:
				return NULL;
		}
	}
}

/*
 * ghj_release frees the table and everything the build made, and closes
 * the batches' files and the partitions'.
 */
static void
ghj_release(GhjState *s)
{
	ghj_shared_exchange_end(s);
	ghj_parts_end(s);
	ghj_free_table(s);
	ghj_batch_end(s);
}

/*
 * ghj_publish puts a parallel worker's counters into shared memory: those
 * of join_parallel.c, then the batches'.
 */
static void
ghj_publish(GhjState *s)
{
	GhjStats   *st;

	ghj_publish_stats(s);
	if (s->par.shared == NULL || !IsParallelWorker() ||
		ParallelWorkerNumber < 0 || ParallelWorkerNumber >= s->par.shared->nworkers)
		return;
	st = &s->par.shared->stats[ParallelWorkerNumber];
	st->inner_rows = s->parts.nparts_joined > 0 ? s->parts.part_inner_rows :
		Max(st->inner_rows, s->build.n_inner_read);
	st->nbatch = Max(Max(s->batch.nbatch, s->batch.nbatch_original), s->batch.nbatch_seen);
	st->nbatch_original = s->batch.nbatch_original;
	st->nbatch_planned = s->batch.nbatch_planned;
	st->mem_peak = s->batch.mem_peak;
	st->dev_peak = s->build.dev_peak;
	st->over_budget = s->batch.over_budget;
	st->device_ms += s->build.dev_ms_done;
}

/*
 * ghj_count_run counts the join's run in the statistics (monitor.c), once
 * for all its participants: the leader counts it, with the workers' device
 * time, batches and fallbacks as they published them; a worker counts
 * only its copies.  A join that never
 * built a table (EXPLAIN without ANALYZE, a LIMIT reached first) is not
 * counted.
 */
static void
ghj_count_run(GhjState *s)
{
	bool		ran = s->build.n_builds > 0;
	GhTarget	target = s->build.target;
	GhFallback	why = ghj_run_fallback(s);
	double		device_ms = s->build.dev_ms_done +
		(s->build.table ? s->build.table->device_ms : 0);
	int			nbatch = Max(Max(s->batch.nbatch, s->batch.nbatch_original),
							 s->batch.nbatch_seen);
	uint64		spilled = 0;

	if (IsParallelWorker())
	{
		gh_mon_flush();
		return;
	}
	for (int w = 0; s->shared_copy && w < s->shared_copy->nworkers; w++)
	{
		GhjStats   *st = &s->shared_copy->stats[w];

		if (!st->valid)
			continue;
		if (!ran || st->target == GH_TARGET_GPU)
			target = st->target;
		ran = true;
		if (why == GH_FB_NONE)
			why = st->fallback;
		device_ms += st->device_ms;
		nbatch = Max(nbatch, st->nbatch);
	}
	if (!ran)
		return;
	/* batch 0 stays in memory; a shared build's partitions all go to disk */
	if (nbatch > 1)
		spilled = nbatch - 1;
	if (s->shared_copy && s->shared_copy->nparts > 0)
		spilled += s->shared_copy->nparts;
	gh_mon_run(GH_PLAN_JOIN, target, why, device_ms, spilled);
}

/* ghj_end counts the run, frees what the join holds and ends its children. */
static void
ghj_end(CustomScanState *node)
{
	GhjState   *s = (GhjState *) node;

	ghj_count_run(s);
	ghj_release(s);
	ghj_shared_end(s);
	/* the copies releasing made count now, before a worker reports done */
	gh_mon_flush();
	ghj_outer_scan_end(s);
	ExecEndNode(s->outer_ps);
	ExecEndNode(s->inner_ps);
}

/*
 * ghj_rescan keeps the table unless the inner side depends on a changed
 * parameter or the join has more than one batch, as nodeHashjoin.c does;
 * the outer side is always read again.
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
	if (s->batch.nbatch > 1)
	{
		/* the table holds one batch of several: build them again */
		ghj_release(s);
		if (s->inner_ps->chgParam == NULL)
			ExecReScan(s->inner_ps);
	}
	else if (s->build.built && s->shared_build)
	{
		/* a shared build's chunks go with the parallel segment: read again */
		ghj_release(s);
		if (s->inner_ps->chgParam == NULL)
			ExecReScan(s->inner_ps);
	}
	else if (s->build.built)
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
		else if (s->build.matched)
			memset(s->build.matched, 0, sizeof(uint32) * ((s->build.ninner + 31) / 32 + 1));
	}
	else if (s->inner_ps->chgParam == NULL)
		ExecReScan(s->inner_ps);
	ghj_reset_probe(s);
	s->state = s->build.built ? GHJ_NEXT_BATCH : GHJ_BUILD_TABLE;
	ghj_outer_scan_end(s);
	if (s->outer_ps->chgParam == NULL)
		ExecReScan(s->outer_ps);
}

/* ghj_estimate_dsm is the room of the join's part of the parallel segment. */
static Size
ghj_estimate_dsm(CustomScanState *node, ParallelContext *pcxt)
{
	return ghj_shared_size(pcxt->nworkers);
}

/* ghj_init_dsm sets up the join's part of the parallel segment. */
static void
ghj_init_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	GhjState   *s = (GhjState *) node;

	memset(coordinate, 0, ghj_estimate_dsm(node, pcxt));
	s->par.shared = (GhjShared *) coordinate;
	ghj_shared_init(s->par.shared, pcxt->nworkers);
	ghj_parts_init(s->par.shared, pcxt->seg);
	if (s->shared_build)
		ghj_shared_create_area(s);
}

/*
 * ghj_reinit_dsm prepares the segment for another run (a rescan of the
 * Gather, its workers gone).
 */
static void
ghj_reinit_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	GhjState   *s = (GhjState *) node;

	s->par.shared = (GhjShared *) coordinate;
	ghj_parts_reinit(s->par.shared, node->ss.ps.state->es_query_dsa);
	ghj_shared_reinit(s->par.shared, s->par.store_area);
}

/* ghj_init_worker finds the join's part of the segment in a worker. */
static void
ghj_init_worker(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	GhjState   *s = (GhjState *) node;

	s->par.shared = (GhjShared *) coordinate;
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

	if (s->par.shared == NULL)
		return;
	if (IsParallelWorker())
	{
		ghj_publish(s);
		return;
	}
	size = ghj_shared_size(s->par.shared->nworkers);
	if (s->shared_copy == NULL)
		s->shared_copy = MemoryContextAlloc(node->ss.ps.state->es_query_cxt, size);
	memcpy(s->shared_copy, s->par.shared, size);
	s->par.shared = NULL;
}

/* jointype_name is the join type as EXPLAIN shows it. */
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

/*
 * explain_text_line starts a TEXT line of figures: indented, and for a
 * worker headed "Worker N:" as PostgreSQL heads its per-worker lines.
 */
static void
explain_text_line(int worker, ExplainState *es)
{
	appendStringInfoSpaces(es->str, es->indent * 2);
	if (worker >= 0)
		appendStringInfo(es->str, "Worker %d:  ", worker);
}

/*
 * explain_join_figures shows one participant's figures, st (worker is -1
 * for the leader; timed: it has a table, so a device time; shared_build: it
 * has a shared build's phases).  TEXT groups them on a few lines, as Hash groups its
 * Buckets, Batches and Memory Usage: where the work ran and how long it
 * took, then the rows; the phases of the build and of the probe are
 * VERBOSE's.  Other formats give each figure its own property.  Times
 * appear only under TIMING, as PostgreSQL's own.
 */
static void
explain_join_figures(const GhjStats *st, bool timed, bool shared_build,
					 int worker, ExplainState *es)
{
	bool		phases = es->timing && es->verbose;

	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		explain_text_line(worker, es);
		appendStringInfo(es->str, "Device: %s", gpuhash_target_name(st->target));
		if (st->shared_table)
			appendStringInfoString(es->str, "  Table: one for all participants");
		if (es->timing)
		{
			appendStringInfo(es->str, "  Build Time: %.3f ms", st->build_ms);
			if (timed)
				appendStringInfo(es->str, "  Device Time: %.3f ms", st->device_ms);
			if (st->context_ms >= 1.0)
				appendStringInfo(es->str, "  Context Wait: %.3f ms", st->context_ms);
		}
		appendStringInfoChar(es->str, '\n');

		explain_text_line(worker, es);
		appendStringInfo(es->str, "Inner Rows: " UINT64_FORMAT "  Probe Chunks: " UINT64_FORMAT
						 "  Candidates: " UINT64_FORMAT "  Verified Matches: " UINT64_FORMAT,
						 st->inner_rows, st->batches, st->candidates, st->matches);
		if (st->cpu_batches > 0)
			appendStringInfo(es->str, "  Chunks Before GPU: " UINT64_FORMAT, st->cpu_batches);
		appendStringInfoChar(es->str, '\n');

		if (phases && shared_build)
		{
			explain_text_line(worker, es);
			appendStringInfo(es->str, "Build Phases: load=%.3f ms store=%.3f ms table=%.3f ms\n",
							 st->load_ms, st->store_ms, st->table_ms);
		}
		if (phases && timed)
		{
			explain_text_line(worker, es);
			appendStringInfo(es->str, "Probe Phases: outer=%.3f ms device=%.3f ms order=%.3f ms rows=%.3f ms\n",
							 st->outer_ms, st->device_ms, st->order_ms, st->rows_ms);
		}
		if (st->outer_scanned)
		{
			explain_text_line(worker, es);
			gh_explain_scan_text(es->str, &st->outer_scan, false, es->timing);
			appendStringInfoChar(es->str, '\n');
		}
		return;
	}

	ExplainPropertyText("Device", gpuhash_target_name(st->target), es);
	if (worker >= 0)
		ExplainPropertyBool("Shared Table", st->shared_table, es);
	if (es->timing)
	{
		ExplainPropertyFloat("Build Time", "ms", st->build_ms, 3, es);
		if (timed)
			ExplainPropertyFloat("Device Time", "ms", st->device_ms, 3, es);
		ExplainPropertyFloat("Context Wait", "ms", st->context_ms, 3, es);
	}
	ExplainPropertyUInteger("Inner Rows", NULL, st->inner_rows, es);
	ExplainPropertyUInteger("Probe Chunks", NULL, st->batches, es);
	ExplainPropertyUInteger("Candidates", NULL, st->candidates, es);
	ExplainPropertyUInteger("Verified Matches", NULL, st->matches, es);
	if (st->cpu_batches > 0)
		ExplainPropertyUInteger("Chunks Before GPU", NULL, st->cpu_batches, es);
	if (phases && shared_build)
	{
		ExplainPropertyFloat("Build Load Time", "ms", st->load_ms, 3, es);
		ExplainPropertyFloat("Build Store Time", "ms", st->store_ms, 3, es);
		ExplainPropertyFloat("Build Table Time", "ms", st->table_ms, 3, es);
	}
	if (phases && timed)
	{
		ExplainPropertyFloat("Probe Outer Time", "ms", st->outer_ms, 3, es);
		ExplainPropertyFloat("Probe Order Time", "ms", st->order_ms, 3, es);
		ExplainPropertyFloat("Probe Rows Time", "ms", st->rows_ms, 3, es);
	}
	if (st->outer_scanned)
		gh_explain_scan_counts(&st->outer_scan, false, es);
}

/*
 * explain_join_table shows the table as Hash shows its own: its slots and
 * how full they are, the inner side's batches (partitions, as Hash's
 * Batches), and the memory at its peak.
 */
static void
explain_join_table(GhjState *s, int nbatch, int nbatch_original,
				   int nbatch_planned, Size mem_peak, Size dev_peak,
				   ExplainState *es)
{
	uint32		slots = s->build.table ? s->build.table->mm.capacity : 0;
	double		lf = slots ? (double) s->build.table->mm.ndistinct / slots : 0;

	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		appendStringInfoSpaces(es->str, es->indent * 2);
		if (s->build.table)
			appendStringInfo(es->str, "Buckets: %u  Load Factor: %.3f  ", slots, lf);
		appendStringInfo(es->str, "Batches: %d", nbatch);
		if (nbatch_planned > 1 && nbatch == 1)
			appendStringInfo(es->str, " (planned %d)", nbatch_planned);
		else if (nbatch != nbatch_original)
			appendStringInfo(es->str, " (originally %d)", nbatch_original);
		appendStringInfo(es->str, "  Memory Usage: " UINT64_FORMAT "kB",
						 (uint64) (mem_peak + 1023) / 1024);
		if (s->build.table)
			appendStringInfo(es->str, "  Device Memory: " UINT64_FORMAT "kB",
							 (uint64) (dev_peak + 1023) / 1024);
		appendStringInfoChar(es->str, '\n');
		return;
	}
	if (s->build.table)
	{
		ExplainPropertyUInteger("Hash Buckets", NULL, slots, es);
		ExplainPropertyFloat("Load Factor", NULL, lf, 3, es);
	}
	ExplainPropertyInteger("Hash Batches", NULL, nbatch, es);
	ExplainPropertyInteger("Original Hash Batches", NULL, nbatch_original, es);
	if (nbatch_planned > 1)
		ExplainPropertyInteger("Planned Hash Batches", NULL, nbatch_planned, es);
	ExplainPropertyUInteger("Memory Usage", "kB", (mem_peak + 1023) / 1024, es);
	if (s->build.table)
		ExplainPropertyUInteger("Device Memory", "kB", (dev_peak + 1023) / 1024, es);
}

/*
 * explain_join_workers shows each worker's figures: "Worker N:" lines in
 * TEXT, a "Join Workers" list of Worker groups in the other formats.  Not
 * "Workers": PostgreSQL adds that key itself to every node of a parallel
 * plan under ANALYZE, and a second one would hide one from JSON readers.
 */
static void
explain_join_workers(GhjState *s, ExplainState *es)
{
	bool		opened = false;

	for (int w = 0; w < s->shared_copy->nworkers; w++)
	{
		GhjStats   *st = &s->shared_copy->stats[w];

		if (!st->valid)
			continue;
		if (es->format != EXPLAIN_FORMAT_TEXT)
		{
			if (!opened)
				ExplainOpenGroup("Join Workers", "Join Workers", false, es);
			opened = true;
			ExplainOpenGroup("Worker", NULL, true, es);
			ExplainPropertyInteger("Worker Number", NULL, w, es);
		}
		explain_join_figures(st, true, s->shared_build, w, es);
		if (es->format != EXPLAIN_FORMAT_TEXT)
			ExplainCloseGroup("Worker", NULL, true, es);
	}
	if (opened)
		ExplainCloseGroup("Join Workers", "Join Workers", false, es);
}

/*
 * ghj_explain adds the join's properties to EXPLAIN, and with ANALYZE what
 * the build and the probe did, in this process and in each worker.
 */
static void
ghj_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	GhjState   *s = (GhjState *) node;
	List	   *context;
	bool		useprefix = list_length(es->rtable) > 1 || es->verbose;
	const char *holder;

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
	if (s->outer_scan_refusal == NULL)
		ExplainPropertyText("Outer Device Scan", gh_scan_source_table(s->outer_ps), es);
	else if (es->verbose && IsA(s->outer_ps->plan, SeqScan))
		ExplainPropertyText("Outer Device Scan",
							psprintf("off (%s)", s->outer_scan_refusal), es);
	if (es->analyze && s->build.n_builds > 0)
	{
		int			nbatch = Max(Max(s->batch.nbatch, s->batch.nbatch_original),
								 s->batch.nbatch_seen);
		int			nbatch_original = s->batch.nbatch_original;
		int			nbatch_planned = s->batch.nbatch_planned;
		Size		mem_peak = s->batch.mem_peak;
		Size		dev_peak = s->build.dev_peak;
		uint8		over_budget = s->batch.over_budget;
		GhjStats	me = {0};

		/* the batches and memory of the participant that had the most */
		for (int w = 0; s->shared_copy && w < s->shared_copy->nworkers; w++)
		{
			GhjStats   *st = &s->shared_copy->stats[w];

			if (!st->valid)
				continue;
			nbatch = Max(nbatch, st->nbatch);
			nbatch_original = Max(nbatch_original, st->nbatch_original);
			nbatch_planned = Max(nbatch_planned, st->nbatch_planned);
			mem_peak = Max(mem_peak, st->mem_peak);
			dev_peak = Max(dev_peak, st->dev_peak);
			over_budget |= st->over_budget;
		}

		ghj_fill_stats(s, &me);
		/*
		 * With batches, the store holds one batch: count what was read; a
		 * shared build's partitions (join_parts.c): those this one joined.
		 */
		me.inner_rows = s->parts.nparts_joined > 0 ? s->parts.part_inner_rows :
			s->batch.nbatch > 1 ? s->build.n_inner_read :
			s->build.ninner + s->build.n_nullkey;
		if (s->build.table)
			me.device_ms += s->build.dev_ms_done;
		/* the leader says who holds the table: Table Held By, below */
		me.shared_table = false;
		explain_join_figures(&me, s->build.table != NULL, s->build.store_shared, -1, es);
		explain_join_table(s, nbatch, nbatch_original, nbatch_planned,
						   mem_peak, dev_peak, es);

		holder = s->build.table ? gh_table_holder(s->build.table) : NULL;
		if (holder != NULL)
			ExplainPropertyText("Table Held By", holder, es);
		if (over_budget)
			ExplainPropertyText("Over Budget",
								(over_budget & GHJ_OVER_SKEW) ?
								"a batch whose rows share their hash bits could not be split" :
								"more batches would have taken more memory in file buffers than the batch",
								es);
	}
	if (es->analyze && s->shared_copy != NULL)
	{
		/* a shared build that spilled (join_parts.c) */
		if (s->shared_copy->nparts > 0)
			ExplainPropertyInteger("Shared Partitions", NULL,
								   s->shared_copy->nparts, es);
		explain_join_workers(s, es);
	}
}
