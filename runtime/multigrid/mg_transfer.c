/*
 * mg_transfer.c: the aggregates of a multigrid level, the prolongator P and
 * restrictor P^dag, and the coarse operator P^dag A P (wd_mg.h).
 *
 * The externally accessible functions are
 *   wd_mg_transfer_check          the checks of block and nvec alone
 *   wd_mg_transfer_init / _free   geometry of the aggregates, null-vector
 *                                 storage, the checks of block and nvec
 *   wd_mg_orthonormalise          per aggregate and chirality, modified
 *                                 Gram-Schmidt twice, vectors in order
 *   wd_mg_prolong / wd_mg_restrict   P and P^dag on host fields
 *   wd_mg_random_start            a null vector's random start (a stream a
 *                                 global site)
 *   wd_mg_vector_set              store one null vector from a field
 *   wd_mg_vector_get              one null vector into a field
 *   wd_mg_parity_sites            the sites of one parity, by aggregate and
 *                                 in all (a transfer of one parity's field)
 *   wd_mg_coarse_init             a coarse operator's extents, neighbours, zero links
 *   wd_mg_coarse_build            D_c = P^dag A P by directions, aggregate by
 *                                 aggregate, each site's vectors read together
 * Notes: an aggregate is a block of block[0] x .. x block[3] fine sites;
 * coarse site b holds its 2 nvec components chirality major.  Every loop
 * over aggregates runs under OpenMP with one aggregate an iteration, the
 * sums inside it in site order: the results do not depend on the thread
 * count.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "wd_core.h"
#include "wd_mg.h"

static const char dim_name[4] = {'X', 'Y', 'Z', 'T'};

wd_status wd_mg_transfer_check(int level, const int fine_dims[4], int n_fine, const int block[4],
                               int nvec, int coarse_dims[4])
{
    for (int mu = 0; mu < 4; ++mu) {
        if (block[mu] < 1 || fine_dims[mu] % block[mu] != 0)
            return wd_fail(WD_ERR_INVALID, "multigrid level %d: block %d in %c does not divide "
                           "the level's local extent %d", level, block[mu], dim_name[mu],
                           fine_dims[mu]);
        const int c = fine_dims[mu] / block[mu];
        if (c > 1 && c % 2)
            return wd_fail(WD_ERR_INVALID, "multigrid level %d: block %d in %c leaves an odd "
                           "coarse extent %d (the coarse lattice must be even, or 1, in each "
                           "dimension)", level, block[mu], dim_name[mu], c);
        coarse_dims[mu] = c;
    }
    const int bv = block[0] * block[1] * block[2] * block[3];
    const long dim = (long)bv * n_fine / 2;
    if (nvec < 1 || nvec > dim)
        return wd_fail(WD_ERR_INVALID, "multigrid level %d: nvec %d must be between 1 and the "
                       "dimension of an aggregate per chirality, %d sites x %d = %ld", level, nvec,
                       bv, n_fine / 2, dim);
    return WD_OK;
}

wd_status wd_mg_transfer_init(wd_mg_transfer *t, int level, const int fine_dims[4], int n_fine,
                              const int block[4], int nvec, size_t ghost_sites)
{
    memset(t, 0, sizeof *t);
    const wd_status st = wd_mg_transfer_check(level, fine_dims, n_fine, block, nvec,
                                              t->coarse_dims);
    if (st != WD_OK)
        return st;
    memcpy(t->fine_dims, fine_dims, sizeof t->fine_dims);
    memcpy(t->block, block, sizeof t->block);
    t->block_volume = block[0] * block[1] * block[2] * block[3];
    t->fine_volume = (size_t)fine_dims[0] * fine_dims[1] * fine_dims[2] * fine_dims[3];
    t->coarse_volume = t->fine_volume / t->block_volume;
    t->n_fine = n_fine;
    t->nvec = nvec;
    t->ghost_sites = ghost_sites;
    t->agg = malloc(t->fine_volume * sizeof *t->agg);
    t->sites = malloc(t->fine_volume * sizeof *t->sites);
    t->v = malloc((size_t)nvec * (t->fine_volume + ghost_sites) * n_fine * sizeof *t->v);
    if (!t->agg || !t->sites || !t->v) {
        wd_mg_transfer_free(t);
        return wd_fail(WD_ERR_NOMEM, "multigrid level %d: cannot allocate %zu bytes for %d null "
                       "vectors", level, (size_t)nvec * (t->fine_volume + ghost_sites) * n_fine *
                       sizeof(double complex), nvec);
    }
    int *fill = calloc(t->coarse_volume, sizeof *fill);
    if (!fill) {
        wd_mg_transfer_free(t);
        return wd_fail(WD_ERR_NOMEM, "multigrid level %d: cannot allocate the aggregate tables",
                       level);
    }
    /* sites in lexicographic order: each aggregate's list is in site order */
    for (size_t s = 0; s < t->fine_volume; ++s) {
        size_t r = s, b = 0, stride = 1;
        for (int mu = 0; mu < 4; ++mu) {
            b += stride * ((r % fine_dims[mu]) / block[mu]);
            stride *= t->coarse_dims[mu];
            r /= fine_dims[mu];
        }
        t->agg[s] = (int)b;
        t->sites[b * t->block_volume + fill[b]++] = (int)s;
    }
    free(fill);
    return WD_OK;
}

wd_status wd_mg_parity_sites(const wd_mg_transfer *t, int parity, int *agg_sites,
                             int *fine_sites)
{
    const int bv = t->block_volume, half = bv / 2;
    size_t at = 0;
    for (size_t b = 0; b < t->coarse_volume; ++b) {
        int m = 0;
        for (int j = 0; j < bv; ++j) {
            size_t r = (size_t)t->sites[b * bv + j];
            int sum = 0;
            for (int mu = 0; mu < 4; ++mu) {
                sum += (int)(r % (size_t)t->fine_dims[mu]);
                r /= (size_t)t->fine_dims[mu];
            }
            if ((sum & 1) != parity)
                continue;
            if (m == half || bv % 2)
                return wd_fail(WD_ERR_INVALID, "multigrid: aggregate %zu has not half its %d "
                               "sites of parity %d (blocks of odd extents only)", b, bv, parity);
            agg_sites[b * half + m++] = t->sites[b * bv + j];
        }
        if (m != half)
            return wd_fail(WD_ERR_INVALID, "multigrid: aggregate %zu has %d of its %d sites of "
                           "parity %d", b, m, bv, parity);
    }
    for (size_t x = 0; x < t->fine_volume; ++x) {
        size_t r = x;
        int sum = 0;
        for (int mu = 0; mu < 4; ++mu) {
            sum += (int)(r % (size_t)t->fine_dims[mu]);
            r /= (size_t)t->fine_dims[mu];
        }
        if ((sum & 1) == parity)
            fine_sites[at++] = (int)x;
    }
    return WD_OK;
}

void wd_mg_transfer_free(wd_mg_transfer *t)
{
    free(t->agg);
    free(t->sites);
    free(t->v);
    memset(t, 0, sizeof *t);
}

/* vector k's value at fine site s */
static double complex *vec(const wd_mg_transfer *t, int k, size_t s)
{
    return t->v + (s * t->nvec + (size_t)k) * t->n_fine;
}

void wd_mg_random_start(const int dims[4], const int ext[4], const int org[4], uint64_t base,
                        int n, double complex *v)
{
    const size_t volume = (size_t)dims[0] * dims[1] * dims[2] * dims[3];
#pragma omp parallel for schedule(static) if (volume * n >= WD_MG_PARALLEL_MIN)
    for (size_t s = 0; s < volume; ++s) {
        size_t r = s, global = 0, stride = 1;
        for (int mu = 0; mu < 4; ++mu) {
            global += stride * (size_t)(org[mu] + (int)(r % dims[mu]));
            stride *= ext[mu];
            r /= dims[mu];
        }
        wd_rng rng;
        wd_rng_seed(&rng, base + global);
        for (int i = 0; i < n; ++i) {
            const double re = 2 * wd_rng_uniform(&rng) - 1;
            v[s * n + i] = CMPLX(re, 2 * wd_rng_uniform(&rng) - 1);
        }
    }
}

void wd_mg_vector_set(wd_mg_transfer *t, int k, const double complex *field)
{
    const int n = t->n_fine;
#pragma omp parallel for schedule(static) if (t->fine_volume * n >= WD_MG_PARALLEL_MIN)
    for (size_t s = 0; s < t->fine_volume; ++s)
        memcpy(vec(t, k, s), field + s * n, (size_t)n * sizeof *field);
}

void wd_mg_vector_get(const wd_mg_transfer *t, int k, double complex *field)
{
    const int n = t->n_fine;
#pragma omp parallel for schedule(static) if (t->fine_volume * n >= WD_MG_PARALLEL_MIN)
    for (size_t s = 0; s < t->fine_volume; ++s)
        memcpy(field + s * n, vec(t, k, s), (size_t)n * sizeof *field);
}

wd_status wd_mg_orthonormalise(wd_mg_transfer *t, int level)
{
    const int h = t->n_fine / 2, bv = t->block_volume, nv = t->nvec;
    const size_t len = (size_t)bv * h;      /* one vector's restriction to an aggregate and chirality */
    long bad = -1;
    int nomem = 0;
#pragma omp parallel
    {
        /* each aggregate and chirality's vectors gathered into contiguous
         * rows (site, then component: the order of every sum below) */
        double complex *rows = malloc((size_t)nv * len * sizeof *rows);
        if (!rows) {
#pragma omp atomic write
            nomem = 1;
        }
#pragma omp for schedule(static)
        for (size_t b = 0; b < t->coarse_volume; ++b) {
            if (!rows)
                continue;
            const int *sites = t->sites + b * bv;
            for (int chi = 0; chi < 2; ++chi) {
                for (int k = 0; k < nv; ++k)
                    for (int i = 0; i < bv; ++i)
                        memcpy(rows + k * len + (size_t)i * h, vec(t, k, sites[i]) + chi * h,
                               (size_t)h * sizeof *rows);
                for (int k = 0; k < nv; ++k) {
                    double complex *vk = rows + k * len;
                    for (int pass = 0; pass < 2; ++pass)
                        for (int j = 0; j < k; ++j) {
                            const double complex *vj = rows + j * len;
                            double complex dot = 0;
                            for (size_t a = 0; a < len; ++a)
                                dot += conj(vj[a]) * vk[a];
                            for (size_t a = 0; a < len; ++a)
                                vk[a] -= dot * vj[a];
                        }
                    double norm2 = 0;
                    for (size_t a = 0; a < len; ++a)
                        norm2 += creal(vk[a]) * creal(vk[a]) + cimag(vk[a]) * cimag(vk[a]);
                    if (!(norm2 > 1e-28) || !isfinite(norm2)) {
                        /* the lowest failing aggregate is reported */
#pragma omp critical(mg_orth)
                        if (bad < 0 || (long)(b * 2 * nv + chi * nv + k) < bad)
                            bad = (long)(b * 2 * nv + chi * nv + k);
                        continue;
                    }
                    const double scale = 1 / sqrt(norm2);
                    for (size_t a = 0; a < len; ++a)
                        vk[a] *= scale;
                }
                for (int k = 0; k < nv; ++k)
                    for (int i = 0; i < bv; ++i)
                        memcpy(vec(t, k, sites[i]) + chi * h, rows + k * len + (size_t)i * h,
                               (size_t)h * sizeof *rows);
            }
        }
        free(rows);
    }
    if (nomem)
        return wd_fail(WD_ERR_NOMEM, "multigrid level %d: cannot allocate the "
                       "orthonormalisation's rows (%zu bytes a thread)", level,
                       (size_t)nv * len * sizeof(double complex));
    if (bad >= 0)
        return wd_fail(WD_ERR_INVALID, "multigrid level %d: null vector %ld is zero or dependent "
                       "on the earlier ones in aggregate %ld, chirality %ld (a setup that found "
                       "too few independent vectors)", level, bad % t->nvec,
                       bad / (2 * t->nvec), bad / t->nvec % 2);
    return WD_OK;
}

void wd_mg_prolong(const wd_mg_transfer *t, double complex *fine, const double complex *coarse)
{
    const int n = t->n_fine, h = n / 2, nv = t->nvec;
#pragma omp parallel for schedule(static) if (t->fine_volume * n * nv >= WD_MG_PARALLEL_MIN)
    for (size_t s = 0; s < t->fine_volume; ++s) {
        const double complex *c = coarse + (size_t)2 * nv * t->agg[s];
        double complex *f = fine + (size_t)n * s;
        for (int a = 0; a < n; ++a) {
            const int chi = a >= h;
            double complex acc = 0;
            for (int k = 0; k < nv; ++k)
                acc += vec(t, k, s)[a] * c[chi * nv + k];
            f[a] = acc;
        }
    }
}

void wd_mg_restrict(const wd_mg_transfer *t, double complex *coarse, const double complex *fine)
{
    const int n = t->n_fine, h = n / 2, nv = t->nvec, bv = t->block_volume;
#pragma omp parallel for schedule(static) if (t->fine_volume * n * nv >= WD_MG_PARALLEL_MIN)
    for (size_t b = 0; b < t->coarse_volume; ++b) {
        double complex *c = coarse + (size_t)2 * nv * b;
        for (int j = 0; j < 2 * nv; ++j)
            c[j] = 0;
        for (int i = 0; i < bv; ++i) {
            const size_t s = (size_t)t->sites[(size_t)b * bv + i];
            const double complex *f = fine + (size_t)n * s;
            for (int chi = 0; chi < 2; ++chi)
                for (int k = 0; k < nv; ++k) {
                    const double complex *v = vec(t, k, s) + chi * h;
                    double complex acc = 0;
                    for (int a = 0; a < h; ++a)
                        acc += conj(v[a]) * f[chi * h + a];
                    c[chi * nv + k] += acc;
                }
        }
    }
}

/* whether the fine hop d from site s leaves its aggregate */
static int leaves(const wd_mg_transfer *t, int d, size_t s)
{
    const int mu = d / 2;
    size_t r = s;
    for (int nu = 0; nu < mu; ++nu)
        r /= t->fine_dims[nu];
    const int x = (int)(r % t->fine_dims[mu]), bl = t->block[mu];
    return (d & 1) ? x % bl == 0 : x % bl == bl - 1;
}

wd_status wd_mg_coarse_init(wd_mg_op *coarse, const wd_mg_transfer *t, const wd_grid *grid)
{
    const int nc = 2 * t->nvec;
    memset(coarse, 0, sizeof *coarse);
    memcpy(coarse->dims, t->coarse_dims, sizeof coarse->dims);
    coarse->volume = t->coarse_volume;
    coarse->n = nc;
    const size_t link_count = coarse->volume * 9 * (size_t)nc * nc;
    wd_status st = wd_mg_halo_init(&coarse->halo, grid, coarse->dims);
    if (st == WD_OK) {
        coarse->nbr = wd_mg_halo_neighbours(&coarse->halo);
        coarse->links = calloc(link_count, sizeof *coarse->links);
        if (!coarse->nbr || !coarse->links)
            st = wd_fail(WD_ERR_NOMEM, "multigrid: cannot allocate %zu bytes for a coarse "
                         "operator of %zu sites", link_count * sizeof(double complex),
                         t->coarse_volume);
    }
    if (st != WD_OK)
        wd_mg_op_free(coarse);
    return st;
}

/* Scratch of dense_site: b[h nv] (a chirality's null vectors at the source
 * site, [a][k]), y[n nv] (the term applied to them, [row][k]), c[2 nv h]
 * (the conjugated null vectors at the site, [chi'][k'][a]) */
typedef struct dense_scratch {
    double complex *b, *y, *c;
} dense_scratch;

/* For a coarse fine level (its terms dense n x n blocks, row-major): add
 * site s's share of term `term` to the aggregate's link x (nc x nc,
 * row-major): for each chirality chi of the columns, Y = L(:, chi) B_chi
 * with B_chi the source's null vectors restricted to chi, then for each
 * chirality ci of the rows X(ci, chi) += C_ci Y(ci rows) with C_ci the
 * site's null vectors restricted to ci, conjugated.  The same sums as
 * the term applied to each chirality-projected vector and projected on
 * each row's vector, without the half of each product that meets zeros,
 * as two small matrix products (the inner loops over k, contiguous). */
static void dense_site(const wd_mg_op *fine, const wd_mg_transfer *t, int term, size_t s,
                       size_t src, double complex *x, dense_scratch *w)
{
    const int n = fine->n, h = n / 2, nv = t->nvec, nc = 2 * nv;
    const double complex *L = fine->links + (size_t)n * n * (9 * s + (size_t)term);
    for (int ci = 0; ci < 2; ++ci)
        for (int k = 0; k < nv; ++k) {
            const double complex *v = vec(t, k, s) + ci * h;
            for (int a = 0; a < h; ++a)
                w->c[((size_t)ci * nv + k) * h + a] = conj(v[a]);
        }
    for (int chi = 0; chi < 2; ++chi) {
        for (int k = 0; k < nv; ++k) {
            const double complex *v = vec(t, k, src) + chi * h;
            for (int a = 0; a < h; ++a)
                w->b[(size_t)a * nv + k] = v[a];
        }
        for (int r = 0; r < n; ++r) {
            double complex *yr = w->y + (size_t)r * nv;
            for (int k = 0; k < nv; ++k)
                yr[k] = 0;
            const double complex *lr = L + (size_t)r * n + chi * h;
            for (int a = 0; a < h; ++a) {
                const double complex l = lr[a];
                const double complex *ba = w->b + (size_t)a * nv;
                for (int k = 0; k < nv; ++k)
                    yr[k] += l * ba[k];
            }
        }
        for (int ci = 0; ci < 2; ++ci)
            for (int ki = 0; ki < nv; ++ki) {
                double complex *xr = x + (size_t)nc * (ci * nv + ki) + chi * nv;
                const double complex *cr = w->c + ((size_t)ci * nv + ki) * h;
                for (int a = 0; a < h; ++a) {
                    const double complex c = cr[a];
                    const double complex *ya = w->y + (size_t)(ci * h + a) * nv;
                    for (int k = 0; k < nv; ++k)
                        xr[k] += c * ya[k];
                }
            }
    }
}

wd_status wd_mg_coarse_build(wd_mg_op *coarse, wd_mg_op *fine, wd_mg_transfer *t)
{
    const int n = fine->n, h = n / 2, nv = t->nvec, nc = 2 * nv, bv = t->block_volume;
    if (t->ghost_sites != fine->halo.nghost)
        return wd_fail(WD_ERR_INVALID, "multigrid: the transfer has room for %zu ghost sites, "
                       "its fine level %zu", t->ghost_sites, fine->halo.nghost);
    /* the null vectors at the sites across the faces (a hop's source) */
    wd_status st = wd_mg_halo_exchange(&fine->halo, t->v, (size_t)nv * n * sizeof *t->v);
    if (st == WD_OK)
        st = wd_mg_coarse_init(coarse, t, fine->halo.grid);
    if (st != WD_OK)
        return st;
    /* Entry (i, j) of aggregate b's link for term d, i = (chi', k'), j =
     * (chi, k): the sum over the aggregate's sites x whose term d leaves
     * it (d < 8; else the local block) of v_k'(x)^dag restricted to chi'
     * times the term applied to v_k restricted to chi at the site it reads.
     * One aggregate an iteration, its sites in order: the null vectors are
     * read site by site.  A coarse fine level's dense terms go through
     * dense_site's two matrix products (the same sums, other orders). */
    int bad = 0;
    for (int term = 0; term <= WD_MG_DIRS; ++term) {
#pragma omp parallel for schedule(static)
        for (size_t b = 0; b < coarse->volume; ++b) {
            /* psi, y (n each); a dense level's scratch after them */
            const size_t dense = fine->u ? 0 : (size_t)nv * (h + n + n);
            double complex *psi = malloc((2 * (size_t)n + dense) * sizeof *psi), *y = psi + n;
            if (!psi) {
#pragma omp atomic write
                bad = 1;
                continue;
            }
            dense_scratch w = {y + n, y + n + (size_t)h * nv, y + n + (size_t)(h + n) * nv};
            for (int i = 0; i < bv; ++i) {
                const size_t s = (size_t)t->sites[b * bv + i];
                const size_t src = term < WD_MG_DIRS ? (size_t)fine->nbr[WD_MG_DIRS * s + term] : s;
                const int slot = term < WD_MG_DIRS && leaves(t, term, s) ? term : WD_MG_LOCAL;
                double complex *x = coarse->links + (size_t)nc * nc * (9 * b + slot);
                if (dense) {
                    dense_site(fine, t, term, s, src, x, &w);
                    continue;
                }
                for (int j = 0; j < nc; ++j) {
                    const int chi = j / nv;
                    const double complex *vs = vec(t, j % nv, src);
                    for (int a = 0; a < n; ++a)
                        psi[a] = (a >= h) == chi ? vs[a] : 0;
                    wd_mg_op_term(fine, term, s, y, psi);
                    for (int ci = 0; ci < 2; ++ci)
                        for (int ki = 0; ki < nv; ++ki) {
                            const double complex *v = vec(t, ki, s) + ci * h;
                            const double complex *ys = y + ci * h;
                            double re = 0, im = 0;
                            for (int a = 0; a < h; ++a) {
                                re += creal(v[a]) * creal(ys[a]) + cimag(v[a]) * cimag(ys[a]);
                                im += creal(v[a]) * cimag(ys[a]) - cimag(v[a]) * creal(ys[a]);
                            }
                            x[(size_t)nc * (ci * nv + ki) + j] += CMPLX(re, im);
                        }
                }
            }
            free(psi);
        }
    }
    if (bad) {
        wd_mg_op_free(coarse);
        return wd_fail(WD_ERR_NOMEM, "multigrid: cannot allocate the coarse build's scratch");
    }
    return WD_OK;
}
