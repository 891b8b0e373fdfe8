/*
 * dslash_bench.c: `wdirac bench dslash`, the Dslash benchmark.
 *
 * The externally accessible functions are
 *   wd_bench_dslash_main      parse the subcommand's options, time every
 *                             selected variant on every lattice and padding,
 *                             print the table, write JSON
 *   wd_tune_main              `wdirac tune`: the same sweep, tuning only
 *                             (fills the tune cache ahead of time)
 *   wd_dslash_bytes_per_site  the fewest-bytes model below
 *   wd_dslash_flops_per_site  the flop model below
 *
 * Measurement rules (DESIGN.md): D applied from one parity to the other
 * (V/2 output sites), 1320 flops per output site (+48 for xpay), bytes at the
 * fewest-bytes model (each needed link once at its stored size, 6 instead of
 * 8 with gauge fixing; input, output and xpay spinors once; half-precision
 * norms included); random SU(3) links and random spinors, never zeros;
 * warm-up calls, then the median of many timed calls (CUDA events on the
 * GPU).  The copy bandwidth of the same device (bytes read + written by a
 * large copy) is measured in the same run and every variant's effective
 * bandwidth is reported as a fraction of it.  On the GPU each (variant,
 * volume, padding) runs with its autotuned block size (wd_tune.h).
 *
 * Lattices: --dims (repeatable), or --paper-sweep for the paper's Figures
 * 2-5: 24^3 x T for T = 8, 16, ..., 128 (sub-lattices of one 24^3 x 128
 * field: the host order puts t outermost, so a prefix of the arrays is the
 * 24^3 x T lattice).
 *
 * Many right-hand sides (--nrhs N,N,...): for every selected one-RHS
 * Wilson variant and each N, N random right-hand sides (right-hand side q
 * from wd_spinor_fill_random(seed + 1 + q)) through the backend as one
 * wd_dslash_group, which runs the largest multi-RHS kernels built for
 * the variant (12 = one _n4 launch over 3 groups: "4*3", or one _t12
 * launch: "t12") or one-RHS calls; where kernels of several forms (_n<N>
 * registers, _t<N> a thread a site and right-hand side, _sh<N> the same
 * with the links in shared memory) are built for the variant, each form's
 * plan alone is also timed where it runs a kernel of the form and differs
 * (JSON "forms": any, registers, threads, shared), so they sit side by
 * side.  Bytes at the multi-RHS
 * fewest-bytes model: every right-hand side's spinors once, the links once
 * per kernel call the group made.  CPU: the group call's wall time; GPU:
 * the CUDA-event medians of its kernel calls summed (the backend waits
 * after each kernel, so the group's wall time, reported beside it, also
 * holds a launch and a synchronisation per call).  On a process grid
 * (--grid or several ranks; CPU or CUDA backend, --wrap-halo as below)
 * each call includes the halo exchange of all its right-hand sides' faces
 * (one message per neighbour and direction), every rank times its block
 * (fields seed + rank) and the row is the slowest rank's time; Gflops
 * count the global lattice, bytes and GB/s one rank's block, and "halo
 * KiB" the faces one rank sends per call.
 *
 * Process grid (--grid Px Py Pz Pt, or several ranks under mpirun; CUDA
 * backend, one GPU per rank): each rank times, with CUDA events, the
 * backend's whole Dslash on its block (the timed calls start together on
 * every rank, after two untimed ones): the halo exchange (gather, the
 * transfers) and the kernel, which reads the received faces in place.  The exchange overlaps the interior
 * sites' kernel, and the call is also timed with the overlap off ("serial
 * us"); "hidden" is the share of the serial
 * exchange's time the overlapped call saves.  The row reports the slowest
 * rank's time per call, the exchange's duration (start to end, overlapped
 * or not), the aggregate Gflops over the global lattice,
 * the per-rank GB/s of the kernel's bytes model on the local block, the
 * halo bytes each rank sends and their rate, and the kernel launches of
 * one call's exchange ("pack/unpack": the gather of every face into the
 * send buffers, one whatever the number of split dimensions, and the
 * scatters into the ghost zones, none since the kernels read the received
 * faces in place).  Fields are random per rank
 * (seed + rank; gauge-fixed variants on the block's own temporal gauge):
 * the work is the decomposed lattice's, the values need not be.
 * --nccl-sweep adds the NCCL send/recv exchange alone, for buffers from
 * 4 KiB to 256 MiB and for the halo faces of every lattice timed.
 * --wrap-halo AXES runs the halo path for axes the grid does not split
 * (each rank exchanging with itself through NCCL): on one GPU, a rank's
 * share of a larger grid with everything but the wire between GPUs.
 */
#include <complex.h>
#include <fnmatch.h>
#include <jansson.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_util.h"
#include "cuda_rt.h"
#include "wd_core.h"
#include "gauge_tools.h"
#include "cli_bench.h"
#include "wd_backend.h"
#include "wd_gpu.h"
#include "wd_layout.h"
#include "wd_operator.h"
#include "wd_tune.h"
#include "wd_version.h"

#define FLOPS_PER_SITE 1320.0
#define XPAY_FLOPS_PER_SITE 48.0
#define MAX_LATTICES 32
#define MAX_PADS 4
#define MAX_NRHS_LIST 16    /* --nrhs: counts in the list (1 included) */
#define MAX_NRHS_ARG 64     /* --nrhs: right-hand sides of one group */

double wd_dslash_bytes_per_site(int precision, int recon, int gauge_fix, int xpay)
{
    const double norm = precision == 2 ? sizeof(float) : 0;
    const double spinor = 24.0 * precision + norm;
    const double links = gauge_fix ? 6 : 8;
    return links * recon * precision + spinor * (2 + xpay);
}

double wd_dslash_flops_per_site(int xpay)
{
    return FLOPS_PER_SITE + (xpay ? XPAY_FLOPS_PER_SITE : 0);
}

/* The fewest-bytes model of any kernel: a clover field adds its 72 reals
 * (half: and its two block norms) a site; the clover kernel alone moves
 * the spinor in and out and the clover field. */
static double variant_bytes_per_site(const wd_variant *v)
{
    const double clover = WD_CLOVER_SITE_REALS * v->precision + (v->precision == 2 ? 8 : 0);
    const double spinor = 24.0 * v->precision + (v->precision == 2 ? sizeof(float) : 0);
    /* a call on N right-hand sides: each link once, each spinor N times */
    const double spinors = spinor * (2 + v->xpay) * v->nrhs;
    const double links = (v->gauge_fix ? 6 : 8) * (double)v->recon * v->precision;
    switch (v->op) {
    case WD_OP_CLOVER: return 2 * spinor + clover;
    case WD_OP_WILSON_CLOVER: return links + spinors + clover;
    default: return links + spinors;
    }
}

/* Host copy bandwidth: median of a threaded memcpy far larger than cache. */
static double host_copy_gbps(void)
{
    const size_t n = (size_t)256 << 20;
    char *a = malloc(n), *b = malloc(n);
    double t[7], gbps = 0;
    if (a && b) {
        memset(a, 1, n);
        memset(b, 2, n);
        for (int r = 0; r < 7; ++r) {
            const double t0 = wd_bench_now();
            const int nt = omp_get_max_threads();
#pragma omp parallel for schedule(static)
            for (int k = 0; k < nt; ++k) {
                const size_t lo = n / nt * k, hi = k == nt - 1 ? n : n / nt * (k + 1);
                memcpy(b + lo, a + lo, hi - lo);
            }
            t[r] = wd_bench_now() - t0;
        }
        gbps = 2.0 * n / wd_bench_median(t, 7) / 1e9;
    }
    free(a);
    free(b);
    return gbps;
}

typedef struct bench_row {
    int variant, dims[4], pad, block;   /* us: per call (all of a multi-RHS kernel's N) */
    double us, us_site, gflops, gbps;
} bench_row;

/* Host fields of one lattice: random SU(3) links, the same in temporal
 * gauge, one random spinor (full lattice, both parities used). */
typedef struct host_fields {
    int dims[4];
    size_t volume;
    double complex *u, *uf, *psi;
    double *clover;     /* random Hermitian clover blocks, made when a clover kernel runs */
} host_fields;

static void host_free(host_fields *h)
{
    free(h->u), free(h->uf), free(h->psi), free(h->clover);
    memset(h, 0, sizeof *h);
}

/* Clover blocks for timing: the diagonal near 1, small random entries
 * elsewhere (what an inverse clover field looks like); the kernels'
 * speed does not depend on the values. */
static int host_clover(host_fields *h, uint64_t seed)
{
    if (h->clover)
        return 1;
    h->clover = malloc(h->volume * WD_CLOVER_SITE_REALS * sizeof *h->clover);
    if (!h->clover)
        return 0;
    wd_rng rng;
    wd_rng_seed(&rng, seed ^ 0xC10FE5ull);
    for (size_t n = 0; n < h->volume; ++n)
        for (int b = 0; b < 2; ++b)
            for (int r = 0; r < WD_CLOVER_BLOCK_REALS; ++r)
                h->clover[WD_CLOVER_SITE_REALS * n + WD_CLOVER_BLOCK_REALS * b + r] =
                    (r < 6 ? 1.0 : 0.0) + 0.1 * (wd_rng_uniform(&rng) - 0.5);
    return 1;
}

static int host_make(host_fields *h, const int dims[4], uint64_t seed)
{
    memset(h, 0, sizeof *h);
    memcpy(h->dims, dims, sizeof h->dims);
    h->volume = wd_volume(dims);
    h->u = malloc(h->volume * 36 * sizeof *h->u);
    h->uf = malloc(h->volume * 36 * sizeof *h->uf);
    h->psi = malloc(h->volume * 12 * sizeof *h->psi);
    double complex *g = malloc(h->volume * 9 * sizeof *g);
    if (!h->u || !h->uf || !h->psi || !g) {
        free(g);
        host_free(h);
        return 0;
    }
    wd_rng rng;
    wd_rng_seed(&rng, seed);
    wd_gauge_random(h->u, dims, &rng);
    wd_spinor_random(h->psi, dims, &rng);
    memcpy(h->uf, h->u, h->volume * 36 * sizeof *h->u);
    wd_temporal_gauge(g, h->u, dims);
    wd_gauge_transform(h->uf, g, dims);
    free(g);
    return 1;
}

/* A sub-lattice X x Y x Z x T' (T' <= T) of the same spatial extent is a
 * prefix of the host arrays, with its own temporal gauge fixing redone. */
static int host_prefix(host_fields *sub, const host_fields *h, int t)
{
    memset(sub, 0, sizeof *sub);
    memcpy(sub->dims, h->dims, sizeof sub->dims);
    sub->dims[3] = t;
    sub->volume = wd_volume(sub->dims);
    sub->u = h->u;
    sub->psi = h->psi;
    sub->uf = malloc(sub->volume * 36 * sizeof *sub->uf);
    double complex *g = malloc(sub->volume * 9 * sizeof *g);
    if (!sub->uf || !g) {
        free(sub->uf), free(g);
        return 0;
    }
    memcpy(sub->uf, sub->u, sub->volume * 36 * sizeof *sub->u);
    wd_temporal_gauge(g, sub->u, sub->dims);
    wd_gauge_transform(sub->uf, g, sub->dims);
    free(g);
    return 1;
}

/* ---- CPU backend ------------------------------------------------------- */

static int bench_cpu(int k, const host_fields *h, int pad, int reps, bench_row *row)
{
    const wd_variant *v = &wd_variants[k];
    const int hopping = v->op != WD_OP_CLOVER;
    wd_spinor_layout sl;
    wd_gauge_layout gl;
    wd_clover_layout cl;
    if (wd_spinor_layout_make(&sl, h->dims, v->precision, pad) != WD_OK ||
        wd_gauge_layout_make(&gl, h->dims, v->precision, hopping ? v->recon : 18, v->gauge_fix,
                             pad) != WD_OK ||
        wd_clover_layout_make(&cl, h->dims, v->precision, pad) != WD_OK) {
        fprintf(stderr, "wdirac bench dslash: %s\n", wd_last_error());
        return 0;
    }
    const int clover = v->op != WD_OP_WILSON, N = v->nrhs;
    const size_t ns = (size_t)sl.stride;
    void *g = malloc(gl.bytes), *i = malloc(N * sl.bytes), *o = malloc(N * sl.bytes);
    void *x = malloc(N * sl.bytes);
    void *c = clover ? malloc(cl.bytes) : NULL;
    float *norms = malloc(3 * N * ns * sizeof(float));
    float *cnorm = clover ? malloc(cl.norm_bytes + sizeof(float)) : NULL;
    double *t = malloc((size_t)reps * sizeof *t);
    int ok = g && i && o && x && norms && t && (!clover || (c && cnorm && h->clover));
    if (!ok) {
        fprintf(stderr, "wdirac bench dslash: %s: out of memory\n", v->name);
    } else {
        if (hopping)
            wd_pack_gauge(&gl, g, v->gauge_fix ? h->uf : h->u, h->dims);
        if (clover)
            wd_pack_clover(&cl, c, cnorm, h->clover, h->dims, 0);
        /* right-hand side q: the spinor's two parities in turn (timing
         * does not depend on the values, which are random and nonzero) */
        for (int q = 0; q < N; ++q) {
            wd_pack_spinor(&sl, (char *)i + q * sl.bytes, norms + q * ns, h->psi, h->dims,
                           1 - q % 2);
            wd_pack_spinor(&sl, (char *)x + q * sl.bytes, norms + (2 * N + q) * ns, h->psi,
                           h->dims, q % 2);
        }
        wd_dslash_args a;
        memset(&a, 0, sizeof a);
        wd_dslash_args_set(&a, &sl, &gl, h->dims, 0, -1);
        a.out = o, a.out_norm = norms + N * ns;
        a.in = i, a.in_norm = norms;
        a.x = x, a.x_norm = norms + 2 * N * ns;
        a.rhs_stride = (long)(sl.bytes / ((size_t)sl.width * sl.precision));
        a.rhs_norm_stride = (int)ns;
        a.gauge = g, a.a = -0.0157;
        a.clover = c, a.clover_norm = cnorm, a.clover_stride = cl.stride;
        for (int w = 0; w < 2; ++w)
            v->cpu(&a);
        for (int r = 0; r < reps; ++r) {
            const double t0 = wd_bench_now();
            v->cpu(&a);
            t[r] = wd_bench_now() - t0;
        }
        row->us = wd_bench_median(t, reps) * 1e6;
        row->block = 0;
    }
    free(g), free(i), free(o), free(x), free(norms), free(t), free(c), free(cnorm);
    return ok;
}

/* ---- GPU backend ------------------------------------------------------- */

/* Device fields, re-uploaded only when the precision / recon / gf changes. */
typedef struct gpu_cache {
    const host_fields *h;
    int pad, precision, recon, gauge_fix;
    wd_gpu_gauge g;
    wd_gpu_spinor in, out, x;
    void *clover;           /* the packed clover field (even parity), when a clover kernel ran */
    float *clover_norm;
    int clover_stride;
    void *m_in, *m_out, *m_x;   /* multi-RHS kernels: MAX_NRHS right-hand sides each */
    float *m_norm;              /* their norms: in, out, x */
    long m_stride;              /* elements per right-hand side */
    int m_norm_stride;
} gpu_cache;

/* the most right-hand sides a built kernel carries (the manifest decides) */
static int max_nrhs(void)
{
    int n = 1;
    for (int k = 0; k < wd_variant_count; ++k)
        n = wd_variants[k].nrhs > n ? wd_variants[k].nrhs : n;
    return n;
}
#define MAX_NRHS max_nrhs()

static void gpu_cache_free(gpu_cache *c)
{
    wd_cuda_free(c->m_in);
    wd_cuda_free(c->m_out);
    wd_cuda_free(c->m_x);
    wd_cuda_free(c->m_norm);
    wd_cuda_free(c->clover);
    wd_cuda_free(c->clover_norm);
    wd_gpu_gauge_free(&c->g);
    wd_gpu_spinor_free(&c->in);
    wd_gpu_spinor_free(&c->out);
    wd_gpu_spinor_free(&c->x);
    memset(c, 0, sizeof *c);
}

static wd_status gpu_cache_get(gpu_cache *c, const host_fields *h, const wd_variant *v, int pad)
{
    const int same_spinor = c->h == h && c->pad == pad && c->precision == v->precision;
    const int recon = v->op == WD_OP_CLOVER ? 18 : v->recon;
    const int same_gauge = same_spinor && c->recon == recon && c->gauge_fix == v->gauge_fix;
    if (same_gauge && (v->op == WD_OP_WILSON || c->clover) && (v->nrhs == 1 || c->m_in))
        return WD_OK;
    wd_status st = WD_OK;
    if (!same_spinor) {
        gpu_cache_free(c);
        st = wd_gpu_spinor_alloc(&c->in, h->dims, v->precision, pad);
        if (st == WD_OK)
            st = wd_gpu_spinor_alloc(&c->out, h->dims, v->precision, pad);
        if (st == WD_OK)
            st = wd_gpu_spinor_alloc(&c->x, h->dims, v->precision, pad);
        if (st == WD_OK)
            st = wd_gpu_spinor_upload(&c->in, h->psi, h->dims, 1);
        if (st == WD_OK)
            st = wd_gpu_spinor_upload(&c->x, h->psi, h->dims, 0);
        if (st == WD_OK)
            st = wd_gpu_spinor_upload(&c->out, h->psi, h->dims, 0);
    }
    /* the gauge field stays when only the multi-RHS or clover fields are new */
    if (st == WD_OK && !same_gauge) {
        wd_gpu_gauge_free(&c->g);
        st = wd_gpu_gauge_upload(&c->g, v->gauge_fix ? h->uf : h->u, h->dims, v->precision,
                                 recon, v->gauge_fix, pad);
    }
    if (st == WD_OK && v->nrhs > 1 && !c->m_in) {
        /* MAX_NRHS right-hand sides, the spinor's two parities in turn */
        wd_spinor_layout sl;
        st = wd_spinor_layout_make(&sl, h->dims, v->precision, pad);
        const size_t ns = (size_t)sl.stride, fb = sl.bytes;
        char *buf = st == WD_OK ? malloc(MAX_NRHS * fb) : NULL;
        float *nb = st == WD_OK ? malloc(3 * MAX_NRHS * ns * sizeof *nb) : NULL;
        if (st == WD_OK && (!buf || !nb))
            st = wd_fail(WD_ERR_NOMEM, "host staging of the multi-RHS fields");
        for (int q = 0; q < MAX_NRHS && st == WD_OK; ++q) {
            wd_pack_spinor(&sl, buf + q * fb, nb + q * ns, h->psi, h->dims, 1 - q % 2);
            wd_pack_spinor(&sl, buf + q * fb, nb + (2 * MAX_NRHS + q) * ns, h->psi, h->dims,
                           1 - q % 2);
        }
        if (st == WD_OK) st = wd_cuda_malloc(&c->m_in, MAX_NRHS * fb, "multi-RHS in");
        if (st == WD_OK) st = wd_cuda_malloc(&c->m_x, MAX_NRHS * fb, "multi-RHS x");
        if (st == WD_OK) st = wd_cuda_malloc(&c->m_out, MAX_NRHS * fb, "multi-RHS out");
        if (st == WD_OK)
            st = wd_cuda_malloc((void **)&c->m_norm, 3 * MAX_NRHS * ns * sizeof(float),
                                "multi-RHS norms");
        if (st == WD_OK) st = wd_cuda_h2d(c->m_in, buf, MAX_NRHS * fb);
        if (st == WD_OK) st = wd_cuda_h2d(c->m_x, buf, MAX_NRHS * fb);
        if (st == WD_OK) st = wd_cuda_h2d(c->m_out, buf, MAX_NRHS * fb);
        if (st == WD_OK) st = wd_cuda_h2d(c->m_norm, nb, 3 * MAX_NRHS * ns * sizeof(float));
        c->m_stride = (long)(fb / ((size_t)sl.width * sl.precision));
        c->m_norm_stride = (int)ns;
        free(buf);
        free(nb);
    }
    if (st == WD_OK && v->op != WD_OP_WILSON && !c->clover) {
        wd_clover_layout cl;
        st = wd_clover_layout_make(&cl, h->dims, v->precision, pad);
        void *buf = st == WD_OK ? malloc(cl.bytes + cl.norm_bytes) : NULL;
        if (st == WD_OK && (!buf || !h->clover))
            st = wd_fail(WD_ERR_NOMEM, "the host clover field");
        if (st == WD_OK) {
            wd_pack_clover(&cl, buf, (float *)((char *)buf + cl.bytes), h->clover, h->dims, 0);
            st = wd_cuda_malloc(&c->clover, cl.bytes, "the clover field");
        }
        if (st == WD_OK)
            st = wd_cuda_h2d(c->clover, buf, cl.bytes);
        if (st == WD_OK && cl.norm_bytes) {
            st = wd_cuda_malloc((void **)&c->clover_norm, cl.norm_bytes, "the clover norms");
            if (st == WD_OK)
                st = wd_cuda_h2d(c->clover_norm, (char *)buf + cl.bytes, cl.norm_bytes);
        }
        c->clover_stride = cl.stride;
        free(buf);
    }
    if (st != WD_OK) {
        gpu_cache_free(c);
        return st;
    }
    c->h = h, c->pad = pad, c->precision = v->precision, c->recon = recon;
    c->gauge_fix = v->gauge_fix;
    return WD_OK;
}

static int tune_only;

static int bench_gpu(int k, const host_fields *h, int pad, int reps, gpu_cache *c, bench_row *row)
{
    const wd_variant *v = &wd_variants[k];
    wd_status st = gpu_cache_get(c, h, v, pad);
    wd_dslash_args a;
    if (st == WD_OK) {
        wd_gpu_dslash_args(&a, &c->out, &c->in, &c->x, -0.0157, &c->g, h->dims, 0, -1);
        a.clover = c->clover, a.clover_norm = c->clover_norm, a.clover_stride = c->clover_stride;
        if (v->nrhs > 1) {
            const size_t ns = (size_t)c->m_norm_stride;
            a.in = c->m_in, a.out = c->m_out, a.x = c->m_x;
            a.in_norm = c->m_norm, a.out_norm = c->m_norm + MAX_NRHS * ns;
            a.x_norm = c->m_norm + 2 * MAX_NRHS * ns;
            a.rhs_stride = c->m_stride, a.rhs_norm_stride = c->m_norm_stride;
        }
        st = wd_tune_dslash(k, &a, pad, &row->block);
    }
    if (st == WD_OK && !tune_only)
        st = wd_cuda_time_dslash(k, &a, row->block, reps, &row->us);
    if (st != WD_OK) {
        fprintf(stderr, "wdirac bench dslash: %s on %dx%dx%dx%d: %s\n", v->name, h->dims[0],
                h->dims[1], h->dims[2], h->dims[3], wd_last_error());
        return 0;
    }
    return 1;
}

/* ---- driver ------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: wdirac bench dslash [options]\n"
            "  --backend cpu|cuda|auto  backend to time (default auto: cuda when a GPU is usable)\n"
            "  --dims X Y Z T        a lattice (repeatable; default 16^4 on the CPU, 24^3x64 and\n"
            "                        32^3x64 on the GPU)\n"
            "  --paper-sweep         24^3 x T for T = 8..128 step 8 (the paper's Figures 2-5)\n"
            "  --kernels GLOB        variants to time (default: every built variant)\n"
            "  --reps N              timed calls per variant, median reported (default 10 cpu, 100 gpu)\n"
            "  --pad N               padding between field sub-arrays, in elements (repeatable;\n"
            "                        default 0)\n"
            "  --seed N              random field seed (default 1)\n"
            "  --tune-cache FILE     GPU tune cache (default $WDIRAC_TUNE_CACHE or ~/.cache/wdirac/)\n"
            "  --json FILE           also write the results as JSON\n"
            "  --nrhs N,N,...        per selected one-RHS Wilson variant, time N random right-hand\n"
            "                        sides (1..%d) as one wd_dslash_group (the largest multi-RHS\n"
            "                        kernels built, else one-RHS calls): per-RHS time, Gflops,\n"
            "                        bytes at the multi-RHS model, speedup over N = 1 (always timed);\n"
            "                        where several forms are built (_n<N> registers, _t<N> a thread\n"
            "                        a site and right-hand side, _sh<N> links in shared memory)\n"
            "                        also each form's plan alone;\n"
            "                        on a grid (CPU or CUDA backend) with the halo exchange of\n"
            "                        all N right-hand sides' faces, the slowest rank\n"
            "  --grid Px Py Pz Pt    run on a process grid under mpirun, one GPU per rank (CUDA\n"
            "                        backend, NCCL halos; --nrhs also the CPU backend; the default\n"
            "                        under several ranks: the automatic grid); --dims are then\n"
            "                        global lattices\n"
            "  --nccl-sweep          with a grid: also time the NCCL exchange alone for 4 KiB to\n"
            "                        256 MiB and for each lattice's halo faces, and a global sum\n"
            "                        of 1 to 64 doubles through MPI (as the solvers sum) and\n"
            "                        through NCCL on the device\n"
            "  --wrap-halo AXES      on a grid (--grid 1 1 1 1 too): also exchange the faces of\n"
            "                        AXES (letters of XYZT) that the grid does not split, each\n"
            "                        rank with itself: the halo path's cost without a second GPU\n",
            MAX_NRHS_ARG);
}

static void print_row(const bench_row *r, double copy, double base_us)
{
    printf("%-28s %4dx%dx%dx%-3d %4d %5d %10.2f %9.5f %8.1f %8.1f %5.0f%% %6.2f\n",
           wd_variants[r->variant].name, r->dims[0], r->dims[1], r->dims[2], r->dims[3], r->pad,
           r->block, r->us, r->us_site, r->gflops, r->gbps, 100 * r->gbps / copy,
           base_us / (r->us / wd_variants[r->variant].nrhs));
    fflush(stdout);
}

static int write_json(const char *path, const char *backend, const char *device, double copy,
                      uint64_t seed, int reps, const bench_row *rows, int n)
{
    json_t *root = wd_bench_json_run("dslash", backend, device, seed), *res = json_array();
    json_object_set_new(root, "build_id", json_string(wd_tune_build_id()));
    json_object_set_new(root, "reps", json_integer(reps));
    json_object_set_new(root, "copy_GBps", json_real(copy));
    json_object_set_new(root, "flops_per_site", json_real(FLOPS_PER_SITE));
    for (int k = 0; k < n; ++k) {
        const bench_row *r = &rows[k];
        const wd_variant *v = &wd_variants[r->variant];
        json_array_append_new(
            res, json_pack("{s:s, s:i, s:i, s:i, s:i, s:i, s:[iiii], s:i, s:i, s:i, s:f, s:f, s:f, s:f, "
                           "s:f, s:f}",
                           "variant", v->name, "precision", v->precision, "recon", v->recon,
                           "gauge_fix", v->gauge_fix, "dagger", v->dagger, "xpay", v->xpay, "dims",
                           r->dims[0], r->dims[1], r->dims[2], r->dims[3], "pad", r->pad, "block",
                           r->block, "nrhs", v->nrhs, "us_per_call", r->us, "us_per_rhs",
                           r->us / v->nrhs, "us_per_site", r->us_site, "gflops",
                           r->gflops, "GBps", r->gbps, "fraction_of_copy", r->gbps / copy));
    }
    json_object_set_new(root, "results", res);
    const int rc = json_dump_file(root, path, JSON_INDENT(1));
    json_decref(root);
    if (rc != 0)
        fprintf(stderr, "wdirac bench dslash: cannot write %s\n", path);
    return rc == 0;
}

/* ---- process grid (CUDA backend, NCCL halos) ---------------------------- */

typedef struct grid_row {
    int variant, dims[4], local[4];
    double us, halo_us, gflops, gbps, halo_bytes, halo_gbps;
    double serial_us, hidden;   /* the exchange not overlapped; the share of it hidden */
    int pack, unpack;           /* gather and scatter launches of one call's exchange (no
                                 * scatter: the kernels read the received faces) */
    char route[64];             /* each split dimension's route, the overlapped call's */
    char tuning[160];           /* how AUTO chose it ("" without a choice) */
    double rank_us[32];
} grid_row;

/* every rank's value v into out[0..size) (size <= 32) through the backend's
 * rank-ordered sum */
static void gather_ranks(wd_backend *be, double v, double *out, int rank, int size)
{
    double slots[32] = {0};
    if (size > 32)
        size = 32;
    if (rank < 32)
        slots[rank] = v;
    wd_backend_allsum(be, slots, 32);
    memcpy(out, slots, (size_t)size * sizeof *out);
}

/* Over the ranks of a grid: the slowest rank's value (v itself on one) */
static double slowest(wd_backend *be, double v)
{
    double all[32];
    gather_ranks(be, v, all, wd_rank(), wd_ranks());
    for (int q = 0; q < (wd_ranks() < 32 ? wd_ranks() : 32); ++q)
        v = all[q] > v ? all[q] : v;
    return v;
}

/* halo bytes one rank sends per Dslash: both faces of each partitioned mu */
static double halo_bytes_sent(const wd_backend *be, const wd_variant *v)
{
    const double site = 24.0 * v->precision + (v->precision == 2 ? sizeof(float) : 0);
    double b = 0;
    for (int mu = 0; mu < 4; ++mu)
        if (be->halo.part[mu])
            b += 2 * be->halo.face_cb[mu] * site;
    return b;
}

static int time_grid_variant(wd_backend *be, int k, const host_fields *h, int reps, grid_row *r,
                             const wd_lattice *lat)
{
    const wd_variant *v = &wd_variants[k];
    wd_gauge g;
    wd_field in, out, x;
    memset(&in, 0, sizeof in), memset(&out, 0, sizeof out), memset(&x, 0, sizeof x);
    double us = 0, halo_us = 0, serial_us = 0, serial_halo = 0;
    /* the exchange overlaps the interior on every grid: also timed
     * without the overlap */
    const int ovl = be->halo.ghost_sites > 0;
    wd_status st = wd_gauge_create(be, &g, (const double *)(v->gauge_fix ? h->uf : h->u),
                                   v->precision, v->recon, v->gauge_fix, -1);
    if (st == WD_OK && (st = wd_field_create(be, &in, v->precision)) == WD_OK &&
        (st = wd_field_create(be, &out, v->precision)) == WD_OK &&
        (st = wd_field_create(be, &x, v->precision)) == WD_OK &&
        (st = be->ops->upload(be, &in, (const double *)h->psi, 1)) == WD_OK &&
        (st = be->ops->upload(be, &x, (const double *)h->psi, 0)) == WD_OK && ovl) {
        wd_backend_cuda_set_overlap(be, 0);
        st = wd_backend_cuda_time_dslash(be, k, &out, &g, &in, v->xpay ? &x : NULL, -0.0157, 0,
                                         reps, &serial_us, &serial_halo);
        wd_backend_cuda_set_overlap(be, 1);
    }
    if (st == WD_OK)
        st = wd_backend_cuda_time_dslash(be, k, &out, &g, &in, v->xpay ? &x : NULL, -0.0157, 0,
                                         reps, &us, &halo_us);
    /* the same on every rank: every rank exchanges the same faces, on the
     * same routes */
    wd_backend_cuda_halo_launches(be, &r->pack, &r->unpack);
    wd_backend_cuda_halo_route(be, r->route, sizeof r->route);
    wd_backend_cuda_halo_tuning(be, r->tuning, sizeof r->tuning);
    st = wd_backend_agree(st);
    wd_field_destroy(be, &in);
    wd_field_destroy(be, &out);
    wd_field_destroy(be, &x);
    wd_gauge_destroy(be, &g);
    if (st != WD_OK) {
        if (wd_cli_printer())
            fprintf(stderr, "wdirac bench dslash: %s on %dx%dx%dx%d grid %d %d %d %d: %s\n",
                    v->name, lat->dims[0], lat->dims[1], lat->dims[2], lat->dims[3],
                    lat->procs[0], lat->procs[1], lat->procs[2], lat->procs[3], wd_last_error());
        return 0;
    }
    r->variant = k;
    memcpy(r->dims, lat->dims, sizeof r->dims);
    memcpy(r->local, lat->local, sizeof r->local);
    double all_halo[32], all_serial[32], all_serial_halo[32];
    gather_ranks(be, us, r->rank_us, lat->rank, lat->size);
    gather_ranks(be, halo_us, all_halo, lat->rank, lat->size);
    gather_ranks(be, serial_us, all_serial, lat->rank, lat->size);
    gather_ranks(be, serial_halo, all_serial_halo, lat->rank, lat->size);
    /* the slowest rank sets the pace; its exchange share goes with it */
    int slow = 0;
    for (int q = 1; q < (lat->size < 32 ? lat->size : 32); ++q)
        if (r->rank_us[q] > r->rank_us[slow])
            slow = q;
    r->us = r->rank_us[slow];
    r->halo_us = all_halo[slow];
    if (ovl) {
        int sslow = 0;
        for (int q = 1; q < (lat->size < 32 ? lat->size : 32); ++q)
            if (all_serial[q] > all_serial[sslow])
                sslow = q;
        r->serial_us = all_serial[sslow];
        /* the exchange's time that the overlapped call no longer pays */
        r->hidden = all_serial_halo[sslow] > 0 ? (r->serial_us - r->us) / all_serial_halo[sslow] : 0;
    }
    const double global_sites = wd_volume(lat->dims) / 2.0, local_sites = global_sites / lat->size;
    r->gflops = wd_dslash_flops_per_site(v->xpay) * global_sites / r->us / 1e3;
    r->gbps = wd_dslash_bytes_per_site(v->precision, v->recon, v->gauge_fix, v->xpay) *
              local_sites / r->us / 1e3;
    r->halo_bytes = halo_bytes_sent(be, v);
    r->halo_gbps = r->halo_us > 0 ? r->halo_bytes / r->halo_us / 1e3 : 0;
    return 1;
}

/* the NCCL exchange alone, per partitioned mu of the backend's grid */
static void nccl_sweep(wd_backend *be, const size_t *extra, int nextra, int reps, json_t *arr)
{
    int mu = 0;
    while (mu < 4 && !be->halo.part[mu])
        mu++;
    if (mu == 4)
        return;
    size_t sizes[64];
    int n = 0;
    for (size_t b = 4096; b <= ((size_t)256 << 20); b *= 4)
        sizes[n++] = b;
    for (int k = 0; k < nextra && n < 64; ++k)
        sizes[n++] = extra[k];
    if (wd_cli_printer())
        printf("\nNCCL send/recv exchange alone (mu = %d: each rank sends one buffer to each "
               "neighbour and receives one from each)\n%14s %10s %12s\n", mu, "bytes/face", "us",
               "GB/s out");
    for (int k = 0; k < n; ++k) {
        double us = 0;
        if (wd_backend_cuda_time_exchange(be, mu, sizes[k], reps, &us) != WD_OK) {
            if (wd_cli_printer())
                fprintf(stderr, "wdirac bench dslash: NCCL exchange of %zu bytes: %s\n", sizes[k],
                        wd_last_error());
            return;
        }
        us = slowest(be, us);
        const double gbps = 2.0 * sizes[k] / us / 1e3;
        if (wd_cli_printer())
            printf("%14zu %10.2f %12.2f%s\n", sizes[k], us, gbps, k >= n - nextra ? "  (halo face)" : "");
        json_array_append_new(arr, json_pack("{s:I, s:f, s:f, s:b}", "bytes_per_face",
                                             (json_int_t)sizes[k], "us", us, "GBps_out", gbps,
                                             "halo_face", k >= n - nextra));
    }
}

/* a global sum of n doubles both ways (issue 28 item 4): today's MPI path
 * against NCCL on the device, per n, the slowest rank */
static void sum_sweep(wd_backend *be, int reps, json_t *arr)
{
    static const int ns[] = {1, 3, 6, 36, 64};
    if (wd_ranks() < 2)
        return;
    if (wd_cli_printer())
        printf("\nGlobal sums of n doubles, from partials on the device to sums on the host: "
               "MPI as the solvers sum\ntoday (copy to the host, MPI_Allgather, the rank-order "
               "sum) against NCCL on the device\n(ncclAllGather, the rank-order sum in a kernel, "
               "copy to the host); host wall clock, median,\nthe slowest rank; same: the two gave "
               "the same bits every time\n%6s %10s %10s %6s\n", "n", "MPI us", "NCCL us", "same");
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; ++k) {
        double mpi = 0, nccl = 0;
        int same = 0;
        if (wd_backend_cuda_time_sum(be, ns[k], reps, &mpi, &nccl, &same) != WD_OK) {
            if (wd_cli_printer())
                fprintf(stderr, "wdirac bench dslash: global sum of %d doubles: %s\n", ns[k],
                        wd_last_error());
            return;
        }
        mpi = slowest(be, mpi);
        nccl = slowest(be, nccl);
        if (wd_cli_printer())
            printf("%6d %10.2f %10.2f %6s\n", ns[k], mpi, nccl, same ? "yes" : "NO");
        json_array_append_new(arr, json_pack("{s:i, s:f, s:f, s:b}", "n", ns[k], "us_mpi", mpi,
                                             "us_nccl", nccl, "same_bits", same));
    }
}

static int bench_grid(int lat_dims[][4], int nlat, const int procs[4], const char *glob, int reps,
                      uint64_t seed, int pad, const char *json_path, const char *tune_cache,
                      int sweep_nccl, int wrap)
{
    const int printer = wd_cli_printer();
    wd_status st = wd_backend_cuda_select();
    if (st != WD_OK) {
        if (printer)
            fprintf(stderr, "wdirac bench dslash: %s\n", wd_last_error());
        return wd_cli_exit_code(st);
    }
    wd_tune_set_cache(tune_cache);
    char device[256];
    double copy = 0;
    wd_bench_device(device, sizeof device, 1);
    st = wd_cuda_copy_gbps((size_t)1 << 30, 20, &copy);
    if (st != WD_OK) {
        fprintf(stderr, "wdirac bench dslash: rank %d: %s\n", wd_rank(), wd_last_error());
        return wd_cli_exit_code(st);
    }
    if (printer) {
        printf("wdirac bench dslash  backend cuda  ranks %d (one GPU each)  device \"%s\"\n",
               wd_ranks(), device);
        printf("seed %llu (+ rank)  reps %d  pad %d  commit %s  build %s\n",
               (unsigned long long)seed, reps, pad, WD_GIT_COMMIT, wd_tune_build_id());
        printf("copy bandwidth %.1f GB/s per GPU (read + write, rank 0)\n", copy);
        if (wrap)
            printf("--wrap-halo: faces of %s%s%s%s exchanged by each rank with itself where the "
                   "grid does not split them\n", wrap & 1 ? "X" : "", wrap & 2 ? "Y" : "",
                   wrap & 4 ? "Z" : "", wrap & 8 ? "T" : "");
        printf("time per call: the halo exchange (gather, transfers) and the kernel, the\n"
               "exchange overlapping the interior sites (serial us: not overlapped; hidden:\n"
               "the share of the serial exchange saved); the slowest rank;\n"
               "GB/s and copy: the kernel's bytes model on one rank's block; pack/unpack: the\n"
               "gather and scatter kernel launches of one call's exchange (no scatter); route:\n"
               "each split dimension's halo route (kernel / copy: peer to peer, written by the\n"
               "gather or copied by the copy engine; nccl; mpi: through the host;\n"
               "WDIRAC_HALO=auto|nccl|copy|kernel|mpi; auto times the routes a peer-to-peer\n"
               "dimension can take per grid, local volume, precision and right-hand sides, the\n"
               "slowest rank's median Dslash each, and caches the fastest: its line follows)\n\n");
        printf("%-28s %-14s %-8s %-13s %5s %10s %9s %9s %8s %6s %10s %8s %10s %6s %11s  %s\n",
               "variant", "lattice", "grid", "local", "ranks", "us/call", "halo us", "Gflops",
               "GB/s", "copy", "halo KiB", "halo GB/s", "serial us", "hidden", "pack/unpack",
               "route");
    }
    json_t *root = wd_bench_json_run("dslash-grid", "cuda", device, seed);
    json_t *res = json_array(), *sweep_arr = json_array(), *sum_arr = json_array();
    json_object_set_new(root, "build_id", json_string(wd_tune_build_id()));
    json_object_set_new(root, "reps", json_integer(reps));
    json_object_set_new(root, "pad", json_integer(pad));
    json_object_set_new(root, "ranks", json_integer(wd_ranks()));
    json_object_set_new(root, "wrap_halo", json_integer(wrap));
    json_object_set_new(root, "copy_GBps", json_real(copy));
    int n = 0, failed = 0;
    for (int l = 0; l < nlat; ++l) {
        wd_lattice lat;
        if ((st = wd_lattice_make(&lat, lat_dims[l], procs)) != WD_OK) {
            if (printer)
                fprintf(stderr, "wdirac bench dslash: %s\n", wd_last_error());
            return WD_EXIT_USAGE;
        }
        host_fields h;
        const int made = host_make(&h, lat.local, seed + (uint64_t)lat.rank);
        wd_backend be;
        st = made ? WD_OK : WD_ERR_NOMEM;
        if (made)
            st = wd_backend_open_lattice(&be, WD_BACKEND_CUDA, &lat, pad, wrap);
        if (st != WD_OK) {
            if (printer)
                fprintf(stderr, "wdirac bench dslash: %dx%dx%dx%d: %s\n", lat.dims[0], lat.dims[1],
                        lat.dims[2], lat.dims[3], made ? wd_last_error() : "out of host memory");
            host_free(&h);
            return wd_cli_exit_code(st);
        }
        size_t faces[8];
        int nfaces = 0;
        for (int k = 0; k < wd_variant_count; ++k) {
            const wd_variant *v = &wd_variants[k];
            /* the clover and multi-RHS kernels on a grid: not timed here yet */
            if (fnmatch(glob, v->name, 0) != 0 || v->op != WD_OP_WILSON || v->nrhs != 1)
                continue;
            grid_row r;
            memset(&r, 0, sizeof r);
            if (!time_grid_variant(&be, k, &h, reps, &r, &lat)) {
                failed++;
                continue;
            }
            int mu0 = 0;
            while (mu0 < 4 && !be.halo.part[mu0])
                mu0++;
            if (mu0 < 4 && nfaces < 8) {
                const size_t face = (size_t)be.halo.face_cb[mu0] *
                                    (24 * v->precision + (v->precision == 2 ? sizeof(float) : 0));
                int seen = 0;
                for (int q = 0; q < nfaces; ++q)
                    seen |= faces[q] == face;
                if (!seen)
                    faces[nfaces++] = face;
            }
            n++;
            if (printer) {
                char gridb[16], local[20], latb[20];
                snprintf(latb, sizeof latb, "%dx%dx%dx%d", lat.dims[0], lat.dims[1], lat.dims[2],
                         lat.dims[3]);
                snprintf(gridb, sizeof gridb, "%dx%dx%dx%d", lat.procs[0], lat.procs[1],
                         lat.procs[2], lat.procs[3]);
                snprintf(local, sizeof local, "%dx%dx%dx%d", lat.local[0], lat.local[1],
                         lat.local[2], lat.local[3]);
                char serial[16] = "-", hidden[16] = "-", launches[24];
                if (r.serial_us > 0) {
                    snprintf(serial, sizeof serial, "%.2f", r.serial_us);
                    snprintf(hidden, sizeof hidden, "%.0f%%", 100 * r.hidden);
                }
                snprintf(launches, sizeof launches, "%d/%d", r.pack, r.unpack);
                printf("%-28s %-14s %-8s %-13s %5d %10.2f %9.2f %9.1f %8.1f %5.0f%% %10.1f %8.1f %10s "
                       "%6s %11s  %s\n", v->name, latb, gridb, local, lat.size, r.us, r.halo_us,
                       r.gflops, r.gbps, 100 * r.gbps / copy, r.halo_bytes / 1024, r.halo_gbps,
                       serial, hidden, launches, r.route);
                if (r.tuning[0])
                    printf("  halo route, auto: %s\n", r.tuning);
                fflush(stdout);
            }
            json_t *ranks = json_array();
            for (int q = 0; q < (lat.size < 32 ? lat.size : 32); ++q)
                json_array_append_new(ranks, json_real(r.rank_us[q]));
            json_array_append_new(
                res, json_pack("{s:s, s:i, s:i, s:i, s:i, s:i, s:[iiii], s:[iiii], s:[iiii], "
                               "s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:i, s:i, s:s, "
                               "s:s, s:o}",
                               "variant", v->name, "precision", v->precision, "recon", v->recon,
                               "gauge_fix", v->gauge_fix, "dagger", v->dagger, "xpay", v->xpay,
                               "dims", lat.dims[0], lat.dims[1], lat.dims[2], lat.dims[3],
                               "grid", lat.procs[0], lat.procs[1], lat.procs[2], lat.procs[3],
                               "local", lat.local[0], lat.local[1], lat.local[2], lat.local[3],
                               "ranks", lat.size, "us_per_call", r.us, "halo_us", r.halo_us,
                               "gflops", r.gflops, "GBps_per_rank", r.gbps, "fraction_of_copy",
                               r.gbps / copy, "halo_bytes_sent_per_rank", r.halo_bytes,
                               "halo_GBps", r.halo_gbps, "us_serial_exchange", r.serial_us,
                               "fraction_of_exchange_hidden", r.hidden, "pack_launches_per_call",
                               r.pack, "unpack_launches_per_call", r.unpack, "halo_route", r.route,
                               "halo_route_tuning", r.tuning,
                               "us_per_rank", ranks));
        }
        if (sweep_nccl && l == nlat - 1) {
            nccl_sweep(&be, faces, nfaces, reps, sweep_arr);
            sum_sweep(&be, reps, sum_arr);
        }
        wd_backend_close(&be);
        host_free(&h);
    }
    json_object_set_new(root, "results", res);
    json_object_set_new(root, "nccl_exchange", sweep_arr);
    json_object_set_new(root, "global_sums", sum_arr);
    int rc = failed || !n ? WD_EXIT_FAILED : WD_EXIT_OK;
    if (!n && printer)
        fprintf(stderr, "wdirac bench dslash: no built variant matches '%s'\n", glob);
    if (printer && json_path && json_dump_file(root, json_path, JSON_INDENT(1)) != 0) {
        fprintf(stderr, "wdirac bench dslash: cannot write %s\n", json_path);
        rc = WD_EXIT_FAILED;
    }
    json_decref(root);
    return rc;
}

/* ---- many right-hand sides through wd_dslash_group (--nrhs) ------------- */

/* The operator family of a one-RHS Wilson variant, its multi-RHS kernels
 * of one form (wd_rhs_form) or of any (-1: the plan a solver gets); the
 * plan of a group comes back from wd_dslash_group. */
typedef struct group_family {
    const wd_variant *v;
    int form;
} group_family;

static int group_kernel(const void *ctx, int n)
{
    const group_family *f = ctx;
    const wd_variant *v = f->v;
    return wd_variant_find_form(WD_OP_WILSON, v->precision, v->recon, v->gauge_fix, v->dagger,
                                v->xpay, n, f->form);
}

/* Whether kernels of several forms are built for v's family (then --nrhs
 * times each form's plan beside the default one) */
static int family_has_forms(const wd_variant *v)
{
    int has[3] = {0, 0, 0};
    for (int k = 0; k < wd_variant_count; ++k) {
        const wd_variant *w = &wd_variants[k];
        if (w->nrhs > 1 && w->op == v->op && w->precision == v->precision &&
            w->recon == v->recon && w->gauge_fix == v->gauge_fix && w->dagger == v->dagger &&
            w->xpay == v->xpay && w->form >= 0 && w->form < 3)
            has[w->form] = 1;
    }
    return has[0] + has[1] + has[2] > 1;
}

static const char *form_prefix(const wd_variant *v)
{
    return v->nrhs == 1 ? "" : v->form == WD_FORM_THREADS ? "t" : v->form == WD_FORM_SHARED ? "sh" : "";
}

static int same_plan(const wd_group_plan *a, const wd_group_plan *b)
{
    if (a->calls != b->calls)
        return 0;
    for (int c = 0; c < a->calls; ++c)
        if (a->variant[c] != b->variant[c] || a->nrhs[c] != b->nrhs[c])
            return 0;
    return 1;
}

/* A plan's calls: "4*3" (one _n4 launch over 3 groups of 4), "2", "1x12"
 * (twelve one-RHS calls), "t12" (one _t12 launch: the thread form),
 * "t12*2", "sh12" (the shared-memory form), joined by "+"; a call the
 * CUDA backend split (per_launch, may be NULL) as "4x3" (three _n4
 * launches) or "2*2x3" (three launches over 2 groups each) */
static void group_plan_name(const wd_group_plan *plan, const int *per_launch, char *buf,
                            size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    for (int c = 0; c < plan->calls && at < len;) {
        const int n = wd_variants[plan->variant[c]].nrhs, m = plan->nrhs[c];
        int run = 1;
        while (n == 1 && c + run < plan->calls && plan->nrhs[c + run] == 1)
            run++;
        const char *sep = c ? "+" : "";
        const char *form = form_prefix(&wd_variants[plan->variant[c]]);
        const int per = per_launch && per_launch[c] > 0 ? per_launch[c] : m / n;
        const int w = run > 1      ? snprintf(buf + at, len - at, "%s1x%d", sep, run)
                      : per == 1 && m > n
                          ? snprintf(buf + at, len - at, "%s%s%dx%d", sep, form, n, m / n)
                      : per < m / n
                          ? snprintf(buf + at, len - at, "%s%s%d*%dx%d", sep, form, n, per,
                                     m / n / per)
                      : m > n ? snprintf(buf + at, len - at, "%s%s%d*%d", sep, form, n, m / n)
                              : snprintf(buf + at, len - at, "%s%s%d", sep, form, n);
        at += w > 0 ? (size_t)w : 0;
        c += run;
    }
}

/* "1,2,4,8,12": sorted, duplicates dropped, 1 (the baseline) added; the
 * count, or -1 on anything else */
static int parse_nrhs_list(const char *s, int *list)
{
    int n = 1;
    list[0] = 1;
    for (;;) {
        char *end;
        const long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > MAX_NRHS_ARG || (*end && *end != ','))
            return -1;
        int at = 0;
        while (at < n && list[at] < v)
            at++;
        if (at == n || list[at] != v) {
            if (n == MAX_NRHS_LIST)
                return -1;
            memmove(list + at + 1, list + at, (size_t)(n - at) * sizeof *list);
            list[at] = (int)v;
            n++;
        }
        if (!*end)
            return n;
        s = end + 1;
    }
}

/* The multi-fields of one precision: nmax random right-hand sides in `in`
 * (odd sites of host spinor q) and `x` (its even sites), `out`. */
typedef struct nrhs_fields {
    int precision;
    wd_field in, out, x;
} nrhs_fields;

static void nrhs_fields_free(wd_backend *be, nrhs_fields *f)
{
    wd_field_destroy(be, &f->in);
    wd_field_destroy(be, &f->out);
    wd_field_destroy(be, &f->x);
    f->precision = 0;
}

/* right-hand side q: wd_spinor_fill_random(seed + 1 + q) */
static wd_status nrhs_fields_get(wd_backend *be, nrhs_fields *f, int precision, int nmax,
                                 uint64_t seed, double *host)
{
    if (f->precision == precision)
        return WD_OK;
    nrhs_fields_free(be, f);
    wd_status st = wd_field_create_multi(be, &f->in, precision, nmax);
    if (st == WD_OK)
        st = wd_field_create_multi(be, &f->out, precision, nmax);
    if (st == WD_OK)
        st = wd_field_create_multi(be, &f->x, precision, nmax);
    for (int q = 0; q < nmax && st == WD_OK; ++q) {
        wd_field vi = wd_field_view(&f->in, q, 1), vx = wd_field_view(&f->x, q, 1);
        st = wd_spinor_fill_random(host, be->dims, seed + 1 + (uint64_t)q);
        if (st == WD_OK)
            st = be->ops->upload(be, &vi, host, 1);
        if (st == WD_OK)
            st = be->ops->upload(be, &vx, host, 0);
    }
    if (st != WD_OK)
        nrhs_fields_free(be, f);
    else
        f->precision = precision;
    return st;
}

typedef struct nrhs_row {
    double us, us_wall;     /* the group: per-kernel CUDA events summed (GPU) or wall clock */
    wd_group_plan plan;
    int per_launch[WD_GROUP_PLAN_MAX];  /* GPU: each call's groups a launch (0: one launch) */
} nrhs_row;

/* The plan of out = D in (+ x) on right-hand sides 0..n-1 with the
 * kernels of `form` (-1: any), from one call */
static wd_status plan_group(wd_backend *be, const wd_variant *v, int form, const wd_gauge *g,
                            nrhs_fields *f, int n, wd_group_plan *plan)
{
    wd_field in = wd_field_view(&f->in, 0, n), out = wd_field_view(&f->out, 0, n);
    wd_field x = wd_field_view(&f->x, 0, n);
    group_family fam = {v, form};
    return wd_dslash_group(be, group_kernel, &fam, &out, g, NULL, &in, v->xpay ? &x : NULL,
                           -0.0157, 0, n, plan);
}

/* Time out = D in (+ x) on right-hand sides 0..n-1 as one wd_dslash_group.
 * CPU: the group's wall time.  GPU: the CUDA-event medians of the group's
 * kernel calls summed (the backend waits for each kernel, so the group's
 * wall time also holds a launch and a synchronisation per call: us_wall). */
static wd_status time_group(wd_backend *be, int gpu, const wd_variant *v, int form,
                            const wd_gauge *g, nrhs_fields *f, int n, int reps, nrhs_row *row)
{
    wd_field in = wd_field_view(&f->in, 0, n), out = wd_field_view(&f->out, 0, n);
    wd_field x = wd_field_view(&f->x, 0, n);
    const double a = -0.0157;
    group_family fam = {v, form};
    wd_status st = wd_dslash_group(be, group_kernel, &fam, &out, g, NULL, &in,
                                   v->xpay ? &x : NULL, a, 0, n, &row->plan);
    if (st == WD_OK)
        st = wd_dslash_group(be, group_kernel, &fam, &out, g, NULL, &in, v->xpay ? &x : NULL, a,
                             0, n, NULL);
    double *t = malloc((size_t)reps * sizeof *t);
    if (st == WD_OK && !t)
        st = wd_fail(WD_ERR_NOMEM, "the timings of %d repetitions", reps);
    for (int r = 0; r < reps && st == WD_OK; ++r) {
        const double t0 = wd_bench_now();
        st = wd_dslash_group(be, group_kernel, &fam, &out, g, NULL, &in, v->xpay ? &x : NULL, a,
                             0, n, NULL);
        t[r] = wd_bench_now() - t0;
    }
    if (st == WD_OK)
        row->us = row->us_wall = wd_bench_median(t, reps) * 1e6;
    free(t);
    if (st != WD_OK || !gpu)
        return st;
    row->us = 0;
    const wd_group_plan *p = &row->plan;
    for (int c = 0, q = 0; c < p->calls && st == WD_OK; q += p->nrhs[c++]) {
        wd_field vo = wd_field_view(&out, q, p->nrhs[c]), vi = wd_field_view(&in, q, p->nrhs[c]);
        wd_field vx = wd_field_view(&x, q, p->nrhs[c]);
        double us = 0, halo_us = 0;
        st = wd_backend_cuda_time_dslash(be, p->variant[c], &vo, g, &vi, v->xpay ? &vx : NULL, a,
                                         0, reps, &us, &halo_us);
        row->per_launch[c] = be->launch_groups;
        row->us += us;
    }
    return st;
}

static void nrhs_usage_note(FILE *f, int gpu)
{
    fprintf(f, "\nN right-hand sides as one wd_dslash_group: kernels, the calls it made (4*3: "
            "one _n4 launch over 3 groups of 4; 4x3: the same call run as three _n4 launches, "
            "2*2x3: as three launches over 2 groups each, where the tuner timed that faster; "
            "t12: one _t12 launch, a thread a site and "
            "right-hand side; sh12: the same, links in shared memory; 1x12: twelve one-RHS "
            "calls, no multi-RHS kernel built for the variant);\nwhere kernels of several forms "
            "are built, the plan a solver gets comes first, then the plan of each form alone "
            "(_n<N>, _t<N>, _sh<N>, with one-RHS calls for the rest) where it differs;\nus/call: all N, %s; us/RHS, Gflops (1320 (+48) x N per output site), "
            "B/site: bytes per output site and right-hand side at the multi-RHS fewest-bytes "
            "model:\nthe spinors in + out (+ x) of every right-hand side once and the links once "
            "per kernel call, divided by N; GB/s and copy: those bytes over the time and the copy "
            "bandwidth;\nspeedup: time per right-hand side of N = 1 over that of N, same variant "
            "and run\n", gpu ? "the CUDA-event medians of the group's kernel calls summed "
            "(wall us: the host's wall clock of the whole group call, a launch and a "
            "synchronisation per kernel)" : "wall clock of the group call");
}

/* procs: NULL for one process, else the process grid (zeros: automatic)
 * with wrap as --wrap-halo; lat are then global lattices. */
static int bench_nrhs(int gpu, int lat[][4], int nlat, const int *pads, int npads,
                      const char *glob, const int *list, int nlist, int reps, uint64_t seed,
                      const char *device, double copy, const char *json_path, const int *procs,
                      int wrap)
{
    const int printer = wd_cli_printer();
    json_t *root = wd_bench_json_run("dslash-nrhs", gpu ? "cuda" : "cpu", device, seed);
    json_t *res = json_array(), *ns = json_array();
    for (int i = 0; i < nlist; ++i)
        json_array_append_new(ns, json_integer(list[i]));
    json_object_set_new(root, "build_id", json_string(wd_tune_build_id()));
    json_object_set_new(root, "reps", json_integer(reps));
    json_object_set_new(root, "copy_GBps", json_real(copy));
    json_object_set_new(root, "flops_per_site", json_real(FLOPS_PER_SITE));
    json_object_set_new(root, "nrhs_list", ns);
    json_object_set_new(root, "ranks", json_integer(wd_ranks()));
    json_object_set_new(root, "wrap_halo", json_integer(wrap));
    json_object_set_new(root, "timing", json_string(
        gpu ? "CUDA-event medians of the group's kernel calls, summed" : "wall clock of the "
              "group call, median"));
    json_object_set_new(root, "bytes_model", json_string(
        "per output site and right-hand side: spinor in + out (+ x) once each, plus the links "
        "(8 or 6 at the stored size) once per kernel call of the group, divided by N"));
    if (printer && procs)
        printf("process grid: each call includes the halo exchange of all N right-hand sides' "
               "faces; the slowest rank;\nGflops over the global lattice, B/site, GB/s and copy "
               "on one rank's block; halo KiB: the faces one rank sends per call\n");
    if (printer)
        printf("%-28s %-14s %4s %3s %-10s %10s %9s %8s %8s %8s %6s %7s%s%s\n", "variant",
               "lattice", "pad", "N", "kernels", "us/call", "us/RHS", "Gflops", "B/site", "GB/s",
               "copy", "speedup", gpu ? "    wall us" : "", procs ? "  grid     halo KiB" : "");
    int n = 0, failed = 0, skipped = 0;
    const int nmax = list[nlist - 1];
    for (int l = 0; l < nlat; ++l) {
        /* on a grid: this rank's block of the global lattice lat[l] */
        wd_lattice dl;
        memset(&dl, 0, sizeof dl);
        if (procs && wd_lattice_make(&dl, lat[l], procs) != WD_OK) {
            if (printer)
                fprintf(stderr, "wdirac bench dslash: %s\n", wd_last_error());
            failed++;
            continue;
        }
        const int *gdims = lat[l];
        host_fields h;
        const int made = host_make(&h, procs ? dl.local : lat[l],
                                   seed + (uint64_t)(procs ? dl.rank : 0));
        const wd_status hs = made ? WD_OK : wd_fail(WD_ERR_NOMEM, "out of host memory for "
                                                    "%dx%dx%dx%d", gdims[0], gdims[1],
                                                    gdims[2], gdims[3]);
        if ((procs ? wd_backend_agree(hs) : hs) != WD_OK) {
            if (printer)
                fprintf(stderr, "wdirac bench dslash: %s\n", wd_last_error());
            host_free(&h);
            failed++;
            continue;
        }
        for (int p = 0; p < npads; ++p) {
            wd_backend be;
            const wd_backend_kind kind = gpu ? WD_BACKEND_CUDA : WD_BACKEND_CPU;
            wd_status st = procs ? wd_backend_open_lattice(&be, kind, &dl, pads[p], wrap)
                                 : wd_backend_open(&be, kind, h.dims, pads[p]);
            if (st != WD_OK) {
                if (printer)
                    fprintf(stderr, "wdirac bench dslash: %s\n", wd_last_error());
                failed++;
                continue;
            }
            nrhs_fields f;
            wd_gauge g;
            memset(&f, 0, sizeof f);
            memset(&g, 0, sizeof g);
            for (int k = 0; k < wd_variant_count; ++k) {
                const wd_variant *v = &wd_variants[k];
                if (fnmatch(glob, v->name, 0) != 0 || v->nrhs != 1)
                    continue;
                if (v->op != WD_OP_WILSON) {
                    skipped += l == 0 && p == 0;
                    continue;
                }
                st = nrhs_fields_get(&be, &f, v->precision, nmax,
                                     seed + (uint64_t)(procs ? dl.rank : 0), (double *)h.psi);
                if (st == WD_OK && (!g.data || g.precision != v->precision ||
                                    g.recon != v->recon || g.gauge_fix != v->gauge_fix)) {
                    wd_gauge_destroy(&be, &g);
                    st = wd_gauge_create(&be, &g, (const double *)(v->gauge_fix ? h.uf : h.u),
                                         v->precision, v->recon, v->gauge_fix, -1);
                }
                double base = 0;
                if (procs)
                    st = wd_backend_agree(st);
                for (int i = 0; i < nlist && st == WD_OK; ++i) {
                    const int N = list[i];
                    /* the plan a solver gets, then, where kernels of both
                     * forms are built, each form's own plan where it runs
                     * a kernel of the form and differs */
                    static const int forms[4] = {-1, WD_FORM_REGISTERS, WD_FORM_THREADS,
                                                 WD_FORM_SHARED};
                    static const char *form_names[4] = {"any", "registers", "threads",
                                                        "shared"};
                    const int nforms = family_has_forms(v) ? 4 : 1;
                    wd_group_plan timed[4];
                    int ntimed = 0;
                    for (int fi = 0; fi < nforms && st == WD_OK; ++fi) {
                        nrhs_row r;
                        memset(&r, 0, sizeof r);
                        if (fi > 0) {
                            wd_group_plan plan;
                            st = plan_group(&be, v, forms[fi], &g, &f, N, &plan);
                            if (procs)
                                st = wd_backend_agree(st);
                            /* a plan without a kernel of the form is
                             * one-RHS calls, nothing to compare */
                            int seen = 1;
                            for (int c = 0; c < plan.calls; ++c)
                                seen &= wd_variants[plan.variant[c]].nrhs == 1 ||
                                        wd_variants[plan.variant[c]].form != forms[fi];
                            for (int j = 0; j < ntimed; ++j)
                                seen |= same_plan(&plan, &timed[j]);
                            if (st != WD_OK)
                                break;
                            if (seen)
                                continue;
                        }
                        st = time_group(&be, gpu, v, forms[fi], &g, &f, N, reps, &r);
                        if (procs && (st = wd_backend_agree(st)) == WD_OK) {
                            r.us = slowest(&be, r.us);
                            r.us_wall = slowest(&be, r.us_wall);
                        }
                        if (st != WD_OK)
                            break;
                        /* Gflops over the whole lattice, bytes on this block */
                        const double sites = h.volume / 2.0, gsites = wd_volume(gdims) / 2.0;
                        const double halo = procs ? N * halo_bytes_sent(&be, v) : 0;
                        const double spinor =
                            24.0 * v->precision + (v->precision == 2 ? sizeof(float) : 0);
                        const double links =
                            (v->gauge_fix ? 6 : 8) * (double)v->recon * v->precision;
                        const double bytes_site =
                            (spinor * (2 + v->xpay) * N + links * r.plan.calls) / N;
                        const double gflops = wd_variant_flops(k) * N * gsites / r.us / 1e3;
                        const double gbps = bytes_site * N * sites / r.us / 1e3;
                        if (N == 1)
                            base = r.us;
                        const double speedup = base / (r.us / N);
                        char plan[32], wall[16] = "", gridb[40] = "";
                        group_plan_name(&r.plan, r.per_launch, plan, sizeof plan);
                        if (gpu)
                            snprintf(wall, sizeof wall, " %10.2f", r.us_wall);
                        if (procs)
                            snprintf(gridb, sizeof gridb, "  %dx%dx%dx%d %10.1f", dl.procs[0],
                                     dl.procs[1], dl.procs[2], dl.procs[3], halo / 1024);
                        if (printer) {
                            printf("%-28s %4dx%dx%dx%-3d %4d %3d %-10s %10.2f %9.2f %8.1f %8.1f "
                                   "%8.1f %5.0f%% %7.2f%s%s\n", v->name, gdims[0], gdims[1],
                                   gdims[2], gdims[3], pads[p], N, plan, r.us, r.us / N, gflops,
                                   bytes_site, gbps, 100 * gbps / copy, speedup, wall, gridb);
                            fflush(stdout);
                        }
                        json_t *row = json_pack(
                            "{s:s, s:i, s:i, s:i, s:i, s:i, s:[iiii], s:i, s:i, s:s, s:s, "
                            "s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}",
                            "variant", v->name, "precision", v->precision, "recon", v->recon,
                            "gauge_fix", v->gauge_fix, "dagger", v->dagger, "xpay", v->xpay,
                            "dims", gdims[0], gdims[1], gdims[2], gdims[3], "pad", pads[p], "nrhs",
                            N, "kernels", plan, "forms", form_names[fi], "kernel_calls",
                            r.plan.calls, "us_per_call", r.us,
                            "us_per_rhs", r.us / N, "us_wall_per_call", r.us_wall, "gflops", gflops,
                            "bytes_per_site_per_rhs", bytes_site, "bytes_per_rhs", bytes_site * sites,
                            "GBps", gbps, "fraction_of_copy", gbps / copy, "speedup_per_rhs",
                            speedup);
                        if (procs) {
                            json_t *g = json_pack("{s:[iiii], s:[iiii], s:i, s:f}", "grid",
                                                  dl.procs[0], dl.procs[1], dl.procs[2], dl.procs[3],
                                                  "local", dl.local[0], dl.local[1], dl.local[2],
                                                  dl.local[3], "ranks", dl.size,
                                                  "halo_bytes_sent_per_rank", halo);
                            json_object_update(row, g);
                            json_decref(g);
                        }
                        json_array_append_new(res, row);
                        n++;
                        timed[ntimed++] = r.plan;
                    }
                }
                if (st != WD_OK) {
                    if (printer)
                        fprintf(stderr, "wdirac bench dslash: %s on %dx%dx%dx%d: %s\n", v->name,
                                gdims[0], gdims[1], gdims[2], gdims[3], wd_last_error());
                    failed++;
                }
            }
            wd_gauge_destroy(&be, &g);
            nrhs_fields_free(&be, &f);
            wd_backend_close(&be);
        }
        host_free(&h);
    }
    if (n && printer)
        nrhs_usage_note(stdout, gpu);
    else if (!n && printer)
        fprintf(stderr, "wdirac bench dslash: no built one-RHS Wilson variant (dslash_*_n1) "
                "matches '%s'\n", glob);
    if (skipped && printer)
        fprintf(stderr, "wdirac bench dslash: --nrhs times the Wilson dslash_* variants; %d "
                "clover variant%s matching '%s' left out\n", skipped, skipped > 1 ? "s" : "", glob);
    json_object_set_new(root, "results", res);
    int rc = failed || !n ? WD_EXIT_FAILED : WD_EXIT_OK;
    if (printer && json_path && n && json_dump_file(root, json_path, JSON_INDENT(1)) != 0) {
        fprintf(stderr, "wdirac bench dslash: cannot write %s\n", json_path);
        rc = WD_EXIT_FAILED;
    }
    json_decref(root);
    return rc;
}

int wd_bench_dslash_main(int argc, char **argv)
{
    int lat[MAX_LATTICES][4], nlat = 0, pads[MAX_PADS], npads = 0, reps = 0, sweep = 0;
    uint64_t seed = 1;
    const char *glob = "*", *json_path = NULL, *backend = "auto", *tune_cache = NULL;
    int procs[4] = {0, 0, 0, 0}, grid_given = 0, sweep_nccl = 0, wrap = 0;
    int nrhs[MAX_NRHS_LIST], nnrhs = 0;
    for (int k = 0; k < argc; ++k) {
        if (!strcmp(argv[k], "--dims") && k + 4 < argc && nlat < MAX_LATTICES) {
            for (int mu = 0; mu < 4; ++mu)
                lat[nlat][mu] = atoi(argv[++k]);
            nlat++;
        } else if (!strcmp(argv[k], "--paper-sweep")) {
            sweep = 1;
        } else if (!strcmp(argv[k], "--kernels") && k + 1 < argc) {
            glob = argv[++k];
        } else if (!strcmp(argv[k], "--reps") && k + 1 < argc) {
            reps = atoi(argv[++k]);
        } else if (!strcmp(argv[k], "--pad") && k + 1 < argc && npads < MAX_PADS) {
            pads[npads++] = atoi(argv[++k]);
        } else if (!strcmp(argv[k], "--seed") && k + 1 < argc) {
            seed = strtoull(argv[++k], NULL, 0);
        } else if (!strcmp(argv[k], "--json") && k + 1 < argc) {
            json_path = argv[++k];
        } else if (!strcmp(argv[k], "--tune-cache") && k + 1 < argc) {
            tune_cache = argv[++k];
        } else if (!strcmp(argv[k], "--backend") && k + 1 < argc) {
            backend = argv[++k];
        } else if (!strcmp(argv[k], "--grid")) {
            if (!wd_cli_parse_grid("wdirac bench dslash", argc, argv, &k, procs))
                return WD_EXIT_USAGE;
            grid_given = 1;
        } else if (!strcmp(argv[k], "--nccl-sweep")) {
            sweep_nccl = 1;
        } else if (!strcmp(argv[k], "--nrhs") && k + 1 < argc) {
            if ((nnrhs = parse_nrhs_list(argv[++k], nrhs)) < 0) {
                fprintf(stderr, "wdirac bench dslash: --nrhs takes a comma-separated list of "
                        "right-hand-side counts from 1 to %d (at most %d counts with the N = 1 "
                        "baseline), got '%s'\n", MAX_NRHS_ARG, MAX_NRHS_LIST, argv[k]);
                return WD_EXIT_USAGE;
            }
        } else if (!strcmp(argv[k], "--wrap-halo") && k + 1 < argc) {
            const char *d = argv[++k];
            for (; *d; ++d) {
                const char *axes = "XYZT", *at = strchr(axes, *d);
                if (!at) {
                    fprintf(stderr, "wdirac bench dslash: --wrap-halo takes letters of XYZT\n");
                    return WD_EXIT_USAGE;
                }
                wrap |= 1 << (at - axes);
            }
            grid_given = 1;
        } else if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "wdirac bench dslash: unknown or incomplete option '%s'\n", argv[k]);
            usage(stderr);
            return 2;
        }
    }
    const int on_grid = grid_given || wd_ranks() > 1;
    if (nnrhs && (sweep || tune_only || sweep_nccl)) {
        if (wd_cli_printer())
            fprintf(stderr, "wdirac bench dslash: --nrhs times --dims lattices (not with "
                    "--paper-sweep, --nccl-sweep or tune)\n");
        return WD_EXIT_USAGE;
    }
    if (on_grid && !nnrhs) {
        if (!strcmp(backend, "cpu") || sweep || npads > 1 || tune_only) {
            if (wd_cli_printer())
                fprintf(stderr, "wdirac bench dslash: on a process grid the benchmark times the "
                        "CUDA backend on --dims lattices with one --pad\n");
            return WD_EXIT_USAGE;
        }
        if (!nlat) {
            const int d32[4] = {32, 32, 32, 64};
            memcpy(lat[nlat++], d32, sizeof lat[0]);
        }
        return bench_grid(lat, nlat, procs, glob, reps ? reps : 100, seed, npads ? pads[0] : 0,
                          json_path, tune_cache, sweep_nccl, wrap);
    }
    if (on_grid && npads > 1) {
        if (wd_cli_printer())
            fprintf(stderr, "wdirac bench dslash: on a process grid the benchmark takes one "
                    "--pad\n");
        return WD_EXIT_USAGE;
    }
    int gpu;
    if (!strcmp(backend, "auto"))
        gpu = wd_cuda_available();
    else if (!strcmp(backend, "cuda") || !strcmp(backend, "gpu"))
        gpu = 1;
    else if (!strcmp(backend, "cpu"))
        gpu = 0;
    else {
        fprintf(stderr, "wdirac bench dslash: --backend must be cpu, cuda or auto\n");
        return 2;
    }
    char device[256];
    double copy;
    /* on a grid every rank takes its own GPU before any other CUDA work */
    if (gpu && on_grid && wd_backend_cuda_select() != WD_OK) {
        if (wd_cli_printer())
            fprintf(stderr, "wdirac bench dslash: %s\n", wd_last_error());
        return 2;
    }
    if (gpu) {
        wd_cuda_info info;
        if (!wd_cuda_available() || wd_cuda_device_info(&info) != WD_OK) {
            fprintf(stderr, "wdirac bench dslash: no usable GPU: %s\n",
                    wd_cuda_available() ? wd_last_error() : "none found, or no CUDA in this build");
            return 2;
        }
        wd_bench_device(device, sizeof device, 1);
        wd_tune_set_cache(tune_cache);
        if (wd_cuda_copy_gbps((size_t)1 << 30, 20, &copy) != WD_OK) {
            fprintf(stderr, "wdirac bench dslash: %s\n", wd_last_error());
            return 1;
        }
    } else {
        wd_bench_device(device, sizeof device, 0);
        copy = host_copy_gbps();
    }
    if (!reps)
        reps = gpu ? 100 : 10;
    if (!npads)
        pads[npads++] = 0;
    if (!nlat && !sweep) {
        const int d16[4] = {16, 16, 16, 16}, d24[4] = {24, 24, 24, 64}, d32[4] = {32, 32, 32, 64};
        memcpy(lat[nlat++], gpu ? d24 : d16, sizeof lat[0]);
        if (gpu)
            memcpy(lat[nlat++], d32, sizeof lat[0]);
    }
    for (int l = 0; l < nlat; ++l)
        if (wd_check_dims(lat[l]) != WD_OK) {
            fprintf(stderr, "wdirac bench dslash: %s\n", wd_last_error());
            return 2;
        }
    if (reps < 1) {
        fprintf(stderr, "wdirac bench dslash: --reps must be >= 1\n");
        return 2;
    }
    const int sweep_t0 = 8, sweep_dt = 8, sweep_t1 = 128;
    const int nsweep = sweep ? (sweep_t1 - sweep_t0) / sweep_dt + 1 : 0;
    const int nconf = (nlat + nsweep) * npads;
    bench_row *rows = calloc((size_t)wd_variant_count * nconf, sizeof *rows);
    if (!rows) {
        fprintf(stderr, "wdirac bench dslash: out of memory\n");
        return 3;
    }

    printf("wdirac bench dslash  backend %s  device \"%s\"  threads %d\n", gpu ? "cuda" : "cpu",
           device, omp_get_max_threads());
    printf("seed %llu  reps %d  commit %s  build %s\n", (unsigned long long)seed, reps,
           WD_GIT_COMMIT, wd_tune_build_id());
    if (gpu && wd_tune_cache_note()[0])
        printf("%s\n", wd_tune_cache_note());
    printf("copy bandwidth %.1f GB/s (read + write, same run)\n\n", copy);
    if (nnrhs) {
        free(rows);
        return bench_nrhs(gpu, lat, nlat, pads, npads, glob, nrhs, nnrhs, reps, seed, device,
                          copy, json_path, on_grid ? procs : NULL, wrap);
    }
    if (tune_only)
        printf("tune cache %s\n%-28s %-14s %4s %5s\n", getenv("WDIRAC_TUNE_CACHE") ? getenv("WDIRAC_TUNE_CACHE") : "(default)",
               "variant", "lattice", "pad", "block");
    else
        printf("%-28s %-14s %4s %5s %10s %9s %8s %8s %6s %6s\n", "variant", "lattice", "pad",
               "block", "us/call", "us/site", "Gflops", "GB/s", "copy", "ratio");

    int n = 0, failed = 0;
    gpu_cache cache;
    memset(&cache, 0, sizeof cache);
    for (int l = 0; l < nlat + (sweep ? 1 : 0); ++l) {
        host_fields big;
        const int sweep_dims[4] = {24, 24, 24, sweep_t1};
        const int *dims = l < nlat ? lat[l] : sweep_dims;
        if (!host_make(&big, dims, seed)) {
            fprintf(stderr, "wdirac bench dslash: out of host memory for %dx%dx%dx%d\n", dims[0],
                    dims[1], dims[2], dims[3]);
            failed++;
            continue;
        }
        const int nt = l < nlat ? 1 : nsweep;
        for (int s = 0; s < nt; ++s) {
            host_fields sub;
            const host_fields *h = &big;
            if (l >= nlat) {
                if (!host_prefix(&sub, &big, sweep_t0 + s * sweep_dt)) {
                    failed++;
                    continue;
                }
                h = &sub;
            }
            for (int p = 0; p < npads; ++p) {
                double base_us = 0;
                for (int k = 0; k < wd_variant_count; ++k) {
                    const wd_variant *v = &wd_variants[k];
                    if (fnmatch(glob, v->name, 0) != 0 || (l >= nlat && (v->dagger || v->xpay)))
                        continue;
                    if (v->op != WD_OP_WILSON && !big.clover) {
                        if (!host_clover(&big, seed)) {
                            failed++;
                            continue;
                        }
                        if (h == &sub)
                            sub.clover = big.clover;
                    }
                    bench_row *r = &rows[n];
                    r->variant = k;
                    memcpy(r->dims, h->dims, sizeof r->dims);
                    r->pad = pads[p];
                    const int ok = gpu ? bench_gpu(k, h, pads[p], reps, &cache, r)
                                       : bench_cpu(k, h, pads[p], reps, r);
                    if (!ok) {
                        failed++;
                        continue;
                    }
                    if (tune_only) {
                        printf("%-28s %4dx%dx%dx%-3d %4d %5d\n", v->name, r->dims[0], r->dims[1],
                               r->dims[2], r->dims[3], r->pad, r->block);
                        n++;
                        continue;
                    }
                    const double sites = h->volume / 2.0;
                    r->us_site = r->us / sites / v->nrhs;   /* per site and right-hand side */
                    r->gflops = wd_variant_flops(k) * v->nrhs * sites / r->us / 1e3;
                    r->gbps = variant_bytes_per_site(v) * sites / r->us / 1e3;
                    if (!base_us)
                        base_us = r->us;
                    print_row(r, copy, base_us);
                    n++;
                }
            }
            gpu_cache_free(&cache);
            if (h == &sub)
                free(sub.uf);
        }
        host_free(&big);
    }
    if (n && !tune_only)
        printf("\nratio: speed per right-hand side relative to the first row of the same lattice "
               "and padding; us/call: all N right-hand sides of a _n<N> kernel, us/site: per site "
               "and right-hand side;\nGB/s and copy: the fewest-bytes model of a call (each link "
               "once, each right-hand side's spinors once) over the copy bandwidth\n");
    else
        fprintf(stderr, "wdirac bench dslash: no built variant matches '%s'\n", glob);
    int rc = failed || !n ? 1 : 0;
    if (json_path && n && !tune_only && !write_json(json_path, gpu ? "cuda" : "cpu", device, copy, seed, reps,
                                      rows, n))
        rc = 1;
    free(rows);
    return rc;
}

int wd_tune_main(int argc, char **argv)
{
    for (int k = 0; k < argc; ++k)
        if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
            printf("usage: wdirac tune [--dims X Y Z T]... [--pad N]... [--kernels GLOB] "
                   "[--tune-cache FILE]\n"
                   "  tunes every selected variant on the GPU for each lattice and padding\n"
                   "  (default 24^3x64 and 32^3x64, pad 0) and stores the best launch\n"
                   "  configurations in the tune cache, so later runs start tuned\n");
            return 0;
        }
    char **args = malloc((size_t)(argc + 3) * sizeof *args);
    if (!args)
        return 3;
    args[0] = "--backend";
    args[1] = "cuda";
    for (int k = 0; k < argc; ++k)
        args[k + 2] = argv[k];
    tune_only = 1;
    const int rc = wd_bench_dslash_main(argc + 2, args);
    tune_only = 0;
    free(args);
    return rc;
}
