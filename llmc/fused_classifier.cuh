/*
llmc/fused_classifier.cuh — the end of the GPU's forward in one pass per row: softmax, cross-entropy and, when
training, its gradient written over the logits. The CPU reference has the three as softmax_forward,
crossentropy_forward and crossentropy_softmax_backward; llm.c fuses them as here (the logits, (B, T, Vp) bf16, are
the largest activation: read once, overwritten in place).
*/
#ifndef GPTFP8_FUSED_CLASSIFIER_CUH
#define GPTFP8_FUSED_CLASSIFIER_CUH

#include "cuda_common.cuh"

// softmax + cross-entropy + gradient, fused: one block per (b, t). logits (B*T, Vp) bf16 are overwritten with
// dlogits = (probs - onehot(target)) * dloss; losses (B*T) fp32. Only the real vocabulary [0, V) counts; padded
// columns get gradient 0.

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

// losses (B, T) fp32 from logits (B, T, Vp) and targets (B, T); write_dlogits: logits become dlogits, with dloss
// (d mean loss / d loss of a token) folded in
static inline void fused_classifier(floatX* logits, float* losses, float dloss, const int* targets, int B, int T, int V,
                                    int Vp, int write_dlogits, cudaStream_t stream) {
    unsigned int row_blocks = blocks_per_row((size_t)B * T, "LayerNorm and the classifier (one block per token)");
    fused_classifier_kernel<<<row_blocks, 512, 0, stream>>>(logits, losses, targets, dloss, V, Vp, write_dlogits);
    cudaCheck(cudaGetLastError());
}

#endif  // GPTFP8_FUSED_CLASSIFIER_CUH
