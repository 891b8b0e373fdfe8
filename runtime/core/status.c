/*
 * status.c: status codes and the per-thread last-error message.
 *
 * The externally accessible functions are
 *   wd_status_string   short text of a status code
 *   wd_last_error      the message of the last failure on this thread
 *   wd_fail            record a formatted message and return the status
 *   wd_solve_outcome   whether a status is a solve's outcome (it ran and
 *                      returns its best iterate) rather than a failure
 */
#include <stdarg.h>
#include <stdio.h>

#include "wd_core.h"

static _Thread_local char last_error[512];

const char *wd_status_string(wd_status s)
{
    switch (s) {
    case WD_OK: return "ok";
    case WD_ERR_INVALID: return "invalid argument";
    case WD_ERR_NOMEM: return "out of memory";
    case WD_ERR_NOT_BUILT: return "variant not built";
    case WD_ERR_IO: return "i/o error";
    case WD_ERR_CORRUPT: return "corrupt data";
    case WD_ERR_CUDA: return "CUDA error";
    case WD_ERR_NO_DEVICE: return "no GPU";
    case WD_ERR_INTERNAL: return "internal error";
    case WD_ERR_DIVERGED: return "solver diverged";
    case WD_ERR_STAGNATED: return "solver stagnated";
    case WD_ERR_NAN: return "solver met NaN";
    case WD_ERR_MAX_ITER: return "solver reached its iteration limit";
    }
    return "unknown status";
}

int wd_solve_outcome(wd_status s)
{
    return s == WD_ERR_DIVERGED || s == WD_ERR_STAGNATED || s == WD_ERR_NAN ||
           s == WD_ERR_MAX_ITER;
}

const char *wd_last_error(void)
{
    return last_error;
}

wd_status wd_fail(wd_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return s;
}
