/*
 * coarse_layout.c: the packed layouts of a coarse level (wd_coarse_layout.h,
 * wd_coarse_kernel.h) and the packing of host fields into them.
 *
 * The externally accessible functions are
 *   wd_coarse_layout_make     sizes of the packed spinor and links
 *   wd_pack_coarse_spinor     host spinor -> float or 16-bit reals (+ norms)
 *   wd_unpack_coarse_spinor   the inverse
 *   wd_pack_coarse_links      host links -> packed blocks (+ norms)
 * Half precision rounds real / norm * WD_HALF_SCALE to the nearest 16-bit
 * integer (in double), so |stored| <= WD_HALF_SCALE and a real's error is
 * at most norm / (2 WD_HALF_SCALE); an all-zero site or block has norm 0
 * and stores zeros.
 */
#include <math.h>
#include <string.h>

#include "wd_coarse_layout.h"
#include "wd_core.h"
#include "wd_layout.h"  /* CMPLX where the C library lacks it */

wd_status wd_coarse_layout_make(wd_coarse_layout *l, int volume, int nvec, int precision)
{
    if (precision != WD_PREC_SINGLE && precision != WD_PREC_HALF)
        return wd_fail(WD_ERR_INVALID, "coarse layout: precision %d: the coarse kernels store "
                       "single (4) or half (2)", precision);
    if (nvec < 1 || nvec > 256)
        return wd_fail(WD_ERR_INVALID, "coarse layout: nvec %d: must be in [1, 256]", nvec);
    if (volume < 1)
        return wd_fail(WD_ERR_INVALID, "coarse layout: volume %d: must be at least 1", volume);
    memset(l, 0, sizeof *l);
    l->precision = precision;
    l->nvec = nvec;
    l->ncomp = 2 * nvec;
    l->volume = volume;
    const size_t n = (size_t)l->ncomp;
    l->spinor_bytes = (size_t)volume * 2 * n * precision;
    l->link_bytes = (size_t)volume * WD_COARSE_BLOCKS * 2 * n * n * precision;
    if (precision == WD_PREC_HALF) {
        l->spinor_norm_bytes = (size_t)volume * sizeof(float);
        l->link_norm_bytes = (size_t)volume * WD_COARSE_BLOCKS * sizeof(float);
    }
    return WD_OK;
}

/* largest |real| of count complex numbers */
static double max_real(const double complex *z, size_t count)
{
    double m = 0;
    for (size_t k = 0; k < count; ++k) {
        m = fmax(m, fabs(creal(z[k])));
        m = fmax(m, fabs(cimag(z[k])));
    }
    return m;
}

/* real r of a site or block in its precision: float, or 16-bit times scale */
static void store(int precision, void *dst, size_t at, double v, double scale)
{
    if (precision == WD_PREC_SINGLE)
        ((float *)dst)[at] = (float)v;
    else
        ((short *)dst)[at] = (short)lrint(v * scale);
}

void wd_pack_coarse_spinor(const wd_coarse_layout *l, void *dst, float *norm,
                           const double complex *host)
{
    const size_t n = (size_t)l->ncomp;
#pragma omp parallel for schedule(static)
    for (int s = 0; s < l->volume; ++s) {
        const double complex *z = host + (size_t)s * n;
        double scale = 1;
        if (l->precision == WD_PREC_HALF) {
            const double m = max_real(z, n);
            norm[s] = (float)m;
            /* the kernels read the float norm: scale by what they read */
            scale = norm[s] > 0 ? WD_HALF_SCALE / (double)norm[s] : 0;
        }
        const size_t base = (size_t)s * 2 * n;
        for (size_t i = 0; i < n; ++i) {
            store(l->precision, dst, base + i, creal(z[i]), scale);
            store(l->precision, dst, base + n + i, cimag(z[i]), scale);
        }
    }
}

void wd_unpack_coarse_spinor(const wd_coarse_layout *l, double complex *host, const void *src,
                             const float *norm)
{
    const size_t n = (size_t)l->ncomp;
#pragma omp parallel for schedule(static)
    for (int s = 0; s < l->volume; ++s) {
        const size_t base = (size_t)s * 2 * n;
        double complex *z = host + (size_t)s * n;
        if (l->precision == WD_PREC_SINGLE) {
            const float *f = (const float *)src + base;
            for (size_t i = 0; i < n; ++i)
                z[i] = CMPLX(f[i], f[n + i]);
        } else {
            const short *h = (const short *)src + base;
            const double scale = norm[s] / (double)WD_HALF_SCALE;
            for (size_t i = 0; i < n; ++i)
                z[i] = CMPLX(h[i] * scale, h[n + i] * scale);
        }
    }
}

void wd_pack_coarse_links(const wd_coarse_layout *l, void *dst, float *norm,
                          const double complex *host)
{
    const size_t n = (size_t)l->ncomp, block = n * n;
#pragma omp parallel for schedule(static)
    for (int s = 0; s < l->volume; ++s) {
        for (int d = 0; d < WD_COARSE_BLOCKS; ++d) {
            /* host block: row-major X[i][j]; packed: column j's real plane
             * then its imaginary plane, i fastest */
            const double complex *x = host + ((size_t)s * WD_COARSE_BLOCKS + d) * block;
            double scale = 1;
            if (l->precision == WD_PREC_HALF) {
                float *nm = norm + (size_t)s * WD_COARSE_BLOCKS + d;
                *nm = (float)max_real(x, block);
                scale = *nm > 0 ? WD_HALF_SCALE / (double)*nm : 0;
            }
            const size_t base = ((size_t)s * WD_COARSE_BLOCKS + d) * 2 * block;
            for (size_t j = 0; j < n; ++j)
                for (size_t i = 0; i < n; ++i) {
                    store(l->precision, dst, base + 2 * j * n + i, creal(x[i * n + j]), scale);
                    store(l->precision, dst, base + (2 * j + 1) * n + i, cimag(x[i * n + j]),
                          scale);
                }
        }
    }
}
