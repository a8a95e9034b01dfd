/*-------------------------------------------------------------------------
 * device.c
 *	  The device layer: the backend's CUDA context and stream, its device
 *	  memory tracked under resource owners, copies, and device errors.
 *
 * This is the only PostgreSQL-side code that knows whether a GPU is there.
 * It resolves gpuhash.device into a target (GPU, the CPU twin, or none),
 * creates the backend's CUDA context lazily on the first GPU use, owns every
 * device and pinned-host allocation, and turns every gh_status from cuda/
 * into ereport(ERROR) in one place, gpuhash_report: the failures of tables
 * held by the GPU service come back to the backend as a gh_status and are
 * reported there too.
 *
 * Allocations are tracked per ResourceOwner: the one current when they were
 * made.  A resource-release callback frees whatever an owner still holds
 * when it is released, so an ERROR anywhere in a GPU operator (or a
 * cancel, or a subtransaction rollback) gives the device memory back.  The
 * CPU twin's "device" memory is malloc'd and tracked the same way, so the
 * release path is exercised by the tests that run without a GPU.
 *
 * Every device allocation is first reserved from the server-wide budget
 * (device_budget.c, gpuhash.server_device_memory) and given back when it
 * is freed, on the same paths; so is a CUDA context's share, once per
 * process, until it exits.  A reservation the budget refuses is treated as
 * the GPU's own out of memory: an allocation with a fall-back gets NULL,
 * the others an ERROR; a context that gpuhash.device = auto cannot reserve
 * leaves the backend on the CPU twin.  Pinned host memory is host memory
 * and reserves nothing.
 *
 * CUDA is never touched in the postmaster: every entry point that could
 * reach it checks that we are not the postmaster.
 *-------------------------------------------------------------------------
 */
#include <limits.h>

#include "postgres.h"

#include "lib/ilist.h"
#include "miscadmin.h"
#include "postmaster/postmaster.h"
#include "storage/ipc.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "gpuhash.h"

int			gpuhash_device = GPUHASH_DEVICE_AUTO;
int			gpuhash_cuda_device = 0;
bool		gpuhash_cost_as_gpu = false;
int			gpuhash_inject_alloc_failure = 0;

static const struct config_enum_entry device_options[] = {
	{"auto", GPUHASH_DEVICE_AUTO, false},
	{"gpu", GPUHASH_DEVICE_GPU, false},
	{"cpu", GPUHASH_DEVICE_CPU, false},
	{NULL, 0, false}
};

static void assign_inject_alloc_failure(int newval, void *extra);

/* One tracked allocation. */
typedef struct GhAlloc
{
	dlist_node	node;
	ResourceOwner owner;
	GhTarget	target;
	bool		pinned_host;	/* host memory from cudaMallocHost */
	void	   *ptr;
	size_t		bytes;
	uint64		reserved;		/* bytes of the budget it holds */
	uint32		svc_table;		/* a table held by the GPU service
								 * (service_client.c) */
} GhAlloc;

static dlist_head gh_allocs = DLIST_STATIC_INIT(gh_allocs);
static size_t gh_bytes_in_use = 0;

/* Result of probing for GPUs in this backend: -1 until probed. */
static int	gh_gpu_count = -1;
static gh_error gh_probe_error;
static bool gh_context_ready = false;
static bool gh_context_reserved = false;
static void *gh_gpu_stream = NULL;
static bool gh_logged_no_gpu = false;
static int	gh_allocs_since_injection = 0;
/* why the last gpuhash_exec_target under device = auto answered the twin */
static GhFallback gh_exec_fallback = GH_FB_NONE;

static void gh_release_callback(ResourceReleasePhase phase, bool isCommit,
								bool isTopLevel, void *arg);
static void gh_forbid_postmaster(void);
static void gh_gpu_context(void);
static void gh_free_entry(GhAlloc *a, bool report);
static void gh_log_no_gpu(void);
static bool gh_no_gpu_explained(const gh_error *err);
static void gh_prewarm_exit(int code, Datum arg);
static bool gh_reserve_context(bool may_wait);
static GhAlloc *gh_track(GhTarget target, bool pinned_host, size_t bytes);
static bool gh_injected_failure(void);
static uint64 gh_reserve(GhTarget target, size_t bytes, bool oom_ok);
static void *gh_alloc(GhTarget target, size_t bytes, bool device,
					  bool pinned_host, bool oom_ok);
static void gh_free_owned(void *ptr, uint32 svc_table);
static void gh_copy(GhTarget target, void *dst, const void *src, size_t bytes,
					bool to_device);

/*
 * gpuhash_init_device registers the resource-release callback.  Called from
 * _PG_init; touches no CUDA.
 */
void
gpuhash_init_device(void)
{
	DefineCustomEnumVariable("gpuhash.device",
							 "Chooses where gpuhash's operators run.",
							 "auto uses a GPU when one is present and otherwise "
							 "leaves every plan alone; gpu requires a GPU; cpu "
							 "runs the same executor path on the CPU twin of the device code.",
							 &gpuhash_device,
							 GPUHASH_DEVICE_AUTO,
							 device_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	/*
	 * A postmaster setting can be defined only while the library is
	 * preloaded; loaded later (LOAD, CREATE EXTENSION) it would be a FATAL
	 * error, so then the configuration's value is read as a reloadable one,
	 * which each backend takes at its first use of the GPU.
	 */
	DefineCustomIntVariable("gpuhash.cuda_device",
							"Chooses the GPU the server uses, by its CUDA device ordinal.",
							"Every backend and the GPU service use this one GPU; "
							"ordinals count the GPUs that CUDA_VISIBLE_DEVICES "
							"in the server's environment leaves visible.",
							&gpuhash_cuda_device,
							0, 0, 1023,
							process_shared_preload_libraries_in_progress ?
							PGC_POSTMASTER : PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("gpuhash.cost_as_gpu",
							 "With gpuhash.device = cpu, plans as if the operators ran on a GPU.",
							 "Developer option, for tests: the GPU's cost model and its choices "
							 "by cost, executed by the CPU twin, so that a machine without a GPU "
							 "sees the plans a GPU host would choose.",
							 &gpuhash_cost_as_gpu,
							 false,
							 PGC_USERSET,
							 GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("gpuhash.inject_alloc_failure",
							"Makes the Nth device allocation from now fail as out of memory.",
							"Developer option, for tests of the paths that free device memory; 0 disables.",
							&gpuhash_inject_alloc_failure,
							0, 0, INT_MAX,
							PGC_SUSET,
							GUC_NOT_IN_SAMPLE,
							NULL, assign_inject_alloc_failure, NULL);

	RegisterResourceReleaseCallback(gh_release_callback, NULL);
}

/*
 * gh_forbid_postmaster raises an ERROR if called in the postmaster, whose
 * children would inherit CUDA state that does not survive fork().
 */
static void
gh_forbid_postmaster(void)
{
	if (IsPostmasterEnvironment && !IsUnderPostmaster)
		elog(ERROR, "gpuhash must not use CUDA in the postmaster");
}

/*
 * gpuhash_gpu_count returns the number of GPUs this backend can use, probing
 * once per backend.  The probe loads the driver but creates no context.
 */
int
gpuhash_gpu_count(void)
{
	if (gh_gpu_count < 0)
	{
		int			n = 0;

		gh_forbid_postmaster();
		memset(&gh_probe_error, 0, sizeof(gh_probe_error));
		if (gh_cuda_device_count(gpuhash_cuda_device, &n, &gh_probe_error) != GH_OK)
			n = 0;
		gh_gpu_count = n;
	}
	return gh_gpu_count;
}

/*
 * gh_errdetail_no_gpu adds to an ereport the DETAIL that says why err found
 * no usable GPU, and for the reasons gh_no_gpu_explained names, the HINT.
 */
int
gh_errdetail_no_gpu(const gh_error *err)
{
	if (err->device_cc > 0)
	{
		errdetail("The GPU's compute capability is %d.%d; this build of gpuhash has %s.",
				  err->device_cc / 10, err->device_cc % 10,
				  err->build_archs ? err->build_archs : "other device code");
		return errhint("Build gpuhash for the GPU's architecture too: make GPUHASH_CUDA_ARCHS=\"%d\", or the default list of every architecture.",
					   err->device_cc);
	}
	if (err->runtime_version > 0 && err->driver_version == 0)
		return errdetail("No NVIDIA driver is loaded; this build of gpuhash uses CUDA %d.%d.",
						 err->runtime_version / 1000, err->runtime_version % 1000 / 10);
	if (err->runtime_version > 0)
	{
		errdetail("The NVIDIA driver supports CUDA %d.%d; this build of gpuhash needs CUDA %d.0 or later.",
				  err->driver_version / 1000, err->driver_version % 1000 / 10,
				  err->runtime_version / 1000);
		return errhint("Upgrade the NVIDIA driver to one for CUDA %d, or build gpuhash with the CUDA toolkit the driver supports.",
					   err->runtime_version / 1000);
	}
	if (err->device_count > 0)
	{
		errdetail("gpuhash.cuda_device is %d, but CUDA sees %d GPU%s.",
				  gpuhash_cuda_device, err->device_count,
				  err->device_count == 1 ? "" : "s");
		return errhint("Set gpuhash.cuda_device to an ordinal below %d, or check CUDA_VISIBLE_DEVICES in the server's environment.",
					   err->device_count);
	}
	if (err->status == GH_ERR_NO_CUDA_BUILD)
		return errdetail("gpuhash was built without CUDA.");
	return errdetail("CUDA reported %s.", err->cuda_name ? err->cuda_name : "no device");
}

/*
 * gh_no_gpu_explained says whether err is one of the reasons for no usable
 * GPU that gh_errdetail_no_gpu explains with a HINT of its own: the GPU's
 * architecture, a driver too old, or gpuhash.cuda_device.  (No driver at
 * all is a host without a GPU: the callers' own HINT fits it.)
 */
static bool
gh_no_gpu_explained(const gh_error *err)
{
	return err->device_cc > 0 || err->driver_version > 0 ||
		err->device_count > 0;
}

/*
 * gh_log_no_gpu logs, once per backend, why gpuhash.device = auto leaves
 * plans alone.  LOG rather than WARNING: it goes to the server log only, so
 * clients see no change at all on a host without a GPU.
 */
static void
gh_log_no_gpu(void)
{
	if (gh_logged_no_gpu)
		return;
	gh_logged_no_gpu = true;
	if (!gh_budget_first_no_gpu_log())
		return;
	ereport(LOG,
			(errmsg("gpuhash found no usable GPU; gpuhash.device = auto leaves plans unchanged"),
			 gh_errdetail_no_gpu(&gh_probe_error)));
}

/*
 * gpuhash_plan_target says where a GPU operator planned now would run.  It
 * never raises an ERROR and never creates a CUDA context: with device = gpu
 * and no GPU it still answers GPU, so that the executor raises the ERROR the
 * user asked for.  In a database without CREATE EXTENSION gpuhash (or with
 * gpuhash.enabled off) it answers NONE: PostgreSQL's plans stay as they are.
 * device = cpu with gpuhash.cost_as_gpu answers GPU: the GPU's plans, which
 * gpuhash_exec_target then gives to the CPU twin.
 */
GhTarget
gpuhash_plan_target(void)
{
	if (!gpuhash_enabled || !gpuhash_extension_created())
		return GH_TARGET_NONE;
	switch ((GpuhashDeviceSetting) gpuhash_device)
	{
		case GPUHASH_DEVICE_CPU:
			return gpuhash_cost_as_gpu ? GH_TARGET_GPU : GH_TARGET_CPU;
		case GPUHASH_DEVICE_GPU:
			return GH_TARGET_GPU;
		case GPUHASH_DEVICE_AUTO:
			if (gpuhash_gpu_count() > 0)
				return GH_TARGET_GPU;
			gh_log_no_gpu();
			return GH_TARGET_NONE;
	}
	return GH_TARGET_NONE;
}

/*
 * gpuhash_exec_target resolves the target for an operator about to run and
 * makes it ready: for the GPU it creates this backend's context if needed.
 * device = gpu without a usable GPU is an ERROR.  device = auto without one
 * falls back to the CPU twin, since a plan made elsewhere (or before a
 * driver failure) must still return its rows.
 */
GhTarget
gpuhash_exec_target(void)
{
	gh_exec_fallback = GH_FB_NONE;
	switch ((GpuhashDeviceSetting) gpuhash_device)
	{
		case GPUHASH_DEVICE_CPU:
			return GH_TARGET_CPU;
		case GPUHASH_DEVICE_AUTO:
			if (gpuhash_gpu_count() == 0)
			{
				gh_log_no_gpu();
				gh_exec_fallback = GH_FB_NO_GPU;
				return GH_TARGET_CPU;
			}
			if (!gh_reserve_context(true))
			{
				ereport(DEBUG1,
						(errmsg_internal("gpuhash: no room in gpuhash.server_device_memory for this backend's CUDA context; using the CPU twin")));
				gh_exec_fallback = GH_FB_CONTEXT_BUDGET;
				return GH_TARGET_CPU;
			}
			gh_gpu_context();
			return GH_TARGET_GPU;
		case GPUHASH_DEVICE_GPU:
			gh_gpu_context();
			return GH_TARGET_GPU;
	}
	return GH_TARGET_CPU;
}

/*
 * gpuhash_exec_fallback says why the last gpuhash_exec_target answered the
 * CPU twin where gpuhash.device = auto wanted the GPU; GH_FB_NONE if it did
 * not (it answered the GPU, or the twin was what the setting asked for).
 */
GhFallback
gpuhash_exec_fallback(void)
{
	return gh_exec_fallback;
}

/* gpuhash_target_name is target's name in gpuhash.device's words, for EXPLAIN. */
const char *
gpuhash_target_name(GhTarget target)
{
	switch (target)
	{
		case GH_TARGET_GPU:
			return "gpu";
		case GH_TARGET_CPU:
			return "cpu";
		case GH_TARGET_NONE:
			break;
	}
	return "none";
}

/*
 * gh_prewarm_exit waits for a context being created before the backend
 * exits: exit() must not run CUDA's own teardown under the prewarm thread.
 * (A parallel worker that finished on the CPU twin waits here too, and its
 * leader waits for it; leaving with _exit() instead is an idea not yet run
 * on a GPU.)
 */
static void
gh_prewarm_exit(int code, Datum arg)
{
	gh_cuda_context_prewarm_wait();
}

/*
 * gpuhash_prewarm_gpu starts creating this backend's CUDA context in the
 * background when an operator that is about to run will use the GPU, so that
 * the creation overlaps the operator's first work (a join's inner scan).
 * It never raises an ERROR: gpuhash_exec_target still decides, and reports.
 */
void
gpuhash_prewarm_gpu(bool parallel)
{
	static bool exit_hook = false;

	if (gh_context_ready || gpuhash_device == GPUHASH_DEVICE_CPU ||
		gh_svc_available(parallel) || gpuhash_gpu_count() == 0)
		return;
	/* the thread may not reserve: its share is reserved here, or no thread */
	if (!gh_reserve_context(false))
		return;
	if (!exit_hook)
	{
		on_proc_exit(gh_prewarm_exit, (Datum) 0);
		exit_hook = true;
	}
	(void) gh_cuda_context_prewarm(gpuhash_cuda_device);
}

/*
 * gpuhash_gpu_warming says, without waiting, whether an operator that may
 * choose between the GPU and the CPU twin (gpuhash.device = auto) would now
 * have to wait for this backend's CUDA context, still being created on the
 * prewarm thread.  Such an operator starts on the CPU twin and moves to the
 * GPU once this turns false (see the join's probe loop): its first rows do
 * not wait for the driver, which creates the contexts of processes started
 * together nearly one after another (bench/context measures how long).
 * With device = gpu the operator waits instead: that setting means
 * every GPU operator runs on the GPU.
 */
bool
gpuhash_gpu_warming(void)
{
	if (gpuhash_device != GPUHASH_DEVICE_AUTO || gh_context_ready)
		return false;
	return gh_cuda_context_prewarm_busy() != 0;
}

/*
 * gh_reserve_context reserves this process's CUDA context's share of the
 * budget, once: it is held until the process exits, as the context is.
 */
static bool
gh_reserve_context(bool may_wait)
{
	if (!gh_context_reserved)
		gh_context_reserved = gh_budget_reserve(GH_CONTEXT_BUDGET_BYTES, may_wait);
	return gh_context_reserved;
}

/*
 * gh_gpu_context creates this backend's CUDA context (device 0) and its
 * stream the first time the GPU is needed.
 */
static void
gh_gpu_context(void)
{
	gh_error	err;
	gh_status	st;

	if (gh_context_ready)
		return;
	if (gpuhash_gpu_count() == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("gpuhash.device is \"gpu\" but no usable GPU was found"),
				 gh_errdetail_no_gpu(&gh_probe_error),
				 gh_no_gpu_explained(&gh_probe_error) ? 0 :
				 errhint("Set gpuhash.device to \"auto\" to use a GPU only when one is present, or to \"cpu\".")));

	if (!gh_reserve_context(true))
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("gpuhash.server_device_memory has no room for this backend's CUDA context"),
				 errdetail("A context is counted as %llu MB; %llu MB of %d MB are reserved now.",
						   (unsigned long long) (GH_CONTEXT_BUDGET_BYTES >> 20),
						   (unsigned long long) (gh_budget_in_use() >> 20),
						   gpuhash_server_device_memory),
				 errhint("Retry when other sessions' GPU work has finished, or set gpuhash.device to \"auto\" to use the CPU when the GPU has no room.")));
	memset(&err, 0, sizeof(err));
	st = gh_cuda_context_init(gpuhash_cuda_device, &err);
	if (st == GH_OK)
		st = gh_cuda_stream_create(&gh_gpu_stream, &err);
	if (st != GH_OK)
		gpuhash_report(st, &err, "creating the CUDA context");
	gh_context_ready = true;
}

/*
 * gpuhash_report raises the ERROR for a failed device call.  action says
 * what gpuhash was doing, in a phrase that fits "while ...".
 */
void
gpuhash_report(gh_status status, const gh_error *err, const char *action)
{
	const char *name = (err && err->cuda_name) ? err->cuda_name : "none";
	const char *where = (err && err->where) ? err->where : "?";
	const char *text = (err && err->cuda_string) ? err->cuda_string : "";

	switch (status)
	{
		case GH_OK:
			return;
		case GH_ERR_OOM:
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of device memory while %s", action),
					 errdetail("%s failed with %s.", where, name),
					 errhint("Free GPU memory used by other processes, or SET gpuhash.enabled = off to run the query without the GPU.")));
			break;
		case GH_ERR_NO_DEVICE:
		case GH_ERR_NO_CUDA_BUILD:
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("no usable GPU while %s", action),
					 err && err->device_cc > 0 ? gh_errdetail_no_gpu(err) :
					 errdetail("%s failed with %s.", where, name),
					 err && err->device_cc > 0 ? 0 :
					 errhint("Set gpuhash.device to \"auto\" to use a GPU only when one is present, or to \"cpu\".")));
			break;
		case GH_ERR_TABLE_FULL:
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("gpuhash hash table is full while %s", action),
					 errhint("SET gpuhash.enabled = off to run the query without the GPU.")));
			break;
		case GH_ERR_CUDA:
			ereport(ERROR,
					(errcode(ERRCODE_SYSTEM_ERROR),
					 errmsg("GPU operation failed while %s", action),
					 errdetail("%s failed with %s: %s.", where, name, text),
					 errhint("SET gpuhash.enabled = off to run the query without the GPU; the server log may say more.")));
			break;
		case GH_ERR_INVALID:
		case GH_ERR_OVERFLOW:
			elog(ERROR, "gpuhash internal error while %s: %s returned status %d",
				 action, where, (int) status);
			break;
	}
	elog(ERROR, "gpuhash: unknown device status %d while %s", (int) status, action);
}

/*
 * gh_track remembers a fresh allocation under the current resource owner.
 * The entry is made before the allocation itself so that running out of
 * backend memory cannot leave an untracked device buffer.
 */
static GhAlloc *
gh_track(GhTarget target, bool pinned_host, size_t bytes)
{
	GhAlloc    *a;

	if (CurrentResourceOwner == NULL)
		elog(ERROR, "gpuhash device memory requested outside a transaction");
	a = MemoryContextAllocZero(TopMemoryContext, sizeof(GhAlloc));
	a->owner = CurrentResourceOwner;
	a->target = target;
	a->pinned_host = pinned_host;
	a->bytes = bytes;
	return a;
}

/* gh_injected_failure implements gpuhash.inject_alloc_failure. */
static bool
gh_injected_failure(void)
{
	if (gpuhash_inject_alloc_failure <= 0)
		return false;
	return ++gh_allocs_since_injection == gpuhash_inject_alloc_failure;
}

/* gpuhash_reset_alloc_injection starts gpuhash.inject_alloc_failure's count again. */
void
gpuhash_reset_alloc_injection(void)
{
	gh_allocs_since_injection = 0;
}

/*
 * gh_reserve reserves the budget for a device allocation of bytes on target
 * and returns what it reserved.  The GPU's: all of it, or, if the budget
 * has no room, 0 with oom_ok (the caller falls back as from the GPU's own
 * out of memory) and else the out of device memory ERROR.  The CPU twin's
 * reserve only under gpuhash.budget_cpu_twin, and a refusal leaves the
 * allocation in host memory, unreserved, where the GPU's fall-back would
 * put it: the join's rows are the same, the refusal is counted.
 */
static uint64
gh_reserve(GhTarget target, size_t bytes, bool oom_ok)
{
	if (target == GH_TARGET_CPU && !gpuhash_budget_cpu_twin)
		return 0;
	if (gh_budget_reserve(bytes, true))
		return bytes;
	if (target == GH_TARGET_CPU || oom_ok)
		return 0;
	ereport(ERROR,
			(errcode(ERRCODE_OUT_OF_MEMORY),
			 errmsg("out of device memory while allocating device memory"),
			 errdetail("gpuhash.server_device_memory (%d MB, %llu MB reserved now) has no room for %zu bytes.",
					   gpuhash_server_device_memory,
					   (unsigned long long) (gh_budget_in_use() >> 20), bytes),
			 errhint("Retry when other sessions' GPU work has finished, raise gpuhash.device_memory_wait, or SET gpuhash.enabled = off to run the query without the GPU.")));
	return 0;
}

/*
 * gh_alloc makes one tracked allocation on target: pinned host memory, or
 * (device) device memory, reserved from the budget first.  Running out of
 * memory, or of budget, returns NULL when oom_ok, else it is an ERROR, as
 * is every other failure.
 */
static void *
gh_alloc(GhTarget target, size_t bytes, bool device, bool pinned_host,
		 bool oom_ok)
{
	GhAlloc    *a;
	gh_error	err;
	gh_status	st = GH_OK;
	uint64		reserved = 0;

	gh_forbid_postmaster();
	CHECK_FOR_INTERRUPTS();
	if (target == GH_TARGET_NONE)
		elog(ERROR, "gpuhash: allocation with no target device");
	if (bytes == 0)
		bytes = 1;
	a = gh_track(target, pinned_host, bytes);
	memset(&err, 0, sizeof(err));

	if (gh_injected_failure())
	{
		st = GH_ERR_OOM;
		err.status = st;
		err.where = "allocation";
		err.cuda_name = "a failure injected by gpuhash.inject_alloc_failure";
	}
	else if (device && (target == GH_TARGET_GPU || gpuhash_budget_cpu_twin))
	{
		/* a wait may end in a cancel's ERROR: forget the entry first */
		PG_TRY();
		{
			reserved = gh_reserve(target, bytes, oom_ok);
		}
		PG_CATCH();
		{
			pfree(a);
			PG_RE_THROW();
		}
		PG_END_TRY();
		if (reserved == 0 && target == GH_TARGET_GPU)
		{
			pfree(a);
			return NULL;
		}
	}

	if (st == GH_OK && target == GH_TARGET_CPU)
	{
		a->ptr = malloc(bytes);
		if (a->ptr == NULL)
		{
			st = GH_ERR_OOM;
			err.status = st;
			err.where = "malloc";
			err.cuda_name = "ENOMEM";
		}
	}
	else if (st == GH_OK && pinned_host)
		st = gh_cuda_host_alloc(&a->ptr, bytes, &err);
	else if (st == GH_OK)
		st = gh_cuda_malloc(&a->ptr, bytes, &err);

	if (st != GH_OK)
	{
		gh_budget_release(reserved);
		pfree(a);
		if (st == GH_ERR_OOM && oom_ok)
			return NULL;
		gpuhash_report(st, &err, "allocating device memory");
	}
	a->reserved = reserved;
	dlist_push_head(&gh_allocs, &a->node);
	gh_bytes_in_use += bytes;
	return a->ptr;
}

/*
 * gh_dev_alloc returns device memory on target (plain host memory for the
 * CPU twin), freed by gh_dev_free or, at the latest, when the current
 * resource owner is released.
 */
void *
gh_dev_alloc(GhTarget target, size_t bytes)
{
	return gh_alloc(target, bytes, true, false, false);
}

/*
 * gh_dev_try_alloc is gh_dev_alloc, except that running out of memory
 * returns NULL instead of raising an ERROR, for callers with a fallback.
 */
void *
gh_dev_try_alloc(GhTarget target, size_t bytes)
{
	return gh_alloc(target, bytes, true, false, true);
}

/*
 * gh_host_alloc returns host memory suited for copies to and from target:
 * pinned for the GPU, plain for the CPU twin.
 */
void *
gh_host_alloc(GhTarget target, size_t bytes)
{
	return gh_alloc(target, bytes, false, target == GH_TARGET_GPU, false);
}

/*
 * gh_free_entry frees one allocation; report says whether a CUDA failure
 * becomes an ERROR (not during resource release, where we must go on).
 */
static void
gh_free_entry(GhAlloc *a, bool report)
{
	gh_error	err;
	gh_status	st = GH_OK;

	dlist_delete(&a->node);
	gh_bytes_in_use -= a->bytes;
	memset(&err, 0, sizeof(err));
	if (a->svc_table != 0)
		gh_svc_free_table(a->svc_table);
	else if (a->target == GH_TARGET_CPU)
		free(a->ptr);
	else if (a->pinned_host)
		st = gh_cuda_host_free(a->ptr, &err);
	else
		st = gh_cuda_free(a->ptr, &err);
	/* given back once the memory is, whatever the free said */
	gh_budget_release(a->reserved);
	pfree(a);
	if (st != GH_OK)
	{
		if (report)
			gpuhash_report(st, &err, "freeing device memory");
		else
			elog(WARNING, "gpuhash could not free device memory: %s failed with %s",
				 err.where ? err.where : "?", err.cuda_name ? err.cuda_name : "?");
	}
}

/*
 * gh_free_owned frees this backend's allocation ptr, or with svc_table the
 * service table of that id.
 */
static void
gh_free_owned(void *ptr, uint32 svc_table)
{
	dlist_iter	iter;

	dlist_foreach(iter, &gh_allocs)
	{
		GhAlloc    *a = dlist_container(GhAlloc, node, iter.cur);

		if (svc_table != 0 ? a->svc_table == svc_table : a->ptr == ptr)
		{
			gh_free_entry(a, true);
			return;
		}
	}
	elog(ERROR, "gpuhash: freeing device memory it does not own");
}

/* gh_dev_free frees an allocation of gh_dev_alloc or gh_host_alloc. */
void
gh_dev_free(void *ptr)
{
	if (ptr != NULL)
		gh_free_owned(ptr, 0);
}

/*
 * gh_track_service_table makes table id, held for this backend by the GPU
 * service, part of the device memory this backend uses: freed (in the
 * service) by gh_untrack_service_table or when the resource owner current
 * now is released, and counted by gpuhash_device_memory().
 */
void
gh_track_service_table(uint32 id, size_t bytes)
{
	GhAlloc    *a = gh_track(GH_TARGET_NONE, false, bytes);

	a->svc_table = id;
	dlist_push_head(&gh_allocs, &a->node);
	gh_bytes_in_use += bytes;
}

/*
 * gh_untrack_service_table frees table id, tracked by gh_track_service_table,
 * in the service.
 */
void
gh_untrack_service_table(uint32 id)
{
	gh_free_owned(NULL, id);
}

/* gh_dev_bytes_in_use is the device memory this backend holds now. */
size_t
gh_dev_bytes_in_use(void)
{
	return gh_bytes_in_use;
}

/*
 * gh_release_callback frees what the resource owner being released still
 * holds.  On commit that is a leak in gpuhash, reported as a WARNING the
 * way PostgreSQL reports leaked buffers; on abort it is the normal path.
 *
 * An ERROR or a cancel can come while copies or kernels queued on the
 * stream still use these buffers (pinned host memory is freed by
 * cudaFreeHost, which does not wait for them), so the stream is drained
 * first; its own failure does not stop the release.
 */
static void
gh_release_callback(ResourceReleasePhase phase, bool isCommit,
					bool isTopLevel, void *arg)
{
	dlist_mutable_iter iter;
	bool		drained = false;

	if (phase != RESOURCE_RELEASE_AFTER_LOCKS)
		return;
	dlist_foreach_modify(iter, &gh_allocs)
	{
		GhAlloc    *a = dlist_container(GhAlloc, node, iter.cur);

		if (a->owner != CurrentResourceOwner)
			continue;
		if (isCommit)
			elog(WARNING, "gpuhash device memory leak: %zu bytes still allocated",
				 a->bytes);
		if (a->target == GH_TARGET_GPU && !drained && gh_gpu_stream != NULL)
		{
			gh_error	err;

			memset(&err, 0, sizeof(err));
			(void) gh_cuda_stream_sync(gh_gpu_stream, &err);
			drained = true;
		}
		gh_free_entry(a, false);
	}
}

/* gh_stream is the stream of target's work in this backend (NULL for the twin). */
void *
gh_stream(GhTarget target)
{
	return target == GH_TARGET_GPU ? gh_gpu_stream : NULL;
}

/*
 * gh_copy copies bytes between host and device memory of target, queued on
 * the backend's stream (a plain memcpy for the CPU twin).  to_device says
 * which way; the direction also names the action of an ERROR.
 */
static void
gh_copy(GhTarget target, void *dst, const void *src, size_t bytes,
		bool to_device)
{
	gh_error	err;
	gh_status	st;

	if (target == GH_TARGET_CPU)
	{
		memcpy(dst, src, bytes);
		return;
	}
	memset(&err, 0, sizeof(err));
	gh_mon_copied(to_device, bytes);
	if (to_device)
		st = gh_cuda_memcpy_htod(dst, src, bytes, gh_gpu_stream, &err);
	else
		st = gh_cuda_memcpy_dtoh(dst, src, bytes, gh_gpu_stream, &err);
	if (st != GH_OK)
		gpuhash_report(st, &err,
					   to_device ? "copying to the GPU" : "copying from the GPU");
}

/* gh_copy_htod copies host memory to target's device memory. */
void
gh_copy_htod(GhTarget target, void *dst, const void *src, size_t bytes)
{
	gh_copy(target, dst, src, bytes, true);
}

/* gh_copy_dtoh copies target's device memory to host memory. */
void
gh_copy_dtoh(GhTarget target, void *dst, const void *src, size_t bytes)
{
	gh_copy(target, dst, src, bytes, false);
}

/* gh_sync waits for the work queued on target's stream. */
void
gh_sync(GhTarget target)
{
	gh_error	err;
	gh_status	st;

	if (target != GH_TARGET_GPU)
		return;
	memset(&err, 0, sizeof(err));
	st = gh_cuda_stream_sync(gh_gpu_stream, &err);
	if (st != GH_OK)
		gpuhash_report(st, &err, "waiting for the GPU");
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
