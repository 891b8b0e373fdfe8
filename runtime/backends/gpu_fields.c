/*
 * gpu_fields.c: device fields, the GPU Dslash and the even-odd operator (contract
 * in wd_gpu.h).
 */
#include <stdlib.h>
#include <string.h>

#include "cuda_rt.h"
#include "wd_gpu.h"
#include "wd_core.h"
#include "wd_operator.h"
#include "wd_tune.h"

wd_status wd_gpu_spinor_alloc(wd_gpu_spinor *f, const int dims[4], int precision, int pad)
{
    memset(f, 0, sizeof *f);
    wd_status st = wd_spinor_layout_make(&f->l, dims, precision, pad);
    if (st != WD_OK)
        return st;
    st = wd_cuda_malloc(&f->data, f->l.bytes + f->l.norm_bytes, "a spinor field");
    if (st != WD_OK)
        return st;
    if (f->l.norm_bytes)
        f->norm = (float *)((char *)f->data + f->l.bytes);
    return WD_OK;
}

void wd_gpu_spinor_free(wd_gpu_spinor *f)
{
    wd_cuda_free(f->data);
    f->data = NULL;
    f->norm = NULL;
}

wd_status wd_gpu_spinor_raw_up(wd_gpu_spinor *f, const void *data, const float *norm)
{
    wd_status st = wd_cuda_h2d(f->data, data, f->l.bytes);
    if (st == WD_OK && f->l.norm_bytes)
        st = wd_cuda_h2d(f->norm, norm, f->l.norm_bytes);
    return st;
}

wd_status wd_gpu_spinor_raw_down(const wd_gpu_spinor *f, void *data, float *norm)
{
    wd_status st = wd_cuda_d2h(data, f->data, f->l.bytes);
    if (st == WD_OK && f->l.norm_bytes)
        st = wd_cuda_d2h(norm, f->norm, f->l.norm_bytes);
    return st;
}

wd_status wd_gpu_spinor_upload(wd_gpu_spinor *f, const double complex *host, const int dims[4],
                               int parity)
{
    void *buf = calloc(1, f->l.bytes + f->l.norm_bytes);
    if (!buf)
        return wd_fail(WD_ERR_NOMEM, "host staging buffer of %zu bytes", f->l.bytes);
    float *norm = (float *)((char *)buf + f->l.bytes);
    wd_pack_spinor(&f->l, buf, norm, host, dims, parity);
    wd_status st = wd_gpu_spinor_raw_up(f, buf, norm);
    free(buf);
    return st;
}

wd_status wd_gpu_spinor_download(const wd_gpu_spinor *f, double complex *host, const int dims[4],
                                 int parity)
{
    void *buf = malloc(f->l.bytes + f->l.norm_bytes);
    if (!buf)
        return wd_fail(WD_ERR_NOMEM, "host staging buffer of %zu bytes", f->l.bytes);
    float *norm = (float *)((char *)buf + f->l.bytes);
    wd_status st = wd_gpu_spinor_raw_down(f, buf, norm);
    if (st == WD_OK)
        wd_unpack_spinor(&f->l, host, buf, norm, dims, parity);
    free(buf);
    return st;
}

wd_status wd_gpu_gauge_upload(wd_gpu_gauge *g, const double complex *u, const int dims[4],
                              int precision, int recon, int gauge_fix, int pad)
{
    memset(g, 0, sizeof *g);
    wd_status st = wd_gauge_layout_make(&g->l, dims, precision, recon, gauge_fix, pad);
    if (st != WD_OK)
        return st;
    void *buf = malloc(g->l.bytes);
    if (!buf)
        return wd_fail(WD_ERR_NOMEM, "host staging buffer of %zu bytes for the gauge field",
                       g->l.bytes);
    st = wd_cuda_malloc(&g->data, g->l.bytes, "the gauge field");
    if (st == WD_OK)
        st = wd_pack_gauge(&g->l, buf, u, dims);
    if (st == WD_OK)
        st = wd_cuda_h2d(g->data, buf, g->l.bytes);
    free(buf);
    if (st != WD_OK)
        wd_gpu_gauge_free(g);
    return st;
}

void wd_gpu_gauge_free(wd_gpu_gauge *g)
{
    wd_cuda_free(g->data);
    g->data = NULL;
}

void wd_gpu_dslash_args(wd_dslash_args *a, wd_gpu_spinor *out, const wd_gpu_spinor *in,
                        const wd_gpu_spinor *x, double xa, const wd_gpu_gauge *g,
                        const int dims[4], int parity, int tbc)
{
    memset(a, 0, sizeof *a);
    wd_dslash_args_set(a, &out->l, &g->l, dims, parity, tbc);
    a->out = out->data;
    a->out_norm = out->norm;
    a->in = in->data;
    a->in_norm = in->norm;
    a->x = x ? x->data : NULL;
    a->x_norm = x ? x->norm : NULL;
    a->gauge = g->data;
    a->a = xa;
}

wd_status wd_gpu_dslash(int variant, const wd_dslash_args *a, int pad, int block)
{
    if (variant < 0 || variant >= wd_variant_count)
        return wd_fail(WD_ERR_INVALID, "variant index %d is not built", variant);
    if (wd_variants[variant].xpay && !a->x)
        return wd_fail(WD_ERR_INVALID, "%s needs the x field", wd_variants[variant].name);
    if (block == 0) {
        wd_status st = wd_tune_dslash(variant, a, pad, &block);
        if (st != WD_OK)
            return st;
    }
    return wd_cuda_dslash(variant, a, block);
}

wd_status wd_gpu_schur(wd_gpu_spinor *out, const wd_gpu_spinor *in, wd_gpu_spinor *tmp,
                       const wd_gpu_gauge *g, const int dims[4], double kappa, int dagger,
                       int tbc)
{
    const int p = g->l.precision, r = g->l.recon, gf = g->l.gauge_fix;
    const int plain = wd_variant_find_axes(p, r, gf, dagger, 0);
    const int xpay = wd_variant_find_axes(p, r, gf, dagger, 1);
    if (plain < 0 || xpay < 0)
        return wd_fail(WD_ERR_NOT_BUILT, "the even-odd operator needs the Dslash variants of "
                       "precision %d, recon %d, gauge fixing %d, dagger %d, xpay 0 and 1: "
                       "not in this build", p, r, gf, dagger);
    if (out->l.precision != p || in->l.precision != p || tmp->l.precision != p)
        return wd_fail(WD_ERR_INVALID, "even-odd operator: fields and gauge field differ in precision");
    const int pad = out->l.stride - out->l.volume_cb;
    wd_dslash_args a;
    /* tmp_o = D_oe in_e, then out_e = in_e - kappa^2 D_eo tmp_o */
    wd_gpu_dslash_args(&a, tmp, in, NULL, 0, g, dims, 1, tbc);
    wd_status st = wd_gpu_dslash(plain, &a, pad, 0);
    if (st != WD_OK)
        return st;
    wd_gpu_dslash_args(&a, out, tmp, in, -kappa * kappa, g, dims, 0, tbc);
    return wd_gpu_dslash(xpay, &a, pad, 0);
}
