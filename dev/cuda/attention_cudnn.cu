/*
dev/cuda/attention_cudnn.cu — cuDNN's fused flash attention (llmc/cudnn_attention.cpp) on its own: forward (output and
softmax statistics) and backward against a CPU reference in double and against the plain CUDA/cuBLAS attention
(llmc/attention.cuh), on several shapes (head sizes 64 and 128, T not a multiple of 64, B*NH large); that cuDNN writes
every element of its outputs and that its backward gives the same bits twice; then the time of both, forward and
forward + backward of one layer, at the d12 and d48 attention shapes. First, that cudnn_attention_supported says yes
and no where it should, without exiting (the trainer falls back to the plain attention on a no).

Build: make dev/cuda/attention_cudnn (the Makefile builds it when it finds cuDNN and the frontend)
Run:   ./dev/cuda/attention_cudnn      (prints one line and exits 1 without a GPU)
*/
#include <cuda_bf16.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../llmc/attention.cuh"
#include "../../llmc/cudnn_attention.h"
#include "../../llmc/rand.h"
#include "../../llmc/tolerance.h"
#include "bench.h"

static int checks = 0, failures = 0;

static void report(int ok, const char* what, double value, double tolerance) {
    checks++;
    failures += !ok;
    printf("  %s %-40s %.3g (tolerance %.3g)\n", ok ? "PASS" : "FAIL", what, value, tolerance);
}

static float bf16_value(floatX x) { return __bfloat162float(x); }

// ----------------------------------------------------------------------------
// CPU reference in double, on the bf16 values the GPU sees

// p (t + 1): the attention weights of query t of head h in batch b over keys 0..t (causal softmax of the scaled
// scores); returns their log-sum-exp (cuDNN's statistic). qkv (B, T, 3, NH, HS).
static double causal_weights(double* p, const float* qkv, int b, int h, int t, int T, int C, int NH) {
    int HS = C / NH;
    double scale = 1.0 / sqrt((double)HS), maxval = -INFINITY, sum = 0.0;
    const float* q = qkv + ((size_t)b * T + t) * 3 * C + (size_t)h * HS;
    for (int u = 0; u <= t; u++) {
        const float* k = qkv + ((size_t)b * T + u) * 3 * C + C + (size_t)h * HS;
        double dot = 0.0;
        for (int d = 0; d < HS; d++) { dot += (double)q[d] * k[d]; }
        p[u] = dot * scale;
        maxval = fmax(maxval, p[u]);
    }
    for (int u = 0; u <= t; u++) {
        p[u] = exp(p[u] - maxval);
        sum += p[u];
    }
    for (int u = 0; u <= t; u++) { p[u] /= sum; }
    return maxval + log(sum);
}

// out (B, T, C), lse (B, NH, T): causal softmax(scale q k^T) v per head, and each row's log-sum-exp
static void attention_forward_cpu(double* out, double* lse, const float* qkv, int B, int T, int C, int NH) {
    int HS = C / NH;
#pragma omp parallel for collapse(2)
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            double* p = (double*)malloc((size_t)T * sizeof(double));
            for (int t = 0; t < T; t++) {
                lse[((size_t)b * NH + h) * T + t] = causal_weights(p, qkv, b, h, t, T, C, NH);
                double* o = out + ((size_t)b * T + t) * C + (size_t)h * HS;
                for (int d = 0; d < HS; d++) { o[d] = 0.0; }
                for (int u = 0; u <= t; u++) {
                    const float* v = qkv + ((size_t)b * T + u) * 3 * C + 2 * C + (size_t)h * HS;
                    for (int d = 0; d < HS; d++) { o[d] += p[u] * v[d]; }
                }
            }
            free(p);
        }
    }
}

// dqkv (B, T, 3C) from dout (B, T, C): with P the attention weights and dP = dout v^T, dS = P (dP - rowsum(P dP)),
// dq = scale dS k, dk = scale dS^T q, dv = P^T dout.
static void attention_backward_cpu(double* dqkv, const float* dout, const float* qkv, int B, int T, int C, int NH) {
    int HS = C / NH;
    double scale = 1.0 / sqrt((double)HS);
    memset(dqkv, 0, (size_t)B * T * 3 * C * sizeof(double));
#pragma omp parallel for collapse(2)
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            double* p = (double*)malloc((size_t)T * sizeof(double));
            double* dp = (double*)malloc((size_t)T * sizeof(double));
            for (int t = 0; t < T; t++) {
                causal_weights(p, qkv, b, h, t, T, C, NH);
                const float* q = qkv + ((size_t)b * T + t) * 3 * C + (size_t)h * HS;
                const float* dy = dout + ((size_t)b * T + t) * C + (size_t)h * HS;
                double row = 0.0;
                for (int u = 0; u <= t; u++) {
                    const float* v = qkv + ((size_t)b * T + u) * 3 * C + 2 * C + (size_t)h * HS;
                    double dot = 0.0;
                    for (int d = 0; d < HS; d++) { dot += (double)dy[d] * v[d]; }
                    dp[u] = dot;
                    row += p[u] * dot;
                }
                double* dq = dqkv + ((size_t)b * T + t) * 3 * C + (size_t)h * HS;
                for (int u = 0; u <= t; u++) {
                    double ds = p[u] * (dp[u] - row) * scale;
                    const float* k = qkv + ((size_t)b * T + u) * 3 * C + C + (size_t)h * HS;
                    double* dk = dqkv + ((size_t)b * T + u) * 3 * C + C + (size_t)h * HS;
                    double* dv = dk + C;
                    for (int d = 0; d < HS; d++) {
                        dq[d] += ds * k[d];
                        dk[d] += ds * q[d];  // (b, h) owns its rows of dk, dv: no two threads write the same one
                        dv[d] += p[u] * dy[d];
                    }
                }
            }
            free(p);
            free(dp);
        }
    }
}

// ----------------------------------------------------------------------------
// comparisons

// ||got - want|| / ||want|| over n values; got bf16 on the host
static double relative_l2_bf16(const floatX* got, const double* want, size_t n) {
    double diff = 0.0, ref = 0.0;
    for (size_t i = 0; i < n; i++) {
        double g = bf16_value(got[i]);
        diff += (g - want[i]) * (g - want[i]);
        ref += want[i] * want[i];
    }
    return ref > 0.0 ? sqrt(diff / ref) : sqrt(diff);
}

static double relative_l2_two(const floatX* a, const floatX* b, size_t n) {
    double diff = 0.0, ref = 0.0;
    for (size_t i = 0; i < n; i++) {
        double x = bf16_value(a[i]), y = bf16_value(b[i]);
        diff += (x - y) * (x - y);
        ref += y * y;
    }
    return ref > 0.0 ? sqrt(diff / ref) : sqrt(diff);
}

static size_t count_not_finite(const floatX* x, size_t n) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) { bad += !isfinite(bf16_value(x[i])); }
    return bad;
}

static floatX* download(const floatX* device, size_t n) {
    floatX* host = (floatX*)malloc(n * sizeof(floatX));
    cudaCheck(cudaMemcpy(host, device, n * sizeof(floatX), cudaMemcpyDeviceToHost));
    return host;
}

// A GPU buffer (on `list`) of n bf16 values uniform in [-range, range), and the same values as floats on the host.
static floatX* random_bf16(DeviceList* list, float* host, size_t n, float range, Rng* rng) {
    floatX* staging = (floatX*)malloc(n * sizeof(floatX));
    for (size_t i = 0; i < n; i++) {
        staging[i] = __float2bfloat16_rn((rng_uniform(rng) * 2.0f - 1.0f) * range);
        host[i] = bf16_value(staging[i]);
    }
    floatX* device;
    device_upload(list, &device, staging, n * sizeof(floatX));
    free(staging);
    return device;
}

// Plain attention's buffers for one layer: att (B, NH, T, T), its scratch, dq, dk, dv.
typedef struct {
    floatX *att, *dq, *dk, *dv;
    AttentionScratch scratch;
} PlainAttention;

static void plain_init(DeviceList* list, PlainAttention* p, int B, int T, int C, int NH) {
    size_t btc = (size_t)B * T * C, tt = (size_t)B * NH * T * T;
    memset(p, 0, sizeof(*p));  // cuBLAS on its own workspace pool
    device_alloc(list, &p->att, tt * 2);
    device_alloc(list, &p->scratch.preatt, tt * 2);
    floatX** small[7] = {&p->scratch.q, &p->scratch.k, &p->scratch.v, &p->scratch.y, &p->dq, &p->dk, &p->dv};
    for (int i = 0; i < 7; i++) { device_alloc(list, small[i], btc * 2); }
}

// A workspace for the shape's graphs (on `list`; none when 0 bytes): cudnn_attention_prepare says how large.
static void prepare_workspace(DeviceList* list, CudnnAttention* cudnn, int B, int T, int C, int NH, size_t* bytes) {
    *bytes = cudnn_attention_prepare(cudnn, B, T, C, NH);
    void* workspace = NULL;
    if (*bytes) { device_alloc(list, &workspace, *bytes); }
    cudnn_attention_set_workspace(cudnn, workspace, *bytes);
}

// ----------------------------------------------------------------------------
// the checks of one shape

// Tolerances, against the double reference (llmc/tolerance.h's rules, in half bf16 ulps, 2^-8 of a value: each side
// rounds to nearest from nearly exact fp32 sums, R2 being far below a bf16 ulp at these lengths):
//   forward, relative L2: R5 over 6 roundings: the probabilities (att, or cuDNN's P before P v) and the output, one
//     each; the plain attention rounds the scores too, and a score s rounded moves exp(s) by |s| * 2^-8, relative:
//     the scores that dominate a row are a few of their standard deviation (4/3 for inputs uniform in [-2, 2), at any
//     head size), so that rounding counts as 4. cuDNN rounds no more;
//   statistics, absolute: cuDNN's log-sum-exp from fp32 scores of the exact bf16 inputs: R2 over the HS products of a
//     score (|q k| <= 4, scaled by 1/sqrt(HS)) and the T exponentials of a row, and a few fp32 ulps of exp and log;
//   backward, relative L2: R5 over the forward's 6 and the backward's 3 (dP or datt, dS or dpreatt, dq dk dv), doubled:
//     dS = P (dP - sum P dP) subtracts two sums of the same size, which loses one bit of their relative accuracy;
//   cuDNN against plain: the sum of their two tolerances to the reference.
enum { FORWARD_ROUNDINGS = 6, BACKWARD_ROUNDINGS = 9, SOFTMAX_CANCELLATION = 2 };
#define HALF_BF16_ULP (BF16_ULP / 2)

static void check_shape(CudnnAttention* cudnn, int B, int T, int NH, int HS, Rng* rng) {
    int C = NH * HS;
    size_t n_qkv = (size_t)B * T * 3 * C, n_out = (size_t)B * T * C, n_stats = (size_t)B * NH * T;
    printf("B %d, T %d, NH %d, HS %d (B*NH %d)\n", B, T, NH, HS, B * NH);
    float* qkv_host = (float*)malloc(n_qkv * sizeof(float));
    float* dout_host = (float*)malloc(n_out * sizeof(float));
    DeviceList dev = {{NULL}, 0};
    floatX* qkv = random_bf16(&dev, qkv_host, n_qkv, 2.0f, rng);
    floatX* dout = random_bf16(&dev, dout_host, n_out, 1.0f, rng);
    double* out_ref = (double*)malloc(n_out * sizeof(double));
    double* lse_ref = (double*)malloc(n_stats * sizeof(double));
    double* dqkv_ref = (double*)malloc(n_qkv * sizeof(double));
    attention_forward_cpu(out_ref, lse_ref, qkv_host, B, T, C, NH);
    attention_backward_cpu(dqkv_ref, dout_host, qkv_host, B, T, C, NH);

    // cuDNN, its outputs first filled with NaN (0xFF bytes), so an element it does not write shows
    size_t workspace_bytes;
    prepare_workspace(&dev, cudnn, B, T, C, NH, &workspace_bytes);
    floatX *out, *dqkv, *dqkv_again;
    float* stats;
    device_alloc(&dev, &out, n_out * 2);
    device_alloc(&dev, &dqkv, n_qkv * 2);
    device_alloc(&dev, &dqkv_again, n_qkv * 2);
    device_alloc(&dev, &stats, n_stats * 4);
    cudaCheck(cudaMemset(out, 0xFF, n_out * 2));
    cudaCheck(cudaMemset(dqkv, 0xFF, n_qkv * 2));
    cudaCheck(cudaMemset(stats, 0xFF, n_stats * 4));
    attention_forward_cudnn(cudnn, out, stats, qkv, B, T, C, NH, 0);
    attention_backward_cudnn(cudnn, dqkv, dout, qkv, out, stats, B, T, C, NH, 0);
    attention_backward_cudnn(cudnn, dqkv_again, dout, qkv, out, stats, B, T, C, NH, 0);
    cudaCheck(cudaDeviceSynchronize());
    floatX* out_cudnn = download(out, n_out);
    floatX* dqkv_cudnn = download(dqkv, n_qkv);
    floatX* dqkv_cudnn_again = download(dqkv_again, n_qkv);
    float* stats_cudnn = (float*)malloc(n_stats * 4);
    cudaCheck(cudaMemcpy(stats_cudnn, stats, n_stats * 4, cudaMemcpyDeviceToHost));
    // the forward without statistics (evaluation's graph) into the same output
    cudaCheck(cudaMemset(out, 0xFF, n_out * 2));
    attention_forward_cudnn(cudnn, out, NULL, qkv, B, T, C, NH, 0);
    cudaCheck(cudaDeviceSynchronize());
    floatX* out_inference = download(out, n_out);

    // plain attention
    PlainAttention plain;
    plain_init(&dev, &plain, B, T, C, NH);
    cublasHandle_t cublas;
    cublasCheck(cublasCreate(&cublas));
    attention_forward(out, plain.att, qkv, B, T, C, NH, &plain.scratch, cublas, 0);
    attention_backward(dqkv, dout, qkv, plain.att, B, T, C, NH, &plain.scratch, plain.dq, plain.dk, plain.dv, cublas, 0);
    cudaCheck(cudaDeviceSynchronize());
    floatX* out_plain = download(out, n_out);
    floatX* dqkv_plain = download(dqkv, n_qkv);

    size_t unwritten = count_not_finite(out_cudnn, n_out) + count_not_finite(dqkv_cudnn, n_qkv);
    size_t stats_unwritten = 0;
    double lse_err = 0.0;
    for (size_t i = 0; i < n_stats; i++) {
        if (!isfinite(stats_cudnn[i])) { stats_unwritten++; continue; }
        lse_err = fmax(lse_err, fabs((double)stats_cudnn[i] - lse_ref[i]));
    }
    double largest_lse = 0.0;
    for (size_t i = 0; i < n_stats; i++) { largest_lse = fmax(largest_lse, fabs(lse_ref[i])); }
    double forward_tol = tolerance_chain_l2(FORWARD_ROUNDINGS, HALF_BF16_ULP);
    double stats_tol = tolerance_sum_rn(HS) * 4.0 * sqrt((double)HS) + tolerance_sum_rn(T) + 8.0 * FP32_ULP * (1.0 + largest_lse);
    report(unwritten + stats_unwritten == 0, "cuDNN outputs: elements left unwritten", (double)(unwritten + stats_unwritten), 0);
    report(relative_l2_bf16(out_cudnn, out_ref, n_out) <= forward_tol, "forward cuDNN vs CPU (rel. L2)",
           relative_l2_bf16(out_cudnn, out_ref, n_out), forward_tol);
    report(lse_err <= stats_tol, "statistics cuDNN vs CPU log-sum-exp (max abs)", lse_err, stats_tol);
    report(relative_l2_bf16(out_inference, out_ref, n_out) <= forward_tol, "forward without statistics vs CPU",
           relative_l2_bf16(out_inference, out_ref, n_out), forward_tol);
    report(relative_l2_bf16(out_plain, out_ref, n_out) <= forward_tol, "forward plain vs CPU",
           relative_l2_bf16(out_plain, out_ref, n_out), forward_tol);
    report(relative_l2_two(out_cudnn, out_plain, n_out) <= 2.0 * forward_tol, "forward cuDNN vs plain",
           relative_l2_two(out_cudnn, out_plain, n_out), 2.0 * forward_tol);
    double backward_tol = SOFTMAX_CANCELLATION * tolerance_chain_l2(BACKWARD_ROUNDINGS, HALF_BF16_ULP);
    // dq, dk, dv one at a time: a stride mistake in one of them would hide in the norm of all three
    static const char* names[3] = {"dq", "dk", "dv"};
    for (int part = 0; part < 3; part++) {
        double diff_c = 0.0, diff_p = 0.0, diff_cp = 0.0, ref = 0.0;
        for (size_t row = 0; row < (size_t)B * T; row++) {
            for (int c = 0; c < C; c++) {
                size_t i = row * 3 * C + (size_t)part * C + c;
                double w = dqkv_ref[i], gc = bf16_value(dqkv_cudnn[i]), gp = bf16_value(dqkv_plain[i]);
                diff_c += (gc - w) * (gc - w);
                diff_p += (gp - w) * (gp - w);
                diff_cp += (gc - gp) * (gc - gp);
                ref += w * w;
            }
        }
        char what[64];
        snprintf(what, sizeof(what), "backward %s cuDNN vs CPU", names[part]);
        report(sqrt(diff_c / ref) <= backward_tol, what, sqrt(diff_c / ref), backward_tol);
        snprintf(what, sizeof(what), "backward %s plain vs CPU", names[part]);
        report(sqrt(diff_p / ref) <= backward_tol, what, sqrt(diff_p / ref), backward_tol);
        snprintf(what, sizeof(what), "backward %s cuDNN vs plain", names[part]);
        report(sqrt(diff_cp / ref) <= 2.0 * backward_tol, what, sqrt(diff_cp / ref), 2.0 * backward_tol);
    }
    report(memcmp(dqkv_cudnn, dqkv_cudnn_again, n_qkv * 2) == 0, "cuDNN backward twice: bytes that differ",
           (double)(memcmp(dqkv_cudnn, dqkv_cudnn_again, n_qkv * 2) != 0), 0);

    cublasCheck(cublasDestroy(cublas));
    device_list_free(&dev);  // the inputs, outputs, workspace and the plain attention's buffers
    free(qkv_host);
    free(dout_host);
    free(out_ref);
    free(lse_ref);
    free(dqkv_ref);
    free(out_cudnn);
    free(dqkv_cudnn);
    free(dqkv_cudnn_again);
    free(stats_cudnn);
    free(out_inference);
    free(out_plain);
    free(dqkv_plain);
}

// ----------------------------------------------------------------------------
// timing

// Milliseconds per call of forward (backward 0) or forward + backward (backward 1), cuDNN (use_cudnn 1) or plain.
static float time_attention(int use_cudnn, int backward, CudnnAttention* cudnn, PlainAttention* plain,
                            cublasHandle_t cublas, floatX* out, float* stats, floatX* dqkv, const floatX* qkv,
                            const floatX* dout, int B, int T, int C, int NH) {
    BenchTimer timer;
    bench_timer_init(&timer);
    const int warmup = 3, reps = 20;
    for (int r = 0; r < warmup + reps; r++) {
        if (r == warmup) { bench_start(&timer); }
        if (use_cudnn) {
            attention_forward_cudnn(cudnn, out, stats, qkv, B, T, C, NH, 0);
            if (backward) { attention_backward_cudnn(cudnn, dqkv, dout, qkv, out, stats, B, T, C, NH, 0); }
        } else {
            attention_forward(out, plain->att, qkv, B, T, C, NH, &plain->scratch, cublas, 0);
            if (backward) {
                attention_backward(dqkv, dout, qkv, plain->att, B, T, C, NH, &plain->scratch, plain->dq, plain->dk,
                                   plain->dv, cublas, 0);
            }
        }
    }
    float ms = bench_stop_ms(&timer);
    bench_timer_free(&timer);
    return ms / reps;
}

static void time_shape(const char* name, CudnnAttention* cudnn, int B, int T, int NH, int HS, Rng* rng) {
    int C = NH * HS;
    size_t n_qkv = (size_t)B * T * 3 * C, n_out = (size_t)B * T * C;
    float* scratch_host = (float*)malloc(n_qkv * sizeof(float));
    DeviceList dev = {{NULL}, 0};
    floatX* qkv = random_bf16(&dev, scratch_host, n_qkv, 2.0f, rng);
    floatX* dout = random_bf16(&dev, scratch_host, n_out, 1.0f, rng);
    floatX *out, *dqkv;
    float* stats;
    device_alloc(&dev, &out, n_out * 2);
    device_alloc(&dev, &dqkv, n_qkv * 2);
    device_alloc(&dev, &stats, (size_t)B * NH * T * 4);
    size_t workspace_bytes;
    prepare_workspace(&dev, cudnn, B, T, C, NH, &workspace_bytes);
    PlainAttention plain;
    plain_init(&dev, &plain, B, T, C, NH);
    cublasHandle_t cublas;
    cublasCheck(cublasCreate(&cublas));
    float ms[2][2];  // [cudnn][backward]
    for (int use_cudnn = 0; use_cudnn < 2; use_cudnn++) {
        for (int backward = 0; backward < 2; backward++) {
            ms[use_cudnn][backward] = time_attention(use_cudnn, backward, cudnn, &plain, cublas, out, stats, dqkv, qkv,
                                                     dout, B, T, C, NH);
        }
    }
    // causal attention's FLOPs (half of the T x T products): forward 2 GEMMs, backward 5, of 2*B*NH*T*T*HS/2 each
    double gemm_flops = (double)B * NH * T * T * HS;
    printf("%s (B %d, T %d, NH %d, HS %d), one layer: forward plain %.3f ms | cuDNN %.3f ms (%.1f TFLOP/s) %.2fx; "
           "forward+backward plain %.3f ms | cuDNN %.3f ms (%.1f TFLOP/s) %.2fx | cuDNN workspace %.1f MiB\n",
           name, B, T, NH, HS, ms[0][0], ms[1][0], 2 * gemm_flops / (ms[1][0] * 1e9), ms[0][0] / ms[1][0], ms[0][1],
           ms[1][1], 7 * gemm_flops / (ms[1][1] * 1e9), ms[0][1] / ms[1][1], (double)workspace_bytes / (1 << 20));
    cublasCheck(cublasDestroy(cublas));
    device_list_free(&dev);
    free(scratch_host);
}

// cudnn_attention_supported answers without exiting: yes for the trainer's shapes; no, with a reason, for a head size
// that is not a multiple of 8, for T 1, and for head size 1024, which no cuDNN 9 SDPA engine takes (their largest is
// 256 on Hopper): the trainer falls back to the plain attention on such an answer.
static void check_support_query(CudnnAttention* cudnn) {
    static const struct { int B, T, NH, HS, want; const char* what; } cases[] = {
        {2, 256, 12, 64, 1, "d12's heads (HS 64)"}, {2, 100, 4, 128, 1, "HS 128"},
        {2, 64, 4, 12, 0, "HS 12 (not a multiple of 8)"}, {2, 1, 4, 64, 0, "T 1"},
        {1, 64, 1, 1024, 0, "HS 1024 (beyond cuDNN's SDPA)"}};
    printf("cudnn_attention_supported\n");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char why[512] = "";
        int got = cudnn_attention_supported(cudnn, cases[i].B, cases[i].T, cases[i].NH * cases[i].HS, cases[i].NH, why,
                                            sizeof(why));
        char what[160];
        snprintf(what, sizeof(what), "%s: %s%s%.90s", cases[i].what, got ? "supported" : "not supported",
                 got ? "" : ", because ", got ? "" : why);
        report(got == cases[i].want && (got || why[0] != '\0'), what, got, cases[i].want);
    }
}

int main(void) {
    require_cuda_device("attention_cudnn");
    CudnnAttention* cudnn = cudnn_attention_create();
    Rng rng;
    rng_seed(&rng, 42);
    check_support_query(cudnn);
    check_shape(cudnn, 2, 256, 12, 64, &rng);   // d12's heads
    check_shape(cudnn, 2, 100, 4, 128, &rng);   // head size 128, T not a multiple of 64
    check_shape(cudnn, 3, 65, 8, 64, &rng);     // T = 64 + 1, odd B
    check_shape(cudnn, 64, 128, 16, 64, &rng);  // B*NH = 1024
    check_shape(cudnn, 1, 1024, 25, 64, &rng);  // d48's heads at T 1024
    time_shape("d12", cudnn, 8, 1024, 12, 64, &rng);
    time_shape("d48", cudnn, 16, 1024, 25, 64, &rng);
    cudnn_attention_destroy(cudnn);
    printf("attention_cudnn: %d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
