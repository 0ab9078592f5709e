/*
train_gpt_fp8.c — the CPU reference trainer: GPT-2 in fp32, in emulated BF16, or in FP8 with any of TE's four recipes
(delayed, current, blockwise, mxfp8 scaling, from fp8/), readable first and parallel (OpenMP) second. It is the oracle
the CUDA trainer is checked against and the trainer CI can run, so it really trains.

Precision modes (-precision):
  fp32  the pure reference.
  bf16  what the GPU's BF16 path computes: every tensor the GPU would store in bf16 (activations, their gradients,
        GEMM outputs) is rounded to bf16 (RNE) after the op that makes it, and every layer reads bf16-rounded
        parameters (weights, biases, LayerNorm parameters, embeddings: the GPU's bf16 copy of the masters), so every
        operand is a bf16 value; accumulation, master weights, AdamW and parameter gradients are fp32.
  fp8   bf16 plus the four linear layers of every block (qkv, attention projection, fc, fc projection) through FP8:
        input and (bf16) weight quantized to E4M3 for fprop, grad_output to E5M2 for dgrad and wgrad (HYBRID), each with its
        module's slot scale; GEMMs accumulate in fp32 on the dequantized values, exactly the numbers a Hopper FP8 GEMM
        multiplies. Attention, LayerNorm, GELU, residuals, softmax/loss and the LM head stay on the bf16 path
        (-fp8_lm_head 1 puts the LM head through FP8 too).

When FP8 quantization happens (Transformer Engine's order):
  - every micro-step: each FP8 GEMM input and grad_output is cast with its slot's current scale, max-reducing its
    amax into row 0 of the slot's history;
  - after the last backward of a step: one update of every forward and backward slot (fp8/meta.h);
  - then AdamW, then each weight is cast to FP8 once with its NEW scale, its amax recorded into the freshly zeroed
    row 0, and that FP8 copy is used by every micro-step of the next step. Before step 0 the initial weights are cast
    with scale 1.0 (TE's first forward).
  Evaluation and sampling use the current scales but record nothing, so they never change the training state.
  With -fp8_recipe current (TE's Float8CurrentScaling, fp8/current.h) every cast that records instead computes its
  tensor's amax first and casts with the scale from that amax, stored in the slot; the end of step only clears row 0.
  Evaluation casts compute their own scales too, but leave the slots alone; the backward's re-cast of an input for
  wgrad reuses the scale of its forward cast (same tensor, same scale, same bytes).
  With -fp8_recipe blockwise or mxfp8 (TE's Float8BlockScaling and MXFP8BlockScaling, fp8/block.h) every block of a
  tensor gets the scale of its own amax, in the cast itself (fp8_block_operand): activations and gradients in blocks
  along their rows for fprop and dgrad and down their columns for wgrad (two casts of each, both from the bf16
  tensor), weights in 128x128 tiles (blockwise: one copy) or 1x32 and 32x1 blocks (mxfp8: two copies). No history,
  no end-of-step update; row 0 still collects each slot's amax for the diagnostics.
  Every one of these casts of a linear layer is asked of one entry point, linear_operand (which tensor, for which
  GEMM), which looks at the recipe once: the layers themselves read the same whatever the recipe.
  A step whose loss or gradient norm is not finite is skipped: no weight update, and the amaxes it recorded for
  inputs and gradients are dropped (row 0 of those slots reset), so the FP8 state stays finite.

The CUDA trainer (train_gpt_fp8.cu) has every function of a step under the same name, with the same arguments in the
same order and the same buffer names (layernorm_forward(out, mean, rstd, inp, weight, bias, B, T, C), linear_forward,
gpt2_forward, gpt2_backward, gpt2_fp8_end_of_step, gpt2_update, ...; its own extras, a stream or a scratch buffer,
come last), and the two mains read the same line for line: test_gpt_fp8.cu compares them function by function.
Shapes: B batch, T time, C channels, NH heads, V vocab, Vp padded vocab, L layers.
*/
#include <errno.h>
#include <float.h>
#include <glob.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "fp8/block.h"
#include "fp8/current.h"
#include "fp8/meta.h"
#include "fp8/quantize_cpu.h"
#include "llmc/args.h"
#include "llmc/checkpoint.h"
#include "llmc/dataloader.h"
#include "llmc/gelu_math.h"
#include "llmc/gemm_cpu.h"
#include "llmc/gpt2.h"
#include "llmc/linear.h"
#include "llmc/rand.h"
#include "llmc/run.h"
#include "llmc/sampling.h"
#include "llmc/schedule.h"
#include "llmc/tokenizer.h"
#include "llmc/utils.h"
#include "llmc/zero.h"

// ----------------------------------------------------------------------------
// the layers, fp32 (precision is handled around them)

CPU_MULTIVERSION
void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T, int C) {
    // out (B, T, C), inp (B, T), wte (Vp, C), wpe (maxT, C)
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            float* out_bt = out + ((size_t)b * T + t) * C;
            const float* wte_ix = wte + (size_t)inp[b * T + t] * C;
            const float* wpe_t = wpe + (size_t)t * C;
            for (int i = 0; i < C; i++) { out_bt[i] = wte_ix[i] + wpe_t[i]; }
        }
    }
}

CPU_MULTIVERSION
void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T, int C) {
    // serial: two positions can share a token, and the order of additions must not depend on threads
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            const float* dout_bt = dout + ((size_t)b * T + t) * C;
            float* dwte_ix = dwte + (size_t)inp[b * T + t] * C;
            float* dwpe_t = dwpe + (size_t)t * C;
            for (int i = 0; i < C; i++) {
                dwte_ix[i] += dout_bt[i];
                dwpe_t[i] += dout_bt[i];
            }
        }
    }
}

CPU_MULTIVERSION
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int B, int T, int C) {
    // out (B, T, C), mean and rstd (B, T) saved for the backward, inp (B, T, C), weight and bias (C)
    const float eps = 1e-5f;
#pragma omp parallel for if ((size_t)B * T * C > CPU_PARALLEL_MIN_PASS_ELEMENTS)
    for (int bt = 0; bt < B * T; bt++) {
        const float* x = inp + (size_t)bt * C;
        float m = 0.0f;
        for (int i = 0; i < C; i++) { m += x[i]; }
        m /= C;
        float v = 0.0f;
        for (int i = 0; i < C; i++) { v += (x[i] - m) * (x[i] - m); }
        v /= C;
        float s = 1.0f / sqrtf(v + eps);
        float* o = out + (size_t)bt * C;
        for (int i = 0; i < C; i++) { o[i] = (s * (x[i] - m)) * weight[i] + bias[i]; }
        mean[bt] = m;
        rstd[bt] = s;
    }
}

// One row's input gradient: dnorm = dout * weight; dx += s * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)), the
// two means summed over channels in order. (The test's reference for layernorm_backward shares it: only the parameter
// gradients below changed their loop structure.)
static inline __attribute__((always_inline)) void layernorm_backward_input_row(float* dx, const float* dout_bt,
                                                                               const float* x, const float* weight,
                                                                               float m, float s, int C) {
    float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
    for (int i = 0; i < C; i++) {
        float norm = (x[i] - m) * s;
        float dnorm = weight[i] * dout_bt[i];
        dnorm_mean += dnorm;
        dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean /= C;
    dnorm_norm_mean /= C;
    for (int i = 0; i < C; i++) {
        float norm = (x[i] - m) * s;
        float dnorm = weight[i] * dout_bt[i];
        dx[i] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
    }
}

CPU_MULTIVERSION
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int B, int T, int C) {
    // dinp per row in parallel; dweight/dbias summed over rows, in row order, per channel, for a block of channels at
    // a time (the SIMD lanes run across channels). The two loops write different tensors, so they share one parallel
    // region and the threads go on from the first to the second without waiting.
    const int channel_block = 256;
#pragma omp parallel if ((size_t)B * T * C > CPU_PARALLEL_MIN_PASS_ELEMENTS)
    {
#pragma omp for nowait
        for (int bt = 0; bt < B * T; bt++) {
            layernorm_backward_input_row(dinp + (size_t)bt * C, dout + (size_t)bt * C, inp + (size_t)bt * C, weight,
                                         mean[bt], rstd[bt], C);
        }
#pragma omp for
        for (int i0 = 0; i0 < C; i0 += channel_block) {
            int n = C - i0 < channel_block ? C - i0 : channel_block;
            float dw[256], db[256];
            for (int i = 0; i < n; i++) { dw[i] = db[i] = 0.0f; }
            for (int bt = 0; bt < B * T; bt++) {
                const float* x = inp + (size_t)bt * C + i0;
                const float* dout_bt = dout + (size_t)bt * C + i0;
                float m = mean[bt], s = rstd[bt];
                for (int i = 0; i < n; i++) {
                    float norm = (x[i] - m) * s;
                    dw[i] += norm * dout_bt[i];
                    db[i] += dout_bt[i];
                }
            }
            for (int i = 0; i < n; i++) {
                dweight[i0 + i] += dw[i];
                dbias[i0 + i] += db[i];
            }
        }
    }
}

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int B, int T, int C,
                    int OC) {
    // out (B, T, OC) = inp (B, T, C) @ weight (OC, C)^T + bias (OC): each output starts at its bias (or 0) and adds
    // its products over c in order (llmc/gemm_cpu.h keeps that order), so the result does not depend on the thread
    // count or the instruction set.
    // A = inp (B*T, C), B = weight^T (C, OC), C = out starting at the bias
    GemmArgs g = {out, (size_t)OC, inp, (size_t)C, 1, weight, 1, (size_t)C, B * T, OC, C, 1, bias};
    gemm_accumulate(&g);
}

// dinp (B, T, C) += dout (B, T, OC) @ weight (OC, C)  (dgrad). NULL dinp: skipped.
// dweight (OC, C) += dout^T @ inp (B, T, C)          (wgrad). NULL dweight: skipped.
// dbias (OC) += sum over rows of dout.                NULL dbias: skipped.
// Every output adds its products in order: dinp over o, dweight over rows, and dbias sums its column from 0 over
// rows before adding it, as the naive loops do.
CPU_MULTIVERSION
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int B, int T, int C, int OC) {
    int rows = B * T;
    if (dinp) {  // A = dout (rows, OC), B = weight (OC, C)
        GemmArgs g = {dinp, (size_t)C, dout, (size_t)OC, 1, weight, (size_t)C, 1, rows, C, OC, 0, NULL};
        gemm_accumulate(&g);
    }
    if (dweight) {  // A = dout^T (OC, rows), B = inp (rows, C)
        GemmArgs g = {dweight, (size_t)C, dout, 1, (size_t)OC, inp, (size_t)C, 1, OC, C, rows, 0, NULL};
        gemm_accumulate(&g);
    }
    if (dbias) {
        // per output a sum over rows in row order; the outputs are independent, so the SIMD lanes run across them
        const int chunk = 256;
#pragma omp parallel for if (OC > chunk && (size_t)rows * OC > CPU_PARALLEL_MIN_PASS_ELEMENTS)
        for (int o0 = 0; o0 < OC; o0 += chunk) {
            int n = OC - o0 < chunk ? OC - o0 : chunk;
            float db[256];
            for (int o = 0; o < n; o++) { db[o] = 0.0f; }
            for (int r = 0; r < rows; r++) {
                const float* dout_r = dout + (size_t)r * OC + o0;
#pragma omp simd
                for (int o = 0; o < n; o++) { db[o] += dout_r[o]; }
            }
            for (int o = 0; o < n; o++) { dbias[o0 + o] += db[o]; }
        }
    }
}

// One head's keys or values (rows t2 of inp (B, T, 3C) at `offset` + h * hs) transposed into rows_t (hs, T), so that
// the loops below run across t2, where the results are independent, and keep each sum over i in order.
static inline void attention_transpose_head(float* rows_t, const float* inp, int b, int h, int T, int C, int hs, int offset) {
    for (int t2 = 0; t2 < T; t2++) {
        const float* row = inp + ((size_t)b * T + t2) * 3 * C + offset + h * hs;
        for (int i = 0; i < hs; i++) { rows_t[(size_t)i * T + t2] = row[i]; }
    }
}

// dots[t2] = sum over i, in order from 0, of x[i] * rows_t[i][t2], for t2 in [0, n): the dot products of x with n rows
// side by side (each lane its own sum, so the loop over t2 vectorizes)
static inline void dots_with_rows(float* dots, const float* x, const float* rows_t, int n, int T, int hs) {
    for (int t2 = 0; t2 < n; t2++) { dots[t2] = 0.0f; }
    for (int i = 0; i < hs; i++) {
        float xi = x[i];
        const float* row_i = rows_t + (size_t)i * T;
        for (int t2 = 0; t2 < n; t2++) { dots[t2] += xi * row_i[t2]; }
    }
}

// FP8 attention's forward (-fp8_attention 1 or 2), what cuDNN's FP8 SDPA forward computes followed by its BF16
// backward (Transformer Engine's NVTE_FP8_DPA_BWD=0): the scores, softmax and values from qkv_fp8, the E4M3 cast of
// q, k, v dequantized (B, T, 3C); the attention weights P quantized with the S slot's scale before they multiply v, as
// cuDNN quantizes them before its second GEMM. cuDNN quantizes each tile's exp(s - running max) and normalizes at the
// end; this quantizes the normalized weights, as Transformer Engine's FP8 emulation of attention does: the same values
// up to one FP8 rounding of each weight. att then holds the weights the BF16 backward differentiates: exp(s - max) /
// sum with s from attention_forward's inp, the q and k the backward reads (with 1 the bf16 GEMM output, as TE keeps
// it; with 2 the E4M3 cast rounded to bf16), and max and sum from the FP8 forward (cuDNN's backward recomputes P from
// q, k and the forward's statistics). attention_forward leaves the largest quantized weight (this cast's amax, 1
// whenever a row has one key) in amax.
typedef struct {
    const float* qkv_fp8;  // (B, T, 3C) the E4M3 cast of q, k, v, dequantized
    float scale, scale_inv;
    Fp8Format format;
    float amax;  // out
} AttentionFp8;

// The rest of query t's forward once its scaled scores pre[0..t] and their max are known: a (T) = softmax of the
// scores (zeros past t), o (hs) = sum over t2 <= t, in order, of a[t2] * v[t2], with fp8 (NULL: none) a[t2] quantized
// for that sum. Returns 1 / the sum of the exponentials. (The test's reference for attention_forward shares it: only
// the score loops changed their structure.)
static inline __attribute__((always_inline)) float attention_softmax_values_row(float* o, float* a, const float* pre,
                                                                                float maxval, const float* inp, int b,
                                                                                int t, int h, int T, int C, int hs,
                                                                                const AttentionFp8* fp8) {
    float sum = 0.0f;
    for (int t2 = 0; t2 <= t; t2++) {
        float e = expf(pre[t2] - maxval);
        a[t2] = e;
        sum += e;
    }
    float inv = sum == 0.0f ? 0.0f : 1.0f / sum;
    for (int t2 = 0; t2 < T; t2++) { a[t2] = t2 <= t ? a[t2] * inv : 0.0f; }
    for (int i = 0; i < hs; i++) { o[i] = 0.0f; }
    for (int t2 = 0; t2 <= t; t2++) {
        const float* v = inp + ((size_t)b * T + t2) * 3 * C + 2 * C + h * hs;
        float w = fp8 ? fp8_round(a[t2] * fp8->scale, fp8->format) * fp8->scale_inv : a[t2];
        for (int i = 0; i < hs; i++) { o[i] += w * v[i]; }
    }
    return inv;
}

CPU_MULTIVERSION
void attention_forward(float* out, float* preatt, float* att, const float* inp, int B, int T, int C, int NH,
                       AttentionFp8* fp8) {
    // inp (B, T, 3C) holds q, k, v; preatt and att (B, NH, T, T) (causal: only t2 <= t used); out (B, T, C).
    // Per (b, h) in parallel: its keys transposed once, then for each query t the scores against keys 0..t side by
    // side, each a dot product summed over i in order. fp8: NULL, or FP8 attention's (the forward from fp8->qkv_fp8,
    // att from inp's q and k: see AttentionFp8).
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    const float* qkv = fp8 ? fp8->qkv_fp8 : inp;  // what the output is computed from
    int failed = 0;
    uint32_t weight_max_bits = 0;  // the largest weight's bits (non-negative floats order as their bits)
#pragma omp parallel reduction(| : failed) reduction(max : weight_max_bits)
    {
        // (hs, T) keys, and with fp8 (hs, T) of inp's keys after them
        float* key_t = (float*)malloc((size_t)hs * T * (fp8 ? 2 : 1) * sizeof(float));
        failed = key_t == NULL;
#pragma omp for collapse(2)
        for (int b = 0; b < B; b++) {
            for (int h = 0; h < NH; h++) {
                if (!key_t) { continue; }
                attention_transpose_head(key_t, qkv, b, h, T, C, hs, C);
                if (fp8) { attention_transpose_head(key_t + (size_t)hs * T, inp, b, h, T, C, hs, C); }
                for (int t = 0; t < T; t++) {
                    const float* q = qkv + ((size_t)b * T + t) * 3 * C + h * hs;
                    float* pre = preatt + (((size_t)b * NH + h) * T + t) * T;
                    float* a = att + (((size_t)b * NH + h) * T + t) * T;
                    dots_with_rows(pre, q, key_t, t + 1, T, hs);
                    float maxval = -FLT_MAX;
                    for (int t2 = 0; t2 <= t; t2++) {
                        float dot = pre[t2] * scale;
                        pre[t2] = dot;
                        if (dot > maxval) { maxval = dot; }
                    }
                    float inv = attention_softmax_values_row(out + ((size_t)b * T + t) * C + h * hs, a, pre, maxval,
                                                             qkv, b, t, h, T, C, hs, fp8);
                    if (fp8) {
                        for (int t2 = 0; t2 <= t; t2++) {
                            uint32_t bits = fp8_float_bits(a[t2]);
                            weight_max_bits = bits > weight_max_bits ? bits : weight_max_bits;
                        }
                        // the backward's weights: inp's scores with the FP8 forward's max and sum
                        dots_with_rows(a, inp + ((size_t)b * T + t) * 3 * C + h * hs, key_t + (size_t)hs * T, t + 1,
                                       T, hs);
                        for (int t2 = 0; t2 <= t; t2++) { a[t2] = expf(a[t2] * scale - maxval) * inv; }
                    }
                }
            }
        }
        free(key_t);
    }
    if (failed) { die("out of memory for attention scratch (%d x %d floats per thread)", hs, T); }
    if (fp8) { fp8->amax = fp8_bits_float(weight_max_bits); }
}

// Query t's backward from its attention gradient da (T) on: through the softmax, dpre += a * (da - dot), then
// through pre = scale * q.k into dq of t and dk of every t2 <= t (dinp (B, T, 3C)), each in t2 order. dot is
// sum(a * da), or with o (hs; NULL: none) sum(dout_t * o): cuDNN's D = rowsum(dO * O), which FP8 attention's BF16
// backward takes from the stored FP8 output (its weights were quantized, so it is not sum(a * da)). (The test's
// reference for attention_backward shares it: only the value loops changed their structure.)
static inline __attribute__((always_inline)) void attention_backward_scores_row(float* dinp, float* dpre,
                                                                                const float* a, const float* da,
                                                                                const float* dout_t, const float* o,
                                                                                const float* inp, int b, int t, int h,
                                                                                int T, int C, int hs, float scale) {
    const float* q = inp + ((size_t)b * T + t) * 3 * C + h * hs;
    float* dq = dinp + ((size_t)b * T + t) * 3 * C + h * hs;
    float dot = 0.0f;
    if (o) {
        for (int i = 0; i < hs; i++) { dot += dout_t[i] * o[i]; }
    } else {
        for (int t2 = 0; t2 <= t; t2++) { dot += a[t2] * da[t2]; }
    }
    for (int t2 = 0; t2 <= t; t2++) { dpre[t2] += a[t2] * (da[t2] - dot); }
    for (int t2 = 0; t2 <= t; t2++) {
        const float* k = inp + ((size_t)b * T + t2) * 3 * C + C + h * hs;
        float* dk = dinp + ((size_t)b * T + t2) * 3 * C + C + h * hs;
        float g = dpre[t2] * scale;
        for (int i = 0; i < hs; i++) {
            dq[i] += k[i] * g;
            dk[i] += q[i] * g;
        }
    }
}

CPU_MULTIVERSION
void attention_backward(float* dinp, float* dpreatt, float* datt, const float* dout, const float* inp,
                        const float* att, const float* out, int B, int T, int C, int NH) {
    // dinp (B, T, 3C): dq of position t gets one writer, but dk/dv of t2 get writes from every t >= t2, so the loop
    // runs per (b, h) in parallel and over t serially, which keeps the order of additions fixed. The head's values
    // are transposed once, so the dot products with dout_t run side by side (each summed over i in order). out
    // (B, T, C): NULL, or FP8 attention's stored output, whose dot with dout the softmax's backward takes
    // (attention_backward_scores_row).
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    int failed = 0;
#pragma omp parallel reduction(| : failed)
    {
        float* value_t = (float*)malloc(((size_t)hs + 1) * T * sizeof(float));  // (hs, T), then T dot products
        failed = value_t == NULL;
#pragma omp for collapse(2)
        for (int b = 0; b < B; b++) {
            for (int h = 0; h < NH; h++) {
                if (!value_t) { continue; }
                float* dots = value_t + (size_t)hs * T;
                attention_transpose_head(value_t, inp, b, h, T, C, hs, 2 * C);
                for (int t = 0; t < T; t++) {
                    const float* a = att + (((size_t)b * NH + h) * T + t) * T;
                    float* da = datt + (((size_t)b * NH + h) * T + t) * T;
                    float* dpre = dpreatt + (((size_t)b * NH + h) * T + t) * T;
                    const float* dout_t = dout + ((size_t)b * T + t) * C + h * hs;
                    // out = sum a[t2] v[t2]
                    dots_with_rows(dots, dout_t, value_t, t + 1, T, hs);
                    for (int t2 = 0; t2 <= t; t2++) {
                        float* dv = dinp + ((size_t)b * T + t2) * 3 * C + 2 * C + h * hs;
                        for (int i = 0; i < hs; i++) { dv[i] += a[t2] * dout_t[i]; }
                        da[t2] += dots[t2];
                    }
                    const float* o = out ? out + ((size_t)b * T + t) * C + h * hs : NULL;
                    attention_backward_scores_row(dinp, dpre, a, da, dout_t, o, inp, b, t, h, T, C, hs, scale);
                }
            }
        }
        free(value_t);
    }
    if (failed) { die("out of memory for attention scratch (%d x %d floats per thread)", hs + 1, T); }
}

// GELU of one value and its derivative: gelu_value and gelu_derivative (llmc/gelu_math.h, the GPU's arithmetic too).
// In bf16 and fp8 modes every GELU input is a bf16 value (fch is stored in bf16), so its output and derivative are
// one of 65536 values each: computed once by those functions, then looked up by the bf16 bits, which gives the same
// floats without the libm calls (tanhf, expf) per element. Any other input is computed as it comes.
static float gelu_value_of_bf16[65536];       // indexed by the top 16 bits of a float whose low 16 bits are 0
static float gelu_derivative_of_bf16[65536];
static int gelu_tables_filled = 0;

static void gelu_fill_tables(void) {  // called outside parallel regions, so one thread fills them
    if (gelu_tables_filled) { return; }
#pragma omp parallel for
    for (int bits = 0; bits < 65536; bits++) {
        float x = bf16_to_float((uint16_t)bits);
        gelu_value_of_bf16[bits] = gelu_value(x);
        gelu_derivative_of_bf16[bits] = gelu_derivative(x);
    }
    gelu_tables_filled = 1;
}

static inline int is_bf16_value(float x) { return (fp8_float_bits(x) & 0xFFFFu) == 0; }

CPU_MULTIVERSION
void gelu_forward(float* out, const float* inp, size_t N) {
    gelu_fill_tables();
#pragma omp parallel for if (N > CPU_PARALLEL_MIN_PASS_ELEMENTS)
    for (size_t i = 0; i < N; i++) {
        float x = inp[i];
        out[i] = is_bf16_value(x) ? gelu_value_of_bf16[fp8_float_bits(x) >> 16] : gelu_value(x);
    }
}

CPU_MULTIVERSION
void gelu_backward(float* dinp, const float* inp, const float* dout, size_t N) {
    gelu_fill_tables();
#pragma omp parallel for if (N > CPU_PARALLEL_MIN_PASS_ELEMENTS)
    for (size_t i = 0; i < N; i++) {
        float x = inp[i];
        float grad = is_bf16_value(x) ? gelu_derivative_of_bf16[fp8_float_bits(x) >> 16] : gelu_derivative(x);
        dinp[i] += grad * dout[i];
    }
}

CPU_MULTIVERSION
void residual_forward(float* out, const float* inp1, const float* inp2, size_t N) {
    for (size_t i = 0; i < N; i++) { out[i] = inp1[i] + inp2[i]; }
}

CPU_MULTIVERSION
void residual_backward(float* dinp1, float* dinp2, const float* dout, size_t N) {
    for (size_t i = 0; i < N; i++) {
        dinp1[i] += dout[i];
        dinp2[i] += dout[i];
    }
}

CPU_MULTIVERSION
void softmax_forward(float* probs, const float* logits, int B, int T, int V, int Vp) {
    // probs (B, T, Vp) over the real vocabulary [0, V); padded entries are 0
#pragma omp parallel for if ((size_t)B * T * V > CPU_PARALLEL_MIN_ELEMENTS)
    for (int bt = 0; bt < B * T; bt++) {
        const float* l = logits + (size_t)bt * Vp;
        float* p = probs + (size_t)bt * Vp;
        float maxval = -FLT_MAX;
        for (int i = 0; i < V; i++) { maxval = l[i] > maxval ? l[i] : maxval; }
        float sum = 0.0f;
        for (int i = 0; i < V; i++) {
            p[i] = expf(l[i] - maxval);
            sum += p[i];
        }
        for (int i = 0; i < V; i++) { p[i] /= sum; }
        for (int i = V; i < Vp; i++) { p[i] = 0.0f; }
    }
}

void crossentropy_forward(float* losses, const float* probs, const int* targets, int B, int T, int Vp) {
    for (int bt = 0; bt < B * T; bt++) { losses[bt] = -logf(probs[(size_t)bt * Vp + targets[bt]]); }
}

CPU_MULTIVERSION
void crossentropy_softmax_backward(float* dlogits, const float* dlosses, const float* probs, const int* targets,
                                   int B, int T, int V, int Vp) {
#pragma omp parallel for if ((size_t)B * T * V > CPU_PARALLEL_MIN_ELEMENTS)
    for (int bt = 0; bt < B * T; bt++) {
        float* dl = dlogits + (size_t)bt * Vp;
        const float* p = probs + (size_t)bt * Vp;
        float d = dlosses[bt];
        for (int i = 0; i < V; i++) { dl[i] += (p[i] - (i == targets[bt] ? 1.0f : 0.0f)) * d; }
    }
}

// ----------------------------------------------------------------------------
// the model

#define NUM_ACTIVATION_TENSORS 23
typedef struct {
    float* encoded;    // (B, T, C)
    float* ln1;        // (L, B, T, C)
    float* ln1_mean;   // (L, B, T)
    float* ln1_rstd;   // (L, B, T)
    float* qkv;        // (L, B, T, 3C)
    float* atty;       // (L, B, T, C)
    float* preatt;     // (L, B, NH, T, T)
    float* att;        // (L, B, NH, T, T)
    float* attproj;    // (L, B, T, C)
    float* residual2;  // (L, B, T, C)
    float* ln2;        // (L, B, T, C)
    float* ln2_mean;   // (L, B, T)
    float* ln2_rstd;   // (L, B, T)
    float* fch;        // (L, B, T, 4C)
    float* fch_gelu;   // (L, B, T, 4C)
    float* fcproj;     // (L, B, T, C)
    float* residual3;  // (L, B, T, C)
    float* lnf;        // (B, T, C)
    float* lnf_mean;   // (B, T)
    float* lnf_rstd;   // (B, T)
    float* logits;     // (B, T, Vp)
    float* probs;      // (B, T, Vp)
    float* losses;     // (B, T)
} ActivationTensors;

// B * T fits an int (run_setup checks), so every size but the attention matrices' fits 64 bits (at most
// L * B * T * 4C = 2^59); those (L, B, NH, T, T) can pass it and saturate at SIZE_MAX (size_mul), as does the total.
static size_t fill_in_activation_sizes(size_t* act_sizes, const GPT2Config* config, int B, int T) {
    size_t C = config->channels, NH = config->num_heads, L = config->num_layers, Vp = config->padded_vocab_size;
    size_t BT = (size_t)B * T, att = size_mul(L * (size_t)B, NH * T * (size_t)T);
    size_t sizes[NUM_ACTIVATION_TENSORS] = {BT * C,     L * BT * C,     L * BT,         L * BT,     L * BT * 3 * C,
                                            L * BT * C, att,            att,            L * BT * C, L * BT * C,
                                            L * BT * C, L * BT,         L * BT,         L * BT * 4 * C, L * BT * 4 * C,
                                            L * BT * C, L * BT * C,     BT * C,         BT,         BT,
                                            BT * Vp,    BT * Vp,        BT};
    memcpy(act_sizes, sizes, sizeof(sizes));
    size_t total = 0;
    for (int i = 0; i < NUM_ACTIVATION_TENSORS; i++) { total = size_add(total, sizes[i]); }
    return total;
}

static void point_activations(ActivationTensors* acts, float* memory, const size_t* act_sizes) {
    float** ptrs[NUM_ACTIVATION_TENSORS] = {
        &acts->encoded,  &acts->ln1,       &acts->ln1_mean, &acts->ln1_rstd,  &acts->qkv,       &acts->atty,
        &acts->preatt,   &acts->att,       &acts->attproj,  &acts->residual2, &acts->ln2,       &acts->ln2_mean,
        &acts->ln2_rstd, &acts->fch,       &acts->fch_gelu, &acts->fcproj,    &acts->residual3, &acts->lnf,
        &acts->lnf_mean, &acts->lnf_rstd,  &acts->logits,   &acts->probs,     &acts->losses};
    for (int i = 0; i < NUM_ACTIVATION_TENSORS; i++) {
        *(ptrs[i]) = memory;
        memory += act_sizes[i];
    }
}

typedef struct {
    GPT2Config config;
    // parameters, their gradients and AdamW moments: one buffer each, laid out as ParameterTensors
    size_t param_sizes[NUM_PARAMETER_TENSORS];
    size_t num_parameters;
    // the fp32 master weights: what AdamW updates and checkpoints store (all P of them; this rank's optimizer updates
    // its shard, the ranks then all-gather; the GPU keeps only the shard's in master_memory)
    ParameterTensors master;
    float* master_memory;
    // what every layer reads (weights, biases, LayerNorm parameters, embeddings; the FP8 weights are cast from it):
    // in bf16 and fp8 modes a bf16-rounded copy of the masters, the values of the GPU's bf16 params_memory, refreshed
    // whenever the masters change (gpt2_cast_weights_fp8); in fp32 mode the masters themselves
    ParameterTensors params;
    float* params_memory;
    ParameterTensors grads;
    float* grads_memory;
    int num_processes, process_rank;  // data-parallel ranks (1, 0 in one process; several only in the tests)
    ZeroShard shard;  // the parameters this rank's optimizer owns (all of them in one process)
    float* m_memory;      // (shard.count) AdamW moments of parameters shard.offset...
    float* v_memory;      // (shard.count)
    // activations and their gradients for batch B x T
    ActivationTensors acts;
    ActivationTensors grads_acts;
    size_t act_sizes[NUM_ACTIVATION_TENSORS];
    float* acts_memory;
    float* grads_acts_memory;
    size_t num_activations;
    int B, T;  // the batch it was allocated for (a forward may run fewer: sampling runs B = 1)
    int total_batch;     // tokens per optimizer step (-d), recorded in checkpoints; B*T*processes unless main sets it
    const int* inputs;   // (B, T) of the last forward
    const int* targets;  // (B, T) or NULL
    float mean_loss;     // of the last forward with targets
    float grad_norm;     // of the last gpt2_grad_norm, which gpt2_update clips by
    // precision
    Precision precision;
    Fp8Recipe recipe;
    int fp8_bf16_first_last;  // this many blocks at each end stay BF16
    int fp8_lm_head;          // the LM head through FP8 too
    int fp8_attention;        // -fp8_attention: the FP8 blocks' attention forward in FP8 (llmc/linear.h)
    int training;           // quantizations record amaxes (training) or not (evaluation, sampling)
    Fp8Meta fp8;              // all modules' histories and scales (modules 0..4L-1, the LM head, then with
                              // -fp8_attention one attention module per block)
    float* weight_dequantized;        // dequantized FP8 weights, the values FP8 GEMMs see; per module at weight_fp8_offset
    float* weight_dequantized_columnwise;  // mxfp8 only: the weights' 32x1-block copy dgrad multiplies, same offsets
    size_t* weight_fp8_offset;
    Fp8QuantStats* fp8_stats; // per slot, since the last diagnostics line
    float* fp8_last_amax;     // per slot: row 0 as the last update saw it (this step's amax)
    float* fp8_window_amax;   // per slot: the amax its scale came from (delayed: the window at the last end of step;
                              // the other recipes: its last recorded cast), for the diagnostics
    Fp8BlockScaleRange* fp8_block_scale_range;  // block recipes, per slot: block scales since the last diagnostics line
    // GEMM operand scratch: the FP8 bytes, and operands rounded or dequantized
    uint8_t* scratch_fp8;
    float* scratch_inp;
    float* scratch_dout;
} GPT2;

// Shape and tensors of a linear module: out (B, T, OC) = inp (B, T, IC) @ weight (OC, IC)^T + bias. weight and bias
// are the values the layer computes with (params), dweight and dbias the fp32 gradients.
typedef struct {
    float *weight, *bias, *dweight, *dbias;
    int IC, OC;
} LinearModule;

static LinearModule linear_module(GPT2* model, int module) {
    LinearLayout ll = linear_layout(&model->config, module);
    LinearModule lm = {model->params_memory + ll.weight_offset,
                       ll.has_bias ? model->params_memory + ll.bias_offset : NULL,
                       model->grads_memory + ll.weight_offset, ll.has_bias ? model->grads_memory + ll.bias_offset : NULL,
                       ll.IC, ll.OC};
    return lm;
}

// Which GEMMs of a module go through FP8, and so which casts it makes: llmc/linear.h's rules, for this model.
static LinearPrecision gpt2_linear_precision(const GPT2* m) {
    LinearPrecision p = {m->precision, &m->recipe, m->fp8_bf16_first_last, m->fp8_lm_head, m->config.num_layers,
                         m->fp8_attention};
    return p;
}

// In bf16 and fp8 modes every stored activation and activation gradient is a bf16 value, as on the GPU.
CPU_MULTIVERSION
static void round_to_storage(const GPT2* model, float* x, size_t n) {
    if (model->precision == PRECISION_FP32) { return; }
#pragma omp parallel for if (n > CPU_PARALLEL_MIN_PASS_ELEMENTS)
    for (size_t i = 0; i < n; i++) { x[i] = bf16_round(x[i]); }
}

// The masters changed (init, load, update, all-gather): in bf16 and fp8 modes round every parameter to bf16 into
// params, as the GPU's AdamW and upload write its bf16 copy. fp32 mode reads the masters directly.
CPU_MULTIVERSION
static void gpt2_refresh_compute_params(GPT2* model) {
    if (model->precision == PRECISION_FP32) { return; }
    const float* master = model->master_memory;
    float* rounded = model->params_memory;
#pragma omp parallel for if (model->num_parameters > CPU_PARALLEL_MIN_ELEMENTS)
    for (size_t i = 0; i < model->num_parameters; i++) { rounded[i] = bf16_round(master[i]); }
}

// Quantize x with the slot's scale (recording its amax when the model records and `record` says so) and return
// the dequantized values, fp8(x * scale) * scale_inv, in dst: exactly the operand an FP8 GEMM multiplies.
// `record` 0 marks a re-cast of a tensor already cast with the slot's scale (wgrad's input, resumed weights).
// Current scaling: a new cast (`record` 1) takes its scale from x's own amax (fp8/current.h) and, when the model
// records, leaves it in the slot; an evaluation cast keeps its scale to itself.
static const float* fp8_operand(GPT2* model, float* dst, const float* x, size_t n, int slot, int record) {
    Fp8Meta* meta = &model->fp8;
    Fp8Format format = fp8_meta_slot_format(meta, slot);
    int recording = record && model->training;
    float discarded_amax = 0.0f;
    float* amax = recording ? fp8_meta_amax_row0(meta, slot) : &discarded_amax;
    Fp8QuantStats* stats = recording ? &model->fp8_stats[slot] : NULL;
    float scale = meta->scale[slot], scale_inv = meta->scale_inv[slot];
    if (record && model->recipe.scaling == FP8_SCALING_CURRENT) {
        float tensor_amax = fp8_quantize_current(model->scratch_fp8, x, n, format, model->recipe.margin, &scale,
                                                 &scale_inv, amax, stats);
        if (recording) {
            meta->scale[slot] = scale;
            meta->scale_inv[slot] = scale_inv;
            model->fp8_window_amax[slot] = tensor_amax;
        }
        fp8_dequantize(dst, model->scratch_fp8, n, format, scale_inv);
    } else {
        fp8_quantize_dequantize(model->scratch_fp8, dst, x, n, format, scale, scale_inv, amax, stats);
    }
    return dst;
}

// Block recipes (-fp8_recipe blockwise | mxfp8, fp8/block.h): cast x (rows, cols) in blocks of `shape` (the recipe's
// blocks for this copy of the operand, fp8_block_shape), each block with the scale of its own amax, and return the
// dequantized values in dst. Every cast is a quantization of its own (the columnwise copy is cast from x, not from the
// rowwise copy), so each one that records counts into the slot's diagnostics, max-reduces x's amax into its row 0 and
// leaves it as the slot's window amax; `record` 0 (resumed weights) and evaluation casts record nothing.
static const float* fp8_block_operand(GPT2* model, float* dst, const float* x, size_t rows, size_t cols, int slot,
                                      Fp8BlockShape shape, int record) {
    Fp8Meta* meta = &model->fp8;
    Fp8BlockCast cast = fp8_block_cast_of(&model->recipe, fp8_meta_slot_format(meta, slot));
    int recording = record && model->training;
    Fp8QuantStats* stats = recording ? &model->fp8_stats[slot] : NULL;
    Fp8BlockScaleRange* range = recording ? &model->fp8_block_scale_range[slot] : NULL;
    float tensor_amax = 0.0f;
    // blocks down the columns too (shape.cols 1): the GEMM here multiplies the values, in x's layout, so the codes
    // are left in x's layout as well (the GPU's columnwise copy is transposed for its TN-only GEMMs: the same bytes)
    fp8_quantize_blocks(model->scratch_fp8, dst, NULL, x, rows, cols, shape, &cast, &tensor_amax, stats, range);
    if (recording) {
        float* row0 = fp8_meta_amax_row0(meta, slot);
        *row0 = fp8_amax_merge(*row0, tensor_amax);
        model->fp8_window_amax[slot] = tensor_amax;
    }
    return dst;
}

// Whether a request casts (Transformer Engine's update_workspace, for its cached FP8 weights): LINEAR_CAST casts now,
// recording what the recipe records (every request of x and dy; the weights after an update); LINEAR_CAST_UNRECORDED
// casts the weights again without recording (on resume: the checkpoint's FP8 state already holds their cast);
// LINEAR_CAST_KEPT reads the weights' copies the last cast made (the GEMMs of every micro-step).
typedef enum { LINEAR_CAST, LINEAR_CAST_UNRECORDED, LINEAR_CAST_KEPT } LinearCastMode;

// The one FP8 cast entry point of the linear layers, looking at the recipe once, as Transformer Engine's cast
// dispatch does (common/cast/dispatch/): returns what `operand`'s GEMM multiplies, x (rows, cols) itself where that
// GEMM runs in BF16 (or fp32), else the dequantized values of x's FP8 cast (in the operand scratch; a weight's in its
// copy at weight_fp8_offset), making the casts the recipe makes at this point and recording what it records.
// A tensor the recipe scales the same whichever way a GEMM reads it (per-tensor scaling, delayed or current: one
// scale; blockwise: a weight's 128x128 tiles) is cast once, by its first request (fprop's for x and W, dgrad's for
// dy), when any of its GEMMs runs in FP8: an fprop overridden to BF16 with an FP8 wgrad still casts x in the forward,
// recording the amax the scale of wgrad's copy comes from. Its later requests read that cast: dy's kept in the
// scratch, W's copy, and x's made again with the same scale, not recorded (the same bytes; the CPU keeps no FP8 x
// from the forward to the backward, the GPU keeps its x^T). Every other tensor (a block recipe's x and dy, mxfp8's W)
// gets a cast of its own for each FP8 GEMM, from the high-precision tensor, recorded, in the blocks along the way that
// GEMM reads it: along the rows for fprop and dgrad, down the columns for wgrad and for mxfp8's dgrad copy of W.
static const float* linear_operand(GPT2* model, int module, LinearOperand operand, const float* x, size_t rows,
                                   LinearCastMode mode) {
    LinearPrecision lp = gpt2_linear_precision(model);
    LinearTensor tensor = linear_operand_use[operand].tensor;
    int columnwise = linear_operand_use[operand].columnwise;
    int cast_at_all = tensor == LINEAR_INPUT         ? linear_casts_input(&lp, module)
                      : tensor == LINEAR_GRAD_OUTPUT ? linear_casts_grad_output(&lp, module)
                                                     : linear_casts_weight(&lp, module);
    if (!cast_at_all) { return x; }  // no GEMM reads this tensor in FP8 (none does outside fp8 mode)
    // the recipe: one scale for the whole tensor, or blocks along the way this GEMM reads it (and the other way)
    int block_scaled = fp8_recipe_is_block_scaled(&model->recipe);
    Fp8BlockShape blocks = {0, 0}, other_way = {0, 0};
    if (block_scaled) {
        blocks = fp8_block_shape(model->recipe.scaling, tensor == LINEAR_WEIGHT, columnwise);
        other_way = fp8_block_shape(model->recipe.scaling, tensor == LINEAR_WEIGHT, !columnwise);
    }
    int cast_once = blocks.rows == other_way.rows && blocks.cols == other_way.cols;
    int fp8 = linear_gemm_is_fp8(&lp, module, linear_operand_use[operand].gemm);
    int cast_now, record = mode == LINEAR_CAST;
    if (mode == LINEAR_CAST_KEPT) {  // the weights' copies, cast after the last update
        cast_now = 0;
    } else if (!cast_once) {  // a cast of its own for each FP8 GEMM
        cast_now = fp8;
    } else if (!columnwise) {  // x's and W's request for fprop, dy's for dgrad: the tensor's first, its one cast
        cast_now = 1;
    } else {  // a later request: x made again for an FP8 wgrad (the forward's cast is not kept), not recorded
        cast_now = tensor == LINEAR_INPUT && fp8;
        record = 0;
    }
    // FP8 attention casts attproj's input (its output) and records it: the GEMM's requests re-cast it unrecorded
    if (tensor == LINEAR_INPUT && linear_input_is_attention_output(&lp, module)) { record = 0; }
    LinearModule lm = linear_module(model, module);
    size_t cols = (size_t)(tensor == LINEAR_GRAD_OUTPUT ? lm.OC : lm.IC);
    int slot = tensor == LINEAR_GRAD_OUTPUT ? fp8_meta_bwd_slot(&model->fp8, module, FP8_BWD_GRAD_OUTPUT)
               : tensor == LINEAR_INPUT     ? fp8_meta_fwd_slot(&model->fp8, module, FP8_FWD_INPUT)
                                            : fp8_meta_fwd_slot(&model->fp8, module, FP8_FWD_WEIGHT);
    float* weight_copy = columnwise && !cast_once ? model->weight_dequantized_columnwise : model->weight_dequantized;
    float* dst = tensor == LINEAR_INPUT         ? model->scratch_inp
                 : tensor == LINEAR_GRAD_OUTPUT ? model->scratch_dout
                                                : weight_copy + model->weight_fp8_offset[module];
    if (cast_now && block_scaled) {
        fp8_block_operand(model, dst, x, rows, cols, slot, blocks, record);
    } else if (cast_now) {
        fp8_operand(model, dst, x, rows * cols, slot, record);
    }
    return fp8 ? dst : x;
}

// After the masters change: refresh the bf16 parameters the layers read (bf16 and fp8 modes), then cast every FP8
// module's (bf16) weight with its current scale into weight_dequantized (and, mxfp8, dgrad's copy into
// weight_dequantized_columnwise); `record`: max-reduce its amax into row 0.
// Called before step 0 (scale 1.0) and after every optimizer update (new scales); on resume without recording,
// since the checkpoint's row 0 already holds these weights' amax. (The GPU refreshes its bf16 copy in AdamW and the
// all-gather, before its own gpt2_cast_weights_fp8: the same point of the step.)
static void gpt2_cast_weights_fp8(GPT2* model, int record) {
    gpt2_refresh_compute_params(model);
    if (model->precision != PRECISION_FP8) { return; }
    int saved = model->training;
    model->training = 1;
    LinearCastMode mode = record ? LINEAR_CAST : LINEAR_CAST_UNRECORDED;
    for (int module = 0; module < linear_num_modules(model->config.num_layers); module++) {
        LinearModule lm = linear_module(model, module);
        linear_operand(model, module, LINEAR_WEIGHT_FPROP, lm.weight, (size_t)lm.OC, mode);
        linear_operand(model, module, LINEAR_WEIGHT_DGRAD, lm.weight, (size_t)lm.OC, mode);
    }
    model->training = saved;
}

// out (B, T, OC) = inp (B, T, IC) @ W^T + b through the module's precision. In bf16 and fp8 modes the activations
// are already bf16 values, and so are the weights and the bias (params).
void linear_forward(GPT2* model, int module, float* out, const float* inp, int B, int T) {
    LinearModule lm = linear_module(model, module);
    size_t BT = (size_t)B * T;
    const float* x = linear_operand(model, module, LINEAR_INPUT_FPROP, inp, BT, LINEAR_CAST);
    const float* w = linear_operand(model, module, LINEAR_WEIGHT_FPROP, lm.weight, (size_t)lm.OC, LINEAR_CAST_KEPT);
    matmul_forward(out, x, w, lm.bias, B, T, lm.IC, lm.OC);
    round_to_storage(model, out, BT * lm.OC);
}

// dinp (B, T, IC) += dout @ W (dgrad), dW += dout^T @ inp (wgrad), db += sum(dout), each GEMM in its precision.
void linear_backward(GPT2* model, int module, float* dinp, const float* dout, const float* inp, int B, int T) {
    LinearModule lm = linear_module(model, module);
    size_t BT = (size_t)B * T;
    // the bias gradient comes from the high-precision grad_output (TE computes it in the cast kernel)
    if (lm.dbias) { matmul_backward(NULL, NULL, lm.dbias, dout, NULL, NULL, B, T, lm.IC, lm.OC); }
    // dgrad: dinp = dout @ W, reducing over OC
    const float* dy = linear_operand(model, module, LINEAR_GRAD_OUTPUT_DGRAD, dout, BT, LINEAR_CAST);
    const float* w = linear_operand(model, module, LINEAR_WEIGHT_DGRAD, lm.weight, (size_t)lm.OC, LINEAR_CAST_KEPT);
    matmul_backward(dinp, NULL, NULL, dy, NULL, w, B, T, lm.IC, lm.OC);
    // wgrad: dW = dout^T @ inp, reducing over the B*T tokens
    const float* x = linear_operand(model, module, LINEAR_INPUT_WGRAD, inp, BT, LINEAR_CAST);
    dy = linear_operand(model, module, LINEAR_GRAD_OUTPUT_WGRAD, dout, BT, LINEAR_CAST);
    matmul_backward(NULL, lm.dweight, NULL, dy, x, NULL, B, T, lm.IC, lm.OC);
}

typedef struct {
    GPT2Config config;
    Precision precision;
    Fp8Recipe recipe;
    int fp8_bf16_first_last;
    int fp8_lm_head;
    int fp8_attention;
    int num_processes, process_rank, zero_stage;  // which optimizer shard this model updates (llmc/zero.h)
} ModelOptions;

// The model a run's flags ask for (main, and the dev tools that rebuild a run's model: dev/one_step.h)
static ModelOptions model_options_from_args(const TrainArgs* args, const GPT2Config* config) {
    ModelOptions opt;
    memset(&opt, 0, sizeof(opt));
    opt.config = *config;
    opt.precision = args->precision;
    opt.recipe = args->recipe;
    opt.fp8_bf16_first_last = args->fp8_bf16_first_last;
    opt.fp8_lm_head = args->fp8_lm_head;
    opt.fp8_attention = args->fp8_attention;
    return opt;
}

// Allocates everything for batch B x T; parameters must be filled by the caller (random init or a file).
static void gpt2_allocate(GPT2* model, const ModelOptions* opt, int B, int T) {
    memset(model, 0, sizeof(*model));
    model->config = opt->config;
    model->precision = opt->precision;
    model->recipe = opt->recipe;
    model->fp8_bf16_first_last = opt->fp8_bf16_first_last;
    model->fp8_lm_head = opt->fp8_lm_head;
    model->fp8_attention = opt->fp8_attention;
    model->B = B;
    model->T = T;
    model->training = 1;
    // the activations first: their size is the one flags can make impossible, refused before anything is allocated
    model->num_activations = fill_in_activation_sizes(model->act_sizes, &model->config, B, T);
    if (size_mul(model->num_activations, 2 * sizeof(float)) == SIZE_MAX) {
        die("-b %d -t %d: the activations (L %d, NH %d, an (L, B, NH, T, T) attention matrix) need more than 2^64 "
            "bytes", B, T, opt->config.num_layers, opt->config.num_heads);
    }
    fill_in_parameter_sizes(model->param_sizes, &model->config);
    model->num_parameters = 0;
    for (int i = 0; i < NUM_PARAMETER_TENSORS; i++) { model->num_parameters += model->param_sizes[i]; }
    model->master_memory = (float*)calloc_or_die(model->num_parameters, sizeof(float), "parameters");
    model->params_memory = model->precision == PRECISION_FP32
                                 ? model->master_memory
                                 : (float*)calloc_or_die(model->num_parameters, sizeof(float), "bf16 parameters");
    model->grads_memory = (float*)calloc_or_die(model->num_parameters, sizeof(float), "gradients");
    model->num_processes = opt->num_processes > 1 ? opt->num_processes : 1;
    model->process_rank = model->num_processes > 1 ? opt->process_rank : 0;
    model->shard = zero_shard(model->num_parameters, model->num_processes, model->process_rank, opt->zero_stage);
    model->total_batch = (int)((long long)B * T * model->num_processes);
    model->m_memory = (float*)calloc_or_die(model->shard.count, sizeof(float), "AdamW m");
    model->v_memory = (float*)calloc_or_die(model->shard.count, sizeof(float), "AdamW v");
    point_parameters(&model->master, model->master_memory, model->param_sizes);
    point_parameters(&model->params, model->params_memory, model->param_sizes);
    point_parameters(&model->grads, model->grads_memory, model->param_sizes);
    model->acts_memory = (float*)calloc_or_die(model->num_activations, sizeof(float), "activations");
    model->grads_acts_memory = (float*)calloc_or_die(model->num_activations, sizeof(float), "activation gradients");
    point_activations(&model->acts, model->acts_memory, model->act_sizes);
    point_activations(&model->grads_acts, model->grads_acts_memory, model->act_sizes);
    size_t C = model->config.channels, Vp = model->config.padded_vocab_size, BT = (size_t)B * T;
    size_t widest = 4 * C > Vp ? 4 * C : Vp;
    size_t widest_weight = Vp * C > 4 * C * C ? Vp * C : 4 * C * C;
    model->scratch_fp8 = (uint8_t*)calloc_or_die(BT * widest > widest_weight ? BT * widest : widest_weight, 1, "FP8 scratch");
    model->scratch_inp = (float*)calloc_or_die(BT * 4 * C, sizeof(float), "operand scratch");
    model->scratch_dout = (float*)calloc_or_die(BT * widest, sizeof(float), "gradient scratch");
    if (model->precision == PRECISION_FP8) {
        char err[256];
        // the LM head's slots exist always and stay 0 unless it is FP8; FP8 attention's modules only with the flag
        int modules = fp8_num_modules(model->config.num_layers, model->fp8_attention);
        if (fp8_meta_init(&model->fp8, modules, &model->recipe, err, sizeof(err))) { die("%s", err); }
        model->weight_fp8_offset = (size_t*)calloc_or_die((size_t)modules, sizeof(size_t), "FP8 weight offsets");
        LinearPrecision lp = gpt2_linear_precision(model);
        size_t total = fp8_weight_layout(&model->config, &lp, model->weight_fp8_offset, 0);
        model->weight_dequantized = (float*)calloc_or_die(total, sizeof(float), "FP8 weights");
        if (model->recipe.scaling == FP8_SCALING_MXFP8) {
            model->weight_dequantized_columnwise = (float*)calloc_or_die(total, sizeof(float), "FP8 weights (dgrad)");
        }
        model->fp8_stats = (Fp8QuantStats*)calloc_or_die((size_t)model->fp8.num_slots, sizeof(Fp8QuantStats), "FP8 stats");
        model->fp8_last_amax = (float*)calloc_or_die((size_t)model->fp8.num_slots, sizeof(float), "FP8 amaxes");
        model->fp8_window_amax = (float*)calloc_or_die((size_t)model->fp8.num_slots, sizeof(float), "FP8 amaxes");
        model->fp8_block_scale_range = (Fp8BlockScaleRange*)calloc_or_die((size_t)model->fp8.num_slots,
                                                                          sizeof(Fp8BlockScaleRange), "FP8 block scales");
        for (int slot = 0; slot < model->fp8.num_slots; slot++) {
            fp8_block_scale_range_reset(&model->fp8_block_scale_range[slot]);
        }
    }
}

static void gpt2_free(GPT2* model) {
    if (model->params_memory != model->master_memory) { free(model->params_memory); }
    free(model->master_memory);
    free(model->grads_memory);
    free(model->m_memory);
    free(model->v_memory);
    free(model->acts_memory);
    free(model->grads_acts_memory);
    free(model->scratch_fp8);
    free(model->scratch_inp);
    free(model->scratch_dout);
    if (model->precision == PRECISION_FP8) {
        fp8_meta_free(&model->fp8);
        free(model->weight_dequantized);
        free(model->weight_fp8_offset);
        free(model->fp8_stats);
        free(model->fp8_last_amax);
        free(model->fp8_window_amax);
        free(model->fp8_block_scale_range);
        free(model->weight_dequantized_columnwise);
    }
}

// FP8 attention (-fp8_attention 1 or 2), block l's forward casts (llmc/linear.h says whose slots they use): q, k, v
// cast once to E4M3 with the qkv GEMM's output slot (recorded, counted), the dequantized values into scratch_inp for
// the forward (AttentionFp8's qkv_fp8; cuDNN reads the codes with their scale_inv, in fp32); and the softmax output's
// scale, block l's attention module's S slot. What the BF16 backward reads stays in qkv: with 1 the GEMM's output as
// it is, with 2 (training) the dequantized values rounded to bf16 in its place (llmc/linear.h's FP8_ATTENTION_MHA).
static AttentionFp8 attention_fp8_forward_casts(GPT2* model, int l, float* qkv, size_t n) {
    int qkv_slot = fp8_meta_fwd_slot(&model->fp8, l * LINEARS_PER_BLOCK + LINEAR_QKV, FP8_FWD_OUTPUT);
    int s_slot = fp8_meta_fwd_slot(&model->fp8, fp8_attention_module(model->config.num_layers, l), FP8_ATTENTION_S);
    AttentionFp8 fp8 = {fp8_operand(model, model->scratch_inp, qkv, n, qkv_slot, 1), model->fp8.scale[s_slot],
                        model->fp8.scale_inv[s_slot], fp8_meta_slot_format(&model->fp8, s_slot), 0.0f};
    if (model->fp8_attention == FP8_ATTENTION_MHA && model->training) {
        memcpy(qkv, fp8.qkv_fp8, n * sizeof(float));
        round_to_storage(model, qkv, n);
    }
    return fp8;
}

// After the attention: the amaxes of the softmax output and of the output out (B, T, C) recorded (training), and out
// cast with attproj's input slot, its dequantized values left in out (bf16): cuDNN's E4M3 output, which attproj's
// GEMM reads as it is (its own request of that input records nothing, linear_operand) and the BF16 backward reads
// dequantized. No counts for either cast: cuDNN's graph returns their amaxes only.
static void attention_fp8_output(GPT2* model, int l, const AttentionFp8* fp8, float* out, size_t n) {
    Fp8Meta* meta = &model->fp8;
    int s_slot = fp8_meta_fwd_slot(meta, fp8_attention_module(model->config.num_layers, l), FP8_ATTENTION_S);
    int o_slot = fp8_meta_fwd_slot(meta, l * LINEARS_PER_BLOCK + LINEAR_ATTPROJ, FP8_FWD_INPUT);
    float discarded_amax = 0.0f;
    float* o_amax = model->training ? fp8_meta_amax_row0(meta, o_slot) : &discarded_amax;
    if (model->training) {
        float* s_amax = fp8_meta_amax_row0(meta, s_slot);
        *s_amax = fp8_amax_merge(*s_amax, fp8->amax);
    }
    fp8_quantize_dequantize(model->scratch_fp8, model->scratch_inp, out, n, fp8_meta_slot_format(meta, o_slot),
                            meta->scale[o_slot], meta->scale_inv[o_slot], o_amax, NULL);
    memcpy(out, model->scratch_inp, n * sizeof(float));
    round_to_storage(model, out, n);
}

void gpt2_forward(GPT2* model, const int* inputs, const int* targets, int B, int T) {
    // inputs and targets (B, T); B and T may be smaller than allocated (sampling uses B = 1)
    int C = model->config.channels, NH = model->config.num_heads, L = model->config.num_layers;
    int V = model->config.vocab_size, Vp = model->config.padded_vocab_size;
    if (B > model->B || T > model->T) { die("forward with B=%d T=%d beyond the allocated size", B, T); }
    for (int i = 0; i < B * T; i++) {
        if (inputs[i] < 0 || inputs[i] >= V || (targets && (targets[i] < 0 || targets[i] >= V))) {
            die("token id %d at position %d is outside the vocabulary [0, %d)",
                inputs[i] < 0 || inputs[i] >= V ? inputs[i] : targets[i], i, V);
        }
    }
    model->inputs = inputs;
    model->targets = targets;
    ParameterTensors p = model->params;
    ActivationTensors a = model->acts;
    LinearPrecision lp = gpt2_linear_precision(model);
    size_t BTC = (size_t)B * T * C;
    encoder_forward(a.encoded, inputs, p.wte, p.wpe, B, T, C);
    round_to_storage(model, a.encoded, BTC);
    for (int l = 0; l < L; l++) {
        const float* residual = l == 0 ? a.encoded : a.residual3 + (size_t)(l - 1) * BTC;
        float* ln1 = a.ln1 + (size_t)l * BTC;
        float* ln1_mean = a.ln1_mean + (size_t)l * B * T;
        float* ln1_rstd = a.ln1_rstd + (size_t)l * B * T;
        float* qkv = a.qkv + (size_t)l * BTC * 3;
        float* atty = a.atty + (size_t)l * BTC;
        float* preatt = a.preatt + (size_t)l * B * NH * T * T;
        float* att = a.att + (size_t)l * B * NH * T * T;
        float* attproj = a.attproj + (size_t)l * BTC;
        float* residual2 = a.residual2 + (size_t)l * BTC;
        float* ln2 = a.ln2 + (size_t)l * BTC;
        float* ln2_mean = a.ln2_mean + (size_t)l * B * T;
        float* ln2_rstd = a.ln2_rstd + (size_t)l * B * T;
        float* fch = a.fch + (size_t)l * BTC * 4;
        float* fch_gelu = a.fch_gelu + (size_t)l * BTC * 4;
        float* fcproj = a.fcproj + (size_t)l * BTC;
        float* residual3 = a.residual3 + (size_t)l * BTC;
        int module = l * LINEARS_PER_BLOCK;

        layernorm_forward(ln1, ln1_mean, ln1_rstd, residual, p.ln1w + l * C, p.ln1b + l * C, B, T, C);
        round_to_storage(model, ln1, BTC);
        linear_forward(model, module + LINEAR_QKV, qkv, ln1, B, T);
        if (attention_is_fp8(&lp, l)) {
            AttentionFp8 fp8 = attention_fp8_forward_casts(model, l, qkv, BTC * 3);
            attention_forward(atty, preatt, att, qkv, B, T, C, NH, &fp8);
            attention_fp8_output(model, l, &fp8, atty, BTC);
        } else {
            attention_forward(atty, preatt, att, qkv, B, T, C, NH, NULL);
            round_to_storage(model, atty, BTC);
        }
        linear_forward(model, module + LINEAR_ATTPROJ, attproj, atty, B, T);
        residual_forward(residual2, residual, attproj, BTC);
        round_to_storage(model, residual2, BTC);
        layernorm_forward(ln2, ln2_mean, ln2_rstd, residual2, p.ln2w + l * C, p.ln2b + l * C, B, T, C);
        round_to_storage(model, ln2, BTC);
        linear_forward(model, module + LINEAR_FC, fch, ln2, B, T);
        gelu_forward(fch_gelu, fch, BTC * 4);
        round_to_storage(model, fch_gelu, BTC * 4);
        linear_forward(model, module + LINEAR_FCPROJ, fcproj, fch_gelu, B, T);
        residual_forward(residual3, residual2, fcproj, BTC);
        round_to_storage(model, residual3, BTC);
    }
    const float* last = a.residual3 + (size_t)(L - 1) * BTC;
    layernorm_forward(a.lnf, a.lnf_mean, a.lnf_rstd, last, p.lnfw, p.lnfb, B, T, C);
    round_to_storage(model, a.lnf, BTC);
    linear_forward(model, linear_lm_head(model->config.num_layers), a.logits, a.lnf, B, T);
    softmax_forward(a.probs, a.logits, B, T, V, Vp);
    if (targets) {
        crossentropy_forward(a.losses, a.probs, targets, B, T, Vp);
        double sum = 0.0;  // serial, so the mean does not depend on threads
        for (int i = 0; i < B * T; i++) { sum += a.losses[i]; }
        model->mean_loss = (float)(sum / (B * T));
    } else {
        model->mean_loss = -1.0f;
    }
}

void gpt2_zero_grad(GPT2* model) { memset(model->grads_memory, 0, model->num_parameters * sizeof(float)); }

// Backward of the last forward; parameter gradients accumulate (scaled by loss_scale = 1/grad_accum_steps).
void gpt2_backward(GPT2* model, float loss_scale) {
    if (!model->targets) { die("backward needs a forward with targets"); }
    int B = model->B, T = model->T;
    int C = model->config.channels, NH = model->config.num_heads, L = model->config.num_layers;
    int V = model->config.vocab_size, Vp = model->config.padded_vocab_size;
    memset(model->grads_acts_memory, 0, model->num_activations * sizeof(float));
    ParameterTensors p = model->params, g = model->grads;
    ActivationTensors a = model->acts, d = model->grads_acts;
    size_t BTC = (size_t)B * T * C;
    LinearPrecision lp = gpt2_linear_precision(model);
    float dloss = loss_scale / (float)(B * T);  // d(mean loss)/d(loss_bt)
    for (int i = 0; i < B * T; i++) { d.losses[i] = dloss; }
    crossentropy_softmax_backward(d.logits, d.losses, a.probs, model->targets, B, T, V, Vp);
    round_to_storage(model, d.logits, (size_t)B * T * Vp);
    linear_backward(model, linear_lm_head(model->config.num_layers), d.lnf, d.logits, a.lnf, B, T);
    round_to_storage(model, d.lnf, BTC);
    float* dlast = d.residual3 + (size_t)(L - 1) * BTC;
    layernorm_backward(dlast, g.lnfw, g.lnfb, d.lnf, a.residual3 + (size_t)(L - 1) * BTC, p.lnfw, a.lnf_mean,
                       a.lnf_rstd, B, T, C);
    round_to_storage(model, dlast, BTC);
    for (int l = L - 1; l >= 0; l--) {
        const float* residual = l == 0 ? a.encoded : a.residual3 + (size_t)(l - 1) * BTC;
        float* dresidual = l == 0 ? d.encoded : d.residual3 + (size_t)(l - 1) * BTC;
        size_t o1 = (size_t)l * BTC, o3 = o1 * 3, o4 = o1 * 4, ob = (size_t)l * B * T;
        size_t oa = (size_t)l * B * NH * T * T;
        int module = l * LINEARS_PER_BLOCK;
        // residual3 = residual2 + fcproj
        residual_backward(d.residual2 + o1, d.fcproj + o1, d.residual3 + o1, BTC);
        linear_backward(model, module + LINEAR_FCPROJ, d.fch_gelu + o4, d.fcproj + o1, a.fch_gelu + o4, B, T);
        round_to_storage(model, d.fch_gelu + o4, BTC * 4);
        gelu_backward(d.fch + o4, a.fch + o4, d.fch_gelu + o4, BTC * 4);
        round_to_storage(model, d.fch + o4, BTC * 4);
        linear_backward(model, module + LINEAR_FC, d.ln2 + o1, d.fch + o4, a.ln2 + o1, B, T);
        round_to_storage(model, d.ln2 + o1, BTC);
        layernorm_backward(d.residual2 + o1, g.ln2w + l * C, g.ln2b + l * C, d.ln2 + o1, a.residual2 + o1,
                           p.ln2w + l * C, a.ln2_mean + ob, a.ln2_rstd + ob, B, T, C);
        round_to_storage(model, d.residual2 + o1, BTC);
        // residual2 = residual + attproj
        residual_backward(dresidual, d.attproj + o1, d.residual2 + o1, BTC);
        linear_backward(model, module + LINEAR_ATTPROJ, d.atty + o1, d.attproj + o1, a.atty + o1, B, T);
        round_to_storage(model, d.atty + o1, BTC);
        attention_backward(d.qkv + o3, d.preatt + oa, d.att + oa, d.atty + o1, a.qkv + o3, a.att + oa,
                           attention_is_fp8(&lp, l) ? a.atty + o1 : NULL, B, T, C, NH);
        round_to_storage(model, d.qkv + o3, BTC * 3);
        linear_backward(model, module + LINEAR_QKV, d.ln1 + o1, d.qkv + o3, a.ln1 + o1, B, T);
        round_to_storage(model, d.ln1 + o1, BTC);
        layernorm_backward(dresidual, g.ln1w + l * C, g.ln1b + l * C, d.ln1 + o1, residual, p.ln1w + l * C,
                           a.ln1_mean + ob, a.ln1_rstd + ob, B, T, C);
        round_to_storage(model, dresidual, BTC);
    }
    encoder_backward(g.wte, g.wpe, d.encoded, model->inputs, B, T, C);
}

// ----------------------------------------------------------------------------
// end of step: FP8 update, gradient norm, AdamW

// The FP8 end-of-step: all-reduce hook, then the update rule for every slot (fp8/meta.h). `step` is the optimizer
// step that just finished. (Current scaling: no reduction, and the update only clears row 0.)
void gpt2_fp8_end_of_step(GPT2* model, int step) {
    if (model->precision != PRECISION_FP8) { return; }
    fp8_meta_reduce_amax(&model->fp8, &model->recipe);
    memcpy(model->fp8_last_amax, model->fp8.amax_history, (size_t)model->fp8.num_slots * sizeof(float));
    if (fp8_recipe_has_history(&model->recipe)) { fp8_meta_window_amax(&model->fp8, &model->recipe, model->fp8_window_amax); }
    fp8_meta_update(&model->fp8, &model->recipe, step);
}

// A skipped step must not leave its (possibly non-finite) activation and gradient amaxes behind; weight slots keep
// theirs (fp8_meta_drop_step_amaxes).
static void gpt2_fp8_drop_step_amaxes(GPT2* model) {
    if (model->precision != PRECISION_FP8) { return; }
    fp8_meta_drop_step_amaxes(&model->fp8);
}

// Sum of squares of the gradients this rank's optimizer owns (all of them in one process): fixed chunks summed in
// double, then the chunks in order, so the result does not depend on the thread count. Ranks add their sums.
CPU_MULTIVERSION
double gpt2_grad_norm_squared(const GPT2* model) {
    const size_t chunk = 1 << 16;
    const float* grads = model->grads_memory + model->shard.offset;
    size_t n = model->shard.count, num_chunks = (n + chunk - 1) / chunk;
    double* partial = (double*)calloc_or_die(num_chunks, sizeof(double), "norm partials");
#pragma omp parallel for if (num_chunks > 1)
    for (size_t c = 0; c < num_chunks; c++) {
        double s = 0.0;
        size_t end = (c + 1) * chunk < n ? (c + 1) * chunk : n;
        for (size_t i = c * chunk; i < end; i++) { s += (double)grads[i] * grads[i]; }
        partial[c] = s;
    }
    double total = 0.0;
    for (size_t c = 0; c < num_chunks; c++) { total += partial[c]; }
    free(partial);
    return total;
}

// Global L2 norm of the gradients (one process), into model->grad_norm: non-finite if any gradient is.
// gpt2_grad_norm_value reads it (the GPU's waits for it there).
void gpt2_grad_norm(GPT2* model) { model->grad_norm = (float)sqrt(gpt2_grad_norm_squared(model)); }
float gpt2_grad_norm_value(const GPT2* model) { return model->grad_norm; }

// AdamW (decoupled weight decay on the 2-D tensors only) on fp32 master weights, after clipping the gradients to a
// global norm of grad_clip (the norm gpt2_grad_norm left in the model). t is the 1-based step for the bias
// corrections. Only the parameters of this rank's optimizer shard are updated (all of them in one process); with
// ZeRO-1 the ranks then all-gather the rest.
CPU_MULTIVERSION
void gpt2_update(GPT2* model, float learning_rate, float beta1, float beta2, float eps, float weight_decay,
                 float grad_clip, int t) {
    float grad_norm = model->grad_norm;
    float clip_scale = grad_norm > grad_clip ? grad_clip / grad_norm : 1.0f;
    float bias1 = 1.0f - powf(beta1, (float)t), bias2 = 1.0f - powf(beta2, (float)t);
    const ZeroShard* shard = &model->shard;
    // one parallel region for all the tensors: each thread goes on to the next tensor without waiting (every element
    // is updated on its own), so the step pays one barrier here rather than one per tensor
#pragma omp parallel if (shard->count > CPU_PARALLEL_MIN_ELEMENTS)
    {
        size_t offset = 0;
        for (int tensor = 0; tensor < NUM_PARAMETER_TENSORS; tensor++) {
            float decay = parameter_tensor_is_2d(tensor) ? weight_decay : 0.0f;
            size_t n = model->param_sizes[tensor], lo, hi;
            if (zero_shard_overlap(shard, offset, n, &lo, &hi)) {
#pragma omp for nowait
                for (size_t i = lo; i < hi; i++) {
                    size_t k = i - shard->offset;  // the moments are stored for the shard only
                    float grad = model->grads_memory[i] * clip_scale;
                    float m = beta1 * model->m_memory[k] + (1.0f - beta1) * grad;
                    float v = beta2 * model->v_memory[k] + (1.0f - beta2) * grad * grad;
                    model->m_memory[k] = m;
                    model->v_memory[k] = v;
                    float m_hat = m / bias1, v_hat = v / bias2;
                    model->master_memory[i] -=
                        learning_rate * (m_hat / (sqrtf(v_hat) + eps) + decay * model->master_memory[i]);
                }
            }
            offset += n;
        }
    }
}

// ----------------------------------------------------------------------------
// model and state files

// The run's state as a checkpoint header (precision, FP8 shape, batch, step, RNG, data position).
static StateHeader gpt2_state_header(const GPT2* model, int step, uint64_t rng_state, const DataLoader* loader) {
    StateHeader h;
    memset(&h, 0, sizeof(h));
    h.num_processes = model->num_processes;
    h.process_rank = model->process_rank;
    h.opt_offset = (int64_t)model->shard.offset;
    h.opt_count = (int64_t)model->shard.count;
    h.precision = model->precision;
    h.fp8_modules = model->precision == PRECISION_FP8 ? model->fp8.num_modules : 0;
    h.recipe = model->recipe;
    if (model->precision != PRECISION_FP8) { fp8_recipe_default(&h.recipe); }
    h.fp8_bf16_first_last = model->fp8_bf16_first_last;
    h.fp8_lm_head = model->fp8_lm_head;
    h.fp8_attention = model->fp8_attention;
    h.B = model->B;
    h.T = model->T;
    h.total_batch = model->total_batch;
    h.step = step;
    h.num_parameters = (int64_t)model->num_parameters;
    h.rng_state = rng_state;
    h.shard_index = loader ? (int64_t)loader->current_shard_idx : 0;
    h.shard_position = loader ? (int64_t)loader->current_position : 0;
    return h;
}

// The FP8 arrays a state file holds (NULL without FP8): the metadata and the diagnostics state.
static StateFp8Arrays gpt2_state_fp8_arrays(GPT2* model) {
    StateFp8Arrays a = {model->fp8.memory, model->fp8_last_amax, model->fp8_window_amax, model->fp8_stats,
                        fp8_recipe_is_block_scaled(&model->recipe) ? model->fp8_block_scale_range : NULL};
    return a;
}

static void gpt2_save_checkpoint(GPT2* model, const char* dir, int step, uint64_t rng_state, const DataLoader* loader,
                                 const CheckpointRunState* run_state) {
    StateHeader h = gpt2_state_header(model, step, rng_state, loader);
    checkpoint_run_state_put(&h, run_state);
    StateFp8Arrays fp8 = gpt2_state_fp8_arrays(model);
    checkpoint_save(dir, step, &model->config, model->master_memory, model->m_memory, model->v_memory, &h,
                    model->precision == PRECISION_FP8 ? &fp8 : NULL);
}

// Restores parameters, AdamW moments and the FP8 state of checkpoint `step` in `dir`; returns the RNG state and the
// data position through the pointers.
static void gpt2_load_checkpoint(GPT2* model, const char* dir, int step, uint64_t* rng_state, size_t* shard_index,
                                 size_t* shard_position, CheckpointRunState* run_state) {
    StateHeader h = gpt2_state_header(model, step, 0, NULL);
    StateFp8Arrays fp8 = gpt2_state_fp8_arrays(model);
    checkpoint_load(dir, step, &model->config, model->master_memory, model->m_memory, model->v_memory, &h,
                    model->precision == PRECISION_FP8 ? &fp8 : NULL);
    checkpoint_run_state_get(&h, run_state);
    *rng_state = h.rng_state;
    *shard_index = (size_t)h.shard_index;
    *shard_position = (size_t)h.shard_position;
}

// ----------------------------------------------------------------------------
// FP8 diagnostics: per slot amax, scale, and the fractions saturated / flushed to zero since the last line

static void write_fp8_diagnostics(GPT2* model, FILE* f, int step) {
    if (model->precision != PRECISION_FP8 || !f) { return; }
    LinearPrecision lp = gpt2_linear_precision(model);
    int block_scaled = fp8_recipe_is_block_scaled(&model->recipe);
    fp8_diag_write_block(f, step, &model->fp8, &lp, model->fp8_last_amax, model->fp8_window_amax, model->fp8_stats,
                         block_scaled ? model->fp8_block_scale_range : NULL);
    memset(model->fp8_stats, 0, (size_t)model->fp8.num_slots * sizeof(Fp8QuantStats));
    for (int slot = 0; slot < model->fp8.num_slots; slot++) {
        fp8_block_scale_range_reset(&model->fp8_block_scale_range[slot]);
    }
}

// ----------------------------------------------------------------------------
// sampling

// the distribution after position t - 1: the whole (1, T) window each time (simple; only row t - 1 is read)
static void gpt2_next_token_probs(void* m, const int* tokens, int t, float* probs) {
    GPT2* model = (GPT2*)m;
    gpt2_forward(model, tokens, NULL, 1, model->T);
    memcpy(probs, model->acts.probs + (size_t)(t - 1) * model->config.padded_vocab_size,
           (size_t)model->config.vocab_size * sizeof(float));
}

static void sample_text(GPT2* model, const Tokenizer* tokenizer, int gen_tokens, Rng* rng) {
    int saved = model->training;
    model->training = 0;
    sample_text_with(stdout, model, gpt2_next_token_probs, model->T, model->config.vocab_size, tokenizer,
                     gen_tokens, rng);
    model->training = saved;
}

// The flags only the CUDA trainer acts on. Each is refused with a line that says why, rather than ignored, unless its
// value is what this trainer does anyway (-pn 1, -pr 0, -r 0, -estimate 0, -attn plain, -fp8_fused_casts 0), so one
// command line drives both trainers where they agree. -z acts on the optimizer's shards: one process has one, whole.
static void refuse_gpu_only_flags(const TrainArgs* a) {
    const char* several = "-pn -pr -pg -pi -pf -ps are the CUDA trainer's; test_data_parallel checks the multi-rank "
                          "semantics on simulated ranks";
    const char* no_ids = "the CPU reference trainer runs one process, with no ids to exchange";
    if (a->num_processes > 1) { die("-pn %d: the CPU reference trainer runs one process (%s)", a->num_processes, several); }
    if (a->process_rank > 0) {
        die("-pr %d: the CPU reference trainer runs one process, rank 0 (%s)", a->process_rank, several);
    }
    if (a->gpus_per_node > 0) {
        die("-pg %d: the CPU reference trainer runs one process, on no GPU (%s)", a->gpus_per_node, several);
    }
    if (a->init_method) { die("-pi %s: %s (%s)", a->init_method, no_ids, several); }
    if (a->fs_path) { die("-pf %s: %s (%s)", a->fs_path, no_ids, several); }
    if (a->server_ip) { die("-ps %s: %s (%s)", a->server_ip, no_ids, several); }
    if (a->profile_step > 0) {
        die("-profile_step marks a step for a GPU profiler (ncu): it is train_gpt_fp8's flag, not the CPU trainer's");
    }
    if (a->idle_step > 0) {
        die("-idle_step measures the GPU's idle time in a step: it is train_gpt_fp8's flag, not the CPU trainer's");
    }
    if (a->gemm_autotune_set && a->gemm_autotune > 0) {
        die("-gemm_autotune %d: it is train_gpt_fp8's flag, which times cuBLASLt's GEMM algorithms; the CPU trainer's "
            "GEMMs are its own loops (-gemm_autotune 0)", a->gemm_autotune);
    }
    if (a->cuda_graph) {
        die("-cuda_graph 1: it is train_gpt_fp8's flag, which replays a step's GPU work as CUDA graphs; the CPU "
            "trainer has no GPU work (-cuda_graph 0)");
    }
    if (a->attention == ATTENTION_CUDNN) {
        die("-attn cudnn: the CPU trainer has one attention (plain, -attn plain); cuDNN attention is train_gpt_fp8's");
    }
    if (a->recompute) {
        die("-r %d: the CPU trainer keeps every activation for the backward (-r 0); recomputing GELU and LayerNorm to save "
            "memory is train_gpt_fp8's", a->recompute);
    }
    if (a->estimate_only) {
        die("-estimate 1: the memory estimate is of train_gpt_fp8's GPU buffers and batch; the CPU trainer has none to "
            "estimate (-estimate 0)");
    }
    if (a->fp8_fused_casts_set && a->fp8_fused_casts) {
        die("-fp8_fused_casts 1: the CPU trainer runs GELU and LayerNorm apart from the FP8 casts (-fp8_fused_casts 0, "
            "the same bytes); the fused kernels are train_gpt_fp8's");
    }
}

// A run's first parameters: the -e model file's, else GPT-2's initialization from -seed
static void gpt2_initial_parameters(GPT2* model, const RunSetup* run, const TrainArgs* args) {
    if (run->loaded_params) {
        memcpy(model->master_memory, run->loaded_params, run->loaded_count * sizeof(float));
    } else {
        Rng init_rng;
        rng_seed(&init_rng, (uint64_t)args->seed);
        gpt2_init_parameters(&model->master, model->param_sizes, &run->config, &init_rng);
    }
}

#ifndef TESTING
int main(int argc, char** argv) {
    fail_at_exit_if_stdout_fails();  // the step lines are the run's report: a lost one is an error
    TrainArgs args;
    parse_args(&args, argc, argv);
    char err[ERROR_MESSAGE_MAX];
    refuse_gpu_only_flags(&args);
    RunSetup run;
    run_setup(&args, &run, 0, 1);
    run_folder_prepare(&args, run.train_steps, 1);  // the folder's lock, for the whole run; an earlier run's files
    GPT2Config* cfg = &run.config;
    int B = run.B, T = run.T, total_batch = run.total_batch, grad_accum_steps = run.grad_accum_steps;
    int train_steps = run.train_steps, val_steps = run.val_steps, have_val = run.have_val;
    DataLoader* train_loader = &run.train_loader;
    DataLoader* val_loader = &run.val_loader;

    ModelOptions opt = model_options_from_args(&args, cfg);
    GPT2 model;
    gpt2_allocate(&model, &opt, B, T);
    model.total_batch = total_batch;
    gpt2_initial_parameters(&model, &run, &args);

    // resume, or start: before step 0 the initial weights are cast with scale 1.0 (recording their amax)
    Rng sample_rng;
    rng_seed(&sample_rng, (uint64_t)args.seed ^ 0x5EEDull);
    int start_step = 0;
    SkippedSteps skipped = {0, 0, 0, 0};
    if (args.resume) {
        long long latest = run_folder_resume_step(&args);
        if (resume_is_complete(&args, latest, train_steps)) {
            run_free(&run);
            gpt2_free(&model);
            return 0;
        }
        if (latest < 0) {
            printf("resume: no complete checkpoint (DONE_*) in %s, starting from scratch\n", args.output_dir);
        } else {
            size_t shard_index, shard_position;
            CheckpointRunState resumed;
            run_check_resume_shape(&args, &run, latest, 0);
            gpt2_load_checkpoint(&model, args.output_dir, (int)latest, &sample_rng.state, &shard_index, &shard_position,
                                 &resumed);
            run_resume_state(&args, &run, &resumed, &skipped);
            if (dataloader_resume(train_loader, shard_index, shard_position, err, sizeof(err))) { die("%s", err); }
            start_step = (int)latest;
            printf("resumed from %s/model_%08lld.bin at step %d\n", args.output_dir, latest, start_step);
            run_folder_drop_later_checkpoints(args.output_dir, latest);
        }
    }
    run_record_data(&args, &run, start_step);
    gpt2_cast_weights_fp8(&model, start_step == 0);

    box_rule(stdout);
    box_run_rows(stdout, &args, &run, model.num_parameters, 1);
#ifdef _OPENMP
    box_row(stdout, "threads", "%d (OpenMP)", omp_get_max_threads());
#endif
    box_rule(stdout);

    LogFile main_log = {NULL, NULL}, diag_log = {NULL, NULL};
    if (args.output_dir) {
        open_run_logs(args.output_dir, start_step, args.precision == PRECISION_FP8 && args.fp8_diag_every > 0,
                      &main_log, &diag_log);
    }

    StepTimer timer = {0.0, 0};
    for (int step = start_step; step <= train_steps; step++) {
        int last_step = step == train_steps;
        if (last_step) { skipped_steps_check_end(&skipped); }
        // evaluation, sampling and checkpoints at the start of a step; a resumed run already did them for its step
        if (step != start_step || start_step == 0) {
            if (have_val && (step % args.val_every == 0 || last_step)) {
                int saved = model.training;
                model.training = 0;
                dataloader_reset(val_loader);
                double val_loss = 0.0;
                for (int i = 0; i < val_steps; i++) {
                    if (dataloader_next_batch(val_loader, err, sizeof(err))) { die("%s", err); }
                    gpt2_forward(&model, val_loader->inputs, val_loader->targets, B, T);
                    val_loss += model.mean_loss;
                }
                val_loss /= val_steps;
                model.training = saved;
                printf("val loss %f\n", val_loss);
                log_printf(&main_log, "s:%d tel:%.4f\n", step, val_loss);
            }
            if (sample_due(&args, &run, step)) { sample_text(&model, &run.tokenizer, args.gen_tokens, &sample_rng); }
            if (args.output_dir && step > 0 &&
                ((args.checkpoint_every > 0 && step % args.checkpoint_every == 0) || last_step)) {
                CheckpointRunState run_state = run_checkpoint_state(&run, &skipped);
                gpt2_save_checkpoint(&model, args.output_dir, step, sample_rng.state, train_loader, &run_state);
                printf("checkpoint: %s/model_%08d.bin\n", args.output_dir, step);
            }
        }
        if (last_step) { break; }
        if (step == args.debug_kill_step) { fflush(stdout); raise(SIGKILL); }

        double t0 = now_seconds();
        gpt2_zero_grad(&model);
        double loss = 0.0;
        for (int micro = 0; micro < grad_accum_steps; micro++) {
            if (dataloader_next_batch(train_loader, err, sizeof(err))) { die("%s", err); }
            gpt2_forward(&model, train_loader->inputs, train_loader->targets, B, T);
            gpt2_backward(&model, 1.0f / grad_accum_steps);
            loss += model.mean_loss / grad_accum_steps;
        }
        if (step == args.debug_nan_step) { model.grads_memory[0] = NAN; }  // test hook: a poisoned gradient
        gpt2_grad_norm(&model);
        float lr = learning_rate_at(step, train_steps, args.learning_rate, args.warmup_steps, args.final_lr_fraction);
        // a step whose loss or gradient norm is not finite is skipped (the GPU's decides the norm's half on the device)
        float norm = gpt2_grad_norm_value(&model);
        int step_skipped = !isfinite(loss) || !isfinite(norm);
        if (step_skipped) {
            fprintf(stderr, "warning: step %d: loss %g, gradient norm %g is not finite; step skipped, weights and FP8 state kept\n",
                    step + 1, loss, norm);
            gpt2_fp8_drop_step_amaxes(&model);
        } else {
            gpt2_fp8_end_of_step(&model, step);
            gpt2_update(&model, lr, 0.9f, 0.95f, 1e-8f, args.weight_decay, args.grad_clip, step + 1);
            gpt2_cast_weights_fp8(&model, 1);
        }
        if (diag_log.file && (step + 1) % args.fp8_diag_every == 0) {
            write_fp8_diagnostics(&model, diag_log.file, step + 1);
            log_flush(&diag_log);
        }
        report_step(&timer, &main_log, step, start_step, train_steps, loss, norm, lr, now_seconds() - t0, total_batch, -1.0);
        skipped_steps_record(&skipped, &args, step, step_skipped);
    }
    log_close(&main_log);
    log_close(&diag_log);
    run_free(&run);
    gpt2_free(&model);
    return 0;
}
#endif
