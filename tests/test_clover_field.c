/*
 * test_clover_field.c: the host clover field (runtime/gauge/clover_field.c)
 * against the float64 reference (runtime/operator/ref_clover.c), on one
 * process and on a process grid, on fresh Haar-random SU(3) fields.
 *
 *   [mpirun -n N] test_clover_field [--seed N]   (default seed: the time, printed)
 *   test_clover_field --time [X Y Z T]           wd_clover_field and
 *                                                wd_clover_invert timed on
 *                                                one process (16^3x32)
 *
 * Checks, on lattices 4^4, 4x6x4x8, 6x4x8x4 and 8x4x4x6, coef random in
 * [0.1, 0.4]:
 *   blocks      = 1 + coef T of ref_clover_fhat / ref_clover_term, packed
 *               in the block format by this file; the reference's blocks
 *               coupling the chiralities are zero
 *   inverse     = ref_clover_invert's (Gauss-Jordan on 12x12), A A^-1 = 1
 *               per block, in place the same bits
 *   apply       wd_clover_apply_host = ref_clover_apply; A^-1 (A x) = x
 *   trivial     coef = 0 or the unit field: A = 1 exactly
 *   grid        every grid of the N ranks (one process: the 1x1x1x1 grid
 *               with its dimensions wrapping onto itself through the
 *               border exchange): each rank's blocks and inverse equal its
 *               part of the whole lattice's, bit for bit
 *   refusals    a poisoned block (negative pivot, NaN, zero), and a huge
 *               coef: WD_ERR_INVALID naming the first refused block in
 *               global order (found here by leading principal minors, not
 *               by Cholesky), inv untouched; on a grid two poisoned sites
 *               on two ranks, the globally first named on every rank;
 *               a NaN link or a null grid refused by wd_clover_field
 * One line per check (on rank 0, a check failing on any rank fails);
 * "N of M failed" last; exit 1 on any failure.
 */
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <omp.h>

#include "clover_field.h"
#include "gauge_tools.h"
#include "ref_clover.h"
#include "rng.h"
#include "wd_comm.h"
#include "wdirac.h"

static const double TOL = 1e-13, TOL_INV = 1e-12;
static int rank, nranks, checks_run, checks_failed;

static void *xalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "test_clover_field: out of memory\n");
        exit(1);
    }
    return p;
}

/* NaN everywhere: an output never written shows */
static void poison(double *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = NAN;
}

/* a check fails when it failed on any rank */
static void check(int ok, const char *what, const char *detail)
{
    double bad = !ok;
    if (wd_comm_sum(&bad, 1) != WD_OK) {
        fprintf(stderr, "test_clover_field: rank %d: %s\n", rank, wd_last_error());
        exit(1);
    }
    checks_run++;
    checks_failed += bad > 0;
    if (!ok)
        printf("rank %d: %-66s FAIL %s\n", rank, what, detail);
    else if (rank == 0)
        printf("%-74s %s %s\n", what, bad > 0 ? "FAIL" : "OK  ", detail);
}

static void check_err(const char *what, double err, double tol)
{
    char d[64];
    snprintf(d, sizeof d, "err=%.2e tol=%.0e", err, tol);
    check(err <= tol, what, d);
}

/* ---- the block format, written here from its description ---------------- */

/* A[i][j] of block b of a site in the block format */
static double complex entry(const double *site, int b, int i, int j)
{
    const double *blk = site + 36 * b;
    if (i == j)
        return blk[i];
    const int hi = i > j ? i : j, lo = i > j ? j : i;
    int k = 6;
    for (int r = 1; r < hi; r++)
        k += 2 * r;
    k += 2 * lo;
    const double complex a = CMPLX(blk[k], blk[k + 1]);
    return i > j ? a : conj(a);
}

/* The two 6x6 blocks of a 12x12 site matrix m (index 3 spin + colour),
 * packed: diagonal (real parts), then the lower triangle row by row.
 * *off = max |m| over the entries coupling the chiralities. */
static void pack(double *site, const double complex *m, double *off)
{
    for (int b = 0; b < 2; b++) {
        double *blk = site + 36 * b;
        int k = 6;
        for (int i = 0; i < 6; i++)
            blk[i] = creal(m[12 * (6 * b + i) + 6 * b + i]);
        for (int i = 1; i < 6; i++)
            for (int j = 0; j < i; j++) {
                const double complex a = m[12 * (6 * b + i) + 6 * b + j];
                blk[k++] = creal(a);
                blk[k++] = cimag(a);
            }
    }
    for (int i = 0; i < 12; i++)
        for (int j = 0; j < 12; j++)
            if (i / 6 != j / 6 && cabs(m[12 * i + j]) > *off)
                *off = cabs(m[12 * i + j]);
}

/* ||a - b|| / ||b|| over n doubles */
static double rel(const double *a, const double *b, size_t n)
{
    double d = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
        d += (a[i] - b[i]) * (a[i] - b[i]);
        s += b[i] * b[i];
    }
    return s > 0 ? sqrt(d / s) : INFINITY;
}

static double max_diff(const double *a, const double *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        if (!(fabs(a[i] - b[i]) <= m))
            m = fabs(a[i] - b[i]);
    return m;
}

/* the reference: t = coef T (12x12 a site); want = 1 + t in the block
 * format; *off its largest entry between the chiralities */
static void reference(double *want, double complex *t, const double complex *u,
                      const int dims[4], double coef, double *off)
{
    const size_t vol = wd_volume(dims);
    double complex *fhat = xalloc(54 * vol * sizeof *fhat), a[144];
    ref_clover_fhat(fhat, u, dims);
    ref_clover_term(t, fhat, vol, coef);
    *off = 0;
    for (size_t s = 0; s < vol; s++) {
        memcpy(a, t + 144 * s, sizeof a);
        for (int i = 0; i < 12; i++)
            a[13 * i] += 1;
        pack(want + 72 * s, a, off);
    }
    free(fhat);
}

static wd_grid one_grid(const int dims[4])
{
    wd_grid g;
    if (wd_grid_make(&g, dims, (const int[4]){1, 1, 1, 1}, 1, 0, 2) != WD_OK) {
        fprintf(stderr, "test_clover_field: %s\n", wd_last_error());
        exit(1);
    }
    return g;
}

/* block <-> global copies of a field of `reals` doubles a site */
static void copy_block(double *local, const double *global, const wd_grid *g, int reals)
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

/* ---- one process: against the reference --------------------------------- */

/* max over sites and blocks of max |A A^-1 - 1| */
static double identity_error(const double *a, const double *ainv, size_t vol)
{
    double m = 0;
    for (size_t s = 0; s < vol; s++)
        for (int b = 0; b < 2; b++)
            for (int i = 0; i < 6; i++)
                for (int j = 0; j < 6; j++) {
                    double complex c = 0;
                    for (int k = 0; k < 6; k++)
                        c += entry(a + 72 * s, b, i, k) * entry(ainv + 72 * s, b, k, j);
                    const double e = cabs(c - (i == j ? 1.0 : 0.0));
                    if (!(e <= m))
                        m = e;
                }
    return m;
}

static void against_reference(const int dims[4], wd_rng *r)
{
    const size_t vol = wd_volume(dims);
    const double coef = 0.1 + 0.3 * wd_rng_uniform(r);
    double complex *u = xalloc(36 * vol * sizeof *u), *t = xalloc(144 * vol * sizeof *t);
    double complex *tinv = xalloc(144 * vol * sizeof *tinv);
    double *want = xalloc(72 * vol * sizeof *want), *got = xalloc(72 * vol * sizeof *got);
    double *inv = xalloc(72 * vol * sizeof *inv), *inv_want = xalloc(72 * vol * sizeof *inv);
    double *x = xalloc(24 * vol * sizeof *x), *y = xalloc(24 * vol * sizeof *y);
    double *y_want = xalloc(24 * vol * sizeof *y), *z = xalloc(24 * vol * sizeof *z);
    wd_gauge_random(u, dims, r);
    wd_spinor_random((double complex *)x, dims, r);
    double off = 0, off_inv = 0;
    reference(want, t, u, dims, coef, &off);
    const wd_grid g = one_grid(dims);
    char kind[96], what[160];
    snprintf(kind, sizeof kind, "%dx%dx%dx%d coef %.3f", dims[0], dims[1], dims[2], dims[3], coef);

    poison(got, 72 * vol);
    wd_status st = wd_clover_field(got, (const double *)u, &g, coef);
    double one[72] = {0}, tnorm = 0;
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 6; i++)
            one[36 * b + i] = 1;
    for (size_t s = 0; s < vol; s++)
        for (int k = 0; k < 72; k++)
            tnorm += (want[72 * s + k] - one[k]) * (want[72 * s + k] - one[k]);
    snprintf(what, sizeof what, "%s: coef T not small: ||A - 1|| / sqrt(V) > 0.05", kind);
    char detail[64];
    snprintf(detail, sizeof detail, "%.3f", sqrt(tnorm / (double)vol));
    check(sqrt(tnorm / (double)vol) > 0.05, what, detail);
    snprintf(what, sizeof what, "%s: reference blocks between chiralities zero", kind);
    check_err(what, off, 1e-15);
    snprintf(what, sizeof what, "%s: wd_clover_field = 1 + coef T of the reference", kind);
    check_err(what, st == WD_OK ? rel(got, want, 72 * vol) : INFINITY, TOL);

    if (ref_clover_invert(tinv, t, vol, 1.0) >= 0) {
        fprintf(stderr, "test_clover_field: the reference inverse failed\n");
        exit(1);
    }
    for (size_t s = 0; s < vol; s++)
        pack(inv_want + 72 * s, tinv + 144 * s, &off_inv);
    poison(inv, 72 * vol);
    st = wd_clover_invert(inv, got, vol, &g);
    snprintf(what, sizeof what, "%s: wd_clover_invert = ref_clover_invert", kind);
    check_err(what, st == WD_OK ? rel(inv, inv_want, 72 * vol) : INFINITY, TOL_INV);
    snprintf(what, sizeof what, "%s: A A^-1 = 1 per block (max entry)", kind);
    check_err(what, st == WD_OK ? identity_error(got, inv, vol) : INFINITY, TOL_INV);
    double *in_place = xalloc(72 * vol * sizeof *in_place);
    memcpy(in_place, got, 72 * vol * sizeof *in_place);
    st = wd_clover_invert(in_place, in_place, vol, NULL);
    snprintf(what, sizeof what, "%s: inverse in place, grid NULL: the same bits", kind);
    check(st == WD_OK && !memcmp(in_place, inv, 72 * vol * sizeof *inv), what, "memcmp");
    free(in_place);

    poison(y, 24 * vol);
    wd_clover_apply_host(y, got, x, vol);
    ref_clover_apply((double complex *)y_want, t, (const double complex *)x, vol, 1.0);
    snprintf(what, sizeof what, "%s: wd_clover_apply_host = ref_clover_apply", kind);
    check_err(what, rel(y, y_want, 24 * vol), TOL);
    poison(z, 24 * vol);
    wd_clover_apply_host(z, inv, y, vol);
    snprintf(what, sizeof what, "%s: apply A^-1 (A x) = x", kind);
    check_err(what, rel(z, x, 24 * vol), TOL_INV);
    memcpy(z, x, 24 * vol * sizeof *z);
    wd_clover_apply_host(z, got, z, vol);
    snprintf(what, sizeof what, "%s: apply in place: the same bits", kind);
    check(!memcmp(z, y, 24 * vol * sizeof *z), what, "memcmp");

    /* coef 0 and the unit field: exactly 1 */
    int exact = wd_clover_field(got, (const double *)u, &g, 0.0) == WD_OK;
    for (size_t s = 0; s < vol; s++)
        exact &= !memcmp(got + 72 * s, one, sizeof one);
    wd_gauge_unit(u, dims);
    exact &= wd_clover_field(got, (const double *)u, &g, coef) == WD_OK;
    for (size_t s = 0; s < vol; s++)
        exact &= !memcmp(got + 72 * s, one, sizeof one);
    snprintf(what, sizeof what, "%s: coef 0, and the unit field: A = 1 exactly", kind);
    check(exact, what, "memcmp");

    free(u), free(t), free(tinv), free(want), free(got), free(inv), free(inv_want);
    free(x), free(y), free(y_want), free(z);
}

/* ---- refusals ------------------------------------------------------------ */

/* determinant of the leading k x k minor of block b by Gaussian
 * elimination with partial pivoting (independent of the Cholesky) */
static double leading_minor(const double *site, int b, int k)
{
    double complex m[6][6];
    for (int i = 0; i < k; i++)
        for (int j = 0; j < k; j++)
            m[i][j] = entry(site, b, i, j);
    double complex det = 1;
    for (int c = 0; c < k; c++) {
        int p = c;
        for (int i = c + 1; i < k; i++)
            if (cabs(m[i][c]) > cabs(m[p][c]))
                p = i;
        if (p != c) {
            for (int j = 0; j < k; j++) {
                const double complex tmp = m[c][j];
                m[c][j] = m[p][j];
                m[p][j] = tmp;
            }
            det = -det;
        }
        det *= m[c][c];
        if (m[c][c] == 0)
            return 0;
        for (int i = c + 1; i < k; i++) {
            const double complex f = m[i][c] / m[c][c];
            for (int j = c; j < k; j++)
                m[i][j] -= f * m[c][j];
        }
    }
    return creal(det);
}

/* Sylvester: hermitian positive definite iff every leading minor > 0 */
static int positive_definite(const double *site, int b)
{
    for (int k = 1; k <= 6; k++)
        if (!(leading_minor(site, b, k) > 0))
            return 0;
    return 1;
}

/* the text wd_clover_invert must name */
static void named(char *s, size_t n, const int dims[4], size_t gsite, int b)
{
    int x[4];
    for (int mu = 0; mu < 4; mu++) {
        x[mu] = (int)(gsite % (size_t)dims[mu]);
        gsite /= (size_t)dims[mu];
    }
    snprintf(s, n, "(x, y, z, t) = (%d, %d, %d, %d), chirality block %d", x[0], x[1], x[2], x[3],
             b);
}

/* wd_clover_invert must refuse with `expect` in its message, inv untouched */
static void refused(const char *what, double *inv, const double *blocks, size_t vol,
                    const wd_grid *g, const char *expect)
{
    poison(inv, 72 * vol);
    double *before = xalloc(72 * vol * sizeof *before);
    memcpy(before, inv, 72 * vol * sizeof *before);
    const wd_status st = wd_clover_invert(inv, blocks, vol, g);
    char detail[640];
    snprintf(detail, sizeof detail, "%s", st == WD_OK ? "accepted" : wd_last_error());
    check(st == WD_ERR_INVALID && strstr(detail, expect) &&
          !memcmp(inv, before, 72 * vol * sizeof *inv), what, detail);
    free(before);
}

static void refusals(const int dims[4], wd_rng *r)
{
    const size_t vol = wd_volume(dims);
    double complex *u = xalloc(36 * vol * sizeof *u);
    double *a = xalloc(72 * vol * sizeof *a), *inv = xalloc(72 * vol * sizeof *inv);
    wd_gauge_random(u, dims, r);
    const wd_grid g = one_grid(dims);
    char what[160], expect[128];
    if (wd_clover_field(a, (const double *)u, &g, 0.25) != WD_OK) {
        fprintf(stderr, "test_clover_field: %s\n", wd_last_error());
        exit(1);
    }
    /* sites well inside, at random */
    const size_t s1 = vol / 3 + (size_t)(wd_rng_uniform(r) * (double)(vol / 3));
    const size_t s2 = s1 + 1 + (size_t)(wd_rng_uniform(r) * (double)(vol / 3 - 2));
    double *save = xalloc(72 * vol * sizeof *save);
    memcpy(save, a, 72 * vol * sizeof *save);

    a[72 * s2 + 36 + 3] = -2.0;
    a[72 * s1 + 36 + 4] = -2.0;
    named(expect, sizeof expect, dims, s1, 1);
    snprintf(what, sizeof what, "refused: negative pivot at two sites, the first named");
    refused(what, inv, a, vol, &g, expect);
    memcpy(a, save, 72 * vol * sizeof *a);

    a[72 * s2 + wd_clover_lower(4, 2)] = NAN;
    named(expect, sizeof expect, dims, s2, 0);
    refused("refused: NaN in a block's lower triangle", inv, a, vol, &g, expect);
    memcpy(a, save, 72 * vol * sizeof *a);
    a[72 * s1 + 36 + 5] = NAN;
    named(expect, sizeof expect, dims, s1, 1);
    refused("refused: NaN on a block's diagonal", inv, a, vol, &g, expect);
    memcpy(a, save, 72 * vol * sizeof *a);
    memset(a + 72 * s1, 0, 36 * sizeof *a);
    named(expect, sizeof expect, dims, s1, 0);
    refused("refused: a zero block (singular)", inv, a, vol, &g, expect);

    /* a large coef on a Haar-random field: the smallest of these that
     * makes some blocks indefinite (typically a few, anywhere); the first
     * found here by leading minors */
    const double big[] = {0.6, 0.7, 0.8, 0.9, 1.0, 1.2, 1.5, 2.0, 3.0, 5.0};
    size_t first = vol;
    int fb = 0, bad = 0;
    double coef = 0;
    for (size_t k = 0; k < sizeof big / sizeof big[0] && first == vol; k++) {
        coef = big[k];
        if (wd_clover_field(a, (const double *)u, &g, coef) != WD_OK) {
            fprintf(stderr, "test_clover_field: %s\n", wd_last_error());
            exit(1);
        }
        first = vol;
        bad = 0;
        for (size_t s = 0; s < vol; s++)
            for (int b = 0; b < 2; b++)
                if (!positive_definite(a + 72 * s, b)) {
                    bad++;
                    if (first == vol) {
                        first = s;
                        fb = b;
                    }
                }
    }
    named(expect, sizeof expect, dims, first, fb);
    snprintf(what, sizeof what, "refused: coef %.1f, %d of %zu blocks indefinite, the first named",
             coef, bad, 2 * vol);
    refused(what, inv, a, vol, &g, expect);

    /* wd_clover_field's own refusals, blocks untouched */
    const size_t s3 = (size_t)(wd_rng_uniform(r) * (double)vol);
    u[36 * s3 + 9 * 2 + 4] = CMPLX(NAN, 0);
    poison(a, 72 * vol);
    memcpy(save, a, 72 * vol * sizeof *a);
    wd_status st = wd_clover_field(a, (const double *)u, &g, 0.25);
    char detail[640];
    snprintf(detail, sizeof detail, "%s", st == WD_OK ? "accepted" : wd_last_error());
    named(expect, sizeof expect, dims, s3, 0);
    *strstr(expect, "), ") = 0;
    check(st == WD_ERR_INVALID && strstr(detail, "U_2") && strstr(detail, expect) &&
          !memcmp(a, save, 72 * vol * sizeof *a), "wd_clover_field refuses a NaN link",
          detail);
    st = wd_clover_field(a, (const double *)u, NULL, 0.25);
    snprintf(detail, sizeof detail, "%s", st == WD_OK ? "accepted" : wd_last_error());
    check(st == WD_ERR_INVALID && !memcmp(a, save, 72 * vol * sizeof *a),
          "wd_clover_field refuses a null grid", detail);
    free(u), free(a), free(inv), free(save);
}

/* ---- on a grid ----------------------------------------------------------- */

/* the grid's blocks and inverse = this rank's part of the whole lattice's,
 * bit for bit; then two poisoned sites on (if possible) two ranks */
static void on_grid(const int dims[4], const wd_grid *g, const char *name, wd_rng *r)
{
    const size_t vol = wd_volume(dims), n = wd_volume(g->local);
    const double coef = 0.1 + 0.3 * wd_rng_uniform(r);
    double complex *u = xalloc(36 * vol * sizeof *u);
    double *all = xalloc(72 * vol * sizeof *all), *all_inv = xalloc(72 * vol * sizeof *all);
    double *ub = xalloc(72 * n * sizeof *ub), *want = xalloc(72 * n * sizeof *want);
    double *got = xalloc(72 * n * sizeof *got), *inv = xalloc(72 * n * sizeof *inv);
    wd_gauge_random(u, dims, r);
    const wd_grid one = one_grid(dims);
    if (wd_clover_field(all, (const double *)u, &one, coef) != WD_OK ||
        wd_clover_invert(all_inv, all, vol, &one) != WD_OK) {
        fprintf(stderr, "test_clover_field: %s\n", wd_last_error());
        exit(1);
    }
    copy_block(ub, (const double *)u, g, 72);
    copy_block(want, all, g, 72);
    poison(got, 72 * n);
    wd_status st = wd_clover_field(got, ub, g, coef);
    char what[160], detail[640];
    snprintf(detail, sizeof detail, "max diff %.1e %s",
             st == WD_OK ? max_diff(got, want, 72 * n) : INFINITY,
             st == WD_OK ? "" : wd_last_error());
    snprintf(what, sizeof what, "%dx%dx%dx%d grid %s: blocks = the whole lattice's", dims[0],
             dims[1], dims[2], dims[3], name);
    check(st == WD_OK && !memcmp(got, want, 72 * n * sizeof *got), what, detail);
    copy_block(want, all_inv, g, 72);
    poison(inv, 72 * n);
    st = wd_clover_invert(inv, got, n, g);
    snprintf(detail, sizeof detail, "max diff %.1e %s",
             st == WD_OK ? max_diff(inv, want, 72 * n) : INFINITY,
             st == WD_OK ? "" : wd_last_error());
    snprintf(what, sizeof what, "%dx%dx%dx%d grid %s: inverse = the whole lattice's", dims[0],
             dims[1], dims[2], dims[3], name);
    check(st == WD_OK && !memcmp(inv, want, 72 * n * sizeof *inv), what, detail);

    /* two poisoned global sites: p1 earlier in global order, p2 on a rank
     * other than p1's (when there is one) and earlier in that rank's order
     * than p1 in its own; both ranks refuse, the first globally is named */
    size_t p1 = 0, p2 = 0;
    int found = 0;
    for (size_t a = 1; a < vol && !found; a++)
        for (size_t b = a + 1; b < vol && !found; b++) {
            int xa[4], xb[4];
            size_t ra = a, rb = b;
            for (int mu = 0; mu < 4; mu++) {
                xa[mu] = (int)(ra % (size_t)dims[mu]) / g->local[mu];
                xb[mu] = (int)(rb % (size_t)dims[mu]) / g->local[mu];
                ra /= (size_t)dims[mu];
                rb /= (size_t)dims[mu];
            }
            const int rka = xa[0] + g->procs[0] * (xa[1] + g->procs[1] * (xa[2] + g->procs[2] * xa[3]));
            const int rkb = xb[0] + g->procs[0] * (xb[1] + g->procs[1] * (xb[2] + g->procs[2] * xb[3]));
            if (g->size == 1 || rka > rkb) {
                p1 = a;
                p2 = b;
                found = 1;
            }
        }
    if (!found) {
        /* every site of a higher rank comes later (a T-only grid): one in
         * the middle and the last */
        p1 = vol / 2;
        p2 = vol - 1;
    }
    double *poisoned = xalloc(72 * vol * sizeof *poisoned);
    memcpy(poisoned, all, 72 * vol * sizeof *poisoned);
    poisoned[72 * p1 + 36 + 2] = -1.0;
    poisoned[72 * p2 + 1] = -1.0;
    copy_block(got, poisoned, g, 72);
    char expect[128];
    named(expect, sizeof expect, dims, p1, 1);
    snprintf(what, sizeof what, "%dx%dx%dx%d grid %s: refused, the global first named", dims[0],
             dims[1], dims[2], dims[3], name);
    refused(what, inv, got, n, g, expect);
    free(u), free(all), free(all_inv), free(ub), free(want), free(got), free(inv);
    free(poisoned);
}

static void grids(const int dims[4], wd_rng *r)
{
    if (nranks == 1) {
        /* one process: borders in the chosen dimensions, wrapping onto
         * this process through the exchange */
        const int wraps[] = {15, 1, 2, 4, 8, 5, 10};
        for (size_t k = 0; k < sizeof wraps / sizeof wraps[0]; k++) {
            wd_grid g = one_grid(dims);
            char name[64];
            for (int mu = 0; mu < 4; mu++)
                g.partitioned[mu] = (wraps[k] >> mu) & 1;
            snprintf(name, sizeof name, "1 1 1 1 wrap %c%c%c%c", g.partitioned[0] ? 'x' : '-',
                     g.partitioned[1] ? 'y' : '-', g.partitioned[2] ? 'z' : '-',
                     g.partitioned[3] ? 't' : '-');
            on_grid(dims, &g, name, r);
        }
        return;
    }
    for (int pt = 1; pt <= nranks; pt++)
        for (int pz = 1; pz <= nranks; pz++)
            for (int py = 1; py <= nranks; py++)
                for (int px = 1; px <= nranks; px++) {
                    const int p[4] = {px, py, pz, pt};
                    wd_grid g;
                    if (px * py * pz * pt != nranks ||
                        wd_grid_make(&g, dims, p, nranks, rank, 2) != WD_OK)
                        continue;
                    char name[64];
                    snprintf(name, sizeof name, "%d %d %d %d", px, py, pz, pt);
                    on_grid(dims, &g, name, r);
                }
}

/* ---- timing -------------------------------------------------------------- */

static double clock_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double now(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

static int timing(const int dims[4], uint64_t seed)
{
    const size_t vol = wd_volume(dims);
    double complex *u = xalloc(36 * vol * sizeof *u);
    double *a = xalloc(72 * vol * sizeof *a), *inv = xalloc(72 * vol * sizeof *inv);
    wd_rng r;
    wd_rng_seed(&r, seed);
    wd_gauge_random(u, dims, &r);
    const wd_grid g = one_grid(dims);
    /* wall time, best of 5, and the CPU time of all threads (what a
     * loaded machine does not inflate) */
    double best_f = INFINITY, best_i = INFINITY, cpu_f = INFINITY, cpu_i = INFINITY;
    for (int rep = 0; rep < 5; rep++) {
        const double t0 = now(), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        if (wd_clover_field(a, (const double *)u, &g, 0.25) != WD_OK)
            goto fail;
        const double t1 = now(), c1 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        if (wd_clover_invert(inv, a, vol, &g) != WD_OK)
            goto fail;
        const double t2 = now(), c2 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        best_f = fmin(best_f, t1 - t0);
        best_i = fmin(best_i, t2 - t1);
        cpu_f = fmin(cpu_f, c1 - c0);
        cpu_i = fmin(cpu_i, c2 - c1);
    }
    printf("%dx%dx%dx%d, %d thread(s), best of 5: wd_clover_field %.1f ms (%.3f us/site, "
           "CPU %.1f ms), wd_clover_invert %.1f ms (%.3f us/site, CPU %.1f ms)\n", dims[0],
           dims[1], dims[2], dims[3], omp_get_max_threads(), 1e3 * best_f,
           1e6 * best_f / (double)vol, 1e3 * cpu_f, 1e3 * best_i, 1e6 * best_i / (double)vol,
           1e3 * cpu_i);
    free(u), free(a), free(inv);
    return 0;
fail:
    fprintf(stderr, "test_clover_field: %s\n", wd_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    if (wd_init(&argc, &argv) != WD_OK) {
        fprintf(stderr, "test_clover_field: %s\n", wd_last_error());
        return 1;
    }
    rank = wd_comm_rank();
    nranks = wd_comm_size();
    uint64_t seed = (uint64_t)time(NULL);
    int time_dims[4] = {16, 16, 16, 32}, timed = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--time")) {
            timed = 1;
            for (int mu = 0; mu < 4 && i + 1 < argc && argv[i + 1][0] >= '0' &&
                             argv[i + 1][0] <= '9'; mu++)
                time_dims[mu] = atoi(argv[++i]);
        }
    }
    if (timed) {
        const int rc = timing(time_dims, seed);
        wd_finalize();
        return rc;
    }
    double s0 = rank == 0 ? (double)(seed % (1ull << 52)) : 0;
    wd_comm_bcast(&s0, sizeof s0, 0);
    seed = (uint64_t)s0;
    if (rank == 0)
        printf("test_clover_field: %d rank(s), seed %llu (--seed N replays)\n", nranks,
               (unsigned long long)seed);
    wd_rng r;
    wd_rng_seed(&r, seed);
    const int lattices[4][4] = {{4, 4, 4, 4}, {4, 6, 4, 8}, {6, 4, 8, 4}, {8, 4, 4, 6}};
    for (int k = 0; k < 4; k++)
        against_reference(lattices[k], &r);
    refusals(lattices[1], &r);
    grids(lattices[0], &r);
    grids(lattices[1], &r);
    grids((const int[4]){8, 4, 4, 8}, &r);
    if (rank == 0)
        printf("%d of %d failed\n", checks_failed, checks_run);
    wd_finalize();
    return checks_failed ? 1 : 0;
}
