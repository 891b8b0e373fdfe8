/*
 * test_api: the public entry wd_dslash_cpu on host fields, and its errors.
 *
 * Checks, on fresh random fields (seed printed, --seed N to replay):
 *   - wd_dslash_cpu(dslash_d_r12_gf0_dag0_xpay1_n1) equals x + a D in from the
 *     reference on one parity and leaves the other parity of out untouched;
 *   - a gauge-fixed variant on a field in temporal gauge matches the
 *     reference on that field;
 *   - bad input gets the right status and a message, and out is untouched:
 *     unknown variant, odd / small extents, bad parity, bad boundary sign,
 *     xpay without x, a gauge-fixed variant on a field not in temporal gauge,
 *     recon 8 on unit links (which it cannot represent).
 * It uses only the variants dslash_d_r12_gf0_dag0_xpay1_n1,
 * dslash_s_r8_gf1_dag1_xpay0_n1 and dslash_d_r18_gf0_dag0_xpay0_n1 (the CI
 * sanitizer build keeps those).
 */
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gauge_tools.h"
#include "ref_wilson.h"
#include "wdirac.h"

static int failures;

static void check(int ok, const char *what, const char *detail)
{
    printf("%-60s %s%s%s\n", what, ok ? "OK" : "FAIL", detail ? "  " : "", detail ? detail : "");
    failures += !ok;
}

static double rel_diff(const double complex *a, const double complex *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; ++i) {
        num += pow(cabs(a[i] - b[i]), 2);
        den += pow(cabs(b[i]), 2);
    }
    return den > 0 ? sqrt(num / den) : INFINITY;
}

static void expect_error(wd_status got, wd_status want, const char *what,
                         const double complex *out, const double complex *before, size_t n)
{
    char detail[600];
    snprintf(detail, sizeof detail, "[%s] %s", wd_status_string(got), wd_last_error());
    const int untouched = memcmp(out, before, n * sizeof *out) == 0;
    check(got == want && wd_last_error()[0] && untouched, what, detail);
}

int main(int argc, char **argv)
{
    uint64_t seed = (uint64_t)time(NULL);
    if (argc == 3 && !strcmp(argv[1], "--seed"))
        seed = strtoull(argv[2], NULL, 0);
    printf("test_api: seed %llu\n", (unsigned long long)seed);
    /* the variants the checks below name: a build with a -Dkernels filter
     * that leaves one out skips (77) rather than fails */
    static const char *const needed[] = {"dslash_d_r12_gf0_dag0_xpay1_n1",
                                         "dslash_d_r18_gf0_dag0_xpay0_n1",
                                         "dslash_s_r8_gf1_dag1_xpay0_n1"};
    for (size_t k = 0; k < sizeof needed / sizeof needed[0]; k++) {
        int found = 0;
        for (int i = 0; i < wd_variant_count_built(); i++)
            found |= !strcmp(wd_variant_name(i), needed[k]);
        if (!found) {
            printf("test_api: %s is not in this build (-Dkernels); skipped\n", needed[k]);
            return 77;
        }
    }
    wd_rng rng;
    wd_rng_seed(&rng, seed);

    const int dims[4] = {4, 6, 4, 8};
    const size_t vol = wd_volume(dims), ns = vol * 12;
    double complex *u = malloc(vol * 36 * sizeof *u), *g = malloc(vol * 9 * sizeof *g);
    double complex *in = malloc(ns * sizeof *in), *x = malloc(ns * sizeof *x);
    double complex *out = malloc(ns * sizeof *out), *ref = malloc(ns * sizeof *ref);
    double complex *before = malloc(ns * sizeof *before);
    if (!u || !g || !in || !x || !out || !ref || !before) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    wd_gauge_random(u, dims, &rng);
    wd_spinor_random(in, dims, &rng);
    wd_spinor_random(x, dims, &rng);
    wd_spinor_random(out, dims, &rng);
    memcpy(before, out, ns * sizeof *out);

    const double a = -0.0213;
    const int parity = 1;
    wd_status st = wd_dslash_cpu("dslash_d_r12_gf0_dag0_xpay1_n1", (double *)out, (const double *)u,
                                 (const double *)in, (const double *)x, a, dims, parity,
                                 WD_TIME_ANTIPERIODIC, 3);
    ref_dslash_parity(ref, u, in, dims, -1, 0, parity);
    double err = 0;
    int other_untouched = 1;
    {
        double num = 0, den = 0;
        for (size_t s = 0; s < vol; ++s) {
            size_t r = s;
            int p = 0;
            for (int mu = 0; mu < 4; ++mu) {
                p += (int)(r % (size_t)dims[mu]);
                r /= (size_t)dims[mu];
            }
            for (int k = 0; k < 12; ++k) {
                const size_t i = 12 * s + k;
                if ((p & 1) == parity) {
                    const double complex want = x[i] + a * ref[i];
                    num += pow(cabs(out[i] - want), 2);
                    den += pow(cabs(want), 2);
                } else if (out[i] != before[i]) {
                    other_untouched = 0;
                }
            }
        }
        err = sqrt(num / den);
    }
    char detail[128];
    snprintf(detail, sizeof detail, "status %d rel_l2=%.2e tol=1e-13", (int)st, err);
    check(st == WD_OK && err < 1e-13, "xpay double r12 equals x + a D in", detail);
    check(other_untouched, "the other parity of out is untouched", NULL);

    /* gauge-fixed variant on a field in temporal gauge */
    double complex *uf = malloc(vol * 36 * sizeof *uf);
    if (!uf)
        return 1;
    memcpy(uf, u, vol * 36 * sizeof *u);
    wd_temporal_gauge(g, u, dims);
    wd_gauge_transform(uf, g, dims);
    memset(out, 0, ns * sizeof *out);
    st = wd_dslash_cpu("dslash_s_r8_gf1_dag1_xpay0_n1", (double *)out, (const double *)uf,
                       (const double *)in, NULL, 0, dims, 0, WD_TIME_PERIODIC, 0);
    ref_dslash_parity(ref, uf, in, dims, +1, 1, 0);
    err = rel_diff(out, ref, ns);
    snprintf(detail, sizeof detail, "status %d rel_l2=%.2e tol=2e-5", (int)st, err);
    check(st == WD_OK && err < 2e-5, "gauge-fixed single r8 dagger on a temporal-gauge field", detail);

    /* errors: status, message, and out untouched */
    memcpy(before, out, ns * sizeof *out);
    const double *Uh = (const double *)u, *Ih = (const double *)in, *Xp = (const double *)x;
    double *O = (double *)out;
    expect_error(wd_dslash_cpu("dslash_q_r12_gf0_dag0_xpay0_n1", O, Uh, Ih, NULL, 0, dims, 0,
                               WD_TIME_PERIODIC, 0),
                 WD_ERR_NOT_BUILT, "unknown variant name", out, before, ns);
    const int odd[4] = {4, 5, 4, 8}, small[4] = {2, 4, 4, 4};
    expect_error(wd_dslash_cpu("dslash_d_r18_gf0_dag0_xpay0_n1", O, Uh, Ih, NULL, 0, odd, 0,
                               WD_TIME_PERIODIC, 0),
                 WD_ERR_INVALID, "odd extent", out, before, ns);
    expect_error(wd_dslash_cpu("dslash_d_r18_gf0_dag0_xpay0_n1", O, Uh, Ih, NULL, 0, small, 0,
                               WD_TIME_PERIODIC, 0),
                 WD_ERR_INVALID, "extent below 4", out, before, ns);
    expect_error(wd_dslash_cpu("dslash_d_r18_gf0_dag0_xpay0_n1", O, Uh, Ih, NULL, 0, dims, 2,
                               WD_TIME_PERIODIC, 0),
                 WD_ERR_INVALID, "parity 2", out, before, ns);
    expect_error(wd_dslash_cpu("dslash_d_r18_gf0_dag0_xpay0_n1", O, Uh, Ih, NULL, 0, dims, 0,
                               (wd_time_bc)0, 0),
                 WD_ERR_INVALID, "time boundary sign 0", out, before, ns);
    expect_error(wd_dslash_cpu("dslash_d_r12_gf0_dag0_xpay1_n1", O, Uh, Ih, NULL, 0, dims, 0,
                               WD_TIME_PERIODIC, 0),
                 WD_ERR_INVALID, "xpay variant without x", out, before, ns);
    expect_error(wd_dslash_cpu("dslash_s_r8_gf1_dag1_xpay0_n1", O, Uh, Ih, Xp, 0, dims, 0,
                               WD_TIME_PERIODIC, 0),
                 WD_ERR_INVALID, "gauge-fixed variant, field not in temporal gauge", out, before, ns);
    expect_error(wd_dslash_cpu("dslash_d_r18_gf0_dag0_xpay0_n1", O, Uh, Ih, NULL, 0, dims, 0,
                               WD_TIME_PERIODIC, -1),
                 WD_ERR_INVALID, "negative padding", out, before, ns);
    wd_gauge_unit(uf, dims);
    expect_error(wd_dslash_cpu("dslash_s_r8_gf1_dag1_xpay0_n1", O, (const double *)uf, Ih, NULL, 0,
                               dims, 0, WD_TIME_PERIODIC, 0),
                 WD_ERR_INVALID, "recon 8 on unit links (singular reconstruction)", out, before, ns);

    free(u), free(uf), free(g), free(in), free(x), free(out), free(ref), free(before);
    printf("%d failed\n", failures);
    return failures ? 1 : 0;
}
