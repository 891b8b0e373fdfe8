/*
 * gauge_header.c: what a gauge file is, without reading its data.
 *
 * The externally accessible function is
 *   wd_gauge_read_header  (wdirac_gauge.h) the format, extents, precision
 *                         and the header's checksums and observables of a
 *                         NERSC or ILDG file, checked as wd_gauge_read
 *                         checks them before it reads the data
 * A program on a process grid asks this first: the extents decide the
 * grid and the size of each rank's block (wd_gauge_read_block).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gauge_io_internal.h"
#include "wd_core.h"

wd_status wd_gauge_read_header(const char *path, wd_gauge_info *info)
{
    if (!path || !*path || !info)
        return wd_fail(WD_ERR_INVALID, "wd_gauge_read_header: a file name and an info struct "
                       "are needed");
    memset(info, 0, sizeof *info);
    FILE *f = fopen(path, "rb");
    if (!f)
        return wd_io_fail(WD_ERR_IO, path, "cannot open: %s", strerror(errno));
    wd_gauge_format format;
    wd_io_data data;
    wd_status st = wd_io_format_of(f, path, &format);
    if (st == WD_OK)
        st = format == WD_GAUGE_ILDG ? wd_ildg_read_header(f, path, NULL, 0, info, &data)
                                     : wd_nersc_read_header(f, path, NULL, 0, info, &data);
    fclose(f);
    return st;
}
