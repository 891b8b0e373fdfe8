/*
 * wd_operator_cuda.h: CUDA launchers of the built variants, indexed like
 * wd_variants[] (generated: wd_registry_cuda.cu).
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
extern const int wd_cuda_launcher_count;

#ifdef __cplusplus
}
#endif

#endif
