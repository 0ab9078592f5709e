/*
llmc/rand.h — a small, fully specified random number generator (splitmix64) so that a seed gives the same model and
the same samples on every machine, and its whole state is one uint64 that checkpoints can store.
*/
#ifndef GPTFP8_RAND_H
#define GPTFP8_RAND_H

#include <math.h>
#include <stdint.h>

typedef struct {
    uint64_t state;
} Rng;

static inline void rng_seed(Rng* rng, uint64_t seed) { rng->state = seed; }

static inline uint64_t rng_next_u64(Rng* rng) {
    uint64_t z = (rng->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// uniform in [0, 1), 24 random bits (every value exactly representable)
static inline float rng_uniform(Rng* rng) { return (float)(rng_next_u64(rng) >> 40) * (1.0f / 16777216.0f); }

// standard normal by Box-Muller (computed in double so the result does not depend on libm's float precision)
static inline float rng_normal(Rng* rng) {
    double u1 = ((double)(rng_next_u64(rng) >> 11) + 1.0) * (1.0 / 9007199254740993.0);  // (0, 1]
    double u2 = (double)(rng_next_u64(rng) >> 11) * (1.0 / 9007199254740992.0);          // [0, 1)
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

#endif  // GPTFP8_RAND_H
