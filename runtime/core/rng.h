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
 * between C libraries.
 */
#ifndef WDIRAC_RNG_H
#define WDIRAC_RNG_H

#include <stdint.h>

typedef struct wd_rng {
    uint64_t s[4];
} wd_rng;

void wd_rng_seed(wd_rng *r, uint64_t seed);
uint64_t wd_rng_u64(wd_rng *r);
double wd_rng_uniform(wd_rng *r);
double wd_rng_normal(wd_rng *r);

#endif
