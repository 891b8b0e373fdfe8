/*
 * test_gauge_io.c: NERSC and ILDG/LIME gauge files (runtime/gauge_io*.c).
 * One line per check; "N of M failed" last; exit 0 when all pass.
 *
 *   test_gauge_io [--seed N]     (default seed: the time, printed)
 *
 * Files go to a fresh directory under $TMPDIR (or /tmp), removed at the end.
 * Checks:
 *   round trips   NERSC 3x3 64-bit (both byte orders) and ILDG 64-bit give
 *                 the links back bit for bit; two-row 64-bit within 1e-15,
 *                 32-bit within 1e-6 (float rounding, then reunitarized);
 *                 NERSC -> ILDG -> NERSC gives the same links and checksum
 *   independent   files encoded here, by code that shares nothing with the
 *                 library, read back: NERSC both byte orders, 32 and 64
 *                 bits, two-row; bare IEEE32/IEEE64; an ILDG file with its
 *                 records out of the usual order, an unknown record, XML
 *                 with a namespace prefix and a trailing NUL; and the
 *                 library's files checked here: the NERSC CHECKSUM and the
 *                 scidac-checksum recomputed from the bytes (zlib crc32)
 *   corruption    truncated, oversized, wrong or odd extents, unknown
 *                 DATATYPE / FLOATING_POINT, checksum, flipped data bit,
 *                 plaquette, link trace, non-unitary link, NaN, missing
 *                 keys, broken header lines, LIME magic / version / length
 *                 / missing records / bad XML / scidac-checksum: each gives
 *                 the right status, a message naming the file and the
 *                 field, and leaves the caller's pointer alone
 *   writing       an existing file is not overwritten without overwrite
 *                 (same bytes after, no temporary left); overwrite replaces;
 *                 a NaN or non-SU(3) field, bad options, a missing directory
 *                 are refused and create nothing
 */
#include <complex.h>
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "gauge_tools.h"
#include "wdirac_gauge.h"

static int checks_run, checks_failed;
static char dir[512];

static void check(const char *what, int ok, const char *detail)
{
    checks_run++;
    checks_failed += !ok;
    printf("%-64s %s%s%s\n", what, ok ? "OK" : "FAIL", detail ? "  " : "", detail ? detail : "");
}

/* a name in the test directory; the result lives until 8 more calls */
static const char *path(const char *name)
{
    static char buf[8][600];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static unsigned char *slurp(const char *p, size_t *n)
{
    FILE *f = fopen(p, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    rewind(f);
    unsigned char *b = malloc(*n + 1);
    if (!b || fread(b, 1, *n, f) != *n) {
        fclose(f);
        free(b);
        return NULL;
    }
    fclose(f);
    return b;
}

static void spit(const char *p, const void *b, size_t n)
{
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(b, 1, n, f) != n) {
        fprintf(stderr, "test_gauge_io: cannot write %s\n", p);
        exit(1);
    }
    fclose(f);
}

static double max_diff(const double *a, const double *b, size_t n)
{
    double d = 0;
    for (size_t k = 0; k < n; k++)
        d = fmax(d, fabs(a[k] - b[k]));
    return d;
}

static double unitarity(const double *u, size_t nlinks)
{
    return wd_su3_unitarity_error((const double complex *)(const void *)u, nlinks);
}

/* ---------------------------------------------------------------------- */
/* an encoder written from the format descriptions                         */

static void put_bits(unsigned char *p, uint64_t bits, int bytes, int big)
{
    for (int k = 0; k < bytes; k++)
        p[big ? bytes - 1 - k : k] = (unsigned char)(bits >> (8 * k));
}

/* the stored data of u: rows per link, 4 or 8 bytes per real; *sum gets the
 * 32-bit sum of the words of each real's bit pattern */
static unsigned char *encode(const double *u, size_t volume, int rows, int bytes, int big,
                             size_t *n, uint32_t *sum)
{
    *n = volume * 4 * (size_t)rows * 6 * (size_t)bytes;
    unsigned char *b = malloc(*n), *p = b;
    uint32_t s = 0;
    for (size_t l = 0; l < 4 * volume; l++)
        for (int k = 0; k < 6 * rows; k++) {
            const double x = u[18 * l + (size_t)k];
            uint64_t bits;
            if (bytes == 4) {
                const float f = (float)x;
                uint32_t w;
                memcpy(&w, &f, 4);
                bits = w;
                s += w;
            } else {
                memcpy(&bits, &x, 8);
                s += (uint32_t)bits + (uint32_t)(bits >> 32);
            }
            put_bits(p, bits, bytes, big);
            p += bytes;
        }
    *sum = s;
    return b;
}

typedef struct craft {
    const char *datatype;     /* NULL: from rows */
    const char *fp;           /* NULL: from bytes and big */
    int rows, bytes, big;
    int hdims[4];             /* extents written in the header (0: the real ones) */
    uint32_t checksum_delta;
    double plaq_delta, trace_delta;
    int no_plaquette, no_checksum;
    const char *extra_line;   /* an additional header line */
} craft;

static void craft_nersc(const char *p, const double *u, const int dims[4], craft c)
{
    size_t n;
    uint32_t sum;
    const size_t volume = wd_volume(dims);
    unsigned char *data = encode(u, volume, c.rows, c.bytes, c.big, &n, &sum);
    wd_gauge_obs o;
    memset(&o, 0, sizeof o);
    wd_gauge_observables(u, dims, &o);
    char hdr[2048];
    int len = snprintf(hdr, sizeof hdr, "BEGIN_HEADER\nHDR_VERSION = 1.0\nDATATYPE = %s\n",
                       c.datatype ? c.datatype : c.rows == 2 ? "4D_SU3_GAUGE" : "4D_SU3_GAUGE_3x3");
    for (int mu = 0; mu < 4; mu++)
        len += snprintf(hdr + len, sizeof hdr - (size_t)len, "DIMENSION_%d = %d\n", mu + 1,
                        c.hdims[mu] ? c.hdims[mu] : dims[mu]);
    if (!c.no_checksum)
        len += snprintf(hdr + len, sizeof hdr - (size_t)len, "CHECKSUM = %x\n",
                        sum + c.checksum_delta);
    if (!c.no_plaquette)
        len += snprintf(hdr + len, sizeof hdr - (size_t)len,
                        "LINK_TRACE =  %.10f\nPLAQUETTE  =  %.10f\n", o.link_trace + c.trace_delta,
                        o.plaquette + c.plaq_delta);
    if (c.extra_line)
        len += snprintf(hdr + len, sizeof hdr - (size_t)len, "%s\n", c.extra_line);
    char fp[32];
    snprintf(fp, sizeof fp, "IEEE%d%s", 8 * c.bytes, c.big ? "BIG" : "LITTLE");
    len += snprintf(hdr + len, sizeof hdr - (size_t)len,
                    "BOUNDARY_1 = PERIODIC\nFLOATING_POINT = %s\nEND_HEADER\n", c.fp ? c.fp : fp);
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(hdr, 1, (size_t)len, f) != (size_t)len || fwrite(data, 1, n, f) != n)
        exit(1);
    fclose(f);
    free(data);
}

static craft plain(int rows, int bytes, int big)
{
    craft c;
    memset(&c, 0, sizeof c);
    c.rows = rows, c.bytes = bytes, c.big = big;
    return c;
}

/* LIME records written by hand */
typedef struct rec {
    const char *type;
    const void *data;
    size_t len;
} rec;

static void lime_file(const char *p, const rec *r, int n, int version)
{
    FILE *f = fopen(p, "wb");
    if (!f)
        exit(1);
    for (int k = 0; k < n; k++) {
        unsigned char h[144] = {0};
        put_bits(h, 0x456789abu, 4, 1);
        put_bits(h + 4, (uint64_t)version, 2, 1);
        h[6] = (unsigned char)((k == 0 ? 0x80 : 0) | (k == n - 1 ? 0x40 : 0));
        put_bits(h + 8, r[k].len, 8, 1);
        memcpy(h + 16, r[k].type, strlen(r[k].type));
        fwrite(h, 1, 144, f);
        fwrite(r[k].data, 1, r[k].len, f);
        static const unsigned char zero[8];
        fwrite(zero, 1, (8 - r[k].len % 8) % 8, f);
    }
    fclose(f);
}

static void scidac(const unsigned char *data, size_t volume, size_t site_bytes, uint32_t *a,
                   uint32_t *b)
{
    *a = *b = 0;
    for (size_t s = 0; s < volume; s++) {
        const uint32_t c = (uint32_t)crc32(0, data + s * site_bytes, (uInt)site_bytes);
        const unsigned ra = (unsigned)(s % 29), rb = (unsigned)(s % 31);
        *a ^= ra ? (c << ra) | (c >> (32 - ra)) : c;
        *b ^= rb ? (c << rb) | (c >> (32 - rb)) : c;
    }
}

/* ---------------------------------------------------------------------- */

static const int DIMS[4] = {4, 6, 4, 8};
static double *U;          /* the test field */
static size_t NDOUBLE;     /* 72 V */

/* read expecting failure: status, every word of `needles` in the message
 * (with the file name), the caller's pointer untouched */
static void expect_fail(const char *what, const char *p, const int *expect_dims,
                        wd_status want, const char *needle)
{
    double *sentinel = (double *)(uintptr_t)0x5ea1;
    double *u = sentinel;
    const wd_status st = wd_gauge_read(p, expect_dims, 0, &u, NULL);
    const char *msg = wd_last_error();
    const char *base = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
    const int ok = st == want && u == sentinel && strstr(msg, needle) &&
                   (want == WD_ERR_INVALID || strstr(msg, base));
    char detail[700];
    snprintf(detail, sizeof detail, "[%s] %s", wd_status_string(st), msg);
    check(what, ok, detail);
    if (u != sentinel)
        free(u);
}

static double *read_ok(const char *what, const char *p, wd_gauge_info *info)
{
    double *u = NULL;
    const wd_status st = wd_gauge_read(p, DIMS, 0, &u, info);
    if (st != WD_OK) {
        char detail[600];
        snprintf(detail, sizeof detail, "[%s] %s", wd_status_string(st), wd_last_error());
        check(what, 0, detail);
        return NULL;
    }
    return u;
}

static void round_trip(const char *name, wd_gauge_write_opts o, double tol)
{
    char what[160], detail[160];
    o.overwrite = 1;
    const wd_status st = wd_gauge_write(path(name), U, DIMS, &o);
    if (st != WD_OK) {
        snprintf(what, sizeof what, "round trip %s: write", name);
        check(what, 0, wd_last_error());
        return;
    }
    wd_gauge_info info;
    snprintf(what, sizeof what, "round trip %s", name);
    double *u = read_ok(what, path(name), &info);
    if (!u)
        return;
    const double d = max_diff(u, U, NDOUBLE);
    if (tol == 0) {
        snprintf(detail, sizeof detail, "bitwise; plaquette %.12f", info.obs.plaquette);
        snprintf(what, sizeof what, "round trip %s: links bit for bit", name);
        check(what, !memcmp(u, U, NDOUBLE * sizeof *u), detail);
    } else {
        snprintf(detail, sizeof detail, "max |dU| %.2e tol %.0e, unitarity %.1e", d, tol,
                 unitarity(u, NDOUBLE / 18));
        snprintf(what, sizeof what, "round trip %s: links within rounding", name);
        check(what, d <= tol && unitarity(u, NDOUBLE / 18) < 1e-14, detail);
    }
    snprintf(what, sizeof what, "round trip %s: info (dims, precision, checks)", name);
    const int info_ok = !memcmp(info.dims, DIMS, sizeof DIMS) && info.precision == o.precision &&
                        info.has_plaquette && info.has_link_trace &&
                        fabs(info.plaquette_header - info.obs.plaquette) <= info.tolerance &&
                        (o.format == WD_GAUGE_ILDG
                             ? info.has_scidac && info.suma_header == info.suma_data
                             : info.has_checksum && info.checksum_header == info.checksum_data);
    check(what, info_ok, NULL);
    free(u);
}

static void test_round_trips(void)
{
    wd_gauge_write_opts o = wd_gauge_write_defaults();
    round_trip("n3x3_64_be", o, 0);
    o.little_endian = 1;
    round_trip("n3x3_64_le", o, 0);
    o.two_row = 1;
    round_trip("n2row_64_le", o, 1e-15);
    o.little_endian = 0;
    round_trip("n2row_64_be", o, 1e-15);
    o.precision = 32;
    round_trip("n2row_32_be", o, 1e-6);
    o.two_row = 0;
    round_trip("n3x3_32_be", o, 1e-6);
    o.little_endian = 1;
    round_trip("n3x3_32_le", o, 1e-6);
    o = wd_gauge_write_defaults();
    o.format = WD_GAUGE_ILDG;
    round_trip("ildg_64", o, 0);
    o.precision = 32;
    round_trip("ildg_32", o, 1e-6);

    /* NERSC -> ILDG -> NERSC */
    wd_gauge_info i1, i2;
    double *a = read_ok("nersc->ildg->nersc: read NERSC", path("n3x3_64_be"), &i1);
    if (!a)
        return;
    o = wd_gauge_write_defaults();
    o.format = WD_GAUGE_ILDG;
    o.overwrite = 1;
    wd_status st = wd_gauge_write(path("conv.ildg"), a, DIMS, &o);
    double *b = st == WD_OK ? read_ok("nersc->ildg->nersc: read ILDG", path("conv.ildg"), NULL)
                            : NULL;
    o = wd_gauge_write_defaults();
    o.overwrite = 1;
    if (b)
        st = wd_gauge_write(path("conv.nersc"), b, DIMS, &o);
    double *c = b && st == WD_OK ? read_ok("nersc->ildg->nersc: read NERSC again",
                                           path("conv.nersc"), &i2)
                                 : NULL;
    check("nersc->ildg->nersc: same links bit for bit, same CHECKSUM",
          c && !memcmp(a, c, NDOUBLE * sizeof *a) && i1.checksum_data == i2.checksum_data &&
              i2.checksum_header == i1.checksum_header,
          st == WD_OK ? NULL : wd_last_error());
    free(a);
    free(b);
    free(c);
}

/* ---------------------------------------------------------------------- */

/* the library's files, checked by this file's own reading of the formats */
static void test_writer_independently(void)
{
    size_t n;
    unsigned char *f = slurp(path("n3x3_64_be"), &n);
    const unsigned char *end = f ? (const unsigned char *)strstr((const char *)f, "END_HEADER\n")
                                 : NULL;
    uint32_t want = 0, sum = 0;
    int ok = 0;
    if (end) {
        const char *cs = strstr((const char *)f, "CHECKSUM = ");
        want = (uint32_t)strtoul(cs + 11, NULL, 16);
        const unsigned char *d = end + 11;
        ok = (size_t)(f + n - d) == NDOUBLE * 8;
        for (const unsigned char *p = d; p + 4 <= f + n; p += 4)
            sum += (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
        /* and the first real is U[0] in big-endian IEEE 754 */
        uint64_t bits;
        memcpy(&bits, &U[0], 8);
        for (int k = 0; k < 8; k++)
            ok &= d[k] == (unsigned char)(bits >> (56 - 8 * k));
    }
    char detail[120];
    snprintf(detail, sizeof detail, "header %08x, words of the data as stored %08x", want, sum);
    check("writer: NERSC CHECKSUM = 32-bit word sum, data big endian", ok && want == sum, detail);
    free(f);

    f = slurp(path("ildg_64"), &n);
    size_t pos = 0;
    const unsigned char *bin = NULL;
    size_t binlen = 0;
    uint32_t suma = 0, sumb = 0;
    int types = 0;
    while (f && pos + 144 <= n) {
        const uint64_t len = ((uint64_t)f[pos + 8] << 56) | ((uint64_t)f[pos + 9] << 48) |
                             ((uint64_t)f[pos + 10] << 40) | ((uint64_t)f[pos + 11] << 32) |
                             ((uint64_t)f[pos + 12] << 24) | ((uint64_t)f[pos + 13] << 16) |
                             ((uint64_t)f[pos + 14] << 8) | f[pos + 15];
        const char *type = (const char *)f + pos + 16;
        const char *data = (const char *)f + pos + 144;
        if (!strcmp(type, "ildg-binary-data"))
            bin = (const unsigned char *)data, binlen = len, types |= 1;
        if (!strcmp(type, "scidac-checksum")) {
            const char *sa = strstr(data, "<suma>"), *sb = strstr(data, "<sumb>");
            if (sa && sb)
                suma = (uint32_t)strtoul(sa + 6, NULL, 16), sumb = (uint32_t)strtoul(sb + 6, NULL, 16);
            types |= 2;
        }
        if (!strcmp(type, "ildg-format") && strstr(data, "<precision>64</precision>") &&
            strstr(data, "<lx>4</lx>") && strstr(data, "<ly>6</ly>") && strstr(data, "<lt>8</lt>"))
            types |= 4;
        pos += 144 + ((len + 7) & ~7ull);
    }
    uint32_t a = 1, b = 1;
    if (bin && binlen == NDOUBLE * 8)
        scidac(bin, NDOUBLE / 72, 72 * 8, &a, &b);
    snprintf(detail, sizeof detail, "record suma %08x sumb %08x, recomputed %08x %08x", suma,
             sumb, a, b);
    check("writer: ILDG records, ildg-format XML, scidac-checksum (crc32)",
          types == 7 && pos == n && a == suma && b == sumb, detail);
    free(f);
}

static void test_independent_files(void)
{
    char detail[200];
    wd_gauge_info info;
    double *u;

    craft_nersc(path("c_be64"), U, DIMS, plain(3, 8, 1));
    u = read_ok("independent NERSC 3x3 IEEE64BIG", path("c_be64"), NULL);
    check("independent NERSC 3x3 IEEE64BIG: links bit for bit", u && !memcmp(u, U, NDOUBLE * 8), NULL);
    free(u);

    craft_nersc(path("c_le32_2row"), U, DIMS, plain(2, 4, 0));
    u = read_ok("independent NERSC 4D_SU3_GAUGE IEEE32LITTLE", path("c_le32_2row"), NULL);
    snprintf(detail, sizeof detail, "max |dU| %.2e", u ? max_diff(u, U, NDOUBLE) : -1.0);
    check("independent NERSC 4D_SU3_GAUGE IEEE32LITTLE: links", u && max_diff(u, U, NDOUBLE) < 1e-6,
          detail);
    free(u);

    craft c = plain(3, 8, 0);
    c.fp = "IEEE64";
    craft_nersc(path("c_bare64_le"), U, DIMS, c);
    u = read_ok("independent bare IEEE64, little-endian data", path("c_bare64_le"), &info);
    check("independent bare IEEE64, little-endian data: read as little",
          u && !info.big_endian && !memcmp(u, U, NDOUBLE * 8), NULL);
    free(u);
    c = plain(3, 4, 1);
    c.fp = "IEEE32";
    craft_nersc(path("c_bare32_be"), U, DIMS, c);
    u = read_ok("independent bare IEEE32, big-endian data", path("c_bare32_be"), &info);
    check("independent bare IEEE32, big-endian data: read as big",
          u && info.big_endian && max_diff(u, U, NDOUBLE) < 1e-6, NULL);
    free(u);

    /* ILDG: records out of the usual order, an unknown record, namespaced
     * XML with a trailing NUL, checksums in 0x form */
    size_t n;
    uint32_t s, a, b;
    unsigned char *data = encode(U, NDOUBLE / 72, 3, 8, 1, &n, &s);
    scidac(data, NDOUBLE / 72, 72 * 8, &a, &b);
    char fmt[600], sum[300];
    const int flen = snprintf(fmt, sizeof fmt,
        "<?xml version=\"1.0\"?><i:ildgFormat xmlns:i=\"http://www.lqcd.org/ildg\">"
        "<i:version>1.0</i:version><i:field> su3gauge </i:field><i:precision>64</i:precision>"
        "<i:lx>%d</i:lx><i:ly>%d</i:ly><i:lz>%d</i:lz><i:lt>%d</i:lt></i:ildgFormat>",
        DIMS[0], DIMS[1], DIMS[2], DIMS[3]) + 1;
    snprintf(sum, sizeof sum, "<?xml version=\"1.0\" encoding=\"UTF-8\"?><scidacChecksum>"
             "<version>1.0</version><suma>%#010x</suma><sumb>%#010x</sumb></scidacChecksum>", a, b);
    const rec shuffled[] = {{"some-private-record", "whatever\n", 9},
                            {"ildg-binary-data", data, n},
                            {"scidac-checksum", sum, strlen(sum)},
                            {"ildg-format", fmt, (size_t)flen},
                            {"ildg-data-lfn", "lfn://x", 7}};
    lime_file(path("c_ildg"), shuffled, 5, 1);
    u = read_ok("independent ILDG, records shuffled, namespaced XML", path("c_ildg"), &info);
    check("independent ILDG: links bit for bit, scidac-checksum checked",
          u && info.has_scidac && !memcmp(u, U, NDOUBLE * 8), NULL);
    free(u);

    /* corruptions of hand-made LIME files */
    lime_file(path("l_noformat"), shuffled, 3, 1);
    expect_fail("LIME without ildg-format", path("l_noformat"), NULL, WD_ERR_CORRUPT,
                "no ildg-format");
    lime_file(path("l_version"), shuffled, 5, 2);
    expect_fail("LIME version 2", path("l_version"), NULL, WD_ERR_CORRUPT, "version");
    rec bad[5];
    memcpy(bad, shuffled, sizeof bad);
    bad[3].data = "<ildgFormat><field>su3gauge</field><precision>64</precision><lx>4</lx>";
    bad[3].len = strlen(bad[3].data);
    lime_file(path("l_xml"), bad, 5, 1);
    expect_fail("LIME ildg-format not well-formed XML", path("l_xml"), NULL, WD_ERR_CORRUPT,
                "not well-formed");
    char alt[600];
    snprintf(alt, sizeof alt, "<ildgFormat><field>su3gauge</field><precision>48</precision>"
             "<lx>4</lx><ly>6</ly><lz>4</lz><lt>8</lt></ildgFormat>");
    bad[3].data = alt, bad[3].len = strlen(alt);
    lime_file(path("l_prec"), bad, 5, 1);
    expect_fail("LIME precision 48", path("l_prec"), NULL, WD_ERR_CORRUPT, "precision");
    snprintf(alt, sizeof alt, "<ildgFormat><field>su2gauge</field><precision>64</precision>"
             "<lx>4</lx><ly>6</ly><lz>4</lz><lt>8</lt></ildgFormat>");
    lime_file(path("l_field"), bad, 5, 1);
    expect_fail("LIME field su2gauge", path("l_field"), NULL, WD_ERR_CORRUPT, "<field>");
    snprintf(alt, sizeof alt, "<ildgFormat><field>su3gauge</field><precision>64</precision>"
             "<lx>4</lx><ly>6</ly><lz>4</lz><lt>6</lt></ildgFormat>");
    lime_file(path("l_dims"), bad, 5, 1);
    expect_fail("LIME ildg-format lt disagrees with the data length", path("l_dims"), NULL,
                WD_ERR_CORRUPT, "ildg-binary-data holds");
    snprintf(alt, sizeof alt, "<ildgFormat><field>su3gauge</field><precision>64</precision>"
             "<lx>4</lx><ly>6</ly><lz>4</lz></ildgFormat>");
    lime_file(path("l_nolt"), bad, 5, 1);
    expect_fail("LIME ildg-format without <lt>", path("l_nolt"), NULL, WD_ERR_CORRUPT, "<lt>");
    memcpy(bad, shuffled, sizeof bad);
    data[1000] ^= 0x10;
    lime_file(path("l_scidac"), bad, 5, 1);
    expect_fail("LIME flipped data bit: scidac-checksum", path("l_scidac"), NULL, WD_ERR_CORRUPT,
                "scidac-checksum");
    data[1000] ^= 0x10;
    /* a NaN, the checksums made to match so that the NaN itself is caught */
    double *nan_field = malloc(NDOUBLE * 8);
    memcpy(nan_field, U, NDOUBLE * 8);
    nan_field[18 * 4 * 37 + 18 * 2 + 5] = NAN;
    free(data);
    data = encode(nan_field, NDOUBLE / 72, 3, 8, 1, &n, &s);
    scidac(data, NDOUBLE / 72, 72 * 8, &a, &b);
    snprintf(sum, sizeof sum, "<scidacChecksum><suma>%x</suma><sumb>%x</sumb></scidacChecksum>",
             a, b);
    bad[1].data = data;
    bad[2].data = sum, bad[2].len = strlen(sum);
    lime_file(path("l_nan"), bad, 5, 1);
    expect_fail("LIME NaN in a link", path("l_nan"), NULL, WD_ERR_CORRUPT, "NaN");
    free(nan_field);
    free(data);
}

/* ---------------------------------------------------------------------- */

static void truncate_copy(const char *from, const char *to, long delta, const void *append,
                          size_t append_len)
{
    size_t n;
    unsigned char *b = slurp(from, &n);
    if (!b)
        exit(1);
    const size_t keep = (size_t)((long)n + delta);
    unsigned char *c = malloc(keep + append_len);
    memcpy(c, b, keep);
    if (append_len)
        memcpy(c + keep, append, append_len);
    spit(to, c, keep + append_len);
    free(b);
    free(c);
}

static void replace_in_file(const char *from, const char *to, const char *old, const char *new)
{
    size_t n;
    unsigned char *b = slurp(from, &n);
    const size_t ol = strlen(old), nl = strlen(new);
    char *at = NULL;
    for (size_t k = 0; k + ol <= n && !at; k++)
        if (!memcmp(b + k, old, ol))
            at = (char *)b + k;
    if (!at) {
        fprintf(stderr, "test_gauge_io: '%s' not in %s\n", old, from);
        exit(1);
    }
    const size_t pre = (size_t)(at - (char *)b);
    unsigned char *c = malloc(n - ol + nl);
    memcpy(c, b, pre);
    memcpy(c + pre, new, nl);
    memcpy(c + pre + nl, b + pre + ol, n - pre - ol);
    spit(to, c, n - ol + nl);
    free(b);
    free(c);
}

static void test_corruption(void)
{
    char good[600];
    snprintf(good, sizeof good, "%s", path("n3x3_64_be"));
    size_t n;

    truncate_copy(good, path("x_trunc"), -100, NULL, 0);
    expect_fail("NERSC truncated by 100 bytes", path("x_trunc"), NULL, WD_ERR_CORRUPT, "truncated");
    truncate_copy(good, path("x_long"), 0, "garbage!", 8);
    expect_fail("NERSC 8 bytes too long", path("x_long"), NULL, WD_ERR_CORRUPT, "8 bytes more");
    replace_in_file(good, path("x_dim"), "DIMENSION_2 = 6", "DIMENSION_2 = 8");
    expect_fail("NERSC DIMENSION_2 wrong (8 for 6)", path("x_dim"), NULL, WD_ERR_CORRUPT, "truncated");
    const int other[4] = {4, 8, 4, 8};
    expect_fail("NERSC DIMENSION_2 = 6 where 8 expected", good, other, WD_ERR_INVALID,
                "DIMENSION_2 = 6, expected 8");
    replace_in_file(good, path("x_odd"), "DIMENSION_2 = 6", "DIMENSION_2 = 5");
    expect_fail("NERSC odd DIMENSION_2", path("x_odd"), NULL, WD_ERR_CORRUPT, "DIMENSION_1..4");
    replace_in_file(good, path("x_dimtext"), "DIMENSION_2 = 6", "DIMENSION_2 = six");
    expect_fail("NERSC DIMENSION_2 = six", path("x_dimtext"), NULL, WD_ERR_CORRUPT, "DIMENSION_2");
    replace_in_file(good, path("x_type"), "4D_SU3_GAUGE_3x3", "4D_SU3_GAUGE_4x4");
    expect_fail("NERSC unknown DATATYPE", path("x_type"), NULL, WD_ERR_CORRUPT, "unknown DATATYPE");
    replace_in_file(good, path("x_fp"), "IEEE64BIG", "IEEE16BIG");
    expect_fail("NERSC unknown FLOATING_POINT", path("x_fp"), NULL, WD_ERR_CORRUPT,
                "unknown FLOATING_POINT");
    replace_in_file(good, path("x_nodt"), "DATATYPE", "DATA_TYPE");
    expect_fail("NERSC without DATATYPE", path("x_nodt"), NULL, WD_ERR_CORRUPT, "no DATATYPE");
    replace_in_file(good, path("x_endx"), "END_HEADER", "END_HEADEX");
    expect_fail("NERSC END_HEADEX for END_HEADER", path("x_endx"), NULL, WD_ERR_CORRUPT,
                "'END_HEADEX' is not KEY = VALUE");
    spit(path("x_noend"), "BEGIN_HEADER\nDATATYPE = 4D_SU3_GAUGE\n", 36);
    expect_fail("NERSC header without END_HEADER", path("x_noend"), NULL, WD_ERR_CORRUPT,
                "without an END_HEADER");
    replace_in_file(good, path("x_line"), "STORAGE_FORMAT = 1.0", "STORAGE_FORMAT 1.0");
    expect_fail("NERSC header line without =", path("x_line"), NULL, WD_ERR_CORRUPT,
                "not KEY = VALUE");
    replace_in_file(good, path("x_begin"), "BEGIN_HEADER", "BEGIN_HEADERS");
    expect_fail("NERSC first line not BEGIN_HEADER", path("x_begin"), NULL, WD_ERR_CORRUPT,
                "BEGIN_HEADER");
    replace_in_file(good, path("x_plaqtext"), "PLAQUETTE = 0", "PLAQUETTE = x0");
    expect_fail("NERSC PLAQUETTE not a number", path("x_plaqtext"), NULL, WD_ERR_CORRUPT,
                "PLAQUETTE");

    craft c = plain(3, 8, 1);
    c.checksum_delta = 1;
    craft_nersc(path("x_sum"), U, DIMS, c);
    expect_fail("NERSC CHECKSUM off by one", path("x_sum"), NULL, WD_ERR_CORRUPT, "CHECKSUM");
    c = plain(3, 8, 1);
    c.no_checksum = 1;
    craft_nersc(path("x_nosum"), U, DIMS, c);
    expect_fail("NERSC without CHECKSUM", path("x_nosum"), NULL, WD_ERR_CORRUPT, "no CHECKSUM");
    unsigned char *b = slurp(good, &n);
    b[n - 5000] ^= 0x01;
    spit(path("x_bit"), b, n);
    free(b);
    expect_fail("NERSC flipped data bit", path("x_bit"), NULL, WD_ERR_CORRUPT, "CHECKSUM");
    c = plain(3, 8, 1);
    c.plaq_delta = 1e-4;
    craft_nersc(path("x_plaq"), U, DIMS, c);
    expect_fail("NERSC PLAQUETTE off by 1e-4", path("x_plaq"), NULL, WD_ERR_CORRUPT, "PLAQUETTE");
    c = plain(3, 4, 1);
    c.plaq_delta = 2e-6;
    craft_nersc(path("x_plaq32"), U, DIMS, c);
    double *u = read_ok("NERSC 32-bit PLAQUETTE off by 2e-6: within 1e-5", path("x_plaq32"), NULL);
    check("NERSC 32-bit PLAQUETTE off by 2e-6: accepted (tolerance 1e-5)", u != NULL, NULL);
    free(u);
    c = plain(3, 8, 1);
    c.plaq_delta = 2e-6;
    craft_nersc(path("x_plaq64"), U, DIMS, c);
    expect_fail("NERSC 64-bit PLAQUETTE off by 2e-6 (tolerance 1e-6)", path("x_plaq64"), NULL,
                WD_ERR_CORRUPT, "PLAQUETTE");
    c = plain(2, 8, 0);
    c.trace_delta = -1e-3;
    craft_nersc(path("x_trace"), U, DIMS, c);
    expect_fail("NERSC LINK_TRACE off by 1e-3", path("x_trace"), NULL, WD_ERR_CORRUPT, "LINK_TRACE");

    double *v = malloc(NDOUBLE * 8);
    memcpy(v, U, NDOUBLE * 8);
    /* link mu=2 of site (1,2,0,3): scaled by 1.001 */
    const size_t site = 1 + 4 * (2 + 6 * (0 + 4 * 3));
    for (int k = 0; k < 18; k++)
        v[18 * (4 * site + 2) + (size_t)k] *= 1.001;
    craft_nersc(path("x_unit"), v, DIMS, plain(3, 8, 1));
    expect_fail("NERSC non-unitary link", path("x_unit"), NULL, WD_ERR_CORRUPT,
                "mu=2 at (x,y,z,t) = (1,2,0,3) is not SU(3)");
    memcpy(v, U, NDOUBLE * 8);
    v[18 * (4 * site + 1) + 3] = NAN;
    c = plain(3, 8, 1);
    c.no_plaquette = 1;
    craft_nersc(path("x_nan"), v, DIMS, c);
    expect_fail("NERSC NaN in a link", path("x_nan"), NULL, WD_ERR_CORRUPT,
                "mu=1 at (x,y,z,t) = (1,2,0,3) holds a NaN");
    free(v);

    /* report-only reads record the mismatch and succeed */
    wd_gauge_info info;
    u = NULL;
    wd_status st = wd_gauge_read(path("x_sum"), NULL, WD_GAUGE_READ_REPORT_ONLY, &u, &info);
    check("NERSC report-only read of a bad CHECKSUM: OK, mismatch recorded",
          st == WD_OK && u && info.checksum_header == info.checksum_data + 1, NULL);
    free(u);

    expect_fail("missing file", path("no_such_file"), NULL, WD_ERR_IO, "cannot open");
    spit(path("x_text"), "hello, world\n", 13);
    expect_fail("not a gauge file", path("x_text"), NULL, WD_ERR_CORRUPT, "neither");
    spit(path("x_empty"), "", 0);
    expect_fail("empty file", path("x_empty"), NULL, WD_ERR_CORRUPT, "neither");

    /* LIME files from the library's writer, damaged */
    char ildg[600];
    snprintf(ildg, sizeof ildg, "%s", path("ildg_64"));
    truncate_copy(ildg, path("l_trunc"), -2000, NULL, 0);
    expect_fail("ILDG truncated", path("l_trunc"), NULL, WD_ERR_CORRUPT, "truncated");
    truncate_copy(ildg, path("l_tail"), 0, "\x45\x67\x89", 3);
    expect_fail("ILDG with 3 stray bytes at the end", path("l_tail"), NULL, WD_ERR_CORRUPT,
                "truncated");
    b = slurp(ildg, &n);
    uint64_t first = 0;
    for (int k = 8; k < 16; k++)
        first = first << 8 | b[k];
    const size_t second = 144 + (size_t)((first + 7) & ~7ull);
    b[second] ^= 0xff;
    spit(path("l_magic"), b, n);
    free(b);
    expect_fail("ILDG second record with a bad magic", path("l_magic"), NULL, WD_ERR_CORRUPT,
                "magic");
    replace_in_file(ildg, path("l_winfo"), "<plaquette>0.", "<plaquette>1.");
    expect_fail("ILDG wdirac-info plaquette wrong", path("l_winfo"), NULL, WD_ERR_CORRUPT,
                "wdirac-info plaquette");
    const int other2[4] = {4, 6, 4, 6};
    expect_fail("ILDG lt = 8 where 6 expected", ildg, other2, WD_ERR_INVALID,
                "ildg-format lt = 8, expected 6");
}

/* ---------------------------------------------------------------------- */

static int temporaries_left(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strstr(e->d_name, ".tmp-") != NULL;
    if (d)
        closedir(d);
    return n;
}

static void test_writing(void)
{
    wd_gauge_write_opts o = wd_gauge_write_defaults();
    char p[600];
    snprintf(p, sizeof p, "%s", path("n3x3_64_be"));
    size_t n1, n2;
    unsigned char *before = slurp(p, &n1);
    double *v = malloc(NDOUBLE * 8);
    wd_gauge_init(v, DIMS, WD_START_COLD, 0);

    wd_status st = wd_gauge_write(p, v, DIMS, &o);
    unsigned char *after = slurp(p, &n2);
    char detail[600];
    snprintf(detail, sizeof detail, "[%s] %s", wd_status_string(st), wd_last_error());
    check("write: existing file without overwrite refused, bytes unchanged",
          st == WD_ERR_IO && strstr(wd_last_error(), "exists") && strstr(wd_last_error(), p) &&
              n1 == n2 && !memcmp(before, after, n1),
          detail);
    free(after);
    o.format = WD_GAUGE_ILDG;
    st = wd_gauge_write(p, v, DIMS, &o);
    after = slurp(p, &n2);
    check("write: ... in either format", st == WD_ERR_IO && n1 == n2 && !memcmp(before, after, n1),
          NULL);
    free(after);

    o = wd_gauge_write_defaults();
    o.overwrite = 1;
    st = wd_gauge_write(p, v, DIMS, &o);
    double *u = st == WD_OK ? read_ok("write: overwrite replaces", p, NULL) : NULL;
    check("write: overwrite replaces the file", u && !memcmp(u, v, NDOUBLE * 8), NULL);
    free(u);
    spit(p, before, n1);
    free(before);

    o = wd_gauge_write_defaults();
    v[100] = NAN;
    st = wd_gauge_write(path("w_nan"), v, DIMS, &o);
    check("write: a field with a NaN is refused, no file",
          st == WD_ERR_INVALID && access(path("w_nan"), F_OK) != 0, wd_last_error());
    wd_gauge_init(v, DIMS, WD_START_COLD, 0);
    v[0] = 1.01;
    st = wd_gauge_write(path("w_unit"), v, DIMS, &o);
    check("write: a non-SU(3) field is refused, no file",
          st == WD_ERR_INVALID && access(path("w_unit"), F_OK) != 0, wd_last_error());
    v[0] = 1;
    o.format = WD_GAUGE_ILDG;
    o.two_row = 1;
    st = wd_gauge_write(path("w_opt"), v, DIMS, &o);
    check("write: ILDG two-row refused", st == WD_ERR_INVALID && access(path("w_opt"), F_OK) != 0,
          wd_last_error());
    o = wd_gauge_write_defaults();
    o.precision = 16;
    st = wd_gauge_write(path("w_opt"), v, DIMS, &o);
    check("write: precision 16 refused", st == WD_ERR_INVALID, wd_last_error());
    const int odd[4] = {4, 6, 5, 8};
    st = wd_gauge_write(path("w_opt"), v, odd, NULL);
    check("write: odd extent refused", st == WD_ERR_INVALID && access(path("w_opt"), F_OK) != 0,
          wd_last_error());
    st = wd_gauge_write(path("no_dir/w"), v, DIMS, NULL);
    check("write: into a missing directory is WD_ERR_IO", st == WD_ERR_IO, wd_last_error());
    check("write: no temporary files left behind", temporaries_left() == 0, NULL);
    free(v);
}

static void remove_dir(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[1200];
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    uint64_t seed = (uint64_t)time(NULL);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
        else {
            fprintf(stderr, "usage: test_gauge_io [--seed N]\n");
            return 2;
        }
    }
    printf("test_gauge_io: seed %llu (replay with --seed %llu)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/wdirac-gauge-io-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("test_gauge_io: mkdtemp");
        return 1;
    }

    NDOUBLE = 72 * wd_volume(DIMS);
    U = malloc(NDOUBLE * sizeof *U);
    if (!U || wd_gauge_init(U, DIMS, WD_START_HOT, seed) != WD_OK)
        return 1;
    for (int s = 0; s < 2; s++)
        if (wd_gauge_heatbath_sweep(U, DIMS, 5.8, seed, (uint64_t)s, 1) != WD_OK)
            return 1;

    test_round_trips();
    test_writer_independently();
    test_independent_files();
    test_corruption();
    test_writing();

    free(U);
    remove_dir();
    printf("%d of %d failed\n", checks_failed, checks_run);
    return checks_failed ? 1 : 0;
}
