/*-------------------------------------------------------------------------
 * plan_check.c
 *	  A test aid: plan a query and check that its plan survives copyObject
 *	  and a nodeToString / stringToNode round trip, as plan caching and
 *	  parallel query need of a CustomScan.
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

static int	count_gpu_joins(Plan *plan);
static int	count_gpu_joins_subplans(List *subplans);
static char *plan_text(Plan *plan);

/* count_gpu_joins counts the GpuHashJoin nodes of a plan tree. */
static int
count_gpu_joins(Plan *plan)
{
	int			n = 0;
	ListCell   *lc;

	if (plan == NULL)
		return 0;
	if (IsA(plan, CustomScan))
	{
		CustomScan *cscan = (CustomScan *) plan;

		if (strcmp(cscan->methods->CustomName, "GpuHashJoin") == 0)
			n++;
		foreach(lc, cscan->custom_plans)
			n += count_gpu_joins(lfirst(lc));
	}
	else if (IsA(plan, Append))
	{
		foreach(lc, ((Append *) plan)->appendplans)
			n += count_gpu_joins(lfirst(lc));
	}
	else if (IsA(plan, SubqueryScan))
		n += count_gpu_joins(((SubqueryScan *) plan)->subplan);
	return n + count_gpu_joins(plan->lefttree) + count_gpu_joins(plan->righttree);
}

/* count_gpu_joins_subplans counts them in a statement's subplans. */
static int
count_gpu_joins_subplans(List *subplans)
{
	int			n = 0;
	ListCell   *lc;

	foreach(lc, subplans)
		n += count_gpu_joins(lfirst(lc));
	return n;
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
	PG_RETURN_INT32(count_gpu_joins(plan->planTree) +
					count_gpu_joins_subplans(plan->subplans));
}
