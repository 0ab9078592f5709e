/*
llmc/test_kernels_host.cu — host-side tests of llmc/kernels.cuh that need no GPU (built with nvcc, run in CI): the
token bucketing that makes the encoder backward deterministic must put every position in exactly one bucket, the
bucket of its own token, in increasing position order, with buckets in increasing token order.
*/
#include <stdlib.h>

#include "kernels.cuh"
#include "rand.h"
#include "testing.h"

static void check_buckets(const int* tokens, int n, int V, const char* what) {
    int* positions = (int*)malloc((size_t)n * sizeof(int));
    int* start = (int*)malloc((size_t)(n + 1) * sizeof(int));
    int* token = (int*)malloc((size_t)n * sizeof(int));
    int* count = (int*)malloc((size_t)V * sizeof(int));
    int* seen = (int*)calloc((size_t)n, sizeof(int));
    int distinct = 0;
    for (int v = 0; v < V; v++) {
        int found = 0;
        for (int i = 0; i < n && !found; i++) { found = tokens[i] == v; }
        distinct += found;
    }
    int buckets = encoder_buckets(tokens, n, V, positions, start, token, count);
    CHECK(buckets == distinct, "%s: %d buckets for %d distinct tokens", what, buckets, distinct);
    CHECK(start[0] == 0 && start[buckets] == n, "%s: buckets cover [0, %d)", what, n);
    int bad = 0;
    for (int k = 0; k < buckets; k++) {
        bad += k > 0 && token[k] <= token[k - 1];
        bad += start[k + 1] <= start[k];  // no empty bucket
        for (int i = start[k]; i < start[k + 1]; i++) {
            bad += tokens[positions[i]] != token[k];
            bad += i > start[k] && positions[i] <= positions[i - 1];
            seen[positions[i]]++;
        }
    }
    for (int i = 0; i < n; i++) { bad += seen[i] != 1; }
    CHECK(bad == 0, "%s: %d violations", what, bad);
    free(positions);
    free(start);
    free(token);
    free(count);
    free(seen);
}

static void test_encoder_buckets(void) {
    Rng rng;
    rng_seed(&rng, 3);
    enum { N = 4096 };
    static int tokens[N];
    for (int i = 0; i < N; i++) { tokens[i] = (int)(rng_next_u64(&rng) % 50257); }
    check_buckets(tokens, N, 50257, "random over GPT-2's vocabulary");
    for (int i = 0; i < N; i++) { tokens[i] = (int)(rng_next_u64(&rng) % 7); }
    check_buckets(tokens, N, 7, "7 tokens, many repeats");
    for (int i = 0; i < N; i++) { tokens[i] = 5; }
    check_buckets(tokens, N, 8, "one token everywhere");
    int one[1] = {0};
    check_buckets(one, 1, 1, "a single position");
}

int main(void) {
    RUN_TEST(test_encoder_buckets);
    return test_summary("kernels-host");
}
