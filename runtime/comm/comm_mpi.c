/*
 * comm_mpi.c: processes and messages of the comm module (wd_comm.h) over
 * MPI.  Built without WD_HAVE_MPI (meson found no MPI, or -Dmpi=disabled)
 * the same file is the one process of a 1x1x1x1 grid; with MPI, so is a
 * process that never called wd_comm_init.
 *
 * The externally accessible functions are
 *   wd_comm_init / wd_comm_finalize   start MPI (FUNNELED, errors returned)
 *                                     unless the caller did; stop only what
 *                                     wd_comm_init started
 *   wd_comm_rank / wd_comm_size       this process and how many there are
 *   wd_init, wd_finalize, wd_rank, wd_ranks, wd_agree   (wdirac.h) the
 *                                     same, public
 *   wd_comm_has_mpi                   1 when the build has MPI
 *   wd_comm_agree                     every rank's status -> the lowest
 *                                     failing rank's, message included (a
 *                                     later failing rank appends its own)
 *   wd_comm_sum                       n <= 64 doubles summed over ranks in
 *                                     rank order: the same bits everywhere
 *   wd_comm_max                       n <= 64 doubles' maxima over ranks
 *   wd_comm_halo_start / _wait        one dimension's two faces to and from
 *                                     the two neighbours, nonblocking
 *   wd_comm_bcast                     bytes from one rank to all
 *   wd_comm_send / wd_comm_recv       blocking bytes between two ranks
 *   wd_comm_collectives               how many collective calls of this
 *                                     module this process has made (tests
 *                                     count a solver's reductions with it)
 *
 * Notes: wdirac talks on two duplicates of MPI_COMM_WORLD of its own, one
 * for halos and one for everything else, so none of its messages matches
 * a user's, and a halo never matches a wd_comm_send of the same tag.  MPI
 * counts are ints: bcast, send and recv cut longer buffers into chunks of
 * WD_COMM_CHUNK bytes (both sides cut the same way); a halo face must fit
 * one message.  Only the thread that called wd_comm_init may call these
 * (MPI_THREAD_FUNNELED); wd_comm_sum gathers into a buffer of this module
 * allocated once by wd_comm_init, so that a reduction cannot fail on one
 * rank for want of memory while the others wait in the collective.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef WD_HAVE_MPI
#include <mpi.h>
#endif

#include "wd_comm.h"
#include "wd_core.h"

/* the most doubles one wd_comm_sum reduces (wd_comm.h) */
#define SUM_MAX 64

static int my_rank = 0, n_ranks = 1;
/* calls of agree, sum, max and bcast that communicated (wd_comm_collectives) */
static long n_collectives;

#ifdef WD_HAVE_MPI
/* Bytes per MPI call of bcast, send and recv.  tests/meson.build builds a
 * copy of the comm module with a small chunk to exercise the cutting. */
#ifndef WD_COMM_CHUNK
#define WD_COMM_CHUNK ((size_t)1 << 30)
#endif

/* wd_comm_halo keeps MPI_Requests in void * slots: MPI_Request is an int
 * (MPICH) or a pointer (Open MPI), never wider. */
_Static_assert(sizeof(MPI_Request) <= sizeof(void *), "MPI_Request does not fit wd_comm_halo");

static MPI_Comm comm = MPI_COMM_NULL, halo_comm = MPI_COMM_NULL;
static int started_mpi;
static double *gathered; /* n_ranks x SUM_MAX partials of wd_comm_sum */

/* wd_fail with "<what>: <MPI's error string>", the status chosen by MPI's
 * error class: argument errors are the caller's, the rest internal. */
static wd_status WD_PRINTF(2, 3) mpi_fail(int rc, const char *fmt, ...)
{
    char what[256], err[MPI_MAX_ERROR_STRING];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    int len = 0, cls = MPI_ERR_OTHER;
    if (MPI_Error_string(rc, err, &len) != MPI_SUCCESS)
        snprintf(err, sizeof err, "MPI error code %d", rc);
    if (MPI_Error_class(rc, &cls) != MPI_SUCCESS)
        cls = MPI_ERR_OTHER;
    wd_status s = WD_ERR_INTERNAL;
    switch (cls) {
    case MPI_ERR_NO_MEM: s = WD_ERR_NOMEM; break;
    case MPI_ERR_ARG: case MPI_ERR_BUFFER: case MPI_ERR_COUNT: case MPI_ERR_RANK:
    case MPI_ERR_ROOT: case MPI_ERR_TAG: case MPI_ERR_TRUNCATE: s = WD_ERR_INVALID; break;
    }
    return wd_fail(s, "%s: %s", what, err);
}

/* Free what wd_comm_init set up (not MPI itself) and fall back to one
 * process.  The frees' statuses are dropped: there is no one left to tell
 * and no result depends on them. */
static void release(void)
{
    int done = 0;
    if (MPI_Finalized(&done) == MPI_SUCCESS && !done) {
        if (halo_comm != MPI_COMM_NULL)
            (void)MPI_Comm_free(&halo_comm);
        if (comm != MPI_COMM_NULL)
            (void)MPI_Comm_free(&comm);
    }
    halo_comm = comm = MPI_COMM_NULL;
    free(gathered);
    gathered = NULL;
    my_rank = 0;
    n_ranks = 1;
}

static wd_status init_mpi(int *argc, char ***argv)
{
    int flag = 0, rc;
    if ((rc = MPI_Finalized(&flag)) != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Finalized");
    if (flag)
        return wd_fail(WD_ERR_INVALID,
                       "wd_comm_init: MPI was finalized already and cannot start again");
    if ((rc = MPI_Initialized(&flag)) != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Initialized");
    if (!flag) {
        int provided = MPI_THREAD_SINGLE;
        if ((rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided)) != MPI_SUCCESS)
            return mpi_fail(rc, "MPI_Init_thread (MPI_THREAD_FUNNELED)");
        started_mpi = 1;
        /* the OpenMP threads of the CPU backend run while MPI is up */
        if (provided < MPI_THREAD_FUNNELED)
            return wd_fail(WD_ERR_INTERNAL,
                           "MPI_Init_thread: this MPI grants thread level %d, below "
                           "MPI_THREAD_FUNNELED (%d), which wdirac's OpenMP threads need",
                           provided, MPI_THREAD_FUNNELED);
    }
    if ((rc = MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)) != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Comm_set_errhandler (MPI_COMM_WORLD, MPI_ERRORS_RETURN)");
    /* the duplicates inherit MPI_ERRORS_RETURN */
    if ((rc = MPI_Comm_dup(MPI_COMM_WORLD, &comm)) != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Comm_dup (MPI_COMM_WORLD)");
    if ((rc = MPI_Comm_dup(MPI_COMM_WORLD, &halo_comm)) != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Comm_dup (MPI_COMM_WORLD, for halos)");
    int rank = 0, size = 1;
    if ((rc = MPI_Comm_rank(comm, &rank)) != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Comm_rank");
    if ((rc = MPI_Comm_size(comm, &size)) != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Comm_size");
    const size_t n = (size_t)size * SUM_MAX;
    if (!(gathered = malloc(n * sizeof *gathered)))
        return wd_fail(WD_ERR_NOMEM, "wd_comm_init: %zu bytes for the partial sums of %d ranks",
                       n * sizeof *gathered, size);
    my_rank = rank;
    n_ranks = size;
    return WD_OK;
}
#endif

wd_status wd_comm_init(int *argc, char ***argv)
{
#ifdef WD_HAVE_MPI
    if (comm != MPI_COMM_NULL)
        return WD_OK;
    wd_status st = init_mpi(argc, argv);
    if (st != WD_OK)
        release();
    return st;
#else
    (void)argc;
    (void)argv;
    return WD_OK;
#endif
}

void wd_comm_finalize(void)
{
#ifdef WD_HAVE_MPI
    release();
    int done = 0;
    if (started_mpi && MPI_Finalized(&done) == MPI_SUCCESS && !done)
        (void)MPI_Finalize();
    started_mpi = 0;
#endif
}

int wd_comm_rank(void)
{
    return my_rank;
}

int wd_comm_size(void)
{
    return n_ranks;
}

int wd_comm_has_mpi(void)
{
#ifdef WD_HAVE_MPI
    return 1;
#else
    return 0;
#endif
}

/* The public names (wdirac.h) */
wd_status wd_init(int *argc, char ***argv)
{
    return wd_comm_init(argc, argv);
}

void wd_finalize(void)
{
    wd_comm_finalize();
}

int wd_rank(void)
{
    return wd_comm_rank();
}

int wd_ranks(void)
{
    return wd_comm_size();
}

wd_status wd_agree(wd_status st)
{
    return wd_comm_agree(st);
}

long wd_comm_collectives(void)
{
    return n_collectives;
}

wd_status wd_comm_agree(wd_status st)
{
#ifdef WD_HAVE_MPI
    if (n_ranks > 1) {
        const int mine = st != WD_OK ? my_rank : n_ranks;
        int first = n_ranks, rc;
        n_collectives++;
        if ((rc = MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm)) != MPI_SUCCESS)
            return mpi_fail(rc, "MPI_Allreduce (agreeing on a status)");
        if (first == n_ranks)
            return WD_OK;
        struct {
            int status;
            char msg[512];
        } m = {(int)st, ""};
        if (first == my_rank)
            snprintf(m.msg, sizeof m.msg, "%s", wd_last_error());
        if ((rc = MPI_Bcast(&m, (int)sizeof m, MPI_BYTE, first, comm)) != MPI_SUCCESS)
            return mpi_fail(rc, "MPI_Bcast (the failure of rank %d)", first);
        if (first == my_rank)
            return st;
        /* a rank that failed too keeps its own cause after the first one */
        if (st != WD_OK) {
            char own[512];
            snprintf(own, sizeof own, "%s", wd_last_error());
            return wd_fail((wd_status)m.status, "rank %d: %s (this rank failed too: %s)", first,
                           m.msg, own);
        }
        return wd_fail((wd_status)m.status, "rank %d: %s", first, m.msg);
    }
#endif
    return st;
}

wd_status wd_comm_sum(double *v, int n)
{
    if (n < 0 || n > SUM_MAX)
        return wd_fail(WD_ERR_INVALID, "wd_comm_sum: n = %d, must be 0..%d", n, SUM_MAX);
#ifdef WD_HAVE_MPI
    if (n_ranks > 1 && n > 0) {
        n_collectives++;
        int rc = MPI_Allgather(v, n, MPI_DOUBLE, gathered, n, MPI_DOUBLE, comm);
        if (rc != MPI_SUCCESS)
            return mpi_fail(rc, "MPI_Allgather (global sum of %d doubles)", n);
        /* every rank adds the same numbers in the same order (DESIGN.md) */
        for (int i = 0; i < n; ++i) {
            double s = gathered[i];
            for (int r = 1; r < n_ranks; ++r)
                s += gathered[(size_t)r * (size_t)n + (size_t)i];
            v[i] = s;
        }
    }
#else
    (void)v;
#endif
    return WD_OK;
}

wd_status wd_comm_max(double *v, int n)
{
    if (n < 0 || n > SUM_MAX)
        return wd_fail(WD_ERR_INVALID, "wd_comm_max: n = %d, must be 0..%d", n, SUM_MAX);
#ifdef WD_HAVE_MPI
    if (n_ranks > 1 && n > 0) {
        n_collectives++;
        /* a maximum is exact: MPI's own reduction gives the same bits everywhere */
        const int rc = MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX, comm);
        if (rc != MPI_SUCCESS)
            return mpi_fail(rc, "MPI_Allreduce (global maximum of %d doubles)", n);
    }
#else
    (void)v;
#endif
    return WD_OK;
}

#ifdef WD_HAVE_MPI
/* A halo message's tag is its dimension and the direction it travels. */
static int halo_tag(int mu, int dir)
{
    return 2 * mu + dir;
}

static wd_status halo_mpi(wd_comm_halo *h, const wd_grid *g, int mu, const void *send[2],
                          void *recv[2], size_t bytes)
{
    if (bytes > INT_MAX)
        return wd_fail(WD_ERR_INVALID,
                       "halo mu=%d: %zu bytes per face, more than one MPI message carries (%d)",
                       mu, bytes, INT_MAX);
    const int fwd = g->nbr[mu][WD_FWD], bwd = g->nbr[mu][WD_BWD], c = (int)bytes;
    MPI_Request r[4];
    /* receives first, so that the sends can land in place */
    int rc = MPI_Irecv(recv[WD_FWD], c, MPI_BYTE, fwd, halo_tag(mu, WD_BWD), halo_comm, &r[0]);
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Irecv (halo mu=%d from the forward neighbour, rank %d)", mu, fwd);
    rc = MPI_Irecv(recv[WD_BWD], c, MPI_BYTE, bwd, halo_tag(mu, WD_FWD), halo_comm, &r[1]);
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Irecv (halo mu=%d from the backward neighbour, rank %d)", mu, bwd);
    rc = MPI_Isend(send[WD_FWD], c, MPI_BYTE, fwd, halo_tag(mu, WD_FWD), halo_comm, &r[2]);
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Isend (halo mu=%d forward to rank %d)", mu, fwd);
    rc = MPI_Isend(send[WD_BWD], c, MPI_BYTE, bwd, halo_tag(mu, WD_BWD), halo_comm, &r[3]);
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Isend (halo mu=%d backward to rank %d)", mu, bwd);
    for (int i = 0; i < 4; ++i)
        memcpy(&h->req[i], &r[i], sizeof r[i]);
    h->count = 4;
    h->active = 1;
    return WD_OK;
}
#endif

wd_status wd_comm_halo_start(wd_comm_halo *h, const wd_grid *g, int mu, const void *send[2],
                             void *recv[2], size_t bytes)
{
    h->active = 0;
    h->count = 0;
    if (mu < 0 || mu > 3)
        return wd_fail(WD_ERR_INVALID, "halo exchange: mu = %d, must be 0..3", mu);
    if (g->rank != my_rank || g->size != n_ranks)
        return wd_fail(WD_ERR_INVALID,
                       "halo mu=%d: the grid is for rank %d of %d, this process is rank %d of %d",
                       mu, g->rank, g->size, my_rank, n_ranks);
    if (bytes && (!send[WD_FWD] || !send[WD_BWD] || !recv[WD_FWD] || !recv[WD_BWD]))
        return wd_fail(WD_ERR_INVALID, "halo mu=%d: a face buffer of %zu bytes is NULL", mu, bytes);
#ifdef WD_HAVE_MPI
    if (g->partitioned[mu])
        return halo_mpi(h, g, mu, send, recv, bytes);
#endif
    /* both neighbours are this rank: a face goes round to the other side */
    if (bytes) {
        memcpy(recv[WD_BWD], send[WD_FWD], bytes);
        memcpy(recv[WD_FWD], send[WD_BWD], bytes);
    }
    return WD_OK;
}

wd_status wd_comm_halo_wait(wd_comm_halo *h)
{
    if (!h->active)
        return WD_OK;
    h->active = 0;
#ifdef WD_HAVE_MPI
    MPI_Request r[4];
    MPI_Status s[4];
    for (int i = 0; i < h->count; ++i)
        memcpy(&r[i], &h->req[i], sizeof r[i]);
    int rc = MPI_Waitall(h->count, r, s);
    /* the order of halo_mpi's requests */
    static const char *const what[4] = {"receive from the forward neighbour",
                                        "receive from the backward neighbour", "send forward",
                                        "send backward"};
    if (rc == MPI_ERR_IN_STATUS)
        for (int i = 0; i < h->count; ++i)
            if (s[i].MPI_ERROR != MPI_SUCCESS && s[i].MPI_ERROR != MPI_ERR_PENDING)
                return mpi_fail(s[i].MPI_ERROR, "MPI_Waitall (halo %s)", what[i]);
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Waitall (halo exchange)");
#endif
    return WD_OK;
}

wd_status wd_comm_bcast(void *buf, size_t bytes, int root)
{
    if (root < 0 || root >= n_ranks)
        return wd_fail(WD_ERR_INVALID,
                       "wd_comm_bcast of %zu bytes from rank %d: the run has ranks 0..%d", bytes,
                       root, n_ranks - 1);
#ifdef WD_HAVE_MPI
    n_collectives += n_ranks > 1 && bytes > 0;
    for (size_t off = 0; n_ranks > 1 && off < bytes; off += WD_COMM_CHUNK) {
        const size_t c = bytes - off < WD_COMM_CHUNK ? bytes - off : WD_COMM_CHUNK;
        int rc = MPI_Bcast((char *)buf + off, (int)c, MPI_BYTE, root, comm);
        if (rc != MPI_SUCCESS)
            return mpi_fail(rc, "MPI_Bcast (bytes %zu..%zu of %zu from rank %d)", off, off + c,
                            bytes, root);
    }
#else
    (void)buf;
#endif
    return WD_OK;
}

/* A peer for send or recv: another rank of this run. */
static wd_status check_peer(const char *what, size_t bytes, int peer, int tag)
{
    if (peer < 0 || peer >= n_ranks || peer == my_rank || tag < 0)
        return wd_fail(WD_ERR_INVALID,
                       "%s of %zu bytes, rank %d, tag %d: the peer must be another rank of 0..%d "
                       "(this is rank %d) and the tag >= 0",
                       what, bytes, peer, tag, n_ranks - 1, my_rank);
    return WD_OK;
}

wd_status wd_comm_send(const void *buf, size_t bytes, int dest, int tag)
{
    wd_status st = check_peer("wd_comm_send", bytes, dest, tag);
    if (st != WD_OK)
        return st;
#ifdef WD_HAVE_MPI
    for (size_t off = 0; off < bytes; off += WD_COMM_CHUNK) {
        const size_t c = bytes - off < WD_COMM_CHUNK ? bytes - off : WD_COMM_CHUNK;
        int rc = MPI_Send((const char *)buf + off, (int)c, MPI_BYTE, dest, tag, comm);
        if (rc != MPI_SUCCESS)
            return mpi_fail(rc, "MPI_Send (bytes %zu..%zu of %zu to rank %d, tag %d)", off, off + c,
                            bytes, dest, tag);
    }
#else
    (void)buf;
#endif
    return WD_OK;
}

wd_status wd_comm_recv(void *buf, size_t bytes, int src, int tag)
{
    wd_status st = check_peer("wd_comm_recv", bytes, src, tag);
    if (st != WD_OK)
        return st;
#ifdef WD_HAVE_MPI
    for (size_t off = 0; off < bytes; off += WD_COMM_CHUNK) {
        const size_t c = bytes - off < WD_COMM_CHUNK ? bytes - off : WD_COMM_CHUNK;
        MPI_Status s;
        int got = 0, rc = MPI_Recv((char *)buf + off, (int)c, MPI_BYTE, src, tag, comm, &s);
        if (rc == MPI_SUCCESS)
            rc = MPI_Get_count(&s, MPI_BYTE, &got);
        if (rc != MPI_SUCCESS)
            return mpi_fail(rc, "MPI_Recv (bytes %zu..%zu of %zu from rank %d, tag %d)", off,
                            off + c, bytes, src, tag);
        if ((size_t)got != c)
            return wd_fail(WD_ERR_INVALID,
                           "MPI_Recv (bytes %zu..%zu of %zu from rank %d, tag %d): only %d "
                           "came; the sender sent fewer bytes than this rank expects",
                           off, off + c, bytes, src, tag, got);
    }
#else
    (void)buf;
#endif
    return WD_OK;
}
