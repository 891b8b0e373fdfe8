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
 *   wd_io_decode_stream   read and decode a range of sites from a stream
 *   wd_io_check_field     finiteness, unitarity, plaquette and link trace
 *                         of a decoded field against the header (into info)
 *   wd_io_first_nonfinite_link / wd_io_first_nonunitary_link / wd_io_unitarity
 *                         its measurements, for a field or a block
 *   wd_io_judge_field     its verdict from the measurements (the messages)
 *   wd_io_check_sums      the NERSC CHECKSUM or the scidac-checksum verdict
 *   wd_io_stream_size     bytes in a stream (it must be seekable)
 *   wd_io_format_of       NERSC or LIME, by a stream's first bytes
 *   wd_nersc_read_header / wd_ildg_read_header   a reader up to the data:
 *                         header checked, info filled, where the data are
 *   wd_nersc_little_after_all  the NERSC reader's second guess at the byte
 *                         order of a bare IEEE32 / IEEE64 file
 *   wd_nersc_read_stream / wd_ildg_read_stream   the readers on an open
 *                         stream; max_volume > 0 refuses larger lattices
 *                         (the fuzzers bound their memory with it)
 *   wd_io_check_write_args  the writer's checks of its arguments
 *   wd_io_writer          the writer's body for a format
 *   wd_nersc_write_stream / wd_ildg_write_stream   the writers' bodies,
 *                         taking the field one time slice at a time
 *   wd_io_job_slice       time slice t of a write job
 */
#ifndef WDIRAC_GAUGE_IO_INTERNAL_H
#define WDIRAC_GAUGE_IO_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "wdirac_gauge.h"
#include "wd_core.h"
#include "wd_file_write.h"

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

/* Decode sites first .. first + count - 1 of the volume sites of data
 * that start at offset in f into u; sums as above (sum_swapped may be
 * NULL), scidac sums (by global site) when suma is non-NULL.  Fails
 * (WD_ERR_CORRUPT, naming what) on a short read. */
wd_status wd_io_decode_stream(FILE *f, const char *name, const char *what, long long offset,
                              size_t first, double *u, size_t count, size_t volume,
                              const wd_io_layout *l, uint32_t *sum, uint32_t *sum_swapped,
                              uint32_t *suma, uint32_t *sumb);

/* Fill info->unitarity, info->obs and info->data_read; then, unless
 * report_only, fail on the first of: a non-finite value, unitarity above
 * info->unitarity_tolerance, a plaquette or link trace (where info has
 * one) further than info->tolerance.  The names of the header fields go
 * into the messages. */
wd_status wd_io_check_field(const char *name, const double *u, const int dims[4],
                            wd_gauge_info *info, int report_only, const char *plaq_field,
                            const char *trace_field);

/* the first link (site * 4 + mu) holding a NaN or infinity, the first
 * whose unitarity error exceeds tol (nlinks when none), the largest error */
size_t wd_io_first_nonfinite_link(const double *u, size_t nlinks);
size_t wd_io_first_nonunitary_link(const double *u, size_t nlinks, double tol);
double wd_io_unitarity(const double *u, size_t nlinks);

/* The verdict of wd_io_check_field on info (unitarity, obs filled) and the
 * first non-finite and non-unitary links of the whole field (global link
 * indices; nonunitary read only when the unitarity fails). */
wd_status wd_io_judge_field(const char *name, const int dims[4], const wd_gauge_info *info,
                            size_t nonfinite, size_t nonunitary, const char *plaq_field,
                            const char *trace_field);

/* WD_ERR_CORRUPT when info's data checksum (NERSC) or scidac sums (ILDG,
 * when the file has them) differ from the header's, unless report_only. */
wd_status wd_io_check_sums(const char *name, const wd_gauge_info *info, int report_only);

wd_status wd_io_stream_size(FILE *f, const char *name, long long *size);
wd_status wd_io_format_of(FILE *f, const char *name, wd_gauge_format *format);

/* where a file's data are and how they are stored */
typedef struct wd_io_data {
    long long offset;     /* of the first site's bytes */
    wd_io_layout layout;
    int bare;             /* NERSC IEEE32 / IEEE64 without a byte order */
} wd_io_data;

wd_status wd_nersc_read_header(FILE *f, const char *name, const int expect_dims[4],
                               size_t max_volume, wd_gauge_info *info, wd_io_data *data);
wd_status wd_ildg_read_header(FILE *f, const char *name, const int expect_dims[4],
                              size_t max_volume, wd_gauge_info *info, wd_io_data *data);

/* 1 when the data summed in data->layout's byte order (sum) miss the
 * header's CHECKSUM, the file is bare and the other order (sum_swapped)
 * matches: data and info are switched to little endian, to be decoded
 * again. */
int wd_nersc_little_after_all(wd_gauge_info *info, wd_io_data *data, uint32_t sum,
                              uint32_t sum_swapped);

wd_status wd_nersc_read_stream(FILE *f, const char *name, const int expect_dims[4],
                               unsigned flags, size_t max_volume, double **u,
                               wd_gauge_info *info);
wd_status wd_ildg_read_stream(FILE *f, const char *name, const int expect_dims[4],
                              unsigned flags, size_t max_volume, double **u,
                              wd_gauge_info *info);

/* What a writer writes: the whole field u, or (u NULL, the block writes)
 * time slice t from slice(slice_ctx, t, &out), asked for t = 0, 1, ... in
 * turn, each once; the NERSC checksum then comes summed (have_sum). */
typedef struct wd_io_write_job {
    const double *u;
    const int *dims;
    const wd_gauge_write_opts *opts;
    wd_gauge_obs obs;
    int have_sum;
    uint32_t sum;
    wd_status (*slice)(void *ctx, int t, const double **out);
    void *slice_ctx;
} wd_io_write_job;

wd_status wd_io_job_slice(const wd_io_write_job *job, int t, const double **u);

wd_file_body wd_io_writer(const wd_gauge_write_opts *opts);

wd_status wd_io_check_write_args(const char *fn, const char *path, const void *u,
                                 const int dims[4], const wd_gauge_write_opts *opts);

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
