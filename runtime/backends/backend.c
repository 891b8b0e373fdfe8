/*
 * backend.c: the backend-independent half of wd_backend.h: choosing a
 * backend, the geometry of fields and gauge fields, and the memory account.
 *
 * The externally accessible functions are
 *   wd_backend_open, wd_backend_close    start / stop a backend for a lattice
 *   wd_backend_open_grid / _lattice      the same for this rank's block of a
 *                                        process grid (a wd_grid, or the
 *                                        public wd_lattice)
 *   wd_backend_probe                     (wdirac.h) open and close one on 4^4
 *   wd_field_create, wd_field_destroy    geometry from wd_spinor_layout_make,
 *                                        memory from the backend
 *   wd_gauge_create, wd_gauge_destroy    geometry from wd_gauge_layout_make,
 *                                        packing and memory from the backend
 *   wd_clover_create, wd_clover_destroy  the same for a clover field
 *   wd_field_create_multi, wd_field_view N right-hand sides in one block, views
 *   wd_upload_pair, wd_download_pair     both parities of a host-layout spinor
 *   wd_spinor_gauge_create / _destroy    a gauge transformation for them
 *   wd_dslash_group                      N right-hand sides through the
 *                                        multi-RHS kernels of an operator
 *   wd_blas_lanes, wd_blas_lanes5        a BLAS operation on many lanes, in one
 *                                        call where the backend has it
 *   wd_blas_multi_cdot, wd_blas_multi_caxpy   GCR's projections on k fields, in
 *                                        pieces reading y once each where the
 *                                        backend has them
 *   wd_variant_flops                     nominal flops a site of a variant
 *   wd_halo_policy_parse / _name         a halo policy from and to its name
 *   wd_backend_dslash_args               check a Dslash call against its variant
 *                                        and fill the kernel arguments (both
 *                                        backends' dslash entries use it)
 * bytes_allocated / bytes_peak count every field and gauge field the
 * backend holds (data, half-precision norms, padding).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "wd_backend.h"
#include "wd_core.h"
#include "wd_layout.h"
#include "wd_operator.h"

static const char *const halo_names[] = {"auto", "nccl", "copy", "kernel", "mpi"};

wd_status wd_halo_policy_parse(const char *name, wd_halo_policy *policy)
{
    for (int k = 0; k < 5; ++k)
        if (name && !strcmp(name, halo_names[k])) {
            *policy = (wd_halo_policy)k;
            return WD_OK;
        }
    return wd_fail(WD_ERR_INVALID, "no halo policy '%s' (auto, nccl, copy, kernel or mpi)",
                   name ? name : "(null)");
}

const char *wd_halo_policy_name(wd_halo_policy policy)
{
    return policy >= WD_HALO_AUTO && policy <= WD_HALO_MPI ? halo_names[policy] : "?";
}

wd_status wd_backend_open_grid(wd_backend *be, wd_backend_kind kind, const wd_grid *grid,
                               int pad)
{
    memset(be, 0, sizeof *be);
    be->grid = *grid;
    wd_halo_make(&be->halo, grid->local, grid->partitioned, grid->origin[3], grid->dims[3]);
    wd_spinor_layout l;
    wd_status st = wd_spinor_layout_make_halo(&l, grid->local, &be->halo, 8, pad);
    if (st != WD_OK)
        return st;
    memcpy(be->dims, grid->local, sizeof be->dims);
    be->volume_cb = l.volume_cb;
    be->pad = pad;
    switch (kind) {
    case WD_BACKEND_CPU:
        return wd_backend_cpu_init(be);
    case WD_BACKEND_CUDA:
        /* on a grid: NCCL (a build without it says so), one GPU per rank */
        return wd_backend_cuda_init(be);
    }
    return wd_fail(WD_ERR_INVALID, "backend %d: must be WD_BACKEND_CPU (0) or WD_BACKEND_CUDA (1)",
                   (int)kind);
}

wd_status wd_backend_open_lattice(wd_backend *be, wd_backend_kind kind, const wd_lattice *lat,
                                  int pad, int wrap)
{
    wd_grid grid;
    const wd_status st = wd_grid_make(&grid, lat->dims, lat->procs, lat->size, lat->rank, 4);
    if (st != WD_OK) {
        memset(be, 0, sizeof *be);
        return st;
    }
    for (int mu = 0; mu < 4; ++mu)
        grid.partitioned[mu] |= (wrap >> mu) & 1;
    return wd_backend_open_grid(be, kind, &grid, pad);
}

wd_status wd_backend_open(wd_backend *be, wd_backend_kind kind, const int dims[4], int pad)
{
    wd_grid grid;
    const wd_status st = wd_grid_make(&grid, dims, (const int[4]){1, 1, 1, 1}, 1, 0, 4);
    if (st != WD_OK) {
        memset(be, 0, sizeof *be);
        return st;
    }
    return wd_backend_open_grid(be, kind, &grid, pad);
}

void wd_backend_allsum(wd_backend *be, double *v, int n)
{
    if (be->grid.size == 1 || be->sum_local)
        return;
    /* a rank whose backend has failed sums NaN: every rank then meets the
     * failure in this same reduction, where the solvers agree on the
     * status (krylov.c), so a healthy step needs no agreement of its own */
    if (be->error != WD_OK)
        for (int i = 0; i < n; ++i)
            v[i] = NAN;
    const wd_status st = wd_comm_sum(v, n);
    if (st != WD_OK) {
        if (be->error == WD_OK)
            be->error = st;
        for (int i = 0; i < n; ++i)
            v[i] = NAN;
    }
}

wd_status wd_backend_agree(wd_status st)
{
    return wd_comm_agree(st);
}

wd_status wd_backend_probe(wd_backend_kind kind)
{
    /* several ranks: each probes the GPU it will run on (a probe on GPU 0
     * would bind every rank's CUDA work to GPU 0 before the grid's
     * backend could choose) */
    if (kind == WD_BACKEND_CUDA && wd_comm_size() > 1) {
        const wd_status sel = wd_backend_cuda_select();
        if (sel != WD_OK)
            return sel;
    }
    wd_backend be;
    const wd_status st = wd_backend_open(&be, kind, (const int[4]){4, 4, 4, 4}, 0);
    if (st == WD_OK)
        wd_backend_close(&be);
    return st;
}

void wd_backend_close(wd_backend *be)
{
    if (be->ops && be->ops->close)
        be->ops->close(be);
    be->ops = NULL;
    be->ctx = NULL;
}

static void account(wd_backend *be, size_t bytes)
{
    be->bytes_allocated += bytes;
    if (be->bytes_allocated > be->bytes_peak)
        be->bytes_peak = be->bytes_allocated;
}

wd_status wd_field_create_multi(wd_backend *be, wd_field *f, int precision, int nrhs)
{
    if (nrhs < 1)
        return wd_fail(WD_ERR_INVALID, "a multi-RHS field of %d right-hand sides", nrhs);
    memset(f, 0, sizeof *f);
    wd_spinor_layout l;
    wd_status st = wd_spinor_layout_make_halo(&l, be->dims, &be->halo, precision, be->pad);
    if (st != WD_OK)
        return st;
    f->precision = l.precision;
    f->width = l.width;
    f->elements = l.elements;
    f->volume_cb = l.volume_cb;
    f->stride = l.stride;
    /* the backend allocates what bytes / norm_bytes say, norms after data */
    f->bytes = l.bytes * (size_t)nrhs;
    f->norm_bytes = l.norm_bytes * (size_t)nrhs;
    st = be->ops->field_alloc(be, f);
    if (st != WD_OK) {
        memset(f, 0, sizeof *f);
        return st;
    }
    account(be, f->bytes + f->norm_bytes);
    f->bytes = l.bytes;
    f->norm_bytes = l.norm_bytes;
    f->nrhs = nrhs;
    return WD_OK;
}

wd_status wd_field_create(wd_backend *be, wd_field *f, int precision)
{
    return wd_field_create_multi(be, f, precision, 1);
}

wd_field wd_field_view(const wd_field *f, int first, int count)
{
    wd_field v = *f;
    v.data = (char *)f->data + (size_t)first * f->bytes;
    v.norm = f->norm ? f->norm + (size_t)first * (f->norm_bytes / sizeof(float)) : NULL;
    v.nrhs = count;
    v.view = 1;
    return v;
}

void wd_field_destroy(wd_backend *be, wd_field *f)
{
    if (!f->data || f->view)
        return;
    const size_t n = f->nrhs > 1 ? (size_t)f->nrhs : 1;
    be->bytes_allocated -= n * (f->bytes + f->norm_bytes);
    /* the backend frees what it allocated: the whole block */
    f->bytes *= n;
    f->norm_bytes *= n;
    be->ops->field_free(be, f);
    memset(f, 0, sizeof *f);
}

int wd_backend_multi_rhs(const wd_backend *be)
{
    /* both backends, on one process and on a grid (their exchanges carry
     * every right-hand side's faces of a call) */
    return be->ops != NULL;
}

int wd_backend_multi_rhs_pays(const wd_backend *be)
{
    return be->ops != NULL && !strcmp(be->ops->name, "cuda");
}

int wd_variants_nrhs(int variant)
{
    return wd_variants[variant].nrhs;
}

int wd_dslash_groups(int variant, const wd_field *in)
{
    const int n = wd_variants[variant].nrhs;
    return n > 1 && in->nrhs >= 2 * n && in->nrhs % n == 0 ? in->nrhs / n : 1;
}

wd_status wd_dslash_group(wd_backend *be, wd_kernel_for_nrhs kernel, const void *ctx,
                          wd_field *out, const wd_gauge *g, const wd_clover *c,
                          const wd_field *in, const wd_field *x, double a, int parity,
                          int count, wd_group_plan *plan)
{
    const int multi = wd_backend_multi_rhs(be);
    wd_status st = WD_OK;
    if (plan)
        plan->calls = 0;
    for (int q = 0; q < count && st == WD_OK;) {
        /* the largest count the registry has a kernel for (the manifest decides) */
        int n = multi ? count - q : 1, k = -1;
        for (; n >= 1 && (k = kernel(ctx, n)) < 0; --n)
            ;
        if (k < 0)
            return wd_fail(WD_ERR_NOT_BUILT, "no one-RHS kernel for this operator is built");
        /* as many groups of n as fit, in one launch */
        const int m = n > 1 ? (count - q) / n * n : 1;
        wd_field vo = wd_field_view(out, q, m), vi = wd_field_view(in, q, m);
        wd_field vx = x ? wd_field_view(x, q, m) : vo;
        st = wd_dslash_clover(be, k, &vo, g, c, &vi, x ? &vx : NULL, a, parity);
        if (plan && plan->calls < WD_GROUP_PLAN_MAX) {
            plan->variant[plan->calls] = k;
            plan->nrhs[plan->calls++] = m;
        }
        q += m;
    }
    return st;
}

static wd_status no_device_arrays(const wd_backend *be)
{
    return wd_fail(WD_ERR_INVALID, "the %s backend takes host arrays only, not device memory",
                   be->ops->name);
}

static wd_status no_spinor_gauge(const wd_backend *be)
{
    return wd_fail(WD_ERR_INVALID, "the %s backend applies no gauge transformation to the "
                   "fields it transfers", be->ops->name);
}

wd_status wd_upload_pair(wd_backend *be, wd_field *even, wd_field *odd, const double *src,
                         int on_device, const wd_spinor_gauge *tf)
{
    if (be->ops->upload_pair)
        return be->ops->upload_pair(be, even, odd, src, on_device, tf);
    if (on_device)
        return no_device_arrays(be);
    if (tf)
        return no_spinor_gauge(be);
    wd_status st = be->ops->upload(be, even, src, 0);
    return st == WD_OK && odd ? be->ops->upload(be, odd, src, 1) : st;
}

wd_status wd_download_pair(wd_backend *be, double *dst, const wd_field *even, const wd_field *odd,
                           int on_device, const wd_spinor_gauge *tf)
{
    if (be->ops->download_pair)
        return be->ops->download_pair(be, dst, even, odd, on_device, tf);
    if (on_device)
        return no_device_arrays(be);
    if (tf)
        return no_spinor_gauge(be);
    wd_status st = be->ops->download(be, dst, even, 0);
    return st == WD_OK && odd ? be->ops->download(be, dst, odd, 1) : st;
}

int wd_spinor_gauge_supported(const wd_backend *be)
{
    return be->ops->spinor_gauge_upload != NULL;
}

wd_status wd_spinor_gauge_create(wd_backend *be, wd_spinor_gauge *tf, const double *g)
{
    memset(tf, 0, sizeof *tf);
    if (!wd_spinor_gauge_supported(be))
        return no_spinor_gauge(be);
    tf->bytes = wd_volume(be->dims) * 9 * 2 * sizeof(double);
    const wd_status st = be->ops->spinor_gauge_upload(be, tf, g);
    if (st != WD_OK) {
        memset(tf, 0, sizeof *tf);
        return st;
    }
    account(be, tf->bytes);
    return WD_OK;
}

void wd_spinor_gauge_destroy(wd_backend *be, wd_spinor_gauge *tf)
{
    if (!tf->data)
        return;
    be->bytes_allocated -= tf->bytes;
    be->ops->spinor_gauge_free(be, tf);
    memset(tf, 0, sizeof *tf);
}

/* The backward ghost links of every partitioned mu: each rank sends the
 * links U_mu of its last mu-slice forward (face order: the other three
 * coordinates lexicographic) and receives its backward neighbour's.  The
 * exchange API sends both faces; the first slice sent backward is unused. */
static wd_status gauge_ghosts(wd_backend *be, const double *host, double *ghost[4])
{
    const int *L = be->dims;
    wd_status st = WD_OK;
    for (int mu = 0; mu < 4 && st == WD_OK; ++mu) {
        if (!be->halo.part[mu])
            continue;
        const size_t nface = 2 * (size_t)be->halo.face_cb[mu], bytes = nface * 18 * sizeof(double);
        double *send = malloc(2 * bytes), *unused = malloc(bytes);
        ghost[mu] = malloc(bytes);
        st = send && unused && ghost[mu] ? WD_OK
             : wd_fail(WD_ERR_NOMEM, "backend: cannot allocate the gauge halo of mu = %d "
                       "(%zu bytes)", mu, 3 * bytes);
        /* every rank takes the same branch before the exchange */
        if ((st = wd_comm_agree(st)) != WD_OK) {
            free(send);
            free(unused);
            return st;
        }
        for (size_t f = 0; f < nface; ++f) {
            int c[4];
            size_t r = f;
            for (int nu = 0; nu < 4; ++nu)
                if (nu != mu) {
                    c[nu] = (int)(r % (size_t)L[nu]);
                    r /= (size_t)L[nu];
                }
            for (int side = 0; side < 2; ++side) {
                c[mu] = side == WD_FWD ? L[mu] - 1 : 0;
                const size_t site = c[0] + (size_t)L[0] * (c[1] + (size_t)L[1] * (c[2] + (size_t)L[2] * c[3]));
                memcpy(send + side * nface * 18 + 18 * f, host + 18 * (4 * site + mu),
                       18 * sizeof(double));
            }
        }
        const void *out[2] = {send, send + nface * 18};
        void *in[2] = {unused, ghost[mu]};
        wd_comm_halo h;
        st = wd_comm_halo_start(&h, &be->grid, mu, out, in, bytes);
        if (st == WD_OK)
            st = wd_comm_halo_wait(&h);
        free(send);
        free(unused);
    }
    return st;
}

wd_status wd_gauge_create(wd_backend *be, wd_gauge *g, const double *host, int precision,
                          int recon, int gauge_fix, int tbc)
{
    memset(g, 0, sizeof *g);
    if (tbc != WD_TIME_PERIODIC && tbc != WD_TIME_ANTIPERIODIC)
        return wd_fail(WD_ERR_INVALID, "time boundary %d: must be +1 or -1", tbc);
    wd_gauge_layout l;
    wd_status st = wd_gauge_layout_make_halo(&l, be->dims, &be->halo, precision, recon, gauge_fix,
                                             be->pad);
    if (st != WD_OK)
        return st;
    g->precision = l.precision;
    g->recon = l.recon;
    g->gauge_fix = l.gauge_fix;
    g->tbc = tbc;
    memcpy(g->goff, l.goff, sizeof g->goff);
    memcpy(g->gstride, l.gstride, sizeof g->gstride);
    g->tslice_cb0 = l.tslice_cb0;
    g->tslice_bwd = l.tslice_bwd;
    g->bytes = l.bytes;
    double *ghost[4] = {NULL, NULL, NULL, NULL};
    st = gauge_ghosts(be, host, ghost);
    if (st == WD_OK) {
        st = be->ops->gauge_upload(be, g, host, (const double *const *)ghost);
        /* a link one rank refuses (recon 8) fails the field on every rank */
        const wd_status all = wd_comm_agree(st);
        if (st == WD_OK && all != WD_OK)
            be->ops->gauge_free(be, g);
        st = all;
    }
    for (int mu = 0; mu < 4; ++mu)
        free(ghost[mu]);
    if (st != WD_OK) {
        memset(g, 0, sizeof *g);
        return st;
    }
    account(be, g->bytes);
    return WD_OK;
}

void wd_gauge_destroy(wd_backend *be, wd_gauge *g)
{
    if (!g->data)
        return;
    be->bytes_allocated -= g->bytes;
    be->ops->gauge_free(be, g);
    memset(g, 0, sizeof *g);
}

wd_status wd_clover_create(wd_backend *be, wd_clover *c, const double *blocks, int precision)
{
    memset(c, 0, sizeof *c);
    wd_clover_layout l;
    wd_status st = wd_clover_layout_make(&l, be->dims, precision, be->pad);
    if (st != WD_OK)
        return st;
    c->precision = precision;
    c->stride = l.stride;
    c->bytes = l.bytes;
    c->norm_bytes = l.norm_bytes;
    st = be->ops->clover_upload(be, c, blocks);
    if (st != WD_OK) {
        memset(c, 0, sizeof *c);
        return st;
    }
    be->bytes_allocated += 2 * (c->bytes + c->norm_bytes);
    if (be->bytes_allocated > be->bytes_peak)
        be->bytes_peak = be->bytes_allocated;
    return WD_OK;
}

void wd_clover_destroy(wd_backend *be, wd_clover *c)
{
    if (!c->data[0])
        return;
    be->bytes_allocated -= 2 * (c->bytes + c->norm_bytes);
    be->ops->clover_free(be, c);
    memset(c, 0, sizeof *c);
}

double wd_variant_flops(int variant)
{
    const wd_variant *v = &wd_variants[variant];
    const double xpay = v->xpay ? WD_XPAY_FLOPS : 0.0;
    switch (v->op) {
    case WD_OP_WILSON_CLOVER: return WD_DSLASH_FLOPS + WD_CLOVER_FLOPS + xpay;
    case WD_OP_CLOVER: return WD_CLOVER_FLOPS + xpay;
    default: return WD_DSLASH_FLOPS + xpay;
    }
}

wd_status wd_backend_dslash_args(const wd_backend *be, int variant, wd_field *out,
                                 const wd_gauge *g, const wd_clover *c, const wd_field *in,
                                 const wd_field *x, double a, int parity, wd_dslash_args *args)
{
    if (variant < 0 || variant >= wd_variant_count)
        return wd_fail(WD_ERR_NOT_BUILT, "Dslash variant index %d is not in this build", variant);
    const wd_variant *v = &wd_variants[variant];
    const int hopping = v->op != WD_OP_CLOVER, clover = v->op != WD_OP_WILSON;
    if ((hopping && (!g || v->precision != g->precision || v->recon != g->recon ||
                     v->gauge_fix != g->gauge_fix)) ||
        (clover && (!c || !c->data[0] || c->precision != v->precision)) ||
        out->precision != v->precision || in->precision != v->precision ||
        (v->xpay && (!x || x->precision != v->precision || x == out)) || in == out ||
        (parity & ~1))
        return wd_fail(WD_ERR_INTERNAL, "%s: fields, gauge or clover field do not match the "
                       "variant (or out aliases an input, or parity %d)", v->name, parity);
    const int groups = wd_dslash_groups(variant, in);
    if (v->nrhs > 1 &&
        (in->nrhs < v->nrhs || out->nrhs < v->nrhs || (x && x->nrhs < v->nrhs) ||
         (groups > 1 && (out->nrhs != in->nrhs || (x && x->nrhs != in->nrhs))) ||
         in->bytes != out->bytes || (x && x->bytes != out->bytes) ||
         in->data == out->data || (x && x->data == out->data)))
        return wd_fail(WD_ERR_INTERNAL, "%s: needs fields of %d right-hand sides", v->name,
                       v->nrhs);
    memset(args, 0, sizeof *args);
    if (clover) {
        args->clover = c->data[parity];
        args->clover_norm = c->norm[parity];
        args->clover_stride = c->stride;
    }
    args->volume_cb = be->volume_cb;
    args->stride = out->stride;
    args->parity = parity;
    args->out = out->data;
    args->out_norm = out->norm;
    args->in = in->data;
    args->in_norm = in->norm;
    args->x = x ? x->data : NULL;
    args->x_norm = x ? x->norm : NULL;
    args->a = a;
    args->rhs_stride = (long)(out->bytes / ((size_t)out->width * (size_t)out->precision));
    args->groups = groups;
    args->rhs_norm_stride = (int)(out->norm_bytes / sizeof(float));
    for (int mu = 0; mu < 4; ++mu)
        args->dims[mu] = be->dims[mu];
    if (!hopping)
        return WD_OK;
    for (int mu = 0; mu < 4; ++mu) {
        args->gstride[mu] = g->gstride[mu];
        args->goff[mu][0] = g->goff[mu][0];
        args->goff[mu][1] = g->goff[mu][1];
    }
    args->tslice_cb0 = g->tslice_cb0;
    args->tslice_bwd = g->tslice_bwd;
    args->tbc = g->tbc;
    for (int mu = 0; mu < 4; ++mu) {
        args->part |= be->halo.part[mu] << mu;
        args->ghost[mu][0] = be->halo.ghost[mu][0];
        args->ghost[mu][1] = be->halo.ghost[mu][1];
    }
    args->t_origin = be->halo.t_origin;
    args->global_T = be->halo.global_T;
    args->gauge = g->data;
    return WD_OK;
}

/* flops per real of each lane operation (the one-lane wrappers' counts) */
static double lane_flops(wd_lane_op op, const wd_field *y)
{
    switch (op) {
    case WD_LANE_AXPY: case WD_LANE_XPAY: case WD_LANE_NORM2: return 2;
    case WD_LANE_AXPY_ZPBX: case WD_LANE_CAXPY: case WD_LANE_CDOT: case WD_LANE_AXPY_NORM2:
        return 4;
    case WD_LANE_CDOT_NORM2: return 6;
    case WD_LANE_ACCUMULATE: return y ? 8 : 4;
    case WD_LANE_CAXPY_NORM2_CDOT: return 10;
    case WD_LANE_ZERO: return 0;
    /* the fused steps: their two operations' counts (a copy counts none) */
    case WD_LANE_XPAY_NORM2_COPY: return 4;
    case WD_LANE_NORM2_COPY: return 2;
    case WD_LANE_BICGSTAB_UPDATE:
        return lane_flops(WD_LANE_CAXPBYPZ, y) + lane_flops(WD_LANE_CAXPY_NORM2_CDOT, y);
    case WD_LANE_ACCUMULATE_XPAY:
        return lane_flops(WD_LANE_ACCUMULATE, NULL) + lane_flops(WD_LANE_XPAY, y);
    default: return 8;  /* caxpbypz, cxpaypbz */
    }
}

/* whether op reduces (returns values in res) */
static int lane_reduces(wd_lane_op op)
{
    switch (op) {
    case WD_LANE_NORM2: case WD_LANE_CDOT: case WD_LANE_AXPY_NORM2: case WD_LANE_CDOT_NORM2:
    case WD_LANE_CAXPY_NORM2_CDOT: case WD_LANE_BICGSTAB_UPDATE: case WD_LANE_XPAY_NORM2_COPY:
    case WD_LANE_NORM2_COPY:
        return 1;
    default:
        return 0;
    }
}

/* z, unless NULL or y's memory, = y (the copy of the *_COPY steps) */
static void copy_to(wd_backend *be, wd_field *z, const wd_field *y)
{
    if (z && z->data != y->data)
        be->ops->copy(be, z, y);
}

/* one lane through the one-lane table entries (a fused step through its
 * entry where the backend has one, else its operations in turn); r: its 3
 * results */
static void lane_one(wd_backend *be, wd_lane_op op, wd_complex a, wd_complex b, const wd_field *x,
                     wd_field *y, wd_field *z, const wd_field *w, const wd_field *u, double *r)
{
    const wd_backend_ops *o = be->ops;
    const wd_complex zero = {0, 0}, minus_b = {-b.re, -b.im};
    switch (op) {
    case WD_LANE_AXPY: o->axpy(be, a.re, x, y); break;
    case WD_LANE_XPAY: o->xpay(be, x, a.re, y); break;
    case WD_LANE_AXPY_ZPBX: o->axpy_zpbx(be, a.re, (wd_field *)x, y, z, b.re); break;
    case WD_LANE_CAXPY: o->caxpy(be, a, x, y); break;
    case WD_LANE_CAXPBYPZ: o->caxpbypz(be, a, x, b, y, z); break;
    case WD_LANE_CXPAYPBZ: o->cxpaypbz(be, x, a, y, b, z); break;
    case WD_LANE_ACCUMULATE: o->accumulate(be, a, x, b, y, z); break;
    case WD_LANE_NORM2: r[0] = o->norm2(be, x); break;
    case WD_LANE_CDOT: {
        const wd_complex c = o->cdot(be, x, y);
        r[0] = c.re;
        r[1] = c.im;
        break;
    }
    case WD_LANE_AXPY_NORM2: r[0] = o->axpy_norm2(be, a.re, x, y); break;
    case WD_LANE_CDOT_NORM2: o->cdot_norm2(be, x, y, r); break;
    case WD_LANE_CAXPY_NORM2_CDOT: o->caxpy_norm2_cdot(be, a, x, y, z, r); break;
    case WD_LANE_ZERO: o->zero(be, y); break;
    case WD_LANE_BICGSTAB_UPDATE:
        if (o->bicgstab_update) {
            o->bicgstab_update(be, a, x, b, y, z, w, u, r);
            break;
        }
        if (z->precision == x->precision)
            o->caxpbypz(be, a, x, b, y, z);
        else
            o->accumulate(be, a, x, b, y, z);
        o->caxpy_norm2_cdot(be, minus_b, w, y, u, r);
        break;
    case WD_LANE_ACCUMULATE_XPAY:
        if (o->accumulate_xpay) {
            o->accumulate_xpay(be, a, (wd_field *)x, y, z, b.re);
            break;
        }
        o->accumulate(be, a, x, zero, NULL, z);
        o->xpay(be, y, b.re, (wd_field *)x);
        break;
    case WD_LANE_XPAY_NORM2_COPY:
        if (o->residual_copy) {
            o->residual_copy(be, x, a.re, y, z, r);
            break;
        }
        r[0] = o->xpay_norm2(be, x, a.re, y);
        copy_to(be, z, y);
        break;
    case WD_LANE_NORM2_COPY:
        if (o->residual_copy) {
            o->residual_copy(be, NULL, 0, (wd_field *)x, z, r);
            break;
        }
        r[0] = o->norm2(be, x);
        copy_to(be, z, x);
        break;
    default: break;
    }
}

void wd_blas_lanes5(wd_backend *be, wd_lane_op op, const wd_lanes *l, const wd_field *x,
                    const wd_field *y, const wd_field *z, const wd_field *w, const wd_field *u,
                    double *res)
{
    if (l->n <= 0)
        return;
    if (l->n > WD_LANES_MAX || op < 0 || op >= WD_LANE_OPS ||
        (op == WD_LANE_BICGSTAB_UPDATE && !(x && y && z && w && u)) ||
        (op == WD_LANE_ACCUMULATE_XPAY && !(x && y && z)) ||
        (op == WD_LANE_XPAY_NORM2_COPY && !(x && y)) || (op == WD_LANE_NORM2_COPY && !x) ||
        (op == WD_LANE_ZERO && !y)) {
        if (be->error == WD_OK)
            be->error = wd_fail(WD_ERR_INTERNAL, "wd_blas_lanes: operation %d on %d lanes "
                                "(at most %d) or without its operands", (int)op, l->n,
                                WD_LANES_MAX);
        return;
    }
    be->flops += lane_flops(op, y) * wd_site_reals_(be) * l->n;
    if (be->ops->blas_lanes) {
        be->ops->blas_lanes(be, op, l, x, y, z, w, u, res);
        return;
    }
    /* every lane's local sums first (wd_backend_allsum leaves them local),
     * then one global sum of them all: each value is summed over the ranks
     * in rank order as the lane's own call would sum it, so the bits are
     * the same, for one collective a call instead of one a lane */
    double all[3 * WD_LANES_MAX] = {0};
    be->sum_local = 1;
    for (int j = 0; j < l->n; ++j) {
        const int q = l->idx[j];
        const wd_field *const in[5] = {x, y, z, w, u};
        wd_field v[5];
        for (int k = 0; k < 5; ++k)
            if (in[k])
                v[k] = wd_field_view(in[k], q, 1);
        lane_one(be, op, l->a[j], l->b[j], x ? &v[0] : NULL, y ? &v[1] : NULL, z ? &v[2] : NULL,
                 w ? &v[3] : NULL, u ? &v[4] : NULL, all + 3 * j);
    }
    be->sum_local = 0;
    if (lane_reduces(op))
        wd_backend_allsum(be, all, 3 * l->n);
    if (res)
        memcpy(res, all, 3 * (size_t)l->n * sizeof *res);
}

void wd_blas_lanes(wd_backend *be, wd_lane_op op, const wd_lanes *l, const wd_field *x,
                   const wd_field *y, const wd_field *z, double *res)
{
    wd_blas_lanes5(be, op, l, x, y, z, NULL, NULL, res);
}

void wd_blas_multi_cdot(wd_backend *be, int k, const wd_field *const *x, const wd_field *y,
                        double *res)
{
    be->flops += 4.0 * k * wd_site_reals_(be);
    for (int i0 = 0; i0 < k; i0 += WD_BLAS_MULTI) {
        const int m = k - i0 < WD_BLAS_MULTI ? k - i0 : WD_BLAS_MULTI;
        if (be->ops->multi_cdot) {
            be->ops->multi_cdot(be, m, x + i0, y, res + 2 * i0);
            continue;
        }
        for (int i = 0; i < m; ++i) {
            const wd_complex d = be->ops->cdot(be, x[i0 + i], y);
            res[2 * (i0 + i)] = d.re;
            res[2 * (i0 + i) + 1] = d.im;
        }
    }
}

void wd_blas_multi_caxpy(wd_backend *be, int k, const wd_complex *a, const wd_field *const *x,
                         wd_field *y)
{
    be->flops += 4.0 * k * wd_site_reals_(be);
    for (int i0 = 0; i0 < k; i0 += WD_BLAS_MULTI) {
        const int m = k - i0 < WD_BLAS_MULTI ? k - i0 : WD_BLAS_MULTI;
        if (be->ops->multi_caxpy)
            be->ops->multi_caxpy(be, m, a + i0, x + i0, y);
        else
            for (int i = 0; i < m; ++i)
                be->ops->caxpy(be, a[i0 + i], x[i0 + i], y);
    }
}
