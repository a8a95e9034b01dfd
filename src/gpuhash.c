/*-------------------------------------------------------------------------
 * gpuhash.c
 *	  Module set-up: the master switch, and the initialisation of every part.
 *
 * _PG_init runs in the postmaster when gpuhash is in shared_preload_libraries
 * (the normal way) and in a backend when the library is loaded on demand
 * (CREATE EXTENSION, or the first call of one of its functions).  It defines
 * the gpuhash.* settings and installs hooks; it never touches CUDA, because
 * CUDA state does not survive the fork() that creates every backend.  The
 * device layer creates a backend's CUDA context the first time that backend
 * needs the GPU.
 *
 * Settings that only tests and developers use (forcing a plan, planning
 * with the GPU's costs on the CPU twin, injected failures) are defined with
 * GUC_NOT_IN_SAMPLE and listed under PostgreSQL's "Developer Options"
 * category, as PostgreSQL's own developer settings are; a DBA reading
 * pg_settings by category sees them apart from the ones meant for tuning.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"
#include "utils/guc_tables.h"

#include "gpuhash.h"
#include "aggregate.h"
#include "gpuhash_join.h"
#include "heapscan.h"

PG_MODULE_MAGIC;

bool		gpuhash_enabled = true;

void		_PG_init(void);

static void group_developer_options(void);

/*
 * _PG_init defines gpuhash.enabled, the switch every part reads, and has
 * each part define its own settings and install its hooks, as pgvector's
 * access methods do.
 */
void
_PG_init(void)
{
	DefineCustomBoolVariable("gpuhash.enabled",
							 "Lets the planner use gpuhash's GPU operators.",
							 "When off, every plan is PostgreSQL's own.",
							 &gpuhash_enabled,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	gpuhash_init_budget();
	gpuhash_init_monitor();
	gpuhash_init_service();
	gpuhash_init_device();
	gpuhash_init_heapscan();
	gpuhash_init_join_plan();
	gpuhash_init_aggregate();
	gpuhash_init_agg_path();

	/* after every part has defined its settings */
	group_developer_options();
	MarkGUCPrefixReserved("gpuhash");
}

/*
 * group_developer_options moves every gpuhash setting defined with
 * GUC_NOT_IN_SAMPLE into the DEVELOPER_OPTIONS group.  DefineCustom*Variable
 * puts an extension's settings in CUSTOM_OPTIONS and takes no group, so the
 * group is set on the definitions GUC keeps; the flag stays the one mark a
 * part gives its developer settings.
 */
static void
group_developer_options(void)
{
	struct config_generic **vars;
	int			nvars;

#if PG_VERSION_NUM >= 160000
	vars = get_guc_variables(&nvars);
#else
	vars = get_guc_variables();
	nvars = GetNumConfigOptions();
#endif
	for (int i = 0; i < nvars; i++)
	{
		struct config_generic *var = vars[i];

		if (strncmp(var->name, "gpuhash.", strlen("gpuhash.")) == 0 &&
			(var->flags & GUC_NOT_IN_SAMPLE) != 0)
			var->group = DEVELOPER_OPTIONS;
	}
}

