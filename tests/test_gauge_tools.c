/*
 * test_gauge_tools.c: checks the random number generator (runtime/core/rng.c)
 * and the gauge-field tools (runtime/gauge/gauge_tools.c).  One line per check
 * with the measured value and its bound; "N of M failed" last; exit 0 when
 * all pass, 1 otherwise.
 *
 *   test_gauge_tools [--seed N]     (default seed: the time, printed)
 *
 * Checks:
 *   rng             published splitmix64 and xoshiro256** values; same seed,
 *                   same stream; uniform and normal moments
 *   SU(3)           unitarity and det of random, smooth, transform and unit
 *                   fields; Haar moments E tr U = 0, E |tr U|^2 = 1 and
 *                   E (tr U)^3 = 1 (the last is 0 on U(3): it sees the det
 *                   fix); the error measure flags broken links
 *   smooth field    exactly 1 at eps = 0, SU(3) for eps up to 1e6, |U - 1|
 *                   of order eps, E|U_ij|^2 = eps^2 off the diagonal
 *   transforms      every plaquette trace unchanged by a random gauge
 *                   transformation; spinor_transform with dagger undoes it
 *
 * Tolerances: rounding checks allow 1e-13 against ~1e-15 expected (a
 * handful of 3x3 products of unit-size numbers); statistical checks allow
 * 6 standard deviations of the estimator (a false alarm about once in 10^8
 * runs per check), the standard deviation stated beside each.
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

static const double TOL = 1e-13;

static int checks_run, checks_failed;

/* passes when err <= tol; a NaN fails */
static void check(const char *what, double err, double tol)
{
    const int ok = err <= tol;
    checks_run++;
    checks_failed += !ok;
    printf("%-58s %s err=%.2e tol=%.0e\n", what, ok ? "OK  " : "FAIL", err, tol);
}

/* passes when value >= floor: for checks that something is detected */
static void check_at_least(const char *what, double value, double floor)
{
    const int ok = value >= floor;
    checks_run++;
    checks_failed += !ok;
    printf("%-58s %s value=%.2e min=%.0e\n", what, ok ? "OK  " : "FAIL", value, floor);
}

static double complex *alloc_field(size_t n)
{
    double complex *p = calloc(n, sizeof *p);
    if (!p) {
        fprintf(stderr, "test_gauge_tools: out of memory (%zu complex)\n", n);
        exit(1);
    }
    return p;
}

/* ---------------------------------------------------------------------- */
/* rng                                                                     */

static void test_rng(uint64_t seed)
{
    wd_rng a, b;

    /* splitmix64 from state 0: the published first outputs, which are the
     * state after seeding with 0 */
    static const uint64_t splitmix0[4] = {
        0xe220a8397b1dcdafu, 0x6e789e6aa1b965f4u, 0x06c45d188009454fu, 0xf88bb8a8724c81ecu};
    wd_rng_seed(&a, 0);
    int wrong = 0;
    for (int i = 0; i < 4; i++)
        wrong += a.s[i] != splitmix0[i];
    check("rng: seed 0 gives splitmix64's published outputs", wrong, 0);

    /* xoshiro256** from state {1, 2, 3, 4}: the first three outputs worked
     * by hand from the algorithm, the fourth the published value */
    static const uint64_t xoshiro1234[4] = {11520u, 0u, 1509978240u, 1215971899390074240u};
    a.s[0] = 1, a.s[1] = 2, a.s[2] = 3, a.s[3] = 4;
    wrong = 0;
    for (int i = 0; i < 4; i++)
        wrong += wd_rng_u64(&a) != xoshiro1234[i];
    check("rng: xoshiro256** outputs from state {1,2,3,4}", wrong, 0);

    enum { N = 1000000 };
    wd_rng_seed(&a, seed);
    wd_rng_seed(&b, seed);
    wrong = 0;
    for (int i = 0; i < 10000; i++) {
        wrong += wd_rng_u64(&a) != wd_rng_u64(&b);
        wrong += wd_rng_normal(&a) != wd_rng_normal(&b);
    }
    check("rng: same seed, same stream (10^4 u64 and normals)", wrong, 0);

    wd_rng_seed(&a, seed);
    wd_rng_seed(&b, seed + 1);
    int same = 0;
    for (int i = 0; i < 100; i++)
        same += wd_rng_u64(&a) == wd_rng_u64(&b);
    check("rng: seeds N and N+1 share no output (of 100)", same, 0);

    wd_rng_seed(&a, seed);
    double lo = 1, hi = 0, sum = 0;
    for (int i = 0; i < N; i++) {
        const double x = wd_rng_uniform(&a);
        lo = fmin(lo, x);
        hi = fmax(hi, x);
        sum += x;
    }
    check_at_least("rng: uniform >= 0, min over 10^6", lo, 0);
    check_at_least("rng: uniform < 1, 1 - max over 10^6", 1 - hi, 0x1.0p-53);
    /* sd of the mean: sqrt(1/12 / N) = 2.9e-4 */
    check("rng: uniform mean - 1/2 (10^6 draws)", fabs(sum / N - 0.5), 6 * sqrt(1.0 / 12 / N));

    double s1 = 0, s2 = 0;
    for (int i = 0; i < N; i++) {
        const double x = wd_rng_normal(&a);
        s1 += x;
        s2 += x * x;
    }
    /* sd of the mean 1/sqrt(N) = 1e-3; of the mean square sqrt(2/N) = 1.4e-3 */
    check("rng: normal mean (10^6 draws)", fabs(s1 / N), 6 / sqrt(N));
    check("rng: normal mean square - 1 (10^6 draws)", fabs(s2 / N - 1), 6 * sqrt(2.0 / N));
}

/* ---------------------------------------------------------------------- */
/* SU(3) fields                                                            */

static double complex trace3(const double complex *m)
{
    return m[0] + m[4] + m[8];
}

static void test_su3(const int dims[4], wd_rng *r)
{
    const size_t nlinks = 4 * wd_volume(dims);
    double complex *u = alloc_field(9 * nlinks);

    wd_gauge_random(u, dims, r);
    check("su3: gauge_random (su3_random per link) unitarity, det", wd_su3_unitarity_error(u, nlinks), TOL);

    wd_gauge_transform_random(u, dims, r);
    check("su3: random transform unitarity and det",
          wd_su3_unitarity_error(u, wd_volume(dims)), TOL);

    wd_gauge_unit(u, dims);
    double err = 0;
    for (size_t k = 0; k < 9 * nlinks; k++)
        err = fmax(err, cabs(u[k] - ((k % 9) % 4 == 0 ? 1 : 0)));
    check("su3: unit field is exactly 1", err, 0);

    /* Haar moments from the character orthogonality of SU(3): the trivial
     * representation occurs 0, 1, 1 times in V, V x V*, V x V x V.  Sample
     * variances |tr U|^2: 1, |tr U|^4 - 1: 1, |tr U|^6 - 1: 5. */
    enum { NHAAR = 200000 };
    double complex m1 = 0, m3 = 0;
    double m2 = 0;
    for (int i = 0; i < NHAAR; i++) {
        double complex m[3][3];
        wd_su3_random(m, r);
        const double complex t = trace3(&m[0][0]);
        m1 += t;
        m2 += creal(t * conj(t));
        m3 += t * t * t;
    }
    check("su3: Haar E tr U = 0 (2e5 draws)", cabs(m1 / NHAAR), 6 * sqrt(1.0 / NHAAR));
    check("su3: Haar E |tr U|^2 = 1 (2e5 draws)", fabs(m2 / NHAAR - 1), 6 * sqrt(1.0 / NHAAR));
    check("su3: Haar E (tr U)^3 = 1 (2e5 draws)", cabs(m3 / NHAAR - 1), 6 * sqrt(5.0 / NHAAR));

    /* the error measure itself: a small defect, then a NaN */
    wd_gauge_random(u, dims, r);
    /* scaling a link by 1 + 1e-8 moves U U^dag by 2e-8 and det by 3e-8 */
    for (int k = 0; k < 9; k++)
        u[9 * (nlinks / 2) + (size_t)k] *= 1 + 1e-8;
    check_at_least("su3: unitarity error sees a link scaled by 1 + 1e-8",
                   wd_su3_unitarity_error(u, nlinks), 1e-8);
    u[9 * (nlinks / 3) + 7] = NAN;
    check_at_least("su3: unitarity error of a NaN link is infinite",
                   wd_su3_unitarity_error(u, nlinks), INFINITY);
    free(u);
}

static void test_smooth(const int dims[4], wd_rng *r)
{
    const size_t nlinks = 4 * wd_volume(dims);
    double complex *u = alloc_field(9 * nlinks);
    char name[128];

    wd_gauge_smooth(u, dims, 0.0, r);
    double err = 0;
    for (size_t k = 0; k < 9 * nlinks; k++)
        err = fmax(err, cabs(u[k] - ((k % 9) % 4 == 0 ? 1 : 0)));
    check("smooth: eps = 0 is exactly 1", err, 0);

    const double eps_list[] = {1e-3, 0.1, 1.0, 3.0, 1e6};
    for (size_t e = 0; e < sizeof eps_list / sizeof eps_list[0]; e++) {
        const double eps = eps_list[e];
        wd_gauge_smooth(u, dims, eps, r);
        snprintf(name, sizeof name, "smooth: eps = %g unitarity and det", eps);
        check(name, wd_su3_unitarity_error(u, nlinks), TOL);
        if (eps > 0.5)
            continue;

        /* |U - 1| <= eps ||H|| entry by entry, and ||H|| (Frobenius, a sum of
         * ~7 unit exponentials) stays far below 10 over 10^5 links; from
         * below, some entry of some link is bound to exceed eps/2. */
        double dev = 0, off2 = 0, diag2 = 0;
        for (size_t l = 0; l < nlinks; l++)
            for (int k = 0; k < 9; k++) {
                const double d = cabs(u[9 * l + (size_t)k] - (k % 4 == 0 ? 1 : 0));
                dev = fmax(dev, d);
                if (k % 4 == 0)
                    diag2 += d * d;
                else
                    off2 += d * d;
            }
        snprintf(name, sizeof name, "smooth: eps = %g max |U - 1| / eps", eps);
        check(name, dev / eps, 10);
        snprintf(name, sizeof name, "smooth: eps = %g max |U - 1| / eps (not trivial)", eps);
        check_at_least(name, dev / eps, 0.5);
        if (eps > 0.01)
            continue;

        /* U = 1 + i eps H + O(eps^2), so E|U_ij|^2 = eps^2 (1 + O(eps^2))
         * off the diagonal and (2/3) eps^2 on it (a normal minus the mean of
         * three).  Sample sd: the 3 independent off-diagonal entries of a
         * link are unit exponentials, sqrt(1/(3 nlinks)); the three diagonal
         * squares sum to (2/3) chi^2_2, sd (2/3)/sqrt(nlinks) of the mean. */
        const double mean_off = off2 / (6.0 * (double)nlinks) / (eps * eps);
        const double mean_diag = diag2 / (3.0 * (double)nlinks) / (eps * eps);
        snprintf(name, sizeof name, "smooth: eps = %g E|U_ij|^2 / eps^2 = 1", eps);
        check(name, fabs(mean_off - 1), 6 * sqrt(1.0 / (3.0 * (double)nlinks)));
        snprintf(name, sizeof name, "smooth: eps = %g E|U_ii - 1|^2 / eps^2 = 2/3", eps);
        check(name, fabs(mean_diag - 2.0 / 3), 6 * (2.0 / 3) / sqrt((double)nlinks));
    }
    free(u);
}

/* ---------------------------------------------------------------------- */
/* gauge transformations                                                   */

static size_t neighbour(size_t site, const int dims[4], int mu)
{
    int x[4];
    size_t rest = site;
    for (int nu = 0; nu < 4; nu++) {
        x[nu] = (int)(rest % (size_t)dims[nu]);
        rest /= (size_t)dims[nu];
    }
    x[mu] = (x[mu] + 1) % dims[mu];
    return (size_t)x[0] + (size_t)dims[0] *
        ((size_t)x[1] + (size_t)dims[1] * ((size_t)x[2] + (size_t)dims[2] * (size_t)x[3]));
}

/* c = a b, or a b^dag with dag_b */
static void mul3(double complex *c, const double complex *a, const double complex *b, int dag_b)
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            c[3 * i + j] = 0;
            for (int k = 0; k < 3; k++)
                c[3 * i + j] += a[3 * i + k] * (dag_b ? conj(b[3 * j + k]) : b[3 * k + j]);
        }
}

/* tr[ U_mu(n) U_nu(n+mu) U_mu(n+nu)^dag U_nu(n)^dag ] */
static double complex plaquette_trace(const double complex *u, const int dims[4],
                                      size_t site, int mu, int nu)
{
    const double complex *a = u + 9 * (4 * site + (size_t)mu);
    const double complex *b = u + 9 * (4 * neighbour(site, dims, mu) + (size_t)nu);
    const double complex *c = u + 9 * (4 * neighbour(site, dims, nu) + (size_t)mu);
    const double complex *d = u + 9 * (4 * site + (size_t)nu);
    double complex ab[9], abc[9], abcd[9];
    mul3(ab, a, b, 0);
    mul3(abc, ab, c, 1);
    mul3(abcd, abc, d, 1);
    return trace3(abcd);
}

static double mean_plaquette(const double complex *u, const int dims[4])
{
    const size_t volume = wd_volume(dims);
    double sum = 0;
    for (size_t site = 0; site < volume; site++)
        for (int mu = 0; mu < 4; mu++)
            for (int nu = mu + 1; nu < 4; nu++)
                sum += creal(plaquette_trace(u, dims, site, mu, nu));
    return sum / (18.0 * (double)volume);
}

static void test_transforms(const int dims[4], wd_rng *r)
{
    const size_t volume = wd_volume(dims);
    double complex *u = alloc_field(36 * volume), *ug = alloc_field(36 * volume);
    double complex *g = alloc_field(9 * volume);
    double complex *psi = alloc_field(12 * volume), *phi = alloc_field(12 * volume);
    char name[128];

    wd_gauge_unit(u, dims);
    check("plaquette helper: unit field gives 1", fabs(mean_plaquette(u, dims) - 1), 0);

    /* a smooth field (mean plaquette ~0.6, not the ~0 of a random field,
     * so a wrong transformation cannot hide in a small value) and a random
     * one */
    for (int field = 0; field < 2; field++) {
        const char *kind = field ? "random" : "smooth eps=0.3";
        if (field)
            wd_gauge_random(u, dims, r);
        else
            wd_gauge_smooth(u, dims, 0.3, r);
        wd_gauge_transform_random(g, dims, r);
        memcpy(ug, u, 36 * volume * sizeof *u);
        wd_gauge_transform(ug, g, dims);

        double err = 0, moved = 0;
        for (size_t site = 0; site < volume; site++)
            for (int mu = 0; mu < 4; mu++) {
                for (int k = 0; k < 9; k++) {
                    const size_t i = 9 * (4 * site + (size_t)mu) + (size_t)k;
                    moved = fmax(moved, cabs(ug[i] - u[i]));
                }
                for (int nu = mu + 1; nu < 4; nu++)
                    err = fmax(err, cabs(plaquette_trace(ug, dims, site, mu, nu)
                                         - plaquette_trace(u, dims, site, mu, nu)));
            }
        snprintf(name, sizeof name, "transform: %s links move", kind);
        check_at_least(name, moved, 0.1);
        snprintf(name, sizeof name, "transform: %s plaquettes kept, <P>=%.3f",
                 kind, mean_plaquette(u, dims));
        check(name, err, TOL);
        snprintf(name, sizeof name, "transform: %s result unitarity and det", kind);
        check(name, wd_su3_unitarity_error(ug, 4 * volume), TOL);
    }

    wd_spinor_random(psi, dims, r);
    double s2 = 0;
    for (size_t k = 0; k < 12 * volume; k++)
        s2 += creal(psi[k] * conj(psi[k]));
    /* |z|^2 of a unit complex normal is a unit exponential: sd 1/sqrt(n) */
    check("spinor_random: E|z|^2 = 1", fabs(s2 / (12.0 * (double)volume) - 1),
          6 / sqrt(12.0 * (double)volume));

    memcpy(phi, psi, 12 * volume * sizeof *psi);
    wd_spinor_transform(phi, g, dims, 0);
    double moved = 0;
    for (size_t k = 0; k < 12 * volume; k++)
        moved = fmax(moved, cabs(phi[k] - psi[k]));
    check_at_least("spinor_transform: g psi differs from psi", moved, 0.1);
    wd_spinor_transform(phi, g, dims, 1);
    double err = 0;
    for (size_t k = 0; k < 12 * volume; k++)
        err = fmax(err, cabs(phi[k] - psi[k]));
    check("spinor_transform: g^dag (g psi) = psi (max abs)", err, TOL);

    free(u), free(ug), free(g), free(psi), free(phi);
}

static void test_field_reproducible(const int dims[4], uint64_t seed)
{
    const size_t n = 36 * wd_volume(dims);
    double complex *a = alloc_field(n), *b = alloc_field(n);
    wd_rng r;
    wd_rng_seed(&r, seed);
    wd_gauge_random(a, dims, &r);
    wd_rng_seed(&r, seed);
    wd_gauge_random(b, dims, &r);
    check("gauge_random: same seed, bit-identical field",
          memcmp(a, b, n * sizeof *a) != 0, 0);
    free(a), free(b);
}

int main(int argc, char **argv)
{
    uint64_t seed = (uint64_t)time(NULL);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            char *end;
            seed = strtoull(argv[++i], &end, 0);
            if (*end != '\0') {
                fprintf(stderr, "test_gauge_tools: bad seed '%s'\n", argv[i]);
                return 1;
            }
        } else {
            fprintf(stderr, "usage: %s [--seed N]\n", argv[0]);
            return 1;
        }
    }
    printf("test_gauge_tools: seed %llu (rerun with --seed %llu)\n",
           (unsigned long long)seed, (unsigned long long)seed);
    wd_rng r;
    wd_rng_seed(&r, seed);

    const int cube[4] = {8, 8, 8, 8};
    const int odd_shape[4] = {4, 6, 8, 10};
    test_rng(seed);
    test_su3(cube, &r);
    test_smooth(cube, &r);
    test_transforms(odd_shape, &r);
    test_field_reproducible(odd_shape, seed);

    printf("%d of %d failed (seed %llu)\n", checks_failed, checks_run,
           (unsigned long long)seed);
    return checks_failed ? 1 : 0;
}
