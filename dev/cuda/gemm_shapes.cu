/*
dev/cuda/gemm_shapes.cu — how fast is each GEMM of one training step of a GPT-2 model, in BF16 and in FP8, at the
model's own shapes? For each linear layer (qkv C->3C, attproj C->C, fc C->4C, fcproj 4C->C, LM head C->Vp) it times the
three GEMMs of the layer as the CUDA trainer issues them through llmc/gemm.cuh:

    fprop  out (B*T, OC) = X (B*T, IC) @ W^T (+ bias)   BF16: TN, bias           FP8: E4M3 x E4M3, fast accumulation
    dgrad  dX  (B*T, IC) = dY (B*T, OC) @ W             BF16: NN                 FP8: W^T E4M3 x dY E5M2 (TN)
    wgrad  dW  (OC, IC) += dY^T @ X  (fp32 output)      BF16: NT, accumulate     FP8: X^T E4M3 x dY^T E5M2 (TN)

and prints one line per GEMM (M = rows, N = out_cols, K in the trainer's row-major terms, TFLOP/s of BF16 and FP8 and
the speedup), then the FLOP-weighted total of one micro-step's linear layers (L blocks + the LM head): every GEMM in
FP8, and FP8 with the LM head in BF16 as the trainer does by default. FP8 times are the GEMMs alone: the casts that
make their operands are timed by dev/cuda/fp8_quantize. Operands hold small random values; every scale_inv is 1.0.
It checks no values, so it has no tolerance (dev/cuda/fp8_gemm checks the same calls' results, by llmc/tolerance.h).
The LM head uses GPT-2's padded vocabulary Vp = 50304 (the trainer's Vp follows its tokenizer).

Build: make dev/cuda/gemm_shapes     Run: ./dev/cuda/gemm_shapes -e d12 -b 8 -t 1024
(prints one line and exits 1 without a GPU)
*/
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../llmc/gemm.cuh"
#include "../../llmc/cuda_utils.cuh"
#include "../../llmc/gpt2.h"

#define GPT2_PADDED_VOCAB 50304

enum { GEMM_FPROP = 0, GEMM_DGRAD = 1, GEMM_WGRAD = 2, GEMMS_PER_LINEAR = 3 };
static const char* gemm_names[GEMMS_PER_LINEAR] = {"fprop", "dgrad", "wgrad"};

enum { FILL_BF16 = 0, FILL_E4M3 = 1, FILL_E5M2 = 2 };

// A hash of (seed, i) to a float in [-amplitude, amplitude), written as bf16 or FP8: random bits make the tensor
// cores draw the power of real data (a constant fill would flatter the clocks). Grid-stride loop.
__global__ void fill_random_kernel(void* out, size_t n, int kind, float amplitude, uint32_t seed) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint64_t z = (uint64_t)i * 0x9E3779B97F4A7C15ull + seed;  // splitmix64 finaliser
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        float v = ((float)(z >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f) * amplitude;
        if (kind == FILL_BF16) {
            reinterpret_cast<__nv_bfloat16*>(out)[i] = __float2bfloat16(v);
        } else {
            reinterpret_cast<uint8_t*>(out)[i] =
                (uint8_t)__nv_cvt_float_to_fp8(v, __NV_SATFINITE, kind == FILL_E4M3 ? __NV_E4M3 : __NV_E5M2);
        }
    }
}

static void* device_random(size_t n, int kind, float amplitude, uint32_t seed) {
    void* d;
    cudaCheck(cudaMalloc(&d, n * (kind == FILL_BF16 ? 2 : 1)));
    fill_random_kernel<<<1024, 256>>>(d, n, kind, amplitude, seed);
    cudaCheck(cudaGetLastError());
    return d;
}

// One linear layer's operands, bf16 and FP8 (the FP8 buffers serve both a tensor and its transpose: same size, and
// only the timing matters here).
typedef struct {
    const char* name;
    int IC, OC, count;  // in and out features; how many such layers one step has (L, or 1 for the LM head)
    int has_bias;
    __nv_bfloat16* x;   // (rows, IC)
    __nv_bfloat16* w;   // (OC, IC)
    __nv_bfloat16* dy;  // (rows, OC)
    __nv_bfloat16* bias;  // (OC)
    __nv_bfloat16* out;   // (rows, OC): fprop output
    __nv_bfloat16* dx;    // (rows, IC): dgrad output
    float* dw;            // (OC, IC): wgrad output, fp32, accumulated into
    uint8_t* x8;          // (rows, IC) E4M3, and as X^T (IC, rows) for wgrad
    uint8_t* w8;          // (OC, IC) E4M3, and as W^T (IC, OC) for dgrad
    uint8_t* dy8;         // (rows, OC) E5M2, and as dY^T (OC, rows) for wgrad
} Linear;

static void linear_alloc(Linear* lin, int rows, uint32_t seed) {
    size_t r = (size_t)rows, ic = (size_t)lin->IC, oc = (size_t)lin->OC;
    lin->x = (__nv_bfloat16*)device_random(r * ic, FILL_BF16, 1.0f, seed + 1);
    lin->w = (__nv_bfloat16*)device_random(oc * ic, FILL_BF16, 0.05f, seed + 2);
    lin->dy = (__nv_bfloat16*)device_random(r * oc, FILL_BF16, 0.01f, seed + 3);
    lin->bias = (__nv_bfloat16*)device_random(oc, FILL_BF16, 0.01f, seed + 4);
    lin->x8 = (uint8_t*)device_random(r * ic, FILL_E4M3, 4.0f, seed + 5);
    lin->w8 = (uint8_t*)device_random(oc * ic, FILL_E4M3, 4.0f, seed + 6);
    lin->dy8 = (uint8_t*)device_random(r * oc, FILL_E5M2, 4.0f, seed + 7);
    cudaCheck(cudaMalloc(&lin->out, r * oc * 2));
    cudaCheck(cudaMalloc(&lin->dx, r * ic * 2));
    cudaCheck(cudaMalloc(&lin->dw, oc * ic * 4));
    cudaCheck(cudaMemset(lin->dw, 0, oc * ic * 4));
}

static void linear_free(Linear* lin) {
    void* buffers[10] = {lin->x, lin->w, lin->dy, lin->bias, lin->out, lin->dx, lin->dw, lin->x8, lin->w8, lin->dy8};
    for (int i = 0; i < 10; i++) { cudaCheck(cudaFree(buffers[i])); }
}

// The trainer's row-major shape of a GEMM: out (rows, out_cols) = a (rows, k) @ b (out_cols, k)^T
static void gemm_shape(const Linear* lin, int rows, int which, int* m, int* n, int* k) {
    if (which == GEMM_FPROP) { *m = rows; *n = lin->OC; *k = lin->IC; }
    else if (which == GEMM_DGRAD) { *m = rows; *n = lin->IC; *k = lin->OC; }
    else { *m = lin->OC; *n = lin->IC; *k = rows; }
}

// One GEMM exactly as train_gpt_fp8.cu's linear_forward / linear_backward issue it.
static void run_gemm(GemmContext* ctx, Linear* lin, int rows, int which, int fp8, const float* one) {
    const void* bias = lin->has_bias ? lin->bias : NULL;
    if (which == GEMM_FPROP) {
        if (fp8) {
            gemm_tn(ctx, lin->out, CUDA_R_16BF, lin->w8, CUDA_R_8F_E4M3, one, lin->x8, CUDA_R_8F_E4M3, one, bias, rows,
                    lin->OC, lin->IC, 0, 1, 0);
        } else {
            gemm_tn(ctx, lin->out, CUDA_R_16BF, lin->w, CUDA_R_16BF, NULL, lin->x, CUDA_R_16BF, NULL, bias, rows, lin->OC,
                    lin->IC, 0, 0, 0);
        }
    } else if (which == GEMM_DGRAD) {
        if (fp8) {  // dX (rows, IC) = dY (rows, OC) @ (W^T (IC, OC))^T
            gemm_tn(ctx, lin->dx, CUDA_R_16BF, lin->w8, CUDA_R_8F_E4M3, one, lin->dy8, CUDA_R_8F_E5M2, one, NULL, rows,
                    lin->IC, lin->OC, 0, 0, 0);
        } else {  // column-major m = IC, n = rows, k = OC; A = W (IC x OC, op N), B = dY (OC x rows, op N)
            gemm_lt(ctx, lin->dx, CUDA_R_16BF, lin->w, CUDA_R_16BF, NULL, 0, lin->dy, CUDA_R_16BF, NULL, 0, NULL, lin->IC,
                    rows, lin->OC, 0, 0, 0);
        }
    } else {
        if (fp8) {  // dW (OC, IC) += dY^T (OC, rows) @ (X^T (IC, rows))^T, fp32
            gemm_tn(ctx, lin->dw, CUDA_R_32F, lin->x8, CUDA_R_8F_E4M3, one, lin->dy8, CUDA_R_8F_E5M2, one, NULL, lin->OC,
                    lin->IC, rows, 1, 0, 0);
        } else {  // column-major m = IC, n = OC, k = rows; A = X (IC x rows, op N), B = dY (op T)
            gemm_lt(ctx, lin->dw, CUDA_R_32F, lin->x, CUDA_R_16BF, NULL, 0, lin->dy, CUDA_R_16BF, NULL, 1, NULL, lin->IC,
                    lin->OC, rows, 1, 0, 0);
        }
    }
}

// Milliseconds per call: a few warm-up calls (the first one asks cuBLASLt's heuristic), a short run to estimate the
// time, then enough calls for ~100 ms of work (at least 10, at most 1000), timed with events.
static double time_gemm(GemmContext* ctx, Linear* lin, int rows, int which, int fp8, const float* one, cudaEvent_t start,
                        cudaEvent_t stop) {
    for (int r = 0; r < 3; r++) { run_gemm(ctx, lin, rows, which, fp8, one); }
    float ms;
    const int probe = 5;
    cudaCheck(cudaEventRecord(start));
    for (int r = 0; r < probe; r++) { run_gemm(ctx, lin, rows, which, fp8, one); }
    cudaCheck(cudaEventRecord(stop));
    cudaCheck(cudaEventSynchronize(stop));
    cudaCheck(cudaEventElapsedTime(&ms, start, stop));
    double estimate = ms / probe;
    int reps = estimate > 0.0 ? (int)(100.0 / estimate) : 1000;
    reps = reps < 10 ? 10 : reps > 1000 ? 1000 : reps;
    cudaCheck(cudaEventRecord(start));
    for (int r = 0; r < reps; r++) { run_gemm(ctx, lin, rows, which, fp8, one); }
    cudaCheck(cudaEventRecord(stop));
    cudaCheck(cudaEventSynchronize(stop));
    cudaCheck(cudaEventElapsedTime(&ms, start, stop));
    return (double)ms / reps;
}

static void usage_and_exit(const char* problem) {
    if (problem) { fprintf(stderr, "gemm_shapes: error: %s (usage: gemm_shapes [-e d12|d24|d36|d48] [-b B] [-t T])\n", problem); exit(1); }
    printf("usage: gemm_shapes [-e d12|d24|d36|d48] [-b B] [-t T]   (defaults: -e d12 -b 8 -t 1024)\n");
    exit(0);
}

static int parse_positive(const char* flag, const char* value) {
    char* end = NULL;
    long v = strtol(value, &end, 10);
    if (end == value || *end != '\0' || v < 1 || v > (1 << 20)) {
        char msg[160];
        snprintf(msg, sizeof(msg), "invalid value '%s' for %s: expected an integer in [1, %d]", value, flag, 1 << 20);
        usage_and_exit(msg);
    }
    return (int)v;
}

int main(int argc, char** argv) {
    const char* depth = "d12";
    int B = 8, T = 1024;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) { usage_and_exit(NULL); }
        if (i + 1 >= argc) {
            char msg[160];
            snprintf(msg, sizeof(msg), "flag %s needs a value", argv[i]);
            usage_and_exit(msg);
        }
        const char* v = argv[++i];
        if (strcmp(argv[i - 1], "-e") == 0) { depth = v; }
        else if (strcmp(argv[i - 1], "-b") == 0) { B = parse_positive("-b", v); }
        else if (strcmp(argv[i - 1], "-t") == 0) { T = parse_positive("-t", v); }
        else {
            char msg[160];
            snprintf(msg, sizeof(msg), "unknown flag %s", argv[i - 1]);
            usage_and_exit(msg);
        }
    }
    int L, C, NH;
    if (gpt2_depth_preset(depth, &L, &C, &NH) != 0) {
        char msg[160];
        snprintf(msg, sizeof(msg), "unknown depth '%s': expected d12, d24, d36 or d48", depth);
        usage_and_exit(msg);
    }
    long long rows_ll = (long long)B * T;
    if (rows_ll % 16 != 0 || rows_ll > (1 << 24)) { usage_and_exit("B*T must be a multiple of 16 (FP8 GEMMs) and at most 2^24"); }
    int rows = (int)rows_ll;

    require_cuda_device("gemm_shapes");
    cudaDeviceProp prop;
    cudaCheck(cudaGetDeviceProperties(&prop, 0));
    GemmContext ctx;
    gemm_context_init(&ctx);
    float one_host = 1.0f;
    float* one;  // every operand's scale_inv: (1)
    cudaCheck(cudaMalloc(&one, sizeof(float)));
    cudaCheck(cudaMemcpy(one, &one_host, sizeof(float), cudaMemcpyHostToDevice));
    cudaEvent_t start, stop;
    cudaCheck(cudaEventCreate(&start));
    cudaCheck(cudaEventCreate(&stop));

    enum { NUM_LINEARS = 5, LM_HEAD = 4 };
    Linear linears[NUM_LINEARS];
    memset(linears, 0, sizeof(linears));
    const char* names[NUM_LINEARS] = {"qkv", "attproj", "fc", "fcproj", "lm_head"};
    int ics[NUM_LINEARS] = {C, C, C, 4 * C, C};
    int ocs[NUM_LINEARS] = {3 * C, C, 4 * C, C, GPT2_PADDED_VOCAB};
    printf("gemm_shapes: %s (L %d, C %d), B %d, T %d, rows B*T = %d, LM head Vp %d, on %s\n", depth, L, C, B, T, rows,
           GPT2_PADDED_VOCAB, prop.name);
    printf("%-16s %6s %6s %6s | %15s | %15s | %s\n", "gemm", "M", "N", "K", "BF16", "FP8", "FP8/BF16");

    double flops_step = 0.0, bf16_ms_step = 0.0, fp8_ms_step = 0.0, fp8_default_ms_step = 0.0;
    for (int s = 0; s < NUM_LINEARS; s++) {
        Linear* lin = &linears[s];
        lin->name = names[s];
        lin->IC = ics[s];
        lin->OC = ocs[s];
        lin->count = s == LM_HEAD ? 1 : L;
        lin->has_bias = s != LM_HEAD;  // the LM head (tied to wte) has no bias
        linear_alloc(lin, rows, 1000u * (uint32_t)s);
        for (int which = 0; which < GEMMS_PER_LINEAR; which++) {
            int m, n, k;
            gemm_shape(lin, rows, which, &m, &n, &k);
            double flops = 2.0 * m * n * k;
            double bf16_ms = time_gemm(&ctx, lin, rows, which, 0, one, start, stop);
            double fp8_ms = time_gemm(&ctx, lin, rows, which, 1, one, start, stop);
            char label[32];
            snprintf(label, sizeof(label), "%s.%s", lin->name, gemm_names[which]);
            printf("%-16s %6d %6d %6d | %6.1f TFLOP/s | %6.1f TFLOP/s | %.2fx\n", label, m, n, k, flops / (bf16_ms * 1e9),
                   flops / (fp8_ms * 1e9), bf16_ms / fp8_ms);
            fflush(stdout);
            flops_step += flops * lin->count;
            bf16_ms_step += bf16_ms * lin->count;
            fp8_ms_step += fp8_ms * lin->count;
            fp8_default_ms_step += (s == LM_HEAD ? bf16_ms : fp8_ms) * lin->count;
        }
        cudaCheck(cudaDeviceSynchronize());
        linear_free(lin);
    }
    printf("step total (%d blocks x 4 linears + LM head, fprop+dgrad+wgrad): %.2f TFLOP | BF16 %.2f ms (%.1f TFLOP/s) | "
           "FP8 %.2f ms (%.1f TFLOP/s) %.2fx | FP8 with LM head in BF16 (trainer default) %.2f ms %.2fx\n",
           L, flops_step / 1e12, bf16_ms_step, flops_step / (bf16_ms_step * 1e9), fp8_ms_step,
           flops_step / (fp8_ms_step * 1e9), bf16_ms_step / fp8_ms_step, fp8_default_ms_step,
           bf16_ms_step / fp8_default_ms_step);
    cudaCheck(cudaEventDestroy(start));
    cudaCheck(cudaEventDestroy(stop));
    cudaCheck(cudaFree(one));
    gemm_context_free(&ctx);
    return 0;
}
