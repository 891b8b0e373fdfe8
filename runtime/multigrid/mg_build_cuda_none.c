/*
 * mg_build_cuda_none.c: a build without CUDA has no GPU coarse build.
 *
 * The externally accessible functions are
 *   wd_mg_coarse_build_cuda     WD_ERR_NO_DEVICE (wd_mg_dev.h)
 *   wd_mg_orthonormalise_cuda   the same
 *   wd_mg_random_start_cuda     the same
 *   wd_mg_vector_set_cuda       the same
 *   wd_mg_download_cuda         the same
 *   wd_mg_coarse_pack_cuda      WD_ERR_NO_DEVICE
 *   wd_mg_coarse_build_cuda_bytes  0
 */
#include "wd_core.h"
#include "wd_mg_dev.h"

wd_status wd_mg_coarse_build_cuda(const wd_mg_build_fine *fine, int nvec, int block_volume,
                                  size_t coarse_volume, const int *agg, const int *sites,
                                  const double *v, int v_on_device, double *links)
{
    (void)fine, (void)nvec, (void)block_volume, (void)coarse_volume, (void)agg, (void)sites,
        (void)v, (void)v_on_device, (void)links;
    return wd_fail(WD_ERR_NO_DEVICE, "multigrid: the GPU coarse build needs a build with CUDA");
}

wd_status wd_mg_orthonormalise_cuda(int level, size_t fine_volume, int nvec, int block_volume,
                                    size_t coarse_volume, const int *sites, double *v,
                                    int v_on_device, int vf_precision, void *vf, float *vf_norm,
                                    int *done)
{
    (void)level, (void)fine_volume, (void)nvec, (void)block_volume, (void)coarse_volume,
        (void)sites, (void)v, (void)v_on_device, (void)vf_precision, (void)vf, (void)vf_norm;
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
                                     int v_on_device, size_t coarse_volume)
{
    (void)volume, (void)nghost, (void)nvec, (void)clover, (void)v_on_device, (void)coarse_volume;
    return 0;
}

wd_status wd_mg_download_cuda(void *dst, const void *src, size_t bytes)
{
    (void)dst, (void)src, (void)bytes;
    return wd_fail(WD_ERR_NO_DEVICE, "multigrid: GPU downloads need a build with CUDA");
}

wd_status wd_mg_vector_set_cuda(size_t volume, int nvec, int k, const double *field, double *v)
{
    (void)volume, (void)nvec, (void)k, (void)field, (void)v;
    return wd_fail(WD_ERR_NO_DEVICE, "multigrid: GPU null vectors need a build with CUDA");
}

wd_status wd_mg_coarse_pack_cuda(const wd_mg_coarse_pack *p, int level)
{
    (void)p, (void)level;
    return wd_fail(WD_ERR_NO_DEVICE, "multigrid: packing coarse links on the GPU needs a build "
                   "with CUDA");
}
