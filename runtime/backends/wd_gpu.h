/*
 * wd_gpu.h: the GPU backend's device fields and Dslash, over cuda_rt.h.
 *
 * Fields live on the device in exactly the packed layout of wd_layout.h:
 * they are packed on the host (precision, reconstruction, basis change) and
 * copied over, so the CPU backend's proofs carry over to the GPU byte for
 * byte.
 *
 * The externally accessible functions are
 *   wd_gpu_spinor_alloc / _free    a one-parity spinor field on the device
 *   wd_gpu_spinor_upload           pack host sites of one parity and copy
 *   wd_gpu_spinor_download         copy back and unpack into host sites
 *   wd_gpu_spinor_raw_up/down      copy a packed host buffer (tests poison with it)
 *   wd_gpu_gauge_upload / _free    pack and copy a gauge field
 *   wd_gpu_dslash_args             kernel arguments for out = D in (+ x)
 *   wd_gpu_dslash                  run a built variant with its tuned block size
 *   wd_gpu_schur                   the even-odd operator on the device:
 *                                  out_e = in_e - kappa^2 D_eo D_oe in_e (or its
 *                                  dagger), two launches through tmp (odd)
 * Out-of-memory is reported before anything is allocated or overwritten.
 */
#ifndef WDIRAC_GPU_H
#define WDIRAC_GPU_H

#include <complex.h>

#include "wd_layout.h"

typedef struct wd_gpu_spinor {
    wd_spinor_layout l;
    void *data;
    float *norm;    /* half precision only */
} wd_gpu_spinor;

typedef struct wd_gpu_gauge {
    wd_gauge_layout l;
    void *data;
} wd_gpu_gauge;

wd_status wd_gpu_spinor_alloc(wd_gpu_spinor *f, const int dims[4], int precision, int pad);
void wd_gpu_spinor_free(wd_gpu_spinor *f);
wd_status wd_gpu_spinor_upload(wd_gpu_spinor *f, const double complex *host, const int dims[4],
                               int parity);
wd_status wd_gpu_spinor_download(const wd_gpu_spinor *f, double complex *host,
                                 const int dims[4], int parity);
wd_status wd_gpu_spinor_raw_up(wd_gpu_spinor *f, const void *data, const float *norm);
wd_status wd_gpu_spinor_raw_down(const wd_gpu_spinor *f, void *data, float *norm);

wd_status wd_gpu_gauge_upload(wd_gpu_gauge *g, const double complex *u, const int dims[4],
                              int precision, int recon, int gauge_fix, int pad);
void wd_gpu_gauge_free(wd_gpu_gauge *g);

void wd_gpu_dslash_args(wd_dslash_args *a, wd_gpu_spinor *out, const wd_gpu_spinor *in,
                        const wd_gpu_spinor *x, double xa, const wd_gpu_gauge *g,
                        const int dims[4], int parity, int tbc);
/* block 0: the tuned block size (tuning on first use); else that block */
wd_status wd_gpu_dslash(int variant, const wd_dslash_args *a, int pad, int block);
/* out, in (even sites) and tmp (odd sites) of one precision; gauge g's
 * precision, recon and gauge fixing pick the variants */
wd_status wd_gpu_schur(wd_gpu_spinor *out, const wd_gpu_spinor *in, wd_gpu_spinor *tmp,
                       const wd_gpu_gauge *g, const int dims[4], double kappa, int dagger,
                       int tbc);

#endif
