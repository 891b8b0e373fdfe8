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
 */
#ifndef WDIRAC_CLI_UTIL_H
#define WDIRAC_CLI_UTIL_H

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

#endif
