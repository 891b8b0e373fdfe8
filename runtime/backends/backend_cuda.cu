/*
 * backend_cuda.cu: the device half of the CUDA solver backend: field
 * memory, the Dslash through the tuned generated kernels, and the BLAS of
 * wd_backend.h as CUDA kernels for every precision.
 *
 * The externally accessible functions are the wd_cuda_be_* entries that
 * backend_cuda_host.c puts into the wd_backend_ops table (one per table
 * entry, same meaning; wd_backend.h documents each operation).
 *
 * BLAS kernels: one thread per site over a grid of fixed size (a function of
 * the volume alone), each thread loading its operands' 24 reals into
 * registers (double for double fields, float for single and half; half
 * loads short * norm / 32767 and stores with a fresh per-site norm, as the
 * Dslash kernels do), operating, storing; one launch runs an operation on
 * many lock-step lanes (wd_blas_lanes, lane = blockIdx.y), a one-lane
 * operation being the case of one.  Reductions accumulate products in
 * double per thread, then a fixed tree per block (warp shuffles, then the
 * warps in order), then the last block to finish sums the block results
 * in block order (no second kernel): the same bits on every run on the
 * same device.  Fused reductions reduce the values before they are
 * stored, as the CPU backend does.  Every launch is checked; the first
 * failure is recorded in be->error and later operations become no-ops.
 * On a process grid each reduction's per-rank result is summed over the
 * ranks in rank order (wd_backend_allsum), on every rank whatever its own
 * state, so that the ranks stay in step.
 *
 * Halos (a process grid): wd_cuda_be_grid_open makes the NCCL communicator,
 * the face index tables and the exchange's own stream; the exchange is one
 * gather launch (every face of the input's parity, both directions of
 * every partitioned dimension, into contiguous buffers, in the face order
 * and stored values of wd_face_gather: the index tables come from
 * wd_face_site), the NCCL exchange of every dimension in one group, into
 * receive slots of the same layout, where the kernels read the ghost sites
 * (wd_kernel.h, wd_ghost_src: nothing is scattered into the field's ghost
 * zone).  A multi-RHS call exchanges all its right-hand sides at once: the
 * same gather over every right-hand side (blockIdx.z) and one message each
 * way per dimension holding their faces back to back.
 * wd_cuda_be_dslash_grid runs it on the exchange's stream while the main
 * stream computes the interior sites, then the boundary on the exchange's
 * stream: the first and the last time slice (one launch over their list),
 * where T alone is partitioned; where X, Y or Z is, the interior and the
 * boundary parts of a list of the output sites (wd_site_order, the generated
 * kernels' a.sites).  With the overlap off, or no interior (an extent of
 * 2), it runs before the whole kernel on the main stream.  Between the
 * GPUs of one node the faces go peer to peer where they can (halo_p2p.h;
 * written into the neighbour's receive buffer by the copy engine, or by
 * the gather kernel; the copy engine takes T's faces, one run of indices,
 * and on AUTO's copy-zt route Z's, a run an XY plane, straight from the
 * field), NCCL elsewhere (MPI through
 * pinned host memory, halo_staged, in a build without NCCL or with
 * WD_HALO_MPI).
 */
#define WD_PHYSICS_HOST_TABLES /* wd_physics.h's basis change, copied to c_basis; the
                                * precision layouts' tokens */
#include <algorithm>
#include <chrono>
#include <cuda_runtime.h>
#include <math.h>
#include <vector>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_rt.h"
#include "halo_p2p.h"
#include "wd_backend.h"
#include "wd_core.h"
#include "wd_kernel.h"
#include "wd_operator.h"
#include "wd_operator_cuda.h"
#include "wd_physics.h"
#include "wd_tune.h"

#define NR 24
#define BLAS_BLOCK 256
#define BLAS_MAX_GRID 1056

template <int P> struct Prec;
template <> struct Prec<8> {
    typedef double real;
    typedef double2 vec;
    enum { W = 2, HALF = 0 };
};
template <> struct Prec<4> {
    typedef float real;
    typedef float4 vec;
    enum { W = 4, HALF = 0 };
};
template <> struct Prec<2> {
    typedef float real;
    typedef short4 vec;
    enum { W = 4, HALF = 1 };
};

__device__ __forceinline__ void unpack(const double2 &v, double *r) { r[0] = v.x, r[1] = v.y; }
__device__ __forceinline__ void unpack(const float4 &v, float *r)
{
    r[0] = v.x, r[1] = v.y, r[2] = v.z, r[3] = v.w;
}
__device__ __forceinline__ void unpack(const short4 &v, float *r)
{
    r[0] = wd_s2f(v.x), r[1] = wd_s2f(v.y), r[2] = wd_s2f(v.z), r[3] = wd_s2f(v.w);
}
__device__ __forceinline__ double2 pack2(const double *r) { return make_double2(r[0], r[1]); }
__device__ __forceinline__ float4 pack4(const float *r) { return make_float4(r[0], r[1], r[2], r[3]); }

template <int P>
__device__ __forceinline__ void load(const wd_field &f, int cb, typename Prec<P>::real *v)
{
    typedef typename Prec<P>::vec V;
    const V *p = (const V *)f.data;
#pragma unroll
    for (int e = 0; e < NR / Prec<P>::W; ++e)
        unpack(p[(size_t)e * f.stride + cb], v + e * Prec<P>::W);
    if (Prec<P>::HALF) {
        const float sc = f.norm[cb] * WD_HALF_INV_SCALE;
#pragma unroll
        for (int r = 0; r < NR; ++r)
            v[r] *= sc;
    }
}

template <int P>
__device__ __forceinline__ void store(const wd_field &f, int cb, const typename Prec<P>::real *v);

template <> __device__ __forceinline__ void store<8>(const wd_field &f, int cb, const double *v)
{
    double2 *p = (double2 *)f.data;
#pragma unroll
    for (int e = 0; e < NR / 2; ++e)
        p[(size_t)e * f.stride + cb] = pack2(v + 2 * e);
}

template <> __device__ __forceinline__ void store<4>(const wd_field &f, int cb, const float *v)
{
    float4 *p = (float4 *)f.data;
#pragma unroll
    for (int e = 0; e < NR / 4; ++e)
        p[(size_t)e * f.stride + cb] = pack4(v + 4 * e);
}

template <> __device__ __forceinline__ void store<2>(const wd_field &f, int cb, const float *v)
{
    short4 *p = (short4 *)f.data;
    float nrm = 0;
    bool nan = false;
#pragma unroll
    for (int r = 0; r < NR; ++r) {
        nrm = fmaxf(nrm, fabsf(v[r]));
        nan |= isnan(v[r]);
    }
    if (nan || isinf(nrm)) {
        /* the NaN survives the 16-bit format in the norm */
#pragma unroll
        for (int e = 0; e < NR / 4; ++e)
            p[(size_t)e * f.stride + cb] = make_short4(0, 0, 0, 0);
        f.norm[cb] = nanf("");
        return;
    }
    const float sc = nrm > 0 ? (float)WD_HALF_SCALE / nrm : 0.0f;
#pragma unroll
    for (int e = 0; e < NR / 4; ++e)
        p[(size_t)e * f.stride + cb] =
            make_short4(wd_round_short(v[4 * e] * sc), wd_round_short(v[4 * e + 1] * sc),
                        wd_round_short(v[4 * e + 2] * sc), wd_round_short(v[4 * e + 3] * sc));
    f.norm[cb] = nrm;
}

/* ---- the operations, as functors over one site's reals ---------------- */
/* Flags: which operands are loaded (L*) and stored (S*), and how many
 * doubles the operation reduces (NRES). */

struct OpZero {
    enum { LX = 0, LY = 0, LZ = 0, SX = 0, SY = 1, SZ = 0, NRES = 0 };
    static __device__ OpZero make(wd_complex, wd_complex) { return OpZero(); }
    template <class R> __device__ void operator()(R *, R *y, R *, double *) const
    {
        for (int i = 0; i < NR; ++i) y[i] = 0;
    }
};
struct OpAx {
    double a;
    enum { LX = 1, LY = 0, LZ = 0, SX = 1, SY = 0, SZ = 0, NRES = 0 };
    static __device__ OpAx make(wd_complex a, wd_complex) { return OpAx{a.re}; }
    template <class R> __device__ void operator()(R *x, R *, R *, double *) const
    {
        for (int i = 0; i < NR; ++i) x[i] = (R)a * x[i];
    }
};
struct OpAxpy {
    double a;
    enum { LX = 1, LY = 1, LZ = 0, SX = 0, SY = 1, SZ = 0, NRES = 1 };
    static __device__ OpAxpy make(wd_complex a, wd_complex) { return OpAxpy{a.re}; }
    template <class R> __device__ void operator()(R *x, R *y, R *, double *acc) const
    {
        for (int i = 0; i < NR; ++i) {
            y[i] = (R)a * x[i] + y[i];
            acc[0] += (double)y[i] * (double)y[i];
        }
    }
};
struct OpXpay {
    double a;
    enum { LX = 1, LY = 1, LZ = 0, SX = 0, SY = 1, SZ = 0, NRES = 1 };
    static __device__ OpXpay make(wd_complex a, wd_complex) { return OpXpay{a.re}; }
    template <class R> __device__ void operator()(R *x, R *y, R *, double *acc) const
    {
        for (int i = 0; i < NR; ++i) {
            y[i] = x[i] + (R)a * y[i];
            acc[0] += (double)y[i] * (double)y[i];
        }
    }
};
struct OpAxpyZpbx {
    double a, b;
    enum { LX = 1, LY = 1, LZ = 1, SX = 1, SY = 1, SZ = 0, NRES = 0 };
    static __device__ OpAxpyZpbx make(wd_complex a, wd_complex b) { return OpAxpyZpbx{a.re, b.re}; }
    template <class R> __device__ void operator()(R *x, R *y, R *z, double *) const
    {
        for (int i = 0; i < NR; ++i) {
            y[i] = y[i] + (R)a * x[i];
            x[i] = z[i] + (R)b * x[i];
        }
    }
};
/* y = y + a x, complex a; reduces |y|^2 and <z, y> (z may be unused) */
struct OpCaxpy {
    double ar, ai;
    enum { LX = 1, LY = 1, LZ = 1, SX = 0, SY = 1, SZ = 0, NRES = 3 };
    static __device__ OpCaxpy make(wd_complex a, wd_complex) { return OpCaxpy{a.re, a.im}; }
    template <class R> __device__ void operator()(R *x, R *y, R *z, double *acc) const
    {
        for (int i = 0; i < NR; i += 2) {
            const R yr = y[i] + (R)ar * x[i] - (R)ai * x[i + 1];
            const R yi = y[i + 1] + (R)ar * x[i + 1] + (R)ai * x[i];
            y[i] = yr, y[i + 1] = yi;
            acc[0] += (double)yr * yr + (double)yi * yi;
            acc[1] += (double)z[i] * yr + (double)z[i + 1] * yi;
            acc[2] += (double)z[i] * yi - (double)z[i + 1] * yr;
        }
    }
};
/* z = z + a x + b y */
struct OpCaxpbypz {
    double ar, ai, br, bi;
    enum { LX = 1, LY = 1, LZ = 1, SX = 0, SY = 0, SZ = 1, NRES = 0 };
    static __device__ OpCaxpbypz make(wd_complex a, wd_complex b)
    {
        return OpCaxpbypz{a.re, a.im, b.re, b.im};
    }
    template <class R> __device__ void operator()(R *x, R *y, R *z, double *) const
    {
        for (int i = 0; i < NR; i += 2) {
            const R zr = z[i] + (R)ar * x[i] - (R)ai * x[i + 1] + (R)br * y[i] - (R)bi * y[i + 1];
            const R zi = z[i + 1] + (R)ar * x[i + 1] + (R)ai * x[i] + (R)br * y[i + 1] + (R)bi * y[i];
            z[i] = zr, z[i + 1] = zi;
        }
    }
};
/* z = x + a y + b z */
struct OpCxpaypbz {
    double ar, ai, br, bi;
    enum { LX = 1, LY = 1, LZ = 1, SX = 0, SY = 0, SZ = 1, NRES = 0 };
    static __device__ OpCxpaypbz make(wd_complex a, wd_complex b)
    {
        return OpCxpaypbz{a.re, a.im, b.re, b.im};
    }
    template <class R> __device__ void operator()(R *x, R *y, R *z, double *) const
    {
        for (int i = 0; i < NR; i += 2) {
            const R zr = x[i] + (R)ar * y[i] - (R)ai * y[i + 1] + (R)br * z[i] - (R)bi * z[i + 1];
            const R zi = x[i + 1] + (R)ar * y[i + 1] + (R)ai * y[i] + (R)br * z[i + 1] + (R)bi * z[i];
            z[i] = zr, z[i + 1] = zi;
        }
    }
};
/* {Re <x,y>, Im <x,y>, |x|^2} */
struct OpCdotNorm {
    enum { LX = 1, LY = 1, LZ = 0, SX = 0, SY = 0, SZ = 0, NRES = 3 };
    static __device__ OpCdotNorm make(wd_complex, wd_complex) { return OpCdotNorm(); }
    template <class R> __device__ void operator()(R *x, R *y, R *, double *acc) const
    {
        for (int i = 0; i < NR; i += 2) {
            acc[0] += (double)x[i] * y[i] + (double)x[i + 1] * y[i + 1];
            acc[1] += (double)x[i] * y[i + 1] - (double)x[i + 1] * y[i];
            acc[2] += (double)x[i] * x[i] + (double)x[i + 1] * x[i + 1];
        }
    }
};

/* ---- kernels ----------------------------------------------------------- */

/* Where a reduction's partial sums and result go: lane j's block partials
 * from partial + j * BLAS_MAX_GRID * 3, its count of finished blocks at
 * count[j] (zero between launches), its result at out[3 j ..] (mapped
 * pinned host memory) */
struct reduction {
    double *partial;
    unsigned *count;
    double *out;
};

/* the NRES values of every thread of the block (BLOCK threads) summed by a
 * fixed tree (warp shuffles, then the warps' sums in warp order) into
 * thread 0 */
template <int NRES, int BLOCK = BLAS_BLOCK> __device__ __forceinline__ void block_sum(double *acc)
{
    __shared__ double sh[NRES > 0 ? NRES : 1][BLOCK / 32];
#pragma unroll
    for (int k = 0; k < NRES; ++k)
        for (int o = 16; o > 0; o >>= 1)
            acc[k] += __shfl_down_sync(0xffffffffu, acc[k], o);
    if ((threadIdx.x & 31) == 0)
        for (int k = 0; k < NRES; ++k)
            sh[k][threadIdx.x >> 5] = acc[k];
    __syncthreads();
    if (threadIdx.x == 0)
        for (int k = 0; k < NRES; ++k) {
            double v = sh[k][0];
            for (int w = 1; w < BLOCK / 32; ++w)
                v += sh[k][w];
            acc[k] = v;
        }
}

/* lane j's nblocks partials summed in block order (strided over the
 * block's threads, then block_sum) into out[0..2] */
__device__ __forceinline__ void sum_partials(const double *partial, int nblocks, double *out)
{
    double acc[3] = {0, 0, 0};
    for (int b = threadIdx.x; b < nblocks; b += BLAS_BLOCK)
        for (int k = 0; k < 3; ++k)
            acc[k] += __ldcg(partial + b * 3 + k);
    block_sum<3>(acc);
    if (threadIdx.x == 0)
        for (int k = 0; k < 3; ++k)
            out[k] = acc[k];
}

/* The block's sums of acc into lane j's partials; the last block of the
 * lane to finish then sums all of them in block order into the result:
 * no second kernel, and the same bits whichever block finishes last */
template <int NRES>
__device__ void block_reduce(double *acc, const reduction &red, int j)
{
    __shared__ bool last;
    double *partial = red.partial + (size_t)j * BLAS_MAX_GRID * 3;
    block_sum<NRES>(acc);
    if (threadIdx.x == 0) {
        for (int k = 0; k < 3; ++k)
            partial[blockIdx.x * 3 + k] = k < NRES ? acc[k] : 0;
        __threadfence();
        last = atomicInc(red.count + j, gridDim.x - 1) == gridDim.x - 1;
    }
    __syncthreads();
    if (last)
        sum_partials(partial, gridDim.x, red.out + 3 * j);
}

/* The warp sums of a reducing Dslash kernel (wd_cuda_reduce_launchers:
 * three doubles for each warp of 32 sites) into red's lane 0: a thread a
 * warp over a grid of fixed size (grid_for(nwarps), as the BLAS's), then
 * block_reduce.  A fixed order: the same bits on every run, whatever block
 * size the Dslash ran with. */
__global__ void __launch_bounds__(BLAS_BLOCK) warp_sums_kernel(const double *partial, int nwarps,
                                                               reduction red)
{
    double acc[3] = {0, 0, 0};
    for (int w = blockIdx.x * blockDim.x + threadIdx.x; w < nwarps; w += gridDim.x * blockDim.x)
        for (int k = 0; k < 3; ++k)
            acc[k] += __ldcg(partial + 3 * w + k);
    block_reduce<3>(acc, red, 0);
}
/* the warps of 32 sites over n sites (the reducing kernels' sums) */
static inline int warps_of(int n) { return (n + 31) / 32; }

/* Lane blockIdx.y's right-hand side of f (lane 0's field) */
__device__ __forceinline__ wd_field lane_field(const wd_field &f, int q)
{
    wd_field v = f;
    if (f.data)
        v.data = (char *)f.data + (size_t)q * f.bytes;
    if (f.norm)
        v.norm = f.norm + (size_t)q * (f.norm_bytes / sizeof(float));
    return v;
}

/* One operation on every lane of l, lane blockIdx.y, a thread a site over
 * a grid of fixed size in x (a function of the volume alone), so each
 * lane's bits are what it gives alone; the block partials of lane j from
 * j * BLAS_MAX_GRID * 3.  A one-lane operation is the case of one lane.
 * RED: the reductions are wanted; without, a reducing functor's sums (and
 * the operands only they read: caxpy's z) are dead code and the kernel
 * ends without the block sums, the atomic and the last block's pass over
 * the partials (axpy, xpay, caxpy: every BiCGstab iteration's s = r -
 * alpha v).  The stored values are the same expressions either way. */
template <int P, class Op, bool RED>
__global__ void __launch_bounds__(BLAS_BLOCK) blas_lanes_kernel(wd_lanes l, wd_field x, wd_field y,
                                                                wd_field z, reduction red, int n)
{
    typedef typename Prec<P>::real R;
    const int j = blockIdx.y, q = l.idx[j];
    const Op op = Op::make(l.a[j], l.b[j]);
    const wd_field fx = lane_field(x, q), fy = lane_field(y, q), fz = lane_field(z, q);
    double acc[3] = {0, 0, 0};
    for (int cb = blockIdx.x * blockDim.x + threadIdx.x; cb < n; cb += gridDim.x * blockDim.x) {
        R vx[NR], vy[NR], vz[NR];
        if (Op::LX) load<P>(fx, cb, vx);
        if (Op::LY) load<P>(fy, cb, vy);
        if (Op::LZ) load<P>(fz, cb, vz);
        op(vx, vy, vz, acc);
        if (Op::SX) store<P>(fx, cb, vx);
        if (Op::SY) store<P>(fy, cb, vy);
        if (Op::SZ) store<P>(fz, cb, vz);
    }
    if (Op::NRES && RED)
        block_reduce<Op::NRES>(acc, red, j);
}

/* half into double exactly: the scale taken in double, as the CPU backend's
 * wd_blas_load and wd_unpack_spinor do */
__device__ __forceinline__ void load_exact(const wd_field &f, int cb, double *v)
{
    const short4 *p = (const short4 *)f.data;
    const double sc = f.norm[cb] / (double)WD_HALF_SCALE;
#pragma unroll
    for (int e = 0; e < NR / 4; ++e) {
        const short4 s = p[(size_t)e * f.stride + cb];
        v[4 * e] = sc * s.x, v[4 * e + 1] = sc * s.y, v[4 * e + 2] = sc * s.z, v[4 * e + 3] = sc * s.w;
    }
}

/* one site of y = x between precisions (half into double exactly) */
template <int PY, int PX>
__device__ __forceinline__ void convert_site(const wd_field &y, const wd_field &x, int cb)
{
    typename Prec<PY>::real vy[NR];
    if (PX == 2 && PY == 8) {
        double vx[NR];
        load_exact(x, cb, vx);
        for (int i = 0; i < NR; ++i)
            vy[i] = (typename Prec<PY>::real)vx[i];
    } else {
        typename Prec<PX>::real vx[NR];
        load<PX>(x, cb, vx);
        for (int i = 0; i < NR; ++i)
            vy[i] = (typename Prec<PY>::real)vx[i];
    }
    store<PY>(y, cb, vy);
}

/* one site of y = x within one precision: the stored values, as the plain
 * memory copy of a whole field gives them */
template <int P> __device__ __forceinline__ void copy_site(const wd_field &y, const wd_field &x, int cb)
{
    typedef typename Prec<P>::vec V;
#pragma unroll
    for (int e = 0; e < NR / Prec<P>::W; ++e)
        ((V *)y.data)[(size_t)e * y.stride + cb] = ((const V *)x.data)[(size_t)e * x.stride + cb];
    if (Prec<P>::HALF)
        y.norm[cb] = x.norm[cb];
}

/* between precisions; a copy within one precision is a plain memory copy */
template <int PY, int PX> __global__ void copy_kernel(wd_field y, wd_field x, int n)
{
    for (int cb = blockIdx.x * blockDim.x + threadIdx.x; cb < n; cb += gridDim.x * blockDim.x)
        convert_site<PY, PX>(y, x, cb);
}

/* one site as doubles, exactly, from any precision */
template <int P> __device__ __forceinline__ void load_double(const wd_field &f, int cb, double *v)
{
    if (P == 2) {
        load_exact(f, cb, v);
    } else {
        typename Prec<P>::real t[NR];
        load<P>(f, cb, t);
#pragma unroll
        for (int i = 0; i < NR; ++i)
            v[i] = t[i];
    }
}

/* one site of the partial solution accumulator: z = z + a x + b y in
 * double, x and y (vy: zero when absent) read exactly */
template <int PZ, int PX>
__device__ __forceinline__ void accumulate_site(const wd_field &fx, const wd_field &fy, int has_y,
                                                const wd_field &fz, int cb, double ar, double ai,
                                                double br, double bi)
{
    double vx[NR], vy[NR], vz[NR];
    load_double<PX>(fx, cb, vx);
    if (has_y)
        load_double<PX>(fy, cb, vy);
    else
        for (int i = 0; i < NR; ++i)
            vy[i] = 0;
    load_double<PZ>(fz, cb, vz);
    typename Prec<PZ>::real out[NR];
#pragma unroll
    for (int i = 0; i < NR; i += 2) {
        out[i] = vz[i] + ar * vx[i] - ai * vx[i + 1] + br * vy[i] - bi * vy[i + 1];
        out[i + 1] = vz[i + 1] + ar * vx[i + 1] + ai * vx[i] + br * vy[i + 1] + bi * vy[i];
    }
    store<PZ>(fz, cb, out);
}

/* the partial solution accumulator on every lane of l (lane blockIdx.y):
 * z = z + a x + b y in double, x and y of precision PX, z of PZ */
template <int PZ, int PX>
__global__ void __launch_bounds__(BLAS_BLOCK) accumulate_lanes_kernel(wd_lanes l, wd_field x,
                                                                      wd_field y, int has_y,
                                                                      wd_field z, int n)
{
    const int j = blockIdx.y, q = l.idx[j];
    const wd_field fx = lane_field(x, q), fy = lane_field(y, q), fz = lane_field(z, q);
    for (int cb = blockIdx.x * blockDim.x + threadIdx.x; cb < n; cb += gridDim.x * blockDim.x)
        accumulate_site<PZ, PX>(fx, fy, has_y, fz, cb, l.a[j].re, l.a[j].im, l.b[j].re,
                                l.b[j].im);
}

/* CG's step into an accumulator of another precision on every lane of l
 * (WD_LANE_ACCUMULATE_XPAY): z = z + a x as accumulate_lanes_kernel
 * without y, then x = y + b x as OpXpay, in one pass */
template <int PZ, int P>
__global__ void __launch_bounds__(BLAS_BLOCK) accumulate_xpay_lanes_kernel(wd_lanes l, wd_field x,
                                                                           wd_field y, wd_field z,
                                                                           int n)
{
    typedef typename Prec<P>::real R;
    const int j = blockIdx.y, q = l.idx[j];
    const OpXpay op = OpXpay::make(l.b[j], l.b[j]);
    const wd_field fx = lane_field(x, q), fy = lane_field(y, q), fz = lane_field(z, q);
    for (int cb = blockIdx.x * blockDim.x + threadIdx.x; cb < n; cb += gridDim.x * blockDim.x) {
        R vx[NR], vy[NR];
        double acc[1] = {0};
        load<P>(fx, cb, vx);
        load<P>(fy, cb, vy);
        accumulate_site<PZ, P>(fx, fx, 0, fz, cb, l.a[j].re, l.a[j].im, 0, 0);
        op(vy, vx, (R *)NULL, acc);
        store<P>(fx, cb, vx);
    }
}

/* BiCGstab's update on every lane of l (WD_LANE_BICGSTAB_UPDATE): z = z +
 * a x + b y as OpCaxpbypz (z of the fields' precision P) or as
 * accumulate_site (z of another precision PZ: the accumulator in the outer
 * precision), then y = y - b w with |y|^2 and <u, y> as OpCaxpy, in one
 * pass (x = p, y = s -> r, z = the accumulator, w = t, u = r0) */
template <int PZ, int P>
__global__ void __launch_bounds__(BLAS_BLOCK) bicgstab_update_lanes_kernel(
    wd_lanes l, wd_field x, wd_field y, wd_field z, wd_field w, wd_field u, reduction red, int n)
{
    typedef typename Prec<P>::real R;
    const int j = blockIdx.y, q = l.idx[j];
    const wd_complex mb = {-l.b[j].re, -l.b[j].im};
    const OpCaxpbypz upd = OpCaxpbypz::make(l.a[j], l.b[j]);
    const OpCaxpy res = OpCaxpy::make(mb, mb);
    const wd_field fx = lane_field(x, q), fy = lane_field(y, q), fz = lane_field(z, q);
    const wd_field fw = lane_field(w, q), fu = lane_field(u, q);
    double acc[3] = {0, 0, 0};
    for (int cb = blockIdx.x * blockDim.x + threadIdx.x; cb < n; cb += gridDim.x * blockDim.x) {
        R vx[NR], vy[NR], vz[NR];
        if (PZ == P) {
            load<P>(fx, cb, vx);
            load<P>(fy, cb, vy);
            load<P>(fz, cb, vz);
            upd(vx, vy, vz, NULL);
            store<P>(fz, cb, vz);
        } else {
            accumulate_site<PZ, P>(fx, fy, 1, fz, cb, l.a[j].re, l.a[j].im, l.b[j].re,
                                   l.b[j].im);
            load<P>(fy, cb, vy);
        }
        load<P>(fw, cb, vx);
        load<P>(fu, cb, vz);
        res(vx, vy, vz, acc);
        store<P>(fy, cb, vy);
    }
    block_reduce<3>(acc, red, j);
}

/* A true residual and its copy on every lane of l (WD_LANE_XPAY_NORM2_COPY,
 * XPAY 1: y = x + a y as OpXpay, |y|^2 in slot 0; WD_LANE_NORM2_COPY, XPAY
 * 0: |y|^2 as the norm2 entry sums it, OpCdotNorm of y with itself, in slot
 * 2), then z = y (copy: the stored site read back and converted as
 * copy_kernel converts it, or within one precision copied as stored), in
 * one pass */
template <int PY, int PZ, int XPAY>
__global__ void __launch_bounds__(BLAS_BLOCK) residual_copy_lanes_kernel(
    wd_lanes l, wd_field x, wd_field y, wd_field z, int copy, reduction red, int n)
{
    typedef typename Prec<PY>::real R;
    const int j = blockIdx.y, q = l.idx[j];
    const OpXpay op = OpXpay::make(l.a[j], l.a[j]);
    const wd_field fx = lane_field(x, q), fy = lane_field(y, q), fz = lane_field(z, q);
    double acc[3] = {0, 0, 0};
    for (int cb = blockIdx.x * blockDim.x + threadIdx.x; cb < n; cb += gridDim.x * blockDim.x) {
        R vx[NR], vy[NR];
        if (XPAY) {
            load<PY>(fx, cb, vx);
            load<PY>(fy, cb, vy);
            op(vx, vy, (R *)NULL, acc);
            store<PY>(fy, cb, vy);
        } else {
            load<PY>(fy, cb, vy);
            OpCdotNorm()(vy, vy, (R *)NULL, acc);
        }
        if (copy) {
            if (PZ == PY)
                copy_site<PY>(fz, fy, cb);
            else
                convert_site<PZ, PY>(fz, fy, cb);
        }
    }
    block_reduce<3>(acc, red, j);
}

/* ---- halo faces --------------------------------------------------------- */
/* Every face of one exchange in one launch: the gather packs each face of
 * every partitioned dimension (forward and backward) and every right-hand
 * side.  blockIdx.y picks the face j, blockIdx.z the right-hand side q;
 * gridDim.x covers the largest face, and the blocks past a smaller face's
 * end find nothing to do.  Element k of site f of face j moves from
 * k * stride + idx[j][f] of the field to k * n[j] + f of the face's buffer;
 * the half-precision norms follow the elements in the buffer (the layout
 * the kernels read received faces in, wd_ghost_sources).  Right-hand side q's field lies
 * q * rhs_elems vector elements (norms q * rhs_norms floats) after the
 * first, its face q * rhs_buf[j] bytes after the first's (all right-hand
 * sides' faces of one direction are one message).  A site's values are
 * copied unchanged, so what a launch packs does not depend on how many
 * faces it covers. */
#define WD_FACES_MAX 8  /* 4 dimensions x 2 directions */

struct face_set {
    const int *idx[WD_FACES_MAX];   /* the face's sites */
    char *buf[WD_FACES_MAX];        /* right-hand side 0's face in the halo buffer */
    int n[WD_FACES_MAX];            /* sites of the face */
    size_t rhs_buf[WD_FACES_MAX];   /* bytes from one right-hand side's face to the next */
    long rhs_elems;                 /* vector elements from one right-hand side's field to the next */
    long rhs_norms;                 /* floats from one right-hand side's norms to the next */
};

template <class W>
__global__ void face_gather_kernel(const W *field, const float *norm, int stride, int elements,
                                   face_set fs)
{
    const int j = blockIdx.y, q = blockIdx.z, n = fs.n[j];
    const int *idx = fs.idx[j];
    W *buf = (W *)(fs.buf[j] + q * fs.rhs_buf[j]);
    field += q * fs.rhs_elems;
    if (norm)
        norm += q * fs.rhs_norms;
    const int total = n * elements;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        const int k = i / n, f = i - k * n;
        buf[i] = field[(size_t)k * stride + idx[f]];
        if (norm && k == 0)
            ((float *)(buf + total))[f] = norm[idx[f]];
    }
}

/* ---- spinors in the host layout on the device -------------------------- */
/* The host layout is DESIGN.md's: complex double (T, Z, Y, X, spin, colour)
 * over the local block, DeGrand-Rossi basis.  These kernels do on the GPU
 * what layout_tmpl.c's wd_pack_spinor / wd_unpack_spinor do on the host,
 * operation for operation (the basis change as C's complex product, ac - bd
 * and ad + bc, each rounded, no FMA; the half-precision norm and scale in
 * double, lrint's rounding), so a field converted here holds the bits the
 * host packing gives (tests/test_gpu_layout.c). */

__constant__ double c_basis[4][4][2], c_basis_inv[4][4][2];

__device__ __forceinline__ void cmul_acc(double ar, double ai, double2 h, double &vr, double &vi)
{
    vr = __dadd_rn(vr, __dsub_rn(__dmul_rn(ar, h.x), __dmul_rn(ai, h.y)));
    vi = __dadd_rn(vi, __dadd_rn(__dmul_rn(ar, h.y), __dmul_rn(ai, h.x)));
}

/* full index i of the local block -> its parity and checkerboard index (x
 * fastest, X even: cb = i / 2) */
__device__ __forceinline__ int site_parity(long i, int4 d)
{
    long r = i / d.x;
    const int x = (int)(i - r * d.x), y = (int)(r % d.y);
    r /= d.y;
    const int z = (int)(r % d.z), t = (int)(r / d.z);
    return (x + y + z + t) & 1;
}

template <int P>
__device__ __forceinline__ void store_packed(const wd_field &f, int cb, const double *re);
template <> __device__ __forceinline__ void store_packed<8>(const wd_field &f, int cb, const double *re)
{
    store<8>(f, cb, re);
}
template <> __device__ __forceinline__ void store_packed<4>(const wd_field &f, int cb, const double *re)
{
    float v[NR];
#pragma unroll
    for (int r = 0; r < NR; ++r)
        v[r] = __double2float_rn(re[r]);
    store<4>(f, cb, v);
}
template <> __device__ __forceinline__ void store_packed<2>(const wd_field &f, int cb, const double *re)
{
    double m = 0;
#pragma unroll
    for (int r = 0; r < NR; ++r)
        m = fmax(m, fabs(re[r]));
    const double scale = m > 0 ? __ddiv_rn((double)WD_HALF_SCALE, m) : 0;
    short4 *p = (short4 *)f.data;
#pragma unroll
    for (int e = 0; e < NR / 4; ++e)
        p[(size_t)e * f.stride + cb] = make_short4(
            (short)__double2int_rn(__dmul_rn(re[4 * e], scale)),
            (short)__double2int_rn(__dmul_rn(re[4 * e + 1], scale)),
            (short)__double2int_rn(__dmul_rn(re[4 * e + 2], scale)),
            (short)__double2int_rn(__dmul_rn(re[4 * e + 3], scale)));
    f.norm[cb] = __double2float_rn(m);
}

/* h (a site's 12 colour vectors' components, spin-major) <- g h, or g^dag h
 * with dagger: gauge_tools.c's wd_spinor_transform, product for product
 * (v = 0, v += m_ik h_k in k order, each complex product ac - bd, ad + bc
 * rounded alone), so the bits are the host transformation's */
__device__ __forceinline__ void gauge_site(const double2 *g, long i, bool dagger, double2 *h)
{
    double2 m[9];
#pragma unroll
    for (int k = 0; k < 9; ++k)
        m[k] = g[9 * i + k];
#pragma unroll
    for (int s = 0; s < 4; ++s) {
        double2 v[3];
#pragma unroll
        for (int a = 0; a < 3; ++a) {
            double vr = 0, vi = 0;
#pragma unroll
            for (int k = 0; k < 3; ++k) {
                const double2 e = dagger ? make_double2(m[3 * k + a].x, -m[3 * k + a].y)
                                         : m[3 * a + k];
                cmul_acc(e.x, e.y, h[3 * s + k], vr, vi);
            }
            v[a] = make_double2(vr, vi);
        }
#pragma unroll
        for (int a = 0; a < 3; ++a)
            h[3 * s + a] = v[a];
    }
}

/* gauge: NULL, or the transformation of wd_spinor_gauge (site order),
 * applied before the basis change as the host applies it before packing */
template <int P>
__global__ void __launch_bounds__(BLAS_BLOCK) from_host_layout(const double2 *raw, wd_field even,
                                                               wd_field odd, int4 d, long n,
                                                               const double2 *gauge, int even_only)
{
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n;
         i += (long)gridDim.x * blockDim.x) {
        if (even_only && site_parity(i, d))
            continue;
        double2 h[12];
#pragma unroll
        for (int k = 0; k < 12; ++k)
            h[k] = raw[12 * i + k];
        if (gauge)
            gauge_site(gauge, i, false, h);
        double re[NR];
#pragma unroll
        for (int s = 0; s < 4; ++s)
#pragma unroll
            for (int c = 0; c < 3; ++c) {
                double vr = 0, vi = 0;
#pragma unroll
                for (int k = 0; k < 4; ++k)
                    cmul_acc(c_basis[s][k][0], c_basis[s][k][1], h[3 * k + c], vr, vi);
                re[2 * (3 * s + c)] = vr;
                re[2 * (3 * s + c) + 1] = vi;
            }
        store_packed<P>(site_parity(i, d) ? odd : even, (int)(i >> 1), re);
    }
}

/* gauge: NULL, or g^dag applied after the basis change, as the host applies
 * it to the unpacked solution */
template <int P>
__global__ void __launch_bounds__(BLAS_BLOCK) to_host_layout(double2 *raw, wd_field even,
                                                             wd_field odd, int4 d, long n,
                                                             const double2 *gauge, int even_only)
{
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n;
         i += (long)gridDim.x * blockDim.x) {
        if (even_only && site_parity(i, d))
            continue;
        double v[NR];
        load_double<P>(site_parity(i, d) ? odd : even, (int)(i >> 1), v);
        double2 h[12];
#pragma unroll
        for (int s = 0; s < 4; ++s)
#pragma unroll
            for (int c = 0; c < 3; ++c) {
                double ar = 0, ai = 0;
#pragma unroll
                for (int k = 0; k < 4; ++k)
                    cmul_acc(c_basis_inv[s][k][0], c_basis_inv[s][k][1],
                             make_double2(v[2 * (3 * k + c)], v[2 * (3 * k + c) + 1]), ar, ai);
                h[3 * s + c] = make_double2(ar, ai);
            }
        if (gauge)
            gauge_site(gauge, i, true, h);
#pragma unroll
        for (int k = 0; k < 12; ++k)
            raw[12 * i + k] = h[k];
    }
}

/* a host-layout array on the device: the squared norm in double (a fixed
 * tree, as the reductions above) and the first entry that is not finite
 * (the lowest index, by an integer atomic: the same on every run) */
__global__ void __launch_bounds__(BLAS_BLOCK) scan_host_layout(const double *raw, long n,
                                                               reduction red,
                                                               unsigned long long *bad)
{
    double acc[1] = {0};
    unsigned long long first = ~0ull;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n;
         i += (long)gridDim.x * blockDim.x) {
        const double v = raw[i];
        acc[0] += v * v;
        if (!isfinite(v) && (unsigned long long)i < first)
            first = (unsigned long long)i;
    }
    if (first != ~0ull)
        atomicMin(bad, first);
    block_reduce<1>(acc, red, 0);
}

/* ---- host side --------------------------------------------------------- */

/* AUTO's route for one kind of exchange (issue 28, item 2): the faces'
 * precision (bytes an element's real), the right-hand sides exchanged and
 * whether the exchange overlaps the interior; timed once per process
 * (tune_route) or read from the tune cache */
enum { MAX_ROUTE_KEYS = 32 };
typedef struct route_choice {
    int precision, nrhs, overlap, route;
    char how[160];  /* how it was chosen (wd_backend_cuda_halo_tuning) */
} route_choice;

/* A face whose sites are `count` runs of `len` consecutive checkerboard
 * indices, the k-th starting at first + k * spacing: a T face is one run
 * (t is the slowest coordinate), a Z face one run an XY plane of each t.
 * count 0: not runs of whole XY planes (X's and Y's faces). */
typedef struct face_runs {
    long first, spacing;
    int count, len;
} face_runs;

/* the dimensions whose faces the copy route sends from the field
 * (cuda_ctx.field), a bit per mu */
enum { FIELD_T = 1 << 3, FIELD_Z = 1 << 2 };

/* AUTO's routes as numbers (route_choice.route, the tune cache): a
 * wd_halo_policy, or COPY_ZT, the copy route with Z's faces from the
 * field too (its FIELD_ bits above the policy's) */
enum { ROUTE_FIELD_SHIFT = 4 };
enum { COPY_ZT = WD_HALO_COPY | (FIELD_T | FIELD_Z) << ROUTE_FIELD_SHIFT };

typedef struct cuda_ctx {
    double *partial;   /* WD_LANES_MAX * BLAS_MAX_GRID * 3 (a lane's from j * BLAS_MAX_GRID * 3) */
    unsigned *count;   /* WD_LANES_MAX finished-block counts (struct reduction) */
    double *result;    /* WD_LANES_MAX * 3, pinned host memory the last block of a
                        * reduction writes through its mapping (result_dev): read
                        * after the stream's synchronisation, with no copy to wait for */
    double *result_dev;
    double *warp_partial;  /* 3 doubles a warp of 32 sites: the reducing Dslash kernels' sums */
    void *staging;     /* pinned host memory for transfers, grown on demand */
    size_t staging_bytes;
    double *raw;       /* a spinor in the host layout on the device, grown on demand */
    size_t raw_bytes;
    unsigned long long *bad;  /* scan_host_layout's first non-finite entry */
    /* process grid */
    wd_nccl *nccl;
    int *face_idx;             /* device: checkerboard indices of face sites */
    long face_off[4][2][2];    /* [mu][last][parity]: first entry in face_idx */
    face_runs runs[4][2][2];   /* [mu][last][parity]: the same face as runs of indices
                                * (T's one, Z's one an XY plane), or none */
    int field;                 /* FIELD_ bits: the dimensions whose faces the copy route
                                * sends from the field by the copy engine, not gathered:
                                * T's (the default), Z's too (AUTO's candidate copy-zt),
                                * or as WDIRAC_HALO_FIELD says */
    int field_env;             /* WDIRAC_HALO_FIELD was set: AUTO keeps its `field` */
    void *halo;                /* device: per partitioned mu 4 face slots */
    size_t halo_bytes;
    void *host_halo;           /* pinned host memory laid out as halo: the faces that go
                                * through MPI (WD_HALO_MPI, or no NCCL in the build) */
    size_t host_halo_bytes;
    cudaStream_t comm;         /* the exchange's stream, when it overlaps the interior */
    cudaEvent_t ev_start, ev_halo;  /* input ready; exchange done (timed) */
    cudaEvent_t ev_bound;      /* the boundary's kernels done (overlapped) */
    int *order;                /* device, where X, Y or Z is partitioned: per parity the
                                * V/2 output sites, interior first (wd_site_order) */
    int inner[2];              /* the interior's sites per parity */
    int *slices;               /* device, where T alone is partitioned: the checkerboard
                                * indices of the first and the last time slice, the
                                * boundary of either parity in one launch */
    int overlap;               /* overlap the exchange with the interior where possible */
    int pack_launches;         /* the last exchange's gather launches */
    int halo_policy;           /* wd_halo_policy asked for */
    wd_p2p *p2p;               /* the dimensions that go peer to peer (NULL: none) */
    int route;                 /* the route of the next exchange's peer-to-peer dimensions:
                                * WD_HALO_COPY or KERNEL, or NCCL (AUTO's tuning only) */
    route_choice tuned[MAX_ROUTE_KEYS];  /* AUTO: the routes chosen, per exchange kind */
    int ntuned;
    const char *tuning;        /* how the last exchange's route was chosen: a tuned[].how,
                                * or NULL */
} cuda_ctx;

static int grid_for(int n)
{
    const int g = (n + BLAS_BLOCK - 1) / BLAS_BLOCK;
    return g < BLAS_MAX_GRID ? g : BLAS_MAX_GRID;
}

static int failed(wd_backend *be, cudaError_t err, const char *what)
{
    if (err == cudaSuccess)
        return 0;
    if (be->error == WD_OK)
        be->error = wd_fail(WD_ERR_CUDA, "CUDA backend, %s: %s", what, cudaGetErrorString(err));
    return 1;
}

/* the reduction of this context's kernels */
static reduction red_of(const cuda_ctx *c)
{
    reduction r = {c->partial, c->count, c->result_dev};
    return r;
}

/* The results of the last reduction launched (`lanes` lanes) into res[3 j
 * ..] after one synchronisation */
static void reduce_to_host(wd_backend *be, int lanes, double *res, const char *what)
{
    cuda_ctx *c = (cuda_ctx *)be->ctx;
    const cudaError_t err = cudaStreamSynchronize((cudaStream_t)wd_cuda_stream());
    if (err != cudaSuccess) {
        /* the Dslash does not wait (backend_cuda_host.c): a kernel queued
         * before this reduction may be the one that failed */
        char where[96];
        snprintf(where, sizeof where, "%s (or a kernel queued before it)", what);
        failed(be, err, where);
        return;
    }
    memcpy(res, c->result, 3 * lanes * sizeof(double));
}

/* Op on every lane of l in one launch; the lanes' reductions (NRES a
 * lane, summed over the ranks on a grid) into res[3 j ..] after one
 * synchronisation */
template <class Op>
static void run_lanes_local(wd_backend *be, const wd_lanes *l, const wd_field *x,
                            const wd_field *y, const wd_field *z, double *res, const char *what)
{
    if (be->error != WD_OK)
        return;
    const wd_field *any = x ? x : y ? y : z;
    const wd_field zero = {};
    const wd_field fx = x ? *x : zero, fy = y ? *y : zero, fz = z ? *z : zero;
    const int n = any->volume_cb;
    const dim3 grid(grid_for(n), l->n);
    cuda_ctx *c = (cuda_ctx *)be->ctx;
    cudaStream_t st = (cudaStream_t)wd_cuda_stream();
    const bool red = Op::NRES > 0 && res;
#define LANES(P)                                                                                \
    if (red)                                                                                    \
        blas_lanes_kernel<P, Op, true><<<grid, BLAS_BLOCK, 0, st>>>(*l, fx, fy, fz, red_of(c), n); \
    else                                                                                        \
        blas_lanes_kernel<P, Op, false><<<grid, BLAS_BLOCK, 0, st>>>(*l, fx, fy, fz, red_of(c), n)
    switch (any->precision) {
    case 8: LANES(8); break;
    case 4: LANES(4); break;
    default: LANES(2); break;
    }
#undef LANES
    if (failed(be, cudaGetLastError(), what) || !red)
        return;
    reduce_to_host(be, l->n, res, what);
}

/* ... and on a process grid the reductions summed over ranks, on every
 * rank whatever its own state (as run) */
template <class Op>
static void run_lanes(wd_backend *be, const wd_lanes *l, const wd_field *x, const wd_field *y,
                      const wd_field *z, double *res, const char *what)
{
    if (Op::NRES > 0 && res)
        memset(res, 0, 3 * l->n * sizeof *res);
    run_lanes_local<Op>(be, l, x, y, z, res, what);
    if (Op::NRES > 0 && res)
        wd_backend_allsum(be, res, 3 * l->n);
}

/* LAUNCH(P1, P2) for the pair of precisions (p1, p2) among those the
 * lanes' mixed-precision operations take: an accumulator or residual of
 * any precision beside fields of any other (88 .. 24), else both half */
#define PRECISION_PAIRS(p1, p2, LAUNCH)                                                         \
    switch ((p1) * 10 + (p2)) {                                                                 \
    case 88: LAUNCH(8, 8); break;                                                               \
    case 84: LAUNCH(8, 4); break;                                                               \
    case 82: LAUNCH(8, 2); break;                                                               \
    case 44: LAUNCH(4, 4); break;                                                               \
    case 42: LAUNCH(4, 2); break;                                                               \
    case 48: LAUNCH(4, 8); break;                                                               \
    case 28: LAUNCH(2, 8); break;                                                               \
    case 24: LAUNCH(2, 4); break;                                                               \
    default: LAUNCH(2, 2); break;                                                               \
    }

/* WD_LANE_ACCUMULATE (xpay 0: y may be NULL) or WD_LANE_ACCUMULATE_XPAY
 * (xpay 1): x and y of one precision, z of any */
static void accumulate_lanes(wd_backend *be, const wd_lanes *l, const wd_field *x,
                             const wd_field *y, wd_field *z, int xpay)
{
    if (be->error != WD_OK)
        return;
    if ((y && y->precision != x->precision) || (xpay && !y)) {
        be->error = wd_fail(WD_ERR_INTERNAL, "CUDA backend: accumulate with x and y of different "
                            "precisions (%d, %d bytes) or no y to xpay", x->precision,
                            y ? y->precision : 0);
        return;
    }
    const int n = z->volume_cb;
    const dim3 grid(grid_for(n), l->n);
    cudaStream_t st = (cudaStream_t)wd_cuda_stream();
    const wd_field fy = y ? *y : *x;
#define ACC(PZ, PX)                                                                             \
    if (xpay)                                                                                   \
        accumulate_xpay_lanes_kernel<PZ, PX><<<grid, BLAS_BLOCK, 0, st>>>(*l, *x, fy, *z, n);   \
    else                                                                                        \
        accumulate_lanes_kernel<PZ, PX><<<grid, BLAS_BLOCK, 0, st>>>(*l, *x, fy, y != NULL, *z, n)
    PRECISION_PAIRS(z->precision, x->precision, ACC);
#undef ACC
    failed(be, cudaGetLastError(), xpay ? "accumulate_xpay (lanes)" : "accumulate (lanes)");
}

/* WD_LANE_BICGSTAB_UPDATE: five fields of one precision; the reductions
 * summed over the ranks on a grid, as run_lanes */
static void bicgstab_update_lanes(wd_backend *be, const wd_lanes *l, const wd_field *x,
                                  const wd_field *y, const wd_field *z, const wd_field *w,
                                  const wd_field *u, double *res)
{
    const char *what = "bicgstab_update (lanes)";
    memset(res, 0, 3 * l->n * sizeof *res);
    if (be->error == WD_OK) {
        const int n = x->volume_cb;
        const dim3 grid(grid_for(n), l->n);
        cuda_ctx *c = (cuda_ctx *)be->ctx;
        cudaStream_t st = (cudaStream_t)wd_cuda_stream();
#define UPD(PZ, P) \
    bicgstab_update_lanes_kernel<PZ, P><<<grid, BLAS_BLOCK, 0, st>>>(*l, *x, *y, *z, *w, *u, \
                                                                     red_of(c), n)
        PRECISION_PAIRS(z->precision, x->precision, UPD);
#undef UPD
        if (!failed(be, cudaGetLastError(), what))
            reduce_to_host(be, l->n, res, what);
    }
    wd_backend_allsum(be, res, 3 * l->n);
}

/* WD_LANE_XPAY_NORM2_COPY (x: y = x + a y) or WD_LANE_NORM2_COPY (x NULL):
 * |y|^2 into res[3 j], z = y unless z is NULL or y's memory; summed over
 * the ranks on a grid, as run_lanes */
static void residual_copy_lanes(wd_backend *be, const wd_lanes *l, const wd_field *x,
                                const wd_field *y, const wd_field *z, double *res)
{
    const char *what = x ? "xpay_norm2_copy (lanes)" : "norm2_copy (lanes)";
    double r[3 * WD_LANES_MAX];
    memset(r, 0, sizeof r);
    if (be->error == WD_OK) {
        const int n = y->volume_cb, copy = z && z->data != y->data;
        const dim3 grid(grid_for(n), l->n);
        cuda_ctx *c = (cuda_ctx *)be->ctx;
        cudaStream_t st = (cudaStream_t)wd_cuda_stream();
        const wd_field fx = x ? *x : *y, fz = copy ? *z : *y;
#define RC(PY, PZ)                                                                              \
    if (x)                                                                                      \
        residual_copy_lanes_kernel<PY, PZ, 1><<<grid, BLAS_BLOCK, 0, st>>>(*l, fx, *y, fz, copy, \
                                                                           red_of(c), n);       \
    else                                                                                        \
        residual_copy_lanes_kernel<PY, PZ, 0><<<grid, BLAS_BLOCK, 0, st>>>(*l, fx, *y, fz, copy, \
                                                                           red_of(c), n)
        PRECISION_PAIRS(y->precision, fz.precision, RC);
#undef RC
        if (!failed(be, cudaGetLastError(), what))
            reduce_to_host(be, l->n, r, what);
    }
    /* the sum sits in slot 0 (xpay_norm2's) or 2 (norm2's, OpCdotNorm) */
    for (int j = 0; j < l->n; ++j) {
        res[3 * j] = r[3 * j + (x ? 0 : 2)];
        res[3 * j + 1] = res[3 * j + 2] = 0;
    }
    wd_backend_allsum(be, res, 3 * l->n);
}

static const wd_complex C0 = {0, 0};

static wd_complex re(double a)
{
    wd_complex c = {a, 0};
    return c;
}

static wd_lanes one_lane(wd_complex a, wd_complex b)
{
    wd_lanes l;
    memset(&l, 0, sizeof l);
    l.n = 1;
    l.a[0] = a;
    l.b[0] = b;
    return l;
}

/* a one-lane operation: the lanes kernel on one lane (right-hand side 0 of
 * the fields it is given) */
template <class Op>
static void run(wd_backend *be, wd_complex a, wd_complex b, const wd_field *x, const wd_field *y,
                const wd_field *z, double *res, const char *what)
{
    const wd_lanes l = one_lane(a, b);
    run_lanes<Op>(be, &l, x, y, z, res, what);
}

/* ---- GCR's classical Gram-Schmidt: y read once for k fields x ---------- */

/* the x fields of one multi_cdot / multi_caxpy and their coefficients */
struct multi_x {
    wd_field f[WD_BLAS_MULTI];
    wd_complex a[WD_BLAS_MULTI];
    int k;
};

/* <x_i, y> for i < m.k, a thread a site over the BLAS grid: each x_i's
 * products summed per thread (OpCdotNorm's arithmetic; its |x|^2 is not
 * reduced) and block as cdot's (the same bits), into reduction lane i */
template <int P>
__global__ void __launch_bounds__(BLAS_BLOCK) multi_cdot_kernel(multi_x m, wd_field y,
                                                                reduction red, int n)
{
    typedef typename Prec<P>::real R;
    OpCdotNorm op;
    double acc[WD_BLAS_MULTI][OpCdotNorm::NRES] = {};
    for (int cb = blockIdx.x * blockDim.x + threadIdx.x; cb < n; cb += gridDim.x * blockDim.x) {
        R vy[NR];
        load<P>(y, cb, vy);
#pragma unroll
        for (int i = 0; i < WD_BLAS_MULTI; ++i) {
            if (i >= m.k)
                break;
            R vx[NR];
            load<P>(m.f[i], cb, vx);
            op(vx, vy, (R *)NULL, acc[i]);
        }
    }
    /* block_reduce's shared memory is reused by the next field's: the
     * barrier keeps its readers ahead of the next writers */
#pragma unroll
    for (int i = 0; i < WD_BLAS_MULTI; ++i)
        if (i < m.k) {
            block_reduce<2>(acc[i], red, i);
            __syncthreads();
        }
}

/* y += sum_i a_i x_i, the terms added in order as caxpy adds one */
template <int P>
__global__ void __launch_bounds__(BLAS_BLOCK) multi_caxpy_kernel(multi_x m, wd_field y, int n)
{
    typedef typename Prec<P>::real R;
    for (int cb = blockIdx.x * blockDim.x + threadIdx.x; cb < n; cb += gridDim.x * blockDim.x) {
        R vy[NR];
        load<P>(y, cb, vy);
#pragma unroll
        for (int i = 0; i < WD_BLAS_MULTI; ++i) {
            if (i >= m.k)
                break;
            R vx[NR];
            load<P>(m.f[i], cb, vx);
            /* caxpy's arithmetic (OpCaxpy; its reductions unused) */
            double unused[OpCaxpy::NRES];
            OpCaxpy::make(m.a[i], m.a[i])(vx, vy, vx, unused);
        }
        store<P>(y, cb, vy);
    }
}

/* the operands of a multi operation, checked: 1 to WD_BLAS_MULTI fields of
 * y's precision (else be->error) */
static bool multi_make(wd_backend *be, const char *what, int k, const wd_field *const *x,
                       const wd_complex *a, const wd_field *y, multi_x *m)
{
    if (be->error != WD_OK)
        return false;
    if (k < 1 || k > WD_BLAS_MULTI) {
        be->error = wd_fail(WD_ERR_INTERNAL, "CUDA backend: %s of %d fields (1 to %d)", what, k,
                            WD_BLAS_MULTI);
        return false;
    }
    m->k = k;
    for (int i = 0; i < WD_BLAS_MULTI; ++i) {
        m->f[i] = *x[i < k ? i : 0];
        m->a[i] = a && i < k ? a[i] : C0;
        if (i < k && x[i]->precision != y->precision) {
            be->error = wd_fail(WD_ERR_INTERNAL, "CUDA backend: %s on fields of different "
                                "precisions (x[%d] %d, y %d bytes)", what, i, x[i]->precision,
                                y->precision);
            return false;
        }
    }
    return true;
}

extern "C" {

void wd_cuda_be_multi_cdot(wd_backend *be, int k, const wd_field *const *x, const wd_field *y,
                           double *res)
{
    memset(res, 0, 2 * (size_t)(k > 0 ? k : 0) * sizeof *res);
    multi_x m;
    if (multi_make(be, "multi_cdot", k, x, NULL, y, &m)) {
        const int n = y->volume_cb;
        cuda_ctx *c = (cuda_ctx *)be->ctx;
        cudaStream_t st = (cudaStream_t)wd_cuda_stream();
        switch (y->precision) {
        case 8: multi_cdot_kernel<8><<<grid_for(n), BLAS_BLOCK, 0, st>>>(m, *y, red_of(c), n); break;
        case 4: multi_cdot_kernel<4><<<grid_for(n), BLAS_BLOCK, 0, st>>>(m, *y, red_of(c), n); break;
        default: multi_cdot_kernel<2><<<grid_for(n), BLAS_BLOCK, 0, st>>>(m, *y, red_of(c), n); break;
        }
        double r[3 * WD_BLAS_MULTI];
        if (!failed(be, cudaGetLastError(), "multi_cdot")) {
            reduce_to_host(be, k, r, "multi_cdot");
            if (be->error == WD_OK)
                for (int i = 0; i < k; ++i)
                    res[2 * i] = r[3 * i], res[2 * i + 1] = r[3 * i + 1];
        }
    }
    /* on a grid every rank sums, whatever its own state (as run_lanes) */
    if (k > 0)
        wd_backend_allsum(be, res, 2 * k);
}

void wd_cuda_be_multi_caxpy(wd_backend *be, int k, const wd_complex *a, const wd_field *const *x,
                            wd_field *y)
{
    multi_x m;
    if (!multi_make(be, "multi_caxpy", k, x, a, y, &m))
        return;
    const int n = y->volume_cb;
    cudaStream_t st = (cudaStream_t)wd_cuda_stream();
    switch (y->precision) {
    case 8: multi_caxpy_kernel<8><<<grid_for(n), BLAS_BLOCK, 0, st>>>(m, *y, n); break;
    case 4: multi_caxpy_kernel<4><<<grid_for(n), BLAS_BLOCK, 0, st>>>(m, *y, n); break;
    default: multi_caxpy_kernel<2><<<grid_for(n), BLAS_BLOCK, 0, st>>>(m, *y, n); break;
    }
    failed(be, cudaGetLastError(), "multi_caxpy");
}

} /* extern "C" */

extern "C" {

void wd_cuda_be_blas_lanes(wd_backend *be, wd_lane_op op, const wd_lanes *l, const wd_field *x,
                           const wd_field *y, const wd_field *z, const wd_field *w,
                           const wd_field *u, double *res)
{
    if (l->n <= 0)
        return;
    double r[3 * WD_LANES_MAX];
    switch (op) {
    case WD_LANE_AXPY: run_lanes<OpAxpy>(be, l, x, y, NULL, NULL, "axpy (lanes)"); return;
    case WD_LANE_XPAY: run_lanes<OpXpay>(be, l, x, y, NULL, NULL, "xpay (lanes)"); return;
    case WD_LANE_AXPY_ZPBX: run_lanes<OpAxpyZpbx>(be, l, x, y, z, NULL, "axpy_zpbx (lanes)"); return;
    case WD_LANE_CAXPY: run_lanes<OpCaxpy>(be, l, x, y, x, NULL, "caxpy (lanes)"); return;
    case WD_LANE_CAXPBYPZ: run_lanes<OpCaxpbypz>(be, l, x, y, z, NULL, "caxpbypz (lanes)"); return;
    case WD_LANE_CXPAYPBZ: run_lanes<OpCxpaypbz>(be, l, x, y, z, NULL, "cxpaypbz (lanes)"); return;
    case WD_LANE_ACCUMULATE: accumulate_lanes(be, l, x, y, (wd_field *)z, 0); return;
    case WD_LANE_ACCUMULATE_XPAY: accumulate_lanes(be, l, x, y, (wd_field *)z, 1); return;
    case WD_LANE_BICGSTAB_UPDATE: bicgstab_update_lanes(be, l, x, y, z, w, u, res); return;
    case WD_LANE_ZERO: run_lanes<OpZero>(be, l, NULL, y, NULL, NULL, "zero (lanes)"); return;
    case WD_LANE_XPAY_NORM2_COPY: residual_copy_lanes(be, l, x, y, z, res); return;
    case WD_LANE_NORM2_COPY: residual_copy_lanes(be, l, NULL, x, z, res); return;
    case WD_LANE_AXPY_NORM2:
        run_lanes<OpAxpy>(be, l, x, y, NULL, res, "axpy_norm2 (lanes)");
        for (int j = 0; j < l->n; ++j)
            res[3 * j + 1] = res[3 * j + 2] = 0;  /* OpAxpy reduces one value */
        return;
    case WD_LANE_CDOT_NORM2: run_lanes<OpCdotNorm>(be, l, x, y, NULL, res, "cdot_norm2 (lanes)"); return;
    case WD_LANE_CAXPY_NORM2_CDOT:
        run_lanes<OpCaxpy>(be, l, x, y, z ? z : x, res, "caxpy_norm2_cdot (lanes)");
        return;
    case WD_LANE_CDOT:
        run_lanes<OpCdotNorm>(be, l, x, y, NULL, res, "cdot (lanes)");
        for (int j = 0; j < l->n; ++j)
            res[3 * j + 2] = 0;
        return;
    case WD_LANE_NORM2:
        run_lanes<OpCdotNorm>(be, l, x, x, NULL, r, "norm2 (lanes)");
        for (int j = 0; j < l->n; ++j) {
            res[3 * j] = r[3 * j + 2];
            res[3 * j + 1] = res[3 * j + 2] = 0;
        }
        return;
    default:
        be->error = wd_fail(WD_ERR_INTERNAL, "CUDA backend: lane operation %d", (int)op);
    }
}

wd_status wd_cuda_be_open(wd_backend *be)
{
    cuda_ctx *c = (cuda_ctx *)calloc(1, sizeof *c);
    if (!c)
        return wd_fail(WD_ERR_NOMEM, "CUDA backend context");
    wd_status st = wd_cuda_malloc((void **)&c->partial,
                                  WD_LANES_MAX * BLAS_MAX_GRID * 3 * sizeof(double),
                                  "reduction partials");
    if (st == WD_OK)
        st = wd_cuda_malloc((void **)&c->count, WD_LANES_MAX * sizeof(unsigned),
                            "reduction counts");
    if (st == WD_OK)
        st = wd_cuda_memset(c->count, 0, WD_LANES_MAX * sizeof(unsigned));
    if (st == WD_OK)
        st = wd_cuda_malloc((void **)&c->warp_partial,
                            (size_t)warps_of(be->volume_cb) * 3 * sizeof(double),
                            "reducing Dslash warp sums");
    if (st == WD_OK) {
        cudaError_t err = cudaHostAlloc((void **)&c->result, WD_LANES_MAX * 3 * sizeof(double),
                                        cudaHostAllocMapped);
        if (err == cudaSuccess)
            err = cudaHostGetDevicePointer((void **)&c->result_dev, c->result, 0);
        if (err != cudaSuccess)
            st = wd_fail(WD_ERR_CUDA, "CUDA backend: the mapped reduction result: %s",
                         cudaGetErrorString(err));
    }
    if (st != WD_OK) {
        wd_cuda_free(c->partial);
        wd_cuda_free(c->count);
        wd_cuda_free(c->warp_partial);
        if (c->result)
            cudaFreeHost(c->result);
        free(c);
        return st;
    }
    be->ctx = c;
    if (failed(be, cudaMemcpyToSymbol(c_basis, wd_basis_change, sizeof c_basis), "basis change") ||
        failed(be, cudaMemcpyToSymbol(c_basis_inv, wd_basis_change_inv, sizeof c_basis_inv),
               "basis change"))
        return be->error;
    return WD_OK;
}

void wd_cuda_be_close(wd_backend *be)
{
    cuda_ctx *c = (cuda_ctx *)be->ctx;
    if (c) {
        /* nothing of this rank's still writes into a neighbour's mapping */
        if (c->p2p)
            cudaDeviceSynchronize();
        wd_p2p_close(c->p2p);
        wd_nccl_close(c->nccl);
        if (c->comm)
            cudaStreamDestroy(c->comm);
        if (c->ev_start)
            cudaEventDestroy(c->ev_start);
        if (c->ev_halo)
            cudaEventDestroy(c->ev_halo);
        if (c->ev_bound)
            cudaEventDestroy(c->ev_bound);
        wd_cuda_free(c->face_idx);
        wd_cuda_free(c->order);
        wd_cuda_free(c->slices);
        wd_cuda_free(c->halo);
        if (c->host_halo)
            cudaFreeHost(c->host_halo);
        wd_cuda_free(c->partial);
        wd_cuda_free(c->count);
        wd_cuda_free(c->warp_partial);
        if (c->result)
            cudaFreeHost(c->result);
        wd_cuda_free(c->raw);
        wd_cuda_free(c->bad);
        if (c->staging)
            cudaFreeHost(c->staging);
        free(c);
    }
    be->ctx = NULL;
}

/* Pinned host memory of at least `bytes` for packing a transfer: a
 * pageable buffer would be staged by the driver through its own small
 * pinned one, at a fraction of the bus bandwidth, and a fresh malloc per
 * transfer would fault in every page again. */
wd_status wd_cuda_be_staging(wd_backend *be, size_t bytes, void **buf)
{
    cuda_ctx *c = (cuda_ctx *)be->ctx;
    if (c->staging_bytes < bytes) {
        if (c->staging)
            cudaFreeHost(c->staging);
        c->staging = NULL;
        c->staging_bytes = 0;
        const cudaError_t err = cudaHostAlloc(&c->staging, bytes, cudaHostAllocDefault);
        if (err != cudaSuccess) {
            c->staging = NULL;
            return wd_fail(WD_ERR_NOMEM, "CUDA backend: cudaHostAlloc of %zu bytes of pinned "
                           "staging memory failed: %s", bytes, cudaGetErrorString(err));
        }
        memset(c->staging, 0, bytes);
        c->staging_bytes = bytes;
    }
    *buf = c->staging;
    return WD_OK;
}

/* The device buffer for one spinor in the host layout (`bytes`), grown on
 * demand and counted in the backend's memory. */
wd_status wd_cuda_be_raw(wd_backend *be, size_t bytes, double **raw)
{
    cuda_ctx *c = (cuda_ctx *)be->ctx;
    if (c->raw_bytes < bytes) {
        wd_cuda_free(c->raw);
        be->bytes_allocated -= c->raw_bytes;
        c->raw = NULL;
        c->raw_bytes = 0;
        wd_status st = wd_cuda_malloc((void **)&c->raw, bytes, "a spinor in the host layout");
        if (st != WD_OK)
            return st;
        c->raw_bytes = bytes;
        be->bytes_allocated += bytes;
        if (be->bytes_allocated > be->bytes_peak)
            be->bytes_peak = be->bytes_allocated;
    }
    *raw = c->raw;
    return WD_OK;
}

static int4 local_dims(const wd_backend *be)
{
    return make_int4(be->dims[0], be->dims[1], be->dims[2], be->dims[3]);
}

static long local_volume(const wd_backend *be)
{
    return (long)be->dims[0] * be->dims[1] * be->dims[2] * be->dims[3];
}

wd_status wd_cuda_be_from_host_layout(wd_backend *be, wd_field *even, wd_field *odd,
                                      const double *raw, const double *gauge)
{
    /* odd NULL: the even sites alone */
    const int even_only = odd == NULL;
    if (even_only)
        odd = even;
    if (even->precision != odd->precision)
        return wd_fail(WD_ERR_INVALID, "CUDA backend: the two parities of a source in different "
                       "precisions (%d and %d bytes)", even->precision, odd->precision);
    const long n = local_volume(be);
    const int grid = grid_for((int)std::min<long>(n, 1L << 30));
    cudaStream_t st = (cudaStream_t)wd_cuda_stream();
    const double2 *r = (const double2 *)raw, *g = (const double2 *)gauge;
    switch (even->precision) {
    case 8: from_host_layout<8><<<grid, BLAS_BLOCK, 0, st>>>(r, *even, *odd, local_dims(be), n, g, even_only); break;
    case 4: from_host_layout<4><<<grid, BLAS_BLOCK, 0, st>>>(r, *even, *odd, local_dims(be), n, g, even_only); break;
    default: from_host_layout<2><<<grid, BLAS_BLOCK, 0, st>>>(r, *even, *odd, local_dims(be), n, g, even_only); break;
    }
    failed(be, cudaGetLastError(), "from the host layout");
    return be->error;
}

wd_status wd_cuda_be_to_host_layout(wd_backend *be, double *raw, const wd_field *even,
                                    const wd_field *odd, const double *gauge)
{
    /* odd NULL: the even sites alone */
    const int even_only = odd == NULL;
    if (even_only)
        odd = even;
    if (even->precision != odd->precision)
        return wd_fail(WD_ERR_INVALID, "CUDA backend: the two parities of a solution in "
                       "different precisions (%d and %d bytes)", even->precision, odd->precision);
    const long n = local_volume(be);
    const int grid = grid_for((int)std::min<long>(n, 1L << 30));
    cudaStream_t st = (cudaStream_t)wd_cuda_stream();
    double2 *r = (double2 *)raw;
    const double2 *g = (const double2 *)gauge;
    switch (even->precision) {
    case 8: to_host_layout<8><<<grid, BLAS_BLOCK, 0, st>>>(r, *even, *odd, local_dims(be), n, g, even_only); break;
    case 4: to_host_layout<4><<<grid, BLAS_BLOCK, 0, st>>>(r, *even, *odd, local_dims(be), n, g, even_only); break;
    default: to_host_layout<2><<<grid, BLAS_BLOCK, 0, st>>>(r, *even, *odd, local_dims(be), n, g, even_only); break;
    }
    failed(be, cudaGetLastError(), "to the host layout");
    return be->error;
}

/* n doubles at raw (device): their squared norm on this rank, and the index
 * of the first that is not finite (-1: none) */
wd_status wd_cuda_be_scan_host_layout(wd_backend *be, const double *raw, long n, double *norm2,
                                      long *bad)
{
    cuda_ctx *c = (cuda_ctx *)be->ctx;
    if (be->error != WD_OK)
        return be->error;
    if (!c->bad) {
        const wd_status st = wd_cuda_malloc((void **)&c->bad, sizeof *c->bad, "the scan's index");
        if (st != WD_OK)
            return st;
    }
    const int grid = grid_for((int)std::min<long>(n, 1L << 30));
    cudaStream_t st = (cudaStream_t)wd_cuda_stream();
    unsigned long long first = ~0ull;
    double res[3];
    if (failed(be, cudaMemcpyAsync(c->bad, &first, sizeof first, cudaMemcpyHostToDevice, st),
               "scan"))
        return be->error;
    scan_host_layout<<<grid, BLAS_BLOCK, 0, st>>>(raw, n, red_of(c), c->bad);
    if (failed(be, cudaGetLastError(), "scan"))
        return be->error;
    if (failed(be, cudaMemcpyAsync(&first, c->bad, sizeof first, cudaMemcpyDeviceToHost, st),
               "scan"))
        return be->error;
    reduce_to_host(be, 1, res, "scan");
    if (be->error != WD_OK)
        return be->error;
    *norm2 = res[0];
    *bad = first == ~0ull ? -1 : (long)first;
    return WD_OK;
}

void wd_cuda_be_accumulate(wd_backend *be, wd_complex a, const wd_field *x, wd_complex b,
                           const wd_field *y, wd_field *z)
{
    const wd_lanes l = one_lane(a, b);
    accumulate_lanes(be, &l, x, y, z, 0);
}

void wd_cuda_be_zero(wd_backend *be, wd_field *y)
{
    run<OpZero>(be, C0, C0, NULL, y, NULL, NULL, "zero");
}

void wd_cuda_be_copy(wd_backend *be, wd_field *y, const wd_field *x)
{
    if (be->error != WD_OK || y == x || y->data == x->data)
        return;
    const int n = x->volume_cb, grid = grid_for(n);
    cudaStream_t st = (cudaStream_t)wd_cuda_stream();
    if (y->precision == x->precision) {
        if (!failed(be, cudaMemcpyAsync(y->data, x->data, x->bytes, cudaMemcpyDeviceToDevice, st),
                    "copy") &&
            x->norm_bytes)
            failed(be, cudaMemcpyAsync(y->norm, x->norm, x->norm_bytes, cudaMemcpyDeviceToDevice, st),
                   "copy");
        return;
    }
#define COPY(PY, PX) copy_kernel<PY, PX><<<grid, BLAS_BLOCK, 0, st>>>(*y, *x, n)
    const int key = y->precision * 10 + x->precision;
    switch (key) {
    case 84: COPY(8, 4); break;
    case 82: COPY(8, 2); break;
    case 48: COPY(4, 8); break;
    case 42: COPY(4, 2); break;
    case 28: COPY(2, 8); break;
    default: COPY(2, 4); break;
    }
#undef COPY
    failed(be, cudaGetLastError(), "copy");
}

void wd_cuda_be_ax(wd_backend *be, double a, wd_field *x)
{
    run<OpAx>(be, re(a), C0, x, NULL, NULL, NULL, "ax");
}

double wd_cuda_be_axpy_norm2(wd_backend *be, double a, const wd_field *x, wd_field *y)
{
    double r[3];
    run<OpAxpy>(be, re(a), C0, x, y, NULL, r, "axpy_norm2");
    return r[0];
}

void wd_cuda_be_axpy(wd_backend *be, double a, const wd_field *x, wd_field *y)
{
    run<OpAxpy>(be, re(a), C0, x, y, NULL, NULL, "axpy");
}

double wd_cuda_be_xpay_norm2(wd_backend *be, const wd_field *x, double a, wd_field *y)
{
    double r[3];
    run<OpXpay>(be, re(a), C0, x, y, NULL, r, "xpay_norm2");
    return r[0];
}

void wd_cuda_be_xpay(wd_backend *be, const wd_field *x, double a, wd_field *y)
{
    run<OpXpay>(be, re(a), C0, x, y, NULL, NULL, "xpay");
}

void wd_cuda_be_axpy_zpbx(wd_backend *be, double a, wd_field *x, wd_field *y, const wd_field *z,
                          double b)
{
    run<OpAxpyZpbx>(be, re(a), re(b), x, y, z, NULL, "axpy_zpbx");
}

void wd_cuda_be_caxpy_norm2_cdot(wd_backend *be, wd_complex a, const wd_field *x, wd_field *y,
                                 const wd_field *z, double res[3])
{
    run<OpCaxpy>(be, a, C0, x, y, z ? z : x, res, "caxpy_norm2_cdot");
}

double wd_cuda_be_caxpy_norm2(wd_backend *be, wd_complex a, const wd_field *x, wd_field *y)
{
    double r[3];
    run<OpCaxpy>(be, a, C0, x, y, x, r, "caxpy_norm2");
    return r[0];
}

void wd_cuda_be_caxpy(wd_backend *be, wd_complex a, const wd_field *x, wd_field *y)
{
    run<OpCaxpy>(be, a, C0, x, y, x, NULL, "caxpy");
}

void wd_cuda_be_caxpbypz(wd_backend *be, wd_complex a, const wd_field *x, wd_complex b,
                         const wd_field *y, wd_field *z)
{
    run<OpCaxpbypz>(be, a, b, x, y, z, NULL, "caxpbypz");
}

void wd_cuda_be_cxpaypbz(wd_backend *be, const wd_field *x, wd_complex a, const wd_field *y,
                         wd_complex b, wd_field *z)
{
    run<OpCxpaypbz>(be, a, b, x, y, z, NULL, "cxpaypbz");
}

void wd_cuda_be_cdot_norm2(wd_backend *be, const wd_field *x, const wd_field *y, double res[3])
{
    run<OpCdotNorm>(be, C0, C0, x, y, NULL, res, "cdot_norm2");
}

wd_complex wd_cuda_be_cdot(wd_backend *be, const wd_field *x, const wd_field *y)
{
    double r[3] = {0, 0, 0};
    wd_cuda_be_cdot_norm2(be, x, y, r);
    wd_complex c = {r[0], r[1]};
    return c;
}

double wd_cuda_be_norm2(wd_backend *be, const wd_field *x)
{
    double r[3] = {0, 0, 0};
    wd_cuda_be_cdot_norm2(be, x, x, r);
    return r[2];
}


/* `variant` has a reducing kernel, and this backend no halo to exchange */
int wd_cuda_be_dslash_reduces(const wd_backend *be, int variant)
{
    return !be->halo.ghost_sites && variant >= 0 && variant < wd_cuda_launcher_count &&
           wd_cuda_reduce_launchers[variant] != NULL;
}

/* where the reducing kernels leave their warp sums */
double *wd_cuda_be_warp_partial(wd_backend *be)
{
    return ((cuda_ctx *)be->ctx)->warp_partial;
}

/* The reducing kernel of `variant` (args with red_y, red_y_norm and
 * red_partial = wd_cuda_be_warp_partial set; block tuned for it), then the
 * warp sums added up: res = {Re <y, out>, Im <y, out>, |out|^2} after one
 * synchronisation.  The caller (backend_cuda_host.c) has checked
 * wd_cuda_be_dslash_reduces: one process, no halo. */
wd_status wd_cuda_be_dslash_reduce(wd_backend *be, int variant, const wd_dslash_args *args,
                                   int block, double res[3])
{
    cuda_ctx *c = (cuda_ctx *)be->ctx;
    if (be->error != WD_OK)
        return be->error;
    cudaStream_t st = (cudaStream_t)wd_cuda_stream();
    cudaError_t err = wd_cuda_reduce_launchers[variant](args, block, st);
    if (err != cudaSuccess)
        return wd_fail(WD_ERR_CUDA, "launch of %s's reducing kernel (block %d, %d sites) failed: "
                       "%s", wd_variants[variant].name, block, args->volume_cb,
                       cudaGetErrorString(err));
    const int nwarps = warps_of(args->volume_cb);
    warp_sums_kernel<<<grid_for(nwarps), BLAS_BLOCK, 0, st>>>(c->warp_partial, nwarps, red_of(c));
    if (failed(be, cudaGetLastError(), "the reducing Dslash's sums"))
        return be->error;
    reduce_to_host(be, 1, res, wd_variants[variant].name);
    return be->error;
}

/* a status agreed over the ranks of the grid (none to agree with on one) */
static wd_status grid_agree(const wd_backend *be, wd_status st)
{
    return be->grid.size > 1 ? wd_comm_agree(st) : st;
}

/* Collective: the halo routes of policy (wd_halo_policy): peer to peer
 * where it may and can go (WD_HALO_AUTO, COPY, KERNEL; the latter two fail
 * where a partitioned dimension cannot), NCCL elsewhere (MPI through
 * pinned host buffers in a build without NCCL, or for every dimension with
 * WD_HALO_MPI); the halo buffer mapped when it exists.  Any earlier routes
 * are closed: the device and the ranks are idle. */
static wd_status halo_routes(wd_backend *be, int policy)
{
    cuda_ctx *c = (cuda_ctx *)be->ctx;
    wd_p2p_close(c->p2p);
    c->p2p = NULL;
    if (policy == WD_HALO_NCCL && !c->nccl)
        return wd_fail(WD_ERR_INVALID, "halo policy nccl: this build of wdirac has no NCCL "
                       "(the CUDA grid's faces go peer to peer or through MPI; auto, mpi, "
                       "copy or kernel)");
    c->halo_policy = policy;
    /* AUTO starts on the copy engine and tunes each kind of exchange at
     * its first call (tune_route) */
    c->route = policy == WD_HALO_KERNEL ? WD_HALO_KERNEL : WD_HALO_COPY;
    if (!c->field_env)
        c->field = FIELD_T;
    c->ntuned = 0;
    c->tuning = NULL;
    if (policy == WD_HALO_NCCL || policy == WD_HALO_MPI)
        return WD_OK;
    wd_status st = wd_p2p_open(&c->p2p, &be->grid, be->halo.part, policy != WD_HALO_AUTO);
    if (st == WD_OK && c->p2p && c->halo)
        st = wd_p2p_map(c->p2p, c->halo);
    return st;
}

/* The n face sites idx[0 .. n - 1] as runs of at least `plane` indices
 * (face_runs), or none */
static face_runs runs_of(const int *idx, int n, int plane)
{
    face_runs r = {0, 0, 0, 0};
    int len = 1;
    while (len < n && idx[len] == idx[0] + len)
        ++len;
    if (n == 0 || len < plane || n % len)
        return r;
    const long spacing = len < n ? (long)idx[len] - idx[0] : len;
    for (int k = 0; k < n / len; ++k)
        for (int j = 0; j < len; ++j)
            if (idx[k * len + j] != idx[0] + k * spacing + j)
                return r;
    r.first = idx[0], r.spacing = spacing, r.count = n / len, r.len = len;
    return r;
}

/* WDIRAC_HALO_FIELD (docs/cli.md): the dimensions whose faces the copy
 * route sends from the field, "T" (the default), "ZT" or "none" (every
 * face gathered, to measure against), as FIELD_ bits */
static wd_status field_faces(const char *v, int *bits)
{
    *bits = 0;
    if (!strcmp(v, "none"))
        return WD_OK;
    for (const char *c = v; *c; ++c) {
        if (*c != 'T' && *c != 'Z')
            return wd_fail(WD_ERR_INVALID, "WDIRAC_HALO_FIELD=%s: must be T, ZT or none (the "
                           "dimensions whose faces the copy route sends from the field)", v);
        *bits |= *c == 'T' ? FIELD_T : FIELD_Z;
    }
    return WD_OK;
}

/* Collective (every rank of the grid): the NCCL communicator, the face
 * index tables of every partitioned dimension (idx, `total` entries, from
 * the host half: wd_face_site), [mu][last][parity] starting at off, the
 * output sites of both parities interior first (order, NULL where only T
 * is partitioned: wd_site_order, inner[parity] interior sites each), and
 * the halo routes of policy (halo_routes).  The caller has selected this
 * rank's device. */
wd_status wd_cuda_be_grid_open(wd_backend *be, const int *idx, long total,
                               const long off[4][2][2], const int *order, const int inner[2],
                               int policy)
{
    cuda_ctx *c = (cuda_ctx *)be->ctx;
    const char *field = getenv("WDIRAC_HALO_FIELD");
    c->field_env = field && *field;
    c->field = FIELD_T;
    wd_status st = grid_agree(be, c->field_env ? field_faces(field, &c->field) : WD_OK);
    /* without NCCL in the build, the faces that do not go peer to peer
     * go through MPI (halo_staged) */
    if (st == WD_OK && wd_comm_has_nccl())
        st = wd_nccl_open(&c->nccl, be->grid.size, be->grid.rank);
    if (st != WD_OK)
        return st;
    memcpy(c->face_off, off, sizeof c->face_off);
    for (int mu = 0; mu < 4; ++mu)
        for (int last = 0; last < 2; ++last)
            for (int p = 0; p < 2; ++p)
                c->runs[mu][last][p] = runs_of(idx + off[mu][last][p],
                                               be->halo.part[mu] ? be->halo.face_cb[mu] : 0,
                                               be->dims[0] * be->dims[1] / 2);
    c->overlap = 1;
    /* the exchange's stream at the highest priority: its gather, NCCL and
     * boundary blocks go ahead of the interior's waiting blocks */
    int lowest = 0, highest = 0;
    cudaError_t err = cudaDeviceGetStreamPriorityRange(&lowest, &highest);
    if (err == cudaSuccess)
        err = cudaStreamCreateWithPriority(&c->comm, cudaStreamNonBlocking, highest);
    if (err == cudaSuccess)
        err = cudaEventCreateWithFlags(&c->ev_start, cudaEventDisableTiming);
    if (err == cudaSuccess)
        err = cudaEventCreate(&c->ev_halo);
    if (err == cudaSuccess)
        err = cudaEventCreateWithFlags(&c->ev_bound, cudaEventDisableTiming);
    st = err == cudaSuccess ? WD_OK
                            : wd_fail(WD_ERR_CUDA, "CUDA backend: the exchange's stream and events: %s",
                                      cudaGetErrorString(err));
    if (st == WD_OK)
        st = wd_cuda_malloc((void **)&c->face_idx, (size_t)total * sizeof(int), "the face index tables");
    if (st == WD_OK)
        st = wd_cuda_h2d(c->face_idx, idx, (size_t)total * sizeof(int));
    const size_t nord = 2 * (size_t)be->volume_cb * sizeof(int);
    if (st == WD_OK && order) {
        c->inner[0] = inner[0], c->inner[1] = inner[1];
        st = wd_cuda_malloc((void **)&c->order, nord, "the grid's interior and boundary sites");
        if (st == WD_OK)
            st = wd_cuda_h2d(c->order, order, nord);
    }
    /* T alone: the two boundary slices as one list (t is the slowest
     * coordinate, so they are the first and the last face_cb[3] indices) */
    const int slice = be->halo.face_cb[3], ncb = be->volume_cb;
    if (st == WD_OK && !order && be->halo.part[3] && be->dims[3] > 2) {
        std::vector<int> list(2 * (size_t)slice);
        for (int i = 0; i < slice; ++i)
            list[i] = i, list[slice + i] = ncb - slice + i;
        st = wd_cuda_malloc((void **)&c->slices, list.size() * sizeof(int),
                            "the grid's boundary slices");
        if (st == WD_OK)
            st = wd_cuda_h2d(c->slices, list.data(), list.size() * sizeof(int));
    }
    if ((st = grid_agree(be, st)) != WD_OK)
        return st;
    return halo_routes(be, policy);
}

/* Collective: new halo routes (halo_routes), once every rank's device is
 * idle, so that no neighbour still writes into this rank's flags */
wd_status wd_cuda_be_set_halo(wd_backend *be, int policy)
{
    const cudaError_t err = cudaDeviceSynchronize();
    wd_status st = err == cudaSuccess
                       ? WD_OK
                       : wd_fail(WD_ERR_CUDA, "CUDA backend: synchronising before new halo routes: %s",
                                 cudaGetErrorString(err));
    if ((st = grid_agree(be, st)) != WD_OK)
        return st;
    return halo_routes(be, policy);
}

/* a dimension that does not go peer to peer goes through NCCL, or
 * through MPI (halo_staged) with WD_HALO_MPI or without NCCL */
static int staged(const cuda_ctx *c)
{
    return c->halo_policy == WD_HALO_MPI || !c->nccl;
}

/* the route of partitioned dimension mu (p2p: wd_p2p_routes): a
 * dimension that can go peer to peer takes c->route (with AUTO the one
 * tuned for the exchange, NCCL among them) */
static wd_halo_policy route_of(const cuda_ctx *c, const int p2p[4], int mu)
{
    if (!p2p[mu])
        return staged(c) ? WD_HALO_MPI : WD_HALO_NCCL;
    return (wd_halo_policy)c->route;
}

/* "T:kernel Z:nccl": each exchanged dimension's route */
void wd_cuda_be_halo_route(const wd_backend *be, char *buf, size_t n)
{
    const cuda_ctx *c = (const cuda_ctx *)be->ctx;
    int p2p[4];
    wd_p2p_routes(c ? c->p2p : NULL, p2p);
    size_t len = 0;
    buf[0] = 0;
    for (int mu = 3; mu >= 0 && c; --mu)
        if (be->halo.part[mu] && len < n)
            len += (size_t)snprintf(buf + len, n - len, "%s%c:%s", len ? " " : "", "XYZT"[mu],
                                    wd_halo_policy_name(route_of(c, p2p, mu)));
}

/* wd_face_bytes: one face's elements, then its norms (half precision) */
static size_t face_bytes(const wd_backend *be, const wd_field *f, int mu)
{
    const size_t n = (size_t)be->halo.face_cb[mu];
    return n * f->elements * f->width * f->precision + (f->norm_bytes ? n * sizeof(float) : 0);
}

/* One right-hand side's face in a slot of the halo buffer: face_bytes
 * rounded up to 16 bytes so that the next one's vector elements stay
 * aligned (face_cb is a multiple of 4, every local extent being even, so
 * this adds nothing: a slot's message is exactly its faces). */
static size_t face_rhs(const wd_backend *be, const wd_field *f, int mu)
{
    return (face_bytes(be, f, mu) + 15) / 16 * 16;
}

/* a face slot of the halo buffer: nrhs faces rounded up to 256 bytes, so
 * every slot is aligned for any vector element */
static size_t face_slot(const wd_backend *be, const wd_field *f, int mu, int nrhs)
{
    return (nrhs * face_rhs(be, f, mu) + 255) / 256 * 256;
}

/* A failure after the ranks' agreement (NCCL, the copies, the kernel
 * launch after the exchange, an event) is this rank's alone: the others
 * return WD_OK from the same call and go on to their next collective.  On
 * a grid of several ranks it is therefore recorded in be->error, the
 * backend's sticky status, and the call returns WD_OK like theirs, so that
 * every rank makes the same collectives next; the failure reaches every
 * rank at the next global sum (wd_backend_allsum sums NaN for a failed
 * backend), where the solvers agree on it (krylov.c), and callers of a
 * lone Dslash read be->error (test_decomposed).  Returned as such on one
 * process. */
static wd_status after_agreement(wd_backend *be, wd_status st)
{
    if (st == WD_OK || be->grid.size <= 1)
        return st;
    if (be->error == WD_OK)
        be->error = st;
    return WD_OK;
}

/* where this rank's face of mu sent in direction dir lands: the
 * neighbour's receive slot recv[1 - dir] (slots send FWD, send BWD, recv
 * FWD, recv BWD from off, `slot` bytes each) in its mapped halo buffer */
static char *peer_slot(const cuda_ctx *c, int mu, int dir, size_t off, size_t slot)
{
    return wd_p2p_peer(c->p2p, mu, dir) + off + (dir == WD_FWD ? 3 : 2) * slot;
}

/* The faces of the dimensions that go through MPI (`n` of them, slots of
 * c->halo): copied on stream s into the same places of the pinned host
 * mirror c->host_halo, the stream synchronised, every such dimension's
 * two messages each way in flight at once (wd_comm_halo_start, as the CPU
 * backend exchanges), then the received faces copied back on s, where
 * the kernels read them.  After the agreement: a failure here is this rank's alone,
 * and the rank still takes part in every message, so that no neighbour
 * waits for ever. */
static wd_status halo_staged(wd_backend *be, const wd_nccl_face *faces, int n, cudaStream_t s)
{
    cuda_ctx *c = (cuda_ctx *)be->ctx;
    const char *dev = (const char *)c->halo;
    char *host = (char *)c->host_halo;
    cudaError_t err = cudaSuccess;
    for (int k = 0; k < n && err == cudaSuccess; ++k)
        for (int d = 0; d < 2 && err == cudaSuccess; ++d) {
            const char *src = (const char *)faces[k].send[d];
            err = cudaMemcpyAsync(host + (src - dev), src, faces[k].bytes, cudaMemcpyDeviceToHost,
                                  s);
        }
    if (err == cudaSuccess)
        err = cudaStreamSynchronize(s);
    wd_status st = err == cudaSuccess
                       ? WD_OK
                       : wd_fail(WD_ERR_CUDA, "CUDA backend: the faces to the host for MPI: %s",
                                 cudaGetErrorString(err));
    wd_comm_halo h[4];
    int started[4] = {0, 0, 0, 0};
    for (int k = 0; k < n; ++k) {
        const void *send[2];
        void *recv[2];
        for (int d = 0; d < 2; ++d) {
            send[d] = host + ((const char *)faces[k].send[d] - dev);
            recv[d] = host + ((const char *)faces[k].recv[d] - dev);
        }
        const wd_status r = wd_comm_halo_start(&h[k], &be->grid, faces[k].mu, send, recv,
                                               faces[k].bytes);
        started[k] = r == WD_OK;
        if (st == WD_OK)
            st = r;
    }
    for (int k = 0; k < n; ++k) {
        const wd_status r = started[k] ? wd_comm_halo_wait(&h[k]) : WD_OK;
        if (st == WD_OK)
            st = r;
    }
    for (int k = 0; k < n && st == WD_OK; ++k)
        for (int d = 0; d < 2 && st == WD_OK; ++d) {
            char *dst = (char *)faces[k].recv[d];
            err = cudaMemcpyAsync(dst, host + (dst - dev), faces[k].bytes, cudaMemcpyHostToDevice,
                                  s);
            if (err != cudaSuccess)
                st = wd_fail(WD_ERR_CUDA, "CUDA backend: the faces MPI brought to the device: %s",
                             cudaGetErrorString(err));
        }
    return st;
}

/* The face `r` of right-hand sides 0 .. nrhs - 1 of field f into the halo
 * slot `to` (a peer's), laid out as the gather writes it (per right-hand
 * side, `rb` bytes apart: each stored element's row of the face's sites,
 * then their half-precision norms), by the copy engine on stream s, per
 * right-hand side: one run (T's face), a two-dimensional copy of the
 * element rows; several (Z's, a run an XY plane), a three-dimensional copy
 * of the runs of every element row where the rows are a whole number of
 * run spacings apart (no padding that breaks it), else a two-dimensional
 * copy of the runs per element row; the norms likewise */
static cudaError_t face_copy(char *to, size_t rb, const wd_field *f, const face_runs *r, int nrhs,
                             cudaStream_t s)
{
    const size_t eb = (size_t)f->width * f->precision, n = (size_t)r->count * r->len;
    const size_t run = (size_t)r->len * eb, row = n * eb, pitch = (size_t)r->spacing * eb;
    const int planes = r->count > 1 && f->stride % r->spacing == 0;
    cudaError_t err = cudaSuccess;
    for (int q = 0; q < nrhs && err == cudaSuccess; ++q) {
        char *buf = to + q * rb;
        const char *field = (const char *)f->data + (q * (f->bytes / eb) + r->first) * eb;
        if (r->count == 1)
            err = cudaMemcpy2DAsync(buf, row, field, (size_t)f->stride * eb, row, f->elements,
                                    cudaMemcpyDeviceToDevice, s);
        else if (planes) {
            cudaMemcpy3DParms p;
            memset(&p, 0, sizeof p);
            p.srcPtr = make_cudaPitchedPtr((void *)field, pitch, run, f->stride / r->spacing);
            p.dstPtr = make_cudaPitchedPtr(buf, run, run, r->count);
            p.extent = make_cudaExtent(run, r->count, f->elements);
            p.kind = cudaMemcpyDeviceToDevice;
            err = cudaMemcpy3DAsync(&p, s);
        }
        for (int e = 0; e < f->elements && r->count > 1 && !planes && err == cudaSuccess; ++e)
            err = cudaMemcpy2DAsync(buf + e * row, run, field + (size_t)e * f->stride * eb, pitch,
                                    run, r->count, cudaMemcpyDeviceToDevice, s);
        if (err == cudaSuccess && f->norm)
            err = cudaMemcpy2DAsync(buf + row * f->elements, r->len * sizeof(float),
                                    f->norm + q * (f->norm_bytes / sizeof(float)) + r->first,
                                    r->spacing * sizeof(float), r->len * sizeof(float), r->count,
                                    cudaMemcpyDeviceToDevice, s);
    }
    return err;
}

/* Enqueue on stream s the exchange of the ghost faces of right-hand sides
 * 0 .. nrhs - 1 of `in` (the parity opposite out_parity) with the
 * neighbours: one gather launch packing every face of every partitioned
 * dimension and right-hand side, the transfers into this rank's receive
 * slots; per dimension one message each way holding every right-hand
 * side's face.  gsrc[mu] is set to mu's received faces, where the kernels
 * read the ghost sites (wd_ghost_src: no scatter); where *to_read is set
 * on return the caller tells the neighbours, once every kernel reading
 * them is enqueued, that they may write the next exchange's faces
 * (ghosts_read).  A dimension that goes peer to peer (c->p2p)
 * has its faces written by the gather straight into the neighbour's
 * receive slots (policy kernel) or copied there by the copy engine (copy:
 * the faces of the dimensions c->field names, runs of whole XY planes,
 * straight from the field, with no gather), ordered by the flags of
 * halo_p2p.h; the others go through
 * one NCCL group.  Collective over the ranks of the grid; `pending`, a
 * failure of the caller's, is agreed with the others before the exchange
 * (and stops it). */
static wd_status halo_on(wd_backend *be, const wd_field *in, int nrhs, int out_parity,
                         wd_status pending, cudaStream_t s, wd_ghost_src gsrc[4][2],
                         int *to_read)
{
    cuda_ctx *c = (cuda_ctx *)be->ctx;
    wd_status st = pending;
    *to_read = 0;
    size_t need = 0, off[4];
    for (int mu = 0; mu < 4; ++mu) {
        off[mu] = need;
        if (be->halo.part[mu])
            need += 4 * face_slot(be, in, mu, nrhs);
    }
    c->pack_launches = 0;
    /* every rank has the same local volume and runs the same calls: all
     * grow here together.  Peer to peer, whatever is pending: all unmap,
     * agree, grow, agree, map; a failure there is every rank's, and
     * leaves every rank with no buffer, to grow and map at the next call */
    if (need > c->halo_bytes && (st == WD_OK || c->p2p)) {
        wd_status g = WD_OK;
        if (c->p2p) {
            wd_p2p_unmap(c->p2p);
            g = grid_agree(be, WD_OK);  /* no rank maps the old buffer any more */
        }
        if (g == WD_OK) {
            wd_cuda_free(c->halo);
            c->halo = NULL;
            c->halo_bytes = 0;
            if ((g = wd_cuda_malloc(&c->halo, need, "the halo buffers")) == WD_OK)
                c->halo_bytes = need;
        }
        if (c->p2p) {
            if ((g = grid_agree(be, g)) == WD_OK)
                g = wd_p2p_map(c->p2p, c->halo);
            if (g != WD_OK) {
                wd_p2p_unmap(c->p2p);
                wd_cuda_free(c->halo);
                c->halo = NULL;
                c->halo_bytes = 0;
                return g;
            }
        }
        if (st == WD_OK)
            st = g;
    }
    int p2p[4], nstaged = 0;
    wd_p2p_routes(c->p2p, p2p);
    for (int mu = 0; mu < 4; ++mu)
        nstaged += be->halo.part[mu] && route_of(c, p2p, mu) == WD_HALO_MPI;
    /* the pinned host mirror of the halo buffer for MPI, grown with it
     * (before the agreement: a failure is every rank's) once the device
     * has used the old one */
    if (nstaged && need > c->host_halo_bytes && st == WD_OK) {
        cudaError_t err = cudaDeviceSynchronize();
        if (c->host_halo && err == cudaSuccess)
            err = cudaFreeHost(c->host_halo);
        if (err == cudaSuccess) {
            c->host_halo = NULL;
            c->host_halo_bytes = 0;
            err = cudaHostAlloc(&c->host_halo, need, cudaHostAllocDefault);
            if (err == cudaSuccess)
                c->host_halo_bytes = need;
            else
                c->host_halo = NULL;
        }
        if (err != cudaSuccess)
            st = wd_fail(WD_ERR_NOMEM, "CUDA backend: %zu bytes of pinned host memory for the "
                         "faces that go through MPI: %s", need, cudaGetErrorString(err));
    }
    /* peer to peer this time: c->p2p's dimensions, unless AUTO's tuning
     * sends them through NCCL (then the flags' sequence still advances
     * once the kernels have read the faces, ghosts_read, so that the next
     * exchange that writes into a neighbour waits until it has read this
     * one) */
    const int direct = c->p2p && c->route != WD_HALO_NCCL;
    const int kernel_write = direct && c->route == WD_HALO_KERNEL;
    /* the neighbours have read what this rank wrote into them last time:
     * before the gather writes into them (kernel), before the copies (copy) */
    if (st == WD_OK && kernel_write)
        st = wd_p2p_begin(c->p2p, s);
    const int in_parity = 1 - out_parity;
    const size_t eb = (size_t)in->width * in->precision;
    const long rhs_elems = (long)(in->bytes / eb), rhs_norms = (long)(in->norm_bytes / sizeof(float));
    /* face 2k + d of the k-th partitioned dimension: d = 0 forward, 1
     * backward; the gather's send[FWD] is my last slice, the forward
     * neighbour's backward ghost, which lands in its recv[BWD] */
    wd_nccl_face faces[4], copies[4], mpi[4];
    face_set pack;
    memset(&pack, 0, sizeof pack);
    pack.rhs_elems = rhs_elems;
    pack.rhs_norms = rhs_norms;
    /* on the copy route a face of runs of whole XY planes goes from the
     * field to the neighbour by the copy engine where c->field names its
     * dimension (ce_send: its runs, else NULL) and is left out of the
     * gather, so no gather block takes an SM or a pass over the face from
     * the interior; the neighbour's receive slot gets the same bytes
     * either way.  T's faces (one run) always: faster in every case
     * measured.  Z's (a run an XY plane) where AUTO timed them faster
     * (copy-zt): at 48^3x96 with one right-hand side 2.8-3.5% faster than
     * gathered, at 32^3x64 5.5-21% slower (run67, one copy per element
     * row then). */
    const int copy_runs = direct && !kernel_write;
    const face_runs *ce_send[4][2];
    int npack = 0, nnccl = 0, ncopy = 0, nmpi = 0, pblocks = 0;
    for (int mu = 0; mu < 4 && st == WD_OK; ++mu) {
        if (!be->halo.part[mu])
            continue;
        const size_t slot = face_slot(be, in, mu, nrhs), rb = face_rhs(be, in, mu);
        char *b = (char *)c->halo + off[mu];
        const int n = be->halo.face_cb[mu];
        const wd_halo_policy r = route_of(c, p2p, mu);
        wd_nccl_face f;
        f.mu = mu;
        f.bytes = (size_t)nrhs * rb;
        f.send[WD_FWD] = b;
        f.send[WD_BWD] = b + slot;
        f.recv[WD_FWD] = b + 2 * slot;
        f.recv[WD_BWD] = b + 3 * slot;
        wd_ghost_sources(n, in->elements, eb, in->norm != NULL, f.recv[WD_FWD], f.recv[WD_BWD],
                         rb, gsrc[mu]);
        for (int d = 0; d < 2; ++d) {
            const int dir = d ? WD_BWD : WD_FWD;
            const face_runs *runs = &c->runs[mu][d ? 0 : 1][in_parity];
            ce_send[mu][d] =
                r == WD_HALO_COPY && copy_runs && (c->field >> mu & 1) && runs->count ? runs
                                                                                      : NULL;
            if (!ce_send[mu][d]) {
                const int j = npack++;
                pack.idx[j] = c->face_idx + c->face_off[mu][d ? 0 : 1][in_parity];
                pack.buf[j] = (char *)f.send[dir];
                if (p2p[mu] && kernel_write)  /* route_of: WD_HALO_KERNEL */
                    pack.buf[j] = peer_slot(c, mu, dir, off[mu], slot);
                pack.n[j] = n;
                pack.rhs_buf[j] = rb;
                pblocks = std::max(pblocks, (n * in->elements + 255) / 256);
            }
        }
        if (r == WD_HALO_MPI)
            mpi[nmpi++] = f;
        else if (r == WD_HALO_NCCL)
            faces[nnccl++] = f;
        else if (r == WD_HALO_COPY)
            copies[ncopy++] = f;
    }
    const dim3 pgrid(pblocks, npack, nrhs);
    if (st == WD_OK && npack > 0) {
        if (eb == 16)
            face_gather_kernel<uint4><<<pgrid, 256, 0, s>>>((const uint4 *)in->data, in->norm,
                                                           in->stride, in->elements, pack);
        else
            face_gather_kernel<uint2><<<pgrid, 256, 0, s>>>((const uint2 *)in->data, in->norm,
                                                           in->stride, in->elements, pack);
        const cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess)
            st = wd_fail(WD_ERR_CUDA, "CUDA backend: the face gather (%d faces, %d right-hand "
                         "sides): %s", npack, nrhs, cudaGetErrorString(err));
        else
            c->pack_launches = 1;
    }
    if (st == WD_OK && direct && !kernel_write)
        st = wd_p2p_begin(c->p2p, s);
    /* every rank enters the exchange, or none */
    if ((st = grid_agree(be, st)) != WD_OK)
        return st;
    /* from here a failure is this rank's alone: it still signals its
     * neighbours, so that none waits for ever (after_agreement) */
    for (int k = 0; k < ncopy && st == WD_OK; ++k) {
        const wd_nccl_face *f = &copies[k];
        const size_t slot = face_slot(be, in, f->mu, nrhs);
        for (int d = 0; d < 2 && st == WD_OK; ++d) {
            const int dir = d ? WD_BWD : WD_FWD;
            char *to = peer_slot(c, f->mu, dir, off[f->mu], slot);
            const face_runs *runs = ce_send[f->mu][d];
            const cudaError_t err = !runs ? cudaMemcpyAsync(to, f->send[dir], f->bytes,
                                                            cudaMemcpyDeviceToDevice, s)
                                          : face_copy(to, face_rhs(be, in, f->mu), in, runs, nrhs,
                                                      s);
            if (err != cudaSuccess)
                st = wd_fail(WD_ERR_CUDA, "CUDA backend: the peer-to-peer copy of dimension %d's "
                             "face: %s", f->mu, cudaGetErrorString(err));
        }
    }
    if (direct) {
        const wd_status l = wd_p2p_landed(c->p2p, s);
        if (st == WD_OK)
            st = l;
    }
    if (nnccl > 0) {
        const wd_status n = wd_nccl_halo(c->nccl, &be->grid, faces, nnccl, s);
        if (st == WD_OK)
            st = n;
    }
    if (nmpi > 0) {
        const wd_status m = halo_staged(be, mpi, nmpi, s);
        if (st == WD_OK)
            st = m;
    }
    if (c->p2p)
        *to_read = 1;
    return after_agreement(be, st);
}

/* the gather launches of this backend's last exchange, and its scatter
 * launches: none, the kernels reading the faces where they landed */
void wd_cuda_be_halo_launches(const wd_backend *be, int *pack, int *unpack)
{
    const cuda_ctx *c = (const cuda_ctx *)be->ctx;
    *pack = c ? c->pack_launches : 0;
    *unpack = 0;
}

/* Enqueue on stream s, after every kernel that reads the faces halo_on
 * received (where it set to_read): tell the neighbours they may write the
 * next exchange's faces into this rank's receive slots.  A failure is this
 * rank's alone (after the agreement). */
static wd_status ghosts_read(wd_backend *be, int to_read, wd_status st, cudaStream_t s)
{
    const cuda_ctx *c = (const cuda_ctx *)be->ctx;
    if (to_read) {
        const wd_status r = wd_p2p_read(c->p2p, s);
        if (st == WD_OK)
            st = r;
    }
    return after_agreement(be, st);
}

void wd_cuda_be_set_overlap(wd_backend *be, int on)
{
    cuda_ctx *c = (cuda_ctx *)be->ctx;
    if (c)
        c->overlap = on;
}

/* How the exchange overlaps the interior of output parity `parity`: 0 not
 * (overlap off, or no interior); OVERLAP_SLICES: T alone partitioned, its
 * boundary sites are the first and the last face_cb[3] checkerboard
 * indices (t is the slowest coordinate), so the interior is one contiguous
 * range and the boundary the list c->slices, one launch; OVERLAP_LIST: X,
 * Y or Z partitioned, the interior and the boundary are the two parts of
 * c->order's list for the parity */
enum { OVERLAP_SLICES = 1, OVERLAP_LIST = 2 };
static int overlappable(const wd_backend *be, int parity)
{
    const cuda_ctx *c = (const cuda_ctx *)be->ctx;
    if (!c->overlap || !c->comm)
        return 0;
    if (!be->halo.part[0] && !be->halo.part[1] && !be->halo.part[2])
        return c->slices ? OVERLAP_SLICES : 0;
    return c->order && c->inner[parity] > 0 ? OVERLAP_LIST : 0;
}

/* The decomposed Dslash, enqueued: the exchange of in's ghosts and the
 * kernel.  Overlapped where overlappable(): the exchange on the comm
 * stream (after the input is ready on the main stream) while the main
 * stream computes the interior sites, which read no ghost; the boundary
 * (the two T slices, or the list's boundary part) follows the exchange on
 * the comm stream, and the main stream waits for it.  Otherwise the
 * exchange, then the whole kernel, on the main stream.  Either way
 * c->ev_halo marks the end of the exchange and every site's arithmetic is
 * the same.  `pending`
 * (a failure of the caller's) is agreed with the other ranks before the
 * exchange and stops it.  Collective over the ranks of the grid. */
static wd_status dslash_grid(wd_backend *be, int variant, const wd_dslash_args *args, int block,
                             const wd_field *in, int parity, wd_status pending)
{
    cuda_ctx *c = (cuda_ctx *)be->ctx;
    cudaStream_t s = (cudaStream_t)wd_cuda_stream();
    /* the right-hand sides the call covers, whose ghosts it reads */
    const int nrhs = wd_variants[variant].nrhs * (args->groups > 1 ? args->groups : 1);
    wd_status st;
    int to_read;
    const int how = overlappable(be, args->parity);
    if (!how) {
        /* a failure halo_on returns is every rank's (agreed); those after
         * it are this rank's alone (after_agreement) */
        wd_dslash_args whole = *args;
        if ((st = halo_on(be, in, nrhs, parity, pending, s, whole.gsrc, &to_read)) != WD_OK)
            return st;
        if (cudaEventRecord(c->ev_halo, s) != cudaSuccess)
            st = wd_fail(WD_ERR_CUDA, "CUDA backend: cudaEventRecord after the exchange failed");
        if (st == WD_OK)
            st = wd_cuda_dslash_async(variant, &whole, block);
        return ghosts_read(be, to_read, st, s);
    }
    /* the interior first, so that the main stream never waits for the host
     * (the exchange's agreement and NCCL calls): sites [i0, i1) of the
     * range (T alone) or of the list, then the boundary, one launch over
     * entries [b0, b1) of a list (T alone: the two slices', c->slices) */
    wd_dslash_args listed = *args;
    const int n = be->volume_cb, slice = be->halo.face_cb[3];
    int i0 = slice, i1 = n - slice, b0 = 0, b1 = 2 * slice;
    listed.sites = c->slices;
    if (how == OVERLAP_LIST) {
        listed.sites = c->order + (size_t)args->parity * n;
        args = &listed;
        i0 = 0, i1 = c->inner[args->parity], b0 = i1, b1 = n;
    }
    cudaError_t err = cudaEventRecord(c->ev_start, s);
    if (err == cudaSuccess)
        err = cudaStreamWaitEvent(c->comm, c->ev_start, 0);
    if (err != cudaSuccess && pending == WD_OK)
        pending = wd_fail(WD_ERR_CUDA, "CUDA backend: ordering the exchange after the input: %s",
                          cudaGetErrorString(err));
    if (pending == WD_OK)
        pending = wd_cuda_dslash_range_async(variant, args, block, i0, i1, s);
    st = halo_on(be, in, nrhs, parity, pending, c->comm, listed.gsrc, &to_read);
    if (st != WD_OK)
        return st;
    /* the boundary slices on the exchange's stream, at its high priority,
     * as soon as their ghosts are in: their blocks take the SMs the
     * interior's last blocks leave, rather than starting after the
     * interior's tail (they write other sites than the interior) */
    err = cudaEventRecord(c->ev_halo, c->comm);
    st = err == cudaSuccess ? wd_cuda_dslash_range_async(variant, &listed, block, b0, b1, c->comm)
                            : wd_fail(WD_ERR_CUDA, "CUDA backend: marking the exchange's end: %s",
                                      cudaGetErrorString(err));
    st = ghosts_read(be, to_read, st, c->comm);
    err = cudaEventRecord(c->ev_bound, c->comm);
    if (err == cudaSuccess)
        err = cudaStreamWaitEvent(s, c->ev_bound, 0);
    if (err != cudaSuccess && st == WD_OK)
        st = wd_fail(WD_ERR_CUDA, "CUDA backend: waiting for the boundary: %s",
                     cudaGetErrorString(err));
    return after_agreement(be, st);
}

static double median(std::vector<double> &t)
{
    std::sort(t.begin(), t.end());
    const size_t n = t.size();
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

#define ROUTE_REPS 7  /* timed calls a candidate route, after 2 untimed */

static const char *route_name(int route)
{
    return route == COPY_ZT ? "copy-zt" : wd_halo_policy_name((wd_halo_policy)route);
}

/* c->route, and c->field unless WDIRAC_HALO_FIELD fixes it */
static void take_route(cuda_ctx *c, int route)
{
    c->route = route & ((1 << ROUTE_FIELD_SHIFT) - 1);
    if (!c->field_env)
        c->field = route >> ROUTE_FIELD_SHIFT ? route >> ROUTE_FIELD_SHIFT : FIELD_T;
}

/* AUTO (issue 28, item 2): c->route for this kind of exchange (the
 * faces' precision, the right-hand sides, the overlap), chosen once per
 * process.  Where some dimension goes peer to peer the candidates are the
 * copy engine, kernel writes and (with NCCL) NCCL; each is timed as the
 * whole decomposed Dslash of this call (2 + ROUTE_REPS calls, CUDA events
 * on the main stream, the median), every rank's medians combined by their
 * maximum (the slowest rank sets the pace), and the fastest taken, the
 * first of equals: the same choice on every rank.  The choice is cached
 * (wd_tune_halo_save) per GPU, grid, local volume, precision and
 * right-hand sides; a later process takes the cached route where every
 * rank has the same one, and times again otherwise.  The timing calls are
 * the call itself repeated (the kernels' tuning does the same): each
 * writes the same output.  Collective; `pending` (a failure of the
 * caller's) skips the choice on every rank and is returned. */
static wd_status tune_route(wd_backend *be, int variant, const wd_dslash_args *args, int block,
                            const wd_field *in, int parity, wd_status pending)
{
    cuda_ctx *c = (cuda_ctx *)be->ctx;
    const int nrhs = wd_variants[variant].nrhs * (args->groups > 1 ? args->groups : 1);
    for (int i = 0; i < c->ntuned; ++i) {
        const route_choice *r = &c->tuned[i];
        if (r->precision == in->precision && r->nrhs == nrhs && r->overlap == c->overlap) {
            take_route(c, r->route);
            c->tuning = r->how;
            return pending;
        }
    }
    /* copy-zt where Z's faces could go from the field (its runs are
     * those of every parity and side alike) and WDIRAC_HALO_FIELD does
     * not fix the faces */
    int p2p[4];
    wd_p2p_routes(c->p2p, p2p);
    int cand[4], nc = 0;
    cand[nc++] = WD_HALO_COPY;
    if (!c->field_env && p2p[2] && c->runs[2][0][0].count)
        cand[nc++] = COPY_ZT;
    cand[nc++] = WD_HALO_KERNEL;
    if (c->nccl)
        cand[nc++] = WD_HALO_NCCL;
    /* the grid, the dimensions exchanged (a grid's own and those a rank
     * exchanges with itself: 1x1x1x2 exchanging X too is another kind),
     * the precision, the right-hand sides, serial or overlapped */
    char aux[48], faces[5];
    const int *P = be->grid.procs;
    int nfaces = 0;
    for (int mu = 0; mu < 4; ++mu)
        if (be->halo.part[mu])
            faces[nfaces++] = "XYZT"[mu];
    faces[nfaces] = 0;
    char prec = '?';  /* the manifest's token: d, s, h */
    for (const wd_precision_layout &l : wd_precision_layouts)
        if (l.precision == in->precision)
            prec = l.token;
    snprintf(aux, sizeof aux, "grid=%dx%dx%dx%d faces=%s %c nrhs=%d%s", P[0], P[1], P[2], P[3],
             faces, prec, nrhs, c->overlap ? "" : " serial");
    /* the cached route, where every rank has the same (v = {r, -r}: the
     * maxima are r and -r on every rank only when every rank has r) */
    int cached = -1;
    wd_status st = pending == WD_OK ? wd_tune_halo_find(be->dims, aux, &cached) : pending;
    if ((st = grid_agree(be, st)) != WD_OK)
        return st;
    double v[2] = {(double)cached, -(double)cached};
    if (be->grid.size > 1 && (st = wd_comm_max(v, 2)) != WD_OK)
        return st;
    int chosen = -1;
    for (int k = 0; k < nc; ++k)
        if (v[0] == cand[k] && -v[1] == cand[k])
            chosen = cand[k];
    double us[4] = {0, 0, 0, 0};
    char how[160];
    if (chosen >= 0)
        snprintf(how, sizeof how, "%s: %s (the tune cache)", aux, route_name(chosen));
    else {
        /* every rank makes the same calls whatever fails: a failure is
         * agreed inside the next call's exchange, which then stops early
         * on every rank */
        cudaStream_t s = (cudaStream_t)wd_cuda_stream();
        cudaEvent_t e0 = NULL, e1 = NULL;
        if (cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess)
            st = wd_fail(WD_ERR_CUDA, "halo route: cudaEventCreate failed");
        for (int k = 0; k < nc; ++k) {
            take_route(c, cand[k]);
            std::vector<double> t;
            for (int r = -2; r < ROUTE_REPS; ++r) {
                cudaError_t err = st == WD_OK ? cudaEventRecord(e0, s) : cudaSuccess;
                st = dslash_grid(be, variant, args, block, in, parity, st);
                float ms = 0;
                if (st == WD_OK && err == cudaSuccess)
                    err = cudaEventRecord(e1, s);
                if (st == WD_OK && err == cudaSuccess)
                    err = cudaEventSynchronize(e1);
                if (st == WD_OK && err == cudaSuccess)
                    err = cudaEventElapsedTime(&ms, e0, e1);
                if (st == WD_OK && err != cudaSuccess)
                    st = wd_fail(WD_ERR_CUDA, "halo route: timing the %s route: %s",
                                 route_name(cand[k]), cudaGetErrorString(err));
                if (st == WD_OK && r >= 0)
                    t.push_back(1e3 * ms);
            }
            us[k] = st == WD_OK ? median(t) : 0.0;
        }
        if (e0)
            cudaEventDestroy(e0);
        if (e1)
            cudaEventDestroy(e1);
        if ((st = grid_agree(be, st)) == WD_OK && be->grid.size > 1)
            st = wd_comm_max(us, nc);
        if (st != WD_OK) {
            take_route(c, WD_HALO_COPY);  /* and chosen again at the next call */
            return st;
        }
        int best = 0;
        for (int k = 1; k < nc; ++k)
            if (us[k] < us[best])
                best = k;
        chosen = cand[best];
        int len = snprintf(how, sizeof how, "%s:", aux);
        for (int k = 0; k < nc && len < (int)sizeof how; ++k)
            len += snprintf(how + len, sizeof how - (size_t)len, " %s %.1f", route_name(cand[k]),
                            us[k]);
        if (len < (int)sizeof how)
            snprintf(how + len, sizeof how - (size_t)len, " us -> %s", route_name(chosen));
        /* a failure to write the cache is this rank's: the call agrees it */
        st = wd_tune_halo_save(be->dims, aux, chosen, us[best]);
    }
    take_route(c, chosen);
    /* past MAX_ROUTE_KEYS kinds the last entry is reused: a later call of
     * an evicted kind reads the tune cache again (every rank alike) */
    route_choice *r = &c->tuned[c->ntuned < MAX_ROUTE_KEYS ? c->ntuned++ : MAX_ROUTE_KEYS - 1];
    r->precision = in->precision;
    r->nrhs = nrhs;
    r->overlap = c->overlap;
    r->route = chosen;
    snprintf(r->how, sizeof r->how, "%s", how);
    c->tuning = r->how;
    return st;
}

/* the decomposed Dslash (dslash_grid), on AUTO's route for the exchange
 * (tune_route) where there is a choice.  Collective. */
wd_status wd_cuda_be_dslash_grid(wd_backend *be, int variant, const wd_dslash_args *args,
                                 int block, const wd_field *in, int parity, wd_status pending)
{
    cuda_ctx *c = (cuda_ctx *)be->ctx;
    if (c->halo_policy == WD_HALO_AUTO && c->p2p)
        pending = tune_route(be, variant, args, block, in, parity, pending);
    return dslash_grid(be, variant, args, block, in, parity, pending);
}

/* how the last exchange's route was chosen: "" where there was no choice */
void wd_cuda_be_halo_tuning(const wd_backend *be, char *buf, size_t n)
{
    const cuda_ctx *c = (const cuda_ctx *)be->ctx;
    snprintf(buf, n, "%s", c && c->tuning ? c->tuning : "");
}

/* wd_backend_cuda_time_dslash's timing: per call, events before the
 * Dslash (exchange and kernel) and after it; the exchange ends at
 * c->ev_halo (on the comm stream when overlapped).  On a grid the timed
 * calls start together (an agreement after the 2 untimed ones): those
 * (the kernels' block tuning, AUTO's route, each rank's tune-cache
 * writes) leave the ranks apart, and a rank ahead of its neighbours keeps
 * its lead through every later call (each waits for their faces, hidden
 * behind its interior), which its exchange time would count.  Collective
 * on a grid: a failure is fed to the next call's exchange, which agrees
 * it, so that every rank stops at the same call. */
wd_status wd_cuda_be_time(wd_backend *be, int variant, const wd_dslash_args *args, int block,
                          const wd_field *in, int parity, int reps, double *us, double *halo_us)
{
    cudaStream_t s = (cudaStream_t)wd_cuda_stream();
    cudaEvent_t e[3] = {NULL, NULL, NULL};
    wd_status st = WD_OK;
    for (int k = 0; k < 3 && st == WD_OK; ++k)
        if (cudaEventCreate(&e[k]) != cudaSuccess)
            st = wd_fail(WD_ERR_CUDA, "CUDA backend: cudaEventCreate failed");
    std::vector<double> total, halo;
    cuda_ctx *c = (cuda_ctx *)be->ctx;
    const int grid = be->halo.ghost_sites > 0;
    for (int r = -2; r < reps; ++r) {
        if (r == 0)
            st = grid_agree(be, st);
        cudaError_t err = st == WD_OK ? cudaEventRecord(e[0], s) : cudaSuccess;
        if (err != cudaSuccess)
            st = wd_fail(WD_ERR_CUDA, "CUDA backend: timing %s: %s", wd_variants[variant].name,
                         cudaGetErrorString(err));
        if (grid)
            st = wd_cuda_be_dslash_grid(be, variant, args, block, in, parity, st);
        else if (st == WD_OK)
            st = wd_cuda_dslash_async(variant, args, block);
        if (st != WD_OK)
            break;
        if (err == cudaSuccess)
            err = cudaEventRecord(e[2], s);
        if (err == cudaSuccess)
            err = cudaEventSynchronize(e[2]);
        float t_all = 0, t_halo = 0;
        if (err == cudaSuccess)
            err = cudaEventElapsedTime(&t_all, e[0], e[2]);
        if (err == cudaSuccess && grid)
            err = cudaEventElapsedTime(&t_halo, e[0], c->ev_halo);
        if (err != cudaSuccess)
            st = wd_fail(WD_ERR_CUDA, "CUDA backend: timing %s: %s", wd_variants[variant].name,
                         cudaGetErrorString(err));
        else if (r >= 0) {
            total.push_back(1e3 * t_all);
            halo.push_back(1e3 * t_halo);
        }
    }
    for (int k = 0; k < 3; ++k)
        if (e[k])
            cudaEventDestroy(e[k]);
    if (st == WD_OK && total.empty())
        st = wd_fail(WD_ERR_INVALID, "CUDA backend: timing needs at least one repetition");
    if (st == WD_OK) {
        *us = median(total);
        *halo_us = median(halo);
    }
    return st;
}


/* out[i] = the n partials of every rank summed in rank order, as
 * wd_comm_sum adds them: gathered[i] + gathered[n + i] + ... */
__global__ void rank_sum_kernel(const double *gathered, int nranks, int n, double *out)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        double s = gathered[i];
        for (int r = 1; r < nranks; ++r)
            s += gathered[(size_t)r * n + i];
        out[i] = s;
    }
}

wd_status wd_backend_cuda_time_sum(wd_backend *be, int n, int reps, double *us_mpi,
                                   double *us_nccl, int *same)
{
    cuda_ctx *c = (cuda_ctx *)be->ctx;
    const int size = be->grid.size;
    wd_status st = c && c->nccl && size > 1 && n >= 1 && n <= 64 && reps > 0
                       ? WD_OK
                       : wd_fail(WD_ERR_INVALID, "sum timing: needs a CUDA backend's grid of "
                                 "several ranks with NCCL, 1 <= n <= 64 (%d), reps >= 1 (%d)", n,
                                 reps);
    /* dev: this rank's n partials, the ranks' size x n, the n sums */
    double *dev = NULL, *host = NULL;
    if (st == WD_OK)
        st = wd_cuda_malloc((void **)&dev, (size_t)(size + 2) * n * sizeof(double),
                            "the sum timing's buffers");
    if (st == WD_OK && cudaHostAlloc((void **)&host, 2 * (size_t)n * sizeof(double),
                                     cudaHostAllocDefault) != cudaSuccess) {
        host = NULL;
        st = wd_fail(WD_ERR_NOMEM, "sum timing: cudaHostAlloc of %d doubles failed", 2 * n);
    }
    /* partials of this rank, of magnitudes 2^-30 .. 2^29: sums that round */
    std::vector<double> part(n);
    for (int i = 0; i < n; ++i)
        part[i] = (1.0 + be->grid.rank) * ldexp(1.0 + 0.1234567 * i,
                                                (7 * i + 13 * be->grid.rank) % 60 - 30);
    if (st == WD_OK)
        st = wd_cuda_h2d(dev, part.data(), (size_t)n * sizeof(double));
    *same = 1;
    std::vector<double> tm, tn;
    cudaStream_t s = (cudaStream_t)wd_cuda_stream();
    /* every rank makes every collective call of a repetition; a failure is
     * agreed before the next one, and at the end */
    for (int r = -2; r < reps; ++r) {
        if ((st = grid_agree(be, st)) != WD_OK)
            break;
        /* today's path: the partials to the host, the stream synchronised,
         * MPI_Allgather and the rank-order sum (wd_comm_sum) */
        const auto t0 = std::chrono::steady_clock::now();
        cudaError_t err = cudaMemcpyAsync(host, dev, (size_t)n * sizeof(double),
                                          cudaMemcpyDeviceToHost, s);
        if (err == cudaSuccess)
            err = cudaStreamSynchronize(s);
        const wd_status m = wd_comm_sum(host, n);
        const auto t1 = std::chrono::steady_clock::now();
        /* on the device: ncclAllGather of the partials, the rank-order sum
         * in a kernel, the n sums to the host */
        const wd_status g = wd_nccl_allgather(c->nccl, dev, dev + n, (size_t)n * sizeof(double), s);
        if (err == cudaSuccess && g == WD_OK) {
            rank_sum_kernel<<<1, 64, 0, s>>>(dev + n, size, n, dev + (size_t)(size + 1) * n);
            err = cudaGetLastError();
        }
        if (err == cudaSuccess)
            err = cudaMemcpyAsync(host + n, dev + (size_t)(size + 1) * n,
                                  (size_t)n * sizeof(double), cudaMemcpyDeviceToHost, s);
        if (err == cudaSuccess)
            err = cudaStreamSynchronize(s);
        const auto t2 = std::chrono::steady_clock::now();
        st = m != WD_OK ? m : g;
        if (st == WD_OK && err != cudaSuccess)
            st = wd_fail(WD_ERR_CUDA, "sum timing: %s", cudaGetErrorString(err));
        if (st == WD_OK && r >= 0) {
            tm.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
            tn.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
            *same &= !memcmp(host, host + n, (size_t)n * sizeof(double));
        }
    }
    st = grid_agree(be, st);
    if (host)
        cudaFreeHost(host);
    wd_cuda_free(dev);
    if (st == WD_OK) {
        *us_mpi = median(tm);
        *us_nccl = median(tn);
    }
    return st;
}

wd_status wd_backend_cuda_time_exchange(wd_backend *be, int mu, size_t bytes, int reps, double *us)
{
    cuda_ctx *c = (cuda_ctx *)be->ctx;
    wd_status st = mu >= 0 && mu < 4 && be->halo.part[mu] && c && c->nccl && reps > 0
                       ? WD_OK
                       : wd_fail(WD_ERR_INVALID, "NCCL exchange timing: mu = %d is not a "
                                 "partitioned dimension of a CUDA backend's grid (or reps %d < 1)",
                                 mu, reps);
    char *buf = NULL;
    if (st == WD_OK)
        st = wd_cuda_malloc((void **)&buf, 4 * bytes, "the exchange timing buffers");
    if (st == WD_OK)
        st = wd_cuda_memset(buf, 0x5a, 4 * bytes);
    cudaEvent_t e0 = NULL, e1 = NULL;
    if (st == WD_OK && (cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess))
        st = wd_fail(WD_ERR_CUDA, "NCCL exchange timing: cudaEventCreate failed");
    if ((st = grid_agree(be, st)) == WD_OK) {
        cudaStream_t s = (cudaStream_t)wd_cuda_stream();
        wd_nccl_face f;
        f.mu = mu;
        f.bytes = bytes;
        f.send[WD_FWD] = buf;
        f.send[WD_BWD] = buf + bytes;
        f.recv[WD_FWD] = buf + 2 * bytes;
        f.recv[WD_BWD] = buf + 3 * bytes;
        std::vector<double> t;
        for (int r = -2; r < reps && st == WD_OK; ++r) {
            float ms = 0;
            cudaError_t err = cudaEventRecord(e0, s);
            if (err == cudaSuccess && (st = wd_nccl_halo(c->nccl, &be->grid, &f, 1, s)) != WD_OK)
                break;
            if (err == cudaSuccess)
                err = cudaEventRecord(e1, s);
            if (err == cudaSuccess)
                err = cudaEventSynchronize(e1);
            if (err == cudaSuccess)
                err = cudaEventElapsedTime(&ms, e0, e1);
            if (err != cudaSuccess)
                st = wd_fail(WD_ERR_CUDA, "NCCL exchange timing: %s", cudaGetErrorString(err));
            else if (r >= 0)
                t.push_back(1e3 * ms);
        }
        if (st == WD_OK)
            *us = median(t);
    }
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    wd_cuda_free(buf);
    return st;
}

}

