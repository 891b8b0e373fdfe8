/*
 * test_ref_clover.c: proves the float64 clover reference
 * (runtime/operator/ref_clover.c) from properties the operator of
 * DESIGN.md ("Clover") must have, on fresh random fields.  One line per
 * check with the measured error and its tolerance; "N of M failed" last;
 * exit 0 when all pass, 1 otherwise.
 *
 *   test_ref_clover [--seed N]     (default seed: the time, printed)
 *
 * Checks, on random (Haar) and smooth fields:
 *   c_sw = 0            M_sw is ref_wilson, bit for bit
 *   unit field          Fhat = 0 exactly, so M_sw = M at any c_sw
 *   one link            a single non-trivial link V = U_mu(n0): Fhat at every
 *                       site and plane against the hand count (the plaquettes
 *                       based at n0 and n0 - nu hold V and V^dag; each gives
 *                       its leaf to its four corners)
 *   hermitian           T(n) = T(n)^dag at every site
 *   chirality           T commutes with g5 = diag(1, 1, -1, -1): the blocks
 *                       coupling spins {0,1} to {2,3} are zero
 *   g5-hermiticity      g5 M_sw g5 = M_sw^dag, both time boundaries
 *   gauge covariance    M_sw(U^g) g x = g M_sw(U) x for random g
 *   inverse             (d + T) (d + T)^-1 = 1 at every site
 *   linearity in c_sw   T(c) = c T(1)
 *   Schur forms         asymmetric A_ee - kappa^2 D_eo A_oo^-1 D_oe and
 *                       symmetric 1 - kappa^2 A_ee^-1 D_eo A_oo^-1 D_oe
 *                       against the full M_sw x = b (source and odd-site
 *                       reconstruction included), and each dagger form
 *                       against its adjoint, both time boundaries
 *
 * Tolerances: as test_reference.c (1e-13 over a few chained applications of
 * O(1) sums; any wrong sign, orientation or index gives an O(1) error); the
 * inverse of a 12x12 matrix with condition number ~10 loses one digit more.
 */
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gauge_tools.h"
#include "ref_clover.h"
#include "ref_wilson.h"
#include "rng.h"

static const double TOL = 1e-13;
static int checks_run, checks_failed;

static void check(const char *what, double err, double tol)
{
    const int ok = err <= tol;
    checks_run++;
    checks_failed += !ok;
    printf("%-64s %s err=%.2e tol=%.0e\n", what, ok ? "OK  " : "FAIL", err, tol);
}

static void *xalloc(size_t n)
{
    void *p = calloc(1, n);
    if (!p) {
        fprintf(stderr, "test_ref_clover: out of memory\n");
        exit(1);
    }
    return p;
}

/* ||a - b|| / ||b|| (||a|| when b is zero) */
static double rel(const double complex *a, const double complex *b, size_t n)
{
    double d = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
        d += creal((a[i] - b[i]) * conj(a[i] - b[i]));
        s += creal(b[i] * conj(b[i]));
    }
    return s > 0 ? sqrt(d / s) : sqrt(d);
}

static size_t site_of(const int x[4], const int dims[4])
{
    return (size_t)x[0] + (size_t)dims[0] *
        ((size_t)x[1] + (size_t)dims[1] * ((size_t)x[2] + (size_t)dims[2] * (size_t)x[3]));
}

static void apply_g5(double complex *psi, size_t volume)
{
    ref_apply_g5(psi, psi, volume);
}

/* one-link field: every link 1 but U_mu(n0) = V; Fhat by hand */
static void one_link(const int dims[4], wd_rng *r)
{
    const size_t vol = (size_t)dims[0] * dims[1] * dims[2] * dims[3];
    double complex *u = xalloc(36 * vol * sizeof *u), *f = xalloc(54 * vol * sizeof *f);
    double complex *want = xalloc(54 * vol * sizeof *want);
    wd_gauge_unit(u, dims);
    const int n0[4] = {1, 2, 1, 3}, mu = 2;
    double complex v[3][3];
    wd_su3_random(v, r);
    memcpy(u + 9 * (4 * site_of(n0, dims) + mu), v, sizeof v);
    ref_clover_fhat(f, u, dims);
    /* (V - V^dag) / 8, the contribution of a plaquette holding V */
    double complex a[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            a[3 * i + j] = (v[i][j] - conj(v[j][i])) / 8.0;
    for (int p = 0; p < 6; p++) {
        const int m = ref_clover_planes[p][0], n = ref_clover_planes[p][1];
        if (m != mu && n != mu)
            continue;
        /* in plane (m, n) with the link along mu, the other direction nu;
         * the plaquette based at n0 (mu first when mu = m) holds V as
         * written, the one based at n0 - nu holds V^dag; orientation
         * m-before-n flips both when mu = n */
        const int nu = m == mu ? n : m;
        const double s = m == mu ? 1.0 : -1.0;
        for (int k = 0; k < 2; k++) {
            const double sk = k == 0 ? s : -s;
            int base[4] = {n0[0], n0[1], n0[2], n0[3]};
            if (k == 1)
                base[nu] = (base[nu] + dims[nu] - 1) % dims[nu];
            for (int c = 0; c < 4; c++) {
                int x[4] = {base[0], base[1], base[2], base[3]};
                if (c & 1)
                    x[mu] = (x[mu] + 1) % dims[mu];
                if (c & 2)
                    x[nu] = (x[nu] + 1) % dims[nu];
                double complex *w = want + 54 * site_of(x, dims) + 9 * (size_t)p;
                for (int e = 0; e < 9; e++)
                    w[e] += sk * a[e];
            }
        }
    }
    check("one link: Fhat at every site and plane = the hand count", rel(f, want, 54 * vol),
          TOL);
    free(u);
    free(f);
    free(want);
}

/* <a, b> over n complex */
static double complex dot(const double complex *a, const double complex *b, size_t n)
{
    double complex s = 0;
    for (size_t i = 0; i < n; i++)
        s += conj(a[i]) * b[i];
    return s;
}

static int parity_of(size_t site, const int dims[4])
{
    int sum = 0;
    for (int mu = 0; mu < 4; mu++) {
        sum += (int)(site % (size_t)dims[mu]);
        site /= (size_t)dims[mu];
    }
    return sum % 2;
}

/* keep one parity of a full spinor, zero the other */
static void keep_parity(double complex *psi, const int dims[4], int parity)
{
    const size_t vol = (size_t)dims[0] * dims[1] * dims[2] * dims[3];
    for (size_t s = 0; s < vol; s++)
        if (parity_of(s, dims) != parity)
            memset(psi + 12 * s, 0, 12 * sizeof *psi);
}

/* Both Schur forms against the full M_sw x = b, and their adjoints */
static void schur(const int dims[4], const char *kind, const double complex *u,
                  const double complex *f, wd_rng *r)
{
    const size_t vol = (size_t)dims[0] * dims[1] * dims[2] * dims[3], n = 12 * vol;
    const double csw = 1.769, mass = -0.2, d = 4.0 + mass, kappa = 1.0 / (2.0 * d);
    char what[128];
    double complex *t = xalloc(144 * vol * sizeof *t), *a = xalloc(144 * vol * sizeof *a);
    double complex *ainv = xalloc(144 * vol * sizeof *ainv), *tmp = xalloc(n * sizeof *tmp);
    double complex *x = xalloc(n * sizeof *x), *b = xalloc(n * sizeof *b);
    double complex *p = xalloc(n * sizeof *p), *q = xalloc(n * sizeof *q);
    double complex *y = xalloc(n * sizeof *y);
    ref_clover_term(t, f, vol, csw);
    /* A = 1 + T / (4+m) */
    ref_clover_term(a, f, vol, csw / d);
    const long bad = ref_clover_invert(ainv, a, vol, 1.0);
    for (size_t s = 0; s < vol; s++)
        for (int i = 0; i < 12; i++)
            a[144 * s + 13 * (size_t)i] += 1.0;
    wd_spinor_random(x, dims, r);
    for (int tbc = -1; tbc <= 1; tbc += 2) {
        ref_wilson_clover(b, u, t, x, dims, mass, tbc, 0);
        /* b'_e = (b_e + kappa D_eo A_oo^-1 b_o) / (4+m) */
        memcpy(p, b, n * sizeof *p);
        keep_parity(p, dims, 1);
        ref_clover_apply(q, ainv, p, vol, 0.0);
        ref_dslash_parity(p, u, q, dims, tbc, 0, 0);
        for (size_t k = 0; k < n; k++)
            p[k] = (b[k] + kappa * p[k]) / d;
        keep_parity(p, dims, 0);
        memcpy(y, x, n * sizeof *y);
        keep_parity(y, dims, 0);
        ref_clover_schur(q, u, a, ainv, y, tmp, dims, mass, tbc, 0, 0);
        snprintf(what, sizeof what, "%s: asymmetric Mhat x_e = b'_e, tbc %+d", kind, tbc);
        check(what, bad >= 0 ? INFINITY : rel(q, p, n), TOL);
        /* symmetric: Mhat x_e = A_ee^-1 b'_e */
        ref_clover_apply(tmp, ainv, p, vol, 0.0);
        keep_parity(tmp, dims, 0);
        memcpy(p, tmp, n * sizeof *p);
        ref_clover_schur(q, u, a, ainv, y, tmp, dims, mass, tbc, 0, 1);
        snprintf(what, sizeof what, "%s: symmetric Mhat x_e = A_ee^-1 b'_e, tbc %+d", kind, tbc);
        check(what, rel(q, p, n), TOL);
        /* the odd sites: x_o = A_oo^-1 (b_o / (4+m) + kappa D_oe x_e) */
        ref_dslash_parity(p, u, y, dims, tbc, 0, 1);
        for (size_t k = 0; k < n; k++)
            p[k] = b[k] / d + kappa * p[k];
        keep_parity(p, dims, 1);
        ref_clover_apply(q, ainv, p, vol, 0.0);
        memcpy(p, x, n * sizeof *p);
        keep_parity(p, dims, 1);
        snprintf(what, sizeof what, "%s: x_o = A_oo^-1 (b_o/(4+m) + kappa D_oe x_e), tbc %+d",
                 kind, tbc);
        check(what, rel(q, p, n), TOL);
        /* <z, Mhat y> = <Mhat^dag z, y> for both forms */
        for (int sym = 0; sym < 2; sym++) {
            double complex *z = b;
            wd_spinor_random(z, dims, r);
            keep_parity(z, dims, 0);
            ref_clover_schur(q, u, a, ainv, y, tmp, dims, mass, tbc, 0, sym);
            ref_clover_schur(p, u, a, ainv, z, tmp, dims, mass, tbc, 1, sym);
            const double complex l = dot(z, q, n), rr = dot(p, y, n);
            snprintf(what, sizeof what, "%s: %s Mhat^dag is the adjoint, tbc %+d", kind,
                     sym ? "symmetric" : "asymmetric", tbc);
            /* relative to |z| |Mhat y|: the dot products themselves may
             * cancel to far below that for random vectors */
            check(what, cabs(l - rr) / sqrt(creal(dot(z, z, n)) * creal(dot(q, q, n))), TOL);
        }
    }
    free(t);
    free(a);
    free(ainv);
    free(tmp);
    free(x);
    free(b);
    free(p);
    free(q);
    free(y);
}

static void properties(const int dims[4], const char *kind, const double complex *u, wd_rng *r)
{
    const size_t vol = (size_t)dims[0] * dims[1] * dims[2] * dims[3];
    const double csw = 1.769, mass = 0.1;
    char what[128];
    double complex *f = xalloc(54 * vol * sizeof *f), *t = xalloc(144 * vol * sizeof *t);
    double complex *t1 = xalloc(144 * vol * sizeof *t1), *inv = xalloc(144 * vol * sizeof *inv);
    double complex *x = xalloc(12 * vol * sizeof *x), *y = xalloc(12 * vol * sizeof *y);
    double complex *z = xalloc(12 * vol * sizeof *z), *w = xalloc(12 * vol * sizeof *w);
    ref_clover_fhat(f, u, dims);
    ref_clover_term(t, f, vol, csw);
    wd_spinor_random(x, dims, r);

    /* c_sw = 0 */
    ref_clover_term(t1, f, vol, 0.0);
    ref_wilson_clover(y, u, t1, x, dims, mass, -1, 0);
    ref_wilson(z, u, x, dims, mass, -1, 0);
    snprintf(what, sizeof what, "%s: c_sw = 0 gives ref_wilson bit for bit", kind);
    check(what, memcmp(y, z, 12 * vol * sizeof *y) ? 1.0 : 0.0, 0);

    /* linearity in c_sw */
    ref_clover_term(t1, f, vol, 1.0);
    for (size_t i = 0; i < 144 * vol; i++)
        t1[i] *= csw;
    snprintf(what, sizeof what, "%s: T(c_sw) = c_sw T(1)", kind);
    check(what, rel(t1, t, 144 * vol), TOL);

    /* hermitian, and commuting with g5 */
    double herm = 0, chir = 0, norm = 0;
    for (size_t s = 0; s < vol; s++)
        for (int i = 0; i < 12; i++)
            for (int j = 0; j < 12; j++) {
                const double complex tij = t[144 * s + 12 * (size_t)i + (size_t)j];
                const double complex tji = t[144 * s + 12 * (size_t)j + (size_t)i];
                herm = fmax(herm, cabs(tij - conj(tji)));
                norm = fmax(norm, cabs(tij));
                if ((i / 6) != (j / 6))
                    chir = fmax(chir, cabs(tij));
            }
    snprintf(what, sizeof what, "%s: T hermitian (max |T - T^dag| / max |T|)", kind);
    check(what, herm / norm, TOL);
    snprintf(what, sizeof what, "%s: T block diagonal in chirality", kind);
    check(what, chir / norm, TOL);
    snprintf(what, sizeof what, "%s: T is not zero (max |T| > 1e-3)", kind);
    check(what, norm > 1e-3 ? 0 : 1, 0);

    /* g5 M_sw g5 = M_sw^dag, both time boundaries */
    for (int tbc = -1; tbc <= 1; tbc += 2) {
        memcpy(z, x, 12 * vol * sizeof *z);
        apply_g5(z, vol);
        ref_wilson_clover(y, u, t, z, dims, mass, tbc, 0);
        apply_g5(y, vol);
        ref_wilson_clover(w, u, t, x, dims, mass, tbc, 1);
        snprintf(what, sizeof what, "%s: g5 M_sw g5 = M_sw^dag, tbc %+d", kind, tbc);
        check(what, rel(y, w, 12 * vol), TOL);
    }

    /* gauge covariance */
    double complex *g = xalloc(9 * vol * sizeof *g), *ug = xalloc(36 * vol * sizeof *ug);
    double complex *fg = xalloc(54 * vol * sizeof *fg), *tg = xalloc(144 * vol * sizeof *tg);
    wd_gauge_transform_random(g, dims, r);
    memcpy(ug, u, 36 * vol * sizeof *ug);
    wd_gauge_transform(ug, g, dims);
    ref_clover_fhat(fg, ug, dims);
    ref_clover_term(tg, fg, vol, csw);
    memcpy(z, x, 12 * vol * sizeof *z);
    wd_spinor_transform(z, g, dims, 0);
    ref_wilson_clover(y, ug, tg, z, dims, mass, -1, 0);
    ref_wilson_clover(w, u, t, x, dims, mass, -1, 0);
    wd_spinor_transform(w, g, dims, 0);
    snprintf(what, sizeof what, "%s: gauge covariance M_sw(U^g) g x = g M_sw(U) x", kind);
    check(what, rel(y, w, 12 * vol), TOL);
    free(g);
    free(ug);
    free(fg);
    free(tg);

    /* A A^-1 = 1 */
    const double d = 4.0 + mass;
    const long bad = ref_clover_invert(inv, t, vol, d);
    double err = bad >= 0 ? INFINITY : 0;
    for (size_t s = 0; s < vol && bad < 0; s++)
        for (int i = 0; i < 12; i++)
            for (int j = 0; j < 12; j++) {
                double complex c = d * inv[144 * s + 12 * (size_t)i + (size_t)j];
                for (int k = 0; k < 12; k++)
                    c += t[144 * s + 12 * (size_t)i + (size_t)k] *
                         inv[144 * s + 12 * (size_t)k + (size_t)j];
                err = fmax(err, cabs(c - (i == j ? 1.0 : 0.0)));
            }
    snprintf(what, sizeof what, "%s: (4+m+T) (4+m+T)^-1 = 1 at every site", kind);
    check(what, err, 10 * TOL);
    ref_clover_apply(y, inv, x, vol, 0.0);
    ref_clover_apply(z, t, y, vol, d);
    snprintf(what, sizeof what, "%s: ref_clover_apply(A, A^-1 x) = x", kind);
    check(what, rel(z, x, 12 * vol), 10 * TOL);

    schur(dims, kind, u, f, r);
    free(f);
    free(t);
    free(t1);
    free(inv);
    free(x);
    free(y);
    free(z);
    free(w);
}

int main(int argc, char **argv)
{
    uint64_t seed = (uint64_t)time(NULL);
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--seed"))
            seed = strtoull(argv[i + 1], NULL, 10);
    printf("test_ref_clover: seed %llu (--seed N replays)\n", (unsigned long long)seed);
    wd_rng r;
    wd_rng_seed(&r, seed);

    static const int shapes[2][4] = {{4, 4, 4, 4}, {6, 4, 4, 8}};
    for (int k = 0; k < 2; k++) {
        const int *dims = shapes[k];
        const size_t vol = (size_t)dims[0] * dims[1] * dims[2] * dims[3];
        double complex *u = xalloc(36 * vol * sizeof *u);
        double complex *f = xalloc(54 * vol * sizeof *f);
        char kind[64];

        wd_gauge_unit(u, dims);
        ref_clover_fhat(f, u, dims);
        double fmaxabs = 0;
        for (size_t i = 0; i < 54 * vol; i++)
            fmaxabs = fmax(fmaxabs, cabs(f[i]));
        snprintf(kind, sizeof kind, "%dx%dx%dx%d unit field: Fhat = 0 exactly", dims[0],
                 dims[1], dims[2], dims[3]);
        check(kind, fmaxabs, 0);

        one_link(dims, &r);

        wd_gauge_random(u, dims, &r);
        snprintf(kind, sizeof kind, "%dx%dx%dx%d random", dims[0], dims[1], dims[2], dims[3]);
        properties(dims, kind, u, &r);
        wd_gauge_smooth(u, dims, 0.3, &r);
        snprintf(kind, sizeof kind, "%dx%dx%dx%d smooth", dims[0], dims[1], dims[2], dims[3]);
        properties(dims, kind, u, &r);
        free(u);
        free(f);
    }
    printf("%d of %d failed\n", checks_failed, checks_run);
    return checks_failed ? 1 : 0;
}
