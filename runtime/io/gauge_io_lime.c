/*
 * gauge_io_lime.c: ILDG gauge configurations in LIME files.
 *
 * LIME (c-lime 1.x, USQCD): a file is a sequence of records, each a
 * 144-byte header, the data, and zero padding to a multiple of 8 bytes.
 * Header, big endian: bytes 0-3 the magic 0x456789ab, 4-5 the version (1),
 * byte 6 the flags (0x80 message begin, 0x40 message end), 8-15 the data
 * length without padding, 16-143 the record type, NUL-padded ASCII.
 * An ILDG configuration has the records
 *   ildg-format       XML <ildgFormat>: field su3gauge, precision 32 or 64,
 *                     lx ly lz lt
 *   ildg-binary-data  big-endian IEEE reals, the site order of DESIGN.md
 *                     with mu innermost, 3x3 row-major, (re, im)
 *   scidac-checksum   XML <scidacChecksum>: suma, sumb in hex, where every
 *                     site's stored bytes have a CRC32 c (zlib's), and
 *                     suma = XOR over sites of c rotated left by (site mod
 *                     29), sumb the same with 31 (QIO's DML_checksum)
 * and wdirac adds wdirac-info (<wdiracInfo> with plaquette, linkTrace).
 *
 * The externally accessible functions are
 *   wd_ildg_read_stream   walk every record header (checking magic,
 *                         version, lengths against the file size), take the
 *                         first record of each type it needs wherever it
 *                         lies, parse the XML with libxml2, decode and
 *                         check the binary data (size, scidac-checksum if
 *                         present, finiteness, unitarity, wdirac-info)
 *   wd_ildg_write_stream  ildg-format, ildg-binary-data, scidac-checksum,
 *                         wdirac-info, as one LIME message
 * Notes: XML records may end in NUL bytes (some writers count the C
 * string's terminator); the text stops at the first NUL.  Elements are
 * matched by local name, whatever their namespace.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "gauge_io_internal.h"
#include "gauge_tools.h"
#include "heatbath_link.h"

enum { LIME_HEADER = 144, LIME_TYPE = 128, MAX_RECORDS = 4096, XML_MAX = 1 << 20 };
static const uint32_t LIME_MAGIC = 0x456789abu;

typedef struct lime_record {
    char type[LIME_TYPE + 1];
    long long offset;   /* of the data */
    long long length;   /* without padding */
} lime_record;

static uint64_t load_be(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int k = 0; k < bytes; k++)
        v = v << 8 | p[k];
    return v;
}

static void store_be(unsigned char *p, uint64_t v, int bytes)
{
    for (int k = bytes - 1; k >= 0; k--, v >>= 8)
        p[k] = (unsigned char)v;
}

static wd_status scan_records(FILE *f, const char *name, long long size, lime_record **out,
                              int *count)
{
    lime_record *recs = NULL;
    int n = 0, cap = 0;
    long long pos = 0;
    wd_status st = WD_OK;
    if (fseeko(f, 0, SEEK_SET) != 0)
        return wd_io_fail(WD_ERR_IO, name, "cannot seek: %s", strerror(errno));

    while (pos < size) {
        unsigned char h[LIME_HEADER];
        if (size - pos < LIME_HEADER) {
            st = wd_io_fail(WD_ERR_CORRUPT, name, "truncated: LIME record %d at byte %lld has "
                            "%lld of the 144 header bytes", n + 1, pos, size - pos);
            break;
        }
        if (fseeko(f, (off_t)pos, SEEK_SET) != 0 || fread(h, 1, LIME_HEADER, f) != LIME_HEADER) {
            st = wd_io_fail(WD_ERR_IO, name, "cannot read LIME record %d at byte %lld", n + 1,
                            pos);
            break;
        }
        if (load_be(h, 4) != LIME_MAGIC) {
            st = wd_io_fail(WD_ERR_CORRUPT, name, "LIME record %d at byte %lld: magic %08x, "
                            "not 456789ab", n + 1, pos, (unsigned)load_be(h, 4));
            break;
        }
        if (load_be(h + 4, 2) != 1) {
            st = wd_io_fail(WD_ERR_CORRUPT, name, "LIME record %d at byte %lld: version %u, "
                            "wdirac reads version 1", n + 1, pos, (unsigned)load_be(h + 4, 2));
            break;
        }
        if (!memchr(h + 16, 0, LIME_TYPE)) {
            st = wd_io_fail(WD_ERR_CORRUPT, name, "LIME record %d at byte %lld: the type is "
                            "not NUL-terminated within 128 bytes", n + 1, pos);
            break;
        }
        const uint64_t length = load_be(h + 8, 8);
        const long long data = pos + LIME_HEADER;
        if (length > (uint64_t)(size - data)) {
            char type[LIME_TYPE + 1];
            wd_io_printable(type, sizeof type, (const char *)h + 16, LIME_TYPE);
            st = wd_io_fail(WD_ERR_CORRUPT, name, "truncated: LIME record %d '%s' at byte "
                            "%lld declares %llu data bytes, the file has %lld after its header",
                            n + 1, type, pos, (unsigned long long)length, size - data);
            break;
        }
        if (n == MAX_RECORDS) {
            st = wd_io_fail(WD_ERR_CORRUPT, name, "more than %d LIME records", MAX_RECORDS);
            break;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            lime_record *grown = realloc(recs, (size_t)cap * sizeof *recs);
            if (!grown) {
                st = wd_io_fail(WD_ERR_NOMEM, name, "no memory for the record list");
                break;
            }
            recs = grown;
        }
        memcpy(recs[n].type, h + 16, LIME_TYPE);
        recs[n].type[LIME_TYPE] = 0;
        recs[n].offset = data;
        recs[n].length = (long long)length;
        n++;
        /* the last record's padding may be missing at the end of the file */
        const long long next = data + (long long)((length + 7) & ~(uint64_t)7);
        pos = next < size ? next : size;
    }
    if (st != WD_OK) {
        free(recs);
        return st;
    }
    *out = recs;
    *count = n;
    return WD_OK;
}

static const lime_record *find_record(const lime_record *recs, int n, const char *type)
{
    for (int k = 0; k < n; k++)
        if (!strcmp(recs[k].type, type))
            return &recs[k];
    return NULL;
}

/* one element of an XML record that the reader wants */
typedef struct xml_item {
    const char *element;
    char value[64];
    int seen;
} xml_item;

static wd_status parse_xml_record(FILE *f, const char *name, const lime_record *r,
                                  const char *root, xml_item *items, int nitems)
{
    if (r->length > XML_MAX)
        return wd_io_fail(WD_ERR_CORRUPT, name, "record %s: %lld bytes, more than %d for XML",
                          r->type, r->length, XML_MAX);
    char *text = malloc((size_t)r->length + 1);
    if (!text)
        return wd_io_fail(WD_ERR_NOMEM, name, "no memory for record %s", r->type);
    if (fseeko(f, (off_t)r->offset, SEEK_SET) != 0 ||
        fread(text, 1, (size_t)r->length, f) != (size_t)r->length) {
        free(text);
        return wd_io_fail(WD_ERR_IO, name, "cannot read record %s", r->type);
    }
    text[r->length] = 0;
    const size_t len = strlen(text);

    xmlInitParser();
    xmlDocPtr doc = xmlReadMemory(text, (int)len, NULL, NULL,
                                  XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    free(text);
    if (!doc)
        return wd_io_fail(WD_ERR_CORRUPT, name, "record %s is not well-formed XML", r->type);
    wd_status st = WD_OK;
    xmlNodePtr top = xmlDocGetRootElement(doc);
    if (!top || strcmp((const char *)top->name, root) != 0) {
        char shown[64] = "";
        if (top)
            wd_io_printable(shown, sizeof shown, (const char *)top->name, 63);
        st = wd_io_fail(WD_ERR_CORRUPT, name, "record %s: root element <%s>, expected <%s>",
                        r->type, shown, root);
    }
    for (xmlNodePtr c = top ? top->children : NULL; c && st == WD_OK; c = c->next) {
        if (c->type != XML_ELEMENT_NODE)
            continue;
        for (int k = 0; k < nitems && st == WD_OK; k++) {
            if (strcmp((const char *)c->name, items[k].element) != 0)
                continue;
            if (items[k].seen) {
                st = wd_io_fail(WD_ERR_CORRUPT, name, "record %s: element <%s> appears twice",
                                r->type, items[k].element);
                break;
            }
            xmlChar *content = xmlNodeGetContent(c);
            const char *s = content ? (const char *)content : "";
            while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
                s++;
            size_t n = strlen(s);
            while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' ||
                         s[n - 1] == '\r'))
                n--;
            if (n >= sizeof items[k].value)
                st = wd_io_fail(WD_ERR_CORRUPT, name, "record %s: <%s> longer than %zu "
                                "characters", r->type, items[k].element,
                                sizeof items[k].value - 1);
            else {
                memcpy(items[k].value, s, n);
                items[k].value[n] = 0;
                items[k].seen = 1;
            }
            xmlFree(content);
        }
    }
    xmlFreeDoc(doc);
    return st;
}

static wd_status xml_int(const char *name, const char *rec, const xml_item *it, long lo,
                         long hi, long *v)
{
    char *end;
    errno = 0;
    *v = strtol(it->value, &end, 10);
    if (!it->seen || end == it->value || *end || errno || *v < lo || *v > hi) {
        char shown[64];
        wd_io_printable(shown, sizeof shown, it->value, sizeof it->value);
        return it->seen ? wd_io_fail(WD_ERR_CORRUPT, name, "%s <%s> = '%s' is not an integer "
                                     "in [%ld, %ld]", rec, it->element, shown, lo, hi)
                        : wd_io_fail(WD_ERR_CORRUPT, name, "%s has no <%s>", rec, it->element);
    }
    return WD_OK;
}

static wd_status xml_hex32(const char *name, const char *rec, const xml_item *it, uint32_t *v)
{
    const char *s = it->value;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        s += 2;
    char *end;
    errno = 0;
    const unsigned long long x = strtoull(s, &end, 16);
    if (!it->seen || end == s || *end || errno || x > 0xffffffffull || *s == '-' || *s == '+') {
        char shown[64];
        wd_io_printable(shown, sizeof shown, it->value, sizeof it->value);
        return it->seen ? wd_io_fail(WD_ERR_CORRUPT, name, "%s <%s> = '%s' is not a 32-bit "
                                     "hex number", rec, it->element, shown)
                        : wd_io_fail(WD_ERR_CORRUPT, name, "%s has no <%s>", rec, it->element);
    }
    *v = (uint32_t)x;
    return WD_OK;
}

static wd_status xml_real(const char *name, const char *rec, const xml_item *it, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(it->value, &end);
    if (!it->seen || end == it->value || *end || errno || !isfinite(*v)) {
        char shown[64];
        wd_io_printable(shown, sizeof shown, it->value, sizeof it->value);
        return wd_io_fail(WD_ERR_CORRUPT, name, "%s <%s> = '%s' is not a finite number", rec,
                          it->element, shown);
    }
    return WD_OK;
}

wd_status wd_ildg_read_header(FILE *f, const char *name, const int expect_dims[4],
                              size_t max_volume, wd_gauge_info *info, wd_io_data *data)
{
    memset(info, 0, sizeof *info);
    info->format = WD_GAUGE_ILDG;
    info->rows = 3;
    info->big_endian = 1;

    long long size;
    wd_status st = wd_io_stream_size(f, name, &size);
    if (st != WD_OK)
        return st;
    lime_record *recs = NULL;
    int nrec = 0;
    if ((st = scan_records(f, name, size, &recs, &nrec)) != WD_OK)
        return st;

    const lime_record *fmt = find_record(recs, nrec, "ildg-format");
    const lime_record *bin = find_record(recs, nrec, "ildg-binary-data");
    const lime_record *sum = find_record(recs, nrec, "scidac-checksum");
    const lime_record *wdi = find_record(recs, nrec, "wdirac-info");
    if (!fmt || !bin) {
        st = wd_io_fail(WD_ERR_CORRUPT, name, "no %s record among its %d LIME records (not an "
                        "ILDG gauge configuration)", fmt ? "ildg-binary-data" : "ildg-format",
                        nrec);
        goto done;
    }

    /* ildg-format */
    xml_item fi[] = {{"field", "", 0}, {"precision", "", 0}, {"lx", "", 0},
                     {"ly", "", 0},    {"lz", "", 0},        {"lt", "", 0}};
    if ((st = parse_xml_record(f, name, fmt, "ildgFormat", fi, 6)) != WD_OK)
        goto done;
    if (!fi[0].seen || strcmp(fi[0].value, "su3gauge") != 0) {
        char shown[64];
        wd_io_printable(shown, sizeof shown, fi[0].value, sizeof fi[0].value);
        st = wd_io_fail(WD_ERR_CORRUPT, name, "ildg-format <field> = '%s', wdirac reads "
                        "su3gauge", shown);
        goto done;
    }
    snprintf(info->datatype, sizeof info->datatype, "su3gauge");
    long v;
    if ((st = xml_int(name, "ildg-format", &fi[1], 0, 1L << 20, &v)) != WD_OK)
        goto done;
    if (v != 32 && v != 64) {
        st = wd_io_fail(WD_ERR_CORRUPT, name, "ildg-format <precision> = %ld, must be 32 or 64",
                        v);
        goto done;
    }
    info->precision = (int)v;
    snprintf(info->floating_point, sizeof info->floating_point, "IEEE%dBIG", info->precision);
    for (int mu = 0; mu < 4; mu++) {
        if ((st = xml_int(name, "ildg-format", &fi[2 + mu], 1, 1L << 24, &v)) != WD_OK)
            goto done;
        info->dims[mu] = (int)v;
    }
    if (wd_check_dims(info->dims) != WD_OK) {
        char why[300];
        snprintf(why, sizeof why, "%s", wd_last_error());
        st = wd_io_fail(WD_ERR_CORRUPT, name, "ildg-format lx ly lz lt = %d %d %d %d: %s",
                        info->dims[0], info->dims[1], info->dims[2], info->dims[3], why);
        goto done;
    }
    static const char *const lname[4] = {"lx", "ly", "lz", "lt"};
    for (int mu = 0; mu < 4 && expect_dims; mu++)
        if (info->dims[mu] != expect_dims[mu]) {
            st = wd_io_fail(WD_ERR_INVALID, name, "ildg-format %s = %d, expected %d", lname[mu],
                            info->dims[mu], expect_dims[mu]);
            goto done;
        }

    /* scidac-checksum and wdirac-info, when present */
    if (sum) {
        xml_item si[] = {{"suma", "", 0}, {"sumb", "", 0}};
        if ((st = parse_xml_record(f, name, sum, "scidacChecksum", si, 2)) != WD_OK ||
            (st = xml_hex32(name, "scidac-checksum", &si[0], &info->suma_header)) != WD_OK ||
            (st = xml_hex32(name, "scidac-checksum", &si[1], &info->sumb_header)) != WD_OK)
            goto done;
        info->has_scidac = 1;
    }
    if (wdi) {
        xml_item wi[] = {{"plaquette", "", 0}, {"linkTrace", "", 0}};
        if ((st = parse_xml_record(f, name, wdi, "wdiracInfo", wi, 2)) != WD_OK)
            goto done;
        if (wi[0].seen) {
            if ((st = xml_real(name, "wdirac-info", &wi[0], &info->plaquette_header)) != WD_OK)
                goto done;
            info->has_plaquette = 1;
        }
        if (wi[1].seen) {
            if ((st = xml_real(name, "wdirac-info", &wi[1], &info->link_trace_header)) != WD_OK)
                goto done;
            info->has_link_trace = 1;
        }
    }
    info->tolerance = wd_io_obs_tolerance(info->precision);
    info->unitarity_tolerance = wd_io_unitarity_tolerance(info->precision);

    /* ildg-binary-data */
    const size_t volume = wd_volume(info->dims);
    if (max_volume && volume > max_volume) {
        st = wd_io_fail(WD_ERR_INVALID, name, "%zu sites, more than the limit %zu", volume,
                        max_volume);
        goto done;
    }
    const wd_io_layout layout = {3, info->precision / 8, 1};
    const long long need = (long long)(volume * wd_io_site_bytes(&layout));
    if (bin->length != need) {
        st = wd_io_fail(WD_ERR_CORRUPT, name, "ildg-binary-data holds %lld bytes; ildg-format "
                        "lx ly lz lt = %d %d %d %d, precision %d need %lld", bin->length,
                        info->dims[0], info->dims[1], info->dims[2], info->dims[3],
                        info->precision, need);
        goto done;
    }
    data->offset = bin->offset;
    data->layout = layout;
    data->bare = 0;

done:
    free(recs);
    return st;
}

wd_status wd_ildg_read_stream(FILE *f, const char *name, const int expect_dims[4],
                              unsigned flags, size_t max_volume, double **u,
                              wd_gauge_info *info_out)
{
    wd_gauge_info scratch;
    wd_gauge_info *info = info_out ? info_out : &scratch;
    wd_io_data data;
    wd_status st = wd_ildg_read_header(f, name, expect_dims, max_volume, info, &data);
    if (st != WD_OK)
        return st;
    const size_t volume = wd_volume(info->dims);
    double *field = malloc(volume * 72 * sizeof *field);
    if (!field)
        return wd_io_fail(WD_ERR_NOMEM, name, "no memory for %zu sites", volume);
    uint32_t nersc = 0;
    const int report_only = (flags & WD_GAUGE_READ_REPORT_ONLY) != 0;
    st = wd_io_decode_stream(f, name, "ildg-binary-data", data.offset, 0, field, volume, volume,
                             &data.layout, &nersc, NULL, &info->suma_data, &info->sumb_data);
    info->checksum_data = nersc;
    if (st == WD_OK)
        st = wd_io_check_sums(name, info, report_only);
    if (st == WD_OK)
        st = wd_io_check_field(name, field, info->dims, info, report_only,
                               "wdirac-info plaquette", "wdirac-info linkTrace");
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

static wd_status write_record_header(FILE *f, const char *path, const char *type,
                                     uint64_t length, int mb, int me)
{
    unsigned char h[LIME_HEADER] = {0};
    store_be(h, LIME_MAGIC, 4);
    store_be(h + 4, 1, 2);
    h[6] = (unsigned char)((mb ? 0x80 : 0) | (me ? 0x40 : 0));
    store_be(h + 8, length, 8);
    memcpy(h + 16, type, strlen(type));
    if (fwrite(h, 1, LIME_HEADER, f) != LIME_HEADER)
        return wd_io_fail(WD_ERR_IO, path, "writing the %s record header failed: %s", type,
                          strerror(errno));
    return WD_OK;
}

static wd_status write_padding(FILE *f, const char *path, uint64_t length)
{
    static const unsigned char zero[8] = {0};
    const size_t pad = (size_t)((8 - length % 8) % 8);
    if (pad && fwrite(zero, 1, pad, f) != pad)
        return wd_io_fail(WD_ERR_IO, path, "writing LIME padding failed: %s", strerror(errno));
    return WD_OK;
}

static wd_status write_text_record(FILE *f, const char *path, const char *type,
                                   const char *text, int mb, int me)
{
    const size_t n = strlen(text);
    wd_status st = write_record_header(f, path, type, n, mb, me);
    if (st != WD_OK)
        return st;
    if (fwrite(text, 1, n, f) != n)
        return wd_io_fail(WD_ERR_IO, path, "writing the %s record failed: %s", type,
                          strerror(errno));
    return write_padding(f, path, n);
}

wd_status wd_ildg_write_stream(FILE *f, const char *path, void *vjob)
{
    const wd_io_write_job *job = vjob;
    const int *d = job->dims;
    const wd_io_layout layout = {3, job->opts->precision / 8, 1};
    const size_t volume = wd_volume(d);
    const size_t site_bytes = wd_io_site_bytes(&layout);
    char xml[1024];

    snprintf(xml, sizeof xml,
             "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
             "<ildgFormat xmlns=\"http://www.lqcd.org/ildg\" "
             "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
             "xsi:schemaLocation=\"http://www.lqcd.org/ildg "
             "http://www.lqcd.org/ildg/filefmt.xsd\">\n"
             "  <version>1.0</version>\n"
             "  <field>su3gauge</field>\n"
             "  <precision>%d</precision>\n"
             "  <lx>%d</lx>\n  <ly>%d</ly>\n  <lz>%d</lz>\n  <lt>%d</lt>\n"
             "</ildgFormat>\n",
             job->opts->precision, d[0], d[1], d[2], d[3]);
    wd_status st = write_text_record(f, path, "ildg-format", xml, 1, 0);
    if (st != WD_OK)
        return st;

    const uint64_t length = (uint64_t)volume * site_bytes;
    if ((st = write_record_header(f, path, "ildg-binary-data", length, 0, 0)) != WD_OK)
        return st;
    enum { CHUNK = 1024 };
    unsigned char *buf = malloc(CHUNK * site_bytes);
    if (!buf)
        return wd_io_fail(WD_ERR_NOMEM, path, "no memory for a write buffer");
    const size_t slice_sites = volume / (size_t)d[3];
    uint32_t nersc = 0, suma = 0, sumb = 0;
    for (int t = 0; t < d[3] && st == WD_OK; t++) {
        const double *u;
        if ((st = wd_io_job_slice(job, t, &u)) != WD_OK)
            break;
        for (size_t site = 0; site < slice_sites && st == WD_OK; site += CHUNK) {
            const size_t n = slice_sites - site < CHUNK ? slice_sites - site : CHUNK;
            const size_t first = slice_sites * (size_t)t + site;
            wd_io_encode_sites(buf, u + 72 * site, n, &layout, &nersc);
            for (size_t k = 0; k < n; k++)
                wd_io_scidac_site(&suma, &sumb, buf + k * site_bytes, site_bytes, first + k);
            if (fwrite(buf, site_bytes, n, f) != n)
                st = wd_io_fail(WD_ERR_IO, path, "writing ildg-binary-data failed at site %zu: "
                                "%s", first, strerror(errno));
        }
    }
    free(buf);
    if (st == WD_OK)
        st = write_padding(f, path, length);
    if (st != WD_OK)
        return st;

    snprintf(xml, sizeof xml,
             "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
             "<scidacChecksum>\n  <version>1.0</version>\n  <suma>%08x</suma>\n"
             "  <sumb>%08x</sumb>\n</scidacChecksum>\n",
             suma, sumb);
    if ((st = write_text_record(f, path, "scidac-checksum", xml, 0, 0)) != WD_OK)
        return st;
    snprintf(xml, sizeof xml,
             "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
             "<wdiracInfo>\n  <plaquette>%.17g</plaquette>\n  <linkTrace>%.17g</linkTrace>\n"
             "</wdiracInfo>\n",
             job->obs.plaquette, job->obs.link_trace);
    return write_text_record(f, path, "wdirac-info", xml, 0, 1);
}
