/*
 * test_schur: the backend's even-odd Schur operator (schur.c, run on the
 * CPU backend) against the float64 reference ref_schur, for every built
 * precision x reconstruction x gauge fixing, Mhat and Mhat^dag.
 *
 *   test_schur [--seed N] [--backend cpu|cuda]  (default seed: the time, printed;
 *                                               exit 77 when the backend is absent)
 *
 * Fresh random fields per case: random SU(3) and smooth near-unit links
 * (exp(i 0.1 H), where recon 8 is fragile), periodic and antiperiodic time,
 * a random mass.  Gauge-fixed (gf1) operators run on the field transformed
 * to temporal gauge, and so does their reference: the operator is the same
 * matrix there.  Tolerance: the per-application Dslash tolerance of
 * checkdslash (double 1e-13, single 2e-6, half 1e-3; recon 8 x10, on the
 * smooth field x30, double x1e3) times 3 for the two chained applications
 * and the xpay.  A combination whose variants are not built is reported as
 * SKIP, not failed; none built at all fails.
 * Where the backend has the reducing kernel (wd_eo_mhat_reduce: half
 * precision on the GPU), also its output and reductions (fused_case).
 * One line per case; "N of M failed" last; exit 0 when all pass.
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
#include "wd_operator.h"
#include "test_backend.h"
#include "wd_solver.h"

/* --backend cpu|cuda: the backend under test (exit 77 when it is absent) */
static wd_backend_kind backend = WD_BACKEND_CPU;
static int checks_run, checks_failed, skipped;

static double tolerance(int precision, int recon, int smooth)
{
    double tol = precision == 8 ? 1e-13 : precision == 4 ? 2e-6 : 1e-3;
    if (recon == 8)
        tol *= smooth ? (precision == 8 ? 1e3 : 30) : 10;
    return 3 * tol;
}

static void *xalloc(size_t n)
{
    void *p = calloc(1, n);
    if (!p) {
        fprintf(stderr, "test_schur: out of memory\n");
        exit(1);
    }
    return p;
}

static int parity_of(size_t site, const int dims[4])
{
    int p = 0;
    for (int mu = 0; mu < 4; mu++) {
        p += (int)(site % (size_t)dims[mu]);
        site /= (size_t)dims[mu];
    }
    return p & 1;
}

static void report(const char *name, const char *what, int ok, double err, double tol)
{
    checks_run++;
    checks_failed += !ok;
    printf("%-52s %-8s %s err=%.2e tol=%.0e\n", name, what, ok ? "OK  " : "FAIL", err, tol);
}

/* The reducing operator (wd_eo_mhat_reduce, where the backend has the
 * kernel): its output holds the bits of wd_eo_mhat's (written over a
 * poisoned field), and its {<y, out>, |out|^2} equal the float64 sums of
 * the downloaded fields (relative to |y||out| and |out|^2: 1e-6, the
 * device's float dequantization of half precision against the host's
 * double one, as test_blas) and the BLAS's reductions of the same stored
 * fields to 1e-12 (the same products, summed in another order); without y
 * the same |out|^2 to the bit and a zero dot product. */
static wd_status fused_case(const char *name, wd_backend *be, const wd_eo_op *op,
                            const wd_field *fin, wd_field *fout, size_t vol, wd_rng *r)
{
    const size_t n = vol * 12;
    double complex *h = xalloc(n * sizeof *h), *hy = xalloc(n * sizeof *h);
    double complex *want = xalloc(n * sizeof *h), *got = xalloc(n * sizeof *h);
    wd_field fy, fred;
    int made = 0;
    wd_status st = wd_field_create(be, &fy, fin->precision);
    if (st == WD_OK && ++made)
        st = wd_field_create(be, &fred, fin->precision);
    if (st == WD_OK && ++made) {
        wd_spinor_random(hy, be->dims, r);
        wd_spinor_random(h, be->dims, r);
        st = be->ops->upload(be, &fy, (const double *)hy, 0);
    }
    if (st == WD_OK)  /* poison: another random field where the output goes */
        st = be->ops->upload(be, &fred, (const double *)h, 0);
    double res[3] = {0, 0, 0}, res0[3] = {0, 0, 0};
    if (st == WD_OK)
        st = wd_eo_mhat(op, fout, fin, 0);
    if (st == WD_OK)
        st = wd_eo_mhat_reduce(op, &fred, fin, &fy, res);
    if (st == WD_OK) {
        be->ops->download(be, (double *)want, fout, 0);
        be->ops->download(be, (double *)got, &fred, 0);
        be->ops->download(be, (double *)hy, &fy, 0);
        report(name, "fused out", !memcmp(want, got, n * sizeof *got), 0, 0);
        double complex dot = 0;
        double nn = 0, ny = 0;
        for (size_t k = 0; k < n; k++) {
            if (parity_of(k / 12, be->dims))
                continue;
            dot += conj(hy[k]) * got[k];
            nn += creal(got[k] * conj(got[k]));
            ny += creal(hy[k] * conj(hy[k]));
        }
        const double e_dot = cabs(CMPLX(res[0], res[1]) - dot) / sqrt(nn * ny);
        const double e_nn = fabs(res[2] - nn) / nn;
        report(name, "fused <y,out>", e_dot <= 1e-6 && nn > 0 && ny > 0, e_dot, 1e-6);
        report(name, "fused |out|^2", e_nn <= 1e-6, e_nn, 1e-6);
        const wd_complex bdot = wd_blas_cdot(be, &fy, &fred);
        const double bnn = wd_blas_norm2(be, &fred);
        const double e_b = fmax(cabs(CMPLX(res[0] - bdot.re, res[1] - bdot.im)) / sqrt(bnn * ny),
                                fabs(res[2] - bnn) / bnn);
        report(name, "fused=BLAS", e_b <= 1e-12 && be->error == WD_OK, e_b, 1e-12);
        st = wd_eo_mhat_reduce(op, &fred, fin, NULL, res0);
        report(name, "fused y=0", st == WD_OK && res0[0] == 0 && res0[1] == 0 &&
               res0[2] == res[2], fabs(res0[2] - res[2]), 0);
        if (st == WD_OK) {  /* y = out is refused with a message, nothing launched */
            const wd_status sy = wd_eo_mhat_reduce(op, &fred, fin, &fred, res0);
            report(name, "fused y=out refused",
                   sy == WD_ERR_INTERNAL && strstr(wd_last_error(), "out itself"), 0, 0);
        }
    }
    if (made > 1)
        wd_field_destroy(be, &fred);
    if (made > 0)
        wd_field_destroy(be, &fy);
    free(h), free(hy), free(want), free(got);
    return st;
}

typedef struct lattice {
    int dims[4];
    int tbc;
    int smooth;
} lattice;

static const lattice lattices[] = {
    {{4, 4, 4, 4}, -1, 0},
    {{4, 6, 4, 8}, +1, 0},
    {{4, 4, 4, 8}, -1, 1},
};

static void run_case(const lattice *lat, int precision, int recon, int gf, wd_rng *r)
{
    char name[128];
    snprintf(name, sizeof name, "%dx%dx%dx%d %s p%d r%d gf%d tbc%+d", lat->dims[0], lat->dims[1],
             lat->dims[2], lat->dims[3], lat->smooth ? "smooth" : "random", precision, recon, gf,
             lat->tbc);
    for (int dag = 0; dag < 2; dag++)
        for (int xpay = 0; xpay < 2; xpay++)
            if (wd_variant_find_axes(precision, recon, gf, dag, xpay) < 0) {
                printf("%-52s SKIP (variants not built)\n", name);
                skipped++;
                return;
            }
    const int *dims = lat->dims;
    const size_t vol = wd_volume(dims), n = vol * 12;
    double complex *u = xalloc(vol * 36 * sizeof *u), *g = xalloc(vol * 9 * sizeof *g);
    double complex *x = xalloc(n * sizeof *x), *want = xalloc(n * sizeof *x);
    double complex *got = xalloc(n * sizeof *x);
    if (lat->smooth)
        wd_gauge_smooth(u, dims, 0.1, r);
    else
        wd_gauge_random(u, dims, r);
    if (gf) {
        wd_temporal_gauge(g, u, dims);
        wd_gauge_transform(u, g, dims);
    }
    wd_spinor_random(x, dims, r);
    for (size_t s = 0; s < vol; s++)
        if (parity_of(s, dims))
            memset(x + 12 * s, 0, 12 * sizeof *x);
    const double mass = -0.2 + 0.5 * wd_rng_uniform(r);
    const double kappa = 1.0 / (2.0 * (4.0 + mass));

    wd_backend be;
    wd_gauge gauge;
    wd_field fin, fout, ftmp;
    wd_eo_op op;
    wd_status st = wd_backend_open(&be, backend, dims, 3);
    if (st == WD_OK)
        st = wd_gauge_create(&be, &gauge, (const double *)u, precision, recon, gf, lat->tbc);
    if (st == WD_OK)
        st = wd_field_create(&be, &fin, precision);
    if (st == WD_OK)
        st = wd_field_create(&be, &fout, precision);
    if (st == WD_OK)
        st = wd_field_create(&be, &ftmp, precision);
    if (st == WD_OK)
        st = wd_eo_op_init(&op, &be, &gauge, kappa, &ftmp, 1);
    if (st == WD_OK)
        st = be.ops->upload(&be, &fin, (const double *)x, 0);
    for (int dag = 0; dag < 2 && st == WD_OK; dag++) {
        if ((st = wd_eo_mhat(&op, &fout, &fin, dag)) != WD_OK)
            break;
        memset(got, 0, n * sizeof *got);
        be.ops->download(&be, (double *)got, &fout, 0);
        ref_schur(want, u, x, dims, mass, lat->tbc, dag);
        double d = 0, w = 0;
        for (size_t k = 0; k < n; k++) {
            d += creal((got[k] - want[k]) * conj(got[k] - want[k]));
            w += creal(want[k] * conj(want[k]));
        }
        const double err = w > 0 ? sqrt(d / w) : INFINITY;
        const double tol = tolerance(precision, recon, lat->smooth);
        const int ok = err <= tol && be.error == WD_OK;
        checks_run++;
        checks_failed += !ok;
        printf("%-52s %-8s %s rel_l2=%.2e tol=%.0e\n", name, dag ? "Mhat^dag" : "Mhat",
               ok ? "OK  " : "FAIL", err, tol);
    }
    if (st == WD_OK && wd_eo_mhat_reduces(&op))
        st = fused_case(name, &be, &op, &fin, &fout, vol, r);
    if (st != WD_OK) {
        checks_run++;
        checks_failed++;
        printf("%-52s FAIL %s: %s\n", name, wd_status_string(st), wd_last_error());
    }
    if (be.ops) {
        wd_field_destroy(&be, &fin);
        wd_field_destroy(&be, &fout);
        wd_field_destroy(&be, &ftmp);
        wd_gauge_destroy(&be, &gauge);
        wd_backend_close(&be);
    }
    free(u), free(g), free(x), free(want), free(got);
}

int main(int argc, char **argv)
{
    uint64_t seed = (uint64_t)time(NULL);
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
    backend = test_backend_arg(argc, argv);
    printf("test_schur: seed %llu (replay with --seed %llu)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    wd_rng r;
    wd_rng_seed(&r, seed);
    static const int precs[3] = {8, 4, 2}, recons[3] = {18, 12, 8};
    for (size_t li = 0; li < sizeof lattices / sizeof lattices[0]; li++)
        for (int pi = 0; pi < 3; pi++)
            for (int ri = 0; ri < 3; ri++)
                for (int gf = 0; gf < 2; gf++)
                    run_case(&lattices[li], precs[pi], recons[ri], gf, &r);
    if (checks_run == 0) {
        printf("no Schur operator could be tested: no variant family is fully built\n");
        return 1;
    }
    printf("%d skipped (not built)\n%d of %d failed\n", skipped, checks_failed, checks_run);
    return checks_failed ? 1 : 0;
}
