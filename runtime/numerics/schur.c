/*
 * schur.c: the even-odd Schur operator of DESIGN.md on a backend.
 *
 * The externally accessible functions are
 *   wd_eo_op_init   find the variants of one gauge field's precision,
 *                   reconstruction and gauge fixing (by axes, never by name)
 *   wd_eo_mhat      Mhat in = in - kappa^2 D_eo D_oe in: one plain variant
 *                   onto the odd sites, one xpay variant (a = -kappa^2) back
 * Mhat^dag is the same with the dagger variants: the blocks of D^dag,
 * (D^dag)_eo (D^dag)_oe = (D_eo D_oe)^dag (ref_wilson.h, ref_schur).
 */
#include "wd_core.h"
#include "wd_operator.h"
#include "wd_solver.h"

wd_status wd_eo_op_init(wd_eo_op *op, wd_backend *be, const wd_gauge *g, double kappa,
                        wd_field *tmp, int need_dagger)
{
    op->be = be;
    op->g = g;
    op->kappa = kappa;
    op->tmp = tmp;
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

wd_status wd_eo_mhat(const wd_eo_op *op, wd_field *out, const wd_field *in, int dagger)
{
    wd_status st = wd_dslash(op->be, op->plain[dagger], op->tmp, op->g, in, NULL, 0, 1);
    if (st == WD_OK)
        st = wd_dslash(op->be, op->xpay[dagger], out, op->g, op->tmp, in,
                       -op->kappa * op->kappa, 0);
    return st;
}
