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
 *   wd_ghost_src, wd_ghost_sources  a received ghost face, read in place
 *   wd_reads_received    whether a launch reads one
 *   wd_dslash_args       everything one parity application of a variant reads
 *   wd_site_neighbours   coordinates and neighbour indices of an output site
 *   wd_row, wd_row_init, wd_row_copy  the CPU loop's vector rows (CPU only)
 *   wd_round_short       round to nearest for the 16-bit fixed-point store
 *   wd_max_abs, wd_half_scale  the 16-bit store's site norm and its scale
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
 * slice; 1 = backward ghost, its last slice).  Where gsrc[mu][dir].data
 * is set, that ghost face is read instead from the buffer the exchange
 * received it in (wd_ghost_src): site j = ghost index - ghost[mu][dir] of
 * it, so no scatter into the ghost zone is needed.  The backward ghost of a
 * gauge block (mu, p) holds U_mu at those sites (the link a backward hop
 * needs), at the ghost index.  The time boundary sign and the gauge-fixed
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
#include <string.h>

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

/*
 * A received ghost face, read where it landed (wd_dslash_args.gsrc):
 * element k of the face's site j of right-hand side q is the vector element
 * data[q * rhs + k * stride + j], its half-precision norm
 * norm[q * rhs_norm + j].  data NULL: the face is in the ghost zone after
 * the local sites.
 */
typedef struct wd_ghost_src {
    const void *data;   /* right-hand side 0's face: stored elements, a row of `stride` each */
    const float *norm;  /* half precision: its per-site norms */
    int stride;         /* vector elements from one element row to the next: the face's sites */
    long rhs;           /* vector elements from one right-hand side's face to the next */
    long rhs_norm;      /* floats from one right-hand side's norms to the next */
} wd_ghost_src;

/* gsrc[0], gsrc[1]: a dimension's forward and backward ghost faces of n
 * sites read where they were received, at fwd and bwd, in the layout of
 * the backends' face buffers (`elements` rows of n vector elements of eb
 * bytes, then, where norms, the n half-precision norms), one right-hand
 * side's face rhs_bytes after the one before */
WD_INLINE void wd_ghost_sources(int n, int elements, size_t eb, int norms, const void *fwd,
                                const void *bwd, size_t rhs_bytes, wd_ghost_src gsrc[2])
{
    const void *face[2] = {fwd, bwd};
    for (int d = 0; d < 2; ++d) {
        wd_ghost_src *g = &gsrc[d];
        g->data = face[d];
        g->norm = norms ? (const float *)((const char *)face[d] + (size_t)elements * n * eb) : 0;
        g->stride = n;
        g->rhs = (long)(rhs_bytes / eb);
        g->rhs_norm = (long)(rhs_bytes / sizeof(float));
    }
}

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
    const int *sites;       /* CUDA range launches (_launch_range): NULL, the range
                             * [cb0, cb1) is of output sites; else it indexes this
                             * list of output sites (a grid's interior or boundary
                             * where X, Y or Z is partitioned); the CPU ignores it */
    wd_ghost_src gsrc[4][2];    /* where each ghost face is read (data NULL: the ghost zone);
                                 * last, so that the other members keep their offsets */
} wd_dslash_args;

/* whether a launch reads some ghost face where it was received (a gsrc
 * set): the CUDA launchers then run the kernel instance compiled with the
 * ghost reads (`ghosts` 1), the others the one compiled without */
WD_INLINE int wd_reads_received(const wd_dslash_args *a)
{
    for (int mu = 0; mu < 4; ++mu)
        if (a->gsrc[mu][0].data || a->gsrc[mu][1].data)
            return 1;
    return 0;
}

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

#if !defined(__CUDACC__)
/*
 * The CPU backend's vector rows (templates/dslash_cpu.c.j2): the X/2 sites of
 * one parity on a row of fixed y, z, t run as lanes of `omp simd`, lane j at
 * cb = row * X/2 + j.  Their y, z and t neighbours lie at offsets constant
 * over the row (fwd, bwd; the periodic wrap of y or z included), so the
 * vector loads are contiguous.  Their x neighbours are the same row's sites
 * of the other parity, one lane wrapping round: the loop reads them from a
 * copy of the row (wd_row_copy) that holds its last site, every site, then
 * its first site, at x_stride = X/2 + 2 sites per element, so lane j's
 * backward neighbour is copy entry j + p and its forward one j + p + 1, p
 * the row's first x.  x_link holds the backward links U_0(n - 0) so.
 * A row none of whose hops reads a ghost face or crosses the time boundary
 * (the sign, the gauge-fixed last slice) runs so; every other row runs the
 * scalar site function, which finds each neighbour itself.
 */
#define WD_ROW_MAX 66   /* sites of a copy: rows of up to X = 128 run as vectors */

typedef struct wd_row {
    int fwd[4], bwd[4];     /* mu = 1..3: neighbour cb minus the site's cb */
    int p;                  /* the row's sites of this parity start at x = 1 */
    int x_stride;           /* sites an element of the copies below: X/2 + 2 */
    const void *x_in;       /* the row's x neighbours (wd_row_copy) */
    const float *x_norm;    /* ... their norms (half precision) */
    const void *x_link;     /* ... their links U_0 of the other parity */
    void *acc;              /* the sums of the hops, real k of lane j at k x_stride + j */
} wd_row;

/* Whether row r runs as a vector row; if so, its offsets, p and x_stride. */
WD_INLINE int wd_row_init(const wd_dslash_args *a, int r, wd_row *row)
{
    const int xh = a->dims[0] >> 1, Y = a->dims[1], Z = a->dims[2];
    if ((a->part & 1) || xh + 2 > WD_ROW_MAX)
        return 0;
    const int y = r % Y, z = r / Y % Z, t = r / (Y * Z);
    if (t + a->t_origin == 0 || t + a->t_origin == a->global_T - 1)
        return 0;
    const int c[4] = {0, y, z, t};
    const int step[4] = {1, xh, xh * Y, xh * Y * Z};
    for (int mu = 1; mu < 4; ++mu) {
        const int ext = a->dims[mu];
        const int hi = c[mu] == ext - 1, lo = c[mu] == 0;
        if ((a->part >> mu) & 1 && (hi || lo))
            return 0;
        row->fwd[mu] = hi ? -(ext - 1) * step[mu] : step[mu];
        row->bwd[mu] = lo ? (ext - 1) * step[mu] : -step[mu];
    }
    row->fwd[0] = row->bwd[0] = 0;
    row->p = (y + z + t + a->parity) & 1;
    row->x_stride = xh + 2;
    return 1;
}

/* dst = the xh sites of src (size bytes each) preceded by the last and
 * followed by the first: the x neighbours of a row, wrap included. */
WD_INLINE void wd_row_copy(void *dst, const void *src, size_t size, int xh)
{
    char *d = (char *)dst;
    const char *s = (const char *)src;
    memcpy(d, s + (size_t)(xh - 1) * size, size);
    memcpy(d + size, s, (size_t)xh * size);
    memcpy(d + (size_t)(xh + 1) * size, s, size);
}
#endif

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
WD_INLINE float wd_max_abs(float m, float v) { return fmaxf(m, fabsf(v)); }
WD_INLINE float wd_half_scale(float nrm) { return nrm > 0 ? (float)WD_HALF_SCALE / nrm : 0.0f; }
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
/* The CPU forms below give the values of the obvious ones (lrintf, fmaxf,
 * a conditional division) with no call and no float branch, so that the
 * vector rows of the CPU loop (templates/dslash_cpu.c.j2) vectorize them
 * (gcc if-converts neither a float compare's branch nor a division under
 * one): the rounding add of the GPU's wd_round_short (exact for |v| < 2^22,
 * and |v| <= WD_HALF_SCALE here); the larger of two non-negative floats
 * by their bit patterns, which order alike (a NaN component so makes the
 * site's norm NaN, where fmaxf dropped it and the site's other values
 * survived); a division done for every site, dropped for an all-zero one. */
WD_INLINE short wd_round_short(float v)
{
    const float t = v + 12582912.0f;
    int bits;
    memcpy(&bits, &t, sizeof bits);
    return (short)(bits - 0x4B400000);
}
WD_INLINE float wd_max_abs(float m, float v)
{
    int bm, bv;
    memcpy(&bm, &m, sizeof bm);
    memcpy(&bv, &v, sizeof bv);
    bv &= 0x7fffffff;
    const int r = bv > bm ? bv : bm;
    float out;
    memcpy(&out, &r, sizeof out);
    return out;
}
WD_INLINE float wd_half_scale(float nrm)
{
    int b, q;
    memcpy(&b, &nrm, sizeof b);
    const int zero = b == 0;
    b |= zero * 0x3f800000;     /* divide an all-zero site by 1 */
    float d;
    memcpy(&d, &b, sizeof d);
    const float sc = (float)WD_HALF_SCALE / d;
    memcpy(&q, &sc, sizeof q);
    q &= zero - 1;              /* and drop its quotient */
    float out;
    memcpy(&out, &q, sizeof out);
    return out;
}
#endif

#endif
