/*
 * wd_layout.h: the internal field layouts of wd_kernel.h and the packing of
 * host fields (DESIGN.md order, DeGrand-Rossi basis, complex double) into
 * them and back.  The packed buffers are byte-identical on both backends:
 * the CPU backend runs on them, the GPU backend copies them to the device.
 *
 * The externally accessible functions are
 *   wd_spinor_layout_make  sizes and strides of a one-parity spinor field
 *   wd_gauge_layout_make   sizes, block offsets and strides of a gauge field
 *   wd_pack_spinor         host sites of one parity -> internal basis, precision
 *   wd_unpack_spinor       the inverse (writes only that parity's sites)
 *   wd_pack_gauge          host links -> stored reals of a reconstruction
 *                          (refusing links recon 8 cannot represent)
 *   wd_dslash_args_set     fill kernel arguments from the two layouts
 * Notes: pack/unpack are pure host loops (OpenMP over sites) and never
 * touch the padding between sub-arrays, so a poisoned pad stays poisoned.
 */
#ifndef WDIRAC_LAYOUT_H
#define WDIRAC_LAYOUT_H

#include <complex.h>
#include <stddef.h>

/* C11's CMPLX, missing from clang 14 with glibc (the fuzz build) */
#ifndef CMPLX
#define CMPLX(re, im) ((double complex)((double)(re) + _Complex_I * (double)(im)))
#endif

#include "wd_kernel.h"
#include "wdirac.h"

typedef struct wd_spinor_layout {
    int precision;      /* bytes per stored real */
    int width;          /* reals per element */
    int elements;       /* elements per site */
    int volume_cb;      /* sites of one parity */
    int stride;         /* elements between sub-arrays: volume_cb + pad */
    size_t bytes;       /* the whole field, padding included */
    size_t norm_bytes;  /* half precision: one float per site, else 0 */
} wd_spinor_layout;

#define WD_LAYOUT_MAX_ELEMENTS 16

typedef struct wd_gauge_layout {
    int precision;
    int recon;
    int gauge_fix;
    int elements;       /* elements per link */
    int width[WD_LAYOUT_MAX_ELEMENTS];  /* reals in element k */
    int roff[WD_LAYOUT_MAX_ELEMENTS];   /* element k's sub-array starts roff[k] * gstride reals in */
    long goff[4][2];    /* first real of the (mu, parity) block, 64-byte aligned */
    int gstride[4];     /* sites between sub-arrays: sites of the block + pad */
    int tslice_cb0;     /* gauge_fix: first checkerboard index of t = T-1 */
    size_t bytes;
} wd_gauge_layout;

wd_status wd_spinor_layout_make(wd_spinor_layout *l, const int dims[4],
                                int precision, int pad);
wd_status wd_gauge_layout_make(wd_gauge_layout *l, const int dims[4],
                               int precision, int recon, int gauge_fix, int pad);

void wd_pack_spinor(const wd_spinor_layout *l, void *dst, float *norm,
                    const double complex *host, const int dims[4], int parity);
void wd_unpack_spinor(const wd_spinor_layout *l, double complex *host,
                      const void *src, const float *norm, const int dims[4],
                      int parity);
/* WD_ERR_INVALID, dst untouched, when recon 8 cannot represent a link
 * it would store (|a2|^2 + |a3|^2 below 1e-12: the unit matrix, say) */
wd_status wd_pack_gauge(const wd_gauge_layout *l, void *dst,
                        const double complex *u, const int dims[4]);

void wd_dslash_args_set(wd_dslash_args *a, const wd_spinor_layout *s,
                        const wd_gauge_layout *g, const int dims[4],
                        int parity, int tbc);

/* per-precision instances of layout_tmpl.c */
#define WD_DECL_LAYOUT(P)                                                     \
    void wd_pack_spinor_##P(const wd_spinor_layout *l, void *dst, float *norm, \
                            const double complex *host, const int dims[4],    \
                            int parity);                                      \
    void wd_unpack_spinor_##P(const wd_spinor_layout *l, double complex *host, \
                              const void *src, const float *norm,             \
                              const int dims[4], int parity);                 \
    void wd_pack_gauge_##P(const wd_gauge_layout *l, void *dst,               \
                           const double complex *u, const int dims[4]);
WD_DECL_LAYOUT(d)
WD_DECL_LAYOUT(s)
WD_DECL_LAYOUT(h)

#endif
