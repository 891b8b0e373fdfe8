/*
 * test_mg_dev: the multigrid's coarse-level operations (wd_mg_dev.h) of one
 * backend against float64 host computations, on fresh random data.
 *
 *   test_mg_dev [--seed N] [--backend cpu|cuda]
 *           (default seed: the time, printed; cuda exits 77 without a GPU
 *           or a CUDA build)
 *
 * Checks, each with its tolerance (float arithmetic: relative 1e-5 for
 * sums of a few terms, more for long sums), outputs poisoned with NaN
 * before each call:
 *   blas      zero, copy, scale, xmy, g5 (the chirality-1 half of
 *             every site negated, exact), gather (random sites, exact),
 *             scatter (distinct random sites, the rest untouched, exact),
 *             block_apply (a random n x n block a site, 1e-5),
 *             multi_caxpy (k = 1, 5, 16),
 *             multi_cdot (k = 1, 5, 16), cdot_norm2, caxpy_norm2 against
 *             the same operations in double on the float inputs, on
 *             fields of 37 x 48, 3456 x 48 and 16 x 16 (sizes that are no
 *             multiple of a block); every reduction run twice gives the
 *             same bits
 *   lanes     lanes_cdot and lanes_caxpy of 1, 5, 12 and 16 lanes of k =
 *             1, 7 and 16 fields on 37 x 48 and 1500 x 48 (on the GPU a
 *             grid of fewer than RED_BLOCKS blocks and one of all of them),
 *             the lanes `stride` floats apart with a NaN gap after each
 *             field: each lane against double (1e-12 of |x||y|, 1e-5) and
 *             bit for bit multi_cdot / multi_caxpy on that lane alone, the
 *             results poisoned before lanes_cdot, the gaps still NaN after
 *             lanes_caxpy; a lane of zero coefficients whose x holds NaN and
 *             Inf and whose y holds -0 keeps y's bits, the other lanes
 *             unchanged; lanes, k and stride out of range refused
 *   half ops  pack_half (random distinct sites, the host rounding's bits
 *             on the CPU, within 1 on the GPU where nvcc contracts the
 *             rounding add into an FMA, the other sites untouched), move_half (exact), xmy_half
 *             (1e-6) on 3456 x 48 and 37 x 16; apply_half after pack_half,
 *             widened, the bits of apply (half links)
 *   transfer  restrict_ and prolong against wd_mg_restrict / wd_mg_prolong
 *             of the host (float64) on an 8^4 lattice, blocks 4^4 and
 *             2^4, nvec 8 and 24: from the host layout (12 components a
 *             site) and from packed coarse fields (16 and 48 components),
 *             the null vectors in float and in 16 bits (the reference's
 *             float64 vectors then the values the 16 bits hold)
 *   even      the same transfers of an even-only field (host layout, the
 *             sites and fine_sites of wd_mg_parity_sites): P^dag of the
 *             field with its odd sites NaN = the float64 P^dag of (r_e, 0),
 *             and P onto the even sites = the even part of the float64 P,
 *             the odd sites untouched (blocks 4^4 and 2x1x1x1, nvec 8 and
 *             24, float and 16-bit vectors); blocks of odd extents refused
 *   apply     the coarse operator of a random gauge field (wd_mg_coarse_build
 *             of orthonormalised random vectors) against wd_mg_op_apply, in
 *             single and half links (nvec 8 and, where built, 24): 1e-5 and
 *             1e-3 (16-bit links and fields) relative to the largest entry;
 *             apply_multi of 6 and 12 right-hand sides (fields with ghost
 *             sites) = apply on each, bit for bit, the ghosts untouched
 *             (nvec 24: the n4 and n12 kernels where built), and on half
 *             links refused with too few 16-bit fields
 * One line per check; "N of M failed" last; exit 0 when all pass.
 */
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gauge_tools.h"
#include "rng.h"
#include "test_backend.h"
#include "wd_coarse_layout.h"
#include "wd_coarse_op.h"
#include "wd_mg.h"
#include "wd_mg_dev.h"
#include "wdirac.h"
#include "wdirac_gauge.h"

static int checks_run, checks_failed;
static const wd_mg_dev_ops *ops;
static wd_rng rng;

static void *xalloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p) {
        fprintf(stderr, "test_mg_dev: out of memory\n");
        exit(1);
    }
    return p;
}

static void check(const char *name, double err, double tol)
{
    ++checks_run;
    const int ok = err <= tol && isfinite(err);
    checks_failed += !ok;
    printf("%-62s %s  err=%.2e tol=%.0e\n", name, ok ? "OK  " : "FAIL", err, tol);
}

static void check_true(const char *name, int ok, const char *detail)
{
    ++checks_run;
    checks_failed += !ok;
    printf("%-62s %s  %s\n", name, ok ? "OK  " : "FAIL", detail);
}

/* the backend's memory */
static void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    if (ops->alloc(&p, bytes, "a test field") != WD_OK) {
        fprintf(stderr, "test_mg_dev: %s\n", wd_last_error());
        exit(1);
    }
    return p;
}

static void up(void *dev, const void *host, size_t bytes)
{
    if (ops->h2d(dev, host, bytes) != WD_OK) {
        fprintf(stderr, "test_mg_dev: %s\n", wd_last_error());
        exit(1);
    }
}

static void down(void *host, const void *dev, size_t bytes)
{
    if (ops->d2h(host, dev, bytes) != WD_OK) {
        fprintf(stderr, "test_mg_dev: %s\n", wd_last_error());
        exit(1);
    }
}

static void fill_float(float *x, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        x[i] = (float)wd_rng_normal(&rng);
}

static void poison(void *dev, size_t floats)
{
    float *p = xalloc(floats * sizeof *p);
    for (size_t i = 0; i < floats; ++i)
        p[i] = NAN;
    up(dev, p, floats * sizeof *p);
    free(p);
}

/* max |a - b| / max |b| over n floats */
static double rel_diff_f(const float *a, const double *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; ++i) {
        const double d = fabs((double)a[i] - b[i]);
        num = d > num || isnan(d) ? d : num;
        den = fabs(b[i]) > den ? fabs(b[i]) : den;
    }
    return den > 0 ? num / den : num;
}

/* component i of site s of a packed field as a complex double */
static double complex packed(const float *x, int n, size_t j)
{
    const size_t s = j / n, i = j % n;
    return CMPLX(x[s * 2 * n + i], x[s * 2 * n + n + i]);
}

static void test_blas(int volume, int n)
{
    const size_t len = (size_t)volume * 2 * n, count = (size_t)volume * n;
    const size_t bytes = len * sizeof(float);
    char name[96];
    enum { K = 16 };
    float *hx[K], *hy = xalloc(bytes), *out = xalloc(bytes);
    double *want = xalloc(len * sizeof *want);
    float *dx[K], *dy = dev_alloc(bytes);
    for (int i = 0; i < K; ++i) {
        hx[i] = xalloc(bytes);
        fill_float(hx[i], len);
        dx[i] = dev_alloc(bytes);
        up(dx[i], hx[i], bytes);
    }
    fill_float(hy, len);

    /* zero, copy, scale, xmy */
    poison(dy, len);
    ops->zero(volume, n, dy);
    down(out, dy, bytes);
    memset(want, 0, len * sizeof *want);
    snprintf(name, sizeof name, "blas %dx%d: zero", volume, n);
    check(name, rel_diff_f(out, want, len) + (out[0] != 0), 0);
    poison(dy, len);
    ops->copy(volume, n, dy, dx[0]);
    down(out, dy, bytes);
    for (size_t i = 0; i < len; ++i)
        want[i] = hx[0][i];
    snprintf(name, sizeof name, "blas %dx%d: copy", volume, n);
    check(name, rel_diff_f(out, want, len), 0);
    up(dy, hy, bytes);
    ops->scale(volume, n, -0.75f, dy);
    down(out, dy, bytes);
    for (size_t i = 0; i < len; ++i)
        want[i] = -0.75 * hy[i];
    snprintf(name, sizeof name, "blas %dx%d: scale", volume, n);
    check(name, rel_diff_f(out, want, len), 1e-6);
    up(dy, hy, bytes);
    ops->xmy(volume, n, dx[1], dy);
    down(out, dy, bytes);
    for (size_t i = 0; i < len; ++i)
        want[i] = (double)hx[1][i] - hy[i];
    snprintf(name, sizeof name, "blas %dx%d: xmy", volume, n);
    check(name, rel_diff_f(out, want, len), 1e-6);
    /* g5 in place: a site's components i >= n / 2, real (at s 2n + i) and
     * imaginary (at s 2n + n + i) parts, negated; the rest as they were */
    up(dy, hy, bytes);
    ops->g5(volume, n, dy);
    down(out, dy, bytes);
    for (size_t i = 0; i < len; ++i) {
        const size_t c = i % (size_t)(2 * n), comp = c < (size_t)n ? c : c - n;
        want[i] = comp >= (size_t)n / 2 ? -(double)hy[i] : hy[i];
    }
    snprintf(name, sizeof name, "blas %dx%d: g5", volume, n);
    check(name, rel_diff_f(out, want, len), 0);

    /* gather: random whole sites (repeats allowed, as a site on two faces)
     * into the first `sites` sites of a poisoned field */
    const int sites = volume / 3 + 1;
    int *list = xalloc(sites * sizeof *list);
    for (int i = 0; i < sites; ++i)
        list[i] = (int)(wd_rng_u64(&rng) % (uint64_t)volume);
    int *dlist = dev_alloc(sites * sizeof *list);
    up(dlist, list, sites * sizeof *list);
    poison(dy, len);
    ops->gather(sites, 2 * n, dlist, dx[2], dy);
    down(out, dy, bytes);
    for (int i = 0; i < sites; ++i)
        for (int j = 0; j < 2 * n; ++j)
            want[(size_t)i * 2 * n + j] = hx[2][(size_t)list[i] * 2 * n + j];
    snprintf(name, sizeof name, "blas %dx%d: gather of %d sites", volume, n, sites);
    check(name, rel_diff_f(out, want, (size_t)sites * 2 * n), 0);
    /* scatter: `sites` distinct random sites (a shuffled prefix) of a
     * field holding y, the rest untouched */
    int *perm = xalloc(volume * sizeof *perm);
    for (int i = 0; i < volume; ++i)
        perm[i] = i;
    for (int i = volume - 1; i > 0; --i) {
        const int j = (int)(wd_rng_u64(&rng) % (uint64_t)(i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    up(dlist, perm, sites * sizeof *perm);
    up(dy, hy, bytes);
    ops->scatter(sites, 2 * n, dlist, dx[3], dy);
    down(out, dy, bytes);
    for (size_t i = 0; i < len; ++i)
        want[i] = hy[i];
    for (int i = 0; i < sites; ++i)
        for (int j = 0; j < 2 * n; ++j)
            want[(size_t)perm[i] * 2 * n + j] = hx[3][(size_t)i * 2 * n + j];
    snprintf(name, sizeof name, "blas %dx%d: scatter to %d sites", volume, n, sites);
    check(name, rel_diff_f(out, want, len), 0);
    ops->free(dlist);
    free(list);
    free(perm);

    /* block_apply: a random n x n complex block a site (column-major) */
    const size_t bfloats = (size_t)volume * n * n * 2;
    float *hb = xalloc(bfloats * sizeof *hb), *db = dev_alloc(bfloats * sizeof *hb);
    fill_float(hb, bfloats);
    up(db, hb, bfloats * sizeof *hb);
    poison(dy, len);
    ops->block_apply(volume, n, db, dx[4], dy);
    down(out, dy, bytes);
    for (int s = 0; s < volume; ++s)
        for (int i = 0; i < n; ++i) {
            double complex y = 0;
            for (int j = 0; j < n; ++j) {
                const float *m = hb + 2 * (((size_t)s * n + j) * n + i);
                y += CMPLX(m[0], m[1]) * packed(hx[4], n, (size_t)s * n + j);
            }
            want[(size_t)s * 2 * n + i] = creal(y);
            want[(size_t)s * 2 * n + n + i] = cimag(y);
        }
    snprintf(name, sizeof name, "blas %dx%d: block_apply", volume, n);
    check(name, rel_diff_f(out, want, len), 1e-5);
    ops->free(db);
    free(hb);

    /* multi_caxpy and multi_cdot */
    const int ks[3] = {1, 5, K};
    for (int t = 0; t < 3; ++t) {
        const int k = ks[t];
        wd_complex a[K];
        for (int i = 0; i < k; ++i)
            a[i] = (wd_complex){wd_rng_normal(&rng), wd_rng_normal(&rng)};
        up(dy, hy, bytes);
        ops->multi_caxpy(volume, n, k, a, (const float *const *)dx, dy);
        down(out, dy, bytes);
        for (size_t j = 0; j < count; ++j) {
            double complex y = packed(hy, n, j);
            for (int i = 0; i < k; ++i)
                y += CMPLX(a[i].re, a[i].im) * packed(hx[i], n, j);
            const size_t s = j / n, c = j % n;
            want[s * 2 * n + c] = creal(y);
            want[s * 2 * n + n + c] = cimag(y);
        }
        snprintf(name, sizeof name, "blas %dx%d: multi_caxpy k=%d", volume, n, k);
        check(name, rel_diff_f(out, want, len), 1e-5);

        double res[2 * K], res2[2 * K], ref[2 * K], scale = 0;
        up(dy, hy, bytes);
        for (int i = 0; i < 2 * k; ++i)
            res[i] = res2[i] = NAN;
        ops->multi_cdot(volume, n, k, (const float *const *)dx, dy, res);
        ops->multi_cdot(volume, n, k, (const float *const *)dx, dy, res2);
        for (int i = 0; i < k; ++i) {
            double complex d = 0;
            double nx = 0, ny = 0;
            for (size_t j = 0; j < count; ++j) {
                d += conj(packed(hx[i], n, j)) * packed(hy, n, j);
                nx += cabs(packed(hx[i], n, j)) * cabs(packed(hx[i], n, j));
                ny += cabs(packed(hy, n, j)) * cabs(packed(hy, n, j));
            }
            ref[2 * i] = creal(d);
            ref[2 * i + 1] = cimag(d);
            scale = fmax(scale, sqrt(nx * ny));
        }
        double err = 0;
        for (int i = 0; i < 2 * k; ++i)
            err = fmax(err, fabs(res[i] - ref[i]) / scale);
        snprintf(name, sizeof name, "blas %dx%d: multi_cdot k=%d (|err| / |x||y|)", volume, n, k);
        check(name, isnan(err) ? INFINITY : err, 1e-12);
        snprintf(name, sizeof name, "blas %dx%d: multi_cdot k=%d twice: the same bits", volume, n,
                 k);
        check_true(name, memcmp(res, res2, 2 * k * sizeof *res) == 0, "memcmp");
    }

    /* cdot_norm2, caxpy_norm2 */
    double r3[3];
    up(dy, hy, bytes);
    ops->cdot_norm2(volume, n, dx[2], dy, r3);
    double complex d = 0;
    double xx = 0, yy = 0;
    for (size_t j = 0; j < count; ++j) {
        d += conj(packed(hx[2], n, j)) * packed(hy, n, j);
        xx += creal(packed(hx[2], n, j) * conj(packed(hx[2], n, j)));
        yy += creal(packed(hy, n, j) * conj(packed(hy, n, j)));
    }
    const double sc = sqrt(xx * yy);
    snprintf(name, sizeof name, "blas %dx%d: cdot_norm2", volume, n);
    check(name, fmax(fmax(fabs(r3[0] - creal(d)), fabs(r3[1] - cimag(d))) / sc,
                     fabs(r3[2] - xx) / xx), 1e-12);
    const wd_complex a = {0.5, -1.25};
    double n2 = NAN;
    up(dy, hy, bytes);
    ops->caxpy_norm2(volume, n, a, dx[3], dy, &n2);
    down(out, dy, bytes);
    double want2 = 0;
    for (size_t j = 0; j < count; ++j) {
        const double complex y = packed(out, n, j);
        want2 += creal(y * conj(y));
    }
    snprintf(name, sizeof name, "blas %dx%d: caxpy_norm2 (the norm of y as stored)", volume, n);
    check(name, fabs(n2 - want2) / want2, 1e-12);

    for (int i = 0; i < K; ++i) {
        free(hx[i]);
        ops->free(dx[i]);
    }
    ops->free(dy);
    free(hy);
    free(out);
    free(want);
}

/* lanes_ operations' fields: `slots` fields of volume x n, each followed
 * by a gap of NaN up to `stride` floats, on the host (random) and the
 * backend */
static float *lanes_fields(int volume, int n, int slots, size_t stride, float **dev)
{
    const size_t len = (size_t)volume * 2 * n, all = (size_t)slots * stride;
    float *h = xalloc(all * sizeof *h);
    for (int q = 0; q < slots; ++q) {
        fill_float(h + (size_t)q * stride, len);
        for (size_t i = len; i < stride; ++i)
            h[(size_t)q * stride + i] = NAN;
    }
    *dev = dev_alloc(all * sizeof *h);
    up(*dev, h, all * sizeof *h);
    return h;
}

/* whether every gap after the `slots` fields of f is NaN still */
static int gaps_nan(const float *f, int slots, size_t len, size_t stride)
{
    for (int q = 0; q < slots; ++q)
        for (size_t i = len; i < stride; ++i)
            if (!isnan(f[(size_t)q * stride + i]))
                return 0;
    return 1;
}

/* lanes_cdot and lanes_caxpy of `lanes` lanes of k fields.  x[i] of lane
 * r is slot i + r of one buffer of k + lanes - 1 fields stride apart (the
 * operands may alias): each lane has its own k fields in the memory of
 * k + lanes - 1, and the last slot is read by the last lane alone */
static void test_lanes(int volume, int n, int lanes, int k)
{
    const size_t len = (size_t)volume * 2 * n, count = (size_t)volume * n;
    const size_t stride = len + 4 * n + 5;
    const int slots = k + lanes - 1;
    char name[96], tag[48];
    snprintf(tag, sizeof tag, "lanes %dx%d L=%d k=%d", volume, n, lanes, k);
    float *dxs, *dys, *dy1 = dev_alloc(len * sizeof(float));
    float *hx = lanes_fields(volume, n, slots, stride, &dxs);
    float *hy = lanes_fields(volume, n, lanes, stride, &dys);
    float *out = xalloc((size_t)lanes * stride * sizeof *out), *one = xalloc(len * sizeof *one);
    double *want = xalloc(len * sizeof *want);
    const float *dx[WD_MG_DEV_MULTI], *dxr[WD_MG_DEV_MULTI];
    for (int i = 0; i < k; ++i)
        dx[i] = dxs + (size_t)i * stride;
    wd_complex a[WD_MG_DEV_LANES * WD_MG_DEV_MULTI];
    for (int i = 0; i < lanes * k; ++i)
        a[i] = (wd_complex){wd_rng_normal(&rng), wd_rng_normal(&rng)};
    double res[2 * WD_MG_DEV_LANES * WD_MG_DEV_MULTI], res1[2 * WD_MG_DEV_MULTI];
    wd_status st;

    /* lanes_cdot against double, then each lane against multi_cdot */
    for (int i = 0; i < 2 * lanes * k; ++i)
        res[i] = NAN;
    if ((st = ops->lanes_cdot(volume, n, lanes, stride, k, dx, dys, res)) != WD_OK) {
        snprintf(name, sizeof name, "%s: lanes_cdot", tag);
        check_true(name, 0, wd_last_error());
        goto done;
    }
    double err = 0;
    int same = 1;
    for (int r = 0; r < lanes; ++r) {
        const float *y = hy + (size_t)r * stride;
        double ny = 0;
        for (size_t j = 0; j < count; ++j)
            ny += creal(packed(y, n, j) * conj(packed(y, n, j)));
        for (int i = 0; i < k; ++i) {
            const float *x = hx + (size_t)(i + r) * stride;
            double complex d = 0;
            double nx = 0;
            for (size_t j = 0; j < count; ++j) {
                d += conj(packed(x, n, j)) * packed(y, n, j);
                nx += creal(packed(x, n, j) * conj(packed(x, n, j)));
            }
            const double *got = res + 2 * ((size_t)r * k + i);
            err = fmax(err, fmax(fabs(got[0] - creal(d)), fabs(got[1] - cimag(d))) /
                                sqrt(nx * ny));
            if (isnan(got[0]) || isnan(got[1]))
                err = INFINITY;
        }
        for (int i = 0; i < k; ++i)
            dxr[i] = dxs + (size_t)(i + r) * stride;
        for (int i = 0; i < 2 * k; ++i)
            res1[i] = NAN;
        st = ops->multi_cdot(volume, n, k, dxr, dys + (size_t)r * stride, res1);
        same = same && st == WD_OK &&
               memcmp(res1, res + (size_t)r * 2 * k, 2 * k * sizeof *res) == 0;
    }
    snprintf(name, sizeof name, "%s: lanes_cdot (|err| / |x||y|)", tag);
    check(name, err, 1e-12);
    snprintf(name, sizeof name, "%s: lanes_cdot = multi_cdot a lane", tag);
    check_true(name, same, "memcmp");

    /* lanes_caxpy against double, then each lane against multi_caxpy */
    if ((st = ops->lanes_caxpy(volume, n, lanes, stride, k, a, dx, dys)) != WD_OK) {
        snprintf(name, sizeof name, "%s: lanes_caxpy", tag);
        check_true(name, 0, wd_last_error());
        goto done;
    }
    down(out, dys, (size_t)lanes * stride * sizeof *out);
    err = 0;
    same = 1;
    for (int r = 0; r < lanes; ++r) {
        const float *y = hy + (size_t)r * stride;
        for (size_t j = 0; j < count; ++j) {
            double complex v = packed(y, n, j);
            for (int i = 0; i < k; ++i)
                v += CMPLX(a[r * k + i].re, a[r * k + i].im) *
                     packed(hx + (size_t)(i + r) * stride, n, j);
            const size_t s = j / n, c = j % n;
            want[s * 2 * n + c] = creal(v);
            want[s * 2 * n + n + c] = cimag(v);
        }
        err = fmax(err, rel_diff_f(out + (size_t)r * stride, want, len));
        for (int i = 0; i < k; ++i)
            dxr[i] = dxs + (size_t)(i + r) * stride;
        up(dy1, y, len * sizeof *y);
        st = ops->multi_caxpy(volume, n, k, a + r * k, dxr, dy1);
        down(one, dy1, len * sizeof *one);
        same = same && st == WD_OK &&
               memcmp(one, out + (size_t)r * stride, len * sizeof *one) == 0;
    }
    snprintf(name, sizeof name, "%s: lanes_caxpy", tag);
    check(name, err, 1e-5);
    snprintf(name, sizeof name, "%s: lanes_caxpy = multi_caxpy a lane, gaps NaN", tag);
    check_true(name, same && gaps_nan(out, lanes, len, stride), "memcmp, isnan");

done:
    ops->free(dxs);
    ops->free(dys);
    ops->free(dy1);
    free(hx);
    free(hy);
    free(out);
    free(one);
    free(want);
}

/* lanes_caxpy with the last lane's coefficients zero (+0 and -0), its
 * last x field (the last slot, which no other lane reads) holding NaN and
 * Inf and its y -0 at places: that lane keeps y's bits, the others have
 * multi_caxpy's, and lanes_cdot's other lanes multi_cdot's */
static void test_lanes_zero(int volume, int n, int lanes, int k)
{
    const size_t len = (size_t)volume * 2 * n;
    const size_t stride = len + 2 * n + 3;
    const int slots = k + lanes - 1, z = lanes - 1;
    char name[96];
    float *dxs, *dys, *dy1 = dev_alloc(len * sizeof(float));
    float *hx = lanes_fields(volume, n, slots, stride, &dxs);
    float *hy = lanes_fields(volume, n, lanes, stride, &dys);
    float *lx = hx + (size_t)(slots - 1) * stride, *zy = hy + (size_t)z * stride;
    for (size_t i = 0; i < len; i += 3) {
        lx[i] = i % 2 ? INFINITY : NAN;
        zy[i] = -0.0f;
    }
    up(dxs, hx, (size_t)slots * stride * sizeof *hx);
    up(dys, hy, (size_t)lanes * stride * sizeof *hy);
    float *out = xalloc((size_t)lanes * stride * sizeof *out), *one = xalloc(len * sizeof *one);
    const float *dx[WD_MG_DEV_MULTI], *dxr[WD_MG_DEV_MULTI];
    for (int i = 0; i < k; ++i)
        dx[i] = dxs + (size_t)i * stride;
    wd_complex a[WD_MG_DEV_LANES * WD_MG_DEV_MULTI];
    for (int i = 0; i < lanes * k; ++i)
        a[i] = i / k == z ? (wd_complex){i % 2 ? -0.0 : 0.0, 0.0}
                          : (wd_complex){wd_rng_normal(&rng), wd_rng_normal(&rng)};
    double res[2 * WD_MG_DEV_LANES * WD_MG_DEV_MULTI], res1[2 * WD_MG_DEV_MULTI];
    int same = ops->lanes_cdot(volume, n, lanes, stride, k, dx, dys, res) == WD_OK;
    for (int r = 0; r < z; ++r) {
        for (int i = 0; i < k; ++i)
            dxr[i] = dxs + (size_t)(i + r) * stride;
        same = same &&
               ops->multi_cdot(volume, n, k, dxr, dys + (size_t)r * stride, res1) == WD_OK &&
               memcmp(res1, res + (size_t)r * 2 * k, 2 * k * sizeof *res) == 0;
    }
    snprintf(name, sizeof name, "lanes %dx%d L=%d k=%d: lanes_cdot, a NaN lane's neighbours",
             volume, n, lanes, k);
    check_true(name, same, "memcmp with multi_cdot");
    same = ops->lanes_caxpy(volume, n, lanes, stride, k, a, dx, dys) == WD_OK;
    down(out, dys, (size_t)lanes * stride * sizeof *out);
    for (int r = 0; r < z; ++r) {
        for (int i = 0; i < k; ++i)
            dxr[i] = dxs + (size_t)(i + r) * stride;
        up(dy1, hy + (size_t)r * stride, len * sizeof *one);
        same = same && ops->multi_caxpy(volume, n, k, a + r * k, dxr, dy1) == WD_OK;
        down(one, dy1, len * sizeof *one);
        same = same && memcmp(one, out + (size_t)r * stride, len * sizeof *one) == 0;
    }
    snprintf(name, sizeof name, "lanes %dx%d L=%d k=%d: lanes_caxpy, a zero lane keeps y's bits",
             volume, n, lanes, k);
    check_true(name,
               same && memcmp(out + (size_t)z * stride, zy, len * sizeof *zy) == 0 &&
                   gaps_nan(out, lanes, len, stride),
               "memcmp, the others with multi_caxpy");
    ops->free(dxs);
    ops->free(dys);
    ops->free(dy1);
    free(hx);
    free(hy);
    free(out);
    free(one);
}

/* the lanes_ operations' limits: lanes, k and stride out of range refused
 * (WD_ERR_INTERNAL) */
static void test_lanes_refused(void)
{
    enum { V = 4, N = 2 };
    float *d = dev_alloc(2 * (2 * N * V + 1) * sizeof(float));
    const float *x[1] = {d};
    const wd_complex a[WD_MG_DEV_LANES * WD_MG_DEV_MULTI + 1] = {{1, 0}};
    const float *xs[WD_MG_DEV_MULTI + 1];
    for (int i = 0; i <= WD_MG_DEV_MULTI; ++i)
        xs[i] = d;
    double res[2 * (WD_MG_DEV_LANES + 1) * (WD_MG_DEV_MULTI + 1)];
    const struct {
        int lanes, k;
        size_t stride;
    } bad[5] = {{0, 1, 2 * N * V},
                {WD_MG_DEV_LANES + 1, 1, 0},
                {1, 0, 2 * N * V},
                {1, WD_MG_DEV_MULTI + 1, 2 * N * V},
                {2, 1, 2 * N * V - 1}};
    int refused = 1;
    for (int t = 0; t < 5; ++t) {
        const int k = bad[t].k;
        refused = refused &&
                  ops->lanes_cdot(V, N, bad[t].lanes, bad[t].stride, k, k > 1 ? xs : x, d, res) ==
                      WD_ERR_INTERNAL &&
                  ops->lanes_caxpy(V, N, bad[t].lanes, bad[t].stride, k, a, k > 1 ? xs : x, d) ==
                      WD_ERR_INTERNAL;
    }
    check_true("lanes: lanes 0 and 17, k 0 and 17, stride < 2 n volume refused", refused,
               refused ? "WD_ERR_INTERNAL" : wd_last_error());
    ops->free(d);
}

/* a level's transfer on the backend from the host one (v rounded by
 * wd_mg_pack_vectors in precision 4 or 2; for 2 the host's t->v replaced
 * by the values the 16-bit vectors hold, so that the float64 reference
 * uses the same P) */
static wd_mg_dev_transfer dev_transfer(wd_mg_transfer *t, int fine_host, int precision,
                                       void **mem)
{
    const size_t count = (size_t)t->nvec * t->fine_volume, reals = 2 * (size_t)t->n_fine;
    const size_t bytes = wd_mg_vector_bytes(precision, t->n_fine, count);
    void *v = xalloc(bytes);
    float *norm = xalloc(count * sizeof *norm);
    wd_mg_pack_vectors(precision, t->n_fine, 0, count, (const double *)t->v, v, norm);
    for (size_t i = 0; precision == 2 && i < count; ++i)
        for (size_t r = 0; r < reals; ++r)
            ((double *)t->v)[i * reals + r] = ((const short *)v)[i * reals + r] *
                                              (double)norm[i] / WD_HALF_SCALE;
    mem[0] = dev_alloc(bytes);
    up(mem[0], v, bytes);
    mem[1] = dev_alloc(t->fine_volume * sizeof(int));
    up(mem[1], t->agg, t->fine_volume * sizeof(int));
    mem[2] = dev_alloc(t->fine_volume * sizeof(int));
    up(mem[2], t->sites, t->fine_volume * sizeof(int));
    mem[3] = dev_alloc(count * sizeof *norm);
    up(mem[3], norm, count * sizeof *norm);
    free(v);
    free(norm);
    return (wd_mg_dev_transfer){.fine_host = fine_host, .fine_volume = (int)t->fine_volume,
                                .coarse_volume = (int)t->coarse_volume,
                                .block_volume = t->block_volume, .n_fine = t->n_fine,
                                .nvec = t->nvec, .agg = mem[1], .sites = mem[2],
                                .v_precision = precision, .v = mem[0],
                                .v_norm = precision == 2 ? mem[3] : NULL};
}

static double complex *random_field(size_t n)
{
    double complex *x = xalloc(n * sizeof *x);
    for (size_t i = 0; i < n; ++i) {
        const double re = wd_rng_normal(&rng);
        x[i] = CMPLX(re, wd_rng_normal(&rng));
    }
    return x;
}

/* a host field of volume x n complex as a packed float field (rounded) */
static float *to_packed(const double complex *x, size_t volume, int n)
{
    float *p = xalloc(volume * 2 * n * sizeof *p);
    for (size_t j = 0; j < volume * n; ++j) {
        const size_t s = j / n, i = j % n;
        p[s * 2 * n + i] = (float)creal(x[j]);
        p[s * 2 * n + n + i] = (float)cimag(x[j]);
    }
    return p;
}

static void to_doubles(double *d, const float *p, size_t volume, int n)
{
    for (size_t j = 0; j < volume * n; ++j) {
        const size_t s = j / n, i = j % n;
        d[2 * j] = p[s * 2 * n + i];
        d[2 * j + 1] = p[s * 2 * n + n + i];
    }
}

/* a level-0 transfer of nvec random vectors, orthonormalised (0 on a
 * failure, reported and freed) */
static int random_transfer(wd_mg_transfer *t, const int dims[4], int n_fine, const int block[4],
                           int nvec)
{
    if (wd_mg_transfer_init(t, 0, dims, n_fine, block, nvec, 0) != WD_OK) {
        check_true("transfer init", 0, wd_last_error());
        return 0;
    }
    const size_t fn = t->fine_volume * n_fine;
    for (int k = 0; k < nvec; ++k) {
        double complex *f = random_field(fn);
        wd_mg_vector_set(t, k, f);
        free(f);
    }
    if (wd_mg_orthonormalise(t, 0) != WD_OK) {
        check_true("transfer orthonormalise", 0, wd_last_error());
        wd_mg_transfer_free(t);
        return 0;
    }
    return 1;
}

/* restrict_ and prolong of a transfer with n_fine components: the host
 * layout when fine_host, else packed */
static void test_transfer(const int dims[4], int n_fine, const int block[4], int nvec,
                          int fine_host, int precision)
{
    char name[128];
    wd_mg_transfer t;
    if (!random_transfer(&t, dims, n_fine, block, nvec))
        return;
    const size_t fn = t.fine_volume * n_fine, cn = t.coarse_volume * 2 * nvec;
    void *mem[4];
    const wd_mg_dev_transfer dt = dev_transfer(&t, fine_host, precision, mem);
    /* P^dag: the same (float-rounded) fine field on both sides */
    double complex *f = random_field(fn), *c_ref = xalloc(cn * sizeof *c_ref);
    float *fp = to_packed(f, t.fine_volume, n_fine);
    if (!fine_host)
        to_doubles((double *)f, fp, t.fine_volume, n_fine);
    const size_t fbytes = fine_host ? fn * sizeof(double complex) : fn * 2 * sizeof(float);
    void *dfine = dev_alloc(fbytes);
    float *dcoarse = dev_alloc(cn * 2 * sizeof(float));
    up(dfine, fine_host ? (const void *)f : (const void *)fp, fbytes);
    poison(dcoarse, cn * 2);
    ops->restrict_(&dt, dcoarse, dfine);
    float *cout = xalloc(cn * 2 * sizeof *cout);
    down(cout, dcoarse, cn * 2 * sizeof(float));
    wd_mg_restrict(&t, c_ref, f);
    double *cref_packed = xalloc(cn * 2 * sizeof *cref_packed);
    for (size_t j = 0; j < cn; ++j) {
        const int n = 2 * nvec;
        const size_t s = j / n, i = j % n;
        cref_packed[s * 2 * n + i] = creal(c_ref[j]);
        cref_packed[s * 2 * n + n + i] = cimag(c_ref[j]);
    }
    snprintf(name, sizeof name, "transfer %s nf %d block %d nvec %d v%d: P^dag",
             fine_host ? "host layout" : "packed", n_fine, block[0], nvec, precision);
    check(name, rel_diff_f(cout, cref_packed, cn * 2), 2e-5);

    /* P: a random coarse field (float) to the fine layout */
    double complex *c = random_field(cn), *f_ref = xalloc(fn * sizeof *f_ref);
    float *cp = to_packed(c, t.coarse_volume, 2 * nvec);
    to_doubles((double *)c, cp, t.coarse_volume, 2 * nvec);
    up(dcoarse, cp, cn * 2 * sizeof(float));
    poison(dfine, fbytes / sizeof(float));
    ops->prolong(&dt, dfine, dcoarse);
    wd_mg_prolong(&t, f_ref, c);
    double *fout = xalloc(fn * 2 * sizeof *fout);
    if (fine_host) {
        down(fout, dfine, fbytes);
    } else {
        float *tmp = xalloc(fbytes);
        down(tmp, dfine, fbytes);
        to_doubles(fout, tmp, t.fine_volume, n_fine);
        free(tmp);
    }
    double num = 0, den = 0;
    for (size_t i = 0; i < 2 * fn; ++i) {
        const double d = fabs(fout[i] - ((const double *)f_ref)[i]);
        num = d > num || isnan(d) ? d : num;
        den = fmax(den, fabs(((const double *)f_ref)[i]));
    }
    snprintf(name, sizeof name, "transfer %s nf %d block %d nvec %d v%d: P",
             fine_host ? "host layout" : "packed", n_fine, block[0], nvec, precision);
    check(name, num / den, 2e-5);
    for (int i = 0; i < 4; ++i)
        ops->free(mem[i]);
    ops->free(dfine);
    ops->free(dcoarse);
    free(f);
    free(fp);
    free(c_ref);
    free(cout);
    free(cref_packed);
    free(c);
    free(f_ref);
    free(cp);
    free(fout);
    wd_mg_transfer_free(&t);
}

/* restrict_ and prolong of a host-layout fine field's even sites alone
 * (wd_mg_dev_transfer's fine_sites) against the float64 P^dag of (r_e, 0)
 * and the even part of P c; the odd sites NaN going in, and left as they
 * were coming out */
static void test_transfer_even(const int dims[4], const int block[4], int nvec, int precision)
{
    char name[128];
    wd_mg_transfer t;
    if (!random_transfer(&t, dims, 12, block, nvec))
        return;
    const size_t fn = t.fine_volume * 12, cn = t.coarse_volume * 2 * nvec;
    void *mem[4];
    wd_mg_dev_transfer dt = dev_transfer(&t, 1, precision, mem);
    const size_t half = t.fine_volume / 2;
    int *agg_sites = xalloc(half * sizeof *agg_sites), *fine_sites = xalloc(half * sizeof(int));
    const wd_status pst = wd_mg_parity_sites(&t, 0, agg_sites, fine_sites);
    check_true("even transfer: parity sites", pst == WD_OK, wd_last_error());
    int *dsites = dev_alloc(half * sizeof(int)), *dfine = dev_alloc(half * sizeof(int));
    up(dsites, agg_sites, half * sizeof(int));
    up(dfine, fine_sites, half * sizeof(int));
    dt.fine_volume = (int)half;
    dt.block_volume = t.block_volume / 2;
    dt.sites = dsites;
    dt.fine_sites = dfine;
    char *even = xalloc(t.fine_volume);
    for (size_t i = 0; i < half; ++i)
        even[fine_sites[i]] = 1;
    size_t nodd = 0;
    for (size_t x = 0; x < t.fine_volume; ++x) {
        int sum = 0;
        for (size_t r = x, mu = 0; mu < 4; r /= (size_t)dims[mu], ++mu)
            sum += (int)(r % (size_t)dims[mu]);
        nodd += (sum & 1) != 0;
        if (even[x] != !(sum & 1))
            nodd = t.fine_volume;   /* a site listed with the wrong parity */
    }
    check_true("even transfer: the listed sites are the even ones", nodd == half, "");
    /* P^dag: (r_e, NaN) on the backend, (r_e, 0) in the reference */
    double complex *f = random_field(fn), *c_ref = xalloc(cn * sizeof *c_ref);
    double complex *fz = xalloc(fn * sizeof *fz);
    for (size_t x = 0; x < t.fine_volume; ++x)
        for (int a = 0; a < 12; ++a) {
            fz[x * 12 + a] = even[x] ? f[x * 12 + a] : 0;
            if (!even[x])
                f[x * 12 + a] = CMPLX(NAN, NAN);
        }
    const size_t fbytes = fn * sizeof(double complex);
    void *dfield = dev_alloc(fbytes);
    float *dcoarse = dev_alloc(cn * 2 * sizeof(float));
    up(dfield, f, fbytes);
    poison(dcoarse, cn * 2);
    ops->restrict_(&dt, dcoarse, dfield);
    float *cout = xalloc(cn * 2 * sizeof *cout);
    down(cout, dcoarse, cn * 2 * sizeof(float));
    wd_mg_restrict(&t, c_ref, fz);
    double *cref_packed = xalloc(cn * 2 * sizeof *cref_packed);
    for (size_t j = 0; j < cn; ++j) {
        const int n = 2 * nvec;
        const size_t s = j / n, i = j % n;
        cref_packed[s * 2 * n + i] = creal(c_ref[j]);
        cref_packed[s * 2 * n + n + i] = cimag(c_ref[j]);
    }
    snprintf(name, sizeof name, "even transfer block %dx%dx%dx%d nvec %d v%d: P^dag", block[0],
             block[1], block[2], block[3], nvec, precision);
    check(name, rel_diff_f(cout, cref_packed, cn * 2), 2e-5);
    /* P: the even sites against the float64 P c, the odd ones untouched */
    double complex *c = random_field(cn), *f_ref = xalloc(fn * sizeof *f_ref);
    float *cp = to_packed(c, t.coarse_volume, 2 * nvec);
    to_doubles((double *)c, cp, t.coarse_volume, 2 * nvec);
    up(dcoarse, cp, cn * 2 * sizeof(float));
    for (size_t i = 0; i < fn; ++i)
        fz[i] = CMPLX(7.0, -3.0);
    up(dfield, fz, fbytes);
    ops->prolong(&dt, dfield, dcoarse);
    wd_mg_prolong(&t, f_ref, c);
    double complex *fout = xalloc(fbytes);
    down(fout, dfield, fbytes);
    double num = 0, den = 0;
    int untouched = 1;
    for (size_t x = 0; x < t.fine_volume; ++x)
        for (int a = 0; a < 12; ++a) {
            const size_t i = x * 12 + a;
            if (!even[x]) {
                untouched &= creal(fout[i]) == 7.0 && cimag(fout[i]) == -3.0;
                continue;
            }
            const double d = cabs(fout[i] - f_ref[i]);
            num = d > num || isnan(d) ? d : num;
            den = fmax(den, cabs(f_ref[i]));
        }
    snprintf(name, sizeof name, "even transfer block %dx%dx%dx%d nvec %d v%d: P", block[0],
             block[1], block[2], block[3], nvec, precision);
    check(name, num / den, 2e-5);
    snprintf(name, sizeof name, "even transfer block %dx%dx%dx%d nvec %d v%d: odd sites untouched",
             block[0], block[1], block[2], block[3], nvec, precision);
    check_true(name, untouched, "");
    for (int i = 0; i < 4; ++i)
        ops->free(mem[i]);
    ops->free(dsites);
    ops->free(dfine);
    ops->free(dfield);
    ops->free(dcoarse);
    free(agg_sites);
    free(fine_sites);
    free(even);
    free(f);
    free(fz);
    free(c_ref);
    free(cout);
    free(cref_packed);
    free(c);
    free(f_ref);
    free(cp);
    free(fout);
    wd_mg_transfer_free(&t);
}

/* blocks of odd extents only: an aggregate's sites not half even */
static void test_parity_refused(void)
{
    const int dims[4] = {6, 6, 6, 6}, block[4] = {3, 3, 3, 3};
    wd_mg_transfer t;
    if (wd_mg_transfer_init(&t, 0, dims, 12, block, 4, 0) != WD_OK) {
        check_true("transfer init 3^4", 0, wd_last_error());
        return;
    }
    const size_t half = t.fine_volume / 2;
    int *a = xalloc(half * sizeof *a), *f = xalloc(half * sizeof *f);
    const wd_status st = wd_mg_parity_sites(&t, 0, a, f);
    check_true("even transfer: blocks 3^4 refused", st == WD_ERR_INVALID, wd_last_error());
    free(a);
    free(f);
    wd_mg_transfer_free(&t);
}

/* the coarse operator of a random gauge field, applied by the backend in
 * single or half links against wd_mg_op_apply */
/* a site of a single field rounded to 16 bits as the kernels' store */
static void ref_to_half(int n, const float *x, short *h, float *norm)
{
    float m = 0.0f;
    for (int i = 0; i < 2 * n; ++i)
        m = wd_max_abs(m, x[i]);
    const float sc = wd_half_scale(m);
    for (int i = 0; i < 2 * n; ++i)
        h[i] = wd_round_short(x[i] * sc);
    *norm = m;
}

/* pack_half, move_half and xmy_half on fresh random fields of `volume`
 * sites of n components: `count` distinct random sites written, the rest
 * untouched (poisoned), against host references */
static void test_half_ops(int volume, int n, int count)
{
    char name[96];
    const size_t reals = 2 * (size_t)n;
    float *x = xalloc(volume * reals * sizeof *x), *nrm = xalloc(volume * sizeof *nrm);
    short *h = xalloc(volume * reals * sizeof *h), *want = xalloc(volume * reals * sizeof *h);
    float *want_norm = xalloc(volume * sizeof *want_norm);
    int *perm = xalloc(volume * sizeof *perm);
    for (int i = 0; i < volume; ++i)
        perm[i] = i;
    for (int i = volume - 1; i > 0; --i) {
        const int j = (int)(wd_rng_uniform(&rng) * (i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (size_t i = 0; i < volume * reals; ++i)
        x[i] = (float)wd_rng_normal(&rng) * (i % 7 ? 1.0f : 30.0f);
    /* the poison: 16-bit 0x7f7f, norms NaN */
    memset(want, 0x7f, volume * reals * sizeof *want);
    for (int s = 0; s < volume; ++s)
        want_norm[s] = NAN;
    for (int i = 0; i < count; ++i)
        ref_to_half(n, x + (size_t)i * reals, want + (size_t)perm[i] * reals,
                    want_norm + perm[i]);
    void *dh = dev_alloc(volume * reals * sizeof *h);
    float *dnorm = dev_alloc(volume * sizeof(float)), *dx = dev_alloc(volume * reals * sizeof *x);
    int *dperm = dev_alloc(volume * sizeof(int));
    short *poison16 = xalloc(volume * reals * sizeof *h);
    memset(poison16, 0x7f, volume * reals * sizeof *h);
    up(dh, poison16, volume * reals * sizeof *h);
    poison(dnorm, volume);
    up(dx, x, volume * reals * sizeof *x);
    up(dperm, perm, volume * sizeof(int));
    wd_status st = ops->pack_half(count, n, dperm, dx, dh, dnorm);
    down(h, dh, volume * reals * sizeof *h);
    down(nrm, dnorm, volume * sizeof *nrm);
    /* the norms and the untouched sites exactly; each 16-bit value the
     * host's, or within 1 of it on the GPU (nvcc contracts the rounding
     * add into an FMA with the scaling, as in apply) */
    int same = st == WD_OK, off = 0;
    for (int s = 0; same && s < volume; ++s)
        same = isnan(want_norm[s]) ? isnan(nrm[s]) : nrm[s] == want_norm[s];
    for (size_t i = 0; same && i < volume * reals; ++i) {
        const int d = abs(h[i] - want[i]);
        same = d == 0 || (d == 1 && !isnan(want_norm[i / reals]) && strcmp(ops->name, "cpu"));
        off += d;
    }
    char detail[128];
    snprintf(detail, sizeof detail, "the host rounding's (%d values 1 off), the rest untouched",
             off);
    snprintf(name, sizeof name, "pack_half %d of %d sites x %d", count, volume, n);
    check_true(name, same, st == WD_OK ? detail : wd_last_error());

    /* move_half: the packed sites perm[i] back to site i of a second field */
    void *dh2 = dev_alloc(volume * reals * sizeof *h);
    float *dnorm2 = dev_alloc(volume * sizeof(float));
    up(dh2, poison16, volume * reals * sizeof *h);
    poison(dnorm2, volume);
    short *compact = xalloc(volume * reals * sizeof *h);
    float *compact_norm = xalloc(volume * sizeof *compact_norm);
    for (int i = 0; i < count; ++i) {
        memcpy(compact + (size_t)i * reals, want + (size_t)perm[i] * reals, reals * sizeof *h);
        compact_norm[i] = want_norm[perm[i]];
    }
    up(dh2, compact, (size_t)count * reals * sizeof *h);
    up(dnorm2, compact_norm, count * sizeof(float));
    up(dh, poison16, volume * reals * sizeof *h);
    poison(dnorm, volume);
    st = ops->move_half(count, n, dperm, dh2, dnorm2, dh, dnorm);
    down(h, dh, volume * reals * sizeof *h);
    down(nrm, dnorm, volume * sizeof *nrm);
    same = st == WD_OK && !memcmp(h, want, volume * reals * sizeof *h);
    for (int s = 0; same && s < volume; ++s)
        same = isnan(want_norm[s]) ? isnan(nrm[s]) : nrm[s] == want_norm[s];
    snprintf(name, sizeof name, "move_half %d of %d sites x %d", count, volume, n);
    check_true(name, same, st == WD_OK ? "the same bytes, the rest untouched" : wd_last_error());

    /* xmy_half: y = z - h over the count compact sites, z fresh */
    float *y = xalloc((size_t)count * reals * sizeof *y);
    double *yref = xalloc((size_t)count * reals * sizeof *yref);
    for (size_t i = 0; i < (size_t)count * reals; ++i)
        x[i] = (float)wd_rng_normal(&rng);
    up(dx, x, (size_t)count * reals * sizeof *x);
    for (int i = 0; i < count; ++i)
        for (size_t r = 0; r < reals; ++r)
            yref[(size_t)i * reals + r] =
                (double)x[(size_t)i * reals + r] -
                compact[(size_t)i * reals + r] * (double)compact_norm[i] / WD_HALF_SCALE;
    float *dy = dev_alloc((size_t)count * reals * sizeof *y);
    poison(dy, (size_t)count * reals);
    st = ops->xmy_half(count, n, dx, dh2, dnorm2, dy);
    down(y, dy, (size_t)count * reals * sizeof *y);
    snprintf(name, sizeof name, "xmy_half %d sites x %d", count, n);
    check(name, st == WD_OK ? rel_diff_f(y, yref, (size_t)count * reals) : INFINITY, 1e-6);
    ops->free(dh);
    ops->free(dh2);
    ops->free(dnorm);
    ops->free(dnorm2);
    ops->free(dx);
    ops->free(dy);
    ops->free(dperm);
    free(x);
    free(nrm);
    free(h);
    free(want);
    free(want_norm);
    free(perm);
    free(poison16);
    free(compact);
    free(compact_norm);
    free(y);
    free(yref);
}

/* apply_multi of nrhs right-hand sides (fields of the level's volume and
 * GHOSTS ghost sites, which its neighbour table never reads; random
 * throughout) against apply on each alone (din, dout: scratch of a field,
 * out: its host copy): the same bits, every ghost site of out still
 * poisoned */
enum { GHOSTS = 2 };

static void test_apply_multi(const wd_mg_dev_level *lv, int n, int nrhs, float *din, float *dout,
                             float *out)
{
    char name[128];
    const int vol = lv->layout.volume, half = lv->layout.precision == 2;
    const size_t sites = (size_t)vol + GHOSTS, field = sites * 2 * (size_t)n;
    const size_t all = (size_t)nrhs * field, reals = (size_t)vol * 2 * n;
    wd_mg_dev_level lm = *lv;
    lm.nghost = GHOSTS;
    if (half) {
        lm.hmin = dev_alloc(all * sizeof(short));
        lm.hmout = dev_alloc(all * sizeof(short));
        lm.hmin_norm = dev_alloc((size_t)nrhs * sites * sizeof(float));
        lm.hmout_norm = dev_alloc((size_t)nrhs * sites * sizeof(float));
        lm.hmulti = nrhs;
    }
    float *hin = xalloc(all * sizeof *hin), *hout = xalloc(all * sizeof *hout);
    for (int r = 0; r < nrhs; ++r) {
        double complex *c = random_field(sites * n);
        float *cp = to_packed(c, sites, n);
        memcpy(hin + r * field, cp, field * sizeof *cp);
        free(c);
        free(cp);
    }
    float *dmin = dev_alloc(all * sizeof(float)), *dmout = dev_alloc(all * sizeof(float));
    up(dmin, hin, all * sizeof(float));
    poison(dmout, all);
    const wd_status st = ops->apply_multi(&lm, nrhs, dmout, dmin);
    down(hout, dmout, all * sizeof(float));
    int differ = 0, ghosts = 0;
    wd_status s1 = WD_OK;
    for (int r = 0; st == WD_OK && s1 == WD_OK && r < nrhs; ++r) {
        up(din, hin + r * field, reals * sizeof(float));
        poison(dout, reals);
        s1 = ops->apply(lv, dout, din);
        down(out, dout, reals * sizeof(float));
        differ += memcmp(out, hout + r * field, reals * sizeof(float)) != 0;
        for (size_t i = reals; i < field; ++i)
            ghosts += !isnan(hout[r * field + i]);
    }
    const int k = wd_coarse_find_nrhs(lv->layout.precision, lv->layout.nvec, 0, 0, nrhs);
    snprintf(name, sizeof name, "apply_multi nvec %d %s, %d right-hand sides (n%d kernels) = apply",
             lv->layout.nvec, half ? "half" : "single", nrhs, k);
    char detail[96];
    snprintf(detail, sizeof detail, "%d right-hand sides differ, %d ghost reals written", differ,
             ghosts);
    check_true(name, st == WD_OK && s1 == WD_OK && !differ && !ghosts,
               st == WD_OK && s1 == WD_OK ? detail : wd_last_error());
    if (half) {
        /* too few 16-bit fields: refused, nothing launched */
        lm.hmulti = nrhs - 1;
        snprintf(name, sizeof name, "apply_multi nvec %d half, %d right-hand sides, 16-bit fields "
                 "for %d: refused", lv->layout.nvec, nrhs, nrhs - 1);
        const wd_status refused = ops->apply_multi(&lm, nrhs, dmout, dmin);
        check_true(name, refused == WD_ERR_INVALID,
                   refused == WD_ERR_INVALID ? wd_last_error() : "not refused");
    }
    ops->free(lm.hmin);
    ops->free(lm.hmout);
    ops->free(lm.hmin_norm);
    ops->free(lm.hmout_norm);
    ops->free(dmin);
    ops->free(dmout);
    free(hin);
    free(hout);
}

static void test_apply(const double complex *u, const int dims[4], int nvec, int precision)
{
    char name[96];
    if (wd_coarse_find_axes(precision, nvec, 0, 0, 1) < 0) {
        printf("(apply nvec %d %s: kernel not in this build, skipped)\n", nvec,
               precision == 2 ? "half" : "single");
        return;
    }
    wd_mg_op fine, coarse;
    wd_mg_transfer t;
    const int block[4] = {4, 4, 4, 4};
    if (wd_mg_op_fine(&fine, dims, NULL, (const double *)u, NULL, 0.124, -1) != WD_OK ||
        wd_mg_transfer_init(&t, 0, dims, 12, block, nvec, 0) != WD_OK) {
        check_true("apply: operator", 0, wd_last_error());
        return;
    }
    const size_t fn = t.fine_volume * 12;
    for (int k = 0; k < nvec; ++k) {
        double complex *f = random_field(fn);
        wd_mg_vector_set(&t, k, f);
        free(f);
    }
    if (wd_mg_orthonormalise(&t, 0) != WD_OK || wd_mg_coarse_build(&coarse, &fine, &t) != WD_OK) {
        check_true("apply: coarse build", 0, wd_last_error());
        return;
    }
    const int n = coarse.n;
    wd_coarse_layout lay;
    wd_coarse_layout_make(&lay, (int)coarse.volume, nvec, precision);
    void *links = xalloc(lay.link_bytes);
    float *lnorm = lay.link_norm_bytes ? xalloc(lay.link_norm_bytes) : NULL;
    wd_pack_coarse_links(&lay, links, lnorm, coarse.links);
    wd_mg_dev_level lv = {.layout = lay};
    void *dl = dev_alloc(lay.link_bytes), *dn = dev_alloc(coarse.volume * 8 * sizeof(int));
    up(dl, links, lay.link_bytes);
    up(dn, coarse.nbr, coarse.volume * 8 * sizeof(int));
    lv.links = dl;
    lv.nbr = dn;
    float *dln = NULL;
    if (lnorm) {
        dln = dev_alloc(lay.link_norm_bytes);
        up(dln, lnorm, lay.link_norm_bytes);
        lv.link_norm = dln;
        lv.hin = dev_alloc(lay.spinor_bytes);
        lv.hout = dev_alloc(lay.spinor_bytes);
        lv.hin_norm = dev_alloc(lay.spinor_norm_bytes);
        lv.hout_norm = dev_alloc(lay.spinor_norm_bytes);
    }
    const size_t cn = coarse.volume * n;
    double complex *c = random_field(cn), *want = xalloc(cn * sizeof *want);
    float *cp = to_packed(c, coarse.volume, n), *out = xalloc(cn * 2 * sizeof *out);
    to_doubles((double *)c, cp, coarse.volume, n);
    float *din = dev_alloc(cn * 2 * sizeof(float)), *dout = dev_alloc(cn * 2 * sizeof(float));
    up(din, cp, cn * 2 * sizeof(float));
    poison(dout, cn * 2);
    const wd_status st = ops->apply(&lv, dout, din);
    down(out, dout, cn * 2 * sizeof(float));
    wd_mg_op_apply(&coarse, want, c);
    double *wp = xalloc(cn * 2 * sizeof *wp);
    for (size_t j = 0; j < cn; ++j) {
        const size_t s = j / n, i = j % n;
        wp[s * 2 * n + i] = creal(want[j]);
        wp[s * 2 * n + n + i] = cimag(want[j]);
    }
    snprintf(name, sizeof name, "apply nvec %d %s links vs wd_mg_op_apply", nvec,
             precision == 2 ? "half" : "single");
    check(name, st == WD_OK ? rel_diff_f(out, wp, cn * 2) : INFINITY, precision == 2 ? 1e-3 : 1e-5);

    if (precision == 2) {
        /* apply_half on the input packed by pack_half, widened here: apply's
         * bits */
        const size_t reals = cn * 2;
        short *ho = xalloc(reals * sizeof *ho);
        float *hn = xalloc(coarse.volume * sizeof *hn), *widened = xalloc(reals * sizeof *widened);
        wd_status sh = ops->pack_half((int)coarse.volume, n, NULL, din, lv.hin, lv.hin_norm);
        if (sh == WD_OK)
            sh = ops->apply_half(&lv);
        down(ho, lv.hout, reals * sizeof *ho);
        down(hn, lv.hout_norm, coarse.volume * sizeof *hn);
        for (size_t r = 0; r < reals; ++r)
            widened[r] = wd_s2f(ho[r]) * (hn[r / (2 * n)] * WD_HALF_INV_SCALE);
        snprintf(name, sizeof name, "apply_half nvec %d (pack_half, widened) = apply", nvec);
        check_true(name, sh == WD_OK && !memcmp(widened, out, reals * sizeof *out),
                   sh == WD_OK ? "the same bits" : wd_last_error());
        free(ho);
        free(hn);
        free(widened);
    }

    test_apply_multi(&lv, n, 6, din, dout, out);
    test_apply_multi(&lv, n, 12, din, dout, out);

    ops->free(dl);
    ops->free(dn);
    ops->free(dln);
    ops->free(lv.hin);
    ops->free(lv.hout);
    ops->free(lv.hin_norm);
    ops->free(lv.hout_norm);
    ops->free(din);
    ops->free(dout);
    free(links);
    free(lnorm);
    free(c);
    free(want);
    free(cp);
    free(out);
    free(wp);
    wd_mg_op_free(&fine);
    wd_mg_op_free(&coarse);
    wd_mg_transfer_free(&t);
}

int main(int argc, char **argv)
{
    uint64_t seed = (uint64_t)time(NULL);
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--backend") && i + 1 < argc)
            ++i;
        else {
            fprintf(stderr, "usage: test_mg_dev [--seed N] [--backend cpu|cuda]\n");
            return 2;
        }
    }
    const wd_backend_kind kind = test_backend_arg(argc, argv);
    ops = kind == WD_BACKEND_CUDA ? wd_mg_dev_cuda_ops() : &wd_mg_dev_cpu_ops;
    if (!ops) {
        printf("SKIP: this build has no CUDA coarse levels\n");
        return 77;
    }
    printf("test_mg_dev: seed %llu, backend %s\n", (unsigned long long)seed, ops->name);
    wd_rng_seed(&rng, seed);
    test_blas(37, 48);
    test_blas(3456, 48);
    test_blas(16, 16);
    const int lane_counts[4] = {1, 5, 12, WD_MG_DEV_LANES}, lane_ks[3] = {1, 7, WD_MG_DEV_MULTI};
    for (int v = 0; v < 2; ++v)
        for (int l = 0; l < 4; ++l)
            for (int t = 0; t < 3; ++t)
                test_lanes(v ? 1500 : 37, 48, lane_counts[l], lane_ks[t]);
    test_lanes_zero(37, 48, 5, 7);
    test_lanes_zero(1500, 48, WD_MG_DEV_LANES, WD_MG_DEV_MULTI);
    test_half_ops(3456, 48, 1728);
    test_half_ops(37, 16, 37);
    const int dims[4] = {8, 8, 8, 8}, b4[4] = {4, 4, 4, 4}, b2[4] = {2, 2, 2, 2};
    const int cdims[4] = {4, 4, 4, 4};
    for (int prec = 4; prec >= 2; prec -= 2) {
        test_transfer(dims, 12, b4, 8, 1, prec);
        test_transfer(dims, 12, b4, 24, 1, prec);
        test_transfer(dims, 12, b2, 8, 1, prec);
        test_transfer(dims, 16, b2, 8, 0, prec);
        test_transfer(cdims, 48, b2, 24, 0, prec);
        const int b2111[4] = {2, 1, 1, 1};
        test_transfer_even(dims, b4, 8, prec);
        test_transfer_even(dims, b4, 24, prec);
        test_transfer_even(dims, b2111, 8, prec);
    }
    test_parity_refused();
    double complex *u = xalloc(wd_volume(dims) * 36 * sizeof *u);
    if (wd_gauge_init((double *)u, dims, WD_START_HOT, seed) != WD_OK) {
        check_true("random gauge field", 0, wd_last_error());
    } else {
        test_apply(u, dims, 8, 4);
        test_apply(u, dims, 8, 2);
        test_apply(u, dims, 24, 4);
        test_apply(u, dims, 24, 2);
    }
    free(u);
    /* last: its failures' messages would stand in later checks' details */
    test_lanes_refused();
    printf("%d of %d failed\n", checks_failed, checks_run);
    return checks_failed ? 1 : 0;
}
