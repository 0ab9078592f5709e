/*
llmc/encoder.cuh — the token and position embeddings on the GPU: encoder_forward and encoder_backward, the CPU
reference's functions (train_gpt_fp8.c) with its names and argument order, the stream last. The backward is
deterministic: the host sorts the batch's positions by token first (encoder_buckets), so one thread owns each dwte
element and adds its positions in order, where a float atomicAdd per position would add them in any order.
*/
#ifndef GPTFP8_ENCODER_CUH
#define GPTFP8_ENCODER_CUH

#include <string.h>

#include "cuda_common.cuh"

// out (B, T, C) = wte[inp] + wpe[t]
__global__ void encoder_forward_kernel(floatX* out, const int* inp, const floatX* wte, const floatX* wpe, int B, int T,
                                       int C) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)B * T * C) { return; }
    int c = (int)(idx % C);
    size_t bt = idx / C;
    int t = (int)(bt % T);
    out[idx] = __float2bfloat16_rn(__bfloat162float(wte[(size_t)inp[bt] * C + c]) + __bfloat162float(wpe[(size_t)t * C + c]));
}

// The encoder's backward, deterministic (no float atomics: the same batch gives the same bits every run, which
// checkpoint resume and the GPU test rely on).
// dwpe (T, C) fp32 += sum over b of dout (B, T, C): one thread per (t, c) adds the B rows in order.
__global__ void encoder_backward_wpe_kernel(float* dwpe, const floatX* dout, int B, int T, int C) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)T * C) { return; }
    float sum = 0.0f;
    for (int b = 0; b < B; b++) { sum += __bfloat162float(dout[(size_t)b * T * C + idx]); }
    dwpe[idx] += sum;
}

// dwte (Vp, C) fp32 += dout rows, grouped by token: the host sorted the B*T positions by token (encoder_buckets),
// so bucket k holds every position of token bucket_token[k] in increasing order, and one thread per (bucket, c)
// owns dwte[token, c] alone. positions (B*T), bucket_start (num_buckets + 1), bucket_token (num_buckets); the
// number of buckets is read on the device (*num_buckets), so a CUDA graph replays this launch for any batch. Which
// grid row takes a bucket does not change its sum: the same bits for any grid.
__global__ void encoder_backward_wte_kernel(float* dwte, const floatX* dout, const int* positions, const int* bucket_start,
                                            const int* bucket_token, const int* num_buckets, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) { return; }
    int n = *num_buckets;
    for (int k = blockIdx.y; k < n; k += gridDim.y) {  // grid.y is capped at 65535: stride over buckets
        float sum = 0.0f;
        for (int i = bucket_start[k]; i < bucket_start[k + 1]; i++) {
            sum += __bfloat162float(dout[(size_t)positions[i] * C + c]);
        }
        dwte[(size_t)bucket_token[k] * C + c] += sum;
    }
}

// Host side of the above: a counting sort of the B*T positions by token id (stable, so positions stay in order).
// positions (n), bucket_start (n + 1), bucket_token (n), count (V) scratch; returns the number of buckets.
static inline int encoder_buckets(const int* tokens, int n, int V, int* positions, int* bucket_start, int* bucket_token,
                           int* count) {
    memset(count, 0, (size_t)V * sizeof(int));
    for (int i = 0; i < n; i++) { count[tokens[i]]++; }
    int num_buckets = 0, offset = 0;
    for (int v = 0; v < V; v++) {
        if (count[v] == 0) { continue; }
        bucket_token[num_buckets] = v;
        bucket_start[num_buckets++] = offset;
        int c = count[v];
        count[v] = offset;  // from here on: the next free slot of token v
        offset += c;
    }
    bucket_start[num_buckets] = offset;
    for (int i = 0; i < n; i++) { positions[count[tokens[i]]++] = i; }
    return num_buckets;
}

// The batch's tokens as the encoder backward reads them: the positions grouped by token (encoder_buckets on the
// host), in device memory. positions (B*T), start (count + 1), token (count), count (1) on the device; grid_rows:
// the grid's bucket rows, the host's count of this batch, or in a CUDA graph (captured once for every batch) a fixed
// number, each row then striding over several buckets.
typedef struct {
    const int *positions, *start, *token, *count;
    int grid_rows;
} EncoderBuckets;

// A CUDA graph's bucket rows (EncoderBuckets.grid_rows) for B*T positions of V tokens: a batch has at most
// min(B*T, V) buckets, and the grid at most `most` rows (ENCODER_GRAPH_BUCKET_ROWS: 4096 rows keep a d12 batch's ~15k
// buckets to a few per thread without launching a block per bucket the batch may not have).
#define ENCODER_GRAPH_BUCKET_ROWS 4096
static inline int encoder_graph_bucket_rows(int BT, int V, int most) {
    int n = BT < V ? BT : V;
    return n < most ? n : most;
}

// out (B, T, C) = wte[inp] + wpe[t]; inp (B, T) token ids on the device
static inline void encoder_forward(floatX* out, const int* inp, const floatX* wte, const floatX* wpe, int B, int T,
                                   int C, cudaStream_t stream) {
    size_t BTC = (size_t)B * T * C;
    encoder_forward_kernel<<<blocks_for(BTC, 256), 256, 0, stream>>>(out, inp, wte, wpe, B, T, C);
    cudaCheck(cudaGetLastError());
}

// dwte (Vp, C), dwpe (maxT, C) fp32 += from dout (B, T, C). Where the CPU reads the tokens inp, the GPU reads the
// same tokens as buckets (the CPU's argument in its form on the device).
static inline void encoder_backward(float* dwte, float* dwpe, const floatX* dout, const EncoderBuckets* buckets, int B,
                                    int T, int C, cudaStream_t stream) {
    encoder_backward_wpe_kernel<<<blocks_for((size_t)T * C, 256), 256, 0, stream>>>(dwpe, dout, B, T, C);
    int rows = buckets->grid_rows < 1 ? 1 : buckets->grid_rows < 65535 ? buckets->grid_rows : 65535;
    dim3 wte_grid(blocks_for(C, 256), rows);
    encoder_backward_wte_kernel<<<wte_grid, 256, 0, stream>>>(dwte, dout, buckets->positions, buckets->start,
                                                              buckets->token, buckets->count, C);
    cudaCheck(cudaGetLastError());
}

#endif  // GPTFP8_ENCODER_CUH
