/*
 * wd_file_write.h: writing a file so that nothing is lost on failure
 * (DESIGN.md, Errors), shared by the gauge-configuration and spinor
 * writers (file_write.c).
 *
 *   wd_file_write_safely   body() writes into a new temporary file in the
 *                          same directory; after fflush and fsync it is
 *                          linked (or, with overwrite, renamed) into place
 *                          and the directory synced; on any failure the
 *                          temporary is removed and an existing file at
 *                          path is left untouched.  Without overwrite an
 *                          existing path (or one that appears meanwhile)
 *                          is refused; a directory always is.
 *   wd_file_check_writable the same refusals, and a temporary file created
 *                          and removed beside path: checks a path before a
 *                          long computation whose result it will receive
 * Every message starts "KIND 'PATH': " (KIND e.g. "gauge file").
 */
#ifndef WDIRAC_FILE_WRITE_H
#define WDIRAC_FILE_WRITE_H

#include <stdio.h>

#include "wdirac.h"

typedef wd_status (*wd_file_body)(FILE *f, const char *path, void *ctx);

wd_status wd_file_write_safely(const char *path, const char *kind, int overwrite,
                               wd_file_body body, void *ctx);
wd_status wd_file_check_writable(const char *path, const char *kind, int overwrite);

#endif
