/*
fp8/gemm.cuh — every GEMM of the trainers through cuBLASLt, BF16 and FP8, written in the trainers' row-major terms:

    out (rows, out_cols) = inp (rows, k) @ weight (out_cols, k)^T  [+ bias (out_cols)]  [+ out, if accumulate]

which is cuBLASLt's column-major "TN" problem D (m = out_cols, n = rows) = A^T (A = weight, k x m) * B (B = inp,
k x n). Hopper's FP8 GEMMs accept only TN, and every GEMM of a linear layer can be put in this form given the
transposed FP8 copies the cast kernels make:
    fprop  out = X @ W^T            gemm(out, W,   X,   k = C)      E4M3 x E4M3, fast accumulation
    dgrad  dX  = dY @ W  = dY @ (W^T)^T       gemm(dX, W^T, dY,  k = OC)     E4M3 x E5M2
    wgrad  dW  = dY^T @ X = dY^T @ (X^T)^T    gemm(dW, X^T, dY^T, k = B*T)  E4M3 x E5M2, may accumulate in fp32
For FP8 the operands' scale_inv device pointers go to cuBLASLt as the A and B scales, so the product is rescaled
inside the GEMM and nothing is dequantized. Fast accumulation (FP8 partial sums kept at lower precision) is for
fprop only, as in Transformer Engine: gradients accumulate over the whole batch and need the full fp32 path.

The algorithm cuBLASLt's heuristic picks is cached per problem (shape, types, flags), so a training step asks the
heuristic only on its first pass. 32 MiB workspace, the size cuBLASLt's Hopper kernels ask for.
*/
#ifndef GPTFP8_GEMM_CUH
#define GPTFP8_GEMM_CUH

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "../llmc/cuda_utils.cuh"

#define GEMM_WORKSPACE_BYTES (32u << 20)
#define GEMM_MAX_PLANS 256

typedef struct {
    int rows, out_cols, k;
    cudaDataType_t weight_type, inp_type, out_type;
    int has_bias, accumulate, fast_accum, trans_a, trans_b;
} GemmKey;

typedef struct {
    GemmKey key;
    cublasLtMatmulAlgo_t algo;
} GemmPlan;

typedef struct {
    cublasLtHandle_t handle;
    void* workspace;  // GEMM_WORKSPACE_BYTES on the device
    GemmPlan plans[GEMM_MAX_PLANS];
    int num_plans;
} GemmContext;

static inline void gemm_context_init(GemmContext* ctx) {
    memset(ctx, 0, sizeof(*ctx));
    cublasCheck(cublasLtCreate(&ctx->handle));
    cudaCheck(cudaMalloc(&ctx->workspace, GEMM_WORKSPACE_BYTES));
}

static inline void gemm_context_free(GemmContext* ctx) {
    cublasCheck(cublasLtDestroy(ctx->handle));
    cudaCheck(cudaFree(ctx->workspace));
}

static inline int gemm_type_is_fp8(cudaDataType_t t) { return t == CUDA_R_8F_E4M3 || t == CUDA_R_8F_E5M2; }

// The general form, in cuBLASLt's column-major terms: D (m, n) = op(A) (m, k) @ op(B) (k, n) (+ bias (m)) (+ D).
// A is stored (k, m) when trans_a, else (m, k); B is stored (n, k) when trans_b, else (k, n) (column-major, so a
// row-major (r, c) array is a column-major (c, r) one). FP8 operands need trans_a = 1, trans_b = 0 on Hopper and
// their scale_inv device pointers; bias is bf16 or NULL.
static inline void gemm_lt(GemmContext* ctx, void* out, cudaDataType_t out_type, const void* a, cudaDataType_t a_type,
                           const float* a_scale_inv, int trans_a, const void* b, cudaDataType_t b_type,
                           const float* b_scale_inv, int trans_b, const void* bias, int m, int n, int k, int accumulate,
                           int fast_accum, cudaStream_t stream) {
    const void* weight = a;
    const void* inp = b;
    cudaDataType_t weight_type = a_type, inp_type = b_type;
    const float* weight_scale_inv = a_scale_inv;
    const float* inp_scale_inv = b_scale_inv;
    int out_cols = m, rows = n;
    int fp8 = gemm_type_is_fp8(weight_type) || gemm_type_is_fp8(inp_type);
    if (fp8 && (!trans_a || trans_b)) {
        fprintf(stderr, "error: Hopper FP8 GEMMs take only the TN layout (trans_a %d, trans_b %d)\n", trans_a, trans_b);
        exit(1);
    }
    if (fp8 && (k % 16 != 0 || out_cols % 16 != 0 || rows % 16 != 0)) {
        fprintf(stderr, "error: FP8 GEMM needs dimensions that are multiples of 16 (rows %d, out_cols %d, k %d)\n", rows,
                out_cols, k);
        exit(1);
    }
    cublasLtMatmulDesc_t desc;
    cublasCheck(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasCheck(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)));
    cublasCheck(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)));
    if (fp8) {
        cublasCheck(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &weight_scale_inv,
                                                   sizeof(weight_scale_inv)));
        cublasCheck(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &inp_scale_inv,
                                                   sizeof(inp_scale_inv)));
        int8_t fast = fast_accum ? 1 : 0;
        cublasCheck(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast)));
    }
    if (bias) {
        cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
        cudaDataType_t bias_type = CUDA_R_16BF;
        cublasCheck(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
        cublasCheck(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)));
        cublasCheck(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
    }
    cublasLtMatrixLayout_t a_layout, b_layout, d_layout;
    if (trans_a) {
        cublasCheck(cublasLtMatrixLayoutCreate(&a_layout, weight_type, k, out_cols, k));
    } else {
        cublasCheck(cublasLtMatrixLayoutCreate(&a_layout, weight_type, out_cols, k, out_cols));
    }
    if (trans_b) {
        cublasCheck(cublasLtMatrixLayoutCreate(&b_layout, inp_type, rows, k, rows));
    } else {
        cublasCheck(cublasLtMatrixLayoutCreate(&b_layout, inp_type, k, rows, k));
    }
    cublasCheck(cublasLtMatrixLayoutCreate(&d_layout, out_type, out_cols, rows, out_cols));

    GemmKey key;
    memset(&key, 0, sizeof(key));
    key.rows = rows;
    key.out_cols = out_cols;
    key.k = k;
    key.weight_type = weight_type;
    key.inp_type = inp_type;
    key.out_type = out_type;
    key.has_bias = bias != NULL;
    key.accumulate = accumulate;
    key.fast_accum = fp8 && fast_accum;
    key.trans_a = trans_a;
    key.trans_b = trans_b;
    GemmPlan* plan = NULL;
    for (int i = 0; i < ctx->num_plans; i++) {
        if (memcmp(&ctx->plans[i].key, &key, sizeof(key)) == 0) { plan = &ctx->plans[i]; break; }
    }
    if (!plan) {
        cublasLtMatmulPreference_t preference;
        cublasCheck(cublasLtMatmulPreferenceCreate(&preference));
        size_t workspace = GEMM_WORKSPACE_BYTES;
        cublasCheck(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                         &workspace, sizeof(workspace)));
        cublasLtMatmulHeuristicResult_t heuristic;
        int found = 0;
        cublasCheck(cublasLtMatmulAlgoGetHeuristic(ctx->handle, desc, a_layout, b_layout, d_layout, d_layout,
                                                   preference, 1, &heuristic, &found));
        cublasCheck(cublasLtMatmulPreferenceDestroy(preference));
        if (found == 0) {
            fprintf(stderr, "error: cuBLASLt has no algorithm for rows %d out_cols %d k %d (types %d x %d -> %d)\n",
                    rows, out_cols, k, (int)weight_type, (int)inp_type, (int)out_type);
            exit(1);
        }
        if (ctx->num_plans == GEMM_MAX_PLANS) { ctx->num_plans = 0; }  // more shapes than expected: start over
        plan = &ctx->plans[ctx->num_plans++];
        plan->key = key;
        plan->algo = heuristic.algo;
    }
    const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    cublasCheck(cublasLtMatmul(ctx->handle, desc, &alpha, weight, a_layout, inp, b_layout, &beta, out, d_layout, out,
                               d_layout, &plan->algo, ctx->workspace, GEMM_WORKSPACE_BYTES, stream));
    cublasCheck(cublasLtMatrixLayoutDestroy(a_layout));
    cublasCheck(cublasLtMatrixLayoutDestroy(b_layout));
    cublasCheck(cublasLtMatrixLayoutDestroy(d_layout));
    cublasCheck(cublasLtMatmulDescDestroy(desc));
}

// The trainers' row-major form: out (rows, out_cols) = inp (rows, k) @ weight (out_cols, k)^T (+ bias) (+ out), the
// TN problem described at the top. weight_scale_inv / inp_scale_inv: device pointers for FP8 operands, else NULL.
static inline void gemm_tn(GemmContext* ctx, void* out, cudaDataType_t out_type, const void* weight,
                           cudaDataType_t weight_type, const float* weight_scale_inv, const void* inp,
                           cudaDataType_t inp_type, const float* inp_scale_inv, const void* bias, int rows,
                           int out_cols, int k, int accumulate, int fast_accum, cudaStream_t stream) {
    gemm_lt(ctx, out, out_type, weight, weight_type, weight_scale_inv, 1, inp, inp_type, inp_scale_inv, 0, bias, out_cols,
            rows, k, accumulate, fast_accum, stream);
}

#endif  // GPTFP8_GEMM_CUH
