/*
 * backend_cpu.h: what the CPU backend (backend_cpu.c) shares with its
 * per-precision BLAS loops (blas_cpu_tmpl.c, compiled with -DWD_PREC=d|s|h).
 *
 * The externally accessible definitions are
 *   wd_cpu_ctx           the backend's private state: the reduction scratch
 *   wd_blas_ops_P        the BLAS entries of a wd_backend_ops (the others
 *                        NULL) for operands of precision P = d, s, h
 *   wd_blas_load_P       one site of a field, as 24 doubles
 *   wd_blas_store_P      ... and back (half: with a fresh site norm)
 */
#ifndef WDIRAC_BACKEND_CPU_H
#define WDIRAC_BACKEND_CPU_H

#include "wd_backend.h"

/* the doubles one reduction block sums: the most an operation reduces
 * (multi_cdot's two a field) */
#define WD_CPU_REDUCE_RES (2 * WD_BLAS_MULTI)

typedef struct wd_cpu_ctx {
    double *scratch;    /* WD_CPU_REDUCE_RES doubles per reduction block */
    void *halo;         /* Dslash halo buffers: per partitioned mu two faces out, two in */
    size_t halo_bytes;
} wd_cpu_ctx;

#define WD_DECL_BLAS(P)                                                         \
    extern const wd_backend_ops wd_blas_ops_##P;                                \
    void wd_blas_load_##P(const wd_field *f, int cb, double v[24]);             \
    void wd_blas_store_##P(wd_field *f, int cb, const double v[24]);
WD_DECL_BLAS(d)
WD_DECL_BLAS(s)
WD_DECL_BLAS(h)

#endif
