/*
dev/cuda/fp8_gemm.cu — the cuBLASLt GEMMs of fp8/gemm.cuh on their own: the three FP8 GEMMs of a linear layer
(fprop E4M3 x E4M3 with fast accumulation, dgrad and wgrad E4M3 x E5M2, wgrad accumulating into fp32) against a CPU
double-precision product of the dequantized operands, then TFLOP/s of BF16 and FP8 at the d12 shapes (B*T = 64*1024).

Build: make dev/cuda/fp8_gemm     Run: ./dev/cuda/fp8_gemm    (prints one line and exits 1 without a GPU)
*/
#include <cuda_bf16.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../fp8/gemm.cuh"
#include "../../fp8/meta.h"
#include "../../llmc/rand.h"

static int failures = 0, checks = 0;

static cudaDataType_t cuda_type(Fp8Format f) { return f == FP8_E4M3 ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2; }

// rows x k FP8 bytes of random values quantized with `scale`
static uint8_t* random_fp8(size_t n, Fp8Format f, float scale, Rng* rng) {
    float* x = (float*)malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) { x[i] = (rng_uniform(rng) * 2.0f - 1.0f) * 3.0f; }
    uint8_t* q = (uint8_t*)malloc(n);
    float amax = 0.0f;
    fp8_quantize(q, x, n, f, scale, &amax, NULL);
    free(x);
    return q;
}

static void* to_device(const void* host, size_t bytes) {
    void* d;
    cudaCheck(cudaMalloc(&d, bytes));
    cudaCheck(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice));
    return d;
}

// out (rows, out_cols) = inp (rows, k) @ weight (out_cols, k)^T on FP8 operands; compares with the CPU.
static void check_gemm(const char* name, int rows, int out_cols, int k, Fp8Format wf, Fp8Format xf, int fast_accum,
                       int fp32_accumulate, GemmContext* ctx, Rng* rng) {
    float w_scale = 64.0f, x_scale = wf == xf ? 32.0f : 4096.0f;
    uint8_t* w = random_fp8((size_t)out_cols * k, wf, w_scale, rng);
    uint8_t* x = random_fp8((size_t)rows * k, xf, x_scale, rng);
    float w_scale_inv = 1.0f / w_scale, x_scale_inv = 1.0f / x_scale;
    size_t n_out = (size_t)rows * out_cols;
    double* want = (double*)calloc(n_out, sizeof(double));
    for (int r = 0; r < rows; r++) {
        for (int o = 0; o < out_cols; o++) {
            double acc = 0.0;
            for (int i = 0; i < k; i++) {
                acc += (double)fp8_to_float(x[(size_t)r * k + i], xf) * fp8_to_float(w[(size_t)o * k + i], wf);
            }
            want[(size_t)r * out_cols + o] = acc * w_scale_inv * x_scale_inv + (fp32_accumulate ? 0.5 : 0.0);
        }
    }
    void* d_w = to_device(w, (size_t)out_cols * k);
    void* d_x = to_device(x, (size_t)rows * k);
    float* d_w_si = (float*)to_device(&w_scale_inv, 4);
    float* d_x_si = (float*)to_device(&x_scale_inv, 4);
    void* d_out;
    size_t out_bytes = n_out * (fp32_accumulate ? 4 : 2);
    cudaCheck(cudaMalloc(&d_out, out_bytes));
    if (fp32_accumulate) {  // start from 0.5 everywhere to see the accumulation
        float* half = (float*)malloc(out_bytes);
        for (size_t i = 0; i < n_out; i++) { half[i] = 0.5f; }
        cudaCheck(cudaMemcpy(d_out, half, out_bytes, cudaMemcpyHostToDevice));
        free(half);
    }
    gemm_tn(ctx, d_out, fp32_accumulate ? CUDA_R_32F : CUDA_R_16BF, d_w, cuda_type(wf), d_w_si, d_x, cuda_type(xf), d_x_si,
            NULL, rows, out_cols, k, fp32_accumulate, fast_accum, 0);
    cudaCheck(cudaDeviceSynchronize());
    void* got = malloc(out_bytes);
    cudaCheck(cudaMemcpy(got, d_out, out_bytes, cudaMemcpyDeviceToHost));
    double max_err = 0.0, max_ref = 0.0;
    for (size_t i = 0; i < n_out; i++) {
        double g = fp32_accumulate ? ((float*)got)[i] : bf16_to_float(((uint16_t*)got)[i]);
        double e = fabs(g - want[i]);
        max_err = e > max_err ? e : max_err;
        max_ref = fabs(want[i]) > max_ref ? fabs(want[i]) : max_ref;
    }
    // bf16 output: half an ulp (2^-9 relative) of the largest value; fp32 output: accumulation order only
    double tol = (fp32_accumulate ? 1e-5 : 4e-3) * max_ref;
    int ok = max_err <= tol;
    checks++;
    failures += !ok;
    printf("%s %s (%d x %d x %d, %s x %s%s): max error %.3g (tolerance %.3g)\n", ok ? "PASS" : "FAIL", name, rows,
           out_cols, k, fp8_format_name(wf), fp8_format_name(xf), fast_accum ? ", fast accum" : "", max_err, tol);
    free(w);
    free(x);
    free(want);
    free(got);
    cudaCheck(cudaFree(d_w));
    cudaCheck(cudaFree(d_x));
    cudaCheck(cudaFree(d_w_si));
    cudaCheck(cudaFree(d_x_si));
    cudaCheck(cudaFree(d_out));
}

int main(void) {
    require_cuda_device("fp8_gemm");
    GemmContext ctx;
    gemm_context_init(&ctx);
    Rng rng;
    rng_seed(&rng, 7);
    check_gemm("fprop", 256, 192, 128, FP8_E4M3, FP8_E4M3, 1, 0, &ctx, &rng);
    check_gemm("dgrad", 256, 128, 192, FP8_E4M3, FP8_E5M2, 0, 0, &ctx, &rng);
    check_gemm("wgrad", 192, 128, 256, FP8_E4M3, FP8_E5M2, 0, 1, &ctx, &rng);

    // throughput at the d12 shapes, B*T = 65536
    struct { const char* name; int out_cols, k; } shapes[4] = {{"qkv", 2304, 768}, {"attproj", 768, 768}, {"fc", 3072, 768},
                                                              {"fcproj", 768, 3072}};
    int rows = 65536;
    void *d_a, *d_b, *d_out;
    cudaCheck(cudaMalloc(&d_a, (size_t)3072 * 3072 * 2));
    cudaCheck(cudaMalloc(&d_b, (size_t)rows * 3072 * 2));
    cudaCheck(cudaMalloc(&d_out, (size_t)rows * 3072 * 2));
    cudaCheck(cudaMemset(d_a, 0x38, (size_t)3072 * 3072 * 2));
    cudaCheck(cudaMemset(d_b, 0x38, (size_t)rows * 3072 * 2));
    float one = 1.0f;
    float* d_one = (float*)to_device(&one, 4);
    cudaEvent_t start, stop;
    cudaCheck(cudaEventCreate(&start));
    cudaCheck(cudaEventCreate(&stop));
    for (int s = 0; s < 4; s++) {
        double flops = 2.0 * rows * shapes[s].out_cols * shapes[s].k;
        double tflops[2];
        for (int fp8 = 0; fp8 < 2; fp8++) {
            cudaDataType_t t = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
            const int reps = 20;
            for (int r = 0; r < reps + 2; r++) {  // the first two warm up (and plan)
                if (r == 2) { cudaCheck(cudaEventRecord(start)); }
                gemm_tn(&ctx, d_out, CUDA_R_16BF, d_a, t, d_one, d_b, t, d_one, NULL, rows, shapes[s].out_cols,
                        shapes[s].k, 0, fp8, 0);
            }
            cudaCheck(cudaEventRecord(stop));
            cudaCheck(cudaEventSynchronize(stop));
            float ms;
            cudaCheck(cudaEventElapsedTime(&ms, start, stop));
            tflops[fp8] = flops * reps / (ms * 1e9);
        }
        printf("%-8s %6d x %5d x %5d: BF16 %6.1f TFLOP/s | FP8 %6.1f TFLOP/s | %.2fx\n", shapes[s].name, rows,
               shapes[s].out_cols, shapes[s].k, tflops[0], tflops[1], tflops[1] / tflops[0]);
    }
    gemm_context_free(&ctx);
    printf("fp8_gemm: %d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
