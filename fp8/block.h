/*
fp8/block.h — block scaling: Transformer Engine's Float8BlockScaling (-fp8_recipe blockwise, DeepSeek-V3's scheme)
and MXFP8BlockScaling (-fp8_recipe mxfp8, the OCP MX format), whose casts give every block of a tensor its own scale,
computed from that block alone just before the cast. The scale rules are host + device (FP8_HD), written once for the
CPU reference and the GPU; the casts below are the CPU's. Each element is cast by the very chunk loop a per-tensor
cast uses (fp8/quantize_cpu.h's fp8_quantize_chunk, given its block's scale), so one element's bytes never depend on
the recipe that chose its scale.

Blocks, for a GEMM out = x @ w^T (x (rows, K), w (N, K); K the reduction dimension):
  blockwise  activations and gradients: 1x128 blocks along the last dimension (rowwise copy), or 128x1 down a column
             (columnwise copy, the transposed tensor's 1x128 blocks); weights: 128x128 tiles, so a weight's transpose is
             its codes and scales transposed, never a second cast (a 128x128 tile is the same block both ways). No GEMM
             pairs two 128x128 operands.
  mxfp8      1x32 blocks along the GEMM's reduction dimension of every operand: rowwise (fprop's x and w, dgrad's
             grad_output), or 32x1 down a column (dgrad's w, wgrad's x and grad_output).
A columnwise copy is cast from the high-precision tensor, with its own blocks and scales: it is not the rowwise copy's
codes transposed (a 1x128 block and a 128x1 block share one element, not a scale).

Per block, amax = max |x| over the block's elements that are not NaN (an inf counts), as TE's kernels take fmaxf,
which skips NaN: a block holding a NaN is scaled by its other elements, and the NaN casts to the NaN code. (The
tensor's amax, max-reduced into the slot's row 0 for the diagnostics, stays NaN-propagating, fp8_amax_merge's order,
as every other amax here: it is what tells a run that a NaN went through the cast.)

TE version followed: the scale rules below are those of TransformerEngine at commit d0067d0 (2026-08-22), whose
transformer_engine/common/util/ptx.cuh (exp2f_rcp changed in 71971e3, 2026-02-05; exp2f in 4ff5fdf, 2026-08-05),
recipe/recipe_common.cuh (compute_scale_from_amax), util/ptx_arch_spec.cuh (float_to_e8m0, the software path Hopper
takes) and the block quantizers (transpose/quantize_transpose_{vector,square}_blockwise.cu, cast/mxfp8/) were read.

blockwise scale (TE's compute_scale_from_amax): amax = max(amax, amax_epsilon); amax 0, inf or NaN gives scale 1;
  else scale = fp8_max / amax (fp32, round to nearest), FLT_MAX when that overflows; with power_2_scale the mantissa
  bits are cleared (rounded down to a power of two, so x * scale never exceeds fp8_max and scale_inv = 1 / scale is
  exact: FLT_MAX becomes 2^127). scale_inv = 1 / scale.
mxfp8 scale (TE's software rule, as on Hopper): e = E8M0 exponent of amax * (1 / fp8_max as an fp32 constant), ROUNDED
  UP: the float's exponent field, plus one when its mantissa is non-zero (so 2^(e-127) >= amax / fp8_max, and no
  element of the block lands above fp8_max by more than the rounding of that fp32 product); special cases NaN -> 0xFF,
  inf -> 0xFE, 0 -> 0, a float exponent 0xFE stays (2^127 is E8M0's largest), and a subnormal at or below 2^-127 gives
  0. The cast multiplies by 2^(127-e) (TE's exp2f_rcp since 71971e3: the float bits (254 - e) << 23, so byte 0
  multiplies by 2^127 and a block whose amax is below about 2^-127 * fp8_max keeps its values instead of flushing
  them; 0xFE by 2^-127, the subnormal 0x00400000, so an inf in a block (amax inf: byte 0xFE) casts to fp8_max and
  dequantizes to fp8_max * 2^127 = inf again, not NaN; 0xFF, which no NaN-free amax gives, by NaN); the GEMM
  multiplies by 2^(e-127) (TE's exp2f since 4ff5fdf: e = 0 is the subnormal 2^-127, e = 0xFF is NaN).
  Where this differs from the OCP MX specification: OCP takes the exponent as floor(log2(amax)) minus the element
  format's largest exponent (8 for E4M3), so a block's largest elements can land above 448 and are clipped to it.
  TE rounds up instead: nothing saturates, at the price of up to one binade of resolution for the block's small
  elements. Why: NVIDIA's MXFP8 pre-training study (Mishra, Stosic, Layton, "Recipes for Pre-training LLMs with
  MXFP8", arXiv:2506.08027) found that the OCP rounding, which clips those largest elements, can make pre-training
  diverge, and that rounding the scale up (toward infinity) trains an 8B model on 15T tokens like BF16.
Cast: code = fp8(x * scale), round to nearest even, satfinite (fp8_from_float); the values a GEMM multiplies are
fp8_to_float(code) * scale_inv (the casts' `dequantized` output).

The diagnostics of a block cast (fp8/diag.h's Fp8QuantStats): elements, saturated (|x * scale| > fp8_max), flushed
(non-zero cast to +-0), as for a per-tensor cast; the tensor's amax max-reduced into the slot's row 0; and the
smallest and largest scale of its blocks whose amax is finite and non-zero (a block of zeros or NaNs only, or one
holding inf, has a scale that says nothing about the tensor).
*/
#ifndef GPTFP8_BLOCK_H
#define GPTFP8_BLOCK_H

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "fp8.h"
#include "quantize_cpu.h"
#include "recipe.h"

#define FP8_BLOCKWISE_BLOCK 128  // blockwise: 1x128 activation/gradient blocks, 128x128 weight tiles
#define FP8_MXFP8_BLOCK 32       // mxfp8: 1x32 blocks

// ----------------------------------------------------------------------------
// the scale rules (host + device)

// A block's amax as its scale sees it: the largest magnitude's float bits (x's bits without the sign) of the block's
// elements that are not NaN (bits above 0x7F800000), 0 for none; `block_amax_bits` the running value.
FP8_HD uint32_t fp8_block_amax_merge(uint32_t block_amax_bits, uint32_t magnitude_bits) {
    return magnitude_bits <= 0x7F800000u && magnitude_bits > block_amax_bits ? magnitude_bits : block_amax_bits;
}

// blockwise: the scale of a block whose amax (max |x| over its non-NaN elements) is `amax`.
FP8_HD float fp8_blockwise_scale(float amax, float fp8_max_value, float amax_epsilon, int power_2_scale) {
    if (amax < amax_epsilon) { amax = amax_epsilon; }                 // a NaN amax compares false: handled next
    if (!(amax > 0.0f) || !(amax <= FLT_MAX)) { return 1.0f; }       // 0, inf or NaN
    float scale = fp8_max_value / amax;
    if (scale > FLT_MAX) { scale = FLT_MAX; }                         // a tiny amax: fp32's largest, not inf
    if (power_2_scale) { scale = fp8_bits_float(fp8_float_bits(scale) & 0xFF800000u); }  // sign and exponent only
    return scale;
}

// mxfp8: the E8M0 byte of a (non-negative) float, rounded up (see the header comment for the special cases).
FP8_HD uint8_t fp8_e8m0_round_up(float value) {
    uint32_t bits = fp8_float_bits(value);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) { return 0xFF; }  // NaN
    if ((bits & 0x7FFFFFFFu) == 0x7F800000u) { return 0xFE; } // inf
    if (value == 0.0f) { return 0x00; }
    uint32_t exponent = (bits >> 23) & 0xFFu, mantissa = bits & 0x7FFFFFu;
    // a subnormal up to 0x400000 (2^-127 itself) rounds up to 2^-127, E8M0's smallest: exponent 0
    if (mantissa > 0 && exponent != 0xFE && !(exponent == 0 && mantissa <= 0x400000u)) { exponent++; }
    return (uint8_t)exponent;
}

// mxfp8: the E8M0 exponent of a block whose amax is `amax`: amax times 1/fp8_max rounded to an fp32 constant first
// (TE multiplies by that constant rather than dividing), then rounded up.
FP8_HD uint8_t fp8_mxfp8_exponent(float amax, Fp8Format format) {
    float fp8_max_reciprocal = format == FP8_E4M3 ? (float)(1.0 / 448.0) : (float)(1.0 / 57344.0);
    return fp8_e8m0_round_up(amax * fp8_max_reciprocal);
}

// mxfp8: what the cast multiplies by, 2^(127 - e), as TE's exp2f_rcp computes it (2^127 for e = 0; the subnormal
// 2^-127 for e = 0xFE, which the exponent field cannot hold; NaN for e = 0xFF).
FP8_HD float fp8_e8m0_cast_scale(uint8_t e) {
    if (e == 0xFF) { return fp8_bits_float(0x7FFFFFFFu); }
    if (e == 0xFE) { return fp8_bits_float(0x00400000u); }
    return fp8_bits_float((uint32_t)(254 - (int)e) << 23);
}

// mxfp8: what the GEMM multiplies a code by, 2^(e - 127) (E8M0's value; 0xFF is NaN; e = 0 is the subnormal 2^-127).
FP8_HD float fp8_e8m0_to_float(uint8_t e) {
    if (e == 0xFF) { return fp8_bits_float(0x7FC00000u); }
    return e == 0 ? fp8_bits_float(0x00400000u) : fp8_bits_float((uint32_t)e << 23);
}

// ----------------------------------------------------------------------------
// cuBLASLt's scale layouts (host + device: the GPU casts write them, the CPU tests read them back)
//
// A block-scaled GEMM operand is an (M, K) row-major FP8 matrix, K its reduction dimension (cuBLASLt's view: a
// column-major K x M matrix, K contiguous, taken transposed: the TN GEMM's A or B). Its fp32 scale_invs go in one of:
//   VEC128 (CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F, 1x128 blocks along K): [ceil(K/128)][round_up(M, 4)], M
//          contiguous: the scale of row m's k-th block at k * round_up(M, 4) + m.
//   BLK128x128 (CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F, 128x128 tiles): [ceil(M/128)][round_up(ceil(K/128), 4)],
//          K-blocks contiguous: the scale of tile (i, k) at i * round_up(ceil(K/128), 4) + k.
// Sources: cublasLt.h (13.1) names the two modes and says only "a scaling factor per 128-element block in the
// innermost dimension" / "per 128x128-element block"; the layouts are the ones Transformer Engine's Float8BlockQuantizer
// allocates for cuBLASLt (transformer_engine/pytorch/tensor/float8_blockwise_tensor.py, get_scale_shape: 1D
// (ceil(K/128), M), the rows padded to a multiple of 4 in later versions; 2D (ceil(M/128), round_up(ceil(K/128), 4)))
// and its cast kernels write (transpose/quantize_transpose_vector_blockwise.cu, "GEMM_READY": stride 1 along the rows,
// the padded row count between K-blocks). The padding to 4 keeps every K-block's column 16-byte aligned, which is
// what cuBLASLt asks of every scale pointer. dev/cuda/fp8_block_gemm checks both against a GEMM on the CPU.

FP8_HD size_t fp8_round_up4(size_t n) { return (n + 3) / 4 * 4; }
FP8_HD size_t fp8_ceil_div(size_t n, size_t d) { return (n + d - 1) / d; }
// A blockwise FP8 GEMM operand's k as the GEMM runs it: k rounded up to whole 1x128 blocks, the codes past k zero
// (fp8/block_quantize.cuh's k_padded; cuBLASLt's block-scaled GEMMs take k a multiple of 128 only).
FP8_HD size_t fp8_blockwise_padded_k(size_t k) { return fp8_ceil_div(k, FP8_BLOCKWISE_BLOCK) * FP8_BLOCKWISE_BLOCK; }

// VEC128: where the scale_inv of row m's k_block-th block along K goes, for an operand of M rows; and the floats of
// the whole array for (M, K).
FP8_HD size_t fp8_vec128_scale_index(size_t m, size_t k_block, size_t M) { return k_block * fp8_round_up4(M) + m; }
FP8_HD size_t fp8_vec128_scale_floats(size_t M, size_t K) {
    return fp8_ceil_div(K, FP8_BLOCKWISE_BLOCK) * fp8_round_up4(M);
}
// BLK128x128: where the scale_inv of tile (m_block, k_block) goes, for an operand whose K is K; and the array's floats.
FP8_HD size_t fp8_blk128_scale_index(size_t m_block, size_t k_block, size_t K) {
    return m_block * fp8_round_up4(fp8_ceil_div(K, FP8_BLOCKWISE_BLOCK)) + k_block;
}
FP8_HD size_t fp8_blk128_scale_floats(size_t M, size_t K) {
    return fp8_ceil_div(M, FP8_BLOCKWISE_BLOCK) * fp8_round_up4(fp8_ceil_div(K, FP8_BLOCKWISE_BLOCK));
}

// The parameters of a block cast: the recipe's kind and options, and the format of the tensor.
typedef struct {
    Fp8ScalingRecipe scaling;  // FP8_SCALING_BLOCKWISE or FP8_SCALING_MXFP8
    Fp8Format format;
    float amax_epsilon;        // blockwise
    int power_2_scale;         // blockwise
} Fp8BlockCast;

// One block's scale: what the cast multiplies by, what the GEMM multiplies by, and (mxfp8) the E8M0 byte.
typedef struct {
    float scale, scale_inv;
    uint8_t e8m0;
} Fp8BlockScale;

FP8_HD Fp8BlockScale fp8_block_scale(const Fp8BlockCast* cast, float amax) {
    Fp8BlockScale s;
    if (cast->scaling == FP8_SCALING_MXFP8) {
        s.e8m0 = fp8_mxfp8_exponent(amax, cast->format);
        s.scale = fp8_e8m0_cast_scale(s.e8m0);
        s.scale_inv = fp8_e8m0_to_float(s.e8m0);
    } else {
        s.e8m0 = 0;
        s.scale = fp8_blockwise_scale(amax, fp8_max(cast->format), cast->amax_epsilon, cast->power_2_scale);
        s.scale_inv = 1.0f / s.scale;
    }
    return s;
}

// The block shape (rows x cols of a row-major tensor) of one copy of a GEMM operand under a block recipe: `weight`
// whether it is a weight (blockwise: 128x128 tiles either way), `columnwise` whether the copy's blocks run down the
// columns (the operand's reduction dimension is its first: wgrad's inputs, dgrad's weight) rather than along the rows.
typedef struct {
    int rows, cols;
} Fp8BlockShape;

static inline Fp8BlockShape fp8_block_shape(Fp8ScalingRecipe scaling, int weight, int columnwise) {
    int len = scaling == FP8_SCALING_MXFP8 ? FP8_MXFP8_BLOCK : FP8_BLOCKWISE_BLOCK;
    Fp8BlockShape shape = {1, len};
    if (scaling == FP8_SCALING_BLOCKWISE && weight) {
        shape.rows = len;
    } else if (columnwise) {
        shape.rows = len;
        shape.cols = 1;
    }
    return shape;
}

// How a block recipe's GEMMs run on Hopper: blockwise's on cuBLASLt's block-scaled FP8 GEMMs (VEC128 and BLK128x128
// scales: compute capability 9.0, cuBLASLt 12.9 or later); mxfp8's emulated, as no Hopper GEMM takes E8M0 scales (its
// casts' values dequantized to bf16, multiplied by BF16 GEMMs: MXFP8's accuracy, not its speed).
static inline int fp8_recipe_uses_block_scaled_gemms(const Fp8Recipe* recipe) {
    return recipe->scaling == FP8_SCALING_BLOCKWISE;
}
static inline int fp8_recipe_gemms_emulated(const Fp8Recipe* recipe) { return recipe->scaling == FP8_SCALING_MXFP8; }

static inline Fp8BlockCast fp8_block_cast_of(const Fp8Recipe* recipe, Fp8Format format) {
    Fp8BlockCast cast = {recipe->scaling, format, recipe->blockwise.amax_epsilon, recipe->blockwise.power_2_scale};
    return cast;
}

// ----------------------------------------------------------------------------
// the CPU casts
//
// A cast walks the tensor in tiles of one band of block rows (shape.rows rows) by FP8_BLOCK_TILE_COLS columns (a
// multiple of every block width, so no block straddles two tiles): the tile's block amaxes in one pass over its rows,
// its block scales, then each row through the per-tensor cast's loop with one scale per element, and the dequantized
// values beside. Every loop runs along a row, so blocks down the columns (shape.cols 1) need no transposed copy, and
// the loops vectorize for each instruction set (the tile function is compiled once per set, as the GEMM is).

#define FP8_BLOCK_TILE_COLS 1024

// What a tile adds to its cast's results: the max magnitude's bits (NaN on top), the counts, the scale range's bits.
typedef struct {
    uint32_t amax_bits, scale_min_bits, scale_max_bits;
    long long saturated, flushed;
} Fp8BlockTileStats;

// One tile: rows [row0, row_end) and columns [col0, col0 + width) of inp (rows, cols) in blocks of shape; codes into
// out, values into dequantized (may be NULL), each block's scale_inv into scale_inv_row[block column] (may be NULL).
static inline __attribute__((always_inline)) void fp8_quantize_block_tile(
    uint8_t* out, float* dequantized, float* scale_inv_row, const float* inp, size_t cols, size_t row0, size_t row_end,
    size_t col0, size_t width, Fp8BlockShape shape, const Fp8BlockCast* cast, Fp8Format format, const float* decoded,
    Fp8BlockTileStats* t) {
    size_t block_len = (size_t)shape.cols, num_blocks = (width + block_len - 1) / block_len;
    // the block amaxes (NaN skipped: fp8_block_amax_merge), as int32: magnitudes' bits are below 2^31, and a signed
    // max vectorizes on every instruction set (SSE2 has no unsigned one)
    int32_t block_amax[FP8_BLOCK_TILE_COLS];
    for (size_t b = 0; b < num_blocks; b++) { block_amax[b] = 0; }
    for (size_t r = row0; r < row_end; r++) {
        const float* x = inp + r * cols + col0;
        if (block_len == 1) {  // a block per column: the row's elements into their own blocks
            for (size_t i = 0; i < width; i++) {
                int32_t m = (int32_t)(fp8_float_bits(x[i]) & 0x7FFFFFFFu);
                m = m <= 0x7F800000 ? m : 0;
                block_amax[i] = m > block_amax[i] ? m : block_amax[i];
            }
        } else {
            for (size_t b = 0; b < num_blocks; b++) {
                size_t begin = b * block_len, end = begin + block_len < width ? begin + block_len : width;
                int32_t a = block_amax[b];
                for (size_t i = begin; i < end; i++) {
                    int32_t m = (int32_t)(fp8_float_bits(x[i]) & 0x7FFFFFFFu);
                    m = m <= 0x7F800000 ? m : 0;
                    a = m > a ? m : a;
                }
                block_amax[b] = a;
            }
        }
    }
    // the blocks' scales, spread over their elements
    float scale[FP8_BLOCK_TILE_COLS], scale_inv[FP8_BLOCK_TILE_COLS];
    for (size_t b = 0; b < num_blocks; b++) {
        float amax = fp8_bits_float((uint32_t)block_amax[b]);
        Fp8BlockScale s = fp8_block_scale(cast, amax);
        if (scale_inv_row) { scale_inv_row[b] = s.scale_inv; }
        if (amax > 0.0f && amax <= FLT_MAX) {  // such a block's scale is positive and finite
            uint32_t scale_bits = fp8_float_bits(s.scale);
            t->scale_min_bits = scale_bits < t->scale_min_bits ? scale_bits : t->scale_min_bits;
            t->scale_max_bits = scale_bits > t->scale_max_bits ? scale_bits : t->scale_max_bits;
        }
        size_t end = (b + 1) * block_len < width ? (b + 1) * block_len : width;
        for (size_t i = b * block_len; i < end; i++) {
            scale[i] = s.scale;
            scale_inv[i] = s.scale_inv;
        }
    }
    // each row through the per-tensor cast's loop, one scale per element; its amax is the tensor's (NaN included)
    for (size_t r = row0; r < row_end; r++) {
        uint8_t* q = out + r * cols + col0;
        Fp8ChunkStats c = fp8_quantize_chunk(q, inp + r * cols + col0, width, format, 0.0f, scale);
        if (dequantized) {
            float* v = dequantized + r * cols + col0;
            for (size_t i = 0; i < width; i++) { v[i] = decoded[q[i]] * scale_inv[i]; }
        }
        t->amax_bits = c.amax_bits > t->amax_bits ? c.amax_bits : t->amax_bits;
        t->saturated += c.saturated;
        t->flushed += c.flushed;
    }
}

// the tile function with the format as a constant, compiled once per instruction set
typedef void (*Fp8QuantizeBlockTileFn)(uint8_t* out, float* dequantized, float* scale_inv_row, const float* inp,
                                       size_t cols, size_t row0, size_t row_end, size_t col0, size_t width,
                                       Fp8BlockShape shape, const Fp8BlockCast* cast, const float* decoded,
                                       Fp8BlockTileStats* t);
#define FP8_BLOCK_TILE_VERSION(name, target)                                                                          \
    CPU_NO_FMA target static void name(uint8_t* out, float* dequantized, float* scale_inv_row, const float* inp,      \
                                       size_t cols, size_t row0, size_t row_end, size_t col0, size_t width,           \
                                       Fp8BlockShape shape, const Fp8BlockCast* cast, const float* decoded,           \
                                       Fp8BlockTileStats* t) {                                                        \
        if (cast->format == FP8_E4M3) {                                                                               \
            fp8_quantize_block_tile(out, dequantized, scale_inv_row, inp, cols, row0, row_end, col0, width, shape,     \
                                    cast, FP8_E4M3, decoded, t);                                                      \
        } else {                                                                                                      \
            fp8_quantize_block_tile(out, dequantized, scale_inv_row, inp, cols, row0, row_end, col0, width, shape,     \
                                    cast, FP8_E5M2, decoded, t);                                                      \
        }                                                                                                             \
    }
FP8_BLOCK_TILE_VERSION(fp8_quantize_block_tile_baseline, )
#if CPU_ISA_X86
FP8_BLOCK_TILE_VERSION(fp8_quantize_block_tile_avx2, CPU_TARGET_AVX2)
FP8_BLOCK_TILE_VERSION(fp8_quantize_block_tile_avx512, CPU_TARGET_AVX512)
#endif
#undef FP8_BLOCK_TILE_VERSION

static inline Fp8QuantizeBlockTileFn fp8_quantize_block_tile_for(CpuIsa isa) {
#if CPU_ISA_X86
    if (isa == CPU_ISA_AVX512) { return fp8_quantize_block_tile_avx512; }
    if (isa == CPU_ISA_AVX2) { return fp8_quantize_block_tile_avx2; }
#endif
    (void)isa;
    return fp8_quantize_block_tile_baseline;
}

// Cast inp (rows, cols), row-major, in blocks of shape.rows x shape.cols (the last blocks of a row or column may be
// cut short by the tensor's edge): out (rows, cols) = the codes; dequantized (rows, cols, may be NULL) = the values
// the GEMM multiplies; block_scale_inv (ceil(rows / shape.rows), ceil(cols / shape.cols), may be NULL) = each block's
// scale_inv. max |inp| is max-reduced into *amax (NaN-propagating); stats and range (may be NULL) count the cast.
// isa: which version of the tile loop (the tests run them all). Threads split the tiles; every result is a max, a
// min or a count, so they do not depend on how.
static inline void fp8_quantize_blocks_isa(CpuIsa isa, uint8_t* out, float* dequantized, float* block_scale_inv,
                                           const float* inp, size_t rows, size_t cols, Fp8BlockShape shape,
                                           const Fp8BlockCast* cast, float* amax, Fp8QuantStats* stats,
                                           Fp8BlockScaleRange* range) {
    Fp8QuantizeBlockTileFn quantize_tile = fp8_quantize_block_tile_for(isa);
    float decoded[256];
    fp8_decode_table(decoded, cast->format);
    size_t block_rows = (rows + (size_t)shape.rows - 1) / (size_t)shape.rows;
    size_t block_cols = (cols + (size_t)shape.cols - 1) / (size_t)shape.cols;
    size_t tile_cols = (cols + FP8_BLOCK_TILE_COLS - 1) / FP8_BLOCK_TILE_COLS, num_tiles = block_rows * tile_cols;
    uint32_t amax_bits = fp8_float_bits(*amax);
    long long saturated = 0, flushed = 0;
    // the scale range as bit patterns, which order like the (positive) scales: an unsigned min and max reduce the
    // same in every OpenMP implementation (a float min's starting value is the implementation's: +inf or FLT_MAX)
    uint32_t scale_min_bits = fp8_float_bits(range ? range->scale_min : INFINITY);
    uint32_t scale_max_bits = fp8_float_bits(range ? range->scale_max : 0.0f);
#pragma omp parallel for reduction(max : amax_bits, scale_max_bits) reduction(min : scale_min_bits) \
    reduction(+ : saturated, flushed) if (rows * cols > CPU_PARALLEL_MIN_PASS_ELEMENTS)
    for (size_t tile = 0; tile < num_tiles; tile++) {
        size_t band = tile / tile_cols, col0 = tile % tile_cols * FP8_BLOCK_TILE_COLS;
        size_t row0 = band * (size_t)shape.rows;
        size_t row_end = row0 + (size_t)shape.rows < rows ? row0 + (size_t)shape.rows : rows;
        size_t width = col0 + FP8_BLOCK_TILE_COLS < cols ? FP8_BLOCK_TILE_COLS : cols - col0;
        Fp8BlockTileStats t = {0, scale_min_bits, scale_max_bits, 0, 0};
        quantize_tile(out, dequantized,
                      block_scale_inv ? block_scale_inv + band * block_cols + col0 / (size_t)shape.cols : NULL, inp,
                      cols, row0, row_end, col0, width, shape, cast, decoded, &t);
        amax_bits = t.amax_bits > amax_bits ? t.amax_bits : amax_bits;
        scale_min_bits = t.scale_min_bits;
        scale_max_bits = t.scale_max_bits;
        saturated += t.saturated;
        flushed += t.flushed;
    }
    *amax = fp8_bits_float(amax_bits);
    if (stats) {
        stats->count += (long long)(rows * cols);
        stats->saturated += saturated;
        stats->flushed += flushed;
    }
    if (range) {
        range->scale_min = fp8_bits_float(scale_min_bits);
        range->scale_max = fp8_bits_float(scale_max_bits);
    }
}

static inline void fp8_quantize_blocks(uint8_t* out, float* dequantized, float* block_scale_inv, const float* inp,
                                       size_t rows, size_t cols, Fp8BlockShape shape, const Fp8BlockCast* cast,
                                       float* amax, Fp8QuantStats* stats, Fp8BlockScaleRange* range) {
    fp8_quantize_blocks_isa(cpu_isa_best(), out, dequantized, block_scale_inv, inp, rows, cols, shape, cast, amax,
                            stats, range);
}

// The columnwise copy of inp (rows, cols): blocks of block_len down each column, laid out as the transposed tensor's
// 1 x block_len blocks. out_transposed (cols, rows) = the codes, as TE's columnwise copy of a blockwise tensor (the
// transpose the TN-only GEMM reads); dequantized (rows, cols) = the values in inp's layout; block_scale_inv (cols,
// ceil(rows / block_len)); scratch (2 * rows * cols floats). The cast is fp8_quantize_blocks' with block_len x 1
// blocks (so the same bytes); only its codes and scales are transposed after.
static inline void fp8_quantize_blocks_columnwise(uint8_t* out_transposed, float* dequantized, float* block_scale_inv,
                                                  const float* inp, size_t rows, size_t cols, int block_len,
                                                  const Fp8BlockCast* cast, float* amax, Fp8QuantStats* stats,
                                                  Fp8BlockScaleRange* range, float* scratch) {
    size_t block_rows = (rows + (size_t)block_len - 1) / (size_t)block_len;
    uint8_t* codes = (uint8_t*)scratch;                                    // (rows, cols)
    float* scale_inv = block_scale_inv ? scratch + (rows * cols + 3) / 4 : NULL;  // (block_rows, cols)
    Fp8BlockShape shape = {block_len, 1};
    fp8_quantize_blocks(codes, dequantized, scale_inv, inp, rows, cols, shape, cast, amax, stats, range);
    // the codes transposed in 32 x 32 tiles, so that neither side strides through more lines than L1 holds
    const size_t tile = 32;
#pragma omp parallel for if (rows * cols > CPU_PARALLEL_MIN_PASS_ELEMENTS)
    for (size_t c0 = 0; c0 < cols; c0 += tile) {
        size_t c_end = c0 + tile < cols ? c0 + tile : cols;
        for (size_t r0 = 0; r0 < rows; r0 += tile) {
            size_t r_end = r0 + tile < rows ? r0 + tile : rows;
            for (size_t c = c0; c < c_end; c++) {
                for (size_t r = r0; r < r_end; r++) { out_transposed[c * rows + r] = codes[r * cols + c]; }
            }
        }
    }
    if (!block_scale_inv) { return; }
    for (size_t br = 0; br < block_rows; br++) {
        for (size_t c = 0; c < cols; c++) { block_scale_inv[c * block_rows + br] = scale_inv[br * cols + c]; }
    }
}

#endif  // GPTFP8_BLOCK_H
