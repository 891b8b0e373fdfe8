/*
 * cli_util.h: what the `wdirac` subcommands share (cli_util.c).
 *   wd_cli_exit_code   the exit code of a wd_status, the one mapping of
 *                      every subcommand:
 *                        0  WD_OK
 *                        1  the run failed: a solver stopped without
 *                           converging (DIVERGED, STAGNATED, NAN, MAX_ITER)
 *                        2  bad usage or input (INVALID, IO, CORRUPT,
 *                           NOT_BUILT)
 *                        3  internal error (NOMEM, CUDA, INTERNAL)
 *                        4  no usable GPU (NO_DEVICE)
 *   wd_cli_parse_grid  the value of --grid Px Py Pz Pt (every command that
 *                      touches a lattice takes it; docs/multi-gpu.md)
 *   wd_cli_printer     1 on the rank that prints (rank 0): under mpirun
 *                      every rank runs the same command, one speaks for all
 *                      (errors too: wd_comm_agree gives every rank the
 *                      message of the lowest failing rank)
 *   wd_cli_mg_*        --mg and the --mg-* options of every command that
 *                      solves (solve, propagator, bench solver): one
 *                      syntax, one help text, one JSON record of the
 *                      settings and the setup (wd_mg_settings,
 *                      wd_mg_setup_stats)
 */
#ifndef WDIRAC_CLI_UTIL_H
#define WDIRAC_CLI_UTIL_H

#include <jansson.h>
#include <stdio.h>

#include "wdirac.h"

#if defined(__GNUC__)
#define CLI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CLI_PRINTF(f, a)
#endif

enum {
    WD_EXIT_OK = 0,
    WD_EXIT_FAILED = 1,
    WD_EXIT_USAGE = 2,
    WD_EXIT_INTERNAL = 3,
    WD_EXIT_NO_DEVICE = 4
};

int wd_cli_exit_code(wd_status s);

/* argv[*i] is "--grid": read the four integers after it (each >= 1) into
 * grid and leave *i on the last one.  On failure print "PROG: --grid needs
 * four integers >= 1 (Px Py Pz Pt)" to stderr (rank 0) and return 0. */
int wd_cli_parse_grid(const char *prog, int argc, char **argv, int *i, int grid[4]);

int wd_cli_printer(void);

/* The multigrid options as parsed: on when --mg was given; m starts as
 * wd_mg_default_settings and each --mg-* option changes its fields. */
typedef struct wd_cli_mg {
    int on;
    const char *first;      /* the first --mg-* option given (refused without --mg) */
    int have_verbose;       /* --mg-verbose given (else it follows --verbose) */
    int nblock, nnvec;      /* entries of --mg-block and --mg-nvec (0: not given) */
    wd_mg_settings m;
} wd_cli_mg;

/* The options' help, each with its default (wd_mg_default_settings'),
 * for a command's usage text. */
void wd_cli_mg_usage(FILE *f);

void wd_cli_mg_init(wd_cli_mg *mg);

/* argv[*i] is an option: 0 when it is none of --mg, --mg-*; 1 when it is
 * one, parsed into mg with *i left on its value; -1 when its value is bad
 * ("PROG: --mg-OPTION needs ..., got '...'" on stderr). */
int wd_cli_mg_parse(const char *prog, int argc, char **argv, int *i, wd_cli_mg *mg);

/* After the options: 1 when they agree, else 0 with the reason on stderr
 * (an --mg-* option without --mg).  A command's --verbose N (0-3) sets the
 * multigrid's verbosity (min(N, 2)) unless --mg-verbose did. */
int wd_cli_mg_finish(const char *prog, wd_cli_mg *mg, int verbose);

/* The option a wd_solver_mg_setup message is about ("--mg-block" for a
 * block that does not divide ...), or NULL when it names none. */
const char *wd_cli_mg_option_of(const char *message);

/* One line: levels, blocks, null vectors, setup, smoother, cycle, GCR. */
void wd_cli_mg_print_settings(FILE *f, const char *label, const wd_mg_settings *m);
/* The setup's cost and per-level diagnostics, a line a level. */
void wd_cli_mg_print_setup(FILE *f, const char *label, const wd_mg_setup_stats *st,
                           const wd_mg_settings *m);
/* "fine smoother N, level 1 GCR M, ...": the per-level counts of a solve */
void wd_cli_mg_format_levels(char *buf, size_t len, const wd_solver_stats *stats);

/* JSON: the settings ({levels, block, nvec, setup_tol, ...}); with st
 * also "setup": wd_cli_mg_setup_json's.  NULL when out of memory. */
json_t *wd_cli_mg_json(const wd_mg_settings *m, const wd_mg_setup_stats *st);
/* {seconds, fine_applies, dims (each level's), setup_residual,
 * setup_unconverged, orth_error, coarse_error (one a level above the
 * coarsest)} */
json_t *wd_cli_mg_setup_json(const wd_mg_setup_stats *st);
/* [mg_iterations[0], ..., mg_iterations[mg_levels - 1]] */
json_t *wd_cli_mg_levels_json(const wd_solver_stats *stats);

#endif
