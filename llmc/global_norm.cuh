/*
llmc/global_norm.cuh — the squared L2 norm of the gradients on the GPU, in two deterministic passes (no float atomics:
the same gradients give the same bits every run, which resume and the GPU test rely on). The CPU reference's
gpt2_grad_norm_squared sums in double in fixed chunks: a different order, the same quantity.
*/
#ifndef GPTFP8_GLOBAL_NORM_CUH
#define GPTFP8_GLOBAL_NORM_CUH

#include "cuda_common.cuh"

// *norm_squared += sum of squares of grads (n) fp32
// The gradient norm in two deterministic passes: each of NORM_BLOCKS blocks sums the squares of a fixed strided
// subset into partials[block]; then one block adds the partials in a fixed tree. No atomics, so the same gradients
// give the same bits every run (a float atomicAdd would add the blocks in whatever order they finish).
#define NORM_BLOCKS 264
__global__ void norm_squared_partials_kernel(float* partials, const float* grads, size_t n) {
    float sum = 0.0f;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        sum += grads[i] * grads[i];
    }
    sum = block_sum(sum);
    if (threadIdx.x == 0) { partials[blockIdx.x] = sum; }
}

__global__ void sum_partials_kernel(float* out, const float* partials, int n) {
    float sum = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) { sum += partials[i]; }
    sum = block_sum(sum);
    if (threadIdx.x == 0) { *out = sum; }
}

// *norm_squared = sum of squares of grads (n) fp32, through partials (NORM_BLOCKS)
static inline void global_norm_squared(float* norm_squared, float* partials, const float* grads, size_t n,
                                       cudaStream_t stream) {
    norm_squared_partials_kernel<<<NORM_BLOCKS, 512, 0, stream>>>(partials, grads, n);
    sum_partials_kernel<<<1, 1024, 0, stream>>>(norm_squared, partials, NORM_BLOCKS);
    cudaCheck(cudaGetLastError());
}

#endif  // GPTFP8_GLOBAL_NORM_CUH
