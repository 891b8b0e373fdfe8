/*
 * cli_bench.h: the benchmark subcommands of the `wdirac` program and the
 * measurement model they share (DESIGN.md, Measurement conventions).
 *   wd_bench_dslash_main      `wdirac bench dslash`
 *   wd_tune_main              `wdirac tune`
 *   wd_bench_solver_main      `wdirac bench solver` (solver_bench.c)
 *   wd_bench_accuracy_main    `wdirac bench accuracy` (accuracy_bench.c)
 *   wd_bench_paper_main       `wdirac bench paper` (paper_bench.c)
 *   wd_dslash_bytes_per_site  fewest bytes per output site of one application
 *   wd_dslash_flops_per_site  1320 (+48 with xpay)
 *   wd_bench_now, wd_bench_median, wd_bench_device, wd_bench_json_run   bench_util.c
 */
#ifndef WDIRAC_CLI_BENCH_H
#define WDIRAC_CLI_BENCH_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

int wd_bench_dslash_main(int argc, char **argv);
int wd_tune_main(int argc, char **argv);
int wd_bench_solver_main(int argc, char **argv);
int wd_bench_accuracy_main(int argc, char **argv);
int wd_bench_paper_main(int argc, char **argv);
double wd_dslash_bytes_per_site(int precision, int recon, int gauge_fix, int xpay);
double wd_dslash_flops_per_site(int xpay);

/* bench_util.c */
double wd_bench_now(void);
double wd_bench_median(double *v, int n);
void wd_bench_device(char *buf, size_t len, int gpu);
json_t *wd_bench_json_run(const char *benchmark, const char *backend, const char *device,
                          uint64_t seed);

#endif
