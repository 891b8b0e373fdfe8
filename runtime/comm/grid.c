/*
 * grid.c: the process grid of DESIGN.md ("Many processes"): which grid
 * splits a lattice over a number of ranks, and the geometry of one rank on
 * it.  Pure arithmetic: no MPI call, so it is the same with and without MPI
 * and any rank can work out any other rank's block.
 *
 * The externally accessible functions are
 *   wd_grid_auto   the default grid: each prime factor of the number of
 *                  ranks, smallest first, goes to the first of T, Z, Y, X
 *                  whose local extent stays even and >= min_local
 *   wd_grid_make   check a grid against a lattice and a number of ranks
 *                  and fill one rank's geometry: local block, origin, grid
 *                  coordinates, periodic neighbours (rank order x fastest)
 *   wd_lattice_make  (wdirac.h) the public view of wd_grid_make for this
 *                  process
 *
 * Notes: both leave their output untouched on failure, and their messages
 * name the dimension (or, for wd_grid_auto, the lattice, the number of
 * ranks and the factor that fits nowhere).  T is split first because a
 * time slice is the unit the I/O streams and the temporal gauge works on.
 */
#include <string.h>

#include "wd_comm.h"
#include "wd_core.h"

/* extents are named X..T, grid sizes Px..Pt */
static const char axis[] = "XYZT", lower[] = "xyzt";

wd_status wd_grid_auto(int procs[4], const int dims[4], int nranks, int min_local)
{
    wd_status st = wd_check_dims(dims);
    if (st != WD_OK)
        return st;
    const int floor = min_local > 2 ? min_local : 2;
    if (nranks < 1)
        return wd_fail(WD_ERR_INVALID,
                       "lattice %dx%dx%dx%d on %d ranks: a run has at least one rank", dims[0],
                       dims[1], dims[2], dims[3], nranks);
    int p[4] = {1, 1, 1, 1}, left = nranks;
    for (int f = 2; left > 1; ++f) {
        while (left % f == 0) {
            int mu = 3;
            for (; mu >= 0; --mu) {
                const int l = dims[mu] / p[mu];
                if (l % f == 0 && (l / f) % 2 == 0 && l / f >= floor)
                    break;
            }
            if (mu < 0)
                return wd_fail(WD_ERR_INVALID,
                               "lattice %dx%dx%dx%d on %d ranks: no dimension takes the factor %d "
                               "(local extents %d %d %d %d after grid %d %d %d %d; each must stay "
                               "even and >= %d)",
                               dims[0], dims[1], dims[2], dims[3], nranks, f, dims[0] / p[0],
                               dims[1] / p[1], dims[2] / p[2], dims[3] / p[3], p[0], p[1], p[2],
                               p[3], floor);
            p[mu] *= f;
            left /= f;
        }
    }
    memcpy(procs, p, sizeof p);
    return WD_OK;
}

/* The rank at grid coordinates c (x fastest). */
static int rank_at(const int procs[4], const int c[4])
{
    return c[0] + procs[0] * (c[1] + procs[1] * (c[2] + procs[2] * c[3]));
}

wd_status wd_grid_make(wd_grid *g, const int dims[4], const int procs[4], int nranks, int rank,
                       int min_local)
{
    wd_status st = wd_check_dims(dims);
    if (st != WD_OK)
        return st;
    if (nranks < 1 || rank < 0 || rank >= nranks)
        return wd_fail(WD_ERR_INVALID,
                       "rank %d of %d: a run has at least one rank, numbered from 0", rank, nranks);
    int p[4] = {0, 0, 0, 0};
    if (procs)
        memcpy(p, procs, sizeof p);
    const int automatic = !p[0] && !p[1] && !p[2] && !p[3];
    if (automatic && (st = wd_grid_auto(p, dims, nranks, min_local)) != WD_OK)
        return st;

    long long total = 1;
    for (int mu = 0; mu < 4; ++mu) {
        const char a = axis[mu], b = lower[mu];
        if (p[mu] < 1)
            return wd_fail(WD_ERR_INVALID, "grid %d %d %d %d: P%c = %d must be >= 1", p[0], p[1],
                           p[2], p[3], b, p[mu]);
        if (dims[mu] % p[mu])
            return wd_fail(WD_ERR_INVALID, "grid %d %d %d %d: P%c = %d does not divide %c = %d",
                           p[0], p[1], p[2], p[3], b, p[mu], a, dims[mu]);
        const int l = dims[mu] / p[mu];
        if (l % 2)
            return wd_fail(WD_ERR_INVALID,
                           "grid %d %d %d %d: local extent %c = %d (%c = %d over P%c = %d) is odd",
                           p[0], p[1], p[2], p[3], a, l, a, dims[mu], b, p[mu]);
        if (l < min_local)
            return wd_fail(WD_ERR_INVALID,
                           "grid %d %d %d %d: local extent %c = %d (%c = %d over P%c = %d) is "
                           "below the minimum %d",
                           p[0], p[1], p[2], p[3], a, l, a, dims[mu], b, p[mu], min_local);
        total *= p[mu];
    }
    if (total != nranks)
        return wd_fail(WD_ERR_INVALID, "grid %d %d %d %d has %lld ranks but the run has %d", p[0],
                       p[1], p[2], p[3], total, nranks);

    wd_grid w;
    memset(&w, 0, sizeof w);
    w.rank = rank;
    w.size = nranks;
    for (int mu = 0, r = rank; mu < 4; ++mu) {
        w.dims[mu] = dims[mu];
        w.procs[mu] = p[mu];
        w.local[mu] = dims[mu] / p[mu];
        w.coord[mu] = r % p[mu];
        r /= p[mu];
        w.origin[mu] = w.coord[mu] * w.local[mu];
        w.partitioned[mu] = p[mu] > 1;
    }
    for (int mu = 0; mu < 4; ++mu) {
        int c[4];
        memcpy(c, w.coord, sizeof c);
        c[mu] = (w.coord[mu] + 1) % p[mu];
        w.nbr[mu][WD_FWD] = rank_at(p, c);
        c[mu] = (w.coord[mu] + p[mu] - 1) % p[mu];
        w.nbr[mu][WD_BWD] = rank_at(p, c);
    }
    *g = w;
    return WD_OK;
}

wd_status wd_lattice_make(wd_lattice *lat, const int dims[4], const int procs[4])
{
    if (!lat || !dims)
        return wd_fail(WD_ERR_INVALID, "wd_lattice_make: lat and dims must not be NULL");
    wd_grid g;
    const wd_status st = wd_grid_make(&g, dims, procs, wd_comm_size(), wd_comm_rank(), 4);
    if (st != WD_OK)
        return st;
    memcpy(lat->dims, g.dims, sizeof lat->dims);
    memcpy(lat->procs, g.procs, sizeof lat->procs);
    memcpy(lat->local, g.local, sizeof lat->local);
    memcpy(lat->origin, g.origin, sizeof lat->origin);
    lat->rank = g.rank;
    lat->size = g.size;
    return WD_OK;
}
