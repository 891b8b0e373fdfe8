/*
 * mg_file.c: a multigrid setup's null vectors in a file (wd_mg.h), so that
 * a later run skips the relaxation and rebuilds the same multigrid, bit for
 * bit (the vectors are stored as relaxed, before the orthonormalisation,
 * and every later step is deterministic).
 *
 * The externally accessible functions are
 *   wd_mg_file_open    open a file for reading and check its header against
 *                      the settings and the lattice (WD_ERR_INVALID naming
 *                      what differs)
 *   wd_mg_file_create  start writing one (the safe writer: nothing appears
 *                      at path unless wd_mg_file_finish succeeds)
 *   wd_mg_file_io      read or write one level's vectors, summing them
 *   wd_mg_file_io_grid the same on a process grid: every rank's block
 *                      through rank 0, one global time slice at a time
 *   wd_mg_file_finish  check (reading) or write (writing) the checksum and
 *                      close
 *
 * Format: the 16 bytes "wdirac-mg-nvec1\n", then 32-bit integers: the byte
 * order mark 0x01020304, the levels, the fine extents X Y Z T, and for each
 * level but the last: block X Y Z T, nvec, components a site of that level;
 * then each level's vectors as complex doubles, site-major
 * ((site * nvec + k) * components + a, the level's sites in lexicographic
 * order); then the Adler-32 of those bytes (zlib) as a 32-bit integer.
 * Integers and doubles are in the writer's byte order; a reader of the
 * other order is refused by the mark.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "wd_comm.h"
#include "wd_core.h"
#include "wd_file_write.h"
#include "wd_mg.h"

static const char magic[16] = "wdirac-mg-nvec1\n";
enum { MARK = 0x01020304, MAX_HEADER = 3 + 4 + 6 * (WD_MG_MAX_LEVELS - 1) };

/* the header's integers for these settings and extents; returns the count */
static int header(int32_t *h, const wd_mg_settings *m, const int dims[4])
{
    int k = 0;
    h[k++] = MARK;
    h[k++] = m->levels;
    for (int mu = 0; mu < 4; ++mu)
        h[k++] = dims[mu];
    for (int l = 0; l + 1 < m->levels; ++l) {
        for (int mu = 0; mu < 4; ++mu)
            h[k++] = m->block[l][mu];
        h[k++] = m->nvec[l];
        h[k++] = l ? 2 * m->nvec[l - 1] : 12;
    }
    return k;
}

wd_status wd_mg_file_open(FILE **fp, const char *path, const wd_mg_settings *m, const int dims[4])
{
    *fp = fopen(path, "rb");
    if (!*fp)
        return wd_fail(WD_ERR_IO, "multigrid file '%s': cannot open it for reading", path);
    char got[16];
    int32_t want[MAX_HEADER], have[MAX_HEADER];
    const int n = header(want, m, dims);
    wd_status st = WD_OK;
    if (fread(got, 1, sizeof got, *fp) != sizeof got || memcmp(got, magic, sizeof got) != 0)
        st = wd_fail(WD_ERR_CORRUPT, "multigrid file '%s': not a wdirac null-vector file (its "
                     "first 16 bytes)", path);
    else if (fread(have, sizeof *have, 2, *fp) != 2 || have[0] != MARK)
        st = wd_fail(WD_ERR_CORRUPT, "multigrid file '%s': truncated, or written on a machine of "
                     "the other byte order", path);
    else if (have[1] != m->levels)
        st = wd_fail(WD_ERR_INVALID, "multigrid file '%s': it holds %d levels, the settings ask "
                     "for %d", path, have[1], m->levels);
    else if (fread(have + 2, sizeof *have, (size_t)n - 2, *fp) != (size_t)n - 2)
        st = wd_fail(WD_ERR_CORRUPT, "multigrid file '%s': truncated header", path);
    for (int i = 2; st == WD_OK && i < n; ++i)
        if (have[i] != want[i]) {
            static const char *what[6] = {"block X", "block Y", "block Z", "block T", "nvec",
                                          "components a site"};
            if (i < 6)
                st = wd_fail(WD_ERR_INVALID, "multigrid file '%s': it was written for lattice "
                             "extent %d in dimension %d, this lattice has %d", path, have[i],
                             i - 2, want[i]);
            else
                st = wd_fail(WD_ERR_INVALID, "multigrid file '%s': level %d's %s is %d there, "
                             "%d in the settings", path, (i - 6) / 6, what[(i - 6) % 6], have[i],
                             want[i]);
        }
    if (st != WD_OK) {
        fclose(*fp);
        *fp = NULL;
    }
    return st;
}

wd_status wd_mg_file_create(wd_file_temp *t, const char *path, int overwrite,
                            const wd_mg_settings *m, const int dims[4])
{
    wd_status st = wd_file_open_temp(t, path, "multigrid file", overwrite);
    if (st != WD_OK)
        return st;
    int32_t h[MAX_HEADER];
    const int n = header(h, m, dims);
    if (fwrite(magic, 1, sizeof magic, t->f) != sizeof magic ||
        fwrite(h, sizeof *h, (size_t)n, t->f) != (size_t)n)
        st = wd_file_commit(t, wd_fail(WD_ERR_IO, "multigrid file '%s': cannot write the header",
                                       path));
    return st;
}

wd_status wd_mg_file_io(FILE *f, int writing, void *data, size_t bytes, unsigned long *sum,
                        const char *path)
{
    /* zlib's adler32 takes at most UINT_MAX bytes a call */
    const size_t piece = (size_t)1 << 30;
    for (size_t done = 0; done < bytes;) {
        const size_t k = bytes - done < piece ? bytes - done : piece;
        unsigned char *p = (unsigned char *)data + done;
        if ((writing ? fwrite(p, 1, k, f) : fread(p, 1, k, f)) != k)
            return wd_fail(writing ? WD_ERR_IO : WD_ERR_CORRUPT, "multigrid file '%s': %s after "
                           "%zu of %zu bytes of null vectors", path,
                           writing ? "cannot write" : "truncated", done, bytes);
        *sum = adler32(*sum, p, (uInt)k);
        done += k;
    }
    return WD_OK;
}

/* the first failure stays (the message pattern goes on) */
static void keep(wd_status *st, wd_status s)
{
    if (*st == WD_OK)
        *st = s;
}

/* rank r's box of a global time slice (extents G, boxes of L at q) to
 * and from its part (L[0] L[1] L[2] records, x fastest), row by row */
static void box_rows(unsigned char *slice, unsigned char *part, const int G[4], const int L[4],
                     const int q[4], size_t record, int to_slice)
{
    const size_t row = (size_t)L[0] * record;
    for (int z = 0; z < L[2]; ++z)
        for (int y = 0; y < L[1]; ++y) {
            unsigned char *s =
                slice + (((size_t)(q[2] * L[2] + z) * G[1] + (size_t)(q[1] * L[1] + y)) * G[0] +
                         (size_t)q[0] * L[0]) * record;
            unsigned char *p = part + ((size_t)z * L[1] + y) * row;
            if (to_slice)
                memcpy(s, p, row);
            else
                memcpy(p, s, row);
        }
}

enum { TAG_SLICE = 7301 };

wd_status wd_mg_file_io_grid(FILE *f, int writing, void *block, const wd_grid *g,
                             const int local[4], size_t record, unsigned long *sum,
                             const char *path)
{
    const int root = g->rank == 0;
    int G[4];
    for (int mu = 0; mu < 4; ++mu)
        G[mu] = local[mu] * g->procs[mu];
    const size_t part_bytes = (size_t)local[0] * local[1] * local[2] * record;
    const size_t slice_bytes = (size_t)G[0] * G[1] * G[2] * record;
    unsigned char *part = malloc(part_bytes), *slice = root ? malloc(slice_bytes) : NULL;
    int(*coord)[4] = root ? malloc((size_t)g->size * sizeof *coord) : NULL;
    wd_status st = part && (!root || (slice && coord))
                       ? WD_OK
                       : wd_fail(WD_ERR_NOMEM, "multigrid file '%s': cannot allocate a time "
                                 "slice of %zu bytes", path, root ? slice_bytes : part_bytes);
    /* every rank's grid coordinates, as the grid orders them */
    for (int r = 0; root && st == WD_OK && r < g->size; ++r) {
        wd_grid gr;
        if ((st = wd_grid_make(&gr, g->dims, g->procs, g->size, r, 1)) == WD_OK)
            memcpy(coord[r], gr.coord, sizeof coord[r]);
    }
    if ((st = wd_comm_agree(st)) != WD_OK) {
        free(part);
        free(slice);
        free(coord);
        return st;
    }
    for (int t = 0; t < G[3]; ++t) {
        const int pt = t / local[3];
        unsigned char *mine = (unsigned char *)block + (size_t)(t % local[3]) * part_bytes;
        if (!root) {
            if (g->coord[3] == pt)
                keep(&st, writing ? wd_comm_send(mine, part_bytes, 0, TAG_SLICE)
                                  : wd_comm_recv(mine, part_bytes, 0, TAG_SLICE));
            continue;
        }
        if (!writing) {
            if (st == WD_OK)
                st = wd_mg_file_io(f, 0, slice, slice_bytes, sum, path);
            if (st != WD_OK)
                memset(slice, 0, slice_bytes);  /* zeros go out, the pattern kept */
        }
        for (int r = 0; r < g->size; ++r) {
            if (coord[r][3] != pt)
                continue;
            unsigned char *p = r ? part : mine;
            if (writing) {
                if (r)
                    keep(&st, wd_comm_recv(part, part_bytes, r, TAG_SLICE));
                box_rows(slice, p, G, local, coord[r], record, 1);
            } else {
                box_rows(slice, p, G, local, coord[r], record, 0);
                if (r)
                    keep(&st, wd_comm_send(part, part_bytes, r, TAG_SLICE));
            }
        }
        if (writing && st == WD_OK)
            st = wd_mg_file_io(f, 1, slice, slice_bytes, sum, path);
    }
    free(part);
    free(slice);
    free(coord);
    return wd_comm_agree(st);
}

wd_status wd_mg_file_finish(FILE *f, wd_file_temp *t, unsigned long sum, wd_status st,
                            const char *path)
{
    const uint32_t mine = (uint32_t)sum;
    if (t) {
        if (st == WD_OK && fwrite(&mine, sizeof mine, 1, t->f) != 1)
            st = wd_fail(WD_ERR_IO, "multigrid file '%s': cannot write the checksum", path);
        return wd_file_commit(t, st);
    }
    uint32_t theirs;
    if (st == WD_OK && fread(&theirs, sizeof theirs, 1, f) != 1)
        st = wd_fail(WD_ERR_CORRUPT, "multigrid file '%s': truncated (no checksum)", path);
    else if (st == WD_OK && theirs != mine)
        st = wd_fail(WD_ERR_CORRUPT, "multigrid file '%s': checksum mismatch (Adler-32 %08x in "
                     "the file, %08x of its null vectors)", path, theirs, mine);
    else if (st == WD_OK && fgetc(f) != EOF)
        st = wd_fail(WD_ERR_CORRUPT, "multigrid file '%s': bytes after the checksum", path);
    fclose(f);
    return st;
}
