/*
 * heatbath.c: the quenched SU(3) Monte Carlo on the CPU and the gauge
 * observables (wdirac_gauge.h).
 *
 * The externally accessible functions are
 *   wd_gauge_init         cold start (unit links) or hot start (Haar links:
 *                         two complex-normal rows from Philox, Gram-Schmidt,
 *                         row 2 their conjugate cross product)
 *   wd_gauge_heatbath_sweep     heatbath of every link by (mu, parity)
 *                         checkerboard, n_or overrelaxation sweeps, then
 *                         every link reunitarized
 *   wd_gauge_overrelax_sweep    n_or overrelaxation sweeps alone, then every link
 *                         reunitarized (the action is unchanged)
 *   wd_gauge_observables  plaquette (all, space, time), link trace and
 *                         Polyakov loop, summed in a fixed order
 *   wd_hb_geom_make, wd_hb_init, wd_hb_sweeps   (gauge_block.h) the start
 *                         and the sweeps on a stored field that is either
 *                         the whole lattice or a block with border layers
 *                         (gauge_block.c), one code for both
 * Notes: the per-link arithmetic and the random-number keying live in
 * heatbath_link.h, shared with the GPU port; this file only walks the
 * lattice.  Random numbers are keyed by the global site index, so a block
 * draws what one process draws for the same link.  Boundaries are periodic in every direction.  Within one
 * checkerboard the links are independent (a staple of U_mu(x) holds
 * U_mu only at x +- nu, of the other parity), so OpenMP threads share the
 * sites of a checkerboard with no effect on the result.
 */
#include <stdlib.h>

#include "gauge_block.h"
#include "heatbath_link.h"
#include "wdirac_gauge.h"
#include "wd_core.h"

/* neighbour offsets of a site in the lexicographic order (the observables) */
typedef struct lattice {
    int L[4];
    size_t stride[4];
    size_t volume;
} lattice;

static lattice make_lattice(const int dims[4])
{
    lattice lat;
    size_t s = 1;
    for (int mu = 0; mu < 4; mu++) {
        lat.L[mu] = dims[mu];
        lat.stride[mu] = s;
        s *= (size_t)dims[mu];
    }
    lat.volume = s;
    return lat;
}

static size_t fwd(const lattice *lat, size_t site, const int x[4], int mu)
{
    return x[mu] + 1 < lat->L[mu] ? site + lat->stride[mu]
                                  : site - (size_t)(lat->L[mu] - 1) * lat->stride[mu];
}

static const double *link(const double *u, size_t site, int mu)
{
    return u + 18 * (4 * site + (size_t)mu);
}

wd_hb_geom wd_hb_geom_make(const int local[4], const int part[4], const int origin[4],
                           const int dims[4])
{
    wd_hb_geom g;
    size_t s = 1, gs = 1;
    for (int mu = 0; mu < 4; mu++) {
        g.L[mu] = local[mu];
        g.part[mu] = part && part[mu] ? 1 : 0;
        g.E[mu] = local[mu] + 2 * g.part[mu];
        g.origin[mu] = origin[mu];
        g.stride[mu] = s;
        g.gstride[mu] = gs;
        s *= (size_t)g.E[mu];
        gs *= (size_t)dims[mu];
    }
    g.volume = s;
    return g;
}

/* The neighbours of a stored site of the block: across a partitioned
 * dimension the border layer, else periodic within the block (whose
 * extent is then the global one). */
static size_t hb_fwd(const wd_hb_geom *g, size_t site, const int x[4], int mu)
{
    return g->part[mu] || x[mu] + 1 < g->L[mu] ? site + g->stride[mu]
                                                : site - (size_t)(g->L[mu] - 1) * g->stride[mu];
}

static size_t hb_bwd(const wd_hb_geom *g, size_t site, const int x[4], int mu)
{
    return g->part[mu] || x[mu] > 0 ? site - g->stride[mu]
                                    : site + (size_t)(g->L[mu] - 1) * g->stride[mu];
}

/* local coordinates of the block's n-th site, x fastest */
static void block_coords(size_t n, const int L[4], int x[4])
{
    for (int mu = 0; mu < 4; mu++) {
        x[mu] = (int)(n % (size_t)L[mu]);
        n /= (size_t)L[mu];
    }
}

static size_t global_index(const wd_hb_geom *g, const int x[4])
{
    size_t s = 0;
    for (int mu = 0; mu < 4; mu++)
        s += (size_t)(x[mu] + g->origin[mu]) * g->gstride[mu];
    return s;
}

static wd_status check_field_args(const double *u, const int dims[4], const char *fn)
{
    if (!u || !dims)
        return wd_fail(WD_ERR_INVALID, "%s: null field or extents", fn);
    return wd_check_dims(dims);
}

wd_status wd_gauge_init(double *u, const int dims[4], wd_gauge_start start, uint64_t seed)
{
    wd_status st = check_field_args(u, dims, "wd_gauge_init");
    if (st != WD_OK)
        return st;
    if (start != WD_START_COLD && start != WD_START_HOT)
        return wd_fail(WD_ERR_INVALID, "wd_gauge_init: start %d is neither cold (0) nor hot (1)",
                       (int)start);
    const int zero[4] = {0, 0, 0, 0};
    const wd_hb_geom g = wd_hb_geom_make(dims, NULL, zero, dims);
    wd_hb_init(u, &g, start, seed);
    return WD_OK;
}

void wd_hb_init(double *u, const wd_hb_geom *g, wd_gauge_start start, uint64_t seed)
{
    const size_t volume = (size_t)g->L[0] * g->L[1] * g->L[2] * g->L[3];
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    const double two_pi = 6.28318530717958647692528676655900577;

#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < volume; n++) {
        int x[4];
        block_coords(n, g->L, x);
        const size_t site = wd_hb_stored(g, x), global = global_index(g, x);
        for (int mu = 0; mu < 4; mu++) {
            double *m = u + 18 * (4 * site + (size_t)mu);
            for (int k = 0; k < 18; k++)
                m[k] = 0;
            if (start == WD_START_COLD) {
                m[0] = m[8] = m[16] = 1.0;
                continue;
            }
            /* rows 0 and 1 complex normal: 12 normals from 6 blocks by
             * Box-Muller (both the cosine and the sine) */
            for (uint32_t d = 0; d < 6; d++) {
                uint32_t ctr[4];
                double r[2];
                wd_hb_ctr(ctr, (uint32_t)global, mu, 0, d, 0);
                ctr[3] |= WD_HB_HOT_STREAM;
                wd_hb_uniform2(ctr, key, r);
                const double rad = sqrt(-2.0 * log(r[0]));
                m[2 * d] = rad * cos(two_pi * r[1]);
                m[2 * d + 1] = rad * sin(two_pi * r[1]);
            }
            wd_su3_reunitarize(m);
        }
    }
}

/* Heatbath (heatbath != 0) or overrelaxation of every U_mu(x) with x of
 * the given (global) parity in the block; returns the number of SU(2)
 * samplers that gave up. */
static long update_checkerboard(double *u, const wd_hb_geom *g, int mu, int parity,
                                int heatbath, double beta, const uint32_t key[2],
                                uint64_t sweep)
{
    const long nrows = (long)g->L[1] * g->L[2] * g->L[3];
    const int oparity = g->origin[0] + g->origin[1] + g->origin[2] + g->origin[3];
    long failed = 0;

#pragma omp parallel for schedule(static) reduction(+ : failed)
    for (long row = 0; row < nrows; row++) {
        int x[4] = {0, (int)(row % g->L[1]), (int)((row / g->L[1]) % g->L[2]),
                    (int)(row / ((long)g->L[1] * g->L[2]))};
        const size_t row_site = wd_hb_stored(g, x), row_global = global_index(g, x);
        for (x[0] = (parity + x[1] + x[2] + x[3] + oparity) & 1; x[0] < g->L[0]; x[0] += 2) {
            const size_t site = row_site + (size_t)x[0];
            const size_t xpmu = hb_fwd(g, site, x, mu);
            double a[18] = {0};
            for (int nu = 0; nu < 4; nu++) {
                if (nu == mu)
                    continue;
                const size_t xpnu = hb_fwd(g, site, x, nu);
                const size_t xmnu = hb_bwd(g, site, x, nu);
                /* x + mu has the nu coordinate of x */
                const size_t xpmu_mnu = hb_bwd(g, xpmu, x, nu);
                wd_hb_staple_add(a, link(u, xpmu, nu), link(u, xpnu, mu), link(u, site, nu),
                                 link(u, xpmu_mnu, nu), link(u, xmnu, mu), link(u, xmnu, nu));
            }
            double *m = u + 18 * (4 * site + (size_t)mu);
            double v[18];
            for (int k = 0; k < 18; k++)
                v[k] = m[k];
            if (heatbath) {
                uint32_t ctr[4];
                wd_hb_ctr(ctr, (uint32_t)(row_global + (size_t)x[0]), mu, 0, 0, sweep);
                failed += wd_hb_heatbath_link(v, a, beta, key, ctr);
            } else {
                wd_hb_overrelax_link(v, a);
            }
            for (int k = 0; k < 18; k++)
                m[k] = v[k];
        }
    }
    return failed;
}

wd_status wd_hb_sweeps(double *u, const wd_hb_geom *g, int heatbath, int n_or, double beta,
                       uint64_t seed, uint64_t sweep, wd_hb_exchange_fn exchange, void *ctx,
                       long *failed)
{
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    wd_status st = WD_OK;
    *failed = 0;
    for (int pass = heatbath ? 0 : 1; pass <= n_or && st == WD_OK; pass++)
        for (int mu = 0; mu < 4 && st == WD_OK; mu++)
            for (int parity = 0; parity < 2 && st == WD_OK; parity++) {
                *failed += update_checkerboard(u, g, mu, parity, pass == 0, beta, key, sweep);
                /* the next checkerboard's staples read these links */
                if (exchange)
                    st = exchange(ctx, u, mu);
            }
    if (st != WD_OK)
        return st;

    const size_t nsites = (size_t)g->L[0] * g->L[1] * g->L[2] * g->L[3];
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < nsites; n++) {
        int x[4];
        block_coords(n, g->L, x);
        double *m = u + 72 * wd_hb_stored(g, x);
        for (int mu = 0; mu < 4; mu++)
            wd_su3_reunitarize(m + 18 * mu);
    }
    return WD_OK;
}

wd_status wd_gauge_heatbath_sweep(double *u, const int dims[4], double beta, uint64_t seed,
                            uint64_t sweep_index, int n_or)
{
    wd_status st = check_field_args(u, dims, "wd_gauge_heatbath_sweep");
    if (st != WD_OK)
        return st;
    if (!(beta > 0) || !isfinite(beta))
        return wd_fail(WD_ERR_INVALID, "wd_gauge_heatbath_sweep: beta = %g, must be finite and > 0",
                       beta);
    if (n_or < 0)
        return wd_fail(WD_ERR_INVALID, "wd_gauge_heatbath_sweep: n_or = %d overrelaxation sweeps, "
                       "must be >= 0", n_or);
    if (sweep_index >> 63)
        return wd_fail(WD_ERR_INVALID, "wd_gauge_heatbath_sweep: sweep index %llu >= 2^63",
                       (unsigned long long)sweep_index);

    const int zero[4] = {0, 0, 0, 0};
    const wd_hb_geom g = wd_hb_geom_make(dims, NULL, zero, dims);
    long failed = 0;
    if ((st = wd_hb_sweeps(u, &g, 1, n_or, beta, seed, sweep_index, NULL, NULL, &failed)) !=
        WD_OK)
        return st;
    if (failed)
        return wd_fail(WD_ERR_INTERNAL, "wd_gauge_heatbath_sweep: the SU(2) sampler gave up %ld "
                       "times in sweep %llu (%d attempts each); those subgroup updates were "
                       "skipped", failed, (unsigned long long)sweep_index, WD_HB_MAX_ATTEMPTS);
    return WD_OK;
}

wd_status wd_gauge_overrelax_sweep(double *u, const int dims[4], int n_or)
{
    wd_status st = check_field_args(u, dims, "wd_gauge_overrelax_sweep");
    if (st != WD_OK)
        return st;
    if (n_or < 1)
        return wd_fail(WD_ERR_INVALID, "wd_gauge_overrelax_sweep: n_or = %d, must be >= 1", n_or);
    const int zero[4] = {0, 0, 0, 0};
    const wd_hb_geom g = wd_hb_geom_make(dims, NULL, zero, dims);
    long failed = 0;
    return wd_hb_sweeps(u, &g, 0, n_or, 0.0, 0, 0, NULL, NULL, &failed);
}

wd_status wd_gauge_observables(const double *u, const int dims[4], wd_gauge_obs *obs)
{
    wd_status st = check_field_args(u, dims, "wd_gauge_observables");
    if (st != WD_OK)
        return st;
    if (!obs)
        return wd_fail(WD_ERR_INVALID, "wd_gauge_observables: null result");

    const lattice lat = make_lattice(dims);
    const long nrows = (long)(lat.volume / (size_t)lat.L[0]);
    const long nlines = (long)(lat.volume / (size_t)lat.L[3]);
    /* per-row partial sums, added in row order afterwards: the totals do
     * not depend on how rows were shared among threads */
    double *part = malloc((size_t)(3 * nrows + 2 * nlines) * sizeof *part);
    if (!part)
        return wd_fail(WD_ERR_NOMEM, "wd_gauge_observables: no memory for %ld partial sums",
                       3 * nrows + 2 * nlines);
    double *ps = part, *pt = part + nrows, *lt = part + 2 * nrows;
    double *pre = part + 3 * nrows, *pim = pre + nlines;

#pragma omp parallel for schedule(static)
    for (long row = 0; row < nrows; row++) {
        int x[4];
        x[1] = (int)(row % lat.L[1]);
        x[2] = (int)((row / lat.L[1]) % lat.L[2]);
        x[3] = (int)(row / ((long)lat.L[1] * lat.L[2]));
        double s_space = 0, s_time = 0, s_link = 0;
        for (x[0] = 0; x[0] < lat.L[0]; x[0]++) {
            const size_t site = (size_t)row * (size_t)lat.L[0] + (size_t)x[0];
            for (int mu = 0; mu < 4; mu++) {
                const double *m = link(u, site, mu);
                s_link += m[0] + m[8] + m[16];
                const size_t xpmu = fwd(&lat, site, x, mu);
                for (int nu = mu + 1; nu < 4; nu++) {
                    /* Re tr(U_mu(x) U_nu(x+mu) [U_nu(x) U_mu(x+nu)]^dag) */
                    double a[18], b[18];
                    wd_m3_mul_nn(a, m, link(u, xpmu, nu));
                    wd_m3_mul_nn(b, link(u, site, nu), link(u, fwd(&lat, site, x, nu), mu));
                    const double p = wd_m3_retr_nd(a, b);
                    if (nu == 3)
                        s_time += p;
                    else
                        s_space += p;
                }
            }
        }
        ps[row] = s_space;
        pt[row] = s_time;
        lt[row] = s_link;
    }

    const size_t tstride = lat.stride[3];
#pragma omp parallel for schedule(static)
    for (long s = 0; s < nlines; s++) {
        double p[18], q[18];
        for (int k = 0; k < 18; k++)
            p[k] = link(u, (size_t)s, 3)[k];
        for (int t = 1; t < lat.L[3]; t++) {
            wd_m3_mul_nn(q, p, link(u, (size_t)s + (size_t)t * tstride, 3));
            for (int k = 0; k < 18; k++)
                p[k] = q[k];
        }
        pre[s] = p[0] + p[8] + p[16];
        pim[s] = p[1] + p[9] + p[17];
    }

    double s_space = 0, s_time = 0, s_link = 0, s_re = 0, s_im = 0;
    for (long r = 0; r < nrows; r++) {
        s_space += ps[r];
        s_time += pt[r];
        s_link += lt[r];
    }
    for (long s = 0; s < nlines; s++) {
        s_re += pre[s];
        s_im += pim[s];
    }
    free(part);

    const double v = (double)lat.volume;
    obs->plaquette_space = s_space / (9.0 * v);
    obs->plaquette_time = s_time / (9.0 * v);
    obs->plaquette = (s_space + s_time) / (18.0 * v);
    obs->link_trace = s_link / (12.0 * v);
    obs->poly_re = s_re / (3.0 * (double)nlines);
    obs->poly_im = s_im / (3.0 * (double)nlines);
    return WD_OK;
}
