/*
 * wd_coarse_op.h: the generated multigrid coarse-operator variants
 * (coarse_*, docs/coarse-kernels.md): their registry and the CPU entry
 * that runs one on packed fields (wd_coarse_layout.h).  Like wd_operator.h
 * for the Dslash variants; it depends on core alone.
 *
 * The externally accessible definitions are
 *   wd_coarse_variants[], wd_coarse_variant_count   generated
 *                             (wd_coarse_registry.c), manifest order, a
 *                             NULL name after the last
 *   wd_coarse_find            index of a built coarse variant by name, -1 if none
 *   wd_coarse_find_axes       ... by its axis values, -1 if not built
 *   wd_coarse_check           the checks both entries make: the variant is
 *                             built (else WD_ERR_NOT_BUILT naming its
 *                             axes), the fields it reads are there
 *   wd_coarse_apply_cpu       out = D_c in (dagger, xpay) over every coarse
 *                             site on the CPU (OpenMP over sites)
 *   wd_coarse_apply_cuda      the same on device fields, launched on a
 *                             stream (coarse_cuda.cu; without CUDA
 *                             WD_ERR_NO_DEVICE, coarse_cuda_none.c)
 *   wd_coarse_find_nrhs       the most right-hand sides a built variant of
 *                             given axes applies at once, up to a bound
 *   wd_coarse_check_multi, wd_coarse_apply_multi_cpu,
 *   wd_coarse_apply_multi_cuda   the three above for the _n<N> variants:
 *                             N right-hand sides a call, right-hand side r
 *                             of in, out, x at r rhs_stride reals (norms r
 *                             rhs_norm_stride floats: wd_coarse_kernel.h)
 */
#ifndef WDIRAC_COARSE_OP_H
#define WDIRAC_COARSE_OP_H

#include "wd_coarse_kernel.h"
#include "wdirac.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*wd_coarse_cpu_fn)(const wd_coarse_args *a);

typedef struct wd_coarse_variant {
    const char *name;
    int precision;      /* bytes per stored real: 4, 2 */
    int nvec;           /* null vectors a chirality (2 nvec components a site) */
    int dagger;         /* D_c^dag = g5 D_c g5 */
    int xpay;           /* out = x + a D_c in */
    int nrhs;           /* right-hand sides a call applies to (wd_coarse_kernel.h) */
    wd_coarse_cpu_fn cpu;
} wd_coarse_variant;

extern const wd_coarse_variant wd_coarse_variants[];
extern const int wd_coarse_variant_count;

int wd_coarse_find(const char *name);
int wd_coarse_find_axes(int precision, int nvec, int dagger, int xpay, int nrhs);

/* a's fields per wd_coarse_kernel.h, sized by l (its precision and nvec
 * pick the variant; a->volume must be l->volume); a->x (and its norms)
 * needed for xpay, the norms for half.  WD_ERR_NOT_BUILT when the build
 * has no such variant, WD_ERR_INVALID naming a missing field. */
wd_status wd_coarse_check(const wd_coarse_layout *l, int dagger, int xpay,
                          const wd_coarse_args *a);
wd_status wd_coarse_apply_cpu(const wd_coarse_layout *l, int dagger, int xpay,
                              const wd_coarse_args *a);
/* a's pointers on the device (the neighbour table too); asynchronous on
 * stream (a cudaStream_t; NULL: the default stream); block: threads a
 * block wanted (<= 0: 256) */
wd_status wd_coarse_apply_cuda(const wd_coarse_layout *l, int dagger, int xpay,
                               const wd_coarse_args *a, int block, void *stream);

/* the largest N <= most of a built coarse_<p>_nv<nvec>_dag<dagger>_xpay<xpay>_n<N>,
 * 0 if none */
int wd_coarse_find_nrhs(int precision, int nvec, int dagger, int xpay, int most);
/* as wd_coarse_check, wd_coarse_apply_cpu, wd_coarse_apply_cuda for the
 * variant of nrhs right-hand sides (nrhs 1: those); for nrhs > 1 also
 * WD_ERR_INVALID where a->rhs_stride is below a field of l->volume sites
 * (or, half, a->rhs_norm_stride below l->volume).  Each right-hand side's
 * output is the one-RHS variant's on that right-hand side, bit for bit
 * (the same sums in the same order; docs/coarse-kernels.md). */
wd_status wd_coarse_check_multi(const wd_coarse_layout *l, int dagger, int xpay, int nrhs,
                                const wd_coarse_args *a);
wd_status wd_coarse_apply_multi_cpu(const wd_coarse_layout *l, int dagger, int xpay, int nrhs,
                                    const wd_coarse_args *a);
wd_status wd_coarse_apply_multi_cuda(const wd_coarse_layout *l, int dagger, int xpay, int nrhs,
                                     const wd_coarse_args *a, int block, void *stream);

#ifdef __cplusplus
}
#endif

#endif
