/*
 * paper_bench.c: `wdirac bench paper`, the paper's results R1-R9
 * (paper-summary.md) regenerated on the current device into one folder.
 *
 * The externally accessible function is
 *   wd_bench_paper_main   parse the options, run every measurement, render
 *                         the report; exit codes of cli_util.h
 *
 * It is a driver: each result comes from the benchmark subcommand that
 * measures it, called in-process with the arguments written out in the
 * step table below, each writing one JSON file into the folder under the
 * name bench/paper_report.py reads:
 *   R1-R3  bench dslash --paper-sweep            dslash-sweep.json
 *   R4     bench accuracy                        accuracy.json
 *   R5     bench dslash at 24^3x48 and x64       dslash-fixed.json
 *          pure-precision CG and BiCGstab        solver-table2.json (three
 *          runs merged: each precision at a tolerance it can reach)
 *   R6     double CG and BiCGstab vs kappa       solver-double.json
 *   R7     defect-correction BiCGstab            solver-defect-E.json per eps_in
 *   R8-R9  reliable-update BiCGstab              solver-reliable-D.json per delta
 * on a quenched beta = 6.0 configuration of our own heatbath, generated once
 * and cached (--cache), then `python3 bench/paper_report.py DIR` writes
 * report.md, report.json and the PNG figures.  The sloppy kernels of R7-R9
 * are the paper's gauge-fixed ones (Table 2: "12 Half GF", "8 Single GF",
 * "12 Single GF").  A step that fails is reported and the others still run;
 * the report marks what is missing.
 */
#include <errno.h>
#include <jansson.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_gauge.h"
#include "cli_util.h"
#include "cuda_rt.h"
#include "cli_bench.h"
#include "wdirac_gauge.h"

extern char **environ;

#define MAX_ARGS 48

typedef struct plan {
    int gpu, full;
    const char *out, *cache, *gauge, *script;
    char dims[4][8];        /* solver and configuration lattice */
    char acc_dims[4][8];    /* accuracy lattice */
    const char *kappas;
    const char *sweeps_therm, *sweeps_meas;
    char config[1024];      /* the configuration file used */
} plan;

typedef struct tally {
    int steps, failed;
} tally;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: wdirac bench paper [options]\n"
            "  --out DIR           results folder (default paper-YYYYMMDD-HHMMSS)\n"
            "  --backend auto|cpu|cuda  (default auto: cuda when a GPU is usable)\n"
            "  --full              nine kappas from heavy to near-critical instead of six\n"
            "                      (about 10 minutes more on an H100)\n"
            "  --gauge FILE        use this NERSC/ILDG configuration (its lattice) instead of\n"
            "                      generating one\n"
            "  --cache DIR         where generated configurations are kept and reused\n"
            "                      (default $XDG_CACHE_HOME/wdirac or ~/.cache/wdirac)\n"
            "  --report-script F   bench/paper_report.py to render with (default: found beside\n"
            "                      the sources or in the current folder)\n"
            "The default size fits in about 10 minutes on an H100: 24^3x64 configuration (beta\n"
            "6.0, 200 + 100 compound sweeps), Dslash sweep 24^3 x T, accuracy on 24^3x32, six\n"
            "kappas 0.1500-0.1565 to tolerance 1e-12.  Without a GPU it runs on the CPU at\n"
            "8^3x16 (a demonstration of the pipeline, not of the paper's numbers).\n");
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static int make_dirs(const char *path)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; ++p)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* Run one subcommand with a NULL-terminated argument list. */
static int step(tally *t, const char *title, int (*fn)(int, char **), const char *const *args)
{
    char *argv[MAX_ARGS];
    int argc = 0;
    while (args[argc] && argc < MAX_ARGS - 1) {
        argv[argc] = (char *)args[argc];
        argc++;
    }
    argv[argc] = NULL;
    t->steps++;
    printf("\n==== [%d] %s ====\n", t->steps, title);
    fflush(stdout);
    const double t0 = wd_bench_now();
    const int rc = fn(argc, argv);
    fflush(stdout);
    printf("==== [%d] %s: %s (%.0f s)\n", t->steps, title, rc == 0 ? "done" : "FAILED",
           wd_bench_now() - t0);
    if (rc != 0)
        t->failed++;
    return rc;
}

static const char *path_in(char *buf, size_t len, const char *dir, const char *name)
{
    snprintf(buf, len, "%s/%s", dir, name);
    return buf;
}

/* The configuration: given, cached, or generated now into the cache. */
static int configuration(plan *p, tally *t)
{
    if (p->gauge) {
        wd_gauge_info info;
        double *u = NULL;
        if (wd_gauge_read(p->gauge, NULL, 0, &u, &info) != WD_OK) {
            fprintf(stderr, "wdirac bench paper: %s\n", wd_last_error());
            return -1;
        }
        free(u);
        for (int mu = 0; mu < 4; ++mu)
            snprintf(p->dims[mu], sizeof p->dims[mu], "%d", info.dims[mu]);
        snprintf(p->config, sizeof p->config, "%s", p->gauge);
        return 0;
    }
    if (make_dirs(p->cache) != 0) {
        fprintf(stderr, "wdirac bench paper: cannot create the cache folder %s: %s\n", p->cache,
                strerror(errno));
        return -1;
    }
    snprintf(p->config, sizeof p->config, "%s/quenched-b6.0-%sx%sx%sx%s-t%s-s%s-seed5.nersc",
             p->cache, p->dims[0], p->dims[1], p->dims[2], p->dims[3], p->sweeps_therm,
             p->sweeps_meas);
    if (exists(p->config)) {
        const int dims[4] = {atoi(p->dims[0]), atoi(p->dims[1]), atoi(p->dims[2]),
                             atoi(p->dims[3])};
        double *u = NULL;
        if (wd_gauge_read(p->config, dims, 0, &u, NULL) == WD_OK) {
            free(u);
            printf("configuration: %s (cached; every check of the reader passed)\n", p->config);
            return 0;
        }
        fprintf(stderr, "wdirac bench paper: cached %s failed a check (%s); generating it "
                "again\n", p->config, wd_last_error());
    }
    const char *args[] = {"generate", "--dims", p->dims[0], p->dims[1], p->dims[2], p->dims[3],
                          "--beta", "6.0", "--therm", p->sweeps_therm, "--sweeps", p->sweeps_meas,
                          "--seed", "5", "--start", "cold", "--format", "nersc", "--out",
                          p->config, "--overwrite", "--backend", p->gpu ? "cuda" : "cpu", NULL};
    return step(t, "quenched configuration, beta 6.0 (heatbath + 4 overrelaxation)",
                wd_cli_gauge_main, args) == 0 ? 0 : -1;
}

/* Append the results of every JSON file in `parts` to the first one, write
 * it as `out` and remove the parts. */
static int merge_json(const char *out, const char *const *parts, int n)
{
    json_t *root = NULL;
    int ok = 1;
    for (int i = 0; i < n; ++i) {
        json_error_t err;
        json_t *j = json_load_file(parts[i], 0, &err);
        if (!j) {
            fprintf(stderr, "wdirac bench paper: %s: %s\n", parts[i], err.text);
            ok = 0;
            continue;
        }
        if (!root) {
            root = j;
        } else {
            json_array_extend(json_object_get(root, "results"), json_object_get(j, "results"));
            json_decref(j);
        }
        remove(parts[i]);
    }
    if (!root)
        return 0;
    json_object_set_new(root, "tol", json_string("per precision: d 1e-10, s 1e-6, h 1e-3"));
    if (json_dump_file(root, out, JSON_INDENT(1)) != 0) {
        fprintf(stderr, "wdirac bench paper: cannot write %s\n", out);
        ok = 0;
    }
    json_decref(root);
    return ok;
}

static void solver_args(const plan *p, const char **a, int *n)
{
    const char *common[] = {"--backend", p->gpu ? "cuda" : "cpu", "--gauge", p->config, "--dims",
                            p->dims[0], p->dims[1], p->dims[2], p->dims[3], "--max-iter", "30000"};
    for (size_t i = 0; i < sizeof common / sizeof common[0]; ++i)
        a[(*n)++] = common[i];
}

static void measure(const plan *p, tally *t)
{
    char f1[1100], f2[1100], f3[1100];
    const char *be = p->gpu ? "cuda" : "cpu";

    /* R1-R3: Dslash vs T */
    if (p->gpu) {
        const char *a[] = {"--backend", be, "--paper-sweep", "--kernels", "*_dag0_xpay0", "--pad",
                           "0", "--pad", "32", "--reps", "20", "--json",
                           path_in(f1, sizeof f1, p->out, "dslash-sweep.json"), NULL};
        step(t, "R1-R3: Dslash Gflops vs T at 24^3 x T, padded and unpadded", wd_bench_dslash_main,
             a);
    } else {
        const char *a[] = {"--backend", be, "--dims", "8", "8", "8", "8", "--dims", "8", "8", "8",
                           "16", "--kernels", "*_dag0_xpay0", "--pad", "0", "--pad", "32",
                           "--reps", "3", "--json",
                           path_in(f1, sizeof f1, p->out, "dslash-sweep.json"), NULL};
        step(t, "R1-R3: Dslash Gflops vs T (CPU: 8^3 x T)", wd_bench_dslash_main, a);
    }
    /* R4: accuracy */
    {
        const char *a[] = {"--backend", be, "--dims", p->acc_dims[0], p->acc_dims[1],
                           p->acc_dims[2], p->acc_dims[3], "--json",
                           path_in(f1, sizeof f1, p->out, "accuracy.json"), NULL};
        step(t, "R4: Delta(epsilon) of every precision x reconstruction", wd_bench_accuracy_main,
             a);
    }
    /* R5: kernels at the paper's 24^3x48 and at the solver lattice, then
     * each precision's own solvers at a tolerance it can reach */
    {
        const char *a[] = {"--backend", be, "--dims", "24", "24", "24", "48", "--dims", p->dims[0],
                           p->dims[1], p->dims[2], p->dims[3], "--kernels", "*_dag0_xpay0",
                           "--reps", p->gpu ? "100" : "3", "--json",
                           path_in(f1, sizeof f1, p->out, "dslash-fixed.json"), NULL};
        if (!p->gpu) {
            a[3] = "8", a[4] = "8", a[5] = "8", a[6] = "8";
        }
        step(t, "R5: Dslash kernels for Table 2", wd_bench_dslash_main, a);
    }
    {
        static const char *configs[3] = {"d12g", "s12g,s8g", "h12g"};
        static const char *tols[3] = {"1e-10", "1e-6", "1e-3"};
        char parts[3][1100];
        const char *part_names[3];
        for (int i = 0; i < 3; ++i) {
            char name[64];
            snprintf(name, sizeof name, ".table2-%d.json", i);
            path_in(parts[i], sizeof parts[i], p->out, name);
            part_names[i] = parts[i];
            const char *a[MAX_ARGS];
            int n = 0;
            solver_args(p, a, &n);
            const char *rest[] = {"--kappas", "0.1550", "--solvers", "cg,bicgstab", "--configs",
                                  configs[i], "--tol", tols[i], "--warmup", "--reps", "3",
                                  "--json", parts[i], NULL};
            for (int k = 0; rest[k]; ++k)
                a[n++] = rest[k];
            a[n] = NULL;
            step(t, "R5: pure-precision CG and BiCGstab for Table 2", wd_bench_solver_main, a);
        }
        if (!merge_json(path_in(f2, sizeof f2, p->out, "solver-table2.json"), part_names, 3))
            t->failed++;
    }
    /* R6: double CG and BiCGstab vs kappa */
    {
        const char *a[MAX_ARGS];
        int n = 0;
        solver_args(p, a, &n);
        const char *rest[] = {"--kappas", p->kappas, "--solvers", "cg,bicgstab", "--configs", "d",
                              "--tol", "1e-12", "--warmup", "--json",
                              path_in(f1, sizeof f1, p->out, "solver-double.json"), NULL};
        for (int k = 0; rest[k]; ++k)
            a[n++] = rest[k];
        a[n] = NULL;
        step(t, "R6: double CG and BiCGstab iterations vs kappa (Table 3)", wd_bench_solver_main,
             a);
    }
    /* R7: defect correction, the paper's eps_in per sloppy kernel */
    static const struct {
        const char *eps, *configs;
    } defect[] = {{"1e-1", "d-h12g"}, {"1e-2", "d-h12g"}, {"1e-3", "d-s8g"},
                  {"1e-4", "d-s8g"},  {"1e-5", "d-s8g,d-s12g"}, {"1e-6", "d-s12g"}};
    for (size_t i = 0; i < sizeof defect / sizeof defect[0]; ++i) {
        const char *a[MAX_ARGS];
        int n = 0;
        solver_args(p, a, &n);
        char name[64];
        snprintf(name, sizeof name, "solver-defect-%s.json", defect[i].eps);
        const char *rest[] = {"--kappas", p->kappas, "--solvers", "bicgstab", "--configs",
                              defect[i].configs, "--mixed", "defect", "--tol-inner", defect[i].eps,
                              "--tol", "1e-12", "--json", path_in(f3, sizeof f3, p->out, name),
                              NULL};
        for (int k = 0; rest[k]; ++k)
            a[n++] = rest[k];
        a[n] = NULL;
        char title[128];
        snprintf(title, sizeof title, "R7: defect-correction BiCGstab, eps_in %s (Table 4)",
                 defect[i].eps);
        step(t, title, wd_bench_solver_main, a);
    }
    /* R8 (and R9 from delta 0.1): reliable updates */
    static const struct {
        const char *delta, *configs;
    } reliable[] = {{"1e-1", "d-h12g,d-s8g"}, {"1e-2", "d-h12g,d-s8g,d-s12g"},
                    {"1e-3", "d-h12g,d-s8g,d-s12g"}};
    for (size_t i = 0; i < sizeof reliable / sizeof reliable[0]; ++i) {
        const char *a[MAX_ARGS];
        int n = 0;
        solver_args(p, a, &n);
        char name[64];
        snprintf(name, sizeof name, "solver-reliable-%s.json", reliable[i].delta);
        const char *rest[] = {"--kappas", p->kappas, "--solvers", "bicgstab", "--configs",
                              reliable[i].configs, "--mixed", "reliable", "--delta",
                              reliable[i].delta, "--tol", "1e-12", "--warmup", "--json",
                              path_in(f3, sizeof f3, p->out, name), NULL};
        for (int k = 0; rest[k]; ++k)
            a[n++] = rest[k];
        a[n] = NULL;
        char title[128];
        snprintf(title, sizeof title, "R8%s: reliable-update BiCGstab, delta %s (Table 5%s)",
                 i == 0 ? "-R9" : "", reliable[i].delta, i == 0 ? ", Figure 7" : "");
        step(t, title, wd_bench_solver_main, a);
    }
}

/* The report script: given, beside the sources, or in the current folder. */
static const char *find_script(const char *given)
{
    if (given)
        return given;
#ifdef WD_SOURCE_DIR
    static char beside[1024];
    snprintf(beside, sizeof beside, "%s/bench/paper_report.py", WD_SOURCE_DIR);
    if (exists(beside))
        return beside;
#endif
    return exists("bench/paper_report.py") ? "bench/paper_report.py" : NULL;
}

static int render(const char *script, const char *out)
{
    if (!script) {
        fprintf(stderr, "wdirac bench paper: bench/paper_report.py not found (give "
                "--report-script); the JSON results are in %s\n", out);
        return -1;
    }
    printf("\n==== report: python3 %s %s ====\n", script, out);
    fflush(stdout);
    char *argv[] = {"python3", (char *)script, (char *)out, NULL};
    pid_t pid;
    if (posix_spawnp(&pid, "python3", NULL, NULL, argv, environ) != 0) {
        fprintf(stderr, "wdirac bench paper: cannot start python3 (%s); render later with: "
                "python3 %s %s\n", strerror(errno), script, out);
        return -1;
    }
    int status = 0;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "wdirac bench paper: the report script failed (numpy and matplotlib "
                "installed?); the JSON results are in %s\n", out);
        return -1;
    }
    return 0;
}

int wd_bench_paper_main(int argc, char **argv)
{
    plan p = {0};
    const char *backend = "auto";
    char out_default[64], cache_default[1024];
    for (int k = 0; k < argc; ++k) {
        const char *a = argv[k];
        const int more = k + 1 < argc;
        if (!strcmp(a, "--out") && more) {
            p.out = argv[++k];
        } else if (!strcmp(a, "--backend") && more) {
            backend = argv[++k];
            if (strcmp(backend, "auto") && strcmp(backend, "cpu") && strcmp(backend, "cuda")) {
                fprintf(stderr, "wdirac bench paper: --backend must be auto, cpu or cuda\n");
                return WD_EXIT_USAGE;
            }
        } else if (!strcmp(a, "--full")) {
            p.full = 1;
        } else if (!strcmp(a, "--gauge") && more) {
            p.gauge = argv[++k];
        } else if (!strcmp(a, "--cache") && more) {
            p.cache = argv[++k];
        } else if (!strcmp(a, "--report-script") && more) {
            p.script = argv[++k];
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return WD_EXIT_OK;
        } else {
            fprintf(stderr, "wdirac bench paper: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return WD_EXIT_USAGE;
        }
    }
    p.gpu = !strcmp(backend, "cuda") || (!strcmp(backend, "auto") && wd_cuda_available());
    if (!strcmp(backend, "cuda") && !wd_cuda_available()) {
        fprintf(stderr, "wdirac bench paper: --backend cuda, but no usable GPU\n");
        return WD_EXIT_NO_DEVICE;
    }
    if (!p.out) {
        const time_t now = time(NULL);
        strftime(out_default, sizeof out_default, "paper-%Y%m%d-%H%M%S", localtime(&now));
        p.out = out_default;
    }
    if (!p.cache) {
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        snprintf(cache_default, sizeof cache_default, "%s%s/wdirac", xdg ? xdg : home ? home : ".",
                 xdg ? "" : "/.cache");
        p.cache = cache_default;
    }
    const int gpu_dims[4] = {24, 24, 24, 64}, cpu_dims[4] = {8, 8, 8, 16};
    const int acc_gpu[4] = {24, 24, 24, 32}, acc_cpu[4] = {8, 8, 8, 8};
    for (int mu = 0; mu < 4; ++mu) {
        snprintf(p.dims[mu], sizeof p.dims[mu], "%d", p.gpu ? gpu_dims[mu] : cpu_dims[mu]);
        snprintf(p.acc_dims[mu], sizeof p.acc_dims[mu], "%d", p.gpu ? acc_gpu[mu] : acc_cpu[mu]);
    }
    p.sweeps_therm = p.gpu ? "200" : "40";
    p.sweeps_meas = p.gpu ? "100" : "10";
    p.kappas = !p.gpu  ? "0.1450,0.1500,0.1530,0.1550"
               : p.full ? "0.1500,0.1520,0.1535,0.1545,0.1552,0.1558,0.1562,0.1565,0.1568"
                        : "0.1500,0.1530,0.1545,0.1555,0.1560,0.1565";
    if (make_dirs(p.out) != 0) {
        fprintf(stderr, "wdirac bench paper: cannot create %s: %s\n", p.out, strerror(errno));
        return WD_EXIT_USAGE;
    }
    const double t0 = wd_bench_now();
    printf("wdirac bench paper: backend %s, results in %s\n", p.gpu ? "cuda" : "cpu", p.out);
    tally t = {0, 0};
    if (configuration(&p, &t) != 0)
        return WD_EXIT_USAGE;
    printf("configuration %s, lattice %sx%sx%sx%s, kappas %s\n", p.config, p.dims[0], p.dims[1],
           p.dims[2], p.dims[3], p.kappas);
    measure(&p, &t);
    const int report = render(find_script(p.script), p.out);
    printf("\nwdirac bench paper: %d of %d steps failed, report %s, %.0f s in all; %s/report.md\n",
           t.failed, t.steps, report == 0 ? "written" : "NOT written", wd_bench_now() - t0, p.out);
    return t.failed || report != 0 ? WD_EXIT_FAILED : WD_EXIT_OK;
}
