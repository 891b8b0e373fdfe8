/*
 * cli_gauge.c: the `wdirac gauge` commands.
 *
 *   wdirac gauge generate --dims X Y Z T --beta B --sweeps N [--therm N]
 *                         [--or N] [--seed S] [--start hot|cold]
 *                         --format nersc|ildg [--precision 32|64]
 *                         [--two-row] [--little-endian] --out FILE [--overwrite]
 *       --therm thermalization sweeps, then --sweeps measurement sweeps,
 *       each one heatbath and --or (default 4) overrelaxation sweeps; one
 *       line of observables per sweep on stdout (a progress bar on stderr
 *       when it is a terminal), then the mean plaquette of the measurement
 *       sweeps with a binned error, sweeps per second, and the file.
 *   wdirac gauge info FILE
 *       format, header, and every check of the reader with its verdict.
 *
 * The externally accessible function is
 *   wd_cli_gauge_main   dispatch on "generate" / "info"; exit codes of
 *                       wdirac_main.c: 0 ok, 1 a run that failed, 2 bad
 *                       usage or input (a file that fails a check
 *                       included), 3 internal error (out of memory)
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "cli_gauge.h"
#include "wdirac_gauge.h"

static const char generate_usage[] =
    "usage: wdirac gauge generate --dims X Y Z T --beta B --sweeps N [--therm N] [--or N]\n"
    "                             [--seed S] [--start hot|cold] --format nersc|ildg\n"
    "                             [--precision 32|64] [--two-row] [--little-endian]\n"
    "                             --out FILE [--overwrite] [--backend cpu|cuda]\n"
    "  --sweeps N       measurement sweeps (after --therm N thermalization sweeps, default 0)\n"
    "  --or N           overrelaxation sweeps per heatbath sweep (default 4)\n"
    "  --seed S         random seed (default 1); --start cold (default) or hot\n"
    "  --precision      bits per stored real (default 64); --two-row, --little-endian: NERSC only\n"
    "  --backend        cpu (default) or cuda: the sweeps on the GPU, observables on the host\n";

static void gauge_usage(FILE *f)
{
    fprintf(f, "usage: wdirac gauge <command>\n"
               "  generate   make a quenched SU(3) configuration (wdirac gauge generate --help)\n"
               "  info FILE  header, plaquette and checksums of a NERSC or ILDG file\n");
}

static int exit_code(wd_status s)
{
    switch (s) {
    case WD_OK: return 0;
    case WD_ERR_NOMEM:
    case WD_ERR_INTERNAL: return 3;
    case WD_ERR_INVALID:
    case WD_ERR_CORRUPT: return 2;
    default: return 1;
    }
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int parse_long(const char *opt, const char *s, long lo, long hi, long *v)
{
    char *end;
    errno = 0;
    *v = s ? strtol(s, &end, 10) : 0;
    if (!s || end == s || *end || errno || *v < lo || *v > hi) {
        fprintf(stderr, "wdirac gauge generate: %s needs an integer in [%ld, %ld], got '%s'\n",
                opt, lo, hi, s ? s : "");
        return 0;
    }
    return 1;
}

/* mean and standard error from bins of b consecutive values */
static void binned(const double *x, int n, int b, double *mean, double *err)
{
    const int nb = n / b;
    double m = 0, m2 = 0;
    for (int i = 0; i < nb; i++) {
        double s = 0;
        for (int k = 0; k < b; k++)
            s += x[i * b + k];
        s /= b;
        m += s;
        m2 += s * s;
    }
    m /= nb;
    *mean = m;
    *err = nb > 1 ? sqrt(fmax(0.0, m2 / nb - m * m) / (nb - 1)) : NAN;
}

static void progress(int done, int total, double plaq, double left)
{
    const int width = 30, filled = total ? width * done / total : width;
    fputs("\r\033[K[", stderr);
    for (int k = 0; k < width; k++)
        fputc(k < filled ? '=' : ' ', stderr);
    fprintf(stderr, "] %d/%d sweeps  plaquette %.6f  %.0f s left", done, total, plaq, left);
    fflush(stderr);
}

static int cmd_generate(int argc, char **argv)
{
    int dims[4] = {0, 0, 0, 0};
    double beta = NAN;
    long sweeps = -1, therm = 0, n_or = 4, precision = 64;
    uint64_t seed = 1;
    wd_gauge_start start = WD_START_COLD;
    const char *out = NULL, *format = NULL;
    int gpu = 0;
    wd_gauge_write_opts wopts = wd_gauge_write_defaults();
    long v;

    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(generate_usage, stdout);
            return 0;
        } else if (!strcmp(a, "--backend") && next) {
            if (strcmp(next, "cpu") && strcmp(next, "cuda")) {
                fprintf(stderr, "wdirac gauge generate: --backend must be cpu or cuda\n");
                return 2;
            }
            gpu = !strcmp(next, "cuda");
            i++;
        } else if (!strcmp(a, "--dims")) {
            for (int mu = 0; mu < 4; mu++) {
                if (!parse_long("--dims", i + 1 < argc ? argv[i + 1] : NULL, 1, 1L << 24, &v))
                    return 2;
                dims[mu] = (int)v;
                i++;
            }
        } else if (!strcmp(a, "--beta")) {
            char *end;
            beta = next ? strtod(next, &end) : NAN;
            if (!next || end == next || *end || !(beta > 0) || !isfinite(beta)) {
                fprintf(stderr, "wdirac gauge generate: --beta needs a number > 0, got '%s'\n",
                        next ? next : "");
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--sweeps")) {
            if (!parse_long(a, next, 0, 1L << 30, &sweeps))
                return 2;
            i++;
        } else if (!strcmp(a, "--therm")) {
            if (!parse_long(a, next, 0, 1L << 30, &therm))
                return 2;
            i++;
        } else if (!strcmp(a, "--or")) {
            if (!parse_long(a, next, 0, 1000, &n_or))
                return 2;
            i++;
        } else if (!strcmp(a, "--seed")) {
            char *end;
            errno = 0;
            seed = next ? strtoull(next, &end, 0) : 0;
            if (!next || end == next || *end || errno || *next == '-') {
                fprintf(stderr, "wdirac gauge generate: --seed needs an unsigned 64-bit "
                                "integer, got '%s'\n", next ? next : "");
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--start")) {
            if (next && !strcmp(next, "hot"))
                start = WD_START_HOT;
            else if (next && !strcmp(next, "cold"))
                start = WD_START_COLD;
            else {
                fprintf(stderr, "wdirac gauge generate: --start hot or cold, got '%s'\n",
                        next ? next : "");
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--format")) {
            format = next;
            i++;
        } else if (!strcmp(a, "--precision")) {
            if (!parse_long(a, next, 32, 64, &precision) || (precision != 32 && precision != 64)) {
                fprintf(stderr, "wdirac gauge generate: --precision is 32 or 64\n");
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--two-row")) {
            wopts.two_row = 1;
        } else if (!strcmp(a, "--little-endian")) {
            wopts.little_endian = 1;
        } else if (!strcmp(a, "--out")) {
            out = next;
            i++;
        } else if (!strcmp(a, "--overwrite")) {
            wopts.overwrite = 1;
        } else {
            fprintf(stderr, "wdirac gauge generate: unknown option '%s'\n%s", a, generate_usage);
            return 2;
        }
    }

    if (!dims[0] || isnan(beta) || sweeps < 0 || !format || !out) {
        fprintf(stderr, "wdirac gauge generate: --dims, --beta, --sweeps, --format and --out "
                        "are required\n%s", generate_usage);
        return 2;
    }
    if (!strcmp(format, "nersc"))
        wopts.format = WD_GAUGE_NERSC;
    else if (!strcmp(format, "ildg"))
        wopts.format = WD_GAUGE_ILDG;
    else {
        fprintf(stderr, "wdirac gauge generate: --format nersc or ildg, got '%s'\n", format);
        return 2;
    }
    wopts.precision = (int)precision;
    if (wopts.format == WD_GAUGE_ILDG && (wopts.two_row || wopts.little_endian)) {
        fprintf(stderr, "wdirac gauge generate: --two-row and --little-endian are NERSC "
                        "options (ILDG is 3x3 big endian)\n");
        return 2;
    }
    if (wd_check_dims(dims) != WD_OK) {
        fprintf(stderr, "wdirac gauge generate: %s\n", wd_last_error());
        return 2;
    }
    struct stat sb;
    if (!wopts.overwrite && stat(out, &sb) == 0) {
        fprintf(stderr, "wdirac gauge generate: '%s' exists; give --overwrite to replace it\n",
                out);
        return 2;
    }

    const size_t volume = (size_t)dims[0] * dims[1] * dims[2] * dims[3];
    double *u = malloc(72 * volume * sizeof *u);
    const long total = therm + sweeps;
    double *plaq = malloc((size_t)(sweeps > 0 ? sweeps : 1) * sizeof *plaq);
    if (!u || !plaq) {
        fprintf(stderr, "wdirac gauge generate: out of memory for %zu sites\n", volume);
        free(u);
        free(plaq);
        return 3;
    }
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    const int tty = isatty(STDERR_FILENO);

    printf("# wdirac gauge generate: %dx%dx%dx%d beta %g seed %llu %s start; %ld "
           "thermalization + %ld measurement sweeps of 1 heatbath + %ld overrelaxation; "
           "%d threads\n",
           dims[0], dims[1], dims[2], dims[3], beta, (unsigned long long)seed,
           start == WD_START_HOT ? "hot" : "cold", therm, sweeps, n_or, threads);
    printf("# %6s %5s %12s %12s %12s %12s %11s %11s %9s\n", "sweep", "phase", "plaquette",
           "plaq_space", "plaq_time", "link_trace", "poly_re", "poly_im", "seconds");

    wd_status st = wd_gauge_init(u, dims, start, seed);
    if (st == WD_OK && gpu)
        st = wd_gauge_gpu_open(u, dims);
    const double t0 = now_seconds();
    double update_seconds = 0;
    for (long s = 0; s < total && st == WD_OK; s++) {
        const double ts = now_seconds();
        double ms = 0;
        /* on the GPU: the sweep's own time from CUDA events, then the field
         * comes back for the observables */
        st = gpu ? wd_gauge_gpu_sweep(beta, seed, (uint64_t)s, (int)n_or, &ms)
                 : wd_heatbath_sweep(u, dims, beta, seed, (uint64_t)s, (int)n_or);
        const double dt = gpu ? 1e-3 * ms : now_seconds() - ts;
        update_seconds += dt;
        wd_gauge_obs o;
        if (st == WD_OK && gpu)
            st = wd_gauge_gpu_fetch(u);
        if (st == WD_OK)
            st = wd_gauge_observables(u, dims, &o);
        if (st != WD_OK)
            break;
        if (s >= therm)
            plaq[s - therm] = o.plaquette;
        if (tty)
            fputs("\r\033[K", stderr);
        printf("  %6ld %5s %12.8f %12.8f %12.8f %12.8f %11.7f %11.7f %9.3f\n", s + 1,
               s < therm ? "therm" : "meas", o.plaquette, o.plaquette_space, o.plaquette_time,
               o.link_trace, o.poly_re, o.poly_im, dt);
        if (tty) {
            fflush(stdout);
            const double elapsed = now_seconds() - t0;
            progress((int)(s + 1), (int)total, o.plaquette, elapsed / (s + 1) * (total - s - 1));
        }
    }
    if (tty && total)
        fputs("\r\033[K", stderr);
    if (gpu)
        wd_gauge_gpu_close();
    if (st != WD_OK) {
        fprintf(stderr, "wdirac gauge generate: %s\n", wd_last_error());
        free(u);
        free(plaq);
        return exit_code(st);
    }

    if (sweeps > 0) {
        /* the largest power-of-two bin that leaves at least 10 bins: errors
         * grow with the bin size until the bins decorrelate */
        int b = 1;
        while (sweeps / (2 * b) >= 10)
            b *= 2;
        double mean, err, mean1, err1;
        binned(plaq, (int)sweeps, b, &mean, &err);
        binned(plaq, (int)sweeps, 1, &mean1, &err1);
        printf("# plaquette over %ld measurement sweeps: %.8f +- %.8f (%ld bins of %d sweeps; "
               "unbinned error %.8f)\n", sweeps, mean, err, sweeps / b, b, err1);
    }
    if (total > 0)
        printf("# %.3f compound sweeps/s (%.1f ms per sweep of 1 heatbath + %ld overrelaxation, "
               "%dx%dx%dx%d, %s)\n", total / update_seconds, 1e3 * update_seconds / total, n_or,
               dims[0], dims[1], dims[2], dims[3],
               gpu ? "GPU, double, CUDA events" : threads == 1 ? "1 thread" : "OpenMP threads");

    st = wd_gauge_write(out, u, dims, &wopts);
    if (st != WD_OK) {
        fprintf(stderr, "wdirac gauge generate: %s\n", wd_last_error());
        free(u);
        free(plaq);
        return exit_code(st) == 2 ? 2 : 1;
    }
    printf("# wrote %s (%s, %d-bit%s)\n", out, wopts.format == WD_GAUGE_NERSC ? "NERSC" : "ILDG",
           wopts.precision, wopts.two_row ? ", two-row" : "");
    free(u);
    free(plaq);
    return 0;
}

static const char *verdict(int ok)
{
    return ok ? "OK" : "MISMATCH";
}

static int cmd_info(int argc, char **argv)
{
    if (argc != 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
        fprintf(argc == 1 ? stdout : stderr, "usage: wdirac gauge info FILE\n");
        return argc == 1 ? 0 : 2;
    }
    const char *path = argv[0];
    double *u = NULL;
    wd_gauge_info in;
    const wd_status st = wd_gauge_read(path, NULL, WD_GAUGE_READ_REPORT_ONLY, &u, &in);
    free(u);
    if (st != WD_OK) {
        fprintf(stderr, "wdirac gauge info: %s\n", wd_last_error());
        return exit_code(st);
    }

    int failed = 0;
    printf("file          %s\n", path);
    if (in.format == WD_GAUGE_NERSC)
        printf("format        NERSC  DATATYPE %s  FLOATING_POINT %s\n", in.datatype,
               in.floating_point);
    else
        printf("format        ILDG/LIME  field %s  precision %d (big endian)\n", in.datatype,
               in.precision);
    printf("dims          %d %d %d %d (X Y Z T)\n", in.dims[0], in.dims[1], in.dims[2],
           in.dims[3]);
    printf("stored        %d-bit reals, %d rows per link, %s endian\n", in.precision, in.rows,
           in.big_endian ? "big" : "little");
    if (in.format == WD_GAUGE_NERSC) {
        printf("boundary      %s %s %s %s\n", in.boundary[0], in.boundary[1], in.boundary[2],
               in.boundary[3]);
        if (in.ensemble_id[0])
            printf("ensemble      %s\n", in.ensemble_id);
    }
    if (in.has_checksum) {
        const int ok = in.checksum_header == in.checksum_data;
        failed += !ok;
        printf("checksum      header %08x  data %08x  %s\n", in.checksum_header,
               in.checksum_data, verdict(ok));
    }
    if (in.format == WD_GAUGE_ILDG) {
        if (in.has_scidac) {
            const int ok = in.suma_header == in.suma_data && in.sumb_header == in.sumb_data;
            failed += !ok;
            printf("scidac        header %08x %08x  data %08x %08x  %s\n", in.suma_header,
                   in.sumb_header, in.suma_data, in.sumb_data, verdict(ok));
        } else {
            printf("scidac        no scidac-checksum record (data give %08x %08x)\n",
                   in.suma_data, in.sumb_data);
        }
    }
    const int finite_ok = isfinite(in.unitarity);
    const int unit_ok = in.unitarity <= in.unitarity_tolerance;
    failed += !unit_ok;
    printf("unitarity     max |U U^dag - 1|, |det U - 1| = %.3g  %s (tolerance %.0e)\n",
           in.unitarity, finite_ok ? verdict(unit_ok) : "NaN or infinity in the data",
           in.unitarity_tolerance);
    if (in.has_plaquette) {
        const int ok = fabs(in.obs.plaquette - in.plaquette_header) <= in.tolerance;
        failed += !ok;
        printf("plaquette     header %.12f  data %.12f  %s (tolerance %.0e)\n",
               in.plaquette_header, in.obs.plaquette, verdict(ok), in.tolerance);
    } else {
        printf("plaquette     data %.12f (none in the header)\n", in.obs.plaquette);
    }
    if (in.has_link_trace) {
        const int ok = fabs(in.obs.link_trace - in.link_trace_header) <= in.tolerance;
        failed += !ok;
        printf("link trace    header %.12f  data %.12f  %s (tolerance %.0e)\n",
               in.link_trace_header, in.obs.link_trace, verdict(ok), in.tolerance);
    } else {
        printf("link trace    data %.12f (none in the header)\n", in.obs.link_trace);
    }
    printf("plaq s / t    %.12f %.12f\n", in.obs.plaquette_space, in.obs.plaquette_time);
    printf("polyakov      %.10f %+.10f i\n", in.obs.poly_re, in.obs.poly_im);
    printf("status        %s\n", failed ? "FAILED" : "OK");
    return failed ? 2 : 0;
}

int wd_cli_gauge_main(int argc, char **argv)
{
    if (argc < 1) {
        gauge_usage(stderr);
        return 2;
    }
    if (!strcmp(argv[0], "generate"))
        return cmd_generate(argc - 1, argv + 1);
    if (!strcmp(argv[0], "info"))
        return cmd_info(argc - 1, argv + 1);
    if (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
        gauge_usage(stdout);
        return 0;
    }
    fprintf(stderr, "wdirac gauge: unknown command '%s'\n", argv[0]);
    gauge_usage(stderr);
    return 2;
}
