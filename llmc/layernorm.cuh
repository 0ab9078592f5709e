/*
llmc/layernorm.cuh — LayerNorm on the GPU, and the residual add beside it (llm.c keeps them together): the CPU
reference's layernorm_forward, layernorm_backward and residual_forward with its names and argument order, the stream
(and the backward's column-sum scratch) last; and layernorm_recompute, -r 2's forward again in the backward. The
parameter gradients are deterministic column sums (llmc/cuda_common.cuh).

Two ways to reduce a row. Where C is a multiple of 8 up to LAYERNORM_MAX_C (GPT-2's widths, 768 to 1600) and the
tensors are 16-byte aligned, one warp owns a row: it reads the row once, in 16-byte vectors, into registers, reduces
with shuffles alone, and writes in 16-byte vectors (layernorm_forward_rows_kernel, layernorm_backward_rows_kernel).
Elsewhere a 256-thread block owns a row, element by element (layernorm_forward_kernel, layernorm_backward_kernel).
The first is the fast one: the second, the only one until now, ran LayerNorm at about a quarter of the memory's
bandwidth (13.7 ms of a 106 ms d12 step at B 64 on an H100, RESULTS.md), its 2-byte accesses and block-wide
__syncthreads reductions keeping too few bytes in flight. Both compute a row's statistics in fp32 in their own order
(the CPU's is another; the tests' tolerances count the order, llmc/tolerance.h), and both write the output with
layernorm_output, as -r 2's recompute does, from the mean and rstd they store.

The residual add before a LayerNorm rides on its pass (llm.c's fused_residual_forward, residual_layernorm_forward):
the row of inp1 + inp2 is made in registers, written once as the residual stream, and normalized from the same
registers, instead of written by residual_forward and read back by the LayerNorm: per (B, T, C) element 8 bytes of
traffic instead of 10, and one launch instead of two, 2L times a forward. The residual's bytes are residual_forward's
(residual_add8, shared) and the statistics and output are those of layernorm_forward on them (the same functions in
the same order), so nothing downstream changes by a bit. A forward whose next linear makes the LayerNorm's output
inside its FP8 cast (llmc/layernorm_fp8.cuh) passes out NULL: only the residual and the statistics are written.
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

// Eight adjacent outputs (one 16-byte vector) of a row: layernorm_output of x's 8 values with the weights and biases
// of their columns. The one-warp-per-row forward writes these, and the FP8 cast with LayerNorm inside
// (llmc/layernorm_fp8.cuh) casts them: one function, so the same bf16 values.
__device__ __forceinline__ uint4 layernorm_output8(uint4 x, float mean, float rstd, uint4 weight, uint4 bias) {
    const floatX* xs = reinterpret_cast<const floatX*>(&x);
    const floatX* ws = reinterpret_cast<const floatX*>(&weight);
    const floatX* bs = reinterpret_cast<const floatX*>(&bias);
    uint4 out;
    floatX* os = reinterpret_cast<floatX*>(&out);
    for (int i = 0; i < 8; i++) { os[i] = layernorm_output(xs[i], mean, rstd, ws[i], bs[i]); }
    return out;
}

// bf16(a + b) of 8 adjacent elements (one 16-byte vector each): the residual add, one fp32 addition and one rounding
// an element, shared by residual_forward and the residual's pass inside residual_layernorm_forward
__device__ __forceinline__ uint4 residual_add8(uint4 a, uint4 b) {
    float as[8], bs[8];
    bf16x8_to_float(as, a);
    bf16x8_to_float(bs, b);
    uint4 out;
    floatX* os = reinterpret_cast<floatX*>(&out);
    for (int i = 0; i < 8; i++) { os[i] = __float2bfloat16_rn(__fadd_rn(as[i], bs[i])); }
    return out;
}

// out (B*T, C) bf16, or NULL (the statistics only); mean, rstd (B*T); one block per row
static __global__ void layernorm_forward_kernel(floatX* out, float* mean, float* rstd, const floatX* inp,
                                                const floatX* weight, const floatX* bias, int C) {
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
    for (int i = threadIdx.x; out && i < C; i += blockDim.x) {
        out[row * C + i] = layernorm_output(x[i], m, s, weight[i], bias[i]);
    }
    if (threadIdx.x == 0) {
        mean[row] = m;
        rstd[row] = s;
    }
}

// -r 2: out (B*T, C) = LayerNorm's output again, in the backward, from its input and the mean and rstd the forward
// saved (no reductions: the same values the forward normalized with); one block per row.
static __global__ void layernorm_recompute_kernel(floatX* out, const floatX* inp, const floatX* weight,
                                                  const floatX* bias, const float* mean, const float* rstd, int C) {
    size_t row = blockIdx.x;
    float m = mean[row], s = rstd[row];
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
        out[row * C + i] = layernorm_output(inp[row * C + i], m, s, weight[i], bias[i]);
    }
}

// dinp (B*T, C) bf16 += the LayerNorm input gradient; one block per row. The weight and bias gradients are column
// sums over rows, done by layernorm_param_backward_partials_kernel (a per-element atomicAdd here would serialize on C
// addresses).
static __global__ void layernorm_backward_kernel(floatX* dinp, const floatX* dout, const floatX* inp,
                                                 const floatX* weight, const float* mean, const float* rstd, int C) {
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

// One row's term of the weight gradient's column sum, added: dw + ((x - mean) * rstd) * dout, every rounding written
// out (the subtraction, the product, then one fused multiply-add), so both partials kernels below make the same bits
// whatever the compiler would contract.
__device__ __forceinline__ float layernorm_dweight_step(float dw, float x, float mean, float rstd, float dout) {
    return __fmaf_rn(__fmul_rn(__fsub_rn(x, mean), rstd), dout, dw);
}

// partials (num_chunks, 2C): [chunk, c] = sum over the chunk's rows of norm * dout (for dweight), [chunk, C + c] =
// sum of dout (for dbias)
static __global__ void layernorm_param_backward_partials_kernel(float* partials, const floatX* dout,
                                                                const floatX* inp, const float* mean, const float* rstd,
                                                                int rows, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) { return; }
    int r0 = blockIdx.y * COLUMN_SUM_ROWS, r1 = min(rows, r0 + COLUMN_SUM_ROWS);
    float dw = 0.0f, db = 0.0f;
    for (int r = r0; r < r1; r++) {
        float d = __bfloat162float(dout[(size_t)r * C + c]);
        dw = layernorm_dweight_step(dw, __bfloat162float(inp[(size_t)r * C + c]), mean[r], rstd[r], d);
        db = __fadd_rn(db, d);
    }
    partials[(size_t)blockIdx.y * 2 * C + c] = dw;
    partials[(size_t)blockIdx.y * 2 * C + C + c] = db;
}

// ----------------------------------------------------------------------------
// one warp per row, the row in registers (C a multiple of 8, at most LAYERNORM_MAX_C)

#define LAYERNORM_ROWS_PER_BLOCK 8  // warps of a 256-thread block
#define LAYERNORM_MAX_VECTORS 8     // 16-byte vectors per lane at most: C <= 32 lanes x 8 vectors x 8 = 2048
#define LAYERNORM_MAX_C (32 * LAYERNORM_MAX_VECTORS * 8)

// A row's mean and rstd from its VECTORS 16-byte vectors per lane in registers (lane l holds vectors l, l + 32, ...;
// C / 8 in all), valid on every lane: each lane sums its values in order, then the warp's shuffles. Both forward
// kernels below call it (through layernorm_row_forward) on the same bf16 values, so they store the same statistics.
template <int VECTORS>
__device__ __forceinline__ void layernorm_row_statistics(const uint4 (&x)[VECTORS], int lane, int C, float* mean,
                                                         float* rstd) {
    int vectors = C / 8;
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < VECTORS; j++) {
        if (lane + 32 * j >= vectors) { continue; }
        float e[8];
        bf16x8_to_float(e, x[j]);
        for (int i = 0; i < 8; i++) { sum += e[i]; }
    }
    float m = warp_sum(sum) / C;
    float var = 0.0f;
#pragma unroll
    for (int j = 0; j < VECTORS; j++) {
        if (lane + 32 * j >= vectors) { continue; }
        float e[8];
        bf16x8_to_float(e, x[j]);
        for (int i = 0; i < 8; i++) {
            float d = e[i] - m;
            var += d * d;
        }
    }
    *mean = m;
    *rstd = rsqrtf(warp_sum(var) / C + 1e-5f);
}

// The rest of a row's forward once its values are in registers (x as layernorm_row_statistics takes them): the
// statistics, stored into mean[row] and rstd[row] by lane 0, and unless out is NULL the output row (C) from the same
// registers, layernorm_output8 of each of the lane's vectors. Both forward kernels below end with it.
template <int VECTORS>
__device__ __forceinline__ void layernorm_row_forward(const uint4 (&x)[VECTORS], int lane, size_t row, int C,
                                                      floatX* out, float* mean, float* rstd, const floatX* weight,
                                                      const floatX* bias) {
    float m, s;
    layernorm_row_statistics<VECTORS>(x, lane, C, &m, &s);
    if (out) {
        uint4* out_row = reinterpret_cast<uint4*>(out + row * C);
#pragma unroll
        for (int j = 0; j < VECTORS; j++) {
            int v = lane + 32 * j;
            if (v >= C / 8) { continue; }
            out_row[v] = layernorm_output8(x[j], m, s, reinterpret_cast<const uint4*>(weight)[v],
                                           reinterpret_cast<const uint4*>(bias)[v]);
        }
    }
    if (lane == 0) {
        mean[row] = m;
        rstd[row] = s;
    }
}

// out, mean, rstd as layernorm_forward_kernel's (out NULL: the statistics only). VECTORS: 16-byte vectors per lane,
// C / 256 rounded up; rows past `rows` (the last block's) have nothing to do.
template <int VECTORS>
__global__ void __launch_bounds__(32 * LAYERNORM_ROWS_PER_BLOCK)
    layernorm_forward_rows_kernel(floatX* out, float* mean, float* rstd, const floatX* inp, const floatX* weight,
                                  const floatX* bias, int rows, int C) {
    int lane = threadIdx.x % 32;
    size_t row = (size_t)blockIdx.x * LAYERNORM_ROWS_PER_BLOCK + threadIdx.x / 32;
    if (row >= (size_t)rows) { return; }  // the whole warp: no shuffle below waits for it
    const uint4* x_row = reinterpret_cast<const uint4*>(inp + row * C);
    uint4 x[VECTORS];
#pragma unroll
    for (int j = 0; j < VECTORS; j++) {
        if (lane + 32 * j < C / 8) { x[j] = x_row[lane + 32 * j]; }
    }
    layernorm_row_forward<VECTORS>(x, lane, row, C, out, mean, rstd, weight, bias);
}

// residual (rows, C) = inp1 + inp2 (residual_add8), then LayerNorm of that row from the same registers: out (or NULL),
// mean, rstd as layernorm_forward_rows_kernel's on the residual. One read of each input, one write of the residual.
template <int VECTORS>
__global__ void __launch_bounds__(32 * LAYERNORM_ROWS_PER_BLOCK)
    residual_layernorm_forward_rows_kernel(floatX* residual, floatX* out, float* mean, float* rstd,
                                           const floatX* inp1, const floatX* inp2, const floatX* weight,
                                           const floatX* bias, int rows, int C) {
    int lane = threadIdx.x % 32;
    size_t row = (size_t)blockIdx.x * LAYERNORM_ROWS_PER_BLOCK + threadIdx.x / 32;
    if (row >= (size_t)rows) { return; }
    const uint4* a_row = reinterpret_cast<const uint4*>(inp1 + row * C);
    const uint4* b_row = reinterpret_cast<const uint4*>(inp2 + row * C);
    uint4* residual_row = reinterpret_cast<uint4*>(residual + row * C);
    // every load issued before any store: residual may alias neither input as far as the compiler knows, so a store
    // between loads would hold the next loads back (2 in flight a lane instead of 2 x VECTORS)
    uint4 a[VECTORS], b[VECTORS], x[VECTORS];
#pragma unroll
    for (int j = 0; j < VECTORS; j++) {
        int v = lane + 32 * j;
        if (v >= C / 8) { continue; }
        a[j] = a_row[v];
        b[j] = b_row[v];
    }
#pragma unroll
    for (int j = 0; j < VECTORS; j++) {
        int v = lane + 32 * j;
        if (v >= C / 8) { continue; }
        x[j] = residual_add8(a[j], b[j]);
        residual_row[v] = x[j];
    }
    layernorm_row_forward<VECTORS>(x, lane, row, C, out, mean, rstd, weight, bias);
}

// dinp (rows, C) bf16 += the input gradient, as layernorm_backward_kernel's, one warp per row.
template <int VECTORS>
__global__ void __launch_bounds__(32 * LAYERNORM_ROWS_PER_BLOCK)
    layernorm_backward_rows_kernel(floatX* dinp, const floatX* dout, const floatX* inp, const floatX* weight,
                                   const float* mean, const float* rstd, int rows, int C) {
    int lane = threadIdx.x % 32;
    size_t row = (size_t)blockIdx.x * LAYERNORM_ROWS_PER_BLOCK + threadIdx.x / 32;
    if (row >= (size_t)rows) { return; }
    int vectors = C / 8;
    const uint4* x_row = reinterpret_cast<const uint4*>(inp + row * C);
    const uint4* dy_row = reinterpret_cast<const uint4*>(dout + row * C);
    float m = mean[row], s = rstd[row];
    uint4 x[VECTORS], dy[VECTORS];
    float dnorm_sum = 0.0f, dnorm_norm_sum = 0.0f;
#pragma unroll
    for (int j = 0; j < VECTORS; j++) {
        int v = lane + 32 * j;
        if (v >= vectors) { continue; }
        x[j] = x_row[v];
        dy[j] = dy_row[v];
        float xe[8], dye[8], we[8];
        bf16x8_to_float(xe, x[j]);
        bf16x8_to_float(dye, dy[j]);
        bf16x8_to_float(we, reinterpret_cast<const uint4*>(weight)[v]);
        for (int i = 0; i < 8; i++) {
            float norm = (xe[i] - m) * s;
            float dnorm = we[i] * dye[i];
            dnorm_sum += dnorm;
            dnorm_norm_sum += dnorm * norm;
        }
    }
    float dnorm_mean = warp_sum(dnorm_sum) / C, dnorm_norm_mean = warp_sum(dnorm_norm_sum) / C;
    uint4* dinp_row = reinterpret_cast<uint4*>(dinp + row * C);
#pragma unroll
    for (int j = 0; j < VECTORS; j++) {
        int v = lane + 32 * j;
        if (v >= vectors) { continue; }
        float xe[8], dye[8], we[8], de[8];
        bf16x8_to_float(xe, x[j]);
        bf16x8_to_float(dye, dy[j]);
        bf16x8_to_float(we, reinterpret_cast<const uint4*>(weight)[v]);
        uint4 d = dinp_row[v];
        bf16x8_to_float(de, d);
        floatX* ds = reinterpret_cast<floatX*>(&d);
        for (int i = 0; i < 8; i++) {
            float norm = (xe[i] - m) * s;
            float dx = (we[i] * dye[i] - dnorm_mean - norm * dnorm_norm_mean) * s;
            ds[i] = __float2bfloat16_rn(de[i] + dx);
        }
        dinp_row[v] = d;
    }
}

// partials as layernorm_param_backward_partials_kernel's, each thread 8 adjacent columns (one 16-byte vector of dout
// and of inp per row) instead of one: the same sums, each down its column row by row from 0.0f, so the same bits.
// partials must be 16-byte aligned (its float4 stores; C a multiple of 8 keeps every row's offset one).
static __global__ void layernorm_param_backward_partials8_kernel(float* partials, const floatX* dout,
                                                                 const floatX* inp, const float* mean,
                                                                 const float* rstd, int rows, int C) {
    int v = blockIdx.x * blockDim.x + threadIdx.x;  // columns 8v .. 8v + 7
    if (v >= C / 8) { return; }
    int r0 = blockIdx.y * COLUMN_SUM_ROWS, r1 = min(rows, r0 + COLUMN_SUM_ROWS);
    float dw[8], db[8];
    for (int i = 0; i < 8; i++) { dw[i] = db[i] = 0.0f; }
    for (int r = r0; r < r1; r++) {
        float d[8], x[8];
        bf16x8_to_float(d, reinterpret_cast<const uint4*>(dout + (size_t)r * C)[v]);
        bf16x8_to_float(x, reinterpret_cast<const uint4*>(inp + (size_t)r * C)[v]);
        float m = mean[r], s = rstd[r];
        for (int i = 0; i < 8; i++) {
            dw[i] = layernorm_dweight_step(dw[i], x[i], m, s, d[i]);
            db[i] = __fadd_rn(db[i], d[i]);
        }
    }
    float4* dw_out = reinterpret_cast<float4*>(partials + (size_t)blockIdx.y * 2 * C + 8 * v);
    float4* db_out = reinterpret_cast<float4*>(partials + (size_t)blockIdx.y * 2 * C + C + 8 * v);
    dw_out[0] = make_float4(dw[0], dw[1], dw[2], dw[3]);
    dw_out[1] = make_float4(dw[4], dw[5], dw[6], dw[7]);
    db_out[0] = make_float4(db[0], db[1], db[2], db[3]);
    db_out[1] = make_float4(db[4], db[5], db[6], db[7]);
}

// Whether the one-warp-per-row kernels take these tensors: C a multiple of 8 up to LAYERNORM_MAX_C, every pointer
// 16-byte aligned (then so is every row: C * 2 bytes is a multiple of 16)
static inline int layernorm_rows_fit(int C, const void* a, const void* b, const void* c, const void* d) {
    return C % 8 == 0 && C <= LAYERNORM_MAX_C && all_aligned_16(a, b, c) && all_aligned_16(d, d, d);
}

// ----------------------------------------------------------------------------
// residual

// out = inp1 + inp2, 8 elements a thread: one 16-byte vector each way where `vectorized` (every pointer 16-byte
// aligned), else (and for the tail of N) one by one; the same arithmetic either way
#define RESIDUAL_VECTOR 8
static __global__ void residual_forward_kernel(floatX* out, const floatX* inp1, const floatX* inp2, size_t N,
                                               int vectorized) {
    size_t first = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * RESIDUAL_VECTOR;
    if (first >= N) { return; }
    if (vectorized && first + RESIDUAL_VECTOR <= N) {
        *reinterpret_cast<uint4*>(out + first) = residual_add8(*reinterpret_cast<const uint4*>(inp1 + first),
                                                               *reinterpret_cast<const uint4*>(inp2 + first));
        return;
    }
    for (size_t i = first; i < N && i < first + RESIDUAL_VECTOR; i++) {
        out[i] = __float2bfloat16_rn(__bfloat162float(inp1[i]) + __bfloat162float(inp2[i]));
    }
}

// The launch of a one-warp-per-row kernel for `rows` rows of C: its instance for C / 256 vectors per lane
#define LAYERNORM_ROWS_LAUNCH(kernel, rows, C, stream, ...)                                                           \
    do {                                                                                                             \
        unsigned int blocks = blocks_for((size_t)(rows), LAYERNORM_ROWS_PER_BLOCK);                                  \
        unsigned int threads = 32 * LAYERNORM_ROWS_PER_BLOCK;                                                        \
        switch (((C) + 255) / 256) {                                                                                 \
            case 1: kernel<1><<<blocks, threads, 0, stream>>>(__VA_ARGS__); break;                                   \
            case 2: kernel<2><<<blocks, threads, 0, stream>>>(__VA_ARGS__); break;                                   \
            case 3: kernel<3><<<blocks, threads, 0, stream>>>(__VA_ARGS__); break;                                   \
            case 4: kernel<4><<<blocks, threads, 0, stream>>>(__VA_ARGS__); break;                                   \
            case 5: kernel<5><<<blocks, threads, 0, stream>>>(__VA_ARGS__); break;                                   \
            case 6: kernel<6><<<blocks, threads, 0, stream>>>(__VA_ARGS__); break;                                   \
            case 7: kernel<7><<<blocks, threads, 0, stream>>>(__VA_ARGS__); break;                                   \
            default: kernel<LAYERNORM_MAX_VECTORS><<<blocks, threads, 0, stream>>>(__VA_ARGS__); break;              \
        }                                                                                                            \
    } while (0)

// out (B, T, C) = LayerNorm(inp) * weight + bias; mean, rstd (B, T) kept for the backward. out may be NULL: the
// statistics only (the FP8 cast that makes the output from them, llmc/layernorm_fp8.cuh, comes next).
static inline void layernorm_forward(floatX* out, float* mean, float* rstd, const floatX* inp, const floatX* weight,
                                     const floatX* bias, int B, int T, int C, cudaStream_t stream) {
    int rows = B * T;
    if (layernorm_rows_fit(C, out, inp, weight, bias)) {
        LAYERNORM_ROWS_LAUNCH(layernorm_forward_rows_kernel, rows, C, stream, out, mean, rstd, inp, weight, bias, rows,
                              C);
    } else {
        unsigned int row_blocks = blocks_per_row((size_t)rows, "LayerNorm and the classifier (one block per token)");
        layernorm_forward_kernel<<<row_blocks, 256, 0, stream>>>(out, mean, rstd, inp, weight, bias, C);
    }
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
    int partials_aligned = all_aligned_16(column_partials, column_partials, column_partials);  // the float4 stores
    if (layernorm_rows_fit(C, dinp, dout, inp, weight) && partials_aligned) {
        LAYERNORM_ROWS_LAUNCH(layernorm_backward_rows_kernel, rows, C, stream, dinp, dout, inp, weight, mean, rstd,
                              rows, C);
        dim3 grid(blocks_for(C / 8, 128), chunks);
        layernorm_param_backward_partials8_kernel<<<grid, 128, 0, stream>>>(column_partials, dout, inp, mean, rstd,
                                                                            rows, C);
    } else {
        unsigned int row_blocks = blocks_per_row((size_t)rows, "the LayerNorm backward (one block per token)");
        layernorm_backward_kernel<<<row_blocks, 256, 0, stream>>>(dinp, dout, inp, weight, mean, rstd, C);
        dim3 grid(blocks_for(C, 256), chunks);
        layernorm_param_backward_partials_kernel<<<grid, 256, 0, stream>>>(column_partials, dout, inp, mean, rstd,
                                                                           rows, C);
    }
    cudaCheck(cudaGetLastError());
    column_partials_reduce(dweight, column_partials, chunks, 2 * C, C, stream);
    column_partials_reduce(dbias, column_partials + C, chunks, 2 * C, C, stream);
}

// out = inp1 + inp2 (N) bf16
static inline void residual_forward(floatX* out, const floatX* inp1, const floatX* inp2, size_t N, cudaStream_t stream) {
    size_t threads = (N + RESIDUAL_VECTOR - 1) / RESIDUAL_VECTOR;
    residual_forward_kernel<<<blocks_for(threads, 256), 256, 0, stream>>>(out, inp1, inp2, N,
                                                                          all_aligned_16(out, inp1, inp2));
    cudaCheck(cudaGetLastError());
}

// residual (B, T, C) = inp1 + inp2, and LayerNorm of it as layernorm_forward's: out (or NULL: the statistics only),
// mean, rstd (B, T). One pass where the one-warp-per-row kernels fit; elsewhere the two launchers one after the other,
// the same bytes either way.
static inline void residual_layernorm_forward(floatX* residual, floatX* out, float* mean, float* rstd,
                                              const floatX* inp1, const floatX* inp2, const floatX* weight,
                                              const floatX* bias, int B, int T, int C, cudaStream_t stream) {
    int rows = B * T;
    if (layernorm_rows_fit(C, residual, inp1, inp2, weight) && all_aligned_16(out, bias, bias)) {
        LAYERNORM_ROWS_LAUNCH(residual_layernorm_forward_rows_kernel, rows, C, stream, residual, out, mean, rstd, inp1,
                              inp2, weight, bias, rows, C);
        cudaCheck(cudaGetLastError());
        return;
    }
    residual_forward(residual, inp1, inp2, (size_t)rows * C, stream);
    layernorm_forward(out, mean, rstd, residual, weight, bias, B, T, C, stream);
}

#endif  // GPTFP8_LAYERNORM_CUH
