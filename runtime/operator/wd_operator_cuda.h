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

#ifdef __CUDACC__
/* Caps *sites so that a block of *sites x per threads fits `kernel`: the
 * threads its registers allow, rounded down to a multiple of 32, asked
 * once a kernel (cached in *most, 0 before).  A Dslash kernel's G = 1
 * instance (reading received faces) may take more registers than its
 * G = 0 one, on whose launches the block size was tuned: the launchers
 * cap its blocks with this. */
static inline cudaError_t wd_block_fit(const void *kernel, int *most, int per, int *sites)
{
    if (*most == 0) {
        cudaFuncAttributes fa;
        const cudaError_t e = cudaFuncGetAttributes(&fa, kernel);
        if (e != cudaSuccess)
            return e;
        *most = fa.maxThreadsPerBlock >= 64 ? fa.maxThreadsPerBlock / 32 * 32
                                            : fa.maxThreadsPerBlock;
    }
    if (*sites * per > *most)
        *sites = *most >= per ? *most / per : 1;
    return cudaSuccess;
}

/* One stored element's share of a reducing kernel's sums (the site function
 * with sums, templates/dslash_site.j2): red += {Re <y, v>, Im <y, v>,
 * |v|^2} over v's two complex numbers, each real the stored short times its
 * site's scale (vs, ys) in float, as a later kernel loads it, the products
 * in double. */
WD_INLINE void wd_red_add(double *red, short4 v, float vs, short4 y, float ys)
{
    const float v_re0 = wd_s2f(v.x) * vs, v_im0 = wd_s2f(v.y) * vs;
    const float v_re1 = wd_s2f(v.z) * vs, v_im1 = wd_s2f(v.w) * vs;
    const float y_re0 = wd_s2f(y.x) * ys, y_im0 = wd_s2f(y.y) * ys;
    const float y_re1 = wd_s2f(y.z) * ys, y_im1 = wd_s2f(y.w) * ys;
    red[0] += (double)y_re0 * v_re0 + (double)y_im0 * v_im0;
    red[1] += (double)y_re0 * v_im0 - (double)y_im0 * v_re0;
    red[2] += (double)v_re0 * v_re0 + (double)v_im0 * v_im0;
    red[0] += (double)y_re1 * v_re1 + (double)y_im1 * v_im1;
    red[1] += (double)y_re1 * v_im1 - (double)y_im1 * v_re1;
    red[2] += (double)v_re1 * v_re1 + (double)v_im1 * v_im1;
}
#endif

#endif
