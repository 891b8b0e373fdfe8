/*
 * solver.c: the public solver entry of wdirac.h.
 *
 * The externally accessible functions are
 *   wd_solver_default_settings   the documented defaults
 *   wd_solve                     M x = b on full-lattice host fields
 *
 * wd_solve: validate, gauge-fix on the host if either level asks for it,
 * upload the gauge field in the outer and (if different) the sloppy
 * precision, prepare the even-odd source b'_e = (b_e + kappa D_eo b_o) /
 * (4+m) with the outer operator, run krylov.c, reconstruct x_o = b_o /
 * (4+m) + kappa D_oe x_e, download, undo the gauge fixing, and measure the
 * true residual ||b - M x|| / ||b|| on the host with the float64 reference
 * operator (ref_wilson) on the caller's own fields: an independent check,
 * not counted in the solve time.
 *
 * The Schur residual relates to the full one exactly: with x_o
 * reconstructed, (b - M x)_o = 0 and (b - M x)_e = (4+m)(b'_e - Mhat x_e),
 * so the Krylov solve stops at ||b'_e - Mhat x_e|| <= tol ||b|| / (4+m).
 *
 * Memory (the paper's budget, section 5.3): outer b, x, r, odd scratch (and
 * an even scratch for CG's normal equations); sloppy r, x, p, v, t, odd
 * scratch (and r0 for BiCGstab); the gauge field in each precision.  When
 * both levels share a precision, r and the scratch fields are shared too.
 */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gauge_tools.h"
#include "ref_wilson.h"
#include "wd_internal.h"
#include "wd_solver.h"

void wd_solver_default_settings(wd_solver_settings *s)
{
    memset(s, 0, sizeof *s);
    s->solver = WD_SOLVER_BICGSTAB;
    s->backend = WD_BACKEND_CPU;
    s->mass = 0.1;
    s->tbc = WD_TIME_ANTIPERIODIC;
    s->tol = 1e-10;
    s->max_iter = 10000;
    s->precision = WD_PREC_DOUBLE;
    s->recon = WD_RECON_12;
    s->gauge_fix = 0;
    s->sloppy_precision = WD_PREC_SINGLE;
    s->sloppy_recon = WD_RECON_12;
    s->sloppy_gauge_fix = 0;
    s->mixed = WD_MIXED_RELIABLE;
    s->delta = 0.1;
    s->tol_inner = 0.1;
    s->max_stall = 4;
    s->divergence = 1e8;
    s->pad = 0;
    s->verbosity = 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int valid_precision(int p)
{
    return p == 8 || p == 4 || p == 2;
}

static int valid_recon(int r)
{
    return r == 18 || r == 12 || r == 8;
}

static wd_status check_settings(const wd_solver_settings *s)
{
    if (s->solver != WD_SOLVER_CG && s->solver != WD_SOLVER_BICGSTAB)
        return wd_fail(WD_ERR_INVALID, "solver %d: must be WD_SOLVER_CG (1) or WD_SOLVER_BICGSTAB (2)",
                       (int)s->solver);
    if (!valid_precision(s->precision) || !valid_precision(s->sloppy_precision))
        return wd_fail(WD_ERR_INVALID, "precision %d / sloppy precision %d: each must be 8, 4 or 2",
                       (int)s->precision, (int)s->sloppy_precision);
    if (s->sloppy_precision > s->precision)
        return wd_fail(WD_ERR_INVALID, "sloppy precision %d is higher than the outer precision %d",
                       (int)s->sloppy_precision, (int)s->precision);
    if (!valid_recon(s->recon) || !valid_recon(s->sloppy_recon))
        return wd_fail(WD_ERR_INVALID, "reconstruction %d / sloppy reconstruction %d: each must be "
                       "18, 12 or 8", (int)s->recon, (int)s->sloppy_recon);
    if (!(s->mass > -4) || !isfinite(s->mass))
        return wd_fail(WD_ERR_INVALID, "mass %g: must be finite and > -4 (kappa = 1/(2(4+m)) > 0)",
                       s->mass);
    if (s->tbc != WD_TIME_PERIODIC && s->tbc != WD_TIME_ANTIPERIODIC)
        return wd_fail(WD_ERR_INVALID, "time boundary %d: must be +1 or -1", (int)s->tbc);
    if (!(s->tol > 0) || !(s->tol < 1))
        return wd_fail(WD_ERR_INVALID, "tol %g: must be in (0, 1)", s->tol);
    if (s->max_iter < 1)
        return wd_fail(WD_ERR_INVALID, "max_iter %d: must be >= 1", s->max_iter);
    if (s->mixed != WD_MIXED_NONE && s->mixed != WD_MIXED_RELIABLE && s->mixed != WD_MIXED_DEFECT)
        return wd_fail(WD_ERR_INVALID, "mixed %d: must be WD_MIXED_NONE, _RELIABLE or _DEFECT",
                       (int)s->mixed);
    if (s->mixed == WD_MIXED_RELIABLE && !(s->delta > 0 && s->delta < 1))
        return wd_fail(WD_ERR_INVALID, "delta %g: must be in (0, 1)", s->delta);
    if (s->mixed == WD_MIXED_DEFECT && !(s->tol_inner > 0 && s->tol_inner < 1))
        return wd_fail(WD_ERR_INVALID, "tol_inner %g: must be in (0, 1)", s->tol_inner);
    if (s->max_stall < 1)
        return wd_fail(WD_ERR_INVALID, "max_stall %d: must be >= 1", s->max_stall);
    if (!(s->divergence > 1))
        return wd_fail(WD_ERR_INVALID, "divergence %g: must be > 1", s->divergence);
    return WD_OK;
}

/* first non-finite value among n doubles, -1 if none */
static long first_nonfinite(const double *v, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        if (!isfinite(v[i]))
            return (long)i;
    return -1;
}

static double host_norm2(const double *v, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; ++i)
        s += v[i] * v[i];
    return s;
}

/* ||b - M x|| / ||b|| with the float64 reference; b != 0 */
static wd_status host_true_residual(const double *x, const double *u, const double *b,
                                    const int dims[4], const wd_solver_settings *s, double *res)
{
    const size_t n = wd_volume(dims) * 12;
    double complex *mx = malloc(n * sizeof *mx);
    if (!mx)
        return wd_fail(WD_ERR_NOMEM, "solver: cannot allocate %zu bytes for the residual check",
                       n * sizeof *mx);
    ref_wilson(mx, (const double complex *)u, (const double complex *)x, dims, s->mass,
               (int)s->tbc, 0);
    const double complex *bc = (const double complex *)b;
    double num = 0, den = 0;
    for (size_t i = 0; i < n; ++i) {
        const double complex d = bc[i] - mx[i];
        num += creal(d) * creal(d) + cimag(d) * cimag(d);
        den += creal(bc[i]) * creal(bc[i]) + cimag(bc[i]) * cimag(bc[i]);
    }
    free(mx);
    *res = sqrt(num / den);
    return WD_OK;
}

/* Everything wd_solve allocates, so that one function frees it. */
typedef struct solve_ctx {
    wd_backend be;
    int be_open;
    wd_gauge g_outer, g_sloppy;
    wd_field f[13];
    int nf;
    double complex *gfix, *ufix, *bfix;
} solve_ctx;

static wd_field *new_field(solve_ctx *c, int precision, wd_status *st)
{
    if (*st != WD_OK)
        return NULL;
    wd_field *f = &c->f[c->nf++];
    *st = wd_field_create(&c->be, f, precision);
    return f;
}

static void release(solve_ctx *c)
{
    if (c->be_open) {
        for (int i = 0; i < c->nf; ++i)
            wd_field_destroy(&c->be, &c->f[i]);
        wd_gauge_destroy(&c->be, &c->g_sloppy);
        wd_gauge_destroy(&c->be, &c->g_outer);
        wd_backend_close(&c->be);
    }
    free(c->gfix);
    free(c->ufix);
    free(c->bfix);
}

/* Host fields in the gauge the solve runs in: the caller's, or copies
 * transformed to temporal gauge. */
static wd_status gauge_fix_host(solve_ctx *c, const double *gauge, const double *b,
                                const int dims[4], const double **u_run, const double **b_run)
{
    const size_t vol = wd_volume(dims);
    c->gfix = malloc(vol * 9 * sizeof *c->gfix);
    c->ufix = malloc(vol * 36 * sizeof *c->ufix);
    c->bfix = malloc(vol * 12 * sizeof *c->bfix);
    if (!c->gfix || !c->ufix || !c->bfix)
        return wd_fail(WD_ERR_NOMEM, "solver: cannot allocate %zu bytes for the gauge-fixed "
                       "host fields", vol * 57 * sizeof(double complex));
    memcpy(c->ufix, gauge, vol * 36 * sizeof *c->ufix);
    memcpy(c->bfix, b, vol * 12 * sizeof *c->bfix);
    wd_temporal_gauge(c->gfix, c->ufix, dims);
    wd_gauge_transform(c->ufix, c->gfix, dims);
    wd_spinor_transform(c->bfix, c->gfix, dims, 0);
    *u_run = (const double *)c->ufix;
    *b_run = (const double *)c->bfix;
    return WD_OK;
}

static wd_status run(solve_ctx *c, double *x, const double *gauge, const double *b,
                     const int dims[4], const wd_solver_settings *s, double bnorm,
                     wd_solver_stats *stats)
{
    const double *u_run = gauge, *b_run = b;
    const int fix = s->gauge_fix || s->sloppy_gauge_fix;
    wd_status st = WD_OK;
    if (fix && (st = gauge_fix_host(c, gauge, b, dims, &u_run, &b_run)) != WD_OK)
        return st;

    if ((st = wd_backend_open(&c->be, s->backend, dims, s->pad)) != WD_OK)
        return st;
    c->be_open = 1;
    wd_backend *be = &c->be;
    const int cg = s->solver == WD_SOLVER_CG;
    const double kappa = 1.0 / (2.0 * (4.0 + s->mass));
    const int same_gauge = s->sloppy_precision == s->precision && s->sloppy_recon == s->recon &&
                           s->sloppy_gauge_fix == s->gauge_fix;
    const int shared = s->sloppy_precision == s->precision;

    st = wd_gauge_create(be, &c->g_outer, u_run, s->precision, s->recon, s->gauge_fix, s->tbc);
    const wd_gauge *g_sloppy = &c->g_outer;
    if (st == WD_OK && !same_gauge) {
        st = wd_gauge_create(be, &c->g_sloppy, u_run, s->sloppy_precision, s->sloppy_recon,
                             s->sloppy_gauge_fix, s->tbc);
        g_sloppy = &c->g_sloppy;
    }
    wd_krylov ks;
    memset(&ks, 0, sizeof ks);
    const int po = s->precision, ps = s->sloppy_precision;
    ks.b = new_field(c, po, &st);
    ks.x = new_field(c, po, &st);
    ks.r = new_field(c, po, &st);
    wd_field *odd = new_field(c, po, &st);
    ks.te = cg ? new_field(c, po, &st) : NULL;
    ks.rs = shared ? ks.r : new_field(c, ps, &st);
    ks.xs = new_field(c, ps, &st);
    ks.p = new_field(c, ps, &st);
    ks.v = new_field(c, ps, &st);
    ks.t = shared && cg ? ks.te : new_field(c, ps, &st);
    ks.r0 = cg ? NULL : new_field(c, ps, &st);
    wd_field *odd_sloppy = shared ? odd : new_field(c, ps, &st);
    if (st == WD_OK)
        st = wd_eo_op_init(&ks.outer, be, &c->g_outer, kappa, odd, cg);
    if (st == WD_OK)
        st = wd_eo_op_init(&ks.sloppy, be, g_sloppy, kappa, odd_sloppy, cg);
    if (st != WD_OK)
        return st;

    /* b'_e = (b_e + kappa D_eo b_o) / (4+m) */
    const double inv = 1.0 / (4.0 + s->mass);
    if ((st = be->ops->upload(be, ks.b, b_run, 0)) != WD_OK ||
        (st = be->ops->upload(be, odd, b_run, 1)) != WD_OK ||
        (st = wd_dslash(be, ks.outer.xpay[0], ks.r, &c->g_outer, odd, ks.b, kappa, 0)) != WD_OK)
        return st;
    wd_blas_ax(be, inv, ks.r);
    wd_blas_copy(be, ks.b, ks.r);
    wd_blas_zero(be, ks.x);

    ks.be = be;
    ks.solver = s->solver;
    ks.mixed = s->mixed;
    ks.delta = s->delta;
    ks.tol_inner = s->tol_inner;
    ks.divergence = s->divergence;
    ks.max_stall = s->max_stall;
    ks.max_iter = s->max_iter;
    ks.verbosity = s->verbosity;
    ks.target = s->tol * bnorm * inv;
    ks.scale = (4.0 + s->mass) / bnorm;
    const double flops0 = be->flops, t0 = now_s();
    const wd_status solve_st = wd_krylov_run(&ks);
    stats->solve_seconds = now_s() - t0;
    stats->flops = be->flops - flops0;
    stats->sloppy_iterations = ks.k;
    stats->updates = ks.l;
    stats->iterations = ks.k + ks.l;
    stats->solver_residual = ks.residual * ks.scale;
    stats->bytes_allocated = be->bytes_peak;
    stats->bytes_gauge = c->g_outer.bytes + c->g_sloppy.bytes;
    if (be->error != WD_OK)
        return be->error;
    if (solve_st != WD_OK && solve_st != WD_ERR_DIVERGED && solve_st != WD_ERR_STAGNATED &&
        solve_st != WD_ERR_NAN && solve_st != WD_ERR_MAX_ITER)
        return solve_st;

    /* x_o = b_o / (4+m) + kappa D_oe x_e */
    if ((st = be->ops->upload(be, odd, b_run, 1)) != WD_OK)
        return st;
    wd_blas_ax(be, inv, odd);
    if ((st = wd_dslash(be, ks.outer.xpay[0], ks.r, &c->g_outer, ks.x, odd, kappa, 1)) != WD_OK ||
        (st = be->ops->download(be, x, ks.x, 0)) != WD_OK ||
        (st = be->ops->download(be, x, ks.r, 1)) != WD_OK)
        return st;
    if (be->error != WD_OK)
        return be->error;
    if (fix)
        wd_spinor_transform((double complex *)x, c->gfix, dims, 1);
    return solve_st;
}

wd_status wd_solve(double *x, const double *gauge, const double *b, const int dims[4],
                   const wd_solver_settings *s, wd_solver_stats *stats)
{
    const double t0 = now_s();
    wd_solver_stats local;
    if (!stats)
        stats = &local;
    memset(stats, 0, sizeof *stats);
    if (!x || !gauge || !b || !s || !dims)
        return wd_fail(WD_ERR_INVALID, "wd_solve: x, gauge, b, dims and settings must not be NULL");
    wd_status st = wd_check_dims(dims);
    if (st != WD_OK)
        return st;
    if (x == b)
        return wd_fail(WD_ERR_INVALID, "wd_solve: x must not alias b");
    if ((st = check_settings(s)) != WD_OK)
        return st;
    const size_t vol = wd_volume(dims);
    memset(x, 0, vol * 24 * sizeof *x);
    long bad = first_nonfinite(b, vol * 24);
    if (bad >= 0)
        return wd_fail(WD_ERR_INVALID, "wd_solve: the source b holds NaN or Inf (site %ld, spin %ld, "
                       "colour %ld)", bad / 24, bad % 24 / 6, bad % 6 / 2);
    bad = first_nonfinite(gauge, vol * 72);
    if (bad >= 0)
        return wd_fail(WD_ERR_INVALID, "wd_solve: the gauge field holds NaN or Inf (site %ld, "
                       "direction %ld)", bad / 72, bad % 72 / 18);
    const double bnorm = sqrt(host_norm2(b, vol * 24));
    if (bnorm == 0) {
        stats->seconds = now_s() - t0;
        return WD_OK;
    }

    solve_ctx c;
    memset(&c, 0, sizeof c);
    wd_status solve_st = run(&c, x, gauge, b, dims, s, bnorm, stats);
    release(&c);
    stats->seconds = now_s() - t0;
    stats->gflops = stats->solve_seconds > 0 ? stats->flops / stats->solve_seconds * 1e-9 : 0;
    if (solve_st != WD_OK && solve_st != WD_ERR_DIVERGED && solve_st != WD_ERR_STAGNATED &&
        solve_st != WD_ERR_NAN && solve_st != WD_ERR_MAX_ITER) {
        memset(x, 0, vol * 24 * sizeof *x);
        return solve_st;
    }
    /* keep the solver's message (if any) across the residual check */
    char msg[512];
    snprintf(msg, sizeof msg, "%s", wd_last_error());
    if ((st = host_true_residual(x, gauge, b, dims, s, &stats->true_residual)) != WD_OK)
        return st;
    if (s->verbosity >= 1)
        fprintf(stderr, "wdirac solver: %s, %d iterations (%d + %d updates), true residual %.3e, "
                "%.3f s, %.2f Gflops, %zu bytes\n", wd_status_string(solve_st), stats->iterations,
                stats->sloppy_iterations, stats->updates, stats->true_residual, stats->seconds,
                stats->gflops, stats->bytes_allocated);
    if (solve_st != WD_OK)
        wd_fail(solve_st, "%s", msg);
    return solve_st;
}
