/*
 * ref_wilson.h: the float64 Wilson-Dirac reference, in the DeGrand-Rossi
 * basis and the host order of DESIGN.md.  Written by hand from the formula,
 * sharing no code with the generator or its templates: it is what every
 * generated Dslash variant is judged against.
 *
 * Fields (host order, complex double, interleaved as C99 double complex):
 *   gauge  u[site][mu][row][col], mu = 0..3 = x,y,z,t   (site * 36 complex)
 *   spinor p[site][spin][color]                          (site * 12 complex)
 *   site = x + X*(y + Y*(z + Z*t)), parity (x+y+z+t) % 2, even = 0.
 *
 * t_sign is the time boundary condition: +1 periodic, -1 antiperiodic (the
 * sign multiplies every hop that crosses the t = T-1 <-> t = 0 boundary, in
 * either direction; the links themselves are periodic).
 * dagger = 0 applies the operator, 1 its hermitian conjugate, coded directly
 * (projectors 1 + g_mu forward, 1 - g_mu backward), not as g5 D g5.
 *
 * The externally accessible functions are
 *   ref_gamma        DR gamma matrices g1..g4 (mu = 0..3) and g5 (mu = 4)
 *   ref_dslash       D on the whole lattice
 *   ref_dslash_parity D onto the sites of one parity (reads only the other)
 *   ref_wilson       M = (4+m) - D/2 on the whole lattice
 *   ref_wilson_block M on one block of a decomposed lattice
 *   ref_schur        Mhat_ee = 1 - kappa^2 D_eo D_oe on the even sites
 *   ref_apply_g5     multiply every site by g5
 * Notes: out must not alias any input (ref_apply_g5 excepted).  Extents
 * must be even and >= 2 (callers check DESIGN.md's stricter >= 4).
 */
#ifndef WDIRAC_REF_WILSON_H
#define WDIRAC_REF_WILSON_H

#include <complex.h>
#include <stddef.h>

/* g[row][col] of gamma_{mu+1} for mu = 0..3, gamma_5 = g1 g2 g3 g4 for mu = 4;
 * the zero matrix for any other mu */
void ref_gamma(int mu, double complex g[4][4]);

/* out = D in, every site */
void ref_dslash(double complex *out, const double complex *u,
                const double complex *in, const int dims[4], int t_sign,
                int dagger);

/* out(n) = (D in)(n) for n of parity out_parity; reads in only at the other
 * parity; sets out to zero at sites of the other parity. */
void ref_dslash_parity(double complex *out, const double complex *u,
                       const double complex *in, const int dims[4],
                       int t_sign, int dagger, int out_parity);

/* out = M in = (4+mass) in - 1/2 D in (dagger: M^dagger) */
void ref_wilson(double complex *out, const double complex *u,
                const double complex *in, const int dims[4], double mass,
                int t_sign, int dagger);

/*
 * One block of a lattice split over processes (DESIGN.md "Many processes"):
 * in a dimension mu with part[mu] set, a hop out of the block reads the
 * neighbouring blocks' faces instead of wrapping around: x_fwd[mu] holds
 * the spinor of the forward neighbour's first mu-slice, x_bwd[mu] that of
 * the backward neighbour's last mu-slice, u_bwd[mu] the links U_mu of that
 * last slice (12 and 9 complex a face site; face sites ordered by the other
 * three coordinates, the lowest dimension fastest).  The time-boundary sign
 * applies where the global time coordinate t_origin + t wraps (global_T).
 */
typedef struct ref_block {
    int part[4];
    const double complex *x_fwd[4], *x_bwd[4], *u_bwd[4];
    int t_origin, global_T;
} ref_block;

/* out = M in on a block (dims: the block's extents) */
void ref_wilson_block(double complex *out, const double complex *u,
                      const double complex *in, const int dims[4], double mass,
                      int t_sign, int dagger, const ref_block *b);

/* out_e = in_e - kappa^2 D_eo D_oe in_e, kappa = 1/(2(4+mass)); reads in
 * only on even sites; out is zero on odd sites.  dagger gives
 * Mhat^dagger = 1 - kappa^2 (D^dag)_eo (D^dag)_oe, the same formula with
 * D^dag for D: the blocks of D^dag, not the daggered blocks of D (note
 * (D_eo D_oe)^dag = (D_oe)^dag (D_eo)^dag = (D^dag)_eo (D^dag)_oe).
 * Allocates nothing: out's odd half holds D_oe in_e on the way. */
void ref_schur(double complex *out, const double complex *u,
               const double complex *in, const int dims[4], double mass,
               int t_sign, int dagger);

/* out = g5 in at every site (out may equal in) */
void ref_apply_g5(double complex *out, const double complex *in, size_t volume);

#endif
