/*-------------------------------------------------------------------------
 * mm_probes_cpu.c
 *	  The multimap's count, retrieve and mark probes on the CPU: test code,
 *	  the reference for mm_probes_gpu.cu.
 *
 * The extension uses only the ranges probe; these three are built on it
 * (gh_mm_probe_ranges_cpu, one probe row at a time), so they follow the
 * library's own layout and probe sequence and add only what each kind of
 * probe makes of a group: retrieve emits outer rows in ascending order, and
 * mark sets a group's bits whole or not at all.
 *-------------------------------------------------------------------------
 */
#include "gh_error.h"
#include "mm_probes.h"

static const uint32_t *mt_candidates(const gh_mm *mm, uint64_t h,
									 uint32_t *count);

/* mt_candidates: the rows of probe hash h's group, *count of them (0: none). */
static const uint32_t *
mt_candidates(const gh_mm *mm, uint64_t h, uint32_t *count)
{
	uint32_t first = 0;

	(void) gh_mm_probe_ranges_cpu(mm, &h, 1, &first, count, NULL);
	return gh_mm_rows(mm) + first;
}

gh_status
mt_probe_count_cpu(const gh_mm *mm, const uint64_t *probe, uint32_t nprobe,
				   gh_probe_kind kind, uint64_t *total, gh_error *err)
{
	uint64_t sum = 0;
	uint32_t p;

	if (!gh_mm_valid(mm) || (nprobe > 0 && probe == NULL) ||
		!gh_kind_valid(kind) || total == NULL)
		return gh_error_set(err, GH_ERR_INVALID, "mt_probe_count_cpu");
	for (p = 0; p < nprobe; p++)
	{
		uint32_t count;

		(void) mt_candidates(mm, probe[p], &count);
		sum += gh_out_count(kind, count);
	}
	*total = sum;
	return gh_error_set(err, GH_OK, NULL);
}

gh_status
mt_probe_retrieve_cpu(const gh_mm *mm, const uint64_t *probe, uint32_t nprobe,
					  gh_probe_kind kind, uint32_t *out_outer,
					  uint32_t *out_inner, uint64_t out_capacity,
					  uint64_t *written, gh_error *err)
{
	uint64_t n = 0;
	uint32_t p;

	if (written != NULL)
		*written = 0;
	if (!gh_mm_valid(mm) || (nprobe > 0 && probe == NULL) ||
		!gh_kind_valid(kind) || written == NULL ||
		(out_capacity > 0 && (out_outer == NULL || out_inner == NULL)))
		return gh_error_set(err, GH_ERR_INVALID, "mt_probe_retrieve_cpu");

	for (p = 0; p < nprobe; p++)
	{
		uint32_t count;
		const uint32_t *cand = mt_candidates(mm, probe[p], &count);
		uint64_t nout = gh_out_count(kind, count);
		uint64_t k;

		for (k = 0; k < nout; k++)
		{
			if (n == out_capacity)
			{
				*written = n;
				return gh_error_set(err, GH_ERR_OVERFLOW,
									"mt_probe_retrieve_cpu");
			}
			out_outer[n] = p;
			out_inner[n] = count ? cand[k] : GH_NO_ROW;
			n++;
		}
	}
	*written = n;
	return gh_error_set(err, GH_OK, NULL);
}

/*
 * A group is marked whole or not at all, so a set bit on its first row means
 * the whole group is already marked: repeated probes of a big group cost one
 * bit test.  (The bits must therefore be set only by this function.)
 */
gh_status
mt_mark_matched_cpu(const gh_mm *mm, const uint64_t *probe, uint32_t nprobe,
					uint32_t *matched, gh_error *err)
{
	uint32_t p;

	if (!gh_mm_valid(mm) || (nprobe > 0 && probe == NULL) ||
		(mm->nrows > 0 && matched == NULL))
		return gh_error_set(err, GH_ERR_INVALID, "mt_mark_matched_cpu");

	for (p = 0; p < nprobe; p++)
	{
		uint32_t count;
		const uint32_t *cand = mt_candidates(mm, probe[p], &count);
		uint32_t k;

		if (count == 0 || (matched[cand[0] >> 5] & (1u << (cand[0] & 31))))
			continue;
		for (k = 0; k < count; k++)
			matched[cand[k] >> 5] |= 1u << (cand[k] & 31);
	}
	return gh_error_set(err, GH_OK, NULL);
}
