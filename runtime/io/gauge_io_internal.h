/*
 * gauge_io_internal.h: the io module (runtime/io/): gauge configurations in
 * NERSC (gauge_io_nersc.c) and ILDG/LIME (gauge_io_lime.c) files behind
 * gauge_io.c, spinor fields in .npy files (spinor_npy.c) and the safe
 * writer they share (file_write.c: temporary file, fsync, link or rename).
 * Its interface is public (wdirac_gauge.h's files, wdirac_npy.h); it may
 * call core and gauge, and nothing in the library calls it.  This header
 * holds the pieces shared by the NERSC and ILDG readers and writers, and
 * the stream entry points the fuzz harnesses call (tests/fuzz_nersc.c,
 * tests/fuzz_lime.c):
 *
 *   wd_io_fail            wd_fail with "gauge file 'NAME': " in front
 *   wd_io_printable       a file's string made safe to print
 *   wd_io_layout          how one site is stored: rows per link, bytes per
 *                         real, byte order
 *   wd_io_encode_sites / wd_io_decode_sites   sites to and from stored
 *                         bytes, adding to the NERSC word sum (of the IEEE
 *                         bit patterns) and, decoding, to the sum a reader
 *                         of the other byte order would get
 *   wd_io_scidac_site     fold one site's stored bytes into the SciDAC
 *                         checksum (CRC32 rotated by site mod 29 and 31)
 *   wd_io_decode_stream   read and decode every site from a stream
 *   wd_io_check_field     finiteness, unitarity, plaquette and link trace
 *                         of a decoded field against the header (into info)
 *   wd_io_stream_size     bytes in a stream (it must be seekable)
 *   wd_nersc_read_stream / wd_ildg_read_stream   the readers on an open
 *                         stream; max_volume > 0 refuses larger lattices
 *                         (the fuzzers bound their memory with it)
 *   wd_nersc_write_stream / wd_ildg_write_stream   the writers' bodies
 */
#ifndef WDIRAC_GAUGE_IO_INTERNAL_H
#define WDIRAC_GAUGE_IO_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "wdirac_gauge.h"
#include "wd_core.h"

wd_status wd_io_fail(wd_status s, const char *name, const char *fmt, ...) WD_PRINTF(3, 4);

/* copy src into dst (size n) with every byte outside printable ASCII
 * replaced by '?', at most n - 1 bytes, or up to a NUL */
void wd_io_printable(char *dst, size_t n, const char *src, size_t srclen);

typedef struct wd_io_layout {
    int rows;   /* 2 or 3 rows stored per link */
    int bytes;  /* 4 or 8 bytes per real */
    int big;    /* 1: big endian */
} wd_io_layout;

static inline size_t wd_io_site_bytes(const wd_io_layout *l)
{
    return (size_t)(4 * l->rows * 6 * l->bytes);
}

void wd_io_encode_sites(unsigned char *out, const double *u, size_t nsites,
                        const wd_io_layout *l, uint32_t *sum);
void wd_io_decode_sites(double *u, const unsigned char *in, size_t nsites,
                        const wd_io_layout *l, uint32_t *sum, uint32_t *sum_swapped);

void wd_io_scidac_site(uint32_t *suma, uint32_t *sumb, const unsigned char *site,
                       size_t nbytes, uint64_t index);

/* Decode volume sites from f at offset into u; sums as above (sum_swapped
 * may be NULL), scidac sums when suma is non-NULL.  Fails (WD_ERR_CORRUPT,
 * naming what) on a short read. */
wd_status wd_io_decode_stream(FILE *f, const char *name, const char *what, long long offset,
                              double *u, size_t volume, const wd_io_layout *l, uint32_t *sum,
                              uint32_t *sum_swapped, uint32_t *suma, uint32_t *sumb);

/* Fill info->unitarity, info->obs and info->data_read; then, unless
 * report_only, fail on the first of: a non-finite value, unitarity above
 * info->unitarity_tolerance, a plaquette or link trace (where info has
 * one) further than info->tolerance.  The names of the header fields go
 * into the messages. */
wd_status wd_io_check_field(const char *name, const double *u, const int dims[4],
                            wd_gauge_info *info, int report_only, const char *plaq_field,
                            const char *trace_field);


wd_status wd_io_stream_size(FILE *f, const char *name, long long *size);

wd_status wd_nersc_read_stream(FILE *f, const char *name, const int expect_dims[4],
                               unsigned flags, size_t max_volume, double **u,
                               wd_gauge_info *info);
wd_status wd_ildg_read_stream(FILE *f, const char *name, const int expect_dims[4],
                              unsigned flags, size_t max_volume, double **u,
                              wd_gauge_info *info);

typedef struct wd_io_write_job {
    const double *u;
    const int *dims;
    const wd_gauge_write_opts *opts;
    wd_gauge_obs obs;
} wd_io_write_job;

wd_status wd_nersc_write_stream(FILE *f, const char *path, void *job);
wd_status wd_ildg_write_stream(FILE *f, const char *path, void *job);

/* tolerances of DESIGN.md's header checks, by bits per stored real */
static inline double wd_io_obs_tolerance(int precision)
{
    return precision == 32 ? 1e-5 : 1e-6;
}
static inline double wd_io_unitarity_tolerance(int precision)
{
    return precision == 32 ? 1e-5 : 1e-9;
}

#endif
