/*
 * test_decomposed: the Dslash and the reductions of a backend on a process
 * grid against the same backend on one process.
 *
 *   mpirun -n N test_decomposed [--backend cpu|cuda] [--seed N] [--halo P]
 *                                 (default cpu; seed: the time, printed;
 *                                 P: the CUDA halo policy, auto, nccl,
 *                                 copy, kernel or mpi, forced on every grid)
 *
 * On CUDA each rank runs on its own GPU (wd_backend_cuda_select) and the
 * halos travel peer to peer, through NCCL or through MPI via the host;
 * the reference is the same lattice on one GPU (each rank computes it on
 * its own).  Exit 77 (skipped) without a GPU.
 *
 * Every rank draws the same global fields from the seed, applies every
 * built variant on the whole lattice alone (wd_backend_open) and on its
 * block of each grid of N ranks that partitions X, Y, Z, T alone and
 * several at once (wd_backend_open_grid; on one rank also the 1x1x1x1 grid
 * whose X, T, X and T, Y, Z and T, or all faces are exchanged with itself,
 * "self": the whole halo path on one process), for both parities and both time
 * boundary conditions, gauge-fixed variants on the field in temporal gauge.
 * The block of the decomposed result must equal the same block of the
 * one-process result bit for bit: halos carry the neighbours' stored
 * values unchanged and every site's arithmetic is the same.  Outputs and
 * the input's ghost faces are poisoned (all bits set) before each call.
 * The multi-RHS variants (_n2, _n4) run on multi-fields of one group and
 * of three groups of fresh random right-hand sides, whose faces a call
 * exchanges all at once: every right-hand side bit for bit the one-process
 * multi-RHS result and within the precision's tolerance (2e-14, 1e-6,
 * 3e-4 relative L2) of the float64 reference.  On 2 and 4 ranks two and
 * three dimensions are also exchanged at once, the grid's and the others
 * with the rank itself (grids 1x1x1x2 with Z, and with X, Y; 2x2x1x1 with
 * T; 1x1x2x2 with Y).  On CUDA every call on a grid must pack all its
 * faces (every partitioned dimension, both directions, every right-hand
 * side) in one launch and scatter none, the kernels reading the received
 * faces in place (wd_backend_cuda_halo_launches), and the one-RHS variants run twice,
 * with the exchange overlapping the interior sites' kernel (the default)
 * and before the whole kernel.  On every grid the site order of the
 * overlap (wd_site_order: interior first) must be a permutation whose
 * interior reads no ghost and whose boundary reads one, as
 * wd_site_neighbours finds them.  With --halo (or WDIRAC_HALO, which the
 * backend reads) every grid's exchanges must take the policy's route in
 * every exchanged dimension (peer to peer by copies or kernel writes,
 * NCCL, or MPI through the host; wd_backend_cuda_halo_route), and a
 * route that cannot be fails the grid.  Without either (AUTO), where a
 * dimension can go peer to peer, each kind of exchange's route is timed
 * and chosen at its first call: the last exchange must have taken the
 * route its tuning line names, and a second backend on the grid must take
 * it from the tune cache, with the same bits.
 * Global reductions (norm2, cdot) must agree with one process to 1e-13
 * relative (they add in another order) and be bitwise equal on every rank.
 * One line per case on rank 0 (every rank's failures printed with its
 * rank); "N of M failed" last; exit 1 on any failure.  On one process the
 * 1x1x1x1 grid runs (wd_backend_open_grid's own path).
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
#include "wd_backend.h"
#include "wd_comm.h"
#include "wd_layout.h"
#include "wd_operator.h"

static int rank, nranks, checks_run, checks_failed;
static wd_backend_kind kind = WD_BACKEND_CPU;
static wd_halo_policy halo = WD_HALO_AUTO;
static int halo_forced;

static void *xalloc(size_t n)
{
    void *p = calloc(1, n);
    if (!p) {
        fprintf(stderr, "test_decomposed: out of memory\n");
        exit(1);
    }
    return p;
}

/* every rank's verdict: a case fails when it failed on any rank */
static void check(int ok, const char *what)
{
    double bad = !ok;
    if (wd_comm_sum(&bad, 1) != WD_OK) {
        fprintf(stderr, "test_decomposed: rank %d: %s\n", rank, wd_last_error());
        exit(1);
    }
    checks_run++;
    checks_failed += bad > 0;
    if (!ok)
        printf("rank %d: %-64s FAIL\n", rank, what);
    else if (rank == 0 && bad > 0)
        printf("%-72s FAIL (on %g rank(s))\n", what, bad);
    else if (rank == 0)
        printf("%-72s OK\n", what);
}

/* A status the same on every rank (the lowest failing rank's, message
 * included): each rank then takes the same branch and makes the same
 * collectives after it.  A failure of one rank's backend that the grid
 * Dslash recorded in be->error (after the exchange, where its return is
 * the others' WD_OK) counts as the call's failure. */
static wd_status agreed(const wd_backend *be, wd_status st)
{
    if (st == WD_OK && be && be->error != WD_OK)
        st = be->error;
    return wd_comm_agree(st);
}

/* the local block of a global host field of `reals` doubles a site */
static void extract(double *local, const double *global, const wd_grid *g, int reals)
{
    const int *L = g->local, *D = g->dims, *o = g->origin;
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

typedef struct fields {
    const double *u, *uf;     /* global gauge field, and in temporal gauge */
    const double *in, *x;     /* global spinors */
} fields;

/* all bits set in a field: its sites, ghost faces, padding and norms, of
 * every right-hand side of a multi-field */
static wd_status poison(const wd_field *f)
{
    const size_t n = f->nrhs > 1 ? (size_t)f->nrhs : 1;
    if (kind == WD_BACKEND_CUDA)
        return wd_cuda_memset(f->data, 0xff, n * (f->bytes + f->norm_bytes));
    memset(f->data, 0xff, n * f->bytes);
    if (f->norm)
        memset(f->norm, 0xff, n * f->norm_bytes);
    return WD_OK;
}

/* On CUDA a grid's Dslash packs every face of every partitioned dimension
 * and right-hand side in one gather launch (none where the copy engine
 * sends them all straight from the field: T's faces on the copy route) and
 * scatters none (the kernels read the faces where they landed): whether
 * be's last call did (always true elsewhere) */
static int one_launch_halo(const wd_backend *be)
{
    if (kind != WD_BACKEND_CUDA || !be->halo.ghost_sites)
        return 1;
    int pack = 0, unpack = 0;
    wd_backend_cuda_halo_launches(be, &pack, &unpack);
    if (pack <= 1 && unpack == 0)
        return 1;
    printf("rank %d: the halo exchange made %d pack and %d unpack launches, not <= 1 and 0\n",
           rank, pack, unpack);
    return 0;
}

/* --halo: be's exchanges take the policy's route in every dimension */
static void force_halo(wd_backend *be, const int procs[4], int self)
{
    char what[200], route[64];
    wd_status st = wd_backend_cuda_set_halo(be, halo);
    wd_backend_cuda_halo_route(be, route, sizeof route);
    /* AUTO takes the copy engine where it can: a forced policy is its own */
    const char *want = wd_halo_policy_name(halo == WD_HALO_AUTO ? WD_HALO_COPY : halo);
    int ok = st == WD_OK && route[0];
    for (const char *r = route; ok && *r;) {  /* "T:kernel Z:kernel" */
        const char *colon = strchr(r, ':'), *end = strchr(r, ' ');
        const size_t len = end ? (size_t)(end - colon - 1) : strlen(colon + 1);
        ok = colon && len == strlen(want) && !strncmp(colon + 1, want, len);
        r = end ? end + 1 : r + strlen(r);
    }
    snprintf(what, sizeof what, "halo %s on grid %d%d%d%d%s: routes %s%s%s",
             wd_halo_policy_name(halo), procs[0], procs[1], procs[2], procs[3],
             self ? " self" : "", route, st == WD_OK ? "" : ": ",
             st == WD_OK ? "" : wd_last_error());
    check(ok, what);
}

/* AUTO's route on a CUDA grid (wd_backend_cuda_halo_tuning): where a
 * dimension could go peer to peer the kind of exchange was timed on every
 * candidate route (or found in the tune cache, cached: required), and the
 * last exchange took the choice its line names ("... us -> copy", "...:
 * copy (the tune cache)"; copy-zt is the copy route) in every such
 * dimension, NCCL in the others; with no choice (no line) no dimension
 * went peer to peer */
static void check_auto_route(const wd_backend *be, const char *gname, int cached)
{
    char tuning[160], route[64], choice[16] = "", what[400];
    wd_backend_cuda_halo_tuning(be, tuning, sizeof tuning);
    wd_backend_cuda_halo_route(be, route, sizeof route);
    const char *arrow = strstr(tuning, " -> "), *from = strstr(tuning, " (the tune cache)");
    if (arrow)
        snprintf(choice, sizeof choice, "%s", arrow + 4);
    else if (from) {
        const char *colon = strrchr(tuning, ':');  /* "...: copy (the tune cache)" */
        if (colon && colon + 2 < from)
            snprintf(choice, sizeof choice, "%.*s", (int)(from - colon - 2), colon + 2);
    }
    const int named = !strcmp(choice, "copy") || !strcmp(choice, "copy-zt") ||
                      !strcmp(choice, "kernel") || !strcmp(choice, "nccl");
    /* copy-zt is the copy route (Z's faces from the field too) */
    if (!strcmp(choice, "copy-zt"))
        choice[4] = 0;
    int ok = route[0] && (tuning[0] ? named && (!cached || from) : !cached), took = 0;
    for (const char *r = route; ok && *r;) {  /* "T:copy Z:nccl" */
        const char *colon = strchr(r, ':'), *end = strchr(r, ' ');
        const size_t len = end ? (size_t)(end - colon - 1) : strlen(colon + 1);
        const int is_choice =
            tuning[0] && len == strlen(choice) && !strncmp(colon + 1, choice, len);
        const int is_nccl = len == 4 && !strncmp(colon + 1, "nccl", 4);
        ok = is_choice || is_nccl;
        took |= is_choice;
        r = end ? end + 1 : r + strlen(r);
    }
    ok = ok && (!tuning[0] || took);
    snprintf(what, sizeof what, "halo auto on grid %s%s: routes %s; %s", gname,
             cached ? ", a second backend" : "", route, tuning[0] ? tuning : "no choice");
    check(ok, what);
}

/* whether the last apply / apply_multi's exchange was one launch each way */
static int last_one_launch;

/* out = D in (+ x) of variant v on backend be, read back into host (local) */
static wd_status apply(wd_backend *be, int v, const double *u, const double *in, const double *x,
                       int parity, int tbc, double *host)
{
    const wd_variant *var = &wd_variants[v];
    wd_gauge g;
    wd_field fo, fi, fx;
    memset(&fo, 0, sizeof fo), memset(&fi, 0, sizeof fi), memset(&fx, 0, sizeof fx);
    /* collective (it agrees); the rest up to the Dslash is this rank's */
    wd_status st = wd_gauge_create(be, &g, u, var->precision, var->recon, var->gauge_fix, tbc);
    if (st != WD_OK)
        return st;
    if ((st = wd_field_create(be, &fo, var->precision)) == WD_OK &&
        (st = wd_field_create(be, &fi, var->precision)) == WD_OK &&
        (!var->xpay || (st = wd_field_create(be, &fx, var->precision)) == WD_OK) &&
        (st = poison(&fo)) == WD_OK && (st = poison(&fi)) == WD_OK &&
        (st = be->ops->upload(be, &fi, in, 1 - parity)) == WD_OK && var->xpay)
        st = be->ops->upload(be, &fx, x, parity);
    memset(host, 0, 24 * sizeof(double) * 2 * be->volume_cb);
    /* the Dslash on a grid is collective: every rank calls it, or none */
    if (be->grid.size > 1)
        st = agreed(NULL, st);
    if (st == WD_OK)
        st = wd_dslash(be, v, &fo, &g, &fi, var->xpay ? &fx : NULL, 0.37, parity);
    last_one_launch = st == WD_OK && one_launch_halo(be);
    if (st == WD_OK)
        st = be->ops->download(be, host, &fo, parity);
    wd_field_destroy(be, &fo);
    wd_field_destroy(be, &fi);
    wd_field_destroy(be, &fx);
    wd_gauge_destroy(be, &g);
    return st;
}

/* out = D in (+ x) of multi-RHS variant v on `count` right-hand sides of
 * multi-fields in one call (count / nrhs groups), right-hand side q of the
 * host fields at q * 24 * sites doubles (sites: be's local volume) */
static wd_status apply_multi(wd_backend *be, int v, const double *u, const double *in,
                             const double *x, int parity, int tbc, int count, double *host)
{
    const wd_variant *var = &wd_variants[v];
    const size_t sz = 24 * (size_t)2 * be->volume_cb;
    wd_gauge g;
    wd_field fo, fi, fx;
    memset(&fo, 0, sizeof fo), memset(&fi, 0, sizeof fi), memset(&fx, 0, sizeof fx);
    wd_status st = wd_gauge_create(be, &g, u, var->precision, var->recon, var->gauge_fix, tbc);
    if (st != WD_OK)
        return st;
    if ((st = wd_field_create_multi(be, &fo, var->precision, count)) == WD_OK &&
        (st = wd_field_create_multi(be, &fi, var->precision, count)) == WD_OK &&
        (!var->xpay || (st = wd_field_create_multi(be, &fx, var->precision, count)) == WD_OK) &&
        (st = poison(&fo)) == WD_OK && (st = poison(&fi)) == WD_OK)
        for (int q = 0; q < count && st == WD_OK; q++) {
            wd_field vi = wd_field_view(&fi, q, 1), vx = wd_field_view(&fx, q, 1);
            st = be->ops->upload(be, &vi, in + q * sz, 1 - parity);
            if (st == WD_OK && var->xpay)
                st = be->ops->upload(be, &vx, x + q * sz, parity);
        }
    /* the Dslash on a grid is collective: every rank calls it, or none */
    if (be->grid.size > 1)
        st = agreed(NULL, st);
    if (st == WD_OK)
        st = wd_dslash(be, v, &fo, &g, &fi, var->xpay ? &fx : NULL, 0.37, parity);
    last_one_launch = st == WD_OK && one_launch_halo(be);
    memset(host, 0, count * sz * sizeof(double));
    for (int q = 0; q < count && st == WD_OK; q++) {
        const wd_field vo = wd_field_view(&fo, q, 1);
        st = be->ops->download(be, host + q * sz, &vo, parity);
    }
    wd_field_destroy(be, &fo);
    wd_field_destroy(be, &fi);
    wd_field_destroy(be, &fx);
    wd_gauge_destroy(be, &g);
    return st;
}

/* the parity of site s of the lattice dims */
static int site_parity(const int dims[4], size_t s)
{
    int sum = 0;
    for (int mu = 0; mu < 4; mu++) {
        sum += (int)(s % (size_t)dims[mu]);
        s /= (size_t)dims[mu];
    }
    return sum & 1;
}

/* the tolerance of the float64 reference comparison (checkdslash's, recon 12) */
static double ref_tolerance(int precision)
{
    return precision == 8 ? 2e-14 : precision == 4 ? 1e-6 : 3e-4;
}

/* The multi-RHS Wilson variants on grid g against one process: for each,
 * both parities and time boundaries, one group of N right-hand sides
 * (parity 0) or three (parity 1), every right-hand side a fresh random
 * input (and x) of its own.  Each right-hand side's block must equal the
 * one-process multi-RHS result bit for bit, and the whole lattice's result
 * must match the float64 reference (ref_dslash_parity, x + a D in for
 * xpay) within the precision's tolerance in relative L2 over the ranks. */
static void run_multi(wd_backend *one, wd_backend *dec, const wd_grid *g, const fields *fs,
                      const int procs[4], int self, uint64_t seed)
{
    const int *dims = g->dims;
    const size_t vol = wd_volume(dims), lvol = wd_volume(g->local);
    int nmax = 1;
    for (int v = 0; v < wd_variant_count; v++)
        if (wd_variants[v].op == WD_OP_WILSON && 3 * wd_variants[v].nrhs > nmax)
            nmax = 3 * wd_variants[v].nrhs;
    if (nmax < 6)
        return;  /* no multi-RHS variant built */
    double *in = xalloc(24 * vol * nmax * sizeof(double)), *x = xalloc(24 * vol * nmax * sizeof(double));
    double *inl = xalloc(24 * lvol * nmax * sizeof(double)), *xl = xalloc(24 * lvol * nmax * sizeof(double));
    double *whole = xalloc(24 * vol * nmax * sizeof(double)), *part = xalloc(24 * lvol * nmax * sizeof(double));
    double *expect = xalloc(24 * lvol * sizeof(double)), *ref = xalloc(24 * vol * sizeof(double));
    double *ul = xalloc(72 * lvol * sizeof(double)), *ufl = xalloc(72 * lvol * sizeof(double));
    extract(ul, fs->u, g, 72);
    extract(ufl, fs->uf, g, 72);
    wd_rng r;
    wd_rng_seed(&r, seed ^ 0x6d756c7469ull);
    for (int q = 0; q < nmax; q++) {
        wd_spinor_random((double complex *)(in + 24 * vol * q), dims, &r);
        wd_spinor_random((double complex *)(x + 24 * vol * q), dims, &r);
        extract(inl + 24 * lvol * q, in + 24 * vol * q, g, 24);
        extract(xl + 24 * lvol * q, x + 24 * vol * q, g, 24);
    }
    for (int v = 0; v < wd_variant_count; v++)
        for (int tbc = -1; tbc <= 1; tbc += 2)
            for (int parity = 0; parity < 2 && wd_variants[v].op == WD_OP_WILSON &&
                                 wd_variants[v].nrhs > 1; parity++) {
                const wd_variant *var = &wd_variants[v];
                const int count = var->nrhs * (parity ? 3 : 1);
                const double *u = var->gauge_fix ? fs->uf : fs->u;
                char what[160];
                snprintf(what, sizeof what, "%s x%d grid %d%d%d%d%s %s parity %d", var->name,
                         count, procs[0], procs[1], procs[2], procs[3], self ? " self" : "",
                         tbc < 0 ? "antiper" : "periodic", parity);
                /* every rank's status agreed after each backend (a failure
                 * on one rank alone must not send it to check() while the
                 * others sum their errors below: MPI_ERR_TRUNCATE) */
                wd_status st = agreed(one, apply_multi(one, v, u, in, x, parity, tbc, count,
                                                       whole));
                if (st == WD_OK)
                    st = agreed(dec, apply_multi(dec, v, var->gauge_fix ? ufl : ul, inl, xl,
                                                 parity, tbc, count, part));
                if (st != WD_OK) {
                    check(0, wd_last_error());
                    continue;
                }
                int same = 1;
                double n2 = 1e300, worst = 0;
                for (int q = 0; q < count; q++) {
                    const double *pq = part + 24 * lvol * q;
                    extract(expect, whole + 24 * vol * q, g, 24);
                    double nq = 0;
                    for (size_t k = 0; k < 24 * lvol; k++)
                        nq += pq[k] * pq[k];
                    n2 = nq < n2 ? nq : n2;
                    same &= !memcmp(pq, expect, 24 * lvol * sizeof(double));
                    /* the float64 reference of this right-hand side, on this
                     * rank's block, summed over the ranks */
                    ref_dslash_parity((double complex *)ref, (const double complex *)u,
                                      (const double complex *)(in + 24 * vol * q), dims, tbc,
                                      var->dagger, parity);
                    if (var->xpay)
                        for (size_t k = 0; k < 24 * vol; k++)
                            if (site_parity(dims, k / 24) == parity)
                                ref[k] = x[24 * vol * q + k] + 0.37 * ref[k];
                    extract(expect, ref, g, 24);
                    double e[2] = {0, 0};
                    for (size_t k = 0; k < 24 * lvol; k++) {
                        e[0] += (pq[k] - expect[k]) * (pq[k] - expect[k]);
                        e[1] += expect[k] * expect[k];
                    }
                    wd_comm_sum(e, 2);
                    const double rel = e[1] > 0 ? sqrt(e[0] / e[1]) : INFINITY;
                    worst = rel > worst || rel != rel ? rel : worst;
                }
                char full[240];
                snprintf(full, sizeof full, "%s: bitwise, rel_l2 %.1e tol %.0e", what, worst,
                         ref_tolerance(var->precision));
                check(n2 > 0 && same && worst <= ref_tolerance(var->precision) && last_one_launch,
                      full);
            }
    free(in);
    free(x);
    free(inl);
    free(xl);
    free(whole);
    free(part);
    free(expect);
    free(ref);
    free(ul);
    free(ufl);
}

/* wd_site_order on the block of a grid backend, both parities: a
 * permutation of the output sites, ascending within each part, whose
 * interior sites have every neighbour local and whose boundary sites read
 * at least one ghost, as the kernels' own wd_site_neighbours finds them
 * (the list the CUDA backend's overlap computes apart) */
static void check_site_order(const wd_backend *dec, const char *grid)
{
    const int n = dec->volume_cb;
    int *order = xalloc((size_t)n * sizeof *order), *seen = xalloc((size_t)n * sizeof *seen);
    for (int parity = 0; parity < 2; parity++) {
        wd_dslash_args a;
        memset(&a, 0, sizeof a);
        memset(seen, 0, (size_t)n * sizeof *seen);
        for (int mu = 0; mu < 4; mu++) {
            a.dims[mu] = dec->dims[mu];
            a.part |= (dec->halo.part[mu] != 0) << mu;
            a.ghost[mu][0] = dec->halo.ghost[mu][0];
            a.ghost[mu][1] = dec->halo.ghost[mu][1];
        }
        a.parity = parity;
        a.global_T = dec->halo.global_T;
        const int inner = wd_site_order(dec->dims, dec->halo.part, parity, order);
        int ok = inner >= 0 && inner <= n, expect = 1;
        for (int mu = 0; mu < 4; mu++)
            expect *= dec->halo.part[mu] ? dec->dims[mu] - 2 : dec->dims[mu];
        ok = ok && inner == expect / 2;
        for (int k = 0; k < n && ok; k++) {
            const int cb = order[k];
            ok = cb >= 0 && cb < n && !seen[cb]++ &&
                 (k == 0 || k == inner || cb > order[k - 1]);
            wd_site st;
            wd_site_neighbours(&a, ok ? cb : 0, &st);
            int ghost = 0;
            for (int mu = 0; mu < 4; mu++)
                ghost |= st.fwd[mu] >= n || st.bwd[mu] >= n;
            ok = ok && ghost == (k >= inner);
        }
        char what[160];
        snprintf(what, sizeof what, "site order grid %s parity %d: %d interior sites first, "
                 "then the %d reading a ghost", grid, parity, inner, n - inner);
        check(ok, what);
    }
    free(order);
    free(seen);
}

/* self: on one rank, dimensions (bit mu) whose faces are exchanged
 * although the rank is its own neighbour there: the halo path (gather,
 * exchange, scatter, ghost reads) on one process, which must give the
 * periodic lattice exactly */
static void run_grid(const int procs[4], const fields *fs, const int local[4], int self,
                     uint64_t seed)
{
    int dims[4];
    for (int mu = 0; mu < 4; mu++)
        dims[mu] = local[mu] * procs[mu];
    wd_grid g;
    if (wd_grid_make(&g, dims, procs, nranks, rank, 4) != WD_OK) {
        check(0, wd_last_error());
        return;
    }
    for (int mu = 0; mu < 4; mu++)
        g.partitioned[mu] |= (self >> mu) & 1;
    const size_t vol = wd_volume(dims), lvol = wd_volume(g.local);
    double *ul = xalloc(72 * lvol * sizeof(double)), *ufl = xalloc(72 * lvol * sizeof(double));
    double *inl = xalloc(24 * lvol * sizeof(double)), *xl = xalloc(24 * lvol * sizeof(double));
    double *whole = xalloc(24 * vol * sizeof(double)), *part = xalloc(24 * lvol * sizeof(double));
    double *expect = xalloc(24 * lvol * sizeof(double));
    extract(ul, fs->u, &g, 72);
    extract(ufl, fs->uf, &g, 72);
    extract(inl, fs->in, &g, 24);
    extract(xl, fs->x, &g, 24);
    wd_backend one, dec;
    if (wd_backend_open(&one, kind, dims, 0) != WD_OK ||
        wd_backend_open_grid(&dec, kind, &g, 0) != WD_OK) {
        check(0, wd_last_error());
        exit(1);
    }
    if (halo_forced && kind == WD_BACKEND_CUDA && dec.halo.ghost_sites > 0)
        force_halo(&dec, procs, self);
    char gname[32];
    snprintf(gname, sizeof gname, "%d%d%d%d%s", procs[0], procs[1], procs[2], procs[3],
             self ? " self" : "");
    if (dec.halo.ghost_sites > 0)
        check_site_order(&dec, gname);
    /* the one-RHS Wilson variants here, the multi-RHS ones in run_multi;
     * the clover ones add a site-local epilogue to the same hops
     * (test_solver_grid runs them on grids through the solver).  On a
     * CUDA grid also with the exchange before the whole kernel ("serial"),
     * besides the default overlap of the interior */
    const int modes = kind == WD_BACKEND_CUDA && dec.halo.ghost_sites > 0 ? 2 : 1;
    for (int serial = 0; serial < modes; serial++) {
        wd_backend_cuda_set_overlap(&dec, !serial);
        for (int v = 0; v < wd_variant_count; v++)
            for (int tbc = -1; tbc <= 1; tbc += 2)
                for (int parity = 0; parity < 2 && wd_variants[v].op == WD_OP_WILSON &&
                                     wd_variants[v].nrhs == 1; parity++) {
                    const wd_variant *var = &wd_variants[v];
                    const double *u = var->gauge_fix ? fs->uf : fs->u;
                    char what[160];
                    snprintf(what, sizeof what, "%s grid %s %s parity %d%s", var->name, gname,
                             tbc < 0 ? "antiper" : "periodic", parity, serial ? " serial" : "");
                    wd_status st =
                        agreed(&one, apply(&one, v, u, fs->in, fs->x, parity, tbc, whole));
                    if (st == WD_OK)
                        st = agreed(&dec, apply(&dec, v, var->gauge_fix ? ufl : ul, inl, xl,
                                                parity, tbc, part));
                    if (st != WD_OK) {
                        check(0, wd_last_error());
                        continue;
                    }
                    extract(expect, whole, &g, 24);
                    double n2 = 0;
                    for (size_t k = 0; k < 24 * lvol; k++)
                        n2 += part[k] * part[k];
                    check(n2 > 0 && !memcmp(part, expect, 24 * lvol * sizeof(double)) &&
                          last_one_launch, what);
                }
    }
    wd_backend_cuda_set_overlap(&dec, 1);

    /* AUTO's choice of route: the last exchange's, and a second backend on
     * the grid takes the first one's from the tune cache, with the same
     * bits */
    if (kind == WD_BACKEND_CUDA && dec.halo.ghost_sites > 0 && halo == WD_HALO_AUTO) {
        check_auto_route(&dec, gname, 0);
        char tuning[160];
        wd_backend_cuda_halo_tuning(&dec, tuning, sizeof tuning);
        int v0 = 0;
        while (v0 < wd_variant_count &&
               (wd_variants[v0].op != WD_OP_WILSON || wd_variants[v0].nrhs != 1 ||
                wd_variants[v0].gauge_fix))
            v0++;
        if (tuning[0] && v0 < wd_variant_count) {
            wd_backend again;
            if (wd_backend_open_grid(&again, kind, &g, 0) != WD_OK) {
                check(0, wd_last_error());
                exit(1);
            }
            wd_status st = agreed(&one, apply(&one, v0, fs->u, fs->in, fs->x, 0, -1, whole));
            if (st == WD_OK)
                st = agreed(&again, apply(&again, v0, ul, inl, xl, 0, -1, part));
            extract(expect, whole, &g, 24);
            char what[200];
            snprintf(what, sizeof what, "%s grid %s antiper parity 0, a second backend on the "
                     "cached route", wd_variants[v0].name, gname);
            check(st == WD_OK && !memcmp(part, expect, 24 * lvol * sizeof(double)), what);
            check_auto_route(&again, gname, 1);
            wd_backend_close(&again);
        }
    }

    run_multi(&one, &dec, &g, fs, procs, self, seed);

    /* global reductions against one process */
    wd_field a1, b1, ad, bd;
    if (wd_field_create(&one, &a1, 8) != WD_OK || wd_field_create(&one, &b1, 8) != WD_OK ||
        wd_field_create(&dec, &ad, 8) != WD_OK || wd_field_create(&dec, &bd, 8) != WD_OK) {
        check(0, wd_last_error());
        exit(1);
    }
    one.ops->upload(&one, &a1, fs->in, 0);
    one.ops->upload(&one, &b1, fs->x, 0);
    dec.ops->upload(&dec, &ad, inl, 0);
    dec.ops->upload(&dec, &bd, xl, 0);
    const double n1 = wd_blas_norm2(&one, &a1), nd = wd_blas_norm2(&dec, &ad);
    const wd_complex c1 = wd_blas_cdot(&one, &a1, &b1), cd = wd_blas_cdot(&dec, &ad, &bd);
    const double mine[3] = {nd, cd.re, cd.im};
    double root[3] = {nd, cd.re, cd.im};
    wd_comm_bcast(root, sizeof root, 0);
    char what[160];
    snprintf(what, sizeof what, "reductions grid %d%d%d%d%s: norm2 %.3e, cdot within "
             "1e-13 |a| |b|, the same bits on every rank", procs[0], procs[1], procs[2], procs[3],
             self ? " self" : "", n1);
    /* a dot product's rounding scales with |a| |b| (Cauchy-Schwarz), not
     * with |<a, b>|, which cancellation between random terms can make
     * small: seed 1795794011 on 4 ranks missed 1e-13 |<a, b>| */
    const double cn = sqrt(n1 * wd_blas_norm2(&one, &b1));
    check(fabs(nd - n1) <= 1e-13 * n1 && hypot(cd.re - c1.re, cd.im - c1.im) <= 1e-13 * cn &&
          dec.error == WD_OK && !memcmp(mine, root, sizeof mine),
          what);
    wd_field_destroy(&one, &a1);
    wd_field_destroy(&one, &b1);
    wd_field_destroy(&dec, &ad);
    wd_field_destroy(&dec, &bd);
    wd_backend_close(&one);
    wd_backend_close(&dec);
    free(ul);
    free(ufl);
    free(inl);
    free(xl);
    free(whole);
    free(part);
    free(expect);
}

/* fresh global fields from seed s (the same on every rank) on the lattice
 * of `local` blocks on grid p, and run_grid on them */
static void run_seeded(const int p[4], int self, const int local[4], uint64_t s)
{
    int dims[4];
    for (int mu = 0; mu < 4; mu++)
        dims[mu] = local[mu] * p[mu];
    const size_t vol = wd_volume(dims);
    double complex *u = xalloc(36 * vol * sizeof *u), *uf = xalloc(36 * vol * sizeof *uf);
    double complex *gt = xalloc(9 * vol * sizeof *gt);
    double complex *in = xalloc(12 * vol * sizeof *in), *x = xalloc(12 * vol * sizeof *x);
    wd_rng r;
    wd_rng_seed(&r, s);
    wd_gauge_random(u, dims, &r);
    wd_temporal_gauge_field(uf, gt, u, dims);
    wd_spinor_random(in, dims, &r);
    wd_spinor_random(x, dims, &r);
    const fields fs = {(double *)u, (double *)uf, (double *)in, (double *)x};
    run_grid(p, &fs, local, self, s);
    free(u);
    free(uf);
    free(gt);
    free(in);
    free(x);
}

int main(int argc, char **argv)
{
    if (wd_comm_init(&argc, &argv) != WD_OK) {
        fprintf(stderr, "test_decomposed: %s\n", wd_last_error());
        return 1;
    }
    rank = wd_comm_rank();
    nranks = wd_comm_size();
    uint64_t seed = (uint64_t)time(NULL);
    /* the halo policy: --halo, else WDIRAC_HALO (which the backend reads at
     * each grid's opening); either forces every grid's routes, which are
     * checked against it (WDIRAC_HALO=auto leaves AUTO's choice) */
    const char *policy = getenv("WDIRAC_HALO");
    int flag = 0;
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--seed"))
            seed = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--halo"))
            policy = argv[i + 1], flag = 1;
        else if (!strcmp(argv[i], "--backend"))
            kind = !strcmp(argv[i + 1], "cuda") || !strcmp(argv[i + 1], "gpu") ? WD_BACKEND_CUDA
                                                                                 : WD_BACKEND_CPU;
    if (policy && *policy) {
        if (wd_halo_policy_parse(policy, &halo) != WD_OK) {
            fprintf(stderr, "test_decomposed: %s: %s\n", flag ? "--halo" : "WDIRAC_HALO",
                    wd_last_error());
            return 2;
        }
        halo_forced = flag || halo != WD_HALO_AUTO;
    }
    if (kind == WD_BACKEND_CUDA) {
        /* every rank decides alike: the lowest rank's reason wins */
        double skip = !wd_cuda_available();
        wd_comm_sum(&skip, 1);
        if (skip > 0) {
            if (rank == 0)
                printf("test_decomposed --backend cuda: SKIP (no usable GPU)\n");
            wd_comm_finalize();
            return 77;
        }
        if (wd_backend_cuda_select() != WD_OK) {
            fprintf(stderr, "test_decomposed: rank %d: %s\n", rank, wd_last_error());
            wd_comm_finalize();
            return 1;
        }
    }
    /* the halo policies' names, both ways, and a bad one refused by name */
    for (int p = WD_HALO_AUTO; p <= WD_HALO_MPI; ++p) {
        wd_halo_policy back = WD_HALO_AUTO;
        char what[96];
        snprintf(what, sizeof what, "halo policy %d: its name '%s' parses back", p,
                 wd_halo_policy_name((wd_halo_policy)p));
        check(wd_halo_policy_parse(wd_halo_policy_name((wd_halo_policy)p), &back) == WD_OK &&
                  back == (wd_halo_policy)p,
              what);
    }
    {
        wd_halo_policy back = WD_HALO_COPY;
        const wd_status st = wd_halo_policy_parse("nvlink", &back);
        check(st == WD_ERR_INVALID && strstr(wd_last_error(), "'nvlink'") && back == WD_HALO_COPY,
              "halo policy 'nvlink' refused, naming it, the policy untouched");
    }
    /* rank 0's seed for everyone */
    double s = rank == 0 ? (double)(seed % (1ull << 52)) : 0;
    wd_comm_sum(&s, 1);
    seed = (uint64_t)s;
    if (rank == 0)
        printf("test_decomposed: %s backend, %d rank(s), seed %llu (--seed N replays)\n",
               kind == WD_BACKEND_CUDA ? "cuda" : "cpu", nranks, (unsigned long long)seed);

    /* local extents 4 x 6 x 4 x 4: non-cubic, every grid's lattice differs */
    static const int local[4] = {4, 6, 4, 4};
    static const int grids[][4] = {
        {1, 1, 1, 1}, {2, 1, 1, 1}, {1, 2, 1, 1}, {1, 1, 2, 1}, {1, 1, 1, 2},
        {2, 2, 1, 1}, {1, 1, 2, 2}, {1, 2, 1, 2}, {2, 1, 1, 2}, {1, 1, 1, 4}, {4, 1, 1, 1},
        {2, 1, 2, 2}, {1, 1, 2, 4},
    };
    /* on one rank also the 1x1x1x1 grid exchanging with itself X, T, X and
     * T, Y, Z and T, and every face */
    static const int selfs[] = {0, 1, 8, 9, 14, 15};
    const int nself = nranks == 1 ? (int)(sizeof selfs / sizeof selfs[0]) : 1;
    const int ngrids = (int)(sizeof grids / sizeof grids[0]);
    for (int k = 0; k < ngrids * nself; k++) {
        const int *p = grids[k % ngrids];
        if (p[0] * p[1] * p[2] * p[3] == nranks)
            run_seeded(p, selfs[k / ngrids], local, seed + (uint64_t)k);
    }
    /* several dimensions exchanged on 2 and 4 ranks: the grid's, and the
     * others with the rank itself (2 ranks: Z and T; X, Y and T; 4: X, Y,
     * T and Y, Z, T) */
    static const struct { int procs[4], self; } several[] = {
        {{1, 1, 1, 2}, 3}, {{2, 2, 1, 1}, 8}, {{1, 1, 2, 2}, 2}, {{1, 1, 1, 2}, 4},
    };
    for (size_t k = 0; k < sizeof several / sizeof several[0]; k++) {
        const int *p = several[k].procs;
        if (nranks > 1 && p[0] * p[1] * p[2] * p[3] == nranks)
            run_seeded(p, several[k].self, local, seed + 1000 + k);
    }
    if (rank == 0)
        printf("%d of %d failed\n", checks_failed, checks_run);
    const int fail = checks_failed || !checks_run;
    wd_comm_finalize();
    return fail;
}
