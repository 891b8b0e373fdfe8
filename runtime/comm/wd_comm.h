/*
 * wd_comm.h: the comm module (runtime/comm/): the process grid of DESIGN.md
 * ("Many processes"), MPI for processes and host messages, and the
 * deterministic global reductions.  It depends on core alone; backends,
 * gauge, numerics and io call it.  A build without MPI (-Dmpi=disabled, or
 * no MPI found) has one process: every function here still works, on a
 * 1x1x1x1 grid.
 *
 * The externally accessible functions are
 *   wd_comm_init / wd_comm_finalize   start and stop MPI (when this build
 *                                     has it and nobody started it yet)
 *   wd_comm_rank / wd_comm_size       this process and how many there are
 *   wd_comm_has_mpi                   1 when the build has MPI
 *   wd_grid_auto                      the default grid for a lattice and a
 *                                     number of ranks: split T first, then
 *                                     Z, Y, X, keeping local extents even
 *   wd_grid_make                      check a grid against a lattice and a
 *                                     number of ranks, and fill the geometry
 *                                     of one rank (pure: no MPI call)
 *   wd_comm_agree                     collective: the first failure of any
 *                                     rank (lowest rank wins), so that every
 *                                     rank takes the same branch before the
 *                                     next collective call
 *   wd_comm_sum                       collective: deterministic global sum of
 *                                     n doubles (per-rank partials combined
 *                                     in rank order: the same bits on every
 *                                     rank and from run to run)
 *   wd_comm_max                       collective: the maxima over ranks of
 *                                     n doubles (NaN-free input)
 *   wd_comm_halo_start / _wait        nonblocking exchange of one dimension's
 *                                     two faces with the two neighbours
 *   wd_comm_bcast                     collective: bytes from one rank to all
 *   wd_comm_send / wd_comm_recv       blocking point-to-point bytes (slice
 *                                     streaming of the I/O)
 *   wd_comm_collectives               how many collective calls (agree,
 *                                     sum, max, bcast) this process has made
 *                                     that communicated
 * and, for device buffers (comm_nccl.c; a build without NCCL answers
 * WD_ERR_INVALID naming what is missing):
 *   wd_comm_has_nccl                  1 when the build has NCCL
 *   wd_comm_local_rank                this rank among the ranks of its node
 *   wd_nccl_open / wd_nccl_close      collective: an NCCL communicator over
 *                                     every rank, bootstrapped through MPI
 *   wd_nccl_halo                      enqueue the face exchange of several
 *                                     dimensions on a CUDA stream
 *   wd_nccl_allgather                 enqueue a gather of every rank's bytes,
 *                                     in rank order, on a CUDA stream
 * Rank order (DESIGN.md): rank = px + Px*(py + Py*(pz + Pz*pt)).  Every
 * call that can fail returns a status with wd_fail's message (the MPI
 * call and MPI's error string); no function aborts.  MPI's error handler
 * on MPI_COMM_WORLD is set to MPI_ERRORS_RETURN by wd_comm_init.
 */
#ifndef WDIRAC_COMM_H
#define WDIRAC_COMM_H

#include <stddef.h>

#include "wdirac.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Face directions of wd_grid.nbr and the halo buffers. */
enum { WD_FWD = 0, WD_BWD = 1 };

typedef struct wd_grid {
    int dims[4];        /* global extents X, Y, Z, T */
    int procs[4];       /* Px, Py, Pz, Pt */
    int local[4];       /* local extents dims[mu] / procs[mu], each even */
    int coord[4];       /* this rank's grid coordinates */
    int origin[4];      /* global coordinates of local site (0, 0, 0, 0) */
    int rank, size;     /* size = Px Py Pz Pt */
    int partitioned[4]; /* procs[mu] > 1: hops across mu's faces need halos */
    int nbr[4][2];      /* rank of the forward (WD_FWD) and backward (WD_BWD)
                         * neighbour in mu, periodic; this rank when not
                         * partitioned */
} wd_grid;

wd_status wd_comm_init(int *argc, char ***argv);
void wd_comm_finalize(void);
int wd_comm_rank(void);
int wd_comm_size(void);
int wd_comm_has_mpi(void);

/* procs = the default grid for `nranks` ranks: each prime factor of
 * nranks, smallest first, divides the first dimension in the order T, Z,
 * Y, X whose local extent stays even and >= min_local after dividing.
 * WD_ERR_INVALID naming the lattice and nranks when a factor fits nowhere. */
wd_status wd_grid_auto(int procs[4], const int dims[4], int nranks, int min_local);

/* Fill g for rank `rank` of `nranks` on lattice dims with grid procs (NULL
 * or all zero: wd_grid_auto).  WD_ERR_INVALID naming the dimension when a
 * procs[mu] < 1 or does not divide dims[mu], a local extent is odd or
 * below min_local, or the product of procs differs from nranks.  Checks
 * wd_check_dims(dims) first. */
wd_status wd_grid_make(wd_grid *g, const int dims[4], const int procs[4], int nranks, int rank,
                       int min_local);

/* Collective over all ranks.  Every rank passes its own status; every rank
 * gets back WD_OK if all passed WD_OK, else the status of the lowest rank
 * that failed, and on the ranks that had not failed the message
 * "rank R: <R's message>" (on the failing rank its own message stays). */
wd_status wd_comm_agree(wd_status st);

/* Collective: v[0..n) = the sum over ranks of every rank's v[0..n),
 * added in rank order in double (n <= 64). */
wd_status wd_comm_sum(double *v, int n);

/* Collective: v[i] = the largest of every rank's v[i] (n <= 64). */
wd_status wd_comm_max(double *v, int n);

/* The number of calls of wd_comm_agree, _sum, _max and _bcast this process
 * has made that communicated (more than one rank, something to send):
 * tests count a solver's global reductions a step with it.  0 on one
 * process. */
long wd_comm_collectives(void);

/* One dimension's halo exchange: send[WD_FWD] (bytes) goes to the forward
 * neighbour in mu, send[WD_BWD] to the backward one; recv[WD_FWD] receives
 * what the forward neighbour sent backward, recv[WD_BWD] what the backward
 * neighbour sent forward.  Nonblocking: the buffers stay untouched until
 * wd_comm_halo_wait returns.  With procs[mu] == 1 (or without MPI) the
 * copies are local memcpys: send[WD_FWD] -> recv[WD_BWD] and
 * send[WD_BWD] -> recv[WD_FWD]. */
typedef struct wd_comm_halo {
    int active;
    int count;
    void *req[4];       /* MPI_Request handles, opaque here */
} wd_comm_halo;

wd_status wd_comm_halo_start(wd_comm_halo *h, const wd_grid *g, int mu,
                             const void *send[2], void *recv[2], size_t bytes);
wd_status wd_comm_halo_wait(wd_comm_halo *h);

wd_status wd_comm_bcast(void *buf, size_t bytes, int root);
wd_status wd_comm_send(const void *buf, size_t bytes, int dest, int tag);
wd_status wd_comm_recv(void *buf, size_t bytes, int src, int tag);

/* ---- NCCL: device buffers between GPUs, one GPU per rank ---------------- */

int wd_comm_has_nccl(void);

/* *local = this rank's index among the ranks of its node, *nlocal = how
 * many there are (MPI_Comm_split_type SHARED).  Collective on its first
 * call (every rank must make it), remembered after; 0 and 1 on one rank. */
wd_status wd_comm_local_rank(int *local, int *nlocal);

/* An NCCL communicator of nranks ranks, this process being `rank`: either
 * every process (nranks = wd_comm_size(), rank r of NCCL = rank r of MPI;
 * collective, bootstrapped through wd_comm_bcast, agreed: every rank gets
 * the same status) or this process alone (nranks 1: a grid whose
 * partitioned faces wrap onto the process itself, sends to itself).  The
 * caller has selected this rank's device. */
typedef struct wd_nccl wd_nccl;
wd_status wd_nccl_open(wd_nccl **c, int nranks, int rank);
void wd_nccl_close(wd_nccl *c);

/* One dimension's faces for wd_nccl_halo, device pointers, as
 * wd_comm_halo_start's: send[WD_FWD] to the forward neighbour in mu,
 * send[WD_BWD] to the backward one; recv[WD_FWD] gets what the forward
 * neighbour sent backward, recv[WD_BWD] what the backward one sent
 * forward.  mu must be partitioned (procs[mu] > 1). */
typedef struct wd_nccl_face {
    int mu;
    size_t bytes;
    const void *send[2];
    void *recv[2];
} wd_nccl_face;

/* Enqueue the exchange of nfaces dimensions on `stream` (a cudaStream_t)
 * as one NCCL group: later work on the stream sees the ghosts, nothing
 * waits on the host.  Every rank of the grid must call it with the same
 * dimensions in the same order. */
wd_status wd_nccl_halo(wd_nccl *c, const wd_grid *g, const wd_nccl_face *faces, int nfaces,
                       void *stream);

/* Enqueue on `stream` the gather of every rank's `bytes` from send into
 * recv (ranks x bytes, rank r's at r x bytes: rank order), device
 * buffers.  Collective over the communicator's ranks. */
wd_status wd_nccl_allgather(wd_nccl *c, const void *send, void *recv, size_t bytes,
                            void *stream);

#ifdef __cplusplus
}
#endif

#endif
