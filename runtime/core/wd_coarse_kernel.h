/*
 * wd_coarse_kernel.h: what every generated coarse-operator kernel
 * (coarse_*, docs/coarse-kernels.md) reads, for both backends (gcc with
 * OpenMP, nvcc): its argument block and the packed layout it assumes.
 *
 * The externally accessible definitions are
 *   wd_coarse_args   everything one application of a coarse variant reads
 *   wd_coarse_layout the sizes of a level's packed fields (made and filled
 *                    by wd_coarse_layout.h)
 *   WD_COARSE_DIRS, WD_COARSE_BLOCKS   8 hops and the local block a site
 * and, from wd_kernel.h, WD_INLINE, WD_LOAD, float2 and the 16-bit
 * fixed-point helpers.
 *
 * Packed layout (wd_coarse_layout.h packs host fields into it), n = 2 Nvec
 * complex components a coarse site, chirality major, sites in the order of
 * the neighbour table (lexicographic, x fastest, on one process):
 *   spinor: site s holds 2 n reals, the n real parts then the n imaginary
 *           parts: component i of s at s * 2n + i (re), s * 2n + n + i (im);
 *   links:  site s holds 9 blocks (d = 2 mu forward, 2 mu + 1 backward,
 *           8 local), each n x n complex, column by column with the column
 *           split into its real and imaginary planes: element (i, j) of
 *           block d at s * 9 * 2 n^2 + (2 (d n + j) + 0) n + i (re) and
 *           ... + (2 (d n + j) + 1) n + i (im).
 * The output row i is the fastest index everywhere: the CPU loop runs the
 * rows of a site as one vector loop (consecutive i, consecutive addresses,
 * the input component j a broadcast) and a CUDA thread per (site, row)
 * reads a block coalesced.
 * Half precision (16-bit fixed point, float arithmetic): a spinor site's
 * reals scaled by its norm (norm[s] = its largest |real|), a link block's
 * by its own (link_norm[9 s + d] = the block's largest |real|), stored as
 * round(32767 real / norm).
 * Several right-hand sides (the _n<N> variants, N > 1): in, out and x hold
 * N fields of the spinor layout above, right-hand side r starting
 * r rhs_stride reals after the first (its norms r rhs_norm_stride floats
 * after), as the fine multi-RHS Dslash lays them out; the links are read
 * once for all N.  The _n1 variants read neither stride.
 */
#ifndef WDIRAC_COARSE_KERNEL_H
#define WDIRAC_COARSE_KERNEL_H

#include <stddef.h>

#include "wd_kernel.h"

enum { WD_COARSE_DIRS = 8, WD_COARSE_BLOCKS = 9 };

typedef struct wd_coarse_args {
    void *out;              /* output field, every site */
    float *out_norm;        /* half precision: per-site norms of out */
    const void *in;         /* input field */
    const float *in_norm;
    const void *x;          /* xpay: out = x + a D_c in (or a D_c^dag in) */
    const float *x_norm;
    const void *links;      /* 9 blocks a site */
    const float *link_norm; /* half precision: 9 a site, one a block */
    const int *nbr;         /* nbr[8 s + d]: the site that hop d of s reads */
    int volume;             /* output sites */
    double a;               /* xpay coefficient */
    /* _n<N> variants, N > 1: right-hand side r of in, out and x at
     * r rhs_stride reals (at least 2 ncomp times the sites a field holds,
     * its ghosts included), its norms at r rhs_norm_stride floats */
    size_t rhs_stride, rhs_norm_stride;
} wd_coarse_args;

typedef struct wd_coarse_layout {
    int precision;          /* bytes per stored real: 4 (float) or 2 (16-bit) */
    int nvec;               /* null vectors a chirality */
    int ncomp;              /* complex components a site: 2 nvec */
    int volume;             /* coarse sites */
    size_t spinor_bytes;    /* one field: volume * 2 ncomp reals */
    size_t spinor_norm_bytes;   /* half: one float a site, else 0 */
    size_t link_bytes;      /* volume * 9 * 2 ncomp^2 reals */
    size_t link_norm_bytes;     /* half: 9 floats a site, else 0 */
} wd_coarse_layout;

#endif
