/*
 * halo_p2p.h: peer-to-peer halos between the GPUs of one node for the CUDA
 * backend on a process grid (issue 28, item 2); internal to the backends
 * module (backend_cuda.cu calls it, halo_p2p.cu implements it; builds
 * without CUDA, MPI or NCCL leave it out: their grids never reach it).
 *
 * The externally accessible functions are
 *   wd_p2p_open     collective: which partitioned dimensions go peer to
 *                   peer (both neighbours on this node with peer access,
 *                   on every rank: agreed), their flags mapped
 *   wd_p2p_close    unmap and free (after the device is idle)
 *   wd_p2p_routes   per dimension 1 when it goes peer to peer
 *   wd_p2p_map      collective: map the neighbours' halo buffers (after
 *                   every (re)allocation of this rank's)
 *   wd_p2p_unmap    unmap them (before this rank's is freed; the caller
 *                   then agrees with the others before freeing)
 *   wd_p2p_peer     a neighbour's halo buffer, mapped here
 *   wd_p2p_begin    enqueue: wait until the neighbours have read what this
 *                   rank wrote into them last time
 *   wd_p2p_landed   enqueue: tell the neighbours their faces have landed,
 *                   then wait until this rank's have
 *   wd_p2p_read     enqueue: tell the neighbours this rank has read them
 * Notes: the ordering lives on the streams, no host in the loop: every
 * exchange has a sequence number, the same on every rank (the exchanges
 * are collective); a rank writes it into its neighbours' `ready` flag after
 * their faces have landed and into their `free` flag after it has read its
 * own ghosts (cuStreamWriteValue32, which fences the writes before it), and
 * waits for its own flags (cuStreamWaitValue32).  A neighbour that is this
 * process (a dimension exchanged with itself) is its own halo buffer and
 * flags.  An exchange stopped between wd_p2p_begin and wd_p2p_landed (a
 * failure every rank agreed on) signals nothing and leaves the sequence
 * as it was, on every rank alike.
 */
#ifndef WD_HALO_P2P_H
#define WD_HALO_P2P_H

#include "wd_comm.h"
#include "wd_core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wd_p2p wd_p2p;

/* part[mu]: the dimensions whose faces are exchanged.  forced: fail
 * (WD_ERR_INVALID, naming the rank pair or the missing facility, on every
 * rank) when some partitioned dimension cannot go peer to peer; otherwise
 * such a dimension stays on NCCL.  *out is NULL (and WD_OK) when no
 * dimension goes peer to peer.  The caller has selected the device. */
wd_status wd_p2p_open(wd_p2p **out, const wd_grid *g, const int part[4], int forced);
void wd_p2p_close(wd_p2p *p);
void wd_p2p_routes(const wd_p2p *p, int p2p[4]);
wd_status wd_p2p_map(wd_p2p *p, void *halo);
void wd_p2p_unmap(wd_p2p *p);
char *wd_p2p_peer(const wd_p2p *p, int mu, int dir);
wd_status wd_p2p_begin(wd_p2p *p, void *stream);
wd_status wd_p2p_landed(wd_p2p *p, void *stream);
wd_status wd_p2p_read(wd_p2p *p, void *stream);

#ifdef __cplusplus
}
#endif

#endif
