/*
 * backend_cuda_host.c: the CUDA backend of wd_backend.h, host half.  Fields
 * and gauge fields live in GPU memory in the packed layout of wd_kernel.h:
 * they are packed on the host (wd_layout.h) and copied over, exactly as the
 * CPU backend packs them, so the two backends hold the same bytes.  The
 * Dslash runs the generated CUDA kernel of the variant with its autotuned
 * block size; the BLAS are backend_cuda.cu's kernels.  The solvers' sources
 * and solutions take the faster route of upload_pair / download_pair: the
 * whole host-layout array in one staged transfer, converted on the GPU to
 * the same bytes (and gauge-transformed there for gauge-fixed solves).
 *
 * On a process grid (one GPU per rank, NCCL between them) fields carry the
 * ghost faces of wd_halo, the gauge field its backward ghost links, and
 * each Dslash runs backend_cuda.cu's wd_cuda_be_dslash_grid: the exchange
 * of the input's ghosts (of every right-hand side a multi-RHS call covers,
 * one message per neighbour and direction), overlapped with the interior
 * sites' kernel, then the boundary; reductions
 * are summed over the ranks.  The result equals one GPU's bit for bit.
 *
 * The externally accessible functions are
 *   wd_backend_cuda_init    fill in the ops table, open the device context
 *                           (on a grid: select the device, open NCCL)
 *   wd_backend_cuda_select  collective: run this rank on the GPU of its
 *                           local rank (every multi-process program calls
 *                           it, or the grid backend's open does, before
 *                           any other CUDA work)
 *   wd_backend_cuda_time_dslash  median time of the halo exchange and the
 *                           Dslash together, and of the exchange alone
 *   wd_backend_cuda_set_overlap  overlap the exchange with the interior
 *                           (the default) or not
 *   wd_backend_cuda_halo_launches  the gather and scatter launches of the
 *                           last exchange
 *   wd_backend_cuda_set_halo  collective: the halo routes (peer to peer
 *                           within a node, NCCL; WDIRAC_HALO sets them at
 *                           the open)
 *   wd_backend_cuda_halo_route  each exchanged dimension's route
 *   wd_backend_cuda_halo_tuning  how AUTO chose the last exchange's route
 * Compiled only in builds with CUDA; cuda_rt_none.c answers otherwise.
 */
#include <complex.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

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
wd_status wd_cuda_be_raw(wd_backend *be, size_t bytes, double **raw);
wd_status wd_cuda_be_from_host_layout(wd_backend *be, wd_field *even, wd_field *odd,
                                      const double *raw, const double *gauge);
wd_status wd_cuda_be_to_host_layout(wd_backend *be, double *raw, const wd_field *even,
                                    const wd_field *odd, const double *gauge);
wd_status wd_cuda_be_scan_host_layout(wd_backend *be, const double *raw, long n, double *norm2,
                                      long *bad);
wd_status wd_cuda_be_grid_open(wd_backend *be, const int *idx, long total,
                               const long off[4][2][2], const int *order, const int inner[2],
                               int policy);
wd_status wd_cuda_be_set_halo(wd_backend *be, int policy);
void wd_cuda_be_halo_route(const wd_backend *be, char *buf, size_t n);
void wd_cuda_be_halo_tuning(const wd_backend *be, char *buf, size_t n);
wd_status wd_cuda_be_dslash_grid(wd_backend *be, int variant, const wd_dslash_args *args,
                                 int block, const wd_field *in, int parity, wd_status pending);
void wd_cuda_be_set_overlap(wd_backend *be, int on);
void wd_cuda_be_halo_launches(const wd_backend *be, int *pack, int *unpack);
int wd_cuda_be_dslash_reduces(const wd_backend *be, int variant);
double *wd_cuda_be_warp_partial(wd_backend *be);
wd_status wd_cuda_be_dslash_reduce(wd_backend *be, int variant, const wd_dslash_args *args,
                                   int block, double res[3]);
wd_status wd_cuda_be_time(wd_backend *be, int variant, const wd_dslash_args *args, int block,
                          const wd_field *in, int parity, int reps, double *us, double *halo_us);
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
void wd_cuda_be_blas_lanes(wd_backend *be, wd_lane_op op, const wd_lanes *l, const wd_field *x,
                           const wd_field *y, const wd_field *z, const wd_field *w,
                           const wd_field *u, double *res);
void wd_cuda_be_multi_cdot(wd_backend *be, int k, const wd_field *const *x, const wd_field *y,
                           double *res);
void wd_cuda_be_multi_caxpy(wd_backend *be, int k, const wd_complex *a, const wd_field *const *x,
                            wd_field *y);

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
    wd_status st = wd_spinor_layout_make_halo(l, be->dims, &be->halo, f->precision, be->pad);
    return st == WD_OK ? wd_cuda_be_staging(be, l->bytes + l->norm_bytes, buf) : st;
}

/* Copy the local sites of every sub-array and their norms between the
 * staging buffer and the field: the ghost faces and the padding on the
 * device keep what they hold (the halo exchange writes the ghosts). */
static wd_status copy_sites(const wd_backend *be, const wd_field *f, const wd_spinor_layout *l,
                            void *buf, int to_device)
{
    const size_t eb = (size_t)l->width * l->precision, pitch = (size_t)l->stride * eb;
    const size_t width = (size_t)be->volume_cb * eb;
    char *norm = (char *)buf + l->bytes;
    wd_status st = to_device ? wd_cuda_h2d_rows(f->data, buf, pitch, width, l->elements)
                             : wd_cuda_d2h_rows(buf, f->data, pitch, width, l->elements);
    if (st == WD_OK && l->norm_bytes)
        st = to_device ? wd_cuda_h2d(f->norm, norm, (size_t)be->volume_cb * sizeof(float))
                       : wd_cuda_d2h(norm, f->norm, (size_t)be->volume_cb * sizeof(float));
    return st;
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
    return copy_sites(be, f, &l, buf, 1);
}

static wd_status download(wd_backend *be, double *host, const wd_field *f, int parity)
{
    wd_spinor_layout l;
    void *buf;
    wd_status st = staging(be, f, &l, &buf);
    if (st != WD_OK)
        return st;
    st = copy_sites(be, f, &l, buf, 0);
    if (st == WD_OK)
        wd_unpack_spinor(&l, (double complex *)host, buf, (const float *)((char *)buf + l.bytes),
                         be->dims, parity);
    return st;
}

/*
 * Sources and solutions in the host layout: one transfer of the whole
 * block (complex double) through two pinned chunks, the host side's copy
 * into and out of them threaded, then one kernel converting both parities
 * on the GPU (backend_cuda.cu, bit for bit the host packing).  A device
 * array (on_device) skips the transfer.  The chunk size and the copy's
 * threads were measured on the H100 machine (16 cores, PCIe 5; 170 MB each
 * way, medians of 7): 16 MB chunks copied by 8 threads move 43-45 GB/s,
 * 8 MB by 16 threads (the earlier choice) 29-34 GB/s, 4 threads 24-27,
 * the whole array pinned and copied at once 48-50, cudaMemcpy from
 * pageable memory 8-10 (bench/results/h100-2026-11-25b/run2/xfer.txt).
 */
enum { STAGED_CHUNK = 16 << 20, COPY_THREADS = 8 };

static void copy_threaded(void *dst, const void *src, size_t bytes)
{
    int parts = COPY_THREADS;
#ifdef _OPENMP
    if (omp_get_max_threads() < parts)
        parts = omp_get_max_threads();
#endif
#pragma omp parallel for schedule(static) num_threads(parts)
    for (int k = 0; k < parts; ++k) {
        const size_t lo = bytes * k / parts, hi = bytes * (k + 1) / parts;
        memcpy((char *)dst + lo, (const char *)src + lo, hi - lo);
    }
}

static size_t host_layout_bytes(const wd_backend *be)
{
    return wd_volume(be->dims) * 24 * sizeof(double);
}

static const double *tf_data(const wd_spinor_gauge *tf)
{
    return tf ? (const double *)tf->data : NULL;
}

static wd_status stage_host(wd_backend *be, const double *src, const double **dev)
{
    const size_t bytes = host_layout_bytes(be);
    double *raw;
    void *pinned;
    wd_status st = wd_cuda_be_raw(be, bytes, &raw);
    if (st == WD_OK)
        st = wd_cuda_be_staging(be, 2 * STAGED_CHUNK, &pinned);
    if (st == WD_OK)
        st = wd_cuda_h2d_staged(raw, src, bytes, pinned, STAGED_CHUNK, copy_threaded);
    *dev = st == WD_OK ? raw : NULL;
    return st;
}

/* odd NULL (the even sites alone) with on_device only: the staged copy
 * would carry the odd sites too */
static wd_status one_parity_staged(void)
{
    return wd_fail(WD_ERR_INVALID, "CUDA backend: a transfer of the even sites alone needs the "
                   "host layout in device memory (on_device)");
}

static wd_status upload_pair(wd_backend *be, wd_field *even, wd_field *odd, const double *src,
                             int on_device, const wd_spinor_gauge *tf)
{
    if (!odd && !on_device)
        return one_parity_staged();
    const double *dev = src;
    wd_status st = on_device ? WD_OK : stage_host(be, src, &dev);
    return st == WD_OK ? wd_cuda_be_from_host_layout(be, even, odd, dev, tf_data(tf)) : st;
}

static wd_status download_pair(wd_backend *be, double *dst, const wd_field *even,
                               const wd_field *odd, int on_device, const wd_spinor_gauge *tf)
{
    if (on_device) {
        wd_status st = wd_cuda_be_to_host_layout(be, dst, even, odd, tf_data(tf));
        /* the caller's arrays live on other streams: done before return */
        return st == WD_OK ? wd_cuda_sync() : st;
    }
    if (!odd)
        return one_parity_staged();
    const size_t bytes = host_layout_bytes(be);
    double *raw;
    void *pinned;
    wd_status st = wd_cuda_be_raw(be, bytes, &raw);
    if (st == WD_OK)
        st = wd_cuda_be_staging(be, 2 * STAGED_CHUNK, &pinned);
    if (st == WD_OK)
        st = wd_cuda_be_to_host_layout(be, raw, even, odd, tf_data(tf));
    return st == WD_OK ? wd_cuda_d2h_staged(dst, raw, bytes, pinned, STAGED_CHUNK, copy_threaded)
                       : st;
}

/* the transformation as the host holds it: the conversion kernels read it
 * site by site */
static wd_status spinor_gauge_upload(wd_backend *be, wd_spinor_gauge *tf, const double *host)
{
    (void)be;
    void *p = NULL;
    wd_status st = wd_cuda_malloc(&p, tf->bytes, "the gauge transformation of sources");
    if (st == WD_OK)
        st = wd_cuda_h2d(p, host, tf->bytes);
    if (st != WD_OK) {
        wd_cuda_free(p);
        return st;
    }
    tf->data = p;
    return WD_OK;
}

static void spinor_gauge_free(wd_backend *be, wd_spinor_gauge *tf)
{
    (void)be;
    wd_cuda_free(tf->data);
}

static wd_status scan_device(wd_backend *be, const double *src, size_t n, double *norm2, long *bad)
{
    return wd_cuda_be_scan_host_layout(be, src, (long)n, norm2, bad);
}

/* ghost: the backward ghost links of each partitioned mu (NULL elsewhere) */
static wd_status gauge_upload(wd_backend *be, wd_gauge *g, const double *host,
                              const double *const ghost[4])
{
    wd_gauge_layout l;
    wd_status st = wd_gauge_layout_make_halo(&l, be->dims, &be->halo, g->precision, g->recon,
                                             g->gauge_fix, be->pad);
    if (st != WD_OK)
        return st;
    void *buf = calloc(1, l.bytes);
    if (!buf)
        return wd_fail(WD_ERR_NOMEM, "CUDA backend: host staging buffer of %zu bytes", l.bytes);
    st = wd_pack_gauge_halo(&l, buf, (const double complex *)host,
                            (const double complex *const *)ghost, be->dims);
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

static wd_status clover_upload(wd_backend *be, wd_clover *c, const double *blocks)
{
    wd_clover_layout l;
    wd_status st = wd_clover_layout_make(&l, be->dims, c->precision, be->pad);
    if (st != WD_OK)
        return st;
    void *buf = calloc(1, l.bytes + l.norm_bytes);
    if (!buf)
        return wd_fail(WD_ERR_NOMEM, "CUDA backend: host staging buffer of %zu bytes",
                       l.bytes + l.norm_bytes);
    float *norm = l.norm_bytes ? (float *)((char *)buf + l.bytes) : NULL;
    for (int p = 0; p < 2 && st == WD_OK; ++p) {
        wd_pack_clover(&l, buf, norm, blocks, be->dims, p);
        st = wd_cuda_malloc(&c->data[p], l.bytes, "the clover field");
        if (st == WD_OK)
            st = wd_cuda_h2d(c->data[p], buf, l.bytes);
        if (st == WD_OK && norm)
            st = wd_cuda_malloc((void **)&c->norm[p], l.norm_bytes, "the clover norms");
        if (st == WD_OK && norm)
            st = wd_cuda_h2d(c->norm[p], norm, l.norm_bytes);
    }
    free(buf);
    if (st != WD_OK)
        for (int p = 0; p < 2; ++p) {
            wd_cuda_free(c->data[p]);
            wd_cuda_free(c->norm[p]);
            c->data[p] = NULL;
            c->norm[p] = NULL;
        }
    return st;
}

static void clover_free(wd_backend *be, wd_clover *c)
{
    (void)be;
    for (int p = 0; p < 2; ++p) {
        wd_cuda_free(c->data[p]);
        wd_cuda_free(c->norm[p]);
    }
}

/* The block size and the groups a launch of variant's call on args (a
 * launch over several groups of right-hand sides may run as launches of
 * fewer, on one process: `local`): the tuner's choice (wd_tune_groups), or
 * a test's be->force_groups where it divides the groups; recorded in
 * be->launch_groups.  On a grid one launch covers the groups whose faces
 * one exchange carried. */
static wd_status launch_plan(wd_backend *be, int variant, const wd_dslash_args *args, int local,
                             int *per_launch, int *block)
{
    wd_status st;
    *per_launch = args->groups > 1 ? args->groups : 1;
    if (!local || args->groups <= 1) {
        st = wd_tune_dslash(variant, args, be->pad, block);
    } else if (be->force_groups > 0 && args->groups % be->force_groups == 0) {
        wd_dslash_args b = *args;
        b.groups = *per_launch = be->force_groups;
        st = wd_tune_dslash(variant, &b, be->pad, block);
    } else {
        st = wd_tune_groups(variant, args, be->pad, per_launch, block);
    }
    be->launch_groups = *per_launch;
    return st;
}

static wd_status dslash(wd_backend *be, int variant, wd_field *out, const wd_gauge *g,
                        const wd_clover *c, const wd_field *in, const wd_field *x, double a,
                        int parity)
{
    wd_dslash_args args;
    wd_status st = wd_backend_dslash_args(be, variant, out, g, c, in, x, a, parity, &args);
    int block = 0, per_launch = 1;
    const int local = !be->halo.ghost_sites || wd_variants[variant].op == WD_OP_CLOVER;
    if (st == WD_OK)
        st = launch_plan(be, variant, &args, local, &per_launch, &block);
    /* the clover kernel alone reads no neighbour.  Enqueued without
     * waiting: everything runs on the one stream, whatever reads the output
     * (a reduction, a download) synchronises, and a kernel's failure shows
     * there; a wait here cost the Krylov iteration the GPU's idle time
     * between each Dslash and the next launch, four times an iteration */
    if (local)
        return st == WD_OK ? wd_cuda_dslash_split_async(variant, &args, block, per_launch) : st;
    /* every rank enters the exchange, or none (it agrees st first); no
     * wait either: the next exchange's stream waits for this one's input
     * (wd_cuda_be_dslash_grid), so the halo buffers and ghosts are reused
     * in order */
    return wd_cuda_be_dslash_grid(be, variant, &args, block, in, parity, st);
}

static wd_status dslash_reduce(wd_backend *be, int variant, wd_field *out, const wd_gauge *g,
                               const wd_field *in, const wd_field *x, double a, int parity,
                               const wd_field *y, double res[3])
{
    if (!wd_cuda_be_dslash_reduces(be, variant))
        return wd_fail(WD_ERR_INTERNAL, "%s: no reducing kernel here (wd_dslash_reduces)",
                       variant >= 0 && variant < wd_variant_count ? wd_variants[variant].name
                                                                  : "a variant");
    if (y && (y->precision != out->precision || y->volume_cb != out->volume_cb ||
              y->stride != out->stride))
        return wd_fail(WD_ERR_INTERNAL, "%s: the reduction's y is not a field like out",
                       wd_variants[variant].name);
    if (y && y->data == out->data)  /* the kernel reads y through the read-only cache */
        return wd_fail(WD_ERR_INTERNAL, "%s: the reduction's y is out itself",
                       wd_variants[variant].name);
    wd_dslash_args args;
    wd_status st = wd_backend_dslash_args(be, variant, out, g, NULL, in, x, a, parity, &args);
    args.red_y = y ? y->data : NULL;
    args.red_y_norm = y ? y->norm : NULL;
    args.red_partial = wd_cuda_be_warp_partial(be);
    int block = 0;
    if (st == WD_OK)  /* the reducing kernel's own entry (red_partial set) */
        st = wd_tune_dslash(variant, &args, be->pad, &block);
    return st == WD_OK ? wd_cuda_be_dslash_reduce(be, variant, &args, block, res) : st;
}

void wd_backend_cuda_set_overlap(wd_backend *be, int on)
{
    if (be->ops && !strcmp(be->ops->name, "cuda"))
        wd_cuda_be_set_overlap(be, on);
}

wd_status wd_backend_cuda_set_halo(wd_backend *be, wd_halo_policy policy)
{
    wd_status st = be->ops && !strcmp(be->ops->name, "cuda") && be->halo.ghost_sites > 0
                       ? WD_OK
                       : wd_fail(WD_ERR_INVALID, "wd_backend_cuda_set_halo: not a CUDA backend on "
                                 "a grid");
    if (st == WD_OK && (policy < WD_HALO_AUTO || policy > WD_HALO_MPI))
        st = wd_fail(WD_ERR_INVALID, "wd_backend_cuda_set_halo: no halo policy %d", (int)policy);
    if (be->grid.size > 1)
        st = wd_comm_agree(st);
    return st == WD_OK ? wd_cuda_be_set_halo(be, (int)policy) : st;
}

void wd_backend_cuda_halo_route(const wd_backend *be, char *buf, size_t n)
{
    if (n == 0)
        return;
    buf[0] = 0;
    if (be->ops && !strcmp(be->ops->name, "cuda") && be->halo.ghost_sites > 0)
        wd_cuda_be_halo_route(be, buf, n);
}

void wd_backend_cuda_halo_tuning(const wd_backend *be, char *buf, size_t n)
{
    if (n == 0)
        return;
    buf[0] = 0;
    if (be->ops && !strcmp(be->ops->name, "cuda") && be->halo.ghost_sites > 0)
        wd_cuda_be_halo_tuning(be, buf, n);
}

void wd_backend_cuda_halo_launches(const wd_backend *be, int *pack, int *unpack)
{
    *pack = *unpack = 0;
    if (be->ops && !strcmp(be->ops->name, "cuda"))
        wd_cuda_be_halo_launches(be, pack, unpack);
}

wd_status wd_backend_cuda_time_dslash(wd_backend *be, int variant, wd_field *out,
                                      const wd_gauge *g, const wd_field *in, const wd_field *x,
                                      double a, int parity, int reps, double *us, double *halo_us)
{
    if (!be->ops || strcmp(be->ops->name, "cuda") != 0)
        return wd_fail(WD_ERR_INVALID, "wd_backend_cuda_time_dslash: not a CUDA backend");
    wd_dslash_args args;
    wd_status st = wd_backend_dslash_args(be, variant, out, g, NULL, in, x, a, parity, &args);
    int block = 0, per_launch = 1;
    const int local = !be->halo.ghost_sites;
    if (st == WD_OK)
        st = launch_plan(be, variant, &args, local, &per_launch, &block);
    /* one process, several groups: the launches dslash() makes, split or not */
    if (local && args.groups > 1) {
        *halo_us = 0;
        return st == WD_OK ? wd_cuda_time_split(variant, &args, block, per_launch, reps, us) : st;
    }
    if (be->grid.size > 1 && (st = wd_comm_agree(st)) != WD_OK)
        return st;
    return wd_cuda_be_time(be, variant, &args, block, in, parity, reps, us, halo_us);
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
    .upload_pair = upload_pair,
    .download_pair = download_pair,
    .stage_host = stage_host,
    .spinor_gauge_upload = spinor_gauge_upload,
    .spinor_gauge_free = spinor_gauge_free,
    .scan_device = scan_device,
    .gauge_upload = gauge_upload,
    .gauge_free = gauge_free,
    .clover_upload = clover_upload,
    .clover_free = clover_free,
    .dslash = dslash,
    .dslash_reduces = wd_cuda_be_dslash_reduces,
    .dslash_reduce = dslash_reduce,
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
    .multi_cdot = wd_cuda_be_multi_cdot,
    .multi_caxpy = wd_cuda_be_multi_caxpy,
    .blas_lanes = wd_cuda_be_blas_lanes,
};

static int selected;
static wd_status selected_status;

wd_status wd_backend_cuda_select(void)
{
    if (selected)
        return selected_status;
    selected = 1;
    int local = 0, nlocal = 1;
    wd_status st = wd_comm_local_rank(&local, &nlocal);
    if (st == WD_OK)
        st = wd_cuda_available() ? wd_cuda_set_device(local, nlocal)
                                 : wd_fail(WD_ERR_NO_DEVICE, "CUDA backend: no usable GPU");
    selected_status = wd_comm_agree(st);
    return selected_status;
}

/* Collective: NCCL and the device's face index tables, [mu][last][parity]
 * the checkerboard indices of the face_cb sites of that parity at x_mu = 0
 * (last 0) or L_mu - 1 (last 1) in wd_face_gather's order; where X, Y or Z
 * is partitioned, the output sites of each parity interior first
 * (wd_site_order), which the overlapped exchange computes apart. */
static wd_status grid_open(wd_backend *be)
{
    long off[4][2][2], total = 0;
    for (int mu = 0; mu < 4; ++mu)
        for (int last = 0; last < 2; ++last)
            for (int parity = 0; parity < 2; ++parity) {
                off[mu][last][parity] = total;
                if (be->halo.part[mu])
                    total += be->halo.face_cb[mu];
            }
    int *idx = malloc((size_t)total * sizeof *idx);
    wd_status st = idx ? WD_OK
                       : wd_fail(WD_ERR_NOMEM, "CUDA backend: the face index tables (%ld sites)", total);
    for (int mu = 0; mu < 4 && st == WD_OK; ++mu)
        for (int last = 0; last < 2 && be->halo.part[mu]; ++last)
            for (int parity = 0; parity < 2; ++parity) {
                int *p = idx + off[mu][last][parity];
                const int coord = last ? be->dims[mu] - 1 : 0;
                for (int f = 0; f < be->halo.face_cb[mu]; ++f)
                    p[f] = wd_face_site(be->dims, mu, coord, parity, f);
            }
    /* the halo routes: WDIRAC_HALO, else auto */
    wd_halo_policy policy = WD_HALO_AUTO;
    const char *env = getenv("WDIRAC_HALO");
    if (st == WD_OK && env && *env && wd_halo_policy_parse(env, &policy) != WD_OK)
        st = wd_fail(WD_ERR_INVALID, "WDIRAC_HALO=%.64s: expected auto, nccl, copy, kernel or mpi",
                     env);
    int *order = NULL, inner[2] = {0, 0};
    if (st == WD_OK && (be->halo.part[0] || be->halo.part[1] || be->halo.part[2])) {
        const size_t n = (size_t)be->volume_cb;
        if (!(order = malloc(2 * n * sizeof *order)))
            st = wd_fail(WD_ERR_NOMEM, "CUDA backend: the grid's interior and boundary sites "
                         "(%zu a parity)", n);
        for (int parity = 0; parity < 2 && st == WD_OK; ++parity)
            inner[parity] = wd_site_order(be->dims, be->halo.part, parity, order + parity * n);
    }
    if (be->grid.size > 1)
        st = wd_comm_agree(st);
    if (st == WD_OK)
        st = wd_cuda_be_grid_open(be, idx, total, (const long(*)[2][2])off, order, inner,
                                  (int)policy);
    free(order);
    free(idx);
    return st;
}

wd_status wd_backend_cuda_init(wd_backend *be)
{
    wd_cuda_info info;
    /* several ranks: every rank takes each step, or none; partitioned
     * faces (also those of one rank wrapping onto itself): NCCL */
    const int many = be->grid.size > 1, halo = be->halo.ghost_sites > 0;
    wd_status st = WD_OK;
    if (many && (st = wd_backend_cuda_select()) != WD_OK)
        return st;
    if (!wd_cuda_available())
        st = wd_fail(WD_ERR_NO_DEVICE, "CUDA backend: no usable GPU");
    if (st == WD_OK)
        st = wd_cuda_device_info(&info);
    if (st == WD_OK)
        st = wd_cuda_be_open(be);
    if (many)
        st = wd_comm_agree(st);
    if (halo && st == WD_OK)
        st = grid_open(be);
    if (st != WD_OK) {
        wd_cuda_be_close(be);
        return st;
    }
    be->ops = &cuda_ops;
    return WD_OK;
}
