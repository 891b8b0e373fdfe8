/*
 * wd_coarse_op_cuda.h: CUDA launchers of the built coarse variants,
 * indexed like wd_coarse_variants[] (generated: wd_coarse_registry_cuda.cu).
 * Seen by CUDA code alone; C callers use wd_coarse_apply_cuda
 * (wd_coarse_op.h).
 */
#ifndef WDIRAC_COARSE_OP_CUDA_H
#define WDIRAC_COARSE_OP_CUDA_H

#include <cuda_runtime.h>

#include "wd_coarse_kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* block: threads a block wanted (<= 0: the default), rounded down to
 * whole sites of 2 nvec threads */
typedef cudaError_t (*wd_coarse_cuda_launcher)(const wd_coarse_args *a, int block,
                                               cudaStream_t stream);

extern const wd_coarse_cuda_launcher wd_coarse_cuda_launchers[];

#ifdef __cplusplus
}
#endif

#endif
