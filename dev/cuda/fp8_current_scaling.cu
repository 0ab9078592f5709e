/*
dev/cuda/fp8_current_scaling.cu — current scaling's GPU pieces on their own: the amax pass that leaves a tensor's own
scale in its cell (fp8_amax_scale in fp8/quantize.cuh), followed by the delayed-scaling cast kernels reading that cell,
against the CPU reference fp8_quantize_current_bf16 (fp8/current.h), bit for bit (R1 of llmc/tolerance.h: a maximum
whatever the order, then the same float operations): every FP8 byte (and every transposed byte), the scale, scale_inv
and tensor amax, and row 0 after the merge. Cases: E4M3 and E5M2, margin 0 and 2, the special amaxes (all zeros, an inf,
a NaN: the previous scale is kept; only denormals: FLT_MAX), a grid of one block and grids of many (the last block
computes the scale), several casts in a row through one workspace (its ticket counter resets itself), and an
evaluation-style target (previous scale read from one cell, the new one written to another, the first left alone). Then
the cost at the trainer's shapes: the delayed cast alone against amax pass + cast, in GB/s of the bytes each moves and
as a ratio of times.

Build: make dev/cuda/fp8_current_scaling     Run: ./dev/cuda/fp8_current_scaling    (one line, exit 1 without a GPU)
*/
#include <cuda_bf16.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../fp8/current.h"
#include "../../fp8/quantize.cuh"
#include "../../llmc/cuda_utils.cuh"
#include "../../llmc/rand.h"
#include "../../llmc/testing.h"
#include "bench.h"

// Device cells of one cast, in this order: the previous scale, this cast's scale, scale_inv, tensor amax, row 0.
enum { CELL_PREVIOUS, CELL_SCALE, CELL_SCALE_INV, CELL_AMAX, CELL_ROW0, CELL_GEMM_SCALE_INV, NUM_CELLS };

typedef enum { VALUES_NORMAL, VALUES_ZERO, VALUES_WITH_INF, VALUES_WITH_NAN, VALUES_DENORMAL } Values;
static const char* values_name[] = {"normal", "all zero", "with an inf", "with a NaN", "only denormals"};

// n bf16: normals with magnitudes over 2^-10 .. 2^10 (a few exact zeros), with one inf or NaN among them, or all
// zeros, or only denormals
static uint16_t* make_tensor(size_t n, Values kind, Rng* rng) {
    uint16_t* x = (uint16_t*)malloc(n * sizeof(uint16_t));
    for (size_t i = 0; i < n; i++) {
        float magnitude = ldexpf(1.0f, (int)(rng_next_u64(rng) % 21) - 10);
        x[i] = kind == VALUES_ZERO ? 0
             : kind == VALUES_DENORMAL ? (uint16_t)(1 + rng_next_u64(rng) % 0x7F)  // bf16 denormals: below 2^-126
             : bf16_from_float(i % 97 == 0 ? 0.0f : rng_normal(rng) * magnitude);
    }
    if (kind == VALUES_WITH_INF) { x[n / 2] = 0xFF80; }  // -inf
    if (kind == VALUES_WITH_NAN) { x[n / 3] = 0x7FC0; }
    return x;
}

static int same_bits(float a, float b) { return fp8_float_bits(a) == fp8_float_bits(b); }

// The device side of one cast: x (n) bf16, out (n) FP8, out_t (n) its transpose, cells (NUM_CELLS)
typedef struct {
    __nv_bfloat16* x;
    uint8_t *out, *out_t;
    float* cells;
} DeviceCast;

static DeviceCast device_cast_alloc(size_t n) {
    DeviceCast d;
    cudaCheck(cudaMalloc(&d.x, n * 2));
    cudaCheck(cudaMalloc(&d.out, n));
    cudaCheck(cudaMalloc(&d.out_t, n));
    cudaCheck(cudaMalloc(&d.cells, NUM_CELLS * sizeof(float)));
    return d;
}

static void device_cast_free(DeviceCast* d) {
    cudaCheck(cudaFree(d->x));
    cudaCheck(cudaFree(d->out));
    cudaCheck(cudaFree(d->out_t));
    cudaCheck(cudaFree(d->cells));
}

// One current-scaling cast on the GPU (amax pass, then the cast or cast+transpose) against the CPU reference.
// separate_target: the new scale goes to its own cell, the previous one must stay untouched (an evaluation cast).
static void check_cast(int rows, int cols, Fp8Format format, int margin, Values kind, int transpose,
                       int separate_target, int num_sms, Fp8AmaxWorkspace workspace, Rng* rng) {
    size_t n = (size_t)rows * cols;
    uint16_t* x = make_tensor(n, kind, rng);
    const float previous_scale = 3.0f, row0_before = 0.125f;  // row 0: an earlier tensor of this slot this step
    // CPU
    uint8_t* want = (uint8_t*)malloc(n);
    float want_scale = previous_scale, want_scale_inv = 0.0f, want_row0 = row0_before;
    float want_amax = fp8_quantize_current_bf16(want, x, n, format, margin, &want_scale, &want_scale_inv, &want_row0, NULL);
    // GPU
    DeviceCast d = device_cast_alloc(n);
    __nv_bfloat16* d_x = d.x;
    uint8_t *d_out = d.out, *d_out_t = d.out_t;
    float* d_cells = d.cells;
    float cells[NUM_CELLS] = {previous_scale, -1.0f, -1.0f, -1.0f, row0_before, -1.0f};
    cudaCheck(cudaMemcpy(d_x, x, n * 2, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(d_cells, cells, sizeof(cells), cudaMemcpyHostToDevice));
    float* scale_cell = separate_target ? d_cells + CELL_SCALE : d_cells + CELL_PREVIOUS;
    Fp8CurrentScale target = {d_cells + CELL_PREVIOUS, scale_cell, d_cells + CELL_SCALE_INV,
                              d_cells + CELL_GEMM_SCALE_INV, d_cells + CELL_AMAX, margin};
    cudaCheck(fp8_amax_scale(d_x, n, format, target, workspace, num_sms, 0));
    if (transpose) {
        cudaCheck(fp8_cast_transpose_amax(d_out, d_out_t, d_x, rows, cols, scale_cell, d_cells + CELL_ROW0, NULL, format, 0));
    } else {
        cudaCheck(fp8_cast_amax(d_out, d_x, n, scale_cell, d_cells + CELL_ROW0, NULL, format, num_sms, 0));
    }
    uint8_t* got = (uint8_t*)malloc(n);
    uint8_t* got_t = (uint8_t*)malloc(n);
    cudaCheck(cudaMemcpy(got, d_out, n, cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(got_t, d_out_t, n, cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(cells, d_cells, sizeof(cells), cudaMemcpyDeviceToHost));
    float got_scale = separate_target ? cells[CELL_SCALE] : cells[CELL_PREVIOUS];
    size_t bad_bytes = 0, bad_transposed = 0;
    for (size_t i = 0; i < n; i++) { bad_bytes += got[i] != want[i]; }
    for (int r = 0; r < rows && transpose; r++) {
        for (int c = 0; c < cols; c++) { bad_transposed += got_t[(size_t)c * rows + r] != want[(size_t)r * cols + c]; }
    }
    const char* name = transpose ? "cast+transpose" : "cast";
    // R1: every byte, and the scale, scale_inv, amax and row 0 bit for bit
    CHECK(bad_bytes == 0 && bad_transposed == 0, "%s %s %dx%d margin %d, %s: %zu bytes and %zu transposed bytes differ",
          name, fp8_format_name(format), rows, cols, margin, values_name[kind], bad_bytes, bad_transposed);
    CHECK(same_bits(got_scale, want_scale) && same_bits(cells[CELL_SCALE_INV], want_scale_inv) &&
              same_bits(cells[CELL_AMAX], want_amax) && same_bits(cells[CELL_ROW0], want_row0),
          "%s %s %dx%d margin %d, %s: scale %g scale_inv %g amax %g row0 %g, CPU %g %g %g %g", name,
          fp8_format_name(format), rows, cols, margin, values_name[kind], got_scale, cells[CELL_SCALE_INV],
          cells[CELL_AMAX], cells[CELL_ROW0], want_scale, want_scale_inv, want_amax, want_row0);
    CHECK(same_bits(cells[CELL_GEMM_SCALE_INV], want_scale_inv), "%s %s %dx%d margin %d, %s: the GEMMs' copy of "
          "scale_inv is %g, the CPU's scale_inv %g", name, fp8_format_name(format), rows, cols, margin,
          values_name[kind], cells[CELL_GEMM_SCALE_INV], want_scale_inv);
    if (separate_target) {
        CHECK(cells[CELL_PREVIOUS] == previous_scale, "evaluation-style cast: the previous scale's cell was written");
    }
    unsigned int blocks_done;
    cudaCheck(cudaMemcpy(&blocks_done, workspace.blocks_done, 4, cudaMemcpyDeviceToHost));
    CHECK(blocks_done == 0u, "the ticket counter is %u after the cast, not 0", blocks_done);
    free(x);
    free(want);
    free(got);
    free(got_t);
    device_cast_free(&d);
}

static Fp8AmaxWorkspace workspace;
static int device_sms;
static Rng rng;

static void test_formats_margins_shapes(void) {
    Fp8Format formats[2] = {FP8_E4M3, FP8_E5M2};
    for (int f = 0; f < 2; f++) {
        for (int margin = 0; margin <= 2; margin += 2) {
            check_cast(256, 768, formats[f], margin, VALUES_NORMAL, 0, 0, device_sms, workspace, &rng);
            check_cast(256, 768, formats[f], margin, VALUES_NORMAL, 1, 0, device_sms, workspace, &rng);
        }
    }
    check_cast(64, 64, FP8_E4M3, 0, VALUES_NORMAL, 1, 0, device_sms, workspace, &rng);      // one block
    check_cast(192, 3072, FP8_E4M3, 0, VALUES_NORMAL, 0, 0, 1, workspace, &rng);            // few blocks, long strides
    check_cast(4096, 768, FP8_E5M2, 0, VALUES_NORMAL, 0, 0, device_sms, workspace, &rng);   // a full grid
}

static void test_special_amaxes(void) {
    for (int kind = VALUES_ZERO; kind <= VALUES_DENORMAL; kind++) {
        check_cast(128, 256, FP8_E4M3, 0, (Values)kind, 0, 0, device_sms, workspace, &rng);
        check_cast(128, 256, FP8_E5M2, 0, (Values)kind, 1, 0, device_sms, workspace, &rng);
    }
}

static void test_evaluation_target(void) {
    check_cast(256, 768, FP8_E4M3, 0, VALUES_NORMAL, 0, 1, device_sms, workspace, &rng);
    check_cast(128, 256, FP8_E4M3, 0, VALUES_ZERO, 1, 1, device_sms, workspace, &rng);
}

// Delayed cast vs current cast (amax pass + the same cast) at B*T = 64*1024 rows and C = 768, 4C columns.
static void benchmark(void) {
    const int reps = 20;
    int shapes[2][2] = {{65536, 768}, {65536, 3072}};
    BenchTimer timer;
    bench_timer_init(&timer);
    for (int i = 0; i < 2; i++) {
        int rows = shapes[i][0], cols = shapes[i][1];
        size_t n = (size_t)rows * cols;
        DeviceCast d = device_cast_alloc(n);
        __nv_bfloat16* d_x = d.x;
        uint8_t *d_out = d.out, *d_out_t = d.out_t;
        float* d_cells = d.cells;
        cudaCheck(cudaMemset(d_x, 0x3F, n * 2));
        cudaCheck(cudaMemset(d_cells, 0, NUM_CELLS * sizeof(float)));
        Fp8CurrentScale target = {d_cells + CELL_PREVIOUS, d_cells + CELL_PREVIOUS, d_cells + CELL_SCALE_INV,
                                  d_cells + CELL_GEMM_SCALE_INV, d_cells + CELL_AMAX, 0};
        float ms[4];  // delayed cast, current cast, delayed cast+T, current cast+T
        for (int variant = 0; variant < 4; variant++) {
            int current = variant % 2, transpose = variant / 2;
            bench_start(&timer);
            for (int r = 0; r < reps; r++) {
                if (current) { cudaCheck(fp8_amax_scale(d_x, n, FP8_E4M3, target, workspace, device_sms, 0)); }
                if (transpose) {
                    cudaCheck(fp8_cast_transpose_amax(d_out, d_out_t, d_x, rows, cols, d_cells, d_cells + CELL_ROW0,
                                                      NULL, FP8_E4M3, 0));
                } else {
                    cudaCheck(fp8_cast_amax(d_out, d_x, n, d_cells, d_cells + CELL_ROW0, NULL, FP8_E4M3, device_sms, 0));
                }
            }
            ms[variant] = bench_stop_ms(&timer) / reps;
        }
        // bytes moved: the cast reads 2n and writes n (2n with the transpose); the amax pass reads 2n more
        double gb = 1e-6 * (double)n;
        printf("%d x %d: cast %.3f ms (%.0f GB/s), current %.3f ms (%.0f GB/s, %.2fx) | cast+T %.3f ms (%.0f GB/s), "
               "current %.3f ms (%.0f GB/s, %.2fx)\n", rows, cols, ms[0], 3 * gb / ms[0], ms[1], 5 * gb / ms[1],
               ms[1] / ms[0], ms[2], 4 * gb / ms[2], ms[3], 6 * gb / ms[3], ms[3] / ms[2]);
        device_cast_free(&d);
    }
    bench_timer_free(&timer);
}

int main(void) {
    device_sms = require_cuda_device("fp8_current_scaling");
    rng_seed(&rng, 2024);
    cudaCheck(cudaMalloc(&workspace.partials, FP8_AMAX_MAX_BLOCKS * sizeof(unsigned int)));
    cudaCheck(cudaMalloc(&workspace.blocks_done, sizeof(unsigned int)));
    cudaCheck(cudaMemset(workspace.blocks_done, 0, sizeof(unsigned int)));
    RUN_TEST(test_formats_margins_shapes);
    RUN_TEST(test_special_amaxes);
    RUN_TEST(test_evaluation_target);
    if (!bench_emulated("fp8_current_scaling")) { benchmark(); }
    return test_summary("fp8_current_scaling");
}
