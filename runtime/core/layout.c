/*
 * layout.c: geometry of the internal field layouts and the dispatch of the
 * per-precision packing functions of layout_tmpl.c.
 *
 * The externally accessible functions are
 *   wd_spinor_layout_make, wd_gauge_layout_make   sizes, offsets, strides
 *   wd_pack_spinor, wd_unpack_spinor, wd_pack_gauge  by the layout's precision
 *   wd_dslash_args_set                             kernel arguments
 */
#include <limits.h>
#include <stdint.h>

#include "wd_core.h"
#include "wd_layout.h"
#include "wd_physics.h"

static const wd_precision_layout *precision_layout(int precision)
{
    for (size_t i = 0; i < sizeof wd_precision_layouts / sizeof wd_precision_layouts[0]; ++i)
        if (wd_precision_layouts[i].precision == precision)
            return &wd_precision_layouts[i];
    return NULL;
}

static int recon_slot(int recon)
{
    for (size_t i = 0; i < sizeof wd_recons / sizeof wd_recons[0]; ++i)
        if (wd_recons[i] == recon)
            return (int)i;
    return -1;
}

wd_status wd_spinor_layout_make(wd_spinor_layout *l, const int dims[4], int precision, int pad)
{
    wd_status st = wd_check_dims(dims);
    if (st != WD_OK)
        return st;
    const wd_precision_layout *p = precision_layout(precision);
    if (!p)
        return wd_fail(WD_ERR_INVALID, "precision %d: must be 8, 4 or 2 bytes", precision);
    if (pad < 0 || pad > 65536)
        return wd_fail(WD_ERR_INVALID, "padding %d: must be in [0, 65536] elements", pad);
    l->precision = precision;
    l->width = p->spinor_width;
    l->elements = WD_SPINOR_REALS / p->spinor_width;
    l->volume_cb = dims[0] * dims[1] * dims[2] * dims[3] / 2;
    l->stride = l->volume_cb + pad;
    l->bytes = (size_t)l->elements * l->stride * l->width * precision;
    l->norm_bytes = p->has_norm ? (size_t)l->volume_cb * sizeof(float) : 0;
    return WD_OK;
}

wd_status wd_gauge_layout_make(wd_gauge_layout *l, const int dims[4], int precision,
                               int recon, int gauge_fix, int pad)
{
    wd_status st = wd_check_dims(dims);
    if (st != WD_OK)
        return st;
    const wd_precision_layout *p = precision_layout(precision);
    if (!p)
        return wd_fail(WD_ERR_INVALID, "precision %d: must be 8, 4 or 2 bytes", precision);
    if (recon_slot(recon) < 0)
        return wd_fail(WD_ERR_INVALID, "reconstruction %d: must be 18, 12 or 8", recon);
    if (pad < 0 || pad > 65536)
        return wd_fail(WD_ERR_INVALID, "padding %d: must be in [0, 65536] elements", pad);
    const int volume_cb = dims[0] * dims[1] * dims[2] * dims[3] / 2;
    const int slice_cb = dims[0] * dims[1] * dims[2] / 2;
    l->precision = precision;
    l->recon = recon;
    l->gauge_fix = gauge_fix ? 1 : 0;
    const int *widths = p->gauge_widths[recon_slot(recon)];
    l->elements = 0;
    for (int k = 0, r = 0; widths[k] && k < WD_LAYOUT_MAX_ELEMENTS; r += widths[k++]) {
        l->width[k] = widths[k];
        l->roff[k] = r;
        l->elements = k + 1;
    }
    l->tslice_cb0 = volume_cb - slice_cb;
    /* blocks start on 64-byte boundaries, so every vector element is aligned */
    const long align = 64 / precision;
    long off = 0;
    for (int mu = 0; mu < 4; ++mu) {
        const int sites = l->gauge_fix && mu == 3 ? slice_cb : volume_cb;
        l->gstride[mu] = sites + pad;
        for (int parity = 0; parity < 2; ++parity) {
            l->goff[mu][parity] = off;
            off += ((long)recon * l->gstride[mu] + align - 1) / align * align;
        }
    }
    l->bytes = (size_t)off * precision;
    return WD_OK;
}

void wd_pack_spinor(const wd_spinor_layout *l, void *dst, float *norm,
                    const double complex *host, const int dims[4], int parity)
{
    switch (l->precision) {
    case 8: wd_pack_spinor_d(l, dst, norm, host, dims, parity); break;
    case 4: wd_pack_spinor_s(l, dst, norm, host, dims, parity); break;
    default: wd_pack_spinor_h(l, dst, norm, host, dims, parity); break;
    }
}

void wd_unpack_spinor(const wd_spinor_layout *l, double complex *host, const void *src,
                      const float *norm, const int dims[4], int parity)
{
    switch (l->precision) {
    case 8: wd_unpack_spinor_d(l, host, src, norm, dims, parity); break;
    case 4: wd_unpack_spinor_s(l, host, src, norm, dims, parity); break;
    default: wd_unpack_spinor_h(l, host, src, norm, dims, parity); break;
    }
}

/* Recon 8 divides by N^2 = |a2|^2 + |a3|^2 (paper, appendix A): a link with
 * N = 0, such as the unit matrix, cannot be stored.  Gauge-fixed layouts
 * store temporal links only on the last time slice. */
#define R8_MIN_N2 1e-12

static wd_status check_recon8(const wd_gauge_layout *l, const double complex *u, const int dims[4])
{
    const size_t vol = (size_t)dims[0] * dims[1] * dims[2] * dims[3];
    const size_t slice = (size_t)dims[0] * dims[1] * dims[2];
    for (size_t site = 0; site < vol; ++site)
        for (int mu = 0; mu < 4; ++mu) {
            if (l->gauge_fix && mu == 3 && site < vol - slice)
                continue;
            const double complex *m = u + 9 * (4 * site + mu);
            const double n2 = creal(m[1] * conj(m[1])) + creal(m[2] * conj(m[2]));
            if (!(n2 >= R8_MIN_N2))
                return wd_fail(WD_ERR_INVALID,
                               "reconstruction 8 cannot store the link U_%d at site %zu: "
                               "|U_01|^2 + |U_02|^2 = %.3g (it divides by this; a unit or "
                               "near-diagonal link needs recon 12 or 18%s)", mu, site, n2,
                               l->gauge_fix ? "" : ", or the gauge-fixed variant for temporal links");
        }
    return WD_OK;
}

wd_status wd_pack_gauge(const wd_gauge_layout *l, void *dst, const double complex *u, const int dims[4])
{
    if (l->recon == 8) {
        wd_status st = check_recon8(l, u, dims);
        if (st != WD_OK)
            return st;
    }
    switch (l->precision) {
    case 8: wd_pack_gauge_d(l, dst, u, dims); break;
    case 4: wd_pack_gauge_s(l, dst, u, dims); break;
    default: wd_pack_gauge_h(l, dst, u, dims); break;
    }
    return WD_OK;
}

void wd_dslash_args_set(wd_dslash_args *a, const wd_spinor_layout *s, const wd_gauge_layout *g,
                        const int dims[4], int parity, int tbc)
{
    for (int mu = 0; mu < 4; ++mu) {
        a->dims[mu] = dims[mu];
        a->gstride[mu] = g->gstride[mu];
        a->goff[mu][0] = g->goff[mu][0];
        a->goff[mu][1] = g->goff[mu][1];
    }
    a->volume_cb = s->volume_cb;
    a->stride = s->stride;
    a->parity = parity;
    a->tslice_cb0 = g->tslice_cb0;
    a->tbc = tbc;
}
