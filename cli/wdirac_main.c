/*
 * wdirac_main.c: the `wdirac` command-line program.
 *
 *   wdirac list [GLOB]        the Dslash variants this build has
 *   wdirac bench dslash ...   the Dslash benchmark (cli/bench_dslash.c)
 *   wdirac bench accuracy ... Delta(eps) of Mhat in every precision (cli/bench_accuracy.c)
 *   wdirac bench paper ...    the paper's results R1-R9 into one report (cli/bench_paper.c)
 *   wdirac tune ...           fill the GPU tune cache ahead of time
 *   wdirac gauge ...          generate, inspect or convert gauge configurations (cli_gauge.c)
 *   wdirac solve ...          solve M x = b for one source (cli_solve.c)
 *   wdirac propagator ...     12 columns of a point or wall source, meson
 *                             correlators and effective masses (cli_propagator.c)
 *   wdirac version            the commit it was built from
 *
 * Exit codes, the same for every command (cli_util.h maps every status):
 * 0 success, 1 a run that failed, 2 bad usage or input, 3 internal error
 * (out of memory), 4 no usable GPU for --backend cuda.
 *
 * Under mpirun every rank runs the same command on its block of the lattice
 * (--grid Px Py Pz Pt, docs/multi-gpu.md); rank 0 prints.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "cli_gauge.h"
#include "cli_propagator.h"
#include "cli_solve.h"
#include "cli_bench.h"
#include "cli_util.h"
#include "wd_version.h"
#include "wdirac.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: wdirac <command> [options]\n"
            "  list [GLOB]       print the Dslash variants this build has (names glob)\n"
            "  bench dslash      time Dslash variants (wdirac bench dslash --help)\n"
            "  bench solver      time the solvers (wdirac bench solver --help)\n"
            "  bench accuracy    accuracy of Mhat per precision (wdirac bench accuracy --help)\n"
            "  bench paper       reproduce the paper's tables and figures (wdirac bench paper --help)\n"
            "  tune              tune GPU launch configurations ahead of time (wdirac tune --help)\n"
            "  gauge             generate, inspect (info) or convert a configuration (wdirac gauge --help)\n"
            "  solve             solve M x = b for a point, random or file source (wdirac solve --help)\n"
            "  propagator        a point or wall propagator and its meson correlators (wdirac propagator --help)\n"
            "  version           print the commit this program was built from\n");
}

static int cmd_list(int argc, char **argv)
{
    const char *glob = argc > 0 ? argv[0] : "*";
    int n = 0;
    for (int i = 0; i < wd_variant_count_built(); ++i)
        if (fnmatch(glob, wd_variant_name(i), 0) == 0) {
            puts(wd_variant_name(i));
            n++;
        }
    if (!n) {
        fprintf(stderr, "wdirac list: no built variant matches '%s'\n", glob);
        return 1;
    }
    return 0;
}

static int run(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "list"))
        return cmd_list(argc - 2, argv + 2);
    if (!strcmp(cmd, "bench") && argc >= 3 && !strcmp(argv[2], "dslash"))
        return wd_bench_dslash_main(argc - 3, argv + 3);
    if (!strcmp(cmd, "bench") && argc >= 3 && !strcmp(argv[2], "solver"))
        return wd_bench_solver_main(argc - 3, argv + 3);
    if (!strcmp(cmd, "bench") && argc >= 3 && !strcmp(argv[2], "accuracy"))
        return wd_bench_accuracy_main(argc - 3, argv + 3);
    if (!strcmp(cmd, "bench") && argc >= 3 && !strcmp(argv[2], "paper"))
        return wd_bench_paper_main(argc - 3, argv + 3);
    if (!strcmp(cmd, "tune"))
        return wd_tune_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "gauge"))
        return wd_cli_gauge_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "solve"))
        return wd_cli_solve_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "propagator"))
        return wd_cli_propagator_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "version")) {
        printf("wdirac %s\n", WD_GIT_COMMIT);
        return 0;
    }
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "wdirac: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}

/* Commands that touch a lattice run on every rank of an mpirun; the others
 * need no MPI (and skip its start-up). */
int main(int argc, char **argv)
{
    const int lattice = argc >= 2 && (!strcmp(argv[1], "bench") || !strcmp(argv[1], "tune") ||
                                      !strcmp(argv[1], "gauge") || !strcmp(argv[1], "solve") ||
                                      !strcmp(argv[1], "propagator"));
    if (!lattice)
        return run(argc, argv);
    const wd_status st = wd_init(&argc, &argv);
    if (st != WD_OK) {
        fprintf(stderr, "wdirac: %s\n", wd_last_error());
        return wd_cli_exit_code(st);
    }
    /* rank 0 speaks for all: failures are agreed (wd_agree), so its
     * message is the lowest failing rank's */
    if (wd_rank() != 0) {
        /* a rank that cannot be silenced just prints too */
        FILE *out = freopen("/dev/null", "w", stdout), *err = freopen("/dev/null", "w", stderr);
        (void)out;
        (void)err;
    }
    const int rc = run(argc, argv);
    wd_finalize();
    return rc;
}
