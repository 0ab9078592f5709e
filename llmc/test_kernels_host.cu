/*
llmc/test_kernels_host.cu — host-side tests of llmc/kernels.cuh that need no GPU (built with nvcc, run in CI): the
token bucketing that makes the encoder backward deterministic must put every position in exactly one bucket, the
bucket of its own token, in increasing position order, with buckets in increasing token order; and the launch grid
sizes, computed in 64 bits, exact up to CUDA's limits and one error line past them.
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

// A launch's grid size for n, in a child (run_captured): the ones past CUDA's limits must exit with one line.
typedef struct {
    unsigned int (*launch)(size_t);
    size_t n;
} GridCase;
static void grid_case_run(void* arg) {
    GridCase* c = (GridCase*)arg;
    c->launch(c->n);
}

static unsigned int elementwise_grid(size_t n) { return blocks_for(n, 256); }
static unsigned int row_grid(size_t rows) { return blocks_per_row(rows, "a row launch"); }
static unsigned int column_sum_grid(size_t rows) { return (unsigned int)column_sum_chunks(rows); }

static void test_grid_limits(void) {
    // past 32 bits of elements, still exact; the limits themselves fit
    CHECK(blocks_for((size_t)3 << 32, 1024) == 12582912u, "blocks_for(3 * 2^32, 1024) = %u", blocks_for((size_t)3 << 32, 1024));
    CHECK(blocks_for((size_t)2147483647 * 256, 256) == 2147483647u, "2^31 - 1 blocks in x are allowed");
    CHECK(blocks_per_row(2147483647, "rows") == 2147483647u, "2^31 - 1 rows are allowed");
    CHECK(column_sum_chunks(4194240) == 65535, "4194240 rows are 65535 chunks");
    CHECK(column_sum_chunks(1) == 1 && column_sum_chunks(64) == 1 && column_sum_chunks(65) == 2, "chunks round up");
    // one past each limit: exit 1 with one line naming the launch and the limit
    GridCase cases[] = {{elementwise_grid, (size_t)2147483648ull * 256}, {elementwise_grid, (size_t)1 << 62},
                        {row_grid, (size_t)2147483648ull}, {column_sum_grid, 4194241}};
    const char* wants[] = {"an elementwise launch needs 2147483648 blocks", "more than CUDA's limit of 2147483647",
                           "a row launch needs 2147483648 blocks",
                           "needs 65536 blocks in one grid dimension, more than CUDA's limit of 65535"};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char err[512];
        int rc = run_captured(grid_case_run, &cases[i], err, sizeof(err));
        int lines = 0;
        for (const char* c = err; *c; c++) { lines += *c == '\n'; }
        CHECK(rc == 1 && lines == 1 && strstr(err, "error: ") == err && strstr(err, wants[i]),
              "case %zu: rc %d, %d lines, wanted '%s', got: %s", i, rc, lines, wants[i], err);
    }
}

int main(void) {
    RUN_TEST(test_encoder_buckets);
    RUN_TEST(test_grid_limits);
    return test_summary("kernels-host");
}
