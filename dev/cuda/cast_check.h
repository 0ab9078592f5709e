/*
dev/cuda/cast_check.h — what the FP8 cast checks of dev/cuda share (fp8_quantize.cu, gelu_fp8.cu, layernorm_fp8.cu,
and the PASS/FAIL lines of the others): PASS/FAIL lines and their tally, bf16 test values over many octaves,
comparisons (a transposed copy byte for byte, floats bit for bit with NaN matching NaN, the diagnostics counts against
the CPU's), the CPU's column partials in llmc/bias.cuh's order, a fused cast's outputs on the device and their check
against the CPU's cast, and bf16 uploads. Timing and device buffer lists are bench.h's.
*/
#ifndef GPTFP8_DEV_CUDA_CAST_CHECK_H
#define GPTFP8_DEV_CUDA_CAST_CHECK_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../fp8/fp8.h"
#include "../../fp8/current.h"
#include "../../fp8/quantize.cuh"
#include "../../fp8/quantize_cpu.h"
#include "../../llmc/bias.cuh"
#include "../../llmc/cuda_utils.cuh"
#include "../../llmc/rand.h"
#include "bench.h"

static int failures = 0, checks = 0;
static void report(int ok, const char* what) {
    checks++;
    failures += !ok;
    printf("%s %s\n", ok ? "PASS" : "FAIL", what);
}

// rows x cols bf16 values over ~24 octaves, so that a scale saturates the top and flushes the bottom
static uint16_t* random_bf16(size_t n, Rng* rng) {
    uint16_t* x = (uint16_t*)malloc(n * sizeof(uint16_t));
    for (size_t i = 0; i < n; i++) {
        float v = (rng_uniform(rng) * 2.0f - 1.0f) * ldexpf(1.0f, (int)(rng_next_u64(rng) % 24) - 16);
        x[i] = bf16_from_float(v);
    }
    return x;
}

// The GPU's counters (elements, saturated, flushed) against the CPU's Fp8QuantStats
static int stats_equal(const unsigned long long got[3], const Fp8QuantStats* want) {
    return got[0] == (unsigned long long)want->count && got[1] == (unsigned long long)want->saturated &&
           got[2] == (unsigned long long)want->flushed;
}

static void print_counts(const unsigned long long got[3], const Fp8QuantStats* want) {
    printf("  counts: GPU %llu elements, %llu saturated, %llu flushed; CPU %lld, %lld, %lld\n", got[0], got[1], got[2],
           want->count, want->saturated, want->flushed);
}

// Whether got_t (cols, rows) is want (rows, cols) transposed, byte for byte
static int is_transpose(const uint8_t* got_t, const uint8_t* want, int rows, int cols) {
    for (int r = 0; r < rows; r++) {
        for (int c = 0; c < cols; c++) {
            if (got_t[(size_t)c * rows + r] != want[(size_t)r * cols + c]) { return 0; }
        }
    }
    return 1;
}

// Every float bit for bit, except that a NaN matches any NaN: a GPU's fp32 add returns the canonical NaN, the CPU's
// keeps its operand's payload
static int floats_identical(const float* got, const float* want, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (isnan(got[i]) && isnan(want[i])) { continue; }
        if (fp8_float_bits(got[i]) != fp8_float_bits(want[i])) {
            printf("  element %zu: %.9g (0x%08x), want %.9g (0x%08x)\n", i, got[i], fp8_float_bits(got[i]), want[i],
                   fp8_float_bits(want[i]));
            return 0;
        }
    }
    return 1;
}

// bias_backward_partials_kernel's sums on the CPU: partials (rows / 64, cols), each the column's 64 rows of the chunk
// added in row order from 0.0f in fp32
static void column_partials_cpu(float* partials, const uint16_t* x, int rows, int cols) {
    for (int chunk = 0; chunk < rows / COLUMN_SUM_ROWS; chunk++) {
        for (int c = 0; c < cols; c++) {
            float sum = 0.0f;
            for (int r = chunk * COLUMN_SUM_ROWS; r < (chunk + 1) * COLUMN_SUM_ROWS; r++) {
                sum += bf16_to_float(x[(size_t)r * cols + c]);
            }
            partials[(size_t)chunk * cols + c] = sum;
        }
    }
}

// What one fused cast (an FP8 cast that makes its input on the way: gelu_fp8.cu's, layernorm_fp8.cu's) left on the
// device, downloaded: FP8 bytes (rows, cols), their transpose, the amax, the counts
typedef struct {
    uint8_t *out, *out_t;
    float amax;
    unsigned long long stats[3];
} CastResult;

// The device side of a check: outputs the casts write, reset before each
typedef struct {
    uint8_t *out, *out_t;
    float *scale, *amax, *partials, *dbias;
    unsigned long long* stats;
} DeviceOutputs;

// Every output of a cast of n elements; with partial_rows > 0 also the bias partials (partial_rows, cols) and the bias
// gradient (cols) a grad_output cast leaves (NULL otherwise)
static DeviceOutputs device_outputs_alloc(size_t n, size_t partial_rows, int cols) {
    DeviceOutputs d = {NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    cudaCheck(cudaMalloc(&d.out, n));
    cudaCheck(cudaMalloc(&d.out_t, n));
    cudaCheck(cudaMalloc(&d.scale, 4));
    cudaCheck(cudaMalloc(&d.amax, 4));
    cudaCheck(cudaMalloc(&d.stats, 3 * sizeof(unsigned long long)));
    if (partial_rows > 0) {
        cudaCheck(cudaMalloc(&d.partials, partial_rows * cols * sizeof(float)));
        cudaCheck(cudaMalloc(&d.dbias, cols * sizeof(float)));
    }
    return d;
}

static void device_outputs_free(DeviceOutputs* d) {
    void* buffers[] = {d->out, d->out_t, d->scale, d->amax, d->partials, d->dbias, d->stats};
    for (size_t i = 0; i < sizeof(buffers) / sizeof(buffers[0]); i++) { cudaCheck(cudaFree(buffers[i])); }  // NULL: no-op
}

static const float AMAX_BEFORE = 0.125f;  // an earlier cast of the same slot this step: the cast max-merges into it

// the outputs as no cast leaves them: every byte one that each element's cast must overwrite, the amax an earlier
// cast's, the counters 0
static void reset_outputs(const DeviceOutputs* d, size_t n) {
    cudaCheck(cudaMemset(d->out, 0xAA, n));
    cudaCheck(cudaMemset(d->out_t, 0xAA, n));
    cudaCheck(cudaMemcpy(d->amax, &AMAX_BEFORE, 4, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemset(d->stats, 0, 3 * sizeof(unsigned long long)));
}

static void download(CastResult* r, const DeviceOutputs* d, size_t n) {
    cudaCheck(cudaMemcpy(r->out, d->out, n, cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(r->out_t, d->out_t, n, cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(&r->amax, d->amax, 4, cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(r->stats, d->stats, sizeof(r->stats), cudaMemcpyDeviceToHost));
}

// R1: the bytes, the transposed bytes (unless skip_out: only out_t was written, compare it alone), the amax and, when
// counted, the counts, all the CPU's cast of the same bf16 values
static void check_result(const CastResult* r, const uint8_t* want, float want_amax, const Fp8QuantStats* want_stats,
                         int counted, int skip_out, int rows, int cols, const char* what) {
    size_t n = (size_t)rows * cols;
    int bytes_ok = skip_out || memcmp(r->out, want, n) == 0;
    int transposed_ok = is_transpose(r->out_t, want, rows, cols);
    int amax_ok = fp8_float_bits(r->amax) == fp8_float_bits(want_amax);
    int counts_ok = !counted || stats_equal(r->stats, want_stats);
    char line[240];
    snprintf(line, sizeof(line), "%s: %stransposed bytes and amax bit-exact%s", what, skip_out ? "" : "bytes, ",
             counted ? ", counts the CPU's" : "");
    report(bytes_ok && transposed_ok && amax_ok && counts_ok, line);
    if (!amax_ok) { printf("  amax: GPU %a, CPU %a\n", r->amax, want_amax); }
    if (!counts_ok) { print_counts(r->stats, want_stats); }
}

// n bf16 values (their bits) on the device, in a buffer on `list`
static __nv_bfloat16* upload_bf16(DeviceList* list, const uint16_t* x, size_t n) {
    __nv_bfloat16* d;
    device_upload(list, &d, x, n * 2);
    return d;
}

// Current scaling's amax pass over a fused cast's made input (llmc/gelu_fp8.cuh's and llmc/layernorm_fp8.cuh's
// *_amax_scale) on its own cells: the previous scale, the scale, scale_inv, the GEMMs' copy of scale_inv and the tensor
// amax (fp8/quantize.cuh's Fp8CurrentScale), and the pass's workspace, its ticket counter zeroed.
enum { AMAX_CELL_PREVIOUS, AMAX_CELL_SCALE, AMAX_CELL_SCALE_INV, AMAX_CELL_GEMM_SCALE_INV, AMAX_CELL_AMAX, AMAX_CELLS };
typedef struct {
    float* cells;  // (AMAX_CELLS)
    Fp8AmaxWorkspace workspace;
} AmaxScaleDevice;

static AmaxScaleDevice amax_scale_alloc(DeviceList* list) {
    AmaxScaleDevice a;
    device_alloc(list, &a.cells, AMAX_CELLS * sizeof(float));
    device_alloc(list, &a.workspace.partials, FP8_AMAX_MAX_BLOCKS * sizeof(unsigned int));
    device_alloc(list, &a.workspace.blocks_done, sizeof(unsigned int));
    cudaCheck(cudaMemset(a.workspace.blocks_done, 0, sizeof(unsigned int)));
    return a;
}

// The target of a training cast (its scale written over the previous one's cell), the cells reset first: the
// previous scale `previous`, the rest -1.
static Fp8CurrentScale amax_scale_target(const AmaxScaleDevice* a, float previous, int margin) {
    float cells[AMAX_CELLS] = {previous, -1.0f, -1.0f, -1.0f, -1.0f};
    cudaCheck(cudaMemcpy(a->cells, cells, sizeof(cells), cudaMemcpyHostToDevice));
    Fp8CurrentScale target = {a->cells + AMAX_CELL_PREVIOUS, a->cells + AMAX_CELL_PREVIOUS,
                              a->cells + AMAX_CELL_SCALE_INV, a->cells + AMAX_CELL_GEMM_SCALE_INV,
                              a->cells + AMAX_CELL_AMAX, margin};
    return target;
}

// The cells after an amax pass against current scaling's rule (fp8/current.h's fp8_quantize_current_bf16) on x (n),
// the bf16 tensor the separate kernel wrote: scale, scale_inv, the GEMMs' copy and the amax bit for bit (R1 of
// llmc/tolerance.h: a maximum, whatever the order, then the same scale rule), and the ticket counter back at 0.
static void check_amax_scale(const AmaxScaleDevice* a, const uint16_t* x, size_t n, Fp8Format format, float previous,
                             int margin, const char* what) {
    uint8_t* codes = (uint8_t*)malloc(n);
    float scale = previous, scale_inv = 0.0f, row0 = 0.0f;
    float amax = fp8_quantize_current_bf16(codes, x, n, format, margin, &scale, &scale_inv, &row0, NULL);
    free(codes);
    float got[AMAX_CELLS];
    unsigned int blocks_done;
    cudaCheck(cudaMemcpy(got, a->cells, sizeof(got), cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(&blocks_done, a->workspace.blocks_done, sizeof(blocks_done), cudaMemcpyDeviceToHost));
    float want[AMAX_CELLS] = {scale, -1.0f, scale_inv, scale_inv, amax};  // (the scale cell is the previous one's)
    char line[512];
    snprintf(line, sizeof(line), "%s: scale %g, scale_inv %g (the GEMMs' %g), amax %g; current scaling's rule on the "
             "separate kernel's bf16 output %g, %g, %g, bit for bit (R1)", what, got[AMAX_CELL_PREVIOUS],
             got[AMAX_CELL_SCALE_INV], got[AMAX_CELL_GEMM_SCALE_INV], got[AMAX_CELL_AMAX], scale, scale_inv, amax);
    report(floats_identical(got, want, AMAX_CELLS) && blocks_done == 0u, line);
}

#endif  // GPTFP8_DEV_CUDA_CAST_CHECK_H
