/*
 * mg_dev_cpu.c: the coarse levels' operations on the CPU (wd_mg_dev.h):
 * host memory, OpenMP over sites where a field is large enough
 * (WD_MG_PARALLEL_MIN), the generated CPU coarse kernels.
 *
 * The externally accessible definitions are
 *   wd_mg_dev_cpu_ops   the table
 *   wd_mg_pack_vectors  null vectors rounded into the transfers' layout
 *   wd_mg_vector_bytes  its size
 *   wd_mg_dev_transfer_check  a transfer's null vectors' precision (both
 *                       backends' P and P^dag)
 *   wd_mg_dev_apply_multi_plan  apply_multi's kernel calls (both backends)
 *   wd_mg_dev_lanes_check       the lanes_ operations' limits (both backends)
 * Reductions: each site's terms in component order summed in double into
 * chunks of WD_REDUCE_BLOCK sites, the chunks in chunk order (the same
 * bits for any thread count); lanes_cdot those chunks on each lane.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "wd_coarse_op.h"
#include "wd_core.h"
#include "wd_mg.h"
#include "wd_mg_dev.h"

static wd_status cpu_alloc(void **p, size_t bytes, const char *what)
{
    *p = malloc(bytes ? bytes : 1);
    return *p ? WD_OK
              : wd_fail(WD_ERR_NOMEM, "multigrid: cannot allocate %zu bytes for %s", bytes, what);
}

static void cpu_free(void *p) { free(p); }

static wd_status cpu_copy_bytes(void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
    return WD_OK;
}

/* a single field to the 16-bit layout: each site scaled by its largest
 * |real| (the generated kernels' store) */
static void to_half(int volume, int n, const float *x, short *h, float *norm)
{
#pragma omp parallel for schedule(static) if ((size_t)volume * n >= WD_MG_PARALLEL_MIN)
    for (int s = 0; s < volume; ++s) {
        const float *xs = x + (size_t)s * 2 * n;
        float m = 0.0f;
        for (int i = 0; i < 2 * n; ++i)
            m = wd_max_abs(m, xs[i]);
        const float sc = wd_half_scale(m);
        for (int i = 0; i < 2 * n; ++i)
            h[(size_t)s * 2 * n + i] = wd_round_short(xs[i] * sc);
        norm[s] = m;
    }
}

static void from_half(int volume, int n, const short *h, const float *norm, float *x)
{
#pragma omp parallel for schedule(static) if ((size_t)volume * n >= WD_MG_PARALLEL_MIN)
    for (int s = 0; s < volume; ++s) {
        const float f = norm[s] * WD_HALF_INV_SCALE;
        for (int i = 0; i < 2 * n; ++i)
            x[(size_t)s * 2 * n + i] = wd_s2f(h[(size_t)s * 2 * n + i]) * f;
    }
}

static wd_status cpu_apply_half(const wd_mg_dev_level *lv)
{
    if (lv->layout.precision != 2)
        return wd_fail(WD_ERR_INVALID, "multigrid: apply_half on a level of precision %d",
                       lv->layout.precision);
    const wd_coarse_args a = {.out = lv->hout, .out_norm = lv->hout_norm, .in = lv->hin,
                              .in_norm = lv->hin_norm, .links = lv->links,
                              .link_norm = lv->link_norm, .nbr = lv->nbr,
                              .volume = lv->layout.volume};
    return wd_coarse_apply_cpu(&lv->layout, 0, 0, &a);
}

/* single links: the kernel on the single fields; half: in (its ghost
 * sites too) rounded into hin, apply_half, hout widened into out */
static wd_status cpu_apply(const wd_mg_dev_level *lv, float *out, const float *in)
{
    const int vol = lv->layout.volume, n = lv->layout.ncomp;
    if (lv->layout.precision != 2) {
        const wd_coarse_args a = {.out = out, .in = in, .links = lv->links, .nbr = lv->nbr,
                                  .volume = vol};
        return wd_coarse_apply_cpu(&lv->layout, 0, 0, &a);
    }
    to_half(vol + lv->nghost, n, in, lv->hin, lv->hin_norm);
    const wd_status st = cpu_apply_half(lv);
    if (st == WD_OK)
        from_half(vol, n, lv->hout, lv->hout_norm, out);
    return st;
}

wd_status wd_mg_dev_apply_multi_check(const wd_mg_dev_level *lv, int nrhs, int max_nrhs)
{
    if (nrhs < 1 || nrhs > max_nrhs)
        return wd_fail(WD_ERR_INVALID, "multigrid: apply_multi of %d right-hand sides", nrhs);
    if (lv->layout.precision == 2 && (!lv->hmin || !lv->hmout || lv->hmulti < nrhs))
        return wd_fail(WD_ERR_INVALID, "multigrid: apply_multi of %d right-hand sides on half "
                       "links needs 16-bit fields for as many (the level has them for %d)", nrhs,
                       lv->hmin && lv->hmout ? lv->hmulti : 0);
    return WD_OK;
}

wd_status wd_mg_dev_apply_multi_plan(const wd_mg_dev_level *lv, int nrhs, void *out,
                                     float *out_norm, const void *in, const float *in_norm,
                                     wd_mg_coarse_run run)
{
    const wd_coarse_layout *l = &lv->layout;
    const size_t sites = (size_t)l->volume + (size_t)lv->nghost;
    const size_t field = sites * 2 * (size_t)l->ncomp * (size_t)l->precision;  /* bytes */
    const int half = l->precision == 2;
    wd_status st = WD_OK;
    for (int r0 = 0; r0 < nrhs && st == WD_OK;) {
        /* the most right-hand sides a built variant takes of those left
         * (none built: one, whose check names the missing variant) */
        int k = wd_coarse_find_nrhs(l->precision, l->nvec, 0, 0, nrhs - r0);
        k = k > 0 ? k : 1;
        wd_coarse_args a;
        memset(&a, 0, sizeof a);
        a.out = (char *)out + (size_t)r0 * field;
        a.in = (const char *)in + (size_t)r0 * field;
        a.out_norm = half ? out_norm + (size_t)r0 * sites : NULL;
        a.in_norm = half ? in_norm + (size_t)r0 * sites : NULL;
        a.links = lv->links;
        a.link_norm = lv->link_norm;
        a.nbr = lv->nbr;
        a.volume = l->volume;
        a.rhs_stride = sites * 2 * (size_t)l->ncomp;
        a.rhs_norm_stride = sites;
        st = run(lv, k, &a);
        r0 += k;
    }
    return st;
}

static wd_status cpu_run(const wd_mg_dev_level *lv, int nrhs, const wd_coarse_args *a)
{
    return wd_coarse_apply_multi_cpu(&lv->layout, 0, 0, nrhs, a);
}

/* single links: the kernels on the single fields; half: in (every
 * right-hand side's ghost sites too) rounded into hmin, the half kernels
 * into hmout, widened into out right-hand side by right-hand side (their
 * ghost sites left alone), as cpu_apply does one */
static wd_status cpu_apply_multi(const wd_mg_dev_level *lv, int nrhs, float *out, const float *in)
{
    const int vol = lv->layout.volume, n = lv->layout.ncomp;
    const size_t sites = (size_t)vol + (size_t)lv->nghost, field = sites * 2 * (size_t)n;
    const wd_status chk = wd_mg_dev_apply_multi_check(lv, nrhs, INT_MAX);
    if (chk != WD_OK)
        return chk;
    if (lv->layout.precision != 2)
        return wd_mg_dev_apply_multi_plan(lv, nrhs, out, NULL, in, NULL, cpu_run);
    to_half((int)(nrhs * sites), n, in, lv->hmin, lv->hmin_norm);
    const wd_status st = wd_mg_dev_apply_multi_plan(lv, nrhs, lv->hmout, lv->hmout_norm, lv->hmin,
                                                    lv->hmin_norm, cpu_run);
    for (int r = 0; st == WD_OK && r < nrhs; ++r)
        from_half(vol, n, (const short *)lv->hmout + r * field, lv->hmout_norm + r * sites,
                  out + r * field);
    return st;
}

static wd_status cpu_pack_half(int count, int n, const int *sites, const float *src, void *dst,
                               float *dst_norm)
{
#pragma omp parallel for schedule(static) if ((size_t)count * n >= WD_MG_PARALLEL_MIN)
    for (int i = 0; i < count; ++i) {
        const size_t s = sites ? (size_t)sites[i] : (size_t)i;
        to_half(1, n, src + (size_t)i * 2 * n, (short *)dst + s * 2 * n, dst_norm + s);
    }
    return WD_OK;
}

static wd_status cpu_move_half(int count, int n, const int *sites, const void *src,
                               const float *src_norm, void *dst, float *dst_norm)
{
#pragma omp parallel for schedule(static) if ((size_t)count * n >= WD_MG_PARALLEL_MIN)
    for (int i = 0; i < count; ++i) {
        const size_t s = sites ? (size_t)sites[i] : (size_t)i;
        memcpy((short *)dst + s * 2 * n, (const short *)src + (size_t)i * 2 * n,
               2 * (size_t)n * sizeof(short));
        dst_norm[s] = src_norm[i];
    }
    return WD_OK;
}

static wd_status cpu_xmy_half(int count, int n, const float *x, const void *h, const float *norm,
                              float *y)
{
#pragma omp parallel for schedule(static) if ((size_t)count * n >= WD_MG_PARALLEL_MIN)
    for (int s = 0; s < count; ++s) {
        const float f = norm[s] * WD_HALF_INV_SCALE;
        for (int i = 0; i < 2 * n; ++i) {
            const size_t at = (size_t)s * 2 * n + i;
            y[at] = x[at] - wd_s2f(((const short *)h)[at]) * f;
        }
    }
    return WD_OK;
}

/* whether a loop over `volume` sites of n components is worth threads */
static int threaded(int volume, int n)
{
    return (size_t)volume * (size_t)n >= WD_MG_PARALLEL_MIN;
}

static wd_status cpu_zero(int volume, int n, float *y)
{
    memset(y, 0, (size_t)volume * 2 * n * sizeof *y);
    return WD_OK;
}

static wd_status cpu_copy(int volume, int n, float *y, const float *x)
{
    if (y != x)
        memcpy(y, x, (size_t)volume * 2 * n * sizeof *y);
    return WD_OK;
}

static wd_status cpu_scale(int volume, int n, float a, float *x)
{
    const size_t len = (size_t)volume * 2 * n;
#pragma omp parallel for schedule(static) if (threaded(volume, n))
    for (size_t i = 0; i < len; ++i)
        x[i] *= a;
    return WD_OK;
}

static wd_status cpu_g5(int volume, int n, float *x)
{
    const int h = n / 2;
#pragma omp parallel for schedule(static) if (threaded(volume, n))
    for (long s = 0; s < volume; ++s)
        for (int i = h; i < n; ++i) {
            x[(size_t)s * 2 * n + i] = -x[(size_t)s * 2 * n + i];
            x[(size_t)s * 2 * n + n + i] = -x[(size_t)s * 2 * n + n + i];
        }
    return WD_OK;
}

static wd_status cpu_xmy(int volume, int n, const float *x, float *y)
{
    const size_t len = (size_t)volume * 2 * n;
#pragma omp parallel for schedule(static) if (threaded(volume, n))
    for (size_t i = 0; i < len; ++i)
        y[i] = x[i] - y[i];
    return WD_OK;
}

/* the site at float `at` of y += sum_{i < k} (ar[i] + i ai[i]) times
 * that of x[i], in i order: multi_caxpy's and lanes_caxpy's arithmetic
 * (one function: a lane has multi_caxpy's bits) */
static void caxpy_site(int n, int k, const float *ar, const float *ai, const float *const *x,
                       size_t at, float *y)
{
    float *yr = y + at, *yi = yr + n;
    for (int i = 0; i < k; ++i) {
        const float *xr = x[i] + at, *xi = xr + n;
        for (int c = 0; c < n; ++c) {
            const float re = ar[i] * xr[c] - ai[i] * xi[c];
            const float im = ar[i] * xi[c] + ai[i] * xr[c];
            yr[c] += re;
            yi[c] += im;
        }
    }
}

static wd_status cpu_multi_caxpy(int volume, int n, int k, const wd_complex *a,
                                 const float *const *x, float *y)
{
    if (k < 1 || k > WD_MG_DEV_MULTI)
        return wd_fail(WD_ERR_INTERNAL, "multigrid: multi_caxpy of %d fields", k);
    float ar[WD_MG_DEV_MULTI], ai[WD_MG_DEV_MULTI];
    for (int i = 0; i < k; ++i) {
        ar[i] = (float)a[i].re;
        ai[i] = (float)a[i].im;
    }
#pragma omp parallel for schedule(static) if (threaded(volume, n))
    for (int s = 0; s < volume; ++s)
        caxpy_site(n, k, ar, ai, x, (size_t)s * 2 * n, y);
    return WD_OK;
}

/* chunks of the reductions */
static int chunks(int volume)
{
    return (volume + WD_REDUCE_BLOCK - 1) / WD_REDUCE_BLOCK;
}

/* res[2 i + {0, 1}] = <x[i], y> over the sites of chunk c, in double */
static void chunk_cdot(int volume, int n, int k, const float *const *x, const float *y, int c,
                       double *res)
{
    const int s0 = c * WD_REDUCE_BLOCK;
    const int s1 = s0 + WD_REDUCE_BLOCK < volume ? s0 + WD_REDUCE_BLOCK : volume;
    for (int i = 0; i < k; ++i) {
        double re = 0, im = 0;
        for (int s = s0; s < s1; ++s) {
            const float *xr = x[i] + (size_t)s * 2 * n, *xi = xr + n;
            const float *yr = y + (size_t)s * 2 * n, *yi = yr + n;
            for (int a = 0; a < n; ++a) {
                re += (double)xr[a] * yr[a] + (double)xi[a] * yi[a];
                im += (double)xr[a] * yi[a] - (double)xi[a] * yr[a];
            }
        }
        res[2 * i] = re;
        res[2 * i + 1] = im;
    }
}

static wd_status cpu_multi_cdot(int volume, int n, int k, const float *const *x, const float *y,
                                double *res)
{
    if (k < 1 || k > WD_MG_DEV_MULTI)
        return wd_fail(WD_ERR_INTERNAL, "multigrid: multi_cdot of %d fields", k);
    const int nc = chunks(volume);
    double *part = malloc((size_t)nc * 2 * k * sizeof *part);
    if (!part)
        return wd_fail(WD_ERR_NOMEM, "multigrid: cannot allocate %d reduction chunks", nc);
#pragma omp parallel for schedule(static) if (threaded(volume, n))
    for (int c = 0; c < nc; ++c)
        chunk_cdot(volume, n, k, x, y, c, part + (size_t)c * 2 * k);
    for (int i = 0; i < 2 * k; ++i) {
        double sum = 0;
        for (int c = 0; c < nc; ++c)
            sum += part[(size_t)c * 2 * k + i];
        res[i] = sum;
    }
    free(part);
    return WD_OK;
}

wd_status wd_mg_dev_lanes_check(const char *what, int volume, int n, int lanes, size_t stride,
                                int k)
{
    const size_t field = (size_t)volume * 2 * n;
    if (k < 1 || k > WD_MG_DEV_MULTI || lanes < 1 || lanes > WD_MG_DEV_LANES || stride < field)
        return wd_fail(WD_ERR_INTERNAL,
                       "multigrid: %s of %d fields on %d lanes %zu floats apart (1 to %d "
                       "fields, 1 to %d lanes, at least the field's %zu floats apart)",
                       what, k, lanes, stride, WD_MG_DEV_MULTI, WD_MG_DEV_LANES, field);
    return WD_OK;
}

/* multi_cdot's chunks on every lane, all chunks of all lanes in one loop;
 * each lane's chunks then summed in chunk order as multi_cdot sums them */
static wd_status cpu_lanes_cdot(int volume, int n, int lanes, size_t stride, int k,
                                const float *const *x, const float *y, double *res)
{
    wd_status st = wd_mg_dev_lanes_check("lanes_cdot", volume, n, lanes, stride, k);
    if (st != WD_OK)
        return st;
    const float *xl[WD_MG_DEV_LANES][WD_MG_DEV_MULTI];
    for (int r = 0; r < lanes; ++r)
        for (int i = 0; i < k; ++i)
            xl[r][i] = x[i] + (size_t)r * stride;
    const int nc = chunks(volume);
    double *part = malloc((size_t)lanes * nc * 2 * k * sizeof *part);
    if (!part)
        return wd_fail(WD_ERR_NOMEM, "multigrid: cannot allocate %d reduction chunks of %d lanes",
                       nc, lanes);
#pragma omp parallel for collapse(2) schedule(static) if (threaded(volume, lanes * n))
    for (int r = 0; r < lanes; ++r)
        for (int c = 0; c < nc; ++c)
            chunk_cdot(volume, n, k, xl[r], y + (size_t)r * stride, c,
                       part + ((size_t)r * nc + c) * 2 * k);
    for (int r = 0; r < lanes; ++r)
        for (int i = 0; i < 2 * k; ++i) {
            double sum = 0;
            for (int c = 0; c < nc; ++c)
                sum += part[((size_t)r * nc + c) * 2 * k + i];
            res[(size_t)r * 2 * k + i] = sum;
        }
    free(part);
    return WD_OK;
}

/* multi_caxpy's sites on the lanes with a coefficient other than zero (in
 * float, as multi_caxpy rounds them): a lane of zeros is not touched,
 * even where its x holds NaN or its y -0 */
static wd_status cpu_lanes_caxpy(int volume, int n, int lanes, size_t stride, int k,
                                 const wd_complex *a, const float *const *x, float *y)
{
    wd_status st = wd_mg_dev_lanes_check("lanes_caxpy", volume, n, lanes, stride, k);
    if (st != WD_OK)
        return st;
    float ar[WD_MG_DEV_LANES][WD_MG_DEV_MULTI], ai[WD_MG_DEV_LANES][WD_MG_DEV_MULTI];
    int live[WD_MG_DEV_LANES], nlive = 0;
    for (int r = 0; r < lanes; ++r) {
        int any = 0;
        for (int i = 0; i < k; ++i) {
            ar[r][i] = (float)a[r * k + i].re;
            ai[r][i] = (float)a[r * k + i].im;
            any |= ar[r][i] != 0 || ai[r][i] != 0;
        }
        if (any)
            live[nlive++] = r;
    }
#pragma omp parallel for collapse(2) schedule(static) if (threaded(volume, nlive * n))
    for (int l = 0; l < nlive; ++l)
        for (int s = 0; s < volume; ++s) {
            const int r = live[l];
            caxpy_site(n, k, ar[r], ai[r], x, (size_t)r * stride + (size_t)s * 2 * n, y);
        }
    return WD_OK;
}

static wd_status cpu_cdot_norm2(int volume, int n, const float *x, const float *y, double res[3])
{
    const float *xs[1] = {x};
    double xx[2];
    wd_status st = cpu_multi_cdot(volume, n, 1, xs, y, res);
    if (st == WD_OK && (st = cpu_multi_cdot(volume, n, 1, xs, x, xx)) == WD_OK)
        res[2] = xx[0];
    return st;
}

static wd_status cpu_caxpy_norm2(int volume, int n, wd_complex a, const float *x, float *y,
                                 double *norm2)
{
    const float *xs[1] = {x};
    wd_status st = cpu_multi_caxpy(volume, n, 1, &a, xs, y);
    double r[2];
    const float *ys[1] = {y};
    if (st == WD_OK && (st = cpu_multi_cdot(volume, n, 1, ys, y, r)) == WD_OK)
        *norm2 = r[0];
    return st;
}

static wd_status cpu_gather(int count, int floats, const int *sites, const float *in, float *out)
{
#pragma omp parallel for schedule(static) if ((size_t)count * floats >= WD_MG_PARALLEL_MIN)
    for (int i = 0; i < count; ++i)
        memcpy(out + (size_t)i * floats, in + (size_t)sites[i] * floats, floats * sizeof *out);
    return WD_OK;
}

static wd_status cpu_scatter(int count, int floats, const int *sites, const float *in, float *out)
{
#pragma omp parallel for schedule(static) if ((size_t)count * floats >= WD_MG_PARALLEL_MIN)
    for (int i = 0; i < count; ++i)
        memcpy(out + (size_t)sites[i] * floats, in + (size_t)i * floats, floats * sizeof *out);
    return WD_OK;
}

static wd_status cpu_block_apply(int volume, int n, const float *b, const float *in, float *out)
{
#pragma omp parallel for schedule(static) if (threaded(volume, n))
    for (int s = 0; s < volume; ++s) {
        const float *x = in + (size_t)s * 2 * n;
        float *y = out + (size_t)s * 2 * n;
        for (int i = 0; i < n; ++i) {
            float re = 0.0f, im = 0.0f;
            for (int j = 0; j < n; ++j) {
                const float *m = b + 2 * (((size_t)s * n + j) * n + i);
                re += m[0] * x[j] - m[1] * x[n + j];
                im += m[0] * x[n + j] + m[1] * x[j];
            }
            y[i] = re;
            y[n + i] = im;
        }
    }
    return WD_OK;
}

/* the fine field's component a of site x as float (re, im) */
static void fine_load(const wd_mg_dev_transfer *t, const void *fine, size_t x, int a, float *re,
                      float *im)
{
    if (t->fine_host) {
        const double *f = (const double *)fine + 2 * (x * t->n_fine + a);
        *re = (float)f[0];
        *im = (float)f[1];
    } else {
        const float *f = (const float *)fine + x * 2 * t->n_fine;
        *re = f[a];
        *im = f[t->n_fine + a];
    }
}

size_t wd_mg_vector_bytes(int precision, int n_fine, size_t count)
{
    return count * (size_t)n_fine * 2 * (precision == 2 ? sizeof(short) : sizeof(float));
}

void wd_mg_pack_vectors(int precision, int n_fine, size_t first, size_t count, const double *v,
                        void *out, float *norm)
{
    const size_t reals = 2 * (size_t)n_fine;
#pragma omp parallel for schedule(static) if (count * reals >= WD_MG_PARALLEL_MIN)
    for (size_t i = 0; i < count; ++i) {
        const double *src = v + (first + i) * reals;
        if (precision != 2) {
            for (size_t r = 0; r < reals; ++r)
                ((float *)out)[i * reals + r] = (float)src[r];
            continue;
        }
        double m = 0;
        for (size_t r = 0; r < reals; ++r)
            m = fmax(m, fabs(src[r]));
        norm[i] = (float)m;
        const double scale = norm[i] > 0 ? WD_HALF_SCALE / (double)norm[i] : 0;
        for (size_t r = 0; r < reals; ++r)
            ((short *)out)[i * reals + r] = (short)lrint(src[r] * scale);
    }
}

/* the (re, im) of component a of null vector k at site x (vs = x nvec +
 * k) in float (wd_mg_dev.h's reading of 16-bit vectors) */
static void vector_load(const wd_mg_dev_transfer *t, size_t vs, int a, float *re, float *im)
{
    const size_t at = 2 * (vs * t->n_fine + (size_t)a);
    if (t->v_precision == 2) {
        const float sc = t->v_norm[vs] * WD_HALF_INV_SCALE;
        *re = wd_s2f(((const short *)t->v)[at]) * sc;
        *im = wd_s2f(((const short *)t->v)[at + 1]) * sc;
    } else {
        *re = ((const float *)t->v)[at];
        *im = ((const float *)t->v)[at + 1];
    }
}

wd_status wd_mg_dev_transfer_check(const wd_mg_dev_transfer *t)
{
    return t->v_precision == 4 || (t->v_precision == 2 && t->v_norm)
               ? WD_OK
               : wd_fail(WD_ERR_INVALID, "multigrid transfer: null vectors in precision %d "
                         "(4, or 2 with norms)", t->v_precision);
}

static wd_status cpu_restrict(const wd_mg_dev_transfer *t, float *coarse, const void *fine)
{
    const int nv = t->nvec, nf = t->n_fine, h = nf / 2, bv = t->block_volume, nc = 2 * nv;
    if (wd_mg_dev_transfer_check(t) != WD_OK)
        return WD_ERR_INVALID;
#pragma omp parallel for schedule(static) if (threaded(t->fine_volume, nf))
    for (int b = 0; b < t->coarse_volume; ++b) {
        float *cr = coarse + (size_t)b * 2 * nc, *ci = cr + nc;
        for (int chi = 0; chi < 2; ++chi)
            for (int k = 0; k < nv; ++k) {
                float re = 0, im = 0;
                for (int j = 0; j < bv; ++j) {
                    const size_t x = (size_t)t->sites[(size_t)b * bv + j];
                    for (int a = 0; a < h; ++a) {
                        float fr, fi, vr, vi;
                        fine_load(t, fine, x, chi * h + a, &fr, &fi);
                        vector_load(t, x * nv + k, chi * h + a, &vr, &vi);
                        re += vr * fr + vi * fi;
                        im += vr * fi - vi * fr;
                    }
                }
                cr[chi * nv + k] = re;
                ci[chi * nv + k] = im;
            }
    }
    return WD_OK;
}

static wd_status cpu_prolong(const wd_mg_dev_transfer *t, void *fine, const float *coarse)
{
    const int nv = t->nvec, nf = t->n_fine, h = nf / 2, nc = 2 * nv;
    if (wd_mg_dev_transfer_check(t) != WD_OK)
        return WD_ERR_INVALID;
#pragma omp parallel for schedule(static) if (threaded(t->fine_volume, nf))
    for (int xi = 0; xi < t->fine_volume; ++xi) {
        const size_t x = (size_t)(t->fine_sites ? t->fine_sites[xi] : xi);
        const float *cr = coarse + (size_t)t->agg[x] * 2 * nc, *ci = cr + nc;
        for (int a = 0; a < nf; ++a) {
            const int off = (a >= h) * nv;
            float re = 0, im = 0;
            for (int k = 0; k < nv; ++k) {
                float vr, vi;
                vector_load(t, x * nv + k, a, &vr, &vi);
                re += vr * cr[off + k] - vi * ci[off + k];
                im += vr * ci[off + k] + vi * cr[off + k];
            }
            if (t->fine_host) {
                double *f = (double *)fine + 2 * (x * nf + a);
                f[0] = re;
                f[1] = im;
            } else {
                float *f = (float *)fine + x * 2 * nf;
                f[a] = re;
                f[nf + a] = im;
            }
        }
    }
    return WD_OK;
}

const wd_mg_dev_ops wd_mg_dev_cpu_ops = {
    .name = "cpu",
    .alloc = cpu_alloc,
    .free = cpu_free,
    .h2d = cpu_copy_bytes,
    .d2h = cpu_copy_bytes,
    .apply = cpu_apply,
    .gather = cpu_gather,
    .scatter = cpu_scatter,
    .block_apply = cpu_block_apply,
    .zero = cpu_zero,
    .copy = cpu_copy,
    .scale = cpu_scale,
    .xmy = cpu_xmy,
    .multi_caxpy = cpu_multi_caxpy,
    .multi_cdot = cpu_multi_cdot,
    .cdot_norm2 = cpu_cdot_norm2,
    .caxpy_norm2 = cpu_caxpy_norm2,
    .restrict_ = cpu_restrict,
    .prolong = cpu_prolong,
    .apply_half = cpu_apply_half,
    .pack_half = cpu_pack_half,
    .move_half = cpu_move_half,
    .xmy_half = cpu_xmy_half,
    .apply_multi = cpu_apply_multi,
    .lanes_cdot = cpu_lanes_cdot,
    .lanes_caxpy = cpu_lanes_caxpy,
    .g5 = cpu_g5,
};
