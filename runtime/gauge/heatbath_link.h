/*
 * heatbath_link.h: the per-link arithmetic of the quenched SU(3) Monte
 * Carlo, as static inline functions on plain doubles that compile under a C
 * compiler and under nvcc (host and device), so the CPU sweep
 * (heatbath.c) and a GPU kernel share one implementation.
 *
 * A 3x3 complex matrix is 18 doubles, row-major, (re, im) interleaved: the
 * layout of one link in the host gauge field of DESIGN.md.
 *
 * The externally accessible functions are
 *   wd_hb_ctr             the Philox counter of one random block, keyed by
 *                         (site, mu, subgroup, draw, sweep); see below
 *   wd_hb_staple_add      a += the two staples of U_mu(x) in one plane nu
 *   wd_hb_su2_sample      an SU(2) element X with density exp(alpha x0) on
 *                         the group (Creutz below alpha = 1.7, Kennedy-
 *                         Pendleton above); 0 when it gave up (never in
 *                         practice: 256 attempts, each accepted with
 *                         probability >= 0.7)
 *   wd_hb_heatbath_link   U <- new link from the Wilson-action heatbath,
 *                         Cabibbo-Marinari over the subgroups (0,1), (1,2),
 *                         (0,2), given the staple sum A of U
 *   wd_hb_overrelax_link  U <- microcanonical reflection in each subgroup:
 *                         Re tr(U A) unchanged
 *   wd_su3_reunitarize    rows 0, 1 orthonormalised (Gram-Schmidt), row 2
 *                         = (row0 x row1)^*: exactly SU(3) up to rounding
 *   wd_su3_reconstruct_row2   row 2 = (row0 x row1)^* alone (two-row files)
 *
 * Conventions: the Wilson action S = beta sum_P (1 - Re tr P / 3); the
 * staple sum A of U_mu(x) is the sum over nu != mu of
 *   U_nu(x+mu) U_mu(x+nu)^dag U_nu(x)^dag + U_nu(x+mu-nu)^dag U_mu(x-nu)^dag U_nu(x-nu)
 * so that the part of S that depends on U is -(beta/3) Re tr(U A).
 * An SU(2) element is the quaternion (a0, a1, a2, a3),
 *   a0 + i a.sigma = [[a0 + i a3, a2 + i a1], [-a2 + i a1, a0 - i a3]].
 *
 * Random numbers: one Philox4x32-10 block (two doubles) per draw, keyed by
 * the 64-bit seed, counter
 *   c0 = site (lexicographic), c1 = mu | subgroup << 2 | draw << 4,
 *   c2, c3 = the 63-bit sweep index (bit 63 set: the hot-start stream),
 * so a link's random numbers depend on nothing but (seed, sweep, site, mu,
 * subgroup, draw): the same field for any thread count or backend, up to
 * the last bits of log, cos and exp in the platform's maths library.
 */
#ifndef WDIRAC_HEATBATH_LINK_H
#define WDIRAC_HEATBATH_LINK_H

#include <math.h>
#include <stdint.h>

#include "philox.h"

#ifdef __CUDACC__
#define WD_HB_FN __host__ __device__ static inline
#else
#define WD_HB_FN static inline
#endif

/* Below this alpha Creutz's sampler accepts more often than Kennedy-
 * Pendleton's (0.71 against 0.69 at 1.7; 0.78 against 0.12 at 0.25, 0.56
 * against 0.90 at 4): the crossover of the two acceptance curves. */
#define WD_HB_KP_ALPHA 1.7
#define WD_HB_MAX_ATTEMPTS 256

#define WD_HB_HOT_STREAM 0x80000000u

WD_HB_FN void wd_hb_ctr(uint32_t ctr[4], uint32_t site, int mu, int sub, uint32_t draw,
                        uint64_t sweep)
{
    ctr[0] = site;
    ctr[1] = (uint32_t)mu | (uint32_t)sub << 2 | draw << 4;
    ctr[2] = (uint32_t)sweep;
    ctr[3] = (uint32_t)(sweep >> 32);
}

/* two uniforms in (0, 1] from the block named by ctr (c1's draw field set
 * by the caller) */
WD_HB_FN void wd_hb_uniform2(const uint32_t ctr[4], const uint32_t key[2], double r[2])
{
    uint32_t w[4];
    wd_philox4x32_10(ctr, key, w);
    r[0] = wd_philox_u01(w[0], w[1]);
    r[1] = wd_philox_u01(w[2], w[3]);
}

/* ---- 3x3 complex matrices on 18 doubles ------------------------------- */

#define WD_RE(m, i, j) (m)[6 * (i) + 2 * (j)]
#define WD_IM(m, i, j) (m)[6 * (i) + 2 * (j) + 1]

/* c = a b */
WD_HB_FN void wd_m3_mul_nn(double *c, const double *a, const double *b)
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double re = 0, im = 0;
            for (int k = 0; k < 3; k++) {
                re += WD_RE(a, i, k) * WD_RE(b, k, j) - WD_IM(a, i, k) * WD_IM(b, k, j);
                im += WD_RE(a, i, k) * WD_IM(b, k, j) + WD_IM(a, i, k) * WD_RE(b, k, j);
            }
            WD_RE(c, i, j) = re;
            WD_IM(c, i, j) = im;
        }
}

/* c = a b^dag */
WD_HB_FN void wd_m3_mul_nd(double *c, const double *a, const double *b)
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double re = 0, im = 0;
            for (int k = 0; k < 3; k++) {
                re += WD_RE(a, i, k) * WD_RE(b, j, k) + WD_IM(a, i, k) * WD_IM(b, j, k);
                im += WD_IM(a, i, k) * WD_RE(b, j, k) - WD_RE(a, i, k) * WD_IM(b, j, k);
            }
            WD_RE(c, i, j) = re;
            WD_IM(c, i, j) = im;
        }
}

/* c += a^dag b */
WD_HB_FN void wd_m3_add_mul_dn(double *c, const double *a, const double *b)
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double re = 0, im = 0;
            for (int k = 0; k < 3; k++) {
                re += WD_RE(a, k, i) * WD_RE(b, k, j) + WD_IM(a, k, i) * WD_IM(b, k, j);
                im += WD_RE(a, k, i) * WD_IM(b, k, j) - WD_IM(a, k, i) * WD_RE(b, k, j);
            }
            WD_RE(c, i, j) += re;
            WD_IM(c, i, j) += im;
        }
}

/* c += a b^dag */
WD_HB_FN void wd_m3_add_mul_nd(double *c, const double *a, const double *b)
{
    double t[18];
    wd_m3_mul_nd(t, a, b);
    for (int k = 0; k < 18; k++)
        c[k] += t[k];
}

/* Re tr(a b^dag) = sum_ij Re(a_ij conj(b_ij)) */
WD_HB_FN double wd_m3_retr_nd(const double *a, const double *b)
{
    double s = 0;
    for (int k = 0; k < 18; k++)
        s += a[k] * b[k];
    return s;
}

/* a += U_nu(x+mu) U_mu(x+nu)^dag U_nu(x)^dag
 *    + U_nu(x+mu-nu)^dag U_mu(x-nu)^dag U_nu(x-nu) */
WD_HB_FN void wd_hb_staple_add(double *a, const double *nu_xpmu, const double *mu_xpnu,
                               const double *nu_x, const double *nu_xpmumnu,
                               const double *mu_xmnu, const double *nu_xmnu)
{
    double t[18];
    wd_m3_mul_nd(t, nu_xpmu, mu_xpnu);
    wd_m3_add_mul_nd(a, t, nu_x);
    /* (U_mu(x-nu) U_nu(x+mu-nu))^dag U_nu(x-nu) */
    wd_m3_mul_nn(t, mu_xmnu, nu_xpmumnu);
    wd_m3_add_mul_dn(a, t, nu_xmnu);
}

/* ---- SU(2) ------------------------------------------------------------- */

/* c = a b for quaternions a0 + i a.sigma:
 * (a0 + i a.s)(b0 + i b.s) = a0 b0 - a.b + i (a0 b + b0 a - a x b).s */
WD_HB_FN void wd_q_mul(double c[4], const double a[4], const double b[4])
{
    const double c0 = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
    const double c1 = a[0] * b[1] + b[0] * a[1] - (a[2] * b[3] - a[3] * b[2]);
    const double c2 = a[0] * b[2] + b[0] * a[2] - (a[3] * b[1] - a[1] * b[3]);
    const double c3 = a[0] * b[3] + b[0] * a[3] - (a[1] * b[2] - a[2] * b[1]);
    c[0] = c0;
    c[1] = c1;
    c[2] = c2;
    c[3] = c3;
}

/* An SU(2) element with density exp(alpha x0) with respect to Haar measure,
 * alpha >= 0: x0 has density sqrt(1 - x0^2) exp(alpha x0) on [-1, 1] and
 * (x1, x2, x3) is uniform on the sphere of radius sqrt(1 - x0^2).
 * ctr names the first block (draw 0); draw d adds d << 4 to c1. */
WD_HB_FN int wd_hb_su2_sample(double alpha, const uint32_t key[2], const uint32_t ctr[4],
                              double x[4])
{
    const double two_pi = 6.28318530717958647692528676655900577;
    uint32_t c[4] = {ctr[0], ctr[1], ctr[2], ctr[3]};
    double r[2], s[2];
    double x0 = 0;
    int found = 0;
    uint32_t draw = 1;

    if (alpha >= WD_HB_KP_ALPHA) {
        /* Kennedy-Pendleton: x0 = 1 - 2 lambda^2 with lambda^2 of density
         * lambda exp(-2 alpha lambda^2) d(lambda^2) (a chi-square with three
         * degrees of freedom over 4 alpha: -log r1 and -cos^2 log r3 supply
         * two and one), accepted with probability sqrt(1 - lambda^2). */
        for (int n = 0; n < WD_HB_MAX_ATTEMPTS && !found; n++) {
            c[1] = ctr[1] + (draw++ << 4);
            wd_hb_uniform2(c, key, r);
            c[1] = ctr[1] + (draw++ << 4);
            wd_hb_uniform2(c, key, s);
            const double cs = cos(two_pi * r[1]);
            const double lambda2 = -(log(r[0]) + cs * cs * log(s[0])) / (2.0 * alpha);
            if (s[1] * s[1] <= 1.0 - lambda2) {
                x0 = 1.0 - 2.0 * lambda2;
                found = 1;
            }
        }
    } else {
        /* Creutz: x0 from exp(alpha x0) on [-1, 1] by inverting its
         * distribution function, accepted with probability sqrt(1 - x0^2).
         * alpha = 0 (a zero staple) is the uniform limit. */
        const double span = alpha > 1e-300 ? -expm1(-2.0 * alpha) : 0.0;
        for (int n = 0; n < WD_HB_MAX_ATTEMPTS && !found; n++) {
            c[1] = ctr[1] + (draw++ << 4);
            wd_hb_uniform2(c, key, r);
            const double t = alpha > 1e-300 ? 1.0 + log1p(-span * (1.0 - r[0])) / alpha
                                            : 2.0 * r[0] - 1.0;
            if (r[1] * r[1] <= 1.0 - t * t) {
                x0 = t;
                found = 1;
            }
        }
    }
    if (!found)
        return 0;

    /* the direction from draw 0: cos(theta) uniform in [-1, 1), phi in (0, 2 pi] */
    c[1] = ctr[1];
    wd_hb_uniform2(c, key, r);
    const double norm = sqrt(fmax(0.0, 1.0 - x0 * x0));
    const double cth = 1.0 - 2.0 * r[0];
    const double sth = sqrt(fmax(0.0, 1.0 - cth * cth));
    const double phi = two_pi * r[1];
    x[0] = x0;
    x[1] = norm * sth * cos(phi);
    x[2] = norm * sth * sin(phi);
    x[3] = norm * cth;
    return 1;
}

/* The SU(2)-multiple part of the (i, j) block of w: the quaternion q with
 * Re tr2(R block) = Re tr2(R (q0 + i q.sigma)) for every SU(2) R. */
WD_HB_FN void wd_hb_block(double q[4], const double *w, int i, int j)
{
    q[0] = 0.5 * (WD_RE(w, i, i) + WD_RE(w, j, j));
    q[3] = 0.5 * (WD_IM(w, i, i) - WD_IM(w, j, j));
    q[2] = 0.5 * (WD_RE(w, i, j) - WD_RE(w, j, i));
    q[1] = 0.5 * (WD_IM(w, i, j) + WD_IM(w, j, i));
}

/* rows i and j of m <- R (rows i, j) with R the quaternion r */
WD_HB_FN void wd_hb_rotate_rows(double *m, const double r[4], int i, int j)
{
    /* R = [[r0 + i r3, r2 + i r1], [-r2 + i r1, r0 - i r3]] */
    for (int k = 0; k < 3; k++) {
        const double ar = WD_RE(m, i, k), ai = WD_IM(m, i, k);
        const double br = WD_RE(m, j, k), bi = WD_IM(m, j, k);
        WD_RE(m, i, k) = r[0] * ar - r[3] * ai + r[2] * br - r[1] * bi;
        WD_IM(m, i, k) = r[0] * ai + r[3] * ar + r[2] * bi + r[1] * br;
        WD_RE(m, j, k) = -r[2] * ar - r[1] * ai + r[0] * br + r[3] * bi;
        WD_IM(m, j, k) = -r[2] * ai + r[1] * ar + r[0] * bi - r[3] * br;
    }
}

/* the three subgroups of Cabibbo-Marinari */
#define WD_HB_SUB_I(s) ((s) == 1 ? 1 : 0)
#define WD_HB_SUB_J(s) ((s) == 0 ? 1 : 2)

/* Heatbath for U given its staple sum a: for each subgroup s, with
 * W = U A and its block q = k V (V in SU(2)), draw X with density
 * exp((2 beta k / 3) x0) and set U <- R U, R = X V^dag, so R U has
 * the conditional Boltzmann weight exp((beta/3) Re tr(R U A)).
 * ctr = wd_hb_ctr(site, mu, 0, 0, sweep); returns the number of subgroups
 * whose sampler gave up (0 in practice; those are left unchanged). */
WD_HB_FN int wd_hb_heatbath_link(double *u, const double *a, double beta,
                                 const uint32_t key[2], const uint32_t ctr[4])
{
    double w[18];
    int failed = 0;
    wd_m3_mul_nn(w, u, a);
    for (int s = 0; s < 3; s++) {
        const int i = WD_HB_SUB_I(s), j = WD_HB_SUB_J(s);
        double q[4], x[4], r[4];
        wd_hb_block(q, w, i, j);
        const double k = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
        const uint32_t c[4] = {ctr[0], ctr[1] | (uint32_t)s << 2, ctr[2], ctr[3]};
        if (!wd_hb_su2_sample(2.0 * beta * k / 3.0, key, c, x)) {
            failed++;
            continue;
        }
        if (k > 0) {
            const double vdag[4] = {q[0] / k, -q[1] / k, -q[2] / k, -q[3] / k};
            wd_q_mul(r, x, vdag);
        } else {
            r[0] = x[0], r[1] = x[1], r[2] = x[2], r[3] = x[3];
        }
        wd_hb_rotate_rows(u, r, i, j);
        wd_hb_rotate_rows(w, r, i, j);
    }
    return failed;
}

/* Overrelaxation: in each subgroup R = (V^dag)^2, so R V = V^dag and
 * Re tr(R W) = Re tr(W) on the block: the action is unchanged. */
WD_HB_FN void wd_hb_overrelax_link(double *u, const double *a)
{
    double w[18];
    wd_m3_mul_nn(w, u, a);
    for (int s = 0; s < 3; s++) {
        const int i = WD_HB_SUB_I(s), j = WD_HB_SUB_J(s);
        double q[4], r[4];
        wd_hb_block(q, w, i, j);
        const double k2 = q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3];
        if (!(k2 > 0))
            continue;
        /* (V^dag)^2 = (q0^2 - |q|^2, -2 q0 q) / k^2 */
        r[0] = (q[0] * q[0] - q[1] * q[1] - q[2] * q[2] - q[3] * q[3]) / k2;
        r[1] = -2.0 * q[0] * q[1] / k2;
        r[2] = -2.0 * q[0] * q[2] / k2;
        r[3] = -2.0 * q[0] * q[3] / k2;
        wd_hb_rotate_rows(u, r, i, j);
        wd_hb_rotate_rows(w, r, i, j);
    }
}

/* row 2 = (row0 x row1)^* */
WD_HB_FN void wd_su3_reconstruct_row2(double *u)
{
    for (int k = 0; k < 3; k++) {
        const int p = (k + 1) % 3, q = (k + 2) % 3;
        /* a_p b_q - a_q b_p, conjugated */
        const double re = WD_RE(u, 0, p) * WD_RE(u, 1, q) - WD_IM(u, 0, p) * WD_IM(u, 1, q)
                        - WD_RE(u, 0, q) * WD_RE(u, 1, p) + WD_IM(u, 0, q) * WD_IM(u, 1, p);
        const double im = WD_RE(u, 0, p) * WD_IM(u, 1, q) + WD_IM(u, 0, p) * WD_RE(u, 1, q)
                        - WD_RE(u, 0, q) * WD_IM(u, 1, p) - WD_IM(u, 0, q) * WD_RE(u, 1, p);
        WD_RE(u, 2, k) = re;
        WD_IM(u, 2, k) = -im;
    }
}

WD_HB_FN void wd_su3_reunitarize(double *u)
{
    double n0 = 0;
    for (int k = 0; k < 6; k++)
        n0 += u[k] * u[k];
    n0 = 1.0 / sqrt(n0);
    for (int k = 0; k < 6; k++)
        u[k] *= n0;
    /* row1 -= <row0, row1> row0 */
    double pr = 0, pi = 0;
    for (int k = 0; k < 3; k++) {
        pr += WD_RE(u, 0, k) * WD_RE(u, 1, k) + WD_IM(u, 0, k) * WD_IM(u, 1, k);
        pi += WD_RE(u, 0, k) * WD_IM(u, 1, k) - WD_IM(u, 0, k) * WD_RE(u, 1, k);
    }
    for (int k = 0; k < 3; k++) {
        WD_RE(u, 1, k) -= pr * WD_RE(u, 0, k) - pi * WD_IM(u, 0, k);
        WD_IM(u, 1, k) -= pr * WD_IM(u, 0, k) + pi * WD_RE(u, 0, k);
    }
    double n1 = 0;
    for (int k = 6; k < 12; k++)
        n1 += u[k] * u[k];
    n1 = 1.0 / sqrt(n1);
    for (int k = 6; k < 12; k++)
        u[k] *= n1;
    wd_su3_reconstruct_row2(u);
}

#endif
