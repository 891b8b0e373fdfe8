/*
 * wd_mg.h: the multigrid module (runtime/multigrid/): adaptive aggregation
 * multigrid for the Wilson and Wilson-clover operators (DESIGN.md,
 * "Multigrid").  It may call core, comm, operator, backends, gauge and
 * numerics; the public entry points (wd_mg_default_settings,
 * wd_solver_mg_setup and the WD_SOLVER_MG solves of wd_solver_solve) are
 * in wdirac.h.  This header is shared by the module's files and visible to
 * the tests.
 *
 * It runs on any process grid (each rank its block of every level: the
 * aggregates lie inside a block, and a level's hops across the
 * partitioned faces read ghost sites that wd_mg_halo fills through the
 * comm module): the fine level on the solver's backend (wd_mg_fine_*),
 * the solves' transfers and coarse levels on that backend's memory too
 * (wd_mg_dev.h: mg_dev_cpu.c, mg_dev_cuda.cu), and the setup on host
 * fields in float64 with every level's host operator (the fine one for
 * the coarse build and the diagnostics); the host operators and
 * transfers below are also the references the tests judge the backends'
 * against.  The fine level is the
 * kappa-normalised operator
 *   A = M / (4+m) = L - kappa D      (L = 1 Wilson, the clover A with c_sw)
 * of the caller's links, in the DeGrand-Rossi basis, where
 * g5 = diag(1, 1, -1, -1): a fine site's 12 components (spin-major, as the
 * host order) are chirality + for components 0..5 and - for 6..11.  A
 * coarse site's 2 Nvec components are chirality major (+ first), so on
 * every level the first half of a site's components has g5 = +1.
 *
 * The externally accessible functions are
 *   wd_mg_halo_*       a level's faces and ghost sites on a grid (mg_halo.c)
 *   wd_mg_op_fine      a level operator from host links (and clover blocks)
 *   wd_mg_op_free      release a level operator's storage
 *   wd_mg_op_apply     out = A in on a level (every site)
 *   wd_mg_op_hop       out(x) = H_d(x) in(x + d) for one of the 8 directions
 *   wd_mg_op_local     out(x) = L(x) in(x)
 *   wd_mg_g5           out = g5 in on a level (the first half of each site
 *                      +, the second -)
 *   wd_mg_transfer_init / _free   aggregates of a level: geometry and
 *                      null-vector storage, with the setting checks
 *   wd_mg_orthonormalise  block orthonormalisation of the null vectors per
 *                      aggregate and chirality (modified Gram-Schmidt,
 *                      twice, in a fixed order: deterministic)
 *   wd_mg_random_start a null vector's random start (one stream a site)
 *   wd_mg_prolong      fine = P coarse
 *   wd_mg_restrict     coarse = P^dag fine
 *   wd_mg_parity_sites the sites of one parity (a one-parity transfer's)
 *   wd_mg_coarse_init  a coarse operator's extents, neighbours, zero links
 *   wd_mg_coarse_build D_c = P^dag A P, direction by direction from the
 *                      level's hops and the null vectors
 *   wd_mg_dot, wd_mg_norm2  deterministic reductions on host vectors
 *   wd_mg_file_*       null vectors to and from a file (mg_file.c)
 *   wd_mg_fine_*       the fine level on the solver's backend (mg_fine.c):
 *                      the operator, the even-odd smoother, the null-vector
 *                      relaxation, the moves to and from the host
 * and, in mg_solve.c, the setup, the cycle and the outer solver behind
 * wd_solver_mg_setup and WD_SOLVER_MG.
 */
#ifndef WDIRAC_MG_H
#define WDIRAC_MG_H

#include <complex.h>
#include <stddef.h>
#include <stdint.h>

#include <stdio.h>

#include "wd_backend.h"
#include "wd_comm.h"
#include "wd_file_write.h"
#include "wd_solver.h"
#include "wdirac.h"

/* The 8 hopping directions of a level: d = 2 mu is forward (out(x) reads
 * in(x + mu)), d = 2 mu + 1 backward (reads in(x - mu)); the local term is
 * index WD_MG_LOCAL of a coarse site's links. */
enum { WD_MG_DIRS = 8, WD_MG_LOCAL = 8 };

/* Loops over fewer than this many complex multiply-adds (or vector
 * entries) run on one thread: on the small coarse levels an OpenMP
 * region costs more than it saves, and far more on a loaded machine
 * whose threads spin at its barriers. */
#define WD_MG_PARALLEL_MIN 65536

/*
 * A level's block on a process grid (mg_halo.c).  The block's `volume`
 * sites (lexicographic in dims, x fastest) are followed in a field by
 * `nghost` ghost sites: for each dimension the grid partitions
 * (grid->partitioned[mu]; face[mu] = volume / dims[mu] sites, 0 where it
 * is not), the face (mu, WD_FWD) from ghost[mu][WD_FWD] on, holding the
 * sites x + mu of the block's last slice in mu, then (mu, WD_BWD), the
 * sites x - mu of its first slice; a face's sites in lexicographic order
 * of the other three coordinates.  send[i] is the block's site whose
 * value the neighbour holds as its ghost volume + i, so that
 *   send_buffer[i] = field[send[i]]   (i < nghost)
 * swapped with the neighbours is the ghost region as it lies.  grid NULL
 * (or one that partitions nothing): no ghosts, every hop periodic inside
 * the block.
 */
typedef struct wd_mg_halo {
    const wd_grid *grid;         /* borrowed (NULL: one process) */
    int dims[4];
    size_t volume, nghost;
    int face[4];
    size_t ghost[4][2];
    int *send;                   /* nghost sites */
    void *buf;                   /* wd_mg_halo_exchange's faces */
    size_t buf_bytes;
} wd_mg_halo;

wd_status wd_mg_halo_init(wd_mg_halo *h, const wd_grid *grid, const int dims[4]);
void wd_mg_halo_free(wd_mg_halo *h);
/* nbr[8 s + d] (malloc'ed; NULL when out of memory): the site x + d of the
 * block or its ghost across a partitioned face */
int *wd_mg_halo_neighbours(const wd_mg_halo *h);
/* Collective over the grid: send (nghost sites of site_bytes, gathered by
 * send[]) to the neighbours, their faces into recv (nghost sites, the
 * ghost order).  Host buffers. */
wd_status wd_mg_halo_swap(const wd_mg_halo *h, const void *send, void *recv, size_t site_bytes);
/* Collective: a host field's (volume + nghost sites of site_bytes) ghost
 * sites from the neighbours' blocks (a no-op without ghosts). */
wd_status wd_mg_halo_exchange(wd_mg_halo *h, void *field, size_t site_bytes);

/*
 * One level's operator on host fields of `n` complex components a site,
 * sites in lexicographic order of dims (x fastest):
 *   (A in)(x) = L(x) in(x) + sum_d H_d(x) in(x + d)
 * The fine level (u != NULL): H_{2mu}(x) = -kappa (1 - g_mu) U_mu(x),
 * H_{2mu+1}(x) = -kappa (1 + g_mu) U_mu(x - mu)^dag, each with the time
 * boundary sign on a hop across t = T-1 <-> 0; L = 1 or the clover A.
 * A coarse level: links[site][9][n][n], the 8 hops then the local block,
 * periodic in every direction (the fine sign is inside the links).
 * On a grid the operator is this rank's block (dims the local extents):
 * an input field holds volume + halo.nghost sites, and the hops across
 * the partitioned faces read its ghost sites, which the caller fills
 * (wd_mg_halo_exchange) before an application; the fine level keeps its
 * own copy of the links with their ghosts (the backward hops' links).
 */
typedef struct wd_mg_op {
    int dims[4];
    size_t volume;
    int n;
    wd_mg_halo halo;
    int *nbr;                    /* nbr[8 * site + d]: the site x + d (a ghost across a face) */
    /* fine */
    const double complex *u;     /* [site][mu][3][3] (borrowed, or u_own on a grid) */
    double complex *u_own;       /* the links with their ghost sites */
    int t0, nt;                  /* the block's first global time slice, the global T */
    const double *clover;        /* NULL or A's host blocks (clover_field.h; borrowed) */
    double kappa;
    int tbc;
    double complex spin[WD_MG_DIRS][4][4];  /* -kappa (1 -+ g_mu) */
    /* coarse */
    double complex *links;       /* owned */
} wd_mg_op;

/* grid NULL: one process, dims the whole lattice; else dims = grid->local
 * and gauge, clover the block's (collective: the links' ghosts) */
wd_status wd_mg_op_fine(wd_mg_op *op, const int dims[4], const wd_grid *grid, const double *gauge,
                        const double *clover, double kappa, int tbc);
void wd_mg_op_free(wd_mg_op *op);
void wd_mg_op_apply(const wd_mg_op *op, double complex *out, const double complex *in);
void wd_mg_op_hop(const wd_mg_op *op, int d, double complex *out, const double complex *in);
void wd_mg_op_local(const wd_mg_op *op, double complex *out, const double complex *in);
/* out = H_d(s) psi (d < 8) or L(s) psi (d = WD_MG_LOCAL) at one site, psi
 * the n components the term reads (at the neighbour s + d, or at s) */
void wd_mg_op_term(const wd_mg_op *op, int d, size_t s, double complex *out,
                   const double complex *psi);
void wd_mg_g5(const wd_mg_op *op, double complex *out, const double complex *in);

/*
 * The aggregates between a level (fine: n_fine components a site, dims)
 * and the next (coarse: 2 nvec components a site, dims / block).  v holds
 * the nvec null vectors site-major, v[(site * nvec + k) * n_fine + a] (a
 * site's vectors together: the transfers and the coarse build read them
 * site by site; wd_mg_vector_set stores one vector from a field); after wd_mg_orthonormalise each one's restriction to an aggregate and a
 * chirality is orthonormal to the others' (so P^dag P = 1), and
 *   (P c)(x)_a = sum_k v_k(x)_a c(b(x), chi(a) nvec + k)
 * with chi(a) = 0 for a < n_fine / 2, else 1.
 */
typedef struct wd_mg_transfer {
    int fine_dims[4], block[4], coarse_dims[4];
    size_t fine_volume, coarse_volume;
    int n_fine, nvec;
    int *agg;                    /* fine site -> coarse site */
    int *sites;                  /* the fine sites of coarse site b: sites[b * bv .. + bv) */
    int block_volume;
    size_t ghost_sites;          /* v's room for the fine level's ghosts (the coarse build's) */
    double complex *v;
} wd_mg_transfer;

/* WD_ERR_INVALID naming the level and the dimension when block does not
 * divide fine_dims or leaves an odd coarse extent above 1, or naming nvec
 * when it is < 1 or larger than an aggregate's dimension per chirality
 * (block volume x n_fine / 2); WD_ERR_NOMEM.  `level` is for messages. */
wd_status wd_mg_transfer_init(wd_mg_transfer *t, int level, const int fine_dims[4], int n_fine,
                              const int block[4], int nvec, size_t ghost_sites);
/* the same checks alone, and the coarse extents */
wd_status wd_mg_transfer_check(int level, const int fine_dims[4], int n_fine, const int block[4],
                               int nvec, int coarse_dims[4]);
void wd_mg_transfer_free(wd_mg_transfer *t);
/* WD_ERR_INVALID naming the aggregate, chirality and vector when a vector
 * is (numerically) dependent on the earlier ones there. */
wd_status wd_mg_orthonormalise(wd_mg_transfer *t, int level);
void wd_mg_prolong(const wd_mg_transfer *t, double complex *fine, const double complex *coarse);
/* null vector k from a fine field (fine_volume x n_fine) */
void wd_mg_vector_set(wd_mg_transfer *t, int k, const double complex *field);
/* The other way: vector k into a field (fine_volume sites; ghosts untouched). */
void wd_mg_vector_get(const wd_mg_transfer *t, int k, double complex *field);
/* A null vector's random start on a block of dims sites of n components
 * (host order) whose site x lies at org + x in a lattice of extents ext:
 * each site's numbers from its own wd_rng seeded by base + its global
 * lexicographic index, real and imaginary parts 2 u - 1 with u
 * wd_rng_uniform (uniform in [-1, 1)), in component order: the same field
 * for any thread count and any process grid.  wd_mg_random_start_cuda
 * (wd_mg_dev.h) draws the same bits on the GPU. */
void wd_mg_random_start(const int dims[4], const int ext[4], const int org[4], uint64_t base,
                        int n, double complex *v);
void wd_mg_restrict(const wd_mg_transfer *t, double complex *coarse, const double complex *fine);
/* The fine sites of `parity` (of the local coordinates: the global one,
 * every local extent being even): agg_sites[b (bv / 2) + j] the j-th of
 * aggregate b's in its sites[] order, fine_sites[i] all of them in site
 * order (fine_volume / 2 each way); WD_ERR_INVALID where an aggregate
 * does not hold half its sites of each parity (every block extent odd). */
wd_status wd_mg_parity_sites(const wd_mg_transfer *t, int parity, int *agg_sites,
                             int *fine_sites);

/* coarse = the operator P^dag A P of fine's level, built from fine's hops
 * and local term applied to each chirality-projected null vector: a hop
 * that leaves an aggregate goes to that direction's link, one that stays
 * inside it to the local block.  coarse is allocated here, on fine's
 * grid.  On a grid (collective) the null vectors' ghost sites are
 * exchanged first (t->ghost_sites must be fine's halo.nghost). */
wd_status wd_mg_coarse_build(wd_mg_op *coarse, wd_mg_op *fine, wd_mg_transfer *t);
/* coarse's extents, neighbour table (with ghosts on a grid) and zeroed
 * links for t's coarse level (what wd_mg_coarse_build fills;
 * WD_ERR_NOMEM) */
wd_status wd_mg_coarse_init(wd_mg_op *coarse, const wd_mg_transfer *t, const wd_grid *grid);

/* <x, y> = sum conj(x) y and |x|^2 over n complex numbers, summed in
 * fixed chunks and then in chunk order: the same bits for any thread count */
double complex wd_mg_dot(const double complex *x, const double complex *y, size_t n);
double wd_mg_norm2(const double complex *x, size_t n);


/*
 * The fine level on a solver's backend (mg_fine.c): a full field is an
 * even and an odd backend field (the backend's internal basis; the host
 * transfers convert to the DeGrand-Rossi host order).  Outer-precision
 * fields for the flexible GCR's solution and true residual (x, b, r);
 * its Krylov space (the nk directions z and their images q, the
 * residual it updates rk, the restart's correction xk, u the cycle's
 * scratch) in the Krylov precision kp, single (or the outer precision
 * when that is lower); sloppy fields for the smoother and the relaxation.
 */
typedef struct wd_mg_pair {
    wd_field e, o;
} wd_mg_pair;

/* A = L - kappa D on full fields in one precision */
typedef struct wd_mg_fine_op {
    int precision;
    const wd_gauge *g;          /* the solver's links, or gown */
    wd_gauge gown;              /* links of a precision the solver lacks */
    int xpay;                   /* the Wilson x + a D variant */
    int cl_site;                /* clover: the clover_* variant and A here */
    wd_clover a;
    wd_mg_pair t;               /* the clover apply's scratch */
} wd_mg_fine_op;

typedef struct wd_mg_fine {
    wd_backend *be;
    int clover;
    double kappa;
    wd_mg_fine_op outer, krylov;
    wd_eo_op op;                /* the Schur operator in the sloppy precision */
    int nk, kp;
    wd_mg_pair x, b, r;         /* outer precision */
    wd_mg_pair rk, xk, u, *z, *q;   /* the Krylov precision */
    wd_complex *dots;           /* nk: one orthogonalisation's projections */
    wd_mg_pair rs, es;          /* sloppy: the smoother's residual and correction */
    wd_field h, qs, ps, zs, tmp_s, tmp_se;
    int smoother;               /* wd_mg_smoother */
    int nbasis;                 /* CA-GCR: pb[i] = Mhat^(i+1) h, i < nbasis (sloppy) */
    wd_field *pb;
    /* outer_eo (set before wd_mg_fine_solver): the outer GCR on the Schur
     * system Mhat x_e = b'_e of op's form, its fields single-parity: the
     * Schur operator in the outer precision (eo_outer: the source, the
     * restarts' residual, x_o) and in the Krylov one (eo_krylov: the
     * directions' images, the cycle's residuals); xe, bhat, re outer;
     * rke, xke, ue, we, zo (zero) and the nk ze, qe Krylov; to, te, tko, tke the two
     * operators' odd and even scratch; ainv_own[i] A^-1 in a precision the
     * solver holds none in (0 outer, 1 Krylov) */
    int outer_eo;
    wd_eo_op eo_outer, eo_krylov;
    wd_field xe, bhat, re, rke, xke, ue, we, zo, *ze, *qe, to, te, tko, tke;
    wd_clover ainv_own[2];
} wd_mg_fine;

/* init: the checks, and what the setup needs (the sloppy fields and the
 * Schur operator); solver: the outer GCR's fields and operators, after the
 * setup (whose peak of memory they would otherwise add to) */
wd_status wd_mg_fine_init(wd_mg_fine *f, const wd_solver_host *h, double kappa, int nkrylov,
                          wd_mg_smoother smoother, int steps);
wd_status wd_mg_fine_solver(wd_mg_fine *f, const wd_solver_host *h);
/* The fields wd_mg_fine_solver made, released (the operators' links and
 * clover blocks kept); wd_mg_fine_solver makes them again (a refinement's
 * rebuild runs without them, as the first setup does). */
void wd_mg_fine_solver_release(wd_mg_fine *f);
void wd_mg_fine_free(wd_mg_fine *f);
/* out = A in in the outer precision */
wd_status wd_mg_fine_apply(wd_mg_fine *f, wd_mg_pair *out, const wd_mg_pair *in);
/* out = A in in the Krylov precision */
wd_status wd_mg_fine_apply_k(wd_mg_fine *f, wd_mg_pair *out, const wd_mg_pair *in);
/* outer_eo: out = b'_e, the Schur source of the full b (outer precision;
 * f->to, f->te scratch); f->x.o = x_o reconstructed from f->x.e and b.o;
 * out_e = Mhat in_e in the outer (outer 1) or the Krylov precision */
wd_status wd_mg_fine_eo_source(wd_mg_fine *f, wd_field *out, const wd_mg_pair *b);
wd_status wd_mg_fine_eo_odd(wd_mg_fine *f, wd_mg_pair *x, const wd_mg_pair *b);
wd_status wd_mg_fine_eo_apply(wd_mg_fine *f, int outer, wd_field *out, const wd_field *in);
/* e = the correction of `steps` smoother iterations (f->smoother: MR, or
 * CA-GCR with steps <= the init's) on the Schur system of A e = r from 0,
 * odd sites reconstructed (e may be r) */
wd_status wd_mg_fine_smooth(wd_mg_fine *f, wd_mg_pair *e, const wd_mg_pair *r, int steps);
/* the same on the Schur system itself: e_e ~ Mhat^-1 r_e (even fields of
 * any precision; e may be r) */
wd_status wd_mg_fine_smooth_eo(wd_mg_fine *f, wd_field *e, const wd_field *r, int steps);
/* CA-GCR's least squares: with gram[i (s + 1) + j] = <p_i, p_j> (i <= j
 * <= s; the rest unread) of the basis p_0 = r, p_{i+1} = A p_i, the a[0..m-1]
 * minimising |r - sum_i a_i A p_i| by the normal equations (Cholesky in
 * float64); returns m <= s, the leading directions whose Gram matrix is
 * numerically positive definite (0: none, a = 0) */
int wd_mg_ca_gcr_coeffs(int s, const wd_complex *gram, wd_complex *a);
/* start (host order, full lattice; in the backend's memory where
 * on_device) the random start, v the relaxed vector (the same order; in
 * the backend's memory where v_on_device; v may be start); *res = |Mhat^dag Mhat v_e| / |Mhat^dag Mhat v_e,0|
 * (CG's own residual, the criterion against tol), *iters */
wd_status wd_mg_fine_nullvec(wd_mg_fine *f, const double complex *start, int on_device,
                             double complex *v, int v_on_device, double tol, int max_iter,
                             double *res, int *iters);
wd_status wd_mg_fine_to_host(wd_mg_fine *f, double complex *host, const wd_mg_pair *x);
wd_status wd_mg_fine_from_host(wd_mg_fine *f, wd_mg_pair *x, const double complex *host);
wd_complex wd_mg_pair_dot(wd_backend *be, const wd_mg_pair *x, const wd_mg_pair *y);
double wd_mg_pair_norm2(wd_backend *be, const wd_mg_pair *x);
void wd_mg_pair_caxpy(wd_backend *be, wd_complex a, const wd_mg_pair *x, wd_mg_pair *y);
/* res[i] = <x[i], y>, and y += sum_i a[i] x[i], for the k pairs x[i] */
void wd_mg_pair_multi_cdot(wd_backend *be, int k, const wd_mg_pair *x, const wd_mg_pair *y,
                           wd_complex *res);
void wd_mg_pair_multi_caxpy(wd_backend *be, int k, const wd_complex *a, const wd_mg_pair *x,
                            wd_mg_pair *y);
void wd_mg_pair_copy(wd_backend *be, wd_mg_pair *y, const wd_mg_pair *x);
void wd_mg_pair_zero(wd_backend *be, wd_mg_pair *y);
void wd_mg_pair_ax(wd_backend *be, double a, wd_mg_pair *x);

/* Null vectors in a file (mg_file.c): open checks the header against m and
 * the fine extents; create starts the safe writer; io reads or writes one
 * level's site-major vectors and adds them to the Adler-32 *sum; finish
 * checks the sum and the end (reading: f, t NULL) or writes the sum and
 * puts the file in place when st is WD_OK (writing: t), and closes. */
wd_status wd_mg_file_open(FILE **f, const char *path, const wd_mg_settings *m, const int dims[4]);
wd_status wd_mg_file_create(wd_file_temp *t, const char *path, int overwrite,
                            const wd_mg_settings *m, const int dims[4]);
wd_status wd_mg_file_io(FILE *f, int writing, void *data, size_t bytes, unsigned long *sum,
                        const char *path);
/* The same on the process grid g (more than one rank), collective: one
 * level's vectors between every rank's block (its local[4] sites in
 * lexicographic order, record bytes a site) and the file's global order
 * (local x procs extents), one global time slice at a time through rank
 * 0, which alone holds f and *sum.  Every rank keeps the same message
 * pattern whatever fails; the status is agreed (rank 0's failure reaches
 * every rank as "rank 0: <its message>"). */
wd_status wd_mg_file_io_grid(FILE *f, int writing, void *block, const wd_grid *g,
                             const int local[4], size_t record, unsigned long *sum,
                             const char *path);
wd_status wd_mg_file_finish(FILE *f, wd_file_temp *t, unsigned long sum, wd_status st,
                            const char *path);

#endif
