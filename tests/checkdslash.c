/*
 * checkdslash: every built Dslash variant against the float64 reference.
 *
 * For each variant of the registry, on fresh random fields (seed printed,
 * settable with --seed), several lattice shapes (cubic and not), both time
 * boundary conditions, random SU(3) links and a smooth near-unit field:
 * pack the host fields into the variant's layout (padded sub-arrays), poison
 * the output and its padding, run the variant on the CPU backend, check the
 * padding is untouched and every site was written, unpack, and compare with
 * ref_dslash_parity (plus x for xpay).  Gauge-fixed variants run on the field
 * transformed to temporal gauge by wd_temporal_gauge, with the source
 * transformed by g and the result by g^dagger, and must reproduce D(U).
 *
 * Clover kernels: dslashcl_* apply C D, C = (d + T)^-1 the inverse clover
 * matrix of the reference (ref_clover.h: T from the same links, random
 * c_sw and d), and clover_* apply C = d + T alone at the output parity; the
 * reference's 12x12 matrices are cut into the stored chiral blocks here
 * (their off-block entries must vanish), and the reference result is
 * ref_clover_apply of the reference Dslash.  Gauge-fixed clover variants
 * get C of the transformed links, which is g C g^dagger.
 *
 * Multi-RHS variants (_n2, _n4: N right-hand sides a thread; _t12: a thread
 * a site and right-hand side) run on N different random sources (and x)
 * at once, and each right-hand side is compared with its own reference
 * and, where the one-RHS variant of the same axes is built, with that
 * variant applied to it alone on the same packed input and backend: the
 * packed output (and half-precision norms) bit for bit (column one=: "same",
 * else the relative L2 difference; "-" where the one-RHS variant is not
 * built).  The one exception allowed is documented in docs/generator.md:
 * half precision on the GPU, within 1e-5 of the 16-bit resolution.
 *
 * With --backend gpu the packed fields (poisoned output included) are copied
 * to the GPU, the variant runs there with its autotuned block size, and the
 * packed output comes back; the CPU backend also runs on the same packed
 * input and the two results must agree (column cpu=) within the tolerance.
 *
 * One line per variant: worst relative L2 error, worst max error (relative to
 * max |reference|), the tolerance; "N of M failed" last.  Exit 0 when all
 * pass, 1 otherwise, 77 for --backend gpu without a usable GPU.  A built
 * variant left untested fails the run.
 *
 *   checkdslash [--backend cpu|gpu] [--block N] [--seed N] [--kernels GLOB] [--verbose]
 *
 * --block N launches with N threads per block instead of the tuned size.
 */
#include <complex.h>
#include <fnmatch.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_rt.h"
#include "gauge_tools.h"
#include "ref_clover.h"
#include "ref_wilson.h"
#include "wd_tune.h"
#include "wd_gpu.h"
#include "wd_layout.h"
#include "wd_operator.h"

/*
 * Tolerances on relative L2 and relative max error, per precision (bytes per
 * real), set at about 10x the worst measured over 5 seeds x 7 cases x 24
 * variants per precision (gcc 12, x86-64): double 3e-15, single 1.5e-7,
 * half 5.3e-5 (the 16-bit mantissa).  Recon 8 divides by
 * N^2 = |a2|^2 + |a3|^2, which a Haar-random link can make small, and uses
 * float sin/cos and sqrt: worst measured double 6.9e-14, single 7.3e-6,
 * half 2.7e-3 (that one on the smooth field), hence its factor 50.
 */
static double tolerance(int precision, int recon)
{
    const double tol = precision == 8 ? 2e-14 : precision == 4 ? 1e-6 : 3e-4;
    return recon == 8 ? 50 * tol : tol;
}

typedef struct field_case {
    int dims[4];
    int tbc;
    int smooth;
} field_case;

static const field_case cases[] = {
    {{4, 4, 4, 4}, -1, 0},
    {{4, 6, 8, 10}, -1, 0},
    {{4, 6, 8, 10}, +1, 0},
    {{6, 4, 4, 8}, -1, 0},
    {{6, 4, 4, 8}, +1, 0},
    {{4, 4, 6, 4}, -1, 1},
    {{6, 4, 4, 8}, +1, 1},
};
#define NCASES (int)(sizeof cases / sizeof cases[0])
/* Smooth field: links exp(i eps H) with eps small enough that |a2|, |a3|
 * are O(eps): the regime where recon 8 is fragile. */
#define SMOOTH_EPS 0.1
#define PAD 5
#define POISON 0xFF

typedef struct errors {
    double rel_l2, rel_max, cpu_diff;
    int unwritten, pad_touched, gpu_failed;
    double one_diff;    /* multi-RHS: vs one at a time (0: bit for bit; -1: not built) */
} errors;

static int use_gpu;
static int fixed_block; /* --block N: no tuning (compute-sanitizer runs) */

/* Copy the packed fields to the GPU, run variant k there, copy the packed
 * output (and its norms) back over the host buffers. */
static int run_on_gpu(int k, wd_dslash_args *host_args, size_t fbytes, size_t nfloats,
                      const wd_gauge_layout *gl, const wd_clover_layout *cl)
{
    /* fbytes: each spinor buffer (every right-hand side); nfloats: the norms
     * of each of in, out, x, which lie back to back from in_norm */
    void *g = NULL, *i = NULL, *x = NULL, *o = NULL, *n = NULL, *c = NULL, *cn = NULL;
    const size_t nb = 3 * nfloats * sizeof(float);
    wd_status st = wd_cuda_malloc(&g, gl->bytes, "gauge");
    if (st == WD_OK && cl) {
        st = wd_cuda_malloc(&c, cl->bytes, "clover");
        if (st == WD_OK && cl->norm_bytes)
            st = wd_cuda_malloc(&cn, cl->norm_bytes, "clover norms");
        if (st == WD_OK) st = wd_cuda_h2d(c, host_args->clover, cl->bytes);
        if (st == WD_OK && cn) st = wd_cuda_h2d(cn, host_args->clover_norm, cl->norm_bytes);
    }
    if (st == WD_OK) st = wd_cuda_malloc(&i, fbytes, "in");
    if (st == WD_OK) st = wd_cuda_malloc(&x, fbytes, "x");
    if (st == WD_OK) st = wd_cuda_malloc(&o, fbytes, "out");
    if (st == WD_OK) st = wd_cuda_malloc(&n, nb, "norms");
    float *hn = host_args->in_norm ? (float *)host_args->in_norm : NULL;
    if (st == WD_OK) st = wd_cuda_h2d(g, host_args->gauge, gl->bytes);
    if (st == WD_OK) st = wd_cuda_h2d(i, host_args->in, fbytes);
    if (st == WD_OK) st = wd_cuda_h2d(x, host_args->x, fbytes);
    if (st == WD_OK) st = wd_cuda_h2d(o, host_args->out, fbytes);
    if (st == WD_OK) st = wd_cuda_h2d(n, hn, nb);
    if (st == WD_OK) {
        wd_dslash_args a = *host_args;
        a.gauge = g;
        a.in = i;
        a.x = x;
        a.out = o;
        a.in_norm = (float *)n;
        a.out_norm = (float *)n + nfloats;
        a.x_norm = (float *)n + 2 * nfloats;
        a.clover = c;
        a.clover_norm = (float *)cn;
        st = wd_gpu_dslash(k, &a, PAD, fixed_block);
    }
    if (st == WD_OK) st = wd_cuda_d2h(host_args->out, o, fbytes);
    if (st == WD_OK) st = wd_cuda_d2h(hn, n, nb);
    if (st != WD_OK)
        fprintf(stderr, "%s on the GPU: %s\n", wd_variants[k].name, wd_last_error());
    wd_cuda_free(g), wd_cuda_free(i), wd_cuda_free(x), wd_cuda_free(o), wd_cuda_free(n);
    wd_cuda_free(c), wd_cuda_free(cn);
    return st == WD_OK;
}

static int all_bytes(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; ++i)
        if (p[i] != v)
            return 0;
    return 1;
}

/* bytes of the padding between sub-arrays of a packed spinor field */
static int pad_intact(const wd_spinor_layout *l, const unsigned char *buf)
{
    const size_t el = (size_t)l->width * l->precision;
    for (int k = 0; k < l->elements; ++k) {
        const unsigned char *p = buf + ((size_t)k * l->stride + l->volume_cb) * el;
        if (!all_bytes(p, (size_t)(l->stride - l->volume_cb) * el, POISON))
            return 0;
    }
    return 1;
}

static int parity_of(const int dims[4], size_t site)
{
    size_t r = site;
    int sum = 0;
    for (int mu = 0; mu < 4; ++mu) {
        sum += (int)(r % (size_t)dims[mu]);
        r /= (size_t)dims[mu];
    }
    return sum & 1;
}

/*
 * The reference clover field of links u: c12 = d + T, or its inverse, per
 * site (12x12, ref_clover.h), and the same cut into the stored chiral
 * blocks (wd_physics.h order).  Returns 0 when T has entries outside the
 * chiral blocks or a matrix is singular.
 */
static int make_clover(double complex *c12, double *blocks, const double complex *u,
                       const int dims[4], double csw, double d, int inverse)
{
    const size_t vol = wd_volume(dims);
    double complex *fhat = malloc(vol * 54 * sizeof *fhat);
    double complex *t = malloc(vol * 144 * sizeof *t);
    int ok = fhat && t;
    if (ok) {
        ref_clover_fhat(fhat, u, dims);
        ref_clover_term(t, fhat, vol, csw);
        if (inverse)
            ok = ref_clover_invert(c12, t, vol, d) < 0;
        else
            for (size_t n = 0; n < vol; ++n)
                for (int i = 0; i < 144; ++i)
                    c12[144 * n + i] = t[144 * n + i] + (i % 13 == 0 ? d : 0);
    }
    for (size_t n = 0; ok && n < vol; ++n) {
        const double complex *m = c12 + 144 * n;
        double *q = blocks + WD_CLOVER_SITE_REALS * n;
        for (int i = 0; i < 12; ++i)
            for (int j = 0; j < 12; ++j) {
                const int bi = (i / 3 == wd_chiral_spins[1][0] || i / 3 == wd_chiral_spins[1][1]);
                const int bj = (j / 3 == wd_chiral_spins[1][0] || j / 3 == wd_chiral_spins[1][1]);
                if (bi != bj && cabs(m[12 * i + j]) > 1e-13)
                    ok = 0;
            }
        for (int b = 0; b < 2; ++b) {
            /* block index 3 (spin - first spin of the block) + colour */
            int at[6];
            for (int i = 0; i < 6; ++i)
                at[i] = 3 * wd_chiral_spins[b][i / 3] + i % 3;
            double *qb = q + b * WD_CLOVER_BLOCK_REALS;
            for (int i = 0; i < 6; ++i)
                qb[i] = creal(m[12 * at[i] + at[i]]);
            for (int e = 0; e < 15; ++e) {
                const int i = at[wd_clover_lower_pairs[e][0]], j = at[wd_clover_lower_pairs[e][1]];
                const double complex z = m[12 * i + j];
                qb[6 + 2 * e] = creal(z);
                qb[6 + 2 * e + 1] = cimag(z);
            }
        }
    }
    free(fhat);
    free(t);
    return ok;
}

/* Multi-RHS variant k's packed output obuf (norms out_norm) against the
 * one-RHS variant of the same axes applied to each right-hand side of args
 * alone, on the same backend: 0 when every byte of every right-hand side's
 * output (and half-precision norms) is the same, else the worst relative L2
 * difference of the unpacked values; -1 when no one-RHS variant is built,
 * INFINITY when a run fails. */
static double one_at_a_time(int k, const wd_dslash_args *args, const unsigned char *obuf,
                            const float *out_norm, const wd_spinor_layout *sl,
                            const wd_gauge_layout *gl, const wd_clover_layout *cl,
                            const int dims[4], int parity)
{
    const wd_variant *v = &wd_variants[k];
    const int k1 = wd_variant_find_nrhs(v->op, v->precision, v->recon, v->gauge_fix, v->dagger,
                                        v->xpay, 1);
    if (k1 < 0)
        return -1;
    const size_t fb = sl->bytes, ns = (size_t)sl->stride, vol = wd_volume(dims);
    unsigned char *o1 = malloc(fb);
    float *n1 = malloc(3 * ns * sizeof *n1);
    double complex *a = malloc(vol * 12 * sizeof *a), *b = malloc(vol * 12 * sizeof *b);
    double worst = 0;
    if (!o1 || !n1 || !a || !b)
        worst = INFINITY;
    for (int q = 0; q < v->nrhs && worst < INFINITY; ++q) {
        /* right-hand side q alone; norms in, out, x back to back (run_on_gpu) */
        wd_dslash_args a1 = *args;
        memcpy(n1, (const float *)args->in_norm + q * ns, ns * sizeof *n1);
        memcpy(n1 + 2 * ns, (const float *)args->x_norm + q * ns, ns * sizeof *n1);
        for (size_t i = 0; i < ns; ++i)
            n1[ns + i] = NAN;
        memset(o1, POISON, fb);
        a1.in = (const unsigned char *)args->in + q * fb;
        a1.x = (const unsigned char *)args->x + q * fb;
        a1.in_norm = n1;
        a1.out_norm = n1 + ns;
        a1.x_norm = n1 + 2 * ns;
        a1.out = o1;
        a1.groups = 0;
        if (use_gpu) {
            if (!run_on_gpu(k1, &a1, fb, ns, gl, cl)) {
                worst = INFINITY;
                break;
            }
        } else {
            wd_variants[k1].cpu(&a1);
        }
        const unsigned char *oq = obuf + q * fb;
        const float *nq = out_norm + q * ns;
        if (!memcmp(oq, o1, fb) && (v->precision != 2 || !memcmp(nq, n1 + ns, ns * sizeof *n1)))
            continue;
        memset(a, 0, vol * 12 * sizeof *a);
        memset(b, 0, vol * 12 * sizeof *b);
        wd_unpack_spinor(sl, a, oq, nq, dims, parity);
        wd_unpack_spinor(sl, b, o1, n1 + ns, dims, parity);
        double d = 0, w = 0;
        for (size_t i = 0; i < vol * 12; ++i) {
            d += pow(cabs(a[i] - b[i]), 2);
            w += pow(cabs(b[i]), 2);
        }
        /* a difference below double's resolution still is one */
        const double rel = w > 0 && isfinite(d) ? sqrt(d / w) : INFINITY;
        worst = fmax(worst, rel > 0 ? rel : 1e-300);
    }
    free(o1), free(n1), free(a), free(b);
    return worst;
}

/* Run one variant on one case; compare with the reference.  A multi-RHS
 * variant (nrhs N > 1) gets N different random inputs (and x), stacked
 * rhs_stride elements apart, and each output is judged on its own. */
static int run_case(int k, const field_case *fc, wd_rng *rng, errors *e)
{
    const wd_variant *v = &wd_variants[k];
    const int *dims = fc->dims;
    const int N = v->nrhs;
    const size_t vol = wd_volume(dims), nc = vol * 12 * (size_t)N;
    int ok = 0;
    double complex *u = malloc(vol * 36 * sizeof *u);
    double complex *uf = malloc(vol * 36 * sizeof *uf);
    double complex *g = malloc(vol * 9 * sizeof *g);
    /* right-hand side q of each host field at q * vol * 12 */
    double complex *in = malloc(nc * sizeof *in);
    double complex *x = malloc(nc * sizeof *x);
    double complex *ref = malloc(nc * sizeof *ref);
    double complex *got = malloc(nc * sizeof *got);
    double complex *cpu = malloc(nc * sizeof *cpu);
    const int clover = v->op != WD_OP_WILSON, hopping = v->op != WD_OP_CLOVER;
    double complex *c12 = clover ? malloc(vol * 144 * sizeof *c12) : NULL;
    double *blocks = clover ? malloc(vol * WD_CLOVER_SITE_REALS * sizeof *blocks) : NULL;
    unsigned char *cbuf = NULL;
    float *cnorm = NULL;
    wd_spinor_layout sl;
    wd_gauge_layout gl;
    wd_clover_layout cl;
    if (wd_spinor_layout_make(&sl, dims, v->precision, PAD) != WD_OK ||
        wd_gauge_layout_make(&gl, dims, v->precision, hopping ? v->recon : 18, v->gauge_fix,
                             PAD) != WD_OK ||
        wd_clover_layout_make(&cl, dims, v->precision, PAD) != WD_OK) {
        fprintf(stderr, "layout: %s\n", wd_last_error());
        goto out;
    }
    /* N fields of the layout back to back; norms: in, out, x, N each */
    const size_t fb = sl.bytes, ns = (size_t)sl.stride;
    unsigned char *gbuf = malloc(gl.bytes), *ibuf = malloc(N * fb);
    unsigned char *obuf = malloc(N * fb), *xbuf = malloc(N * fb);
    float *norms = malloc(3 * N * ns * sizeof(float));
    if (clover) {
        cbuf = malloc(cl.bytes);
        cnorm = malloc(cl.norm_bytes + sizeof(float));
    }
    if (!u || !uf || !g || !in || !x || !ref || !got || !cpu || !gbuf || !ibuf || !obuf || !xbuf ||
        !norms || (clover && (!c12 || !blocks || !cbuf || !cnorm))) {
        fprintf(stderr, "out of memory\n");
        goto out_bufs;
    }

    if (fc->smooth)
        wd_gauge_smooth(u, dims, SMOOTH_EPS, rng);
    else
        wd_gauge_random(u, dims, rng);
    for (int q = 0; q < N; ++q) {
        wd_spinor_random(in + q * vol * 12, dims, rng);
        wd_spinor_random(x + q * vol * 12, dims, rng);
    }
    const int parity = (int)(wd_rng_u64(rng) & 1);
    const int dag = v->dagger;
    const double a = -0.1 - 0.5 * wd_rng_uniform(rng);

    /* reference on the original field */
    const double csw = 1 + wd_rng_uniform(rng), diag = 4 + 0.4 * wd_rng_uniform(rng);
    if (clover && !make_clover(c12, blocks, u, dims, csw, diag, hopping)) {
        fprintf(stderr, "%s: the reference clover field is singular or not block diagonal\n",
                v->name);
        goto out_bufs;
    }
    for (int q = 0; q < N; ++q) {
        double complex *rq = ref + q * vol * 12, *gq = got + q * vol * 12;
        const double complex *iq = in + q * vol * 12, *xq = x + q * vol * 12;
        if (hopping)
            ref_dslash_parity(rq, u, iq, dims, fc->tbc, dag, parity);
        else
            memcpy(rq, iq, vol * 12 * sizeof *rq);
        if (clover) {
            ref_clover_apply(gq, c12, rq, vol, 0);
            memcpy(rq, gq, vol * 12 * sizeof *rq);
        }
        if (v->xpay)
            for (size_t i = 0; i < vol * 12; ++i)
                if (parity_of(dims, i / 12) == parity)
                    rq[i] = xq[i] + a * rq[i];
    }

    /* the variant's input: in temporal gauge for gf1 */
    memcpy(uf, u, vol * 36 * sizeof *u);
    if (v->gauge_fix) {
        wd_temporal_gauge(g, u, dims);
        wd_gauge_transform(uf, g, dims);
        for (int q = 0; q < N; ++q) {
            wd_spinor_transform(in + q * vol * 12, g, dims, 0);
            wd_spinor_transform(x + q * vol * 12, g, dims, 0);
        }
    }
    memset(gbuf, POISON, gl.bytes);
    if (hopping)
        wd_pack_gauge(&gl, gbuf, uf, dims);
    if (clover) {
        /* the kernel's clover field: of the transformed links for gf1 */
        if (v->gauge_fix && !make_clover(c12, blocks, uf, dims, csw, diag, hopping)) {
            fprintf(stderr, "%s: the gauge-fixed clover field is singular\n", v->name);
            goto out_bufs;
        }
        memset(cbuf, POISON, cl.bytes);
        wd_pack_clover(&cl, cbuf, cnorm, blocks, dims, parity);
    }
    float *in_norm = norms, *out_norm = norms + N * ns, *x_norm = norms + 2 * N * ns;
    memset(obuf, POISON, N * fb);
    for (size_t i = 0; i < N * ns; ++i)
        out_norm[i] = NAN;
    for (int q = 0; q < N; ++q) {
        wd_pack_spinor(&sl, ibuf + q * fb, in_norm + q * ns, in + q * vol * 12, dims,
                       hopping ? 1 - parity : parity);
        wd_pack_spinor(&sl, xbuf + q * fb, x_norm + q * ns, x + q * vol * 12, dims, parity);
    }

    wd_dslash_args args;
    memset(&args, 0, sizeof args);
    wd_dslash_args_set(&args, &sl, &gl, dims, parity, fc->tbc);
    args.out = obuf;
    args.out_norm = out_norm;
    args.in = ibuf;
    args.in_norm = in_norm;
    args.x = xbuf;
    args.x_norm = x_norm;
    args.gauge = gbuf;
    args.a = a;
    args.clover = cbuf;
    args.clover_norm = cnorm;
    args.clover_stride = cl.stride;
    args.rhs_stride = (long)(fb / ((size_t)sl.width * sl.precision));
    args.rhs_norm_stride = (int)ns;
    for (size_t i = 0; i < nc; ++i)
        got[i] = cpu[i] = ref[i];  /* the other parity compares equal by construction */
    if (use_gpu) {
        /* the CPU backend on the same packed input, for the agreement check */
        wd_dslash_args ca = args;
        unsigned char *cob = malloc(N * fb);
        float *con = malloc(N * ns * sizeof(float));
        if (!cob || !con) {
            free(cob), free(con);
            goto out_bufs;
        }
        ca.out = cob;
        ca.out_norm = con;
        v->cpu(&ca);
        for (int q = 0; q < N; ++q)
            wd_unpack_spinor(&sl, cpu + q * vol * 12, cob + q * fb, con + q * ns, dims, parity);
        free(cob), free(con);
        if (!run_on_gpu(k, &args, N * fb, N * ns, &gl, clover ? &cl : NULL)) {
            e->gpu_failed++;
            goto out_bufs;
        }
    } else {
        v->cpu(&args);
    }

    e->one_diff = N > 1 && hopping ? one_at_a_time(k, &args, obuf, out_norm, &sl, &gl,
                                                   clover ? &cl : NULL, dims, parity)
                                   : -1;
    double num = 0, den = 0, maxerr = 0, maxref = 0, cnum = 0, cden = 0;
    for (int q = 0; q < N; ++q) {
        double complex *gq = got + q * vol * 12;
        const double complex *rq = ref + q * vol * 12, *cq = cpu + q * vol * 12;
        e->pad_touched += !pad_intact(&sl, obuf + q * fb);
        wd_unpack_spinor(&sl, gq, obuf + q * fb, out_norm + q * ns, dims, parity);
        if (use_gpu)
            for (size_t i = 0; i < vol * 12; ++i) {
                cnum += pow(cabs(gq[i] - cq[i]), 2);
                cden += pow(cabs(cq[i]), 2);
            }
        if (v->gauge_fix)
            wd_spinor_transform(gq, g, dims, 1);
        for (size_t i = 0; i < vol * 12; ++i) {
            if (parity_of(dims, i / 12) != parity)
                continue;
            if (!isfinite(creal(gq[i])) || !isfinite(cimag(gq[i]))) {
                e->unwritten++;
                continue;
            }
            const double d = cabs(gq[i] - rq[i]), r = cabs(rq[i]);
            num += d * d;
            den += r * r;
            maxerr = fmax(maxerr, d);
            maxref = fmax(maxref, r);
        }
    }
    if (use_gpu)
        e->cpu_diff = fmax(e->cpu_diff, cden > 0 ? sqrt(cnum / cden) : INFINITY);
    if (den == 0 || maxref == 0) {
        fprintf(stderr, "%s: reference output is zero: the test would prove nothing\n", v->name);
        goto out_bufs;
    }
    e->rel_l2 = fmax(e->rel_l2, sqrt(num / den));
    e->rel_max = fmax(e->rel_max, maxerr / maxref);
    ok = 1;
out_bufs:
    free(cbuf);
    free(cnorm);
    free(gbuf);
    free(ibuf);
    free(obuf);
    free(xbuf);
    free(norms);
out:
    free(c12);
    free(blocks);
    free(u);
    free(uf);
    free(g);
    free(in);
    free(x);
    free(ref);
    free(got);
    free(cpu);
    return ok;
}

int main(int argc, char **argv)
{
    uint64_t seed = (uint64_t)time(NULL);
    const char *glob = NULL;
    int verbose = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--kernels") && i + 1 < argc)
            glob = argv[++i];
        else if (!strcmp(argv[i], "--verbose"))
            verbose = 1;
        else if (!strcmp(argv[i], "--backend") && i + 1 < argc && !strcmp(argv[i + 1], "gpu"))
            use_gpu = 1, ++i;
        else if (!strcmp(argv[i], "--backend") && i + 1 < argc && !strcmp(argv[i + 1], "cpu"))
            ++i;
        else if (!strcmp(argv[i], "--block") && i + 1 < argc)
            fixed_block = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--backend cpu|gpu] [--block N] [--seed N] [--kernels GLOB] [--verbose]\n",
                    argv[0]);
            return 2;
        }
    }
    if (use_gpu) {
        wd_cuda_info info;
        if (!wd_cuda_available() || wd_cuda_device_info(&info) != WD_OK) {
            printf("checkdslash: no usable GPU (%s): skipped\n",
                   wd_cuda_available() ? wd_last_error() : "none found or no CUDA in this build");
            return 77;
        }
        wd_tune_set_cache("");
        printf("checkdslash: GPU backend on %s (compute capability %d.%d)\n", info.name,
               info.cc_major, info.cc_minor);
    }
    printf("checkdslash: %d built variants, %d cases each, seed %llu (rerun with --seed %llu)\n",
           wd_variant_count, NCASES, (unsigned long long)seed, (unsigned long long)seed);

    int failed = 0, tested = 0;
    for (int k = 0; k < wd_variant_count; ++k) {
        const wd_variant *v = &wd_variants[k];
        if (glob && fnmatch(glob, v->name, 0) != 0)
            continue;
        wd_rng rng;
        wd_rng_seed(&rng, seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(k + 1)));
        errors worst = {0, 0, 0, 0, 0, 0, -1};
        int ok = 1;
        const double tol = tolerance(v->precision, v->recon);
        for (int c = 0; c < NCASES; ++c) {
            errors e = {0, 0, 0, 0, 0, 0, -1};
            ok &= run_case(k, &cases[c], &rng, &e);
            if (verbose)
                printf("    %-28s %dx%dx%dx%d tbc %+d %s rel_l2=%.2e max=%.2e tol=%.0e\n", v->name,
                       cases[c].dims[0], cases[c].dims[1], cases[c].dims[2], cases[c].dims[3],
                       cases[c].tbc, cases[c].smooth ? "smooth" : "random", e.rel_l2, e.rel_max, tol);
            worst.rel_l2 = fmax(worst.rel_l2, e.rel_l2);
            worst.rel_max = fmax(worst.rel_max, e.rel_max);
            worst.unwritten += e.unwritten;
            worst.pad_touched += e.pad_touched;
            worst.gpu_failed += e.gpu_failed;
            worst.cpu_diff = fmax(worst.cpu_diff, e.cpu_diff);
            worst.one_diff = fmax(worst.one_diff, e.one_diff);
            if (e.rel_l2 > tol || e.rel_max > tol || !(e.rel_l2 == e.rel_l2) || e.cpu_diff > tol)
                ok = 0;
            /* one at a time: the same bits, but half precision on the GPU
             * (docs/generator.md, "Many right-hand sides") */
            if (e.one_diff > (use_gpu && v->precision == 2 ? 1e-5 : 0))
                ok = 0;
        }
        ok &= worst.unwritten == 0 && worst.pad_touched == 0 && worst.gpu_failed == 0;
        tested++;
        failed += !ok;
        char agree[64] = "";
        if (use_gpu)
            snprintf(agree, sizeof agree, " cpu=%.2e", worst.cpu_diff);
        if (v->nrhs > 1) {
            const size_t at = strlen(agree);
            if (worst.one_diff < 0)
                snprintf(agree + at, sizeof agree - at, " one=-");
            else if (worst.one_diff == 0)
                snprintf(agree + at, sizeof agree - at, " one=same");
            else
                snprintf(agree + at, sizeof agree - at, " one=%.2e", worst.one_diff);
        }
        printf("%-28s %s  rel_l2=%.2e max=%.2e%s tol=%.0e%s%s\n", v->name, ok ? "OK  " : "FAIL",
               worst.rel_l2, worst.rel_max, agree, tol,
               worst.unwritten ? "  (unwritten output sites)" : "",
               worst.pad_touched ? "  (padding overwritten)" : "");
    }
    if (!glob && tested != wd_variant_count) {
        printf("%d built variants left untested\n", wd_variant_count - tested);
        failed += wd_variant_count - tested;
    }
    if (tested == 0) {
        printf("no variant tested\n");
        return 1;
    }
    printf("%d of %d failed\n", failed, tested);
    return failed ? 1 : 0;
}
