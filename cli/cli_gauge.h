/*
 * cli_gauge.h: the `wdirac gauge` commands (cli_gauge.c).
 *   wd_cli_gauge_main   argv[0] is "generate" or "info"; returns the exit
 *                       code of wdirac_main.c (0 ok, 1 a run that failed,
 *                       2 bad usage or input, 3 internal error)
 */
#ifndef WDIRAC_CLI_GAUGE_H
#define WDIRAC_CLI_GAUGE_H

int wd_cli_gauge_main(int argc, char **argv);

#endif
