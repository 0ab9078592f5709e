/*
llmc/tolerance.h — how far apart two correct implementations of the same arithmetic may land, written once: every
comparison of GPU numbers with the CPU reference (test_gpt_fp8, the dev/cuda checks, the GPU check's xcheck stage)
takes its tolerance from the rules below and says beside it which rule and how many roundings.

Spacing of a stored type with p fraction bits: one ulp of x is between 2^-(p+1) |x| and 2^-p |x| (the upper end at a
power of two), and rounding to nearest moves x by at most half an ulp.
    bf16  p = 7    one ulp <= 2^-7 = 0.78% of the value (2^-8 = 0.39% just below the next power of two)
    fp32  p = 23   one ulp <= 2^-23; unit roundoff 2^-24
    E4M3  p = 3    one ulp <= 2^-3;   E5M2  p = 2   one ulp <= 2^-2

The rules:
  R1 same inputs, same operations in the same order (a cast, the scale update, the amax of one tensor, an element-wise
     kernel written with the same float expressions): the same bits. Compare bits, allow nothing.
  R2 a sum of k terms added in another order (a GEMM, LayerNorm's mean and variance, a softmax's sum): an fp32 sum
     with round-to-nearest is within (k - 1) * 2^-24 * sum|terms| of the exact sum (tolerance_sum_rn), so two of them
     in different orders are within twice that (tolerance_sum_orders). The tensor cores add with truncation, up to one
     fp32 ulp per addition (Fasi et al., "Numerical behavior of NVIDIA tensor cores", 2021): a GEMM on them is within
     (k - 1) * 2^-23 * sum|terms| (tolerance_sum_tensor_core). Hopper's FP8 GEMMs keep about 14 bits of a partial sum:
     tolerance_fp8_accumulation. sum|terms|, not |sum|: cancellation can make the result small and its error large.
  R3 a value rounded to a stored type by both sides, from values that differ by d: the stored values differ by at
     most d + one ulp; by at most one ulp when d is below one (values less than an ulp apart round to the same value
     or to neighbours).
  R4 a chain: a value whose path from identical inputs passes through n stored roundings differs by at most n ulps of
     the stored type, relative to the value, provided every layer on the path passes a relative difference of its
     inputs on with a factor of about 1. A rounding counts once its inputs or its computation differ (order: R2;
     expf, tanhf, rsqrtf differ by an fp32 ulp or two between CUDA and glibc; one side rounding where the other keeps
     fp32); one after identical operations on identical inputs does not (R1). A computation whose own difference is
     below one ulp of its result (R2's fp32 differences, for the values that dominate a tensor) adds one (R3); a
     larger one adds its whole ulps too (an FP8 fprop's fast accumulation at k >= 2048). Where two differing paths
     meet (a sum, a product), the longer counts. LayerNorm (which normalizes), residual additions, GELU and GEMMs
     pass differences on with a factor of about 1, for the values that dominate a tensor (its largest elements, its
     norm); the softmaxes pass a logit's absolute difference, so they do too while the logits are of order 1 (at
     initialization, where the tests compare). An FP8 cast of values that differ by d moves an element by one FP8 ulp
     with a probability of about d / (FP8 ulp), which its GEMM weighs as one term of k: on average it passes d on and
     is not counted. Element by element, so for a maximum (an amax): n ulps.
  R5 a norm over a tensor of many elements (a relative L2 error): the n roundings of R4 leave differences at different
     elements, of either sign, independently of each other; the relative L2 error, an rms over the elements, is then
     at most sqrt(n) ulps. The same independence makes a mean over N tokens of per-token differences (the loss) differ
     by at most their bound / sqrt(N).
  R6 across optimizer steps: AdamW moves a weight by at most lr * adam_step_bound(t) at step t whatever its gradient's
     size (|m_hat| / sqrt(v_hat) by Cauchy-Schwarz over the bias-corrected moments: at most 1.003 for t <= 5 at beta1
     0.9, beta2 0.95; no weight decay, as in the tests). A weight whose gradient rounds or flushes (E5M2 at the
     first scale, 1.0) differently on the two sides can move that far on one side alone, or the other way: after u
     updates from the same weights the two sides' weights differ by at most adamw_drift(u) = 2 lr sum_t
     adam_step_bound(t), plus one bf16 ulp (R3); an amax of weights w_max by adamw_drift(u) / w_max + one ulp,
     relative: a bound. What is computed from the moved weights (activations, gradients, logits, their amaxes) moves
     with them: as an estimate, not a bound (most weights move alike on both sides), by half that, one side's move,
     relative to the largest weights, for each block on its path and the embeddings (adamw_drift_estimate).

R4 and R5 are bounds, not estimates: a correct GPU lands well inside them (most roundings agree), while a wrong
layout, scale, index or missing term misses by far more than a few ulps. A scale is fp8_max / amax: an amax within
e relative gives a scale within e / (1 - e) (tolerance_reciprocal) and a scale_inv within e.

This GPT-2's paths (train_gpt_fp8.cu against train_gpt_fp8.c), counted by the functions at the end, with the plain
attention (cuDNN's flash attention rounds no more: it keeps the scores and dP in fp32 and rounds P and dS to bf16
for the tensor cores, where the plain one rounds att and dpreatt, and the scores and datt too). Every stored tensor
counts one, from the encoder's output (the same float addition of the same bf16 values: 0):
  forward, block l from its input's count r: ln1, qkv, preatt, att (the GPU rounds both; the CPU keeps fp32), atty,
    attproj, residual2, ln2, fch, fch_gelu, fcproj, residual3: r + 1 ... r + 12, plus an FP8 fprop's extra at
    k >= 2048 (fcproj from C = 512); then lnf and the logits (the LM head, bf16): 12 L + 2.
  backward: dlogits (logits + 1), dlnf, the last block's d(residual3) (g); block l from its g: fcproj's dgrad, GELU's
    backward (fc's grad_output, g + 2), fc's dgrad, LayerNorm 2's backward into d(residual2) (attproj's grad_output,
    g + 4), attproj's dgrad, datt, dpreatt (both rounded by the GPU alone), dq and dk (qkv's grad_output, g + 8),
    qkv's dgrad, LayerNorm 1's backward into the block's input gradient: g + 10.
  parameter gradients (fp32, not rounded): the longer of their inputs' counts, over the layers.
  With L = 2 in bf16: block 1's fcproj input 22, the logits 26, block 0's qkv grad_output 47, wte's and wpe's
  gradients 49.
*/
#ifndef GPTFP8_TOLERANCE_H
#define GPTFP8_TOLERANCE_H

#include <math.h>

#define BF16_ULP 0x1p-7       // one bf16 ulp relative to the value, at its largest (a power of two)
#define FP32_ULP 0x1p-23      // one fp32 ulp relative to the value, at its largest
#define FP32_ROUNDOFF 0x1p-24  // unit roundoff of fp32: round to nearest moves a value by at most this, relative

// R2: an fp32 sum of k terms with round-to-nearest is within this times sum|terms| of the exact sum.
static inline double tolerance_sum_rn(double k) { return (k > 1.0 ? k - 1.0 : 0.0) * FP32_ROUNDOFF; }

// R2: two such sums of the same k terms in different orders differ by at most this times sum|terms|.
static inline double tolerance_sum_orders(double k) { return 2.0 * tolerance_sum_rn(k); }

// R2: a GEMM's fp32 accumulation of k terms on the tensor cores (truncating: one fp32 ulp per addition) is within
// this times sum|terms| of the exact sum.
static inline double tolerance_sum_tensor_core(double k) { return (k > 1.0 ? k - 1.0 : 0.0) * FP32_ULP; }

// R2 for Hopper's FP8 GEMMs, against the exact sum of the k products, relative to sum|a * b|: the tensor cores add
// the 32 products of one instruction exactly, then align the sum to an accumulator that keeps about 14 bits
// (truncating: up to 2^-13 of the partial sum per instruction). Without fast accumulation cuBLASLt promotes the
// partial sum into fp32 every 4 instructions at most (k = 128), so at most 4 such errors sit in a partial sum before it
// is added to the fp32 sum (round to nearest); with fast accumulation (fprop, as Transformer Engine) it is never
// promoted, k / 32 errors.
static inline double tolerance_fp8_accumulation(double k, int fast_accumulation) {
    double instructions = k / 32.0;
    if (fast_accumulation) { return (instructions > 4.0 ? instructions : 4.0) * 0x1p-13; }
    return 4.0 * 0x1p-13 + tolerance_sum_rn(ceil(k / 128.0));
}

// R4: a single value (an element, a maximum) after n differing roundings of a stored type with one ulp `ulp`.
static inline double tolerance_chain_max(int roundings, double ulp) { return roundings * ulp; }

// R5: the relative L2 error of a tensor after n differing roundings of a stored type with one ulp `ulp`.
static inline double tolerance_chain_l2(int roundings, double ulp) { return sqrt((double)roundings) * ulp; }

// R4 through the log-softmax, R5's independence over tokens: the mean loss over `tokens` tokens, absolute, when no
// logit differs by more than max_logit_change (absolute). A token's loss moves by at most twice that (the gradient of
// the log-softmax, probs - onehot, has an L1 norm of at most 2); the mean of `tokens` independent such moves by that
// over sqrt(tokens).
static inline double tolerance_mean_loss(double max_logit_change, int tokens) {
    return 2.0 * max_logit_change / sqrt((double)tokens);
}

// A scale is fp8_max / amax: an amax within e relative (e < 1) gives a scale within e / (1 - e).
static inline double tolerance_reciprocal(double e) { return e < 1.0 ? e / (1.0 - e) : INFINITY; }

// R6: the largest |m_hat| / sqrt(v_hat) of Adam's step t (1-based) over every gradient sequence: m_hat = sum a_i g_i
// and v_hat = sum b_i g_i^2 with the bias-corrected weights a_i, b_i, so by Cauchy-Schwarz sqrt(sum a_i^2 / b_i).
static inline double adam_step_bound(double beta1, double beta2, int t) {
    double sum = 0.0;
    for (int i = 1; i <= t; i++) {
        double a = (1.0 - beta1) * pow(beta1, t - i) / (1.0 - pow(beta1, t));
        double b = (1.0 - beta2) * pow(beta2, t - i) / (1.0 - pow(beta2, t));
        sum += a * a / b;
    }
    return sqrt(sum);
}

// R6, a bound: after `updates` AdamW steps (no weight decay) from the same weights, the two sides' weights differ by at
// most this, absolute (each side moves a weight by at most lr * adam_step_bound(t) at step t, the other way at worst);
// one bf16 ulp more for the bf16 copies (R3).
static inline double adamw_drift(double lr, double beta1, double beta2, int updates) {
    double moved = 0.0;
    for (int t = 1; t <= updates; t++) { moved += lr * adam_step_bound(beta1, beta2, t); }
    return 2.0 * moved;
}

// R6, an estimate: the relative change of a value computed through `blocks` blocks of moved weights (the embeddings
// counting as one) after `updates` updates: one side's move (half of adamw_drift) relative to the largest weights
// w_max, per block.
static inline double adamw_drift_estimate(double lr, double beta1, double beta2, int updates, int blocks,
                                          double w_max) {
    return blocks * 0.5 * adamw_drift(lr, beta1, beta2, updates) / w_max;
}

// ----------------------------------------------------------------------------
// the counts of R4 for this GPT-2 (the header comment draws the paths)

typedef struct {
    int layers;    // L
    int channels;  // C: an FP8 fprop adds C products (4C in fcproj)
    int fp8;       // 1: the blocks' four linear layers in FP8 (fprop with fast accumulation), the LM head in bf16
} Gpt2Roundings;

// the four linear layers of a block, in llmc/linear.h's order (LINEAR_QKV ...)
enum { GPT2_LINEAR_QKV, GPT2_LINEAR_ATTPROJ, GPT2_LINEAR_FC, GPT2_LINEAR_FCPROJ, GPT2_LINEARS };
// a block's forward tensors, in the order the forward makes them
enum { GPT2_LN1, GPT2_QKV, GPT2_PREATT, GPT2_ATT, GPT2_ATTY, GPT2_ATTPROJ, GPT2_RESIDUAL2, GPT2_LN2, GPT2_FCH,
       GPT2_FCH_GELU, GPT2_FCPROJ, GPT2_RESIDUAL3, GPT2_FORWARD_TENSORS };
// a block's backward tensors (activation gradients), in the order the backward makes them
enum { GPT2_DRESIDUAL3, GPT2_DFCH_GELU, GPT2_DFCH, GPT2_DLN2, GPT2_DRESIDUAL2, GPT2_DATTY, GPT2_DATT, GPT2_DPREATT,
       GPT2_DQKV, GPT2_DLN1, GPT2_DRESIDUAL, GPT2_BACKWARD_TENSORS };

static inline int gpt2_max2(int a, int b) { return a > b ? a : b; }

// The roundings a linear layer's output adds: one (R3), and for an FP8 fprop with fast accumulation the whole ulps of
// its accumulation difference (R4): 0 below k = 2048, 1 for fcproj at C = 768 (k = 3072: 1.5 ulps).
static inline int gpt2_linear_roundings(const Gpt2Roundings* g, int linear) {
    if (!g->fp8) { return 1; }
    int k = linear == GPT2_LINEAR_FCPROJ ? 4 * g->channels : g->channels;
    return 1 + (int)floor(tolerance_fp8_accumulation(k, 1) / BF16_ULP);
}

// The count of forward tensor `tensor` of block `block`.
static inline int gpt2_roundings_forward(const Gpt2Roundings* g, int block, int tensor) {
    int n[GPT2_FORWARD_TENSORS] = {0};
    int r = 0;  // the encoder's output, bit-exact
    for (int l = 0; l <= block; l++) {
        n[GPT2_LN1] = r + 1;
        n[GPT2_QKV] = n[GPT2_LN1] + gpt2_linear_roundings(g, GPT2_LINEAR_QKV);
        n[GPT2_PREATT] = n[GPT2_QKV] + 1;
        n[GPT2_ATT] = n[GPT2_PREATT] + 1;
        n[GPT2_ATTY] = n[GPT2_ATT] + 1;  // att v: att's path is the longer
        n[GPT2_ATTPROJ] = n[GPT2_ATTY] + gpt2_linear_roundings(g, GPT2_LINEAR_ATTPROJ);
        n[GPT2_RESIDUAL2] = gpt2_max2(r, n[GPT2_ATTPROJ]) + 1;
        n[GPT2_LN2] = n[GPT2_RESIDUAL2] + 1;
        n[GPT2_FCH] = n[GPT2_LN2] + gpt2_linear_roundings(g, GPT2_LINEAR_FC);
        n[GPT2_FCH_GELU] = n[GPT2_FCH] + 1;
        n[GPT2_FCPROJ] = n[GPT2_FCH_GELU] + gpt2_linear_roundings(g, GPT2_LINEAR_FCPROJ);
        n[GPT2_RESIDUAL3] = gpt2_max2(n[GPT2_RESIDUAL2], n[GPT2_FCPROJ]) + 1;
        r = n[GPT2_RESIDUAL3];
    }
    return n[tensor];
}

// The logits: the last residual stream, lnf, the LM head (bf16).
static inline int gpt2_roundings_logits(const Gpt2Roundings* g) {
    return gpt2_roundings_forward(g, g->layers - 1, GPT2_RESIDUAL3) + 2;
}

// The count of backward tensor `tensor` of block `block` (DRESIDUAL3: the gradient of the block's output; DRESIDUAL:
// of its input, the encoder's output for block 0).
static inline int gpt2_roundings_backward(const Gpt2Roundings* g, int block, int tensor) {
    int n[GPT2_BACKWARD_TENSORS] = {0};
    int dlnf = gpt2_roundings_logits(g) + 2;  // dlogits, then the LM head's dgrad
    int d = gpt2_max2(dlnf, gpt2_roundings_forward(g, g->layers - 1, GPT2_RESIDUAL3)) + 1;  // lnf's backward
    for (int l = g->layers - 1; l >= block; l--) {
#define GPT2_FWD(t) gpt2_roundings_forward(g, l, t)
        n[GPT2_DRESIDUAL3] = d;
        n[GPT2_DFCH_GELU] = d + 1;
        n[GPT2_DFCH] = gpt2_max2(n[GPT2_DFCH_GELU], GPT2_FWD(GPT2_FCH)) + 1;
        n[GPT2_DLN2] = n[GPT2_DFCH] + 1;
        n[GPT2_DRESIDUAL2] = gpt2_max2(gpt2_max2(d, n[GPT2_DLN2]), GPT2_FWD(GPT2_RESIDUAL2)) + 1;
        n[GPT2_DATTY] = n[GPT2_DRESIDUAL2] + 1;
        n[GPT2_DATT] = gpt2_max2(n[GPT2_DATTY], GPT2_FWD(GPT2_QKV)) + 1;  // dy v^T
        n[GPT2_DPREATT] = gpt2_max2(n[GPT2_DATT], GPT2_FWD(GPT2_ATT)) + 1;
        n[GPT2_DQKV] = gpt2_max2(n[GPT2_DPREATT], GPT2_FWD(GPT2_QKV)) + 1;  // dq, dk; dv (att^T dy) is shorter
        n[GPT2_DLN1] = n[GPT2_DQKV] + 1;
        n[GPT2_DRESIDUAL] = gpt2_max2(gpt2_max2(n[GPT2_DRESIDUAL2], n[GPT2_DLN1]), GPT2_FWD(GPT2_LN1)) + 1;
#undef GPT2_FWD
        d = n[GPT2_DRESIDUAL];
    }
    return n[tensor];
}

// The tensor an FP8 linear's input slot records (its forward input) and the one its grad_output slot records.
static inline int gpt2_roundings_fp8_input(const Gpt2Roundings* g, int block, int linear) {
    static const int tensor[GPT2_LINEARS] = {GPT2_LN1, GPT2_ATTY, GPT2_LN2, GPT2_FCH_GELU};
    return gpt2_roundings_forward(g, block, tensor[linear]);
}
static inline int gpt2_roundings_fp8_grad_output(const Gpt2Roundings* g, int block, int linear) {
    static const int tensor[GPT2_LINEARS] = {GPT2_DQKV, GPT2_DRESIDUAL2, GPT2_DFCH, GPT2_DRESIDUAL3};
    return gpt2_roundings_backward(g, block, tensor[linear]);
}

// The gradient of parameter tensor `tensor` (ParameterTensors' order: wte, wpe, ln1w, ln1b, qkvw, qkvb, attprojw,
// attprojb, ln2w, ln2b, fcw, fcb, fcprojw, fcprojb, lnfw, lnfb), over every layer: a weight's gradient dY^T X takes
// the longer of its two inputs' paths, a bias's the output gradient's.
static inline int gpt2_roundings_parameter_gradient(const Gpt2Roundings* g, int tensor) {
    int L = g->layers, top = gpt2_roundings_forward(g, L - 1, GPT2_RESIDUAL3);
    int dlogits = gpt2_roundings_logits(g) + 1, dlnf = dlogits + 1;
    int dencoded = gpt2_roundings_backward(g, 0, GPT2_DRESIDUAL);
    if (tensor == 0) { return gpt2_max2(dencoded, gpt2_max2(dlogits, top + 1)); }  // the encoder's and the LM head's
    if (tensor == 1) { return dencoded; }
    if (tensor >= 14) { return gpt2_max2(dlnf, top); }  // lnfw, lnfb
    // per layer: the output gradient and the input of each, in pairs (weight, bias) from ln1w
    static const int dout[6] = {GPT2_DLN1, GPT2_DQKV, GPT2_DRESIDUAL2, GPT2_DLN2, GPT2_DFCH, GPT2_DRESIDUAL3};
    static const int inp[6] = {-1, GPT2_LN1, GPT2_ATTY, GPT2_RESIDUAL2, GPT2_LN2, GPT2_FCH_GELU};
    int pair = (tensor - 2) / 2, is_bias = (tensor - 2) % 2, worst = 0;
    for (int l = 0; l < L; l++) {
        int n = gpt2_roundings_backward(g, l, dout[pair]);
        // LayerNorm 1's input: the block's input residual (its count is ln1's less one)
        int x = inp[pair] < 0 ? gpt2_roundings_forward(g, l, GPT2_LN1) - 1 : gpt2_roundings_forward(g, l, inp[pair]);
        worst = gpt2_max2(worst, is_bias ? n : gpt2_max2(n, x));
    }
    return worst;
}

#endif  // GPTFP8_TOLERANCE_H
