/*
 * halo_p2p.cu: peer-to-peer halos between the GPUs of one node (the
 * contract and the ordering are halo_p2p.h's).
 *
 * Setup, collective, through comm's host exchange with the neighbours of
 * each partitioned dimension (wd_comm_halo_start): each rank sends a card
 * with its host name, its GPU's PCI bus id and the CUDA IPC handle of its
 * flags; a dimension goes peer to peer when, on every rank, both
 * neighbours are on the same host on a GPU this one can access
 * (cudaDeviceCanAccessPeer), the driver has the stream memory operations,
 * and the handles open (cudaIpcOpenMemHandle, peer access enabled).  The
 * halo buffers are mapped the same way, again after each reallocation.
 * Each neighbouring process is mapped once, however many dimensions and
 * directions it neighbours this one in.
 *
 * Flags, 16 unsigned of this rank's device memory: ready[2 mu + d] holds
 * the last exchange whose face from the neighbour in direction d (this
 * rank's recv[d]) has landed; free[2 mu + d] the last exchange whose face
 * the neighbour in direction d has read (its recv[1 - d], written by this
 * rank).  A neighbour in direction d sees this rank in direction 1 - d.
 * The comparisons are cyclic (CU_STREAM_WAIT_VALUE_GEQ), so the 32-bit
 * sequence may wrap.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_rt.h"
#include "halo_p2p.h"

typedef CUresult (*wait_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
typedef CUresult (*write_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

enum { READY = 0, FREE = 8, NFLAGS = 16, MAX_PEERS = 8 };

struct peer {
    int rank;
    unsigned *flags;   /* its flags, mapped here */
    char *halo;        /* its halo buffer, mapped here (NULL: not mapped) */
};

struct wd_p2p {
    wd_grid g;                    /* this rank and its neighbours */
    int on[4];                    /* dimensions that go peer to peer */
    unsigned *flags;              /* this rank's */
    unsigned *peer_flags[4][2];   /* the neighbour's, or flags (itself) */
    char *peer_halo[4][2];        /* the neighbour's, or halo (itself) */
    struct peer peers[MAX_PEERS];
    int npeers;
    unsigned seq;                 /* exchanges completed */
    wait_fn wait;
    write_fn write;
};

/* what a rank tells its neighbours */
struct card {
    int usable;                   /* this rank can go peer to peer at all */
    char host[64];
    char bus[32];
    cudaIpcMemHandle_t handle;
};

static wd_status cuda_fail(cudaError_t err, const char *what)
{
    cudaGetLastError();
    return wd_fail(WD_ERR_CUDA, "peer-to-peer halos: %s: %s", what, cudaGetErrorString(err));
}

static wd_status agree(const wd_grid *g, wd_status st)
{
    return g->size > 1 ? wd_comm_agree(st) : st;
}

/* the neighbours' cards in mu: theirs[d] from the neighbour in direction d */
static wd_status swap_cards(const wd_grid *g, int mu, const struct card *mine, struct card theirs[2])
{
    wd_comm_halo h;
    memset(&h, 0, sizeof h);
    const void *send[2] = {mine, mine};
    void *recv[2] = {&theirs[0], &theirs[1]};
    wd_status st = wd_comm_halo_start(&h, g, mu, send, recv, sizeof *mine);
    if (st == WD_OK)
        st = wd_comm_halo_wait(&h);
    return st;
}

static struct peer *peer_of(wd_p2p *p, int rank)
{
    for (int k = 0; k < p->npeers; ++k)
        if (p->peers[k].rank == rank)
            return &p->peers[k];
    if (p->npeers == MAX_PEERS)
        return NULL;
    struct peer *q = &p->peers[p->npeers++];
    memset(q, 0, sizeof *q);
    q->rank = rank;
    return q;
}

static const char dim_name[4] = {'X', 'Y', 'Z', 'T'};

void wd_p2p_unmap(wd_p2p *p)
{
    if (!p)
        return;
    for (int k = 0; k < p->npeers; ++k)
        if (p->peers[k].halo) {
            cudaIpcCloseMemHandle(p->peers[k].halo);
            p->peers[k].halo = NULL;
        }
    memset(p->peer_halo, 0, sizeof p->peer_halo);
}

/* release what a setup (p, not yet handed out) holds */
static void release(wd_p2p *p)
{
    wd_p2p_unmap(p);
    for (int k = 0; k < p->npeers; ++k)
        if (p->peers[k].flags)
            cudaIpcCloseMemHandle(p->peers[k].flags);
    p->npeers = 0;
    wd_cuda_free(p->flags);
    p->flags = NULL;
}

/* this rank's card: can it go peer to peer at all (else why), its host,
 * its GPU, the IPC handle of its flags (allocated here) */
static wd_status own_card(wd_p2p *p, struct card *mine, int *dev, char *why, size_t nwhy)
{
    memset(mine, 0, sizeof *mine);
    cudaDriverEntryPointQueryResult q1 = cudaDriverEntryPointSymbolNotFound, q2 = q1;
    const cudaError_t e1 = cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", (void **)&p->wait,
                                                            12000, cudaEnableDefault, &q1);
    const cudaError_t e2 = cudaGetDriverEntryPointByVersion("cuStreamWriteValue32",
                                                            (void **)&p->write, 12000,
                                                            cudaEnableDefault, &q2);
    cudaGetLastError();
    if (e1 != cudaSuccess || e2 != cudaSuccess || q1 != cudaDriverEntryPointSuccess ||
        q2 != cudaDriverEntryPointSuccess || !p->wait || !p->write) {
        snprintf(why, nwhy, "rank %d: the driver has no stream memory operations", p->g.rank);
        return WD_OK;
    }
    if (gethostname(mine->host, sizeof mine->host - 1) != 0) {
        snprintf(why, nwhy, "rank %d: gethostname failed", p->g.rank);
        return WD_OK;
    }
    cudaError_t err = cudaGetDevice(dev);
    if (err == cudaSuccess)
        err = cudaDeviceGetPCIBusId(mine->bus, (int)sizeof mine->bus, *dev);
    if (err != cudaSuccess)
        return cuda_fail(err, "this rank's GPU");
    wd_status st = wd_cuda_malloc((void **)&p->flags, NFLAGS * sizeof(unsigned),
                                  "the peer-to-peer flags");
    if (st == WD_OK)
        st = wd_cuda_memset(p->flags, 0, NFLAGS * sizeof(unsigned));
    if (st != WD_OK)
        return st;
    err = cudaIpcGetMemHandle(&mine->handle, p->flags);
    if (err != cudaSuccess) {
        cudaGetLastError();
        snprintf(why, nwhy, "rank %d: cudaIpcGetMemHandle: %s", p->g.rank,
                 cudaGetErrorString(err));
        return WD_OK;
    }
    mine->usable = 1;
    return WD_OK;
}

/* can this rank reach the neighbour of card t (on GPU dev) peer to peer */
static int reachable(const struct card *mine, const struct card *t, int dev)
{
    int pd = -1, access = 0;
    const int ok = t->usable && strncmp(t->host, mine->host, sizeof mine->host) == 0 &&
                   cudaDeviceGetByPCIBusId(&pd, t->bus) == cudaSuccess &&
                   (pd == dev || (cudaDeviceCanAccessPeer(&access, dev, pd) == cudaSuccess && access));
    cudaGetLastError();
    return ok;
}

/* open the IPC handle h of neighbour rank r into *slot (once a rank) */
static wd_status open_handle(void **slot, const cudaIpcMemHandle_t *h, const char *what)
{
    if (*slot)
        return WD_OK;
    const cudaError_t err = cudaIpcOpenMemHandle(slot, *h, cudaIpcMemLazyEnablePeerAccess);
    if (err == cudaSuccess)
        return WD_OK;
    *slot = NULL;
    return cuda_fail(err, what);
}

void wd_p2p_close(wd_p2p *p)
{
    if (!p)
        return;
    release(p);
    free(p);
}

wd_status wd_p2p_open(wd_p2p **out, const wd_grid *g, const int part[4], int forced)
{
    *out = NULL;
    /* built here, handed out at the end: every rank makes every exchange
     * below whatever has failed on it */
    wd_p2p tmp, *p = &tmp;
    memset(p, 0, sizeof *p);
    p->g = *g;
    char why[200] = "";
    struct card mine;
    int dev = 0;
    wd_status st = own_card(p, &mine, &dev, why, sizeof why);
    if (st != WD_OK)
        mine.usable = 0;

    struct card theirs[4][2];
    memset(theirs, 0, sizeof theirs);
    double bad[4] = {0, 0, 0, 0};
    for (int mu = 0; mu < 4; ++mu) {
        if (!part[mu])
            continue;
        const wd_status sw = swap_cards(g, mu, &mine, theirs[mu]);
        if (st == WD_OK)
            st = sw;
        for (int d = 0; d < 2; ++d) {
            const int r = g->nbr[mu][d];
            const int ok = mine.usable && (r == g->rank || reachable(&mine, &theirs[mu][d], dev));
            if (!ok && mine.usable && !why[0])
                snprintf(why, sizeof why, "no peer access from rank %d (%s, GPU %s) to rank %d (%s, "
                         "GPU %s)", g->rank, mine.host, mine.bus, r, theirs[mu][d].host,
                         theirs[mu][d].bus);
            if (!ok)
                bad[mu] = 1;
        }
    }
    if ((st = agree(g, st)) == WD_OK && g->size > 1)
        st = wd_comm_max(bad, 4);
    if (st == WD_OK && forced) {
        wd_status f = WD_OK;
        for (int mu = 0; mu < 4 && f == WD_OK; ++mu)
            if (part[mu] && bad[mu] != 0 && why[0])
                f = wd_fail(WD_ERR_INVALID, "peer-to-peer halos asked for, but dimension %c "
                            "cannot go peer to peer: %s", dim_name[mu], why);
        st = agree(g, f);
        for (int mu = 0; mu < 4 && st == WD_OK; ++mu)
            if (part[mu] && bad[mu] != 0)  /* another rank's neighbours, that rank says why */
                st = wd_fail(WD_ERR_INTERNAL, "peer-to-peer halos: dimension %c refused without "
                             "a reason", dim_name[mu]);
    }
    int any = 0;
    for (int mu = 0; mu < 4; ++mu) {
        p->on[mu] = st == WD_OK && part[mu] && bad[mu] == 0;
        any |= p->on[mu];
    }
    /* the neighbours' flags, mapped */
    wd_status mapped = WD_OK;
    for (int mu = 0; mu < 4 && any; ++mu)
        for (int d = 0; d < 2 && p->on[mu]; ++d) {
            const int r = g->nbr[mu][d];
            if (r == g->rank) {
                p->peer_flags[mu][d] = p->flags;
                continue;
            }
            struct peer *q = peer_of(p, r);
            if (!q) {
                if (mapped == WD_OK)
                    mapped = wd_fail(WD_ERR_INTERNAL, "peer-to-peer halos: more than %d "
                                     "neighbours", MAX_PEERS);
                continue;
            }
            const wd_status o = open_handle((void **)&q->flags, &theirs[mu][d].handle,
                                            "cudaIpcOpenMemHandle (a neighbour's flags)");
            if (mapped == WD_OK)
                mapped = o;
            p->peer_flags[mu][d] = q->flags;
        }
    if (any && st == WD_OK) {
        wd_p2p *h = (wd_p2p *)malloc(sizeof *h);
        if (!h && mapped == WD_OK)
            mapped = wd_fail(WD_ERR_NOMEM, "peer-to-peer halos: the state");
        st = agree(g, mapped);
        if (st == WD_OK) {
            *h = tmp;
            *out = h;
            return WD_OK;
        }
        free(h);
    }
    release(p);
    return st;
}

void wd_p2p_routes(const wd_p2p *p, int p2p[4])
{
    for (int mu = 0; mu < 4; ++mu)
        p2p[mu] = p ? p->on[mu] : 0;
}

wd_status wd_p2p_map(wd_p2p *p, void *halo)
{
    wd_p2p_unmap(p);
    struct card mine;
    memset(&mine, 0, sizeof mine);
    wd_status st = WD_OK;
    const cudaError_t err = cudaIpcGetMemHandle(&mine.handle, halo);
    if (err != cudaSuccess)
        st = cuda_fail(err, "cudaIpcGetMemHandle (the halo buffer)");
    mine.usable = st == WD_OK;
    for (int mu = 0; mu < 4; ++mu) {
        if (!p->on[mu])
            continue;
        struct card theirs[2];
        memset(theirs, 0, sizeof theirs);
        const wd_status sw = swap_cards(&p->g, mu, &mine, theirs);
        if (st == WD_OK)
            st = sw;
        for (int d = 0; d < 2; ++d) {
            const int r = p->g.nbr[mu][d];
            if (r == p->g.rank) {
                p->peer_halo[mu][d] = (char *)halo;
                continue;
            }
            struct peer *q = peer_of(p, r);  /* mapped at open: found */
            if (st == WD_OK && !theirs[d].usable)
                st = wd_fail(WD_ERR_CUDA, "peer-to-peer halos: rank %d has no handle of its halo "
                             "buffer", r);
            if (st == WD_OK && q)
                st = open_handle((void **)&q->halo, &theirs[d].handle,
                                 "cudaIpcOpenMemHandle (a neighbour's halo buffer)");
            p->peer_halo[mu][d] = q ? q->halo : NULL;
        }
    }
    if ((st = agree(&p->g, st)) != WD_OK)
        wd_p2p_unmap(p);
    return st;
}

char *wd_p2p_peer(const wd_p2p *p, int mu, int dir)
{
    return p->peer_halo[mu][dir];
}

static wd_status memop(CUresult rc, const char *what)
{
    return rc == CUDA_SUCCESS
               ? WD_OK
               : wd_fail(WD_ERR_CUDA, "peer-to-peer halos: %s failed (CUresult %d)", what, (int)rc);
}

wd_status wd_p2p_begin(wd_p2p *p, void *stream)
{
    wd_status st = WD_OK;
    for (int mu = 0; mu < 4; ++mu)
        for (int d = 0; d < 2 && p->on[mu] && st == WD_OK; ++d)
            st = memop(p->wait((CUstream)stream, (CUdeviceptr)(uintptr_t)(p->flags + FREE + 2 * mu + d),
                               p->seq, CU_STREAM_WAIT_VALUE_GEQ),
                       "cuStreamWaitValue32 (the neighbour has read)");
    return st;
}

/* every signal is written even after a failure, so that no neighbour waits
 * for ever; the first failure is returned */
static wd_status post(wd_p2p *p, void *stream, int base, unsigned value, const char *what)
{
    wd_status st = WD_OK;
    for (int mu = 0; mu < 4; ++mu)
        for (int d = 0; d < 2 && p->on[mu]; ++d) {
            unsigned *f = p->peer_flags[mu][d] + base + 2 * mu + (1 - d);
            const wd_status s = memop(p->write((CUstream)stream, (CUdeviceptr)(uintptr_t)f, value, 0),
                                      what);
            if (st == WD_OK)
                st = s;
        }
    return st;
}

wd_status wd_p2p_landed(wd_p2p *p, void *stream)
{
    const unsigned next = p->seq + 1;
    wd_status st = post(p, stream, READY, next, "cuStreamWriteValue32 (the face has landed)");
    for (int mu = 0; mu < 4; ++mu)
        for (int d = 0; d < 2 && p->on[mu]; ++d) {
            const wd_status s =
                memop(p->wait((CUstream)stream, (CUdeviceptr)(uintptr_t)(p->flags + READY + 2 * mu + d),
                              next, CU_STREAM_WAIT_VALUE_GEQ),
                      "cuStreamWaitValue32 (the ghost has landed)");
            if (st == WD_OK)
                st = s;
        }
    return st;
}

wd_status wd_p2p_read(wd_p2p *p, void *stream)
{
    const unsigned next = p->seq + 1;
    p->seq = next;
    return post(p, stream, FREE, next, "cuStreamWriteValue32 (the ghost has been read)");
}
