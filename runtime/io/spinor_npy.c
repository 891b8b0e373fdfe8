/*
 * spinor_npy.c: spinor fields in NumPy .npy files (wdirac_npy.h).
 *
 * The externally accessible functions are
 *   wd_npy_read_spinor     read and check a (T, Z, Y, X, 4, 3) complex128
 *                          file into a new host spinor field
 *   wd_npy_write_spinor    write a host spinor field as a version 1.0 file,
 *                          through a temporary file renamed into place
 *   wd_npy_check_writable  refuse, before a long computation, an output
 *                          path the write would refuse
 *   and the pieces of them that the block I/O (io_block.c) shares, listed
 *   in npy_internal.h
 *
 * The format (numpy/lib/format.py, NEP 1): the magic "\x93NUMPY", a major
 * and a minor version byte, the header length (2 bytes little endian in
 * version 1.0, 4 bytes in 2.0 and 3.0), then the header: a Python dict
 * literal with exactly the keys 'descr', 'fortran_order' and 'shape', in
 * any order, padded with spaces and ended by '\n' so that the data start
 * on a multiple of 64 bytes (16 in files of old numpy versions: any
 * padding is accepted on read).  Version 3.0 differs from 2.0 only in
 * allowing UTF-8 in the header, which a spinor header never needs.
 * Notes: the host must store doubles as IEEE 754 binary64 (as every
 * platform wdirac targets does); data in the other byte order are swapped.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "npy_internal.h"
#include "wd_file_write.h"
#include "wd_core.h"
#include "wdirac_npy.h"

#define MAGIC "\x93NUMPY"
#define MAGIC_LEN 6
/* numpy itself refuses headers over 10000 bytes by default; a spinor
 * header is under 128, so anything near this is not a spinor file */
#define MAX_HEADER (1u << 16)
#define MAX_NDIM 32
/* doubles per site: 4 spins x 3 colours x (re, im) */
#define SITE_REALS 24

static wd_status npy_fail(wd_status s, const char *path, const char *fmt, ...) WD_PRINTF(3, 4);

static wd_status npy_fail(wd_status s, const char *path, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return wd_fail(s, "spinor file '%s': %s", path, msg);
}

static int host_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

static void swap8(double *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char b[8], r[8];
        memcpy(b, &v[i], 8);
        for (int k = 0; k < 8; k++)
            r[k] = b[7 - k];
        memcpy(&v[i], r, 8);
    }
}

/* index of the first NaN or Inf among n doubles, or -1 */
static long long first_nonfinite(const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return (long long)i;
    return -1;
}

/* "site (x, y, z, t) spin s colour c (element [t, z, y, x, s, c])" of real i */
static void describe_element(char *buf, size_t len, long long i, const int dims[4])
{
    const long long site = i / SITE_REALS;
    const int spin = (int)(i % SITE_REALS / 6), colour = (int)(i % 6 / 2);
    const int x = (int)(site % dims[0]), y = (int)(site / dims[0] % dims[1]);
    const int z = (int)(site / dims[0] / dims[1] % dims[2]);
    const int t = (int)(site / dims[0] / dims[1] / dims[2]);
    snprintf(buf, len, "site (x, y, z, t) = (%d, %d, %d, %d) spin %d colour %d "
             "(element [%d, %d, %d, %d, %d, %d], %s part)", x, y, z, t, spin, colour, t, z, y, x,
             spin, colour, i % 2 ? "imaginary" : "real");
}

static void format_shape(char *buf, size_t len, const long long *shape, int ndim)
{
    size_t k = (size_t)snprintf(buf, len, "(");
    for (int d = 0; d < ndim && k < len; d++)
        k += (size_t)snprintf(buf + k, len - k, "%s%lld", d ? ", " : "", shape[d]);
    if (k < len)
        snprintf(buf + k, len - k, ndim == 1 ? ",)" : ")");
}

/* ---- the header: a Python dict literal -------------------------------- */

typedef struct header {
    char descr[16];
    int has_descr, has_order, has_shape;
    int fortran_order;
    int ndim;
    long long shape[MAX_NDIM];
} header;

typedef struct scanner {
    const char *s;
    size_t n, i;
    const char *path;
} scanner;

static void skip_space(scanner *p)
{
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' ||
                           p->s[p->i] == '\r'))
        p->i++;
}

static int peek(const scanner *p)
{
    return p->i < p->n ? (unsigned char)p->s[p->i] : -1;
}

static wd_status syntax(const scanner *p, const char *expected)
{
    const int c = peek(p);
    char found[16];
    if (c < 0)
        snprintf(found, sizeof found, "the end");
    else if (c >= 0x20 && c < 0x7f)
        snprintf(found, sizeof found, "'%c'", c);
    else
        snprintf(found, sizeof found, "byte 0x%02x", c);
    return npy_fail(WD_ERR_CORRUPT, p->path, "header: expected %s at character %zu, found %s",
                    expected, p->i, found);
}

/* a quoted Python string without escapes into buf (truncated to len - 1) */
static wd_status scan_string(scanner *p, char *buf, size_t len, const char *what)
{
    const int q = peek(p);
    if (q != '\'' && q != '"')
        return syntax(p, what);
    const size_t start = ++p->i;
    while (p->i < p->n && p->s[p->i] != q && p->s[p->i] != '\\' && p->s[p->i] != '\n')
        p->i++;
    if (peek(p) != q)
        return syntax(p, "the closing quote of a string");
    const size_t k = p->i - start < len - 1 ? p->i - start : len - 1;
    memcpy(buf, p->s + start, k);
    buf[k] = 0;
    p->i++;
    return WD_OK;
}

static int scan_word(scanner *p, const char *w)
{
    const size_t k = strlen(w);
    if (p->n - p->i < k || memcmp(p->s + p->i, w, k) != 0)
        return 0;
    /* a word must end there: 'Falsey' is no boolean */
    const size_t e = p->i + k;
    if (e < p->n && (p->s[e] == '_' || (p->s[e] >= '0' && p->s[e] <= '9') ||
                     ((p->s[e] | 0x20) >= 'a' && (p->s[e] | 0x20) <= 'z')))
        return 0;
    p->i = e;
    return 1;
}

static wd_status scan_shape(scanner *p, header *h)
{
    if (peek(p) != '(')
        return syntax(p, "'(' opening the shape tuple");
    p->i++;
    h->ndim = 0;
    for (;;) {
        skip_space(p);
        if (peek(p) == ')') {
            p->i++;
            return WD_OK;
        }
        if (peek(p) < '0' || peek(p) > '9')
            return syntax(p, "a non-negative integer or ')' in the shape");
        long long v = 0;
        while (peek(p) >= '0' && peek(p) <= '9') {
            v = 10 * v + (p->s[p->i++] - '0');
            if (v > (1LL << 40))
                return npy_fail(WD_ERR_CORRUPT, p->path, "header: a shape entry is too large");
        }
        if (peek(p) == 'L') /* Python 2 numpy wrote longs as 4L */
            p->i++;
        if (h->ndim == MAX_NDIM)
            return npy_fail(WD_ERR_CORRUPT, p->path, "header: shape has more than %d entries",
                            MAX_NDIM);
        h->shape[h->ndim++] = v;
        skip_space(p);
        if (peek(p) == ',') {
            p->i++;
        } else if (peek(p) != ')') {
            return syntax(p, "',' or ')' in the shape");
        }
    }
}

static wd_status parse_header(const char *path, const char *text, size_t n, header *h)
{
    scanner p = {text, n, 0, path};
    wd_status st;
    memset(h, 0, sizeof *h);
    skip_space(&p);
    if (peek(&p) != '{')
        return syntax(&p, "'{' opening the header dict");
    p.i++;
    for (;;) {
        skip_space(&p);
        if (peek(&p) == '}') {
            p.i++;
            break;
        }
        char key[32];
        if ((st = scan_string(&p, key, sizeof key, "a quoted key or '}'")) != WD_OK)
            return st;
        skip_space(&p);
        if (peek(&p) != ':')
            return syntax(&p, "':' after a key");
        p.i++;
        skip_space(&p);
        int *seen;
        if (!strcmp(key, "descr")) {
            seen = &h->has_descr;
            if ((st = scan_string(&p, h->descr, sizeof h->descr, "the quoted dtype of 'descr'")) !=
                WD_OK)
                return st;
        } else if (!strcmp(key, "fortran_order")) {
            seen = &h->has_order;
            if (scan_word(&p, "True"))
                h->fortran_order = 1;
            else if (scan_word(&p, "False"))
                h->fortran_order = 0;
            else
                return syntax(&p, "True or False for 'fortran_order'");
        } else if (!strcmp(key, "shape")) {
            seen = &h->has_shape;
            if ((st = scan_shape(&p, h)) != WD_OK)
                return st;
        } else {
            return npy_fail(WD_ERR_CORRUPT, path, "header: unknown key '%s' (a .npy header has "
                            "exactly 'descr', 'fortran_order' and 'shape')", key);
        }
        if (*seen)
            return npy_fail(WD_ERR_CORRUPT, path, "header: key '%s' appears twice", key);
        *seen = 1;
        skip_space(&p);
        if (peek(&p) == ',')
            p.i++;
        else if (peek(&p) != '}')
            return syntax(&p, "',' or '}' after a value");
    }
    skip_space(&p);
    if (p.i != n)
        return syntax(&p, "only padding after the header dict");
    if (!h->has_descr || !h->has_order || !h->has_shape)
        return npy_fail(WD_ERR_CORRUPT, path, "header: no '%s' key",
                        !h->has_descr ? "descr" : !h->has_order ? "fortran_order" : "shape");
    return WD_OK;
}

/* ---- reading ---------------------------------------------------------- */

static uint32_t le_u32(const unsigned char *b, int n)
{
    uint32_t v = 0;
    for (int k = n - 1; k >= 0; k--)
        v = v << 8 | b[k];
    return v;
}

/* Check a parsed header against the spinor layout: dtype, order, shape. */
static wd_status check_header(const char *path, const header *h, const int expect[4], int dims[4],
                              int *big_endian)
{
    if (!strcmp(h->descr, "<c16"))
        *big_endian = 0;
    else if (!strcmp(h->descr, ">c16"))
        *big_endian = 1;
    else
        return npy_fail(WD_ERR_INVALID, path, "descr (dtype) '%s': a spinor file holds complex128 "
                        "('<c16', or '>c16')", h->descr);
    if (h->fortran_order)
        return npy_fail(WD_ERR_INVALID, path, "fortran_order is True: a spinor file is in C order "
                        "(save np.ascontiguousarray(a), not a transposed view)");

    char found[256], want[128];
    format_shape(found, sizeof found, h->shape, h->ndim);
    if (expect)
        snprintf(want, sizeof want, "(T, Z, Y, X, 4, 3) = (%d, %d, %d, %d, 4, 3)", expect[3],
                 expect[2], expect[1], expect[0]);
    else
        snprintf(want, sizeof want, "(T, Z, Y, X, 4, 3)");
    if (h->ndim != 6 || h->shape[4] != 4 || h->shape[5] != 3)
        return npy_fail(WD_ERR_INVALID, path, "shape %s, expected %s", found, want);
    for (int mu = 0; mu < 4; mu++) {
        if (h->shape[3 - mu] > (1 << 24))
            return npy_fail(WD_ERR_INVALID, path, "shape %s: extent %lld is too large", found,
                            h->shape[3 - mu]);
        dims[mu] = (int)h->shape[3 - mu];
    }
    if (expect && memcmp(dims, expect, sizeof(int[4])) != 0)
        return npy_fail(WD_ERR_INVALID, path, "shape %s, expected %s", found, want);
    if (wd_check_dims(dims) != WD_OK) {
        char why[256];
        snprintf(why, sizeof why, "%s", wd_last_error());
        return npy_fail(WD_ERR_INVALID, path, "shape %s: %s", found, why);
    }
    return WD_OK;
}

/* Read and check the preamble and header of f (at its start) against
 * expect: dims, the byte order to swap from (*swap), f left at the data,
 * whose size matches the shape. */
static wd_status read_header(FILE *f, const char *path, const int expect[4], int dims[4],
                             int *swap)
{
    unsigned char pre[12];
    if (fread(pre, 1, 8, f) != 8)
        return npy_fail(WD_ERR_CORRUPT, path, "shorter than the 8 bytes of a .npy magic and "
                        "version");
    if (memcmp(pre, MAGIC, MAGIC_LEN) != 0)
        return npy_fail(WD_ERR_CORRUPT, path, "bad magic: not a NumPy .npy file (it must start "
                        "with \\x93NUMPY)");
    const int major = pre[6], minor = pre[7];
    if (major < 1 || major > 3 || minor != 0)
        return npy_fail(WD_ERR_CORRUPT, path, "unsupported .npy version %d.%d (1.0, 2.0 and 3.0 "
                        "are read)", major, minor);
    const int len_bytes = major == 1 ? 2 : 4;
    if (fread(pre + 8, 1, (size_t)len_bytes, f) != (size_t)len_bytes)
        return npy_fail(WD_ERR_CORRUPT, path, "ends inside the header length");
    const uint32_t hlen = le_u32(pre + 8, len_bytes);
    if (hlen > MAX_HEADER)
        return npy_fail(WD_ERR_CORRUPT, path, "header length %" PRIu32 " bytes: too long for a "
                        "spinor file (at most %u)", hlen, MAX_HEADER);
    char *text = malloc(hlen + 1);
    if (!text)
        return npy_fail(WD_ERR_NOMEM, path, "no memory for the header");
    if (fread(text, 1, hlen, f) != hlen) {
        free(text);
        return npy_fail(WD_ERR_CORRUPT, path, "ends inside its %" PRIu32 "-byte header", hlen);
    }
    text[hlen] = 0;
    header h;
    wd_status st = parse_header(path, text, hlen, &h);
    free(text);
    int big = 0;
    if (st == WD_OK)
        st = check_header(path, &h, expect, dims, &big);
    if (st != WD_OK)
        return st;
    *swap = big == host_little_endian();

    const long long offset = 8 + len_bytes + (long long)hlen;
    const size_t volume = (size_t)dims[0] * dims[1] * dims[2] * dims[3];
    const size_t nreal = volume * SITE_REALS;
    const long long data_bytes = (long long)(nreal * sizeof(double));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0)
        return npy_fail(WD_ERR_IO, path, "cannot find its size: %s", strerror(errno));
    const long long size = (long long)sb.st_size;
    if (size < offset + data_bytes)
        return npy_fail(WD_ERR_CORRUPT, path, "truncated: the data hold %lld of the %lld bytes "
                        "of shape (%d, %d, %d, %d, 4, 3) complex128",
                        size > offset ? size - offset : 0, data_bytes, dims[3], dims[2], dims[1],
                        dims[0]);
    if (size > offset + data_bytes)
        return npy_fail(WD_ERR_CORRUPT, path, "%lld bytes after the %lld bytes of data (file size "
                        "%lld, expected %lld)", size - offset - data_bytes, data_bytes, size,
                        offset + data_bytes);
    if (fseeko(f, (off_t)offset, SEEK_SET) != 0)
        return npy_fail(WD_ERR_IO, path, "cannot seek to the data: %s", strerror(errno));
    return WD_OK;
}

static wd_status read_stream(FILE *f, const char *path, const int expect[4], double **psi,
                             int dims_out[4])
{
    int dims[4], swap = 0;
    wd_status st = read_header(f, path, expect, dims, &swap);
    if (st != WD_OK)
        return st;
    const size_t volume = (size_t)dims[0] * dims[1] * dims[2] * dims[3];
    const size_t nreal = volume * SITE_REALS;
    double *v = malloc(nreal * sizeof *v);
    if (!v)
        return npy_fail(WD_ERR_NOMEM, path, "no memory for %zu sites", volume);
    if (fread(v, sizeof *v, nreal, f) != nreal) {
        const int e = ferror(f) ? errno : 0;
        free(v);
        return npy_fail(e ? WD_ERR_IO : WD_ERR_CORRUPT, path, "reading the data failed: %s",
                        e ? strerror(e) : "short read");
    }
    if ((st = wd_npy_check_data(path, v, nreal, 0, dims, swap)) != WD_OK) {
        free(v);
        return st;
    }
    *psi = v;
    if (dims_out)
        memcpy(dims_out, dims, sizeof dims);
    return WD_OK;
}

static wd_status open_file(const char *path, FILE **out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return npy_fail(WD_ERR_IO, path, "cannot open: %s", strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
        fclose(f);
        return npy_fail(WD_ERR_IO, path, "is a directory");
    }
    *out = f;
    return WD_OK;
}

wd_status wd_npy_open_data(const char *path, const int expect_dims[4], FILE **f, int *swap)
{
    int dims[4];
    wd_status st = open_file(path, f);
    if (st == WD_OK && (st = read_header(*f, path, expect_dims, dims, swap)) != WD_OK) {
        fclose(*f);
        *f = NULL;   /* the caller's cleanup must not close it again */
    }
    return st;
}

wd_status wd_npy_check_data(const char *path, double *v, size_t n, long long first,
                            const int dims[4], int swap)
{
    if (swap)
        swap8(v, n);
    const long long bad = first_nonfinite(v, n);
    if (bad < 0)
        return WD_OK;
    char where[160];
    describe_element(where, sizeof where, first + bad, dims);
    return npy_fail(WD_ERR_CORRUPT, path, "NaN or Inf in the data at %s", where);
}

long long wd_npy_first_nonfinite(const double *v, size_t n)
{
    return first_nonfinite(v, n);
}

wd_status wd_npy_refuse_nonfinite(const char *path, long long bad, const int dims[4])
{
    char where[160];
    describe_element(where, sizeof where, bad, dims);
    return npy_fail(WD_ERR_INVALID, path, "not written: the field holds NaN or Inf at %s",
                    where);
}

wd_status wd_npy_read_spinor(const char *path, const int expect_dims[4], double **psi,
                             int dims[4])
{
    if (!path || !psi)
        return wd_fail(WD_ERR_INVALID, "wd_npy_read_spinor: path and psi must not be NULL");
    char why[256];
    if (expect_dims && wd_check_dims(expect_dims) != WD_OK) {
        snprintf(why, sizeof why, "%s", wd_last_error());
        return wd_fail(WD_ERR_INVALID, "wd_npy_read_spinor: expected extents: %s", why);
    }
    FILE *f;
    wd_status st = open_file(path, &f);
    if (st != WD_OK)
        return st;
    st = read_stream(f, path, expect_dims, psi, dims);
    fclose(f);
    return st;
}

/* ---- writing ---------------------------------------------------------- */

wd_status wd_npy_check_writable(const char *path, int overwrite)
{
    if (!path || !*path)
        return wd_fail(WD_ERR_INVALID, "wd_npy_check_writable: empty path");
    return wd_file_check_writable(path, "spinor file", overwrite);
}

/* The preamble and header of a version 1.0 file: *len bytes, a multiple
 * of 64 (numpy's alignment, so the data can be memory-mapped). */
void wd_npy_header(char *buf, size_t cap, const int dims[4], size_t *len)
{
    wd_npy_header_shape(buf, cap, dims, "4, 3", len);
}

void wd_npy_header_shape(char *buf, size_t cap, const int dims[4], const char *site_shape,
                         size_t *len)
{
    memcpy(buf, MAGIC, MAGIC_LEN);
    buf[6] = 1;
    buf[7] = 0;
    const int k = 10 + snprintf(buf + 10, cap - 10, "{'descr': '%cc16', 'fortran_order': False, "
                                "'shape': (%d, %d, %d, %d, %s), }",
                                host_little_endian() ? '<' : '>', dims[3], dims[2], dims[1],
                                dims[0], site_shape);
    const size_t n = ((size_t)k + 1 + 63) / 64 * 64; /* + 1: the closing '\n' */
    memset(buf + k, ' ', n - 1 - (size_t)k);
    buf[n - 1] = '\n';
    const size_t hlen = n - 10;
    buf[8] = (char)(hlen & 0xff);
    buf[9] = (char)(hlen >> 8);
    *len = n;
}

typedef struct write_job {
    const double *psi;
    const int *dims;
    size_t nreal;
} write_job;

static wd_status write_body(FILE *f, const char *path, void *ctx)
{
    const write_job *j = ctx;
    char head[256];
    size_t hlen;
    wd_npy_header(head, sizeof head, j->dims, &hlen);
    if (fwrite(head, 1, hlen, f) != hlen || fwrite(j->psi, sizeof *j->psi, j->nreal, f) != j->nreal)
        return npy_fail(WD_ERR_IO, path, "writing the temporary file failed: %s", strerror(errno));
    return WD_OK;
}

wd_status wd_npy_write_spinor(const char *path, const double *psi, const int dims[4],
                              int overwrite)
{
    if (!path || !*path || !psi || !dims)
        return wd_fail(WD_ERR_INVALID, "wd_npy_write_spinor: path, psi and dims must be given");
    if (wd_check_dims(dims) != WD_OK) {
        char why[256];
        snprintf(why, sizeof why, "%s", wd_last_error());
        return npy_fail(WD_ERR_INVALID, path, "not written: %s", why);
    }
    const size_t nreal = (size_t)dims[0] * dims[1] * dims[2] * dims[3] * SITE_REALS;
    const long long bad = first_nonfinite(psi, nreal);
    if (bad >= 0)
        return wd_npy_refuse_nonfinite(path, bad, dims);
    write_job job = {psi, dims, nreal};
    return wd_file_write_safely(path, "spinor file", overwrite, write_body, &job);
}
