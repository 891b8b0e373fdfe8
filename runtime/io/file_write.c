/*
 * file_write.c: the safe file write of wd_file_write.h (see there for the
 * contract).
 *
 * The externally accessible functions are
 *   wd_file_write_safely     temporary file, fsync, link or rename into place
 *   wd_file_open_temp / wd_file_commit   the same in two halves, for a
 *                            writer whose body is not one call
 *   wd_file_check_writable   the same refusals before anything is written
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wd_file_write.h"
#include "wd_core.h"

static wd_status fail(wd_status s, const char *kind, const char *path, const char *fmt, ...)
    WD_PRINTF(4, 5);

static wd_status fail(wd_status s, const char *kind, const char *path, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return wd_fail(s, "%s '%s': %s", kind, path, msg);
}

static wd_status refuse_existing(const char *path, const char *kind, int overwrite)
{
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return WD_OK;
    if (S_ISDIR(sb.st_mode))
        return fail(WD_ERR_IO, kind, path, "is a directory");
    if (!overwrite)
        return fail(WD_ERR_IO, kind, path, "exists; not overwritten (overwrite not set)");
    return WD_OK;
}

/* A new, empty file beside path (same directory, so that the rename stays
 * on one file system); *tmp is malloc'ed. */
static wd_status create_temp(const char *path, const char *kind, char **tmp, int *fd)
{
    const size_t n = strlen(path) + 48;
    char *name = malloc(n);
    if (!name)
        return fail(WD_ERR_NOMEM, kind, path, "no memory for a temporary name");
    *fd = -1;
    for (int attempt = 0; attempt < 1000 && *fd < 0; attempt++) {
        snprintf(name, n, "%s.tmp-%ld-%d", path, (long)getpid(), attempt);
        *fd = open(name, O_WRONLY | O_CREAT | O_EXCL, 0666);
        if (*fd < 0 && errno != EEXIST) {
            const int e = errno;
            free(name);
            return fail(WD_ERR_IO, kind, path, "cannot create a temporary file beside it: %s",
                        strerror(e));
        }
    }
    if (*fd < 0) {
        free(name);
        return fail(WD_ERR_IO, kind, path, "no free temporary name beside it");
    }
    *tmp = name;
    return WD_OK;
}

static void sync_directory(const char *path)
{
    /* make the rename durable; a file system that cannot fsync a directory
     * still has the complete file under one of the two names */
    char *dir = strdup(path);
    if (!dir)
        return;
    char *slash = strrchr(dir, '/');
    const char *d = ".";
    if (slash) {
        slash[slash == dir ? 1 : 0] = 0;
        d = dir;
    }
    const int fd = open(d, O_RDONLY);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

wd_status wd_file_check_writable(const char *path, const char *kind, int overwrite)
{
    char *tmp;
    int fd;
    wd_status st = refuse_existing(path, kind, overwrite);
    if (st == WD_OK && (st = create_temp(path, kind, &tmp, &fd)) == WD_OK) {
        close(fd);
        unlink(tmp);
        free(tmp);
    }
    return st;
}

wd_status wd_file_open_temp(wd_file_temp *t, const char *path, const char *kind, int overwrite)
{
    memset(t, 0, sizeof *t);
    int fd;
    wd_status st = refuse_existing(path, kind, overwrite);
    if (st != WD_OK || (st = create_temp(path, kind, &t->tmp, &fd)) != WD_OK)
        return st;
    t->f = fdopen(fd, "wb");
    if (!t->f) {
        const int e = errno;
        close(fd);
        unlink(t->tmp);
        free(t->tmp);
        t->tmp = NULL;
        return fail(WD_ERR_IO, kind, path, "cannot open the temporary file: %s", strerror(e));
    }
    t->path = path;
    t->kind = kind;
    t->overwrite = overwrite;
    return WD_OK;
}

wd_status wd_file_commit(wd_file_temp *t, wd_status st)
{
    const char *path = t->path, *kind = t->kind, *tmp = t->tmp;
    if (!t->f)
        return st;
    if (st == WD_OK && (fflush(t->f) != 0 || fsync(fileno(t->f)) != 0))
        st = fail(WD_ERR_IO, kind, path, "writing the temporary file '%s' failed: %s", tmp,
                  strerror(errno));
    if (fclose(t->f) != 0 && st == WD_OK)
        st = fail(WD_ERR_IO, kind, path, "closing the temporary file '%s' failed: %s", tmp,
                  strerror(errno));
    t->f = NULL;
    if (st == WD_OK) {
        struct stat sb;
        if (!t->overwrite) {
            /* link() refuses an existing name, so a file that appeared
             * meanwhile is not replaced; file systems without hard links
             * fall back to a check and rename */
            if (link(tmp, path) != 0) {
                if (errno == EEXIST)
                    st = fail(WD_ERR_IO, kind, path, "appeared while writing; not overwritten");
                else if (lstat(path, &sb) == 0)
                    st = fail(WD_ERR_IO, kind, path, "exists; not overwritten");
                else if (rename(tmp, path) != 0)
                    st = fail(WD_ERR_IO, kind, path, "cannot rename '%s' to it: %s", tmp,
                              strerror(errno));
            }
        } else if (rename(tmp, path) != 0) {
            st = fail(WD_ERR_IO, kind, path, "cannot rename '%s' to it: %s", tmp,
                      strerror(errno));
        }
    }
    unlink(tmp);
    free(t->tmp);
    t->tmp = NULL;
    if (st == WD_OK)
        sync_directory(path);
    return st;
}

wd_status wd_file_write_safely(const char *path, const char *kind, int overwrite,
                               wd_file_body body, void *ctx)
{
    wd_file_temp t;
    wd_status st = wd_file_open_temp(&t, path, kind, overwrite);
    if (st != WD_OK)
        return st;
    return wd_file_commit(&t, body(t.f, path, ctx));
}
