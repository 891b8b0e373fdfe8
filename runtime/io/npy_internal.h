/*
 * npy_internal.h: the parts of the .npy spinor reader and writer
 * (spinor_npy.c) that the block I/O of a process grid (io_block.c) shares,
 * so that both check, refuse and write exactly alike.
 *
 *   wd_npy_open_data         open path, check the header against
 *                            expect_dims and the size against the shape;
 *                            *f is left at the first data byte, *swap = 1
 *                            when the data are in the other byte order
 *   wd_npy_check_data        swap n doubles read from the file if needed
 *                            and refuse a NaN or Inf (WD_ERR_CORRUPT),
 *                            naming the element (first: index of v[0] among
 *                            the file's doubles)
 *   wd_npy_first_nonfinite   index of the first NaN or Inf of v, or -1
 *   wd_npy_refuse_nonfinite  the writer's refusal of a field with a NaN or
 *                            Inf at double `bad` of the whole field
 *   wd_npy_header            preamble and header of a version 1.0 file
 *   wd_npy_header_shape      the same for another shape per site
 */
#ifndef WDIRAC_NPY_INTERNAL_H
#define WDIRAC_NPY_INTERNAL_H

#include <stddef.h>
#include <stdio.h>

#include "wdirac.h"

wd_status wd_npy_open_data(const char *path, const int expect_dims[4], FILE **f, int *swap);
wd_status wd_npy_check_data(const char *path, double *v, size_t n, long long first,
                            const int dims[4], int swap);
long long wd_npy_first_nonfinite(const double *v, size_t n);
wd_status wd_npy_refuse_nonfinite(const char *path, long long bad, const int dims[4]);
void wd_npy_header(char *buf, size_t cap, const int dims[4], size_t *len);
/* the same for (T, Z, Y, X, <site_shape>), site_shape e.g. "4, 3, 4, 3" */
void wd_npy_header_shape(char *buf, size_t cap, const int dims[4], const char *site_shape,
                         size_t *len);

#endif
