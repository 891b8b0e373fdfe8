/*
 * heatbath_gpu_none.c: the GPU heatbath of wdirac_gauge.h for a build
 * without CUDA.  Every call reports that this build has no GPU backend, so
 * callers need no #ifdefs.
 */
#include "wd_core.h"
#include "wdirac_gauge.h"

static wd_status none(void)
{
    return wd_fail(WD_ERR_NO_DEVICE, "this build of wdirac has no CUDA backend "
                   "(nvcc was not found at configure time, or -Dcuda=disabled)");
}

wd_status wd_gauge_gpu_open(const double *u, const int dims[4]) { (void)u, (void)dims; return none(); }
wd_status wd_gauge_gpu_sweep(double b, uint64_t s, uint64_t i, int n, double *ms)
{
    (void)b, (void)s, (void)i, (void)n, (void)ms;
    return none();
}
wd_status wd_gauge_gpu_fetch(double *u) { (void)u; return none(); }
void wd_gauge_gpu_close(void) {}
