/*
 * krylov.c: CG on the normal equations and BiCGstab, in one precision or
 * mixed, for the even-odd system; every field operation through
 * wd_backend.h.
 *
 * The externally accessible function is
 *   wd_krylov_run   solve (wd_solver.h documents the fields and settings)
 *
 * The iteration runs on sloppy fields (residual rs, direction p), summing
 * the solution correction into the partial accumulator xs (sloppy or outer
 * precision: wd_accumulator).  A "check" is Algorithm 2's update, done in the outer precision:
 * x += xs, r = b - A x, rs = r, xs = 0.  Checks happen
 *   - always when the iterated residual reaches the target;
 *   - reliable updates: when it falls below delta times its maximum since
 *     the last check (Clark et al. Algorithm 2) and below its value right
 *     after that check, so that a BiCGstab spike's recovery does not
 *     trigger an update that would not improve on x;
 *   - defect correction: when it falls by tol_inner from the last check,
 *     and then the Krylov space restarts from the new residual (Algorithm
 *     1: each inner solve starts from zero);
 *   - when the iterated residual has found no new minimum for STALL_ITERS
 *     iterations (a sloppy recurrence that stalls, e.g. at the limit of
 *     half precision: the check then tells progress from stagnation).
 * After a reliable update whose true residual exceeds the iterated one by
 * more than DRIFT_RESTART the sloppy recurrence has drifted too far to be
 * continued consistently (CG's beta would blow up): the Krylov space
 * restarts instead.  Stagnation: max_stall checks in a row, each gaining
 * less than 1 - STALL_GAIN on the best true residual of the iterated system.
 * Convergence is only ever declared on a true residual.  A check is kept
 * only if it lowers the true residual; otherwise x is restored and the
 * iteration restarts from x's residual, so x is always the best iterate
 * seen, which is what every failure returns.
 *
 * CG: after a reliable update the direction p is made orthogonal to the
 * new residual again and beta taken with the true |r|^2 (the gradient-
 * vector care Clark et al. cite; QUDA does the same), so that p does not
 * carry the component along r that the replaced residual no longer
 * justifies.  The CG check compares the Schur residual
 * ||b - Mhat x||, not the normal-equation residual the iteration sees: the
 * iterated target is re-estimated at every check (cg_target).
 * BiCGstab: after a reliable update rho = <r0, r> is recomputed for the new
 * r; p, v, r0 carry on.
 */
#include <complex.h>
#include <math.h>
#include <stdio.h>

#include "wd_core.h"
#include "wd_solver.h"

/* a check must gain this factor on the best residual to count as progress */
#define STALL_GAIN 0.9
/* iterations without a new minimum of the iterated residual that force a check */
#define STALL_ITERS 200
/* a true residual this much above the iterated one means the sloppy
 * recurrence drifted too far to continue it: restart instead */
#define DRIFT_RESTART 2.0

typedef struct state {
    double best;        /* true residual ||b - Mhat x|| of x */
    double best_it;     /* smallest true residual of the iterated system (CG: normal eqs.) */
    double target_iter; /* iterated residual at which to check for convergence */
    double ne_prev;     /* CG: true normal-equation and Schur residuals at the */
    double rs_prev;     /* previous accepted check (for target_iter) */
    double rstart;      /* iterated residual right after the last check */
    double rmax;        /* its maximum since */
    double rmin;        /* its minimum since */
    int since_min;      /* iterations since rmin last fell */
    double rn;          /* the iterated residual that led to the last check */
    int stall;          /* checks in a row without STALL_GAIN progress */
    int since;          /* iterations since the Krylov space (re)started */
    int since_check;    /* iterations since the last check */
} state;

enum { CHECK_ACCEPT, CHECK_REJECT, CHECK_NAN };
enum { GO_ON, DO_CHECK, SALVAGE_NAN, SALVAGE_DIVERGED };
enum { NEXT_CONTINUE, NEXT_RESTART, NEXT_DONE };

static wd_complex wc(double complex z)
{
    return (wd_complex){creal(z), cimag(z)};
}

static double complex cz(wd_complex z)
{
    return CMPLX(z.re, z.im);
}

static double rel(const wd_krylov *ks, double r)
{
    return r * ks->scale;
}

/* After iteration k: the iterated residual rn to whoever watches. */
static void report(const wd_krylov *ks, double rn, const char *what)
{
    if (ks->verbosity >= 3)
        fprintf(stderr, "wdirac solver: k=%d iterated residual %.3e%s\n", ks->k, rel(ks, rn), what);
    if (ks->progress)
        ks->progress(ks->progress_arg, ks->k + ks->l, rel(ks, rn));
}

/* xs += a x + b y (y may be NULL): fused in the sloppy precision, or into
 * an outer-precision accumulator */
static void accumulate(wd_krylov *ks, wd_complex a, const wd_field *x, wd_complex b,
                       const wd_field *y)
{
    if (ks->xs->precision != x->precision)
        wd_blas_accumulate(ks->be, a, x, b, y, ks->xs);
    else if (y)
        wd_blas_caxpbypz(ks->be, a, x, b, y, ks->xs);
    else
        wd_blas_axpy(ks->be, a.re, x, ks->xs);
}

/* ||b - Mhat x|| in *rs.  r gets the residual the iteration uses: that one
 * (BiCGstab) or Mhat^dag of it (CG); |r|^2 in *rn2. */
static wd_status true_residual(wd_krylov *ks, double *rs, double *rn2)
{
    wd_backend *be = ks->be;
    wd_status st;
    if (ks->solver == WD_SOLVER_BICGSTAB) {
        if ((st = wd_eo_mhat(&ks->outer, ks->r, ks->x, 0)) != WD_OK)
            return st;
        *rn2 = wd_blas_xpay_norm2(be, ks->b, -1.0, ks->r);
        *rs = sqrt(*rn2);
    } else {
        if ((st = wd_eo_mhat(&ks->outer, ks->te, ks->x, 0)) != WD_OK)
            return st;
        *rs = sqrt(wd_blas_xpay_norm2(be, ks->b, -1.0, ks->te));
        if ((st = wd_eo_mhat(&ks->outer, ks->r, ks->te, 1)) != WD_OK)
            return st;
        *rn2 = wd_blas_norm2(be, ks->r);
    }
    return be->error;
}

/* Algorithm 2's update (see the file comment); *rn2 = |rs|^2 afterwards. */
static wd_status check(wd_krylov *ks, state *s, int *result, double *rn2)
{
    wd_backend *be = ks->be;
    ks->l++;
    s->since_check = 0;
    if (!isfinite(wd_blas_norm2(be, ks->xs))) {
        *result = CHECK_NAN;
        return be->error;
    }
    wd_blas_copy(be, ks->r, ks->xs);
    wd_blas_axpy(be, 1.0, ks->r, ks->x);
    double rs;
    wd_status st = true_residual(ks, &rs, rn2);
    if (st != WD_OK)
        return st;
    if (rs < s->best) {
        /* progress is judged on the system iterated on (CG: the normal
         * equations, whose residual falls faster near convergence) */
        const double rit = sqrt(*rn2);
        s->stall = rit < STALL_GAIN * s->best_it ? 0 : s->stall + 1;
        s->best_it = fmin(s->best_it, rit);
        *result = CHECK_ACCEPT;
    } else {
        s->stall++;
        wd_blas_copy(be, ks->r, ks->xs);
        wd_blas_axpy(be, -1.0, ks->r, ks->x);
        if ((st = true_residual(ks, &rs, rn2)) != WD_OK)
            return st;
        *result = isfinite(rs) ? CHECK_REJECT : CHECK_NAN;
    }
    s->best = rs;
    ks->residual = rs;
    wd_blas_copy(be, ks->rs, ks->r);
    wd_blas_zero(be, ks->xs);
    if (ks->verbosity >= 2)
        fprintf(stderr, "wdirac solver: k=%d l=%d true residual %.3e%s\n", ks->k, ks->l,
                rel(ks, rs), *result == CHECK_ACCEPT ? "" : " (update rejected, restart)");
    if (ks->progress)
        ks->progress(ks->progress_arg, ks->k + ks->l, rel(ks, rs));
    return be->error;
}

/* What the iterated residual rn asks for after an iteration. */
static int classify(const wd_krylov *ks, state *s, double rn)
{
    if (!isfinite(rn))
        return SALVAGE_NAN;
    if (rn > ks->divergence * s->rstart)
        return SALVAGE_DIVERGED;
    s->rmax = fmax(s->rmax, rn);
    s->rn = rn;
    if (rn < s->rmin) {
        s->rmin = rn;
        s->since_min = 0;
    } else if (++s->since_min >= STALL_ITERS) {
        return DO_CHECK;
    }
    if (rn <= s->target_iter)
        return DO_CHECK;
    if (ks->mixed == WD_MIXED_RELIABLE && rn < ks->delta * s->rmax && rn < s->rstart)
        return DO_CHECK;
    if (ks->mixed == WD_MIXED_DEFECT && rn < ks->tol_inner * s->rstart)
        return DO_CHECK;
    return GO_ON;
}

/* CG: the normal-equation residual at which the Schur residual should
 * reach the target.  Locally ne ~ rs^gamma, gamma measured between the last
 * two accepted checks (1 at first; near convergence the normal-equation
 * residual falls faster than the Schur one, gamma > 1). */
static void cg_target(wd_krylov *ks, state *s)
{
    double gamma = 1;
    if (s->ne_prev > 0 && s->rstart < s->ne_prev && s->best < s->rs_prev)
        gamma = fmin(4, fmax(1, log(s->rstart / s->ne_prev) / log(s->best / s->rs_prev)));
    s->target_iter = s->best > 0 ? s->rstart * pow(ks->target / s->best, gamma) : 0;
    s->ne_prev = s->rstart;
    s->rs_prev = s->best;
}

/* After a check: converged, stopped (*status says why), or go on. */
static int after_check(wd_krylov *ks, state *s, int result, double rn2, wd_status *status)
{
    if (result == CHECK_NAN) {
        *status = wd_fail(WD_ERR_NAN, "solver: NaN or Inf in the iteration after %d iterations; "
                          "returning the best iterate (true residual %.3e)", ks->k + ks->l,
                          rel(ks, s->best));
        return NEXT_DONE;
    }
    s->rstart = s->rmax = s->rmin = sqrt(rn2);
    s->since_min = 0;
    if (ks->solver == WD_SOLVER_CG && result == CHECK_ACCEPT)
        cg_target(ks, s);
    if (s->best <= ks->target) {
        *status = WD_OK;
        return NEXT_DONE;
    }
    if (s->stall >= ks->max_stall) {
        *status = wd_fail(WD_ERR_STAGNATED, "solver stagnated: %d true-residual checks in a row "
                          "gained less than %.0f%% (best true residual %.3e, target %.3e; the "
                          "sloppy or outer precision cannot resolve the target)", s->stall,
                          100 * (1 - STALL_GAIN), rel(ks, s->best), rel(ks, ks->target));
        return NEXT_DONE;
    }
    if (result == CHECK_REJECT || ks->mixed == WD_MIXED_DEFECT ||
        s->rstart > DRIFT_RESTART * s->rn)
        return NEXT_RESTART;
    return NEXT_CONTINUE;
}

/* Stop with `code` after a last check that folds in the progress since the
 * previous one (kept only if it improves x). */
static wd_status stop(wd_krylov *ks, state *s, wd_status code)
{
    if (s->since_check > 0 && ks->k + ks->l < ks->max_iter) {
        int result;
        double rn2;
        wd_status st = check(ks, s, &result, &rn2);
        if (st != WD_OK)
            return st;
        if (s->best <= ks->target)
            return WD_OK;
    }
    const double r = rel(ks, s->best);
    switch (code) {
    case WD_ERR_MAX_ITER:
        return wd_fail(code, "solver reached max_iter = %d iterations (k + l) with true residual "
                       "%.3e > tol %.3e", ks->max_iter, r, rel(ks, ks->target));
    case WD_ERR_DIVERGED:
        return wd_fail(code, "solver diverged after %d iterations (iterated residual grew %.0e-fold "
                       "or the Krylov recurrence broke down); returning the best iterate (true "
                       "residual %.3e)", ks->k + ks->l, ks->divergence, r);
    default:
        return wd_fail(WD_ERR_NAN, "solver: NaN or Inf in the iteration after %d iterations; "
                       "returning the best iterate (true residual %.3e)", ks->k + ks->l, r);
    }
}

/* Act on classify's verdict v: check, salvage or nothing.  Returns NEXT_*;
 * on NEXT_DONE *status is the result; after a check (*checked) *rn2 is the
 * new |rs|^2. */
static int act(wd_krylov *ks, state *s, int v, int *checked, double *rn2, wd_status *status)
{
    *checked = 0;
    if (v == GO_ON)
        return NEXT_CONTINUE;
    if (v == SALVAGE_NAN || v == SALVAGE_DIVERGED) {
        *status = stop(ks, s, v == SALVAGE_NAN ? WD_ERR_NAN : WD_ERR_DIVERGED);
        return NEXT_DONE;
    }
    int result;
    *checked = 1;
    wd_status st = check(ks, s, &result, rn2);
    if (st != WD_OK) {
        *status = st;
        return NEXT_DONE;
    }
    return after_check(ks, s, result, *rn2, status);
}

/* A recurrence coefficient vanished: restart from x's true residual, or
 * give up if it happens again straight after a restart. */
static int breakdown(wd_krylov *ks, state *s, double *rn2, wd_status *status)
{
    if (s->since <= 1) {
        *status = stop(ks, s, WD_ERR_DIVERGED);
        return NEXT_DONE;
    }
    int result;
    wd_status st = check(ks, s, &result, rn2);
    if (st != WD_OK) {
        *status = st;
        return NEXT_DONE;
    }
    const int next = after_check(ks, s, result, *rn2, status);
    return next == NEXT_DONE ? next : NEXT_RESTART;
}

static wd_status bicgstab(wd_krylov *ks, state *s, double r2)
{
    wd_backend *be = ks->be;
    double complex rho = 0, alpha = 0, omega = 0;
    int fresh = 1;
    wd_status st, status = WD_OK;
    for (;;) {
        if (fresh) {
            wd_blas_copy(be, ks->r0, ks->rs);
            wd_blas_copy(be, ks->p, ks->rs);
            rho = r2;
            fresh = 0;
            s->since = 0;
        }
        if (be->error != WD_OK)
            return be->error;
        if (ks->k + ks->l + 2 > ks->max_iter)
            return stop(ks, s, WD_ERR_MAX_ITER);
        if ((st = wd_eo_mhat(&ks->sloppy, ks->v, ks->p, 0)) != WD_OK)
            return st;
        const double complex r0v = cz(wd_blas_cdot(be, ks->r0, ks->v));
        if (r0v == 0 || rho == 0) {
            int next = breakdown(ks, s, &r2, &status);
            if (next == NEXT_DONE)
                return status;
            fresh = 1;
            continue;
        }
        alpha = rho / r0v;
        wd_blas_caxpy(be, wc(-alpha), ks->v, ks->rs);
        if ((st = wd_eo_mhat(&ks->sloppy, ks->t, ks->rs, 0)) != WD_OK)
            return st;
        double ts[3];
        wd_blas_cdot_norm2(be, ks->t, ks->rs, ts);
        omega = ts[2] > 0 ? CMPLX(ts[0], ts[1]) / ts[2] : 0;
        accumulate(ks, wc(alpha), ks->p, wc(omega), ks->rs);
        double rr[3];
        wd_blas_caxpy_norm2_cdot(be, wc(-omega), ks->t, ks->rs, ks->r0, rr);
        double complex rho_new = CMPLX(rr[1], rr[2]);
        r2 = rr[0];
        ks->k++;
        s->since++;
        s->since_check++;
        report(ks, sqrt(r2), "");
        int checked;
        double rn2;
        const int next = act(ks, s, classify(ks, s, sqrt(r2)), &checked, &rn2, &status);
        if (next == NEXT_DONE)
            return status;
        if (checked) {
            r2 = rn2;
            if (next == NEXT_RESTART) {
                fresh = 1;
                continue;
            }
            rho_new = cz(wd_blas_cdot(be, ks->r0, ks->rs));
        }
        if (omega == 0) {
            if (breakdown(ks, s, &r2, &status) == NEXT_DONE)
                return status;
            fresh = 1;
            continue;
        }
        const double complex beta = (rho_new / rho) * (alpha / omega);
        wd_blas_cxpaypbz(be, ks->rs, wc(-beta * omega), ks->v, wc(beta), ks->p);
        rho = rho_new;
    }
}

static wd_status cg(wd_krylov *ks, state *s, double r2)
{
    wd_backend *be = ks->be;
    int fresh = 1;
    wd_status st, status = WD_OK;
    for (;;) {
        if (fresh) {
            wd_blas_copy(be, ks->p, ks->rs);
            fresh = 0;
            s->since = 0;
        }
        if (be->error != WD_OK)
            return be->error;
        if (ks->k + ks->l + 2 > ks->max_iter)
            return stop(ks, s, WD_ERR_MAX_ITER);
        if ((st = wd_eo_mhat(&ks->sloppy, ks->t, ks->p, 0)) != WD_OK)
            return st;
        const double pap = wd_blas_norm2(be, ks->t);
        if ((st = wd_eo_mhat(&ks->sloppy, ks->v, ks->t, 1)) != WD_OK)
            return st;
        if (!(pap > 0) && isfinite(pap)) {
            if (breakdown(ks, s, &r2, &status) == NEXT_DONE)
                return status;
            fresh = 1;
            continue;
        }
        const double alpha = r2 / pap;
        const double r2_prev = r2;
        const double r2_new = wd_blas_axpy_norm2(be, -alpha, ks->v, ks->rs);
        ks->k++;
        s->since++;
        s->since_check++;
        report(ks, sqrt(r2_new), " (normal equations)");
        const int v = classify(ks, s, sqrt(r2_new));
        if (v == GO_ON && ks->xs->precision == ks->p->precision) {
            wd_blas_axpy_zpbx(be, alpha, ks->p, ks->xs, ks->rs, r2_new / r2);
            r2 = r2_new;
            continue;
        }
        accumulate(ks, wc(alpha), ks->p, wc(0), NULL);
        if (v == GO_ON) {
            wd_blas_xpay(be, ks->rs, r2_new / r2, ks->p);
            r2 = r2_new;
            continue;
        }
        int checked;
        double rn2 = 0;
        const int next = act(ks, s, v, &checked, &rn2, &status);
        if (next == NEXT_DONE)
            return status;
        r2 = rn2;
        if (next == NEXT_RESTART) {
            fresh = 1;
            continue;
        }
        /* reliable update: p orthogonal to the new r, then the usual step
         * with beta = |r_true|^2 / |r_old|^2 */
        const double rp = wd_blas_cdot(be, ks->rs, ks->p).re / rn2;
        wd_blas_axpy(be, -rp, ks->rs, ks->p);
        wd_blas_xpay(be, ks->rs, rn2 / (r2_prev), ks->p);
    }
}

wd_status wd_krylov_run(wd_krylov *ks)
{
    wd_backend *be = ks->be;
    state s = {0};
    ks->k = ks->l = 0;
    double rs, r2;
    wd_status st = true_residual(ks, &rs, &r2);
    if (st != WD_OK)
        return st;
    s.best = ks->residual = rs;
    s.best_it = sqrt(r2);
    if (!isfinite(rs))
        return wd_fail(WD_ERR_NAN, "solver: the initial residual is not finite");
    if (rs <= ks->target)
        return WD_OK;
    s.rstart = s.rmax = s.rmin = s.rn = sqrt(r2);
    s.target_iter = ks->target;
    if (ks->solver == WD_SOLVER_CG)
        cg_target(ks, &s);
    wd_blas_copy(be, ks->rs, ks->r);
    wd_blas_zero(be, ks->xs);
    return ks->solver == WD_SOLVER_CG ? cg(ks, &s, r2) : bicgstab(ks, &s, r2);
}
