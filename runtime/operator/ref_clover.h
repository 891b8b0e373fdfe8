/*
 * ref_clover.h: the float64 Sheikholeslami-Wohlert (clover) reference of
 * DESIGN.md ("Clover"), written by hand from the formula and sharing no
 * code with the generator: what every clover kernel is judged against.
 *
 *   M_sw = M + c_sw (i/4) sum_{mu,nu} sigma_{mu nu} Fhat_{mu nu}(n)
 *   sigma_{mu nu} = (i/2) [g_mu, g_nu]   (DeGrand-Rossi, ref_gamma)
 *   Fhat_{mu nu}(n) = (1/8) [Q_{mu nu}(n) - Q_{mu nu}(n)^dagger]
 *   Q_{mu nu}(n) = the four plaquettes (leaves) in the (mu, nu) plane that
 *                  start and end at n, each oriented mu before nu
 *
 * Fields are those of ref_wilson.h (host order, complex double).  The time
 * boundary sign of the fermions does not enter: a leaf that crosses the
 * time boundary holds two temporal links across it, whose signs cancel.
 *
 * The externally accessible functions are
 *   ref_clover_fhat      Fhat_{mu nu}(n) for the six planes mu < nu
 *   ref_clover_term      the 12x12 matrix T(n) = c_sw (i/4) sum sigma F per
 *                        site (both orders of mu, nu: 2 x the six planes)
 *   ref_clover_apply     out(n) = (d + T(n)) in(n) per site
 *   ref_wilson_clover    out = M_sw in (dagger: M_sw^dagger = M^dagger + T)
 *   ref_clover_invert    (d + T(n))^-1 per site by Gauss-Jordan elimination
 *                        with partial pivoting on the whole 12x12 matrix
 *   ref_clover_schur     the even-odd Schur operators of M_sw, asymmetric
 *                        and symmetric, in the kappa normalisation
 * Notes: a site's 12x12 matrices are row-major [12][12], index 3 spin +
 * colour (the order of a site's spinor).  Nothing allocates; loops over
 * sites run under OpenMP, each iteration writing its own site.
 */
#ifndef WDIRAC_REF_CLOVER_H
#define WDIRAC_REF_CLOVER_H

#include <complex.h>
#include <stddef.h>

/* the planes mu < nu in the order (0,1) (0,2) (0,3) (1,2) (1,3) (2,3) */
extern const int ref_clover_planes[6][2];

/* fhat[site][plane][3][3]: 54 complex a site */
void ref_clover_fhat(double complex *fhat, const double complex *u, const int dims[4]);

/* t[site][12][12] = c_sw (i/4) sum_{mu != nu} sigma_{mu nu} Fhat_{mu nu} */
void ref_clover_term(double complex *t, const double complex *fhat, size_t volume,
                     double csw);

/* out(n) = diag * in(n) + t(n) in(n); out must not alias in */
void ref_clover_apply(double complex *out, const double complex *t,
                      const double complex *in, size_t volume, double diag);

/* out = M_sw in = (4+mass) in - D in / 2 + T in, T from ref_clover_term;
 * dagger: M_sw^dagger (T is hermitian). */
void ref_wilson_clover(double complex *out, const double complex *u,
                       const double complex *t, const double complex *in,
                       const int dims[4], double mass, int t_sign, int dagger);

/* inv(n) = (diag + t(n))^-1 at every site; returns -1, or the first site
 * whose matrix is singular to rounding (a pivot below 1e-300; inv is then
 * undefined at that site). */
long ref_clover_invert(double complex *inv, const double complex *t, size_t volume,
                       double diag);

/*
 * The even-odd Schur operators of M_sw / (4+m) = A - kappa D, with
 * A = 1 + T / (4+m) and kappa = 1 / (2 (4+m)) (the normalisation of the
 * Wilson Mhat = 1 - kappa^2 D_eo D_oe, which is A = 1):
 *   asymmetric  Mhat = A_ee - kappa^2 D_eo A_oo^-1 D_oe
 *   symmetric   Mhat = 1 - kappa^2 A_ee^-1 D_eo A_oo^-1 D_oe
 * out = Mhat in on the even sites (zero on the odd ones); reads in on the
 * even sites only.  a and ainv: per-site A and A^-1 (ref_clover_term with
 * c_sw / (4+m), and ref_clover_invert of it with diag 1); tmp: a scratch
 * spinor of the whole lattice.  dagger: Mhat^dagger, with D^dagger for D
 * and the hermitian A, A^-1 in the reversed order (asymmetric: A_ee -
 * kappa^2 D^dag_eo A_oo^-1 D^dag_oe; symmetric: 1 - kappa^2 D^dag_eo A_oo^-1
 * D^dag_oe A_ee^-1).
 */
void ref_clover_schur(double complex *out, const double complex *u, const double complex *a,
                      const double complex *ainv, const double complex *in,
                      double complex *tmp, const int dims[4], double mass, int t_sign,
                      int dagger, int symmetric);

#endif
