/*
 * checkcoarse: every built coarse-operator variant (coarse_*,
 * docs/coarse-kernels.md) against the float64 definition of the coarse
 * operator, P^dag (M (P v)) / (4+m) of the reference (ref_wilson.h,
 * ref_clover.h), never against another coarse kernel.
 *
 * For each Nvec the registry holds, on fresh random data (seed printed,
 * settable with --seed): a smooth random gauge field on a fine 8x8x8x4
 * lattice, aggregates of 2x2x2x1 fine sites (a coarse 4^4 lattice, so every
 * hop's forward and backward neighbours differ; 8 sites x 6 = 48 >= Nvec a
 * chirality), Nvec random null vectors orthonormalised, D_c from
 * wd_mg_coarse_build, for the Wilson operator (antiperiodic time) and the
 * clover operator (c_sw 1.5, periodic time).  Then for each variant of
 * that Nvec, on each of the two operators: a fresh random v (and x), D_c
 * and the fields packed into the variant's precision, the output and its
 * norms poisoned (NaN; 16-bit values -32768, outside the stored range),
 * the kernel run through wd_coarse_apply_cpu, every site checked written,
 * the output unpacked and compared with
 *   r = P^dag (M (P v)) / (4+m)                      dag0
 *   r = g5 P^dag (M (P g5 v)) / (4+m)                dag1 (D_c^dag = g5 D_c g5)
 *   r = x + a r                                      xpay1
 * computed in float64 with the reference; both norms asserted non-zero.
 *
 * A variant of N > 1 right-hand sides a call (_n<N>) gets N fresh random
 * v (and x), each judged as above; they lie 3 poisoned sites further apart
 * than a field (rhs_stride), which must stay poisoned; and each right-hand
 * side's output must be, bit for bit, the n1 variant's of the same axes on
 * that right-hand side alone, on the same backend (one=bits; one=n/a where
 * the build lacks the n1 variant).
 *
 * With --backend gpu the packed fields (the poisoned output included) are
 * copied to the GPU, the variant runs there (wd_coarse_apply_cuda, --block
 * N threads a block wanted), the output comes back and is judged the same
 * way; the CPU kernel also runs on the same packed input and the two must
 * agree (column cpu=, relative L2) within the tolerance; and the variant
 * runs again with 1024 threads a block wanted (the most sites a block, as
 * the multigrid's block tuning may choose), which must give the same bits.
 *
 * One line per variant: worst relative L2 error and worst max error
 * (relative to max |r|) of the two operators, the tolerance; "N of M
 * failed" last.  A built variant left untested fails the run.  Exit 0 when
 * all pass, 1 otherwise, 77 (skipped) for a build without coarse variants
 * and for --backend gpu without a usable GPU.
 *
 * --bench (after the checks) times every selected variant on random packed
 * fields of a coarse 12^3x24 lattice on the GPU (the coarse lattice of
 * 48^3x96 with 4^4 aggregates: issue 27's target) and 6^3x8 (the 1728
 * sites of an even-odd hop of 24^3x64's coarse 6^3x16), 6^3x12 on the CPU: the
 * median of the calls' wall times (a sync after each on the GPU), the
 * fewest bytes a call moves (every link block and its norm, the input, the
 * output and x once a site) over that time, on the GPU as a fraction of
 * the device-to-device copy bandwidth measured in the same run, and Gflops
 * (8 (2 Nvec)^2 x 9 a site).  The variants of N > 1 right-hand sides a
 * call are timed alike (their N fields one after another; bytes: the
 * links once, every right-hand side's fields) and then listed with their
 * median time a right-hand side against the median one-RHS call of the n1
 * variant of the same axes: the speed-up of one N-RHS call over N single
 * calls.
 *
 *   checkcoarse [--backend cpu|gpu] [--block N] [--seed N] [--kernels GLOB] [--verbose]
 *               [--bench]
 */
#include <complex.h>
#include <fnmatch.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clover_field.h"
#include "cuda_rt.h"
#include "gauge_tools.h"
#include "ref_clover.h"
#include "ref_wilson.h"
#include "rng.h"
#include "wd_coarse_layout.h"
#include "wd_coarse_op.h"
#include "wd_mg.h"
#include "wdirac.h"

/*
 * Tolerances on relative L2 and relative max error, per precision (bytes
 * per stored real), about 10x the worst measured over 8 seeds x 2
 * operators x 8 variants a precision (gcc 12, x86-64; docs/coarse-
 * kernels.md): single rel_l2 1.5e-7, max 3.9e-7 (links and input rounded
 * to 24 bits, 9 x 2 Nvec float products a row); half rel_l2 1.1e-4, max
 * 1.2e-4 (16-bit fixed point of every block, input site and output site,
 * each relative to its largest real).
 */
static double tolerance(int precision)
{
    return precision == WD_PREC_SINGLE ? 4e-6 : 1e-3;
}

static const int fine_dims[4] = {8, 8, 8, 4};
static const int block[4] = {2, 2, 2, 1};
static const double mass = -0.4, csw = 1.5;
static int verbose, gpu, gpu_block;

static void *xalloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p) {
        fprintf(stderr, "checkcoarse: out of memory\n");
        exit(1);
    }
    return p;
}

static void fill_random(double complex *x, size_t n, wd_rng *r)
{
    for (size_t i = 0; i < n; ++i)
        x[i] = CMPLX(wd_rng_normal(r), wd_rng_normal(r));
}

/* One fine operator and its coarse operator. */
typedef struct level {
    const char *tag;
    int tbc;
    double complex *u, *t;      /* links; the reference's clover term (NULL: Wilson) */
    double *blocks;             /* the clover field's host blocks (NULL: Wilson) */
    wd_mg_op fine, coarse;
    wd_mg_transfer tr;
} level;

/* the reference's M / (4+m) */
static void ref_apply(const level *lv, double complex *out, const double complex *in)
{
    const size_t n = wd_volume(fine_dims) * 12;
    if (lv->t)
        ref_wilson_clover(out, lv->u, lv->t, in, fine_dims, mass, lv->tbc, 0);
    else
        ref_wilson(out, lv->u, in, fine_dims, mass, lv->tbc, 0);
    for (size_t i = 0; i < n; ++i)
        out[i] /= 4.0 + mass;
}

static int level_make(level *lv, int nvec, int clover, wd_rng *rng)
{
    memset(lv, 0, sizeof *lv);
    lv->tag = clover ? "clover" : "wilson";
    lv->tbc = clover ? 1 : -1;
    const size_t vol = wd_volume(fine_dims);
    lv->u = xalloc(vol * 36 * sizeof *lv->u);
    wd_gauge_smooth(lv->u, fine_dims, 0.4, rng);
    if (clover) {
        double complex *fhat = xalloc(vol * 54 * sizeof *fhat);
        lv->t = xalloc(vol * 144 * sizeof *lv->t);
        ref_clover_fhat(fhat, lv->u, fine_dims);
        ref_clover_term(lv->t, fhat, vol, csw);
        free(fhat);
        lv->blocks = xalloc(vol * WD_CLOVER_SITE_REALS * sizeof *lv->blocks);
        wd_grid grid;
        const int procs[4] = {1, 1, 1, 1};
        if (wd_grid_make(&grid, fine_dims, procs, 1, 0, 4) != WD_OK ||
            wd_clover_field(lv->blocks, (const double *)lv->u, &grid, csw / (4.0 + mass)) != WD_OK)
            return 0;
    }
    if (wd_mg_op_fine(&lv->fine, fine_dims, NULL, (const double *)lv->u, lv->blocks,
                      0.5 / (4.0 + mass), lv->tbc) != WD_OK ||
        wd_mg_transfer_init(&lv->tr, 0, fine_dims, 12, block, nvec, 0) != WD_OK)
        return 0;
    fill_random(lv->tr.v, (size_t)nvec * vol * 12, rng);
    return wd_mg_orthonormalise(&lv->tr, 0) == WD_OK &&
           wd_mg_coarse_build(&lv->coarse, &lv->fine, &lv->tr) == WD_OK;
}

static void level_free(level *lv)
{
    wd_mg_op_free(&lv->coarse);
    wd_mg_transfer_free(&lv->tr);
    wd_mg_op_free(&lv->fine);
    free(lv->u);
    free(lv->t);
    free(lv->blocks);
}

/* g5 on a coarse field: the second nvec components of a site negated */
static void coarse_g5(double complex *z, size_t volume, int nvec)
{
    for (size_t s = 0; s < volume; ++s)
        for (int i = nvec; i < 2 * nvec; ++i)
            z[s * 2 * nvec + i] = -z[s * 2 * nvec + i];
}

typedef struct errors {
    double rel_l2, rel_max;
    double cpu_diff;    /* --backend gpu: |gpu - cpu| / |cpu| */
    int unwritten;      /* sites the kernel left poisoned */
    int blocks_differ;  /* --backend gpu: the largest block size's bits differ */
    int pads_written;   /* N > 1: poisoned sites between right-hand sides written */
    int one_differ;     /* N > 1: right-hand sides whose bits differ from the n1 variant's */
    int one_missing;    /* N > 1: the n1 variant of the same axes is not built */
} errors;

/* The packed fields of one application (host or device pointers). */
typedef struct packed {
    void *links, *in, *x, *out;
    float *lnorm, *in_norm, *x_norm, *out_norm;
    const int *nbr;
    size_t rhs_stride, rhs_norm_stride;     /* N right-hand sides a call (N > 1) */
} packed;

static void args_set(wd_coarse_args *args, const wd_coarse_variant *v, const packed *p,
                     int volume, double a)
{
    memset(args, 0, sizeof *args);
    args->out = p->out;
    args->in = p->in;
    args->x = v->xpay ? p->x : NULL;
    args->links = p->links;
    args->nbr = p->nbr;
    args->volume = volume;
    args->a = a;
    args->rhs_stride = p->rhs_stride;
    args->rhs_norm_stride = p->rhs_norm_stride;
    if (v->precision == WD_PREC_HALF) {
        args->out_norm = p->out_norm;
        args->in_norm = p->in_norm;
        args->x_norm = v->xpay ? p->x_norm : NULL;
        args->link_norm = p->lnorm;
    }
}

/* the host fields h to the device, the variant there, its output back
 * into h->out, h->out_norm */
static wd_status run_gpu(const wd_coarse_variant *v, const wd_coarse_layout *l, packed *h,
                         double a, size_t sb, size_t nb)
{
    packed d = {0};
    d.rhs_stride = h->rhs_stride;
    d.rhs_norm_stride = h->rhs_norm_stride;
    const size_t nbr_bytes = (size_t)l->volume * WD_COARSE_DIRS * sizeof(int);
    wd_status st = wd_cuda_malloc(&d.links, l->link_bytes, "coarse links");
    if (st == WD_OK)
        st = wd_cuda_malloc(&d.in, sb, "coarse in");
    if (st == WD_OK)
        st = wd_cuda_malloc(&d.x, sb, "coarse x");
    if (st == WD_OK)
        st = wd_cuda_malloc(&d.out, sb, "coarse out");
    int *nbr = NULL;
    if (st == WD_OK)
        st = wd_cuda_malloc((void **)&nbr, nbr_bytes, "coarse neighbours");
    d.nbr = nbr;
    if (st == WD_OK && nb) {
        st = wd_cuda_malloc((void **)&d.lnorm, l->link_norm_bytes, "coarse link norms");
        if (st == WD_OK)
            st = wd_cuda_malloc((void **)&d.in_norm, nb, "coarse in norms");
        if (st == WD_OK)
            st = wd_cuda_malloc((void **)&d.x_norm, nb, "coarse x norms");
        if (st == WD_OK)
            st = wd_cuda_malloc((void **)&d.out_norm, nb, "coarse out norms");
    }
    if (st == WD_OK)
        st = wd_cuda_h2d(d.links, h->links, l->link_bytes);
    if (st == WD_OK)
        st = wd_cuda_h2d(d.in, h->in, sb);
    if (st == WD_OK)
        st = wd_cuda_h2d(d.x, h->x, sb);
    if (st == WD_OK)
        st = wd_cuda_h2d(d.out, h->out, sb);    /* poisoned */
    if (st == WD_OK)
        st = wd_cuda_h2d(nbr, h->nbr, nbr_bytes);
    if (st == WD_OK && nb) {
        st = wd_cuda_h2d(d.lnorm, h->lnorm, l->link_norm_bytes);
        if (st == WD_OK)
            st = wd_cuda_h2d(d.in_norm, h->in_norm, nb);
        if (st == WD_OK)
            st = wd_cuda_h2d(d.x_norm, h->x_norm, nb);
        if (st == WD_OK)
            st = wd_cuda_h2d(d.out_norm, h->out_norm, nb);
    }
    wd_coarse_args args;
    args_set(&args, v, &d, l->volume, a);
    if (st == WD_OK)
        st = wd_coarse_apply_multi_cuda(l, v->dagger, v->xpay, v->nrhs, &args, gpu_block,
                                        wd_cuda_stream());
    if (st == WD_OK)
        st = wd_cuda_sync();
    if (st == WD_OK)
        st = wd_cuda_d2h(h->out, d.out, sb);
    if (st == WD_OK && nb)
        st = wd_cuda_d2h(h->out_norm, d.out_norm, nb);
    wd_cuda_free(d.links);
    wd_cuda_free(d.in);
    wd_cuda_free(d.x);
    wd_cuda_free(d.out);
    wd_cuda_free(nbr);
    wd_cuda_free(d.lnorm);
    wd_cuda_free(d.in_norm);
    wd_cuda_free(d.x_norm);
    wd_cuda_free(d.out_norm);
    return st;
}

/* the larger error, NaN if either is (fmax would drop it) */
static double worse(double a, double b)
{
    return a != a || b != b ? NAN : fmax(a, b);
}

/* the definition, in float64: want = D_c in (g5 D_c g5 in for dagger), or
 * x + a that (xpay); cv, fa, fb scratch of a coarse and two fine fields */
static void reference(const wd_coarse_variant *v, const level *lv, const double complex *in,
                      const double complex *x, double a, double complex *want,
                      double complex *cv, double complex *fa, double complex *fb)
{
    const size_t volume = lv->coarse.volume, cn = volume * (size_t)lv->coarse.n;
    memcpy(cv, in, cn * sizeof *cv);
    if (v->dagger)
        coarse_g5(cv, volume, v->nvec);
    wd_mg_prolong(&lv->tr, fa, cv);
    ref_apply(lv, fb, fa);
    wd_mg_restrict(&lv->tr, want, fb);
    if (v->dagger)
        coarse_g5(want, volume, v->nvec);
    if (v->xpay)
        for (size_t i = 0; i < cn; ++i)
            want[i] = x[i] + a * want[i];
}

/* count reals from p poisoned: NaN floats or 16-bit -32768 */
static void poison(void *p, size_t count, int half)
{
    for (size_t r = 0; r < count; ++r) {
        if (half)
            ((short *)p)[r] = -32768;
        else
            ((float *)p)[r] = NAN;
    }
}

/* whether site s of a packed field (and its norm) holds any poison */
static int poisoned(const void *p, const float *norm, size_t s, int n, int half)
{
    int bad = half && !isfinite(norm[s]);
    for (int r = 0; r < 2 * n; ++r) {
        const size_t at = s * 2 * n + r;
        bad |= half ? ((const short *)p)[at] == -32768 : !isfinite(((const float *)p)[at]);
    }
    return bad;
}

/* |got - want| / |want| over count numbers, and max |got - want| / max |want| */
static void compare(const double complex *got, const double complex *want, size_t count,
                    double *rel_l2, double *rel_max, const char *name)
{
    double num = 0, den = 0, gn = 0, dmax = 0, wmax = 0;
    for (size_t i = 0; i < count; ++i) {
        const double d = cabs(got[i] - want[i]);
        num += d * d;
        den += creal(want[i]) * creal(want[i]) + cimag(want[i]) * cimag(want[i]);
        gn += creal(got[i]) * creal(got[i]) + cimag(got[i]) * cimag(got[i]);
        dmax = d > dmax || d != d ? d : dmax;
        wmax = fmax(wmax, cabs(want[i]));
    }
    if (!(den > 0) || !(gn > 0)) {
        fprintf(stderr, "%s: %s output is zero: the test would prove nothing\n", name,
                den > 0 ? "the kernel's" : "the reference");
        *rel_l2 = *rel_max = INFINITY;
    } else {
        *rel_l2 = sqrt(num / den);
        *rel_max = dmax / wmax;
    }
}

/* The variant of N = v->nrhs right-hand sides on the packed fields of h
 * (right-hand side r at r h->rhs_stride reals; sb, nb the bytes of the
 * fields and of their norms) on the CPU or, with --backend gpu, the GPU */
static wd_status run_variant(const wd_coarse_variant *v, const wd_coarse_layout *l, packed *h,
                             double a, size_t sb, size_t nb, int on_gpu)
{
    if (on_gpu)
        return run_gpu(v, l, h, a, sb, nb);
    wd_coarse_args args;
    args_set(&args, v, h, l->volume, a);
    return wd_coarse_apply_multi_cpu(l, v->dagger, v->xpay, v->nrhs, &args);
}

/* Run variant v on lv's coarse operator with fresh random fields: N =
 * v->nrhs right-hand sides, each judged against the definition; for N > 1
 * they lie PAD sites further apart than a field (poisoned, and required
 * untouched: the kernel honours rhs_stride), and each must equal the n1
 * variant of the same axes run on it alone, bit for bit. */
enum { PAD = 3 };

static wd_status run_one(const wd_coarse_variant *v, const level *lv, wd_rng *rng, errors *e)
{
    const wd_mg_op *c = &lv->coarse;
    const int volume = (int)c->volume, n = c->n, nrhs = v->nrhs, pad = nrhs > 1 ? PAD : 0;
    const size_t cn = (size_t)volume * n, fn = wd_volume(fine_dims) * 12;
    wd_coarse_layout l, lr;     /* a field; a right-hand side with its pad */
    wd_status st = wd_coarse_layout_make(&l, volume, v->nvec, v->precision);
    if (st == WD_OK)
        st = wd_coarse_layout_make(&lr, volume + pad, v->nvec, v->precision);
    if (st != WD_OK)
        return st;
    const int half = v->precision == WD_PREC_HALF;
    const size_t stride = lr.spinor_bytes, nstride = lr.spinor_norm_bytes / sizeof(float);
    const size_t sb = (size_t)nrhs * stride, nb = (size_t)nrhs * lr.spinor_norm_bytes;
    const size_t all = (size_t)nrhs * cn;
    double complex *in = xalloc(all * sizeof *in), *x = xalloc(all * sizeof *x);
    double complex *got = xalloc(all * sizeof *got), *want = xalloc(all * sizeof *want);
    double complex *cv = xalloc(cn * sizeof *cv);
    double complex *fa = xalloc(fn * sizeof *fa), *fb = xalloc(fn * sizeof *fb);
    fill_random(in, all, rng);
    fill_random(x, all, rng);
    const double a = 0.5 + wd_rng_uniform(rng);
    for (int r = 0; r < nrhs; ++r)
        reference(v, lv, in + r * cn, x + r * cn, a, want + r * cn, cv, fa, fb);

    /* the kernel on packed fields, every real poisoned first */
    void *links = xalloc(l.link_bytes), *pin = xalloc(sb), *px = xalloc(sb), *pout = xalloc(sb);
    float *lnorm = xalloc(l.link_norm_bytes), *in_norm = xalloc(nb + 1);
    float *x_norm = xalloc(nb + 1), *out_norm = xalloc(nb + 1);
    const size_t reals = sb / (size_t)v->precision;
    poison(pin, reals, half);
    poison(px, reals, half);
    poison(pout, reals, half);
    for (size_t s = 0; s < nb / sizeof(float); ++s)
        in_norm[s] = x_norm[s] = out_norm[s] = NAN;
    wd_pack_coarse_links(&l, links, lnorm, c->links);
    for (int r = 0; r < nrhs; ++r) {
        wd_pack_coarse_spinor(&l, (char *)pin + r * stride, in_norm + r * nstride, in + r * cn);
        wd_pack_coarse_spinor(&l, (char *)px + r * stride, x_norm + r * nstride, x + r * cn);
    }
    packed h = {links, pin, px, pout, lnorm, in_norm, x_norm, out_norm, c->nbr,
                stride / (size_t)v->precision, nstride};
    double complex *cpu = NULL;
    if (gpu) {
        /* the CPU kernel on the same packed input, for the cpu= column */
        void *cout = xalloc(sb);
        float *cnorm = xalloc(nb + 1);
        packed hc = h;
        hc.out = cout;
        hc.out_norm = cnorm;
        st = run_variant(v, &l, &hc, a, sb, nb, 0);
        cpu = xalloc(all * sizeof *cpu);
        for (int r = 0; r < nrhs; ++r)
            wd_unpack_coarse_spinor(&l, cpu + r * cn, (char *)cout + r * stride,
                                    cnorm + r * nstride);
        free(cout);
        free(cnorm);
        if (st == WD_OK)
            st = run_gpu(v, &l, &h, a, sb, nb);
        if (st == WD_OK) {
            /* the same bits with the largest block (1024 threads wanted:
             * the multigrid times block sizes at setup and keeps the
             * fastest; each site's sums are its own threads') */
            void *first = xalloc(sb);
            float *first_norm = xalloc(nb + 1);
            memcpy(first, pout, sb);
            memcpy(first_norm, out_norm, nb);
            /* poisoned as for the first run: the pads between right-hand
             * sides must come back as they went */
            poison(pout, reals, half);
            for (size_t s = 0; s < nb / sizeof(float); ++s)
                out_norm[s] = NAN;
            const int chosen = gpu_block;
            gpu_block = 1024;
            st = run_gpu(v, &l, &h, a, sb, nb);
            gpu_block = chosen;
            e->blocks_differ = st == WD_OK && (memcmp(first, pout, sb) != 0 ||
                                               memcmp(first_norm, out_norm, nb) != 0);
            free(first);
            free(first_norm);
        }
    } else {
        st = run_variant(v, &l, &h, a, sb, nb, 0);
    }
    if (st == WD_OK && nrhs > 1) {
        /* each right-hand side alone through the n1 variant of the same
         * axes on the same backend: the same bits */
        const int k1 = wd_coarse_find_axes(v->precision, v->nvec, v->dagger, v->xpay, 1);
        e->one_missing = k1 < 0;
        void *o1 = xalloc(l.spinor_bytes);
        float *n1 = xalloc(l.spinor_norm_bytes + 1);
        for (int r = 0; k1 >= 0 && r < nrhs && st == WD_OK; ++r) {
            packed h1 = {links, (char *)pin + r * stride, (char *)px + r * stride, o1, lnorm,
                         in_norm + r * nstride, x_norm + r * nstride, n1, c->nbr, 0, 0};
            poison(o1, l.spinor_bytes / (size_t)v->precision, half);
            st = run_variant(&wd_coarse_variants[k1], &l, &h1, a, l.spinor_bytes,
                             l.spinor_norm_bytes, gpu);
            e->one_differ += st == WD_OK &&
                             (memcmp(o1, (char *)pout + r * stride, l.spinor_bytes) != 0 ||
                              memcmp(n1, out_norm + r * nstride, l.spinor_norm_bytes) != 0);
        }
        free(o1);
        free(n1);
    }
    if (st == WD_OK) {
        e->unwritten = e->pads_written = 0;
        e->rel_l2 = e->rel_max = e->cpu_diff = 0;
        for (int r = 0; r < nrhs; ++r) {
            const char *o = (const char *)pout + r * stride;
            const float *on = out_norm + r * nstride;
            for (int s = 0; s < volume + pad; ++s) {
                const int bad = poisoned(o, on, (size_t)s, n, half);
                if (s < volume)
                    e->unwritten += bad;
                else
                    e->pads_written += !bad;
            }
            wd_unpack_coarse_spinor(&l, got + r * cn, o, on);
            double l2, mx;
            compare(got + r * cn, want + r * cn, cn, &l2, &mx, v->name);
            e->rel_l2 = worse(e->rel_l2, l2);
            e->rel_max = worse(e->rel_max, mx);
            if (cpu) {
                double cd = 0, cc = 0;
                for (size_t i = r * cn; i < (r + 1) * cn; ++i) {
                    const double d = cabs(got[i] - cpu[i]);
                    cd += d * d;
                    cc += creal(cpu[i]) * creal(cpu[i]) + cimag(cpu[i]) * cimag(cpu[i]);
                }
                e->cpu_diff = worse(e->cpu_diff, cc > 0 ? sqrt(cd / cc) : INFINITY);
            }
        }
    }
    free(cpu);
    free(in);
    free(x);
    free(got);
    free(want);
    free(cv);
    free(fa);
    free(fb);
    free(links);
    free(pin);
    free(px);
    free(pout);
    free(lnorm);
    free(in_norm);
    free(x_norm);
    free(out_norm);
    return st;
}

static int selected(const char *name, const char *glob)
{
    return !glob || fnmatch(glob, name, 0) == 0;
}

/* ---- --bench ---- */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the periodic neighbour table of a lexicographic lattice (x fastest) */
static int *neighbour_table(const int d[4], int volume)
{
    int *nbr = xalloc((size_t)volume * WD_COARSE_DIRS * sizeof *nbr);
    for (int s = 0; s < volume; ++s) {
        int c[4], r = s;
        for (int mu = 0; mu < 4; ++mu) {
            c[mu] = r % d[mu];
            r /= d[mu];
        }
        for (int k = 0; k < WD_COARSE_DIRS; ++k) {
            int e[4] = {c[0], c[1], c[2], c[3]};
            const int mu = k / 2;
            e[mu] = (c[mu] + (k & 1 ? d[mu] - 1 : 1)) % d[mu];
            nbr[WD_COARSE_DIRS * s + k] = e[0] + d[0] * (e[1] + d[1] * (e[2] + d[2] * e[3]));
        }
    }
    return nbr;
}

/* bytes of random stored reals (precision 4: floats in [-1, 1]; 2: 16-bit
 * values) or, norm, floats 1 */
static void fill_host(void *p, size_t bytes, int precision, int norm, wd_rng *r)
{
    if (norm || precision == WD_PREC_SINGLE) {
        float *f = p;
        for (size_t i = 0; i < bytes / sizeof *f; ++i)
            f[i] = norm ? 1.0f : (float)(2 * wd_rng_uniform(r) - 1);
    } else {
        short *h = p;
        for (size_t i = 0; i < bytes / sizeof *h; ++i)
            h[i] = (short)(65534 * wd_rng_uniform(r) - 32767);
    }
}

/* a buffer of bytes on the bench's side (host or device), filled */
static void *bench_buffer(size_t bytes, int precision, int norm, wd_rng *r)
{
    if (!bytes)
        return NULL;
    if (!gpu) {
        void *p = xalloc(bytes);
        fill_host(p, bytes, precision, norm, r);
        return p;
    }
    void *d = NULL;
    const size_t chunk = bytes < ((size_t)64 << 20) ? bytes : (size_t)64 << 20;
    void *h = xalloc(chunk);
    fill_host(h, chunk, precision, norm, r);
    wd_status st = wd_cuda_malloc(&d, bytes, "bench field");
    for (size_t at = 0; st == WD_OK && at < bytes; at += chunk)
        st = wd_cuda_h2d((char *)d + at, h, bytes - at < chunk ? bytes - at : chunk);
    free(h);
    if (st != WD_OK) {
        fprintf(stderr, "checkcoarse --bench: %s\n", wd_last_error());
        exit(1);
    }
    return d;
}

static void bench_free(void *p)
{
    if (gpu)
        wd_cuda_free(p);
    else
        free(p);
}

static void bench(const char *glob, uint64_t seed, const int *d)
{
    const int volume = d[0] * d[1] * d[2] * d[3], reps = gpu ? 50 : 5;
    int *nbr = neighbour_table(d, volume);
    const int *nbr_here = nbr;
    if (gpu) {
        nbr_here = bench_buffer((size_t)volume * WD_COARSE_DIRS * sizeof *nbr, WD_PREC_SINGLE, 1,
                                NULL);
        if (wd_cuda_h2d((void *)nbr_here, nbr, (size_t)volume * WD_COARSE_DIRS * sizeof *nbr)
            != WD_OK) {
            fprintf(stderr, "checkcoarse --bench: %s\n", wd_last_error());
            exit(1);
        }
    }
    double copy = 0;
    if (gpu && wd_cuda_copy_gbps((size_t)1 << 30, 20, &copy) != WD_OK)
        copy = 0;
    printf("\nbench: coarse %dx%dx%dx%d (%d sites), %s, median of %d calls\n", d[0], d[1], d[2],
           d[3], volume, gpu ? "GPU" : "CPU", reps);
    if (gpu)
        printf("bench: device-to-device copy %.0f GB/s (read + write)\n", copy);
    else
        printf("bench: %d OpenMP threads\n", omp_get_max_threads());
    printf("%-30s %10s %8s %8s %8s\n", "variant", "us/call", "GB/s", "of copy", "Gflops");
    wd_rng rng;
    wd_rng_seed(&rng, seed + 77u);
    /* each variant's median, for the multi-RHS table (0: not timed) */
    double *median = xalloc((size_t)wd_coarse_variant_count * sizeof *median);
    for (int k = 0; k < wd_coarse_variant_count; ++k) {
        const wd_coarse_variant *v = &wd_coarse_variants[k];
        if (!selected(v->name, glob))
            continue;
        wd_coarse_layout l;
        if (wd_coarse_layout_make(&l, volume, v->nvec, v->precision) != WD_OK)
            continue;
        /* N right-hand sides: N fields one after another */
        const size_t sb = (size_t)v->nrhs * l.spinor_bytes;
        const size_t nb = (size_t)v->nrhs * l.spinor_norm_bytes;
        packed p = {0};
        p.links = bench_buffer(l.link_bytes, v->precision, 0, &rng);
        p.lnorm = bench_buffer(l.link_norm_bytes, v->precision, 1, &rng);
        p.in = bench_buffer(sb, v->precision, 0, &rng);
        p.in_norm = bench_buffer(nb, v->precision, 1, &rng);
        p.x = bench_buffer(sb, v->precision, 0, &rng);
        p.x_norm = bench_buffer(nb, v->precision, 1, &rng);
        p.out = bench_buffer(sb, v->precision, 0, &rng);
        p.out_norm = bench_buffer(nb, v->precision, 1, &rng);
        p.nbr = nbr_here;
        p.rhs_stride = l.spinor_bytes / (size_t)v->precision;
        p.rhs_norm_stride = (size_t)volume;
        const double a = 0.5;
        wd_coarse_args args;
        args_set(&args, v, &p, volume, a);
        double *t = xalloc((size_t)reps * sizeof *t);
        wd_status st = WD_OK;
        for (int r = -2; r < reps && st == WD_OK; ++r) {
            const double t0 = now();
            if (gpu) {
                st = wd_coarse_apply_multi_cuda(&l, v->dagger, v->xpay, v->nrhs, &args,
                                                gpu_block, wd_cuda_stream());
                if (st == WD_OK)
                    st = wd_cuda_sync();
            } else {
                st = wd_coarse_apply_multi_cpu(&l, v->dagger, v->xpay, v->nrhs, &args);
            }
            if (r >= 0)
                t[r] = now() - t0;
        }
        if (st != WD_OK) {
            printf("%-30s %s\n", v->name, wd_last_error());
        } else {
            qsort(t, (size_t)reps, sizeof *t, cmp_double);
            const double sec = t[reps / 2], n = l.ncomp;
            median[k] = sec;
            /* the links once, each right-hand side's fields once */
            const double bytes = (double)l.link_bytes + l.link_norm_bytes
                                 + (2.0 + v->xpay) * (double)(sb + nb);
            const double flops = (double)volume * v->nrhs * (WD_COARSE_BLOCKS * 8 * n * n
                                                             + (v->xpay ? 4 * n : 0));
            char frac[16] = "-";
            if (copy > 0)
                snprintf(frac, sizeof frac, "%.0f%%", 100 * bytes / sec / 1e9 / copy);
            printf("%-30s %10.1f %8.1f %8s %8.1f\n", v->name, 1e6 * sec, bytes / sec / 1e9, frac,
                   flops / sec / 1e9);
        }
        free(t);
        bench_free(p.links);
        bench_free(p.lnorm);
        bench_free(p.in);
        bench_free(p.in_norm);
        bench_free(p.x);
        bench_free(p.x_norm);
        bench_free(p.out);
        bench_free(p.out_norm);
    }
    /* the multi-RHS variants: the median time a right-hand side against
     * the median of one call of the n1 variant of the same axes (N single
     * applies take N of those), both timed above on the same lattice */
    int header = 0;
    for (int k = 0; k < wd_coarse_variant_count; ++k) {
        const wd_coarse_variant *v = &wd_coarse_variants[k];
        const int k1 = wd_coarse_find_axes(v->precision, v->nvec, v->dagger, v->xpay, 1);
        if (v->nrhs < 2 || !(median[k] > 0))
            continue;
        if (!header++)
            printf("\nbench: multi-RHS, the median time a right-hand side against one-RHS calls "
                   "(n1 median x N)\n%-30s %4s %10s %10s %10s %8s\n", "variant", "N", "us/call",
                   "us/rhs", "n1 us/call", "speedup");
        const double per = median[k] / v->nrhs;
        if (k1 < 0 || !(median[k1] > 0))
            printf("%-30s %4d %10.1f %10.1f %10s %8s\n", v->name, v->nrhs, 1e6 * median[k],
                   1e6 * per, "-", "-");
        else
            printf("%-30s %4d %10.1f %10.1f %10.1f %7.2fx\n", v->name, v->nrhs,
                   1e6 * median[k], 1e6 * per, 1e6 * median[k1], median[k1] / per);
    }
    free(median);
    if (gpu)
        bench_free((void *)nbr_here);
    free(nbr);
}

int main(int argc, char **argv)
{
    uint64_t seed = (uint64_t)time(NULL);
    const char *glob = NULL;
    int do_bench = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--kernels") && i + 1 < argc)
            glob = argv[++i];
        else if (!strcmp(argv[i], "--block") && i + 1 < argc)
            gpu_block = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--backend") && i + 1 < argc && !strcmp(argv[i + 1], "gpu"))
            gpu = 1, ++i;
        else if (!strcmp(argv[i], "--backend") && i + 1 < argc && !strcmp(argv[i + 1], "cpu"))
            ++i;
        else if (!strcmp(argv[i], "--verbose"))
            verbose = 1;
        else if (!strcmp(argv[i], "--bench"))
            do_bench = 1;
        else {
            fprintf(stderr, "usage: checkcoarse [--backend cpu|gpu] [--block N] [--seed N] "
                    "[--kernels GLOB] [--verbose] [--bench]\n");
            return 2;
        }
    }
    const int count = wd_coarse_variant_count;
    if (count == 0) {
        printf("checkcoarse: this build has no coarse variant (-Dkernels): skipped\n");
        return 77;
    }
    if (gpu) {
        wd_cuda_info info;
        if (!wd_cuda_available() || wd_cuda_device_info(&info) != WD_OK) {
            printf("checkcoarse: no usable GPU (%s): skipped\n",
                   wd_cuda_available() ? wd_last_error() : "none found or no CUDA in this build");
            return 77;
        }
        printf("checkcoarse: GPU %s (compute capability %d.%d)\n", info.name, info.cc_major,
               info.cc_minor);
    }
    printf("checkcoarse: %d built coarse variants, fine %dx%dx%dx%d, blocks %dx%dx%dx%d, "
           "Wilson and clover, seed %llu (rerun with --seed %llu)\n", count, fine_dims[0],
           fine_dims[1], fine_dims[2], fine_dims[3], block[0], block[1], block[2], block[3],
           (unsigned long long)seed, (unsigned long long)seed);
    errors *worst = xalloc((size_t)count * sizeof *worst);
    int *ran = xalloc((size_t)count * sizeof *ran);
    int *failed_run = xalloc((size_t)count * sizeof *failed_run);
    /* each Nvec of the registry once, in registry order */
    for (int k = 0; k < count; ++k) {
        const int nvec = wd_coarse_variants[k].nvec;
        int seen = 0;
        for (int q = 0; q < k; ++q)
            seen |= wd_coarse_variants[q].nvec == nvec;
        if (seen)
            continue;
        for (int clover = 0; clover < 2; ++clover) {
            wd_rng rng;
            wd_rng_seed(&rng, seed + 1000u * (unsigned)nvec + (unsigned)clover);
            level lv;
            if (!level_make(&lv, nvec, clover, &rng)) {
                fprintf(stderr, "nvec %d %s: coarse operator: %s\n", nvec,
                        clover ? "clover" : "wilson", wd_last_error());
                level_free(&lv);
                for (int q = k; q < count; ++q)
                    failed_run[q] |= wd_coarse_variants[q].nvec == nvec;
                continue;
            }
            for (int q = k; q < count; ++q) {
                const wd_coarse_variant *v = &wd_coarse_variants[q];
                if (v->nvec != nvec || !selected(v->name, glob))
                    continue;
                errors e;
                memset(&e, 0, sizeof e);
                const wd_status st = run_one(v, &lv, &rng, &e);
                if (st != WD_OK) {
                    fprintf(stderr, "%s: %s\n", v->name, wd_last_error());
                    failed_run[q] = 1;
                    continue;
                }
                if (verbose)
                    printf("    %-30s %s rel_l2=%.2e max=%.2e cpu=%.2e unwritten=%d one=%d\n",
                           v->name, lv.tag, e.rel_l2, e.rel_max, e.cpu_diff, e.unwritten,
                           e.one_differ);
                ++ran[q];
                worst[q].rel_l2 = worse(worst[q].rel_l2, e.rel_l2);
                worst[q].rel_max = worse(worst[q].rel_max, e.rel_max);
                worst[q].cpu_diff = worse(worst[q].cpu_diff, e.cpu_diff);
                worst[q].unwritten += e.unwritten;
                worst[q].blocks_differ += e.blocks_differ;
                worst[q].pads_written += e.pads_written;
                worst[q].one_differ += e.one_differ;
                worst[q].one_missing |= e.one_missing;
            }
            level_free(&lv);
        }
    }
    int failed = 0, tested = 0, untested = 0;
    for (int k = 0; k < count; ++k) {
        const wd_coarse_variant *v = &wd_coarse_variants[k];
        if (!selected(v->name, glob))
            continue;
        if (ran[k] < 2 && !failed_run[k]) {
            printf("%-30s FAIL  untested (%d of 2 operators)\n", v->name, ran[k]);
            ++untested;
            ++failed;
            continue;
        }
        ++tested;
        const double tol = tolerance(v->precision);
        const errors *e = &worst[k];
        const int ok = !failed_run[k] && e->rel_l2 <= tol && e->rel_max <= tol &&
                       e->unwritten == 0 && e->blocks_differ == 0 && e->pads_written == 0 &&
                       e->one_differ == 0 && (!gpu || e->cpu_diff <= tol);
        failed += !ok;
        char extra[256] = "", agree[32] = "", one[24] = "";
        size_t at = 0;
        if (e->unwritten)
            at += snprintf(extra + at, sizeof extra - at, "  %d sites unwritten", e->unwritten);
        if (e->pads_written)
            at += snprintf(extra + at, sizeof extra - at,
                           "  %d sites between right-hand sides written", e->pads_written);
        if (e->blocks_differ)
            at += snprintf(extra + at, sizeof extra - at,
                           "  block 1024 gave other bits (%d operators)", e->blocks_differ);
        if (e->one_differ)
            snprintf(extra + at, sizeof extra - at,
                     "  %d right-hand sides not the n1 variant's bits", e->one_differ);
        if (gpu)
            snprintf(agree, sizeof agree, " cpu=%.2e", e->cpu_diff);
        /* N > 1: each right-hand side the n1 variant's bits (one=bits), or
         * no n1 variant of the axes in this build to compare with */
        if (v->nrhs > 1)
            snprintf(one, sizeof one, " one=%s",
                     e->one_missing ? "n/a" : e->one_differ ? "differ" : "bits");
        printf("%-30s %s  rel_l2=%.2e max=%.2e%s%s tol=%.0e%s%s\n", v->name,
               ok ? "OK  " : "FAIL", e->rel_l2, e->rel_max, agree, one, tol, extra,
               failed_run[k] ? "  (run failed)" : "");
    }
    if (untested)
        printf("%d built variants left untested\n", untested);
    if (tested + untested == 0)
        printf("no coarse variant tested (--kernels %s matches none)\n", glob ? glob : "*");
    printf("%d of %d failed\n", failed, tested + untested);
    if (do_bench) {
        /* the GPU also at 6^3x8: the 1728 sites of each even-odd hop of a
         * 6^3x16 coarse lattice (24^3x64 in 4^4 aggregates) */
        const int gdims[4] = {12, 12, 12, 24}, hdims[4] = {6, 6, 6, 8}, cdims[4] = {6, 6, 6, 12};
        bench(glob, seed, gpu ? gdims : cdims);
        if (gpu)
            bench(glob, seed, hdims);
    }
    free(worst);
    free(ran);
    free(failed_run);
    return failed || tested + untested == 0 ? 1 : 0;
}
