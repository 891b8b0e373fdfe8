/*
 * philox.h: the Philox4x32-10 counter-based random number generator
 * (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as
 * 1, 2, 3", SC '11), as static inline functions that compile under a C
 * compiler and under nvcc (host and device).
 *
 * The externally accessible functions are
 *   wd_philox4x32_10   four 32-bit random words from a 128-bit counter and
 *                      a 64-bit key: a bijection of the counter for each key,
 *                      so distinct counters never share an output block
 *   wd_philox_u01      a double uniform in (0, 1] from two 32-bit words:
 *                      53 random bits, (n + 1) 2^-53 with n in [0, 2^53),
 *                      so never 0 (log is finite) and 1 is possible
 * Notes: no state is kept; a caller names each random block by its counter
 * (the gauge generator uses (site, link, sweep, draw), see heatbath_link.h),
 * so a stream is the same whatever thread or GPU block asks for it.
 * The known-answer vectors of Random123 (examples/kat_vectors of the
 * Random123 distribution by D. E. Shaw Research, lines "philox4x32 10 ...")
 * are checked in tests/test_heatbath.c.
 */
#ifndef WDIRAC_PHILOX_H
#define WDIRAC_PHILOX_H

#include <stdint.h>

#ifdef __CUDACC__
#define WD_PHILOX_FN __host__ __device__ static inline
#else
#define WD_PHILOX_FN static inline
#endif

/* The round multipliers and the Weyl key increments of Random123's
 * philox.h (PHILOX_M4x32_0/1, PHILOX_W32_0/1). */
#define WD_PHILOX_M0 0xD2511F53u
#define WD_PHILOX_M1 0xCD9E8D57u
#define WD_PHILOX_W0 0x9E3779B9u
#define WD_PHILOX_W1 0xBB67AE85u

WD_PHILOX_FN void wd_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
                                   uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        if (round > 0) {
            k0 += WD_PHILOX_W0;
            k1 += WD_PHILOX_W1;
        }
        const uint64_t p0 = (uint64_t)WD_PHILOX_M0 * c0;
        const uint64_t p1 = (uint64_t)WD_PHILOX_M1 * c2;
        const uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        const uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

WD_PHILOX_FN double wd_philox_u01(uint32_t hi, uint32_t lo)
{
    const uint64_t n = (((uint64_t)hi << 32) | lo) >> 11;
    return (double)(n + 1) * 0x1.0p-53;
}

#endif
