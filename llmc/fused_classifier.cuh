/*
llmc/fused_classifier.cuh — the end of the GPU's forward, one block per row: softmax, cross-entropy and, when
training, its gradient written over the logits. The CPU reference has the three as softmax_forward,
crossentropy_forward and crossentropy_softmax_backward; llm.c fuses them as here (the logits, (B, T, Vp) bf16, are
the largest activation: overwritten in place).

Two kernels. Where Vp is a multiple of 8 and the logits 16-byte aligned (always, in the trainer: Vp is V rounded up to
128), fused_classifier_vec_kernel reads a row twice in 16-byte vectors: once for its softmax statistics, the largest
logit and the sum of exp(logit - largest) together (online: a vector with a larger logit rescales the sum so far), and,
when training, once more to write the gradient. Otherwise fused_classifier_kernel, element by element, reads it three
times (the max, the sum, the gradient). At GPT-2's vocabulary a row is 100 KB, (B*T, 50304) 6.6 GB at d12 B 64: each
read is about 2 ms of an H100's bandwidth, and 2-byte accesses use a fraction of it.
*/
#ifndef GPTFP8_FUSED_CLASSIFIER_CUH
#define GPTFP8_FUSED_CLASSIFIER_CUH

#include "cuda_common.cuh"

// softmax + cross-entropy + gradient, fused: one block per (b, t), element by element. logits (B*T, Vp) bf16 are
// overwritten with dlogits = (probs - onehot(target)) * dloss; losses (B*T) fp32. Only the real vocabulary [0, V)
// counts; padded columns get gradient 0.

__global__ void fused_classifier_kernel(floatX* logits, float* losses, const int* targets, float dloss, int V, int Vp,
                                        int write_gradient) {
    size_t row = blockIdx.x;
    floatX* l = logits + row * Vp;
    float maxval = -FLT_MAX;
    for (int i = threadIdx.x; i < V; i += blockDim.x) { maxval = fmaxf(maxval, __bfloat162float(l[i])); }
    maxval = block_max(maxval);
    float sum = 0.0f;
    for (int i = threadIdx.x; i < V; i += blockDim.x) { sum += expf(__bfloat162float(l[i]) - maxval); }
    sum = block_sum(sum);
    int target = targets[row];
    if (threadIdx.x == 0) { losses[row] = logf(sum) + maxval - __bfloat162float(l[target]); }
    __syncthreads();  // the loss read l[target] before anyone overwrites it
    if (!write_gradient) { return; }
    for (int i = threadIdx.x; i < Vp; i += blockDim.x) {
        float g = 0.0f;
        if (i < V) {
            float p = expf(__bfloat162float(l[i]) - maxval) / sum;
            g = (p - (i == target ? 1.0f : 0.0f)) * dloss;
        }
        l[i] = __float2bfloat16_rn(g);
    }
}

// ----------------------------------------------------------------------------
// 16-byte vectors, the softmax statistics in one pass

// A softmax's statistics over the logits seen so far: the largest, and the sum of exp(logit - largest)
typedef struct {
    float max, sum;
} SoftmaxStats;

// Two sets of statistics as one: each sum rescaled to the larger max. A set that saw nothing ({-FLT_MAX, 0}) adds 0.
__device__ __forceinline__ SoftmaxStats softmax_stats_merge(SoftmaxStats a, SoftmaxStats b) {
    float m = fmaxf(a.max, b.max);
    SoftmaxStats merged = {m, a.sum * expf(a.max - m) + b.sum * expf(b.max - m)};
    return merged;
}

// The block's statistics, in every thread: a warp merges by shuffles, then warp 0 merges the warps'. blockDim.x a
// multiple of 32.
__device__ __forceinline__ SoftmaxStats block_softmax_stats(SoftmaxStats s) {
    __shared__ SoftmaxStats warp_stats[32];
    __shared__ SoftmaxStats total;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int offset = 16; offset > 0; offset >>= 1) {
        SoftmaxStats other = {__shfl_xor_sync(0xFFFFFFFFu, s.max, offset), __shfl_xor_sync(0xFFFFFFFFu, s.sum, offset)};
        s = softmax_stats_merge(s, other);
    }
    if (lane == 0) { warp_stats[warp] = s; }
    __syncthreads();
    if (warp == 0) {
        SoftmaxStats w = {-FLT_MAX, 0.0f};
        if (lane < (int)(blockDim.x / 32)) { w = warp_stats[lane]; }
        for (int offset = 16; offset > 0; offset >>= 1) {
            SoftmaxStats other = {__shfl_xor_sync(0xFFFFFFFFu, w.max, offset),
                                  __shfl_xor_sync(0xFFFFFFFFu, w.sum, offset)};
            w = softmax_stats_merge(w, other);
        }
        if (lane == 0) { total = w; }
    }
    __syncthreads();
    return total;
}

#define CLASSIFIER_BLOCK_SIZE 256

// As fused_classifier_kernel, the row in 16-byte vectors (Vp a multiple of 8, logits 16-byte aligned). Each thread
// takes vectors v, v + blockDim.x, ...: per vector, its largest real logit (columns below V) first, the thread's sum
// rescaled once if that is larger than its max so far, then the vector's exps added; the threads' statistics merged
// (block_softmax_stats). The gradient is the other kernel's expression, element by element.
__global__ void __launch_bounds__(CLASSIFIER_BLOCK_SIZE)
    fused_classifier_vec_kernel(floatX* logits, float* losses, const int* targets, float dloss, int V, int Vp,
                                int write_gradient) {
    size_t row = blockIdx.x;
    floatX* l = logits + row * Vp;
    uint4* l_vectors = reinterpret_cast<uint4*>(l);
    int vectors = Vp / 8;
    SoftmaxStats s = {-FLT_MAX, 0.0f};
    for (int v = threadIdx.x; v < vectors; v += blockDim.x) {
        float x[8];
        bf16x8_to_float(x, l_vectors[v]);
        int real = min(8, V - 8 * v);  // columns of this vector below V (none past the real vocabulary)
        if (real <= 0) { continue; }
        float vector_max = x[0];
        for (int i = 1; i < real; i++) { vector_max = fmaxf(vector_max, x[i]); }
        if (vector_max > s.max) {
            s.sum *= expf(s.max - vector_max);
            s.max = vector_max;
        }
        for (int i = 0; i < real; i++) { s.sum += expf(x[i] - s.max); }
    }
    s = block_softmax_stats(s);
    int target = targets[row];
    if (threadIdx.x == 0) { losses[row] = logf(s.sum) + s.max - __bfloat162float(l[target]); }
    __syncthreads();  // the loss read l[target] before anyone overwrites it
    if (!write_gradient) { return; }
    for (int v = threadIdx.x; v < vectors; v += blockDim.x) {
        float x[8];
        bf16x8_to_float(x, l_vectors[v]);
        uint4 packed;
        floatX* g = reinterpret_cast<floatX*>(&packed);
        for (int i = 0; i < 8; i++) {
            int c = 8 * v + i;
            float gradient = 0.0f;
            if (c < V) {
                float p = expf(x[i] - s.max) / s.sum;
                gradient = (p - (c == target ? 1.0f : 0.0f)) * dloss;
            }
            g[i] = __float2bfloat16_rn(gradient);
        }
        l_vectors[v] = packed;
    }
}

// losses (B, T) fp32 from logits (B, T, Vp) and targets (B, T); write_dlogits: logits become dlogits, with dloss
// (d mean loss / d loss of a token) folded in
static inline void fused_classifier(floatX* logits, float* losses, float dloss, const int* targets, int B, int T, int V,
                                    int Vp, int write_dlogits, cudaStream_t stream) {
    unsigned int row_blocks = blocks_per_row((size_t)B * T, "LayerNorm and the classifier (one block per token)");
    if (Vp % 8 == 0 && all_aligned_16(logits, logits, logits)) {
        fused_classifier_vec_kernel<<<row_blocks, CLASSIFIER_BLOCK_SIZE, 0, stream>>>(logits, losses, targets, dloss, V,
                                                                                     Vp, write_dlogits);
    } else {
        fused_classifier_kernel<<<row_blocks, 512, 0, stream>>>(logits, losses, targets, dloss, V, Vp, write_dlogits);
    }
    cudaCheck(cudaGetLastError());
}

#endif  // GPTFP8_FUSED_CLASSIFIER_CUH
