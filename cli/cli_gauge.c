/*
 * cli_gauge.c: the `wdirac gauge` commands.
 *
 *   wdirac gauge generate --dims X Y Z T --beta B --sweeps N [--therm N]
 *                         [--or N] [--seed S] [--start hot|cold]
 *                         --format nersc|ildg [--precision 32|64]
 *                         [--two-row] [--little-endian] --out FILE [--overwrite]
 *                         [--grid Px Py Pz Pt]
 *       --therm thermalization sweeps, then --sweeps measurement sweeps,
 *       each one heatbath and --or (default 4) overrelaxation sweeps; one
 *       line of observables per sweep on stdout (a progress bar on stderr
 *       when it is a terminal), then the mean plaquette of the measurement
 *       sweeps with a binned error, sweeps per second, and the file.
 *   wdirac gauge info FILE [--grid Px Py Pz Pt]
 *       format, header, and every check of the reader with its verdict.
 *   wdirac gauge convert IN OUT --format nersc|ildg [--precision 32|64]
 *                        [--two-row] [--little-endian] [--overwrite]
 *                        [--grid Px Py Pz Pt]
 *       IN read with every check of `info` (a failure writes nothing), OUT
 *       written safely, read back with the same checks and compared with
 *       IN link by link; a summary of both files on stdout.
 *
 * Under mpirun every rank runs the command on its block of the lattice
 * (--grid, default automatic; wd_lattice_make refuses a bad grid, naming
 * the dimension, before anything is allocated): the sweeps, observables
 * and files of wdirac_gauge.h's *_block functions, which give the bits and
 * bytes of one process.  Every failure is agreed, so every rank exits with
 * the same code; rank 0 prints (wdirac_main.c silences the others).  One
 * rank without --grid runs the single-process functions, as before.
 *
 * The externally accessible function is
 *   wd_cli_gauge_main   dispatch on "generate" / "info" / "convert"; every
 *                       exit goes through wd_cli_exit_code's map
 *                       (cli_util.h): 0 ok, 1 a run that failed, 2 bad
 *                       usage or input (a missing file, a file that fails
 *                       a check, an existing output without --overwrite),
 *                       3 internal error (out of memory, an output that
 *                       fails its own read-back), 4 --backend cuda and no
 *                       usable GPU
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
#include "cli_util.h"
#include "wdirac_gauge.h"

static const char generate_usage[] =
    "usage: wdirac gauge generate --dims X Y Z T --beta B --sweeps N [--therm N] [--or N]\n"
    "                             [--measure-every N] [--seed S] [--start hot|cold] --format nersc|ildg\n"
    "                             [--precision 32|64] [--two-row] [--little-endian]\n"
    "                             --out FILE [--overwrite] [--backend cpu|cuda]\n"
    "                             [--grid Px Py Pz Pt]\n"
    "  --sweeps N       measurement sweeps (after --therm N thermalization sweeps, default 0)\n"
    "  --or N           overrelaxation sweeps per heatbath sweep (default 4)\n"
    "  --measure-every N  thermalization sweeps: observables (on the GPU, the field's copy\n"
    "                   to the host) after every N-th and the last only (default 1: every\n"
    "                   sweep); measurement sweeps are always measured\n"
    "  --seed S         random seed (default 1); --start cold (default) or hot\n"
    "  --precision      bits per stored real (default 64); --two-row, --little-endian: NERSC only\n"
    "  --backend        cpu (default) or cuda: the sweeps on the GPU, observables on the host\n"
    "                   (cuda: one rank; a grid of more than one is refused)\n"
    "  --grid Px Py Pz Pt  under mpirun, split the lattice over this process grid (default:\n"
    "                   automatic, T first); the file is the same as one process writes\n";

static const char convert_usage[] =
    "usage: wdirac gauge convert IN OUT --format nersc|ildg [--precision 32|64] [--two-row]\n"
    "                            [--little-endian] [--overwrite] [--grid Px Py Pz Pt]\n"
    "  IN               a NERSC or ILDG file (told apart by its first bytes); it must pass every\n"
    "                   check of wdirac gauge info, else nothing is written (exit 2)\n"
    "  --format         the format of OUT\n"
    "  --precision      bits per stored real of OUT (default: that of IN)\n"
    "  --two-row        NERSC 4D_SU3_GAUGE, rows 0 and 1 (default 3x3); --little-endian: NERSC\n"
    "                   only (default big endian)\n"
    "  --overwrite      replace an existing OUT (default: refuse, exit 2)\n"
    "  --grid Px Py Pz Pt  under mpirun, the process grid (default: automatic)\n"
    "  OUT is read back, checked and compared with IN link by link.\n";

static void gauge_usage(FILE *f)
{
    fprintf(f, "usage: wdirac gauge <command>\n"
               "  generate        make a quenched SU(3) configuration (wdirac gauge generate --help)\n"
               "  info FILE       header, plaquette and checksums of a NERSC or ILDG file\n"
               "                  ([--grid Px Py Pz Pt] under mpirun)\n"
               "  convert IN OUT  NERSC <-> ILDG, precision, rows, byte order "
               "(wdirac gauge convert --help)\n"
               "exit codes: 0 ok, 1 a run that failed, 2 bad usage or input, 3 internal error,\n"
               "4 --backend cuda and no usable GPU\n");
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

/* The options that shape a written file, shared by generate and convert. */
typedef struct write_args {
    wd_gauge_write_opts opts;
    int format_given;
} write_args;

/* If argv[*i] is --format, --precision, --two-row, --little-endian or
 * --overwrite: store it, step *i past its value and return 1; -1 (after a
 * message) for a bad value; 0 for any other argument. */
static int parse_write_option(const char *cmd, int argc, char **argv, int *i, write_args *w)
{
    const char *a = argv[*i];
    const char *next = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (!strcmp(a, "--format")) {
        if (!next || (strcmp(next, "nersc") && strcmp(next, "ildg"))) {
            fprintf(stderr, "wdirac gauge %s: --format nersc or ildg, got '%s'\n", cmd,
                    next ? next : "");
            return -1;
        }
        w->opts.format = !strcmp(next, "nersc") ? WD_GAUGE_NERSC : WD_GAUGE_ILDG;
        w->format_given = 1;
        ++*i;
    } else if (!strcmp(a, "--precision")) {
        if (!next || (strcmp(next, "32") && strcmp(next, "64"))) {
            fprintf(stderr, "wdirac gauge %s: --precision is 32 or 64, got '%s'\n", cmd,
                    next ? next : "");
            return -1;
        }
        w->opts.precision = !strcmp(next, "32") ? 32 : 64;
        ++*i;
    } else if (!strcmp(a, "--two-row")) {
        w->opts.two_row = 1;
    } else if (!strcmp(a, "--little-endian")) {
        w->opts.little_endian = 1;
    } else if (!strcmp(a, "--overwrite")) {
        w->opts.overwrite = 1;
    } else {
        return 0;
    }
    return 1;
}

/* The library refuses these too, but only after the heatbath has run or
 * the input has been read; the user hears of a bad command line at once. */
static int write_args_usable(const char *cmd, const char *out, const write_args *w)
{
    if (w->opts.format == WD_GAUGE_ILDG && (w->opts.two_row || w->opts.little_endian)) {
        fprintf(stderr, "wdirac gauge %s: --two-row and --little-endian are NERSC options "
                        "(ILDG is 3x3 big endian)\n", cmd);
        return 0;
    }
    struct stat sb;
    if (lstat(out, &sb) == 0 && (!w->opts.overwrite || S_ISDIR(sb.st_mode))) {
        fprintf(stderr, "wdirac gauge %s: '%s' %s\n", cmd, out,
                S_ISDIR(sb.st_mode) ? "is a directory" : "exists; give --overwrite to replace it");
        return 0;
    }
    return 1;
}

/* The lattice dims on --grid (automatic without it), after the library's
 * checks: -1, or the exit code (the message names the dimension). */
static int make_lattice(const char *cmd, const int dims[4], int have_grid, const int grid[4],
                        wd_lattice *lat)
{
    const wd_status st = wd_lattice_make(lat, dims, have_grid ? grid : NULL);
    if (st == WD_OK)
        return -1;
    fprintf(stderr, "wdirac gauge %s: %s%s\n", cmd, wd_last_error(),
            have_grid ? "" : " (give --grid Px Py Pz Pt)");
    return wd_cli_exit_code(st);
}

/* One process without --grid runs the single-process functions (the field
 * is the whole lattice); otherwise the blocks'. */
static int on_blocks(const wd_lattice *lat, int have_grid)
{
    return have_grid || lat->size > 1;
}

static wd_status observables(const double *u, const wd_lattice *lat, int blocks,
                             wd_gauge_obs *o)
{
    return blocks ? wd_gauge_observables_block(u, lat, o) : wd_gauge_observables(u, lat->dims, o);
}

static wd_status write_field(const char *path, const double *u, const wd_lattice *lat,
                             int blocks, const wd_gauge_write_opts *opts)
{
    return blocks ? wd_gauge_write_block(path, u, lat, opts)
                  : wd_gauge_write(path, u, lat->dims, opts);
}

/* The field of path: the whole lattice into a new *u (one process without
 * --grid: wd_gauge_read), or this rank's block, lat made from the header's
 * extents.  Returns -1, or the exit code after printing why (the reader's
 * message followed by `after`). */
static int read_field(const char *cmd, const char *path, unsigned flags, int have_grid,
                      const int grid[4], wd_lattice *lat, double **u, wd_gauge_info *info,
                      const char *after)
{
    wd_status st;
    if (wd_ranks() == 1 && !have_grid) {
        if ((st = wd_gauge_read(path, NULL, flags, u, info)) == WD_OK)
            return make_lattice(cmd, info->dims, 0, grid, lat);
    } else {
        wd_gauge_info head;
        if ((st = wd_agree(wd_gauge_read_header(path, &head))) == WD_OK) {
            const int rc = make_lattice(cmd, head.dims, have_grid, grid, lat);
            if (rc >= 0)
                return rc;
            const size_t sites = wd_volume(lat->local);
            double *block = malloc(72 * sites * sizeof *block);
            if (wd_agree(block ? WD_OK : WD_ERR_NOMEM) != WD_OK) {
                fprintf(stderr, "wdirac gauge %s: out of memory for the gauge field (%zu sites "
                        "a rank)\n", cmd, sites);
                free(block);
                return WD_EXIT_INTERNAL;
            }
            if ((st = wd_gauge_read_block(path, lat, flags, block, info)) == WD_OK) {
                *u = block;
                return -1;
            }
            free(block);
        }
    }
    fprintf(stderr, "wdirac gauge %s: %s%s\n", cmd, wd_last_error(), after);
    return wd_cli_exit_code(st);
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
    long sweeps = -1, therm = 0, n_or = 4, every = 1;
    uint64_t seed = 1;
    wd_gauge_start start = WD_START_COLD;
    const char *out = NULL;
    int gpu = 0, have_grid = 0, grid[4] = {0, 0, 0, 0};
    write_args w = {.opts = wd_gauge_write_defaults()};
    long v;

    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        const int written = parse_write_option("generate", argc, argv, &i, &w);
        if (written < 0)
            return WD_EXIT_USAGE;
        if (written)
            continue;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(generate_usage, stdout);
            return WD_EXIT_OK;
        } else if (!strcmp(a, "--backend") && next) {
            if (strcmp(next, "cpu") && strcmp(next, "cuda")) {
                fprintf(stderr, "wdirac gauge generate: --backend must be cpu or cuda\n");
                return WD_EXIT_USAGE;
            }
            gpu = !strcmp(next, "cuda");
            i++;
        } else if (!strcmp(a, "--dims")) {
            for (int mu = 0; mu < 4; mu++) {
                if (!parse_long("--dims", i + 1 < argc ? argv[i + 1] : NULL, 1, 1L << 24, &v))
                    return WD_EXIT_USAGE;
                dims[mu] = (int)v;
                i++;
            }
        } else if (!strcmp(a, "--beta")) {
            char *end;
            beta = next ? strtod(next, &end) : NAN;
            if (!next || end == next || *end || !(beta > 0) || !isfinite(beta)) {
                fprintf(stderr, "wdirac gauge generate: --beta needs a number > 0, got '%s'\n",
                        next ? next : "");
                return WD_EXIT_USAGE;
            }
            i++;
        } else if (!strcmp(a, "--sweeps")) {
            if (!parse_long(a, next, 0, 1L << 30, &sweeps))
                return WD_EXIT_USAGE;
            i++;
        } else if (!strcmp(a, "--therm")) {
            if (!parse_long(a, next, 0, 1L << 30, &therm))
                return WD_EXIT_USAGE;
            i++;
        } else if (!strcmp(a, "--measure-every")) {
            if (!parse_long(a, next, 1, 1L << 30, &every))
                return WD_EXIT_USAGE;
            i++;
        } else if (!strcmp(a, "--or")) {
            if (!parse_long(a, next, 0, 1000, &n_or))
                return WD_EXIT_USAGE;
            i++;
        } else if (!strcmp(a, "--seed")) {
            char *end;
            errno = 0;
            seed = next ? strtoull(next, &end, 0) : 0;
            if (!next || end == next || *end || errno || *next == '-') {
                fprintf(stderr, "wdirac gauge generate: --seed needs an unsigned 64-bit "
                                "integer, got '%s'\n", next ? next : "");
                return WD_EXIT_USAGE;
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
                return WD_EXIT_USAGE;
            }
            i++;
        } else if (!strcmp(a, "--out")) {
            out = next;
            i++;
        } else if (!strcmp(a, "--grid")) {
            if (!wd_cli_parse_grid("wdirac gauge generate", argc, argv, &i, grid))
                return WD_EXIT_USAGE;
            have_grid = 1;
        } else {
            fprintf(stderr, "wdirac gauge generate: unknown option '%s'\n%s", a, generate_usage);
            return WD_EXIT_USAGE;
        }
    }

    if (!dims[0] || isnan(beta) || sweeps < 0 || !w.format_given || !out) {
        fprintf(stderr, "wdirac gauge generate: --dims, --beta, --sweeps, --format and --out "
                        "are required\n%s", generate_usage);
        return WD_EXIT_USAGE;
    }
    const wd_status dims_st = wd_check_dims(dims);
    if (dims_st != WD_OK) {
        fprintf(stderr, "wdirac gauge generate: %s\n", wd_last_error());
        return wd_cli_exit_code(dims_st);
    }
    /* every rank takes the same branch, whatever its view of the file system */
    if (wd_agree(write_args_usable("generate", out, &w) ? WD_OK : WD_ERR_INVALID) != WD_OK)
        return WD_EXIT_USAGE;
    wd_lattice lat;
    int rc = make_lattice("generate", dims, have_grid, grid, &lat);
    if (rc >= 0)
        return rc;
    if (gpu && lat.size > 1) {
        fprintf(stderr, "wdirac gauge generate: --backend cuda runs the heatbath on one GPU of "
                        "one rank; this run has %d ranks (grid %d %d %d %d): use --backend cpu "
                        "on a grid\n", lat.size, lat.procs[0], lat.procs[1], lat.procs[2],
                lat.procs[3]);
        return WD_EXIT_USAGE;
    }
    /* one rank: the whole lattice, on the GPU too */
    const int blocks = !gpu && on_blocks(&lat, have_grid);

    const size_t volume = wd_volume(lat.local);
    double *u = malloc(72 * volume * sizeof *u);
    const long total = therm + sweeps;
    double *plaq = malloc((size_t)(sweeps > 0 ? sweeps : 1) * sizeof *plaq);
    if (wd_agree(u && plaq ? WD_OK : WD_ERR_NOMEM) != WD_OK) {
        fprintf(stderr, "wdirac gauge generate: out of memory for %zu sites%s\n", volume,
                blocks ? " a rank" : "");
        free(u);
        free(plaq);
        return wd_cli_exit_code(WD_ERR_NOMEM);
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
    if (every > 1 && therm > 0)
        printf("# thermalization measured every %ld sweeps and at its last\n", every);
    if (blocks)
        printf("# grid %d %d %d %d: %d ranks, blocks %dx%dx%dx%d (the configuration is the one "
               "process makes)\n", lat.procs[0], lat.procs[1], lat.procs[2], lat.procs[3],
               lat.size, lat.local[0], lat.local[1], lat.local[2], lat.local[3]);
    printf("# %6s %5s %12s %12s %12s %12s %11s %11s %9s\n", "sweep", "phase", "plaquette",
           "plaq_space", "plaq_time", "link_trace", "poly_re", "poly_im", "seconds");

    wd_status st = blocks ? wd_gauge_init_block(u, &lat, start, seed)
                          : wd_gauge_init(u, dims, start, seed);
    if (st == WD_OK && gpu)
        st = wd_gauge_gpu_open(u, dims);
    const double t0 = now_seconds();
    double update_seconds = 0;
    for (long s = 0; s < total && st == WD_OK; s++) {
        const double ts = now_seconds();
        double ms = 0;
        /* on the GPU: the sweep's own time from CUDA events, then the field
         * comes back for the observables */
        st = gpu      ? wd_gauge_gpu_sweep(beta, seed, (uint64_t)s, (int)n_or, &ms)
             : blocks ? wd_gauge_heatbath_sweep_block(u, &lat, beta, seed, (uint64_t)s, (int)n_or)
                      : wd_gauge_heatbath_sweep(u, dims, beta, seed, (uint64_t)s, (int)n_or);
        const double dt = gpu ? 1e-3 * ms : now_seconds() - ts;
        update_seconds += dt;
        /* a thermalization sweep left unmeasured: its time only */
        if (st == WD_OK && s < therm - 1 && (s + 1) % every != 0)
            continue;
        wd_gauge_obs o;
        if (st == WD_OK && gpu)
            st = wd_gauge_gpu_fetch(u);
        if (st == WD_OK)
            st = observables(u, &lat, blocks, &o);
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
    const double loop_seconds = now_seconds() - t0;
    if (tty && total)
        fputs("\r\033[K", stderr);
    if (gpu)
        wd_gauge_gpu_close();
    if (st != WD_OK) {
        fprintf(stderr, "wdirac gauge generate: %s\n", wd_last_error());
        free(u);
        free(plaq);
        return wd_cli_exit_code(st);
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
    if (total > 0)
        printf("# %.2f s wall for the %ld sweeps with their observables%s\n", loop_seconds, total,
               gpu ? " and the field's copies to the host" : "");

    st = write_field(out, u, &lat, blocks, &w.opts);
    if (st != WD_OK) {
        fprintf(stderr, "wdirac gauge generate: %s\n", wd_last_error());
        free(u);
        free(plaq);
        return wd_cli_exit_code(st);
    }
    printf("# wrote %s (%s, %d-bit%s)\n", out, w.opts.format == WD_GAUGE_NERSC ? "NERSC" : "ILDG",
           w.opts.precision, w.opts.two_row ? ", two-row" : "");
    free(u);
    free(plaq);
    return WD_EXIT_OK;
}

static const char *verdict(int ok)
{
    return ok ? "OK" : "MISMATCH";
}

static int cmd_info(int argc, char **argv)
{
    static const char usage[] = "usage: wdirac gauge info FILE [--grid Px Py Pz Pt]\n";
    const char *path = NULL;
    int have_grid = 0, grid[4] = {0, 0, 0, 0};
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return WD_EXIT_OK;
        } else if (!strcmp(argv[i], "--grid")) {
            if (!wd_cli_parse_grid("wdirac gauge info", argc, argv, &i, grid))
                return WD_EXIT_USAGE;
            have_grid = 1;
        } else if (path || (argv[i][0] == '-' && argv[i][1])) {
            fputs(usage, stderr);
            return WD_EXIT_USAGE;
        } else {
            path = argv[i];
        }
    }
    if (!path) {
        fputs(usage, stderr);
        return WD_EXIT_USAGE;
    }
    double *u = NULL;
    wd_gauge_info in;
    wd_lattice lat;
    const int rc = read_field("info", path, WD_GAUGE_READ_REPORT_ONLY, have_grid, grid, &lat, &u,
                              &in, "");
    free(u);
    if (rc >= 0)
        return rc;

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
    /* a failed check is what the strict reader refuses as corrupt */
    return wd_cli_exit_code(failed ? WD_ERR_CORRUPT : WD_OK);
}

static void print_file(const char *label, const char *path, const wd_gauge_info *g)
{
    printf("%-13s %s (%s, %d-bit, %s, %s endian)\n", label, path,
           g->format == WD_GAUGE_NERSC ? "NERSC" : "ILDG", g->precision,
           g->rows == 2 ? "two-row" : "3x3", g->big_endian ? "big" : "little");
}

static int cmd_convert(int argc, char **argv)
{
    const char *file[2] = {NULL, NULL};
    int nfile = 0, have_grid = 0, grid[4] = {0, 0, 0, 0};
    write_args w = {.opts = wd_gauge_write_defaults()};
    w.opts.precision = 0; /* not given: IN's precision, so no data are lost or padded */

    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const int written = parse_write_option("convert", argc, argv, &i, &w);
        if (written < 0)
            return WD_EXIT_USAGE;
        if (written)
            continue;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(convert_usage, stdout);
            return WD_EXIT_OK;
        } else if (!strcmp(a, "--grid")) {
            if (!wd_cli_parse_grid("wdirac gauge convert", argc, argv, &i, grid))
                return WD_EXIT_USAGE;
            have_grid = 1;
            continue;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "wdirac gauge convert: unknown option '%s'\n%s", a, convert_usage);
            return WD_EXIT_USAGE;
        } else if (nfile == 2) {
            fprintf(stderr, "wdirac gauge convert: one input and one output file, got a third, "
                            "'%s'\n%s", a, convert_usage);
            return WD_EXIT_USAGE;
        }
        file[nfile++] = a;
    }
    if (nfile != 2 || !w.format_given) {
        fprintf(stderr, "wdirac gauge convert: IN, OUT and --format are required\n%s",
                convert_usage);
        return WD_EXIT_USAGE;
    }
    const char *in_path = file[0], *out_path = file[1];
    if (wd_agree(write_args_usable("convert", out_path, &w) ? WD_OK : WD_ERR_INVALID) != WD_OK)
        return WD_EXIT_USAGE;

    double *u_in = NULL;
    wd_gauge_info in;
    wd_lattice lat;
    int rc = read_field("convert", in_path, 0, have_grid, grid, &lat, &u_in, &in,
                        "; nothing written");
    if (rc >= 0)
        return rc;
    const int blocks = on_blocks(&lat, have_grid);
    if (!w.opts.precision)
        w.opts.precision = in.precision;
    /* the writer's default would relabel the ensemble "wdirac" */
    if (in.ensemble_id[0])
        w.opts.ensemble_id = in.ensemble_id;
    for (int mu = 0; mu < 4; mu++)
        if (in.boundary[mu][0] && strcmp(in.boundary[mu], "PERIODIC"))
            fprintf(stderr, "wdirac gauge convert: note: '%s' records BOUNDARY_%d = %s; '%s' "
                            "will not (the writer records PERIODIC, the links are the same)\n",
                    in_path, mu + 1, in.boundary[mu], out_path);

    wd_status st = write_field(out_path, u_in, &lat, blocks, &w.opts);
    if (st != WD_OK) {
        fprintf(stderr, "wdirac gauge convert: %s\n", wd_last_error());
        free(u_in);
        return wd_cli_exit_code(st);
    }

    double *u_out = NULL;
    wd_gauge_info out;
    if (!blocks)
        st = wd_gauge_read(out_path, in.dims, 0, &u_out, &out);
    else if ((st = wd_agree((u_out = malloc(72 * wd_volume(lat.local) * sizeof *u_out))
                                ? WD_OK : WD_ERR_NOMEM)) == WD_OK)
        st = wd_gauge_read_block(out_path, &lat, 0, u_out, &out);
    if (st != WD_OK) {
        free(u_out);
        fprintf(stderr, "wdirac gauge convert: wrote '%s', but reading it back failed: %s\n",
                out_path, wd_last_error());
        free(u_in);
        /* OUT came from a field that passed every check: a corrupt OUT is
         * the program's fault, not bad input */
        return st == WD_ERR_CORRUPT ? WD_EXIT_INTERNAL : wd_cli_exit_code(st);
    }
    double link_diff = 0;
    for (size_t k = 0; k < 72 * wd_volume(lat.local); k++)
        link_diff = fmax(link_diff, fabs(u_out[k] - u_in[k]));
    free(u_in);
    free(u_out);
    const double plaq_diff = fabs(out.obs.plaquette - in.obs.plaquette);
    /* the reader's tolerance for OUT's precision bounds what storing at
     * that precision may change; anything more is a fault of the writer.
     * On a grid each rank judges its block and the verdicts are agreed */
    const int same = wd_agree(link_diff <= out.tolerance && plaq_diff <= out.tolerance
                                  ? WD_OK : WD_ERR_INTERNAL) == WD_OK;

    print_file("input", in_path, &in);
    print_file("output", out_path, &out);
    printf("dims          %d %d %d %d (X Y Z T)\n", in.dims[0], in.dims[1], in.dims[2],
           in.dims[3]);
    printf("plaquette     in %.12f  out %.12f  difference %.3g\n", in.obs.plaquette,
           out.obs.plaquette, plaq_diff);
    printf("links         max |U_out - U_in| = %.3g%s (tolerance %.0e)\n", link_diff,
           lat.size > 1 ? " on rank 0's block, every block checked" : "", out.tolerance);
    printf("status        %s\n", same ? "OK (both files pass every check)" : "MISMATCH");
    if (!same) {
        fprintf(stderr, "wdirac gauge convert: '%s' differs from '%s' by more than %.0e\n",
                out_path, in_path, out.tolerance);
        return WD_EXIT_INTERNAL;
    }
    return WD_EXIT_OK;
}

int wd_cli_gauge_main(int argc, char **argv)
{
    if (argc < 1) {
        gauge_usage(stderr);
        return WD_EXIT_USAGE;
    }
    if (!strcmp(argv[0], "generate"))
        return cmd_generate(argc - 1, argv + 1);
    if (!strcmp(argv[0], "info"))
        return cmd_info(argc - 1, argv + 1);
    if (!strcmp(argv[0], "convert"))
        return cmd_convert(argc - 1, argv + 1);
    if (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
        gauge_usage(stdout);
        return WD_EXIT_OK;
    }
    fprintf(stderr, "wdirac gauge: unknown command '%s'\n", argv[0]);
    gauge_usage(stderr);
    return WD_EXIT_USAGE;
}
