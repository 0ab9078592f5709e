/*
fp8/test_fp8_cuda_host.cu — fp8.h against NVIDIA's own conversion, with no GPU needed.

cuda_fp8.h ships a host implementation of __nv_cvt_float_to_fp8 that NVIDIA keeps equal to the sm_89+ instruction
cvt.rn.satfinite; we compare fp8_from_float with it (__NV_SATFINITE) over every float whose low 12 bits are one of
{0, 1, 0x7FF, 0x800, 0x801, 0xFFF} (all 2^20 sign/exponent/top-mantissa patterns). FP8 keeps at most 3 mantissa bits
and its rounding bit is never below bit 19 of a float's significand (subnormals included), so the low 12 bits only
act as the sticky bit and this set covers every rounding case. Also checks __nv_cvt_fp8_to_halfraw decoding of all
256 codes, and that the fp8 headers and update.cuh's kernel compile as device code (compiled, not launched). Also
gemm.cuh's host side: plan keys with pointer alignments, and the FP8 problem checks with their messages; and
quantize.cuh's launchers refusing bad sizes, grids and alignments before any CUDA call.
*/
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdio.h>

#include "../llmc/testing.h"
#include "meta.h"
#include "gemm.cuh"
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
    DelayedScaling r;
    delayed_scaling_default(&r);
    CHECK(!fp8_meta_update_needs_host(&r), "built-in recipe runs on the GPU");
    r.amax_compute_algo = AMAX_COMPUTE_CALLBACK;
    CHECK(fp8_meta_update_needs_host(&r), "amax callback needs the host");
}

// fp8/gemm.cuh's host side: pointer alignments as cuBLASLt's preferences take them, the plan key telling two
// alignments apart, and the FP8 requirements refused with the problem described (no GPU: nothing is launched).
static void test_gemm_key_and_checks(void) {
    CHECK(gemm_pointer_alignment((void*)0x7f0000000000) == 256 && gemm_pointer_alignment((void*)0x7f0000000010) == 16 &&
              gemm_pointer_alignment((void*)0x7f0000000082) == 2 && gemm_pointer_alignment((void*)0x7f0000000300) == 256 &&
              gemm_pointer_alignment(NULL) == 256,
          "alignments: 256 (capped), 16, 2, 256");
    char* base = (char*)0x7f0000000000;
    // the trainer's FP8 fprop: TN, E4M3 x E4M3, bias, at 256-byte-aligned pointers and at a later layer's offsets
    GemmKey first = gemm_key(base, CUDA_R_16BF, base + 4096, CUDA_R_8F_E4M3, 1, base + 8192, CUDA_R_8F_E4M3, 0,
                             base + 256, 2304, 8192, 768, 0, 1);
    GemmKey later = gemm_key(base + 16, CUDA_R_16BF, base + 4096 + 48, CUDA_R_8F_E4M3, 1, base + 8192, CUDA_R_8F_E4M3, 0,
                             base + 256 + 8, 2304, 8192, 768, 0, 1);
    CHECK(memcmp(&first, &later, sizeof(first)) != 0 && later.a_align == 16 && later.out_align == 16 &&
              later.bias_align == 8 && first.bias_align == 256 && first.fast_accum == 1,
          "alignment is part of the plan key (a %u out %u bias %u)", later.a_align, later.out_align, later.bias_align);
    GemmKey again = gemm_key(base, CUDA_R_16BF, base + 4096, CUDA_R_8F_E4M3, 1, base + 8192, CUDA_R_8F_E4M3, 0,
                             base + 256, 2304, 8192, 768, 0, 1);
    CHECK(memcmp(&first, &again, sizeof(first)) == 0, "the same call gives the same key (no stray bytes)");
    char err[640];
    CHECK(gemm_problem_check(&first, err, sizeof(err)) == 0 && gemm_problem_check(&later, err, sizeof(err)) == 0,
          "aligned FP8 TN problems pass: %s", err);
    GemmKey misaligned = gemm_key(base, CUDA_R_16BF, base + 4104, CUDA_R_8F_E4M3, 1, base + 8192, CUDA_R_8F_E4M3, 0,
                                  NULL, 2304, 8192, 768, 0, 1);
    CHECK(gemm_problem_check(&misaligned, err, sizeof(err)) != 0 && strstr(err, "16-byte aligned") &&
              strstr(err, "align 8") && strstr(err, "e4m3") && strstr(err, "k 768"),
          "a misaligned FP8 operand is refused with the problem described: %s", err);
    GemmKey nn = gemm_key(base, CUDA_R_16BF, base + 4096, CUDA_R_8F_E4M3, 0, base + 8192, CUDA_R_8F_E5M2, 0, NULL, 768,
                          8192, 2304, 0, 0);
    CHECK(gemm_problem_check(&nn, err, sizeof(err)) != 0 && strstr(err, "TN layout") && strstr(err, "not transposed"),
          "FP8 outside TN is refused: %s", err);
    GemmKey odd = gemm_key(base, CUDA_R_16BF, base + 4096, CUDA_R_8F_E4M3, 1, base + 8192, CUDA_R_8F_E4M3, 0, NULL, 200,
                           64, 64, 0, 0);
    CHECK(gemm_problem_check(&odd, err, sizeof(err)) != 0 && strstr(err, "multiples of 16"), "m 200 refused: %s", err);
    // BF16 problems have no such requirement (cuBLASLt's preferences take their alignment)
    GemmKey bf16 = gemm_key(base + 2, CUDA_R_32F, base + 4098, CUDA_R_16BF, 0, base + 8194, CUDA_R_16BF, 1, NULL, 100,
                            36, 50, 1, 1);
    CHECK(gemm_problem_check(&bf16, err, sizeof(err)) == 0 && bf16.fast_accum == 0 && bf16.a_align == 2,
          "BF16 NT at 2-byte alignment is left to cuBLASLt");
    gemm_describe(err, sizeof(err), &bf16);
    CHECK(strstr(err, "D (100 x 36, fp32, align 2)") && strstr(err, "B bf16 transposed") && strstr(err, "D +="),
          "the description names shapes, types, transposes and accumulation: %s", err);
}

// quantize.cuh's launchers refuse, before any CUDA call, what their kernels cannot do (so no GPU is needed to see it):
// sizes off the vector or the tile, too many tile rows for gridDim.y, misaligned vector loads and stores.
static void test_quantize_launch_preconditions(void) {
    uint8_t* out = (uint8_t*)0x7f0000000000;  // never dereferenced: every call below is refused first
    uint8_t* out_t = (uint8_t*)0x7f0000100000;
    const __nv_bfloat16* inp = (const __nv_bfloat16*)0x7f0000200000;
    float* amax = (float*)0x7f0000300000;
    const float* scale = (const float*)0x7f0000300010;
    fprintf(stderr, "(the launchers' refusals below are expected)\n");
    CHECK(fp8_cast_amax(out, inp + 1, 1024, scale, amax, FP8_E4M3, 132, 0) == cudaErrorInvalidValue, "input at 2 bytes");
    CHECK(fp8_cast_amax(out + 4, inp, 1024, scale, amax, FP8_E4M3, 132, 0) == cudaErrorInvalidValue, "output at 4 bytes");
    CHECK(fp8_cast_amax(out, inp, 1020, scale, amax, FP8_E4M3, 132, 0) == cudaErrorInvalidValue, "n not a multiple of 8");
    CHECK(fp8_cast_transpose_amax(out, out_t, inp + 4, 64, 64, scale, amax, FP8_E4M3, 0) == cudaErrorInvalidValue,
          "transpose input at 8 bytes");
    CHECK(fp8_cast_transpose_amax(out, out_t + 2, inp, 64, 64, scale, amax, FP8_E4M3, 0) == cudaErrorInvalidValue,
          "transposed output at 2 bytes");
    CHECK(fp8_cast_transpose_amax(out, out_t, inp, 96, 64, scale, amax, FP8_E4M3, 0) == cudaErrorInvalidValue,
          "rows off the tile");
    CHECK(fp8_cast_transpose_amax(out, out_t, inp, 65536 * FP8_TRANSPOSE_TILE, 64, scale, amax, FP8_E4M3, 0) ==
              cudaErrorInvalidValue,
          "65536 tile rows: gridDim.y is at most 65535");
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
    RUN_TEST(test_gemm_key_and_checks);
    RUN_TEST(test_quantize_launch_preconditions);
    RUN_TEST(test_encode_against_cuda_fp8);
    RUN_TEST(test_decode_against_cuda_fp8);
    RUN_TEST(test_bf16_against_cuda);
    return test_summary("fp8-cuda-host");
}
