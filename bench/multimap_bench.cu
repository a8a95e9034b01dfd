/*
 * multimap_bench.cu
 *     Microbenchmark of the GPU static multimap: build and probe rates over
 *     load factor x multiplicity x group size x probing scheme, the device's
 *     random 8-byte read ceiling, and a cuDF-comparable 10M x 10M inner join.
 *
 * Usage: multimap_bench [--quick | --profile | --join-only] [--reps N] [--build N] [--probe N]
 *                       [--commit ID]
 *     --profile: a few 10M builds and joins only, for a profiler (ncu)
 *     --join-only: only the 10M x 10M inner join table
 *
 * Hashes are generated on the device: nbuild/m distinct random keys, each
 * exactly m times in a shuffled order, and probes drawn from the build keys,
 * so every probe row has exactly m candidates (checked: written must equal
 * nprobe * m).  Every measurement is the median of N timed runs after one
 * warm-up, timed with CUDA events around the API call (which includes the
 * call's own synchronization).  Build and ranges are the library's
 * (cuda/multimap.cu); count and retrieve are the test probes of
 * test/cuda/mm_probes_gpu.cu, on the same lookup frame.  Prints markdown.
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "mm_probes.h"

#define CK(x)                                                                                      \
    do                                                                                             \
    {                                                                                              \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess)                                                                     \
        {                                                                                          \
            fprintf(stderr, "%s: %s (%s:%d)\n", #x, cudaGetErrorString(e_), __FILE__, __LINE__);  \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

#define GH(x)                                                                                      \
    do                                                                                             \
    {                                                                                              \
        gh_error err_;                                                                             \
        gh_status s_ = (x);                                                                        \
        (void) err_;                                                                               \
        if (s_ != GH_OK)                                                                           \
        {                                                                                          \
            fprintf(stderr, "%s: status %d (%s:%d)\n", #x, (int) s_, __FILE__, __LINE__);          \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

static cudaStream_t stream;
static int reps = 5;

__host__ __device__ static inline uint64_t splitmix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Key k of a data set: distinct for distinct k (splitmix is a bijection). */
__device__ static inline uint64_t key_of(uint64_t k, uint64_t seed)
{
    return splitmix(k ^ seed);
}

/* Row i gets key perm(i) / m, perm an affine bijection of [0, n). */
__global__ void gen_build(uint64_t *h, uint64_t n, uint64_t m, uint64_t mul, uint64_t seed)
{
    for (uint64_t i = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x; i < n;
         i += (uint64_t) gridDim.x * blockDim.x)
        h[i] = key_of(((i * mul) % n) / m, seed);
}

__global__ void gen_probe(uint64_t *h, uint64_t n, uint64_t ndistinct, uint64_t seed,
                          uint64_t salt)
{
    for (uint64_t i = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x; i < n;
         i += (uint64_t) gridDim.x * blockDim.x)
        h[i] = key_of(splitmix(i ^ salt) % ndistinct, seed);
}

/* GUPS-style random reads: 16 independent 8-byte loads per thread. */
__global__ void fill(uint64_t *a, uint64_t n)
{
    for (uint64_t i = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x; i < n;
         i += (uint64_t) gridDim.x * blockDim.x)
        a[i] = splitmix(i);
}

constexpr int kGupsPerThread = 16;

__global__ void gups(const uint64_t *__restrict__ a, uint64_t mask, uint64_t salt, uint64_t *sink)
{
    const uint64_t t = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x;
    uint64_t acc = 0;

#pragma unroll
    for (int k = 0; k < kGupsPerThread; k++)
        acc ^= __ldcg(reinterpret_cast<const unsigned long long *>(
            a + (splitmix(t * kGupsPerThread + k + salt) & mask)));
    if (acc == 0x0123456789abcdefULL)
        *sink = acc;
}

struct Timer
{
    cudaEvent_t a, b;
    Timer()
    {
        CK(cudaEventCreate(&a));
        CK(cudaEventCreate(&b));
    }
    ~Timer()
    {
        cudaEventDestroy(a);
        cudaEventDestroy(b);
    }
};

/* Median milliseconds of f() over reps runs after one warm-up. */
template <typename F>
static double time_ms(F f)
{
    Timer t;
    std::vector<float> v;

    f();
    CK(cudaStreamSynchronize(stream));
    for (int r = 0; r < reps; r++)
    {
        float ms;

        CK(cudaEventRecord(t.a, stream));
        f();
        CK(cudaEventRecord(t.b, stream));
        CK(cudaEventSynchronize(t.b));
        CK(cudaEventElapsedTime(&ms, t.a, t.b));
        v.push_back(ms);
    }
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

static void launch_gen_build(uint64_t *d, uint64_t n, uint64_t m, uint64_t seed)
{
    /* 2654435761 is prime and > 10M, so coprime with n for n < it. */
    gen_build<<<1024, 256, 0, stream>>>(d, n, m, 2654435761ULL, seed);
    CK(cudaGetLastError());
}

struct Result
{
    double lf;
    int m, g;
    gh_probe_scheme scheme;
    uint64_t capacity;
    uint32_t ndistinct;
    double bytes_per_row;
    double build_ms, count_ms, retrieve_ms, both_ms, ranges_ms;
};

static void print_row(const Result &r, uint64_t nbuild, uint64_t nprobe, double gups_rate)
{
    printf("| %.1f | %d | %d | %s | 2^%d | %.2f | %.1f | %.2f | %.2f | %.2f | %.2f | %.3f | %.2f |\n",
           r.lf, r.m, r.g, r.scheme ? "double" : "linear", 63 - __builtin_clzll(r.capacity),
           (double) r.ndistinct / r.capacity, r.bytes_per_row, nbuild / r.build_ms / 1e6,
           nprobe / r.count_ms / 1e6, nprobe / r.retrieve_ms / 1e6, nprobe / r.both_ms / 1e6,
           (nprobe / r.both_ms * 1e3) / gups_rate, nprobe / r.ranges_ms / 1e6);
    fflush(stdout);
}

/*
 * --profile: a few builds and joins of nbuild x nbuild, nothing else, so that
 * a profiler (ncu) run over it lists each kernel's time: m = 1 (unique keys)
 * at lf 0.5 and 0.9, then m = 4 at lf 0.5; G = 1 and 2; linear probing.
 */
static int run_profile(uint64_t n)
{
    struct
    {
        double lf;
        int m;
    } cases[] = {{0.5, 1}, {0.9, 1}, {0.5, 4}};
    const int groups[] = {1, 2};
    const int max_m = 4;
    uint64_t *d_build, *d_probe;
    uint32_t *d_outer, *d_inner;
    void *mem;
    gh_mm_params big = {0.5, 1, GH_PROBE_LINEAR, NULL, 0};

    CK(cudaMalloc(&mem, gh_mm_bytes((uint32_t) n, &big, nullptr)));
    CK(cudaMalloc(&d_build, n * 8));
    CK(cudaMalloc(&d_probe, n * 8));
    CK(cudaMalloc(&d_outer, n * 4 * max_m));
    CK(cudaMalloc(&d_inner, n * 4 * max_m));
    for (auto c : cases)
        for (int g : groups)
        {
            const double lf = c.lf;
            gh_mm_params prm = {lf, g, GH_PROBE_LINEAR, NULL, 0};

            launch_gen_build(d_build, n, c.m, 42 + c.m);
            gen_probe<<<4096, 256, 0, stream>>>(d_probe, n, (n + c.m - 1) / c.m, 42 + c.m, 7);
            CK(cudaGetLastError());
            gh_mm mm;
            uint64_t total = 0, written = 0;
            double b = time_ms([&] {
                GH(gh_mm_build_gpu(&mm, mem, d_build, (uint32_t) n, &prm, stream, &err_));
            });
            double j = time_ms([&] {
                GH(mt_probe_count_gpu(&mm, d_probe, (uint32_t) n, GH_JOIN_INNER, &total, stream,
                                         &err_));
                GH(mt_probe_retrieve_gpu(&mm, d_probe, (uint32_t) n, GH_JOIN_INNER, d_outer,
                                            d_inner, total, &written, stream, &err_));
            });
            printf("profile lf %.1f m %d G %d: build %.3f ms, count+retrieve %.3f ms (%llu pairs)\n",
                   lf, c.m, g, b, j, (unsigned long long) written);
        }
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t nbuild = 10000000, nprobe = 100000000;
    bool quick = false;
    bool profile = false;
    bool join_only = false;
    std::string commit = "unknown";

    for (int i = 1; i < argc; i++)
    {
        if (!strcmp(argv[i], "--quick"))
            quick = true;
        else if (!strcmp(argv[i], "--profile"))
            profile = true;
        else if (!strcmp(argv[i], "--join-only"))
            join_only = true;
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--build") && i + 1 < argc)
            nbuild = strtoull(argv[++i], nullptr, 0);
        else if (!strcmp(argv[i], "--probe") && i + 1 < argc)
            nprobe = strtoull(argv[++i], nullptr, 0);
        else if (!strcmp(argv[i], "--commit") && i + 1 < argc)
            commit = argv[++i];
        else
        {
            printf("usage: multimap_bench [--quick | --profile | --join-only] [--reps N] [--build N] "
                   "[--probe N] [--commit ID]\n");
            return strcmp(argv[i], "--help") == 0 ? 0 : 1;
        }
    }
    if (profile)
        return run_profile(nbuild);
    if (quick)
    {
        nbuild = 1000000;
        nprobe = 4000000;
        reps = 2;
    }

    cudaDeviceProp prop;
    int dev = 0, clock_khz = 0, mem_khz = 0;

    CK(cudaGetDevice(&dev));
    CK(cudaGetDeviceProperties(&prop, dev));
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev);
    cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, dev);
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

    char date[32];
    time_t now = time(nullptr);
    strftime(date, sizeof(date), "%Y-%m-%d", gmtime(&now));

    printf("# gpuhash static multimap benchmark\n\n");
    printf("- GPU: %s (%d SMs, %.0f MiB, L2 %d MiB, cc %d.%d)\n", prop.name, prop.multiProcessorCount,
           prop.totalGlobalMem / 1048576.0, prop.l2CacheSize >> 20, prop.major, prop.minor);
    printf("- date: %s (UTC), commit: %s, CUDA runtime %d\n", date, commit.c_str(), CUDART_VERSION);
    printf("- build %llu rows, probe %llu rows, hashes already on the device; median of %d runs after "
           "a warm-up, CUDA events around each API call (its synchronization included)\n\n",
           (unsigned long long) nbuild, (unsigned long long) nprobe, reps);
    fflush(stdout);

    /* ---- random 8-byte read ceiling ---- */
    double gups_rate = 1;
    if (!join_only)
    {
        const uint64_t n = quick ? ((uint64_t) 1 << 25) : ((uint64_t) 1 << 28); /* 2 GiB */
        const uint64_t threads = (uint64_t) 1 << 26;
        uint64_t *a, *sink;

        CK(cudaMalloc(&a, n * 8));
        CK(cudaMalloc(&sink, 8));
        fill<<<4096, 256, 0, stream>>>(a, n);
        CK(cudaGetLastError());
        uint64_t salt = 1;
        double ms = time_ms([&] {
            gups<<<(unsigned) (threads / 256), 256, 0, stream>>>(a, n - 1, salt++ * 0x1234567ULL,
                                                                 sink);
            CK(cudaGetLastError());
        });
        gups_rate = (double) threads * kGupsPerThread / (ms * 1e-3);
        printf("## Random 8-byte read ceiling\n\n");
        printf("%.2f G reads/s (%llu random 8-byte loads over a %.1f GiB buffer in %.2f ms; each "
               "touches its own 32-byte sector)\n\n",
               gups_rate / 1e9, (unsigned long long) (threads * kGupsPerThread), n * 8.0 / (1 << 30),
               ms);
        CK(cudaFree(a));
        CK(cudaFree(sink));
    }
    fflush(stdout);

    /* ---- buffers for the grid ---- */
    const int mults[] = {1, 4, 16};
    const double lfs[] = {0.5, 0.7, 0.9};
    const int groups[] = {1, 2, 4, 8};
    const gh_probe_scheme schemes[] = {GH_PROBE_LINEAR, GH_PROBE_DOUBLE};
    uint64_t *d_build, *d_probe;
    uint32_t *d_outer, *d_inner, *d_first, *d_count;
    size_t max_bytes = 0;
    uint64_t max_out = nprobe * 16;

    for (double lf : lfs)
    {
        gh_mm_params p = {lf, 1, GH_PROBE_LINEAR, NULL, 0};
        max_bytes = std::max(max_bytes, gh_mm_bytes((uint32_t) nbuild, &p, nullptr));
    }
    {
        /* the true-load sweep uses 2^24 slots and up to 0.9 * 2^24 rows */
        gh_mm_params p = {0.9, 1, GH_PROBE_LINEAR, NULL, 0};
        max_bytes = std::max(max_bytes, gh_mm_bytes((uint32_t) (0.9 * (1 << 24)), &p, nullptr));
    }
    void *mem;
    CK(cudaMalloc(&mem, max_bytes));
    CK(cudaMalloc(&d_build, std::max<uint64_t>(nbuild, 1 << 24) * 8));
    CK(cudaMalloc(&d_probe, nprobe * 8));
    CK(cudaMalloc(&d_outer, max_out * 4));
    CK(cudaMalloc(&d_inner, max_out * 4));
    CK(cudaMalloc(&d_first, nprobe * 4));
    CK(cudaMalloc(&d_count, nprobe * 4));

    if (join_only)
        goto join;
    printf("## Grid: build %llu rows, probe %llu rows (every probe has m candidates)\n\n",
           (unsigned long long) nbuild, (unsigned long long) nprobe);
    printf("Rates in G rows/s (probe rates: probe rows/s); 'frac' = probe rate of count+retrieve / "
           "random 8-byte read rate. Capacity is the power of two >= rows / lf, so lf 0.7 and 0.9 "
           "can give the same table; 'fill' = distinct hashes / slots.\n\n");
    printf("| lf | m | G | scheme | slots | fill | B/row | build | count | retrieve | count+retrieve "
           "| frac | ranges |\n");
    printf("|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");

    for (int m : mults)
    {
        const uint64_t seed = 0xabcdef12345ULL + m;
        const uint64_t ndist = (nbuild + m - 1) / m;

        launch_gen_build(d_build, nbuild, m, seed);
        gen_probe<<<4096, 256, 0, stream>>>(d_probe, nprobe, ndist, seed, 77 + m);
        CK(cudaGetLastError());
        CK(cudaStreamSynchronize(stream));

        for (double lf : lfs)
            for (int g : groups)
                for (gh_probe_scheme sc : schemes)
                {
                    gh_mm_params prm = {lf, g, sc, NULL};
                    gh_mm mm;
                    uint64_t cap, total = 0, written = 0;
                    size_t bytes = gh_mm_bytes((uint32_t) nbuild, &prm, &cap);
                    Result r;

                    r.lf = lf;
                    r.m = m;
                    r.g = g;
                    r.scheme = sc;
                    r.capacity = cap;
                    r.bytes_per_row = (double) bytes / nbuild;
                    r.build_ms = time_ms([&] {
                        GH(gh_mm_build_gpu(&mm, mem, d_build, (uint32_t) nbuild, &prm, stream, &err_));
                    });
                    r.ndistinct = mm.ndistinct;
                    if (mm.ndistinct != ndist)
                    {
                        fprintf(stderr, "ndistinct %u, expected %llu\n", mm.ndistinct,
                                (unsigned long long) ndist);
                        exit(3);
                    }
                    r.count_ms = time_ms([&] {
                        GH(mt_probe_count_gpu(&mm, d_probe, (uint32_t) nprobe, GH_JOIN_INNER,
                                                 &total, stream, &err_));
                    });
                    r.retrieve_ms = time_ms([&] {
                        GH(mt_probe_retrieve_gpu(&mm, d_probe, (uint32_t) nprobe, GH_JOIN_INNER,
                                                    d_outer, d_inner, max_out, &written, stream,
                                                    &err_));
                    });
                    r.both_ms = time_ms([&] {
                        GH(mt_probe_count_gpu(&mm, d_probe, (uint32_t) nprobe, GH_JOIN_INNER,
                                                 &total, stream, &err_));
                        GH(mt_probe_retrieve_gpu(&mm, d_probe, (uint32_t) nprobe, GH_JOIN_INNER,
                                                    d_outer, d_inner, total, &written, stream,
                                                    &err_));
                    });
                    r.ranges_ms = time_ms([&] {
                        GH(gh_mm_probe_ranges_gpu(&mm, d_probe, (uint32_t) nprobe, d_first,
                                                  d_count, stream, &err_));
                    });
                    if (total != nprobe * m || written != total)
                    {
                        fprintf(stderr, "m=%d: total %llu written %llu, expected %llu\n", m,
                                (unsigned long long) total, (unsigned long long) written,
                                (unsigned long long) (nprobe * m));
                        exit(3);
                    }
                    print_row(r, nbuild, nprobe, gups_rate);
                    fprintf(stderr, "lf %.1f m %2d G %d %s: build %.2f ms, count+retrieve %.2f ms\n",
                            lf, m, g, sc ? "double" : "linear", r.build_ms, r.both_ms);
                }
    }

    printf("\n");
    fflush(stdout);

    /* ---- true fill sweep: 2^24 slots, rows = lf * 2^24, m = 1 ---- */
    if (!quick)
    {
        printf("## True fill: 2^24 slots, rows = fill x 2^24, m = 1, %llu probes\n\n",
               (unsigned long long) nprobe);
        printf("| fill | G | scheme | B/row | build | count+retrieve | frac | ranges |\n");
        printf("|---:|---:|---|---:|---:|---:|---:|---:|\n");
        for (double lf : lfs)
        {
            const uint64_t n = (uint64_t) (lf * (1 << 24));
            const uint64_t seed = 0x5eed0000ULL + (uint64_t) (lf * 10);

            launch_gen_build(d_build, n, 1, seed);
            gen_probe<<<4096, 256, 0, stream>>>(d_probe, nprobe, n, seed, 99);
            CK(cudaGetLastError());
            for (int g : groups)
                for (gh_probe_scheme sc : schemes)
                {
                    gh_mm_params prm = {lf, g, sc, NULL};
                    gh_mm mm;
                    uint64_t cap, total = 0, written = 0;
                    size_t bytes = gh_mm_bytes((uint32_t) n, &prm, &cap);
                    double b = time_ms([&] {
                        GH(gh_mm_build_gpu(&mm, mem, d_build, (uint32_t) n, &prm, stream, &err_));
                    });
                    double cr = time_ms([&] {
                        GH(mt_probe_count_gpu(&mm, d_probe, (uint32_t) nprobe, GH_JOIN_INNER,
                                                 &total, stream, &err_));
                        GH(mt_probe_retrieve_gpu(&mm, d_probe, (uint32_t) nprobe, GH_JOIN_INNER,
                                                    d_outer, d_inner, total, &written, stream,
                                                    &err_));
                    });
                    double rg = time_ms([&] {
                        GH(gh_mm_probe_ranges_gpu(&mm, d_probe, (uint32_t) nprobe, d_first,
                                                  d_count, stream, &err_));
                    });
                    if (cap != ((uint64_t) 1 << 24) || written != nprobe)
                    {
                        fprintf(stderr, "sweep: capacity %llu written %llu\n",
                                (unsigned long long) cap, (unsigned long long) written);
                        exit(3);
                    }
                    printf("| %.2f | %d | %s | %.1f | %.2f | %.2f | %.3f | %.2f |\n",
                           (double) mm.ndistinct / cap, g, sc ? "double" : "linear",
                           (double) bytes / n, n / b / 1e6, nprobe / cr / 1e6,
                           (nprobe / cr * 1e3) / gups_rate, nprobe / rg / 1e6);
                    fflush(stdout);
                }
        }
        printf("\n");
    }

    /* ---- cuDF-comparable inner join: 10M x 10M, m = 1 ---- */
join:
    {
        const uint64_t n = quick ? nbuild : 10000000;
        const uint64_t seed = 0xc0ffeeULL;

        launch_gen_build(d_build, n, 1, seed);
        gen_probe<<<4096, 256, 0, stream>>>(d_probe, n, n, seed, 5);
        CK(cudaGetLastError());
        printf("## Inner join %llu x %llu (m = 1): build + count + retrieve\n\n",
               (unsigned long long) n, (unsigned long long) n);
        printf("cuDF's published 10M x 10M int64 inner join on an H100: 3.06 ms.\n\n");
        printf("| lf | G | scheme | build ms | count ms | retrieve ms | total ms | G input rows/s |\n");
        printf("|---:|---:|---|---:|---:|---:|---:|---:|\n");
        for (double lf : lfs)
            for (int g : groups)
                for (gh_probe_scheme sc : schemes)
                {
                    gh_mm_params prm = {lf, g, sc, NULL};
                    gh_mm mm;
                    uint64_t total = 0, written = 0;
                    Timer t;
                    std::vector<float> tb, tc, tr, tt;

                    for (int r = 0; r <= reps; r++)
                    {
                        cudaEvent_t e[4];
                        float a, b, c;

                        for (auto &x : e)
                            CK(cudaEventCreate(&x));
                        CK(cudaEventRecord(e[0], stream));
                        GH(gh_mm_build_gpu(&mm, mem, d_build, (uint32_t) n, &prm, stream, &err_));
                        CK(cudaEventRecord(e[1], stream));
                        GH(mt_probe_count_gpu(&mm, d_probe, (uint32_t) n, GH_JOIN_INNER, &total,
                                                 stream, &err_));
                        CK(cudaEventRecord(e[2], stream));
                        GH(mt_probe_retrieve_gpu(&mm, d_probe, (uint32_t) n, GH_JOIN_INNER,
                                                    d_outer, d_inner, total, &written, stream,
                                                    &err_));
                        CK(cudaEventRecord(e[3], stream));
                        CK(cudaEventSynchronize(e[3]));
                        CK(cudaEventElapsedTime(&a, e[0], e[1]));
                        CK(cudaEventElapsedTime(&b, e[1], e[2]));
                        CK(cudaEventElapsedTime(&c, e[2], e[3]));
                        for (auto &x : e)
                            cudaEventDestroy(x);
                        if (written != n)
                        {
                            fprintf(stderr, "join: written %llu\n", (unsigned long long) written);
                            exit(3);
                        }
                        if (r == 0)
                            continue; /* warm-up */
                        tb.push_back(a);
                        tc.push_back(b);
                        tr.push_back(c);
                        tt.push_back(a + b + c);
                    }
                    auto med = [](std::vector<float> v) {
                        std::sort(v.begin(), v.end());
                        return (double) v[v.size() / 2];
                    };
                    printf("| %.1f | %d | %s | %.3f | %.3f | %.3f | %.3f | %.2f |\n", lf, g,
                           sc ? "double" : "linear", med(tb), med(tc), med(tr), med(tt),
                           2.0 * n / med(tt) / 1e6);
                }
        printf("\n");
    }

    CK(cudaFree(mem));
    CK(cudaFree(d_build));
    CK(cudaFree(d_probe));
    CK(cudaFree(d_outer));
    CK(cudaFree(d_inner));
    CK(cudaFree(d_first));
    CK(cudaFree(d_count));
    return 0;
}
