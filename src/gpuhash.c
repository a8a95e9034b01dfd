/*-------------------------------------------------------------------------
 * gpuhash.c
 *	  Module set-up: settings and the initialisation of every part.
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
#include <limits.h>

#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "gpuhash.h"

PG_MODULE_MAGIC;

bool		gpuhash_enabled = true;
int			gpuhash_device = GPUHASH_DEVICE_AUTO;
bool		gpuhash_force_join = false;
int			gpuhash_inject_alloc_failure = 0;

static const struct config_enum_entry device_options[] = {
	{"auto", GPUHASH_DEVICE_AUTO, false},
	{"gpu", GPUHASH_DEVICE_GPU, false},
	{"cpu", GPUHASH_DEVICE_CPU, false},
	{NULL, 0, false}
};

static void assign_inject_alloc_failure(int newval, void *extra);

void		_PG_init(void);

/*
 * _PG_init defines the settings and initialises each part of the module.
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

	DefineCustomEnumVariable("gpuhash.device",
							 "Chooses where gpuhash's operators run.",
							 "auto uses a GPU when one is present and otherwise "
							 "leaves every plan alone; gpu requires a GPU; cpu "
							 "runs the same executor path on a CPU implementation.",
							 &gpuhash_device,
							 GPUHASH_DEVICE_AUTO,
							 device_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gpuhash.force_join",
							 "Plans a GPU hash join wherever it is legal, whatever the cost.",
							 "Meant for tests.",
							 &gpuhash_force_join,
							 false,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("gpuhash.inject_alloc_failure",
							"Makes the Nth device allocation from now fail as out of memory.",
							"Test-only; 0 disables.",
							&gpuhash_inject_alloc_failure,
							0, 0, INT_MAX,
							PGC_SUSET,
							GUC_NOT_IN_SAMPLE,
							NULL, assign_inject_alloc_failure, NULL);

	MarkGUCPrefixReserved("gpuhash");

	gpuhash_init_device();
}

/*
 * assign_inject_alloc_failure restarts the allocation count whenever the
 * setting changes, so that "SET ... = 2" means the second allocation after
 * the SET.
 */
static void
assign_inject_alloc_failure(int newval, void *extra)
{
	gpuhash_reset_alloc_injection();
}
