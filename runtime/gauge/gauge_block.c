/*
 * gauge_block.c: the quenched Monte Carlo and the gauge observables on a
 * process grid (wdirac_gauge.h, "on a process grid").
 *
 * The externally accessible functions are
 *   wd_gauge_grid_of      (gauge_block.h) a wd_lattice checked against this
 *                         process, as the comm module's grid
 *   wd_gauge_init_block   cold or hot start of this rank's block, the links
 *                         one process draws for the same global sites
 *   wd_gauge_heatbath_sweep_block / wd_gauge_overrelax_sweep_block
 *                         heatbath.c's sweeps on a copy of the block with
 *                         one layer of border links on each side of every
 *                         partitioned dimension, exchanged with the
 *                         neighbours after each (mu, parity) checkerboard
 *   wd_gauge_observables_block   the observables of the whole lattice,
 *                         added in wd_gauge_observables' order
 *   wd_hb_halo_open / _close, wd_hb_exchange, wd_hb_block_store / _load
 *                         (gauge_block.h) the stored field with border
 *                         layers and its exchange, which the sweeps and
 *                         the clover field (clover_field.c) share
 *
 * Notes.  Bit for bit against one process: a link's update reads the same
 * links (the border layers hold the neighbours' current values: the
 * exchange runs dimension by dimension, each face including the border
 * layers already filled, so the corners x + mu - nu of the staples arrive
 * too) and the same random numbers (keyed by the global site).  The
 * observables are sums; wd_gauge_observables adds each x-row's terms in x
 * order, then the rows in lexicographic order, and the Polyakov lines'
 * traces in order after multiplying each line in t order.  Here the
 * running row sums travel along X from rank to rank (px to px + 1) and the
 * running line products along T; rank 0 then receives the finished rows
 * one time slice at a time and the finished lines one z slice at a time
 * and adds them in that order: the same additions in the same order, so
 * the same bits (wd_comm_sum's rank-order sum would be deterministic but
 * not equal to one process, and files carry the plaquette to 17 digits).
 * Every message pattern is fixed by the grid alone; a rank that meets a
 * failure keeps to the pattern and the failure is agreed at the end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gauge_block.h"
#include "heatbath_link.h"
#include "wd_comm.h"
#include "wd_core.h"

/* wd_comm_send / recv tags of this file (the io module's start at 7200) */
enum { TAG_ROWS = 7101, TAG_LINES = 7102, TAG_ROW_SUMS = 7103, TAG_LINE_SUMS = 7104 };

wd_status wd_gauge_grid_of(wd_grid *g, const wd_lattice *lat, const char *fn)
{
    if (!lat)
        return wd_fail(WD_ERR_INVALID, "%s: null lattice", fn);
    wd_grid w;
    wd_status st = wd_grid_make(&w, lat->dims, lat->procs, wd_comm_size(), wd_comm_rank(), 4);
    if (st != WD_OK) {
        char why[400];
        snprintf(why, sizeof why, "%s", wd_last_error());
        return wd_fail(st, "%s: %s", fn, why);
    }
    if (lat->rank != w.rank || lat->size != w.size ||
        memcmp(lat->local, w.local, sizeof w.local) != 0 ||
        memcmp(lat->origin, w.origin, sizeof w.origin) != 0)
        return wd_fail(WD_ERR_INVALID,
                       "%s: the lattice is rank %d of %d's (block origin %d %d %d %d), this "
                       "process is rank %d of %d: make it with wd_lattice_make after wd_init",
                       fn, lat->rank, lat->size, lat->origin[0], lat->origin[1], lat->origin[2],
                       lat->origin[3], w.rank, w.size);
    *g = w;
    return WD_OK;
}

static size_t block_volume(const int L[4])
{
    return (size_t)L[0] * L[1] * L[2] * L[3];
}

/* ---- the start ---------------------------------------------------------- */

wd_status wd_gauge_init_block(double *u_block, const wd_lattice *lat, wd_gauge_start start,
                              uint64_t seed)
{
    static const char fn[] = "wd_gauge_init_block";
    wd_grid g;
    wd_status st = wd_gauge_grid_of(&g, lat, fn);
    if (st == WD_OK && !u_block)
        st = wd_fail(WD_ERR_INVALID, "%s: null field", fn);
    if (st == WD_OK && start != WD_START_COLD && start != WD_START_HOT)
        st = wd_fail(WD_ERR_INVALID, "%s: start %d is neither cold (0) nor hot (1)", fn,
                     (int)start);
    if ((st = wd_comm_agree(st)) != WD_OK)
        return st;
    const wd_hb_geom geom = wd_hb_geom_make(g.local, NULL, g.origin, g.dims);
    wd_hb_init(u_block, &geom, start, seed);
    return WD_OK;
}

/* ---- the sweeps --------------------------------------------------------- */

/* sites of the stored field's layer x_d = const */
static size_t layer_sites(const wd_hb_geom *g, int d)
{
    return g->volume / (size_t)g->E[d];
}

/* Copy links lo..hi-1 of every site of the layer x_d = layer of the stored
 * field u into buf (sites x fastest over the other three dimensions), or
 * from buf into the layer when unpack != 0. */
static void layer_copy(double *u, double *buf, const wd_hb_geom *g, int d, int layer, int lo,
                       int hi, int unpack)
{
    int o[3], k = 0;
    for (int nu = 0; nu < 4; nu++)
        if (nu != d)
            o[k++] = nu;
    const size_t n = layer_sites(g, d), per = 18 * (size_t)(hi - lo);
#pragma omp parallel for schedule(static)
    for (size_t f = 0; f < n; f++) {
        size_t r = f, s = (size_t)layer * g->stride[d];
        for (int j = 0; j < 3; j++) {
            s += (r % (size_t)g->E[o[j]]) * g->stride[o[j]];
            r /= (size_t)g->E[o[j]];
        }
        double *site = u + 72 * s + 18 * lo, *b = buf + f * per;
        memcpy(unpack ? site : b, unpack ? b : site, per * sizeof *b);
    }
}

wd_status wd_hb_halo_open(wd_hb_halo *h, const wd_grid *grid, const wd_hb_geom *geom)
{
    h->grid = grid;
    h->geom = geom;
    size_t face = 0;
    for (int d = 0; d < 4; d++)
        if (geom->part[d] && layer_sites(geom, d) > face)
            face = layer_sites(geom, d);
    int ok = 1;
    for (int k = 0; k < 4; k++) {
        h->buf[k] = face ? malloc(72 * face * sizeof(double)) : NULL;
        ok &= !face || h->buf[k] != NULL;
    }
    if (ok)
        return WD_OK;
    wd_hb_halo_close(h);
    return wd_fail(WD_ERR_NOMEM, "no memory for the border faces (%zu sites each)", face);
}

void wd_hb_halo_close(wd_hb_halo *h)
{
    for (int k = 0; k < 4; k++) {
        free(h->buf[k]);
        h->buf[k] = NULL;
    }
}

wd_status wd_hb_exchange(void *ctx, double *u, int mu)
{
    const wd_hb_halo *c = ctx;
    const wd_hb_geom *g = c->geom;
    const int lo = mu < 0 ? 0 : mu, hi = mu < 0 ? 4 : mu + 1;
    wd_status st = WD_OK;
    for (int d = 0; d < 4 && st == WD_OK; d++) {
        if (!g->part[d])
            continue;
        layer_copy(u, c->buf[0], g, d, g->E[d] - 2, lo, hi, 0);
        layer_copy(u, c->buf[1], g, d, 1, lo, hi, 0);
        const void *send[2] = {c->buf[0], c->buf[1]};
        void *recv[2] = {c->buf[2], c->buf[3]};
        wd_comm_halo h;
        st = wd_comm_halo_start(&h, c->grid, d, send, recv,
                                layer_sites(g, d) * 18 * (size_t)(hi - lo) * sizeof(double));
        if (st == WD_OK)
            st = wd_comm_halo_wait(&h);
        if (st == WD_OK) {
            layer_copy(u, c->buf[2], g, d, g->E[d] - 1, lo, hi, 1);
            layer_copy(u, c->buf[3], g, d, 0, lo, hi, 1);
        }
    }
    return wd_comm_agree(st);
}

/* the stored index of the block's n-th site */
static size_t stored_of(const wd_hb_geom *g, size_t n)
{
    int x[4];
    for (int mu = 0; mu < 4; mu++) {
        x[mu] = (int)(n % (size_t)g->L[mu]);
        n /= (size_t)g->L[mu];
    }
    return wd_hb_stored(g, x);
}

void wd_hb_block_store(double *stored, const double *u_block, const wd_hb_geom *g)
{
    const size_t n = block_volume(g->L);
#pragma omp parallel for schedule(static)
    for (size_t s = 0; s < n; s++)
        memcpy(stored + 72 * stored_of(g, s), u_block + 72 * s, 72 * sizeof *stored);
}

void wd_hb_block_load(double *u_block, const double *stored, const wd_hb_geom *g)
{
    const size_t n = block_volume(g->L);
#pragma omp parallel for schedule(static)
    for (size_t s = 0; s < n; s++)
        memcpy(u_block + 72 * s, stored + 72 * stored_of(g, s), 72 * sizeof *stored);
}

/* The compound sweep (heatbath != 0) or overrelaxation alone on the block:
 * copied into a stored field with border layers, swept, copied back (only
 * when every rank succeeded: else u_block is as it was). *failed = the
 * samplers that gave up on every rank. */
static wd_status sweep_block(double *u_block, const wd_lattice *lat, int heatbath, int n_or,
                             double beta, uint64_t seed, uint64_t sweep, const char *fn,
                             long *failed, wd_status st)
{
    wd_grid g;
    memset(&g, 0, sizeof g);
    if (st == WD_OK)
        st = wd_gauge_grid_of(&g, lat, fn);
    if (st == WD_OK && !u_block)
        st = wd_fail(WD_ERR_INVALID, "%s: null field", fn);
    wd_hb_geom geom = wd_hb_geom_make(g.local, g.partitioned, g.origin, g.dims);
    double *ext = NULL;
    wd_hb_halo ctx = {&g, &geom, {NULL, NULL, NULL, NULL}};
    if (st == WD_OK) {
        ext = malloc(72 * geom.volume * sizeof *ext);
        if (!ext || wd_hb_halo_open(&ctx, &g, &geom) != WD_OK)
            st = wd_fail(WD_ERR_NOMEM, "%s: no memory for the block with its border layers "
                         "(%zu sites)", fn, geom.volume);
    }
    st = wd_comm_agree(st);

    const int any = geom.part[0] || geom.part[1] || geom.part[2] || geom.part[3];
    long mine = 0;
    if (st == WD_OK) {
        wd_hb_block_store(ext, u_block, &geom);
        if (any)
            st = wd_hb_exchange(&ctx, ext, -1);
    }
    if (st == WD_OK)
        st = wd_hb_sweeps(ext, &geom, heatbath, n_or, beta, seed, sweep,
                          any ? wd_hb_exchange : NULL, &ctx, &mine);
    double total = (double)mine;
    if (st == WD_OK)
        st = wd_comm_sum(&total, 1);
    if ((st = wd_comm_agree(st)) == WD_OK) {
        wd_hb_block_load(u_block, ext, &geom);
        *failed = (long)total;
    }
    free(ext);
    wd_hb_halo_close(&ctx);
    return st;
}

wd_status wd_gauge_heatbath_sweep_block(double *u_block, const wd_lattice *lat, double beta,
                                        uint64_t seed, uint64_t sweep_index, int n_or)
{
    static const char fn[] = "wd_gauge_heatbath_sweep_block";
    wd_status st = WD_OK;
    if (!(beta > 0) || !isfinite(beta))
        st = wd_fail(WD_ERR_INVALID, "%s: beta = %g, must be finite and > 0", fn, beta);
    else if (n_or < 0)
        st = wd_fail(WD_ERR_INVALID, "%s: n_or = %d overrelaxation sweeps, must be >= 0", fn,
                     n_or);
    else if (sweep_index >> 63)
        st = wd_fail(WD_ERR_INVALID, "%s: sweep index %llu >= 2^63", fn,
                     (unsigned long long)sweep_index);
    long failed = 0;
    st = sweep_block(u_block, lat, 1, n_or, beta, seed, sweep_index, fn, &failed, st);
    if (st == WD_OK && failed)
        return wd_fail(WD_ERR_INTERNAL, "%s: the SU(2) sampler gave up %ld times in sweep %llu "
                       "(%d attempts each); those subgroup updates were skipped", fn, failed,
                       (unsigned long long)sweep_index, WD_HB_MAX_ATTEMPTS);
    return st;
}

wd_status wd_gauge_overrelax_sweep_block(double *u_block, const wd_lattice *lat, int n_or)
{
    static const char fn[] = "wd_gauge_overrelax_sweep_block";
    wd_status st = WD_OK;
    if (n_or < 1)
        st = wd_fail(WD_ERR_INVALID, "%s: n_or = %d, must be >= 1", fn, n_or);
    long failed = 0;
    return sweep_block(u_block, lat, 0, n_or, 0.0, 0, 0, fn, &failed, st);
}

/* ---- the observables ---------------------------------------------------- */

typedef struct obs_geom {
    int L[4], part[4];
    size_t stride[4];        /* of the block */
    size_t fstride[4][4];    /* [mu][nu]: of a mu-face, sites x fastest over nu != mu */
    const double *ghost[4];  /* the forward neighbour's first mu-layer, 4 links a site */
} obs_geom;

static const double *block_link(const double *u, size_t site, int mu)
{
    return u + 18 * (4 * site + (size_t)mu);
}

/* U_nu(x + mu): across a partitioned face from the forward ghost, else
 * periodic within the block (whose extent is then the global one) */
static const double *fwd_link(const obs_geom *o, const double *u, size_t site, const int x[4],
                              int mu, int nu)
{
    if (x[mu] + 1 < o->L[mu])
        return block_link(u, site + o->stride[mu], nu);
    if (!o->part[mu])
        return block_link(u, site - (size_t)(o->L[mu] - 1) * o->stride[mu], nu);
    size_t f = 0;
    for (int k = 0; k < 4; k++)
        if (k != mu)
            f += (size_t)x[k] * o->fstride[mu][k];
    return o->ghost[mu] + 18 * (4 * f + (size_t)nu);
}

/* Row sums of wd_gauge_observables continued over this block's part of
 * each x-row: run[3 r + {0, 1, 2}] = plaquette space, time, link trace. */
static void row_sums(const double *u, const obs_geom *o, double *run)
{
    const long nrows = (long)o->L[1] * o->L[2] * o->L[3];
#pragma omp parallel for schedule(static)
    for (long row = 0; row < nrows; row++) {
        int x[4];
        x[1] = (int)(row % o->L[1]);
        x[2] = (int)((row / o->L[1]) % o->L[2]);
        x[3] = (int)(row / ((long)o->L[1] * o->L[2]));
        double s_space = run[3 * row], s_time = run[3 * row + 1], s_link = run[3 * row + 2];
        for (x[0] = 0; x[0] < o->L[0]; x[0]++) {
            const size_t site = (size_t)row * (size_t)o->L[0] + (size_t)x[0];
            for (int mu = 0; mu < 4; mu++) {
                const double *m = block_link(u, site, mu);
                s_link += m[0] + m[8] + m[16];
                for (int nu = mu + 1; nu < 4; nu++) {
                    /* Re tr(U_mu(x) U_nu(x+mu) [U_nu(x) U_mu(x+nu)]^dag) */
                    double a[18], b[18];
                    wd_m3_mul_nn(a, m, fwd_link(o, u, site, x, mu, nu));
                    wd_m3_mul_nn(b, block_link(u, site, nu), fwd_link(o, u, site, x, nu, mu));
                    const double p = wd_m3_retr_nd(a, b);
                    if (nu == 3)
                        s_time += p;
                    else
                        s_space += p;
                }
            }
        }
        run[3 * row] = s_space;
        run[3 * row + 1] = s_time;
        run[3 * row + 2] = s_link;
    }
}

/* The Polyakov lines' running products continued over this block's time
 * slices; first: the block holds t = 0, the product starts at its link. */
static void line_products(const double *u, const obs_geom *o, double *p, int first)
{
    const long nlines = (long)o->L[0] * o->L[1] * o->L[2];
#pragma omp parallel for schedule(static)
    for (long s = 0; s < nlines; s++) {
        double *ps = p + 18 * s, q[18];
        if (first)
            for (int k = 0; k < 18; k++)
                ps[k] = block_link(u, (size_t)s, 3)[k];
        for (int t = first; t < o->L[3]; t++) {
            wd_m3_mul_nn(q, ps, block_link(u, (size_t)s + (size_t)t * o->stride[3], 3));
            for (int k = 0; k < 18; k++)
                ps[k] = q[k];
        }
    }
}

/* doubles of one time slice of row sums (3 a row of ny nz rows) or one z
 * slice of line traces (2 a line of nx ny lines), whichever is larger */
static size_t slice_size(int ny, int nz, int nx, int ny2)
{
    const size_t rows = 3 * (size_t)ny * (size_t)nz, lines = 2 * (size_t)nx * (size_t)ny2;
    return rows > lines ? rows : lines;
}

/* keep the message pattern after a failure: remember the first */
static void keep(wd_status *st, wd_status s)
{
    if (*st == WD_OK)
        *st = s;
}

wd_status wd_gauge_observables_block(const double *u_block, const wd_lattice *lat,
                                     wd_gauge_obs *obs)
{
    static const char fn[] = "wd_gauge_observables_block";
    wd_grid g;
    memset(&g, 0, sizeof g);
    wd_status st = wd_gauge_grid_of(&g, lat, fn);
    if (st == WD_OK && (!u_block || !obs))
        st = wd_fail(WD_ERR_INVALID, "%s: null field or result", fn);

    obs_geom o;
    memset(&o, 0, sizeof o);
    const int *L = g.local, *P = g.procs, *c = g.coord, *D = g.dims;
    size_t s = 1;
    for (int mu = 0; mu < 4; mu++) {
        o.L[mu] = L[mu];
        o.part[mu] = g.partitioned[mu];
        o.stride[mu] = s;
        s *= (size_t)L[mu];
        size_t f = 1;
        for (int nu = 0; nu < 4; nu++)
            if (nu != mu) {
                o.fstride[mu][nu] = f;
                f *= (size_t)L[nu];
            }
    }
    const size_t nsites = block_volume(L);
    const size_t nrows = nsites / (size_t)(L[0] ? L[0] : 1);
    const size_t nlines = nsites / (size_t)(L[3] ? L[3] : 1);
    double *face[4][3] = {{NULL}};
    double *run = NULL, *line = NULL, *slice = NULL, *chunk = NULL;
    const int root = g.rank == 0;
    if (st == WD_OK) {
        int ok = 1;
        for (int mu = 0; mu < 4; mu++)
            for (int k = 0; k < 3 && g.partitioned[mu]; k++)
                ok &= (face[mu][k] = malloc(72 * (nsites / (size_t)L[mu]) * sizeof(double))) !=
                      NULL;
        run = calloc(3 * nrows, sizeof *run);
        line = malloc(18 * nlines * sizeof *line);
        /* rank 0: one time slice of rows or one z slice of lines, and one
         * rank's part of it */
        const size_t nc = slice_size(L[1], L[2], L[0], L[1]);
        if (root) {
            slice = malloc(slice_size(D[1], D[2], D[0], D[1]) * sizeof *slice);
            chunk = malloc(nc * sizeof *chunk);
        }
        if (!ok || !run || !line || (root && (!slice || !chunk)))
            st = wd_fail(WD_ERR_NOMEM, "%s: no memory for the border faces and partial sums "
                         "of %zu sites", fn, nsites);
    }
    if ((st = wd_comm_agree(st)) != WD_OK)
        goto done;

    /* the forward neighbours' first layers: sent backward (and, unused,
     * forward: a halo exchange moves both faces) */
    for (int mu = 0; mu < 4; mu++) {
        if (!g.partitioned[mu])
            continue;
        const size_t n = nsites / (size_t)L[mu];
#pragma omp parallel for schedule(static)
        for (size_t f = 0; f < n; f++) {
            size_t r = f, site = 0;
            for (int nu = 0; nu < 4; nu++)
                if (nu != mu) {
                    site += (r % (size_t)L[nu]) * o.stride[nu];
                    r /= (size_t)L[nu];
                }
            memcpy(face[mu][0] + 72 * f, u_block + 72 * site, 72 * sizeof(double));
        }
        const void *send[2] = {face[mu][0], face[mu][0]};
        void *recv[2] = {face[mu][1], face[mu][2]};
        wd_comm_halo h;
        wd_status hs = wd_comm_halo_start(&h, &g, mu, send, recv, 72 * n * sizeof(double));
        if (hs == WD_OK)
            hs = wd_comm_halo_wait(&h);
        keep(&st, hs);
        o.ghost[mu] = face[mu][1];
    }
    if ((st = wd_comm_agree(st)) != WD_OK)
        goto done;

    /* rows: px - 1 -> px; lines: pt - 1 -> pt */
    if (c[0] > 0)
        keep(&st, wd_comm_recv(run, 3 * nrows * sizeof *run, g.nbr[0][WD_BWD], TAG_ROWS));
    row_sums(u_block, &o, run);
    if (c[0] < P[0] - 1)
        keep(&st, wd_comm_send(run, 3 * nrows * sizeof *run, g.nbr[0][WD_FWD], TAG_ROWS));
    if (c[3] > 0)
        keep(&st, wd_comm_recv(line, 18 * nlines * sizeof *line, g.nbr[3][WD_BWD], TAG_LINES));
    line_products(u_block, &o, line, c[3] == 0);
    if (c[3] < P[3] - 1)
        keep(&st, wd_comm_send(line, 18 * nlines * sizeof *line, g.nbr[3][WD_FWD], TAG_LINES));
    else
        for (size_t l = 0; l < nlines; l++) {
            const double *p = line + 18 * l;
            /* the traces, packed in place: (re, im) of line l */
            const double re = p[0] + p[8] + p[16], im = p[1] + p[9] + p[17];
            line[2 * l] = re;
            line[2 * l + 1] = im;
        }

    /* rank 0 adds the finished rows one time slice at a time, then the
     * finished lines one z slice at a time, in wd_gauge_observables' order */
    const size_t slice_rows = (size_t)L[1] * L[2], slice_lines = (size_t)L[0] * L[1];
    if (c[0] == P[0] - 1 && !root)
        for (int t = 0; t < L[3]; t++)
            keep(&st, wd_comm_send(run + 3 * slice_rows * (size_t)t,
                                   3 * slice_rows * sizeof *run, 0, TAG_ROW_SUMS));
    if (c[3] == P[3] - 1 && !root)
        for (int z = 0; z < L[2]; z++)
            keep(&st, wd_comm_send(line + 2 * slice_lines * (size_t)z,
                                   2 * slice_lines * sizeof *line, 0, TAG_LINE_SUMS));
    wd_gauge_obs result;
    memset(&result, 0, sizeof result);
    if (root) {
        double s_space = 0, s_time = 0, s_link = 0, s_re = 0, s_im = 0;
        for (int t = 0; t < D[3]; t++) {
            int q[4] = {P[0] - 1, 0, 0, t / L[3]};
            for (q[2] = 0; q[2] < P[2]; q[2]++)
                for (q[1] = 0; q[1] < P[1]; q[1]++) {
                    const int from = wd_grid_rank_at(P, q);
                    const double *src = run + 3 * slice_rows * (size_t)(t % L[3]);
                    if (from) {
                        keep(&st, wd_comm_recv(chunk, 3 * slice_rows * sizeof *chunk, from,
                                               TAG_ROW_SUMS));
                        src = chunk;
                    }
                    for (int z = 0; z < L[2]; z++)
                        for (int y = 0; y < L[1]; y++)
                            memcpy(slice + 3 * ((size_t)(q[1] * L[1] + y) +
                                                (size_t)D[1] * (size_t)(q[2] * L[2] + z)),
                                   src + 3 * ((size_t)y + (size_t)L[1] * z), 3 * sizeof *src);
                }
            for (size_t r = 0; r < (size_t)D[1] * D[2]; r++) {
                s_space += slice[3 * r];
                s_time += slice[3 * r + 1];
                s_link += slice[3 * r + 2];
            }
        }
        for (int z = 0; z < D[2]; z++) {
            int q[4] = {0, 0, z / L[2], P[3] - 1};
            for (q[1] = 0; q[1] < P[1]; q[1]++)
                for (q[0] = 0; q[0] < P[0]; q[0]++) {
                    const int from = wd_grid_rank_at(P, q);
                    const double *src = line + 2 * slice_lines * (size_t)(z % L[2]);
                    if (from) {
                        keep(&st, wd_comm_recv(chunk, 2 * slice_lines * sizeof *chunk, from,
                                               TAG_LINE_SUMS));
                        src = chunk;
                    }
                    for (int y = 0; y < L[1]; y++)
                        for (int x = 0; x < L[0]; x++)
                            memcpy(slice + 2 * ((size_t)(q[0] * L[0] + x) +
                                                (size_t)D[0] * (size_t)(q[1] * L[1] + y)),
                                   src + 2 * ((size_t)x + (size_t)L[0] * y), 2 * sizeof *src);
                }
            for (size_t l = 0; l < (size_t)D[0] * D[1]; l++) {
                s_re += slice[2 * l];
                s_im += slice[2 * l + 1];
            }
        }
        const double v = (double)wd_volume(D);
        const double nl = (double)(wd_volume(D) / (size_t)D[3]);
        result.plaquette_space = s_space / (9.0 * v);
        result.plaquette_time = s_time / (9.0 * v);
        result.plaquette = (s_space + s_time) / (18.0 * v);
        result.link_trace = s_link / (12.0 * v);
        result.poly_re = s_re / (3.0 * nl);
        result.poly_im = s_im / (3.0 * nl);
    }
    if ((st = wd_comm_agree(st)) == WD_OK && (st = wd_comm_bcast(&result, sizeof result, 0)) ==
        WD_OK)
        *obs = result;

done:
    for (int mu = 0; mu < 4; mu++)
        for (int k = 0; k < 3; k++)
            free(face[mu][k]);
    free(run);
    free(line);
    free(slice);
    free(chunk);
    return st;
}
