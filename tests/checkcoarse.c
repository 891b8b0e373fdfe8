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
 * One line per variant: worst relative L2 error and worst max error
 * (relative to max |r|) of the two operators, the tolerance; "N of M
 * failed" last.  A built variant left untested fails the run.  Exit 0 when
 * all pass, 1 otherwise, 77 (skipped) for a build without coarse variants.
 *
 *   checkcoarse [--seed N] [--kernels GLOB] [--verbose]
 */
#include <complex.h>
#include <fnmatch.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clover_field.h"
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
 * per stored real), about 10x the worst measured over 20 seeds (gcc 12,
 * x86-64; docs/coarse-kernels.md): single storage rounds every link and
 * input to 24 bits and sums 9 x 2 Nvec products a row in float; half
 * stores 16-bit fixed point of each block, site and output, relative to
 * their largest real.
 */
static double tolerance(int precision)
{
    return precision == WD_PREC_SINGLE ? 1e-5 : 3e-3;
}

static const int fine_dims[4] = {8, 8, 8, 4};
static const int block[4] = {2, 2, 2, 1};
static const double mass = -0.4, csw = 1.5;
static int verbose;

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
    if (wd_mg_op_fine(&lv->fine, fine_dims, (const double *)lv->u, lv->blocks,
                      0.5 / (4.0 + mass), lv->tbc) != WD_OK ||
        wd_mg_transfer_init(&lv->tr, 0, fine_dims, 12, block, nvec) != WD_OK)
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
    int unwritten;      /* sites the kernel left poisoned */
} errors;

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
    wd_coarse_args args;
    memset(&args, 0, sizeof args);
    args.out = pout;
    args.in = pin;
    args.x = v->xpay ? px : NULL;
    args.links = links;
    args.nbr = c->nbr;
    args.volume = volume;
    args.a = a;
    if (half) {
        args.out_norm = out_norm;
        args.in_norm = in_norm;
        args.x_norm = v->xpay ? x_norm : NULL;
        args.link_norm = lnorm;
    }
    st = wd_coarse_apply_cpu(&l, v->dagger, v->xpay, &args);
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
    }
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

int main(int argc, char **argv)
{
    uint64_t seed = (uint64_t)time(NULL);
    const char *glob = NULL;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--kernels") && i + 1 < argc)
            glob = argv[++i];
        else if (!strcmp(argv[i], "--verbose"))
            verbose = 1;
        else {
            fprintf(stderr, "usage: checkcoarse [--seed N] [--kernels GLOB] [--verbose]\n");
            return 2;
        }
    }
    const int count = wd_coarse_variant_count;
    if (count == 0) {
        printf("checkcoarse: this build has no coarse variant (-Dkernels): skipped\n");
        return 77;
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
                errors e = {0, 0, 0};
                const wd_status st = run_one(v, &lv, &rng, &e);
                if (st != WD_OK) {
                    fprintf(stderr, "%s: %s\n", v->name, wd_last_error());
                    failed_run[q] = 1;
                    continue;
                }
                if (verbose)
                    printf("    %-30s %s rel_l2=%.2e max=%.2e unwritten=%d\n", v->name, lv.tag,
                           e.rel_l2, e.rel_max, e.unwritten);
                ++ran[q];
                worst[q].rel_l2 = worse(worst[q].rel_l2, e.rel_l2);
                worst[q].rel_max = worse(worst[q].rel_max, e.rel_max);
                worst[q].unwritten += e.unwritten;
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
                       e->unwritten == 0;
        failed += !ok;
        char extra[64] = "";
        if (e->unwritten)
            snprintf(extra, sizeof extra, "  %d sites unwritten", e->unwritten);
        printf("%-30s %s  rel_l2=%.2e max=%.2e tol=%.0e%s%s\n", v->name, ok ? "OK  " : "FAIL",
               e->rel_l2, e->rel_max, tol, extra, failed_run[k] ? "  (run failed)" : "");
    }
    if (untested)
        printf("%d built variants left untested\n", untested);
    if (tested + untested == 0)
        printf("no coarse variant tested (--kernels %s matches none)\n", glob ? glob : "*");
    printf("%d of %d failed\n", failed, tested + untested);
    free(worst);
    free(ran);
    free(failed_run);
    return failed || tested + untested == 0 ? 1 : 0;
}
