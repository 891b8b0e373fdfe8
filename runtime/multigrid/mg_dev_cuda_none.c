/*
 * mg_dev_cuda_none.c: a build without CUDA has no GPU coarse levels.
 *
 * The externally accessible functions are
 *   wd_mg_dev_cuda_ops   NULL (wd_mg_dev.h)
 */
#include "wd_mg_dev.h"

const wd_mg_dev_ops *wd_mg_dev_cuda_ops(void)
{
    return NULL;
}
