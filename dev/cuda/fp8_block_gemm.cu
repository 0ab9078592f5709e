/*
dev/cuda/fp8_block_gemm.cu — the block-scaled FP8 GEMMs of llmc/gemm.cuh (-fp8_recipe blockwise: Transformer Engine's
Float8BlockScaling on Hopper) on their own: gemm_multiply with cuBLASLt's VEC128_32F (1x128 blocks along k)
and BLK128x128_32F (128x128 tiles) scale modes, the operands made by fp8/block_quantize.cuh's GPU casts from random
bf16 tensors, against a CPU product in double of the CPU casts' operands (fp8/block.h). Checks:
  refusals (host only):  gemm_problem_check refuses fast accumulation with a block mode, k not a multiple of 128, two
                         BLK128x128 operands, a block mode beside a scalar one, a BF16 operand with a block mode (and
                         accepts the trainer's two block forms)
  the operands:          the GPU casts' codes and scale_invs (read at fp8/block.h's cuBLASLt indices) equal the CPU
                         casts' bit for bit (R1 of llmc/tolerance.h), so the CPU product below is the GPU's problem
  the three GEMMs of a linear layer, each TN:
    fprop  out (BT, OC) bf16 = x (BT, IC) @ W (OC, IC)^T: W's codes, BLK128x128 (2D cast) x x's rowwise copy, E4M3,
           VEC128; and with the bias as the trainer adds it: out pre-filled with the bias per row, beta 1
    dgrad  dx (BT, IC) bf16 = dy (BT, OC) @ W: W^T's codes (the 2D cast's codes_t / scale_inv_t, BLK128x128) x dy's
           rowwise copy (E5M2, VEC128), k = OC
    wgrad  dW (OC, IC) fp32 = dy^T @ x, as train_gpt_fp8.cu issues it: weight = x's columnwise copy (IC, BT), E4M3,
           inp = dy's columnwise copy (OC, BT), E5M2, both VEC128, k = BT; beta 0 and beta 1 (dW accumulates)
  at BT 256, IC 128, OC 384 (power-of-two scales, then fp32 scales: power_2_scale 0), and the d12 and d24 models'
  four linears (C 768 / 1024; OC, IC = 3C, C | C, C | 4C, C | C, 4C) at BT = 8 * 1024. Every row is checked at the small
  shape; at the model shapes one row per 128-row block (a different offset in each) and the last, every column.
  partial blocks (the trainers take any width, llmc/linear.h; a block cut short by the tensor's edge has its own scale):
    the operands cast on the CPU (fp8/block.h's casts take partial blocks) and uploaded at fp8/block.h's cuBLASLt
    indices, then, through gemm_multiply, checked like the above: m or n not a multiple of 128 with k one (B*T 272,
    208 outputs, 1600 outputs, d48's wgrad with outer 4800 x 1600), which the GPU trainer takes; and k not a multiple of
    128 (C 96, 160 and d48's 1600 in fprop and dgrad, B*T 272 and 1040 in wgrad) with both operands' k zero-padded to
    the next multiple of 128 (codes 0, the same scales), what the GPU trainer does (llmc/linear.h's
    linear_fp8_gemm_k: its casts write the padding's 0 codes).
then TFLOP/s of each block-scaled GEMM at the d12 and d24 shapes (B*T = 64 * 1024) beside the per-tensor FP8 GEMM and
the BF16 GEMM, each as the trainer issues it, with the heuristic's first algorithm and with the one the trainer's
-gemm_autotune 8 would choose (printed, never pass/fail); and last (a fault loses the context) the same
partial-k problems with k as it is, straight to cuBLASLt (gemm_problem_check refuses them): for each, whether its
heuristic and cublasLtMatmul accept it and, if it runs, whether it is RIGHT (within the bound) or WRONG, then one line
"partial k blocks as they are: N of 8 right, ..." (printed, never pass/fail: the GPU trainer pads k instead, and
gemm_problem_check keeps refusing a block-scaled k off 128).

The scale arrays are filled with NaN before the casts: the casts overwrite every scale a block has, and the padding
(fp8/block.h: rows to 4 in VEC128, k-blocks to 4 in BLK128x128) stays NaN, so a GEMM reading a scale from anywhere but
fp8/block.h's index gives NaN or a value off by up to 2^6 (the data below gives each block its own scale), never a
plausible number.

Tolerance, per output element, against the exact sum of the products of the dequantized operands (a = code *
scale_inv of its block, as the CPU cast's `dequantized`), relative to sum |a_i * b_i| (the magnitude the sum passes
through; the result itself can cancel to near 0):
  accumulation (R2): per 128-element block along k (one scale_inv per operand), the tensor cores add the code products
    (exact: 4 x 4 or 4 x 3 significant bits) of 4 instructions of k = 32 in an accumulator that keeps about 13 bits,
    up to 2^-12 of the partial sum per instruction (truncation): 8 * 2^-13 of the block's sum |a * b|; the partial sum
    is then multiplied by the two scale_invs (two fp32 roundings, 2 * 2^-24 of it; exact with power-of-two scales) and
    added into the fp32 sum (k / 128 - 1 additions, round to nearest). Over the blocks: tolerance_fp8_accumulation(k,
    0) + 4 * 2^-13 + 2 * 2^-24, times sum |a * b|. (Not k * 2^-24, fp32 accumulation alone: the accumulator inside a
    block is above that at every k checked.) 13 bits, not the 14 of the per-tensor FP8 GEMM's bound: on an H100
    (2026-11-26, RESULTS.md) one wgrad element at k 256 was off by 4.7 x 2^-13 of its sum |a * b|, with power-of-two
    and fp32 scales alike, past the 14-bit bound.
  epilogue (R2): D's old value (the pre-filled bias, wgrad's beta 1) added to that in fp32, round to nearest:
    tolerance_sum_rn(2) of sum |a * b| + |D_old|. With a bf16 D, cuBLASLt rounds the product to bf16 before it adds
    D's old value (seen on the H100: an output of exactly 0 where the exact sum was -3.9e-4, the product having rounded
    to minus the bias), so that sum has a rounding more: half a bf16 ulp of the product, 2^-8 of |exact - D_old| plus
    the accumulation's bound.
  output (R3): a bf16 output is rounded once more, half an ulp: 2^-8 of the exact value plus the above.
The CPU's sum is in double (products of two floats, 2^-53 per addition: nothing next to these bounds). The bounds are
loose (errors of random sign mostly cancel); a correct GEMM stays well inside them, a wrong scale index misses by a
factor of up to 2^6 or gives NaN.

Build: make dev/cuda/fp8_block_gemm     Run: ./dev/cuda/fp8_block_gemm
(one line and exit 1 without a GPU, or where gemm_block_scaling_check refuses: not compute capability 9.0, or cuBLASLt
older than 12.9)
*/
#include <cuda_bf16.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../fp8/block.h"
#include "../../fp8/block_quantize.cuh"
#include "../../llmc/gemm.cuh"
#include "../../llmc/rand.h"
#include "../../llmc/testing.h"
#include "../../llmc/tolerance.h"
#include "bench.h"

#define BLOCK FP8_BLOCKWISE_BLOCK  // 128: the blocks along k, and the weight tiles' side
static const int VEC128 = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
static const int BLK128 = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
static const int SCALAR = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;

static GemmContext ctx;

static cudaDataType_t fp8_cuda(Fp8Format f) { return f == FP8_E4M3 ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2; }

// ----------------------------------------------------------------------------
// refusals: gemm_problem_check on keys made by gemm_key, no GPU involved (the pointers are never dereferenced, only
// their alignment is read)

static const void* const fake_pointer = (const void*)(uintptr_t)0x10000;  // 256-byte aligned

// A TN key of the trainer's form (A = weight, B = inp), row-major out (rows, out_cols), reduction k.
static GemmKey tn_key(cudaDataType_t weight_type, int weight_mode, cudaDataType_t inp_type, int inp_mode, int rows,
                      int out_cols, int k, int fast_accum) {
    return gemm_key(fake_pointer, CUDA_R_16BF, fake_pointer, weight_type, 1, fake_pointer, inp_type, 0, NULL, out_cols,
                    rows, k, 0, fast_accum, weight_mode, inp_mode);
}

// expect_phrase NULL: the key must be accepted (0); else refused (-1) with a message containing the phrase.
static void expect_check(const char* what, GemmKey key, const char* expect_phrase) {
    char err[1024] = "";
    int rc = gemm_problem_check(&key, err, sizeof(err));
    if (expect_phrase == NULL) {
        CHECK(rc == 0, "%s: should be accepted, refused with: %s", what, err);
    } else {
        CHECK(rc == -1 && strstr(err, expect_phrase) != NULL, "%s: returned %d, message '%s' (want -1 and '%s')", what,
              rc, err, expect_phrase);
    }
}

static void test_refusals(void) {
    const cudaDataType_t e4m3 = CUDA_R_8F_E4M3, e5m2 = CUDA_R_8F_E5M2, bf16 = CUDA_R_16BF;
    // what the trainer issues: accepted (so the refusals below are about their one flaw, not everything)
    expect_check("fprop (BLK128x128 weight, VEC128 input)", tn_key(e4m3, BLK128, e4m3, VEC128, 256, 384, 128, 0), NULL);
    expect_check("dgrad (BLK128x128 W^T, VEC128 E5M2 dy)", tn_key(e4m3, BLK128, e5m2, VEC128, 256, 128, 384, 0), NULL);
    expect_check("wgrad (VEC128 x VEC128)", tn_key(e4m3, VEC128, e5m2, VEC128, 384, 128, 256, 0), NULL);
    expect_check("per-tensor fprop with fast accumulation", tn_key(e4m3, SCALAR, e4m3, SCALAR, 256, 384, 128, 1), NULL);
    // each flaw alone
    expect_check("block modes with fast accumulation", tn_key(e4m3, BLK128, e4m3, VEC128, 256, 384, 128, 1),
                 "fast accumulation");
    expect_check("k = 1600 (d48's C: a multiple of 16, not of 128)",
                 tn_key(e4m3, BLK128, e4m3, VEC128, 256, 384, 1600, 0), "multiple of 128");
    expect_check("k = 144", tn_key(e4m3, VEC128, e5m2, VEC128, 256, 384, 144, 0), "multiple of 128");
    expect_check("two BLK128x128 operands", tn_key(e4m3, BLK128, e4m3, BLK128, 256, 384, 128, 0), "128x128");
    expect_check("BLK128x128 weight, scalar input", tn_key(e4m3, BLK128, e4m3, SCALAR, 256, 384, 128, 0),
                 "both operands in blocks");
    expect_check("scalar weight, VEC128 input", tn_key(e4m3, SCALAR, e5m2, VEC128, 256, 384, 128, 0),
                 "both operands in blocks");
    expect_check("BF16 weight with a block mode, E4M3 input", tn_key(bf16, BLK128, e4m3, VEC128, 256, 384, 128, 0),
                 "two FP8 operands");
    expect_check("E4M3 weight, BF16 input with a block mode", tn_key(e4m3, BLK128, bf16, VEC128, 256, 384, 128, 0),
                 "two FP8 operands");
    // both BF16: a block mode on a GEMM with no FP8 operand at all is as wrong as on one with a single one
    expect_check("BF16 x BF16 with block modes", tn_key(bf16, VEC128, bf16, VEC128, 256, 384, 128, 0),
                 "two FP8 operands");
}

// ----------------------------------------------------------------------------
// the operands

// an exponent in -3..3 drawn for the pair (a, b): a function of the pair alone, whichever element asks
static int block_exponent(uint64_t seed, uint64_t a, uint64_t b) {
    Rng r;
    rng_seed(&r, seed ^ (a * 0x9E3779B97F4A7C15ull + b * 0xC2B2AE3D27D4EB4Full));
    return (int)(rng_next_u64(&r) % 7) - 3;
}

// A tensor (rows, cols) of bf16: uniform in [-1, 1) times base times 2^(h1 + h2), h1 drawn per (row, 128-column block)
// and h2 per (128-row block, column). Every 1x128 block along a row then has an amax, so a scale, of its own (through
// h1), and so has every 128x1 block down a column (through h2) and every 128x128 tile: a scale read from the wrong
// block is off by up to 2^6. values (rows, cols): the same bf16 values as floats (what both casts read).
static void random_tensor(uint16_t* bf16, float* values, int rows, int cols, float base, uint64_t seed) {
#pragma omp parallel for
    for (int r = 0; r < rows; r++) {
        Rng rng;  // counter-based: row r's draws are the same whichever thread makes them
        rng_seed(&rng, seed);
        rng_skip(&rng, (uint64_t)r * (uint64_t)cols);
        for (int c = 0; c < cols; c++) {
            int e = block_exponent(seed + 1, (uint64_t)r, (uint64_t)(c / BLOCK)) +
                    block_exponent(seed + 2, (uint64_t)(r / BLOCK), (uint64_t)c);
            float v = (rng_uniform(&rng) * 2.0f - 1.0f) * base * ldexpf(1.0f, e);
            size_t i = (size_t)r * cols + c;
            bf16[i] = bf16_from_float(v);
            values[i] = bf16_to_float(bf16[i]);
        }
    }
}

// blocks of 128 along n elements, the last one partial when n is not a multiple
static int blocks_of(int n) { return (n + BLOCK - 1) / BLOCK; }

// One FP8 operand of a block-scaled GEMM as the CPU cast made it: codes (M, K) row-major, K the reduction dimension,
// and each block's scale_inv in the CPU's own grid (ceil(M / block_rows), ceil(K / 128)), row-major (a block cut short
// by the edge has one too): no cuBLASLt layout involved.
typedef struct {
    uint8_t* codes;    // (M, K)
    float* scale_inv;  // (ceil(M / block_rows), ceil(K / 128))
    int M, K;
    int block_rows;    // 1: 1x128 blocks along K (VEC128); 128: 128x128 tiles (BLK128x128)
    Fp8Format format;
} HostOperand;

static int grid_rows(const HostOperand* op) { return (op->M + op->block_rows - 1) / op->block_rows; }

static HostOperand host_operand(int M, int K, int block_rows, Fp8Format format) {
    size_t grid = (size_t)((M + block_rows - 1) / block_rows) * blocks_of(K);
    HostOperand op = {(uint8_t*)malloc((size_t)M * K), (float*)malloc(grid * 4), M, K, block_rows, format};
    return op;
}

static void host_operand_free(HostOperand* op) {
    free(op->codes);
    free(op->scale_inv);
}

// the value the GEMM multiplies at (m, k): the code's value times its block's scale_inv, exact in double
static double operand_value(const HostOperand* op, int m, int k) {
    double s = op->scale_inv[(size_t)(m / op->block_rows) * blocks_of(op->K) + k / BLOCK];
    return (double)fp8_to_float(op->codes[(size_t)m * op->K + k], op->format) * s;
}

// the rowwise copy of v (rows, cols): 1x128 blocks along the rows, the operand (rows, cols)
static HostOperand cast_rowwise(const float* v, int rows, int cols, const Fp8BlockCast* cast) {
    HostOperand op = host_operand(rows, cols, 1, cast->format);
    Fp8BlockShape shape = {1, BLOCK};
    float amax = 0.0f;
    fp8_quantize_blocks(op.codes, NULL, op.scale_inv, v, rows, cols, shape, cast, &amax, NULL, NULL);
    return op;
}

// the columnwise copy of v (rows, cols): 128x1 blocks down the columns, the operand (cols, rows) (K = rows)
static HostOperand cast_columnwise(const float* v, int rows, int cols, const Fp8BlockCast* cast) {
    HostOperand op = host_operand(cols, rows, 1, cast->format);
    float* scratch = (float*)malloc((size_t)rows * cols * 2 * sizeof(float));
    float amax = 0.0f;
    fp8_quantize_blocks_columnwise(op.codes, NULL, op.scale_inv, v, rows, cols, BLOCK, cast, &amax, NULL, NULL,
                                   scratch);
    free(scratch);
    return op;
}

// a weight's 128x128 tiles: the operand (rows, cols)
static HostOperand cast_tiles(const float* v, int rows, int cols, const Fp8BlockCast* cast) {
    HostOperand op = host_operand(rows, cols, BLOCK, cast->format);
    Fp8BlockShape shape = {BLOCK, BLOCK};
    float amax = 0.0f;
    fp8_quantize_blocks(op.codes, NULL, op.scale_inv, v, rows, cols, shape, cast, &amax, NULL, NULL);
    return op;
}

// W^T from W's tiles: the codes and the tile grid transposed (a 128x128 tile is the same block both ways)
static HostOperand transpose_tiles(const HostOperand* w) {
    HostOperand t = host_operand(w->K, w->M, BLOCK, w->format);
    for (int m = 0; m < w->M; m++) {
        for (int k = 0; k < w->K; k++) { t.codes[(size_t)k * w->M + m] = w->codes[(size_t)m * w->K + k]; }
    }
    int tiles_m = blocks_of(w->M), tiles_k = blocks_of(w->K);
    for (int i = 0; i < tiles_m; i++) {
        for (int j = 0; j < tiles_k; j++) {
            t.scale_inv[(size_t)j * tiles_m + i] = w->scale_inv[(size_t)i * tiles_k + j];
        }
    }
    return t;
}

// The same operand on the GPU: codes (M, k) and scale_inv in cuBLASLt's layout for `mode`, made by the GPU casts
// (k = K), or uploaded from the CPU's (upload_operand: k = K, or K zero-padded to a multiple of 128).
typedef struct {
    uint8_t* codes;
    float* scale_inv;
    size_t scale_floats;
    int mode;  // VEC128 or BLK128
    int k;     // the columns of codes, the GEMM's k
} DeviceOperand;

static DeviceOperand device_operand(int M, int K, int mode) {
    DeviceOperand d;
    d.mode = mode;
    d.k = K;
    d.scale_floats = mode == VEC128 ? fp8_vec128_scale_floats((size_t)M, (size_t)K)
                                    : fp8_blk128_scale_floats((size_t)M, (size_t)K);
    cudaCheck(cudaMalloc(&d.codes, (size_t)M * K));
    cudaCheck(cudaMalloc(&d.scale_inv, d.scale_floats * sizeof(float)));
    cudaCheck(cudaMemset(d.scale_inv, 0xFF, d.scale_floats * sizeof(float)));  // NaN: the padding stays so
    return d;
}

static void device_operand_free(DeviceOperand* d) {
    cudaCheck(cudaFree(d->codes));
    cudaCheck(cudaFree(d->scale_inv));
}

// R1: the GPU's copy against the CPU's, every code and every block's scale_inv (read at fp8/block.h's index for the
// copy's cuBLASLt layout) bit for bit.
static void check_copy(const char* what, const DeviceOperand* d, const HostOperand* h) {
    size_t n = (size_t)h->M * h->K;
    uint8_t* codes = (uint8_t*)malloc(n);
    float* scales = (float*)malloc(d->scale_floats * sizeof(float));
    cudaCheck(cudaMemcpy(codes, d->codes, n, cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(scales, d->scale_inv, d->scale_floats * sizeof(float), cudaMemcpyDeviceToHost));
    size_t bad_codes = 0, bad_scales = 0, first_bad_code = 0;
    for (size_t i = 0; i < n; i++) {
        if (codes[i] != h->codes[i] && bad_codes++ == 0) { first_bad_code = i; }
    }
    int block_rows = grid_rows(h), block_cols = blocks_of(h->K);
    for (int i = 0; i < block_rows; i++) {
        for (int j = 0; j < block_cols; j++) {
            size_t at = d->mode == VEC128 ? fp8_vec128_scale_index((size_t)i, (size_t)j, (size_t)h->M)
                                          : fp8_blk128_scale_index((size_t)i, (size_t)j, (size_t)h->K);
            float want = h->scale_inv[(size_t)i * block_cols + j];
            bad_scales += fp8_float_bits(scales[at]) != fp8_float_bits(want);
        }
    }
    CHECK(bad_codes == 0 && bad_scales == 0, "%s (%d, %d): %zu of %zu codes (first at %zu) and %zu of %d scale_invs "
          "differ from the CPU cast's", what, h->M, h->K, bad_codes, n, first_bad_code, bad_scales,
          block_rows * block_cols);
    free(codes);
    free(scales);
}

// ----------------------------------------------------------------------------
// the GEMMs against the CPU

// The exact product at the output rows checked: out (rows, out_cols) = inp (rows, k) @ weight (out_cols, k)^T.
typedef struct {
    int* rows;          // (num_rows) the output rows checked, ascending
    int num_rows, out_cols, k;
    double* product;    // (num_rows, out_cols) sum over k of a * b
    double* magnitude;  // (num_rows, out_cols) sum over k of |a * b|
} Reference;

// Every row up to 512 rows; beyond, one row per 128-row block (at an offset that moves from block to block, so every
// position in a block is hit somewhere) and the last row.
static Reference reference_gemm(const HostOperand* weight, const HostOperand* inp) {
    Reference ref;
    int rows = inp->M;
    ref.out_cols = weight->M;
    ref.k = inp->K;
    ref.rows = (int*)malloc(((size_t)rows / BLOCK + 2 + 512) * sizeof(int));
    ref.num_rows = 0;
    if (rows <= 512) {
        for (int r = 0; r < rows; r++) { ref.rows[ref.num_rows++] = r; }
    } else {
        for (int b = 0; b * BLOCK < rows; b++) {
            int r = b * BLOCK + (37 * b + 11) % BLOCK;
            if (r < rows - 1) { ref.rows[ref.num_rows++] = r; }
        }
        ref.rows[ref.num_rows++] = rows - 1;
    }
    size_t n = (size_t)ref.num_rows * ref.out_cols;
    ref.product = (double*)malloc(n * sizeof(double));
    ref.magnitude = (double*)malloc(n * sizeof(double));
    // the weight's values once, (out_cols, k); each checked row of the input's as it comes
    double* w = (double*)malloc((size_t)weight->M * weight->K * sizeof(double));
#pragma omp parallel for
    for (int c = 0; c < weight->M; c++) {
        for (int k = 0; k < weight->K; k++) { w[(size_t)c * weight->K + k] = operand_value(weight, c, k); }
    }
#pragma omp parallel for schedule(dynamic)
    for (int i = 0; i < ref.num_rows; i++) {
        double* a = (double*)malloc((size_t)ref.k * sizeof(double));
        for (int k = 0; k < ref.k; k++) { a[k] = operand_value(inp, ref.rows[i], k); }
        for (int c = 0; c < ref.out_cols; c++) {
            const double* b = w + (size_t)c * ref.k;
            double sum = 0.0, magnitude = 0.0;
            for (int k = 0; k < ref.k; k++) {
                double p = a[k] * b[k];
                sum += p;
                magnitude += fabs(p);
            }
            ref.product[(size_t)i * ref.out_cols + c] = sum;
            ref.magnitude[(size_t)i * ref.out_cols + c] = magnitude;
        }
        free(a);
    }
    free(w);
    return ref;
}

static void reference_free(Reference* ref) {
    free(ref->rows);
    free(ref->product);
    free(ref->magnitude);
}

// The bound on |GPU - exact| of one output element (the header comment derives it): magnitude = sum |a * b|, want the
// exact result, before D's old value when accumulating.
static double block_gemm_bound(int k, double magnitude, double want, double before, int accumulate,
                               cudaDataType_t out_type) {
    // R2: Hopper's FP8 accumulation within each 128-block (8 x 2^-13: a 13-bit accumulator, as measured), the two
    // fp32 multiplies by the block's scale_invs (2 x 2^-24) and the k / 128 - 1 fp32 additions of the blocks' sums
    double accumulation = (tolerance_fp8_accumulation(k, 0) + 4.0 * 0x1p-13 + 2.0 * FP32_ROUNDOFF) * magnitude;
    // R2: D's old value added in fp32, round to nearest, relative to both terms; into a bf16 D, the product rounded to
    // bf16 first (half an ulp of it)
    double epilogue = accumulate ? tolerance_sum_rn(2) * (magnitude + fabs(before)) : 0.0;
    if (accumulate && out_type == CUDA_R_16BF) { epilogue += 0.5 * BF16_ULP * (fabs(want - before) + accumulation); }
    double sum_tol = accumulation + epilogue;
    // R3: a bf16 output rounds the fp32 result once more, half an ulp (2^-8 of it at most); the 1e-30 lets 0 equal 0
    double rounding = out_type == CUDA_R_16BF ? 0.5 * BF16_ULP * (fabs(want) + sum_tol) : 0.0;
    return sum_tol + rounding + 1e-30;
}

// How a block-scaled GEMM is issued: through gemm_multiply (the trainer's GEMM layer, with gemm_problem_check), or
// straight to cuBLASLt (a problem gemm_problem_check refuses, to see what cuBLASLt itself does with it).
enum { ISSUE_GEMM_MULTIPLY, ISSUE_CUBLASLT };

// What a GEMM issued straight to cuBLASLt gave: refused (by its heuristic or at the call), ran (then compared), or
// ran and left the GPU in an error (the context is lost: nothing after it can run).
typedef enum { DIRECT_REFUSED, DIRECT_RAN, DIRECT_FAULTED } DirectOutcome;

// The problem of gemm_multiply's call for these operands (TN, both k-major), asked of cuBLASLt's heuristic and run
// when it has an algorithm; `why` says what refused or faulted. Nothing exits: every cuBLASLt status is reported.
static DirectOutcome multiply_direct(const GemmOutput* out, const GemmOperand* w, const GemmOperand* x, char* why,
                                     size_t why_len) {
    GemmKey key = gemm_key(out->data, out->type, w->data, w->type, 1, x->data, x->type, 0, NULL, w->outer, x->outer,
                           w->k, out->accumulate, 0, w->scale_mode, x->scale_mode);
    GemmPlan plan;
    gemm_plan_describe(&plan, &key, w->scale_inv, x->scale_inv, NULL);
    cublasLtMatmulHeuristicResult_t heuristic;
    int found = 0;
    cublasStatus_t status = gemm_plan_heuristic(&ctx, &plan, &heuristic, 1, &found);
    DirectOutcome outcome = DIRECT_REFUSED;
    if (status != CUBLAS_STATUS_SUCCESS || found == 0) {
        snprintf(why, why_len, "its heuristic answered %s",
                 status != CUBLAS_STATUS_SUCCESS ? cublasGetStatusName(status) : "0 algorithms");
    } else {
        const float alpha = 1.0f, beta = out->accumulate ? 1.0f : 0.0f;
        status = cublasLtMatmul(ctx.handle, plan.desc, &alpha, w->data, plan.a_layout, x->data, plan.b_layout, &beta,
                                out->data, plan.d_layout, out->data, plan.d_layout, &heuristic.algo, ctx.workspace,
                                GEMM_WORKSPACE_BYTES, 0);
        cudaError_t err = cudaDeviceSynchronize();
        if (err != cudaSuccess) {
            snprintf(why, why_len, "the GPU faulted: %s", cudaGetErrorString(err));
            return DIRECT_FAULTED;  // the plan is not destroyed: nothing runs on a lost context
        }
        if (status != CUBLAS_STATUS_SUCCESS) {
            snprintf(why, why_len, "cublasLtMatmul answered %s", cublasGetStatusName(status));
        } else {
            outcome = DIRECT_RAN;
            snprintf(why, why_len, "cuBLASLt ran it");
        }
    }
    gemm_plan_destroy(&plan);
    return outcome;
}

// One block-scaled GEMM (both operands k-major: TN) against the reference: out starts as `bias` broadcast per row
// (bias (out_cols), then accumulate must be 1) or, without one, as random values (read when accumulate, ignored when
// not). The GEMM reduces over the device operands' k (their K, or K zero-padded); the bound over the K that holds
// values. ISSUE_GEMM_MULTIPLY: it must run and be within the bound (a failed check otherwise). ISSUE_CUBLASLT: what
// cuBLASLt did is printed, never a failed check (*outcome: refused, ran or faulted). Returns the worst error as a
// fraction of its bound (inf when it did not run).
static double run_gemm(const char* what, const Reference* ref, const HostOperand* weight, const DeviceOperand* dw,
                       const HostOperand* inp, const DeviceOperand* di, cudaDataType_t out_type, int accumulate,
                       const float* bias, Rng* rng, int issue, DirectOutcome* outcome) {
    int rows = inp->M, out_cols = weight->M, k = inp->K;
    size_t n = (size_t)rows * out_cols, bytes = n * (out_type == CUDA_R_32F ? 4 : 2);
    float* before = (float*)malloc(n * sizeof(float));  // (rows, out_cols): out before the call, as stored
    void* host_out = malloc(bytes);
    for (size_t i = 0; i < n; i++) {
        float v = bias ? bias[i % out_cols] : rng_uniform(rng) * 2.0f - 1.0f;
        if (out_type == CUDA_R_16BF) {
            ((uint16_t*)host_out)[i] = bf16_from_float(v);
            before[i] = bf16_to_float(((uint16_t*)host_out)[i]);
        } else {
            ((float*)host_out)[i] = v;
            before[i] = v;
        }
    }
    void* d_out;
    cudaCheck(cudaMalloc(&d_out, bytes));
    cudaCheck(cudaMemcpy(d_out, host_out, bytes, cudaMemcpyHostToDevice));
    GemmOutput out = {d_out, out_type, NULL, accumulate};
    GemmOperand w = gemm_operand(dw->codes, fp8_cuda(weight->format), out_cols, dw->k, 1, dw->scale_inv, dw->mode);
    GemmOperand x = gemm_operand(di->codes, fp8_cuda(inp->format), rows, di->k, 1, di->scale_inv, di->mode);
    char how[160] = "";
    if (dw->k != k) { snprintf(how, sizeof(how), " [k zero-padded to %d]", dw->k); }
    if (issue == ISSUE_CUBLASLT) {
        char why[128];
        *outcome = multiply_direct(&out, &w, &x, why, sizeof(why));
        if (*outcome != DIRECT_RAN) {
            printf("  %-30s out (%d, %d), k %d%s, straight to cuBLASLt: NOT RUN, %s\n", what, rows, out_cols, k, how,
                   why);
            free(before);
            free(host_out);
            if (*outcome == DIRECT_REFUSED) { cudaCheck(cudaFree(d_out)); }
            return INFINITY;
        }
        snprintf(how + strlen(how), sizeof(how) - strlen(how), " [straight to cuBLASLt]");
    } else {
        gemm_multiply(&ctx, &out, &w, &x, 0, 0);
        cudaCheck(cudaDeviceSynchronize());
    }
    cudaCheck(cudaMemcpy(host_out, d_out, bytes, cudaMemcpyDeviceToHost));
    double worst = 0.0, worst_error = 0.0, worst_bound = 0.0, worst_got = 0.0, worst_want = 0.0;
    int worst_row = 0, worst_col = 0;
    for (int i = 0; i < ref->num_rows; i++) {
        for (int c = 0; c < out_cols; c++) {
            size_t at = (size_t)ref->rows[i] * out_cols + c, r_at = (size_t)i * out_cols + c;
            double got = out_type == CUDA_R_16BF ? bf16_to_float(((uint16_t*)host_out)[at]) : ((float*)host_out)[at];
            double want = ref->product[r_at] + (accumulate ? before[at] : 0.0);
            double bound = block_gemm_bound(k, ref->magnitude[r_at], want, before[at], accumulate, out_type);
            double error = fabs(got - want), ratio = isnan(got) ? INFINITY : error / bound;
            if (ratio > worst || (i == 0 && c == 0)) {
                worst = ratio;
                worst_error = error;
                worst_bound = bound;
                worst_got = got;
                worst_want = want;
                worst_row = ref->rows[i];
                worst_col = c;
            }
        }
    }
    printf("  %-30s out (%d, %d) %s, k %d%s, %s x %s: max |error| / bound %.3g at (%d, %d): got %.7g, want %.7g, "
           "|error| %.3g, bound %.3g (%d of %d rows checked)%s\n", what, rows, out_cols, gemm_type_name(out_type), k,
           how, fp8_format_name(weight->format), fp8_format_name(inp->format), worst, worst_row, worst_col, worst_got,
           worst_want, worst_error, worst_bound, ref->num_rows, rows,
           issue == ISSUE_CUBLASLT ? (worst <= 1.0 ? ": RIGHT" : ": WRONG") : "");
    if (issue == ISSUE_GEMM_MULTIPLY) {
        CHECK(worst <= 1.0, "%s (out (%d, %d), k %d%s): the error at (%d, %d) is %.3g of its bound (got %.7g, want "
              "%.7g)", what, rows, out_cols, k, how, worst_row, worst_col, worst, worst_got, worst_want);
    }
    free(before);
    free(host_out);
    cudaCheck(cudaFree(d_out));
    return worst;
}

// run_gemm through gemm_multiply: it must run and be right
static void run_and_check(const char* what, const Reference* ref, const HostOperand* weight, const DeviceOperand* dw,
                          const HostOperand* inp, const DeviceOperand* di, cudaDataType_t out_type, int accumulate,
                          const float* bias, Rng* rng) {
    run_gemm(what, ref, weight, dw, inp, di, out_type, accumulate, bias, rng, ISSUE_GEMM_MULTIPLY, NULL);
}

// One linear layer: x (BT, IC), W (OC, IC), dy (BT, OC) and a bias (OC), cast on the CPU and on the GPU, then its
// fprop (with and without the bias), dgrad and wgrad (beta 0 and 1).
static void check_linear(const char* label, int BT, int OC, int IC, int power_2_scale, uint64_t seed) {
    printf(" %s: BT %d, OC %d, IC %d, %s scales\n", label, BT, OC, IC, power_2_scale ? "power-of-two" : "fp32");
    size_t n_x = (size_t)BT * IC, n_w = (size_t)OC * IC, n_dy = (size_t)BT * OC;
    uint16_t* x16 = (uint16_t*)malloc(n_x * 2);
    uint16_t* w16 = (uint16_t*)malloc(n_w * 2);
    uint16_t* dy16 = (uint16_t*)malloc(n_dy * 2);
    float* xv = (float*)malloc(n_x * sizeof(float));
    float* wv = (float*)malloc(n_w * sizeof(float));
    float* dyv = (float*)malloc(n_dy * sizeof(float));
    // magnitudes of a trained model's order: activations ~1, weights ~0.02, gradients ~1e-4 (E5M2's range)
    random_tensor(x16, xv, BT, IC, 1.0f, seed);
    random_tensor(w16, wv, OC, IC, 0.02f, seed + 10);
    random_tensor(dy16, dyv, BT, OC, 1e-4f, seed + 20);
    Rng rng;
    rng_seed(&rng, seed + 30);
    float* bias = (float*)malloc((size_t)OC * sizeof(float));
    for (int c = 0; c < OC; c++) { bias[c] = bf16_round((rng_uniform(&rng) * 2.0f - 1.0f) * 0.5f); }

    // the CPU casts: the operands of the three GEMMs
    Fp8BlockCast e4m3 = {FP8_SCALING_BLOCKWISE, FP8_E4M3, 0.0f, power_2_scale};
    Fp8BlockCast e5m2 = {FP8_SCALING_BLOCKWISE, FP8_E5M2, 0.0f, power_2_scale};
    HostOperand x_row = cast_rowwise(xv, BT, IC, &e4m3);       // (BT, IC): fprop's inp
    HostOperand x_col = cast_columnwise(xv, BT, IC, &e4m3);    // (IC, BT): wgrad's weight
    HostOperand w = cast_tiles(wv, OC, IC, &e4m3);             // (OC, IC): fprop's weight
    HostOperand w_t = transpose_tiles(&w);                     // (IC, OC): dgrad's weight
    HostOperand dy_row = cast_rowwise(dyv, BT, OC, &e5m2);     // (BT, OC): dgrad's inp
    HostOperand dy_col = cast_columnwise(dyv, BT, OC, &e5m2);  // (OC, BT): wgrad's inp

    // the GPU casts, as the trainer makes them: one 1D pass per activation for both copies, one 2D pass for W and W^T
    __nv_bfloat16 *d_x16, *d_w16, *d_dy16;
    float* d_amax;
    DeviceList dev = {{NULL}, 0};
    device_alloc(&dev, &d_x16, n_x * 2);
    device_alloc(&dev, &d_w16, n_w * 2);
    device_alloc(&dev, &d_dy16, n_dy * 2);
    device_alloc(&dev, &d_amax, sizeof(float));
    cudaCheck(cudaMemset(d_amax, 0, sizeof(float)));
    cudaCheck(cudaMemcpy(d_x16, x16, n_x * 2, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(d_w16, w16, n_w * 2, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(d_dy16, dy16, n_dy * 2, cudaMemcpyHostToDevice));
    DeviceOperand d_x_row = device_operand(BT, IC, VEC128), d_x_col = device_operand(IC, BT, VEC128);
    DeviceOperand d_w = device_operand(OC, IC, BLK128), d_w_t = device_operand(IC, OC, BLK128);
    DeviceOperand d_dy_row = device_operand(BT, OC, VEC128), d_dy_col = device_operand(OC, BT, VEC128);
    Fp8BlockCast1d c1;
    memset(&c1, 0, sizeof(c1));
    c1.inp = d_x16;
    c1.rows = BT;
    c1.cols = IC;
    c1.block_len = BLOCK;
    c1.cast = e4m3;
    c1.rowwise.codes = d_x_row.codes;
    c1.rowwise.scale_inv = d_x_row.scale_inv;
    c1.columnwise.codes = d_x_col.codes;
    c1.columnwise.scale_inv = d_x_col.scale_inv;
    c1.amax = d_amax;
    cudaCheck(fp8_block_cast_1d(&c1, 0));
    c1.inp = d_dy16;
    c1.cols = OC;
    c1.cast = e5m2;
    c1.rowwise.codes = d_dy_row.codes;
    c1.rowwise.scale_inv = d_dy_row.scale_inv;
    c1.columnwise.codes = d_dy_col.codes;
    c1.columnwise.scale_inv = d_dy_col.scale_inv;
    cudaCheck(fp8_block_cast_1d(&c1, 0));
    Fp8BlockCast2d c2;
    memset(&c2, 0, sizeof(c2));
    c2.inp = d_w16;
    c2.rows = OC;
    c2.cols = IC;
    c2.cast = e4m3;
    c2.codes = d_w.codes;
    c2.codes_t = d_w_t.codes;
    c2.scale_inv = d_w.scale_inv;
    c2.scale_inv_t = d_w_t.scale_inv;
    c2.amax = d_amax;
    cudaCheck(fp8_block_cast_2d(&c2, 0));
    cudaCheck(cudaDeviceSynchronize());
    check_copy("x rowwise (VEC128)", &d_x_row, &x_row);
    check_copy("x columnwise (VEC128)", &d_x_col, &x_col);
    check_copy("W (BLK128x128)", &d_w, &w);
    check_copy("W^T (BLK128x128)", &d_w_t, &w_t);
    check_copy("dy rowwise (VEC128)", &d_dy_row, &dy_row);
    check_copy("dy columnwise (VEC128)", &d_dy_col, &dy_col);

    // fprop: out (BT, OC) = x @ W^T; then the trainer's bias: out pre-filled with it, beta 1
    Reference ref = reference_gemm(&w, &x_row);
    run_and_check("fprop", &ref, &w, &d_w, &x_row, &d_x_row, CUDA_R_16BF, 0, NULL, &rng);
    run_and_check("fprop + bias (pre-filled, beta 1)", &ref, &w, &d_w, &x_row, &d_x_row, CUDA_R_16BF, 1, bias, &rng);
    reference_free(&ref);
    // dgrad: dx (BT, IC) = dy @ W = dy @ (W^T)^T
    ref = reference_gemm(&w_t, &dy_row);
    run_and_check("dgrad", &ref, &w_t, &d_w_t, &dy_row, &d_dy_row, CUDA_R_16BF, 0, NULL, &rng);
    reference_free(&ref);
    // wgrad: dW (OC, IC) = dy^T @ x = dy^T @ (x^T)^T, into fp32, written and accumulated
    ref = reference_gemm(&x_col, &dy_col);
    run_and_check("wgrad (beta 0)", &ref, &x_col, &d_x_col, &dy_col, &d_dy_col, CUDA_R_32F, 0, NULL, &rng);
    run_and_check("wgrad (beta 1, dW accumulates)", &ref, &x_col, &d_x_col, &dy_col, &d_dy_col, CUDA_R_32F, 1, NULL,
                  &rng);
    reference_free(&ref);

    HostOperand* host_ops[6] = {&x_row, &x_col, &w, &w_t, &dy_row, &dy_col};
    DeviceOperand* device_ops[6] = {&d_x_row, &d_x_col, &d_w, &d_w_t, &d_dy_row, &d_dy_col};
    for (int i = 0; i < 6; i++) {
        host_operand_free(host_ops[i]);
        device_operand_free(device_ops[i]);
    }
    device_list_free(&dev);
    free(x16);
    free(w16);
    free(dy16);
    free(xv);
    free(wv);
    free(dyv);
    free(bias);
}

static void test_small_power_2_scales(void) { check_linear("small", 256, 384, 128, 1, 100); }
static void test_small_fp32_scales(void) { check_linear("small", 256, 384, 128, 0, 200); }

// a model's four linears at B*T = 8 * 1024: qkv (3C, C), attproj (C, C), fc (4C, C), fcproj (C, 4C)
static void check_model(const char* model, int C, uint64_t seed) {
    const int BT = 8 * 1024;
    const struct { const char* name; int OC, IC; } linears[4] = {
        {"qkv", 3 * C, C}, {"attproj", C, C}, {"fc", 4 * C, C}, {"fcproj", C, 4 * C}};
    for (int i = 0; i < 4; i++) {
        char label[64];
        snprintf(label, sizeof(label), "%s %s", model, linears[i].name);
        check_linear(label, BT, linears[i].OC, linears[i].IC, 1, seed + 100 * (uint64_t)i);
    }
}

static void test_d12(void) { check_model("d12", 768, 1000); }
static void test_d24(void) { check_model("d24", 1024, 2000); }

// ----------------------------------------------------------------------------
// partial blocks: the trainers take any width (llmc/linear.h), so a GEMM's dimensions need not be multiples of 128

// The CPU cast's operand uploaded for a GEMM whose k is k_stride >= its K: codes (M, k_stride), the columns past K
// zero (code 0 is +0 in E4M3 and E5M2: they add nothing), and the scale_invs at fp8/block.h's cuBLASLt indices for
// `mode` (ceil(K / 128) blocks along k either way, so zero-padding changes none of them), the padding NaN.
static DeviceOperand upload_operand(const HostOperand* h, int mode, int k_stride) {
    DeviceOperand d;
    d.mode = mode;
    d.k = k_stride;
    d.scale_floats = mode == VEC128 ? fp8_vec128_scale_floats((size_t)h->M, (size_t)k_stride)
                                    : fp8_blk128_scale_floats((size_t)h->M, (size_t)k_stride);
    uint8_t* codes = (uint8_t*)calloc((size_t)h->M * k_stride, 1);
    for (int m = 0; m < h->M; m++) { memcpy(codes + (size_t)m * k_stride, h->codes + (size_t)m * h->K, (size_t)h->K); }
    float* scales = (float*)malloc(d.scale_floats * sizeof(float));
    for (size_t i = 0; i < d.scale_floats; i++) { scales[i] = fp8_bits_float(0xFFFFFFFFu); }  // NaN
    for (int i = 0; i < grid_rows(h); i++) {
        for (int j = 0; j < blocks_of(h->K); j++) {
            size_t at = mode == VEC128 ? fp8_vec128_scale_index((size_t)i, (size_t)j, (size_t)h->M)
                                       : fp8_blk128_scale_index((size_t)i, (size_t)j, (size_t)k_stride);
            scales[at] = h->scale_inv[(size_t)i * blocks_of(h->K) + j];
        }
    }
    cudaCheck(cudaMalloc(&d.codes, (size_t)h->M * k_stride));
    cudaCheck(cudaMalloc(&d.scale_inv, d.scale_floats * sizeof(float)));
    cudaCheck(cudaMemcpy(d.codes, codes, (size_t)h->M * k_stride, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(d.scale_inv, scales, d.scale_floats * sizeof(float), cudaMemcpyHostToDevice));
    free(codes);
    free(scales);
    return d;
}

// A GEMM of a linear layer at a width that ends in partial blocks: out (rows, out_cols) = inp (rows, k) @ weight
// (out_cols, k)^T, the weight in 128x128 tiles (fprop's W, dgrad's W^T: BLK128x128) or 1x128 blocks (wgrad's x^T:
// VEC128), the input in 1x128 blocks (VEC128).
typedef struct {
    const char* label;
    int rows, out_cols, k;
    int weight_tiles;
    Fp8Format weight_format, inp_format;
    cudaDataType_t out_type;
} PartialProblem;

static const PartialProblem partial_k_problems[] = {  // k not a multiple of 128
    {"C 96 qkv fprop", 272, 288, 96, 1, FP8_E4M3, FP8_E4M3, CUDA_R_16BF},
    {"C 96 attproj dgrad", 272, 96, 96, 1, FP8_E4M3, FP8_E5M2, CUDA_R_16BF},
    {"C 160 fc fprop", 272, 640, 160, 1, FP8_E4M3, FP8_E4M3, CUDA_R_16BF},
    {"C 160 fcproj dgrad", 272, 640, 160, 1, FP8_E4M3, FP8_E5M2, CUDA_R_16BF},
    {"d48 qkv fprop", 256, 4800, 1600, 1, FP8_E4M3, FP8_E4M3, CUDA_R_16BF},
    {"d48 fcproj dgrad", 256, 6400, 1600, 1, FP8_E4M3, FP8_E5M2, CUDA_R_16BF},
    {"C 160 qkv wgrad, B*T 272", 480, 160, 272, 0, FP8_E4M3, FP8_E5M2, CUDA_R_32F},
    {"d48 qkv wgrad, B*T 1040", 4800, 1600, 1040, 0, FP8_E4M3, FP8_E5M2, CUDA_R_32F},
};
static const PartialProblem partial_outer_problems[] = {  // k a multiple of 128, m or n not
    {"fprop, B*T 272", 272, 384, 128, 1, FP8_E4M3, FP8_E4M3, CUDA_R_16BF},
    {"fprop, 208 outputs", 256, 208, 256, 1, FP8_E4M3, FP8_E4M3, CUDA_R_16BF},
    {"dgrad into 1600 (d48's C)", 272, 1600, 384, 1, FP8_E4M3, FP8_E5M2, CUDA_R_16BF},
    {"d48 qkv wgrad, B*T 256", 4800, 1600, 256, 0, FP8_E4M3, FP8_E5M2, CUDA_R_32F},
};

// What straight-to-cuBLASLt runs of partial k blocks gave, for the summary line
static int partial_as_is_right, partial_as_is_wrong, partial_as_is_refused, partial_as_is_faulted;

// One partial-block problem from random bf16 tensors (random_tensor: a scale per block) cast on the CPU, against the
// product of the casts' operands. `as_is` 0: through gemm_multiply, which must run it and be right: with k as it is
// where k is a multiple of 128 (partial blocks along m or n only), else with both operands' k zero-padded to the next
// multiple of 128. `as_is` 1: k as it is, straight to cuBLASLt (gemm_problem_check refuses k off 128): what cuBLASLt
// does with a partial last block along k, printed and counted, never a failed check. Returns 0, or -1 when the GPU
// faulted (its context is lost).
static int check_partial(const PartialProblem* p, int as_is, uint64_t seed) {
    int padded_k = blocks_of(p->k) * BLOCK;
    size_t n_w = (size_t)p->out_cols * p->k, n_x = (size_t)p->rows * p->k;
    uint16_t* w16 = (uint16_t*)malloc(n_w * 2);
    uint16_t* x16 = (uint16_t*)malloc(n_x * 2);
    float* wv = (float*)malloc(n_w * sizeof(float));
    float* xv = (float*)malloc(n_x * sizeof(float));
    random_tensor(w16, wv, p->out_cols, p->k, p->weight_tiles ? 0.02f : 1.0f, seed);
    random_tensor(x16, xv, p->rows, p->k, p->inp_format == FP8_E5M2 ? 1e-4f : 1.0f, seed + 1);
    Fp8BlockCast weight_cast = {FP8_SCALING_BLOCKWISE, p->weight_format, 0.0f, 1};
    Fp8BlockCast inp_cast = {FP8_SCALING_BLOCKWISE, p->inp_format, 0.0f, 1};
    HostOperand w = p->weight_tiles ? cast_tiles(wv, p->out_cols, p->k, &weight_cast)
                                    : cast_rowwise(wv, p->out_cols, p->k, &weight_cast);
    HostOperand x = cast_rowwise(xv, p->rows, p->k, &inp_cast);
    int k_stride = as_is || p->k % BLOCK == 0 ? p->k : padded_k;
    DeviceOperand dw = upload_operand(&w, p->weight_tiles ? BLK128 : VEC128, k_stride);
    DeviceOperand dx = upload_operand(&x, VEC128, k_stride);
    Reference ref = reference_gemm(&w, &x);
    Rng rng;
    rng_seed(&rng, seed + 2);
    int accumulate = p->out_type == CUDA_R_32F;  // wgrad accumulates into dW, as the trainer's
    DirectOutcome outcome = DIRECT_RAN;
    double worst = run_gemm(p->label, &ref, &w, &dw, &x, &dx, p->out_type, accumulate, NULL, &rng,
                            as_is ? ISSUE_CUBLASLT : ISSUE_GEMM_MULTIPLY, &outcome);
    if (as_is) {
        partial_as_is_refused += outcome == DIRECT_REFUSED;
        partial_as_is_faulted += outcome == DIRECT_FAULTED;
        partial_as_is_right += outcome == DIRECT_RAN && worst <= 1.0;
        partial_as_is_wrong += outcome == DIRECT_RAN && !(worst <= 1.0);
    }
    if (outcome != DIRECT_FAULTED) {
        reference_free(&ref);
        device_operand_free(&dw);
        device_operand_free(&dx);
    }
    host_operand_free(&w);
    host_operand_free(&x);
    free(w16);
    free(x16);
    free(wv);
    free(xv);
    return outcome == DIRECT_FAULTED ? -1 : 0;
}

// What the trainer relies on, through its GEMM layer: partial blocks along m or n with k a multiple of 128, and a
// partial last block along k made whole by zero-padding k (the padding's codes 0, its blocks' scales unchanged).
static void test_partial_blocks_through_gemm_multiply(void) {
    size_t n_outer = sizeof(partial_outer_problems) / sizeof(partial_outer_problems[0]);
    size_t n_k = sizeof(partial_k_problems) / sizeof(partial_k_problems[0]);
    for (size_t i = 0; i < n_outer; i++) { check_partial(&partial_outer_problems[i], 0, 5000 + 10 * i); }
    for (size_t i = 0; i < n_k; i++) { check_partial(&partial_k_problems[i], 0, 6000 + 10 * i); }
}

// A partial last block along k as it is, straight to cuBLASLt (run last: a fault loses the context). Prints what
// cuBLASLt accepts and whether it is right; fails nothing (the trainer pads such a k with zero codes instead:
// llmc/linear.h's linear_fp8_gemm_k). Returns -1 when the GPU faulted.
static int partial_k_as_is(void) {
    printf("partial blocks along k as they are, straight to cuBLASLt (gemm_problem_check refuses them):\n");
    size_t n_k = sizeof(partial_k_problems) / sizeof(partial_k_problems[0]);
    int faulted = 0;
    for (size_t i = 0; i < n_k && !faulted; i++) { faulted = check_partial(&partial_k_problems[i], 1, 6000 + 10 * i); }
    printf("partial k blocks as they are: %d of %zu right, %d wrong, %d refused, %d faulted (zero-padded to a multiple "
           "of 128: checked above)\n", partial_as_is_right, n_k, partial_as_is_wrong, partial_as_is_refused,
           partial_as_is_faulted);
    return faulted ? -1 : 0;
}

// ----------------------------------------------------------------------------
// throughput

// Random bytes with bits 6 and 3 cleared: as E4M3 or E5M2 codes, finite values below 1 in magnitude (no NaN or inf);
// as bf16 or fp32 (the high byte), finite values below 2. Random signs. Operands like real ones for timing (constant
// operands draw less power, and the clocks may stay higher).
__global__ void fill_random_bytes(uint8_t* p, size_t n, uint32_t seed) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u + seed;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        p[i] = (uint8_t)(h & 0xB7u);
    }
}

__global__ void fill_floats(float* p, size_t n, float value) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        p[i] = value;
    }
}

// The device buffers of the benchmark, each large enough for every GEMM at rows = B*T and C up to 1024. The FP8 and
// BF16 GEMMs read the same bytes with their own types (only the time matters here).
typedef struct {
    // W or W^T (4C, C); x or x^T (rows, 4C); dy or dy^T (rows, 4C); out (rows, 4C); dW (4C, C) fp32; bias (4C)
    void *w, *x, *dy, *out, *dw, *bias;
    float *w_scale, *x_scale, *dy_scale;  // block scale_invs, all 1 (the layout does not change the time)
    float* one;                           // the per-tensor scale_inv, 1
} BenchBuffers;

enum { GEMM_FPROP, GEMM_DGRAD, GEMM_WGRAD, NUM_GEMMS };
enum { PATH_BF16, PATH_FP8_TENSOR, PATH_FP8_BLOCK, NUM_PATHS };
static const char* gemm_names[NUM_GEMMS] = {"fprop", "dgrad", "wgrad"};

// One GEMM of a linear layer (OC, IC) at `rows` tokens, as train_gpt_fp8.cu issues it on each path: fprop BF16 and
// per-tensor FP8 with the bias epilogue (FP8 with fast accumulation), block-scaled accumulating into out (the bias
// pre-fill, a separate kernel, not timed); dgrad BF16 as NN, FP8 TN on W^T; wgrad accumulating into fp32.
static void issue(GemmContext* c, const BenchBuffers* b, int gemm, int path, int rows, int OC, int IC) {
    const cudaDataType_t bf16 = CUDA_R_16BF, e4m3 = CUDA_R_8F_E4M3, e5m2 = CUDA_R_8F_E5M2;
    int block = path == PATH_FP8_BLOCK;
    cudaDataType_t forward = path == PATH_BF16 ? bf16 : e4m3, backward = path == PATH_BF16 ? bf16 : e5m2;
    // the scale_invs: none (BF16), the per-tensor one, or the block arrays with their modes
    const float* w_scale = path == PATH_BF16 ? NULL : block ? b->w_scale : b->one;
    const float* x_scale = path == PATH_BF16 ? NULL : block ? b->x_scale : b->one;
    const float* dy_scale = path == PATH_BF16 ? NULL : block ? b->dy_scale : b->one;
    int w_mode = block ? BLK128 : SCALAR, act_mode = block ? VEC128 : SCALAR;
    if (gemm == GEMM_FPROP) {  // out (rows, OC) = x (rows, IC) @ W (OC, IC)^T
        GemmOutput out = {b->out, bf16, block ? NULL : b->bias, block};
        GemmOperand w = gemm_operand(b->w, forward, OC, IC, 1, w_scale, w_mode);
        GemmOperand x = gemm_operand(b->x, forward, rows, IC, 1, x_scale, act_mode);
        gemm_multiply(c, &out, &w, &x, path == PATH_FP8_TENSOR, 0);
    } else if (gemm == GEMM_DGRAD) {  // dx (rows, IC) = dy (rows, OC) @ W (OC, IC): weight W^T (IC, OC); BF16: W (NN)
        GemmOutput out = {b->out, bf16, NULL, 0};
        GemmOperand w_t = gemm_operand(b->w, forward, IC, OC, path != PATH_BF16, w_scale, w_mode);
        GemmOperand dy = gemm_operand(b->dy, backward, rows, OC, 1, dy_scale, act_mode);
        gemm_multiply(c, &out, &w_t, &dy, 0, 0);
    } else {  // dW (OC, IC) += dy^T (OC, rows) @ x (rows, IC): weight x^T (IC, rows), inp dy^T (OC, rows); BF16: NT
        GemmOutput out = {b->dw, CUDA_R_32F, NULL, 1};
        GemmOperand x_t = gemm_operand(b->x, forward, IC, rows, path != PATH_BF16, x_scale, act_mode);
        GemmOperand dy_t = gemm_operand(b->dy, backward, OC, rows, path != PATH_BF16, dy_scale, act_mode);
        gemm_multiply(c, &out, &x_t, &dy_t, 0, 0);
    }
}

static void benchmark(void) {
    const int rows = 64 * 1024, max_c = 1024, reps = 20;
    const size_t big = (size_t)rows * 4 * max_c;  // elements of the largest activation (rows, 4C)
    BenchBuffers b;
    void** buffers[6] = {&b.w, &b.x, &b.dy, &b.out, &b.dw, &b.bias};
    size_t bytes[6] = {(size_t)4 * max_c * max_c * 2, big * 2, big * 2, big * 2, (size_t)4 * max_c * max_c * 4,
                       (size_t)4 * max_c * 2};
    DeviceList dev = {{NULL}, 0};
    for (int i = 0; i < 6; i++) {
        device_alloc(&dev, buffers[i], bytes[i]);
        fill_random_bytes<<<1024, 256>>>((uint8_t*)*buffers[i], bytes[i], 17u * (uint32_t)i + 1u);
        cudaCheck(cudaGetLastError());
    }
    size_t w_scales = fp8_blk128_scale_floats(4 * max_c, 4 * max_c);
    // an activation's VEC128 scales: (rows, 4C) rowwise, or (4C, rows) columnwise
    size_t rowwise_scales = fp8_vec128_scale_floats((size_t)rows, 4 * max_c);
    size_t columnwise_scales = fp8_vec128_scale_floats(4 * max_c, (size_t)rows);
    size_t act_scales = rowwise_scales > columnwise_scales ? rowwise_scales : columnwise_scales;
    float** scales[4] = {&b.w_scale, &b.x_scale, &b.dy_scale, &b.one};
    size_t counts[4] = {w_scales, act_scales, act_scales, 1};
    for (int i = 0; i < 4; i++) {
        device_alloc(&dev, scales[i], counts[i] * sizeof(float));
        fill_floats<<<256, 256>>>(*scales[i], counts[i], 1.0f);
        cudaCheck(cudaGetLastError());
    }
    // the same GEMMs with each problem's algorithm chosen as the trainer's -gemm_autotune 8 chooses it (timed at its
    // first call, a warm-up one here), the accumulating ones timed into a scratch as large as the largest output
    GemmContext tuned;
    gemm_context_init(&tuned);
    tuned.autotune = 8;
    tuned.tune_scratch_bytes = bytes[3] > bytes[4] ? bytes[3] : bytes[4];
    device_alloc(&dev, &tuned.tune_scratch, tuned.tune_scratch_bytes);
    GemmContext* contexts[2] = {&ctx, &tuned};
    BenchTimer timer;
    bench_timer_init(&timer);
    printf("TFLOP/s at B*T = %d, mean of %d calls after 2 (which plan): BF16 | FP8 per-tensor | FP8 block-scaled, with "
           "the heuristic's first algorithm, then with the fastest of its first 8 (-gemm_autotune 8)\n", rows, reps);
    const struct { const char* name; int C; } models[2] = {{"d12", 768}, {"d24", 1024}};
    for (int m = 0; m < 2; m++) {
        int C = models[m].C;
        const struct { const char* name; int OC, IC; } linears[4] = {
            {"qkv", 3 * C, C}, {"attproj", C, C}, {"fc", 4 * C, C}, {"fcproj", C, 4 * C}};
        for (int l = 0; l < 4; l++) {
            for (int g = 0; g < NUM_GEMMS; g++) {
                double tflops[2][NUM_PATHS];
                for (int t = 0; t < 2; t++) {
                    for (int p = 0; p < NUM_PATHS; p++) {
                        for (int r = 0; r < reps + 2; r++) {
                            if (r == 2) { bench_start(&timer); }
                            issue(contexts[t], &b, g, p, rows, linears[l].OC, linears[l].IC);
                        }
                        float ms = bench_stop_ms(&timer);
                        tflops[t][p] = 2.0 * rows * linears[l].OC * linears[l].IC * reps / (ms * 1e9);
                    }
                }
                int out_rows = g == GEMM_WGRAD ? linears[l].OC : rows;
                int out_cols = g == GEMM_FPROP ? linears[l].OC : linears[l].IC;
                int k = g == GEMM_FPROP ? linears[l].IC : g == GEMM_DGRAD ? linears[l].OC : rows;
                const double* f = tflops[0];
                const double* a = tflops[1];
                printf("%s %-8s %s out (%5d, %4d) k %5d: BF16 %6.1f | FP8 tensor %6.1f | FP8 block %6.1f TFLOP/s "
                       "(block / tensor %.2fx, block / BF16 %.2fx); tuned %6.1f | %6.1f | %6.1f (%.2fx, %.2fx)\n",
                       models[m].name, linears[l].name, gemm_names[g], out_rows, out_cols, k, f[PATH_BF16],
                       f[PATH_FP8_TENSOR], f[PATH_FP8_BLOCK], f[PATH_FP8_BLOCK] / f[PATH_FP8_TENSOR],
                       f[PATH_FP8_BLOCK] / f[PATH_BF16], a[PATH_BF16], a[PATH_FP8_TENSOR], a[PATH_FP8_BLOCK],
                       a[PATH_FP8_BLOCK] / a[PATH_FP8_TENSOR], a[PATH_FP8_BLOCK] / a[PATH_BF16]);
            }
        }
    }
    bench_timer_free(&timer);
    tuned.tune_scratch = NULL;  // (device_list_free frees it)
    gemm_context_free(&tuned);
    device_list_free(&dev);
}

int main(void) {
    require_cuda_device("fp8_block_gemm");
    char why[512];
    if (gemm_block_scaling_check(why, sizeof(why)) != 0) {  // nothing here can run: one line, as without a GPU
        fprintf(stderr, "fp8_block_gemm: %s\n", why);
        return 1;
    }
    int device = 0;
    cudaCheck(cudaGetDevice(&device));
    cudaDeviceProp prop;
    cudaCheck(cudaGetDeviceProperties(&prop, device));
    size_t version = cublasLtGetVersion();
    printf("%s, cuBLASLt %zu.%zu.%zu\n", prop.name, version / 10000, version / 100 % 100, version % 100);
    gemm_context_init(&ctx);
    RUN_TEST(test_refusals);
    RUN_TEST(test_small_power_2_scales);
    RUN_TEST(test_small_fp32_scales);
    RUN_TEST(test_d12);
    RUN_TEST(test_d24);
    RUN_TEST(test_partial_blocks_through_gemm_multiply);
    benchmark();
    if (partial_k_as_is() != 0) {  // the context is lost: nothing more can be freed
        return test_summary("fp8_block_gemm");
    }
    gemm_context_free(&ctx);
    return test_summary("fp8_block_gemm");
}
