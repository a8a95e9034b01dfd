/*-------------------------------------------------------------------------
 * test_multimap_gpu.cu
 *	  GPU static multimap against its CPU twin, exactly; TAP output.
 *
 * Usage: test_multimap_gpu [--quick] [seed]
 *	  --quick: small sizes only, for compute-sanitizer memcheck / racecheck.
 *
 * For each data set the CPU twin (itself checked against brute force by
 * test_multimap_cpu) gives the reference: per-probe candidate counts, pair
 * totals per kind, sorted pairs, matched bits.  Each GPU configuration (group
 * size, scheme, load factor) must then reproduce: capacity and distinct count;
 * a row array that is a permutation; the same candidate *sets* per probe
 * (groups are unordered on the GPU); the same count per kind; retrieve pairs
 * equal as multisets (sorted comparison where small, a linear exact check
 * otherwise), contiguous per outer row, nothing written past the buffer; the
 * same matched bits.  Where the table is small enough, tables also cross
 * sides: the GPU's table probed by the CPU and the CPU's by the GPU must give
 * identical ranges, which proves one layout and one probe sequence.
 *-------------------------------------------------------------------------
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "mm_test_util.h"

/* CK stops the test (TAP's "Bail out!") when a CUDA call of its own fails. */
#define CK(x) check_cuda((x), #x, __LINE__)

static void
check_cuda(cudaError_t e, const char *call, int line)
{
	if (e == cudaSuccess)
		return;
	printf("Bail out! %s: %s (%s:%d)\n", call, cudaGetErrorString(e), __FILE__,
		   line);
	exit(2);
}

static const gh_probe_kind kinds[] = { GH_JOIN_INNER, GH_JOIN_OUTER,
									   GH_JOIN_SEMI, GH_JOIN_ANTI };
static const char *kind_names[] = { "inner", "outer", "semi", "anti" };
static const int all_groups[] = { 1, 2, 4, 8, 16, 32 };
static cudaStream_t stream;

/* Sorted-pair comparison up to this many pairs; beyond, the linear check. */
static const uint64_t kSortLimit = 4000000;
/* Cross-side table checks up to this table size. */
static const size_t kCrossLimit = (size_t) 300 << 20;

template <typename T>
struct DevBuf
{
	T *p = nullptr;
	size_t n = 0;
	explicit DevBuf(size_t count)
	{
		n = count;
		CK(cudaMalloc(&p, sizeof(T) * (count ? count : 1)));
	}
	~DevBuf()
	{
		cudaFree(p);
	}
	DevBuf(const DevBuf &) = delete;
	DevBuf &operator=(const DevBuf &) = delete;
};

struct Data
{
	const char *name;
	uint32_t param;
	std::vector<uint64_t> h, probe;
	uint32_t n = 0, np = 0;
	uint32_t ndistinct = 0;
	std::vector<uint32_t> first, count; /* CPU ranges */
	uint64_t total[4] = { 0, 0, 0, 0 };
	std::vector<uint64_t>
		sorted[4];				   /* CPU pairs, packed and sorted, if small */
	std::vector<uint32_t> matched; /* CPU bits after two mark batches */
	DevBuf<uint64_t> *dh = nullptr, *dprobe = nullptr;
};

/*
 * The library runs on a non-blocking stream, which does not wait for the
 * legacy default stream: so memsets go on that stream, and copies wait for
 * both sides explicitly.
 */
static void
upload(void *dst, const void *src, size_t bytes)
{
	if (bytes)
		CK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
	CK(cudaDeviceSynchronize());
}

static void
download(void *dst, const void *src, size_t bytes)
{
	CK(cudaStreamSynchronize(stream));
	if (bytes)
		CK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

/* The reference for one data set, from the CPU twin. */
static void
make_reference(Data &d)
{
	gh_mm_params prm = { 0.5, 1, GH_PROBE_LINEAR, NULL, 0 };
	uint64_t cap;
	size_t bytes = gh_mm_bytes(d.n, &prm, &cap);
	std::vector<uint64_t> mem(bytes / 8 + 2);
	gh_mm mm;
	gh_error err;

	if (gh_mm_build_cpu(&mm, mem.data(), d.h.data(), d.n, &prm, &err) != GH_OK)
	{
		printf("Bail out! CPU build failed\n");
		exit(2);
	}
	d.ndistinct = mm.ndistinct;
	d.first.assign(d.np + 1, 0);
	d.count.assign(d.np + 1, 0);
	gh_mm_probe_ranges_cpu(&mm, d.probe.data(), d.np, d.first.data(),
						   d.count.data(), &err);
	for (int k = 0; k < 4; k++)
	{
		mt_probe_count_cpu(&mm, d.probe.data(), d.np, kinds[k], &d.total[k],
						   &err);
		d.sorted[k].clear();
		if (d.total[k] <= kSortLimit)
		{
			std::vector<uint32_t> o(d.total[k] + 1), in(d.total[k] + 1);
			uint64_t w;

			mt_probe_retrieve_cpu(&mm, d.probe.data(), d.np, kinds[k],
								  o.data(), in.data(), d.total[k], &w, &err);
			d.sorted[k].resize(w);
			for (uint64_t i = 0; i < w; i++)
				d.sorted[k][i] = ((uint64_t) o[i] << 32) | in[i];
			std::sort(d.sorted[k].begin(), d.sorted[k].end());
		}
	}
	d.matched.assign(d.n / 32 + 1, 0);
	mt_mark_matched_cpu(&mm, d.probe.data(), d.np / 2, d.matched.data(), &err);
	mt_mark_matched_cpu(&mm, d.probe.data() + d.np / 2, d.np - d.np / 2,
						d.matched.data(), &err);
}

static Data *
make_data(mt_rng *rng, uint32_t n, mt_gen gen, uint32_t param, uint32_t np,
		  int match_pct, int specials)
{
	Data *d = new Data;
	mt_ref ref;

	d->name = mt_gen_name(gen);
	d->param = param;
	d->n = n;
	d->np = np;
	d->h.resize(n + 1);
	d->probe.resize(np + 1);
	mt_generate(d->h.data(), n, gen, param, rng);
	mt_ref_build(&ref, d->h.data(), n);
	mt_make_probe(d->probe.data(), np, d->h.data(), n, &ref, match_pct,
				  specials, rng);
	mt_ref_free(&ref);
	make_reference(*d);
	d->dh = new DevBuf<uint64_t>(n);
	d->dprobe = new DevBuf<uint64_t>(np);
	upload(d->dh->p, d->h.data(), sizeof(uint64_t) * n);
	upload(d->dprobe->p, d->probe.data(), sizeof(uint64_t) * np);
	return d;
}

static void
free_data(Data *d)
{
	delete d->dh;
	delete d->dprobe;
	delete d;
}

/* GPU ranges == CPU ranges exactly (same table bytes on both sides). */
static int
same_ranges(const std::vector<uint32_t> &f1, const std::vector<uint32_t> &c1,
			const std::vector<uint32_t> &f2, const std::vector<uint32_t> &c2,
			uint32_t np, const char *what)
{
	for (uint32_t p = 0; p < np; p++)
		if (c1[p] != c2[p] || (c1[p] && f1[p] != f2[p]))
			return mt_fail("%s: probe %u range (%u,%u) vs (%u,%u)", what, p,
						   f1[p], c1[p], f2[p], c2[p]);
	return 1;
}

static int
check_gpu(Data &d, const gh_mm_params &prm, bool cross)
{
	const uint32_t n = d.n, np = d.np;
	uint64_t cap = 0;
	const size_t bytes = gh_mm_bytes(n, &prm, &cap);
	DevBuf<unsigned char> mem(bytes);
	gh_mm mm;
	gh_error err;
	gh_status st;
	std::vector<uint32_t> rows(n + 1), first(np + 1), count(np + 1),
		stamp(n + 1);
	std::vector<unsigned char> seen(np + 1);

	/* Garbage in the allocation: the build must not rely on zeroed memory. */
	CK(cudaMemsetAsync(mem.p, 0xa5, bytes, stream));
	st = gh_mm_build_gpu(&mm, mem.p, d.dh->p, n, &prm, stream, &err);
	if (st != GH_OK)
		return mt_fail("build: status %d (%s %s)", (int) st,
					   err.where ? err.where : "",
					   err.cuda_string ? err.cuda_string : "");
	if (mm.capacity != cap || mm.nrows != n || mm.ndistinct != d.ndistinct ||
		mm.mem != mem.p)
		return mt_fail("gh_mm: capacity %llu/%llu nrows %u ndistinct %u/%u",
					   (unsigned long long) mm.capacity,
					   (unsigned long long) cap, mm.nrows, mm.ndistinct,
					   d.ndistinct);
	download(rows.data(), gh_mm_rows(&mm), sizeof(uint32_t) * n);
	if (!mt_check_permutation(rows.data(), n, stamp.data()) ||
		!mt_check_unique_layout(rows.data(), n, d.ndistinct))
		return 0;

	/* Ranges: same counts, same candidate sets. */
	{
		DevBuf<uint32_t> df(np), dc(np);

		CK(cudaMemsetAsync(df.p, 0xff, sizeof(uint32_t) * (np ? np : 1),
						   stream));
		CK(cudaMemsetAsync(dc.p, 0xff, sizeof(uint32_t) * (np ? np : 1),
						   stream));
		st = gh_mm_probe_ranges_gpu(&mm, d.dprobe->p, np, df.p, dc.p, stream,
									&err);
		CK(cudaStreamSynchronize(stream));
		if (st != GH_OK)
			return mt_fail("ranges: status %d", (int) st);
		download(first.data(), df.p, sizeof(uint32_t) * np);
		download(count.data(), dc.p, sizeof(uint32_t) * np);
	}
	std::fill(stamp.begin(), stamp.end(), 0);
	for (uint32_t p = 0; p < np; p++)
	{
		if (count[p] != d.count[p])
			return mt_fail("ranges: probe %u has %u candidates, CPU %u", p,
						   count[p], d.count[p]);
		/* Every hash distinct: one layout on both sides, the same ranges. */
		if (d.ndistinct == n && count[p] && first[p] != d.first[p])
			return mt_fail("unique hashes: probe %u first %u, CPU %u", p,
						   first[p], d.first[p]);
		if ((uint64_t) first[p] + count[p] > n)
			return mt_fail("ranges: probe %u range past the row array", p);
		/* A group probed again has the same range: checked once is enough. */
		if (count[p] && p > 0 && first[p] == first[p - 1] &&
			count[p] == count[p - 1])
			continue;
		for (uint32_t k = 0; k < count[p]; k++)
		{
			uint32_t r = rows[first[p] + k];

			if (d.h[r] != d.probe[p])
				return mt_fail("ranges: probe %u got row %u of another hash",
							   p, r);
			if (stamp[r] == p + 1)
				return mt_fail("ranges: probe %u got row %u twice", p, r);
			stamp[r] = p + 1;
		}
	}

	for (int k = 0; k < 4; k++)
	{
		const uint64_t total = d.total[k];
		uint64_t got = UINT64_MAX, written = UINT64_MAX;
		const uint64_t guard = 64;

		st = mt_probe_count_gpu(&mm, d.dprobe->p, np, kinds[k], &got, stream,
								&err);
		if (st != GH_OK || got != total)
			return mt_fail("%s count: status %d, %llu vs CPU %llu",
						   kind_names[k], (int) st, (unsigned long long) got,
						   (unsigned long long) total);

		DevBuf<uint32_t> dout(total + guard), din(total + guard);
		std::vector<uint32_t> o(total + guard), in(total + guard);

		CK(cudaMemsetAsync(dout.p, 0xee, sizeof(uint32_t) * (total + guard),
						   stream));
		CK(cudaMemsetAsync(din.p, 0xee, sizeof(uint32_t) * (total + guard),
						   stream));
		st = mt_probe_retrieve_gpu(&mm, d.dprobe->p, np, kinds[k], dout.p,
								   din.p, total, &written, stream, &err);
		if (st != GH_OK || written != total)
			return mt_fail("%s retrieve: status %d, wrote %llu of %llu",
						   kind_names[k], (int) st,
						   (unsigned long long) written,
						   (unsigned long long) total);
		download(o.data(), dout.p, sizeof(uint32_t) * (total + guard));
		download(in.data(), din.p, sizeof(uint32_t) * (total + guard));
		for (uint64_t i = total; i < total + guard; i++)
			if (o[i] != 0xeeeeeeeeu || in[i] != 0xeeeeeeeeu)
				return mt_fail("%s retrieve wrote past its capacity",
							   kind_names[k]);
		if (!mt_check_pairs(kinds[k], d.h.data(), n, d.probe.data(), np,
							d.count.data(), o.data(), in.data(), written,
							stamp.data(), seen.data()))
			return 0;
		if (kinds[k] == GH_JOIN_SEMI)
		{
			/* "First candidate": the first row of the probe's range. */
			for (uint64_t i = 0; i < written; i++)
				if (in[i] != rows[first[o[i]]])
					return mt_fail(
						"semi: outer %u got %u, first of its range is %u",
						o[i], in[i], rows[first[o[i]]]);
		}
		else if (total <= kSortLimit)
		{
			std::vector<uint64_t> packed(written);

			for (uint64_t i = 0; i < written; i++)
				packed[i] = ((uint64_t) o[i] << 32) | in[i];
			std::sort(packed.begin(), packed.end());
			if (packed != d.sorted[k])
				return mt_fail(
					"%s retrieve: sorted pairs differ from the CPU's",
					kind_names[k]);
		}

		/* Overflow: one pair short, and no room at all. */
		if (total > 0)
		{
			CK(cudaMemsetAsync(dout.p, 0xee,
							   sizeof(uint32_t) * (total + guard), stream));
			CK(cudaMemsetAsync(din.p, 0xee, sizeof(uint32_t) * (total + guard),
							   stream));
			st = mt_probe_retrieve_gpu(&mm, d.dprobe->p, np, kinds[k], dout.p,
									   din.p, total - 1, &written, stream,
									   &err);
			if (st != GH_ERR_OVERFLOW || err.status != GH_ERR_OVERFLOW ||
				written != total - 1)
				return mt_fail("%s overflow: status %d written %llu",
							   kind_names[k], (int) st,
							   (unsigned long long) written);
			download(o.data(), dout.p, sizeof(uint32_t) * (total + guard));
			download(in.data(), din.p, sizeof(uint32_t) * (total + guard));
			for (uint64_t i = total - 1; i < total + guard; i++)
				if (o[i] != 0xeeeeeeeeu || in[i] != 0xeeeeeeeeu)
					return mt_fail("%s overflow wrote past the buffer",
								   kind_names[k]);
			for (uint64_t i = 0; i + 1 < total; i++)
				if (o[i] >= np ||
					(in[i] == GH_NO_ROW
						 ? d.count[o[i]] != 0
						 : in[i] >= n || d.h[in[i]] != d.probe[o[i]]))
					return mt_fail("%s overflow: pair %llu is not a candidate",
								   kind_names[k], (unsigned long long) i);
			st = mt_probe_retrieve_gpu(&mm, d.dprobe->p, np, kinds[k], nullptr,
									   nullptr, 0, &written, stream, &err);
			if (st != GH_ERR_OVERFLOW || written != 0)
				return mt_fail("%s overflow at capacity 0: status %d",
							   kind_names[k], (int) st);
		}
	}

	/* Matched bits, two batches accumulating. */
	{
		DevBuf<uint32_t> dm(n / 32 + 1);
		std::vector<uint32_t> m(n / 32 + 1);

		CK(cudaMemsetAsync(dm.p, 0, sizeof(uint32_t) * (n / 32 + 1), stream));
		st = mt_mark_matched_gpu(&mm, d.dprobe->p, np / 2, dm.p, stream, &err);
		if (st == GH_OK)
			st = mt_mark_matched_gpu(&mm, d.dprobe->p + np / 2, np - np / 2,
									 dm.p, stream, &err);
		CK(cudaStreamSynchronize(stream));
		if (st != GH_OK)
			return mt_fail("mark_matched: status %d", (int) st);
		download(m.data(), dm.p, sizeof(uint32_t) * (n / 32 + 1));
		if (m != d.matched)
			return mt_fail("mark_matched bits differ from the CPU's");
	}

	if (cross && bytes <= kCrossLimit)
	{
		/* The GPU's table, probed by the CPU. */
		std::vector<uint64_t> host(bytes / 8 + 2);
		std::vector<uint32_t> f2(np + 1), c2(np + 1);
		gh_mm hm = mm;

		download(host.data(), mem.p, bytes);
		hm.mem = host.data();
		if (gh_mm_probe_ranges_cpu(&hm, d.probe.data(), np, f2.data(),
								   c2.data(), &err) != GH_OK ||
			!same_ranges(first, count, f2, c2, np,
						 "GPU table probed by the CPU"))
			return mt_fail("GPU table probed by the CPU differs");

		/* The CPU's table (same parameters), probed by the GPU. */
		gh_mm cm;
		std::vector<uint32_t> f3(np + 1), c3(np + 1);
		DevBuf<unsigned char> dmem(bytes);
		DevBuf<uint32_t> df(np), dc(np);
		uint64_t tot = 0;

		if (gh_mm_build_cpu(&cm, host.data(), d.h.data(), n, &prm, &err) !=
			GH_OK)
			return mt_fail("CPU build with the same parameters failed");
		if (gh_mm_probe_ranges_cpu(&cm, d.probe.data(), np, f2.data(),
								   c2.data(), &err) != GH_OK)
			return mt_fail("CPU ranges failed");
		upload(dmem.p, host.data(), bytes);
		cm.mem = dmem.p;
		st = gh_mm_probe_ranges_gpu(&cm, d.dprobe->p, np, df.p, dc.p, stream,
									&err);
		CK(cudaStreamSynchronize(stream));
		download(f3.data(), df.p, sizeof(uint32_t) * np);
		download(c3.data(), dc.p, sizeof(uint32_t) * np);
		if (st != GH_OK ||
			!same_ranges(f2, c2, f3, c3, np, "CPU table probed by the GPU"))
			return mt_fail("CPU table probed by the GPU differs");
		if (mt_probe_count_gpu(&cm, d.dprobe->p, np, GH_JOIN_OUTER, &tot,
							   stream, &err) != GH_OK ||
			tot != d.total[1])
			return mt_fail("CPU table: GPU outer count %llu",
						   (unsigned long long) tot);
	}
	return 1;
}

static void
run(Data *d, const double *lfs, int nlf, const int *gs, int ng, bool cross)
{
	for (int li = 0; li < nlf; li++)
		for (int gi = 0; gi < ng; gi++)
			for (int s = 0; s < 2; s++)
			{
				gh_mm_params prm = { lfs[li], gs[gi],
									 s ? GH_PROBE_DOUBLE : GH_PROBE_LINEAR,
									 NULL, 0 };
				double t0 = mt_now();
				int ok = check_gpu(*d, prm, cross);

				mt_result(
					ok,
					"%s(%u) n=%u distinct=%u probes=%u lf=%.2f G=%d %s (%.0f ms)",
					d->name, d->param, d->n, d->ndistinct, d->np, lfs[li],
					gs[gi], s ? "double" : "linear", 1e3 * (mt_now() - t0));
			}
}

static void
data_run(mt_rng *rng, uint32_t n, mt_gen gen, uint32_t param, uint32_t np,
		 int match_pct, int specials, const double *lfs, int nlf,
		 const int *gs, int ng, bool cross)
{
	Data *d = make_data(rng, n, gen, param, np, match_pct, specials);

	run(d, lfs, nlf, gs, ng, cross);
	free_data(d);
}

static void
test_errors(mt_rng *rng, bool quick)
{
	gh_mm_params prm = { 0.5, 4, GH_PROBE_LINEAR, NULL, 0 };
	gh_mm mm;
	gh_error err;
	uint64_t h[64];
	DevBuf<uint64_t> dh(64);
	DevBuf<unsigned char> mem(1 << 16);
	DevBuf<uint32_t> dout(64);
	uint64_t total = 0, written = 0;
	int ok;

	mt_generate(h, 64, MT_RANDOM, 0, rng);
	upload(dh.p, h, sizeof(h));

	ok = 1;
	{
		gh_mm_params bad = prm;

		bad.load_factor = 0.96;
		ok &= gh_mm_build_gpu(&mm, mem.p, dh.p, 10, &bad, stream, &err) ==
			  GH_ERR_INVALID;
		bad = prm;
		bad.group_size = 12;
		ok &= gh_mm_build_gpu(&mm, mem.p, dh.p, 10, &bad, stream, &err) ==
			  GH_ERR_INVALID;
		ok &= err.status == GH_ERR_INVALID && err.where != nullptr &&
			  err.cuda_code == 0;
		ok &= gh_mm_build_gpu(&mm, nullptr, dh.p, 10, &prm, stream, &err) ==
			  GH_ERR_INVALID;
		ok &= gh_mm_build_gpu(&mm, mem.p + 4, dh.p, 10, &prm, stream, &err) ==
			  GH_ERR_INVALID;
		ok &= gh_mm_build_gpu(&mm, mem.p, nullptr, 10, &prm, stream, &err) ==
			  GH_ERR_INVALID;
		ok &= gh_mm_build_gpu(&mm, mem.p, dh.p, 10, nullptr, stream,
							  nullptr) == GH_ERR_INVALID;
	}
	ok &= gh_mm_build_gpu(&mm, mem.p, dh.p, 64, &prm, stream, &err) == GH_OK;
	ok &= mt_probe_count_gpu(&mm, dh.p, 8, (gh_probe_kind) 5, &total, stream,
							 &err) == GH_ERR_INVALID;
	ok &= mt_probe_count_gpu(&mm, dh.p, 8, GH_JOIN_INNER, nullptr, stream,
							 &err) == GH_ERR_INVALID;
	ok &= mt_probe_retrieve_gpu(&mm, dh.p, 8, GH_JOIN_INNER, nullptr, dout.p,
								4, &written, stream, &err) == GH_ERR_INVALID;
	ok &= gh_mm_probe_ranges_gpu(&mm, dh.p, 8, nullptr, dout.p, stream,
								 &err) == GH_ERR_INVALID;
	ok &= mt_mark_matched_gpu(&mm, dh.p, 8, nullptr, stream, &err) ==
		  GH_ERR_INVALID;
	ok &= mt_probe_count_gpu(&mm, nullptr, 0, GH_JOIN_ANTI, &total, stream,
							 &err) == GH_OK &&
		  total == 0;
	ok &= mt_probe_retrieve_gpu(&mm, nullptr, 0, GH_JOIN_OUTER, nullptr,
								nullptr, 0, &written, stream, &err) == GH_OK &&
		  written == 0;
	/* The default stream works too. */
	ok &= mt_probe_count_gpu(&mm, dh.p, 64, GH_JOIN_INNER, &total, nullptr,
							 &err) == GH_OK &&
		  total == 64;
	if (!ok)
		mt_fail("an invalid argument was accepted or a valid one refused");
	mt_result(ok,
			  "GPU: invalid arguments give GH_ERR_INVALID, empty probes pass");

	for (int s = 0; s < 2; s++)
	{
		prm.scheme = s ? GH_PROBE_DOUBLE : GH_PROBE_LINEAR;
		gh_status st = gh_mm_build_gpu_capacity(&mm, mem.p, dh.p, 64, &prm, 32,
												stream, &err);

		ok = st == GH_ERR_TABLE_FULL && err.status == GH_ERR_TABLE_FULL;
		if (!ok)
			mt_fail("status %d", (int) st);
		mt_result(ok, "GPU: table full gives GH_ERR_TABLE_FULL (%s)",
				  s ? "double" : "linear");
	}

	for (int i = 0; i < 4; i++)
	{
		uint64_t absent[16];
		DevBuf<uint64_t> da(16);
		DevBuf<uint32_t> df(16), dc(16);
		uint32_t c[16], f[16];
		uint32_t rows[32];

		prm.scheme = (i & 1) ? GH_PROBE_DOUBLE : GH_PROBE_LINEAR;
		prm.group_size = (i & 2) ? 8 : 1;
		mt_generate(absent, 16, MT_RANDOM, 0, rng);
		upload(da.p, absent, sizeof(absent));
		gh_status st = gh_mm_build_gpu_capacity(&mm, mem.p, dh.p, 32, &prm, 32,
												stream, &err);

		ok = st == GH_OK && mm.ndistinct == 32;
		ok = ok && gh_mm_probe_ranges_gpu(&mm, da.p, 16, df.p, dc.p, stream,
										  &err) == GH_OK;
		CK(cudaStreamSynchronize(stream));
		download(c, dc.p, sizeof(c));
		for (int k = 0; k < 16 && ok; k++)
			ok = c[k] == 0;
		ok = ok && gh_mm_probe_ranges_gpu(&mm, dh.p, 16, df.p, dc.p, stream,
										  &err) == GH_OK;
		CK(cudaStreamSynchronize(stream));
		download(c, dc.p, sizeof(c));
		download(f, df.p, sizeof(f));
		download(rows, gh_mm_rows(&mm), sizeof(rows));
		for (int k = 0; k < 16 && ok; k++)
			ok = c[k] == 1 && rows[f[k]] == (uint32_t) k;
		if (!ok)
			mt_fail("status %d", (int) st);
		mt_result(
			ok,
			"GPU: completely full table: present found, absent end (G=%d %s)",
			prm.group_size, (i & 1) ? "double" : "linear");
	}

	/* The library allocates nothing; the caller's allocation is what can
	 * run out.  Check that gh_mm_bytes's worst case is refused, as the
	 * caller would see it.  (Not under the sanitizers, which would count the
	 * deliberate API error.) */
	if (!quick)
	{
		gh_mm_params big = { 0.1, 1, GH_PROBE_LINEAR, NULL, 0 };
		uint64_t cap;
		size_t bytes = gh_mm_bytes(GH_MAX_ROWS, &big, &cap);
		void *p = nullptr;
		cudaError_t e = cudaMalloc(&p, bytes);

		ok = bytes > ((size_t) 1 << 40) && e == cudaErrorMemoryAllocation;
		cudaGetLastError();
		if (p)
			cudaFree(p);
		if (!ok)
			mt_fail("bytes %zu, cudaMalloc %d", bytes, (int) e);
		mt_result(
			ok,
			"GPU: worst-case table size (%zu bytes) is refused with OOM by cudaMalloc",
			bytes);
	}
}

/*
 * Grouped input (gh_mm_params.grouped): equal hashes adjacent.  Every
 * builder must give the identity row array and each group its first row as
 * offset, so that tables built from one grouped array by different
 * processes agree (a parallel join's shared row store relies on it).
 */
static void
test_grouped(mt_rng *rng, bool quick)
{
	static const mt_gen gens[] = { MT_RANDOM, MT_MULT, MT_EQUAL, MT_SENTINEL,
								   MT_ONEDUP };
	static const uint32_t params[] = { 0, 7, 0, 0, 0 };
	static const int gs[] = { 1, 4, 32 };
	const uint32_t n = quick ? 3000 : 200000;

	for (int gi = 0; gi < 5; gi++)
	{
		std::vector<uint64_t> h(n + 1);
		std::vector<uint32_t> rows(n + 1), first(n + 1), count(n + 1);

		mt_generate(h.data(), n, gens[gi], params[gi], rng);
		mt_sort_packed(h.data(), n);
		DevBuf<uint64_t> dh(n);
		upload(dh.p, h.data(), sizeof(uint64_t) * n);
		for (int g : gs)
			for (int sc = 0; sc < 2; sc++)
			{
				gh_mm_params prm = { 0.5, g,
									 sc ? GH_PROBE_DOUBLE : GH_PROBE_LINEAR,
									 NULL, 1 };
				uint64_t cap = 0;
				const size_t bytes = gh_mm_bytes(n, &prm, &cap);
				DevBuf<unsigned char> mem(bytes);
				DevBuf<uint32_t> df(n), dc(n);
				gh_mm mm;
				gh_error err;
				int ok;

				CK(cudaMemsetAsync(mem.p, 0xa5, bytes, stream));
				ok = gh_mm_build_gpu(&mm, mem.p, dh.p, n, &prm, stream,
									 &err) == GH_OK &&
					 gh_mm_probe_ranges_gpu(&mm, dh.p, n, df.p, dc.p, stream,
											&err) == GH_OK;
				if (!ok)
					mt_fail("build or ranges failed");
				else
				{
					download(rows.data(), gh_mm_rows(&mm),
							 sizeof(uint32_t) * n);
					download(first.data(), df.p, sizeof(uint32_t) * n);
					download(count.data(), dc.p, sizeof(uint32_t) * n);
					ok = mt_check_grouped(h.data(), n, rows.data(),
										  first.data(), count.data());
				}
				mt_result(ok, "GPU grouped %s n=%u G=%d %s: identity rows, "
							  "first row of each group as its offset",
						  mt_gen_name(gens[gi]), n, g,
						  sc ? "double" : "linear");
			}
	}
}

/* Last: a kernel fault must come back as GH_ERR_CUDA with its name.  It
 * kills the context, so nothing may follow it. */
static void
test_async_error(void)
{
	gh_mm_params prm = { 0.5, 2, GH_PROBE_LINEAR, NULL, 0 };
	uint64_t cap;
	size_t bytes = gh_mm_bytes(1000, &prm, &cap);
	void *mem;
	gh_mm mm;
	gh_error err;

	CK(cudaMalloc(&mem, bytes));
	gh_status st = gh_mm_build_gpu(&mm, mem,
								   (const uint64_t *) (uintptr_t) 0x1000, 1000,
								   &prm, stream, &err);
	int ok = st == GH_ERR_CUDA && err.status == GH_ERR_CUDA &&
			 err.cuda_code != 0 && err.cuda_name != nullptr &&
			 err.cuda_string != nullptr && err.where != nullptr;

	if (!ok)
		mt_fail("status %d", (int) st);
	mt_result(ok, "GPU: a kernel fault is reported as GH_ERR_CUDA (%s at %s)",
			  err.cuda_name ? err.cuda_name : "-",
			  err.where ? err.where : "-");
}

/* One data set of the --quick run, under one load factor. */
struct QuickCase
{
	uint32_t n;
	mt_gen gen;
	uint32_t param;
	uint32_t np;
	int match_pct;
	int specials;
	const double *lf;
	const int *gs;
	int ng;
	bool cross;
};

int
main(int argc, char **argv)
{
	bool quick = false;
	uint64_t seed = (uint64_t) time(nullptr);
	cudaDeviceProp prop;
	mt_rng rng;
	double t0 = mt_now();

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--quick") == 0)
			quick = true;
		else
			seed = strtoull(argv[i], nullptr, 0);
	}
	rng.s = seed;
	CK(cudaGetDeviceProperties(&prop, 0));
	CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
	printf("# test_multimap_gpu%s seed %llu on %s\n", quick ? " --quick" : "",
		   (unsigned long long) seed, prop.name);

	static const double lf3[] = { 0.1, 0.5, 0.95 };
	static const double lf5[] = { 0.5 };
	static const double lf7[] = { 0.7 };
	static const double lf_all[] = { 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95 };
	static const int g_few[] = { 1, 4, 32 };
	static const int g_two[] = { 1, 8 };
	static const uint32_t small[] = { 0, 1, 31, 32, 33, 1000 };

	test_errors(&rng, quick);
	test_grouped(&rng, quick);

	if (quick)
	{
		/* Under compute-sanitizer: every kernel and group size, small data. */
		static const int g_ends[] = { 1, 32 };

		/* n, generator, param, probes, match %, specials, lfs, groups, cross */
		const QuickCase cases[] = {
			{ 0, MT_RANDOM, 0, 40, 50, 1, lf5, g_ends, 2, false },
			{ 33, MT_RANDOM, 0, 73, 50, 1, lf5, g_few, 3, false },
			{ 1000, MT_RANDOM, 0, 1040, 50, 1, lf5, all_groups, 6, true },
			{ 2000, MT_MULT, 7, 1000, 80, 1, lf7, g_few, 3, false },
			{ 2000, MT_EQUAL, 0, 40, 50, 0, lf5, g_two, 2, false },
			{ 3000, MT_SENTINEL, 0, 3000, 50, 1, lf5, g_two, 2, false },
			{ 300, MT_COLLIDE, 0, 300, 50, 0, lf3 + 2, g_two, 2, false },
			{ 1000, MT_UNIQMAX, 0, 1000, 60, 1, lf5, g_two, 2, true },
			{ 1000, MT_ONEDUP, 0, 1000, 60, 1, lf5, g_two, 2, true },
		};

		for (const QuickCase &c : cases)
			data_run(&rng, c.n, c.gen, c.param, c.np, c.match_pct, c.specials,
					 c.lf, 1, c.gs, c.ng, c.cross);
		printf("# total %.1f s\n", mt_now() - t0);
		return mt_finish();
	}

	for (uint32_t n : small)
		data_run(&rng, n, MT_RANDOM, 0, n + 40, 50, 1, lf3, 3, all_groups, 6,
				 true);

	/* Probe sets: empty, no match, every probe matching. */
	data_run(&rng, 5000, MT_MULT, 3, 0, 50, 0, lf5, 1, all_groups, 6, false);
	data_run(&rng, 5000, MT_MULT, 3, 20000, 0, 1, lf5, 1, all_groups, 6,
			 false);
	data_run(&rng, 5000, MT_MULT, 3, 20000, 100, 0, lf5, 1, all_groups, 6,
			 false);

	/* Multiplicity 1 to 1000 and heavy skew. */
	{
		static const uint32_t mults[] = { 1, 2, 7, 100, 1000 };

		for (uint32_t m : mults)
			data_run(&rng, 100000, MT_MULT, m, m >= 100 ? 5000 : 100000, 90, 0,
					 lf7, 1, all_groups, 6, m == 7);
		data_run(&rng, 1000000, MT_SKEW, 0, 20000, 80, 1, lf7, 1, g_few, 3,
				 false);
	}

	/* Adversarial: every key alike (one group), all in the sentinel slot,
	 * sentinel bit patterns, distinct keys with one start window. */
	data_run(&rng, 10000000, MT_EQUAL, 0, 4, 50, 0, lf5, 1, g_few, 3, false);
	data_run(&rng, 100000, MT_ALLMAX, 0, 64, 50, 1, lf5, 1, g_two, 2, false);
	data_run(&rng, 1000000, MT_SENTINEL, 0, 200000, 50, 1, lf5, 1, all_groups,
			 6, false);
	data_run(&rng, 20000, MT_COLLIDE, 0, 20000, 50, 0, lf3, 3, g_few, 3, true);

	/* Unique hashes (the identity layout, also with the sentinel's hash) and
	 * all singletons but one pair (groups of one placed without atomics). */
	data_run(&rng, 1000000, MT_UNIQMAX, 0, 1000000, 60, 1, lf_all + 3, 1,
			 all_groups, 6, true);
	data_run(&rng, 1000000, MT_ONEDUP, 0, 1000000, 60, 1, lf_all + 3, 1,
			 all_groups, 6, true);

	/* Load factors 0.1 .. 0.95. */
	data_run(&rng, 1000000, MT_MULT, 2, 1000000, 70, 1, lf_all, 8, g_two, 2,
			 false);

	/* 1e6 and 1e7 rows, every group size and scheme. */
	data_run(&rng, 1000000, MT_RANDOM, 0, 1000000, 60, 1, lf5, 1, all_groups,
			 6, true);
	data_run(&rng, 10000000, MT_RANDOM, 0, 10000000, 60, 0, lf5, 1, all_groups,
			 6, false);
	{
		static const double lf95[] = { 0.95 };
		static const int g4[] = { 4 };

		data_run(&rng, 10000000, MT_MULT, 4, 10000000, 90, 0, lf95, 1, g4, 1,
				 false);
	}

	test_async_error();
	printf("# total %.1f s\n", mt_now() - t0);
	return mt_finish();
}
