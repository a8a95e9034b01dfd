/*-------------------------------------------------------------------------
 * hashtable.h
 *	  The device hash table of one join (hashtable.c), wherever it lives:
 *	  this backend's GPU, the CPU twin, or the GPU service.
 *-------------------------------------------------------------------------
 */
#ifndef GPUHASH_HASHTABLE_H
#define GPUHASH_HASHTABLE_H

#include "gpuhash.h"

/* The device hash table of one join. */
typedef struct GhTable
{
	GhTarget	target;
	gh_mm		mm;
	void	   *mem;			/* table allocation on the target */
	size_t		mem_bytes;
	const uint32 *rows;			/* host view of the table's row array */
	uint32	   *rows_copy;		/* host copy of it (GPU), else NULL */
	bool		rows_identity;	/* every hash distinct: rows[i] = i (rows may
								 * then be NULL; see cuda/gh_layout.h) */
	/* probe buffers */
	uint32		probe_cap;
	void	   *d_probe;
	void	   *d_first;
	void	   *d_count;
	double		device_ms;		/* time spent in device calls */
	double		place_ms[3];	/* gh_table_place on the GPU: its memory, the
								 * hashes' copy, the build (DEBUG2 accounts) */
	GhSvcTableInfo svc;			/* held by the GPU service: svc.id != 0, and the
								 * join probes through svc's probe area */
	bool		shared_view;	/* a view of a parallel peer's service table */
} GhTable;

/*
 * Where a join's table is to be built, as gh_table_where decides it when the
 * build is ready for its table.
 */
typedef struct GhTableWhere
{
	bool		service;		/* the GPU service builds and holds it
								 * (gh_table_build_service) */
	GhTarget	target;			/* the device it is built on */
	bool		gpu_later;		/* built on the CPU twin while this backend's
								 * CUDA context is made; gh_table_move_to_gpu
								 * follows once it is */
} GhTableWhere;

extern bool gh_table_fits_device(double nrows);
extern bool gh_table_fits(double nrows, const gh_mm_params *params,
						  int limit_mb);
extern void gh_table_where(bool parallel_aware, GhTableWhere *where);
extern GhTable *gh_table_build(GhTarget target, const uint64 *hashes,
							   uint32 nrows);
extern GhTable *gh_table_build_grouped(GhTarget target, const uint64 *hashes,
									   uint32 nrows);
extern void gh_table_probe(GhTable *table, const uint64 *hashes, uint32 n,
						   uint32 *first, uint32 *count);
extern bool gh_table_move_to_gpu(GhTable *table);
extern bool gh_table_probe_area(GhTable *table, uint32 cap, uint64 **hashes,
								uint32 **first, uint32 **count);
extern GhTable *gh_table_build_service(const uint64 *hashes, uint32 nrows,
									   uint32 probe_cap, uint32 peer_table,
									   bool for_peers, bool peer_identity,
									   struct dsm_segment *xchg);
extern bool gh_table_service_available(bool parallel_aware);
extern void gh_table_service_send_area(uint32 probe_cap);
extern struct dsm_segment *gh_table_claim_exchange(uint32 nrows,
												   uint64 *token);
extern void gh_table_release_exchange(uint64 token);
extern void gh_table_service_times(double *ms);
extern uint32 gh_table_service_id(const GhTable *table);
extern bool gh_table_shared(const GhTable *table);
extern const char *gh_table_holder(const GhTable *table);
extern void gh_table_drop_rows(GhTable *table);
extern void gh_table_free(GhTable *table);

/*
 * What differs between the tables a backend holds and those the GPU service
 * holds for it, for the functions below that both use.  A backend's memory
 * goes through the device layer (tracked under resource owners) and a
 * failure is an ERROR (gpuhash_report); the service's memory is its own,
 * kept across transactions, and a failure goes back to the backend it
 * serves.
 */
typedef struct GhTableEnv
{
	/*
	 * alloc allocates bytes on target into *ptr.  With oom_ok, no room
	 * returns GH_ERR_OOM (the build then falls back to the CPU twin);
	 * without it, no room is a failure like any other.
	 */
	gh_status	(*alloc) (GhTarget target, size_t bytes, bool oom_ok,
						  void **ptr, gh_error *err);
	void		(*free) (GhTarget target, void *ptr);
	/* raises the ERROR for a failure, never returning; NULL: it is returned */
	void		(*report) (gh_status status, const gh_error *err,
						   const char *action);
	/* whether a table of nrows may go to the GPU at all; NULL: always */
	bool		(*gpu_allows) (uint32 nrows);
	/* told when a table meant for the GPU goes to the CPU twin; may be NULL */
	void		(*no_gpu_room) (uint32 nrows);
} GhTableEnv;

extern gh_status gh_table_place(GhTable *table, GhTarget target,
								const uint64 *hashes, uint32 nrows,
								const gh_mm_params *params,
								const GhTableEnv *env, void *stream,
								gh_error *err);
extern gh_status gh_table_copy_rows(const GhTable *table, uint32 *rows,
									const GhTableEnv *env, void *stream,
									gh_error *err);
extern gh_status gh_table_probe_launch(GhTable *table, const uint64 *hashes,
									   uint32 n, uint32 *first, uint32 *count,
									   const GhTableEnv *env, void *stream,
									   bool *launched, gh_error *err);
extern void gh_table_release(GhTable *table, const GhTableEnv *env,
							 bool with_table);

#endif							/* GPUHASH_HASHTABLE_H */
