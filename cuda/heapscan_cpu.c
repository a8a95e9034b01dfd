/*-------------------------------------------------------------------------
 * heapscan_cpu.c
 *	  The CPU twin of the device scan's deforming (gh_heapscan.h): the
 *	  pages of a batch read one line pointer after another with the code the
 *	  kernel runs (heapscan_deform.h).
 *
 * No PostgreSQL headers here.
 *-------------------------------------------------------------------------
 */
#include "heapscan_deform.h"
#include "gh_error.h"

gh_status
gh_hs_deform_cpu(const uint8_t *pages, const uint32_t *first,
				 uint32_t npages, uint32_t nrows, const gh_hs_spec *spec,
				 const gh_hs_out *out, gh_error *err)
{
	if (spec == NULL || out == NULL || spec->natts < 0 || spec->ncols < 0 ||
		npages > UINT32_MAX / GH_BLCKSZ)
		return gh_error_set(err, GH_ERR_INVALID, "gh_hs_deform_cpu");
	for (uint32_t p = 0; p < npages; p++)
	{
		const uint8_t *page = pages + (size_t) p * GH_BLCKSZ;
		uint32_t	end = p + 1 < npages ? first[p + 1] : nrows;
		uint32_t	nitems = gh_hs_nitems(page);

		if (end < first[p] || end > nrows)
			return gh_error_set(err, GH_ERR_INVALID, "gh_hs_deform_cpu");
		/* slots the host counted and the page has no item for: none */
		for (uint32_t i = 1; first[p] + i - 1 < end; i++)
		{
			uint32_t	row = first[p] + i - 1;

			if (i <= nitems)
				gh_hs_deform_one(page, p * GH_BLCKSZ, i, spec, out, row);
			else
			{
				out->status[row] = GH_HS_NONE;
				for (int c = 0; c < spec->ncols; c++)
					out->valid[c][row] = 0;
			}
		}
	}
	return gh_error_set(err, GH_OK, NULL);
}
