/*
llmc/adamw.cuh — AdamW on the GPU: fp32 master weights, moments and gradients in, the bf16 weights the GEMMs read
out, in one pass, with the CPU reference's gpt2_update's arithmetic in its order (the clipping factor from the global
norm, then the moments, then the decoupled decay). And the fp32 -> bf16 copy of the weights
(initial parameters, loaded checkpoints).
*/
#ifndef GPTFP8_ADAMW_CUH
#define GPTFP8_ADAMW_CUH

#include "cuda_common.cuh"

// AdamW on fp32 master weights; writes the bf16 copy the GEMMs read. clip_scale: the gradient clipping's factor,
// min(1, grad_clip / norm), computed once on the host from the global norm, as the CPU's gpt2_update does.
__global__ void adamw_kernel(float* master, floatX* params, const float* grads, float* m, float* v, size_t n, float lr,
                             float beta1, float beta2, float bias1, float bias2, float eps, float weight_decay,
                             float clip_scale) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) { return; }
    float grad = grads[i] * clip_scale;
    float mi = beta1 * m[i] + (1.0f - beta1) * grad;
    float vi = beta2 * v[i] + (1.0f - beta2) * grad * grad;
    m[i] = mi;
    v[i] = vi;
    float w = master[i];
    w -= lr * ((mi / bias1) / (sqrtf(vi / bias2) + eps) + weight_decay * w);
    master[i] = w;
    params[i] = __float2bfloat16_rn(w);
}

// fp32 -> bf16 copy (initial parameters, loaded checkpoints)
__global__ void float_to_bf16_kernel(floatX* out, const float* inp, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { out[i] = __float2bfloat16_rn(inp[i]); }
}

// One AdamW step of n parameters: master, m, v (n) fp32 updated, params (n) bf16 written; bias1, bias2 the bias
// corrections 1 - beta^t; clip_scale the gradient clipping's factor
static inline void adamw_update(float* master, floatX* params, const float* grads, float* m, float* v, size_t n,
                                float learning_rate, float beta1, float beta2, float bias1, float bias2, float eps,
                                float weight_decay, float clip_scale, cudaStream_t stream) {
    adamw_kernel<<<blocks_for(n, 512), 512, 0, stream>>>(master, params, grads, m, v, n, learning_rate, beta1, beta2,
                                                         bias1, bias2, eps, weight_decay, clip_scale);
    cudaCheck(cudaGetLastError());
}

// out (n) bf16 = inp (n) fp32, rounded to nearest
static inline void float_to_bf16(floatX* out, const float* inp, size_t n, cudaStream_t stream) {
    float_to_bf16_kernel<<<blocks_for(n, 512), 512, 0, stream>>>(out, inp, n);
    cudaCheck(cudaGetLastError());
}

#endif  // GPTFP8_ADAMW_CUH
