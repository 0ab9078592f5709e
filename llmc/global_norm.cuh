/*
llmc/global_norm.cuh — the squared L2 norm of the gradients on the GPU, in two deterministic passes (no float atomics:
the same gradients give the same bits every run, which resume and the GPU test rely on), and what the end of a step
decides from it on the device: whether the step is skipped, and the gradient clipping's factor. The CPU reference's
gpt2_grad_norm_squared sums in double in fixed chunks: a different order, the same quantity.
*/
#ifndef GPTFP8_GLOBAL_NORM_CUH
#define GPTFP8_GLOBAL_NORM_CUH

#include "cuda_common.cuh"

// The gradient norm in two deterministic passes: each of NORM_BLOCKS blocks sums the squares of a fixed strided
// subset into partials[block]; then one block adds the partials in a fixed tree. No atomics, so the same gradients
// give the same bits every run (a float atomicAdd would add the blocks in whatever order they finish). The first pass
// reads the 16-byte-aligned middle of grads in float4 vectors (four squares added in a row, one 16-byte load in flight
// a thread instead of one float: the pass reads every gradient, 4 bytes a parameter, and is bound by the loads in
// flight), the few elements before and after it one by one. A thread adds at most n / (NORM_BLOCKS * 512) + 6 squares.
#define NORM_BLOCKS 264
__global__ void norm_squared_partials_kernel(float* partials, const float* grads, size_t n) {
    size_t thread = (size_t)blockIdx.x * blockDim.x + threadIdx.x, threads = (size_t)gridDim.x * blockDim.x;
    size_t head = (16 - (uintptr_t)grads % 16) % 16 / sizeof(float);  // elements before the first aligned one
    if (head > n) { head = n; }
    size_t vectors = (n - head) / 4, tail = head + 4 * vectors;
    float sum = 0.0f;
    if (thread < head) { sum += grads[thread] * grads[thread]; }
    const float4* middle = reinterpret_cast<const float4*>(grads + head);
    for (size_t i = thread; i < vectors; i += threads) {
        float4 g = middle[i];
        sum += g.x * g.x;
        sum += g.y * g.y;
        sum += g.z * g.z;
        sum += g.w * g.w;
    }
    if (tail + thread < n) { sum += grads[tail + thread] * grads[tail + thread]; }
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

// The end of a step reads the norm where the norm pass left it, on the device, so the host queues AdamW, the FP8
// update and the weights' casts without waiting for the backward to finish. Each of them applies the two rules below,
// the CPU's gpt2_update and main loop's, with the same float arithmetic (sqrtf and a division, IEEE-rounded on both).

// Whether the norm skips the step: it is not finite (the CPU's isfinite(norm); the sum of squares is finite exactly
// where its square root is). The loss's half of the rule stays the host's, which knows the loss before it queues.
__device__ __forceinline__ bool grad_norm_skips_step(float norm_squared) { return !isfinite(norm_squared); }

// The factor the gradients are clipped by to a global norm of at most grad_clip, as the CPU's gpt2_update computes it
__device__ __forceinline__ float grad_clip_scale(float norm_squared, float grad_clip) {
    float norm = sqrtf(norm_squared);
    return norm > grad_clip ? grad_clip / norm : 1.0f;
}

// dst (n) = saved (n) where the norm skipped the step: what a skipped step's work on the device added to dst (the
// diagnostics of the weights' casts after the update, which the CPU does not make on a skipped step) undone
__global__ void restore_if_step_skipped_kernel(unsigned long long* dst, const unsigned long long* saved, size_t n,
                                               const float* grad_norm_squared) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && grad_norm_skips_step(*grad_norm_squared)) { dst[i] = saved[i]; }
}

static inline void restore_if_step_skipped(unsigned long long* dst, const unsigned long long* saved, size_t n,
                                           const float* grad_norm_squared, cudaStream_t stream) {
    restore_if_step_skipped_kernel<<<blocks_for(n, 256), 256, 0, stream>>>(dst, saved, n, grad_norm_squared);
    cudaCheck(cudaGetLastError());
}

#endif  // GPTFP8_GLOBAL_NORM_CUH
