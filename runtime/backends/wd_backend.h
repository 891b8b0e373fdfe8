/*
 * wd_backend.h: the backends module (runtime/backends/) and the one
 * interface through which the solvers touch field data.  The module holds
 * this interface (backend.c), the CPU backend (backend_cpu.c with its BLAS,
 * blas_cpu_tmpl.c per precision), the thin CUDA layer (cuda_rt.h: the only
 * part that includes CUDA headers besides the kernels; cuda_rt_none.c in a
 * build without CUDA), the CUDA backend (backend_cuda_host.c,
 * backend_cuda.cu), device fields for the Dslash benchmarks and tests
 * (wd_gpu.h) and the autotuner (wd_tune.h).  It may call core and operator;
 * gauge (the GPU heatbath) and numerics call it.
 *  A backend owns the memory of spinor and gauge fields and runs every
 * operation on them: transfers to and from host fields, the Dslash variants
 * and the BLAS.  The solvers never dereference field data, so a CUDA backend
 * slots in behind the same table (this header is plain C, includable from
 * C++ and nvcc: no C99 complex types).
 *
 * The externally accessible functions are
 *   wd_backend_open / wd_backend_close   start a backend for one lattice
 *   wd_backend_open_grid / _lattice      the same for a rank's block of a
 *                                        process grid
 *   wd_backend_cuda_select               one GPU per rank (collective)
 *   wd_backend_cuda_time_dslash / _time_exchange / _time_sum   GPU timings on a grid
 *   wd_backend_cuda_halo_launches        the last exchange's pack / unpack launches
 *   wd_backend_cuda_set_halo / _halo_route  the halo routes of a CUDA grid
 *                                        (peer to peer, NCCL) and what they are
 *   wd_halo_policy_parse / _name         a halo policy from and to its name
 *   wd_backend_agree / wd_backend_allsum collective status and sums
 *   wd_field_create / wd_field_destroy   a one-parity spinor field of a precision
 *   wd_field_create_multi, wd_field_view  N right-hand sides back to back (what
 *                                        the multi-RHS kernels read), and a
 *                                        view of some of them
 *   wd_gauge_create / wd_gauge_destroy   a gauge field in a precision,
 *                                        reconstruction and gauge fixing
 *   wd_clover_create / wd_clover_destroy a clover field (both parities) in a
 *                                        precision, from host clover blocks
 *   wd_upload_pair / wd_download_pair    a host-layout spinor to and from both
 *                                        parities' fields, optionally through
 *                                        a gauge transformation
 *   wd_spinor_gauge_create / _destroy    that transformation on the backend
 *   wd_dslash / wd_dslash_clover / wd_blas_*   inline wrappers that dispatch to the
 *                                        table and count flops (so no backend
 *                                        has to)
 *   wd_dslash_reduces / wd_dslash_reduce an xpay Dslash that also reduces its
 *                                        output (where the backend can)
 *   wd_blas_lanes[5]                     one of those BLAS operations on many
 *                                        lock-step lanes at once
 *
 * Fields.  A wd_field is one parity of a spinor in the layout of wd_kernel.h
 * (element k of site cb at k * stride + cb, internal UKQCD basis); the
 * parity is not part of the field: the caller says which host sites an
 * upload reads.  Half precision stores 16-bit fixed point and one float per
 * site, the site's max |component| (layout_tmpl.c's convention), in norm.
 *
 * BLAS.  Every operand of one operation has the same precision (only copy
 * and accumulate convert).  Arithmetic is done in double for double fields and in float
 * for single and half fields (half: load short * norm / 32767, store with a
 * fresh per-site norm).  Reductions accumulate in double in an order the
 * backend fixes, never one that depends on scheduling, so a result is
 * bitwise reproducible from run to run (CPU: sites in order within blocks
 * of WD_REDUCE_BLOCK sites, then the block sums in block order: the same
 * bits for any number of threads; a GPU: a fixed block/tree shape and no
 * floating-point atomics).  Fused reductions reduce the values computed
 * before they are stored (as a GPU kernel holding them in registers would).
 * Complex dot products are <x, y> = sum conj(x) y.  BLAS operands may
 * alias one another (every operation reads a site's operands before it
 * writes that site); a Dslash output may not (it reads neighbours).
 *
 * Errors.  Operations returning wd_status report failures directly; BLAS
 * operations return void or their reductions, and a backend records its
 * first failure in be->error (with wd_fail's message).  On one process the
 * solvers poll it once per iteration; on a grid a failed rank's reductions
 * sum NaN on every rank (wd_backend_allsum), and there the solvers agree
 * on it (wd_backend_agree).
 */
#ifndef WDIRAC_BACKEND_H
#define WDIRAC_BACKEND_H

#include <stddef.h>

#include "wd_comm.h"
#include "wd_kernel.h"
#include "wdirac.h"

#ifdef __cplusplus
extern "C" {
#endif

/* sites per reduction block of the CPU backend */
#define WD_REDUCE_BLOCK 512

typedef struct wd_complex {
    double re, im;
} wd_complex;

typedef struct wd_field {
    int precision;      /* bytes per stored real: 8, 4, 2 */
    int width;          /* reals per vector element: 2 (double2) or 4 */
    int elements;       /* vector elements per site: 24 / width */
    int volume_cb;      /* sites of one parity */
    int stride;         /* elements between sub-arrays: volume_cb + pad */
    size_t bytes;       /* data, padding included */
    size_t norm_bytes;  /* half: one float per site; else 0 */
    void *data;         /* backend memory */
    float *norm;        /* backend memory, half precision only */
    int nrhs;           /* right-hand sides held back to back (0 or 1: one); bytes and
                         * norm_bytes are each one's */
    int view;           /* a view into another field's memory (wd_field_view): never freed */
} wd_field;

typedef struct wd_gauge {
    int precision, recon, gauge_fix;
    int tbc;            /* time boundary: +1 periodic, -1 antiperiodic */
    long goff[4][2];    /* wd_gauge_layout's block offsets and strides */
    int gstride[4];
    int tslice_cb0, tslice_bwd;
    size_t bytes;
    void *data;         /* backend memory */
} wd_gauge;

/* A clover field of the whole local block: one packed parity each
 * (wd_layout.h, wd_clover_layout); whichever matrix the caller packed
 * (A or A^-1 in the even-odd operators). */
typedef struct wd_clover {
    int precision;
    int stride;
    size_t bytes;       /* one parity */
    size_t norm_bytes;  /* one parity; half precision only */
    void *data[2];      /* backend memory, by parity */
    float *norm[2];
} wd_clover;

/* A gauge transformation g(n) of this rank's block (3x3 complex double a
 * site, site order, row-major) held by a backend for the host-layout
 * transfers: wd_upload_pair takes in g(n) psi(n), wd_download_pair gives
 * back g(n)^dag psi(n) (DESIGN.md's temporal gauge: sources into the gauge
 * a solve runs in, solutions out of it), each product in the order and
 * rounding of gauge_tools.c's wd_spinor_transform, so the bits equal the
 * host transformation's. */
typedef struct wd_spinor_gauge {
    size_t bytes;
    void *data;         /* backend memory */
} wd_spinor_gauge;

typedef struct wd_backend wd_backend;

/*
 * Many lanes at once (the lock-step solvers).  Lane j of an operand f is
 * right-hand side idx[j] counted from f (wd_field_view(f, idx[j], 1): f is
 * lane 0's field, a view into a multi-field), with its own coefficients
 * a[j], b[j] and its own reductions in res[3 j .. 3 j + 2].  On each lane
 * an operation is exactly the one-lane operation of the table named beside
 * it (the same arithmetic and reduction order: the same bits), so a
 * backend without blas_lanes runs the lanes one after another (and on a
 * grid sums all their reductions over the ranks in one wd_backend_allsum);
 * the CUDA backend runs every lane in one launch and reads all their
 * reductions back after one synchronisation (and one sum over the ranks).
 */
#define WD_LANES_MAX 16
/* the fields of one multi_cdot / multi_caxpy */
#define WD_BLAS_MULTI 8
typedef enum wd_lane_op {
    WD_LANE_AXPY,             /* axpy(a.re, x, y) */
    WD_LANE_XPAY,             /* xpay(x, a.re, y) */
    WD_LANE_AXPY_ZPBX,        /* axpy_zpbx(a.re, x, y, z, b.re) */
    WD_LANE_CAXPY,            /* caxpy(a, x, y) */
    WD_LANE_CAXPBYPZ,         /* caxpbypz(a, x, b, y, z) */
    WD_LANE_CXPAYPBZ,         /* cxpaypbz(x, a, y, b, z) */
    WD_LANE_ACCUMULATE,       /* accumulate(a, x, b, y, z), y may be NULL */
    WD_LANE_NORM2,            /* res[0] = norm2(x) */
    WD_LANE_CDOT,             /* res[0, 1] = cdot(x, y) */
    WD_LANE_AXPY_NORM2,       /* res[0] = axpy_norm2(a.re, x, y) */
    WD_LANE_CDOT_NORM2,       /* cdot_norm2(x, y, res) */
    WD_LANE_CAXPY_NORM2_CDOT, /* caxpy_norm2_cdot(a, x, y, z, res) */
    WD_LANE_ZERO,             /* zero(y) */
    /* fused steps (wd_blas_lanes5): two operations of the table in one
     * pass, each the table entry's arithmetic (the same bits, but for the
     * BiCGstab step in half precision on the GPU: tests/test_blas.c) */
    WD_LANE_BICGSTAB_UPDATE,  /* caxpbypz(a, x, b, y, z), or accumulate(a, x, b, y, z) where z
                               * has another precision, then caxpy_norm2_cdot(-b, w, y, u,
                               * res): BiCGstab's x += alpha p + omega s, r = s - omega t */
    WD_LANE_ACCUMULATE_XPAY,  /* accumulate(a, x, 0, NULL, z), then xpay(y, b.re, x): CG's
                               * x += alpha p, p = r + beta p into an accumulator of
                               * another precision */
    WD_LANE_XPAY_NORM2_COPY,  /* res[0] = xpay_norm2(x, a.re, y), then copy(z, y) (z of any
                               * precision; NULL or y itself: no copy): a true residual
                               * r = b - Mhat x and its sloppy copy */
    WD_LANE_NORM2_COPY,       /* res[0] = norm2(x), then copy(z, x) (z as above): CG's
                               * true residual of the normal equations and its copy */
    WD_LANE_OPS
} wd_lane_op;

typedef struct wd_lanes {
    int n;                       /* lanes, at most WD_LANES_MAX */
    int idx[WD_LANES_MAX];       /* each one's right-hand side */
    wd_complex a[WD_LANES_MAX], b[WD_LANES_MAX];
} wd_lanes;

/*
 * The table a backend implements.  `f`, `g` arrive with their geometry
 * filled in (wd_field_create / wd_gauge_create); alloc sets data (and norm).
 * Host spinors are full-lattice complex double in DESIGN.md's order and
 * DeGrand-Rossi basis; upload reads, download writes, only the sites of
 * `parity`.  gauge_upload packs the local block of a host gauge field (already in
 * temporal gauge when g->gauge_fix) and the backward ghost links of each
 * partitioned dimension (wd_pack_gauge_halo's ghost), and allocates.  dslash runs variant
 * `variant` (an index into wd_variants[], the same index for every backend)
 * onto the sites of `parity`: out = D in, or out = x + a D in for xpay
 * variants; out may alias neither in nor x.  Clover variants read c at the
 * output parity: dslashcl_* out = C D in (+ x), clover_* out = C in with in
 * of the output parity and g unused (NULL).  clover_upload packs host
 * clover blocks (WD_CLOVER_SITE_REALS a site, the local block) of both
 * parities, c's geometry filled in, and allocates.  On a grid of several
 * ranks a Dslash's failure after the ranks have agreed to exchange (the
 * CUDA backend's NCCL transfer, scatter or kernel launch) is one rank's
 * alone: it is recorded in be->error and the call returns WD_OK, as on
 * the other ranks, so that all make the same collectives next; it reaches
 * every rank at the next global sum (a failed backend sums NaN), where
 * the solvers agree on it.  A caller of a lone Dslash on a grid reads
 * be->error (test_decomposed agrees on it).
 */
typedef struct wd_backend_ops {
    const char *name;
    void (*close)(wd_backend *be);
    wd_status (*field_alloc)(wd_backend *be, wd_field *f);
    void (*field_free)(wd_backend *be, wd_field *f);
    wd_status (*upload)(wd_backend *be, wd_field *f, const double *host, int parity);
    wd_status (*download)(wd_backend *be, double *host, const wd_field *f, int parity);
    /* Both parities of one spinor in the host layout (this rank's block,
     * DeGrand-Rossi, complex double) at src into even and odd (one
     * precision) in one transfer, or back; src / dst in device memory when
     * on_device; through the gauge transformation tf unless NULL.  Optional
     * (NULL): wd_upload_pair and wd_download_pair fall back to upload /
     * download of each parity for host memory, without tf. */
    wd_status (*upload_pair)(wd_backend *be, wd_field *even, wd_field *odd, const double *src,
                             int on_device, const wd_spinor_gauge *tf);
    wd_status (*download_pair)(wd_backend *be, double *dst, const wd_field *even,
                               const wd_field *odd, int on_device, const wd_spinor_gauge *tf);
    /* A gauge transformation for the pair transfers (tf's bytes filled in);
     * optional (NULL: the caller transforms host fields itself). */
    wd_status (*spinor_gauge_upload)(wd_backend *be, wd_spinor_gauge *tf, const double *host);
    void (*spinor_gauge_free)(wd_backend *be, wd_spinor_gauge *tf);
    /* A host-layout spinor (src, host memory) copied whole into the
     * backend's device buffer for host-layout arrays, *dev: what
     * upload_pair (on_device) and scan_device read; it stays valid until
     * the next pair transfer.  Optional (with scan_device). */
    wd_status (*stage_host)(wd_backend *be, const double *src, const double **dev);
    /* n doubles in device memory: this rank's squared norm and the index of
     * the first that is not finite (-1: none).  Optional. */
    wd_status (*scan_device)(wd_backend *be, const double *src, size_t n, double *norm2,
                             long *bad);
    wd_status (*gauge_upload)(wd_backend *be, wd_gauge *g, const double *host,
                              const double *const ghost[4]);
    void (*gauge_free)(wd_backend *be, wd_gauge *g);
    wd_status (*clover_upload)(wd_backend *be, wd_clover *c, const double *blocks);
    void (*clover_free)(wd_backend *be, wd_clover *c);
    wd_status (*dslash)(wd_backend *be, int variant, wd_field *out, const wd_gauge *g,
                        const wd_clover *c, const wd_field *in, const wd_field *x, double a,
                        int parity);
    /* The same for an xpay variant, reducing its output as it is stored:
     * res = {Re <y, out>, Im <y, out>, |out|^2} (y NULL: {0, 0, |out|^2}),
     * y of out's parity and precision, summed over ranks.  Optional, with
     * dslash_reduces: whether it runs `variant` here (a reducing kernel,
     * Variant.reduces in generator/naming.py; one process). */
    int (*dslash_reduces)(const wd_backend *be, int variant);
    wd_status (*dslash_reduce)(wd_backend *be, int variant, wd_field *out, const wd_gauge *g,
                               const wd_field *in, const wd_field *x, double a, int parity,
                               const wd_field *y, double res[3]);

    /* y = 0;  y = x (any precisions; a no-op when y == x);  x = a x */
    void (*zero)(wd_backend *be, wd_field *y);
    void (*copy)(wd_backend *be, wd_field *y, const wd_field *x);
    void (*ax)(wd_backend *be, double a, wd_field *x);
    /* y = a x + y;  y = x + a y */
    void (*axpy)(wd_backend *be, double a, const wd_field *x, wd_field *y);
    void (*xpay)(wd_backend *be, const wd_field *x, double a, wd_field *y);
    /* CG step: y = y + a x, then x = z + b x */
    void (*axpy_zpbx)(wd_backend *be, double a, wd_field *x, wd_field *y,
                      const wd_field *z, double b);
    /* y = a x + y, complex a */
    void (*caxpy)(wd_backend *be, wd_complex a, const wd_field *x, wd_field *y);
    /* BiCGstab solution update: z = z + a x + b y */
    void (*caxpbypz)(wd_backend *be, wd_complex a, const wd_field *x, wd_complex b,
                     const wd_field *y, wd_field *z);
    /* BiCGstab direction update: z = x + a y + b z */
    void (*cxpaypbz)(wd_backend *be, const wd_field *x, wd_complex a, const wd_field *y,
                     wd_complex b, wd_field *z);
    /* partial solution accumulation: z = z + a x + b y (y may be NULL), the
     * one operation whose z may have another precision than x and y (which
     * share one): arithmetic in double, x and y read exactly */
    void (*accumulate)(wd_backend *be, wd_complex a, const wd_field *x, wd_complex b,
                       const wd_field *y, wd_field *z);

    /* reductions */
    double (*norm2)(wd_backend *be, const wd_field *x);
    wd_complex (*cdot)(wd_backend *be, const wd_field *x, const wd_field *y);
    /* CG residual update: y = y + a x; returns |y|^2 */
    double (*axpy_norm2)(wd_backend *be, double a, const wd_field *x, wd_field *y);
    /* true residual: y = x + a y; returns |y|^2 */
    double (*xpay_norm2)(wd_backend *be, const wd_field *x, double a, wd_field *y);
    /* BiCGstab s = r - alpha v: y = y + a x; returns |y|^2 */
    double (*caxpy_norm2)(wd_backend *be, wd_complex a, const wd_field *x, wd_field *y);
    /* BiCGstab omega: res = {Re <x,y>, Im <x,y>, |x|^2} */
    void (*cdot_norm2)(wd_backend *be, const wd_field *x, const wd_field *y, double res[3]);
    /* BiCGstab r = s - omega t: y = y + a x; res = {|y|^2, Re <z,y>, Im <z,y>} */
    void (*caxpy_norm2_cdot)(wd_backend *be, wd_complex a, const wd_field *x, wd_field *y,
                             const wd_field *z, double res[3]);
    /* GCR's classical Gram-Schmidt, y read once for k <= WD_BLAS_MULTI
     * fields x[i] of y's precision: res[2 i], res[2 i + 1] = Re, Im
     * <x[i], y> (each as cdot reduces it); y = y + sum_i a[i] x[i] (the
     * terms added in order in the arithmetic precision, one store).
     * Optional (NULL: wd_blas_multi_* call cdot / caxpy once an x). */
    void (*multi_cdot)(wd_backend *be, int k, const wd_field *const *x, const wd_field *y,
                       double *res);
    void (*multi_caxpy)(wd_backend *be, int k, const wd_complex *a, const wd_field *const *x,
                        wd_field *y);
    /* The fused steps of wd_lane_op on one lane, in one pass (each the
     * arithmetic of the table entries it fuses, the same bits); optional
     * (NULL: wd_blas_lanes runs the entries in turn).  bicgstab_update's z
     * and residual_copy's z may have another precision; residual_copy is
     * WD_LANE_XPAY_NORM2_COPY, or WD_LANE_NORM2_COPY of y where x is NULL. */
    void (*bicgstab_update)(wd_backend *be, wd_complex a, const wd_field *x, wd_complex b,
                            wd_field *y, wd_field *z, const wd_field *w, const wd_field *u,
                            double res[3]);
    void (*accumulate_xpay)(wd_backend *be, wd_complex a, wd_field *x, const wd_field *y,
                            wd_field *z, double b);
    void (*residual_copy)(wd_backend *be, const wd_field *x, double a, wd_field *y,
                          wd_field *z, double res[3]);
    /* one of the operations above on every lane of l (see wd_lane_op; w
     * and u only for the fused steps); optional (NULL: wd_blas_lanes runs
     * the lanes one at a time through the table entries) */
    void (*blas_lanes)(wd_backend *be, wd_lane_op op, const wd_lanes *l, const wd_field *x,
                       const wd_field *y, const wd_field *z, const wd_field *w,
                       const wd_field *u, double *res);
} wd_backend_ops;

struct wd_backend {
    const wd_backend_ops *ops;
    void *ctx;               /* backend private state */
    wd_grid grid;            /* the process grid; 1x1x1x1 from wd_backend_open */
    wd_halo halo;            /* the ghost faces of the local block */
    int dims[4];             /* the local extents */
    int volume_cb;
    int pad;                 /* elements of padding after each sub-array */
    wd_status error;         /* first failure of a void operation, sticky */
    int sum_local;           /* wd_backend_allsum leaves sums local (set by
                              * wd_blas_lanes, which sums its lanes at once) */
    size_t bytes_allocated;  /* fields + gauge now held */
    size_t bytes_peak;
    double flops;            /* counted by the wrappers below */
    int launch_groups;       /* CUDA, one process: the groups of right-hand sides a launch
                              * of the last multi-RHS Dslash (or its timing) covered
                              * (wd_tune_groups may split a launch) */
    int force_groups;        /* tests: groups a launch where it divides the call's (0: the
                              * tuner's choice) */
};

/* Start a backend for lattice dims in this process alone, with `pad`
 * elements of padding per sub-array. */
wd_status wd_backend_open(wd_backend *be, wd_backend_kind kind, const int dims[4], int pad);
/* Start a backend for this rank's block of a process grid: fields hold the
 * local block and ghost faces, host fields passed in and out are local
 * blocks (local extents, the global order within the block), the Dslash
 * exchanges halos and reductions are global sums (wd_comm_sum).  The CUDA
 * backend on a partitioned grid needs a build with NCCL (WD_ERR_INVALID
 * otherwise) and one GPU per rank. */
wd_status wd_backend_open_grid(wd_backend *be, wd_backend_kind kind, const wd_grid *grid,
                               int pad);
/* The same from the public description of a decomposed lattice
 * (wd_lattice_make).  wrap, bit mu: exchange mu's faces through the halo
 * path even where the grid does not split mu (this rank is its own
 * neighbour there): the decomposed code path on fewer processes, for tests
 * and benchmarks; 0 for a plain run. */
wd_status wd_backend_open_lattice(wd_backend *be, wd_backend_kind kind, const wd_lattice *lat,
                                  int pad, int wrap);
/* For programs on a grid: every rank's status agreed (wd_comm_agree), so
 * that all take the same branch before the next collective call. */
wd_status wd_backend_agree(wd_status st);
/* For backends: the global sum over ranks of a reduction's n local values
 * (a no-op on one rank); a failure is recorded in be->error.  A rank whose
 * be->error is set contributes NaN, so every rank's result is NaN at the
 * same reduction (a failure of the sum itself gives NaN on this rank):
 * the solvers agree on be->error only where a reduction is not finite. */
void wd_backend_allsum(wd_backend *be, double *v, int n);
void wd_backend_close(wd_backend *be);

/* The upload_pair / download_pair operations of the table, or for a backend
 * without them the two parities one at a time (host memory only: device
 * memory is WD_ERR_INVALID there, and so is a transformation tf).  odd
 * NULL: the even sites alone, the host layout's odd sites neither read
 * nor written (on the CUDA backend with on_device only: the multigrid's
 * transfers of one parity). */
wd_status wd_upload_pair(wd_backend *be, wd_field *even, wd_field *odd, const double *src,
                         int on_device, const wd_spinor_gauge *tf);
wd_status wd_download_pair(wd_backend *be, double *dst, const wd_field *even, const wd_field *odd,
                           int on_device, const wd_spinor_gauge *tf);
/* The gauge transformation g (host, this rank's block, wd_spinor_gauge) on
 * the backend; WD_ERR_INVALID where the backend transforms none (the
 * caller then transforms host fields: wd_spinor_gauge_supported). */
int wd_spinor_gauge_supported(const wd_backend *be);
wd_status wd_spinor_gauge_create(wd_backend *be, wd_spinor_gauge *tf, const double *g);
void wd_spinor_gauge_destroy(wd_backend *be, wd_spinor_gauge *tf);

/* For backends: check that the fields, gauge field and parity match Dslash
 * variant `variant` (WD_ERR_NOT_BUILT / WD_ERR_INTERNAL otherwise) and fill
 * the kernel arguments of wd_kernel.h. */
struct wd_dslash_args;
wd_status wd_backend_dslash_args(const wd_backend *be, int variant, wd_field *out,
                                 const wd_gauge *g, const wd_clover *c, const wd_field *in,
                                 const wd_field *x, double a, int parity,
                                 struct wd_dslash_args *args);

/* Collective over every rank (wd_comm_size), once per process: run this
 * rank on the GPU of its index among the ranks of its node (one GPU per
 * rank; WD_ERR_NO_DEVICE when the node has fewer).  A multi-process program
 * calls it before any other CUDA work; wd_backend_open_grid's CUDA backend
 * calls it itself (then it must come before any single-process CUDA
 * backend of the same process, which otherwise runs on GPU 0). */
wd_status wd_backend_cuda_select(void);

/* A CUDA backend's Dslash timed with CUDA events, the median over `reps`
 * calls after two warm-ups: *us the halo exchange and the kernel together,
 * *halo_us from the start to the end of the exchange (gather, NCCL,
 * scatter; overlapped or not; 0 off a grid).  Collective on a grid. */
wd_status wd_backend_cuda_time_dslash(wd_backend *be, int variant, wd_field *out,
                                      const wd_gauge *g, const wd_field *in, const wd_field *x,
                                      double a, int parity, int reps, double *us, double *halo_us);

/* On a CUDA backend's grid: overlap the exchange with the interior sites'
 * kernel (on, the default), the boundary sites computed once the ghosts
 * are in (the first and last time slices where T alone is partitioned, a
 * list of sites where X, Y or Z is), or run it before the whole kernel
 * (off); the results are the same bits.  No-op elsewhere. */
void wd_backend_cuda_set_overlap(wd_backend *be, int on);

/* How a CUDA backend's grid exchanges its halos.  Between the GPUs of
 * one node the faces can go peer to peer (CUDA IPC, ordered on the streams
 * by flags, no host in the loop): written by the gather kernel straight
 * into the neighbour's receive buffer (KERNEL) or packed here and copied
 * there by the copy engine (COPY).  NCCL everywhere else; in a build
 * without NCCL, MPI through pinned host buffers (the faces copied to the
 * host, exchanged as the CPU backend does, copied back).  AUTO, the
 * default: for the dimensions that can go peer to peer (both neighbours
 * on this node, with peer access, on every rank) the route of the copy
 * engine, kernel writes and NCCL that times fastest, chosen per grid,
 * local volume, precision and right-hand sides at that kind of exchange's
 * first Dslash (the whole Dslash timed, every rank alike) and kept in the
 * tune cache; NCCL (or MPI) for the rest.  COPY and KERNEL fail where a
 * partitioned dimension cannot go peer to peer, NCCL in a build without
 * it; MPI sends every dimension through the host.  The results are the same bits
 * whichever the route. */
typedef enum wd_halo_policy {
    WD_HALO_AUTO = 0,
    WD_HALO_NCCL = 1,
    WD_HALO_COPY = 2,
    WD_HALO_KERNEL = 3,
    WD_HALO_MPI = 4,
} wd_halo_policy;

/* "auto", "nccl", "copy", "kernel", "mpi"; WD_ERR_INVALID naming them otherwise */
wd_status wd_halo_policy_parse(const char *name, wd_halo_policy *policy);
const char *wd_halo_policy_name(wd_halo_policy policy);

/* Collective on a CUDA backend's grid: use policy's routes from the next
 * exchange on (the environment's WDIRAC_HALO=name sets them when the
 * backend opens).  WD_ERR_INVALID off a CUDA grid, or where COPY or KERNEL
 * cannot be, on every rank with the reason. */
wd_status wd_backend_cuda_set_halo(wd_backend *be, wd_halo_policy policy);

/* buf = each exchanged dimension's route in the last exchange (before
 * the first: the policy's), "T:kernel", "Z:nccl T:copy", "T:mpi"; empty
 * off a CUDA grid */
void wd_backend_cuda_halo_route(const wd_backend *be, char *buf, size_t n);

/* buf = how AUTO chose the last exchange's route: the kind of exchange
 * ("grid=1x1x1x2 faces=T h nrhs=1": the grid, the dimensions exchanged,
 * the precision, the right-hand sides, " serial" without the overlap),
 * then each candidate's time, the slowest rank's median us of the whole
 * Dslash, and the choice ("copy 364.1 kernel 371.0 nccl 380.2 us ->
 * copy"), or "...: copy (the tune cache)"; empty where there was no
 * choice (a forced policy, no peer-to-peer dimension) or off a CUDA grid */
void wd_backend_cuda_halo_tuning(const wd_backend *be, char *buf, size_t n);

/* The kernel launches of a CUDA backend's last halo exchange: *pack the
 * gathers of the faces into the send buffers (at most 1 on a grid: every
 * gathered face of every partitioned dimension and right-hand side in one
 * launch; 0 where the copy engine sends them all from the field), *unpack
 * the scatters after the exchange (0: the kernels read the faces where
 * they landed); 0 off a grid, before the first exchange, or on another
 * backend. */
void wd_backend_cuda_halo_launches(const wd_backend *be, int *pack, int *unpack);

/* The NCCL exchange alone on a CUDA backend's grid: both faces of the
 * partitioned dimension mu, `bytes` each way to each neighbour, from and to
 * device buffers; *us the median over `reps` of CUDA-event times after
 * two warm-ups.  Collective on a grid. */
wd_status wd_backend_cuda_time_exchange(wd_backend *be, int mu, size_t bytes, int reps,
                                        double *us);

/* A global sum of n doubles (1 .. 64) on a CUDA backend's grid of several
 * ranks with NCCL, timed both ways from partials on the device to sums
 * on the host, each the median over `reps` after two warm-ups, host wall
 * clock: *us_mpi as the solvers sum today (the partials copied to the
 * host, MPI_Allgather, the rank-order sum: wd_comm_sum), *us_nccl on the
 * device (ncclAllGather, the rank-order sum in a kernel, the sums copied
 * to the host).  *same: every repetition gave the two the same bits.
 * Collective on the grid (issue 28, item 4). */
wd_status wd_backend_cuda_time_sum(wd_backend *be, int n, int reps, double *us_mpi,
                                   double *us_nccl, int *same);

/* CPU backend entry (backend_cpu.c); wd_backend_open calls it. */
wd_status wd_backend_cpu_init(wd_backend *be);
/* CUDA backend entry (backend_cuda_host.c; in builds without CUDA,
 * cuda_rt_none.c's answers WD_ERR_NO_DEVICE). */
wd_status wd_backend_cuda_init(wd_backend *be);

/* Allocate a field of `precision` (8, 4, 2); destroy frees it and is a no-op
 * on a field never created (zero-initialised) or already destroyed, and on
 * a view. */
wd_status wd_field_create(wd_backend *be, wd_field *f, int precision);
void wd_field_destroy(wd_backend *be, wd_field *f);
/* nrhs fields of `precision` in one allocation, right-hand side q at
 * q * f->bytes (its norms at q * f->norm_bytes): what the multi-RHS Dslash
 * kernels read and write.  Every other operation (BLAS, transfers) sees
 * right-hand side 0 of a field; wd_field_view gives the others. */
wd_status wd_field_create_multi(wd_backend *be, wd_field *f, int precision, int nrhs);
/* right-hand sides first .. first + count - 1 of f as a field (a view:
 * destroy ignores it) */
wd_field wd_field_view(const wd_field *f, int first, int count);

/* Pack and upload host links (complex double, [site][mu][3][3]). */
wd_status wd_gauge_create(wd_backend *be, wd_gauge *g, const double *host, int precision,
                          int recon, int gauge_fix, int tbc);
void wd_gauge_destroy(wd_backend *be, wd_gauge *g);

/* Pack and upload host clover blocks of the local block (both parities;
 * wd_layout.h's wd_pack_clover); destroy as wd_gauge_destroy. */
wd_status wd_clover_create(wd_backend *be, wd_clover *c, const double *blocks, int precision);
void wd_clover_destroy(wd_backend *be, wd_clover *c);

/* Flops of one Dslash application per output site (DESIGN.md) */
#define WD_DSLASH_FLOPS 1320.0
#define WD_XPAY_FLOPS 48.0
/* a clover matrix on one site: QUDA's nominal count of the two 6x6
 * Hermitian blocks (the basis rotations not counted, as reconstruction is
 * not counted in the Dslash's 1320) */
#define WD_CLOVER_FLOPS 504.0

static inline double wd_site_reals_(const wd_backend *be)
{
    return 24.0 * be->volume_cb;
}

/* Flops of variant k per output site and right-hand side (wd_operator.h's
 * registry), and the right-hand sides it applies to */
double wd_variant_flops(int variant);
int wd_variants_nrhs(int variant);

/* Whether this backend runs the multi-RHS kernels: an open CPU or CUDA
 * backend, on one process and on a process grid.  On a grid a multi-RHS
 * call exchanges the faces of all its right-hand sides at once: per
 * partitioned dimension one message to each neighbour holding every
 * right-hand side's face, each read by the kernels where it landed, so
 * the result is the one-process result bit for bit. */
int wd_backend_multi_rhs(const wd_backend *be);

/* Whether a batch's operator should take the multi-RHS kernels on this
 * backend rather than one-RHS calls (the same bits either way): the CUDA
 * backend, where they share the links' bytes; not the CPU backend, whose
 * one-RHS Wilson recon-12 kernels (every multi-RHS variant's family) are
 * vectorized rows and its multi-RHS ones plain site loops: per right-hand
 * side at N = 12 they ran 0.38x / 0.76x / 0.41x the one-RHS calls in
 * double / single / half (16^4, 2 threads, 2026-11-28; docs/solvers.md,
 * "Many right-hand sides"). */
int wd_backend_multi_rhs_pays(const wd_backend *be);

/* out = D in (+ x) for `count` right-hand sides of multi-fields (or views)
 * with one operator family: kernel(n) is the variant index for n
 * right-hand sides a call (negative: not built); the largest built n that
 * fits is used first, as many groups of n as fit in one call (12 runs as
 * one _n4 launch over 3 groups: wd_kernel.h), the rest likewise with
 * smaller n, and everything as one-RHS calls where no multi-RHS kernel is
 * built.  plan, when not NULL, receives the calls made. */
typedef int (*wd_kernel_for_nrhs)(const void *ctx, int n);
#define WD_GROUP_PLAN_MAX 64
typedef struct wd_group_plan {
    int calls;
    int variant[WD_GROUP_PLAN_MAX];  /* each call's kernel */
    int nrhs[WD_GROUP_PLAN_MAX];     /* the right-hand sides it covered (groups x the kernel's) */
} wd_group_plan;
wd_status wd_dslash_group(wd_backend *be, wd_kernel_for_nrhs kernel, const void *ctx,
                          wd_field *out, const wd_gauge *g, const wd_clover *c,
                          const wd_field *in, const wd_field *x, double a, int parity,
                          int count, wd_group_plan *plan);

/* The groups of variant's right-hand-side count that a call on `in`
 * covers: in->nrhs / N for a multi-RHS variant of N when in holds a
 * multiple of N, at least 2N; else 1 (wd_kernel.h's groups). */
int wd_dslash_groups(int variant, const wd_field *in);

static inline wd_status wd_dslash_clover(wd_backend *be, int variant, wd_field *out,
                                         const wd_gauge *g, const wd_clover *c,
                                         const wd_field *in, const wd_field *x, double a,
                                         int parity)
{
    be->flops += wd_variant_flops(variant) * be->volume_cb * wd_variants_nrhs(variant) *
                 (in ? wd_dslash_groups(variant, in) : 1);
    return be->ops->dslash(be, variant, out, g, c, in, x, a, parity);
}

static inline wd_status wd_dslash(wd_backend *be, int variant, wd_field *out, const wd_gauge *g,
                                  const wd_field *in, const wd_field *x, double a, int parity)
{
    return wd_dslash_clover(be, variant, out, g, NULL, in, x, a, parity);
}

/* Whether wd_dslash_reduce runs `variant` on this backend. */
static inline int wd_dslash_reduces(const wd_backend *be, int variant)
{
    return be->ops->dslash_reduces && be->ops->dslash_reduces(be, variant);
}

/* out = x + a D in through xpay variant `variant`, and res = {Re <y, out>,
 * Im <y, out>, |out|^2} of out as stored (y NULL: |out|^2 alone; y not out
 * itself), where
 * wd_dslash_reduces(be, variant): the reductions a Krylov step needs of
 * the Schur operator's result without a pass of its own over the field.
 * The flops are the Dslash's and the BLAS's they replace (6 or 2 a real). */
static inline wd_status wd_dslash_reduce(wd_backend *be, int variant, wd_field *out,
                                         const wd_gauge *g, const wd_field *in,
                                         const wd_field *x, double a, int parity,
                                         const wd_field *y, double res[3])
{
    be->flops += wd_variant_flops(variant) * be->volume_cb + (y ? 6 : 2) * wd_site_reals_(be);
    return be->ops->dslash_reduce(be, variant, out, g, in, x, a, parity, y, res);
}

/* Wrappers: flops per real of each operation (QUDA's counting: a real
 * multiply-add is 2, a complex one 8 per complex = 4 per real). */
static inline void wd_blas_zero(wd_backend *be, wd_field *y) { be->ops->zero(be, y); }
static inline void wd_blas_copy(wd_backend *be, wd_field *y, const wd_field *x)
{
    be->ops->copy(be, y, x);
}
static inline void wd_blas_ax(wd_backend *be, double a, wd_field *x)
{
    be->flops += wd_site_reals_(be);
    be->ops->ax(be, a, x);
}
static inline void wd_blas_axpy(wd_backend *be, double a, const wd_field *x, wd_field *y)
{
    be->flops += 2 * wd_site_reals_(be);
    be->ops->axpy(be, a, x, y);
}
static inline void wd_blas_xpay(wd_backend *be, const wd_field *x, double a, wd_field *y)
{
    be->flops += 2 * wd_site_reals_(be);
    be->ops->xpay(be, x, a, y);
}
static inline void wd_blas_axpy_zpbx(wd_backend *be, double a, wd_field *x, wd_field *y,
                                     const wd_field *z, double b)
{
    be->flops += 4 * wd_site_reals_(be);
    be->ops->axpy_zpbx(be, a, x, y, z, b);
}
static inline void wd_blas_caxpy(wd_backend *be, wd_complex a, const wd_field *x, wd_field *y)
{
    be->flops += 4 * wd_site_reals_(be);
    be->ops->caxpy(be, a, x, y);
}
static inline void wd_blas_caxpbypz(wd_backend *be, wd_complex a, const wd_field *x,
                                    wd_complex b, const wd_field *y, wd_field *z)
{
    be->flops += 8 * wd_site_reals_(be);
    be->ops->caxpbypz(be, a, x, b, y, z);
}
static inline void wd_blas_cxpaypbz(wd_backend *be, const wd_field *x, wd_complex a,
                                    const wd_field *y, wd_complex b, wd_field *z)
{
    be->flops += 8 * wd_site_reals_(be);
    be->ops->cxpaypbz(be, x, a, y, b, z);
}
static inline void wd_blas_accumulate(wd_backend *be, wd_complex a, const wd_field *x,
                                      wd_complex b, const wd_field *y, wd_field *z)
{
    be->flops += (y ? 8 : 4) * wd_site_reals_(be);
    be->ops->accumulate(be, a, x, b, y, z);
}
static inline double wd_blas_norm2(wd_backend *be, const wd_field *x)
{
    be->flops += 2 * wd_site_reals_(be);
    return be->ops->norm2(be, x);
}
static inline wd_complex wd_blas_cdot(wd_backend *be, const wd_field *x, const wd_field *y)
{
    be->flops += 4 * wd_site_reals_(be);
    return be->ops->cdot(be, x, y);
}
static inline double wd_blas_axpy_norm2(wd_backend *be, double a, const wd_field *x, wd_field *y)
{
    be->flops += 4 * wd_site_reals_(be);
    return be->ops->axpy_norm2(be, a, x, y);
}
static inline double wd_blas_xpay_norm2(wd_backend *be, const wd_field *x, double a, wd_field *y)
{
    be->flops += 4 * wd_site_reals_(be);
    return be->ops->xpay_norm2(be, x, a, y);
}
static inline double wd_blas_caxpy_norm2(wd_backend *be, wd_complex a, const wd_field *x,
                                         wd_field *y)
{
    be->flops += 6 * wd_site_reals_(be);
    return be->ops->caxpy_norm2(be, a, x, y);
}
static inline void wd_blas_cdot_norm2(wd_backend *be, const wd_field *x, const wd_field *y,
                                      double res[3])
{
    be->flops += 6 * wd_site_reals_(be);
    be->ops->cdot_norm2(be, x, y, res);
}
static inline void wd_blas_caxpy_norm2_cdot(wd_backend *be, wd_complex a, const wd_field *x,
                                            wd_field *y, const wd_field *z, double res[3])
{
    be->flops += 10 * wd_site_reals_(be);
    be->ops->caxpy_norm2_cdot(be, a, x, y, z, res);
}

/* <x[i], y> into res[2 i ..] for i < k, and y += sum_i a[i] x[i], for any
 * k: in pieces of WD_BLAS_MULTI, each reading y once where the backend
 * has the fused operation */
void wd_blas_multi_cdot(wd_backend *be, int k, const wd_field *const *x, const wd_field *y,
                        double *res);
void wd_blas_multi_caxpy(wd_backend *be, int k, const wd_complex *a, const wd_field *const *x,
                         wd_field *y);

/* op on the lanes of l (wd_lane_op), flops counted per lane as the
 * one-lane wrappers above count them; res (3 doubles a lane) may be NULL
 * for an operation that reduces nothing */
void wd_blas_lanes(wd_backend *be, wd_lane_op op, const wd_lanes *l, const wd_field *x,
                   const wd_field *y, const wd_field *z, double *res);
/* the same with the two further operands of the fused steps */
void wd_blas_lanes5(wd_backend *be, wd_lane_op op, const wd_lanes *l, const wd_field *x,
                    const wd_field *y, const wd_field *z, const wd_field *w, const wd_field *u,
                    double *res);

#ifdef __cplusplus
}
#endif

#endif
