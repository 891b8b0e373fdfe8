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
 * (8 (2 Nvec)^2 x 9 a site).
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
} errors;

/* The packed fields of one application (host or device pointers). */
typedef struct packed {
    void *links, *in, *x, *out;
    float *lnorm, *in_norm, *x_norm, *out_norm;
    const int *nbr;
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
                         double a)
{
    packed d = {0};
    const size_t nbr_bytes = (size_t)l->volume * WD_COARSE_DIRS * sizeof(int);
    const size_t sb = l->spinor_bytes, nb = l->spinor_norm_bytes;
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
        st = wd_coarse_apply_cuda(l, v->dagger, v->xpay, &args, gpu_block, wd_cuda_stream());
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

/* Run variant k on lv's coarse operator with fresh random fields. */
static wd_status run_one(const wd_coarse_variant *v, const level *lv, wd_rng *rng, errors *e)
{
    const wd_mg_op *c = &lv->coarse;
    const int volume = (int)c->volume, n = c->n;
    const size_t cn = (size_t)volume * n, fn = wd_volume(fine_dims) * 12;
    wd_coarse_layout l;
    wd_status st = wd_coarse_layout_make(&l, volume, v->nvec, v->precision);
    if (st != WD_OK)
        return st;
    double complex *in = xalloc(cn * sizeof *in), *x = xalloc(cn * sizeof *x);
    double complex *got = xalloc(cn * sizeof *got), *want = xalloc(cn * sizeof *want);
    double complex *cv = xalloc(cn * sizeof *cv);
    double complex *fa = xalloc(fn * sizeof *fa), *fb = xalloc(fn * sizeof *fb);
    fill_random(in, cn, rng);
    fill_random(x, cn, rng);
    const double a = 0.5 + wd_rng_uniform(rng);

    /* the definition, in float64 */
    memcpy(cv, in, cn * sizeof *cv);
    if (v->dagger)
        coarse_g5(cv, (size_t)volume, v->nvec);
    wd_mg_prolong(&lv->tr, fa, cv);
    ref_apply(lv, fb, fa);
    wd_mg_restrict(&lv->tr, want, fb);
    if (v->dagger)
        coarse_g5(want, (size_t)volume, v->nvec);
    if (v->xpay)
        for (size_t i = 0; i < cn; ++i)
            want[i] = x[i] + a * want[i];

    /* the kernel on packed fields */
    void *links = xalloc(l.link_bytes), *pin = xalloc(l.spinor_bytes);
    void *px = xalloc(l.spinor_bytes), *pout = xalloc(l.spinor_bytes);
    float *lnorm = xalloc(l.link_norm_bytes), *in_norm = xalloc(l.spinor_norm_bytes);
    float *x_norm = xalloc(l.spinor_norm_bytes), *out_norm = xalloc(l.spinor_norm_bytes);
    wd_pack_coarse_links(&l, links, lnorm, c->links);
    wd_pack_coarse_spinor(&l, pin, in_norm, in);
    wd_pack_coarse_spinor(&l, px, x_norm, x);
    const int half = v->precision == WD_PREC_HALF;
    const size_t reals = l.spinor_bytes / (size_t)v->precision;
    for (size_t r = 0; r < reals; ++r) {
        if (half)
            ((short *)pout)[r] = -32768;
        else
            ((float *)pout)[r] = NAN;
    }
    if (half)
        for (int s = 0; s < volume; ++s)
            out_norm[s] = NAN;
    packed h = {links, pin, px, pout, lnorm, in_norm, x_norm, out_norm, c->nbr};
    wd_coarse_args args;
    args_set(&args, v, &h, volume, a);
    double complex *cpu = NULL;
    if (gpu) {
        /* the CPU kernel on the same packed input, for the cpu= column */
        void *cout = xalloc(l.spinor_bytes);
        float *cnorm = xalloc(l.spinor_norm_bytes);
        packed hc = h;
        hc.out = cout;
        hc.out_norm = cnorm;
        wd_coarse_args cargs;
        args_set(&cargs, v, &hc, volume, a);
        st = wd_coarse_apply_cpu(&l, v->dagger, v->xpay, &cargs);
        cpu = xalloc(cn * sizeof *cpu);
        wd_unpack_coarse_spinor(&l, cpu, cout, cnorm);
        free(cout);
        free(cnorm);
        if (st == WD_OK)
            st = run_gpu(v, &l, &h, a);
        if (st == WD_OK) {
            /* the same bits with the largest block (1024 threads wanted:
             * the multigrid times block sizes at setup and keeps the
             * fastest; each site's sums are its own threads') */
            void *first = xalloc(l.spinor_bytes);
            float *first_norm = xalloc(l.spinor_norm_bytes + 1);
            memcpy(first, pout, l.spinor_bytes);
            memcpy(first_norm, out_norm, l.spinor_norm_bytes);
            memset(pout, 0xff, l.spinor_bytes);
            memset(out_norm, 0xff, l.spinor_norm_bytes);
            const int chosen = gpu_block;
            gpu_block = 1024;
            st = run_gpu(v, &l, &h, a);
            gpu_block = chosen;
            e->blocks_differ = st == WD_OK && (memcmp(first, pout, l.spinor_bytes) != 0 ||
                                               memcmp(first_norm, out_norm,
                                                      l.spinor_norm_bytes) != 0);
            free(first);
            free(first_norm);
        }
    } else {
        st = wd_coarse_apply_cpu(&l, v->dagger, v->xpay, &args);
    }
    if (st == WD_OK) {
        e->unwritten = 0;
        for (int s = 0; s < volume; ++s) {
            int bad = half && !isfinite(out_norm[s]);
            for (int r = 0; r < 2 * n; ++r) {
                const size_t at = (size_t)s * 2 * n + r;
                bad |= half ? ((short *)pout)[at] == -32768 : !isfinite(((float *)pout)[at]);
            }
            e->unwritten += bad;
        }
        wd_unpack_coarse_spinor(&l, got, pout, out_norm);
        double num = 0, den = 0, gn = 0, dmax = 0, wmax = 0;
        for (size_t i = 0; i < cn; ++i) {
            const double d = cabs(got[i] - want[i]);
            num += d * d;
            den += creal(want[i]) * creal(want[i]) + cimag(want[i]) * cimag(want[i]);
            gn += creal(got[i]) * creal(got[i]) + cimag(got[i]) * cimag(got[i]);
            dmax = d > dmax || d != d ? d : dmax;
            wmax = fmax(wmax, cabs(want[i]));
        }
        if (!(den > 0) || !(gn > 0)) {
            fprintf(stderr, "%s: %s output is zero: the test would prove nothing\n", v->name,
                    den > 0 ? "the kernel's" : "the reference");
            e->rel_l2 = e->rel_max = INFINITY;
        } else {
            e->rel_l2 = sqrt(num / den);
            e->rel_max = dmax / wmax;
        }
        if (cpu) {
            double cd = 0, cc = 0;
            for (size_t i = 0; i < cn; ++i) {
                const double d = cabs(got[i] - cpu[i]);
                cd += d * d;
                cc += creal(cpu[i]) * creal(cpu[i]) + cimag(cpu[i]) * cimag(cpu[i]);
            }
            e->cpu_diff = cc > 0 ? sqrt(cd / cc) : INFINITY;
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

/* the larger error, NaN if either is (fmax would drop it) */
static double worse(double a, double b)
{
    return a != a || b != b ? NAN : fmax(a, b);
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
    for (int k = 0; k < wd_coarse_variant_count; ++k) {
        const wd_coarse_variant *v = &wd_coarse_variants[k];
        if (!selected(v->name, glob) || v->nrhs != 1)
            continue;
        wd_coarse_layout l;
        if (wd_coarse_layout_make(&l, volume, v->nvec, v->precision) != WD_OK)
            continue;
        packed p = {0};
        p.links = bench_buffer(l.link_bytes, v->precision, 0, &rng);
        p.lnorm = bench_buffer(l.link_norm_bytes, v->precision, 1, &rng);
        p.in = bench_buffer(l.spinor_bytes, v->precision, 0, &rng);
        p.in_norm = bench_buffer(l.spinor_norm_bytes, v->precision, 1, &rng);
        p.x = bench_buffer(l.spinor_bytes, v->precision, 0, &rng);
        p.x_norm = bench_buffer(l.spinor_norm_bytes, v->precision, 1, &rng);
        p.out = bench_buffer(l.spinor_bytes, v->precision, 0, &rng);
        p.out_norm = bench_buffer(l.spinor_norm_bytes, v->precision, 1, &rng);
        p.nbr = nbr_here;
        const double a = 0.5;
        wd_coarse_args args;
        args_set(&args, v, &p, volume, a);
        double *t = xalloc((size_t)reps * sizeof *t);
        wd_status st = WD_OK;
        for (int r = -2; r < reps && st == WD_OK; ++r) {
            const double t0 = now();
            if (gpu) {
                st = wd_coarse_apply_cuda(&l, v->dagger, v->xpay, &args, gpu_block,
                                          wd_cuda_stream());
                if (st == WD_OK)
                    st = wd_cuda_sync();
            } else {
                st = wd_coarse_apply_cpu(&l, v->dagger, v->xpay, &args);
            }
            if (r >= 0)
                t[r] = now() - t0;
        }
        if (st != WD_OK) {
            printf("%-30s %s\n", v->name, wd_last_error());
        } else {
            qsort(t, (size_t)reps, sizeof *t, cmp_double);
            const double sec = t[reps / 2], n = l.ncomp;
            const double bytes = (double)l.link_bytes + l.link_norm_bytes
                                 + (2.0 + v->xpay) * (l.spinor_bytes + l.spinor_norm_bytes);
            const double flops = (double)volume * (WD_COARSE_BLOCKS * 8 * n * n
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
                if (v->nvec != nvec || v->nrhs != 1 || !selected(v->name, glob))
                    continue;
                errors e = {0, 0, 0, 0, 0};
                const wd_status st = run_one(v, &lv, &rng, &e);
                if (st != WD_OK) {
                    fprintf(stderr, "%s: %s\n", v->name, wd_last_error());
                    failed_run[q] = 1;
                    continue;
                }
                if (verbose)
                    printf("    %-30s %s rel_l2=%.2e max=%.2e cpu=%.2e unwritten=%d\n", v->name,
                           lv.tag, e.rel_l2, e.rel_max, e.cpu_diff, e.unwritten);
                ++ran[q];
                worst[q].rel_l2 = worse(worst[q].rel_l2, e.rel_l2);
                worst[q].rel_max = worse(worst[q].rel_max, e.rel_max);
                worst[q].cpu_diff = worse(worst[q].cpu_diff, e.cpu_diff);
                worst[q].unwritten += e.unwritten;
                worst[q].blocks_differ += e.blocks_differ;
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
                       e->unwritten == 0 && e->blocks_differ == 0 &&
                       (!gpu || e->cpu_diff <= tol);
        failed += !ok;
        char extra[96] = "", agree[32] = "";
        if (e->unwritten)
            snprintf(extra, sizeof extra, "  %d sites unwritten", e->unwritten);
        if (e->blocks_differ)
            snprintf(extra, sizeof extra, "  block 1024 gave other bits (%d operators)",
                     e->blocks_differ);
        if (gpu)
            snprintf(agree, sizeof agree, " cpu=%.2e", e->cpu_diff);
        printf("%-30s %s  rel_l2=%.2e max=%.2e%s tol=%.0e%s%s\n", v->name,
               ok ? "OK  " : "FAIL", e->rel_l2, e->rel_max, agree, tol, extra,
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
