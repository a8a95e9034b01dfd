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

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_proc.h"
#include "commands/extension.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/syscache.h"

#include "gpuhash.h"
#include "aggregate.h"
#include "gpuhash_join.h"

PG_MODULE_MAGIC;

bool		gpuhash_enabled = true;
int			gpuhash_device = GPUHASH_DEVICE_AUTO;
bool		gpuhash_force_join = false;
bool		gpuhash_enable_agg = true;
bool		gpuhash_agg_device_filter = true;
bool		gpuhash_cost_as_gpu = false;
bool		gpuhash_force_agg = false;
int			gpuhash_inject_alloc_failure = 0;
int			gpuhash_batch_rows = GPUHASH_BATCH_ROWS_DEFAULT;
double		gpuhash_load_factor = 0.5;
int			gpuhash_group_size = 2;
int			gpuhash_probe_scheme = GH_PROBE_DOUBLE;
int			gpuhash_device_memory_limit = 0;
double		gpuhash_join_setup_cost = 1000.0;
double		gpuhash_worker_context_cost = 20000.0;
double		gpuhash_gpu_join_cost_fraction = 0.5;
bool		gpuhash_shared_build = true;

static const struct config_enum_entry probe_scheme_options[] = {
	{"linear", GH_PROBE_LINEAR, false},
	{"double", GH_PROBE_DOUBLE, false},
	{NULL, 0, false}
};

static const struct config_enum_entry device_options[] = {
	{"auto", GPUHASH_DEVICE_AUTO, false},
	{"gpu", GPUHASH_DEVICE_GPU, false},
	{"cpu", GPUHASH_DEVICE_CPU, false},
	{NULL, 0, false}
};

static const struct config_enum_entry service_options[] = {
	{"off", GPUHASH_SERVICE_OFF, false},
	{"parallel", GPUHASH_SERVICE_PARALLEL, false},
	{"on", GPUHASH_SERVICE_ON, false},
	{"true", GPUHASH_SERVICE_ON, true},
	{"false", GPUHASH_SERVICE_OFF, true},
	{"yes", GPUHASH_SERVICE_ON, true},
	{"no", GPUHASH_SERVICE_OFF, true},
	{"1", GPUHASH_SERVICE_ON, true},
	{"0", GPUHASH_SERVICE_OFF, true},
	{NULL, 0, false}
};


static void assign_inject_alloc_failure(int newval, void *extra);
static bool check_group_size(int *newval, void **extra, GucSource source);

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

	DefineCustomBoolVariable("gpuhash.cost_as_gpu",
							 "With gpuhash.device = cpu, plans as if the operators ran on a GPU.",
							 "Meant for tests: the GPU's cost model and its choices by cost, "
							 "executed by the CPU twin, so that a machine without a GPU sees "
							 "the plans a GPU host would choose.",
							 &gpuhash_cost_as_gpu,
							 false,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gpuhash.force_agg",
							 "Plans GpuHashAgg wherever it is legal, whatever the cost.",
							 "Meant for tests; on the CPU twin as well.",
							 &gpuhash_force_agg,
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

	DefineCustomIntVariable("gpuhash.batch_rows",
							"Outer rows sent to the device per probe batch.",
							NULL,
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
							NULL,
							&gpuhash_group_size,
							2, 1, 32,
							PGC_USERSET,
							0,
							check_group_size, NULL, NULL);

	DefineCustomEnumVariable("gpuhash.probe_scheme",
							 "Hash table probing: linear or double hashing.",
							 NULL,
							 &gpuhash_probe_scheme,
							 GH_PROBE_DOUBLE,
							 probe_scheme_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("gpuhash.device_memory_limit",
							"Device memory one hash table may use; 0 means what the GPU has.",
							"Larger joins are not planned on the GPU; if one runs anyway it "
							"finishes on the CPU.  An aggregation's groups kept on the GPU spill "
							"past it (0: past half of the GPU).  It can only lower "
							"gpuhash.server_device_memory.",
							&gpuhash_device_memory_limit,
							0, 0, INT_MAX,
							PGC_USERSET,
							GUC_UNIT_MB,
							NULL, NULL, NULL);

	/*
	 * The server's budget is the configuration's or a superuser's (ALTER
	 * SYSTEM) and the same in every process: a plain role may lower its own
	 * tables' share (device_memory_limit) but not lift the server's.  No
	 * default cap: the postmaster never touches CUDA, so no size is known
	 * when the setting is read, and how much of the GPU PostgreSQL may have
	 * depends on what else runs on it.
	 */
	DefineCustomIntVariable("gpuhash.server_device_memory",
							"Device memory all of the server's gpuhash work may hold at once; 0 means no server-wide cap.",
							"Backends and the GPU service reserve from it before they allocate device memory, "
							"a CUDA context's share included; a reservation it cannot take waits up to "
							"gpuhash.device_memory_wait, then a join's table goes to the CPU twin.  Server-wide "
							"when gpuhash is in shared_preload_libraries, otherwise per backend.",
							&gpuhash_server_device_memory,
							0, 0, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gpuhash.device_memory_wait",
							"How long a device memory reservation waits for room in gpuhash.server_device_memory.",
							"Then a join's table goes to the CPU twin and other allocations fail as out of "
							"device memory; 0 does not wait.",
							&gpuhash_device_memory_wait,
							1000, 0, 3600 * 1000,
							PGC_USERSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("gpuhash.budget_cpu_twin",
							 "Makes the CPU twin's device allocations reserve from gpuhash.server_device_memory.",
							 "Test-only: lets the budget be tested without a GPU.",
							 &gpuhash_budget_cpu_twin,
							 false,
							 PGC_SUSET,
							 GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	DefineCustomRealVariable("gpuhash.join_setup_cost",
							 "Planner's estimate of the fixed cost of a GPU join.",
							 NULL,
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
							 NULL,
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

	/*
	 * A postmaster setting can be defined only while the library is
	 * preloaded (later it is a FATAL error); loaded later, gpuhash has no
	 * service and the setting does not exist in that session.
	 */
	if (process_shared_preload_libraries_in_progress)
		DefineCustomEnumVariable("gpuhash.gpu_service",
								 "Runs the GPU work of joins in one service process that owns the CUDA context: off, parallel (parallel joins) or on (every join).",
								 "Needs gpuhash in shared_preload_libraries.  Without the service each backend and each parallel worker creates a CUDA context of its own; a serial join probes fastest in its own backend, the participants of a parallel join share one table in the service.",
								 &gpuhash_gpu_service,
								 GPUHASH_SERVICE_PARALLEL,
								 service_options,
								 PGC_POSTMASTER,
								 0,
								 NULL, NULL, NULL);

	MarkGUCPrefixReserved("gpuhash");

	gpuhash_init_budget();
	gpuhash_init_service();
	gpuhash_init_device();
	gpuhash_init_join_plan();
	gpuhash_init_aggregate();
	gpuhash_init_agg_path();
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
