/*
 * wd_kernel.h: what every generated Dslash body needs besides its own
 * arithmetic, for both backends (gcc with OpenMP, nvcc).
 *
 * The externally accessible definitions are
 *   WD_INLINE            force-inlined function usable on host and device
 *   double2 ... short4   CUDA's vector element types; on the CPU, structs of
 *                        the same size and alignment, so one packed buffer
 *                        serves both backends byte for byte
 *   wd_halo              the ghost faces of a rank's local block
 *   wd_dslash_args       everything one parity application of a variant reads
 *   wd_site_neighbours   coordinates and neighbour indices of an output site
 *   wd_round_short       round to nearest for the 16-bit fixed-point store
 *   wd_s2f, wd_i2f       16-bit fixed-point value (or an integer below 2^22 in
 *                        magnitude, a sum of them) to float, exactly
 *   wd_rcp[f]            reciprocal (recon 8)
 *   wd_sincospi[f]       sin and cos of pi x (recon 8 stores phases divided by
 *                        WD_R8_PHASE_SCALE = pi, wd_physics.h: no argument
 *                        reduction, so no local memory on the GPU)
 *   WD_LOAD              load of a read-only field element (through the
 *                        non-coherent read-only path on the GPU)
 *
 * Field layout (both backends): a spinor field of one parity is
 * SPINOR_ELEMENTS arrays of vector elements, element k of checkerboard site
 * cb at k * stride + cb, stride = V/2 + pad.  A gauge field holds, for each
 * direction mu and parity p, a block of stored reals starting at real
 * goff[mu][p]; a link's elements may differ in width (generator/axes.py):
 * element k of site cb is the vector at real offset
 * goff[mu][p] + roff_k * gstride[mu] + cb * width_k, roff_k the reals of the
 * elements before it.  Gauge-fixed (gf1) fields store for mu = 3 only the
 * last time slice, indexed by cb - tslice_cb0.
 * Checkerboard index: cb = (x + X*(y + Y*(z + Z*t))) / 2.
 *
 * Domain decomposition: dims are a rank's local extents.  A hop across a
 * partitioned face (bit mu of `part`) reads the neighbour rank's site from
 * a ghost face stored after the local sites of the same sub-arrays: index
 * ghost[mu][dir] + (f >> 1), f the lexicographic index of the site's other
 * three coordinates (dir 0 = forward ghost, the forward neighbour's first
 * slice; 1 = backward ghost, its last slice).  The backward ghost of a
 * gauge block (mu, p) holds U_mu at those sites (the link a backward hop
 * needs), at the same index.  The time boundary sign and the gauge-fixed
 * last slice follow the global t = t_origin + t of extent global_T.  Local
 * extents are even, so local and global parity agree.
 *
 * Multi-RHS kernels (_n<N>, N > 1) apply the operator to N right-hand
 * sides at once: right-hand side q of in, out and x is a field of the layout
 * above starting q * rhs_stride vector elements after the first (norms
 * q * rhs_norm_stride floats after), so each keeps coalesced access.  A
 * launch may cover `groups` such sets of N, one after another in the
 * fields (right-hand sides g N .. g N + N - 1: the site function's r0); on the
 * GPU the group is the fastest part of the block index, so the groups of
 * one range of sites run together and read its links from L2 after the
 * first.
 *
 * Clover kernels (dslashcl_*, clover_*) also read the clover field of the
 * output parity at the output site (wd_layout.h, wd_clover_layout); the
 * clover_* kernels read `in` at the output site too (same parity as out).
 */
#ifndef WDIRAC_KERNEL_H
#define WDIRAC_KERNEL_H

#include <math.h>

#include "wd_physics.h"

#if defined(__CUDACC__)
#define WD_INLINE static __forceinline__ __host__ __device__
#else
#define WD_INLINE static inline __attribute__((always_inline))
typedef struct { double x, y; } __attribute__((aligned(16))) double2;
typedef struct { float x, y; } __attribute__((aligned(8))) float2;
typedef struct { float x, y, z, w; } __attribute__((aligned(16))) float4;
typedef struct { short x, y; } __attribute__((aligned(4))) short2;
typedef struct { short x, y, z, w; } __attribute__((aligned(8))) short4;
#endif

/*
 * The ghost faces of one rank's local block (wd_kernel.h, Domain
 * decomposition): for each partitioned mu a forward and a backward ghost
 * face of face_cb sites, stored after the volume_cb local sites, mu = 0..3,
 * forward before backward.  Pure geometry: comm/ fills the ghosts.
 */
typedef struct wd_halo {
    int part[4];        /* mu is partitioned */
    int face_cb[4];     /* sites of one parity on one face of mu */
    int ghost[4][2];    /* first index of mu's forward / backward ghost face (0: none) */
    int ghost_sites;    /* all ghost faces together */
    int t_origin;       /* global t of local t = 0 */
    int global_T;
} wd_halo;

typedef struct wd_dslash_args {
    void *out;              /* output spinor, parity `parity` */
    float *out_norm;        /* half precision: per-site norms of out */
    const void *in;         /* input spinor, the other parity */
    const float *in_norm;
    const void *x;          /* xpay: out = x + a D in; x has parity `parity` */
    const float *x_norm;
    const void *gauge;
    double a;               /* xpay coefficient */
    long goff[4][2];        /* gauge block offsets, in stored reals */
    int gstride[4];         /* gauge sub-array stride per direction, in sites */
    int dims[4];            /* X, Y, Z, T */
    int volume_cb;          /* V/2: output sites */
    int stride;             /* spinor element stride: V/2 + pad */
    int parity;             /* output parity, even = 0 */
    int tslice_cb0;         /* gauge fix: index of the first last-slice link, forward hops */
    int tslice_bwd;         /* ... backward hops (their ghost when T is partitioned) */
    int tbc;                /* time boundary: +1 periodic, -1 antiperiodic */
    int part;               /* bit mu: mu is partitioned, its boundary hops read ghosts */
    int ghost[4][2];        /* first index of mu's forward / backward ghost face */
    int t_origin;           /* global t of local t = 0 */
    int global_T;           /* global temporal extent */
    const void *clover;     /* clover kernels: the clover field of the output parity */
    const float *clover_norm;   /* half precision: its norms, two a site (one a block) */
    int clover_stride;      /* its element stride (wd_clover_layout) */
    long rhs_stride;        /* multi-RHS kernels (_n<N>, N > 1): vector elements from one
                             * right-hand side of in, out, x to the next */
    int rhs_norm_stride;    /* ... and floats from one's norms to the next's */
    int groups;             /* multi-RHS kernels: sets of N right-hand sides a launch
                             * covers (0 or 1: one) */
    const void *red_y;      /* reducing CUDA kernels (wd_operator_cuda.h): y of <y, out>, */
    const float *red_y_norm;    /* (NULL: |out|^2 alone), parity `parity`, and */
    double *red_partial;    /* each warp's three sums, 3 doubles a warp of 32 sites */
} wd_dslash_args;

typedef struct wd_site {
    int fwd[4];             /* checkerboard index of n + mu (other parity) */
    int bwd[4];             /* checkerboard index of n - mu (other parity) */
    int t_last;             /* n is on global t = T-1: the forward t hop wraps */
    int t_first;            /* n is on global t = 0: the backward t hop wraps */
} wd_site;

WD_INLINE void wd_site_neighbours(const wd_dslash_args *a, int cb, wd_site *s)
{
    const int X = a->dims[0], Y = a->dims[1], Z = a->dims[2], T = a->dims[3];
    const int xh = X >> 1;
    int r = cb;
    const int x1 = r % xh;
    r /= xh;
    const int y = r % Y;
    r /= Y;
    const int z = r % Z;
    const int t = r / Z;
    const int x = 2 * x1 + ((y + z + t + a->parity) & 1);
    const int c[4] = {x, y, z, t};
    const int ext[4] = {X, Y, Z, T};
    const int step[4] = {1, X, X * Y, X * Y * Z};
    const int full = x + X * (y + Y * (z + Z * t));
    for (int mu = 0; mu < 4; ++mu) {
        const int up = c[mu] == ext[mu] - 1 ? -(ext[mu] - 1) : 1;
        const int dn = c[mu] == 0 ? ext[mu] - 1 : -1;
        s->fwd[mu] = (full + up * step[mu]) >> 1;
        s->bwd[mu] = (full + dn * step[mu]) >> 1;
        if ((a->part >> mu) & 1 && (up != 1 || dn != -1)) {
            /* the site's index on the face: its mu digit removed */
            const int f = (full % step[mu] + full / (step[mu] * ext[mu]) * step[mu]) >> 1;
            if (up != 1)
                s->fwd[mu] = a->ghost[mu][0] + f;
            if (dn != -1)
                s->bwd[mu] = a->ghost[mu][1] + f;
        }
    }
    s->t_last = t + a->t_origin == a->global_T - 1;
    s->t_first = t + a->t_origin == 0;
}

#if defined(__CUDA_ARCH__)
#define WD_LOAD(p) __ldg(p)
#else
#define WD_LOAD(p) (*(p))
#endif

#if defined(__CUDA_ARCH__)
WD_INLINE void wd_sincospi(double x, double *s, double *c) { sincospi(x, s, c); }
/* float: the hardware sine/cosine (MUFU), absolute error ~2^-21 on [-pi, pi],
 * well inside the recon-8 tolerance, at a fraction of sincospif's cost */
WD_INLINE void wd_sincospif(float x, float *s, float *c) { __sincosf((float)WD_R8_PHASE_SCALE * x, s, c); }
WD_INLINE double wd_rcp(double x) { return 1.0 / x; }
WD_INLINE float wd_rcpf(float x) { return __frcp_rn(x); }
/* 16-bit fixed point <-> float without the quarter-rate I2F/F2I units:
 * 0x4B400000 is 1.5 * 2^23, so for |i| < 2^22 its bit pattern plus i is the
 * float 1.5 * 2^23 + i exactly (and the reverse after a rounding add). */
WD_INLINE float wd_i2f(int v) { return __int_as_float(0x4B400000 + v) - 12582912.0f; }
WD_INLINE float wd_s2f(short v) { return wd_i2f(v); }
WD_INLINE short wd_round_short(float v)
{
    return (short)(__float_as_int(v + 12582912.0f) - 0x4B400000);
}
#else
WD_INLINE void wd_sincospi(double x, double *s, double *c)
{
    *s = sin(WD_R8_PHASE_SCALE * x);
    *c = cos(WD_R8_PHASE_SCALE * x);
}
WD_INLINE void wd_sincospif(float x, float *s, float *c)
{
    *s = (float)sin(WD_R8_PHASE_SCALE * x);
    *c = (float)cos(WD_R8_PHASE_SCALE * x);
}
WD_INLINE double wd_rcp(double x) { return 1.0 / x; }
WD_INLINE float wd_rcpf(float x) { return 1.0f / x; }
WD_INLINE float wd_i2f(int v) { return (float)v; }
WD_INLINE float wd_s2f(short v) { return (float)v; }
WD_INLINE short wd_round_short(float v) { return (short)lrintf(v); }
#endif

#endif
