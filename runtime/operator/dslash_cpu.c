/*
 * dslash_cpu.c: the registry lookups and the CPU backend's host-field entry.
 *
 * The externally accessible functions are
 *   wd_variant_find          index of a built variant by name, -1 if none
 *   wd_variant_find_axes     index of the built Wilson variant with these axis values
 *   wd_variant_find_op       the same for any operator
 *   wd_variant_find_nrhs     ... and number of right-hand sides
 *   wd_variant_find_form     ... of one form (wd_rhs_form; -1: any)
 *   wd_variant_count_built   how many variants this build has
 *   wd_variant_name          the name of built variant i
 *   wd_dslash_cpu            pack host fields, run a variant, unpack the result
 */
#include <stdlib.h>
#include <string.h>

#include "wd_core.h"
#include "wd_layout.h"
#include "wd_operator.h"

int wd_variant_find(const char *name)
{
    for (int i = 0; i < wd_variant_count; ++i)
        if (strcmp(wd_variants[i].name, name) == 0)
            return i;
    return -1;
}

int wd_variant_find_form(int op, int precision, int recon, int gauge_fix, int dagger, int xpay,
                         int nrhs, int form)
{
    for (int i = 0; i < wd_variant_count; ++i) {
        const wd_variant *v = &wd_variants[i];
        if (v->op != op || v->precision != precision || v->nrhs != nrhs ||
            (form >= 0 && nrhs > 1 && v->form != form))
            continue;
        if (op == WD_OP_CLOVER || (v->recon == recon && v->gauge_fix == !!gauge_fix &&
                                   v->dagger == !!dagger && v->xpay == !!xpay))
            return i;
    }
    return -1;
}

int wd_variant_find_nrhs(int op, int precision, int recon, int gauge_fix, int dagger, int xpay,
                         int nrhs)
{
    return wd_variant_find_form(op, precision, recon, gauge_fix, dagger, xpay, nrhs, -1);
}

int wd_variant_find_op(int op, int precision, int recon, int gauge_fix, int dagger, int xpay)
{
    return wd_variant_find_nrhs(op, precision, recon, gauge_fix, dagger, xpay, 1);
}

int wd_variant_find_axes(int precision, int recon, int gauge_fix, int dagger, int xpay)
{
    return wd_variant_find_op(WD_OP_WILSON, precision, recon, gauge_fix, dagger, xpay);
}

int wd_variant_count_built(void)
{
    return wd_variant_count;
}

const char *wd_variant_name(int i)
{
    return i >= 0 && i < wd_variant_count ? wd_variants[i].name : NULL;
}

/* Largest deviation of a temporal link below t = T-1 from the unit matrix. */
static double temporal_gauge_error(const double complex *u, const int dims[4])
{
    const size_t below = (size_t)dims[0] * dims[1] * dims[2] * (dims[3] - 1);
    double worst = 0;
    for (size_t site = 0; site < below; ++site) {
        const double complex *m = u + 9 * (4 * site + 3);
        for (int i = 0; i < 9; ++i) {
            const double d = cabs(m[i] - (i % 4 == 0 ? 1.0 : 0.0));
            worst = d > worst ? d : worst;
        }
    }
    return worst;
}

wd_status wd_dslash_cpu(const char *name, double *out, const double *gauge, const double *in,
                        const double *x, double a, const int dims[4], int parity,
                        wd_time_bc tbc, int pad)
{
    const int idx = wd_variant_find(name);
    if (idx < 0)
        return wd_fail(WD_ERR_NOT_BUILT, "Dslash variant '%s' is not in this build "
                       "(see `wdirac list`; meson option -Dkernels selects what is built)", name);
    const wd_variant *v = &wd_variants[idx];
    if (v->op != WD_OP_WILSON || v->nrhs != 1)
        return wd_fail(WD_ERR_INVALID, "%s: wd_dslash_cpu runs the one-RHS Wilson variants "
                       "(dslash_*_n1); the clover kernels need a clover field (the solver "
                       "builds it)", name);
    if (parity != 0 && parity != 1)
        return wd_fail(WD_ERR_INVALID, "parity %d: must be 0 (even) or 1 (odd)", parity);
    if (tbc != WD_TIME_PERIODIC && tbc != WD_TIME_ANTIPERIODIC)
        return wd_fail(WD_ERR_INVALID, "time boundary %d: must be +1 or -1", (int)tbc);
    if (v->xpay && !x)
        return wd_fail(WD_ERR_INVALID, "%s needs the x field of out = x + a D in", name);
    wd_spinor_layout sl;
    wd_gauge_layout gl;
    wd_status st = wd_spinor_layout_make(&sl, dims, v->precision, pad);
    if (st == WD_OK)
        st = wd_gauge_layout_make(&gl, dims, v->precision, v->recon, v->gauge_fix, pad);
    if (st != WD_OK)
        return st;
    const double complex *u = (const double complex *)gauge;
    if (v->gauge_fix) {
        const double err = temporal_gauge_error(u, dims);
        if (err > 1e-10)
            return wd_fail(WD_ERR_INVALID, "%s needs a gauge field in temporal gauge; a temporal "
                           "link below t = T-1 is %.3g away from the unit matrix", name, err);
    }

    void *gbuf = malloc(gl.bytes);
    void *ibuf = malloc(sl.bytes), *obuf = malloc(sl.bytes), *xbuf = malloc(sl.bytes);
    float *norms = malloc(3 * (sl.norm_bytes ? sl.norm_bytes : sizeof(float)));
    if (!gbuf || !ibuf || !obuf || !xbuf || !norms) {
        st = wd_fail(WD_ERR_NOMEM, "%s: cannot allocate %zu bytes of packed fields",
                     name, gl.bytes + 3 * sl.bytes);
        goto done;
    }
    float *in_norm = norms, *out_norm = norms + sl.volume_cb, *x_norm = norms + 2 * sl.volume_cb;
    st = wd_pack_gauge(&gl, gbuf, u, dims);
    if (st != WD_OK)
        goto done;
    wd_pack_spinor(&sl, ibuf, in_norm, (const double complex *)in, dims, 1 - parity);
    if (v->xpay)
        wd_pack_spinor(&sl, xbuf, x_norm, (const double complex *)x, dims, parity);

    wd_dslash_args args;
    memset(&args, 0, sizeof args);
    wd_dslash_args_set(&args, &sl, &gl, dims, parity, tbc);
    args.out = obuf;
    args.out_norm = out_norm;
    args.in = ibuf;
    args.in_norm = in_norm;
    args.x = xbuf;
    args.x_norm = x_norm;
    args.gauge = gbuf;
    args.a = a;
    v->cpu(&args);
    wd_unpack_spinor(&sl, (double complex *)out, obuf, out_norm, dims, parity);
done:
    free(gbuf);
    free(ibuf);
    free(obuf);
    free(xbuf);
    free(norms);
    return st;
}
