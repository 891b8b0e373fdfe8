/*
 * ref_wilson.c: the float64 Wilson-Dirac reference, typed by hand from
 * DESIGN.md,
 *   (D x)(n) = sum_mu [ (1 - g_mu) U_mu(n) x(n+mu)
 *                     + (1 + g_mu) U_mu(n-mu)^dag x(n-mu) ],
 * and its hermitian conjugate written out directly,
 *   (D^dag x)(n) = sum_mu [ (1 + g_mu) U_mu(n) x(n+mu)
 *                         + (1 - g_mu) U_mu(n-mu)^dag x(n-mu) ]
 * (the forward hop n -> n+mu of D, conjugated, is a backward hop with the
 * same projector; the gammas are hermitian), never through g5, so that
 * gamma5-hermiticity stays a test of this file rather than an identity.
 *
 * The externally accessible functions are
 *   ref_gamma          DR g1..g4 for mu = 0..3 as typed in DESIGN.md,
 *                      g5 = g1 g2 g3 g4 for mu = 4, the zero matrix otherwise
 *   ref_dslash         D or D^dag on every site
 *   ref_dslash_parity  the same on the sites of one parity, zero on the other
 *   ref_wilson         M = (4+m) - D/2, M^dag = (4+m) - D^dag/2
 *   ref_wilson_block   the same on one block of a decomposed lattice, the
 *                      neighbours' faces given
 *   ref_schur          Mhat_ee = 1 - kappa^2 D_eo D_oe on even sites (dagger:
 *                      D^dag in place of D), zero on odd sites
 *   ref_apply_g5       g5 at every site, in place allowed
 * Notes: the time-boundary sign t_sign multiplies a hop that crosses between
 * t = T-1 and t = 0 in either direction; the gauge links themselves are
 * periodic.  Nothing here allocates: ref_schur keeps its intermediate
 * D_oe x_e in the odd half of out.  Loops over output sites run under
 * OpenMP; each iteration writes only its own site.
 */
#include "ref_wilson.h"

/* DeGrand-Rossi gamma_1..gamma_4, character for character from DESIGN.md. */
static const double complex dr_gamma[4][4][4] = {
    {{0, 0, 0, I}, {0, 0, I, 0}, {0, -I, 0, 0}, {-I, 0, 0, 0}},
    {{0, 0, 0, -1}, {0, 0, 1, 0}, {0, 1, 0, 0}, {-1, 0, 0, 0}},
    {{0, 0, I, 0}, {0, 0, 0, -I}, {-I, 0, 0, 0}, {0, I, 0, 0}},
    {{0, 0, 1, 0}, {0, 0, 0, 1}, {1, 0, 0, 0}, {0, 1, 0, 0}},
};

/* The spin projectors of one operator: fwd[mu] multiplies the hop from
 * n+mu, bwd[mu] the hop from n-mu.  D: fwd = 1 - g_mu, bwd = 1 + g_mu;
 * D^dag: the signs swapped. */
typedef struct {
    double complex fwd[4][4][4];
    double complex bwd[4][4][4];
} projectors;

/* Output sites: one parity, or all of them. */
enum { ALL_SITES = -1 };

/* 4x4 spin matrices as 16 contiguous row-major entries */
static void spin_mul(double complex *out, const double complex *a,
                     const double complex *b)
{
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            double complex s = 0;
            for (int k = 0; k < 4; k++)
                s += a[4 * i + k] * b[4 * k + j];
            out[4 * i + j] = s;
        }
}

void ref_gamma(int mu, double complex g[4][4])
{
    if (mu >= 0 && mu < 4) {
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                g[i][j] = dr_gamma[mu][i][j];
    } else if (mu == 4) {
        double complex g12[4][4], g123[4][4];
        spin_mul(&g12[0][0], &dr_gamma[0][0][0], &dr_gamma[1][0][0]);
        spin_mul(&g123[0][0], &g12[0][0], &dr_gamma[2][0][0]);
        spin_mul(&g[0][0], &g123[0][0], &dr_gamma[3][0][0]);
    } else {
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                g[i][j] = 0;
    }
}

static void make_projectors(projectors *p, int dagger)
{
    const double s = dagger ? -1.0 : 1.0;
    for (int mu = 0; mu < 4; mu++)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                const double one = (i == j) ? 1.0 : 0.0;
                p->fwd[mu][i][j] = one - s * dr_gamma[mu][i][j];
                p->bwd[mu][i][j] = one + s * dr_gamma[mu][i][j];
            }
}

static size_t lattice_volume(const int dims[4])
{
    return (size_t)dims[0] * (size_t)dims[1] * (size_t)dims[2] * (size_t)dims[3];
}

static size_t site_index(const int x[4], const int dims[4])
{
    return (size_t)x[0] + (size_t)dims[0] *
        ((size_t)x[1] + (size_t)dims[1] * ((size_t)x[2] + (size_t)dims[2] * (size_t)x[3]));
}

static void site_coords(size_t site, const int dims[4], int x[4])
{
    for (int mu = 0; mu < 4; mu++) {
        x[mu] = (int)(site % (size_t)dims[mu]);
        site /= (size_t)dims[mu];
    }
}

/* acc += sign * proj (link or link^dag) psi, for one neighbour psi[4][3]. */
static void add_hop(double complex acc[4][3], const double complex proj[4][4],
                    const double complex *link, int link_dagger,
                    const double complex *psi, double sign)
{
    double complex v[4][3];
    for (int s = 0; s < 4; s++)
        for (int c = 0; c < 3; c++) {
            double complex sum = 0;
            for (int k = 0; k < 3; k++) {
                const double complex l = link_dagger ? conj(link[3 * k + c]) : link[3 * c + k];
                sum += l * psi[3 * s + k];
            }
            v[s][c] = sum;
        }
    for (int s = 0; s < 4; s++)
        for (int c = 0; c < 3; c++) {
            double complex sum = 0;
            for (int k = 0; k < 4; k++)
                sum += proj[s][k] * v[k][c];
            acc[s][c] += sign * sum;
        }
}

/* Index of a site's face position in dimension mu: the other three
 * coordinates lexicographic, the lowest dimension fastest. */
static size_t face_index(const int x[4], const int dims[4], int mu)
{
    size_t f = 0;
    for (int nu = 3; nu >= 0; nu--)
        if (nu != mu)
            f = f * (size_t)dims[nu] + (size_t)x[nu];
    return f;
}

/* out(n) = (D in)(n) (or D^dag) at one site n; with a block b, a hop out of
 * the block in a partitioned dimension reads b's faces, and the time sign
 * follows the global time coordinate. */
static void dslash_site(double complex *out, const double complex *u,
                        const double complex *in, const int dims[4],
                        double t_sign, const projectors *p, size_t site,
                        const ref_block *b)
{
    int x[4];
    site_coords(site, dims, x);
    const int t_global = b ? b->t_origin + x[3] : x[3];
    const int T = b ? b->global_T : dims[3];
    double complex acc[4][3] = {{0}};
    for (int mu = 0; mu < 4; mu++) {
        int y[4] = {x[0], x[1], x[2], x[3]};
        const int across = b && b->part[mu];

        /* forward: U_mu(n) in(n+mu) */
        const double fwd_sign = (mu == 3 && t_global == T - 1) ? t_sign : 1.0;
        const double complex *psi;
        if (across && x[mu] == dims[mu] - 1) {
            psi = b->x_fwd[mu] + 12 * face_index(x, dims, mu);
        } else {
            y[mu] = (x[mu] + 1) % dims[mu];
            psi = in + 12 * site_index(y, dims);
        }
        add_hop(acc, p->fwd[mu], u + 9 * (4 * site + (size_t)mu), 0, psi, fwd_sign);

        /* backward: U_mu(n-mu)^dag in(n-mu) */
        const double bwd_sign = (mu == 3 && t_global == 0) ? t_sign : 1.0;
        const double complex *link;
        if (across && x[mu] == 0) {
            const size_t f = face_index(x, dims, mu);
            psi = b->x_bwd[mu] + 12 * f;
            link = b->u_bwd[mu] + 9 * f;
        } else {
            y[mu] = (x[mu] + dims[mu] - 1) % dims[mu];
            const size_t back = site_index(y, dims);
            psi = in + 12 * back;
            link = u + 9 * (4 * back + (size_t)mu);
        }
        add_hop(acc, p->bwd[mu], link, 1, psi, bwd_sign);
    }
    for (int s = 0; s < 4; s++)
        for (int c = 0; c < 3; c++)
            out[3 * s + c] = acc[s][c];
}

/* Writes out only at the sites of parity `which` (all sites for ALL_SITES)
 * and, with extents even, reads in only at the other parity; so in may be
 * out itself when which is a parity (ref_schur relies on this). */
static void dslash_sites(double complex *out, const double complex *u,
                         const double complex *in, const int dims[4],
                         int t_sign, int dagger, int which, const ref_block *b)
{
    projectors p;
    make_projectors(&p, dagger);
    const size_t volume = lattice_volume(dims);
#pragma omp parallel for
    for (size_t site = 0; site < volume; site++) {
        int x[4];
        site_coords(site, dims, x);
        if (which == ALL_SITES || (x[0] + x[1] + x[2] + x[3]) % 2 == which)
            dslash_site(out + 12 * site, u, in, dims, (double)t_sign, &p, site, b);
    }
}

/* Zero out at the sites of parity `which`. */
static void zero_parity(double complex *out, const int dims[4], int which)
{
    const size_t volume = lattice_volume(dims);
#pragma omp parallel for
    for (size_t site = 0; site < volume; site++) {
        int x[4];
        site_coords(site, dims, x);
        if ((x[0] + x[1] + x[2] + x[3]) % 2 == which)
            for (int k = 0; k < 12; k++)
                out[12 * site + (size_t)k] = 0;
    }
}

void ref_dslash(double complex *out, const double complex *u,
                const double complex *in, const int dims[4], int t_sign,
                int dagger)
{
    dslash_sites(out, u, in, dims, t_sign, dagger, ALL_SITES, NULL);
}

void ref_dslash_parity(double complex *out, const double complex *u,
                       const double complex *in, const int dims[4],
                       int t_sign, int dagger, int out_parity)
{
    dslash_sites(out, u, in, dims, t_sign, dagger, out_parity, NULL);
    zero_parity(out, dims, 1 - out_parity);
}

void ref_wilson(double complex *out, const double complex *u,
                const double complex *in, const int dims[4], double mass,
                int t_sign, int dagger)
{
    ref_dslash(out, u, in, dims, t_sign, dagger);
    const size_t n = 12 * lattice_volume(dims);
#pragma omp parallel for
    for (size_t k = 0; k < n; k++)
        out[k] = (4.0 + mass) * in[k] - 0.5 * out[k];
}

void ref_wilson_block(double complex *out, const double complex *u,
                      const double complex *in, const int dims[4], double mass,
                      int t_sign, int dagger, const ref_block *b)
{
    dslash_sites(out, u, in, dims, t_sign, dagger, ALL_SITES, b);
    const size_t n = 12 * lattice_volume(dims);
#pragma omp parallel for
    for (size_t k = 0; k < n; k++)
        out[k] = (4.0 + mass) * in[k] - 0.5 * out[k];
}

void ref_schur(double complex *out, const double complex *u,
               const double complex *in, const int dims[4], double mass,
               int t_sign, int dagger)
{
    const double kappa = 1.0 / (2.0 * (4.0 + mass));
    /* odd half of out = D_oe in_e; then even half of out = D_eo (odd half
     * of out): the second pass reads only odd sites and writes only even
     * ones, so out can be its own input. */
    dslash_sites(out, u, in, dims, t_sign, dagger, 1, NULL);
    dslash_sites(out, u, out, dims, t_sign, dagger, 0, NULL);
    const size_t volume = lattice_volume(dims);
#pragma omp parallel for
    for (size_t site = 0; site < volume; site++) {
        int x[4];
        site_coords(site, dims, x);
        const int even = (x[0] + x[1] + x[2] + x[3]) % 2 == 0;
        for (int k = 0; k < 12; k++) {
            const size_t i = 12 * site + (size_t)k;
            out[i] = even ? in[i] - kappa * kappa * out[i] : 0;
        }
    }
}

void ref_apply_g5(double complex *out, const double complex *in, size_t volume)
{
    double complex g5[4][4];
    ref_gamma(4, g5);
#pragma omp parallel for
    for (size_t site = 0; site < volume; site++) {
        double complex v[12];
        for (int s = 0; s < 4; s++)
            for (int c = 0; c < 3; c++) {
                double complex sum = 0;
                for (int k = 0; k < 4; k++)
                    sum += g5[s][k] * in[12 * site + (size_t)(3 * k + c)];
                v[3 * s + c] = sum;
            }
        for (int k = 0; k < 12; k++)
            out[12 * site + (size_t)k] = v[k];
    }
}
