/*
fp8/current.h — Transformer Engine's Float8CurrentScaling on the CPU: the cast whose scale comes from the very tensor
it casts. The reference the GPU's current-scaling casts (fp8/quantize.cuh) are checked against, bit for bit.

A current-scaling cast reads its input twice:
  1. amax  = max |x| over the whole tensor (NaN-propagating, as every amax here: fp8_amax_merge's order);
  2. scale = fp8_compute_scale(amax, previous scale, fp8_max, margin)   (fp8/meta.h, the delayed-scaling formula):
             fp8_max / amax / 2^margin; amax 0, inf or NaN keeps the previous scale; FLT_MAX when the quotient
             overflows. scale_inv = 1 / scale;
  3. out   = fp8(x * scale), exactly fp8_quantize.
"Previous scale" is the scale of the slot's last recorded cast, 1.0 before its first (the value fp8_meta_init gives
every slot): the slot's scale cell holds it, so a tensor that is all zeros (or holds an inf or a NaN) is cast with the
scale its slot had, rather than with a made-up one.
Where this differs from TE: TE returns 1.0 for an amax of 0 or inf and a NaN scale for a NaN amax, and
Float8CurrentScaling has no margin (-fp8_margin defaults to 0, which is TE's formula).

Compared to delayed scaling: the scale fits this tensor, never a tensor of an earlier step, so nothing saturates
(but the largest element itself, which x * scale may round one float ulp above fp8_max: the cast then clips it by that
ulp, and the diagnostics count it as saturated), at the price of a second read of the tensor before the cast.
*/
#ifndef GPTFP8_CURRENT_H
#define GPTFP8_CURRENT_H

#include "quantize_cpu.h"

// The GPU's amax pass (fp8/quantize.cuh) runs at most this many blocks; each leaves one partial max in a workspace
// the trainer's memory plan (llmc/memory_plan.h) sizes from this number.
#define FP8_AMAX_MAX_BLOCKS 1024

// max |x| of x (n), NaN-propagating: the bit patterns of magnitudes order like their values, with NaN above +inf.
CPU_MULTIVERSION
static inline float fp8_amax(const float* x, size_t n) {
    uint32_t amax_bits = 0u;
#pragma omp parallel for reduction(max : amax_bits) if (n > CPU_PARALLEL_MIN_PASS_ELEMENTS)
    for (size_t i = 0; i < n; i++) {
        uint32_t magnitude_bits = fp8_float_bits(x[i]) & 0x7FFFFFFFu;
        if (magnitude_bits > amax_bits) { amax_bits = magnitude_bits; }
    }
    return fp8_bits_float(amax_bits);
}

// The same over bf16 storage: a bf16 is the top half of a float, so its magnitude bits shifted up are the float's.
static inline float fp8_amax_bf16(const uint16_t* x, size_t n) {
    uint32_t amax_bits = 0u;
#pragma omp parallel for reduction(max : amax_bits) if (n > CPU_PARALLEL_MIN_PASS_ELEMENTS)
    for (size_t i = 0; i < n; i++) {
        uint32_t magnitude_bits = ((uint32_t)x[i] << 16) & 0x7FFFFFFFu;
        if (magnitude_bits > amax_bits) { amax_bits = magnitude_bits; }
    }
    return fp8_bits_float(amax_bits);
}

// Step 2, on the host and in the GPU cast kernels' prologue: the scale of a tensor whose amax is `amax`, and its
// inverse, given the slot's previous scale.
FP8_HD void fp8_current_scale(float amax, float previous_scale, float fp8_max_value, int margin, float* scale,
                              float* scale_inv) {
    float new_scale = fp8_compute_scale(amax, previous_scale, fp8_max_value, margin);
    *scale = new_scale;
    *scale_inv = 1.0f / new_scale;
}

// The whole current-scaling cast of inp (n) fp32: *scale (the previous scale on entry) and *scale_inv become this
// tensor's, out (n) = fp8(inp * scale) with fp8_quantize, which also merges max |inp| into *amax_row0 (the slot's row
// 0: the step's amax, for the diagnostics) and counts into stats (may be NULL). Returns the tensor's amax.
static inline float fp8_quantize_current(uint8_t* out, const float* inp, size_t n, Fp8Format format, int margin,
                                         float* scale, float* scale_inv, float* amax_row0, Fp8QuantStats* stats) {
    float amax = fp8_amax(inp, n);
    fp8_current_scale(amax, *scale, fp8_max(format), margin, scale, scale_inv);
    fp8_quantize(out, inp, n, format, *scale, amax_row0, stats);
    return amax;
}

// The same from bf16 storage (the GPU's activations and weights are bf16): what the GPU's amax pass + cast computes.
static inline float fp8_quantize_current_bf16(uint8_t* out, const uint16_t* inp, size_t n, Fp8Format format,
                                              int margin, float* scale, float* scale_inv, float* amax_row0,
                                              Fp8QuantStats* stats) {
    float amax = fp8_amax_bf16(inp, n);
    fp8_current_scale(amax, *scale, fp8_max(format), margin, scale, scale_inv);
    fp8_quantize_bf16(out, inp, n, format, *scale, amax_row0, stats);
    return amax;
}

#endif  // GPTFP8_CURRENT_H
