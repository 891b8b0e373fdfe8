/*
 * rng.c: xoshiro256** (Blackman and Vigna, "Scrambled linear pseudorandom
 * number generators", 2018) seeded through splitmix64.
 *
 * The externally accessible functions are
 *   wd_rng_seed     state = the first four splitmix64 outputs started at seed;
 *                   never the all-zero state xoshiro cannot leave
 *   wd_rng_u64      next output of xoshiro256**, period 2^256 - 1
 *   wd_rng_uniform  the top 53 bits of wd_rng_u64 times 2^-53: every double
 *                   of the 2^-53 grid in [0, 1) equally likely, 1 never
 *   wd_rng_normal   Box-Muller from two uniforms, one normal per call
 * Notes: the integer stream, hence wd_rng_uniform, is bit-identical on every
 * machine; wd_rng_normal goes through libm's log and cos, which are not
 * correctly rounded everywhere, so it can differ in the last bits between C
 * libraries.
 */
#include "rng.h"

#include <math.h>

/* C11 has no M_PI */
static const double two_pi = 6.28318530717958647692528676655900577;

void wd_rng_seed(wd_rng *r, uint64_t seed)
{
    /* splitmix64 is a bijection of its 64-bit counter, and four successive
     * counters are distinct, so at most one of the four words can be zero. */
    uint64_t state = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = wd_rng_splitmix64(&state);
}

uint64_t wd_rng_u64(wd_rng *r)
{
    return wd_rng_step(r->s);
}

double wd_rng_uniform(wd_rng *r)
{
    return wd_rng_to_uniform(wd_rng_u64(r));
}

double wd_rng_normal(wd_rng *r)
{
    /* 1 - uniform lies in (0, 1], so the logarithm is finite.  The second
     * normal of the pair (the sine) is dropped: wd_rng has no room to keep
     * it, and a stream that depends only on the number of calls is easier to
     * reproduce than one that caches. */
    const double u1 = 1.0 - wd_rng_uniform(r);
    const double u2 = wd_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(two_pi * u2);
}
