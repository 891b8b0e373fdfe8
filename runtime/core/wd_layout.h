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
 *   wd_halo_make           the ghost faces of a rank's local block
 *   wd_spinor_layout_make_halo / wd_gauge_layout_make_halo   the layouts
 *                          with room for them (the plain makers: none)
 *   wd_pack_gauge_halo     wd_pack_gauge plus the backward ghost links
 *   wd_face_gather         one face's sites of a packed spinor into a
 *                          contiguous buffer (what a neighbour needs)
 *   wd_clover_layout_make  sizes and strides of a one-parity clover field
 *   wd_pack_clover         host clover blocks of one parity -> stored reals
 *                          (times WD_CLOVER_SCALE; half: a norm per block)
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

/* local: the local extents (even); part NULL: nothing partitioned, and
 * t_origin 0, global_T local[3] whatever is passed. */
void wd_halo_make(wd_halo *h, const int local[4], const int part[4], int t_origin,
                  int global_T);

typedef struct wd_spinor_layout {
    int precision;      /* bytes per stored real */
    int width;          /* reals per element */
    int elements;       /* elements per site */
    int volume_cb;      /* sites of one parity */
    int stride;         /* elements between sub-arrays: volume_cb + ghost sites + pad */
    size_t bytes;       /* the whole field, ghosts and padding included */
    size_t norm_bytes;  /* half precision: one float per site and ghost site, else 0 */
    wd_halo halo;
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
    int tslice_bwd;     /* gauge_fix: the same for backward hops (wd_dslash_args) */
    size_t bytes;
    wd_halo halo;
} wd_gauge_layout;

/*
 * A clover field of one parity: the 72 reals of a site's two chiral 6x6
 * blocks (wd_physics.h: WD_CLOVER_*) in elements of `width` reals, element
 * k of site cb at k * stride + cb; half precision 16-bit fixed point with
 * one float per block (norm[2 cb + b], the block's max |real|).  Local: no
 * ghost sites.
 */
typedef struct wd_clover_layout {
    int precision;
    int width;          /* reals per element: 2 (double2), 4 (float4, short4) */
    int elements;       /* WD_CLOVER_SITE_REALS / width */
    int volume_cb;
    int stride;         /* volume_cb + pad */
    size_t bytes;
    size_t norm_bytes;  /* half: two floats a site, else 0 */
} wd_clover_layout;

wd_status wd_spinor_layout_make(wd_spinor_layout *l, const int dims[4],
                                int precision, int pad);
wd_status wd_clover_layout_make(wd_clover_layout *l, const int dims[4], int precision,
                                int pad);
/* blocks: host clover blocks [site][WD_CLOVER_SITE_REALS] of the local
 * block in host site order, DeGrand-Rossi chiral blocks in wd_physics.h's
 * stored order; the sites of `parity` are packed times WD_CLOVER_SCALE. */
void wd_pack_clover(const wd_clover_layout *l, void *dst, float *norm, const double *blocks,
                    const int dims[4], int parity);
wd_status wd_gauge_layout_make(wd_gauge_layout *l, const int dims[4],
                               int precision, int recon, int gauge_fix, int pad);
/* halo NULL: as the plain makers.  dims are the local extents. */
wd_status wd_spinor_layout_make_halo(wd_spinor_layout *l, const int dims[4],
                                     const wd_halo *halo, int precision, int pad);
wd_status wd_gauge_layout_make_halo(wd_gauge_layout *l, const int dims[4],
                                    const wd_halo *halo, int precision, int recon,
                                    int gauge_fix, int pad);

void wd_pack_spinor(const wd_spinor_layout *l, void *dst, float *norm,
                    const double complex *host, const int dims[4], int parity);
void wd_unpack_spinor(const wd_spinor_layout *l, double complex *host,
                      const void *src, const float *norm, const int dims[4],
                      int parity);
/* WD_ERR_INVALID, dst untouched, when recon 8 cannot represent a link
 * it would store (|a2|^2 + |a3|^2 below 1e-12: the unit matrix, say) */
wd_status wd_pack_gauge(const wd_gauge_layout *l, void *dst,
                        const double complex *u, const int dims[4]);

/* ghost[mu] (NULL where mu is not partitioned): the links U_mu of the
 * backward neighbour's last mu-slice, host order complex double [f][3][3]
 * for the 2 face_cb face sites in lexicographic order of the other three
 * coordinates; packed into the backward ghost of the (mu, parity) blocks
 * (gauge fixed, mu = 3: after the last-slice links). */
wd_status wd_pack_gauge_halo(const wd_gauge_layout *l, void *dst, const double complex *u,
                             const double complex *const ghost[4], const int dims[4]);

/* The face_cb sites of parity `parity` at local x_mu = 0 (last = 0) or
 * x_mu = L_mu - 1 (last = 1), in face order: buf holds element k of face
 * site f at k * face_cb + f, then (half precision) the face_cb norms.
 * wd_face_bytes is that buffer's size. */
size_t wd_face_bytes(const wd_spinor_layout *l, int mu);
void wd_face_gather(const wd_spinor_layout *l, const void *field, const float *norm,
                    const int dims[4], int mu, int last, int parity, void *buf);
/* c = the coordinates of checkerboard site cb of parity `parity` (the
 * decoding of wd_kernel.h's cb = (x + X*(y + Y*(z + Z*t))) / 2, as
 * wd_site_neighbours does it) */
static inline void wd_cb_coords(const int dims[4], int parity, int cb, int c[4])
{
    const int xh = dims[0] / 2;
    int r = cb;
    const int x1 = r % xh;
    r /= xh;
    c[1] = r % dims[1];
    r /= dims[1];
    c[2] = r % dims[2];
    c[3] = r / dims[2];
    c[0] = 2 * x1 + ((c[1] + c[2] + c[3] + parity) & 1);
}

/* the local checkerboard index of face site f of parity `parity` at x_mu = c */
int wd_face_site(const int dims[4], int mu, int c, int parity, int f);
/* The V/2 output sites of parity `parity` of a local block whose
 * dimensions mu with part[mu] set read ghosts, in order: the interior
 * sites (0 < x_mu < L_mu - 1 for every such mu: no hop reads a ghost)
 * ascending, then the boundary sites ascending.  Returns the interior's
 * count. */
int wd_site_order(const int dims[4], const int part[4], int parity, int *order);

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
                           const double complex *u,                           \
                           const double complex *const ghost[4],              \
                           const int dims[4]);                                \
    void wd_pack_clover_##P(const wd_clover_layout *l, void *dst, float *norm, \
                            const double *blocks, const int dims[4], int parity);
WD_DECL_LAYOUT(d)
WD_DECL_LAYOUT(s)
WD_DECL_LAYOUT(h)

#endif
