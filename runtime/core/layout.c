/*
 * layout.c: geometry of the internal field layouts and the dispatch of the
 * per-precision packing functions of layout_tmpl.c.
 *
 * The externally accessible functions are
 *   wd_spinor_layout_make, wd_gauge_layout_make   sizes, offsets, strides
 *   wd_pack_spinor, wd_unpack_spinor, wd_pack_gauge  by the layout's precision
 *   wd_clover_layout_make, wd_pack_clover          the clover field
 *   wd_dslash_args_set                             kernel arguments
 */
#include <stdint.h>
#include <string.h>

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

void wd_halo_make(wd_halo *h, const int local[4], const int part[4], int t_origin, int global_T)
{
    memset(h, 0, sizeof *h);
    const int volume_cb = local[0] * local[1] * local[2] * local[3] / 2;
    h->t_origin = part ? t_origin : 0;
    h->global_T = part ? global_T : local[3];
    int next = volume_cb;
    for (int mu = 0; mu < 4; ++mu) {
        h->part[mu] = part && part[mu];
        h->face_cb[mu] = volume_cb / local[mu];
        if (!h->part[mu])
            continue;
        h->ghost[mu][0] = next;
        h->ghost[mu][1] = next + h->face_cb[mu];
        next += 2 * h->face_cb[mu];
    }
    h->ghost_sites = next - volume_cb;
}

wd_status wd_spinor_layout_make_halo(wd_spinor_layout *l, const int dims[4], const wd_halo *halo,
                                     int precision, int pad)
{
    wd_status st = wd_check_dims(dims);
    if (st != WD_OK)
        return st;
    const wd_precision_layout *p = precision_layout(precision);
    if (!p)
        return wd_fail(WD_ERR_INVALID, "precision %d: must be 8, 4 or 2 bytes", precision);
    if (pad < 0 || pad > 65536)
        return wd_fail(WD_ERR_INVALID, "padding %d: must be in [0, 65536] elements", pad);
    if (halo)
        l->halo = *halo;
    else
        wd_halo_make(&l->halo, dims, NULL, 0, 0);
    l->precision = precision;
    l->width = p->spinor_width;
    l->elements = WD_SPINOR_REALS / p->spinor_width;
    l->volume_cb = dims[0] * dims[1] * dims[2] * dims[3] / 2;
    const int sites = l->volume_cb + l->halo.ghost_sites;
    l->stride = sites + pad;
    l->bytes = (size_t)l->elements * l->stride * l->width * precision;
    l->norm_bytes = p->has_norm ? (size_t)sites * sizeof(float) : 0;
    return WD_OK;
}

wd_status wd_spinor_layout_make(wd_spinor_layout *l, const int dims[4], int precision, int pad)
{
    return wd_spinor_layout_make_halo(l, dims, NULL, precision, pad);
}

wd_status wd_gauge_layout_make_halo(wd_gauge_layout *l, const int dims[4], const wd_halo *halo,
                                    int precision, int recon, int gauge_fix, int pad)
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
    if (halo)
        l->halo = *halo;
    else
        wd_halo_make(&l->halo, dims, NULL, 0, 0);
    const wd_halo *h = &l->halo;
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
    /* a backward hop across a partitioned T reads its last-slice link from
     * the ghost, stored right after the slice's own links */
    l->tslice_bwd = h->part[3] ? h->ghost[3][1] - slice_cb : l->tslice_cb0;
    /* blocks start on 64-byte boundaries, so every vector element is aligned */
    const long align = 64 / precision;
    long off = 0;
    for (int mu = 0; mu < 4; ++mu) {
        int sites;
        if (l->gauge_fix && mu == 3)
            sites = slice_cb + (h->part[3] ? h->face_cb[3] : 0);
        else
            sites = h->part[mu] ? h->ghost[mu][1] + h->face_cb[mu] : volume_cb;
        l->gstride[mu] = sites + pad;
        for (int parity = 0; parity < 2; ++parity) {
            l->goff[mu][parity] = off;
            off += ((long)recon * l->gstride[mu] + align - 1) / align * align;
        }
    }
    l->bytes = (size_t)off * precision;
    return WD_OK;
}

wd_status wd_gauge_layout_make(wd_gauge_layout *l, const int dims[4], int precision,
                               int recon, int gauge_fix, int pad)
{
    return wd_gauge_layout_make_halo(l, dims, NULL, precision, recon, gauge_fix, pad);
}

wd_status wd_clover_layout_make(wd_clover_layout *l, const int dims[4], int precision,
                                int pad)
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
    l->elements = WD_CLOVER_SITE_REALS / l->width;
    l->volume_cb = (int)(wd_volume(dims) / 2);
    l->stride = l->volume_cb + pad;
    l->bytes = (size_t)l->elements * l->stride * l->width * precision;
    l->norm_bytes = p->has_norm ? 2 * (size_t)l->volume_cb * sizeof(float) : 0;
    return WD_OK;
}

void wd_pack_clover(const wd_clover_layout *l, void *dst, float *norm, const double *blocks,
                    const int dims[4], int parity)
{
    switch (l->precision) {
    case 8: wd_pack_clover_d(l, dst, norm, blocks, dims, parity); break;
    case 4: wd_pack_clover_s(l, dst, norm, blocks, dims, parity); break;
    default: wd_pack_clover_h(l, dst, norm, blocks, dims, parity); break;
    }
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

static wd_status check_link_r8(const double complex *m, int mu, const char *where, size_t site,
                               int gauge_fix)
{
    const double n2 = creal(m[1] * conj(m[1])) + creal(m[2] * conj(m[2]));
    if (!(n2 >= R8_MIN_N2))
        return wd_fail(WD_ERR_INVALID,
                       "reconstruction 8 cannot store the link U_%d at %s %zu: "
                       "|U_01|^2 + |U_02|^2 = %.3g (it divides by this; a unit or "
                       "near-diagonal link needs recon 12 or 18%s)", mu, where, site, n2,
                       gauge_fix ? "" : ", or the gauge-fixed variant for temporal links");
    return WD_OK;
}

/* Every link the kernels will reconstruct: gauge-fixed temporal links only
 * on the global last slice (and its ghost, read from global t = 0). */
static wd_status check_recon8(const wd_gauge_layout *l, const double complex *u,
                              const double complex *const ghost[4], const int dims[4])
{
    const wd_halo *h = &l->halo;
    const size_t vol = (size_t)dims[0] * dims[1] * dims[2] * dims[3];
    const size_t slice = (size_t)dims[0] * dims[1] * dims[2];
    const int global_last = h->t_origin + dims[3] == h->global_T;
    wd_status st = WD_OK;
    for (size_t site = 0; site < vol && st == WD_OK; ++site)
        for (int mu = 0; mu < 4 && st == WD_OK; ++mu) {
            if (l->gauge_fix && mu == 3 && (site < vol - slice || !global_last))
                continue;
            st = check_link_r8(u + 9 * (4 * site + mu), mu, "site", site, l->gauge_fix);
        }
    for (int mu = 0; mu < 4 && st == WD_OK; ++mu) {
        if (!h->part[mu] || !ghost || !ghost[mu] || (l->gauge_fix && mu == 3 && h->t_origin))
            continue;
        for (size_t f = 0; f < 2 * (size_t)h->face_cb[mu] && st == WD_OK; ++f)
            st = check_link_r8(ghost[mu] + 9 * f, mu, "backward ghost face site", f, l->gauge_fix);
    }
    return st;
}

wd_status wd_pack_gauge_halo(const wd_gauge_layout *l, void *dst, const double complex *u,
                             const double complex *const ghost[4], const int dims[4])
{
    if (l->recon == 8) {
        wd_status st = check_recon8(l, u, ghost, dims);
        if (st != WD_OK)
            return st;
    }
    switch (l->precision) {
    case 8: wd_pack_gauge_d(l, dst, u, ghost, dims); break;
    case 4: wd_pack_gauge_s(l, dst, u, ghost, dims); break;
    default: wd_pack_gauge_h(l, dst, u, ghost, dims); break;
    }
    return WD_OK;
}

wd_status wd_pack_gauge(const wd_gauge_layout *l, void *dst, const double complex *u, const int dims[4])
{
    return wd_pack_gauge_halo(l, dst, u, NULL, dims);
}

int wd_face_site(const int dims[4], int mu, int c, int parity, int f)
{
    /* face index 2 f or 2 f + 1: the first face coordinate's lowest bit
     * picks the parity, since that extent is even */
    int co[4], sum = c;
    for (int pass = 0; pass < 2; ++pass) {
        int r = 2 * f + pass;
        sum = c;
        for (int nu = 0; nu < 4; ++nu)
            if (nu != mu) {
                co[nu] = r % dims[nu];
                r /= dims[nu];
                sum += co[nu];
            }
        if ((sum & 1) == parity)
            break;
    }
    co[mu] = c;
    return (co[0] + dims[0] * (co[1] + dims[1] * (co[2] + dims[2] * co[3]))) >> 1;
}

int wd_site_order(const int dims[4], const int part[4], int parity, int *order)
{
    const int n = dims[0] * dims[1] * dims[2] * dims[3] / 2;
    int inner = 0;
    for (int pass = 0, k = 0; pass < 2; ++pass)
        for (int cb = 0; cb < n; ++cb) {
            int c[4];
            wd_cb_coords(dims, parity, cb, c);
            int edge = 0;
            for (int mu = 0; mu < 4; ++mu)
                edge |= part[mu] && (c[mu] == 0 || c[mu] == dims[mu] - 1);
            if (edge == pass)
                order[k++] = cb;
            if (!pass && !edge)
                ++inner;
        }
    return inner;
}

static size_t element_bytes(const wd_spinor_layout *l)
{
    return (size_t)l->width * l->precision;
}

size_t wd_face_bytes(const wd_spinor_layout *l, int mu)
{
    const size_t n = (size_t)l->halo.face_cb[mu];
    return n * l->elements * element_bytes(l) + (l->norm_bytes ? n * sizeof(float) : 0);
}

void wd_face_gather(const wd_spinor_layout *l, const void *field, const float *norm,
                    const int dims[4], int mu, int last, int parity, void *buf)
{
    const int n = l->halo.face_cb[mu];
    const size_t eb = element_bytes(l);
    const char *src = field;
    char *dst = buf;
    const int c = last ? dims[mu] - 1 : 0;
#pragma omp parallel for schedule(static)
    for (int f = 0; f < n; ++f) {
        const int cb = wd_face_site(dims, mu, c, parity, f);
        for (int k = 0; k < l->elements; ++k)
            memcpy(dst + ((size_t)k * n + f) * eb, src + ((size_t)k * l->stride + cb) * eb, eb);
        if (l->norm_bytes)
            memcpy(dst + ((size_t)l->elements * n * eb) + (size_t)f * sizeof(float), norm + cb,
                   sizeof(float));
    }
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
    a->tslice_bwd = g->tslice_bwd;
    a->tbc = tbc;
    const wd_halo *h = &s->halo;
    a->part = 0;
    for (int mu = 0; mu < 4; ++mu) {
        a->part |= h->part[mu] << mu;
        a->ghost[mu][0] = h->ghost[mu][0];
        a->ghost[mu][1] = h->ghost[mu][1];
    }
    a->t_origin = h->t_origin;
    a->global_T = h->global_T;
}
