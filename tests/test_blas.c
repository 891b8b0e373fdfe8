/*
 * test_blas: every BLAS operation of the CPU backend (wd_backend.h), in
 * every precision, against double-precision host loops, and the bitwise
 * reproducibility of its reductions.
 *
 *   test_blas [--seed N] [--backend cpu|cuda]   (default seed: the time, printed;
 *                                               exit 77 when the backend is absent)
 *
 * For each lattice and precision: random fields are uploaded and
 * downloaded again, so the host reference starts from exactly the stored
 * values (the DeGrand-Rossi <-> internal basis change is unitary, so sums,
 * norms and dot products do not depend on the basis).  Each operation runs
 * on the backend and on the host; outputs are compared in relative L2 norm,
 * reductions relative to the product of the operands' norms.  Tolerances
 * (per precision, with their reason):
 *   fields      d 1e-14 (one rounding), s 1e-6 (float arithmetic, ~6e-8 per
 *               operation), h 2e-4 (16-bit fixed point: 2^-15 of the site's
 *               largest component per store, ~1.5e-5 in L2, plus float)
 *   reductions  products and sums are taken in double of the values as
 *               loaded: 1e-12 for double and single (compared with the
 *               reduction of what was stored), 1e-6 for half (the load
 *               rounds short * norm / 32767 to float, 6e-8 per component);
 *               fused reductions of half fields reduce the float values
 *               before the 16-bit store: 2e-4
 *   copy        exact into double or the same precision (1e-14: the basis
 *               change's rounding in the reference), else the destination's
 *               tolerance
 *   accumulate  (z += a x + b y, z of any precision, x and y of any other)
 *               the destination's field tolerance
 * Pair transfers: both parities of a host-layout array in one call
 * (wd_upload_pair / wd_download_pair; on the GPU converted there, and also
 * from and to device memory) hold the bits of the per-parity upload and
 * download (exact: the same arithmetic in the same order), poisoned with
 * 1e30 first; the device scan's norm (1e-13) and first non-finite entry.
 * On the GPU also through a gauge transformation (wd_spinor_gauge): the
 * bits of the host's wd_spinor_transform before the upload and after the
 * download; the CPU backend refuses one with a clear message.
 * Reproducibility: each reduction twice, then with 1 and with 2 OpenMP
 * threads, on lattices of several reduction blocks: identical bits required.
 * Lanes (wd_blas_lanes, the lock-step solvers' BLAS): every operation on 4
 * of 5 right-hand sides of multi-fields equals the one-lane operation on
 * each, bit for bit, and every fused step (one pass: the CPU's fused table
 * entries, the GPU's fused kernels) the unfused one-lane entries it
 * replaces, in turn, with its z (accumulator, copy) of each precision it
 * takes (test_lanes).
 * One line per check; "N of M failed" last; exit 0 when all pass.
 */
#include <complex.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_rt.h"
#include "gauge_tools.h"
#include "test_backend.h"
#include "wd_backend.h"

/* --backend cpu|cuda: the backend under test (exit 77 when it is absent) */
static wd_backend_kind backend = WD_BACKEND_CPU;
static int checks_run, checks_failed;

static void check(const char *what, double err, double tol)
{
    const int ok = err <= tol;
    checks_run++;
    checks_failed += !ok;
    printf("%-58s %s err=%.2e tol=%.0e\n", what, ok ? "OK  " : "FAIL", err, tol);
}

static void *xalloc(size_t n)
{
    void *p = calloc(1, n);
    if (!p) {
        fprintf(stderr, "test_blas: out of memory\n");
        exit(1);
    }
    return p;
}

static const char *pname(int p)
{
    return p == 8 ? "double" : p == 4 ? "single" : "half";
}

static double field_tol(int p)
{
    return p == 8 ? 1e-14 : p == 4 ? 1e-6 : 2e-4;
}

typedef struct ctx {
    wd_backend be;
    int dims[4];
    size_t n;                   /* complex numbers in a host field */
    int precision;
    wd_field f[4];              /* x, y, z, spare */
    double complex *h[4];       /* host copies of what the fields hold */
    double complex *want, *got;
} ctx;

static void die(const char *what, wd_status st)
{
    fprintf(stderr, "test_blas: %s: %s: %s\n", what, wd_status_string(st), wd_last_error());
    exit(1);
}

static void download(ctx *c, int i, double complex *host)
{
    memset(host, 0, c->n * sizeof *host);
    wd_status st = c->be.ops->download(&c->be, (double *)host, &c->f[i], 0);
    if (st != WD_OK)
        die("download", st);
}

/* fresh random contents for field i, host copy = what was stored */
static void randomize(ctx *c, int i, wd_rng *r)
{
    wd_spinor_random(c->got, c->dims, r);
    wd_status st = c->be.ops->upload(&c->be, &c->f[i], (const double *)c->got, 0);
    if (st != WD_OK)
        die("upload", st);
    download(c, i, c->h[i]);
}

static double norm2(const double complex *a, size_t n)
{
    double s = 0;
    for (size_t k = 0; k < n; k++)
        s += creal(a[k]) * creal(a[k]) + cimag(a[k]) * cimag(a[k]);
    return s;
}

static double complex dot(const double complex *a, const double complex *b, size_t n)
{
    double complex s = 0;
    for (size_t k = 0; k < n; k++)
        s += conj(a[k]) * b[k];
    return s;
}

/* compare field i with c->want; c->got keeps what field i holds */
static void check_field(ctx *c, int i, const char *op)
{
    download(c, i, c->got);
    double d = 0;
    for (size_t k = 0; k < c->n; k++) {
        const double complex e = c->got[k] - c->want[k];
        d += creal(e) * creal(e) + cimag(e) * cimag(e);
    }
    const double nw = norm2(c->want, c->n);
    char what[128];
    snprintf(what, sizeof what, "%dx%dx%dx%d %-6s %s", c->dims[0], c->dims[1], c->dims[2],
             c->dims[3], pname(c->precision), op);
    check(what, nw > 0 ? sqrt(d / nw) : INFINITY, field_tol(c->precision));
}

static void check_scalar(ctx *c, const char *op, double complex got, double complex want,
                         double scale, int fused)
{
    char what[128];
    snprintf(what, sizeof what, "%dx%dx%dx%d %-6s %s", c->dims[0], c->dims[1], c->dims[2],
             c->dims[3], pname(c->precision), op);
    const double tol = c->precision != 2 ? 1e-12 : fused ? 2e-4 : 1e-6;
    check(what, scale > 0 ? cabs(got - want) / scale : INFINITY, tol);
}

static double complex rnd_c(wd_rng *r)
{
    return CMPLX(wd_rng_normal(r), wd_rng_normal(r));
}

/* multi_cdot and multi_caxpy (GCR's Gram-Schmidt, y read once) on
 * WD_BLAS_MULTI + 3 fields x (x, z and the spare, repeated: pieces of
 * WD_BLAS_MULTI and a short one) against the host: the dots each to the
 * reductions' tolerance and with cdot's bits (the same per-thread and
 * block order), y to the field tolerance */
static void test_multi(ctx *c, wd_rng *r)
{
    wd_backend *be = &c->be;
    enum { K = WD_BLAS_MULTI + 3 };
    static const int pick[3] = {0, 2, 3};
    randomize(c, 3, r);
    const wd_field *xs[K];
    const double complex *hs[K];
    wd_complex a[K];
    double dots[2 * K];
    for (int i = 0; i < K; ++i) {
        xs[i] = &c->f[pick[i % 3]];
        hs[i] = c->h[pick[i % 3]];
        a[i] = (wd_complex){wd_rng_normal(r), wd_rng_normal(r)};
    }
    for (int i = 0; i < 2 * K; ++i)
        dots[i] = NAN;
    wd_blas_multi_cdot(be, K, xs, &c->f[1], dots);
    const double ny = sqrt(norm2(c->h[1], c->n));
    double worst = 0, same = 0;
    for (int i = 0; i < K; ++i) {
        const double complex want = dot(hs[i], c->h[1], c->n);
        const double e = cabs(CMPLX(dots[2 * i], dots[2 * i + 1]) - want) /
                         (sqrt(norm2(hs[i], c->n)) * ny);
        worst = e > worst || isnan(e) ? e : worst;
        const wd_complex one = be->ops->cdot(be, xs[i], &c->f[1]);
        same += one.re != dots[2 * i] || one.im != dots[2 * i + 1];
    }
    check_scalar(c, "multi_cdot (worst <x_i,y>)", worst, 0, 1, 0);
    char what[128];
    snprintf(what, sizeof what, "%dx%dx%dx%d %-6s multi_cdot: cdot's bits (fields differing)",
             c->dims[0], c->dims[1], c->dims[2], c->dims[3], pname(c->precision));
    check(what, same, 0);

    /* y accumulates in the arithmetic precision over K terms: K times the
     * one-operation tolerance */
    wd_blas_multi_caxpy(be, K, a, xs, &c->f[1]);
    for (size_t k = 0; k < c->n; k++) {
        double complex v = c->h[1][k];
        for (int i = 0; i < K; ++i)
            v += CMPLX(a[i].re, a[i].im) * hs[i][k];
        c->want[k] = v;
    }
    download(c, 1, c->got);
    double d = 0;
    for (size_t k = 0; k < c->n; k++) {
        const double complex e = c->got[k] - c->want[k];
        d += creal(e) * creal(e) + cimag(e) * cimag(e);
    }
    const double nw = norm2(c->want, c->n);
    snprintf(what, sizeof what, "%dx%dx%dx%d %-6s multi_caxpy (%d fields)", c->dims[0],
             c->dims[1], c->dims[2], c->dims[3], pname(c->precision), (int)K);
    check(what, nw > 0 ? sqrt(d / nw) : INFINITY, K * field_tol(c->precision));
    randomize(c, 1, r);
}

static void test_ops(ctx *c, wd_rng *r)
{
    wd_backend *be = &c->be;
    wd_field *x = &c->f[0], *y = &c->f[1], *z = &c->f[2];
    const size_t n = c->n;
    double complex *hx = c->h[0], *hy = c->h[1], *hz = c->h[2], *w = c->want;
    const double a = wd_rng_normal(r), b = wd_rng_normal(r);
    const double complex ca = rnd_c(r), cb = rnd_c(r);
    const wd_complex wa = {creal(ca), cimag(ca)}, wb = {creal(cb), cimag(cb)};

    for (int i = 0; i < 3; i++)
        randomize(c, i, r);
    if (!(norm2(hx, n) > 0 && norm2(hy, n) > 0 && norm2(hz, n) > 0)) {
        check("random fields are non-zero", INFINITY, 0);
        return;
    }

    be->ops->ax(be, a, y);
    for (size_t k = 0; k < n; k++) w[k] = a * hy[k];
    check_field(c, 1, "ax");
    randomize(c, 1, r);

    be->ops->axpy(be, a, x, y);
    for (size_t k = 0; k < n; k++) w[k] = a * hx[k] + hy[k];
    check_field(c, 1, "axpy");
    randomize(c, 1, r);

    be->ops->xpay(be, x, a, y);
    for (size_t k = 0; k < n; k++) w[k] = hx[k] + a * hy[k];
    check_field(c, 1, "xpay");
    randomize(c, 1, r);

    /* axpy_zpbx: y += a x; x = z + b x (two outputs) */
    be->ops->axpy_zpbx(be, a, x, y, z, b);
    for (size_t k = 0; k < n; k++) w[k] = hy[k] + a * hx[k];
    check_field(c, 1, "axpy_zpbx (y = y + a x)");
    for (size_t k = 0; k < n; k++) w[k] = hz[k] + b * hx[k];
    check_field(c, 0, "axpy_zpbx (x = z + b x)");
    randomize(c, 0, r);
    randomize(c, 1, r);

    be->ops->caxpy(be, wa, x, y);
    for (size_t k = 0; k < n; k++) w[k] = ca * hx[k] + hy[k];
    check_field(c, 1, "caxpy");
    randomize(c, 1, r);

    be->ops->caxpbypz(be, wa, x, wb, y, z);
    for (size_t k = 0; k < n; k++) w[k] = hz[k] + ca * hx[k] + cb * hy[k];
    check_field(c, 2, "caxpbypz");
    randomize(c, 2, r);

    be->ops->cxpaypbz(be, x, wa, y, wb, z);
    for (size_t k = 0; k < n; k++) w[k] = hx[k] + ca * hy[k] + cb * hz[k];
    check_field(c, 2, "cxpaypbz");
    randomize(c, 2, r);

    const double nx = sqrt(norm2(hx, n)), ny = sqrt(norm2(hy, n)), nz = sqrt(norm2(hz, n));
    check_scalar(c, "norm2", be->ops->norm2(be, x), norm2(hx, n), nx * nx, 0);
    wd_complex d = be->ops->cdot(be, x, y);
    check_scalar(c, "cdot", CMPLX(d.re, d.im), dot(hx, hy, n), nx * ny, 0);

    double res[3];
    be->ops->cdot_norm2(be, x, y, res);
    check_scalar(c, "cdot_norm2 (<x,y>)", CMPLX(res[0], res[1]), dot(hx, hy, n), nx * ny, 0);
    check_scalar(c, "cdot_norm2 (|x|^2)", res[2], norm2(hx, n), nx * nx, 0);

    double s = be->ops->axpy_norm2(be, a, x, y);
    for (size_t k = 0; k < n; k++) w[k] = a * hx[k] + hy[k];
    check_field(c, 1, "axpy_norm2 (field)");
    check_scalar(c, "axpy_norm2 (|y|^2)", s, norm2(c->got, n), norm2(w, n), 1);
    randomize(c, 1, r);

    s = be->ops->xpay_norm2(be, x, a, y);
    for (size_t k = 0; k < n; k++) w[k] = hx[k] + a * hy[k];
    check_field(c, 1, "xpay_norm2 (field)");
    check_scalar(c, "xpay_norm2 (|y|^2)", s, norm2(c->got, n), norm2(w, n), 1);
    randomize(c, 1, r);

    s = be->ops->caxpy_norm2(be, wa, x, y);
    for (size_t k = 0; k < n; k++) w[k] = ca * hx[k] + hy[k];
    check_field(c, 1, "caxpy_norm2 (field)");
    check_scalar(c, "caxpy_norm2 (|y|^2)", s, norm2(c->got, n), norm2(w, n), 1);
    randomize(c, 1, r);

    be->ops->caxpy_norm2_cdot(be, wa, x, y, z, res);
    for (size_t k = 0; k < n; k++) w[k] = ca * hx[k] + hy[k];
    check_field(c, 1, "caxpy_norm2_cdot (field)");
    check_scalar(c, "caxpy_norm2_cdot (|y|^2)", res[0], norm2(c->got, n), norm2(w, n), 1);
    check_scalar(c, "caxpy_norm2_cdot (<z,y>)", CMPLX(res[1], res[2]), dot(hz, c->got, n),
                 nz * sqrt(norm2(w, n)), 1);
    randomize(c, 1, r);

    test_multi(c, r);

    be->ops->zero(be, y);
    download(c, 1, c->got);
    char what[128];
    snprintf(what, sizeof what, "%dx%dx%dx%d %-6s zero", c->dims[0], c->dims[1], c->dims[2],
             c->dims[3], pname(c->precision));
    check(what, sqrt(norm2(c->got, n)) + be->ops->norm2(be, y), 0);
    randomize(c, 1, r);
    if (be->error != WD_OK)
        check("backend recorded no error", 1, 0);
}

/* The reductions' bits: twice, then with 1 and with 2 threads.  Mutating
 * fused reductions restart from a saved copy each time. */
typedef struct bits {
    double v[12];
} bits;

static bits reductions(ctx *c, const wd_field *save_y)
{
    wd_backend *be = &c->be;
    wd_field *x = &c->f[0], *y = &c->f[1], *z = &c->f[2];
    const wd_complex a = {0.37, -1.21};
    bits b;
    b.v[0] = be->ops->norm2(be, x);
    wd_complex d = be->ops->cdot(be, x, y);
    b.v[1] = d.re;
    b.v[2] = d.im;
    be->ops->cdot_norm2(be, x, y, b.v + 3);
    b.v[6] = be->ops->caxpy_norm2(be, a, x, y);
    be->ops->copy(be, y, save_y);
    be->ops->caxpy_norm2_cdot(be, a, x, y, z, b.v + 7);
    be->ops->copy(be, y, save_y);
    b.v[10] = be->ops->axpy_norm2(be, 0.5, x, y);
    be->ops->copy(be, y, save_y);
    b.v[11] = be->ops->xpay_norm2(be, x, -0.25, y);
    be->ops->copy(be, y, save_y);
    return b;
}

static void test_reproducible(ctx *c)
{
    wd_backend *be = &c->be;
    be->ops->copy(be, &c->f[3], &c->f[1]);
    const int threads = omp_get_max_threads();
    const bits first = reductions(c, &c->f[3]);
    const bits again = reductions(c, &c->f[3]);
    omp_set_num_threads(1);
    const bits one = reductions(c, &c->f[3]);
    omp_set_num_threads(2);
    const bits two = reductions(c, &c->f[3]);
    omp_set_num_threads(threads);
    char what[128];
    snprintf(what, sizeof what, "%dx%dx%dx%d %-6s reductions: same bits twice", c->dims[0],
             c->dims[1], c->dims[2], c->dims[3], pname(c->precision));
    check(what, memcmp(&first, &again, sizeof first) ? 1 : 0, 0);
    snprintf(what, sizeof what, "%dx%dx%dx%d %-6s reductions: 1 = 2 = %d threads",
             c->dims[0], c->dims[1], c->dims[2], c->dims[3], pname(c->precision), threads);
    check(what, memcmp(&one, &two, sizeof one) || memcmp(&one, &first, sizeof one) ? 1 : 0, 0);
}

/* copy between every pair of precisions */
static void test_copy(const int dims[4], wd_rng *r)
{
    static const int precs[3] = {8, 4, 2};
    wd_backend be;
    wd_status st = wd_backend_open(&be, backend, dims, 3);
    if (st != WD_OK)
        die("backend", st);
    const size_t n = wd_volume(dims) * 12;
    double complex *h = xalloc(n * sizeof *h), *src = xalloc(n * sizeof *h);
    double complex *dst = xalloc(n * sizeof *h);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            wd_field fx, fy;
            if ((st = wd_field_create(&be, &fx, precs[i])) != WD_OK ||
                (st = wd_field_create(&be, &fy, precs[j])) != WD_OK)
                die("field", st);
            wd_spinor_random(h, dims, r);
            be.ops->upload(&be, &fx, (const double *)h, 0);
            memset(src, 0, n * sizeof *src);
            memset(dst, 0, n * sizeof *dst);
            be.ops->download(&be, (double *)src, &fx, 0);
            be.ops->copy(&be, &fy, &fx);
            be.ops->download(&be, (double *)dst, &fy, 0);
            double d = 0;
            for (size_t k = 0; k < n; k++)
                d += creal((dst[k] - src[k]) * conj(dst[k] - src[k]));
            char what[128];
            snprintf(what, sizeof what, "copy %s -> %s", pname(precs[i]), pname(precs[j]));
            const double tol = precs[j] == 8 || i == j ? 1e-14 : field_tol(precs[j]);
            check(what, sqrt(d / norm2(src, n)), tol);
            wd_field_destroy(&be, &fx);
            wd_field_destroy(&be, &fy);
        }
    check("copy: backend memory account back to zero", (double)be.bytes_allocated, 0);
    wd_backend_close(&be);
    free(h), free(src), free(dst);
}

/* accumulate z += a x + b y for every z precision and x, y precision (and
 * y absent): the destination's rounding only, since x and y are read
 * exactly and the arithmetic is double */
static void test_accumulate(const int dims[4], wd_rng *r)
{
    static const int precs[3] = {8, 4, 2};
    wd_backend be;
    wd_status st = wd_backend_open(&be, backend, dims, 3);
    if (st != WD_OK)
        die("backend", st);
    const size_t n = wd_volume(dims) * 12;
    double complex *h = xalloc(n * sizeof *h), *hx = xalloc(n * sizeof *h);
    double complex *hy = xalloc(n * sizeof *h), *hz = xalloc(n * sizeof *h);
    double complex *got = xalloc(n * sizeof *h);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            for (int with_y = 0; with_y < 2; with_y++) {
                wd_field fx, fy, fz;
                if ((st = wd_field_create(&be, &fx, precs[j])) != WD_OK ||
                    (st = wd_field_create(&be, &fy, precs[j])) != WD_OK ||
                    (st = wd_field_create(&be, &fz, precs[i])) != WD_OK)
                    die("field", st);
                wd_field *f[3] = {&fx, &fy, &fz};
                double complex *hf[3] = {hx, hy, hz};
                for (int k = 0; k < 3; k++) {
                    wd_spinor_random(h, dims, r);
                    be.ops->upload(&be, f[k], (const double *)h, 0);
                    memset(hf[k], 0, n * sizeof *h);
                    be.ops->download(&be, (double *)hf[k], f[k], 0);
                }
                const double complex ca = rnd_c(r), cb = rnd_c(r);
                be.ops->accumulate(&be, (wd_complex){creal(ca), cimag(ca)}, &fx,
                                   (wd_complex){creal(cb), cimag(cb)}, with_y ? &fy : NULL, &fz);
                memset(got, 0, n * sizeof *got);
                be.ops->download(&be, (double *)got, &fz, 0);
                double d = 0, nw = 0;
                for (size_t k = 0; k < n; k++) {
                    const double complex w = hz[k] + ca * hx[k] + (with_y ? cb * hy[k] : 0);
                    d += creal((got[k] - w) * conj(got[k] - w));
                    nw += creal(w * conj(w));
                }
                char what[128];
                snprintf(what, sizeof what, "accumulate %s += %s%s", pname(precs[i]),
                         pname(precs[j]), with_y ? " + y" : "");
                check(what, be.error == WD_OK && nw > 0 ? sqrt(d / nw) : INFINITY,
                      field_tol(precs[i]));
                wd_field_destroy(&be, &fx);
                wd_field_destroy(&be, &fy);
                wd_field_destroy(&be, &fz);
            }
    wd_backend_close(&be);
    free(h), free(hx), free(hy), free(hz), free(got);
}

/* the two parities of two spinors in precision p (the pair tests' fields) */
static void pair_fields(wd_backend *be, int p, wd_field *e1, wd_field *o1, wd_field *e2,
                        wd_field *o2)
{
    wd_field *const f[4] = {e1, o1, e2, o2};
    for (int k = 0; k < 4; k++) {
        const wd_status st = wd_field_create(be, f[k], p);
        if (st != WD_OK)
            die("field", st);
    }
}

/* the host-layout pair transfers (wd_upload_pair / wd_download_pair, and
 * on the GPU from device memory) against the per-parity upload / download:
 * the same stored bits, and within the precision of the original */
static void test_pair(const int dims[4], wd_rng *r)
{
    static const int precs[3] = {8, 4, 2};
    wd_backend be;
    wd_status st = wd_backend_open(&be, backend, dims, 3);
    if (st != WD_OK)
        die("backend", st);
    const size_t n = wd_volume(dims) * 12, bytes = n * sizeof(double complex);
    double complex *h = xalloc(bytes), *poison = xalloc(bytes), *g1 = xalloc(bytes);
    double complex *g2 = xalloc(bytes), *g3 = xalloc(bytes);
    double *dev = NULL;
    if (backend == WD_BACKEND_CUDA && (st = wd_cuda_malloc((void **)&dev, bytes, "test")) != WD_OK)
        die("device array", st);
    for (size_t k = 0; k < n; k++)
        poison[k] = CMPLX(1e30, -1e30);
    for (int i = 0; i < 3; i++) {
        wd_field e1, o1, e2, o2;
        pair_fields(&be, precs[i], &e1, &o1, &e2, &o2);
        wd_spinor_random(h, dims, r);
        char what[128];
        /* the reference: per parity */
        if ((st = be.ops->upload(&be, &e2, (const double *)h, 0)) != WD_OK ||
            (st = be.ops->upload(&be, &o2, (const double *)h, 1)) != WD_OK ||
            (st = be.ops->download(&be, (double *)g2, &e2, 0)) != WD_OK ||
            (st = be.ops->download(&be, (double *)g2, &o2, 1)) != WD_OK)
            die("upload", st);
        for (int from_device = 0; from_device < 1 + (dev != NULL); from_device++) {
            const double *src = (const double *)h;
            if (from_device && (st = wd_cuda_h2d(dev, h, bytes)) != WD_OK)
                die("h2d", st);
            if (from_device)
                src = dev;
            const char *where = from_device ? "device array" : "host array";
            /* poisoned first: a site the pair transfer missed keeps 1e30 */
            if ((st = be.ops->upload(&be, &e1, (const double *)poison, 0)) != WD_OK ||
                (st = be.ops->upload(&be, &o1, (const double *)poison, 1)) != WD_OK ||
                (st = wd_upload_pair(&be, &e1, &o1, src, from_device, NULL)) != WD_OK)
                die("upload_pair", st);
            memcpy(g1, poison, bytes);
            if ((st = be.ops->download(&be, (double *)g1, &e1, 0)) != WD_OK ||
                (st = be.ops->download(&be, (double *)g1, &o1, 1)) != WD_OK)
                die("download", st);
            snprintf(what, sizeof what, "upload_pair %s %s: bits of upload", pname(precs[i]), where);
            check(what, memcmp(g1, g2, bytes) ? 1 : 0, 0);
            double d = 0;
            for (size_t k = 0; k < n; k++)
                d += creal((g1[k] - h[k]) * conj(g1[k] - h[k]));
            snprintf(what, sizeof what, "upload_pair %s %s: the source", pname(precs[i]), where);
            check(what, sqrt(d / norm2(h, n)), field_tol(precs[i]));
            /* back: from the reference fields into a poisoned array */
            memcpy(g3, poison, bytes);
            if (from_device && (st = wd_cuda_h2d(dev, poison, bytes)) != WD_OK)
                die("h2d", st);
            if ((st = wd_download_pair(&be, from_device ? dev : (double *)g3, &e2, &o2,
                                       from_device, NULL)) != WD_OK ||
                (from_device && (st = wd_cuda_d2h(g3, dev, bytes)) != WD_OK))
                die("download_pair", st);
            snprintf(what, sizeof what, "download_pair %s %s: bits of download", pname(precs[i]),
                     where);
            check(what, memcmp(g3, g2, bytes) ? 1 : 0, 0);
        }
        wd_field_destroy(&be, &e1), wd_field_destroy(&be, &o1);
        wd_field_destroy(&be, &e2), wd_field_destroy(&be, &o2);
    }
    if (dev) {
        /* the device scan: the squared norm, no bad entry; then a NaN and an
         * Inf planted at random entries: the lower index is found */
        wd_spinor_random(h, dims, r);
        double norm2_dev = -1;
        long bad = 0;
        if ((st = wd_cuda_h2d(dev, h, bytes)) != WD_OK ||
            (st = be.ops->scan_device(&be, dev, 2 * n, &norm2_dev, &bad)) != WD_OK)
            die("scan_device", st);
        check("scan_device: squared norm", fabs(norm2_dev - norm2(h, n)) / norm2(h, n), 1e-13);
        check("scan_device: no bad entry", bad == -1 ? 0 : 1, 0);
        const long k1 = (long)(wd_rng_uniform(r) * 2 * n), k2 = (long)(wd_rng_uniform(r) * 2 * n);
        ((double *)h)[k1] = NAN;
        ((double *)h)[k2] = -INFINITY;
        if ((st = wd_cuda_h2d(dev, h, bytes)) != WD_OK ||
            (st = be.ops->scan_device(&be, dev, 2 * n, &norm2_dev, &bad)) != WD_OK)
            die("scan_device", st);
        check("scan_device: the first non-finite entry", bad == (k1 < k2 ? k1 : k2) ? 0 : 1, 0);
        wd_cuda_free(dev);
    } else {
        /* the CPU backend takes no device arrays: a clear refusal */
        wd_field e, o;
        if ((st = wd_field_create(&be, &e, 8)) != WD_OK || (st = wd_field_create(&be, &o, 8)) != WD_OK)
            die("field", st);
        st = wd_upload_pair(&be, &e, &o, (const double *)h, 1, NULL);
        check("upload_pair of device memory on the CPU backend refused",
              st == WD_ERR_INVALID && strstr(wd_last_error(), "device") ? 0 : 1, 0);
        /* nor does it hold a gauge transformation: the solver transforms */
        wd_spinor_gauge tf = {1, h};
        st = wd_spinor_gauge_create(&be, &tf, (const double *)h);
        check("spinor gauge on the CPU backend refused",
              st == WD_ERR_INVALID && strstr(wd_last_error(), "gauge transformation") && !tf.data
                  ? 0 : 1, 0);
        tf = (wd_spinor_gauge){1, h};
        st = wd_upload_pair(&be, &e, &o, (const double *)h, 0, &tf);
        check("upload_pair with a gauge transformation on the CPU backend refused",
              st == WD_ERR_INVALID && strstr(wd_last_error(), "gauge transformation") ? 0 : 1, 0);
        wd_field_destroy(&be, &e), wd_field_destroy(&be, &o);
    }
    wd_backend_close(&be);
    free(h), free(poison), free(g1), free(g2), free(g3);
}

/* the pair transfers through a gauge transformation (GPU: wd_spinor_gauge):
 * upload_pair of psi holds the bits of the per-parity upload of the host's
 * g psi (wd_spinor_transform), download_pair the host's g^dag of the
 * per-parity download; from host and device arrays */
static void test_pair_gauge(const int dims[4], wd_rng *r)
{
    static const int precs[3] = {8, 4, 2};
    wd_backend be;
    wd_status st = wd_backend_open(&be, backend, dims, 3);
    if (st != WD_OK)
        die("backend", st);
    const size_t vol = wd_volume(dims), n = vol * 12, bytes = n * sizeof(double complex);
    double complex *h = xalloc(bytes), *hg = xalloc(bytes), *want = xalloc(bytes);
    double complex *got = xalloc(bytes), *g = xalloc(vol * 9 * sizeof *g);
    double *dev = NULL;
    if ((st = wd_cuda_malloc((void **)&dev, bytes, "test")) != WD_OK)
        die("device array", st);
    wd_gauge_transform_random(g, dims, r);
    wd_spinor_gauge tf;
    if ((st = wd_spinor_gauge_create(&be, &tf, (const double *)g)) != WD_OK)
        die("spinor gauge", st);
    for (int i = 0; i < 3; i++) {
        wd_field e1, o1, e2, o2;
        pair_fields(&be, precs[i], &e1, &o1, &e2, &o2);
        wd_spinor_random(h, dims, r);
        memcpy(hg, h, bytes);
        wd_spinor_transform(hg, g, dims, 0);
        /* the reference: g psi uploaded per parity; and g^dag of its download */
        if ((st = be.ops->upload(&be, &e2, (const double *)hg, 0)) != WD_OK ||
            (st = be.ops->upload(&be, &o2, (const double *)hg, 1)) != WD_OK ||
            (st = be.ops->download(&be, (double *)want, &e2, 0)) != WD_OK ||
            (st = be.ops->download(&be, (double *)want, &o2, 1)) != WD_OK)
            die("upload", st);
        for (int from_device = 0; from_device < 2; from_device++) {
            const char *where = from_device ? "device array" : "host array";
            char what[128];
            /* poisoned first: a site the pair transfer missed keeps 1e30 */
            for (size_t k = 0; k < n; k++)
                got[k] = CMPLX(1e30, -1e30);
            if ((st = be.ops->upload(&be, &e1, (const double *)got, 0)) != WD_OK ||
                (st = be.ops->upload(&be, &o1, (const double *)got, 1)) != WD_OK)
                die("poison", st);
            if (from_device && (st = wd_cuda_h2d(dev, h, bytes)) != WD_OK)
                die("h2d", st);
            if ((st = wd_upload_pair(&be, &e1, &o1, from_device ? dev : (const double *)h,
                                     from_device, &tf)) != WD_OK ||
                (st = be.ops->download(&be, (double *)got, &e1, 0)) != WD_OK ||
                (st = be.ops->download(&be, (double *)got, &o1, 1)) != WD_OK)
                die("upload_pair", st);
            snprintf(what, sizeof what, "upload_pair %s %s, gauge-transformed: bits of the host's",
                     pname(precs[i]), where);
            check(what, memcmp(got, want, bytes) ? 1 : 0, 0);
            /* back: g^dag of the field's values */
            memcpy(hg, want, bytes);
            wd_spinor_transform(hg, g, dims, 1);
            for (size_t k = 0; k < n; k++)
                got[k] = CMPLX(1e30, -1e30);
            if (from_device && (st = wd_cuda_h2d(dev, got, bytes)) != WD_OK)
                die("h2d", st);
            if ((st = wd_download_pair(&be, from_device ? dev : (double *)got, &e2, &o2,
                                       from_device, &tf)) != WD_OK ||
                (from_device && (st = wd_cuda_d2h(got, dev, bytes)) != WD_OK))
                die("download_pair", st);
            snprintf(what, sizeof what, "download_pair %s %s, gauge-transformed: bits of the host's",
                     pname(precs[i]), where);
            check(what, memcmp(got, hg, bytes) ? 1 : 0, 0);
            /* and it is psi again, to the precision's tolerance */
            double d = 0;
            for (size_t k = 0; k < n; k++)
                d += creal((got[k] - h[k]) * conj(got[k] - h[k]));
            snprintf(what, sizeof what, "download_pair %s %s, gauge-transformed: the source",
                     pname(precs[i]), where);
            check(what, sqrt(d / norm2(h, n)), field_tol(precs[i]));
        }
        wd_field_destroy(&be, &e1), wd_field_destroy(&be, &o1);
        wd_field_destroy(&be, &e2), wd_field_destroy(&be, &o2);
    }
    const size_t held = be.bytes_allocated;
    check("spinor gauge counted", tf.bytes == vol * 9 * sizeof(double complex) ? 0 : 1, 0);
    wd_spinor_gauge_destroy(&be, &tf);
    check("spinor gauge freed", !tf.data && be.bytes_allocated == held - vol * 9 * sizeof *g
          ? 0 : 1, 0);
    wd_cuda_free(dev);
    wd_backend_close(&be);
    free(h), free(hg), free(want), free(got), free(g);
}

/*
 * The lanes operations (wd_blas_lanes5): every operation on lanes 0, 2, 3,
 * 4 of multi-fields of 5 right-hand sides against the one-lane table entry
 * (the fused steps: their unfused entries in turn) on each of those right-hand
 * sides of a copy: every right-hand side of every operand (lane 1
 * untouched on both sides) and every reduction the same bits (the fused
 * BiCGstab step in half precision on the GPU: within one 16-bit step and
 * 1e-6 of each reduction's scale, |y|^2 or |u| |y|, test_lanes says why).
 * Fresh
 * random fields and coefficients per operation; the accumulators also into
 * double from single and half, the copies into each precision and none.
 */
enum { LANES_RHS = 5 };

static void lanes_random(wd_backend *be, wd_field *f, double complex *h, const int dims[4],
                         wd_rng *r)
{
    for (int q = 0; q < LANES_RHS; q++) {
        wd_field v = wd_field_view(f, q, 1);
        wd_spinor_random(h, dims, r);
        const wd_status st = be->ops->upload(be, &v, (const double *)h, 0);
        if (st != WD_OK)
            die("upload", st);
    }
}

/* every right-hand side of a and b downloaded: 0 when every bit is the
 * same, else the largest |a - b| over the largest |b| of a right-hand side
 * (at least 1e-300: never 0); -1 when a download fails */
static double lanes_dev(wd_backend *be, const wd_field *a, const wd_field *b, double complex *ha,
                        double complex *hb, size_t n)
{
    double dev = 0;
    for (int q = 0; q < LANES_RHS; q++) {
        const wd_field va = wd_field_view(a, q, 1), vb = wd_field_view(b, q, 1);
        memset(ha, 0, n * sizeof *ha);
        memset(hb, 0, n * sizeof *hb);
        if (be->ops->download(be, (double *)ha, &va, 0) != WD_OK ||
            be->ops->download(be, (double *)hb, &vb, 0) != WD_OK)
            return -1;
        if (!memcmp(ha, hb, n * sizeof *ha))
            continue;
        double d = 0, m = 0;
        for (size_t k = 0; k < n; k++) {
            d = fmax(d, cabs(ha[k] - hb[k]));
            m = fmax(m, cabs(hb[k]));
        }
        dev = fmax(dev, fmax(d / m, 1e-300));
    }
    return dev;
}

/* the precisions of z an operation is tested with (0: z NULL): an
 * accumulator's also double, a copy's every one and none; else p's */
static int z_precisions(int op, int p, int *pz)
{
    switch (op) {
    case WD_LANE_ACCUMULATE: case WD_LANE_ACCUMULATE_XPAY: case WD_LANE_BICGSTAB_UPDATE:
        pz[0] = p, pz[1] = 8;
        return p == 8 ? 1 : 2;
    case WD_LANE_XPAY_NORM2_COPY: case WD_LANE_NORM2_COPY:
        pz[0] = 8, pz[1] = 4, pz[2] = 2, pz[3] = 0;
        return 4;
    default:
        pz[0] = p;
        return 1;
    }
}

/* whether op reduces into res */
static int lane_reduces(int op)
{
    switch (op) {
    case WD_LANE_NORM2: case WD_LANE_CDOT: case WD_LANE_AXPY_NORM2: case WD_LANE_CDOT_NORM2:
    case WD_LANE_CAXPY_NORM2_CDOT: case WD_LANE_BICGSTAB_UPDATE: case WD_LANE_XPAY_NORM2_COPY:
    case WD_LANE_NORM2_COPY:
        return 1;
    default:
        return 0;
    }
}

static void test_lanes(const int dims[4], wd_rng *r)
{
    static const int precs[3] = {8, 4, 2};
    static const char *names[WD_LANE_OPS] = {
        "axpy", "xpay", "axpy_zpbx", "caxpy", "caxpbypz", "cxpaypbz", "accumulate", "norm2",
        "cdot", "axpy_norm2", "cdot_norm2", "caxpy_norm2_cdot", "zero", "bicgstab_update",
        "accumulate_xpay", "xpay_norm2_copy", "norm2_copy"};
    wd_backend be;
    wd_status st = wd_backend_open(&be, backend, dims, 3);
    if (st != WD_OK)
        die("backend", st);
    const size_t n = wd_volume(dims) * 12;
    double complex *h = xalloc(n * sizeof *h), *h2 = xalloc(n * sizeof *h);
    for (int pi = 0; pi < 3; pi++)
        for (int op = 0; op < WD_LANE_OPS; op++) {
            int pzs[4];
            const int nz = z_precisions(op, precs[pi], pzs);
            for (int zd = 0; zd < nz; zd++) {
                const int p = precs[pi], pz = pzs[zd] ? pzs[zd] : p, no_z = !pzs[zd];
                wd_field f[5], g[5];
                for (int k = 0; k < 5; k++)
                    if ((st = wd_field_create_multi(&be, &f[k], k == 2 ? pz : p, LANES_RHS)) !=
                            WD_OK ||
                        (st = wd_field_create_multi(&be, &g[k], k == 2 ? pz : p, LANES_RHS)) !=
                            WD_OK)
                        die("field", st);
                for (int k = 0; k < 5; k++) {
                    lanes_random(&be, &f[k], h, dims, r);
                    for (int q = 0; q < LANES_RHS; q++) {
                        wd_field vg = wd_field_view(&g[k], q, 1);
                        const wd_field vf = wd_field_view(&f[k], q, 1);
                        be.ops->copy(&be, &vg, &vf);
                    }
                }
                wd_lanes l;
                memset(&l, 0, sizeof l);
                static const int idx[4] = {0, 2, 3, 4};
                for (int j = 0; j < 4; j++) {
                    const double complex a = rnd_c(r), b = rnd_c(r);
                    l.idx[l.n++] = idx[j];
                    l.a[j] = (wd_complex){creal(a), cimag(a)};
                    l.b[j] = (wd_complex){creal(b), cimag(b)};
                }
                const int no_y = op == WD_LANE_NORM2 || op == WD_LANE_NORM2_COPY;
                double res[3 * WD_LANES_MAX], want[3 * WD_LANES_MAX];
                memset(res, 0, sizeof res);
                memset(want, 0, sizeof want);
                wd_blas_lanes5(&be, (wd_lane_op)op, &l, &f[0], no_y ? NULL : &f[1],
                               no_z ? NULL : &f[2], &f[3], &f[4], res);
                for (int j = 0; j < l.n; j++) {
                    const int q = l.idx[j];
                    wd_field x = wd_field_view(&g[0], q, 1), y = wd_field_view(&g[1], q, 1);
                    wd_field z = wd_field_view(&g[2], q, 1), w4 = wd_field_view(&g[3], q, 1);
                    const wd_field u = wd_field_view(&g[4], q, 1);
                    const wd_complex mb = {-l.b[j].re, -l.b[j].im}, c0 = {0, 0};
                    /* the one-lane table entry itself (not the lanes path) */
                    const wd_backend_ops *o = be.ops;
                    double *w = want + 3 * j;
                    switch (op) {
                    case WD_LANE_AXPY: o->axpy(&be, l.a[j].re, &x, &y); break;
                    case WD_LANE_XPAY: o->xpay(&be, &x, l.a[j].re, &y); break;
                    case WD_LANE_AXPY_ZPBX: o->axpy_zpbx(&be, l.a[j].re, &x, &y, &z, l.b[j].re); break;
                    case WD_LANE_CAXPY: o->caxpy(&be, l.a[j], &x, &y); break;
                    case WD_LANE_CAXPBYPZ: o->caxpbypz(&be, l.a[j], &x, l.b[j], &y, &z); break;
                    case WD_LANE_CXPAYPBZ: o->cxpaypbz(&be, &x, l.a[j], &y, l.b[j], &z); break;
                    case WD_LANE_ACCUMULATE: o->accumulate(&be, l.a[j], &x, l.b[j], &y, &z); break;
                    case WD_LANE_NORM2: w[0] = o->norm2(&be, &x); break;
                    case WD_LANE_CDOT: {
                        const wd_complex c = o->cdot(&be, &x, &y);
                        w[0] = c.re, w[1] = c.im;
                        break;
                    }
                    case WD_LANE_AXPY_NORM2: w[0] = o->axpy_norm2(&be, l.a[j].re, &x, &y); break;
                    case WD_LANE_CDOT_NORM2: o->cdot_norm2(&be, &x, &y, w); break;
                    case WD_LANE_CAXPY_NORM2_CDOT: o->caxpy_norm2_cdot(&be, l.a[j], &x, &y, &z, w); break;
                    case WD_LANE_ZERO: o->zero(&be, &y); break;
                    /* the fused steps: their table entries in turn */
                    case WD_LANE_BICGSTAB_UPDATE:
                        if (pz == p)
                            o->caxpbypz(&be, l.a[j], &x, l.b[j], &y, &z);
                        else
                            o->accumulate(&be, l.a[j], &x, l.b[j], &y, &z);
                        o->caxpy_norm2_cdot(&be, mb, &w4, &y, &u, w);
                        break;
                    case WD_LANE_ACCUMULATE_XPAY:
                        o->accumulate(&be, l.a[j], &x, c0, NULL, &z);
                        o->xpay(&be, &y, l.b[j].re, &x);
                        break;
                    case WD_LANE_XPAY_NORM2_COPY:
                        w[0] = o->xpay_norm2(&be, &x, l.a[j].re, &y);
                        if (!no_z)
                            o->copy(&be, &z, &y);
                        break;
                    default:
                        w[0] = o->norm2(&be, &x);
                        if (!no_z)
                            o->copy(&be, &z, &x);
                        break;
                    }
                }
                /* bits, but for the fused BiCGstab step in half precision
                 * on the GPU: nvcc contracts the fused kernel's arithmetic
                 * its own way, so a value may round to the neighbouring
                 * 16-bit step (one step is 1/32767 of the site's largest
                 * component) and the double reductions of the floats
                 * differ in their last digits (measured against 1e-6 of
                 * |u| |y| for <u, y>: judged against its own value, which
                 * for random fields may lie near zero, one run of 33a3816
                 * on the H100 read 1.25e-6) */
                const int loose = backend != WD_BACKEND_CPU && p == 2 &&
                                  op == WD_LANE_BICGSTAB_UPDATE;
                double dev = be.error == WD_OK ? 0 : 1, dev_f = 0, dev_r = 0;
                for (int k = 0; k < 5; k++) {
                    const double d = lanes_dev(&be, &f[k], &g[k], h, h2, n);
                    dev_f = fmax(dev_f, d < 0 ? 1 : d / (loose ? 3.1e-5 : 1));
                }
                /* a reduction's error relative to its natural scale: |y|^2
                 * for |y|^2, |u| |y| for <u, y> (whose value may lie near
                 * zero: a random field's dot product is a sum of signs) */
                for (int j = 0; j < l.n; j++) {
                    double scale[3] = {fabs(want[3 * j]), fabs(want[3 * j + 1]),
                                       fabs(want[3 * j + 2])};
                    if (loose) {
                        const wd_field u = wd_field_view(&g[4], l.idx[j], 1);
                        scale[1] = scale[2] = sqrt(fabs(want[3 * j]) * be.ops->norm2(&be, &u));
                    }
                    for (int k = 0; k < 3; k++)
                        if (res[3 * j + k] != want[3 * j + k])
                            dev_r = fmax(dev_r, fmax(fabs(res[3 * j + k] - want[3 * j + k]) /
                                                         scale[k], 1e-300) / (loose ? 1e-6 : 1));
                }
                dev = fmax(dev, fmax(dev_f, dev_r));
                if (loose && dev > 0.5)
                    printf("  (fields %.2f of one step, reductions %.2f of 1e-6)\n", dev_f, dev_r);
                /* a reduction that vanished would compare equal without
                 * proving anything */
                if (lane_reduces(op))
                    for (int j = 0; j < l.n; j++)
                        dev = res[3 * j] != 0 ? dev : 1;
                char what[128];
                char into[24] = "";
                if (no_z || pz != p)
                    snprintf(into, sizeof into, " into %s", no_z ? "none" : pname(pz));
                snprintf(what, sizeof what, "lanes %s %s%s: 4 of 5 rhs = one-lane ops, %s",
                         names[op], pname(p), into, loose ? "/ 1 step, 1e-6" : "bits");
                check(what, dev, loose ? 1 : 0);
                for (int k = 0; k < 5; k++) {
                    wd_field_destroy(&be, &f[k]);
                    wd_field_destroy(&be, &g[k]);
                }
            }
        }
    wd_backend_close(&be);
    free(h), free(h2);
}

int main(int argc, char **argv)
{
    uint64_t seed = (uint64_t)time(NULL);
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
    backend = test_backend_arg(argc, argv);
    printf("test_blas: seed %llu (replay with --seed %llu), %d threads\n",
           (unsigned long long)seed, (unsigned long long)seed, omp_get_max_threads());
    wd_rng r;
    wd_rng_seed(&r, seed);

    static const int lattices[][4] = {{4, 6, 8, 10}, {8, 8, 8, 8}};
    static const int precs[3] = {8, 4, 2};
    for (int li = 0; li < 2; li++)
        for (int pi = 0; pi < 3; pi++) {
            ctx c;
            memset(&c, 0, sizeof c);
            memcpy(c.dims, lattices[li], sizeof c.dims);
            c.precision = precs[pi];
            c.n = wd_volume(c.dims) * 12;
            wd_status st = wd_backend_open(&c.be, backend, c.dims, 5);
            if (st != WD_OK)
                die("backend", st);
            for (int i = 0; i < 4; i++) {
                if ((st = wd_field_create(&c.be, &c.f[i], c.precision)) != WD_OK)
                    die("field", st);
                c.h[i] = xalloc(c.n * sizeof(double complex));
            }
            c.want = xalloc(c.n * sizeof(double complex));
            c.got = xalloc(c.n * sizeof(double complex));
            test_ops(&c, &r);
            test_reproducible(&c);
            for (int i = 0; i < 4; i++) {
                wd_field_destroy(&c.be, &c.f[i]);
                free(c.h[i]);
            }
            free(c.want), free(c.got);
            wd_backend_close(&c.be);
        }
    test_copy(lattices[0], &r);
    test_accumulate(lattices[0], &r);
    test_pair(lattices[0], &r);
    test_pair(lattices[1], &r);
    if (backend == WD_BACKEND_CUDA)
        test_pair_gauge(lattices[0], &r);
    test_lanes(lattices[0], &r);

    printf("%d of %d failed\n", checks_failed, checks_run);
    return checks_failed ? 1 : 0;
}
