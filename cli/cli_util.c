/*
 * cli_util.c: what the `wdirac` subcommands share.
 *
 * The externally accessible functions are
 *   wd_cli_exit_code   status code -> exit code (cli_util.h lists the
 *                      mapping); a status this function does not know is
 *                      an internal error
 *   wd_cli_parse_grid  --grid Px Py Pz Pt
 *   wd_cli_printer     1 on rank 0
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli_util.h"

int wd_cli_exit_code(wd_status s)
{
    switch (s) {
    case WD_OK:
        return WD_EXIT_OK;
    case WD_ERR_DIVERGED:
    case WD_ERR_STAGNATED:
    case WD_ERR_NAN:
    case WD_ERR_MAX_ITER:
        return WD_EXIT_FAILED;
    case WD_ERR_INVALID:
    case WD_ERR_IO:
    case WD_ERR_CORRUPT:
    case WD_ERR_NOT_BUILT:
        return WD_EXIT_USAGE;
    case WD_ERR_NO_DEVICE:
        return WD_EXIT_NO_DEVICE;
    case WD_ERR_NOMEM:
    case WD_ERR_CUDA:
    case WD_ERR_INTERNAL:
        break;
    }
    return WD_EXIT_INTERNAL;
}

int wd_cli_parse_grid(const char *prog, int argc, char **argv, int *i, int grid[4])
{
    int g[4];
    for (int mu = 0; mu < 4; ++mu) {
        const char *s = *i + 1 + mu < argc ? argv[*i + 1 + mu] : NULL;
        char *end = NULL;
        errno = 0;
        const long v = s ? strtol(s, &end, 10) : 0;
        if (!s || end == s || *end || errno || v < 1 || v > 1 << 20) {
            if (wd_cli_printer())
                fprintf(stderr, "%s: --grid needs four integers >= 1 (Px Py Pz Pt)%s%s%s\n", prog,
                        s ? ", not '" : "", s ? s : "", s ? "'" : "");
            return 0;
        }
        g[mu] = (int)v;
    }
    for (int mu = 0; mu < 4; ++mu)
        grid[mu] = g[mu];
    *i += 4;
    return 1;
}

int wd_cli_printer(void)
{
    return wd_rank() == 0;
}
