/*
 * bench_util.c: what the benchmark subcommands share.
 *
 * The externally accessible functions are
 *   wd_bench_now        monotonic wall-clock seconds
 *   wd_bench_median     median of n doubles (sorts them in place)
 *   wd_bench_device     the name of the device a backend runs on: the GPU's,
 *                       or the CPU model from /proc/cpuinfo
 *   wd_bench_json_run   a results object with what every benchmark's JSON
 *                       opens with (DESIGN.md, Files): benchmark, backend,
 *                       device, threads, commit, date, seed
 */
#include <jansson.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_rt.h"
#include "cli_bench.h"
#include "wd_version.h"

double wd_bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double wd_bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void wd_bench_device(char *buf, size_t len, int gpu)
{
    wd_cuda_info info;
    if (gpu && wd_cuda_device_info(&info) == WD_OK) {
        snprintf(buf, len, "%s", info.name);
        return;
    }
    snprintf(buf, len, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        const char *p = strchr(line, ':');
        if (!strncmp(line, "model name", 10) && p) {
            snprintf(buf, len, "%s", p + 2);
            buf[strcspn(buf, "\n")] = 0;
            break;
        }
    }
    fclose(f);
}

json_t *wd_bench_json_run(const char *benchmark, const char *backend, const char *device,
                          uint64_t seed)
{
    char date[64];
    const time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    return json_pack("{s:s, s:s, s:s, s:i, s:s, s:s, s:I}", "benchmark", benchmark, "backend",
                     backend, "device", device, "threads", omp_get_max_threads(), "commit",
                     WD_GIT_COMMIT, "date", date, "seed", (json_int_t)seed);
}
