/*
 * test_gpu_schur: the even-odd operator Mhat_ee = 1 - kappa^2 D_eo D_oe and
 * its dagger on the GPU (wd_gpu_schur) against ref_schur, for every built
 * (precision, recon, gauge fixing); and the GPU backend's refusal of a
 * field that does not fit in GPU memory.  Fresh random SU(3) links and
 * spinors (seed printed, --seed N replays); gauge-fixed variants run on the
 * field in temporal gauge with the source transformed by g and the result by
 * g^dagger.  The output field is poisoned before the operator writes it.
 * Exit 77 without a usable GPU.
 */
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_rt.h"
#include "gauge_tools.h"
#include "ref_wilson.h"
#include "wd_gpu.h"
#include "wd_operator.h"
#include "wd_tune.h"

/* two Dslash applications: twice checkdslash's per-precision tolerance */
static double tolerance(int precision, int recon)
{
    const double tol = precision == 8 ? 4e-14 : precision == 4 ? 2e-6 : 6e-4;
    return recon == 8 ? 50 * tol : tol;
}

static int parity_of(const int dims[4], size_t site)
{
    size_t r = site;
    int sum = 0;
    for (int mu = 0; mu < 4; ++mu) {
        sum += (int)(r % (size_t)dims[mu]);
        r /= (size_t)dims[mu];
    }
    return sum & 1;
}

int main(int argc, char **argv)
{
    uint64_t seed = (uint64_t)time(NULL);
    if (argc == 3 && !strcmp(argv[1], "--seed"))
        seed = strtoull(argv[2], NULL, 0);
    wd_cuda_info info;
    if (!wd_cuda_available() || wd_cuda_device_info(&info) != WD_OK) {
        printf("test_gpu_schur: no usable GPU: skipped\n");
        return 77;
    }
    wd_tune_set_cache("");
    printf("test_gpu_schur: %s, seed %llu\n", info.name, (unsigned long long)seed);

    const int dims[4] = {6, 4, 4, 8};
    const size_t vol = wd_volume(dims), ns = vol * 12;
    const double kappa = 0.124;
    double complex *u = malloc(vol * 36 * sizeof *u), *uf = malloc(vol * 36 * sizeof *uf);
    double complex *g = malloc(vol * 9 * sizeof *g), *in = malloc(ns * sizeof *in);
    double complex *inf = malloc(ns * sizeof *inf), *ref = malloc(ns * sizeof *ref);
    double complex *got = malloc(ns * sizeof *got);
    if (!u || !uf || !g || !in || !inf || !ref || !got)
        return 1;
    wd_rng rng;
    wd_rng_seed(&rng, seed);
    int failed = 0, tested = 0;
    const int precisions[3] = {8, 4, 2}, recons[3] = {18, 12, 8};
    for (int pi = 0; pi < 3; ++pi)
        for (int ri = 0; ri < 3; ++ri)
            for (int gf = 0; gf < 2; ++gf)
                for (int dag = 0; dag < 2; ++dag) {
                    const int p = precisions[pi], r = recons[ri];
                    if (wd_variant_find_axes(p, r, gf, dag, 0) < 0 ||
                        wd_variant_find_axes(p, r, gf, dag, 1) < 0)
                        continue;
                    wd_gauge_random(u, dims, &rng);
                    wd_spinor_random(in, dims, &rng);
                    ref_schur(ref, u, in, dims, 1 / (2 * kappa) - 4, -1, dag);
                    memcpy(uf, u, vol * 36 * sizeof *u);
                    memcpy(inf, in, ns * sizeof *in);
                    if (gf) {
                        wd_temporal_gauge(g, u, dims);
                        wd_gauge_transform(uf, g, dims);
                        wd_spinor_transform(inf, g, dims, 0);
                    }
                    wd_gpu_gauge dg;
                    wd_gpu_spinor din, dout, dtmp;
                    memset(&din, 0, sizeof din), memset(&dout, 0, sizeof dout);
                    memset(&dtmp, 0, sizeof dtmp);
                    wd_status st = wd_gpu_gauge_upload(&dg, uf, dims, p, r, gf, 7);
                    if (st == WD_OK) st = wd_gpu_spinor_alloc(&din, dims, p, 7);
                    if (st == WD_OK) st = wd_gpu_spinor_alloc(&dout, dims, p, 7);
                    if (st == WD_OK) st = wd_gpu_spinor_alloc(&dtmp, dims, p, 7);
                    if (st == WD_OK) st = wd_gpu_spinor_upload(&din, inf, dims, 0);
                    if (st == WD_OK) st = wd_cuda_memset(dout.data, 0xff, dout.l.bytes + dout.l.norm_bytes);
                    if (st == WD_OK)
                        st = wd_gpu_schur(&dout, &din, &dtmp, &dg, dims, kappa, dag, -1);
                    for (size_t i = 0; i < ns; ++i)
                        got[i] = 0;
                    if (st == WD_OK) st = wd_gpu_spinor_download(&dout, got, dims, 0);
                    wd_gpu_gauge_free(&dg);
                    wd_gpu_spinor_free(&din), wd_gpu_spinor_free(&dout), wd_gpu_spinor_free(&dtmp);
                    tested++;
                    if (st != WD_OK) {
                        printf("precision %d recon %2d gf%d dag%d  FAIL  %s\n", p, r, gf, dag,
                               wd_last_error());
                        failed++;
                        continue;
                    }
                    if (gf)
                        wd_spinor_transform(got, g, dims, 1);
                    double num = 0, den = 0;
                    int bad = 0;
                    for (size_t i = 0; i < ns; ++i) {
                        if (parity_of(dims, i / 12) != 0)
                            continue;
                        bad += !isfinite(creal(got[i])) || !isfinite(cimag(got[i]));
                        num += pow(cabs(got[i] - ref[i]), 2);
                        den += pow(cabs(ref[i]), 2);
                    }
                    const double err = sqrt(num / den), tol = tolerance(p, r);
                    const int ok = !bad && den > 0 && err <= tol;
                    failed += !ok;
                    printf("precision %d recon %2d gf%d dag%d  %s  rel_l2=%.2e tol=%.0e%s\n", p, r,
                           gf, dag, ok ? "OK  " : "FAIL", err, tol, bad ? " (unwritten sites)" : "");
                }

    /* a field that cannot fit: a clear error, nothing allocated */
    const int huge[4] = {160, 160, 160, 256};
    wd_gpu_spinor big;
    wd_status st = wd_gpu_spinor_alloc(&big, huge, 8, 0);
    const int oom_ok = st == WD_ERR_NOMEM && big.data == NULL;
    printf("160^3x256 double spinor (%.0f GB) refused: %s  [%s] %s\n",
           24.0 * 8 * 160 * 160 * 160 * 128 / 1e9, oom_ok ? "OK" : "FAIL", wd_status_string(st),
           wd_last_error());
    failed += !oom_ok;
    if (st == WD_OK)
        wd_gpu_spinor_free(&big);

    printf("%d of %d failed\n", failed, tested + 1);
    free(u), free(uf), free(g), free(in), free(inf), free(ref), free(got);
    return failed || !tested ? 1 : 0;
}
