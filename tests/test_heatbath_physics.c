/*
 * test_heatbath_physics.c: the average plaquette of quenched SU(3) at
 * beta = 6.0 against the literature, 0.593678(24) on 16^4 (Boyd et al.,
 * Nucl. Phys. B 469 (1996) 419).
 *
 *   test_heatbath_physics [--seed N] [--dims X Y Z T] [--therm N] [--meas N]
 *                         [--or N] [--bin N] [--allowance A]
 *
 * Defaults (the CI test, about 20-40 s on 2 cores): 8^4, cold start, 40
 * thermalization and 120 measurement sweeps of 1 heatbath + 4
 * overrelaxation, bins of 10 sweeps.  Passes when
 *     |P - 0.593678| <= 3 sqrt(err^2 + 0.000024^2) + A
 * with err the binned standard error.  A, the allowance for the finite
 * volume and the short run, is 0.001 by default: on 8^4 a run of 1000
 * measurement sweeps gives 0.59411(11), above the 16^4 value by 0.00043(11)
 * (a small box raises the plaquette).  With --dims 16 16 16 16 --allowance 0
 * this is the target, three combined standard errors.
 * Also prints the compound sweeps per second.  Exit 0 pass, 1 fail.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "wdirac_gauge.h"

static const double LITERATURE = 0.593678, LITERATURE_ERR = 0.000024;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    uint64_t seed = (uint64_t)time(NULL);
    int dims[4] = {8, 8, 8, 8};
    int therm = 40, meas = 120, n_or = 4, bin = 10;
    double allowance = 0.001;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(a, "--dims") && i + 4 < argc)
            for (int mu = 0; mu < 4; mu++)
                dims[mu] = atoi(argv[++i]);
        else if (!strcmp(a, "--therm") && i + 1 < argc)
            therm = atoi(argv[++i]);
        else if (!strcmp(a, "--meas") && i + 1 < argc)
            meas = atoi(argv[++i]);
        else if (!strcmp(a, "--or") && i + 1 < argc)
            n_or = atoi(argv[++i]);
        else if (!strcmp(a, "--bin") && i + 1 < argc)
            bin = atoi(argv[++i]);
        else if (!strcmp(a, "--allowance") && i + 1 < argc)
            allowance = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: test_heatbath_physics [--seed N] [--dims X Y Z T] "
                            "[--therm N] [--meas N] [--or N] [--bin N] [--allowance A]\n");
            return 2;
        }
    }
    if (therm < 0 || meas < 2 * bin || bin < 1 || n_or < 0) {
        fprintf(stderr, "test_heatbath_physics: need therm >= 0, bin >= 1, meas >= 2 bin\n");
        return 2;
    }
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    printf("test_heatbath_physics: seed %llu (replay with --seed %llu); %dx%dx%dx%d beta 6.0, "
           "cold start, %d + %d sweeps of 1 heatbath + %d overrelaxation, %d threads\n",
           (unsigned long long)seed, (unsigned long long)seed, dims[0], dims[1], dims[2],
           dims[3], therm, meas, n_or, threads);

    const size_t volume = (size_t)dims[0] * dims[1] * dims[2] * dims[3];
    double *u = malloc(72 * volume * sizeof *u);
    const int nb = meas / bin;
    double *bins = calloc((size_t)nb, sizeof *bins);
    if (!u || !bins) {
        fprintf(stderr, "test_heatbath_physics: out of memory\n");
        return 1;
    }
    if (wd_gauge_init(u, dims, WD_START_COLD, seed) != WD_OK) {
        fprintf(stderr, "test_heatbath_physics: %s\n", wd_last_error());
        return 1;
    }
    double seconds = 0;
    for (int s = 0; s < therm + nb * bin; s++) {
        const double t0 = now();
        wd_status st = wd_gauge_heatbath_sweep(u, dims, 6.0, seed, (uint64_t)s, n_or);
        seconds += now() - t0;
        wd_gauge_obs o;
        if (st == WD_OK)
            st = wd_gauge_observables(u, dims, &o);
        if (st != WD_OK) {
            fprintf(stderr, "test_heatbath_physics: sweep %d: %s\n", s, wd_last_error());
            return 1;
        }
        if (s >= therm)
            bins[(s - therm) / bin] += o.plaquette / bin;
        if ((s + 1) % 20 == 0)
            printf("   sweep %5d  plaquette %.6f\n", s + 1, o.plaquette);
    }
    double m = 0, m2 = 0;
    for (int k = 0; k < nb; k++) {
        m += bins[k] / nb;
        m2 += bins[k] * bins[k] / nb;
    }
    const double err = sqrt(fmax(0.0, m2 - m * m) / (nb - 1));
    const double combined = sqrt(err * err + LITERATURE_ERR * LITERATURE_ERR);
    const double tol = 3 * combined + allowance;
    const double diff = fabs(m - LITERATURE);
    printf("plaquette %.6f +- %.6f (%d bins of %d sweeps); literature %.6f(%.0f); "
           "difference %.6f = %.1f combined sd\n",
           m, err, nb, bin, LITERATURE, LITERATURE_ERR * 1e6, m - LITERATURE, diff / combined);
    printf("%.3f compound sweeps/s (%.1f ms each, %dx%dx%dx%d, %d threads)\n",
           (therm + nb * bin) / seconds, 1e3 * seconds / (therm + nb * bin), dims[0], dims[1],
           dims[2], dims[3], threads);
    const int ok = diff <= tol;
    printf("beta 6.0 plaquette within 3 combined sd + allowance %.4f: %s (|diff| %.6f, tol %.6f)\n",
           allowance, ok ? "OK" : "FAIL", diff, tol);
    free(u);
    free(bins);
    return ok ? 0 : 1;
}
