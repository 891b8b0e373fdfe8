/*
 * cli_gauge.h: the `wdirac gauge` commands (cli_gauge.c).
 *   wd_cli_gauge_main   argv[0] is "generate", "info" or "convert"; returns
 *                       the exit code of wd_cli_exit_code's map
 *                       (cli_util.h): 0 ok, 1 a run that failed, 2 bad
 *                       usage or input, 3 internal error, 4 no usable GPU
 */
#ifndef WDIRAC_CLI_GAUGE_H
#define WDIRAC_CLI_GAUGE_H

int wd_cli_gauge_main(int argc, char **argv);

#endif
