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
 *   wd_file_open_temp / wd_file_commit   wd_file_write_safely in two
 *                          halves: open gives the temporary file's stream
 *                          (after the same refusals); commit, given the
 *                          writer's status, flushes, syncs and links or
 *                          renames it into place, or removes it
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

typedef struct wd_file_temp {
    FILE *f;            /* the temporary file, open for writing */
    char *tmp;          /* its name */
    const char *path, *kind;
    int overwrite;
} wd_file_temp;

wd_status wd_file_open_temp(wd_file_temp *t, const char *path, const char *kind, int overwrite);
/* st: the writer's status; WD_OK puts the file in place.  Returns the
 * final status (the writer's failure, or commit's own); t is closed. */
wd_status wd_file_commit(wd_file_temp *t, wd_status st);

#endif
