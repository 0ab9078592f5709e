/*
llmc/adamw.cuh — AdamW on the GPU: fp32 master weights, moments and gradients in, the bf16 weights the GEMMs read
out, in one pass (one launch for every tensor of a step), with the CPU reference's gpt2_update's arithmetic in its
order (the clipping factor from the global norm, then the moments, then the decoupled decay). The norm is read on the
device (llmc/global_norm.cuh), where a
norm that is not finite leaves every array as it was (a skipped step). And the fp32 -> bf16 copy of the weights
(initial parameters, loaded checkpoints).
*/
#ifndef GPTFP8_ADAMW_CUH
#define GPTFP8_ADAMW_CUH

#include "cuda_common.cuh"
#include "global_norm.cuh"
#include "utils.h"

// One parameter's AdamW: the master weight w after the step, its moments *m and *v updated, from its gradient. Both
// paths of adamw_kernel call it, so they give the same bits.
__device__ __forceinline__ float adamw_element(float w, float grad_unclipped, float* m, float* v, float lr, float beta1,
                                               float beta2, float bias1, float bias2, float eps, float weight_decay,
                                               float clip_scale) {
    float grad = grad_unclipped * clip_scale;
    float mi = beta1 * *m + (1.0f - beta1) * grad;
    float vi = beta2 * *v + (1.0f - beta2) * grad * grad;
    *m = mi;
    *v = vi;
    w -= lr * ((mi / bias1) / (sqrtf(vi / bias2) + eps) + weight_decay * w);
    return w;
}

// The parameter tensors one launch updates, back to back in its arrays: tensor t is elements [end[t - 1], end[t])
// (end[-1] = 0), with its own weight decay (the 2-D tensors' weight_decay, the others' 0). One launch for every tensor
// of a step rather than one a tensor: the small ones (biases, LayerNorm) were launches of a few microseconds each.
#define ADAMW_MAX_TENSORS 16
typedef struct {
    size_t end[ADAMW_MAX_TENSORS];
    float weight_decay[ADAMW_MAX_TENSORS];
    int count;
} AdamwTensors;

// The tensor element i belongs to, looking from tensor t on (i ascends within a thread)
__device__ __forceinline__ int adamw_tensor_of(const AdamwTensors& tensors, size_t i, int t) {
    while (t < tensors.count - 1 && i >= tensors.end[t]) { t++; }
    return t;
}

// AdamW on fp32 master weights; writes the bf16 copy the GEMMs read. The gradient clipping's factor comes from the
// global norm's square on the device (grad_clip_scale; every thread reads the same 4 bytes); none of it runs where
// that norm skips the step.
// ADAMW_VECTOR parameters a thread: where `vectorized` (every pointer 16-byte aligned) as 16-byte loads and stores,
// two of each fp32 array and one of the bf16 weights, several in flight at once; else, and for the tail of n, one by
// one; each parameter with its tensor's weight decay (a vector may straddle two tensors). AdamW moves 30 bytes a
// parameter, the most of any pass at the end of a step.
#define ADAMW_VECTOR 8
__global__ void adamw_kernel(float* master, floatX* params, const float* grads, float* m, float* v,
                             const AdamwTensors tensors, float lr, float beta1, float beta2, float bias1, float bias2,
                             float eps, const float* grad_norm_squared, float grad_clip, int vectorized) {
    const size_t n = tensors.end[tensors.count - 1];
    size_t first = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * ADAMW_VECTOR;
    if (first >= n) { return; }
    const float norm_squared = *grad_norm_squared;
    if (grad_norm_skips_step(norm_squared)) { return; }
    const float clip_scale = grad_clip_scale(norm_squared, grad_clip);
    int t = adamw_tensor_of(tensors, first, 0);
    if (vectorized && first + ADAMW_VECTOR <= n) {
        float w[8], g[8], mv[8], vv[8];
        for (int h = 0; h < 2; h++) {  // two 16-byte vectors of each fp32 array
            *reinterpret_cast<float4*>(w + 4 * h) = reinterpret_cast<const float4*>(master + first)[h];
            *reinterpret_cast<float4*>(g + 4 * h) = reinterpret_cast<const float4*>(grads + first)[h];
            *reinterpret_cast<float4*>(mv + 4 * h) = reinterpret_cast<const float4*>(m + first)[h];
            *reinterpret_cast<float4*>(vv + 4 * h) = reinterpret_cast<const float4*>(v + first)[h];
        }
        uint4 out;
        floatX* os = reinterpret_cast<floatX*>(&out);
        for (int i = 0; i < 8; i++) {
            t = adamw_tensor_of(tensors, first + i, t);
            w[i] = adamw_element(w[i], g[i], &mv[i], &vv[i], lr, beta1, beta2, bias1, bias2, eps,
                                 tensors.weight_decay[t], clip_scale);
            os[i] = __float2bfloat16_rn(w[i]);
        }
        for (int h = 0; h < 2; h++) {
            reinterpret_cast<float4*>(master + first)[h] = *reinterpret_cast<const float4*>(w + 4 * h);
            reinterpret_cast<float4*>(m + first)[h] = *reinterpret_cast<const float4*>(mv + 4 * h);
            reinterpret_cast<float4*>(v + first)[h] = *reinterpret_cast<const float4*>(vv + 4 * h);
        }
        *reinterpret_cast<uint4*>(params + first) = out;
        return;
    }
    for (size_t i = first; i < n && i < first + ADAMW_VECTOR; i++) {
        t = adamw_tensor_of(tensors, i, t);
        float w = adamw_element(master[i], grads[i], &m[i], &v[i], lr, beta1, beta2, bias1, bias2, eps,
                                tensors.weight_decay[t], clip_scale);
        master[i] = w;
        params[i] = __float2bfloat16_rn(w);
    }
}

// fp32 -> bf16 copy (initial parameters, loaded checkpoints)
__global__ void float_to_bf16_kernel(floatX* out, const float* inp, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { out[i] = __float2bfloat16_rn(inp[i]); }
}

// Whether adamw_kernel takes these arrays 16 bytes at a time: every pointer 16-byte aligned (a shard or a tensor
// that starts at a multiple of 8 parameters)
static inline int adamw_vectorized(const float* master, const floatX* params, const float* grads, const float* m,
                                   const float* v) {
    return all_aligned_16(master, params, grads) && all_aligned_16(m, v, v);
}

// Adds a tensor of n parameters with its weight decay after the ones `tensors` holds
static inline void adamw_tensors_add(AdamwTensors* tensors, size_t n, float weight_decay) {
    if (tensors->count == ADAMW_MAX_TENSORS) { die("AdamW: more than %d tensors in one launch", ADAMW_MAX_TENSORS); }
    size_t start = tensors->count ? tensors->end[tensors->count - 1] : 0;
    tensors->end[tensors->count] = start + n;
    tensors->weight_decay[tensors->count] = weight_decay;
    tensors->count++;
}

// One AdamW step of the parameters of `tensors`, back to back in the arrays: master, m, v fp32 updated, params bf16
// written; bias1, bias2 the bias corrections 1 - beta^t; grad_norm_squared (1, on the device) the global norm's
// square, clipped to grad_clip. One launch.
static inline void adamw_update(float* master, floatX* params, const float* grads, float* m, float* v,
                                const AdamwTensors* tensors, float learning_rate, float beta1, float beta2, float bias1,
                                float bias2, float eps, const float* grad_norm_squared, float grad_clip,
                                cudaStream_t stream) {
    if (tensors->count == 0) { return; }
    size_t n = tensors->end[tensors->count - 1];
    if (n == 0) { return; }
    size_t threads = (n + ADAMW_VECTOR - 1) / ADAMW_VECTOR;
    adamw_kernel<<<blocks_for(threads, 256), 256, 0, stream>>>(master, params, grads, m, v, *tensors, learning_rate,
                                                               beta1, beta2, bias1, bias2, eps, grad_norm_squared,
                                                               grad_clip, adamw_vectorized(master, params, grads, m, v));
    cudaCheck(cudaGetLastError());
}

// out (n) bf16 = inp (n) fp32, rounded to nearest
static inline void float_to_bf16(floatX* out, const float* inp, size_t n, cudaStream_t stream) {
    float_to_bf16_kernel<<<blocks_for(n, 512), 512, 0, stream>>>(out, inp, n);
    cudaCheck(cudaGetLastError());
}

#endif  // GPTFP8_ADAMW_CUH
