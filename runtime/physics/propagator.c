/*
 * propagator.c: the physics module (runtime/physics/): propagators and
 * meson correlators of wdirac_physics.h, on the public solver.  It may call
 * core, comm and numerics (through wdirac.h's solver); nothing in the
 * library calls it.
 *
 * The externally accessible functions are
 *   wd_propagator          12 solves with one wd_solver (the gauge field
 *                          uploaded once) as one lock-step batch
 *                          (wd_solver_solve_many), each column scattered
 *                          into the 12 x 12 matrix of every site
 *   wd_propagator_mg       the same with WD_SOLVER_MG on one
 *                          wd_solver_mg_setup: the setup, not the 12
 *                          solves, is what a multigrid propagator pays
 *                          once
 *   wd_meson_name          names and time symmetry of the mesons
 *   wd_meson_correlators   per-site traces summed per time slice in site
 *                          order, then over ranks in rank order
 *   wd_effective_mass      bisection on the cosh / sinh ratio
 * Gamma matrices: DeGrand-Rossi, typed here from DESIGN.md's table (the
 * physics module keeps its own copy, as every reference does: an error in
 * one shows up against another).
 */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "wd_comm.h"
#include "wd_core.h"
#include "wdirac_physics.h"

/* DeGrand-Rossi g1..g4, from DESIGN.md */
static const double complex dr[4][4][4] = {
    {{0, 0, 0, I}, {0, 0, I, 0}, {0, -I, 0, 0}, {-I, 0, 0, 0}},
    {{0, 0, 0, -1}, {0, 0, 1, 0}, {0, 1, 0, 0}, {-1, 0, 0, 0}},
    {{0, 0, I, 0}, {0, 0, 0, -I}, {-I, 0, 0, 0}, {0, I, 0, 0}},
    {{0, 0, 1, 0}, {0, 0, 0, 1}, {1, 0, 0, 0}, {0, 1, 0, 0}},
};

typedef struct spin4 {
    double complex m[4][4];
} spin4;

static spin4 mul(spin4 a, spin4 b)
{
    spin4 c;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            double complex s = 0;
            for (int k = 0; k < 4; k++)
                s += a.m[i][k] * b.m[k][j];
            c.m[i][j] = s;
        }
    return c;
}

static spin4 gamma_of(int mu)
{
    spin4 g;
    memcpy(g.m, dr[mu], sizeof g.m);
    return g;
}

static spin4 unit(void)
{
    spin4 g = {{{0}}};
    for (int i = 0; i < 4; i++)
        g.m[i][i] = 1;
    return g;
}

static spin4 dagger(spin4 a)
{
    spin4 c;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            c.m[i][j] = conj(a.m[j][i]);
    return c;
}

static spin4 gamma5(void)
{
    return mul(mul(gamma_of(0), gamma_of(1)), mul(gamma_of(2), gamma_of(3)));
}

/* ---- propagators ---------------------------------------------------------- */

wd_status wd_propagator(double *prop, const double *gauge, const wd_lattice *lat,
                        const wd_source *src, const wd_solver_settings *s,
                        wd_solver_stats stats[12])
{
    return wd_propagator_mg(prop, gauge, lat, src, s, NULL, NULL, stats);
}

wd_status wd_propagator_mg(double *prop, const double *gauge, const wd_lattice *lat,
                           const wd_source *src, const wd_solver_settings *s,
                           const wd_mg_settings *mg, wd_mg_setup_stats *mg_stats,
                           wd_solver_stats stats[12])
{
    if (mg_stats)
        memset(mg_stats, 0, sizeof *mg_stats);
    if (!prop || !gauge || !lat || !src || !s)
        return wd_fail(WD_ERR_INVALID, "wd_propagator: prop, gauge, lat, src and settings must "
                       "not be NULL");
    const int *D = lat->dims, *L = lat->local, *o = lat->origin;
    if (src->type != WD_SOURCE_POINT && src->type != WD_SOURCE_WALL)
        return wd_fail(WD_ERR_INVALID, "wd_propagator: source type %d: must be WD_SOURCE_POINT "
                       "or WD_SOURCE_WALL", (int)src->type);
    for (int mu = 0; mu < 4; mu++)
        if ((src->type == WD_SOURCE_POINT || mu == 3) &&
            (src->site[mu] < 0 || src->site[mu] >= D[mu]))
            return wd_fail(WD_ERR_INVALID, "wd_propagator: source %s %d %d %d %d is outside the "
                           "%dx%dx%dx%d lattice", src->type == WD_SOURCE_POINT ? "site" : "slice",
                           src->site[0], src->site[1], src->site[2], src->site[3], D[0], D[1],
                           D[2], D[3]);
    wd_solver_settings set = *s;
    memcpy(set.grid, lat->procs, sizeof set.grid);
    const size_t vol = wd_volume(L), reals = vol * 24;
    /* the 12 sources and solutions, one block each */
    double *buf = malloc(2 * 12 * reals * sizeof *buf);
    wd_status st = wd_comm_agree(buf ? WD_OK : wd_fail(WD_ERR_NOMEM, "wd_propagator: cannot "
                                 "allocate 24 spinors of %zu sites", vol));
    wd_solver *sv = NULL;
    if (st == WD_OK)
        st = wd_solver_create(&sv, gauge, D, &set);
    if (st == WD_OK && mg) {
        /* every rank reaches the agreement, so a refusal on one (a grid
         * this version does not take) stops all alike */
        st = wd_comm_agree(wd_solver_mg_setup(sv, mg, &set, mg_stats));
        set.solver = WD_SOLVER_MG;
    }
    if (st != WD_OK) {
        wd_solver_destroy(sv);
        free(buf);
        return st;
    }
    double *x[12];
    const double *b[12];
    memset(buf, 0, 12 * reals * sizeof *buf);
    for (int col = 0; col < 12; col++) {
        const int spin = col / 3, colour = col % 3;
        double *bc = buf + (size_t)col * reals;
        b[col] = bc;
        x[col] = buf + (size_t)(12 + col) * reals;
        /* the sites of this block that the source covers */
        for (size_t site = 0; site < vol; site++) {
            size_t r = site;
            int g[4];
            for (int mu = 0; mu < 4; mu++) {
                g[mu] = o[mu] + (int)(r % (size_t)L[mu]);
                r /= (size_t)L[mu];
            }
            const int on = src->type == WD_SOURCE_WALL
                               ? g[3] == src->site[3]
                               : g[0] == src->site[0] && g[1] == src->site[1] &&
                                     g[2] == src->site[2] && g[3] == src->site[3];
            if (on)
                bc[24 * site + 6 * (size_t)spin + 2 * (size_t)colour] = 1.0;
        }
    }
    /* one batch: the 12 solves in lock step, sharing each operator application */
    st = wd_solver_solve_many(sv, x, b, 12, &set, stats);
    const int written = st == WD_OK || st == WD_ERR_DIVERGED || st == WD_ERR_STAGNATED ||
                        st == WD_ERR_NAN || st == WD_ERR_MAX_ITER;
    /* column (spin, colour) of every site's 12 x 12 matrix */
    for (int col = 0; col < 12 && written; col++)
        for (size_t site = 0; site < vol; site++)
            for (int row = 0; row < 12; row++) {
                double *p = prop + 288 * site + 24 * (size_t)row + 2 * (size_t)col;
                p[0] = x[col][24 * site + 2 * (size_t)row];
                p[1] = x[col][24 * site + 2 * (size_t)row + 1];
            }
    wd_solver_destroy(sv);
    free(buf);
    return st;
}

/* ---- correlators ---------------------------------------------------------- */

const char *wd_meson_name(int meson, int *sign)
{
    static const char *names[WD_MESON_COUNT] = {"pseudoscalar", "a4-pseudoscalar", "vector",
                                                "scalar"};
    static const int signs[WD_MESON_COUNT] = {1, -1, 1, 1};
    if (meson < 0 || meson >= WD_MESON_COUNT)
        return NULL;
    if (sign)
        *sign = signs[meson];
    return names[meson];
}

/* the (A, B) pairs of each meson: up to three, averaged */
typedef struct meson_ops {
    int n;
    spin4 a[3], b[3];
} meson_ops;

static meson_ops meson_of(int m)
{
    meson_ops o;
    memset(&o, 0, sizeof o);
    const spin4 g5 = gamma5();
    switch (m) {
    case WD_MESON_PS:
        o.n = 1;
        o.a[0] = o.b[0] = g5;
        break;
    case WD_MESON_A4P:
        o.n = 1;
        o.a[0] = mul(gamma_of(3), g5);
        o.b[0] = g5;
        break;
    case WD_MESON_V:
        o.n = 3;
        for (int i = 0; i < 3; i++)
            o.a[i] = o.b[i] = gamma_of(i);
        break;
    default:
        o.n = 1;
        o.a[0] = o.b[0] = unit();
        break;
    }
    return o;
}

/* -Re tr[A S Bbar g5 S^dag g5] = -Re tr[(g5 A) S (Bbar g5) S^dag] at one
 * site, S[sink][source] as 12 x 12 (index 3 spin + colour) */
static double site_trace(const double complex *S, const spin4 *l, const spin4 *r)
{
    double complex sum = 0;
    for (int a = 0; a < 4; a++)
        for (int f = 0; f < 4; f++)
            for (int c1 = 0; c1 < 3; c1++)
                for (int c2 = 0; c2 < 3; c2++) {
                    /* (L S R)[a c1][f c2] */
                    double complex lsr = 0;
                    for (int bb = 0; bb < 4; bb++) {
                        if (l->m[a][bb] == 0)
                            continue;
                        for (int s2 = 0; s2 < 4; s2++)
                            if (r->m[s2][f] != 0)
                                lsr += l->m[a][bb] * S[12 * (3 * bb + c1) + 3 * s2 + c2] *
                                       r->m[s2][f];
                    }
                    sum += lsr * conj(S[12 * (3 * a + c1) + 3 * f + c2]);
                }
    return -creal(sum);
}

wd_status wd_meson_correlators(double *corr, const double *prop, const wd_lattice *lat,
                               int t_source)
{
    if (!corr || !prop || !lat)
        return wd_fail(WD_ERR_INVALID, "wd_meson_correlators: corr, prop and lat must not be "
                       "NULL");
    const int T = lat->dims[3], *L = lat->local;
    if (t_source < 0 || t_source >= T)
        return wd_fail(WD_ERR_INVALID, "wd_meson_correlators: source time slice %d outside "
                       "0..%d", t_source, T - 1);
    const spin4 g4 = gamma_of(3), g5 = gamma5();
    /* L = g5 A, R = Bbar g5 with Bbar = g4 B^dag g4, per meson and pair */
    spin4 lm[WD_MESON_COUNT][3], rm[WD_MESON_COUNT][3];
    int npair[WD_MESON_COUNT];
    for (int m = 0; m < WD_MESON_COUNT; m++) {
        const meson_ops o = meson_of(m);
        npair[m] = o.n;
        for (int k = 0; k < o.n; k++) {
            lm[m][k] = mul(g5, o.a[k]);
            rm[m][k] = mul(mul(mul(g4, dagger(o.b[k])), g4), g5);
        }
    }
    const size_t slice = wd_volume(L) / (size_t)L[3];
    for (int k = 0; k < WD_MESON_COUNT * T; k++)
        corr[k] = 0;
    /* each local time slice summed in site order by one thread */
#pragma omp parallel for schedule(dynamic)
    for (int tl = 0; tl < L[3]; tl++) {
        const int t = ((lat->origin[3] + tl) - t_source + T) % T;
        for (int m = 0; m < WD_MESON_COUNT; m++) {
            double sum = 0;
            for (size_t k = 0; k < slice; k++) {
                const double complex *S =
                    (const double complex *)(const void *)(prop + 288 * ((size_t)tl * slice + k));
                double site = 0;
                for (int p = 0; p < npair[m]; p++)
                    site += site_trace(S, &lm[m][p], &rm[m][p]);
                sum += site / npair[m];
            }
            corr[m * T + t] = sum;
        }
    }
    /* over ranks, 64 values a call (wd_comm_sum's limit), in rank order */
    wd_status st = WD_OK;
    for (int k = 0; k < WD_MESON_COUNT * T && st == WD_OK; k += 64) {
        const int n = WD_MESON_COUNT * T - k < 64 ? WD_MESON_COUNT * T - k : 64;
        st = wd_comm_sum(corr + k, n);
    }
    return st;
}

/* f(m (t - T/2)) / f(m (t + 1 - T/2)) */
static double model_ratio(double m, int t, int T, int sign)
{
    const double a = m * (t - 0.5 * T), b = m * (t + 1 - 0.5 * T);
    return sign > 0 ? cosh(a) / cosh(b) : sinh(a) / sinh(b);
}

wd_status wd_effective_mass(double *meff, const double *corr, int T, int sign)
{
    if (!meff || !corr || T < 2 || T % 2 || (sign != 1 && sign != -1))
        return wd_fail(WD_ERR_INVALID, "wd_effective_mass: need meff, corr, an even T >= 2 "
                       "(got %d) and sign +1 or -1 (got %d)", T, sign);
    for (int t = 0; t < T / 2; t++) {
        meff[t] = NAN;
        if (!(corr[t + 1] != 0) || !isfinite(corr[t] / corr[t + 1]) ||
            (sign < 0 && t + 1 == T / 2))
            continue;
        const double want = corr[t] / corr[t + 1];
        double lo = 1e-9, hi = 10.0;
        double flo = model_ratio(lo, t, T, sign) - want, fhi = model_ratio(hi, t, T, sign) - want;
        if (!(flo * fhi < 0))
            continue;
        for (int it = 0; it < 200; it++) {
            const double mid = 0.5 * (lo + hi), fm = model_ratio(mid, t, T, sign) - want;
            if ((fm < 0) == (flo < 0)) {
                lo = mid;
                flo = fm;
            } else {
                hi = mid;
            }
        }
        meff[t] = 0.5 * (lo + hi);
    }
    return WD_OK;
}
