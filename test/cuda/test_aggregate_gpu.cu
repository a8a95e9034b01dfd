/*-------------------------------------------------------------------------
 * test_aggregate_gpu.cu
 *	  The aggregate's GPU entry points (cuda/aggregate.cu) against the CPU
 *	  twin (cuda/aggregate_cpu.c), on the same inputs; TAP output.
 *
 * Usage: test_aggregate_gpu [--quick] [seed]
 *	  --quick: small sizes only, for compute-sanitizer memcheck / racecheck.
 *
 * The twin is itself checked against references by test_aggregate_cpu.  The
 * GPU must then give the same results bit for bit, up to what the API
 * leaves open: group ids are a renumbering of the twin's (one bijection for
 * the whole run, checked row by row), lists (bad[], host_rows[]) are sets,
 * and a NaN's sign and payload are free.  Which slot a hash takes may
 * differ, but linear probing fills the same set of slots in any insertion
 * order, so the occupied slots must be the twin's; and a GPU table handed to
 * the twin must answer every hash with the GPU's id (one layout, one probe
 * sequence).  Float sums use values whose partial sums are exact in any
 * order, so they too compare bit for bit.
 *-------------------------------------------------------------------------
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <vector>

#include "agg_test_util.h"

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

static cudaStream_t stream;
static gh_error err;
static bool quick = false;

template <typename T>
static T *
dev_copy(const T *h, size_t n)
{
	T *d = nullptr;

	CK(cudaMalloc(&d, sizeof(T) * (n ? n : 1)));
	if (n)
		CK(cudaMemcpy(d, h, sizeof(T) * n, cudaMemcpyHostToDevice));
	return d;
}

template <typename T>
static std::vector<T>
host_copy(const T *d, size_t n)
{
	std::vector<T> h(n ? n : 1);

	CK(cudaStreamSynchronize(stream));
	if (n)
		CK(cudaMemcpy(h.data(), d, sizeof(T) * n, cudaMemcpyDeviceToHost));
	return h;
}

static int
gpu_ok(gh_status st, const char *what)
{
	cudaError_t e;

	if (st != GH_OK)
		return mt_fail("%s: status %d", what, (int) st);
	e = cudaStreamSynchronize(stream);
	if (e != cudaSuccess)
		return mt_fail("%s: %s", what, cudaGetErrorString(e));
	return 1;
}

/*
 * IdMap: the renumbering of the twin's group ids into the GPU's, which must
 * stay one bijection over a whole run.
 */
struct IdMap
{
	std::map<uint32_t, uint32_t> fwd, back;

	int
	pair(uint32_t twin, uint32_t gpu, uint32_t row)
	{
		if ((twin == GH_AGG_NO_GROUP) != (gpu == GH_AGG_NO_GROUP))
			return mt_fail("row %u: twin id %u, GPU id %u", row, twin, gpu);
		if (twin == GH_AGG_NO_GROUP)
			return 1;
		auto f = fwd.find(twin);
		auto b = back.find(gpu);
		if (f == fwd.end() && b == back.end())
		{
			fwd[twin] = gpu;
			back[gpu] = twin;
			return 1;
		}
		if (f == fwd.end() || f->second != gpu)
			return mt_fail("row %u: twin group %u is GPU group %u, was %u", row, twin,
						   gpu, f == fwd.end() ? UINT32_MAX : f->second);
		return 1;
	}
};

static uint64_t *
tkeys(void *mem)
{
	return (uint64_t *) mem;
}

static void *
twin_table(uint64_t cap)
{
	void *mem = at_alloc(gh_agg_table_bytes(cap));

	gh_agg_table_init_cpu(mem, cap, &err);
	return mem;
}

static void *
gpu_table(uint64_t cap)
{
	void *mem = nullptr;

	CK(cudaMalloc(&mem, gh_agg_table_bytes(cap)));
	CK(cudaMemset(mem, 0xa5, gh_agg_table_bytes(cap)));
	if (gh_agg_table_init_gpu(mem, cap, stream, &err) != GH_OK)
	{
		printf("Bail out! gh_agg_table_init_gpu\n");
		exit(2);
	}
	return mem;
}

static gh_agg_ctrl
ctrl_of(const void *host_table, uint64_t cap)
{
	gh_agg_ctrl c;

	memcpy(&c, (const char *) host_table + gh_agg_table_ctrl_offset(cap), sizeof(c));
	return c;
}

/*
 * same_tables: the twin's and the GPU's table (a host copy) hold the same
 * hashes in the same set of slots, and the same number of groups.
 */
static int
same_tables(void *twin, void *gpu, uint64_t cap)
{
	std::vector<uint64_t> a, b;

	if (ctrl_of(twin, cap).ngroups != ctrl_of(gpu, cap).ngroups)
		return mt_fail("ngroups: twin %llu, GPU %llu",
					   (unsigned long long) ctrl_of(twin, cap).ngroups,
					   (unsigned long long) ctrl_of(gpu, cap).ngroups);
	if (ctrl_of(gpu, cap).full)
		return mt_fail("GPU table says full");
	for (uint64_t s = 0; s < cap; s++)
	{
		if ((tkeys(twin)[s] == GH_AGG_EMPTY) != (tkeys(gpu)[s] == GH_AGG_EMPTY))
			return mt_fail("slot %llu occupied on one side only", (unsigned long long) s);
		if (tkeys(twin)[s] != GH_AGG_EMPTY)
		{
			a.push_back(tkeys(twin)[s]);
			b.push_back(tkeys(gpu)[s]);
		}
	}
	std::sort(a.begin(), a.end());
	std::sort(b.begin(), b.end());
	if (a != b)
		return mt_fail("the tables hold different hashes");
	return 1;
}

/*
 * run_assign: h[0 .. n) in batches of `batch` rows on both sides, growing
 * both tables by rehash (x2) when a batch could pass half full.
 */
static void
run_assign(const char *name, const uint64_t *h, uint32_t n, uint32_t batch, uint64_t cap)
{
	void *tw = twin_table(cap);
	void *gp = gpu_table(cap);
	uint64_t *dh = dev_copy(h, n);
	uint32_t *dids;
	std::vector<uint32_t> tids(n + 1);
	IdMap map;
	int ok = 1;
	int rehashes = 0;

	CK(cudaMalloc(&dids, 4 * (size_t) (n + 1)));
	for (uint32_t done = 0; ok && done < n;)
	{
		uint32_t m = std::min(batch, n - done);

		while (ok && ctrl_of(tw, cap).ngroups + m > cap / 2)
		{
			void *tw2 = twin_table(cap * 2);
			void *gp2 = gpu_table(cap * 2);

			ok = gh_agg_table_rehash_cpu(tw, cap, tw2, cap * 2, &err) == GH_OK &&
				 gpu_ok(gh_agg_table_rehash_gpu(gp, cap, gp2, cap * 2, stream, &err),
						"rehash");
			free(tw);
			CK(cudaFree(gp));
			tw = tw2;
			gp = gp2;
			cap *= 2;
			rehashes++;
		}
		ok = ok && gh_agg_assign_cpu(tw, cap, h + done, m, tids.data() + done, &err) == GH_OK &&
			 gpu_ok(gh_agg_assign_gpu(gp, cap, dh + done, m, dids + done, stream, &err),
					"assign");
		done += m;
	}
	if (ok)
	{
		std::vector<uint32_t> gids = host_copy(dids, n);
		std::vector<uint8_t> gtab = host_copy((uint8_t *) gp, gh_agg_table_bytes(cap));

		for (uint32_t i = 0; ok && i < n; i++)
			ok = map.pair(tids[i], gids[i], i);
		ok = ok && same_tables(tw, gtab.data(), cap);
		/* the GPU's table on the twin: every hash answered with the GPU's id */
		if (ok && n > 0)
		{
			std::vector<uint32_t> cids(n);

			ok = gh_agg_assign_cpu(gtab.data(), cap, h, n, cids.data(), &err) == GH_OK &&
				 ctrl_of(gtab.data(), cap).ngroups == ctrl_of(tw, cap).ngroups;
			for (uint32_t i = 0; ok && i < n; i++)
				if (cids[i] != gids[i])
					ok = mt_fail("row %u: the twin reads id %u from the GPU's table, GPU %u",
								 i, cids[i], gids[i]);
		}
	}
	mt_result(ok, "assign %s: %u rows, batches of %u, %d rehashes", name, n, batch,
			  rehashes);
	free(tw);
	CK(cudaFree(gp));
	CK(cudaFree(dh));
	CK(cudaFree(dids));
}

static void
test_assign(mt_rng *rng)
{
	uint32_t big = quick ? 20000 : 2000000;
	/* room for the fixed sizes below too (200000 rows at most) */
	std::vector<uint64_t> h(std::max(big, (uint32_t) 200000));
	const uint32_t sizes[] = { 0, 1, 31, 32, 33, 1000, big };

	for (uint32_t n : sizes)
	{
		mt_generate(h.data(), n, MT_RANDOM, 0, rng);
		run_assign("every row its own group", h.data(), n, n ? n : 1, 2);
		mt_generate(h.data(), n, MT_MULT, 5, rng);
		run_assign("each hash 5 times", h.data(), n, n ? n : 1, 2);
	}
	mt_generate(h.data(), big, MT_EQUAL, 0, rng);
	run_assign("one group", h.data(), big, big, 2);
	mt_generate(h.data(), 20000, MT_SENTINEL, 0, rng);
	run_assign("sentinel-like", h.data(), 20000, 20000, 2);
	mt_generate(h.data(), 5000, MT_ALLMAX, 0, rng);
	run_assign("all the empty marker", h.data(), 5000, 5000, 2);
	mt_generate(h.data(), 5000, MT_UNIQMAX, 0, rng);
	run_assign("unique with the empty marker", h.data(), 5000, 5000, 2);
	mt_generate(h.data(), 100000, MT_SKEW, 0, rng);
	run_assign("skew", h.data(), 100000, 100000, 2);
	mt_generate(h.data(), 200000, MT_MULT, 3, rng);
	run_assign("growth by rehash", h.data(), 200000, 7000, 2);
	at_colliding_hashes(h.data(), 4000, 0, rng);
	run_assign("all colliding in slot 0", h.data(), 4000, 4000, 2);
	run_assign("all colliding, growth", h.data(), 4000, 333, 2);
	at_colliding_hashes(h.data(), 1000, 4095, rng);
	run_assign("colliding in the last slot, wrapping", h.data(), 1000, 1000, 4096);

	/* a table too small: the GPU's full flag, as the twin's error */
	{
		void *gp = gpu_table(8);
		uint64_t *dh;
		uint32_t *dids;
		int ok;

		at_colliding_hashes(h.data(), 9, 3, rng);
		dh = dev_copy(h.data(), 9);
		CK(cudaMalloc(&dids, 4 * 9));
		ok = gpu_ok(gh_agg_assign_gpu(gp, 8, dh, 9, dids, stream, &err), "assign");
		if (ok)
		{
			std::vector<uint8_t> t = host_copy((uint8_t *) gp, gh_agg_table_bytes(8));
			std::vector<uint32_t> ids = host_copy(dids, 9);
			int nofit = 0;

			for (uint32_t id : ids)
				nofit += id == GH_AGG_NO_GROUP;
			ok = ctrl_of(t.data(), 8).full != 0 && ctrl_of(t.data(), 8).ngroups == 8 &&
				 nofit == 1;
		}
		mt_result(ok, "assign: a ninth hash in 8 slots sets full, one row without a group");
		CK(cudaFree(gp));
		CK(cudaFree(dh));
		CK(cudaFree(dids));
	}
}

/* ---------------------------------------------------------------- exact keys */

struct Keys
{
	int nkeys;
	uint32_t n;
	std::vector<uint64_t> v[GH_AGG_MAX_KEYS];
	std::vector<uint8_t> mask;
};

static void
keys_random(Keys &k, uint32_t from, uint32_t to, uint64_t dom, mt_rng *rng)
{
	for (uint32_t i = from; i < to; i++)
	{
		k.mask[i] = 0;
		for (int j = 0; j < k.nkeys; j++)
		{
			if (mt_below(rng, 8) == 0)
			{
				k.mask[i] |= (uint8_t) (1 << j);
				k.v[j][i] = 0;
			}
			else
				k.v[j][i] = mt_below(rng, 3) == 0 ? (uint64_t) at_int_edge(rng)
												  : mt_below(rng, dom);
		}
	}
}

/* One side (twin or GPU) of an exact-key run. */
struct ExactSide
{
	void *table;
	void *acc;
};

/*
 * exact_batch runs batch k on both sides and compares: ngroups, the id of
 * every row (through map), the bad lists as sets, the representatives of
 * the groups through the map.  in_batch: the batch has colliding keys
 * among its own new groups, where which row represents the group (and so
 * which rows are bad) depends on the order; then only the invariants.
 */
static int
exact_batch(ExactSide &tw, ExactSide &gp, uint64_t cap, const gh_agg_layout &l,
			const Keys &k, int frozen, bool in_batch, IdMap &map)
{
	uint32_t n = k.n;
	gh_agg_keys tk, gk;
	std::vector<uint32_t> tids(n + 1), tbad(n + 1), scratch(2 * n + 1);
	uint64_t *dv[GH_AGG_MAX_KEYS] = { nullptr };
	uint8_t *dmask = dev_copy(k.mask.data(), n);
	uint32_t *dids, *dbad, *dscratch;
	int ok = 1;

	CK(cudaMalloc(&dids, 4 * (size_t) (n + 1)));
	CK(cudaMalloc(&dbad, 4 * (size_t) (n + 1)));
	CK(cudaMalloc(&dscratch, 8 * (size_t) (n + 1)));
	memset(&tk, 0, sizeof(tk));
	tk.nkeys = k.nkeys;
	tk.frozen = frozen;
	gk = tk;
	for (int j = 0; j < k.nkeys; j++)
	{
		tk.vals[j] = k.v[j].data();
		dv[j] = dev_copy(k.v[j].data(), n);
		gk.vals[j] = dv[j];
	}
	tk.nullmask = k.mask.data();
	gk.nullmask = dmask;
	ok = gh_agg_assign_exact_cpu(tw.table, cap, tw.acc, &l, &tk, n, tids.data(),
								 scratch.data(), tbad.data(), &err) == GH_OK &&
		 gpu_ok(gh_agg_assign_exact_gpu(gp.table, cap, gp.acc, &l, &gk, n, dids, dscratch,
										dbad, stream, &err),
				"assign_exact");
	if (ok)
	{
		std::vector<uint8_t> gt = host_copy((uint8_t *) gp.table, gh_agg_table_bytes(cap));
		std::vector<uint8_t> gacc = host_copy((uint8_t *) gp.acc, l.bytes);
		std::vector<uint32_t> gids = host_copy(dids, n);
		gh_agg_ctrl tc = ctrl_of(tw.table, cap), gc = ctrl_of(gt.data(), cap);
		std::vector<uint32_t> gbad = host_copy(dbad, gc.nbad <= n ? gc.nbad : 0);
		const char *ta = (const char *) tw.acc, *ga = (const char *) gacc.data();

		if (tc.ngroups != gc.ngroups || tc.prev != gc.prev || tc.nbad != gc.nbad ||
			gc.full)
			ok = mt_fail("ctrl: twin %llu/%llu/%u, GPU %llu/%llu/%u/full %u",
						 (unsigned long long) tc.ngroups, (unsigned long long) tc.prev,
						 tc.nbad, (unsigned long long) gc.ngroups,
						 (unsigned long long) gc.prev, gc.nbad, gc.full);
		ok = ok && same_tables(tw.table, gt.data(), cap);
		if (ok && !in_batch)
		{
			tbad.resize(tc.nbad);
			gbad.resize(gc.nbad);
			std::sort(tbad.begin(), tbad.end());
			std::sort(gbad.begin(), gbad.end());
			if (tbad != gbad)
				ok = mt_fail("bad[] differ as sets");
			for (uint32_t i = 0; ok && i < n; i++)
				ok = map.pair(tids[i], gids[i], i);
		}
		/* every row in a group has its representative's key; every bad row
		 * differs from its hash's group, or (frozen) has none */
		for (uint32_t i = 0; ok && i < n; i++)
		{
			uint32_t g = gids[i];

			if (g == GH_AGG_NO_GROUP || k.nkeys == 0)
				continue;
			if ((uint8_t) ga[l.knull_off + g] != k.mask[i])
				ok = mt_fail("row %u: mask differs from group %u's", i, g);
			for (int j = 0; ok && j < k.nkeys; j++)
				if (((const uint64_t *) (ga + l.key_off[j]))[g] != k.v[j][i])
					ok = mt_fail("row %u: key %d differs from group %u's", i, j, g);
		}
		if (ok && in_batch)
		{
			uint32_t nb = 0;

			for (uint32_t i = 0; i < n; i++)
				nb += gids[i] == GH_AGG_NO_GROUP;
			if (nb != gc.nbad)
				ok = mt_fail("%u rows without a group, %u listed", nb, gc.nbad);
		}
		/* the representatives of groups both sides made the same way */
		for (auto &p : map.fwd)
			for (int j = 0; ok && j < k.nkeys; j++)
				if (((const uint64_t *) (ta + l.key_off[j]))[p.first] !=
						((const uint64_t *) (ga + l.key_off[j]))[p.second] ||
					ta[l.knull_off + p.first] != ga[l.knull_off + p.second])
					ok = mt_fail("representative of twin group %u / GPU group %u", p.first,
								 p.second);
	}
	for (int j = 0; j < k.nkeys; j++)
		CK(cudaFree(dv[j]));
	CK(cudaFree(dmask));
	CK(cudaFree(dids));
	CK(cudaFree(dbad));
	CK(cudaFree(dscratch));
	return ok;
}

static void
exact_setup(ExactSide &tw, ExactSide &gp, uint64_t cap, gh_agg_layout &l, int nkeys,
			uint64_t groups)
{
	uint8_t kinds[1] = { GH_AGG_KIND_INT };
	uint8_t ops[1] = { GH_AGG_OP_SUM };

	gh_agg_layout_init(&l, 1, kinds, ops, nkeys, groups);
	tw.table = twin_table(cap);
	gp.table = gpu_table(cap);
	tw.acc = at_alloc(l.bytes);
	CK(cudaMalloc(&gp.acc, l.bytes));
	gh_agg_acc_init_cpu(tw.acc, &l, 0, groups, &err);
	gh_agg_acc_init_gpu(gp.acc, &l, 0, groups, stream, &err);
}

static void
exact_teardown(ExactSide &tw, ExactSide &gp)
{
	free(tw.table);
	free(tw.acc);
	CK(cudaFree(gp.table));
	CK(cudaFree(gp.acc));
}

static void
test_exact(mt_rng *rng)
{
	uint32_t big = quick ? 5000 : 500000;
	const uint32_t sizes[] = { 0, 1, 33, 5000, big };

	for (int nkeys = 0; nkeys <= 3; nkeys++)
		for (uint32_t n : sizes)
		{
			uint64_t cap = 2;
			ExactSide tw, gp;
			gh_agg_layout l;
			Keys k;
			IdMap map;
			int ok = 1;

			while (cap < 4 * (uint64_t) n + 8)
				cap <<= 1;
			exact_setup(tw, gp, cap, l, nkeys, 2 * (uint64_t) n + 2);
			k.nkeys = nkeys;
			k.n = n;
			for (int j = 0; j < GH_AGG_MAX_KEYS; j++)
				k.v[j].assign(n + 1, 0);
			k.mask.assign(n + 1, 0);
			/* two batches, then a frozen one */
			for (int pass = 0; ok && pass < 3; pass++)
			{
				keys_random(k, 0, n, n / 3 + 2, rng);
				ok = exact_batch(tw, gp, cap, l, k, pass == 2, false, map);
			}
			mt_result(ok, "assign_exact: %d keys, %u rows, two batches and a frozen one",
					  nkeys, n);
			exact_teardown(tw, gp);
		}

	/* colliding key hashes: against earlier groups, then within a batch */
	{
		uint32_t n = quick ? 3000 : 60000;
		uint64_t cap = 1;
		ExactSide tw, gp;
		gh_agg_layout l;
		Keys k;
		IdMap map;
		int ok;

		while (cap < 8 * (uint64_t) n)
			cap <<= 1;
		exact_setup(tw, gp, cap, l, 2, 3 * (uint64_t) n);
		k.nkeys = 2;
		k.n = n;
		for (int j = 0; j < GH_AGG_MAX_KEYS; j++)
			k.v[j].assign(n + 1, 0);
		k.mask.assign(n + 1, 0);
		keys_random(k, 0, n, UINT64_MAX, rng);
		ok = exact_batch(tw, gp, cap, l, k, 0, false, map);
		{
			Keys first = k;

			for (uint32_t i = 0; i < n; i++)
			{
				uint32_t j = (uint32_t) mt_below(rng, n);

				if (i % 2 == 0)
				{
					uint8_t m2 = (uint8_t) mt_below(rng, 2);
					uint64_t w0 = m2 ? 0 : mt_next(rng);

					k.mask[i] = m2;
					k.v[0][i] = w0;
					k.v[1][i] = at_colliding_w1(first.mask[j], first.v[0][j], first.v[1][j],
												m2, w0);
				}
				else
					keys_random(k, i, i + 1, UINT64_MAX, rng);
			}
			ok = ok && exact_batch(tw, gp, cap, l, k, 0, false, map);
			mt_result(ok, "assign_exact: keys colliding with earlier groups, as the twin");
			for (uint32_t i = 0; i + 1 < n; i += 2)
			{
				k.mask[i] = 0;
				k.v[0][i] = mt_next(rng);
				k.v[1][i] = mt_next(rng);
				k.mask[i + 1] = 1;
				k.v[0][i + 1] = 0;
				k.v[1][i + 1] = at_colliding_w1(0, k.v[0][i], k.v[1][i], 1, 0);
			}
			ok = exact_batch(tw, gp, cap, l, k, 0, true, map);
			mt_result(ok, "assign_exact: pairs colliding within one batch, one of each bad");
		}
		exact_teardown(tw, gp);
	}
}

/* ---------------------------------------------------------------- key_from_col, skip */

static void
test_key_from_col_skip(mt_rng *rng)
{
	uint32_t n = quick ? 3000 : 300000;
	std::vector<int64_t> vals(n);
	std::vector<uint8_t> valid(n), mask(n);
	std::vector<uint64_t> keys(n, 0x5555);

	for (int yl = 0; yl <= 8; yl += 4)
	{
		int ok;

		for (uint32_t i = 0; i < n; i++)
		{
			valid[i] = mt_below(rng, 5) != 0;
			vals[i] = yl == 4 ? at_date_edge(rng) : yl == 8 ? at_ts_edge(rng) : at_int_edge(rng);
			mask[i] = (uint8_t) mt_next(rng);
		}
		int64_t *dvals = dev_copy(vals.data(), n);
		uint8_t *dvalid = dev_copy(valid.data(), n);
		uint8_t *dmask = dev_copy(mask.data(), n);
		uint64_t *dkeys = dev_copy(keys.data(), n);
		std::vector<uint64_t> tkeys = keys;
		std::vector<uint8_t> tmask = mask;

		gh_agg_key_from_col_cpu(vals.data(), valid.data(), n, yl, 4, tkeys.data(),
								tmask.data(), &err);
		ok = gpu_ok(gh_agg_key_from_col_gpu(dvals, dvalid, n, yl, 4, dkeys, dmask, stream,
											&err),
					"key_from_col");
		ok = ok && host_copy(dkeys, n) == tkeys && host_copy(dmask, n) == tmask;
		mt_result(ok, "key_from_col: year_len %d, bit for bit", yl);
		CK(cudaFree(dvals));
		CK(cudaFree(dvalid));
		CK(cudaFree(dmask));
		CK(cudaFree(dkeys));
	}
	{
		std::vector<uint32_t> ids(n), rows(n / 2 + 1);
		int ok;

		for (uint32_t i = 0; i < n; i++)
			ids[i] = (uint32_t) mt_below(rng, 1000);
		for (auto &r : rows)
			r = (uint32_t) mt_below(rng, n);
		uint32_t *dids = dev_copy(ids.data(), n);
		uint32_t *drows = dev_copy(rows.data(), rows.size());

		gh_agg_skip_cpu(ids.data(), rows.data(), (uint32_t) rows.size(), &err);
		ok = gpu_ok(gh_agg_skip_gpu(dids, drows, 0, stream, &err), "skip 0") &&
			 gpu_ok(gh_agg_skip_gpu(dids, drows, (uint32_t) rows.size(), stream, &err), "skip") &&
			 host_copy(dids, n) == ids;
		mt_result(ok, "skip: bit for bit");
		CK(cudaFree(dids));
		CK(cudaFree(drows));
	}
}

/* ---------------------------------------------------------------- accumulators */

/*
 * same_acc compares groups [0, ng) of two accumulator images of layout l,
 * array by array; a float sum may differ only in a NaN's bits.
 */
static int
same_acc(const char *a, const char *b, const gh_agg_layout &l, uint64_t ng)
{
#define SAME(off, w, what)                                         \
	do                                                             \
	{                                                              \
		if (memcmp(a + (off), b + (off), (size_t) ng * (w)) != 0)  \
			return mt_fail("%s differs (col %d)", what, c);        \
	} while (0)
	int c = -1;

	SAME(l.rows_off, 8, "rows");
	for (int k = 0; k < l.nkeys; k++)
		SAME(l.key_off[k], 8, "key");
	if (l.nkeys)
		SAME(l.knull_off, 1, "key mask");
	for (c = 0; c < l.ncols; c++)
	{
		SAME(l.nonnull_off[c], 8, "nonnull");
		if (l.ops[c] & GH_AGG_OP_SUM)
		{
			if (l.kind[c] == GH_AGG_KIND_FLOAT)
			{
				for (uint64_t g = 0; g < ng; g++)
				{
					double x = ((const double *) (a + l.sum_off[c]))[g];
					double y = ((const double *) (b + l.sum_off[c]))[g];

					if (isnan(x) ? !isnan(y) : at_dbits(x) != at_dbits(y))
						return mt_fail("float sum of col %d group %llu: twin %a, GPU %a", c,
									   (unsigned long long) g, x, y);
				}
			}
			else
			{
				SAME(l.sum_off[c], 8, "sum lo");
				SAME(l.sum_off[c] + l.group_cap * 8, 8, "sum hi");
			}
			if (l.aux_off[c])
				SAME(l.aux_off[c], 4, "aux");
		}
		if (l.ops[c] & GH_AGG_OP_MIN)
			SAME(l.min_off[c], 8, "min");
		if (l.ops[c] & GH_AGG_OP_MAX)
			SAME(l.max_off[c], 8, "max");
	}
#undef SAME
	return 1;
}

/* dev_batch: a copy of d on the device, and its batch; free with dev_batch_free */
struct DevBatch
{
	gh_agg_batch b;
	uint32_t *ids = nullptr;
	int64_t *vals[AC_NCOLS] = { nullptr };
	uint8_t *valid[AC_NCOLS] = { nullptr };

	explicit DevBatch(const ac_data &d)
	{
		memset(&b, 0, sizeof(b));
		b.n = d.n;
		ids = dev_copy(d.ids, d.n);
		b.ids = ids;
		for (int c = 0; c < AC_NCOLS; c++)
		{
			vals[c] = dev_copy(d.vals[c], d.n);
			valid[c] = dev_copy(d.valid[c], d.n);
			b.vals[c] = ac_kind[c] == GH_AGG_KIND_NONE ? nullptr : vals[c];
			b.valid[c] = valid[c];
		}
	}
	~DevBatch()
	{
		cudaFree(ids);
		for (int c = 0; c < AC_NCOLS; c++)
		{
			cudaFree(vals[c]);
			cudaFree(valid[c]);
		}
	}
};

static void
test_accumulate(mt_rng *rng)
{
	uint32_t big = quick ? 5000 : 1000000;
	const uint32_t sizes[] = { 0, 1, 33, 5000, big };
	/* few groups take the shared-memory kernel, many the global one */
	const uint32_t groupings[] = { 1, 7, 300, 100000 };

	for (uint32_t n : sizes)
		for (int shape = AC_ONE_GROUP; shape <= AC_SKIPPED; shape++)
			for (uint32_t G : groupings)
			{
				uint64_t ng = shape == AC_ONE_GROUP ? 1 : shape == AC_OWN_GROUP ? n : G;
				gh_agg_layout l;
				int ok;

				if ((shape == AC_ONE_GROUP || shape == AC_OWN_GROUP) && G != groupings[0])
					continue;
				if (ng == 0)
					ng = 1;
				gh_agg_layout_init(&l, AC_NCOLS, ac_kind, ac_ops, 0, ng + 5);
				char *tacc = (char *) at_alloc(l.bytes);
				char *gacc;
				CK(cudaMalloc(&gacc, l.bytes));
				ok = gh_agg_acc_init_cpu(tacc, &l, 0, l.group_cap, &err) == GH_OK &&
					 gpu_ok(gh_agg_acc_init_gpu(gacc, &l, 0, l.group_cap, stream, &err),
							"acc_init");
				ok = ok && same_acc(tacc, host_copy(gacc, l.bytes).data(), l, l.group_cap);
				for (int j = 0; ok && j < 2; j++)
				{
					ac_data d;

					ac_make(&d, n, (ac_shape) shape, (uint32_t) ng, 1, rng);
					{
						DevBatch db(d);
						gh_agg_batch tb = ac_batch(&d);

						ok = gh_agg_accumulate_cpu(tacc, &l, ng, &tb, &err) == GH_OK &&
							 gpu_ok(gh_agg_accumulate_gpu(gacc, &l, ng, &db.b, stream, &err),
									"accumulate");
					}
					ac_free(&d);
					ok = ok && same_acc(tacc, host_copy(gacc, l.bytes).data(), l, l.group_cap);
				}
				mt_result(ok, "accumulate: %u rows, %s, %llu groups, two batches", n,
						  ac_shape_name[shape], (unsigned long long) ng);
				free(tacc);
				CK(cudaFree(gacc));
			}

	/* acc_move to a larger layout, with keys; acc_init of a middle range */
	{
		gh_agg_layout l, l2;
		uint64_t cap = 1000, cap2 = 3000, ng = 777;
		int ok;

		gh_agg_layout_init(&l, AC_NCOLS, ac_kind, ac_ops, 3, cap);
		gh_agg_layout_init(&l2, AC_NCOLS, ac_kind, ac_ops, 3, cap2);
		std::vector<char> src(l.bytes);
		for (auto &x : src)
			x = (char) mt_next(rng);
		char *dsrc = dev_copy(src.data(), src.size());
		char *tdst = (char *) at_alloc(l2.bytes);
		char *gdst;
		CK(cudaMalloc(&gdst, l2.bytes));
		CK(cudaMemset(gdst, 0xa5, l2.bytes));
		ok = gh_agg_acc_move_cpu(tdst, &l2, src.data(), &l, ng, &err) == GH_OK &&
			 gpu_ok(gh_agg_acc_move_gpu(gdst, &l2, dsrc, &l, ng, stream, &err), "acc_move") &&
			 host_copy(gdst, l2.bytes) == std::vector<char>(tdst, tdst + l2.bytes);
		ok = ok && gh_agg_acc_init_cpu(tdst, &l2, 100, 2100, &err) == GH_OK &&
			 gpu_ok(gh_agg_acc_init_gpu(gdst, &l2, 100, 2100, stream, &err), "acc_init") &&
			 host_copy(gdst, l2.bytes) == std::vector<char>(tdst, tdst + l2.bytes);
		mt_result(ok, "acc_move and a partial acc_init: the whole allocation bit for bit");
		free(tdst);
		CK(cudaFree(dsrc));
		CK(cudaFree(gdst));
	}
}

/* ---------------------------------------------------------------- expressions */

static void
test_expr(mt_rng *rng)
{
	uint32_t big = quick ? 5000 : 1000000;
	const uint32_t sizes[] = { 0, 1, 33, big };
	int64_t *vals[AT_NCOLS], *dvals[AT_NCOLS];
	uint8_t *valid[AT_NCOLS], *dvalid[AT_NCOLS];
	int64_t *dout;
	uint8_t *dov;
	uint32_t *dhost, *dnh;
	std::vector<int64_t> out(big);
	std::vector<uint8_t> ov(big);
	std::vector<uint32_t> host(big);

	for (int c = 0; c < AT_NCOLS; c++)
	{
		vals[c] = (int64_t *) malloc(8 * (size_t) big);
		valid[c] = (uint8_t *) malloc(big);
		CK(cudaMalloc(&dvals[c], 8 * (size_t) big));
		CK(cudaMalloc(&dvalid[c], big));
	}
	CK(cudaMalloc(&dout, 8 * (size_t) big));
	CK(cudaMalloc(&dov, big));
	CK(cudaMalloc(&dhost, 4 * (size_t) big));
	CK(cudaMalloc(&dnh, 4));
	for (int id = 0; id < AT_NPROGS; id++)
		for (int v = 0; v < at_prog_variants[id]; v++)
			for (uint32_t n : sizes)
			{
				at_prog tp, gp;
				uint32_t tn = 0;
				uint32_t nan_bits = 0;
				int ok;

				at_prog_make(&tp, id, v);
				at_prog_data(id, v, rng, n, vals, valid);
				gp = tp;
				at_prog_point(&tp, vals, valid);
				at_prog_point(&gp, dvals, dvalid);
				for (int c = 0; c < AT_NCOLS && n > 0; c++)
				{
					CK(cudaMemcpy(dvals[c], vals[c], 8 * (size_t) n, cudaMemcpyHostToDevice));
					CK(cudaMemcpy(dvalid[c], valid[c], n, cudaMemcpyHostToDevice));
				}
				ok = gh_expr_eval_cpu(&tp.e, n, out.data(), ov.data(), host.data(), &tn, &err) ==
						 GH_OK &&
					 gpu_ok(gh_expr_eval_gpu(&gp.e, n, dout, dov, dhost, dnh, stream, &err),
							"expr_eval");
				if (ok)
				{
					uint32_t gn = host_copy(dnh, 1)[0];
					std::vector<int64_t> gout = host_copy(dout, n);
					std::vector<uint8_t> gov = host_copy(dov, n);
					std::vector<uint32_t> gh = host_copy(dhost, gn <= n ? gn : 0);
					std::vector<uint32_t> th(host.begin(), host.begin() + tn);

					for (uint32_t i = 0; ok && i < n; i++)
					{
						bool fnan = tp.e.float_out && ov[i] &&
									isnan(at_bitsd((uint64_t) out[i])) &&
									isnan(at_bitsd((uint64_t) gout[i]));

						nan_bits += fnan && out[i] != gout[i];
						if (gov[i] != ov[i] || (ov[i] && gout[i] != out[i] && !fnan))
							ok = mt_fail("row %u (%llx %llx %llx): twin %d %llx, GPU %d %llx", i,
										 (unsigned long long) vals[0][i],
										 (unsigned long long) vals[1][i],
										 (unsigned long long) vals[2][i], ov[i],
										 (unsigned long long) out[i], gov[i],
										 (unsigned long long) gout[i]);
					}
					if (ok && gn != tn)
						ok = mt_fail("nhost: twin %u, GPU %u", tn, gn);
					if (ok)
					{
						gh.resize(gn);
						std::sort(gh.begin(), gh.end());
						if (gh != th)
							ok = mt_fail("host rows differ as sets");
					}
				}
				mt_result(ok, "expr %s, variant %d, %u rows, %u to the host%s", at_prog_name[id],
						  v, n, tn, nan_bits ? " (NaN bits differ)" : "");
				if (nan_bits)
					printf("# %u NaN results with other bits than the twin's\n", nan_bits);
			}
	for (int c = 0; c < AT_NCOLS; c++)
	{
		free(vals[c]);
		free(valid[c]);
		CK(cudaFree(dvals[c]));
		CK(cudaFree(dvalid[c]));
	}
	CK(cudaFree(dout));
	CK(cudaFree(dov));
	CK(cudaFree(dhost));
	CK(cudaFree(dnh));
}

int
main(int argc, char **argv)
{
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
	printf("# test_aggregate_gpu%s seed %llu on %s\n", quick ? " --quick" : "",
		   (unsigned long long) seed, prop.name);
	test_assign(&rng);
	test_exact(&rng);
	test_key_from_col_skip(&rng);
	test_accumulate(&rng);
	test_expr(&rng);
	printf("# total %.1f s\n", mt_now() - t0);
	return mt_finish();
}
