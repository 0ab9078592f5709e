/*
llmc/attention.cuh — causal multi-head attention in plain CUDA + cuBLAS: the fallback to cuDNN's fused attention,
and its check. It materializes the (B, NH, T, T) attention matrix, so it is memory-hungry at long T; what it buys is
that every step is a kernel or a GEMM a reader can follow, the same math as attention_forward in train_gpt_fp8.c.

Forward:  qkv (B, T, 3C) -> permute -> q, k, v (B, NH, T, HS)
          preatt = q @ k^T (batched over B*NH)  -> causal softmax(preatt / sqrt(HS)) = att (B, NH, T, T), kept
          y = att @ v (B, NH, T, HS) -> unpermute -> out (B, T, C)
Backward: datt = dy @ v^T, dv = att^T @ dy, dpreatt = att * (datt - rowsum(att * datt)) / sqrt(HS),
          dq = dpreatt @ k, dk = dpreatt^T @ q -> permute back into dqkv (B, T, 3C)
*/
#ifndef GPTFP8_ATTENTION_CUH
#define GPTFP8_ATTENTION_CUH

#include <cublas_v2.h>

#include "cuda_utils.cuh"
#include "cuda_common.cuh"

// Position (b, h, t, d) of element idx of a (B, NH, T, HS) tensor, and the offset of the same (b, t, h, d) in a
// (B, T, `stride_heads` * NH, HS) tensor (3 for qkv, 1 for the attention output).
__device__ __forceinline__ size_t attention_btnh_offset(size_t idx, int T, int NH, int HS, int stride_heads) {
    int d = (int)(idx % HS);
    size_t rest = idx / HS;
    int t = (int)(rest % T);
    rest /= T;
    int h = (int)(rest % NH);
    size_t b = rest / NH;
    return ((b * T + t) * stride_heads * NH + h) * HS + d;
}

// qkv (B, T, 3, NH, HS) -> q, k, v each (B, NH, T, HS)
__global__ void attention_permute_kernel(floatX* q, floatX* k, floatX* v, const floatX* qkv, int B, int T, int NH, int HS) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)B * NH * T * HS) { return; }
    size_t src = attention_btnh_offset(idx, T, NH, HS, 3);
    q[idx] = qkv[src];
    k[idx] = qkv[src + (size_t)NH * HS];
    v[idx] = qkv[src + 2 * (size_t)NH * HS];
}

// the reverse: dq, dk, dv (B, NH, T, HS) -> dqkv (B, T, 3, NH, HS)
__global__ void attention_permute_backward_kernel(floatX* dqkv, const floatX* dq, const floatX* dk, const floatX* dv,
                                                  int B, int T, int NH, int HS) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)B * NH * T * HS) { return; }
    size_t dst = attention_btnh_offset(idx, T, NH, HS, 3);
    dqkv[dst] = dq[idx];
    dqkv[dst + (size_t)NH * HS] = dk[idx];
    dqkv[dst + 2 * (size_t)NH * HS] = dv[idx];
}

// y (B, NH, T, HS) <-> out (B, T, NH, HS); `forward` picks the direction
__global__ void attention_unpermute_kernel(floatX* out, floatX* y, int B, int T, int NH, int HS, int forward) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)B * NH * T * HS) { return; }
    size_t other = attention_btnh_offset(idx, T, NH, HS, 1);
    if (forward) { out[other] = y[idx]; } else { y[idx] = out[other]; }
}

// att (rows = B*NH*T, T): causal softmax of scale * preatt; one block per row. Entries t2 > t are 0.
__global__ void causal_softmax_forward_kernel(floatX* att, const floatX* preatt, int T, float scale) {
    size_t row = blockIdx.x;
    int t = (int)(row % T);
    const floatX* p = preatt + row * T;
    float maxval = -FLT_MAX;
    for (int j = threadIdx.x; j <= t; j += blockDim.x) { maxval = fmaxf(maxval, scale * __bfloat162float(p[j])); }
    maxval = block_max(maxval);
    float sum = 0.0f;
    for (int j = threadIdx.x; j <= t; j += blockDim.x) { sum += expf(scale * __bfloat162float(p[j]) - maxval); }
    sum = block_sum(sum);
    for (int j = threadIdx.x; j < T; j += blockDim.x) {
        float a = j <= t ? expf(scale * __bfloat162float(p[j]) - maxval) / sum : 0.0f;
        att[row * T + j] = __float2bfloat16_rn(a);
    }
}

// dpreatt = att * (datt - sum_j att_j * datt_j) * scale, in place over datt; one block per row
__global__ void causal_softmax_backward_kernel(floatX* datt, const floatX* att, int T, float scale) {
    size_t row = blockIdx.x;
    int t = (int)(row % T);
    const floatX* a = att + row * T;
    floatX* d = datt + row * T;
    float dot = 0.0f;
    for (int j = threadIdx.x; j <= t; j += blockDim.x) { dot += __bfloat162float(a[j]) * __bfloat162float(d[j]); }
    dot = block_sum(dot);
    for (int j = threadIdx.x; j < T; j += blockDim.x) {
        float g = j <= t ? __bfloat162float(a[j]) * (__bfloat162float(d[j]) - dot) * scale : 0.0f;
        d[j] = __float2bfloat16_rn(g);
    }
}

// Row-major batched GEMM: C (M, N) = op(A) (M, K) @ op(B) (K, N), bf16 in and out, fp32 accumulation. cuBLAS is
// column-major, and a row-major matrix is its transpose there, so this asks cuBLAS for C^T = op(B)^T op(A)^T.
static inline void batched_gemm_rowmajor(cublasHandle_t handle, int trans_a, int trans_b, int M, int N, int K,
                                         const floatX* A, long long stride_a, const floatX* B, long long stride_b,
                                         floatX* C, long long stride_c, int batch, float beta) {
    const float alpha = 1.0f;
    int lda = trans_a ? M : K, ldb = trans_b ? K : N;
    cublasCheck(cublasGemmStridedBatchedEx(handle, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                           N, M, K, &alpha, B, CUDA_R_16BF, ldb, stride_b, A, CUDA_R_16BF, lda, stride_a,
                                           &beta, C, CUDA_R_16BF, N, stride_c, batch, CUBLAS_COMPUTE_32F,
                                           CUBLAS_GEMM_DEFAULT));
}

// scratch: q, k, v, y each (B, NH, T, HS); preatt (B, NH, T, T); cuBLAS's workspace (NULL: its own pool), given so
// that a CUDA graph's capture of these GEMMs allocates nothing and picks as the launches one by one do
typedef struct {
    floatX *q, *k, *v, *y, *preatt;
    void* cublas_workspace;
    size_t cublas_workspace_bytes;
} AttentionScratch;

// cuBLAS on stream, with the scratch's workspace (cublasSetStream puts cuBLAS back on its own pool)
static inline void attention_cublas_on(cublasHandle_t handle, const AttentionScratch* s, cudaStream_t stream) {
    cublasCheck(cublasSetStream(handle, stream));
    if (s->cublas_workspace) {
        cublasCheck(cublasSetWorkspace(handle, s->cublas_workspace, s->cublas_workspace_bytes));
    }
}

// out (B, T, C); att (B, NH, T, T) kept for the backward; qkv (B, T, 3C). The CPU reference's attention_forward
// (out, preatt, att, inp, B, T, C, NH), with preatt in the scratch, and the GPU's extras last.
static inline void attention_forward(floatX* out, floatX* att, const floatX* qkv, int B, int T, int C, int NH,
                                     AttentionScratch* s, cublasHandle_t handle, cudaStream_t stream) {
    int HS = C / NH;
    size_t n = (size_t)B * T * C;
    attention_cublas_on(handle, s, stream);
    attention_permute_kernel<<<blocks_for(n, 256), 256, 0, stream>>>(s->q, s->k, s->v, qkv, B, T, NH, HS);
    cudaCheck(cudaGetLastError());
    // preatt (T, T) = q (T, HS) @ k^T, per (b, h)
    batched_gemm_rowmajor(handle, 0, 1, T, T, HS, s->q, (long long)T * HS, s->k, (long long)T * HS, s->preatt,
                          (long long)T * T, B * NH, 0.0f);
    unsigned int softmax_blocks = blocks_per_row((size_t)B * NH * T, "the attention softmax");
    causal_softmax_forward_kernel<<<softmax_blocks, 256, 0, stream>>>(att, s->preatt, T, 1.0f / sqrtf((float)HS));
    cudaCheck(cudaGetLastError());
    // y (T, HS) = att (T, T) @ v (T, HS)
    batched_gemm_rowmajor(handle, 0, 0, T, HS, T, att, (long long)T * T, s->v, (long long)T * HS, s->y,
                          (long long)T * HS, B * NH, 0.0f);
    attention_unpermute_kernel<<<blocks_for(n, 256), 256, 0, stream>>>(out, s->y, B, T, NH, HS, 1);
    cudaCheck(cudaGetLastError());
}

// dqkv (B, T, 3C) = backward of the above given dout (B, T, C); qkv and att from the forward (the CPU's
// attention_backward with its dpreatt and datt in the scratch, written where the CPU's accumulates). Reuses the
// scratch: q, k, v are recomputed from qkv; preatt holds datt/dpreatt; y holds dy; dq, dk, dv (B, NH, T, HS).
static inline void attention_backward(floatX* dqkv, const floatX* dout, const floatX* qkv, const floatX* att, int B,
                                      int T, int C, int NH, AttentionScratch* s, floatX* dq, floatX* dk, floatX* dv,
                                      cublasHandle_t handle, cudaStream_t stream) {
    int HS = C / NH;
    size_t n = (size_t)B * T * C;
    attention_cublas_on(handle, s, stream);
    attention_permute_kernel<<<blocks_for(n, 256), 256, 0, stream>>>(s->q, s->k, s->v, qkv, B, T, NH, HS);
    attention_unpermute_kernel<<<blocks_for(n, 256), 256, 0, stream>>>((floatX*)dout, s->y, B, T, NH, HS, 0);
    cudaCheck(cudaGetLastError());
    long long sTH = (long long)T * HS, sTT = (long long)T * T;
    // datt (T, T) = dy (T, HS) @ v^T ; dv (T, HS) = att^T (T, T) @ dy (T, HS)
    batched_gemm_rowmajor(handle, 0, 1, T, T, HS, s->y, sTH, s->v, sTH, s->preatt, sTT, B * NH, 0.0f);
    batched_gemm_rowmajor(handle, 1, 0, T, HS, T, att, sTT, s->y, sTH, dv, sTH, B * NH, 0.0f);
    unsigned int softmax_blocks = blocks_per_row((size_t)B * NH * T, "the attention softmax");
    causal_softmax_backward_kernel<<<softmax_blocks, 256, 0, stream>>>(s->preatt, att, T, 1.0f / sqrtf((float)HS));
    cudaCheck(cudaGetLastError());
    // dq (T, HS) = dpreatt (T, T) @ k (T, HS) ; dk (T, HS) = dpreatt^T @ q
    batched_gemm_rowmajor(handle, 0, 0, T, HS, T, s->preatt, sTT, s->k, sTH, dq, sTH, B * NH, 0.0f);
    batched_gemm_rowmajor(handle, 1, 0, T, HS, T, s->preatt, sTT, s->q, sTH, dk, sTH, B * NH, 0.0f);
    attention_permute_backward_kernel<<<blocks_for(n, 256), 256, 0, stream>>>(dqkv, dq, dk, dv, B, T, NH, HS);
    cudaCheck(cudaGetLastError());
}

#endif  // GPTFP8_ATTENTION_CUH
