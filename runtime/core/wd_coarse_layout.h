/*
 * wd_coarse_layout.h: the packed layouts of a multigrid coarse level (the
 * fields the generated coarse_* kernels read, wd_coarse_kernel.h) and the
 * packing of the multigrid module's host fields into them and back.
 *
 * The externally accessible functions are
 *   wd_coarse_layout_make      sizes of a level's packed spinor and links
 *   wd_pack_coarse_spinor      host [site][2 nvec] complex double -> packed
 *                              (half: one norm a site, its largest |real|)
 *   wd_unpack_coarse_spinor    the inverse
 *   wd_pack_coarse_links       host [site][9][2 nvec][2 nvec] complex double
 *                              (wd_mg_op's links: 8 hops, then the local
 *                              block, row-major) -> packed blocks (half: one
 *                              norm a block, its largest |real|)
 * Notes: single precision or half (16-bit fixed point); the host order of
 * sites is the packed order (the neighbour table indexes both).  Pack and
 * unpack are host loops, OpenMP over sites, and write every packed real of
 * every site, so a poisoned buffer holds no poison after a pack.
 */
#ifndef WDIRAC_COARSE_LAYOUT_H
#define WDIRAC_COARSE_LAYOUT_H

#include <complex.h>
#include <stddef.h>

#include "wd_coarse_kernel.h"
#include "wdirac.h"

/* WD_ERR_INVALID naming the value for a precision other than 4 or 2, nvec
 * below 1 or above 256, or a volume below 1. */
wd_status wd_coarse_layout_make(wd_coarse_layout *l, int volume, int nvec, int precision);
void wd_pack_coarse_spinor(const wd_coarse_layout *l, void *dst, float *norm,
                           const double complex *host);
void wd_unpack_coarse_spinor(const wd_coarse_layout *l, double complex *host, const void *src,
                             const float *norm);
void wd_pack_coarse_links(const wd_coarse_layout *l, void *dst, float *norm,
                          const double complex *host);

#endif
