/*
 * cli_solve.h: the `wdirac solve` command (cli_solve.c).
 *   wd_cli_solve_main   argv holds the options after "solve"; returns the
 *                       exit code of wd_cli_exit_code (cli_util.h): 0
 *                       converged, 1 the solver failed (best iterate
 *                       written), 2 bad usage or input, 3 internal error,
 *                       4 no GPU for --backend cuda
 */
#ifndef WDIRAC_CLI_SOLVE_H
#define WDIRAC_CLI_SOLVE_H

int wd_cli_solve_main(int argc, char **argv);

#endif
