/*
 * bench/agg/kernels.cu
 *     gpuhash_aggregate's device code alone: checks the GPU kernels against
 *     the CPU twin, then times them.  No PostgreSQL involved.
 *
 *   nvcc -O3 -std=c++17 -Icuda -gencode=arch=compute_90,code=sm_90 \
 *        -o agg_kernels bench/agg/kernels.cu cuda/aggregate.cu cuda/aggregate_cpu.c
 *   ./agg_kernels check                 GPU vs CPU twin; exit 1 on a difference
 *   ./agg_kernels time ROWS GROUPS...   exact-key path, one int4-like key,
 *                                       count/sum/min/max of one int64 column
 *
 * Design.  The check runs the same batches through both implementations:
 * the exact device-key path (keys with planted hash collisions, NULL keys)
 * and the hash-only path, values of every kind (int64 sums that overflow 64
 * bits, doubles with NaN and infinities, packed numerics), with group counts
 * from 1 (the shared-memory accumulation) to 200000 (global atomics, table
 * and accumulator growth between batches).  Group ids differ between the two
 * (first appearance on the CPU, atomic order on the GPU), so groups are
 * matched by their representative key (exact path) or their hash, and every
 * accumulator is compared: integers exactly, double sums to 1e-12.
 */
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "gh_aggregate.h"

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)
#define GK(call)                                                                                   \
    do {                                                                                           \
        gh_error err_;                                                                             \
        memset(&err_, 0, sizeof(err_));                                                            \
        gh_status s_ = (call);                                                                     \
        if (s_ != GH_OK) {                                                                         \
            fprintf(stderr, "%s:%d %s: status %d (%s)\n", __FILE__, __LINE__, #call, (int)s_,      \
                    err_.cuda_name ? err_.cuda_name : "-");                                        \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

static const int NCOLS = 3; /* INT, FLOAT, NUMERIC, each with sum/min/max */

struct Batch {
    uint32_t n;
    int nkeys;
    std::vector<uint64_t> keys[2];
    std::vector<uint8_t> mask;
    std::vector<uint64_t> hashes;
    std::vector<int64_t> vals[NCOLS];
    std::vector<uint8_t> valid[NCOLS];
};

/* One implementation's state: table, accumulators, layout (host or device). */
struct Impl {
    bool gpu;
    cudaStream_t stream;
    void *table = nullptr;
    uint64_t table_cap = 0;
    void *acc = nullptr;
    gh_agg_layout l;
    uint64_t ngroups = 0;
    /* batch buffers */
    uint64_t *d_keys[2] = {nullptr, nullptr}, *d_hashes = nullptr;
    uint8_t *d_mask = nullptr;
    int64_t *d_vals[NCOLS];
    uint8_t *d_valid[NCOLS];
    uint32_t *d_ids = nullptr, *d_scratch = nullptr, *d_bad = nullptr;
    uint32_t cap = 0;
};

static void *alloc(bool gpu, size_t bytes)
{
    void *p;
    if (gpu)
        CK(cudaMalloc(&p, bytes ? bytes : 1));
    else
        p = calloc(1, bytes ? bytes : 1);
    return p;
}
static void release(bool gpu, void *p)
{
    if (gpu)
        CK(cudaFree(p));
    else
        free(p);
}
static void put(Impl &im, void *dst, const void *src, size_t bytes)
{
    if (im.gpu)
        CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, im.stream));
    else
        memcpy(dst, src, bytes);
}
static void get(Impl &im, void *dst, const void *src, size_t bytes)
{
    if (im.gpu) {
        CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, im.stream));
        CK(cudaStreamSynchronize(im.stream));
    } else
        memcpy(dst, src, bytes);
}

static void impl_init(Impl &im, bool gpu, int nkeys, uint32_t cap, cudaStream_t stream)
{
    uint8_t kind[NCOLS] = {GH_AGG_KIND_INT, GH_AGG_KIND_FLOAT, GH_AGG_KIND_NUMERIC};
    uint8_t ops[NCOLS] = {7, 7, 7};
    im.gpu = gpu;
    im.stream = stream;
    im.cap = cap;
    gh_agg_layout_init(&im.l, NCOLS, kind, ops, nkeys, 0);
    for (int k = 0; k < 2; k++) im.d_keys[k] = (uint64_t *)alloc(gpu, cap * 8);
    im.d_hashes = (uint64_t *)alloc(gpu, cap * 8);
    im.d_mask = (uint8_t *)alloc(gpu, cap);
    for (int c = 0; c < NCOLS; c++) {
        im.d_vals[c] = (int64_t *)alloc(gpu, cap * 8);
        im.d_valid[c] = (uint8_t *)alloc(gpu, cap);
    }
    im.d_ids = (uint32_t *)alloc(gpu, cap * 4);
    im.d_scratch = (uint32_t *)alloc(gpu, cap * 8);
    im.d_bad = (uint32_t *)alloc(gpu, cap * 4);
}

/* Same growth policy as src/aggregate_groups.c. */
static void ensure(Impl &im, uint64_t need_groups, uint32_t n)
{
    double need = (double)(im.ngroups + n) / 0.5;
    if (!im.table || need > (double)im.table_cap) {
        uint64_t cap = 1024;
        while ((double)cap < need) cap <<= 1;
        void *mem = alloc(im.gpu, gh_agg_table_bytes(cap));
        if (im.gpu) {
            GK(gh_agg_table_init_gpu(mem, cap, im.stream, &err_));
            if (im.table) GK(gh_agg_table_rehash_gpu(im.table, im.table_cap, mem, cap, im.stream, &err_));
            CK(cudaStreamSynchronize(im.stream));
        } else {
            GK(gh_agg_table_init_cpu(mem, cap, &err_));
            if (im.table) GK(gh_agg_table_rehash_cpu(im.table, im.table_cap, mem, cap, &err_));
        }
        if (im.table) release(im.gpu, im.table);
        im.table = mem;
        im.table_cap = cap;
    }
    if (need_groups > im.l.group_cap) {
        uint64_t cap = std::max<uint64_t>(need_groups, std::max<uint64_t>(im.l.group_cap * 2, 1024));
        gh_agg_layout nl;
        gh_agg_layout_init(&nl, im.l.ncols, im.l.kind, im.l.ops, im.l.nkeys, cap);
        void *nacc = alloc(im.gpu, nl.bytes);
        if (im.gpu) {
            if (im.acc) GK(gh_agg_acc_move_gpu(nacc, &nl, im.acc, &im.l, im.ngroups, im.stream, &err_));
            GK(gh_agg_acc_init_gpu(nacc, &nl, im.ngroups, cap, im.stream, &err_));
            CK(cudaStreamSynchronize(im.stream));
        } else {
            if (im.acc) GK(gh_agg_acc_move_cpu(nacc, &nl, im.acc, &im.l, im.ngroups, &err_));
            GK(gh_agg_acc_init_cpu(nacc, &nl, im.ngroups, cap, &err_));
        }
        if (im.acc) release(im.gpu, im.acc);
        im.acc = nacc;
        im.l = nl;
    }
}

static gh_agg_ctrl read_ctrl(Impl &im)
{
    gh_agg_ctrl c;
    get(im, &c, (char *)im.table + gh_agg_table_ctrl_offset(im.table_cap), sizeof(c));
    return c;
}

/* Runs one batch; returns the rows listed as bad (exact) and checks the
 * exact path's invariant: a row is bad or equals its group's key. */
static uint32_t run_batch(Impl &im, const Batch &b, bool exact)
{
    uint32_t n = b.n;
    gh_agg_batch ab;
    memset(&ab, 0, sizeof(ab));
    ensure(im, im.ngroups + n, n);
    for (int c = 0; c < NCOLS; c++) {
        put(im, im.d_vals[c], b.vals[c].data(), n * 8);
        put(im, im.d_valid[c], b.valid[c].data(), n);
        ab.vals[c] = im.d_vals[c];
        ab.valid[c] = im.d_valid[c];
    }
    ab.n = n;
    ab.ids = im.d_ids;
    uint32_t nbad = 0;
    if (exact) {
        gh_agg_keys k;
        memset(&k, 0, sizeof(k));
        k.nkeys = b.nkeys;
        for (int j = 0; j < b.nkeys; j++) {
            put(im, im.d_keys[j], b.keys[j].data(), n * 8);
            k.vals[j] = im.d_keys[j];
        }
        put(im, im.d_mask, b.mask.data(), n);
        k.nullmask = im.d_mask;
        if (im.gpu)
            GK(gh_agg_assign_exact_gpu(im.table, im.table_cap, im.acc, &im.l, &k, n, im.d_ids, im.d_scratch,
                                       im.d_bad, im.stream, &err_));
        else
            GK(gh_agg_assign_exact_cpu(im.table, im.table_cap, im.acc, &im.l, &k, n, im.d_ids, im.d_scratch,
                                       im.d_bad, &err_));
        gh_agg_ctrl c = read_ctrl(im);
        if (c.full) {
            fprintf(stderr, "table full\n");
            exit(1);
        }
        im.ngroups = c.ngroups;
        nbad = c.nbad;
    } else {
        put(im, im.d_hashes, b.hashes.data(), n * 8);
        if (im.gpu)
            GK(gh_agg_assign_gpu(im.table, im.table_cap, im.d_hashes, n, im.d_ids, im.stream, &err_));
        else
            GK(gh_agg_assign_cpu(im.table, im.table_cap, im.d_hashes, n, im.d_ids, &err_));
        im.ngroups = read_ctrl(im).ngroups;
    }
    if (im.gpu)
        GK(gh_agg_accumulate_gpu(im.acc, &im.l, im.ngroups, &ab, im.stream, &err_));
    else
        GK(gh_agg_accumulate_cpu(im.acc, &im.l, im.ngroups, &ab, &err_));
    return nbad;
}

/* Host copy of the accumulators. */
static std::vector<char> fetch(Impl &im)
{
    std::vector<char> h(im.l.bytes);
    get(im, h.data(), im.acc, im.l.bytes);
    return h;
}

template <typename T> static T at(const std::vector<char> &h, size_t off, uint64_t g)
{
    T v;
    memcpy(&v, h.data() + off + g * sizeof(T), sizeof(T));
    return v;
}

static int failures = 0;
#define FAIL(...)                                                                                  \
    do {                                                                                           \
        if (failures++ < 20) fprintf(stderr, __VA_ARGS__);                                         \
    } while (0)

static void compare_group(const Impl &a, const std::vector<char> &ha, uint64_t ga, const Impl &b,
                          const std::vector<char> &hb, uint64_t gb, const char *what)
{
    const gh_agg_layout &la = a.l, &lb = b.l;
    if (at<uint64_t>(ha, la.rows_off, ga) != at<uint64_t>(hb, lb.rows_off, gb))
        FAIL("%s: rows differ for group %llu\n", what, (unsigned long long)ga);
    for (int c = 0; c < NCOLS; c++) {
        uint64_t nn = at<uint64_t>(ha, la.nonnull_off[c], ga);
        if (nn != at<uint64_t>(hb, lb.nonnull_off[c], gb)) FAIL("%s: col %d nonnull differs\n", what, c);
        if (la.kind[c] == GH_AGG_KIND_FLOAT) {
            double x = at<double>(ha, la.sum_off[c], ga), y = at<double>(hb, lb.sum_off[c], gb);
            bool same = (std::isnan(x) && std::isnan(y)) || x == y || std::fabs(x - y) <= 1e-12 * std::fabs(y);
            if (!same) FAIL("%s: float sum %.17g vs %.17g\n", what, x, y);
            if (at<uint32_t>(ha, la.aux_off[c], ga) != at<uint32_t>(hb, lb.aux_off[c], gb))
                FAIL("%s: float flags differ\n", what);
        } else {
            if (at<uint64_t>(ha, la.sum_off[c], ga) != at<uint64_t>(hb, lb.sum_off[c], gb) ||
                at<uint64_t>(ha, la.sum_off[c] + la.group_cap * 8, ga) !=
                    at<uint64_t>(hb, lb.sum_off[c] + lb.group_cap * 8, gb))
                FAIL("%s: col %d 128-bit sum differs\n", what, c);
            if (la.kind[c] == GH_AGG_KIND_NUMERIC &&
                at<uint32_t>(ha, la.aux_off[c], ga) != at<uint32_t>(hb, lb.aux_off[c], gb))
                FAIL("%s: numeric scale differs\n", what);
        }
        if (at<uint64_t>(ha, la.min_off[c], ga) != at<uint64_t>(hb, lb.min_off[c], gb))
            FAIL("%s: col %d min differs\n", what, c);
        if (at<uint64_t>(ha, la.max_off[c], ga) != at<uint64_t>(hb, lb.max_off[c], gb))
            FAIL("%s: col %d max differs\n", what, c);
    }
}

/* Table pairs (stored hash -> id). */
static std::map<uint64_t, uint32_t> table_map(Impl &im)
{
    std::vector<char> t(gh_agg_table_bytes(im.table_cap));
    get(im, t.data(), im.table, t.size());
    std::map<uint64_t, uint32_t> m;
    const uint64_t *keys = (const uint64_t *)t.data();
    const uint32_t *ids = (const uint32_t *)(t.data() + ((im.table_cap * 8 + 15) & ~(size_t)15));
    for (uint64_t s = 0; s < im.table_cap; s++)
        if (keys[s] != GH_AGG_EMPTY) m[keys[s]] = ids[s];
    return m;
}

static Batch make_batch(std::mt19937_64 &rng, uint32_t n, int nkeys, uint64_t groups, bool collide)
{
    Batch b;
    b.n = n;
    b.nkeys = nkeys;
    for (int k = 0; k < 2; k++) b.keys[k].resize(n);
    b.mask.resize(n);
    b.hashes.resize(n);
    for (int c = 0; c < NCOLS; c++) {
        b.vals[c].resize(n);
        b.valid[c].resize(n);
    }
    for (uint32_t i = 0; i < n; i++) {
        uint64_t g = rng() % groups;
        uint8_t mask = 0;
        uint64_t k0 = g * 7919, k1 = g % 13;
        if (nkeys > 0 && g % 97 == 5) {
            mask = 1;
            k0 = 0;
        }
        if (collide && nkeys == 2 && g % 5 == 1 && (rng() & 1)) {
            /* (k0', k1') with the same hash as (k0, k1) */
            uint64_t h1 = gh_agg_key_hash_step(gh_agg_key_hash_init(mask), k0);
            uint64_t a2 = k0 + 1000000007ULL;
            uint64_t h2 = gh_agg_key_hash_step(gh_agg_key_hash_init(mask), a2);
            k1 = k1 + h1 - h2;
            k0 = a2;
        }
        b.keys[0][i] = nkeys > 0 ? k0 : 0;
        b.keys[1][i] = nkeys > 1 ? k1 : 0;
        b.mask[i] = mask;
        /* the hash-only path: plant collisions by folding keys to few hashes */
        b.hashes[i] = collide ? (g % (groups / 3 + 1)) * 0x9e3779b97f4a7c15ULL : gh_mix64(g);
        int64_t big = (int64_t)(rng() >> 1);
        b.vals[0][i] = (rng() % 4 == 0) ? big : (int64_t)(rng() % 2001) - 1000;
        double d = (double)((int64_t)(rng() % 20001) - 10000) / 8.0;
        uint64_t r = rng() % 1000;
        if (r == 0) d = NAN;
        if (r == 1) d = INFINITY;
        if (r == 2) d = -INFINITY;
        memcpy(&b.vals[1][i], &d, 8);
        int ds = (int)(rng() % 4);
        b.vals[2][i] = gh_agg_num_pack((int64_t)(rng() % 2000001) - 1000000, ds);
        for (int c = 0; c < NCOLS; c++) b.valid[c][i] = rng() % 10 != 0;
    }
    return b;
}

static void check_case(uint64_t groups, int nkeys, bool exact, bool collide, int nbatches, uint32_t n)
{
    char what[128];
    snprintf(what, sizeof(what), "%s keys=%d groups=%llu%s", exact ? "exact" : "hash", nkeys,
             (unsigned long long)groups, collide ? " collide" : "");
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    Impl cpu, gpu;
    impl_init(cpu, false, exact ? nkeys : 0, n, st);
    impl_init(gpu, true, exact ? nkeys : 0, n, st);
    std::mt19937_64 rng(groups * 31 + nkeys);
    uint64_t bad_cpu = 0, bad_gpu = 0;
    for (int bi = 0; bi < nbatches; bi++) {
        Batch b = make_batch(rng, n, nkeys, groups, collide);
        bad_cpu += run_batch(cpu, b, exact);
        bad_gpu += run_batch(gpu, b, exact);
        if (exact) {
            /* every GPU row: bad, or equal to its group's key */
            std::vector<uint32_t> ids(n);
            get(gpu, ids.data(), gpu.d_ids, n * 4);
            std::vector<char> h = fetch(gpu);
            for (uint32_t i = 0; i < n; i++) {
                if (ids[i] == GH_AGG_NO_GROUP) continue;
                bool same = at<uint8_t>(h, gpu.l.knull_off, ids[i]) == b.mask[i];
                for (int k = 0; k < nkeys; k++) same = same && at<uint64_t>(h, gpu.l.key_off[k], ids[i]) == b.keys[k][i];
                if (nkeys > 0 && !same) FAIL("%s: row %u joined a group of another key\n", what, i);
            }
        }
    }
    CK(cudaStreamSynchronize(st));
    if (cpu.ngroups != gpu.ngroups)
        FAIL("%s: %llu groups on the CPU, %llu on the GPU\n", what, (unsigned long long)cpu.ngroups,
             (unsigned long long)gpu.ngroups);
    if (collide && exact && nkeys == 2 && bad_gpu == 0) FAIL("%s: no collision was seen\n", what);
    if (!collide && bad_cpu + bad_gpu != 0) FAIL("%s: unexpected collisions\n", what);
    std::vector<char> hc = fetch(cpu), hg = fetch(gpu);
    /* match groups: by key (exact) or by hash */
    std::map<std::vector<uint64_t>, uint64_t> cpu_groups;
    if (exact) {
        for (uint64_t g = 0; g < cpu.ngroups; g++) {
            std::vector<uint64_t> key = {nkeys ? at<uint8_t>(hc, cpu.l.knull_off, g) : 0ULL};
            for (int k = 0; k < nkeys; k++) key.push_back(at<uint64_t>(hc, cpu.l.key_off[k], g));
            cpu_groups[key] = g;
        }
        for (uint64_t g = 0; g < gpu.ngroups; g++) {
            std::vector<uint64_t> key = {nkeys ? at<uint8_t>(hg, gpu.l.knull_off, g) : 0ULL};
            for (int k = 0; k < nkeys; k++) key.push_back(at<uint64_t>(hg, gpu.l.key_off[k], g));
            /* with collisions the representative can differ; only compare equal keys */
            auto it = cpu_groups.find(key);
            if (it == cpu_groups.end()) {
                if (!collide) FAIL("%s: GPU group key not on the CPU\n", what);
                continue;
            }
            if (!collide) compare_group(cpu, hc, it->second, gpu, hg, g, what);
        }
    } else {
        std::map<uint64_t, uint32_t> mc = table_map(cpu), mg = table_map(gpu);
        if (mc.size() != mg.size()) FAIL("%s: table sizes differ\n", what);
        for (auto &p : mc) {
            auto it = mg.find(p.first);
            if (it == mg.end())
                FAIL("%s: hash missing on the GPU\n", what);
            else
                compare_group(cpu, hc, p.second, gpu, hg, it->second, what);
        }
    }
    printf("%s %s (%llu groups, %llu/%llu colliding rows)\n", failures ? "not ok" : "ok", what,
           (unsigned long long)gpu.ngroups, (unsigned long long)bad_cpu, (unsigned long long)bad_gpu);
    CK(cudaStreamDestroy(st));
}

static int check(void)
{
    check_case(1, 0, true, false, 3, 50000);
    check_case(10, 1, true, false, 4, 65536);
    check_case(10, 1, false, false, 4, 65536);
    check_case(700, 2, true, false, 3, 65536);
    check_case(200000, 1, true, false, 6, 65536);
    check_case(200000, 2, false, false, 6, 65536);
    check_case(5000, 2, true, true, 4, 30000);
    check_case(5000, 1, false, true, 4, 30000);
    return failures ? 1 : 0;
}

/* Times the exact path: ROWS rows in batches of 1M, GROUPS groups. */
static void time_case(uint64_t rows, uint64_t groups)
{
    const uint32_t n = 1 << 20;
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    Impl gpu;
    uint8_t kind[1] = {GH_AGG_KIND_INT}, ops[1] = {7};
    gpu.gpu = true;
    gpu.stream = st;
    gh_agg_layout_init(&gpu.l, 1, kind, ops, 1, 0);
    gpu.d_keys[0] = (uint64_t *)alloc(true, n * 8);
    gpu.d_mask = (uint8_t *)alloc(true, n);
    gpu.d_vals[0] = (int64_t *)alloc(true, n * 8);
    gpu.d_valid[0] = (uint8_t *)alloc(true, n);
    gpu.d_ids = (uint32_t *)alloc(true, n * 4);
    gpu.d_scratch = (uint32_t *)alloc(true, n * 8);
    gpu.d_bad = (uint32_t *)alloc(true, n * 4);
    uint64_t *h_keys;
    int64_t *h_vals;
    uint8_t *h_mask, *h_valid;
    CK(cudaMallocHost(&h_keys, n * 8));
    CK(cudaMallocHost(&h_vals, n * 8));
    CK(cudaMallocHost(&h_mask, n));
    CK(cudaMallocHost(&h_valid, n));
    memset(h_mask, 0, n);
    memset(h_valid, 1, n);
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    float ms_copy = 0, ms_assign = 0, ms_acc = 0;
    for (uint64_t done = 0; done < rows; done += n) {
        uint32_t m = (uint32_t)std::min<uint64_t>(n, rows - done);
        for (uint32_t i = 0; i < m; i++) {
            h_keys[i] = ((done + i) * 2654435761ULL) % groups;
            h_vals[i] = (int64_t)((done + i) % 1000);
        }
        ensure(gpu, gpu.ngroups + m, m);
        gh_agg_keys k;
        memset(&k, 0, sizeof(k));
        k.nkeys = 1;
        k.vals[0] = gpu.d_keys[0];
        k.nullmask = gpu.d_mask;
        gh_agg_batch b;
        memset(&b, 0, sizeof(b));
        b.n = m;
        b.ids = gpu.d_ids;
        b.vals[0] = gpu.d_vals[0];
        b.valid[0] = gpu.d_valid[0];
        float t;
        CK(cudaEventRecord(e0, st));
        CK(cudaMemcpyAsync(gpu.d_keys[0], h_keys, m * 8, cudaMemcpyHostToDevice, st));
        CK(cudaMemcpyAsync(gpu.d_mask, h_mask, m, cudaMemcpyHostToDevice, st));
        CK(cudaMemcpyAsync(gpu.d_vals[0], h_vals, m * 8, cudaMemcpyHostToDevice, st));
        CK(cudaMemcpyAsync(gpu.d_valid[0], h_valid, m, cudaMemcpyHostToDevice, st));
        CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&t, e0, e1));
        ms_copy += t;
        CK(cudaEventRecord(e0, st));
        GK(gh_agg_assign_exact_gpu(gpu.table, gpu.table_cap, gpu.acc, &gpu.l, &k, m, gpu.d_ids, gpu.d_scratch,
                                   gpu.d_bad, st, &err_));
        CK(cudaEventRecord(e1, st));
        gh_agg_ctrl c = read_ctrl(gpu);
        gpu.ngroups = c.ngroups;
        CK(cudaEventElapsedTime(&t, e0, e1));
        ms_assign += t;
        CK(cudaEventRecord(e0, st));
        GK(gh_agg_accumulate_gpu(gpu.acc, &gpu.l, gpu.ngroups, &b, st, &err_));
        CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&t, e0, e1));
        ms_acc += t;
    }
    printf("| %llu | %llu | %.1f | %.1f | %.1f | %.2f |\n", (unsigned long long)rows,
           (unsigned long long)gpu.ngroups, ms_copy, ms_assign, ms_acc,
           (double)rows / ((ms_copy + ms_assign + ms_acc) / 1000.0) / 1e9);
    CK(cudaStreamDestroy(st));
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "check") == 0) return check();
    if (argc >= 4 && strcmp(argv[1], "time") == 0) {
        uint64_t rows = strtoull(argv[2], NULL, 10);
        printf("| rows | groups | H2D ms | group ids ms | accumulate ms | Grows/s |\n|---|---|---|---|---|---|\n");
        for (int i = 3; i < argc; i++) time_case(rows, strtoull(argv[i], NULL, 10));
        return 0;
    }
    fprintf(stderr, "usage: %s check | time ROWS GROUPS...\n", argv[0]);
    return 2;
}
