/*
 * host_check.c: the solver's float64 checks on the host fields of one
 * rank's block: the scan for NaN and the norm of a source, and the true
 * residual ||b - M x|| / ||b|| with the hand-written reference operator
 * (ref_wilson_block), on any process grid.
 *
 * The externally accessible functions are
 *   wd_host_block_open   the faces the reference needs beyond the block:
 *                        buffers for the spinor faces and the backward
 *                        ghost links of every partitioned dimension,
 *                        exchanged once (collective)
 *   wd_host_block_close  free them
 *   wd_host_scan         first non-finite value of this rank's block and
 *                        the global norm^2 (collective: the caller agrees
 *                        on a NaN found on some rank)
 *   wd_host_residual     the global relative residual, and optionally
 *                        r = b - M x on the block (collective; M_sw with
 *                        the host clover blocks of clover_field.c)
 * Notes: on one process these are the single-lattice computations of
 * before (the reference wraps periodically; no message is sent).  Sums run
 * over fixed chunks of the block and then over ranks in rank order
 * (wd_comm_sum), so every rank gets the same bits for any thread count.
 * Every collective first agrees on the local failures (wd_comm_agree), so
 * a rank that cannot allocate stops all of them with its message.
 */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clover_field.h"
#include "ref_wilson.h"
#include "wd_core.h"
#include "wd_solver.h"

/* chunks of the host sums: a fixed number, so the partial sums add in the
 * same order for any thread count */
#define SCAN_CHUNKS 256

static size_t block_volume(const wd_host_block *h)
{
    return wd_volume(h->grid.local);
}

static size_t face_sites(const wd_host_block *h, int mu)
{
    return block_volume(h) / (size_t)h->grid.local[mu];
}

/* dst[f] = the `count` complex at offset `offset` of site f of the
 * mu-slice `slice` of src (per_site complex a site); face order: the other
 * three coordinates, the lowest dimension fastest (ref_block's order). */
static void gather_face(double complex *dst, const double complex *src, const int L[4], int mu,
                        int slice, size_t per_site, size_t offset, size_t count)
{
    const size_t n = wd_volume(L) / (size_t)L[mu];
#pragma omp parallel for
    for (size_t f = 0; f < n; ++f) {
        int c[4];
        size_t r = f;
        for (int nu = 0; nu < 4; ++nu)
            if (nu != mu) {
                c[nu] = (int)(r % (size_t)L[nu]);
                r /= (size_t)L[nu];
            }
        c[mu] = slice;
        const size_t site =
            c[0] + (size_t)L[0] * (c[1] + (size_t)L[1] * (c[2] + (size_t)L[2] * (size_t)c[3]));
        memcpy(dst + count * f, src + per_site * site + offset, count * sizeof *dst);
    }
}

/* The faces of one field for every partitioned mu with bwd[mu] set:
 * fwd[mu] <- the forward neighbour's first slice, bwd[mu] <- the backward
 * neighbour's last slice (fwd NULL: that side is received into scratch and
 * dropped); `offset` advances by `step` complex from one mu to the next. */
static wd_status exchange(wd_host_block *h, const double complex *src, size_t per_site,
                          size_t offset, size_t step, size_t count, double complex *fwd[4],
                          double complex *bwd[4])
{
    const int *L = h->grid.local;
    for (int mu = 0; mu < 4; ++mu, offset += step) {
        if (!h->grid.partitioned[mu] || !bwd[mu])
            continue;
        const size_t n = face_sites(h, mu) * count;
        double complex *first = h->send, *last = h->send + n;
        gather_face(first, src, L, mu, 0, per_site, offset, count);
        gather_face(last, src, L, mu, L[mu] - 1, per_site, offset, count);
        const void *out[2];
        void *in[2];
        out[WD_FWD] = last;
        out[WD_BWD] = first;
        in[WD_FWD] = fwd ? (void *)fwd[mu] : (void *)h->scratch;
        in[WD_BWD] = bwd[mu];
        wd_comm_halo hx;
        wd_status st = wd_comm_halo_start(&hx, &h->grid, mu, out, in, n * sizeof *first);
        if (st == WD_OK)
            st = wd_comm_halo_wait(&hx);
        if ((st = wd_comm_agree(st)) != WD_OK)
            return st;
    }
    return WD_OK;
}

void wd_host_block_close(wd_host_block *h)
{
    free(h->faces);
    free(h->send);
    free(h->scratch);
    free(h->mx);
    free(h->ax);
    memset(h, 0, sizeof *h);
}

wd_status wd_host_block_open(wd_host_block *h, const wd_grid *grid, const double *gauge)
{
    memset(h, 0, sizeof *h);
    h->grid = *grid;
    size_t total = 0, largest = 0;
    for (int mu = 0; mu < 4; ++mu)
        if (grid->partitioned[mu]) {
            const size_t n = face_sites(h, mu);
            total += n * (12 + 12 + 9);
            if (n > largest)
                largest = n;
        }
    const size_t vol = block_volume(h);
    h->mx = malloc(vol * 12 * sizeof *h->mx);
    if (total) {
        h->faces = malloc(total * sizeof *h->faces);
        h->send = malloc(2 * largest * 12 * sizeof *h->send);
        h->scratch = malloc(largest * 12 * sizeof *h->scratch);
    }
    wd_status st = WD_OK;
    if (!h->mx || (total && (!h->faces || !h->send || !h->scratch)))
        st = wd_fail(WD_ERR_NOMEM, "solver: cannot allocate %zu bytes for the residual check",
                     (vol * 12 + total + 36 * largest) * sizeof(double complex));
    if ((st = wd_comm_agree(st)) != WD_OK) {
        wd_host_block_close(h);
        return st;
    }
    ref_block *b = &h->ref;
    b->t_origin = grid->origin[3];
    b->global_T = grid->dims[3];
    double complex *p = h->faces, *u_bwd[4] = {NULL, NULL, NULL, NULL};
    for (int mu = 0; mu < 4; ++mu) {
        if (!grid->partitioned[mu])
            continue;
        const size_t n = face_sites(h, mu);
        b->part[mu] = 1;
        h->x_fwd[mu] = p;
        h->x_bwd[mu] = p + 12 * n;
        u_bwd[mu] = p + 24 * n;
        b->x_fwd[mu] = h->x_fwd[mu];
        b->x_bwd[mu] = h->x_bwd[mu];
        b->u_bwd[mu] = u_bwd[mu];
        p += 33 * n;
    }
    /* the links U_mu of the backward neighbour's last mu-slice, once */
    st = exchange(h, (const double complex *)gauge, 36, 0, 9, 9, NULL, u_bwd);
    if (st != WD_OK)
        wd_host_block_close(h);
    return st;
}

long wd_host_scan(const double *v, size_t n, double *norm2, wd_status *st)
{
    long first[SCAN_CHUNKS];
    double part[SCAN_CHUNKS];
#pragma omp parallel for
    for (int c = 0; c < SCAN_CHUNKS; ++c) {
        const size_t lo = n * (size_t)c / SCAN_CHUNKS, hi = n * (size_t)(c + 1) / SCAN_CHUNKS;
        long bad = -1;
        double sum = 0;
        for (size_t i = lo; i < hi; ++i) {
            sum += v[i] * v[i];
            if (bad < 0 && !isfinite(v[i]))
                bad = (long)i;
        }
        first[c] = bad;
        part[c] = sum;
    }
    double sum = 0;
    long bad = -1;
    for (int c = 0; c < SCAN_CHUNKS; ++c) {
        sum += part[c];
        if (bad < 0)
            bad = first[c];
    }
    *st = wd_comm_sum(&sum, 1);
    if (norm2)
        *norm2 = sum;
    return bad;
}

wd_status wd_host_residual(wd_host_block *h, const double *x, const double *u,
                           const double *clover, const double *b, double mass, int tbc,
                           double *res, double *r)
{
    const size_t n = block_volume(h) * 12;
    wd_status st = WD_OK;
    if (clover && !h->ax && !(h->ax = malloc(n * sizeof *h->ax)))
        st = wd_fail(WD_ERR_NOMEM, "solver: cannot allocate %zu bytes for the clover residual "
                     "check", n * sizeof *h->ax);
    if ((st = wd_comm_agree(st)) != WD_OK)
        return st;
    st = exchange(h, (const double complex *)x, 12, 0, 0, 12, h->x_fwd, h->x_bwd);
    if (st != WD_OK)
        return st;
    ref_wilson_block(h->mx, (const double complex *)u, (const double complex *)x, h->grid.local,
                     mass, tbc, 0, &h->ref);
    if (clover) {
        /* M_sw x = M x + (4+m) (A x - x) */
        const double complex *xc = (const double complex *)x;
        wd_clover_apply_host((double *)h->ax, clover, x, block_volume(h));
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; ++i)
            h->mx[i] += (4.0 + mass) * (h->ax[i] - xc[i]);
    }
    const double complex *bc = (const double complex *)b;
    double complex *rc = (double complex *)r;
    double num[SCAN_CHUNKS], den[SCAN_CHUNKS];
#pragma omp parallel for
    for (int c = 0; c < SCAN_CHUNKS; ++c) {
        const size_t lo = n * (size_t)c / SCAN_CHUNKS, hi = n * (size_t)(c + 1) / SCAN_CHUNKS;
        double sn = 0, sd = 0;
        for (size_t i = lo; i < hi; ++i) {
            const double complex d = bc[i] - h->mx[i];
            if (rc)
                rc[i] = d;
            sn += creal(d) * creal(d) + cimag(d) * cimag(d);
            sd += creal(bc[i]) * creal(bc[i]) + cimag(bc[i]) * cimag(bc[i]);
        }
        num[c] = sn;
        den[c] = sd;
    }
    double sums[2] = {0, 0};
    for (int c = 0; c < SCAN_CHUNKS; ++c) {
        sums[0] += num[c];
        sums[1] += den[c];
    }
    if ((st = wd_comm_sum(sums, 2)) != WD_OK)
        return st;
    *res = sqrt(sums[0] / sums[1]);
    return WD_OK;
}
