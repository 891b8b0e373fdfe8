/*
 * mg_op.c: a multigrid level's operator on host fields (wd_mg.h), and the
 * deterministic reductions the module's solvers use.
 *
 * The externally accessible functions are
 *   wd_mg_op_fine    the fine level A = L - kappa D from host links
 *   wd_mg_op_free    release a level's tables and links
 *   wd_mg_op_apply   out = A in
 *   wd_mg_op_hop     out(x) = H_d(x) in(x + d), one direction
 *   wd_mg_op_local   out(x) = L(x) in(x)
 *   wd_mg_op_term    one term of A at one site, on given components
 *   wd_mg_g5         out = g5 in
 *   wd_mg_dot / wd_mg_norm2   reductions in a fixed order
 * Notes: out never aliases in (wd_mg_g5 excepted).  On a grid the hops
 * read the input's ghost sites as they are (wd_mg_halo_exchange first);
 * the fine level's links are copied with their ghosts once, here.  The
 * fine hop is its own code, not the float64 reference's (ref_wilson.c):
 * the tests judge the coarse operators it builds against P^dag (M (P v))
 * of the reference.
 * Loops over sites run under OpenMP, each iteration writing its own site.
 */
#include <stdlib.h>
#include <string.h>

#include "clover_field.h"
#include "ref_wilson.h"
#include "wd_comm.h"
#include "wd_core.h"
#include "wd_mg.h"

wd_status wd_mg_op_fine(wd_mg_op *op, const int dims[4], const wd_grid *grid, const double *gauge,
                        const double *clover, double kappa, int tbc)
{
    memset(op, 0, sizeof *op);
    memcpy(op->dims, dims, sizeof op->dims);
    op->volume = wd_volume(dims);
    op->n = 12;
    op->u = (const double complex *)gauge;
    op->clover = clover;
    op->kappa = kappa;
    op->tbc = tbc;
    op->t0 = grid ? grid->origin[3] : 0;
    op->nt = grid ? grid->dims[3] : dims[3];
    wd_status st = wd_mg_halo_init(&op->halo, grid, dims);
    if (st == WD_OK && !(op->nbr = wd_mg_halo_neighbours(&op->halo)))
        st = wd_fail(WD_ERR_NOMEM, "multigrid: cannot allocate the fine level's neighbour table");
    /* the links with their ghosts: a backward hop across a face reads
     * U_mu(x - mu) of the neighbour's block */
    const size_t site = 36 * sizeof(double complex);
    if (st == WD_OK && op->halo.nghost) {
        if (!(op->u_own = malloc((op->volume + op->halo.nghost) * site)))
            st = wd_fail(WD_ERR_NOMEM, "multigrid: cannot allocate the fine links' ghosts");
        else
            memcpy(op->u_own, gauge, op->volume * site);
    }
    /* agreed before the exchange: no rank waits for one that failed */
    if (grid && grid->size > 1)
        st = wd_comm_agree(st);
    if (st == WD_OK && op->u_own) {
        st = wd_mg_halo_exchange(&op->halo, op->u_own, site);
        op->u = op->u_own;
    }
    if (st != WD_OK) {
        wd_mg_op_free(op);
        return st;
    }
    for (int mu = 0; mu < 4; ++mu) {
        double complex g[4][4];
        ref_gamma(mu, g);
        for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 4; ++j) {
                const double complex one = i == j;
                op->spin[2 * mu][i][j] = -kappa * (one - g[i][j]);
                op->spin[2 * mu + 1][i][j] = -kappa * (one + g[i][j]);
            }
    }
    return WD_OK;
}

void wd_mg_op_free(wd_mg_op *op)
{
    wd_mg_halo_free(&op->halo);
    free(op->u_own);
    free(op->nbr);
    free(op->links);
    memset(op, 0, sizeof *op);
}

/* the time-boundary sign of the fine hop d from site s (global time) */
static double fine_sign(const wd_mg_op *op, int d, size_t s)
{
    if (op->tbc == 1 || d < 6)
        return 1.0;
    const size_t slice = op->volume / op->dims[3];
    const int t = op->t0 + (int)(s / slice);
    return (d == 6 && t == op->nt - 1) || (d == 7 && t == 0) ? -1.0 : 1.0;
}

/* out += H_d(s) in(s + d) at one fine site: the spin matrix first (two
 * non-zero entries a row in the DeGrand-Rossi basis), then the link on each
 * of the four spins */
static void fine_hop_psi(const wd_mg_op *op, int d, size_t s, double complex *out,
                         const double complex *psi)
{
    const int mu = d / 2, back = d & 1;
    const size_t nb = (size_t)op->nbr[WD_MG_DIRS * s + d];
    const double complex *link = op->u + 36 * (back ? nb : s) + 9 * mu;
    const double sign = fine_sign(op, d, s);
    for (int i = 0; i < 4; ++i) {
        double complex h[3] = {0, 0, 0};
        for (int j = 0; j < 4; ++j) {
            const double complex g = op->spin[d][i][j];
            if (g == 0)
                continue;
            for (int b = 0; b < 3; ++b)
                h[b] += g * psi[3 * j + b];
        }
        for (int a = 0; a < 3; ++a) {
            double complex acc = 0;
            for (int b = 0; b < 3; ++b)
                acc += (back ? conj(link[3 * b + a]) : link[3 * a + b]) * h[b];
            out[3 * i + a] += sign * acc;
        }
    }
}

/* out += X in for an n x n block X */
static void block_mv(int n, double complex *out, const double complex *x, const double complex *in)
{
    for (int i = 0; i < n; ++i) {
        double complex acc = 0;
        for (int j = 0; j < n; ++j)
            acc += x[(size_t)n * i + j] * in[j];
        out[i] += acc;
    }
}

/* complex multiply-adds of one term of A over the lattice */
static size_t term_work(const wd_mg_op *op)
{
    return op->volume * (size_t)op->n * (op->u ? 12 : (size_t)op->n);
}

/* out += H_d(s) psi (d < 8), or out += L(s) psi for a coarse level's d = 8 */
static void term_add(const wd_mg_op *op, int d, size_t s, double complex *out,
                     const double complex *psi)
{
    const int n = op->n;
    if (op->u)
        fine_hop_psi(op, d, s, out, psi);
    else
        block_mv(n, out, op->links + (size_t)n * n * (9 * s + d), psi);
}

void wd_mg_op_term(const wd_mg_op *op, int d, size_t s, double complex *out,
                   const double complex *psi)
{
    const int n = op->n;
    if (op->u && d == WD_MG_LOCAL && op->clover) {
        wd_clover_apply_host((double *)out, op->clover + WD_CLOVER_SITE_REALS * s,
                             (const double *)psi, 1);
        return;
    }
    if (op->u && d == WD_MG_LOCAL) {
        memcpy(out, psi, (size_t)n * sizeof *out);
        return;
    }
    for (int i = 0; i < n; ++i)
        out[i] = 0;
    term_add(op, d, s, out, psi);
}

void wd_mg_op_hop(const wd_mg_op *op, int d, double complex *out, const double complex *in)
{
    const int n = op->n;
#pragma omp parallel for schedule(static) if (term_work(op) >= WD_MG_PARALLEL_MIN)
    for (size_t s = 0; s < op->volume; ++s)
        wd_mg_op_term(op, d, s, out + (size_t)n * s,
                      in + (size_t)n * op->nbr[WD_MG_DIRS * s + d]);
}

void wd_mg_op_local(const wd_mg_op *op, double complex *out, const double complex *in)
{
    const int n = op->n;
#pragma omp parallel for schedule(static) if (term_work(op) >= WD_MG_PARALLEL_MIN)
    for (size_t s = 0; s < op->volume; ++s)
        wd_mg_op_term(op, WD_MG_LOCAL, s, out + (size_t)n * s, in + (size_t)n * s);
}

void wd_mg_op_apply(const wd_mg_op *op, double complex *out, const double complex *in)
{
    const int n = op->n;
    wd_mg_op_local(op, out, in);
#pragma omp parallel for schedule(static) if (8 * term_work(op) >= WD_MG_PARALLEL_MIN)
    for (size_t s = 0; s < op->volume; ++s)
        for (int d = 0; d < WD_MG_DIRS; ++d)
            term_add(op, d, s, out + (size_t)n * s,
                     in + (size_t)n * op->nbr[WD_MG_DIRS * s + d]);
}

void wd_mg_g5(const wd_mg_op *op, double complex *out, const double complex *in)
{
    const int n = op->n, h = n / 2;
#pragma omp parallel for schedule(static) if (op->volume * n >= WD_MG_PARALLEL_MIN)
    for (size_t s = 0; s < op->volume; ++s)
        for (int i = 0; i < n; ++i)
            out[(size_t)n * s + i] = i < h ? in[(size_t)n * s + i] : -in[(size_t)n * s + i];
}

/* complex numbers per chunk of the reductions */
enum { CHUNK = 4096 };

/* <x, y> over chunk c of n entries */
static double complex chunk_dot(const double complex *x, const double complex *y, size_t c,
                                size_t n)
{
    double complex acc = 0;
    for (size_t i = c * CHUNK; i < n && i < (c + 1) * CHUNK; ++i)
        acc += conj(x[i]) * y[i];
    return acc;
}

double complex wd_mg_dot(const double complex *x, const double complex *y, size_t n)
{
    const size_t chunks = (n + CHUNK - 1) / CHUNK;
    double complex stack[64], *part = chunks <= 64 ? stack : malloc(chunks * sizeof *part);
    double complex sum = 0;
    if (!part) {
        /* no memory for the partial sums: the same order, one thread */
        for (size_t c = 0; c < chunks; ++c)
            sum += chunk_dot(x, y, c, n);
        return sum;
    }
#pragma omp parallel for schedule(static) if (n >= WD_MG_PARALLEL_MIN)
    for (size_t c = 0; c < chunks; ++c)
        part[c] = chunk_dot(x, y, c, n);
    for (size_t c = 0; c < chunks; ++c)
        sum += part[c];
    if (part != stack)
        free(part);
    return sum;
}

double wd_mg_norm2(const double complex *x, size_t n)
{
    return creal(wd_mg_dot(x, x, n));
}
