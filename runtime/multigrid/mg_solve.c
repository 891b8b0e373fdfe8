/*
 * mg_solve.c: the multigrid setup, its cycle and the outer flexible GCR
 * behind WD_SOLVER_MG (wdirac.h, docs/solvers.md "Multigrid").
 *
 * The externally accessible functions are
 *   wd_mg_default_settings  the documented defaults (QUDA's usual choices)
 *   wd_solver_mg_setup      null vectors, transfers and coarse operators of
 *                           a solver's operator, attached to the solver
 * and, through the solver's hook, the WD_SOLVER_MG solve: flexible GCR on
 *   A x = b / (4+m),  A = M / (4+m) = L - kappa D
 * (the same relative residual as M x = b), preconditioned by one cycle:
 *   level l < last: pre-smoothing (MR), the residual restricted, the next
 *   level solved (K-cycle: GCR to coarse_tol preconditioned by its own
 *   cycle; V-cycle: one application of its cycle), the correction
 *   prolongated, post-smoothing (MR on the level's residual);
 *   the last level: GCR to coarse_tol, on its even-odd Schur complement
 *   (eo_solve) where every global extent is even and coarse_eo is set.
 * With outer_eo the outer GCR solves the fine Schur system Mhat x_e =
 * b'_e instead (mg_col, cycle_eo_pre / _post: single-parity fields, the
 * transfers of the even sites alone), x_o reconstructed; several
 * right-hand sides (solve_many) then go in lock step (run_cols), each its
 * own GCR, their last-level solves batched on a 2-level multigrid of one
 * rank (coarse_solve_lanes: the multi-RHS coarse kernels and the lanes
 * BLAS, each right-hand side's bits those of its own solve with single
 * coarse links).
 * The fine level runs on the solver's backend (mg_fine.c: the outer GCR
 * in the outer precision, the smoother on the even-odd Schur operator in
 * the sloppy precision); the transfers and the coarse levels on the same
 * backend's memory, GPU or CPU (wd_mg_dev.h: single precision, the
 * generated coarse kernels; the coarse GCR orthogonalises by classical
 * Gram-Schmidt, one multi-dot a step).  The setup (null vectors of coarse
 * levels, orthonormalisation, the coarse operators, diagnostics) runs on
 * the host in float64 (wd_mg.h) and is then uploaded, but on a GPU the
 * first level's random starts, orthonormalisation and coarse operator,
 * and every coarse level's packing, X^-1 and hops X^-1 Y
 * (mg_build_cuda.cu).  Deterministic: the same bits from run to run and
 * for any thread count.  Verbosity 3 times a solve's parts (prof).
 *
 * On a process grid every level is this rank's block (the aggregates
 * inside it): an application of a level's operator first fills its
 * input's ghost sites from the neighbours (wd_mg_halo: on the host, or
 * gathered on the backend, moved through the host and the comm module,
 * and put back), and every reduction is summed over the ranks in rank
 * order (wd_comm_sum), so that every rank takes the same steps.  The
 * null vectors' random starts are the same global field on every grid
 * (seeded per global site); a solve's bits still depend on the grid
 * through the order of the global sums, as the Krylov solvers' do.
 *
 * Null vectors: from nvec seeded random fields v (uniform in [-1, 1)), each
 * relaxed on the homogeneous system A v = 0 by CG on the normal equations
 * (the fine level: of the Schur operator on the backend, the odd sites from
 * A v = 0; a coarse level: of A, with A^dag = g5 A g5 since P preserves
 * chirality, on the backend in single precision with the generated coarse
 * kernels, the level's operator uploaded there for it, lock_step vectors
 * at a time), stopped when |A^dag A v| <= setup_tol |A^dag A v_0| (CG's
 * own residual, QUDA's criterion) or after setup_max_iter iterations; or
 * read from a file (mg_file.c), and written to one, as relaxed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_rt.h"
#include "rng.h"
#include "wd_comm.h"
#include "wd_core.h"
#include "wd_coarse_layout.h"
#include "wd_coarse_op.h"
#include "wd_mg.h"
#include "wd_mg_dev.h"
#include "wd_solver.h"

typedef struct mg_level {
    wd_mg_op op;
    wd_mg_transfer t;           /* to the next level (not on the last) */
    size_t len;                 /* complex numbers of a field: volume x n */
    double complex *b, *x, *w[4];  /* the setup's host scratch */
    long iterations;            /* GCR iterations (coarse levels), smoother steps (fine) */
    /* on the backend (wd_mg_dev.h): a coarse level's operator and fields,
     * the GCR's residual, directions, their images and coefficients; every
     * level but the last its transfer to the next */
    wd_mg_dev_level dop;
    wd_mg_dev_transfer dt;
    /* outer_eo, the fine level: dt on the even sites alone (dte_ok; its
     * aggregates' even sites dsites_e, the even fine sites dfine_e) */
    wd_mg_dev_transfer dte;
    int dte_ok, *dsites_e, *dfine_e;
    int *dnbr, *dagg, *dsites;
    int *dsend;                 /* on a grid: the faces' sites (wd_mg_halo's send) */
    float *dface, *hface;       /* the gathered faces there and on the host, then the ghosts */
    void *dlinks, *dv;          /* dv: the transfer's null vectors (dt's v, dv_norm its norms) */
    float *dlink_norm, *dv_norm;
    int dv_ready;               /* dv already holds the transfer's vectors (the GPU's rounding) */
    /* the first level's null vectors in float64 on the GPU during the
     * setup (the transfer's order), where they stay there from the
     * relaxation to the build; NULL otherwise) */
    double *dvd;
    float *db, *dx, *dr, *dw[4], **dz, **dq;
    float **dsm;                /* CA-GCR smoother: its basis A^(i+1) r (nsm fields) */
    int nsm;
    /* the level's GCR (fine: the outer one): the projections
     * beta[i nk + j], the step coefficients alpha, the back-substituted
     * gamma and |q_i|^2 */
    wd_complex alpha[200], beta[200 * 200], gamma[200];
    double qq[200];
    /* the coarsest level solved even-odd (eo): the sites of each parity
     * (deo[p], half_volume each), the hops X^-1 Y of each parity's sites
     * as kernel levels (dhop[p]: block 8 zero, the level's neighbour
     * indices, the level's half fields), X^-1 a site (single, column-major)
     * and two fields of one parity */
    int eo, half_volume;
    int *deo[2], *dhnbr[2];
    /* one rank: the hops' neighbours for the batched solve of several
     * right-hand sides (schur_apply_lanes: hop p's input a field with the
     * other parity's sites first, in deo[1 - p]'s order) */
    int *dlnbr[2];
    wd_mg_dev_level dhop[2];
    void *dhlinks[2];
    float *dhlink_norm[2], *dxinv, *deb, *dex;
} mg_level;

/*
 * The last level's solves of several right-hand sides at once (solve_many
 * with outer_eo, 2 levels, one rank: lanes_ok): cap lanes of every field,
 * lane j at j stride floats, stride the level's whole volume (V 2n
 * floats), a parity field in its first half_volume sites and the rest
 * kept zero (the hops of schur_apply_lanes read them with zero blocks):
 * db, dx the restricted residuals and the solutions (whole), bp b' = X^-1
 * db (whole), eb, ex the Schur system's source and solution, r its
 * residual, t the odd sites between the hops, z, q the GCR's directions
 * and images (gcr_nkrylov each); hop[p] the level's dhop[p] on dlnbr[p]
 * with 16-bit multi-fields of cap right-hand sides; the lanes' GCR
 * coefficients on the host (a lane's nk, nk^2 at lane nk, nk^2).
 */
typedef struct mg_lanes {
    int cap;
    size_t stride;
    float *db, *dx, *bp, *eb, *ex, *r, *t, **z, **q;
    wd_mg_dev_level hop[2];
    void *hmin, *hmout;
    float *hmin_norm, *hmout_norm;
    wd_complex *alpha, *beta, *gamma;
    double *qq;
} mg_lanes;

/* the parts of a profiled solve (verbosity 3) */
enum {
    PROF_SMOOTH,        /* the fine smoother */
    PROF_FINE_APPLY,    /* the fine operator in the Krylov precision, its residual */
    PROF_ORTH,          /* the outer GCR's orthogonalisation and residual update */
    PROF_RESTART,       /* the outer GCR's solution update and true residual */
    PROF_TRANSFER,      /* the fine field's moves, P^dag and P */
    PROF_COARSE_APPLY,  /* coarse operators with their face exchange */
    PROF_COARSE_BLAS,   /* the rest of the coarse solves */
    PROF_SOURCE,        /* the source in (scaled) */
    PROF_SOLUTION,      /* the solution out */
    PROF_PARTS
};

typedef struct wd_mg {
    wd_mg_settings set;
    double mass, csw;
    int levels;
    mg_level lv[WD_MG_MAX_LEVELS];  /* lv[0]: the fine level's host operator and transfer */
    wd_mg_fine fine;                /* the fine level's fields on the solver's backend */
    const wd_mg_dev_ops *dev;       /* the coarse levels' backend (wd_mg_dev.h) */
    int on_device;                  /* its memory is the GPU's */
    int ranks;                      /* the grid's size: reductions summed when > 1 */
    wd_nccl *nccl;                  /* GPUs on a grid: the coarse faces device to device */
    void *stream;                   /* the backend's CUDA stream (NCCL's) */
    wd_status error;                /* the setup's first failure of a collective */
    int coarse_precision;           /* the coarse links: 4 single, 2 half (the sloppy one's) */
    void *stage;                    /* a fine field in the host layout there (P, P^dag) */
    size_t dev_bytes;               /* what dev holds */
    /* where a solve's seconds go (printed under verbosity 1): from the
     * fine residual's restriction to the prolongated correction */
    double t_coarse;
    /* verbosity 3: each part's seconds, the device synchronised at each
     * part's end (prof_mark: the last end), and the coarse applications */
    int profile;
    double prof[PROF_PARTS], prof_mark;
    long prof_applies;
    /* a solve's flops off the fine backend's counter: the coarse kernels,
     * P and P^dag, the coarse BLAS (8 flops a complex multiply-add) */
    double flops;
    /* solve_many: the outer GCR's columns (WD_MG_DEV_LANES of them, cols[0]
     * on the fine level's own fields, ncols with their fields made) and
     * the last level's batched solve (mg_lanes) */
    struct mg_col *cols;
    int ncols;
    mg_lanes lanes;
    /* refine_passes: the first level's null vectors as relaxed (or as the
     * last pass left them), before the orthonormalisation, in single
     * precision, a field (V 12 complex numbers) a vector */
    float complex *raw;
} wd_mg;

void wd_mg_default_settings(wd_mg_settings *m)
{
    memset(m, 0, sizeof *m);
    m->levels = 2;
    for (int l = 0; l < WD_MG_MAX_LEVELS - 1; ++l) {
        for (int mu = 0; mu < 4; ++mu)
            m->block[l][mu] = l == 0 ? 4 : 2;
        m->nvec[l] = l == 0 ? 24 : 32;
    }
    m->setup_tol = 5e-6;
    m->setup_max_iter = 500;
    m->pre_smooth = 0;
    m->post_smooth = 8;
    m->cycle = WD_MG_KCYCLE;
    m->coarse_tol = 0.25;
    m->coarse_max_iter = 100;
    m->gcr_nkrylov = 20;
    m->seed = 1;
    m->verbosity = 0;
    m->coarse_eo = 1;
    m->smoother = WD_MG_SMOOTHER_CA_GCR;
    m->outer_eo = 1;
    m->refine_passes = 0;
    m->refine_iter = 2;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* the seconds since the last mark to `part` (a profiled solve only) */
static void prof(wd_mg *mg, int part)
{
    if (!mg->profile)
        return;
    if (mg->on_device && wd_cuda_sync() != WD_OK) {
        mg->profile = 0;  /* the failure stays for the next operation to report */
        return;
    }
    const double t = now_s();
    mg->prof[part] += t - mg->prof_mark;
    mg->prof_mark = t;
}

static wd_status check_mg_settings(const wd_mg_settings *m)
{
    if (m->levels < 2 || m->levels > WD_MG_MAX_LEVELS)
        return wd_fail(WD_ERR_INVALID, "multigrid: levels %d must be between 2 and %d",
                       m->levels, WD_MG_MAX_LEVELS);
    if (!(m->setup_tol > 0 && m->setup_tol < 1) || m->setup_max_iter < 0)
        return wd_fail(WD_ERR_INVALID, "multigrid: setup_tol %g must be in (0, 1) and "
                       "setup_max_iter %d >= 0", m->setup_tol, m->setup_max_iter);
    if (m->pre_smooth < 0 || m->post_smooth < 0 || m->pre_smooth + m->post_smooth < 1)
        return wd_fail(WD_ERR_INVALID, "multigrid: pre_smooth %d and post_smooth %d must be >= 0 "
                       "and not both 0", m->pre_smooth, m->post_smooth);
    if (m->smoother != WD_MG_SMOOTHER_MR && m->smoother != WD_MG_SMOOTHER_CA_GCR)
        return wd_fail(WD_ERR_INVALID, "multigrid: smoother %d must be WD_MG_SMOOTHER_MR (0) or "
                       "WD_MG_SMOOTHER_CA_GCR (1)", (int)m->smoother);
    if (m->smoother == WD_MG_SMOOTHER_CA_GCR &&
        (m->pre_smooth > WD_MG_MAX_SMOOTH || m->post_smooth > WD_MG_MAX_SMOOTH))
        return wd_fail(WD_ERR_INVALID, "multigrid: pre_smooth %d and post_smooth %d must be at "
                       "most %d with the CA-GCR smoother", m->pre_smooth, m->post_smooth,
                       WD_MG_MAX_SMOOTH);
    if (m->cycle != WD_MG_VCYCLE && m->cycle != WD_MG_KCYCLE)
        return wd_fail(WD_ERR_INVALID, "multigrid: cycle %d must be WD_MG_VCYCLE (0) or "
                       "WD_MG_KCYCLE (1)", (int)m->cycle);
    if (!(m->coarse_tol > 0 && m->coarse_tol < 1) || m->coarse_max_iter < 1)
        return wd_fail(WD_ERR_INVALID, "multigrid: coarse_tol %g must be in (0, 1) and "
                       "coarse_max_iter %d >= 1", m->coarse_tol, m->coarse_max_iter);
    if (m->gcr_nkrylov < 1 || m->gcr_nkrylov > 200)
        return wd_fail(WD_ERR_INVALID, "multigrid: gcr_nkrylov %d must be between 1 and 200",
                       m->gcr_nkrylov);
    if (m->outer_eo != 0 && m->outer_eo != 1)
        return wd_fail(WD_ERR_INVALID, "multigrid: outer_eo %d must be 0 (the outer GCR on the "
                       "full system) or 1 (on the even-odd Schur system)", m->outer_eo);
    if (m->refine_passes < 0 || m->refine_passes > WD_MG_MAX_REFINE || m->refine_iter < 1 ||
        m->refine_iter > WD_MG_MAX_REFINE_ITER)
        return wd_fail(WD_ERR_INVALID, "multigrid: refine_passes %d must be between 0 and %d and "
                       "refine_iter %d between 1 and %d", m->refine_passes, WD_MG_MAX_REFINE,
                       m->refine_iter, WD_MG_MAX_REFINE_ITER);
    if (m->lock_step < 0 || m->lock_step > WD_SOLVE_MANY_GROUP)
        return wd_fail(WD_ERR_INVALID, "multigrid: lock_step %d must be between 0 (all of a "
                       "group) and %d", m->lock_step, WD_SOLVE_MANY_GROUP);
    return WD_OK;
}

static void dev_free(wd_mg *mg);
static void lanes_free(wd_mg *mg);
static void cols_free(wd_mg *mg);
static void levels_reset(wd_mg *mg);

static void mg_free(void *state)
{
    wd_mg *mg = state;
    if (!mg)
        return;
    /* every level but the fine one's operator and scratch */
    levels_reset(mg);
    free(mg->raw);
    wd_mg_fine_free(&mg->fine);
    wd_mg_op_free(&mg->lv[0].op);
    free(mg->lv[0].w[0]);
    free(mg->lv[0].w[1]);
    free(mg);
}

/* the host work fields of level l (its operator set) for the setup: the
 * fine level's null-vector start and the coarse error's fields, a coarse
 * level's relaxation */
static wd_status level_alloc(wd_mg *mg, int l)
{
    mg_level *v = &mg->lv[l];
    v->len = v->op.volume * v->op.n;
    /* room for the ghost sites: any of them may be an operator's input */
    const size_t bytes = (v->op.volume + v->op.halo.nghost) * v->op.n * sizeof(double complex);
    int ok = (v->w[0] = malloc(bytes)) && (v->w[1] = malloc(bytes));
    if (ok && l)
        ok = (v->b = malloc(bytes)) && (v->x = malloc(bytes));
    for (int i = 2; ok && l && i < 4; ++i)
        ok = (v->w[i] = malloc(bytes)) != NULL;
    return ok ? WD_OK
              : wd_fail(WD_ERR_NOMEM, "multigrid level %d: cannot allocate %d work fields of %zu "
                        "bytes", l, l ? 6 : 2, bytes);
}

/* ---- host vector helpers on n complex numbers (the setup) ---- */


/* y += a x */
static void vaxpy(double complex a, const double complex *x, double complex *y, size_t n)
{
#pragma omp parallel for schedule(static) if (n >= WD_MG_PARALLEL_MIN)
    for (size_t i = 0; i < n; ++i)
        y[i] += a * x[i];
}

/* ---- the grid's collectives in the setup (the first failure kept in
 * mg->error, checked after each level) ---- */

/* |x|^2 over every rank's block */
static double gnorm2(wd_mg *mg, const double complex *x, size_t n)
{
    double v = wd_mg_norm2(x, n);
    if (mg->ranks > 1) {
        const wd_status st = wd_comm_sum(&v, 1);
        if (st != WD_OK && mg->error == WD_OK)
            mg->error = st;
    }
    return v;
}

/* st agreed over the grid (wd_comm_agree): after a step that can fail on
 * one rank alone, before the next collective */
static wd_status agreed(const wd_mg *mg, wd_status st)
{
    return mg->ranks > 1 ? wd_comm_agree(st) : st;
}

/* level l's host field's ghost sites from the neighbours */
static void hexchange(wd_mg *mg, int l, double complex *x)
{
    wd_mg_op *op = &mg->lv[l].op;
    const wd_status st = wd_mg_halo_exchange(&op->halo, x, (size_t)op->n * sizeof *x);
    if (st != WD_OK && mg->error == WD_OK)
        mg->error = st;
}

/* ---- the coarse levels on the backend (wd_mg_dev.h) ---- */

/* the ghost sites of a GPU field through NCCL on the backend's stream:
 * the faces gathered there, sent from that buffer and received into the
 * field's ghost region, in order with the kernels before and after */
static wd_status nccl_exchange(wd_mg *mg, mg_level *v, float *in)
{
    const wd_mg_halo *h = &v->op.halo;
    const int floats = 2 * v->dop.layout.ncomp;
    wd_status st = mg->dev->gather((int)h->nghost, floats, v->dsend, in, v->dface);
    wd_nccl_face faces[4];
    int nf = 0;
    for (int mu = 0; mu < 4; ++mu) {
        if (!h->face[mu])
            continue;
        wd_nccl_face *f = &faces[nf++];
        f->mu = mu;
        f->bytes = (size_t)h->face[mu] * floats * sizeof(float);
        for (int dir = 0; dir < 2; ++dir) {
            f->send[dir] = v->dface + (h->ghost[mu][dir] - h->volume) * floats;
            f->recv[dir] = in + h->ghost[mu][dir] * floats;
        }
    }
    if (st == WD_OK)
        st = wd_nccl_halo(mg->nccl, h->grid, faces, nf, mg->stream);
    return st;
}

/* flops of one application of a level's operator per site */
static double apply_flops(const wd_mg_op *op)
{
    return op->u ? 1368.0 + (op->clover ? 504.0 : 0.0) : 9.0 * 8.0 * op->n * op->n;
}

/* out = A_l in on the backend, in's ghost sites first (gathered there,
 * swapped with the neighbours through NCCL on GPUs, else through the
 * host) */
static wd_status dev_exchange(wd_mg *mg, int l, float *in)
{
    mg_level *v = &mg->lv[l];
    if (mg->nccl && v->dop.nghost)
        return nccl_exchange(mg, v, in);
    return wd_mg_halo_exchange_dev(&v->op.halo, mg->dev, v->dsend, v->dface, v->hface, in,
                                   2 * v->dop.layout.ncomp);
}

/* out = k in for a kernel level k of level l (its operator, or an
 * even-odd hop level), in's ghosts filled first; flops counted, timed */
static wd_status kernel_apply(wd_mg *mg, int l, const wd_mg_dev_level *k, double flops,
                              float *out, float *in)
{
    prof(mg, PROF_COARSE_BLAS);
    mg->flops += flops;
    wd_status st = dev_exchange(mg, l, in);
    if (st == WD_OK)
        st = mg->dev->apply(k, out, in);
    prof(mg, PROF_COARSE_APPLY);
    return st;
}

static wd_status dev_apply(wd_mg *mg, int l, float *out, float *in)
{
    const mg_level *v = &mg->lv[l];
    mg->prof_applies++;
    return kernel_apply(mg, l, &v->dop, apply_flops(&v->op) * v->op.volume, out, in);
}

/* out (parity p's sites, compact) = sum_d X^-1 Y_d of them on a whole
 * field of level l: the 8 hops' flops (not the kernel's zero block 8) */
static wd_status schur_hop(wd_mg *mg, int l, int p, float *out, float *full)
{
    const mg_level *v = &mg->lv[l];
    const double hops = apply_flops(&v->op) * WD_MG_DIRS / WD_COARSE_BLOCKS;
    return kernel_apply(mg, l, &v->dhop[p], hops * v->half_volume, out, full);
}

/* S in with half links and no ghosts: the hops on 16-bit fields from end
 * to end (in rounded into the even sites of the whole 16-bit field, the
 * first hop's 16-bit output moved into its odd sites, the second's
 * subtracted from in): five launches, no field rounded twice */
static wd_status schur_apply_half(wd_mg *mg, int l, float *out, const float *in)
{
    const wd_mg_dev_ops *d = mg->dev;
    mg_level *v = &mg->lv[l];
    const wd_mg_dev_level *odd = &v->dhop[1], *even = &v->dhop[0];
    const int h = v->half_volume, n = v->dop.layout.ncomp;
    const double hops = apply_flops(&v->op) * WD_MG_DIRS / WD_COARSE_BLOCKS * h;
    prof(mg, PROF_COARSE_BLAS);
    mg->flops += 2 * hops;
    wd_status st = d->pack_half(h, n, v->deo[0], in, odd->hin, odd->hin_norm);
    if (st == WD_OK)
        st = d->apply_half(odd);
    if (st == WD_OK)
        st = d->move_half(h, n, v->deo[1], odd->hout, odd->hout_norm, even->hin, even->hin_norm);
    if (st == WD_OK)
        st = d->apply_half(even);
    if (st == WD_OK)
        st = d->xmy_half(h, n, in, even->hout, even->hout_norm, out);
    prof(mg, PROF_COARSE_APPLY);
    return st;
}

/* out = S in = in - X^-1 Y_eo X^-1 Y_oe in on the even sites (compact
 * fields; dw[0], dw[1] the whole fields the hops read, dw[3] the odd
 * sites between; half links without ghosts: schur_apply_half) */
static wd_status schur_apply(wd_mg *mg, int l, float *out, const float *in)
{
    const wd_mg_dev_ops *d = mg->dev;
    mg_level *v = &mg->lv[l];
    const int h = v->half_volume, n = v->dop.layout.ncomp;
    mg->prof_applies++;
    if (v->dop.layout.precision == 2 && v->dop.nghost == 0)
        return schur_apply_half(mg, l, out, in);
    wd_status st = d->scatter(h, 2 * n, v->deo[0], in, v->dw[0]);
    if (st == WD_OK)
        st = schur_hop(mg, l, 1, v->dw[3], v->dw[0]);
    if (st == WD_OK)
        st = d->scatter(h, 2 * n, v->deo[1], v->dw[3], v->dw[1]);
    if (st == WD_OK)
        st = schur_hop(mg, l, 0, out, v->dw[1]);
    return st == WD_OK ? d->xmy(h, n, in, out) : st;
}

/* level l's operator for its GCR: A_l, or with schur its even-odd Schur
 * complement; the fields' sites */
static wd_status level_apply(wd_mg *mg, int l, int schur, float *out, float *in)
{
    return schur ? schur_apply(mg, l, out, in) : dev_apply(mg, l, out, in);
}

/* the backend's reductions summed over the ranks */
static wd_status dev_multi_cdot(wd_mg *mg, int volume, int n, int k, const float *const *x,
                                const float *y, double *res)
{
    wd_status st = mg->dev->multi_cdot(volume, n, k, x, y, res);
    mg->flops += 8.0 * k * volume * n;
    if (st == WD_OK && mg->ranks > 1)
        st = wd_comm_sum(res, 2 * k);
    return st;
}

static wd_status dev_cdot_norm2(wd_mg *mg, int volume, int n, const float *x, const float *y,
                                double res[3])
{
    wd_status st = mg->dev->cdot_norm2(volume, n, x, y, res);
    if (st == WD_OK && mg->ranks > 1)
        st = wd_comm_sum(res, 3);
    return st;
}

static wd_status dev_alloc(wd_mg *mg, void *p, size_t bytes, const char *what)
{
    const wd_status st = mg->dev->alloc((void **)p, bytes, what);
    if (st == WD_OK)
        mg->dev_bytes += bytes;
    return st;
}

static void dev_free(wd_mg *mg)
{
    const wd_mg_dev_ops *d = mg->dev;
    if (!d)
        return;
    lanes_free(mg);
    wd_nccl_close(mg->nccl);
    mg->nccl = NULL;
    d->free(mg->stage);
    for (int l = 0; l < WD_MG_MAX_LEVELS; ++l) {
        mg_level *v = &mg->lv[l];
        d->free(v->dnbr);
        d->free(v->dsend);
        d->free(v->dface);
        free(v->hface);
        d->free(v->dlinks);
        d->free(v->dlink_norm);
        d->free(v->dop.hin);
        d->free(v->dop.hout);
        d->free(v->dop.hin_norm);
        d->free(v->dop.hout_norm);
        d->free(v->dagg);
        d->free(v->dsites);
        d->free(v->dsites_e);
        d->free(v->dfine_e);
        d->free(v->dv);
        d->free(v->dv_norm);
        d->free(v->dvd);
        for (int p = 0; p < 2; ++p) {
            d->free(v->deo[p]);
            d->free(v->dhnbr[p]);
            d->free(v->dlnbr[p]);
            d->free(v->dhlinks[p]);
            d->free(v->dhlink_norm[p]);
        }
        d->free(v->dxinv);
        d->free(v->deb);
        d->free(v->dex);
        float *fields[] = {v->db, v->dx, v->dr, v->dw[0], v->dw[1], v->dw[2], v->dw[3]};
        for (size_t i = 0; i < sizeof fields / sizeof *fields; ++i)
            d->free(fields[i]);
        for (int i = 0; v->dz && i < mg->set.gcr_nkrylov; ++i)
            d->free(v->dz[i]);
        for (int i = 0; v->dq && i < mg->set.gcr_nkrylov; ++i)
            d->free(v->dq[i]);
        free(v->dz);
        free(v->dq);
        for (int i = 0; i < v->nsm; ++i)
            d->free(v->dsm[i]);
        free(v->dsm);
        v->dsm = NULL;
        v->nsm = 0;
    }
}

/* the transfer's null vectors on the backend: allocated in the coarse
 * links' precision (P and P^dag in single, or half with the half links) */
static wd_status dev_vectors(wd_mg *mg, mg_level *v)
{
    const size_t count = v->t.fine_volume * (size_t)v->t.nvec;
    wd_status st = dev_alloc(mg, &v->dv, wd_mg_vector_bytes(mg->coarse_precision, v->t.n_fine,
                                                            count), "the null vectors");
    if (st == WD_OK && mg->coarse_precision == 2)
        st = dev_alloc(mg, &v->dv_norm, count * sizeof(float), "the null vectors' norms");
    return st;
}

/* outer_eo: the fine level's transfer of even fields (v->dte), P read on
 * the even sites alone, where every aggregate holds half its sites even;
 * otherwise (every block extent odd) the cycle embeds (r_e, 0) in dt */
static wd_status dev_transfer_even(wd_mg *mg, mg_level *v)
{
    const wd_mg_dev_ops *d = mg->dev;
    const wd_mg_transfer *t = &v->t;
    const size_t bytes = t->fine_volume / 2 * sizeof(int);
    int *agg_sites = malloc(bytes), *fine_sites = malloc(bytes);
    wd_status st = agg_sites && fine_sites ? WD_OK
                                           : wd_fail(WD_ERR_NOMEM, "multigrid: cannot allocate "
                                                     "the even sites' tables");
    v->dte_ok = st == WD_OK && t->block_volume % 2 == 0 &&
                wd_mg_parity_sites(t, 0, agg_sites, fine_sites) == WD_OK;
    if (st == WD_OK && v->dte_ok) {
        if ((st = dev_alloc(mg, &v->dsites_e, bytes, "the aggregates' even sites")) == WD_OK)
            st = d->h2d(v->dsites_e, agg_sites, bytes);
        if (st == WD_OK && (st = dev_alloc(mg, &v->dfine_e, bytes, "the even sites")) == WD_OK)
            st = d->h2d(v->dfine_e, fine_sites, bytes);
        v->dte = v->dt;
        v->dte.fine_volume = (int)(t->fine_volume / 2);
        v->dte.block_volume = t->block_volume / 2;
        v->dte.sites = v->dsites_e;
        v->dte.fine_sites = v->dfine_e;
    }
    free(agg_sites);
    free(fine_sites);
    return st;
}

/* level l's transfer to the next on the backend: the aggregates and the
 * null vectors rounded (wd_mg_pack_vectors, by every thread), uploaded in
 * pieces of CHUNK sites, unless the GPU's orthonormalisation made them */
static wd_status dev_transfer(wd_mg *mg, int l)
{
    enum { CHUNK = 16384 };
    const wd_mg_dev_ops *d = mg->dev;
    mg_level *v = &mg->lv[l];
    const wd_mg_transfer *t = &v->t;
    const int prec = mg->coarse_precision;
    const size_t agg_bytes = t->fine_volume * sizeof(int);
    wd_status st = dev_alloc(mg, &v->dagg, agg_bytes, "the aggregates");
    if (st == WD_OK)
        st = d->h2d(v->dagg, t->agg, agg_bytes);
    if (st == WD_OK)
        st = dev_alloc(mg, &v->dsites, agg_bytes, "the aggregates' sites");
    if (st == WD_OK)
        st = d->h2d(v->dsites, t->sites, agg_bytes);
    /* the null vectors: rounded on the GPU by its orthonormalisation
     * (dv_ready), else here */
    if (st == WD_OK && !v->dv)
        st = dev_vectors(mg, v);
    const size_t per_site = (size_t)t->nvec, chunk = CHUNK * per_site;
    void *buf = st == WD_OK && !v->dv_ready
                    ? malloc(wd_mg_vector_bytes(prec, t->n_fine, chunk))
                    : NULL;
    float *norm = st == WD_OK && !v->dv_ready && prec == 2 ? malloc(chunk * sizeof *norm) : NULL;
    if (st == WD_OK && !v->dv_ready && (!buf || (prec == 2 && !norm)))
        st = wd_fail(WD_ERR_NOMEM, "multigrid: cannot allocate the null vectors' upload buffer");
    for (size_t x0 = 0; st == WD_OK && !v->dv_ready && x0 < t->fine_volume; x0 += CHUNK) {
        const size_t sites = t->fine_volume - x0 < CHUNK ? t->fine_volume - x0 : CHUNK;
        const size_t first = x0 * per_site, count = sites * per_site;
        wd_mg_pack_vectors(prec, t->n_fine, first, count, (const double *)t->v, buf, norm);
        st = d->h2d((char *)v->dv + wd_mg_vector_bytes(prec, t->n_fine, first), buf,
                    wd_mg_vector_bytes(prec, t->n_fine, count));
        if (st == WD_OK && norm)
            st = d->h2d(v->dv_norm + first, norm, count * sizeof *norm);
    }
    free(buf);
    free(norm);
    v->dt = (wd_mg_dev_transfer){.fine_host = l == 0, .fine_volume = (int)t->fine_volume,
                                 .coarse_volume = (int)t->coarse_volume,
                                 .block_volume = t->block_volume, .n_fine = t->n_fine,
                                 .nvec = t->nvec, .agg = v->dagg, .sites = v->dsites,
                                 .v_precision = prec, .v = v->dv, .v_norm = v->dv_norm};
    if (st == WD_OK && l == 0 && mg->set.outer_eo)
        st = dev_transfer_even(mg, v);
    return st;
}

/* coarse level l's operator (links packed in single, or half: mg->coarse_precision) and its
 * work fields on the backend: the links packed on the host, or on a GPU
 * there (wd_mg_coarse_pack_cuda; with the even-odd solve's blocks by
 * dev_schur where eo_next) */
static wd_status dev_level(wd_mg *mg, int l, int eo_next)
{
    const wd_mg_dev_ops *d = mg->dev;
    mg_level *v = &mg->lv[l];
    wd_coarse_layout *lay = &v->dop.layout;
    const int nghost = (int)v->op.halo.nghost, floats = 2 * v->op.n;
    /* the half fields' sizes with the ghost sites */
    wd_coarse_layout ext;
    wd_status st = wd_coarse_layout_make(lay, (int)v->op.volume, v->op.n / 2, mg->coarse_precision);
    if (st == WD_OK)
        st = wd_coarse_layout_make(&ext, (int)v->op.volume + nghost, v->op.n / 2,
                                   mg->coarse_precision);
    v->dop.nghost = nghost;
    const size_t nbr_bytes = v->op.volume * WD_MG_DIRS * sizeof(int);
    if (st == WD_OK)
        st = dev_alloc(mg, &v->dnbr, nbr_bytes, "a coarse neighbour table");
    if (st == WD_OK)
        st = d->h2d(v->dnbr, v->op.nbr, nbr_bytes);
    if (st == WD_OK && nghost) {
        /* the faces: their sites, gathered there, and with no NCCL moved
         * through the host */
        const size_t face_bytes = (size_t)nghost * floats * sizeof(float);
        if ((st = dev_alloc(mg, &v->dsend, nghost * sizeof(int), "a coarse face list")) == WD_OK)
            st = d->h2d(v->dsend, v->op.halo.send, nghost * sizeof(int));
        if (st == WD_OK)
            st = dev_alloc(mg, &v->dface, face_bytes, "a coarse level's faces");
        if (st == WD_OK && !mg->nccl && !(v->hface = malloc(2 * face_bytes)))
            st = wd_fail(WD_ERR_NOMEM, "multigrid level %d: cannot allocate %zu bytes of faces",
                         l, 2 * face_bytes);
    }
    if (st == WD_OK)
        st = dev_alloc(mg, &v->dlinks, lay->link_bytes, "the coarse links");
    if (st == WD_OK && lay->link_norm_bytes)
        st = dev_alloc(mg, &v->dlink_norm, lay->link_norm_bytes, "the coarse link norms");
    if (st == WD_OK && mg->on_device && !eo_next) {
        const wd_mg_coarse_pack pk = {.n = v->op.n, .volume = (int)v->op.volume,
                                      .precision = lay->precision,
                                      .links = (const double *)v->op.links, .dlinks = v->dlinks,
                                      .dlink_norm = v->dlink_norm};
        st = wd_mg_coarse_pack_cuda(&pk, l);
    } else if (st == WD_OK && !mg->on_device) {
        void *buf = malloc(lay->link_bytes);
        float *norm = lay->link_norm_bytes ? malloc(lay->link_norm_bytes) : NULL;
        if (!buf || (lay->link_norm_bytes && !norm))
            st = wd_fail(WD_ERR_NOMEM, "multigrid level %d: cannot allocate %zu bytes to pack "
                         "the coarse links", l, lay->link_bytes);
        if (st == WD_OK) {
            wd_pack_coarse_links(lay, buf, norm, v->op.links);
            st = d->h2d(v->dlinks, buf, lay->link_bytes);
        }
        if (st == WD_OK && norm)
            st = d->h2d(v->dlink_norm, norm, lay->link_norm_bytes);
        free(buf);
        free(norm);
    }
    v->dop.nbr = v->dnbr;
    v->dop.links = v->dlinks;
    v->dop.link_norm = v->dlink_norm;
    if (st == WD_OK && lay->precision == 2) {
        /* the half apply's 16-bit in and out fields, zero (the even-odd
         * hops read a whole field whose other parity's sites meet the
         * zero local block: finite there from the start) */
        void **h[2] = {&v->dop.hin, &v->dop.hout};
        float **hn[2] = {&v->dop.hin_norm, &v->dop.hout_norm};
        void *zeros = calloc(1, ext.spinor_bytes);
        if (!zeros)
            st = wd_fail(WD_ERR_NOMEM, "multigrid level %d: cannot allocate %zu bytes", l,
                         ext.spinor_bytes);
        for (int i = 0; i < 2 && st == WD_OK; ++i) {
            if ((st = dev_alloc(mg, h[i], ext.spinor_bytes, "a half coarse field")) == WD_OK &&
                (st = d->h2d(*h[i], zeros, ext.spinor_bytes)) == WD_OK &&
                (st = dev_alloc(mg, hn[i], ext.spinor_norm_bytes,
                                "a half coarse field's norms")) == WD_OK)
                st = d->h2d(*hn[i], zeros, ext.spinor_norm_bytes);
        }
        free(zeros);
    }
    const int nk = mg->set.gcr_nkrylov;
    if (st == WD_OK && (!(v->dz = calloc(nk, sizeof *v->dz)) || !(v->dq = calloc(nk, sizeof *v->dq))))
        st = wd_fail(WD_ERR_NOMEM, "multigrid: cannot allocate the coarse GCR's bookkeeping");
    /* the solver's fields are single whatever the links' precision, with
     * room for the ghost sites (any may be an operator's input) */
    const size_t bytes = (v->op.volume + nghost) * (size_t)floats * sizeof(float);
    float **fields[] = {&v->db, &v->dx, &v->dr, &v->dw[0], &v->dw[1], &v->dw[2], &v->dw[3]};
    for (size_t i = 0; st == WD_OK && i < sizeof fields / sizeof *fields; ++i)
        st = dev_alloc(mg, fields[i], bytes, "a coarse field");
    for (int i = 0; st == WD_OK && i < nk; ++i)
        if ((st = dev_alloc(mg, &v->dz[i], bytes, "a coarse field")) == WD_OK)
            st = dev_alloc(mg, &v->dq[i], bytes, "a coarse field");
    /* a smoothed level's CA-GCR basis */
    const wd_mg_settings *m = &mg->set;
    const int steps = m->pre_smooth > m->post_smooth ? m->pre_smooth : m->post_smooth;
    if (st == WD_OK && m->smoother == WD_MG_SMOOTHER_CA_GCR && l < mg->levels - 1) {
        if (!(v->dsm = calloc((size_t)steps, sizeof *v->dsm)))
            st = wd_fail(WD_ERR_NOMEM, "multigrid: cannot allocate the smoother's basis");
        for (; st == WD_OK && v->nsm < steps; ++v->nsm)
            st = dev_alloc(mg, &v->dsm[v->nsm], bytes, "a coarse field");
    }
    return st;
}

/* X(s)^-1 of every site of a coarse operator (its local blocks, Gauss-Jordan
 * with partial pivoting in float64) into xinv (volume x n x n, row-major);
 * WD_ERR_INVALID naming the first site whose block is singular */
static wd_status coarse_xinv(const wd_mg_op *op, int l, double complex *xinv)
{
    const int n = op->n;
    const size_t nn = (size_t)n * n;
    long bad = -1;
    int nomem = 0;
#pragma omp parallel
    {
        double complex *a = malloc(nn * sizeof *a);
        if (!a) {
#pragma omp atomic write
            nomem = 1;
        }
#pragma omp for schedule(static)
        for (size_t s = 0; s < op->volume; ++s) {
            if (!a)
                continue;
            double complex *inv = xinv + s * nn;
            memcpy(a, op->links + (s * WD_COARSE_BLOCKS + WD_MG_LOCAL) * nn, nn * sizeof *a);
            for (size_t i = 0; i < nn; ++i)
                inv[i] = i % (n + 1) == 0 ? 1 : 0;
            int ok = 1;
            for (int c = 0; ok && c < n; ++c) {
                int p = c;
                for (int r = c + 1; r < n; ++r)
                    if (cabs(a[(size_t)r * n + c]) > cabs(a[(size_t)p * n + c]))
                        p = r;
                const double complex piv = a[(size_t)p * n + c];
                if (!(cabs(piv) > 0) || !isfinite(creal(piv)) || !isfinite(cimag(piv))) {
                    ok = 0;
                    break;
                }
                for (int j = 0; p != c && j < n; ++j) {
                    double complex t = a[(size_t)c * n + j];
                    a[(size_t)c * n + j] = a[(size_t)p * n + j];
                    a[(size_t)p * n + j] = t;
                    t = inv[(size_t)c * n + j];
                    inv[(size_t)c * n + j] = inv[(size_t)p * n + j];
                    inv[(size_t)p * n + j] = t;
                }
                const double complex rp = 1 / piv;
                for (int j = 0; j < n; ++j) {
                    a[(size_t)c * n + j] *= rp;
                    inv[(size_t)c * n + j] *= rp;
                }
                for (int r = 0; r < n; ++r) {
                    const double complex f = a[(size_t)r * n + c];
                    if (r == c || f == 0)
                        continue;
                    for (int j = 0; j < n; ++j) {
                        a[(size_t)r * n + j] -= f * a[(size_t)c * n + j];
                        inv[(size_t)r * n + j] -= f * inv[(size_t)c * n + j];
                    }
                }
            }
            if (!ok) {
#pragma omp critical(mg_xinv)
                if (bad < 0 || (long)s < bad)
                    bad = (long)s;
            }
        }
        free(a);
    }
    if (nomem)
        return wd_fail(WD_ERR_NOMEM, "multigrid level %d: cannot allocate the even-odd solve's "
                       "work blocks", l);
    if (bad >= 0)
        return wd_fail(WD_ERR_INVALID, "multigrid level %d: the local block of coarse site %ld is "
                       "singular: no even-odd coarse solve (coarse_eo 0 solves the whole "
                       "operator)", l, bad);
    return WD_OK;
}

/* a level's global extents and the global coordinates of its block's
 * first site */
static void level_origin(const wd_mg_op *op, int ext[4], int org[4])
{
    const wd_grid *g = op->halo.grid;
    for (int mu = 0; mu < 4; ++mu) {
        ext[mu] = op->dims[mu] * (g ? g->procs[mu] : 1);
        org[mu] = g ? g->coord[mu] * op->dims[mu] : 0;
    }
}

/* whether a coarse level can be solved even-odd: every global extent even
 * (one of 1 makes a site its own neighbour) and the block's sites half of
 * each parity (one local extent even); the same answer on every rank */
static int eo_possible(const wd_mg_op *op)
{
    int ext[4], org[4], half = 0;
    level_origin(op, ext, org);
    for (int mu = 0; mu < 4; ++mu) {
        if (ext[mu] % 2)
            return 0;
        half |= op->dims[mu] % 2 == 0;
    }
    return half;
}

/* the even-odd solve of the coarsest level l on the backend: parity site
 * lists, X^-1 (single), and the hop levels of each parity with links X^-1
 * Y_d (d < 8; block 8 zero) packed in the level's precision: on the host
 * a piece of CHUNK sites at a time, or on a GPU there together with the
 * level's links (wd_mg_coarse_pack_cuda) */
static wd_status dev_schur(wd_mg *mg, int l)
{
    enum { CHUNK = 64 };
    const wd_mg_dev_ops *d = mg->dev;
    mg_level *v = &mg->lv[l];
    const wd_mg_op *op = &v->op;
    const int n = op->n, V = (int)op->volume, h = V / 2, nghost = (int)op->halo.nghost;
    const int gpu = mg->on_device;
    const size_t nn = (size_t)n * n, blocks = WD_COARSE_BLOCKS * nn;
    int *list[2] = {malloc(h * sizeof(int)), malloc(h * sizeof(int))};
    int *hn = malloc((size_t)h * WD_MG_DIRS * sizeof *hn);
    int *slot = gpu ? malloc(op->volume * sizeof *slot) : NULL;
    double complex *xinv = gpu ? NULL : malloc(op->volume * nn * sizeof *xinv);
    double complex *hb = gpu ? NULL : malloc(CHUNK * blocks * sizeof *hb);
    float *xf = gpu ? NULL : malloc(op->volume * nn * 2 * sizeof *xf);
    wd_status st = WD_OK;
    if (!list[0] || !list[1] || !hn || (gpu ? !slot : (!xinv || !hb || !xf)))
        st = wd_fail(WD_ERR_NOMEM, "multigrid level %d: cannot allocate the even-odd solve's "
                     "setup (%zu bytes)", l, op->volume * nn * 24);
    /* the parity of the global coordinates */
    int ext[4], org[4], count[2] = {0, 0};
    level_origin(op, ext, org);
    for (int s = 0; st == WD_OK && s < V; ++s) {
        int r = s, par = 0;
        for (int mu = 0; mu < 4; ++mu) {
            par += r % op->dims[mu] + org[mu];
            r /= op->dims[mu];
        }
        if (slot)
            slot[s] = par % 2 * h + count[par % 2];
        list[par % 2][count[par % 2]++] = s;
    }
    if (st == WD_OK && !gpu)
        st = coarse_xinv(op, l, xinv);
    if (st == WD_OK && gpu)
        st = dev_alloc(mg, &v->dxinv, op->volume * nn * 2 * sizeof(float),
                       "the coarse blocks' inverses");
    /* X^-1 in single, column-major */
    if (st == WD_OK && !gpu) {
#pragma omp parallel for schedule(static)
        for (int s = 0; s < V; ++s)
            for (int i = 0; i < n; ++i)
                for (int j = 0; j < n; ++j) {
                    const double complex z = xinv[((size_t)s * n + i) * n + j];
                    float *o = xf + 2 * (((size_t)s * n + j) * n + i);
                    o[0] = (float)creal(z);
                    o[1] = (float)cimag(z);
                }
        if ((st = dev_alloc(mg, &v->dxinv, op->volume * nn * 2 * sizeof *xf,
                            "the coarse blocks' inverses")) == WD_OK)
            st = d->h2d(v->dxinv, xf, op->volume * nn * 2 * sizeof *xf);
    }
    for (int p = 0; p < 2 && st == WD_OK; ++p) {
        wd_mg_dev_level *hp = &v->dhop[p];
        if ((st = wd_coarse_layout_make(&hp->layout, h, n / 2, mg->coarse_precision)) != WD_OK)
            break;
        /* the input is a whole field of the level with its ghosts */
        hp->nghost = V - h + nghost;
        for (int i = 0; i < h; ++i)
            for (int dd = 0; dd < WD_MG_DIRS; ++dd)
                hn[(size_t)i * WD_MG_DIRS + dd] = op->nbr[(size_t)list[p][i] * WD_MG_DIRS + dd];
        if ((st = dev_alloc(mg, &v->deo[p], h * sizeof(int), "a parity's coarse sites")) != WD_OK ||
            (st = d->h2d(v->deo[p], list[p], h * sizeof(int))) != WD_OK ||
            (st = dev_alloc(mg, &v->dhnbr[p], (size_t)h * WD_MG_DIRS * sizeof *hn,
                            "a parity's coarse neighbours")) != WD_OK ||
            (st = d->h2d(v->dhnbr[p], hn, (size_t)h * WD_MG_DIRS * sizeof *hn)) != WD_OK ||
            (st = dev_alloc(mg, &v->dhlinks[p], hp->layout.link_bytes, "the coarse hops")) != WD_OK)
            break;
        if (hp->layout.link_norm_bytes &&
            (st = dev_alloc(mg, &v->dhlink_norm[p], hp->layout.link_norm_bytes,
                            "the coarse hops' norms")) != WD_OK)
            break;
        const size_t site_bytes = hp->layout.link_bytes / h;
        void *pack = gpu ? NULL : malloc(CHUNK * site_bytes);
        float *norm = gpu ? NULL : malloc(CHUNK * WD_COARSE_BLOCKS * sizeof *norm);
        if (!gpu && (!pack || !norm))
            st = wd_fail(WD_ERR_NOMEM, "multigrid level %d: cannot allocate the hops' packing", l);
        for (int i0 = 0; st == WD_OK && !gpu && i0 < h; i0 += CHUNK) {
            const int m = h - i0 < CHUNK ? h - i0 : CHUNK;
            /* X^-1 Y_d of each site, row by row: out[r][c] = sum_k X^-1[r][k] Y_d[k][c] */
#pragma omp parallel for schedule(static)
            for (int i = 0; i < m; ++i) {
                const size_t s = (size_t)list[p][i0 + i];
                const double complex *xi = xinv + s * nn;
                for (int dd = 0; dd < WD_COARSE_BLOCKS; ++dd) {
                    double complex *out = hb + ((size_t)i * WD_COARSE_BLOCKS + dd) * nn;
                    memset(out, 0, nn * sizeof *out);
                    if (dd == WD_MG_LOCAL)
                        continue;
                    const double complex *y = op->links + (s * WD_COARSE_BLOCKS + dd) * nn;
                    for (int r = 0; r < n; ++r)
                        for (int k = 0; k < n; ++k) {
                            const double complex a = xi[(size_t)r * n + k];
                            for (int c = 0; c < n; ++c)
                                out[(size_t)r * n + c] += a * y[(size_t)k * n + c];
                        }
                }
            }
            wd_coarse_layout lc;
            if ((st = wd_coarse_layout_make(&lc, m, n / 2, mg->coarse_precision)) != WD_OK)
                break;
            wd_pack_coarse_links(&lc, pack, norm, hb);
            st = d->h2d((char *)v->dhlinks[p] + (size_t)i0 * site_bytes, pack, m * site_bytes);
            if (st == WD_OK && v->dhlink_norm[p])
                st = d->h2d(v->dhlink_norm[p] + (size_t)i0 * WD_COARSE_BLOCKS, norm,
                            (size_t)m * WD_COARSE_BLOCKS * sizeof *norm);
        }
        free(pack);
        free(norm);
        hp->nbr = v->dhnbr[p];
        hp->links = v->dhlinks[p];
        hp->link_norm = v->dhlink_norm[p];
        hp->hin = v->dop.hin;
        hp->hout = v->dop.hout;
        hp->hin_norm = v->dop.hin_norm;
        hp->hout_norm = v->dop.hout_norm;
    }
    /* one rank: the neighbours of the batched solve's hops, site s at its
     * place in its parity's list (pos), after the other parity's h sites
     * where s has hop p's own parity */
    if (st == WD_OK && mg->ranks == 1 && nghost == 0) {
        int *pos = malloc(V * sizeof *pos), *par = malloc(V * sizeof *par);
        if (!pos || !par)
            st = wd_fail(WD_ERR_NOMEM, "multigrid level %d: cannot allocate the batched solve's "
                         "neighbours", l);
        for (int q = 0; q < 2 && st == WD_OK; ++q)
            for (int i = 0; i < h; ++i) {
                pos[list[q][i]] = i;
                par[list[q][i]] = q;
            }
        for (int p = 0; p < 2 && st == WD_OK; ++p) {
            for (int i = 0; i < h; ++i)
                for (int dd = 0; dd < WD_MG_DIRS; ++dd) {
                    const int s = op->nbr[(size_t)list[p][i] * WD_MG_DIRS + dd];
                    hn[(size_t)i * WD_MG_DIRS + dd] = par[s] == 1 - p ? pos[s] : h + pos[s];
                }
            if ((st = dev_alloc(mg, &v->dlnbr[p], (size_t)h * WD_MG_DIRS * sizeof *hn,
                                "the batched solve's neighbours")) == WD_OK)
                st = d->h2d(v->dlnbr[p], hn, (size_t)h * WD_MG_DIRS * sizeof *hn);
        }
        free(pos);
        free(par);
    }
    if (st == WD_OK && gpu) {
        const wd_mg_coarse_pack pk = {
            .n = n, .volume = V, .precision = v->dop.layout.precision,
            .links = (const double *)op->links, .dlinks = v->dlinks,
            .dlink_norm = v->dlink_norm, .slot = slot, .half_volume = h, .dxinv = v->dxinv,
            .dhops = {v->dhlinks[0], v->dhlinks[1]},
            .dhop_norm = {v->dhlink_norm[0], v->dhlink_norm[1]}};
        st = wd_mg_coarse_pack_cuda(&pk, l);
    }
    /* the parity fields; the whole fields the hops read start finite (a
     * zero block times a stale site is then zero) */
    const size_t field_bytes = (size_t)h * 2 * n * sizeof(float);
    if (st == WD_OK && (st = dev_alloc(mg, &v->deb, field_bytes, "a coarse parity field")) == WD_OK)
        st = dev_alloc(mg, &v->dex, field_bytes, "a coarse parity field");
    for (int i = 0; i < 4 && st == WD_OK; ++i)
        st = d->zero(V + nghost, n, v->dw[i]);
    free(list[0]);
    free(list[1]);
    free(slot);
    free(xinv);
    free(hb);
    free(xf);
    free(hn);
    if (st == WD_OK) {
        v->eo = 1;
        v->half_volume = h;
    }
    return st;
}

/* Before the setup (collective): GPUs on a grid exchange the coarse
 * faces through NCCL, when the build has it (else through the host) */
static wd_status dev_open(wd_mg *mg)
{
    wd_status st = WD_OK;
    if (mg->on_device && mg->ranks > 1 && wd_comm_has_nccl()) {
        if ((st = wd_nccl_open(&mg->nccl, mg->ranks, wd_comm_rank())) == WD_OK &&
            !(mg->stream = wd_cuda_stream()))
            st = wd_fail(WD_ERR_CUDA, "multigrid: no CUDA stream for the coarse faces");
        st = wd_comm_agree(st);
    }
    return st;
}

/* After the setup: the transfers and the coarse levels on the backend
 * (those whose null vectors the setup relaxed there are there already) */
static wd_status dev_setup(wd_mg *mg)
{
    wd_status st = mg->stage ? WD_OK
                             : dev_alloc(mg, &mg->stage, mg->lv[0].len * sizeof(double complex),
                                         "the fine level's transfer field");
    for (int l = 0; st == WD_OK && l < mg->levels; ++l) {
        if (l + 1 < mg->levels)
            st = dev_transfer(mg, l);
        const int eo = l > 0 && l + 1 == mg->levels && mg->set.coarse_eo &&
                       eo_possible(&mg->lv[l].op);
        if (st == WD_OK && l > 0 && !mg->lv[l].dlinks)
            st = dev_level(mg, l, eo);
        if (st == WD_OK && eo)
            st = dev_schur(mg, l);
        /* the coarse kernels' block sizes, timed on the level's scratch
         * (the hops' output is a parity's: it fits a whole field) */
        mg_level *v = &mg->lv[l];
        if (st == WD_OK && l > 0 && mg->dev->tune) {
            st = mg->dev->tune(&v->dop, v->dw[0], v->dw[1]);
            for (int p = 0; st == WD_OK && eo && p < 2; ++p)
                st = mg->dev->tune(&v->dhop[p], v->dw[2], v->dw[3]);
            if (st == WD_OK && mg->set.verbosity >= 2)
                fprintf(stderr, "wdirac multigrid: level %d's coarse kernel tuned: block %d "
                        "(hops %d, %d)\n", l, v->dop.block, eo ? v->dhop[0].block : 0,
                        eo ? v->dhop[1].block : 0);
        }
    }
    return st;
}

/* ---- the cycle ---- */

static int gcr(wd_mg *mg, int l, int schur, float *x, const float *b, double tol, int max_iter,
               int precondition, double *relres, wd_status *st);
static wd_status cycle(wd_mg *mg, int l, float *e, const float *r);

/* y += sum_i a[i] x[i] over k fields of vol sites of level l, in pieces
 * the backend takes */
static wd_status dev_multi_caxpy(wd_mg *mg, int l, int vol, int k, const wd_complex *a,
                                 float *const *x, float *y)
{
    const int n = mg->lv[l].dop.layout.ncomp;
    wd_status st = WD_OK;
    for (int i = 0; st == WD_OK && i < k; i += WD_MG_DEV_MULTI) {
        const int m = k - i < WD_MG_DEV_MULTI ? k - i : WD_MG_DEV_MULTI;
        st = mg->dev->multi_caxpy(vol, n, m, a + i, (const float *const *)(x + i), y);
        mg->flops += 8.0 * m * vol * n;
    }
    return st;
}

/* e = CA-GCR(steps) on A_l e = r: the basis p_0 = r (w[2]), p_{j+1} = A_l
 * p_j (dsm), its Gram matrix a column per step, e = sum a_i p_i
 * (wd_mg_ca_gcr_coeffs) */
static wd_status smooth_ca_gcr(wd_mg *mg, int l, float *e, const float *r, int steps)
{
    mg_level *v = &mg->lv[l];
    const int vol = v->dop.layout.volume, n = v->dop.layout.ncomp;
    float *p[WD_MG_MAX_SMOOTH + 1];
    wd_complex gram[(WD_MG_MAX_SMOOTH + 1) * (WD_MG_MAX_SMOOTH + 1)], a[WD_MG_MAX_SMOOTH];
    double res[2 * WD_MG_DEV_MULTI];
    const int ld = steps + 1;
    wd_status st = WD_OK;
    if (steps > v->nsm)
        return wd_fail(WD_ERR_INVALID, "multigrid level %d: %d CA-GCR steps, the setup's basis "
                       "has %d", l, steps, v->nsm);
    /* p_0 = r in w[2] (the operator fills its input's ghosts) */
    p[0] = v->dw[2];
    st = mg->dev->copy(vol, n, p[0], r);
    for (int j = 1; st == WD_OK && j <= steps; ++j) {
        p[j] = v->dsm[j - 1];
        if ((st = dev_apply(mg, l, p[j], p[j - 1])) != WD_OK)
            break;
        for (int i0 = 0; st == WD_OK && i0 <= j; i0 += WD_MG_DEV_MULTI) {
            const int k = j + 1 - i0 < WD_MG_DEV_MULTI ? j + 1 - i0 : WD_MG_DEV_MULTI;
            st = dev_multi_cdot(mg, vol, n, k, (const float *const *)(p + i0), p[j], res);
            for (int i = 0; st == WD_OK && i < k; ++i)
                gram[(i0 + i) * ld + j] = (wd_complex){res[2 * i], res[2 * i + 1]};
        }
    }
    if (st != WD_OK)
        return st;
    const int m = wd_mg_ca_gcr_coeffs(steps, gram, a);
    if ((st = mg->dev->zero(vol, n, e)) != WD_OK)
        return st;
    return dev_multi_caxpy(mg, l, vol, m, a, p, e);
}

/* e = steps of the smoother on A_l e = r from e = 0 (MR: w[2], w[3]
 * scratch) */
static wd_status smooth(wd_mg *mg, int l, float *e, const float *r, int steps)
{
    const wd_mg_dev_ops *d = mg->dev;
    mg_level *v = &mg->lv[l];
    if (mg->set.smoother == WD_MG_SMOOTHER_CA_GCR)
        return smooth_ca_gcr(mg, l, e, r, steps);
    const int vol = v->dop.layout.volume, n = v->dop.layout.ncomp;
    float *rr = v->dw[2], *q = v->dw[3];
    wd_status st = d->zero(vol, n, e);
    if (st == WD_OK)
        st = d->copy(vol, n, rr, r);
    for (int i = 0; st == WD_OK && i < steps; ++i) {
        double res[3];
        if ((st = dev_apply(mg, l, q, rr)) != WD_OK ||
            (st = dev_cdot_norm2(mg, vol, n, q, rr, res)) != WD_OK || !(res[2] > 0))
            break;
        const wd_complex alpha = {res[0] / res[2], res[1] / res[2]};
        const wd_complex malpha = {-alpha.re, -alpha.im};
        const float *rs[1] = {rr}, *qs[1] = {q};
        if ((st = d->multi_caxpy(vol, n, 1, &alpha, rs, e)) == WD_OK && i + 1 < steps)
            st = d->multi_caxpy(vol, n, 1, &malpha, qs, rr);
    }
    return st;
}

/*
 * The coarsest level l's solve of dx from db even-odd: with b' = X^-1 b
 * (whole) GCR on S x_e = b'_e - X^-1 Y_eo b'_o (the even sites, compact),
 * then x_o = b'_o - X^-1 Y_oe x_e, both parities put back into dx.  GCR's
 * tolerance is on the Schur system's residual (QUDA's).
 *   eo_source    bp = b' of db (whole, room for ghosts), eb the Schur
 *                source (tmp a parity field's scratch)
 *   eo_solution  dx from ex = x_e and bp (eb a parity field's scratch;
 *                the level's dw[0], dw[3] too)
 *   eo_solve     the two around GCR on the level's own fields (db, dx;
 *                dw[2] b', deb, dex)
 */
static wd_status eo_source(wd_mg *mg, int l, const float *db, float *bp, float *eb, float *tmp)
{
    const wd_mg_dev_ops *d = mg->dev;
    mg_level *c = &mg->lv[l];
    const int h = c->half_volume, n = c->dop.layout.ncomp, V = c->dop.layout.volume;
    mg->flops += 8.0 * n * n * V;
    wd_status st = d->block_apply(V, n, c->dxinv, db, bp);
    /* eb = b'_e - X^-1 Y_eo b'_o */
    if (st == WD_OK)
        st = schur_hop(mg, l, 0, tmp, bp);
    if (st == WD_OK)
        st = d->gather(h, 2 * n, c->deo[0], bp, eb);
    const wd_complex minus = {-1, 0};
    float *w[1] = {tmp};
    if (st == WD_OK)
        st = dev_multi_caxpy(mg, l, h, 1, &minus, w, eb);
    return st;
}

static wd_status eo_solution(wd_mg *mg, int l, const float *ex, const float *bp, float *eb,
                             float *dx)
{
    const wd_mg_dev_ops *d = mg->dev;
    mg_level *c = &mg->lv[l];
    const int h = c->half_volume, n = c->dop.layout.ncomp;
    /* x_o = b'_o - X^-1 Y_oe x_e (into dw[3], b'_o gathered into eb) */
    wd_status st = d->scatter(h, 2 * n, c->deo[0], ex, c->dw[0]);
    if (st == WD_OK)
        st = schur_hop(mg, l, 1, c->dw[3], c->dw[0]);
    if (st == WD_OK)
        st = d->gather(h, 2 * n, c->deo[1], bp, eb);
    if (st == WD_OK)
        st = d->xmy(h, n, eb, c->dw[3]);
    if (st == WD_OK)
        st = d->scatter(h, 2 * n, c->deo[0], ex, dx);
    if (st == WD_OK)
        st = d->scatter(h, 2 * n, c->deo[1], c->dw[3], dx);
    return st;
}

static wd_status eo_solve(wd_mg *mg, int l)
{
    mg_level *c = &mg->lv[l];
    const wd_mg_settings *m = &mg->set;
    double rel;
    wd_status st = eo_source(mg, l, c->db, c->dw[2], c->deb, c->dex);
    if (st != WD_OK)
        return st;
    gcr(mg, l, 1, c->dex, c->deb, m->coarse_tol, m->coarse_max_iter, 0, &rel, &st);
    return st == WD_OK ? eo_solution(mg, l, c->dex, c->dw[2], c->deb, c->dx) : st;
}

/* the next level's solve of c->dx from c->db, within a cycle from level l */
static wd_status coarse_solve(wd_mg *mg, int l)
{
    mg_level *c = &mg->lv[l + 1];
    const wd_mg_settings *m = &mg->set;
    const int last = l + 1 == mg->levels - 1;
    double rel;
    wd_status st;
    if (last && c->eo) {
        st = eo_solve(mg, l + 1);
        prof(mg, PROF_COARSE_BLAS);
        return st;
    }
    /* both start from c->dx = 0 (gcr and cycle zero it) */
    if (last || m->cycle == WD_MG_KCYCLE)
        gcr(mg, l + 1, 0, c->dx, c->db, m->coarse_tol, m->coarse_max_iter, !last, &rel, &st);
    else
        st = cycle(mg, l + 1, c->dx, c->db);
    prof(mg, PROF_COARSE_BLAS);
    return st;
}

/* e = K_0 r on the backend: the fine level's cycle in the Krylov
 * precision (e may not be r; the fine field u is its scratch) */
static wd_status cycle_fine(wd_mg *mg, wd_mg_pair *e, const wd_mg_pair *r)
{
    wd_mg_fine *f = &mg->fine;
    wd_backend *be = f->be;
    const wd_mg_dev_ops *d = mg->dev;
    mg_level *v = &mg->lv[0], *c = &mg->lv[1];
    const wd_mg_settings *m = &mg->set;
    const wd_complex one = {1, 0};
    wd_status st;
    const wd_mg_pair *res = r;
    if (m->pre_smooth) {
        if ((st = wd_mg_fine_smooth(f, e, r, m->pre_smooth)) != WD_OK)
            return st;
        prof(mg, PROF_SMOOTH);
        if ((st = wd_mg_fine_apply_k(f, &f->u, e)) != WD_OK)
            return st;
        wd_mg_pair_ax(be, -1, &f->u);
        wd_mg_pair_caxpy(be, one, r, &f->u);
        res = &f->u;
        v->iterations += m->pre_smooth;
        prof(mg, PROF_FINE_APPLY);
    }
    double t = now_s();
    double *stage = (double *)mg->stage;
    wd_mg_pair *into = m->pre_smooth ? &f->u : e;
    if ((st = wd_download_pair(be, stage, &res->e, &res->o, mg->on_device, NULL)) != WD_OK ||
        (st = d->restrict_(&v->dt, c->db, stage)) != WD_OK)
        return st;
    prof(mg, PROF_TRANSFER);
    /* P^dag and P: a complex multiply-add a fine component and vector each */
    mg->flops += 16.0 * v->dt.fine_volume * v->dt.n_fine * v->dt.nvec;
    if ((st = coarse_solve(mg, 0)) != WD_OK ||
        (st = d->prolong(&v->dt, stage, c->dx)) != WD_OK ||
        (st = wd_upload_pair(be, &into->e, &into->o, stage, mg->on_device, NULL)) != WD_OK)
        return st;
    if (m->pre_smooth)
        wd_mg_pair_caxpy(be, one, &f->u, e);
    prof(mg, PROF_TRANSFER);
    mg->t_coarse += now_s() - t;
    if (m->post_smooth) {
        /* u = r - A e, then e += the smoother's correction of u */
        if ((st = wd_mg_fine_apply_k(f, &f->u, e)) != WD_OK)
            return st;
        wd_mg_pair_ax(be, -1, &f->u);
        wd_mg_pair_caxpy(be, one, r, &f->u);
        prof(mg, PROF_FINE_APPLY);
        if ((st = wd_mg_fine_smooth(f, &f->u, &f->u, m->post_smooth)) != WD_OK)
            return st;
        wd_mg_pair_caxpy(be, one, &f->u, e);
        v->iterations += m->post_smooth;
        prof(mg, PROF_SMOOTH);
    }
    return be->error;
}

/*
 * outer_eo: the fine level's cycle on the Schur system in the Krylov
 * precision, e_e = K_0 r_e ~ Mhat^-1 r_e, in two halves around the next
 * level's solve, so that several columns' solves can run together
 * (run_cols): the coarse correction of (s_e, 0), s_e = r_e (Wilson, the
 * asymmetric form: [A^-1]_ee = Mhat^-1) or A_ee r_e (the symmetric form:
 * Mhat_sym^-1 = Mhat_asym^-1 A_ee), its even part kept, between the
 * smoothers on Mhat itself (no odd sites).  e may not be r; the column's
 * ue carries the pre-smoothed residual's correction between the halves.
 *   cycle_eo_pre   (pre-smoothing and) the residual restricted into db
 *   cycle_eo_post  the correction dx prolongated into e (e += it after
 *                  pre-smoothing), post-smoothing
 */
static wd_status cycle_eo_pre(wd_mg *mg, struct mg_col *c, wd_field *e, const wd_field *r,
                              float *db);
static wd_status cycle_eo_post(wd_mg *mg, struct mg_col *c, wd_field *e, const wd_field *r,
                               const float *dx);

/* e = K_l r: one cycle from a coarse level l (below the last level) */
static wd_status cycle(wd_mg *mg, int l, float *e, const float *r)
{
    const wd_mg_dev_ops *d = mg->dev;
    mg_level *v = &mg->lv[l], *c = &mg->lv[l + 1];
    const wd_mg_settings *m = &mg->set;
    const int vol = v->dop.layout.volume, n = v->dop.layout.ncomp;
    float *res = v->dw[0], *de = v->dw[1];
    const wd_complex one = {1, 0};
    wd_status st;
    if (m->pre_smooth) {
        if ((st = smooth(mg, l, e, r, m->pre_smooth)) != WD_OK ||
            (st = dev_apply(mg, l, res, e)) != WD_OK || (st = d->xmy(vol, n, r, res)) != WD_OK)
            return st;
    } else if ((st = d->zero(vol, n, e)) != WD_OK || (st = d->copy(vol, n, res, r)) != WD_OK) {
        return st;
    }
    if ((st = d->restrict_(&v->dt, c->db, res)) != WD_OK || (st = coarse_solve(mg, l)) != WD_OK ||
        (st = d->prolong(&v->dt, de, c->dx)) != WD_OK ||
        (st = dev_multi_caxpy(mg, l, vol, 1, &one, &de, e)) != WD_OK)
        return st;
    if (m->post_smooth) {
        if ((st = dev_apply(mg, l, res, e)) != WD_OK || (st = d->xmy(vol, n, r, res)) != WD_OK ||
            (st = smooth(mg, l, de, res, m->post_smooth)) != WD_OK ||
            (st = dev_multi_caxpy(mg, l, vol, 1, &one, &de, e)) != WD_OK)
            return st;
    }
    return WD_OK;
}

/* gamma = B^-1 alpha for the unit upper triangular B of a GCR cycle's k
 * directions (B[i][j] = beta[i nk + j], i < j: A z_j = q_j + sum_i beta_ij
 * q_i with the q orthogonal): the coefficients of x += sum gamma_j z_j that
 * give r -= sum alpha_j q_j */
static void gcr_backsolve(int k, const wd_complex *alpha, const wd_complex *beta, int ld,
                          wd_complex *gamma)
{
    for (int j = k - 1; j >= 0; --j) {
        double re = alpha[j].re, im = alpha[j].im;
        for (int l = j + 1; l < k; ++l) {
            const wd_complex b = beta[(size_t)j * ld + l], g = gamma[l];
            re -= b.re * g.re - b.im * g.im;
            im -= b.re * g.im + b.im * g.re;
        }
        gamma[j] = (wd_complex){re, im};
    }
}

/*
 * Flexible GCR(nkrylov) on coarse level l, A_l x = b from x's value (with
 * schur: S x = b on the even sites, eo_solve's Schur complement), with
 * the cycle of level l as preconditioner (precondition) or none, to
 * |b - A x| <= tol |b| or max_iter iterations.  As the outer GCR, but with
 * one reduction a step: a single multi-dot of q_k = A z_k against the
 * cycle's earlier images q_i, r and itself gives the classical
 * Gram-Schmidt projections, and with them (the q_i orthogonal, r
 * orthogonal to them) |q_k'|^2 = |q_k|^2 - sum_i |<q_i, q_k>|^2 / |q_i|^2
 * of the orthogonalised image, <q_k', r> = <q_k, r> and the new |r|^2 =
 * |r|^2 - |<q_k, r>|^2 / |q_k'|^2; where cancellation leaves |q_k'|^2
 * below a thousandth of |q_k|^2 it is measured instead.  x is updated
 * once a restart through the triangular system of the projections.  x
 * starts at zero, so r = b without an application; at a restart the
 * residual is recomputed as b - A x, but not at the end: a cycle's solve
 * to a loose tolerance takes the recursive residual (an application and
 * a reduction saved a solve, two with the start).  Returns the
 * iterations; *relres the last relative residual (the recursive one at
 * the end); *st WD_OK, or WD_ERR_NAN / a cycle's or the backend's
 * failure.
 */
static int gcr(wd_mg *mg, int l, int schur, float *x, const float *b, double tol, int max_iter,
               int precondition, double *relres, wd_status *st)
{
    const wd_mg_dev_ops *d = mg->dev;
    mg_level *v = &mg->lv[l];
    const int vol = schur ? v->half_volume : v->dop.layout.volume, n = v->dop.layout.ncomp;
    const int nk = mg->set.gcr_nkrylov;
    double dots[2 * WD_MG_DEV_MULTI], res[3];
    wd_complex neg[WD_MG_DEV_MULTI];
    const float *list[WD_MG_DEV_MULTI];
    *relres = 0;
    const float *bs[1] = {b};
    if ((*st = dev_multi_cdot(mg, vol, n, 1, bs, b, res)) != WD_OK)
        return 0;
    const double bnorm = sqrt(res[0]);
    if ((*st = d->zero(vol, n, x)) != WD_OK || bnorm == 0 ||
        (*st = d->copy(vol, n, v->dr, b)) != WD_OK)
        return 0;
    const float *rs[1] = {v->dr};
    double r2 = res[0];
    int it = 0;
    while (r2 > tol * tol * bnorm * bnorm && it < max_iter) {
        int k = 0;
        for (; k < nk && it < max_iter && r2 > tol * tol * bnorm * bnorm; ++k, ++it) {
            *st = precondition ? cycle(mg, l, v->dz[k], v->dr) : d->copy(vol, n, v->dz[k], v->dr);
            if (*st == WD_OK)
                *st = level_apply(mg, l, schur, v->dq[k], v->dz[k]);
            /* <q_i, q_k> (i < k), <r, q_k>, |q_k|^2 in pieces of the
             * backend's multi-dot: one piece (one reduction) for k <= 14 */
            double rq[2] = {0, 0}, q2 = 0;
            for (int i0 = 0; *st == WD_OK && i0 < k + 2; i0 += WD_MG_DEV_MULTI) {
                const int m = k + 2 - i0 < WD_MG_DEV_MULTI ? k + 2 - i0 : WD_MG_DEV_MULTI;
                for (int i = 0; i < m; ++i)
                    list[i] = i0 + i < k ? v->dq[i0 + i] : i0 + i == k ? v->dr : v->dq[k];
                if ((*st = dev_multi_cdot(mg, vol, n, m, list, v->dq[k], dots)) != WD_OK)
                    break;
                for (int i = 0; i < m; ++i) {
                    const int c = i0 + i;
                    if (c < k)
                        v->beta[(size_t)c * nk + k] =
                            (wd_complex){dots[2 * i] / v->qq[c], dots[2 * i + 1] / v->qq[c]};
                    else if (c == k)
                        rq[0] = dots[2 * i], rq[1] = dots[2 * i + 1];
                    else
                        q2 = dots[2 * i];
                }
            }
            double qo2 = q2;
            for (int i = 0; i < k; ++i) {
                const wd_complex bb = v->beta[(size_t)i * nk + k];
                qo2 -= (bb.re * bb.re + bb.im * bb.im) * v->qq[i];
            }
            for (int i0 = 0; *st == WD_OK && i0 < k; i0 += WD_MG_DEV_MULTI) {
                const int m = k - i0 < WD_MG_DEV_MULTI ? k - i0 : WD_MG_DEV_MULTI;
                for (int i = 0; i < m; ++i) {
                    const wd_complex bb = v->beta[(size_t)(i0 + i) * nk + k];
                    neg[i] = (wd_complex){-bb.re, -bb.im};
                }
                *st = d->multi_caxpy(vol, n, m, neg, (const float *const *)(v->dq + i0), v->dq[k]);
            }
            if (*st == WD_OK && k && !(qo2 > 1e-3 * q2)) {
                /* cancellation: measure the orthogonalised image */
                const float *qs[1] = {v->dq[k]};
                if ((*st = dev_multi_cdot(mg, vol, n, 1, qs, v->dq[k], res)) == WD_OK)
                    qo2 = res[0];
            }
            if (*st != WD_OK)
                return it;
            if (!isfinite(qo2) || !isfinite(rq[0]) || !isfinite(rq[1])) {
                *st = wd_fail(WD_ERR_NAN, "multigrid: GCR on level %d met NaN or Inf after %d "
                              "iterations", l, it);
                return it;
            }
            if (!(qo2 > 0))
                break;
            /* <q_k, r> = conj(<r, q_k>) */
            v->qq[k] = qo2;
            v->alpha[k] = (wd_complex){rq[0] / qo2, -rq[1] / qo2};
            const wd_complex ma = {-v->alpha[k].re, -v->alpha[k].im};
            const float *qk[1] = {v->dq[k]};
            if ((*st = d->multi_caxpy(vol, n, 1, &ma, qk, v->dr)) != WD_OK)
                return it;
            r2 -= (rq[0] * rq[0] + rq[1] * rq[1]) / qo2;
        }
        /* x += sum gamma_j z_j; done on the recursive residual, or a
         * restart on the recomputed one */
        gcr_backsolve(k, v->alpha, v->beta, nk, v->gamma);
        if ((*st = dev_multi_caxpy(mg, l, vol, k, v->gamma, v->dz, x)) != WD_OK)
            return it;
        if (k == 0 || !(r2 > tol * tol * bnorm * bnorm) || it >= max_iter)
            break;
        if ((*st = level_apply(mg, l, schur, v->dr, x)) != WD_OK ||
            (*st = d->xmy(vol, n, b, v->dr)) != WD_OK ||
            (*st = dev_multi_cdot(mg, vol, n, 1, rs, v->dr, res)) != WD_OK)
            return it;
        r2 = res[0];
    }
    v->iterations += it;
    *relres = sqrt(r2) / bnorm;
    return it;
}

/* ---- many right-hand sides: the last level's solves of several at once ---- */

static void lanes_free(wd_mg *mg)
{
    mg_lanes *bt = &mg->lanes;
    const wd_mg_dev_ops *d = mg->dev;
    float *fields[] = {bt->db, bt->dx, bt->bp, bt->eb, bt->ex, bt->r, bt->t};
    for (size_t i = 0; d && i < sizeof fields / sizeof *fields; ++i)
        d->free(fields[i]);
    for (int i = 0; d && bt->z && i < mg->set.gcr_nkrylov; ++i)
        d->free(bt->z[i]);
    for (int i = 0; d && bt->q && i < mg->set.gcr_nkrylov; ++i)
        d->free(bt->q[i]);
    if (d) {
        d->free(bt->hmin);
        d->free(bt->hmout);
        d->free(bt->hmin_norm);
        d->free(bt->hmout_norm);
    }
    free(bt->z);
    free(bt->q);
    free(bt->alpha);
    free(bt->beta);
    free(bt->gamma);
    free(bt->qq);
    memset(bt, 0, sizeof *bt);
}

/* whether the last level's solves can run batched: two levels, the last
 * solved even-odd on one rank */
static int lanes_ok(const wd_mg *mg)
{
    const mg_level *c = &mg->lv[mg->levels - 1];
    return mg->levels == 2 && c->eo && mg->ranks == 1 && c->dlnbr[0] && c->dlnbr[1];
}

/* mg_lanes' fields for `lanes` right-hand sides (kept, grown on demand),
 * every float zero */
static wd_status lanes_alloc(wd_mg *mg, int lanes)
{
    mg_lanes *bt = &mg->lanes;
    if (bt->cap >= lanes)
        return WD_OK;
    lanes_free(mg);
    const wd_mg_dev_ops *d = mg->dev;
    mg_level *c = &mg->lv[mg->levels - 1];
    const int V = c->dop.layout.volume, n = c->dop.layout.ncomp, nk = mg->set.gcr_nkrylov;
    const size_t nl = (size_t)lanes * nk;
    bt->stride = (size_t)V * 2 * n;
    const size_t bytes = lanes * bt->stride * sizeof(float);
    wd_status st = WD_OK;
    bt->z = calloc(nk, sizeof *bt->z);
    bt->q = calloc(nk, sizeof *bt->q);
    bt->alpha = calloc(nl, sizeof *bt->alpha);
    bt->gamma = calloc(nl, sizeof *bt->gamma);
    bt->beta = calloc(nl * nk, sizeof *bt->beta);
    bt->qq = calloc(nl, sizeof *bt->qq);
    if (!bt->z || !bt->q || !bt->alpha || !bt->gamma || !bt->beta || !bt->qq)
        st = wd_fail(WD_ERR_NOMEM, "multigrid: cannot allocate the batched solve's "
                     "coefficients for %d right-hand sides", lanes);
    float **fields[] = {&bt->db, &bt->dx, &bt->bp, &bt->eb, &bt->ex, &bt->r, &bt->t};
    for (size_t i = 0; i < sizeof fields / sizeof *fields && st == WD_OK; ++i)
        if ((st = dev_alloc(mg, fields[i], bytes, "the batched solve's fields")) == WD_OK)
            st = d->zero(lanes * V, n, *fields[i]);
    for (int i = 0; i < nk && st == WD_OK; ++i) {
        if ((st = dev_alloc(mg, &bt->z[i], bytes, "the batched solve's directions")) == WD_OK &&
            (st = d->zero(lanes * V, n, bt->z[i])) == WD_OK &&
            (st = dev_alloc(mg, &bt->q[i], bytes, "the batched solve's directions")) == WD_OK)
            st = d->zero(lanes * V, n, bt->q[i]);
    }
    const int half = c->dop.layout.precision == 2;
    const size_t hbytes = (size_t)lanes * V * 2 * n * sizeof(short);
    const size_t nbytes = (size_t)lanes * V * sizeof(float);
    if (st == WD_OK && half &&
        (st = dev_alloc(mg, &bt->hmin, hbytes, "the batched solve's 16-bit fields")) == WD_OK &&
        (st = dev_alloc(mg, &bt->hmout, hbytes, "the batched solve's 16-bit fields")) == WD_OK &&
        (st = dev_alloc(mg, &bt->hmin_norm, nbytes, "the batched solve's norms")) == WD_OK)
        st = dev_alloc(mg, &bt->hmout_norm, nbytes, "the batched solve's norms");
    for (int p = 0; p < 2 && st == WD_OK; ++p) {
        wd_mg_dev_level *hp = &bt->hop[p];
        *hp = c->dhop[p];
        hp->nbr = c->dlnbr[p];
        hp->hmin = bt->hmin;
        hp->hmout = bt->hmout;
        hp->hmin_norm = bt->hmin_norm;
        hp->hmout_norm = bt->hmout_norm;
        hp->hmulti = half ? lanes : 0;
    }
    if (st != WD_OK) {
        lanes_free(mg);
        return st;
    }
    bt->cap = lanes;
    return WD_OK;
}

/* out = S in for `lanes` right-hand sides of the last level l (mg_lanes'
 * layout, in's and out's parity fields in their lanes' first half_volume
 * sites): the hop to the odd sites into t, the hop back, in - that; three
 * launches for every lane.  With single links each lane's bits are
 * schur_apply's (the same sums of the same numbers); with half links the
 * odd sites between the hops are widened to single and rounded again
 * (schur_apply_half keeps them in 16 bits) */
static wd_status schur_apply_lanes(wd_mg *mg, int l, int lanes, float *out, const float *in)
{
    const wd_mg_dev_ops *d = mg->dev;
    mg_lanes *bt = &mg->lanes;
    mg_level *v = &mg->lv[l];
    const double hops = apply_flops(&v->op) * WD_MG_DIRS / WD_COARSE_BLOCKS * v->half_volume;
    prof(mg, PROF_COARSE_BLAS);
    mg->flops += 2 * hops * lanes;
    mg->prof_applies += lanes;
    wd_status st = d->apply_multi(&bt->hop[1], lanes, bt->t, in);
    if (st == WD_OK)
        st = d->apply_multi(&bt->hop[0], lanes, out, bt->t);
    if (st == WD_OK)
        st = d->xmy(lanes * v->dop.layout.volume, v->dop.layout.ncomp, in, out);
    prof(mg, PROF_COARSE_APPLY);
    return st;
}

/*
 * gcr (schur, no preconditioner) on the last level l for `lanes`
 * right-hand sides in lock step: mg_lanes' ex from eb, each lane with its
 * own coefficients, iterations (its[j]) and stop, the applications and
 * the BLAS of every lane in one launch (schur_apply_lanes, lanes_cdot,
 * lanes_caxpy).  A lane that has stopped, in a cycle or for good, takes
 * zero coefficients while the others go on, which leave its fields' bits
 * as they are; so each lane takes the steps, and with single links gets
 * the bits, of gcr on it alone (the sums' order kept: the pieces of
 * WD_MG_DEV_MULTI and the x update's zero tail alike).  NaN or Inf in any
 * lane fails the batch (WD_ERR_NAN naming the lane).
 */
static wd_status gcr_lanes(wd_mg *mg, int l, int lanes, double tol, int max_iter, int *its)
{
    const wd_mg_dev_ops *d = mg->dev;
    mg_lanes *bt = &mg->lanes;
    mg_level *v = &mg->lv[l];
    const int h = v->half_volume, n = v->dop.layout.ncomp, nk = mg->set.gcr_nkrylov;
    const int whole = lanes * v->dop.layout.volume;
    const size_t S = bt->stride;
    float *x = bt->ex, *r = bt->r;
    const float *b = bt->eb;
    double dots[2 * WD_MG_DEV_LANES * WD_MG_DEV_MULTI];
    double bnorm[WD_MG_DEV_LANES], r2[WD_MG_DEV_LANES], q2[WD_MG_DEV_LANES],
        qo2[WD_MG_DEV_LANES], rq[WD_MG_DEV_LANES][2];
    wd_complex a[WD_MG_DEV_LANES * WD_MG_DEV_MULTI];
    int live[WD_MG_DEV_LANES], in[WD_MG_DEV_LANES], part[WD_MG_DEV_LANES],
        kend[WD_MG_DEV_LANES];
    const float *list[WD_MG_DEV_MULTI];
    const float *bs[1] = {b};
    wd_status st = d->lanes_cdot(h, n, lanes, S, 1, bs, b, dots);
    mg->flops += 8.0 * lanes * h * n;
    if (st != WD_OK)
        return st;
    int any = 0;
    for (int j = 0; j < lanes; ++j) {
        bnorm[j] = sqrt(dots[2 * j]);
        r2[j] = dots[2 * j];
        its[j] = 0;
        live[j] = r2[j] > tol * tol * bnorm[j] * bnorm[j];
        any |= live[j];
    }
    if ((st = d->zero(whole, n, x)) != WD_OK || (st = d->copy(whole, n, r, b)) != WD_OK)
        return st;
    while (any) {
        int k = 0, going = 1;
        for (int j = 0; j < lanes; ++j) {
            in[j] = part[j] = live[j];
            kend[j] = 0;
        }
        for (; k < nk && going; ++k) {
            if ((st = d->copy(whole, n, bt->z[k], r)) != WD_OK ||
                (st = schur_apply_lanes(mg, l, lanes, bt->q[k], bt->z[k])) != WD_OK)
                return st;
            /* <q_i, q_k> (i < k), <r, q_k>, |q_k|^2: gcr's pieces */
            for (int i0 = 0; i0 < k + 2; i0 += WD_MG_DEV_MULTI) {
                const int m = k + 2 - i0 < WD_MG_DEV_MULTI ? k + 2 - i0 : WD_MG_DEV_MULTI;
                for (int i = 0; i < m; ++i)
                    list[i] = i0 + i < k ? bt->q[i0 + i] : i0 + i == k ? r : bt->q[k];
                if ((st = d->lanes_cdot(h, n, lanes, S, m, list, bt->q[k], dots)) != WD_OK)
                    return st;
                mg->flops += 8.0 * m * lanes * h * n;
                for (int j = 0; j < lanes; ++j) {
                    const double *dj = dots + 2 * (size_t)j * m;
                    wd_complex *beta = bt->beta + (size_t)j * nk * nk;
                    const double *qq = bt->qq + (size_t)j * nk;
                    for (int i = 0; in[j] && i < m; ++i) {
                        const int c = i0 + i;
                        if (c < k)
                            beta[(size_t)c * nk + k] =
                                (wd_complex){dj[2 * i] / qq[c], dj[2 * i + 1] / qq[c]};
                        else if (c == k)
                            rq[j][0] = dj[2 * i], rq[j][1] = dj[2 * i + 1];
                        else
                            q2[j] = dj[2 * i];
                    }
                }
            }
            int remeasure = 0;
            for (int j = 0; j < lanes; ++j) {
                if (!in[j])
                    continue;
                const wd_complex *beta = bt->beta + (size_t)j * nk * nk;
                const double *qq = bt->qq + (size_t)j * nk;
                qo2[j] = q2[j];
                for (int i = 0; i < k; ++i) {
                    const wd_complex bb = beta[(size_t)i * nk + k];
                    qo2[j] -= (bb.re * bb.re + bb.im * bb.im) * qq[i];
                }
                remeasure |= k && !(qo2[j] > 1e-3 * q2[j]);
            }
            for (int i0 = 0; i0 < k; i0 += WD_MG_DEV_MULTI) {
                const int m = k - i0 < WD_MG_DEV_MULTI ? k - i0 : WD_MG_DEV_MULTI;
                for (int j = 0; j < lanes; ++j)
                    for (int i = 0; i < m; ++i) {
                        const wd_complex bb = bt->beta[(size_t)j * nk * nk + (size_t)(i0 + i) * nk + k];
                        a[j * m + i] = in[j] ? (wd_complex){-bb.re, -bb.im} : (wd_complex){0, 0};
                    }
                if ((st = d->lanes_caxpy(h, n, lanes, S, m, a, (const float *const *)(bt->q + i0),
                                         bt->q[k])) != WD_OK)
                    return st;
            }
            if (remeasure) {
                /* cancellation: the orthogonalised image measured */
                const float *qs[1] = {bt->q[k]};
                if ((st = d->lanes_cdot(h, n, lanes, S, 1, qs, bt->q[k], dots)) != WD_OK)
                    return st;
                for (int j = 0; j < lanes; ++j)
                    if (in[j] && !(qo2[j] > 1e-3 * q2[j]))
                        qo2[j] = dots[2 * j];
            }
            for (int j = 0; j < lanes; ++j) {
                a[j] = (wd_complex){0, 0};
                if (!in[j])
                    continue;
                if (!isfinite(qo2[j]) || !isfinite(rq[j][0]) || !isfinite(rq[j][1]))
                    return wd_fail(WD_ERR_NAN, "multigrid: GCR on level %d met NaN or Inf after "
                                   "%d iterations (right-hand side %d of %d solved together)",
                                   l, its[j], j, lanes);
                if (!(qo2[j] > 0)) {
                    in[j] = 0;
                    continue;
                }
                /* <q_k, r> = conj(<r, q_k>) */
                wd_complex *alpha = bt->alpha + (size_t)j * nk;
                bt->qq[(size_t)j * nk + k] = qo2[j];
                alpha[k] = (wd_complex){rq[j][0] / qo2[j], -rq[j][1] / qo2[j]};
                a[j] = (wd_complex){-alpha[k].re, -alpha[k].im};
                r2[j] -= (rq[j][0] * rq[j][0] + rq[j][1] * rq[j][1]) / qo2[j];
                kend[j] = k + 1;
                ++its[j];
            }
            const float *qk[1] = {bt->q[k]};
            if ((st = d->lanes_caxpy(h, n, lanes, S, 1, a, qk, r)) != WD_OK)
                return st;
            going = 0;
            for (int j = 0; j < lanes; ++j) {
                in[j] = in[j] && its[j] < max_iter &&
                        r2[j] > tol * tol * bnorm[j] * bnorm[j];
                going |= in[j];
            }
        }
        /* x += sum gamma_j z_j, a lane's gamma zero past its directions */
        for (int j = 0; j < lanes; ++j) {
            wd_complex *gamma = bt->gamma + (size_t)j * nk;
            if (part[j])
                gcr_backsolve(kend[j], bt->alpha + (size_t)j * nk, bt->beta + (size_t)j * nk * nk,
                              nk, gamma);
            for (int i = part[j] ? kend[j] : 0; i < k; ++i)
                gamma[i] = (wd_complex){0, 0};
        }
        for (int i0 = 0; i0 < k; i0 += WD_MG_DEV_MULTI) {
            const int m = k - i0 < WD_MG_DEV_MULTI ? k - i0 : WD_MG_DEV_MULTI;
            for (int j = 0; j < lanes; ++j)
                for (int i = 0; i < m; ++i)
                    a[j * m + i] = bt->gamma[(size_t)j * nk + i0 + i];
            if ((st = d->lanes_caxpy(h, n, lanes, S, m, a, (const float *const *)(bt->z + i0),
                                     x)) != WD_OK)
                return st;
            mg->flops += 8.0 * m * lanes * h * n;
        }
        /* done on the recursive residual, or a restart on the recomputed one */
        any = 0;
        for (int j = 0; j < lanes; ++j) {
            live[j] = part[j] && kend[j] > 0 && r2[j] > tol * tol * bnorm[j] * bnorm[j] &&
                      its[j] < max_iter;
            any |= live[j];
        }
        if (!any)
            break;
        const float *rs[1] = {r};
        if ((st = schur_apply_lanes(mg, l, lanes, r, x)) != WD_OK ||
            (st = d->xmy(whole, n, b, r)) != WD_OK ||
            (st = d->lanes_cdot(h, n, lanes, S, 1, rs, r, dots)) != WD_OK)
            return st;
        for (int j = 0; j < lanes; ++j)
            if (live[j])
                r2[j] = dots[2 * j];
    }
    for (int j = 0; j < lanes; ++j)
        v->iterations += its[j];
    return WD_OK;
}

/* the last level's solves of `lanes` right-hand sides (lanes_ok, mg_lanes
 * allocated): lane j of db to lane j of dx, each as eo_solve solves it;
 * its[j] lane j's GCR iterations */
static wd_status coarse_solve_lanes(wd_mg *mg, int lanes, int *its)
{
    const int L = mg->levels - 1;
    const wd_mg_settings *m = &mg->set;
    mg_lanes *bt = &mg->lanes;
    const size_t S = bt->stride;
    wd_status st = WD_OK;
    for (int j = 0; j < lanes && st == WD_OK; ++j)
        st = eo_source(mg, L, bt->db + j * S, bt->bp + j * S, bt->eb + j * S, bt->ex + j * S);
    if (st == WD_OK)
        st = gcr_lanes(mg, L, lanes, m->coarse_tol, m->coarse_max_iter, its);
    for (int j = 0; j < lanes && st == WD_OK; ++j)
        st = eo_solution(mg, L, bt->ex + j * S, bt->bp + j * S, bt->eb + j * S, bt->dx + j * S);
    prof(mg, PROF_COARSE_BLAS);
    return st;
}

/*
 * The outer flexible GCR(nk) on the fine level, on the backend: A x = b in
 * the outer precision from x = 0 (f->x, f->b), preconditioned by the
 * cycle, to |b - A x| <= tol |b| or max_iter iterations.  As QUDA's GCR:
 * the Krylov space in a lower precision (f->kp, single): from the true
 * residual r, copied to r_k, each direction z_k = K r_k and its image
 * q_k = A z_k (A in that precision) is orthogonalised against the
 * earlier ones (classical Gram-Schmidt, fused: the
 * projections kept in beta), z_k
 * is not touched, and r_k updated; at a restart (nk directions, or r_k
 * fallen by delta since the last true residual, the accuracy of its
 * updates) x += sum gamma_j z_j through the triangular system of the
 * projections, and r = b - A x in the outer precision.  Returns the
 * iterations; *relres the last relative (true) residual.
 */
static int gcr_fine(wd_mg *mg, double tol, int max_iter, int verbose, double *relres,
                    wd_status *st)
{
    wd_mg_fine *f = &mg->fine;
    wd_backend *be = f->be;
    const int nk = f->nk;
    const wd_complex one = {1, 0};
    const double bnorm = sqrt(wd_mg_pair_norm2(be, &f->b));
    mg_level *v = &mg->lv[0];
    wd_complex *beta = v->beta, *alpha = v->alpha, *gamma = v->gamma;
    double *qq = v->qq;
    *relres = 0;
    *st = WD_OK;
    wd_mg_pair_zero(be, &f->x);
    if (bnorm == 0)
        return 0;
    wd_mg_pair_copy(be, &f->r, &f->b);
    /* r_k's updates in single hold to about 1e-7 of the residual they
     * start from (1e-3 in half): a restart before they stop telling */
    const double delta = f->kp >= 4 ? 1e-5 : 1e-2;
    double rnorm = bnorm;
    int it = 0;
    while (rnorm > tol * bnorm && it < max_iter) {
        int k = 0;
        wd_mg_pair_copy(be, &f->rk, &f->r);
        const double stop = fmax(tol * bnorm, delta * rnorm);
        double rk = rnorm;
        for (; k < nk && it < max_iter && rk > stop; ++k, ++it) {
            if ((*st = cycle_fine(mg, &f->z[k], &f->rk)) != WD_OK ||
                (*st = wd_mg_fine_apply_k(f, &f->q[k], &f->z[k])) != WD_OK)
                return it;
            prof(mg, PROF_FINE_APPLY);
            /* classical Gram-Schmidt: every <q_i, q_k> in one pass over
             * q_k a piece, then q_k -= sum beta_ik q_i in one more (q_k
             * read 2 times, not 2 k; its exact <q_k, r_k> and |q_k|^2
             * follow) */
            wd_mg_pair_multi_cdot(be, k, f->q, &f->q[k], f->dots);
            for (int i = 0; i < k; ++i) {
                const wd_complex b = {f->dots[i].re / qq[i], f->dots[i].im / qq[i]};
                beta[(size_t)i * nk + k] = b;
                f->dots[i] = (wd_complex){-b.re, -b.im};
            }
            wd_mg_pair_multi_caxpy(be, k, f->dots, f->q, &f->q[k]);
            /* <q_k, r_k> and |q_k|^2 in one pass a parity */
            double ce[3], co[3];
            wd_blas_cdot_norm2(be, &f->q[k].e, &f->rk.e, ce);
            wd_blas_cdot_norm2(be, &f->q[k].o, &f->rk.o, co);
            const double q2 = ce[2] + co[2];
            if (!isfinite(q2) || !isfinite(ce[0] + co[0]) || !isfinite(ce[1] + co[1])) {
                *st = wd_fail(WD_ERR_NAN, "multigrid: the outer GCR met NaN or Inf after %d "
                              "iterations", it);
                return it;
            }
            if (q2 == 0)
                break;
            qq[k] = q2;
            alpha[k] = (wd_complex){(ce[0] + co[0]) / q2, (ce[1] + co[1]) / q2};
            const wd_complex ma = {-alpha[k].re, -alpha[k].im};
            const double r2 = wd_blas_caxpy_norm2(be, ma, &f->q[k].e, &f->rk.e) +
                              wd_blas_caxpy_norm2(be, ma, &f->q[k].o, &f->rk.o);
            rk = sqrt(r2);
            prof(mg, PROF_ORTH);
            if (verbose)
                fprintf(stderr, "wdirac multigrid: outer iteration %d: residual %.3e\n", it + 1,
                        rk / bnorm);
        }
        /* x += sum gamma_j z_j (summed in the Krylov precision, added in
         * the outer one through r, which is recomputed next); restart, or
         * confirm convergence, on the true residual */
        gcr_backsolve(k, alpha, beta, nk, gamma);
        wd_mg_pair_zero(be, &f->xk);
        wd_mg_pair_multi_caxpy(be, k, gamma, f->z, &f->xk);
        wd_mg_pair_copy(be, &f->r, &f->xk);
        wd_mg_pair_caxpy(be, one, &f->r, &f->x);
        if (verbose)
            fprintf(stderr, "wdirac multigrid: restart after %d directions\n", k);
        if ((*st = wd_mg_fine_apply(f, &f->r, &f->x)) != WD_OK)
            return it;
        wd_mg_pair_ax(be, -1, &f->r);
        wd_mg_pair_caxpy(be, one, &f->b, &f->r);
        rnorm = sqrt(wd_mg_pair_norm2(be, &f->r));
        prof(mg, PROF_RESTART);
        if (k == 0)
            break;
    }
    if (be->error != WD_OK)
        *st = be->error;
    *relres = rnorm / bnorm;
    return it;
}

/* res[i] = <x[i], y>, and y += sum_i a[i] x[i], for k single-parity
 * fields x[i], in pieces of the backend's multi operations */
static void field_multi_cdot(wd_backend *be, int k, const wd_field *x, const wd_field *y,
                             wd_complex *res)
{
    for (int i0 = 0; i0 < k; i0 += WD_BLAS_MULTI) {
        const int m = k - i0 < WD_BLAS_MULTI ? k - i0 : WD_BLAS_MULTI;
        const wd_field *f[WD_BLAS_MULTI];
        double dd[2 * WD_BLAS_MULTI];
        for (int i = 0; i < m; ++i)
            f[i] = &x[i0 + i];
        wd_blas_multi_cdot(be, m, f, y, dd);
        for (int i = 0; i < m; ++i)
            res[i0 + i] = (wd_complex){dd[2 * i], dd[2 * i + 1]};
    }
}

static void field_multi_caxpy(wd_backend *be, int k, const wd_complex *a, const wd_field *x,
                              wd_field *y)
{
    for (int i0 = 0; i0 < k; i0 += WD_BLAS_MULTI) {
        const int m = k - i0 < WD_BLAS_MULTI ? k - i0 : WD_BLAS_MULTI;
        const wd_field *f[WD_BLAS_MULTI];
        for (int i = 0; i < m; ++i)
            f[i] = &x[i0 + i];
        wd_blas_multi_caxpy(be, m, a + i0, f, y);
    }
}

/*
 * outer_eo: the outer flexible GCR(nk) on the Schur system Mhat x_e = b'_e
 * (the form of the smoother's operator; b'_e from the full b in the outer
 * precision), as gcr_fine on single-parity fields: the directions and
 * images in the Krylov precision with Mhat in it, the restarts' x_e and
 * residual b'_e - Mhat x_e in the outer one.  With x_o reconstructed, the
 * full residual b - A x is (Wilson, asymmetric form) the Schur one on the
 * even sites and 0 on the odd, or (symmetric form) A_ee times it; so the
 * GCR first stops at |b'_e - Mhat x_e| <= tol |b|, then measures b - A x
 * in the outer precision and, while that is above tol |b| (rounding in the
 * reconstruction, A_ee), lowers the Schur target by the factor missed,
 * with a margin of 2, and iterates on (at most EO_ROUNDS more times), the
 * full residual measured at each of those rounds' restarts: done as soon
 * as it meets tol; where a restart gains less than a tenth on the Schur
 * residual (the outer precision's floor) or the rounds run out,
 * at_floor = 1 and x goes to the solver's float64 check and refinement,
 * as a Krylov Schur solve's does (the full residual in the outer precision
 * is itself rounded).
 *
 * A column (mg_col) is one right-hand side's GCR: its fields (column 0 the
 * fine level's own, f->b, f->x, f->xe, ...; solve_many's others made on
 * first use and kept), coefficients, and its place in the loops above
 * (phase), so that several columns go in lock step (run_cols), each with
 * its own iterations, restarts, rounds and stop: col_start, then col_next
 * runs a column's control up to its next direction (1: its cycle wanted
 * on rke for direction k) or its end (0), col_step takes direction k's
 * cycle output ze[k] into the GCR.  relres is the full system's
 * |b - A x| / |b| in the outer precision; st WD_OK or the column's
 * failure (msg its message).
 */
enum { EO_ROUNDS = 3 };
enum { PH_CYCLE, PH_INNER, PH_RESTART, PH_ROUND, PH_DONE };

typedef struct mg_col {
    wd_mg_pair *b, *x;                          /* outer precision */
    wd_field *xe, *bhat, *re, *rke, *ue, *ze, *qe;
    wd_complex *alpha, *beta, *gamma, *dots;
    double *qq;
    /* a column's own fields and coefficients (own) */
    int own;
    wd_mg_pair own_b, own_x;
    wd_field own_xe, own_bhat, own_re, own_rke, own_ue;
    int phase, it, k, round, done, stalled, at_floor;
    double bnorm, target, rnorm, full, before, stop, rk, relres;
    long lvits[WD_MG_MAX_LEVELS];               /* smoother steps, coarse iterations */
    wd_status st;
    char msg[512];
} mg_col;

/* column c bound to the fine level's own fields */
static void col_bind(wd_mg *mg, mg_col *c)
{
    wd_mg_fine *f = &mg->fine;
    mg_level *v = &mg->lv[0];
    memset(c, 0, sizeof *c);
    c->b = &f->b;
    c->x = &f->x;
    c->xe = &f->xe;
    c->bhat = &f->bhat;
    c->re = &f->re;
    c->rke = &f->rke;
    c->ue = &f->ue;
    c->ze = f->ze;
    c->qe = f->qe;
    c->alpha = v->alpha;
    c->beta = v->beta;
    c->gamma = v->gamma;
    c->qq = v->qq;
    c->dots = f->dots;
}

static void col_free(wd_mg *mg, mg_col *c)
{
    wd_backend *be = mg->fine.be;
    if (!c->own)
        return;
    wd_field *fields[] = {&c->own_b.e, &c->own_b.o, &c->own_x.e, &c->own_x.o, &c->own_xe,
                          &c->own_bhat, &c->own_re, &c->own_rke, &c->own_ue};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; ++i)
        wd_field_destroy(be, fields[i]);
    for (int k = 0; k < mg->fine.nk; ++k) {
        if (c->ze)
            wd_field_destroy(be, &c->ze[k]);
        if (c->qe)
            wd_field_destroy(be, &c->qe[k]);
    }
    free(c->ze);
    free(c->qe);
    free(c->alpha);
    free(c->beta);
    free(c->gamma);
    free(c->dots);
    free(c->qq);
    memset(c, 0, sizeof *c);
}

/* the columns of solve_many, their own fields (not column 0's) */
static void cols_free(wd_mg *mg)
{
    for (int i = 1; mg->cols && i < mg->ncols; ++i)
        col_free(mg, &mg->cols[i]);
    free(mg->cols);
    mg->cols = NULL;
    mg->ncols = 0;
}

/* column c's own fields (the fine level's precisions and nk) */
static wd_status col_alloc(wd_mg *mg, mg_col *c)
{
    wd_mg_fine *f = &mg->fine;
    wd_backend *be = f->be;
    const int nk = f->nk, op = f->outer.precision;
    memset(c, 0, sizeof *c);
    c->own = 1;
    c->ze = calloc(nk, sizeof *c->ze);
    c->qe = calloc(nk, sizeof *c->qe);
    c->alpha = calloc(nk, sizeof *c->alpha);
    c->beta = calloc((size_t)nk * nk, sizeof *c->beta);
    c->gamma = calloc(nk, sizeof *c->gamma);
    c->dots = calloc(nk, sizeof *c->dots);
    c->qq = calloc(nk, sizeof *c->qq);
    wd_status st = c->ze && c->qe && c->alpha && c->beta && c->gamma && c->dots && c->qq
                       ? WD_OK
                       : wd_fail(WD_ERR_NOMEM, "multigrid: cannot allocate a column's GCR "
                                 "coefficients");
    wd_field *outer[] = {&c->own_b.e, &c->own_b.o, &c->own_x.e, &c->own_x.o, &c->own_xe,
                         &c->own_bhat, &c->own_re};
    for (size_t i = 0; i < sizeof outer / sizeof *outer && st == WD_OK; ++i)
        st = wd_field_create(be, outer[i], op);
    if (st == WD_OK && (st = wd_field_create(be, &c->own_rke, f->kp)) == WD_OK)
        st = wd_field_create(be, &c->own_ue, f->kp);
    for (int k = 0; k < nk && st == WD_OK; ++k)
        if ((st = wd_field_create(be, &c->ze[k], f->kp)) == WD_OK)
            st = wd_field_create(be, &c->qe[k], f->kp);
    if (st != WD_OK) {
        col_free(mg, c);
        return st;
    }
    c->b = &c->own_b;
    c->x = &c->own_x;
    c->xe = &c->own_xe;
    c->bhat = &c->own_bhat;
    c->re = &c->own_re;
    c->rke = &c->own_rke;
    c->ue = &c->own_ue;
    return WD_OK;
}

/* column c's x = (x_e, x_o reconstructed) and r = b - A x in the outer
 * precision (f->r); returns |r| */
static double eo_full_residual(wd_mg *mg, mg_col *c, wd_status *st)
{
    wd_mg_fine *f = &mg->fine;
    wd_backend *be = f->be;
    wd_blas_copy(be, &c->x->e, c->xe);
    if ((*st = wd_mg_fine_eo_odd(f, c->x, c->b)) != WD_OK ||
        (*st = wd_mg_fine_apply(f, &f->r, c->x)) != WD_OK)
        return 0;
    wd_mg_pair_ax(be, -1, &f->r);
    wd_mg_pair_caxpy(be, (wd_complex){1, 0}, c->b, &f->r);
    return sqrt(wd_mg_pair_norm2(be, &f->r));
}

/* column c ends with st (its message kept) */
static void col_fail(mg_col *c, wd_status st)
{
    c->st = st;
    c->relres = 0;
    c->at_floor = 0;
    c->phase = PH_DONE;
    snprintf(c->msg, sizeof c->msg, "%s", wd_last_error());
}

/* column c from x = 0 on its source c->b (scaled) */
static void col_start(wd_mg *mg, mg_col *c, double tol)
{
    wd_mg_fine *f = &mg->fine;
    wd_backend *be = f->be;
    c->st = WD_OK;
    c->msg[0] = 0;
    c->it = c->round = c->done = c->stalled = c->at_floor = 0;
    c->relres = 0;
    memset(c->lvits, 0, sizeof c->lvits);
    c->phase = PH_DONE;
    c->bnorm = sqrt(wd_mg_pair_norm2(be, c->b));
    wd_mg_pair_zero(be, c->x);
    wd_blas_zero(be, c->xe);
    if (c->bnorm == 0)
        return;
    wd_status st = wd_mg_fine_eo_source(f, c->bhat, c->b);
    if (st != WD_OK) {
        col_fail(c, st);
        return;
    }
    wd_blas_copy(be, c->re, c->bhat);
    c->target = tol * c->bnorm;
    c->rnorm = sqrt(wd_blas_norm2(be, c->re));
    c->full = c->bnorm;
    c->phase = PH_CYCLE;
}

static int col_next(wd_mg *mg, mg_col *c, double tol, int max_iter, int verbose)
{
    wd_mg_fine *f = &mg->fine;
    wd_backend *be = f->be;
    const int nk = f->nk;
    const double delta = f->kp >= 4 ? 1e-5 : 1e-2;
    const wd_complex one = {1, 0};
    wd_status st = WD_OK;
    for (;;) {
        switch (c->phase) {
        case PH_CYCLE:  /* a restart cycle, while the Schur residual is above the target */
            if (!(c->rnorm > c->target && c->it < max_iter)) {
                c->phase = PH_ROUND;
                break;
            }
            c->k = 0;
            c->before = c->rnorm;
            wd_blas_copy(be, c->rke, c->re);
            c->stop = fmax(c->target, delta * c->rnorm);
            c->rk = c->rnorm;
            c->phase = PH_INNER;
            break;
        case PH_INNER:
            if (c->k < nk && c->it < max_iter && c->rk > c->stop)
                return 1;
            c->phase = PH_RESTART;
            break;
        case PH_RESTART:
            gcr_backsolve(c->k, c->alpha, c->beta, nk, c->gamma);
            wd_blas_zero(be, &f->xke);
            field_multi_caxpy(be, c->k, c->gamma, c->ze, &f->xke);
            wd_blas_copy(be, c->re, &f->xke);
            wd_blas_caxpy(be, one, c->re, c->xe);
            if (verbose)
                fprintf(stderr, "wdirac multigrid: restart after %d directions\n", c->k);
            if ((st = wd_mg_fine_eo_apply(f, 1, c->re, c->xe)) != WD_OK) {
                col_fail(c, st);
                return 0;
            }
            wd_blas_ax(be, -1, c->re);
            wd_blas_caxpy(be, one, c->bhat, c->re);
            c->rnorm = sqrt(wd_blas_norm2(be, c->re));
            prof(mg, PROF_RESTART);
            c->phase = PH_CYCLE;
            if (c->k == 0) {
                c->phase = PH_ROUND;
            } else if (c->round > 0) {
                /* a later round (the Schur target below tol |b|): the full
                 * residual at every restart, and a restart that gains less
                 * than a tenth has met the outer precision's floor */
                c->full = eo_full_residual(mg, c, &st);
                prof(mg, PROF_RESTART);
                if (st != WD_OK) {
                    col_fail(c, st);
                    return 0;
                }
                if ((c->done = !(c->full > tol * c->bnorm)) ||
                    (c->stalled = c->rnorm > 0.9 * c->before))
                    c->phase = PH_ROUND;
            }
            break;
        case PH_ROUND:  /* a round's end */
            if (!c->done) {
                c->full = eo_full_residual(mg, c, &st);
                prof(mg, PROF_RESTART);
                if (st != WD_OK) {
                    col_fail(c, st);
                    return 0;
                }
            }
            if (verbose)
                fprintf(stderr, "wdirac multigrid: Schur residual %.3e, full residual %.3e\n",
                        c->rnorm / c->bnorm, c->full / c->bnorm);
            if (!(c->full > tol * c->bnorm) || c->stalled || c->it >= max_iter ||
                !(c->rnorm > 0) || !isfinite(c->full) || c->round == EO_ROUNDS) {
                c->st = be->error;
                if (c->st != WD_OK)
                    snprintf(c->msg, sizeof c->msg, "%s", wd_last_error());
                c->at_floor = c->full > tol * c->bnorm && c->it < max_iter && isfinite(c->full);
                if (c->at_floor && verbose)
                    fprintf(stderr, "wdirac multigrid: the Schur residual %.3e met the outer "
                            "precision's floor with the full residual %.3e above tol: x to the "
                            "solver's float64 check and refinement\n", c->rnorm / c->bnorm,
                            c->full / c->bnorm);
                c->relres = c->full / c->bnorm;
                c->phase = PH_DONE;
                return 0;
            }
            c->target = fmin(c->target, c->rnorm) * 0.5 * tol * c->bnorm / c->full;
            ++c->round;
            c->phase = PH_CYCLE;
            break;
        default:
            return 0;
        }
    }
}

/* column c's direction k from its cycle's output ze[k]: the image, its
 * orthogonalisation, the residual's update */
static void col_step(wd_mg *mg, mg_col *c, int verbose)
{
    wd_mg_fine *f = &mg->fine;
    wd_backend *be = f->be;
    const int nk = f->nk, k = c->k;
    wd_status st = wd_mg_fine_eo_apply(f, 0, &c->qe[k], &c->ze[k]);
    if (st != WD_OK) {
        col_fail(c, st);
        return;
    }
    prof(mg, PROF_FINE_APPLY);
    field_multi_cdot(be, k, c->qe, &c->qe[k], c->dots);
    for (int i = 0; i < k; ++i) {
        const wd_complex b = {c->dots[i].re / c->qq[i], c->dots[i].im / c->qq[i]};
        c->beta[(size_t)i * nk + k] = b;
        c->dots[i] = (wd_complex){-b.re, -b.im};
    }
    field_multi_caxpy(be, k, c->dots, c->qe, &c->qe[k]);
    double d[3];
    wd_blas_cdot_norm2(be, &c->qe[k], c->rke, d);
    if (!isfinite(d[2]) || !isfinite(d[0]) || !isfinite(d[1])) {
        col_fail(c, wd_fail(WD_ERR_NAN, "multigrid: the outer GCR met NaN or Inf after %d "
                            "iterations", c->it));
        return;
    }
    if (d[2] == 0) {
        c->phase = PH_RESTART;
        return;
    }
    c->qq[k] = d[2];
    c->alpha[k] = (wd_complex){d[0] / d[2], d[1] / d[2]};
    const wd_complex ma = {-c->alpha[k].re, -c->alpha[k].im};
    c->rk = sqrt(wd_blas_caxpy_norm2(be, ma, &c->qe[k], c->rke));
    prof(mg, PROF_ORTH);
    if (verbose)
        fprintf(stderr, "wdirac multigrid: outer iteration %d: Schur residual %.3e\n", c->it + 1,
                c->rk / c->bnorm);
    ++c->k;
    ++c->it;
}

static wd_status cycle_eo_pre(wd_mg *mg, mg_col *c, wd_field *e, const wd_field *r, float *db)
{
    wd_mg_fine *f = &mg->fine;
    wd_backend *be = f->be;
    mg_level *v = &mg->lv[0];
    const wd_mg_settings *m = &mg->set;
    const wd_complex one = {1, 0};
    wd_status st;
    const wd_field *res = r;
    if (m->pre_smooth) {
        if ((st = wd_mg_fine_smooth_eo(f, e, r, m->pre_smooth)) != WD_OK)
            return st;
        prof(mg, PROF_SMOOTH);
        if ((st = wd_mg_fine_eo_apply(f, 0, c->ue, e)) != WD_OK)
            return st;
        wd_blas_ax(be, -1, c->ue);
        wd_blas_caxpy(be, one, r, c->ue);
        res = c->ue;
        v->iterations += m->pre_smooth;
        c->lvits[0] += m->pre_smooth;
        prof(mg, PROF_FINE_APPLY);
    }
    if (f->op.ainv && f->op.symmetric) {
        if ((st = wd_dslash_clover(be, f->krylov.cl_site, &f->we, NULL, &f->krylov.a, res, NULL,
                                   0, 0)) != WD_OK)
            return st;
        res = &f->we;
    }
    /* the transfers of the even sites alone (dte), or of (s_e, 0) and
     * back with the odd part dropped (zo zero, tko scratch) */
    const double t = now_s();
    const wd_mg_dev_transfer *dt = v->dte_ok ? &v->dte : &v->dt;
    if ((st = wd_download_pair(be, mg->stage, res, v->dte_ok ? NULL : &f->zo, mg->on_device,
                               NULL)) != WD_OK ||
        (st = mg->dev->restrict_(dt, db, mg->stage)) != WD_OK)
        return st;
    prof(mg, PROF_TRANSFER);
    mg->flops += 16.0 * dt->fine_volume * dt->n_fine * dt->nvec;
    mg->t_coarse += now_s() - t;
    return WD_OK;
}

static wd_status cycle_eo_post(wd_mg *mg, mg_col *c, wd_field *e, const wd_field *r,
                               const float *dx)
{
    wd_mg_fine *f = &mg->fine;
    wd_backend *be = f->be;
    mg_level *v = &mg->lv[0];
    const wd_mg_settings *m = &mg->set;
    const wd_complex one = {1, 0};
    wd_status st;
    const double t = now_s();
    const wd_mg_dev_transfer *dt = v->dte_ok ? &v->dte : &v->dt;
    wd_field *into = m->pre_smooth ? c->ue : e;
    if ((st = mg->dev->prolong(dt, mg->stage, dx)) != WD_OK ||
        (st = wd_upload_pair(be, into, v->dte_ok ? NULL : &f->tko, mg->stage, mg->on_device,
                             NULL)) != WD_OK)
        return st;
    if (m->pre_smooth)
        wd_blas_caxpy(be, one, c->ue, e);
    prof(mg, PROF_TRANSFER);
    mg->t_coarse += now_s() - t;
    if (m->post_smooth) {
        /* u = r - Mhat e, then e += the smoother's correction of u */
        if ((st = wd_mg_fine_eo_apply(f, 0, c->ue, e)) != WD_OK)
            return st;
        wd_blas_ax(be, -1, c->ue);
        wd_blas_caxpy(be, one, r, c->ue);
        prof(mg, PROF_FINE_APPLY);
        if ((st = wd_mg_fine_smooth_eo(f, c->ue, c->ue, m->post_smooth)) != WD_OK)
            return st;
        wd_blas_caxpy(be, one, c->ue, e);
        v->iterations += m->post_smooth;
        c->lvits[0] += m->post_smooth;
        prof(mg, PROF_SMOOTH);
    }
    return be->error;
}

/*
 * The n columns' outer GCRs in lock step: each pass gives every column
 * that wants a direction its cycle, the next level's solves of all of
 * them in one batch (coarse_solve_lanes) where lanes_ok, the batch's
 * fields fit and more than one wants it, else one after another
 * (coarse_solve on the level's own fields), then each column's GCR step.  A column's cycle that fails with
 * WD_ERR_NAN ends that column (a batch's: every column in it); any other
 * failure is returned (the solve stops).
 */
static wd_status run_cols(wd_mg *mg, mg_col *cols, int n, double tol, int max_iter, int verbose)
{
    int need[WD_MG_DEV_LANES], idx[WD_MG_DEV_LANES], its[WD_MG_DEV_LANES];
    mg_level *c1 = &mg->lv[1];
    /* the batch's fields where they fit (else the solves one after another) */
    int batched = n > 1 && lanes_ok(mg);
    wd_status st = batched ? agreed(mg, lanes_alloc(mg, n)) : WD_OK;
    if (st != WD_OK) {
        if (mg->set.verbosity >= 1 && (mg->ranks == 1 || wd_comm_rank() == 0))
            fprintf(stderr, "wdirac multigrid: the last level's solves one after another (the "
                    "batch's fields do not fit: %s)\n", wd_last_error());
        batched = 0;
        st = WD_OK;
    }
    for (int i = 0; i < n; ++i) {
        col_start(mg, &cols[i], tol);
        need[i] = col_next(mg, &cols[i], tol, max_iter, verbose);
    }
    for (;;) {
        int m = 0;
        for (int i = 0; i < n; ++i)
            if (need[i])
                idx[m++] = i;
        if (!m)
            return WD_OK;
        if (batched && m > 1) {
            const size_t S = mg->lanes.stride;
            for (int j = 0; j < m && st == WD_OK; ++j) {
                mg_col *c = &cols[idx[j]];
                st = cycle_eo_pre(mg, c, &c->ze[c->k], c->rke, mg->lanes.db + j * S);
            }
            const double t = now_s();
            if (st == WD_OK)
                st = coarse_solve_lanes(mg, m, its);
            mg->t_coarse += now_s() - t;
            if (st == WD_ERR_NAN) {
                for (int j = 0; j < m; ++j) {
                    col_fail(&cols[idx[j]], st);
                    need[idx[j]] = 0;
                }
                st = WD_OK;
                continue;
            }
            for (int j = 0; j < m && st == WD_OK; ++j) {
                mg_col *c = &cols[idx[j]];
                c->lvits[1] += its[j];
                st = cycle_eo_post(mg, c, &c->ze[c->k], c->rke, mg->lanes.dx + j * S);
            }
            if (st != WD_OK)
                return st;
        } else {
            for (int j = 0; j < m; ++j) {
                mg_col *c = &cols[idx[j]];
                long before[WD_MG_MAX_LEVELS];
                for (int l = 1; l < mg->levels; ++l)
                    before[l] = mg->lv[l].iterations;
                st = cycle_eo_pre(mg, c, &c->ze[c->k], c->rke, c1->db);
                const double t = now_s();
                if (st == WD_OK)
                    st = coarse_solve(mg, 0);
                mg->t_coarse += now_s() - t;
                if (st == WD_OK)
                    st = cycle_eo_post(mg, c, &c->ze[c->k], c->rke, c1->dx);
                for (int l = 1; l < mg->levels; ++l)
                    c->lvits[l] += mg->lv[l].iterations - before[l];
                if (st == WD_ERR_NAN) {
                    col_fail(c, st);
                    need[idx[j]] = 0;
                    st = WD_OK;
                } else if (st != WD_OK) {
                    return st;
                }
            }
        }
        for (int j = 0; j < m; ++j) {
            mg_col *c = &cols[idx[j]];
            if (!need[idx[j]])
                continue;
            col_step(mg, c, verbose);
            need[idx[j]] = c->phase != PH_DONE && col_next(mg, c, tol, max_iter, verbose);
        }
    }
}

/* ---- the setup ---- */

/* A coarse level's null vectors relaxed on the backend in groups (lanes):
 * every field of `cap` lanes, lane r of a field at r stride floats (a
 * field of the level with its ghost sites), the level's operator with
 * 16-bit multi-fields where its links are half (apply_multi) */
typedef struct relax_lanes {
    int cap;
    size_t stride;
    float *x, *r, *z, *p, *q;
    wd_mg_dev_level op;
    void *hmin, *hmout;
    float *hmin_norm, *hmout_norm;
    float *buf;                  /* host: one lane's packed field */
} relax_lanes;

static void relax_free(const wd_mg_dev_ops *d, relax_lanes *R)
{
    float *f[] = {R->x, R->r, R->z, R->p, R->q};
    for (size_t i = 0; i < sizeof f / sizeof *f; ++i)
        d->free(f[i]);
    d->free(R->hmin);
    d->free(R->hmout);
    d->free(R->hmin_norm);
    d->free(R->hmout_norm);
    free(R->buf);
    memset(R, 0, sizeof *R);
}

/* the group's bytes on the backend */
static size_t relax_bytes(const mg_level *v, int cap)
{
    const size_t sites = (size_t)cap * (v->op.volume + v->op.halo.nghost);
    const size_t n = (size_t)v->op.n;
    return 5 * sites * 2 * n * sizeof(float) +
           (v->dop.layout.precision == 2 ? 2 * sites * (2 * n * sizeof(short) + sizeof(float)) : 0);
}

static wd_status relax_alloc(wd_mg *mg, int l, relax_lanes *R, int cap)
{
    const wd_mg_dev_ops *d = mg->dev;
    const mg_level *v = &mg->lv[l];
    const size_t sites = v->op.volume + v->op.halo.nghost, n = (size_t)v->op.n;
    memset(R, 0, sizeof *R);
    R->cap = cap;
    R->stride = sites * 2 * n;
    const size_t bytes = (size_t)cap * R->stride * sizeof(float);
    float **f[] = {&R->x, &R->r, &R->z, &R->p, &R->q};
    wd_status st = WD_OK;
    for (size_t i = 0; i < sizeof f / sizeof *f && st == WD_OK; ++i)
        if ((st = d->alloc((void **)f[i], bytes, "the setup's coarse fields")) == WD_OK)
            st = d->zero(cap * (int)sites, (int)n, *f[i]);
    R->op = v->dop;
    if (st == WD_OK && v->dop.layout.precision == 2) {
        const size_t hbytes = (size_t)cap * sites * 2 * n * sizeof(short);
        const size_t nbytes = (size_t)cap * sites * sizeof(float);
        if ((st = d->alloc(&R->hmin, hbytes, "the setup's 16-bit fields")) == WD_OK &&
            (st = d->alloc(&R->hmout, hbytes, "the setup's 16-bit fields")) == WD_OK &&
            (st = d->alloc((void **)&R->hmin_norm, nbytes, "the setup's norms")) == WD_OK)
            st = d->alloc((void **)&R->hmout_norm, nbytes, "the setup's norms");
        R->op.hmin = R->hmin;
        R->op.hmout = R->hmout;
        R->op.hmin_norm = R->hmin_norm;
        R->op.hmout_norm = R->hmout_norm;
        R->op.hmulti = cap;
    }
    if (st == WD_OK && !(R->buf = malloc(v->op.volume * 2 * n * sizeof *R->buf)))
        st = wd_fail(WD_ERR_NOMEM, "multigrid level %d: the null vectors' host copy", l);
    if (st != WD_OK)
        relax_free(d, R);
    return st;
}

/* out = A in on the group's nb lanes (each lane's ghosts first) */
static wd_status relax_apply(wd_mg *mg, int l, relax_lanes *R, int nb, float *out, float *in)
{
    const mg_level *v = &mg->lv[l];
    wd_status st = WD_OK;
    for (int r = 0; r < nb && st == WD_OK && v->dop.nghost; ++r)
        st = dev_exchange(mg, l, in + r * R->stride);
    mg->flops += apply_flops(&v->op) * v->op.volume * nb;
    return st == WD_OK ? mg->dev->apply_multi(&R->op, nb, out, in) : st;
}

/* res[r] = |f_r|^2 on the group's nb lanes, summed over the ranks */
static wd_status relax_norms(wd_mg *mg, int l, const relax_lanes *R, int nb, const float *f,
                             double *res)
{
    const mg_level *v = &mg->lv[l];
    double dots[2 * WD_MG_DEV_LANES];
    const float *x[1] = {f};
    wd_status st = mg->dev->lanes_cdot(v->dop.layout.volume, v->dop.layout.ncomp, nb, R->stride,
                                       1, x, f, dots);
    if (st == WD_OK && mg->ranks > 1)
        st = wd_comm_sum(dots, 2 * nb);
    for (int r = 0; r < nb; ++r)
        res[r] = dots[2 * r];
    return st;
}

/* A coarse level l's (l > 0) null vectors v[0 .. nb) (host, complex
 * double) relaxed on the backend together: for each, CG on the normal
 * equations of A v = 0 (A^dag = g5 A g5) from v, stopped at |A^dag A v|
 * <= tol |A^dag A v_0| or max_iter, in single precision with the level's
 * operator there (dev_level) through the multi-RHS coarse kernels
 * (apply_multi) and the lanes' BLAS; each comes back rounded to float.  A
 * stopped vector takes zero coefficients: every vector gets the bits of
 * its relaxation alone, however many share the group (apply_multi and the
 * lanes_ operations give each lane the bits of the one-field operation).
 * res[r] = |A^dag A v| / |A^dag A v_0| of v[r]'s recursion, iters[r] its
 * iterations. */
static wd_status dev_relax(wd_mg *mg, int l, relax_lanes *R, double complex *const *v, int nb,
                           double tol, int max_iter, double *res, int *iters)
{
    const wd_mg_dev_ops *d = mg->dev;
    const mg_level *lv = &mg->lv[l];
    const int vol = lv->dop.layout.volume, n = lv->dop.layout.ncomp;
    const int all = nb * (vol + lv->dop.nghost);   /* the group's sites, ghosts too */
    const size_t bytes = (size_t)vol * 2 * n * sizeof(float);
    float *buf = R->buf;
    wd_status st = WD_OK;
    for (int r = 0; r < nb && st == WD_OK; ++r) {
#pragma omp parallel for schedule(static) if ((size_t)vol * n >= WD_MG_PARALLEL_MIN)
        for (long s = 0; s < vol; ++s)
            for (int i = 0; i < n; ++i) {
                buf[(size_t)s * 2 * n + i] = (float)creal(v[r][(size_t)s * n + i]);
                buf[(size_t)s * 2 * n + n + i] = (float)cimag(v[r][(size_t)s * n + i]);
            }
        st = d->h2d(R->x + r * R->stride, buf, bytes);
    }
    double zz[WD_MG_DEV_LANES], zz0[WD_MG_DEV_LANES], nrm[WD_MG_DEV_LANES];
    wd_complex a[WD_MG_DEV_LANES];
    int active[WD_MG_DEV_LANES], any = 0;
    const float *one[1];
    /* r = -A x; z = A^dag r = g5 A g5 r; p = z */
    if (st == WD_OK && (st = relax_apply(mg, l, R, nb, R->r, R->x)) == WD_OK)
        st = d->scale(all, n, -1.0f, R->r);
    if (st == WD_OK && (st = d->copy(all, n, R->q, R->r)) == WD_OK &&
        (st = d->g5(all, n, R->q)) == WD_OK && (st = relax_apply(mg, l, R, nb, R->z, R->q)) == WD_OK &&
        (st = d->g5(all, n, R->z)) == WD_OK && (st = d->copy(all, n, R->p, R->z)) == WD_OK)
        st = relax_norms(mg, l, R, nb, R->z, zz);
    for (int r = 0; r < nb; ++r) {
        zz0[r] = zz[r];
        iters[r] = 0;
        active[r] = st == WD_OK && max_iter > 0 && zz[r] > 0;
        any |= active[r];
    }
    while (st == WD_OK && any) {
        if ((st = relax_apply(mg, l, R, nb, R->q, R->p)) != WD_OK ||
            (st = relax_norms(mg, l, R, nb, R->q, nrm)) != WD_OK)
            break;
        for (int r = 0; r < nb && st == WD_OK; ++r) {
            if (active[r] && (!isfinite(nrm[r]) || !isfinite(zz[r])))
                st = wd_fail(WD_ERR_NAN, "multigrid level %d: a null vector's relaxation met %g "
                             "(|A p|^2) at iteration %d", l, nrm[r], iters[r]);
            /* |A p| = 0: p is in A's null space, the vector relaxed */
            if (active[r] && nrm[r] == 0)
                active[r] = 0;
            a[r] = (wd_complex){active[r] ? zz[r] / nrm[r] : 0, 0};
        }
        if (st != WD_OK)
            break;
        one[0] = R->p;
        if ((st = d->lanes_caxpy(vol, n, nb, R->stride, 1, a, one, R->x)) != WD_OK)
            break;
        for (int r = 0; r < nb; ++r)
            a[r].re = -a[r].re;
        one[0] = R->q;
        if ((st = d->lanes_caxpy(vol, n, nb, R->stride, 1, a, one, R->r)) != WD_OK ||
            (st = d->copy(all, n, R->q, R->r)) != WD_OK || (st = d->g5(all, n, R->q)) != WD_OK ||
            (st = relax_apply(mg, l, R, nb, R->z, R->q)) != WD_OK ||
            (st = d->g5(all, n, R->z)) != WD_OK ||
            (st = relax_norms(mg, l, R, nb, R->z, nrm)) != WD_OK)
            break;
        /* p = z + beta p, as z += beta p and the two swapped */
        for (int r = 0; r < nb; ++r) {
            a[r] = (wd_complex){active[r] ? nrm[r] / zz[r] : 0, 0};
            if (active[r])
                zz[r] = nrm[r];
        }
        one[0] = R->p;
        if ((st = d->lanes_caxpy(vol, n, nb, R->stride, 1, a, one, R->z)) != WD_OK)
            break;
        float *t = R->p;
        R->p = R->z;
        R->z = t;
        any = 0;
        for (int r = 0; r < nb; ++r) {
            if (active[r]) {
                iters[r]++;
                active[r] = iters[r] < max_iter && zz[r] > tol * tol * zz0[r] && zz[r] > 0;
            }
            any |= active[r];
        }
    }
    for (int r = 0; r < nb && st == WD_OK; ++r) {
        if ((st = d->d2h(buf, R->x + r * R->stride, bytes)) != WD_OK)
            break;
#pragma omp parallel for schedule(static) if ((size_t)vol * n >= WD_MG_PARALLEL_MIN)
        for (long s = 0; s < vol; ++s)
            for (int i = 0; i < n; ++i)
                v[r][(size_t)s * n + i] = CMPLX(buf[(size_t)s * 2 * n + i],
                                                buf[(size_t)s * 2 * n + n + i]);
        res[r] = zz0[r] > 0 ? sqrt(zz[r] / zz0[r]) : 0;
    }
    return st;
}

/* max |P^dag P - 1| over aggregates and chiralities (this rank's) */
static double orth_error(const wd_mg_transfer *t)
{
    const int h = t->n_fine / 2, bv = t->block_volume, nv = t->nvec;
    double worst = 0;
#pragma omp parallel for schedule(static) reduction(max : worst)
    for (size_t b = 0; b < t->coarse_volume; ++b)
        for (int chi = 0; chi < 2; ++chi)
            for (int i = 0; i < nv; ++i)
                for (int j = 0; j <= i; ++j) {
                    double complex g = 0;
                    for (int s = 0; s < bv; ++s) {
                        const size_t site = (size_t)t->sites[b * bv + s];
                        const double complex *vi = t->v + (site * nv + i) * t->n_fine + chi * h;
                        const double complex *vj = t->v + (site * nv + j) * t->n_fine + chi * h;
                        for (int a = 0; a < h; ++a)
                            g += conj(vi[a]) * vj[a];
                    }
                    const double e = cabs(g - (i == j));
                    if (e > worst)
                        worst = e;
                }
    return worst;
}

/* |D_c v - P^dag A P v| / |D_c v| on a random coarse v (level l's scratch) */
static double coarse_error(wd_mg *mg, int l, wd_rng *rng)
{
    mg_level *f = &mg->lv[l], *c = &mg->lv[l + 1];
    for (size_t i = 0; i < c->len; ++i)
        c->b[i] = CMPLX(wd_rng_normal(rng), wd_rng_normal(rng));
    wd_mg_prolong(&f->t, f->w[0], c->b);
    hexchange(mg, l, f->w[0]);
    wd_mg_op_apply(&f->op, f->w[1], f->w[0]);
    wd_mg_restrict(&f->t, c->x, f->w[1]);
    hexchange(mg, l + 1, c->b);
    wd_mg_op_apply(&c->op, c->w[0], c->b);
    const double ref = gnorm2(mg, c->w[0], c->len);
    vaxpy(-1, c->x, c->w[0], c->len);
    return ref > 0 ? sqrt(gnorm2(mg, c->w[0], c->len) / ref) : 0;
}


/* the first coarse operator built on the GPU from the fine level's host
 * operator and transfer (on a grid, the null vectors' ghosts first), its
 * null vectors t->v, or dvd on the GPU (one process: no ghosts) */
static wd_status coarse_build_gpu(wd_mg_op *coarse, wd_mg_op *fine, wd_mg_transfer *t,
                                  const double *dvd)
{
    wd_status st = dvd ? WD_OK
                       : wd_mg_halo_exchange(&fine->halo, t->v,
                                             (size_t)t->nvec * fine->n * sizeof *t->v);
    if (st != WD_OK || (st = wd_mg_coarse_init(coarse, t, fine->halo.grid)) != WD_OK)
        return st;
    const wd_mg_build_fine bf = {.dims = {fine->dims[0], fine->dims[1], fine->dims[2],
                                          fine->dims[3]},
                                 .volume = fine->volume, .nghost = fine->halo.nghost,
                                 .t0 = fine->t0, .nt = fine->nt, .nbr = fine->nbr,
                                 .u = (const double *)fine->u, .clover = fine->clover,
                                 .kappa = fine->kappa, .tbc = fine->tbc};
    st = wd_mg_coarse_build_cuda(&bf, t->nvec, t->block_volume, t->coarse_volume, t->agg,
                                     t->sites, dvd ? dvd : (const double *)t->v, dvd != NULL,
                                     (double *)coarse->links);
    if (st != WD_OK)
        wd_mg_op_free(coarse);
    return st;
}

/* null vector k's random start on level l (wd_mg_random_start: one
 * stream a site seeded by (seed, l, k, the site's global index on level
 * l), the same global field for any thread count and process grid, each
 * rank its block): on the host into v, or for the fine level of a GPU
 * solver on the GPU into the stage (*on_device set) */
static wd_status random_start(wd_mg *mg, int l, int k, double complex *v, int *on_device)
{
    const wd_mg_op *op = &mg->lv[l].op;
    int ext[4], org[4];
    level_origin(op, ext, org);
    const uint64_t base = ((mg->set.seed * 1000003u + (uint64_t)l) * 1000003u + (uint64_t)k) *
                          1000003u;
    *on_device = l == 0 && mg->on_device;
    if (!*on_device) {
        wd_mg_random_start(op->dims, ext, org, base, op->n, v);
        return WD_OK;
    }
    wd_status st = mg->stage ? WD_OK
                             : dev_alloc(mg, &mg->stage, mg->lv[0].len * sizeof(double complex),
                                         "the fine level's transfer field");
    if (st == WD_OK)
        st = wd_mg_random_start_cuda(op->dims, ext, org, base, op->n, (double *)mg->stage);
    return st;
}

/* whether bytes more fit in the GPU's free memory, a tenth to spare */
static int fits(size_t bytes)
{
    wd_cuda_info info;
    return wd_cuda_device_info(&info) == WD_OK && (double)info.free_bytes > 1.1 * (double)bytes;
}

/* the first level's float64 vectors off the GPU (dvd freed): into the
 * host's t.v where `download`, else t.v freed (nothing reads it: dv holds
 * the transfer's vectors) */
static wd_status host_vectors(wd_mg *mg, mg_level *f, size_t vbytes, int download)
{
    wd_status st = WD_OK;
    if (download) {
        st = wd_mg_download_cuda(f->t.v, f->dvd, vbytes);
    } else {
        free(f->t.v);
        f->t.v = NULL;
    }
    mg->dev->free(f->dvd);
    f->dvd = NULL;
    mg->dev_bytes -= vbytes;
    return st;
}

/* A setup's file: the vectors read (loading) or written (saving) level by
 * level, on every rank; the file itself (in, out) and its sums are rank
 * 0's on a grid */
typedef struct mg_files {
    FILE *in;
    wd_file_temp out;
    int loading, saving;
    unsigned long in_sum, out_sum;
} mg_files;

/* level f's vectors (t.v's volume sites, vbytes) to or from the setup's
 * file: on a grid every rank's block through rank 0 (collective) */
static wd_status file_level(wd_mg *mg, mg_files *io, int writing, mg_level *f, size_t vbytes,
                            const char *path)
{
    unsigned long *sum = writing ? &io->out_sum : &io->in_sum;
    FILE *fp = writing ? io->out.f : io->in;
    if (mg->ranks == 1)
        return wd_mg_file_io(fp, writing, f->t.v, vbytes, sum, path);
    return wd_mg_file_io_grid(fp, writing, f->t.v, mg->lv[0].op.halo.grid, f->op.dims,
                              (size_t)f->t.nvec * f->t.n_fine * sizeof(double complex), sum,
                              path);
}

/* Level l's (l > 0) null vectors: random starts on the host, relaxed on the
 * backend in groups of lock_step (0: WD_SOLVE_MANY_GROUP; at most
 * WD_MG_DEV_LANES and nvec; fewer where a GPU's memory is short), stored
 * site-major; the worst residual, the count above setup_tol and the
 * seconds of the starts and the storing added up */
static wd_status relax_level(wd_mg *mg, int l, const wd_mg_settings *m, wd_mg_setup_stats *stats,
                             double *worst, int *unconverged, double *t_random, double *t_store)
{
    mg_level *f = &mg->lv[l];
    const int nvec = m->nvec[l];
    int cap = m->lock_step ? m->lock_step : WD_SOLVE_MANY_GROUP;
    if (cap > WD_MG_DEV_LANES)
        cap = WD_MG_DEV_LANES;
    if (cap > nvec)
        cap = nvec;
    while (cap > 1 && mg->on_device && !fits(relax_bytes(f, cap)))
        cap /= 2;
    wd_status st = f->dlinks ? WD_OK : dev_level(mg, l, 0);
    double complex *hv = NULL, *v[WD_MG_DEV_LANES];
    if (st == WD_OK && !(hv = malloc((size_t)cap * f->len * sizeof *hv)))
        st = wd_fail(WD_ERR_NOMEM, "multigrid level %d: the null vectors' host fields", l);
    relax_lanes R;
    memset(&R, 0, sizeof R);
    if (st == WD_OK)
        st = relax_alloc(mg, l, &R, cap);
    if ((st = agreed(mg, st)) != WD_OK) {
        free(hv);
        return st;
    }
    const double fine_cost = apply_flops(&mg->lv[0].op) * mg->lv[0].op.volume;
    const double cost = apply_flops(&f->op) * f->op.volume / fine_cost;
    if (m->verbosity >= 1)
        fprintf(stderr, "wdirac multigrid: level %d's %d null vectors relaxed %d at a time\n", l,
                nvec, cap);
    for (int k0 = 0; k0 < nvec && st == WD_OK; k0 += cap) {
        const int nb = nvec - k0 < cap ? nvec - k0 : cap;
        double t_part = now_s(), res[WD_MG_DEV_LANES];
        int its[WD_MG_DEV_LANES], on_device = 0;
        for (int r = 0; r < nb && st == WD_OK; ++r) {
            v[r] = hv + (size_t)r * f->len;
            st = random_start(mg, l, k0 + r, v[r], &on_device);
        }
        *t_random += now_s() - t_part;
        if ((st = agreed(mg, st)) != WD_OK ||
            (st = agreed(mg, dev_relax(mg, l, &R, v, nb, m->setup_tol, m->setup_max_iter, res,
                                       its))) != WD_OK)
            break;
        t_part = now_s();
        for (int r = 0; r < nb; ++r) {
            wd_mg_vector_set(&f->t, k0 + r, v[r]);
            stats->fine_applies += cost * (3.0 + 2.0 * its[r]);
            if (res[r] > *worst)
                *worst = res[r];
            *unconverged += res[r] > m->setup_tol;
            if (m->verbosity >= 2)
                fprintf(stderr, "wdirac multigrid: level %d null vector %d: %d iterations, "
                        "|A^dag A v| / |A^dag A v0| = %.3e\n", l, k0 + r, its[r], res[r]);
        }
        *t_store += now_s() - t_part;
    }
    relax_free(mg->dev, &R);
    free(hv);
    return st;
}

/* nv vectors of volume sites of n components between the transfer's
 * site-major shape (v, complex double) and mg->raw's (a field a vector,
 * complex float): into raw where to_raw, else into v */
static void raw_move(float complex *raw, double complex *v, size_t volume, int nv, int n,
                     int to_raw)
{
    const size_t len = volume * (size_t)n;
#pragma omp parallel for schedule(static) if (len >= WD_MG_PARALLEL_MIN)
    for (size_t s = 0; s < volume; ++s)
        for (int k = 0; k < nv; ++k)
            for (int a = 0; a < n; ++a) {
                float complex *r = raw + k * len + s * n + a;
                double complex *x = v + (s * nv + (size_t)k) * n + a;
                if (to_raw)
                    *r = (float complex)*x;
                else
                    *x = *r;
            }
}

/* mg->raw (allocated on first use) from the first level's vectors in t.v
 * (site-major) */
static wd_status raw_store(wd_mg *mg, const wd_mg_transfer *t)
{
    const size_t bytes = (size_t)t->nvec * t->fine_volume * t->n_fine * sizeof *mg->raw;
    if (!mg->raw && !(mg->raw = malloc(bytes)))
        return wd_fail(WD_ERR_NOMEM, "multigrid: cannot allocate the refinement's %d null "
                       "vectors (%zu bytes)", t->nvec, bytes);
    raw_move(mg->raw, t->v, t->fine_volume, t->nvec, t->n_fine, 1);
    return WD_OK;
}

/*
 * Every level's transfer and the next level's operator, from the first
 * level down.  *given (a refinement's rebuild): the first level's null
 * vectors, as wd_mg_transfer's v of its shape, taken over (*given NULL
 * once taken; the caller frees it otherwise) in place of relaxed ones.
 * keep: the first level's vectors as relaxed (or given) also into
 * mg->raw before their orthonormalisation (a refinement pass starts from
 * them).
 */
static wd_status setup_levels(wd_mg *mg, const wd_mg_settings *m, wd_mg_setup_stats *stats,
                              mg_files *io, double complex **given, int keep)
{
    wd_status st = WD_OK;
    const double fine_cost = apply_flops(&mg->lv[0].op) * mg->lv[0].op.volume;
    for (int l = 0; l + 1 < m->levels && st == WD_OK; ++l) {
        mg_level *f = &mg->lv[l];
        const double cost = apply_flops(&f->op) * f->op.volume / fine_cost;
        if ((st = agreed(mg, wd_mg_transfer_init(&f->t, l, f->op.dims, f->op.n, m->block[l],
                                                 m->nvec[l], f->op.halo.nghost))) != WD_OK)
            break;
        const int refined = l == 0 && given && *given;
        if (refined) {
            free(f->t.v);
            f->t.v = *given;
            *given = NULL;
        }
        /* the vectors come from the file or the refinement */
        const int vectors_in = io->loading || refined;
        wd_rng rng;
        wd_rng_seed(&rng, m->seed * 1000003u + (uint64_t)l);
        double t_step = now_s(), t_vectors, t_orth, t_build;
        double worst = 0, t_random = 0, t_relax = 0, t_store = 0;
        int unconverged = 0;
        const size_t vbytes = (size_t)m->nvec[l] * f->len * sizeof *f->t.v;
        if (io->loading && (st = file_level(mg, io, 0, f, vbytes, m->load)) != WD_OK)
            break;
        /* a GPU's first level: its single vectors (dv, for the transfer)
         * and where it all fits, the float64 ones kept there from the
         * relaxation to the build (dvd: no host copies, one process) */
        const int gpu_first = l == 0 && mg->on_device;
        const size_t count1 = f->t.fine_volume * (size_t)f->t.nvec;
        const size_t vbytes1 = wd_mg_vector_bytes(mg->coarse_precision, f->t.n_fine, count1) +
                               (mg->coarse_precision == 2 ? count1 * sizeof(float) : 0);
        if (gpu_first && !vectors_in && f->op.halo.nghost == 0 &&
            fits(vbytes + vbytes1 + f->len * sizeof(double complex) +
                 wd_mg_coarse_build_cuda_bytes(f->op.volume, 0, f->t.nvec, f->op.clover != NULL,
                                               1, f->t.coarse_volume)) &&
            (st = agreed(mg, dev_alloc(mg, &f->dvd, vbytes, "the null vectors in float64"))) !=
                WD_OK)
            break;
        /* a coarse level's null vectors relax on the backend, its
         * operator there from now on (dev_setup keeps it), in groups */
        if (l > 0 && !io->loading) {
            double t_part = now_s();
            st = agreed(mg, relax_level(mg, l, m, stats, &worst, &unconverged, &t_random, &t_store));
            t_relax = now_s() - t_part - t_random - t_store;
            if (st != WD_OK)
                break;
        }
        for (int k = 0; !vectors_in && l == 0 && k < m->nvec[l]; ++k) {
            /* relaxed in a field of its own (the fine level's w[1] is free
             * until the coarse error below; a coarse level's x, where
             * relax's scratch is w), then stored site-major */
            double complex *v = l ? f->x : f->w[1];
            double t_part = now_s();
            int on_device = 0;
            if ((st = agreed(mg, random_start(mg, l, k, v, &on_device))) != WD_OK)
                return st;
            t_random += now_s() - t_part;
            t_part = now_s();
            int its;
            double res;
            /* on the backend, the even-odd system in the sloppy precision
             * (kept there with dvd) */
            if ((st = wd_mg_fine_nullvec(&mg->fine, on_device ? mg->stage : v, on_device,
                                         f->dvd ? mg->stage : v, f->dvd != NULL, m->setup_tol,
                                         m->setup_max_iter, &res, &its)) != WD_OK)
                return st;
            stats->fine_applies += 2.5 + 2.0 * its;
            t_relax += now_s() - t_part;
            t_part = now_s();
            if (f->dvd && (st = wd_mg_vector_set_cuda(f->t.fine_volume, f->t.nvec, k,
                                                      (const double *)mg->stage, f->dvd)) != WD_OK)
                return st;
            if (!f->dvd)
                wd_mg_vector_set(&f->t, k, v);
            t_store += now_s() - t_part;
            if (res > worst)
                worst = res;
            unconverged += res > m->setup_tol;
            if (m->verbosity >= 2)
                fprintf(stderr, "wdirac multigrid: level %d null vector %d: %d iterations, "
                        "|A^dag A v| / |A^dag A v0| = %.3e\n", l, k, its, res);
        }
        if (!refined) {
            stats->setup_residual[l] = worst;
            stats->setup_unconverged[l] = unconverged;
        }
        if (io->saving && f->dvd && (st = wd_mg_download_cuda(f->t.v, f->dvd, vbytes)) != WD_OK)
            break;
        if (io->saving && (st = file_level(mg, io, 1, f, vbytes, m->save)) != WD_OK)
            break;
        t_vectors = now_s() - t_step;
        t_step = now_s();
        /* the refinement's starts: the vectors before the orthonormalisation
         * (dvd's through the host's t.v, which holds nothing yet) */
        if (l == 0 && keep) {
            if (f->dvd)
                st = wd_mg_download_cuda(f->t.v, f->dvd, vbytes);
            if ((st = agreed(mg, st == WD_OK ? raw_store(mg, &f->t) : st)) != WD_OK)
                break;
        }
        /* on the GPU where it takes the shape (the first level), else here */
        int orth_done = 0;
        if (gpu_first) {
            /* the random starts' stage is not needed again before the
             * solves: the GPU build's room */
            if (mg->stage) {
                mg->dev->free(mg->stage);
                mg->stage = NULL;
                mg->dev_bytes -= mg->lv[0].len * sizeof(double complex);
            }
            /* the transfer's single vectors made there too (dev_transfer)
             * where they fit beside the GPU build that follows; else
             * rounded on the host after the build, as before */
            if (fits(vbytes1 + wd_mg_coarse_build_cuda_bytes(f->op.volume, f->op.halo.nghost,
                                                             f->t.nvec, f->op.clover != NULL,
                                                             f->dvd != NULL, f->t.coarse_volume)))
                st = dev_vectors(mg, f);
            if (st == WD_OK)
                st = wd_mg_orthonormalise_cuda(l, f->t.fine_volume, f->t.nvec, f->t.block_volume,
                                               f->t.coarse_volume, f->t.sites,
                                               f->dvd ? f->dvd : (double *)f->t.v,
                                               f->dvd != NULL, mg->coarse_precision, f->dv,
                                               f->dv_norm, &orth_done);
            f->dv_ready = st == WD_OK && orth_done && f->dv;
            /* the shape the GPU does not take (the raw vectors), or no
             * room for dv (the orthonormalised ones): the vectors to the
             * host, then on as without dvd (the host's rounding into dv
             * and the build read them there) */
            if (st == WD_OK && f->dvd && !f->dv_ready)
                st = host_vectors(mg, f, vbytes, 1);
        }
        if (st == WD_OK && !orth_done)
            st = wd_mg_orthonormalise(&f->t, l);
        if ((st = agreed(mg, st)) != WD_OK)
            break;
        t_orth = now_s() - t_step;
        t_step = now_s();
        const int vectors_kept = f->dvd != NULL;
        if ((st = agreed(mg, gpu_first ? coarse_build_gpu(&mg->lv[1].op, &f->op, &f->t, f->dvd)
                                       : wd_mg_coarse_build(&mg->lv[l + 1].op, &f->op, &f->t))) !=
            WD_OK)
            break;
        t_build = now_s() - t_step;
        t_step = now_s();
        /* dvd's vectors to the host only for the diagnostics (the rest
         * reads dv; the move counted in their seconds) */
        const int diagnose = m->diagnostics || m->verbosity >= 1;
        if (f->dvd) {
            const double t_move = now_s();
            if ((st = host_vectors(mg, f, vbytes, diagnose)) != WD_OK)
                break;
            if (diagnose)
                stats->diagnostics_seconds += now_s() - t_move;
        }
        stats->fine_applies += cost * 2.0 * m->nvec[l];
        if ((st = agreed(mg, level_alloc(mg, l + 1))) != WD_OK)
            break;
        /* the coarse lattice's global extents */
        const wd_grid *grid = f->op.halo.grid;
        for (int mu = 0; mu < 4; ++mu)
            stats->coarse_dims[l + 1][mu] =
                mg->lv[l + 1].op.dims[mu] * (grid ? grid->procs[mu] : 1);
        /* the float64 diagnostics where asked for (every rank agrees:
         * the settings are the same) */
        stats->orth_error[l] = stats->coarse_error[l] = NAN;
        if (diagnose) {
            const double t_diag = now_s();
            double orth = orth_error(&f->t);
            if (mg->ranks > 1 && (st = wd_comm_max(&orth, 1)) != WD_OK)
                break;
            stats->orth_error[l] = orth;
            stats->coarse_error[l] = coarse_error(mg, l, &rng);
            stats->diagnostics_seconds += now_s() - t_diag;
            if ((st = mg->error) != WD_OK)
                break;
        }
        if (m->verbosity >= 1)
            fprintf(stderr, "wdirac multigrid: level %d setup: null vectors %.3f s (%s%s: random "
                    "starts %.3f s, relaxation with the moves %.3f s, stored %.3f s), "
                    "orthonormalisation %.3f s, coarse operator %.3f s (%s), diagnostics %.3f s\n",
                    l, t_vectors,
                    io->loading ? "read"
                    : refined   ? "refined"
                    : l       ? "relaxed on the backend in single"
                              : "relaxed on the backend",
                    gpu_first && vectors_kept ? ", kept there" : "",
                    t_random, t_relax, t_store, t_orth, t_build, gpu_first ? "GPU" : "host",
                    now_s() - t_step);
        if (m->verbosity >= 1) {
            const int *cd = stats->coarse_dims[l + 1];
            fprintf(stderr, "wdirac multigrid: level %d -> %d: coarse %dx%dx%dx%d, %d unknowns a "
                    "site; null vectors |A^dag A v| / |A^dag A v0| <= %.3e (%d of %d above "
                    "setup_tol %.1e%s); "
                    "||P^dag P - 1|| = %.2e; ||D_c v - P^dag A P v|| / ||D_c v|| = %.2e\n",
                    l, l + 1, cd[0], cd[1], cd[2], cd[3], mg->lv[l + 1].op.n,
                    stats->setup_residual[l], stats->setup_unconverged[l], m->nvec[l],
                    m->setup_tol,
                    io->loading ? ": read from the file"
                    : refined   ? ": relaxed before the refinement"
                    : stats->setup_unconverged[l] ? ": the setup did not reach its tolerance"
                                                  : "",
                    stats->orth_error[l], stats->coarse_error[l]);
        }
    }
    return st;
}

static wd_status mg_solve(void *state, double *x, const double *b, const wd_solver_settings *s,
                          wd_solver_stats *stats);
static wd_status mg_solve_many(void *state, double *const x[], const double *const b[], int n,
                               const wd_solver_settings *s, wd_solver_stats *const stats[],
                               wd_status lane_st[], char *const msg[], size_t msg_size);

/* A refinement's rebuild: every level's transfer, the coarse operators
 * and all the backend's coarse state freed (the columns of solve_many
 * too: made again on first use); the fine level's host operator and
 * scratch, its backend fields and outer GCR kept */
static void levels_reset(wd_mg *mg)
{
    cols_free(mg);
    dev_free(mg);
    mg->stage = NULL;
    mg->stream = NULL;
    mg->dev_bytes = 0;
    mg->error = WD_OK;
    for (int l = 0; l < WD_MG_MAX_LEVELS; ++l) {
        mg_level *v = &mg->lv[l];
        wd_mg_transfer_free(&v->t);
        const wd_mg_op op = v->op;
        double complex *w0 = v->w[0], *w1 = v->w[1];
        const size_t len = v->len;
        if (l) {
            wd_mg_op_free(&v->op);
            free(v->b);
            free(v->x);
            for (int i = 0; i < 4; ++i)
                free(v->w[i]);
        }
        memset(v, 0, sizeof *v);
        if (!l) {
            v->op = op;
            v->w[0] = w0;
            v->w[1] = w1;
            v->len = len;
        }
    }
}

/*
 * One adaptive refinement pass (refine_passes; DD-alphaAMG's setup
 * iterations): each of the first level's null vectors v_k (mg->raw: as
 * relaxed, or as the last pass left them; not the orthonormalised ones,
 * whose blocks Gram-Schmidt has mixed) replaced by x_k / |x_k|, x_k from
 * refine_iter outer iterations of this multigrid's own solve of A x = v_k:
 * a step of inverse iteration with an approximate inverse.  They go up
 * to WD_MG_DEV_LANES at a time (as many as 4 GB of host fields hold)
 * through mg_solve_many (their outer GCRs in lock step; x written over
 * b: mg_solve_many reads a group's b before it writes its x), each
 * result back into its slot of mg->raw.  Then every level is rebuilt
 * from them (the coarser levels' vectors relaxed afresh), the last pass
 * writing `save` and freeing mg->raw.  *worst: the largest |v_k - A x_k|
 * / |v_k| of the pass's solves (how well the multigrid being refined
 * solved); *t_solves their seconds with the moves.
 */
static wd_status refine_pass(wd_mg *mg, const wd_mg_settings *m, const wd_solver_settings *s,
                             const wd_solver_host *h, wd_mg_setup_stats *stats, mg_files *io,
                             int last, double *worst, double *t_solves)
{
    const double t0 = now_s();
    mg_level *f = &mg->lv[0];
    const int nvec = m->nvec[0], n = f->op.n;
    const size_t len = f->len, volume = f->op.volume;
    /* as many at a time as 4 GB of host fields hold (16 at 24^3x64, 2 at
     * 48^3x96), at most WD_MG_DEV_LANES */
    int group = (int)(4e9 / ((double)len * sizeof(double complex)));
    group = group < 1 ? 1 : group > WD_MG_DEV_LANES ? WD_MG_DEV_LANES : group;
    group = group > nvec ? nvec : group;
    double complex *fld = malloc((size_t)group * len * sizeof *fld);
    char(*msg)[256] = malloc((size_t)group * sizeof *msg);
    wd_status st = fld && msg ? WD_OK
                              : wd_fail(WD_ERR_NOMEM, "multigrid: cannot allocate the "
                                        "refinement's %d fields", group);
    if ((st = agreed(mg, st)) != WD_OK) {
        free(fld);
        free(msg);
        return st;
    }
    wd_solver_settings rs = *s;
    rs.tol = 1e-30;               /* refine_iter iterations, whatever they reach */
    rs.max_iter = m->refine_iter;
    rs.verbosity = 0;
    const int verbosity = mg->set.verbosity;
    mg->set.verbosity = 0;
    const double fine_cost = apply_flops(&f->op) * f->op.volume;
    *worst = 0;
    for (int k0 = 0; k0 < nvec && st == WD_OK; k0 += group) {
        const int nb = nvec - k0 < group ? nvec - k0 : group;
        double *x[WD_MG_DEV_LANES];
        char *text[WD_MG_DEV_LANES];
        wd_solver_stats ss[WD_MG_DEV_LANES], *sp[WD_MG_DEV_LANES];
        wd_status lane[WD_MG_DEV_LANES];
        for (int r = 0; r < nb; ++r) {
            double complex *v = fld + (size_t)r * len;
            const float complex *raw = mg->raw + (size_t)(k0 + r) * len;
#pragma omp parallel for schedule(static) if (len >= WD_MG_PARALLEL_MIN)
            for (size_t i = 0; i < len; ++i)
                v[i] = raw[i];
            x[r] = (double *)v;
            text[r] = msg[r];
            memset(&ss[r], 0, sizeof ss[r]);
            sp[r] = &ss[r];
        }
        if ((st = mg_solve_many(mg, x, (const double *const *)x, nb, &rs, sp, lane, text,
                                sizeof *msg)) != WD_OK)
            break;
        for (int r = 0; r < nb && st == WD_OK; ++r) {
            /* stopping at refine_iter is the plan; another failure is not */
            if (lane[r] != WD_OK && lane[r] != WD_ERR_MAX_ITER) {
                st = wd_fail(lane[r], "multigrid: refinement of null vector %d: %s", k0 + r,
                             msg[r]);
                break;
            }
            if (ss[r].solver_residual > *worst)
                *worst = ss[r].solver_residual;
            stats->fine_applies += ss[r].flops / fine_cost;
            const double complex *v = fld + (size_t)r * len;
            const double norm = sqrt(gnorm2(mg, v, len));
            if (!(norm > 0) || !isfinite(norm)) {
                st = wd_fail(WD_ERR_NAN, "multigrid: refinement of null vector %d gave a zero or "
                             "non-finite field (|x| = %g)", k0 + r, norm);
                break;
            }
            float complex *raw = mg->raw + (size_t)(k0 + r) * len;
#pragma omp parallel for schedule(static) if (len >= WD_MG_PARALLEL_MIN)
            for (size_t i = 0; i < len; ++i)
                raw[i] = (float complex)(v[i] / norm);
        }
        if (st == WD_OK)
            st = mg->error;
        st = agreed(mg, st);
    }
    mg->set.verbosity = verbosity;
    free(fld);
    free(msg);
    *t_solves = now_s() - t0;
    if (st != WD_OK)
        return st;
    /* the rebuild from the refined vectors, handed over in the transfer's
     * site-major shape (its ghost sites filled by the build) */
    free(f->t.v);
    f->t.v = NULL;
    double complex *given = malloc((size_t)nvec * (volume + f->op.halo.nghost) * n *
                                   sizeof *given);
    if ((st = agreed(mg, given ? WD_OK
                               : wd_fail(WD_ERR_NOMEM, "multigrid: cannot allocate the refined "
                                         "null vectors"))) != WD_OK)
        return st;
    raw_move(mg->raw, given, volume, nvec, n, 0);
    if (last) {
        free(mg->raw);
        mg->raw = NULL;
    }
    /* as in the first setup, the outer GCR's fields are made after the
     * build's peak of memory */
    levels_reset(mg);
    wd_mg_fine_solver_release(&mg->fine);
    mg_files none;
    memset(&none, 0, sizeof none);
    st = agreed(mg, dev_open(mg));
    if (st == WD_OK)
        st = setup_levels(mg, m, stats, last ? io : &none, &given, !last);
    free(given);
    if (st == WD_OK)
        st = agreed(mg, wd_mg_fine_solver(&mg->fine, h));
    if (st == WD_OK)
        st = agreed(mg, dev_setup(mg));
    return st;
}

wd_status wd_solver_mg_setup(wd_solver *sv, const wd_mg_settings *m, const wd_solver_settings *s,
                             wd_mg_setup_stats *stats)
{
    const double t0 = now_s();
    if (!sv || !m || !s)
        return wd_fail(WD_ERR_INVALID, "wd_solver_mg_setup: solver, multigrid settings and "
                       "settings must not be NULL");
    wd_mg_setup_stats local;
    if (!stats)
        stats = &local;
    memset(stats, 0, sizeof *stats);
    wd_status st = check_mg_settings(m);
    wd_solver_host h;
    if (st == WD_OK)
        st = wd_solver_host_view(sv, s, &h);
    /* every level's checks before anything is built; the coarse links in
     * half when the solver's sloppy precision is half (the whole
     * preconditioner then runs in it), else in single */
    const int coarse_precision = st == WD_OK && h.g_sloppy->precision == 2 ? 2 : 4;
    /* on a grid rank 0 alone prints the setup's and the solves' lines */
    wd_mg_settings quiet;
    if (st == WD_OK && h.grid->size > 1 && wd_comm_rank() != 0) {
        quiet = *m;
        /* the diagnostics are collective: every rank measures them */
        quiet.diagnostics = m->diagnostics || m->verbosity >= 1;
        quiet.verbosity = 0;
        m = &quiet;
    }
    int dims[4], n = 12;
    memcpy(dims, h.dims, sizeof dims);
    for (int l = 0; st == WD_OK && l + 1 < m->levels; ++l) {
        int coarse[4];
        if ((st = wd_mg_transfer_check(l, dims, n, m->block[l], m->nvec[l], coarse)) != WD_OK)
            break;
        memcpy(dims, coarse, sizeof dims);
        n = 2 * m->nvec[l];
        if (wd_coarse_find_axes(coarse_precision, m->nvec[l], 0, 0, 1) < 0)
            st = wd_fail(WD_ERR_NOT_BUILT, "multigrid level %d: Nvec %d has no %s coarse kernel "
                         "in this build (coarse_%s_nv%d_dag0_xpay0_n1; the coarse levels run the "
                         "generated kernels of docs/coarse-kernels.md, whose manifest lists the "
                         "Nvec values built, and meson's -Dkernels selects them)", l + 1,
                         m->nvec[l], coarse_precision == 2 ? "half" : "single",
                         coarse_precision == 2 ? "h" : "s", m->nvec[l]);
    }
    /* the coarse levels on the solver's backend: its GPU or the CPU */
    const int on_device = st == WD_OK && strcmp(h.be->ops->name, "cuda") == 0;
    const wd_mg_dev_ops *dev = on_device ? wd_mg_dev_cuda_ops() : &wd_mg_dev_cpu_ops;
    if (st == WD_OK && !dev)
        st = wd_fail(WD_ERR_NO_DEVICE, "multigrid: this build has no CUDA coarse levels");
    /* the files before anything is built: a wrong file or an unwritable
     * path costs no setup */
    mg_files io;
    memset(&io, 0, sizeof io);
    /* the file is rank 0's on a grid (its header the global extents), the
     * vectors go through it level by level (file_level) */
    const int files = st == WD_OK && (m->load || m->save);
    const int file_rank = files && (h.grid->size == 1 || wd_comm_rank() == 0);
    const int file_agree = files && h.grid->size > 1;
    if (files) {
        io.loading = m->load != NULL;
        if (file_rank && m->load)
            st = wd_mg_file_open(&io.in, m->load, m, h.grid->dims);
        if (file_rank && st == WD_OK && m->save)
            st = wd_mg_file_create(&io.out, m->save, m->save_overwrite, m, h.grid->dims);
        if (file_agree)
            st = wd_comm_agree(st);
        io.saving = st == WD_OK && m->save;
    }
    /* the checks above agree on every rank (the same settings and block
     * extents); an allocation may fail on one rank alone */
    wd_mg *mg = NULL;
    if (st == WD_OK) {
        if (!(mg = calloc(1, sizeof *mg)))
            st = wd_fail(WD_ERR_NOMEM, "wd_solver_mg_setup: cannot allocate the multigrid");
        if (h.grid->size > 1)
            st = wd_comm_agree(st);
    }
    if (st == WD_OK) {
        mg->set = *m;
        mg->set.save = mg->set.load = NULL;   /* borrowed strings: not kept */
        mg->levels = m->levels;
        mg->dev = dev;
        mg->on_device = on_device;
        mg->ranks = h.grid->size;
        mg->coarse_precision = coarse_precision;
        mg->mass = s->mass;
        mg->csw = s->csw;
        const double kappa = 0.5 / (4.0 + s->mass);
        st = agreed(mg, wd_mg_fine_init(&mg->fine, &h, kappa, m->gcr_nkrylov, m->smoother,
                                             m->pre_smooth > m->post_smooth ? m->pre_smooth
                                                                            : m->post_smooth));
        if (st == WD_OK)
            st = wd_mg_op_fine(&mg->lv[0].op, h.dims, h.grid, h.gauge, h.clover, kappa, s->tbc);
        if (st == WD_OK)
            st = level_alloc(mg, 0);
        st = agreed(mg, st);
        memcpy(stats->coarse_dims[0], h.grid->dims, sizeof stats->coarse_dims[0]);
        if (st == WD_OK)
            st = agreed(mg, dev_open(mg));
        /* refinement passes rebuild the levels: the first build keeps the
         * first level's vectors for them, and the last writes `save` */
        const int passes = io.loading ? 0 : m->refine_passes;
        mg_files none;
        memset(&none, 0, sizeof none);
        if (st == WD_OK)
            st = setup_levels(mg, m, stats, passes ? &none : &io, NULL, passes > 0);
        const double t_dev = now_s();
        /* the outer GCR's fields after the setup's peak of memory */
        mg->fine.outer_eo = m->outer_eo;
        if (st == WD_OK)
            st = agreed(mg, wd_mg_fine_solver(&mg->fine, &h));
        if (st == WD_OK)
            st = agreed(mg, dev_setup(mg));
        if (st == WD_OK && m->verbosity >= 1)
            fprintf(stderr, "wdirac multigrid: the coarse levels to the %s backend in %.3f s "
                    "(%.1f MB; coarse links in %s)\n", dev->name, now_s() - t_dev,
                    mg->dev_bytes / 1e6, coarse_precision == 2 ? "half" : "single");
        stats->refine_residual = NAN;
        for (int p = 0; st == WD_OK && p < passes; ++p) {
            const double tp = now_s();
            double worst = 0, t_solves = 0;
            st = refine_pass(mg, m, s, &h, stats, &io, p + 1 == passes, &worst, &t_solves);
            stats->refine_seconds += now_s() - tp;
            stats->refine_residual = worst;
            if (st == WD_OK && m->verbosity >= 1)
                fprintf(stderr, "wdirac multigrid: refinement pass %d of %d in %.3f s: %d null "
                        "vectors by %d outer iterations each (%.3f s with the moves; |v - A x| / "
                        "|v| <= %.3e), every level rebuilt\n", p + 1, passes, now_s() - tp,
                        m->nvec[0], m->refine_iter, t_solves, worst);
        }
    }
    if (io.in)
        st = wd_mg_file_finish(io.in, NULL, io.in_sum, st, m->load);
    if (io.out.f)
        st = wd_mg_file_finish(NULL, &io.out, io.out_sum, st, m->save);
    if (file_agree)
        st = wd_comm_agree(st);
    if (st != WD_OK) {
        mg_free(mg);
        return st;
    }
    stats->levels = m->levels;
    stats->seconds = now_s() - t0;
    if (m->verbosity >= 1)
        fprintf(stderr, "wdirac multigrid: setup of %d levels in %.3f s (%.1f fine-operator "
                "applications)\n", m->levels, stats->seconds, stats->fine_applies);
    const wd_solver_mg_hook hook = {mg, mg_solve, mg_free, mg_solve_many};
    wd_solver_attach_mg(sv, &hook);
    return WD_OK;
}

/*
 * The WD_SOLVER_MG solves of n <= WD_MG_DEV_LANES right-hand sides (the
 * solver's hook; n = 1 is wd_solver_solve's): x[i] from b[i] / (4+m) by
 * the outer GCR.  With outer_eo the n go in lock step (run_cols: each its
 * own iterations and stop, the last level's solves batched where
 * lanes_ok) in groups of lock_step (0: all n), as many at once as have
 * fields: a column past the first makes 7 outer and 2 nk + 2 Krylov
 * parity fields on first use and keeps them; where the backend's memory
 * holds fewer, the groups are that many.  Without outer_eo they run one after another.  Returns a
 * failure that is no solver outcome (every solve stops; the solutions
 * downloaded so far kept); otherwise WD_OK with each solve's outcome in
 * lane_st[i] (its message in msg[i], msg_size bytes, where msg is not
 * NULL), x[i] its best iterate and stats[i] its figures (seconds and
 * flops: its group's divided evenly).
 */
static wd_status mg_solve_many(void *state, double *const x[], const double *const b[], int n,
                               const wd_solver_settings *s, wd_solver_stats *const stats[],
                               wd_status lane_st[], char *const msg[], size_t msg_size)
{
    wd_mg *mg = state;
    if (s->mass != mg->mass || s->csw != mg->csw)
        return wd_fail(WD_ERR_INVALID, "solver WD_SOLVER_MG: the multigrid was set up for mass "
                       "%g, c_sw %g, not %g, %g; call wd_solver_mg_setup again", mg->mass, mg->csw,
                       s->mass, s->csw);
    if (s->tbc != mg->lv[0].op.tbc)
        return wd_fail(WD_ERR_INVALID, "solver WD_SOLVER_MG: the multigrid was set up for time "
                       "boundary %d, not %d", mg->lv[0].op.tbc, (int)s->tbc);
    if (n < 1 || n > WD_MG_DEV_LANES)
        return wd_fail(WD_ERR_INVALID, "solver WD_SOLVER_MG: %d right-hand sides at once (1 to "
                       "%d)", n, WD_MG_DEV_LANES);
    wd_mg_fine *f = &mg->fine;
    const int eo = mg->set.outer_eo;
    const double scale = 1.0 / (4.0 + s->mass);
    const int loud = (mg->set.verbosity >= 2 || s->verbosity >= 3) &&
                     (mg->ranks == 1 || wd_comm_rank() == 0);
    if (eo && !mg->cols) {
        if (!(mg->cols = calloc(WD_MG_DEV_LANES, sizeof *mg->cols)))
            return wd_fail(WD_ERR_NOMEM, "solver WD_SOLVER_MG: cannot allocate the columns");
        col_bind(mg, &mg->cols[0]);
        mg->ncols = 1;
    }
    /* a column's fields can fail on one rank alone: every rank the same count */
    const int want = mg->set.lock_step && mg->set.lock_step < n ? mg->set.lock_step : n;
    while (eo && mg->ncols < want) {
        wd_status st = col_alloc(mg, &mg->cols[mg->ncols]);
        if (agreed(mg, st) != WD_OK) {
            if (st == WD_OK)
                col_free(mg, &mg->cols[mg->ncols]);
            if (mg->set.verbosity >= 1 && (mg->ranks == 1 || wd_comm_rank() == 0))
                fprintf(stderr, "wdirac multigrid: %d right-hand sides in lock step (another's "
                        "fields do not fit: %s)\n", mg->ncols, wd_last_error());
            break;
        }
        ++mg->ncols;
    }
    const int group = eo ? (mg->ncols < want ? mg->ncols : want) : 1;
    for (int i0 = 0; i0 < n; i0 += group) {
        const int g = n - i0 < group ? n - i0 : group;
        const double t0 = now_s();
        for (int l = 0; l < mg->levels; ++l)
            mg->lv[l].iterations = 0;
        mg->t_coarse = 0;
        mg->profile = mg->set.verbosity >= 3;
        memset(mg->prof, 0, sizeof mg->prof);
        mg->prof_applies = 0;
        mg->prof_mark = t0;
        mg->flops = 0;
        const double be_flops0 = f->be->flops;
        /* b / (4+m) on the backend (its outer precision) */
        wd_status st = WD_OK;
        for (int j = 0; j < g && st == WD_OK; ++j) {
            wd_mg_pair *bj = eo ? mg->cols[j].b : &f->b;
            if ((st = wd_mg_fine_from_host(f, bj, (const double complex *)b[i0 + j])) == WD_OK)
                wd_mg_pair_ax(f->be, scale, bj);
        }
        if (st != WD_OK)
            return st;
        prof(mg, PROF_SOURCE);
        double rel = 0;
        int it = 0;
        if (eo)
            st = run_cols(mg, mg->cols, g, s->tol, s->max_iter, loud);
        else
            it = gcr_fine(mg, s->tol, s->max_iter, loud, &rel, &st);
        for (int j = 0; j < g; ++j) {
            const wd_status xst = wd_mg_fine_to_host(f, (double complex *)x[i0 + j],
                                                     eo ? mg->cols[j].x : &f->x);
            if (xst != WD_OK)
                return xst;
        }
        prof(mg, PROF_SOLUTION);
        if (mg->set.verbosity >= 1) {
            const double total = now_s() - t0;
            fprintf(stderr, "wdirac multigrid: solve%s %.3f s: the fine level %.3f s, the coarse "
                    "levels with the transfers (%s) %.3f s\n", g > 1 ? "s in lock step" : "",
                    total, total - mg->t_coarse, mg->dev->name, mg->t_coarse);
        }
        if (mg->profile && (mg->ranks == 1 || wd_comm_rank() == 0)) {
            const double *p = mg->prof;
            fprintf(stderr, "wdirac multigrid: profile (the device synchronised after each part): "
                    "smoother %.3f s, fine applications %.3f s, outer orthogonalisation %.3f s, "
                    "restarts %.3f s, transfers %.3f s, coarse applications %.3f s (%ld, %.1f us "
                    "each), the coarse solves' other work %.3f s, the source in %.3f s, the "
                    "solution out %.3f s\n", p[PROF_SMOOTH],
                    p[PROF_FINE_APPLY], p[PROF_ORTH], p[PROF_RESTART], p[PROF_TRANSFER],
                    p[PROF_COARSE_APPLY], mg->prof_applies,
                    mg->prof_applies ? 1e6 * p[PROF_COARSE_APPLY] / mg->prof_applies : 0.0,
                    p[PROF_COARSE_BLAS], p[PROF_SOURCE], p[PROF_SOLUTION]);
        }
        if (st != WD_OK && !(wd_solve_outcome(st) && !eo))
            return st;
        const double seconds = (now_s() - t0) / g;
        const double flops = (f->be->flops - be_flops0 + mg->flops) / g;
        for (int j = 0; j < g; ++j) {
            const mg_col *c = eo ? &mg->cols[j] : NULL;
            wd_solver_stats *sj = stats[i0 + j];
            wd_status lst = eo ? c->st : st;
            if (lst != WD_OK && !wd_solve_outcome(lst))
                return c ? wd_fail(lst, "%s", c->msg) : lst;  /* else its message stands */
            const int its = eo ? c->it : it;
            const double r = eo ? c->relres : rel;
            sj->iterations = sj->sloppy_iterations = its;
            sj->updates = 0;
            sj->solver_residual = r;
            sj->seconds = sj->solve_seconds = seconds;
            sj->flops = flops;
            /* the backend's fields (the fine level and the solver's) and the
             * coarse levels' there */
            sj->bytes_allocated = (f->be->bytes_peak > f->be->bytes_allocated
                                       ? f->be->bytes_peak
                                       : f->be->bytes_allocated) +
                                  mg->dev_bytes;
            sj->mg_levels = mg->levels;
            for (int l = 0; l < mg->levels; ++l)
                sj->mg_iterations[l] = (int)(eo ? c->lvits[l] : mg->lv[l].iterations);
            char text[512];
            snprintf(text, sizeof text, "%s", lst != WD_OK && c ? c->msg : wd_last_error());
            if (lst == WD_OK && r > s->tol && !(eo && c->at_floor)) {
                lst = wd_fail(WD_ERR_MAX_ITER, "solver WD_SOLVER_MG: %d outer iterations reached "
                              "max_iter with residual %.3e above tol %.3e", its, r, s->tol);
                snprintf(text, sizeof text, "%s", wd_last_error());
            }
            lane_st[i0 + j] = lst;
            if (msg)
                snprintf(msg[i0 + j], msg_size, "%s", lst == WD_OK ? "" : text);
        }
    }
    return WD_OK;
}

static wd_status mg_solve(void *state, double *x, const double *b, const wd_solver_settings *s,
                          wd_solver_stats *stats)
{
    wd_status lane = WD_OK;
    double *const xs[1] = {x};
    const double *const bs[1] = {b};
    wd_solver_stats *const ss[1] = {stats};
    const wd_status st = mg_solve_many(state, xs, bs, 1, s, ss, &lane, NULL, 0);
    return st != WD_OK ? st : lane;
}
