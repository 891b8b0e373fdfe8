/*
 * comm_nccl.c: device buffers between GPUs for the comm module
 * (wd_comm.h), over NCCL, one GPU per process.  Built without WD_HAVE_NCCL
 * (no CUDA, no MPI, no NCCL found, or -Dnccl=disabled) every function that
 * would talk to another GPU says that this build has no NCCL.
 *
 * The externally accessible functions are
 *   wd_comm_has_nccl       1 when the build has NCCL
 *   wd_comm_local_rank     collective the first time: this process's rank
 *                          among the processes of its node, and how many
 *                          there are (MPI_Comm_split_type SHARED)
 *   wd_nccl_open           collective: one NCCL communicator over every
 *                          rank, its unique id made by rank 0 and
 *                          broadcast through MPI (wd_comm_bcast)
 *   wd_nccl_close          collective: destroy it
 *   wd_nccl_halo           enqueue the face exchange of the partitioned
 *                          dimensions on a CUDA stream, one NCCL group
 *   wd_nccl_allgather      enqueue every rank's bytes gathered in rank
 *                          order on every rank (ncclAllGather)
 *
 * Notes: the caller chooses the device (cudaSetDevice to the local rank)
 * before wd_nccl_open; this file makes no CUDA runtime call and passes
 * streams as void *, though nccl.h itself includes cuda_runtime.h.  Every
 * NCCL and MPI call is checked; failures are a status with wd_fail's
 * message naming the call and NCCL's error string, agreed over the ranks
 * (wd_comm_agree) before the next collective call.  NVLink multicast
 * (NVLS) is never asked for: no communicator option sets it, and the
 * launch scripts run with NCCL_NVLS_ENABLE=0.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef WD_HAVE_NCCL
#include <mpi.h>
#include <nccl.h>
#endif

#include "wd_comm.h"
#include "wd_core.h"

int wd_comm_has_nccl(void)
{
#ifdef WD_HAVE_NCCL
    return 1;
#else
    return 0;
#endif
}

#ifdef WD_HAVE_NCCL

struct wd_nccl {
    ncclComm_t comm;
};

static int local_known, local_rank_, local_size_ = 1;
static wd_status local_status = WD_OK;

wd_status wd_comm_local_rank(int *local, int *nlocal)
{
    if (!local_known && wd_comm_size() > 1) {
        MPI_Comm node = MPI_COMM_NULL;
        int rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, wd_comm_rank(),
                                     MPI_INFO_NULL, &node);
        if (rc == MPI_SUCCESS)
            rc = MPI_Comm_rank(node, &local_rank_);
        if (rc == MPI_SUCCESS)
            rc = MPI_Comm_size(node, &local_size_);
        if (node != MPI_COMM_NULL)
            MPI_Comm_free(&node);
        wd_status st = WD_OK;
        if (rc != MPI_SUCCESS) {
            char err[MPI_MAX_ERROR_STRING];
            int len = 0;
            if (MPI_Error_string(rc, err, &len) != MPI_SUCCESS)
                strcpy(err, "unknown MPI error");
            st = wd_fail(WD_ERR_INTERNAL, "MPI_Comm_split_type (the ranks of this node): %s", err);
        }
        local_status = wd_comm_agree(st);
    }
    local_known = 1;
    *local = local_rank_;
    *nlocal = local_size_;
    return local_status;
}

static wd_status nccl_fail(ncclResult_t rc, const char *call)
{
    return wd_fail(rc == ncclInvalidArgument || rc == ncclInvalidUsage ? WD_ERR_INVALID
                                                                         : WD_ERR_INTERNAL,
                   "NCCL: %s failed: %s (%s)", call, ncclGetErrorString(rc),
                   ncclGetLastError(NULL) ? ncclGetLastError(NULL) : "");
}

/* agreed over every rank when the communicator spans them all; a
 * communicator of one rank is this process's alone */
static wd_status agree(int nranks, wd_status st)
{
    return nranks > 1 ? wd_comm_agree(st) : st;
}

wd_status wd_nccl_open(wd_nccl **out, int nranks, int rank)
{
    *out = NULL;
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    wd_status st = nranks == 1 || (nranks == wd_comm_size() && rank == wd_comm_rank())
                       ? WD_OK
                       : wd_fail(WD_ERR_INTERNAL, "NCCL: a communicator of %d ranks (rank %d) "
                                 "must span all %d processes, or this one alone", nranks, rank,
                                 wd_comm_size());
    if (st == WD_OK && rank == 0) {
        const ncclResult_t rc = ncclGetUniqueId(&id);
        if (rc != ncclSuccess)
            st = nccl_fail(rc, "ncclGetUniqueId");
    }
    wd_nccl *c = calloc(1, sizeof *c);
    if (!c && st == WD_OK)
        st = wd_fail(WD_ERR_NOMEM, "NCCL: the communicator's handle");
    if ((st = agree(nranks, st)) != WD_OK) {
        free(c);
        return st;
    }
    if (nranks > 1)
        st = wd_comm_agree(wd_comm_bcast(&id, sizeof id, 0));
    if (st == WD_OK) {
        const ncclResult_t rc = ncclCommInitRank(&c->comm, nranks, id, rank);
        if (rc != ncclSuccess) {
            c->comm = NULL;
            st = nccl_fail(rc, "ncclCommInitRank");
        }
        st = agree(nranks, st);
    }
    if (st != WD_OK) {
        if (c->comm)
            ncclCommDestroy(c->comm);
        free(c);
        return st;
    }
    *out = c;
    return WD_OK;
}

void wd_nccl_close(wd_nccl *c)
{
    if (!c)
        return;
    ncclCommDestroy(c->comm);
    free(c);
}

wd_status wd_nccl_halo(wd_nccl *c, const wd_grid *g, const wd_nccl_face *faces, int nfaces,
                       void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    ncclResult_t rc = ncclGroupStart();
    if (rc != ncclSuccess)
        return nccl_fail(rc, "ncclGroupStart");
    /* With two ranks in mu the forward and the backward neighbour are one
     * rank, and NCCL runs the calls of a group that target one peer in
     * the order they were posted: send the backward face before the
     * forward one and receive the forward ghost before the backward one,
     * so that recv[WD_FWD] gets what the forward neighbour sent backward;
     * each send is followed by its receive, so that the two ranks' calls
     * pair up in that order too. */
    const char *call = NULL;
    for (int k = 0; k < nfaces && !call; ++k) {
        const wd_nccl_face *f = &faces[k];
        const int fwd = g->nbr[f->mu][WD_FWD], bwd = g->nbr[f->mu][WD_BWD];
        if ((rc = ncclSend(f->send[WD_BWD], f->bytes, ncclUint8, bwd, c->comm, s)) != ncclSuccess)
            call = "ncclSend (backward face)";
        else if ((rc = ncclRecv(f->recv[WD_FWD], f->bytes, ncclUint8, fwd, c->comm, s)) != ncclSuccess)
            call = "ncclRecv (forward ghost)";
        else if ((rc = ncclSend(f->send[WD_FWD], f->bytes, ncclUint8, fwd, c->comm, s)) != ncclSuccess)
            call = "ncclSend (forward face)";
        else if ((rc = ncclRecv(f->recv[WD_BWD], f->bytes, ncclUint8, bwd, c->comm, s)) != ncclSuccess)
            call = "ncclRecv (backward ghost)";
    }
    const ncclResult_t end = ncclGroupEnd();
    if (call)
        return nccl_fail(rc, call);
    if (end != ncclSuccess)
        return nccl_fail(end, "ncclGroupEnd (the halo exchange)");
    return WD_OK;
}

wd_status wd_nccl_allgather(wd_nccl *c, const void *send, void *recv, size_t bytes,
                            void *stream)
{
    const ncclResult_t rc = ncclAllGather(send, recv, bytes, ncclUint8, c->comm,
                                          (cudaStream_t)stream);
    return rc == ncclSuccess ? WD_OK : nccl_fail(rc, "ncclAllGather");
}

#else

static wd_status no_nccl(void)
{
    return wd_fail(WD_ERR_INVALID, "this build of wdirac has no NCCL, so the CUDA backend runs "
                   "on one process (reconfigure with CUDA, MPI and -Dnccl=enabled, NCCL from the "
                   "nvidia-nccl-cu13 wheel; the CPU backend runs decomposed)");
}

wd_status wd_comm_local_rank(int *local, int *nlocal)
{
    *local = 0;
    *nlocal = 1;
    return wd_comm_size() > 1 ? no_nccl() : WD_OK;
}

wd_status wd_nccl_open(wd_nccl **out, int nranks, int rank)
{
    (void)nranks, (void)rank;
    *out = NULL;
    return no_nccl();
}

void wd_nccl_close(wd_nccl *c) { (void)c; }

wd_status wd_nccl_halo(wd_nccl *c, const wd_grid *g, const wd_nccl_face *faces, int nfaces,
                       void *stream)
{
    (void)c, (void)g, (void)faces, (void)nfaces, (void)stream;
    return no_nccl();
}

wd_status wd_nccl_allgather(wd_nccl *c, const void *send, void *recv, size_t bytes,
                            void *stream)
{
    (void)c, (void)send, (void)recv, (void)bytes, (void)stream;
    return no_nccl();
}

#endif
