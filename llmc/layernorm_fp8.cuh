/*
llmc/layernorm_fp8.cuh — LayerNorm inside the FP8 cast after it (TE's LayerNormLinear, whose LayerNorm writes the FP8
input of its GEMM): the input cast of qkv (after ln1) and of fc (after ln2), one pass of fp8/quantize.cuh's cast +
transpose kernel whose tile is made by LayerNorm from the residual stream and the row's saved statistics instead of
read from a bf16 tensor.

Why: in FP8 training with per-tensor scaling (delayed or current), at -r 0 or 1 (-r 2 drops LayerNorm's output and makes
it again in the backward), LayerNorm's output (B, T, C) is read by nothing but the next linear's input cast: its fprop
reads the FP8 x, its wgrad the FP8 x^T the same pass keeps, and LayerNorm's own backward reads its input and statistics,
not its output. Written by one kernel and read back by the next, it was 4 bytes of traffic per element for nothing.
Fused, the LayerNorm pass writes only the row statistics (and, where a residual add rides on it, the residual:
llmc/layernorm.cuh's residual_layernorm_forward with out NULL), and the cast reads the residual stream once more:
  before  LayerNorm reads 2, writes 2; the cast reads 2, writes 1 + 1     8 bytes an element
  fused   statistics read 2; the cast reads 2, writes 1 + 1              6 bytes an element
(plus 8 bytes a row of statistics, and the weight and bias rows, from cache). The scale must be known before the
cast: delayed scaling's comes from earlier steps. Current scaling takes it from the output's own amax, so its amax
pass comes between the statistics and the cast, over LayerNorm's values made from the residual stream as the cast
makes them (layernorm_forward_amax_scale), then the same fused cast: 8 bytes an element instead of 10 (TE writes the
bf16 output with its amax, then casts it: its FUSED_NORM_AMAX_FP8).

Same bytes: each 16-byte vector is made by layernorm_output8 (llmc/layernorm.cuh) from the mean and rstd the
statistics pass stored, the function the one-warp-per-row forward writes its output with (and, value for value,
layernorm_output of the one-block-per-row forward and of -r 2's recompute), so the cast sees the bf16 values
layernorm_forward would have written, and its bytes, amax and counts are those of the separate cast
(dev/cuda/layernorm_fp8 checks it bit for bit).
*/
#ifndef GPTFP8_LAYERNORM_FP8_CUH
#define GPTFP8_LAYERNORM_FP8_CUH

#include "../fp8/quantize.cuh"
#include "layernorm.cuh"

// The cast's input: LayerNorm's output, 8 values at element `offset` of inp (rows, cols) bf16, in row `row` from
// column `col` on, from the row's mean and rstd (rows) and the columns' weight and bias (cols). col is a multiple of 8
// (the tile's vectors), so the 8 columns are adjacent and 16-byte aligned in weight and bias.
struct LayerNormInput {
    const floatX* inp;
    const float* mean;
    const float* rstd;
    const floatX* weight;
    const floatX* bias;
    __device__ __forceinline__ uint4 values(size_t offset, int row, int col) const {
        return layernorm_output8(*reinterpret_cast<const uint4*>(inp + offset), mean[row], rstd[row],
                                 *reinterpret_cast<const uint4*>(weight + col), *reinterpret_cast<const uint4*>(bias + col));
    }
};

// out (rows, cols) FP8 = fp8(LayerNorm(inp) * *scale), out_t (cols, rows) its transpose; *amax = max(*amax,
// max|LayerNorm(inp)|) over the bf16 values of the output; stats as fp8_cast_transpose_amax's (NULL: no counting).
// inp (rows, cols) bf16 is the LayerNorm's input (the residual stream), mean and rstd (rows) what its statistics pass
// stored (layernorm_forward or residual_layernorm_forward with out NULL, earlier on the same stream), weight and bias
// (cols) its parameters; rows and cols multiples of 64. out may be NULL (only the transpose). Asynchronous on
// `stream`; returns the launch error, or cudaErrorInvalidValue after one line saying what the arguments lack.
static inline cudaError_t layernorm_forward_fp8(uint8_t* out, uint8_t* out_t, const floatX* inp, const float* mean,
                                                const float* rstd, const floatX* weight, const floatX* bias, int rows,
                                                int cols, const float* scale, float* amax, unsigned long long* stats,
                                                Fp8Format format, cudaStream_t stream) {
    const char* launcher = "layernorm_forward_fp8";
    if (!mean || !rstd || !weight || !bias) {
        fprintf(stderr, "%s: no %s (the cast makes LayerNorm's output from the row statistics and the parameters)\n",
                launcher, !mean ? "row means" : !rstd ? "row rstds" : !weight ? "LayerNorm weight" : "LayerNorm bias");
        return cudaErrorInvalidValue;
    }
    if (!fp8_cast_transpose_args_ok(launcher, out, out_t, inp, rows, cols, amax, stats) ||
        !fp8_launch_aligned(launcher, "the LayerNorm weight", weight, 16) ||
        !fp8_launch_aligned(launcher, "the LayerNorm bias", bias, 16) ||
        !fp8_launch_aligned(launcher, "the row means", mean, 4) ||
        !fp8_launch_aligned(launcher, "the row rstds", rstd, 4)) {
        return cudaErrorInvalidValue;
    }
    LayerNormInput input = {inp, mean, rstd, weight, bias};
    return fp8_cast_transpose_launch<false>(out, out_t, NULL, input, rows, cols, scale, amax, stats, format, stream);
}

// Current scaling's amax pass for layernorm_forward_fp8: the amax of LayerNorm(inp) (rows, cols) over the bf16 values
// of its output, made from the same statistics and parameters, and the scale from it into target (fp8/quantize.cuh's
// fp8_amax_scale on the output layernorm_forward would write, without writing it). cols a multiple of 8.
static inline cudaError_t layernorm_forward_amax_scale(const floatX* inp, const float* mean, const float* rstd,
                                                       const floatX* weight, const floatX* bias, int rows, int cols,
                                                       Fp8Format format, Fp8CurrentScale target,
                                                       Fp8AmaxWorkspace workspace, int num_sms, cudaStream_t stream) {
    const char* launcher = "layernorm_forward_amax_scale";
    if (!mean || !rstd || !weight || !bias) {
        fprintf(stderr, "%s: no %s (the pass makes LayerNorm's output from the row statistics and the parameters)\n",
                launcher, !mean ? "row means" : !rstd ? "row rstds" : !weight ? "LayerNorm weight" : "LayerNorm bias");
        return cudaErrorInvalidValue;
    }
    if (rows < 1 || cols < 8 || !fp8_launch_aligned(launcher, "the LayerNorm input", inp, 16) ||
        !fp8_launch_aligned(launcher, "the LayerNorm weight", weight, 16) ||
        !fp8_launch_aligned(launcher, "the LayerNorm bias", bias, 16) ||
        !fp8_launch_aligned(launcher, "the row means", mean, 4) ||
        !fp8_launch_aligned(launcher, "the row rstds", rstd, 4)) {
        if (rows < 1 || cols < 8) {
            fprintf(stderr, "%s: %d rows of %d columns: it needs a row of 8 columns at least\n", launcher, rows, cols);
        }
        return cudaErrorInvalidValue;
    }
    LayerNormInput input = {inp, mean, rstd, weight, bias};
    return fp8_amax_scale_launch(launcher, input, (size_t)rows * cols, (size_t)cols, format, target, workspace, num_sms,
                                 stream);
}

#endif  // GPTFP8_LAYERNORM_FP8_CUH
