/*
 * cli_propagator.h: `wdirac propagator` (cli_propagator.c).
 */
#ifndef WDIRAC_CLI_PROPAGATOR_H
#define WDIRAC_CLI_PROPAGATOR_H

int wd_cli_propagator_main(int argc, char **argv);

#endif
