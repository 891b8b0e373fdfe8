/*
 * rng.h: a small seeded random number generator for test and benchmark
 * fields (not for Monte Carlo: the gauge generator gets a counter-based one).
 *
 * The externally accessible functions are
 *   wd_rng_seed      initialise from a 64-bit seed (splitmix64 expansion)
 *   wd_rng_u64       next 64 random bits (xoshiro256**)
 *   wd_rng_uniform   uniform double in [0, 1)
 *   wd_rng_normal    standard normal double (Box-Muller)
 * The same seed gives the same integer (and uniform) stream on every machine;
 * wd_rng_normal goes through libm's log and cos, so its last bits can differ
 * between C libraries.  The steps themselves are inline here for gcc and
 * nvcc alike (GPU code that must draw the host's bits: the multigrid's
 * random starts):
 *   wd_rng_splitmix64   the next splitmix64 output of a counter
 *   wd_rng_step         the next xoshiro256** output of a state
 *   wd_rng_to_uniform   the top 53 bits times 2^-53
 */
#ifndef WDIRAC_RNG_H
#define WDIRAC_RNG_H

#include <stdint.h>

typedef struct wd_rng {
    uint64_t s[4];
} wd_rng;

#ifdef __CUDACC__
#define WD_RNG_HD __host__ __device__
#else
#define WD_RNG_HD
#endif

static inline WD_RNG_HD uint64_t wd_rng_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static inline WD_RNG_HD uint64_t wd_rng_step(uint64_t s[4])
{
    const uint64_t x = s[1] * 5, result = ((x << 7) | (x >> 57)) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 45) | (s[3] >> 19);
    return result;
}

static inline WD_RNG_HD double wd_rng_to_uniform(uint64_t bits)
{
    return (double)(bits >> 11) * 0x1.0p-53;
}

void wd_rng_seed(wd_rng *r, uint64_t seed);
uint64_t wd_rng_u64(wd_rng *r);
double wd_rng_uniform(wd_rng *r);
double wd_rng_normal(wd_rng *r);

#endif
