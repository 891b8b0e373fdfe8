/*
 * backend_cpu.c: the CPU backend of wd_backend.h.  Fields live in host
 * memory (64-byte aligned) in the very layout the GPU uses; the Dslash is
 * the generated variant's OpenMP loop; the BLAS are blas_cpu_tmpl.c's loops for
 * the operands' precision.
 *
 * The externally accessible function is
 *   wd_backend_cpu_init   fill in the ops table and the reduction scratch
 * Notes: an operation on operands of mixed precision (copy and accumulate
 * excepted), or a Dslash variant whose axes disagree with its fields, is a
 * bug in the caller: it does nothing and records WD_ERR_INTERNAL in
 * be->error.
 */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cpu.h"
#include "wd_core.h"
#include "wd_layout.h"
#include "wd_operator.h"

#define ALIGN 64

static void *aligned(size_t bytes)
{
    return aligned_alloc(ALIGN, (bytes + ALIGN - 1) / ALIGN * ALIGN);
}

static void record(wd_backend *be, wd_status st)
{
    if (be->error == WD_OK)
        be->error = st;
}

static void cpu_close(wd_backend *be)
{
    wd_cpu_ctx *c = be->ctx;
    if (c) {
        free(c->scratch);
        free(c->halo);
    }
    free(c);
}

static wd_status cpu_field_alloc(wd_backend *be, wd_field *f)
{
    (void)be;
    f->data = aligned(f->bytes);
    f->norm = f->norm_bytes ? aligned(f->norm_bytes) : NULL;
    if (!f->data || (f->norm_bytes && !f->norm)) {
        free(f->data);
        free(f->norm);
        f->data = NULL;
        f->norm = NULL;
        return wd_fail(WD_ERR_NOMEM, "CPU backend: cannot allocate a %d-byte-precision spinor "
                       "field of %zu bytes", f->precision, f->bytes + f->norm_bytes);
    }
    /* padding is never read by the loops; zero it so the field is defined */
    memset(f->data, 0, f->bytes);
    if (f->norm)
        memset(f->norm, 0, f->norm_bytes);
    return WD_OK;
}

static void cpu_field_free(wd_backend *be, wd_field *f)
{
    (void)be;
    free(f->data);
    free(f->norm);
}

static void layout_of(const wd_backend *be, const wd_field *f, wd_spinor_layout *l)
{
    wd_spinor_layout_make_halo(l, be->dims, &be->halo, f->precision, be->pad);
}

static wd_status cpu_upload(wd_backend *be, wd_field *f, const double *host, int parity)
{
    wd_spinor_layout l;
    layout_of(be, f, &l);
    wd_pack_spinor(&l, f->data, f->norm, (const double complex *)host, be->dims, parity);
    return WD_OK;
}

static wd_status cpu_download(wd_backend *be, double *host, const wd_field *f, int parity)
{
    wd_spinor_layout l;
    layout_of(be, f, &l);
    wd_unpack_spinor(&l, (double complex *)host, f->data, f->norm, be->dims, parity);
    return WD_OK;
}

static wd_status cpu_gauge_upload(wd_backend *be, wd_gauge *g, const double *host,
                                  const double *const ghost[4])
{
    wd_gauge_layout l;
    wd_status st = wd_gauge_layout_make_halo(&l, be->dims, &be->halo, g->precision, g->recon,
                                             g->gauge_fix, be->pad);
    if (st != WD_OK)
        return st;
    g->data = aligned(l.bytes);
    if (!g->data)
        return wd_fail(WD_ERR_NOMEM, "CPU backend: cannot allocate a gauge field of %zu bytes",
                       l.bytes);
    memset(g->data, 0, l.bytes);
    st = wd_pack_gauge_halo(&l, g->data, (const double complex *)host,
                            (const double complex *const *)ghost, be->dims);
    if (st != WD_OK) {
        free(g->data);
        g->data = NULL;
    }
    return st;
}

static void cpu_gauge_free(wd_backend *be, wd_gauge *g)
{
    (void)be;
    free(g->data);
}

static wd_status cpu_clover_upload(wd_backend *be, wd_clover *c, const double *blocks)
{
    wd_clover_layout l;
    wd_status st = wd_clover_layout_make(&l, be->dims, c->precision, be->pad);
    if (st != WD_OK)
        return st;
    for (int p = 0; p < 2; ++p) {
        c->data[p] = aligned(l.bytes);
        c->norm[p] = l.norm_bytes ? aligned(l.norm_bytes) : NULL;
        if (!c->data[p] || (l.norm_bytes && !c->norm[p])) {
            for (int q = 0; q <= p; ++q)
                free(c->data[q]), free(c->norm[q]);
            return wd_fail(WD_ERR_NOMEM, "CPU backend: cannot allocate a clover field of "
                           "2 x %zu bytes", l.bytes + l.norm_bytes);
        }
        memset(c->data[p], 0, l.bytes);
        wd_pack_clover(&l, c->data[p], c->norm[p], blocks, be->dims, p);
    }
    return WD_OK;
}

static void cpu_clover_free(wd_backend *be, wd_clover *c)
{
    (void)be;
    for (int p = 0; p < 2; ++p)
        free(c->data[p]), free(c->norm[p]);
}

/* Receive the ghost faces of right-hand sides 0 .. nrhs - 1 of `in`
 * (parity 1 - out_parity) from the neighbours, and point args->gsrc at
 * them: the kernels read each ghost site where it landed (wd_kernel.h,
 * wd_ghost_src), so nothing is scattered into the field's ghost zone.  Per
 * partitioned dimension the faces of every right-hand side going one way
 * travel as one message (right-hand side q's face at q face bytes of the
 * slot), so N right-hand sides cost one message per neighbour and
 * direction as one does, not N; every dimension's messages are in flight
 * together.  The buffers are kept in the context and grow to the largest
 * exchange seen. */
static wd_status cpu_halo(wd_backend *be, const wd_field *in, int nrhs, int out_parity,
                          wd_dslash_args *args)
{
    wd_cpu_ctx *ctx = be->ctx;
    wd_spinor_layout l;
    layout_of(be, in, &l);
    size_t need = 0, off[4];
    for (int mu = 0; mu < 4; ++mu) {
        off[mu] = need;
        if (be->halo.part[mu])
            need += 4 * (size_t)nrhs * wd_face_bytes(&l, mu);
    }
    wd_status st = WD_OK;
    /* every rank has the same local volume and runs the same calls, so all
     * grow here together */
    if (need > ctx->halo_bytes) {
        void *p = realloc(ctx->halo, need);
        if (p) {
            ctx->halo = p;
            ctx->halo_bytes = need;
        } else {
            st = wd_fail(WD_ERR_NOMEM, "CPU backend: cannot allocate %zu bytes of halo buffers "
                         "(%d right-hand sides)", need, nrhs);
        }
        if ((st = wd_comm_agree(st)) != WD_OK)
            return st;
    }
    const int in_parity = 1 - out_parity;
    const size_t norms = in->norm_bytes / sizeof(float);
    wd_comm_halo req[4];
    int started = 0;
    for (int mu = 0; mu < 4 && st == WD_OK; ++mu) {
        if (!be->halo.part[mu])
            continue;
        const size_t fb = wd_face_bytes(&l, mu), slot = (size_t)nrhs * fb;
        char *b = (char *)ctx->halo + off[mu];
        /* send[FWD]: my last slice, the forward neighbour's backward ghost */
        for (int q = 0; q < nrhs; ++q) {
            const char *data = (const char *)in->data + (size_t)q * in->bytes;
            const float *norm = in->norm ? in->norm + (size_t)q * norms : NULL;
            wd_face_gather(&l, data, norm, be->dims, mu, 1, in_parity, b + q * fb);
            wd_face_gather(&l, data, norm, be->dims, mu, 0, in_parity, b + slot + q * fb);
        }
        const void *send[2] = {b, b + slot};
        void *recv[2] = {b + 2 * slot, b + 3 * slot};
        st = wd_comm_halo_start(&req[mu], &be->grid, mu, send, recv, slot);
        started |= (st == WD_OK) << mu;
    }
    for (int mu = 0; mu < 4; ++mu) {
        if (!((started >> mu) & 1))
            continue;
        const wd_status w = wd_comm_halo_wait(&req[mu]);
        if (st == WD_OK)
            st = w;
        if (w != WD_OK)
            continue;
        const size_t fb = wd_face_bytes(&l, mu), slot = (size_t)nrhs * fb;
        const char *b = (const char *)ctx->halo + off[mu];
        wd_ghost_sources(l.halo.face_cb[mu], l.elements, (size_t)l.width * l.precision,
                         l.norm_bytes > 0, b + 2 * slot, b + 3 * slot, fb, args->gsrc[mu]);
    }
    return st;
}

static wd_status cpu_dslash(wd_backend *be, int variant, wd_field *out, const wd_gauge *g,
                            const wd_clover *c, const wd_field *in, const wd_field *x, double a,
                            int parity)
{
    wd_dslash_args args;
    wd_status st = wd_backend_dslash_args(be, variant, out, g, c, in, x, a, parity, &args);
    if (st != WD_OK)
        return st;
    /* the clover kernel alone reads no neighbour; the others read the
     * ghosts of every right-hand side the call covers */
    if (be->halo.ghost_sites && wd_variants[variant].op != WD_OP_CLOVER &&
        (st = cpu_halo(be, in, wd_variants[variant].nrhs * args.groups, parity, &args)) != WD_OK)
        return st;
    wd_variants[variant].cpu(&args);
    return WD_OK;
}

static const wd_backend_ops *blas_for(int precision)
{
    return precision == 8 ? &wd_blas_ops_d : precision == 4 ? &wd_blas_ops_s : &wd_blas_ops_h;
}

/* The table of the shared precision of up to three operands; NULL (and
 * be->error set) when they differ. */
static const wd_backend_ops *blas3(wd_backend *be, const char *op, const wd_field *a,
                                   const wd_field *b, const wd_field *c)
{
    if ((b && b->precision != a->precision) || (c && c->precision != a->precision)) {
        record(be, wd_fail(WD_ERR_INTERNAL, "CPU backend: %s on fields of different precisions "
                           "(%d, %d, %d bytes)", op, a->precision, b ? b->precision : 0,
                           c ? c->precision : 0));
        return NULL;
    }
    return blas_for(a->precision);
}

typedef void (*site_load)(const wd_field *, int, double *);
typedef void (*site_store)(wd_field *, int, const double *);

static site_load loader(int precision)
{
    return precision == 8 ? wd_blas_load_d : precision == 4 ? wd_blas_load_s : wd_blas_load_h;
}

static site_store storer(int precision)
{
    return precision == 8 ? wd_blas_store_d : precision == 4 ? wd_blas_store_s : wd_blas_store_h;
}

static void cpu_copy(wd_backend *be, wd_field *y, const wd_field *x)
{
    (void)be;
    if (y == x)
        return;
    if (y->precision == x->precision && y->stride == x->stride) {
        memcpy(y->data, x->data, x->bytes);
        if (x->norm)
            memcpy(y->norm, x->norm, x->norm_bytes);
        return;
    }
    const site_load ld = loader(x->precision);
    const site_store st = storer(y->precision);
    const int n = y->volume_cb;
#pragma omp parallel for schedule(static) if (n >= 2048)
    for (int cb = 0; cb < n; ++cb) {
        double v[24];
        ld(x, cb, v);
        st(y, cb, v);
    }
}

static void cpu_accumulate(wd_backend *be, wd_complex a, const wd_field *x, wd_complex b,
                           const wd_field *y, wd_field *z)
{
    if (y && y->precision != x->precision) {
        record(be, wd_fail(WD_ERR_INTERNAL, "CPU backend: accumulate with x and y of different "
                           "precisions (%d, %d bytes)", x->precision, y->precision));
        return;
    }
    const site_load ldx = loader(x->precision), ldz = loader(z->precision);
    const site_store stz = storer(z->precision);
    const int n = z->volume_cb;
#pragma omp parallel for schedule(static) if (n >= 2048)
    for (int cb = 0; cb < n; ++cb) {
        double vx[24], vy[24] = {0}, vz[24];
        ldx(x, cb, vx);
        if (y)
            ldx(y, cb, vy);
        ldz(z, cb, vz);
        wd_cpu_accumulate_site(vz, a, vx, b, vy);
        stz(z, cb, vz);
    }
}

static void cpu_zero(wd_backend *be, wd_field *y)
{
    blas_for(y->precision)->zero(be, y);
}

static void cpu_ax(wd_backend *be, double a, wd_field *x)
{
    blas_for(x->precision)->ax(be, a, x);
}

static void cpu_axpy(wd_backend *be, double a, const wd_field *x, wd_field *y)
{
    const wd_backend_ops *k = blas3(be, "axpy", y, x, NULL);
    if (k)
        k->axpy(be, a, x, y);
}

static void cpu_xpay(wd_backend *be, const wd_field *x, double a, wd_field *y)
{
    const wd_backend_ops *k = blas3(be, "xpay", y, x, NULL);
    if (k)
        k->xpay(be, x, a, y);
}

static void cpu_axpy_zpbx(wd_backend *be, double a, wd_field *x, wd_field *y, const wd_field *z,
                          double b)
{
    const wd_backend_ops *k = blas3(be, "axpy_zpbx", y, x, z);
    if (k)
        k->axpy_zpbx(be, a, x, y, z, b);
}

static void cpu_caxpy(wd_backend *be, wd_complex a, const wd_field *x, wd_field *y)
{
    const wd_backend_ops *k = blas3(be, "caxpy", y, x, NULL);
    if (k)
        k->caxpy(be, a, x, y);
}

static void cpu_caxpbypz(wd_backend *be, wd_complex a, const wd_field *x, wd_complex b,
                         const wd_field *y, wd_field *z)
{
    const wd_backend_ops *k = blas3(be, "caxpbypz", z, x, y);
    if (k)
        k->caxpbypz(be, a, x, b, y, z);
}

static void cpu_cxpaypbz(wd_backend *be, const wd_field *x, wd_complex a, const wd_field *y,
                         wd_complex b, wd_field *z)
{
    const wd_backend_ops *k = blas3(be, "cxpaypbz", z, x, y);
    if (k)
        k->cxpaypbz(be, x, a, y, b, z);
}

static double cpu_norm2(wd_backend *be, const wd_field *x)
{
    return blas_for(x->precision)->norm2(be, x);
}

static wd_complex cpu_cdot(wd_backend *be, const wd_field *x, const wd_field *y)
{
    const wd_backend_ops *k = blas3(be, "cdot", x, y, NULL);
    return k ? k->cdot(be, x, y) : (wd_complex){NAN, NAN};
}

static double cpu_axpy_norm2(wd_backend *be, double a, const wd_field *x, wd_field *y)
{
    const wd_backend_ops *k = blas3(be, "axpy_norm2", y, x, NULL);
    return k ? k->axpy_norm2(be, a, x, y) : NAN;
}

static double cpu_xpay_norm2(wd_backend *be, const wd_field *x, double a, wd_field *y)
{
    const wd_backend_ops *k = blas3(be, "xpay_norm2", y, x, NULL);
    return k ? k->xpay_norm2(be, x, a, y) : NAN;
}

static double cpu_caxpy_norm2(wd_backend *be, wd_complex a, const wd_field *x, wd_field *y)
{
    const wd_backend_ops *k = blas3(be, "caxpy_norm2", y, x, NULL);
    return k ? k->caxpy_norm2(be, a, x, y) : NAN;
}

static void cpu_cdot_norm2(wd_backend *be, const wd_field *x, const wd_field *y, double res[3])
{
    const wd_backend_ops *k = blas3(be, "cdot_norm2", x, y, NULL);
    if (k)
        k->cdot_norm2(be, x, y, res);
    else
        res[0] = res[1] = res[2] = NAN;
}

static void cpu_caxpy_norm2_cdot(wd_backend *be, wd_complex a, const wd_field *x, wd_field *y,
                                 const wd_field *z, double res[3])
{
    const wd_backend_ops *k = blas3(be, "caxpy_norm2_cdot", y, x, z);
    if (k)
        k->caxpy_norm2_cdot(be, a, x, y, z, res);
    else
        res[0] = res[1] = res[2] = NAN;
}

/* The fused steps: every operand of the precision of y, but the
 * accumulator or the copy z (any precision) */
static void cpu_bicgstab_update(wd_backend *be, wd_complex a, const wd_field *x, wd_complex b,
                                wd_field *y, wd_field *z, const wd_field *w, const wd_field *u,
                                double res[3])
{
    const wd_backend_ops *k = blas3(be, "bicgstab_update", y, x, w);
    if (k && blas3(be, "bicgstab_update", y, u, NULL))
        k->bicgstab_update(be, a, x, b, y, z, w, u, res);
    else
        res[0] = res[1] = res[2] = NAN;
}

static void cpu_accumulate_xpay(wd_backend *be, wd_complex a, wd_field *x, const wd_field *y,
                                wd_field *z, double b)
{
    const wd_backend_ops *k = blas3(be, "accumulate_xpay", x, y, NULL);
    if (k)
        k->accumulate_xpay(be, a, x, y, z, b);
}

static void cpu_residual_copy(wd_backend *be, const wd_field *x, double a, wd_field *y,
                              wd_field *z, double res[3])
{
    const wd_backend_ops *k = blas3(be, "residual_copy", y, x, NULL);
    if (k)
        k->residual_copy(be, x, a, y, z, res);
    else
        res[0] = res[1] = res[2] = NAN;
}

/* the precision of y and of every x[i] (0 and be->error set when they differ) */
static int multi_precision(wd_backend *be, const char *op, int k, const wd_field *const *x,
                           const wd_field *y)
{
    for (int i = 0; i < k; ++i)
        if (x[i]->precision != y->precision) {
            record(be, wd_fail(WD_ERR_INTERNAL, "CPU backend: %s on fields of different "
                               "precisions (x[%d] %d, y %d bytes)", op, i, x[i]->precision,
                               y->precision));
            return 0;
        }
    return y->precision;
}

static void cpu_multi_cdot(wd_backend *be, int k, const wd_field *const *x, const wd_field *y,
                           double *res)
{
    const int p = multi_precision(be, "multi_cdot", k, x, y);
    if (p)
        blas_for(p)->multi_cdot(be, k, x, y, res);
    else
        for (int i = 0; i < 2 * k; ++i)
            res[i] = NAN;
}

static void cpu_multi_caxpy(wd_backend *be, int k, const wd_complex *a, const wd_field *const *x,
                            wd_field *y)
{
    const int p = multi_precision(be, "multi_caxpy", k, x, y);
    if (p)
        blas_for(p)->multi_caxpy(be, k, a, x, y);
}

static const wd_backend_ops cpu_ops = {
    .name = "cpu",
    .close = cpu_close,
    .field_alloc = cpu_field_alloc,
    .field_free = cpu_field_free,
    .upload = cpu_upload,
    .download = cpu_download,
    .gauge_upload = cpu_gauge_upload,
    .gauge_free = cpu_gauge_free,
    .clover_upload = cpu_clover_upload,
    .clover_free = cpu_clover_free,
    .dslash = cpu_dslash,
    .zero = cpu_zero,
    .copy = cpu_copy,
    .ax = cpu_ax,
    .axpy = cpu_axpy,
    .xpay = cpu_xpay,
    .axpy_zpbx = cpu_axpy_zpbx,
    .caxpy = cpu_caxpy,
    .caxpbypz = cpu_caxpbypz,
    .cxpaypbz = cpu_cxpaypbz,
    .accumulate = cpu_accumulate,
    .norm2 = cpu_norm2,
    .cdot = cpu_cdot,
    .axpy_norm2 = cpu_axpy_norm2,
    .xpay_norm2 = cpu_xpay_norm2,
    .caxpy_norm2 = cpu_caxpy_norm2,
    .cdot_norm2 = cpu_cdot_norm2,
    .caxpy_norm2_cdot = cpu_caxpy_norm2_cdot,
    .multi_cdot = cpu_multi_cdot,
    .multi_caxpy = cpu_multi_caxpy,
    .bicgstab_update = cpu_bicgstab_update,
    .accumulate_xpay = cpu_accumulate_xpay,
    .residual_copy = cpu_residual_copy,
};

wd_status wd_backend_cpu_init(wd_backend *be)
{
    const size_t blocks = ((size_t)be->volume_cb + WD_REDUCE_BLOCK - 1) / WD_REDUCE_BLOCK;
    wd_cpu_ctx *c = calloc(1, sizeof *c);
    if (c)
        c->scratch = malloc(WD_CPU_REDUCE_RES * blocks * sizeof(double));
    if (!c || !c->scratch) {
        free(c);
        return wd_fail(WD_ERR_NOMEM, "CPU backend: cannot allocate %zu bytes of reduction scratch",
                       WD_CPU_REDUCE_RES * blocks * sizeof(double));
    }
    be->ctx = c;
    be->ops = &cpu_ops;
    return WD_OK;
}
