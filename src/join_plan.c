/*-------------------------------------------------------------------------
 * join_plan.c
 *	  Planning of GpuHashJoin: the join path hook, the cost model and the
 *	  CustomScan plan.
 *
 * For every join that PostgreSQL considers, set_join_pathlist_hook offers a
 * GpuHashJoin path when the join has at least one hashable, strict equality
 * clause whose two sides have extended (64-bit) hash functions in the
 * operator's hash family.  Equal values of types in one family hash alike,
 * so cross-type keys (int4 = int8) work; every candidate is verified with
 * the operator's own function at run time, so collations, numeric and user
 * types stay exact.
 *
 * The path joins the cheapest unparameterized outer and inner paths (and,
 * for inner, left, semi and anti joins, a partial outer path under Gather,
 * each participant building its own table from a full inner scan).  Its
 * cost says where the time goes: the inner scan, hashing and copying the
 * inner rows, a fixed device set-up cost, the outer scan, hashing the outer
 * rows, the device probe, and verification and emission per candidate.
 * gpuhash.force_join makes the path nearly free, for tests.
 *
 * The plan keeps PostgreSQL's join semantics in a form that survives
 * copyObject (see gpuhash_join.h for custom_private): the scan tuple is the
 * outer child's columns followed by the inner child's, so setrefs turns
 * every Var of the targetlist and quals into an INDEX_VAR reference that the
 * executor maps back to one side.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/table.h"
#include "executor/nodeHash.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/plancat.h"
#include "optimizer/planmain.h"
#include "optimizer/planner.h"
#include "optimizer/paths.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "utils/guc.h"
#include "utils/rel.h"
#include "utils/lsyscache.h"

#include "gpuhash_join.h"
#include "keys.h"

bool		gpuhash_force_join = false;
bool		gpuhash_enable_join = true;
int			gpuhash_batch_rows = GPUHASH_BATCH_ROWS_DEFAULT;
double		gpuhash_load_factor = 0.5;
int			gpuhash_group_size = 2;
int			gpuhash_probe_scheme = GH_PROBE_DOUBLE;
double		gpuhash_join_setup_cost = 1000.0;
double		gpuhash_gpu_join_cost_fraction = 0.5;
double		gpuhash_worker_context_cost = 20000.0;
bool		gpuhash_shared_build = true;

static const struct config_enum_entry probe_scheme_options[] = {
	{"linear", GH_PROBE_LINEAR, false},
	{"double", GH_PROBE_DOUBLE, false},
	{NULL, 0, false}
};

static bool check_group_size(int *newval, void **extra, GucSource source);

/* One usable hash clause, as found by the hook. */
typedef struct HashKey
{
	RestrictInfo *rinfo;
	Expr	   *outer_expr;
	Expr	   *inner_expr;
	Oid			opno;			/* operator applied as (outer, inner) or swapped */
	bool		swapped;
	Oid			outer_hash;
	Oid			inner_hash;
	Oid			eqfunc;
	Oid			collation;
	QualCost	outer_cost;		/* computing outer_expr for one row */
	QualCost	inner_cost;		/* and inner_expr */
	QualCost	op_cost;		/* the clause less both key expressions */
} HashKey;

/*
 * cost_gpu_join: an inner hash table of fewer bytes than this stays in a
 * core's cache (a quarter of the L2 of current server CPUs); a row takes its
 * width and the overhead of PostgreSQL's hash table (tuple header and bucket
 * pointer).  In TPC-H a join over the 25 nation rows was slower on the
 * GPU (Q9), while one over the part rows of Q20 (hundreds of kB) was not
 * (bench/results/2026-11-27-tpch-sf10-all-22.md).
 */
#define GH_CACHED_INNER_BYTES (256.0 * 1024.0)
#define GH_CACHED_ROW_OVERHEAD 24.0

static double spill_pages(double rows, int width);
static QualCost key_eval_cost(List *keys, bool inner);
static int	join_batches(Path *inner, GhTarget target);
static bool shared_inner_fits(Path *inner, int nkeys, int parallel_workers);

static set_join_pathlist_hook_type prev_join_pathlist_hook = NULL;
static planner_hook_type prev_planner_hook = NULL;
static PlannedStmt *gpuhash_planner(Query *parse, const char *query_string,
									int cursorOptions, ParamListInfo boundParams);

static void gpuhash_join_pathlist(PlannerInfo *root, RelOptInfo *joinrel,
								  RelOptInfo *outerrel, RelOptInfo *innerrel,
								  JoinType jointype, JoinPathExtraData *extra);
static Plan *gpuhash_plan_join(PlannerInfo *root, RelOptInfo *rel,
							   CustomPath *best_path, List *tlist,
							   List *clauses, List *custom_plans);

static CustomPathMethods gpuhash_join_path_methods = {
	.CustomName = GPUHASH_JOIN_NAME,
	.PlanCustomPath = gpuhash_plan_join,
};

CustomScanMethods gpuhash_join_scan_methods = {
	.CustomName = GPUHASH_JOIN_NAME,
	.CreateCustomScanState = gpuhash_join_create_state,
};

void
gpuhash_init_join_plan(void)
{
	/*
	 * GpuHashJoin's own switch, as gpuhash.enable_agg is GpuHashAgg's.
	 * PostgreSQL's enable_hashjoin does not reach it: that setting prices its
	 * Hash Join paths out, and GpuHashJoin is another operator, often the one
	 * a user keeps while taking PostgreSQL's hash join away.
	 */
	DefineCustomBoolVariable("gpuhash.enable_join",
							 "Lets the planner choose GpuHashJoin for equi-joins by its cost model.",
							 "Off: only gpuhash.force_join plans it.  PostgreSQL's enable_hashjoin does not apply to GpuHashJoin.",
							 &gpuhash_enable_join,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gpuhash.force_join",
							 "Plans a GpuHashJoin wherever it is legal, whatever the cost.",
							 "Developer option, for tests: on the CPU twin as well.",
							 &gpuhash_force_join,
							 false,
							 PGC_USERSET,
							 GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("gpuhash.batch_rows",
							"Most outer rows a join sends to the device per probe batch.",
							"An aggregate's batch is at most 16 times as many.  An upper bound only: "
							"a batch holds no more rows than half of work_mem * hash_mem_multiplier "
							"has room for, and at least 256 (a join) or 64 (an aggregate).",
							&gpuhash_batch_rows,
							GPUHASH_BATCH_ROWS_DEFAULT, 1, 16 * 1024 * 1024,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomRealVariable("gpuhash.load_factor",
							 "Largest fraction of hash table slots in use.",
							 "Lower is faster to probe and uses more device memory.",
							 &gpuhash_load_factor,
							 0.5, 0.05, 0.95,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("gpuhash.group_size",
							"Threads that probe one row together (1, 2, 4, 8, 16 or 32).",
							"Developer option: a variant of the GPU table's probe, for tests and "
							"measurements of the multimap.",
							&gpuhash_group_size,
							2, 1, 32,
							PGC_USERSET,
							GUC_NOT_IN_SAMPLE,
							check_group_size, NULL, NULL);

	DefineCustomEnumVariable("gpuhash.probe_scheme",
							 "Hash table probing: linear or double hashing.",
							 "Developer option: a variant of the GPU table's probe, for tests and "
							 "measurements of the multimap.",
							 &gpuhash_probe_scheme,
							 GH_PROBE_DOUBLE,
							 probe_scheme_options,
							 PGC_USERSET,
							 GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	DefineCustomRealVariable("gpuhash.join_setup_cost",
							 "Planner's estimate of the fixed cost of a GPU join.",
							 "Kernel launches and the latency of the copies to and from the device.",
							 &gpuhash_join_setup_cost,
							 1000.0, 0.0, 1e12,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomRealVariable("gpuhash.gpu_join_cost_fraction",
							 "Planner's estimate of a GPU join's own work, as a fraction of what "
							 "PostgreSQL's model charges its hash join of the same inputs.",
							 "The scans of both sides are charged in full either way.",
							 &gpuhash_gpu_join_cost_fraction,
							 0.5, 0.0, 100.0,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomRealVariable("gpuhash.worker_context_cost",
							 "Planner's estimate of the cost of a parallel worker creating its CUDA context.",
							 "Not charged where the GPU service serves parallel joins.",
							 &gpuhash_worker_context_cost,
							 20000.0, 0.0, 1e12,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gpuhash.shared_build",
							 "Lets the participants of a parallel GpuHashJoin read the inner side together.",
							 "With it off, every participant reads the whole inner side itself.",
							 &gpuhash_shared_build,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	prev_join_pathlist_hook = set_join_pathlist_hook;
	set_join_pathlist_hook = gpuhash_join_pathlist;
	prev_planner_hook = planner_hook;
	planner_hook = gpuhash_planner;
	RegisterCustomScanMethods(&gpuhash_join_scan_methods);
}

/*
 * hash_key_for_clause fills key if rinfo is a join clause GpuHashJoin can
 * hash and verify: hashjoinable, one side from each input, strict, with
 * extended hash functions for both sides.
 */
static bool
hash_key_for_clause(PlannerInfo *root, RestrictInfo *rinfo, RelOptInfo *outerrel,
					RelOptInfo *innerrel, HashKey *key)
{
	OpExpr	   *op;
	Oid			lhs_hash,
				rhs_hash;
	bool		outer_is_left;

	if (!rinfo->can_join || !OidIsValid(rinfo->hashjoinoperator))
		return false;
	if (bms_is_subset(rinfo->left_relids, outerrel->relids) &&
		bms_is_subset(rinfo->right_relids, innerrel->relids))
		outer_is_left = true;
	else if (bms_is_subset(rinfo->left_relids, innerrel->relids) &&
			 bms_is_subset(rinfo->right_relids, outerrel->relids))
		outer_is_left = false;
	else
		return false;

	op = (OpExpr *) rinfo->clause;
	if (!IsA(op, OpExpr) || list_length(op->args) != 2)
		return false;
	/* a NULL key must never match: only strict operators */
	if (!op_strict(op->opno))
		return false;
	if (!gpuhash_extended_hash_functions(op->opno, &lhs_hash, &rhs_hash))
		return false;

	key->rinfo = rinfo;
	key->collation = op->inputcollid;
	key->eqfunc = get_opcode(op->opno);
	if (!OidIsValid(key->eqfunc))
		return false;
	if (outer_is_left)
	{
		key->outer_expr = linitial(op->args);
		key->inner_expr = lsecond(op->args);
		key->outer_hash = lhs_hash;
		key->inner_hash = rhs_hash;
		key->opno = op->opno;
		key->swapped = false;
	}
	else
	{
		Oid			commutator = get_commutator(op->opno);

		key->outer_expr = lsecond(op->args);
		key->inner_expr = linitial(op->args);
		key->outer_hash = rhs_hash;
		key->inner_hash = lhs_hash;
		/* prefer the commutator, so EXPLAIN shows outer = inner */
		if (OidIsValid(commutator) && OidIsValid(get_opcode(commutator)))
		{
			key->opno = commutator;
			key->eqfunc = get_opcode(commutator);
			key->swapped = false;
		}
		else
		{
			key->opno = op->opno;
			key->swapped = true;
		}
	}
	cost_qual_eval_node(&key->outer_cost, (Node *) key->outer_expr, root);
	cost_qual_eval_node(&key->inner_cost, (Node *) key->inner_expr, root);
	cost_qual_eval_node(&key->op_cost, (Node *) rinfo->clause, root);
	key->op_cost.startup = Max(key->op_cost.startup - key->outer_cost.startup -
							   key->inner_cost.startup, 0);
	key->op_cost.per_tuple = Max(key->op_cost.per_tuple - key->outer_cost.per_tuple -
								 key->inner_cost.per_tuple, 0);
	return true;
}

/*
 * parallel_divisor estimates how many participants share a partial path's
 * rows, as PostgreSQL's own costing does.
 */
static double
parallel_divisor(Path *path)
{
	return gh_parallel_divisor(path->parallel_workers);
}

/*
 * native_hashjoin prices PostgreSQL's own hash join of the same inputs, with
 * the same clauses as hash keys: the HashPath that joinpath.c would make,
 * costed by costsize.c and then dropped.  A shared build compares with
 * PostgreSQL's parallel hash (both read a partial inner side together).
 *
 * Each hash clause is priced at its operator alone: costsize.c charges a
 * hash clause's whole cost, key expressions included, for every comparison
 * in a bucket, while GpuHashJoin computes a key once per row and compares
 * the stored values (cost_gpu_join charges that evaluation per row).  A
 * costly key, such as TPC-H Q2's correlated subquery (SubPlan) against
 * ps_supplycost, otherwise made the join that hashes the 7,854 part rows
 * look dearer than the one that hashes the 1.6M partsupp rows, which at
 * scale 10 under 4MB ran in 256 batches.  The clauses' cached costs are
 * restored afterwards.
 */
static HashPath *
native_hashjoin(PlannerInfo *root, RelOptInfo *joinrel, JoinType jointype,
				JoinPathExtraData *extra, Path *outer, Path *inner,
				List *keys, bool shared)
{
	JoinCostWorkspace workspace;
	List	   *hashclauses = NIL;
	ListCell   *lc;
	HashPath   *path = NULL;
	bool		saved_enable = enable_hashjoin;
	int			nkeys = list_length(keys);
	QualCost   *saved_cost = palloc(sizeof(QualCost) * Max(nkeys, 1));
	int			i = 0;

	foreach(lc, keys)
	{
		HashKey    *key = lfirst(lc);
		RestrictInfo *rinfo = key->rinfo;

		hashclauses = lappend(hashclauses, rinfo);
		saved_cost[i++] = rinfo->eval_cost;
		rinfo->eval_cost = key->op_cost;
	}

	/*
	 * Priced as if enable_hashjoin were on: the user's switch for
	 * PostgreSQL's hash joins does not make GpuHashJoin dearer.
	 */
	enable_hashjoin = true;
	PG_TRY();
	{
		initial_cost_hashjoin(root, &workspace, jointype, hashclauses, outer,
							  inner, extra, shared);
		path = create_hashjoin_path(root, joinrel, jointype, &workspace, extra,
									outer, inner, shared, extra->restrictlist,
									NULL, hashclauses);
	}
	PG_FINALLY();
	{
		enable_hashjoin = saved_enable;
		i = 0;
		foreach(lc, keys)
			((HashKey *) lfirst(lc))->rinfo->eval_cost = saved_cost[i++];
	}
	PG_END_TRY();
	pfree(saved_cost);
	return path;
}

/*
 * key_eval_cost is the cost of computing the keys of one side (inner or
 * outer) for one row: what GpuHashJoin does once per row and side.
 */
static QualCost
key_eval_cost(List *keys, bool inner)
{
	QualCost	total = {0, 0};
	ListCell   *lc;

	foreach(lc, keys)
	{
		HashKey    *key = lfirst(lc);
		QualCost   *c = inner ? &key->inner_cost : &key->outer_cost;

		total.startup += c->startup;
		total.per_tuple += c->per_tuple;
	}
	return total;
}

/*
 * spill_pages is how many pages rows rows of width bytes take in batch
 * files, reckoned as costsize.c's page_size does for a hash join's.
 */
static double
spill_pages(double rows, int width)
{
	return ceil(rows * (MAXALIGN(width) + MAXALIGN(SizeofHeapTupleHeader)) /
				BLCKSZ);
}

/*
 * join_batches is the number of batches the executor will start with for
 * the inner path (join_batch.c): ExecChooseHashTableSize's for the host
 * budget and, for a table on the GPU, doubled until a batch's table fits
 * gpuhash.device_memory_limit.
 */
static int
join_batches(Path *inner, GhTarget target)
{
	size_t		space;
	int			nbuckets,
				nbatch,
				nskew;

	ExecChooseHashTableSize(inner->rows, inner->pathtarget->width, false,
							false, 0, &space, &nbuckets, &nbatch, &nskew);
	if (target == GH_TARGET_GPU)
	{
		while (nbatch < (1 << 20) && !gh_table_fits_device(inner->rows / nbatch))
			nbatch *= 2;
	}
	return nbatch;
}

/*
 * shared_inner_fits says whether a partial inner path read by all the
 * participants together fits in one batch of their combined budget,
 * hash_mem * (parallel_workers + 1), as PostgreSQL's parallel hash counts
 * it (try_combined_hash_mem).  Only such a shared build is planned: past
 * the budget its partitions (join_parts.c) keep the memory bounded but,
 * planned on purpose, ran slower than native's parallel hash join (the
 * join benchmark under a small work_mem), so they remain the executor's
 * answer to an estimate that was too low.
 */
static bool
shared_inner_fits(Path *inner, int nkeys, int parallel_workers)
{
	size_t		space;
	int			nbuckets,
				nbatch,
				nskew;
	int			ncols = list_length(inner->pathtarget->exprs);

	/*
	 * A row of the store is a record of Datums (the keys, every column, a
	 * null bitmap: join_exec.h) and its hash, beside its by-reference data,
	 * which the planner's width counts: wider than PostgreSQL's own tuple
	 * of narrow columns (TPC-H Q9's inner side at scale 1 passed the budget
	 * so, where Parallel Hash kept it in one batch).
	 */
	int			width = inner->pathtarget->width +
		(int) sizeof(Datum) * (nkeys + ncols + (ncols + 63) / 64) +
		(int) sizeof(uint64);

	ExecChooseHashTableSize(inner->rows * parallel_divisor(inner),
							width, false, true,
							parallel_workers, &space, &nbuckets, &nbatch,
							&nskew);
	return nbatch == 1;
}

/*
 * cost_gpu_join fills the path's costs, in PostgreSQL's units.  The inputs
 * cost what their paths say, and both scans are charged in full.
 *
 * On the GPU the join's own work is priced as gpuhash.gpu_join_cost_fraction
 * (default 0.5) of what PostgreSQL's model charges its own hash join of the
 * same inputs (native_hashjoin), startup and run apart.  GpuHashJoin's time
 * beyond the scan of its outer side is a fraction of native's, smallest for
 * serial integer keys and largest for text keys in parallel
 * (bench/results/join-2026-11-22-scale1-serial-parallel.md and
 * join-2026-11-22-serial-workloads-cost-model.md), so half keeps
 * PostgreSQL's plan only where the two are close.  Pricing it relative to
 * PostgreSQL's model, not in absolute units, keeps the comparison fair where
 * that model is uneven: it charges a serial hash join of a 10M-row inner
 * side five times as much per outer row as a parallel hash of the same
 * (estimate_hash_bucket_stats never estimates fewer than 10^-6 of the inner
 * rows per bucket), and GpuHashJoin saves about the same share of both.
 * The fixed gpuhash.join_setup_cost keeps small joins on PostgreSQL's plans;
 * a shared build adds copying all inner rows into each participant, and a
 * parallel worker without the GPU service its CUDA context.
 *
 * The CPU twin keeps a model of its own, per row in fractions of
 * cpu_operator_cost and cpu_tuple_cost: per inner row half a tuple to store
 * it and half an operator per key to hash it; per outer row a twentieth of a
 * tuple to copy it into a batch, half an operator per key to hash it and one
 * to probe; per candidate pair half an operator per key to verify it, the
 * other join quals, and a fifth of a tuple to emit it.
 *
 * An inner side larger than its budget (or, on the GPU, than
 * gpuhash.device_memory_limit) is joined in batches, whose rows are written
 * and read back as final_cost_hashjoin charges them: the inner rows once
 * each way before the first row, the outer rows once each way while
 * probing.  On the GPU, the part of that which PostgreSQL's own price
 * already holds (scaled by the cost fraction) is topped up to the whole.
 */
static void
cost_gpu_join(PlannerInfo *root, CustomPath *path, RelOptInfo *joinrel,
			  JoinType jointype, JoinPathExtraData *extra, Path *outer,
			  Path *inner, List *keys, List *joinquals, GhTarget target,
			  double rows, bool shared)
{
	double		nkeys = list_length(keys);
	double		outer_rows = outer->rows;
	double		inner_rows = inner->rows;
	/* a shared build: this participant reads its share, builds on all rows */
	double		table_rows = shared ? inner->rows * parallel_divisor(inner) : inner->rows;
	Cost		outer_run = outer->total_cost - outer->startup_cost;
	Cost		startup,
				run;
	int			nbatch;
	double		io_share = 1.0;

	if (gpuhash_force_join)
	{
		/* whatever the cost: nearly free, but still ordered by size */
		path->path.startup_cost = 0;
		path->path.total_cost = 1e-6 * (outer_rows + inner_rows);
		return;
	}
	if (target == GH_TARGET_GPU)
	{
		HashPath   *native = native_hashjoin(root, joinrel, jointype, extra,
											 outer, inner, keys, shared);
		Cost		build = native->jpath.path.startup_cost -
			inner->total_cost - outer->startup_cost;
		Cost		probe = native->jpath.path.total_cost -
			native->jpath.path.startup_cost - outer_run;
		double		fraction = gpuhash_gpu_join_cost_fraction;
		QualCost	inner_keys = key_eval_cost(keys, true);
		QualCost	outer_keys = key_eval_cost(keys, false);

		/*
		 * Less the disable_cost that PostgreSQL adds to its own startup when
		 * the inner side's most common value would not fit hash memory: its
		 * batches could not split it, GpuHashJoin's table holds it.
		 */
		build = fmod(build, disable_cost);

		/*
		 * An inner side whose hash table stays in a core's cache costs
		 * PostgreSQL's probe no memory stalls, which is what the device
		 * saves: there GpuHashJoin only adds its batches (see
		 * GH_CACHED_INNER_BYTES).
		 */
		if (table_rows * (inner->pathtarget->width + GH_CACHED_ROW_OVERHEAD) <
			GH_CACHED_INNER_BYTES)
			fraction = 1.0;
		startup = inner->total_cost + outer->startup_cost + gpuhash_join_setup_cost +
			fraction * Max(build, 0);
		run = outer_run + fraction * Max(probe, 0);
		/* the keys, computed on the CPU once per row (see native_hashjoin) */
		startup += inner_keys.startup + outer_keys.startup + inner_rows * inner_keys.per_tuple;
		run += outer_rows * outer_keys.per_tuple;
		nbatch = shared ? 1 : join_batches(inner, target);
		if (nbatch > 1)
			io_share = native->num_batches > 1 ? 1.0 - fraction : 1.0;
		pfree(native);

		/*
		 * Every parallel worker is a new process that creates its own CUDA
		 * context, and the driver nearly serializes them (bench/context
		 * measures it).  The creation overlaps the worker's
		 * inner scan (gpuhash_prewarm_gpu), so it is charged per worker.
		 * With the GPU service no worker creates one.
		 */
		if (path->path.parallel_workers > 0 && !gh_table_service_available(true))
			startup += gpuhash_worker_context_cost * path->path.parallel_workers;
	}
	else
	{
		QualCost	jq;

		cost_qual_eval(&jq, joinquals, root);
		startup = inner->total_cost + outer->startup_cost + jq.startup;
		startup += inner_rows * (0.5 * cpu_tuple_cost + 0.5 * nkeys * cpu_operator_cost);
		startup += table_rows * cpu_operator_cost;	/* build */
		run = outer_run;
		run += outer_rows * (0.05 * cpu_tuple_cost + (0.5 * nkeys + 1.0) * cpu_operator_cost);
		run += rows * (0.5 * nkeys * cpu_operator_cost + jq.per_tuple + 0.2 * cpu_tuple_cost);
		nbatch = shared ? 1 : join_batches(inner, target);
	}
	if (nbatch > 1)
	{
		double		inner_pages = spill_pages(inner_rows, inner->pathtarget->width);
		double		outer_pages = spill_pages(outer_rows, outer->pathtarget->width);

		startup += io_share * seq_page_cost * inner_pages;
		run += io_share * seq_page_cost * (inner_pages + 2 * outer_pages);
	}
	if (shared)
		startup += table_rows * 0.1 * cpu_operator_cost;	/* gathering all rows */
	path->path.startup_cost = startup;
	path->path.total_cost = startup + run;
}

/*
 * clauses_of returns the clauses of a RestrictInfo list, pseudoconstant ones
 * included: a custom join gets no gating Result node, so it evaluates them
 * itself.
 */
static List *
clauses_of(List *rinfos)
{
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, rinfos)
		result = lappend(result, lfirst_node(RestrictInfo, lc)->clause);
	return result;
}

static CustomPath *
make_gpu_join_path(PlannerInfo *root, RelOptInfo *joinrel, JoinType jointype,
				   JoinPathExtraData *extra, Path *outer, Path *inner,
				   List *keys, List *joinquals, List *otherquals,
				   GhTarget target, bool partial, bool shared)
{
	CustomPath *cpath = makeNode(CustomPath);
	double		rows = joinrel->rows;

	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = joinrel;
	cpath->path.pathtarget = joinrel->reltarget;
	cpath->path.param_info = NULL;
	/* parallel-aware only to share its EXPLAIN ANALYZE counters (DSM) */
	cpath->path.parallel_aware = partial;
	cpath->path.parallel_safe = joinrel->consider_parallel &&
		outer->parallel_safe && inner->parallel_safe;
	cpath->path.parallel_workers = partial ? outer->parallel_workers : 0;
	if (partial)
		rows = clamp_row_est(rows / parallel_divisor(outer));
	cpath->path.rows = rows;
	cpath->path.pathkeys = NIL;
	/*
	 * No backward scan, no mark/restore.  The join projects any target list
	 * (join_exec.c builds its projection from the plan's), so the planner
	 * may hand it one of expressions instead of putting a Result above it:
	 * on H2O's j3, a LEFT JOIN whose columns came out in another order, that
	 * Result cost each of 16 workers a fifth of its time.
	 */
	cpath->flags = CUSTOMPATH_SUPPORT_PROJECTION;
	cpath->custom_paths = list_make2(outer, inner);
	cpath->custom_private = list_make4(keys, joinquals, otherquals,
									   list_make3_int(jointype,
													  extra->inner_unique ? 1 : 0,
													  shared ? 1 : 0));
	cpath->methods = &gpuhash_join_path_methods;
	cost_gpu_join(root, cpath, joinrel, jointype, extra, outer, inner, keys,
				  joinquals, target, rows, shared);
	return cpath;
}

/* contain_rowid_var says whether node holds a ROWID_VAR Var. */
static bool
contain_rowid_var(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
		return ((Var *) node)->varno == ROWID_VAR;
	return expression_tree_walker(node, contain_rowid_var, context);
}

/*
 * gpuhash_join_pathlist is the set_join_pathlist_hook: it offers GpuHashJoin
 * paths for the join of outerrel and innerrel.
 */
static void
gpuhash_join_pathlist(PlannerInfo *root, RelOptInfo *joinrel,
					  RelOptInfo *outerrel, RelOptInfo *innerrel,
					  JoinType jointype, JoinPathExtraData *extra)
{
	GhTarget	target;
	List	   *keys = NIL;
	List	   *joinquals = NIL;
	List	   *otherquals = NIL;
	Path	   *outer;
	Path	   *inner;
	ListCell   *lc;

	if (prev_join_pathlist_hook)
		prev_join_pathlist_hook(root, joinrel, outerrel, innerrel,
								jointype, extra);

	switch (jointype)
	{
		case JOIN_INNER:
		case JOIN_LEFT:
		case JOIN_RIGHT:
		case JOIN_FULL:
		case JOIN_SEMI:
		case JOIN_ANTI:
			break;
		default:
			return;
	}
	if (!gpuhash_enable_join && !gpuhash_force_join)
		return;
	target = gpuhash_plan_target();
	if (target == GH_TARGET_NONE)
		return;

	/*
	 * UPDATE, DELETE and MERGE of a partitioned or inherited table carry
	 * row identity columns (ROWID_VAR Vars) through the join to the
	 * ModifyTable.  As plain columns of the scan tuple they are shown by
	 * gpuhash_planner (below); inside an expression they could not be.
	 */
	if (root->row_identity_vars != NIL)
	{
		foreach(lc, joinrel->reltarget->exprs)
		{
			Node	   *e = lfirst(lc);

			if (!IsA(e, Var) && contain_rowid_var(e, NULL))
				return;
		}
	}

	foreach(lc, extra->restrictlist)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		HashKey    *key = palloc0(sizeof(HashKey));

		/*
		 * In an outer join, a pushed-down clause filters the joined rows; it
		 * does not decide what matches.
		 */
		if (IS_OUTER_JOIN(jointype) &&
			RINFO_IS_PUSHED_DOWN(rinfo, joinrel->relids))
		{
			otherquals = lappend(otherquals, rinfo);
			continue;
		}
		if (hash_key_for_clause(root, rinfo, outerrel, innerrel, key))
			keys = lappend(keys, key);
		else
		{
			pfree(key);
			joinquals = lappend(joinquals, rinfo);
		}
	}
	if (keys == NIL)
		return;

	outer = outerrel->cheapest_total_path;
	inner = innerrel->cheapest_total_path;
	if (outer == NULL || inner == NULL ||
		outer->param_info != NULL || inner->param_info != NULL)
		return;
	/*
	 * An inner side larger than gpuhash.device_memory_limit is joined in
	 * batches on the GPU (join_batch.c), costed with them.
	 */

	add_path(joinrel, (Path *) make_gpu_join_path(root, joinrel, jointype, extra,
												  outer, inner, keys, joinquals,
												  otherquals, target, false, false));

	/*
	 * A partial path: each participant probes its share of a partial outer
	 * path against its own table of the whole inner side.  Not for right and
	 * full joins, whose unmatched inner rows no single participant knows.
	 */
	if (joinrel->consider_parallel && outerrel->partial_pathlist != NIL &&
		jointype != JOIN_RIGHT && jointype != JOIN_FULL &&
		bms_is_empty(joinrel->lateral_relids))
	{
		Path	   *pouter = linitial(outerrel->partial_pathlist);
		Path	   *pinner = inner->parallel_safe ? inner :
			get_cheapest_parallel_safe_total_inner(innerrel->pathlist);

		if (pouter->param_info == NULL && pinner != NULL &&
			pinner->param_info == NULL && pouter->parallel_safe)
			add_partial_path(joinrel,
							 (Path *) make_gpu_join_path(root, joinrel, jointype,
														 extra, pouter, pinner,
														 keys, joinquals,
														 otherquals, target, true, false));

		/*
		 * A shared build: the participants read a partial inner path
		 * together into shared memory, then each builds its table from all
		 * of it.  Offered only where the inner side fits the participants'
		 * combined budget (past it at run time, both sides go to shared
		 * partitions: join_parts.c) and, on the GPU, the device memory
		 * limit.
		 */
		if (gpuhash_shared_build && innerrel->partial_pathlist != NIL &&
			pouter->param_info == NULL && pouter->parallel_safe)
		{
			Path	   *sinner = linitial(innerrel->partial_pathlist);

			if (sinner->param_info == NULL && sinner->parallel_safe &&
				shared_inner_fits(sinner, list_length(keys), pouter->parallel_workers) &&
				(target != GH_TARGET_GPU ||
				 gh_table_fits_device(sinner->rows * parallel_divisor(sinner))))
				add_partial_path(joinrel,
								 (Path *) make_gpu_join_path(root, joinrel, jointype,
															 extra, pouter, sinner,
															 keys, joinquals,
															 otherquals, target,
															 true, true));
		}
	}
}

/*
 * scan_whole_rows lets a Seq Scan child return its heap tuples as they are,
 * as PostgreSQL's own hash join lets its outer child do (createplan.c's
 * physical target list): a child made for a CustomScan projects exactly the
 * columns its parent asked for, and that projection costs the outer side
 * of a big join more than reading the heap, and the build of a large inner
 * side a tenth of its load.  The join then keeps only the columns it reads,
 * of either side (join_probe.c, join_build.c), and writes only those to
 * temporary files (join_parts.c).  Only a plain table whose rows need no
 * conversion qualifies: no dropped columns, no columns added with a default
 * after the rows were written, no expression, system column or whole row
 * in the target list.
 */
static void
scan_whole_rows(PlannerInfo *root, Plan *plan)
{
	Scan	   *scan = (Scan *) plan;
	RangeTblEntry *rte;
	Relation	rel;
	TupleDesc	desc;
	bool		plain = true;
	ListCell   *lc;

	if (!IsA(plan, SeqScan) || scan->scanrelid == 0)
		return;
	rte = planner_rt_fetch(scan->scanrelid, root);
	if (rte->rtekind != RTE_RELATION)
		return;
	foreach(lc, plan->targetlist)
	{
		Var		   *var = (Var *) lfirst_node(TargetEntry, lc)->expr;

		if (!IsA(var, Var) || var->varno != scan->scanrelid ||
			var->varlevelsup != 0 || var->varattno <= 0)
			return;
	}
	/* the planner holds a lock on the relation already */
	rel = table_open(rte->relid, NoLock);
	desc = RelationGetDescr(rel);
	for (int c = 0; c < desc->natts; c++)
		if (TupleDescAttr(desc, c)->attisdropped ||
			TupleDescAttr(desc, c)->atthasmissing)
			plain = false;
	table_close(rel, NoLock);
	if (plain)
		plan->targetlist = build_physical_tlist(root,
												find_base_rel(root, scan->scanrelid));
}

/*
 * rowid_columns lists, as (scan tlist resno, attribute number) pairs, the
 * columns of the scan tuple that are row identity columns of the query's
 * result relation (ROWID_VAR Vars: tableoid, ctid, a whole row, or an FDW's
 * own), for gpuhash_planner.
 */
static List *
rowid_columns(PlannerInfo *root, List *scan_tlist)
{
	List	   *cols = NIL;
	ListCell   *lc;

	if (root->row_identity_vars == NIL)
		return NIL;
	foreach(lc, scan_tlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		Var		   *var = (Var *) tle->expr;
		RowIdentityVarInfo *ridinfo;

		if (!IsA(var, Var) || var->varno != ROWID_VAR)
			continue;
		ridinfo = list_nth(root->row_identity_vars, var->varattno - 1);
		cols = lappend_int(cols, tle->resno);
		cols = lappend_int(cols, ridinfo->rowidvar->varattno);
	}
	return cols;
}

/*
 * show_rowid_columns makes the row identity columns of each GpuHashJoin
 * under plan into Vars of the result relation (*context, an Index: the
 * final range table index of the ModifyTable above, or 0 where there is
 * none).  setrefs leaves a ROWID_VAR Var in custom_scan_tlist as it is, and
 * EXPLAIN VERBOSE, which deparses the scan tuple's columns from that list,
 * cannot show one ("bogus varno"); PostgreSQL's own joins refer to their
 * children instead.  The list only names the scan tuple's columns for
 * EXPLAIN and gives their types, which do not change.  A walker of
 * gh_plan_walk_children.
 */
static bool
show_rowid_columns(Plan *plan, void *context)
{
	Index	   *modrel = (Index *) context;
	Index		above = *modrel;

	if (IsA(plan, ModifyTable))
		*modrel = ((ModifyTable *) plan)->nominalRelation;
	else if (IsA(plan, SubqueryScan))
		*modrel = 0;
	else if (IsA(plan, CustomScan) &&
			 ((CustomScan *) plan)->methods == &gpuhash_join_scan_methods &&
			 list_length(((CustomScan *) plan)->custom_private) > GHJ_PRIV_ROWID &&
			 *modrel > 0)
	{
		CustomScan *cscan = (CustomScan *) plan;
		List	   *cols = list_nth(cscan->custom_private, GHJ_PRIV_ROWID);

		for (int i = 0; i + 1 < list_length(cols); i += 2)
		{
			TargetEntry *tle = list_nth(cscan->custom_scan_tlist,
										list_nth_int(cols, i) - 1);
			Var		   *var = (Var *) tle->expr;

			if (IsA(var, Var) && var->varno == ROWID_VAR)
				tle->expr = (Expr *) makeVar(*modrel, list_nth_int(cols, i + 1),
											 var->vartype, var->vartypmod,
											 var->varcollid, 0);
		}
	}
	(void) gh_plan_walk_children(plan, show_rowid_columns, context);
	*modrel = above;
	return false;
}

/*
 * gpuhash_planner is the planner_hook: PostgreSQL's planner, then
 * show_rowid_columns over the finished plan, where the query has a result
 * relation and this planning made a GpuHashJoin (gh_plans_made).
 */
static PlannedStmt *
gpuhash_planner(Query *parse, const char *query_string, int cursorOptions,
				ParamListInfo boundParams)
{
	PlannedStmt *stmt;
	uint64		made = gh_plans_made[GH_PLAN_JOIN];
	Index		modrel = 0;

	if (prev_planner_hook)
		stmt = prev_planner_hook(parse, query_string, cursorOptions, boundParams);
	else
		stmt = standard_planner(parse, query_string, cursorOptions, boundParams);
	if (stmt->resultRelations != NIL && gh_plans_made[GH_PLAN_JOIN] != made)
		(void) gh_plan_walk_stmt(stmt, show_rowid_columns, &modrel);
	return stmt;
}

/*
 * gpuhash_plan_join turns the chosen path into a CustomScan whose scan tuple
 * is the outer child's targetlist followed by the inner child's.
 */
static Plan *
gpuhash_plan_join(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
				  List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	Plan	   *outer_plan = linitial(custom_plans);
	Plan	   *inner_plan = lsecond(custom_plans);
	List	   *keys = linitial(best_path->custom_private);
	List	   *joinquals = lsecond(best_path->custom_private);
	List	   *otherquals = lthird(best_path->custom_private);
	List	   *flags = lfourth(best_path->custom_private);
	List	   *scan_tlist = NIL;
	List	   *hashclauses = NIL;
	List	   *outer_hash = NIL,
			   *inner_hash = NIL,
			   *eqfuncs = NIL,
			   *colls = NIL,
			   *swapped = NIL;
	AttrNumber	resno = 1;
	Oid			extfunc = gpuhash_extension_function();
	ListCell   *lc;

	gh_plans_made[GH_PLAN_JOIN]++;	/* gpuhash_planner may walk the plan */
	/* DROP EXTENSION gpuhash invalidates the plan if it is cached */
	if (OidIsValid(extfunc))
		record_plan_function_dependency(root, extfunc);

	scan_whole_rows(root, outer_plan);
	scan_whole_rows(root, inner_plan);
	foreach(lc, outer_plan->targetlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry(copyObject(tle->expr), resno++,
											 NULL, false));
	}
	foreach(lc, inner_plan->targetlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry(copyObject(tle->expr), resno++,
											 NULL, false));
	}

	foreach(lc, keys)
	{
		HashKey    *key = lfirst(lc);
		OpExpr	   *op = (OpExpr *) copyObject(key->rinfo->clause);

		/* the clause as (outer, inner), for the executor and EXPLAIN */
		op->opno = key->opno;
		op->opfuncid = key->swapped ? get_opcode(key->opno) : key->eqfunc;
		op->args = list_make2(copyObject(key->outer_expr),
							  copyObject(key->inner_expr));
		hashclauses = lappend(hashclauses, op);
		outer_hash = lappend_oid(outer_hash, key->outer_hash);
		inner_hash = lappend_oid(inner_hash, key->inner_hash);
		eqfuncs = lappend_oid(eqfuncs, key->eqfunc);
		colls = lappend_oid(colls, key->collation);
		swapped = lappend_int(swapped, key->swapped ? 1 : 0);
	}

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = clauses_of(otherquals);
	cscan->scan.scanrelid = 0;
	cscan->flags = best_path->flags;
	cscan->custom_plans = custom_plans;
	cscan->custom_exprs = list_concat(hashclauses, clauses_of(joinquals));
	cscan->custom_scan_tlist = scan_tlist;
	cscan->custom_private = list_make5(makeInteger(linitial_int(flags)),
									   makeInteger(list_length(outer_plan->targetlist)),
									   makeInteger(lsecond_int(flags)),
									   makeInteger(list_length(keys)),
									   outer_hash);
	cscan->custom_private = lappend(cscan->custom_private, inner_hash);
	cscan->custom_private = lappend(cscan->custom_private, eqfuncs);
	cscan->custom_private = lappend(cscan->custom_private, colls);
	cscan->custom_private = lappend(cscan->custom_private, swapped);
	cscan->custom_private = lappend(cscan->custom_private,
									makeInteger(lthird_int(flags)));
	cscan->custom_private = lappend(cscan->custom_private,
									rowid_columns(root, scan_tlist));
	cscan->methods = &gpuhash_join_scan_methods;
	return &cscan->scan.plan;
}

static bool
check_group_size(int *newval, void **extra, GucSource source)
{
	if (*newval & (*newval - 1))
	{
		GUC_check_errdetail("gpuhash.group_size must be 1, 2, 4, 8, 16 or 32.");
		return false;
	}
	return true;
}
