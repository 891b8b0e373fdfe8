/*
 * coarse_cuda.cu: the CUDA entry of the generated coarse variants.
 *
 * The externally accessible functions are
 *   wd_coarse_apply_cuda         launch the variant of a layout's precision
 *                                and Nvec on device fields (wd_coarse_op.h)
 *   wd_coarse_apply_multi_cuda   the same for N right-hand sides a call
 */
#include "wd_coarse_op.h"
#include "wd_coarse_op_cuda.h"
#include "wd_core.h"

extern "C" wd_status wd_coarse_apply_multi_cuda(const wd_coarse_layout *l, int dagger, int xpay,
                                                int nrhs, const wd_coarse_args *a, int block,
                                                void *stream)
{
    wd_status st = wd_coarse_check_multi(l, dagger, xpay, nrhs, a);
    if (st != WD_OK)
        return st;
    const int k = wd_coarse_find_axes(l->precision, l->nvec, dagger, xpay, nrhs);
    const cudaError_t e = wd_coarse_cuda_launchers[k](a, block, (cudaStream_t)stream);
    if (e != cudaSuccess)
        return wd_fail(WD_ERR_CUDA, "%s: kernel launch: %s", wd_coarse_variants[k].name,
                       cudaGetErrorString(e));
    return WD_OK;
}

extern "C" wd_status wd_coarse_apply_cuda(const wd_coarse_layout *l, int dagger, int xpay,
                                          const wd_coarse_args *a, int block, void *stream)
{
    return wd_coarse_apply_multi_cuda(l, dagger, xpay, 1, a, block, stream);
}
