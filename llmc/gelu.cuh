/*
llmc/gelu.cuh — GELU (the tanh approximation) on the GPU: the CPU reference's gelu_forward and gelu_backward with
its names and argument order, the stream last. Also what -r 1 and 2 run again in the backward (the same kernel on the
same input: the same bytes).
*/
#ifndef GPTFP8_GELU_CUH
#define GPTFP8_GELU_CUH

#include "cuda_common.cuh"
#include "gelu_math.h"

// Eight consecutive elements each way, one 16-byte vector of bf16 in and out, each element by gelu_value or
// gelu_derivative (gelu_math.h: the CPU reference's arithmetic): the vectorized kernels below and the FP8 casts with
// GELU inside them (llmc/gelu_fp8.cuh) both call these, so both make the same bytes.
__device__ __forceinline__ uint4 gelu_forward8(uint4 in_packed) {
    const floatX* in_values = reinterpret_cast<const floatX*>(&in_packed);
    uint4 out_packed;
    floatX* out_values = reinterpret_cast<floatX*>(&out_packed);
    for (int j = 0; j < 8; j++) {
        out_values[j] = __float2bfloat16_rn(gelu_value(__bfloat162float(in_values[j])));
    }
    return out_packed;
}

__device__ __forceinline__ uint4 gelu_backward8(uint4 in_packed, uint4 dout_packed) {
    const floatX* in_values = reinterpret_cast<const floatX*>(&in_packed);
    const floatX* dout_values = reinterpret_cast<const floatX*>(&dout_packed);
    uint4 dinp_packed;
    floatX* dinp_values = reinterpret_cast<floatX*>(&dinp_packed);
    for (int j = 0; j < 8; j++) {
        float x = __bfloat162float(in_values[j]);
        dinp_values[j] = __float2bfloat16_rn(gelu_derivative(x) * __bfloat162float(dout_values[j]));
    }
    return dinp_packed;
}

// Each thread takes GELU_VECTOR consecutive elements: with `vectorized` (every pointer 16-byte aligned, which the
// launcher checks) as one 16-byte load per input and one store, else (and for the tail of N) one by one. GELU's
// tensors (B, T, 4C) are the step's largest elementwise ones; with 2-byte accesses ncu timed them at 0.60 ms forward
// and 1.02 ms backward per layer of d12 at B 64 on an H100 (RESULTS.md), 1.3 TB/s and less. The arithmetic per
// element is the same either way, so the two paths give the same bits.
#define GELU_VECTOR 8  // gelu_forward8's and gelu_backward8's

__global__ void gelu_forward_kernel(floatX* out, const floatX* inp, size_t N, int vectorized) {
    size_t first = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * GELU_VECTOR;
    if (first >= N) { return; }
    if (vectorized && first + GELU_VECTOR <= N) {
        *reinterpret_cast<uint4*>(out + first) = gelu_forward8(*reinterpret_cast<const uint4*>(inp + first));
        return;
    }
    for (size_t i = first; i < N && i < first + GELU_VECTOR; i++) {
        out[i] = __float2bfloat16_rn(gelu_value(__bfloat162float(inp[i])));
    }
}

// dinp = gelu'(inp) * dout (dinp is written, not accumulated: it is the fc GEMM's only input gradient). Each thread
// reads all of its dout before it writes its dinp, so dinp may be dout.
__global__ void gelu_backward_kernel(floatX* dinp, const floatX* inp, const floatX* dout, size_t N, int vectorized) {
    size_t first = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * GELU_VECTOR;
    if (first >= N) { return; }
    if (vectorized && first + GELU_VECTOR <= N) {
        *reinterpret_cast<uint4*>(dinp + first) = gelu_backward8(*reinterpret_cast<const uint4*>(inp + first),
                                                                 *reinterpret_cast<const uint4*>(dout + first));
        return;
    }
    for (size_t i = first; i < N && i < first + GELU_VECTOR; i++) {
        dinp[i] = __float2bfloat16_rn(gelu_derivative(__bfloat162float(inp[i])) * __bfloat162float(dout[i]));
    }
}

// Whether every pointer allows the 16-byte path
static inline int gelu_vectorized(const void* a, const void* b, const void* c) { return all_aligned_16(a, b, c); }

// out = gelu(inp) (N) bf16
static inline void gelu_forward(floatX* out, const floatX* inp, size_t N, cudaStream_t stream) {
    size_t threads = (N + GELU_VECTOR - 1) / GELU_VECTOR;
    gelu_forward_kernel<<<blocks_for(threads, 256), 256, 0, stream>>>(out, inp, N, gelu_vectorized(out, inp, inp));
    cudaCheck(cudaGetLastError());
}

// dinp = gelu'(inp) * dout (N) bf16, written (the CPU's accumulates into a zeroed buffer: the same values); dinp may
// be dout, as the trainer calls it
static inline void gelu_backward(floatX* dinp, const floatX* inp, const floatX* dout, size_t N, cudaStream_t stream) {
    size_t threads = (N + GELU_VECTOR - 1) / GELU_VECTOR;
    gelu_backward_kernel<<<blocks_for(threads, 256), 256, 0, stream>>>(dinp, inp, dout, N,
                                                                        gelu_vectorized(dinp, inp, dout));
    cudaCheck(cudaGetLastError());
}

#endif  // GPTFP8_GELU_CUH
