/*-------------------------------------------------------------------------
 * service.h
 *	  The GPU service's protocol: what the service process
 *	  (service_worker.c) and the backends it serves (service_client.c) agree
 *	  on in shared memory.
 *
 * Shared memory (service.c sets it up) holds one request slot per PGPROC.  A
 * backend writes its data into an exchange segment of its own (a DSM
 * segment it keeps mapped for the session; the service attaches it by
 * handle), fills its slot, sets the slot to REQUEST and the service's latch,
 * and waits on its own latch for DONE.  The service serves the waiting
 * requests in slot order, except that the probes on the GPU run together.
 * A backend's exit frees all its tables (BYE); a backend that died without
 * one is found by its pid.
 *
 * The exchange segment carries a BUILD's inner hashes to the service and,
 * for a BUILD or an ATTACH, the table's row array back when some hash
 * repeats.  Each table also has a probe area, a DSM segment the backend
 * creates with the table and the service maps until the table is freed: a
 * PROBE finds its hashes there and leaves the candidate ranges beside them,
 * so that a probe copies nothing.
 *
 * The service never raises an ERROR for a request: a failure goes back in
 * the slot as a gh_status and the CUDA names, and the backend reports it
 * through gpuhash_report as it would its own.
 *
 * The service reserves its device memory from the server-wide budget
 * (device_budget.c) as a backend does, its CUDA context included, and
 * applies the gpuhash.device_memory_limit that the backend sends with a
 * BUILD; it never waits for room, since it serves the very backends that
 * would give some back: a table it has no room for goes to the CPU twin.
 *-------------------------------------------------------------------------
 */
#ifndef GPUHASH_SERVICE_H
#define GPUHASH_SERVICE_H

#include "port/atomics.h"
#include "storage/dsm.h"
#include "storage/latch.h"
#include "storage/spin.h"
#include "utils/timestamp.h"

#include "gpuhash.h"

/* slot states */
#define SVC_IDLE	0
#define SVC_REQUEST	1
#define SVC_DONE	2

/* requests */
typedef enum SvcOp
{
	SVC_OP_BUILD,
	SVC_OP_ATTACH,				/* another view of a table built for a peer */
	SVC_OP_PROBE,
	SVC_OP_FREE,
	SVC_OP_BYE,
	SVC_OP_AREA,				/* map the next BUILD's or ATTACH's probe area now */
	SVC_OP_XAREA				/* claim the service's exchange area for n hashes */
} SvcOp;

/* GhSvcSlot.ms: the service's time on a BUILD or ATTACH, for DEBUG2 */
#define SVC_MS_MAP		0		/* mapping the exchange segment */
#define SVC_MS_AREA		1		/* mapping and pinning the probe area */
#define SVC_MS_TABLE	2		/* the table: memory, copy, build; the row array */
#define SVC_MS_ALLOC	3		/* of which the table's device memory */
#define SVC_MS_COPY		4		/* the hashes' copy to the device */
#define SVC_MS_BUILD	5		/* the build, waited for */
#define SVC_MS_COUNT	6

typedef struct GhSvcSlot
{
	pg_atomic_uint32 state;
	int			pid;			/* the backend using the slot, 0 if none */
	Latch	   *client_latch;
	/* request */
	SvcOp		op;
	dsm_handle	seg;			/* the backend's exchange segment */
	uint32		seg_gen;		/* changes whenever seg does */
	dsm_handle	probe_seg;		/* BUILD, ATTACH, AREA: the table's probe area */
	uint32		probe_cap;		/* rows it holds */
	uint32		table;			/* PROBE, FREE: the table */
	uint32		n;				/* BUILD: inner rows; PROBE: probe rows */
	double		load_factor;
	int			group_size;
	int			scheme;
	int			mem_limit_mb;	/* BUILD: the session's device_memory_limit */
	/* reply */
	gh_status	status;
	uint32		out_table;		/* BUILD */
	uint32		ndistinct;
	uint64		capacity;
	uint64		mem_bytes;
	bool		on_gpu;
	uint64		xarea_token;	/* XAREA: the claim, 0 if refused */
	dsm_handle	xarea;			/* XAREA: the area claimed */
	float		ms[SVC_MS_COUNT];	/* BUILD, ATTACH: where the service's time went */
	char		err_name[64];
	char		err_where[64];
	char		err_text[128];
} GhSvcSlot;

typedef struct GhSvcShared
{
	pid_t		service_pid;	/* 0 while no service is serving */
	Latch	   *service_latch;
	bool		on_gpu;			/* where the service builds tables */

	/*
	 * The service's exchange area for the hashes of a parallel join's shared
	 * build (SVC_OP_XAREA): made by the service, page-locked once and kept
	 * across queries, so that neither the participants nor the service make,
	 * map or free such an area for each build, and the service copies the
	 * hashes to the GPU at full speed.  One build holds it at a time: its
	 * claim's token is xarea_owner (0: free).  A claim given back before
	 * the participants finished writing (an error) leaves it dirty: a
	 * participant of that build may still write into it, so the service
	 * makes a new one for the next claim.
	 */
	slock_t		xarea_mutex;
	uint64		xarea_owner;
	uint64		xarea_tokens;	/* the last token given */
	bool		xarea_dirty;

	/*
	 * The service's state for gpuhash_stat_service (monitor.c), written by
	 * the service process alone: how many of its processes became ready,
	 * whether one stopped for good, the tables it holds now and their
	 * memory (a table's views counted once), and the last failure it
	 * answered a backend with, under state_mutex.
	 */
	uint32		starts;
	bool		stopped;
	TimestampTz started_at;
	pg_atomic_uint32 tables_held;
	pg_atomic_uint64 table_bytes;
	slock_t		state_mutex;
	TimestampTz last_error_at;
	char		last_error[256];
	int			nslots;
	GhSvcSlot	slots[FLEXIBLE_ARRAY_MEMBER];
} GhSvcShared;

/* the shared memory (service.c); NULL where the service is not set up */
extern GhSvcShared *gh_svc;

/* the service process's entry point (service_worker.c) */
extern PGDLLEXPORT void gpuhash_service_main(Datum arg);


/* svc_probe_area_bytes is the size of a probe area for cap probe rows. */
static inline Size
svc_probe_area_bytes(uint32 cap)
{
	return (Size) cap * (sizeof(uint64) + 2 * sizeof(uint32));
}

/*
 * svc_probe_area_layout finds, in the probe area at base of cap rows, the
 * hashes to probe and their candidate ranges (first, count).
 */
static inline void
svc_probe_area_layout(void *base, uint32 cap, uint64 **hashes,
					  uint32 **first, uint32 **count)
{
	*hashes = (uint64 *) base;
	*first = (uint32 *) (*hashes + cap);
	*count = *first + cap;
}

#endif							/* GPUHASH_SERVICE_H */
