/*
llmc/rand.h — a small, fully specified random number generator (splitmix64) so that a seed gives the same model and
the same samples on every machine, and its whole state is one uint64 that checkpoints can store.

splitmix64 is counter-based: the k-th draw (k = 0, 1, ...) after seeding with s is mix(s + (k + 1) * GOLDEN), a
function of k alone. So a stream can be cut into pieces that threads draw in parallel, each from rng_skip'ed state,
and the values are those of one serial pass (gpt2_init_parameters relies on it).
*/
#ifndef GPTFP8_RAND_H
#define GPTFP8_RAND_H

#include <math.h>
#include <stdint.h>

typedef struct {
    uint64_t state;
} Rng;

#define RNG_GOLDEN_GAMMA 0x9E3779B97F4A7C15ull

static inline void rng_seed(Rng* rng, uint64_t seed) { rng->state = seed; }

// Advance by `draws` calls of rng_next_u64 at once (the state is a counter stepping by RNG_GOLDEN_GAMMA, mod 2^64).
static inline void rng_skip(Rng* rng, uint64_t draws) { rng->state += draws * RNG_GOLDEN_GAMMA; }

static inline uint64_t rng_next_u64(Rng* rng) {
    uint64_t z = (rng->state += RNG_GOLDEN_GAMMA);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// uniform in [0, 1), 24 random bits (every value exactly representable)
static inline float rng_uniform(Rng* rng) { return (float)(rng_next_u64(rng) >> 40) * (1.0f / 16777216.0f); }

// standard normal by Box-Muller (computed in double so the result does not depend on libm's float precision); two
// draws per value
static inline float rng_normal(Rng* rng) {
    double u1 = ((double)(rng_next_u64(rng) >> 11) + 1.0) * (1.0 / 9007199254740993.0);  // (0, 1]
    double u2 = (double)(rng_next_u64(rng) >> 11) * (1.0 / 9007199254740992.0);          // [0, 1)
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

#endif  // GPTFP8_RAND_H
