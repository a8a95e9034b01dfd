/*
 * aggregate_bench.cu
 *     Microbenchmark of the aggregate kernels that append to a list or take
 *     ids from a counter: each shape run with per-thread atomics (the old
 *     code) and with one atomic per warp (append_index), in one process.
 *
 * Usage: aggregate_bench [--rows N] [--reps N] [--commit ID]
 *
 * The file includes cuda/aggregate.cu itself, so that it can launch both
 * variants of the library's own launch templates (assign_launch,
 * assign_exact_launch, expr_eval_launch).  Shapes are chosen so that many
 * rows take the atomic path: every row a new group (assign, assign_exact),
 * every row absent from a frozen table (exact resolve), every row differing
 * from its representative (exact verify), every row or a tenth of them left
 * to the host by an expression; and one shape with few new groups as a
 * control.  Each repetition resets the state untimed, then times one API
 * launch sequence with CUDA events; the variants alternate, after one
 * warm-up of each, and the table gives the median of --reps runs.  The
 * results of both variants are checked to agree (counts of groups and of
 * listed rows).  Prints markdown.
 */
#include "aggregate.cu"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#define CK(x)                                                                                  \
	do                                                                                         \
	{                                                                                          \
		cudaError_t e_ = (x);                                                                  \
		if (e_ != cudaSuccess)                                                                 \
		{                                                                                      \
			fprintf(stderr, "%s: %s (%s:%d)\n", #x, cudaGetErrorString(e_), __FILE__, __LINE__); \
			exit(2);                                                                           \
		}                                                                                      \
	} while (0)

#define GH(x)                                                                                \
	do                                                                                       \
	{                                                                                        \
		gh_error err_;                                                                       \
		gh_status s_ = (x);                                                                  \
		(void) err_;                                                                         \
		if (s_ != GH_OK)                                                                     \
		{                                                                                    \
			fprintf(stderr, "%s: status %d (%s:%d)\n", #x, (int) s_, __FILE__, __LINE__);   \
			exit(2);                                                                         \
		}                                                                                    \
	} while (0)

static cudaStream_t stream;
static int reps = 9;

__global__ void
fill_kernel(uint64_t *h, uint32_t n, uint64_t seed, uint64_t distinct)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		h[i] = gh_mix64((distinct ? i % distinct : i) + seed);
}

__global__ void
fill_expr_kernel(int64_t *a, int64_t *b, uint8_t *valid, uint32_t n, int zero_every)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
	{
		a[i] = gh_agg_num_pack((int64_t) i, 2);
		b[i] = (int64_t) (zero_every && i % zero_every == 0 ? 0 : 1 + i % 7);
		valid[i] = 1;
	}
}

/* time_ms: one timed run of f (after reset, untimed), in milliseconds */
static float
time_ms(const std::function<void()> &reset, const std::function<void()> &f)
{
	cudaEvent_t a, b;
	float ms = 0;

	reset();
	CK(cudaStreamSynchronize(stream));
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	CK(cudaEventRecord(a, stream));
	f();
	CK(cudaEventRecord(b, stream));
	CK(cudaEventSynchronize(b));
	CK(cudaEventElapsedTime(&ms, a, b));
	CK(cudaEventDestroy(a));
	CK(cudaEventDestroy(b));
	return ms;
}

static float
median(std::vector<float> v)
{
	std::sort(v.begin(), v.end());
	return v[v.size() / 2];
}

/*
 * row prints one table row: the medians of old and new, alternating, after
 * a warm-up of each; check() after each variant's last run returns the
 * count that both must agree on.
 */
static void
row(const char *shape, uint32_t n, const std::function<void()> &reset,
	const std::function<void(bool)> &run, const std::function<uint64_t()> &check)
{
	std::vector<float> t[2];
	uint64_t c[2];

	for (int w = 0; w < 2; w++)
		time_ms(reset, [&] { run(w == 1); });
	for (int r = 0; r < reps; r++)
		for (int w = 0; w < 2; w++)
			t[w].push_back(time_ms(reset, [&] { run(w == 1); }));
	for (int w = 0; w < 2; w++)
	{
		time_ms(reset, [&] { run(w == 1); });
		CK(cudaStreamSynchronize(stream));
		c[w] = check();
	}
	float o = median(t[0]), nw = median(t[1]);
	printf("| %s | %u | %llu | %.3f | %.3f | %.2f |%s\n", shape, n, (unsigned long long) c[1], o,
		   nw, o / nw, c[0] == c[1] ? "" : " MISMATCH");
	if (c[0] != c[1])
		fprintf(stderr, "%s: old counted %llu, new %llu\n", shape, (unsigned long long) c[0],
				(unsigned long long) c[1]);
	fflush(stdout);
}

static gh_agg_ctrl
read_ctrl(void *table, uint64_t cap)
{
	gh_agg_ctrl c;

	CK(cudaMemcpy(&c, (char *) table + gh_agg_table_ctrl_offset(cap), sizeof(c),
				  cudaMemcpyDeviceToHost));
	return c;
}

int
main(int argc, char **argv)
{
	uint32_t n = 1u << 24;
	const char *commit = "unknown";
	cudaDeviceProp prop;

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc)
			n = (uint32_t) strtoul(argv[++i], nullptr, 0);
		else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (strcmp(argv[i], "--commit") == 0 && i + 1 < argc)
			commit = argv[++i];
	}
	CK(cudaGetDeviceProperties(&prop, 0));
	CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
	printf("# aggregate kernels: per-thread atomics (old) and one per warp (new)\n\n");
	printf("GPU %s, commit %s, median of %d runs after a warm-up, ms per API call\n\n",
		   prop.name, commit, reps);
	printf("| shape | rows | groups or listed rows | old ms | new ms | old/new |\n");
	printf("| --- | --- | --- | --- | --- | --- |\n");

	uint64_t cap = 2;
	while (cap < 2 * (uint64_t) n)
		cap <<= 1;
	void *table;
	uint64_t *hashes, *keys;
	uint32_t *ids, *scratch, *bad;
	uint8_t *mask;
	CK(cudaMalloc(&table, gh_agg_table_bytes(cap)));
	CK(cudaMalloc(&hashes, 8 * (size_t) n));
	CK(cudaMalloc(&keys, 8 * (size_t) n));
	CK(cudaMalloc(&ids, 4 * (size_t) n));
	CK(cudaMalloc(&scratch, 8 * (size_t) n));
	CK(cudaMalloc(&bad, 4 * (size_t) n));
	CK(cudaMalloc(&mask, n));
	CK(cudaMemset(mask, 0, n));
	unsigned grid = (n + 255) / 256;
	gh_error err;

	/* assign: every row a new group, and few groups as a control */
	for (uint64_t distinct : { (uint64_t) 0, (uint64_t) 1000 })
	{
		fill_kernel<<<grid, 256, 0, stream>>>(hashes, n, 17, distinct);
		CK(cudaGetLastError());
		row(distinct ? "assign, 1000 groups" : "assign, every row a new group", n,
			[&] { GH(gh_agg_table_init_gpu(table, cap, stream, &err)); },
			[&](bool w) {
				GH(w ? assign_launch<true>(table, cap, hashes, n, ids, stream, &err)
					 : assign_launch<false>(table, cap, hashes, n, ids, stream, &err));
			},
			[&] { return read_ctrl(table, cap).ngroups; });
	}

	/* exact keys: one key per row */
	uint8_t kinds[1] = { GH_AGG_KIND_INT }, ops[1] = { GH_AGG_OP_SUM };
	gh_agg_layout l;
	gh_agg_layout_init(&l, 1, kinds, ops, 1, n);
	void *acc;
	CK(cudaMalloc(&acc, l.bytes));
	fill_kernel<<<grid, 256, 0, stream>>>(keys, n, 99, 0);
	CK(cudaGetLastError());
	gh_agg_keys k;
	memset(&k, 0, sizeof(k));
	k.nkeys = 1;
	k.vals[0] = keys;
	k.nullmask = mask;
	auto exact = [&](bool w) {
		GH(w ? assign_exact_launch<true>(table, cap, acc, &l, &k, n, ids, scratch, bad, stream,
										 &err)
			 : assign_exact_launch<false>(table, cap, acc, &l, &k, n, ids, scratch, bad, stream,
										  &err));
	};
	auto nbad = [&] { return (uint64_t) read_ctrl(table, cap).nbad; };
	auto ngroups = [&] { return read_ctrl(table, cap).ngroups; };

	k.frozen = 0;
	row("assign_exact, every row a new group", n,
		[&] {
			GH(gh_agg_table_init_gpu(table, cap, stream, &err));
			GH(gh_agg_acc_init_gpu(acc, &l, 0, n, stream, &err));
		},
		exact, ngroups);

	k.frozen = 1;
	row("assign_exact frozen, every row absent", n,
		[&] { GH(gh_agg_table_init_gpu(table, cap, stream, &err)); }, exact, nbad);

	/* every row's group known, its representative made to differ */
	k.frozen = 0;
	GH(gh_agg_table_init_gpu(table, cap, stream, &err));
	GH(gh_agg_acc_init_gpu(acc, &l, 0, n, stream, &err));
	exact(true);
	CK(cudaMemsetAsync((char *) acc + l.key_off[0], 0xff, 8 * (size_t) n, stream));
	CK(cudaStreamSynchronize(stream));
	row("assign_exact, every row colliding", n, [] {}, exact, nbad);

	/* expressions: every row, and a tenth of the rows, to the host */
	int64_t *a, *b, *out;
	uint8_t *valid, *ov;
	uint32_t *host, *nhost;
	CK(cudaMalloc(&a, 8 * (size_t) n));
	CK(cudaMalloc(&b, 8 * (size_t) n));
	CK(cudaMalloc(&out, 8 * (size_t) n));
	CK(cudaMalloc(&valid, n));
	CK(cudaMalloc(&ov, n));
	CK(cudaMalloc(&host, 4 * (size_t) n));
	CK(cudaMalloc(&nhost, 4));
	for (int every : { 1, 10 })
	{
		gh_expr e;

		memset(&e, 0, sizeof(e));
		fill_expr_kernel<<<grid, 256, 0, stream>>>(a, b, valid, n, every == 1 ? 0 : every);
		CK(cudaGetLastError());
		if (every == 1)
		{
			/* all_host: a + b, every row to the host */
			e.nops = 3;
			e.op[0] = GH_EXPR_COL;
			e.op[1] = GH_EXPR_COL;
			e.op[2] = GH_EXPR_ADD;
			e.scale[0] = e.scale[1] = 2;
			e.out_scale = 2;
			e.all_host = 1;
		}
		else
		{
			/* integer a / b, b zero on every tenth row */
			e.nops = 3;
			e.op[0] = GH_EXPR_COLI;
			e.op[1] = GH_EXPR_COLI;
			e.op[2] = GH_EXPR_IDIV;
			e.cm[2] = 8;
			e.int_out = 1;
		}
		e.vals[0] = a;
		e.vals[1] = b;
		e.valid[0] = e.valid[1] = valid;
		row(every == 1 ? "expr, every row to the host" : "expr, every tenth row to the host", n,
			[] {},
			[&](bool w) {
				GH(w ? expr_eval_launch<true>(&e, n, out, ov, host, nhost, stream, &err)
					 : expr_eval_launch<false>(&e, n, out, ov, host, nhost, stream, &err));
			},
			[&] {
				uint32_t c;
				CK(cudaMemcpy(&c, nhost, 4, cudaMemcpyDeviceToHost));
				return (uint64_t) c;
			});
	}
	return 0;
}
