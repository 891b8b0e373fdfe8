/*
 * mg_fine.c: the fine multigrid level on a solver's backend (wd_mg.h): the
 * operator A = M / (4+m) on full fields held as even and odd backend
 * fields, the even-odd smoother, the null-vector relaxation and the moves
 * of a fine field to and from the host transfers.
 *
 * The externally accessible functions are
 *   wd_mg_fine_init / _free   the checks, the setup's fields and the Schur
 *                             operator on the solver's backend
 *   wd_mg_fine_solver         the outer GCR's fields and operators (after the
 *                             setup)
 *   wd_mg_fine_solver_release those fields released, the operators kept (a
 *                             refinement's rebuild)
 *   wd_mg_fine_apply          out = A in in the outer precision
 *   wd_mg_fine_apply_k        out = A in in the Krylov precision (single)
 *   wd_mg_fine_smooth         e ~ A^-1 r: MR or CA-GCR steps on the Schur
 *                             complement in the sloppy precision, the odd
 *                             sites reconstructed
 *   wd_mg_fine_smooth_eo      the same steps on the Schur system itself
 *   wd_mg_fine_eo_source / _odd / _apply   outer_eo: the Schur source of
 *                             b, x_o from x_e, Mhat in the outer or the
 *                             Krylov precision
 *   wd_mg_ca_gcr_coeffs       CA-GCR's least squares (every level's)
 *   wd_mg_fine_nullvec        relax a random start on A v = 0 (CG on the
 *                             normal equations of the Schur operator, sloppy
 *                             precision, odd sites from A v = 0), into the host
 *                             or the backend's memory
 *   wd_mg_fine_to_host / _from_host   a full field to and from host order
 *   wd_mg_pair_*              the BLAS of full fields (deterministic: the
 *                             backend's reductions, even part first); the
 *                             multi ones read y once a piece of WD_BLAS_MULTI
 * Notes: with a clover term the operator is A_clover - kappa D with the
 * solver's Schur form for the smoother (symmetric: A^-1 on both parities;
 * asymmetric: A_ee and A^-1_oo) and A itself uploaded here for the full
 * operator, in the outer precision and in the Krylov one (single); with
 * outer_eo the Schur operator of the same form in those two precisions
 * too (A^-1 made here in a precision the solver has none in).  The
 * solver must not be gauge-fixed
 * (the host transfers work on the caller's links).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clover_field.h"
#include "wd_core.h"
#include "wd_mg.h"
#include "wd_operator.h"

static wd_status pair_create(wd_backend *be, wd_mg_pair *p, int precision)
{
    wd_status st = wd_field_create(be, &p->e, precision);
    if (st == WD_OK)
        st = wd_field_create(be, &p->o, precision);
    return st;
}

static void pair_destroy(wd_backend *be, wd_mg_pair *p)
{
    wd_field_destroy(be, &p->e);
    wd_field_destroy(be, &p->o);
}

/* A in `precision`: its variants (the links of that precision are the
 * solver's, or a copy of its own with the outer reconstruction) */
static wd_status op_check(wd_mg_fine *f, wd_mg_fine_op *op, const wd_solver_host *h,
                          int precision)
{
    op->precision = precision;
    /* as op_create picks the links */
    const int recon = precision != h->g_outer->precision &&
                              precision == h->g_sloppy->precision
                          ? h->g_sloppy->recon
                          : h->g_outer->recon;
    op->xpay = wd_variant_find_axes(precision, recon, 0, 0, 1);
    if (op->xpay < 0)
        return wd_fail(WD_ERR_NOT_BUILT, "multigrid: the Dslash variant of precision %d, "
                       "reconstruction %d, xpay is not in this build", precision, recon);
    op->cl_site = f->clover ? wd_variant_find_op(WD_OP_CLOVER, precision, 0, 0, 0, 0) : 0;
    if (op->cl_site < 0)
        return wd_fail(WD_ERR_NOT_BUILT, "multigrid: the clover kernel of precision %d is not "
                       "in this build", precision);
    return WD_OK;
}

/* the checked operator's links, clover A and scratch on the backend */
static wd_status op_create(wd_mg_fine *f, wd_mg_fine_op *op, const wd_solver_host *h)
{
    wd_backend *be = f->be;
    wd_status st = WD_OK;
    if (op->g)
        return WD_OK;       /* made by an earlier wd_mg_fine_solver */
    const int precision = op->precision;
    if (precision == h->g_outer->precision)
        op->g = h->g_outer;
    else if (precision == h->g_sloppy->precision)
        op->g = h->g_sloppy;
    else if ((st = wd_gauge_create(be, &op->gown, h->gauge, precision, h->g_outer->recon, 0,
                                   h->g_outer->tbc)) == WD_OK)
        op->g = &op->gown;
    if (st != WD_OK || !f->clover)
        return st;
    if ((st = pair_create(be, &op->t, precision)) != WD_OK)
        return st;
    return wd_clover_create(be, &op->a, h->clover, precision);
}

static void op_free(wd_backend *be, wd_mg_fine_op *op)
{
    pair_destroy(be, &op->t);
    wd_clover_destroy(be, &op->a);
    if (op->g == &op->gown)
        wd_gauge_destroy(be, &op->gown);
    memset(op, 0, sizeof *op);
}

wd_status wd_mg_fine_init(wd_mg_fine *f, const wd_solver_host *h, double kappa, int nkrylov,
                          wd_mg_smoother smoother, int steps)
{
    memset(f, 0, sizeof *f);
    if (h->gauge_fixed)
        return wd_fail(WD_ERR_INVALID, "multigrid: the solver fixes the temporal gauge on a "
                       "level; create it with gauge_fix 0 and sloppy_gauge_fix 0 for WD_SOLVER_MG");
    wd_backend *be = f->be = h->be;
    f->kappa = kappa;
    f->clover = h->clover != NULL;
    f->nk = nkrylov;
    const int po = h->g_outer->precision, ps = h->g_sloppy->precision;
    /* the Krylov space in single (the outer precision when that is lower):
     * half the bytes of double, and a half sloppy precision keeps it */
    f->kp = po < 4 ? po : 4;
    wd_status st = op_check(f, &f->outer, h, po);
    if (st == WD_OK)
        st = op_check(f, &f->krylov, h, f->kp);
    if (st != WD_OK)
        return st;
    f->z = calloc((size_t)nkrylov, sizeof *f->z);
    f->q = calloc((size_t)nkrylov, sizeof *f->q);
    f->dots = calloc((size_t)nkrylov, sizeof *f->dots);
    if (!f->z || !f->q || !f->dots)
        return wd_fail(WD_ERR_NOMEM, "multigrid: cannot allocate the fine level's bookkeeping");
    if (st == WD_OK)
        st = pair_create(be, &f->rs, ps);
    if (st == WD_OK)
        st = pair_create(be, &f->es, ps);
    wd_field *sloppy[] = {&f->h, &f->qs, &f->ps, &f->zs, &f->tmp_s, &f->tmp_se};
    for (size_t i = 0; i < sizeof sloppy / sizeof *sloppy && st == WD_OK; ++i)
        st = wd_field_create(be, sloppy[i], ps);
    f->smoother = smoother;
    if (st == WD_OK && smoother == WD_MG_SMOOTHER_CA_GCR) {
        if (!(f->pb = calloc((size_t)steps, sizeof *f->pb)))
            return wd_fail(WD_ERR_NOMEM, "multigrid: cannot allocate the smoother's basis");
        for (; f->nbasis < steps && st == WD_OK; ++f->nbasis)
            st = wd_field_create(be, &f->pb[f->nbasis], ps);
    }
    if (st != WD_OK)
        return st;
    if ((st = wd_eo_op_init(&f->op, be, h->g_sloppy, kappa, &f->tmp_s, 1)) != WD_OK)
        return st;
    if (f->clover && (st = wd_eo_op_clover(&f->op, h->a_sloppy, h->ainv_sloppy, h->symmetric,
                                           &f->tmp_se, 1)) != WD_OK)
        return st;
    return WD_OK;
}

/* outer_eo: the Schur operator of fop's precision and links in op's form
 * (f->op's), A^-1 the solver's where it holds that precision, else made
 * here (*own) from the host blocks */
static wd_status eo_op_create(wd_mg_fine *f, const wd_solver_host *h, wd_eo_op *op,
                              wd_mg_fine_op *fop, wd_clover *own, wd_field *to, wd_field *te)
{
    wd_backend *be = f->be;
    wd_status st = wd_eo_op_init(op, be, fop->g, f->kappa, to, 0);
    if (st != WD_OK || !f->clover)
        return st;
    const wd_clover *ainv = fop->precision == h->ainv_outer->precision    ? h->ainv_outer
                            : fop->precision == h->ainv_sloppy->precision ? h->ainv_sloppy
                                                                          : NULL;
    if (!ainv) {
        const size_t n = wd_volume(be->dims) * WD_CLOVER_SITE_REALS;
        double *inv = malloc(n * sizeof *inv);
        if (!inv)
            return wd_fail(WD_ERR_NOMEM, "multigrid: cannot allocate the clover field's inverse");
        if ((st = wd_clover_invert(inv, h->clover, wd_volume(be->dims), h->grid)) == WD_OK)
            st = wd_clover_create(be, own, inv, fop->precision);
        free(inv);
        if (st != WD_OK)
            return st;
        ainv = own;
    }
    return wd_eo_op_clover(op, f->op.symmetric ? NULL : &fop->a, ainv, f->op.symmetric, te, 0);
}

/* outer_eo: the single-parity fields and the two Schur operators */
static wd_status eo_solver(wd_mg_fine *f, const wd_solver_host *h)
{
    wd_backend *be = f->be;
    wd_status st = WD_OK;
    f->ze = calloc((size_t)f->nk, sizeof *f->ze);
    f->qe = calloc((size_t)f->nk, sizeof *f->qe);
    if (!f->ze || !f->qe)
        return wd_fail(WD_ERR_NOMEM, "multigrid: cannot allocate the fine level's bookkeeping");
    wd_field *outer[] = {&f->xe, &f->bhat, &f->re, &f->to, &f->te};
    for (size_t i = 0; i < sizeof outer / sizeof *outer && st == WD_OK; ++i)
        st = wd_field_create(be, outer[i], f->outer.precision);
    wd_field *krylov[] = {&f->rke, &f->xke, &f->ue, &f->we, &f->zo, &f->tko, &f->tke};
    for (size_t i = 0; i < sizeof krylov / sizeof *krylov && st == WD_OK; ++i)
        st = wd_field_create(be, krylov[i], f->kp);
    for (int k = 0; k < f->nk && st == WD_OK; ++k)
        if ((st = wd_field_create(be, &f->ze[k], f->kp)) == WD_OK)
            st = wd_field_create(be, &f->qe[k], f->kp);
    if (st == WD_OK)
        wd_blas_zero(be, &f->zo);
    if (st == WD_OK)
        st = eo_op_create(f, h, &f->eo_outer, &f->outer, &f->ainv_own[0], &f->to, &f->te);
    if (st == WD_OK)
        st = eo_op_create(f, h, &f->eo_krylov, &f->krylov, &f->ainv_own[1], &f->tko, &f->tke);
    return st;
}

wd_status wd_mg_fine_solver(wd_mg_fine *f, const wd_solver_host *h)
{
    wd_backend *be = f->be;
    wd_status st = op_create(f, &f->outer, h);
    if (st == WD_OK)
        st = op_create(f, &f->krylov, h);
    wd_mg_pair *outer[] = {&f->x, &f->b, &f->r};
    for (size_t i = 0; i < sizeof outer / sizeof *outer && st == WD_OK; ++i)
        st = pair_create(be, outer[i], f->outer.precision);
    /* the full system's Krylov fields, or the Schur system's */
    if (st == WD_OK && f->outer_eo)
        st = eo_solver(f, h);
    wd_mg_pair *krylov[] = {&f->rk, &f->xk, &f->u};
    for (size_t i = 0; i < sizeof krylov / sizeof *krylov && st == WD_OK && !f->outer_eo; ++i)
        st = pair_create(be, krylov[i], f->kp);
    for (int k = 0; k < f->nk && st == WD_OK && !f->outer_eo; ++k)
        if ((st = pair_create(be, &f->z[k], f->kp)) == WD_OK)
            st = pair_create(be, &f->q[k], f->kp);
    /* the solves' host transfers made ready here (a GPU backend's staging
     * buffers are made by its first host transfer, which a setup that
     * keeps its vectors on the GPU no longer makes): x, zeroed, downloaded
     * once, and uploaded into b and scaled, as a solve's source is */
    double *host = st == WD_OK ? calloc(wd_volume(be->dims) * 24, sizeof *host) : NULL;
    if (st == WD_OK && !host)
        st = wd_fail(WD_ERR_NOMEM, "multigrid: cannot allocate a host field");
    if (st == WD_OK) {
        wd_blas_zero(be, &f->x.e);
        wd_blas_zero(be, &f->x.o);
        st = wd_download_pair(be, host, &f->x.e, &f->x.o, 0, NULL);
    }
    if (st == WD_OK && (st = wd_upload_pair(be, &f->b.e, &f->b.o, host, 0, NULL)) == WD_OK)
        wd_mg_pair_ax(be, 1.0, &f->b);
    free(host);
    return st;
}

void wd_mg_fine_solver_release(wd_mg_fine *f)
{
    wd_backend *be = f->be;
    if (!be)
        return;
    wd_mg_pair *pairs[] = {&f->x, &f->b, &f->r, &f->rk, &f->xk, &f->u};
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; ++i)
        pair_destroy(be, pairs[i]);
    for (int k = 0; k < f->nk; ++k) {
        if (f->z)
            pair_destroy(be, &f->z[k]);
        if (f->q)
            pair_destroy(be, &f->q[k]);
        if (f->ze)
            wd_field_destroy(be, &f->ze[k]);
        if (f->qe)
            wd_field_destroy(be, &f->qe[k]);
    }
    wd_field *fields[] = {&f->xe, &f->bhat, &f->re, &f->to, &f->te, &f->rke,
                          &f->xke, &f->ue, &f->we, &f->zo, &f->tko, &f->tke};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; ++i)
        wd_field_destroy(be, fields[i]);
    free(f->ze);
    free(f->qe);
    f->ze = f->qe = NULL;
    wd_clover_destroy(be, &f->ainv_own[0]);
    wd_clover_destroy(be, &f->ainv_own[1]);
}

void wd_mg_fine_free(wd_mg_fine *f)
{
    wd_backend *be = f->be;
    if (!be)
        return;
    wd_mg_fine_solver_release(f);
    pair_destroy(be, &f->rs);
    pair_destroy(be, &f->es);
    wd_field *fields[] = {&f->h, &f->qs, &f->ps, &f->zs, &f->tmp_s, &f->tmp_se};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; ++i)
        wd_field_destroy(be, fields[i]);
    for (int i = 0; i < f->nbasis; ++i)
        wd_field_destroy(be, &f->pb[i]);
    free(f->pb);
    op_free(be, &f->outer);
    op_free(be, &f->krylov);
    free(f->z);
    free(f->q);
    free(f->dots);
    memset(f, 0, sizeof *f);
}

/* ---- full fields ---- */

wd_complex wd_mg_pair_dot(wd_backend *be, const wd_mg_pair *x, const wd_mg_pair *y)
{
    const wd_complex e = wd_blas_cdot(be, &x->e, &y->e), o = wd_blas_cdot(be, &x->o, &y->o);
    return (wd_complex){e.re + o.re, e.im + o.im};
}

double wd_mg_pair_norm2(wd_backend *be, const wd_mg_pair *x)
{
    const double e = wd_blas_norm2(be, &x->e);
    return e + wd_blas_norm2(be, &x->o);
}

void wd_mg_pair_caxpy(wd_backend *be, wd_complex a, const wd_mg_pair *x, wd_mg_pair *y)
{
    wd_blas_caxpy(be, a, &x->e, &y->e);
    wd_blas_caxpy(be, a, &x->o, &y->o);
}

/* the even (o = 0) or odd (o = 1) fields of the m pairs x[i] */
static void parity_fields(int m, const wd_mg_pair *x, int o, const wd_field **f)
{
    for (int i = 0; i < m; ++i)
        f[i] = o ? &x[i].o : &x[i].e;
}

void wd_mg_pair_multi_cdot(wd_backend *be, int k, const wd_mg_pair *x, const wd_mg_pair *y,
                           wd_complex *res)
{
    for (int i0 = 0; i0 < k; i0 += WD_BLAS_MULTI) {
        const int m = k - i0 < WD_BLAS_MULTI ? k - i0 : WD_BLAS_MULTI;
        const wd_field *f[WD_BLAS_MULTI];
        double d[2][2 * WD_BLAS_MULTI];
        for (int o = 0; o < 2; ++o) {
            parity_fields(m, x + i0, o, f);
            wd_blas_multi_cdot(be, m, f, o ? &y->o : &y->e, d[o]);
        }
        for (int i = 0; i < m; ++i)
            res[i0 + i] = (wd_complex){d[0][2 * i] + d[1][2 * i], d[0][2 * i + 1] + d[1][2 * i + 1]};
    }
}

void wd_mg_pair_multi_caxpy(wd_backend *be, int k, const wd_complex *a, const wd_mg_pair *x,
                            wd_mg_pair *y)
{
    for (int i0 = 0; i0 < k; i0 += WD_BLAS_MULTI) {
        const int m = k - i0 < WD_BLAS_MULTI ? k - i0 : WD_BLAS_MULTI;
        const wd_field *f[WD_BLAS_MULTI];
        for (int o = 0; o < 2; ++o) {
            parity_fields(m, x + i0, o, f);
            wd_blas_multi_caxpy(be, m, a + i0, f, o ? &y->o : &y->e);
        }
    }
}

void wd_mg_pair_copy(wd_backend *be, wd_mg_pair *y, const wd_mg_pair *x)
{
    wd_blas_copy(be, &y->e, &x->e);
    wd_blas_copy(be, &y->o, &x->o);
}

void wd_mg_pair_zero(wd_backend *be, wd_mg_pair *y)
{
    wd_blas_zero(be, &y->e);
    wd_blas_zero(be, &y->o);
}

void wd_mg_pair_ax(wd_backend *be, double a, wd_mg_pair *x)
{
    wd_blas_ax(be, a, &x->e);
    wd_blas_ax(be, a, &x->o);
}

static wd_status op_apply(wd_mg_fine *f, wd_mg_fine_op *op, wd_mg_pair *out,
                          const wd_mg_pair *in)
{
    wd_backend *be = f->be;
    wd_status st = WD_OK;
    for (int p = 0; p < 2 && st == WD_OK; ++p) {
        wd_field *o = p ? &out->o : &out->e;
        const wd_field *self = p ? &in->o : &in->e, *other = p ? &in->e : &in->o;
        const wd_field *x = self;
        if (f->clover) {
            /* t = A in_p, then out_p = t - kappa D in_p' */
            wd_field *t = p ? &op->t.o : &op->t.e;
            if ((st = wd_dslash_clover(be, op->cl_site, t, NULL, &op->a, self, NULL, 0, p)) !=
                WD_OK)
                break;
            x = t;
        }
        st = wd_dslash(be, op->xpay, o, op->g, other, x, -f->kappa, p);
    }
    return st == WD_OK ? be->error : st;
}

wd_status wd_mg_fine_apply(wd_mg_fine *f, wd_mg_pair *out, const wd_mg_pair *in)
{
    return op_apply(f, &f->outer, out, in);
}

wd_status wd_mg_fine_apply_k(wd_mg_fine *f, wd_mg_pair *out, const wd_mg_pair *in)
{
    return op_apply(f, &f->krylov, out, in);
}

/* out = the even source of op's Schur system for A e = r (re, ro):
 * r_e + kappa D_eo (A_oo^-1) r_o, then A_ee^-1 of it in the symmetric
 * form (to odd, te even scratch of op's precision) */
static wd_status eo_source(wd_backend *be, const wd_eo_op *op, wd_field *out, const wd_field *re,
                           const wd_field *ro, wd_field *to, wd_field *te)
{
    wd_status st;
    if (op->ainv) {
        if ((st = wd_dslash_clover(be, op->cl_site, to, NULL, op->ainv, ro, NULL, 0, 1)) != WD_OK)
            return st;
        ro = to;
    }
    wd_field *dst = op->ainv && op->symmetric ? te : out;
    if ((st = wd_dslash(be, op->xpay[0], dst, op->g, ro, re, op->kappa, 0)) != WD_OK)
        return st;
    if (op->ainv && op->symmetric)
        return wd_dslash_clover(be, op->cl_site, out, NULL, op->ainv, te, NULL, 0, 0);
    return WD_OK;
}

/* eo = A_oo^-1 (r_o + kappa D_oe e_e) (to odd scratch) */
static wd_status eo_odd(wd_backend *be, const wd_eo_op *op, wd_field *eo, const wd_field *ee,
                        const wd_field *ro, wd_field *to)
{
    wd_status st;
    if (!op->ainv)
        return wd_dslash(be, op->xpay[0], eo, op->g, ee, ro, op->kappa, 1);
    if ((st = wd_dslash_clover(be, op->cl_site, to, NULL, op->ainv, ro, NULL, 0, 1)) != WD_OK)
        return st;
    return wd_dslash_clover(be, op->cl_xpay[0], eo, op->g, op->ainv, ee, to, op->kappa, 1);
}

/* e_e: even source of the Schur system for A e = r (r in f->rs) into f->h */
static wd_status schur_source(wd_mg_fine *f)
{
    return eo_source(f->be, &f->op, &f->h, &f->rs.e, &f->rs.o, &f->tmp_s, &f->qs);
}

/* e_o from e_e (f->es.e) and r_o (f->rs.o): A_oo^-1 (r_o + kappa D_oe e_e) */
static wd_status schur_odd(wd_mg_fine *f, wd_field *eo, const wd_field *ro)
{
    return eo_odd(f->be, &f->op, eo, &f->es.e, ro, &f->tmp_s);
}

int wd_mg_ca_gcr_coeffs(int s, const wd_complex *gram, wd_complex *a)
{
    enum { MAX = WD_MG_MAX_SMOOTH };
    const int ld = s + 1;
    /* G_ij = <A p_i, A p_j> = <p_{i+1}, p_{j+1}>, c_i = <A p_i, r> = <p_{i+1}, p_0>;
     * G = L L^dag column by column, stopped where a pivot is lost */
    double complex L[MAX][MAX], y[MAX];
    int m = 0;
    for (int k = 0; k < s && k < MAX; ++k, ++m) {
        const wd_complex gk = gram[(k + 1) * ld + k + 1];
        double d = gk.re;
        for (int j = 0; j < k; ++j)
            d -= creal(L[k][j] * conj(L[k][j]));
        if (!(d > 1e-12 * gk.re) || !isfinite(d))
            break;
        L[k][k] = sqrt(d);
        for (int i = k + 1; i < s; ++i) {
            /* G_ik for i > k: the conjugate of the stored <p_{k+1}, p_{i+1}> */
            const wd_complex g = gram[(k + 1) * ld + i + 1];
            double complex v = g.re - I * g.im;
            for (int j = 0; j < k; ++j)
                v -= L[i][j] * conj(L[k][j]);
            L[i][k] = v / L[k][k];
        }
        const wd_complex c0 = gram[k + 1];  /* <p_0, p_{k+1}> = conj(c_k) */
        double complex v = c0.re - I * c0.im;
        for (int j = 0; j < k; ++j)
            v -= L[k][j] * y[j];
        y[k] = v / L[k][k];
    }
    /* L^dag a = y on the m leading directions */
    for (int k = m - 1; k >= 0; --k) {
        double complex v = y[k];
        for (int i = k + 1; i < m; ++i)
            v -= conj(L[i][k]) * (a[i].re + I * a[i].im);
        v /= L[k][k];
        a[k] = (wd_complex){creal(v), cimag(v)};
    }
    for (int k = m; k < s; ++k)
        a[k] = (wd_complex){0, 0};
    return m;
}

/* es.e = CA-GCR(steps) on Mhat es.e = h: the basis p_0 = h, p_{j+1} = Mhat
 * p_j (pb), its Gram matrix a column per step (one multi-dot over p_0..p_j
 * with p_j read once a piece), then es.e = sum a_i p_i */
static wd_status smooth_ca_gcr(wd_mg_fine *f, int steps)
{
    wd_backend *be = f->be;
    const wd_field *p[WD_MG_MAX_SMOOTH + 1];
    wd_complex gram[(WD_MG_MAX_SMOOTH + 1) * (WD_MG_MAX_SMOOTH + 1)], a[WD_MG_MAX_SMOOTH];
    double res[2 * (WD_MG_MAX_SMOOTH + 1)];
    const int ld = steps + 1;
    wd_status st;
    if (steps > f->nbasis)
        return wd_fail(WD_ERR_INVALID, "multigrid: %d CA-GCR steps, the setup's basis has %d",
                       steps, f->nbasis);
    p[0] = &f->h;
    for (int j = 1; j <= steps; ++j) {
        p[j] = &f->pb[j - 1];
        if ((st = wd_eo_mhat(&f->op, &f->pb[j - 1], p[j - 1], 0)) != WD_OK)
            return st;
        wd_blas_multi_cdot(be, j + 1, p, p[j], res);
        for (int i = 0; i <= j; ++i)
            gram[i * ld + j] = (wd_complex){res[2 * i], res[2 * i + 1]};
    }
    const int m = wd_mg_ca_gcr_coeffs(steps, gram, a);
    wd_blas_zero(be, &f->es.e);
    wd_blas_multi_caxpy(be, m, a, p, &f->es.e);
    return be->error;
}

/* es.e ~ Mhat^-1 h: the smoother's steps on the Schur system (h is
 * overwritten) */
static wd_status smooth_even(wd_mg_fine *f, int steps)
{
    wd_backend *be = f->be;
    wd_status st;
    if (f->smoother == WD_MG_SMOOTHER_CA_GCR) {
        if ((st = smooth_ca_gcr(f, steps)) != WD_OK)
            return st;
        steps = 0;
    } else {
        wd_blas_zero(be, &f->es.e);
    }
    /* MR: <q, h> and |q|^2 from the reducing Mhat where there is one (no
     * pass of their own), else in one pass; the last step's residual is
     * not needed */
    const int reduces = wd_eo_mhat_reduces(&f->op);
    for (int i = 0; i < steps; ++i) {
        double res[3];
        if (reduces) {
            /* {<h, q>, |q|^2}: <q, h> its conjugate */
            if ((st = wd_eo_mhat_reduce(&f->op, &f->qs, &f->h, &f->h, res)) != WD_OK)
                return st;
            res[1] = -res[1];
        } else {
            if ((st = wd_eo_mhat(&f->op, &f->qs, &f->h, 0)) != WD_OK)
                return st;
            wd_blas_cdot_norm2(be, &f->qs, &f->h, res);
        }
        if (!(res[2] > 0))
            break;
        const wd_complex a = {res[0] / res[2], res[1] / res[2]};
        wd_blas_caxpy(be, a, &f->h, &f->es.e);
        if (i + 1 < steps)
            wd_blas_caxpy(be, (wd_complex){-a.re, -a.im}, &f->qs, &f->h);
    }
    return be->error;
}

wd_status wd_mg_fine_smooth(wd_mg_fine *f, wd_mg_pair *e, const wd_mg_pair *r, int steps)
{
    wd_backend *be = f->be;
    wd_status st;
    wd_mg_pair_copy(be, &f->rs, r);
    if ((st = schur_source(f)) != WD_OK || (st = smooth_even(f, steps)) != WD_OK)
        return st;
    if ((st = schur_odd(f, &f->es.o, &f->rs.o)) != WD_OK)
        return st;
    wd_mg_pair_copy(be, e, &f->es);
    return be->error;
}

wd_status wd_mg_fine_smooth_eo(wd_mg_fine *f, wd_field *e, const wd_field *r, int steps)
{
    wd_status st;
    wd_blas_copy(f->be, &f->h, r);
    if ((st = smooth_even(f, steps)) != WD_OK)
        return st;
    wd_blas_copy(f->be, e, &f->es.e);
    return f->be->error;
}

wd_status wd_mg_fine_eo_source(wd_mg_fine *f, wd_field *out, const wd_mg_pair *b)
{
    return eo_source(f->be, &f->eo_outer, out, &b->e, &b->o, &f->to, &f->te);
}

wd_status wd_mg_fine_eo_odd(wd_mg_fine *f, wd_mg_pair *x, const wd_mg_pair *b)
{
    return eo_odd(f->be, &f->eo_outer, &x->o, &x->e, &b->o, &f->to);
}

wd_status wd_mg_fine_eo_apply(wd_mg_fine *f, int outer, wd_field *out, const wd_field *in)
{
    return wd_eo_mhat(outer ? &f->eo_outer : &f->eo_krylov, out, in, 0);
}

wd_status wd_mg_fine_nullvec(wd_mg_fine *f, const double complex *start, int on_device,
                             double complex *v, int v_on_device, double tol, int max_iter,
                             double *res, int *iters)
{
    wd_backend *be = f->be;
    const wd_eo_op *op = &f->op;
    wd_status st;
    /* the random start on the even sites (v_e in f->es.e) */
    if ((st = wd_upload_pair(be, &f->es.e, &f->es.o, (const double *)start, on_device, NULL)) !=
        WD_OK)
        return st;
    wd_field *x = &f->es.e, *r = &f->h, *z = &f->zs, *p = &f->ps, *q = &f->qs;
    /* r = -Mhat x; z = Mhat^dag r */
    if ((st = wd_eo_mhat(op, r, x, 0)) != WD_OK)
        return st;
    wd_blas_ax(be, -1, r);
    if ((st = wd_eo_mhat(op, z, r, 1)) != WD_OK)
        return st;
    wd_blas_copy(be, p, z);
    double zz = wd_blas_norm2(be, z);
    /* the normal equations' residual |Mhat^dag Mhat v| against its start
     * (QUDA's criterion: its CG on MdagM) */
    const double zz0 = zz;
    int it = 0;
    for (; it < max_iter && zz > tol * tol * zz0 && zz > 0; ++it) {
        if ((st = wd_eo_mhat(op, q, p, 0)) != WD_OK)
            return st;
        const double alpha = zz / wd_blas_norm2(be, q);
        wd_blas_axpy(be, alpha, p, x);
        wd_blas_axpy(be, -alpha, q, r);
        if ((st = wd_eo_mhat(op, z, r, 1)) != WD_OK)
            return st;
        const double zz1 = wd_blas_norm2(be, z);
        wd_blas_xpay(be, z, zz1 / zz, p);
        zz = zz1;
    }
    /* the odd sites from A v = 0: v_o = kappa A_oo^-1 D_oe v_e */
    wd_blas_zero(be, &f->rs.o);
    if ((st = schur_odd(f, &f->es.o, &f->rs.o)) != WD_OK)
        return st;
    if ((st = wd_download_pair(be, (double *)v, &f->es.e, &f->es.o, v_on_device, NULL)) !=
        WD_OK)
        return st;
    *iters = it;
    *res = zz0 > 0 ? sqrt(zz / zz0) : 0;
    return be->error;
}

wd_status wd_mg_fine_to_host(wd_mg_fine *f, double complex *host, const wd_mg_pair *x)
{
    return wd_download_pair(f->be, (double *)host, &x->e, &x->o, 0, NULL);
}

wd_status wd_mg_fine_from_host(wd_mg_fine *f, wd_mg_pair *x, const double complex *host)
{
    return wd_upload_pair(f->be, &x->e, &x->o, (const double *)host, 0, NULL);
}
