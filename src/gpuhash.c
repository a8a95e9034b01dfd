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
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "gpuhash.h"
#include "aggregate.h"
#include "gpuhash_join.h"
#include "heapscan.h"

PG_MODULE_MAGIC;

bool		gpuhash_enabled = true;

void		_PG_init(void);

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
	gpuhash_init_service();
	gpuhash_init_device();
	gpuhash_init_heapscan();
	gpuhash_init_join_plan();
	gpuhash_init_aggregate();
	gpuhash_init_agg_path();

	/* after every part has defined its settings */
	MarkGUCPrefixReserved("gpuhash");
}

