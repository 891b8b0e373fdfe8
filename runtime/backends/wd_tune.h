/*
 * wd_tune.h: the GPU autotuner and its cache.
 *
 * For each (GPU, build, variant, volume, aux) the tuner times every candidate
 * launch configuration (block sizes 32..1024 in steps of 32) with CUDA events
 * and keeps the fastest.  Results persist in a versioned tab-separated file:
 *
 *   #wdirac-tunecache <TAB> 1 <TAB> <build id>
 *   gpu <TAB> build <TAB> variant <TAB> volume <TAB> aux <TAB> block <TAB> us
 *
 * A cache written by another build (its build id differs: any change of the
 * generated CUDA sources or the target architecture) is refused: it is not
 * read, and before the first save it is moved aside to <path>.old, so
 * nothing is lost.  Not thread-safe: one tuner per process.
 *
 * The externally accessible functions are
 *   wd_tune_set_cache    where the cache lives ("" keeps it in memory only);
 *                        default $WDIRAC_TUNE_CACHE, else
 *                        $HOME/.cache/wdirac/tunecache.tsv
 *   wd_tune_cache_note   what happened on load (refused, unreadable), or ""
 *   wd_tune_dslash       the block size for a variant at these arguments,
 *                        from the cache or by timing the candidates
 *   wd_tune_build_id     this build's id
 *   wd_tune_groups       a multi-RHS launch over several groups of
 *                        right-hand sides: how many groups a launch (a
 *                        divisor; fewer launches of more groups, or more of
 *                        fewer, whichever times fastest: run58, single
 *                        `_n4` alone beat one launch over 3 groups) and the
 *                        block size, cached per variant, volume and groups
 *   wd_tune_halo_find    the halo route cached for a process grid's kind of
 *                        exchange (aux names it: grid, precision,
 *                        right-hand sides) at this local volume, or -1
 *   wd_tune_halo_save    cache the route chosen (the backend times the
 *                        routes, collectively: backend_cuda.cu's tune_route)
 */
#ifndef WDIRAC_TUNE_H
#define WDIRAC_TUNE_H

#include "wd_kernel.h"
#include "wdirac.h"

#ifdef __cplusplus
extern "C" {
#endif

wd_status wd_tune_set_cache(const char *path);
const char *wd_tune_cache_note(void);
wd_status wd_tune_dslash(int variant, const wd_dslash_args *a, int pad, int *block);
wd_status wd_tune_groups(int variant, const wd_dslash_args *a, int pad, int *per_launch,
                         int *block);
const char *wd_tune_build_id(void);
wd_status wd_tune_halo_find(const int dims[4], const char *aux, int *route);
wd_status wd_tune_halo_save(const int dims[4], const char *aux, int route, double us);

#ifdef __cplusplus
}
#endif

#endif
