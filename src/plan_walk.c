/*-------------------------------------------------------------------------
 * plan_walk.c
 *	  Walks of finished plan trees, each node once, for the planner hooks.
 *
 * The planner hooks (join_plan.c's gpuhash_planner, agg_plan.c's
 * gha_planner) and gpuhash_aggregate's packing change a plan that
 * PostgreSQL's planner has finished, and walk it to find what to change.
 * The plan of a deep join has hundreds of levels, so a walk must visit each
 * node once: one that visits a child twice per level (a recursive call
 * inside PostgreSQL's Max() macro is evaluated twice) grows as 2^depth,
 * and one that builds a list of children per node allocates as it goes.
 * gh_plan_walk_children hands each child of a node to a walker without
 * allocating, and checks the stack depth and for interrupts, as the walk of
 * a big plan may run long.
 *
 * Two counters keep the walks honest and cheap:
 *	  - gh_plans_made counts the GpuHashJoin and GpuHashAgg plan nodes made
 *		in this backend.  A hook compares it before and after PostgreSQL's
 *		planner and walks nothing when the planning made none of the nodes
 *		it looks for: a server that preloads gpuhash then plans as
 *		PostgreSQL alone does wherever gpuhash plans nothing (another
 *		database, gpuhash.enabled = off, a query gpuhash does not take).  A
 *		nested planning (a function run while constant folding) only makes
 *		the count grow, so the outer hook then walks too: never too little.
 *	  - gh_plan_walk_visits counts the nodes handed to walkers, which the
 *		tests read (gpuhash_test_plan_walk_visits, plan_check.c) to check
 *		that a walk is linear in the plan's size without timing it.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "nodes/plannodes.h"

#include "gpuhash.h"

uint64		gh_plans_made[GH_PLAN_KINDS];
uint64		gh_plan_walk_visits = 0;

/* visit hands plan to walker, counting the visit. */
static inline bool
visit(Plan *plan, gh_plan_walker walker, void *context)
{
	if (plan == NULL)
		return false;
	gh_plan_walk_visits++;
	return walker(plan, context);
}

/* visit_list hands each plan of plans to walker, until one returns true. */
static bool
visit_list(List *plans, gh_plan_walker walker, void *context)
{
	ListCell   *lc;

	foreach(lc, plans)
		if (visit((Plan *) lfirst(lc), walker, context))
			return true;
	return false;
}

/*
 * gh_plan_walk_children calls walker on each plan directly below plan in a
 * finished plan tree: its left and right trees, and the plans of the nodes
 * that keep their children elsewhere (Append, MergeAppend, BitmapAnd,
 * BitmapOr, CustomScan, SubqueryScan).  The subplans of expressions are not
 * among them (they are the PlannedStmt's, gh_plan_walk_stmt).  Stops at,
 * and returns, the first true that walker returns, as PostgreSQL's tree
 * walkers do.  A walker recurses by calling this on the plan it is given.
 */
bool
gh_plan_walk_children(Plan *plan, gh_plan_walker walker, void *context)
{
	check_stack_depth();
	CHECK_FOR_INTERRUPTS();
	if (visit(plan->lefttree, walker, context) ||
		visit(plan->righttree, walker, context))
		return true;
	switch (nodeTag(plan))
	{
		case T_Append:
			return visit_list(((Append *) plan)->appendplans, walker, context);
		case T_MergeAppend:
			return visit_list(((MergeAppend *) plan)->mergeplans, walker, context);
		case T_BitmapAnd:
			return visit_list(((BitmapAnd *) plan)->bitmapplans, walker, context);
		case T_BitmapOr:
			return visit_list(((BitmapOr *) plan)->bitmapplans, walker, context);
		case T_CustomScan:
			return visit_list(((CustomScan *) plan)->custom_plans, walker, context);
		case T_SubqueryScan:
			return visit(((SubqueryScan *) plan)->subplan, walker, context);
		default:
			return false;
	}
}

/*
 * gh_plan_walk_stmt calls walker on the top of stmt's plan tree, then on
 * each of its subplans (the plans of SubPlans and InitPlans; an entry may
 * be NULL), until one returns true.
 */
bool
gh_plan_walk_stmt(PlannedStmt *stmt, gh_plan_walker walker, void *context)
{
	return visit(stmt->planTree, walker, context) ||
		visit_list(stmt->subplans, walker, context);
}
