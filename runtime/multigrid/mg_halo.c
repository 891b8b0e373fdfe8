/*
 * mg_halo.c: a multigrid level's faces on a process grid (wd_mg.h): the
 * neighbour table of a level's block with ghost sites where a hop leaves
 * the block, and the exchange that fills the ghost sites from the
 * neighbouring ranks through the comm module.
 *
 * The externally accessible functions are
 *   wd_mg_halo_init / _free   the faces and ghost sites of a level's block
 *   wd_mg_halo_neighbours     nbr[8 s + d] with ghost sites across the
 *                             partitioned faces, periodic elsewhere
 *   wd_mg_halo_swap           the faces gathered in send (ghost order) to
 *                             the neighbours, theirs into recv
 *   wd_mg_halo_exchange       a host field's ghost sites (gather + swap)
 *   wd_mg_halo_exchange_dev   a backend field's (wd_mg_dev.h): gathered
 *                             there, swapped through the host, put back
 * Notes: a partitioned dimension mu has two ghost faces after the block's
 * sites, in the order mu = 0..3, forward then backward: ghost (mu, FWD)
 * holds the sites x + mu of the block's last slice in mu, ghost (mu, BWD)
 * the sites x - mu of its first, each face's sites in lexicographic order
 * of the other three coordinates.  A rank sends its first slice backward
 * (the backward neighbour's forward ghost) and its last forward, in the
 * same order, so that the send list in ghost order is "the last slice of
 * mu, then its first" for each partitioned mu, and a received buffer is
 * the ghost region as it lies.  A dimension the grid marks partitioned
 * with one rank in it (a test's wrap) sends to this rank itself.
 */
#include <stdlib.h>
#include <string.h>

#include "wd_comm.h"
#include "wd_core.h"
#include "wd_mg.h"
#include "wd_mg_dev.h"

/* site index of coordinates c on extents d */
static size_t lex(const int c[4], const int d[4])
{
    return (size_t)c[0] + (size_t)d[0] * (c[1] + (size_t)d[1] * (c[2] + (size_t)d[2] * c[3]));
}

/* the index of c on the face of mu: lexicographic in the other three */
static size_t face_index(const int c[4], const int d[4], int mu)
{
    size_t idx = 0, stride = 1;
    for (int nu = 0; nu < 4; ++nu)
        if (nu != mu) {
            idx += stride * c[nu];
            stride *= d[nu];
        }
    return idx;
}

static void coords(size_t s, const int d[4], int c[4])
{
    for (int mu = 0; mu < 4; ++mu) {
        c[mu] = (int)(s % d[mu]);
        s /= d[mu];
    }
}

wd_status wd_mg_halo_init(wd_mg_halo *h, const wd_grid *grid, const int dims[4])
{
    memset(h, 0, sizeof *h);
    memcpy(h->dims, dims, sizeof h->dims);
    h->volume = wd_volume(dims);
    h->grid = grid;
    size_t next = h->volume;
    for (int mu = 0; mu < 4; ++mu) {
        if (!grid || !grid->partitioned[mu])
            continue;
        h->face[mu] = (int)(h->volume / dims[mu]);
        h->ghost[mu][WD_FWD] = next;
        h->ghost[mu][WD_BWD] = next + h->face[mu];
        next += 2 * (size_t)h->face[mu];
    }
    h->nghost = next - h->volume;
    if (!h->nghost)
        return WD_OK;
    if (!(h->send = malloc(h->nghost * sizeof *h->send)))
        return wd_fail(WD_ERR_NOMEM, "multigrid: cannot allocate the face lists of a %zu-site "
                       "block", h->volume);
    for (size_t s = 0; s < h->volume; ++s) {
        int c[4];
        coords(s, dims, c);
        for (int mu = 0; mu < 4; ++mu) {
            if (!h->face[mu])
                continue;
            const size_t f = face_index(c, dims, mu);
            /* the last slice goes forward (the forward neighbour's
             * backward ghost), the first backward; one site may be both */
            if (c[mu] == dims[mu] - 1)
                h->send[h->ghost[mu][WD_FWD] - h->volume + f] = (int)s;
            if (c[mu] == 0)
                h->send[h->ghost[mu][WD_BWD] - h->volume + f] = (int)s;
        }
    }
    return WD_OK;
}

void wd_mg_halo_free(wd_mg_halo *h)
{
    free(h->send);
    free(h->buf);
    memset(h, 0, sizeof *h);
}

int *wd_mg_halo_neighbours(const wd_mg_halo *h)
{
    int *nbr = malloc(h->volume * WD_MG_DIRS * sizeof *nbr);
    if (!nbr)
        return NULL;
    const int *d = h->dims;
    for (size_t s = 0; s < h->volume; ++s) {
        int c[4];
        coords(s, d, c);
        for (int mu = 0; mu < 4; ++mu)
            for (int back = 0; back < 2; ++back) {
                const int edge = back ? c[mu] == 0 : c[mu] == d[mu] - 1;
                size_t to;
                if (edge && h->face[mu]) {
                    to = h->ghost[mu][back ? WD_BWD : WD_FWD] + face_index(c, d, mu);
                } else {
                    int e[4];
                    memcpy(e, c, sizeof e);
                    e[mu] = (c[mu] + (back ? d[mu] - 1 : 1)) % d[mu];
                    to = lex(e, d);
                }
                nbr[WD_MG_DIRS * s + 2 * mu + back] = (int)to;
            }
    }
    return nbr;
}

wd_status wd_mg_halo_swap(const wd_mg_halo *h, const void *send, void *recv, size_t site_bytes)
{
    wd_comm_halo hx[4];
    wd_status st = WD_OK;
    int started = 0;
    for (int mu = 0; mu < 4 && st == WD_OK; ++mu) {
        if (!h->face[mu])
            continue;
        const size_t fwd = (h->ghost[mu][WD_FWD] - h->volume) * site_bytes;
        const size_t bwd = (h->ghost[mu][WD_BWD] - h->volume) * site_bytes;
        const void *s[2] = {(const char *)send + fwd, (const char *)send + bwd};
        void *r[2] = {(char *)recv + fwd, (char *)recv + bwd};
        if ((st = wd_comm_halo_start(&hx[mu], h->grid, mu, s, r,
                                     (size_t)h->face[mu] * site_bytes)) == WD_OK)
            started |= 1 << mu;
    }
    /* every started exchange is waited for, a failure or not */
    for (int mu = 0; mu < 4; ++mu)
        if (started & 1 << mu) {
            const wd_status w = wd_comm_halo_wait(&hx[mu]);
            if (st == WD_OK)
                st = w;
        }
    return st;
}

wd_status wd_mg_halo_exchange(wd_mg_halo *h, void *field, size_t site_bytes)
{
    if (!h->nghost)
        return WD_OK;
    const size_t bytes = h->nghost * site_bytes;
    if (bytes > h->buf_bytes) {
        /* every rank grows its buffer at the same call (the same faces):
         * agreed, so that no rank waits in the swap for one that failed */
        void *b = realloc(h->buf, bytes);
        wd_status st = b ? WD_OK
                         : wd_fail(WD_ERR_NOMEM, "multigrid: cannot allocate %zu bytes of faces",
                                   bytes);
        if (b) {
            h->buf = b;
            h->buf_bytes = bytes;
        }
        if (h->grid->size > 1)
            st = wd_comm_agree(st);
        if (st != WD_OK)
            return st;
    }
    char *send = h->buf;
    const char *in = field;
#pragma omp parallel for schedule(static) if (bytes >= 8 * WD_MG_PARALLEL_MIN)
    for (size_t i = 0; i < h->nghost; ++i)
        memcpy(send + i * site_bytes, in + (size_t)h->send[i] * site_bytes, site_bytes);
    return wd_mg_halo_swap(h, send, (char *)field + h->volume * site_bytes, site_bytes);
}

wd_status wd_mg_halo_exchange_dev(const wd_mg_halo *h, const wd_mg_dev_ops *d, const int *dsend,
                                  float *dface, float *hface, float *field, int floats)
{
    if (!h->nghost)
        return WD_OK;
    const size_t bytes = h->nghost * (size_t)floats * sizeof(float);
    float *hs = hface, *hr = hface + h->nghost * (size_t)floats;
    wd_status st = d->gather((int)h->nghost, floats, dsend, field, dface);
    if (st == WD_OK)
        st = d->d2h(hs, dface, bytes);
    if (st == WD_OK)
        st = wd_mg_halo_swap(h, hs, hr, (size_t)floats * sizeof(float));
    if (st == WD_OK)
        st = d->h2d(field + h->volume * floats, hr, bytes);
    return st;
}
