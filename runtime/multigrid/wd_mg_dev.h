/*
 * wd_mg_dev.h: the multigrid's coarse levels on the solver's backend (the
 * CPU, mg_dev_cpu.c, or the GPU, mg_dev_cuda.cu): coarse fields, the
 * generated coarse operator, the BLAS of the coarse Krylov solvers and the
 * transfers P and P^dag.  Plain C for gcc and nvcc (no C99 complex).
 *
 * The externally accessible definitions are
 *   wd_mg_dev_ops          the operations one backend implements
 *   wd_mg_dev_cpu_ops      the CPU's (host memory, OpenMP)
 *   wd_mg_dev_cuda_ops     the GPU's (device memory, the backend's one
 *                          stream; NULL in a build without CUDA)
 *   wd_mg_dev_level        a coarse level's operator as the kernels read it
 *   wd_mg_dev_transfer     the aggregates and null vectors between two levels
 *   wd_mg_dev_apply_multi_plan  apply_multi's calls of the N-RHS kernels
 *
 * Memory.  Every pointer in these structures and every field argument is
 * the implementation's memory (alloc): device memory on the GPU, host
 * memory on the CPU.  h2d / d2h move bytes between it and the host.
 *
 * Coarse fields.  A field of a level holds `volume` sites of n = 2 nvec
 * complex components in the packed single-precision layout of
 * wd_coarse_kernel.h: site s's n real parts at s * 2n + i, then its n
 * imaginary parts at s * 2n + n + i.  Arithmetic is in float; reductions
 * accumulate in double in an order the implementation fixes (never one
 * that depends on scheduling): the same bits from run to run.  The BLAS
 * operands may alias one another (each element is read before it is
 * written); apply's and the transfers' may not.  Fields of no sites are
 * not supported (every level has at least one).  A multi-field of nrhs
 * right-hand sides (apply_multi) is nrhs fields of volume + nghost sites
 * one after another: as a whole a field of nrhs (volume + nghost) sites,
 * so the BLAS applies to a whole batch as to one field, and to right-hand
 * side r through the pointer r (volume + nghost) 2n floats on.
 *
 * Fine fields of a transfer (rounded to float before the arithmetic).
 * On the first transfer (fine_host = 1) the fine field is the host
 * layout of the backend's pair transfers
 * (wd_upload_pair / wd_download_pair with on_device): complex double,
 * site-major, n_fine = 12 components a site (spin-major, DeGrand-Rossi),
 * interleaved (re, im).  On a coarser one (fine_host = 0) it is a packed
 * coarse field of n_fine components a site.  Either way component a of a
 * site has chirality 0 for a < n_fine / 2, else 1.
 *
 * Null vectors.  v holds nvec vectors site-major, complex interleaved:
 * the (re, im) of component a of vector k at fine site x at v[2 ((x nvec
 * + k) n_fine + a)] and the next real (the host's wd_mg_transfer order),
 * in v_precision: 4, floats rounded from the float64 vectors; or 2,
 * 16-bit with one norm a vector at a site, v_norm[x nvec + k] = the
 * largest |real| of v_k(x)'s n_fine components (as float), each real
 * stored as round(real 32767 / norm) (in float64, as
 * wd_pack_coarse_links stores) and read as stored x (norm / 32767) in
 * float (wd_mg_pack_vectors).  Then
 *   (P c)(x)_a = sum_k v_k(x)_a c(b(x), chi(a) nvec + k)
 *   (P^dag f)(b, chi nvec + k) = sum_{x in b} sum_{a of chi} conj(v_k(x)_a) f(x)_a
 * each sum in the order written (k, then the aggregate's sites in
 * sites[] order, then a).
 *
 * Errors: every operation returns WD_OK or the first failure with
 * wd_fail's message (a CUDA call's name and error string).
 */
#ifndef WDIRAC_MG_DEV_H
#define WDIRAC_MG_DEV_H

#include <stddef.h>
#include <stdint.h>

#include "wd_backend.h"
#include "wd_coarse_kernel.h"
#include "wdirac.h"

#ifdef __cplusplus
extern "C" {
#endif

/* the most fields a multi-operation reads in one call; callers split
 * longer lists */
enum { WD_MG_DEV_MULTI = 16 };
/* the most lanes (independent right-hand sides) a lanes_ operation takes */
enum { WD_MG_DEV_LANES = 16 };

typedef struct wd_mg_dev_level {
    wd_coarse_layout layout;     /* volume, nvec (n = 2 nvec), precision 4 or 2 */
    int nghost;                  /* on a grid: the input's ghost sites after volume */
    const int *nbr;              /* nbr[8 s + d] (volume + i: ghost i) */
    const void *links;           /* packed links */
    const float *link_norm;      /* half links: one norm a block; else NULL */
    /* half (precision 2): two 16-bit fields of the layout with their site
     * norms (volume + nghost sites), into which apply rounds its single
     * input, ghosts too, and from which it reads the half kernel's output
     * back to single */
    void *hin, *hout;
    float *hin_norm, *hout_norm;
    int block;                   /* threads a block the kernel is launched with
                                  * (0: its default; tune's choice) */
    /* half links, for apply_multi: two 16-bit multi-fields of hmulti
     * right-hand sides (apply_multi's layout: right-hand side r's volume +
     * nghost sites at r (volume + nghost) sites, its site norms at r
     * (volume + nghost) floats), which the caller allocates; NULL and 0
     * where the level runs no multi-RHS apply on half links */
    void *hmin, *hmout;
    float *hmin_norm, *hmout_norm;
    int hmulti;
} wd_mg_dev_level;

typedef struct wd_mg_dev_transfer {
    int fine_host;               /* the fine field's layout: 1 host complex double, 0 packed */
    int fine_volume, coarse_volume, block_volume;
    int n_fine, nvec;            /* the coarse field has 2 nvec components a site */
    const int *agg;              /* agg[x]: the aggregate of fine site x */
    const int *sites;            /* sites[b * block_volume + j]: aggregate b's fine sites */
    int v_precision;             /* 4 float, 2 16-bit with v_norm */
    const void *v;               /* the null vectors */
    const float *v_norm;         /* v_precision 2: one a vector at a site; else NULL */
    /* NULL: prolong writes every fine site.  A transfer of one parity's
     * field (the sites of the other neither read nor written): sites and
     * block_volume the aggregates' sites of that parity (half of each,
     * wd_mg_parity_sites), fine_volume half the fine sites, and
     * fine_sites[i] (i < fine_volume) the fine sites prolong writes */
    const int *fine_sites;
} wd_mg_dev_transfer;

typedef struct wd_mg_dev_ops {
    const char *name;            /* "cpu", "cuda" */
    wd_status (*alloc)(void **p, size_t bytes, const char *what);
    void (*free)(void *p);       /* NULL is a no-op */
    wd_status (*h2d)(void *dst, const void *src, size_t bytes);
    wd_status (*d2h)(void *dst, const void *src, size_t bytes);
    /* out = D_c in on every site through the generated coarse kernel of
     * the level's layout (WD_ERR_NOT_BUILT naming it when the build lacks
     * it); out may not alias in, whose nghost ghost sites the caller has
     * filled.  Half links: in rounded to the 16-bit
     * layout first (a site's norm its largest |real|, as the kernels
     * store), the half kernel, its output widened to single. */
    wd_status (*apply)(const wd_mg_dev_level *lv, float *out, const float *in);
    /* the BLAS on fields of `volume` sites of n components */
    wd_status (*zero)(int volume, int n, float *y);
    wd_status (*copy)(int volume, int n, float *y, const float *x);
    /* x = a x */
    wd_status (*scale)(int volume, int n, float a, float *x);
    /* y = x - y */
    wd_status (*xmy)(int volume, int n, const float *x, float *y);
    /* y += sum_{i < k} a[i] x[i], k <= WD_MG_DEV_MULTI (k = 1: caxpy);
     * each site's sum in i order */
    wd_status (*multi_caxpy)(int volume, int n, int k, const wd_complex *a,
                             const float *const *x, float *y);
    /* res[2 i], res[2 i + 1] = Re, Im <x[i], y> = sum conj(x[i]) y, for
     * i < k <= WD_MG_DEV_MULTI */
    wd_status (*multi_cdot)(int volume, int n, int k, const float *const *x, const float *y,
                            double *res);
    /* res = {Re <x, y>, Im <x, y>, |x|^2} */
    wd_status (*cdot_norm2)(int volume, int n, const float *x, const float *y, double res[3]);
    /* y += a x, then *norm2 = |y|^2 of y as stored */
    wd_status (*caxpy_norm2)(int volume, int n, wd_complex a, const float *x, float *y,
                             double *norm2);
    /* out[i] = in[sites[i]] for i < count: whole sites of `floats` floats
     * (a field's faces gathered for the neighbours) */
    wd_status (*gather)(int count, int floats, const int *sites, const float *in, float *out);
    /* coarse = P^dag fine, fine = P coarse (t's fine layout) */
    wd_status (*restrict_)(const wd_mg_dev_transfer *t, float *coarse, const void *fine);
    wd_status (*prolong)(const wd_mg_dev_transfer *t, void *fine, const float *coarse);
    /* out[sites[i]] = in[i] for i < count: whole sites of `floats` floats
     * (the sites distinct; the even-odd coarse solve's fields put back) */
    wd_status (*scatter)(int count, int floats, const int *sites, const float *in, float *out);
    /* out(s) = B(s) in(s) on `volume` sites of n components: B(s) n x n
     * complex float, column-major (entry (i, j) at float pair (s n + j) n +
     * i), each row summed in j order; out may not alias in */
    wd_status (*block_apply)(int volume, int n, const float *b, const float *in, float *out);
    /* The 16-bit fields of half levels (wd_mg_dev_level's hin / hout: the
     * 16-bit layout of wd_coarse_kernel.h with a norm a site), for the
     * even-odd solve's hops without conversions between them:
     * apply_half   lv->hout = D_c lv->hin by the level's half kernel (the
     *              caller has filled every site of hin the hops read);
     * pack_half    dst site sites[i] (i where sites is NULL) = src's site i
     *              (single) rounded as apply rounds its input (norm: its
     *              largest |real|), for i < count;
     * move_half    dst site sites[i] = 16-bit src site i with its norm;
     * xmy_half     y = x - h (16-bit, widened as apply widens) on count
     *              sites. */
    wd_status (*apply_half)(const wd_mg_dev_level *lv);
    wd_status (*pack_half)(int count, int n, const int *sites, const float *src, void *dst,
                           float *dst_norm);
    wd_status (*move_half)(int count, int n, const int *sites, const void *src,
                           const float *src_norm, void *dst, float *dst_norm);
    wd_status (*xmy_half)(int count, int n, const float *x, const void *h, const float *norm,
                          float *y);
    /* lv->block: the fastest of the block sizes the level's kernel takes,
     * timed on out = D_c in (single links; fields of the level's volume,
     * with its ghosts) or on apply_half (half links: hin / hout, out and
     * in unused).  A site's sums do not depend on it: the same bits with
     * any block.  Optional (NULL: the kernel's default). */
    wd_status (*tune)(wd_mg_dev_level *lv, float *out, const float *in);
    /* out = D_c in for nrhs right-hand sides in one pass over the links:
     * in and out hold nrhs fields of the level one after another (right-
     * hand side r at r (volume + nghost) 2n floats, each a field as apply
     * takes it, the ghost sites of in's filled by the caller), applied by
     * the generated coarse_<p>_nv<nvec>_dag0_xpay0_n<N> of most right-hand
     * sides built for what is left (N <= nrhs; the rest by smaller N, at
     * last one at a time: 12 with N = 4 built as three calls, 6 as 4 + 1 +
     * 1).  Right-hand side r of out is apply's output on right-hand side r
     * of in, bit for bit (docs/coarse-kernels.md), its ghost sites
     * untouched.  Half links: in rounded into lv->hmin as apply rounds it
     * (WD_ERR_INVALID unless lv->hmulti >= nrhs), the half kernels,
     * lv->hmout widened into out.  lv->block as apply uses it. */
    wd_status (*apply_multi)(const wd_mg_dev_level *lv, int nrhs, float *out, const float *in);
    /* The BLAS of `lanes` independent solves in one launch (the batched
     * coarse GCR of a multi-RHS multigrid solve): lane r of a field given
     * by its pointer p is the field of `volume` sites of n components at
     * p + r stride floats (stride >= 2 n volume), 1 <= lanes <=
     * WD_MG_DEV_LANES, 1 <= k <= WD_MG_DEV_MULTI.  Each lane's result has
     * the bits of multi_cdot / multi_caxpy on that lane alone (the same
     * sums in the same order), whatever the other lanes hold:
     * lanes_cdot   res[2 (r k + i) + {0, 1}] = Re, Im <x[i]_r, y_r>;
     * lanes_caxpy  y_r += sum_{i < k} a[r k + i] x[i]_r (a lane's
     *              coefficients all zero leave its y's bits as they are). */
    wd_status (*lanes_cdot)(int volume, int n, int lanes, size_t stride, int k,
                            const float *const *x, const float *y, double *res);
    wd_status (*lanes_caxpy)(int volume, int n, int lanes, size_t stride, int k,
                             const wd_complex *a, const float *const *x, float *y);
    /* x = gamma5 x in place on `volume` sites of n components: the
     * components of chirality 1 (i >= n / 2; real and imaginary parts)
     * negated, as wd_mg_g5 (the setup's relaxation of a coarse level's
     * null vectors on the normal equations, A^dag = g5 A g5) */
    wd_status (*g5)(int volume, int n, float *x);
} wd_mg_dev_ops;

extern const wd_mg_dev_ops wd_mg_dev_cpu_ops;

/* the host's rounding of null vectors into wd_mg_dev_transfer's layout:
 * the vector-sites [first, first + count) (x nvec + k) of v (complex
 * double, n_fine components each) into out (their reals from out's
 * start) and, for precision 2, norm (from norm's start); precision 4 or 2 */
void wd_mg_pack_vectors(int precision, int n_fine, size_t first, size_t count, const double *v,
                        void *out, float *norm);
/* the bytes of `count` vector-sites of n_fine components in precision
 * (the norms apart) */
size_t wd_mg_vector_bytes(int precision, int n_fine, size_t count);
/* WD_ERR_INVALID (wd_fail's message) unless t's null vectors are in
 * precision 4, or 2 with norms */
wd_status wd_mg_dev_transfer_check(const wd_mg_dev_transfer *t);
/* apply_multi's plan, shared by both backends (mg_dev_cpu.c): the kernel
 * variants' calls over nrhs right-hand sides of lv's layout, right-hand
 * side r of in and out (single, or lv's 16-bit hmin / hmout with norms)
 * at r (volume + nghost) sites; run launches one call of N right-hand
 * sides (wd_coarse_apply_multi_cpu or a wrapper of _cuda); the first
 * failure returned */
typedef wd_status (*wd_mg_coarse_run)(const wd_mg_dev_level *lv, int nrhs,
                                      const wd_coarse_args *a);
wd_status wd_mg_dev_apply_multi_plan(const wd_mg_dev_level *lv, int nrhs, void *out,
                                     float *out_norm, const void *in, const float *in_norm,
                                     wd_mg_coarse_run run);
/* apply_multi's argument checks on both backends: 1 <= nrhs <= max_nrhs,
 * and with half links the level's 16-bit multi-fields for nrhs */
wd_status wd_mg_dev_apply_multi_check(const wd_mg_dev_level *lv, int nrhs, int max_nrhs);
/* the lanes_ operations' argument checks on both backends: 1 <= k <=
 * WD_MG_DEV_MULTI, 1 <= lanes <= WD_MG_DEV_LANES, stride >= 2 n volume
 * (WD_ERR_INTERNAL naming `what` and the limits otherwise) */
wd_status wd_mg_dev_lanes_check(const char *what, int volume, int n, int lanes, size_t stride,
                                int k);
/* the CUDA implementation, or NULL in a build without CUDA */
const wd_mg_dev_ops *wd_mg_dev_cuda_ops(void);

/* Collective over h's grid: the ghost sites of a field of floats floats a
 * site in d's memory (volume + nghost sites), from the neighbours: the
 * faces gathered there by the site list dsend (h->send uploaded) into
 * dface (nghost sites), moved to the host (hface: 2 nghost sites, sent
 * then received), swapped (wd_mg_halo_swap) and put into the field's
 * ghost region.  A no-op without ghosts (mg_halo.c). */
struct wd_mg_halo;
wd_status wd_mg_halo_exchange_dev(const struct wd_mg_halo *h, const wd_mg_dev_ops *d,
                                  const int *dsend, float *dface, float *hface, float *field,
                                  int floats);

/*
 * The first coarse operator D_c = P^dag A P built on the GPU in float64
 * (mg_build_cuda.cu): the same links as wd_mg_coarse_build (wd_mg.h) of
 * the fine level (12 components a site) to rounding, from host arrays:
 *   fine:  dims, volume, nghost, nbr[8 x + d] (wd_mg_op's neighbour
 *          table, ghosts from volume on), t0 and nt (the block's first
 *          global time slice and the global T), the links u
 *          ([site][mu][3][3] complex double, interleaved; volume + nghost
 *          sites, the ghosts filled), the
 *          clover blocks (clover_field.h's host format, WD_CLOVER_SITE_REALS
 *          doubles a site) or NULL, kappa, tbc (+1 / -1): wd_mg_op's
 *          fine fields;
 *   the transfer: nvec, block_volume, coarse_volume, agg[x], sites[b bv +
 *          j], v (site-major complex double, wd_mg_transfer's v, its
 *          ghost sites filled; device memory where v_on_device, else
 *          host);
 *   links: out, host, coarse_volume x 9 x (2 nvec)^2 complex double in
 *          wd_mg_op's coarse order (8 hops then the local block, each
 *          row-major, row (chi', k') and column (chi, k)), every entry
 *          written.
 * The device memory it takes is freed before it returns.  WD_ERR_NO_DEVICE
 * in a build without CUDA (mg_build_cuda_none.c).
 */
typedef struct wd_mg_build_fine {
    int dims[4];
    size_t volume, nghost;
    int t0, nt;
    const int *nbr;
    const double *u;
    const double *clover;
    double kappa;
    int tbc;
} wd_mg_build_fine;

wd_status wd_mg_coarse_build_cuda(const wd_mg_build_fine *fine, int nvec, int block_volume,
                                  size_t coarse_volume, const int *agg, const int *sites,
                                  const double *v, int v_on_device, double *links);

/* the device memory wd_mg_coarse_build_cuda takes for a fine level of
 * volume + nghost sites (clover: with clover blocks) and coarse_volume
 * aggregates, the null vectors' copy included unless v_on_device (0 in a
 * build without CUDA) */
size_t wd_mg_coarse_build_cuda_bytes(size_t volume, size_t nghost, int nvec, int clover,
                                     int v_on_device, size_t coarse_volume);

/* wd_mg_vector_set (wd_mg.h) of a first level on the GPU: vector k of v
 * (device memory, volume x nvec x 12 complex double, the transfer's
 * order) from field (device memory, the host order of the backend's pair
 * transfers: volume x 12); WD_ERR_NO_DEVICE in a build without CUDA */
wd_status wd_mg_vector_set_cuda(size_t volume, int nvec, int k, const double *field, double *v);

/* bytes from device memory src into pageable host memory dst through two
 * pinned chunks, the host side copied by several threads (the
 * orthonormalisation's staging); WD_ERR_NO_DEVICE in a build without CUDA */
wd_status wd_mg_download_cuda(void *dst, const void *src, size_t bytes);

/* wd_mg_random_start (wd_mg.h) on the GPU into v (device memory, the host
 * order): the same bits; WD_ERR_NO_DEVICE in a build without CUDA */
wd_status wd_mg_random_start_cuda(const int dims[4], const int ext[4], const int org[4],
                                  uint64_t base, int n, double *v);

/*
 * wd_mg_orthonormalise (wd_mg.h) of the first level's null vectors on the
 * GPU in float64: v (site-major complex double, fine_volume sites of nvec
 * x 12; ghosts untouched; host memory, uploaded and downloaded, or device
 * memory where v_on_device, in place) with each aggregate's chirality
 * orthonormalised by classical Gram-Schmidt twice (each dot summed in a
 * fixed order: the same bits on every run, not the host's),
 * and where vf is not NULL also rounded into vf (and vf_norm) in
 * vf_precision (device memory, wd_mg_dev_transfer's v: the bits of
 * wd_mg_pack_vectors).  *done = 0 and nothing touched where the kernel
 * does not take the shape (nvec > 32 or 6 block_volume > 4096: the caller
 * orthonormalises on the host); WD_ERR_INVALID naming a dependent vector
 * as the host's does; WD_ERR_NO_DEVICE in a build without CUDA.
 */
wd_status wd_mg_orthonormalise_cuda(int level, size_t fine_volume, int nvec, int block_volume,
                                    size_t coarse_volume, const int *sites, double *v,
                                    int v_on_device, int vf_precision, void *vf, float *vf_norm,
                                    int *done);

/*
 * A coarse level's links as its kernels read them, made on the GPU from
 * the host's float64 links (wd_mg_op's: volume x 9 x n x n complex
 * double, n = 2 nvec <= 64), uploaded in pieces of at most 256 MB:
 *   dlinks, dlink_norm  the 9 blocks of every site packed in a layout of
 *                  volume sites and `precision` (4 or 2; the norms for
 *                  2): wd_pack_coarse_links's bits;
 * and where slot is not NULL (the level's even-odd solve; host, volume
 * ints: slot[s] = p half_volume + i for the i-th site of parity p):
 *   dxinv          X(s)^-1 of the local block (Gauss-Jordan with partial
 *                  pivoting in float64, pivots by |entry|^2) in single,
 *                  column-major: entry (i, j) at float pair (s n + j) n + i;
 *   dhops[p], dhop_norm[p]  X^-1 Y_d (d < 8; block 8 zero) of parity p's
 *                  sites packed in a layout of half_volume sites, site i at
 *                  its slot.
 * Every output is device memory of the given layout, every entry
 * written.  WD_ERR_INVALID naming the lowest coarse site whose local block
 * is singular; WD_ERR_NO_DEVICE in a build without CUDA.
 */
typedef struct wd_mg_coarse_pack {
    int n, volume, precision;
    const double *links;
    void *dlinks;
    float *dlink_norm;
    const int *slot;
    int half_volume;
    float *dxinv;
    void *dhops[2];
    float *dhop_norm[2];
} wd_mg_coarse_pack;

wd_status wd_mg_coarse_pack_cuda(const wd_mg_coarse_pack *p, int level);

#ifdef __cplusplus
}
#endif

#endif
