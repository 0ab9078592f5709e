/*
fp8/quantize_cpu.h — the CPU quantizer: cast a float (or bf16) tensor to FP8 with a slot's scale, max-reducing its
amax into the slot's row 0 and counting what saturated or flushed; and the dequantization back. The reference the GPU
casts (fp8/quantize.cuh, beside it) are checked against, bit for bit. Compiled once per x86 vector instruction set
(fp8/cpu_isa.h), every version giving the same bytes.
*/
#ifndef GPTFP8_QUANTIZE_CPU_H
#define GPTFP8_QUANTIZE_CPU_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cpu_isa.h"
#include "diag.h"
#include "fp8.h"
#include "meta.h"

// ----------------------------------------------------------------------------
// quantize / dequantize references

// One chunk of fp8_quantize: codes into out, and the chunk's max |x| (as bits), saturated and flushed counts. Compiled
// once per instruction set (fp8/cpu_isa.h) and per format (a constant format makes every shift a constant); every
// select in fp8_from_float is branch-free, so the loop vectorizes, and each element's code is the scalar one.
// `scales`: NULL (every element times `scale`), or one scale per element (the block casts, fp8/block.h); a constant
// NULL at an inlined call leaves the plain loop.
typedef struct {
    uint32_t amax_bits, saturated, flushed;
} Fp8ChunkStats;

static inline __attribute__((always_inline)) Fp8ChunkStats fp8_quantize_chunk(uint8_t* out, const float* inp,
                                                                              size_t n, Fp8Format format, float scale,
                                                                              const float* scales) {
    float fp8_max_value = fp8_max(format);
    uint32_t amax_bits = 0, saturated = 0, flushed = 0;
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        float scaled = x * (scales ? scales[i] : scale);
        uint8_t code = fp8_from_float(scaled, format);
        out[i] = code;
        uint32_t magnitude_bits = fp8_float_bits(x) & 0x7FFFFFFFu;
        amax_bits = magnitude_bits > amax_bits ? magnitude_bits : amax_bits;
        saturated += fabsf(scaled) > fp8_max_value;
        flushed += x != 0.0f && (code & 0x7Fu) == 0;
    }
    Fp8ChunkStats stats = {amax_bits, saturated, flushed};
    return stats;
}

// the chunk loop with the format as a constant
static inline __attribute__((always_inline)) Fp8ChunkStats fp8_quantize_chunk_by_format(uint8_t* out, const float* inp,
                                                                                        size_t n, Fp8Format format,
                                                                                        float scale) {
    return format == FP8_E4M3 ? fp8_quantize_chunk(out, inp, n, FP8_E4M3, scale, NULL)
                              : fp8_quantize_chunk(out, inp, n, FP8_E5M2, scale, NULL);
}

typedef Fp8ChunkStats (*Fp8QuantizeChunkFn)(uint8_t* out, const float* inp, size_t n, Fp8Format format, float scale);
CPU_NO_FMA static Fp8ChunkStats fp8_quantize_chunk_baseline(uint8_t* out, const float* inp, size_t n,
                                                            Fp8Format format, float scale) {
    return fp8_quantize_chunk_by_format(out, inp, n, format, scale);
}
#if CPU_ISA_X86
CPU_NO_FMA CPU_TARGET_AVX2 static Fp8ChunkStats fp8_quantize_chunk_avx2(uint8_t* out, const float* inp, size_t n,
                                                                        Fp8Format format, float scale) {
    return fp8_quantize_chunk_by_format(out, inp, n, format, scale);
}
CPU_NO_FMA CPU_TARGET_AVX512 static Fp8ChunkStats fp8_quantize_chunk_avx512(uint8_t* out, const float* inp, size_t n,
                                                                            Fp8Format format, float scale) {
    return fp8_quantize_chunk_by_format(out, inp, n, format, scale);
}
#endif

static inline Fp8QuantizeChunkFn fp8_quantize_chunk_for(CpuIsa isa) {
#if CPU_ISA_X86
    if (isa == CPU_ISA_AVX512) { return fp8_quantize_chunk_avx512; }
    if (isa == CPU_ISA_AVX2) { return fp8_quantize_chunk_avx2; }
#endif
    (void)isa;
    return fp8_quantize_chunk_baseline;
}

// The 256 codes decoded: the very floats fp8_to_float returns, NaN payloads included, so dequantizing is a look-up.
static inline void fp8_decode_table(float decoded[256], Fp8Format format) {
    for (int code = 0; code < 256; code++) { decoded[code] = fp8_to_float((uint8_t)code, format); }
}

// out[i] = decoded[inp[i]] * scale_inv over one chunk (no threads)
static inline void fp8_dequantize_chunk(float* out, const uint8_t* inp, size_t n, const float* decoded,
                                        float scale_inv) {
    for (size_t i = 0; i < n; i++) { out[i] = decoded[inp[i]] * scale_inv; }
}

// out[i] = fp8(inp[i] * scale), and max-reduce max|inp| (unscaled, NaN-propagating) into *amax (a slot's row 0).
// stats may be NULL. With dequantized (else NULL), also dequantized[i] = fp8_to_float(out[i]) * scale_inv in the same
// pass. isa: which version of the loop (tests run them all); the functions below use the best.
static inline void fp8_quantize_isa(CpuIsa isa, uint8_t* out, const float* inp, size_t n, Fp8Format format,
                                    float scale, float* amax, Fp8QuantStats* stats, float* dequantized,
                                    float scale_inv) {
    Fp8QuantizeChunkFn quantize_chunk = fp8_quantize_chunk_for(isa);
    float decoded[256];
    if (dequantized) { fp8_decode_table(decoded, format); }
    uint32_t amax_bits = fp8_float_bits(*amax);  // bit patterns of magnitudes order like their values (NaN on top)
    long long saturated = 0, flushed = 0;
    // In chunks, which count in 32 bits; the max of bit patterns and the counts do not depend on how the chunks are
    // split among threads.
    const size_t chunk = CPU_PARALLEL_MIN_ELEMENTS;
#pragma omp parallel for reduction(max : amax_bits) reduction(+ : saturated, flushed) \
    if (n > CPU_PARALLEL_MIN_PASS_ELEMENTS)
    for (size_t start = 0; start < n; start += chunk) {
        size_t len = n - start < chunk ? n - start : chunk;
        Fp8ChunkStats c = quantize_chunk(out + start, inp + start, len, format, scale);
        if (dequantized) { fp8_dequantize_chunk(dequantized + start, out + start, len, decoded, scale_inv); }
        if (c.amax_bits > amax_bits) { amax_bits = c.amax_bits; }
        saturated += c.saturated;
        flushed += c.flushed;
    }
    *amax = fp8_bits_float(amax_bits);
    if (stats) {
        stats->count += (long long)n;
        stats->saturated += saturated;
        stats->flushed += flushed;
    }
}

static inline void fp8_quantize(uint8_t* out, const float* inp, size_t n, Fp8Format format, float scale, float* amax,
                                Fp8QuantStats* stats) {
    fp8_quantize_isa(cpu_isa_best(), out, inp, n, format, scale, amax, stats, NULL, 1.0f);
}

// fp8_quantize, then fp8_dequantize of its codes with scale_inv, in one pass: the values an FP8 GEMM multiplies.
static inline void fp8_quantize_dequantize(uint8_t* out, float* dequantized, const float* inp, size_t n,
                                           Fp8Format format, float scale, float scale_inv, float* amax,
                                           Fp8QuantStats* stats) {
    fp8_quantize_isa(cpu_isa_best(), out, inp, n, format, scale, amax, stats, dequantized, scale_inv);
}

// The same from bf16 storage (the GPU's activations are bf16).
static inline void fp8_quantize_bf16(uint8_t* out, const uint16_t* inp, size_t n, Fp8Format format, float scale,
                                     float* amax, Fp8QuantStats* stats) {
    const size_t chunk = 4096;
    float widened[4096];
    for (size_t start = 0; start < n; start += chunk) {
        size_t len = n - start < chunk ? n - start : chunk;
        for (size_t i = 0; i < len; i++) { widened[i] = bf16_to_float(inp[start + i]); }
        fp8_quantize(out + start, widened, len, format, scale, amax, stats);
    }
}

// out[i] = fp8_to_float(inp[i]) * scale_inv
static inline void fp8_dequantize(float* out, const uint8_t* inp, size_t n, Fp8Format format, float scale_inv) {
    float decoded[256];
    fp8_decode_table(decoded, format);
    const size_t chunk = CPU_PARALLEL_MIN_ELEMENTS;
#pragma omp parallel for if (n > CPU_PARALLEL_MIN_PASS_ELEMENTS)
    for (size_t start = 0; start < n; start += chunk) {
        fp8_dequantize_chunk(out + start, inp + start, n - start < chunk ? n - start : chunk, decoded, scale_inv);
    }
}

#endif  // GPTFP8_QUANTIZE_CPU_H
