/*
 * clover_field.h: the clover matrix of DESIGN.md ("Clover") in float64 on
 * the host, per site, on a rank's block of a process grid, and its
 * inverse: what the clover kernels are given.
 *
 *   A(n) = 1 + coef T(n),   T(n) = (i/4) sum_{mu != nu} sigma_{mu nu} Fhat_{mu nu}(n)
 *
 * with coef = c_sw / (4 + m) (the kappa normalisation: M_sw / (4+m) =
 * A - kappa D).  In the DeGrand-Rossi basis g5 = diag(1, 1, -1, -1) and A
 * is block diagonal: block 0 acts on spins 0, 1 and block 1 on spins 2, 3;
 * within a block the index is i = 3 (spin - 2 block) + colour, 0..5.
 *
 * The externally accessible functions are
 *   wd_clover_field       A(n) for every site of this rank's block, from
 *                         the block's links (the border links of the
 *                         neighbouring ranks exchanged); collective on a
 *                         grid of several ranks
 *   wd_clover_invert      A(n)^-1 per block by Cholesky; refuses (nothing
 *                         written) a block that is not positive definite
 *                         or not finite, naming the first such site in
 *                         global order and its chirality block; collective
 *                         on a grid of several ranks
 *   wd_clover_apply_host  out(n) = A(n) in(n) on host spinors
 *
 * Block format (a contract the kernels and the solver's host check read):
 * double blocks[site][2][WD_CLOVER_BLOCK_REALS], sites in the host order of
 * the rank's block (x fastest over the local extents).  Block b holds
 * first the six real diagonal entries A[i][i], then the fifteen strictly
 * lower entries A[i][j], i > j, row by row (i = 1: j = 0; i = 2: j = 0, 1;
 * ...; i = 5: j = 0..4), each as (re, im); A[j][i] = conj A[i][j].
 * wd_clover_lower() gives the offset of A[i][j], i > j.
 *
 * Notes: a grid of one rank (procs 1 1 1 1, nothing partitioned) makes no
 * communication at all, so any process may use one alone, on the whole
 * lattice, periodic in every direction.  The time boundary sign of the
 * fermions does not enter (each leaf crossing the boundary holds two time
 * links across it).  Nothing aliases except in and out of
 * wd_clover_apply_host and inv and blocks of wd_clover_invert, which may
 * be the same field.  Loops over sites run under OpenMP.
 */
#ifndef WDIRAC_CLOVER_FIELD_H
#define WDIRAC_CLOVER_FIELD_H

#include <stddef.h>

#include "wd_comm.h"
#include "wd_physics.h"     /* WD_CLOVER_BLOCK_REALS, WD_CLOVER_SITE_REALS: the generator's */
#include "wdirac.h"

/* the offset in a block of re A[i][j], i > j (im follows) */
static inline int wd_clover_lower(int i, int j)
{
    return 6 + 2 * (i * (i - 1) / 2 + j);
}

/* blocks: WD_CLOVER_SITE_REALS doubles for each site of grid->local;
 * gauge: the block's links, host order [t][z][y][x][mu][3][3] complex
 * double.  coef finite; c_sw = 0 gives A = 1.  WD_ERR_INVALID for a null
 * argument, a non-finite coef or link (naming the global site and mu), a
 * partitioned grid not of this process; WD_ERR_NOMEM; blocks is written
 * only on success. */
wd_status wd_clover_field(double *blocks, const double *gauge, const wd_grid *grid, double coef);

/* inv = A^-1 per block, same format, from the Cholesky factor of each
 * block (double throughout).  grid: sites must be grid->local's volume
 * (the message names global coordinates), or NULL: any `sites` blocks of
 * this process (the message names the site index), no communication.
 * WD_ERR_INVALID, inv untouched, when a block is not positive definite (a
 * pivot <= 0), holds a NaN or infinity, or has an inverse that overflows:
 * the message names the first such block in global site order, and every
 * rank of the grid returns the same status and message. */
wd_status wd_clover_invert(double *inv, const double *blocks, size_t sites, const wd_grid *grid);

/* out(n) = A(n) in(n) for `sites` sites: spinors [site][4][3] complex
 * double in the DeGrand-Rossi basis; blocks as above (or the inverse). */
void wd_clover_apply_host(double *out, const double *blocks, const double *in, size_t sites);

#endif
