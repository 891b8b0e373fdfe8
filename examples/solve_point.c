/*
 * solve_point.c: wdirac from C, against the installed library.
 *
 *   cc solve_point.c $(pkg-config --cflags --libs wdirac) -o solve_point
 *   ./solve_point [L]        (lattice L^3 x 2L, default 8)
 *
 * Makes a quenched configuration (beta 6.0, a hot start and a few heatbath
 * sweeps), solves M x = b for a point source at the origin (spin 0, colour
 * 0) with the default mixed-precision BiCGstab on the CPU (or the GPU when
 * one is usable), checks the solution itself with the public Dslash, and
 * prints the pion-like sum over x of |x|^2 on each time slice.  Exits 0
 * when the solve converged and the check agrees.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <wdirac.h>
#include <wdirac_gauge.h>

static int fail(const char *what, wd_status st)
{
    fprintf(stderr, "solve_point: %s: %s (%s)\n", what, wd_status_string(st), wd_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    const int L = argc > 1 ? atoi(argv[1]) : 8;
    const int dims[4] = {L, L, L, 2 * L};
    wd_status st = wd_check_dims(dims);
    if (st != WD_OK)
        return fail("lattice", st);
    const size_t vol = wd_volume(dims);
    double *u = malloc(vol * 72 * sizeof *u), *b = calloc(vol * 24, sizeof *b);
    double *x = malloc(vol * 24 * sizeof *x), *mx = malloc(vol * 24 * sizeof *mx);
    if (!u || !b || !x || !mx)
        return fail("memory", WD_ERR_NOMEM);

    /* the gauge field */
    if ((st = wd_gauge_init(u, dims, WD_START_HOT, 7)) != WD_OK)
        return fail("wd_gauge_init", st);
    for (int sweep = 0; sweep < 5; sweep++)
        if ((st = wd_gauge_heatbath_sweep(u, dims, 6.0, 7, (uint64_t)sweep, 1)) != WD_OK)
            return fail("wd_gauge_heatbath_sweep", st);
    wd_gauge_obs obs;
    if ((st = wd_gauge_observables(u, dims, &obs)) != WD_OK)
        return fail("wd_gauge_observables", st);

    /* the source: 1 at the origin, spin 0, colour 0 (real part) */
    b[0] = 1.0;

    wd_solver_settings s;
    wd_solver_default_settings(&s);
    s.mass = 0.2;
    s.tol = 1e-10;
    if (wd_backend_probe(WD_BACKEND_CUDA) == WD_OK)
        s.backend = WD_BACKEND_CUDA;
    wd_solver_stats stats;
    if ((st = wd_solve(x, u, b, dims, &s, &stats)) != WD_OK)
        return fail("wd_solve", st);

    /* check M x = b with the public Dslash: M x = (4+m) x - D x / 2 on both
     * parities (the xpay variant: out = x + a D x) */
    for (int parity = 0; parity < 2; parity++)
        if ((st = wd_dslash_cpu("dslash_d_r12_gf0_dag0_xpay1_n1", mx, u, x, x,
                                -0.5 / (4.0 + s.mass), dims, parity, s.tbc, 0)) != WD_OK)
            return fail("wd_dslash_cpu", st);
    double num = 0, den = 0;
    for (size_t i = 0; i < vol * 24; i++) {
        const double r = b[i] - (4.0 + s.mass) * mx[i];
        num += r * r;
        den += b[i] * b[i];
    }
    const double check = sqrt(num / den);

    printf("lattice %dx%dx%dx%d, plaquette %.6f\n", dims[0], dims[1], dims[2], dims[3],
           obs.plaquette);
    printf("solve: %d iterations, true residual %.2e, %.3f s, %s backend\n", stats.iterations,
           stats.true_residual, stats.seconds, s.backend == WD_BACKEND_CUDA ? "cuda" : "cpu");
    printf("check: ||b - M x|| / ||b|| = %.2e by the public Dslash\n", check);
    const size_t slice = vol / (size_t)dims[3];
    for (int t = 0; t < dims[3]; t++) {
        double c = 0;
        for (size_t k = 0; k < slice * 24; k++)
            c += x[(size_t)t * slice * 24 + k] * x[(size_t)t * slice * 24 + k];
        printf("C(%2d) = %.6e\n", t, c);
    }
    free(u), free(b), free(x), free(mx);
    const int ok = check <= 10 * s.tol;
    puts(ok ? "converged" : "the check disagrees with the solver");
    return ok ? 0 : 1;
}
