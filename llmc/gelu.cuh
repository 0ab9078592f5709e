/*
llmc/gelu.cuh — GELU (the tanh approximation) on the GPU: the CPU reference's gelu_forward and gelu_backward with
its names and argument order, the stream last. Also what -r 1 and 2 run again in the backward (the same kernel on the
same input: the same bytes).
*/
#ifndef GPTFP8_GELU_CUH
#define GPTFP8_GELU_CUH

#include "cuda_common.cuh"

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

// out = gelu(inp) (N) bf16
static inline void gelu_forward(floatX* out, const floatX* inp, size_t N, cudaStream_t stream) {
    gelu_forward_kernel<<<blocks_for(N, 256), 256, 0, stream>>>(out, inp, N);
    cudaCheck(cudaGetLastError());
}

// dinp = gelu'(inp) * dout (N) bf16, written (the CPU's accumulates into a zeroed buffer: the same values); dinp may
// be dout, as the trainer calls it (each element reads its own dout before writing its dinp)
static inline void gelu_backward(floatX* dinp, const floatX* inp, const floatX* dout, size_t N, cudaStream_t stream) {
    gelu_backward_kernel<<<blocks_for(N, 256), 256, 0, stream>>>(dinp, inp, dout, N);
    cudaCheck(cudaGetLastError());
}

#endif  // GPTFP8_GELU_CUH
