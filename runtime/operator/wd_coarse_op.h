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
    int nrhs;           /* right-hand sides a call applies to */
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

#ifdef __cplusplus
}
#endif

#endif
