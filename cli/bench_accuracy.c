/*
 * accuracy_bench.c: `wdirac bench accuracy`, the accuracy of the even-odd
 * operator in every precision, reconstruction and gauge fixing (the paper's
 * section "Performance versus accuracy", Figure 6).
 *
 * The externally accessible function is
 *   wd_bench_accuracy_main   parse the subcommand's options, apply Mhat_ee
 *                            with every selected built variant and with the
 *                            float64 reference, print the table, write JSON
 *
 * Measurement (the paper's): a Haar-random SU(3) gauge field, a source eta
 * whose components have real and imaginary parts uniform in [0, 1), and
 * Mhat_ee eta = eta - kappa^2 D_eo D_oe eta computed twice: by the backend
 * (upload: basis change and packing into the variant's precision; the two
 * Dslash applications of wd_eo_mhat; download: unpacking and the basis
 * change back; the whole round trip, as the paper's M^GPU includes the
 * transfers) and by ref_schur in float64.  Over the N = 12 V/2 complex
 * degrees of freedom of the even sites,
 *   Delta(eps) = (1/N) #{ i : |(Mhat eta)_i - (Mhat_ref eta)_i| >= eps },
 * a stochastic estimate of the complementary distribution of the error,
 * on a logarithmic grid of eps; with the largest deviation (where the
 * curve reaches 0: the paper's "accuracy of the kernel"), the median
 * deviation and the relative L2 error.
 *
 * Gauge-fixed variants run on the same field in temporal gauge
 * (wd_temporal_gauge, wd_gauge_transform), and the reference applies
 * ref_schur to that field.  The transformation multiplies up to T links
 * per site, so its links are unitary only to about T ulp (1e-14 at
 * T = 32), which recon 12 and 8 (they assume SU(3)) would turn into a
 * double-precision deviation of up to 1e-13 that is the field's, not the
 * kernel's: every link is reunitarized, and the temporal links below the
 * last time slice are set to exactly the unit matrix those variants
 * assume.  The curves measure the kernels.  The source eta is the same for
 * every variant.
 *
 * Clover operators (dslashcl_<p>_r<r>_gf<g>): the symmetric Schur operator
 * 1 - kappa^2 A_ee^-1 D_eo A_oo^-1 D_oe with c_sw = --csw (default 1) on
 * the same field, A and A^-1 built in double by clover_field.c and stored
 * in the variant's precision, against ref_clover_schur with the reference's
 * own clover term and inverse (ref_clover.h).
 */
#include <complex.h>
#include <fnmatch.h>
#include <jansson.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clover_field.h"
#include "gauge_tools.h"
#include "ref_clover.h"
#include "ref_wilson.h"
#include "wd_backend.h"
#include "wd_core.h"
#include "cli_bench.h"
#include "wd_operator.h"
#include "wd_solver.h"
#include "wd_version.h"

/* The operator of one (operator, precision, recon, gauge fixing): 2 x 3 x 3 x 2. */
#define NCOMBO 36
/* eps of the table's Delta columns */
#define NCOL 8
static const double col_eps[NCOL] = {1e-16, 1e-14, 1e-12, 1e-10, 1e-8, 1e-6, 1e-4, 1e-2};
static const char *const col_label[NCOL] = {"1e-16", "1e-14", "1e-12", "1e-10",
                                            "1e-8",  "1e-6",  "1e-4",  "1e-2"};

typedef struct result {
    int clover, precision, recon, gauge_fix;
    char name[32];      /* dslash_s_r12_gf0, dslashcl_...: the variant names without _dag/_xpay */
    double *delta;      /* one per eps */
    double max_dev, median_dev, rel_l2, max_ref;
    int failed;         /* the backend failed: no statistics, not in the JSON */
} result;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: wdirac bench accuracy [options]\n"
            "  --backend cpu|cuda    backend whose operator is measured (default cpu)\n"
            "  --dims X Y Z T        lattice (default 24 24 24 32, the paper's)\n"
            "  --kappa K             hopping parameter (default 0.138889, mass -0.4)\n"
            "  --mass M              bare mass instead (kappa = 1/(2(4+m)))\n"
            "  --tbc periodic|antiperiodic  time boundary of the fermions (default antiperiodic)\n"
            "  --csw C               c_sw of the clover operators (default 1)\n"
            "  --kernels GLOB        operators whose name (dslash_s_r12_gf0) or Dslash variant\n"
            "                        name (wdirac list) matches (default every built one)\n"
            "  --eps-min E           smallest eps of the Delta curve (default 1e-17)\n"
            "  --eps-max E           largest eps (default 1)\n"
            "  --per-decade N        eps points per decade (default 4)\n"
            "  --seed N              gauge field and source seed (default 1)\n"
            "  --json FILE           also write the results as JSON\n");
}

static char precision_letter(int p)
{
    return p == 8 ? 'd' : p == 4 ? 's' : 'h';
}

/* Delta(eps) from the deviations sorted ascending: the fraction >= eps. */
static double delta_at(const double *sorted, size_t n, double eps)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (sorted[mid] < eps)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (double)(n - lo) / (double)n;
}

static int parity_of(const int dims[4], size_t site)
{
    size_t r = site;
    int sum = 0;
    for (int mu = 0; mu < 4; ++mu) {
        sum += (int)(r % (size_t)dims[mu]);
        r /= (size_t)dims[mu];
    }
    return sum & 1;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* max |z_i| (the reference is zero on the odd sites) */
static double max_abs(const double complex *z, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; ++i)
        m = fmax(m, cabs(z[i]));
    return m;
}

/* u in temporal gauge, SU(3) to rounding, its unit links exactly unit
 * (see the top). */
static int temporal_gauge_field(double complex *uf, const double complex *u, const int dims[4])
{
    double complex *g = malloc(wd_volume(dims) * 9 * sizeof *g);
    if (!g)
        return 0;
    wd_temporal_gauge_field(uf, g, u, dims);
    free(g);
    return 1;
}

/* The backend's Mhat eta on the even sites: upload, apply, download. */
static wd_status backend_mhat(wd_backend *be, const result *r, const double complex *u,
                              const double *ainv_host, const double complex *eta, int tbc,
                              double kappa, double complex *out)
{
    wd_gauge g;
    wd_clover ainv;
    wd_field in, res, tmp, tmp_e;
    memset(&in, 0, sizeof in), memset(&res, 0, sizeof res), memset(&tmp, 0, sizeof tmp);
    memset(&tmp_e, 0, sizeof tmp_e), memset(&ainv, 0, sizeof ainv);
    wd_status st = wd_gauge_create(be, &g, (const double *)u, r->precision, r->recon,
                                   r->gauge_fix, tbc);
    if (st != WD_OK)
        return st;
    wd_eo_op op;
    if ((st = wd_field_create(be, &in, r->precision)) == WD_OK &&
        (st = wd_field_create(be, &res, r->precision)) == WD_OK &&
        (st = wd_field_create(be, &tmp, r->precision)) == WD_OK &&
        (st = wd_eo_op_init(&op, be, &g, kappa, &tmp, 0)) == WD_OK && r->clover &&
        (st = wd_field_create(be, &tmp_e, r->precision)) == WD_OK &&
        (st = wd_clover_create(be, &ainv, ainv_host, r->precision)) == WD_OK)
        st = wd_eo_op_clover(&op, NULL, &ainv, 1, &tmp_e, 0);
    if (st == WD_OK &&
        (st = be->ops->upload(be, &in, (const double *)eta, 0)) == WD_OK &&
        (st = wd_eo_mhat(&op, &res, &in, 0)) == WD_OK)
        st = be->ops->download(be, (double *)out, &res, 0);
    if (st == WD_OK && be->error != WD_OK)
        st = be->error;
    wd_clover_destroy(be, &ainv);
    wd_field_destroy(be, &tmp_e);
    wd_field_destroy(be, &tmp);
    wd_field_destroy(be, &res);
    wd_field_destroy(be, &in);
    wd_gauge_destroy(be, &g);
    return st;
}

/* The symmetric clover Schur operator of links u in float64 with the
 * reference's own clover term: ref; and the production A^-1 blocks
 * (clover_field.c) the backend stores: ainv.  0 on failure (message set). */
static int clover_reference(double complex *ref, double *ainv, const double complex *u,
                            const double complex *eta, const int dims[4], double mass,
                            double csw, int tbc)
{
    const size_t vol = wd_volume(dims);
    double complex *fhat = malloc(vol * 54 * sizeof *fhat);
    double complex *t = malloc(vol * 144 * sizeof *t), *a = malloc(vol * 144 * sizeof *a);
    double complex *ai = malloc(vol * 144 * sizeof *ai), *tmp = malloc(vol * 12 * sizeof *tmp);
    int ok = fhat && t && a && ai && tmp;
    if (!ok)
        wd_fail(WD_ERR_NOMEM, "the clover reference fields");
    if (ok) {
        ref_clover_fhat(fhat, u, dims);
        ref_clover_term(t, fhat, vol, csw / (4.0 + mass));
        for (size_t i = 0; i < vol * 144; ++i)
            a[i] = t[i] + (i % 13 == 0 ? 1.0 : 0.0);
        if (ref_clover_invert(ai, t, vol, 1.0) >= 0) {
            wd_fail(WD_ERR_INVALID, "the reference clover matrix is singular (--csw too large)");
            ok = 0;
        }
    }
    if (ok)
        ref_clover_schur(ref, u, a, ai, eta, tmp, dims, mass, tbc, 0, 1);
    if (ok) {
        wd_grid g;
        const int one[4] = {1, 1, 1, 1};
        ok = wd_grid_make(&g, dims, one, 1, 0, 4) == WD_OK &&
             wd_clover_field(ainv, (const double *)u, &g, csw / (4.0 + mass)) == WD_OK &&
             wd_clover_invert(ainv, ainv, vol, &g) == WD_OK;
    }
    free(fhat), free(t), free(a), free(ai), free(tmp);
    return ok;
}

/* Deviations of out from ref on the even sites into dev (sorted on
 * return); fills r's statistics and curve.  Returns the number of
 * non-finite outputs (counted as deviating at every eps). */
static size_t compare(result *r, const double complex *out, const double complex *ref,
                      const int dims[4], double *dev, size_t n, const double *eps, int neps)
{
    const size_t vol = wd_volume(dims);
    size_t k = 0, bad = 0;
    double num = 0, den = 0, max_ref = 0;
    for (size_t site = 0; site < vol; ++site) {
        if (parity_of(dims, site) != 0)
            continue;
        for (int c = 0; c < 12; ++c) {
            const size_t i = 12 * site + (size_t)c;
            double d = cabs(out[i] - ref[i]);
            if (!isfinite(d)) {
                d = INFINITY;
                bad++;
            } else {
                num += d * d;
            }
            den += creal(ref[i] * conj(ref[i]));
            max_ref = fmax(max_ref, cabs(ref[i]));
            dev[k++] = d;
        }
    }
    /* sorted by hand: N may pass INT_MAX, wd_bench_median's limit */
    qsort(dev, n, sizeof *dev, cmp_double);
    r->median_dev = n % 2 ? dev[n / 2] : 0.5 * (dev[n / 2 - 1] + dev[n / 2]);
    r->max_dev = dev[n - 1];
    r->rel_l2 = bad ? INFINITY : sqrt(num / den);
    r->max_ref = max_ref;
    for (int e = 0; e < neps; ++e)
        r->delta[e] = delta_at(dev, n, eps[e]);
    return bad;
}

static int write_json(const char *path, const char *backend, const char *device,
                      uint64_t seed, const int dims[4], double kappa, double mass, int tbc,
                      const double *eps, int neps, size_t n, const result *res, int nres,
                      char skipped[][32], int nskipped)
{
    json_t *root = wd_bench_json_run("accuracy", backend, device, seed), *jeps = json_array(),
           *jres = json_array(), *jskip = json_array();
    json_object_set_new(root, "dims", json_pack("[iiii]", dims[0], dims[1], dims[2], dims[3]));
    json_object_set_new(root, "kappa", json_real(kappa));
    json_object_set_new(root, "mass", json_real(mass));
    json_object_set_new(root, "tbc", json_integer(tbc));
    json_object_set_new(root, "n_dof", json_integer((json_int_t)n));
    json_object_set_new(root, "gauge", json_string("Haar-random SU(3); gauge_fix 1: the same "
                                                   "field in temporal gauge, reunitarized"));
    json_object_set_new(root, "source", json_string("re, im uniform in [0, 1)"));
    for (int e = 0; e < neps; ++e)
        json_array_append_new(jeps, json_real(eps[e]));
    json_object_set_new(root, "eps", jeps);
    for (int k = 0; k < nres; ++k) {
        const result *r = &res[k];
        if (r->failed)
            continue;
        json_t *jd = json_array();
        for (int e = 0; e < neps; ++e)
            json_array_append_new(jd, json_real(r->delta[e]));
        const char p[2] = {precision_letter(r->precision), 0};
        json_array_append_new(
            jres, json_pack("{s:s, s:s, s:i, s:i, s:s, s:o, s:f, s:f, s:f, s:f}", "operator",
                            r->clover ? "clover" : "wilson", "precision", p,
                            "recon", r->recon, "gauge_fix", r->gauge_fix, "variant", r->name,
                            "delta", jd, "max_dev", r->max_dev, "median_dev", r->median_dev,
                            "rel_l2", r->rel_l2, "max_ref", r->max_ref));
    }
    json_object_set_new(root, "results", jres);
    for (int k = 0; k < nskipped; ++k)
        json_array_append_new(jskip, json_string(skipped[k]));
    json_object_set_new(root, "skipped", jskip);
    const int rc = json_dump_file(root, path, JSON_INDENT(1));
    json_decref(root);
    if (rc != 0)
        fprintf(stderr, "wdirac bench accuracy: cannot write %s\n", path);
    return rc == 0;
}

/* Whether combination r is selected by glob and built; *skip when it is
 * selected but not built.  The name is generator/naming.py's spelling
 * without the dagger and xpay parts, checked against the registry. */
static int select_combo(result *r, const char *glob, int *skip, int *mismatch)
{
    snprintf(r->name, sizeof r->name, "%s_%c_r%d_gf%d", r->clover ? "dslashcl" : "dslash",
             precision_letter(r->precision), r->recon, r->gauge_fix);
    const size_t len = strlen(r->name);
    int built = 1, match = fnmatch(glob, r->name, 0) == 0;
    *skip = *mismatch = 0;
    if (r->clover && wd_variant_find_op(WD_OP_CLOVER, r->precision, 0, 0, 0, 0) < 0)
        built = 0;
    for (int xpay = 0; xpay < 2; ++xpay) {
        const int k = wd_variant_find_op(r->clover ? WD_OP_WILSON_CLOVER : WD_OP_WILSON,
                                         r->precision, r->recon, r->gauge_fix, 0, xpay);
        if (k < 0) {
            built = 0;
            continue;
        }
        match |= fnmatch(glob, wd_variants[k].name, 0) == 0;
        if (strncmp(wd_variants[k].name, r->name, len) || wd_variants[k].name[len] != '_')
            *mismatch = 1;
    }
    *skip = match && !built;
    return match && built;
}

int wd_bench_accuracy_main(int argc, char **argv)
{
    int dims[4] = {24, 24, 24, 32};
    const char *glob = "*", *json_path = NULL;
    double mass = -0.4, eps_min = 1e-17, eps_max = 1.0, csw = 1.0;
    int per_decade = 4, tbc = WD_TIME_ANTIPERIODIC, cuda = 0;
    uint64_t seed = 1;

    for (int k = 0; k < argc; ++k) {
        const char *a = argv[k];
        const int more = k + 1 < argc;
        if (!strcmp(a, "--dims") && k + 4 < argc) {
            for (int mu = 0; mu < 4; ++mu)
                dims[mu] = atoi(argv[++k]);
        } else if (!strcmp(a, "--backend") && more) {
            const char *b = argv[++k];
            if (strcmp(b, "cpu") && strcmp(b, "cuda")) {
                fprintf(stderr, "wdirac bench accuracy: --backend must be cpu or cuda\n");
                return 2;
            }
            cuda = !strcmp(b, "cuda");
        } else if (!strcmp(a, "--kappa") && more) {
            mass = 1.0 / (2.0 * atof(argv[++k])) - 4.0;
        } else if (!strcmp(a, "--mass") && more) {
            mass = atof(argv[++k]);
        } else if (!strcmp(a, "--tbc") && more) {
            const char *t = argv[++k];
            if (strcmp(t, "periodic") && strcmp(t, "antiperiodic")) {
                fprintf(stderr, "wdirac bench accuracy: --tbc must be periodic or antiperiodic\n");
                return 2;
            }
            tbc = !strcmp(t, "periodic") ? WD_TIME_PERIODIC : WD_TIME_ANTIPERIODIC;
        } else if (!strcmp(a, "--csw") && more) {
            csw = atof(argv[++k]);
        } else if (!strcmp(a, "--kernels") && more) {
            glob = argv[++k];
        } else if (!strcmp(a, "--eps-min") && more) {
            eps_min = atof(argv[++k]);
        } else if (!strcmp(a, "--eps-max") && more) {
            eps_max = atof(argv[++k]);
        } else if (!strcmp(a, "--per-decade") && more) {
            per_decade = atoi(argv[++k]);
        } else if (!strcmp(a, "--seed") && more) {
            seed = strtoull(argv[++k], NULL, 0);
        } else if (!strcmp(a, "--json") && more) {
            json_path = argv[++k];
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "wdirac bench accuracy: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (wd_check_dims(dims) != WD_OK) {
        fprintf(stderr, "wdirac bench accuracy: %s\n", wd_last_error());
        return 2;
    }
    const double kappa = 1.0 / (2.0 * (4.0 + mass));
    if (!(kappa > 0 && isfinite(kappa) && isfinite(mass)) ||
        !(eps_min > 0 && eps_max >= eps_min && isfinite(eps_max)) || per_decade < 1 ||
        per_decade > 100) {
        fprintf(stderr, "wdirac bench accuracy: need kappa > 0 (mass > -4), "
                        "0 < eps-min <= eps-max and 1 <= per-decade <= 100\n");
        return 2;
    }
    /* eps_i = eps_min 10^(i / per_decade) up to eps_max (with rounding slack) */
    const int neps = (int)floor(log10(eps_max / eps_min) * per_decade + 1e-9) + 1;
    double *eps = malloc((size_t)neps * sizeof *eps);
    if (!eps) {
        fprintf(stderr, "wdirac bench accuracy: out of memory\n");
        return 3;
    }
    for (int e = 0; e < neps; ++e)
        eps[e] = eps_min * pow(10.0, (double)e / per_decade);

    result res[NCOMBO];
    char skipped[NCOMBO][32];
    int nres = 0, nskipped = 0;
    static const int precisions[3] = {8, 4, 2}, recons[3] = {18, 12, 8};
    for (int c = 0; c < 2; ++c)
    for (int p = 0; p < 3; ++p)
        for (int q = 0; q < 3; ++q)
            for (int gf = 0; gf < 2; ++gf) {
                result *r = &res[nres];
                memset(r, 0, sizeof *r);
                r->clover = c;
                r->precision = precisions[p], r->recon = recons[q], r->gauge_fix = gf;
                int skip, mismatch;
                if (select_combo(r, glob, &skip, &mismatch))
                    nres++;
                else if (skip)
                    snprintf(skipped[nskipped++], sizeof skipped[0], "%s", r->name);
                if (mismatch) {
                    fprintf(stderr, "wdirac bench accuracy: the registry does not spell %s "
                                    "as generator/naming.py does\n", r->name);
                    free(eps);
                    return 3;
                }
            }

    const size_t vol = wd_volume(dims), n = 12 * (vol / 2);
    double complex *u = malloc(vol * 36 * sizeof *u), *uf = malloc(vol * 36 * sizeof *uf);
    double complex *eta = malloc(vol * 12 * sizeof *eta), *out = malloc(vol * 12 * sizeof *out);
    /* ref[c][gf]: Wilson (c = 0) and clover (c = 1) reference on u or uf */
    double complex *ref[2][2] = {{malloc(vol * 12 * sizeof ***ref), malloc(vol * 12 * sizeof ***ref)},
                                 {NULL, NULL}};
    double *ainv[2] = {NULL, NULL};  /* the production A^-1 of u, uf */
    int need_clover = 0;
    for (int k = 0; k < nres; ++k)
        need_clover |= res[k].clover;
    if (need_clover)
        for (int gf = 0; gf < 2; ++gf) {
            ref[1][gf] = malloc(vol * 12 * sizeof ***ref);
            ainv[gf] = malloc(vol * WD_CLOVER_SITE_REALS * sizeof **ainv);
        }
    double *dev = malloc(n * sizeof *dev);
    int ok = u && uf && eta && out && ref[0][0] && ref[0][1] && dev &&
             (!need_clover || (ref[1][0] && ref[1][1] && ainv[0] && ainv[1]));
    for (int k = 0; k < nres && ok; ++k)
        ok = (res[k].delta = malloc((size_t)neps * sizeof *res[k].delta)) != NULL;
    wd_rng rng;
    wd_rng_seed(&rng, seed);
    if (ok) {
        wd_gauge_random(u, dims, &rng);
        for (size_t i = 0; i < vol * 12; ++i)
            eta[i] = CMPLX(wd_rng_uniform(&rng), wd_rng_uniform(&rng));
        ok = temporal_gauge_field(uf, u, dims);
    }
    int rc = 0;
    wd_backend be;
    memset(&be, 0, sizeof be);
    if (!ok) {
        fprintf(stderr, "wdirac bench accuracy: out of memory for the %dx%dx%dx%d fields\n",
                dims[0], dims[1], dims[2], dims[3]);
        rc = 3;
        goto out;
    }
    if (wd_backend_open(&be, cuda ? WD_BACKEND_CUDA : WD_BACKEND_CPU, dims, 0) != WD_OK) {
        fprintf(stderr, "wdirac bench accuracy: %s\n", wd_last_error());
        rc = 2;
        goto out;
    }
    const double complex *fields[2] = {u, uf};
    for (int gf = 0; gf < 2; ++gf) {
        ref_schur(ref[0][gf], fields[gf], eta, dims, mass, tbc, 0);
        if (need_clover &&
            !clover_reference(ref[1][gf], ainv[gf], fields[gf], eta, dims, mass, csw, tbc)) {
            fprintf(stderr, "wdirac bench accuracy: %s\n", wd_last_error());
            rc = 2;
            goto out;
        }
    }

    char device[256];
    wd_bench_device(device, sizeof device, cuda);
    printf("wdirac bench accuracy  backend %s  device \"%s\"  threads %d\n", cuda ? "cuda" : "cpu",
           device, omp_get_max_threads());
    printf("lattice %dx%dx%dx%d  kappa %.6f (mass %.4f)  time bc %s  seed %llu  commit %s\n",
           dims[0], dims[1], dims[2], dims[3], kappa, mass,
           tbc == WD_TIME_PERIODIC ? "periodic" : "antiperiodic", (unsigned long long)seed,
           WD_GIT_COMMIT);
    printf("Mhat_ee eta, host -> backend -> host, against the float64 reference; "
           "N = %zu complex components\n"
           "gauge: Haar-random SU(3) (gf1: in temporal gauge, reunitarized); "
           "eta: re, im uniform in [0, 1); max |reference| %.3g\n\n",
           n, max_abs(ref[0][0], vol * 12));
    if (need_clover)
        printf("clover (dslashcl): the symmetric Schur operator, c_sw %g\n\n", csw);
    printf("%-18s %9s %9s %9s |", "variant", "max_dev", "median", "rel_l2");
    for (int c = 0; c < NCOL; ++c)
        printf(" %5s", col_label[c]);
    printf("\n");
    int failed = 0;
    for (int k = 0; k < nres; ++k) {
        result *r = &res[k];
        for (size_t i = 0; i < vol * 12; ++i)
            out[i] = NAN;
        const wd_status st = backend_mhat(&be, r, fields[r->gauge_fix], ainv[r->gauge_fix], eta,
                                          tbc, kappa, out);
        if (st != WD_OK) {
            printf("%-18s FAILED: %s\n", r->name, wd_last_error());
            be.error = WD_OK;
            r->failed = 1;
            failed++;
            continue;
        }
        const size_t bad = compare(r, out, ref[r->clover][r->gauge_fix], dims, dev, n, eps, neps);
        printf("%-18s %9.2e %9.2e %9.2e |", r->name, r->max_dev, r->median_dev, r->rel_l2);
        for (int c = 0; c < NCOL; ++c)
            printf(" %5.3f", delta_at(dev, n, col_eps[c]));
        printf("\n");
        if (bad) {
            printf("  %zu of %zu outputs are not finite\n", bad, n);
            failed++;
        }
        fflush(stdout);
    }
    for (int k = 0; k < nskipped; ++k)
        printf("%-18s skipped: not built (needs its dag0 xpay0 and xpay1 variants; "
               "meson option -Dkernels)\n", skipped[k]);
    if (!nres && !nskipped)
        fprintf(stderr, "wdirac bench accuracy: no operator matches '%s'\n", glob);
    printf("\nmax_dev: largest |deviation| (where Delta reaches 0), median: median |deviation|, "
           "rel_l2: ||deviation|| / ||reference||;\ncolumns 1e-16 ... 1e-2: Delta(eps), the "
           "fraction of the N components with |deviation| >= eps\n");

    /* a selection of only unbuilt operators is reported above, not a failure */
    rc = failed || (!nres && !nskipped) ? 1 : 0;
    if (json_path && !write_json(json_path, cuda ? "cuda" : "cpu", device, seed, dims, kappa, mass,
                                 tbc, eps, neps, n, res, nres, skipped, nskipped))
        rc = 1;
out:
    wd_backend_close(&be);
    for (int k = 0; k < nres; ++k)
        free(res[k].delta);
    free(u), free(uf), free(eta), free(out), free(dev), free(eps);
    for (int c = 0; c < 2; ++c)
        free(ref[c][0]), free(ref[c][1]), free(ainv[c]);
    return rc;
}
