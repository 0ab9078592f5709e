/*
dev/cuda/attention_cudnn_fp8.cu — cuDNN's FP8 attention (llmc/cudnn_attention.cpp's sdpa_fp8 graphs, the per-tensor
scales of delayed scaling) on its own, before any trainer uses it: which shapes this cuDNN builds on this GPU (GPT-2's
heads of 64, and 128), the FP8 forward's output, statistics and amaxes, and, where cuDNN has it, the FP8 backward's
gradients and amaxes, each against a CPU reference in double computed from the very FP8 values the GPU reads, within
a bound derived from the quantizations and accumulations the kernels do (below); that the graphs give the same bytes
twice (the FP8 backward's only where cuDNN has it deterministic: compute capability 10.x); where the kernel quantizes
the softmax output (check_softmax_order: per key tile before normalizing, as a flash kernel, or the normalized weights
the CPU trainer quantizes; they part widely at a first step's scale of 1.0 and T 1024, doc/fp8_attention.md); then
their time against the BF16 graphs at the d12 and d48 attention shapes.

What it establishes for -fp8_attention (issue 57): on Hopper the frontend builds the FP8 backward at head size 128
only (TE's rule too), so GPT-2's heads of 64 can run the FP8 forward only; this program prints what this cuDNN says,
and how much faster the FP8 forward is, which is the whole gain available at head size 64 on this GPU.

Build: make dev/cuda/attention_cudnn_fp8 (the Makefile builds it when it finds cuDNN and the frontend)
Run:   ./dev/cuda/attention_cudnn_fp8      (prints one line and exits 1 without a GPU)

The bounds (llmc/tolerance.h's rules; u4 = 2^-4 and u3 = 2^-3, half an ulp of E4M3 and E5M2 relative to a normal
value; 2^-10 and 2^-17 half their subnormal spacing, in scaled units). The reference takes the dequantized q, k, v
(and o, dout for the backward) as exact inputs, so what remains is the kernels' own arithmetic. The forward's
(scores, P, o, statistics, amaxes) is llmc/attention_fp8_reference.h, which test_gpt_fp8 shares; the backward's:
  backward P recomputed from the scores and the statistics: a factor within exp(+-(ds + the statistics' bound));
          dP = dout v^T from FP8 products (accumulation over HS), D = rowsum(dout o) in fp32; dS = P (dP - D),
          quantized to E5M2 with scale_dp (u3, or 2^-17 / scale_dp in units of attn_scale dS, whichever of dS and
          attn_scale dS the kernel quantizes); dq = attn_scale dS k, dk = attn_scale dS^T q, dv = P^T dout with P
          quantized as in the forward, each summed by the tensor cores and quantized to E5M2 with scale_dqkv (u3 of
          the value, or 2^-17 / scale_dqkv). Element by element, each term's bound carried through its sum of
          |terms| (R2: cancellation can make a gradient small and its error large).
*/
#include <cuda_bf16.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../fp8/fp8.h"
#include "../../llmc/attention_fp8_reference.h"
#include "../../llmc/cudnn_attention.h"
#include "../../llmc/rand.h"
#include "../../llmc/tolerance.h"
#include "bench.h"

static int checks = 0, failures = 0;

static void report(int ok, const char* what, double value, double tolerance) {
    checks++;
    failures += !ok;
    printf("  %s %-52s %.3g (tolerance %.3g)\n", ok ? "PASS" : "FAIL", what, value, tolerance);
}


// ----------------------------------------------------------------------------
// FP8 tensors on the host: the codes the GPU reads and the values they stand for

// codes = fp8(x * scale) (round to nearest even, saturating: fp8/fp8.h's fp8_from_float), values = code * descale in
// double with descale = 1 / scale in fp32, the value the GPU multiplies by.
static void fp8_host_cast(uint8_t* codes, double* values, const float* x, size_t n, Fp8Format format, float scale) {
    float descale = 1.0f / scale;
    for (size_t i = 0; i < n; i++) {
        codes[i] = fp8_from_float(x[i] * scale, format);
        values[i] = (double)fp8_to_float(codes[i], format) * (double)descale;
    }
}

static double max_abs(const double* x, size_t n) {
    double m = 0.0;
    for (size_t i = 0; i < n; i++) { m = fmax(m, fabs(x[i])); }
    return m;
}

// uniform in [-range, range), rounded to bf16 (the trainer's activations are bf16 before their casts)
static void random_bf16_values(float* x, size_t n, float range, Rng* rng) {
    for (size_t i = 0; i < n; i++) {
        x[i] = __bfloat162float(__float2bfloat16_rn((rng_uniform(rng) * 2.0f - 1.0f) * range));
    }
}

static uint8_t* upload_bytes(DeviceList* list, const uint8_t* host, size_t n) {
    uint8_t* device;
    device_upload(list, &device, host, n);
    return device;
}

static void download(void* host, const void* device, size_t bytes) {
    cudaCheck(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost));
}

// ----------------------------------------------------------------------------
// the reference in double

// The backward's reference: dqkv (B, T, 3C), and per element the bound before the E5M2 output cast split in two, the
// part independent of scale_dp (pre) and the coefficient of descale_dp (dp_coef), so that the scales can be chosen
// from the reference first; *ds_max the largest |dS| (without attn_scale). o and dout: the values the GPU reads; lse_bound
// (B, NH, T): the statistics' bound of the forward check.
static void reference_backward(double* dqkv, double* pre, double* dp_coef, double* ds_max, const double* qkv,
                               const double* o, const double* dout, const double* lse_bound, int B, int T, int C,
                               int NH, double attn_scale, double descale_s) {
    int HS = C / NH;
    double acc_hs = tolerance_fp8_accumulation(HS, 1);
    size_t n = (size_t)B * T * 3 * C;
    memset(dqkv, 0, n * sizeof(double));
    memset(pre, 0, n * sizeof(double));
    memset(dp_coef, 0, n * sizeof(double));
    double largest = 0.0;
#pragma omp parallel for collapse(2) reduction(max : largest)
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            // per (t, u): P, dS (unscaled), and the bound of dS before its E5M2 cast; eps_p per row
            double* P = (double*)calloc((size_t)T * T, sizeof(double));
            double* dS = (double*)calloc((size_t)T * T, sizeof(double));
            double* dS_err = (double*)calloc((size_t)T * T, sizeof(double));
            double* eps_p = (double*)malloc((size_t)T * sizeof(double));
            for (int t = 0; t < T; t++) {
                size_t row = ((size_t)b * NH + h) * T + t;
                double ds;
                attention_fp8_softmax_row(P + (size_t)t * T, &ds, qkv, b, h, t, T, C, NH, attn_scale);
                eps_p[t] = expm1(ds + lse_bound[row]);
                const double* dy = dout + ((size_t)b * T + t) * C + (size_t)h * HS;
                const double* oy = o + ((size_t)b * T + t) * C + (size_t)h * HS;
                double D = 0.0, D_abs = 0.0;
                for (int d = 0; d < HS; d++) {
                    D += dy[d] * oy[d];
                    D_abs += fabs(dy[d] * oy[d]);
                }
                double D_err = tolerance_sum_rn(HS) * D_abs + 4.0 * FP32_ULP * fabs(D);
                for (int u = 0; u <= t; u++) {
                    const double* v = qkv + ((size_t)b * T + u) * 3 * C + 2 * C + (size_t)h * HS;
                    double dp = 0.0, dp_abs = 0.0;
                    for (int d = 0; d < HS; d++) {
                        dp += dy[d] * v[d];
                        dp_abs += fabs(dy[d] * v[d]);
                    }
                    double p = P[(size_t)t * T + u];
                    double x = p * (dp - D);
                    double err = eps_p[t] * fabs(x) + (1.0 + eps_p[t]) * p * (acc_hs * dp_abs + D_err) + 4.0 * FP32_ULP * fabs(x);
                    dS[(size_t)t * T + u] = x;
                    dS_err[(size_t)t * T + u] = err + E5M2_HALF_ULP * (fabs(x) + err);  // its E5M2 cast, normal range
                    largest = fmax(largest, fabs(x));
                }
            }
            // dq (row t), dk and dv (row u)
            for (int t = 0; t < T; t++) {
                for (int d = 0; d < HS; d++) {
                    double sum = 0.0, err = 0.0, abs_terms = 0.0, coef = 0.0;
                    for (int u = 0; u <= t; u++) {
                        double k = qkv[((size_t)b * T + u) * 3 * C + C + (size_t)h * HS + d];
                        sum += dS[(size_t)t * T + u] * k;
                        err += dS_err[(size_t)t * T + u] * fabs(k);
                        abs_terms += fabs(dS[(size_t)t * T + u] * k);
                        coef += fabs(k);
                    }
                    size_t i = ((size_t)b * T + t) * 3 * C + (size_t)h * HS + d;
                    dqkv[i] = attn_scale * sum;
                    pre[i] = attn_scale * (err + tolerance_fp8_accumulation(t + 1, 1) * (1.0 + E5M2_HALF_ULP) *
                                                     abs_terms) + 4.0 * FP32_ULP * fabs(dqkv[i]);
                    dp_coef[i] = E5M2_HALF_SUBNORMAL * coef;  // attn_scale * (2^-17 descale_dp / attn_scale) sum |k|
                }
            }
            for (int u = 0; u < T; u++) {
                for (int d = 0; d < HS; d++) {
                    double dk = 0.0, dk_err = 0.0, dk_abs = 0.0, dk_coef = 0.0;
                    double dv = 0.0, dv_err = 0.0, dv_abs = 0.0;
                    for (int t = u; t < T; t++) {
                        double q = qkv[((size_t)b * T + t) * 3 * C + (size_t)h * HS + d];
                        double dy = dout[((size_t)b * T + t) * C + (size_t)h * HS + d];
                        double x = dS[(size_t)t * T + u], p = P[(size_t)t * T + u];
                        dk += x * q;
                        dk_err += dS_err[(size_t)t * T + u] * fabs(q);
                        dk_abs += fabs(x * q);
                        dk_coef += fabs(q);
                        dv += p * dy;
                        dv_err += ((eps_p[t] * (1.0 + E4M3_HALF_ULP) + E4M3_HALF_ULP) * p +
                                   E4M3_HALF_SUBNORMAL * descale_s) * fabs(dy);
                        dv_abs += (1.0 + eps_p[t]) * (1.0 + E4M3_HALF_ULP) * p * fabs(dy);
                    }
                    size_t ik = ((size_t)b * T + u) * 3 * C + C + (size_t)h * HS + d, iv = ik + C;
                    double acc = tolerance_fp8_accumulation(T - u, 1);
                    dqkv[ik] = attn_scale * dk;
                    pre[ik] = attn_scale * (dk_err + acc * (1.0 + E5M2_HALF_ULP) * dk_abs) + 4.0 * FP32_ULP * fabs(dqkv[ik]);
                    dp_coef[ik] = E5M2_HALF_SUBNORMAL * dk_coef;
                    dqkv[iv] = dv;
                    pre[iv] = dv_err + acc * dv_abs + 4.0 * FP32_ULP * fabs(dv);
                }
            }
            free(P);
            free(dS);
            free(dS_err);
            free(eps_p);
        }
    }
    *ds_max = largest;
}

// ----------------------------------------------------------------------------
// the checks of one shape

// The device's scalars: 16 of them, 16 bytes apart (cuDNN's scale pointers, like cuBLASLt's, 16-byte aligned)
enum { S_DESCALE_QKV, S_DESCALE_S, S_SCALE_S, S_SCALE_O, S_AMAX_S, S_AMAX_O, S_DESCALE_O, S_DESCALE_DO, S_DESCALE_DP,
       S_SCALE_DP, S_SCALE_DQKV, S_AMAX_DQ, S_AMAX_DK, S_AMAX_DV, S_AMAX_DP, S_COUNT };
#define SCALAR_STRIDE 4  // floats

static void set_scalar(float* scalars, int which, float value) {
    cudaCheck(cudaMemcpy(scalars + which * SCALAR_STRIDE, &value, sizeof(float), cudaMemcpyHostToDevice));
}
static float get_scalar(const float* scalars, int which) {
    float value;
    download(&value, scalars + which * SCALAR_STRIDE, sizeof(float));
    return value;
}

static CudnnFp8ForwardScales forward_scales(float* s) {
    CudnnFp8ForwardScales f = {s + S_DESCALE_QKV * SCALAR_STRIDE, s + S_DESCALE_S * SCALAR_STRIDE,
                               s + S_SCALE_S * SCALAR_STRIDE,     s + S_SCALE_O * SCALAR_STRIDE,
                               s + S_AMAX_S * SCALAR_STRIDE,      s + S_AMAX_O * SCALAR_STRIDE};
    return f;
}
static CudnnFp8BackwardScales backward_scales(float* s) {
    CudnnFp8BackwardScales g = {s + S_DESCALE_QKV * SCALAR_STRIDE, s + S_DESCALE_O * SCALAR_STRIDE,
                                s + S_DESCALE_DO * SCALAR_STRIDE,  s + S_DESCALE_S * SCALAR_STRIDE,
                                s + S_SCALE_S * SCALAR_STRIDE,     s + S_DESCALE_DP * SCALAR_STRIDE,
                                s + S_SCALE_DP * SCALAR_STRIDE,    s + S_SCALE_DQKV * SCALAR_STRIDE,
                                s + S_AMAX_DQ * SCALAR_STRIDE,     s + S_AMAX_DK * SCALAR_STRIDE,
                                s + S_AMAX_DV * SCALAR_STRIDE,     s + S_AMAX_DP * SCALAR_STRIDE};
    return g;
}

// The largest |got - want| / bound over n elements (a NaN anywhere gives NaN, which fails the check)
static double worst_ratio(const double* got, const double* want, const double* bound, size_t n) {
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double r = fabs(got[i] - want[i]) / bound[i];
        if (!(r <= worst)) { worst = r; }  // NaN propagates (a NaN ratio fails the check)
    }
    return worst;
}

static double relative_l2(const double* got, const double* want, size_t n) {
    double diff = 0.0, ref = 0.0;
    for (size_t i = 0; i < n; i++) {
        diff += (got[i] - want[i]) * (got[i] - want[i]);
        ref += want[i] * want[i];
    }
    return ref > 0.0 ? sqrt(diff / ref) : sqrt(diff);
}

// The workspace for the shape's FP8 graphs (and, with bf16, its BF16 ones), on `list`
static void prepare_workspace(DeviceList* list, CudnnAttention* cudnn, int B, int T, int C, int NH, int fp8_backward,
                              int bf16) {
    size_t bytes = cudnn_attention_fp8_prepare(cudnn, B, T, C, NH, fp8_backward);
    if (bf16) {
        size_t b16 = cudnn_attention_prepare(cudnn, B, T, C, NH);
        if (b16 > bytes) { bytes = b16; }
    }
    void* workspace = NULL;
    if (bytes) { device_alloc(list, &workspace, bytes); }
    cudnn_attention_set_workspace(cudnn, workspace, bytes);
}

// whether this GPU and cuDNN run the FP8 backward at this shape, with the reason when not
static int fp8_backward_supported(CudnnAttention* cudnn, int B, int T, int NH, int HS, char* why, size_t why_len) {
    return cudnn_attention_fp8_supported(cudnn, B, T, NH * HS, NH, 1, why, why_len);
}

static void check_shape(CudnnAttention* cudnn, int B, int T, int NH, int HS, Rng* rng) {
    int device, cc_major;
    cudaCheck(cudaGetDevice(&device));
    cudaCheck(cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, device));
    int C = NH * HS;
    size_t n_qkv = (size_t)B * T * 3 * C, n_out = (size_t)B * T * C, n_stats = (size_t)B * NH * T;
    double attn_scale = (double)(1.0f / sqrtf((float)HS));  // the fp32 value the graphs fuse
    printf("B %d, T %d, NH %d, HS %d\n", B, T, NH, HS);
    char why[1024] = "";
    if (!cudnn_attention_fp8_supported(cudnn, B, T, C, NH, 0, why, sizeof(why))) {
        // the trainer asks the same query and refuses -fp8_attention there; the support query's check below says
        // which shapes must build
        printf("  INFO FP8 forward not built here: %.300s\n", why);
        return;
    }
    int backward = fp8_backward_supported(cudnn, B, T, NH, HS, why, sizeof(why));
    if (!backward) { printf("  INFO FP8 backward not built here: %.300s\n", why); }

    // inputs: qkv in [-2, 2), dout in [-1, 1), bf16 values, cast to E4M3 / E5M2 with scales from their amaxes
    float* qkv_f = (float*)malloc(n_qkv * sizeof(float));
    float* dout_f = (float*)malloc(n_out * sizeof(float));
    random_bf16_values(qkv_f, n_qkv, 2.0f, rng);
    random_bf16_values(dout_f, n_out, 1.0f, rng);
    double qkv_amax = 0.0, dout_amax = 0.0;
    for (size_t i = 0; i < n_qkv; i++) { qkv_amax = fmax(qkv_amax, fabs(qkv_f[i])); }
    for (size_t i = 0; i < n_out; i++) { dout_amax = fmax(dout_amax, fabs(dout_f[i])); }
    float scale_qkv = FP8_E4M3_MAX / (float)qkv_amax, scale_dout = FP8_E5M2_MAX / (float)dout_amax;
    uint8_t* qkv_codes = (uint8_t*)malloc(n_qkv);
    uint8_t* dout_codes = (uint8_t*)malloc(n_out);
    double* qkv = (double*)malloc(n_qkv * sizeof(double));
    double* dout = (double*)malloc(n_out * sizeof(double));
    fp8_host_cast(qkv_codes, qkv, qkv_f, n_qkv, FP8_E4M3, scale_qkv);
    fp8_host_cast(dout_codes, dout, dout_f, n_out, FP8_E5M2, scale_dout);

    // the forward's reference, then its scales: S at 448 (its amax is 1), o at half its range (no saturation)
    double* out_ref = (double*)malloc(n_out * sizeof(double));
    double* pre = (double*)malloc(n_out * sizeof(double));
    double* lse_ref = (double*)malloc(n_stats * sizeof(double));
    double* ds = (double*)malloc(n_stats * sizeof(double));
    float scale_s = FP8_E4M3_MAX, descale_s = 1.0f / scale_s;
    attention_fp8_reference_forward(out_ref, lse_ref, ds, pre, qkv, B, T, C, NH, attn_scale, descale_s);
    double out_amax = max_abs(out_ref, n_out);
    float scale_o = FP8_E4M3_MAX / (2.0f * (float)out_amax), descale_o = 1.0f / scale_o;

    DeviceList dev = {{NULL}, 0};
    prepare_workspace(&dev, cudnn, B, T, C, NH, backward, 0);
    uint8_t* d_qkv = upload_bytes(&dev, qkv_codes, n_qkv);
    uint8_t* d_dout = upload_bytes(&dev, dout_codes, n_out);
    uint8_t *d_out, *d_out_again, *d_dqkv, *d_dqkv_again;
    float *d_stats, *d_scalars;
    device_alloc(&dev, &d_out, n_out);
    device_alloc(&dev, &d_out_again, n_out);
    device_alloc(&dev, &d_dqkv, n_qkv);
    device_alloc(&dev, &d_dqkv_again, n_qkv);
    device_alloc(&dev, &d_stats, n_stats * sizeof(float));
    device_alloc(&dev, &d_scalars, S_COUNT * SCALAR_STRIDE * sizeof(float));
    cudaCheck(cudaMemset(d_scalars, 0xFF, S_COUNT * SCALAR_STRIDE * sizeof(float)));  // amaxes not written show NaN
    set_scalar(d_scalars, S_DESCALE_QKV, 1.0f / scale_qkv);
    set_scalar(d_scalars, S_DESCALE_S, descale_s);
    set_scalar(d_scalars, S_SCALE_S, scale_s);
    set_scalar(d_scalars, S_SCALE_O, scale_o);
    set_scalar(d_scalars, S_DESCALE_O, descale_o);
    set_scalar(d_scalars, S_DESCALE_DO, 1.0f / scale_dout);
    CudnnFp8ForwardScales fs = forward_scales(d_scalars);

    // forward: outputs first filled with NaN codes (0xFF is NaN in E4M3 and E5M2), so an element not written shows
    cudaCheck(cudaMemset(d_out, 0xFF, n_out));
    cudaCheck(cudaMemset(d_stats, 0xFF, n_stats * sizeof(float)));
    attention_forward_cudnn_fp8(cudnn, d_out, d_stats, d_qkv, &fs, B, T, C, NH, 0);
    cudaCheck(cudaDeviceSynchronize());
    float amax_s = get_scalar(d_scalars, S_AMAX_S), amax_o = get_scalar(d_scalars, S_AMAX_O);
    attention_forward_cudnn_fp8(cudnn, d_out_again, d_stats, d_qkv, &fs, B, T, C, NH, 0);
    uint8_t* out_codes = (uint8_t*)malloc(n_out);
    uint8_t* out_again = (uint8_t*)malloc(n_out);
    float* stats = (float*)malloc(n_stats * sizeof(float));
    download(out_codes, d_out, n_out);
    download(out_again, d_out_again, n_out);
    download(stats, d_stats, n_stats * sizeof(float));
    // the evaluation graph (no statistics) into the second buffer
    cudaCheck(cudaMemset(d_out_again, 0xFF, n_out));
    attention_forward_cudnn_fp8(cudnn, d_out_again, NULL, d_qkv, &fs, B, T, C, NH, 0);
    uint8_t* out_inference = (uint8_t*)malloc(n_out);
    download(out_inference, d_out_again, n_out);

    double* out_gpu = (double*)malloc(n_out * sizeof(double));
    double* out_inf = (double*)malloc(n_out * sizeof(double));
    double* bound = (double*)malloc(n_out * sizeof(double));
    double pre_max = 0.0;
    for (size_t i = 0; i < n_out; i++) {
        out_gpu[i] = (double)fp8_to_float(out_codes[i], FP8_E4M3) * (double)descale_o;
        out_inf[i] = (double)fp8_to_float(out_inference[i], FP8_E4M3) * (double)descale_o;
        bound[i] = attention_fp8_output_bound(out_ref[i], pre[i], descale_o);
        pre_max = fmax(pre_max, pre[i]);
    }
    report(worst_ratio(out_gpu, out_ref, bound, n_out) <= 1.0, "forward o vs CPU (largest |error| / bound)",
           worst_ratio(out_gpu, out_ref, bound, n_out), 1.0);
    printf("  INFO forward o vs CPU, relative L2 %.3g (E4M3's half ulp %.3g)\n", relative_l2(out_gpu, out_ref, n_out),
           E4M3_HALF_ULP);
    report(worst_ratio(out_inf, out_ref, bound, n_out) <= 1.0, "forward without statistics vs CPU (error / bound)",
           worst_ratio(out_inf, out_ref, bound, n_out), 1.0);
    size_t differ = 0;
    for (size_t i = 0; i < n_out; i++) { differ += out_codes[i] != out_inference[i]; }
    printf("  INFO codes that differ between the forward with and without statistics: %zu of %zu\n", differ, n_out);
    double lse_worst = 0.0;
    double* lse_bound = (double*)malloc(n_stats * sizeof(double));
    for (size_t r = 0; r < n_stats; r++) {
        int t = (int)(r % (size_t)T);
        lse_bound[r] = ds[r] + tolerance_sum_rn(t + 1) + 8.0 * FP32_ULP * (1.0 + fabs(lse_ref[r]));
        double e = fabs((double)stats[r] - lse_ref[r]) / lse_bound[r];
        if (!(e <= lse_worst)) { lse_worst = e; }
    }
    report(lse_worst <= 1.0, "statistics vs CPU log-sum-exp (largest error / bound)", lse_worst, 1.0);
    report(fabs((double)amax_o - out_amax) <= pre_max, "amax_o vs CPU max |o| (abs)", fabs((double)amax_o - out_amax),
           pre_max);
    report(fabs((double)amax_s - 1.0) <= 8.0 * FP32_ULP, "amax_s (causal row 0: exp(0) = 1)", fabs((double)amax_s - 1.0),
           8.0 * FP32_ULP);
    report(memcmp(out_codes, out_again, n_out) == 0, "forward twice: bytes that differ",
           (double)(memcmp(out_codes, out_again, n_out) != 0), 0);

    if (backward) {
        // the backward reads the forward's o as the GPU wrote it
        double* dqkv_ref = (double*)malloc(n_qkv * sizeof(double));
        double* bpre = (double*)malloc(n_qkv * sizeof(double));
        double* dp_coef = (double*)malloc(n_qkv * sizeof(double));
        double ds_max;
        reference_backward(dqkv_ref, bpre, dp_coef, &ds_max, qkv, out_gpu, dout, lse_bound, B, T, C, NH, attn_scale,
                           descale_s);
        double dqkv_amax = max_abs(dqkv_ref, n_qkv);
        float scale_dp = FP8_E5M2_MAX / (2.0f * (float)ds_max), scale_dqkv = FP8_E5M2_MAX / (2.0f * (float)dqkv_amax);
        float descale_dp = 1.0f / scale_dp, descale_dqkv = 1.0f / scale_dqkv;
        set_scalar(d_scalars, S_DESCALE_DP, descale_dp);
        set_scalar(d_scalars, S_SCALE_DP, scale_dp);
        set_scalar(d_scalars, S_SCALE_DQKV, scale_dqkv);
        CudnnFp8BackwardScales bs = backward_scales(d_scalars);
        cudaCheck(cudaMemset(d_dqkv, 0xFF, n_qkv));
        attention_backward_cudnn_fp8(cudnn, d_dqkv, d_dout, d_qkv, d_out, d_stats, &bs, B, T, C, NH, 0);
        attention_backward_cudnn_fp8(cudnn, d_dqkv_again, d_dout, d_qkv, d_out, d_stats, &bs, B, T, C, NH, 0);
        cudaCheck(cudaDeviceSynchronize());
        uint8_t* dqkv_codes = (uint8_t*)malloc(n_qkv);
        uint8_t* dqkv_again = (uint8_t*)malloc(n_qkv);
        download(dqkv_codes, d_dqkv, n_qkv);
        download(dqkv_again, d_dqkv_again, n_qkv);
        double* dqkv_gpu = (double*)malloc(n_qkv * sizeof(double));
        double* dbound = (double*)malloc(n_qkv * sizeof(double));
        double part_pre_max[3] = {0.0, 0.0, 0.0}, part_amax[3] = {0.0, 0.0, 0.0};
        for (size_t i = 0; i < n_qkv; i++) {
            int part = (int)(i % (3 * (size_t)C) / (size_t)C);
            dqkv_gpu[i] = (double)fp8_to_float(dqkv_codes[i], FP8_E5M2) * (double)descale_dqkv;
            double p = bpre[i] + dp_coef[i] * (double)descale_dp;
            dbound[i] = p + E5M2_HALF_ULP * (fabs(dqkv_ref[i]) + p) + E5M2_HALF_SUBNORMAL * (double)descale_dqkv;
            part_pre_max[part] = fmax(part_pre_max[part], p);
            part_amax[part] = fmax(part_amax[part], fabs(dqkv_ref[i]));
        }
        // dq, dk, dv one at a time: a stride mistake in one would hide among the three
        static const char* names[3] = {"dq", "dk", "dv"};
        static const int amax_slot[3] = {S_AMAX_DQ, S_AMAX_DK, S_AMAX_DV};
        for (int part = 0; part < 3; part++) {
            double worst = 0.0, diff = 0.0, ref = 0.0;
            for (size_t row = 0; row < (size_t)B * T; row++) {
                for (int c = 0; c < C; c++) {
                    size_t i = row * 3 * C + (size_t)part * C + c;
                    double r = fabs(dqkv_gpu[i] - dqkv_ref[i]) / dbound[i];
                    if (!(r <= worst)) { worst = r; }
                    diff += (dqkv_gpu[i] - dqkv_ref[i]) * (dqkv_gpu[i] - dqkv_ref[i]);
                    ref += dqkv_ref[i] * dqkv_ref[i];
                }
            }
            char what[96];
            snprintf(what, sizeof(what), "backward %s vs CPU (largest |error| / bound)", names[part]);
            report(worst <= 1.0, what, worst, 1.0);
            printf("  INFO backward %s vs CPU, relative L2 %.3g\n", names[part], sqrt(diff / ref));
            float amax = get_scalar(d_scalars, amax_slot[part]);
            snprintf(what, sizeof(what), "amax_%s vs CPU max |%s| (abs)", names[part], names[part]);
            report(fabs((double)amax - part_amax[part]) <= part_pre_max[part], what,
                   fabs((double)amax - part_amax[part]), part_pre_max[part]);
        }
        // amax_dP: the largest |dS| before its cast, with or without attn_scale (which one cuDNN reports is printed)
        double amax_dp = get_scalar(d_scalars, S_AMAX_DP), tol_dp = E5M2_HALF_ULP * ds_max;
        int unscaled = fabs(amax_dp - ds_max) <= tol_dp, scaled = fabs(amax_dp - attn_scale * ds_max) <= attn_scale * tol_dp;
        printf("  INFO amax_dp %.6g: max |dS| %.6g, attn_scale max |dS| %.6g\n", amax_dp, ds_max, attn_scale * ds_max);
        report(unscaled || scaled, unscaled ? "amax_dp vs CPU max |dS| (relative)" : "amax_dp vs CPU attn_scale max |dS|",
               fabs(amax_dp - (unscaled ? ds_max : attn_scale * ds_max)) / (unscaled ? ds_max : attn_scale * ds_max),
               E5M2_HALF_ULP);
        // The deterministic FP8 backward exists on Blackwell only: the frontend reads set_deterministic_algorithm for
        // sdpa_fp8_backward on compute capability 10.x (sdpa_fp8_bwd.h), and Hopper's kernel may sum dq in another
        // order each run (TE turns fused FP8 attention off in training when determinism is asked for). The trainer
        // runs BF16's backward, so this is printed there, not asserted.
        int same_twice = memcmp(dqkv_codes, dqkv_again, n_qkv) == 0;
        if (cc_major >= 10) {
            report(same_twice, "backward twice: bytes that differ", (double)!same_twice, 0);
        } else {
            printf("  INFO backward twice: %s (compute capability %d.x: no deterministic FP8 backward, not asserted)\n",
                   same_twice ? "the same bytes" : "bytes that differ", cc_major);
        }
        free(dqkv_ref);
        free(bpre);
        free(dp_coef);
        free(dqkv_codes);
        free(dqkv_again);
        free(dqkv_gpu);
        free(dbound);
    }
    device_list_free(&dev);
    free(qkv_f);
    free(dout_f);
    free(qkv_codes);
    free(dout_codes);
    free(qkv);
    free(dout);
    free(out_ref);
    free(pre);
    free(lse_ref);
    free(ds);
    free(out_codes);
    free(out_again);
    free(out_inference);
    free(stats);
    free(out_gpu);
    free(out_inf);
    free(bound);
    free(lse_bound);
}

// ----------------------------------------------------------------------------
// where cuDNN quantizes the softmax output: the order the CPU trainer's emulation and doc/fp8_attention.md assume

// The FP8 forward in double from the FP8 values qkv (B, T, 3C) with P quantized (E4M3, scale_s) in one of two
// orders: key_tile 0, the normalized weights (the CPU trainer's, TE's emulation); else a flash kernel's, per tile of
// key_tile keys exp(s - running max) quantized, the accumulator rescaled when the max grows, divided by the row's sum
// at the end, that sum of the unquantized exponentials (sum_quantized 0) or of the quantized ones (1). out (B, T, C)
// before o's own cast.
static void emulate_forward(double* out, const double* qkv, int B, int T, int C, int NH, double attn_scale,
                            float scale_s, int key_tile, int sum_quantized) {
    int HS = C / NH;
    float descale_s = 1.0f / scale_s;
#pragma omp parallel for
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH;
        double* s = (double*)malloc(((size_t)T + HS) * sizeof(double));
        double* acc = s + T;
        for (int t = 0; t < T; t++) {
            const double* q = qkv + ((size_t)b * T + t) * 3 * C + (size_t)h * HS;
            double maxval = -INFINITY;
            for (int u = 0; u <= t; u++) {
                const double* k = qkv + ((size_t)b * T + u) * 3 * C + C + (size_t)h * HS;
                double dot = 0.0;
                for (int d = 0; d < HS; d++) { dot += q[d] * k[d]; }
                s[u] = dot * attn_scale;
                maxval = fmax(maxval, s[u]);
            }
            double running = -INFINITY, l = 0.0, sum = 0.0;
            for (int u = 0; !key_tile && u <= t; u++) { sum += exp(s[u] - maxval); }  // the normalized order's
            for (int d = 0; d < HS; d++) { acc[d] = 0.0; }
            int tile = key_tile ? key_tile : t + 1;
            for (int u0 = 0; u0 <= t; u0 += tile) {
                int u1 = u0 + tile < t + 1 ? u0 + tile : t + 1;
                double tile_max = running;
                for (int u = u0; u < u1; u++) { tile_max = fmax(tile_max, s[u]); }
                if (key_tile) {
                    double rescale = exp(running - tile_max);
                    l *= rescale;
                    for (int d = 0; d < HS; d++) { acc[d] *= rescale; }
                    running = tile_max;
                }
                for (int u = u0; u < u1; u++) {
                    double e = key_tile ? exp(s[u] - running) : exp(s[u] - maxval) / sum;
                    double p = (double)(fp8_round((float)e * scale_s, FP8_E4M3) * descale_s);
                    l += sum_quantized ? p : e;
                    const double* v = qkv + ((size_t)b * T + u) * 3 * C + 2 * C + (size_t)h * HS;
                    for (int d = 0; d < HS; d++) { acc[d] += p * v[d]; }
                }
            }
            double* o = out + ((size_t)b * T + t) * C + (size_t)h * HS;
            for (int d = 0; d < HS; d++) { o[d] = key_tile ? acc[d] / l : acc[d]; }
        }
        free(s);
    }
}

// cuDNN's FP8 forward against each order's emulation at one shape: q and k small (scores within a few hundredths of
// each other, weights near 1/(t + 1): a first step's attention) and v in [-2, 2), with scale_s 1.0 (before the first
// update: every scale is 1.0) and then 448. At scale 1.0 and T 1024 the normalized weights of the later rows sit at
// E4M3's bottom (2^-9 and below) while a flash kernel's exp(s - running max) are near 1, so the two orders part widely
// (doc/fp8_attention.md: 33% and 1.4% off on the CPU): asserted, the kernel is nearer a tile order by 4x or more.
static void check_softmax_order(CudnnAttention* cudnn, int B, int T, int NH, int HS, Rng* rng) {
    int C = NH * HS;
    size_t n_qkv = (size_t)B * T * 3 * C, n_out = (size_t)B * T * C, n_stats = (size_t)B * NH * T;
    double attn_scale = (double)(1.0f / sqrtf((float)HS));
    char why[1024] = "";
    printf("softmax quantization order: B %d, T %d, NH %d, HS %d, near-uniform weights\n", B, T, NH, HS);
    if (!cudnn_attention_fp8_supported(cudnn, B, T, C, NH, 0, why, sizeof(why))) {
        printf("  INFO FP8 forward not built here: %.300s\n", why);
        return;
    }
    float* qkv_f = (float*)malloc(n_qkv * sizeof(float));
    random_bf16_values(qkv_f, n_qkv, 2.0f, rng);
    for (size_t i = 0; i < n_qkv; i++) {
        if ((i % (3 * (size_t)C)) < 2 * (size_t)C) { qkv_f[i] = bf16_round(qkv_f[i] * 0.125f); }  // q and k
    }
    uint8_t* qkv_codes = (uint8_t*)malloc(n_qkv);
    double* qkv = (double*)malloc(n_qkv * sizeof(double));
    float scale_qkv = FP8_E4M3_MAX / 2.0f;
    fp8_host_cast(qkv_codes, qkv, qkv_f, n_qkv, FP8_E4M3, scale_qkv);
    double* out_ref = (double*)malloc(n_out * sizeof(double));
    double* pre = (double*)malloc(n_out * sizeof(double));
    double* lse_ref = (double*)malloc(n_stats * sizeof(double));
    double* ds = (double*)malloc(n_stats * sizeof(double));
    attention_fp8_reference_forward(out_ref, lse_ref, ds, pre, qkv, B, T, C, NH, attn_scale, 1.0);
    float scale_o = FP8_E4M3_MAX / (2.0f * (float)max_abs(out_ref, n_out)), descale_o = 1.0f / scale_o;

    DeviceList dev = {{NULL}, 0};
    prepare_workspace(&dev, cudnn, B, T, C, NH, 0, 0);
    uint8_t* d_qkv = upload_bytes(&dev, qkv_codes, n_qkv);
    uint8_t* d_out;
    float *d_stats, *d_scalars;
    device_alloc(&dev, &d_out, n_out);
    device_alloc(&dev, &d_stats, n_stats * sizeof(float));
    device_alloc(&dev, &d_scalars, S_COUNT * SCALAR_STRIDE * sizeof(float));
    uint8_t* out_codes = (uint8_t*)malloc(n_out);
    double* out_gpu = (double*)malloc(n_out * sizeof(double));
    double* emulated = (double*)malloc(n_out * sizeof(double));
    static const int tiles[] = {0, 64, 128, 256};
    static const float scales_s[] = {1.0f, FP8_E4M3_MAX};
    for (int si = 0; si < 2; si++) {
        float scale_s = scales_s[si];
        cudaCheck(cudaMemset(d_scalars, 0xFF, S_COUNT * SCALAR_STRIDE * sizeof(float)));
        set_scalar(d_scalars, S_DESCALE_QKV, 1.0f / scale_qkv);
        set_scalar(d_scalars, S_DESCALE_S, 1.0f / scale_s);
        set_scalar(d_scalars, S_SCALE_S, scale_s);
        set_scalar(d_scalars, S_SCALE_O, scale_o);
        CudnnFp8ForwardScales fs = forward_scales(d_scalars);
        attention_forward_cudnn_fp8(cudnn, d_out, d_stats, d_qkv, &fs, B, T, C, NH, 0);
        cudaCheck(cudaDeviceSynchronize());
        download(out_codes, d_out, n_out);
        for (size_t i = 0; i < n_out; i++) {
            out_gpu[i] = (double)fp8_to_float(out_codes[i], FP8_E4M3) * (double)descale_o;
        }
        printf("  INFO scale_s %g: cuDNN's o against the exact attention: relative L2 %.4g\n", (double)scale_s,
               relative_l2(out_gpu, out_ref, n_out));
        double normalized = 0.0, nearest_tile = INFINITY;
        for (size_t ti = 0; ti < sizeof(tiles) / sizeof(tiles[0]); ti++) {
            for (int sum_quantized = 0; sum_quantized <= (tiles[ti] ? 1 : 0); sum_quantized++) {
                emulate_forward(emulated, qkv, B, T, C, NH, attn_scale, scale_s, tiles[ti], sum_quantized);
                size_t same = 0;
                for (size_t i = 0; i < n_out; i++) {
                    uint8_t code = fp8_from_float((float)emulated[i] * scale_o, FP8_E4M3);
                    same += code == out_codes[i];
                    emulated[i] = (double)fp8_to_float(code, FP8_E4M3) * (double)descale_o;
                }
                double distance = relative_l2(out_gpu, emulated, n_out);
                if (tiles[ti]) {
                    nearest_tile = fmin(nearest_tile, distance);
                    printf("  INFO   against P per %d-key tile, row sum of the %s exponentials: relative L2 %.4g, "
                           "%.2f%% of o's codes the same\n", tiles[ti], sum_quantized ? "quantized" : "unquantized",
                           distance, 100.0 * (double)same / (double)n_out);
                } else {
                    normalized = distance;
                    printf("  INFO   against P normalized (the CPU trainer's order): relative L2 %.4g, %.2f%% of o's "
                           "codes the same\n", distance, 100.0 * (double)same / (double)n_out);
                }
            }
        }
        if (si == 0) {
            report(4.0 * nearest_tile <= normalized, "scale_s 1: a tile order 4x nearer than normalized (ratio)",
                   normalized / nearest_tile, 4.0);
        }
    }
    device_list_free(&dev);
    free(qkv_f);
    free(qkv_codes);
    free(qkv);
    free(out_ref);
    free(pre);
    free(lse_ref);
    free(ds);
    free(out_codes);
    free(out_gpu);
    free(emulated);
}

// ----------------------------------------------------------------------------
// timing: FP8 against BF16, one layer, the same shapes

typedef struct {
    CudnnAttention* cudnn;
    int B, T, C, NH;
    __nv_bfloat16 *qkv, *out, *dout, *dqkv;  // BF16 graphs' buffers
    uint8_t *qkv8, *out8, *dout8, *dqkv8;    // FP8 graphs' buffers
    float *stats, *scalars;
} TimedLayer;

// One call of the layer: the forward (backward 0) or forward + backward, FP8 (fp8 1) or BF16
typedef struct {
    const TimedLayer* layer;
    int fp8, backward;
} TimedCall;

static void run_layer(const void* arg) {
    const TimedCall* c = (const TimedCall*)arg;
    const TimedLayer* l = c->layer;
    if (c->fp8) {
        CudnnFp8ForwardScales fs = forward_scales(l->scalars);
        attention_forward_cudnn_fp8(l->cudnn, l->out8, l->stats, l->qkv8, &fs, l->B, l->T, l->C, l->NH, 0);
        if (c->backward) {
            CudnnFp8BackwardScales bs = backward_scales(l->scalars);
            attention_backward_cudnn_fp8(l->cudnn, l->dqkv8, l->dout8, l->qkv8, l->out8, l->stats, &bs, l->B, l->T,
                                         l->C, l->NH, 0);
        }
    } else {
        attention_forward_cudnn(l->cudnn, l->out, l->stats, l->qkv, l->B, l->T, l->C, l->NH, 0);
        if (c->backward) {
            attention_backward_cudnn(l->cudnn, l->dqkv, l->dout, l->qkv, l->out, l->stats, l->B, l->T, l->C, l->NH, 0);
        }
    }
}

// Milliseconds per call (3 warm-up calls, 20 timed)
static float time_layer(const TimedLayer* l, int fp8, int backward) {
    TimedCall c = {l, fp8, backward};
    return bench_ms_per_call(run_layer, &c, 3, 20);
}

static void time_shape(const char* name, CudnnAttention* cudnn, int B, int T, int NH, int HS, Rng* rng) {
    int C = NH * HS;
    size_t n_qkv = (size_t)B * T * 3 * C, n_out = (size_t)B * T * C;
    char why[1024] = "";
    if (!cudnn_attention_fp8_supported(cudnn, B, T, C, NH, 0, why, sizeof(why))) {
        printf("%s (B %d, T %d, NH %d, HS %d): no FP8 forward here: %.300s\n", name, B, T, NH, HS, why);
        return;
    }
    int backward = fp8_backward_supported(cudnn, B, T, NH, HS, why, sizeof(why));
    DeviceList dev = {{NULL}, 0};
    prepare_workspace(&dev, cudnn, B, T, C, NH, backward, 1);
    TimedLayer l = {cudnn, B, T, C, NH, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    // inputs: bf16 in [-2, 2) and [-1, 1); the FP8 ones their casts at scales from those ranges
    float* staging = (float*)malloc(n_qkv * sizeof(float));
    __nv_bfloat16* bf = (__nv_bfloat16*)malloc(n_qkv * sizeof(__nv_bfloat16));
    uint8_t* codes = (uint8_t*)malloc(n_qkv);
    double* values = (double*)malloc(n_qkv * sizeof(double));
    for (int which = 0; which < 2; which++) {
        size_t n = which == 0 ? n_qkv : n_out;
        float range = which == 0 ? 2.0f : 1.0f;
        random_bf16_values(staging, n, range, rng);
        for (size_t i = 0; i < n; i++) { bf[i] = __float2bfloat16_rn(staging[i]); }
        fp8_host_cast(codes, values, staging, n, which == 0 ? FP8_E4M3 : FP8_E5M2,
                      (which == 0 ? FP8_E4M3_MAX : FP8_E5M2_MAX) / range);
        device_upload(&dev, which == 0 ? &l.qkv : &l.dout, bf, n * sizeof(__nv_bfloat16));
        device_upload(&dev, which == 0 ? &l.qkv8 : &l.dout8, codes, n);
    }
    device_alloc(&dev, &l.out, n_out * sizeof(__nv_bfloat16));
    device_alloc(&dev, &l.dqkv, n_qkv * sizeof(__nv_bfloat16));
    device_alloc(&dev, &l.out8, n_out);
    device_alloc(&dev, &l.dqkv8, n_qkv);
    device_alloc(&dev, &l.stats, (size_t)B * NH * T * sizeof(float));
    device_alloc(&dev, &l.scalars, S_COUNT * SCALAR_STRIDE * sizeof(float));
    // scales of the magnitudes these inputs give (their values do not change the time)
    static const struct { int slot; float value; } scales[] = {
        {S_DESCALE_QKV, 2.0f / FP8_E4M3_MAX}, {S_DESCALE_S, 1.0f / FP8_E4M3_MAX}, {S_SCALE_S, FP8_E4M3_MAX},
        {S_SCALE_O, FP8_E4M3_MAX / 2.0f}, {S_DESCALE_O, 2.0f / FP8_E4M3_MAX}, {S_DESCALE_DO, 1.0f / FP8_E5M2_MAX},
        {S_DESCALE_DP, 1.0f / FP8_E5M2_MAX}, {S_SCALE_DP, FP8_E5M2_MAX}, {S_SCALE_DQKV, FP8_E5M2_MAX}};
    for (size_t i = 0; i < sizeof(scales) / sizeof(scales[0]); i++) { set_scalar(l.scalars, scales[i].slot, scales[i].value); }
    float forward_bf16 = time_layer(&l, 0, 0), forward_fp8 = time_layer(&l, 1, 0);
    // causal attention's FLOPs: two GEMMs forward, five backward, of B*NH*T*T*HS multiply-adds over the half kept
    double gemm_flops = (double)B * NH * T * T * HS;
    printf("%s (B %d, T %d, NH %d, HS %d), one layer: forward BF16 %.3f ms | FP8 %.3f ms (%.1f TFLOP/s) %.2fx", name, B,
           T, NH, HS, forward_bf16, forward_fp8, 2 * gemm_flops / (forward_fp8 * 1e9), forward_bf16 / forward_fp8);
    if (backward) {
        float both_bf16 = time_layer(&l, 0, 1), both_fp8 = time_layer(&l, 1, 1);
        printf("; forward+backward BF16 %.3f ms | FP8 %.3f ms (%.1f TFLOP/s) %.2fx\n", both_bf16, both_fp8,
               7 * gemm_flops / (both_fp8 * 1e9), both_bf16 / both_fp8);
    } else {
        float both_bf16 = time_layer(&l, 0, 1);
        printf("; forward+backward BF16 %.3f ms, an FP8 forward with the BF16 backward about %.2fx; no FP8 "
               "backward here: %.200s\n", both_bf16, both_bf16 / (both_bf16 - forward_bf16 + forward_fp8), why);
    }
    device_list_free(&dev);
    free(staging);
    free(bf);
    free(codes);
    free(values);
}

// The support query answers without exiting, and gives a reason with every no. On Hopper (compute capability 9.x) the
// frontend builds the FP8 backward at head size 128 only: the answer at 64 must be no there.
static void check_support_query(CudnnAttention* cudnn) {
    int device, major;
    cudaCheck(cudaGetDevice(&device));
    cudaCheck(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    static const struct { int B, T, NH, HS, backward; const char* what; } cases[] = {
        {2, 256, 12, 64, 0, "forward, d12's heads (HS 64)"}, {2, 256, 4, 128, 0, "forward, HS 128"},
        {2, 256, 12, 64, 1, "backward, d12's heads (HS 64)"}, {2, 256, 4, 128, 1, "backward, HS 128"},
        {2, 64, 4, 12, 0, "forward, HS 12 (not a multiple of 8)"}};
    printf("cudnn_attention_fp8_supported (compute capability %d.x)\n", major);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char why[1024] = "";
        int got = cudnn_attention_fp8_supported(cudnn, cases[i].B, cases[i].T, cases[i].NH * cases[i].HS, cases[i].NH,
                                                cases[i].backward, why, sizeof(why));
        int expected = cases[i].HS % 16 != 0 ? 0 : (cases[i].backward && cases[i].HS != 128 && major == 9) ? 0 : 1;
        char what[200];
        snprintf(what, sizeof(what), "%s: %s", cases[i].what, got ? "built" : "not built");
        report(got == expected && (got || why[0] != '\0'), what, got, expected);
        if (!got) { printf("    because %.400s\n", why); }
    }
}

int main(void) {
    // B, T, NH, HS: d12's heads; head size 128 (the FP8 backward too); T not a multiple of 64; d48's heads at T 1024;
    // d12's width in heads of 128 at T 1024
    static const int shapes[][4] = {{2, 256, 12, 64}, {2, 256, 4, 128}, {2, 100, 4, 128}, {1, 1024, 25, 64},
                                    {1, 1024, 6, 128}};
    require_cuda_device("attention_cudnn_fp8");
    Rng rng;
    rng_seed(&rng, 57);
    CudnnAttention* cudnn = cudnn_attention_create();
    check_support_query(cudnn);
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        check_shape(cudnn, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], &rng);
    }
    check_softmax_order(cudnn, 1, 1024, 2, 64, &rng);
    time_shape("d12", cudnn, 8, 1024, 12, 64, &rng);
    time_shape("d48", cudnn, 16, 1024, 25, 64, &rng);
    time_shape("d12 in heads of 128", cudnn, 8, 1024, 6, 128, &rng);
    cudnn_attention_destroy(cudnn);
    printf("attention_cudnn_fp8: %d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
