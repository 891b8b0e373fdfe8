/*
 * wd_solver.h: the numerics module (runtime/numerics/): the even-odd Schur
 * operator over a backend (schur.c), the Krylov methods with their mixed-
 * precision schemes (krylov.c) and the public solver entry points of
 * wdirac.h (solver.c: wd_solve, wd_solver_create / _solve / _destroy).  It
 * may call core, operator (the float64 reference checks the true
 * residual), backends and gauge (temporal gauge fixing); nothing in the
 * library calls it.  This header is shared by its three files and visible
 * to the tests.
 *
 * The externally accessible functions are
 *   wd_eo_op_init   the even-odd operator of one gauge field: variant lookup
 *   wd_eo_op_clover make it the clover operator's (A and A^-1 fields, the
 *                   Schur form, the clover variants)
 *   wd_eo_mhat      out_e = Mhat in_e = in_e - kappa^2 D_eo D_oe in_e (or Mhat^dag),
 *                   or the clover Schur operator
 *   wd_eo_mhat_multi  the same on N right-hand sides at once
 *   wd_eo_mhat_reduces / wd_eo_mhat_reduce  Mhat in and the reductions of
 *                   the result a Krylov step needs, from the kernel that
 *                   writes it (where the backend has that kernel)
 *   wd_krylov_run   CG-NE or BiCGstab with reliable updates, defect correction
 *                   or neither, between an outer and a sloppy operator
 *   wd_krylov_run_many  the same for N right-hand sides in lock step
 *   wd_host_block_open / _close, wd_host_scan, wd_host_residual
 *                   the solver's float64 host checks on one rank's block
 *                   (host_check.c)
 *   wd_solver_host_view  what a solver holds that the multigrid builds on
 *                   (its links, the clover field of a mass, its grid)
 *   wd_solver_attach_mg  hand a solver the multigrid that WD_SOLVER_MG solves
 *                   run (runtime/multigrid/ sets it: numerics calls the
 *                   multigrid only through this hook, so the dependency runs
 *                   one way)
 * Everything goes through wd_backend.h: no field data is touched here.
 */
#ifndef WDIRAC_SOLVER_H
#define WDIRAC_SOLVER_H

#include <complex.h>

#include "ref_wilson.h"
#include "wd_backend.h"

/*
 * Mhat on the even sites with one gauge field (and its precision).  With a
 * clover term, in the kappa normalisation M_sw / (4+m) = A - kappa D with
 * A = 1 + c_sw T / (4+m) (ref_clover.h):
 *   symmetric   Mhat = 1 - kappa^2 A_ee^-1 D_eo A_oo^-1 D_oe
 *   asymmetric  Mhat = A_ee - kappa^2 D_eo A_oo^-1 D_oe
 */
typedef struct wd_eo_op {
    wd_backend *be;
    const wd_gauge *g;
    int plain[2];       /* variant index of D, D^dag (dagger = index) */
    int xpay[2];        /* ... of x + a D, x + a D^dag */
    double kappa;
    wd_field *tmp;      /* odd-parity scratch, the gauge field's precision */
    /* clover (a NULL: Wilson) */
    const wd_clover *a, *ainv;  /* A (asymmetric form only) and A^-1 */
    int symmetric;
    int cl_plain[2];    /* C D, C D^dag: dslashcl_* */
    int cl_xpay[2];     /* x + a C D, x + a C D^dag */
    int cl_site;        /* C alone: clover_* */
    wd_field *tmp_e;    /* even-parity scratch */
    int multi_kernels;  /* wd_eo_mhat_multi takes the multi-RHS kernels (else one-RHS
                         * calls): wd_backend_multi_rhs_pays, set by wd_eo_op_init */
    wd_field *tmp_n;    /* wd_eo_mhat_multi: an odd multi-field of as many right-hand
                         * sides as it is given (wd_field_create_multi) */
} wd_eo_op;

/* Look up the four variants for g (dagger ones only when need_dagger);
 * WD_ERR_NOT_BUILT naming the axes when one is missing. */
wd_status wd_eo_op_init(wd_eo_op *op, wd_backend *be, const wd_gauge *g, double kappa,
                        wd_field *tmp, int need_dagger);

/* Make op the clover Schur operator: a = A (may be NULL for the symmetric
 * form), ainv = A^-1, both of the gauge field's precision; tmp_e an even
 * scratch.  WD_ERR_NOT_BUILT naming a missing clover variant. */
wd_status wd_eo_op_clover(wd_eo_op *op, const wd_clover *a, const wd_clover *ainv,
                          int symmetric, wd_field *tmp_e, int need_dagger);

/* out_e = in_e - kappa^2 D_eo D_oe in_e, dagger: with D^dag for D (or the
 * clover operator's Mhat); out and in are even-parity fields of the
 * operator's precision, out != in. */
wd_status wd_eo_mhat(const wd_eo_op *op, wd_field *out, const wd_field *in, int dagger);

/* The same for `count` right-hand sides of multi-fields (or views of them)
 * out and in, through op->tmp_n (at least count right-hand sides): each
 * link loaded once for up to four right-hand sides by the multi-RHS kernels
 * where they are built (wd_dslash_group) and op->multi_kernels (the GPU);
 * otherwise, and for the clover operator, one right-hand side after
 * another.  Bit for bit what wd_eo_mhat gives each,
 * except half precision on the GPU, where nvcc contracts the two kernels'
 * arithmetic differently (within 1e-5 relative; tests/test_multi_rhs.c). */
wd_status wd_eo_mhat_multi(const wd_eo_op *op, wd_field *out, const wd_field *in, int dagger,
                           int count);
/* out = Mhat in (no dagger) and res = {Re <y, out>, Im <y, out>, |out|^2}
 * of out as stored (y NULL: |out|^2 alone; wd_dslash_reduce), where
 * wd_eo_mhat_reduces(op): the Wilson operator whose xpay variant has a
 * reducing kernel on op's backend.  The same out as wd_eo_mhat; res equals
 * the BLAS's to rounding (another order of summation). */
int wd_eo_mhat_reduces(const wd_eo_op *op);
wd_status wd_eo_mhat_reduce(const wd_eo_op *op, wd_field *out, const wd_field *in,
                            const wd_field *y, double res[3]);

/*
 * One Krylov solve of Mhat x = b (BiCGstab) or Mhat^dag Mhat x = Mhat^dag b
 * (CG), iterating in the sloppy operator's precision and checking the true
 * residual ||b - Mhat x|| with the outer one (wd_solver_settings documents
 * delta, tol_inner, max_stall, divergence).  The caller allocates the
 * fields: outer b, x, r (and te for CG, an even scratch), sloppy r, p, v,
 * t (and r0 for BiCGstab), and the partial solution accumulator xs in the
 * sloppy or the outer precision.  Where both precisions agree the caller may
 * pass the outer r for the sloppy r and the outer te for the sloppy t, and
 * the operators may share their odd scratch.  x must be zero on entry; on
 * return it holds the best iterate found (smallest true residual).
 */
typedef struct wd_krylov {
    /* set by the caller */
    wd_backend *be;
    int solver;             /* WD_SOLVER_CG or WD_SOLVER_BICGSTAB */
    int mixed;              /* wd_mixed_method */
    double delta, tol_inner, divergence;
    int max_stall, max_iter, verbosity;
    wd_progress_fn progress;    /* NULL or called after every iteration */
    void *progress_arg;
    double target;          /* stop at ||b - Mhat x|| <= target (absolute) */
    double scale;           /* residual -> what the user's tol measures (messages) */
    wd_eo_op outer, sloppy;
    wd_field *b, *x, *r, *te;
    wd_field *rs, *xs, *p, *v, *t, *r0;
    char tag[24];           /* "" or e.g. " [rhs 3]": follows "wdirac solver" in messages */
    int no_fused;           /* 1: the iteration's reductions by the BLAS even where the
                             * sloppy operator could give them (wd_eo_mhat_reduces) */
    /* results */
    int k, l;               /* sloppy iterations, true-residual updates */
    double residual;        /* ||b - Mhat x|| of the returned x */
    char message[512];      /* wd_krylov_run_many: a failed lane's message */
} wd_krylov;

wd_status wd_krylov_run(wd_krylov *ks);

/*
 * N solves in lock step ("lanes"): ks[i] is lane i, set up as for
 * wd_krylov_run, each with its own source, target and fields, all with
 * the same solver, backend and operators.  Each lane runs exactly the
 * single-RHS algorithm (its own scalars, checks, restarts, convergence and
 * failure), and gives bit for bit what wd_krylov_run gives it alone (but
 * with a half sloppy level on the GPU, where a single solve takes its
 * reductions from the reducing kernels, wd_eo_mhat_reduce, and the lanes
 * from the BLAS: the same to rounding); what
 * the lanes share is each Mhat application of the iteration: one
 * wd_eo_mhat_multi of ks[0].sloppy over every maximal run of consecutive
 * lanes still iterating.  So the sloppy p, v, t and rs of lane i must be
 * right-hand side i of one multi-field each (wd_field_view(f, i, 1); lane
 * order; checked, WD_ERR_INTERNAL otherwise), and ks[0].sloppy.tmp_n an odd
 * multi-field of at least n right-hand sides (not needed for n = 1 or the
 * clover operator).  The outer checks run lane by lane.
 *  Returns WD_OK when every lane ended with a solver outcome, which
 * lane_status[i] holds (WD_OK, WD_ERR_DIVERGED, _STAGNATED, _NAN,
 * _MAX_ITER; a failure's message in ks[i].message); any other failure (the
 * backend, communication, memory) stops every lane and is returned, and
 * is the status of each lane that had not finished.  Deterministic: lanes
 * are visited in order and share no arithmetic.
 */
wd_status wd_krylov_run_many(wd_krylov *ks, int n, wd_status *lane_status);

/*
 * The float64 checks on the host fields of one rank's block (host_check.c):
 * the reference needs the neighbours' faces, which wd_host_block holds.
 * Every function here is collective over the grid's ranks.
 */
typedef struct wd_host_block {
    wd_grid grid;
    ref_block ref;              /* the faces, as the reference reads them */
    double complex *x_fwd[4], *x_bwd[4];
    double complex *faces;      /* every face buffer, one allocation */
    double complex *send, *scratch;
    double complex *mx;         /* M x on the block */
    double complex *ax;         /* clover: A x on the block (allocated on first use) */
} wd_host_block;

/* Allocate the faces and exchange the backward ghost links of `gauge`
 * (this rank's block, host order) once. */
wd_status wd_host_block_open(wd_host_block *h, const wd_grid *grid, const double *gauge);
void wd_host_block_close(wd_host_block *h);
/* The first non-finite value of v[0..n) on this rank (-1: none) and in
 * norm2 the sum of squares over every rank; *st the status of the sum. */
long wd_host_scan(const double *v, size_t n, double *norm2, wd_status *st);
/* *res = ||b - M x|| / ||b|| over the whole lattice (b != 0 somewhere);
 * with r, r = b - M x on the block.  clover: NULL, or the host clover
 * blocks of A = 1 + c_sw T / (4+m) on the block (clover_field.h), and M is
 * M_sw = M + (4+m) (A - 1). */
wd_status wd_host_residual(wd_host_block *h, const double *x, const double *u,
                           const double *clover, const double *b, double mass, int tbc,
                           double *res, double *r);


/* What the multigrid module reads of a solver: the caller's links (host
 * order, this rank's block), A = 1 + c_sw T / (4+m) of `mass` on them (NULL
 * without a clover term; rebuilt for a new mass, collective), the local
 * extents and the grid; and the backend with the solver's uploaded fields:
 * the gauge field of each level (g_sloppy == g_outer when they agree), the
 * clover fields of each level's precision (A only for the asymmetric
 * form), whether either level is gauge-fixed. */
typedef struct wd_solver_host {
    const double *gauge;
    const double *clover;
    int dims[4];
    const wd_grid *grid;
    wd_backend *be;
    const wd_gauge *g_outer, *g_sloppy;
    const wd_clover *a_outer, *ainv_outer, *a_sloppy, *ainv_sloppy;
    int symmetric;
    int gauge_fixed;
} wd_solver_host;
wd_status wd_solver_host_view(wd_solver *sv, const wd_solver_settings *s, wd_solver_host *h);

/* A multigrid attached to a solver: solve() runs one WD_SOLVER_MG solve of
 * M x = b on host fields of the solver's block (wd_solver_solve's contract
 * for x, the status and these stats: iterations, seconds, solve_seconds,
 * flops, solver_residual, mg_*; the caller measures the true residual),
 * destroy() frees the state (with the solver, or when another is
 * attached). */
typedef struct wd_solver_mg_hook {
    void *state;
    wd_status (*solve)(void *state, double *x, const double *b, const wd_solver_settings *s,
                       wd_solver_stats *stats);
    void (*destroy)(void *state);
    /* n right-hand sides at once (NULL: solve one after another): a
     * failure that is no solver outcome returned; otherwise lane_st[i]
     * each one's, its message in msg[i] (msg_size bytes) */
    wd_status (*solve_many)(void *state, double *const x[], const double *const b[], int n,
                            const wd_solver_settings *s, wd_solver_stats *const stats[],
                            wd_status lane_st[], char *const msg[], size_t msg_size);
} wd_solver_mg_hook;
/* Replace the solver's multigrid (hook NULL: remove it), destroying the old. */
void wd_solver_attach_mg(wd_solver *sv, const wd_solver_mg_hook *hook);

#endif
