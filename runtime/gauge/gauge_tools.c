/*
 * gauge_tools.c: host-side gauge and spinor field tools (host order of
 * DESIGN.md: gauge [site][mu][3][3], spinor [site][4][3], complex double).
 *
 * The externally accessible functions are
 *   wd_volume               X*Y*Z*T as a size_t
 *   wd_su3_random           Haar-random SU(3): Gram-Schmidt of a complex
 *                           Gaussian matrix, divided by a cube root of its det
 *   wd_gauge_random         wd_su3_random on every link, sites in host order
 *   wd_gauge_smooth         exp(i eps H) on every link, H traceless hermitian
 *                           (off-diagonal entries complex normal with
 *                           E|H_ij|^2 = 1, diagonal real normals minus their
 *                           mean); SU(3) to rounding for any |eps| < 1e150
 *   wd_gauge_unit           every link the unit matrix
 *   wd_spinor_random        every component complex normal, E|z|^2 = 1
 *   wd_spinor_fill_random_block  (wdirac.h) one block of wd_spinor_fill_random's
 *                           field: every draw made, this block's kept
 *   wd_gauge_transform_random  wd_su3_random at every site
 *   wd_gauge_transform      U_mu(n) <- g(n) U_mu(n) g(n+mu)^dag, in place
 *   wd_spinor_transform     psi(n) <- g(n) psi(n) (dagger: g(n)^dag psi(n))
 *   wd_temporal_gauge       g(x,y,z,0) = 1, g(t+1) = g(t) U_t(t)
 *   wd_temporal_gauge_field the transformed field, cleaned (gauge_tools.h)
 *   wd_temporal_gauge_field_block  the same on a rank's block of a process
 *                           grid: the time lines handed from rank to rank
 *                           in T, g of the forward neighbours' first slices
 *                           exchanged; the same bits as one process
 *   wd_su3_unitarity_error  max over links of max_ij |(U U^dag - 1)_ij| and
 *                           |det U - 1|
 * Notes: every boundary is periodic here; the fermion time boundary sign is
 * a property of the Dirac operator, not of the gauge field.  The random
 * fields are drawn site by site in host order (so a seed fixes the field
 * whatever the thread count); the deterministic loops run under OpenMP.
 */
#include "gauge_tools.h"
#include "heatbath_link.h"
#include "wd_comm.h"
#include "wd_core.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* 3x3 complex matrices as 9 contiguous row-major entries, the layout of one
 * link in the gauge field. */

static void mat_mul(double complex *out, const double complex *a,
                    const double complex *b)
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double complex s = 0;
            for (int k = 0; k < 3; k++)
                s += a[3 * i + k] * b[3 * k + j];
            out[3 * i + j] = s;
        }
}

/* out = a b^dagger */
static void mat_mul_dag(double complex *out, const double complex *a,
                        const double complex *b)
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double complex s = 0;
            for (int k = 0; k < 3; k++)
                s += a[3 * i + k] * conj(b[3 * j + k]);
            out[3 * i + j] = s;
        }
}

static void mat_unit(double complex *m)
{
    for (int k = 0; k < 9; k++)
        m[k] = (k % 4 == 0) ? 1.0 : 0.0;
}

static double complex mat_det(const double complex *m)
{
    return m[0] * (m[4] * m[8] - m[5] * m[7])
         - m[1] * (m[3] * m[8] - m[5] * m[6])
         + m[2] * (m[3] * m[7] - m[4] * m[6]);
}

static double complex complex_normal(wd_rng *r)
{
    const double re = wd_rng_normal(r);
    const double im = wd_rng_normal(r);
    return (re + I * im) * sqrt(0.5);
}

/* Orthonormalise the rows of m (Gram-Schmidt, each projection done twice so
 * that orthogonality holds to rounding even for an ill-conditioned start),
 * then divide by the principal cube root of the determinant, which has
 * modulus 1 by then.  Haar: Gram-Schmidt's triangular factor has a positive
 * real diagonal (the phase fix a library QR would need), so
 * project(m W) = project(m) W for every W in SU(3); a complex Gaussian m is
 * distributed as m W, hence so is the result as result W, and the only such
 * measure on SU(3) is Haar's.  Near a unitary matrix the change is of the
 * order of the defect, so this also serves to reunitarise. */
static void project_su3(double complex *m)
{
    for (int i = 0; i < 3; i++) {
        double complex *row = m + 3 * i;
        for (int pass = 0; pass < 2; pass++)
            for (int j = 0; j < i; j++) {
                const double complex *prev = m + 3 * j;
                double complex overlap = 0;
                for (int k = 0; k < 3; k++)
                    overlap += conj(prev[k]) * row[k];
                for (int k = 0; k < 3; k++)
                    row[k] -= overlap * prev[k];
            }
        double norm2 = 0;
        for (int k = 0; k < 3; k++)
            norm2 += creal(row[k] * conj(row[k]));
        const double scale = 1.0 / sqrt(norm2);
        for (int k = 0; k < 3; k++)
            row[k] *= scale;
    }
    const double complex phase = cexp(-I * carg(mat_det(m)) / 3.0);
    for (int k = 0; k < 9; k++)
        m[k] *= phase;
}

/* exp(a) for a = i eps H: scale a by 2^-s until its Frobenius norm is at
 * most 1/2, sum the Taylor series until a term drops below 1e-20 of the
 * unit matrix (at most ~20 terms), then square s times.  Reunitarising
 * after every squaring keeps the rounding from doubling at each one, so the
 * result is SU(3) to rounding even for a huge eps (where it is no longer an
 * accurate exponential, and need not be). */
static void su3_exp(double complex *out, const double complex *a)
{
    double norm2 = 0;
    for (int k = 0; k < 9; k++)
        norm2 += creal(a[k] * conj(a[k]));
    int squarings = 0;
    double scale = 1.0;
    while (sqrt(norm2) * scale > 0.5) {
        scale *= 0.5;
        squarings++;
    }

    double complex x[9], term[9], next[9];
    for (int k = 0; k < 9; k++)
        x[k] = a[k] * scale;
    mat_unit(out);
    mat_unit(term);
    for (int n = 1; n <= 40; n++) {
        mat_mul(next, term, x);
        double tnorm2 = 0;
        for (int k = 0; k < 9; k++) {
            term[k] = next[k] / n;
            out[k] += term[k];
            tnorm2 += creal(term[k] * conj(term[k]));
        }
        if (tnorm2 < 1e-40)
            break;
    }
    project_su3(out);
    for (int s = 0; s < squarings; s++) {
        mat_mul(next, out, out);
        for (int k = 0; k < 9; k++)
            out[k] = next[k];
        project_su3(out);
    }
}

void wd_su3_random(double complex m[3][3], wd_rng *r)
{
    double complex *flat = &m[0][0];
    for (int k = 0; k < 9; k++)
        flat[k] = complex_normal(r);
    project_su3(flat);
}

void wd_gauge_random(double complex *u, const int dims[4], wd_rng *r)
{
    const size_t nlinks = 4 * wd_volume(dims);
    for (size_t l = 0; l < nlinks; l++)
        wd_su3_random((double complex (*)[3])(u + 9 * l), r);
}

void wd_gauge_smooth(double complex *u, const int dims[4], double eps, wd_rng *r)
{
    const size_t nlinks = 4 * wd_volume(dims);
    for (size_t l = 0; l < nlinks; l++) {
        double complex h[9];
        for (int i = 0; i < 3; i++)
            for (int j = i + 1; j < 3; j++) {
                h[3 * i + j] = complex_normal(r);
                h[3 * j + i] = conj(h[3 * i + j]);
            }
        double d[3];
        for (int i = 0; i < 3; i++)
            d[i] = wd_rng_normal(r);
        const double mean = (d[0] + d[1] + d[2]) / 3.0;
        for (int i = 0; i < 3; i++)
            h[4 * i] = d[i] - mean;

        double complex a[9];
        for (int k = 0; k < 9; k++)
            a[k] = I * eps * h[k];
        su3_exp(u + 9 * l, a);
    }
}

void wd_gauge_unit(double complex *u, const int dims[4])
{
    const size_t nlinks = 4 * wd_volume(dims);
    for (size_t l = 0; l < nlinks; l++)
        mat_unit(u + 9 * l);
}

void wd_spinor_random(double complex *psi, const int dims[4], wd_rng *r)
{
    const size_t n = 12 * wd_volume(dims);
    for (size_t k = 0; k < n; k++)
        psi[k] = complex_normal(r);
}

wd_status wd_spinor_fill_random(double *psi, const int dims[4], uint64_t seed)
{
    const wd_status st = wd_check_dims(dims);
    if (st != WD_OK)
        return st;
    wd_rng r;
    wd_rng_seed(&r, seed);
    wd_spinor_random((double complex *)(void *)psi, dims, &r);
    return WD_OK;
}

wd_status wd_spinor_fill_random_block(double *psi_block, const wd_lattice *lat, uint64_t seed)
{
    if (!psi_block || !lat)
        return wd_fail(WD_ERR_INVALID, "wd_spinor_fill_random_block: psi_block and lat must not "
                       "be NULL");
    const wd_status st = wd_check_dims(lat->dims);
    if (st != WD_OK)
        return st;
    /* the whole field's draws in host order, this block's kept */
    wd_rng r;
    wd_rng_seed(&r, seed);
    const int *D = lat->dims, *L = lat->local, *o = lat->origin;
    double complex *out = (double complex *)(void *)psi_block;
    int x[4];
    for (x[3] = 0; x[3] < D[3]; x[3]++)
        for (x[2] = 0; x[2] < D[2]; x[2]++)
            for (x[1] = 0; x[1] < D[1]; x[1]++)
                for (x[0] = 0; x[0] < D[0]; x[0]++) {
                    int in = 1;
                    for (int mu = 0; mu < 4; mu++)
                        in &= x[mu] >= o[mu] && x[mu] < o[mu] + L[mu];
                    const size_t ls = in ? (size_t)(x[0] - o[0]) + (size_t)L[0] *
                        ((size_t)(x[1] - o[1]) + (size_t)L[1] * ((size_t)(x[2] - o[2]) +
                        (size_t)L[2] * (size_t)(x[3] - o[3]))) : 0;
                    for (int k = 0; k < 12; k++) {
                        const double complex z = complex_normal(&r);
                        if (in)
                            out[12 * ls + (size_t)k] = z;
                    }
                }
    return WD_OK;
}

void wd_gauge_transform_random(double complex *g, const int dims[4], wd_rng *r)
{
    const size_t volume = wd_volume(dims);
    for (size_t site = 0; site < volume; site++)
        wd_su3_random((double complex (*)[3])(g + 9 * site), r);
}

void wd_gauge_transform(double complex *u, const double complex *g, const int dims[4])
{
    const size_t volume = wd_volume(dims);
#pragma omp parallel for
    for (size_t site = 0; site < volume; site++) {
        int x[4];
        size_t rest = site;
        for (int mu = 0; mu < 4; mu++) {
            x[mu] = (int)(rest % (size_t)dims[mu]);
            rest /= (size_t)dims[mu];
        }
        for (int mu = 0; mu < 4; mu++) {
            int y[4] = {x[0], x[1], x[2], x[3]};
            y[mu] = (y[mu] + 1) % dims[mu];
            const size_t fwd = (size_t)y[0] + (size_t)dims[0] *
                ((size_t)y[1] + (size_t)dims[1] * ((size_t)y[2] + (size_t)dims[2] * (size_t)y[3]));
            double complex *link = u + 9 * (4 * site + (size_t)mu);
            double complex tmp[9];
            mat_mul(tmp, g + 9 * site, link);
            mat_mul_dag(link, tmp, g + 9 * fwd);
        }
    }
}

void wd_spinor_transform(double complex *psi, const double complex *g,
                         const int dims[4], int dagger)
{
    const size_t volume = wd_volume(dims);
#pragma omp parallel for
    for (size_t site = 0; site < volume; site++) {
        const double complex *m = g + 9 * site;
        double complex *p = psi + 12 * site;
        for (int spin = 0; spin < 4; spin++) {
            double complex v[3];
            for (int i = 0; i < 3; i++) {
                v[i] = 0;
                for (int k = 0; k < 3; k++)
                    v[i] += (dagger ? conj(m[3 * k + i]) : m[3 * i + k]) * p[3 * spin + k];
            }
            for (int i = 0; i < 3; i++)
                p[3 * spin + i] = v[i];
        }
    }
}

void wd_temporal_gauge(double complex *g, const double complex *u, const int dims[4])
{
    /* With g(t+1) = g(t) U_t(t), U'_t(t) = g(t) U_t(t) g(t+1)^dag
     * = g(t) U_t(t) U_t(t)^dag g(t)^dag = 1 for t < T-1, and at t = T-1
     * U'_t = g(T-1) U_t(T-1) g(0)^dag = U_t(0) U_t(1) ... U_t(T-1), the
     * Polyakov line.  Each time line is a sequential product; the lines are
     * independent. */
    const size_t slice = (size_t)dims[0] * (size_t)dims[1] * (size_t)dims[2];
    const int nt = dims[3];
#pragma omp parallel for
    for (size_t s = 0; s < slice; s++) {
        mat_unit(g + 9 * s);
        for (int t = 0; t + 1 < nt; t++) {
            const size_t here = s + slice * (size_t)t;
            mat_mul(g + 9 * (here + slice), g + 9 * here, u + 9 * (4 * here + 3));
        }
    }
}

void wd_temporal_gauge_field(double complex *uf, double complex *g, const double complex *u,
                             const int dims[4])
{
    const size_t vol = (size_t)dims[0] * dims[1] * dims[2] * dims[3];
    const size_t slice = vol / (size_t)dims[3];
    memcpy(uf, u, vol * 36 * sizeof *uf);
    wd_temporal_gauge(g, u, dims);
    wd_gauge_transform(uf, g, dims);
#pragma omp parallel for
    for (size_t l = 0; l < vol * 4; l++)
        wd_su3_reunitarize((double *)(uf + 9 * l));
#pragma omp parallel for
    for (size_t site = 0; site < vol - slice; site++)
        mat_unit(uf + 9 * (4 * site + 3));
}

/* dst[f] = src's 9 complex of site f of the mu-slice `slice` (per_site
 * complex a site at offset `offset`); face order: the other three
 * coordinates, the lowest dimension fastest */
static void face_of(double complex *dst, const double complex *src, const int L[4], int mu,
                    int slice, size_t per_site, size_t offset)
{
    const size_t n = wd_volume(L) / (size_t)L[mu];
    for (size_t f = 0; f < n; f++) {
        int c[4];
        size_t r = f;
        for (int nu = 0; nu < 4; nu++)
            if (nu != mu) {
                c[nu] = (int)(r % (size_t)L[nu]);
                r /= (size_t)L[nu];
            }
        c[mu] = slice;
        const size_t site =
            c[0] + (size_t)L[0] * (c[1] + (size_t)L[1] * (c[2] + (size_t)L[2] * (size_t)c[3]));
        memcpy(dst + 9 * f, src + per_site * site + offset, 9 * sizeof *dst);
    }
}

wd_status wd_temporal_gauge_field_block(double complex *uf, double complex *g,
                                        const double complex *u, const wd_grid *grid)
{
    const int *L = grid->local;
    const size_t vol = wd_volume(L), slice = vol / (size_t)L[3];
    size_t face_max = 0;
    for (int mu = 0; mu < 4; mu++)
        if (vol / (size_t)L[mu] > face_max)
            face_max = vol / (size_t)L[mu];
    /* g(t) for the whole block; next: g at the first slice after it */
    double complex *next = malloc(slice * 9 * sizeof *next);
    double complex *send = malloc(face_max * 18 * sizeof *send);
    /* four forward faces and one for the backward side, dropped */
    double complex *ghost = malloc(face_max * 9 * 5 * sizeof *ghost);
    wd_status st = wd_comm_agree(next && send && ghost ? WD_OK
                                 : wd_fail(WD_ERR_NOMEM, "temporal gauge: cannot allocate the "
                                           "faces of a %zu-site block", vol));
    /* the time lines pass from rank to rank in T, in order: a rank starts
     * from the unit matrix at global t = 0, else from its backward
     * neighbour's product; the same multiplications as wd_temporal_gauge.
     * Point to point only (a collective here would wait on a rank blocked
     * in its receive); a rank whose receive failed still passes its lines
     * on, so nobody waits forever, and the verdict is agreed after. */
    if (st == WD_OK) {
        wd_status my = WD_OK;
        if (grid->coord[3] > 0)
            my = wd_comm_recv(g, slice * 9 * sizeof *g, grid->nbr[3][WD_BWD], 41);
        else
            for (size_t s = 0; s < slice; s++)
                mat_unit(g + 9 * s);
#pragma omp parallel for
        for (size_t s = 0; s < slice; s++)
            for (int t = 0; t + 1 < L[3]; t++) {
                const size_t here = s + slice * (size_t)t;
                mat_mul(g + 9 * (here + slice), g + 9 * here, u + 9 * (4 * here + 3));
            }
        if (grid->coord[3] + 1 < grid->procs[3]) {
#pragma omp parallel for
            for (size_t s = 0; s < slice; s++) {
                const size_t last = s + slice * (size_t)(L[3] - 1);
                mat_mul(next + 9 * s, g + 9 * last, u + 9 * (4 * last + 3));
            }
            const wd_status sent = wd_comm_send(next, slice * 9 * sizeof *next,
                                                grid->nbr[3][WD_FWD], 41);
            if (my == WD_OK)
                my = sent;
        }
        st = wd_comm_agree(my);
    }
    /* g at the forward neighbour's first slice of every partitioned mu */
    double complex *fwd[4] = {NULL, NULL, NULL, NULL};
    for (int mu = 0; mu < 4 && st == WD_OK; mu++) {
        if (!grid->partitioned[mu])
            continue;
        const size_t n = vol / (size_t)L[mu];
        fwd[mu] = ghost + 9 * face_max * (size_t)mu;
        face_of(send, g, L, mu, 0, 9, 0);
        face_of(send + 9 * n, g, L, mu, L[mu] - 1, 9, 0);
        const void *out[2];
        void *in[2];
        out[WD_BWD] = send;
        out[WD_FWD] = send + 9 * n;
        in[WD_FWD] = fwd[mu];
        in[WD_BWD] = ghost + 9 * face_max * 4;   /* the backward neighbour's last slice: unused */
        wd_comm_halo h;
        wd_status my = wd_comm_halo_start(&h, grid, mu, out, in, n * 9 * sizeof *send);
        if (my == WD_OK)
            my = wd_comm_halo_wait(&h);
        st = wd_comm_agree(my);
    }
    if (st == WD_OK) {
        /* U'_mu(n) = g(n) U_mu(n) g(n + mu)^dag, reunitarized; the temporal
         * links below global t = T-1 exactly the unit matrix */
        const int T = grid->dims[3];
#pragma omp parallel for
        for (size_t site = 0; site < vol; site++) {
            int x[4];
            size_t rest = site;
            for (int mu = 0; mu < 4; mu++) {
                x[mu] = (int)(rest % (size_t)L[mu]);
                rest /= (size_t)L[mu];
            }
            for (int mu = 0; mu < 4; mu++) {
                const double complex *gf;
                if (x[mu] + 1 == L[mu] && grid->partitioned[mu]) {
                    size_t f = 0;
                    for (int nu = 3; nu >= 0; nu--)
                        if (nu != mu)
                            f = f * (size_t)L[nu] + (size_t)x[nu];
                    gf = fwd[mu] + 9 * f;
                } else {
                    int y[4] = {x[0], x[1], x[2], x[3]};
                    y[mu] = (y[mu] + 1) % L[mu];
                    gf = g + 9 * ((size_t)y[0] + (size_t)L[0] * ((size_t)y[1] + (size_t)L[1] *
                                  ((size_t)y[2] + (size_t)L[2] * (size_t)y[3])));
                }
                double complex *link = uf + 9 * (4 * site + (size_t)mu);
                double complex tmp[9];
                mat_mul(tmp, g + 9 * site, u + 9 * (4 * site + (size_t)mu));
                mat_mul_dag(link, tmp, gf);
                wd_su3_reunitarize((double *)link);
                if (mu == 3 && grid->origin[3] + x[3] < T - 1)
                    mat_unit(link);
            }
        }
    }
    free(next);
    free(send);
    free(ghost);
    return st;
}

double wd_su3_unitarity_error(const double complex *u, size_t nlinks)
{
    double err = 0;
#pragma omp parallel for reduction(max : err)
    for (size_t l = 0; l < nlinks; l++) {
        const double complex *m = u + 9 * l;
        double complex uud[9];
        mat_mul_dag(uud, m, m);
        double e = cabs(mat_det(m) - 1.0);
        /* Every entry enters the determinant, so a NaN anywhere in the link
         * shows there; fmax and the max reduction would drop it. */
        const int broken = isnan(e);
        for (int k = 0; k < 9; k++)
            e = fmax(e, cabs(uud[k] - ((k % 4 == 0) ? 1.0 : 0.0)));
        if (broken)
            e = INFINITY;
        if (e > err)
            err = e;
    }
    return err;
}
