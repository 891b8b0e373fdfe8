/*
 * test_mg_build: the GPU build of the first coarse operator
 * (wd_mg_coarse_build_cuda, mg_build_cuda.cu) against the host's
 * wd_mg_coarse_build on the same fresh random inputs.
 *
 *   test_mg_build [--seed N]    (default seed: the time, printed; exit 77
 *                               without a usable GPU)
 *
 * Cases: lattices 8^4 and 4x4x4x8 (its 4^4 blocks leave a coarse extent
 * of 1: periodic self-links) x blocks 4^4 and 2^4 x nvec 8 and 24 x
 * Wilson and clover (c_sw 1.5) x time boundary +1 and -1; Haar-random
 * links, random null vectors block-orthonormalised.  Checks per case:
 *   links   max |D_c(gpu) - D_c(host)| / max |D_c(host)| over every entry
 *           of the 9 blocks of every coarse site: 1e-12 (the GPU's output
 *           poisoned with NaN first: every entry written; the host's
 *           asserted non-zero)
 *   repeat  a second GPU build, its null vectors in device memory: the
 *           same bytes
 *   start   wd_mg_random_start_cuda against wd_mg_random_start on a block
 *           off the origin of a larger lattice: the same bits, the parts
 *           in [-1, 1)
 *   orth    (Wilson, tbc +1) wd_mg_orthonormalise_cuda of the raw vectors
 *           against the host's wd_mg_orthonormalise: 1e-12 relative to the
 *           largest entry; its floats and (a second run) 16-bit vectors
 *           rounded on the device wd_mg_pack_vectors's bits, the 16-bit
 *           within 1.6e-5 of their norm; the vectors stored in device memory one by
 *           one (wd_mg_vector_set_cuda) the raw bytes, and orthonormalised
 *           there the same bytes as the first run; a vector made -2
 *           times the first refused (WD_ERR_INVALID naming vector 1)
 *   pack    wd_mg_coarse_pack_cuda on 48 coarse sites of random links
 *           (local blocks diagonally dominant), nvec 8, 16, 24, 32, single
 *           and half, outputs poisoned first: the packed links
 *           wd_pack_coarse_links's bytes (alone and with the even-odd
 *           blocks); max |X X^-1 - 1| <= 1e-5; each hop H_d = X^-1 Y_d
 *           unpacked, max |X H_d - Y_d| / max |Y_d| <= 1e-5 (single), 5e-3
 *           (half); block 8 zero; a zero local block refused naming the
 *           lowest such site
 * One line per check; "N of M failed" last; exit 0 when all pass.
 */
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clover_field.h"
#include "cuda_rt.h"
#include "gauge_tools.h"
#include "rng.h"
#include "wd_coarse_layout.h"
#include "wd_mg.h"
#include "wd_mg_dev.h"
#include "wdirac.h"

static int checks_run, checks_failed;

static void *xalloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p) {
        fprintf(stderr, "test_mg_build: out of memory\n");
        exit(1);
    }
    return p;
}

static void check(const char *name, double err, double tol)
{
    ++checks_run;
    const int ok = err <= tol && isfinite(err);
    checks_failed += !ok;
    printf("%-62s %s  err=%.2e tol=%.0e\n", name, ok ? "OK  " : "FAIL", err, tol);
}

static void check_true(const char *name, int ok, const char *detail)
{
    ++checks_run;
    checks_failed += !ok;
    printf("%-62s %s  %s\n", name, ok ? "OK  " : "FAIL", detail);
}

static void poison(double complex *x, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        x[i] = CMPLX(NAN, NAN);
}

/* max |a - b| / max |b|; infinite when b is zero or anything is not finite */
static double max_rel(const double complex *a, const double complex *b, size_t n)
{
    double diff = 0, top = 0;
    for (size_t i = 0; i < n; ++i) {
        const double d = cabs(a[i] - b[i]), m = cabs(b[i]);
        if (!isfinite(d) || !isfinite(m))
            return INFINITY;
        diff = d > diff ? d : diff;
        top = m > top ? m : top;
    }
    return top > 0 ? diff / top : INFINITY;
}

/* the GPU orthonormalisation of raw (t's vectors before the host's) against
 * the host's t->v; twice the same bytes; a dependent vector refused */
static void test_orth(const char *tag, const wd_mg_transfer *t, const double complex *raw)
{
    char name[192];
    const size_t n = (size_t)t->nvec * t->fine_volume * 12;
    double complex *g = xalloc(n * sizeof *g), *again = xalloc(n * sizeof *again);
    memcpy(g, raw, n * sizeof *g);
    memcpy(again, raw, n * sizeof *g);
    int done = 0, done2 = 0;
    /* the first run also rounds to float on the device (poisoned first) */
    float *dvf = NULL, *vf = xalloc(2 * n * sizeof *vf);
    wd_status st = wd_cuda_malloc((void **)&dvf, 2 * n * sizeof *vf, "test floats");
    for (size_t i = 0; i < 2 * n; ++i)
        vf[i] = NAN;
    if (st == WD_OK)
        st = wd_cuda_h2d(dvf, vf, 2 * n * sizeof *vf);
    if (st == WD_OK)
        st = wd_mg_orthonormalise_cuda(0, t->fine_volume, t->nvec, t->block_volume,
                                       t->coarse_volume, t->sites, (double *)g, 0, 4, dvf, NULL,
                                       &done);
    /* the repeat on vectors in device memory, stored there vector by
     * vector (wd_mg_vector_set_cuda) from fields in the host order */
    void *dagain = NULL, *dfield = NULL;
    double complex *field = xalloc(t->fine_volume * 12 * sizeof *field);
    if (st == WD_OK)
        st = wd_cuda_malloc(&dagain, n * sizeof *g, "test vectors");
    if (st == WD_OK)
        st = wd_cuda_memset(dagain, 0xff, n * sizeof *g);
    if (st == WD_OK)
        st = wd_cuda_malloc(&dfield, t->fine_volume * 12 * sizeof *field, "test field");
    for (int k = 0; k < t->nvec && st == WD_OK; ++k) {
        for (size_t x = 0; x < t->fine_volume; ++x)
            memcpy(field + 12 * x, raw + (x * t->nvec + k) * 12, 12 * sizeof *field);
        if ((st = wd_cuda_h2d(dfield, field, t->fine_volume * 12 * sizeof *field)) == WD_OK)
            st = wd_mg_vector_set_cuda(t->fine_volume, t->nvec, k, (const double *)dfield,
                                       (double *)dagain);
        if (st == WD_OK)
            st = wd_cuda_sync();
    }
    if (st == WD_OK)
        st = wd_cuda_d2h(again, dagain, n * sizeof *g);
    snprintf(name, sizeof name, "%s: gpu vectors stored vector by vector", tag);
    check_true(name, st == WD_OK && !memcmp(again, raw, n * sizeof *g), "the raw vectors' bytes");
    /* this run rounds to 16 bits (poisoned first) */
    const size_t count = t->fine_volume * (size_t)t->nvec;
    void *dhalf = NULL, *dnorm = NULL;
    short *half = xalloc(2 * n * sizeof *half), *want_half = xalloc(2 * n * sizeof *half);
    float *norm = xalloc(count * sizeof *norm), *want_norm = xalloc(count * sizeof *norm);
    if (st == WD_OK && (st = wd_cuda_malloc(&dhalf, 2 * n * sizeof *half, "test half")) == WD_OK)
        st = wd_cuda_memset(dhalf, 0x7f, 2 * n * sizeof *half);
    if (st == WD_OK && (st = wd_cuda_malloc(&dnorm, count * sizeof *norm, "test norms")) == WD_OK)
        st = wd_cuda_memset(dnorm, 0xff, count * sizeof *norm);
    if (st == WD_OK)
        st = wd_mg_orthonormalise_cuda(0, t->fine_volume, t->nvec, t->block_volume,
                                       t->coarse_volume, t->sites, (double *)dagain, 1, 2, dhalf,
                                       dnorm, &done2);
    if (st == WD_OK)
        st = wd_cuda_d2h(again, dagain, n * sizeof *g);
    if (st == WD_OK)
        st = wd_cuda_d2h(half, dhalf, 2 * n * sizeof *half);
    if (st == WD_OK)
        st = wd_cuda_d2h(norm, dnorm, count * sizeof *norm);
    wd_mg_pack_vectors(2, 12, 0, count, (const double *)again, want_half, want_norm);
    double worst = 0;   /* |unpacked - v| / the vector-site's norm */
    for (size_t i = 0; i < count; ++i)
        for (int r = 0; r < 24; ++r) {
            const double got = want_half[24 * i + r] * (double)want_norm[i] / 32767;
            const double e = fabs(got - ((const double *)again)[24 * i + r]) / want_norm[i];
            worst = fmax(worst, isfinite(e) ? e : INFINITY);
        }
    snprintf(name, sizeof name, "%s: gpu orthonormalisation's 16-bit vectors", tag);
    char detail[160];
    snprintf(detail, sizeof detail, "the host's bits; rounding %.2e of a norm (<= 1.6e-5)",
             worst);
    check_true(name, st == WD_OK && !memcmp(half, want_half, 2 * n * sizeof *half) &&
                         !memcmp(norm, want_norm, count * sizeof *norm) && worst <= 1.6e-5,
               detail);
    wd_cuda_free(dhalf);
    wd_cuda_free(dnorm);
    free(half);
    free(want_half);
    free(norm);
    free(want_norm);
    wd_cuda_free(dagain);
    wd_cuda_free(dfield);
    free(field);
    if (st == WD_OK)
        st = wd_cuda_d2h(vf, dvf, 2 * n * sizeof *vf);
    float *want_vf = xalloc(2 * n * sizeof *want_vf);
    wd_mg_pack_vectors(4, 12, 0, t->fine_volume * (size_t)t->nvec, (const double *)g, want_vf,
                       NULL);
    snprintf(name, sizeof name, "%s: gpu orthonormalisation's floats", tag);
    check_true(name, st == WD_OK && !memcmp(vf, want_vf, 2 * n * sizeof *vf),
               "wd_mg_pack_vectors's bits of the downloaded double");
    free(want_vf);
    wd_cuda_free(dvf);
    free(vf);
    snprintf(name, sizeof name, "%s: gpu orthonormalisation vs host", tag);
    if (st != WD_OK || !done || !done2)
        check_true(name, 0, st != WD_OK ? wd_last_error() : "not taken");
    else
        check(name, max_rel(g, t->v, n), 1e-12);
    snprintf(name, sizeof name, "%s: gpu orthonormalisation repeat in device memory", tag);
    check_true(name, st == WD_OK && !memcmp(g, again, n * sizeof *g), "the same bytes");
    /* vector 1 a multiple of vector 0 at every site */
    memcpy(g, raw, n * sizeof *g);
    for (size_t x = 0; x < t->fine_volume; ++x)
        for (int a = 0; a < 12; ++a)
            g[(x * t->nvec + 1) * 12 + a] = -2 * g[(x * t->nvec) * 12 + a];
    st = wd_mg_orthonormalise_cuda(0, t->fine_volume, t->nvec, t->block_volume,
                                   t->coarse_volume, t->sites, (double *)g, 0, 4, NULL, NULL,
                                   &done);
    snprintf(name, sizeof name, "%s: gpu orthonormalisation refuses a dependent vector", tag);
    check_true(name, st == WD_ERR_INVALID && strstr(wd_last_error(), "null vector 1 "),
               wd_last_error());
    free(g);
    free(again);
}

static void test_case(uint64_t seed, const int dims[4], const int block[4], int nvec, int clover,
                      int tbc)
{
    const size_t vol = wd_volume(dims);
    const double mass = -0.4, kappa = 0.5 / (4.0 + mass), csw = 1.5;
    char tag[128], name[192];
    snprintf(tag, sizeof tag, "%dx%dx%dx%d block %dx%dx%dx%d nvec %d %s tbc %+d", dims[0],
             dims[1], dims[2], dims[3], block[0], block[1], block[2], block[3], nvec,
             clover ? "clover" : "wilson", tbc);
    wd_rng rng;
    wd_rng_seed(&rng, seed);
    double complex *u = xalloc(vol * 36 * sizeof *u);
    wd_gauge_random(u, dims, &rng);
    double *blocks = NULL;
    if (clover) {
        blocks = xalloc(vol * WD_CLOVER_SITE_REALS * sizeof *blocks);
        wd_grid grid;
        const int procs[4] = {1, 1, 1, 1};
        if (wd_grid_make(&grid, dims, procs, 1, 0, 4) != WD_OK ||
            wd_clover_field(blocks, (const double *)u, &grid, csw / (4.0 + mass)) != WD_OK) {
            snprintf(name, sizeof name, "%s: clover field", tag);
            check_true(name, 0, wd_last_error());
            free(blocks);
            free(u);
            return;
        }
    }

    wd_mg_op fine, coarse;
    wd_mg_transfer t;
    memset(&coarse, 0, sizeof coarse);
    memset(&t, 0, sizeof t);
    wd_status st = wd_mg_op_fine(&fine, dims, NULL, (const double *)u, blocks, kappa, tbc);
    if (st == WD_OK)
        st = wd_mg_transfer_init(&t, 0, dims, 12, block, nvec, 0);
    double complex *raw = NULL;
    const size_t n = (size_t)nvec * vol * 12;
    if (st == WD_OK) {
        for (size_t i = 0; i < n; ++i)
            t.v[i] = CMPLX(wd_rng_normal(&rng), wd_rng_normal(&rng));
        raw = xalloc(n * sizeof *raw);
        memcpy(raw, t.v, n * sizeof *raw);
        st = wd_mg_orthonormalise(&t, 0);
    }
    if (st == WD_OK && !clover && tbc == 1)
        test_orth(tag, &t, raw);
    free(raw);
    if (st == WD_OK)
        st = wd_mg_coarse_build(&coarse, &fine, &t);
    if (st != WD_OK) {
        snprintf(name, sizeof name, "%s: host build", tag);
        check_true(name, 0, wd_last_error());
    } else {
        const size_t nc = 2 * (size_t)nvec, count = t.coarse_volume * 9 * nc * nc;
        double complex *gpu = xalloc(count * sizeof *gpu), *again = xalloc(count * sizeof *again);
        const wd_mg_build_fine bf = {.dims = {dims[0], dims[1], dims[2], dims[3]},
                                     .volume = vol, .nbr = fine.nbr, .u = (const double *)u,
                                     .clover = blocks, .kappa = kappa, .tbc = tbc,
                                     .t0 = 0, .nt = dims[3]};
        poison(gpu, count);
        poison(again, count);
        st = wd_mg_coarse_build_cuda(&bf, nvec, t.block_volume, t.coarse_volume, t.agg, t.sites,
                                     (const double *)t.v, 0, (double *)gpu);
        /* the repeat from vectors in device memory */
        void *dv = NULL;
        if (st == WD_OK && (st = wd_cuda_malloc(&dv, n * sizeof *t.v, "test vectors")) == WD_OK)
            st = wd_cuda_h2d(dv, t.v, n * sizeof *t.v);
        if (st == WD_OK)
            st = wd_mg_coarse_build_cuda(&bf, nvec, t.block_volume, t.coarse_volume, t.agg,
                                         t.sites, (const double *)dv, 1, (double *)again);
        wd_cuda_free(dv);
        if (st != WD_OK) {
            snprintf(name, sizeof name, "%s: gpu build", tag);
            check_true(name, 0, wd_last_error());
        } else {
            snprintf(name, sizeof name, "%s: links", tag);
            check(name, max_rel(gpu, coarse.links, count), 1e-12);
            snprintf(name, sizeof name, "%s: repeat from device memory", tag);
            check_true(name, !memcmp(gpu, again, count * sizeof *gpu), "the same bytes");
        }
        free(gpu);
        free(again);
    }
    wd_mg_op_free(&coarse);
    wd_mg_transfer_free(&t);
    wd_mg_op_free(&fine);
    free(blocks);
    free(u);
}

/* the GPU's random start against the host's, bit for bit, on a block
 * that lies off the origin of a larger lattice */
static void test_random_start(uint64_t seed)
{
    const int dims[4] = {4, 4, 4, 8}, ext[4] = {8, 4, 4, 16}, org[4] = {4, 0, 0, 8}, n = 12;
    const size_t count = (size_t)wd_volume(dims) * n;
    double complex *h = xalloc(count * sizeof *h), *g = xalloc(count * sizeof *g);
    void *dv = NULL;
    poison(g, count);
    wd_mg_random_start(dims, ext, org, seed, n, h);
    wd_status st = wd_cuda_malloc(&dv, count * sizeof *g, "test start");
    if (st == WD_OK)
        st = wd_mg_random_start_cuda(dims, ext, org, seed, n, (double *)dv);
    if (st == WD_OK)
        st = wd_cuda_sync();
    if (st == WD_OK)
        st = wd_cuda_d2h(g, dv, count * sizeof *g);
    double lo = 1, hi = -1;
    for (size_t i = 0; i < count; ++i) {
        lo = fmin(lo, fmin(creal(h[i]), cimag(h[i])));
        hi = fmax(hi, fmax(creal(h[i]), cimag(h[i])));
    }
    char detail[128];
    snprintf(detail, sizeof detail, "%s; host parts in [%.3f, %.3f]",
             st == WD_OK ? "memcmp" : wd_last_error(), lo, hi);
    check_true("random start: the GPU's bits are the host's", st == WD_OK &&
                   !memcmp(g, h, count * sizeof *g) && lo >= -1 && hi < 1 && hi - lo > 1.9,
               detail);
    wd_cuda_free(dv);
    free(h);
    free(g);
}

/* x y of n x n row-major complex matrices into out */
static void matmul(int n, const double complex *x, const double complex *y, double complex *out)
{
    for (int r = 0; r < n; ++r)
        for (int c = 0; c < n; ++c) {
            double complex acc = 0;
            for (int k = 0; k < n; ++k)
                acc += x[(size_t)r * n + k] * y[(size_t)k * n + c];
            out[(size_t)r * n + c] = acc;
        }
}

/* block blk of a packed layout back to row-major complex double */
static void unpack_block(const wd_coarse_layout *lay, const void *packed, const float *norm,
                         size_t blk, double complex *out)
{
    const int n = lay->ncomp;
    const size_t base = blk * 2 * (size_t)n * n;
    const double scale = lay->precision == 2 ? norm[blk] / (double)WD_HALF_SCALE : 1;
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) {
            const size_t re = base + 2 * (size_t)j * n + i, im = re + (size_t)n;
            out[(size_t)i * n + j] =
                lay->precision == 4
                    ? CMPLX(((const float *)packed)[re], ((const float *)packed)[im])
                    : CMPLX(((const short *)packed)[re] * scale,
                            ((const short *)packed)[im] * scale);
        }
}

/* wd_mg_coarse_pack_cuda on fresh random links of V coarse sites (local
 * blocks diagonally dominant): the packed links the host's bits; X^-1
 * with |X X^-1 - 1| small; each hop H_d with |X H_d - Y_d| small and
 * block 8 zero; a zero local block refused naming its site */
static void test_coarse_pack(uint64_t seed, int nvec, int precision)
{
    enum { V = 48 };
    const int n = 2 * nvec, h = V / 2;
    const size_t nn = (size_t)n * n, count = (size_t)V * 9 * nn;
    char name[160], detail[192];
    wd_rng rng;
    wd_rng_seed(&rng, seed);
    double complex *links = xalloc(count * sizeof *links);
    for (size_t i = 0; i < count; ++i)
        links[i] = CMPLX(wd_rng_normal(&rng), wd_rng_normal(&rng));
    for (int s = 0; s < V; ++s)
        for (int i = 0; i < n; ++i)
            links[((size_t)s * 9 + 8) * nn + (size_t)i * n + i] += 2.0 * n;
    int slot[V];
    for (int s = 0; s < V; ++s)
        slot[s] = s % 2 * h + s / 2;
    wd_coarse_layout lay, hlay;
    wd_status st = wd_coarse_layout_make(&lay, V, nvec, precision);
    if (st == WD_OK)
        st = wd_coarse_layout_make(&hlay, h, nvec, precision);
    unsigned char *want = xalloc(lay.link_bytes), *got = xalloc(lay.link_bytes);
    float *want_norm = xalloc(lay.link_norm_bytes + 4), *got_norm = xalloc(lay.link_norm_bytes + 4);
    float *xinv = xalloc(nn * V * 2 * sizeof *xinv);
    unsigned char *hops[2] = {xalloc(hlay.link_bytes), xalloc(hlay.link_bytes)};
    float *hnorm[2] = {xalloc(hlay.link_norm_bytes + 4), xalloc(hlay.link_norm_bytes + 4)};
    if (st == WD_OK)
        wd_pack_coarse_links(&lay, want, want_norm, links);
    void *d[8] = {NULL};
    const size_t sizes[8] = {lay.link_bytes, lay.link_norm_bytes + 4, nn * V * 2 * sizeof(float),
                             hlay.link_bytes, hlay.link_bytes, hlay.link_norm_bytes + 4,
                             hlay.link_norm_bytes + 4, 0};
    for (int i = 0; i < 7 && st == WD_OK; ++i)
        if ((st = wd_cuda_malloc(&d[i], sizes[i], "test pack")) == WD_OK)
            st = wd_cuda_memset(d[i], 0xff, sizes[i]);   /* NaN floats, -1 shorts */
    wd_mg_coarse_pack pk = {.n = n, .volume = V, .precision = precision,
                            .links = (const double *)links, .dlinks = d[0],
                            .dlink_norm = precision == 2 ? d[1] : NULL};
    /* the links alone, then with the even-odd solve's blocks */
    for (int eo = 0; eo < 2; ++eo) {
        if (eo) {
            pk.slot = slot;
            pk.half_volume = h;
            pk.dxinv = d[2];
            pk.dhops[0] = d[3];
            pk.dhops[1] = d[4];
            pk.dhop_norm[0] = precision == 2 ? d[5] : NULL;
            pk.dhop_norm[1] = precision == 2 ? d[6] : NULL;
            if (st == WD_OK)
                st = wd_cuda_memset(d[0], 0xff, sizes[0]);
        }
        if (st == WD_OK)
            st = wd_mg_coarse_pack_cuda(&pk, 1);
        if (st == WD_OK)
            st = wd_cuda_d2h(got, d[0], lay.link_bytes);
        if (st == WD_OK && precision == 2)
            st = wd_cuda_d2h(got_norm, d[1], lay.link_norm_bytes);
        snprintf(name, sizeof name, "pack nvec %d prec %d%s: links the host's bytes", nvec,
                 precision, eo ? " (even-odd)" : "");
        check_true(name, st == WD_OK && !memcmp(got, want, lay.link_bytes) &&
                             (precision == 4 || !memcmp(got_norm, want_norm, lay.link_norm_bytes)),
                   st == WD_OK ? "memcmp" : wd_last_error());
    }
    if (st == WD_OK)
        st = wd_cuda_d2h(xinv, d[2], nn * V * 2 * sizeof *xinv);
    for (int p = 0; p < 2 && st == WD_OK; ++p)
        if ((st = wd_cuda_d2h(hops[p], d[3 + p], hlay.link_bytes)) == WD_OK && precision == 2)
            st = wd_cuda_d2h(hnorm[p], d[5 + p], hlay.link_norm_bytes);
    /* |X X^-1 - 1| and |X H_d - Y_d| / max |Y_d| over every site, in float64 */
    double complex *xi = xalloc(nn * sizeof *xi), *hd = xalloc(nn * sizeof *hd),
                   *prod = xalloc(nn * sizeof *prod);
    double inv_err = st == WD_OK ? 0 : INFINITY, hop_err = inv_err, zero_err = inv_err;
    for (int s = 0; s < V && st == WD_OK; ++s) {
        const double complex *x = links + ((size_t)s * 9 + 8) * nn;
        for (int i = 0; i < n; ++i)
            for (int j = 0; j < n; ++j) {
                const float *o = xinv + 2 * (((size_t)s * n + j) * n + i);
                xi[(size_t)i * n + j] = CMPLX(o[0], o[1]);
            }
        matmul(n, x, xi, prod);
        for (size_t e = 0; e < nn; ++e) {
            const double err = cabs(prod[e] - (e % (n + 1) == 0));
            inv_err = fmax(inv_err, isfinite(err) ? err : INFINITY);
        }
        const int p = slot[s] / h;
        for (int dd = 0; dd < 9; ++dd) {
            unpack_block(&hlay, hops[p], hnorm[p], (size_t)(slot[s] % h) * 9 + dd, hd);
            if (dd == 8) {
                for (size_t e = 0; e < nn; ++e)
                    zero_err = fmax(zero_err, isfinite(cabs(hd[e])) ? cabs(hd[e]) : INFINITY);
                continue;
            }
            const double complex *y = links + ((size_t)s * 9 + dd) * nn;
            matmul(n, x, hd, prod);
            double diff = 0, top = 0;
            for (size_t e = 0; e < nn; ++e) {
                diff = fmax(diff, isfinite(cabs(prod[e] - y[e])) ? cabs(prod[e] - y[e]) : INFINITY);
                top = fmax(top, cabs(y[e]));
            }
            hop_err = fmax(hop_err, top > 0 ? diff / top : INFINITY);
        }
    }
    snprintf(name, sizeof name, "pack nvec %d prec %d: max |X X^-1 - 1| (single X^-1)", nvec,
             precision);
    check(name, inv_err, 1e-5);
    snprintf(name, sizeof name, "pack nvec %d prec %d: max |X H_d - Y_d| / max |Y_d|", nvec,
             precision);
    check(name, hop_err, precision == 4 ? 1e-5 : 5e-3);
    snprintf(name, sizeof name, "pack nvec %d prec %d: the hops' block 8 zero", nvec, precision);
    check(name, zero_err, 0);
    /* a singular local block (sites 7 and 30 zero): refused naming site 7 */
    for (int s = 7; s < V; s += 23)
        memset(links + ((size_t)s * 9 + 8) * nn, 0, nn * sizeof *links);
    const wd_status bad = st == WD_OK ? wd_mg_coarse_pack_cuda(&pk, 1) : st;
    snprintf(detail, sizeof detail, "%s", bad == WD_ERR_INVALID ? wd_last_error() : "accepted");
    snprintf(name, sizeof name, "pack nvec %d prec %d: a singular block refused", nvec, precision);
    check_true(name, bad == WD_ERR_INVALID && strstr(detail, "coarse site 7 ") != NULL, detail);
    for (int i = 0; i < 7; ++i)
        wd_cuda_free(d[i]);
    free(xi);
    free(hd);
    free(prod);
    free(links);
    free(want);
    free(got);
    free(want_norm);
    free(got_norm);
    free(xinv);
    for (int p = 0; p < 2; ++p) {
        free(hops[p]);
        free(hnorm[p]);
    }
}

int main(int argc, char **argv)
{
    uint64_t seed = (uint64_t)time(NULL);
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            seed = strtoull(argv[++i], NULL, 10);
        } else {
            fprintf(stderr, "usage: test_mg_build [--seed N]\n");
            return 2;
        }
    }
    wd_cuda_info info;
    if (!wd_cuda_available() || wd_cuda_device_info(&info) != WD_OK) {
        printf("test_mg_build: no usable GPU (%s): skipped\n",
               wd_cuda_available() ? wd_last_error() : "none found or no CUDA in this build");
        return 77;
    }
    printf("test_mg_build: %s, seed %llu\n", info.name, (unsigned long long)seed);
    const int lattices[2][4] = {{8, 8, 8, 8}, {4, 4, 4, 8}};
    const int blocks[2][4] = {{4, 4, 4, 4}, {2, 2, 2, 2}};
    const int nvecs[2] = {8, 24};
    uint64_t c = 0;
    for (int l = 0; l < 2; ++l)
        for (int b = 0; b < 2; ++b)
            for (int n = 0; n < 2; ++n)
                for (int clover = 0; clover < 2; ++clover)
                    for (int tbc = -1; tbc <= 1; tbc += 2)
                        test_case(seed + 1000003u * c++, lattices[l], blocks[b], nvecs[n],
                                  clover, tbc);
    test_random_start(seed);
    for (int nv = 8; nv <= 32; nv += 8)
        for (int prec = 4; prec >= 2; prec -= 2)
            test_coarse_pack(seed + 7 * (uint64_t)nv + (uint64_t)prec, nv, prec);
    printf("%d of %d failed\n", checks_failed, checks_run);
    return checks_failed ? 1 : 0;
}
