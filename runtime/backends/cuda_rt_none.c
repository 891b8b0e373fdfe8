/*
 * cuda_rt_none.c: cuda_rt.h for a build without CUDA.  Every call reports
 * that this build has no GPU backend, so callers need no #ifdefs.
 */
#include "cuda_rt.h"
#include "wd_backend.h"
#include "wd_core.h"

static wd_status none(void)
{
    return wd_fail(WD_ERR_NO_DEVICE, "this build of wdirac has no CUDA backend "
                   "(nvcc was not found at configure time, or -Dcuda=disabled)");
}

int wd_cuda_available(void) { return 0; }
wd_status wd_cuda_device_info(wd_cuda_info *info) { (void)info; return none(); }
wd_status wd_cuda_malloc(void **p, size_t bytes, const char *what)
{
    (void)bytes, (void)what;
    *p = NULL;
    return none();
}
void wd_cuda_free(void *p) { (void)p; }
wd_status wd_cuda_h2d(void *d, const void *s, size_t n) { (void)d, (void)s, (void)n; return none(); }
wd_status wd_cuda_d2h(void *d, const void *s, size_t n) { (void)d, (void)s, (void)n; return none(); }
wd_status wd_cuda_memset(void *d, int v, size_t n) { (void)d, (void)v, (void)n; return none(); }
wd_status wd_cuda_h2d_staged(void *d, const void *s, size_t n, void *p, size_t c, wd_copy_fn f)
{
    (void)d, (void)s, (void)n, (void)p, (void)c, (void)f;
    return none();
}
wd_status wd_cuda_d2h_staged(void *d, const void *s, size_t n, void *p, size_t c, wd_copy_fn f)
{
    (void)d, (void)s, (void)n, (void)p, (void)c, (void)f;
    return none();
}
wd_status wd_cuda_h2d_rows(void *d, const void *s, size_t p, size_t w, size_t r)
{
    (void)d, (void)s, (void)p, (void)w, (void)r;
    return none();
}
wd_status wd_cuda_d2h_rows(void *d, const void *s, size_t p, size_t w, size_t r)
{
    (void)d, (void)s, (void)p, (void)w, (void)r;
    return none();
}
wd_status wd_cuda_set_device(int d, int n) { (void)d, (void)n; return none(); }
wd_status wd_cuda_dslash_async(int i, const wd_dslash_args *a, int b)
{
    (void)i, (void)a, (void)b;
    return none();
}
wd_status wd_cuda_dslash_range_async(int i, const wd_dslash_args *a, int b, int c0, int c1, void *s)
{
    (void)i, (void)a, (void)b, (void)c0, (void)c1, (void)s;
    return none();
}
wd_status wd_cuda_dslash(int i, const wd_dslash_args *a, int b) { (void)i, (void)a, (void)b; return none(); }
wd_status wd_cuda_time_dslash(int i, const wd_dslash_args *a, int b, int r, double *t)
{
    (void)i, (void)a, (void)b, (void)r, (void)t;
    return none();
}
wd_status wd_cuda_dslash_split_async(int i, const wd_dslash_args *a, int b, int p)
{
    (void)i, (void)a, (void)b, (void)p;
    return none();
}
wd_status wd_cuda_time_split(int i, const wd_dslash_args *a, int b, int p, int r, double *t)
{
    (void)i, (void)a, (void)b, (void)p, (void)r, (void)t;
    return none();
}
wd_status wd_cuda_copy_gbps(size_t n, int r, double *g) { (void)n, (void)r, (void)g; return none(); }
wd_status wd_cuda_sync(void) { return none(); }
void *wd_cuda_stream(void) { return NULL; }
wd_status wd_backend_cuda_init(wd_backend *be) { (void)be; return none(); }
wd_status wd_backend_cuda_select(void) { return none(); }
wd_status wd_backend_cuda_time_dslash(wd_backend *be, int variant, wd_field *out,
                                      const wd_gauge *g, const wd_field *in, const wd_field *x,
                                      double a, int parity, int reps, double *us, double *halo_us)
{
    (void)be, (void)variant, (void)out, (void)g, (void)in, (void)x, (void)a, (void)parity;
    (void)reps, (void)us, (void)halo_us;
    return none();
}
wd_status wd_backend_cuda_time_exchange(wd_backend *be, int mu, size_t bytes, int reps,
                                        double *us)
{
    (void)be, (void)mu, (void)bytes, (void)reps, (void)us;
    return none();
}
wd_status wd_backend_cuda_time_sum(wd_backend *be, int n, int reps, double *us_mpi,
                                   double *us_nccl, int *same)
{
    (void)be, (void)n, (void)reps, (void)us_mpi, (void)us_nccl, (void)same;
    return none();
}
void wd_backend_cuda_set_overlap(wd_backend *be, int on) { (void)be, (void)on; }
wd_status wd_backend_cuda_set_halo(wd_backend *be, wd_halo_policy policy)
{
    (void)be, (void)policy;
    return wd_fail(WD_ERR_NO_DEVICE, "wd_backend_cuda_set_halo: this build has no CUDA");
}
void wd_backend_cuda_halo_route(const wd_backend *be, char *buf, size_t n)
{
    (void)be;
    if (n)
        buf[0] = 0;
}
void wd_backend_cuda_halo_tuning(const wd_backend *be, char *buf, size_t n)
{
    (void)be;
    if (n)
        buf[0] = 0;
}
void wd_backend_cuda_halo_launches(const wd_backend *be, int *pack, int *unpack)
{
    (void)be;
    *pack = *unpack = 0;
}
