/*
 * test_mg_grid: the multigrid (runtime/multigrid/) on a process grid,
 * against the same computation on the whole lattice by one process.
 *
 *   mpirun -n N test_mg_grid [--seed N] [--backend cpu|cuda]
 *           (default seed: the time, printed; N = 1, 2 or 4; on one
 *           process the grid is 1x1x1x1 with every dimension marked
 *           partitioned, so that each face goes round to the process
 *           itself through the same exchange; --backend: the solves'
 *           backend, exit 77 when it is absent)
 *
 * Every rank draws the same global fields from the seed (smooth random
 * links on 8^3 x 16, random null vectors and coarse vectors) and takes
 * its block; each check compares the block's result with the matching
 * block of the whole lattice's, computed by the same module on one
 * process without faces (for the coarse operators) or by the float64
 * reference (for the solves).  Grids: N = 2 splits T; N = 4 splits Z and
 * T (1x1x2x2: a coarse extent of 1 in Z, whose two faces are the same
 * sites).  Checks, each with its tolerance:
 *   fine     A v of the module's fine operator on the grid (the links'
 *            ghosts, the antiperiodic sign in global time): 1e-14
 *   coarse   D_c built on the grid (the null vectors' ghosts) = the whole
 *            lattice's, every link of every block site: 1e-12; Wilson
 *            antiperiodic and clover periodic; the second coarse level
 *            (blocks of the whole local coarse lattice: a 1^4 coarsest
 *            block on each rank, every hop across a face) too
 *   apply    D_c v on the grid after the host exchange: 1e-13
 *   dev      the backend's coarse apply (single and half links) with the
 *            faces gathered there and exchanged, against the float64
 *            D_c v: 1e-5 single, 1e-2 half (relative)
 *   solve    wd_solver_mg_setup and a WD_SOLVER_MG solve on the grid
 *            (2 levels, and 3 with the K-cycle; Wilson, and clover with a
 *            half preconditioner): the same status and iterations on
 *            every rank, the true residual of the gathered x (ref_wilson
 *            or ref_wilson_clover on the whole lattice) <= tol 1e-10, x
 *            within 1e-8 of a BiCGstab solution on the same grid; and
 *            with the outer GCR on the even-odd system (outer_eo 1), Wilson
 *            also with a refinement pass (refine_passes 1)
 *   file     save and load on the grid (2 and 4 ranks): the loaded
 *            multigrid solves with the saver's bits on every rank; a
 *            corrupted byte refused on every rank (WD_ERR_CORRUPT, rank
 *            0's checksum message), the loaded multigrid kept
 * One line per check on rank 0; "N of M failed" last; exit 1 on any
 * failure.
 */
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clover_field.h"
#include "gauge_tools.h"
#include "ref_clover.h"
#include "ref_wilson.h"
#include "rng.h"
#include "test_backend.h"
#include "test_grid.h"
#include "wd_coarse_layout.h"
#include "wd_coarse_op.h"
#include "wd_comm.h"
#include "wd_mg.h"
#include "wd_mg_dev.h"

static int rank, nranks, checks_run, checks_failed;
static wd_backend_kind backend = WD_BACKEND_CPU;
static const int dims[4] = {8, 8, 8, 16};

static void *xalloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p) {
        fprintf(stderr, "test_mg_grid: rank %d: out of memory\n", rank);
        exit(1);
    }
    return p;
}

/* a check passes when it passes on every rank; the worst error is shown */
static void check(const char *name, double err, double tol)
{
    double worst = isfinite(err) ? err : 1e300;
    wd_comm_max(&worst, 1);
    ++checks_run;
    const int ok = worst <= tol;
    checks_failed += !ok;
    if (rank == 0)
        printf("%-62s %s  err=%.2e tol=%.0e\n", name, ok ? "OK  " : "FAIL", worst, tol);
}

static void check_true(const char *name, int ok, const char *detail)
{
    double bad = !ok;
    wd_comm_max(&bad, 1);
    ++checks_run;
    checks_failed += bad != 0;
    if (rank == 0)
        printf("%-62s %s  %s\n", name, bad == 0 ? "OK  " : "FAIL", detail);
}

static void fill_random(double complex *x, size_t n, wd_rng *r)
{
    for (size_t i = 0; i < n; ++i)
        x[i] = CMPLX(wd_rng_normal(r), wd_rng_normal(r));
}

/* max |a - b| / max |b| over n numbers */
static double max_rel(const double complex *a, const double complex *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; ++i) {
        if (cabs(a[i] - b[i]) > num || isnan(creal(a[i])))
            num = isnan(creal(a[i])) ? INFINITY : cabs(a[i] - b[i]);
        if (cabs(b[i]) > den)
            den = cabs(b[i]);
    }
    return den > 0 ? num / den : INFINITY;
}

/* a lattice of extents d on the grid g: this rank's block as wd_lattice */
static wd_lattice block_of(const wd_grid *g, const int d[4])
{
    wd_lattice lat;
    memset(&lat, 0, sizeof lat);
    for (int mu = 0; mu < 4; ++mu) {
        lat.dims[mu] = d[mu];
        lat.procs[mu] = g->procs[mu];
        lat.local[mu] = d[mu] / g->procs[mu];
        lat.origin[mu] = g->coord[mu] * lat.local[mu];
    }
    lat.rank = g->rank;
    lat.size = g->size;
    return lat;
}

/* ---- operators: the grid's block against the whole lattice's ---- */

/* one level's coarse operator twice: random null vectors drawn for the
 * whole lattice (gt, under gf) and their block copied into lt (under lf,
 * on the grid; lat the block on this level), each set orthonormalised and
 * built on */
static wd_status build_both(wd_mg_op *gc, wd_mg_op *lc, wd_mg_op *gf, wd_mg_op *lf,
                            wd_mg_transfer *gt, wd_mg_transfer *lt, const wd_lattice *lat,
                            int level, wd_rng *rng)
{
    const size_t per_site = (size_t)gt->nvec * gt->n_fine;
    fill_random(gt->v, gt->fine_volume * per_site, rng);
    test_copy_block((double *)lt->v, (double *)gt->v, lat, (int)(2 * per_site), 0);
    wd_status st = wd_mg_orthonormalise(gt, level);
    if (st == WD_OK)
        st = wd_mg_orthonormalise(lt, level);
    if (st == WD_OK)
        st = wd_mg_coarse_build(gc, gf, gt);
    if (st == WD_OK)
        st = wd_mg_coarse_build(lc, lf, lt);
    return st;
}

static void test_operators(uint64_t seed, const wd_grid *g, int clover, int tbc)
{
    const size_t gvol = wd_volume(dims), lvol = wd_volume(g->local);
    const int nv = 8, block0[4] = {4, 4, 4, 4};
    const double mass = -0.3, kappa = 0.5 / (4.0 + mass);
    const char *tag = clover ? "clover periodic" : "wilson antiperiodic";
    char name[128];
    wd_rng rng;
    wd_rng_seed(&rng, seed + 31u * (unsigned)clover);
    double complex *u = xalloc(gvol * 36 * sizeof *u);
    wd_gauge_smooth(u, dims, 0.4, &rng);
    double *blocks = NULL, *lblocks = NULL;
    const wd_lattice lat = block_of(g, dims);
    if (clover) {
        wd_grid one;
        blocks = xalloc(gvol * WD_CLOVER_SITE_REALS * sizeof *blocks);
        lblocks = xalloc(lvol * WD_CLOVER_SITE_REALS * sizeof *lblocks);
        if (wd_grid_make(&one, dims, (const int[4]){1, 1, 1, 1}, 1, 0, 4) != WD_OK ||
            wd_clover_field(blocks, (const double *)u, &one, 1.2 * kappa) != WD_OK) {
            check_true("clover field", 0, wd_last_error());
            return;
        }
        test_copy_block(lblocks, blocks, &lat, WD_CLOVER_SITE_REALS, 0);
    }
    double complex *lu = xalloc(lvol * 36 * sizeof *lu);
    test_copy_block((double *)lu, (double *)u, &lat, 72, 0);

    /* the whole lattice on one process, and the block on the grid */
    wd_mg_op gf, lf, gc1, lc1, gc2, lc2;
    wd_mg_transfer gt0, lt0, gt1, lt1;
    memset(&gc2, 0, sizeof gc2);
    memset(&lc2, 0, sizeof lc2);
    memset(&gt1, 0, sizeof gt1);
    memset(&lt1, 0, sizeof lt1);
    wd_status st = wd_mg_op_fine(&gf, dims, NULL, (const double *)u, blocks, kappa, tbc);
    if (st == WD_OK)
        st = wd_mg_op_fine(&lf, g->local, g, (const double *)lu, lblocks, kappa, tbc);
    if (st == WD_OK)
        st = wd_mg_transfer_init(&gt0, 0, dims, 12, block0, nv, 0);
    if (st == WD_OK)
        st = wd_mg_transfer_init(&lt0, 0, g->local, 12, block0, nv, lf.halo.nghost);
    if (st != WD_OK) {
        check_true("operators: set up", 0, wd_last_error());
        return;
    }

    /* fine: A v */
    double complex *v = xalloc(gvol * 12 * sizeof *v), *av = xalloc(gvol * 12 * sizeof *av);
    double complex *lv = xalloc((lvol + lf.halo.nghost) * 12 * sizeof *lv);
    double complex *lav = xalloc(lvol * 12 * sizeof *lav), *ref = xalloc(lvol * 12 * sizeof *ref);
    fill_random(v, gvol * 12, &rng);
    wd_mg_op_apply(&gf, av, v);
    test_copy_block((double *)lv, (double *)v, &lat, 24, 0);
    for (size_t i = lvol * 12; i < (lvol + lf.halo.nghost) * 12; ++i)
        lv[i] = NAN;   /* ghosts poisoned: the exchange must fill them */
    st = wd_mg_halo_exchange(&lf.halo, lv, 12 * sizeof *lv);
    wd_mg_op_apply(&lf, lav, lv);
    test_copy_block((double *)ref, (double *)av, &lat, 24, 0);
    snprintf(name, sizeof name, "fine %s: A v on the grid", tag);
    check(name, st == WD_OK ? max_rel(lav, ref, lvol * 12) : INFINITY, 1e-14);

    /* coarse: the null vectors of the whole lattice, the block's part */
    st = build_both(&gc1, &lc1, &gf, &lf, &gt0, &lt0, &lat, 0, &rng);
    if (st != WD_OK) {
        check_true("coarse: build", 0, wd_last_error());
        return;
    }
    /* every link of every block site against the whole lattice's */
    const int nc = 2 * nv;
    const size_t link = 9 * (size_t)nc * nc;
    int cd[4];
    for (int mu = 0; mu < 4; ++mu)
        cd[mu] = dims[mu] / block0[mu];
    const wd_lattice clat = block_of(g, cd);
    double complex *glinks = xalloc(lc1.volume * link * sizeof *glinks);
    test_copy_block((double *)glinks, (double *)gc1.links, &clat, (int)(2 * link), 0);
    snprintf(name, sizeof name, "coarse %s: D_c on the grid, every link", tag);
    check(name, max_rel(lc1.links, glinks, lc1.volume * link), 1e-12);

    /* apply: D_c w with the host exchange */
    const size_t gcn = gc1.volume * nc, lcn = lc1.volume * nc;
    double complex *w = xalloc(gcn * sizeof *w), *dw = xalloc(gcn * sizeof *dw);
    double complex *lw = xalloc((lc1.volume + lc1.halo.nghost) * nc * sizeof *lw);
    double complex *ldw = xalloc(lcn * sizeof *ldw), *cref = xalloc(lcn * sizeof *cref);
    fill_random(w, gcn, &rng);
    wd_mg_op_apply(&gc1, dw, w);
    test_copy_block((double *)cref, (double *)dw, &clat, 2 * nc, 0);
    test_copy_block((double *)lw, (double *)w, &clat, 2 * nc, 0);
    for (size_t i = lcn; i < (lc1.volume + lc1.halo.nghost) * nc; ++i)
        lw[i] = NAN;
    st = wd_mg_halo_exchange(&lc1.halo, lw, nc * sizeof *lw);
    wd_mg_op_apply(&lc1, ldw, lw);
    snprintf(name, sizeof name, "apply %s: D_c v on the grid (host)", tag);
    check(name, st == WD_OK ? max_rel(ldw, cref, lcn) : INFINITY, 1e-13);

    /* dev: the CPU table's apply with the faces gathered and exchanged */
    for (int prec = 4; prec >= 2; prec -= 2) {
        const wd_mg_dev_ops *d = &wd_mg_dev_cpu_ops;
        wd_mg_dev_level dl;
        memset(&dl, 0, sizeof dl);
        wd_coarse_layout ext;
        const int ng = (int)lc1.halo.nghost, vol = (int)lc1.volume;
        st = wd_coarse_layout_make(&dl.layout, vol, nv, prec);
        if (st == WD_OK)
            st = wd_coarse_layout_make(&ext, vol + ng, nv, prec);
        if (st == WD_OK && wd_coarse_find_axes(prec, nv, 0, 0, 1) < 0) {
            if (rank == 0)
                printf("%-62s SKIP (coarse_%s_nv%d not built)\n", "dev apply",
                       prec == 4 ? "s" : "h", nv);
            continue;
        }
        if (st != WD_OK) {
            check_true("dev: layout", 0, wd_last_error());
            continue;
        }
        void *links = xalloc(dl.layout.link_bytes);
        float *lnorm = dl.layout.link_norm_bytes ? xalloc(dl.layout.link_norm_bytes) : NULL;
        wd_pack_coarse_links(&dl.layout, links, lnorm, lc1.links);
        dl.nghost = ng;
        dl.nbr = lc1.nbr;
        dl.links = links;
        dl.link_norm = lnorm;
        if (prec == 2) {
            dl.hin = xalloc(ext.spinor_bytes);
            dl.hout = xalloc(ext.spinor_bytes);
            dl.hin_norm = xalloc(ext.spinor_norm_bytes);
            dl.hout_norm = xalloc(ext.spinor_norm_bytes);
        }
        float *in = xalloc((size_t)(vol + ng) * 2 * nc * sizeof *in);
        float *out = xalloc((size_t)vol * 2 * nc * sizeof *out);
        float *dface = xalloc((size_t)ng * 2 * nc * sizeof *dface + 1);
        float *hface = xalloc(2 * (size_t)ng * 2 * nc * sizeof *hface + 1);
        for (int s = 0; s < vol; ++s)
            for (int i = 0; i < nc; ++i) {
                in[(size_t)s * 2 * nc + i] = (float)creal(lw[(size_t)s * nc + i]);
                in[(size_t)s * 2 * nc + nc + i] = (float)cimag(lw[(size_t)s * nc + i]);
            }
        for (size_t i = (size_t)vol * 2 * nc; i < (size_t)(vol + ng) * 2 * nc; ++i)
            in[i] = NAN;
        for (size_t i = 0; i < (size_t)vol * 2 * nc; ++i)
            out[i] = NAN;
        st = wd_mg_halo_exchange_dev(&lc1.halo, d, lc1.halo.send, dface, hface, in, 2 * nc);
        if (st == WD_OK)
            st = d->apply(&dl, out, in);
        for (int s = 0; s < vol; ++s)
            for (int i = 0; i < nc; ++i)
                ldw[(size_t)s * nc + i] = CMPLX(out[(size_t)s * 2 * nc + i],
                                                out[(size_t)s * 2 * nc + nc + i]);
        snprintf(name, sizeof name, "dev %s: %s D_c v with the faces exchanged", tag,
                 prec == 4 ? "single" : "half");
        check(name, st == WD_OK ? max_rel(ldw, cref, lcn) : INFINITY, prec == 4 ? 1e-5 : 1e-2);
        free(links);
        free(lnorm);
        free(dl.hin);
        free(dl.hout);
        free(dl.hin_norm);
        free(dl.hout_norm);
        free(in);
        free(out);
        free(dface);
        free(hface);
    }

    /* the second coarse level: blocks of the whole local coarse lattice */
    int block1[4];
    memcpy(block1, lc1.dims, sizeof block1);
    st = wd_mg_transfer_init(&gt1, 1, gc1.dims, nc, block1, nv, 0);
    if (st == WD_OK)
        st = wd_mg_transfer_init(&lt1, 1, lc1.dims, nc, block1, nv, lc1.halo.nghost);
    if (st == WD_OK)
        st = build_both(&gc2, &lc2, &gc1, &lc1, &gt1, &lt1, &clat, 1, &rng);
    snprintf(name, sizeof name, "coarse %s: second level on the grid, every link", tag);
    if (st != WD_OK) {
        check_true(name, 0, wd_last_error());
    } else {
        int cd2[4];
        for (int mu = 0; mu < 4; ++mu)
            cd2[mu] = gc1.dims[mu] / block1[mu];
        const wd_lattice clat2 = block_of(g, cd2);
        double complex *g2 = xalloc(lc2.volume * link * sizeof *g2);
        test_copy_block((double *)g2, (double *)gc2.links, &clat2, (int)(2 * link), 0);
        check(name, max_rel(lc2.links, g2, lc2.volume * link), 1e-12);
        free(g2);
    }
    wd_mg_op_free(&gf);
    wd_mg_op_free(&lf);
    wd_mg_op_free(&gc1);
    wd_mg_op_free(&lc1);
    wd_mg_op_free(&gc2);
    wd_mg_op_free(&lc2);
    wd_mg_transfer_free(&gt0);
    wd_mg_transfer_free(&lt0);
    wd_mg_transfer_free(&gt1);
    wd_mg_transfer_free(&lt1);
    free(u);
    free(lu);
    free(blocks);
    free(lblocks);
    free(v);
    free(av);
    free(lv);
    free(lav);
    free(ref);
    free(glinks);
    free(w);
    free(dw);
    free(lw);
    free(ldw);
    free(cref);
}

/* ---- solves on the grid ---- */

/* ||b - M x|| / ||b|| of whole-lattice fields with the float64 reference */
static double true_residual(const double complex *u, const double complex *t,
                            const double complex *x, const double complex *b, double mass)
{
    const size_t n = wd_volume(dims) * 12;
    double complex *mx = xalloc(n * sizeof *mx);
    if (t)
        ref_wilson_clover(mx, u, t, x, dims, mass, -1, 0);
    else
        ref_wilson(mx, u, x, dims, mass, -1, 0);
    double num = 0, den = 0;
    for (size_t i = 0; i < n; ++i) {
        num += creal((b[i] - mx[i]) * conj(b[i] - mx[i]));
        den += creal(b[i] * conj(b[i]));
    }
    free(mx);
    return sqrt(num / den);
}

static void test_solve(uint64_t seed, const wd_lattice *lat, int clover, int levels,
                       wd_mg_smoother smoother, int outer_eo, int refine)
{
    const size_t gvol = wd_volume(dims), lvol = wd_volume(lat->local);
    char name[128], detail[256];
    wd_rng rng;
    wd_rng_seed(&rng, seed + 7u * (unsigned)levels + (unsigned)clover);
    double complex *u = xalloc(gvol * 36 * sizeof *u), *b = xalloc(gvol * 12 * sizeof *b);
    wd_gauge_smooth(u, dims, 0.9, &rng);
    fill_random(b, gvol * 12, &rng);
    double complex *lu = xalloc(lvol * 36 * sizeof *lu), *lb = xalloc(lvol * 12 * sizeof *lb);
    double complex *lx = xalloc(lvol * 12 * sizeof *lx), *lxk = xalloc(lvol * 12 * sizeof *lxk);
    double complex *x = xalloc(gvol * 12 * sizeof *x), *xk = xalloc(gvol * 12 * sizeof *xk);
    test_copy_block((double *)lu, (double *)u, lat, 72, 0);
    test_copy_block((double *)lb, (double *)b, lat, 24, 0);

    wd_solver_settings s;
    wd_solver_default_settings(&s);
    memcpy(s.grid, lat->procs, sizeof s.grid);
    s.backend = backend;
    s.mass = -1.3;
    s.tbc = -1;
    s.tol = 1e-10;
    s.csw = clover ? 1.0 : 0.0;
    s.sloppy_precision = clover ? 2 : 4;
    wd_mg_settings m;
    wd_mg_default_settings(&m);
    m.levels = levels;
    m.nvec[0] = 8;
    m.nvec[1] = 8;
    m.setup_max_iter = 20;
    for (int mu = 0; mu < 4; ++mu) {
        m.block[0][mu] = 4;
        /* the whole local coarse lattice: a 1^4 coarsest block a rank */
        m.block[1][mu] = lat->local[mu] / 4;
    }
    m.smoother = smoother;
    m.outer_eo = outer_eo;
    m.refine_passes = refine;
    const char *tag = refine ? "wilson, outer even-odd, 1 refinement pass"
                      : outer_eo ? (clover ? "clover, half preconditioner, outer even-odd"
                                         : "wilson, outer even-odd")
                      : smoother == WD_MG_SMOOTHER_CA_GCR
                          ? (clover ? "clover, half preconditioner, CA-GCR" : "wilson, CA-GCR")
                          : (clover ? "clover, half preconditioner" : "wilson");
    wd_solver *sv = NULL;
    wd_status st = wd_solver_create(&sv, (const double *)lu, dims, &s);
    wd_mg_setup_stats ss;
    m.diagnostics = 1;
    if (st == WD_OK)
        st = wd_solver_mg_setup(sv, &m, &s, &ss);
    snprintf(name, sizeof name, "solve %s, %d levels: setup", tag, levels);
    snprintf(detail, sizeof detail, "%s; orth %.1e, coarse %.1e",
             st == WD_OK ? "ok" : wd_last_error(), st == WD_OK ? ss.orth_error[0] : 0,
             st == WD_OK ? ss.coarse_error[0] : 0);
    if (st == WD_ERR_NOT_BUILT) {
        if (rank == 0)
            printf("%-62s SKIP (%s)\n", name, wd_last_error());
        if (sv)
            wd_solver_destroy(sv);
        goto out;
    }
    check_true(name, st == WD_OK && ss.orth_error[0] < 1e-12 && ss.coarse_error[0] < 1e-12,
               detail);
    if (st != WD_OK) {
        if (sv)
            wd_solver_destroy(sv);
        goto out;
    }
    wd_solver_stats mst, kst;
    s.solver = WD_SOLVER_MG;
    memset(lx, 0xff, lvol * 12 * sizeof *lx);
    st = wd_solver_solve(sv, (double *)lx, (const double *)lb, &s, &mst);
    /* the same status and iterations on every rank */
    double mine[2] = {(double)st, (double)mst.iterations}, root[2];
    memcpy(root, mine, sizeof root);
    wd_comm_bcast(root, sizeof root, 0);
    const int same = !memcmp(root, mine, sizeof root);
    s.solver = WD_SOLVER_BICGSTAB;
    const wd_status kst_st = wd_solver_solve(sv, (double *)lxk, (const double *)lb, &s, &kst);
    wd_solver_destroy(sv);
    test_gather((double *)x, (const double *)lx, lat);
    test_gather((double *)xk, (const double *)lxk, lat);
    double got[2] = {0, 0};
    if (rank == 0) {
        double complex *t = NULL;
        if (clover) {
            double complex *fhat = xalloc(gvol * 54 * sizeof *fhat);
            t = xalloc(gvol * 144 * sizeof *t);
            ref_clover_fhat(fhat, u, dims);
            ref_clover_term(t, fhat, gvol, s.csw);
            free(fhat);
        }
        got[0] = true_residual(u, t, x, b, s.mass);
        double dn = 0, xn = 0;
        for (size_t i = 0; i < gvol * 12; ++i) {
            dn += creal((x[i] - xk[i]) * conj(x[i] - xk[i]));
            xn += creal(xk[i] * conj(xk[i]));
        }
        got[1] = sqrt(dn / xn);
        free(t);
    }
    wd_comm_bcast(got, sizeof got, 0);
    snprintf(name, sizeof name, "solve %s, %d levels: true residual", tag, levels);
    snprintf(detail, sizeof detail, "%s, %d outer its (BiCGstab %d), level-1 its %d, "
             "same on every rank: %s", wd_status_string(st), mst.iterations, kst.iterations,
             mst.mg_iterations[1], same ? "yes" : "no");
    check_true(name, st == WD_OK && same && got[0] <= 1e-10, detail);
    snprintf(name, sizeof name, "solve %s, %d levels: x vs BiCGstab's x", tag, levels);
    check(name, st == WD_OK && kst_st == WD_OK ? got[1] : INFINITY, 1e-8);
out:
    free(u);
    free(b);
    free(lu);
    free(lb);
    free(lx);
    free(lxk);
    free(x);
    free(xk);
}

/*
 * save and load on the grid: a setup saved here (rank 0 writes, every
 * rank's block through it) and loaded into a second solver on the same
 * grid solves with the same bits, block by block on every rank; a
 * corrupted byte is refused on every rank with rank 0's reason, the
 * loaded multigrid kept.  The path is the seed's and the rank count's.
 */
static void test_file(uint64_t seed, const wd_lattice *lat)
{
    if (nranks == 1)
        return;
    const size_t gvol = wd_volume(dims), lvol = wd_volume(lat->local);
    double complex *u = xalloc(gvol * 36 * sizeof *u), *lu = xalloc(lvol * 36 * sizeof *lu);
    double complex *b = xalloc(gvol * 12 * sizeof *b), *lb = xalloc(lvol * 12 * sizeof *lb);
    double complex *x[2] = {xalloc(lvol * 12 * sizeof *x[0]), xalloc(lvol * 12 * sizeof *x[1])};
    wd_rng rng;
    wd_rng_seed(&rng, seed + 3u);
    wd_gauge_smooth(u, dims, 0.9, &rng);
    fill_random(b, gvol * 12, &rng);
    test_copy_block((double *)lu, (double *)u, lat, 72, 0);
    test_copy_block((double *)lb, (double *)b, lat, 24, 0);
    for (size_t i = 0; i < lvol * 12; ++i)
        x[0][i] = x[1][i] = NAN;
    wd_solver_settings s;
    wd_solver_default_settings(&s);
    memcpy(s.grid, lat->procs, sizeof s.grid);
    s.backend = backend;
    s.mass = -1.3;
    s.tbc = -1;
    s.tol = 1e-10;
    wd_mg_settings m;
    wd_mg_default_settings(&m);
    m.nvec[0] = 8;
    m.setup_max_iter = 20;
    char path[96];
    snprintf(path, sizeof path, "/tmp/test_mg_grid_%llu_%d.nv", (unsigned long long)seed, nranks);
    if (rank == 0)
        remove(path);
    wd_solver *sv[2] = {NULL, NULL};
    wd_solver_stats ms[2];
    wd_status st[2];
    for (int i = 0; i < 2; ++i) {
        m.save = i == 0 ? path : NULL;
        m.load = i == 1 ? path : NULL;
        s.solver = WD_SOLVER_BICGSTAB;
        st[i] = wd_solver_create(&sv[i], (const double *)lu, dims, &s);
        if (st[i] == WD_OK)
            st[i] = wd_solver_mg_setup(sv[i], &m, &s, NULL);
        s.solver = WD_SOLVER_MG;
        if (st[i] == WD_OK)
            st[i] = wd_solver_solve(sv[i], (double *)x[i], (const double *)lb, &s, &ms[i]);
    }
    double differ = st[0] != WD_OK || st[1] != WD_OK || ms[0].iterations != ms[1].iterations ||
                    memcmp(x[0], x[1], lvol * 12 * sizeof *x[0]) != 0;
    wd_comm_sum(&differ, 1);
    char detail[200];
    snprintf(detail, sizeof detail, "%s / %s, outer its %d / %d, ranks differing %g",
             wd_status_string(st[0]), wd_status_string(st[1]), st[0] == WD_OK ? ms[0].iterations : -1,
             st[1] == WD_OK ? ms[1].iterations : -1, differ);
    check_true("file: saved and loaded on the grid, the same bits on every rank", differ == 0,
               detail);
    /* one byte changed (rank 0 writes it), then the load refused alike */
    if (rank == 0) {
        FILE *f = fopen(path, "r+b");
        int byte = -1;
        if (f && fseek(f, 4096, SEEK_SET) == 0 && (byte = fgetc(f)) != EOF &&
            fseek(f, 4096, SEEK_SET) == 0)
            fputc(byte ^ 0x10, f);
        if (f)
            fclose(f);
    }
    double dummy = 0;
    wd_comm_sum(&dummy, 1);     /* the file changed before anyone reads it */
    wd_status bad = sv[1] ? wd_solver_mg_setup(sv[1], &m, &s, NULL) : WD_ERR_INVALID;
    double mine = bad, root = bad;
    wd_comm_bcast(&root, sizeof root, 0);
    check_true("file: a corrupted byte refused on every rank",
               bad == WD_ERR_CORRUPT && mine == root && strstr(wd_last_error(), "checksum"),
               wd_last_error());
    /* the refusal kept the loaded multigrid */
    for (size_t i = 0; i < lvol * 12; ++i)
        x[1][i] = NAN;
    wd_status again = sv[1] ? wd_solver_solve(sv[1], (double *)x[1], (const double *)lb, &s, NULL)
                            : WD_ERR_INVALID;
    differ = again != WD_OK || memcmp(x[0], x[1], lvol * 12 * sizeof *x[0]) != 0;
    wd_comm_sum(&differ, 1);
    check_true("file: the loaded multigrid kept after the refusal", differ == 0,
               wd_status_string(again));
    for (int i = 0; i < 2; ++i)
        if (sv[i])
            wd_solver_destroy(sv[i]);
    if (rank == 0)
        remove(path);
    free(u);
    free(lu);
    free(b);
    free(lb);
    free(x[0]);
    free(x[1]);
}

int main(int argc, char **argv)
{
    if (wd_init(&argc, &argv) != WD_OK) {
        fprintf(stderr, "test_mg_grid: %s\n", wd_last_error());
        return 1;
    }
    rank = wd_rank();
    nranks = wd_ranks();
    uint64_t seed = (uint64_t)time(NULL);
    for (int i = 1; i + 1 < argc; ++i)
        if (!strcmp(argv[i], "--seed"))
            seed = strtoull(argv[i + 1], NULL, 10);
    /* 77 on every rank when the backend is absent */
    backend = test_backend_arg(argc, argv);
    double s0 = rank == 0 ? (double)(seed % (1ull << 52)) : 0;
    wd_comm_bcast(&s0, sizeof s0, 0);
    seed = (uint64_t)s0;
    if (nranks != 1 && nranks != 2 && nranks != 4) {
        if (rank == 0)
            fprintf(stderr, "test_mg_grid: runs on 1, 2 or 4 ranks, not %d\n", nranks);
        wd_finalize();
        return 1;
    }
    /* 2 ranks split T, 4 split Z and T; one process: every face wrapped */
    const int procs[4] = {1, 1, nranks == 4 ? 2 : 1, nranks == 1 ? 1 : 2};
    wd_grid g;
    wd_lattice lat;
    if (wd_grid_make(&g, dims, procs, nranks, rank, 4) != WD_OK ||
        wd_lattice_make(&lat, dims, procs) != WD_OK) {
        fprintf(stderr, "test_mg_grid: %s\n", wd_last_error());
        wd_finalize();
        return 1;
    }
    if (nranks == 1)
        for (int mu = 0; mu < 4; ++mu)
            g.partitioned[mu] = 1;
    if (rank == 0)
        printf("test_mg_grid: %d rank(s), grid %dx%dx%dx%d%s, seed %llu (--seed N replays)\n",
               nranks, procs[0], procs[1], procs[2], procs[3],
               nranks == 1 ? " (every face wrapped)" : "", (unsigned long long)seed);
    test_operators(seed, &g, 0, -1);
    test_operators(seed, &g, 1, 1);
    if (nranks > 1) {
        test_solve(seed, &lat, 0, 2, WD_MG_SMOOTHER_MR, 0, 0);
        test_solve(seed, &lat, 0, 3, WD_MG_SMOOTHER_MR, 0, 0);
        test_solve(seed, &lat, 1, 2, WD_MG_SMOOTHER_MR, 0, 0);
        /* CA-GCR on the fine and the middle level */
        test_solve(seed, &lat, 0, 3, WD_MG_SMOOTHER_CA_GCR, 0, 0);
        /* the outer GCR on the even-odd Schur system */
        test_solve(seed, &lat, 0, 2, WD_MG_SMOOTHER_CA_GCR, 1, 0);
        test_solve(seed, &lat, 1, 2, WD_MG_SMOOTHER_CA_GCR, 1, 0);
        test_solve(seed, &lat, 0, 2, WD_MG_SMOOTHER_CA_GCR, 1, 1);
        test_file(seed, &lat);
    }
    if (rank == 0)
        printf("%d of %d failed\n", checks_failed, checks_run);
    wd_finalize();
    return checks_failed ? 1 : 0;
}
