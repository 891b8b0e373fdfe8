/*
 * clover_field.c: the clover matrix A(n) = 1 + coef T(n) in float64 on a
 * rank's block, its inverse and its product with a host spinor.
 *
 * The externally accessible functions are listed in clover_field.h.
 *
 * Notes.  The leaves.  Q_{mu nu}(n) is the sum of the four plaquettes of
 * the (mu, nu) plane with a corner at n, each a closed path from n taking
 * mu before nu; three products of two links each:
 *   [U_mu(n) U_nu(n+mu)] [U_nu(n) U_mu(n+nu)]^dag
 *   [U_nu(n) U_mu(n-mu+nu)^dag] [U_mu(n-mu)^dag U_nu(n-mu)]^dag
 *   [U_nu(n-mu-nu) U_mu(n-mu)]^dag [U_mu(n-mu-nu) U_nu(n-nu)]
 *   [U_nu(n-nu)^dag U_mu(n-nu)] [U_mu(n) U_nu(n+mu-nu)^dag]^dag
 * Fhat = (Q - Q^dag) / 8 is anti-hermitian.  On a grid the leaves read the
 * stored field of gauge_block.c (the block with one layer of border links
 * on each side of every partitioned dimension, exchanged dimension by
 * dimension, so the edge sites n - mu - nu arrive too); the same links in
 * the same products as one process, so the same bits.
 *
 * The spin structure.  Both sigma_{mu nu} and Fhat_{mu nu} are
 * antisymmetric in (mu, nu), so T = (i/2) sum_{mu < nu} sigma_{mu nu} x
 * Fhat_{mu nu}.  Every sigma_{mu nu} commutes with g5 = diag(1, 1, -1, -1)
 * and is block diagonal; its 2x2 block b is a Pauli matrix up to a sign,
 * so each spin pair (s, s') of a block takes two (s = s') or four planes.
 * make_table() multiplies the gammas of DESIGN.md (typed once below, one
 * non-zero entry a row) into the six sigmas and keeps, for each block and
 * spin pair, the non-zero coefficients coef (i/2) sigma_{mu nu}[2b+s][2b+s']
 * with their plane: no 12x12 table is typed, and the entries of a block
 * cost 2 or 4 complex products each.  Only the diagonal and the lower
 * triangle are computed (A is hermitian); the diagonal is real by
 * construction (Fhat's diagonal is imaginary, the coefficients there too).
 *
 * The inverse.  A = L L^dag (Cholesky, L lower with a positive diagonal),
 * W = L^-1 by forward substitution, A^-1 = W^dag W, whose lower triangle
 * is sum_{k >= i} conj(W[k][i]) W[k][j].  A first pass factors every block
 * without writing, so that a refused field leaves inv as it was; the
 * second factors again and writes (the factorisation is the cheap part).
 */
#include "clover_field.h"

#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gauge_block.h"
#include "heatbath_link.h"
#include "wd_comm.h"
#include "wd_core.h"

/* wd_comm_send tag of the first refused block (gauge_block.c: 7101-7104) */
enum { TAG_REFUSED = 7150 };

/* the planes mu < nu */
static const int planes[6][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}};

/* ---- the spin structure --------------------------------------------------- */

/* g_mu of DESIGN.md (DeGrand-Rossi), mu = 0..3 = x, y, z, t: row r has
 * its one non-zero entry gamma_val[mu][r] in column gamma_col[mu][r] */
static const int gamma_col[4][4] = {{3, 2, 1, 0}, {3, 2, 1, 0}, {2, 3, 0, 1}, {2, 3, 0, 1}};
static const double gamma_val[4][4][2] = {
    {{0, 1}, {0, 1}, {0, -1}, {0, -1}}, /* g1: i, i, -i, -i */
    {{-1, 0}, {1, 0}, {1, 0}, {-1, 0}}, /* g2: -1, 1, 1, -1 */
    {{0, 1}, {0, -1}, {0, -1}, {0, 1}}, /* g3: i, -i, -i, i */
    {{1, 0}, {1, 0}, {1, 0}, {1, 0}},   /* g4: 1, 1, 1, 1 */
};

static void gamma_matrix(double complex g[4][4], int mu)
{
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++)
            g[r][c] = c == gamma_col[mu][r] ? CMPLX(gamma_val[mu][r][0], gamma_val[mu][r][1])
                                           : 0;
}

typedef struct term {
    int plane;
    double re, im;
} term;

/* entry (3 s + a, 3 s' + c) of block b = delta + sum over the terms of
 * (b, s, s') of (re + i im) Fhat_plane[a][c] */
typedef struct clover_table {
    int n[2][2][2];
    term t[2][2][2][6];
} clover_table;

static void make_table(clover_table *tab, double coef)
{
    memset(tab, 0, sizeof *tab);
    for (int p = 0; p < 6; p++) {
        double complex gm[4][4], gn[4][4], sigma[4][4];
        gamma_matrix(gm, planes[p][0]);
        gamma_matrix(gn, planes[p][1]);
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < 4; c++) {
                double complex s = 0;
                for (int k = 0; k < 4; k++)
                    s += gm[r][k] * gn[k][c] - gn[r][k] * gm[k][c];
                sigma[r][c] = 0.5 * I * s;
            }
        /* the entries with 2b + s, 2b + s' in one chirality block; those
         * coupling the blocks are zero (sigma commutes with g5) */
        for (int b = 0; b < 2; b++)
            for (int s = 0; s < 2; s++)
                for (int s2 = 0; s2 < 2; s2++) {
                    const double complex k = coef * (0.5 * I) * sigma[2 * b + s][2 * b + s2];
                    if (k == 0)
                        continue;
                    term *t = &tab->t[b][s][s2][tab->n[b][s][s2]++];
                    t->plane = p;
                    t->re = creal(k);
                    t->im = cimag(k);
                }
    }
}

/* ---- the leaves ----------------------------------------------------------- */

/* c = a^dag b */
static inline void m3_mul_dn(double *c, const double *a, const double *b)
{
    for (int k = 0; k < 18; k++)
        c[k] = 0;
    wd_m3_add_mul_dn(c, a, b);
}

/* f[p] = Fhat of plane p at the block's site with local coordinates x */
static void site_fhat(double f[6][18], const double *u, const wd_hb_geom *g, const int x[4])
{
    /* the stored index of the site and its index offsets one step back
     * (step[d][0]) and forward (step[d][1]) in each dimension: a dimension
     * without border layers is periodic in the block */
    size_t n = 0;
    ptrdiff_t step[4][2];
    for (int d = 0; d < 4; d++) {
        const ptrdiff_t st = (ptrdiff_t)g->stride[d], wrap = (ptrdiff_t)(g->E[d] - 1) * st;
        n += (size_t)(x[d] + g->part[d]) * g->stride[d];
        step[d][0] = !g->part[d] && x[d] == 0 ? wrap : -st;
        step[d][1] = !g->part[d] && x[d] == g->L[d] - 1 ? -wrap : st;
    }
#define LINK(site, dir) (u + 72 * (site) + 18 * (dir))
    for (int p = 0; p < 6; p++) {
        const int mu = planes[p][0], nu = planes[p][1];
        const size_t n_pm = n + (size_t)step[mu][1], n_pn = n + (size_t)step[nu][1];
        const size_t n_mm = n + (size_t)step[mu][0], n_mn = n + (size_t)step[nu][0];
        const size_t n_mmpn = n_mm + (size_t)step[nu][1];
        const size_t n_mmmn = n_mm + (size_t)step[nu][0];
        const size_t n_pmmn = n_pm + (size_t)step[nu][0];
        double q[18] = {0}, a[18], b[18];

        wd_m3_mul_nn(a, LINK(n, mu), LINK(n_pm, nu));
        wd_m3_mul_nn(b, LINK(n, nu), LINK(n_pn, mu));
        wd_m3_add_mul_nd(q, a, b);

        wd_m3_mul_nd(a, LINK(n, nu), LINK(n_mmpn, mu));
        m3_mul_dn(b, LINK(n_mm, mu), LINK(n_mm, nu));
        wd_m3_add_mul_nd(q, a, b);

        wd_m3_mul_nn(a, LINK(n_mmmn, nu), LINK(n_mm, mu));
        wd_m3_mul_nn(b, LINK(n_mmmn, mu), LINK(n_mn, nu));
        wd_m3_add_mul_dn(q, a, b);

        m3_mul_dn(a, LINK(n_mn, nu), LINK(n_mn, mu));
        wd_m3_mul_nd(b, LINK(n, mu), LINK(n_pmmn, nu));
        wd_m3_add_mul_nd(q, a, b);

        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                /* (Q - Q^dag) / 8 */
                f[p][6 * i + 2 * j] = (q[6 * i + 2 * j] - q[6 * j + 2 * i]) * 0.125;
                f[p][6 * i + 2 * j + 1] = (q[6 * i + 2 * j + 1] + q[6 * j + 2 * i + 1]) * 0.125;
            }
    }
#undef LINK
}

/* the two blocks of A at one site from its six Fhat */
static void site_blocks(double *out, const double f[6][18], const clover_table *tab)
{
    for (int b = 0; b < 2; b++) {
        double *blk = out + WD_CLOVER_BLOCK_REALS * b;
        for (int i = 0; i < 6; i++)
            for (int j = 0; j <= i; j++) {
                const int s = i / 3, a = i % 3, s2 = j / 3, c = j % 3;
                double re = i == j ? 1.0 : 0.0, im = 0;
                for (int k = 0; k < tab->n[b][s][s2]; k++) {
                    const term *t = &tab->t[b][s][s2][k];
                    const double fr = f[t->plane][6 * a + 2 * c];
                    const double fi = f[t->plane][6 * a + 2 * c + 1];
                    re += t->re * fr - t->im * fi;
                    im += t->re * fi + t->im * fr;
                }
                if (i == j) {
                    blk[i] = re;
                } else {
                    blk[wd_clover_lower(i, j)] = re;
                    blk[wd_clover_lower(i, j) + 1] = im;
                }
            }
    }
}

static size_t local_volume(const wd_grid *g)
{
    return (size_t)g->local[0] * g->local[1] * g->local[2] * g->local[3];
}

/* local coordinates of the block's n-th site */
static void local_coords(int x[4], size_t n, const wd_grid *g)
{
    for (int mu = 0; mu < 4; mu++) {
        x[mu] = (int)(n % (size_t)g->local[mu]);
        n /= (size_t)g->local[mu];
    }
}

static int any_partitioned(const wd_grid *g)
{
    return g->partitioned[0] || g->partitioned[1] || g->partitioned[2] || g->partitioned[3];
}

/* A grid that exchanges must be this process's; a grid of one rank that
 * does not may be used by any process alone. */
static wd_status check_grid(const wd_grid *g, const char *fn)
{
    if (!g)
        return wd_fail(WD_ERR_INVALID, "%s: null grid (one process: a 1x1x1x1 grid)", fn);
    if ((any_partitioned(g) || g->size > 1) &&
        (g->size != wd_comm_size() || g->rank != wd_comm_rank()))
        return wd_fail(WD_ERR_INVALID, "%s: the grid is rank %d of %d's, this process is rank "
                       "%d of %d", fn, g->rank, g->size, wd_comm_rank(), wd_comm_size());
    return WD_OK;
}

/* agreed over the ranks of a grid of several (else this rank's own) */
static wd_status agree(const wd_grid *g, wd_status st)
{
    return g && g->size > 1 ? wd_comm_agree(st) : st;
}

wd_status wd_clover_field(double *blocks, const double *gauge, const wd_grid *grid, double coef)
{
    static const char fn[] = "wd_clover_field";
    wd_status st = check_grid(grid, fn);
    if (st != WD_OK)
        return st;
    if (!blocks || !gauge)
        st = wd_fail(WD_ERR_INVALID, "%s: null %s", fn, !blocks ? "output" : "gauge field");
    else if (!isfinite(coef))
        st = wd_fail(WD_ERR_INVALID, "%s: coef = %g is not finite", fn, coef);
    const size_t vol = local_volume(grid);
    if (st == WD_OK) {
        /* the first non-finite link in site order */
        size_t bad = SIZE_MAX;
#pragma omp parallel for schedule(static) reduction(min : bad)
        for (size_t s = 0; s < vol; s++)
            for (int k = 0; k < 72; k++)
                if (!isfinite(gauge[72 * s + (size_t)k]) && s < bad)
                    bad = s;
        if (bad != SIZE_MAX) {
            int x[4], k = 0;
            local_coords(x, bad, grid);
            while (isfinite(gauge[72 * bad + (size_t)k]))
                k++;
            const int mu = k / 18;
            st = wd_fail(WD_ERR_INVALID, "%s: the link U_%d at global site (x, y, z, t) = "
                         "(%d, %d, %d, %d) is not finite", fn, mu, x[0] + grid->origin[0],
                         x[1] + grid->origin[1], x[2] + grid->origin[2], x[3] + grid->origin[3]);
        }
    }

    const wd_hb_geom geom = wd_hb_geom_make(grid->local, grid->partitioned, grid->origin,
                                            grid->dims);
    const int exchange = any_partitioned(grid);
    double *stored = NULL;
    wd_hb_halo halo = {grid, &geom, {NULL, NULL, NULL, NULL}};
    if (st == WD_OK && exchange) {
        stored = malloc(72 * geom.volume * sizeof *stored);
        if (!stored || wd_hb_halo_open(&halo, grid, &geom) != WD_OK)
            st = wd_fail(WD_ERR_NOMEM, "%s: no memory for the block with its border layers "
                         "(%zu sites)", fn, geom.volume);
    }
    if ((st = agree(grid, st)) == WD_OK && exchange) {
        wd_hb_block_store(stored, gauge, &geom);
        st = wd_hb_exchange(&halo, stored, -1);
    }
    if (st == WD_OK) {
        const double *u = exchange ? stored : gauge;
        clover_table tab;
        make_table(&tab, coef);
#pragma omp parallel for schedule(static)
        for (size_t s = 0; s < vol; s++) {
            int x[4];
            double f[6][18];
            local_coords(x, s, grid);
            site_fhat(f, u, &geom, x);
            site_blocks(blocks + WD_CLOVER_SITE_REALS * s, f, &tab);
        }
    }
    free(stored);
    wd_hb_halo_close(&halo);
    return st;
}

/* ---- the inverse ---------------------------------------------------------- */

enum { BLOCK_OK = 0, BLOCK_NONFINITE = 1, BLOCK_PIVOT = 2, BLOCK_OVERFLOW = 3 };

/* Cholesky of one block: lr, li the strictly lower part of L, dinv[i] =
 * 1 / L[i][i].  Returns BLOCK_OK or why not, with the row and its pivot. */
static int factor(const double *blk, double lr[6][6], double li[6][6], double dinv[6],
                  int *row, double *pivot)
{
    for (int k = 0; k < WD_CLOVER_BLOCK_REALS; k++)
        if (!isfinite(blk[k])) {
            *row = k < 6 ? k : -1;
            *pivot = blk[k];
            return BLOCK_NONFINITE;
        }
    for (int j = 0; j < 6; j++) {
        double d = blk[j];
        for (int k = 0; k < j; k++)
            d -= lr[j][k] * lr[j][k] + li[j][k] * li[j][k];
        *row = j;
        *pivot = d;
        if (!(d > 0) || !isfinite(d))
            return BLOCK_PIVOT;
        const double l = sqrt(d);
        dinv[j] = 1.0 / l;
        if (!isfinite(dinv[j]))
            return BLOCK_OVERFLOW;
        for (int i = j + 1; i < 6; i++) {
            /* L[i][j] = (A[i][j] - sum_k L[i][k] conj L[j][k]) / L[j][j] */
            double re = blk[wd_clover_lower(i, j)], im = blk[wd_clover_lower(i, j) + 1];
            for (int k = 0; k < j; k++) {
                re -= lr[i][k] * lr[j][k] + li[i][k] * li[j][k];
                im -= li[i][k] * lr[j][k] - lr[i][k] * li[j][k];
            }
            lr[i][j] = re * dinv[j];
            li[i][j] = im * dinv[j];
        }
    }
    return BLOCK_OK;
}

/* out = A^-1 of a factored block; BLOCK_OVERFLOW when it is not finite */
static int invert_factored(double *out, const double lr[6][6], const double li[6][6],
                           const double dinv[6])
{
    /* W = L^-1: W[i][i] = dinv[i], W[i][j] = -dinv[i] sum_{j <= k < i} L[i][k] W[k][j] */
    double wr[6][6], wi[6][6];
    for (int j = 0; j < 6; j++) {
        wr[j][j] = dinv[j];
        wi[j][j] = 0;
        for (int i = j + 1; i < 6; i++) {
            double re = 0, im = 0;
            for (int k = j; k < i; k++) {
                re += lr[i][k] * wr[k][j] - li[i][k] * wi[k][j];
                im += lr[i][k] * wi[k][j] + li[i][k] * wr[k][j];
            }
            wr[i][j] = -dinv[i] * re;
            wi[i][j] = -dinv[i] * im;
        }
    }
    int finite = 1;
    for (int i = 0; i < 6; i++)
        for (int j = 0; j <= i; j++) {
            double re = 0, im = 0;
            for (int k = i; k < 6; k++) {
                /* conj(W[k][i]) W[k][j] */
                re += wr[k][i] * wr[k][j] + wi[k][i] * wi[k][j];
                im += wr[k][i] * wi[k][j] - wi[k][i] * wr[k][j];
            }
            finite &= isfinite(re) && isfinite(im);
            if (i == j) {
                out[i] = re;
            } else {
                out[wd_clover_lower(i, j)] = re;
                out[wd_clover_lower(i, j) + 1] = im;
            }
        }
    return finite ? BLOCK_OK : BLOCK_OVERFLOW;
}

/* why a block failed: the first such block of this rank (site SIZE_MAX:
 * none) or, after refused_first(), of every rank in global order */
typedef struct refusal {
    size_t site;    /* this rank's site index; the global index after refused_first */
    int block, why, row;
    double pivot;
} refusal;

/* factor (and when out != NULL invert into out) both blocks of a site */
static int site_inverse(double *out, const double *site, int *block, int *row, double *pivot)
{
    for (int b = 0; b < 2; b++) {
        double lr[6][6], li[6][6], dinv[6], tmp[WD_CLOVER_BLOCK_REALS];
        *block = b;
        int why = factor(site + WD_CLOVER_BLOCK_REALS * b, lr, li, dinv, row, pivot);
        if (why == BLOCK_OK)
            why = invert_factored(tmp, lr, li, dinv);
        if (why != BLOCK_OK)
            return why;
        if (out)
            memcpy(out + WD_CLOVER_BLOCK_REALS * b, tmp, sizeof tmp);
    }
    return BLOCK_OK;
}

/* The global first refusal over the ranks: every rank sends its own to
 * rank 0 (the pattern fixed by the grid), rank 0 keeps the one with the
 * lowest global site and broadcasts it.  r->site: global index in and
 * out, SIZE_MAX for none. */
static wd_status refused_first(refusal *r, const wd_grid *g)
{
    double rec[5] = {r->site == SIZE_MAX ? -1.0 : (double)r->site, r->block, r->why, r->row,
                     r->pivot};
    wd_status st = WD_OK;
    if (g->rank != 0) {
        st = wd_comm_send(rec, sizeof rec, 0, TAG_REFUSED);
    } else {
        for (int from = 1; from < g->size; from++) {
            double other[5];
            const wd_status rs = wd_comm_recv(other, sizeof other, from, TAG_REFUSED);
            if (rs != WD_OK) {
                if (st == WD_OK)
                    st = rs;
                continue;
            }
            if (other[0] >= 0 && (rec[0] < 0 || other[0] < rec[0]))
                memcpy(rec, other, sizeof rec);
        }
    }
    if ((st = wd_comm_agree(st)) == WD_OK)
        st = wd_comm_bcast(rec, sizeof rec, 0);
    if ((st = wd_comm_agree(st)) == WD_OK) {
        r->site = rec[0] < 0 ? SIZE_MAX : (size_t)rec[0];
        r->block = (int)rec[1];
        r->why = (int)rec[2];
        r->row = (int)rec[3];
        r->pivot = rec[4];
    }
    return st;
}

static wd_status refuse(const refusal *r, const wd_grid *g, const char *fn)
{
    char where[128];
    if (g) {
        size_t n = r->site;
        int x[4];
        for (int mu = 0; mu < 4; mu++) {
            x[mu] = (int)(n % (size_t)g->dims[mu]);
            n /= (size_t)g->dims[mu];
        }
        snprintf(where, sizeof where, "global site (x, y, z, t) = (%d, %d, %d, %d)", x[0], x[1],
                 x[2], x[3]);
    } else {
        snprintf(where, sizeof where, "site %zu", r->site);
    }
    const char *spins = r->block ? "spins 2, 3" : "spins 0, 1";
    switch (r->why) {
    case BLOCK_NONFINITE:
        return wd_fail(WD_ERR_INVALID, "%s: the clover block at %s, chirality block %d (%s), "
                       "holds a non-finite entry (%g)", fn, where, r->block, spins, r->pivot);
    case BLOCK_PIVOT:
        return wd_fail(WD_ERR_INVALID, "%s: the clover block at %s, chirality block %d (%s), "
                       "is not positive definite (Cholesky pivot %.3g in row %d)", fn, where,
                       r->block, spins, r->pivot, r->row);
    default:
        return wd_fail(WD_ERR_INVALID, "%s: the clover block at %s, chirality block %d (%s), "
                       "has an inverse that overflows (pivot %.3g in row %d)", fn, where,
                       r->block, spins, r->pivot, r->row);
    }
}

wd_status wd_clover_invert(double *inv, const double *blocks, size_t sites, const wd_grid *grid)
{
    static const char fn[] = "wd_clover_invert";
    wd_status st = grid ? check_grid(grid, fn) : WD_OK;
    if (st != WD_OK)
        return st;
    if (!inv || !blocks)
        st = wd_fail(WD_ERR_INVALID, "%s: null %s", fn, !inv ? "output" : "clover field");
    else if (grid && sites != local_volume(grid))
        st = wd_fail(WD_ERR_INVALID, "%s: %zu sites, the rank's block has %zu", fn, sites,
                     local_volume(grid));
    if ((st = agree(grid, st)) != WD_OK)
        return st;

    /* the checking pass: the first refused site of this rank */
    size_t first = SIZE_MAX;
#pragma omp parallel for schedule(static) reduction(min : first)
    for (size_t s = 0; s < sites; s++) {
        int block, row;
        double pivot;
        if (s < first &&
            site_inverse(NULL, blocks + WD_CLOVER_SITE_REALS * s, &block, &row, &pivot) !=
                BLOCK_OK)
            first = s;
    }
    refusal r = {SIZE_MAX, 0, BLOCK_OK, 0, 0};
    if (first != SIZE_MAX) {
        r.site = first;
        r.why = site_inverse(NULL, blocks + WD_CLOVER_SITE_REALS * first, &r.block, &r.row,
                             &r.pivot);
        if (grid) {
            int x[4];
            local_coords(x, first, grid);
            r.site = 0;
            for (int mu = 3; mu >= 0; mu--)
                r.site = r.site * (size_t)grid->dims[mu] + (size_t)(x[mu] + grid->origin[mu]);
        }
    }
    st = agree(grid, first != SIZE_MAX ? WD_ERR_INVALID : WD_OK);
    if (st != WD_OK) {
        if (grid && grid->size > 1 && (st = refused_first(&r, grid)) != WD_OK)
            return st;
        return refuse(&r, grid, fn);
    }

#pragma omp parallel for schedule(static)
    for (size_t s = 0; s < sites; s++) {
        int block, row;
        double pivot, site[WD_CLOVER_SITE_REALS];
        memcpy(site, blocks + WD_CLOVER_SITE_REALS * s, sizeof site);
        site_inverse(inv + WD_CLOVER_SITE_REALS * s, site, &block, &row, &pivot);
    }
    return WD_OK;
}

/* ---- A in ----------------------------------------------------------------- */

void wd_clover_apply_host(double *out, const double *blocks, const double *in, size_t sites)
{
#pragma omp parallel for schedule(static)
    for (size_t s = 0; s < sites; s++) {
        double v[24];
        memcpy(v, in + 24 * s, sizeof v);
        for (int b = 0; b < 2; b++) {
            const double *blk = blocks + WD_CLOVER_SITE_REALS * s + WD_CLOVER_BLOCK_REALS * b;
            const double *x = v + 12 * b;
            double *y = out + 24 * s + 12 * b;
            for (int i = 0; i < 6; i++) {
                double re = blk[i] * x[2 * i], im = blk[i] * x[2 * i + 1];
                for (int j = 0; j < 6; j++) {
                    if (j == i)
                        continue;
                    /* A[i][j] from the lower triangle: conj A[j][i] above it */
                    const int o = i > j ? wd_clover_lower(i, j) : wd_clover_lower(j, i);
                    const double ar = blk[o], ai = i > j ? blk[o + 1] : -blk[o + 1];
                    re += ar * x[2 * j] - ai * x[2 * j + 1];
                    im += ar * x[2 * j + 1] + ai * x[2 * j];
                }
                y[2 * i] = re;
                y[2 * i + 1] = im;
            }
        }
    }
}
