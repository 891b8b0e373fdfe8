/*
 * mg_dev_cuda.cu: the coarse levels' operations on the GPU (wd_mg_dev.h):
 * device memory through the thin CUDA layer (cuda_rt.h), every kernel on
 * the backend's one stream, the generated coarse kernels for D_c.
 *
 * The externally accessible functions are
 *   wd_mg_dev_cuda_ops   the table
 * Reductions: a fixed grid (at most RED_BLOCKS blocks of RED_THREADS
 * threads, fixed by the field's size), each thread summing its elements
 * in a fixed stride in double, a fixed tree in each block (warp shuffles,
 * then the warps in order), the blocks' partials read back (pinned memory,
 * allocated once a process and kept) and summed on the host in block
 * order: the same bits on every call, no atomics.  lanes_cdot: that grid
 * a row a lane (blockIdx.y) in one launch and one read-back, a lane the
 * bits of multi_cdot on it alone.
 * Transfers: P^dag one block an aggregate, a thread a vector and a slice
 * of the aggregate's sites summing them and the components in order, the
 * slices then added in order;
 * P a thread a fine component summing the vectors in order.  Arithmetic in
 * float (the fine host-layout doubles rounded on load).
 */
#include <cuda_runtime.h>

#include "cuda_rt.h"
#include "wd_coarse_op.h"
#include "wd_core.h"
#include "wd_mg_dev.h"

namespace {

/* the reductions' grid: at most RED_BLOCKS blocks (two an SM of an H100),
 * fewer for small fields (a block per RED_THREADS elements) */
enum { THREADS = 256, RED_THREADS = 256, RED_BLOCKS = 264, RESTRICT_THREADS = 256 };

wd_status launched(const char *what)
{
    const cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? WD_OK
                            : wd_fail(WD_ERR_CUDA, "multigrid %s kernel: %s", what,
                                      cudaGetErrorString(e));
}

cudaStream_t stream_of()
{
    return (cudaStream_t)wd_cuda_stream();
}

unsigned grid_for(size_t threads)
{
    return (unsigned)((threads + THREADS - 1) / THREADS);
}

/* complex element j of a packed field of n components a site: its real
 * part's offset (the imaginary part n further) */
__device__ __forceinline__ size_t re_at(size_t j, int n)
{
    return (j / n) * 2 * n + j % n;
}

__global__ void k_scale(size_t len, float a, float *x)
{
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < len)
        x[i] *= a;
}

/* the n / 2 chirality-1 components of every site negated, real and
 * imaginary parts: count = volume n threads */
__global__ void k_g5(size_t count, int n, float *x)
{
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= count)
        return;
    const size_t s = i / n;
    const int j = (int)(i - s * n), h = n / 2;
    const size_t at = s * 2 * n + (j < h ? h + j : n + j);
    x[at] = -x[at];
}

__global__ void k_xmy(size_t len, const float *x, float *y)
{
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < len)
        y[i] = x[i] - y[i];
}

struct multi {
    const float *x[WD_MG_DEV_MULTI];
    float2 a[WD_MG_DEV_MULTI];
    int k;
};

/* the complex element at float r of y (its imaginary part n further) +=
 * sum_{i < k} a[i] times that of x[i], in i order: multi_caxpy's and
 * lanes_caxpy's arithmetic (one function: a lane has multi_caxpy's bits) */
__device__ __forceinline__ void caxpy_at(size_t r, int n, int k, const float *const *x,
                                         const float2 *a, float *y)
{
    float yr = y[r], yi = y[r + n];
    for (int i = 0; i < k; ++i) {
        const float xr = x[i][r], xi = x[i][r + n];
        yr += a[i].x * xr - a[i].y * xi;
        yi += a[i].x * xi + a[i].y * xr;
    }
    y[r] = yr;
    y[r + n] = yi;
}

__global__ void k_multi_caxpy(size_t count, int n, multi m, float *y)
{
    const size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (j >= count)
        return;
    caxpy_at(re_at(j, n), n, m.k, m.x, m.a, y);
}

/* lanes_caxpy's arguments (about 2.2 KB, under the 4 KB of a launch's
 * parameters): lane r's coefficients at a[r k + i], its fields `stride`
 * floats on from the lane before; live[]: the lanes the grid's rows
 * (blockIdx.y) update, those with a coefficient other than zero */
struct lanes_multi {
    const float *x[WD_MG_DEV_MULTI];
    float2 a[WD_MG_DEV_LANES * WD_MG_DEV_MULTI];
    size_t stride;
    int k;
    unsigned char live[WD_MG_DEV_LANES];
};

__global__ void k_lanes_caxpy(size_t count, int n, lanes_multi m, float *y)
{
    const size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (j >= count)
        return;
    const int r = m.live[blockIdx.y];
    caxpy_at(r * m.stride + re_at(j, n), n, m.k, m.x, m.a + r * m.k, y);
}

/* part[(l gridDim.x + b) 2K + 2i + {0,1}] = block b's share of <x[i], y>
 * on lane l = blockIdx.y (its fields lane_stride floats on from the lane
 * before), for K fields (a template: the accumulators stay in registers).
 * multi_cdot is the one lane of a grid of one row: a lane has its bits
 * with the same gridDim.x */
template <int K>
__global__ void k_multi_cdot(size_t count, int n, multi m, const float *y, size_t lane_stride,
                             double *part)
{
    const size_t lane_at = blockIdx.y * lane_stride;
    __shared__ double sh[2 * K][RED_THREADS / 32];
    double acc[2 * K];
#pragma unroll
    for (int i = 0; i < 2 * K; ++i)
        acc[i] = 0;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < count; j += stride) {
        const size_t r = lane_at + re_at(j, n);
        const double yr = y[r], yi = y[r + n];
#pragma unroll
        for (int i = 0; i < K; ++i) {
            const double xr = m.x[i][r], xi = m.x[i][r + n];
            acc[2 * i] += xr * yr + xi * yi;
            acc[2 * i + 1] += xr * yi - xi * yr;
        }
    }
    /* a fixed tree: the warp's shuffle tree, then the warps in order */
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
    for (int i = 0; i < 2 * K; ++i) {
        double v = acc[i];
        for (int o = 16; o > 0; o /= 2)
            v += __shfl_down_sync(0xffffffffu, v, o);
        if (lane == 0)
            sh[i][warp] = v;
    }
    __syncthreads();
    if (threadIdx.x < 2 * K) {
        double v = 0;
        for (int w = 0; w < RED_THREADS / 32; ++w)
            v += sh[threadIdx.x][w];
        part[((size_t)blockIdx.y * gridDim.x + blockIdx.x) * 2 * K + threadIdx.x] = v;
    }
}

template <int K>
void launch_cdot(unsigned blocks, unsigned lanes, cudaStream_t s, size_t count, int n,
                 const multi &m, const float *y, size_t stride, double *part)
{
    k_multi_cdot<K><<<dim3(blocks, lanes), RED_THREADS, 0, s>>>(count, n, m, y, stride, part);
}

typedef void (*cdot_launcher)(unsigned, unsigned, cudaStream_t, size_t, int, const multi &,
                              const float *, size_t, double *);
const cdot_launcher cdot_launchers[WD_MG_DEV_MULTI] = {
    launch_cdot<1>,  launch_cdot<2>,  launch_cdot<3>,  launch_cdot<4>,
    launch_cdot<5>,  launch_cdot<6>,  launch_cdot<7>,  launch_cdot<8>,
    launch_cdot<9>,  launch_cdot<10>, launch_cdot<11>, launch_cdot<12>,
    launch_cdot<13>, launch_cdot<14>, launch_cdot<15>, launch_cdot<16>};

/* single -> 16-bit, one block a site (blockDim.x = 2 n reals, up to 1024):
 * the site's largest |real| reduced in shared memory, as the kernels'
 * store; into site sites[b] of h (b where sites is NULL) */
__global__ void k_to_half(int n, const float *x, const int *sites, short *h, float *norm)
{
    extern __shared__ float mx[];
    const size_t s = sites ? (size_t)sites[blockIdx.x] : blockIdx.x;
    const int i = threadIdx.x;
    const float v = x[blockIdx.x * (size_t)2 * n + i];
    mx[i] = fabsf(v);
    __syncthreads();
    if (i == 0) {
        float m = 0.0f;
        for (int k = 0; k < 2 * n; ++k)
            m = fmaxf(m, mx[k]);
        mx[2 * n] = m;
        norm[s] = m;
    }
    __syncthreads();
    h[s * 2 * n + i] = wd_round_short(v * wd_half_scale(mx[2 * n]));
}

__global__ void k_from_half(size_t len, int n, const short *h, const float *norm, float *x)
{
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < len)
        x[i] = wd_s2f(h[i]) * (norm[i / (2 * n)] * WD_HALF_INV_SCALE);
}

/* the fine field's component a of site x, as float */
template <bool HOST>
__device__ __forceinline__ float2 fine_load(const void *fine, size_t x, int a, int nf)
{
    if (HOST) {
        const double2 f = ((const double2 *)fine)[x * nf + a];
        return make_float2((float)f.x, (float)f.y);
    }
    const float *f = (const float *)fine + x * 2 * nf;
    return make_float2(f[a], f[nf + a]);
}

/* component a of null vector k at site x (vs = x nvec + k) as float:
 * float, or 16-bit times its norm / 32767 */
template <bool HALF>
__device__ __forceinline__ float2 vector_load(const wd_mg_dev_transfer &t, size_t vs, int a)
{
    if (HALF) {
        const short2 q = ((const short2 *)t.v)[vs * t.n_fine + a];
        const float sc = t.v_norm[vs] * WD_HALF_INV_SCALE;
        return make_float2(wd_s2f(q.x) * sc, wd_s2f(q.y) * sc);
    }
    return ((const float2 *)t.v)[vs * t.n_fine + a];
}

/* One block an aggregate, thread (s, k) for slice s < S of its sites and
 * vector k: the slice's sites j = s, s + S, ... summed in order for both
 * chiralities, then the S slices' sums added in slice order (shared
 * memory) by thread c = chi nvec + k.  S slices give the kernel S times
 * the threads of one a coarse component, each with a contiguous run of
 * its vector's components to read: enough loads in flight for the
 * bandwidth (a thread a coarse component had 48 threads a block and 1536
 * dependent steps each at the first level). */
template <bool HOST, bool HALF>
__global__ void k_restrict(wd_mg_dev_transfer t, float *coarse, const void *fine)
{
    extern __shared__ float2 part[]; /* [S][2 nvec] */
    const int b = blockIdx.x, nv = t.nvec, nf = t.n_fine, h = nf / 2, S = blockDim.x / nv;
    const int k = threadIdx.x % nv, s = threadIdx.x / nv;
    float2 sum[2] = {make_float2(0, 0), make_float2(0, 0)};
    for (int j = s; j < t.block_volume; j += S) {
        const size_t x = (size_t)t.sites[(size_t)b * t.block_volume + j];
#pragma unroll 2
        for (int chi = 0; chi < 2; ++chi) {
            float re = 0, im = 0;
#pragma unroll 6
            for (int a = 0; a < h; ++a) {
                const float2 w = vector_load<HALF>(t, x * nv + k, chi * h + a),
                             f = fine_load<HOST>(fine, x, chi * h + a, nf);
                re += w.x * f.x + w.y * f.y;
                im += w.x * f.y - w.y * f.x;
            }
            sum[chi].x += re;
            sum[chi].y += im;
        }
    }
    part[s * 2 * nv + k] = sum[0];
    part[s * 2 * nv + nv + k] = sum[1];
    __syncthreads();
    for (int c = threadIdx.x; c < 2 * nv; c += blockDim.x) {
        float2 z = part[c];
        for (int q = 1; q < S; ++q) {
            z.x += part[q * 2 * nv + c].x;
            z.y += part[q * 2 * nv + c].y;
        }
        float *out = coarse + (size_t)b * 4 * nv;
        out[c] = z.x;
        out[2 * nv + c] = z.y;
    }
}

/* a thread a fine component (x, a), x the i-th fine site (fine_sites[i]
 * in a transfer of one parity) */
template <bool HOST, bool HALF>
__global__ void k_prolong(wd_mg_dev_transfer t, void *fine, const float *coarse)
{
    const int nv = t.nvec, nf = t.n_fine;
    const size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (idx >= (size_t)t.fine_volume * nf)
        return;
    const size_t i = idx / nf;
    const size_t x = t.fine_sites ? (size_t)t.fine_sites[i] : i;
    const int a = (int)(idx % nf), off = (a >= nf / 2) * nv;
    const float *cr = coarse + (size_t)t.agg[x] * 4 * nv, *ci = cr + 2 * nv;
    float re = 0, im = 0;
    for (int k = 0; k < nv; ++k) {
        const float2 w = vector_load<HALF>(t, x * nv + k, a);
        re += w.x * cr[off + k] - w.y * ci[off + k];
        im += w.x * ci[off + k] + w.y * cr[off + k];
    }
    if (HOST) {
        ((double2 *)fine)[x * nf + a] = make_double2(re, im);
    } else {
        float *f = (float *)fine + x * 2 * nf;
        f[a] = re;
        f[nf + a] = im;
    }
}

/* ---- the table ---- */

size_t reals(int volume, int n)
{
    return (size_t)volume * 2 * n;
}

wd_status cuda_alloc(void **p, size_t bytes, const char *what)
{
    return wd_cuda_malloc(p, bytes, what);
}

void cuda_free(void *p)
{
    wd_cuda_free(p);
}

wd_status cuda_h2d(void *dst, const void *src, size_t bytes)
{
    return wd_cuda_h2d(dst, src, bytes);
}

wd_status cuda_d2h(void *dst, const void *src, size_t bytes)
{
    return wd_cuda_d2h(dst, src, bytes);
}


wd_status cuda_zero(int volume, int n, float *y)
{
    const cudaError_t e = cudaMemsetAsync(y, 0, reals(volume, n) * sizeof *y, stream_of());
    return e == cudaSuccess ? WD_OK
                            : wd_fail(WD_ERR_CUDA, "multigrid zero: cudaMemsetAsync: %s",
                                      cudaGetErrorString(e));
}

__global__ void k_gather(size_t len, int floats, const int *sites, const float *in, float *out)
{
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < len)
        out[i] = in[(size_t)sites[i / floats] * floats + i % floats];
}

__global__ void k_scatter(size_t len, int floats, const int *sites, const float *in, float *out)
{
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < len)
        out[(size_t)sites[i / floats] * floats + i % floats] = in[i];
}

/* the kernel's arguments on lv: out = D_c in, or with half links hout =
 * D_c hin (out and in unused) */
wd_coarse_args args_of(const wd_mg_dev_level *lv, float *out, const float *in)
{
    wd_coarse_args a = {};
    const bool half = lv->layout.precision == 2;
    a.out = half ? lv->hout : out;
    a.out_norm = half ? lv->hout_norm : NULL;
    a.in = half ? lv->hin : in;
    a.in_norm = half ? lv->hin_norm : NULL;
    a.links = lv->links;
    a.link_norm = lv->link_norm;
    a.nbr = lv->nbr;
    a.volume = lv->layout.volume;
    return a;
}

wd_status cuda_apply_half(const wd_mg_dev_level *lv)
{
    if (lv->layout.precision != 2)
        return wd_fail(WD_ERR_INVALID, "multigrid: apply_half on a level of precision %d",
                       lv->layout.precision);
    const wd_coarse_args a = args_of(lv, NULL, NULL);
    return wd_coarse_apply_cuda(&lv->layout, 0, 0, &a, lv->block, stream_of());
}

/* Block sizes of TUNE_STEP to 1024 threads (each kernel rounds to whole
 * sites and to 48 KB of shared memory), each timed over TUNE_REPS
 * launches after an untimed one.  The kernel's default (256 threads) is
 * one of them: on 1728 sites (24^3x64's hops) the tuned sizes were no
 * faster than it (run25, nvidia-h100-x1), but a lattice the default fits
 * badly gets the best of 16 for 96 launches at setup. */
enum { TUNE_STEP = 64, TUNE_REPS = 5 };

wd_status cuda_tune(wd_mg_dev_level *lv, float *out, const float *in)
{
    const wd_coarse_args a = args_of(lv, out, in);
    cudaStream_t s = stream_of();
    cudaEvent_t ev[2] = {NULL, NULL};
    cudaError_t e = cudaEventCreate(&ev[0]);
    if (e == cudaSuccess)
        e = cudaEventCreate(&ev[1]);
    wd_status st = e == cudaSuccess ? WD_OK
                                    : wd_fail(WD_ERR_CUDA, "multigrid tune: cudaEventCreate: %s",
                                              cudaGetErrorString(e));
    int best = 0;
    float best_ms = 0;
    for (int want = TUNE_STEP; st == WD_OK && want <= 1024; want += TUNE_STEP) {
        st = wd_coarse_apply_cuda(&lv->layout, 0, 0, &a, want, s);
        if (st == WD_OK && (e = cudaEventRecord(ev[0], s)) != cudaSuccess)
            st = wd_fail(WD_ERR_CUDA, "multigrid tune: cudaEventRecord: %s", cudaGetErrorString(e));
        for (int r = 0; st == WD_OK && r < TUNE_REPS; ++r)
            st = wd_coarse_apply_cuda(&lv->layout, 0, 0, &a, want, s);
        float ms = 0;
        if (st == WD_OK && ((e = cudaEventRecord(ev[1], s)) != cudaSuccess ||
                            (e = cudaEventSynchronize(ev[1])) != cudaSuccess ||
                            (e = cudaEventElapsedTime(&ms, ev[0], ev[1])) != cudaSuccess))
            st = wd_fail(WD_ERR_CUDA, "multigrid tune: timing block %d: %s", want,
                         cudaGetErrorString(e));
        if (st == WD_OK && (!best || ms < best_ms))
            best = want, best_ms = ms;
    }
    for (int i = 0; i < 2; ++i)
        if (ev[i])
            cudaEventDestroy(ev[i]);
    if (st == WD_OK)
        lv->block = best;
    return st;
}

wd_status cuda_pack_half(int count, int n, const int *sites, const float *src, void *dst,
                         float *dst_norm)
{
    if (2 * n > 1024)
        return wd_fail(WD_ERR_INVALID, "multigrid: half coarse fields of %d components a site "
                       "(at most 512)", n);
    if (count < 1)
        return WD_OK;
    k_to_half<<<count, 2 * n, (2 * n + 1) * sizeof(float), stream_of()>>>(n, src, sites,
                                                                          (short *)dst, dst_norm);
    return launched("pack_half");
}

/* single links: the kernel on the single fields; half: in (its ghost
 * sites too: the kernel reads them across the faces) rounded into hin,
 * apply_half, hout widened into out */
wd_status cuda_apply(const wd_mg_dev_level *lv, float *out, const float *in)
{
    const int vol = lv->layout.volume, n = lv->layout.ncomp;
    cudaStream_t s = stream_of();
    if (lv->layout.precision != 2) {
        const wd_coarse_args a = args_of(lv, out, in);
        return wd_coarse_apply_cuda(&lv->layout, 0, 0, &a, lv->block, s);
    }
    wd_status st = cuda_pack_half(vol + lv->nghost, n, NULL, in, lv->hin, lv->hin_norm);
    if (st == WD_OK)
        st = cuda_apply_half(lv);
    if (st != WD_OK)
        return st;
    const size_t len = reals(vol, n);
    k_from_half<<<grid_for(len), THREADS, 0, s>>>(len, n, (const short *)lv->hout, lv->hout_norm,
                                                 out);
    return launched("from_half");
}

/* k_from_half on right-hand side blockIdx.y of a multi-field: its first
 * len reals (field reals, norm_field norms a right-hand side) */
__global__ void k_from_half_rhs(size_t len, size_t field, size_t norm_field, int n,
                                const short *h, const float *norm, float *x)
{
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    const size_t r = blockIdx.y;
    if (i < len)
        x[r * field + i] = wd_s2f(h[r * field + i]) *
                           (norm[r * norm_field + i / (2 * n)] * WD_HALF_INV_SCALE);
}

wd_status cuda_run(const wd_mg_dev_level *lv, int nrhs, const wd_coarse_args *a)
{
    return wd_coarse_apply_multi_cuda(&lv->layout, 0, 0, nrhs, a, lv->block, stream_of());
}

/* single links: the kernels on the single fields; half: in (every
 * right-hand side's ghost sites too) rounded into hmin, the half kernels
 * into hmout, widened into out (each right-hand side's volume sites), as
 * cuda_apply does one */
wd_status cuda_apply_multi(const wd_mg_dev_level *lv, int nrhs, float *out, const float *in)
{
    const int vol = lv->layout.volume, n = lv->layout.ncomp;
    const size_t sites = (size_t)vol + (size_t)lv->nghost, field = sites * 2 * (size_t)n;
    wd_status st = wd_mg_dev_apply_multi_check(lv, nrhs, 65535);
    if (st != WD_OK)
        return st;
    if (lv->layout.precision != 2)
        return wd_mg_dev_apply_multi_plan(lv, nrhs, out, NULL, in, NULL, cuda_run);
    st = cuda_pack_half((int)(nrhs * sites), n, NULL, in, lv->hmin, lv->hmin_norm);
    if (st == WD_OK)
        st = wd_mg_dev_apply_multi_plan(lv, nrhs, lv->hmout, lv->hmout_norm, lv->hmin,
                                        lv->hmin_norm, cuda_run);
    if (st != WD_OK)
        return st;
    const size_t len = reals(vol, n);
    const dim3 grid(grid_for(len), (unsigned)nrhs);
    k_from_half_rhs<<<grid, THREADS, 0, stream_of()>>>(len, field, sites, n,
                                                       (const short *)lv->hmout, lv->hmout_norm,
                                                       out);
    return launched("from_half");
}

__global__ void k_move_half(size_t len, int n, const int *sites, const short *src,
                            const float *src_norm, short *dst, float *dst_norm)
{
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= len)
        return;
    const size_t site = i / (2 * n), s = sites ? (size_t)sites[site] : site, r = i % (2 * n);
    dst[s * 2 * n + r] = src[i];
    if (r == 0)
        dst_norm[s] = src_norm[site];
}

wd_status cuda_move_half(int count, int n, const int *sites, const void *src,
                         const float *src_norm, void *dst, float *dst_norm)
{
    const size_t len = (size_t)count * 2 * n;
    if (!len)
        return WD_OK;
    k_move_half<<<grid_for(len), THREADS, 0, stream_of()>>>(len, n, sites, (const short *)src,
                                                            src_norm, (short *)dst, dst_norm);
    return launched("move_half");
}

__global__ void k_xmy_half(size_t len, int n, const float *x, const short *h, const float *norm,
                           float *y)
{
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < len)
        y[i] = x[i] - wd_s2f(h[i]) * (norm[i / (2 * n)] * WD_HALF_INV_SCALE);
}

wd_status cuda_xmy_half(int count, int n, const float *x, const void *h, const float *norm,
                        float *y)
{
    const size_t len = (size_t)count * 2 * n;
    if (!len)
        return WD_OK;
    k_xmy_half<<<grid_for(len), THREADS, 0, stream_of()>>>(len, n, x, (const short *)h, norm, y);
    return launched("xmy_half");
}

wd_status cuda_scatter(int count, int floats, const int *sites, const float *in, float *out)
{
    const size_t len = (size_t)count * floats;
    if (!len)
        return WD_OK;
    k_scatter<<<grid_for(len), THREADS, 0, stream_of()>>>(len, floats, sites, in, out);
    return launched("scatter");
}

/* a thread a row (s, i): the block's column j is contiguous in i */
__global__ void k_block_apply(size_t rows, int n, const float2 *b, const float *in, float *out)
{
    const size_t r = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    const size_t s = r / n;
    const int i = (int)(r % n);
    const float *x = in + s * 2 * n;
    const float2 *m = b + s * n * n + i;
    float re = 0.0f, im = 0.0f;
    for (int j = 0; j < n; ++j) {
        const float2 w = m[(size_t)j * n];
        re += w.x * x[j] - w.y * x[n + j];
        im += w.x * x[n + j] + w.y * x[j];
    }
    out[s * 2 * n + i] = re;
    out[s * 2 * n + n + i] = im;
}

wd_status cuda_block_apply(int volume, int n, const float *b, const float *in, float *out)
{
    const size_t rows = (size_t)volume * n;
    k_block_apply<<<grid_for(rows), THREADS, 0, stream_of()>>>(rows, n, (const float2 *)b, in,
                                                               out);
    return launched("block_apply");
}

wd_status cuda_gather(int count, int floats, const int *sites, const float *in, float *out)
{
    const size_t len = (size_t)count * floats;
    if (!len)
        return WD_OK;
    k_gather<<<grid_for(len), THREADS, 0, stream_of()>>>(len, floats, sites, in, out);
    return launched("gather");
}

wd_status cuda_copy(int volume, int n, float *y, const float *x)
{
    if (y == x)
        return WD_OK;
    const cudaError_t e = cudaMemcpyAsync(y, x, reals(volume, n) * sizeof *y,
                                          cudaMemcpyDeviceToDevice, stream_of());
    return e == cudaSuccess ? WD_OK
                            : wd_fail(WD_ERR_CUDA, "multigrid copy: cudaMemcpyAsync: %s",
                                      cudaGetErrorString(e));
}

wd_status cuda_scale(int volume, int n, float a, float *x)
{
    const size_t len = reals(volume, n);
    k_scale<<<grid_for(len), THREADS, 0, stream_of()>>>(len, a, x);
    return launched("scale");
}

wd_status cuda_g5(int volume, int n, float *x)
{
    const size_t count = (size_t)volume * n;
    k_g5<<<grid_for(count), THREADS, 0, stream_of()>>>(count, n, x);
    return launched("g5");
}

wd_status cuda_xmy(int volume, int n, const float *x, float *y)
{
    const size_t len = reals(volume, n);
    k_xmy<<<grid_for(len), THREADS, 0, stream_of()>>>(len, x, y);
    return launched("xmy");
}

wd_status multi_of(int k, const float *const *x, multi *m, const char *what)
{
    if (k < 1 || k > WD_MG_DEV_MULTI)
        return wd_fail(WD_ERR_INTERNAL, "multigrid %s of %d fields (1 to %d)", what, k,
                       WD_MG_DEV_MULTI);
    *m = multi{};
    m->k = k;
    for (int i = 0; i < k; ++i)
        m->x[i] = x[i];
    return WD_OK;
}

wd_status cuda_multi_caxpy(int volume, int n, int k, const wd_complex *a, const float *const *x,
                           float *y)
{
    multi m;
    wd_status st = multi_of(k, x, &m, "multi_caxpy");
    if (st != WD_OK)
        return st;
    for (int i = 0; i < k; ++i)
        m.a[i] = make_float2((float)a[i].re, (float)a[i].im);
    const size_t count = (size_t)volume * n;
    k_multi_caxpy<<<grid_for(count), THREADS, 0, stream_of()>>>(count, n, m, y);
    return launched("multi_caxpy");
}

wd_status cuda_lanes_caxpy(int volume, int n, int lanes, size_t stride, int k,
                           const wd_complex *a, const float *const *x, float *y)
{
    wd_status st = wd_mg_dev_lanes_check("lanes_caxpy", volume, n, lanes, stride, k);
    if (st != WD_OK)
        return st;
    lanes_multi m = {};
    m.k = k;
    m.stride = stride;
    for (int i = 0; i < k; ++i)
        m.x[i] = x[i];
    /* the coefficients rounded as multi_caxpy rounds them; a lane of zeros
     * is left out of the grid, its y untouched even where its x holds NaN
     * or its y -0 */
    unsigned live = 0;
    for (int r = 0; r < lanes; ++r) {
        bool any = false;
        for (int i = 0; i < k; ++i) {
            const float2 c = make_float2((float)a[r * k + i].re, (float)a[r * k + i].im);
            m.a[r * k + i] = c;
            any = any || c.x != 0 || c.y != 0;
        }
        if (any)
            m.live[live++] = (unsigned char)r;
    }
    if (!live)
        return WD_OK;
    const size_t count = (size_t)volume * n;
    k_lanes_caxpy<<<dim3(grid_for(count), live), THREADS, 0, stream_of()>>>(count, n, m, y);
    return launched("lanes_caxpy");
}

/* the partials' device and pinned host buffers, made once a process for
 * the most lanes and fields */
double *part_dev, *part_host;

/* res[r 2k + 2i + {0, 1}] = <x[i]_r, y_r> for r < lanes (multi_cdot: one
 * lane, stride 0): the blocks of multi_cdot's grid on each lane in one
 * launch, one read-back, each lane's partials summed in block order */
wd_status reduce_cdot(const char *what, int volume, int n, int lanes, size_t stride,
                     const multi &m, const float *y, double *res)
{
    wd_status st;
    const size_t bytes =
        (size_t)WD_MG_DEV_LANES * RED_BLOCKS * 2 * WD_MG_DEV_MULTI * sizeof(double);
    if (!part_dev && (st = wd_cuda_malloc((void **)&part_dev, bytes, "the reductions' partials")) !=
                         WD_OK)
        return st;
    if (!part_host) {
        const cudaError_t e = cudaMallocHost((void **)&part_host, bytes);
        if (e != cudaSuccess) {
            part_host = NULL;
            return wd_fail(WD_ERR_CUDA, "multigrid: cudaMallocHost of the reductions' %zu bytes "
                           "of partials: %s", bytes, cudaGetErrorString(e));
        }
    }
    const int k = m.k;
    const size_t count = (size_t)volume * n;
    size_t blocks = (count + RED_THREADS - 1) / RED_THREADS;
    if (blocks > RED_BLOCKS)
        blocks = RED_BLOCKS;
    cudaStream_t s = stream_of();
    cdot_launchers[k - 1]((unsigned)blocks, (unsigned)lanes, s, count, n, m, y, stride, part_dev);
    if ((st = launched(what)) != WD_OK)
        return st;
    cudaError_t e = cudaMemcpyAsync(part_host, part_dev, lanes * blocks * 2 * k * sizeof(double),
                                    cudaMemcpyDeviceToHost, s);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(s);
    if (e != cudaSuccess)
        return wd_fail(WD_ERR_CUDA, "multigrid %s read-back: %s", what, cudaGetErrorString(e));
    for (int r = 0; r < lanes; ++r) {
        const double *p = part_host + (size_t)r * blocks * 2 * k;
        for (int i = 0; i < 2 * k; ++i) {
            double sum = 0;
            for (size_t b = 0; b < blocks; ++b)
                sum += p[b * 2 * k + i];
            res[(size_t)r * 2 * k + i] = sum;
        }
    }
    return WD_OK;
}

wd_status cuda_multi_cdot(int volume, int n, int k, const float *const *x, const float *y,
                          double *res)
{
    multi m;
    wd_status st = multi_of(k, x, &m, "multi_cdot");
    return st == WD_OK ? reduce_cdot("multi_cdot", volume, n, 1, 0, m, y, res) : st;
}

wd_status cuda_lanes_cdot(int volume, int n, int lanes, size_t stride, int k,
                          const float *const *x, const float *y, double *res)
{
    multi m;
    wd_status st = wd_mg_dev_lanes_check("lanes_cdot", volume, n, lanes, stride, k);
    if (st == WD_OK)
        st = multi_of(k, x, &m, "lanes_cdot");
    return st == WD_OK ? reduce_cdot("lanes_cdot", volume, n, lanes, stride, m, y, res) : st;
}

wd_status cuda_cdot_norm2(int volume, int n, const float *x, const float *y, double res[3])
{
    const float *xs[1] = {x};
    double xx[2];
    wd_status st = cuda_multi_cdot(volume, n, 1, xs, y, res);
    if (st == WD_OK && (st = cuda_multi_cdot(volume, n, 1, xs, x, xx)) == WD_OK)
        res[2] = xx[0];
    return st;
}

wd_status cuda_caxpy_norm2(int volume, int n, wd_complex a, const float *x, float *y,
                           double *norm2)
{
    const float *xs[1] = {x}, *ys[1] = {y};
    double r[2];
    wd_status st = cuda_multi_caxpy(volume, n, 1, &a, xs, y);
    if (st == WD_OK && (st = cuda_multi_cdot(volume, n, 1, ys, y, r)) == WD_OK)
        *norm2 = r[0];
    return st;
}

wd_status cuda_restrict(const wd_mg_dev_transfer *t, float *coarse, const void *fine)
{
    if (wd_mg_dev_transfer_check(t) != WD_OK)
        return WD_ERR_INVALID;
    /* slices of an aggregate's sites: about RESTRICT_THREADS threads a
     * block, no more slices than sites */
    int slices = RESTRICT_THREADS / t->nvec;
    slices = slices < 1 ? 1 : slices > t->block_volume ? t->block_volume : slices;
    const bool half = t->v_precision == 2;
    auto kernel = t->fine_host ? (half ? k_restrict<true, true> : k_restrict<true, false>)
                               : (half ? k_restrict<false, true> : k_restrict<false, false>);
    kernel<<<t->coarse_volume, slices * t->nvec, slices * 2 * t->nvec * sizeof(float2),
             stream_of()>>>(*t, coarse, fine);
    return launched("restrict");
}

wd_status cuda_prolong(const wd_mg_dev_transfer *t, void *fine, const float *coarse)
{
    if (wd_mg_dev_transfer_check(t) != WD_OK)
        return WD_ERR_INVALID;
    const size_t count = (size_t)t->fine_volume * t->n_fine;
    const bool half = t->v_precision == 2;
    auto kernel = t->fine_host ? (half ? k_prolong<true, true> : k_prolong<true, false>)
                               : (half ? k_prolong<false, true> : k_prolong<false, false>);
    kernel<<<grid_for(count), THREADS, 0, stream_of()>>>(*t, fine, coarse);
    return launched("prolong");
}

const wd_mg_dev_ops ops = {
    "cuda",          cuda_alloc,      cuda_free,        cuda_h2d,        cuda_d2h,
    cuda_apply,      cuda_zero,       cuda_copy,        cuda_scale,      cuda_xmy,
    cuda_multi_caxpy, cuda_multi_cdot, cuda_cdot_norm2, cuda_caxpy_norm2, cuda_gather,
    cuda_restrict,   cuda_prolong,    cuda_scatter,     cuda_block_apply, cuda_apply_half,
    cuda_pack_half,  cuda_move_half,  cuda_xmy_half,   cuda_tune,       cuda_apply_multi,
    cuda_lanes_cdot, cuda_lanes_caxpy, cuda_g5,
};

} // namespace

extern "C" const wd_mg_dev_ops *wd_mg_dev_cuda_ops(void)
{
    return &ops;
}
