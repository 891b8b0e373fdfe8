/*
 * test_grid.h: host fields between a rank's block and the whole lattice,
 * for the tests that run on a process grid.
 *
 *   test_copy_block   copy a field of `reals` doubles a site between this
 *                     rank's block (local extents, host order) and the
 *                     global lattice (to_global: block -> global)
 *   test_gather       rank 0: the whole field of 24 doubles a site from
 *                     every rank's block (point to point, tag 7); other
 *                     ranks send theirs
 * Failures of a message print the status and leave the field as it is
 * (the test's comparison then fails).
 */
#ifndef WDIRAC_TEST_GRID_H
#define WDIRAC_TEST_GRID_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wd_comm.h"
#include "wdirac.h"

static inline void test_copy_block(double *local, double *global, const wd_lattice *lat,
                                   int reals, int to_global)
{
    const int *L = lat->local, *D = lat->dims, *o = lat->origin;
    for (int t = 0; t < L[3]; t++)
        for (int z = 0; z < L[2]; z++)
            for (int y = 0; y < L[1]; y++)
                for (int x = 0; x < L[0]; x++) {
                    const size_t ls = x + (size_t)L[0] * (y + (size_t)L[1] * (z + (size_t)L[2] * t));
                    const size_t gs = (x + o[0]) + (size_t)D[0] * ((y + o[1]) + (size_t)D[1] *
                                      ((z + o[2]) + (size_t)D[2] * (t + o[3])));
                    if (to_global)
                        memcpy(global + reals * gs, local + reals * ls, reals * sizeof(double));
                    else
                        memcpy(local + reals * ls, global + reals * gs, reals * sizeof(double));
                }
}

static inline void test_gather(double *global, const double *block, const wd_lattice *lat)
{
    const int rank = wd_rank(), nranks = wd_ranks();
    const size_t n = wd_volume(lat->local) * 24;
    if (rank != 0) {
        if (wd_comm_send(block, n * sizeof *block, 0, 7) != WD_OK)
            fprintf(stderr, "rank %d: %s\n", rank, wd_last_error());
        return;
    }
    double *buf = malloc(n * sizeof *buf);
    if (!buf) {
        fprintf(stderr, "rank 0: out of memory\n");
        exit(1);
    }
    for (int r = 0; r < nranks; r++) {
        wd_grid g;
        wd_grid_make(&g, lat->dims, lat->procs, nranks, r, 4);
        wd_lattice lr = *lat;
        memcpy(lr.local, g.local, sizeof lr.local);
        memcpy(lr.origin, g.origin, sizeof lr.origin);
        if (r == 0)
            memcpy(buf, block, n * sizeof *buf);
        else if (wd_comm_recv(buf, n * sizeof *buf, r, 7) != WD_OK)
            fprintf(stderr, "rank 0: %s\n", wd_last_error());
        test_copy_block(buf, global, &lr, 24, 1);
    }
    free(buf);
}

#endif
