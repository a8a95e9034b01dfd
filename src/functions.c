/*-------------------------------------------------------------------------
 * functions.c
 *	  SQL-callable functions about the device: what GPUs there are, which
 *	  device this backend uses, a copy round trip through it, and the
 *	  device memory this backend holds.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "gpuhash.h"

PG_FUNCTION_INFO_V1(gpuhash_devices);
PG_FUNCTION_INFO_V1(gpuhash_active_device);
PG_FUNCTION_INFO_V1(gpuhash_device_selftest);
PG_FUNCTION_INFO_V1(gpuhash_device_memory);

#define MB (1024 * 1024)
#define SELFTEST_CHUNK ((int64) 16 * MB)

/*
 * gpuhash_devices returns one row per GPU this backend can use.  Free memory
 * needs a context, so it is NULL for a device this backend has not used yet.
 * No GPU (or no driver) means zero rows, not an error.
 */
Datum
gpuhash_devices(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			n = gpuhash_gpu_count();

	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < n; i++)
	{
		gh_device_info info;
		gh_error	err;
		gh_status	st;
		Datum		values[6];
		bool		nulls[6] = {false};

		memset(&err, 0, sizeof(err));
		st = gh_cuda_device_info(i, &info, &err);
		if (st != GH_OK)
			gpuhash_report(st, &err, "reading device properties");
		values[0] = Int32GetDatum(info.ordinal);
		values[1] = CStringGetTextDatum(info.name);
		values[2] = CStringGetTextDatum(psprintf("%d.%d", info.cc_major,
												 info.cc_minor));
		values[3] = Int32GetDatum(info.multiprocessors);
		values[4] = Int64GetDatum((int64) (info.total_bytes / MB));
		if (info.free_bytes > 0)
			values[5] = Int64GetDatum((int64) (info.free_bytes / MB));
		else
			nulls[5] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * gpuhash_active_device returns where a GPU operator would run now in this
 * backend ("gpu" or "cpu"), making that device ready: the first call with a
 * GPU creates the backend's CUDA context.
 */
Datum
gpuhash_active_device(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(cstring_to_text(gpuhash_target_name(gpuhash_exec_target())));
}

/*
 * gpuhash_device_selftest copies nbytes of a pattern to the active device and
 * back through pinned host memory and returns whether it came back intact.
 * It exercises the allocation, copy and release paths of the device layer.
 */
Datum
gpuhash_device_selftest(PG_FUNCTION_ARGS)
{
	int64		nbytes = PG_GETARG_INT64(0);
	GhTarget	target;
	uint8	   *src;
	uint8	   *back;
	void	   *dev;
	bool		same = true;

	if (nbytes < 1 || nbytes > (int64) 1024 * MB)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("nbytes must be between 1 and 1073741824")));

	target = gpuhash_exec_target();
	src = gh_host_alloc(target, nbytes);
	back = gh_host_alloc(target, nbytes);
	dev = gh_dev_alloc(target, nbytes);

	/*
	 * Work in chunks, each copy finished before the next interrupt check, so
	 * that a cancel is seen within one chunk and never finds a copy in flight.
	 */
	for (int64 off = 0; off < nbytes; off += SELFTEST_CHUNK)
	{
		int64		len = Min(SELFTEST_CHUNK, nbytes - off);

		CHECK_FOR_INTERRUPTS();
		for (int64 i = off; i < off + len; i++)
		{
			src[i] = (uint8) (i * 131 + 7);
			back[i] = (uint8) ~src[i];
		}
	}
	for (int64 off = 0; off < nbytes; off += SELFTEST_CHUNK)
	{
		int64		len = Min(SELFTEST_CHUNK, nbytes - off);

		CHECK_FOR_INTERRUPTS();
		gh_copy_htod(target, (uint8 *) dev + off, src + off, len);
		gh_copy_dtoh(target, back + off, (uint8 *) dev + off, len);
		gh_sync(target);
	}
	for (int64 off = 0; off < nbytes && same; off += SELFTEST_CHUNK)
	{
		CHECK_FOR_INTERRUPTS();
		same = memcmp(src + off, back + off, Min(SELFTEST_CHUNK, nbytes - off)) == 0;
	}
	gh_dev_free(dev);
	gh_dev_free(back);
	gh_dev_free(src);
	PG_RETURN_BOOL(same);
}

/*
 * gpuhash_device_memory returns the bytes of device and pinned host memory
 * (or CPU-twin memory) this backend holds through gpuhash right now.
 */
Datum
gpuhash_device_memory(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64((int64) gh_dev_bytes_in_use());
}
