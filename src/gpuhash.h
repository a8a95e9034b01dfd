/*-------------------------------------------------------------------------
 * gpuhash.h
 *	  Declarations shared by the PostgreSQL side of gpuhash (src/).
 *-------------------------------------------------------------------------
 */
#ifndef GPUHASH_H
#define GPUHASH_H

#include "portability/instr_time.h"

#include "gpuhash_cuda.h"

/* gpuhash.device */
typedef enum GpuhashDeviceSetting
{
	GPUHASH_DEVICE_AUTO,
	GPUHASH_DEVICE_GPU,
	GPUHASH_DEVICE_CPU
} GpuhashDeviceSetting;

/* Where a GPU operator runs, once gpuhash.device has been resolved. */
typedef enum GhTarget
{
	GH_TARGET_NONE,				/* nowhere: leave PostgreSQL's plans alone */
	GH_TARGET_GPU,
	GH_TARGET_CPU				/* the CPU twin of the device code */
} GhTarget;

/*
 * Why an operator that was to use the GPU ran on the CPU twin (monitor.c
 * names them for the gpuhash_stat_fallbacks view).
 */
typedef enum GhFallback
{
	GH_FB_NONE = 0,
	GH_FB_NO_GPU,				/* device = auto found no usable GPU */
	GH_FB_CONTEXT_BUDGET,		/* no room in the budget for a CUDA context */
	GH_FB_TABLE_LIMIT,			/* a table past device_memory_limit or the budget */
	GH_FB_DEVICE_MEMORY,		/* the GPU or the budget had no room now */
	GH_FB_CONTEXT_NOT_READY,	/* device = auto: done before the context was */
	GH_FB_KINDS
} GhFallback;

/* gh_ms_since returns the milliseconds since start. */
static inline double
gh_ms_since(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	return INSTR_TIME_GET_MILLISEC(now);
}

/* settings, each defined by the file that reads it most */
/* gpuhash.c: the switch every part reads */
extern bool gpuhash_enabled;
/* device.c */
extern int	gpuhash_device;
extern int	gpuhash_cuda_device;
extern bool gpuhash_cost_as_gpu;
extern int	gpuhash_inject_alloc_failure;
/* device_budget.c */
extern int	gpuhash_server_device_memory;
extern int	gpuhash_device_memory_limit;
extern int	gpuhash_device_memory_wait;
extern bool gpuhash_budget_cpu_twin;
/* join_plan.c (the others in gpuhash_join.h) */
extern bool gpuhash_force_join;
extern bool gpuhash_enable_join;
/* agg_plan.c */
extern bool gpuhash_enable_agg;
extern bool gpuhash_agg_device_filter;
extern bool gpuhash_force_agg;
/* gpuhash.batch_rows' default, also the least rows a join's batch holds */
#define GPUHASH_BATCH_ROWS_DEFAULT 65536

/* extension.c */
extern bool gpuhash_extension_created(void);
extern Oid	gpuhash_extension_function(void);

/* plan_costs.c */
extern double gh_parallel_divisor(int nworkers);

/* device layer (device.c) */
extern void gpuhash_init_device(void);
extern GhTarget gpuhash_plan_target(void);
extern GhTarget gpuhash_exec_target(void);
extern GhFallback gpuhash_exec_fallback(void);
extern void gpuhash_prewarm_gpu(bool parallel);
extern bool gpuhash_gpu_warming(void);
extern const char *gpuhash_target_name(GhTarget target);
extern int	gpuhash_gpu_count(void);
extern int	gh_errdetail_no_gpu(const gh_error *err);
extern void gpuhash_report(gh_status status, const gh_error *err,
						   const char *action);
extern void *gh_dev_alloc(GhTarget target, size_t bytes);
extern void *gh_dev_try_alloc(GhTarget target, size_t bytes);
extern void *gh_host_alloc(GhTarget target, size_t bytes);
extern void gh_dev_free(void *ptr);
extern void gh_copy_htod(GhTarget target, void *dst, const void *src,
						 size_t bytes);
extern void gh_copy_dtoh(GhTarget target, void *dst, const void *src,
						 size_t bytes);
extern void gh_sync(GhTarget target);
extern void *gh_stream(GhTarget target);
extern size_t gh_dev_bytes_in_use(void);
extern void gpuhash_reset_alloc_injection(void);
extern void gh_track_service_table(uint32 id, size_t bytes);
extern void gh_untrack_service_table(uint32 id);

/* the server-wide device memory budget (device_budget.c) */
extern void gpuhash_init_budget(void);
extern uint64 gh_budget_cap(void);
extern bool gh_budget_reserve(uint64 bytes, bool may_wait);
extern void gh_budget_count(uint64 bytes);
extern void gh_budget_release(uint64 bytes);
extern uint64 gh_budget_in_use(void);
extern bool gh_budget_first_no_gpu_log(void);

/*
 * The device memory a CUDA context holds, counted as each process's share of
 * the budget once it makes one: a round figure just above what contexts
 * were measured to hold (bench/results/device-2026-11-21.md).
 */
#define GH_CONTEXT_BUDGET_BYTES ((uint64) 520 * 1024 * 1024)

/* the GPU service (service.c, service_client.c) */
typedef enum GpuhashServiceSetting
{
	GPUHASH_SERVICE_OFF = 0,
	GPUHASH_SERVICE_PARALLEL,	/* parallel joins use it; serial ones do not */
	GPUHASH_SERVICE_ON			/* every join uses it */
} GpuhashServiceSetting;
extern int	gpuhash_gpu_service;
typedef struct GhSvcTableInfo
{
	struct dsm_segment *area;	/* the probe area, mapped here */
	uint64	   *hashes;			/* probe_cap hashes to probe ... */
	uint32	   *first;			/* ... and their candidate ranges */
	uint32	   *count;
	uint32		probe_cap;
	uint32		id;
	uint32		ndistinct;
	uint64		capacity;
	uint64		mem_bytes;
	bool		on_gpu;
} GhSvcTableInfo;
extern void gpuhash_init_service(void);
extern bool gh_svc_available(bool parallel);
extern GhTarget gh_svc_target(void);
extern gh_status gh_svc_build(const uint64 *hashes, uint32 n,
							  const gh_mm_params *params, uint32 probe_cap,
							  GhSvcTableInfo *info, uint32 *rows,
							  struct dsm_segment *xchg, gh_error *err);
extern gh_status gh_svc_attach(uint32 src_id, uint32 n,
							   const gh_mm_params *params, uint32 probe_cap,
							   GhSvcTableInfo *info, uint32 *rows, gh_error *err);
extern gh_status gh_svc_probe(uint32 id, uint32 n, gh_error *err);
/* gh_svc_last_times's figures: the call's ms, then service.h's SVC_MS_* */
#define GH_SVC_TIMES 7
extern void gh_svc_last_times(double *ms);
extern void gh_svc_send_area(uint32 probe_cap);
extern struct dsm_segment *gh_svc_claim_exchange(uint32 n, uint64 *token);
extern void gh_svc_release_exchange(uint64 token, bool clean);
extern void gh_svc_free_table(uint32 id);

/* hints to the kernel about large arrays' pages (pages.c) */
extern void gh_advise_huge(void *p, Size len);
extern void gh_populate(const void *p, size_t bytes, bool write);

/* walks of finished plans (plan_walk.c) */
struct Plan;
struct PlannedStmt;
typedef bool (*gh_plan_walker) (struct Plan *plan, void *context);
typedef enum GhPlanKind
{
	GH_PLAN_JOIN,				/* GpuHashJoin */
	GH_PLAN_AGG,				/* GpuHashAgg */
	GH_PLAN_KINDS
} GhPlanKind;
extern uint64 gh_plans_made[GH_PLAN_KINDS];
extern uint64 gh_plan_walk_visits;
extern bool gh_plan_walk_children(struct Plan *plan, gh_plan_walker walker,
								  void *context);
extern bool gh_plan_walk_stmt(struct PlannedStmt *stmt, gh_plan_walker walker,
							  void *context);

/* cumulative statistics and the fallbacks' LOG lines (monitor.c) */
extern void gpuhash_init_monitor(void);
extern void gh_mon_copied(bool to_device, uint64 bytes);
extern void gh_mon_flush(void);
extern void gh_mon_fallback(GhPlanKind op, GhFallback why);
extern void gh_mon_run(GhPlanKind op, GhTarget target, GhFallback why,
					   double device_ms, uint64 spilled);

#endif							/* GPUHASH_H */
