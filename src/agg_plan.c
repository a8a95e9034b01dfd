/*-------------------------------------------------------------------------
 * agg_plan.c
 *	  Planning of GpuHashAgg: the grouping stage's path hook, the cost
 *	  model, the CustomScan plan and the planner_hook that packs a parallel
 *	  input.
 *
 * GpuHashAgg runs GROUP BY and plain aggregates of unchanged SQL on the
 * device engine of gpuhash_aggregate (one engine, two front doors).  Its
 * planning, in the order PostgreSQL's planner calls it:
 *
 * 1. create_upper_paths_hook (gha_upper_paths), for the grouping stage
 *	  (UPPERREL_GROUP_AGG), asks agg_path.c whether the engine runs it and
 *	  with which input row (gha_check_query).  Anything else keeps
 *	  PostgreSQL's plan.
 * 2. It offers a custom path beside PostgreSQL's own Agg paths, whose child
 *	  is the input's cheapest path projected to the GROUP BY expressions and
 *	  then the distinct aggregate arguments: the engine's input row
 *	  (gh_agg_run_add).  The node itself runs in one process (it reads its
 *	  input whole), but two paths are offered, one over the input's cheapest
 *	  path and one over its cheapest partial path, projected in the workers
 *	  under a Gather.
 * 3. Device filters: where the input is a table's sequential scan whose
 *	  quals the device can evaluate (gha_device_quals) together with every
 *	  aggregate argument, the paths are offered a second time over the scan
 *	  passing every row (unfiltered_scan); a hidden count of the rows that
 *	  pass (GHA_PRIV_FILTER) drops, first in the node's qual, the groups of
 *	  none.  gpuhash.agg_device_filter (on) offers them.
 * 4. cost_gha prices each path.  gpuhash.force_agg plans GpuHashAgg
 *	  wherever it is legal, on the CPU twin too (the tests), and prefers the
 *	  parallel input; gpuhash.enable_agg (on by default) lets the cost model
 *	  offer it on a GPU, never on the CPU twin.
 * 5. gha_plan_path makes the CustomScan.  It has no scan relation; its scan
 *	  tuple (custom_scan_tlist) is the keys and then the Aggrefs, the
 *	  engine's output row, so setrefs turns every reference of the target
 *	  list and of HAVING (the scan's qual) into an INDEX_VAR of that tuple
 *	  and ExecScan evaluates them per group.  What else the executor
 *	  (agg_exec.c) needs is in custom_private, as gpuhash_agg.h's
 *	  GhaScanPrivateIndex lays it out.
 * 6. Once the plan is finished, the planner_hook (gha_planner) puts
 *	  gpuhash_aggregate's GpuHashAggPack between such a Gather and its child
 *	  when the engine takes packets (every GROUP BY key of a type whose
 *	  values can be copied, at most GH_AGG_MAX_KEYS of them; aggregate_dict.c
 *	  numbers the ones the device cannot compare as they are): the workers
 *	  then send device-ready packets, not rows (GHA_PRIV_PACKED).  It works
 *	  on the finished plan, as gpuhash_aggregate's packing does
 *	  (aggregate_pack.c): the engine's plan is made from the CustomScan as
 *	  the executor will make it (gha_engine_plan), and the new node, which
 *	  does not go through setrefs, is numbered after every node of the plan.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/stratnum.h"
#include "catalog/pg_opfamily_d.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planmain.h"
#include "optimizer/planner.h"
#include "optimizer/tlist.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"

#include "aggregate.h"
#include "gpuhash_agg.h"
#include "gpuhash_join.h"

bool		gpuhash_enable_agg = true;
bool		gpuhash_agg_device_filter = true;
bool		gpuhash_force_agg = false;

/*
 * What a value of a text min or max costs the leader, in operators: a copy,
 * a hash lookup and a comparison in the collation, several times what a
 * staged integer column costs (priced a quarter of an operator below);
 * bench/results/2026-11-29-gpuhashagg-comment-measurements.md.
 */
#define GHA_TEXT_EXTREME_OPS 2.0

/*
 * What the leader's lookup of a numbered key's value costs, in operators:
 * each packet brings the distinct values of its rows once, and the leader
 * gives each its run-wide number (aggregate_batch.c's number_packet_keys),
 * a hash of the value and a probe of a dictionary.  Measured on an H200
 * host (issue 37):
 * - a dictionary that outgrows the caches: a GROUP BY over a text key of
 *	 about 500K values in 50M rows spent about 15 s there, 0.3 us a lookup,
 *	 against native's 11.9 s for the whole query; PostgreSQL's price of that
 *	 plan, scaled from 2M rows, makes that about 50 operators;
 * - one whose values the byte cache holds (aggregate_dict.c, at most
 *	 GHA_NUMBER_CACHED values): H2O's q2, two text keys of 100 values in
 *	 packets of about 4,200 rows, copied its packets in 30 ms per 5M rows
 *	 where two integer keys of 100 values took 11 ms (on the CPU twin of a
 *	 2-core host; the copying is the same code on a GPU host).  The 236K
 *	 lookups are about 4 ms of the difference, 17 ns each where copying a
 *	 row took 2.2 ns: about what cost_gha charges a row's three columns
 *	 (0.17 operators), so a lookup is priced at 2.
 * The first figure is the leader's whole stall, not the lookup's time
 * alone: with a lookup a row the leader falls behind the workers' queues.
 *
 * Where the participants' shared dictionary (aggregate_dict.c) holds every
 * value of the numbered keys, the leader looks each value up once (and
 * copies it once per worker that introduces it), and the workers find a
 * row's number in their own caches, a cached lookup a row shared among
 * them (numbered_shared).  On an H200, H2O's q3 (10^5 text values over
 * 10^7 rows, 16 workers) then ran in 526 ms against native's 2380 ms
 * (bench/results/2026-11-29-h2o-shared-budget-gpu.md), where the per-packet
 * lookups above had priced it out.
 */
#define GHA_NUMBER_OPS 50.0
#define GHA_NUMBER_OPS_CACHED 2.0
#define GHA_NUMBER_CACHED 4096.0

/*
 * custom_private of the CustomPath, for gha_plan_path: what gha_check_query
 * found, in this order.
 */
enum GhaPathPrivateIndex
{
	GHA_PATH_KEYS,				/* list: the keys (GhaQuery's keys) */
	GHA_PATH_EQOPS,				/* OID list: their equality operators */
	GHA_PATH_AGGS,				/* list: the Aggrefs, the hidden count too */
	GHA_PATH_CALL_COLS,			/* integer list: each Aggref's column */
	GHA_PATH_HAVING,			/* list: HAVING, implicitly ANDed */
	GHA_PATH_EXPRS,				/* list: device expressions' programs */
	GHA_PATH_KEY_COLS,			/* integer list: as GHA_PRIV_KEY_COLS */
	GHA_PATH_KEY_YEARS,			/* integer list: as GHA_PRIV_KEY_YEARS */
	GHA_PATH_QUALS,				/* list: the quals the device evaluates */
	GHA_PATH_FILTER				/* Integer: as GHA_PRIV_FILTER */
};

static void gha_upper_paths(PlannerInfo *root, UpperRelationKind stage,
							RelOptInfo *input_rel, RelOptInfo *output_rel,
							void *extra);
static bool reads_unreturned(PathTarget *target, Path *path);
static void offer_paths(PlannerInfo *root, RelOptInfo *input_rel,
						RelOptInfo *output_rel, GhaQuery *q, List *having,
						double ngroups, double in_rows, Path *input,
						Path *partial);
static void add_gha_path(RelOptInfo *output_rel, Path *child, GhaQuery *q,
						 List *having, double ngroups);
static Plan *gha_plan_path(PlannerInfo *root, RelOptInfo *rel,
						   CustomPath *best_path, List *tlist, List *clauses,
						   List *custom_plans);
static PlannedStmt *gha_planner(Query *parse, const char *query_string,
								int cursorOptions, ParamListInfo boundParams);

static create_upper_paths_hook_type prev_upper_paths_hook = NULL;
static planner_hook_type prev_planner_hook = NULL;

static CustomPathMethods gha_path_methods = {
	.CustomName = GHA_NAME,
	.PlanCustomPath = gha_plan_path,
};

static CustomScanMethods gha_scan_methods = {
	.CustomName = GHA_NAME,
	.CreateCustomScanState = gha_create_state,
};

/*
 * gpuhash_init_agg_path defines the planner's settings, installs the hooks
 * and registers the scan (_PG_init).
 */
void
gpuhash_init_agg_path(void)
{
	DefineCustomBoolVariable("gpuhash.enable_agg",
							 "Lets the planner choose GpuHashAgg for GROUP BY and aggregates on the GPU.",
							 "Its cost model plans it on a GPU (gpuhash.device gpu, or auto with one); off: only gpuhash.force_agg plans it.",
							 &gpuhash_enable_agg,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gpuhash.agg_device_filter",
							 "Lets GpuHashAgg evaluate the quals of the table it reads on the device.",
							 "Where the device can evaluate every qual of the table and every aggregate argument with them, "
							 "GpuHashAgg is also offered with the scan passing every row; off: the scan filters its rows.",
							 &gpuhash_agg_device_filter,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gpuhash.force_agg",
							 "Plans GpuHashAgg wherever it is legal, whatever the cost.",
							 "Developer option, for tests: on the CPU twin as well.",
							 &gpuhash_force_agg,
							 false,
							 PGC_USERSET,
							 GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	RegisterCustomScanMethods(&gha_scan_methods);
	prev_upper_paths_hook = create_upper_paths_hook;
	create_upper_paths_hook = gha_upper_paths;
	prev_planner_hook = planner_hook;
	planner_hook = gha_planner;
}

/*
 * unfiltered_scan is a copy of scan, rel's sequential scan, or the scan
 * under its projection (NULL where it is neither), that passes every row:
 * the quals the device evaluates instead are left out of its rows and its
 * CPU cost (cost_seqscan's baserestrictcost), and gha_plan_path takes them
 * out of its plan.
 */
static Path *
unfiltered_scan(Path *scan, RelOptInfo *rel)
{
	Path	   *p;
	double		ratio;

	/* the scan/join target's projection: the child projects anyway */
	if (scan != NULL && IsA(scan, ProjectionPath))
		scan = ((ProjectionPath *) scan)->subpath;
	if (scan == NULL || !IsA(scan, Path) || scan->pathtype != T_SeqScan ||
		scan->parent != rel || scan->param_info != NULL)
		return NULL;
	ratio = rel->rows > 0 && rel->tuples > rel->rows ? rel->tuples / rel->rows : 1.0;
	p = makeNode(Path);
	memcpy(p, scan, sizeof(Path));
	p->rows = clamp_row_est(scan->rows * ratio);
	p->startup_cost = Max(p->startup_cost - rel->baserestrictcost.startup, 0);
	p->total_cost = Max(p->total_cost - rel->baserestrictcost.startup -
						rel->baserestrictcost.per_tuple * p->rows, p->startup_cost);
	return p;
}

/*
 * spill_cost is the cost of the rows that do not fit the budget, see
 * cost_gha.
 */
static Cost
spill_cost(double rows, double ngroups, int nkeys, int ncols, bool device_keys,
		   int participants)
{
	/* per group: count, keys and NULL mask, a column's accumulators, slots */
	double		group_bytes = 8 + 9.0 * nkeys + 44.0 * ncols + 16.0 / gpuhash_load_factor;
	double		need;
	/* a parallel input's run has every participant's (gh_agg_spill_share) */
	double		budget = (double) get_hash_memory_limit() * Max(participants, 1);
	double		spilled;
	double		pages;

	/*
	 * Device keys on the GPU keep their groups in device memory, within the
	 * device budget of aggregate_spill.c: when no setting limits it, half of
	 * the GPU, which the planner does not ask the GPU for.
	 */
	if (device_keys)
	{
		Size		limit = gh_agg_device_limit();

		if (limit == 0)
			return 0;
		budget = (double) limit;
	}
	else
	{
		group_bytes += 24.0 * nkeys;	/* the representatives on the host */
		/* the batch takes up to the other half (gh_agg_batch_cap) */
		budget /= 2;
	}
	need = ngroups * group_bytes;
	if (need <= budget || nkeys == 0)
		return 0;
	spilled = rows * (1.0 - budget / need);
	pages = spilled * (8.0 * (nkeys + ncols) + 24) / BLCKSZ;
	return spilled * 10 * cpu_tuple_cost + 2 * pages * seq_page_cost;
}

/*
 * text_extremes counts q's distinct arguments of min or max of text: the
 * leader keeps their extremes row by row (aggregate_numeric.c's side
 * state), a copy, a hash lookup and a comparison in the collation a value.
 */
static int
text_extremes(GhaQuery *q)
{
	List	   *args = NIL;
	ListCell   *lc;

	foreach(lc, q->aggs)
	{
		Aggref	   *a = lfirst_node(Aggref, lc);

		if (gh_agg_call_host_extreme(a))
			args = list_append_unique(args, gh_agg_call_input(a));
	}
	return list_length(args);
}

/*
 * numbered_shared is the leader's numbering per row of a packed input read
 * by nworkers workers, in lookups of GHA_NUMBER_OPS: the per-packet
 * lookups of numbered_lookups, or where the participants' shared
 * dictionary holds every value (a quarter of every participant's budget,
 * as aggregate_pack.c sizes it) each value once and a copy per worker, and
 * the workers' cached lookup a row, spread over them.
 */
static double
numbered_shared(GhaQuery *q, double rows, int nworkers)
{
	double		room = (double) get_hash_memory_limit() / 4 * (nworkers + 1);
	double		shared;

	if (q->nnumbered == 0 || q->numbered_bytes > room)
		return q->numbered_per_row;
	shared = q->numbered_values * (1.0 + 0.1 * nworkers) / Max(rows, 1.0) +
		q->nnumbered * (GHA_NUMBER_OPS_CACHED / GHA_NUMBER_OPS) / Max(nworkers, 1);
	return Min(shared, q->numbered_per_row);
}

/*
 * cost_gha prices the path over child, the projected input: a Gather of it
 * or the projection of a serial one.  Forced: nearly free.  Otherwise:
 *
 * - The input.  Packed (a Gather whose rows the workers pack, see
 *	 gha_planner: device keys), the partial plan and one Gather tuple per
 *	 packet, not per row; the workers' packing, a fraction of an operator a
 *	 column, over the workers; and the leader's copy of every row's bytes,
 *	 a smaller fraction, not divided.  A Gather widened past the workers its
 *	 partial plan was priced for (gha_upper_paths) divides half of that
 *	 plan's run among the added ones: PostgreSQL's model divides only a
 *	 partial plan's CPU, not a scan's page reads, while with the tables in
 *	 memory the workers' whole time divides (TPC-H's Q1 with 7 and with 16
 *	 workers, bench/results/2026-11-25-gpuhashagg-dict-exprs-tpch-sf10.md).  Not
 *	 packed, the child as PostgreSQL prices it (a Gather passes every row)
 *	 and the leader's staging of every row, a quarter of an operator a
 *	 column.
 *	 One group of plain columns (no GROUP BY, no device expression) under
 *	 a Gather no wider than its partial plan's: the device saves the workers
 *	 nothing there, since PostgreSQL's own partial aggregation of such rows
 *	 is as cheap as packing them, while the leader, a participant of that
 *	 plan, only receives here.  The packing is then priced as those
 *	 transitions are, an operator an aggregate a row in the workers, which
 *	 leaves the plan to PostgreSQL: its own was the faster on bench/join's
 *	 count(*), sum(r.v) over a parallel GpuHashJoin
 *	 (bench/results/2026-11-29-gpuhashagg-comment-measurements.md).
 * - Each value of a text min or max, in the leader, which keeps the
 *	 extremes: GHA_TEXT_EXTREME_OPS operators.
 * - With the scan's quals on the device (gha_device_quals), every row is the
 *	 input, the quals' CPU cost is out of the scan's (unfiltered_scan), and
 *	 each row they remove costs a tuple (cpu_tuple_cost): packed, copied and
 *	 sent to the device for nothing.  So a selective qual stays in the scan,
 *	 and one goes to the device where it keeps most rows and computes more
 *	 than the columns it adds to the packets cost.
 * - A fixed device set-up (gpuhash.join_setup_cost).
 * - Per group, the target list and HAVING.
 * - The spill, when the estimated groups need more than their budget
 *	 (aggregate_spill.c: the device budget for device keys on the GPU, else
 *	 work_mem * hash_mem_multiplier, for each participant of a parallel
 *	 input, as PostgreSQL's own parallel aggregate has it in all): the rows
 *	 of the groups that do not fit are
 *	 written to partitions and read back, one by one in the leader: the
 *	 pages both ways and ten tuples' CPU a row: priced at four, TPC-H's Q13
 *	 and Q18 spilled under a 4MB work_mem and were slower than native
 *	 (bench/results/2026-11-29-gpuhashagg-comment-measurements.md).
 *
 * Against PostgreSQL's plans (bench/agg, TPC-H): with
 * few groups both are near the scan's time, and with many the partial
 * groups that PostgreSQL's workers send through the Gather dominate native's
 * time and cost alike.
 */
static void
cost_gha(CustomPath *path, Path *child, PathTarget *target, double ngroups,
		 GhaQuery *q)
{
	int			nkeys = list_length(q->keys);
	int			ncols = list_length(q->inputs);
	bool		device_keys = q->device_keys;
	double		rows = child->rows;
	double		cols = nkeys + ncols;
	Cost		input;
	Cost		per_row;

	if (gpuhash_force_agg)
	{
		/*
		 * nearly free; the input read in parallel first, and the scan's
		 * quals on the device where it takes them
		 */
		path->path.startup_cost = 0;
		path->path.total_cost = (q->quals != NIL ? 0.5e-6 * q->filtered_rows : 1e-6 * rows) *
			(IsA(child, GatherPath) ? 1 : 2);
		return;
	}
	if (IsA(child, GatherPath) && device_keys)
	{
		GatherPath *gather = (GatherPath *) child;
		Path	   *sub = gather->subpath;
		double		workers = Max(gather->num_workers, 1);
		double		packets = ceil(rows / Max(gpuhash_batch_rows, 1));
		Cost		run = sub->total_cost - sub->startup_cost;
		bool		widened = gather->num_workers > sub->parallel_workers;

		if (widened)
			run *= 0.5 + 0.5 * gh_parallel_divisor(sub->parallel_workers) /
				gh_parallel_divisor(gather->num_workers);
		input = sub->startup_cost + run + parallel_setup_cost +
			packets * parallel_tuple_cost;
		per_row = cpu_operator_cost * cols * (0.1 / workers + 0.05);
		/* the leader numbers each packet's distinct values of numbered keys */
		per_row += cpu_operator_cost * GHA_NUMBER_OPS *
			numbered_shared(q, rows, gather->num_workers);
		if (nkeys == 0 && q->exprs == NIL && !widened)
			per_row += cpu_operator_cost * Max(list_length(q->aggs), 1) / workers;
	}
	else
	{
		Path	   *in = IsA(child, ProjectionPath) ? ((ProjectionPath *) child)->subpath : child;

		input = in->total_cost;
		per_row = cpu_operator_cost * (0.1 + 0.25 * ncols);
		/*
		 * the leader numbers every row's numbered keys: a lookup in a small
		 * dictionary is cheap, one that outgrows the caches costs as much as
		 * a packed input's lookups of values new to a packet
		 */
		per_row += cpu_operator_cost * (GHA_TEXT_EXTREME_OPS * q->nnumbered +
										GHA_NUMBER_OPS * q->numbered_per_row);
	}
	/* every value of a text min or max: copied, looked up and compared */
	per_row += cpu_operator_cost * GHA_TEXT_EXTREME_OPS * text_extremes(q);
	path->path.startup_cost = input + gpuhash_join_setup_cost + rows * per_row +
		spill_cost(rows, ngroups, nkeys, ncols, device_keys,
				   IsA(child, GatherPath) ? ((GatherPath *) child)->num_workers + 1 : 1);
	/* a row the device's quals remove is packed and sent for nothing: a tuple */
	if (q->quals != NIL)
		path->path.startup_cost += Max(rows - q->filtered_rows, 0) * cpu_tuple_cost;
	path->path.total_cost = path->path.startup_cost +
		ngroups * (cpu_tuple_cost + target->cost.per_tuple);
}

/*
 * gha_upper_paths offers the GpuHashAgg path for the grouping stage (see
 * the file's header).
 */
static void
gha_upper_paths(PlannerInfo *root, UpperRelationKind stage,
				RelOptInfo *input_rel, RelOptInfo *output_rel, void *extra)
{
	GroupPathExtraData *gextra = (GroupPathExtraData *) extra;
	GhTarget	target;
	Path	   *input;
	List	   *having;
	GhaQuery	q;
	GhaQuery	fq;
	Path	   *partial;
	List	   *quals;
	double		ngroups;
	int			workers = Min(max_parallel_workers_per_gather, max_parallel_workers);

	if (prev_upper_paths_hook)
		prev_upper_paths_hook(root, stage, input_rel, output_rel, extra);
	if (stage != UPPERREL_GROUP_AGG || extra == NULL ||
		(!gpuhash_force_agg && !gpuhash_enable_agg))
		return;
	target = gpuhash_plan_target();
	if (target == GH_TARGET_NONE || (!gpuhash_force_agg && target != GH_TARGET_GPU))
		return;
	input = input_rel->cheapest_total_path;
	if (input == NULL || input->param_info != NULL || IS_DUMMY_REL(input_rel))
		return;
	having = (List *) gextra->havingQual;
	if (!gha_check_query(root, output_rel->reltarget, having, &q, NIL))
		return;
	/* the groups of the GROUP BY's own keys: the columns after them depend on them */
	ngroups = q.ngrouped == 0 ? 1 :
		estimate_num_groups(root, list_truncate(list_copy(q.keys), q.ngrouped),
							input_rel->rows, NULL, NULL);
	partial = input_rel->partial_pathlist != NIL && input_rel->consider_parallel ?
		linitial(input_rel->partial_pathlist) : NULL;

	/*
	 * The workers here only read and pack rows for the device: with the
	 * aggregation gone from them, more of them keep the device fed.  The
	 * Gather asks for every worker it may have, not the few the input's
	 * size gives it (see cost_gha).  A base relation's parallel scan is
	 * planned again for that many, priced by PostgreSQL.
	 */
	if (partial != NULL && partial->pathtype == T_SeqScan &&
		input_rel->reloptkind == RELOPT_BASEREL &&
		partial->parallel_workers > 0 && partial->parallel_workers < workers)
		partial = create_seqscan_path(root, input_rel, NULL, workers);
	offer_paths(root, input_rel, output_rel, &q, having, ngroups, input_rel->rows,
				input, partial);

	/*
	 * And with the scan's quals on the device, where it takes them and every
	 * argument with them: the scan then passes every row, and the cost
	 * model weighs the rows it packs against the quals it no longer
	 * computes.
	 */
	quals = gpuhash_agg_device_filter ? gha_device_quals(input_rel, &q) : NIL;
	if (quals != NIL && gha_check_query(root, output_rel->reltarget, having, &fq, quals) &&
		gha_all_on_device(&fq))
	{
		Path	   *all = unfiltered_scan(input, input_rel);

		fq.filtered_rows = input_rel->rows;
		offer_paths(root, input_rel, output_rel, &fq, having, ngroups,
					all != NULL ? all->rows : Max(input_rel->tuples, input_rel->rows),
					all, unfiltered_scan(partial, input_rel));
	}
}

/*
 * numbered_lookups estimates the leader's dictionary lookups per input row
 * of a packed input, and counts the keys the device groups by number (a
 * GROUP BY key of a type compared otherwise than bit by bit, not a device
 * expression's, where no carried key keeps them all on the host): for each,
 * the distinct values expected in a packet (gh_agg_pack_rows_estimate:
 * rows, at most gpuhash.batch_rows, fewer under a small work_mem) drawn
 * from the key's nd values, nd * (1 - exp(-rows / nd)), per row of the
 * packet; a lookup of a key of at most GHA_NUMBER_CACHED values counts as
 * the fraction GHA_NUMBER_OPS_CACHED / GHA_NUMBER_OPS of one.  A key of few
 * values costs nearly nothing; one whose values are mostly new to each
 * packet, a lookup a row.
 */
static double
numbered_lookups(PlannerInfo *root, GhaQuery *q, double in_rows)
{
	double		packet = gh_agg_pack_rows_estimate(q->ngrouped, list_length(q->inputs),
												   list_length(q->exprs));
	double		n = 0;

	q->nnumbered = 0;
	q->numbered_values = 0;
	q->numbered_bytes = 0;
	/* with carried keys every key stays on the host, none is numbered */
	if (list_length(q->keys) > q->ngrouped)
		return 0;
	for (int i = 0; i < q->ngrouped; i++)
	{
		Node	   *key = list_nth(q->keys, i);
		double		nd;

		if (list_nth_int(q->key_cols, i) >= 0 || list_nth_int(q->key_years, i) >= 0 ||
			gh_agg_key_form(exprType(key), list_nth_oid(q->eqops, i),
							exprCollation(key)) != GH_AGG_KEY_DICT)
			continue;
		q->nnumbered++;
		nd = Max(estimate_num_groups(root, list_make1(key), Max(in_rows, 1.0),
									 NULL, NULL), 1.0);
		q->numbered_values += nd;
		/* an entry of the shared table: the bytes, their pointer and hash */
		q->numbered_bytes += nd * (get_typavgwidth(exprType(key), exprTypmod(key)) + 64);
		n += nd / packet * (1.0 - exp(-packet / nd)) *
			(nd <= GHA_NUMBER_CACHED ? GHA_NUMBER_OPS_CACHED : GHA_NUMBER_OPS) / GHA_NUMBER_OPS;
	}
	return n;
}

/*
 * offer_paths adds GpuHashAgg's paths for q over input, the input's
 * cheapest path, and over partial, its cheapest partial path (either may
 * be NULL), each projected to the keys and then q's inputs; in_rows: the
 * rows of the input.
 */
static void
offer_paths(PlannerInfo *root, RelOptInfo *input_rel, RelOptInfo *output_rel,
			GhaQuery *q, List *having, double ngroups, double in_rows,
			Path *input, Path *partial)
{
	PathTarget *child_target;
	Path	   *child;
	ListCell   *lc;

	q->numbered_per_row = numbered_lookups(root, q, in_rows);
	/* the child: the input projected to the keys, then the arguments */
	child_target = create_empty_pathtarget();
	foreach(lc, q->keys)
		add_column_to_pathtarget(child_target,
								 list_nth_int(q->key_cols, foreach_current_index(lc)) >= 0 ||
								 list_nth_int(q->key_years, foreach_current_index(lc)) >= 0 ?
								 gha_key_placeholder(q, foreach_current_index(lc)) :
								 (Expr *) lfirst(lc), 0);
	foreach(lc, q->inputs)
		add_column_to_pathtarget(child_target, (Expr *) lfirst(lc), 0);
	child_target = set_pathtarget_cost_width(root, child_target);

	if (input != NULL && !reads_unreturned(child_target, input))
	{
		child = (Path *) create_projection_path(root, input_rel, input, child_target);
		add_gha_path(output_rel, child, q, having, ngroups);
	}

	/*
	 * And the cheapest partial input, projected in the workers under a
	 * Gather: the planner hook (gha_planner) then packs the rows there when
	 * the engine can take packets.  Offered also where the input's cheapest
	 * path is already a Gather (apply_scanjoin_target_to_paths gathers the
	 * final scan/join relation), since then the first path's rows cross the
	 * Gather one by one and are projected in the leader.  Not offered where
	 * a key or an argument may not be computed in a worker (the projection
	 * is not parallel safe, as is_parallel_safe tells create_projection_path):
	 * a SubPlan, whose plan the workers are not given, a parameter only the
	 * leader has, a parallel-restricted function.  PostgreSQL computes those
	 * in the leader, above its Gather; here the input is then read serially.
	 */
	if (partial != NULL)
	{
		int			workers = Min(max_parallel_workers_per_gather, max_parallel_workers);
		double		rows = in_rows;
		GatherPath *gather;

		child = (Path *) create_projection_path(root, input_rel, partial, child_target);
		if (!child->parallel_safe)
			return;
		gather = create_gather_path(root, input_rel, child, child_target, NULL, &rows);
		if (gather->num_workers > 0 && gather->num_workers < workers)
			gather->num_workers = workers;
		add_gha_path(output_rel, (Path *) gather, q, having, ngroups);
	}
}

/*
 * returned_var: whether path's rows carry var's column (a plain Var of the
 * same relation and attribute in its target).
 */
static bool
returned_var(Var *var, Path *path)
{
	ListCell   *lc;

	foreach(lc, path->pathtarget->exprs)
	{
		Var		   *v = lfirst(lc);

		if (IsA(v, Var) && v->varno == var->varno && v->varattno == var->varattno &&
			v->varlevelsup == var->varlevelsup)
			return true;
	}
	return false;
}

/*
 * reads_unreturned says whether a projection of path to target would read
 * a column that path's rows do not carry.  A projection over a Gather (or
 * Gather Merge) goes onto that node, and over a node that cannot project
 * into a Result above it: either computes its target from the rows below,
 * which carry only path's target.  Where the input of a grouping is a
 * Gather, that is the scan/join target: its expressions, not always their
 * columns, so a key the device computes from a column (gha_key_placeholder),
 * or an argument the leader computes from one, may not be there.  Other
 * nodes compute a projection from their own inputs, which carry every
 * column needed above them.
 */
static bool
reads_unreturned(PathTarget *target, Path *path)
{
	ListCell   *lc;

	if (!IsA(path, GatherPath) && !IsA(path, GatherMergePath) &&
		is_projection_capable_path(path))
		return false;
	foreach(lc, target->exprs)
	{
		Node	   *e = lfirst(lc);
		List	   *vars;
		ListCell   *lv;

		if (list_member(path->pathtarget->exprs, e))
			continue;
		vars = pull_var_clause(e, PVC_RECURSE_AGGREGATES | PVC_RECURSE_WINDOWFUNCS |
							   PVC_RECURSE_PLACEHOLDERS);
		foreach(lv, vars)
		{
			if (!returned_var(lfirst(lv), path))
				return true;
		}
	}
	return false;
}

/* add_gha_path adds a GpuHashAgg path over child, the projected input. */
static void
add_gha_path(RelOptInfo *output_rel, Path *child, GhaQuery *q, List *having,
			 double ngroups)
{
	CustomPath *cpath;

	cpath = makeNode(CustomPath);
	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = output_rel;
	cpath->path.pathtarget = output_rel->reltarget;
	cpath->path.param_info = NULL;
	cpath->path.parallel_aware = false;
	cpath->path.parallel_safe = false;
	cpath->path.parallel_workers = 0;
	cpath->path.rows = ngroups;
	cpath->path.pathkeys = NIL;
	cpath->flags = 0;
	cpath->custom_paths = list_make1(child);
	/* in GhaPathPrivateIndex's order */
	cpath->custom_private = list_make5(q->keys, q->eqops, q->aggs, q->call_cols, having);
	cpath->custom_private = lappend(cpath->custom_private, q->exprs);
	cpath->custom_private = lappend(cpath->custom_private, q->key_cols);
	cpath->custom_private = lappend(cpath->custom_private, q->key_years);
	cpath->custom_private = lappend(cpath->custom_private, q->quals);
	cpath->custom_private = lappend(cpath->custom_private, makeInteger(q->filter_call));
	cpath->methods = &gha_path_methods;
	cost_gha(cpath, child, output_rel->reltarget, ngroups, q);
	add_path(output_rel, &cpath->path);
}

/*
 * gha_plan_path makes the CustomScan: the scan tuple is the keys and then
 * the Aggrefs, HAVING is the scan's qual.
 */
static Plan *
gha_plan_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
			  List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	List	   *keys = list_nth(best_path->custom_private, GHA_PATH_KEYS);
	List	   *eqops = list_nth(best_path->custom_private, GHA_PATH_EQOPS);
	List	   *aggs = list_nth(best_path->custom_private, GHA_PATH_AGGS);
	List	   *call_cols = list_nth(best_path->custom_private, GHA_PATH_CALL_COLS);
	List	   *having = list_nth(best_path->custom_private, GHA_PATH_HAVING);
	List	   *exprs = list_nth(best_path->custom_private, GHA_PATH_EXPRS);
	List	   *key_cols = list_nth(best_path->custom_private, GHA_PATH_KEY_COLS);
	List	   *key_years = list_nth(best_path->custom_private, GHA_PATH_KEY_YEARS);
	List	   *quals = list_nth(best_path->custom_private, GHA_PATH_QUALS);
	int			filter_call = intVal(list_nth(best_path->custom_private, GHA_PATH_FILTER));
	Plan	   *child = linitial(custom_plans);
	List	   *scan_tlist = NIL;
	List	   *col_types = NIL;
	Oid			extfunc = gpuhash_extension_function();
	ListCell   *lc;

	gh_plans_made[GH_PLAN_AGG]++;	/* gha_planner walks the plan */
	/* DROP EXTENSION gpuhash invalidates the plan if it is cached */
	if (OidIsValid(extfunc))
		record_plan_function_dependency(root, extfunc);
	for (int i = list_length(eqops); i < list_length(child->targetlist); i++)
		col_types = lappend_oid(col_types,
								exprType((Node *) list_nth_node(TargetEntry, child->targetlist, i)->expr));

	foreach(lc, keys)
		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry(copyObject(lfirst(lc)),
											 list_length(scan_tlist) + 1, NULL, false));
	foreach(lc, aggs)
		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry(copyObject(lfirst(lc)),
											 list_length(scan_tlist) + 1, NULL, false));
	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = copyObject(having);
	if (quals != NIL)
	{
		Plan	   *scan = child;

		/*
		 * the scan passes every row (unfiltered_scan): the plan PostgreSQL
		 * made of it still has the quals.  Were they left there, the rows
		 * would be PostgreSQL's all the same.
		 */
		if (IsA(scan, Gather))
			scan = scan->lefttree;
		if (IsA(scan, Result) && scan->qual == NIL &&
			((Result *) scan)->resconstantqual == NULL && scan->lefttree != NULL)
			scan = scan->lefttree;
		if (IsA(scan, SeqScan))
			scan->qual = list_difference(scan->qual, quals);
		/* a group of no row that passes them is not PostgreSQL's: dropped first */
		if (keys != NIL)
			cscan->scan.plan.qual =
				lcons(make_opclause(get_opfamily_member(INTEGER_BTREE_FAM_OID, INT8OID, INT8OID,
														BTGreaterStrategyNumber),
									BOOLOID, false,
									(Expr *) copyObject(list_nth(aggs, filter_call)),
									(Expr *) makeConst(INT8OID, -1, InvalidOid, sizeof(int64),
													   Int64GetDatum(0), false, FLOAT8PASSBYVAL),
									InvalidOid, InvalidOid),
					  cscan->scan.plan.qual);
	}
	cscan->scan.scanrelid = 0;
	cscan->custom_plans = custom_plans;
	cscan->custom_scan_tlist = scan_tlist;
	cscan->custom_exprs = NIL;
	/* in GhaScanPrivateIndex's order (gpuhash_agg.h) */
	cscan->custom_private = list_make5(list_copy(eqops), list_copy(call_cols), col_types,
									   makeInteger(0), copyObject(exprs));
	cscan->custom_private = lappend(cscan->custom_private, list_copy(key_cols));
	cscan->custom_private = lappend(cscan->custom_private, list_copy(key_years));
	cscan->custom_private = lappend(cscan->custom_private, makeInteger(filter_call));
	cscan->flags = best_path->flags;
	cscan->methods = &gha_scan_methods;
	return &cscan->scan.plan;
}

/* What find_packable collects from a finished plan. */
typedef struct PackWalk
{
	int			max_node_id;	/* the largest plan_node_id */
	List	   *aggs;			/* GpuHashAgg nodes over a Gather */
} PackWalk;

/*
 * find_packable adds to the PackWalk context each GpuHashAgg of the tree
 * below plan whose input comes through a Gather, and notes the largest
 * plan_node_id.
 */
static bool
find_packable(Plan *plan, void *context)
{
	PackWalk   *w = (PackWalk *) context;

	w->max_node_id = Max(w->max_node_id, plan->plan_node_id);
	if (IsA(plan, CustomScan) && ((CustomScan *) plan)->methods == &gha_scan_methods &&
		IsA(linitial(((CustomScan *) plan)->custom_plans), Gather))
		w->aggs = lappend(w->aggs, plan);
	return gh_plan_walk_children(plan, find_packable, context);
}

/*
 * gha_planner is the planner_hook: PostgreSQL's planner (or the hook before
 * this one), then the packing of GpuHashAgg inputs read in parallel: under
 * each GpuHashAgg whose input comes through a Gather, gh_agg_pack_gather
 * puts a GpuHashAggPack, numbered after every node of the plan, and the
 * workers then send device-ready packets, not rows.  Where this planning
 * made no GpuHashAgg (gh_plans_made), the plan is not walked.
 */
static PlannedStmt *
gha_planner(Query *parse, const char *query_string, int cursorOptions,
			ParamListInfo boundParams)
{
	PlannedStmt *stmt;
	uint64		made = gh_plans_made[GH_PLAN_AGG];
	PackWalk	w = {-1, NIL};
	ListCell   *lc;

	if (prev_planner_hook)
		stmt = prev_planner_hook(parse, query_string, cursorOptions, boundParams);
	else
		stmt = standard_planner(parse, query_string, cursorOptions, boundParams);
	if (!stmt->parallelModeNeeded || gh_plans_made[GH_PLAN_AGG] == made)
		return stmt;
	(void) gh_plan_walk_stmt(stmt, find_packable, &w);
	foreach(lc, w.aggs)
	{
		CustomScan *cscan = lfirst(lc);

		if (gh_agg_pack_gather(gha_engine_plan(cscan), linitial(cscan->custom_plans),
							   w.max_node_id + 1))
		{
			w.max_node_id++;
			list_nth_cell(cscan->custom_private, GHA_PRIV_PACKED)->ptr_value = makeInteger(1);
		}
	}
	return stmt;
}
