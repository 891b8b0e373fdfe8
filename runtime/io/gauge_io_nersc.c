/*
 * gauge_io_nersc.c: the NERSC archive format ("QCD archive format" of the
 * Gauge Connection at NERSC): an ASCII header
 *
 *   BEGIN_HEADER
 *   KEY = VALUE            (one per line)
 *   END_HEADER
 *
 * followed at once by the links in the site order of DESIGN.md, mu
 * innermost, each link row by row, each complex number (re, im): all 3
 * rows for DATATYPE = 4D_SU3_GAUGE_3x3, rows 0 and 1 for 4D_SU3_GAUGE
 * (row 2 = (row0 x row1)^*).  FLOATING_POINT = IEEE32BIG, IEEE32LITTLE,
 * IEEE64BIG, IEEE64LITTLE (IEEE32 and IEEE64 alone: big endian).
 * CHECKSUM is the low 32 bits of the sum of the 32-bit words of the data
 * (of each real's IEEE bit pattern), in hex; PLAQUETTE is Re tr P / 3
 * averaged over the 6 V plaquettes, LINK_TRACE Re tr U / 3 over the 4 V
 * links; DIMENSION_1..4 are X, Y, Z, T.
 *
 * The externally accessible functions are
 *   wd_nersc_read_stream   parse and check the header, check the file size,
 *                          decode with the checksum, check the field
 *   wd_nersc_write_stream  header (checksum from a first encoding pass)
 *                          and data, 3x3 or two-row, 32 or 64 bits, either
 *                          byte order
 * Notes: header values longer than the fields that hold them, lines that
 * are not KEY = VALUE, and headers longer than 64 KiB are refused as
 * corrupt rather than truncated or guessed.  Unknown keys are ignored;
 * BOUNDARY_* is recorded but not enforced (some writers record the
 * fermion boundary there; the gauge field itself is periodic).
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "gauge_io_internal.h"
#include "gauge_tools.h"
#include "heatbath_link.h"

enum { HEADER_MAX = 65536 };

typedef struct header_field {
    const char *key;
    char *value;
    size_t size;
    int seen;
} header_field;

typedef struct nersc_header {
    char datatype[64], floating_point[32], checksum[32], plaquette[64], link_trace[64];
    char dim[4][32], boundary[4][32], ensemble_id[128];
} nersc_header;

static int trim(const char **s, size_t *n)
{
    while (*n && isspace((unsigned char)**s))
        ++*s, --*n;
    while (*n && isspace((unsigned char)(*s)[*n - 1]))
        --*n;
    return (int)*n;
}

static int equals(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && !memcmp(s, word, n);
}

/* Parse the header from the start of f; *data_offset = the first byte
 * after the END_HEADER line. */
static wd_status parse_header(FILE *f, const char *name, header_field *fields, int nfields,
                              long long *data_offset)
{
    char *buf = malloc(HEADER_MAX);
    if (!buf)
        return wd_io_fail(WD_ERR_NOMEM, name, "no memory for the header");
    const size_t n = fread(buf, 1, HEADER_MAX, f);
    wd_status st = WD_OK;
    size_t pos = 0;
    int line = 0, done = 0;
    char shown[80];

    while (st == WD_OK && !done) {
        const char *end = pos < n ? memchr(buf + pos, '\n', n - pos) : NULL;
        if (!end) {
            /* END_HEADER may be the last bytes of a file with no data */
            const char *s = buf + pos;
            size_t len = n - pos;
            if (line > 0 && trim(&s, &len) && equals(s, len, "END_HEADER") && n < HEADER_MAX) {
                *data_offset = (long long)n;
                done = 1;
                break;
            }
            st = n < HEADER_MAX
                ? wd_io_fail(WD_ERR_CORRUPT, name, "the header ends (byte %zu) without an "
                             "END_HEADER line", n)
                : wd_io_fail(WD_ERR_CORRUPT, name, "no END_HEADER line in the first %d bytes",
                             HEADER_MAX);
            break;
        }
        const char *s = buf + pos;
        size_t len = (size_t)(end - s);
        pos = (size_t)(end - buf) + 1;
        line++;
        if (memchr(s, 0, len)) {
            st = wd_io_fail(WD_ERR_CORRUPT, name, "header line %d holds a NUL byte", line);
            break;
        }
        trim(&s, &len);
        if (line == 1) {
            if (!equals(s, len, "BEGIN_HEADER"))
                st = wd_io_fail(WD_ERR_CORRUPT, name, "the first line is not BEGIN_HEADER");
            continue;
        }
        if (equals(s, len, "END_HEADER")) {
            *data_offset = (long long)pos;
            done = 1;
            break;
        }
        if (!len)
            continue;
        const char *eq = memchr(s, '=', len);
        if (!eq) {
            wd_io_printable(shown, sizeof shown, s, len);
            st = wd_io_fail(WD_ERR_CORRUPT, name, "header line %d '%s' is not KEY = VALUE",
                            line, shown);
            break;
        }
        const char *key = s, *val = eq + 1;
        size_t klen = (size_t)(eq - s), vlen = len - klen - 1;
        trim(&key, &klen);
        trim(&val, &vlen);
        for (int k = 0; k < nfields; k++)
            if (equals(key, klen, fields[k].key)) {
                if (vlen >= fields[k].size) {
                    st = wd_io_fail(WD_ERR_CORRUPT, name, "header %s: value longer than %zu "
                                    "characters", fields[k].key, fields[k].size - 1);
                    break;
                }
                memcpy(fields[k].value, val, vlen);
                fields[k].value[vlen] = 0;
                fields[k].seen = 1;
            }
    }
    free(buf);
    return st;
}

static wd_status parse_real(const char *name, const char *key, const char *text, double *x)
{
    char *end;
    errno = 0;
    *x = strtod(text, &end);
    if (end == text || *end || errno == ERANGE || !isfinite(*x)) {
        char shown[80];
        wd_io_printable(shown, sizeof shown, text, strlen(text));
        return wd_io_fail(WD_ERR_CORRUPT, name, "header %s = '%s' is not a finite number", key,
                          shown);
    }
    return WD_OK;
}

int wd_nersc_little_after_all(wd_gauge_info *info, wd_io_data *data, uint32_t sum,
                              uint32_t sum_swapped)
{
    if (sum == info->checksum_header || !data->bare || sum_swapped != info->checksum_header)
        return 0;
    /* a bare IEEE32/IEEE64 file written little endian */
    data->layout.big = info->big_endian = 0;
    data->bare = 0;
    return 1;
}

wd_status wd_nersc_read_header(FILE *f, const char *name, const int expect_dims[4],
                               size_t max_volume, wd_gauge_info *info, wd_io_data *data)
{
    memset(info, 0, sizeof *info);
    info->format = WD_GAUGE_NERSC;

    nersc_header h;
    memset(&h, 0, sizeof h);
    header_field fields[] = {
        {"DATATYPE", h.datatype, sizeof h.datatype, 0},
        {"FLOATING_POINT", h.floating_point, sizeof h.floating_point, 0},
        {"CHECKSUM", h.checksum, sizeof h.checksum, 0},
        {"DIMENSION_1", h.dim[0], sizeof h.dim[0], 0},
        {"DIMENSION_2", h.dim[1], sizeof h.dim[1], 0},
        {"DIMENSION_3", h.dim[2], sizeof h.dim[2], 0},
        {"DIMENSION_4", h.dim[3], sizeof h.dim[3], 0},
        {"PLAQUETTE", h.plaquette, sizeof h.plaquette, 0},
        {"LINK_TRACE", h.link_trace, sizeof h.link_trace, 0},
        {"BOUNDARY_1", h.boundary[0], sizeof h.boundary[0], 0},
        {"BOUNDARY_2", h.boundary[1], sizeof h.boundary[1], 0},
        {"BOUNDARY_3", h.boundary[2], sizeof h.boundary[2], 0},
        {"BOUNDARY_4", h.boundary[3], sizeof h.boundary[3], 0},
        {"ENSEMBLE_ID", h.ensemble_id, sizeof h.ensemble_id, 0},
    };
    enum { F_DATATYPE, F_FP, F_CHECKSUM, F_DIM1, F_PLAQ = 7, F_TRACE, F_NFIELDS = 14 };
    long long data_offset = 0;
    wd_status st = parse_header(f, name, fields, F_NFIELDS, &data_offset);
    if (st != WD_OK)
        return st;

    for (int k = 0; k < F_NFIELDS; k++) {
        if (!fields[k].seen && k < F_PLAQ)
            return wd_io_fail(WD_ERR_CORRUPT, name, "the header has no %s", fields[k].key);
    }
    char shown[80];
    wd_io_printable(info->datatype, sizeof info->datatype, h.datatype, sizeof h.datatype);
    wd_io_printable(info->floating_point, sizeof info->floating_point, h.floating_point,
                    sizeof h.floating_point);
    wd_io_printable(info->ensemble_id, sizeof info->ensemble_id, h.ensemble_id,
                    sizeof h.ensemble_id);
    for (int mu = 0; mu < 4; mu++)
        wd_io_printable(info->boundary[mu], sizeof info->boundary[mu], h.boundary[mu],
                        sizeof h.boundary[mu]);

    if (!strcmp(h.datatype, "4D_SU3_GAUGE"))
        info->rows = 2;
    else if (!strcmp(h.datatype, "4D_SU3_GAUGE_3x3") || !strcmp(h.datatype, "4D_SU3_GAUGE_3X3"))
        info->rows = 3;
    else
        return wd_io_fail(WD_ERR_CORRUPT, name, "unknown DATATYPE '%s' (wdirac reads "
                          "4D_SU3_GAUGE and 4D_SU3_GAUGE_3x3)", info->datatype);

    int bare = 0;
    const char *fp = h.floating_point;
    if (!strcmp(fp, "IEEE32") || !strcmp(fp, "IEEE64"))
        bare = 1, info->big_endian = 1;
    else if (!strcmp(fp, "IEEE32BIG") || !strcmp(fp, "IEEE64BIG"))
        info->big_endian = 1;
    else if (!strcmp(fp, "IEEE32LITTLE") || !strcmp(fp, "IEEE64LITTLE"))
        info->big_endian = 0;
    else
        return wd_io_fail(WD_ERR_CORRUPT, name, "unknown FLOATING_POINT '%s' (wdirac reads "
                          "IEEE32, IEEE64, with or without BIG or LITTLE)", info->floating_point);
    info->precision = fp[4] == '3' ? 32 : 64;

    for (int mu = 0; mu < 4; mu++) {
        char *end;
        errno = 0;
        const long d = strtol(h.dim[mu], &end, 10);
        if (end == h.dim[mu] || *end || errno || d < 1 || d > (1L << 24)) {
            wd_io_printable(shown, sizeof shown, h.dim[mu], sizeof h.dim[mu]);
            return wd_io_fail(WD_ERR_CORRUPT, name, "DIMENSION_%d = '%s' is not an extent",
                              mu + 1, shown);
        }
        info->dims[mu] = (int)d;
    }
    if (wd_check_dims(info->dims) != WD_OK) {
        char why[300];
        snprintf(why, sizeof why, "%s", wd_last_error());
        return wd_io_fail(WD_ERR_CORRUPT, name, "DIMENSION_1..4 = %d %d %d %d: %s",
                          info->dims[0], info->dims[1], info->dims[2], info->dims[3], why);
    }
    if (expect_dims)
        for (int mu = 0; mu < 4; mu++)
            if (info->dims[mu] != expect_dims[mu])
                return wd_io_fail(WD_ERR_INVALID, name, "DIMENSION_%d = %d, expected %d",
                                  mu + 1, info->dims[mu], expect_dims[mu]);

    char *end;
    const char *cs = h.checksum;
    if (cs[0] == '0' && (cs[1] == 'x' || cs[1] == 'X'))
        cs += 2;
    errno = 0;
    const unsigned long long sum = strtoull(cs, &end, 16);
    if (end == cs || *end || errno || sum > 0xffffffffull || !isxdigit((unsigned char)cs[0])) {
        wd_io_printable(shown, sizeof shown, h.checksum, sizeof h.checksum);
        return wd_io_fail(WD_ERR_CORRUPT, name, "CHECKSUM = '%s' is not a 32-bit hex number",
                          shown);
    }
    info->has_checksum = 1;
    info->checksum_header = (uint32_t)sum;
    if (fields[F_PLAQ].seen) {
        if ((st = parse_real(name, "PLAQUETTE", h.plaquette, &info->plaquette_header)) != WD_OK)
            return st;
        info->has_plaquette = 1;
    }
    if (fields[F_TRACE].seen) {
        if ((st = parse_real(name, "LINK_TRACE", h.link_trace, &info->link_trace_header)) !=
            WD_OK)
            return st;
        info->has_link_trace = 1;
    }
    info->tolerance = wd_io_obs_tolerance(info->precision);
    info->unitarity_tolerance = wd_io_unitarity_tolerance(info->precision);

    const size_t volume = wd_volume(info->dims);
    if (max_volume && volume > max_volume)
        return wd_io_fail(WD_ERR_INVALID, name, "%zu sites, more than the limit %zu", volume,
                          max_volume);
    wd_io_layout layout = {info->rows, info->precision / 8, info->big_endian};
    const long long need = (long long)(volume * wd_io_site_bytes(&layout));
    long long size;
    if ((st = wd_io_stream_size(f, name, &size)) != WD_OK)
        return st;
    if (size - data_offset < need)
        return wd_io_fail(WD_ERR_CORRUPT, name, "truncated: DIMENSION_1..4 = %d %d %d %d with "
                          "%s %s need %lld data bytes after the header, the file has %lld",
                          info->dims[0], info->dims[1], info->dims[2], info->dims[3],
                          info->datatype, info->floating_point, need, size - data_offset);
    if (size - data_offset > need)
        return wd_io_fail(WD_ERR_CORRUPT, name, "%lld bytes more than DIMENSION_1..4 = %d %d "
                          "%d %d with %s %s need (%lld data bytes): wrong header or not one "
                          "configuration", size - data_offset - need, info->dims[0],
                          info->dims[1], info->dims[2], info->dims[3], info->datatype,
                          info->floating_point, need);

    data->offset = data_offset;
    data->layout = layout;
    data->bare = bare;
    return WD_OK;
}

wd_status wd_nersc_read_stream(FILE *f, const char *name, const int expect_dims[4],
                               unsigned flags, size_t max_volume, double **u,
                               wd_gauge_info *info_out)
{
    wd_gauge_info scratch;
    wd_gauge_info *info = info_out ? info_out : &scratch;
    wd_io_data data;
    wd_status st = wd_nersc_read_header(f, name, expect_dims, max_volume, info, &data);
    if (st != WD_OK)
        return st;
    const size_t volume = wd_volume(info->dims);
    double *field = malloc(volume * 72 * sizeof *field);
    if (!field)
        return wd_io_fail(WD_ERR_NOMEM, name, "no memory for %zu sites", volume);
    uint32_t got = 0, swapped = 0;
    st = wd_io_decode_stream(f, name, "data", data.offset, 0, field, volume, volume,
                             &data.layout, &got, &swapped, NULL, NULL);
    if (st == WD_OK && wd_nersc_little_after_all(info, &data, got, swapped)) {
        got = 0;
        st = wd_io_decode_stream(f, name, "data", data.offset, 0, field, volume, volume,
                                 &data.layout, &got, NULL, NULL, NULL);
    }
    info->checksum_data = got;
    const int report_only = (flags & WD_GAUGE_READ_REPORT_ONLY) != 0;
    if (st == WD_OK)
        st = wd_io_check_sums(name, info, report_only);
    if (st == WD_OK)
        st = wd_io_check_field(name, field, info->dims, info, report_only, "PLAQUETTE",
                               "LINK_TRACE");
    if (st != WD_OK) {
        free(field);
        return st;
    }
    if (info->precision == 32) {
#pragma omp parallel for schedule(static)
        for (size_t l = 0; l < 4 * volume; l++)
            wd_su3_reunitarize(field + 18 * l);
    }
    *u = field;
    return WD_OK;
}

/* the time of writing, or SOURCE_DATE_EPOCH's when it holds one (for
 * files that must compare byte for byte: reproducible-builds.org) */
static time_t creation_time(void)
{
    const char *e = getenv("SOURCE_DATE_EPOCH");
    if (e && *e) {
        char *end;
        errno = 0;
        const long long v = strtoll(e, &end, 10);
        if (!*end && !errno && v >= 0)
            return (time_t)v;
    }
    return time(NULL);
}

wd_status wd_nersc_write_stream(FILE *f, const char *path, void *vjob)
{
    const wd_io_write_job *job = vjob;
    const wd_gauge_write_opts *o = job->opts;
    const wd_io_layout layout = {o->two_row ? 2 : 3, o->precision / 8, !o->little_endian};
    const size_t slice_sites = wd_volume(job->dims) / (size_t)job->dims[3];
    const size_t site_bytes = wd_io_site_bytes(&layout);
    enum { CHUNK = 1024 };
    unsigned char *buf = malloc(CHUNK * site_bytes);
    if (!buf)
        return wd_io_fail(WD_ERR_NOMEM, path, "no memory for a write buffer");

    /* the checksum heads the file: one encoding pass to sum (unless the
     * caller summed already), one to write */
    wd_status st = WD_OK;
    uint32_t sum = job->sum;
    for (int t = 0; t < job->dims[3] && !job->have_sum; t++) {
        const double *u = job->u + 72 * slice_sites * (size_t)t;
        for (size_t site = 0; site < slice_sites; site += CHUNK) {
            const size_t n = slice_sites - site < CHUNK ? slice_sites - site : CHUNK;
            wd_io_encode_sites(buf, u + 72 * site, n, &layout, &sum);
        }
    }

    struct utsname un;
    char hardware[200] = "unknown";
    if (uname(&un) == 0)
        snprintf(hardware, sizeof hardware, "%s-%s-%s", un.nodename, un.machine, un.sysname);
    char date[64] = "unknown";
    const time_t now = creation_time();
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", &tm);
    char ensemble[128];
    wd_io_printable(ensemble, sizeof ensemble, o->ensemble_id ? o->ensemble_id : "wdirac",
                    sizeof ensemble);

    fprintf(f, "BEGIN_HEADER\n"
               "HDR_VERSION = 1.0\n"
               "DATATYPE = %s\n"
               "STORAGE_FORMAT = 1.0\n",
            o->two_row ? "4D_SU3_GAUGE" : "4D_SU3_GAUGE_3x3");
    for (int mu = 0; mu < 4; mu++)
        fprintf(f, "DIMENSION_%d = %d\n", mu + 1, job->dims[mu]);
    fprintf(f, "LINK_TRACE = %.17g\n"
               "PLAQUETTE = %.17g\n",
            job->obs.link_trace, job->obs.plaquette);
    for (int mu = 0; mu < 4; mu++)
        fprintf(f, "BOUNDARY_%d = PERIODIC\n", mu + 1);
    fprintf(f, "CHECKSUM = %08x\n"
               "ENSEMBLE_ID = %s\n"
               "ENSEMBLE_LABEL = quenched Wilson\n"
               "SEQUENCE_NUMBER = %u\n"
               "CREATOR = wdirac\n"
               "CREATOR_HARDWARE = %s\n"
               "CREATION_DATE = %s\n"
               "ARCHIVE_DATE = %s\n"
               "FLOATING_POINT = IEEE%d%s\n"
               "END_HEADER\n",
            sum, ensemble, (unsigned)o->sequence_number, hardware, date, date, o->precision,
            o->little_endian ? "LITTLE" : "BIG");

    uint32_t again = 0;
    for (int t = 0; t < job->dims[3] && st == WD_OK; t++) {
        const double *u;
        if ((st = wd_io_job_slice(job, t, &u)) != WD_OK)
            break;
        for (size_t site = 0; site < slice_sites && st == WD_OK; site += CHUNK) {
            const size_t n = slice_sites - site < CHUNK ? slice_sites - site : CHUNK;
            wd_io_encode_sites(buf, u + 72 * site, n, &layout, &again);
            if (fwrite(buf, site_bytes, n, f) != n)
                st = wd_io_fail(WD_ERR_IO, path, "write failed at site %zu: %s",
                                slice_sites * (size_t)t + site, strerror(errno));
        }
    }
    free(buf);
    if (st == WD_OK && ferror(f))
        st = wd_io_fail(WD_ERR_IO, path, "write failed: %s", strerror(errno));
    return st;
}
