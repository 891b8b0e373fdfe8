/*
 * test_io_decomposed: gauge and spinor files, the heatbath and the gauge
 * observables on a process grid against one process.
 *
 *   mpirun -n N test_io_decomposed [--seed N]   (default seed: the time, printed)
 *
 * For every grid of N ranks on an 8x8x8x8 lattice (each of X, Y, Z, T
 * split alone and, with 4 ranks, two at once) and on 8x8x4x16 (T split in
 * four among others), every rank computes the
 * whole-lattice reference with the single-process functions and compares
 * its block of the decomposed result with the same block of it:
 *   heatbath   a hot start, two compound sweeps (heatbath + 1
 *              overrelaxation) and one overrelaxation sweep, bit for bit
 *   observables  wd_gauge_observables_block == wd_gauge_observables, bit
 *              for bit
 *   write      wd_gauge_write_block for NERSC (64 and 32 bit, 3x3 and two
 *              rows, both byte orders) and ILDG (64, 32), and
 *              wd_npy_write_spinor_block: byte for byte the file the
 *              single-process writer makes of the whole field
 *              (SOURCE_DATE_EPOCH fixes the NERSC date)
 *   read       wd_gauge_read_block and wd_npy_read_spinor_block of those
 *              files: the block of the single-process read, bit for bit,
 *              and the same info
 *   bare       a NERSC file with FLOATING_POINT = IEEE32 (no byte order)
 *              written little endian: read again that way, as one process
 *   report     WD_GAUGE_READ_REPORT_ONLY on a wrong PLAQUETTE: read, the
 *              mismatch in info as one process records it
 *   errors     a missing file, a corrupted checksum, a wrong plaquette,
 *              wrong extents, a NaN in a spinor file, a NaN in a spinor to
 *              write, an existing output: the status of the single-process
 *              function on every rank, the same message on every rank, the
 *              block untouched, nothing written
 * Data are fresh each run (hot start and spinor from the seed).  One line
 * per check on rank 0 (a check fails when it fails on any rank; failing
 * ranks print their own line); "N of M failed" last; exit 1 on any failure.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "wd_comm.h"
#include "wdirac.h"
#include "wdirac_gauge.h"
#include "wdirac_npy.h"

static int rank, nranks, checks_run, checks_failed;
static char dir[256];

static void *xalloc(size_t n)
{
    void *p = calloc(1, n);
    if (!p) {
        fprintf(stderr, "test_io_decomposed: out of memory\n");
        exit(1);
    }
    return p;
}

static void check(int ok, const char *what)
{
    double bad = !ok;
    if (wd_comm_sum(&bad, 1) != WD_OK) {
        fprintf(stderr, "test_io_decomposed: rank %d: %s\n", rank, wd_last_error());
        exit(1);
    }
    checks_run++;
    checks_failed += bad > 0;
    if (!ok)
        printf("rank %d: %-70s FAIL\n", rank, what);
    else if (rank == 0 && bad > 0)
        printf("%-78s FAIL (on %g rank(s))\n", what, bad);
    else if (rank == 0)
        printf("%-78s OK\n", what);
    fflush(stdout);
}

/* the block of lat of a global field of `reals` doubles a site */
static void extract(double *local, const double *global, const wd_lattice *lat, int reals)
{
    const int *L = lat->local, *D = lat->dims, *o = lat->origin;
    for (int t = 0; t < L[3]; t++)
        for (int z = 0; z < L[2]; z++)
            for (int y = 0; y < L[1]; y++) {
                const size_t ls = (size_t)L[0] * (y + (size_t)L[1] * (z + (size_t)L[2] * t));
                const size_t gs = o[0] + (size_t)D[0] * ((y + o[1]) + (size_t)D[1] *
                                  ((z + o[2]) + (size_t)D[2] * (t + o[3])));
                memcpy(local + reals * ls, global + reals * gs, reals * L[0] * sizeof(double));
            }
}

static int same_bits(const double *a, const double *b, size_t n)
{
    return memcmp(a, b, n * sizeof *a) == 0;
}

/* every rank got the same status and message; st is the expected status */
static int agreed(wd_status got, wd_status want)
{
    char msg[512];
    snprintf(msg, sizeof msg, "%s", got == WD_OK ? "" : wd_last_error());
    char first[512];
    memcpy(first, msg, sizeof msg);
    int ok = got == want;
    if (wd_comm_bcast(first, sizeof first, 0) != WD_OK)
        return 0;
    ok &= strcmp(first, msg) == 0;
    if (!ok)
        printf("rank %d: status %d (expected %d), message '%s' (rank 0: '%s')\n", rank, (int)got,
               (int)want, msg, first);
    return ok;
}

static int files_equal(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    while (same) {
        const int ca = fgetc(fa), cb = fgetc(fb);
        same = ca == cb;
        if (ca == EOF || cb == EOF)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

static int exists(const char *p)
{
    return access(p, F_OK) == 0;
}

typedef struct refs {
    const double *u;    /* global gauge field after the sweeps */
    const double *psi;  /* global spinor */
    int dims[4];
} refs;

static void run_grid(const int procs[4], const refs *r, uint64_t seed, int *case_no)
{
    wd_lattice lat;
    char what[200], g[50], path[400], single[400];
    if (wd_lattice_make(&lat, r->dims, procs) != WD_OK) {
        printf("rank %d: grid %d %d %d %d: %s\n", rank, procs[0], procs[1], procs[2], procs[3],
               wd_last_error());
        exit(1);
    }
    snprintf(g, sizeof g, "grid %d %d %d %d", procs[0], procs[1], procs[2], procs[3]);
    const size_t nl = wd_volume(lat.local), V = wd_volume(r->dims);
    double *u = xalloc(72 * nl * sizeof *u), *ref = xalloc(72 * nl * sizeof *ref);
    double *glob = xalloc(72 * V * sizeof *glob);

    /* the heatbath: the same sequence on the whole lattice and the blocks */
    int ok = wd_gauge_init(glob, r->dims, WD_START_HOT, seed) == WD_OK &&
             wd_gauge_init_block(u, &lat, WD_START_HOT, seed) == WD_OK;
    extract(ref, glob, &lat, 72);
    snprintf(what, 150, "%s: hot start, bit for bit", g);
    check(ok && same_bits(u, ref, 72 * nl), what);
    for (int s = 0; s < 2; s++) {
        ok = wd_gauge_heatbath_sweep(glob, r->dims, 5.9, seed, (uint64_t)s, 1) == WD_OK &&
             wd_gauge_heatbath_sweep_block(u, &lat, 5.9, seed, (uint64_t)s, 1) == WD_OK;
        extract(ref, glob, &lat, 72);
        snprintf(what, 150, "%s: heatbath sweep %d (+1 overrelaxation), bit for bit", g, s);
        check(ok && same_bits(u, ref, 72 * nl), what);
    }
    ok = wd_gauge_overrelax_sweep(glob, r->dims, 1) == WD_OK &&
         wd_gauge_overrelax_sweep_block(u, &lat, 1) == WD_OK;
    extract(ref, glob, &lat, 72);
    snprintf(what, 150, "%s: overrelaxation sweep, bit for bit", g);
    check(ok && same_bits(u, ref, 72 * nl), what);

    wd_gauge_obs o1, ob;
    ok = wd_gauge_observables(glob, r->dims, &o1) == WD_OK &&
         wd_gauge_observables_block(u, &lat, &ob) == WD_OK;
    snprintf(what, 150, "%s: observables, bit for bit (plaquette %.15f)", g, o1.plaquette);
    check(ok && memcmp(&o1, &ob, sizeof o1) == 0 && o1.plaquette > 0.2, what);

    /* the files of the reference field (the same seed: the heatbath's
     * result, checked equal above), every write option */
    extract(u, r->u, &lat, 72);
    static const struct {
        const char *name;
        wd_gauge_format format;
        int precision, two_row, little;
    } opt[] = {{"NERSC 64 3x3 big", WD_GAUGE_NERSC, 64, 0, 0},
               {"NERSC 32 two-row little", WD_GAUGE_NERSC, 32, 1, 1},
               {"NERSC 64 two-row big", WD_GAUGE_NERSC, 64, 1, 0},
               {"NERSC 32 3x3 little", WD_GAUGE_NERSC, 32, 0, 1},
               {"ILDG 64", WD_GAUGE_ILDG, 64, 0, 0},
               {"ILDG 32", WD_GAUGE_ILDG, 32, 0, 0}};
    for (size_t k = 0; k < sizeof opt / sizeof opt[0]; k++) {
        wd_gauge_write_opts w = wd_gauge_write_defaults();
        w.format = opt[k].format;
        w.precision = opt[k].precision;
        w.two_row = opt[k].two_row;
        w.little_endian = opt[k].little;
        snprintf(path, sizeof path, "%s/c%d_%zu.block", dir, *case_no, k);
        snprintf(single, sizeof single, "%s/c%d_%zu.single", dir, *case_no, k);
        wd_status s1 = WD_OK;
        if (rank == 0)
            s1 = wd_gauge_write(single, r->u, r->dims, &w);
        ok = wd_gauge_write_block(path, u, &lat, &w) == WD_OK && s1 == WD_OK;
        snprintf(what, 150, "%s: write %s, the single-process bytes", g, opt[k].name);
        check(ok && (rank != 0 || files_equal(path, single)), what);

        double *whole = NULL;
        wd_gauge_info i1, ib;
        memset(&i1, 0, sizeof i1);
        s1 = wd_gauge_read(single, r->dims, 0, &whole, &i1);
        ok = s1 == WD_OK;
        if (ok)
            extract(ref, whole, &lat, 72);
        free(whole);
        memset(u, 0, 72 * nl * sizeof *u);
        ok &= wd_gauge_read_block(path, &lat, 0, u, &ib) == WD_OK;
        snprintf(what, 150, "%s: read %s, the single-process field and info", g, opt[k].name);
        check(ok && same_bits(u, ref, 72 * nl) && memcmp(&i1, &ib, sizeof i1) == 0, what);
        extract(u, r->u, &lat, 72);
    }

    /* spinors */
    double *psi = xalloc(24 * nl * sizeof *psi), *pref = xalloc(24 * nl * sizeof *pref);
    extract(psi, r->psi, &lat, 24);
    snprintf(path, sizeof path, "%s/s%d.block.npy", dir, *case_no);
    snprintf(single, sizeof single, "%s/s%d.single.npy", dir, *case_no);
    wd_status s1 = rank == 0 ? wd_npy_write_spinor(single, r->psi, r->dims, 0) : WD_OK;
    ok = wd_npy_write_spinor_block(path, psi, &lat, 0) == WD_OK && s1 == WD_OK;
    snprintf(what, 150, "%s: write spinor .npy, the single-process bytes", g);
    check(ok && (rank != 0 || files_equal(path, single)), what);
    memset(psi, 0, 24 * nl * sizeof *psi);
    extract(pref, r->psi, &lat, 24);
    ok = wd_npy_read_spinor_block(path, &lat, psi) == WD_OK;
    snprintf(what, 150, "%s: read spinor .npy, bit for bit", g);
    check(ok && same_bits(psi, pref, 24 * nl), what);

    /* errors: every rank the single-process status and rank 0's message,
     * the block untouched */
    memset(u, 0x5a, 72 * nl * sizeof *u);
    memcpy(ref, u, 72 * nl * sizeof *u);
    snprintf(path, sizeof path, "%s/missing", dir);
    ok = agreed(wd_gauge_read_block(path, &lat, 0, u, NULL), WD_ERR_IO);
    snprintf(what, 150, "%s: read a missing file: WD_ERR_IO everywhere, block untouched", g);
    check(ok && same_bits(u, ref, 72 * nl), what);

    /* corrupt copies of the NERSC 64 file, made by rank 0 */
    char bad_sum[400], bad_plaq[400], bad_dims[400];
    snprintf(single, sizeof single, "%s/c%d_0.single", dir, *case_no);
    snprintf(bad_sum, sizeof bad_sum, "%s/c%d.badsum", dir, *case_no);
    snprintf(bad_plaq, sizeof bad_plaq, "%s/c%d.badplaq", dir, *case_no);
    snprintf(bad_dims, sizeof bad_dims, "%s/c%d.baddims", dir, *case_no);
    if (rank == 0) {
        FILE *in = fopen(single, "rb");
        FILE *a = fopen(bad_sum, "wb"), *b = fopen(bad_plaq, "wb");
        char line[256];
        long long data = 0;
        while (in && fgets(line, sizeof line, in)) {
            char la[256], lb[256];
            snprintf(la, sizeof la, "%s", line);
            snprintf(lb, sizeof lb, "%s", line);
            if (!strncmp(line, "PLAQUETTE = ", 12))
                snprintf(lb, sizeof lb, "PLAQUETTE = 0.123\n");
            fputs(la, a);
            fputs(lb, b);
            if (!strcmp(line, "END_HEADER\n"))
                break;
        }
        data = ftell(in);
        int c, n = 0;
        while ((c = fgetc(in)) != EOF) {
            /* one flipped bit deep in the data: the checksum catches it */
            fputc(n == 4321 ? c ^ 0x01 : c, a);
            fputc(c, b);
            n++;
        }
        (void)data;
        fclose(in);
        fclose(a);
        fclose(b);
        wd_gauge_write_opts w = wd_gauge_write_defaults();
        const int other[4] = {r->dims[0], r->dims[1], r->dims[2], r->dims[3] / 2};
        double *half = xalloc(72 * wd_volume(other) * sizeof *half);
        wd_gauge_init(half, other, WD_START_HOT, seed);
        wd_gauge_write(bad_dims, half, other, &w);
        free(half);
    }
    wd_comm_agree(WD_OK); /* a barrier: the files exist */
    double *whole = NULL;
    static const struct {
        const char *name;
        int which;
    } bad[] = {{"a flipped data bit (CHECKSUM)", 0}, {"a wrong PLAQUETTE", 1},
               {"wrong extents (T = 4)", 2}};
    for (int k = 0; k < 3; k++) {
        const char *p = bad[k].which == 0 ? bad_sum : bad[k].which == 1 ? bad_plaq : bad_dims;
        const wd_status want = wd_gauge_read(p, r->dims, 0, &whole, NULL);
        ok = want != WD_OK && agreed(wd_gauge_read_block(p, &lat, 0, u, NULL), want);
        snprintf(what, 150, "%s: read %s: status %d everywhere, block untouched", g,
                 bad[k].name, (int)want);
        check(ok && same_bits(u, ref, 72 * nl), what);
    }

    /* a bare FLOATING_POINT = IEEE64 file written little endian: the
     * checksum holds only the other byte order, read again that way */
    char bare[400];
    snprintf(bare, sizeof bare, "%s/c%d.bare", dir, *case_no);
    if (rank == 0) {
        char little[400];
        snprintf(little, sizeof little, "%s/c%d_3.single", dir, *case_no);
        FILE *in = fopen(little, "rb"), *out = fopen(bare, "wb");
        char line[256];
        while (in && out && fgets(line, sizeof line, in)) {
            fputs(strncmp(line, "FLOATING_POINT", 14) ? line : "FLOATING_POINT = IEEE32\n", out);
            if (!strcmp(line, "END_HEADER\n"))
                break;
        }
        int c;
        while (in && out && (c = fgetc(in)) != EOF)
            fputc(c, out);
        if (in)
            fclose(in);
        if (out)
            fclose(out);
    }
    wd_comm_agree(WD_OK);
    {
        wd_gauge_info i1, ib;
        memset(&i1, 0, sizeof i1);
        ok = wd_gauge_read(bare, r->dims, 0, &whole, &i1) == WD_OK && !i1.big_endian;
        if (ok)
            extract(ref, whole, &lat, 72);
        free(whole);
        whole = NULL;
        memset(u, 0, 72 * nl * sizeof *u);
        ok &= wd_gauge_read_block(bare, &lat, 0, u, &ib) == WD_OK;
        snprintf(what, 150, "%s: read a bare IEEE32 file written little endian", g);
        check(ok && same_bits(u, ref, 72 * nl) && memcmp(&i1, &ib, sizeof i1) == 0, what);
    }

    /* report only: a wrong PLAQUETTE is recorded, the field read */
    {
        wd_gauge_info i1, ib;
        memset(&i1, 0, sizeof i1);
        ok = wd_gauge_read(bad_plaq, r->dims, WD_GAUGE_READ_REPORT_ONLY, &whole, &i1) == WD_OK;
        if (ok)
            extract(ref, whole, &lat, 72);
        free(whole);
        whole = NULL;
        ok &= wd_gauge_read_block(bad_plaq, &lat, WD_GAUGE_READ_REPORT_ONLY, u, &ib) == WD_OK;
        snprintf(what, 150, "%s: report only on a wrong PLAQUETTE: read, info as one process", g);
        check(ok && same_bits(u, ref, 72 * nl) && memcmp(&i1, &ib, sizeof i1) == 0 &&
                  ib.plaquette_header == 0.123, what);
    }

    /* a NaN in a spinor to write: refused, nothing written; in a file:
     * refused on read */
    extract(psi, r->psi, &lat, 24);
    if (rank == nranks - 1)
        psi[24 * nl - 5] = NAN;
    snprintf(path, sizeof path, "%s/s%d.nan.npy", dir, *case_no);
    ok = agreed(wd_npy_write_spinor_block(path, psi, &lat, 0), WD_ERR_INVALID);
    snprintf(what, 150, "%s: write a spinor with a NaN: WD_ERR_INVALID everywhere, no file", g);
    check(ok && !exists(path), what);
    snprintf(single, sizeof single, "%s/s%d.nan.single.npy", dir, *case_no);
    if (rank == 0) {
        double *gp = xalloc(24 * V * sizeof *gp);
        memcpy(gp, r->psi, 24 * V * sizeof *gp);
        FILE *f;
        wd_npy_write_spinor(single, gp, r->dims, 0);
        /* the last double of the file becomes a NaN */
        if ((f = fopen(single, "r+b"))) {
            const double nan = NAN;
            fseek(f, -8, SEEK_END);
            fwrite(&nan, 8, 1, f);
            fclose(f);
        }
        free(gp);
    }
    wd_comm_agree(WD_OK);
    memcpy(pref, psi, 24 * nl * sizeof *psi);
    ok = agreed(wd_npy_read_spinor_block(single, &lat, psi), WD_ERR_CORRUPT);
    snprintf(what, 150, "%s: read a spinor file with a NaN: WD_ERR_CORRUPT everywhere", g);
    check(ok && memcmp(psi, pref, 24 * nl * sizeof *psi) == 0, what);

    snprintf(path, sizeof path, "%s/c%d_0.block", dir, *case_no);
    memset(u, 0x5a, 72 * nl * sizeof *u);
    ok = agreed(wd_gauge_write_block(path, u, &lat, NULL), WD_ERR_INVALID);
    snprintf(what, 150, "%s: write a non-SU(3) field: WD_ERR_INVALID everywhere", g);
    check(ok, what);
    extract(u, r->u, &lat, 72);
    ok = agreed(wd_gauge_write_block(path, u, &lat, NULL), WD_ERR_IO);
    snprintf(what, 150, "%s: write over an existing file: WD_ERR_IO everywhere", g);
    check(ok, what);

    free(u);
    free(ref);
    free(glob);
    free(psi);
    free(pref);
    ++*case_no;
}

int main(int argc, char **argv)
{
    if (wd_init(&argc, &argv) != WD_OK) {
        fprintf(stderr, "test_io_decomposed: %s\n", wd_last_error());
        return 1;
    }
    rank = wd_rank();
    nranks = wd_ranks();
    uint64_t seed = (uint64_t)time(NULL);
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
    if (wd_comm_bcast(&seed, sizeof seed, 0) != WD_OK)
        return 1;
    /* every rank uses rank 0's scratch directory (one file system) */
    if (rank == 0) {
        snprintf(dir, sizeof dir, "%s/wdirac-iodec-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR")
                                                                              : "/tmp");
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            dir[0] = 0;
        }
    }
    if (wd_comm_bcast(dir, sizeof dir, 0) != WD_OK || !dir[0])
        return 1;
    setenv("SOURCE_DATE_EPOCH", "1700000000", 1);
    if (rank == 0)
        printf("test_io_decomposed: %d rank(s), seed %llu (--seed %llu replays)\n", nranks,
               (unsigned long long)seed, (unsigned long long)seed);

    /* 8^4: every dimension split alone and two at once; 8x8x4x16: T in
     * four (a rank's two T neighbours differ), non-cubic */
    static const int lattices[2][4] = {{8, 8, 8, 8}, {8, 8, 4, 16}};
    int case_no = 0;
    for (int n = 0; n < 2; n++) {
        refs r = {NULL, NULL, {0, 0, 0, 0}};
        memcpy(r.dims, lattices[n], sizeof r.dims);
        const size_t V = wd_volume(r.dims);
        double *u = xalloc(72 * V * sizeof *u), *psi = xalloc(24 * V * sizeof *psi);
        wd_gauge_init(u, r.dims, WD_START_HOT, seed);
        wd_gauge_heatbath_sweep(u, r.dims, 5.9, seed, 0, 1);
        wd_gauge_heatbath_sweep(u, r.dims, 5.9, seed, 1, 1);
        wd_gauge_overrelax_sweep(u, r.dims, 1);
        wd_spinor_fill_random(psi, r.dims, seed ^ 0x5eed);
        r.u = u;
        r.psi = psi;
        if (rank == 0)
            printf("lattice %dx%dx%dx%d\n", r.dims[0], r.dims[1], r.dims[2], r.dims[3]);

        /* every grid of nranks ranks with local extents even and >= 4 */
        int p[4];
        for (p[3] = 1; p[3] <= nranks; p[3]++)
            for (p[2] = 1; p[2] <= nranks; p[2]++)
                for (p[1] = 1; p[1] <= nranks; p[1]++)
                    for (p[0] = 1; p[0] <= nranks; p[0]++) {
                        if (p[0] * p[1] * p[2] * p[3] != nranks)
                            continue;
                        int fits = 1;
                        for (int mu = 0; mu < 4; mu++)
                            fits &= r.dims[mu] % p[mu] == 0 && (r.dims[mu] / p[mu]) % 2 == 0 &&
                                    r.dims[mu] / p[mu] >= 4;
                        if (fits)
                            run_grid(p, &r, seed, &case_no);
                    }
        free(u);
        free(psi);
    }

    if (!checks_run) {
        /* a run that tests nothing must not pass */
        if (rank == 0)
            printf("no grid of %d ranks fits the lattices with even local extents >= 4\n",
                   nranks);
        checks_failed = 1;
    }
    if (rank == 0) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "test_io_decomposed: could not remove %s\n", dir);
        printf("%d of %d failed\n", checks_failed, checks_run);
    }
    wd_finalize();
    return checks_failed ? 1 : 0;
}
