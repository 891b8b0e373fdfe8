/*
 * wd_core.h: the core module (runtime/core/), the bottom of libwdirac: it
 * includes nothing of the library but the public wdirac.h and the
 * generated wd_physics.h, and every other module may include it.
 *
 * The core owns the status codes and their messages (status.c), the
 * geometry of a lattice (lattice.c: wd_check_dims, wd_volume), the packed
 * field layouts both backends share and the packing of host fields into
 * them (wd_layout.h, layout.c, layout_tmpl.c per precision), the kernel
 * argument block every generated Dslash reads (wd_kernel.h) and the seeded
 * test-field generator (rng.h).  Those headers are its other parts; this
 * one holds what every file of the library needs.
 *
 * The externally accessible functions are
 *   wd_fail    record a formatted error message for wd_last_error() on this
 *              thread and return s: the one way a library function fails
 *   wd_solve_outcome  1 for the statuses a solve ends with when it ran and
 *              returns its best iterate (WD_ERR_DIVERGED, _STAGNATED, _NAN,
 *              _MAX_ITER), 0 for WD_OK and for failures of the call
 * wd_status_string, wd_last_error, wd_check_dims and wd_volume are public
 * (wdirac.h).
 */
#ifndef WDIRAC_CORE_H
#define WDIRAC_CORE_H

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
int wd_solve_outcome(wd_status s);

#ifdef __cplusplus
}
#endif

#endif
