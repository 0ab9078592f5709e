/*
llmc/bias.cuh — a linear layer's bias on the GPU, where cuBLASLt's epilogues do not do it: the bias gradient, the
column sums of its output gradient, deterministic (llmc/cuda_common.cuh's two passes; the CPU reference computes it in
matmul_backward, the GPU's GEMMs do not, so linear_backward calls this beside them; an FP8 layer's grad_output cast
makes pass 1's partials itself, and only pass 2 runs here); and the bias broadcast into a
GEMM's output before a block-scaled GEMM accumulates onto it (those GEMMs take no bias epilogue on Hopper).
*/
#ifndef GPTFP8_BIAS_CUH
#define GPTFP8_BIAS_CUH

#include "cuda_common.cuh"

// bias gradient, pass 1: partials (num_chunks, OC) = column sums of dout (rows, OC) bf16 by row chunks; pass 2 is
// column_partials_reduce into dbias

__global__ void bias_backward_partials_kernel(float* partials, const floatX* dout, int rows, int OC) {
    int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= OC) { return; }
    int r0 = blockIdx.y * COLUMN_SUM_ROWS, r1 = min(rows, r0 + COLUMN_SUM_ROWS);
    float sum = 0.0f;
    for (int r = r0; r < r1; r++) { sum += __bfloat162float(dout[(size_t)r * OC + o]); }
    partials[(size_t)blockIdx.y * OC + o] = sum;
}

// pass 2 alone: dbias (OC) fp32 += the column partials (rows / COLUMN_SUM_ROWS, OC) of a (rows, OC) grad_output,
// added in column_partials_reduce's fixed order, from pass 1 here or from the FP8 cast that made them on its way
// (fp8/quantize.cuh's fp8_cast_transpose_dbias_amax, whose 64-row tiles are these chunks)
static_assert(COLUMN_SUM_ROWS == 64, "fp8_cast_transpose_dbias_amax's partials are sums of 64-row tiles");
static inline void bias_backward_reduce(float* dbias, const float* column_partials, int rows, int OC,
                                        cudaStream_t stream) {
    column_partials_reduce(dbias, column_partials, column_sum_chunks((size_t)rows), OC, OC, stream);
}

// dbias (OC) fp32 += column sums of dout (rows, OC) bf16, through column_partials (rows / COLUMN_SUM_ROWS, OC)
static inline void bias_backward(float* dbias, const floatX* dout, int rows, int OC, float* column_partials,
                                 cudaStream_t stream) {
    int chunks = column_sum_chunks((size_t)rows);
    dim3 grid(blocks_for(OC, 256), chunks);
    bias_backward_partials_kernel<<<grid, 256, 0, stream>>>(column_partials, dout, rows, OC);
    cudaCheck(cudaGetLastError());
    bias_backward_reduce(dbias, column_partials, rows, OC, stream);
}

// out (rows, OC) bf16 = bias (OC) on every row: what a GEMM with beta 1 then adds its product to. A bias epilogue would
// round once; cuBLASLt's block-scaled GEMM into bf16 rounds the product to bf16 before it adds the bias, and the sum
// again (seen on an H100: dev/cuda/fp8_block_gemm's bound counts it), at most half a bf16 ulp of the product more
__global__ void bias_broadcast_kernel(floatX* out, const floatX* bias, size_t n, int OC) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        out[i] = bias[i % (size_t)OC];
    }
}

static inline void bias_broadcast(floatX* out, const floatX* bias, int rows, int OC, cudaStream_t stream) {
    size_t n = (size_t)rows * OC;
    bias_broadcast_kernel<<<blocks_for(n, 256), 256, 0, stream>>>(out, bias, n, OC);
    cudaCheck(cudaGetLastError());
}

#endif  // GPTFP8_BIAS_CUH
