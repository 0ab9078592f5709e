/*
llmc/tolerance.h — how far apart two correct implementations of the same arithmetic may land, written once: every
comparison of GPU numbers with the CPU reference (test_gpt_fp8, dev/cuda/*, the GPU check's xcheck stage) takes its
tolerance from the rules below and says beside it which rule and how many roundings.

Spacing of a stored type with p fraction bits: one ulp of x is between 2^-(p+1) |x| and 2^-p |x| (the upper end at a
power of two), and rounding to nearest moves x by at most half an ulp.
    bf16  p = 7    one ulp <= 2^-7 = 0.78% of the value (2^-8 = 0.39% just below the next power of two)
    fp32  p = 23   one ulp <= 2^-23; unit roundoff 2^-24
    E4M3  p = 3    one ulp <= 2^-3;   E5M2  p = 2   one ulp <= 2^-2

The rules:
  R1 same inputs, same operations in the same order (a cast, the scale update, the amax of one tensor, an element-wise
     kernel written with the same float expressions): the same bits. Compare bits, allow nothing.
  R2 a sum of k terms added in another order (a GEMM, LayerNorm's mean and variance, a softmax's sum): each side is
     within (k - 1) * 2^-24 * sum|terms| of the exact sum, so the two are within 2 (k - 1) * 2^-24 * sum|terms|.
     sum|terms|, not |sum|: cancellation can make the result small and its relative error large.
  R3 a value rounded to a stored type by both sides, from fp32 values that differ by d: the stored values differ by
     at most d + one ulp of the stored type (they round to the same value or to neighbours).
  R4 a chain: a value whose path from identical inputs passes through n stored roundings, each after a computation
     whose order or implementation differs between the sides (R2; and expf, tanhf, rsqrtf, which differ by an fp32 ulp
     or two between CUDA and glibc), differs by at most n ulps of the stored type, relative to the value, provided
     every layer on the path passes a relative difference of its inputs on with a factor of at most 1. LayerNorm
     (which normalizes), residual additions, GELU, softmax and the loss's log-softmax do, for the values that dominate
     a tensor (its largest elements, its norm). Element by element, so for a maximum (an amax): n ulps.
  R5 a norm over a tensor of many elements (a relative L2 error): the n roundings of R4 leave differences at different
     elements, of either sign, independently of each other; the relative L2 error, an rms over the elements, is then
     at most sqrt(n) ulps.

R4 and R5 are bounds, not estimates: a correct GPU lands well inside them (most roundings agree), while a wrong
layout, scale, index or missing term misses by far more than a few ulps.
*/
#ifndef GPTFP8_TOLERANCE_H
#define GPTFP8_TOLERANCE_H

#include <math.h>

#define BF16_ULP 0x1p-7       // one bf16 ulp relative to the value, at its largest (a power of two)
#define FP32_ULP 0x1p-23      // one fp32 ulp relative to the value, at its largest
#define FP32_ROUNDOFF 0x1p-24  // unit roundoff of fp32: round to nearest moves a value by at most this, relative

// R2: two fp32 sums of k terms in different orders differ by at most this times sum|terms|.
static inline double tolerance_sum_orders(double k) { return 2.0 * (k > 1.0 ? k - 1.0 : 0.0) * FP32_ROUNDOFF; }

// R4: a single value (an element, a maximum) after n differing roundings of a stored type with one ulp `ulp`.
static inline double tolerance_chain_max(int roundings, double ulp) { return roundings * ulp; }

// R5: the relative L2 error of a tensor after n differing roundings of a stored type with one ulp `ulp`.
static inline double tolerance_chain_l2(int roundings, double ulp) { return sqrt((double)roundings) * ulp; }

#endif  // GPTFP8_TOLERANCE_H
