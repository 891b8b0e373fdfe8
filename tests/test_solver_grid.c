/*
 * test_solver_grid: the public solver (wd_solve, wd_solver_create /
 * _solve) on a process grid.
 *
 *   mpirun -n N test_solver_grid [--seed N]   (default seed: the time, printed)
 *
 * Every rank draws the same global gauge field (smooth random links) and
 * source from the seed and hands wd_solve its block (wd_lattice_make) for
 * every valid grid of N ranks on an 8 x 8 x 4 x 8 lattice, the automatic
 * one included.  Each solve must converge on every rank with the same
 * status, iterations and true residual (bit for bit), and rank 0 gathers
 * the blocks of x and checks ||b - M x|| / ||b|| <= tol with the float64
 * reference on the whole lattice (ref_wilson: no face exchange, no code of
 * the solver's own check), agreeing with the solver's true residual to
 * 1e-3 relative, and match the first grid's solve (iterations within 1,
 * x within 100 tol); a gauge-fixed solve (both levels, the time lines
 * handed from rank to rank) gives the plain solve's x within 100 tol, and
 * the block temporal gauge equals the whole field's bit for bit.  The
 * clover operator (c_sw = 1.3, both Schur forms, CG and BiCGstab, single
 * and half sloppy, and gauge-fixed) is judged the same way against
 * ref_wilson_clover with the reference clover term (ref_clover.h), and
 * symmetric and asymmetric forms give the same x within 100 tol; a second
 * solve at another mass rebuilds the clover field (checked the same way).
 * wd_spinor_fill_random_block must give each rank exactly its block of
 * wd_spinor_fill_random's field.  Errors: a grid that does not fit, NaN in
 * b on the last rank only: the same status on every rank, x zero (or
 * untouched where the grid is refused); a solver's grid changed in a solve.
 * One line per case on rank 0; "N of M failed" last; exit 1 on any
 * failure.
 */
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gauge_tools.h"
#include "ref_clover.h"
#include "ref_wilson.h"
#include "test_grid.h"
#include "wd_comm.h"
#include "wdirac.h"

static int rank, nranks, checks_run, checks_failed;
static const int dims[4] = {8, 8, 4, 8};

static void *xalloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p) {
        fprintf(stderr, "test_solver_grid: out of memory\n");
        exit(1);
    }
    return p;
}

/* a case fails when it failed on any rank */
static void check(int ok, const char *what, const char *detail)
{
    double bad = !ok;
    if (wd_comm_sum(&bad, 1) != WD_OK) {
        fprintf(stderr, "test_solver_grid: rank %d: %s\n", rank, wd_last_error());
        exit(1);
    }
    checks_run++;
    checks_failed += bad > 0;
    if (!ok)
        printf("rank %d: %-64s FAIL %s\n", rank, what, detail);
    else if (rank == 0)
        printf("%-72s %s %s\n", what, bad > 0 ? "FAIL" : "OK  ", detail);
}


/* the solve cases, each on every grid */
enum { CASES = 7 };
#define CSW 1.3

typedef struct problem {
    double *u, *b;          /* global */
    double complex *t;      /* the reference clover term c_sw T, global (rank 0) */
    double *ub, *bb, *xb;   /* this rank's block */
    double *x;              /* global x on rank 0 */
    double *x_first[CASES]; /* rank 0: each case's x on the first grid */
    int it_first[CASES];
} problem;

/* ||b - M x|| / ||b|| on rank 0's whole lattice; M_sw with p->t when csw */
static double reference_residual(const problem *p, double mass, wd_time_bc tbc, int clover)
{
    const size_t vol = wd_volume(dims);
    double complex *mx = xalloc(vol * 12 * sizeof *mx);
    if (clover)
        ref_wilson_clover(mx, (const double complex *)p->u, p->t, (const double complex *)p->x,
                          dims, mass, tbc, 0);
    else
        ref_wilson(mx, (const double complex *)p->u, (const double complex *)p->x, dims, mass,
                   tbc, 0);
    const double complex *bc = (const double complex *)p->b;
    double num = 0, den = 0;
    for (size_t i = 0; i < vol * 12; i++) {
        num += creal((bc[i] - mx[i]) * conj(bc[i] - mx[i]));
        den += creal(bc[i] * conj(bc[i]));
    }
    free(mx);
    return sqrt(num / den);
}

static void solve_case(problem *p, int c, const wd_lattice *lat, const char *grid_name,
                       wd_solver_type solver, int prec, int sloppy, wd_time_bc tbc, double tol,
                       double csw, wd_clover_form form)
{
    wd_solver_settings s;
    wd_solver_default_settings(&s);
    memcpy(s.grid, lat->procs, sizeof s.grid);
    s.solver = solver;
    s.precision = prec;
    s.sloppy_precision = sloppy;
    s.tbc = tbc;
    s.tol = tol;
    s.mass = 0.05;
    s.csw = csw;
    s.clover_form = form;
    const size_t n = wd_volume(lat->local) * 24;
    memset(p->xb, 0xff, n * sizeof *p->xb);
    wd_solver_stats st;
    const wd_status rc = wd_solve(p->xb, p->ub, p->bb, dims, &s, &st);

    /* the same status and stats, bit for bit, on every rank */
    double mine[3] = {(double)rc, (double)st.iterations, st.true_residual}, root[3];
    memcpy(root, mine, sizeof root);
    wd_comm_bcast(root, sizeof root, 0);
    const int same = !memcmp(root, mine, sizeof root);

    test_gather(p->x, p->xb, lat);
    double res = 0, diff = 0;
    if (rank == 0) {
        const size_t vol = wd_volume(dims);
        /* against the first grid's x: ||x - x_first|| / ||x_first|| */
        if (!p->x_first[c]) {
            p->x_first[c] = xalloc(vol * 24 * sizeof(double));
            memcpy(p->x_first[c], p->x, vol * 24 * sizeof(double));
            p->it_first[c] = st.iterations;
        }
        double dn = 0, xn = 0;
        for (size_t i = 0; i < vol * 24; i++) {
            dn += (p->x[i] - p->x_first[c][i]) * (p->x[i] - p->x_first[c][i]);
            xn += p->x_first[c][i] * p->x_first[c][i];
        }
        diff = sqrt(dn / xn);
        res = reference_residual(p, s.mass, tbc, csw != 0);
    }
    double got[3] = {res, diff, (double)p->it_first[c]};
    wd_comm_bcast(got, sizeof got, 0);
    res = got[0];
    diff = got[1];
    const int it_first = (int)got[2];
    char what[128], detail[192];
    snprintf(what, sizeof what, "grid %s %-8s %c-%c tbc%+d tol %.0e%s", grid_name,
             solver == WD_SOLVER_CG ? "CG-NE" : "BiCGstab", prec == 8 ? 'd' : prec == 4 ? 's' : 'h',
             sloppy == 8 ? 'd' : sloppy == 4 ? 's' : 'h', (int)tbc, tol,
             csw == 0 ? "" : form == WD_CLOVER_SYMMETRIC ? " clover sym" : " clover asym");
    snprintf(detail, sizeof detail, "it=%d true=%.2e (solver %.2e) |x-x1|/|x1|=%.1e%s%s",
             st.iterations, res, st.true_residual, diff, rc == WD_OK ? "" : " status: ",
             rc == WD_OK ? "" : wd_last_error());
    /* grids differ in the order of the global sums only: the iterations
     * stay within 1 and x within 100 tol of the first grid's (the
     * condition number of M on this field is well below 100) */
    check(rc == WD_OK && same && res <= tol && fabs(res - st.true_residual) <= 1e-3 * res &&
          abs(st.iterations - it_first) <= 1 && diff <= 100 * tol, what, detail);
}

/* a case whose variants this build lacks (a build filtered with
 * -Dkernels, as CI's sanitizer build) is skipped, as in test_solver; the
 * full build runs it */
static int not_built(wd_status rc, const char *what)
{
    if (rc != WD_ERR_NOT_BUILT)
        return 0;
    if (rank == 0)
        printf("%-72s SKIP (variants not built)\n", what);
    return 1;
}

/* gauge fixing on the grid (both levels): x is the gauge-invariant
 * solution of the plain solve of case 0, within 100 tol */
static void solve_gf(problem *p, const wd_lattice *lat, const char *grid_name)
{
    wd_solver_settings s;
    wd_solver_default_settings(&s);
    memcpy(s.grid, lat->procs, sizeof s.grid);
    s.gauge_fix = s.sloppy_gauge_fix = 1;
    s.mass = 0.05;
    s.tol = 1e-10;
    wd_solver_stats st;
    const wd_status rc = wd_solve(p->xb, p->ub, p->bb, dims, &s, &st);
    test_gather(p->x, p->xb, lat);
    double diff = 0;
    if (rank == 0) {
        const size_t n = wd_volume(dims) * 24;
        double dn = 0, xn = 0;
        for (size_t i = 0; i < n; i++) {
            dn += (p->x[i] - p->x_first[0][i]) * (p->x[i] - p->x_first[0][i]);
            xn += p->x_first[0][i] * p->x_first[0][i];
        }
        diff = sqrt(dn / xn);
    }
    wd_comm_bcast(&diff, sizeof diff, 0);
    char what[128], detail[192];
    snprintf(what, sizeof what, "grid %s BiCGstab d-s gauge-fixed (both levels)", grid_name);
    snprintf(detail, sizeof detail, "it=%d true=%.2e |x-x_plain|/|x|=%.1e%s%s", st.iterations,
             st.true_residual, diff, rc == WD_OK ? "" : " status: ",
             rc == WD_OK ? "" : wd_last_error());
    if (!not_built(rc, what))
        check(rc == WD_OK && st.true_residual <= s.tol && diff <= 100 * s.tol, what, detail);
}

/* clover: the two forms give the same x (cases 3 and 4 share the problem:
 * d-s BiCGstab, antiperiodic); gauge fixing gives it too; a persistent
 * solver at another mass rebuilds A and still solves M_sw(m') x = b */
static void clover_extra(problem *p, const wd_lattice *lat, const char *grid_name)
{
    double diff = 0;
    const size_t nv = wd_volume(dims) * 24;
    if (rank == 0) {
        double dn = 0, xn = 0;
        for (size_t i = 0; i < nv; i++) {
            dn += (p->x_first[3][i] - p->x_first[4][i]) * (p->x_first[3][i] - p->x_first[4][i]);
            xn += p->x_first[3][i] * p->x_first[3][i];
        }
        diff = sqrt(dn / xn);
    }
    wd_comm_bcast(&diff, sizeof diff, 0);
    char what[160], detail[192];
    snprintf(what, sizeof what, "grid %s clover: symmetric and asymmetric forms, the same x",
             grid_name);
    snprintf(detail, sizeof detail, "|x_sym - x_asym| / |x| = %.1e", diff);
    check(diff <= 100 * 1e-10, what, detail);

    wd_solver_settings s;
    wd_solver_default_settings(&s);
    memcpy(s.grid, lat->procs, sizeof s.grid);
    s.mass = 0.05;
    s.csw = CSW;
    s.tol = 1e-10;
    s.gauge_fix = s.sloppy_gauge_fix = 1;
    wd_solver_stats st;
    wd_status rc = wd_solve(p->xb, p->ub, p->bb, dims, &s, &st);
    test_gather(p->x, p->xb, lat);
    if (rank == 0) {
        double dn = 0, xn = 0;
        for (size_t i = 0; i < nv; i++) {
            dn += (p->x[i] - p->x_first[3][i]) * (p->x[i] - p->x_first[3][i]);
            xn += p->x_first[3][i] * p->x_first[3][i];
        }
        diff = sqrt(dn / xn);
    }
    wd_comm_bcast(&diff, sizeof diff, 0);
    snprintf(what, sizeof what, "grid %s clover BiCGstab d-s gauge-fixed (both levels)", grid_name);
    snprintf(detail, sizeof detail, "it=%d true=%.2e |x-x_plain|/|x|=%.1e%s%s", st.iterations,
             st.true_residual, diff, rc == WD_OK ? "" : " status: ",
             rc == WD_OK ? "" : wd_last_error());
    if (!not_built(rc, what))
        check(rc == WD_OK && st.true_residual <= s.tol && diff <= 100 * s.tol, what, detail);

    /* another mass on the same solver */
    wd_solver *sv = NULL;
    s.gauge_fix = s.sloppy_gauge_fix = 0;
    rc = wd_solver_create(&sv, p->ub, dims, &s);
    if (rc == WD_OK) {
        s.mass = 0.2;
        rc = wd_solver_solve(sv, p->xb, p->bb, &s, &st);
    }
    wd_solver_destroy(sv);
    test_gather(p->x, p->xb, lat);
    double res = 0;
    if (rank == 0)
        res = reference_residual(p, 0.2, s.tbc, 1);
    wd_comm_bcast(&res, sizeof res, 0);
    snprintf(what, sizeof what, "grid %s clover: a solve at another mass rebuilds A", grid_name);
    snprintf(detail, sizeof detail, "true=%.2e (solver %.2e)%s%s", res, st.true_residual,
             rc == WD_OK ? "" : " status: ", rc == WD_OK ? "" : wd_last_error());
    check(rc == WD_OK && res <= s.tol, what, detail);
}

/* the block temporal gauge: bit for bit the whole lattice's, on this block */
static void temporal_block(problem *p, const wd_lattice *lat, const char *grid_name)
{
    const size_t vol = wd_volume(dims), n = wd_volume(lat->local);
    double complex *uf = xalloc(vol * 36 * sizeof *uf), *g = xalloc(vol * 9 * sizeof *g);
    double complex *ufb = xalloc(n * 36 * sizeof *ufb), *gb = xalloc(n * 9 * sizeof *gb);
    double complex *want = xalloc(n * 36 * sizeof *want), *gwant = xalloc(n * 9 * sizeof *gwant);
    wd_temporal_gauge_field(uf, g, (const double complex *)p->u, dims);
    test_copy_block((double *)want, (double *)uf, lat, 72, 0);
    test_copy_block((double *)gwant, (double *)g, lat, 18, 0);
    wd_grid grid;
    wd_grid_make(&grid, dims, lat->procs, nranks, rank, 4);
    const wd_status st = wd_temporal_gauge_field_block(ufb, gb, (const double complex *)p->ub,
                                                       &grid);
    char what[128];
    snprintf(what, sizeof what, "grid %s temporal gauge on blocks = the whole field's", grid_name);
    check(st == WD_OK && !memcmp(ufb, want, n * 36 * sizeof *ufb) &&
          !memcmp(gb, gwant, n * 9 * sizeof *gb), what, "bit for bit");
    free(uf), free(g), free(ufb), free(gb), free(want), free(gwant);
}

static void errors(problem *p, const wd_lattice *lat)
{
    const size_t n = wd_volume(lat->local) * 24;
    wd_solver_settings s;
    char detail[256];

    /* a grid that does not fit: refused everywhere before anything, x untouched */
    wd_solver_default_settings(&s);
    s.grid[0] = 3;
    s.grid[1] = s.grid[2] = 1;
    s.grid[3] = nranks;
    memset(p->xb, 0x5a, n * sizeof *p->xb);
    wd_status rc = wd_solve(p->xb, p->ub, p->bb, dims, &s, NULL);
    int untouched = 1;
    for (size_t i = 0; i < n * sizeof *p->xb; i++)
        untouched &= ((unsigned char *)p->xb)[i] == 0x5a;
    snprintf(detail, sizeof detail, "[%s] %s", wd_status_string(rc), wd_last_error());
    check(rc == WD_ERR_INVALID && untouched, "error: grid 3 1 1 N -> invalid, x untouched",
          detail);

    /* NaN in b on the last rank only: invalid on every rank, x zero */
    wd_solver_default_settings(&s);
    memcpy(s.grid, lat->procs, sizeof s.grid);
    double *bad = xalloc(n * sizeof *bad);
    memcpy(bad, p->bb, n * sizeof *bad);
    if (rank == nranks - 1)
        bad[n / 2 + 3] = NAN;
    memset(p->xb, 0xff, n * sizeof *p->xb);
    rc = wd_solve(p->xb, p->ub, bad, dims, &s, NULL);
    int zero = 1;
    for (size_t i = 0; i < n; i++)
        zero &= p->xb[i] == 0;
    snprintf(detail, sizeof detail, "[%s] %s", wd_status_string(rc), wd_last_error());
    check(rc == WD_ERR_INVALID && zero && strstr(wd_last_error(), "NaN"),
          "error: NaN in b on the last rank -> invalid everywhere, x = 0", detail);
    free(bad);


    /* a persistent solver: two solves, the second equal to the first */
    wd_solver_default_settings(&s);
    memcpy(s.grid, lat->procs, sizeof s.grid);
    wd_solver *sv = NULL;
    rc = wd_solver_create(&sv, p->ub, dims, &s);
    wd_solver_stats a, b;
    double *x2 = xalloc(n * sizeof *x2);
    if (rc == WD_OK)
        rc = wd_solver_solve(sv, p->xb, p->bb, &s, &a);
    if (rc == WD_OK)
        rc = wd_solver_solve(sv, x2, p->bb, &s, &b);
    snprintf(detail, sizeof detail, "[%s] it=%d true=%.2e", wd_status_string(rc), a.iterations,
             a.true_residual);
    check(rc == WD_OK && !memcmp(x2, p->xb, n * sizeof *x2) && a.iterations == b.iterations,
          "reuse: two solves of one solver agree bit for bit", detail);
    /* a changed grid in a solve is refused */
    s.grid[0] = 2 * lat->procs[0];
    rc = wd_solver_solve(sv, x2, p->bb, &s, NULL);
    check(rc == WD_ERR_INVALID, "reuse: changed grid -> invalid", wd_last_error());
    wd_solver_destroy(sv);
    free(x2);
}

int main(int argc, char **argv)
{
    if (wd_init(&argc, &argv) != WD_OK) {
        fprintf(stderr, "test_solver_grid: %s\n", wd_last_error());
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
        printf("test_solver_grid: %d rank(s), seed %llu (--seed N replays)\n", nranks,
               (unsigned long long)seed);

    problem p;
    memset(&p, 0, sizeof p);
    const size_t vol = wd_volume(dims);
    p.u = xalloc(vol * 72 * sizeof(double));
    p.b = xalloc(vol * 24 * sizeof(double));
    p.x = xalloc(vol * 24 * sizeof(double));
    wd_rng r;
    wd_rng_seed(&r, seed);
    wd_gauge_smooth((double complex *)p.u, dims, 0.4, &r);
    wd_spinor_fill_random(p.b, dims, seed + 1);
    if (rank == 0) {
        double complex *fhat = xalloc(vol * 54 * sizeof *fhat);
        p.t = xalloc(vol * 144 * sizeof *p.t);
        ref_clover_fhat(fhat, (const double complex *)p.u, dims);
        ref_clover_term(p.t, fhat, vol, CSW);
        free(fhat);
    }

    /* every grid of nranks that fits, then the automatic one */
    int grids[64][4], ng = 0;
    for (int px = 1; px <= nranks; px++)
        for (int py = 1; py <= nranks; py++)
            for (int pz = 1; pz <= nranks; pz++)
                for (int pt = 1; pt <= nranks; pt++) {
                    const int g[4] = {px, py, pz, pt};
                    wd_lattice lat;
                    if (px * py * pz * pt == nranks && ng < 63 &&
                        wd_lattice_make(&lat, dims, g) == WD_OK)
                        memcpy(grids[ng++], g, sizeof g);
                }
    memset(grids[ng++], 0, sizeof grids[0]);
    for (int k = 0; k < ng; k++) {
        wd_lattice lat;
        if (wd_lattice_make(&lat, dims, grids[k]) != WD_OK) {
            check(0, "wd_lattice_make", wd_last_error());
            continue;
        }
        const size_t n = wd_volume(lat.local);
        p.ub = xalloc(n * 72 * sizeof(double));
        p.bb = xalloc(n * 24 * sizeof(double));
        p.xb = xalloc(n * 24 * sizeof(double));
        test_copy_block(p.ub, p.u, &lat, 72, 0);
        test_copy_block(p.bb, p.b, &lat, 24, 0);
        char name[64], what[128];
        snprintf(name, sizeof name, "%s%d %d %d %d", grids[k][0] ? "" : "auto ", lat.procs[0],
                 lat.procs[1], lat.procs[2], lat.procs[3]);
        /* the block of a random source equals the same block of the whole one */
        memset(p.xb, 0xff, n * 24 * sizeof(double));
        const wd_status fst = wd_spinor_fill_random_block(p.xb, &lat, seed + 1);
        snprintf(what, sizeof what, "grid %s wd_spinor_fill_random_block = its block", name);
        check(fst == WD_OK && !memcmp(p.xb, p.bb, n * 24 * sizeof(double)), what, "");
        const wd_clover_form sym = WD_CLOVER_SYMMETRIC, asym = WD_CLOVER_ASYMMETRIC;
        solve_case(&p, 0, &lat, name, WD_SOLVER_BICGSTAB, 8, 4, WD_TIME_ANTIPERIODIC, 1e-10, 0,
                   sym);
        solve_case(&p, 1, &lat, name, WD_SOLVER_CG, 8, 2, WD_TIME_PERIODIC, 1e-10, 0, sym);
        solve_case(&p, 2, &lat, name, WD_SOLVER_BICGSTAB, 4, 4, WD_TIME_ANTIPERIODIC, 1e-6, 0, sym);
        solve_gf(&p, &lat, name);
        solve_case(&p, 3, &lat, name, WD_SOLVER_BICGSTAB, 8, 4, WD_TIME_ANTIPERIODIC, 1e-10, CSW,
                   sym);
        solve_case(&p, 4, &lat, name, WD_SOLVER_BICGSTAB, 8, 4, WD_TIME_ANTIPERIODIC, 1e-10, CSW,
                   asym);
        solve_case(&p, 5, &lat, name, WD_SOLVER_CG, 8, 2, WD_TIME_PERIODIC, 1e-10, CSW, asym);
        solve_case(&p, 6, &lat, name, WD_SOLVER_CG, 8, 4, WD_TIME_PERIODIC, 1e-10, CSW, sym);
        clover_extra(&p, &lat, name);
        temporal_block(&p, &lat, name);
        if (!grids[k][0])
            errors(&p, &lat);
        free(p.ub);
        free(p.bb);
        free(p.xb);
    }
    if (rank == 0)
        printf("%d of %d failed\n", checks_failed, checks_run);
    free(p.u);
    free(p.b);
    free(p.x);
    free(p.t);
    for (int c = 0; c < CASES; c++)
        free(p.x_first[c]);
    wd_finalize();
    return checks_failed ? 1 : 0;
}
