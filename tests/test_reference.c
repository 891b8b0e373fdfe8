/*
 * test_reference.c: proves the float64 Wilson-Dirac reference
 * (runtime/operator/ref_wilson.c) from properties the operator of DESIGN.md must
 * have, on fresh random fields.  One line per check with the measured error
 * and its tolerance; "N of M failed" last; exit 0 when all pass, 1 otherwise.
 *
 *   test_reference [--seed N]     (default seed: the time, printed)
 *
 * Checks, on every lattice shape and both time boundary conditions:
 *   gamma basis and algebra     ref_gamma is DESIGN.md's table; {g_mu, g_nu}
 *                               = 2 delta; g5 = g1 g2 g3 g4 hermitian, g5^2 = 1
 *   gamma5-hermiticity          <y, D x> = <D^dag y, x>, g5 D g5 = D^dag and
 *                               g5 D^dag g5 = D, with D^dag coded directly
 *   gauge covariance            D(U^g) g x = g D(U) x for random g
 *   temporal gauge              unit temporal links below t = T-1, the
 *                               Polyakov line on t = T-1, and covariance
 *   free field                  plane waves against the momentum-space
 *                               operator, periodic and antiperiodic in time
 *   parity split                D = D_parity(0) + D_parity(1), each reading
 *                               only the opposite parity
 *   Schur complement            ref_schur against the even block of M x = b
 *                               built from ref_wilson; Mhat^dag its adjoint
 *
 * Tolerances.  Every output component is a sum of ~100 products of O(1)
 * numbers (8 hops, each a 3x3 colour times a 4x4 spin matrix), so the
 * rounding error of one application is ~1e-15 relative to the field norm,
 * and a test chains at most four applications plus a gauge transformation.
 * 1e-13 leaves a factor ~30 over that, while any wrong sign, index, phase or
 * projector gives an O(1) error.  Checks that repeat the same arithmetic on
 * the same numbers (which parity is read) must agree bit for bit: tolerance 0.
 */
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gauge_tools.h"
#include "ref_wilson.h"
#include "rng.h"

/* See the header comment: rounding of a few chained applications, with a
 * margin of ~30. */
static const double TOL = 1e-13;

static const double PI = 3.14159265358979323846264338327950288;

static int checks_run, checks_failed;

/* NaN compares false, so a NaN error fails. */
static void check(const char *what, double err, double tol)
{
    const int ok = err <= tol;
    checks_run++;
    checks_failed += !ok;
    printf("%-56s %s err=%.2e tol=%.0e\n", what, ok ? "OK  " : "FAIL", err, tol);
}

static double complex *alloc_field(size_t n)
{
    double complex *p = calloc(n, sizeof *p);
    if (!p) {
        fprintf(stderr, "test_reference: out of memory (%zu complex)\n", n);
        exit(1);
    }
    return p;
}

static double complex *copy_field(const double complex *src, size_t n)
{
    double complex *p = alloc_field(n);
    memcpy(p, src, n * sizeof *p);
    return p;
}

static double norm(const double complex *a, size_t n)
{
    double s = 0;
    for (size_t k = 0; k < n; k++)
        s += creal(a[k] * conj(a[k]));
    return sqrt(s);
}

/* <a, b> = sum conj(a) b */
static double complex dot(const double complex *a, const double complex *b, size_t n)
{
    double complex s = 0;
    for (size_t k = 0; k < n; k++)
        s += conj(a[k]) * b[k];
    return s;
}

/* ||a - b|| */
static double diff_norm(const double complex *a, const double complex *b, size_t n)
{
    double d = 0;
    for (size_t k = 0; k < n; k++)
        d += creal((a[k] - b[k]) * conj(a[k] - b[k]));
    return sqrt(d);
}

/* ||a - b|| / ||b||; infinite when b is zero, so a comparison against a
 * vanishing field can never pass by accident. */
static double rel_diff(const double complex *a, const double complex *b, size_t n)
{
    const double nb = norm(b, n);
    return nb > 0 ? diff_norm(a, b, n) / nb : INFINITY;
}

static double max_abs_diff(const double complex *a, const double complex *b, size_t n)
{
    double m = 0;
    for (size_t k = 0; k < n; k++)
        m = fmax(m, cabs(a[k] - b[k]));
    return m;
}

static int parity_of(size_t site, const int dims[4])
{
    int p = 0;
    for (int mu = 0; mu < 4; mu++) {
        p += (int)(site % (size_t)dims[mu]);
        site /= (size_t)dims[mu];
    }
    return p % 2;
}

/* Zero a spinor field at the sites of one parity. */
static void zero_parity(double complex *psi, const int dims[4], int parity)
{
    const size_t volume = wd_volume(dims);
    for (size_t site = 0; site < volume; site++)
        if (parity_of(site, dims) == parity)
            memset(psi + 12 * site, 0, 12 * sizeof *psi);
}

/* max |psi| over the sites of one parity */
static double max_on_parity(const double complex *psi, const int dims[4], int parity)
{
    const size_t volume = wd_volume(dims);
    double m = 0;
    for (size_t site = 0; site < volume; site++)
        if (parity_of(site, dims) == parity)
            for (int k = 0; k < 12; k++)
                m = fmax(m, cabs(psi[12 * site + (size_t)k]));
    return m;
}

/* ---------------------------------------------------------------------- */
/* gamma matrices                                                          */

/* DESIGN.md's DeGrand-Rossi table, typed a second time on purpose: the
 * algebra alone holds in every basis, so only this pins the basis. */
static const double complex design_gamma[4][4][4] = {
    {{0, 0, 0, I}, {0, 0, I, 0}, {0, -I, 0, 0}, {-I, 0, 0, 0}},
    {{0, 0, 0, -1}, {0, 0, 1, 0}, {0, 1, 0, 0}, {-1, 0, 0, 0}},
    {{0, 0, I, 0}, {0, 0, 0, -I}, {-I, 0, 0, 0}, {0, I, 0, 0}},
    {{0, 0, 1, 0}, {0, 0, 0, 1}, {1, 0, 0, 0}, {0, 1, 0, 0}},
};

static void spin_mul(double complex out[4][4], double complex a[4][4],
                     double complex b[4][4])
{
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            out[i][j] = 0;
            for (int k = 0; k < 4; k++)
                out[i][j] += a[i][k] * b[k][j];
        }
}

/* The entries are 0, +-1, +-i, so every product and sum here is exact:
 * tolerance 0. */
static void test_gammas(void)
{
    double complex g[5][4][4];
    for (int mu = 0; mu < 5; mu++)
        ref_gamma(mu, g[mu]);

    double err = 0;
    for (int mu = 0; mu < 4; mu++)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                err = fmax(err, cabs(g[mu][i][j] - design_gamma[mu][i][j]));
    check("gamma: g1..g4 are DESIGN.md's DeGrand-Rossi table", err, 0);

    err = 0;
    for (int mu = 0; mu < 4; mu++)
        for (int nu = 0; nu < 4; nu++) {
            double complex ab[4][4], ba[4][4];
            spin_mul(ab, g[mu], g[nu]);
            spin_mul(ba, g[nu], g[mu]);
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++)
                    err = fmax(err, cabs(ab[i][j] + ba[i][j] - ((mu == nu && i == j) ? 2 : 0)));
        }
    check("gamma: {g_mu, g_nu} = 2 delta_mu_nu", err, 0);

    double complex p[4][4], q[4][4], g5[4][4];
    spin_mul(p, g[0], g[1]);
    spin_mul(q, p, g[2]);
    spin_mul(g5, q, g[3]);
    err = max_abs_diff(&g5[0][0], &g[4][0][0], 16);
    check("gamma: ref_gamma(4) = g1 g2 g3 g4", err, 0);

    err = 0;
    for (int mu = 0; mu < 5; mu++)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                err = fmax(err, cabs(g[mu][i][j] - conj(g[mu][j][i])));
    check("gamma: g1..g5 hermitian", err, 0);

    spin_mul(p, g[4], g[4]);
    err = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            err = fmax(err, cabs(p[i][j] - (i == j ? 1 : 0)));
    check("gamma: g5^2 = 1", err, 0);

    err = 0;
    for (int mu = 0; mu < 4; mu++) {
        spin_mul(p, g[4], g[mu]);
        spin_mul(q, g[mu], g[4]);
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                err = fmax(err, cabs(p[i][j] + q[i][j]));
    }
    check("gamma: {g5, g_mu} = 0", err, 0);
}

/* ---------------------------------------------------------------------- */
/* properties on random fields                                             */

typedef struct {
    int dims[4];
    size_t volume;
    size_t nspin; /* complex numbers in a spinor field */
    size_t ngauge; /* complex numbers in a gauge field */
} lattice;

static lattice make_lattice(int x, int y, int z, int t)
{
    lattice l = {{x, y, z, t}, 0, 0, 0};
    l.volume = wd_volume(l.dims);
    l.nspin = 12 * l.volume;
    l.ngauge = 36 * l.volume;
    return l;
}

static void label(char *buf, size_t size, const lattice *l, int t_sign,
                  const char *what)
{
    snprintf(buf, size, "%dx%dx%dx%d %s %s", l->dims[0], l->dims[1],
             l->dims[2], l->dims[3], t_sign > 0 ? "per " : "anti", what);
}

static void test_hermiticity(const lattice *l, const double complex *u,
                             int t_sign, wd_rng *r)
{
    const size_t n = l->nspin;
    double complex *x = alloc_field(n), *y = alloc_field(n);
    double complex *dx = alloc_field(n), *ddy = alloc_field(n);
    double complex *a = alloc_field(n), *b = alloc_field(n);
    wd_spinor_random(x, l->dims, r);
    wd_spinor_random(y, l->dims, r);
    char name[128];

    ref_dslash(dx, u, x, l->dims, t_sign, 0);
    ref_dslash(ddy, u, y, l->dims, t_sign, 1);
    const double scale = norm(y, n) * norm(dx, n);
    const double err = scale > 0 ? cabs(dot(y, dx, n) - dot(ddy, x, n)) / scale : INFINITY;
    label(name, sizeof name, l, t_sign, "<y, D x> = <D^dag y, x>");
    check(name, err, TOL);

    for (int dagger = 0; dagger <= 1; dagger++) {
        /* g5 D g5 x against D^dag x, and g5 D^dag g5 x against D x */
        ref_apply_g5(a, x, l->volume);
        ref_dslash(b, u, a, l->dims, t_sign, dagger);
        ref_apply_g5(b, b, l->volume);
        ref_dslash(a, u, x, l->dims, t_sign, !dagger);
        label(name, sizeof name, l, t_sign,
              dagger ? "g5 D^dag g5 x = D x" : "g5 D g5 x = D^dag x");
        check(name, rel_diff(b, a, n), TOL);
    }
    free(x), free(y), free(dx), free(ddy), free(a), free(b);
}

/* D(U') (g x) against g (D(U) x), where U' = U transformed by g */
static double covariance_error(const lattice *l, const double complex *u,
                               const double complex *g, const double complex *x,
                               int t_sign, int dagger)
{
    double complex *ug = copy_field(u, l->ngauge);
    double complex *gx = copy_field(x, l->nspin);
    double complex *lhs = alloc_field(l->nspin), *rhs = alloc_field(l->nspin);
    wd_gauge_transform(ug, g, l->dims);
    wd_spinor_transform(gx, g, l->dims, 0);
    ref_dslash(lhs, ug, gx, l->dims, t_sign, dagger);
    ref_dslash(rhs, u, x, l->dims, t_sign, dagger);
    wd_spinor_transform(rhs, g, l->dims, 0);
    const double err = rel_diff(lhs, rhs, l->nspin);
    free(ug), free(gx), free(lhs), free(rhs);
    return err;
}

static void test_covariance(const lattice *l, const double complex *u,
                            int t_sign, wd_rng *r)
{
    double complex *g = alloc_field(9 * l->volume);
    double complex *x = alloc_field(l->nspin);
    wd_gauge_transform_random(g, l->dims, r);
    wd_spinor_random(x, l->dims, r);
    char name[128];
    for (int dagger = 0; dagger <= 1; dagger++) {
        label(name, sizeof name, l, t_sign,
              dagger ? "D^dag(U^g) g x = g D^dag(U) x" : "D(U^g) g x = g D(U) x");
        check(name, covariance_error(l, u, g, x, t_sign, dagger), TOL);
    }
    free(g), free(x);
}

static void test_temporal_gauge(const lattice *l, const double complex *u,
                                int t_sign, wd_rng *r)
{
    const int nt = l->dims[3];
    const size_t slice = l->volume / (size_t)nt;
    double complex *g = alloc_field(9 * l->volume);
    double complex *ug = copy_field(u, l->ngauge);
    double complex *x = alloc_field(l->nspin);
    wd_temporal_gauge(g, u, l->dims);
    wd_gauge_transform(ug, g, l->dims);
    wd_spinor_random(x, l->dims, r);
    char name[128];

    /* g = 1 on t = 0 is set, not computed: exact */
    double err = 0;
    for (size_t s = 0; s < slice; s++)
        for (int k = 0; k < 9; k++)
            err = fmax(err, cabs(g[9 * s + (size_t)k] - (k % 4 == 0 ? 1 : 0)));
    label(name, sizeof name, l, t_sign, "temporal gauge: g(t=0) = 1");
    check(name, err, 0);

    err = 0;
    for (size_t site = 0; site < slice * (size_t)(nt - 1); site++)
        for (int k = 0; k < 9; k++)
            err = fmax(err, cabs(ug[9 * (4 * site + 3) + (size_t)k] - (k % 4 == 0 ? 1 : 0)));
    label(name, sizeof name, l, t_sign, "temporal gauge: U'_t = 1 for t < T-1");
    check(name, err, TOL);

    /* U'_t(x, T-1) = U_t(x,0) U_t(x,1) ... U_t(x,T-1), multiplied out here */
    err = 0;
    for (size_t s = 0; s < slice; s++) {
        double complex line[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
        for (int t = 0; t < nt; t++) {
            const double complex *link = u + 9 * (4 * (s + slice * (size_t)t) + 3);
            double complex next[9];
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++) {
                    next[3 * i + j] = 0;
                    for (int k = 0; k < 3; k++)
                        next[3 * i + j] += line[3 * i + k] * link[3 * k + j];
                }
            memcpy(line, next, sizeof line);
        }
        const double complex *last = ug + 9 * (4 * (s + slice * (size_t)(nt - 1)) + 3);
        err = fmax(err, max_abs_diff(last, line, 9));
    }
    label(name, sizeof name, l, t_sign, "temporal gauge: U'_t(T-1) = Polyakov line");
    check(name, err, TOL);

    label(name, sizeof name, l, t_sign, "temporal gauge: U' is SU(3)");
    check(name, wd_su3_unitarity_error(ug, 4 * l->volume), TOL);

    for (int dagger = 0; dagger <= 1; dagger++) {
        label(name, sizeof name, l, t_sign,
              dagger ? "temporal gauge: D^dag covariant" : "temporal gauge: D covariant");
        check(name, covariance_error(l, u, g, x, t_sign, dagger), TOL);
    }
    free(g), free(ug), free(x);
}

static void test_parity(const lattice *l, const double complex *u, int t_sign,
                        wd_rng *r)
{
    const size_t n = l->nspin;
    double complex *x = alloc_field(n), *full = alloc_field(n);
    double complex *part[2] = {alloc_field(n), alloc_field(n)};
    double complex *sum = alloc_field(n), *masked = alloc_field(n);
    double complex *again = alloc_field(n);
    wd_spinor_random(x, l->dims, r);
    char name[128];

    for (int dagger = 0; dagger <= 1; dagger++) {
        const char *op = dagger ? "D^dag" : "D";
        char what[96];
        ref_dslash(full, u, x, l->dims, t_sign, dagger);
        for (int p = 0; p < 2; p++)
            ref_dslash_parity(part[p], u, x, l->dims, t_sign, dagger, p);
        for (size_t k = 0; k < n; k++)
            sum[k] = part[0][k] + part[1][k];
        snprintf(what, sizeof what, "%s_par(0) + %s_par(1) = %s", op, op, op);
        label(name, sizeof name, l, t_sign, what);
        check(name, rel_diff(sum, full, n), TOL);

        /* Output parity p must be zero on the other parity and unchanged
         * when the input is zeroed on parity p: the same arithmetic on the
         * same numbers, so bit for bit. */
        double err_zero = 0, err_read = 0;
        for (int p = 0; p < 2; p++) {
            err_zero = fmax(err_zero, max_on_parity(part[p], l->dims, 1 - p));
            memcpy(masked, x, n * sizeof *x);
            zero_parity(masked, l->dims, p);
            ref_dslash_parity(again, u, masked, l->dims, t_sign, dagger, p);
            err_read = fmax(err_read, max_abs_diff(again, part[p], n));
        }
        snprintf(what, sizeof what, "%s_par zero on the other parity", op);
        label(name, sizeof name, l, t_sign, what);
        check(name, err_zero, 0);
        snprintf(what, sizeof what, "%s_par reads only the other parity", op);
        label(name, sizeof name, l, t_sign, what);
        check(name, err_read, 0);
    }
    free(x), free(full), free(part[0]), free(part[1]), free(sum);
    free(masked), free(again);
}

/*
 * The Schur system, derived from M = (4+m) - D/2 = (4+m)(1 - kappa D) with
 * kappa = 1/(2(4+m)).  Split M x = b into even and odd sites:
 *   b_e = (4+m) (x_e - kappa D_eo x_o)
 *   b_o = (4+m) (x_o - kappa D_oe x_e)
 * The second gives x_o = b_o/(4+m) + kappa D_oe x_e; put into the first:
 *   (1 - kappa^2 D_eo D_oe) x_e = (b_e + kappa D_eo b_o) / (4+m),
 * i.e. Mhat_ee x_e = b'_e with b'_e built from b = M x alone.  M^dag =
 * (4+m)(1 - kappa D^dag) gives the same with D^dag for D, which is what
 * ref_schur's dagger computes.  Here b comes from ref_wilson and D_eo b_o
 * from ref_dslash_parity, both proven above; ref_schur sees only x_e.
 */
static void test_schur(const lattice *l, const double complex *u, int t_sign,
                       wd_rng *r)
{
    const size_t n = l->nspin;
    const double mass = -0.2 + 0.4 * wd_rng_uniform(r);
    const double kappa = 1.0 / (2.0 * (4.0 + mass));
    double complex *x = alloc_field(n), *y = alloc_field(n);
    double complex *b = alloc_field(n), *c = alloc_field(n);
    double complex *rhs = alloc_field(n), *lhs = alloc_field(n);
    double complex *again = alloc_field(n);
    wd_spinor_random(x, l->dims, r);
    wd_spinor_random(y, l->dims, r);
    char name[128];

    for (int dagger = 0; dagger <= 1; dagger++) {
        const char *op = dagger ? "Mhat^dag" : "Mhat";
        char what[96];
        ref_wilson(b, u, x, l->dims, mass, t_sign, dagger);
        ref_dslash_parity(c, u, b, l->dims, t_sign, dagger, 0);
        for (size_t k = 0; k < n; k++)
            rhs[k] = (b[k] + kappa * c[k]) / (4.0 + mass);
        zero_parity(rhs, l->dims, 1);
        ref_schur(lhs, u, x, l->dims, mass, t_sign, dagger);
        snprintf(what, sizeof what, "%s x_e = even part of M%s x", op, dagger ? "^dag" : "");
        label(name, sizeof name, l, t_sign, what);
        check(name, rel_diff(lhs, rhs, n), TOL);

        /* zero on odd sites, and blind to the odd part of its input: same
         * arithmetic on the same numbers, bit for bit */
        double err = max_on_parity(lhs, l->dims, 1);
        memcpy(again, x, n * sizeof *x);
        zero_parity(again, l->dims, 1);
        ref_schur(c, u, again, l->dims, mass, t_sign, dagger);
        err = fmax(err, max_abs_diff(c, lhs, n));
        snprintf(what, sizeof what, "%s reads and writes even sites only", op);
        label(name, sizeof name, l, t_sign, what);
        check(name, err, 0);
    }

    /* <y_e, Mhat x_e> = <Mhat^dag y_e, x_e> */
    zero_parity(x, l->dims, 1);
    zero_parity(y, l->dims, 1);
    ref_schur(lhs, u, x, l->dims, mass, t_sign, 0);
    ref_schur(rhs, u, y, l->dims, mass, t_sign, 1);
    const double scale = norm(y, n) * norm(lhs, n);
    const double err = scale > 0 ? cabs(dot(y, lhs, n) - dot(rhs, x, n)) / scale : INFINITY;
    label(name, sizeof name, l, t_sign, "<y_e, Mhat x_e> = <Mhat^dag y_e, x_e>");
    check(name, err, TOL);

    free(x), free(y), free(b), free(c), free(rhs), free(lhs), free(again);
}

/*
 * Free field.  With U = 1 and x(n) = e^{i p.n} chi, x(n +- mu) = e^{+-i p_mu}
 * x(n); across the time boundary the hop carries t_sign and the wave
 * e^{-+i p_t (T-1)}, which is the same when e^{i p_t T} = t_sign, i.e.
 * p_t = 2 pi k / T (periodic) or (2 pi k + pi) / T (antiperiodic).  Then
 *   D x = sum_mu [ (1 - g_mu) e^{i p_mu} + (1 + g_mu) e^{-i p_mu} ] x
 *       = sum_mu [ 2 cos p_mu - 2 i g_mu sin p_mu ] x,
 * D^dag the same with +2 i, and M = (4+m) - D/2.  Momenta k: zero, L/2 in
 * every direction, L/2 in x and y only (periodic: a doubler with D x = 0),
 * and three random ones; antiperiodic adds pi/T to p_t.  Errors are
 * relative to ||x||, since D x itself vanishes for the doubler.
 */
static void test_free_field(const lattice *l, int t_sign, wd_rng *r)
{
    const size_t n = l->nspin;
    const int *dims = l->dims;
    double complex *u = alloc_field(l->ngauge);
    double complex *x = alloc_field(n), *dx = alloc_field(n), *kx = alloc_field(n);
    wd_gauge_unit(u, dims);
    const double mass = -0.2 + 0.4 * wd_rng_uniform(r);
    double complex g[4][4][4];
    for (int mu = 0; mu < 4; mu++)
        ref_gamma(mu, g[mu]);

    enum { NMOM = 6 };
    int k[NMOM][4] = {
        {0, 0, 0, 0},
        {dims[0] / 2, dims[1] / 2, dims[2] / 2, dims[3] / 2},
        {dims[0] / 2, dims[1] / 2, 0, 0},
    };
    for (int i = 3; i < NMOM; i++)
        for (int mu = 0; mu < 4; mu++)
            k[i][mu] = (int)(wd_rng_u64(r) % (uint64_t)dims[mu]);

    double err[2][2] = {{0, 0}, {0, 0}}; /* [dagger][D or M] */
    for (int i = 0; i < NMOM; i++) {
        /* p_mu = pi q_mu / L_mu with q_mu = 2 k_mu, or 2 k_t + 1 for the
         * antiperiodic time direction.  The phase p_mu n_mu is reduced mod
         * 2 pi in integers, (q_mu n_mu mod 2 L_mu), so that neighbouring
         * sites get phases accurate to rounding rather than to the ulp of a
         * large accumulated angle. */
        int q[4];
        double p[4];
        for (int mu = 0; mu < 4; mu++) {
            q[mu] = 2 * k[i][mu] + (mu == 3 && t_sign < 0);
            p[mu] = PI * q[mu] / dims[mu];
        }

        double complex chi[12];
        for (int a = 0; a < 12; a++)
            chi[a] = wd_rng_normal(r) + I * wd_rng_normal(r);
        for (size_t site = 0; site < l->volume; site++) {
            size_t rest = site;
            double complex wave = 1;
            for (int mu = 0; mu < 4; mu++) {
                const int coord = (int)(rest % (size_t)dims[mu]);
                rest /= (size_t)dims[mu];
                wave *= cexp(I * PI * ((q[mu] * coord) % (2 * dims[mu])) / dims[mu]);
            }
            for (int a = 0; a < 12; a++)
                x[12 * site + (size_t)a] = wave * chi[a];
        }
        const double xnorm = norm(x, n); /* > 0: chi is random */

        for (int dagger = 0; dagger <= 1; dagger++) {
            double complex kp[4][4];
            const double s = dagger ? 1.0 : -1.0;
            for (int a = 0; a < 4; a++)
                for (int b = 0; b < 4; b++) {
                    kp[a][b] = 0;
                    for (int mu = 0; mu < 4; mu++)
                        kp[a][b] += (a == b ? 2 * cos(p[mu]) : 0)
                                  + s * 2 * I * sin(p[mu]) * g[mu][a][b];
                }
            for (size_t site = 0; site < l->volume; site++)
                for (int a = 0; a < 4; a++)
                    for (int c = 0; c < 3; c++) {
                        double complex v = 0;
                        for (int b = 0; b < 4; b++)
                            v += kp[a][b] * x[12 * site + (size_t)(3 * b + c)];
                        kx[12 * site + (size_t)(3 * a + c)] = v;
                    }
            ref_dslash(dx, u, x, dims, t_sign, dagger);
            err[dagger][0] = fmax(err[dagger][0], diff_norm(dx, kx, n) / xnorm);

            for (size_t j = 0; j < n; j++)
                kx[j] = (4.0 + mass) * x[j] - 0.5 * kx[j];
            ref_wilson(dx, u, x, dims, mass, t_sign, dagger);
            err[dagger][1] = fmax(err[dagger][1], diff_norm(dx, kx, n) / xnorm);
        }
    }
    char name[128];
    for (int dagger = 0; dagger <= 1; dagger++) {
        label(name, sizeof name, l, t_sign,
              dagger ? "free field: D^dag plane waves (6 momenta)"
                     : "free field: D plane waves (6 momenta)");
        check(name, err[dagger][0], TOL);
        label(name, sizeof name, l, t_sign,
              dagger ? "free field: M^dag plane waves (6 momenta)"
                     : "free field: M plane waves (6 momenta)");
        check(name, err[dagger][1], TOL);
    }
    free(u), free(x), free(dx), free(kx);
}

int main(int argc, char **argv)
{
    uint64_t seed = (uint64_t)time(NULL);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            char *end;
            seed = strtoull(argv[++i], &end, 0);
            if (*end != '\0') {
                fprintf(stderr, "test_reference: bad seed '%s'\n", argv[i]);
                return 1;
            }
        } else {
            fprintf(stderr, "usage: %s [--seed N]\n", argv[0]);
            return 1;
        }
    }
    printf("test_reference: seed %llu (rerun with --seed %llu)\n",
           (unsigned long long)seed, (unsigned long long)seed);
    wd_rng r;
    wd_rng_seed(&r, seed);

    test_gammas();

    /* 4^4; two non-cubic shapes; and extents of 2, which the header allows
     * (the forward and backward neighbour are then the same site) */
    const int shapes[][4] = {{4, 4, 4, 4}, {4, 6, 8, 10}, {6, 4, 4, 8}, {4, 2, 6, 2}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const lattice l = make_lattice(shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3]);
        double complex *u = alloc_field(l.ngauge);
        for (int t_sign = 1; t_sign >= -1; t_sign -= 2) {
            wd_gauge_random(u, l.dims, &r);
            test_hermiticity(&l, u, t_sign, &r);
            test_covariance(&l, u, t_sign, &r);
            test_temporal_gauge(&l, u, t_sign, &r);
            test_parity(&l, u, t_sign, &r);
            test_schur(&l, u, t_sign, &r);
            test_free_field(&l, t_sign, &r);
        }
        free(u);
    }

    printf("%d of %d failed (seed %llu)\n", checks_failed, checks_run,
           (unsigned long long)seed);
    return checks_failed ? 1 : 0;
}
