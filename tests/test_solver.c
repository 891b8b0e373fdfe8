/*
 * test_solver: wd_solve end to end on the CPU backend: every solver x
 * precision combination converges, and the error paths return the right
 * status with a finite best iterate.
 *
 *   test_solver [--seed N] [--verbose] [--backend cpu|cuda]
 *              (default seed: the time, printed; exit 77 when the backend is absent)
 *
 * Problems: a 4^4 lattice with Haar-random links (mass 0.1) and a 4x4x4x8
 * lattice with smooth links exp(i 0.2 H) (mass 0.02, closer to critical),
 * antiperiodic time, random sources.  Every solution is checked here with
 * the float64 reference operator on the caller's fields: ||b - M x|| / ||b||
 * must meet the tolerance, and must agree with the true residual wd_solve
 * reports.  Tolerances:
 *   double, and every mixed solve (double outer; single or half sloppy,
 *   reliable updates, defect correction or plain restarts):   1e-10
 *   pure single: 1e-6 (the true residual of a single-precision solve floors
 *   near 1e-7 here: single's 6e-8 rounding in the source preparation, the
 *   operator and the odd-site reconstruction)
 *   pure half:   1e-3 (floors near 4e-5: the 16-bit fixed point's 3e-5 per
 *   Dslash application, the same way)
 * One combination per solver runs with periodic time and padded fields.
 * Gauge-fixed and recon-8 combinations run where their variants are built
 * (SKIP otherwise).  Error paths: NaN source, zero source, a too-tight
 * tolerance in pure half (stagnation), an iteration limit, the CUDA
 * backend (not built).  Reuse: one wd_solver for several solves (solver,
 * mass, method and accumulator changed between them): each converges, gives
 * the same bits as wd_solve, reports progress; a changed gauge setting is
 * refused.
 * One line per solve: status, iterations k + l (updates), true residual,
 * bytes; "N of M failed" last; exit 0 when all pass.
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
#include "wd_backend.h"
#include "wd_operator.h"
#include "wdirac.h"

/* --backend cpu|cuda: the backend under test (exit 77 when it is absent) */
static wd_backend_kind backend = WD_BACKEND_CPU;
static int checks_run, checks_failed, skipped, verbose;

static void *xalloc(size_t n)
{
    void *p = calloc(1, n);
    if (!p) {
        fprintf(stderr, "test_solver: out of memory\n");
        exit(1);
    }
    return p;
}

typedef struct problem {
    const char *name;
    int dims[4];
    double mass;
    int smooth;
    double complex *u, *b, *x;
    size_t vol;
} problem;

/* ||b - M x|| / ||b|| with the float64 reference */
static double true_residual(const problem *p, const double complex *x, int tbc)
{
    const size_t n = p->vol * 12;
    double complex *mx = xalloc(n * sizeof *mx);
    ref_wilson(mx, p->u, x, p->dims, p->mass, tbc, 0);
    double num = 0, den = 0;
    for (size_t k = 0; k < n; k++) {
        num += creal((p->b[k] - mx[k]) * conj(p->b[k] - mx[k]));
        den += creal(p->b[k] * conj(p->b[k]));
    }
    free(mx);
    return sqrt(num / den);
}

static int finite_field(const double complex *x, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (!isfinite(creal(x[k])) || !isfinite(cimag(x[k])))
            return 0;
    return 1;
}

static int built(int precision, int recon, int gf, int cg)
{
    for (int dag = 0; dag <= cg; dag++)
        for (int xpay = 0; xpay < 2; xpay++)
            if (wd_variant_find_axes(precision, recon, gf, dag, xpay) < 0)
                return 0;
    return 1;
}

static const char *prec_name(int p)
{
    return p == 8 ? "d" : p == 4 ? "s" : "h";
}

static const char *mixed_name(int m)
{
    return m == WD_MIXED_RELIABLE ? "reliable" : m == WD_MIXED_DEFECT ? "defect" : "none";
}

static void result(const char *what, int ok, const char *detail)
{
    checks_run++;
    checks_failed += !ok;
    printf("%-64s %s %s\n", what, ok ? "OK  " : "FAIL", detail);
}

/* One solve that must converge to tol. */
static void solve_case(problem *p, const wd_solver_settings *s, double tol)
{
    char what[160], detail[256];
    snprintf(what, sizeof what, "%s %-8s %s(r%d gf%d)-%s(r%d gf%d) %s%s%s", p->name,
             s->solver == WD_SOLVER_CG ? "CG-NE" : "BiCGstab", prec_name(s->precision), s->recon,
             s->gauge_fix, prec_name(s->sloppy_precision), s->sloppy_recon, s->sloppy_gauge_fix,
             mixed_name(s->mixed), s->tbc == WD_TIME_PERIODIC ? " tbc+1 pad7" : "",
             s->accumulator == WD_ACCUM_SLOPPY ? " acc:sloppy"
             : s->accumulator == WD_ACCUM_OUTER ? " acc:outer" : "");
    const int cg = s->solver == WD_SOLVER_CG;
    if (!built(s->precision, s->recon, s->gauge_fix, cg) ||
        !built(s->sloppy_precision, s->sloppy_recon, s->sloppy_gauge_fix, cg)) {
        printf("%-64s SKIP (variants not built)\n", what);
        skipped++;
        return;
    }
    wd_solver_settings set = *s;
    set.backend = backend;
    set.mass = p->mass;
    set.tol = tol;
    set.verbosity = verbose ? 2 : 0;
    wd_solver_stats st;
    const wd_status rc = wd_solve((double *)p->x, (const double *)p->u, (const double *)p->b,
                                  p->dims, &set, &st);
    const double res = true_residual(p, p->x, set.tbc);
    const int ok = rc == WD_OK && res <= tol && fabs(res - st.true_residual) <= 1e-3 * res + 1e-15;
    snprintf(detail, sizeof detail, "it=%4d (k=%d l=%d) true=%.2e (stats %.2e) tol=%.0e %zuB%s%s",
             st.iterations, st.sloppy_iterations, st.updates, res, st.true_residual, tol,
             st.bytes_allocated, rc == WD_OK ? "" : " status: ",
             rc == WD_OK ? "" : wd_last_error());
    result(what, ok, detail);
}

static void default_for(wd_solver_settings *s, int solver, int outer, int sloppy, int mixed)
{
    wd_solver_default_settings(s);
    s->backend = backend;
    s->solver = solver;
    s->precision = outer;
    s->sloppy_precision = sloppy;
    s->mixed = mixed;
}

static void convergence(problem *p)
{
    static const int solvers[2] = {WD_SOLVER_CG, WD_SOLVER_BICGSTAB};
    wd_solver_settings s;
    for (int si = 0; si < 2; si++) {
        const int sv = solvers[si];
        /* pure precisions */
        default_for(&s, sv, 8, 8, WD_MIXED_RELIABLE);
        solve_case(p, &s, 1e-10);
        default_for(&s, sv, 8, 8, WD_MIXED_NONE);
        solve_case(p, &s, 1e-10);
        default_for(&s, sv, 4, 4, WD_MIXED_RELIABLE);
        solve_case(p, &s, 1e-6);
        default_for(&s, sv, 2, 2, WD_MIXED_RELIABLE);
        solve_case(p, &s, 1e-3);
        /* mixed: double outer, single or half sloppy, each method */
        static const int methods[3] = {WD_MIXED_RELIABLE, WD_MIXED_DEFECT, WD_MIXED_NONE};
        for (int sloppy = 4; sloppy >= 2; sloppy /= 2)
            for (int mi = 0; mi < 3; mi++) {
                default_for(&s, sv, 8, sloppy, methods[mi]);
                solve_case(p, &s, 1e-10);
            }
        /* reconstruction and gauge fixing chosen per level */
        default_for(&s, sv, 8, 4, WD_MIXED_RELIABLE);
        s.sloppy_recon = 8;
        s.sloppy_gauge_fix = 1;
        solve_case(p, &s, 1e-10);
        default_for(&s, sv, 8, 2, WD_MIXED_RELIABLE);
        s.gauge_fix = 1;
        s.sloppy_gauge_fix = 1;
        solve_case(p, &s, 1e-10);
        default_for(&s, sv, 8, 2, WD_MIXED_DEFECT);
        s.recon = 18;
        s.sloppy_recon = 12;
        s.sloppy_gauge_fix = 1;
        solve_case(p, &s, 1e-10);
        /* the partial accumulator in the other precision than the default */
        for (int sloppy = 4; sloppy >= 2; sloppy /= 2) {
            default_for(&s, sv, 8, sloppy, WD_MIXED_RELIABLE);
            s.accumulator = sv == WD_SOLVER_CG ? WD_ACCUM_SLOPPY : WD_ACCUM_OUTER;
            solve_case(p, &s, 1e-10);
        }
        /* periodic time, padded fields */
        default_for(&s, sv, 8, 4, WD_MIXED_RELIABLE);
        s.tbc = WD_TIME_PERIODIC;
        s.pad = 7;
        solve_case(p, &s, 1e-10);
    }
}

/* The error paths: status, finite x, a true residual that matches x. */
static void errors(problem *p, wd_rng *r)
{
    const size_t n = p->vol * 12;
    wd_solver_settings s;
    wd_solver_stats st;
    char detail[256];
    wd_status rc;

    /* NaN source: invalid input, x left zero */
    wd_solver_default_settings(&s);
    s.backend = backend;
    s.mass = p->mass;
    double complex *bad = xalloc(n * sizeof *bad);
    memcpy(bad, p->b, n * sizeof *bad);
    bad[n / 3] = CMPLX(NAN, 0);
    for (size_t k = 0; k < n; k++)
        p->x[k] = 1;
    rc = wd_solve((double *)p->x, (const double *)p->u, (const double *)bad, p->dims, &s, &st);
    double xn = 0;
    for (size_t k = 0; k < n; k++)
        xn += cabs(p->x[k]);
    snprintf(detail, sizeof detail, "[%s] %s", wd_status_string(rc), wd_last_error());
    result("error: NaN in the source -> invalid, x = 0", rc == WD_ERR_INVALID && xn == 0, detail);

    /* zero source: x = 0 exactly, converged */
    memset(bad, 0, n * sizeof *bad);
    rc = wd_solve((double *)p->x, (const double *)p->u, (const double *)bad, p->dims, &s, &st);
    xn = 0;
    for (size_t k = 0; k < n; k++)
        xn += cabs(p->x[k]);
    snprintf(detail, sizeof detail, "[%s] it=%d true=%.1e", wd_status_string(rc), st.iterations,
             st.true_residual);
    result("error: zero source -> ok, x = 0, no iterations",
           rc == WD_OK && xn == 0 && st.iterations == 0 && st.true_residual == 0, detail);
    free(bad);

    /* stagnation: pure half cannot reach 1e-10 */
    static const int solvers[2] = {WD_SOLVER_CG, WD_SOLVER_BICGSTAB};
    for (int si = 0; si < 2; si++) {
        default_for(&s, solvers[si], 2, 2, WD_MIXED_RELIABLE);
        s.mass = p->mass;
        s.tol = 1e-10;
        rc = wd_solve((double *)p->x, (const double *)p->u, (const double *)p->b, p->dims, &s, &st);
        double res = true_residual(p, p->x, s.tbc);
        snprintf(detail, sizeof detail, "[%s] it=%d true=%.2e (stats %.2e) %s",
                 wd_status_string(rc), st.iterations, res, st.true_residual, wd_last_error());
        result(solvers[si] == WD_SOLVER_CG ? "error: pure half CG-NE to 1e-10 -> stagnated"
                                           : "error: pure half BiCGstab to 1e-10 -> stagnated",
               rc == WD_ERR_STAGNATED && finite_field(p->x, n) && res < 0.1 &&
                   fabs(res - st.true_residual) <= 1e-6,
               detail);
    }

    /* iteration limit: best iterate, better than x = 0 */
    for (int si = 0; si < 2; si++) {
        default_for(&s, solvers[si], 8, 4, WD_MIXED_RELIABLE);
        s.mass = p->mass;
        s.max_iter = 6;
        rc = wd_solve((double *)p->x, (const double *)p->u, (const double *)p->b, p->dims, &s, &st);
        double res = true_residual(p, p->x, s.tbc);
        snprintf(detail, sizeof detail, "[%s] it=%d true=%.2e %s", wd_status_string(rc),
                 st.iterations, res, wd_last_error());
        result(solvers[si] == WD_SOLVER_CG ? "error: CG-NE max_iter 6 -> iteration limit"
                                           : "error: BiCGstab max_iter 6 -> iteration limit",
               rc == WD_ERR_MAX_ITER && st.iterations <= 6 && finite_field(p->x, n) && res < 1 &&
                   fabs(res - st.true_residual) <= 1e-3 * res,
               detail);
    }

    /* the CUDA backend: not built yet (or, once it is, no GPU / a solve) */
    wd_solver_default_settings(&s);
    s.backend = WD_BACKEND_CUDA;
    s.mass = p->mass;
    rc = wd_solve((double *)p->x, (const double *)p->u, (const double *)p->b, p->dims, &s, &st);
    snprintf(detail, sizeof detail, "[%s] %s", wd_status_string(rc), rc ? wd_last_error() : "");
    result("error: CUDA backend -> not built (or no GPU, or ok)",
           (rc == WD_ERR_NOT_BUILT || rc == WD_ERR_NO_DEVICE) ? wd_last_error()[0] != 0
                                                              : rc == WD_OK,
           detail);
    s.backend = (wd_backend_kind)7;
    rc = wd_solve((double *)p->x, (const double *)p->u, (const double *)p->b, p->dims, &s, &st);
    snprintf(detail, sizeof detail, "[%s] %s", wd_status_string(rc), wd_last_error());
    result("error: backend 7 -> invalid", rc == WD_ERR_INVALID, detail);

    /* bad settings */
    wd_solver_default_settings(&s);
    s.delta = 1.5;
    rc = wd_solve((double *)p->x, (const double *)p->u, (const double *)p->b, p->dims, &s, &st);
    snprintf(detail, sizeof detail, "[%s] %s", wd_status_string(rc), wd_last_error());
    result("error: delta 1.5 -> invalid", rc == WD_ERR_INVALID, detail);
    (void)r;
}

typedef struct watch {
    int calls, last, monotone;
} watch;

static void on_progress(void *arg, int iterations, double residual)
{
    watch *w = arg;
    w->monotone &= iterations >= w->last && isfinite(residual) && residual > 0;
    w->last = iterations;
    w->calls++;
}

/* One solver, many solves: each solve on the kept gauge field converges and
 * gives the same bits as a one-shot wd_solve with the same settings, a
 * repeated solve the same bits again, and a solve that changes a setting
 * the uploaded fields depend on is refused. */
static void reuse(problem *p)
{
    const size_t n = p->vol * 12;
    wd_solver_settings s;
    default_for(&s, WD_SOLVER_BICGSTAB, 8, 2, WD_MIXED_RELIABLE);
    s.mass = p->mass;
    s.tol = 1e-10;
    char detail[256];
    if (!built(8, 12, 0, 1) || !built(2, 12, 0, 1)) {
        printf("%-64s SKIP (variants not built)\n", "solver reuse");
        skipped++;
        return;
    }
    wd_solver *sv = NULL;
    wd_status rc = wd_solver_create(&sv, (const double *)p->u, p->dims, &s);
    snprintf(detail, sizeof detail, "[%s] %s", wd_status_string(rc), rc ? wd_last_error() : "");
    result("reuse: wd_solver_create d-h", rc == WD_OK, detail);
    if (rc != WD_OK)
        return;
    double complex *x1 = xalloc(n * sizeof *x1);
    /* solver, mass, accumulator and method change from solve to solve */
    static const struct {
        int solver, mixed, accumulator;
        double dmass;
    } runs[] = {
        {WD_SOLVER_BICGSTAB, WD_MIXED_RELIABLE, WD_ACCUM_AUTO, 0},
        {WD_SOLVER_CG, WD_MIXED_RELIABLE, WD_ACCUM_AUTO, 0.05},
        {WD_SOLVER_BICGSTAB, WD_MIXED_DEFECT, WD_ACCUM_OUTER, 0.1},
        {WD_SOLVER_CG, WD_MIXED_RELIABLE, WD_ACCUM_SLOPPY, 0},
        {WD_SOLVER_BICGSTAB, WD_MIXED_RELIABLE, WD_ACCUM_AUTO, 0},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        wd_solver_settings t = s;
        t.solver = runs[i].solver;
        t.mixed = runs[i].mixed;
        t.accumulator = runs[i].accumulator;
        t.mass = p->mass + runs[i].dmass;
        watch w = {0, 0, 1};
        t.progress = on_progress;
        t.progress_arg = &w;
        wd_solver_stats st, st1;
        rc = wd_solver_solve(sv, (double *)p->x, (const double *)p->b, &t, &st);
        problem q = *p;
        q.mass = t.mass;
        const double res = true_residual(&q, p->x, t.tbc);
        t.progress = NULL;
        const wd_status rc1 = wd_solve((double *)x1, (const double *)p->u, (const double *)p->b,
                                       p->dims, &t, &st1);
        const int same = memcmp(x1, p->x, n * sizeof *x1) == 0;
        char what[128];
        snprintf(what, sizeof what, "reuse: solve %zu (%s %s m%+.2f acc %d) = one-shot bits", i,
                 t.solver == WD_SOLVER_CG ? "CG-NE" : "BiCGstab", mixed_name(t.mixed), t.mass,
                 (int)t.accumulator);
        snprintf(detail, sizeof detail, "it=%d true=%.2e progress calls %d%s, same bits %s, "
                 "setup %.1e s", st.iterations, res, w.calls, w.monotone ? "" : " NOT MONOTONE",
                 same ? "yes" : "NO", st1.setup_seconds);
        result(what, rc == WD_OK && rc1 == WD_OK && res <= 1e-10 && same &&
                   w.calls >= st.iterations && w.monotone && st.setup_seconds == 0,
               detail);
    }
    /* a setting the uploaded gauge fields depend on */
    wd_solver_settings t = s;
    t.sloppy_recon = 18;
    for (size_t k = 0; k < n; k++)
        p->x[k] = 1;
    rc = wd_solver_solve(sv, (double *)p->x, (const double *)p->b, &t, NULL);
    double xn = 0;
    for (size_t k = 0; k < n; k++)
        xn += cabs(p->x[k]);
    snprintf(detail, sizeof detail, "[%s] %s", wd_status_string(rc), wd_last_error());
    result("reuse: changed sloppy_recon -> invalid, x = 0",
           rc == WD_ERR_INVALID && xn == 0 && strstr(wd_last_error(), "sloppy_recon"), detail);
    wd_solver_destroy(sv);
    rc = wd_solver_create(NULL, (const double *)p->u, p->dims, &s);
    result("reuse: create with a NULL solver pointer -> invalid", rc == WD_ERR_INVALID, "");
    free(x1);
}

static void make_problem(problem *p, const char *name, const int dims[4], double mass,
                         int smooth, wd_rng *r)
{
    p->name = name;
    memcpy(p->dims, dims, sizeof p->dims);
    p->mass = mass;
    p->smooth = smooth;
    p->vol = wd_volume(dims);
    p->u = xalloc(p->vol * 36 * sizeof *p->u);
    p->b = xalloc(p->vol * 12 * sizeof *p->b);
    p->x = xalloc(p->vol * 12 * sizeof *p->x);
    if (smooth)
        wd_gauge_smooth(p->u, dims, 0.2, r);
    else
        wd_gauge_random(p->u, dims, r);
    wd_spinor_random(p->b, dims, r);
}

static void free_problem(problem *p)
{
    free(p->u), free(p->b), free(p->x);
}

int main(int argc, char **argv)
{
    uint64_t seed = (uint64_t)time(NULL);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--verbose"))
            verbose = 1;
    }
    backend = test_backend_arg(argc, argv);
    printf("test_solver: seed %llu (replay with --seed %llu)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    wd_rng r;
    wd_rng_seed(&r, seed);
    problem p;
    make_problem(&p, "4^4 random   ", (const int[4]){4, 4, 4, 4}, 0.1, 0, &r);
    convergence(&p);
    errors(&p, &r);
    reuse(&p);
    free_problem(&p);
    make_problem(&p, "4^3x8 smooth ", (const int[4]){4, 4, 4, 8}, 0.02, 1, &r);
    convergence(&p);
    free_problem(&p);
    printf("%d skipped (not built)\n%d of %d failed\n", skipped, checks_failed, checks_run);
    return checks_failed ? 1 : 0;
}
