/*
 * gauge_io.c: what the NERSC and ILDG readers and writers share, and the
 * format-neutral entry points of wdirac_gauge.h.
 *
 * The externally accessible functions are
 *   wd_gauge_write_defaults  NERSC, 64-bit, 3x3, big endian, no overwrite
 *   wd_gauge_write        validate the options and the field (finite, SU(3)
 *                         to 1e-9), measure the plaquette and link trace,
 *                         write through wd_file_write_safely (file_write.c)
 *   wd_gauge_read         open, tell NERSC from LIME by the first bytes,
 *                         read with the matching stream reader
 *   wd_gauge_read_nersc / wd_gauge_read_ildg   open and read one format
 *   and the wd_io_* helpers of gauge_io_internal.h (the block I/O of
 *   io_block.c shares them).
 * Notes: stored reals are IEEE 754 binary32/binary64; the host must use
 * the same (every platform wdirac targets does).  The NERSC word sum is
 * taken over the 32-bit words of each value's bit pattern (a binary64
 * contributes its high and low halves), which is what writers of either
 * byte order compute (Grid, MILC, the original QCDSP archive code); the
 * SciDAC CRCs run over the bytes as stored.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "gauge_io_internal.h"
#include "gauge_tools.h"
#include "heatbath_link.h"
#include "wd_file_write.h"

wd_status wd_io_fail(wd_status s, const char *name, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return wd_fail(s, "gauge file '%s': %s", name, msg);
}

void wd_io_printable(char *dst, size_t n, const char *src, size_t srclen)
{
    size_t k = 0;
    for (; k + 1 < n && k < srclen && src[k]; k++) {
        const unsigned char c = (unsigned char)src[k];
        dst[k] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    if (n)
        dst[k] = 0;
}

/* ---- stored reals ------------------------------------------------------- */

static uint32_t bswap32(uint32_t w)
{
    return (w >> 24) | ((w >> 8) & 0xff00u) | ((w << 8) & 0xff0000u) | (w << 24);
}

static void store_word(unsigned char *p, uint64_t bits, int bytes, int big)
{
    for (int k = 0; k < bytes; k++) {
        const int shift = 8 * (big ? bytes - 1 - k : k);
        p[k] = (unsigned char)(bits >> shift);
    }
}

static uint64_t load_word(const unsigned char *p, int bytes, int big)
{
    uint64_t bits = 0;
    for (int k = 0; k < bytes; k++) {
        const int shift = 8 * (big ? bytes - 1 - k : k);
        bits |= (uint64_t)p[k] << shift;
    }
    return bits;
}

void wd_io_encode_sites(unsigned char *out, const double *u, size_t nsites,
                        const wd_io_layout *l, uint32_t *sum)
{
    uint32_t s = 0;
    const int nreal = 6 * l->rows;
    for (size_t site = 0; site < nsites; site++)
        for (int mu = 0; mu < 4; mu++) {
            const double *m = u + 18 * (4 * site + (size_t)mu);
            for (int k = 0; k < nreal; k++) {
                uint64_t bits;
                if (l->bytes == 4) {
                    const float x = (float)m[k];
                    uint32_t b32;
                    memcpy(&b32, &x, 4);
                    bits = b32;
                    s += b32;
                } else {
                    memcpy(&bits, &m[k], 8);
                    s += (uint32_t)bits + (uint32_t)(bits >> 32);
                }
                store_word(out, bits, l->bytes, l->big);
                out += l->bytes;
            }
        }
    *sum += s;
}

void wd_io_decode_sites(double *u, const unsigned char *in, size_t nsites,
                        const wd_io_layout *l, uint32_t *sum, uint32_t *sum_swapped)
{
    uint32_t s = 0, t = 0;
    const int nreal = 6 * l->rows;
    for (size_t site = 0; site < nsites; site++)
        for (int mu = 0; mu < 4; mu++) {
            double *m = u + 18 * (4 * site + (size_t)mu);
            for (int k = 0; k < nreal; k++) {
                const uint64_t bits = load_word(in, l->bytes, l->big);
                in += l->bytes;
                if (l->bytes == 4) {
                    const uint32_t b32 = (uint32_t)bits;
                    float x;
                    memcpy(&x, &b32, 4);
                    m[k] = x;
                    s += b32;
                    t += bswap32(b32);
                } else {
                    memcpy(&m[k], &bits, 8);
                    s += (uint32_t)bits + (uint32_t)(bits >> 32);
                    t += bswap32((uint32_t)bits) + bswap32((uint32_t)(bits >> 32));
                }
            }
            if (l->rows == 2)
                wd_su3_reconstruct_row2(m);
        }
    *sum += s;
    if (sum_swapped)
        *sum_swapped += t;
}

void wd_io_scidac_site(uint32_t *suma, uint32_t *sumb, const unsigned char *site,
                       size_t nbytes, uint64_t index)
{
    const uint32_t crc = (uint32_t)crc32(0L, site, (uInt)nbytes);
    const int ra = (int)(index % 29), rb = (int)(index % 31);
    /* a rotation by 0 leaves the CRC as it is (QIO's shift by 32 - 0 is
     * undefined in C and yields the CRC itself on the machines it ran on) */
    *suma ^= ra ? (crc << ra) | (crc >> (32 - ra)) : crc;
    *sumb ^= rb ? (crc << rb) | (crc >> (32 - rb)) : crc;
}

enum { CHUNK_SITES = 1024 };

wd_status wd_io_decode_stream(FILE *f, const char *name, const char *what, long long offset,
                              size_t first, double *u, size_t count, size_t volume,
                              const wd_io_layout *l, uint32_t *sum, uint32_t *sum_swapped,
                              uint32_t *suma, uint32_t *sumb)
{
    const size_t site_bytes = wd_io_site_bytes(l);
    unsigned char *buf = malloc(CHUNK_SITES * site_bytes);
    if (!buf)
        return wd_io_fail(WD_ERR_NOMEM, name, "no memory for a read buffer");
    const long long at = offset + (long long)(first * site_bytes);
    if (fseeko(f, (off_t)at, SEEK_SET) != 0) {
        free(buf);
        return wd_io_fail(WD_ERR_IO, name, "cannot seek to the %s at byte %lld: %s", what, at,
                          strerror(errno));
    }
    for (size_t site = 0; site < count; site += CHUNK_SITES) {
        const size_t n = count - site < CHUNK_SITES ? count - site : CHUNK_SITES;
        if (fread(buf, site_bytes, n, f) != n) {
            free(buf);
            return wd_io_fail(WD_ERR_CORRUPT, name, "%s ends early: short read at site %zu of %zu",
                              what, first + site, volume);
        }
        if (suma)
            for (size_t k = 0; k < n; k++)
                wd_io_scidac_site(suma, sumb, buf + k * site_bytes, site_bytes, first + site + k);
        wd_io_decode_sites(u + 72 * site, buf, n, l, sum, sum_swapped);
    }
    free(buf);
    return WD_OK;
}

wd_status wd_io_stream_size(FILE *f, const char *name, long long *size)
{
    if (fseeko(f, 0, SEEK_END) != 0)
        return wd_io_fail(WD_ERR_IO, name, "cannot seek: %s", strerror(errno));
    const off_t end = ftello(f);
    if (end < 0)
        return wd_io_fail(WD_ERR_IO, name, "cannot tell its size: %s", strerror(errno));
    *size = (long long)end;
    return WD_OK;
}

/* ---- checks of a decoded field ------------------------------------------ */

static void site_coords(size_t site, const int dims[4], int x[4])
{
    for (int mu = 0; mu < 4; mu++) {
        x[mu] = (int)(site % (size_t)dims[mu]);
        site /= (size_t)dims[mu];
    }
}

static double unitarity(const double *u, size_t nlinks)
{
    /* gauge_tools measures on double complex, the same memory */
    return wd_su3_unitarity_error((const double complex *)(const void *)u, nlinks);
}

/* the first link whose unitarity error exceeds tol (nlinks when none) */
static size_t first_bad_link(const double *u, size_t nlinks, double tol)
{
    enum { BLOCK = 4096 };
    for (size_t b = 0; b < nlinks; b += BLOCK) {
        const size_t n = nlinks - b < BLOCK ? nlinks - b : BLOCK;
        if (!(unitarity(u + 18 * b, n) <= tol))
            for (size_t l = b; l < b + n; l++)
                if (!(unitarity(u + 18 * l, 1) <= tol))
                    return l;
    }
    return nlinks;
}

wd_status wd_io_check_field(const char *name, const double *u, const int dims[4],
                            wd_gauge_info *info, int report_only, const char *plaq_field,
                            const char *trace_field)
{
    const size_t nlinks = 4 * wd_volume(dims);
    const size_t bad = wd_io_first_nonfinite_link(u, nlinks);
    info->unitarity = unitarity(u, nlinks);
    wd_status st = wd_gauge_observables(u, dims, &info->obs);
    if (st != WD_OK)
        return st;
    info->data_read = 1;
    if (report_only)
        return WD_OK;
    const size_t nonunitary = info->unitarity <= info->unitarity_tolerance
                                  ? nlinks : first_bad_link(u, nlinks, info->unitarity_tolerance);
    return wd_io_judge_field(name, dims, info, bad, nonunitary, plaq_field, trace_field);
}

size_t wd_io_first_nonfinite_link(const double *u, size_t nlinks)
{
    for (size_t k = 0; k < 18 * nlinks; k++)
        if (!isfinite(u[k]))
            return k / 18;
    return nlinks;
}

size_t wd_io_first_nonunitary_link(const double *u, size_t nlinks, double tol)
{
    return first_bad_link(u, nlinks, tol);
}

double wd_io_unitarity(const double *u, size_t nlinks)
{
    return unitarity(u, nlinks);
}

wd_status wd_io_judge_field(const char *name, const int dims[4], const wd_gauge_info *info,
                            size_t nonfinite, size_t nonunitary, const char *plaq_field,
                            const char *trace_field)
{
    const size_t nlinks = 4 * wd_volume(dims);
    int x[4];
    if (nonfinite < nlinks) {
        site_coords(nonfinite / 4, dims, x);
        return wd_io_fail(WD_ERR_CORRUPT, name, "link mu=%d at (x,y,z,t) = (%d,%d,%d,%d) "
                          "holds a NaN or infinity", (int)(nonfinite % 4), x[0], x[1], x[2],
                          x[3]);
    }
    if (!(info->unitarity <= info->unitarity_tolerance)) {
        site_coords(nonunitary / 4, dims, x);
        return wd_io_fail(WD_ERR_CORRUPT, name, "link mu=%d at (x,y,z,t) = (%d,%d,%d,%d) is "
                          "not SU(3): max |U U^dag - 1|, |det U - 1| over the file %.3g > "
                          "tolerance %.0e", (int)(nonunitary % 4), x[0], x[1], x[2], x[3],
                          info->unitarity, info->unitarity_tolerance);
    }
    if (info->has_plaquette &&
        !(fabs(info->obs.plaquette - info->plaquette_header) <= info->tolerance))
        return wd_io_fail(WD_ERR_CORRUPT, name, "%s %.10g in the header, the data give %.10g "
                          "(difference %.3g > tolerance %.0e)", plaq_field,
                          info->plaquette_header, info->obs.plaquette,
                          fabs(info->obs.plaquette - info->plaquette_header), info->tolerance);
    if (info->has_link_trace &&
        !(fabs(info->obs.link_trace - info->link_trace_header) <= info->tolerance))
        return wd_io_fail(WD_ERR_CORRUPT, name, "%s %.10g in the header, the data give %.10g "
                          "(difference %.3g > tolerance %.0e)", trace_field,
                          info->link_trace_header, info->obs.link_trace,
                          fabs(info->obs.link_trace - info->link_trace_header), info->tolerance);
    return WD_OK;
}

wd_status wd_io_check_sums(const char *name, const wd_gauge_info *info, int report_only)
{
    if (report_only)
        return WD_OK;
    if (info->format == WD_GAUGE_NERSC && info->checksum_data != info->checksum_header)
        return wd_io_fail(WD_ERR_CORRUPT, name, "CHECKSUM %08x in the header, the data sum to "
                          "%08x", info->checksum_header, info->checksum_data);
    if (info->format == WD_GAUGE_ILDG && info->has_scidac &&
        (info->suma_data != info->suma_header || info->sumb_data != info->sumb_header))
        return wd_io_fail(WD_ERR_CORRUPT, name, "scidac-checksum suma %08x sumb %08x, the data "
                          "give suma %08x sumb %08x", info->suma_header, info->sumb_header,
                          info->suma_data, info->sumb_data);
    return WD_OK;
}

wd_status wd_io_job_slice(const wd_io_write_job *job, int t, const double **u)
{
    if (!job->slice) {
        *u = job->u + 72 * (wd_volume(job->dims) / (size_t)job->dims[3]) * (size_t)t;
        return WD_OK;
    }
    return job->slice(job->slice_ctx, t, u);
}

/* ---- entry points --------------------------------------------------------- */

wd_gauge_write_opts wd_gauge_write_defaults(void)
{
    wd_gauge_write_opts o;
    memset(&o, 0, sizeof o);
    o.format = WD_GAUGE_NERSC;
    o.precision = 64;
    o.ensemble_id = "wdirac";
    return o;
}

wd_file_body wd_io_writer(const wd_gauge_write_opts *opts)
{
    return opts->format == WD_GAUGE_NERSC ? wd_nersc_write_stream : wd_ildg_write_stream;
}

wd_status wd_io_check_write_args(const char *fn, const char *path, const void *u,
                                 const int dims[4], const wd_gauge_write_opts *opts)
{
    if (!path || !*path)
        return wd_fail(WD_ERR_INVALID, "%s: no file name", fn);
    if (!u || !dims)
        return wd_fail(WD_ERR_INVALID, "%s '%s': null field or extents", fn, path);
    wd_status st = wd_check_dims(dims);
    if (st != WD_OK) {
        char why[300];
        snprintf(why, sizeof why, "%s", wd_last_error());
        return wd_fail(st, "%s '%s': %s", fn, path, why);
    }
    if (opts->format != WD_GAUGE_NERSC && opts->format != WD_GAUGE_ILDG)
        return wd_fail(WD_ERR_INVALID, "%s '%s': format %d is neither NERSC (1) nor ILDG (2)",
                       fn, path, (int)opts->format);
    if (opts->precision != 32 && opts->precision != 64)
        return wd_fail(WD_ERR_INVALID, "%s '%s': precision %d, must be 32 or 64", fn, path,
                       opts->precision);
    if (opts->format == WD_GAUGE_ILDG && (opts->two_row || opts->little_endian))
        return wd_fail(WD_ERR_INVALID, "%s '%s': ILDG stores 3x3 big-endian links (two_row "
                       "and little_endian must be 0)", fn, path);
    return WD_OK;
}

wd_status wd_gauge_write(const char *path, const double *u, const int dims[4],
                         const wd_gauge_write_opts *opts)
{
    const wd_gauge_write_opts defaults = wd_gauge_write_defaults();
    if (!opts)
        opts = &defaults;
    wd_status st = wd_io_check_write_args("wd_gauge_write", path, u, dims, opts);
    if (st != WD_OK)
        return st;

    const size_t nlinks = 4 * wd_volume(dims);
    const double err = unitarity(u, nlinks);
    if (!(err <= wd_io_unitarity_tolerance(64)))
        return wd_fail(WD_ERR_INVALID, "wd_gauge_write '%s': the field is not finite SU(3) "
                       "(max |U U^dag - 1|, |det U - 1| = %.3g > %.0e); not written", path, err,
                       wd_io_unitarity_tolerance(64));

    wd_io_write_job job = {.u = u, .dims = dims, .opts = opts};
    st = wd_gauge_observables(u, dims, &job.obs);
    if (st != WD_OK)
        return st;
    return wd_file_write_safely(path, "gauge file", opts->overwrite, wd_io_writer(opts), &job);
}

static wd_status open_for_read(const char *path, double **u, FILE **f)
{
    if (!path || !*path)
        return wd_fail(WD_ERR_INVALID, "wd_gauge_read: no file name");
    if (!u)
        return wd_fail(WD_ERR_INVALID, "wd_gauge_read '%s': null result pointer", path);
    *f = fopen(path, "rb");
    if (!*f)
        return wd_io_fail(WD_ERR_IO, path, "cannot open: %s", strerror(errno));
    return WD_OK;
}

wd_status wd_gauge_read(const char *path, const int expect_dims[4], unsigned flags,
                        double **u, wd_gauge_info *info)
{
    FILE *f;
    wd_status st = open_for_read(path, u, &f);
    if (st != WD_OK)
        return st;
    wd_gauge_format format;
    if ((st = wd_io_format_of(f, path, &format)) == WD_OK)
        st = format == WD_GAUGE_ILDG ? wd_ildg_read_stream(f, path, expect_dims, flags, 0, u, info)
                                     : wd_nersc_read_stream(f, path, expect_dims, flags, 0, u,
                                                            info);
    fclose(f);
    return st;
}

wd_status wd_io_format_of(FILE *f, const char *path, wd_gauge_format *format)
{
    unsigned char magic[12] = {0};
    const size_t got = fread(magic, 1, sizeof magic, f);
    rewind(f);
    if (got >= 4 && magic[0] == 0x45 && magic[1] == 0x67 && magic[2] == 0x89 && magic[3] == 0xab)
        *format = WD_GAUGE_ILDG;
    else if (got >= 12 && !memcmp(magic, "BEGIN_HEADER", 12))
        *format = WD_GAUGE_NERSC;
    else
        return wd_io_fail(WD_ERR_CORRUPT, path, "neither a NERSC file (BEGIN_HEADER) nor a "
                          "LIME file (magic 456789ab)");
    return WD_OK;
}

wd_status wd_gauge_read_nersc(const char *path, const int expect_dims[4], unsigned flags,
                              double **u, wd_gauge_info *info)
{
    FILE *f;
    wd_status st = open_for_read(path, u, &f);
    if (st != WD_OK)
        return st;
    st = wd_nersc_read_stream(f, path, expect_dims, flags, 0, u, info);
    fclose(f);
    return st;
}

wd_status wd_gauge_read_ildg(const char *path, const int expect_dims[4], unsigned flags,
                             double **u, wd_gauge_info *info)
{
    FILE *f;
    wd_status st = open_for_read(path, u, &f);
    if (st != WD_OK)
        return st;
    st = wd_ildg_read_stream(f, path, expect_dims, flags, 0, u, info);
    fclose(f);
    return st;
}
