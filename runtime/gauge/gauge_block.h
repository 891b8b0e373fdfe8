/*
 * gauge_block.h: the gauge module on a process grid: what gauge_block.c
 * (the public *_block functions of wdirac_gauge.h) and heatbath.c share,
 * and the lattice check the io module's block I/O uses too.
 *
 * The externally accessible functions are
 *   wd_gauge_grid_of     the comm module's grid of a public wd_lattice, after
 *                        checking that it was made for this process and
 *                        this number of ranks (pure: no communication)
 *   wd_grid_rank_at, wd_grid_global_site   a rank from grid coordinates,
 *                        a block site's global index
 *   wd_hb_geom_make      the geometry of a stored field: a block with one
 *                        layer of border links on each side of every
 *                        partitioned dimension, or (no dimension
 *                        partitioned) the whole lattice, periodic
 *   wd_hb_init           cold or hot start of the block's own sites
 *   wd_hb_sweeps         heatbath and / or overrelaxation by (mu, parity)
 *                        checkerboard, calling `exchange` after each
 *                        checkerboard so that the border links of the
 *                        stored field follow, then the block's own links
 *                        reunitarized
 * Notes: a stored field holds 4 links of 18 doubles a site, sites in the
 * order x fastest over the stored extents E = L + 2 part.  A site's random
 * numbers are keyed by its global lexicographic index (heatbath_link.h),
 * so every grid draws the same numbers for the same link.
 */
#ifndef WDIRAC_GAUGE_BLOCK_H
#define WDIRAC_GAUGE_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "wd_comm.h"
#include "wdirac_gauge.h"

wd_status wd_gauge_grid_of(wd_grid *g, const wd_lattice *lat, const char *fn);

/* the rank at grid coordinates c (x fastest, DESIGN.md) */
static inline int wd_grid_rank_at(const int procs[4], const int c[4])
{
    return c[0] + procs[0] * (c[1] + procs[1] * (c[2] + procs[2] * c[3]));
}

/* the global lexicographic index of the block's n-th site */
static inline size_t wd_grid_global_site(const wd_grid *g, size_t n)
{
    size_t s = 0, stride = 1;
    for (int mu = 0; mu < 4; mu++) {
        s += ((n % (size_t)g->local[mu]) + (size_t)g->origin[mu]) * stride;
        n /= (size_t)g->local[mu];
        stride *= (size_t)g->dims[mu];
    }
    return s;
}

typedef struct wd_hb_geom {
    int L[4];           /* the block's extents */
    int part[4];        /* 1: a border layer on each side in mu; 0: periodic in the block */
    int E[4];           /* stored extents, L + 2 part */
    size_t stride[4];   /* of the stored field, in sites */
    size_t volume;      /* stored sites */
    int origin[4];      /* global coordinates of the block's first site */
    size_t gstride[4];  /* of the global lattice, for the random-number key */
} wd_hb_geom;

/* local, part, origin and dims (global) as in wd_grid; part NULL: none */
wd_hb_geom wd_hb_geom_make(const int local[4], const int part[4], const int origin[4],
                           const int dims[4]);

/* the stored index of the block's site with local coordinates x */
static inline size_t wd_hb_stored(const wd_hb_geom *g, const int x[4])
{
    size_t s = 0;
    for (int mu = 0; mu < 4; mu++)
        s += (size_t)(x[mu] + g->part[mu]) * g->stride[mu];
    return s;
}

void wd_hb_init(double *u, const wd_hb_geom *g, wd_gauge_start start, uint64_t seed);

/* Exchange the border links U_mu (mu = 0..3) or every direction (mu = -1)
 * of the stored field u; collective over the grid. */
typedef wd_status (*wd_hb_exchange_fn)(void *ctx, double *u, int mu);

/* The exchange of a stored field on a grid: face buffers for its largest
 * partitioned layer.  Dimension by dimension, each face including the
 * border layers already filled, so the edge sites x +- mu +- nu of the
 * stored field arrive too. */
typedef struct wd_hb_halo {
    const wd_grid *grid;
    const wd_hb_geom *geom;
    double *buf[4]; /* send forward, send backward, from forward, from backward */
} wd_hb_halo;

/* WD_ERR_NOMEM (nothing left allocated) when the buffers do not fit */
wd_status wd_hb_halo_open(wd_hb_halo *h, const wd_grid *grid, const wd_hb_geom *geom);
void wd_hb_halo_close(wd_hb_halo *h);
/* wd_hb_exchange_fn, ctx a wd_hb_halo: agreed over the ranks */
wd_status wd_hb_exchange(void *ctx, double *u, int mu);

/* the block's 72 doubles a site (host order, extents g->L) into the
 * stored field's own sites, and back */
void wd_hb_block_store(double *stored, const double *u_block, const wd_hb_geom *g);
void wd_hb_block_load(double *u_block, const double *stored, const wd_hb_geom *g);

/* Heatbath first when heatbath != 0, then n_or overrelaxation passes;
 * *failed = the SU(2) samplers of this block that gave up.  exchange is
 * NULL when no dimension is partitioned; its failure stops the sweep. */
wd_status wd_hb_sweeps(double *u, const wd_hb_geom *g, int heatbath, int n_or, double beta,
                       uint64_t seed, uint64_t sweep, wd_hb_exchange_fn exchange, void *ctx,
                       long *failed);

#endif
