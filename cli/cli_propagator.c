/*
 * cli_propagator.c: `wdirac propagator`, the 12 spin-colour columns of a
 * point or wall source solved with one solver, and the zero-momentum meson
 * two-point functions with their effective masses (wdirac_physics.h).
 *
 * The externally accessible function is
 *   wd_cli_propagator_main   options, gauge field, 12 solves (--mg: on one
 *                            multigrid setup, wd_propagator_mg),
 *                            correlators, summary; JSON, CSV and a PNG
 *                            (bench/plot_correlators.py through python3)
 *
 * Exit codes as every command (cli_util.h): 0 every column converged, 1 a
 * column did not (the correlators are then not written), 2 bad usage or
 * input, 3 internal, 4 --backend cuda and no usable GPU.  Under mpirun
 * every rank runs it on its block (--grid); rank 0 prints and writes.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_propagator.h"
#include "cli_util.h"
#include "wd_version.h"
#include "wdirac.h"
#include "wdirac_gauge.h"
#include "wdirac_npy.h"
#include "wdirac_physics.h"

extern char **environ;

static const char usage_text[] =
    "usage: wdirac propagator (--gauge FILE | --unit-gauge --dims X Y Z T) --kappa K\n"
    "                         [--source point|wall] [--site x,y,z,t] [options]\n"
    "The 12 columns (4 spins x 3 colours) of M^-1 for a point source at --site (or a wall\n"
    "source on its time slice), solved with one solver, and the zero-momentum meson\n"
    "two-point functions C(t) (pseudoscalar g5-g5, a4-pseudoscalar g4g5-g5, vector gi-gi\n"
    "averaged over i, scalar) with the cosh (sinh) effective mass per time slice.\n"
    "\n"
    "  --kappa K | --mass M  the quark (kappa = 1/(2(4+m)))\n"
    "  --csw C               clover coefficient c_sw (default 0: Wilson)\n"
    "  --clover-form symmetric|asymmetric   even-odd form with a clover term (default symmetric)\n"
    "  --source point|wall   default point; a wall source is gauge dependent: use it on a\n"
    "                        gauge-fixed configuration\n"
    "  --site x,y,z,t        the source site (default 0,0,0,0); wall: its t\n"
    "  --tbc periodic|antiperiodic  fermion time boundary (default antiperiodic)\n"
    "  --solver cg|bicgstab  default bicgstab (--mg below: multigrid, one setup for the 12)\n"
    "  --precision d|s|h, --sloppy d|s|h   outer and sloppy precision (default d, s)\n"
    "  --recon 18|12|8, --sloppy-recon 18|12|8   gauge reconstruction (default 12, 12)\n"
    "  --gauge-fix, --sloppy-gauge-fix   outer / sloppy operator in temporal gauge\n"
    "  --mixed reliable|defect|none, --delta D   mixed-precision method (default reliable, 0.1)\n"
    "  --tol T               per column ||b - M x|| / ||b|| (default 1e-10)\n"
    "  --max-iter N          per column (default 10000)\n"
    "  --backend auto|cpu|cuda  default auto\n"
    "  --grid Px Py Pz Pt    process grid under mpirun (default automatic)\n"
    "  --out FILE.npy        the propagator, complex128 (T, Z, Y, X, 4, 3, 4, 3), sink spin\n"
    "                        and colour before source spin and colour (2304 bytes a site)\n"
    "  --json FILE           settings, per-column stats, C(t) and m_eff(t)\n"
    "  --csv FILE            t, then C and m_eff of each meson\n"
    "  --png FILE            C(t) and m_eff(t) plotted (python3 with matplotlib)\n"
    "  --overwrite           replace existing output files\n"
    "  --quiet               no summary\n"
    "  --verbose N           solver messages on stderr: 1 the batch's time split (transfers\n"
    "                        and preparation, Krylov, reconstruction), 2 every true-residual\n"
    "                        check, 3 every iteration\n";

typedef struct options {
    const char *gauge, *json, *csv, *png, *out;
    int unit, have_dims, dims[4];
    double kappa, mass;
    int have_kappa, have_mass;
    wd_source src;
    int backend;   /* -1 auto, else wd_backend_kind */
    int have_grid, grid[4];
    int overwrite, quiet;
    int have_solver;
    wd_cli_mg mg;       /* --mg, --mg-* */
    wd_solver_settings s;
} options;

static int usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "wdirac propagator: %s%s%s (wdirac propagator --help)\n", msg,
            arg ? " " : "", arg ? arg : "");
    return WD_EXIT_USAGE;
}

static int number(const char *s, double *v)
{
    char *end;
    errno = 0;
    *v = s ? strtod(s, &end) : 0;
    return s && end != s && !*end && !errno && isfinite(*v);
}

static int parse(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    wd_solver_default_settings(&o->s);
    wd_cli_mg_init(&o->mg);
    o->backend = -1;
    o->src.type = WD_SOURCE_POINT;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
        double v;
        const int mg = wd_cli_mg_parse("wdirac propagator", argc, argv, &i, &o->mg);
        if (mg < 0)
            return WD_EXIT_USAGE;
        if (mg > 0)
            continue;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            wd_cli_mg_usage(stdout);
            return WD_EXIT_OK;
        } else if (!strcmp(a, "--gauge") && next) {
            o->gauge = argv[++i];
        } else if (!strcmp(a, "--unit-gauge")) {
            o->unit = 1;
        } else if (!strcmp(a, "--dims")) {
            for (int mu = 0; mu < 4; mu++) {
                if (!number(i + 1 < argc ? argv[i + 1] : NULL, &v) || v != (int)v || v < 1)
                    return usage_error("--dims needs four positive integers", NULL);
                o->dims[mu] = (int)v;
                i++;
            }
            o->have_dims = 1;
        } else if (!strcmp(a, "--kappa") && next) {
            if (!number(argv[++i], &o->kappa) || !(o->kappa > 0))
                return usage_error("--kappa needs a number > 0, got", argv[i]);
            o->have_kappa = 1;
        } else if (!strcmp(a, "--mass") && next) {
            if (!number(argv[++i], &o->mass))
                return usage_error("--mass needs a number, got", argv[i]);
            o->have_mass = 1;
        } else if (!strcmp(a, "--csw") && next) {
            if (!number(argv[++i], &o->s.csw))
                return usage_error("--csw needs a number, got", argv[i]);
        } else if (!strcmp(a, "--clover-form") && next) {
            i++;
            if (!strcmp(argv[i], "symmetric"))
                o->s.clover_form = WD_CLOVER_SYMMETRIC;
            else if (!strcmp(argv[i], "asymmetric"))
                o->s.clover_form = WD_CLOVER_ASYMMETRIC;
            else
                return usage_error("--clover-form takes symmetric or asymmetric, got", argv[i]);
        } else if (!strcmp(a, "--source") && next) {
            i++;
            if (!strcmp(argv[i], "point"))
                o->src.type = WD_SOURCE_POINT;
            else if (!strcmp(argv[i], "wall"))
                o->src.type = WD_SOURCE_WALL;
            else
                return usage_error("--source takes point or wall, got", argv[i]);
        } else if (!strcmp(a, "--site") && next) {
            int n = 0;
            if (sscanf(argv[++i], "%d,%d,%d,%d%n", &o->src.site[0], &o->src.site[1],
                       &o->src.site[2], &o->src.site[3], &n) != 4 || argv[i][n] ||
                o->src.site[0] < 0 || o->src.site[1] < 0 || o->src.site[2] < 0 ||
                o->src.site[3] < 0)
                return usage_error("--site takes x,y,z,t (four integers >= 0), got", argv[i]);
        } else if (!strcmp(a, "--tbc") && next) {
            i++;
            if (!strcmp(argv[i], "periodic"))
                o->s.tbc = WD_TIME_PERIODIC;
            else if (!strcmp(argv[i], "antiperiodic"))
                o->s.tbc = WD_TIME_ANTIPERIODIC;
            else
                return usage_error("--tbc takes periodic or antiperiodic, got", argv[i]);
        } else if (!strcmp(a, "--solver") && next) {
            i++;
            if (!strcmp(argv[i], "cg"))
                o->s.solver = WD_SOLVER_CG;
            else if (!strcmp(argv[i], "bicgstab"))
                o->s.solver = WD_SOLVER_BICGSTAB;
            else
                return usage_error("--solver takes cg or bicgstab, got", argv[i]);
            o->have_solver = 1;
        } else if ((!strcmp(a, "--precision") || !strcmp(a, "--sloppy")) && next) {
            const char *p = argv[++i];
            const int prec = !strcmp(p, "d") ? 8 : !strcmp(p, "s") ? 4 : !strcmp(p, "h") ? 2 : 0;
            if (!prec)
                return usage_error("--precision and --sloppy take d, s or h, got", p);
            if (!strcmp(a, "--precision"))
                o->s.precision = prec;
            else
                o->s.sloppy_precision = prec;
        } else if ((!strcmp(a, "--recon") || !strcmp(a, "--sloppy-recon")) && next) {
            if (!number(argv[++i], &v) || (v != 18 && v != 12 && v != 8))
                return usage_error("--recon and --sloppy-recon take 18, 12 or 8, got", argv[i]);
            if (!strcmp(a, "--recon"))
                o->s.recon = (wd_recon)v;
            else
                o->s.sloppy_recon = (wd_recon)v;
        } else if (!strcmp(a, "--gauge-fix")) {
            o->s.gauge_fix = 1;
        } else if (!strcmp(a, "--sloppy-gauge-fix")) {
            o->s.sloppy_gauge_fix = 1;
        } else if (!strcmp(a, "--mixed") && next) {
            i++;
            if (!strcmp(argv[i], "reliable"))
                o->s.mixed = WD_MIXED_RELIABLE;
            else if (!strcmp(argv[i], "defect"))
                o->s.mixed = WD_MIXED_DEFECT;
            else if (!strcmp(argv[i], "none"))
                o->s.mixed = WD_MIXED_NONE;
            else
                return usage_error("--mixed takes reliable, defect or none, got", argv[i]);
        } else if (!strcmp(a, "--delta") && next) {
            if (!number(argv[++i], &o->s.delta))
                return usage_error("--delta needs a number, got", argv[i]);
        } else if (!strcmp(a, "--tol") && next) {
            if (!number(argv[++i], &o->s.tol))
                return usage_error("--tol needs a number, got", argv[i]);
        } else if (!strcmp(a, "--max-iter") && next) {
            if (!number(argv[++i], &v) || v != (int)v || v < 1)
                return usage_error("--max-iter needs an integer >= 1, got", argv[i]);
            o->s.max_iter = (int)v;
        } else if (!strcmp(a, "--backend") && next) {
            i++;
            if (!strcmp(argv[i], "auto"))
                o->backend = -1;
            else if (!strcmp(argv[i], "cpu"))
                o->backend = WD_BACKEND_CPU;
            else if (!strcmp(argv[i], "cuda"))
                o->backend = WD_BACKEND_CUDA;
            else
                return usage_error("--backend takes auto, cpu or cuda, got", argv[i]);
        } else if (!strcmp(a, "--grid")) {
            if (!wd_cli_parse_grid("wdirac propagator", argc, argv, &i, o->grid))
                return WD_EXIT_USAGE;
            o->have_grid = 1;
        } else if (!strcmp(a, "--json") && next) {
            o->json = argv[++i];
        } else if (!strcmp(a, "--out") && next) {
            o->out = argv[++i];
        } else if (!strcmp(a, "--csv") && next) {
            o->csv = argv[++i];
        } else if (!strcmp(a, "--png") && next) {
            o->png = argv[++i];
        } else if (!strcmp(a, "--overwrite")) {
            o->overwrite = 1;
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
        } else if (!strcmp(a, "--verbose") && next) {
            if (!number(argv[++i], &v) || v != (int)v || v < 0 || v > 3)
                return usage_error("--verbose needs 0, 1, 2 or 3, got", argv[i]);
            o->s.verbosity = (int)v;
        } else {
            return usage_error("unknown or incomplete option", a);
        }
    }
    if (!!o->gauge + o->unit != 1)
        return usage_error("give the gauge field: --gauge FILE or --unit-gauge --dims X Y Z T",
                           NULL);
    if (o->unit && !o->have_dims)
        return usage_error("--unit-gauge needs --dims X Y Z T", NULL);
    if (o->have_kappa == o->have_mass)
        return usage_error("give --kappa or --mass (one of them)", NULL);
    o->s.mass = o->have_kappa ? 1.0 / (2.0 * o->kappa) - 4.0 : o->mass;
    if (!wd_cli_mg_finish("wdirac propagator", &o->mg, o->s.verbosity))
        return WD_EXIT_USAGE;
    o->mg.m.save_overwrite = o->overwrite;
    if (o->mg.on && o->have_solver)
        return usage_error("give --solver or --mg, not both", NULL);
    if (o->s.sloppy_precision > o->s.precision)
        o->s.sloppy_precision = o->s.precision;
    const char *outs[4] = {o->json, o->csv, o->png, o->out};
    for (int k = 0; k < 4; k++)
        for (int l = k + 1; l < 4; l++)
            if (outs[k] && outs[l] && !strcmp(outs[k], outs[l]))
                return usage_error("two outputs name the same file", outs[k]);
    return -1;
}

/* The files are rank 0's: a failure there is said there (rank 0 prints)
 * and its status agreed, so every rank exits with the same code. */
static wd_status io_fail(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "wdirac propagator: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n");
    return WD_ERR_IO;
}

/* may this output be written (refuses an existing one without
 * --overwrite; a directory never) */
static wd_status writable(const char *path, int overwrite)
{
    struct stat sb;
    if (path && lstat(path, &sb) == 0 && (S_ISDIR(sb.st_mode) || !overwrite))
        return io_fail("'%s' %s", path, S_ISDIR(sb.st_mode) ? "is a directory"
                       : "exists; give --overwrite to replace it");
    return WD_OK;
}

/* write text through a temporary file renamed into place */
static wd_status write_text(const char *path, const char *text)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return io_fail("cannot write '%s': %s", tmp, strerror(errno));
    const int ok = fputs(text, f) >= 0;
    if (fclose(f) != 0 || !ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return io_fail("cannot write '%s': %s", path, strerror(errno));
    }
    return WD_OK;
}

static const char *find_plot_script(void)
{
    static char beside[1024];
#ifdef WD_SOURCE_DIR
    snprintf(beside, sizeof beside, "%s/bench/plot_correlators.py", WD_SOURCE_DIR);
    if (access(beside, R_OK) == 0)
        return beside;
#endif
    return access("bench/plot_correlators.py", R_OK) == 0 ? "bench/plot_correlators.py" : NULL;
}

static wd_status plot(const char *json_path, const char *png)
{
    const char *script = find_plot_script();
    if (!script)
        return io_fail("--png: %s%s", "bench/plot_correlators.py not found", "");
    char *argv[] = {"python3", (char *)script, (char *)json_path, (char *)png, NULL};
    pid_t pid;
    if (posix_spawnp(&pid, "python3", NULL, NULL, argv, environ) != 0)
        return io_fail("--png: cannot start python3 (%s)%s", strerror(errno), "");
    int status = 0;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return io_fail("--png: %s failed (%s)", script, "numpy and matplotlib installed?");
    return WD_OK;
}

int wd_cli_propagator_main(int argc, char **argv)
{
    options o;
    int rc = parse(argc, argv, &o);
    if (rc >= 0)
        return rc;

    /* outputs first, on rank 0, the verdict everywhere */
    wd_status st = WD_OK;
    if (wd_rank() == 0)
        for (int k = 0; k < 4 && st == WD_OK; k++)
            st = writable(k == 0 ? o.json : k == 1 ? o.csv : k == 2 ? o.png : o.out, o.overwrite);
    if ((st = wd_agree(st)) != WD_OK)
        return wd_cli_exit_code(st);
    /* the backend */
    if (o.backend < 0)
        o.s.backend = wd_agree(wd_backend_probe(WD_BACKEND_CUDA)) == WD_OK ? WD_BACKEND_CUDA
                                                                             : WD_BACKEND_CPU;
    else
        o.s.backend = (wd_backend_kind)o.backend;
    if (o.s.backend == WD_BACKEND_CUDA &&
        (st = wd_agree(wd_backend_probe(WD_BACKEND_CUDA))) != WD_OK) {
        fprintf(stderr, "wdirac propagator: --backend cuda: %s\n", wd_last_error());
        return wd_cli_exit_code(st);
    }
    /* the lattice */
    int dims[4];
    if (o.gauge) {
        wd_gauge_info info;
        if ((st = wd_agree(wd_gauge_read_header(o.gauge, &info))) != WD_OK) {
            fprintf(stderr, "wdirac propagator: %s\n", wd_last_error());
            return wd_cli_exit_code(st);
        }
        memcpy(dims, info.dims, sizeof dims);
    } else {
        memcpy(dims, o.dims, sizeof dims);
    }
    wd_lattice lat;
    if ((st = wd_lattice_make(&lat, dims, o.have_grid ? o.grid : NULL)) != WD_OK) {
        fprintf(stderr, "wdirac propagator: %s\n", wd_last_error());
        return wd_cli_exit_code(st);
    }
    const size_t vol = wd_volume(lat.local);
    const int T = dims[3];
    double *u = malloc(vol * 72 * sizeof *u), *prop = malloc(vol * 288 * sizeof *prop);
    double *corr = malloc((size_t)WD_MESON_COUNT * T * sizeof *corr);
    double *meff = malloc((size_t)WD_MESON_COUNT * (T / 2) * sizeof *meff);
    if ((st = wd_agree(u && prop && corr && meff ? WD_OK : WD_ERR_NOMEM)) != WD_OK) {
        fprintf(stderr, "wdirac propagator: out of memory (%zu sites a rank)\n", vol);
        free(u), free(prop), free(corr), free(meff);
        return WD_EXIT_INTERNAL;
    }
    st = o.unit ? wd_gauge_init_block(u, &lat, WD_START_COLD, 0)
                : wd_gauge_read_block(o.gauge, &lat, 0, u, NULL);
    wd_gauge_obs obs;
    if (st == WD_OK)
        st = wd_gauge_observables_block(u, &lat, &obs);
    if (st != WD_OK) {
        fprintf(stderr, "wdirac propagator: %s\n", wd_last_error());
        free(u), free(prop), free(corr), free(meff);
        return wd_cli_exit_code(st);
    }
    const double kappa = 1.0 / (2.0 * (4.0 + o.s.mass));
    const char *src_name = o.src.type == WD_SOURCE_POINT ? "point" : "wall";
    if (!o.quiet) {
        printf("wdirac propagator  backend %s  commit %s\n",
               o.s.backend == WD_BACKEND_CUDA ? "cuda" : "cpu", WD_GIT_COMMIT);
        printf("lattice    %dx%dx%dx%d", dims[0], dims[1], dims[2], dims[3]);
        if (lat.size > 1)
            printf(" on grid %d %d %d %d (%d ranks)", lat.procs[0], lat.procs[1], lat.procs[2],
                   lat.procs[3], lat.size);
        printf("\ngauge      %s, plaquette %.10f\n", o.unit ? "unit" : o.gauge, obs.plaquette);
        printf("source     %s at %d,%d,%d,%d; kappa %.10g (mass %.10g), tol %.1e\n", src_name,
               o.src.site[0], o.src.site[1], o.src.site[2], o.src.site[3], kappa, o.s.mass,
               o.s.tol);
        if (o.s.csw != 0)
            printf("clover     c_sw %.10g, %s Schur form\n", o.s.csw,
                   o.s.clover_form == WD_CLOVER_SYMMETRIC ? "symmetric" : "asymmetric");
        if (o.mg.on)
            wd_cli_mg_print_settings(stdout, "multigrid  ", &o.mg.m);
        fflush(stdout);
    }
    wd_solver_stats stats[12];
    memset(stats, 0, sizeof stats);
    wd_mg_setup_stats mgst;
    st = wd_propagator_mg(prop, u, &lat, &o.src, &o.s, o.mg.on ? &o.mg.m : NULL, &mgst, stats);
    if (o.mg.on && st != WD_OK && mgst.levels == 0) {
        /* no setup, so no column solved: the reason, and the option it is about */
        const char *opt = wd_cli_mg_option_of(wd_last_error());
        fprintf(stderr, "wdirac propagator: %s: %s%s%s%s\n", wd_status_string(st),
                wd_last_error(), opt ? " (" : "", opt ? opt : "", opt ? ")" : "");
        free(u), free(prop), free(corr), free(meff);
        return wd_cli_exit_code(st);
    }
    double seconds = 0, flops = 0, solve_seconds = 0;
    for (int k = 0; k < 12; k++) {
        seconds += stats[k].seconds;
        solve_seconds += stats[k].solve_seconds;
        flops += stats[k].flops;
    }
    if (!o.quiet) {
        if (o.mg.on)
            wd_cli_mg_print_setup(stdout, "mg setup   ", &mgst, &o.mg.m);
        printf("columns    iterations%s", o.mg.on ? " (outer)" : "");
        for (int k = 0; k < 12; k++)
            printf(" %d", stats[k].iterations);
        double worst = 0;
        for (int k = 0; k < 12; k++)
            worst = fmax(worst, stats[k].true_residual);
        printf("\n           largest true residual %.2e; %.3f s (Krylov %.3f s), %.2f Gflops%s\n",
               worst, seconds, solve_seconds,
               solve_seconds > 0 ? flops / solve_seconds * 1e-9 : 0.0,
               lat.size > 1 ? " a rank" : "");
    }
    if (st != WD_OK) {
        fprintf(stderr, "wdirac propagator: %s: %s\n", wd_status_string(st), wd_last_error());
        free(u), free(prop), free(corr), free(meff);
        return wd_cli_exit_code(st);
    }
    const int t0 = o.src.site[3];
    st = wd_meson_correlators(corr, prop, &lat, t0);
    for (int m = 0; m < WD_MESON_COUNT && st == WD_OK; m++) {
        int sign;
        wd_meson_name(m, &sign);
        st = wd_effective_mass(meff + m * (T / 2), corr + m * T, T, sign);
    }
    if (st != WD_OK) {
        fprintf(stderr, "wdirac propagator: %s\n", wd_last_error());
        free(u), free(prop), free(corr), free(meff);
        return wd_cli_exit_code(st);
    }
    if (!o.quiet) {
        printf("\n t");
        for (int m = 0; m < WD_MESON_COUNT; m++)
            printf("  %15s %7s", wd_meson_name(m, NULL), "m_eff");
        printf("\n");
        for (int t = 0; t < T; t++) {
            printf("%2d", t);
            for (int m = 0; m < WD_MESON_COUNT; m++) {
                const double me = t < T / 2 ? meff[m * (T / 2) + t] : NAN;
                printf("  %15.8e ", corr[m * T + t]);
                if (isfinite(me))
                    printf("%7.4f", me);
                else
                    printf("%7s", "-");
            }
            printf("\n");
        }
        printf("C(t): zero momentum, t from the source slice %d; m_eff: cosh (sinh for the "
               "a4-pseudoscalar) ratio of t and t+1\n", t0);
    }

    /* the propagator file (collective: rank 0 writes what every rank sends) */
    if (o.out && (st = wd_npy_write_propagator_block(o.out, prop, &lat, o.overwrite)) != WD_OK) {
        fprintf(stderr, "wdirac propagator: %s\n", wd_last_error());
        free(u), free(prop), free(corr), free(meff);
        return wd_cli_exit_code(st);
    }

    /* the other files, rank 0 */
    if (wd_rank() == 0 && (o.json || o.csv || o.png)) {
        json_t *root = json_pack("{s:s, s:s, s:[iiii], s:s, s:f, s:s, s:[iiii], s:f, s:f, s:f, "
                                 "s:f, s:s, s:s, s:[iiii], s:i}",
                                 "command", "propagator", "commit", WD_GIT_COMMIT, "dims", dims[0],
                                 dims[1], dims[2], dims[3], "gauge", o.unit ? "unit" : o.gauge,
                                 "plaquette", obs.plaquette, "source", src_name, "site",
                                 o.src.site[0], o.src.site[1], o.src.site[2], o.src.site[3],
                                 "kappa", kappa, "mass", o.s.mass, "csw", o.s.csw, "tol",
                                 o.s.tol, "backend",
                                 o.s.backend == WD_BACKEND_CUDA ? "cuda" : "cpu", "tbc",
                                 o.s.tbc == WD_TIME_PERIODIC ? "periodic" : "antiperiodic",
                                 "grid", lat.procs[0], lat.procs[1], lat.procs[2], lat.procs[3],
                                 "ranks", lat.size);
        json_t *cols = json_array(), *mesons = json_object();
        for (int k = 0; k < 12; k++) {
            json_t *c = json_pack("{s:i, s:i, s:i, s:f, s:f}", "spin", k / 3, "colour", k % 3,
                                  "iterations", stats[k].iterations, "true_residual",
                                  stats[k].true_residual, "seconds", stats[k].seconds);
            if (c && o.mg.on)
                json_object_set_new(c, "mg_iterations", wd_cli_mg_levels_json(&stats[k]));
            json_array_append_new(cols, c);
        }
        for (int m = 0; m < WD_MESON_COUNT; m++) {
            json_t *c = json_array(), *e = json_array();
            for (int t = 0; t < T; t++)
                json_array_append_new(c, json_real(corr[m * T + t]));
            for (int t = 0; t < T / 2; t++) {
                const double me = meff[m * (T / 2) + t];
                json_array_append_new(e, isfinite(me) ? json_real(me) : json_null());
            }
            json_object_set_new(mesons, wd_meson_name(m, NULL),
                                json_pack("{s:o, s:o}", "C", c, "m_eff", e));
        }
        json_object_set_new(root, "columns", cols);
        json_object_set_new(root, "mesons", mesons);
        json_object_set_new(root, "seconds", json_real(seconds));
        json_object_set_new(root, "solver", json_string(o.mg.on ? "mg" : o.s.solver ==
                                                        WD_SOLVER_CG ? "cg" : "bicgstab"));
        if (o.mg.on) {
            /* one setup for the 12 columns: seconds_with_setup is what the user waited */
            json_object_set_new(root, "mg", wd_cli_mg_json(&o.mg.m, &mgst));
            json_object_set_new(root, "mg_setup_seconds", json_real(mgst.seconds));
            json_object_set_new(root, "seconds_with_setup", json_real(seconds + mgst.seconds));
        }
        char *text = root ? json_dumps(root, JSON_INDENT(1)) : NULL;
        json_decref(root);
        if (!text) {
            fprintf(stderr, "wdirac propagator: out of memory for the JSON record\n");
            st = WD_ERR_NOMEM;
        }
        char jtmp[4200] = "";
        if (st == WD_OK && o.json)
            st = write_text(o.json, text);
        if (st == WD_OK && o.png && !o.json) {
            /* the plot script reads a JSON record: a temporary one */
            snprintf(jtmp, sizeof jtmp, "%s.json-%ld", o.png, (long)getpid());
            st = write_text(jtmp, text);
        }
        free(text);
        if (st == WD_OK && o.csv) {
            size_t cap = 64 + (size_t)T * WD_MESON_COUNT * 64 + 256, len = 0;
            char *csv = malloc(cap);
            if (!csv) {
                fprintf(stderr, "wdirac propagator: out of memory for the CSV\n");
                st = WD_ERR_NOMEM;
            } else {
                len += (size_t)snprintf(csv + len, cap - len, "t");
                for (int m = 0; m < WD_MESON_COUNT; m++)
                    len += (size_t)snprintf(csv + len, cap - len, ",C_%s,m_eff_%s",
                                            wd_meson_name(m, NULL), wd_meson_name(m, NULL));
                len += (size_t)snprintf(csv + len, cap - len, "\n");
                for (int t = 0; t < T; t++) {
                    len += (size_t)snprintf(csv + len, cap - len, "%d", t);
                    for (int m = 0; m < WD_MESON_COUNT; m++) {
                        const double me = t < T / 2 ? meff[m * (T / 2) + t] : NAN;
                        len += (size_t)snprintf(csv + len, cap - len, ",%.17g,", corr[m * T + t]);
                        if (isfinite(me))
                            len += (size_t)snprintf(csv + len, cap - len, "%.17g", me);
                    }
                    len += (size_t)snprintf(csv + len, cap - len, "\n");
                }
                st = write_text(o.csv, csv);
                free(csv);
            }
        }
        if (st == WD_OK && o.png)
            st = plot(o.json ? o.json : jtmp, o.png);
        if (*jtmp)
            unlink(jtmp);
    }
    if ((st = wd_agree(st)) != WD_OK) {
        rc = wd_cli_exit_code(st);   /* rank 0 has said why */
    } else {
        rc = WD_EXIT_OK;
        if (!o.quiet) {
            if (o.out)
                printf("propagator %s\n", o.out);
            if (o.json)
                printf("json       %s\n", o.json);
            if (o.csv)
                printf("csv        %s\n", o.csv);
            if (o.png)
                printf("png        %s\n", o.png);
        }
    }
    free(u), free(prop), free(corr), free(meff);
    return rc;
}
