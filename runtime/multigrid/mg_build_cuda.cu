/*
 * mg_build_cuda.cu: the first coarse operator D_c = P^dag A P built on the
 * GPU in float64 (wd_mg_dev.h).
 *
 * The externally accessible functions are
 *   wd_mg_coarse_build_cuda   wd_mg_coarse_build's links (wd_mg.h) from the
 *                             fine level's host arrays, on the backend's
 *                             stream; the device memory freed on return
 *   wd_mg_orthonormalise_cuda the first level's block orthonormalisation
 *                             (wd_mg_orthonormalise) there, in place
 *   wd_mg_random_start_cuda   wd_mg_random_start's field there
 *   wd_mg_vector_set_cuda     wd_mg_vector_set there (the null vectors
 *                             kept on the GPU between the setup's steps)
 *   wd_mg_download_cuda       a large download into pageable memory (pinned
 *                             chunks, the host side copied by 8 threads)
 *   wd_mg_coarse_build_cuda_bytes  the device memory the build takes
 *   wd_mg_coarse_pack_cuda    a coarse level's packed links and, for its
 *                             even-odd solve, X^-1 and the hops X^-1 Y,
 *                             from its host links
 *
 * Notes.  "UV then VUV", as QUDA builds its coarse operators: one thread
 * block a coarse site b, its threads owning entries (i, j) = ((chi', k'),
 * (chi, k)) of the (2 nvec)^2 blocks.  For each term d (the 8 hops, then
 * the local term) and each fine site x of the aggregate in sites[] order
 * the block first writes to shared memory v_k(x) and the 2 nvec vectors
 *   y_(chi,k) = H_d(x) P_chi v_k(x + d)     (the local term: L(x) P_chi v_k(x))
 * then each thread adds sum_{a of chi'} conj(v_k'(x)_a) y_(chi,k)_a to its
 * entries.  The shared buffers are double: one barrier a site.
 *
 * Slots.  A hop goes to its direction's link when it leaves the aggregate
 * (the neighbour lies in another aggregate, or across the lattice's edge:
 * a coarse extent of 1 keeps its periodic self-link, as the host's block
 * geometry does) and to the local block otherwise.  Per term the leaving
 * sites are summed first (to slot d), then the staying ones, whose sum is
 * added to the local block, in term order.  Every sum has a fixed order
 * and nothing is atomic: the same bits on every run (not the host's bits:
 * the host adds each site to the local block, and nvcc contracts into FMA).
 *
 * Memory: links u, the clover blocks, nbr, agg, sites and v on the device
 * (about 576 + 576 + 40 + 192 nvec bytes a fine site), the links out; the
 * host arrays move through two pinned chunks copied by several threads.
 */
#include <cuda_runtime.h>
#include <limits.h>
#include <string.h>
#include <thread>

#include "clover_field.h"
#include "cuda_rt.h"
#include "rng.h"
#include "wd_core.h"
#include "wd_mg_dev.h"

/* ref_wilson.h's ref_gamma (operator module): its C99 double complex is
 * two doubles, as declared here for C++, which has no C99 complex */
extern "C" void ref_gamma(int mu, double g[4][4][2]);

namespace {

/* 512 threads of at most 8 entries each: nvec <= 32 in one chunk, 128
 * registers a thread and 16 warps an SM (measured on an H200, 24^3x64,
 * nvec 24: 256 threads of 12 entries took 170 registers, 8 warps, and the
 * build 6% longer; nvcc 13 spills 6 or 12 entries under these bounds) */
enum { THREADS = 512, DIRS = 8, LOCAL = 8, TERMS = 9, HALF = 6, NFINE = 12 };

/*
 * Staging of the host arrays: 16 MB chunks filled by 8 threads, the
 * choice backend_cuda_host.c measured on the H100 machine (43-45 GB/s
 * against 8-10 for cudaMemcpy from pageable memory).
 */
enum { STAGED_CHUNK = 16 << 20, COPY_THREADS = 8 };

struct build_args {
    const double2 *u;            /* [site][mu][3][3] */
    const double *clover;        /* [site][2][WD_CLOVER_BLOCK_REALS], or NULL: L = 1 */
    const double2 *v;            /* [site][k][12] */
    const int *nbr, *agg, *sites;
    double2 *links;              /* [b][9][2 nvec][2 nvec] */
    size_t slice;                /* sites of a time slice */
    int dims[4];
    int t0, nt;                  /* the block's first global time slice, the global T */
    int nvec, bv;
    double bsign;                /* the sign of a hop across t = T-1 <-> 0 */
    double2 spin[DIRS][4][4];    /* -kappa (1 -+ g_mu), as wd_mg_op_fine */
    /* A[r][c] of a clover block, r != c: the offset of the stored lower
     * entry, negated where A[r][c] is its conjugate (r < c) */
    int clover_at[HALF][HALF];
};

/* the shared memory of a thread block: spin (128) and two buffers of
 * v(x) (12 nvec) and y (12 x 2 nvec, component-major: consecutive threads
 * read consecutive columns) in double2, then the clover table, the
 * aggregate's sites and a byte a site of its leaving hops */
__host__ __device__ inline size_t buffer_len(int nvec)
{
    return (size_t)36 * nvec;
}

size_t shared_bytes(int nvec, int bv)
{
    return (4 * 4 * DIRS + 2 * buffer_len(nvec)) * sizeof(double2) +
           (HALF * HALF + (size_t)bv) * sizeof(int) + (size_t)bv;
}

__device__ inline double2 cmadd(double2 acc, double2 a, double2 b)
{
    acc.x += a.x * b.x - a.y * b.y;
    acc.y += a.x * b.y + a.y * b.x;
    return acc;
}

/* whether hop d from fine site x leaves x's aggregate */
__device__ int hop_leaves(const build_args &a, int d, int x)
{
    const int mu = d >> 1;
    size_t stride = 1;
    for (int nu = 0; nu < mu; ++nu)
        stride *= (size_t)a.dims[nu];
    const int c = (int)((size_t)x / stride % (size_t)a.dims[mu]);
    const int wraps = (d & 1) ? c == 0 : c == a.dims[mu] - 1;
    return wraps || a.agg[a.nbr[(size_t)DIRS * x + d]] != a.agg[x];
}

/* v(x) and y_(chi,k) = H_d(x) P_chi v_k(x + d) of term d < 8 into one buffer */
__device__ void fill_hop(const build_args &a, const double2 *spin, int d, int x, double2 *vx,
                         double2 *y)
{
    const int nv = a.nvec, nc = 2 * nv;
    const double2 *vsite = a.v + (size_t)x * nv * NFINE;
    for (int w = threadIdx.x; w < NFINE * nv; w += THREADS)
        vx[w] = vsite[w];
    const int mu = d >> 1, back = d & 1;
    const int src = a.nbr[(size_t)DIRS * x + d];
    const double2 *link = a.u + (size_t)36 * (back ? src : x) + 9 * mu;
    const int t = a.t0 + (int)((size_t)x / a.slice);
    const double sign = (d == 6 && t == a.nt - 1) || (d == 7 && t == 0) ? a.bsign : 1.0;
    const double2 *sp = spin + 16 * d;
    /* item (spin row i, column j): the 3 colours of spin i of y_j */
    for (int w = threadIdx.x; w < 4 * nc; w += THREADS) {
        const int i = w / nc, j = w % nc, chi = j / nv, k = j % nv;
        const double2 *psi = a.v + ((size_t)src * nv + k) * NFINE + HALF * chi;
        const double2 g0 = sp[4 * i + 2 * chi], g1 = sp[4 * i + 2 * chi + 1];
        double2 h[3];
        for (int b = 0; b < 3; ++b)
            h[b] = cmadd(cmadd(make_double2(0, 0), g0, psi[b]), g1, psi[3 + b]);
        for (int c = 0; c < 3; ++c) {
            double2 acc = make_double2(0, 0);
            for (int b = 0; b < 3; ++b) {
                double2 m = back ? link[3 * b + c] : link[3 * c + b];
                if (back)
                    m.y = -m.y;
                acc = cmadd(acc, m, h[b]);
            }
            y[(3 * i + c) * nc + j] = make_double2(sign * acc.x, sign * acc.y);
        }
    }
}

/* v(x) and y_(chi,k) = L(x) P_chi v_k(x) (L = 1 or the clover A) */
__device__ void fill_local(const build_args &a, const int *clover_at, int x, double2 *vx,
                           double2 *y)
{
    const int nv = a.nvec, nc = 2 * nv;
    const double2 *vsite = a.v + (size_t)x * nv * NFINE;
    for (int w = threadIdx.x; w < NFINE * nv; w += THREADS)
        vx[w] = vsite[w];
    /* item (row r of chirality chi's block, column j) */
    for (int w = threadIdx.x; w < HALF * nc; w += THREADS) {
        const int r = w / nc, j = w % nc, chi = j / nv, k = j % nv;
        const double2 *psi = vsite + k * NFINE + HALF * chi;
        double2 out = psi[r];
        if (a.clover) {
            /* wd_clover_apply_host's row: the diagonal, then c in order */
            const double *blk = a.clover + (size_t)WD_CLOVER_SITE_REALS * x +
                                WD_CLOVER_BLOCK_REALS * chi;
            out = make_double2(blk[r] * psi[r].x, blk[r] * psi[r].y);
            for (int c = 0; c < HALF; ++c) {
                if (c == r)
                    continue;
                const int o = clover_at[HALF * r + c];
                const double ar = blk[o < 0 ? -o : o];
                const double ai = o < 0 ? -blk[1 - o] : blk[o + 1];
                out = cmadd(out, make_double2(ar, ai), psi[c]);
            }
        }
        y[(HALF * chi + r) * nc + j] = out;
        y[(HALF * (1 - chi) + r) * nc + j] = make_double2(0, 0);
    }
}

/*
 * One coarse site a block.  Thread entries e = base + threadIdx.x +
 * THREADS m, m < E, for each chunk of THREADS E entries; `at[m]` packs the
 * entry's offsets into a buffer's v(x) (ki 12 + ci 6) and y (ci 6 nc + j),
 * or is -1 past the last entry.
 */
template <int E>
__global__ void __launch_bounds__(THREADS)
    coarse_build_kernel(const __grid_constant__ build_args a)
{
    extern __shared__ double2 shared[];
    double2 *spin = shared, *buf = shared + 4 * 4 * DIRS;
    const int nv = a.nvec, nc = 2 * nv, nc2 = nc * nc, bv = a.bv;
    int *clover_at = (int *)(buf + 2 * buffer_len(nv));
    int *site = clover_at + HALF * HALF;
    unsigned char *leaving = (unsigned char *)(site + bv);
    const size_t b = blockIdx.x;

    for (int w = threadIdx.x; w < 4 * 4 * DIRS; w += THREADS)
        spin[w] = a.spin[w / 16][w / 4 % 4][w % 4];
    for (int w = threadIdx.x; w < HALF * HALF; w += THREADS)
        clover_at[w] = a.clover_at[w / HALF][w % HALF];
    for (int n = threadIdx.x; n < bv; n += THREADS) {
        const int x = a.sites[b * bv + n];
        int mask = 0;
        for (int d = 0; d < DIRS; ++d)
            mask |= hop_leaves(a, d, x) << d;
        site[n] = x;
        leaving[n] = (unsigned char)mask;
    }
    __syncthreads();

    double2 *out = a.links + b * TERMS * nc2, *local = out + (size_t)LOCAL * nc2;
    int step = 0;
    for (int base = 0; base < nc2; base += THREADS * E) {
        int at[E];
#pragma unroll
        for (int m = 0; m < E; ++m) {
            const int e = base + threadIdx.x + THREADS * m;
            const int i = e / nc, j = e % nc, ci = i / nv, ki = i % nv;
            at[m] = e < nc2 ? (NFINE * ki + HALF * ci) | (HALF * ci * nc + j) << 16 : -1;
            if (e < nc2)
                local[e] = make_double2(0, 0);
        }
        for (int term = 0; term < TERMS; ++term)
            /* pass 0: the sites whose hop leaves (to slot term); 1: the others */
            for (int pass = term < DIRS ? 0 : 1; pass < 2; ++pass) {
                double2 acc[E];
#pragma unroll
                for (int m = 0; m < E; ++m)
                    acc[m] = make_double2(0, 0);
                for (int n = 0; n < bv; ++n) {
                    const int lv = term < DIRS && (leaving[n] >> term & 1);
                    if (lv != (pass == 0))
                        continue;
                    double2 *vx = buf + (step++ & 1) * buffer_len(nv), *y = vx + NFINE * nv;
                    if (term < DIRS)
                        fill_hop(a, spin, term, site[n], vx, y);
                    else
                        fill_local(a, clover_at, site[n], vx, y);
                    __syncthreads();
#pragma unroll
                    for (int m = 0; m < E; ++m) {
                        if (at[m] < 0)
                            continue;
                        const double2 *pv = vx + (at[m] & 0xffff), *py = y + (at[m] >> 16);
                        double2 s = acc[m];
                        for (int c = 0; c < HALF; ++c) {
                            const double2 p = pv[c], q = py[c * nc];
                            s.x += p.x * q.x + p.y * q.y;
                            s.y += p.x * q.y - p.y * q.x;
                        }
                        acc[m] = s;
                    }
                }
#pragma unroll
                for (int m = 0; m < E; ++m) {
                    const int e = base + threadIdx.x + THREADS * m;
                    if (at[m] < 0)
                        continue;
                    if (pass == 0) {
                        out[(size_t)term * nc2 + e] = acc[m];
                    } else {
                        const double2 l = local[e];
                        local[e] = make_double2(l.x + acc[m].x, l.y + acc[m].y);
                    }
                }
            }
    }
}

/* the entries a thread holds: the smallest E of 1, 2, 4, 8 with THREADS E
 * >= (2 nvec)^2, else 8 in chunks (each chunk runs every site again) */
typedef void (*kernel_fn)(build_args);
kernel_fn pick_kernel(int nvec, int *entries)
{
    const long nc2 = 4L * nvec * nvec;
    const long need = (nc2 + THREADS - 1) / THREADS;
    *entries = need <= 1 ? 1 : need <= 2 ? 2 : need <= 4 ? 4 : 8;
    switch (*entries) {
    case 1:
        return coarse_build_kernel<1>;
    case 2:
        return coarse_build_kernel<2>;
    case 4:
        return coarse_build_kernel<4>;
    default:
        return coarse_build_kernel<8>;
    }
}

void copy_part(void *dst, const void *src, size_t bytes, int k, int parts)
{
    const size_t lo = bytes * k / parts, hi = bytes * (k + 1) / parts;
    memcpy((char *)dst + lo, (const char *)src + lo, hi - lo);
}

/* memcpy by COPY_THREADS threads (a part whose thread cannot start is
 * copied here) */
void copy_threaded(void *dst, const void *src, size_t bytes)
{
    std::thread t[COPY_THREADS];
    for (int k = 1; k < COPY_THREADS; ++k) {
        try {
            t[k] = std::thread(copy_part, dst, src, bytes, k, (int)COPY_THREADS);
        } catch (...) {
            copy_part(dst, src, bytes, k, COPY_THREADS);
        }
    }
    copy_part(dst, src, bytes, 0, COPY_THREADS);
    for (int k = 1; k < COPY_THREADS; ++k)
        if (t[k].joinable())
            t[k].join();
}

/* what the build holds: freed by release on every path */
struct build_mem {
    void *u, *clover, *v, *nbr, *agg, *sites, *links;
    void *flag;                  /* the lowest dependent vector, or singular site */
    void *pinned;
};

/* m's two pinned chunks of the staged copies (what: the caller, for the
 * message) */
wd_status pin(build_mem *m, const char *what)
{
    const cudaError_t e = cudaMallocHost(&m->pinned, 2 * (size_t)STAGED_CHUNK);
    if (e == cudaSuccess)
        return WD_OK;
    m->pinned = NULL;
    return wd_fail(WD_ERR_CUDA, "%s: cudaMallocHost of %d bytes: %s", what, 2 * STAGED_CHUNK,
                   cudaGetErrorString(e));
}

/* m's flag on the device, all ones: nothing recorded yet (atomicMin) */
wd_status flag_make(build_mem *m)
{
    wd_status st = wd_cuda_malloc(&m->flag, sizeof(unsigned long long), "a flag");
    return st == WD_OK ? wd_cuda_memset(m->flag, 0xff, sizeof(unsigned long long)) : st;
}

void release(build_mem *m)
{
    void *dev[] = {m->u, m->clover, m->v, m->nbr, m->agg, m->sites, m->links, m->flag};
    for (void *p : dev)
        wd_cuda_free(p);
    if (m->pinned)
        cudaFreeHost(m->pinned);
    memset(m, 0, sizeof *m);
}

wd_status upload(build_mem *m, void **dst, const void *src, size_t bytes, const char *what)
{
    wd_status st = wd_cuda_malloc(dst, bytes, what);
    if (st == WD_OK)
        st = wd_cuda_h2d_staged(*dst, src, bytes, m->pinned, STAGED_CHUNK, copy_threaded);
    return st;
}

/* the device memory build() takes, allocation by allocation */
size_t build_bytes(size_t vol, size_t nghost, int nvec, int clover, int v_on_device,
                   size_t coarse_volume)
{
    const size_t ext = vol + nghost, nc2 = 4 * (size_t)nvec * nvec;
    return ext * 36 * sizeof(double2) +
           (clover ? vol * WD_CLOVER_SITE_REALS * sizeof(double) : 0) +
           (v_on_device ? 0 : ext * (size_t)nvec * NFINE * sizeof(double2)) +
           vol * DIRS * sizeof(int) +
           2 * vol * sizeof(int) + coarse_volume * TERMS * nc2 * sizeof(double2);
}

wd_status build(build_mem *m, const wd_mg_build_fine *f, int nvec, int bv, size_t coarse_volume,
                const int *agg, const int *sites, const double *v, int v_on_device,
                double *links)
{
    const size_t vol = f->volume, nc2 = 4 * (size_t)nvec * nvec;
    /* the links and null vectors with their ghost sites (a hop's source) */
    const size_t ext = vol + f->nghost;
    build_args a;
    memset(&a, 0, sizeof a);
    a.slice = vol / (size_t)f->dims[3];
    memcpy(a.dims, f->dims, sizeof a.dims);
    a.t0 = f->t0;
    a.nt = f->nt;
    a.nvec = nvec;
    a.bv = bv;
    a.bsign = f->tbc == 1 ? 1.0 : -1.0;
    for (int mu = 0; mu < 4; ++mu) {
        double g[4][4][2];
        ref_gamma(mu, g);
        for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 4; ++j) {
                const double one = i == j;
                a.spin[2 * mu][i][j] =
                    make_double2(-f->kappa * (one - g[i][j][0]), -f->kappa * (0.0 - g[i][j][1]));
                a.spin[2 * mu + 1][i][j] =
                    make_double2(-f->kappa * (one + g[i][j][0]), -f->kappa * (0.0 + g[i][j][1]));
            }
    }
    for (int r = 0; r < HALF; ++r)
        for (int c = 0; c < HALF; ++c)
            a.clover_at[r][c] = r == c ? 0 : r > c ? wd_clover_lower(r, c) : -wd_clover_lower(c, r);

    int entries = 0;
    const kernel_fn kernel = pick_kernel(nvec, &entries);
    const size_t smem = shared_bytes(nvec, bv);
    int dev = 0, optin = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    if (e != cudaSuccess)
        return wd_fail(WD_ERR_CUDA, "multigrid GPU coarse build: cudaDeviceGetAttribute: %s",
                       cudaGetErrorString(e));
    if (smem > (size_t)optin)
        return wd_fail(WD_ERR_INVALID, "multigrid GPU coarse build: nvec %d with aggregates of %d "
                       "sites needs %zu bytes of shared memory a thread block; this GPU has %d",
                       nvec, bv, smem, optin);
    if ((e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  (int)smem)) != cudaSuccess)
        return wd_fail(WD_ERR_CUDA, "multigrid GPU coarse build: cudaFuncSetAttribute: %s",
                       cudaGetErrorString(e));

    /* the allocations build_bytes sums */
    wd_status st = pin(m, "multigrid GPU coarse build");
    if (st == WD_OK)
        st = upload(m, &m->u, f->u, ext * 36 * sizeof(double2),
                    "the multigrid coarse build's fine links");
    if (st == WD_OK && f->clover)
        st = upload(m, &m->clover, f->clover, vol * WD_CLOVER_SITE_REALS * sizeof(double),
                    "the multigrid coarse build's clover blocks");
    if (st == WD_OK && !v_on_device)
        st = upload(m, &m->v, v, ext * (size_t)nvec * NFINE * sizeof(double2),
                    "the multigrid coarse build's null vectors");
    if (st == WD_OK)
        st = upload(m, &m->nbr, f->nbr, vol * DIRS * sizeof(int),
                    "the multigrid coarse build's neighbour table");
    if (st == WD_OK)
        st = upload(m, &m->agg, agg, vol * sizeof(int), "the multigrid coarse build's aggregates");
    if (st == WD_OK)
        st = upload(m, &m->sites, sites, vol * sizeof(int),
                    "the multigrid coarse build's aggregate sites");
    const size_t link_bytes = coarse_volume * TERMS * nc2 * sizeof(double2);
    if (st == WD_OK)
        st = wd_cuda_malloc(&m->links, link_bytes, "the multigrid coarse links");
    if (st != WD_OK)
        return st;

    a.u = (const double2 *)m->u;
    a.clover = (const double *)m->clover;
    a.v = (const double2 *)(v_on_device ? v : m->v);
    a.nbr = (const int *)m->nbr;
    a.agg = (const int *)m->agg;
    a.sites = (const int *)m->sites;
    a.links = (double2 *)m->links;
    const cudaStream_t s = (cudaStream_t)wd_cuda_stream();
    if (!s)
        return wd_fail(WD_ERR_CUDA, "multigrid GPU coarse build: no CUDA stream");
    kernel<<<(unsigned)coarse_volume, THREADS, smem, s>>>(a);
    if ((e = cudaGetLastError()) != cudaSuccess)
        return wd_fail(WD_ERR_CUDA, "multigrid GPU coarse build: kernel launch (%d entries a "
                       "thread): %s", entries, cudaGetErrorString(e));
    if ((e = cudaStreamSynchronize(s)) != cudaSuccess)
        return wd_fail(WD_ERR_CUDA, "multigrid GPU coarse build: kernel: %s",
                       cudaGetErrorString(e));
    return wd_cuda_d2h_staged(links, m->links, link_bytes, m->pinned, STAGED_CHUNK,
                              copy_threaded);
}

/* ---- the block orthonormalisation ---- */

/* the orthonormalisation's thread block: ORTH_THREADS threads, each at most
 * ORTH_PER components of an aggregate's chirality (6 bv <= 4096) */
enum { ORTH_THREADS = 256, ORTH_WARPS = ORTH_THREADS / 32, ORTH_PER = 16, ORTH_NVEC = 32 };

/* a warp's sum of (re, im), lane 0 holding it: a fixed tree */
__device__ inline double2 warp_sum(double2 x)
{
    for (int o = 16; o > 0; o >>= 1) {
        x.x += __shfl_down_sync(0xffffffffu, x.x, o);
        x.y += __shfl_down_sync(0xffffffffu, x.y, o);
    }
    return x;
}

/*
 * One thread block an aggregate b and chirality chi (blockIdx.x = 2 b +
 * chi): the nv vectors' components of chi at the aggregate's sites, in
 * sites[] order then component (a thread's components e = threadIdx.x +
 * ORTH_THREADS q), orthonormalised in order by classical Gram-Schmidt
 * twice: the dots of v_k with every earlier v_j in one sweep, each summed
 * over a thread's components, a warp (a fixed tree) and the warps in
 * order, then v_k -= sum_j <v_j, v_k> v_j; then v_k / |v_k|.  A vector of
 * norm^2 <= 1e-28 (or not finite) is left and the lowest (2 b + chi) nv
 * + k recorded in *bad.
 */
__global__ void k_orth(const int *sites, double2 *v, int nv, int bv,
                       unsigned long long *bad)
{
    __shared__ double2 wsum[ORTH_NVEC][ORTH_WARPS];
    __shared__ double2 dots[ORTH_NVEC];
    const int b = blockIdx.x >> 1, chi = blockIdx.x & 1, len = HALF * bv;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    size_t at[ORTH_PER];
    for (int q = 0; q < ORTH_PER; ++q) {
        const int e = threadIdx.x + ORTH_THREADS * q;
        at[q] = e < len ? (size_t)sites[(size_t)b * bv + e / HALF] * nv * NFINE + chi * HALF +
                              e % HALF
                        : 0;
    }
    for (int k = 0; k < nv; ++k) {
        double2 x[ORTH_PER];
        for (int q = 0; q < ORTH_PER; ++q) {
            const int e = threadIdx.x + ORTH_THREADS * q;
            x[q] = e < len ? v[at[q] + (size_t)k * NFINE] : make_double2(0.0, 0.0);
        }
        for (int pass = 0; pass < 2 && k > 0; ++pass) {
            for (int j = 0; j < k; ++j) {
                double2 p = make_double2(0.0, 0.0);
                for (int q = 0; q < ORTH_PER; ++q)
                    if (threadIdx.x + ORTH_THREADS * q < len) {
                        const double2 w = v[at[q] + (size_t)j * NFINE];
                        p.x += w.x * x[q].x + w.y * x[q].y;
                        p.y += w.x * x[q].y - w.y * x[q].x;
                    }
                p = warp_sum(p);
                if (lane == 0)
                    wsum[j][warp] = p;
            }
            __syncthreads();
            if (threadIdx.x < k) {
                double2 d = make_double2(0.0, 0.0);
                for (int w = 0; w < ORTH_WARPS; ++w) {
                    d.x += wsum[threadIdx.x][w].x;
                    d.y += wsum[threadIdx.x][w].y;
                }
                dots[threadIdx.x] = d;
            }
            __syncthreads();
            for (int j = 0; j < k; ++j) {
                const double2 d = dots[j];
                for (int q = 0; q < ORTH_PER; ++q)
                    if (threadIdx.x + ORTH_THREADS * q < len) {
                        const double2 w = v[at[q] + (size_t)j * NFINE];
                        x[q].x -= d.x * w.x - d.y * w.y;
                        x[q].y -= d.x * w.y + d.y * w.x;
                    }
            }
            __syncthreads();
        }
        double2 p = make_double2(0.0, 0.0);
        for (int q = 0; q < ORTH_PER; ++q)
            p.x += x[q].x * x[q].x + x[q].y * x[q].y;
        p = warp_sum(p);
        if (lane == 0)
            wsum[0][warp] = p;
        __syncthreads();
        double norm2 = 0.0;
        for (int w = 0; w < ORTH_WARPS; ++w)
            norm2 += wsum[0][w].x;
        __syncthreads();
        if (!(norm2 > 1e-28) || !isfinite(norm2)) {
            if (threadIdx.x == 0)
                atomicMin(bad, (unsigned long long)blockIdx.x * nv + k);
            continue;
        }
        const double scale = 1.0 / sqrt(norm2);
        for (int q = 0; q < ORTH_PER; ++q)
            if (threadIdx.x + ORTH_THREADS * q < len)
                v[at[q] + (size_t)k * NFINE] = make_double2(x[q].x * scale, x[q].y * scale);
        __syncthreads();
    }
}

/* wd_mg_pack_vectors on the device: a thread a vector-site of NFINE
 * complex (float: each real rounded; 16-bit: its norm the largest |real|,
 * each real round(real 32767 / norm) in float64) */
__global__ void k_round_vectors(size_t count, int precision, const double2 *in, void *out,
                                float *norm)
{
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= count)
        return;
    const double2 *src = in + i * NFINE;
    if (precision != 2) {
        float2 *o = (float2 *)out + i * NFINE;
        for (int a = 0; a < NFINE; ++a)
            o[a] = make_float2(__double2float_rn(src[a].x), __double2float_rn(src[a].y));
        return;
    }
    double m = 0;
    for (int a = 0; a < NFINE; ++a)
        m = fmax(m, fmax(fabs(src[a].x), fabs(src[a].y)));
    const float nm = __double2float_rn(m);
    norm[i] = nm;
    const double scale = nm > 0 ? WD_HALF_SCALE / (double)nm : 0;
    short2 *o = (short2 *)out + i * NFINE;
    for (int a = 0; a < NFINE; ++a)
        o[a] = make_short2((short)__double2ll_rn(src[a].x * scale),
                           (short)__double2ll_rn(src[a].y * scale));
}

wd_status orth(build_mem *m, int level, size_t volume, int nvec, int bv, size_t coarse_volume,
               const int *sites, double *v, int v_on_device, int vf_precision, void *vf,
               float *vf_norm, int *done)
{
    cudaError_t e = cudaSuccess;
    const size_t bytes = volume * (size_t)nvec * NFINE * sizeof(double2);
    wd_status st = pin(m, "multigrid GPU orthonormalisation");
    if (st == WD_OK && !v_on_device)
        st = upload(m, &m->v, v, bytes, "the multigrid orthonormalisation's null vectors");
    double2 *dv = (double2 *)(v_on_device ? v : m->v);
    if (st == WD_OK)
        st = upload(m, &m->sites, sites, volume * sizeof(int),
                    "the multigrid orthonormalisation's aggregate sites");
    if (st == WD_OK)
        st = flag_make(m);
    if (st != WD_OK)
        return st;
    const cudaStream_t s = (cudaStream_t)wd_cuda_stream();
    if (!s)
        return wd_fail(WD_ERR_CUDA, "multigrid GPU orthonormalisation: no CUDA stream");
    k_orth<<<(unsigned)(2 * coarse_volume), ORTH_THREADS, 0, s>>>(
        (const int *)m->sites, dv, nvec, bv, (unsigned long long *)m->flag);
    unsigned long long bad = 0;
    if ((e = cudaGetLastError()) != cudaSuccess || (e = cudaStreamSynchronize(s)) != cudaSuccess)
        return wd_fail(WD_ERR_CUDA, "multigrid GPU orthonormalisation: kernel: %s",
                       cudaGetErrorString(e));
    if ((st = wd_cuda_d2h(&bad, m->flag, sizeof bad)) != WD_OK)
        return st;
    if (bad != ~0ull)
        return wd_fail(WD_ERR_INVALID, "multigrid level %d: null vector %llu is zero or "
                       "dependent on the earlier ones in aggregate %llu, chirality %llu (a setup "
                       "that found too few independent vectors)", level, bad % nvec,
                       bad / (2ull * nvec), bad / nvec % 2);
    if (vf) {
        const size_t n = volume * (size_t)nvec;
        k_round_vectors<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(n, vf_precision, dv, vf,
                                                                    vf_norm);
        if ((e = cudaGetLastError()) != cudaSuccess)
            return wd_fail(WD_ERR_CUDA, "multigrid GPU orthonormalisation: rounding kernel: %s",
                           cudaGetErrorString(e));
    }
    *done = 1;
    if (v_on_device)
        return (e = cudaStreamSynchronize(s)) == cudaSuccess
                   ? WD_OK
                   : wd_fail(WD_ERR_CUDA, "multigrid GPU orthonormalisation: rounding kernel: %s",
                             cudaGetErrorString(e));
    return wd_cuda_d2h_staged(v, m->v, bytes, m->pinned, STAGED_CHUNK, copy_threaded);
}

/* ---- random starts: rng.h's steps, the host's bits ---- */

struct start_args {
    int dims[4], ext[4], org[4];
    uint64_t base;
    int n;
    size_t volume;
};

/* a thread a site: wd_mg_random_start's numbers */
__global__ void k_random_start(start_args a, double2 *v)
{
    const size_t x = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (x >= a.volume)
        return;
    size_t r = x, global = 0, stride = 1;
    for (int mu = 0; mu < 4; ++mu) {
        global += stride * (size_t)(a.org[mu] + (int)(r % a.dims[mu]));
        stride *= a.ext[mu];
        r /= a.dims[mu];
    }
    uint64_t state = a.base + global, s[4];
    for (int i = 0; i < 4; ++i)
        s[i] = wd_rng_splitmix64(&state);
    for (int i = 0; i < a.n; ++i) {
        const double re = 2 * wd_rng_to_uniform(wd_rng_step(s)) - 1;
        v[x * a.n + i] = make_double2(re, 2 * wd_rng_to_uniform(wd_rng_step(s)) - 1);
    }
}

/* ---- a coarse level's packed links, X^-1 and the even-odd hops ---- */

/* 256 threads a coarse site; n = 2 nvec <= PACK_NMAX (shared memory: two
 * n x n blocks in double2, 131 kB at 64); sites in pieces of at most
 * PACK_CHUNK bytes of host links */
enum { PACK_THREADS = 256, PACK_WARPS = PACK_THREADS / 32, PACK_NMAX = 64 };
const size_t PACK_CHUNK = (size_t)256 << 20;

struct pack_args {
    int n, precision, half_volume;
    const double2 *links;        /* the piece's host links on the device */
    void *dlinks;
    float *dlink_norm;
    const int *slot;             /* NULL: no even-odd solve */
    float *dxinv;
    void *dhops[2];
    float *dhop_norm[2];
};

/* the largest of every thread's m (every thread calls it) */
__device__ double block_max(double m, double *red)
{
    for (int o = 16; o > 0; o >>= 1)
        m = fmax(m, __shfl_down_sync(0xffffffffu, m, o));
    __syncthreads();
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = m;
    __syncthreads();
    double r = 0;
    for (int w = 0; w < PACK_WARPS; ++w)
        r = fmax(r, red[w]);
    return r;
}

/* wd_pack_coarse_links's store of one real: its bits */
__device__ inline void store_real(int precision, void *dst, size_t at, double v, double scale)
{
    if (precision == 4)
        ((float *)dst)[at] = __double2float_rn(v);
    else
        ((short *)dst)[at] = (short)__double2ll_rn(v * scale);
}

/* block blk (row-major n x n, x) packed as wd_pack_coarse_links packs it:
 * its norm the largest |real| (half), column j's real then imaginary
 * plane, i fastest */
__device__ void pack_block(const double2 *x, int n, int precision, void *dst, float *norm,
                           size_t blk, double *red)
{
    const int nn = n * n;
    double scale = 1;
    if (precision == 2) {
        double m = 0;
        for (int e = threadIdx.x; e < nn; e += PACK_THREADS)
            m = fmax(m, fmax(fabs(x[e].x), fabs(x[e].y)));
        const float nm = __double2float_rn(block_max(m, red));
        if (threadIdx.x == 0)
            norm[blk] = nm;
        scale = nm > 0 ? WD_HALF_SCALE / (double)nm : 0;
    }
    const size_t base = blk * 2 * (size_t)nn;
    for (int e = threadIdx.x; e < nn; e += PACK_THREADS) {
        const int j = e / n, i = e % n;
        const double2 z = x[(size_t)i * n + j];
        store_real(precision, dst, base + 2 * (size_t)j * n + i, z.x, scale);
        store_real(precision, dst, base + (2 * (size_t)j + 1) * n + i, z.y, scale);
    }
}

/*
 * One coarse site s = s0 + blockIdx.x a thread block: its 9 blocks packed;
 * with the even-odd solve also X(s)^-1 by Gauss-Jordan with partial
 * pivoting in float64 (the host's coarse_xinv's steps: the first row of
 * the largest |entry|^2 the pivot) written in single, column-major, and X^-1
 * Y_d (d < 8; the sum over k in order) packed into its parity's hops at
 * its slot, block 8 zero.  A singular block records the lowest such s in
 * *bad and leaves the site's X^-1 and hops unwritten.
 */
__global__ void __launch_bounds__(PACK_THREADS) k_coarse_pack(const __grid_constant__ pack_args a,
                                                              int s0, unsigned long long *bad)
{
    extern __shared__ double2 pack_shared[];
    __shared__ double red[PACK_WARPS];
    __shared__ int pivot_row, failed;
    const int n = a.n, nn = n * n;
    const size_t s = (size_t)s0 + blockIdx.x;
    const double2 *blk = a.links + (size_t)blockIdx.x * TERMS * nn;
    for (int d = 0; d < TERMS; ++d)
        pack_block(blk + (size_t)d * nn, n, a.precision, a.dlinks, a.dlink_norm,
                   s * TERMS + d, red);
    if (!a.slot)
        return;
    double2 *x = pack_shared, *inv = pack_shared + nn;
    for (int e = threadIdx.x; e < nn; e += PACK_THREADS) {
        x[e] = blk[(size_t)LOCAL * nn + e];
        inv[e] = make_double2(e % (n + 1) == 0 ? 1.0 : 0.0, 0.0);
    }
    if (threadIdx.x == 0)
        failed = 0;
    __syncthreads();
    for (int c = 0; c < n; ++c) {
        /* the pivot: the largest |x[r][c]|^2 of r >= c, the lowest r of a tie */
        if (threadIdx.x < 32) {
            double best = -1;
            int row = n;
            for (int r = c + (int)threadIdx.x; r < n; r += 32) {
                const double2 z = x[(size_t)r * n + c];
                const double m = z.x * z.x + z.y * z.y;
                if (m > best) {
                    best = m;
                    row = r;
                }
            }
            for (int o = 16; o > 0; o >>= 1) {
                const double ob = __shfl_down_sync(0xffffffffu, best, o);
                const int orow = __shfl_down_sync(0xffffffffu, row, o);
                if (ob > best || (ob == best && orow < row)) {
                    best = ob;
                    row = orow;
                }
            }
            if (threadIdx.x == 0) {
                pivot_row = row;
                const double2 z = row < n ? x[(size_t)row * n + c] : make_double2(0, 0);
                if (!(best > 0) || !isfinite(z.x) || !isfinite(z.y))
                    failed = 1;
            }
        }
        __syncthreads();
        if (failed)
            break;
        const int p = pivot_row;
        if (p != c)
            for (int j = threadIdx.x; j < 2 * n; j += PACK_THREADS) {
                double2 *m = j < n ? x : inv;
                const int jj = j < n ? j : j - n;
                const double2 t = m[(size_t)c * n + jj];
                m[(size_t)c * n + jj] = m[(size_t)p * n + jj];
                m[(size_t)p * n + jj] = t;
            }
        __syncthreads();
        /* the pivot row times 1 / pivot */
        const double2 piv = x[(size_t)c * n + c];
        const double den = piv.x * piv.x + piv.y * piv.y;
        const double2 rp = make_double2(piv.x / den, -piv.y / den);
        __syncthreads();
        for (int j = threadIdx.x; j < 2 * n; j += PACK_THREADS) {
            double2 *m = j < n ? x : inv;
            const int jj = j < n ? j : j - n;
            const double2 z = m[(size_t)c * n + jj];
            m[(size_t)c * n + jj] = make_double2(z.x * rp.x - z.y * rp.y, z.x * rp.y + z.y * rp.x);
        }
        __syncthreads();
        /* every other row minus its column-c entry times the pivot row
         * (the factors read first: column c itself changes) */
        double2 *f = inv + nn;
        for (int r = threadIdx.x; r < n; r += PACK_THREADS)
            f[r] = r == c ? make_double2(0, 0) : x[(size_t)r * n + c];
        __syncthreads();
        for (int w = threadIdx.x; w < 2 * n * n; w += PACK_THREADS) {
            const int r = w / (2 * n), j = w % (2 * n);
            if (r == c)
                continue;
            double2 *m = j < n ? x : inv;
            const int jj = j < n ? j : j - n;
            const double2 fr = f[r], pc = m[(size_t)c * n + jj];
            double2 z = m[(size_t)r * n + jj];
            z.x -= fr.x * pc.x - fr.y * pc.y;
            z.y -= fr.x * pc.y + fr.y * pc.x;
            m[(size_t)r * n + jj] = z;
        }
        __syncthreads();
    }
    if (failed) {
        if (threadIdx.x == 0)
            atomicMin(bad, (unsigned long long)s);
        return;
    }
    /* X^-1 in single, column-major: entry (i, j) at float pair (s n + j) n + i */
    for (int e = threadIdx.x; e < nn; e += PACK_THREADS) {
        const int j = e / n, i = e % n;
        const double2 z = inv[(size_t)i * n + j];
        a.dxinv[2 * (s * nn + e)] = __double2float_rn(z.x);
        a.dxinv[2 * (s * nn + e) + 1] = __double2float_rn(z.y);
    }
    const int slot = a.slot[s], par = slot / a.half_volume, at = slot % a.half_volume;
    for (int d = 0; d < TERMS; ++d) {
        /* x = X^-1 Y_d (x is free: the elimination left 1 there) */
        __syncthreads();
        const double2 *y = blk + (size_t)d * nn;
        for (int e = threadIdx.x; e < nn; e += PACK_THREADS) {
            double2 acc = make_double2(0, 0);
            if (d < DIRS) {
                const int r = e / n, col = e % n;
                for (int k = 0; k < n; ++k)
                    acc = cmadd(acc, inv[(size_t)r * n + k], y[(size_t)k * n + col]);
            }
            x[e] = acc;
        }
        __syncthreads();
        pack_block(x, n, a.precision, par ? a.dhops[1] : a.dhops[0],
                   par ? a.dhop_norm[1] : a.dhop_norm[0], (size_t)at * TERMS + d, red);
    }
}

wd_status coarse_pack(build_mem *m, const wd_mg_coarse_pack *p, int level)
{
    const int n = p->n, eo = p->slot != NULL;
    const size_t nn = (size_t)n * n, site_bytes = TERMS * nn * sizeof(double2);
    const size_t chunk = PACK_CHUNK / site_bytes < 1 ? 1 : PACK_CHUNK / site_bytes;
    const size_t piece = chunk < (size_t)p->volume ? chunk : (size_t)p->volume;
    const size_t smem = eo ? (2 * nn + n) * sizeof(double2) : 0;
    cudaError_t e = cudaSuccess;
    if (eo && (e = cudaFuncSetAttribute(k_coarse_pack, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)smem)) != cudaSuccess)
        return wd_fail(WD_ERR_CUDA, "multigrid level %d: coarse packing: cudaFuncSetAttribute "
                       "(%zu bytes of shared memory): %s", level, smem, cudaGetErrorString(e));
    wd_status st = pin(m, "multigrid coarse packing");
    if (st == WD_OK)
        st = wd_cuda_malloc(&m->links, piece * site_bytes, "the coarse links' upload");
    if (st == WD_OK && eo)
        st = upload(m, &m->sites, p->slot, (size_t)p->volume * sizeof(int),
                    "the even-odd coarse sites' slots");
    if (st == WD_OK)
        st = flag_make(m);
    if (st != WD_OK)
        return st;
    const cudaStream_t s = (cudaStream_t)wd_cuda_stream();
    if (!s)
        return wd_fail(WD_ERR_CUDA, "multigrid level %d: coarse packing: no CUDA stream", level);
    pack_args a;
    memset(&a, 0, sizeof a);
    a.n = n;
    a.precision = p->precision;
    a.half_volume = p->half_volume;
    a.links = (const double2 *)m->links;
    a.dlinks = p->dlinks;
    a.dlink_norm = p->dlink_norm;
    a.slot = eo ? (const int *)m->sites : NULL;
    a.dxinv = p->dxinv;
    for (int q = 0; q < 2; ++q) {
        a.dhops[q] = p->dhops[q];
        a.dhop_norm[q] = p->dhop_norm[q];
    }
    for (size_t s0 = 0; s0 < (size_t)p->volume; s0 += piece) {
        const size_t count = (size_t)p->volume - s0 < piece ? (size_t)p->volume - s0 : piece;
        /* the previous piece's kernel has read the buffer */
        if ((e = cudaStreamSynchronize(s)) != cudaSuccess)
            return wd_fail(WD_ERR_CUDA, "multigrid level %d: coarse packing: %s", level,
                           cudaGetErrorString(e));
        if ((st = wd_cuda_h2d_staged(m->links, p->links + 2 * s0 * TERMS * nn,
                                     count * site_bytes, m->pinned, STAGED_CHUNK,
                                     copy_threaded)) != WD_OK)
            return st;
        k_coarse_pack<<<(unsigned)count, PACK_THREADS, smem, s>>>(a, (int)s0,
                                                                   (unsigned long long *)m->flag);
        if ((e = cudaGetLastError()) != cudaSuccess)
            return wd_fail(WD_ERR_CUDA, "multigrid level %d: coarse packing kernel: %s", level,
                           cudaGetErrorString(e));
    }
    if ((e = cudaStreamSynchronize(s)) != cudaSuccess)
        return wd_fail(WD_ERR_CUDA, "multigrid level %d: coarse packing kernel: %s", level,
                       cudaGetErrorString(e));
    unsigned long long bad = 0;
    if ((st = wd_cuda_d2h(&bad, m->flag, sizeof bad)) != WD_OK)
        return st;
    if (bad != ~0ull)
        return wd_fail(WD_ERR_INVALID, "multigrid level %d: the local block of coarse site %llu "
                       "is singular: no even-odd coarse solve (coarse_eo 0 solves the whole "
                       "operator)", level, bad);
    return WD_OK;
}

/* v[(x nvec + k) 12 + a] = field[12 x + a] over the volume's sites */
__global__ void k_vector_set(size_t volume, int nvec, int k, const double2 *field, double2 *v)
{
    const size_t w = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (w >= volume * NFINE)
        return;
    const size_t x = w / NFINE;
    v[(x * nvec + k) * NFINE + w % NFINE] = field[w];
}

} /* namespace */

extern "C" size_t wd_mg_coarse_build_cuda_bytes(size_t volume, size_t nghost, int nvec,
                                                int clover, int v_on_device,
                                                size_t coarse_volume)
{
    return build_bytes(volume, nghost, nvec, clover, v_on_device, coarse_volume);
}

extern "C" wd_status wd_mg_random_start_cuda(const int dims[4], const int ext[4],
                                             const int org[4], uint64_t base, int n, double *v)
{
    start_args a;
    a.volume = 1;
    for (int mu = 0; mu < 4; ++mu) {
        a.dims[mu] = dims[mu];
        a.ext[mu] = ext[mu];
        a.org[mu] = org[mu];
        a.volume *= (size_t)dims[mu];
    }
    a.base = base;
    a.n = n;
    const cudaStream_t s = (cudaStream_t)wd_cuda_stream();
    if (!s)
        return wd_fail(WD_ERR_CUDA, "multigrid GPU random start: no CUDA stream");
    k_random_start<<<(unsigned)((a.volume + 127) / 128), 128, 0, s>>>(a, (double2 *)v);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return wd_fail(WD_ERR_CUDA, "multigrid GPU random start: %s", cudaGetErrorString(e));
    return WD_OK;
}

extern "C" wd_status wd_mg_orthonormalise_cuda(int level, size_t fine_volume, int nvec,
                                               int block_volume, size_t coarse_volume,
                                               const int *sites, double *v, int v_on_device,
                                               int vf_precision, void *vf, float *vf_norm,
                                               int *done)
{
    *done = 0;
    if (nvec > ORTH_NVEC || (size_t)HALF * block_volume > (size_t)ORTH_THREADS * ORTH_PER)
        return WD_OK;   /* the host's */
    if (!sites || !v || coarse_volume * (size_t)block_volume != fine_volume ||
        2 * coarse_volume > INT_MAX)
        return wd_fail(WD_ERR_INVALID, "multigrid GPU orthonormalisation: %zu fine sites, %zu "
                       "aggregates of %d do not fit together", fine_volume, coarse_volume,
                       block_volume);
    if (vf && vf_precision != 4 && (vf_precision != 2 || !vf_norm))
        return wd_fail(WD_ERR_INVALID, "multigrid GPU orthonormalisation: the transfer's "
                       "vectors in precision %d%s (4 or 2 with norms)", vf_precision,
                       vf_norm ? "" : " without norms");
    build_mem m;
    memset(&m, 0, sizeof m);
    const wd_status st = orth(&m, level, fine_volume, nvec, block_volume, coarse_volume, sites,
                              v, v_on_device, vf_precision, vf, vf_norm, done);
    release(&m);
    return st;
}

extern "C" wd_status wd_mg_coarse_build_cuda(const wd_mg_build_fine *fine, int nvec,
                                             int block_volume, size_t coarse_volume,
                                             const int *agg, const int *sites, const double *v,
                                             int v_on_device, double *links)
{
    if (!fine || !fine->nbr || !fine->u || !agg || !sites || !v || !links)
        return wd_fail(WD_ERR_INVALID, "multigrid GPU coarse build: a null argument");
    if (nvec < 1 || block_volume < 1 || coarse_volume < 1 || coarse_volume > INT_MAX ||
        fine->volume > INT_MAX || coarse_volume * (size_t)block_volume != fine->volume ||
        fine->dims[3] < 1 || fine->volume != wd_volume(fine->dims) || 14L * nvec >= 1 << 15 ||
        fine->nt < fine->dims[3] || fine->t0 < 0 || fine->t0 + fine->dims[3] > fine->nt)
        return wd_fail(WD_ERR_INVALID, "multigrid GPU coarse build: %zu fine sites, %zu "
                       "aggregates of %d, nvec %d do not fit together", fine->volume,
                       coarse_volume, block_volume, nvec);
    build_mem m;
    memset(&m, 0, sizeof m);
    const wd_status st = build(&m, fine, nvec, block_volume, coarse_volume, agg, sites, v,
                               v_on_device, links);
    release(&m);
    return st;
}

extern "C" wd_status wd_mg_download_cuda(void *dst, const void *src, size_t bytes)
{
    build_mem m;
    memset(&m, 0, sizeof m);
    wd_status st = pin(&m, "multigrid: a download");
    if (st == WD_OK)
        st = wd_cuda_d2h_staged(dst, src, bytes, m.pinned, STAGED_CHUNK, copy_threaded);
    release(&m);
    return st;
}

extern "C" wd_status wd_mg_vector_set_cuda(size_t volume, int nvec, int k, const double *field,
                                           double *v)
{
    if (!field || !v || k < 0 || k >= nvec || volume < 1)
        return wd_fail(WD_ERR_INVALID, "multigrid: storing null vector %d of %d on the GPU: a "
                       "null field or no sites", k, nvec);
    const cudaStream_t s = (cudaStream_t)wd_cuda_stream();
    if (!s)
        return wd_fail(WD_ERR_CUDA, "multigrid: storing a null vector on the GPU: no CUDA stream");
    const size_t n = volume * NFINE;
    k_vector_set<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(volume, nvec, k,
                                                            (const double2 *)field, (double2 *)v);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return wd_fail(WD_ERR_CUDA, "multigrid: storing a null vector on the GPU: %s",
                       cudaGetErrorString(e));
    return WD_OK;
}

extern "C" wd_status wd_mg_coarse_pack_cuda(const wd_mg_coarse_pack *p, int level)
{
    if (!p || !p->links || !p->dlinks || p->n < 1 || p->n > PACK_NMAX || p->volume < 1 ||
        (p->precision != 4 && p->precision != 2) || (p->precision == 2 && !p->dlink_norm) ||
        (p->slot && (!p->dxinv || p->half_volume < 1 || 2 * p->half_volume != p->volume ||
                     !p->dhops[0] || !p->dhops[1] ||
                     (p->precision == 2 && (!p->dhop_norm[0] || !p->dhop_norm[1])))))
        return wd_fail(WD_ERR_INVALID, "multigrid level %d: coarse packing on the GPU: %d "
                       "components a site (at most %d), %d sites, precision %d, or a null "
                       "argument", level, p ? p->n : 0, (int)PACK_NMAX, p ? p->volume : 0,
                       p ? p->precision : 0);
    build_mem m;
    memset(&m, 0, sizeof m);
    const wd_status st = coarse_pack(&m, p, level);
    release(&m);
    return st;
}
