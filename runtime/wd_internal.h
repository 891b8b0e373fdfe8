/*
 * wd_internal.h: helpers shared inside the library.
 *   wd_fail   record a formatted error message for wd_last_error(), return s
 */
#ifndef WDIRAC_INTERNAL_H
#define WDIRAC_INTERNAL_H

#include "wdirac.h"

#if defined(__GNUC__)
#define WD_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define WD_PRINTF(f, a)
#endif

#ifdef __cplusplus
extern "C" {
#endif

wd_status wd_fail(wd_status s, const char *fmt, ...) WD_PRINTF(2, 3);

#ifdef __cplusplus
}
#endif

#endif
