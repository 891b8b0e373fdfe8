/*
 * test_propagator: wd_propagator, wd_meson_correlators and
 * wd_effective_mass (runtime/physics/), on one process or a grid.
 *
 *   [mpirun -n N] test_propagator [--seed N]   (default seed: the time)
 *
 * On a smooth random gauge field (every rank draws the same global field
 * and keeps its block, the grid automatic):
 *   - every column converged (stats true residual <= tol);
 *   - the point source: column (s, c) of the site's 12 x 12 matrix at the
 *     source is what the solve of that column gives, and on one process
 *     every column checked against the float64 reference M (ref_wilson):
 *     ||b - M x|| / ||b|| <= tol;
 *   - the pseudoscalar correlator equals sum_x |S(x; y)|^2 per time slice,
 *     computed here directly (1e-12 relative), and is positive;
 * on the unit gauge field (free quarks, time-reflection symmetric):
 *   - C(t) = C(T - t) for the pseudoscalar, vector and scalar, C(t) =
 *     -C(T - t) for the a4-pseudoscalar (1e-8 relative to C(0): the solves'
 *     tolerance);
 *   - the effective mass of a pure cosh is its mass (1e-10), a sinh too;
 * and the errors: a source site outside the lattice, a source time slice
 * outside, an odd T: WD_ERR_INVALID on every rank.
 * One line per check on rank 0; "N of M failed" last; exit 1 on failure.
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
#include "wd_comm.h"
#include "wdirac.h"
#include "wdirac_gauge.h"
#include "wdirac_physics.h"

static int rank, nranks, run, failed;

static void check(const char *what, int ok, double err, double tol)
{
    double bad = !ok;
    wd_comm_sum(&bad, 1);
    run++;
    failed += bad > 0;
    if (rank == 0)
        printf("%-66s %s err=%.2e tol=%.0e\n", what, bad > 0 ? "FAIL" : "OK  ", err, tol);
}

static void *xalloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p) {
        fprintf(stderr, "test_propagator: out of memory\n");
        exit(1);
    }
    return p;
}

static void block_of(double *local, const double *global, const wd_lattice *lat, int reals)
{
    const int *L = lat->local, *D = lat->dims, *o = lat->origin;
    for (int t = 0; t < L[3]; t++)
        for (int z = 0; z < L[2]; z++)
            for (int y = 0; y < L[1]; y++)
                for (int x = 0; x < L[0]; x++) {
                    const size_t ls = x + (size_t)L[0] * (y + (size_t)L[1] * (z + (size_t)L[2] * t));
                    const size_t gs = (x + o[0]) + (size_t)D[0] * ((y + o[1]) + (size_t)D[1] *
                                      ((z + o[2]) + (size_t)D[2] * (t + o[3])));
                    memcpy(local + reals * ls, global + reals * gs, reals * sizeof(double));
                }
}

static void random_field(uint64_t seed, const int dims[4], const wd_lattice *lat)
{
    const size_t vol = wd_volume(dims), lvol = wd_volume(lat->local);
    const int T = dims[3];
    double *u = xalloc(vol * 72 * sizeof *u), *ub = xalloc(lvol * 72 * sizeof *ub);
    double *prop = xalloc(lvol * 288 * sizeof *prop), *corr = xalloc(4 * (size_t)T * sizeof *corr);
    wd_rng r;
    wd_rng_seed(&r, seed);
    wd_gauge_smooth((double complex *)u, dims, 0.5, &r);
    block_of(ub, u, lat, 72);
    wd_solver_settings s;
    wd_solver_default_settings(&s);
    s.mass = 0.1;
    s.tol = 1e-11;
    const wd_source src = {WD_SOURCE_POINT, {1, 2, 3, 5}};
    wd_solver_stats stats[12];
    wd_status st = wd_propagator(prop, ub, lat, &src, &s, stats);
    double worst = 0;
    for (int k = 0; k < 12; k++)
        worst = fmax(worst, stats[k].true_residual);
    check("random field: 12 columns converged (largest true residual)", st == WD_OK && worst <= s.tol,
          worst, s.tol);

    /* one process: every column against ref_wilson on the whole lattice */
    if (nranks == 1 && st == WD_OK) {
        double complex *x = xalloc(vol * 12 * sizeof *x), *mx = xalloc(vol * 12 * sizeof *mx);
        double err = 0;
        for (int col = 0; col < 12; col++) {
            for (size_t site = 0; site < vol; site++)
                for (int row = 0; row < 12; row++)
                    x[12 * site + row] = ((double complex *)prop)[144 * site + 12 * row + col];
            ref_wilson(mx, (const double complex *)u, x, dims, s.mass, s.tbc, 0);
            const size_t at = 1 + (size_t)dims[0] * (2 + (size_t)dims[1] * (3 + (size_t)dims[2] * 5));
            double num = 0;
            for (size_t i = 0; i < vol * 12; i++) {
                const double complex b = i == 12 * at + (size_t)col ? 1.0 : 0.0;
                num += creal((b - mx[i]) * conj(b - mx[i]));
            }
            err = fmax(err, sqrt(num));
        }
        check("random field: every column solves M x = b (ref_wilson)", err <= 10 * s.tol, err,
              10 * s.tol);
        free(x);
        free(mx);
    }

    /* the pseudoscalar = sum |S|^2 per time slice, and positive */
    st = wd_meson_correlators(corr, prop, lat, src.site[3]);
    double *direct = xalloc((size_t)T * sizeof *direct);
    const size_t slice = lvol / (size_t)lat->local[3];
    for (int tl = 0; tl < lat->local[3]; tl++) {
        const int t = (lat->origin[3] + tl - src.site[3] + T) % T;
        for (size_t k = 0; k < slice * 288; k++) {
            const double v = prop[288 * (size_t)tl * slice + k];
            direct[t] += v * v;
        }
    }
    for (int k = 0; k < T; k += 64)
        wd_comm_sum(direct + k, T - k < 64 ? T - k : 64);
    double err = 0, lowest = INFINITY;
    for (int t = 0; t < T; t++) {
        err = fmax(err, fabs(corr[t] - direct[t]) / direct[t]);
        lowest = fmin(lowest, corr[t]);
    }
    check("random field: pseudoscalar C(t) = sum_x |S|^2", st == WD_OK && err <= 1e-12, err, 1e-12);
    check("random field: pseudoscalar C(t) > 0", lowest > 0, lowest > 0 ? 0 : 1, 0);
    free(direct);
    free(u), free(ub), free(prop), free(corr);
}

static void free_field(const int dims[4], const wd_lattice *lat, wd_source_type type)
{
    const size_t lvol = wd_volume(lat->local);
    const int T = dims[3];
    double *ub = xalloc(lvol * 72 * sizeof *ub), *prop = xalloc(lvol * 288 * sizeof *prop);
    double *corr = xalloc(4 * (size_t)T * sizeof *corr);
    wd_gauge_init_block(ub, lat, WD_START_COLD, 0);
    wd_solver_settings s;
    wd_solver_default_settings(&s);
    s.mass = 0.2;
    s.tol = 1e-11;
    const wd_source src = {type, {0, 0, 0, 2}};
    wd_status st = wd_propagator(prop, ub, lat, &src, &s, NULL);
    if (st == WD_OK)
        st = wd_meson_correlators(corr, prop, lat, src.site[3]);
    for (int m = 0; m < WD_MESON_COUNT; m++) {
        int sign;
        const char *name = wd_meson_name(m, &sign);
        double err = 0, size = 0;
        for (int t = 1; t < T; t++) {
            err = fmax(err, fabs(corr[m * T + t] - sign * corr[m * T + T - t]));
            size = fmax(size, fabs(corr[m * T + t]));
        }
        /* relative to the largest |C(t)|, which must not be zero */
        err = size > 1e-12 ? err / size : INFINITY;
        char what[128];
        snprintf(what, sizeof what, "unit field, %s source: %s C(t) = %sC(T - t)",
                 type == WD_SOURCE_POINT ? "point" : "wall", name, sign > 0 ? "" : "-");
        check(what, st == WD_OK && err <= 1e-8, err, 1e-8);
    }
    free(ub), free(prop), free(corr);
}

static void effective_mass(void)
{
    const int T = 16;
    double c[16], m[8];
    for (int sign = -1; sign <= 1; sign += 2) {
        for (int t = 0; t < T; t++)
            c[t] = sign > 0 ? cosh(0.37 * (t - T / 2)) : sinh(0.37 * (T / 2 - t));
        wd_effective_mass(m, c, T, sign);
        double err = 0;
        for (int t = 0; t < T / 2 - (sign < 0); t++)
            err = fmax(err, fabs(m[t] - 0.37));
        check(sign > 0 ? "effective mass of a pure cosh is its mass"
                       : "effective mass of a pure sinh is its mass", err <= 1e-10, err, 1e-10);
    }
}

static void errors(const int dims[4], const wd_lattice *lat)
{
    const size_t lvol = wd_volume(lat->local);
    double *ub = xalloc(lvol * 72 * sizeof *ub), *prop = xalloc(lvol * 288 * sizeof *prop);
    double corr[64], m[8];
    wd_gauge_init_block(ub, lat, WD_START_COLD, 0);
    wd_solver_settings s;
    wd_solver_default_settings(&s);
    const wd_source out = {WD_SOURCE_POINT, {0, dims[1], 0, 0}};
    wd_status st = wd_propagator(prop, ub, lat, &out, &s, NULL);
    check("error: source site outside the lattice -> invalid", st == WD_ERR_INVALID, 0, 0);
    st = wd_meson_correlators(corr, prop, lat, dims[3]);
    check("error: source time slice T -> invalid", st == WD_ERR_INVALID, 0, 0);
    st = wd_effective_mass(m, corr, 7, 1);
    check("error: effective mass of an odd T -> invalid", st == WD_ERR_INVALID, 0, 0);
    free(ub), free(prop);
}

int main(int argc, char **argv)
{
    if (wd_init(&argc, &argv) != WD_OK) {
        fprintf(stderr, "test_propagator: %s\n", wd_last_error());
        return 1;
    }
    rank = wd_rank();
    nranks = wd_ranks();
    uint64_t seed = (uint64_t)time(NULL);
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--seed"))
            seed = strtoull(argv[i + 1], NULL, 10);
    double s0 = rank == 0 ? (double)(seed % (1ull << 52)) : 0;
    wd_comm_bcast(&s0, sizeof s0, 0);
    seed = (uint64_t)s0;
    if (rank == 0)
        printf("test_propagator: %d rank(s), seed %llu (--seed N replays)\n", nranks,
               (unsigned long long)seed);
    static const int dims[4] = {4, 4, 4, 8};
    wd_lattice lat;
    if (wd_lattice_make(&lat, dims, NULL) != WD_OK) {
        fprintf(stderr, "test_propagator: %s\n", wd_last_error());
        return 1;
    }
    random_field(seed, dims, &lat);
    free_field(dims, &lat, WD_SOURCE_POINT);
    free_field(dims, &lat, WD_SOURCE_WALL);
    effective_mass();
    errors(dims, &lat);
    if (rank == 0)
        printf("%d of %d failed\n", failed, run);
    wd_finalize();
    return failed ? 1 : 0;
}
