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

-algos N (N > 1): is cuBLASLt's heuristic choosing well? The trainer takes the heuristic's first algorithm for each
problem (llmc/gemm.cuh). With -algos N every GEMM's plan is also run with each of the heuristic's first N answers in
turn (#0, its own choice, re-timed too: its difference from the first timing is the measurement's noise), and each line
adds the fastest in TFLOP/s ("best of 8: FP8 870.1 (#3, +5.4%)": answer #3 is 5.4% faster than the heuristic's choice).
A line "best of up to N heuristic algorithms" gives the step totals had each GEMM used its fastest; when that is well
below the heuristic's total, timing the candidates when a plan is built (autotuning) would pay in the trainer. The
algorithms that win are described (cuBLASLt's algorithm id, tile, stages, split-k, swizzle, cluster) so that they can be
named.

Build: make dev/cuda/gemm_shapes     Run: ./dev/cuda/gemm_shapes -e d12 -b 8 -t 1024 [-algos 8]
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
#include "bench.h"

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

static void* device_random(DeviceList* list, size_t n, int kind, float amplitude, uint32_t seed) {
    void* d;
    device_alloc(list, &d, n * (kind == FILL_BF16 ? 2 : 1));
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
    DeviceList buffers;   // all of the above
} Linear;

static void linear_alloc(Linear* lin, int rows, uint32_t seed) {
    size_t r = (size_t)rows, ic = (size_t)lin->IC, oc = (size_t)lin->OC;
    lin->x = (__nv_bfloat16*)device_random(&lin->buffers, r * ic, FILL_BF16, 1.0f, seed + 1);
    lin->w = (__nv_bfloat16*)device_random(&lin->buffers, oc * ic, FILL_BF16, 0.05f, seed + 2);
    lin->dy = (__nv_bfloat16*)device_random(&lin->buffers, r * oc, FILL_BF16, 0.01f, seed + 3);
    lin->bias = (__nv_bfloat16*)device_random(&lin->buffers, oc, FILL_BF16, 0.01f, seed + 4);
    lin->x8 = (uint8_t*)device_random(&lin->buffers, r * ic, FILL_E4M3, 4.0f, seed + 5);
    lin->w8 = (uint8_t*)device_random(&lin->buffers, oc * ic, FILL_E4M3, 4.0f, seed + 6);
    lin->dy8 = (uint8_t*)device_random(&lin->buffers, r * oc, FILL_E5M2, 4.0f, seed + 7);
    device_alloc(&lin->buffers, &lin->out, r * oc * 2);
    device_alloc(&lin->buffers, &lin->dx, r * ic * 2);
    device_alloc(&lin->buffers, &lin->dw, oc * ic * 4);
    cudaCheck(cudaMemset(lin->dw, 0, oc * ic * 4));
}

static void linear_free(Linear* lin) { device_list_free(&lin->buffers); }

// The trainer's row-major shape of a GEMM: out (rows, out_cols) = a (rows, k) @ b (out_cols, k)^T
static void gemm_shape(const Linear* lin, int rows, int which, int* m, int* n, int* k) {
    if (which == GEMM_FPROP) { *m = rows; *n = lin->OC; *k = lin->IC; }
    else if (which == GEMM_DGRAD) { *m = rows; *n = lin->IC; *k = lin->OC; }
    else { *m = lin->OC; *n = lin->IC; *k = rows; }
}

// One GEMM exactly as train_gpt_fp8.cu's linear_forward / linear_backward issue it: out = inp @ weight^T, FP8 on the
// transposed copies the casts make (every operand k-major: TN), BF16 on W, X and dY as stored (k-major or not).
static void run_gemm(GemmContext* ctx, Linear* lin, int rows, int which, int fp8, const float* one) {
    const int scalar = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
    const void* x = fp8 ? (const void*)lin->x8 : (const void*)lin->x;
    const void* w = fp8 ? (const void*)lin->w8 : (const void*)lin->w;
    const void* dy = fp8 ? (const void*)lin->dy8 : (const void*)lin->dy;
    cudaDataType_t forward = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF, backward = fp8 ? CUDA_R_8F_E5M2 : CUDA_R_16BF;
    const float* scale_inv = fp8 ? one : NULL;
    if (which == GEMM_FPROP) {  // out (rows, OC) = X (rows, IC) @ W (OC, IC)^T, fast accumulation in FP8
        GemmOutput out = {lin->out, CUDA_R_16BF, lin->has_bias ? lin->bias : NULL, 0};
        GemmOperand weight = gemm_operand(w, forward, lin->OC, lin->IC, 1, scale_inv, scalar);
        GemmOperand inp = gemm_operand(x, forward, rows, lin->IC, 1, scale_inv, scalar);
        gemm_multiply(ctx, &out, &weight, &inp, fp8, 0);
    } else if (which == GEMM_DGRAD) {  // dX (rows, IC) = dY (rows, OC) @ W: weight W^T (IC, OC); BF16: W (NN)
        GemmOutput out = {lin->dx, CUDA_R_16BF, NULL, 0};
        GemmOperand weight = gemm_operand(w, forward, lin->IC, lin->OC, fp8, scale_inv, scalar);
        GemmOperand inp = gemm_operand(dy, backward, rows, lin->OC, 1, scale_inv, scalar);
        gemm_multiply(ctx, &out, &weight, &inp, 0, 0);
    } else {  // dW (OC, IC) += dY^T (OC, rows) @ X (rows, IC) in fp32: weight X^T (IC, rows), inp dY^T; BF16: NT
        GemmOutput out = {lin->dw, CUDA_R_32F, NULL, 1};
        GemmOperand weight = gemm_operand(x, forward, lin->IC, rows, fp8, scale_inv, scalar);
        GemmOperand inp = gemm_operand(dy, backward, lin->OC, rows, fp8, scale_inv, scalar);
        gemm_multiply(ctx, &out, &weight, &inp, 0, 0);
    }
}

// Milliseconds per call: a few warm-up calls (the first one asks cuBLASLt's heuristic), a short run to estimate the
// time, then enough calls for ~100 ms of work (at least 10, at most 1000), timed with events.
static double time_gemm(GemmContext* ctx, Linear* lin, int rows, int which, int fp8, const float* one,
                        const BenchTimer* timer) {
    for (int r = 0; r < 3; r++) { run_gemm(ctx, lin, rows, which, fp8, one); }
    float ms;
    const int probe = 5;
    bench_start(timer);
    for (int r = 0; r < probe; r++) { run_gemm(ctx, lin, rows, which, fp8, one); }
    ms = bench_stop_ms(timer);
    double estimate = ms / probe;
    int reps = estimate > 0.0 ? (int)(100.0 / estimate) : 1000;
    reps = reps < 10 ? 10 : reps > 1000 ? 1000 : reps;
    bench_start(timer);
    for (int r = 0; r < reps; r++) { run_gemm(ctx, lin, rows, which, fp8, one); }
    ms = bench_stop_ms(timer);
    return (double)ms / reps;
}

#define GEMM_SHAPES_MAX_ALGOS 16  // -algos: at most this many of the heuristic's answers per GEMM

// One line naming an algorithm by cuBLASLt's configuration attributes (what would pin it in a plan).
static void algo_describe(char* out, size_t len, const cublasLtMatmulAlgo_t* algo) {
    int32_t id = 0, split_k = 0;
    uint32_t tile = 0, stages = 0, swizzle = 0;
    uint16_t cluster = 0;
    size_t written = 0;
    cublasCheck(cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof(id), &written));
    cublasCheck(cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile),
                                                     &written));
    cublasCheck(cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof(stages),
                                                     &written));
    cublasCheck(cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split_k, sizeof(split_k),
                                                     &written));
    cublasCheck(cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swizzle,
                                                     sizeof(swizzle), &written));
    cublasCheck(cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster,
                                                     sizeof(cluster), &written));
    snprintf(out, len, "algo id %d, tile %u, stages %u, split-k %d, swizzle %u, cluster %u", id, tile, stages, split_k,
             swizzle, (unsigned)cluster);
}

// The fastest of the heuristic's first `requested` answers for one GEMM: its plan (the one the latest call of this GEMM
// ran, ctx->last_plan) is run with each answer in turn and timed as time_gemm times it. Answers the heuristic marks as
// not runnable (state not success) are skipped. Returns the fastest's ms per call; *best_rank its place in the
// heuristic's list (0: the heuristic's own choice), *num_timed how many were timed, *best_algo the algorithm. The plan
// gets its own algorithm back, so later calls of this problem run what the trainer runs.
static double time_gemm_candidates(GemmContext* ctx, Linear* lin, int rows, int which, int fp8, const float* one,
                                   int requested, const BenchTimer* timer, int* best_rank, int* num_timed,
                                   cublasLtMatmulAlgo_t* best_algo) {
    run_gemm(ctx, lin, rows, which, fp8, one);  // makes this GEMM's plan the latest one
    GemmPlan* plan = &ctx->plans[ctx->last_plan];
    cublasLtMatmulAlgo_t own = plan->algo;
    cublasLtMatmulHeuristicResult_t results[GEMM_SHAPES_MAX_ALGOS];
    int found = 0;
    cublasCheck(gemm_plan_heuristic(ctx, plan, results, requested, &found));
    double best_ms = 0.0;
    *best_rank = -1;
    *num_timed = 0;
    for (int i = 0; i < found; i++) {
        if (results[i].state != CUBLAS_STATUS_SUCCESS) { continue; }
        plan->algo = results[i].algo;
        double ms = time_gemm(ctx, lin, rows, which, fp8, one, timer);
        (*num_timed)++;
        if (*best_rank < 0 || ms < best_ms) {
            best_ms = ms;
            *best_rank = i;
            *best_algo = results[i].algo;
        }
    }
    plan->algo = own;
    if (*best_rank < 0) {
        fprintf(stderr, "gemm_shapes: error: cuBLASLt's heuristic gave no runnable algorithm on the second asking "
                "(%d answers)\n", found);
        exit(1);
    }
    return best_ms;
}

static void usage_and_exit(const char* problem) {
    if (problem) {
        fprintf(stderr, "gemm_shapes: error: %s (usage: gemm_shapes [-e d12|d24|d36|d48] [-b B] [-t T] [-algos N])\n",
                problem);
        exit(1);
    }
    printf("usage: gemm_shapes [-e d12|d24|d36|d48] [-b B] [-t T] [-algos N]\n"
           "  defaults: -e d12 -b 8 -t 1024 -algos 1\n"
           "  -algos N  also time the first N (1 to %d) of cuBLASLt's heuristic answers for every GEMM, and the step\n"
           "            totals had each GEMM used its fastest\n", GEMM_SHAPES_MAX_ALGOS);
    exit(0);
}

static int parse_int_in(const char* flag, const char* value, int lo, int hi) {
    char* end = NULL;
    long v = strtol(value, &end, 10);
    if (end == value || *end != '\0' || v < lo || v > hi) {
        char msg[160];
        snprintf(msg, sizeof(msg), "invalid value '%s' for %s: expected an integer in [%d, %d]", value, flag, lo, hi);
        usage_and_exit(msg);
    }
    return (int)v;
}

int main(int argc, char** argv) {
    const char* depth = "d12";
    int B = 8, T = 1024, algos = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) { usage_and_exit(NULL); }
        if (i + 1 >= argc) {
            char msg[160];
            snprintf(msg, sizeof(msg), "flag %s needs a value", argv[i]);
            usage_and_exit(msg);
        }
        const char* v = argv[++i];
        if (strcmp(argv[i - 1], "-e") == 0) { depth = v; }
        else if (strcmp(argv[i - 1], "-b") == 0) { B = parse_int_in("-b", v, 1, 1 << 20); }
        else if (strcmp(argv[i - 1], "-t") == 0) { T = parse_int_in("-t", v, 1, 1 << 20); }
        else if (strcmp(argv[i - 1], "-algos") == 0) { algos = parse_int_in("-algos", v, 1, GEMM_SHAPES_MAX_ALGOS); }
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
    BenchTimer timer;
    bench_timer_init(&timer);

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
    // with -algos: the same totals, each GEMM at the fastest of the heuristic's answers
    double bf16_best_ms_step = 0.0, fp8_best_ms_step = 0.0, fp8_default_best_ms_step = 0.0;
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
            double bf16_ms = time_gemm(&ctx, lin, rows, which, 0, one, &timer);
            double fp8_ms = time_gemm(&ctx, lin, rows, which, 1, one, &timer);
            char label[32];
            snprintf(label, sizeof(label), "%s.%s", lin->name, gemm_names[which]);
            printf("%-16s %6d %6d %6d | %6.1f TFLOP/s | %6.1f TFLOP/s | %.2fx", label, m, n, k, flops / (bf16_ms * 1e9),
                   flops / (fp8_ms * 1e9), bf16_ms / fp8_ms);
            double bf16_best_ms = bf16_ms, fp8_best_ms = fp8_ms;
            if (algos > 1) {
                int rank[2], timed[2];
                cublasLtMatmulAlgo_t best_algo[2];
                double best_ms[2];
                for (int fp8 = 0; fp8 < 2; fp8++) {
                    best_ms[fp8] = time_gemm_candidates(&ctx, lin, rows, which, fp8, one, algos, &timer,
                                                        &rank[fp8], &timed[fp8], &best_algo[fp8]);
                }
                // the heuristic's choice as first timed stays in the totals when it was not beaten
                bf16_best_ms = best_ms[0] < bf16_ms ? best_ms[0] : bf16_ms;
                fp8_best_ms = best_ms[1] < fp8_ms ? best_ms[1] : fp8_ms;
                printf(" | best of %d: BF16 %.1f (#%d, %+.1f%%), best of %d: FP8 %.1f (#%d, %+.1f%%)\n", timed[0],
                       flops / (best_ms[0] * 1e9), rank[0], (bf16_ms / best_ms[0] - 1.0) * 100.0, timed[1],
                       flops / (best_ms[1] * 1e9), rank[1], (fp8_ms / best_ms[1] - 1.0) * 100.0);
                for (int fp8 = 0; fp8 < 2; fp8++) {
                    if (rank[fp8] == 0) { continue; }
                    char described[160];
                    algo_describe(described, sizeof(described), &best_algo[fp8]);
                    printf("    %s best #%d: %s\n", fp8 ? "FP8" : "BF16", rank[fp8], described);
                }
            } else {
                printf("\n");
            }
            fflush(stdout);
            flops_step += flops * lin->count;
            bf16_ms_step += bf16_ms * lin->count;
            fp8_ms_step += fp8_ms * lin->count;
            fp8_default_ms_step += (s == LM_HEAD ? bf16_ms : fp8_ms) * lin->count;
            bf16_best_ms_step += bf16_best_ms * lin->count;
            fp8_best_ms_step += fp8_best_ms * lin->count;
            fp8_default_best_ms_step += (s == LM_HEAD ? bf16_best_ms : fp8_best_ms) * lin->count;
        }
        cudaCheck(cudaDeviceSynchronize());
        linear_free(lin);
    }
    printf("step total (%d blocks x 4 linears + LM head, fprop+dgrad+wgrad): %.2f TFLOP | BF16 %.2f ms (%.1f TFLOP/s) | "
           "FP8 %.2f ms (%.1f TFLOP/s) %.2fx | FP8 with LM head in BF16 (trainer default) %.2f ms %.2fx\n",
           L, flops_step / 1e12, bf16_ms_step, flops_step / (bf16_ms_step * 1e9), fp8_ms_step,
           flops_step / (fp8_ms_step * 1e9), bf16_ms_step / fp8_ms_step, fp8_default_ms_step,
           bf16_ms_step / fp8_default_ms_step);
    if (algos > 1) {
        printf("best of up to %d heuristic algorithms: BF16 %.2f ms (%.1f%% below the heuristic's) | FP8 %.2f ms "
               "(%.1f%% below) %.2fx | FP8 with LM head in BF16 %.2f ms %.2fx\n",
               algos, bf16_best_ms_step, (1.0 - bf16_best_ms_step / bf16_ms_step) * 100.0, fp8_best_ms_step,
               (1.0 - fp8_best_ms_step / fp8_ms_step) * 100.0, bf16_best_ms_step / fp8_best_ms_step,
               fp8_default_best_ms_step, bf16_best_ms_step / fp8_default_best_ms_step);
    }
    bench_timer_free(&timer);
    cudaCheck(cudaFree(one));
    gemm_context_free(&ctx);
    return 0;
}
