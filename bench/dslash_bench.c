/*
 * dslash_bench.c: `wdirac bench dslash`, the Dslash benchmark.
 *
 * The externally accessible function is
 *   wd_bench_dslash_main   parse the subcommand's options, time every
 *                          selected variant, print the table, write JSON
 *
 * Measurement rules (DESIGN.md): D applied from one parity to the other
 * (V/2 output sites), 1320 flops per output site (+48 for xpay), bytes at the
 * fewest-bytes model (each needed link once at its stored size, 6 instead of
 * 8 with gauge fixing; input, output and xpay spinors once; half-precision
 * norms included); random fields, never zeros; warm-up calls, then the median
 * of many timed calls.  The copy bandwidth of the same machine (bytes read +
 * written by a large memcpy) is measured in the same run and every variant's
 * effective bandwidth is reported as a fraction of it.
 */
#include <complex.h>
#include <fnmatch.h>
#include <jansson.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gauge_tools.h"
#include "wd_bench.h"
#include "wd_layout.h"
#include "wd_registry.h"
#include "wd_version.h"

#define FLOPS_PER_SITE 1320.0
#define XPAY_FLOPS_PER_SITE 48.0

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Fewest bytes one parity application must move, per output site. */
double wd_dslash_bytes_per_site(int precision, int recon, int gauge_fix, int xpay)
{
    const double norm = precision == 2 ? sizeof(float) : 0;
    const double spinor = 24.0 * precision + norm;
    const double links = gauge_fix ? 6 : 8;
    return links * recon * precision + spinor * (2 + xpay);
}

double wd_dslash_flops_per_site(int xpay)
{
    return FLOPS_PER_SITE + (xpay ? XPAY_FLOPS_PER_SITE : 0);
}

/* Host copy bandwidth: median of memcpy over a buffer far larger than cache. */
static double host_copy_gbps(void)
{
    const size_t n = (size_t)256 << 20;
    char *a = malloc(n), *b = malloc(n);
    if (!a || !b) {
        free(a);
        free(b);
        return 0;
    }
    memset(a, 1, n);
    memset(b, 2, n);
    double t[7];
    for (int r = 0; r < 7; ++r) {
        const double t0 = now_s();
        const int nt = omp_get_max_threads();
#pragma omp parallel for schedule(static)
        for (int k = 0; k < nt; ++k) {
            const size_t lo = n / nt * k, hi = k == nt - 1 ? n : n / nt * (k + 1);
            memcpy(b + lo, a + lo, hi - lo);
        }
        t[r] = now_s() - t0;
    }
    free(a);
    free(b);
    return 2.0 * n / median(t, 7) / 1e9;
}

static void cpu_name(char *buf, size_t len)
{
    snprintf(buf, len, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "model name", 10)) {
            const char *p = strchr(line, ':');
            if (p) {
                snprintf(buf, len, "%s", p + 2);
                buf[strcspn(buf, "\n")] = 0;
            }
            break;
        }
    }
    fclose(f);
}

typedef struct bench_row {
    const char *name;
    double us, us_site, gflops, gbps;
} bench_row;

static int bench_variant(const wd_variant *v, const int dims[4], int pad, int reps,
                         const double complex *u, const double complex *ufixed,
                         const double complex *in, bench_row *row)
{
    wd_spinor_layout sl;
    wd_gauge_layout gl;
    if (wd_spinor_layout_make(&sl, dims, v->precision, pad) != WD_OK ||
        wd_gauge_layout_make(&gl, dims, v->precision, v->recon, v->gauge_fix, pad) != WD_OK) {
        fprintf(stderr, "wdirac bench dslash: %s\n", wd_last_error());
        return 0;
    }
    void *g = malloc(gl.bytes), *i = malloc(sl.bytes), *o = malloc(sl.bytes), *x = malloc(sl.bytes);
    float *norms = malloc(3 * (size_t)sl.volume_cb * sizeof(float));
    double *t = malloc((size_t)reps * sizeof *t);
    int ok = g && i && o && x && norms && t;
    if (!ok) {
        fprintf(stderr, "wdirac bench dslash: %s: out of memory\n", v->name);
        goto done;
    }
    wd_pack_gauge(&gl, g, v->gauge_fix ? ufixed : u, dims);
    wd_pack_spinor(&sl, i, norms, in, dims, 1);
    wd_pack_spinor(&sl, x, norms + 2 * sl.volume_cb, in, dims, 0);
    wd_dslash_args a;
    memset(&a, 0, sizeof a);
    wd_dslash_args_set(&a, &sl, &gl, dims, 0, -1);
    a.out = o;
    a.out_norm = norms + sl.volume_cb;
    a.in = i;
    a.in_norm = norms;
    a.x = x;
    a.x_norm = norms + 2 * sl.volume_cb;
    a.gauge = g;
    a.a = -0.0157;
    for (int w = 0; w < 2; ++w)
        v->cpu(&a);
    for (int r = 0; r < reps; ++r) {
        const double t0 = now_s();
        v->cpu(&a);
        t[r] = now_s() - t0;
    }
    const double sec = median(t, reps);
    row->name = v->name;
    row->us = sec * 1e6;
    row->us_site = row->us / sl.volume_cb;
    row->gflops = wd_dslash_flops_per_site(v->xpay) * sl.volume_cb / sec / 1e9;
    row->gbps = wd_dslash_bytes_per_site(v->precision, v->recon, v->gauge_fix, v->xpay) *
                sl.volume_cb / sec / 1e9;
done:
    free(g);
    free(i);
    free(o);
    free(x);
    free(norms);
    free(t);
    return ok;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: wdirac bench dslash [options]\n"
            "  --backend cpu|cuda   backend to time (default cpu; cuda arrives with the GPU backend)\n"
            "  --dims X Y Z T       lattice extents (default 16 16 16 16)\n"
            "  --kernels GLOB       variants to time (default: every built variant)\n"
            "  --reps N             timed calls per variant, median reported (default 10)\n"
            "  --pad N              padding between field sub-arrays, in elements (default 0)\n"
            "  --seed N             random field seed (default 1)\n"
            "  --json FILE          also write the results as JSON\n");
}

int wd_bench_dslash_main(int argc, char **argv)
{
    int dims[4] = {16, 16, 16, 16}, reps = 10, pad = 0;
    uint64_t seed = 1;
    const char *glob = "*", *json_path = NULL, *backend = "cpu";
    for (int k = 0; k < argc; ++k) {
        if (!strcmp(argv[k], "--dims") && k + 4 < argc) {
            for (int mu = 0; mu < 4; ++mu)
                dims[mu] = atoi(argv[++k]);
        } else if (!strcmp(argv[k], "--kernels") && k + 1 < argc) {
            glob = argv[++k];
        } else if (!strcmp(argv[k], "--reps") && k + 1 < argc) {
            reps = atoi(argv[++k]);
        } else if (!strcmp(argv[k], "--pad") && k + 1 < argc) {
            pad = atoi(argv[++k]);
        } else if (!strcmp(argv[k], "--seed") && k + 1 < argc) {
            seed = strtoull(argv[++k], NULL, 0);
        } else if (!strcmp(argv[k], "--json") && k + 1 < argc) {
            json_path = argv[++k];
        } else if (!strcmp(argv[k], "--backend") && k + 1 < argc) {
            backend = argv[++k];
        } else if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "wdirac bench dslash: unknown or incomplete option '%s'\n", argv[k]);
            usage(stderr);
            return 2;
        }
    }
    if (strcmp(backend, "cpu") != 0) {
        fprintf(stderr, "wdirac bench dslash: backend '%s' is not available in this build "
                        "(the CPU backend is; the CUDA runtime is issue 3)\n", backend);
        return 2;
    }
    if (reps < 1) {
        fprintf(stderr, "wdirac bench dslash: --reps must be >= 1\n");
        return 2;
    }
    if (wd_check_dims(dims) != WD_OK) {
        fprintf(stderr, "wdirac bench dslash: %s\n", wd_last_error());
        return 2;
    }

    const size_t vol = wd_volume(dims);
    double complex *u = malloc(vol * 36 * sizeof *u), *uf = malloc(vol * 36 * sizeof *uf);
    double complex *gt = malloc(vol * 9 * sizeof *gt), *in = malloc(vol * 12 * sizeof *in);
    bench_row *rows = calloc((size_t)wd_variant_count, sizeof *rows);
    if (!u || !uf || !gt || !in || !rows) {
        fprintf(stderr, "wdirac bench dslash: out of memory for a %zu-site lattice\n", vol);
        free(u), free(uf), free(gt), free(in), free(rows);
        return 3;
    }
    wd_rng rng;
    wd_rng_seed(&rng, seed);
    wd_gauge_random(u, dims, &rng);
    wd_spinor_random(in, dims, &rng);
    memcpy(uf, u, vol * 36 * sizeof *u);
    wd_temporal_gauge(gt, u, dims);
    wd_gauge_transform(uf, gt, dims);

    char cpu[256];
    cpu_name(cpu, sizeof cpu);
    const double copy = host_copy_gbps();
    printf("wdirac bench dslash  backend cpu  device \"%s\"  threads %d\n", cpu, omp_get_max_threads());
    printf("lattice %dx%dx%dx%d (%d output sites)  pad %d  seed %llu  reps %d  commit %s\n",
           dims[0], dims[1], dims[2], dims[3], (int)(vol / 2), pad, (unsigned long long)seed, reps,
           WD_GIT_COMMIT);
    printf("host copy bandwidth %.1f GB/s (read + write)\n\n", copy);
    printf("%-28s %10s %9s %8s %8s %6s %7s\n", "variant", "us/call", "us/site", "Gflops", "GB/s",
           "copy", "ratio");

    int n = 0, failed = 0;
    double base_us = 0;
    for (int k = 0; k < wd_variant_count; ++k) {
        const wd_variant *v = &wd_variants[k];
        if (fnmatch(glob, v->name, 0) != 0)
            continue;
        if (!bench_variant(v, dims, pad, reps, u, uf, in, &rows[n])) {
            failed++;
            continue;
        }
        if (n == 0)
            base_us = rows[0].us;
        printf("%-28s %10.1f %9.4f %8.2f %8.2f %5.0f%% %7.2f\n", rows[n].name, rows[n].us,
               rows[n].us_site, rows[n].gflops, rows[n].gbps, 100 * rows[n].gbps / copy,
               base_us / rows[n].us);
        fflush(stdout);
        n++;
    }
    if (n)
        printf("\nratio: speed relative to %s (first row); copy: fraction of the copy bandwidth\n",
               rows[0].name);
    else
        fprintf(stderr, "wdirac bench dslash: no built variant matches '%s'\n", glob);

    int rc = failed || !n ? 1 : 0;
    if (json_path && n) {
        json_t *root = json_object(), *res = json_array();
        char date[64];
        const time_t now = time(NULL);
        strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
        json_object_set_new(root, "benchmark", json_string("dslash"));
        json_object_set_new(root, "backend", json_string("cpu"));
        json_object_set_new(root, "device", json_string(cpu));
        json_object_set_new(root, "threads", json_integer(omp_get_max_threads()));
        json_object_set_new(root, "commit", json_string(WD_GIT_COMMIT));
        json_object_set_new(root, "date", json_string(date));
        json_object_set_new(root, "dims", json_pack("[iiii]", dims[0], dims[1], dims[2], dims[3]));
        json_object_set_new(root, "pad", json_integer(pad));
        json_object_set_new(root, "seed", json_integer((json_int_t)seed));
        json_object_set_new(root, "reps", json_integer(reps));
        json_object_set_new(root, "copy_GBps", json_real(copy));
        for (int k = 0; k < n; ++k)
            json_array_append_new(res, json_pack("{s:s, s:f, s:f, s:f, s:f, s:f}", "variant",
                                                 rows[k].name, "us_per_call", rows[k].us,
                                                 "us_per_site", rows[k].us_site, "gflops",
                                                 rows[k].gflops, "GBps", rows[k].gbps,
                                                 "fraction_of_copy", rows[k].gbps / copy));
        json_object_set_new(root, "results", res);
        if (json_dump_file(root, json_path, JSON_INDENT(2)) != 0) {
            fprintf(stderr, "wdirac bench dslash: cannot write %s\n", json_path);
            rc = 1;
        }
        json_decref(root);
    }
    free(u);
    free(uf);
    free(gt);
    free(in);
    free(rows);
    return rc;
}
