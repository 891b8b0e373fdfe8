/*
 * coarse_cpu.c: the coarse-operator registry lookups and the CPU entry.
 *
 * The externally accessible functions are
 *   wd_coarse_find        index of a built coarse variant by name, -1 if none
 *   wd_coarse_find_axes   index by axis values, -1 if not built
 *   wd_coarse_check       the variant is built and its fields are there
 *   wd_coarse_apply_cpu   run the variant of a layout's precision and nvec
 *                         on packed fields, every coarse site
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

wd_status wd_coarse_check(const wd_coarse_layout *l, int dagger, int xpay,
                          const wd_coarse_args *a)
{
    const int k = wd_coarse_find_axes(l->precision, l->nvec, dagger, xpay, 1);
    if (k < 0)
        return wd_fail(WD_ERR_NOT_BUILT, "coarse variant coarse_%s_nv%d_dag%d_xpay%d_n1 "
                       "(precision %s, nvec %d, dagger %d, xpay %d, 1 right-hand side) is not in "
                       "this build (meson option -Dkernels selects what is built)",
                       l->precision == WD_PREC_HALF ? "h" : "s", l->nvec, !!dagger, !!xpay,
                       l->precision == WD_PREC_HALF ? "half" : "single", l->nvec, !!dagger,
                       !!xpay);
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
    return WD_OK;
}

wd_status wd_coarse_apply_cpu(const wd_coarse_layout *l, int dagger, int xpay,
                              const wd_coarse_args *a)
{
    const wd_status st = wd_coarse_check(l, dagger, xpay, a);
    if (st != WD_OK)
        return st;
    wd_coarse_variants[wd_coarse_find_axes(l->precision, l->nvec, dagger, xpay, 1)].cpu(a);
    return WD_OK;
}
