/*-------------------------------------------------------------------------
 * plan_costs.c
 *	  The planner's arithmetic that the join's and the aggregate's cost
 *	  models share.
 *
 * Both operators are costed against PostgreSQL's own nodes, so both use the
 * planner's own formulas; they live here, below both, so that neither
 * subsystem calls into the other.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "optimizer/optimizer.h"

#include "gpuhash.h"

/*
 * gh_parallel_divisor is what PostgreSQL's planner divides a partial path's
 * rows by for nworkers workers (costsize.c's get_parallel_divisor): the
 * leader counts for less as the workers grow in number.
 */
double
gh_parallel_divisor(int nworkers)
{
	double		divisor = nworkers;

	if (parallel_leader_participation && 1.0 - 0.3 * nworkers > 0)
		divisor += 1.0 - 0.3 * nworkers;
	return Max(divisor, 1.0);
}
