/*
 * krylov.c: CG on the normal equations and BiCGstab, in one precision or
 * mixed, for the even-odd system; every field operation through
 * wd_backend.h.
 *
 * The externally accessible functions are
 *   wd_krylov_run        solve (wd_solver.h documents the fields and settings)
 *   wd_krylov_run_many   the same for N right-hand sides in lock step, one
 *                        multi-RHS operator application per Mhat of the
 *                        iteration (see "The lock-step iteration" below);
 *                        wd_krylov_run is its case N = 1
 *
 * The iteration runs on sloppy fields (residual rs, direction p), summing
 * the solution correction into the partial accumulator xs (sloppy or outer
 * precision: wd_accumulator).  A "check" is Algorithm 2's update, done in the outer precision:
 * x += xs, r = b - A x, rs = r, xs = 0.  Checks happen
 *   - always when the iterated residual reaches the target (CG: when its
 *     estimate of the Schur residual does, see below);
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
 * justifies.  The projection takes the whole complex <r, p>: the fields
 * are complex, and removing only its real part left i Im<r, p> / |r|^2 r
 * in p, a component that grows with the gap between the iterated and the
 * true residual, so with the sloppy precision's error (half precision
 * CG lost up to a fifth of its iterations to it: docs/solvers.md).
 * Convergence is judged on the Schur residual ||b - Mhat x||, not on the
 * normal-equation residual the iteration sees, which is not monotone
 * (near convergence it rises and falls by factors while the Schur residual
 * falls steadily).  CG on A = Mhat^dag Mhat minimises the A-norm of the
 * error, which is the Schur residual, and each step lowers its square by
 * exactly alpha |r|^2 (Hestenes and Stiefel; Strakos and Tichy show the
 * identity holds for the computed quantities in finite precision).  So
 * est2 starts from the true |b - Mhat x|^2 at each check and loses
 * alpha |r|^2 an iteration, two scalars the iteration has anyway; the
 * convergence check comes when est2 reaches target^2.  An estimate that
 * was optimistic costs one check, after which it starts again from the
 * true value.  est2 is the difference of its start and a sum of the same
 * size, so it cannot resolve much below EST2_RESOLUTION times its start:
 * a check comes there too (without reliable updates, est2 otherwise
 * wandered in its rounding noise above a target below ~1e-8 while the
 * iteration ran on past convergence into NaN).
 * BiCGstab: after a reliable update rho = <r0, r> is recomputed for the new
 * r; p, v, r0 carry on.
 *
 * On a process grid every rank must take every branch alike, or one rank
 * waits in a collective (a halo, a sum) that another never reaches.  Every
 * value a branch reads is therefore a global reduction (the same bits on
 * every rank: a NaN in one rank's part is a NaN of every rank's sum) or a
 * status agreed over the ranks.  The backend's sticky failure (be->error,
 * which a void operation sets on one rank alone) rides on the reductions:
 * a failed rank contributes NaN to every global sum (wd_backend_allsum),
 * so every rank finds the same reduction not finite, and there alone the
 * ranks agree on be->error (settled(), agreed()) to tell a failure from a
 * NaN of the iteration; a healthy iteration makes only its reductions
 * (BiCGstab 3: <r0, v>; <t, s> with |t|^2; |r|^2 with <r0, r>.  CG 2:
 * |Mhat p|^2; |r|^2), one global sum each for all lanes.  Each depends on
 * the one before through a coefficient (alpha, omega), so fewer would
 * need other recurrences (|r|^2 expanded from <s, t>, |t|^2, |s|^2;
 * a pipelined BiCGstab or CG), which round differently.  The checks agree
 * outright (agreed()), as they are rare.  A rank whose backend failed
 * stops with the others at the same point, every rank returning its status
 * and, on the others, "rank R: <its message>".  On one process the loop
 * polls be->error once an iteration.
 *
 * Fault injection, for tests only: compiled with -DWD_FAULT_INJECTION
 * (tests/meson.build builds a copy of the program with this file so; the
 * library has no such code), WDIRAC_FAULT=KIND:RANK:K makes rank RANK of
 * the grid fail after phase B of iteration K of the first Krylov run that
 * gets there, between the iteration's two operator applications: KIND
 * "fail" records a backend failure (WD_ERR_INTERNAL) there, "nan" sets its
 * part of the iterated residual to NaN (tests/test_cli_solve_fault.sh).
 */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wd_core.h"
#include "wd_solver.h"

/* a check must gain this factor on the best residual to count as progress */
#define STALL_GAIN 0.9
/* iterations without a new minimum of the iterated residual that force a check */
#define STALL_ITERS 200
/* CG's est2 falls below this fraction of its start only in rounding noise */
#define EST2_RESOLUTION 1e-12
/* a true residual this much above the iterated one means the sloppy
 * recurrence drifted too far to continue it: restart instead */
#define DRIFT_RESTART 2.0

typedef struct state {
    double best;        /* true residual ||b - Mhat x|| of x */
    double best_it;     /* smallest true residual of the iterated system (CG: normal eqs.) */
    double est2;        /* CG: ||b - Mhat x||^2 estimated (file comment) */
    double est2_floor;  /* below it est2 is rounding noise */
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

static double rel(const wd_krylov *ks, double r)
{
    return r * ks->scale;
}

/* The backend's sticky failure (be->error), agreed over the ranks of its
 * grid so that every rank branches on it alike; a failure of another rank
 * is recorded in be->error too.  On one process be->error itself. */
static wd_status agreed(wd_backend *be)
{
    if (be->grid.size <= 1)
        return be->error;
    const wd_status st = wd_backend_agree(be->error);
    if (st != WD_OK && be->error == WD_OK)
        be->error = st;
    return st;
}

/* The reductions res[0..n) of a step, just summed over the ranks: WD_OK
 * when they are finite or a NaN of the iteration itself, else the failure
 * of a rank (agreed: every rank returns it).  A failed rank's NaN reaches
 * every rank in the same sum (wd_backend_allsum), so the ranks agree
 * exactly where a sum is not finite, never in a healthy step.  On one
 * process WD_OK: the loop polls be->error. */
static wd_status settled(wd_backend *be, const double *res, int n)
{
    if (be->grid.size <= 1)
        return WD_OK;
    for (int i = 0; i < n; ++i)
        if (!isfinite(res[i]))
            return agreed(be);
    return WD_OK;
}

#ifdef WD_FAULT_INJECTION
/* WDIRAC_FAULT=KIND:RANK:K (the file comment): on rank RANK, at iteration
 * K, once per process.  A malformed value fails every rank alike. */
static void inject_fault(wd_krylov *ks)
{
    static int fired;
    const char *v = getenv("WDIRAC_FAULT");
    wd_backend *be = ks->be;
    char kind[8];
    int rank, k, end = 0;
    if (fired || !v || !*v)
        return;
    if (sscanf(v, "%7[a-z]:%d:%d%n", kind, &rank, &k, &end) != 3 || v[end] ||
        (strcmp(kind, "fail") && strcmp(kind, "nan"))) {
        fired = 1;
        if (be->error == WD_OK)
            be->error = wd_fail(WD_ERR_INVALID, "WDIRAC_FAULT=%s: expected fail:RANK:K or "
                                "nan:RANK:K", v);
        return;
    }
    if (ks->k != k)
        return;
    fired = 1;
    if (rank != be->grid.rank)
        return;
    if (!strcmp(kind, "nan"))
        wd_blas_ax(be, NAN, ks->rs);
    else if (be->error == WD_OK)
        be->error = wd_fail(WD_ERR_INTERNAL, "injected failure (WDIRAC_FAULT=%s) on rank %d at "
                            "iteration %d", v, rank, k);
}
#endif

/* After iteration k: the iterated residual rn to whoever watches. */
static void report(const wd_krylov *ks, double rn, const char *what)
{
    if (ks->verbosity >= 3)
        fprintf(stderr, "wdirac solver%s: k=%d iterated residual %.3e%s\n", ks->tag, ks->k,
                rel(ks, rn), what);
    if (ks->progress)
        ks->progress(ks->progress_arg, ks->k + ks->l, rel(ks, rn));
}

/* out = Mhat in (dagger: Mhat^dag) of the outer operator on the lanes of
 * l, whose fields are right-hand sides l->idx[j] of base's fields out and
 * in: each run of consecutive lanes one wd_eo_mhat_multi (the multi-RHS
 * kernels, bit for bit the one-RHS application of each, but for half
 * precision on the GPU) as far as the operator's odd scratch tmp_n holds
 * them, else one lane at a time. */
static wd_status outer_mhat(wd_krylov *base, const wd_lanes *l, wd_field *out, const wd_field *in,
                            int dagger)
{
    const wd_eo_op *op = &base->outer;
    for (int j = 0; j < l->n;) {
        int e = j + 1;
        while (e < l->n && l->idx[e] == l->idx[e - 1] + 1 && op->tmp_n &&
               op->tmp_n->nrhs >= e + 1 - j)
            e++;
        wd_field vo = wd_field_view(out, l->idx[j], e - j);
        const wd_field vi = wd_field_view(in, l->idx[j], e - j);
        const wd_status st = wd_eo_mhat_multi(op, &vo, &vi, dagger, e - j);
        if (st != WD_OK)
            return st;
        j = e;
    }
    return WD_OK;
}

/* ||b - Mhat x|| into rs[j] for the lanes of l (fields: right-hand sides
 * l->idx[j] of base's; l->a is overwritten).  r gets the residual the
 * iteration uses, that one (BiCGstab) or Mhat^dag of it (CG), |r|^2 into
 * rn2[j], and the sloppy residual rs a copy of r in the pass that reduces
 * it (WD_LANE_*_COPY: the bits of the copy after it, one pass over r
 * fewer). */
static wd_status true_residual_lanes(wd_krylov *base, wd_lanes *l, double *rs, double *rn2)
{
    wd_backend *be = base->be;
    wd_field *copy = base->rs == base->r ? NULL : base->rs;
    double res[3 * WD_LANES_MAX];
    wd_status st;
    for (int j = 0; j < l->n; ++j)
        l->a[j] = (wd_complex){-1, 0};
    if (base->solver == WD_SOLVER_BICGSTAB) {
        if ((st = outer_mhat(base, l, base->r, base->x, 0)) != WD_OK)
            return st;
        wd_blas_lanes(be, WD_LANE_XPAY_NORM2_COPY, l, base->b, base->r, copy, res);
        for (int j = 0; j < l->n; ++j) {
            rn2[j] = res[3 * j];
            rs[j] = sqrt(rn2[j]);
        }
    } else {
        if ((st = outer_mhat(base, l, base->te, base->x, 0)) != WD_OK)
            return st;
        wd_blas_lanes(be, WD_LANE_XPAY_NORM2_COPY, l, base->b, base->te, NULL, res);
        for (int j = 0; j < l->n; ++j)
            rs[j] = sqrt(res[3 * j]);
        if ((st = outer_mhat(base, l, base->r, base->te, 1)) != WD_OK)
            return st;
        wd_blas_lanes(be, WD_LANE_NORM2_COPY, l, base->r, NULL, copy, res);
        for (int j = 0; j < l->n; ++j)
            rn2[j] = res[3 * j];
    }
    return agreed(be);
}

/* The solves of one batch of checks: check j is ks[j] with state s[j], its
 * fields right-hand side idx[j] of base's (a solve alone: base = ks[0],
 * idx 0). */
typedef struct batch {
    wd_krylov *base;
    int m;
    int idx[WD_LANES_MAX];
    wd_krylov *ks[WD_LANES_MAX];
    state *s[WD_LANES_MAX];
} batch;

/* The checks of c with mask[j] set (all where mask is NULL) as lanes of
 * one BLAS call; pos[k] is lane k's check. */
static wd_lanes batch_lanes(const batch *c, const int *mask, int *pos)
{
    wd_lanes l;
    memset(&l, 0, sizeof l);
    for (int j = 0; j < c->m; ++j)
        if (!mask || mask[j]) {
            pos[l.n] = j;
            l.idx[l.n++] = c->idx[j];
        }
    return l;
}

/* Algorithm 2's update (see the file comment) of every solve of c at once:
 * each solve's operations those of its check alone, in the same order, each
 * one BLAS call over the solves (one reduction for all of them) and each
 * outer application one multi-RHS call per run of consecutive lanes
 * (outer_mhat), so a lane's bits are those of its check alone.  result[j],
 * and rn2[j] = |rs|^2 afterwards. */
static wd_status check_batch(const batch *c, int *result, double *rn2)
{
    wd_krylov *b0 = c->base;
    wd_backend *be = b0->be;
    const wd_complex one = {1, 0}, minus_one = {-1, 0};
    double res[3 * WD_LANES_MAX], rs[WD_LANES_MAX], r2[WD_LANES_MAX], rsj[WD_LANES_MAX];
    int pos[WD_LANES_MAX], bpos[WD_LANES_MAX], live[WD_LANES_MAX], back[WD_LANES_MAX];
    for (int j = 0; j < c->m; ++j) {
        c->ks[j]->l++;
        c->s[j]->since_check = 0;
    }
    wd_lanes l = batch_lanes(c, NULL, pos);
    wd_blas_lanes(be, WD_LANE_NORM2, &l, b0->xs, NULL, NULL, res);
    for (int j = 0; j < c->m; ++j) {
        live[j] = isfinite(res[3 * j]);
        back[j] = 0;
        result[j] = CHECK_NAN;
    }
    /* x += xs in double, xs read exactly: one pass */
    l = batch_lanes(c, live, pos);
    for (int k = 0; k < l.n; ++k)
        l.a[k] = one;
    wd_blas_lanes(be, WD_LANE_ACCUMULATE, &l, b0->xs, NULL, b0->x, NULL);
    wd_status st = l.n ? true_residual_lanes(b0, &l, rs, r2) : agreed(be);
    if (st != WD_OK)
        return st;
    for (int k = 0; k < l.n; ++k) {
        const int j = pos[k];
        state *s = c->s[j];
        rsj[j] = rs[k];
        rn2[j] = r2[k];
        if (rs[k] < s->best) {
            /* progress is judged on the system iterated on (CG: the normal
             * equations, whose residual falls faster near convergence) */
            const double rit = sqrt(r2[k]);
            s->stall = rit < STALL_GAIN * s->best_it ? 0 : s->stall + 1;
            s->best_it = fmin(s->best_it, rit);
            result[j] = CHECK_ACCEPT;
        } else {
            s->stall++;
            back[j] = 1;
        }
    }
    /* a check that does not lower the true residual is taken back */
    wd_lanes b = batch_lanes(c, back, bpos);
    if (b.n) {
        for (int k = 0; k < b.n; ++k)
            b.a[k] = minus_one;
        wd_blas_lanes(be, WD_LANE_ACCUMULATE, &b, b0->xs, NULL, b0->x, NULL);
        if ((st = true_residual_lanes(b0, &b, rs, r2)) != WD_OK)
            return st;
        for (int k = 0; k < b.n; ++k) {
            const int j = bpos[k];
            rsj[j] = rs[k];
            rn2[j] = r2[k];
            result[j] = isfinite(rs[k]) ? CHECK_REJECT : CHECK_NAN;
        }
    }
    /* rs = r came with the residual; xs = 0 */
    wd_blas_lanes(be, WD_LANE_ZERO, &l, NULL, b0->xs, NULL, NULL);
    for (int k = 0; k < l.n; ++k) {
        const int j = pos[k];
        wd_krylov *ks = c->ks[j];
        c->s[j]->best = rsj[j];
        ks->residual = rsj[j];
        if (ks->verbosity >= 2)
            fprintf(stderr, "wdirac solver%s: k=%d l=%d true residual %.3e%s\n", ks->tag, ks->k,
                    ks->l, rel(ks, rsj[j]),
                    result[j] == CHECK_ACCEPT ? "" : " (update rejected, restart)");
        if (ks->progress)
            ks->progress(ks->progress_arg, ks->k + ks->l, rel(ks, rsj[j]));
    }
    return agreed(be);
}

/* One solve's check, on its own fields; *rn2 = |rs|^2 afterwards. */
static wd_status check(wd_krylov *ks, state *s, int *result, double *rn2)
{
    batch c;
    memset(&c, 0, sizeof c);
    c.base = ks;
    c.m = 1;
    c.ks[0] = ks;
    c.s[0] = s;
    return check_batch(&c, result, rn2);
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
    if (ks->solver == WD_SOLVER_CG
            ? s->est2 <= fmax(ks->target * ks->target, s->est2_floor)
            : rn <= ks->target)
        return DO_CHECK;
    if (ks->mixed == WD_MIXED_RELIABLE && rn < ks->delta * s->rmax && rn < s->rstart)
        return DO_CHECK;
    if (ks->mixed == WD_MIXED_DEFECT && rn < ks->tol_inner * s->rstart)
        return DO_CHECK;
    return GO_ON;
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
    s->est2 = s->best * s->best;
    s->est2_floor = EST2_RESOLUTION * s->est2;
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

/* Act on classify's verdict v: salvage, nothing, or what the check it
 * asked for (DO_CHECK) found; that check has run (in a batch: checks()),
 * with status cst, its result and the new |rs|^2 rn2.  Returns NEXT_*; on
 * NEXT_DONE *status is the result. */
static int act(wd_krylov *ks, state *s, int v, wd_status cst, int result, double rn2,
               wd_status *status)
{
    if (v == GO_ON)
        return NEXT_CONTINUE;
    if (v == SALVAGE_NAN || v == SALVAGE_DIVERGED) {
        *status = stop(ks, s, v == SALVAGE_NAN ? WD_ERR_NAN : WD_ERR_DIVERGED);
        return NEXT_DONE;
    }
    if (cst != WD_OK) {
        *status = cst;
        return NEXT_DONE;
    }
    return after_check(ks, s, result, rn2, status);
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

/*
 * The lock-step iteration.  Each lane (one right-hand side, one wd_krylov)
 * runs exactly the single-RHS algorithm, cut at its operator applications
 * into three phases per iteration:
 *   A  start or restart the Krylov space, the max_iter check
 *      -> first application: BiCGstab v = Mhat p, CG t = Mhat p
 *   B  BiCGstab: alpha, rs -= alpha v; CG: p^dag A p (breakdown checks)
 *      -> second application: BiCGstab t = Mhat rs, CG v = Mhat^dag t
 *   C  the rest of the iteration: accumulate, the new residual, the
 *      classification and its check, the new direction
 * Every application is one wd_eo_mhat_multi per maximal run of consecutive
 * lanes that take part (views into the shared multi-fields), so a lane
 * that has finished, or that broke down in phase B and restarts in the
 * next round, costs nothing.  The vector operations of the iteration are
 * likewise one wd_blas_lanes call over the lanes that take part (on the
 * GPU one launch, and one synchronisation for every lane's reductions,
 * instead of one a lane); only what one lane alone needs (its checks,
 * restarts and breakdowns) runs lane by lane.  A lane's arithmetic never
 * depends on another lane and its operations keep their order, so each
 * gives bit for bit what it gives alone (wd_eo_mhat_multi is bit for bit
 * wd_eo_mhat per right-hand side, but for half precision on the GPU:
 * wd_solver.h), and one lane is the single-RHS solver.
 */
typedef struct lane {
    wd_krylov *ks;
    state s;
    double r2;                      /* |rs|^2 (CG: of the normal equations) */
    double complex rho, alpha, omega;   /* BiCGstab */
    double pap;                     /* CG: |Mhat p|^2 */
    int fresh;                      /* (re)start the Krylov space in phase A */
    int step;                       /* takes part in this round's applications */
    int done;
    wd_status status;
} lane;

/* The lane stops with `status`; a failure's message is kept in the lane. */
static void finish(lane *L, wd_status status)
{
    L->done = 1;
    L->step = 0;
    L->status = status;
    if (status != WD_OK)
        snprintf(L->ks->message, sizeof L->ks->message, "%s", wd_last_error());
}

static void phase_a(lane *L)
{
    wd_krylov *ks = L->ks;
    wd_backend *be = ks->be;
    if (L->fresh) {
        if (ks->solver == WD_SOLVER_BICGSTAB) {
            wd_blas_copy(be, ks->r0, ks->rs);
            L->rho = L->r2;
        }
        wd_blas_copy(be, ks->p, ks->rs);
        L->fresh = 0;
        L->s.since = 0;
    }
    if (ks->k + ks->l + 2 > ks->max_iter) {
        finish(L, stop(ks, &L->s, WD_ERR_MAX_ITER));
        return;
    }
    L->step = 1;
}

/* A recurrence coefficient vanished (breakdown() decides): the lane leaves
 * this round and restarts in the next, or stops. */
static void lane_breakdown(lane *L)
{
    wd_status status = WD_OK;
    L->step = 0;
    if (breakdown(L->ks, &L->s, &L->r2, &status) == NEXT_DONE)
        finish(L, status);
    else
        L->fresh = 1;
}

/* The lanes 0..n-1 with `want` set, in lane order, as lanes of one
 * BLAS call (lane i is right-hand side i of lane 0's fields); a, b are
 * filled in by the caller. */
static wd_lanes lanes_where(int n, const int *want)
{
    wd_lanes l;
    memset(&l, 0, sizeof l);
    for (int i = 0; i < n; ++i)
        if (want[i])
            l.idx[l.n++] = i;
    return l;
}

/* The lanes that step this round (want[i] = L[i].step), as lanes_where */
static wd_lanes stepping(const lane *L, int n, int *want)
{
    for (int i = 0; i < n; ++i)
        want[i] = L[i].step;
    return lanes_where(n, want);
}

/* The checks that the verdicts of lanes 0..n-1 ask for (DO_CHECK), every
 * one at once (check_batch: one pass of each kind over all of them, one
 * multi-RHS outer application per run of consecutive lanes); result[i],
 * rn2[i] by lane.  Their status. */
static wd_status checks(lane *L, int n, const int *verdict, int *result, double *rn2)
{
    batch c;
    int res[WD_LANES_MAX];
    double r2[WD_LANES_MAX];
    memset(&c, 0, sizeof c);
    c.base = L[0].ks;
    for (int i = 0; i < n; ++i)
        if (verdict[i] == DO_CHECK) {
            c.idx[c.m] = i;
            c.ks[c.m] = L[i].ks;
            c.s[c.m++] = &L[i].s;
        }
    if (!c.m)
        return WD_OK;
    const wd_status st = check_batch(&c, res, r2);
    for (int j = 0; j < c.m; ++j) {
        result[c.idx[j]] = res[j];
        rn2[c.idx[j]] = r2[j];
    }
    return st;
}

/* xs += a x + b y on lanes l (y may be NULL): fused in the sloppy
 * precision, or into an outer-precision accumulator */
static void accumulate_lanes(wd_krylov *ks0, const wd_lanes *l, const wd_field *x,
                             const wd_field *y)
{
    wd_backend *be = ks0->be;
    if (ks0->xs->precision != x->precision)
        wd_blas_lanes(be, WD_LANE_ACCUMULATE, l, x, y, ks0->xs, NULL);
    else if (y)
        wd_blas_lanes(be, WD_LANE_CAXPBYPZ, l, x, y, ks0->xs, NULL);
    else
        wd_blas_lanes(be, WD_LANE_AXPY, l, x, ks0->xs, NULL, NULL);
}

/* BiCGstab phase B on every stepping lane: alpha = rho / <r0, v>, then
 * rs -= alpha v (a lane whose coefficients vanish breaks down instead);
 * fused: <r0, v> already reduced by the operator (one lane).  Not WD_OK:
 * a rank's failure (settled) */
static wd_status bicgstab_b(lane *L, int n, const double *fused)
{
    wd_krylov *ks0 = L[0].ks;
    int want[WD_LANES_MAX];
    double res[3 * WD_LANES_MAX];
    wd_lanes l = stepping(L, n, want);
    if (fused)
        memcpy(res, fused, 3 * sizeof *res);
    else
        wd_blas_lanes(ks0->be, WD_LANE_CDOT, &l, ks0->r0, ks0->v, NULL, res);
    const wd_status st = settled(ks0->be, res, 3 * l.n);
    if (st != WD_OK)
        return st;
    for (int j = 0; j < l.n; ++j) {
        lane *Li = &L[l.idx[j]];
        const double complex r0v = CMPLX(res[3 * j], res[3 * j + 1]);
        if (r0v == 0 || Li->rho == 0) {
            lane_breakdown(Li);
            want[l.idx[j]] = 0;
            continue;
        }
        Li->alpha = Li->rho / r0v;
    }
    l = lanes_where(n, want);
    for (int j = 0; j < l.n; ++j)
        l.a[j] = wc(-L[l.idx[j]].alpha);
    wd_blas_lanes(ks0->be, WD_LANE_CAXPY, &l, ks0->v, ks0->rs, NULL, NULL);
    return WD_OK;
}

/* BiCGstab phase C on every stepping lane: omega, the accumulation, the
 * new residual and rho, the classification (and a lane's check), the new
 * direction; fused: <s, t> and |t|^2 already reduced by the operator.
 * Not WD_OK: a rank's failure (settled) */
static wd_status bicgstab_c(lane *L, int n, const double *fused)
{
    wd_krylov *ks0 = L[0].ks;
    wd_backend *be = ks0->be;
    int want[WD_LANES_MAX], verdict[WD_LANES_MAX], result[WD_LANES_MAX], rho[WD_LANES_MAX];
    double res[3 * WD_LANES_MAX], rn2[WD_LANES_MAX];
    double complex rho_new[WD_LANES_MAX];
    wd_lanes l = stepping(L, n, want);
    if (fused) {
        /* the operator reduced {<s, t>, |t|^2}: <t, s> is its conjugate */
        res[0] = fused[0];
        res[1] = -fused[1];
        res[2] = fused[2];
    } else {
        wd_blas_lanes(be, WD_LANE_CDOT_NORM2, &l, ks0->t, ks0->rs, NULL, res);
    }
    wd_status st = settled(be, res, 3 * l.n);
    if (st != WD_OK)
        return st;
    for (int j = 0; j < l.n; ++j) {
        lane *Li = &L[l.idx[j]];
        const double *ts = res + 3 * j;
        Li->omega = ts[2] > 0 ? CMPLX(ts[0], ts[1]) / ts[2] : 0;
        l.a[j] = wc(Li->alpha);
        l.b[j] = wc(Li->omega);
    }
    /* xs += alpha p + omega s (into an accumulator of either precision) and
     * r = s - omega t in one pass */
    wd_blas_lanes5(be, WD_LANE_BICGSTAB_UPDATE, &l, ks0->p, ks0->rs, ks0->xs, ks0->t, ks0->r0,
                   res);
    if ((st = settled(be, res, 3 * l.n)) != WD_OK)
        return st;
    for (int i = 0; i < n; ++i)
        verdict[i] = GO_ON, rho[i] = 0;
    for (int j = 0; j < l.n; ++j) {
        const int i = l.idx[j];
        lane *Li = &L[i];
        wd_krylov *ks = Li->ks;
        state *s = &Li->s;
        const double *rr = res + 3 * j;
        rho_new[i] = CMPLX(rr[1], rr[2]);
        Li->r2 = rr[0];
        ks->k++;
        s->since++;
        s->since_check++;
        report(ks, sqrt(Li->r2), "");
        verdict[i] = classify(ks, s, sqrt(Li->r2));
    }
    const wd_status cst = checks(L, n, verdict, result, rn2);
    for (int j = 0; j < l.n; ++j) {
        const int i = l.idx[j];
        lane *Li = &L[i];
        wd_status status = WD_OK;
        const int next = act(Li->ks, &Li->s, verdict[i], cst, result[i], rn2[i], &status);
        want[i] = 0;
        if (next == NEXT_DONE) {
            finish(Li, status);
            continue;
        }
        if (verdict[i] == DO_CHECK) {
            Li->r2 = rn2[i];
            if (next == NEXT_RESTART) {
                Li->fresh = 1;
                continue;
            }
            rho[i] = 1;
        }
        if (Li->omega == 0) {
            lane_breakdown(Li);
            continue;
        }
        want[i] = 1;
    }
    /* after a reliable update rho = <r0, r> of the new r, for every such
     * lane at once (its breakdowns need none) */
    for (int i = 0; i < n; ++i)
        rho[i] &= want[i];
    l = lanes_where(n, rho);
    wd_blas_lanes(be, WD_LANE_CDOT, &l, ks0->r0, ks0->rs, NULL, res);
    for (int j = 0; j < l.n; ++j)
        rho_new[l.idx[j]] = CMPLX(res[3 * j], res[3 * j + 1]);
    l = lanes_where(n, want);
    for (int j = 0; j < l.n; ++j) {
        lane *Li = &L[l.idx[j]];
        const double complex beta = (rho_new[l.idx[j]] / Li->rho) * (Li->alpha / Li->omega);
        l.a[j] = wc(-beta * Li->omega);
        l.b[j] = wc(beta);
        Li->rho = rho_new[l.idx[j]];
    }
    wd_blas_lanes(be, WD_LANE_CXPAYPBZ, &l, ks0->rs, ks0->v, ks0->p, NULL);
    return WD_OK;
}

/* CG phase B on every stepping lane: p^dag A p = |Mhat p|^2 (fused:
 * already reduced by the operator, in fused[2]).  Not WD_OK: a rank's
 * failure (settled) */
static wd_status cg_b(lane *L, int n, const double *fused)
{
    wd_krylov *ks0 = L[0].ks;
    int want[WD_LANES_MAX];
    double res[3 * WD_LANES_MAX];
    const wd_lanes l = stepping(L, n, want);
    if (fused)
        res[0] = fused[2];
    else
        wd_blas_lanes(ks0->be, WD_LANE_NORM2, &l, ks0->t, NULL, NULL, res);
    const wd_status st = settled(ks0->be, res, fused ? 1 : 3 * l.n);
    if (st != WD_OK)
        return st;
    for (int j = 0; j < l.n; ++j) {
        lane *Li = &L[l.idx[j]];
        Li->pap = res[3 * j];
        /* the single-RHS order applied Mhat^dag before this test; its result
         * is not read on a breakdown, so the lane skips it */
        if (!(Li->pap > 0) && isfinite(Li->pap))
            lane_breakdown(Li);
    }
    return WD_OK;
}

/* CG phase C on every stepping lane: the new residual, its classification,
 * the accumulation and the new direction (one pass where no check
 * follows), or the lanes' checks (all at once) and after a reliable update
 * the new direction.  Not WD_OK: a rank's failure (settled) */
static wd_status cg_c(lane *L, int n)
{
    wd_krylov *ks0 = L[0].ks;
    wd_backend *be = ks0->be;
    int want[WD_LANES_MAX], fused[WD_LANES_MAX], verdict[WD_LANES_MAX], result[WD_LANES_MAX];
    int ortho[WD_LANES_MAX];
    double res[3 * WD_LANES_MAX], alpha[WD_LANES_MAX], r2_new[WD_LANES_MAX];
    double rn2[WD_LANES_MAX], r2_prev[WD_LANES_MAX];
    const int same = ks0->xs->precision == ks0->p->precision;
    wd_lanes l = stepping(L, n, want);
    for (int j = 0; j < l.n; ++j) {
        const lane *Li = &L[l.idx[j]];
        alpha[l.idx[j]] = Li->r2 / Li->pap;
        l.a[j] = wc(-alpha[l.idx[j]]);
    }
    wd_blas_lanes(be, WD_LANE_AXPY_NORM2, &l, ks0->v, ks0->rs, NULL, res);
    const wd_status st = settled(be, res, 3 * l.n);
    if (st != WD_OK)
        return st;
    for (int i = 0; i < n; ++i)
        fused[i] = ortho[i] = 0, verdict[i] = GO_ON;
    for (int j = 0; j < l.n; ++j) {
        const int i = l.idx[j];
        wd_krylov *ks = L[i].ks;
        state *s = &L[i].s;
        r2_new[i] = res[3 * j];
        s->est2 -= alpha[i] * L[i].r2;
        ks->k++;
        s->since++;
        s->since_check++;
        report(ks, sqrt(r2_new[i]), " (normal equations)");
        verdict[i] = classify(ks, s, sqrt(r2_new[i]));
        fused[i] = verdict[i] == GO_ON;
        want[i] = !fused[i];
    }
    /* x += alpha p, p = rs + beta p in one pass */
    wd_lanes f = lanes_where(n, fused);
    for (int j = 0; j < f.n; ++j) {
        const int i = f.idx[j];
        f.a[j] = wc(alpha[i]);
        f.b[j] = wc(r2_new[i] / L[i].r2);
        L[i].r2 = r2_new[i];
    }
    if (same)
        wd_blas_lanes(be, WD_LANE_AXPY_ZPBX, &f, ks0->p, ks0->xs, ks0->rs, NULL);
    else
        wd_blas_lanes(be, WD_LANE_ACCUMULATE_XPAY, &f, ks0->p, ks0->rs, ks0->xs, NULL);
    /* the others: accumulate, then their checks or stops */
    l = lanes_where(n, want);
    for (int j = 0; j < l.n; ++j)
        l.a[j] = wc(alpha[l.idx[j]]);
    accumulate_lanes(ks0, &l, ks0->p, NULL);
    const wd_status cst = checks(L, n, verdict, result, rn2);
    for (int j = 0; j < l.n; ++j) {
        const int i = l.idx[j];
        lane *Li = &L[i];
        wd_status status = WD_OK;
        r2_prev[i] = Li->r2;
        const int next = act(Li->ks, &Li->s, verdict[i], cst, result[i], rn2[i], &status);
        if (next == NEXT_DONE) {
            finish(Li, status);
            continue;
        }
        Li->r2 = rn2[i];
        if (next == NEXT_RESTART) {
            Li->fresh = 1;
            continue;
        }
        ortho[i] = 1;
    }
    /* reliable update: p orthogonal to the new r in the complex inner
     * product, then the usual step with beta = |r_true|^2 / |r_old|^2, on
     * every such lane at once */
    l = lanes_where(n, ortho);
    wd_blas_lanes(be, WD_LANE_CDOT, &l, ks0->rs, ks0->p, NULL, res);
    for (int j = 0; j < l.n; ++j) {
        const double r2 = rn2[l.idx[j]];
        l.a[j] = (wd_complex){-res[3 * j] / r2, -res[3 * j + 1] / r2};
    }
    wd_blas_lanes(be, WD_LANE_CAXPY, &l, ks0->rs, ks0->p, NULL, NULL);
    for (int j = 0; j < l.n; ++j)
        l.a[j] = wc(rn2[l.idx[j]] / r2_prev[l.idx[j]]);
    wd_blas_lanes(be, WD_LANE_XPAY, &l, ks0->rs, ks0->p, NULL, NULL);
    return WD_OK;
}

enum { ROLE_P, ROLE_V, ROLE_T, ROLE_RS, ROLE_XS, ROLE_R0, ROLE_B, ROLE_X, ROLE_R, ROLE_TE };

static wd_field *role(wd_krylov *ks, int r)
{
    switch (r) {
    case ROLE_P: return ks->p;
    case ROLE_V: return ks->v;
    case ROLE_T: return ks->t;
    case ROLE_RS: return ks->rs;
    case ROLE_XS: return ks->xs;
    case ROLE_R0: return ks->r0;
    case ROLE_B: return ks->b;
    case ROLE_X: return ks->x;
    case ROLE_R: return ks->r;
    default: return ks->te;
    }
}

/* out = Mhat in (or Mhat^dag) on every lane that steps: one multi-RHS
 * application per run of consecutive such lanes, views of the lanes'
 * fields from the run's first lane on (each a right-hand side of one
 * multi-field, in lane order: checked by wd_krylov_run_many). */
static wd_status apply(lane *L, int n, int out, int in, int dagger)
{
    for (int a = 0; a < n;) {
        if (!L[a].step) {
            a++;
            continue;
        }
        int e = a + 1;
        while (e < n && L[e].step)
            e++;
        wd_field vo = wd_field_view(role(L[a].ks, out), 0, e - a);
        const wd_field vi = wd_field_view(role(L[a].ks, in), 0, e - a);
        const wd_status st = wd_eo_mhat_multi(&L[0].ks->sloppy, &vo, &vi, dagger, e - a);
        if (st != WD_OK)
            return st;
        a = e;
    }
    return WD_OK;
}

/* out = Mhat in on the one lane, reducing out against y (ROLE_NONE: |out|^2
 * alone) in the kernel that writes it (wd_eo_mhat_reduce): the fused
 * iteration of a single solve */
enum { ROLE_NONE = -1 };
static wd_status apply_reduce(lane *L, int out, int in, int y, double res[3])
{
    wd_krylov *ks = L[0].ks;
    return wd_eo_mhat_reduce(&ks->sloppy, role(ks, out), role(ks, in),
                             y == ROLE_NONE ? NULL : role(ks, y), res);
}

/* the first lane with a status that is no solver outcome (a backend or
 * communication failure), or -1 */
static int fatal_lane(const lane *L, int n)
{
    for (int i = 0; i < n; ++i)
        if (L[i].done && L[i].status != WD_OK && !wd_solve_outcome(L[i].status))
            return i;
    return -1;
}

/* Each lane's fields p, v, t, rs, xs (and r0), and the outer b, x, r (and
 * te), must be right-hand side i of one field each, lane after lane, so
 * that views from one lane on reach the next (the operator applications,
 * the lanes' BLAS and the batched checks use them so). */
static wd_status check_lanes(wd_krylov *ks, int n)
{
    for (int i = 1; i < n; ++i)
        for (int r = ROLE_P; r <= ROLE_TE; ++r) {
            const wd_field *f0 = role(&ks[0], r), *fi = role(&ks[i], r);
            if (!f0 && !fi)
                continue;
            if (!f0 || !fi || fi->precision != f0->precision ||
                (const char *)fi->data != (const char *)f0->data + (size_t)i * f0->bytes)
                return wd_fail(WD_ERR_INTERNAL, "wd_krylov_run_many: lane %d's work fields "
                               "are not right-hand side %d of lane 0's multi-fields", i, i);
        }
    return WD_OK;
}

/* The first true residual of every lane, all at once (with the copy into
 * rs); a lane is finished at once when x = 0 already meets the target (or
 * its residual is not finite) */
static wd_status lanes_start(lane *L, int n)
{
    wd_krylov *ks0 = L[0].ks;
    double rs[WD_LANES_MAX], r2[WD_LANES_MAX];
    int go[WD_LANES_MAX];
    wd_lanes l;
    memset(&l, 0, sizeof l);
    for (int i = 0; i < n; ++i) {
        wd_krylov *ks = L[i].ks;
        memset(&L[i].s, 0, sizeof L[i].s);
        ks->k = ks->l = 0;
        ks->message[0] = 0;
        l.idx[l.n++] = i;
    }
    const wd_status st = true_residual_lanes(ks0, &l, rs, r2);
    if (st != WD_OK)
        return st;
    for (int i = 0; i < n; ++i) {
        wd_krylov *ks = L[i].ks;
        state *s = &L[i].s;
        s->best = ks->residual = rs[i];
        s->best_it = sqrt(r2[i]);
        L[i].r2 = r2[i];
        L[i].fresh = 1;
        go[i] = 0;
        if (!isfinite(rs[i])) {
            finish(&L[i], wd_fail(WD_ERR_NAN, "solver: the initial residual is not finite"));
            continue;
        }
        if (rs[i] <= ks->target) {
            finish(&L[i], WD_OK);
            continue;
        }
        s->rstart = s->rmax = s->rmin = s->rn = sqrt(r2[i]);
        s->est2 = rs[i] * rs[i];
        s->est2_floor = EST2_RESOLUTION * s->est2;
        go[i] = 1;
    }
    l = lanes_where(n, go);
    wd_blas_lanes(ks0->be, WD_LANE_ZERO, &l, NULL, ks0->xs, NULL, NULL);
    return WD_OK;
}

wd_status wd_krylov_run_many(wd_krylov *ks, int n, wd_status *lane_status)
{
    if (n < 1 || n > WD_LANES_MAX)
        return wd_fail(WD_ERR_INTERNAL, "wd_krylov_run_many: %d lanes (1 to %d)", n,
                       WD_LANES_MAX);
    wd_backend *be = ks[0].be;
    const int bicg = ks[0].solver == WD_SOLVER_BICGSTAB;
    /* a single solve whose sloppy operator reduces in its last kernel takes
     * the iteration's reductions of Mhat's result from there (the lanes of
     * a batch reduce with the BLAS, so that double and single batches give
     * their single solves' bits: the reducing kernels exist for half
     * precision alone, Variant.reduces in generator/naming.py) */
    const int fused = n == 1 && !ks[0].no_fused && wd_eo_mhat_reduces(&ks[0].sloppy);
    for (int i = 1; i < n; ++i)
        if (ks[i].solver != ks[0].solver || ks[i].be != be)
            return wd_fail(WD_ERR_INTERNAL, "wd_krylov_run_many: lane %d has another solver or "
                           "backend than lane 0", i);
    wd_status st = check_lanes(ks, n);
    lane *L = st == WD_OK ? calloc((size_t)n, sizeof *L) : NULL;
    if (st == WD_OK && !L)
        st = wd_fail(WD_ERR_NOMEM, "wd_krylov_run_many: cannot allocate %d lanes", n);
    for (int i = 0; i < n; ++i)
        lane_status[i] = st;
    if (st == WD_OK) {
        for (int i = 0; i < n; ++i)
            L[i].ks = &ks[i];
        st = lanes_start(L, n);
    }
    while (st == WD_OK) {
        int stepping = 0;
        for (int i = 0; i < n; ++i)
            if (!L[i].done) {
                phase_a(&L[i]);
                stepping += L[i].step;
            }
        /* one process: a failure is polled here; a grid's reaches every
         * rank in the next global sum (settled) */
        if (be->grid.size <= 1 && (st = be->error) != WD_OK)
            break;
        if (fatal_lane(L, n) >= 0 || !stepping)
            break;
        double red[3];
        if ((st = fused ? apply_reduce(L, bicg ? ROLE_V : ROLE_T, ROLE_P,
                                       bicg ? ROLE_R0 : ROLE_NONE, red)
                        : apply(L, n, bicg ? ROLE_V : ROLE_T, ROLE_P, 0)) != WD_OK)
            break;
        if ((st = (bicg ? bicgstab_b : cg_b)(L, n, fused ? red : NULL)) != WD_OK ||
            fatal_lane(L, n) >= 0)
            break;
#ifdef WD_FAULT_INJECTION
        inject_fault(&ks[0]);
#endif
        if (bicg && fused)
            st = apply_reduce(L, ROLE_T, ROLE_RS, ROLE_RS, red);
        else
            st = bicg ? apply(L, n, ROLE_T, ROLE_RS, 0) : apply(L, n, ROLE_V, ROLE_T, 1);
        if (st != WD_OK)
            break;
        if ((st = bicg ? bicgstab_c(L, n, fused ? red : NULL) : cg_c(L, n)) != WD_OK ||
            fatal_lane(L, n) >= 0)
            break;
    }
    if (st == WD_OK) {
        const int f = fatal_lane(L, n);
        if (f >= 0)
            st = wd_fail(L[f].status, "%s", ks[f].message);
    }
    for (int i = 0; i < n && L; ++i)
        lane_status[i] = L[i].done ? L[i].status : st;
    if (st != WD_OK)
        for (int i = 0; i < n; ++i)
            if (L && !L[i].done)
                snprintf(ks[i].message, sizeof ks[i].message, "%s", wd_last_error());
    free(L);
    return st;
}

wd_status wd_krylov_run(wd_krylov *ks)
{
    wd_status lane_st;
    const wd_status st = wd_krylov_run_many(ks, 1, &lane_st);
    if (st != WD_OK || lane_st == WD_OK)
        return st;
    return wd_fail(lane_st, "%s", ks->message);
}
