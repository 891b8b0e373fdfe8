/*
 * cuda_rt.cu: the CUDA side of cuda_rt.h (see there for the contract).
 *
 * One stream per process (created on first use) carries every launch and
 * copy; timings use CUDA events on it.  Launches are checked twice: the
 * launch status (cudaGetLastError) at once, and the kernel's own errors at
 * the next synchronising call.
 */
#define WD_PHYSICS_HOST_TABLES /* wd_physics.h's precision layouts: a spinor element's bytes */
#include <algorithm>
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>
#include <vector>

#include "cuda_rt.h"
#include "wd_core.h"
#include "wd_operator.h"
#include "wd_operator_cuda.h"

/* the generated registry's launchers over a range of output sites
 * (templates/wd_registry_cuda.cu.j2), indexed like wd_cuda_launchers */
typedef cudaError_t (*wd_cuda_range_launcher)(const wd_dslash_args *a, int block,
                                               cudaStream_t stream, int cb0, int cb1);
extern "C" const wd_cuda_range_launcher wd_cuda_range_launchers[];

#define CHECK(call)                                                                    \
    do {                                                                               \
        cudaError_t err_ = (call);                                                     \
        if (err_ != cudaSuccess)                                                       \
            return wd_fail(WD_ERR_CUDA, "%s failed: %s (%s:%d)", #call,                \
                           cudaGetErrorString(err_), __FILE__, __LINE__);              \
    } while (0)

static cudaStream_t stream_;
static int stream_ready_, stream_device_;

static wd_status stream(cudaStream_t *s)
{
    if (!stream_ready_) {
        CHECK(cudaGetDevice(&stream_device_));
        CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
        stream_ready_ = 1;
    }
    *s = stream_;
    return WD_OK;
}

extern "C" wd_status wd_cuda_set_device(int dev, int nlocal)
{
    int n = 0;
    CHECK(cudaGetDeviceCount(&n));
    if (n < nlocal)
        return wd_fail(WD_ERR_NO_DEVICE, "%d processes on this node but %d GPU(s): a process "
                       "grid needs one GPU per process", nlocal, n);
    if (stream_ready_ && stream_device_ != dev)
        return wd_fail(WD_ERR_INVALID, "this process already runs on GPU %d and cannot move to "
                       "GPU %d, its GPU as rank %d of its node: choose the device "
                       "(wd_backend_cuda_select) before any other CUDA work", stream_device_, dev,
                       dev);
    CHECK(cudaSetDevice(dev));
    return WD_OK;
}

extern "C" int wd_cuda_available(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n > 0;
}

extern "C" wd_status wd_cuda_device_info(wd_cuda_info *info)
{
    int dev = 0;
    cudaDeviceProp p;
    CHECK(cudaGetDevice(&dev));
    CHECK(cudaGetDeviceProperties(&p, dev));
    snprintf(info->name, sizeof info->name, "%s", p.name);
    CHECK(cudaMemGetInfo(&info->free_bytes, &info->total_bytes));
    info->sm_count = p.multiProcessorCount;
    info->l2_bytes = p.l2CacheSize;
    info->cc_major = p.major;
    info->cc_minor = p.minor;
    info->max_threads_per_block = p.maxThreadsPerBlock;
    return WD_OK;
}

extern "C" wd_status wd_cuda_malloc(void **p, size_t bytes, const char *what)
{
    size_t free_b = 0, total_b = 0;
    *p = NULL;
    CHECK(cudaMemGetInfo(&free_b, &total_b));
    if (bytes > free_b)
        return wd_fail(WD_ERR_NOMEM, "%s needs %.3f GiB of GPU memory; %.3f GiB of %.3f GiB are free",
                       what, bytes / 1073741824.0, free_b / 1073741824.0, total_b / 1073741824.0);
    cudaError_t err = cudaMalloc(p, bytes ? bytes : 1);
    if (err != cudaSuccess) {
        *p = NULL;
        cudaGetLastError();
        return wd_fail(err == cudaErrorMemoryAllocation ? WD_ERR_NOMEM : WD_ERR_CUDA,
                       "cudaMalloc of %zu bytes for %s failed: %s", bytes, what,
                       cudaGetErrorString(err));
    }
    return WD_OK;
}

extern "C" void wd_cuda_free(void *p)
{
    if (p)
        cudaFree(p);
}

extern "C" wd_status wd_cuda_h2d(void *dst, const void *src, size_t bytes)
{
    cudaStream_t s = 0;
    wd_status st = stream(&s);
    if (st != WD_OK)
        return st;
    CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s));
    CHECK(cudaStreamSynchronize(s));
    return WD_OK;
}

extern "C" wd_status wd_cuda_d2h(void *dst, const void *src, size_t bytes)
{
    cudaStream_t s = 0;
    wd_status st = stream(&s);
    if (st != WD_OK)
        return st;
    CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    return WD_OK;
}

extern "C" wd_status wd_cuda_memset(void *dst, int value, size_t bytes)
{
    cudaStream_t s = 0;
    wd_status st = stream(&s);
    if (st != WD_OK)
        return st;
    CHECK(cudaMemsetAsync(dst, value, bytes, s));
    CHECK(cudaStreamSynchronize(s));
    return WD_OK;
}

extern "C" wd_status wd_cuda_h2d_rows(void *dst, const void *src, size_t pitch, size_t width,
                                     size_t rows)
{
    cudaStream_t s = 0;
    wd_status st = stream(&s);
    if (st != WD_OK)
        return st;
    CHECK(cudaMemcpy2DAsync(dst, pitch, src, pitch, width, rows, cudaMemcpyHostToDevice, s));
    CHECK(cudaStreamSynchronize(s));
    return WD_OK;
}

extern "C" wd_status wd_cuda_d2h_rows(void *dst, const void *src, size_t pitch, size_t width,
                                     size_t rows)
{
    cudaStream_t s = 0;
    wd_status st = stream(&s);
    if (st != WD_OK)
        return st;
    CHECK(cudaMemcpy2DAsync(dst, pitch, src, pitch, width, rows, cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    return WD_OK;
}

/* The two events of the staged copies below (made at first use). */
static cudaEvent_t staged_ev[2];

static wd_status staged_events(void)
{
    for (int k = 0; k < 2; ++k)
        if (!staged_ev[k])
            CHECK(cudaEventCreateWithFlags(&staged_ev[k], cudaEventDisableTiming));
    return WD_OK;
}

/* a failure inside a staged copy: wait for what is in flight (it may still
 * read or write the pinned chunks) and report the first error */
static wd_status staged_fail(cudaStream_t s, cudaError_t err, const char *what)
{
    cudaStreamSynchronize(s);
    cudaGetLastError();
    return wd_fail(WD_ERR_CUDA, "%s failed: %s", what, cudaGetErrorString(err));
}

extern "C" wd_status wd_cuda_h2d_staged(void *dst, const void *src, size_t bytes, void *pinned,
                                        size_t chunk, wd_copy_fn copy)
{
    cudaStream_t s = 0;
    wd_status st = stream(&s);
    if (st == WD_OK)
        st = staged_events();
    if (st != WD_OK)
        return st;
    for (size_t off = 0, k = 0; off < bytes; off += chunk, ++k) {
        const size_t n = bytes - off < chunk ? bytes - off : chunk;
        char *buf = (char *)pinned + (k & 1) * chunk;
        cudaError_t err = cudaSuccess;
        /* the DMA that last read this chunk (two chunks back) must be done */
        if (k >= 2 && (err = cudaEventSynchronize(staged_ev[k & 1])) != cudaSuccess)
            return staged_fail(s, err, "cudaEventSynchronize (staged host to device copy)");
        copy(buf, (const char *)src + off, n);
        if ((err = cudaMemcpyAsync((char *)dst + off, buf, n, cudaMemcpyHostToDevice, s)) !=
                cudaSuccess ||
            (err = cudaEventRecord(staged_ev[k & 1], s)) != cudaSuccess)
            return staged_fail(s, err, "cudaMemcpyAsync (staged host to device copy)");
    }
    CHECK(cudaStreamSynchronize(s));
    return WD_OK;
}

extern "C" wd_status wd_cuda_d2h_staged(void *dst, const void *src, size_t bytes, void *pinned,
                                        size_t chunk, wd_copy_fn copy)
{
    cudaStream_t s = 0;
    wd_status st = stream(&s);
    if (st == WD_OK)
        st = staged_events();
    if (st != WD_OK)
        return st;
    const size_t chunks = (bytes + chunk - 1) / chunk;
    cudaError_t err = cudaSuccess;
    /* chunk k arrives in pinned half k & 1; chunk k + 2 is requested into
     * that half once chunk k has been copied out */
    for (size_t k = 0; k < chunks + 2; ++k) {
        if (k >= 2) {
            const size_t j = k - 2, off = j * chunk;
            if ((err = cudaEventSynchronize(staged_ev[j & 1])) != cudaSuccess)
                return staged_fail(s, err, "cudaEventSynchronize (staged device to host copy)");
            copy((char *)dst + off, (char *)pinned + (j & 1) * chunk,
                 bytes - off < chunk ? bytes - off : chunk);
        }
        if (k < chunks) {
            const size_t off = k * chunk, n = bytes - off < chunk ? bytes - off : chunk;
            if ((err = cudaMemcpyAsync((char *)pinned + (k & 1) * chunk, (const char *)src + off, n,
                                       cudaMemcpyDeviceToHost, s)) != cudaSuccess ||
                (err = cudaEventRecord(staged_ev[k & 1], s)) != cudaSuccess)
                return staged_fail(s, err, "cudaMemcpyAsync (staged device to host copy)");
        }
    }
    return WD_OK;
}

/* the variant's kernel, or its reducing kernel where a->red_partial is set
 * (wd_operator_cuda.h) */
static wd_status launch(int index, const wd_dslash_args *a, int block, cudaStream_t s)
{
    if (index < 0 || index >= wd_cuda_launcher_count)
        return wd_fail(WD_ERR_INVALID, "variant index %d: this build has %d CUDA variants", index,
                       wd_cuda_launcher_count);
    const wd_cuda_launcher run = a->red_partial ? wd_cuda_reduce_launchers[index]
                                                : wd_cuda_launchers[index];
    if (!run)
        return wd_fail(WD_ERR_INTERNAL, "%s has no reducing kernel", wd_variants[index].name);
    cudaError_t err = run(a, block, s);
    if (err != cudaSuccess)
        return wd_fail(WD_ERR_CUDA, "launch of %s%s (block %d, %d sites) failed: %s",
                       wd_variants[index].name, a->red_partial ? "'s reducing kernel" : "", block,
                       a->volume_cb, cudaGetErrorString(err));
    return WD_OK;
}

/* a multi-RHS launch over a->groups groups as launches of per_launch
 * groups each (a divisor of a->groups), in, out and x (and their norms)
 * advanced by per_launch groups a launch: the same sites, kernels and
 * arithmetic per right-hand side, so the same bits as one launch */
static wd_status launch_split(int index, const wd_dslash_args *a, int block, int per_launch,
                              cudaStream_t s)
{
    const int groups = a->groups > 1 ? a->groups : 1;
    if (per_launch >= groups)
        return launch(index, a, block, s);
    if (per_launch < 1 || groups % per_launch)
        return wd_fail(WD_ERR_INTERNAL, "%s: %d groups a launch do not divide %d",
                       wd_variants[index].name, per_launch, groups);
    /* a spinor element's bytes, from the manifest's precision layouts */
    const int p = wd_variants[index].precision;
    size_t eb = 0;
    for (const wd_precision_layout &l : wd_precision_layouts)
        if (l.precision == p)
            eb = (size_t)l.spinor_width * (size_t)p;
    if (!eb)
        return wd_fail(WD_ERR_INTERNAL, "%s: no precision layout of %d bytes",
                       wd_variants[index].name, p);
    const int rhs = per_launch * wd_variants[index].nrhs;  /* right-hand sides a launch */
    wd_dslash_args b = *a;
    b.groups = per_launch;
    wd_status st = WD_OK;
    for (int q = 0; q < groups / per_launch && st == WD_OK; ++q) {
        const size_t off = (size_t)q * rhs * (size_t)a->rhs_stride * eb;
        const size_t noff = (size_t)q * rhs * (size_t)a->rhs_norm_stride;
        b.out = (char *)a->out + off;
        b.in = (const char *)a->in + off;
        b.x = a->x ? (const char *)a->x + off : NULL;
        b.out_norm = a->out_norm ? a->out_norm + noff : NULL;
        b.in_norm = a->in_norm ? a->in_norm + noff : NULL;
        b.x_norm = a->x_norm ? a->x_norm + noff : NULL;
        st = launch(index, &b, block, s);
    }
    return st;
}

extern "C" wd_status wd_cuda_dslash_split_async(int index, const wd_dslash_args *a, int block,
                                               int per_launch)
{
    cudaStream_t s = 0;
    wd_status st = stream(&s);
    return st == WD_OK ? launch_split(index, a, block, per_launch, s) : st;
}

extern "C" wd_status wd_cuda_dslash_range_async(int index, const wd_dslash_args *a, int block,
                                               int cb0, int cb1, void *stream_or_null)
{
    cudaStream_t s = (cudaStream_t)stream_or_null;
    wd_status st = s ? WD_OK : stream(&s);
    if (st != WD_OK)
        return st;
    if (index < 0 || index >= wd_cuda_launcher_count || cb0 < 0 || cb1 > a->volume_cb)
        return wd_fail(WD_ERR_INVALID, "variant index %d, sites [%d, %d): this build has %d CUDA "
                       "variants, the lattice %d sites", index, cb0, cb1, wd_cuda_launcher_count,
                       a->volume_cb);
    cudaError_t err = wd_cuda_range_launchers[index](a, block, s, cb0, cb1);
    if (err != cudaSuccess)
        return wd_fail(WD_ERR_CUDA, "launch of %s (block %d, sites [%d, %d)) failed: %s",
                       wd_variants[index].name, block, cb0, cb1, cudaGetErrorString(err));
    return WD_OK;
}

extern "C" wd_status wd_cuda_dslash_async(int index, const wd_dslash_args *a, int block)
{
    cudaStream_t s = 0;
    wd_status st = stream(&s);
    return st == WD_OK ? launch(index, a, block, s) : st;
}

extern "C" wd_status wd_cuda_dslash(int index, const wd_dslash_args *a, int block)
{
    cudaStream_t s = 0;
    wd_status st = stream(&s);
    if (st == WD_OK)
        st = launch(index, a, block, s);
    if (st != WD_OK)
        return st;
    cudaError_t err = cudaStreamSynchronize(s);
    if (err != cudaSuccess)
        return wd_fail(WD_ERR_CUDA, "%s failed while running: %s", wd_variants[index].name,
                       cudaGetErrorString(err));
    return WD_OK;
}

extern "C" wd_status wd_cuda_time_dslash(int index, const wd_dslash_args *a, int block, int reps,
                                         double *median_us)
{
    return wd_cuda_time_split(index, a, block, a->groups > 1 ? a->groups : 1, reps, median_us);
}

extern "C" wd_status wd_cuda_time_split(int index, const wd_dslash_args *a, int block,
                                        int per_launch, int reps, double *median_us)
{
    cudaStream_t s = 0;
    wd_status st = stream(&s);
    if (st != WD_OK)
        return st;
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    std::vector<double> t;
    for (int w = 0; w < 2 && st == WD_OK; ++w)
        st = launch_split(index, a, block, per_launch, s);
    for (int r = 0; r < reps && st == WD_OK; ++r) {
        float ms = 0;
        cudaEventRecord(e0, s);
        st = launch_split(index, a, block, per_launch, s);
        cudaEventRecord(e1, s);
        if (st == WD_OK) {
            cudaError_t err = cudaEventSynchronize(e1);
            if (err == cudaSuccess)
                err = cudaEventElapsedTime(&ms, e0, e1);
            if (err != cudaSuccess)
                st = wd_fail(WD_ERR_CUDA, "timing %s: %s", wd_variants[index].name,
                             cudaGetErrorString(err));
        }
        t.push_back(1e3 * ms);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    if (st != WD_OK)
        return st;
    std::sort(t.begin(), t.end());
    *median_us = t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]);
    return WD_OK;
}

extern "C" wd_status wd_cuda_copy_gbps(size_t bytes, int reps, double *gbps)
{
    void *a = NULL, *b = NULL;
    wd_status st = wd_cuda_malloc(&a, bytes, "the copy-bandwidth buffer");
    if (st == WD_OK)
        st = wd_cuda_malloc(&b, bytes, "the copy-bandwidth buffer");
    if (st == WD_OK)
        st = wd_cuda_memset(a, 0x5a, bytes);
    cudaStream_t s = 0;
    if (st == WD_OK)
        st = stream(&s);
    std::vector<double> t;
    cudaEvent_t e0, e1;
    if (st == WD_OK && (cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess))
        st = wd_fail(WD_ERR_CUDA, "cudaEventCreate failed");
    for (int r = -2; r < reps && st == WD_OK; ++r) {
        float ms = 0;
        cudaEventRecord(e0, s);
        cudaError_t err = cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s);
        cudaEventRecord(e1, s);
        if (err == cudaSuccess)
            err = cudaEventSynchronize(e1);
        if (err == cudaSuccess)
            err = cudaEventElapsedTime(&ms, e0, e1);
        if (err != cudaSuccess)
            st = wd_fail(WD_ERR_CUDA, "device copy: %s", cudaGetErrorString(err));
        if (r >= 0)
            t.push_back(ms);
    }
    if (st == WD_OK) {
        std::sort(t.begin(), t.end());
        *gbps = 2.0 * bytes / (t[t.size() / 2] * 1e-3) / 1e9;
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
    }
    wd_cuda_free(a);
    wd_cuda_free(b);
    return st;
}

extern "C" wd_status wd_cuda_sync(void)
{
    CHECK(cudaDeviceSynchronize());
    return WD_OK;
}

extern "C" void *wd_cuda_stream(void)
{
    cudaStream_t s = 0;
    if (stream(&s) != WD_OK)
        return NULL;
    return (void *)s;
}
