/*
 * cli_solve.c: `wdirac solve`, one solve of the Wilson-Dirac equation
 * M x = b from the command line (wdirac solve --help lists the options).
 *
 * The externally accessible function is
 *   wd_cli_solve_main   parse the options, read (or make) the gauge field
 *                       and the source, solve with wd_solve (--mg: a
 *                       wd_solver, its multigrid set up once by
 *                       wd_solver_mg_setup, then a WD_SOLVER_MG solve),
 *                       print a summary, write the solution (.npy) and a
 *                       JSON record; returns the exit code
 *
 * Exit codes (wd_cli_exit_code, cli_util.h, maps every status):
 *   0  converged: ||b - M x|| / ||b|| <= --tol
 *   1  the solver stopped without converging (diverged, stagnated, NaN,
 *      iteration limit); the best iterate is still written to --out
 *   2  bad usage or input: options, a missing or damaged gauge or source
 *      file, an output that exists (without --overwrite) or cannot be
 *      written, a variant this build left out
 *   3  internal error: out of memory, a failed CUDA call
 *   4  --backend cuda and no usable GPU
 *
 * Under mpirun every rank runs this with the same options on its block of
 * the lattice (--grid, default automatic): the gauge field, the source and
 * the solution files are read and written by rank 0 for the whole lattice
 * (wd_gauge_read_block, wd_npy_*_block), every failure is agreed by all
 * ranks (wd_agree) so they exit with the same code, and rank 0 prints.
 *
 * Order of work, so that bad input fails fast and loses nothing: options;
 * every output path checked (an existing file is refused without
 * --overwrite, and a file must be creatable beside it) before the
 * possibly long solve; the backend; the gauge field and the source; the
 * solve; only then the files.  The solution and source files are written
 * through a temporary file renamed into place (wd_npy_write_spinor).
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
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

#include "cli_solve.h"
#include "cli_util.h"
#include "cli_bench.h"
#include "wdirac_gauge.h"
#include "wdirac_npy.h"
#include "wd_version.h"
#include "wdirac.h"

static const char usage_text[] =
    "usage: wdirac solve (--gauge FILE | --unit-gauge --dims X Y Z T)\n"
    "                    (--point x,y,z,t,spin,colour | --random SEED | --source FILE.npy)\n"
    "                    [options]\n"
    "Solve M x = b, M = (4+m) - D/2 the Wilson-Dirac operator (DESIGN.md), even-odd\n"
    "preconditioned, and report the true residual ||b - M x|| / ||b|| on the full lattice.\n"
    "\n"
    "gauge field (one of):\n"
    "  --gauge FILE          NERSC or ILDG configuration (format from its first bytes);\n"
    "                        with --dims, the file must have those extents\n"
    "  --unit-gauge          every link the unit matrix (free field), with --dims X Y Z T\n"
    "source b (one of):\n"
    "  --point x,y,z,t,spin,colour   1 at one site, spin (0-3, DeGrand-Rossi) and colour (0-2)\n"
    "  --random SEED         complex normal components, E|b_i|^2 = 1\n"
    "  --source FILE.npy     complex128, shape (T, Z, Y, X, 4, 3)\n"
    "operator:\n"
    "  --mass M | --kappa K  bare mass, or kappa = 1/(2(4+m)) (default mass 0.1)\n"
    "  --tbc periodic|antiperiodic   time boundary of the fermions (default antiperiodic)\n"
    "  --csw C               clover coefficient c_sw (default 0: Wilson)\n"
    "  --clover-form symmetric|asymmetric   even-odd Schur form with a clover term\n"
    "                        (default symmetric)\n"
    "solver:\n"
    "  --solver cg|bicgstab  CG on the normal equations or BiCGstab (default bicgstab;\n"
    "                        --mg below for multigrid)\n"
    "  --precision d|s|h     outer precision (default d)\n"
    "  --sloppy d|s|h        sloppy (Krylov) precision (default s, or the outer one if lower)\n"
    "  --recon 18|12|8       outer gauge reconstruction (default 12)\n"
    "  --sloppy-recon 18|12|8  sloppy gauge reconstruction (default 12)\n"
    "  --gauge-fix           outer operator in temporal gauge (default off)\n"
    "  --sloppy-gauge-fix    sloppy operator in temporal gauge (default off)\n"
    "  --mixed reliable|defect|none  mixed-precision method (default reliable)\n"
    "  --delta D             reliable-update parameter (default 0.1)\n"
    "  --eps-in E            defect correction: residual reduction of each inner solve\n"
    "                        (default 0.1; --tol-inner is the same)\n"
    "  --tol T               target ||b - M x|| / ||b|| (default 1e-10)\n"
    "  --max-iter N          limit on iterations k + l (default 10000)\n"
    "  --backend auto|cpu|cuda  auto (default): the GPU when one is usable, else the CPU\n"
    "processes (under mpirun, one per GPU; docs/multi-gpu.md):\n"
    "  --grid Px Py Pz Pt    split the lattice over this process grid (default: automatic,\n"
    "                        T first, then Z, Y, X, every local extent even and >= 4);\n"
    "                        files are the whole lattice whatever the grid; rank 0 prints\n"
    "output:\n"
    "  --out FILE.npy        the solution x, complex128 (T, Z, Y, X, 4, 3) (default: not saved)\n"
    "  --save-source FILE.npy  the source b\n"
    "  --json FILE           settings and results as JSON (device, commit, date)\n"
    "  --overwrite           replace existing output files (default: refuse, exit 2)\n"
    "  --verbose N           solver messages on stderr: 1 summary, 2 every true-residual\n"
    "                        check, 3 every iteration (default 0)\n"
    "  --quiet               no summary on stdout and no progress line (errors still shown)\n";

static const char usage_exit[] =
    "exit codes: 0 converged; 1 the solver did not converge (diverged, stagnated, NaN,\n"
    "  iteration limit; the best iterate is still written to --out); 2 bad usage or\n"
    "  input (options, files, an existing output without --overwrite); 3 internal error\n"
    "  (memory, CUDA); 4 --backend cuda and no usable GPU\n";

enum source_kind { SRC_POINT, SRC_RANDOM, SRC_FILE };
enum backend_choice { BE_AUTO, BE_CPU, BE_CUDA };

typedef struct options {
    const char *gauge, *source_file, *out, *save_source, *json;
    int unit, have_dims, dims[4];
    int nsources;
    enum source_kind source;
    int point[6];
    uint64_t seed;
    int have_mass, have_kappa, have_sloppy;
    double kappa;
    enum backend_choice backend;
    int overwrite, quiet;
    int have_grid, grid[4];
    int have_solver;
    wd_cli_mg mg;       /* --mg, --mg-* */
    wd_solver_settings s;
} options;

static int fail_usage(const char *fmt, ...) CLI_PRINTF(1, 2);

static int fail_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("wdirac solve: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs(" (wdirac solve --help)\n", stderr);
    va_end(ap);
    return WD_EXIT_USAGE;
}

static int parse_long(const char *opt, const char *s, long lo, long hi, long *v)
{
    char *end;
    errno = 0;
    *v = s ? strtol(s, &end, 10) : 0;
    if (!s || end == s || *end || errno || *v < lo || *v > hi) {
        fprintf(stderr, "wdirac solve: %s needs an integer in [%ld, %ld], got '%s'\n", opt, lo,
                hi, s ? s : "");
        return 0;
    }
    return 1;
}

static int parse_double(const char *opt, const char *s, double *v)
{
    char *end;
    *v = s ? strtod(s, &end) : NAN;
    if (!s || end == s || *end || !isfinite(*v)) {
        fprintf(stderr, "wdirac solve: %s needs a finite number, got '%s'\n", opt, s ? s : "");
        return 0;
    }
    return 1;
}

static int parse_precision(const char *opt, const char *s, wd_precision *p)
{
    if (s && !strcmp(s, "d"))
        *p = WD_PREC_DOUBLE;
    else if (s && !strcmp(s, "s"))
        *p = WD_PREC_SINGLE;
    else if (s && !strcmp(s, "h"))
        *p = WD_PREC_HALF;
    else {
        fprintf(stderr, "wdirac solve: %s takes d, s or h, got '%s'\n", opt, s ? s : "");
        return 0;
    }
    return 1;
}

static int parse_recon(const char *opt, const char *s, wd_recon *r)
{
    long v;
    if (!parse_long(opt, s, 8, 18, &v) || (v != 8 && v != 12 && v != 18)) {
        fprintf(stderr, "wdirac solve: %s takes 18, 12 or 8\n", opt);
        return 0;
    }
    *r = (wd_recon)v;
    return 1;
}

/* x,y,z,t,spin,colour: six non-negative integers (ranges checked once the
 * lattice is known) */
static int parse_point(const char *s, int p[6])
{
    const char *q = s;
    for (int k = 0; k < 6; k++) {
        char *end;
        errno = 0;
        const long v = strtol(q, &end, 10);
        if (end == q || errno || v < 0 || v > (1L << 24) || *end != (k < 5 ? ',' : '\0'))
            return 0;
        p[k] = (int)v;
        q = end + 1;
    }
    return 1;
}

static char precision_letter(int p)
{
    return p == 8 ? 'd' : p == 4 ? 's' : 'h';
}

static const char *mixed_name(wd_mixed_method m)
{
    return m == WD_MIXED_RELIABLE ? "reliable" : m == WD_MIXED_DEFECT ? "defect" : "none";
}

/* the options followed by one value (--dims, with four, checks its own) */
static int takes_value(const char *a)
{
    static const char *const valued[] = {
        "--gauge", "--point", "--random", "--source", "--mass", "--kappa", "--tbc", "--solver",
        "--csw", "--clover-form",
        "--precision", "--sloppy", "--recon", "--sloppy-recon", "--mixed", "--delta", "--eps-in",
        "--tol-inner", "--tol", "--max-iter", "--backend", "--out", "--save-source", "--json",
        "--verbose"};
    for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++)
        if (!strcmp(a, valued[k]))
            return 1;
    return 0;
}

/* Returns -1 when the options are good, else the exit code. */
static int parse_options(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    wd_solver_default_settings(&o->s);
    wd_cli_mg_init(&o->mg);
    o->backend = BE_AUTO;
    long v;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        const int mg = wd_cli_mg_parse("wdirac solve", argc, argv, &i, &o->mg);
        if (mg < 0)
            return WD_EXIT_USAGE;
        if (mg > 0)
            continue;
        if (takes_value(a) && !next)
            return fail_usage("%s needs a value", a);
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            wd_cli_mg_usage(stdout);
            fputs(usage_exit, stdout);
            return WD_EXIT_OK;
        } else if (!strcmp(a, "--gauge")) {
            o->gauge = argv[++i];
        } else if (!strcmp(a, "--unit-gauge")) {
            o->unit = 1;
        } else if (!strcmp(a, "--dims")) {
            for (int mu = 0; mu < 4; mu++) {
                if (!parse_long("--dims", i + 1 < argc ? argv[i + 1] : NULL, 1, 1L << 24, &v))
                    return WD_EXIT_USAGE;
                o->dims[mu] = (int)v;
                i++;
            }
            o->have_dims = 1;
        } else if (!strcmp(a, "--point")) {
            if (!parse_point(next, o->point))
                return fail_usage("--point takes x,y,z,t,spin,colour (six integers >= 0), "
                                  "got '%s'", next);
            o->source = SRC_POINT;
            o->nsources++;
            i++;
        } else if (!strcmp(a, "--random")) {
            char *end;
            errno = 0;
            o->seed = strtoull(next, &end, 0);
            if (end == next || *end || errno || *next == '-')
                return fail_usage("--random needs an unsigned 64-bit seed, got '%s'", next);
            o->source = SRC_RANDOM;
            o->nsources++;
            i++;
        } else if (!strcmp(a, "--source")) {
            o->source_file = argv[++i];
            o->source = SRC_FILE;
            o->nsources++;
        } else if (!strcmp(a, "--mass")) {
            if (!parse_double(a, next, &o->s.mass))
                return WD_EXIT_USAGE;
            o->have_mass = 1;
            i++;
        } else if (!strcmp(a, "--kappa")) {
            if (!parse_double(a, next, &o->kappa))
                return WD_EXIT_USAGE;
            if (!(o->kappa > 0))
                return fail_usage("--kappa must be > 0, got '%s'", next);
            o->have_kappa = 1;
            i++;
        } else if (!strcmp(a, "--csw")) {
            if (!parse_double(a, next, &o->s.csw))
                return WD_EXIT_USAGE;
            i++;
        } else if (!strcmp(a, "--clover-form")) {
            if (!strcmp(next, "symmetric"))
                o->s.clover_form = WD_CLOVER_SYMMETRIC;
            else if (!strcmp(next, "asymmetric"))
                o->s.clover_form = WD_CLOVER_ASYMMETRIC;
            else
                return fail_usage("--clover-form takes symmetric or asymmetric, got '%s'", next);
            i++;
        } else if (!strcmp(a, "--tbc")) {
            if (!strcmp(next, "periodic"))
                o->s.tbc = WD_TIME_PERIODIC;
            else if (!strcmp(next, "antiperiodic"))
                o->s.tbc = WD_TIME_ANTIPERIODIC;
            else
                return fail_usage("--tbc takes periodic or antiperiodic, got '%s'", next);
            i++;
        } else if (!strcmp(a, "--solver")) {
            if (!strcmp(next, "cg"))
                o->s.solver = WD_SOLVER_CG;
            else if (!strcmp(next, "bicgstab"))
                o->s.solver = WD_SOLVER_BICGSTAB;
            else
                return fail_usage("--solver takes cg or bicgstab, got '%s'", next);
            o->have_solver = 1;
            i++;
        } else if (!strcmp(a, "--precision")) {
            if (!parse_precision(a, argv[++i], &o->s.precision))
                return WD_EXIT_USAGE;
        } else if (!strcmp(a, "--sloppy")) {
            if (!parse_precision(a, argv[++i], &o->s.sloppy_precision))
                return WD_EXIT_USAGE;
            o->have_sloppy = 1;
        } else if (!strcmp(a, "--recon")) {
            if (!parse_recon(a, argv[++i], &o->s.recon))
                return WD_EXIT_USAGE;
        } else if (!strcmp(a, "--sloppy-recon")) {
            if (!parse_recon(a, argv[++i], &o->s.sloppy_recon))
                return WD_EXIT_USAGE;
        } else if (!strcmp(a, "--gauge-fix")) {
            o->s.gauge_fix = 1;
        } else if (!strcmp(a, "--sloppy-gauge-fix")) {
            o->s.sloppy_gauge_fix = 1;
        } else if (!strcmp(a, "--mixed")) {
            if (!strcmp(next, "reliable"))
                o->s.mixed = WD_MIXED_RELIABLE;
            else if (!strcmp(next, "defect"))
                o->s.mixed = WD_MIXED_DEFECT;
            else if (!strcmp(next, "none"))
                o->s.mixed = WD_MIXED_NONE;
            else
                return fail_usage("--mixed takes reliable, defect or none, got '%s'", next);
            i++;
        } else if (!strcmp(a, "--delta")) {
            if (!parse_double(a, argv[++i], &o->s.delta))
                return WD_EXIT_USAGE;
        } else if (!strcmp(a, "--eps-in") || !strcmp(a, "--tol-inner")) {
            if (!parse_double(a, argv[++i], &o->s.tol_inner))
                return WD_EXIT_USAGE;
        } else if (!strcmp(a, "--tol")) {
            if (!parse_double(a, argv[++i], &o->s.tol))
                return WD_EXIT_USAGE;
        } else if (!strcmp(a, "--max-iter")) {
            if (!parse_long(a, argv[++i], 1, 1L << 30, &v))
                return WD_EXIT_USAGE;
            o->s.max_iter = (int)v;
        } else if (!strcmp(a, "--backend")) {
            if (!strcmp(next, "auto"))
                o->backend = BE_AUTO;
            else if (!strcmp(next, "cpu"))
                o->backend = BE_CPU;
            else if (!strcmp(next, "cuda"))
                o->backend = BE_CUDA;
            else
                return fail_usage("--backend takes auto, cpu or cuda, got '%s'", next);
            i++;
        } else if (!strcmp(a, "--out")) {
            o->out = argv[++i];
        } else if (!strcmp(a, "--save-source")) {
            o->save_source = argv[++i];
        } else if (!strcmp(a, "--json")) {
            o->json = argv[++i];
        } else if (!strcmp(a, "--overwrite")) {
            o->overwrite = 1;
        } else if (!strcmp(a, "--verbose")) {
            if (!parse_long(a, argv[++i], 0, 3, &v))
                return WD_EXIT_USAGE;
            o->s.verbosity = (int)v;
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
        } else if (!strcmp(a, "--grid")) {
            if (!wd_cli_parse_grid("wdirac solve", argc, argv, &i, o->grid))
                return WD_EXIT_USAGE;
            o->have_grid = 1;
        } else {
            return fail_usage("unknown option '%s'", a);
        }
    }

    if (!!o->gauge + o->unit != 1)
        return fail_usage("give the gauge field: --gauge FILE or --unit-gauge --dims X Y Z T");
    if (o->unit && !o->have_dims)
        return fail_usage("--unit-gauge needs --dims X Y Z T");
    if (o->have_dims && wd_check_dims(o->dims) != WD_OK)
        return fail_usage("--dims: %s", wd_last_error());
    if (o->nsources != 1)
        return fail_usage("give exactly one source: --point, --random or --source");
    if (!wd_cli_mg_finish("wdirac solve", &o->mg, o->s.verbosity))
        return WD_EXIT_USAGE;
    o->mg.m.save_overwrite = o->overwrite;
    if (o->mg.on && o->have_solver)
        return fail_usage("give --solver or --mg, not both");
    if (o->have_mass && o->have_kappa)
        return fail_usage("give --mass or --kappa, not both");
    if (o->have_kappa)
        o->s.mass = 1.0 / (2.0 * o->kappa) - 4.0;
    if (!o->have_sloppy && o->s.precision < o->s.sloppy_precision)
        o->s.sloppy_precision = o->s.precision;
    if (o->out && o->save_source && !strcmp(o->out, o->save_source))
        return fail_usage("--out and --save-source name the same file '%s'", o->out);
    if (o->json && ((o->out && !strcmp(o->json, o->out)) ||
                    (o->save_source && !strcmp(o->json, o->save_source))))
        return fail_usage("--json names the same file as another output, '%s'", o->json);
    return -1;
}

/* ---- the JSON record: written like the .npy files, through a temporary
 * file, so that an existing record is replaced whole or not at all ------ */

static int json_check_writable(const char *path, int overwrite)
{
    struct stat sb;
    if (lstat(path, &sb) == 0 && (!overwrite || S_ISDIR(sb.st_mode))) {
        fprintf(stderr, "wdirac solve: --json '%s' %s\n", path,
                S_ISDIR(sb.st_mode) ? "is a directory" : "exists; give --overwrite to replace it");
        return 0;
    }
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    const int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
    if (fd < 0) {
        fprintf(stderr, "wdirac solve: --json '%s': cannot create a file there: %s\n", path,
                strerror(errno));
        return 0;
    }
    close(fd);
    unlink(tmp);
    return 1;
}

static int json_write(const char *path, json_t *root, int overwrite)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    errno = 0;
    int ok = json_dump_file(root, tmp, JSON_INDENT(1)) == 0;
    if (ok)
        ok = overwrite ? rename(tmp, path) == 0 : link(tmp, path) == 0;
    if (!ok)
        fprintf(stderr, "wdirac solve: cannot write --json '%s': %s\n", path,
                errno ? strerror(errno) : "jansson failed");
    unlink(tmp);
    return ok;
}

/* ---- progress ------------------------------------------------------------ */

typedef struct progress_state {
    double t0, last;
    double tol;
    int drawn;
} progress_state;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One line on the terminal, redrawn at most ten times a second: the
 * solver calls this every iteration, and a terminal write per iteration
 * would cost more than a small lattice's iteration. */
static void draw_progress(void *arg, int iterations, double residual)
{
    progress_state *p = arg;
    const double t = now_seconds();
    if (p->drawn && t - p->last < 0.1)
        return;
    p->last = t;
    p->drawn = 1;
    fprintf(stderr, "\r\033[Ksolving: %d iterations, residual %.3e (target %.1e), %.1f s",
            iterations, residual, p->tol, t - p->t0);
    fflush(stderr);
}

/* ---- the command ---------------------------------------------------------- */

/* This rank's block of the source; NULL with *st on failure (agreed). */
static double *make_source(const options *o, const wd_lattice *lat, wd_status *st)
{
    const size_t vol = wd_volume(lat->local);
    double *b = calloc(vol * 24, sizeof *b);
    *st = b ? WD_OK : WD_ERR_NOMEM;
    if ((*st = wd_agree(*st)) != WD_OK) {
        fprintf(stderr, "wdirac solve: out of memory for the source (%zu sites a rank)\n", vol);
        free(b);
        return NULL;
    }
    if (o->source == SRC_FILE)
        *st = wd_npy_read_spinor_block(o->source_file, lat, b);
    else if (o->source == SRC_RANDOM)
        *st = wd_spinor_fill_random_block(b, lat, o->seed);
    else {
        /* the rank holding the point sets it */
        int x[4], in = 1;
        for (int mu = 0; mu < 4; mu++) {
            x[mu] = o->point[mu] - lat->origin[mu];
            in &= x[mu] >= 0 && x[mu] < lat->local[mu];
        }
        const int *L = lat->local;
        if (in)
            b[24 * ((size_t)x[0] + (size_t)L[0] * ((size_t)x[1] + (size_t)L[1] *
              ((size_t)x[2] + (size_t)L[2] * (size_t)x[3]))) + 6 * (size_t)o->point[4] +
              2 * (size_t)o->point[5]] = 1.0;
    }
    if (*st != WD_OK) {
        fprintf(stderr, "wdirac solve: %s\n", wd_last_error());
        free(b);
        return NULL;
    }
    return b;
}

static void describe_source(const options *o, char *buf, size_t len)
{
    const int *p = o->point;
    if (o->source == SRC_POINT)
        snprintf(buf, len, "point (x, y, z, t) = (%d, %d, %d, %d) spin %d colour %d", p[0], p[1],
                 p[2], p[3], p[4], p[5]);
    else if (o->source == SRC_RANDOM)
        snprintf(buf, len, "random, seed %llu", (unsigned long long)o->seed);
    else
        snprintf(buf, len, "file %s", o->source_file);
}

/* Where the solve runs.  auto takes the GPU when the CUDA backend opens on
 * every rank, and otherwise the CPU, saying why when a GPU is there but
 * unusable.  Returns -1 when the choice is made, else the exit code (the
 * same on every rank). */
static int choose_backend(const options *o, wd_backend_kind *kind)
{
    *kind = WD_BACKEND_CPU;
    if (o->backend == BE_CPU)
        return -1;
    const wd_status st = wd_agree(wd_backend_probe(WD_BACKEND_CUDA));
    if (st == WD_OK) {
        *kind = WD_BACKEND_CUDA;
        return -1;
    }
    if (o->backend == BE_CUDA) {
        fprintf(stderr, "wdirac solve: --backend cuda: %s\n", wd_last_error());
        return wd_cli_exit_code(st);
    }
    if (st != WD_ERR_NO_DEVICE && !o->quiet)
        fprintf(stderr, "wdirac solve: the GPU cannot be used (%s); solving on the CPU\n",
                wd_last_error());
    return -1;
}

static const char *solver_name(wd_solver_type t)
{
    return t == WD_SOLVER_CG ? "cg" : t == WD_SOLVER_MG ? "mg" : "bicgstab";
}

/* mgst: the multigrid's setup (--mg), else NULL */
static json_t *json_record(const options *o, const char *device, int threads, const int dims[4],
                           double plaquette, const char *source, wd_status st,
                           const char *message, const wd_solver_stats *stats,
                           const wd_mg_setup_stats *mgst)
{
    char date[64];
    const time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    const wd_solver_settings *s = &o->s;
    json_t *root = json_pack(
        "{s:s, s:s, s:s, s:s, s:i, s:s, s:[iiii], s:s, s:f, s:s, s:f, s:f, s:s, s:f, s:s, s:s,"
        " s:{s:i, s:i, s:b}, s:{s:i, s:i, s:b}, s:s, s:f, s:f, s:f, s:i}",
        "command", "solve", "commit", WD_GIT_COMMIT, "date", date,
        "backend", s->backend == WD_BACKEND_CUDA ? "cuda" : "cpu", "threads", threads,
        "device", device, "dims", dims[0], dims[1], dims[2], dims[3],
        "gauge", o->unit ? "unit" : o->gauge, "plaquette", plaquette, "source", source,
        "mass", s->mass, "kappa", 1.0 / (2.0 * (4.0 + s->mass)),
        "tbc", s->tbc == WD_TIME_PERIODIC ? "periodic" : "antiperiodic",
        "csw", s->csw, "clover_form", s->clover_form == WD_CLOVER_SYMMETRIC ? "symmetric" : "asymmetric",
        "solver", solver_name(s->solver),
        "outer", "precision", (int)s->precision, "recon", (int)s->recon, "gauge_fix", s->gauge_fix,
        "sloppy", "precision", (int)s->sloppy_precision, "recon", (int)s->sloppy_recon,
        "gauge_fix", s->sloppy_gauge_fix,
        "mixed", mixed_name(s->mixed), "delta", s->delta, "tol_inner", s->tol_inner,
        "tol", s->tol, "max_iter", s->max_iter);
    json_t *res = json_pack(
        "{s:s, s:b, s:s, s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:I}",
        "status", wd_status_string(st), "converged", st == WD_OK, "message", message,
        "iterations", stats->iterations, "sloppy_iterations", stats->sloppy_iterations,
        "updates", stats->updates, "true_residual", stats->true_residual,
        "solver_residual", stats->solver_residual, "seconds", stats->seconds,
        "solve_seconds", stats->solve_seconds, "flops", stats->flops, "gflops", stats->gflops,
        "bytes_allocated", (json_int_t)stats->bytes_allocated,
        "bytes_gauge", (json_int_t)stats->bytes_gauge);
    if (!root || !res) {
        json_decref(root);
        json_decref(res);
        return NULL;
    }
    if (mgst) {
        /* the setup before the solve: what one source waits for in all */
        json_object_set_new(root, "mg", wd_cli_mg_json(&o->mg.m, mgst));
        json_object_set_new(res, "outer_iterations", json_integer(stats->iterations));
        json_object_set_new(res, "mg_levels", json_integer(stats->mg_levels));
        json_object_set_new(res, "mg_iterations", wd_cli_mg_levels_json(stats));
        json_object_set_new(res, "mg_setup_seconds", json_real(mgst->seconds));
        json_object_set_new(res, "seconds_with_setup", json_real(mgst->seconds + stats->seconds));
    }
    json_object_set_new(root, "result", res);
    if (o->out)
        json_object_set_new(root, "out", json_string(o->out));
    if (o->save_source)
        json_object_set_new(root, "saved_source", json_string(o->save_source));
    json_object_set_new(root, "grid", json_pack("[iiii]", s->grid[0], s->grid[1], s->grid[2],
                                                s->grid[3]));
    json_object_set_new(root, "ranks", json_integer(wd_ranks()));
    return root;
}

/* Rank 0 checks the output paths (it writes them); every rank learns the
 * verdict.  Returns -1, or the exit code. */
static int check_outputs(const options *o)
{
    wd_status st = WD_OK;
    if (wd_rank() == 0) {
        const char *outs[2] = {o->out, o->save_source};
        for (int k = 0; k < 2 && st == WD_OK; k++)
            if (outs[k] && (st = wd_npy_check_writable(outs[k], o->overwrite)) != WD_OK)
                fprintf(stderr, "wdirac solve: %s%s\n", wd_last_error(),
                        st == WD_ERR_IO && o->overwrite == 0 && access(outs[k], F_OK) == 0
                            ? "; give --overwrite to replace it" : "");
        if (st == WD_OK && o->json && !json_check_writable(o->json, o->overwrite))
            st = WD_ERR_INVALID;
    }
    st = wd_agree(st);
    return st == WD_OK ? -1 : wd_cli_exit_code(st);
}

/* The lattice: the extents of --dims or of the file, on --grid (or the
 * automatic grid).  Returns -1, or the exit code. */
static int make_lattice(const options *o, wd_lattice *lat)
{
    int dims[4];
    if (o->have_dims) {
        memcpy(dims, o->dims, sizeof dims);
    } else {
        wd_gauge_info info;
        const wd_status st = wd_agree(wd_gauge_read_header(o->gauge, &info));
        if (st != WD_OK) {
            fprintf(stderr, "wdirac solve: %s\n", wd_last_error());
            return wd_cli_exit_code(st);
        }
        memcpy(dims, info.dims, sizeof dims);
    }
    const wd_status st = wd_lattice_make(lat, dims, o->have_grid ? o->grid : NULL);
    if (st != WD_OK) {
        fprintf(stderr, "wdirac solve: %s%s\n", wd_last_error(),
                o->have_grid ? "" : " (give --grid Px Py Pz Pt)");
        return wd_cli_exit_code(st);
    }
    return -1;
}

int wd_cli_solve_main(int argc, char **argv)
{
    options o;
    int rc = parse_options(argc, argv, &o);
    if (rc >= 0)
        return rc;

    /* outputs first: a refusal now costs nothing, after the solve it costs the solve */
    if ((rc = check_outputs(&o)) >= 0)
        return rc;
    if ((rc = choose_backend(&o, &o.s.backend)) >= 0)
        return rc;
    wd_lattice lat;
    if ((rc = make_lattice(&o, &lat)) >= 0)
        return rc;
    memcpy(o.s.grid, lat.procs, sizeof o.s.grid);
    const int *dims = lat.dims;
    const size_t vol = wd_volume(lat.local);

    /* the gauge field, this rank's block */
    double *u = malloc(vol * 72 * sizeof *u);
    wd_status st = wd_agree(u ? WD_OK : WD_ERR_NOMEM);
    if (st != WD_OK) {
        fprintf(stderr, "wdirac solve: out of memory for the gauge field (%zu sites a rank)\n",
                vol);
        free(u);
        return WD_EXIT_INTERNAL;
    }
    char gauge_desc[300];
    if (o.unit) {
        st = wd_gauge_init_block(u, &lat, WD_START_COLD, 0);
        snprintf(gauge_desc, sizeof gauge_desc, "unit (free field)");
    } else {
        wd_gauge_info info;
        st = wd_gauge_read_block(o.gauge, &lat, 0, u, &info);
        snprintf(gauge_desc, sizeof gauge_desc, "%s (%s, %d-bit)", o.gauge,
                 info.format == WD_GAUGE_NERSC ? "NERSC" : "ILDG", info.precision);
    }
    if (st != WD_OK) {
        fprintf(stderr, "wdirac solve: %s\n", wd_last_error());
        free(u);
        return wd_cli_exit_code(st);
    }
    wd_gauge_obs obs;
    const double plaquette =
        wd_gauge_observables_block(u, &lat, &obs) == WD_OK ? obs.plaquette : NAN;

    /* the source */
    if (o.source == SRC_POINT) {
        const int *p = o.point;
        if (p[0] >= dims[0] || p[1] >= dims[1] || p[2] >= dims[2] || p[3] >= dims[3] ||
            p[4] > 3 || p[5] > 2) {
            fprintf(stderr, "wdirac solve: --point %d,%d,%d,%d,%d,%d is outside the %dx%dx%dx%d "
                    "lattice, spins 0-3, colours 0-2\n", p[0], p[1], p[2], p[3], p[4], p[5],
                    dims[0], dims[1], dims[2], dims[3]);
            free(u);
            return WD_EXIT_USAGE;
        }
    }
    double *b = make_source(&o, &lat, &st);
    double *x = b ? malloc(vol * 24 * sizeof *x) : NULL;
    if (b && (st = wd_agree(x ? WD_OK : WD_ERR_NOMEM)) != WD_OK)
        fprintf(stderr, "wdirac solve: out of memory for the solution (%zu sites a rank)\n", vol);
    if (!b || st != WD_OK) {
        free(u), free(b), free(x);
        return wd_cli_exit_code(st);
    }
    if (o.save_source &&
        (st = wd_npy_write_spinor_block(o.save_source, b, &lat, o.overwrite)) != WD_OK) {
        fprintf(stderr, "wdirac solve: %s\n", wd_last_error());
        free(u), free(b), free(x);
        return wd_cli_exit_code(st);
    }

    char device[256], source_desc[300];
    wd_bench_device(device, sizeof device, o.s.backend == WD_BACKEND_CUDA);
    describe_source(&o, source_desc, sizeof source_desc);
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    const wd_solver_settings *s = &o.s;
    const double kappa = 1.0 / (2.0 * (4.0 + s->mass));
    if (!o.quiet) {
        printf("wdirac solve  backend %s  device \"%s\"  threads %d  commit %s\n",
               s->backend == WD_BACKEND_CUDA ? "cuda" : "cpu", device, threads, WD_GIT_COMMIT);
        printf("lattice    %dx%dx%dx%d (X Y Z T)", dims[0], dims[1], dims[2], dims[3]);
        if (lat.size > 1)
            printf(" on grid %d %d %d %d: %d ranks, blocks %dx%dx%dx%d", lat.procs[0],
                   lat.procs[1], lat.procs[2], lat.procs[3], lat.size, lat.local[0],
                   lat.local[1], lat.local[2], lat.local[3]);
        printf("\ngauge      %s, plaquette %.10f\n", gauge_desc, plaquette);
        printf("source     %s\n", source_desc);
        printf("operator   mass %.10g  kappa %.10g  time boundary %s", s->mass, kappa,
               s->tbc == WD_TIME_PERIODIC ? "periodic" : "antiperiodic");
        if (s->csw != 0)
            printf("  clover c_sw %.10g (%s Schur form)", s->csw,
                   s->clover_form == WD_CLOVER_SYMMETRIC ? "symmetric" : "asymmetric");
        printf("\n");
        if (o.mg.on) {
            printf("solver     multigrid: flexible GCR on M x = b (outer %c recon %d), tol %.1e, "
                   "max-iter %d\n", precision_letter(s->precision), (int)s->recon, s->tol,
                   s->max_iter);
            wd_cli_mg_print_settings(stdout, "multigrid  ", &o.mg.m);
        } else {
            printf("solver     %s, outer %c recon %d%s, sloppy %c recon %d%s, %s", s->solver ==
                   WD_SOLVER_CG ? "CG (normal equations)" : "BiCGstab",
                   precision_letter(s->precision), (int)s->recon, s->gauge_fix ? " gauge-fixed" : "",
                   precision_letter(s->sloppy_precision), (int)s->sloppy_recon,
                   s->sloppy_gauge_fix ? " gauge-fixed" : "", mixed_name(s->mixed));
            if (s->mixed == WD_MIXED_RELIABLE)
                printf(" (delta %g)", s->delta);
            else if (s->mixed == WD_MIXED_DEFECT)
                printf(" (eps_in %g)", s->tol_inner);
            printf(", tol %.1e, max-iter %d\n", s->tol, s->max_iter);
        }
        fflush(stdout);
    }

    /* --mg: a solver whose multigrid is set up once, before the solve
     * (collective; on a grid of several ranks this version refuses on
     * every rank alike, and wd_agree keeps them together whatever fails) */
    wd_solver *sv = NULL;
    wd_mg_setup_stats mgst;
    memset(&mgst, 0, sizeof mgst);
    double create_seconds = 0;
    if (o.mg.on) {
        const double t0 = now_seconds();
        st = wd_solver_create(&sv, u, dims, s);
        create_seconds = now_seconds() - t0;
        if (st == WD_OK)
            st = wd_solver_mg_setup(sv, &o.mg.m, s, &mgst);
        if ((st = wd_agree(st)) != WD_OK) {
            const char *opt = wd_cli_mg_option_of(wd_last_error());
            fprintf(stderr, "wdirac solve: --mg: %s: %s%s%s%s\n", wd_status_string(st),
                    wd_last_error(), opt ? " (" : "", opt ? opt : "", opt ? ")" : "");
            wd_solver_destroy(sv);
            free(u), free(b), free(x);
            return wd_cli_exit_code(st);
        }
        o.s.solver = WD_SOLVER_MG;
        if (!o.quiet) {
            wd_cli_mg_print_setup(stdout, "mg setup   ", &mgst, &o.mg.m);
            fflush(stdout);
        }
    }

    progress_state prog = {now_seconds(), 0, s->tol, 0};
    const int show_progress = !o.quiet && wd_rank() == 0 && isatty(STDERR_FILENO);
    if (show_progress) {
        o.s.progress = draw_progress;
        o.s.progress_arg = &prog;
    }
    wd_solver_stats stats;
    memset(&stats, 0, sizeof stats);
    wd_status solve_st;
    if (sv) {
        solve_st = wd_solver_solve(sv, x, b, s, &stats);
        stats.setup_seconds = create_seconds;   /* as wd_solve counts it */
    } else {
        solve_st = wd_solve(x, u, b, dims, s, &stats);
    }
    if (show_progress && prog.drawn)
        fputs("\r\033[K", stderr);
    char message[512];
    snprintf(message, sizeof message, "%s", solve_st == WD_OK ? "" : wd_last_error());
    const int solved = solve_st == WD_OK || wd_cli_exit_code(solve_st) == WD_EXIT_FAILED;

    if (!o.quiet && solved) {
        printf("status     %s\n", solve_st == WD_OK ? "converged" : wd_status_string(solve_st));
        if (sv) {
            char levels[160];
            wd_cli_mg_format_levels(levels, sizeof levels, &stats);
            printf("iterations %d outer (flexible GCR); per level: %s\n", stats.iterations,
                   levels);
        } else {
            printf("iterations %d = %d + %d (k Krylov iterations + l true-residual updates)\n",
                   stats.iterations, stats.sloppy_iterations, stats.updates);
        }
        printf("residual   ||b - M x|| / ||b|| = %.3e (full lattice, double; target %.1e)\n",
               stats.true_residual, s->tol);
        if (sv)
            printf("time       %.3f s solve (GCR %.3f s), after the multigrid setup's %.3f s: "
                   "%.3f s to solution\n", stats.seconds, stats.solve_seconds, mgst.seconds,
                   stats.seconds + mgst.seconds);
        else
            printf("time       %.3f s (Krylov iteration %.3f s), %.2f Gflops%s\n", stats.seconds,
                   stats.solve_seconds, stats.gflops, lat.size > 1 ? " (rank 0's share)" : "");
        printf("memory     %.1f MiB on the backend (gauge fields %.1f MiB), %.1f MiB host fields"
               "%s\n", stats.bytes_allocated / 1048576.0, stats.bytes_gauge / 1048576.0,
               (double)vol * (72 + 48) * sizeof(double) / 1048576.0,
               lat.size > 1 ? ", each rank" : "");
    }
    rc = wd_cli_exit_code(solve_st);
    if (solve_st != WD_OK)
        fprintf(stderr, "wdirac solve: %s: %s\n", wd_status_string(solve_st), message);

    /* the best iterate of a failed solve is still worth having */
    if (solved && o.out) {
        st = wd_npy_write_spinor_block(o.out, x, &lat, o.overwrite);
        if (st != WD_OK) {
            fprintf(stderr, "wdirac solve: %s\n", wd_last_error());
            rc = wd_cli_exit_code(st);
        } else if (solve_st != WD_OK) {
            fprintf(stderr, "wdirac solve: the best iterate (true residual %.3e) was written to "
                    "%s\n", stats.true_residual, o.out);
        } else if (!o.quiet) {
            printf("solution   %s\n", o.out);
        }
    } else if (solved && solve_st != WD_OK) {
        fprintf(stderr, "wdirac solve: the best iterate (true residual %.3e) was not saved "
                "(no --out)\n", stats.true_residual);
    }
    if (o.json) {
        int jrc = 0;
        if (wd_rank() == 0) {
            json_t *root = json_record(&o, device, threads, dims, plaquette, source_desc,
                                       solve_st, message, &stats, sv ? &mgst : NULL);
            if (!root || !json_write(o.json, root, o.overwrite))
                jrc = root ? WD_EXIT_USAGE : WD_EXIT_INTERNAL;
            json_decref(root);
        }
        /* every rank exits with rank 0's verdict on the record */
        const wd_status jst = wd_agree(jrc == 0 ? WD_OK : jrc == WD_EXIT_USAGE ? WD_ERR_IO
                                                                             : WD_ERR_NOMEM);
        if (jst != WD_OK && !rc)
            rc = wd_cli_exit_code(jst);
    }
    wd_solver_destroy(sv);
    free(u), free(b), free(x);
    return rc;
}
