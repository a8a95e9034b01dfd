/*-------------------------------------------------------------------------
 * mm_probes.h
 *	  The multimap probes that only the tests and bench/multimap_bench.cu use:
 *	  count, retrieve and mark, on the GPU (mm_probes_gpu.cu) and on the CPU
 *	  (mm_probes_cpu.c), with the join kinds they understand.
 *
 * The extension needs only the ranges probe of gpuhash_cuda.h; these probes
 * stay as test code because they check the table from other angles (every
 * candidate pair, per join kind, and every matched inner row) and the GPU's
 * versions are the benchmark's probe workloads.  Same conventions as the
 * library: plain C, status codes, the caller owns every allocation.
 *-------------------------------------------------------------------------
 */
#ifndef MM_PROBES_H
#define MM_PROBES_H

#include "gh_layout.h"

#define GH_NO_ROW UINT32_MAX /* "no inner row" in an output pair */

/* What a probe returns for each outer (probe) row. */
typedef enum gh_probe_kind
{
	GH_JOIN_INNER = 0, /* every candidate pair */
	GH_JOIN_OUTER,	   /* every candidate pair; (outer, GH_NO_ROW) if none */
	GH_JOIN_SEMI,	   /* the first candidate only */
	GH_JOIN_ANTI	   /* (outer, GH_NO_ROW) for rows with no candidate */
} gh_probe_kind;

/*
 * gh_out_count: output pairs one probe row yields for a group of count
 * candidates; the same rule for count and retrieve, GPU and CPU.
 */
GH_HD uint64_t
gh_out_count(gh_probe_kind kind, uint32_t count)
{
	switch (kind)
	{
		case GH_JOIN_INNER:
			return count;
		case GH_JOIN_OUTER:
			return count ? count : 1;
		case GH_JOIN_SEMI:
			return count ? 1 : 0;
		case GH_JOIN_ANTI:
			return count ? 0 : 1;
	}
	return 0;
}

GH_HD int
gh_kind_valid(int kind)
{
	return kind == GH_JOIN_INNER || kind == GH_JOIN_OUTER ||
		   kind == GH_JOIN_SEMI || kind == GH_JOIN_ANTI;
}

#ifdef __cplusplus
extern "C" {
#endif

/*
 * mt_probe_count_*: the number of output pairs that mt_probe_retrieve_* will
 * write for probe[0..nprobe) with this kind.
 */
gh_status mt_probe_count_gpu(const gh_mm *mm, const uint64_t *d_probe,
							 uint32_t nprobe, gh_probe_kind kind,
							 uint64_t *total, void *stream, gh_error *err);
gh_status mt_probe_count_cpu(const gh_mm *mm, const uint64_t *probe,
							 uint32_t nprobe, gh_probe_kind kind,
							 uint64_t *total, gh_error *err);

/*
 * mt_probe_retrieve_*: write pairs (out_outer[i], out_inner[i]); probe row p
 * is outer row p.  The pairs of one outer row are contiguous; the order of
 * outer rows in the output is unspecified on the GPU.  Returns
 * GH_ERR_OVERFLOW if more than out_capacity pairs would be written; *written
 * is the number written.
 */
gh_status mt_probe_retrieve_gpu(const gh_mm *mm, const uint64_t *d_probe,
								uint32_t nprobe, gh_probe_kind kind,
								uint32_t *d_out_outer, uint32_t *d_out_inner,
								uint64_t out_capacity, uint64_t *written,
								void *stream, gh_error *err);
gh_status mt_probe_retrieve_cpu(const gh_mm *mm, const uint64_t *probe,
								uint32_t nprobe, gh_probe_kind kind,
								uint32_t *out_outer, uint32_t *out_inner,
								uint64_t out_capacity, uint64_t *written,
								gh_error *err);

/*
 * mt_mark_matched_*: set bit r of matched (nrows bits, 32-bit words) for
 * every inner row r that is a candidate of some probe row.
 */
gh_status mt_mark_matched_gpu(const gh_mm *mm, const uint64_t *d_probe,
							  uint32_t nprobe, uint32_t *d_matched,
							  void *stream, gh_error *err);
gh_status mt_mark_matched_cpu(const gh_mm *mm, const uint64_t *probe,
							  uint32_t nprobe, uint32_t *matched,
							  gh_error *err);

#ifdef __cplusplus
}
#endif

#endif /* MM_PROBES_H */
