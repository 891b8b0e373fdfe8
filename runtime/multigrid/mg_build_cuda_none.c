/*
 * mg_build_cuda_none.c: a build without CUDA has no GPU coarse build.
 *
 * The externally accessible functions are
 *   wd_mg_coarse_build_cuda     WD_ERR_NO_DEVICE (wd_mg_dev.h)
 *   wd_mg_orthonormalise_cuda   the same
 *   wd_mg_random_start_cuda     the same
 *   wd_mg_coarse_build_cuda_bytes  0
 */
#include "wd_core.h"
#include "wd_mg_dev.h"

wd_status wd_mg_coarse_build_cuda(const wd_mg_build_fine *fine, int nvec, int block_volume,
                                  size_t coarse_volume, const int *agg, const int *sites,
                                  const double *v, double *links)
{
    (void)fine, (void)nvec, (void)block_volume, (void)coarse_volume, (void)agg, (void)sites,
        (void)v, (void)links;
    return wd_fail(WD_ERR_NO_DEVICE, "multigrid: the GPU coarse build needs a build with CUDA");
}

wd_status wd_mg_orthonormalise_cuda(int level, size_t fine_volume, int nvec, int block_volume,
                                    size_t coarse_volume, const int *sites, double *v, float *vf,
                                    int *done)
{
    (void)level, (void)fine_volume, (void)nvec, (void)block_volume, (void)coarse_volume,
        (void)sites, (void)v, (void)vf;
    *done = 0;
    return wd_fail(WD_ERR_NO_DEVICE, "multigrid: the GPU orthonormalisation needs a build with "
                   "CUDA");
}

wd_status wd_mg_random_start_cuda(const int dims[4], const int ext[4], const int org[4],
                                  uint64_t base, int n, double *v)
{
    (void)dims, (void)ext, (void)org, (void)base, (void)n, (void)v;
    return wd_fail(WD_ERR_NO_DEVICE, "multigrid: GPU random starts need a build with CUDA");
}

size_t wd_mg_coarse_build_cuda_bytes(size_t volume, size_t nghost, int nvec, int clover,
                                     size_t coarse_volume)
{
    (void)volume, (void)nghost, (void)nvec, (void)clover, (void)coarse_volume;
    return 0;
}
