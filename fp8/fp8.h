/*
fp8/fp8.h — the two FP8 number formats and bf16 rounding, written once for the CPU and the GPU.

Everything here is plain integer bit manipulation, so the same functions compile as C (the CPU reference trainer
and the tests) and as CUDA (__host__ __device__), and give the same bits on both.

Formats (OCP FP8, as on Hopper):
  E4M3: 1 sign, 4 exponent (bias 7), 3 mantissa bits. Max 448, smallest normal 2^-6, smallest subnormal 2^-9.
        No infinity; S.1111.111 (0x7F / 0xFF) is NaN, so 0x7E (448) is the largest finite code.
  E5M2: 1 sign, 5 exponent (bias 15), 2 mantissa bits. Max 57344, smallest normal 2^-14, smallest subnormal 2^-16.
        IEEE-like: exponent 11111 is infinity (mantissa 0) or NaN.

fp8_from_float has exactly the semantics of CUDA's __nv_cvt_float_to_fp8(x, __NV_SATFINITE, fmt), which on sm_89+ is
the PTX instruction cvt.rn.satfinite.{e4m3,e5m2}x2.f32:
  - round to nearest, ties to even (on the FP8 grid, subnormals included);
  - anything whose rounded magnitude exceeds the format's max, and +-inf, saturates to +-max ("satfinite");
  - NaN (either sign) becomes the canonical NaN 0x7F;
  - magnitudes that round to zero keep their sign (-tiny -> 0x80).
Why satfinite: delayed scaling uses a scale computed from *earlier* steps, so a tensor can exceed the range; clipping
to max is what Transformer Engine does, and an inf/NaN in an E4M3 GEMM operand would poison the whole output.

The recipe picks the format per tensor: HYBRID means E4M3 for forward tensors (inputs, weights: precision matters)
and E5M2 for backward tensors (gradients: range matters).
*/
#ifndef GPTFP8_FP8_H
#define GPTFP8_FP8_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define FP8_HD __host__ __device__ __forceinline__
#else
#define FP8_HD static inline
#endif

typedef enum { FP8_E4M3 = 0, FP8_E5M2 = 1 } Fp8Format;

#define FP8_E4M3_MAX 448.0f
#define FP8_E5M2_MAX 57344.0f
#define FP8_NAN_CODE 0x7F

// ----------------------------------------------------------------------------
// float <-> bits without aliasing problems (memcpy compiles to a register move)

FP8_HD uint32_t fp8_float_bits(float x) {
    uint32_t bits;
    memcpy(&bits, &x, sizeof(bits));
    return bits;
}

FP8_HD float fp8_bits_float(uint32_t bits) {
    float x;
    memcpy(&x, &bits, sizeof(x));
    return x;
}

// ----------------------------------------------------------------------------
// format parameters

FP8_HD float fp8_max(Fp8Format f) { return f == FP8_E4M3 ? FP8_E4M3_MAX : FP8_E5M2_MAX; }
FP8_HD int fp8_mantissa_bits(Fp8Format f) { return f == FP8_E4M3 ? 3 : 2; }
FP8_HD int fp8_exponent_bias(Fp8Format f) { return f == FP8_E4M3 ? 7 : 15; }
// largest finite code (magnitude): E4M3 0.1111.110 = 448, E5M2 0.11110.11 = 57344
FP8_HD uint8_t fp8_max_code(Fp8Format f) { return f == FP8_E4M3 ? 0x7E : 0x7B; }
FP8_HD const char* fp8_format_name(Fp8Format f) { return f == FP8_E4M3 ? "E4M3" : "E5M2"; }

// Shift right by `shift` (1..31) bits, rounding to nearest with ties to even, for value < 2^31: adding half - 1, plus
// 1 when the kept part is odd, carries into the kept part exactly when the dropped part is above half, or equal to
// half with an odd kept part. No branch, so loops over it vectorize.
FP8_HD uint32_t fp8_shift_right_rne(uint32_t value, int shift) {
    uint32_t half_minus_one = (1u << (shift - 1)) - 1u;
    return (value + half_minus_one + ((value >> shift) & 1u)) >> shift;
}

// ----------------------------------------------------------------------------
// encode: float -> FP8 byte (RNE, satfinite)

// Both roundings (normal and subnormal range) are computed and one is selected, with no branch, so the CPU's quantize
// loops vectorize; the GPU uses its own cvt instruction and never runs this in a hot loop.
FP8_HD uint8_t fp8_from_float(float x, Fp8Format f) {
    uint32_t bits = fp8_float_bits(x);
    uint32_t sign = (bits >> 24) & 0x80u;
    uint32_t magnitude = bits & 0x7FFFFFFFu;
    uint32_t mantissa = magnitude & 0x7FFFFFu;
    int mbits = fp8_mantissa_bits(f);
    int bias = fp8_exponent_bias(f);
    int exponent = (int)(magnitude >> 23) - 127;  // unbiased; float subnormals/zero give -127, inf/NaN 128

    // Normal range: re-bias the exponent and drop 23-mbits mantissa bits with RNE. Rounding up a full mantissa
    // carries into the exponent field, which is the right next value. (Below the normal range this is garbage, and
    // not selected.)
    uint32_t rebiased = ((uint32_t)(exponent + bias) << 23) | mantissa;
    uint32_t normal_code = fp8_shift_right_rne(rebiased, 23 - mbits);

    // Below FP8's smallest normal: the FP8 grid is uniform with step 2^(1-bias-mbits), and the code is the number of
    // steps, rounded to nearest even. A result of 2^mbits steps is the smallest normal, whose code is exactly 2^mbits
    // (exponent field 1, mantissa 0), so the carry needs no special case. |x| / step is exact (a power-of-two
    // scaling of a float), and adding 2^23 rounds it to an integer, ties to even, since the floats in [2^23, 2^24)
    // are the integers: their low mantissa bits are the integer. Float arithmetic rather than a shift by an
    // exponent-dependent count, so that SSE2 (no per-lane shift counts) vectorizes it too. (Values not selected here
    // give garbage bits, never undefined behaviour.)
    float steps = fp8_bits_float(magnitude) * fp8_bits_float((uint32_t)(127 + bias + mbits - 1) << 23);
    uint32_t subnormal_code = fp8_float_bits(steps + 8388608.0f) - 0x4B000000u;  // 0x4B000000 = 2^23

    uint32_t code = exponent < 1 - bias ? subnormal_code : normal_code;
    uint32_t max_code = fp8_max_code(f);
    code = code > max_code ? max_code : code;  // satfinite: beyond max (and +-inf) clip to +-max
    // NaN of either sign -> canonical NaN; magnitudes that round to zero keep their sign
    return magnitude > 0x7F800000u ? (uint8_t)FP8_NAN_CODE : (uint8_t)(sign | code);
}

// ----------------------------------------------------------------------------
// decode: FP8 byte -> float (exact: every FP8 value is a float)

FP8_HD float fp8_to_float(uint8_t v, Fp8Format f) {
    int mbits = fp8_mantissa_bits(f);
    int bias = fp8_exponent_bias(f);
    uint32_t sign = (uint32_t)(v & 0x80u) << 24;
    uint32_t exponent_field = (uint32_t)(v & 0x7Fu) >> mbits;
    uint32_t mantissa = (uint32_t)v & ((1u << mbits) - 1u);
    uint32_t all_ones = (1u << (7 - mbits)) - 1u;
    if (f == FP8_E4M3) {
        if ((v & 0x7Fu) == 0x7Fu) { return fp8_bits_float(0x7FC00000u | sign); }
    } else if (exponent_field == all_ones) {
        return fp8_bits_float(sign | (mantissa ? 0x7FC00000u : 0x7F800000u));
    }
    if (exponent_field == 0) {
        // subnormal: mantissa * 2^(1-bias-mbits); both factors are exact in float
        float step = fp8_bits_float((uint32_t)(127 + 1 - bias - mbits) << 23);
        float magnitude = (float)mantissa * step;
        return fp8_bits_float(fp8_float_bits(magnitude) | sign);
    }
    uint32_t float_exponent = exponent_field - (uint32_t)bias + 127u;
    return fp8_bits_float(sign | (float_exponent << 23) | (mantissa << (23 - mbits)));
}

// Round-trip a float through FP8: what a GEMM sees after quantize + dequantize (before scale_inv).
FP8_HD float fp8_round(float x, Fp8Format f) { return fp8_to_float(fp8_from_float(x, f), f); }

// ----------------------------------------------------------------------------
// bf16: round to nearest even (as __float2bfloat16_rn), used to emulate the GPU's BF16 path on the CPU.
// Unlike FP8 there is no saturation: overflow rounds to +-inf, as IEEE says.

FP8_HD uint16_t bf16_from_float(float x) {
    uint32_t bits = fp8_float_bits(x);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) { return (uint16_t)((bits >> 16) | 0x0040u); }  // keep NaN a (quiet) NaN
    uint32_t lsb = (bits >> 16) & 1u;
    return (uint16_t)((bits + 0x7FFFu + lsb) >> 16);
}

FP8_HD float bf16_to_float(uint16_t v) { return fp8_bits_float((uint32_t)v << 16); }

FP8_HD float bf16_round(float x) { return bf16_to_float(bf16_from_float(x)); }

#endif  // GPTFP8_FP8_H
