/*
llmc/test_kernels_host.cu — the host side of llmc/'s CUDA code, tested without a GPU (built with nvcc, run in CI):
the token bucketing that makes the encoder backward deterministic (llmc/encoder.cuh) must put every position in
exactly one bucket, the bucket of its own token, in increasing position order, with buckets in increasing token
order; the launch grid sizes (llmc/cuda_common.cuh), computed in 64 bits, exact up to CUDA's limits and one error line
past them; llmc/gemm.cuh's plan keys with pointer alignments and its FP8 problem checks with their messages; and
llmc/gelu_fp8.cuh's and llmc/layernorm_fp8.cuh's launchers refusing, before any CUDA call, what their kernels cannot
take; and which LayerNorm kernels llmc/layernorm.cuh picks for which widths and pointers; the FP8 GEMMs' scale
pointers refused unless 16-byte aligned; llmc/gpu_idle.h's union of busy intervals.
*/
#include <stdlib.h>

#include "cuda_common.cuh"
#include "encoder.cuh"
#include "gelu_fp8.cuh"
#include "gemm.cuh"
#include "gpu_idle.h"
#include "layernorm.cuh"
#include "layernorm_fp8.cuh"
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

// llmc/gemm.cuh's host side: pointer alignments as cuBLASLt's preferences take them, the plan key telling two
// alignments apart, and the FP8 requirements refused with the problem described (no GPU: nothing is launched).
static void test_gemm_key_and_checks(void) {
    CHECK(gemm_pointer_alignment((void*)0x7f0000000000) == 256 && gemm_pointer_alignment((void*)0x7f0000000010) == 16 &&
              gemm_pointer_alignment((void*)0x7f0000000082) == 2 && gemm_pointer_alignment((void*)0x7f0000000300) == 256 &&
              gemm_pointer_alignment(NULL) == 256,
          "alignments: 256 (capped), 16, 2, 256");
    char* base = (char*)0x7f0000000000;
    const int S = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;  // one scale_inv per operand
    // the trainer's FP8 fprop: TN, E4M3 x E4M3, bias, at 256-byte-aligned pointers and at a later layer's offsets
    GemmKey first = gemm_key(base, CUDA_R_16BF, base + 4096, CUDA_R_8F_E4M3, 1, base + 8192, CUDA_R_8F_E4M3, 0,
                             base + 256, 2304, 8192, 768, 0, 1, S, S);
    GemmKey later = gemm_key(base + 16, CUDA_R_16BF, base + 4096 + 48, CUDA_R_8F_E4M3, 1, base + 8192, CUDA_R_8F_E4M3, 0,
                             base + 256 + 8, 2304, 8192, 768, 0, 1, S, S);
    CHECK(memcmp(&first, &later, sizeof(first)) != 0 && later.a_align == 16 && later.out_align == 16 &&
              later.bias_align == 8 && first.bias_align == 256 && first.fast_accum == 1,
          "alignment is part of the plan key (a %u out %u bias %u)", later.a_align, later.out_align, later.bias_align);
    GemmKey again = gemm_key(base, CUDA_R_16BF, base + 4096, CUDA_R_8F_E4M3, 1, base + 8192, CUDA_R_8F_E4M3, 0,
                             base + 256, 2304, 8192, 768, 0, 1, S, S);
    CHECK(memcmp(&first, &again, sizeof(first)) == 0, "the same call gives the same key (no stray bytes)");
    char err[640];
    CHECK(gemm_problem_check(&first, err, sizeof(err)) == 0 && gemm_problem_check(&later, err, sizeof(err)) == 0,
          "aligned FP8 TN problems pass: %s", err);
    GemmKey misaligned = gemm_key(base, CUDA_R_16BF, base + 4104, CUDA_R_8F_E4M3, 1, base + 8192, CUDA_R_8F_E4M3, 0,
                                  NULL, 2304, 8192, 768, 0, 1, S, S);
    CHECK(gemm_problem_check(&misaligned, err, sizeof(err)) != 0 && strstr(err, "16-byte aligned") &&
              strstr(err, "align 8") && strstr(err, "e4m3") && strstr(err, "k 768"),
          "a misaligned FP8 operand is refused with the problem described: %s", err);
    GemmKey nn = gemm_key(base, CUDA_R_16BF, base + 4096, CUDA_R_8F_E4M3, 0, base + 8192, CUDA_R_8F_E5M2, 0, NULL, 768,
                          8192, 2304, 0, 0, S, S);
    CHECK(gemm_problem_check(&nn, err, sizeof(err)) != 0 && strstr(err, "TN layout") && strstr(err, "not transposed"),
          "FP8 outside TN is refused: %s", err);
    GemmKey odd = gemm_key(base, CUDA_R_16BF, base + 4096, CUDA_R_8F_E4M3, 1, base + 8192, CUDA_R_8F_E4M3, 0, NULL, 200,
                           64, 64, 0, 0, S, S);
    CHECK(gemm_problem_check(&odd, err, sizeof(err)) != 0 && strstr(err, "multiples of 16"), "m 200 refused: %s", err);
    // BF16 problems have no such requirement (cuBLASLt's preferences take their alignment)
    GemmKey bf16 = gemm_key(base + 2, CUDA_R_32F, base + 4098, CUDA_R_16BF, 0, base + 8194, CUDA_R_16BF, 1, NULL, 100,
                            36, 50, 1, 1, S, S);
    CHECK(gemm_problem_check(&bf16, err, sizeof(err)) == 0 && bf16.fast_accum == 0 && bf16.a_align == 2,
          "BF16 NT at 2-byte alignment is left to cuBLASLt");
    gemm_describe(err, sizeof(err), &bf16);
    CHECK(strstr(err, "D (100 x 36, fp32, align 2)") && strstr(err, "B bf16 transposed") && strstr(err, "D +="),
          "the description names shapes, types, transposes and accumulation: %s", err);
    // scale pointers: 16-byte aligned (or NULL: a scale of 1) for FP8; BF16 has none to check
    const float* cells = (const float*)(base + 65536);
    CHECK(gemm_scale_pointers_check(&first, cells, cells + 4, err, sizeof(err)) == 0 &&
              gemm_scale_pointers_check(&first, NULL, NULL, err, sizeof(err)) == 0 &&
              gemm_scale_pointers_check(&bf16, cells + 1, cells + 2, err, sizeof(err)) == 0,
          "16-byte-aligned and NULL FP8 scale pointers pass, BF16 ones are not looked at: %s", err);
    CHECK(gemm_scale_pointers_check(&first, cells + 1, cells, err, sizeof(err)) != 0 &&
              strstr(err, "16-byte aligned only") && strstr(err, "e4m3") &&
              gemm_scale_pointers_check(&first, cells, cells + 6, err, sizeof(err)) != 0,
          "a scale pointer 4 or 8 bytes past 16 is refused with the problem: %s", err);
}

// llmc/gpu_idle.h's union of the busy intervals within a step's window [t0, t1] (the rest of -idle_step needs CUPTI
// and a GPU): overlapping, nested, touching, reversed and outside intervals, in any order.
static void test_gpu_idle_union(void) {
    GpuBusyInterval a[] = {{50, 60, "e"}, {10, 20, "b"}, {15, 30, "c"}, {12, 14, "x"}, {30, 35, "d"}, {80, 70, "empty"},
                           {0, 5, "a"}, {95, 130, "f"}, {200, 300, "past"}};
    uint64_t busy = gpu_idle_union_ns(a, sizeof(a) / sizeof(a[0]), 3, 100);
    // [3,5] 2 + [10,35] 25 + [50,60] 10 + [95,100] 5 = 42; [80,70] is empty, [200,300] past t1
    CHECK(busy == 42, "union %llu ns, want 42", (unsigned long long)busy);
    CHECK(gpu_idle_union_ns(a, 0, 0, 100) == 0, "no interval, nothing busy");
    GpuBusyInterval whole[] = {{0, 1000, "w"}, {10, 20, "v"}};
    CHECK(gpu_idle_union_ns(whole, 2, 100, 200) == 100, "an interval around the whole window covers it once");
    // the gaps of the same intervals in [3, 100]: [5,10) 5 after a before b, [35,50) 15 after d (which ends the
    // covered stretch [10,35], not x nested inside it) before e, [60,95) 35 after e before f; none at the end (f runs
    // past 100). Longest first; gaps under 10 ns counted apart
    GpuIdleGap gaps[2];
    GpuIdleGapSummary sum;
    size_t kept = gpu_idle_gaps(a, sizeof(a) / sizeof(a[0]), 3, 100, gaps, 2, 10, &sum);
    CHECK(kept == 2 && gaps[0].length == 35 && gaps[0].at == 57 && strcmp(gaps[0].after, "e") == 0 &&
              strcmp(gaps[0].before, "f") == 0 && gaps[1].length == 15 && strcmp(gaps[1].after, "d") == 0 &&
              strcmp(gaps[1].before, "e") == 0,
          "the two longest gaps: %zu kept, %llu ns at +%llu (%s -> %s), %llu ns (%s -> %s)", kept,
          (unsigned long long)gaps[0].length, (unsigned long long)gaps[0].at, gaps[0].after, gaps[0].before,
          (unsigned long long)gaps[1].length, gaps[1].after, gaps[1].before);
    CHECK(sum.count == 3 && sum.total_ns == 55 && sum.short_count == 1 && sum.short_ns == 5,
          "gaps: %zu, %llu ns, %zu short (%llu ns)", sum.count, (unsigned long long)sum.total_ns, sum.short_count,
          (unsigned long long)sum.short_ns);
    CHECK(sum.total_ns == 97 - 42, "the gaps add up to the window less the union");
    // a window starting before its first interval and ending after its last: gaps at both ends, named by the step's
    // start and end (NULL)
    GpuBusyInterval one[] = {{10, 20, "k"}};
    kept = gpu_idle_gaps(one, 1, 0, 50, gaps, 2, 0, &sum);
    CHECK(kept == 2 && gaps[0].length == 30 && gaps[0].at == 20 && strcmp(gaps[0].after, "k") == 0 &&
              gaps[0].before == NULL && gaps[1].length == 10 && gaps[1].at == 0 && gaps[1].after == NULL &&
              strcmp(gaps[1].before, "k") == 0 && sum.count == 2 && sum.short_count == 0,
          "gaps at the step's ends");
    kept = gpu_idle_gaps(one, 0, 0, 50, gaps, 2, 0, &sum);
    CHECK(kept == 1 && gaps[0].length == 50 && gaps[0].after == NULL && gaps[0].before == NULL, "no interval: one gap");
}

// llmc/gpu_idle.h's kernel names: CUPTI's mangled names as the source spells them; others kept; cut to the buffer.
static void test_gpu_idle_short_name(void) {
    const struct { const char* mangled; const char* want; } cases[] = {
        {"_Z22encoder_forward_kernelP13__nv_bfloat16PKiS1_S1_ii", "encoder_forward_kernel"},
        {"_ZN3foo3barEv", "foo::bar"},
        {"_ZL6kernelv", "kernel"},
        {"_Z24layernorm_forward_kernelILi4EEvPfPKf", "layernorm_forward_kernel"},
        {"sm90_xmma_gemm_e4m3bf16_e4m3f32_f32_tn_n_tilesize128x128x128", "sm90_xmma_gemm_e4m3bf16_e4m3f32_f32_tn_n_tilesize128x128x128"},
        {"memcpy", "memcpy"},
        {"_Z99short", "_Z99short"},  // a length past the name's end: kept as it is
    };
    char out[96];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        gpu_idle_short_name(cases[i].mangled, out, sizeof(out));
        CHECK(strcmp(out, cases[i].want) == 0, "%s: %s, want %s", cases[i].mangled, out, cases[i].want);
    }
    char small[8];
    gpu_idle_short_name("_Z22encoder_forward_kernelv", small, sizeof(small));
    CHECK(strlen(small) < sizeof(small), "cut to its buffer: %s", small);
    gpu_idle_short_name(NULL, out, sizeof(out));
    CHECK(strcmp(out, "?") == 0, "no name: %s", out);
}

// The block-scaled GEMMs' problems (-fp8_recipe blockwise): the trainer's three pass, and what cuBLASLt does not run
// on Hopper is refused in one line before any call: fast accumulation, k not a multiple of 128, two 128x128-tile
// operands, a block mode beside a scalar one, a BF16 operand.
static void test_gemm_block_scaled_checks(void) {
    char* base = (char*)0x7f0000000000;
    const int V = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F, B = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
    const int S = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
    char err[640];
    // fprop: W's tiles x x's 1x128 blocks; dgrad: W^T's tiles x dy's; wgrad: x^T's and dy^T's 1x128 blocks, fp32 out
    GemmKey fprop = gemm_key(base, CUDA_R_16BF, base + 4096, CUDA_R_8F_E4M3, 1, base + 8192, CUDA_R_8F_E4M3, 0, NULL,
                             2304, 8192, 768, 1, 0, B, V);
    GemmKey dgrad = gemm_key(base, CUDA_R_16BF, base + 4096, CUDA_R_8F_E4M3, 1, base + 8192, CUDA_R_8F_E5M2, 0, NULL,
                             768, 8192, 2304, 0, 0, B, V);
    GemmKey wgrad = gemm_key(base, CUDA_R_32F, base + 4096, CUDA_R_8F_E4M3, 1, base + 8192, CUDA_R_8F_E5M2, 0, NULL,
                             768, 2304, 8192, 1, 0, V, V);
    CHECK(gemm_problem_check(&fprop, err, sizeof(err)) == 0 && gemm_problem_check(&dgrad, err, sizeof(err)) == 0 &&
              gemm_problem_check(&wgrad, err, sizeof(err)) == 0,
          "the trainer's block-scaled fprop, dgrad and wgrad pass: %s", err);
    GemmKey scalar = gemm_key(base, CUDA_R_16BF, base + 4096, CUDA_R_8F_E4M3, 1, base + 8192, CUDA_R_8F_E4M3, 0, NULL,
                              2304, 8192, 768, 0, 0, S, S);
    CHECK(memcmp(&fprop, &scalar, sizeof(fprop)) != 0, "the scale modes are part of the plan key");
    const struct {
        GemmKey key;
        const char* says;
    } refused[] = {
        {gemm_key(base, CUDA_R_16BF, base + 4096, CUDA_R_8F_E4M3, 1, base + 8192, CUDA_R_8F_E4M3, 0, NULL, 2304, 8192,
                  768, 0, 1, B, V), "fast accumulation"},
        {gemm_key(base, CUDA_R_16BF, base + 4096, CUDA_R_8F_E4M3, 1, base + 8192, CUDA_R_8F_E4M3, 0, NULL, 2304, 8192,
                  784, 0, 0, B, V), "multiple of 128"},
        {gemm_key(base, CUDA_R_16BF, base + 4096, CUDA_R_8F_E4M3, 1, base + 8192, CUDA_R_8F_E4M3, 0, NULL, 2304, 8192,
                  768, 0, 0, B, B), "two 128x128-tile"},
        {gemm_key(base, CUDA_R_16BF, base + 4096, CUDA_R_8F_E4M3, 1, base + 8192, CUDA_R_8F_E4M3, 0, NULL, 2304, 8192,
                  768, 0, 0, B, S), "both operands in blocks"},
        {gemm_key(base, CUDA_R_16BF, base + 4096, CUDA_R_8F_E4M3, 1, base + 8192, CUDA_R_16BF, 0, NULL, 2304, 8192,
                  768, 0, 0, B, V), "two FP8 operands"},
    };
    // BF16 x BF16 with block modes: refused too, not let through as a BF16 problem
    GemmKey bf16 = gemm_key(base, CUDA_R_16BF, base + 4096, CUDA_R_16BF, 1, base + 8192, CUDA_R_16BF, 0, NULL, 2304,
                            8192, 768, 0, 0, B, V);
    CHECK(gemm_problem_check(&bf16, err, sizeof(err)) != 0 && strstr(err, "two FP8 operands"),
          "BF16 operands with block scale modes refused: %s", err);
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        CHECK(gemm_problem_check(&refused[i].key, err, sizeof(err)) != 0 && strstr(err, refused[i].says) &&
                  strstr(err, "scales A BLK128x128_32F"),
              "refused (%s) with the problem and its scale modes named: %s", refused[i].says, err);
    }
}

// GELU inside the FP8 casts (gelu_fp8.cuh): the cast + transpose's own refusals (the tile, alignments) for the input
// GELU reads, and the backward's extra tensors: the output gradient 16-byte aligned (vector loads), the bias partials
// 4-byte aligned, each refused in one line with cudaErrorInvalidValue and nothing launched.
static void test_gelu_fp8_launch_preconditions(void) {
    uint8_t* out = (uint8_t*)0x7f0000000000;  // never dereferenced: every call below is refused first
    uint8_t* out_t = (uint8_t*)0x7f0000100000;
    const floatX* inp = (const floatX*)0x7f0000200000;
    const floatX* dout = (const floatX*)0x7f0000280000;
    float* amax = (float*)0x7f0000300000;
    const float* scale = (const float*)0x7f0000300010;
    float* partials = (float*)0x7f0000400000;
    fprintf(stderr, "(the launchers' refusals below are expected)\n");
    CHECK(gelu_forward_fp8(out, out_t, inp, 64, 100, scale, amax, NULL, FP8_E4M3, 0) == cudaErrorInvalidValue,
          "forward: 100 columns, off the 64-wide tile");
    CHECK(gelu_forward_fp8(out, out_t, inp + 1, 64, 64, scale, amax, NULL, FP8_E4M3, 0) == cudaErrorInvalidValue,
          "forward: fc's output at 2 bytes");
    CHECK(gelu_forward_fp8(out, out_t + 4, inp, 64, 64, scale, amax, NULL, FP8_E4M3, 0) == cudaErrorInvalidValue,
          "forward: the transposed output at 4 bytes");
    CHECK(gelu_backward_fp8(out, out_t, partials, inp, dout + 4, 64, 64, scale, amax, NULL, FP8_E5M2, 0) ==
              cudaErrorInvalidValue,
          "backward: the output gradient at 8 bytes");
    CHECK(gelu_backward_fp8(out, out_t, (float*)((char*)partials + 2), inp, dout, 64, 64, scale, amax, NULL, FP8_E5M2,
                            0) == cudaErrorInvalidValue,
          "backward: the bias partials at 2 bytes");
    CHECK(gelu_backward_fp8(out, out_t, partials, inp, dout, 96, 64, scale, amax, NULL, FP8_E5M2, 0) ==
              cudaErrorInvalidValue,
          "backward: 96 rows, off the tile");
    // current scaling's amax passes over the same inputs: 16-byte vectors, whole vectors
    Fp8CurrentScale target = {scale, amax, amax, amax, amax, 0};  // (never written: refused first)
    Fp8AmaxWorkspace workspace = {(unsigned int*)partials, (unsigned int*)partials};
    CHECK(gelu_forward_amax_scale(inp + 1, 4096, FP8_E4M3, target, workspace, 132, 0) == cudaErrorInvalidValue,
          "forward amax pass: fc's output at 2 bytes");
    CHECK(gelu_forward_amax_scale(inp, 4100, FP8_E4M3, target, workspace, 132, 0) == cudaErrorInvalidValue,
          "forward amax pass: 4100 elements, not whole 8-element vectors");
    CHECK(gelu_backward_amax_scale(inp, dout + 4, 4096, FP8_E5M2, target, workspace, 132, 0) == cudaErrorInvalidValue,
          "backward amax pass: the output gradient at 8 bytes");
}

// LayerNorm inside the FP8 cast (layernorm_fp8.cuh): the cast + transpose's refusals for the residual stream it reads,
// and its own tensors': the weight and bias 16-byte aligned (one vector of 8 columns each), the row statistics 4-byte
// aligned, none of the four missing, each refused in one line with cudaErrorInvalidValue and nothing launched.
static void test_layernorm_fp8_launch_preconditions(void) {
    uint8_t* out = (uint8_t*)0x7f0000000000;  // never dereferenced: every call below is refused first
    uint8_t* out_t = (uint8_t*)0x7f0000100000;
    const floatX* inp = (const floatX*)0x7f0000200000;
    const floatX* weight = (const floatX*)0x7f0000280000;
    const floatX* bias = (const floatX*)0x7f0000281000;
    const float* mean = (const float*)0x7f0000290000;
    const float* rstd = (const float*)0x7f00002a0000;
    float* amax = (float*)0x7f0000300000;
    const float* scale = (const float*)0x7f0000300010;
    // each case one thing wrong with the good arguments above
    struct {
        const floatX *inp, *weight, *bias;
        const float *mean, *rstd;
        uint8_t* out_t;
        int rows, cols;
        const char* what;
    } refused[] = {
        {inp, weight, bias, mean, rstd, out_t, 64, 100, "100 columns, off the 64-wide tile"},
        {inp, weight, bias, mean, rstd, out_t, 96, 64, "96 rows, off the tile"},
        {inp + 1, weight, bias, mean, rstd, out_t, 64, 64, "the residual stream at 2 bytes"},
        {inp, weight + 4, bias, mean, rstd, out_t, 64, 64, "the weight at 8 bytes"},
        {inp, weight, bias + 1, mean, rstd, out_t, 64, 64, "the bias at 2 bytes"},
        {inp, weight, bias, (const float*)((const char*)mean + 2), rstd, out_t, 64, 64, "the means at 2 bytes"},
        {inp, weight, bias, mean, rstd, out_t + 4, 64, 64, "the transposed output at 4 bytes"},
        {inp, weight, bias, mean, NULL, out_t, 64, 64, "no row rstds"},
        {inp, weight, NULL, mean, rstd, out_t, 64, 64, "no bias"},
    };
    fprintf(stderr, "(the launchers' refusals below are expected)\n");
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        CHECK(layernorm_forward_fp8(out, refused[i].out_t, refused[i].inp, refused[i].mean, refused[i].rstd,
                                    refused[i].weight, refused[i].bias, refused[i].rows, refused[i].cols, scale, amax,
                                    NULL, FP8_E4M3, 0) == cudaErrorInvalidValue,
              "%s", refused[i].what);
    }
    // current scaling's amax pass over the same values: no tile, so any rows; columns whole 8-element vectors
    Fp8CurrentScale target = {scale, amax, amax, amax, amax, 0};  // (never written: refused first)
    Fp8AmaxWorkspace workspace = {(unsigned int*)amax, (unsigned int*)amax};
    struct {
        const floatX *inp, *weight, *bias;
        const float* rstd;
        int rows, cols;
        const char* what;
    } refused_pass[] = {
        {inp, weight, bias, rstd, 64, 100, "amax pass: 100 columns, not whole 8-element vectors"},
        {inp, weight, bias, rstd, 0, 64, "amax pass: no rows"},
        {inp + 1, weight, bias, rstd, 64, 64, "amax pass: the residual stream at 2 bytes"},
        {inp, weight + 4, bias, rstd, 64, 64, "amax pass: the weight at 8 bytes"},
        {inp, weight, bias, NULL, 64, 64, "amax pass: no row rstds"},
        {inp, weight, bias, (const float*)((const char*)rstd + 2), 64, 64, "amax pass: the rstds at 2 bytes"},
    };
    for (size_t i = 0; i < sizeof(refused_pass) / sizeof(refused_pass[0]); i++) {
        CHECK(layernorm_forward_amax_scale(refused_pass[i].inp, mean, refused_pass[i].rstd, refused_pass[i].weight,
                                           refused_pass[i].bias, refused_pass[i].rows, refused_pass[i].cols, FP8_E4M3,
                                           target, workspace, 132, 0) == cudaErrorInvalidValue,
              "%s", refused_pass[i].what);
    }
}

// LayerNorm's one-warp-per-row kernels take C a multiple of 8 up to LAYERNORM_MAX_C (2048: every GPT-2 width, 768 to
// 1600) with every tensor 16-byte aligned; anything else goes to the one-block-per-row kernels.
static void test_layernorm_rows_fit(void) {
    const char* a = (const char*)0x7f0000000000;  // 16-byte aligned
    CHECK(LAYERNORM_MAX_C == 2048, "the widest row in registers is 2048 (32 lanes x 8 vectors x 8)");
    const int fit[] = {8, 64, 768, 1024, 1280, 1600, 2048};
    for (size_t i = 0; i < sizeof(fit) / sizeof(fit[0]); i++) {
        CHECK(layernorm_rows_fit(fit[i], a, a + 4096, a + 8192, a + 12288), "C %d: one warp per row", fit[i]);
    }
    const int block[] = {4, 100, 772, 2056, 4096};
    for (size_t i = 0; i < sizeof(block) / sizeof(block[0]); i++) {
        CHECK(!layernorm_rows_fit(block[i], a, a + 4096, a + 8192, a + 12288), "C %d: one block per row", block[i]);
    }
    for (int which = 0; which < 4; which++) {  // each pointer 2 bytes off 16 in turn
        const char* p[4] = {a, a + 4096, a + 8192, a + 12288};
        p[which] += 2;
        CHECK(!layernorm_rows_fit(768, p[0], p[1], p[2], p[3]), "pointer %d off 16 bytes: one block per row", which);
    }
}

int main(void) {
    RUN_TEST(test_encoder_buckets);
    RUN_TEST(test_grid_limits);
    RUN_TEST(test_gemm_key_and_checks);
    RUN_TEST(test_gemm_block_scaled_checks);
    RUN_TEST(test_gelu_fp8_launch_preconditions);
    RUN_TEST(test_layernorm_fp8_launch_preconditions);
    RUN_TEST(test_layernorm_rows_fit);
    RUN_TEST(test_gpu_idle_union);
    RUN_TEST(test_gpu_idle_short_name);
    return test_summary("kernels-host");
}
