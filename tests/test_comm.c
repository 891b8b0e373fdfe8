/*
 * test_comm: the comm module (runtime/comm/, wd_comm.h): process grids,
 * and under MPI the reductions, agreement, halos and messages.
 *
 *   test_comm [--seed N]                 (default seed: the time, printed)
 *   mpiexec -n P test_comm [--seed N]    the same on P ranks; rank 0 prints
 *
 * Checks (one line each; "N of M failed" last; exit 1 on a failure):
 *   grids      wd_grid_make on several lattices and grids, for every rank of
 *              each: dims, procs, local extents, origins, grid coordinates
 *              (rank order x fastest, here from a nested loop), periodic
 *              neighbours, partitioned; procs NULL or all zero is
 *              wd_grid_auto's grid
 *   bad grids  every refusal is WD_ERR_INVALID with a message naming the
 *              dimension (or lattice and factor) and the grid untouched
 *   auto       wd_grid_auto: T first, then Z, Y, X, small factors first;
 *              refusals name the lattice, the ranks and the factor
 *   any run    rank and size as MPI sees them; bad arguments refused on
 *              every rank alike; a halo in an unpartitioned dimension is two
 *              local copies; on one rank sum, agree and bcast are identities
 * On more than one rank (skipped with a note on one):
 *   sum        random per-rank values of wildly different magnitudes: the
 *              result equals the rank-order sum each rank recomputes from
 *              the seed, and has the same bits on every rank
 *   agree      one failing rank: its status everywhere, its message with
 *              "rank R: " elsewhere; two failing: the lowest wins
 *   halo       every dimension of several grids, all four exchanges in
 *              flight at once: each face holds the bytes its neighbour sent
 *              (patterns of sender, mu and direction into poisoned buffers)
 *   messages   bcast and ring send/recv of 5 MiB, and receives of too few
 *              or too many bytes refused
 * Every check is decided over all ranks: it fails if it fails on any, and
 * the failing ranks' details are printed.  That bookkeeping, and the seed's
 * broadcast, use MPI directly rather than the module under test.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef WD_HAVE_MPI
#include <mpi.h>
#endif

#include "rng.h"
#include "wd_comm.h"
#include "wd_core.h"

#define DETAIL 240

static int checks_run, checks_failed, rank, size = 1;

static void *xalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "test_comm: out of memory\n");
        exit(1);
    }
    return p;
}

#ifdef WD_HAVE_MPI
static void mpi_ok(int rc, const char *call)
{
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "test_comm: rank %d: %s failed in the test's own bookkeeping\n", rank,
                call);
        exit(1);
    }
}
#endif

/* One check, decided on every rank: OK only if OK everywhere. */
static void check(const char *what, int ok, const char *detail)
{
    char mine[DETAIL];
    snprintf(mine, sizeof mine, "%s", detail ? detail : "");
    char *all = NULL;
    int *oks = xalloc((size_t)size * sizeof *oks);
    oks[0] = ok;
#ifdef WD_HAVE_MPI
    if (size > 1) {
        all = xalloc((size_t)size * DETAIL);
        mpi_ok(MPI_Allgather(&ok, 1, MPI_INT, oks, 1, MPI_INT, MPI_COMM_WORLD), "MPI_Allgather");
        mpi_ok(MPI_Gather(mine, DETAIL, MPI_CHAR, all, DETAIL, MPI_CHAR, 0, MPI_COMM_WORLD),
               "MPI_Gather");
    }
#endif
    int everywhere = 1;
    for (int r = 0; r < size; ++r)
        everywhere &= oks[r] != 0;
    checks_run++;
    checks_failed += !everywhere;
    if (rank == 0) {
        /* a pass shows the first detail any rank gave, a failure every
         * failing rank's */
        int shown = 0;
        printf("%-62s %s", what, everywhere ? "OK" : "FAIL");
        for (int r = 0; r < size && !(everywhere && shown); ++r) {
            const char *d = r ? all + (size_t)r * DETAIL : mine;
            if (!d[0] || (!everywhere && oks[r]))
                continue;
            if (r)
                printf("%srank %d: %s", shown ? "\n    " : "  ", r, d);
            else
                printf("  %s", d);
            shown = 1;
        }
        printf("\n");
    }
    free(all);
    free(oks);
}

/* A refusal: the status, every expected piece of the message, and the
 * object it was to fill unchanged. */
static void check_refused(const char *what, wd_status st, wd_status want, const char *part1,
                          const char *part2, int untouched)
{
    char detail[DETAIL];
    const char *msg = wd_last_error();
    snprintf(detail, sizeof detail, "[%s] %s", wd_status_string(st), msg);
    const int ok = st == want && strstr(msg, part1) && (!part2 || strstr(msg, part2)) && untouched;
    check(what, ok, detail);
}

/* ---------------------------------------------------------------------- */
/* Grids                                                                  */

/* The geometry of every rank of a grid against one worked out here:
 * coordinates by counting through a nested loop (t outermost, x
 * innermost), neighbours by searching that table. */
static int grid_ok(const int dims[4], const int procs[4], int nranks, int min_local, char *detail)
{
    int(*c)[4] = xalloc((size_t)nranks * sizeof *c);
    int n = 0;
    for (int t = 0; t < procs[3]; ++t)
        for (int z = 0; z < procs[2]; ++z)
            for (int y = 0; y < procs[1]; ++y)
                for (int x = 0; x < procs[0]; ++x) {
                    c[n][0] = x, c[n][1] = y, c[n][2] = z, c[n][3] = t;
                    n++;
                }
    int ok = n == nranks;
    for (int q = 0; ok && q < nranks; ++q) {
        wd_grid g;
        wd_status st = wd_grid_make(&g, dims, procs, nranks, q, min_local);
        if (st != WD_OK) {
            snprintf(detail, DETAIL, "rank %d: [%s] %s", q, wd_status_string(st), wd_last_error());
            ok = 0;
            break;
        }
        ok = g.rank == q && g.size == nranks;
        for (int mu = 0; mu < 4; ++mu) {
            const int local = dims[mu] / procs[mu];
            ok &= g.dims[mu] == dims[mu] && g.procs[mu] == procs[mu] && g.local[mu] == local;
            ok &= g.coord[mu] == c[q][mu] && g.origin[mu] == c[q][mu] * local;
            ok &= g.partitioned[mu] == (procs[mu] > 1);
            for (int dir = 0; dir < 2; ++dir) {
                int want[4];
                memcpy(want, c[q], sizeof want);
                want[mu] = (want[mu] + (dir == WD_FWD ? 1 : procs[mu] - 1)) % procs[mu];
                int r = 0;
                while (r < nranks && memcmp(c[r], want, sizeof want))
                    r++;
                ok &= g.nbr[mu][dir] == r;
            }
        }
        if (!ok)
            snprintf(detail, DETAIL, "rank %d: coord %d %d %d %d origin %d %d %d %d", q, g.coord[0],
                     g.coord[1], g.coord[2], g.coord[3], g.origin[0], g.origin[1], g.origin[2],
                     g.origin[3]);
    }
    free(c);
    return ok;
}

static void test_grids(void)
{
    static const struct {
        int dims[4], procs[4], nranks, min_local;
    } good[] = {
        {{8, 8, 8, 8}, {1, 1, 1, 1}, 1, 4},       {{16, 16, 16, 32}, {1, 1, 1, 4}, 4, 4},
        {{8, 12, 16, 8}, {2, 1, 2, 2}, 8, 4},     {{12, 8, 16, 8}, {3, 2, 2, 1}, 12, 4},
        {{8, 8, 8, 8}, {2, 2, 2, 2}, 16, 4},      {{4, 4, 4, 24}, {1, 1, 1, 6}, 6, 4},
        {{4, 4, 4, 4}, {2, 2, 2, 2}, 16, 2},      {{20, 4, 4, 4}, {5, 1, 1, 1}, 5, 4},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; ++i) {
        char what[100], detail[DETAIL] = "";
        snprintf(what, sizeof what, "grid %d %d %d %d on %dx%dx%dx%d: every rank's geometry",
                 good[i].procs[0], good[i].procs[1], good[i].procs[2], good[i].procs[3],
                 good[i].dims[0], good[i].dims[1], good[i].dims[2], good[i].dims[3]);
        check(what, grid_ok(good[i].dims, good[i].procs, good[i].nranks, good[i].min_local, detail),
              detail);
    }

    /* procs NULL or all zero: wd_grid_auto's grid */
    {
        const int dims[4] = {16, 16, 16, 32}, zero[4] = {0, 0, 0, 0};
        int ok = 1;
        for (int nranks = 4; nranks <= 8; nranks += 4) {
            int p[4];
            ok &= wd_grid_auto(p, dims, nranks, 8) == WD_OK;
            for (int q = 0; ok && q < nranks; ++q) {
                wd_grid a, b, c;
                memset(&a, 1, sizeof a), memset(&b, 2, sizeof b), memset(&c, 3, sizeof c);
                ok &= wd_grid_make(&a, dims, NULL, nranks, q, 8) == WD_OK;
                ok &= wd_grid_make(&b, dims, zero, nranks, q, 8) == WD_OK;
                ok &= wd_grid_make(&c, dims, p, nranks, q, 8) == WD_OK;
                ok &= !memcmp(&a, &c, sizeof a) && !memcmp(&b, &c, sizeof b);
            }
        }
        check("procs NULL or all zero: wd_grid_auto's grid (4 and 8 ranks)", ok, NULL);
    }

    static const struct {
        const char *what;
        int dims[4], procs[4], nranks, rank, min_local;
        const char *part1, *part2;
    } bad[] = {
        {"refused: Pz does not divide Z", {16, 16, 16, 16}, {1, 1, 3, 2}, 6, 0, 4,
         "grid 1 1 3 2: Pz = 3 does not divide Z = 16", NULL},
        {"refused: Px does not divide X", {16, 16, 16, 16}, {5, 1, 1, 1}, 5, 0, 4,
         "Px = 5 does not divide X = 16", NULL},
        {"refused: odd local extent in T", {16, 16, 16, 12}, {1, 1, 1, 4}, 4, 0, 2,
         "local extent T = 3 (T = 12 over Pt = 4) is odd", NULL},
        {"refused: odd local extent in Y", {16, 6, 16, 16}, {1, 2, 1, 1}, 2, 1, 2,
         "local extent Y = 3 (Y = 6 over Py = 2) is odd", NULL},
        {"refused: local extent below min_local", {16, 16, 16, 16}, {1, 1, 1, 8}, 8, 0, 4,
         "local extent T = 2 (T = 16 over Pt = 8) is below the minimum 4", NULL},
        {"refused: grid with more ranks than the run", {16, 16, 16, 16}, {1, 1, 2, 2}, 2, 0, 4,
         "grid 1 1 2 2 has 4 ranks but the run has 2", NULL},
        {"refused: grid with fewer ranks than the run", {16, 16, 16, 16}, {1, 1, 1, 2}, 4, 3, 4,
         "grid 1 1 1 2 has 2 ranks but the run has 4", NULL},
        {"refused: Py = 0", {16, 16, 16, 16}, {1, 0, 1, 1}, 1, 0, 4, "Py = 0 must be >= 1", NULL},
        {"refused: Px < 0", {16, 16, 16, 16}, {-2, 1, 1, 1}, 1, 0, 4, "Px = -2", NULL},
        {"refused: rank beyond the run", {16, 16, 16, 16}, {1, 1, 1, 4}, 4, 4, 4, "rank 4 of 4",
         NULL},
        {"refused: negative rank", {16, 16, 16, 16}, {1, 1, 1, 4}, 4, -1, 4, "rank -1 of 4", NULL},
        {"refused: no ranks", {16, 16, 16, 16}, {0, 0, 0, 0}, 0, 0, 4, "rank 0 of 0", NULL},
        {"refused: odd lattice extent Z", {16, 16, 15, 16}, {1, 1, 1, 1}, 1, 0, 4, "Z = 15", NULL},
        {"refused: lattice extent Y below 4", {16, 2, 16, 16}, {1, 1, 1, 1}, 1, 0, 2, "Y = 2",
         NULL},
        {"refused: automatic grid that fits nowhere", {16, 16, 16, 16}, {0, 0, 0, 0}, 7, 0, 4,
         "16x16x16x16 on 7 ranks", "factor 7"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        wd_grid g, before;
        memset(&g, 0x5a, sizeof g);
        memcpy(&before, &g, sizeof g);
        wd_status st = wd_grid_make(&g, bad[i].dims, bad[i].procs, bad[i].nranks, bad[i].rank,
                                    bad[i].min_local);
        check_refused(bad[i].what, st, WD_ERR_INVALID, bad[i].part1, bad[i].part2,
                      !memcmp(&g, &before, sizeof g));
    }
}

static void test_auto(void)
{
    static const struct {
        int dims[4], nranks, min_local, want[4];
    } cases[] = {
        {{16, 16, 16, 32}, 1, 4, {1, 1, 1, 1}}, {{16, 16, 16, 32}, 4, 4, {1, 1, 1, 4}},
        {{16, 16, 16, 32}, 8, 4, {1, 1, 1, 8}}, {{16, 16, 16, 32}, 8, 8, {1, 1, 2, 4}},
        {{24, 24, 24, 8}, 6, 4, {1, 1, 3, 2}},  {{8, 8, 8, 8}, 16, 4, {2, 2, 2, 2}},
        {{8, 8, 8, 8}, 8, 4, {1, 2, 2, 2}},     {{4, 4, 4, 4}, 2, 0, {1, 1, 1, 2}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        int p[4] = {-1, -1, -1, -1};
        wd_status st = wd_grid_auto(p, cases[i].dims, cases[i].nranks, cases[i].min_local);
        char what[100], detail[DETAIL];
        snprintf(what, sizeof what, "auto: %dx%dx%dx%d on %d ranks, min_local %d -> %d %d %d %d",
                 cases[i].dims[0], cases[i].dims[1], cases[i].dims[2], cases[i].dims[3],
                 cases[i].nranks, cases[i].min_local, cases[i].want[0], cases[i].want[1],
                 cases[i].want[2], cases[i].want[3]);
        snprintf(detail, sizeof detail, "[%s] got %d %d %d %d", wd_status_string(st), p[0], p[1],
                 p[2], p[3]);
        check(what, st == WD_OK && !memcmp(p, cases[i].want, sizeof p), detail);
    }
    static const struct {
        int dims[4], nranks, min_local;
        const char *part1, *part2;
    } bad[] = {
        {{16, 16, 16, 32}, 6, 4, "16x16x16x32 on 6 ranks", "factor 3"},
        {{8, 8, 8, 8}, 32, 4, "8x8x8x8 on 32 ranks", "factor 2"},
        {{16, 16, 16, 32}, 0, 4, "16x16x16x32 on 0 ranks", NULL},
        {{16, 16, 16, 31}, 2, 4, "T = 31", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        int p[4] = {-1, -1, -1, -1};
        const int before[4] = {-1, -1, -1, -1};
        wd_status st = wd_grid_auto(p, bad[i].dims, bad[i].nranks, bad[i].min_local);
        char what[100];
        snprintf(what, sizeof what, "auto refused: %dx%dx%dx%d on %d ranks, min_local %d",
                 bad[i].dims[0], bad[i].dims[1], bad[i].dims[2], bad[i].dims[3], bad[i].nranks,
                 bad[i].min_local);
        check_refused(what, st, WD_ERR_INVALID, bad[i].part1, bad[i].part2,
                      !memcmp(p, before, sizeof p));
    }
}

/* ---------------------------------------------------------------------- */
/* Messages                                                               */

/* A byte that depends on who sent it, why, and where in the buffer. */
static unsigned char pattern(int from, int mu, int dir, size_t i)
{
    uint64_t x = (uint64_t)(unsigned)from << 40 ^ (uint64_t)mu << 36 ^ (uint64_t)dir << 32 ^ i;
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return (unsigned char)(x ^ (x >> 31));
}

static void fill(unsigned char *b, size_t n, int from, int mu, int dir)
{
    for (size_t i = 0; i < n; ++i)
        b[i] = pattern(from, mu, dir, i);
}

/* The first byte that is not from `from` (n when all are). */
static size_t first_wrong(const unsigned char *b, size_t n, int from, int mu, int dir)
{
    size_t i = 0;
    while (i < n && b[i] == pattern(from, mu, dir, i))
        i++;
    return i;
}

/* The four exchanges of grid g, all in flight before the first wait;
 * face sizes differ per dimension so that a mixed-up pair cannot match. */
static void test_halo(const wd_grid *g, const char *what)
{
    unsigned char *send[4][2], *recv[4][2];
    size_t bytes[4];
    wd_comm_halo h[4];
    int ok = 1;
    char detail[DETAIL] = "";
    for (int mu = 0; mu < 4; ++mu) {
        bytes[mu] = 4099 + 1000 * (size_t)mu;
        for (int dir = 0; dir < 2; ++dir) {
            send[mu][dir] = xalloc(bytes[mu]);
            recv[mu][dir] = xalloc(bytes[mu]);
            fill(send[mu][dir], bytes[mu], rank, mu, dir);
            memset(recv[mu][dir], 0xa5, bytes[mu]);
        }
    }
    for (int mu = 0; mu < 4; ++mu) {
        const void *s[2] = {send[mu][WD_FWD], send[mu][WD_BWD]};
        void *r[2] = {recv[mu][WD_FWD], recv[mu][WD_BWD]};
        wd_status st = wd_comm_halo_start(&h[mu], g, mu, s, r, bytes[mu]);
        if (st != WD_OK && ok) {
            snprintf(detail, sizeof detail, "start mu=%d: [%s] %s", mu, wd_status_string(st),
                     wd_last_error());
            ok = 0;
        }
    }
    for (int mu = 3; mu >= 0; --mu) {
        wd_status st = ok ? wd_comm_halo_wait(&h[mu]) : WD_OK;
        if (st != WD_OK && ok) {
            snprintf(detail, sizeof detail, "wait mu=%d: [%s] %s", mu, wd_status_string(st),
                     wd_last_error());
            ok = 0;
        }
    }
    for (int mu = 0; ok && mu < 4; ++mu) {
        /* recv[FWD] is what the forward neighbour sent backward, and so on */
        const int from[2] = {g->nbr[mu][WD_FWD], g->nbr[mu][WD_BWD]};
        for (int dir = 0; ok && dir < 2; ++dir) {
            const size_t bad_recv = first_wrong(recv[mu][dir], bytes[mu], from[dir], mu, 1 - dir);
            const size_t bad_send = first_wrong(send[mu][dir], bytes[mu], rank, mu, dir);
            if (bad_recv != bytes[mu] || bad_send != bytes[mu]) {
                snprintf(detail, sizeof detail,
                         "mu=%d %s face: received byte %zu, sent byte %zu of %zu differ", mu,
                         dir == WD_FWD ? "forward" : "backward", bad_recv, bad_send, bytes[mu]);
                ok = 0;
            }
        }
    }
    for (int mu = 0; mu < 4; ++mu)
        for (int dir = 0; dir < 2; ++dir)
            free(send[mu][dir]), free(recv[mu][dir]);
    check(what, ok, detail);
}

/* What works on any number of ranks. */
static void test_any_run(void)
{
    char detail[DETAIL];
    snprintf(detail, sizeof detail, "rank %d of %d, has_mpi %d", wd_comm_rank(), wd_comm_size(),
             wd_comm_has_mpi());
#ifdef WD_HAVE_MPI
    const int has_mpi = 1;
#else
    const int has_mpi = 0;
#endif
    check("rank, size and has_mpi as MPI sees them",
          wd_comm_rank() == rank && wd_comm_size() == size && wd_comm_has_mpi() == has_mpi, detail);

    double v[65] = {0};
    check_refused("sum of 65 doubles refused", wd_comm_sum(v, 65), WD_ERR_INVALID, "n = 65", NULL,
                  1);
    check_refused("sum of -1 doubles refused", wd_comm_sum(v, -1), WD_ERR_INVALID, "n = -1", NULL,
                  1);
    check("sum of 0 doubles", wd_comm_sum(v, 0) == WD_OK, NULL);
    check("agree on WD_OK everywhere", wd_comm_agree(WD_OK) == WD_OK, NULL);

    unsigned char buf[64];
    check_refused("bcast from rank -1 refused", wd_comm_bcast(buf, sizeof buf, -1), WD_ERR_INVALID,
                  "rank -1", NULL, 1);
    check_refused("bcast from a rank beyond the run refused", wd_comm_bcast(buf, sizeof buf, size),
                  WD_ERR_INVALID, "ranks 0..", NULL, 1);
    check_refused("send to this rank itself refused", wd_comm_send(buf, sizeof buf, rank, 0),
                  WD_ERR_INVALID, "another rank", NULL, 1);
    check_refused("recv from a rank beyond the run refused", wd_comm_recv(buf, sizeof buf, size, 0),
                  WD_ERR_INVALID, "another rank", NULL, 1);
    check_refused("recv with a negative tag refused",
                  wd_comm_recv(buf, sizeof buf, (rank + 1) % size, -1), WD_ERR_INVALID, "tag -1",
                  NULL, 1);

    /* the grid of this run, T split: the halos of x, y, z are local copies */
    const int dims[4] = {4, 4, 4, 4 * size};
    const int procs[4] = {1, 1, 1, size};
    wd_grid g;
    wd_status st = wd_grid_make(&g, dims, procs, size, rank, 2);
    snprintf(detail, sizeof detail, "%s", st == WD_OK ? "" : wd_last_error());
    check("grid 1 1 1 P of this run", st == WD_OK, detail);
    test_halo(&g, "halo on grid 1 1 1 P: every dimension, all in flight");

    unsigned char a[16] = {0}, b[16] = {0};
    const void *s[2] = {a, a};
    void *r[2] = {b, b};
    wd_comm_halo h;
    check_refused("halo in dimension 4 refused", wd_comm_halo_start(&h, &g, 4, s, r, sizeof a),
                  WD_ERR_INVALID, "mu = 4", NULL, 1);
    wd_grid other;
    st = wd_grid_make(&other, dims, procs, size, (rank + 1) % size, 2);
    if (size == 1) {
        const int two[4] = {4, 4, 4, 8}, p2[4] = {1, 1, 1, 2};
        st = wd_grid_make(&other, two, p2, 2, 1, 2);
    }
    check_refused("halo on another rank's grid refused",
                  st == WD_OK ? wd_comm_halo_start(&h, &other, 3, s, r, sizeof a) : st,
                  WD_ERR_INVALID, "the grid is for rank", NULL, 1);
    r[1] = NULL;
    check_refused("halo with a NULL face refused", wd_comm_halo_start(&h, &g, 0, s, r, sizeof a),
                  WD_ERR_INVALID, "NULL", NULL, 1);

    if (size == 1) {
        double w[3] = {1.5, -0.0, 1e300}, keep[3];
        memcpy(keep, w, sizeof w);
        check("one rank: sum leaves the values as they are",
              wd_comm_sum(w, 3) == WD_OK && !memcmp(w, keep, sizeof w), NULL);
        wd_status st1 = wd_comm_agree(wd_fail(WD_ERR_IO, "own cause (test)"));
        check("one rank: agree returns the status and keeps the message",
              st1 == WD_ERR_IO && !strcmp(wd_last_error(), "own cause (test)"), wd_last_error());
        unsigned char c[8] = {1, 2, 3, 4, 5, 6, 7, 8}, c0[8];
        memcpy(c0, c, sizeof c);
        check("one rank: bcast from rank 0 leaves the buffer",
              wd_comm_bcast(c, sizeof c, 0) == WD_OK && !memcmp(c, c0, sizeof c), NULL);
    }
}

#ifdef WD_HAVE_MPI
/* Rank q's partials for the sum test: normal numbers scaled by 2^-40..2^40,
 * so that the order of the additions shows in the bits. */
static void partials(double *v, int n, uint64_t seed, int q)
{
    wd_rng rng;
    wd_rng_seed(&rng, seed ^ (0x9e3779b97f4a7c15u * (uint64_t)(q + 1)));
    for (int i = 0; i < n; ++i) {
        const double scale = (double)(1ull << (wd_rng_u64(&rng) % 40));
        v[i] = wd_rng_normal(&rng) * (wd_rng_u64(&rng) & 1 ? scale : 1 / scale);
    }
}

static void test_sum(uint64_t seed)
{
    static const int ns[] = {1, 17, 64};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; ++k) {
        const int n = ns[k];
        double v[64], want[64], back[64], all[64];
        partials(want, n, seed, 0);
        for (int q = 1; q < size; ++q) {
            partials(all, n, seed, q);
            for (int i = 0; i < n; ++i)
                want[i] += all[i];
        }
        /* the same sum added from the last rank down */
        partials(back, n, seed, size - 1);
        for (int q = size - 2; q >= 0; --q) {
            partials(all, n, seed, q);
            for (int i = 0; i < n; ++i)
                back[i] += all[i];
        }
        partials(v, n, seed, rank);
        wd_status st = wd_comm_sum(v, n);
        double *every = xalloc((size_t)size * (size_t)n * sizeof *every);
        mpi_ok(MPI_Allgather(v, n, MPI_DOUBLE, every, n, MPI_DOUBLE, MPI_COMM_WORLD),
               "MPI_Allgather");
        int same = 1, order_shows = 0;
        for (int q = 0; q < size; ++q)
            same &= !memcmp(every + (size_t)q * (size_t)n, every, (size_t)n * sizeof *every);
        for (int i = 0; i < n; ++i)
            order_shows |= memcmp(&want[i], &back[i], sizeof want[i]) != 0;
        free(every);
        char what[100], detail[DETAIL];
        snprintf(what, sizeof what, "sum of %d doubles: the rank-order sum, bit for bit", n);
        snprintf(detail, sizeof detail, "%s", st == WD_OK ? "" : wd_last_error());
        check(what, st == WD_OK && !memcmp(v, want, (size_t)n * sizeof *v), detail);
        snprintf(what, sizeof what, "sum of %d doubles: the same bits on every rank", n);
        check(what, same, NULL);
        if (size >= 3 && n == 64)
            check("sum test values: reversed rank order gives other bits", order_shows, NULL);
    }
}

static void test_agree(void)
{
    const int f = size - 1;
    char want[DETAIL], detail[DETAIL];
    wd_status st = rank == f ? wd_fail(WD_ERR_IO, "disk full on rank %d (test)", rank) : WD_OK;
    st = wd_comm_agree(st);
    if (rank == f)
        snprintf(want, sizeof want, "disk full on rank %d (test)", f);
    else
        snprintf(want, sizeof want, "rank %d: disk full on rank %d (test)", f, f);
    snprintf(detail, sizeof detail, "[%s] %s", wd_status_string(st), wd_last_error());
    check("agree: the last rank fails, every rank gets its status and cause",
          st == WD_ERR_IO && !strcmp(wd_last_error(), want), detail);

    /* every odd rank fails, each differently: rank 1 wins */
    st = rank % 2 ? wd_fail(rank == 1 ? WD_ERR_CORRUPT : WD_ERR_NOMEM, "cause %d", rank) : WD_OK;
    st = wd_comm_agree(st);
    if (rank == 1)
        snprintf(want, sizeof want, "cause 1");
    else if (rank % 2)
        snprintf(want, sizeof want, "rank 1: cause 1 (this rank failed too: cause %d)", rank);
    else
        snprintf(want, sizeof want, "rank 1: cause 1");
    snprintf(detail, sizeof detail, "[%s] %s", wd_status_string(st), wd_last_error());
    check("agree: every odd rank fails, the lowest one's status wins",
          st == WD_ERR_CORRUPT && !strcmp(wd_last_error(), want), detail);
    check("agree: all WD_OK again afterwards", wd_comm_agree(WD_OK) == WD_OK, NULL);
}

static void test_halos(void)
{
    /* every dimension partitioned alone, then (on 4 ranks) two at a time */
    int grids[10][4], n = 0;
    for (int mu = 0; mu < 4; ++mu, ++n)
        for (int nu = 0; nu < 4; ++nu)
            grids[n][nu] = nu == mu ? size : 1;
    if (size == 4) {
        static const int two[4][4] = {{2, 2, 1, 1}, {1, 1, 2, 2}, {2, 1, 1, 2}, {1, 2, 2, 1}};
        memcpy(grids[n], two, sizeof two);
        n += 4;
    }
    for (int k = 0; k < n; ++k) {
        int dims[4];
        for (int mu = 0; mu < 4; ++mu)
            dims[mu] = 4 * grids[k][mu];
        wd_grid g;
        wd_status st = wd_grid_make(&g, dims, grids[k], size, rank, 2);
        char what[100];
        snprintf(what, sizeof what, "halo on grid %d %d %d %d: every dimension, all in flight",
                 grids[k][0], grids[k][1], grids[k][2], grids[k][3]);
        if (st != WD_OK) {
            check(what, 0, wd_last_error());
            continue;
        }
        test_halo(&g, what);
    }
}

static void test_messages(uint64_t seed)
{
    const size_t big = ((size_t)5 << 20) + 3;
    unsigned char *b = xalloc(big), *c = xalloc(big);
    const int root = size - 1, tag = (int)(seed % 1000);
    char detail[DETAIL] = "";

    if (rank == root)
        fill(b, big, root, 9, 0);
    else
        memset(b, 0xa5, big);
    wd_status st = wd_comm_bcast(b, big, root);
    size_t wrong = first_wrong(b, big, root, 9, 0);
    if (st != WD_OK || wrong != big)
        snprintf(detail, sizeof detail, "[%s] %s; first wrong byte %zu of %zu",
                 wd_status_string(st), st == WD_OK ? "" : wd_last_error(), wrong, big);
    check("bcast of 5 MiB + 3 bytes from the last rank", st == WD_OK && wrong == big, detail);

    /* a ring: even ranks send first, odd ranks receive first */
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    fill(b, big, rank, 10, 0);
    memset(c, 0xa5, big);
    if (rank % 2 == 0) {
        st = wd_comm_send(b, big, next, tag);
        if (st == WD_OK)
            st = wd_comm_recv(c, big, prev, tag);
    } else {
        st = wd_comm_recv(c, big, prev, tag);
        if (st == WD_OK)
            st = wd_comm_send(b, big, next, tag);
    }
    wrong = first_wrong(c, big, prev, 10, 0);
    const int intact = first_wrong(b, big, rank, 10, 0) == big;
    if (st != WD_OK || wrong != big || !intact)
        snprintf(detail, sizeof detail, "[%s] %s; first wrong byte %zu of %zu, sent %s",
                 wd_status_string(st), st == WD_OK ? "" : wd_last_error(), wrong, big,
                 intact ? "intact" : "changed");
    check("ring send/recv of 5 MiB + 3 bytes", st == WD_OK && wrong == big && intact, detail);

    /* rank 1 expects 200 bytes: rank 0 sends 100, then 300 */
    for (int k = 0; k < 2; ++k) {
        const size_t sent = k ? 300 : 100;
        st = WD_OK;
        if (rank == 0)
            st = wd_comm_send(b, sent, 1, tag + 1);
        else if (rank == 1)
            st = wd_comm_recv(c, 200, 0, tag + 1);
        detail[0] = 0;
        if (rank == 1 || st != WD_OK)
            snprintf(detail, sizeof detail, "[%s] %s", wd_status_string(st), wd_last_error());
        const int ok = rank != 1 ? st == WD_OK
                                 : st == WD_ERR_INVALID && strstr(wd_last_error(), "MPI_Recv") &&
                                       strstr(wd_last_error(), "from rank 0");
        check(k ? "recv of 200 bytes refuses 300 sent (MPI's truncation)"
                : "recv of 200 bytes refuses 100 sent",
              ok, detail);
    }
    free(b);
    free(c);
}
#endif

int main(int argc, char **argv)
{
    wd_status st = wd_comm_init(&argc, &argv);
    if (st != WD_OK) {
        fprintf(stderr, "test_comm: wd_comm_init: [%s] %s\n", wd_status_string(st),
                wd_last_error());
        return 1;
    }
    uint64_t seed = (uint64_t)time(NULL);
    if (argc == 3 && !strcmp(argv[1], "--seed"))
        seed = strtoull(argv[2], NULL, 0);
#ifdef WD_HAVE_MPI
    mpi_ok(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
    mpi_ok(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
    mpi_ok(MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD), "MPI_Bcast");
#endif
    if (rank == 0)
        printf("test_comm: seed %llu, %d rank%s, %s\n", (unsigned long long)seed, size,
               size == 1 ? "" : "s", wd_comm_has_mpi() ? "MPI" : "built without MPI");
#ifdef WD_COMM_CHUNK
    if (rank == 0)
        printf("test_comm: messages cut into chunks of %d bytes\n", WD_COMM_CHUNK);
#endif

    test_grids();
    test_auto();
    check("wd_comm_init again: nothing to do", wd_comm_init(&argc, &argv) == WD_OK, NULL);
    test_any_run();
#ifdef WD_HAVE_MPI
    if (size > 1) {
        test_sum(seed);
        test_agree();
        test_halos();
        test_messages(seed);
    }
#endif
    if (rank == 0 && size == 1)
        printf("note: sum, agree, halo and message checks across ranks need more than one "
               "rank (mpiexec -n 2 or more); skipped\n");
    const int failed = checks_failed, run = checks_run;
    wd_comm_finalize();
    if (rank == 0)
        printf("%d of %d failed\n", failed, run);
    return failed ? 1 : 0;
}
