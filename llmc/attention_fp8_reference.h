/*
llmc/attention_fp8_reference.h — the reference of cuDNN's FP8 attention forward (llmc/cudnn_attention.h's
attention_forward_cudnn_fp8) in double, with the bound of each output element derived from the quantizations and
accumulations the kernel does: shared by dev/cuda/attention_cudnn_fp8 (the graphs on their own) and test_gpt_fp8 (the
trainer's -fp8_attention 1 on its own tensors). Host code, plain C.

The reference takes the dequantized q, k, v (code * descale, as the GPU multiplies them) as exact inputs, so what
remains is the kernel's own arithmetic (llmc/tolerance.h's rules; u4 = 2^-4, half an ulp of an E4M3 normal relative
to it; 2^-10 half its subnormal spacing, in scaled units):
  scores  s = q.k * attn_scale from FP8 products (exact) summed by the tensor cores: tolerance_fp8_accumulation(HS)
          * sum|q k| * attn_scale, plus 4 fp32 ulps of |s| for the descale and scale products: ds per row. The
          softmax passes ds on to each probability as a factor within exp(+-2 ds).
  P       quantized (E4M3, scale_s) before it multiplies v: u4 relative, or 2^-10 / scale_s absolute below E4M3's
          normals (the kernel quantizes exp(s - running max) <= 1 and rescales later by factors <= 1, so the bound of
          the normalized P holds; the CPU trainer's emulation, which quantizes the normalized P, is within the same
          bound); P v summed by the tensor cores: tolerance_fp8_accumulation(t + 1); the row sum l in fp32 from the
          unquantized exponentials (tolerance_sum_rn). Element by element, before o's own quantization:
            pre = (expm1(2 ds) + exp(2 ds) (u4 + acc (1 + u4) + 2 sum_rn + 8 fp32 ulps)) sum_u P_u |v_u|
                  + 2^-10 / scale_s * sum_u |v_u|;
          then o quantized with scale_o: u4 of |o| (+ pre), or 2^-10 / scale_o (attention_fp8_output_bound).
  statistics (log-sum-exp): ds + tolerance_sum_rn(t + 1) + 8 fp32 ulps of (1 + |lse|); amax_o within the largest
          pre of max |o|; amax_s = 1 (row 0 of a causal attention has one key: exp(0)).
*/
#ifndef GPTFP8_ATTENTION_FP8_REFERENCE_H
#define GPTFP8_ATTENTION_FP8_REFERENCE_H

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "tolerance.h"

#define E4M3_HALF_ULP 0x1p-4         // u4: half an ulp of an E4M3 normal, relative
#define E5M2_HALF_ULP 0x1p-3         // u3
#define E4M3_HALF_SUBNORMAL 0x1p-10  // half of E4M3's subnormal spacing 2^-9, in scaled units
#define E5M2_HALF_SUBNORMAL 0x1p-17  // half of E5M2's 2^-16

// Row t of head h in batch b: its scores against keys 0..t, their softmax p (t + 1), its log-sum-exp, and the bound ds
// of the GPU's scores (see above). qkv: values (B, T, 3C).
static inline double attention_fp8_softmax_row(double* p, double* ds, const double* qkv, int b, int h, int t, int T,
                                               int C, int NH, double attn_scale) {
    int HS = C / NH;
    double acc = tolerance_fp8_accumulation(HS, 1), maxval = -INFINITY, sum = 0.0, bound = 0.0;
    const double* q = qkv + ((size_t)b * T + t) * 3 * C + (size_t)h * HS;
    for (int u = 0; u <= t; u++) {
        const double* k = qkv + ((size_t)b * T + u) * 3 * C + C + (size_t)h * HS;
        double dot = 0.0, abs_dot = 0.0;
        for (int d = 0; d < HS; d++) {
            dot += q[d] * k[d];
            abs_dot += fabs(q[d] * k[d]);
        }
        p[u] = dot * attn_scale;
        maxval = fmax(maxval, p[u]);
        bound = fmax(bound, acc * abs_dot * attn_scale + 4.0 * FP32_ULP * fabs(p[u]));
    }
    for (int u = 0; u <= t; u++) {
        p[u] = exp(p[u] - maxval);
        sum += p[u];
    }
    for (int u = 0; u <= t; u++) { p[u] /= sum; }
    *ds = bound;
    return maxval + log(sum);
}

// out (B, T, C), lse and ds (B, NH, T), pre (B, T, C): the output, the statistics, the scores' bound, and each output
// element's bound before o's own quantization (see above).
static inline void attention_fp8_reference_forward(double* out, double* lse, double* ds, double* pre,
                                                   const double* qkv, int B, int T, int C, int NH, double attn_scale,
                                                   double descale_s) {
    int HS = C / NH;
#pragma omp parallel for
    for (int bh = 0; bh < B * NH; bh++) {  // (b, h) pairs: a head of a batch row each
        int b = bh / NH, h = bh % NH;
        double* p = (double*)malloc((size_t)T * sizeof(double));
        for (int t = 0; t < T; t++) {
            size_t row = (size_t)bh * T + t;
            lse[row] = attention_fp8_softmax_row(p, &ds[row], qkv, b, h, t, T, C, NH, attn_scale);
            double rel = expm1(2.0 * ds[row]) +
                         exp(2.0 * ds[row]) * (E4M3_HALF_ULP + tolerance_fp8_accumulation(t + 1, 1) *
                                               (1.0 + E4M3_HALF_ULP) + 2.0 * tolerance_sum_rn(t + 1) + 8.0 * FP32_ULP);
            for (int d = 0; d < HS; d++) {
                double o = 0.0, weighted = 0.0, plain = 0.0;
                for (int u = 0; u <= t; u++) {
                    double v = qkv[((size_t)b * T + u) * 3 * C + 2 * C + (size_t)h * HS + d];
                    o += p[u] * v;
                    weighted += p[u] * fabs(v);
                    plain += fabs(v);
                }
                size_t i = ((size_t)b * T + t) * C + (size_t)h * HS + d;
                out[i] = o;
                pre[i] = rel * weighted + E4M3_HALF_SUBNORMAL * descale_s * plain;
            }
        }
        free(p);
    }
}

// The bound of an E4M3 output element against the reference o: pre, then its cast with scale_o = 1 / descale_o
static inline double attention_fp8_output_bound(double o, double pre, double descale_o) {
    return pre + E4M3_HALF_ULP * (fabs(o) + pre) + E4M3_HALF_SUBNORMAL * descale_o;
}

#endif  // GPTFP8_ATTENTION_FP8_REFERENCE_H
