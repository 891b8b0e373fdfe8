/*
 * schur.c: the even-odd Schur operator of DESIGN.md on a backend.
 *
 * The externally accessible functions are
 *   wd_eo_op_init   find the variants of one gauge field's precision,
 *                   reconstruction and gauge fixing (by axes, never by name)
 *   wd_eo_op_clover the clover operator's fields and variants
 *   wd_eo_mhat      Mhat in = in - kappa^2 D_eo D_oe in: one plain variant
 *                   onto the odd sites, one xpay variant (a = -kappa^2) back
 * Mhat^dag is the same with the dagger variants: the blocks of D^dag,
 * (D^dag)_eo (D^dag)_oe = (D_eo D_oe)^dag (ref_wilson.h, ref_schur).
 *
 * With a clover term (wd_solver.h), C D kernels apply A^-1 after D at the
 * output site (dslashcl_*), clover_* applies a clover field alone:
 *   symmetric    t_o = A_oo^-1 D_oe in;  out = in - kappa^2 A_ee^-1 D_eo t_o
 *   its dagger   1 - kappa^2 D^dag_eo A_oo^-1 D^dag_oe A_ee^-1:
 *                s_e = A_ee^-1 in;  t_o = A_oo^-1 D^dag_oe s_e;
 *                out = in - kappa^2 D^dag_eo t_o (a Wilson xpay variant)
 *   asymmetric   t_o = A_oo^-1 D_oe in;  s_e = in - kappa^2 A_ee^-1 D_eo t_o;
 *                out = A_ee s_e  (= A_ee in - kappa^2 D_eo t_o); the dagger
 *                the same with D^dag (A is Hermitian)
 * Two kernels per application for the symmetric form, three for its
 * dagger and for the asymmetric form.
 *   wd_eo_mhat_multi  N right-hand sides: the same two Wilson applications
 *                   through the multi-RHS kernels (wd_dslash_group) where
 *                   op->multi_kernels, else one right-hand side a call
 *   wd_eo_mhat_reduces / wd_eo_mhat_reduce  the Wilson Mhat whose xpay
 *                   kernel also reduces its output (wd_dslash_reduce)
 */
#include <string.h>

#include "wd_core.h"
#include "wd_operator.h"
#include "wd_solver.h"

wd_status wd_eo_op_init(wd_eo_op *op, wd_backend *be, const wd_gauge *g, double kappa,
                        wd_field *tmp, int need_dagger)
{
    memset(op, 0, sizeof *op);  /* Wilson until wd_eo_op_clover */
    op->be = be;
    op->g = g;
    op->kappa = kappa;
    op->tmp = tmp;
    op->multi_kernels = wd_backend_multi_rhs_pays(be);
    for (int dag = 0; dag < 2; ++dag)
        for (int xpay = 0; xpay < 2; ++xpay) {
            int *slot = xpay ? &op->xpay[dag] : &op->plain[dag];
            *slot = wd_variant_find_axes(g->precision, g->recon, g->gauge_fix, dag, xpay);
            if (*slot < 0 && (!dag || need_dagger))
                return wd_fail(WD_ERR_NOT_BUILT, "the Dslash variant of precision %d, "
                               "reconstruction %d, gauge fixing %d, dagger %d, xpay %d is not in "
                               "this build (see `wdirac list`; meson option -Dkernels)",
                               g->precision, g->recon, g->gauge_fix, dag, xpay);
        }
    return WD_OK;
}

wd_status wd_eo_op_clover(wd_eo_op *op, const wd_clover *a, const wd_clover *ainv,
                          int symmetric, wd_field *tmp_e, int need_dagger)
{
    const wd_gauge *g = op->g;
    op->a = a;
    op->ainv = ainv;
    op->symmetric = symmetric;
    op->tmp_e = tmp_e;
    for (int dag = 0; dag < 2; ++dag)
        for (int xpay = 0; xpay < 2; ++xpay) {
            int *slot = xpay ? &op->cl_xpay[dag] : &op->cl_plain[dag];
            *slot = wd_variant_find_op(WD_OP_WILSON_CLOVER, g->precision, g->recon, g->gauge_fix,
                                       dag, xpay);
            if (*slot < 0 && (!dag || need_dagger))
                return wd_fail(WD_ERR_NOT_BUILT, "the clover Dslash variant (dslashcl) of "
                               "precision %d, reconstruction %d, gauge fixing %d, dagger %d, "
                               "xpay %d is not in this build (see `wdirac list`; meson option "
                               "-Dkernels)", g->precision, g->recon, g->gauge_fix, dag, xpay);
        }
    op->cl_site = wd_variant_find_op(WD_OP_CLOVER, g->precision, 0, 0, 0, 0);
    if (op->cl_site < 0)
        return wd_fail(WD_ERR_NOT_BUILT, "the clover kernel of precision %d (clover_*) is not "
                       "in this build (see `wdirac list`; meson option -Dkernels)", g->precision);
    if ((!symmetric && !a) || !ainv || !tmp_e)
        return wd_fail(WD_ERR_INTERNAL, "clover operator without its fields");
    return WD_OK;
}

static wd_status clover_mhat(const wd_eo_op *op, wd_field *out, const wd_field *in, int dagger)
{
    wd_backend *be = op->be;
    const double k2 = -op->kappa * op->kappa;
    wd_status st;
    if (op->symmetric && dagger) {
        if ((st = wd_dslash_clover(be, op->cl_site, op->tmp_e, NULL, op->ainv, in, NULL, 0,
                                   0)) != WD_OK ||
            (st = wd_dslash_clover(be, op->cl_plain[1], op->tmp, op->g, op->ainv, op->tmp_e,
                                   NULL, 0, 1)) != WD_OK)
            return st;
        return wd_dslash(be, op->xpay[1], out, op->g, op->tmp, in, k2, 0);
    }
    if ((st = wd_dslash_clover(be, op->cl_plain[dagger], op->tmp, op->g, op->ainv, in, NULL, 0,
                               1)) != WD_OK)
        return st;
    if (op->symmetric)
        return wd_dslash_clover(be, op->cl_xpay[dagger], out, op->g, op->ainv, op->tmp, in, k2, 0);
    if ((st = wd_dslash_clover(be, op->cl_xpay[dagger], op->tmp_e, op->g, op->ainv, op->tmp, in,
                               k2, 0)) != WD_OK)
        return st;
    return wd_dslash_clover(be, op->cl_site, out, NULL, op->a, op->tmp_e, NULL, 0, 0);
}

wd_status wd_eo_mhat(const wd_eo_op *op, wd_field *out, const wd_field *in, int dagger)
{
    if (op->ainv)
        return clover_mhat(op, out, in, dagger);
    wd_status st = wd_dslash(op->be, op->plain[dagger], op->tmp, op->g, in, NULL, 0, 1);
    if (st == WD_OK)
        st = wd_dslash(op->be, op->xpay[dagger], out, op->g, op->tmp, in,
                       -op->kappa * op->kappa, 0);
    return st;
}

int wd_eo_mhat_reduces(const wd_eo_op *op)
{
    return !op->ainv && wd_dslash_reduces(op->be, op->xpay[0]);
}

wd_status wd_eo_mhat_reduce(const wd_eo_op *op, wd_field *out, const wd_field *in,
                            const wd_field *y, double res[3])
{
    if (!wd_eo_mhat_reduces(op))
        return wd_fail(WD_ERR_INTERNAL, "wd_eo_mhat_reduce: the operator has no reducing kernel "
                       "on its backend");
    wd_status st = wd_dslash(op->be, op->plain[0], op->tmp, op->g, in, NULL, 0, 1);
    if (st == WD_OK)
        st = wd_dslash_reduce(op->be, op->xpay[0], out, op->g, op->tmp, in,
                              -op->kappa * op->kappa, 0, y, res);
    return st;
}

/* the Wilson variant of g's axes for n right-hand sides (wd_dslash_group) */
typedef struct family {
    const wd_gauge *g;
    int dagger, xpay;
} family;

static int wilson_kernel(const void *ctx, int n)
{
    const family *f = ctx;
    return wd_variant_find_nrhs(WD_OP_WILSON, f->g->precision, f->g->recon, f->g->gauge_fix,
                                f->dagger, f->xpay, n);
}

wd_status wd_eo_mhat_multi(const wd_eo_op *op, wd_field *out, const wd_field *in, int dagger,
                           int count)
{
    wd_status st = WD_OK;
    if (op->ainv || count == 1 || !op->multi_kernels) {
        for (int q = 0; q < count && st == WD_OK; ++q) {
            wd_field vo = wd_field_view(out, q, 1);
            const wd_field vi = wd_field_view(in, q, 1);
            st = wd_eo_mhat(op, &vo, &vi, dagger);
        }
        return st;
    }
    if (!op->tmp_n || op->tmp_n->nrhs < count)
        return wd_fail(WD_ERR_INTERNAL, "wd_eo_mhat_multi: no odd scratch of %d right-hand "
                       "sides", count);
    const family plain = {op->g, dagger, 0}, xpay = {op->g, dagger, 1};
    st = wd_dslash_group(op->be, wilson_kernel, &plain, op->tmp_n, op->g, NULL, in, NULL, 0, 1,
                         count, NULL);
    if (st == WD_OK)
        st = wd_dslash_group(op->be, wilson_kernel, &xpay, out, op->g, NULL, op->tmp_n, in,
                             -op->kappa * op->kappa, 0, count, NULL);
    return st;
}
