/*
llmc/layernorm.cuh — LayerNorm on the GPU, and the residual add beside it (llm.c keeps them together): the CPU
reference's layernorm_forward, layernorm_backward and residual_forward with its names and argument order, the stream
(and the backward's column-sum scratch) last; and layernorm_recompute, -r 2's forward again in the backward. One
thread block per row where a row is reduced; the parameter gradients are deterministic column sums
(llmc/cuda_common.cuh).
*/
#ifndef GPTFP8_LAYERNORM_CUH
#define GPTFP8_LAYERNORM_CUH

#include "cuda_common.cuh"

// One element of LayerNorm's output from its row's mean and rstd. The forward and -r 2's recompute in the backward
// both use it, every rounding explicit (no FMA contraction, the CPU reference's order), so the recomputed bytes are
// the forward's.
__device__ __forceinline__ floatX layernorm_output(floatX x, float mean, float rstd, floatX weight, floatX bias) {
    float norm = __fmul_rn(__fsub_rn(__bfloat162float(x), mean), rstd);
    return __float2bfloat16_rn(__fadd_rn(__fmul_rn(norm, __bfloat162float(weight)), __bfloat162float(bias)));
}

__global__ void layernorm_forward_kernel(floatX* out, float* mean, float* rstd, const floatX* inp, const floatX* weight,
                                         const floatX* bias, int C) {
    size_t row = blockIdx.x;
    const floatX* x = inp + row * C;
    float sum = 0.0f;
    for (int i = threadIdx.x; i < C; i += blockDim.x) { sum += __bfloat162float(x[i]); }
    float m = block_sum(sum) / C;
    float var = 0.0f;
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
        float d = __bfloat162float(x[i]) - m;
        var += d * d;
    }
    float s = rsqrtf(block_sum(var) / C + 1e-5f);
    for (int i = threadIdx.x; i < C; i += blockDim.x) { out[row * C + i] = layernorm_output(x[i], m, s, weight[i], bias[i]); }
    if (threadIdx.x == 0) {
        mean[row] = m;
        rstd[row] = s;
    }
}

// -r 2: out (B*T, C) = LayerNorm's output again, in the backward, from its input and the mean and rstd the forward
// saved (no reductions: the same values the forward normalized with); one block per row.
__global__ void layernorm_recompute_kernel(floatX* out, const floatX* inp, const floatX* weight, const floatX* bias,
                                           const float* mean, const float* rstd, int C) {
    size_t row = blockIdx.x;
    float m = mean[row], s = rstd[row];
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
        out[row * C + i] = layernorm_output(inp[row * C + i], m, s, weight[i], bias[i]);
    }
}

// dinp (B*T, C) bf16 += the LayerNorm input gradient; one block per row. The weight and bias gradients are column
// sums over rows, done by layernorm_param_backward_partials_kernel (a per-element atomicAdd here would serialize on C
// addresses).
__global__ void layernorm_backward_kernel(floatX* dinp, const floatX* dout, const floatX* inp, const floatX* weight,
                                          const float* mean, const float* rstd, int C) {
    size_t row = blockIdx.x;
    const floatX* x = inp + row * C;
    const floatX* dy = dout + row * C;
    float m = mean[row], s = rstd[row];
    float dnorm_sum = 0.0f, dnorm_norm_sum = 0.0f;
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
        float norm = (__bfloat162float(x[i]) - m) * s;
        float dnorm = __bfloat162float(weight[i]) * __bfloat162float(dy[i]);
        dnorm_sum += dnorm;
        dnorm_norm_sum += dnorm * norm;
    }
    float dnorm_mean = block_sum(dnorm_sum) / C, dnorm_norm_mean = block_sum(dnorm_norm_sum) / C;
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
        float norm = (__bfloat162float(x[i]) - m) * s;
        float dnorm = __bfloat162float(weight[i]) * __bfloat162float(dy[i]);
        float dx = (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
        dinp[row * C + i] = __float2bfloat16_rn(__bfloat162float(dinp[row * C + i]) + dx);
    }
}

// partials (num_chunks, 2C): [chunk, c] = sum over the chunk's rows of norm * dout (for dweight), [chunk, C + c] =
// sum of dout (for dbias)
__global__ void layernorm_param_backward_partials_kernel(float* partials, const floatX* dout, const floatX* inp,
                                                         const float* mean, const float* rstd, int rows, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) { return; }
    int r0 = blockIdx.y * COLUMN_SUM_ROWS, r1 = min(rows, r0 + COLUMN_SUM_ROWS);
    float dw = 0.0f, db = 0.0f;
    for (int r = r0; r < r1; r++) {
        float d = __bfloat162float(dout[(size_t)r * C + c]);
        dw += (__bfloat162float(inp[(size_t)r * C + c]) - mean[r]) * rstd[r] * d;
        db += d;
    }
    partials[(size_t)blockIdx.y * 2 * C + c] = dw;
    partials[(size_t)blockIdx.y * 2 * C + C + c] = db;
}

__global__ void residual_forward_kernel(floatX* out, const floatX* inp1, const floatX* inp2, size_t N) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) { out[i] = __float2bfloat16_rn(__bfloat162float(inp1[i]) + __bfloat162float(inp2[i])); }
}

// out (B, T, C) = LayerNorm(inp) * weight + bias; mean, rstd (B, T) kept for the backward
static inline void layernorm_forward(floatX* out, float* mean, float* rstd, const floatX* inp, const floatX* weight,
                                     const floatX* bias, int B, int T, int C, cudaStream_t stream) {
    unsigned int row_blocks = blocks_per_row((size_t)B * T, "LayerNorm and the classifier (one block per token)");
    layernorm_forward_kernel<<<row_blocks, 256, 0, stream>>>(out, mean, rstd, inp, weight, bias, C);
    cudaCheck(cudaGetLastError());
}

// -r 2: out (B, T, C) = the forward's output again, from its input and the mean and rstd it saved (the same bytes)
static inline void layernorm_recompute(floatX* out, const floatX* inp, const floatX* weight, const floatX* bias,
                                       const float* mean, const float* rstd, int B, int T, int C, cudaStream_t stream) {
    unsigned int row_blocks = blocks_per_row((size_t)B * T, "the LayerNorm recompute (one block per token)");
    layernorm_recompute_kernel<<<row_blocks, 256, 0, stream>>>(out, inp, weight, bias, mean, rstd, C);
    cudaCheck(cudaGetLastError());
}

// dinp (B, T, C) bf16 += the input gradient; dweight, dbias (C) fp32 += the parameter gradients, summed over the B*T
// rows in two deterministic passes through column_partials (B*T / COLUMN_SUM_ROWS, 2C)
static inline void layernorm_backward(floatX* dinp, float* dweight, float* dbias, const floatX* dout, const floatX* inp,
                                      const floatX* weight, const float* mean, const float* rstd, int B, int T, int C,
                                      float* column_partials, cudaStream_t stream) {
    int rows = B * T, chunks = column_sum_chunks((size_t)rows);
    unsigned int row_blocks = blocks_per_row((size_t)rows, "the LayerNorm backward (one block per token)");
    layernorm_backward_kernel<<<row_blocks, 256, 0, stream>>>(dinp, dout, inp, weight, mean, rstd, C);
    dim3 grid(blocks_for(C, 256), chunks);
    layernorm_param_backward_partials_kernel<<<grid, 256, 0, stream>>>(column_partials, dout, inp, mean, rstd, rows, C);
    column_partials_reduce_kernel<<<blocks_for(C, 256), 256, 0, stream>>>(dweight, column_partials, chunks, 2 * C, C);
    column_partials_reduce_kernel<<<blocks_for(C, 256), 256, 0, stream>>>(dbias, column_partials + C, chunks, 2 * C, C);
    cudaCheck(cudaGetLastError());
}

// out = inp1 + inp2 (N) bf16
static inline void residual_forward(floatX* out, const floatX* inp1, const floatX* inp2, size_t N, cudaStream_t stream) {
    residual_forward_kernel<<<blocks_for(N, 256), 256, 0, stream>>>(out, inp1, inp2, N);
    cudaCheck(cudaGetLastError());
}

#endif  // GPTFP8_LAYERNORM_CUH
