/*
 * gauge_tools.h: the gauge module (runtime/gauge/): host-side field tools
 * (gauge_tools.c, below), the quenched heatbath and the observables on the
 * CPU (heatbath.c) and the GPU (heatbath_gpu.cu, over the backends' thin
 * CUDA layer), with the SU(3) link algebra they share (heatbath_link.h,
 * philox.h).  Its public face is wdirac_gauge.h (generation, observables);
 * numerics (temporal gauge fixing) and io (unitarity, observables) call
 * the tools below.
 *
 * Host-side gauge and spinor field tools on the host order of
 * DESIGN.md (complex double; gauge [site][mu][3][3], spinor [site][4][3],
 * site = x + X*(y + Y*(z + Z*t))).
 *
 * The externally accessible functions are
 *   wd_su3_random           one Haar-random SU(3) matrix
 *   wd_gauge_random         every link Haar-random SU(3)
 *   wd_gauge_smooth         every link exp(i eps H), H random hermitian traceless
 *                           (off-diagonal entries complex normal, E|H_ij|^2 = 1;
 *                           diagonal real normals minus their mean, variance
 *                           2/3): within ~eps |H| of the unit matrix; SU(3) to
 *                           rounding for any |eps| < 1e150
 *   wd_gauge_unit           every link the unit matrix
 *   wd_spinor_fill_random   (wdirac.h) wd_spinor_random from a seed
 *   wd_spinor_random        every component complex normal, E|z|^2 = 1 (real
 *                           and imaginary parts of variance 1/2)
 *   wd_gauge_transform_random  g(n) Haar-random SU(3) at every site
 *   wd_gauge_transform      U_mu(n) -> g(n) U_mu(n) g(n+mu)^dagger (periodic)
 *   wd_spinor_transform     psi(n) -> g(n) psi(n), or g(n)^dagger psi(n)
 *   wd_temporal_gauge       the g(n) of DESIGN.md's temporal gauge fixing,
 *                           g(x,y,z,0) = 1, g(t+1) = g(t) U_t(t): after
 *                           wd_gauge_transform every U_t(n) with t < T-1 is
 *                           the unit matrix, U_t at t = T-1 carries the
 *                           Polyakov-loop product U_t(0) U_t(1) ... U_t(T-1)
 *   wd_temporal_gauge_field the field the gauge-fixed variants run on: u
 *                           transformed with wd_temporal_gauge's g (also
 *                           returned), every link reunitarized, the unit
 *                           links exactly the unit matrix (the transform
 *                           leaves them unit to ~1e-14 only, an error the
 *                           kernels that skip them would not see)
 *   wd_temporal_gauge_field_block  the same on a rank's block of a grid
 *   wd_su3_unitarity_error  max over links of the largest entry of
 *                           |U U^dag - 1| and of |det U - 1|; infinite when
 *                           a link holds a NaN
 * Notes: outputs never alias inputs except where a function works in place
 * (gauge_transform and spinor_transform work in place).  The random fields
 * are drawn site by site in host order, so a seed fixes the field whatever
 * the number of threads.
 */
#ifndef WDIRAC_GAUGE_TOOLS_H
#define WDIRAC_GAUGE_TOOLS_H

#include <complex.h>
#include <stddef.h>

#include "rng.h"
#include "wdirac.h"

void wd_su3_random(double complex m[3][3], wd_rng *r);
void wd_gauge_random(double complex *u, const int dims[4], wd_rng *r);
void wd_gauge_smooth(double complex *u, const int dims[4], double eps, wd_rng *r);
void wd_gauge_unit(double complex *u, const int dims[4]);
void wd_spinor_random(double complex *psi, const int dims[4], wd_rng *r);

/* g: volume * 9 complex, [site][3][3] */
void wd_gauge_transform_random(double complex *g, const int dims[4], wd_rng *r);
void wd_gauge_transform(double complex *u, const double complex *g, const int dims[4]);
void wd_spinor_transform(double complex *psi, const double complex *g,
                         const int dims[4], int dagger);
void wd_temporal_gauge(double complex *g, const double complex *u, const int dims[4]);
void wd_temporal_gauge_field(double complex *uf, double complex *g, const double complex *u,
                             const int dims[4]);

/* wd_temporal_gauge_field on this rank's block of grid (uf, g, u: the
 * block; collective over the grid's ranks).  The same field and g, bit for
 * bit, as the whole-lattice function's block; WD_ERR_NOMEM (agreed) when
 * the faces cannot be allocated. */
struct wd_grid;
wd_status wd_temporal_gauge_field_block(double complex *uf, double complex *g,
                                        const double complex *u, const struct wd_grid *grid);

double wd_su3_unitarity_error(const double complex *u, size_t nlinks);

#endif
