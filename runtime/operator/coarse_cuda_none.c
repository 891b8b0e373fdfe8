/*
 * coarse_cuda_none.c: the CUDA entry of the coarse variants in a build
 * without CUDA.
 *
 * The externally accessible functions are
 *   wd_coarse_apply_cuda, wd_coarse_apply_multi_cuda   WD_ERR_NO_DEVICE
 *                          (wd_coarse_op.h)
 */
#include "wd_coarse_op.h"
#include "wd_core.h"

wd_status wd_coarse_apply_cuda(const wd_coarse_layout *l, int dagger, int xpay,
                               const wd_coarse_args *a, int block, void *stream)
{
    (void)l;
    (void)dagger;
    (void)xpay;
    (void)a;
    (void)block;
    (void)stream;
    return wd_fail(WD_ERR_NO_DEVICE, "coarse kernels on the GPU: this build has no CUDA "
                   "(meson option -Dcuda)");
}

wd_status wd_coarse_apply_multi_cuda(const wd_coarse_layout *l, int dagger, int xpay, int nrhs,
                                     const wd_coarse_args *a, int block, void *stream)
{
    (void)nrhs;
    return wd_coarse_apply_cuda(l, dagger, xpay, a, block, stream);
}
