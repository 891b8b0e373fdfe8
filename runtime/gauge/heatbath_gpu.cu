/*
 * heatbath_gpu.cu: the quenched heatbath and overrelaxation on the GPU.
 *
 * The externally accessible functions are (wdirac_gauge.h)
 *   wd_gauge_gpu_open    copy a host gauge field to the GPU (one per process)
 *   wd_gauge_gpu_sweep   one compound sweep there, timed with CUDA events
 *   wd_gauge_gpu_fetch   copy the field back into a host array
 *   wd_gauge_gpu_close   free it
 *
 * The update is the CPU's (heatbath.c) link for link: the same per-link
 * functions of heatbath_link.h, the same (mu, parity) checkerboard order,
 * one thread per link of the checkerboard, the same Philox counters, so a
 * run is reproducible from its seed on either backend (the fields differ in
 * the last bits only where nvcc fuses a multiply-add that gcc does not).
 * The field stays in the host order of DESIGN.md ([site][mu][3][3]
 * complex double), so fetch is a plain copy.
 */
#include <cuda_runtime.h>

#include "cuda_rt.h"
#include "heatbath_link.h"
#include "wdirac_gauge.h"
#include "wd_core.h"

#define HB_BLOCK 128

struct lat4 {
    int L[4];
    long stride[4];
    long volume;
};

__device__ __forceinline__ long fwd(const lat4 &l, long site, const int x[4], int mu)
{
    return x[mu] + 1 < l.L[mu] ? site + l.stride[mu] : site - (long)(l.L[mu] - 1) * l.stride[mu];
}

__device__ __forceinline__ long bwd(const lat4 &l, long site, const int x[4], int mu)
{
    return x[mu] > 0 ? site - l.stride[mu] : site + (long)(l.L[mu] - 1) * l.stride[mu];
}

__global__ void __launch_bounds__(HB_BLOCK) update_kernel(double *u, lat4 l, int mu, int parity,
                                                          int heatbath, double beta, uint32_t k0,
                                                          uint32_t k1, uint64_t sweep, int *failed)
{
    const long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= l.volume / 2)
        return;
    const int xh = l.L[0] / 2;
    const long row = i / xh;
    int x[4];
    x[1] = (int)(row % l.L[1]);
    x[2] = (int)((row / l.L[1]) % l.L[2]);
    x[3] = (int)(row / ((long)l.L[1] * l.L[2]));
    x[0] = 2 * (int)(i % xh) + ((parity + x[1] + x[2] + x[3]) & 1);
    const long site = row * l.L[0] + x[0];
    const long xpmu = fwd(l, site, x, mu);
    double a[18];
    for (int k = 0; k < 18; ++k)
        a[k] = 0;
    for (int nu = 0; nu < 4; ++nu) {
        if (nu == mu)
            continue;
        const long xpnu = fwd(l, site, x, nu), xmnu = bwd(l, site, x, nu);
        const long xpmu_mnu = bwd(l, xpmu, x, nu);
        wd_hb_staple_add(a, u + 18 * (4 * xpmu + nu), u + 18 * (4 * xpnu + mu),
                         u + 18 * (4 * site + nu), u + 18 * (4 * xpmu_mnu + nu),
                         u + 18 * (4 * xmnu + mu), u + 18 * (4 * xmnu + nu));
    }
    double *m = u + 18 * (4 * site + mu);
    double v[18];
    for (int k = 0; k < 18; ++k)
        v[k] = m[k];
    if (heatbath) {
        uint32_t ctr[4];
        const uint32_t key[2] = {k0, k1};
        wd_hb_ctr(ctr, (uint32_t)site, mu, 0, 0, sweep);
        const int f = wd_hb_heatbath_link(v, a, beta, key, ctr);
        if (f)
            atomicAdd(failed, f);
    } else {
        wd_hb_overrelax_link(v, a);
    }
    for (int k = 0; k < 18; ++k)
        m[k] = v[k];
}

__global__ void reunitarize_kernel(double *u, long nlinks)
{
    const long l = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (l < nlinks)
        wd_su3_reunitarize(u + 18 * l);
}

static double *field_;
static int *failed_;
static lat4 lat_;

#define CHECK(call)                                                                        \
    do {                                                                                   \
        cudaError_t e_ = (call);                                                           \
        if (e_ != cudaSuccess)                                                             \
            return wd_fail(WD_ERR_CUDA, "GPU heatbath: %s failed: %s", #call,              \
                           cudaGetErrorString(e_));                                        \
    } while (0)

extern "C" wd_status wd_gauge_gpu_open(const double *u, const int dims[4])
{
    wd_status st = wd_check_dims(dims);
    if (st != WD_OK)
        return st;
    wd_gauge_gpu_close();
    long s = 1;
    for (int mu = 0; mu < 4; ++mu) {
        lat_.L[mu] = dims[mu];
        lat_.stride[mu] = s;
        s *= dims[mu];
    }
    lat_.volume = s;
    const size_t bytes = (size_t)s * 4 * 18 * sizeof(double);
    if ((st = wd_cuda_malloc((void **)&field_, bytes, "the gauge field (heatbath)")) != WD_OK ||
        (st = wd_cuda_malloc((void **)&failed_, sizeof(int), "the heatbath counter")) != WD_OK ||
        (st = wd_cuda_h2d(field_, u, bytes)) != WD_OK) {
        wd_gauge_gpu_close();
        return st;
    }
    return WD_OK;
}

extern "C" wd_status wd_gauge_gpu_sweep(double beta, uint64_t seed, uint64_t sweep_index, int n_or,
                                        double *ms)
{
    if (!field_)
        return wd_fail(WD_ERR_INVALID, "wd_gauge_gpu_sweep: no field on the GPU (wd_gauge_gpu_open)");
    if (!(beta > 0) || n_or < 0 || (sweep_index >> 63))
        return wd_fail(WD_ERR_INVALID, "wd_gauge_gpu_sweep: beta %g must be > 0, n_or %d >= 0, "
                       "sweep index < 2^63", beta, n_or);
    cudaStream_t s = (cudaStream_t)wd_cuda_stream();
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    CHECK(cudaMemsetAsync(failed_, 0, sizeof(int), s));
    const uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    const int grid = (int)((lat_.volume / 2 + HB_BLOCK - 1) / HB_BLOCK);
    CHECK(cudaEventRecord(e0, s));
    for (int pass = 0; pass <= n_or; ++pass)
        for (int mu = 0; mu < 4; ++mu)
            for (int parity = 0; parity < 2; ++parity) {
                update_kernel<<<grid, HB_BLOCK, 0, s>>>(field_, lat_, mu, parity, pass == 0, beta,
                                                        k0, k1, sweep_index, failed_);
                CHECK(cudaGetLastError());
            }
    const long nlinks = 4 * lat_.volume;
    reunitarize_kernel<<<(int)((nlinks + 255) / 256), 256, 0, s>>>(field_, nlinks);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(e1, s));
    CHECK(cudaEventSynchronize(e1));
    float t = 0;
    CHECK(cudaEventElapsedTime(&t, e0, e1));
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    if (ms)
        *ms = t;
    int failed = 0;
    CHECK(cudaMemcpy(&failed, failed_, sizeof(int), cudaMemcpyDeviceToHost));
    if (failed)
        return wd_fail(WD_ERR_INTERNAL, "GPU heatbath: the SU(2) sampler gave up %d times in sweep "
                       "%llu; those subgroup updates were skipped", failed,
                       (unsigned long long)sweep_index);
    return WD_OK;
}

extern "C" wd_status wd_gauge_gpu_fetch(double *u)
{
    if (!field_)
        return wd_fail(WD_ERR_INVALID, "wd_gauge_gpu_fetch: no field on the GPU");
    return wd_cuda_d2h(u, field_, (size_t)lat_.volume * 4 * 18 * sizeof(double));
}

extern "C" void wd_gauge_gpu_close(void)
{
    wd_cuda_free(field_);
    wd_cuda_free(failed_);
    field_ = NULL;
    failed_ = NULL;
}
