/*
 * solver.c: the public solver entry of wdirac.h.
 *
 * The externally accessible functions are
 *   wd_solver_default_settings   the documented defaults
 *   wd_solver_create             validate, gauge-fix on the host if either
 *                                level asks for it, upload the gauge field
 *                                in the outer and (if different) the sloppy
 *                                precision, once
 *   wd_solver_solve              M x = b on full-lattice host fields with
 *                                that gauge field
 *   wd_solver_destroy            free it all
 *   wd_solve                     create, solve, destroy
 *
 * A solve: upload the source, gauge-fixed if the solver is (in the
 * backend's transfer where it can, wd_spinor_gauge; else on the host),
 * prepare the even-odd source b'_e = (b_e + kappa D_eo b_o) / (4+m) with
 * the outer operator, run krylov.c, reconstruct x_o = b_o / (4+m) +
 * kappa D_oe x_e, download, undo the gauge fixing (there or on the host),
 * and measure the true residual
 * ||b - M x|| / ||b|| on the host with the float64 reference operator
 * (ref_wilson) on the caller's own fields: an independent check, not
 * counted in the solve time.
 *
 * The Schur residual relates to the full one exactly: with x_o
 * reconstructed, (b - M x)_o = 0 and (b - M x)_e = (4+m)(b'_e - Mhat x_e),
 * so the Krylov solve stops at ||b'_e - Mhat x_e|| <= tol ||b|| / (4+m).
 * Rounding (outer precision, reconstruction) can leave the float64 full
 * residual a little above tol all the same; refine() then corrects x with
 * a solve on b - M x, so an OK status always means ||b - M x|| <= tol ||b||.
 *
 * With a clover term (settings.csw != 0) the operator is M_sw = M + c_sw T
 * and, in the kappa normalisation M_sw / (4+m) = A - kappa D
 * (A = 1 + c_sw T / (4+m), wd_solver.h), with b' = b / (4+m):
 *   t_o = A_oo^-1 b'_o;  bhat_e = b'_e + kappa D_eo t_o
 *   asymmetric  (A_ee - kappa^2 D_eo A_oo^-1 D_oe) x_e = bhat_e
 *   symmetric   (1 - kappa^2 A_ee^-1 D_eo A_oo^-1 D_oe) x_e = A_ee^-1 bhat_e
 *   x_o = t_o + kappa A_oo^-1 D_oe x_e   (one dslashcl xpay kernel)
 * The (b - M x)_e of the asymmetric form is (4+m) (source - Mhat x_e), as
 * for Wilson; the symmetric form's is (4+m) A_ee (source - Mhat x_e), so
 * the same Krylov target leaves the full residual within ||A_ee|| (close
 * to 1) of tol, and the refinement below catches the rest.
 * A is built on the host in double (clover_field.c) from the links the
 * solve runs on, inverted per chiral block, and uploaded in each level's
 * precision; it depends on the mass, so a solve with another mass rebuilds
 * it.  The float64 check adds (4+m)(A - 1) x of the caller's links.
 *
 * Memory (the paper's budget, section 5.3): outer b, x, r, odd scratch (and
 * an even scratch for CG's normal equations); sloppy r, p, v, t, odd
 * scratch (and r0 for BiCGstab); the partial solution accumulator xs in
 * the outer or the sloppy precision (wd_accumulator); the gauge field in
 * each precision.  When both levels share a precision, r and the scratch
 * fields are shared too.
 */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clover_field.h"
#include "cuda_rt.h"
#include "gauge_tools.h"
#include "ref_wilson.h"
#include "wd_core.h"
#include "wd_solver.h"

void wd_solver_default_settings(wd_solver_settings *s)
{
    memset(s, 0, sizeof *s);
    s->solver = WD_SOLVER_BICGSTAB;
    s->backend = WD_BACKEND_CPU;
    s->mass = 0.1;
    s->tbc = WD_TIME_ANTIPERIODIC;
    s->tol = 1e-10;
    s->max_iter = 10000;
    s->precision = WD_PREC_DOUBLE;
    s->recon = WD_RECON_12;
    s->gauge_fix = 0;
    s->sloppy_precision = WD_PREC_SINGLE;
    s->sloppy_recon = WD_RECON_12;
    s->sloppy_gauge_fix = 0;
    s->mixed = WD_MIXED_RELIABLE;
    s->delta = 0.1;
    s->tol_inner = 0.1;
    s->max_stall = 4;
    s->divergence = 1e8;
    s->accumulator = WD_ACCUM_AUTO;
    s->pad = 0;
    s->verbosity = 0;
    s->progress = NULL;
    s->progress_arg = NULL;
}

/* WDIRAC_FUSED_REDUCTIONS=0 in the environment: the Krylov iteration
 * reduces with the BLAS even where the sloppy operator's kernel could
 * (wd_eo_mhat_reduce): the two ways measured against each other in one
 * program (bench/speed-check) */
static int fused_off(void)
{
    const char *e = getenv("WDIRAC_FUSED_REDUCTIONS");
    return e && !strcmp(e, "0");
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int valid_precision(int p)
{
    return p == 8 || p == 4 || p == 2;
}

static int valid_recon(int r)
{
    return r == 18 || r == 12 || r == 8;
}

static wd_status check_settings(const wd_solver_settings *s)
{
    if (s->solver != WD_SOLVER_CG && s->solver != WD_SOLVER_BICGSTAB && s->solver != WD_SOLVER_MG)
        return wd_fail(WD_ERR_INVALID, "solver %d: must be WD_SOLVER_CG (1), WD_SOLVER_BICGSTAB "
                       "(2) or WD_SOLVER_MG (3)", (int)s->solver);
    if (!valid_precision(s->precision) || !valid_precision(s->sloppy_precision))
        return wd_fail(WD_ERR_INVALID, "precision %d / sloppy precision %d: each must be 8, 4 or 2",
                       (int)s->precision, (int)s->sloppy_precision);
    if (s->sloppy_precision > s->precision)
        return wd_fail(WD_ERR_INVALID, "sloppy precision %d is higher than the outer precision %d",
                       (int)s->sloppy_precision, (int)s->precision);
    if (!valid_recon(s->recon) || !valid_recon(s->sloppy_recon))
        return wd_fail(WD_ERR_INVALID, "reconstruction %d / sloppy reconstruction %d: each must be "
                       "18, 12 or 8", (int)s->recon, (int)s->sloppy_recon);
    if (!(s->mass > -4) || !isfinite(s->mass))
        return wd_fail(WD_ERR_INVALID, "mass %g: must be finite and > -4 (kappa = 1/(2(4+m)) > 0)",
                       s->mass);
    if (s->tbc != WD_TIME_PERIODIC && s->tbc != WD_TIME_ANTIPERIODIC)
        return wd_fail(WD_ERR_INVALID, "time boundary %d: must be +1 or -1", (int)s->tbc);
    if (!isfinite(s->csw))
        return wd_fail(WD_ERR_INVALID, "csw %g: must be finite", s->csw);
    if (s->clover_form != WD_CLOVER_SYMMETRIC && s->clover_form != WD_CLOVER_ASYMMETRIC)
        return wd_fail(WD_ERR_INVALID, "clover_form %d: must be WD_CLOVER_SYMMETRIC (0) or "
                       "WD_CLOVER_ASYMMETRIC (1)", (int)s->clover_form);
    if (!(s->tol > 0) || !(s->tol < 1))
        return wd_fail(WD_ERR_INVALID, "tol %g: must be in (0, 1)", s->tol);
    if (s->max_iter < 1)
        return wd_fail(WD_ERR_INVALID, "max_iter %d: must be >= 1", s->max_iter);
    if (s->mixed != WD_MIXED_NONE && s->mixed != WD_MIXED_RELIABLE && s->mixed != WD_MIXED_DEFECT)
        return wd_fail(WD_ERR_INVALID, "mixed %d: must be WD_MIXED_NONE, _RELIABLE or _DEFECT",
                       (int)s->mixed);
    if (s->mixed == WD_MIXED_RELIABLE && !(s->delta > 0 && s->delta < 1))
        return wd_fail(WD_ERR_INVALID, "delta %g: must be in (0, 1)", s->delta);
    if (s->mixed == WD_MIXED_DEFECT && !(s->tol_inner > 0 && s->tol_inner < 1))
        return wd_fail(WD_ERR_INVALID, "tol_inner %g: must be in (0, 1)", s->tol_inner);
    if (s->max_stall < 1)
        return wd_fail(WD_ERR_INVALID, "max_stall %d: must be >= 1", s->max_stall);
    if (!(s->divergence > 1))
        return wd_fail(WD_ERR_INVALID, "divergence %g: must be > 1", s->divergence);
    if (s->accumulator != WD_ACCUM_AUTO && s->accumulator != WD_ACCUM_SLOPPY &&
        s->accumulator != WD_ACCUM_OUTER)
        return wd_fail(WD_ERR_INVALID, "accumulator %d: must be WD_ACCUM_AUTO, _SLOPPY or _OUTER",
                       (int)s->accumulator);
    if (s->pad < 0)
        return wd_fail(WD_ERR_INVALID, "pad %d: must be >= 0", s->pad);
    return WD_OK;
}

/* The work fields, by role (wd_solver.h: wd_krylov documents each). */
enum {
    F_B, F_X, F_R, F_ODD, F_TE, F_BO,       /* outer precision (F_BO: the odd source) */
    F_XS,                                   /* the accumulator's precision */
    F_RS, F_P, F_V, F_T, F_R0, F_ODD_S,     /* sloppy precision */
    F_EVEN, F_EVEN_S,                       /* clover: even scratch, outer and sloppy */
    F_COUNT
};

struct wd_solver {
    wd_backend be;
    int be_open;
    wd_grid grid;               /* the process grid; dims its local block */
    wd_host_block hb;           /* the faces of the float64 residual check */
    int hb_open;
    int dims[4];
    wd_solver_settings fixed;   /* the settings the uploaded fields depend on */
    const double *gauge;        /* the caller's, for the float64 residual check */
    wd_gauge g_outer, g_sloppy; /* g_sloppy unused (zero) when both levels agree */
    double complex *gfix;       /* temporal-gauge transform, when a level gauge-fixes */
    double complex *bfix;       /* the source in temporal gauge (host transformation) */
    wd_spinor_gauge tf;         /* gfix on a backend that transforms its transfers */
    double *clover_host;        /* clover: A of the caller's links (the float64 check) */
    double clover_mass;         /* the mass A was built for */
    wd_clover cl_a[2], cl_ainv[2];  /* A, A^-1: [0] outer, [1] sloppy precision (when other) */
    wd_field f[F_COUNT];        /* per-lane roles with `lanes` right-hand sides (per_lane) */
    int lanes;
    wd_field view[WD_SOLVE_MANY_GROUP][F_COUNT];  /* lane i's right-hand side of each */
    wd_solver_mg_hook mg;       /* WD_SOLVER_MG: the multigrid (state NULL: none set up) */
};

static void clover_release(wd_solver *sv)
{
    for (int i = 0; i < 2; ++i) {
        wd_clover_destroy(&sv->be, &sv->cl_a[i]);
        wd_clover_destroy(&sv->be, &sv->cl_ainv[i]);
    }
}

/* A(n) -> g(n) A(n) g(n)^dagger in each chiral block (colour rotation) */
static void clover_gauge_transform(double *out, const double *blocks, const double complex *g,
                                   size_t sites)
{
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < sites; ++n) {
        const double complex *gn = g + 9 * n;
        for (int b = 0; b < 2; ++b) {
            const double *q = blocks + WD_CLOVER_SITE_REALS * n + WD_CLOVER_BLOCK_REALS * b;
            double *o = out + WD_CLOVER_SITE_REALS * n + WD_CLOVER_BLOCK_REALS * b;
            double complex m[6][6], r[6][6];
            for (int i = 0; i < 6; ++i)
                m[i][i] = q[i];
            for (int e = 0; e < 15; ++e) {
                const int i = wd_clover_lower_pairs[e][0], j = wd_clover_lower_pairs[e][1];
                m[i][j] = CMPLX(q[6 + 2 * e], q[7 + 2 * e]);
                m[j][i] = conj(m[i][j]);
            }
            /* r = G m G^dag, G = 1_spin (x) g */
            for (int i = 0; i < 6; ++i)
                for (int j = 0; j < 6; ++j) {
                    double complex acc = 0;
                    for (int c = 0; c < 3; ++c)
                        for (int d = 0; d < 3; ++d)
                            acc += gn[3 * (i % 3) + c] * m[3 * (i / 3) + c][3 * (j / 3) + d] *
                                   conj(gn[3 * (j % 3) + d]);
                    r[i][j] = acc;
                }
            for (int i = 0; i < 6; ++i)
                o[i] = creal(r[i][i]);
            for (int e = 0; e < 15; ++e) {
                const int i = wd_clover_lower_pairs[e][0], j = wd_clover_lower_pairs[e][1];
                const double complex z = r[i][j];
                o[6 + 2 * e] = creal(z);
                o[7 + 2 * e] = cimag(z);
            }
        }
    }
}

/*
 * (Re)build the clover fields for `mass`: A of the caller's links on the
 * host (the float64 check), A of the links the solve runs on (g A g^dag
 * when it gauge-fixes) inverted per chiral block, and A^-1 (and A for the
 * asymmetric form) uploaded in the outer and, if other, the sloppy
 * precision.  Collective.  A block that is not positive definite is
 * refused with its site (clover_field.c) and nothing is uploaded.
 */
static wd_status clover_build(wd_solver *sv, double mass)
{
    const wd_solver_settings *s = &sv->fixed;
    const size_t vol = wd_volume(sv->dims);
    const size_t bytes = vol * WD_CLOVER_SITE_REALS * sizeof(double);
    clover_release(sv);
    wd_status st = WD_OK;
    if (!sv->clover_host && !(sv->clover_host = malloc(bytes)))
        st = wd_fail(WD_ERR_NOMEM, "solver: cannot allocate %zu bytes for the clover field", bytes);
    double *run = sv->gfix ? malloc(bytes) : NULL, *inv = malloc(bytes);
    if (st == WD_OK && (!inv || (sv->gfix && !run)))
        st = wd_fail(WD_ERR_NOMEM, "solver: cannot allocate %zu bytes for the clover field",
                     2 * bytes);
    if ((st = wd_comm_agree(st)) == WD_OK)
        st = wd_clover_field(sv->clover_host, sv->gauge, &sv->grid, s->csw / (4.0 + mass));
    const double *a_run = sv->clover_host;
    if (st == WD_OK && sv->gfix) {
        clover_gauge_transform(run, sv->clover_host, sv->gfix, vol);
        a_run = run;
    }
    if (st == WD_OK)
        st = wd_clover_invert(inv, a_run, vol, &sv->grid);
    const int levels = s->sloppy_precision == s->precision ? 1 : 2;
    for (int i = 0; i < levels && st == WD_OK; ++i) {
        const int p = i ? s->sloppy_precision : s->precision;
        st = wd_clover_create(&sv->be, &sv->cl_ainv[i], inv, p);
        if (st == WD_OK && s->clover_form == WD_CLOVER_ASYMMETRIC)
            st = wd_clover_create(&sv->be, &sv->cl_a[i], a_run, p);
    }
    st = wd_comm_agree(st);
    if (st != WD_OK)
        clover_release(sv);
    else
        sv->clover_mass = mass;
    free(run);
    free(inv);
    return st;
}

void wd_solver_destroy(wd_solver *sv)
{
    if (!sv)
        return;
    wd_solver_attach_mg(sv, NULL);
    if (sv->be_open) {
        for (int i = 0; i < F_COUNT; ++i)
            wd_field_destroy(&sv->be, &sv->f[i]);
        wd_gauge_destroy(&sv->be, &sv->g_sloppy);
        wd_gauge_destroy(&sv->be, &sv->g_outer);
        clover_release(sv);
        wd_spinor_gauge_destroy(&sv->be, &sv->tf);
        wd_backend_close(&sv->be);
    }
    free(sv->clover_host);
    if (sv->hb_open)
        wd_host_block_close(&sv->hb);
    free(sv->gfix);
    free(sv->bfix);
    free(sv);
}

/* The settings a solve may not change (see wdirac.h). */
static wd_status check_fixed(const wd_solver_settings *a, const wd_solver_settings *b)
{
#define SAME(field)                                                                          \
    if (a->field != b->field)                                                                \
        return wd_fail(WD_ERR_INVALID, "wd_solver_solve: setting '" #field "' is %d here but "  \
                       "%d when the solver was created; create another solver to change it", \
                       (int)b->field, (int)a->field)
    SAME(backend);
    SAME(precision);
    SAME(recon);
    SAME(gauge_fix);
    SAME(sloppy_precision);
    SAME(sloppy_recon);
    SAME(sloppy_gauge_fix);
    SAME(tbc);
    SAME(clover_form);
    SAME(pad);
    SAME(grid[0]);
    SAME(grid[1]);
    SAME(grid[2]);
    SAME(grid[3]);
#undef SAME
    if (a->csw != b->csw)
        return wd_fail(WD_ERR_INVALID, "wd_solver_solve: setting 'csw' is %g here but %g when the "
                       "solver was created; create another solver to change it", b->csw, a->csw);
    return WD_OK;
}

static wd_status create(wd_solver *sv, const double *gauge)
{
    const wd_solver_settings *s = &sv->fixed;
    const size_t vol = wd_volume(sv->dims);
    const double *u_run = gauge;
    double complex *ufix = NULL;
    if (s->gauge_fix || s->sloppy_gauge_fix) {
        sv->gfix = malloc(vol * 9 * sizeof *sv->gfix);
        sv->bfix = malloc(vol * 12 * sizeof *sv->bfix);
        ufix = malloc(vol * 36 * sizeof *ufix);
        wd_status st = sv->gfix && sv->bfix && ufix
                           ? WD_OK
                           : wd_fail(WD_ERR_NOMEM, "solver: cannot allocate %zu bytes for the "
                                     "gauge-fixed host fields", vol * 57 * sizeof(double complex));
        if (sv->grid.size > 1 && (st = wd_comm_agree(st)) == WD_OK)
            st = wd_temporal_gauge_field_block(ufix, sv->gfix, (const double complex *)gauge,
                                               &sv->grid);
        else if (st == WD_OK)
            wd_temporal_gauge_field(ufix, sv->gfix, (const double complex *)gauge, sv->dims);
        if (st != WD_OK) {
            free(ufix);
            return st;
        }
        u_run = (const double *)ufix;
    }
    wd_status st = wd_host_block_open(&sv->hb, &sv->grid, gauge);
    if (st == WD_OK) {
        sv->hb_open = 1;
        st = wd_backend_open_grid(&sv->be, s->backend, &sv->grid, s->pad);
        /* one rank without a GPU stops them all */
        if ((st = wd_comm_agree(st)) != WD_OK && sv->be.ops)
            wd_backend_close(&sv->be);
    }
    if (st == WD_OK) {
        sv->be_open = 1;
        st = wd_gauge_create(&sv->be, &sv->g_outer, u_run, s->precision, s->recon, s->gauge_fix,
                             s->tbc);
    }
    const int same_gauge = s->sloppy_precision == s->precision && s->sloppy_recon == s->recon &&
                           s->sloppy_gauge_fix == s->gauge_fix;
    if (st == WD_OK && !same_gauge)
        st = wd_gauge_create(&sv->be, &sv->g_sloppy, u_run, s->sloppy_precision, s->sloppy_recon,
                             s->sloppy_gauge_fix, s->tbc);
    free(ufix);
    /* sources and solutions change gauge in the backend's transfers where it
     * can (the host copy bfix is then not needed) */
    if (st == WD_OK && sv->gfix && wd_spinor_gauge_supported(&sv->be)) {
        /* one rank that cannot hold it stops them all */
        st = wd_comm_agree(wd_spinor_gauge_create(&sv->be, &sv->tf, (const double *)sv->gfix));
        if (st == WD_OK) {
            free(sv->bfix);
            sv->bfix = NULL;
        }
    }
    if (s->csw != 0 && (st = wd_comm_agree(st)) == WD_OK)
        st = clover_build(sv, s->mass);
    return st;
}

/* The grid of a solve: settings.grid (zeros: automatic) over this run's
 * ranks.  Checked before anything is allocated; the same answer on every
 * rank. */
static wd_status solver_grid(wd_grid *g, const int dims[4], const wd_solver_settings *s)
{
    return wd_grid_make(g, dims, s->grid, wd_comm_size(), wd_comm_rank(), 4);
}

/* "site (x, y, z, t)" in global coordinates of local site `site` */
static const char *site_name(const wd_grid *g, long site)
{
    static _Thread_local char buf[96];
    int c[4];
    for (int mu = 0; mu < 4; ++mu) {
        c[mu] = g->origin[mu] + (int)(site % g->local[mu]);
        site /= g->local[mu];
    }
    snprintf(buf, sizeof buf, "site (%d, %d, %d, %d)", c[0], c[1], c[2], c[3]);
    return buf;
}

wd_status wd_solver_create(wd_solver **out, const double *gauge, const int dims[4],
                           const wd_solver_settings *s)
{
    if (!out)
        return wd_fail(WD_ERR_INVALID, "wd_solver_create: the solver pointer must not be NULL");
    *out = NULL;
    if (!gauge || !s || !dims)
        return wd_fail(WD_ERR_INVALID, "wd_solver_create: gauge, dims and settings must not be NULL");
    wd_status st = wd_check_dims(dims);
    if (st != WD_OK)
        return st;
    if ((st = check_settings(s)) != WD_OK)
        return st;
    wd_grid grid;
    if ((st = solver_grid(&grid, dims, s)) != WD_OK)
        return st;
    const size_t vol = wd_volume(grid.local);
    const long bad = wd_host_scan(gauge, vol * 72, NULL, &st);
    if (st == WD_OK && bad >= 0)
        st = wd_fail(WD_ERR_INVALID, "wd_solver_create: the gauge field holds NaN or Inf (%s, "
                     "direction %ld)", site_name(&grid, bad / 72), bad % 72 / 18);
    wd_solver *sv = st == WD_OK ? calloc(1, sizeof *sv) : NULL;
    if (st == WD_OK && !sv)
        st = wd_fail(WD_ERR_NOMEM, "wd_solver_create: cannot allocate the solver");
    if ((st = wd_comm_agree(st)) != WD_OK) {
        free(sv);
        return st;
    }
    sv->grid = grid;
    memcpy(sv->dims, grid.local, sizeof sv->dims);
    sv->fixed = *s;
    sv->gauge = gauge;
    if ((st = create(sv, gauge)) != WD_OK) {
        wd_solver_destroy(sv);
        return st;
    }
    *out = sv;
    return WD_OK;
}

/* Whether a role holds one right-hand side a lane (the others are single
 * scratch fields): the odd scratch of each operator is its tmp_n, which
 * the lanes' checks apply the outer operator with (one multi-RHS
 * application for every lane that checks in one iteration). */
static int per_lane(int role)
{
    return role != F_EVEN && role != F_EVEN_S;
}

/* The field of `role`, allocated at first use in `precision`, with
 * sv->lanes right-hand sides where the role has one a lane. */
static wd_field *field(wd_solver *sv, int role, int precision, wd_status *st)
{
    wd_field *f = &sv->f[role];
    const int n = per_lane(role) ? sv->lanes : 1;
    if (*st == WD_OK && !f->data)
        *st = n > 1 ? wd_field_create_multi(&sv->be, f, precision, n)
                    : wd_field_create(&sv->be, f, precision);
    return f;
}

static int accumulate_outer(const wd_solver_settings *s)
{
    return s->accumulator == WD_ACCUM_OUTER ||
           (s->accumulator == WD_ACCUM_AUTO && s->solver == WD_SOLVER_CG);
}

/*
 * Fields and operators of n lock-step lanes (n <= WD_SOLVE_MANY_GROUP;
 * one for a single solve) into ks[0..n); *odd is the outer odd scratch.
 * Lane i's fields are right-hand side i of the work fields (views in
 * sv->view[i]), as wd_krylov_run_many wants them; work fields with fewer
 * right-hand sides than n are made again with n.
 */
static wd_status setup_krylov(wd_solver *sv, const wd_solver_settings *s, wd_krylov *ks, int n,
                              wd_field **odd)
{
    const int cg = s->solver == WD_SOLVER_CG;
    const int po = s->precision, ps = s->sloppy_precision;
    const int shared = ps == po;
    const double kappa = 1.0 / (2.0 * (4.0 + s->mass));
    const wd_gauge *g_sloppy = sv->g_sloppy.data ? &sv->g_sloppy : &sv->g_outer;
    wd_status st = WD_OK;
    if (n > sv->lanes) {
        for (int i = 0; i < F_COUNT; ++i)
            wd_field_destroy(&sv->be, &sv->f[i]);
        sv->lanes = n;
    }
    field(sv, F_B, po, &st);
    field(sv, F_X, po, &st);
    field(sv, F_R, po, &st);
    field(sv, F_ODD, po, &st);
    field(sv, F_BO, po, &st);
    if (cg)
        field(sv, F_TE, po, &st);
    /* the accumulator lives in F_XS, created in the precision of the first
     * solve; a later solve that wants the other precision recreates it */
    const int pxs = accumulate_outer(s) ? po : ps;
    if (sv->f[F_XS].data && sv->f[F_XS].precision != pxs)
        wd_field_destroy(&sv->be, &sv->f[F_XS]);
    field(sv, F_XS, pxs, &st);
    if (!shared)
        field(sv, F_RS, ps, &st);
    field(sv, F_P, ps, &st);
    field(sv, F_V, ps, &st);
    if (!(shared && cg))
        field(sv, F_T, ps, &st);
    if (!cg)
        field(sv, F_R0, ps, &st);
    if (!shared)
        field(sv, F_ODD_S, ps, &st);
    if (s->csw != 0) {
        field(sv, F_EVEN, po, &st);
        if (!shared)
            field(sv, F_EVEN_S, ps, &st);
    }
    if (st != WD_OK)
        return st;
    for (int i = 0; i < n; ++i)
        for (int r = 0; r < F_COUNT; ++r)
            sv->view[i][r] = wd_field_view(&sv->f[r], per_lane(r) ? i : 0, 1);
    *odd = &sv->view[0][F_ODD];
    wd_field *odd_sloppy = &sv->view[0][shared ? F_ODD : F_ODD_S];
    memset(ks, 0, (size_t)n * sizeof *ks);
    if ((st = wd_eo_op_init(&ks->outer, &sv->be, &sv->g_outer, kappa, *odd, cg)) != WD_OK ||
        (st = wd_eo_op_init(&ks->sloppy, &sv->be, g_sloppy, kappa, odd_sloppy, cg)) != WD_OK)
        return st;
    ks->sloppy.tmp_n = &sv->f[shared ? F_ODD : F_ODD_S];
    ks->outer.tmp_n = &sv->f[F_ODD];
    if (s->csw != 0) {
        const int sym = s->clover_form == WD_CLOVER_SYMMETRIC, lvl = shared ? 0 : 1;
        wd_field *even = &sv->view[0][F_EVEN];
        wd_field *even_s = shared ? even : &sv->view[0][F_EVEN_S];
        if ((st = wd_eo_op_clover(&ks->outer, sym ? NULL : &sv->cl_a[0], &sv->cl_ainv[0], sym,
                                  even, cg)) != WD_OK ||
            (st = wd_eo_op_clover(&ks->sloppy, sym ? NULL : &sv->cl_a[lvl], &sv->cl_ainv[lvl],
                                  sym, even_s, cg)) != WD_OK)
            return st;
    }
    for (int i = 0; i < n; ++i) {
        wd_krylov *k = &ks[i];
        wd_field *f = sv->view[i];
        k->outer = ks->outer;
        k->sloppy = ks->sloppy;
        k->b = &f[F_B];
        k->x = &f[F_X];
        k->r = &f[F_R];
        k->te = cg ? &f[F_TE] : NULL;
        k->xs = &f[F_XS];
        k->rs = shared ? k->r : &f[F_RS];
        k->p = &f[F_P];
        k->v = &f[F_V];
        k->t = shared && cg ? k->te : &f[F_T];
        k->r0 = cg ? NULL : &f[F_R0];
        k->be = &sv->be;
        k->solver = s->solver;
        k->mixed = s->mixed;
        k->delta = s->delta;
        k->tol_inner = s->tol_inner;
        k->divergence = s->divergence;
        k->max_stall = s->max_stall;
        k->max_iter = s->max_iter;
        k->no_fused = fused_off();
        k->verbosity = sv->grid.rank == 0 ? s->verbosity : 0; /* rank 0 speaks */
        /* lock-step lanes do not report progress: one callback cannot tell them apart */
        k->progress = n == 1 ? s->progress : NULL;
        k->progress_arg = s->progress_arg;
    }
    return WD_OK;
}

/* the gauge transformation of the transfers: where the solve runs gauge-
 * fixed and the backend holds it */
static const wd_spinor_gauge *spinor_gauge(const wd_solver *sv)
{
    return sv->tf.data ? &sv->tf : NULL;
}

/* b'_e = (b_e + kappa D_eo b_o) / (4+m) into ks->b, x = 0; clover (see the
 * top): t_o = A_oo^-1 b_o, b'_e = A_ee^-1 (b_e + kappa D_eo t_o) / (4+m) in
 * the symmetric form, without A_ee^-1 in the asymmetric one.  The Krylov
 * target and scale for bnorm = ||b||. */
static wd_status prepare(wd_solver *sv, wd_krylov *ks, wd_field *odd, wd_field *bo,
                         const double *b_run, int on_device, const wd_solver_settings *s,
                         double bnorm)
{
    wd_backend *be = &sv->be;
    const double kappa = ks->outer.kappa, inv = 1.0 / (4.0 + s->mass);
    const wd_eo_op *op = &ks->outer;
    wd_status st;
    if ((st = wd_upload_pair(be, ks->b, bo, b_run, on_device, spinor_gauge(sv))) != WD_OK)
        return st;
    const wd_field *b_o = bo;
    if (op->ainv) {
        if ((st = wd_dslash_clover(be, op->cl_site, odd, NULL, op->ainv, bo, NULL, 0, 1)) != WD_OK)
            return st;
        b_o = odd;
    }
    if ((st = wd_dslash(be, op->xpay[0], ks->r, &sv->g_outer, b_o, ks->b, kappa, 0)) != WD_OK)
        return st;
    if (op->ainv && op->symmetric &&
        (st = wd_dslash_clover(be, op->cl_site, ks->b, NULL, op->ainv, ks->r, NULL, 0, 0)) !=
            WD_OK)
        return st;
    if (!(op->ainv && op->symmetric))
        wd_blas_copy(be, ks->b, ks->r);
    wd_blas_ax(be, inv, ks->b);
    wd_blas_zero(be, ks->x);
    ks->target = s->tol * bnorm * inv;
    ks->scale = (4.0 + s->mass) / bnorm;
    return be->error;
}

/* x_o = b_o / (4+m) + kappa D_oe x_e (clover: A_oo^-1 applied to both
 * terms) with b_o from prepare (bo), download x, undo the gauge fixing. */
static wd_status reconstruct(wd_solver *sv, wd_krylov *ks, wd_field *odd, const wd_field *bo,
                             int on_device, const wd_solver_settings *s, double *x)
{
    wd_backend *be = &sv->be;
    const wd_eo_op *op = &ks->outer;
    wd_status st;
    if (op->ainv) {
        if ((st = wd_dslash_clover(be, op->cl_site, odd, NULL, op->ainv, bo, NULL, 0, 1)) != WD_OK)
            return st;
    } else {
        wd_blas_copy(be, odd, bo);
    }
    wd_blas_ax(be, 1.0 / (4.0 + s->mass), odd);
    if ((st = wd_dslash_clover(be, op->ainv ? op->cl_xpay[0] : op->xpay[0], ks->r, &sv->g_outer,
                               op->ainv, ks->x, odd, op->kappa, 1)) != WD_OK ||
        (st = wd_download_pair(be, x, ks->x, ks->r, on_device, spinor_gauge(sv))) != WD_OK)
        return st;
    if (be->error != WD_OK)
        return be->error;
    if (sv->gfix && !sv->tf.data)
        wd_spinor_transform((double complex *)x, sv->gfix, sv->dims, 1);
    return WD_OK;
}

/* b in the gauge the solve runs in (sv->bfix, one source at a time), or
 * b itself where the backend's transfer changes the gauge */
static const double *source_run(wd_solver *sv, const double *b)
{
    if (!sv->gfix || sv->tf.data)
        return b;
    memcpy(sv->bfix, b, wd_volume(sv->dims) * 12 * sizeof *sv->bfix);
    wd_spinor_transform(sv->bfix, sv->gfix, sv->dims, 0);
    return (const double *)sv->bfix;
}

/* where a solve's arrays live: B_DEVICE b, X_DEVICE x in device memory
 * (the caller's, or b staged there by solve_single); else host memory */
enum { B_DEVICE = 1, X_DEVICE = 2, ON_DEVICE = B_DEVICE | X_DEVICE };

/*
 * n solves on the backend in lock step (n = 1: a single solve): sources
 * b[i] (the caller's gauge) to x[i], each where `on_device` says (B_DEVICE,
 * X_DEVICE).  Returns a failure that
 * is not a solver outcome (every lane stops); otherwise lane i's outcome
 * in lane_st[i] with its message in ks[i].message.  Each lane's seconds,
 * solve_seconds and flops are the group's divided by n.
 */
static wd_status run_mg(wd_solver *sv, double *const x[], const double *const b[], int n,
                        int on_device, const wd_solver_settings *s, wd_solver_stats *stats[],
                        wd_status lane_st[], wd_krylov *ks, const int label[]);

static wd_status run_lanes(wd_solver *sv, double *const x[], const double *const b[], int n,
                           int on_device, const wd_solver_settings *s, const double bnorm[],
                           wd_solver_stats *stats[], wd_status lane_st[], wd_krylov *ks,
                           const int label[])
{
    if (s->solver == WD_SOLVER_MG)
        return run_mg(sv, x, b, n, on_device, s, stats, lane_st, ks, label);
    const double t_start = now_s();
    wd_backend *be = &sv->be;
    wd_field *odd;
    be->bytes_peak = be->bytes_allocated;
    be->error = WD_OK;
    wd_status st = setup_krylov(sv, s, ks, n, &odd);
    for (int i = 0; i < n && st == WD_OK; ++i) {
        st = prepare(sv, &ks[i], odd, &sv->view[i][F_BO],
                     (on_device & B_DEVICE) ? b[i] : source_run(sv, b[i]), on_device & B_DEVICE,
                     s, bnorm[i]);
        if (label)
            snprintf(ks[i].tag, sizeof ks[i].tag, " [rhs %d]", label[i]);
    }
    /* a field or a transfer can fail on one rank alone: every rank enters
     * the iteration, or none */
    if (sv->grid.size > 1)
        st = wd_comm_agree(st);
    if (st != WD_OK)
        return st;
    const double flops0 = be->flops, t0 = now_s();
    /* on a grid its status and be->error are the same on every rank */
    st = wd_krylov_run_many(ks, n, lane_st);
    const double t1 = now_s();
    const double flops = be->flops - flops0;
    if (st == WD_OK && be->error != WD_OK)
        st = be->error;
    if (st == WD_OK) {
        for (int i = 0; i < n && st == WD_OK; ++i)
            st = reconstruct(sv, &ks[i], odd, &sv->view[i][F_BO], (on_device & X_DEVICE) != 0,
                             s, x[i]);
        /* the residual check that follows is collective */
        if (sv->grid.size > 1)
            st = wd_comm_agree(st);
    }
    if (st != WD_OK)
        return st;
    const double t2 = now_s();
    for (int i = 0; i < n; ++i) {
        wd_solver_stats *sti = stats[i];
        sti->seconds = (t2 - t_start) / n;
        sti->solve_seconds = (t1 - t0) / n;
        sti->flops = flops / n;
        sti->sloppy_iterations = ks[i].k;
        sti->updates = ks[i].l;
        sti->iterations = ks[i].k + ks[i].l;
        sti->solver_residual = ks[i].residual * ks[i].scale;
        sti->bytes_allocated = be->bytes_peak;
        sti->bytes_gauge = sv->g_outer.bytes + sv->g_sloppy.bytes;
    }
    if (s->verbosity >= 1 && sv->grid.rank == 0)
        fprintf(stderr, "wdirac solver: %d right-hand side%s: host b to device and source "
                "preparation %.4f s, Krylov %.4f s, reconstruction and device to host x %.4f s\n",
                n, n > 1 ? "s" : "", t0 - t_start, t1 - t0, t2 - t1);
    return WD_OK;
}

/* run_lanes for WD_SOLVER_MG, on host arrays: the n right-hand sides
 * through the multigrid's solve_many (its lock step, mg_solve.c), or one
 * after another where the hook has none */
static wd_status run_mg(wd_solver *sv, double *const x[], const double *const b[], int n,
                        int on_device, const wd_solver_settings *s, wd_solver_stats *stats[],
                        wd_status lane_st[], wd_krylov *ks, const int label[])
{
    if (on_device)
        return wd_fail(WD_ERR_INVALID, "solver WD_SOLVER_MG: the multigrid takes host arrays "
                       "(wd_solver_solve, wd_solver_solve_many), not device arrays");
    for (int i = 0; i < n; ++i) {
        ks[i].tag[0] = 0;
        if (label)
            snprintf(ks[i].tag, sizeof ks[i].tag, " [rhs %d]", label[i]);
    }
    if (sv->mg.solve_many && n > 1) {
        char *msg[WD_SOLVE_MANY_GROUP];
        for (int i = 0; i < n; ++i)
            msg[i] = ks[i].message;
        return sv->mg.solve_many(sv->mg.state, x, b, n, s, stats, lane_st, msg,
                                 sizeof ks[0].message);
    }
    for (int i = 0; i < n; ++i) {
        lane_st[i] = sv->mg.solve(sv->mg.state, x[i], b[i], s, stats[i]);
        snprintf(ks[i].message, sizeof ks[i].message, "%s",
                 lane_st[i] == WD_OK ? "" : wd_last_error());
        if (lane_st[i] != WD_OK && !wd_solve_outcome(lane_st[i]))
            return lane_st[i];
    }
    return WD_OK;
}

wd_status wd_solver_host_view(wd_solver *sv, const wd_solver_settings *s, wd_solver_host *h)
{
    wd_status st = WD_OK;
    if (s->csw != 0 && s->mass != sv->clover_mass)
        st = clover_build(sv, s->mass);
    const wd_solver_settings *f = &sv->fixed;
    const int lvl = f->sloppy_precision == f->precision ? 0 : 1;
    const int sym = f->clover_form == WD_CLOVER_SYMMETRIC;
    h->gauge = sv->gauge;
    h->clover = s->csw != 0 ? sv->clover_host : NULL;
    memcpy(h->dims, sv->dims, sizeof h->dims);
    h->grid = &sv->grid;
    h->be = &sv->be;
    h->g_outer = &sv->g_outer;
    h->g_sloppy = sv->g_sloppy.data ? &sv->g_sloppy : &sv->g_outer;
    h->ainv_outer = s->csw != 0 ? &sv->cl_ainv[0] : NULL;
    h->ainv_sloppy = s->csw != 0 ? &sv->cl_ainv[lvl] : NULL;
    h->a_outer = s->csw != 0 && !sym ? &sv->cl_a[0] : NULL;
    h->a_sloppy = s->csw != 0 && !sym ? &sv->cl_a[lvl] : NULL;
    h->symmetric = sym;
    h->gauge_fixed = sv->gfix != NULL;
    return st;
}

void wd_solver_attach_mg(wd_solver *sv, const wd_solver_mg_hook *hook)
{
    if (sv->mg.state && sv->mg.destroy)
        sv->mg.destroy(sv->mg.state);
    memset(&sv->mg, 0, sizeof sv->mg);
    if (hook)
        sv->mg = *hook;
}

/* One single-RHS pass on the backend (a solve, or a refinement round's
 * correction solve). */
static wd_status solve_pass(wd_solver *sv, double *x, const double *b, int on_device,
                            const wd_solver_settings *s, double bnorm, wd_solver_stats *stats)
{
    wd_krylov ks;
    wd_status lane_st;
    const wd_status st = run_lanes(sv, &x, &b, 1, on_device, s, &bnorm, &stats, &lane_st, &ks, NULL);
    if (st != WD_OK)
        return st;
    return lane_st == WD_OK ? WD_OK : wd_fail(lane_st, "%s", ks.message);
}

/*
 * Iterative refinement, when the Krylov solve converged on the Schur system
 * but the full residual, measured in float64, is still above tol: rounding
 * in the outer precision and in the odd-site reconstruction can leave it a
 * few per cent above where the Schur residual stopped just below (pure
 * single precision at tol 1e-6, for instance).  Solve M d = b - M x to half
 * the missing factor, x += d, measure again; at most REFINE_ROUNDS times,
 * then WD_ERR_STAGNATED with the best x.  Iterations, flops and seconds add
 * up in stats (a round's seconds: b - M x, the correction solve and the
 * update; the check after it is not counted, as the first one is not).
 */
enum { REFINE_ROUNDS = 2 };

static wd_status refine(wd_solver *sv, double *x, const double *b, const wd_solver_settings *s,
                        double bnorm, wd_solver_stats *stats, char *msg, size_t msg_size)
{
    const size_t n = wd_volume(sv->dims) * 24;
    double *r = malloc(n * sizeof *r), *d = malloc(n * sizeof *d);
    wd_status st = WD_OK;
    if (!r || !d)
        st = wd_fail(WD_ERR_NOMEM, "wd_solver_solve: cannot allocate %zu bytes for the "
                     "refinement of x", 2 * n * sizeof *r);
    for (int round = 0; st == WD_OK && stats->true_residual > s->tol; ++round) {
        if (round == REFINE_ROUNDS || stats->iterations >= s->max_iter) {
            st = wd_fail(WD_ERR_STAGNATED, "solver stagnated: the true residual %.3e stayed above "
                         "tol %.3e after %d refinement rounds of the converged Schur solve",
                         stats->true_residual, s->tol, round);
            break;
        }
        const double round_t0 = now_s();
        double res;
        if ((st = wd_host_residual(&sv->hb, x, sv->gauge, sv->clover_host, b, s->mass, s->tbc,
                                    &res, r)) != WD_OK)
            break;
        wd_solver_settings sr = *s;
        sr.tol = 0.5 * s->tol / res;
        sr.max_iter = s->max_iter - stats->iterations;
        wd_solver_stats sub;
        memset(&sub, 0, sizeof sub);
        st = solve_pass(sv, d, r, 0, &sr, res * bnorm, &sub);
        stats->iterations += sub.iterations;
        stats->sloppy_iterations += sub.sloppy_iterations;
        stats->updates += sub.updates;
        stats->flops += sub.flops;
        stats->solve_seconds += sub.solve_seconds;
        if (sub.bytes_allocated > stats->bytes_allocated)
            stats->bytes_allocated = sub.bytes_allocated;
        if (st != WD_OK && !wd_solve_outcome(st))
            break;
        /* keep the better x: a failed correction solve returns its best d,
         * which may still not help */
        for (size_t i = 0; i < n; ++i)
            x[i] += d[i];
        stats->seconds += now_s() - round_t0;
        double after;
        const wd_status rst = wd_host_residual(&sv->hb, x, sv->gauge, sv->clover_host, b, s->mass,
                                               s->tbc, &after, NULL);
        if (rst != WD_OK) {
            st = rst;
            break;
        }
        if (after <= stats->true_residual)
            stats->true_residual = after;
        else
            for (size_t i = 0; i < n; ++i)
                x[i] -= d[i];
    }
    if (st != WD_OK)
        snprintf(msg, msg_size, "%s", wd_last_error());
    free(r);
    free(d);
    return st;
}

/*
 * After the Krylov solve of one right-hand side (solve_st, its message
 * msg): the float64 true residual, the refinement, the summary line.
 * Returns the solve's status (the message set again); a failure that is
 * no solver outcome zeroes x.
 */
static wd_status conclude(wd_solver *sv, double *x, const double *b, const wd_solver_settings *s,
                          double bnorm, wd_solver_stats *stats, wd_status solve_st,
                          const char *msg_in, const char *tag)
{
    const size_t vol = wd_volume(sv->dims);
    char msg[600];
    snprintf(msg, sizeof msg, "%s", msg_in);
    wd_status st;
    /* x and b NULL: the caller measured stats->true_residual (on the device)
     * and no refinement is due */
    if (x && (st = wd_host_residual(&sv->hb, x, sv->gauge, sv->clover_host, b, s->mass, s->tbc,
                                    &stats->true_residual, NULL)) != WD_OK)
        return st;
    if (x && solve_st == WD_OK && stats->true_residual > s->tol) {
        solve_st = refine(sv, x, b, s, bnorm, stats, msg, sizeof msg);
        if (solve_st != WD_OK && !wd_solve_outcome(solve_st)) {
            memset(x, 0, vol * 24 * sizeof *x);
            return wd_fail(solve_st, "%s", msg);
        }
    }
    stats->gflops = stats->solve_seconds > 0 ? stats->flops / stats->solve_seconds * 1e-9 : 0;
    if (s->verbosity >= 1 && sv->grid.rank == 0)
        fprintf(stderr, "wdirac solver%s: %s, %d iterations (%d + %d updates), true residual "
                "%.3e, %.3f s, %.2f Gflops, %zu bytes\n", tag, wd_status_string(solve_st),
                stats->iterations, stats->sloppy_iterations, stats->updates,
                stats->true_residual, stats->seconds, stats->gflops, stats->bytes_allocated);
    if (solve_st != WD_OK)
        wd_fail(solve_st, "%s", msg);
    return solve_st;
}

/* The checks of a solve's settings against the solver's; *st on failure. */
static wd_status check_solve_settings(const wd_solver *sv, const wd_solver_settings *s)
{
    wd_status st = check_settings(s);
    if (st == WD_OK)
        st = check_fixed(&sv->fixed, s);
    if (st == WD_OK && s->solver == WD_SOLVER_MG && !sv->mg.state)
        st = wd_fail(WD_ERR_INVALID, "solver WD_SOLVER_MG: this solver has no multigrid; call "
                     "wd_solver_mg_setup first");
    return st;
}

/*
 * The float64 true residual on the GPU, where the outer level can do it
 * exactly: double fields and links, Wilson (b - M x with the outer gauge
 * field's double links, M = (4+m)(1 - kappa D) per parity), no gauge
 * fixing; used by every solve on the CUDA backend (host arrays are sent up
 * again: two transfers, against the host's float64 M x).  Otherwise (single
 * or half outer level, clover), and when the refinement is due, the host
 * check: device arrays (wd_solver_solve_device) are then read back to the
 * host, and x written back.
 */
static int device_residual_exact(const wd_solver_settings *s)
{
    return s->precision == 8 && s->csw == 0;
}

static wd_status device_residual(wd_solver *sv, const double *x, const double *b, int on_device,
                                 const wd_solver_settings *s, double bnorm, double *res)
{
    wd_backend *be = &sv->be;
    wd_krylov ks;
    wd_field *odd;
    wd_status st = setup_krylov(sv, s, &ks, 1, &odd);
    if (st != WD_OK)
        return st;
    wd_field *f = sv->view[0];
    wd_field *xe = &f[F_X], *xo = &f[F_ODD], *be_ = &f[F_B], *bo = &f[F_BO], *t = &f[F_R];
    const double kappa = ks.outer.kappa, m4 = 4.0 + s->mass;
    double part[2] = {0, 0};
    if ((st = wd_upload_pair(be, xe, xo, x, on_device, NULL)) != WD_OK ||
        (st = wd_upload_pair(be, be_, bo, b, on_device, NULL)) != WD_OK)
        return st;
    for (int p = 0; p < 2 && st == WD_OK; ++p) {
        /* t = x_p - kappa D x_p', then b_p - (4+m) t and its norm */
        st = wd_dslash(be, ks.outer.xpay[0], t, &sv->g_outer, p ? xe : xo, p ? xo : xe, -kappa, p);
        if (st == WD_OK)
            part[p] = wd_blas_axpy_norm2(be, -m4, t, p ? bo : be_);
    }
    if (st == WD_OK && be->error != WD_OK)
        st = be->error;
    *res = sqrt(part[0] + part[1]) / bnorm;
    return st;
}

static wd_status zero_device(wd_solver *sv, double *x)
{
    return wd_cuda_memset(x, 0, wd_volume(sv->dims) * 24 * sizeof *x);
}

/* x = 0: host or device memory */
static wd_status zero_x(wd_solver *sv, double *x, int on_device)
{
    if (on_device)
        return zero_device(sv, x);
    memset(x, 0, wd_volume(sv->dims) * 24 * sizeof *x);
    return WD_OK;
}

/*
 * After the Krylov solve of one right-hand side (solve_st, its message
 * msg): the float64 true residual on the GPU where it is exact there, else
 * (and for a refinement) on the host (conclude; device arrays read back
 * and x written back), the summary line.  Returns the solve's status; a
 * failure that is no solver outcome zeroes x.
 */
static wd_status finish(wd_solver *sv, double *x, const double *b, int on_device,
                        const wd_solver_settings *s, double bnorm, wd_solver_stats *stats,
                        wd_status solve_st, const char *msg, const char *tag)
{
    wd_status st;
    if (sv->be.ops->scan_device && device_residual_exact(s) && !sv->gfix) {
        if ((st = device_residual(sv, x, b, on_device, s, bnorm, &stats->true_residual)) !=
            WD_OK) {
            zero_x(sv, x, on_device);
            return st;
        }
        if (solve_st != WD_OK || stats->true_residual <= s->tol)
            return conclude(sv, NULL, NULL, s, bnorm, stats, solve_st, msg, tag);
    }
    if (!on_device)
        return conclude(sv, x, b, s, bnorm, stats, solve_st, msg, tag);
    const size_t bytes = wd_volume(sv->dims) * 24 * sizeof(double);
    double *hx = malloc(bytes), *hb = malloc(bytes);
    st = hx && hb ? WD_OK
                  : wd_fail(WD_ERR_NOMEM, "cannot allocate %zu bytes for the host residual check "
                            "of device arrays", 2 * bytes);
    if (st == WD_OK && (st = wd_cuda_d2h(hx, x, bytes)) == WD_OK)
        st = wd_cuda_d2h(hb, b, bytes);
    if (st == WD_OK) {
        char keep[600];
        solve_st = conclude(sv, hx, hb, s, bnorm, stats, solve_st, msg, tag);
        snprintf(keep, sizeof keep, "%s", wd_last_error());
        st = wd_cuda_h2d(x, hx, bytes);
        if (st == WD_OK && solve_st != WD_OK)
            wd_fail(solve_st, "%s", keep);
    }
    free(hx);
    free(hb);
    if (st != WD_OK) {
        zero_device(sv, x);
        return st;
    }
    return solve_st;
}

/*
 * One right-hand side, x and b in host memory or (device) both in device
 * memory.  The source is scanned (NaN, norm) where it will be read: host b
 * on a backend that stages host arrays (CUDA) is copied up first, and the
 * scan and the solve read that copy; x comes back to the host.  Seconds
 * from the call to x in the caller's memory; the float64 residual check
 * (finish) is not counted (a refinement adds its rounds' time).
 */
static wd_status solve_single(wd_solver *sv, double *x, const double *b, int device,
                              const wd_solver_settings *s, wd_solver_stats *stats)
{
    const char *fn = device ? "wd_solver_solve_device" : "wd_solver_solve";
    const double t0 = now_s();
    if (!sv || !x || !b || !s)
        return wd_fail(WD_ERR_INVALID, "%s: solver, x, b and settings must not be NULL", fn);
    if (x == b)
        return wd_fail(WD_ERR_INVALID, "%s: x must not alias b", fn);
    wd_backend *be = &sv->be;
    if (device && !be->ops->scan_device)
        return wd_fail(WD_ERR_INVALID, "%s: the %s backend takes host arrays; device arrays need "
                       "a solver on the CUDA backend", fn, be->ops->name);
    const size_t vol = wd_volume(sv->dims);
    /* the caller's device arrays may come from work on other streams */
    wd_status st = device ? wd_cuda_sync() : WD_OK;
    if (st == WD_OK)
        st = check_solve_settings(sv, s);
    int where = device ? ON_DEVICE : 0;
    const double *b_run = b;
    double bnorm2 = 0;
    long bad = -1;
    if (st == WD_OK && !device && be->ops->stage_host && be->ops->scan_device &&
        s->solver != WD_SOLVER_MG) {
        st = be->ops->stage_host(be, b, &b_run);
        where = B_DEVICE;
    }
    if (where & B_DEVICE) {
        if (st == WD_OK)
            st = be->ops->scan_device(be, b_run, vol * 24, &bnorm2, &bad);
        /* every rank reaches the sum, or none */
        if ((st = wd_comm_agree(st)) == WD_OK)
            st = wd_comm_sum(&bnorm2, 1);
    } else if (st == WD_OK) {
        bad = wd_host_scan(b, vol * 24, &bnorm2, &st);
    }
    if (st == WD_OK && bad >= 0)
        st = wd_fail(WD_ERR_INVALID, "%s: the source b holds NaN or Inf (%s, spin %ld, colour "
                     "%ld)", fn, site_name(&sv->grid, bad / 24), bad % 24 / 6, bad % 6 / 2);
    /* x is written whole by a solve (both parities downloaded); zeroed here
     * only where nothing else writes it */
    if ((st = wd_comm_agree(st)) != WD_OK || bnorm2 == 0) {
        const wd_status zst = zero_x(sv, x, device);
        stats->seconds = now_s() - t0;
        return st != WD_OK ? st : zst;
    }
    const double bnorm = sqrt(bnorm2);
    /* the clover field depends on the mass (A = 1 + c_sw T / (4+m)): a
     * rebuild is setup, not solve time */
    double t_solve = t0;
    if (s->csw != 0 && s->mass != sv->clover_mass) {
        const double t_build = now_s();
        st = clover_build(sv, s->mass);
        stats->setup_seconds = now_s() - t_build;
        t_solve += stats->setup_seconds;
        if (st != WD_OK) {
            zero_x(sv, x, device);
            return st;
        }
    }
    /* the clover build does not touch the staged copy of b */
    wd_status solve_st = solve_pass(sv, x, b_run, where, s, bnorm, stats);
    stats->seconds = now_s() - t_solve;
    if (solve_st != WD_OK && !wd_solve_outcome(solve_st)) {
        zero_x(sv, x, device);
        return solve_st;
    }
    /* keep the solver's message (if any) across the residual check */
    char msg[512];
    snprintf(msg, sizeof msg, "%s", wd_last_error());
    return finish(sv, x, b, device, s, bnorm, stats, solve_st, msg, "");
}

wd_status wd_solver_solve(wd_solver *sv, double *x, const double *b, const wd_solver_settings *s,
                          wd_solver_stats *stats)
{
    wd_solver_stats local;
    if (!stats)
        stats = &local;
    memset(stats, 0, sizeof *stats);
    return stats->status = solve_single(sv, x, b, 0, s, stats);
}

wd_status wd_solver_solve_device(wd_solver *sv, double *x, const double *b,
                                 const wd_solver_settings *s, wd_solver_stats *stats)
{
    wd_solver_stats local;
    if (!stats)
        stats = &local;
    memset(stats, 0, sizeof *stats);
    return stats->status = solve_single(sv, x, b, 1, s, stats);
}

/* a failure of the whole batch: every x zero, every status st */
static void zero_all(wd_solver *sv, double *const x[], int n, int on_device,
                     wd_solver_stats *stats, wd_status st)
{
    for (int i = 0; i < n; ++i) {
        zero_x(sv, x[i], on_device);
        if (stats)
            stats[i].status = st;
    }
}

/* wd_solver_solve_many (fn names it) on host arrays, or on device arrays */
static wd_status solve_many(wd_solver *sv, double *const x[], const double *const b[], int n,
                            int on_device, const wd_solver_settings *s, wd_solver_stats stats[],
                            const char *fn)
{
    if (stats && n > 0)
        memset(stats, 0, (size_t)n * sizeof *stats);
    if (!sv || !x || !b || !s || n < 0)
        return wd_fail(WD_ERR_INVALID, "%s: solver, x, b and settings must not be NULL and n (%d) "
                       "not negative", fn, n);
    for (int i = 0; i < n; ++i) {
        if (!x[i] || !b[i])
            return wd_fail(WD_ERR_INVALID, "%s: x[%d] or b[%d] is NULL", fn, i, i);
        for (int j = 0; j < n; ++j)
            if (x[i] == b[j] || (j != i && x[i] == x[j]))
                return wd_fail(WD_ERR_INVALID, "%s: x[%d] aliases %s[%d]", fn, i,
                               x[i] == b[j] ? "b" : "x", j);
    }
    wd_backend *be = &sv->be;
    if (on_device && !be->ops->scan_device)
        return wd_fail(WD_ERR_INVALID, "%s: the %s backend takes host arrays; device arrays need "
                       "a solver on the CUDA backend", fn, be->ops->name);
    const size_t reals = wd_volume(sv->dims) * 24;
    wd_status st = on_device ? wd_cuda_sync() : WD_OK;
    if (st == WD_OK)
        st = check_solve_settings(sv, s);
    if (st != WD_OK) {
        zero_all(sv, x, n, on_device, stats, st);
        return st;
    }
    /* every source is checked before anything is solved */
    double *bnorm = malloc((size_t)(n ? n : 1) * sizeof *bnorm);
    int *idx = malloc((size_t)(n ? n : 1) * sizeof *idx);
    wd_krylov *ks = malloc(WD_SOLVE_MANY_GROUP * sizeof *ks);
    wd_solver_stats *own = stats ? NULL : calloc((size_t)(n ? n : 1), sizeof *own);
    if (!bnorm || !idx || !ks || (!stats && !own))
        st = wd_fail(WD_ERR_NOMEM, "%s: cannot allocate the bookkeeping of %d right-hand sides",
                     fn, n);
    if (!stats)
        stats = own;
    st = wd_comm_agree(st);
    for (int i = 0; i < n && st == WD_OK; ++i) {
        double norm2 = 0;
        long bad = -1;
        if (!on_device)
            bad = wd_host_scan(b[i], reals, &norm2, &st);
        else if ((st = be->ops->scan_device(be, b[i], reals, &norm2, &bad)) == WD_OK)
            st = wd_comm_sum(&norm2, 1);
        if (st == WD_OK && bad >= 0)
            st = wd_fail(WD_ERR_INVALID, "%s: source %d holds NaN or Inf (%s, spin %ld, colour "
                         "%ld); nothing solved", fn, i, site_name(&sv->grid, bad / 24),
                         bad % 24 / 6, bad % 6 / 2);
        bnorm[i] = sqrt(norm2);
        st = wd_comm_agree(st);
    }
    if (st == WD_OK && s->csw != 0 && s->mass != sv->clover_mass)
        st = clover_build(sv, s->mass);
    if (st != WD_OK) {
        zero_all(sv, x, n, on_device, stats, st);
        goto out;
    }
    /* zero sources: x = 0 at once; the others in groups of lanes */
    int m = 0;
    for (int i = 0; i < n; ++i) {
        if (bnorm[i] == 0)
            zero_x(sv, x[i], on_device);
        else
            idx[m++] = i;
    }
    int first_fail = -1;
    wd_status fail_st = WD_OK;
    char fail_msg[600] = "";
    for (int g0 = 0; g0 < m; g0 += WD_SOLVE_MANY_GROUP) {
        const int gn = m - g0 < WD_SOLVE_MANY_GROUP ? m - g0 : WD_SOLVE_MANY_GROUP;
        double *gx[WD_SOLVE_MANY_GROUP];
        const double *gb[WD_SOLVE_MANY_GROUP];
        double gnorm[WD_SOLVE_MANY_GROUP];
        wd_solver_stats *gst[WD_SOLVE_MANY_GROUP];
        wd_status lane_st[WD_SOLVE_MANY_GROUP];
        const int *label = idx + g0;
        for (int q = 0; q < gn; ++q) {
            const int i = idx[g0 + q];
            gx[q] = x[i];
            gb[q] = b[i];
            gnorm[q] = bnorm[i];
            gst[q] = &stats[i];
        }
        st = run_lanes(sv, gx, gb, gn, on_device ? ON_DEVICE : 0, s, gnorm, gst, lane_st, ks,
                       label);
        for (int q = 0; q < gn && st == WD_OK; ++q) {
            const int i = idx[g0 + q];
            const wd_status r = finish(sv, x[i], b[i], on_device, s, gnorm[q], &stats[i],
                                       lane_st[q], ks[q].message, ks[q].tag);
            stats[i].status = r;
            if (r != WD_OK && !wd_solve_outcome(r))
                st = r;
            else if (r != WD_OK && first_fail < 0) {
                first_fail = i;
                fail_st = r;
                snprintf(fail_msg, sizeof fail_msg, "%s", wd_last_error());
            }
        }
        if (st != WD_OK) {
            zero_all(sv, x, n, on_device, stats, st);
            goto out;
        }
    }
    if (first_fail >= 0)
        st = wd_fail(fail_st, "%s: right-hand side %d: %s", fn, first_fail, fail_msg);
out:
    free(bnorm);
    free(idx);
    free(ks);
    free(own);
    return st;
}

wd_status wd_solver_solve_many(wd_solver *sv, double *const x[], const double *const b[], int n,
                               const wd_solver_settings *s, wd_solver_stats stats[])
{
    return solve_many(sv, x, b, n, 0, s, stats, "wd_solver_solve_many");
}

wd_status wd_solver_solve_many_device(wd_solver *sv, double *const x[], const double *const b[],
                                      int n, const wd_solver_settings *s, wd_solver_stats stats[])
{
    return solve_many(sv, x, b, n, 1, s, stats, "wd_solver_solve_many_device");
}

static wd_status solve_once(double *x, const double *gauge, const double *b, const int dims[4],
                            const wd_solver_settings *s, wd_solver_stats *stats)
{
    const double t0 = now_s();
    if (!x || !gauge || !b || !s || !dims)
        return wd_fail(WD_ERR_INVALID, "wd_solve: x, gauge, b, dims and settings must not be NULL");
    wd_status st = wd_check_dims(dims);
    if (st != WD_OK)
        return st;
    if (x == b)
        return wd_fail(WD_ERR_INVALID, "wd_solve: x must not alias b");
    /* x has the size of this rank's block, known once the grid is */
    wd_grid grid;
    if ((st = solver_grid(&grid, dims, s)) != WD_OK)
        return st;
    const size_t vol = wd_volume(grid.local);
    if ((st = check_settings(s)) != WD_OK) {
        memset(x, 0, vol * 24 * sizeof *x);
        return st;
    }
    /* the source's checks first: a bad b costs no gauge upload */
    const long bad = wd_host_scan(b, vol * 24, NULL, &st);
    if (st == WD_OK && bad >= 0)
        st = wd_fail(WD_ERR_INVALID, "wd_solve: the source b holds NaN or Inf (%s, spin %ld, "
                     "colour %ld)", site_name(&grid, bad / 24), bad % 24 / 6, bad % 6 / 2);
    if ((st = wd_comm_agree(st)) != WD_OK) {
        memset(x, 0, vol * 24 * sizeof *x);
        return st;
    }
    wd_solver *sv;
    if ((st = wd_solver_create(&sv, gauge, dims, s)) != WD_OK) {
        memset(x, 0, vol * 24 * sizeof *x);
        return st;
    }
    const double setup = now_s() - t0;
    st = wd_solver_solve(sv, x, b, s, stats);
    /* the message of a failed solve survives the destroy */
    wd_solver_destroy(sv);
    stats->setup_seconds = setup;
    return st;
}

wd_status wd_solve(double *x, const double *gauge, const double *b, const int dims[4],
                   const wd_solver_settings *s, wd_solver_stats *stats)
{
    wd_solver_stats local;
    if (!stats)
        stats = &local;
    memset(stats, 0, sizeof *stats);
    const wd_status st = solve_once(x, gauge, b, dims, s, stats);
    stats->status = st;
    return st;
}
