/*
llmc/gelu_math.h — GELU (GPT-2's tanh approximation) and its derivative for one float: the arithmetic of both
trainers, written once (host and device: FP8_HD). The CPU's gelu_forward / gelu_backward (train_gpt_fp8.c) fill their
bf16 lookup tables with these; the GPU's kernels and the FP8 casts with GELU inside them (llmc/gelu.cuh,
llmc/gelu_fp8.cuh) run them element by element. The two sides differ only where CUDA's expf and tanhf differ from
glibc's (an fp32 ulp or two: llmc/tolerance.h's R4) and where nvcc contracts a multiply and an add into an FMA.

    gelu(x)  = x (1 + tanh a) / 2,   a = sqrt(2/pi) (x + 0.044715 x^3)
    gelu'(x) = (1 + tanh a) / 2 + x sech^2(a) / 2 * sqrt(2/pi) (1 + 3 * 0.044715 x^2)

Why the derivative takes both (1 + tanh a) / 2 and sech^2 a from one exponential, e = exp(-2|a|) in (0, 1], with
r = 1 / (1 + e):  (1 + tanh a) / 2 = r when a >= 0 and e r when a < 0;  sech^2 a = 1 - tanh^2 a = 4 e r^2.
  - Accuracy: written as 1 + tanhf(a), the first term subtracts two nearly equal numbers wherever x is below about -3
    (tanh a near -1), and keeps only the bits tanhf got right beyond them. Over every bf16 x with |a| <= 43 (where
    e is a normal float), against the same formula in double from the same float a, this one is within 4.92 * 2^-24
    of |first term| + |second term| (glibc's expf), the tanhf / coshf / 1 / cosh^2 one it replaced within
    428419 * 2^-24 (at x = -5.19): test_gpt_fp8.c's test_gelu_derivative_accuracy.
  - Speed: one expf and one division instead of tanhf, coshf and a division. An H200 timed the backward's FP8 cast
    with GELU inside it (llmc/gelu_fp8.cuh) at 555 us over (65536, 3072), 2.2 TB/s, where the plain cast + transpose
    moves 85% of a copy's bytes: its loop was 634 instructions for 8 elements (nvcc 13, sm_90), about as many as the
    SMs issue in that time at 4 warp instructions a cycle. With this derivative the loop is 465 instructions, and
    gelu_backward_kernel's 16-byte path 379 instead of 523. dev/cuda/gelu_fp8 times the cast against the old one.
Past |a| = 43 the derivative is 1 for x > 0 and below 1e-36 for x < 0; from |x| = 5.04e19 (2^65.45) on, the second
term is 0 * inf, NaN, as in the formula it replaced (llm.c's): such an activation has diverged already, and the NaN
skips the step.
*/
#ifndef GPTFP8_GELU_MATH_H
#define GPTFP8_GELU_MATH_H

#include <math.h>

#include "../fp8/fp8.h"  // FP8_HD: host and device under nvcc, static inline in C

#define GELU_SCALING_FACTOR 0.7978845608028654f  // sqrt(2 / pi)

// a = sqrt(2/pi) (x + 0.044715 x^3), tanh's argument in both functions
FP8_HD float gelu_tanh_argument(float x) {
    float cube = 0.044715f * x * x * x;
    return GELU_SCALING_FACTOR * (x + cube);
}

FP8_HD float gelu_value(float x) { return 0.5f * x * (1.0f + tanhf(gelu_tanh_argument(x))); }

// gelu'(x) from x and its tanh argument a = gelu_tanh_argument(x) (dev/cuda/gelu_fp8 checks the GPU's against the
// formula in double at the a it computed)
FP8_HD float gelu_derivative_at(float x, float a) {
    // exp(-2|a|) in (0, 1]: never overflows. Not from fabsf(a): a NaN a keeps its sign here, so every NaN below is a's
    // own and the result the same NaN whichever operand order a compiler gives the additions (x86 returns the first
    // NaN operand: fabsf's +NaN beside x's -NaN made the bits depend on code generation, as a sanitized build showed)
    float e = expf(a >= 0.0f ? -2.0f * a : 2.0f * a);
    float r = 1.0f / (1.0f + e);  // 1 + e in [1, 2]
    float er = e * r;
    float half_one_plus_tanh = a >= 0.0f ? r : er;  // (1 + tanh a) / 2; NaN a gives er, NaN
    float sech2 = 4.0f * r * er;                    // 4 e r^2
    return half_one_plus_tanh + x * 0.5f * sech2 * GELU_SCALING_FACTOR * (1.0f + 3.0f * 0.044715f * x * x);
}

FP8_HD float gelu_derivative(float x) { return gelu_derivative_at(x, gelu_tanh_argument(x)); }

// What the tests hold gelu_derivative_at(x, a) to (test_gpt_fp8.c on the CPU, dev/cuda/gelu_fp8 on the GPU): its
// formula in double at the same float a and with the code's float constants, written with neither term subtracting
// nearly equal numbers: (1 + tanh a) / 2 = 1 / (1 + exp(-2a)), sech^2 a = 1 / cosh^2 a. *magnitude gets
// |first term| + |second term|, what a relative bound on their sum is relative to. Host code.
static inline double gelu_derivative_exact(float x, float a, double* magnitude) {
    double cosh_a = cosh((double)a);
    double first = 1.0 / (1.0 + exp(-2.0 * (double)a));
    double poly_constant = (double)(3.0f * 0.044715f);  // the constant the float code folds
    double second = (double)x * 0.5 / (cosh_a * cosh_a) * (double)GELU_SCALING_FACTOR *
                    (1.0 + poly_constant * (double)x * (double)x);
    *magnitude = fabs(first) + fabs(second);
    return first + second;
}

#endif  // GPTFP8_GELU_MATH_H
