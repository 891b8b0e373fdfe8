/*
 * layout_tmpl.c: packing of host fields into one precision's internal
 * layout, compiled once per precision with -DWD_PREC=d|s|h.
 *
 * The externally accessible functions are (P = d, s, h)
 *   wd_pack_spinor_P    one parity of a host spinor -> internal basis, stored reals
 *   wd_unpack_spinor_P  the inverse, written to that parity's host sites
 *   wd_pack_gauge_P     every link -> the stored reals of its reconstruction
 *   wd_pack_clover_P    one parity of host clover blocks -> stored reals
 * The layout rules themselves (basis change, stored reals, fixed-point
 * scale) come from the generated wd_physics.h.
 */
#include <math.h>
#include <string.h>

#include "wd_layout.h"
#include "wd_physics.h"

#define WD_CAT_(a, b) a##_##b
#define WD_CAT(a, b) WD_CAT_(a, b)
#define PFN(f) WD_CAT(f, WD_PREC)

#define PREC_d 8
#define PREC_s 4
#define PREC_h 2
#define WD_PREC_BYTES WD_CAT(PREC, WD_PREC)

#if WD_PREC_BYTES == 8
typedef double store_t;
#define FIXED 0
#elif WD_PREC_BYTES == 4
typedef float store_t;
#define FIXED 0
#else
typedef short store_t;
#define FIXED 1
#endif

static size_t full_index(const int dims[4], int cb, int parity, int *t_out)
{
    int c[4];
    wd_cb_coords(dims, parity, cb, c);
    if (t_out)
        *t_out = c[3];
    return (size_t)c[0] +
           (size_t)dims[0] * (c[1] + (size_t)dims[1] * (c[2] + (size_t)dims[2] * c[3]));
}

static store_t to_store(double v, double scale)
{
#if FIXED
    return (store_t)lrint(v * scale);
#else
    (void)scale;
    return (store_t)v;
#endif
}

void PFN(wd_pack_spinor)(const wd_spinor_layout *l, void *dst, float *norm,
                         const double complex *host, const int dims[4], int parity)
{
    store_t *out = dst;
    const int w = l->width;
#pragma omp parallel for schedule(static)
    for (int cb = 0; cb < l->volume_cb; ++cb) {
        const double complex *h = host + 12 * full_index(dims, cb, parity, NULL);
        double re[WD_SPINOR_REALS];
        for (int s = 0; s < 4; ++s)
            for (int c = 0; c < 3; ++c) {
                double complex v = 0;
                for (int k = 0; k < 4; ++k)
                    v += CMPLX(wd_basis_change[s][k][0], wd_basis_change[s][k][1]) * h[3 * k + c];
                re[2 * (3 * s + c)] = creal(v);
                re[2 * (3 * s + c) + 1] = cimag(v);
            }
        double scale = 1;
#if FIXED
        double m = 0;
        for (int r = 0; r < WD_SPINOR_REALS; ++r)
            m = fmax(m, fabs(re[r]));
        norm[cb] = (float)m;
        scale = m > 0 ? WD_HALF_SCALE / m : 0;
#else
        (void)norm;
#endif
        for (int r = 0; r < WD_SPINOR_REALS; ++r)
            out[((size_t)(r / w) * l->stride + cb) * w + r % w] = to_store(re[r], scale);
    }
}

void PFN(wd_unpack_spinor)(const wd_spinor_layout *l, double complex *host,
                           const void *src, const float *norm, const int dims[4],
                           int parity)
{
    const store_t *in = src;
    const int w = l->width;
#pragma omp parallel for schedule(static)
    for (int cb = 0; cb < l->volume_cb; ++cb) {
        double complex *h = host + 12 * full_index(dims, cb, parity, NULL);
#if FIXED
        const double scale = norm[cb] / (double)WD_HALF_SCALE;
#else
        const double scale = 1;
        (void)norm;
#endif
        double complex v[4][3];
        for (int s = 0; s < 4; ++s)
            for (int c = 0; c < 3; ++c) {
                const int r = 2 * (3 * s + c);
                v[s][c] = CMPLX(scale * in[((size_t)(r / w) * l->stride + cb) * w + r % w],
                                scale * in[((size_t)((r + 1) / w) * l->stride + cb) * w + (r + 1) % w]);
            }
        for (int s = 0; s < 4; ++s)
            for (int c = 0; c < 3; ++c) {
                double complex acc = 0;
                for (int k = 0; k < 4; ++k)
                    acc += CMPLX(wd_basis_change_inv[s][k][0], wd_basis_change_inv[s][k][1]) * v[k][c];
                h[3 * s + c] = acc;
            }
    }
}

/* the reals a link stores for its reconstruction, in stored order */
static void compress_link(const double complex *m, int recon, double *q)
{
    if (recon == 8) {
        for (int i = 0; i < 3; ++i) {
            const double complex z = m[3 * wd_r8_complex[i][0] + wd_r8_complex[i][1]];
            q[2 * i] = creal(z);
            q[2 * i + 1] = cimag(z);
        }
        for (int i = 0; i < 2; ++i)
            q[6 + i] = carg(m[3 * wd_r8_phases[i][0] + wd_r8_phases[i][1]]) / WD_R8_PHASE_SCALE;
        return;
    }
    const int *idx = recon == 18 ? wd_recon18_stored : wd_recon12_stored;
    for (int i = 0; i < recon; ++i) {
        const double complex z = m[idx[i] / 2];
        q[i] = idx[i] % 2 ? cimag(z) : creal(z);
    }
}

static void store_link(const wd_gauge_layout *l, store_t *out, const int *elem, const int *comp,
                       int mu, int parity, long site, const double complex *m)
{
    double q[18];
    compress_link(m, l->recon, q);
    for (int r = 0; r < l->recon; ++r) {
        const int k = elem[r];
        const long at = l->goff[mu][parity] + (long)l->roff[k] * l->gstride[mu] +
                        site * l->width[k] + comp[r];
        out[at] = to_store(q[r], WD_HALF_SCALE);
    }
}

void PFN(wd_pack_gauge)(const wd_gauge_layout *l, void *dst, const double complex *u,
                        const double complex *const ghost[4], const int dims[4])
{
    store_t *out = dst;
    int elem[18], comp[18];
    for (int k = 0; k < l->elements; ++k)
        for (int c = 0; c < l->width[k]; ++c) {
            elem[l->roff[k] + c] = k;
            comp[l->roff[k] + c] = c;
        }
    const int volume_cb = dims[0] * dims[1] * dims[2] * dims[3] / 2;
    for (int mu = 0; mu < 4; ++mu) {
        const int only_last_slice = l->gauge_fix && mu == 3;
        const int first = only_last_slice ? l->tslice_cb0 : 0;
        for (int parity = 0; parity < 2; ++parity) {
#pragma omp parallel for schedule(static)
            for (int cb = first; cb < volume_cb; ++cb)
                store_link(l, out, elem, comp, mu, parity, cb - first,
                           u + 9 * (4 * full_index(dims, cb, parity, NULL) + mu));
        }
        if (!l->halo.part[mu] || !ghost || !ghost[mu])
            continue;
        /* the backward ghost: face site f has parity (its other coordinates
         * + L_mu - 1) % 2 and lands at index ghost + f / 2 of that block */
        const int base = l->halo.ghost[mu][1] - (only_last_slice ? l->tslice_bwd : 0);
        const int nface = 2 * l->halo.face_cb[mu];
#pragma omp parallel for schedule(static)
        for (int f = 0; f < nface; ++f) {
            int c[3], r = f, sum = dims[mu] - 1;
            for (int k = 0, nu = 0; nu < 4; ++nu)
                if (nu != mu) {
                    c[k] = r % dims[nu];
                    r /= dims[nu];
                    sum += c[k++];
                }
            store_link(l, out, elem, comp, mu, sum & 1, base + f / 2, ghost[mu] + 9 * (size_t)f);
        }
    }
}

void PFN(wd_pack_clover)(const wd_clover_layout *l, void *dst, float *norm,
                         const double *blocks, const int dims[4], int parity)
{
    store_t *out = dst;
    const int w = l->width;
#pragma omp parallel for schedule(static)
    for (int cb = 0; cb < l->volume_cb; ++cb) {
        const double *h = blocks + WD_CLOVER_SITE_REALS * full_index(dims, cb, parity, NULL);
        for (int b = 0; b < 2; ++b) {
            const double *q = h + b * WD_CLOVER_BLOCK_REALS;
            double scale = 1;
#if FIXED
            double m = 0;
            for (int r = 0; r < WD_CLOVER_BLOCK_REALS; ++r)
                m = fmax(m, fabs(WD_CLOVER_SCALE * q[r]));
            norm[2 * cb + b] = (float)m;
            scale = m > 0 ? WD_HALF_SCALE / m : 0;
#else
            (void)norm;
#endif
            for (int r = 0; r < WD_CLOVER_BLOCK_REALS; ++r) {
                const int at = b * WD_CLOVER_BLOCK_REALS + r;
                out[((size_t)(at / w) * l->stride + cb) * w + at % w] =
                    to_store(WD_CLOVER_SCALE * q[r], scale);
            }
        }
    }
}
