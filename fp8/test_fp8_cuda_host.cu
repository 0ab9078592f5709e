/*
fp8/test_fp8_cuda_host.cu — fp8.h against NVIDIA's own conversion, with no GPU needed.

cuda_fp8.h ships a host implementation of __nv_cvt_float_to_fp8 that NVIDIA keeps equal to the sm_89+ instruction
cvt.rn.satfinite; we compare fp8_from_float with it (__NV_SATFINITE) over every float whose low 12 bits are one of
{0, 1, 0x7FF, 0x800, 0x801, 0xFFF} (all 2^20 sign/exponent/top-mantissa patterns). FP8 keeps at most 3 mantissa bits
and its rounding bit is never below bit 19 of a float's significand (subnormals included), so the low 12 bits only
act as the sticky bit and this set covers every rounding case. Also checks __nv_cvt_fp8_to_halfraw decoding of all
256 codes, and that the fp8 headers and update.cuh's kernel compile as device code (compiled, not launched); and
quantize.cuh's and block_quantize.cuh's launchers refusing bad sizes, grids and alignments before any CUDA call.
*/
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdio.h>

#include "../llmc/testing.h"
#include "meta.h"
#include "quantize_cpu.h"
#include "block_quantize.cuh"
#include "quantize.cuh"
#include "update.cuh"

// Compiled for the device to prove the shared header works there; never launched here (no GPU in CI).
__global__ void device_compile_check(float* history, float* scale, float* scale_inv, uint8_t* out, const float* in,
                                     int num_slots, int len) {
    int slot = blockIdx.x * blockDim.x + threadIdx.x;
    if (slot < num_slots) {
        fp8_update_slot(history + slot, len, num_slots, &scale[slot], &scale_inv[slot], 448.0f, 0, 0, 1);
        out[slot] = fp8_from_float(in[slot] * scale[slot], FP8_E4M3);
        scale_inv[slot] += fp8_to_float(out[slot], FP8_E5M2) + bf16_round(in[slot]);
    }
}

// The launcher's argument plumbing, checked without a GPU: the kernel needs a device, but which recipe takes the host
// path does not.
static void test_update_launcher_host_path_choice(void) {
    Fp8Recipe r;
    fp8_recipe_default(&r);
    CHECK(!fp8_meta_update_needs_host(&r), "built-in recipe runs on the GPU");
    r.delayed.amax_compute_algo = AMAX_COMPUTE_CALLBACK;
    CHECK(fp8_meta_update_needs_host(&r), "amax callback needs the host");
}

// quantize.cuh's launchers refuse, before any CUDA call, what their kernels cannot do (so no GPU is needed to see it):
// sizes off the vector or the tile, too many tile rows for gridDim.y, misaligned vector loads and stores, and the
// grad_output cast's bias partials missing or misaligned.
static void test_quantize_launch_preconditions(void) {
    uint8_t* out = (uint8_t*)0x7f0000000000;  // never dereferenced: every call below is refused first
    uint8_t* out_t = (uint8_t*)0x7f0000100000;
    const __nv_bfloat16* inp = (const __nv_bfloat16*)0x7f0000200000;
    float* amax = (float*)0x7f0000300000;
    const float* scale = (const float*)0x7f0000300010;
    fprintf(stderr, "(the launchers' refusals below are expected)\n");
    CHECK(fp8_cast_amax(out, inp + 1, 1024, scale, amax, NULL, FP8_E4M3, 132, 0) == cudaErrorInvalidValue, "input at 2 bytes");
    CHECK(fp8_cast_amax(out + 4, inp, 1024, scale, amax, NULL, FP8_E4M3, 132, 0) == cudaErrorInvalidValue, "output at 4 bytes");
    CHECK(fp8_cast_amax(out, inp, 1020, scale, amax, NULL, FP8_E4M3, 132, 0) == cudaErrorInvalidValue, "n not a multiple of 8");
    CHECK(fp8_cast_transpose_amax(out, out_t, inp + 4, 64, 64, scale, amax, NULL, FP8_E4M3, 0) == cudaErrorInvalidValue,
          "transpose input at 8 bytes");
    CHECK(fp8_cast_transpose_amax(out, out_t + 2, inp, 64, 64, scale, amax, NULL, FP8_E4M3, 0) == cudaErrorInvalidValue,
          "transposed output at 2 bytes");
    CHECK(fp8_cast_transpose_amax(out, out_t, inp, 96, 64, scale, amax, NULL, FP8_E4M3, 0) == cudaErrorInvalidValue,
          "rows off the tile");
    CHECK(fp8_cast_transpose_amax(out, out_t, inp, 65536 * FP8_TRANSPOSE_TILE, 64, scale, amax, NULL, FP8_E4M3, 0) ==
              cudaErrorInvalidValue,
          "65536 tile rows: gridDim.y is at most 65535");
    unsigned long long* stats = (unsigned long long*)0x7f0000300024;  // 4 bytes off the counters' 8-byte alignment
    CHECK(fp8_cast_amax(out, inp, 1024, scale, amax, stats, FP8_E4M3, 132, 0) == cudaErrorInvalidValue,
          "counters at 4 bytes");
    CHECK(fp8_cast_transpose_amax(out, out_t, inp, 64, 64, scale, amax, stats, FP8_E4M3, 0) == cudaErrorInvalidValue,
          "transpose counters at 4 bytes");
    // the grad_output cast with its bias partials: the same checks, and a partials buffer, 4-byte aligned
    float* partials = (float*)0x7f0000400000;
    CHECK(fp8_cast_transpose_dbias_amax(out, out_t, NULL, inp, 64, 64, scale, amax, NULL, FP8_E5M2, 0) ==
              cudaErrorInvalidValue,
          "dbias cast without a partials buffer");
    CHECK(fp8_cast_transpose_dbias_amax(out, out_t, (float*)((char*)partials + 2), inp, 64, 64, scale, amax, NULL,
                                        FP8_E5M2, 0) == cudaErrorInvalidValue,
          "dbias partials at 2 bytes");
    CHECK(fp8_cast_transpose_dbias_amax(out, out_t, partials, inp, 64, 96, scale, amax, NULL, FP8_E5M2, 0) ==
              cudaErrorInvalidValue,
          "dbias cast: cols off the tile");
    CHECK(fp8_cast_transpose_dbias_amax(out, out_t, partials, inp + 4, 64, 64, scale, amax, NULL, FP8_E5M2, 0) ==
              cudaErrorInvalidValue,
          "dbias cast: input at 8 bytes");
    CHECK(fp8_cast_transpose_dbias_amax(out, out_t, partials, inp, 64, 64, scale, amax, stats, FP8_E5M2, 0) ==
              cudaErrorInvalidValue,
          "dbias cast: counters at 4 bytes");
}

// block_quantize.cuh's launchers refuse, before any CUDA call, the shapes and pointers their kernels cannot take, and
// accept partial blocks (any width: the last block of a row or column cut short). Refused: a block length that is not
// the recipe's, columns off the 16-byte bf16 loads (a multiple of 8), transposed codes whose rows are off their
// 16-byte stores (a multiple of 16), misaligned inputs and outputs, the other recipe's scale array, counters without a
// scale range or at 4 bytes, no amax cell, a tensor made inside the cast (GELU, GELU's backward, LayerNorm) under
// mxfp8, of no known kind, or without (or with another kind's) pointers, or with them misaligned; a 2D cast missing
// an output, mxfp8 given to the 2D cast, more tiles than the grid loop counts. (The acceptances call the checks only:
// launching needs a GPU.)
static void test_block_cast_launch_preconditions(void) {
    uint8_t* codes = (uint8_t*)0x7f0000000000;  // never dereferenced: every call below is refused first
    uint8_t* codes_t = (uint8_t*)0x7f0000100000;
    const __nv_bfloat16* inp = (const __nv_bfloat16*)0x7f0000200000;
    float* amax = (float*)0x7f0000300000;
    float* scale_inv = (float*)0x7f0000400000;
    uint8_t* e8m0 = (uint8_t*)0x7f0000500000;
    unsigned long long* stats = (unsigned long long*)0x7f0000600000;
    unsigned int* scale_range = (unsigned int*)0x7f0000600100;
    __nv_bfloat16* dequantized = (__nv_bfloat16*)0x7f0000700000;
    Fp8BlockCast blockwise = {FP8_SCALING_BLOCKWISE, FP8_E4M3, 0.0f, 1}, mxfp8 = {FP8_SCALING_MXFP8, FP8_E4M3, 0.0f, 1};
    Fp8BlockCast1d good;
    memset(&good, 0, sizeof(good));
    good.inp = inp;
    good.rows = 256;
    good.cols = 768;
    good.block_len = FP8_BLOCKWISE_BLOCK;
    good.cast = blockwise;
    good.rowwise.codes = codes;
    good.rowwise.scale_inv = scale_inv;
    good.columnwise.codes = codes_t;
    good.columnwise.scale_inv = scale_inv;
    good.amax = amax;
    CHECK(fp8_block_cast_1d_check(&good) == cudaSuccess, "the trainer's blockwise cast of (256, 768) passes");
    Fp8BlockCast1d a = good;
    a.block_len = FP8_MXFP8_BLOCK;
    CHECK(fp8_block_cast_1d(&a, 0) == cudaErrorInvalidValue, "blockwise with 32-element blocks");
    // any width: partial 1x128 blocks at 96, 160, 1600 (d48's C) and 800 columns
    const int widths[4] = {96, 160, 1600, 800};
    for (int i = 0; i < 4; i++) {
        a = good;
        a.cols = widths[i];
        CHECK(fp8_block_cast_1d_check(&a) == cudaSuccess, "blockwise, both copies, %d columns passes", widths[i]);
    }
    a = good;
    a.cols = 804;
    CHECK(fp8_block_cast_1d(&a, 0) == cudaErrorInvalidValue, "804 columns: not a multiple of 8");
    a = good;
    a.rows = 200;
    CHECK(fp8_block_cast_1d(&a, 0) == cudaErrorInvalidValue, "a columnwise copy of 200 rows: not a multiple of 16");
    a.rows = 208;
    CHECK(fp8_block_cast_1d_check(&a) == cudaSuccess, "a columnwise copy of 208 rows (a partial 128x1 block) passes");
    a.rows = 200;
    a.columnwise.codes = NULL;
    CHECK(fp8_block_cast_1d_check(&a) == cudaSuccess, "200 rows with the columnwise scales but no codes pass");
    a.columnwise.scale_inv = NULL;
    a.rows = 201;
    CHECK(fp8_block_cast_1d_check(&a) == cudaSuccess, "a rowwise-only copy of 201 rows passes (the rows are masked)");
    a = good;
    a.inp = inp + 4;
    CHECK(fp8_block_cast_1d(&a, 0) == cudaErrorInvalidValue, "input at 8 bytes");
    a = good;
    a.columnwise.codes = codes_t + 8;
    CHECK(fp8_block_cast_1d(&a, 0) == cudaErrorInvalidValue, "transposed codes at 8 bytes");
    a = good;
    a.rowwise.codes = codes + 4;
    CHECK(fp8_block_cast_1d(&a, 0) == cudaErrorInvalidValue, "rowwise codes at 4 bytes (8-byte stores)");
    a = good;
    a.rowwise.e8m0 = e8m0;
    CHECK(fp8_block_cast_1d(&a, 0) == cudaErrorInvalidValue, "E8M0 scales for blockwise");
    a = good;
    a.cast = mxfp8;
    a.block_len = FP8_MXFP8_BLOCK;
    CHECK(fp8_block_cast_1d(&a, 0) == cudaErrorInvalidValue, "VEC128 scale_invs for mxfp8");
    a.rowwise.scale_inv = a.columnwise.scale_inv = NULL;
    a.rowwise.e8m0 = e8m0;
    a.cols = 96;
    CHECK(fp8_block_cast_1d_check(&a) == cudaSuccess, "mxfp8 with E8M0 scales and 96 columns passes");
    a.cols = 40;
    a.rows = 48;
    CHECK(fp8_block_cast_1d_check(&a) == cudaSuccess, "mxfp8 of (48, 40): partial 1x32 and 32x1 blocks pass");
    a.rowwise.dequantized = dequantized + 4;
    CHECK(fp8_block_cast_1d(&a, 0) == cudaErrorInvalidValue, "mxfp8 rowwise dequantized at 8 bytes");
    a.rowwise.dequantized = NULL;
    a.columnwise.dequantized = dequantized + 1;
    CHECK(fp8_block_cast_1d(&a, 0) == cudaErrorInvalidValue, "mxfp8 columnwise dequantized at 2 bytes");
    a.columnwise.dequantized = dequantized + 2;
    a.columnwise.codes = NULL;
    a.rows = 40;
    CHECK(fp8_block_cast_1d_check(&a) == cudaSuccess,
          "mxfp8's columnwise dequantized copy alone (the trainer's) at 4 bytes and 40 rows passes");
    a = good;
    memset(&a.rowwise, 0, sizeof(a.rowwise));
    memset(&a.columnwise, 0, sizeof(a.columnwise));
    a.column_partials = (float*)0x7f0000800000;
    CHECK(fp8_block_cast_1d(&a, 0) == cudaErrorInvalidValue, "no copy asked for (column partials alone)");
    a = good;
    a.stats = stats;
    CHECK(fp8_block_cast_1d(&a, 0) == cudaErrorInvalidValue, "counters without a scale range");
    a.scale_range = scale_range;
    CHECK(fp8_block_cast_1d_check(&a) == cudaSuccess, "counters with a scale range pass");
    a.stats = (unsigned long long*)((char*)stats + 4);
    CHECK(fp8_block_cast_1d(&a, 0) == cudaErrorInvalidValue, "counters at 4 bytes");
    a = good;
    a.column_partials = (float*)0x7f0000800000;  // a grad_output cast's bias sums, (rows / 64, cols)
    CHECK(fp8_block_cast_1d_check(&a) == cudaSuccess, "column partials (4-byte aligned) pass");
    a.rows = 208;
    CHECK(fp8_block_cast_1d_check(&a) == cudaSuccess, "column partials of 208 rows (a last chunk of 16) pass");
    a.column_partials = (float*)0x7f0000800002;
    CHECK(fp8_block_cast_1d(&a, 0) == cudaErrorInvalidValue, "column partials at 2 bytes");
    a.cast = mxfp8;
    a.block_len = FP8_MXFP8_BLOCK;
    a.rowwise.scale_inv = a.columnwise.scale_inv = NULL;
    a.rowwise.e8m0 = e8m0;
    CHECK(fp8_block_cast_1d(&a, 0) == cudaErrorInvalidValue, "mxfp8 with column partials at 2 bytes");
    a.column_partials = (float*)0x7f0000800004;
    CHECK(fp8_block_cast_1d_check(&a) == cudaSuccess, "mxfp8 with column partials passes");
    a = good;
    a.made.kind = FP8_BLOCK_FROM_GELU;  // fcproj's input cast from fch, GELU inside (blockwise's only)
    CHECK(fp8_block_cast_1d_check(&a) == cudaSuccess, "blockwise with GELU inside passes");
    a.column_partials = (float*)0x7f0000800000;
    CHECK(fp8_block_cast_1d_check(&a) == cudaSuccess, "blockwise with GELU inside and column partials passes");
    a.made.kind = FP8_BLOCK_MADE_KINDS;
    CHECK(fp8_block_cast_1d(&a, 0) == cudaErrorInvalidValue, "made.kind past the kinds");
    // GELU's backward inside fc's grad_output cast: GELU's input, 16-byte aligned, and only with that kind
    const __nv_bfloat16* fch = (const __nv_bfloat16*)0x7f0000900000;
    a.made.kind = FP8_BLOCK_FROM_GELU_BACKWARD;
    CHECK(fp8_block_cast_1d(&a, 0) == cudaErrorInvalidValue, "GELU's backward without GELU's input");
    a.made.gelu_input = fch;
    CHECK(fp8_block_cast_1d_check(&a) == cudaSuccess, "GELU's backward with GELU's input and column partials passes");
    a.made.gelu_input = fch + 4;
    CHECK(fp8_block_cast_1d(&a, 0) == cudaErrorInvalidValue, "GELU's input 8 bytes past 16");
    a.made.kind = FP8_BLOCK_FROM_GELU, a.made.gelu_input = fch;
    CHECK(fp8_block_cast_1d(&a, 0) == cudaErrorInvalidValue, "GELU's input given to the forward's GELU");
    // LayerNorm inside qkv's and fc's input casts: the four pointers, aligned, and only with that kind
    const float* row_stats = (const float*)0x7f0000a00000;
    const __nv_bfloat16* params = (const __nv_bfloat16*)0x7f0000b00000;
    Fp8BlockMade ln = {FP8_BLOCK_FROM_LAYERNORM, NULL, row_stats, row_stats + 1, params, params + 8};
    a = good;
    a.made = ln;
    CHECK(fp8_block_cast_1d_check(&a) == cudaSuccess, "blockwise with LayerNorm inside passes");
    a.made.bias = NULL;
    CHECK(fp8_block_cast_1d(&a, 0) == cudaErrorInvalidValue, "LayerNorm inside without its bias");
    a.made = ln, a.made.weight = params + 4;
    CHECK(fp8_block_cast_1d(&a, 0) == cudaErrorInvalidValue, "LayerNorm's weight 8 bytes past 16");
    a.made = ln, a.made.rstd = (const float*)((const char*)row_stats + 2);
    CHECK(fp8_block_cast_1d(&a, 0) == cudaErrorInvalidValue, "the row rstds 2 bytes past 4");
    a.made = ln, a.made.kind = FP8_BLOCK_FROM_GELU;
    CHECK(fp8_block_cast_1d(&a, 0) == cudaErrorInvalidValue, "LayerNorm's pointers given to GELU");
    a = good;
    a.made.kind = FP8_BLOCK_FROM_GELU;
    a.cast = mxfp8;
    a.block_len = FP8_MXFP8_BLOCK;
    a.rowwise.scale_inv = a.columnwise.scale_inv = NULL;
    a.rowwise.e8m0 = e8m0;
    CHECK(fp8_block_cast_1d(&a, 0) == cudaErrorInvalidValue, "mxfp8 with GELU inside (blockwise's only)");
    a = good;
    a.amax = NULL;
    CHECK(fp8_block_cast_1d(&a, 0) == cudaErrorInvalidValue, "no amax cell");
    a = good;
    a.rows = 200;
    a.columnwise.k_padded = 1;  // columnwise codes of 200 rows in rows of 256
    CHECK(fp8_block_cast_1d_check(&a) == cudaSuccess, "columnwise codes of 200 rows zero-padded along k pass");
    a = good;
    a.cast = mxfp8;
    a.block_len = FP8_MXFP8_BLOCK;
    a.rowwise.scale_inv = a.columnwise.scale_inv = NULL;
    a.rowwise.e8m0 = e8m0;
    CHECK(fp8_block_cast_1d_check(&a) == cudaSuccess, "the mxfp8 cast the next refusal starts from passes");
    a.rowwise.k_padded = 1;
    CHECK(fp8_block_cast_1d(&a, 0) == cudaErrorInvalidValue, "mxfp8 codes zero-padded along k (blockwise's only)");
    a = good;
    a.rows = 2147483392;  // 2^31 - 256: 16777214 tile rows
    a.cols = 65536;       // 512 tile columns: 2^33 tiles
    CHECK(fp8_block_cast_1d(&a, 0) == cudaErrorInvalidValue, "2^33 tiles: more than the grid loop counts");

    Fp8BlockCast2d w = {inp, 384, 768, blockwise, codes, codes_t, scale_inv, scale_inv, amax, NULL, NULL, NULL, 0};
    CHECK(fp8_block_cast_2d_check(&w) == cudaSuccess, "the 2D cast of a (384, 768) weight passes");
    Fp8BlockCast2d b = w;
    b.rows = 4800;
    b.cols = 1600;
    CHECK(fp8_block_cast_2d_check(&b) == cudaSuccess, "d48's qkv weight (4800, 1600): partial 128x128 tiles pass");
    b.rows = 160;
    b.cols = 104;
    CHECK(fp8_block_cast_2d_check(&b) == cudaSuccess, "a (160, 104) weight passes");
    b = w;
    b.rows = 328;
    CHECK(fp8_block_cast_2d(&b, 0) == cudaErrorInvalidValue, "a weight of 328 rows: its transposed codes' stores");
    b.k_padded = 1;  // the transposed codes' rows padded to 384: whole 16-byte chunks
    CHECK(fp8_block_cast_2d_check(&b) == cudaSuccess, "a weight of 328 rows with its codes zero-padded along k passes");
    b = w;
    b.cols = 764;
    CHECK(fp8_block_cast_2d(&b, 0) == cudaErrorInvalidValue, "a weight of 764 columns: not a multiple of 8");
    b = w;
    b.cast = mxfp8;
    CHECK(fp8_block_cast_2d(&b, 0) == cudaErrorInvalidValue, "mxfp8 has no 2D blocks");
    b = w;
    b.codes_t = codes_t + 4;
    CHECK(fp8_block_cast_2d(&b, 0) == cudaErrorInvalidValue, "transposed codes at 4 bytes");
    b = w;
    b.scale_inv_t = NULL;
    CHECK(fp8_block_cast_2d(&b, 0) == cudaErrorInvalidValue, "no W^T scale array");
    b = w;
    b.codes = NULL;
    CHECK(fp8_block_cast_2d(&b, 0) == cudaErrorInvalidValue, "no codes");
}

static void test_encode_against_cuda_fp8(void) {
    const uint32_t lows[6] = {0x000, 0x001, 0x7FF, 0x800, 0x801, 0xFFF};
    for (int fi = 0; fi < 2; fi++) {
        Fp8Format f = fi ? FP8_E5M2 : FP8_E4M3;
        __nv_fp8_interpretation_t interp = fi ? __NV_E5M2 : __NV_E4M3;
        long long mismatches = 0;
        for (uint32_t high = 0; high < (1u << 20); high++) {
            for (int l = 0; l < 6; l++) {
                float x = fp8_bits_float((high << 12) | lows[l]);
                uint8_t ours = fp8_from_float(x, f);
                uint8_t theirs = (uint8_t)__nv_cvt_float_to_fp8(x, __NV_SATFINITE, interp);
                if (ours != theirs) {
                    mismatches++;
                    CHECK(ours == theirs, "%s %a: ours 0x%02x cuda_fp8.h 0x%02x", fp8_format_name(f), x, ours, theirs);
                }
            }
        }
        CHECK(mismatches == 0, "%s: %lld mismatches against __nv_cvt_float_to_fp8", fp8_format_name(f), mismatches);
    }
}

static void test_decode_against_cuda_fp8(void) {
    for (int fi = 0; fi < 2; fi++) {
        Fp8Format f = fi ? FP8_E5M2 : FP8_E4M3;
        __nv_fp8_interpretation_t interp = fi ? __NV_E5M2 : __NV_E4M3;
        for (int c = 0; c < 256; c++) {
            __half_raw raw = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)c, interp);
            __half h = raw;
            float theirs = __half2float(h);  // every FP8 value is exact in fp16
            float ours = fp8_to_float((uint8_t)c, f);
            CHECK((isnan(ours) && isnan(theirs)) || fp8_float_bits(ours) == fp8_float_bits(theirs),
                  "%s code 0x%02x: ours %g cuda %g", fp8_format_name(f), c, ours, theirs);
        }
    }
}

static void test_bf16_against_cuda(void) {
    uint32_t state = 12345u;
    for (int i = 0; i < 2000000; i++) {
        state = state * 1664525u + 1013904223u;
        float x = fp8_bits_float(state ^ (state >> 7));
        __nv_bfloat16 b = __float2bfloat16_rn(x);
        uint16_t theirs;
        memcpy(&theirs, &b, sizeof(theirs));
        uint16_t ours = bf16_from_float(x);
        CHECK(isnan(x) ? isnan(bf16_to_float(ours)) : ours == theirs, "bf16 of %a: ours 0x%04x cuda 0x%04x", x, ours,
              theirs);
    }
}

int main(void) {
    RUN_TEST(test_update_launcher_host_path_choice);
    RUN_TEST(test_quantize_launch_preconditions);
    RUN_TEST(test_block_cast_launch_preconditions);
    RUN_TEST(test_encode_against_cuda_fp8);
    RUN_TEST(test_decode_against_cuda_fp8);
    RUN_TEST(test_bf16_against_cuda);
    return test_summary("fp8-cuda-host");
}
