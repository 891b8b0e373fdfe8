/*
 * io_block.c: gauge configurations and .npy spinors on a process grid
 * (wdirac_gauge.h, wdirac_npy.h): one reader / writer rank, rank 0, and
 * the blocks of every rank, one global time slice at a time.
 *
 * The externally accessible functions are
 *   wd_gauge_read_block       rank 0 reads and checks the header, decodes
 *                             the data slice by slice (checksums summed as
 *                             it goes) and sends each rank its part; the
 *                             field checks run on the blocks, over the
 *                             whole lattice
 *   wd_gauge_write_block      unitarity, observables and the NERSC checksum
 *                             over the blocks; rank 0 writes the header and
 *                             receives the slices as the writer asks for them
 *   wd_npy_write_propagator_block  a propagator's 144 complex a site, the
 *                          same way as a spinor
 *   wd_npy_read_spinor_block / wd_npy_write_spinor_block   the same for
 *                             spinor files
 *
 * Notes.  The readers and writers are the single-process ones
 * (gauge_io_*.c, spinor_npy.c), fed or drained one time slice at a time,
 * so that the bytes, the checks and the messages are theirs.  A time slice
 * is X Y Z sites in the file's order; the ranks of grid coordinate
 * pt = t / Lt each hold Lx Ly Lz of them, which are contiguous in the
 * block (t is its slowest coordinate): a part travels as one message and
 * lands in place.  Rank 0 holds one slice (as doubles; the decoder's
 * buffer of 1024 stored sites besides) and one rank's part of it on top of
 * its block; no rank holds more than its block twice (a read fills a
 * second block and copies it only when every check has passed).  Every
 * message pattern depends on the grid alone: a rank that meets a failure
 * (a read error, a failed message) keeps to it, sending zeros, and the
 * failure is agreed afterwards; rank 0's failures reach every rank with
 * rank 0's message as it is (verdict).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gauge_block.h"
#include "gauge_io_internal.h"
#include "heatbath_link.h"
#include "npy_internal.h"
#include "wd_comm.h"
#include "wd_core.h"
#include "wd_file_write.h"
#include "wdirac_npy.h"

/* wd_comm_send / recv tags of this file (gauge_block.c's are 71xx) */
enum { TAG_REDUCE = 7201, TAG_SLICE = 7202 };

/* keep the message pattern after a failure: remember the first */
static void keep(wd_status *st, wd_status s)
{
    if (*st == WD_OK)
        *st = s;
}

/* Collective: every rank's status agreed (wd_comm_agree); when rank 0
 * failed, every rank gets rank 0's status and message word for word. */
static wd_status verdict(wd_status st)
{
    struct {
        int status;
        char msg[512];
    } m;
    memset(&m, 0, sizeof m);
    m.status = (int)st;
    if (st != WD_OK)
        snprintf(m.msg, sizeof m.msg, "%s", wd_last_error());
    const wd_status agreed = wd_comm_agree(st);
    if (agreed == WD_OK)
        return WD_OK;
    if (wd_comm_bcast(&m, sizeof m, 0) != WD_OK || m.status == WD_OK)
        return agreed;
    return wd_fail((wd_status)m.status, "%s", m.msg);
}

/* Collective: v[0..n) (n <= 4) replaced by the smallest over every rank
 * (rank 0 gathers and compares, then broadcasts). */
static wd_status reduce_min(double *v, int n)
{
    wd_status st = WD_OK;
    if (wd_comm_rank())
        st = wd_comm_send(v, (size_t)n * sizeof *v, 0, TAG_REDUCE);
    else
        for (int r = 1; r < wd_comm_size(); r++) {
            double w[4];
            const wd_status s = wd_comm_recv(w, (size_t)n * sizeof *w, r, TAG_REDUCE);
            keep(&st, s);
            for (int k = 0; k < n && s == WD_OK; k++)
                if (w[k] < v[k])
                    v[k] = w[k];
        }
    if ((st = wd_comm_agree(st)) != WD_OK)
        return st;
    return wd_comm_bcast(v, (size_t)n * sizeof *v, 0);
}

/* ---- time slices between rank 0 and the blocks ------------------------- */

typedef struct slices {
    wd_grid g;
    int reals;            /* doubles a site */
    size_t slice_sites;   /* X Y Z */
    size_t part_sites;    /* Lx Ly Lz: one rank's part of a slice */
    double *slice, *pack; /* rank 0: one time slice, one rank's part */
} slices;

static size_t part_doubles(const slices *s)
{
    return s->part_sites * (size_t)s->reals;
}

/* Rank 0's buffers (others need none). */
static wd_status slices_alloc(slices *s, int reals, const char *fn, const char *path)
{
    const int *D = s->g.dims, *L = s->g.local;
    s->reals = reals;
    s->slice_sites = (size_t)D[0] * D[1] * D[2];
    s->part_sites = (size_t)L[0] * L[1] * L[2];
    if (s->g.rank != 0)
        return WD_OK;
    s->slice = malloc(s->slice_sites * (size_t)reals * sizeof *s->slice);
    s->pack = malloc(part_doubles(s) * sizeof *s->pack);
    if (!s->slice || !s->pack)
        return wd_fail(WD_ERR_NOMEM, "%s '%s': no memory for a time slice of %zu sites", fn,
                       path, s->slice_sites);
    return WD_OK;
}

static void slices_free(slices *s)
{
    free(s->slice);
    free(s->pack);
}

/* the rows of the part of the rank at grid coordinates q within the slice */
static double *part_row(const slices *s, double *slice, const int q[4], int y, int z)
{
    const int *L = s->g.local, *D = s->g.dims;
    const size_t site = (size_t)q[0] * L[0] +
                        (size_t)D[0] * ((size_t)(q[1] * L[1] + y) +
                                        (size_t)D[1] * (size_t)(q[2] * L[2] + z));
    return slice + (size_t)s->reals * site;
}

static void slice_to_part(const slices *s, const double *slice, const int q[4], double *part)
{
    const size_t row = (size_t)s->g.local[0] * (size_t)s->reals;
    for (int z = 0; z < s->g.local[2]; z++)
        for (int y = 0; y < s->g.local[1]; y++)
            memcpy(part + row * ((size_t)y + (size_t)s->g.local[1] * z),
                   part_row(s, (double *)slice, q, y, z), row * sizeof *part);
}

static void part_to_slice(const slices *s, const double *part, const int q[4], double *slice)
{
    const size_t row = (size_t)s->g.local[0] * (size_t)s->reals;
    for (int z = 0; z < s->g.local[2]; z++)
        for (int y = 0; y < s->g.local[1]; y++)
            memcpy(part_row(s, slice, q, y, z),
                   part + row * ((size_t)y + (size_t)s->g.local[1] * z), row * sizeof *part);
}

typedef wd_status (*produce_fn)(void *ctx, int t, double *slice);

/* Collective: rank 0 makes global time slices t = 0 .. T-1 in turn
 * (produce, which stops being called after a failure: zeros go out
 * instead) and sends every rank its part, which lands in that rank's
 * block.  Returns this rank's first failure, not agreed. */
static wd_status scatter(slices *s, double *block, produce_fn produce, void *ctx)
{
    const wd_grid *g = &s->g;
    const size_t part = part_doubles(s);
    wd_status st = WD_OK;
    if (g->rank != 0) {
        for (int t = 0; t < g->local[3]; t++)
            keep(&st, wd_comm_recv(block + part * (size_t)t, part * sizeof *block, 0, TAG_SLICE));
        return st;
    }
    for (int t = 0; t < g->dims[3]; t++) {
        if (st == WD_OK)
            st = produce(ctx, t, s->slice);
        if (st != WD_OK)
            memset(s->slice, 0, s->slice_sites * (size_t)s->reals * sizeof *s->slice);
        int q[4] = {0, 0, 0, t / g->local[3]};
        for (q[2] = 0; q[2] < g->procs[2]; q[2]++)
            for (q[1] = 0; q[1] < g->procs[1]; q[1]++)
                for (q[0] = 0; q[0] < g->procs[0]; q[0]++) {
                    const int to = wd_grid_rank_at(g->procs, q);
                    if (!to) {
                        slice_to_part(s, s->slice, q, block + part * (size_t)(t % g->local[3]));
                        continue;
                    }
                    slice_to_part(s, s->slice, q, s->pack);
                    keep(&st, wd_comm_send(s->pack, part * sizeof *s->pack, to, TAG_SLICE));
                }
    }
    return st;
}

/* Rank 0's side of a write: the writer asks for slice t (in turn), which
 * is gathered from its owners into s->slice. */
typedef struct gather_ctx {
    slices *s;
    const double *block;
    int next;
} gather_ctx;

static wd_status gather_slice(void *vctx, int t, const double **out)
{
    gather_ctx *c = vctx;
    slices *s = c->s;
    const wd_grid *g = &s->g;
    const size_t part = part_doubles(s);
    if (t != c->next)
        return wd_fail(WD_ERR_INTERNAL, "block write: the writer asked for time slice %d, "
                       "slice %d is next", t, c->next);
    c->next++;
    wd_status st = WD_OK;
    int q[4] = {0, 0, 0, t / g->local[3]};
    for (q[2] = 0; q[2] < g->procs[2]; q[2]++)
        for (q[1] = 0; q[1] < g->procs[1]; q[1]++)
            for (q[0] = 0; q[0] < g->procs[0]; q[0]++) {
                const int from = wd_grid_rank_at(g->procs, q);
                const double *src = c->block + part * (size_t)(t % g->local[3]);
                if (from) {
                    keep(&st, wd_comm_recv(s->pack, part * sizeof *s->pack, from, TAG_SLICE));
                    src = s->pack;
                }
                part_to_slice(s, src, q, s->slice);
            }
    *out = s->slice;
    return st;
}

/* Collective: rank 0 writes path through body(job), whose slices come
 * from gather_slice(gc) while every other rank sends its block's slices
 * in turn; the safe write's refusals (existing file, directory) first,
 * agreed before any slice moves. */
static wd_status write_file(slices *s, const double *block, const char *path, const char *kind,
                            int overwrite, wd_file_body body, void *job, gather_ctx *gc)
{
    const wd_grid *g = &s->g;
    wd_file_temp tmp;
    wd_status st = WD_OK;
    if (g->rank == 0)
        st = wd_file_open_temp(&tmp, path, kind, overwrite);
    if ((st = verdict(st)) != WD_OK)
        return st;
    if (g->rank == 0) {
        st = body(tmp.f, path, job);
        /* the slices the writer did not ask for after a failure, so that
         * every rank's sends complete */
        while (gc->next < g->dims[3]) {
            const double *unused;
            keep(&st, gather_slice(gc, gc->next, &unused));
        }
        st = wd_file_commit(&tmp, st);
    } else {
        const size_t part = part_doubles(s);
        for (int t = 0; t < g->local[3]; t++)
            keep(&st, wd_comm_send(block + part * (size_t)t, part * sizeof *block, 0, TAG_SLICE));
    }
    return verdict(st);
}

/* ---- gauge configurations ----------------------------------------------- */

typedef struct read_ctx {
    FILE *f;
    const char *path;
    int ildg;
    wd_io_data data;
    size_t volume, slice_sites;
    uint32_t sum, swapped, suma, sumb;
} read_ctx;

static wd_status read_gauge_slice(void *vctx, int t, double *slice)
{
    read_ctx *r = vctx;
    return wd_io_decode_stream(r->f, r->path, r->ildg ? "ildg-binary-data" : "data",
                               r->data.offset, r->slice_sites * (size_t)t, slice, r->slice_sites,
                               r->volume, &r->data.layout, &r->sum, &r->swapped,
                               r->ildg ? &r->suma : NULL, &r->sumb);
}

/* the global link index (site * 4 + mu) of the block's link l, or of the
 * whole lattice's link count when l is the block's (none found) */
static double global_link(const wd_grid *g, size_t l, size_t nlinks_block)
{
    if (l >= nlinks_block)
        return (double)(4 * wd_volume(g->dims));
    return (double)(4 * wd_grid_global_site(g, l / 4) + l % 4);
}

wd_status wd_gauge_read_block(const char *path, const wd_lattice *lat, unsigned flags,
                              double *u_block, wd_gauge_info *info_out)
{
    static const char fn[] = "wd_gauge_read_block";
    const int root = wd_comm_rank() == 0;
    const int report_only = (flags & WD_GAUGE_READ_REPORT_ONLY) != 0;
    wd_gauge_info info;
    memset(&info, 0, sizeof info);
    slices s;
    memset(&s, 0, sizeof s);
    read_ctx r;
    memset(&r, 0, sizeof r);
    double *block = NULL;
    size_t nsites = 0;

    wd_status st = wd_gauge_grid_of(&s.g, lat, fn);
    if (st == WD_OK && (!path || !*path))
        st = wd_fail(WD_ERR_INVALID, "%s: no file name", fn);
    if (st == WD_OK && !u_block)
        st = wd_fail(WD_ERR_INVALID, "%s '%s': null field", fn, path);
    if (st == WD_OK) {
        nsites = wd_volume(s.g.local);
        st = slices_alloc(&s, 72, fn, path);
        if (st == WD_OK && !(block = malloc(72 * nsites * sizeof *block)))
            st = wd_fail(WD_ERR_NOMEM, "%s '%s': no memory for a block of %zu sites", fn, path,
                         nsites);
    }
    if ((st = verdict(st)) != WD_OK)
        goto done;

    /* rank 0: the file, its format and its header, checked as
     * wd_gauge_read checks them */
    if (root) {
        wd_gauge_format format = WD_GAUGE_NERSC;
        if (!(r.f = fopen(path, "rb")))
            st = wd_io_fail(WD_ERR_IO, path, "cannot open: %s", strerror(errno));
        else if ((st = wd_io_format_of(r.f, path, &format)) == WD_OK) {
            r.ildg = format == WD_GAUGE_ILDG;
            st = r.ildg ? wd_ildg_read_header(r.f, path, s.g.dims, 0, &info, &r.data)
                        : wd_nersc_read_header(r.f, path, s.g.dims, 0, &info, &r.data);
        }
    }
    keep(&st, wd_comm_bcast(&info, sizeof info, 0));
    if ((st = verdict(st)) != WD_OK)
        goto done;

    /* the data, slice by slice; a bare NERSC file whose checksum holds
     * only little endian is read again that way, as wd_gauge_read does */
    r.path = path;
    r.volume = wd_volume(s.g.dims);
    r.slice_sites = s.slice_sites;
    for (int pass = 0; pass < 2; pass++) {
        r.sum = r.swapped = r.suma = r.sumb = 0;
        keep(&st, scatter(&s, block, read_gauge_slice, &r));
        int again = root && st == WD_OK && !r.ildg && pass == 0 &&
                    wd_nersc_little_after_all(&info, &r.data, r.sum, r.swapped);
        keep(&st, wd_comm_bcast(&again, sizeof again, 0));
        if (!again)
            break;
    }
    if (root) {
        info.checksum_data = r.sum;
        if (r.ildg) {
            info.suma_data = r.suma;
            info.sumb_data = r.sumb;
        }
        if (st == WD_OK)
            st = wd_io_check_sums(path, &info, report_only);
    }
    keep(&st, wd_comm_bcast(&info, sizeof info, 0));
    if ((st = verdict(st)) != WD_OK)
        goto done;

    /* finiteness, unitarity, plaquette and link trace of the whole field */
    const size_t nlinks = 4 * nsites;
    double m[2] = {global_link(&s.g, wd_io_first_nonfinite_link(block, nlinks), nlinks),
                   -wd_io_unitarity(block, nlinks)};
    if ((st = reduce_min(m, 2)) != WD_OK ||
        (st = wd_gauge_observables_block(block, lat, &info.obs)) != WD_OK)
        goto done;
    info.unitarity = -m[1];
    info.data_read = 1;
    if (!report_only) {
        double bad = global_link(&s.g, nlinks, nlinks);
        if (!(info.unitarity <= info.unitarity_tolerance)) {
            bad = global_link(&s.g,
                              wd_io_first_nonunitary_link(block, nlinks, info.unitarity_tolerance),
                              nlinks);
            if ((st = reduce_min(&bad, 1)) != WD_OK)
                goto done;
        }
        /* the same numbers on every rank: the same verdict */
        st = wd_io_judge_field(path, s.g.dims, &info, (size_t)m[0], (size_t)bad,
                               info.format == WD_GAUGE_ILDG ? "wdirac-info plaquette"
                                                            : "PLAQUETTE",
                               info.format == WD_GAUGE_ILDG ? "wdirac-info linkTrace"
                                                            : "LINK_TRACE");
    }
    if ((st = verdict(st)) != WD_OK)
        goto done;
    if (info.precision == 32) {
#pragma omp parallel for schedule(static)
        for (size_t l = 0; l < nlinks; l++)
            wd_su3_reunitarize(block + 18 * l);
    }
    memcpy(u_block, block, 72 * nsites * sizeof *block);

done:
    if (info_out)
        *info_out = info;
    if (r.f)
        fclose(r.f);
    free(block);
    slices_free(&s);
    return st;
}

wd_status wd_gauge_write_block(const char *path, const double *u_block, const wd_lattice *lat,
                               const wd_gauge_write_opts *opts)
{
    static const char fn[] = "wd_gauge_write_block";
    const wd_gauge_write_opts defaults = wd_gauge_write_defaults();
    if (!opts)
        opts = &defaults;
    slices s;
    memset(&s, 0, sizeof s);
    wd_status st = wd_gauge_grid_of(&s.g, lat, fn);
    if (st == WD_OK)
        st = wd_io_check_write_args(fn, path, u_block, s.g.dims, opts);
    if (st == WD_OK)
        st = slices_alloc(&s, 72, fn, path);
    if ((st = verdict(st)) != WD_OK) {
        slices_free(&s);
        return st;
    }

    const size_t nsites = wd_volume(s.g.local);
    double err = -wd_io_unitarity(u_block, 4 * nsites);
    if ((st = reduce_min(&err, 1)) == WD_OK && !(-err <= wd_io_unitarity_tolerance(64)))
        st = wd_fail(WD_ERR_INVALID, "%s '%s': the field is not finite SU(3) (max |U U^dag - 1|, "
                     "|det U - 1| = %.3g > %.0e); not written", fn, path, -err,
                     wd_io_unitarity_tolerance(64));
    gather_ctx gc = {&s, u_block, 0};
    wd_io_write_job job = {.u = NULL, .dims = s.g.dims, .opts = opts, .slice = gather_slice,
                           .slice_ctx = &gc};
    if (st == WD_OK)
        st = wd_gauge_observables_block(u_block, lat, &job.obs);
    if (st == WD_OK && opts->format == WD_GAUGE_NERSC) {
        /* the word sum is a sum mod 2^32: every rank's share, added
         * exactly in double (each below 2^32, fewer than 2^21 ranks) */
        const wd_io_layout layout = {opts->two_row ? 2 : 3, opts->precision / 8, 1};
        unsigned char buf[4 * 3 * 6 * 8];
        uint32_t sum = 0;
        for (size_t n = 0; n < nsites; n++)
            wd_io_encode_sites(buf, u_block + 72 * n, 1, &layout, &sum);
        double total = (double)sum;
        if ((st = wd_comm_sum(&total, 1)) == WD_OK) {
            job.sum = (uint32_t)((uint64_t)total & 0xffffffffu);
            job.have_sum = 1;
        }
    }
    if ((st = verdict(st)) == WD_OK)
        st = write_file(&s, u_block, path, "gauge file", opts->overwrite, wd_io_writer(opts),
                        &job, &gc);
    slices_free(&s);
    return st;
}

/* ---- spinor files ------------------------------------------------------- */

enum { SPINOR_REALS = 24 };

typedef struct npy_read_ctx {
    FILE *f;
    const char *path;
    const int *dims;
    size_t slice_reals;
    int swap;
} npy_read_ctx;

static wd_status read_spinor_slice(void *vctx, int t, double *slice)
{
    npy_read_ctx *r = vctx;
    if (fread(slice, sizeof *slice, r->slice_reals, r->f) != r->slice_reals) {
        const int e = ferror(r->f) ? errno : 0;
        return wd_fail(e ? WD_ERR_IO : WD_ERR_CORRUPT, "spinor file '%s': reading the data "
                       "failed: %s", r->path, e ? strerror(e) : "short read");
    }
    return wd_npy_check_data(r->path, slice, r->slice_reals, (long long)(r->slice_reals *
                             (size_t)t), r->dims, r->swap);
}

wd_status wd_npy_read_spinor_block(const char *path, const wd_lattice *lat, double *psi_block)
{
    static const char fn[] = "wd_npy_read_spinor_block";
    slices s;
    memset(&s, 0, sizeof s);
    npy_read_ctx r = {NULL, path, NULL, 0, 0};
    double *block = NULL;
    size_t nreals = 0;
    wd_status st = wd_gauge_grid_of(&s.g, lat, fn);
    if (st == WD_OK && (!path || !psi_block))
        st = wd_fail(WD_ERR_INVALID, "%s: path and psi_block must not be NULL", fn);
    if (st == WD_OK) {
        nreals = SPINOR_REALS * wd_volume(s.g.local);
        st = slices_alloc(&s, SPINOR_REALS, fn, path);
        if (st == WD_OK && !(block = malloc(nreals * sizeof *block)))
            st = wd_fail(WD_ERR_NOMEM, "%s '%s': no memory for a block of %zu sites", fn, path,
                         nreals / SPINOR_REALS);
    }
    if ((st = verdict(st)) != WD_OK)
        goto done;
    if (s.g.rank == 0)
        st = wd_npy_open_data(path, s.g.dims, &r.f, &r.swap);
    if ((st = verdict(st)) != WD_OK)
        goto done;
    r.dims = s.g.dims;
    r.slice_reals = s.slice_sites * SPINOR_REALS;
    st = verdict(scatter(&s, block, read_spinor_slice, &r));
    if (st == WD_OK)
        memcpy(psi_block, block, nreals * sizeof *block);

done:
    if (r.f)
        fclose(r.f);
    free(block);
    slices_free(&s);
    return st;
}

typedef struct npy_write_job {
    const int *dims;
    size_t slice_reals;
    gather_ctx *gc;
    const char *site_shape;   /* "4, 3" (spinor), "4, 3, 4, 3" (propagator) */
} npy_write_job;

/* wd_npy_write_spinor's bytes: the header, then the slices in turn */
static wd_status write_spinor_body(FILE *f, const char *path, void *vjob)
{
    const npy_write_job *j = vjob;
    char head[256];
    size_t hlen;
    wd_npy_header_shape(head, sizeof head, j->dims, j->site_shape, &hlen);
    int ok = fwrite(head, 1, hlen, f) == hlen;
    for (int t = 0; t < j->dims[3] && ok; t++) {
        const double *psi;
        const wd_status st = gather_slice(j->gc, t, &psi);
        if (st != WD_OK)
            return st;
        ok = fwrite(psi, sizeof *psi, j->slice_reals, f) == j->slice_reals;
    }
    if (!ok)
        return wd_fail(WD_ERR_IO, "spinor file '%s': writing the temporary file failed: %s",
                       path, strerror(errno));
    return WD_OK;
}

/* A field of `reals` doubles a site into a .npy of shape (T, Z, Y, X,
 * site_shape), rank 0 writing slice by slice; a NaN or Inf anywhere is
 * refused on every rank, naming its global site (and, for a spinor, spin
 * and colour). */
static wd_status write_npy_block(const char *fn, const char *path, const double *block,
                                 const wd_lattice *lat, int overwrite, size_t reals,
                                 const char *site_shape)
{
    slices s;
    memset(&s, 0, sizeof s);
    wd_status st = wd_gauge_grid_of(&s.g, lat, fn);
    if (st == WD_OK && (!path || !*path || !block))
        st = wd_fail(WD_ERR_INVALID, "%s: path and the field must be given", fn);
    if (st == WD_OK)
        st = slices_alloc(&s, reals, fn, path);
    if ((st = verdict(st)) != WD_OK) {
        slices_free(&s);
        return st;
    }
    /* the first NaN or Inf of the whole field, by its index in the file */
    const size_t nreals = reals * wd_volume(s.g.local);
    const long long k = wd_npy_first_nonfinite(block, nreals);
    const double none = (double)(reals * wd_volume(s.g.dims));
    double bad = k < 0 ? none
                       : (double)(reals * wd_grid_global_site(&s.g, (size_t)k / reals) +
                                  (size_t)k % reals);
    if ((st = reduce_min(&bad, 1)) == WD_OK && bad < none) {
        if (reals == SPINOR_REALS)
            st = wd_npy_refuse_nonfinite(path, (long long)bad, s.g.dims);
        else
            st = wd_fail(WD_ERR_INVALID, "'%s' not written: the field holds NaN or Inf at "
                         "site %lld (host order), real %lld of the site", path,
                         (long long)bad / (long long)reals, (long long)bad % (long long)reals);
    }
    gather_ctx gc = {&s, block, 0};
    npy_write_job job = {s.g.dims, s.slice_sites * reals, &gc, site_shape};
    if ((st = verdict(st)) == WD_OK)
        st = write_file(&s, block, path, reals == SPINOR_REALS ? "spinor file"
                                                                : "propagator file",
                        overwrite, write_spinor_body, &job, &gc);
    slices_free(&s);
    return st;
}

wd_status wd_npy_write_spinor_block(const char *path, const double *psi_block,
                                    const wd_lattice *lat, int overwrite)
{
    return write_npy_block("wd_npy_write_spinor_block", path, psi_block, lat, overwrite,
                           SPINOR_REALS, "4, 3");
}

wd_status wd_npy_write_propagator_block(const char *path, const double *prop_block,
                                        const wd_lattice *lat, int overwrite)
{
    return write_npy_block("wd_npy_write_propagator_block", path, prop_block, lat, overwrite,
                           288, "4, 3, 4, 3");
}
