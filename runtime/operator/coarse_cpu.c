/*
 * coarse_cpu.c: the coarse-operator registry lookups and the CPU entry.
 *
 * The externally accessible functions are
 *   wd_coarse_find        index of a built coarse variant by name, -1 if none
 *   wd_coarse_find_axes   index by axis values, -1 if not built
 *   wd_coarse_check       the variant is built and its fields are there
 *   wd_coarse_apply_cpu   run the variant of a layout's precision and nvec
 *                         on packed fields, every coarse site
 *   wd_coarse_find_nrhs   the most right-hand sides a built variant takes
 *                         up to a bound
 *   wd_coarse_check_multi, wd_coarse_apply_multi_cpu   the same for the
 *                         variants of N right-hand sides a call
 */
#include <string.h>

#include "wd_coarse_op.h"
#include "wd_core.h"

int wd_coarse_find(const char *name)
{
    for (int i = 0; i < wd_coarse_variant_count; ++i)
        if (strcmp(wd_coarse_variants[i].name, name) == 0)
            return i;
    return -1;
}

int wd_coarse_find_axes(int precision, int nvec, int dagger, int xpay, int nrhs)
{
    for (int i = 0; i < wd_coarse_variant_count; ++i) {
        const wd_coarse_variant *v = &wd_coarse_variants[i];
        if (v->precision == precision && v->nvec == nvec && v->dagger == !!dagger &&
            v->xpay == !!xpay && v->nrhs == nrhs)
            return i;
    }
    return -1;
}

int wd_coarse_find_nrhs(int precision, int nvec, int dagger, int xpay, int most)
{
    int best = 0;
    for (int i = 0; i < wd_coarse_variant_count; ++i) {
        const wd_coarse_variant *v = &wd_coarse_variants[i];
        if (v->precision == precision && v->nvec == nvec && v->dagger == !!dagger &&
            v->xpay == !!xpay && v->nrhs <= most && v->nrhs > best)
            best = v->nrhs;
    }
    return best;
}

static wd_status check(const wd_coarse_layout *l, int dagger, int xpay, int nrhs,
                       const wd_coarse_args *a)
{
    if (nrhs < 1)
        return wd_fail(WD_ERR_INVALID, "coarse variant: %d right-hand sides", nrhs);
    const int k = wd_coarse_find_axes(l->precision, l->nvec, dagger, xpay, nrhs);
    if (k < 0)
        return wd_fail(WD_ERR_NOT_BUILT, "coarse variant coarse_%s_nv%d_dag%d_xpay%d_n%d "
                       "(precision %s, nvec %d, dagger %d, xpay %d, %d right-hand side%s) is not "
                       "in this build (meson option -Dkernels selects what is built)",
                       l->precision == WD_PREC_HALF ? "h" : "s", l->nvec, !!dagger, !!xpay, nrhs,
                       l->precision == WD_PREC_HALF ? "half" : "single", l->nvec, !!dagger,
                       !!xpay, nrhs, nrhs == 1 ? "" : "s");
    const wd_coarse_variant *v = &wd_coarse_variants[k];
    const int half = l->precision == WD_PREC_HALF;
    if (a->volume != l->volume)
        return wd_fail(WD_ERR_INVALID, "%s: %d sites in the arguments, %d in the layout",
                       v->name, a->volume, l->volume);
    if (!a->out || !a->in || !a->links || !a->nbr)
        return wd_fail(WD_ERR_INVALID, "%s: out, in, links and the neighbour table are needed",
                       v->name);
    if (xpay && !a->x)
        return wd_fail(WD_ERR_INVALID, "%s needs the x field of out = x + a D_c in", v->name);
    if (half && (!a->out_norm || !a->in_norm || !a->link_norm || (xpay && !a->x_norm)))
        return wd_fail(WD_ERR_INVALID, "%s: half precision needs the norms of every field",
                       v->name);
    /* right-hand sides that overlap would be written over one another */
    const size_t site_reals = 2 * (size_t)l->ncomp;
    if (nrhs > 1 && (a->rhs_stride < (size_t)l->volume * site_reals ||
                     (half && a->rhs_norm_stride < (size_t)l->volume)))
        return wd_fail(WD_ERR_INVALID, "%s: right-hand sides %zu reals (%zu norms) apart, less "
                       "than a field of %d sites", v->name, a->rhs_stride, a->rhs_norm_stride,
                       l->volume);
    return WD_OK;
}

wd_status wd_coarse_check(const wd_coarse_layout *l, int dagger, int xpay,
                          const wd_coarse_args *a)
{
    return check(l, dagger, xpay, 1, a);
}

wd_status wd_coarse_check_multi(const wd_coarse_layout *l, int dagger, int xpay, int nrhs,
                                const wd_coarse_args *a)
{
    return check(l, dagger, xpay, nrhs, a);
}

wd_status wd_coarse_apply_cpu(const wd_coarse_layout *l, int dagger, int xpay,
                              const wd_coarse_args *a)
{
    return wd_coarse_apply_multi_cpu(l, dagger, xpay, 1, a);
}

wd_status wd_coarse_apply_multi_cpu(const wd_coarse_layout *l, int dagger, int xpay, int nrhs,
                                    const wd_coarse_args *a)
{
    const wd_status st = check(l, dagger, xpay, nrhs, a);
    if (st != WD_OK)
        return st;
    wd_coarse_variants[wd_coarse_find_axes(l->precision, l->nvec, dagger, xpay, nrhs)].cpu(a);
    return WD_OK;
}
