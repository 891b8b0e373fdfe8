/*
 * wd_operator_cuda.h: CUDA launchers of the built variants, indexed like
 * wd_variants[] (generated: wd_registry_cuda.cu), and their reducing
 * kernels where the manifest gives them one.
 */
#ifndef WDIRAC_OPERATOR_CUDA_H
#define WDIRAC_OPERATOR_CUDA_H

#include <cuda_runtime.h>

#include "wd_kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef cudaError_t (*wd_cuda_launcher)(const wd_dslash_args *a, int block, cudaStream_t stream);

extern const wd_cuda_launcher wd_cuda_launchers[];
/* the variant's reducing kernel (wd_dslash_args red_*: the Dslash, then each
 * warp's sums of {Re <y, out>, Im <y, out>, |out|^2} into red_partial), or
 * NULL; block a multiple of 32 */
extern const wd_cuda_launcher wd_cuda_reduce_launchers[];
extern const int wd_cuda_launcher_count;

#ifdef __cplusplus
}
#endif

#endif
