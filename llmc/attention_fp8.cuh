/*
llmc/attention_fp8.cuh — the GPU trainer's side of FP8 attention (-fp8_attention 1|2, delayed scaling) around cuDNN's
FP8 forward graph (llmc/cudnn_attention.h): before it, the per-layer scales it takes, copied into 16-byte cells of
their own (cuDNN takes only 16-byte-aligned scalars; the FP8 metadata keeps its scales contiguous); after it, its
E4M3 output dequantized into the bf16 tensor that the BF16 backward (its D = rowsum(dO * O)) and the attention
projection's cast read, and the amaxes the graph wrote max-reduced into their slots' row 0 (the graph writes them, it
does not reduce: gradient accumulation runs the forward several times a step).

The dequantized value is fp8_to_float(code) * scale_inv in fp32, rounded to bf16 to nearest even: the CPU's
fp8_quantize_dequantize then round_to_storage (train_gpt_fp8.c's attention_fp8_output), so from the same codes the
two trainers store the same bits. q, k, v are cast by fp8/quantize.cuh's fp8_cast_amax (the qkv GEMM's output slot);
with -fp8_attention 2 the same dequantizing kernel, recording no amax, writes their codes back over the bf16 q, k, v
for the backward (the CPU's attention_fp8_forward_casts).
*/
#ifndef GPTFP8_ATTENTION_FP8_CUH
#define GPTFP8_ATTENTION_FP8_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include "../fp8/fp8.h"
#include "../fp8/meta.h"
#include "memory_plan.h"

// cells (ATTENTION_FP8_CELLS, 4) fp32: the layer's cells; scale_s, scale_o: the slots' scales in the FP8 metadata
__global__ void attention_fp8_scales_kernel(float* cells, const float* scale_s, const float* scale_o) {
    cells[ATTENTION_FP8_SCALE_S * 4] = *scale_s;
    cells[ATTENTION_FP8_SCALE_O * 4] = *scale_o;
}

// out (n) bf16 = bf16(fp8_to_float(out_fp8) * *scale_inv), 8 elements a thread a trip (one 8-byte load, one 16-byte
// store); thread 0 of block 0 max-reduces the graph's amaxes into amax_s_row0 / amax_o_row0 (NULL: not recorded, an
// evaluation forward), NaN-propagating as fp8/meta.h's fp8_amax_merge.
__global__ void attention_fp8_output_kernel(__nv_bfloat16* out, const uint8_t* out_fp8, size_t n, Fp8Format format,
                                            const float* scale_inv, const float* cells, float* amax_s_row0,
                                            float* amax_o_row0) {
    const float s = *scale_inv;
    size_t vectors = n / 8, stride = (size_t)gridDim.x * blockDim.x;
    for (size_t v = (size_t)blockIdx.x * blockDim.x + threadIdx.x; v < vectors; v += stride) {
        uint2 codes = reinterpret_cast<const uint2*>(out_fp8)[v];
        const uint8_t* bytes = reinterpret_cast<const uint8_t*>(&codes);
        uint16_t values[8];
        for (int i = 0; i < 8; i++) { values[i] = bf16_from_float(fp8_to_float(bytes[i], format) * s); }
        uint4 packed;
        memcpy(&packed, values, sizeof(packed));
        reinterpret_cast<uint4*>(out)[v] = packed;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0 && amax_s_row0) {
        *amax_s_row0 = fp8_amax_merge(*amax_s_row0, cells[ATTENTION_FP8_AMAX_S * 4]);
        *amax_o_row0 = fp8_amax_merge(*amax_o_row0, cells[ATTENTION_FP8_AMAX_O * 4]);
    }
}

// ----------------------------------------------------------------------------
// launchers

static inline cudaError_t attention_fp8_scales(float* cells, const float* scale_s, const float* scale_o,
                                               cudaStream_t stream) {
    if (((uintptr_t)cells & 15u) != 0) {
        fprintf(stderr, "attention_fp8_scales: the cells must be 16-byte aligned (cuDNN takes them so)\n");
        return cudaErrorInvalidValue;
    }
    attention_fp8_scales_kernel<<<1, 1, 0, stream>>>(cells, scale_s, scale_o);
    return cudaGetLastError();
}

// out (n) from out_fp8 (n), n a multiple of 8, both 16-byte aligned; the amaxes recorded when amax_s_row0 and
// amax_o_row0 are given (both or neither).
static inline cudaError_t attention_fp8_output(__nv_bfloat16* out, const uint8_t* out_fp8, size_t n, Fp8Format format,
                                               const float* scale_inv, const float* cells, float* amax_s_row0,
                                               float* amax_o_row0, int num_sms, cudaStream_t stream) {
    if (n % 8 != 0 || ((uintptr_t)out & 15u) != 0 || ((uintptr_t)out_fp8 & 15u) != 0 ||
        (amax_s_row0 == NULL) != (amax_o_row0 == NULL)) {
        fprintf(stderr, "attention_fp8_output: n %zu must be a multiple of 8, both tensors 16-byte aligned, and the "
                "two amaxes given together\n", n);
        return cudaErrorInvalidValue;
    }
    size_t blocks = (n / 8 + 255) / 256;
    size_t most = (size_t)num_sms * 8;  // a grid-stride loop: enough blocks to fill the GPU, no more
    attention_fp8_output_kernel<<<(unsigned int)(blocks < most ? (blocks > 0 ? blocks : 1) : most), 256, 0, stream>>>(
        out, out_fp8, n, format, scale_inv, cells, amax_s_row0, amax_o_row0);
    return cudaGetLastError();
}

#endif  // GPTFP8_ATTENTION_FP8_CUH
