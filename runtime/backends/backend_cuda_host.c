/*
 * backend_cuda_host.c: the CUDA backend of wd_backend.h, host half.  Fields
 * and gauge fields live in GPU memory in the packed layout of wd_kernel.h:
 * they are packed on the host (wd_layout.h) and copied over, exactly as the
 * CPU backend packs them, so the two backends hold the same bytes.  The
 * Dslash runs the generated CUDA kernel of the variant with its autotuned
 * block size; the BLAS are backend_cuda.cu's kernels.
 *
 * The externally accessible function is
 *   wd_backend_cuda_init   fill in the ops table, open the device context
 * Compiled only in builds with CUDA; cuda_rt_none.c answers otherwise.
 */
#include <complex.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_rt.h"
#include "wd_backend.h"
#include "wd_core.h"
#include "wd_layout.h"
#include "wd_operator.h"
#include "wd_tune.h"

/* backend_cuda.cu */
wd_status wd_cuda_be_open(wd_backend *be);
void wd_cuda_be_close(wd_backend *be);
void wd_cuda_be_zero(wd_backend *be, wd_field *y);
void wd_cuda_be_copy(wd_backend *be, wd_field *y, const wd_field *x);
void wd_cuda_be_ax(wd_backend *be, double a, wd_field *x);
void wd_cuda_be_axpy(wd_backend *be, double a, const wd_field *x, wd_field *y);
void wd_cuda_be_xpay(wd_backend *be, const wd_field *x, double a, wd_field *y);
void wd_cuda_be_axpy_zpbx(wd_backend *be, double a, wd_field *x, wd_field *y, const wd_field *z,
                          double b);
void wd_cuda_be_caxpy(wd_backend *be, wd_complex a, const wd_field *x, wd_field *y);
void wd_cuda_be_accumulate(wd_backend *be, wd_complex a, const wd_field *x, wd_complex b,
                           const wd_field *y, wd_field *z);
wd_status wd_cuda_be_staging(wd_backend *be, size_t bytes, void **buf);
void wd_cuda_be_caxpbypz(wd_backend *be, wd_complex a, const wd_field *x, wd_complex b,
                         const wd_field *y, wd_field *z);
void wd_cuda_be_cxpaypbz(wd_backend *be, const wd_field *x, wd_complex a, const wd_field *y,
                         wd_complex b, wd_field *z);
double wd_cuda_be_norm2(wd_backend *be, const wd_field *x);
wd_complex wd_cuda_be_cdot(wd_backend *be, const wd_field *x, const wd_field *y);
double wd_cuda_be_axpy_norm2(wd_backend *be, double a, const wd_field *x, wd_field *y);
double wd_cuda_be_xpay_norm2(wd_backend *be, const wd_field *x, double a, wd_field *y);
double wd_cuda_be_caxpy_norm2(wd_backend *be, wd_complex a, const wd_field *x, wd_field *y);
void wd_cuda_be_cdot_norm2(wd_backend *be, const wd_field *x, const wd_field *y, double res[3]);
void wd_cuda_be_caxpy_norm2_cdot(wd_backend *be, wd_complex a, const wd_field *x, wd_field *y,
                                 const wd_field *z, double res[3]);

static wd_status field_alloc(wd_backend *be, wd_field *f)
{
    (void)be;
    void *p = NULL;
    wd_status st = wd_cuda_malloc(&p, f->bytes + f->norm_bytes, "a spinor field");
    if (st != WD_OK)
        return st;
    /* padding is never read; zero the whole field so it is defined */
    st = wd_cuda_memset(p, 0, f->bytes + f->norm_bytes);
    if (st != WD_OK) {
        wd_cuda_free(p);
        return st;
    }
    f->data = p;
    f->norm = f->norm_bytes ? (float *)((char *)p + f->bytes) : NULL;
    return WD_OK;
}

static void field_free(wd_backend *be, wd_field *f)
{
    (void)be;
    wd_cuda_free(f->data);
}

/* The field's layout and the backend's pinned staging buffer for it (zeroed
 * when allocated; reused, its padding holds what an earlier transfer left:
 * defined, and never read by a kernel). */
static wd_status staging(wd_backend *be, const wd_field *f, wd_spinor_layout *l, void **buf)
{
    wd_status st = wd_spinor_layout_make(l, be->dims, f->precision, be->pad);
    return st == WD_OK ? wd_cuda_be_staging(be, l->bytes + l->norm_bytes, buf) : st;
}

static wd_status upload(wd_backend *be, wd_field *f, const double *host, int parity)
{
    wd_spinor_layout l;
    void *buf;
    wd_status st = staging(be, f, &l, &buf);
    if (st != WD_OK)
        return st;
    wd_pack_spinor(&l, buf, (float *)((char *)buf + l.bytes), (const double complex *)host,
                   be->dims, parity);
    return wd_cuda_h2d(f->data, buf, l.bytes + l.norm_bytes);
}

static wd_status download(wd_backend *be, double *host, const wd_field *f, int parity)
{
    wd_spinor_layout l;
    void *buf;
    wd_status st = staging(be, f, &l, &buf);
    if (st != WD_OK)
        return st;
    st = wd_cuda_d2h(buf, f->data, l.bytes + l.norm_bytes);
    if (st == WD_OK)
        wd_unpack_spinor(&l, (double complex *)host, buf, (const float *)((char *)buf + l.bytes),
                         be->dims, parity);
    return st;
}

/* ghost: none, the CUDA backend runs on a 1x1x1x1 grid (wd_backend_open_grid) */
static wd_status gauge_upload(wd_backend *be, wd_gauge *g, const double *host,
                              const double *const ghost[4])
{
    (void)ghost;
    wd_gauge_layout l;
    wd_status st = wd_gauge_layout_make(&l, be->dims, g->precision, g->recon, g->gauge_fix,
                                        be->pad);
    if (st != WD_OK)
        return st;
    void *buf = calloc(1, l.bytes);
    if (!buf)
        return wd_fail(WD_ERR_NOMEM, "CUDA backend: host staging buffer of %zu bytes", l.bytes);
    st = wd_pack_gauge(&l, buf, (const double complex *)host, be->dims);
    void *p = NULL;
    if (st == WD_OK)
        st = wd_cuda_malloc(&p, l.bytes, "the gauge field");
    if (st == WD_OK)
        st = wd_cuda_h2d(p, buf, l.bytes);
    free(buf);
    if (st != WD_OK) {
        wd_cuda_free(p);
        return st;
    }
    g->data = p;
    return WD_OK;
}

static void gauge_free(wd_backend *be, wd_gauge *g)
{
    (void)be;
    wd_cuda_free(g->data);
}

static wd_status dslash(wd_backend *be, int variant, wd_field *out, const wd_gauge *g,
                        const wd_field *in, const wd_field *x, double a, int parity)
{
    wd_dslash_args args;
    wd_status st = wd_backend_dslash_args(be, variant, out, g, in, x, a, parity, &args);
    int block = 0;
    if (st == WD_OK)
        st = wd_tune_dslash(variant, &args, be->pad, &block);
    return st == WD_OK ? wd_cuda_dslash(variant, &args, block) : st;
}

static void close_backend(wd_backend *be)
{
    wd_cuda_be_close(be);
}

static const wd_backend_ops cuda_ops = {
    .name = "cuda",
    .close = close_backend,
    .field_alloc = field_alloc,
    .field_free = field_free,
    .upload = upload,
    .download = download,
    .gauge_upload = gauge_upload,
    .gauge_free = gauge_free,
    .dslash = dslash,
    .zero = wd_cuda_be_zero,
    .copy = wd_cuda_be_copy,
    .ax = wd_cuda_be_ax,
    .axpy = wd_cuda_be_axpy,
    .xpay = wd_cuda_be_xpay,
    .axpy_zpbx = wd_cuda_be_axpy_zpbx,
    .caxpy = wd_cuda_be_caxpy,
    .caxpbypz = wd_cuda_be_caxpbypz,
    .cxpaypbz = wd_cuda_be_cxpaypbz,
    .accumulate = wd_cuda_be_accumulate,
    .norm2 = wd_cuda_be_norm2,
    .cdot = wd_cuda_be_cdot,
    .axpy_norm2 = wd_cuda_be_axpy_norm2,
    .xpay_norm2 = wd_cuda_be_xpay_norm2,
    .caxpy_norm2 = wd_cuda_be_caxpy_norm2,
    .cdot_norm2 = wd_cuda_be_cdot_norm2,
    .caxpy_norm2_cdot = wd_cuda_be_caxpy_norm2_cdot,
};

wd_status wd_backend_cuda_init(wd_backend *be)
{
    wd_cuda_info info;
    if (!wd_cuda_available())
        return wd_fail(WD_ERR_NO_DEVICE, "CUDA backend: no usable GPU");
    wd_status st = wd_cuda_device_info(&info);
    if (st == WD_OK)
        st = wd_cuda_be_open(be);
    if (st != WD_OK)
        return st;
    be->ops = &cuda_ops;
    return WD_OK;
}
