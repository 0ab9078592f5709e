/*
llmc/kernels.cuh — the non-FP8 CUDA kernels of the GPU trainer, one per layer, with the names and argument order of
the CPU reference (train_gpt_fp8.c): encoder, LayerNorm, GELU, residual, the fused softmax + cross-entropy + its
gradient, bias gradient, global gradient norm and AdamW.

Storage: activations and parameters in bf16 (floatX), master weights, AdamW moments and parameter gradients in fp32,
every sum in fp32. Kernels favour being readable over the last few percent: one thread block per row where a row is
reduced (LayerNorm, softmax), 16-byte vectors where elementwise.
*/
#ifndef GPTFP8_KERNELS_CUH
#define GPTFP8_KERNELS_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <float.h>
#include <stdint.h>
#include <string.h>

#include "cuda_utils.cuh"

typedef __nv_bfloat16 floatX;

// ----------------------------------------------------------------------------
// reductions

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) { v += __shfl_xor_sync(0xFFFFFFFFu, v, offset); }
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) { v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, offset)); }
    return v;
}
// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
__device__ __forceinline__ float block_sum(float v) {
    __shared__ float partial[32];
    __shared__ float total;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = warp_sum(v);
    if (lane == 0) { partial[warp] = v; }
    __syncthreads();
    if (warp == 0) {
        float w = lane < (int)(blockDim.x / 32) ? partial[lane] : 0.0f;
        w = warp_sum(w);
        if (lane == 0) { total = w; }
    }
    __syncthreads();
    float result = total;
    __syncthreads();  // partial/total are reused by the next call
    return result;
}
__device__ __forceinline__ float block_max(float v) {
    __shared__ float partial[32];
    __shared__ float total;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = warp_max(v);
    if (lane == 0) { partial[warp] = v; }
    __syncthreads();
    if (warp == 0) {
        float w = lane < (int)(blockDim.x / 32) ? partial[lane] : -FLT_MAX;
        w = warp_max(w);
        if (lane == 0) { total = w; }
    }
    __syncthreads();
    float result = total;
    __syncthreads();
    return result;
}

// ----------------------------------------------------------------------------
// encoder

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
// owns dwte[token, c] alone. positions (B*T), bucket_start (num_buckets + 1), bucket_token (num_buckets).
__global__ void encoder_backward_wte_kernel(float* dwte, const floatX* dout, const int* positions, const int* bucket_start,
                                            const int* bucket_token, int num_buckets, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) { return; }
    for (int k = blockIdx.y; k < num_buckets; k += gridDim.y) {  // grid.y is capped at 65535: stride over buckets
        float sum = 0.0f;
        for (int i = bucket_start[k]; i < bucket_start[k + 1]; i++) {
            sum += __bfloat162float(dout[(size_t)positions[i] * C + c]);
        }
        dwte[(size_t)bucket_token[k] * C + c] += sum;
    }
}

// Host side of the above: a counting sort of the B*T positions by token id (stable, so positions stay in order).
// positions (n), bucket_start (n + 1), bucket_token (n), count (V) scratch; returns the number of buckets.
static int encoder_buckets(const int* tokens, int n, int V, int* positions, int* bucket_start, int* bucket_token,
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

// ----------------------------------------------------------------------------
// LayerNorm: one block per row

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

// Column sums over rows, deterministic, in two passes: pass 1 gives each chunk of COLUMN_SUM_ROWS rows one thread per
// column (coalesced across the warp) and writes the chunk's sum to partials (num_chunks, width); pass 2
// (column_partials_reduce_kernel) adds the chunks of each column in chunk order. No float atomics, so no run-to-run
// jitter, at the cost of a (rows / 64, width) scratch buffer.
#define COLUMN_SUM_ROWS 64

// The chunks of `rows` rows, one block each in grid y (so at most 65535: B*T up to 4194240 per GPU), checked.
static inline int column_sum_chunks(size_t rows) {
    unsigned long long chunks = ((unsigned long long)rows + COLUMN_SUM_ROWS - 1) / COLUMN_SUM_ROWS;
    return (int)grid_dim_checked(chunks, CUDA_GRID_YZ_MAX, "the column sums (B*T / 64 blocks in y)");
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

// out (n) fp32 += sum over k < num_chunks of partials[k * stride + c], in order of k
__global__ void column_partials_reduce_kernel(float* out, const float* partials, int num_chunks, int stride, int n) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n) { return; }
    float sum = 0.0f;
    for (int k = 0; k < num_chunks; k++) { sum += partials[(size_t)k * stride + c]; }
    out[c] += sum;
}

// ----------------------------------------------------------------------------
// GELU (tanh approximation), residual

#define GELU_SCALING_FACTOR 0.7978845608028654f

__global__ void gelu_forward_kernel(floatX* out, const floatX* inp, size_t N) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) { return; }
    float x = __bfloat162float(inp[i]);
    float cube = 0.044715f * x * x * x;
    out[i] = __float2bfloat16_rn(0.5f * x * (1.0f + tanhf(GELU_SCALING_FACTOR * (x + cube))));
}

// dinp = gelu'(inp) * dout (dinp is written, not accumulated: it is the fc GEMM's only input gradient)
__global__ void gelu_backward_kernel(floatX* dinp, const floatX* inp, const floatX* dout, size_t N) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) { return; }
    float x = __bfloat162float(inp[i]);
    float cube = 0.044715f * x * x * x;
    float tanh_arg = GELU_SCALING_FACTOR * (x + cube);
    float tanh_out = tanhf(tanh_arg);
    float cosh_out = coshf(tanh_arg);
    float sech2 = 1.0f / (cosh_out * cosh_out);
    float grad = 0.5f * (1.0f + tanh_out) + x * 0.5f * sech2 * GELU_SCALING_FACTOR * (1.0f + 3.0f * 0.044715f * x * x);
    dinp[i] = __float2bfloat16_rn(grad * __bfloat162float(dout[i]));
}

__global__ void residual_forward_kernel(floatX* out, const floatX* inp1, const floatX* inp2, size_t N) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) { out[i] = __float2bfloat16_rn(__bfloat162float(inp1[i]) + __bfloat162float(inp2[i])); }
}

// dst += src (bf16), the residual backward: a residual stream's gradient flows into both branches
__global__ void add_inplace_kernel(floatX* dst, const floatX* src, size_t N) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) { dst[i] = __float2bfloat16_rn(__bfloat162float(dst[i]) + __bfloat162float(src[i])); }
}

// ----------------------------------------------------------------------------
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

// ----------------------------------------------------------------------------
// bias gradient, pass 1: partials (num_chunks, OC) = column sums of dout (rows, OC) bf16 by row chunks; pass 2 is
// column_partials_reduce_kernel into dbias

__global__ void bias_backward_partials_kernel(float* partials, const floatX* dout, int rows, int OC) {
    int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= OC) { return; }
    int r0 = blockIdx.y * COLUMN_SUM_ROWS, r1 = min(rows, r0 + COLUMN_SUM_ROWS);
    float sum = 0.0f;
    for (int r = r0; r < r1; r++) { sum += __bfloat162float(dout[(size_t)r * OC + o]); }
    partials[(size_t)blockIdx.y * OC + o] = sum;
}

// ----------------------------------------------------------------------------
// gradient norm and AdamW

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

// AdamW on fp32 master weights; writes the bf16 copy the GEMMs read. grad_scale applies the clipping, computed on
// the device from the norm so the host never waits for it.
__global__ void adamw_kernel(float* master, floatX* params, const float* grads, float* m, float* v, size_t n, float lr,
                             float beta1, float beta2, float bias1, float bias2, float eps, float weight_decay,
                             const float* norm_squared, float grad_clip) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) { return; }
    float norm = sqrtf(*norm_squared);
    float clip_scale = norm > grad_clip ? grad_clip / norm : 1.0f;
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

// Blocks of block_size threads that cover n elements (grid x), checked against CUDA's limit.
static inline unsigned int blocks_for(size_t n, int block_size) {
    return grid_dim_checked(((unsigned long long)n + block_size - 1) / block_size, CUDA_GRID_X_MAX, "an elementwise launch");
}
// One block per row of rows (LayerNorm, softmax, the classifier): grid x, checked.
static inline unsigned int blocks_per_row(size_t rows, const char* what) {
    return grid_dim_checked((unsigned long long)rows, CUDA_GRID_X_MAX, what);
}

#endif  // GPTFP8_KERNELS_CUH
