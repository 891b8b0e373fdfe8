/*
 * cuda_rt.h: the thin CUDA layer, a C interface with plain C types so that
 * the host C library (gpu_fields.c) never includes CUDA headers and builds the same
 * with and without nvcc.  cuda_rt.cu implements it; cuda_rt_none.c, linked
 * when the build has no CUDA, returns WD_ERR_NO_DEVICE from every call.
 *
 * The externally accessible functions are
 *   wd_cuda_available   1 when a CUDA device can be used, with its name
 *   wd_cuda_device_info name, memory, SM count, L2 size, clocks
 *   wd_cuda_malloc/free device memory, checked against free memory first
 *   wd_cuda_h2d/d2h/memset  synchronous copies and fills
 *   wd_cuda_h2d_rows/d2h_rows  the same for `rows` rows of `width` bytes
 *                       `pitch` bytes apart on both sides (the local sites
 *                       of a field's sub-arrays, leaving ghosts and padding)
 *   wd_cuda_h2d_staged/d2h_staged  a large copy between pageable host memory
 *                       and the device through two pinned chunks: the host
 *                       side's copy of one chunk (`copy`, e.g. threaded)
 *                       overlaps the DMA of the other
 *   wd_cuda_set_device  run this process on device `dev` (a process grid:
 *                       one GPU per rank), before its first stream
 *   wd_cuda_dslash      launch built variant `index` with a block size
 *   wd_cuda_dslash_async  the same, enqueued on the stream without waiting
 *   wd_cuda_dslash_range_async  only the output sites [cb0, cb1), on the
 *                       stream or on `stream` (a cudaStream_t) if not NULL
 *   wd_cuda_dslash_split_async  a launch over several groups of right-hand
 *                       sides as launches of fewer groups each (the tuner's
 *                       choice, wd_tune_groups)
 *   wd_cuda_time_dslash median time (us) of `reps` launches, CUDA events
 *   wd_cuda_time_split  the same for split launches
 *   wd_cuda_copy_gbps   device-to-device copy bandwidth (read + write)
 *   wd_cuda_sync        wait for the device, reporting asynchronous errors
 *   wd_cuda_stream      the one stream every launch and copy goes through
 *                       (a cudaStream_t; NULL before first use fails over
 *                       to creating it)
 * Every CUDA call is checked; failures go through wd_fail with the call's
 * name and CUDA's error string.
 */
#ifndef WDIRAC_CUDA_RT_H
#define WDIRAC_CUDA_RT_H

#include <stddef.h>

#include "wd_kernel.h"
#include "wdirac.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wd_cuda_info {
    char name[256];
    size_t total_bytes, free_bytes;
    int sm_count, l2_bytes, cc_major, cc_minor;
    int max_threads_per_block;
} wd_cuda_info;

int wd_cuda_available(void);
wd_status wd_cuda_device_info(wd_cuda_info *info);
wd_status wd_cuda_malloc(void **p, size_t bytes, const char *what);
void wd_cuda_free(void *p);
wd_status wd_cuda_h2d(void *dst, const void *src, size_t bytes);
wd_status wd_cuda_d2h(void *dst, const void *src, size_t bytes);
wd_status wd_cuda_memset(void *dst, int value, size_t bytes);
wd_status wd_cuda_h2d_rows(void *dst, const void *src, size_t pitch, size_t width, size_t rows);
wd_status wd_cuda_d2h_rows(void *dst, const void *src, size_t pitch, size_t width, size_t rows);
typedef void (*wd_copy_fn)(void *dst, const void *src, size_t bytes);
/* pinned: 2 * chunk bytes of pinned host memory; returns when dst holds it all */
wd_status wd_cuda_h2d_staged(void *dst, const void *src, size_t bytes, void *pinned, size_t chunk,
                             wd_copy_fn copy);
wd_status wd_cuda_d2h_staged(void *dst, const void *src, size_t bytes, void *pinned, size_t chunk,
                             wd_copy_fn copy);
/* WD_ERR_NO_DEVICE when there are fewer than nlocal devices (ranks of one
 * node would share one); WD_ERR_INVALID when this process already made its
 * stream on another device. */
wd_status wd_cuda_set_device(int dev, int nlocal);
wd_status wd_cuda_dslash(int index, const wd_dslash_args *a, int block);
wd_status wd_cuda_dslash_async(int index, const wd_dslash_args *a, int block);
wd_status wd_cuda_dslash_range_async(int index, const wd_dslash_args *a, int block, int cb0,
                                     int cb1, void *stream);
wd_status wd_cuda_dslash_split_async(int index, const wd_dslash_args *a, int block,
                                     int per_launch);
wd_status wd_cuda_time_dslash(int index, const wd_dslash_args *a, int block, int reps,
                              double *median_us);
wd_status wd_cuda_time_split(int index, const wd_dslash_args *a, int block, int per_launch,
                             int reps, double *median_us);
wd_status wd_cuda_copy_gbps(size_t bytes, int reps, double *gbps);
wd_status wd_cuda_sync(void);
void *wd_cuda_stream(void);

#ifdef __cplusplus
}
#endif

#endif
