/*
 * ref_clover.c: the float64 clover reference of ref_clover.h, typed from
 * DESIGN.md ("Clover").  The four leaves of Q_{mu nu}(n), each a closed
 * path from n, mu before nu (U_{-mu}(n) = U_mu(n - mu)^dagger):
 *   n -> n+mu -> n+mu+nu -> n+nu -> n
 *   n -> n+nu -> n-mu+nu -> n-mu -> n
 *   n -> n-mu -> n-mu-nu -> n-nu -> n
 *   n -> n-nu -> n+mu-nu -> n+mu -> n
 * (the counter-clockwise plaquettes of the (mu, nu) plane with a corner at
 * n, each started at n).  sigma_{mu nu} = (i/2)(g_mu g_nu - g_nu g_mu) from
 * ref_gamma's matrices; the inverse is plain Gauss-Jordan on 12x12, so it
 * knows nothing of the chiral block structure the kernels use.
 *
 * The externally accessible functions are listed in ref_clover.h.
 */
#include "ref_clover.h"

#include <math.h>
#include <string.h>

#include "ref_wilson.h"

const int ref_clover_planes[6][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}};

static size_t volume_of(const int dims[4])
{
    return (size_t)dims[0] * (size_t)dims[1] * (size_t)dims[2] * (size_t)dims[3];
}

static size_t index_of(const int x[4], const int dims[4])
{
    return (size_t)x[0] + (size_t)dims[0] *
        ((size_t)x[1] + (size_t)dims[1] * ((size_t)x[2] + (size_t)dims[2] * (size_t)x[3]));
}

/* 3x3: c = a b, with a and/or b daggered */
static void mul3(double complex c[9], const double complex a[9], int adag,
                 const double complex b[9], int bdag)
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double complex s = 0;
            for (int k = 0; k < 3; k++) {
                const double complex aik = adag ? conj(a[3 * k + i]) : a[3 * i + k];
                const double complex bkj = bdag ? conj(b[3 * j + k]) : b[3 * k + j];
                s += aik * bkj;
            }
            c[3 * i + j] = s;
        }
}

/* The path of four hops from x: dir[k] = +-(mu+1); returns the product of
 * the links (U_mu(y) for a forward hop from y, U_mu(y - mu)^dag backward). */
static void path4(double complex out[9], const double complex *u, const int dims[4],
                  const int x0[4], const int dir[4])
{
    int x[4] = {x0[0], x0[1], x0[2], x0[3]};
    double complex acc[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, tmp[9];
    for (int k = 0; k < 4; k++) {
        const int mu = (dir[k] > 0 ? dir[k] : -dir[k]) - 1;
        const double complex *link;
        int dag;
        if (dir[k] > 0) {
            link = u + 9 * (4 * index_of(x, dims) + (size_t)mu);
            dag = 0;
            x[mu] = (x[mu] + 1) % dims[mu];
        } else {
            x[mu] = (x[mu] + dims[mu] - 1) % dims[mu];
            link = u + 9 * (4 * index_of(x, dims) + (size_t)mu);
            dag = 1;
        }
        mul3(tmp, acc, 0, link, dag);
        memcpy(acc, tmp, sizeof acc);
    }
    memcpy(out, acc, sizeof acc);
}

void ref_clover_fhat(double complex *fhat, const double complex *u, const int dims[4])
{
    const size_t volume = volume_of(dims);
#pragma omp parallel for
    for (size_t site = 0; site < volume; site++) {
        int x[4];
        size_t r = site;
        for (int mu = 0; mu < 4; mu++) {
            x[mu] = (int)(r % (size_t)dims[mu]);
            r /= (size_t)dims[mu];
        }
        for (int p = 0; p < 6; p++) {
            const int m = ref_clover_planes[p][0] + 1, n = ref_clover_planes[p][1] + 1;
            const int leaves[4][4] = {{m, n, -m, -n}, {n, -m, -n, m},
                                      {-m, -n, m, n}, {-n, m, n, -m}};
            double complex q[9] = {0}, leaf[9];
            for (int l = 0; l < 4; l++) {
                path4(leaf, u, dims, x, leaves[l]);
                for (int k = 0; k < 9; k++)
                    q[k] += leaf[k];
            }
            double complex *f = fhat + 54 * site + 9 * (size_t)p;
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++)
                    f[3 * i + j] = (q[3 * i + j] - conj(q[3 * j + i])) / 8.0;
        }
    }
}

/* sigma_{mu nu} = (i/2) (g_mu g_nu - g_nu g_mu) */
static void make_sigma(double complex s[4][4], int mu, int nu)
{
    double complex gm[4][4], gn[4][4];
    ref_gamma(mu, gm);
    ref_gamma(nu, gn);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            double complex c = 0;
            for (int k = 0; k < 4; k++)
                c += gm[i][k] * gn[k][j] - gn[i][k] * gm[k][j];
            s[i][j] = 0.5 * I * c;
        }
}

void ref_clover_term(double complex *t, const double complex *fhat, size_t volume,
                     double csw)
{
    double complex sigma[6][4][4];
    for (int p = 0; p < 6; p++)
        make_sigma(sigma[p], ref_clover_planes[p][0], ref_clover_planes[p][1]);
#pragma omp parallel for
    for (size_t site = 0; site < volume; site++) {
        double complex *ts = t + 144 * site;
        for (int k = 0; k < 144; k++)
            ts[k] = 0;
        /* both orders of (mu, nu): sigma and Fhat are both antisymmetric,
         * so each plane counts twice */
        for (int p = 0; p < 6; p++) {
            const double complex *f = fhat + 54 * site + 9 * (size_t)p;
            for (int s1 = 0; s1 < 4; s1++)
                for (int s2 = 0; s2 < 4; s2++) {
                    const double complex c = 2.0 * csw * (0.25 * I) * sigma[p][s1][s2];
                    if (c == 0)
                        continue;
                    for (int a = 0; a < 3; a++)
                        for (int b = 0; b < 3; b++)
                            ts[12 * (3 * s1 + a) + 3 * s2 + b] += c * f[3 * a + b];
                }
        }
    }
}

void ref_clover_apply(double complex *out, const double complex *t,
                      const double complex *in, size_t volume, double diag)
{
#pragma omp parallel for
    for (size_t site = 0; site < volume; site++) {
        const double complex *ts = t + 144 * site, *v = in + 12 * site;
        for (int i = 0; i < 12; i++) {
            double complex s = diag * v[i];
            for (int j = 0; j < 12; j++)
                s += ts[12 * i + j] * v[j];
            out[12 * site + (size_t)i] = s;
        }
    }
}

void ref_wilson_clover(double complex *out, const double complex *u,
                       const double complex *t, const double complex *in,
                       const int dims[4], double mass, int t_sign, int dagger)
{
    ref_wilson(out, u, in, dims, mass, t_sign, dagger);
    const size_t volume = volume_of(dims);
#pragma omp parallel for
    for (size_t site = 0; site < volume; site++) {
        const double complex *ts = t + 144 * site, *v = in + 12 * site;
        for (int i = 0; i < 12; i++) {
            double complex s = 0;
            for (int j = 0; j < 12; j++)
                s += ts[12 * i + j] * v[j];
            out[12 * site + (size_t)i] += s;
        }
    }
}

long ref_clover_invert(double complex *inv, const double complex *t, size_t volume,
                       double diag)
{
    long bad = -1;
#pragma omp parallel for
    for (size_t site = 0; site < volume; site++) {
        double complex a[12][24];
        for (int i = 0; i < 12; i++)
            for (int j = 0; j < 12; j++) {
                a[i][j] = t[144 * site + 12 * (size_t)i + (size_t)j] + (i == j ? diag : 0);
                a[i][12 + j] = i == j;
            }
        int singular = 0;
        for (int c = 0; c < 12 && !singular; c++) {
            int piv = c;
            for (int i = c + 1; i < 12; i++)
                if (cabs(a[i][c]) > cabs(a[piv][c]))
                    piv = i;
            if (cabs(a[piv][c]) < 1e-300) {
                singular = 1;
                break;
            }
            if (piv != c)
                for (int j = 0; j < 24; j++) {
                    const double complex tmp = a[c][j];
                    a[c][j] = a[piv][j];
                    a[piv][j] = tmp;
                }
            const double complex d = 1.0 / a[c][c];
            for (int j = 0; j < 24; j++)
                a[c][j] *= d;
            for (int i = 0; i < 12; i++) {
                if (i == c || a[i][c] == 0)
                    continue;
                const double complex f = a[i][c];
                for (int j = 0; j < 24; j++)
                    a[i][j] -= f * a[c][j];
            }
        }
        if (singular) {
#pragma omp critical
            if (bad < 0 || (long)site < bad)
                bad = (long)site;
            continue;
        }
        for (int i = 0; i < 12; i++)
            for (int j = 0; j < 12; j++)
                inv[144 * site + 12 * (size_t)i + (size_t)j] = a[i][12 + j];
    }
    return bad;
}

/* out = m(n) in(n) at the sites of one parity; zero at the other */
static void apply_parity(double complex *out, const double complex *m,
                         const double complex *in, const int dims[4], int parity)
{
    const size_t volume = volume_of(dims);
#pragma omp parallel for
    for (size_t site = 0; site < volume; site++) {
        size_t r = site;
        int sum = 0;
        for (int mu = 0; mu < 4; mu++) {
            sum += (int)(r % (size_t)dims[mu]);
            r /= (size_t)dims[mu];
        }
        for (int i = 0; i < 12; i++) {
            double complex s = 0;
            if (sum % 2 == parity)
                for (int j = 0; j < 12; j++)
                    s += m[144 * site + 12 * (size_t)i + (size_t)j] * in[12 * site + (size_t)j];
            out[12 * site + (size_t)i] = s;
        }
    }
}

void ref_clover_schur(double complex *out, const double complex *u, const double complex *a,
                      const double complex *ainv, const double complex *in,
                      double complex *tmp, const int dims[4], double mass, int t_sign,
                      int dagger, int symmetric)
{
    const double kappa = 1.0 / (2.0 * (4.0 + mass));
    const size_t n = 12 * volume_of(dims);
    /* symmetric dagger starts with A_ee^-1 (Mhat^dag = 1 - k^2 D^dag A^-1 D^dag A_ee^-1) */
    const double complex *src = in;
    if (symmetric && dagger) {
        apply_parity(out, ainv, in, dims, 0);
        src = out;
    }
    ref_dslash_parity(tmp, u, src, dims, t_sign, dagger, 1);   /* odd: D_oe src */
    apply_parity(out, ainv, tmp, dims, 1);                    /* odd: A_oo^-1 D_oe src */
    ref_dslash_parity(tmp, u, out, dims, t_sign, dagger, 0);   /* even: D_eo ... */
    if (symmetric && !dagger) {
        apply_parity(out, ainv, tmp, dims, 0);
        memcpy(tmp, out, n * sizeof *tmp);
    }
    if (!symmetric)
        apply_parity(out, a, in, dims, 0);                    /* even: A_ee in */
    else
        for (size_t k = 0; k < n; k++)
            out[k] = in[k];
    /* out_e = (A_ee or 1) in_e - kappa^2 tmp_e; the odd sites zero */
    for (size_t site = 0; site < n / 12; site++) {
        size_t r = site;
        int sum = 0;
        for (int mu = 0; mu < 4; mu++) {
            sum += (int)(r % (size_t)dims[mu]);
            r /= (size_t)dims[mu];
        }
        for (int i = 0; i < 12; i++) {
            const size_t k = 12 * site + (size_t)i;
            out[k] = sum % 2 == 0 ? out[k] - kappa * kappa * tmp[k] : 0;
        }
    }
}
