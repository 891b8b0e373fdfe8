/*
 * cli_util.c: what the `wdirac` subcommands share.
 *
 * The externally accessible function is
 *   wd_cli_exit_code   status code -> exit code (cli_util.h lists the
 *                      mapping); a status this function does not know is
 *                      an internal error
 */
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
