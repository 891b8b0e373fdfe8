/*
 * test_npy.c: spinor fields in .npy files (runtime/io/spinor_npy.c).
 * One line per check; "N of M failed" last; exit 0 when all pass.
 *
 *   test_npy [--seed N]     (default seed: the time, printed)
 *
 * Files go to a fresh directory under $TMPDIR (or /tmp), removed at the end.
 * Checks:
 *   round trip    a random field on random extents, with -0, subnormals,
 *                 the largest double and tiny values mixed in, comes back
 *                 bit for bit, with and without expected extents; the
 *                 header is numpy's version 1.0 layout (64-byte aligned,
 *                 '\n'-terminated, the dict text numpy writes)
 *   independent   files encoded here from the format description: version
 *                 2.0 and 3.0 headers, keys in another order, double
 *                 quotes, no trailing comma, 16-byte padding, Python 2
 *                 longs (4L), big-endian '>c16' data: the same values
 *   malformed     bad magic, versions 0.x / 1.1 / 4.0, a truncated
 *                 preamble / header / data, trailing bytes, header syntax
 *                 errors, unknown / missing / repeated keys, dtypes '<f8'
 *                 '<c8' '|c16', fortran_order True, wrong shapes and odd
 *                 extents, a shape other than the one expected, NaN and Inf:
 *                 each gives the right status and a message naming the
 *                 file and the field, and leaves the caller's pointer alone
 *   writing       an existing file is not overwritten without overwrite
 *                 (same bytes after), overwrite replaces it; a NaN field,
 *                 odd extents and a missing directory are refused and
 *                 create nothing; wd_npy_check_writable agrees; no
 *                 temporary file is ever left behind
 */
#include <complex.h>
#include <dirent.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gauge_tools.h"
#include "wdirac_npy.h"

static int checks_run, checks_failed;
static char dir[512];

static void check(const char *what, int ok, const char *detail)
{
    checks_run++;
    checks_failed += !ok;
    printf("%-66s %s%s%s\n", what, ok ? "OK" : "FAIL", detail && *detail ? "  " : "",
           detail ? detail : "");
}

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
        fprintf(stderr, "test_npy: cannot write %s\n", p);
        exit(1);
    }
    fclose(f);
}

/* number of entries in the test directory other than . and .. */
static int dir_entries(char *list, size_t len)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (list && len)
        list[0] = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        n++;
        if (list && strlen(list) + strlen(e->d_name) + 2 < len) {
            strcat(list, " ");
            strcat(list, e->d_name);
        }
    }
    closedir(d);
    return n;
}

static void clear_dir(void)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            unlink(path(e->d_name));
    closedir(d);
}

/* ---------------------------------------------------------------------- */
/* an encoder written from the format description (numpy/lib/format.py)    */

/* A .npy file: version major.minor, the header dict text padded with
 * spaces and a '\n' to a multiple of `align`, then `data` (n bytes). */
static unsigned char *npy_file(int major, int minor, const char *dict, int align,
                               const void *data, size_t n, size_t *len)
{
    const size_t pre = major == 1 ? 10 : 12;
    size_t total = pre + strlen(dict) + 1;
    total = (total + (size_t)align - 1) / (size_t)align * (size_t)align;
    const size_t hlen = total - pre;
    unsigned char *b = malloc(total + n);
    if (!b)
        exit(1);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (unsigned char)major;
    b[7] = (unsigned char)minor;
    for (size_t k = 0; k < pre - 8; k++)
        b[8 + k] = (unsigned char)(hlen >> (8 * k));
    memset(b + pre, ' ', hlen);
    memcpy(b + pre, dict, strlen(dict));
    b[total - 1] = '\n';
    if (n)
        memcpy(b + total, data, n);
    *len = total + n;
    return b;
}

/* the doubles of v as big-endian bytes */
static unsigned char *big_endian(const double *v, size_t n)
{
    unsigned char *b = malloc(8 * n);
    if (!b)
        exit(1);
    for (size_t i = 0; i < n; i++) {
        uint64_t bits;
        memcpy(&bits, &v[i], 8);
        for (int k = 0; k < 8; k++)
            b[8 * i + (size_t)k] = (unsigned char)(bits >> (8 * (7 - k)));
    }
    return b;
}

static int DIMS[4];
static size_t NREAL;
static double *PSI;

static char SHAPE_DICT[256];

/* expect a read of p to fail with `want`, mentioning the file name and
 * `field`, leaving the caller's pointer alone */
static void expect_read_fail(const char *what, const char *p, const int *expect, wd_status want,
                             const char *field)
{
    double *sentinel = (double *)&checks_run, *psi = sentinel;
    const wd_status st = wd_npy_read_spinor(p, expect, &psi, NULL);
    const char *msg = wd_last_error();
    const char *base = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
    char detail[700];
    snprintf(detail, sizeof detail, "status %d (want %d): %s", (int)st, (int)want, msg);
    check(what, st == want && psi == sentinel && strstr(msg, base) && strstr(msg, field),
          detail);
    if (psi != sentinel)
        free(psi);
}

static void test_round_trip(void)
{
    /* values that a conversion through text or float would not keep */
    PSI[0] = -0.0;
    PSI[1] = DBL_MIN / 4;
    PSI[2] = DBL_MAX;
    PSI[3] = -DBL_TRUE_MIN;
    PSI[NREAL - 1] = 1e-300;
    const char *p = path("a.npy");
    wd_status st = wd_npy_write_spinor(p, PSI, DIMS, 0);
    check("write a random field", st == WD_OK, st ? wd_last_error() : NULL);

    double *back = NULL;
    int found[4] = {0, 0, 0, 0};
    st = wd_npy_read_spinor(p, DIMS, &back, found);
    check("read it back with the expected extents", st == WD_OK, st ? wd_last_error() : NULL);
    check("... bit for bit", back && !memcmp(back, PSI, NREAL * sizeof *PSI), NULL);
    check("... reports its extents", !memcmp(found, DIMS, sizeof DIMS), NULL);
    free(back);
    back = NULL;
    memset(found, 0, sizeof found);
    st = wd_npy_read_spinor(p, NULL, &back, found);
    check("read it back without expected extents", st == WD_OK && back &&
          !memcmp(back, PSI, NREAL * sizeof *PSI) && !memcmp(found, DIMS, sizeof DIMS),
          st ? wd_last_error() : NULL);
    free(back);

    size_t n;
    unsigned char *b = slurp(p, &n);
    char want[256];
    snprintf(want, sizeof want, "{'descr': '<c16', 'fortran_order': False, 'shape': (%d, %d, "
             "%d, %d, 4, 3), }", DIMS[3], DIMS[2], DIMS[1], DIMS[0]);
    const size_t hlen = b && n > 10 ? (size_t)b[8] | (size_t)b[9] << 8 : 0;
    int ok = b && n == 10 + hlen + NREAL * 8 && !memcmp(b, "\x93NUMPY\x01\x00", 8) &&
             (10 + hlen) % 64 == 0 && b[9 + hlen] == '\n' &&
             !memcmp(b + 10, want, strlen(want));
    for (size_t k = 10 + strlen(want); ok && k < 9 + hlen; k++)
        ok = b[k] == ' ';
    check("header: version 1.0, numpy's dict, 64-byte aligned, '\\n' last", ok, NULL);
    check("data: the host doubles, little endian", b && n == 10 + hlen + NREAL * 8 &&
          !memcmp(b + 10 + hlen, PSI, NREAL * 8), NULL);
    free(b);
    unlink(p);
}

static void test_independent(void)
{
    const size_t nbytes = NREAL * 8;
    unsigned char *be = big_endian(PSI, NREAL);
    char dict[256];
    const int T = DIMS[3], Z = DIMS[2], Y = DIMS[1], X = DIMS[0];
    struct {
        const char *what;
        int major, align, big;
        const char *fmt;
    } cases[] = {
        {"version 2.0, keys reordered, double quotes", 2, 64, 0,
         "{\"shape\": (%d, %d, %d, %d, 4, 3), \"fortran_order\": False, \"descr\": \"<c16\"}"},
        {"version 3.0, no spaces, 16-byte padding", 3, 16, 0,
         "{'descr':'<c16','fortran_order':False,'shape':(%d,%d,%d,%d,4,3)}"},
        {"version 1.0, Python 2 longs, trailing commas", 1, 16, 0,
         "{'descr': '<c16', 'fortran_order': False, 'shape': (%dL, %dL, %dL, %dL, 4L, 3L,), }"},
        {"version 1.0, big endian '>c16'", 1, 64, 1,
         "{'descr': '>c16', 'fortran_order': False, 'shape': (%d, %d, %d, %d, 4, 3), }"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        snprintf(dict, sizeof dict, cases[c].fmt, T, Z, Y, X);
        size_t len;
        unsigned char *f = npy_file(cases[c].major, 0, dict, cases[c].align,
                                    cases[c].big ? (const void *)be : (const void *)PSI, nbytes,
                                    &len);
        const char *p = path("ind.npy");
        spit(p, f, len);
        free(f);
        double *back = NULL;
        const wd_status st = wd_npy_read_spinor(p, DIMS, &back, NULL);
        check(cases[c].what, st == WD_OK && back && !memcmp(back, PSI, nbytes),
              st ? wd_last_error() : NULL);
        free(back);
        unlink(p);
    }
    free(be);
}

/* write a file with this dict and data of the right size for DIMS */
static const char *with_dict(const char *name, const char *dict, int major, int minor)
{
    size_t len;
    unsigned char *f = npy_file(major, minor, dict, 64, PSI, NREAL * 8, &len);
    const char *p = path(name);
    spit(p, f, len);
    free(f);
    return p;
}

static void test_malformed(void)
{
    const int T = DIMS[3], Z = DIMS[2], Y = DIMS[1], X = DIMS[0];
    char d[256];
    size_t len;
    unsigned char *good = npy_file(1, 0, SHAPE_DICT, 64, PSI, NREAL * 8, &len);
    const size_t head = len - NREAL * 8;

    expect_read_fail("missing file", path("nothing.npy"), DIMS, WD_ERR_IO, "cannot open");
    spit(path("empty.npy"), "", 0);
    expect_read_fail("empty file", path("empty.npy"), DIMS, WD_ERR_CORRUPT, "magic");

    unsigned char *b = malloc(len + 64);
    if (!b)
        exit(1);
    memcpy(b, good, len);
    b[1] = 'n';
    spit(path("magic.npy"), b, len);
    expect_read_fail("bad magic", path("magic.npy"), DIMS, WD_ERR_CORRUPT, "magic");
    const int versions[][2] = {{0, 9}, {1, 1}, {4, 0}};
    for (int v = 0; v < 3; v++) {
        memcpy(b, good, len);
        b[6] = (unsigned char)versions[v][0];
        b[7] = (unsigned char)versions[v][1];
        spit(path("version.npy"), b, len);
        char what[64];
        snprintf(what, sizeof what, "unsupported version %d.%d", versions[v][0], versions[v][1]);
        expect_read_fail(what, path("version.npy"), DIMS, WD_ERR_CORRUPT, "version");
    }
    spit(path("pre.npy"), good, 9);
    expect_read_fail("file ends inside the header length", path("pre.npy"), DIMS, WD_ERR_CORRUPT,
                     "header length");
    spit(path("head.npy"), good, 40);
    expect_read_fail("file ends inside the header", path("head.npy"), DIMS, WD_ERR_CORRUPT,
                     "header");
    spit(path("trunc.npy"), good, len - 8);
    expect_read_fail("data truncated by one complex half", path("trunc.npy"), DIMS,
                     WD_ERR_CORRUPT, "truncated");
    spit(path("nodata.npy"), good, head);
    expect_read_fail("header only, no data", path("nodata.npy"), DIMS, WD_ERR_CORRUPT,
                     "truncated");
    memcpy(b, good, len);
    memset(b + len, 0, 16);
    spit(path("long.npy"), b, len + 16);
    expect_read_fail("16 bytes after the data", path("long.npy"), DIMS, WD_ERR_CORRUPT,
                     "after the");
    memcpy(b, good, len);
    b[8] = 0xff;
    b[9] = 0xff;
    spit(path("hlen.npy"), b, len);
    expect_read_fail("header length past the end of the file", path("hlen.npy"), DIMS,
                     WD_ERR_CORRUPT, "header");
    free(b);

    struct {
        const char *what, *fmt, *field;
        wd_status want;
    } dicts[] = {
        {"header is not a dict", "['descr', '<c16']", "'{'", WD_ERR_CORRUPT},
        {"header dict not closed", "{'descr': '<c16', 'fortran_order': False, "
         "'shape': (%d, %d, %d, %d, 4, 3), ", "header", WD_ERR_CORRUPT},
        {"unquoted key", "{descr: '<c16', 'fortran_order': False, "
         "'shape': (%d, %d, %d, %d, 4, 3)}", "quoted key", WD_ERR_CORRUPT},
        {"unknown key", "{'descr': '<c16', 'fortran_order': False, 'units': 'GeV', "
         "'shape': (%d, %d, %d, %d, 4, 3)}", "units", WD_ERR_CORRUPT},
        {"missing key 'shape'", "{'descr': '<c16', 'fortran_order': False}", "shape",
         WD_ERR_CORRUPT},
        {"missing key 'descr'", "{'fortran_order': False, 'shape': (%d, %d, %d, %d, 4, 3)}",
         "descr", WD_ERR_CORRUPT},
        {"repeated key", "{'descr': '<c16', 'descr': '<c16', 'fortran_order': False, "
         "'shape': (%d, %d, %d, %d, 4, 3)}", "twice", WD_ERR_CORRUPT},
        {"fortran_order neither True nor False", "{'descr': '<c16', 'fortran_order': 0, "
         "'shape': (%d, %d, %d, %d, 4, 3)}", "fortran_order", WD_ERR_CORRUPT},
        {"fortran_order Falsey", "{'descr': '<c16', 'fortran_order': Falsey, "
         "'shape': (%d, %d, %d, %d, 4, 3)}", "fortran_order", WD_ERR_CORRUPT},
        {"negative shape entry", "{'descr': '<c16', 'fortran_order': False, "
         "'shape': (%d, -%d, %d, %d, 4, 3)}", "shape", WD_ERR_CORRUPT},
        {"shape is a list", "{'descr': '<c16', 'fortran_order': False, "
         "'shape': [%d, %d, %d, %d, 4, 3]}", "shape", WD_ERR_CORRUPT},
        {"text after the dict", "{'descr': '<c16', 'fortran_order': False, "
         "'shape': (%d, %d, %d, %d, 4, 3)} x", "padding", WD_ERR_CORRUPT},
        {"dtype float64 '<f8'", "{'descr': '<f8', 'fortran_order': False, "
         "'shape': (%d, %d, %d, %d, 4, 3)}", "'<f8'", WD_ERR_INVALID},
        {"dtype complex64 '<c8'", "{'descr': '<c8', 'fortran_order': False, "
         "'shape': (%d, %d, %d, %d, 4, 3)}", "'<c8'", WD_ERR_INVALID},
        {"dtype '|c16'", "{'descr': '|c16', 'fortran_order': False, "
         "'shape': (%d, %d, %d, %d, 4, 3)}", "descr", WD_ERR_INVALID},
        {"fortran_order True", "{'descr': '<c16', 'fortran_order': True, "
         "'shape': (%d, %d, %d, %d, 4, 3)}", "fortran_order", WD_ERR_INVALID},
        {"spin and colour swapped (.., 3, 4)", "{'descr': '<c16', 'fortran_order': False, "
         "'shape': (%d, %d, %d, %d, 3, 4)}", "(T, Z, Y, X, 4, 3)", WD_ERR_INVALID},
        {"five dimensions", "{'descr': '<c16', 'fortran_order': False, "
         "'shape': (%d, %d, %d, %d, 12)}", "(T, Z, Y, X, 4, 3)", WD_ERR_INVALID},
    };
    for (size_t c = 0; c < sizeof dicts / sizeof dicts[0]; c++) {
        snprintf(d, sizeof d, dicts[c].fmt, T, Z, Y, X);
        expect_read_fail(dicts[c].what, with_dict("dict.npy", d, 1, 0), DIMS, dicts[c].want,
                         dicts[c].field);
    }

    /* a well-formed file of other extents: refused against DIMS, naming both shapes */
    const int other[4] = {X, Y, Z, T + 2};
    const size_t n_other = NREAL / (size_t)T * (size_t)(T + 2);
    double *v = calloc(n_other, sizeof *v);
    if (!v)
        exit(1);
    snprintf(d, sizeof d, "{'descr': '<c16', 'fortran_order': False, 'shape': (%d, %d, %d, %d, "
             "4, 3), }", other[3], other[2], other[1], other[0]);
    unsigned char *f = npy_file(1, 0, d, 64, v, n_other * 8, &len);
    spit(path("other.npy"), f, len);
    free(f);
    free(v);
    char want[128];
    snprintf(want, sizeof want, "(%d, %d, %d, %d, 4, 3), expected (T, Z, Y, X, 4, 3) = (%d, %d, "
             "%d, %d, 4, 3)", T + 2, Z, Y, X, T, Z, Y, X);
    expect_read_fail("other extents than expected: both shapes named", path("other.npy"), DIMS,
                     WD_ERR_INVALID, want);
    double *psi = NULL;
    int found[4];
    wd_status st = wd_npy_read_spinor(path("other.npy"), NULL, &psi, found);
    check("... read without expected extents: reports them", st == WD_OK &&
          !memcmp(found, other, sizeof other), st ? wd_last_error() : NULL);
    free(psi);

    /* odd and too small extents in a well-formed file */
    snprintf(d, sizeof d, "{'descr': '<c16', 'fortran_order': False, 'shape': (%d, %d, %d, %d, "
             "4, 3), }", T, Z, Y, X + 1);
    f = npy_file(1, 0, d, 64, NULL, 0, &len);
    spit(path("odd.npy"), f, len);
    free(f);
    expect_read_fail("odd extent X", path("odd.npy"), NULL, WD_ERR_INVALID, "shape");
    snprintf(d, sizeof d, "{'descr': '<c16', 'fortran_order': False, 'shape': (2, %d, %d, %d, "
             "4, 3), }", Z, Y, X);
    expect_read_fail("extent T = 2", with_dict("small.npy", d, 1, 0), NULL, WD_ERR_INVALID,
                     "shape");

    /* NaN and Inf: the message names the site, spin and colour */
    const double bad[2] = {NAN, -INFINITY};
    for (int k = 0; k < 2; k++) {
        double *w = malloc(NREAL * sizeof *w);
        if (!w)
            exit(1);
        memcpy(w, PSI, NREAL * sizeof *w);
        /* site (x, y, z, t) = (1, 0, 1, 2), spin 3, colour 2, imaginary part */
        const size_t site = 1 + (size_t)X * (0 + (size_t)Y * (1 + (size_t)Z * 2));
        w[site * 24 + 3 * 6 + 2 * 2 + 1] = bad[k];
        f = npy_file(1, 0, SHAPE_DICT, 64, w, NREAL * 8, &len);
        spit(path("nan.npy"), f, len);
        free(f);
        free(w);
        expect_read_fail(k ? "-Inf in the data: its site named" : "NaN in the data: its site named",
                         path("nan.npy"), DIMS, WD_ERR_CORRUPT,
                         "(x, y, z, t) = (1, 0, 1, 2) spin 3 colour 2");
    }
    free(good);
    clear_dir();
}

static void test_writing(void)
{
    const char *p = path("w.npy");
    wd_status st = wd_npy_write_spinor(p, PSI, DIMS, 0);
    size_t n0, n1;
    unsigned char *before = slurp(p, &n0);
    check("write a new file", st == WD_OK && before, st ? wd_last_error() : NULL);

    st = wd_npy_check_writable(p, 0);
    check("check_writable refuses an existing file", st == WD_ERR_IO &&
          strstr(wd_last_error(), "exists"), wd_last_error());
    st = wd_npy_check_writable(p, 1);
    check("check_writable accepts it with overwrite", st == WD_OK, st ? wd_last_error() : NULL);
    st = wd_npy_check_writable(path("new.npy"), 0);
    check("check_writable accepts a new name", st == WD_OK, st ? wd_last_error() : NULL);
    check("... and creates nothing", access(path("new.npy"), F_OK) != 0, NULL);
    st = wd_npy_check_writable(path("no/such/dir.npy"), 0);
    check("check_writable refuses a missing directory", st == WD_ERR_IO, wd_last_error());

    double *other = malloc(NREAL * sizeof *other);
    if (!other)
        exit(1);
    for (size_t i = 0; i < NREAL; i++)
        other[i] = -PSI[i];
    st = wd_npy_write_spinor(p, other, DIMS, 0);
    unsigned char *after = slurp(p, &n1);
    check("an existing file is refused without overwrite", st == WD_ERR_IO &&
          strstr(wd_last_error(), "exists") && strstr(wd_last_error(), "w.npy"), wd_last_error());
    check("... and left byte for byte as it was", after && n0 == n1 && !memcmp(before, after, n0),
          NULL);
    free(after);

    st = wd_npy_write_spinor(p, other, DIMS, 1);
    double *back = NULL;
    if (st == WD_OK)
        st = wd_npy_read_spinor(p, DIMS, &back, NULL);
    check("overwrite replaces it", st == WD_OK && back && !memcmp(back, other, NREAL * 8),
          st ? wd_last_error() : NULL);
    free(back);

    other[7] = NAN;
    st = wd_npy_write_spinor(path("nan-w.npy"), other, DIMS, 0);
    check("a field with NaN is not written", st == WD_ERR_INVALID &&
          access(path("nan-w.npy"), F_OK) != 0, wd_last_error());
    st = wd_npy_write_spinor(p, other, DIMS, 1);
    back = NULL;
    wd_npy_read_spinor(p, DIMS, &back, NULL);
    check("... nor written over an existing file", st == WD_ERR_INVALID && back &&
          back[7] == -PSI[7], wd_last_error());
    free(back);
    const int odd[4] = {DIMS[0] + 1, DIMS[1], DIMS[2], DIMS[3]};
    st = wd_npy_write_spinor(path("odd-w.npy"), PSI, odd, 0);
    check("odd extents are refused", st == WD_ERR_INVALID && access(path("odd-w.npy"), F_OK) != 0,
          wd_last_error());
    st = wd_npy_write_spinor(path("no/such/dir.npy"), PSI, DIMS, 0);
    check("a missing directory is refused", st == WD_ERR_IO && strstr(wd_last_error(), "dir.npy"),
          wd_last_error());
    free(other);
    free(before);

    char list[1024];
    const int entries = dir_entries(list, sizeof list);
    check("no temporary file left behind (only w.npy)", entries == 1 && !strcmp(list, " w.npy"),
          list);
    unlink(p);
}

int main(int argc, char **argv)
{
    uint64_t seed = (uint64_t)time(NULL);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
        else {
            fprintf(stderr, "usage: test_npy [--seed N]\n");
            return 2;
        }
    }
    printf("test_npy: seed %llu (replay with --seed %llu)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/wdirac-npy-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("test_npy: mkdtemp");
        return 1;
    }

    wd_rng r;
    wd_rng_seed(&r, seed);
    /* distinct extents, so that a transposed shape cannot pass */
    static const int choice[4][2] = {{4, 6}, {8, 10}, {12, 14}, {16, 18}};
    for (int mu = 0; mu < 4; mu++)
        DIMS[mu] = choice[mu][wd_rng_u64(&r) & 1];
    printf("lattice %d %d %d %d (X Y Z T)\n", DIMS[0], DIMS[1], DIMS[2], DIMS[3]);
    NREAL = 24 * wd_volume(DIMS);
    PSI = malloc(NREAL * sizeof *PSI);
    if (!PSI)
        return 1;
    wd_spinor_random((double complex *)(void *)PSI, DIMS, &r);
    snprintf(SHAPE_DICT, sizeof SHAPE_DICT, "{'descr': '<c16', 'fortran_order': False, "
             "'shape': (%d, %d, %d, %d, 4, 3), }", DIMS[3], DIMS[2], DIMS[1], DIMS[0]);

    test_round_trip();
    test_independent();
    test_malformed();
    test_writing();

    free(PSI);
    clear_dir();
    rmdir(dir);
    printf("%d of %d failed\n", checks_failed, checks_run);
    return checks_failed ? 1 : 0;
}
