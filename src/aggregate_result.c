/*-------------------------------------------------------------------------
 * aggregate_result.c
 *	  The result rows of gpuhash_aggregate(): every group of the two sets
 *	  becomes one row.
 *
 * When the input ends (gh_agg_run_complete) the last batch is flushed, the
 * accumulators of both sets come back to the host and the device memory
 * goes back: from then on the run only reads host memory.  A cursor then
 * makes one row per group, the main set's groups first, then the fallback
 * set's, then (no GROUP BY and no group at all) the one row SQL gives over
 * no rows.  A run that spilled (aggregate_spill.c) aggregates its next
 * partition when the cursor has made the rows of the groups in memory, in
 * their place, so that one pass's groups are in memory at a time.  Rows are
 * made on demand (gh_agg_run_next), for the GpuHashAggregate scan, or all
 * into a tuplestore (gh_agg_run_finish), for the set-returning function; the
 * column definition list's type modifiers are applied to each row.
 *
 * Values are what PostgreSQL's aggregates return, byte for byte: integer
 * sums as bigint or NUMERIC, float sums with PostgreSQL's overflow check,
 * and NUMERIC results written directly (aggregate_numeric.c), with
 * numeric_div and numeric_add left for the values that do not fit that path.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "executor/executor.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/float.h"
#include "utils/memutils.h"
#include "utils/numeric.h"

#include "aggregate.h"

static double float_sum(GhGroupSet *s, uint64 g, int c);
static Datum call_value(GhAggRun *run, GhGroupSet *s, int64 g, GhAggCall *call,
						bool *isnull);
static void build_row(GhAggRun *run, GhGroupSet *s, int64 g, Datum *values,
					  bool *nulls);
static void coerce_row(GhAggPlan *plan, Datum *values, bool *nulls);
static void finish_pass(GhAggRun *run);
static bool next_pass(GhAggRun *run);

/*
 * finish_pass flushes the pass's last batch, brings the accumulators of
 * both sets to the host and gives back their device memory; the pass's
 * partitions, if it spilled, are made ready to be read.
 */
static void
finish_pass(GhAggRun *run)
{
	instr_time	t0;

	gh_agg_flush(run);
	INSTR_TIME_SET_CURRENT(t0);
	gh_sync(run->target);
	gh_agg_set_fetch(run, &run->main);
	gh_agg_set_fetch(run, &run->fb);
	gh_agg_spill_end_pass(run);
	{
		Size		dev;

		gh_agg_note_memory(run, gh_agg_group_memory(run, &dev), 0);
		run->spill.device_peak = Max(run->spill.device_peak, dev);
	}
	if (run->spill.pending == NIL)
		gh_agg_staging_free(run);
	if (run->spill.passes == 0)
		run->stats.ms_fetch = gh_ms_since(t0);
}

/*
 * next_pass aggregates the next partition of a spilled run as a pass of its
 * own, in place of the groups whose rows were made: returns false when no
 * partition is left.
 */
static bool
next_pass(GhAggRun *run)
{
	GhAggPart  *part = gh_agg_spill_pop(run);
	TupleTableSlot *slot;
	uint64		n = 0;
	GhAggStats	before = run->stats;
	instr_time	t0;

	if (part == NULL)
		return false;
	INSTR_TIME_SET_CURRENT(t0);
	run->spill.groups += run->main.ngroups + run->fb.ngroups;
	run->spill.passes++;
	gh_agg_sets_reset(run);
	gh_agg_staging_alloc(run);
	while ((slot = gh_agg_spill_read(run, part)) != NULL)
	{
		gh_agg_run_add(run, slot);
		if ((++n & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	finish_pass(run);

	/* the account of the first pass stays its own; later ones are summed */
	run->stats.ms_device_passes += run->stats.ms_device - before.ms_device;
	run->stats.ms_flush = before.ms_flush;
	run->stats.ms_device = before.ms_device;
	run->stats.ms_verify = before.ms_verify;
	run->stats.ms_passes += gh_ms_since(t0);
	return true;
}

/*
 * gh_agg_run_complete finishes the first pass (the input query's rows):
 * from here on the run makes result rows (gh_agg_run_next), and aggregates
 * the partitions of a spilled run one after another as it goes.
 */
void
gh_agg_run_complete(GhAggRun *run)
{
	finish_pass(run);
	run->out.cxt = AllocSetContextCreate(run->cxt, "gpuhash_aggregate row",
										 ALLOCSET_DEFAULT_SIZES);
	run->out.set = 0;
	run->out.next = 0;
	run->out.rows = 0;
}

/*
 * gh_agg_run_rewind starts the result rows again from the first and
 * returns true; a run that spilled has given back the groups of its
 * earlier passes, and returns false: the caller runs the query again.
 */
bool
gh_agg_run_rewind(GhAggRun *run)
{
	if (run->spill.partitions > 0)
		return false;
	run->out.set = 0;
	run->out.next = 0;
	run->out.rows = 0;
	return true;
}

/*
 * gh_agg_run_memory tells what the run's memory budget was and what it
 * took: for EXPLAIN ANALYZE.
 */
void
gh_agg_run_memory(GhAggRun *run, GhAggMemory *mem)
{
	mem->rows_in = run->stats.rows;
	mem->groups = run->spill.groups + run->main.ngroups + run->fb.ngroups;
	mem->ms_device = run->stats.ms_device + run->stats.ms_device_passes;
	mem->budget = run->spill.budget;
	mem->peak = run->spill.peak;
	mem->device_budget = run->spill.device_budget;
	mem->device_peak = run->spill.device_peak;
	mem->staging = run->spill.staging + run->spill.batch_peak;
	mem->total_peak = run->spill.total_peak;
	mem->batch_rows = run->batch.cap;
	mem->passes = 1 + run->spill.passes;
	mem->spilled_rows = run->spill.rows;
	mem->disk_kb = run->spill.disk_kb;
	mem->scan_pages = run->stats.scan_pages;
	mem->scan_checked = run->stats.scan_checked;
	mem->scan_hidden = run->stats.scan_hidden;
	mem->scan_rows_host = run->stats.scan_rows_host;
	mem->scan_ms = run->stats.scan_us / 1000.0;
	mem->dict_global = run->stats.dict_global;
	mem->dict_intro = run->stats.dict_intro;
	mem->dict_packet = run->stats.dict_packet;
}

/*
 * gh_agg_run_next makes the next result row in values and nulls (one entry
 * per output column) and returns true, or returns false after the last.
 * The row's by-reference values stay valid until the next call: their
 * memory is freed 1024 rows at a time.
 */
bool
gh_agg_run_next(GhAggRun *run, Datum *values, bool *nulls)
{
	for (;;)
	{
		GhGroupSet *s = run->out.set == 1 ? &run->fb : &run->main;
		int64		g;
		MemoryContext old;

		if (run->out.set == 3)
		{
			if (!run->out.reported)
				gh_agg_run_report(run);
			return false;
		}
		if (run->out.set == 2)
		{
			/* the groups of the next partition, if the run spilled */
			if (next_pass(run))
			{
				run->out.set = 0;
				run->out.next = 0;
				continue;
			}
			/* no GROUP BY: one group even over no rows, as in SQL */
			run->out.set = 3;
			if (run->nkeys != 0 || run->main.ngroups != 0 || run->fb.ngroups != 0)
				continue;
			g = -1;
		}
		else if (run->out.next < s->ngroups)
			g = (int64) run->out.next++;
		else
		{
			run->out.set++;
			run->out.next = 0;
			continue;
		}

		if (run->out.rows == 0 && !run->out.reported)
			INSTR_TIME_SET_CURRENT(run->out.t_first);
		if ((run->out.rows++ & 1023) == 0)
		{
			MemoryContextReset(run->out.cxt);
			CHECK_FOR_INTERRUPTS();
		}
		if (g >= 0)
			gh_agg_set_window(run, s, (uint64) g);
		old = MemoryContextSwitchTo(run->out.cxt);
		build_row(run, s, g, values, nulls);
		if (run->plan->coerce)
			coerce_row(run->plan, values, nulls);
		MemoryContextSwitchTo(old);
		return true;
	}
}

/*
 * gh_agg_run_finish completes the run and puts every result row into
 * store, for the set-returning function.
 */
void
gh_agg_run_finish(GhAggRun *run, Tuplestorestate *store, TupleDesc desc)
{
	Datum	   *values = palloc(sizeof(Datum) * Max(run->plan->nout, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(run->plan->nout, 1));

	gh_agg_run_complete(run);
	while (gh_agg_run_next(run, values, nulls))
		tuplestore_putvalues(store, desc, values, nulls);
	pfree(values);
	pfree(nulls);
}

/*
 * gh_agg_run_report logs the counts (DEBUG1) and where the time went
 * (DEBUG2), once: when the last row has been made, or at the end if the
 * rows were not all asked for.  When rows are returned one by one (the
 * GpuHashAggregate scan), "result rows" includes the time of the plan nodes
 * above that took them.
 */
void
gh_agg_run_report(GhAggRun *run)
{
	GhAggStats *st = &run->stats;

	if (run->out.reported)
		return;
	run->out.reported = true;
	st->ms_finish = st->ms_fetch +
		(run->out.rows > 0 ? gh_ms_since(run->out.t_first) : 0);

	/* counts that do not depend on the device, then where the time went */
	elog(DEBUG1, "gpuhash_aggregate: %llu input rows, %llu groups on the device, "
		 "%llu colliding keys in the fallback set",
		 (unsigned long long) st->rows,
		 (unsigned long long) (run->main.ngroups + run->spill.groups),
		 (unsigned long long) run->fb.ngroups);
	if (run->spill.partitions > 0)
		elog(DEBUG1, "gpuhash_aggregate: memory budget %zu kB, peak %zu kB of groups; "
			 "%llu rows spilled to %llu partitions, %llu passes, %ld kB of temporary files",
			 run->spill.budget / 1024, run->spill.peak / 1024,
			 (unsigned long long) run->spill.rows,
			 (unsigned long long) run->spill.partitions,
			 (unsigned long long) (1 + run->spill.passes), run->spill.disk_kb);
	elog(DEBUG2, "gpuhash_aggregate on %s, %s keys: %llu packets from parallel workers, "
		 "%llu batches, %llu rows in the fallback set, "
		 "%llu numeric values and %llu text min/max values on the host, %llu rescales; "
		 "ms: total %.1f, input and staging %.1f, device %.1f, key checks %.1f, "
		 "other batch work %.1f, result rows %.1f (of which accumulators to the host %.1f, "
		 "partitions' passes %.1f)",
		 gpuhash_target_name(run->target), run->exact ? "device" : "host-checked",
		 (unsigned long long) st->packets, (unsigned long long) st->batches,
		 (unsigned long long) st->bad_rows,
		 (unsigned long long) st->side_values, (unsigned long long) st->text_values,
		 (unsigned long long) st->rescales,
		 gh_ms_since(st->t_begin),
		 gh_ms_since(st->t_begin) - st->ms_flush - st->ms_finish,
		 st->ms_device, st->ms_verify,
		 st->ms_flush - st->ms_device - st->ms_verify, st->ms_finish,
		 st->ms_fetch, st->ms_passes);

	/*
	 * The input in detail: the executor's wall time splits into packets
	 * copied into batches, batches flushed to the device (both in this
	 * process) and the rest, which is waiting for and receiving rows (for
	 * packets: the Gather's copying out of the tuple queues, and waiting for
	 * the workers); the workers' own scan and packing time is summed over
	 * packets.
	 */
	elog(DEBUG2, "gpuhash_aggregate input: %d of %d planned workers launched, "
		 "%llu packet bytes (%.1f a row); ms: input wall %.1f, of which copying packets %.1f, "
		 "device batches %.1f, receiving and waiting %.1f; "
		 "workers' scan and packing %.1f in all, %.1f per worker",
		 st->workers_launched, st->workers_planned,
		 (unsigned long long) st->packet_bytes,
		 st->rows > 0 ? (double) st->packet_bytes / st->rows : 0.0,
		 st->ms_input, st->ms_copy, st->ms_flush_input,
		 st->ms_input - st->ms_copy - st->ms_flush_input,
		 st->worker_busy_us / 1000.0,
		 st->worker_busy_us / 1000.0 / Max(st->workers_launched, 1));
	if (st->dict_global + st->dict_packet > 0)
		elog(DEBUG2, "gpuhash_aggregate numbered keys: %llu values of the shared dictionary "
			 "(introduced %llu times), %llu packet entries looked up",
			 (unsigned long long) st->dict_global, (unsigned long long) st->dict_intro,
			 (unsigned long long) st->dict_packet);
}

/*
 * float_sum reads group g's float sum of column c, raising PostgreSQL's
 * overflow ERROR when finite inputs gave an infinite (or NaN) sum.
 */
static double
float_sum(GhGroupSet *s, uint64 g, int c)
{
	double		d = GH_AGG_AT(double, s, s->hl.sum_off[c], g);
	uint32		flags = GH_AGG_AT(uint32, s, s->hl.aux_off[c], g);

	if (!isfinite(d) && (flags & (GH_AGG_SAW_INF | GH_AGG_SAW_NAN)) == 0)
		float_overflow_error();
	return d;
}

/*
 * call_value computes aggregate call k of group g of set s (g < 0: the one
 * group of an aggregation without GROUP BY over no rows).  NUMERIC columns
 * are aggregate_numeric.c's.
 */
static Datum
call_value(GhAggRun *run, GhGroupSet *s, int64 g, GhAggCall *call, bool *isnull)
{
	int			c = call->col;
	GhValType	vt = c >= 0 ? run->plan->cols[c].vtype : GHV_OTHER;
	uint64		nn;

	*isnull = false;
	if (g < 0)
	{
		if (call->func == GHAF_COUNT_STAR || call->func == GHAF_COUNT)
			return Int64GetDatum(0);
		*isnull = true;
		return (Datum) 0;
	}
	if (call->func == GHAF_COUNT_STAR)
		return Int64GetDatum((int64) GH_AGG_AT(uint64, s, s->hl.rows_off, g));
	if (vt == GHV_NUMERIC && run->plan->cols[c].kind != GH_AGG_KIND_NONE)
		return gh_agg_numeric_value(run, s, g, call, isnull);
	if (vt == GHV_TEXT && call->func != GHAF_COUNT)
		return gh_agg_text_value(run, s, g, call, isnull);
	nn = GH_AGG_AT(uint64, s, s->hl.nonnull_off[c], g);
	if (call->func == GHAF_COUNT)
		return Int64GetDatum((int64) nn);
	if (nn == 0)
	{
		*isnull = true;
		return (Datum) 0;
	}

	switch (vt)
	{
		case GHV_INT2:
		case GHV_INT4:
		case GHV_INT8:
		case GHV_DATE:
		case GHV_TIMESTAMP:
			switch (call->func)
			{
				case GHAF_SUM:
					{
						int128		v = gh_agg_int_sum(s, g, c);

						if (vt == GHV_INT8)
							return gh_num_make(v, 0);
						if (v < PG_INT64_MIN || v > PG_INT64_MAX)
							ereport(ERROR,
									(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
									 errmsg("bigint out of range")));
						return Int64GetDatum((int64) v);
					}
				case GHAF_AVG:
					{
						int128		v = gh_agg_int_sum(s, g, c);
						Datum		d = gh_num_avg(v, 0, (int64) nn);

						if (d != (Datum) 0)
							return d;
						return DirectFunctionCall2(numeric_div, gh_num_make(v, 0),
												   NumericGetDatum(int64_to_numeric((int64) nn)));
					}
				case GHAF_MIN:
				case GHAF_MAX:
					{
						int64		v = call->func == GHAF_MIN
							? GH_AGG_AT(int64, s, s->hl.min_off[c], g)
							: GH_AGG_AT(int64, s, s->hl.max_off[c], g);

						if (vt == GHV_INT2)
							return Int16GetDatum((int16) v);
						if (vt == GHV_INT4)
							return Int32GetDatum((int32) v);
						if (vt == GHV_DATE)
							return DateADTGetDatum((DateADT) v);
						return Int64GetDatum(v);
					}
				default:
					break;
			}
			break;
		case GHV_FLOAT4:
		case GHV_FLOAT8:
			switch (call->func)
			{
				case GHAF_SUM:
					{
						double		d = float_sum(s, g, c);

						if (vt == GHV_FLOAT4)
						{
							float4		f = (float4) d;

							if (isinf(f) && !isinf(d))
								float_overflow_error();
							return Float4GetDatum(f);
						}
						return Float8GetDatum(d);
					}
				case GHAF_AVG:
					return Float8GetDatum(float_sum(s, g, c) / (double) nn);
				case GHAF_MIN:
				case GHAF_MAX:
					{
						double		d = gh_agg_float_unkey(call->func == GHAF_MIN
														   ? GH_AGG_AT(uint64, s, s->hl.min_off[c], g)
														   : GH_AGG_AT(uint64, s, s->hl.max_off[c], g));

						if (vt == GHV_FLOAT4)
							return Float4GetDatum((float4) d);
						return Float8GetDatum(d);
					}
				default:
					break;
			}
			break;
		case GHV_NUMERIC:
		case GHV_TEXT:
		case GHV_OTHER:
			break;
	}
	elog(ERROR, "gpuhash_aggregate: unexpected aggregate %u", call->fnoid);
	return (Datum) 0;
}

/*
 * build_row makes the result row of group g of set s (g < 0: the one group
 * of an aggregation without GROUP BY over no rows) in values and nulls.
 */
static void
build_row(GhAggRun *run, GhGroupSet *s, int64 g, Datum *values, bool *nulls)
{
	GhAggPlan  *plan = run->plan;

	for (int o = 0; o < plan->nout; o++)
	{
		GhAggOut   *out = &plan->out[o];

		if (out->is_key && s->hl.nkeys > 0)
		{
			/* a key the device grouped and kept */
			nulls[o] = (GH_AGG_AT(uint8, s, s->hl.knull_off, g) >> out->index) & 1;
			values[o] = (Datum) GH_AGG_AT(uint64, s, s->hl.key_off[out->index], g);
			if (!nulls[o])
				values[o] = gh_agg_key_value(run, out->index, (uint64) values[o], 0);
		}
		else if (out->is_key)
		{
			nulls[o] = s->rep_nulls[g * run->nkeys + out->index];
			values[o] = s->rep_vals[g * run->nkeys + out->index];
		}
		else
			values[o] = call_value(run, s, g, &plan->calls[out->index], &nulls[o]);
	}
}

/*
 * coerce_row applies the coercions that aggregate.c's plan_coercions
 * prepared (the column definition list's type modifiers) to one result row,
 * in the current memory context.
 */
static void
coerce_row(GhAggPlan *plan, Datum *values, bool *nulls)
{
	ExprContext *econtext = plan->coerce_cxt;

	for (int i = 0; i < plan->nout; i++)
	{
		if (plan->coerce[i] == NULL || nulls[i])
			continue;
		econtext->caseValue_datum = values[i];
		econtext->caseValue_isNull = false;
		values[i] = ExecEvalExpr(plan->coerce[i], econtext, &nulls[i]);
	}
}
