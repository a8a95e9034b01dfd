/*-------------------------------------------------------------------------
 * plan_check.c
 *	  Test aids: plan a query and check that its plan survives copyObject
 *	  and a nodeToString / stringToNode round trip, as plan caching and
 *	  parallel query need of a CustomScan; and count the plan nodes that
 *	  the planner hooks' walks visit (plan_walk.c).
 *
 * Not part of the extension's API since 0.2, but still in the library:
 * gpuhash--0.1.sql declares it, and a C function's symbol must exist when
 * its CREATE FUNCTION runs (a fresh install runs 0.1's script, then the
 * update to 0.2 that drops it), as contrib modules keep their old versions'
 * entry points.  The tests declare it for themselves (sql/setup.sql).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "optimizer/optimizer.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"

#include "gpuhash.h"

/*
 * gpuhash_plan_survives_copy plans query and checks that its plan tree is
 * unchanged by copyObject and by a nodeToString / stringToNode round trip
 * (what plan caching and parallel query do to it).  Returns the number of
 * GpuHashJoin nodes in the plan, so a test can tell it checked something;
 * raises an ERROR if a copy differs.
 *
 * A test aid, not part of the extension since 0.2: the tests declare it
 * themselves as gpuhash_test_plan_survives_copy (CREATE FUNCTION ... AS
 * '$libdir/gpuhash', which only a superuser may run).  It plans without the
 * executor's permission checks, so it is for superusers only, whoever was
 * granted EXECUTE on such a declaration.
 */
PG_FUNCTION_INFO_V1(gpuhash_plan_survives_copy);

PG_FUNCTION_INFO_V1(gpuhash_plan_walk_visits);

static bool count_gpu_joins(Plan *plan, void *context);
static char *plan_text(Plan *plan);

/*
 * count_gpu_joins adds to *context, an int, the GpuHashJoin nodes of the
 * tree below plan, plan's included.
 */
static bool
count_gpu_joins(Plan *plan, void *context)
{
	if (IsA(plan, CustomScan) &&
		strcmp(((CustomScan *) plan)->methods->CustomName, "GpuHashJoin") == 0)
		(*(int *) context)++;
	return gh_plan_walk_children(plan, count_gpu_joins, context);
}

/* plan_text is nodeToString with every ":location N" made ":location -1". */
static char *
plan_text(Plan *plan)
{
	char	   *in = nodeToString(plan);
	StringInfoData out;
	const char *tag = ":location ";

	initStringInfo(&out);
	while (*in)
	{
		if (strncmp(in, tag, strlen(tag)) == 0)
		{
			appendStringInfoString(&out, ":location -1");
			in += strlen(tag);
			if (*in == '-')
				in++;
			while (*in >= '0' && *in <= '9')
				in++;
		}
		else
			appendStringInfoChar(&out, *in++);
	}
	return out.data;
}

Datum
gpuhash_plan_survives_copy(PG_FUNCTION_ARGS)
{
	char	   *query = text_to_cstring(PG_GETARG_TEXT_PP(0));
	List	   *raw = pg_parse_query(query);
	List	   *stmts;
	PlannedStmt *plan;
	PlannedStmt *copy;
	PlannedStmt *back;
	char	   *text_of_plan;
	int			njoins = 0;

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be superuser to check plans with gpuhash's test aid"),
				 errdetail("It plans queries without checking the caller's privileges.")));
	if (list_length(raw) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("gpuhash's plan copy check takes exactly one statement")));
	stmts = pg_analyze_and_rewrite_fixedparams(linitial(raw), query, NULL, 0, NULL);
	if (list_length(stmts) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the statement must rewrite to exactly one query")));
	/* a utility statement (VACUUM, EXPLAIN, DO, ...) has no plan to check */
	if (linitial_node(Query, stmts)->commandType == CMD_UTILITY)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("gpuhash's plan copy check takes only plannable statements"),
				 errhint("Give it a SELECT, INSERT, UPDATE, DELETE or MERGE.")));
	plan = pg_plan_query(linitial(stmts), query, CURSOR_OPT_PARALLEL_OK, NULL);
	/*
	 * PostgreSQL 15's equal() knows no plan nodes: compare their text, with
	 * token locations blanked (reading a node tree drops them).
	 */
	text_of_plan = plan_text(plan->planTree);
	copy = copyObject(plan);
	if (strcmp(text_of_plan, plan_text(copy->planTree)) != 0)
		elog(ERROR, "copyObject changed the plan");
	back = stringToNode(nodeToString(plan));
	if (strcmp(text_of_plan, plan_text(back->planTree)) != 0)
		elog(ERROR, "the plan changed through nodeToString and stringToNode");
	(void) gh_plan_walk_stmt(plan, count_gpu_joins, &njoins);
	PG_RETURN_INT32(njoins);
}

/*
 * gpuhash_plan_walk_visits returns how many plan nodes the walks of
 * finished plans (plan_walk.c) have visited in this backend: a test plans
 * a query between two calls and compares the difference with the plan's
 * size.  A test aid, declared by the tests themselves as
 * gpuhash_test_plan_walk_visits.
 */
Datum
gpuhash_plan_walk_visits(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64((int64) gh_plan_walk_visits);
}
