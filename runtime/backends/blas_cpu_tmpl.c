/*
 * blas_cpu_tmpl.c: the CPU backend's BLAS for fields of one precision, compiled
 * once per precision with -DWD_PREC=d|s|h (as layout_tmpl.c).
 *
 * The externally accessible definitions are (P = d, s, h)
 *   wd_blas_ops_P     the BLAS entries of a wd_backend_ops (wd_backend.h
 *                     documents each operation); every operand precision P
 *   wd_blas_load_P    one site as 24 doubles (internal basis), exactly
 *   wd_blas_store_P   24 doubles into one site
 *
 * Arithmetic in real_t: double for d, float for s and h.  Half precision
 * loads short * (norm * WD_HALF_INV_SCALE) and stores round(v * 32767 / m)
 * with m = max |v| of the site, as the generated Dslash kernels do; a site
 * holding NaN stores norm NaN, so the NaN survives the 16-bit format.
 * Reductions: each block of WD_REDUCE_BLOCK sites sums its sites in order
 * into doubles (products of the real_t values taken in double), the blocks
 * are summed in order afterwards: the same bits for any thread count.
 *  The fused steps (bicgstab_update, accumulate_xpay, residual_copy) run
 * on each site the operations they fuse, in turn, each with its own
 * entry's arithmetic: the accumulations wd_cpu_accumulate_site's (as
 * cpu_accumulate), the conversions of a copy wd_cpu_load / wd_cpu_store's
 * (as cpu_copy; within one precision the stored site itself), and a
 * later operation reads what an earlier one stored; their reductions in
 * REDUCE's order.  So they give the bits of the entries called one after
 * another, in one pass over the fields instead of two.
 */
#include <math.h>
#include <string.h>

#include "backend_cpu.h"
#include "wd_kernel.h"
#include "wd_physics.h"

#define WD_CAT_(a, b) a##_##b
#define WD_CAT(a, b) WD_CAT_(a, b)
#define PFN(f) WD_CAT(f, WD_PREC)

#define PREC_d 8
#define PREC_s 4
#define PREC_h 2
#define WD_PREC_BYTES WD_CAT(PREC, WD_PREC)

#if WD_PREC_BYTES == 8
typedef double store_t;
typedef double real_t;
#define W 2
#define HALF 0
#elif WD_PREC_BYTES == 4
typedef float store_t;
typedef float real_t;
#define W 4
#define HALF 0
#else
typedef short store_t;
typedef float real_t;
#define W 4
#define HALF 1
#endif

#define NR 24
/* below this many sites a parallel region costs more than the loop */
#define PARALLEL_MIN 2048

static inline void load(const wd_field *f, int cb, real_t v[NR])
{
    const store_t *p = (const store_t *)f->data;
    const size_t st = (size_t)f->stride;
#if HALF
    const float sc = f->norm[cb] * WD_HALF_INV_SCALE;
#endif
    for (int e = 0; e < NR / W; ++e)
        for (int w = 0; w < W; ++w) {
#if HALF
            v[e * W + w] = (float)p[(e * st + cb) * W + w] * sc;
#else
            v[e * W + w] = p[(e * st + cb) * W + w];
#endif
        }
}

static inline void store(wd_field *f, int cb, const real_t v[NR])
{
    store_t *p = (store_t *)f->data;
    const size_t st = (size_t)f->stride;
#if HALF
    float nrm = 0;
    int nan = 0;
    for (int r = 0; r < NR; ++r) {
        nrm = fmaxf(nrm, fabsf(v[r]));
        nan |= isnan(v[r]);
    }
    if (nan || isinf(nrm)) {
        for (int e = 0; e < NR / W; ++e)
            for (int w = 0; w < W; ++w)
                p[(e * st + cb) * W + w] = 0;
        f->norm[cb] = NAN;
        return;
    }
    const float sc = nrm > 0 ? (float)WD_HALF_SCALE / nrm : 0.0f;
    for (int e = 0; e < NR / W; ++e)
        for (int w = 0; w < W; ++w)
            p[(e * st + cb) * W + w] = wd_round_short(v[e * W + w] * sc);
    f->norm[cb] = nrm;
#else
    for (int e = 0; e < NR / W; ++e)
        for (int w = 0; w < W; ++w)
            p[(e * st + cb) * W + w] = (store_t)v[e * W + w];
#endif
}

/* exact: half's scale taken in double, as wd_unpack_spinor does */
void PFN(wd_blas_load)(const wd_field *f, int cb, double v[24])
{
#if HALF
    const store_t *p = (const store_t *)f->data;
    const size_t st = (size_t)f->stride;
    const double sc = f->norm[cb] / (double)WD_HALF_SCALE;
    for (int e = 0; e < NR / W; ++e)
        for (int w = 0; w < W; ++w)
            v[e * W + w] = sc * p[(e * st + cb) * W + w];
#else
    real_t t[NR];
    load(f, cb, t);
    for (int r = 0; r < NR; ++r)
        v[r] = t[r];
#endif
}

void PFN(wd_blas_store)(wd_field *f, int cb, const double v[24])
{
    real_t t[NR];
    for (int r = 0; r < NR; ++r)
        t[r] = (real_t)v[r];
    store(f, cb, t);
}

/* Every site, OpenMP over sites; the body sees `cb`. */
#define MAP(V, ...)                                                           \
    do {                                                                      \
        const int n_ = (V);                                                   \
        _Pragma("omp parallel for schedule(static) if (n_ >= PARALLEL_MIN)")  \
        for (int cb = 0; cb < n_; ++cb) {                                     \
            __VA_ARGS__                                                       \
        }                                                                     \
    } while (0)

/* Reduction of NRES doubles into out[]: the body adds site cb's share to
 * acc[]; blocks in parallel, then the block sums in block order, then (on
 * a process grid) the ranks' sums in rank order. */
#define REDUCE(be, V, NRES, out, ...)                                         \
    do {                                                                      \
        double *part_ = ((wd_cpu_ctx *)(be)->ctx)->scratch;                   \
        const int n_ = (V);                                                   \
        const int nblk_ = (n_ + WD_REDUCE_BLOCK - 1) / WD_REDUCE_BLOCK;       \
        _Pragma("omp parallel for schedule(static) if (n_ >= PARALLEL_MIN)")  \
        for (int b_ = 0; b_ < nblk_; ++b_) {                                  \
            double acc[NRES] = {0};                                           \
            const int end_ = b_ * WD_REDUCE_BLOCK + WD_REDUCE_BLOCK < n_      \
                                 ? b_ * WD_REDUCE_BLOCK + WD_REDUCE_BLOCK     \
                                 : n_;                                        \
            for (int cb = b_ * WD_REDUCE_BLOCK; cb < end_; ++cb) {            \
                __VA_ARGS__                                                   \
            }                                                                 \
            for (int i_ = 0; i_ < (NRES); ++i_)                               \
                part_[(NRES) * b_ + i_] = acc[i_];                            \
        }                                                                     \
        for (int i_ = 0; i_ < (NRES); ++i_) {                                 \
            out[i_] = 0;                                                      \
            for (int b_ = 0; b_ < nblk_; ++b_)                                \
                out[i_] += part_[(NRES) * b_ + i_];                           \
        }                                                                     \
        wd_backend_allsum((be), out, (NRES));                                 \
    } while (0)

static void op_zero(wd_backend *be, wd_field *y)
{
    (void)be;
    const real_t z[NR] = {0};
    MAP(y->volume_cb, store(y, cb, z););
}

static void op_ax(wd_backend *be, double a, wd_field *x)
{
    (void)be;
    const real_t ar = (real_t)a;
    MAP(x->volume_cb, real_t v[NR]; load(x, cb, v);
        for (int r = 0; r < NR; ++r) v[r] *= ar;
        store(x, cb, v););
}

static void op_axpy(wd_backend *be, double a, const wd_field *x, wd_field *y)
{
    (void)be;
    const real_t ar = (real_t)a;
    MAP(y->volume_cb, real_t u[NR]; real_t v[NR]; load(x, cb, u); load(y, cb, v);
        for (int r = 0; r < NR; ++r) v[r] += ar * u[r];
        store(y, cb, v););
}

static void op_xpay(wd_backend *be, const wd_field *x, double a, wd_field *y)
{
    (void)be;
    const real_t ar = (real_t)a;
    MAP(y->volume_cb, real_t u[NR]; real_t v[NR]; load(x, cb, u); load(y, cb, v);
        for (int r = 0; r < NR; ++r) v[r] = u[r] + ar * v[r];
        store(y, cb, v););
}

static void op_axpy_zpbx(wd_backend *be, double a, wd_field *x, wd_field *y,
                         const wd_field *z, double b)
{
    (void)be;
    const real_t ar = (real_t)a, br = (real_t)b;
    MAP(y->volume_cb, real_t u[NR]; real_t v[NR]; real_t w[NR];
        load(x, cb, u); load(y, cb, v); load(z, cb, w);
        for (int r = 0; r < NR; ++r) {
            v[r] += ar * u[r];
            u[r] = w[r] + br * u[r];
        }
        store(y, cb, v); store(x, cb, u););
}

/* v += (ar + i ai) u, complex pairs (re, im) */
static inline void cmadd(real_t v[NR], real_t ar, real_t ai, const real_t u[NR])
{
    for (int j = 0; j < NR; j += 2) {
        const real_t ur = u[j], ui = u[j + 1];
        v[j] += ar * ur - ai * ui;
        v[j + 1] += ar * ui + ai * ur;
    }
}

static void op_caxpy(wd_backend *be, wd_complex a, const wd_field *x, wd_field *y)
{
    (void)be;
    const real_t ar = (real_t)a.re, ai = (real_t)a.im;
    MAP(y->volume_cb, real_t u[NR]; real_t v[NR]; load(x, cb, u); load(y, cb, v);
        cmadd(v, ar, ai, u);
        store(y, cb, v););
}

static void op_caxpbypz(wd_backend *be, wd_complex a, const wd_field *x, wd_complex b,
                        const wd_field *y, wd_field *z)
{
    (void)be;
    const real_t ar = (real_t)a.re, ai = (real_t)a.im;
    const real_t br = (real_t)b.re, bi = (real_t)b.im;
    MAP(z->volume_cb, real_t u[NR]; real_t v[NR]; real_t w[NR];
        load(x, cb, u); load(y, cb, v); load(z, cb, w);
        cmadd(w, ar, ai, u);
        cmadd(w, br, bi, v);
        store(z, cb, w););
}

static void op_cxpaypbz(wd_backend *be, const wd_field *x, wd_complex a, const wd_field *y,
                        wd_complex b, wd_field *z)
{
    (void)be;
    const real_t ar = (real_t)a.re, ai = (real_t)a.im;
    const real_t br = (real_t)b.re, bi = (real_t)b.im;
    MAP(z->volume_cb, real_t u[NR]; real_t v[NR]; real_t w[NR]; real_t o[NR];
        load(x, cb, u); load(y, cb, v); load(z, cb, w);
        for (int r = 0; r < NR; ++r) o[r] = u[r];
        cmadd(o, ar, ai, v);
        cmadd(o, br, bi, w);
        store(z, cb, o););
}

static inline double site_norm2(const real_t v[NR])
{
    double s = 0;
    for (int r = 0; r < NR; ++r)
        s += (double)v[r] * (double)v[r];
    return s;
}

/* acc[0] += Re <u, v>, acc[1] += Im <u, v> */
static inline void site_cdot(double acc[2], const real_t u[NR], const real_t v[NR])
{
    for (int j = 0; j < NR; j += 2) {
        const double ur = u[j], ui = u[j + 1], vr = v[j], vi = v[j + 1];
        acc[0] += ur * vr + ui * vi;
        acc[1] += ur * vi - ui * vr;
    }
}

static double op_norm2(wd_backend *be, const wd_field *x)
{
    double res[1];
    REDUCE(be, x->volume_cb, 1, res, real_t v[NR]; load(x, cb, v);
           acc[0] += site_norm2(v););
    return res[0];
}

static wd_complex op_cdot(wd_backend *be, const wd_field *x, const wd_field *y)
{
    double res[2];
    REDUCE(be, x->volume_cb, 2, res, real_t u[NR]; real_t v[NR];
           load(x, cb, u); load(y, cb, v);
           site_cdot(acc, u, v););
    return (wd_complex){res[0], res[1]};
}

static double op_axpy_norm2(wd_backend *be, double a, const wd_field *x, wd_field *y)
{
    const real_t ar = (real_t)a;
    double res[1];
    REDUCE(be, y->volume_cb, 1, res, real_t u[NR]; real_t v[NR];
           load(x, cb, u); load(y, cb, v);
           for (int r = 0; r < NR; ++r) v[r] += ar * u[r];
           acc[0] += site_norm2(v);
           store(y, cb, v););
    return res[0];
}

static double op_xpay_norm2(wd_backend *be, const wd_field *x, double a, wd_field *y)
{
    const real_t ar = (real_t)a;
    double res[1];
    REDUCE(be, y->volume_cb, 1, res, real_t u[NR]; real_t v[NR];
           load(x, cb, u); load(y, cb, v);
           for (int r = 0; r < NR; ++r) v[r] = u[r] + ar * v[r];
           acc[0] += site_norm2(v);
           store(y, cb, v););
    return res[0];
}

static double op_caxpy_norm2(wd_backend *be, wd_complex a, const wd_field *x, wd_field *y)
{
    const real_t ar = (real_t)a.re, ai = (real_t)a.im;
    double res[1];
    REDUCE(be, y->volume_cb, 1, res, real_t u[NR]; real_t v[NR];
           load(x, cb, u); load(y, cb, v);
           cmadd(v, ar, ai, u);
           acc[0] += site_norm2(v);
           store(y, cb, v););
    return res[0];
}

static void op_cdot_norm2(wd_backend *be, const wd_field *x, const wd_field *y, double out[3])
{
    REDUCE(be, x->volume_cb, 3, out, real_t u[NR]; real_t v[NR];
           load(x, cb, u); load(y, cb, v);
           site_cdot(acc, u, v);
           acc[2] += site_norm2(u););
}

static void op_caxpy_norm2_cdot(wd_backend *be, wd_complex a, const wd_field *x, wd_field *y,
                                const wd_field *z, double out[3])
{
    const real_t ar = (real_t)a.re, ai = (real_t)a.im;
    REDUCE(be, y->volume_cb, 3, out, real_t u[NR]; real_t v[NR]; real_t w[NR];
           load(x, cb, u); load(y, cb, v); load(z, cb, w);
           cmadd(v, ar, ai, u);
           acc[0] += site_norm2(v);
           site_cdot(acc + 1, w, v);
           store(y, cb, v););
}

/* BiCGstab's update (wd_backend.h): z += a x + b y (caxpbypz, or
 * accumulate where z has another precision), then y += -b w with |y|^2 and
 * <u, y> (caxpy_norm2_cdot) */
static void op_bicgstab_update(wd_backend *be, wd_complex a, const wd_field *x, wd_complex b,
                               wd_field *y, wd_field *z, const wd_field *w, const wd_field *u,
                               double out[3])
{
    const wd_complex mb = {-b.re, -b.im};
    const real_t ar = (real_t)a.re, ai = (real_t)a.im, br = (real_t)b.re, bi = (real_t)b.im;
    const real_t mbr = (real_t)mb.re, mbi = (real_t)mb.im;
    const int same = z->precision == WD_PREC_BYTES;
    REDUCE(be, y->volume_cb, 3, out, real_t vx[NR]; real_t vy[NR]; real_t vz[NR];
           if (same) {
               load(x, cb, vx); load(y, cb, vy); load(z, cb, vz);
               cmadd(vz, ar, ai, vx);
               cmadd(vz, br, bi, vy);
               store(z, cb, vz);
           } else {
               double dx[NR], dy[NR], dz[NR];
               PFN(wd_blas_load)(x, cb, dx); PFN(wd_blas_load)(y, cb, dy);
               wd_cpu_load(z, cb, dz);
               wd_cpu_accumulate_site(dz, a, dx, b, dy);
               wd_cpu_store(z, cb, dz);
           }
           load(w, cb, vx); load(y, cb, vy); load(u, cb, vz);
           cmadd(vy, mbr, mbi, vx);
           acc[0] += site_norm2(vy);
           site_cdot(acc + 1, vz, vy);
           store(y, cb, vy););
}

/* CG's step into an accumulator z of any precision: z += a x (accumulate
 * without y), then x = y + b x (xpay) */
static void op_accumulate_xpay(wd_backend *be, wd_complex a, wd_field *x, const wd_field *y,
                               wd_field *z, double b)
{
    (void)be;
    const wd_complex zero = {0, 0};
    const real_t br = (real_t)b;
    MAP(x->volume_cb, double dx[NR]; double dz[NR]; const double d0[NR] = {0};
        real_t vx[NR]; real_t vy[NR];
        PFN(wd_blas_load)(x, cb, dx); wd_cpu_load(z, cb, dz);
        wd_cpu_accumulate_site(dz, a, dx, zero, d0);
        wd_cpu_store(z, cb, dz);
        load(y, cb, vy); load(x, cb, vx);
        for (int r = 0; r < NR; ++r) vx[r] = vy[r] + br * vx[r];
        store(x, cb, vx););
}

/* one site of z = y within one precision: the stored values themselves, as
 * a copy of the field's memory */
static inline void copy_site(wd_field *z, const wd_field *y, int cb)
{
    const store_t *py = (const store_t *)y->data;
    store_t *pz = (store_t *)z->data;
    for (int e = 0; e < NR / W; ++e)
        for (int w = 0; w < W; ++w)
            pz[(e * (size_t)z->stride + cb) * W + w] = py[(e * (size_t)y->stride + cb) * W + w];
#if HALF
    z->norm[cb] = y->norm[cb];
#endif
}

/* y = x + a y with |y|^2 (xpay_norm2), or |y|^2 alone where x is NULL
 * (norm2), then z = y (copy; none where z is NULL or y's memory) */
static void op_residual_copy(wd_backend *be, const wd_field *x, double a, wd_field *y,
                             wd_field *z, double out[3])
{
    const real_t ar = (real_t)a;
    const int copy = z && z->data != y->data, same = copy && z->precision == WD_PREC_BYTES;
    double res[1];
    REDUCE(be, y->volume_cb, 1, res, real_t vx[NR]; real_t vy[NR];
           load(y, cb, vy);
           if (x) {
               load(x, cb, vx);
               for (int r = 0; r < NR; ++r) vy[r] = vx[r] + ar * vy[r];
           }
           acc[0] += site_norm2(vy);
           if (x) store(y, cb, vy);
           if (same) {
               copy_site(z, y, cb);
           } else if (copy) {
               double d[NR];
               PFN(wd_blas_load)(y, cb, d);
               wd_cpu_store(z, cb, d);
           });
    out[0] = res[0];
    out[1] = out[2] = 0;
}

/* y read once: its site's products with each x[i] in one pass (k <=
 * WD_BLAS_MULTI: 2 k doubles reduced, WD_CPU_REDUCE_RES at most) */
static void op_multi_cdot(wd_backend *be, int k, const wd_field *const *x, const wd_field *y,
                          double *out)
{
    double res[WD_CPU_REDUCE_RES];
    REDUCE(be, y->volume_cb, WD_CPU_REDUCE_RES, res, real_t u[NR]; real_t v[NR];
           load(y, cb, v);
           for (int i = 0; i < k; ++i) {
               load(x[i], cb, u);
               site_cdot(acc + 2 * i, u, v);
           });
    memcpy(out, res, 2 * (size_t)k * sizeof *out);
}

static void op_multi_caxpy(wd_backend *be, int k, const wd_complex *a, const wd_field *const *x,
                           wd_field *y)
{
    (void)be;
    real_t ar[WD_BLAS_MULTI], ai[WD_BLAS_MULTI];
    for (int i = 0; i < k; ++i)
        ar[i] = (real_t)a[i].re, ai[i] = (real_t)a[i].im;
    MAP(y->volume_cb, real_t u[NR]; real_t v[NR]; load(y, cb, v);
        for (int i = 0; i < k; ++i) {
            load(x[i], cb, u);
            cmadd(v, ar[i], ai[i], u);
        }
        store(y, cb, v););
}

const wd_backend_ops PFN(wd_blas_ops) = {
    .zero = op_zero,
    .ax = op_ax,
    .axpy = op_axpy,
    .xpay = op_xpay,
    .axpy_zpbx = op_axpy_zpbx,
    .caxpy = op_caxpy,
    .caxpbypz = op_caxpbypz,
    .cxpaypbz = op_cxpaypbz,
    .norm2 = op_norm2,
    .cdot = op_cdot,
    .axpy_norm2 = op_axpy_norm2,
    .xpay_norm2 = op_xpay_norm2,
    .caxpy_norm2 = op_caxpy_norm2,
    .cdot_norm2 = op_cdot_norm2,
    .caxpy_norm2_cdot = op_caxpy_norm2_cdot,
    .multi_cdot = op_multi_cdot,
    .multi_caxpy = op_multi_caxpy,
    .bicgstab_update = op_bicgstab_update,
    .accumulate_xpay = op_accumulate_xpay,
    .residual_copy = op_residual_copy,
};
