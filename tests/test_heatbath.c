/*
 * test_heatbath.c: the counter-based random numbers (runtime/gauge/philox.h),
 * the per-link Monte Carlo arithmetic (runtime/gauge/heatbath_link.h) and the
 * CPU sweep and observables (runtime/gauge/heatbath.c).  One line per check with
 * the measured value and its bound; "N of M failed" last; exit 0 when all
 * pass, 1 otherwise.
 *
 *   test_heatbath [--seed N]     (default seed: the time, printed)
 *
 * Checks:
 *   philox        Random123's known-answer vectors for Philox4x32-10; the
 *                 ends of wd_philox_u01's range (0, 1]
 *   su2 sampler   for alpha from 0 to 30 (both the Creutz and the Kennedy-
 *                 Pendleton branch): |x| = 1, <x0> and <x0^2> against the
 *                 density sqrt(1 - x0^2) exp(alpha x0) integrated
 *                 numerically, a Kolmogorov-Smirnov test of x0, and an
 *                 isotropic direction
 *   link          overrelaxation keeps Re tr(U A) and SU(3); a heatbath
 *                 link is SU(3)
 *   fields        cold start exact; hot start SU(3) with Haar moments;
 *                 plaquette, link trace and Polyakov loop against a
 *                 reference written here from the definitions; plaquette
 *                 and Polyakov loop gauge invariant; overrelaxation sweeps
 *                 keep the plaquette (which proves the sweep's staples)
 *   reproducible  same seed and sweep indices, same field bit for bit, on 1
 *                 and on 2 threads; another seed or sweep index, another field
 *   strong coupling  at beta = 0.5 and 1 on 6^4 the plaquette equals the
 *                 one-plaquette value u(beta) = d ln z / d beta, z = the SU(3)
 *                 integral of exp(beta/3 Re tr U) (= beta/18 + beta^2/216 +
 *                 ...; lattice corrections start at 4 u^5 < 4e-6)
 *   errors        bad beta, n_or, extents: WD_ERR_INVALID with a message
 *
 * Tolerances: rounding checks 1e-12 (sums of ~10^4 products of unit-size
 * numbers); statistical checks 6 standard deviations of the estimator (a
 * false alarm about once in 10^8 runs per check) unless stated; the KS
 * statistic sqrt(N) D < 2.3 (p = 5e-5).
 */
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "gauge_tools.h"
#include "heatbath_link.h"
#include "philox.h"
#include "wdirac_gauge.h"

static const double PI = 3.14159265358979323846264338327950288;

static int checks_run, checks_failed;

static void check(const char *what, double err, double tol)
{
    const int ok = err <= tol;
    checks_run++;
    checks_failed += !ok;
    printf("%-62s %s err=%.2e tol=%.2e\n", what, ok ? "OK  " : "FAIL", err, tol);
}

static void check_true(const char *what, int ok, const char *detail)
{
    checks_run++;
    checks_failed += !ok;
    printf("%-62s %s %s\n", what, ok ? "OK  " : "FAIL", detail ? detail : "");
}

static double *alloc_gauge(const int dims[4])
{
    double *p = malloc(72 * wd_volume(dims) * sizeof *p);
    if (!p) {
        fprintf(stderr, "test_heatbath: out of memory\n");
        exit(1);
    }
    return p;
}

static double unitarity(const double *u, size_t nlinks)
{
    return wd_su3_unitarity_error((const double complex *)(const void *)u, nlinks);
}

static void must(wd_status st, const char *what)
{
    if (st != WD_OK) {
        fprintf(stderr, "test_heatbath: %s: %s\n", what, wd_last_error());
        exit(1);
    }
}

/* ---------------------------------------------------------------------- */

static void test_philox(void)
{
    /* Random123 examples/kat_vectors: "philox4x32 10 CTR(4) KEY(2) OUT(4)" */
    static const uint32_t kat[3][10] = {
        {0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000,
         0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff,
         0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0,
         0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1},
    };
    int wrong = 0;
    for (int v = 0; v < 3; v++) {
        uint32_t out[4];
        wd_philox4x32_10(kat[v], kat[v] + 4, out);
        for (int k = 0; k < 4; k++)
            wrong += out[k] != kat[v][6 + k];
    }
    check("philox: Random123 known-answer vectors (3 x 4 words)", wrong, 0);
    check("philox: u01(0, 0) = 2^-53 (never 0)", fabs(wd_philox_u01(0, 0) - 0x1.0p-53), 0);
    check("philox: u01(~0, ~0) = 1", fabs(wd_philox_u01(0xffffffffu, 0xffffffffu) - 1.0), 0);
}

/* ---------------------------------------------------------------------- */
/* SU(2) sampler                                                           */

enum { QUAD = 20000 };

/* integral over x0 in [-1, x] of sqrt(1 - t^2) exp(alpha (t - 1)) t^p,
 * tabulated in theta (t = cos theta): smooth integrand, trapezoid rule */
typedef struct density {
    double alpha;
    double cdf[QUAD + 1]; /* at theta_k = pi (1 - k/QUAD), x = cos theta_k ascending */
    double moment[5];     /* <x0^p>, p = 0..4 */
} density;

static void make_density(density *d, double alpha)
{
    d->alpha = alpha;
    double m[5] = {0};
    d->cdf[0] = 0;
    double prev = 0;
    const double h = PI / QUAD;
    for (int k = 0; k <= QUAD; k++) {
        const double th = PI * (1.0 - (double)k / QUAD);
        const double t = cos(th), s = sin(th);
        const double f = s * s * exp(alpha * (t - 1.0));
        if (k > 0)
            d->cdf[k] = d->cdf[k - 1] + 0.5 * h * (f + prev);
        prev = f;
        const double w = (k == 0 || k == QUAD) ? 0.5 * h : h;
        double tp = 1;
        for (int p = 0; p < 5; p++, tp *= t)
            m[p] += w * f * tp;
    }
    for (int k = 0; k <= QUAD; k++)
        d->cdf[k] /= d->cdf[QUAD];
    for (int p = 0; p < 5; p++)
        d->moment[p] = m[p] / m[0];
}

static double density_cdf(const density *d, double x)
{
    if (x <= -1)
        return 0;
    if (x >= 1)
        return 1;
    const double pos = (1.0 - acos(x) / PI) * QUAD;
    const int k = (int)pos;
    if (k >= QUAD)
        return 1;
    return d->cdf[k] + (pos - k) * (d->cdf[k + 1] - d->cdf[k]);
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void test_su2_sampler(uint64_t seed)
{
    static const double alphas[] = {0.0, 0.3, 1.0, 1.69, 1.71, 3.0, 8.0, 30.0};
    enum { N = 100000 };
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    double *x0s = malloc(N * sizeof *x0s);
    density *d = malloc(sizeof *d);
    if (!x0s || !d)
        exit(1);
    char what[128];

    for (size_t a = 0; a < sizeof alphas / sizeof alphas[0]; a++) {
        const double alpha = alphas[a];
        make_density(d, alpha);
        double s1 = 0, s2 = 0, v[4] = {0}, v2[4] = {0}, norm_err = 0;
        int gave_up = 0;
        for (int i = 0; i < N; i++) {
            uint32_t ctr[4];
            double x[4];
            wd_hb_ctr(ctr, (uint32_t)i, (int)(a % 4), 1, 0, 1000 + a);
            if (!wd_hb_su2_sample(alpha, key, ctr, x)) {
                gave_up++;
                x0s[i] = 0;
                continue;
            }
            norm_err = fmax(norm_err, fabs(x[0] * x[0] + x[1] * x[1] + x[2] * x[2] +
                                           x[3] * x[3] - 1.0));
            x0s[i] = x[0];
            s1 += x[0];
            s2 += x[0] * x[0];
            for (int k = 1; k < 4; k++) {
                v[k] += x[k];
                v2[k] += x[k] * x[k];
            }
        }
        snprintf(what, sizeof what, "su2 alpha=%-5g: sampler gave up (of %d)", alpha, N);
        check(what, gave_up, 0);
        snprintf(what, sizeof what, "su2 alpha=%-5g: |x|^2 - 1", alpha);
        check(what, norm_err, 1e-14);

        const double *m = d->moment;
        snprintf(what, sizeof what, "su2 alpha=%-5g: <x0> = %.6f", alpha, m[1]);
        check(what, fabs(s1 / N - m[1]), 6 * sqrt((m[2] - m[1] * m[1]) / N));
        snprintf(what, sizeof what, "su2 alpha=%-5g: <x0^2> = %.6f", alpha, m[2]);
        check(what, fabs(s2 / N - m[2]), 6 * sqrt((m[4] - m[2] * m[2]) / N));
        /* each x_k has mean 0 and variance (1 - <x0^2>)/3; x_k^2 has
         * variance below <x_k^4> <= (1 - x0^2)^2 <= 1 */
        const double var = (1.0 - m[2]) / 3.0;
        double dmax = 0, d2max = 0;
        for (int k = 1; k < 4; k++) {
            dmax = fmax(dmax, fabs(v[k] / N));
            d2max = fmax(d2max, fabs(v2[k] / N - var));
        }
        snprintf(what, sizeof what, "su2 alpha=%-5g: direction <x_k> = 0", alpha);
        check(what, dmax, 6 * sqrt(var / N));
        snprintf(what, sizeof what, "su2 alpha=%-5g: direction <x_k^2> = (1-<x0^2>)/3", alpha);
        check(what, d2max, 6 * sqrt(1.0 / N));

        qsort(x0s, N, sizeof *x0s, cmp_double);
        double ks = 0;
        for (int i = 0; i < N; i++) {
            const double f = density_cdf(d, x0s[i]);
            ks = fmax(ks, fmax(fabs(f - (double)i / N), fabs(f - (double)(i + 1) / N)));
        }
        snprintf(what, sizeof what, "su2 alpha=%-5g: Kolmogorov-Smirnov sqrt(N) D of x0", alpha);
        check(what, sqrt((double)N) * ks, 2.3);
    }
    free(x0s);
    free(d);
}

/* ---------------------------------------------------------------------- */
/* one link                                                                */

static void random_su3(double *m, wd_rng *r)
{
    double complex c[3][3];
    wd_su3_random(c, r);
    for (int i = 0; i < 9; i++) {
        m[2 * i] = creal((&c[0][0])[i]);
        m[2 * i + 1] = cimag((&c[0][0])[i]);
    }
}

static void test_link(wd_rng *r, uint64_t seed)
{
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    double or_action = 0, or_unit = 0, hb_unit = 0, moved = 0;
    for (int trial = 0; trial < 1000; trial++) {
        double u[18], a[18] = {0}, m[18], w[18];
        random_su3(u, r);
        for (int s = 0; s < 6; s++) {
            random_su3(m, r);
            for (int k = 0; k < 18; k++)
                a[k] += m[k];
        }
        wd_m3_mul_nn(w, u, a);
        const double before = w[0] + w[8] + w[16];
        double v[18];
        memcpy(v, u, sizeof v);
        wd_hb_overrelax_link(v, a);
        wd_m3_mul_nn(w, v, a);
        or_action = fmax(or_action, fabs(w[0] + w[8] + w[16] - before));
        or_unit = fmax(or_unit, unitarity(v, 1));
        for (int k = 0; k < 18; k++)
            moved = fmax(moved, fabs(v[k] - u[k]));

        uint32_t ctr[4];
        wd_hb_ctr(ctr, (uint32_t)trial, 1, 0, 0, 7);
        wd_hb_heatbath_link(u, a, 6.0, key, ctr);
        hb_unit = fmax(hb_unit, unitarity(u, 1));
    }
    check("link: overrelaxation keeps Re tr(U A) (1000 links)", or_action, 1e-12);
    check("link: overrelaxation keeps U in SU(3)", or_unit, 1e-13);
    check_true("link: overrelaxation moves U", moved > 0.1, NULL);
    check("link: heatbath gives SU(3)", hb_unit, 1e-13);
}

/* ---------------------------------------------------------------------- */
/* fields                                                                  */

static const double complex *cl(const double complex *u, const int d[4], const int x[4], int mu)
{
    const size_t site = (size_t)x[0] + (size_t)d[0] * ((size_t)x[1] + (size_t)d[1] *
                        ((size_t)x[2] + (size_t)d[2] * (size_t)x[3]));
    return u + 9 * (4 * site + (size_t)mu);
}

static void cmul(double complex *c, const double complex *a, const double complex *b, int dag_b)
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double complex s = 0;
            for (int k = 0; k < 3; k++)
                s += a[3 * i + k] * (dag_b ? conj(b[3 * j + k]) : b[3 * k + j]);
            c[3 * i + j] = s;
        }
}

/* the observables from their definitions, on double complex */
static void reference_obs(const double *uu, const int d[4], wd_gauge_obs *o)
{
    const double complex *u = (const double complex *)(const void *)uu;
    double ps = 0, pt = 0, lt = 0;
    double complex poly = 0;
    int x[4];
    for (x[3] = 0; x[3] < d[3]; x[3]++)
        for (x[2] = 0; x[2] < d[2]; x[2]++)
            for (x[1] = 0; x[1] < d[1]; x[1]++)
                for (x[0] = 0; x[0] < d[0]; x[0]++)
                    for (int mu = 0; mu < 4; mu++) {
                        const double complex *m = cl(u, d, x, mu);
                        lt += creal(m[0] + m[4] + m[8]);
                        for (int nu = mu + 1; nu < 4; nu++) {
                            int xm[4] = {x[0], x[1], x[2], x[3]}, xn[4] = {x[0], x[1], x[2], x[3]};
                            xm[mu] = (xm[mu] + 1) % d[mu];
                            xn[nu] = (xn[nu] + 1) % d[nu];
                            double complex a[9], b[9], c[9];
                            cmul(a, m, cl(u, d, xm, nu), 0);      /* U_mu(x) U_nu(x+mu) */
                            cmul(b, a, cl(u, d, xn, mu), 1);      /* ... U_mu(x+nu)^dag */
                            cmul(c, b, cl(u, d, x, nu), 1);       /* ... U_nu(x)^dag */
                            const double p = creal(c[0] + c[4] + c[8]);
                            if (nu == 3)
                                pt += p;
                            else
                                ps += p;
                        }
                    }
    for (x[2] = 0; x[2] < d[2]; x[2]++)
        for (x[1] = 0; x[1] < d[1]; x[1]++)
            for (x[0] = 0; x[0] < d[0]; x[0]++) {
                double complex p[9], q[9];
                x[3] = 0;
                memcpy(p, cl(u, d, x, 3), sizeof p);
                for (x[3] = 1; x[3] < d[3]; x[3]++) {
                    cmul(q, p, cl(u, d, x, 3), 0);
                    memcpy(p, q, sizeof p);
                }
                poly += p[0] + p[4] + p[8];
            }
    const double v = (double)wd_volume(d);
    o->plaquette_space = ps / (9 * v);
    o->plaquette_time = pt / (9 * v);
    o->plaquette = (ps + pt) / (18 * v);
    o->link_trace = lt / (12 * v);
    o->poly_re = creal(poly) / (3 * v / d[3]);
    o->poly_im = cimag(poly) / (3 * v / d[3]);
}

static double obs_diff(const wd_gauge_obs *a, const wd_gauge_obs *b)
{
    return fmax(fmax(fabs(a->plaquette - b->plaquette), fabs(a->plaquette_space - b->plaquette_space)),
                fmax(fmax(fabs(a->plaquette_time - b->plaquette_time), fabs(a->link_trace - b->link_trace)),
                     fmax(fabs(a->poly_re - b->poly_re), fabs(a->poly_im - b->poly_im))));
}

static void test_fields(wd_rng *r, uint64_t seed)
{
    const int dims[4] = {4, 6, 4, 8};
    const size_t nlinks = 4 * wd_volume(dims);
    double *u = alloc_gauge(dims);
    wd_gauge_obs o, ref;

    must(wd_gauge_init(u, dims, WD_START_COLD, seed), "cold start");
    must(wd_gauge_observables(u, dims, &o), "observables");
    check("fields: cold start plaquette, link trace, Polyakov loop = 1",
          fmax(fmax(fabs(o.plaquette - 1), fabs(o.link_trace - 1)),
               fmax(fabs(o.poly_re - 1), fabs(o.poly_im))), 0);

    must(wd_gauge_init(u, dims, WD_START_HOT, seed), "hot start");
    check("fields: hot start is SU(3)", unitarity(u, nlinks), 1e-13);
    /* Haar: E tr U = 0, E |tr U|^2 = 1 (sd of the means 1/sqrt(n), 1/sqrt(n)) */
    double complex m1 = 0;
    double m2 = 0;
    for (size_t l = 0; l < nlinks; l++) {
        const double *m = u + 18 * l;
        const double complex t = (m[0] + m[8] + m[16]) + I * (m[1] + m[9] + m[17]);
        m1 += t;
        m2 += creal(t * conj(t));
    }
    check("fields: hot start Haar E tr U = 0", cabs(m1) / nlinks, 6 / sqrt((double)nlinks));
    check("fields: hot start Haar E |tr U|^2 = 1", fabs(m2 / nlinks - 1), 6 / sqrt((double)nlinks));

    for (int s = 0; s < 3; s++)
        must(wd_gauge_heatbath_sweep(u, dims, 5.7, seed, (uint64_t)s, 1), "sweep");
    must(wd_gauge_observables(u, dims, &o), "observables");
    reference_obs(u, dims, &ref);
    check("fields: observables = reference from the definitions", obs_diff(&o, &ref), 1e-12);

    double complex *g = malloc(9 * wd_volume(dims) * sizeof *g);
    if (!g)
        exit(1);
    wd_gauge_transform_random(g, dims, r);
    wd_gauge_transform((double complex *)(void *)u, g, dims);
    free(g);
    wd_gauge_obs ot;
    must(wd_gauge_observables(u, dims, &ot), "observables");
    check("fields: plaquette gauge invariant",
          fmax(fabs(ot.plaquette - o.plaquette), fmax(fabs(ot.plaquette_space - o.plaquette_space),
                                                       fabs(ot.plaquette_time - o.plaquette_time))),
          1e-12);
    check("fields: Polyakov loop gauge invariant",
          fmax(fabs(ot.poly_re - o.poly_re), fabs(ot.poly_im - o.poly_im)), 1e-12);

    double *before = alloc_gauge(dims);
    memcpy(before, u, 72 * wd_volume(dims) * sizeof *u);
    must(wd_gauge_overrelax_sweep(u, dims, 3), "overrelaxation");
    must(wd_gauge_observables(u, dims, &ot), "observables");
    check("fields: 3 overrelaxation sweeps keep the plaquette", fabs(ot.plaquette - o.plaquette),
          1e-12);
    double moved = 0;
    for (size_t k = 0; k < 72 * wd_volume(dims); k++)
        moved = fmax(moved, fabs(u[k] - before[k]));
    check_true("fields: ... and change the links (max |dU| > 0.1)", moved > 0.1, NULL);
    free(before);
    free(u);
}

/* ---------------------------------------------------------------------- */

static void run(double *u, const int dims[4], uint64_t seed, int threads, int nsweeps, int n_or)
{
#ifdef _OPENMP
    omp_set_num_threads(threads);
#else
    (void)threads;
#endif
    must(wd_gauge_init(u, dims, WD_START_HOT, seed), "hot start");
    for (int s = 0; s < nsweeps; s++)
        must(wd_gauge_heatbath_sweep(u, dims, 6.0, seed, (uint64_t)s, n_or), "sweep");
}

static void test_reproducible(uint64_t seed)
{
    const int dims[4] = {4, 6, 4, 8};
    const size_t n = 72 * wd_volume(dims);
    double *a = alloc_gauge(dims), *b = alloc_gauge(dims);
#ifdef _OPENMP
    const int max_threads = omp_get_max_threads();
#endif
    run(a, dims, seed, 1, 3, 2);
    run(b, dims, seed, 1, 3, 2);
    check_true("reproducible: same seed, same field (bitwise, 1 thread)",
               !memcmp(a, b, n * sizeof *a), NULL);
    run(b, dims, seed, 2, 3, 2);
    check_true("reproducible: 1 thread = 2 threads (bitwise)", !memcmp(a, b, n * sizeof *a), NULL);
    wd_gauge_obs oa, ob;
#ifdef _OPENMP
    omp_set_num_threads(1);
#endif
    must(wd_gauge_observables(a, dims, &oa), "observables");
#ifdef _OPENMP
    omp_set_num_threads(2);
#endif
    must(wd_gauge_observables(a, dims, &ob), "observables");
    check_true("reproducible: observables on 1 and 2 threads (bitwise)",
               !memcmp(&oa, &ob, sizeof oa), NULL);

    run(b, dims, seed + 1, 2, 3, 2);
    size_t same = 0;
    for (size_t k = 0; k < n; k++)
        same += a[k] == b[k];
    check("reproducible: seed + 1 shares no link entries (fraction)", (double)same / n, 0);

    /* the same start, the sweep indices shifted by one */
    must(wd_gauge_init(b, dims, WD_START_HOT, seed), "hot start");
    for (int s = 1; s <= 3; s++)
        must(wd_gauge_heatbath_sweep(b, dims, 6.0, seed, (uint64_t)s, 2), "sweep");
    same = 0;
    for (size_t k = 0; k < n; k++)
        same += a[k] == b[k];
    check("reproducible: sweep indices + 1 share no link entries", (double)same / n, 0);
#ifdef _OPENMP
    omp_set_num_threads(max_threads);
#endif
    free(a);
    free(b);
}

/* ---------------------------------------------------------------------- */
/* strong coupling                                                         */

/* u(beta) = <Re tr U / 3> with weight exp(beta/3 Re tr U) over SU(3):
 * Weyl's integration formula over the eigenphases (t1, t2, -t1-t2),
 * |Delta|^2 = prod_{j<k} |e^{i tj} - e^{i tk}|^2; the integrand is
 * periodic and smooth, so the trapezoid rule converges exponentially. */
static double one_plaquette(double beta)
{
    enum { NG = 256 };
    double z = 0, zt = 0;
    for (int i = 0; i < NG; i++)
        for (int j = 0; j < NG; j++) {
            const double t[3] = {2 * PI * i / NG, 2 * PI * j / NG, -2 * PI * (i + j) / NG};
            double vdm = 1;
            for (int a = 0; a < 3; a++)
                for (int b = a + 1; b < 3; b++)
                    vdm *= 2 - 2 * cos(t[a] - t[b]);
            const double tr = (cos(t[0]) + cos(t[1]) + cos(t[2])) / 3;
            const double w = vdm * exp(beta * tr);
            z += w;
            zt += w * tr;
        }
    return zt / z;
}

static void test_strong_coupling(uint64_t seed)
{
    const int dims[4] = {6, 6, 6, 6};
    enum { THERM = 20, MEAS = 300, BIN = 10 };
    double *u = alloc_gauge(dims);
    char what[160];
    static const double betas[] = {0.5, 1.0};
    for (int bi = 0; bi < 2; bi++) {
        const double beta = betas[bi];
        must(wd_gauge_init(u, dims, WD_START_HOT, seed + (uint64_t)bi), "hot start");
        double bins[MEAS / BIN] = {0};
        for (int s = 0; s < THERM + MEAS; s++) {
            must(wd_gauge_heatbath_sweep(u, dims, beta, seed + (uint64_t)bi, (uint64_t)s, 0), "sweep");
            if (s >= THERM) {
                wd_gauge_obs o;
                must(wd_gauge_observables(u, dims, &o), "observables");
                bins[(s - THERM) / BIN] += o.plaquette / BIN;
            }
        }
        double m = 0, m2 = 0;
        const int nb = MEAS / BIN;
        for (int k = 0; k < nb; k++) {
            m += bins[k] / nb;
            m2 += bins[k] * bins[k] / nb;
        }
        const double err = sqrt(fmax(0, m2 - m * m) / (nb - 1));
        const double exact = one_plaquette(beta);
        printf("   strong coupling beta=%g: plaquette %.6f +- %.6f; one-plaquette u(beta) %.6f, "
               "beta/18 %.6f, beta/18 + beta^2/216 %.6f\n",
               beta, m, err, exact, beta / 18, beta / 18 + beta * beta / 216);
        snprintf(what, sizeof what, "strong coupling beta=%g: plaquette = u(beta), 6^4", beta);
        check(what, fabs(m - exact), 6 * err + 2e-5);
        snprintf(what, sizeof what, "strong coupling beta=%g: and != beta/18 alone (>2 sd)", beta);
        check_true(what, fabs(m - beta / 18) > 2 * err, NULL);
    }
    free(u);
}

static void test_errors(void)
{
    const int dims[4] = {4, 4, 4, 4}, odd[4] = {4, 5, 4, 4};
    double *u = alloc_gauge(dims);
    must(wd_gauge_init(u, dims, WD_START_COLD, 1), "cold start");
    wd_status st = wd_gauge_heatbath_sweep(u, dims, -1.0, 1, 0, 0);
    check_true("errors: beta = -1 is WD_ERR_INVALID", st == WD_ERR_INVALID && strstr(wd_last_error(), "beta"),
               wd_last_error());
    st = wd_gauge_heatbath_sweep(u, dims, NAN, 1, 0, 0);
    check_true("errors: beta = NaN is WD_ERR_INVALID", st == WD_ERR_INVALID, wd_last_error());
    st = wd_gauge_heatbath_sweep(u, dims, 6.0, 1, 0, -1);
    check_true("errors: n_or = -1 is WD_ERR_INVALID", st == WD_ERR_INVALID && strstr(wd_last_error(), "n_or"),
               wd_last_error());
    st = wd_gauge_heatbath_sweep(u, odd, 6.0, 1, 0, 0);
    check_true("errors: odd extent is WD_ERR_INVALID", st == WD_ERR_INVALID, wd_last_error());
    st = wd_gauge_init(u, dims, (wd_gauge_start)7, 1);
    check_true("errors: unknown start is WD_ERR_INVALID", st == WD_ERR_INVALID, wd_last_error());
    free(u);
}

int main(int argc, char **argv)
{
    uint64_t seed = (uint64_t)time(NULL);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
        else {
            fprintf(stderr, "usage: test_heatbath [--seed N]\n");
            return 2;
        }
    }
    printf("test_heatbath: seed %llu (replay with --seed %llu)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    wd_rng r;
    wd_rng_seed(&r, seed);

    test_philox();
    test_su2_sampler(seed);
    test_link(&r, seed);
    test_fields(&r, seed);
    test_reproducible(seed);
    test_strong_coupling(seed);
    test_errors();

    printf("%d of %d failed\n", checks_failed, checks_run);
    return checks_failed ? 1 : 0;
}
