/*
 * test_reductions: the global reductions of a Krylov step on a process
 * grid (issue 28, item 4), counted with wd_comm_collectives.
 *
 *   mpirun -n N test_reductions [--seed N]   (default seed: the time, printed)
 *
 * Cases, on the grid 1 1 1 N of an 8 x 8 x 4 x 8 lattice, CPU backend:
 *   - per iteration: wd_solve (BiCGstab and CG, double and double-single)
 *     with a progress callback that reads the count at every call.  A step
 *     between two calls that holds no true-residual check makes exactly
 *     the iteration's reductions, 3 for BiCGstab (<r0, v>; <t, s> with
 *     |t|^2; |r|^2 with <r0, r>) and 2 for CG (|Mhat p|^2; |r|^2), and no
 *     other collective (0 of each on one rank); a check disturbs at most
 *     the two steps beside its own call, so every step but 2 a check
 *     (stats.updates) must make exactly that many, none fewer, and at
 *     least half of all (reliable updates off: delta 1e-30, so that
 *     checks come only at the target and at restarts);
 *   - lanes: wd_blas_lanes of a reducing operation on 4 lanes is one
 *     collective (0 on one rank), with the same bits as each lane through
 *     the one-lane operation;
 *   - a failed rank: with be->error set on the last rank alone, a
 *     reduction is NaN on every rank (on one rank the backend's own value,
 *     as before), and wd_backend_agree then gives every rank that status.
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
#include "test_grid.h"
#include "wd_backend.h"
#include "wd_comm.h"
#include "wd_core.h"
#include "wdirac.h"

static int rank, nranks, checks_run, checks_failed;
static const int dims[4] = {8, 8, 4, 8};

static void *xalloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p) {
        fprintf(stderr, "test_reductions: out of memory\n");
        exit(1);
    }
    return p;
}

/* a case fails when it failed on any rank */
static void check(int ok, const char *what, const char *detail)
{
    double bad = !ok;
    if (wd_comm_sum(&bad, 1) != WD_OK) {
        fprintf(stderr, "test_reductions: rank %d: %s\n", rank, wd_last_error());
        exit(1);
    }
    checks_run++;
    checks_failed += bad > 0;
    if (!ok)
        printf("rank %d: %-64s FAIL %s\n", rank, what, detail);
    else if (rank == 0)
        printf("%-66s %s %s\n", what, bad > 0 ? "FAIL" : "OK  ", detail);
}

/* the count of collectives at every progress call */
enum { MAX_CALLS = 4096 };
typedef struct trace {
    int calls;
    long count[MAX_CALLS];
} trace;

static void on_progress(void *arg, int iterations, double residual)
{
    trace *t = arg;
    (void)iterations;
    (void)residual;
    if (t->calls < MAX_CALLS)
        t->count[t->calls++] = wd_comm_collectives();
}

static void per_iteration(const double *u, const double *b, double *x, wd_solver_type solver,
                          int sloppy)
{
    wd_solver_settings s;
    wd_solver_default_settings(&s);
    s.grid[0] = s.grid[1] = s.grid[2] = 1;
    s.grid[3] = nranks;
    s.solver = solver;
    s.sloppy_precision = sloppy;
    s.mass = 0.05;
    s.tol = 1e-9;
    /* no reliable updates: checks come at the target (and restarts), so
     * nearly every step is a plain iteration */
    s.delta = 1e-30;
    trace *t = xalloc(sizeof *t);
    s.progress = on_progress;
    s.progress_arg = t;
    wd_solver_stats st;
    const wd_status rc = wd_solve(x, u, b, dims, &s, &st);
    const int bicg = solver == WD_SOLVER_BICGSTAB;
    const long want = nranks > 1 ? (bicg ? 3 : 2) : 0;
    int steps = t->calls - 1, exact = 0, fewer = 0, hist[16] = {0};
    long most = 0, usual = 0;
    for (int i = 0; i < steps; i++) {
        const long d = t->count[i + 1] - t->count[i];
        exact += d == want;
        fewer += d < want;
        most = d > most ? d : most;
        hist[d < 15 ? d : 15]++;
    }
    for (int d = 1; d < 16; d++)
        usual = hist[d] > hist[usual] ? d : usual;
    char what[128], detail[256];
    snprintf(what, sizeof what, "%s %c-%c on %d rank(s): %ld reductions an iteration",
             bicg ? "BiCGstab" : "CG-NE", 'd', sloppy == 8 ? 'd' : 's', nranks, want);
    snprintf(detail, sizeof detail, "%d of %d steps exactly (usually %ld, at most %ld), %d "
             "checks (it=%d)%s%s", exact, steps, usual, most, st.updates, st.iterations,
             rc == WD_OK ? "" : " status: ", rc == WD_OK ? "" : wd_last_error());
    check(rc == WD_OK && steps >= 10 && fewer == 0 && steps - exact <= 2 * st.updates &&
          2 * exact >= steps, what, detail);
    free(t);
}

/* a multi-field of `lanes` right-hand sides of this rank's block, each
 * from its own seed */
static void fill(wd_backend *be, wd_field *f, int lanes, uint64_t seed, double *host)
{
    if (wd_field_create_multi(be, f, 8, lanes) != WD_OK) {
        fprintf(stderr, "test_reductions: rank %d: %s\n", rank, wd_last_error());
        exit(1);
    }
    for (int q = 0; q < lanes; q++) {
        wd_spinor_fill_random(host, be->dims, seed + 100 * (uint64_t)q + (uint64_t)rank);
        wd_field v = wd_field_view(f, q, 1);
        be->ops->upload(be, &v, host, 0);
    }
}

static void lanes(uint64_t seed)
{
    enum { N = 4 };
    wd_grid g;
    wd_backend be;
    const int procs[4] = {1, 1, 1, nranks};
    if (wd_grid_make(&g, dims, procs, nranks, rank, 4) != WD_OK ||
        wd_backend_open_grid(&be, WD_BACKEND_CPU, &g, 0) != WD_OK) {
        fprintf(stderr, "test_reductions: rank %d: %s\n", rank, wd_last_error());
        exit(1);
    }
    double *host = xalloc(wd_volume(g.local) * 24 * sizeof *host);
    wd_field x, y1, y2, z;
    fill(&be, &x, N, seed, host);
    fill(&be, &y1, N, seed + 7, host);
    fill(&be, &y2, N, seed + 7, host);
    fill(&be, &z, N, seed + 13, host);
    wd_lanes l;
    memset(&l, 0, sizeof l);
    l.n = N;
    for (int j = 0; j < N; j++) {
        l.idx[j] = j;
        l.a[j] = (wd_complex){0.25 * (j + 1), -0.125 * j};
    }

    /* <x, y>, |x|^2: read only */
    double got[3 * N], want[3 * N];
    long c0 = wd_comm_collectives();
    wd_blas_lanes(&be, WD_LANE_CDOT_NORM2, &l, &x, &y1, NULL, got);
    const long n_cdot = wd_comm_collectives() - c0;
    for (int j = 0; j < N; j++) {
        const wd_field xv = wd_field_view(&x, j, 1), yv = wd_field_view(&y1, j, 1);
        wd_blas_cdot_norm2(&be, &xv, &yv, want + 3 * j);
    }
    const int same_cdot = !memcmp(got, want, sizeof got) && got[2] > 0;

    /* y += a x, then |y|^2 and <z, y>: on y1 in one call, on y2 (the
     * same values) lane by lane */
    c0 = wd_comm_collectives();
    wd_blas_lanes(&be, WD_LANE_CAXPY_NORM2_CDOT, &l, &x, &y1, &z, got);
    const long n_upd = wd_comm_collectives() - c0;
    for (int j = 0; j < N; j++) {
        const wd_field xv = wd_field_view(&x, j, 1), zv = wd_field_view(&z, j, 1);
        wd_field yv = wd_field_view(&y2, j, 1);
        wd_blas_caxpy_norm2_cdot(&be, l.a[j], &xv, &yv, &zv, want + 3 * j);
    }
    const int same_upd = !memcmp(got, want, sizeof got) && got[0] > 0;

    const long one = nranks > 1;
    char what[128], detail[160];
    snprintf(what, sizeof what, "lanes: cdot_norm2 on %d lanes, %ld collective(s)", N, one);
    snprintf(detail, sizeof detail, "%ld made; the one-lane bits: %s", n_cdot,
             same_cdot ? "yes" : "no");
    check(n_cdot == one && same_cdot && be.error == WD_OK, what, detail);
    snprintf(what, sizeof what, "lanes: caxpy_norm2_cdot on %d lanes, %ld collective(s)", N, one);
    snprintf(detail, sizeof detail, "%ld made; the one-lane bits: %s", n_upd,
             same_upd ? "yes" : "no");
    check(n_upd == one && same_upd && be.error == WD_OK, what, detail);

    /* a failure on the last rank alone: NaN everywhere, then agreed */
    const wd_field x0 = wd_field_view(&x, 0, 1);
    const double healthy = wd_blas_norm2(&be, &x0);
    if (rank == nranks - 1)
        be.error = wd_fail(WD_ERR_INTERNAL, "test failure on rank %d", rank);
    const double n2 = wd_blas_norm2(&be, &x0);
    const wd_status agreed = wd_backend_agree(be.error);
    char expect[64];
    snprintf(expect, sizeof expect, "rank %d: test failure", nranks - 1);
    const int named = rank == nranks - 1 || strstr(wd_last_error(), expect) != NULL;
    if (nranks > 1) {
        snprintf(what, sizeof what, "a failed rank: its reduction NaN on every rank, agreed");
        snprintf(detail, sizeof detail, "norm2 %g, status %s: %s", n2, wd_status_string(agreed),
                 wd_last_error());
        check(isfinite(healthy) && isnan(n2) && agreed == WD_ERR_INTERNAL && named, what,
              detail);
    } else {
        snprintf(what, sizeof what, "a failed backend on one process: the reduction as before");
        snprintf(detail, sizeof detail, "norm2 %g (healthy %g)", n2, healthy);
        check(n2 == healthy && agreed == WD_ERR_INTERNAL, what, detail);
    }
    be.error = WD_OK;
    wd_field_destroy(&be, &x);
    wd_field_destroy(&be, &y1);
    wd_field_destroy(&be, &y2);
    wd_field_destroy(&be, &z);
    wd_backend_close(&be);
    free(host);
}

int main(int argc, char **argv)
{
    if (wd_init(&argc, &argv) != WD_OK) {
        fprintf(stderr, "test_reductions: %s\n", wd_last_error());
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
        printf("test_reductions: %d rank(s), seed %llu (--seed N replays)\n", nranks,
               (unsigned long long)seed);

    const int procs[4] = {1, 1, 1, nranks};
    wd_lattice lat;
    if (wd_lattice_make(&lat, dims, procs) != WD_OK) {
        fprintf(stderr, "test_reductions: %s\n", wd_last_error());
        wd_finalize();
        return 1;
    }
    const size_t vol = wd_volume(dims), n = wd_volume(lat.local);
    double *u = xalloc(vol * 72 * sizeof *u), *b = xalloc(vol * 24 * sizeof *b);
    double *ub = xalloc(n * 72 * sizeof *ub), *bb = xalloc(n * 24 * sizeof *bb);
    double *xb = xalloc(n * 24 * sizeof *xb);
    wd_rng r;
    wd_rng_seed(&r, seed);
    wd_gauge_smooth((double complex *)u, dims, 0.4, &r);
    wd_spinor_fill_random(b, dims, seed + 1);
    test_copy_block(ub, u, &lat, 72, 0);
    test_copy_block(bb, b, &lat, 24, 0);

    for (int k = 0; k < 2; k++) {
        per_iteration(ub, bb, xb, WD_SOLVER_BICGSTAB, k ? 4 : 8);
        per_iteration(ub, bb, xb, WD_SOLVER_CG, k ? 4 : 8);
    }
    lanes(seed);

    if (rank == 0)
        printf("%d of %d failed\n", checks_failed, checks_run);
    free(u), free(b), free(ub), free(bb), free(xb);
    wd_finalize();
    return checks_failed ? 1 : 0;
}
