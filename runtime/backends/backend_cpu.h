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
 *   wd_cpu_load / wd_cpu_store   those of a field's own precision
 *   wd_cpu_accumulate_site       the accumulate entry's arithmetic on one
 *                        site (shared by the fused steps that accumulate,
 *                        so that they give its bits)
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

static inline void wd_cpu_load(const wd_field *f, int cb, double v[24])
{
    (f->precision == 8 ? wd_blas_load_d : f->precision == 4 ? wd_blas_load_s
                                                            : wd_blas_load_h)(f, cb, v);
}

static inline void wd_cpu_store(wd_field *f, int cb, const double v[24])
{
    (f->precision == 8 ? wd_blas_store_d : f->precision == 4 ? wd_blas_store_s
                                                             : wd_blas_store_h)(f, cb, v);
}

/* vz += a vx + b vy in double, vx and vy read exactly (vy zero where the
 * accumulation has no y) */
static inline void wd_cpu_accumulate_site(double vz[24], wd_complex a, const double vx[24],
                                          wd_complex b, const double vy[24])
{
    for (int i = 0; i < 24; i += 2) {
        vz[i] += a.re * vx[i] - a.im * vx[i + 1] + b.re * vy[i] - b.im * vy[i + 1];
        vz[i + 1] += a.re * vx[i + 1] + a.im * vx[i] + b.re * vy[i + 1] + b.im * vy[i];
    }
}

#endif
