/*
 * mg_solve.c: the multigrid setup, its cycle and the outer flexible GCR
 * behind WD_SOLVER_MG (wdirac.h, docs/solvers.md "Multigrid").
 *
 * The externally accessible functions are
 *   wd_mg_default_settings  the documented defaults (QUDA's usual choices)
 *   wd_solver_mg_setup      null vectors, transfers and coarse operators of
 *                           a solver's operator, attached to the solver
 * and, through the solver's hook, the WD_SOLVER_MG solve: flexible GCR on
 *   A x = b / (4+m),  A = M / (4+m) = L - kappa D
 * (the same relative residual as M x = b), preconditioned by one cycle:
 *   level l < last: pre-smoothing (MR), the residual restricted, the next
 *   level solved (K-cycle: GCR to coarse_tol preconditioned by its own
 *   cycle; V-cycle: one application of its cycle), the correction
 *   prolongated, post-smoothing (MR on the level's residual);
 *   the last level: GCR to coarse_tol.
 * The fine level runs on the solver's backend (mg_fine.c: the outer GCR
 * in the outer precision, the smoother on the even-odd Schur operator in
 * the sloppy precision); the transfers and the coarse levels in float64
 * on host fields (wd_mg.h).  Deterministic: the same bits from run to run
 * and for any thread count.
 *
 * Null vectors: from nvec seeded random fields v, each relaxed on the
 * homogeneous system A v = 0 by CG on the normal equations (the fine
 * level: of the Schur operator on the backend, the odd sites from A v = 0;
 * a coarse level: of A, with A^dag = g5 A g5 since P preserves
 * chirality), stopped when |A v| <= setup_tol |A v_0| or after
 * setup_max_iter iterations; or read from a file (mg_file.c), and written
 * to one, as relaxed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rng.h"
#include "wd_core.h"
#include "wd_mg.h"
#include "wd_solver.h"

typedef struct mg_level {
    wd_mg_op op;
    wd_mg_transfer t;           /* to the next level (not on the last) */
    size_t len;                 /* complex numbers of a field: volume x n */
    double complex *b, *x;      /* this level's right-hand side and solution, set from above */
    double complex *w[4];       /* the cycle's work */
    double complex *r, **z, **q;  /* GCR: residual, preconditioned directions, A z */
    long iterations;            /* GCR iterations (coarse levels), smoother steps (fine) */
} mg_level;

typedef struct wd_mg {
    wd_mg_settings set;
    double mass, csw;
    int levels;
    mg_level lv[WD_MG_MAX_LEVELS];  /* lv[0]: the fine level's host operator and transfer */
    wd_mg_fine fine;                /* the fine level's fields on the solver's backend */
    /* where a solve's seconds go (printed under verbosity 1): the fine
     * fields' moves to and from the host, P and P^dag, the coarse levels */
    double t_move, t_transfer, t_coarse;
} wd_mg;

void wd_mg_default_settings(wd_mg_settings *m)
{
    memset(m, 0, sizeof *m);
    m->levels = 2;
    for (int l = 0; l < WD_MG_MAX_LEVELS - 1; ++l) {
        for (int mu = 0; mu < 4; ++mu)
            m->block[l][mu] = l == 0 ? 4 : 2;
        m->nvec[l] = l == 0 ? 24 : 32;
    }
    m->setup_tol = 5e-6;
    m->setup_max_iter = 500;
    m->pre_smooth = 0;
    m->post_smooth = 4;
    m->cycle = WD_MG_KCYCLE;
    m->coarse_tol = 0.25;
    m->coarse_max_iter = 100;
    m->gcr_nkrylov = 20;
    m->seed = 1;
    m->verbosity = 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static wd_status check_mg_settings(const wd_mg_settings *m)
{
    if (m->levels < 2 || m->levels > WD_MG_MAX_LEVELS)
        return wd_fail(WD_ERR_INVALID, "multigrid: levels %d must be between 2 and %d",
                       m->levels, WD_MG_MAX_LEVELS);
    if (!(m->setup_tol > 0 && m->setup_tol < 1) || m->setup_max_iter < 0)
        return wd_fail(WD_ERR_INVALID, "multigrid: setup_tol %g must be in (0, 1) and "
                       "setup_max_iter %d >= 0", m->setup_tol, m->setup_max_iter);
    if (m->pre_smooth < 0 || m->post_smooth < 0 || m->pre_smooth + m->post_smooth < 1)
        return wd_fail(WD_ERR_INVALID, "multigrid: pre_smooth %d and post_smooth %d must be >= 0 "
                       "and not both 0", m->pre_smooth, m->post_smooth);
    if (m->cycle != WD_MG_VCYCLE && m->cycle != WD_MG_KCYCLE)
        return wd_fail(WD_ERR_INVALID, "multigrid: cycle %d must be WD_MG_VCYCLE (0) or "
                       "WD_MG_KCYCLE (1)", (int)m->cycle);
    if (!(m->coarse_tol > 0 && m->coarse_tol < 1) || m->coarse_max_iter < 1)
        return wd_fail(WD_ERR_INVALID, "multigrid: coarse_tol %g must be in (0, 1) and "
                       "coarse_max_iter %d >= 1", m->coarse_tol, m->coarse_max_iter);
    if (m->gcr_nkrylov < 1 || m->gcr_nkrylov > 200)
        return wd_fail(WD_ERR_INVALID, "multigrid: gcr_nkrylov %d must be between 1 and 200",
                       m->gcr_nkrylov);
    return WD_OK;
}

static void mg_free(void *state)
{
    wd_mg *mg = state;
    if (!mg)
        return;
    wd_mg_fine_free(&mg->fine);
    for (int l = 0; l < WD_MG_MAX_LEVELS; ++l) {
        mg_level *v = &mg->lv[l];
        wd_mg_op_free(&v->op);
        wd_mg_transfer_free(&v->t);
        free(v->b);
        free(v->x);
        free(v->r);
        for (int i = 0; i < 4; ++i)
            free(v->w[i]);
        for (int i = 0; v->z && i < mg->set.gcr_nkrylov; ++i)
            free(v->z[i]);
        for (int i = 0; v->q && i < mg->set.gcr_nkrylov; ++i)
            free(v->q[i]);

        free(v->z);
        free(v->q);
    }
    free(mg);
}

/* the host work fields of level l (its operator set): the fine level's
 * solver lives on the backend and needs two host fields for the transfers */
static wd_status level_alloc(wd_mg *mg, int l)
{
    mg_level *v = &mg->lv[l];
    const int nk = l ? mg->set.gcr_nkrylov : 0;
    v->len = v->op.volume * v->op.n;
    const size_t bytes = v->len * sizeof(double complex);
    int ok = (v->w[0] = malloc(bytes)) && (v->w[1] = malloc(bytes));
    if (ok && l)
        ok = (v->b = malloc(bytes)) && (v->x = malloc(bytes)) && (v->r = malloc(bytes)) &&
             (v->z = calloc(nk, sizeof *v->z)) && (v->q = calloc(nk, sizeof *v->q));
    for (int i = 2; ok && l && i < 4; ++i)
        ok = (v->w[i] = malloc(bytes)) != NULL;
    for (int i = 0; ok && i < nk; ++i)
        ok = (v->z[i] = malloc(bytes)) && (v->q[i] = malloc(bytes));
    return ok ? WD_OK
              : wd_fail(WD_ERR_NOMEM, "multigrid level %d: cannot allocate %d work fields of %zu "
                        "bytes", l, 2 * nk + 7, bytes);
}

/* ---- vector helpers on n complex numbers ---- */

static void vzero(double complex *x, size_t n) { memset(x, 0, n * sizeof *x); }

static void vcopy(double complex *y, const double complex *x, size_t n)
{
    memcpy(y, x, n * sizeof *y);
}

/* y += a x */
static void vaxpy(double complex a, const double complex *x, double complex *y, size_t n)
{
#pragma omp parallel for schedule(static) if (n >= WD_MG_PARALLEL_MIN)
    for (size_t i = 0; i < n; ++i)
        y[i] += a * x[i];
}

/* y = b - y */
static void vbminus(const double complex *b, double complex *y, size_t n)
{
#pragma omp parallel for schedule(static) if (n >= WD_MG_PARALLEL_MIN)
    for (size_t i = 0; i < n; ++i)
        y[i] = b[i] - y[i];
}

/* ---- the cycle ---- */

static int gcr(wd_mg *mg, int l, double complex *x, const double complex *b, double tol,
               int max_iter, int precondition, int verbose, double *relres, wd_status *st);
static wd_status cycle(wd_mg *mg, int l, double complex *e, const double complex *r);

/* e = steps of minimal residual on A_l e = r from e = 0 (w[2], w[3] scratch) */
static void smooth(wd_mg *mg, int l, double complex *e, const double complex *r, int steps)
{
    mg_level *v = &mg->lv[l];
    double complex *rr = v->w[2], *q = v->w[3];
    vzero(e, v->len);
    vcopy(rr, r, v->len);
    for (int i = 0; i < steps; ++i) {
        wd_mg_op_apply(&v->op, q, rr);
        const double qq = wd_mg_norm2(q, v->len);
        if (!(qq > 0))
            break;
        const double complex alpha = wd_mg_dot(q, rr, v->len) / qq;
        vaxpy(alpha, rr, e, v->len);
        vaxpy(-alpha, q, rr, v->len);
    }
}

/* the next level's solve of c->x from c->b, within a cycle from level l */
static wd_status coarse_solve(wd_mg *mg, int l)
{
    mg_level *c = &mg->lv[l + 1];
    const wd_mg_settings *m = &mg->set;
    wd_status st = WD_OK;
    vzero(c->x, c->len);
    const int last = l + 1 == mg->levels - 1;
    double rel;
    if (last || m->cycle == WD_MG_KCYCLE)
        gcr(mg, l + 1, c->x, c->b, m->coarse_tol, m->coarse_max_iter, !last, 0, &rel, &st);
    else
        st = cycle(mg, l + 1, c->x, c->b);
    return st;
}

/* e = K_0 r on the backend: the fine level's cycle (e may not be r; the
 * fine fields u and t are its scratch) */
static wd_status cycle_fine(wd_mg *mg, wd_mg_pair *e, const wd_mg_pair *r)
{
    wd_mg_fine *f = &mg->fine;
    wd_backend *be = f->be;
    mg_level *v = &mg->lv[0], *c = &mg->lv[1];
    const wd_mg_settings *m = &mg->set;
    const wd_complex one = {1, 0};
    wd_status st;
    const wd_mg_pair *res = r;
    if (m->pre_smooth) {
        if ((st = wd_mg_fine_smooth(f, e, r, m->pre_smooth)) != WD_OK ||
            (st = wd_mg_fine_apply(f, &f->u, e)) != WD_OK)
            return st;
        wd_mg_pair_ax(be, -1, &f->u);
        wd_mg_pair_caxpy(be, one, r, &f->u);
        res = &f->u;
        v->iterations += m->pre_smooth;
    }
    double t = now_s();
    if ((st = wd_mg_fine_to_host(f, v->w[0], res)) != WD_OK)
        return st;
    mg->t_move += now_s() - t;
    t = now_s();
    wd_mg_restrict(&v->t, c->b, v->w[0]);
    mg->t_transfer += now_s() - t;
    t = now_s();
    if ((st = coarse_solve(mg, 0)) != WD_OK)
        return st;
    mg->t_coarse += now_s() - t;
    t = now_s();
    wd_mg_prolong(&v->t, v->w[1], c->x);
    mg->t_transfer += now_s() - t;
    t = now_s();
    if (m->pre_smooth) {
        if ((st = wd_mg_fine_from_host(f, &f->u, v->w[1])) != WD_OK)
            return st;
        wd_mg_pair_caxpy(be, one, &f->u, e);
    } else if ((st = wd_mg_fine_from_host(f, e, v->w[1])) != WD_OK) {
        return st;
    }
    mg->t_move += now_s() - t;
    if (m->post_smooth) {
        /* u = r - A e, then e += the smoother's correction of u */
        if ((st = wd_mg_fine_apply(f, &f->u, e)) != WD_OK)
            return st;
        wd_mg_pair_ax(be, -1, &f->u);
        wd_mg_pair_caxpy(be, one, r, &f->u);
        if ((st = wd_mg_fine_smooth(f, &f->u, &f->u, m->post_smooth)) != WD_OK)
            return st;
        wd_mg_pair_caxpy(be, one, &f->u, e);
        v->iterations += m->post_smooth;
    }
    return be->error;
}

/* e = K_l r: one cycle from a coarse level l (below the last level) */
static wd_status cycle(wd_mg *mg, int l, double complex *e, const double complex *r)
{
    mg_level *v = &mg->lv[l], *c = &mg->lv[l + 1];
    const wd_mg_settings *m = &mg->set;
    double complex *res = v->w[0], *de = v->w[1];
    wd_status st = WD_OK;
    if (m->pre_smooth) {
        smooth(mg, l, e, r, m->pre_smooth);
        wd_mg_op_apply(&v->op, res, e);
        vbminus(r, res, v->len);
    } else {
        vzero(e, v->len);
        vcopy(res, r, v->len);
    }
    wd_mg_restrict(&v->t, c->b, res);
    if ((st = coarse_solve(mg, l)) != WD_OK)
        return st;
    wd_mg_prolong(&v->t, de, c->x);
    vaxpy(1, de, e, v->len);
    if (m->post_smooth) {
        wd_mg_op_apply(&v->op, res, e);
        vbminus(r, res, v->len);
        smooth(mg, l, de, res, m->post_smooth);
        vaxpy(1, de, e, v->len);
    }
    return WD_OK;
}

/*
 * Flexible GCR(nkrylov) on A_l x = b from x's value, with the cycle of
 * level l as preconditioner (precondition) or none, to |b - A x| <= tol |b|
 * or max_iter iterations; after each restart and at the end the residual
 * is recomputed as b - A x.  Returns the iterations; *relres the last
 * relative residual; *st WD_OK, or WD_ERR_NAN / a cycle's failure.
 */
static int gcr(wd_mg *mg, int l, double complex *x, const double complex *b, double tol,
               int max_iter, int precondition, int verbose, double *relres, wd_status *st)
{
    mg_level *v = &mg->lv[l];
    const size_t n = v->len;
    const int nk = mg->set.gcr_nkrylov;
    const double bnorm = sqrt(wd_mg_norm2(b, n));
    *st = WD_OK;
    *relres = 0;
    if (bnorm == 0) {
        vzero(x, n);
        return 0;
    }
    wd_mg_op_apply(&v->op, v->r, x);
    vbminus(b, v->r, n);
    double rnorm = sqrt(wd_mg_norm2(v->r, n));
    int it = 0;
    while (rnorm > tol * bnorm && it < max_iter) {
        int k = 0;
        for (; k < nk && it < max_iter && rnorm > tol * bnorm; ++k, ++it) {
            if (precondition) {
                if ((*st = cycle(mg, l, v->z[k], v->r)) != WD_OK)
                    return it;
            } else {
                vcopy(v->z[k], v->r, n);
            }
            wd_mg_op_apply(&v->op, v->q[k], v->z[k]);
            for (int i = 0; i < k; ++i) {
                const double complex beta = wd_mg_dot(v->q[i], v->q[k], n);
                vaxpy(-beta, v->q[i], v->q[k], n);
                vaxpy(-beta, v->z[i], v->z[k], n);
            }
            const double qn = sqrt(wd_mg_norm2(v->q[k], n));
            if (!isfinite(qn)) {
                *st = wd_fail(WD_ERR_NAN, "multigrid: GCR on level %d met NaN or Inf after %d "
                              "iterations", l, it);
                return it;
            }
            if (qn == 0)
                break;
            for (size_t i = 0; i < n; ++i) {
                v->q[k][i] /= qn;
                v->z[k][i] /= qn;
            }
            const double complex alpha = wd_mg_dot(v->q[k], v->r, n);
            vaxpy(alpha, v->z[k], x, n);
            vaxpy(-alpha, v->q[k], v->r, n);
            rnorm = sqrt(wd_mg_norm2(v->r, n));
            if (verbose)
                fprintf(stderr, "wdirac multigrid: outer iteration %d: residual %.3e\n", it + 1,
                        rnorm / bnorm);
        }
        /* restart, or confirm convergence, on the recomputed residual */
        wd_mg_op_apply(&v->op, v->r, x);
        vbminus(b, v->r, n);
        rnorm = sqrt(wd_mg_norm2(v->r, n));
        if (k == 0)
            break;
    }
    v->iterations += it;
    *relres = rnorm / bnorm;
    return it;
}

/*
 * The outer flexible GCR(nk) on the fine level, on the backend: A x = b in
 * the outer precision from x = 0 (f->x, f->b), preconditioned by the
 * cycle, to |b - A x| <= tol |b| or max_iter iterations, the residual
 * recomputed as b - A x at each restart and at the end.  Returns the
 * iterations; *relres the last relative residual.
 */
static int gcr_fine(wd_mg *mg, double tol, int max_iter, int verbose, double *relres,
                    wd_status *st)
{
    wd_mg_fine *f = &mg->fine;
    wd_backend *be = f->be;
    const int nk = f->nk;
    const wd_complex one = {1, 0};
    const double bnorm = sqrt(wd_mg_pair_norm2(be, &f->b));
    *relres = 0;
    *st = WD_OK;
    wd_mg_pair_zero(be, &f->x);
    if (bnorm == 0)
        return 0;
    wd_mg_pair_copy(be, &f->r, &f->b);
    double rnorm = bnorm;
    int it = 0;
    while (rnorm > tol * bnorm && it < max_iter) {
        int k = 0;
        for (; k < nk && it < max_iter && rnorm > tol * bnorm; ++k, ++it) {
            if ((*st = cycle_fine(mg, &f->z[k], &f->r)) != WD_OK ||
                (*st = wd_mg_fine_apply(f, &f->q[k], &f->z[k])) != WD_OK)
                return it;
            for (int i = 0; i < k; ++i) {
                const wd_complex beta = wd_mg_pair_dot(be, &f->q[i], &f->q[k]);
                const wd_complex mb = {-beta.re, -beta.im};
                wd_mg_pair_caxpy(be, mb, &f->q[i], &f->q[k]);
                wd_mg_pair_caxpy(be, mb, &f->z[i], &f->z[k]);
            }
            const double qn = sqrt(wd_mg_pair_norm2(be, &f->q[k]));
            if (!isfinite(qn)) {
                *st = wd_fail(WD_ERR_NAN, "multigrid: the outer GCR met NaN or Inf after %d "
                              "iterations", it);
                return it;
            }
            if (qn == 0)
                break;
            wd_mg_pair_ax(be, 1 / qn, &f->q[k]);
            wd_mg_pair_ax(be, 1 / qn, &f->z[k]);
            const wd_complex alpha = wd_mg_pair_dot(be, &f->q[k], &f->r);
            wd_mg_pair_caxpy(be, alpha, &f->z[k], &f->x);
            wd_mg_pair_caxpy(be, (wd_complex){-alpha.re, -alpha.im}, &f->q[k], &f->r);
            rnorm = sqrt(wd_mg_pair_norm2(be, &f->r));
            if (verbose)
                fprintf(stderr, "wdirac multigrid: outer iteration %d: residual %.3e\n", it + 1,
                        rnorm / bnorm);
        }
        /* restart, or confirm convergence, on the recomputed residual */
        if ((*st = wd_mg_fine_apply(f, &f->r, &f->x)) != WD_OK)
            return it;
        wd_mg_pair_ax(be, -1, &f->r);
        wd_mg_pair_caxpy(be, one, &f->b, &f->r);
        rnorm = sqrt(wd_mg_pair_norm2(be, &f->r));
        if (k == 0)
            break;
    }
    if (be->error != WD_OK)
        *st = be->error;
    *relres = rnorm / bnorm;
    return it;
}

/* ---- the setup ---- */

/* |A v| / |A v_0| after CG on the normal equations of A v = 0 from v
 * (w[0..3] scratch); *iters the iterations */
static double relax(wd_mg *mg, int l, double complex *v, double tol, int max_iter, int *iters)
{
    mg_level *lv = &mg->lv[l];
    const size_t n = lv->len;
    double complex *r = lv->w[0], *z = lv->w[1], *p = lv->w[2], *q = lv->w[3];
    /* r = -A v; z = A^dag r = g5 A g5 r */
    wd_mg_op_apply(&lv->op, r, v);
    for (size_t i = 0; i < n; ++i)
        r[i] = -r[i];
    const double r0 = sqrt(wd_mg_norm2(r, n));
    double rn = r0;
    wd_mg_g5(&lv->op, q, r);
    wd_mg_op_apply(&lv->op, z, q);
    wd_mg_g5(&lv->op, z, z);
    vcopy(p, z, n);
    double zz = wd_mg_norm2(z, n);
    int it = 0;
    for (; it < max_iter && rn > tol * r0 && zz > 0; ++it) {
        wd_mg_op_apply(&lv->op, q, p);
        const double alpha = zz / wd_mg_norm2(q, n);
        vaxpy(alpha, p, v, n);
        vaxpy(-alpha, q, r, n);
        rn = sqrt(wd_mg_norm2(r, n));
        wd_mg_g5(&lv->op, q, r);
        wd_mg_op_apply(&lv->op, z, q);
        wd_mg_g5(&lv->op, z, z);
        const double zz1 = wd_mg_norm2(z, n);
        const double beta = zz1 / zz;
        zz = zz1;
#pragma omp parallel for schedule(static) if (n >= WD_MG_PARALLEL_MIN)
        for (size_t i = 0; i < n; ++i)
            p[i] = z[i] + beta * p[i];
    }
    *iters = it;
    return r0 > 0 ? rn / r0 : 0;
}

/* max |P^dag P - 1| over aggregates and chiralities */
static double orth_error(const wd_mg_transfer *t)
{
    const int h = t->n_fine / 2, bv = t->block_volume, nv = t->nvec;
    double worst = 0;
#pragma omp parallel for schedule(static) reduction(max : worst)
    for (size_t b = 0; b < t->coarse_volume; ++b)
        for (int chi = 0; chi < 2; ++chi)
            for (int i = 0; i < nv; ++i)
                for (int j = 0; j <= i; ++j) {
                    double complex g = 0;
                    for (int s = 0; s < bv; ++s) {
                        const size_t site = (size_t)t->sites[b * bv + s];
                        const double complex *vi = t->v + (site * nv + i) * t->n_fine + chi * h;
                        const double complex *vj = t->v + (site * nv + j) * t->n_fine + chi * h;
                        for (int a = 0; a < h; ++a)
                            g += conj(vi[a]) * vj[a];
                    }
                    const double e = cabs(g - (i == j));
                    if (e > worst)
                        worst = e;
                }
    return worst;
}

/* |D_c v - P^dag A P v| / |D_c v| on a random coarse v (level l's scratch) */
static double coarse_error(wd_mg *mg, int l, wd_rng *rng)
{
    mg_level *f = &mg->lv[l], *c = &mg->lv[l + 1];
    for (size_t i = 0; i < c->len; ++i)
        c->b[i] = CMPLX(wd_rng_normal(rng), wd_rng_normal(rng));
    wd_mg_prolong(&f->t, f->w[0], c->b);
    wd_mg_op_apply(&f->op, f->w[1], f->w[0]);
    wd_mg_restrict(&f->t, c->x, f->w[1]);
    wd_mg_op_apply(&c->op, c->w[0], c->b);
    const double ref = wd_mg_norm2(c->w[0], c->len);
    vaxpy(-1, c->x, c->w[0], c->len);
    return ref > 0 ? sqrt(wd_mg_norm2(c->w[0], c->len) / ref) : 0;
}

/* flops of one application of a level's operator per site */
static double apply_flops(const wd_mg_op *op)
{
    return op->u ? 1368.0 + (op->clover ? 504.0 : 0.0) : 9.0 * 8.0 * op->n * op->n;
}

/* A setup's file: the vectors read (load) or written (save) level by level */
typedef struct mg_files {
    FILE *in;
    wd_file_temp out;
    int saving;
    unsigned long in_sum, out_sum;
} mg_files;

static wd_status setup_levels(wd_mg *mg, const wd_mg_settings *m, wd_mg_setup_stats *stats,
                              mg_files *io)
{
    wd_status st = WD_OK;
    const double fine_cost = apply_flops(&mg->lv[0].op) * mg->lv[0].op.volume;
    for (int l = 0; l + 1 < m->levels && st == WD_OK; ++l) {
        mg_level *f = &mg->lv[l];
        const double cost = apply_flops(&f->op) * f->op.volume / fine_cost;
        if ((st = wd_mg_transfer_init(&f->t, l, f->op.dims, f->op.n, m->block[l], m->nvec[l])) !=
            WD_OK)
            break;
        wd_rng rng;
        wd_rng_seed(&rng, m->seed * 1000003u + (uint64_t)l);
        double t_step = now_s(), t_vectors, t_orth, t_build;
        double worst = 0;
        int unconverged = 0;
        const size_t vbytes = (size_t)m->nvec[l] * f->len * sizeof *f->t.v;
        if (io->in && (st = wd_mg_file_io(io->in, 0, f->t.v, vbytes, &io->in_sum, m->load)) != WD_OK)
            break;
        for (int k = 0; !io->in && k < m->nvec[l]; ++k) {
            /* relaxed in a field of its own (the fine level's w[1] is free
             * until the coarse error below; a coarse level's x, where
             * relax's scratch is w), then stored site-major */
            double complex *v = l ? f->x : f->w[1];
            for (size_t i = 0; i < f->len; ++i)
                v[i] = CMPLX(wd_rng_normal(&rng), wd_rng_normal(&rng));
            int its;
            double res;
            if (l == 0) {
                /* on the backend, the even-odd system in the sloppy precision */
                if ((st = wd_mg_fine_nullvec(&mg->fine, v, m->setup_tol, m->setup_max_iter, &res,
                                             &its)) != WD_OK)
                    return st;
                stats->fine_applies += 2.5 + 2.0 * its;
            } else {
                res = relax(mg, l, v, m->setup_tol, m->setup_max_iter, &its);
                stats->fine_applies += cost * (3.0 + 2.0 * its);
            }
            wd_mg_vector_set(&f->t, k, v);
            if (res > worst)
                worst = res;
            unconverged += res > m->setup_tol;
            if (m->verbosity >= 2)
                fprintf(stderr, "wdirac multigrid: level %d null vector %d: %d iterations, "
                        "|A v| / |A v0| = %.3e\n", l, k, its, res);
        }
        stats->setup_residual[l] = worst;
        stats->setup_unconverged[l] = unconverged;
        if (io->saving &&
            (st = wd_mg_file_io(io->out.f, 1, f->t.v, vbytes, &io->out_sum, m->save)) != WD_OK)
            break;
        t_vectors = now_s() - t_step;
        t_step = now_s();
        if ((st = wd_mg_orthonormalise(&f->t, l)) != WD_OK)
            break;
        t_orth = now_s() - t_step;
        t_step = now_s();
        if ((st = wd_mg_coarse_build(&mg->lv[l + 1].op, &f->op, &f->t)) != WD_OK)
            break;
        t_build = now_s() - t_step;
        t_step = now_s();
        stats->fine_applies += cost * 2.0 * m->nvec[l];
        if ((st = level_alloc(mg, l + 1)) != WD_OK)
            break;
        memcpy(stats->coarse_dims[l + 1], mg->lv[l + 1].op.dims, sizeof stats->coarse_dims[0]);
        stats->orth_error[l] = orth_error(&f->t);
        stats->coarse_error[l] = coarse_error(mg, l, &rng);
        if (m->verbosity >= 1)
            fprintf(stderr, "wdirac multigrid: level %d setup: null vectors %.3f s (%s), "
                    "orthonormalisation %.3f s, coarse operator %.3f s, diagnostics %.3f s\n", l,
                    t_vectors, io->in ? "read" : l ? "relaxed on the host" : "relaxed on the backend",
                    t_orth, t_build, now_s() - t_step);
        if (m->verbosity >= 1) {
            const int *cd = mg->lv[l + 1].op.dims;
            fprintf(stderr, "wdirac multigrid: level %d -> %d: coarse %dx%dx%dx%d, %d unknowns a "
                    "site; null vectors |A v| / |A v0| <= %.3e (%d of %d above setup_tol %.1e%s); "
                    "||P^dag P - 1|| = %.2e; ||D_c v - P^dag A P v|| / ||D_c v|| = %.2e\n",
                    l, l + 1, cd[0], cd[1], cd[2], cd[3], mg->lv[l + 1].op.n, worst, unconverged,
                    m->nvec[l], m->setup_tol,
                    io->in ? ": read from the file"
                           : unconverged ? ": the setup did not reach its tolerance" : "",
                    stats->orth_error[l], stats->coarse_error[l]);
        }
    }
    return st;
}

static wd_status mg_solve(void *state, double *x, const double *b, const wd_solver_settings *s,
                          wd_solver_stats *stats);

wd_status wd_solver_mg_setup(wd_solver *sv, const wd_mg_settings *m, const wd_solver_settings *s,
                             wd_mg_setup_stats *stats)
{
    const double t0 = now_s();
    if (!sv || !m || !s)
        return wd_fail(WD_ERR_INVALID, "wd_solver_mg_setup: solver, multigrid settings and "
                       "settings must not be NULL");
    wd_mg_setup_stats local;
    if (!stats)
        stats = &local;
    memset(stats, 0, sizeof *stats);
    wd_status st = check_mg_settings(m);
    wd_solver_host h;
    if (st == WD_OK && (st = wd_solver_host_view(sv, s, &h)) == WD_OK && h.grid->size > 1)
        st = wd_fail(WD_ERR_INVALID, "wd_solver_mg_setup: the multigrid runs on one process in "
                     "this version (the grid has %d ranks)", h.grid->size);
    /* every level's checks before anything is built */
    int dims[4], n = 12;
    memcpy(dims, h.dims, sizeof dims);
    for (int l = 0; st == WD_OK && l + 1 < m->levels; ++l) {
        int coarse[4];
        if ((st = wd_mg_transfer_check(l, dims, n, m->block[l], m->nvec[l], coarse)) != WD_OK)
            break;
        memcpy(dims, coarse, sizeof dims);
        n = 2 * m->nvec[l];
    }
    /* the files before anything is built: a wrong file or an unwritable
     * path costs no setup */
    mg_files io;
    memset(&io, 0, sizeof io);
    if (st == WD_OK && m->load)
        st = wd_mg_file_open(&io.in, m->load, m, h.dims);
    if (st == WD_OK && m->save) {
        if ((st = wd_mg_file_create(&io.out, m->save, m->save_overwrite, m, h.dims)) == WD_OK)
            io.saving = 1;
    }
    wd_mg *mg = st == WD_OK ? calloc(1, sizeof *mg) : NULL;
    if (st == WD_OK && !mg)
        st = wd_fail(WD_ERR_NOMEM, "wd_solver_mg_setup: cannot allocate the multigrid");
    if (st == WD_OK) {
        mg->set = *m;
        mg->set.save = mg->set.load = NULL;   /* borrowed strings: not kept */
        mg->levels = m->levels;
        mg->mass = s->mass;
        mg->csw = s->csw;
        const double kappa = 0.5 / (4.0 + s->mass);
        st = wd_mg_fine_init(&mg->fine, &h, kappa, m->gcr_nkrylov);
        if (st == WD_OK)
            st = wd_mg_op_fine(&mg->lv[0].op, h.dims, h.gauge, h.clover, kappa, s->tbc);
        if (st == WD_OK)
            st = level_alloc(mg, 0);
        memcpy(stats->coarse_dims[0], h.dims, sizeof stats->coarse_dims[0]);
        if (st == WD_OK)
            st = setup_levels(mg, m, stats, &io);
    }
    if (io.in)
        st = wd_mg_file_finish(io.in, NULL, io.in_sum, st, m->load);
    if (io.saving)
        st = wd_mg_file_finish(NULL, &io.out, io.out_sum, st, m->save);
    if (st != WD_OK) {
        mg_free(mg);
        return st;
    }
    stats->levels = m->levels;
    stats->seconds = now_s() - t0;
    if (m->verbosity >= 1)
        fprintf(stderr, "wdirac multigrid: setup of %d levels in %.3f s (%.1f fine-operator "
                "applications)\n", m->levels, stats->seconds, stats->fine_applies);
    const wd_solver_mg_hook hook = {mg, mg_solve, mg_free};
    wd_solver_attach_mg(sv, &hook);
    return WD_OK;
}

static wd_status mg_solve(void *state, double *x, const double *b, const wd_solver_settings *s,
                          wd_solver_stats *stats)
{
    wd_mg *mg = state;
    const double t0 = now_s();
    if (s->mass != mg->mass || s->csw != mg->csw)
        return wd_fail(WD_ERR_INVALID, "solver WD_SOLVER_MG: the multigrid was set up for mass "
                       "%g, c_sw %g, not %g, %g; call wd_solver_mg_setup again", mg->mass, mg->csw,
                       s->mass, s->csw);
    if (s->tbc != mg->lv[0].op.tbc)
        return wd_fail(WD_ERR_INVALID, "solver WD_SOLVER_MG: the multigrid was set up for time "
                       "boundary %d, not %d", mg->lv[0].op.tbc, (int)s->tbc);
    wd_mg_fine *f = &mg->fine;
    const size_t n = mg->lv[0].len;
    const double scale = 1.0 / (4.0 + s->mass);
    const double complex *bc = (const double complex *)b;
    double complex *host = (double complex *)f->host;
    for (size_t i = 0; i < n; ++i)
        host[i] = scale * bc[i];
    for (int l = 0; l < mg->levels; ++l)
        mg->lv[l].iterations = 0;
    mg->t_move = mg->t_transfer = mg->t_coarse = 0;
    wd_status st = wd_mg_fine_from_host(f, &f->b, host);
    if (st != WD_OK)
        return st;
    double rel;
    const int it = gcr_fine(mg, s->tol, s->max_iter, mg->set.verbosity >= 2 || s->verbosity >= 3,
                            &rel, &st);
    const wd_status xst = wd_mg_fine_to_host(f, (double complex *)x, &f->x);
    if (xst != WD_OK)
        return xst;
    if (mg->set.verbosity >= 1) {
        const double total = now_s() - t0;
        fprintf(stderr, "wdirac multigrid: solve %.3f s: the fine level on the backend %.3f s, "
                "fields to and from the host %.3f s, P and P^dag on the host %.3f s, the coarse "
                "levels on the host %.3f s\n", total,
                total - mg->t_move - mg->t_transfer - mg->t_coarse, mg->t_move, mg->t_transfer,
                mg->t_coarse);
    }
    stats->iterations = it;
    stats->sloppy_iterations = it;
    stats->updates = 0;
    stats->solver_residual = rel;
    stats->seconds = stats->solve_seconds = now_s() - t0;
    /* the backend's fields (the fine level and the solver's); the host
     * fields of the transfers and coarse levels are not counted, nor are
     * flops (the coarse levels' host arithmetic has no counter yet) */
    stats->bytes_allocated = f->be->bytes_peak > f->be->bytes_allocated ? f->be->bytes_peak
                                                                        : f->be->bytes_allocated;
    stats->mg_levels = mg->levels;
    for (int l = 0; l < mg->levels; ++l)
        stats->mg_iterations[l] = (int)mg->lv[l].iterations;
    if (st != WD_OK)
        return st;
    if (rel > s->tol)
        return wd_fail(WD_ERR_MAX_ITER, "solver WD_SOLVER_MG: %d outer iterations reached "
                       "max_iter with residual %.3e above tol %.3e", it, rel, s->tol);
    return WD_OK;
}
