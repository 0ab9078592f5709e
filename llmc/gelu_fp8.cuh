/*
llmc/gelu_fp8.cuh — GELU inside the FP8 casts on either side of it (TE's fused activation casts): the forward's GELU
in fcproj's input cast, and GELU's backward in fc's grad_output cast, each one pass of fp8/quantize.cuh's cast +
transpose kernel whose tile is made by GELU from what it reads instead of read from a bf16 tensor.

Why: in FP8 training with per-tensor scaling (delayed or current), GELU's output (B, T, 4C) is read by nothing but
fcproj's input cast (the fprop GEMM reads the FP8 x, the wgrad the FP8 x^T the same pass keeps), and GELU's input
gradient by nothing but fc's grad_output cast (dgrad and wgrad read its FP8 copies; the bias gradient comes from the
cast's partials). Written by one kernel and read back by the next, each was 4 bytes of memory traffic per element for
nothing: the step's two largest elementwise tensors, (B, T, 4C) per layer. Fused:
  forward   fch (bf16) -> gelu -> FP8 x and x^T              reads 2 bytes an element, writes 2 (was 4 and 4)
  backward  fch, d(gelu output) -> dgelu -> FP8 dy and dy^T  reads 4, writes 2 (was 6 and 4), + the bias partials
The scale must be known before the cast: delayed scaling's comes from earlier steps. Current scaling takes it from the
tensor's own amax, so its amax pass comes first, over GELU's values made from the same reads (gelu_forward_amax_scale,
gelu_backward_amax_scale: fp8/quantize.cuh's amax pass with these inputs), then the same fused cast with that scale.
TE writes the bf16 tensor with its amax, then casts it (its FUSED_ACTIVATION_AMAX_FP8); here it is never written:
  forward   amax pass reads 2 bytes an element; the cast reads 2, writes 2 (separate: 2 + 2, then 2, then 2 and 2)
  backward  amax pass reads 4; the cast reads 4, writes 2 (separate: 4 + 2, then 2, then 2 and 2)

Same bytes: each 16-byte vector is made by gelu_forward8 / gelu_backward8 (llmc/gelu.cuh), the functions the GELU
kernels themselves run, so the cast sees the bf16 values gelu_forward / gelu_backward would have written, and its
bytes, amax, counts and bias partials are those of the separate kernels (dev/cuda/gelu_fp8 checks it bit for bit).
*/
#ifndef GPTFP8_GELU_FP8_CUH
#define GPTFP8_GELU_FP8_CUH

#include "../fp8/quantize.cuh"
#include "gelu.cuh"

// The cast's input in the forward: gelu(inp), 8 values at element `offset` of inp (rows, cols) bf16.
struct GeluForwardInput {
    const floatX* inp;
    __device__ __forceinline__ uint4 values(size_t offset, int, int) const {
        return gelu_forward8(*reinterpret_cast<const uint4*>(inp + offset));
    }
};

// The cast's input in the backward: gelu'(inp) * dout, 8 values at element `offset` of inp and dout (rows, cols) bf16.
struct GeluBackwardInput {
    const floatX* inp;
    const floatX* dout;
    __device__ __forceinline__ uint4 values(size_t offset, int, int) const {
        return gelu_backward8(*reinterpret_cast<const uint4*>(inp + offset),
                              *reinterpret_cast<const uint4*>(dout + offset));
    }
};

// out (rows, cols) FP8 = fp8(gelu(inp) * *scale), out_t (cols, rows) its transpose; *amax = max(*amax, max|gelu(inp)|)
// over the bf16 values of gelu(inp); stats as fp8_cast_transpose_amax's (NULL: no counting). inp (rows, cols) bf16 is
// fc's output; rows and cols multiples of 64. out may be NULL (only the transpose). Asynchronous on `stream`; returns
// the launch error, or cudaErrorInvalidValue after one line saying what the arguments lack.
static inline cudaError_t gelu_forward_fp8(uint8_t* out, uint8_t* out_t, const floatX* inp, int rows, int cols,
                                           const float* scale, float* amax, unsigned long long* stats, Fp8Format format,
                                           cudaStream_t stream) {
    if (!fp8_cast_transpose_args_ok("gelu_forward_fp8", out, out_t, inp, rows, cols, amax, stats)) {
        return cudaErrorInvalidValue;
    }
    GeluForwardInput input = {inp};
    return fp8_cast_transpose_launch<false>(out, out_t, NULL, input, rows, cols, scale, amax, stats, format, stream);
}

// dinp (rows, cols) FP8 = fp8(gelu'(inp) * dout * *scale), dinp_t (cols, rows) its transpose, the amax and stats as
// gelu_forward_fp8's over the bf16 values of gelu'(inp) * dout; and, unless dbias_partials is NULL, the column sums of
// those values in 64-row chunks into dbias_partials (rows / 64, cols) fp32 (fp8_cast_transpose_dbias_amax's partials,
// which llmc/bias.cuh's bias_backward_reduce adds into the bias gradient). inp (rows, cols) is fc's output as the
// forward made it, dout (rows, cols) the gradient of GELU's output (fcproj's dgrad); both bf16, neither written.
static inline cudaError_t gelu_backward_fp8(uint8_t* dinp, uint8_t* dinp_t, float* dbias_partials, const floatX* inp,
                                            const floatX* dout, int rows, int cols, const float* scale, float* amax,
                                            unsigned long long* stats, Fp8Format format, cudaStream_t stream) {
    const char* launcher = "gelu_backward_fp8";
    if (!fp8_cast_transpose_args_ok(launcher, dinp, dinp_t, inp, rows, cols, amax, stats) ||
        !fp8_launch_aligned(launcher, "the output gradient", dout, 16) ||
        (dbias_partials && !fp8_launch_aligned(launcher, "the dbias partials", dbias_partials, 4))) {
        return cudaErrorInvalidValue;
    }
    GeluBackwardInput input = {inp, dout};
    if (dbias_partials) {
        return fp8_cast_transpose_launch<true>(dinp, dinp_t, dbias_partials, input, rows, cols, scale, amax, stats,
                                               format, stream);
    }
    return fp8_cast_transpose_launch<false>(dinp, dinp_t, NULL, input, rows, cols, scale, amax, stats, format, stream);
}

// Current scaling's amax pass for gelu_forward_fp8: the amax of gelu(inp) (n) over its bf16 values, and the scale from
// it into target (fp8/quantize.cuh's fp8_amax_scale on the tensor gelu_forward would write, without writing it).
static inline cudaError_t gelu_forward_amax_scale(const floatX* inp, size_t n, Fp8Format format, Fp8CurrentScale target,
                                                  Fp8AmaxWorkspace workspace, int num_sms, cudaStream_t stream) {
    if (!fp8_launch_aligned("gelu_forward_amax_scale", "fc's output", inp, 16)) { return cudaErrorInvalidValue; }
    GeluForwardInput input = {inp};
    return fp8_amax_scale_launch("gelu_forward_amax_scale", input, n, 0, format, target, workspace, num_sms, stream);
}

// The same for gelu_backward_fp8: the amax of gelu'(inp) * dout (n) over its bf16 values, the scale into target.
static inline cudaError_t gelu_backward_amax_scale(const floatX* inp, const floatX* dout, size_t n, Fp8Format format,
                                                   Fp8CurrentScale target, Fp8AmaxWorkspace workspace, int num_sms,
                                                   cudaStream_t stream) {
    const char* launcher = "gelu_backward_amax_scale";
    if (!fp8_launch_aligned(launcher, "fc's output", inp, 16) ||
        !fp8_launch_aligned(launcher, "the output gradient", dout, 16)) {
        return cudaErrorInvalidValue;
    }
    GeluBackwardInput input = {inp, dout};
    return fp8_amax_scale_launch(launcher, input, n, 0, format, target, workspace, num_sms, stream);
}

#endif  // GPTFP8_GELU_FP8_CUH
