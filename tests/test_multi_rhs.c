/*
 * test_multi_rhs: the even-odd operator on many right-hand sides at once
 * (wd_eo_mhat_multi through the multi-RHS kernels, wd_dslash_group) against
 * the same operator one right-hand side at a time (wd_eo_mhat) and against
 * the float64 reference ref_schur.
 *
 *   test_multi_rhs [--seed N] [--backend cpu|cuda]   (exit 77 without the backend)
 *
 * For each precision, Mhat and Mhat^dag, N = 1, 2, 3, 4, 7, 12, 13 and 24
 * different random sources (7 = 4 + 2 + 1 kernel calls; 12 one _t12 call
 * where the thread form is built, else 4 + 4 + 4; 24 one _t12 launch over
 * two groups) in one multi-field, poisoned outputs: every right-hand side
 * must equal its one-RHS application bit for bit (the kernels do the same
 * arithmetic per right-hand side; half precision on the GPU: within 1e-5,
 * see below) and ref_schur within the Schur tolerance of test_schur;
 * views of a multi-field are checked to address the right-hand side they
 * name.
 *
 * Each form alone: for each precision, dagger and xpay, and N = 12, 13 and
 * 24, the Dslash through wd_dslash_group with the multi-RHS kernels of one
 * form (wd_rhs_form: _n<N> registers, _t<N> a thread a site and right-hand
 * side, _sh<N> the same with the links in shared memory; one-RHS calls for
 * what they leave), where the build has that form
 * for the operator: every right-hand side the one-RHS Dslash's bits (the
 * same exception), the plan printed.  On the GPU the register form's
 * launches over several groups also run split into launches of 1, 2 and
 * 3 groups (wd_backend.force_groups, where it divides the groups; the
 * tuner's split otherwise).  One line per case; "N of M failed"
 * last.
 */
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gauge_tools.h"
#include "ref_wilson.h"
#include "test_backend.h"
#include "wd_operator.h"
#include "wd_solver.h"

static wd_backend_kind backend = WD_BACKEND_CPU;
static int checks_run, checks_failed;

static void check(int ok, const char *what, const char *detail)
{
    checks_run++;
    checks_failed += !ok;
    printf("%-58s %s  %s\n", what, ok ? "OK  " : "FAIL", detail);
}

static void *xalloc(size_t n)
{
    void *p = calloc(1, n);
    if (!p) {
        fprintf(stderr, "test_multi_rhs: out of memory\n");
        exit(1);
    }
    return p;
}

/* |got - one| / |one| over n complex numbers (infinite where not finite) */
static double rel_apart(const double complex *got, const double complex *one, size_t n)
{
    double dd = 0, nn = 0;
    for (size_t k = 0; k < n; k++) {
        dd += creal((got[k] - one[k]) * conj(got[k] - one[k]));
        nn += creal(one[k] * conj(one[k]));
    }
    return nn > 0 && isfinite(dd) ? sqrt(dd / nn) : INFINITY;
}

static int parity_of(size_t site, const int dims[4])
{
    int p = 0;
    for (int mu = 0; mu < 4; mu++) {
        p += (int)(site % (size_t)dims[mu]);
        site /= (size_t)dims[mu];
    }
    return p & 1;
}

static void run(int precision, int nrhs, wd_rng *r)
{
    static const int dims[4] = {4, 6, 4, 8};
    const size_t vol = wd_volume(dims), n = vol * 12;
    double complex *u = xalloc(vol * 36 * sizeof *u);
    double complex *x = xalloc(nrhs * n * sizeof *x), *got = xalloc(n * sizeof *got);
    double complex *one = xalloc(n * sizeof *one), *want = xalloc(n * sizeof *want);
    wd_gauge_random(u, dims, r);
    for (int q = 0; q < nrhs; q++) {
        wd_spinor_random(x + q * n, dims, r);
        for (size_t s = 0; s < vol; s++)
            if (parity_of(s, dims))
                memset(x + q * n + 12 * s, 0, 12 * sizeof *x);
    }
    const double mass = -0.2 + 0.5 * wd_rng_uniform(r), kappa = 1.0 / (2.0 * (4.0 + mass));
    const double tol = 3 * (precision == 8 ? 1e-13 : precision == 4 ? 2e-6 : 1e-3);

    wd_backend be;
    wd_gauge g;
    wd_field in, out, tmp_n, f1, o1, t1;
    wd_eo_op op;
    wd_status st = wd_backend_open(&be, backend, dims, 3);
    if (st == WD_OK)
        st = wd_gauge_create(&be, &g, (const double *)u, precision, 12, 0, WD_TIME_ANTIPERIODIC);
    if (st == WD_OK) st = wd_field_create_multi(&be, &in, precision, nrhs);
    if (st == WD_OK) st = wd_field_create_multi(&be, &out, precision, nrhs);
    if (st == WD_OK) st = wd_field_create_multi(&be, &tmp_n, precision, nrhs);
    if (st == WD_OK) st = wd_field_create(&be, &f1, precision);
    if (st == WD_OK) st = wd_field_create(&be, &o1, precision);
    if (st == WD_OK) st = wd_field_create(&be, &t1, precision);
    if (st == WD_OK)
        st = wd_eo_op_init(&op, &be, &g, kappa, &t1, 1);
    /* the multi-RHS kernels through the Schur operator on every backend
     * (the CPU backend's solvers take one-RHS calls: wd_backend_multi_rhs_pays) */
    op.multi_kernels = 1;
    op.tmp_n = &tmp_n;
    for (int q = 0; q < nrhs && st == WD_OK; q++) {
        wd_field v = wd_field_view(&in, q, 1);
        st = be.ops->upload(&be, &v, (const double *)(x + q * n), 0);
    }
    char what[128], detail[160];
    for (int dag = 0; dag < 2 && st == WD_OK; dag++) {
        /* poison every right-hand side of out: a non-finite value survives */
        for (int q = 0; q < nrhs; q++) {
            wd_field v = wd_field_view(&out, q, 1);
            for (size_t i = 0; i < n; i++)
                got[i] = NAN;
            be.ops->upload(&be, &v, (const double *)got, 0);
        }
        if ((st = wd_eo_mhat_multi(&op, &out, &in, dag, nrhs)) != WD_OK)
            break;
        int same = 1;
        double worst = 0, apart = 0;
        for (int q = 0; q < nrhs && st == WD_OK; q++) {
            const wd_field vo = wd_field_view(&out, q, 1);
            memset(got, 0, n * sizeof *got);
            memset(one, 0, n * sizeof *one);
            be.ops->download(&be, (double *)got, &vo, 0);
            /* the same right-hand side alone: the same host source packed
             * into a plain field (a half-precision BLAS copy may re-round) */
            if ((st = be.ops->upload(&be, &f1, (const double *)(x + q * n), 0)) != WD_OK)
                break;
            if ((st = wd_eo_mhat(&op, &o1, &f1, dag)) != WD_OK)
                break;
            be.ops->download(&be, (double *)one, &o1, 0);
            same &= !memcmp(got, one, n * sizeof *got);
            apart = fmax(apart, rel_apart(got, one, n));
            ref_schur(want, u, x + q * n, dims, mass, WD_TIME_ANTIPERIODIC, dag);
            double d = 0, w = 0;
            for (size_t k = 0; k < n; k++) {
                d += creal((got[k] - want[k]) * conj(got[k] - want[k]));
                w += creal(want[k] * conj(want[k]));
            }
            worst = fmax(worst, w > 0 && isfinite(d) ? sqrt(d / w) : INFINITY);
        }
        /* bit for bit everywhere except half precision on the GPU, where
         * nvcc contracts the fixed-point arithmetic of the two kernels into
         * FMAs differently: there within 1e-5 of the one-RHS result (the
         * 16-bit resolution is 3e-5 of a site's largest component) */
        const int loose = precision == 2 && backend == WD_BACKEND_CUDA;
        snprintf(what, sizeof what, "%c N=%-2d Mhat%s: each RHS = its one-RHS Mhat, %s",
                 precision == 8 ? 'd' : precision == 4 ? 's' : 'h', nrhs, dag ? "^dag" : "    ",
                 loose ? "to 1e-5" : "bit for bit");
        snprintf(detail, sizeof detail, "apart %.1e; vs ref_schur %.1e (tol %.0e)", apart, worst,
                 tol);
        check(st == WD_OK && (same || (loose && apart <= 1e-5)) && worst <= tol, what, detail);
    }
    if (st != WD_OK)
        check(0, "run", wd_last_error());
    wd_field_destroy(&be, &in);
    wd_field_destroy(&be, &out);
    wd_field_destroy(&be, &tmp_n);
    wd_field_destroy(&be, &f1);
    wd_field_destroy(&be, &o1);
    wd_field_destroy(&be, &t1);
    wd_gauge_destroy(&be, &g);
    check(be.bytes_allocated == 0, "every field freed (multi-fields and views)", "");
    wd_backend_close(&be);
    free(u), free(x), free(got), free(one), free(want);
}

/* the Wilson kernels of g's axes of one form (wd_dslash_group) */
typedef struct form_family {
    const wd_gauge *g;
    int dagger, xpay, form;
} form_family;

static int form_kernel(const void *ctx, int n)
{
    const form_family *f = ctx;
    return wd_variant_find_form(WD_OP_WILSON, f->g->precision, f->g->recon, f->g->gauge_fix,
                                f->dagger, f->xpay, n, f->form);
}

/* "t12*2+1": the plan's calls (bench dslash --nrhs's names) */
static void plan_name(const wd_group_plan *p, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    for (int c = 0; c < p->calls && at < len; ++c) {
        const wd_variant *v = &wd_variants[p->variant[c]];
        const char *form = v->nrhs == 1 ? "" : v->form == WD_FORM_THREADS ? "t"
                           : v->form == WD_FORM_SHARED ? "sh" : "";
        const int w = snprintf(buf + at, len - at, "%s%s%d%s", c ? "+" : "", form, v->nrhs,
                               p->nrhs[c] > v->nrhs ? "*" : "");
        at += w > 0 ? (size_t)w : 0;
        if (p->nrhs[c] > v->nrhs && at < len) {
            const int m = snprintf(buf + at, len - at, "%d", p->nrhs[c] / v->nrhs);
            at += m > 0 ? (size_t)m : 0;
        }
    }
}

/* The Dslash of every form built for the operator on nrhs random sources
 * at once against each source alone (wd_dslash with the one-RHS variant). */
static void run_forms(int precision, int nrhs, wd_rng *r)
{
    static const int dims[4] = {4, 6, 4, 8};
    const size_t vol = wd_volume(dims), n = vol * 12;
    double complex *u = xalloc(vol * 36 * sizeof *u), *h = xalloc(n * sizeof *h);
    double complex *got = xalloc(n * sizeof *got), *one = xalloc(n * sizeof *one);
    wd_gauge_random(u, dims, r);
    wd_backend be;
    wd_gauge g;
    wd_field in, x, out, o1;
    wd_status st = wd_backend_open(&be, backend, dims, 3);
    if (st == WD_OK)
        st = wd_gauge_create(&be, &g, (const double *)u, precision, 12, 0, WD_TIME_ANTIPERIODIC);
    if (st == WD_OK) st = wd_field_create_multi(&be, &in, precision, nrhs);
    if (st == WD_OK) st = wd_field_create_multi(&be, &x, precision, nrhs);
    if (st == WD_OK) st = wd_field_create_multi(&be, &out, precision, nrhs);
    if (st == WD_OK) st = wd_field_create(&be, &o1, precision);
    for (int q = 0; q < nrhs && st == WD_OK; q++) {
        wd_field vi = wd_field_view(&in, q, 1), vx = wd_field_view(&x, q, 1);
        wd_spinor_random(h, dims, r);
        st = be.ops->upload(&be, &vi, (const double *)h, 1);
        if (st == WD_OK) {
            wd_spinor_random(h, dims, r);
            st = be.ops->upload(&be, &vx, (const double *)h, 0);
        }
    }
    const double a = -0.1 - 0.5 * wd_rng_uniform(r);
    const char p = precision == 8 ? 'd' : precision == 4 ? 's' : 'h';
    const int loose = precision == 2 && backend == WD_BACKEND_CUDA;
    char what[256], detail[160], plan[64];
    for (int form = WD_FORM_REGISTERS; form <= WD_FORM_SHARED && st == WD_OK; form++)
        for (int dag = 0; dag < 2 && st == WD_OK; dag++)
            for (int xpay = 0; xpay < 2 && st == WD_OK; xpay++) {
                /* only a form the build has for this operator */
                int built = 0;
                for (int m = 2; m <= nrhs; m++)
                    built |= wd_variant_find_form(WD_OP_WILSON, precision, 12, 0, dag, xpay, m,
                                                  form) >= 0;
                const int k1 = wd_variant_find_nrhs(WD_OP_WILSON, precision, 12, 0, dag, xpay, 1);
                if (!built || k1 < 0)
                    continue;
                /* on the GPU a launch over several groups also split into
                 * launches of 1, 2 and 3 groups where that divides them
                 * (the tuner may choose any: wd_tune_groups) */
                const int splits = backend == WD_BACKEND_CUDA && form == WD_FORM_REGISTERS ? 3 : 0;
                for (int split = 0; split <= splits && st == WD_OK; split++) {
                    be.force_groups = split;
                    for (int q = 0; q < nrhs; q++) {
                        wd_field vo = wd_field_view(&out, q, 1);
                        for (size_t i = 0; i < n; i++)
                            got[i] = NAN;
                        be.ops->upload(&be, &vo, (const double *)got, 0);
                    }
                    const form_family fam = {&g, dag, xpay, form};
                    wd_group_plan gp;
                    st = wd_dslash_group(&be, form_kernel, &fam, &out, &g, NULL, &in,
                                         xpay ? &x : NULL, a, 0, nrhs, &gp);
                    int same = 1, used = 0;
                    double apart = 0;
                    for (int c = 0; c < gp.calls && st == WD_OK; c++)
                        used |= wd_variants[gp.variant[c]].nrhs > 1 &&
                                wd_variants[gp.variant[c]].form == form;
                    for (int q = 0; q < nrhs && st == WD_OK; q++) {
                        wd_field vo = wd_field_view(&out, q, 1), vi = wd_field_view(&in, q, 1);
                        wd_field vx = wd_field_view(&x, q, 1);
                        st = wd_dslash(&be, k1, &o1, &g, &vi, xpay ? &vx : NULL, a, 0);
                        if (st != WD_OK)
                            break;
                        memset(got, 0, n * sizeof *got);
                        memset(one, 0, n * sizeof *one);
                        be.ops->download(&be, (double *)got, &vo, 0);
                        be.ops->download(&be, (double *)one, &o1, 0);
                        same &= !memcmp(got, one, n * sizeof *got);
                        apart = fmax(apart, rel_apart(got, one, n));
                    }
                    plan_name(&gp, plan, sizeof plan);
                    char split_note[48] = "";
                    if (split > 0)
                        snprintf(split_note, sizeof split_note, ", %d group%s a launch asked",
                                 split, split > 1 ? "s" : "");
                    const char *fname = form == WD_FORM_THREADS  ? "thread"
                                        : form == WD_FORM_SHARED ? "shared"
                                                                 : "register";
                    snprintf(what, sizeof what,
                             "%c N=%-2d D%s xpay%d %s form (%s%s): = one-RHS, %s", p, nrhs,
                             dag ? "^dag" : "    ", xpay, fname, plan, split_note,
                             loose ? "to 1e-5" : "bits");
                    snprintf(detail, sizeof detail, "apart %.1e", apart);
                    const int agree = same || (loose && apart <= 1e-5);
                    check(st == WD_OK && used && isfinite(apart) && agree, what, detail);
                }
                be.force_groups = 0;
            }
    if (st != WD_OK)
        check(0, "run", wd_last_error());
    wd_field_destroy(&be, &in);
    wd_field_destroy(&be, &x);
    wd_field_destroy(&be, &out);
    wd_field_destroy(&be, &o1);
    wd_gauge_destroy(&be, &g);
    wd_backend_close(&be);
    free(u), free(h), free(got), free(one);
}

int main(int argc, char **argv)
{
    uint64_t seed = (uint64_t)time(NULL);
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--seed"))
            seed = strtoull(argv[i + 1], NULL, 0);
    backend = test_backend_arg(argc, argv);
    printf("test_multi_rhs: seed %llu (--seed N replays)\n", (unsigned long long)seed);
    wd_rng r;
    wd_rng_seed(&r, seed);
    static const int precisions[3] = {8, 4, 2}, counts[8] = {1, 2, 3, 4, 7, 12, 13, 24};
    static const int form_counts[3] = {12, 13, 24};
    for (int p = 0; p < 3; p++)
        for (int c = 0; c < 8; c++)
            run(precisions[p], counts[c], &r);
    for (int p = 0; p < 3; p++)
        for (int c = 0; c < 3; c++)
            run_forms(precisions[p], form_counts[c], &r);
    printf("%d of %d failed\n", checks_failed, checks_run);
    return checks_failed ? 1 : 0;
}
