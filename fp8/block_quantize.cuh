/*
fp8/block_quantize.cuh — the GPU casts of the block recipes (-fp8_recipe blockwise | mxfp8, fp8/block.h): every block
of a bf16 tensor is cast with the scale of its own amax, computed inside the cast by the CPU's own scale rules
(fp8_block_scale, host + device), so a block's codes and scale are the CPU reference's bit for bit.

Two launchers, one read of the bf16 tensor each:
  fp8_block_cast_1d   1 x block_len blocks along the rows (the rowwise copy) and/or block_len x 1 blocks down the
                      columns (the columnwise copy, written transposed: the operand a TN GEMM reducing over the rows
                      reads), both from the same tile in shared memory. block_len 128: blockwise activations and
                      gradients, fp32 scale_invs in cuBLASLt's VEC128 layout; 32: mxfp8, E8M0 scales, and the values
                      dequantized to bf16 for the emulated GEMM (Hopper has no MXFP8 GEMM).
  fp8_block_cast_2d   128 x 128 tiles (blockwise weights): the codes, the transposed codes (a tile is the same block
                      both ways: one amax, one scale), and the scale_invs of both in cuBLASLt's BLK128x128 layout.
A 1D cast may also sum its tensor's columns on the way (column_partials, TE's cast_transpose_dbias: a linear layer's
grad_output cast makes its bias gradient's pass 1 from the tile it holds anyway): each column's 64-row chunks
(FP8_BLOCK_COLUMN_SUM_ROWS, llmc/cuda_common.cuh's COLUMN_SUM_ROWS) summed row by row from 0.0f in fp32, exactly
llmc/bias.cuh's bias_backward_partials_kernel, so bias_backward_reduce on them gives bias_backward's bits.
Each copy a 1D cast makes is a cast of its own, as on the CPU (a columnwise copy is cast from the bf16 values, not
from the rowwise codes): each counts its elements in the diagnostics. A block's scale comes from the largest magnitude
of its elements that are not NaN (fp8/block.h, TE's fmaxf); the tensor's amax, max-reduced into the slot's row 0 and,
when asked, into a cell of this cast alone (the slot's window amax in the diagnostics), is NaN-propagating (float
bits, NaN above inf: fp8_amax_merge's order). Both are integer maxima of float bits: no float atomics, and no result
depends on which CTA cast which tile, so runs are deterministic.

Shapes (the launchers refuse anything else, one line on stderr and cudaErrorInvalidValue, before touching the GPU):
any rows and cols, the last block of a row or a column cut short by the tensor's edge exactly as fp8_quantize_blocks
cuts it (its amax and scale from the elements that exist), except what the memory access needs: cols a multiple of 8
(the 16-byte bf16 loads; the rowwise codes go out 8 bytes a thread), rows a multiple of 16 where transposed codes are
written (their 16-byte stores: the 1D cast's columnwise codes, the 2D cast's codes_t), and at most
FP8_BLOCK_MAX_TILES 128 x 128 tiles. Scale arrays: VEC128 and BLK128x128 as fp8/block.h lays them out (ceil(K / 128)
blocks per row); E8M0 bytes (rows, ceil(cols / 32)) rowwise and (cols, ceil(rows / 32)) columnwise, row-major.
Blockwise codes may be zero-padded along k (Fp8BlockCopy.k_padded, Fp8BlockCast2d.k_padded): each row of codes is
then fp8_blockwise_padded_k(its length) long, the tile's zeros past the tensor's edge written out as 0 codes, so that
cuBLASLt's block-scaled GEMMs, which reduce over whole 128-blocks, run a k that is not a multiple of 128 as the next
multiple (the padding adds 0 to every sum; the scale arrays are ceil-sized already; dev/cuda/fp8_block_gemm checks
such zero-padded problems against the CPU on a GPU). Transposed codes so padded need no rows % 16.
Blockwise's 1x128 blocks at any width go beyond Transformer Engine, whose Float8BlockQuantizer wants multiples of 128.

What a blockwise 1D cast makes its tensor from, inside the cast (Fp8BlockCast1d.made; TE's fused activation casts and
LayerNormLinear, llmc/gelu_fp8.cuh's and llmc/layernorm_fp8.cuh's for delayed scaling). GELU: inp is fc's output and the cast's tensor is gelu(inp) as llmc/gelu.cuh's gelu_forward writes it (GELU in
fp32 of each bf16 element, gelu_math.h's gelu_value, rounded to bf16). Each thread replaces the elements its own
cp.async copies brought into the tile by those bf16 values before the tile's barrier, so every pass (codes, scales,
amaxes, counts, scale ranges, column sums) sees the bytes gelu_forward would have written: the cast of its output, bit
for bit, without that (B, T, 4C) tensor written and read back. GELU's backward the same way (fc's grad_output cast):
inp is the gradient of GELU's output (fcproj's dgrad), made.gelu_input fc's output, and the cast's tensor is GELU's
input gradient as gelu_backward writes it (gelu_derivative in fp32 times the gradient, rounded to bf16), each thread
reading the gelu_input elements of its own chunks with a 16-byte load; the column sums (fc's bias gradient) then sum
those bytes too. LayerNorm the same way (qkv's and fc's input casts): inp is the residual stream, and each chunk
becomes llmc/layernorm.cuh's layernorm_output8 of it with its row's mean and rstd (which the statistics pass stored)
and its columns' weight and bias: the bytes layernorm_forward would have written. An instance of its own for each
(the casts without them compile as they did); blockwise's only (mxfp8's casts never take these tensors fused).

How they keep up with a device copy (a pure stream: the speed is how many bytes each SM keeps in flight towards HBM,
and how little the other work stalls it) — or rather, on an H100 (RESULTS.md), how they did not: the 1D cast of both
copies at a third of a copy's bandwidth, the 2D cast at two thirds. Where the time goes is a GPU profile's to say
(ncu's warp stall reasons); what the SASS (nvdisasm) showed without one: the lean 1D blockwise cast issued about 1680
instructions a thread a tile on its common path (26 for each of its 64 elements), of which the 16 lanes of each 1x128
block computing its scale on every trip (an IEEE division and a reciprocal, each inside its own branch region, so
that the trips' chains could not overlap) were half the rowwise pass; every FP8 conversion was issued twice (both
formats under a predicate: the format is an argument); and each cp.async computed its own 64-bit address. Each is
now done once (below): about 1150 instructions, and one division chain a warp instead of eight.
  - A persistent grid: FP8_BLOCK_CTAS_PER_SM CTAs of 256 threads per SM, each looping over 128 x 128 tiles (tile
    blockIdx.x, then every gridDim.x-th). The tile-level reductions (the tensor amax, the counts, the scale range)
    run once per CTA at the end, not once per tile.
  - Double buffering with cp.async: while a CTA casts tile k from one 32 KB bf16 buffer in shared memory, tile k + 1
    is landing in the other (each thread has its 8 16-byte copies in flight at once, straight to shared memory, no
    registers held): 2 CTAs x 32 KB = 64 KB per SM in flight while the SM computes and stores.
  - The bf16 tile is unpadded row-major: the rowwise pass reads 16 bytes a thread (8 elements of a row, a quarter
    warp reading 128 contiguous bytes), the columnwise pass 4 bytes a thread (a bf16x2 column pair: a warp reads 128
    contiguous bytes of one row); neither has a bank conflict.
  - Rowwise: thread t casts 8 elements (16 bytes) of each of 8 rows; a 1x128 block is 16 neighbouring lanes, a 1x32
    block 4, so a block's amax is one max.u16x2 per 4 elements in the thread and 4 (or 2) shuffles. The amaxes of all
    8 trips first, then each block's scale computed once by one lane (a warp's 16 or 64 blocks: one or two scale
    computations a lane), then the casts, each lane taking its block's scale by a shuffle. The codes go straight to
    global memory, 8 bytes a lane (a half warp writes a 128-byte row), the dequantized bf16 16 bytes a lane.
  - The format (E4M3 or E5M2, an argument) is branched on once around each run of conversions, not per conversion.
  - Columnwise: thread t holds a column pair over 32 rows (32 bf16x2 words in registers, one max.u16x2 each gives both
    columns' maxima); a 32x1 block is the thread's own, a 128x1 block the max of 4 threads' (one exchange in shared
    memory). The codes, 32 per column, go into a transposed byte tile in shared memory (16-byte stores, the 16-byte
    chunks XOR-swizzled by the column so a quarter warp's 8 stores hit 8 different bank groups), which the CTA then
    writes out as whole 128-byte rows of the transposed copy, 16 bytes a lane.
  - The 2D cast reads the tile column-pair-wise first (the tile amax: the CTA's max of the threads'), then writes the
    transposed codes through the byte tile and the codes by rows, as above.
  - A block holding a NaN (rare) is reduced again by the thread that sees it, NaN skipped: the common path is the
    plain max of magnitude bits.
  - The column sums: thread t sums column t % 128 of the tile's 64-row chunk t / 128 from the bf16 tile in shared
    memory (a warp reads 64 contiguous bytes of a row at a time, no bank conflict), one fp32 add a row: the order is
    the sum's, so each column's chunk is one thread's chain of 64 dependent adds; the partials go out coalesced.

Where the kernels are compiled: once, into fp8/block_quantize.o (fp8/block_quantize.cu defines FP8_BLOCK_CASTS_DEFINE:
the two launchers get external linkage), which make links into every program that casts blocks. Those are compiled
with FP8_BLOCK_CASTS_EXTERN, and this header then gives them the launchers' declarations, the types and the checks,
and no kernel (test_gpt_fp8.cu, which compiles the GPU trainer inside a namespace, includes it first, at global scope,
as it does every header the two trainers share). Why: the kernel's 22 instances are three quarters of the GPU
trainer's device code (PTX lines), and nvcc compiled them again in each of the four programs that cast blocks, about
40 s of cicc and ptxas each on a CI core. The plain (non-template) kernels of the headers included here are static
(llmc/layernorm.cuh's, fp8/quantize.cuh's, llmc/cuda_common.cuh's): the object and the programs that link it each
define them, and two external definitions would not link. With neither macro (nvcc on one file by hand,
dev/cuda/emulate's builds) everything is here and the launchers are static inline.

CPU twins: fp8_quantize_blocks (rowwise, 128x128 tiles) and fp8_quantize_blocks_columnwise in fp8/block.h;
dev/cuda/fp8_block_quantize checks every copy against them bit for bit, and prints GB/s against a device copy.
*/
#ifndef GPTFP8_BLOCK_QUANTIZE_CUH
#define GPTFP8_BLOCK_QUANTIZE_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include "../llmc/gelu_math.h"
#include "../llmc/layernorm.cuh"
#include "block.h"
#include "quantize.cuh"

#ifdef FP8_BLOCK_CASTS_DEFINE
#define FP8_BLOCK_LAUNCHER  // fp8/block_quantize.o's: external linkage
#else
#define FP8_BLOCK_LAUNCHER static inline
#endif

#define FP8_BLOCK_TILE 128       // a tile: 128 x 128 elements
#define FP8_BLOCK_THREADS 256    // 8 warps
#define FP8_BLOCK_CTAS_PER_SM 2  // resident CTAs per SM (the shared memory below: 2 x 82 KB of Hopper's 228 KB)
#define FP8_BLOCK_MAX_TILES (1 << 30)  // tile indices stay far from int's limit as the loop steps by gridDim.x
#define FP8_BLOCK_COLUMN_SUM_ROWS 64    // the column sums' chunk: llmc/cuda_common.cuh's COLUMN_SUM_ROWS
static_assert(FP8_BLOCK_TILE == 2 * FP8_BLOCK_COLUMN_SUM_ROWS && FP8_BLOCK_THREADS == 2 * FP8_BLOCK_TILE,
              "the column sums: two 64-row chunks a tile, one thread per column and chunk");

// dynamic shared memory: two bf16 tiles (the double buffer), the transposed byte tile, the column amax exchange
#define FP8_BLOCK_TILE_ELEMENTS (FP8_BLOCK_TILE * FP8_BLOCK_TILE)
#define FP8_BLOCK_SMEM_CODES_OFFSET (2 * FP8_BLOCK_TILE_ELEMENTS * 2)
#define FP8_BLOCK_SMEM_AMAX_OFFSET (FP8_BLOCK_SMEM_CODES_OFFSET + FP8_BLOCK_TILE_ELEMENTS)
#define FP8_BLOCK_SMEM_BYTES (FP8_BLOCK_SMEM_AMAX_OFFSET + 4 * FP8_BLOCK_TILE * 4)

// One copy of a 1D block cast; a NULL pointer is not written. The rowwise copy of inp (rows, cols): codes (rows, cols),
// scale_inv in VEC128 layout for M = rows, K = cols (blockwise), e8m0 (rows, ceil(cols / 32)) row-major (mxfp8),
// dequantized (rows, cols). The columnwise copy: codes (cols, rows) (the transposed tensor's rowwise codes), scale_inv
// in VEC128 layout for M = cols, K = rows, e8m0 (cols, ceil(rows / 32)), dequantized (rows, cols) (inp's layout).
// k_padded (blockwise): each row of the codes (a row of inp, or of the transposed copy: a column of inp) is
// fp8_blockwise_padded_k(its length) codes long, the codes past the tensor's edge 0: cuBLASLt's block-scaled GEMMs
// reduce over whole 128-blocks only, so a GEMM whose k is not a multiple of 128 runs with k padded by zeros.
typedef struct {
    uint8_t* codes;
    float* scale_inv;
    uint8_t* e8m0;
    __nv_bfloat16* dequantized;
    int k_padded;
} Fp8BlockCopy;

FP8_HD int fp8_block_copy_wanted(const Fp8BlockCopy* copy) {
    return copy->codes || copy->scale_inv || copy->e8m0 || copy->dequantized;
}

// What a 1D blockwise cast makes its tensor from (see the top): inp itself; gelu(inp); gelu'(gelu_input) * inp, inp
// the gradient of GELU's output; LayerNorm(inp) from the row statistics and the parameters. Pointers a kind does not
// use are NULL.
enum Fp8BlockMadeFrom {
    FP8_BLOCK_FROM_INP,
    FP8_BLOCK_FROM_GELU,
    FP8_BLOCK_FROM_GELU_BACKWARD,
    FP8_BLOCK_FROM_LAYERNORM,
    FP8_BLOCK_MADE_KINDS
};
typedef struct {
    int kind;                             // Fp8BlockMadeFrom
    const __nv_bfloat16* gelu_input;      // GELU_BACKWARD: GELU's input (rows, cols), 16-byte aligned
    const float *mean, *rstd;             // LAYERNORM: (rows) each row's, 4-byte aligned
    const __nv_bfloat16 *weight, *bias;   // LAYERNORM: (cols), 16-byte aligned
} Fp8BlockMade;

// A 1D block cast: what it reads, the copies it writes, and where its amax and diagnostics go.
typedef struct {
    const __nv_bfloat16* inp;   // (rows, cols)
    int rows, cols;
    int block_len;              // FP8_BLOCKWISE_BLOCK (blockwise) or FP8_MXFP8_BLOCK (mxfp8): the cast's recipe says
    Fp8BlockCast cast;          // recipe kind, format, amax_epsilon, power_2_scale
    Fp8BlockCopy rowwise, columnwise;
    float* amax;                // (1) max |inp| max-reduced in: the slot's row 0, or a discard cell
    float* tensor_amax;         // (1) or NULL: max |inp| of this cast alone (the launcher zeroes it first)
    unsigned long long* stats;  // (3) or NULL: elements, saturated, flushed (fp8/diag.h's Fp8QuantStats), added to
    unsigned int* scale_range;  // (2) or NULL: the smallest and largest block scale (float bits) of the blocks whose
                                // amax is finite and non-zero, min- and max-reduced in (with stats: diagnostics)
    float* column_partials;     // (ceil(rows / 64), cols) or NULL: each column's 64-row chunk summed in row order in
                                // fp32 (bias_backward_partials_kernel's sums: a bias gradient's pass 1)
    Fp8BlockMade made;          // what the cast's tensor is made from inside the cast (zeros: inp itself; the others
                                // blockwise only)
} Fp8BlockCast1d;

// A 2D (128 x 128 tile) cast of a weight (rows, cols): codes (rows, cols) and codes_t (cols, rows), scale_inv in
// BLK128x128 layout for M = rows, K = cols and scale_inv_t for M = cols, K = rows (the same values, the tile grid
// transposed). amax, tensor_amax, stats, scale_range as for the 1D cast. k_padded: both codes' rows zero-padded as
// Fp8BlockCopy's (codes (rows, fp8_blockwise_padded_k(cols)), codes_t (cols, fp8_blockwise_padded_k(rows))).
typedef struct {
    const __nv_bfloat16* inp;
    int rows, cols;
    Fp8BlockCast cast;
    uint8_t *codes, *codes_t;
    float *scale_inv, *scale_inv_t;
    float* amax;
    float* tensor_amax;
    unsigned long long* stats;
    unsigned int* scale_range;
    int k_padded;
} Fp8BlockCast2d;

// ----------------------------------------------------------------------------
// the kernel's arguments: one struct for both launchers

enum Fp8BlockKind {
    FP8_BLOCK_VEC128,  // 1D, 1x128 / 128x1 blocks (blockwise)
    FP8_BLOCK_MX32,    // 1D, 1x32 / 32x1 blocks (mxfp8)
    FP8_BLOCK_TILES    // 2D, 128 x 128 tiles (blockwise weights)
};

typedef struct {
    const __nv_bfloat16* inp;  // (rows, cols)
    int rows, cols;
    int tiles_per_row;         // ceil(cols / 128): tile t at tile row t / tiles_per_row, tile column t % tiles_per_row
    int num_tiles;
    int codes_ld, codes_t_ld;  // codes per row of rowwise.codes (cols, or padded) and of columnwise.codes (rows, ...)
    Fp8BlockCast cast;
    Fp8BlockCopy rowwise, columnwise;   // 2D: rowwise.codes and columnwise.codes (codes, codes_t) only
    float *tile_scale_inv, *tile_scale_inv_t;  // 2D: BLK128x128 for (rows, cols) and (cols, rows)
    float* amax;
    float* tensor_amax;
    unsigned long long* stats;
    unsigned int* scale_range;
    size_t counted_elements;  // what the diagnostics' element count grows by (a 1D cast: one rows * cols per copy)
    float* column_partials;   // 1D: (ceil(rows / 64), cols) or NULL
    Fp8BlockMade made;        // 1D: what the tensor is made from inside the cast
} Fp8BlockKernelArgs;

// What a thread carries from tile to tile: the tensor's max |x| (float bits, NaN above inf) and, for the diagnostics,
// its counts and the block scale range (float bits).
typedef struct {
    unsigned int thread_max, scale_min, scale_max;
    Fp8CastCounts counts;
} Fp8BlockThreadState;

// One line saying why `launcher` refuses, and the error it returns
static inline cudaError_t fp8_block_refuse(const char* launcher, const char* why, int rows, int cols) {
    fprintf(stderr, "%s: %s (rows %d, cols %d)\n", launcher, why, rows, cols);
    return cudaErrorInvalidValue;
}

static inline int fp8_block_misaligned(const void* p, unsigned int bytes) { return ((uintptr_t)p & (bytes - 1)) != 0; }

#ifndef FP8_BLOCK_CASTS_EXTERN  // (the kernels, up to the checks; see "Where the kernels are compiled" above)
// ----------------------------------------------------------------------------
// small pieces

#ifndef GPTFP8_CUDA_EMULATION
__device__ __forceinline__ void fp8_cp_async16(void* smem_dst, const void* global_src, bool valid) {
    unsigned int dst = (unsigned int)__cvta_generic_to_shared(smem_dst);
    int src_bytes = valid ? 16 : 0;  // 0: nothing read, 16 zero bytes written (the tile beyond the tensor's edge)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(global_src), "r"(src_bytes)
                 : "memory");
}
__device__ __forceinline__ void fp8_cp_async_commit(void) { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void fp8_cp_async_wait_all_but_one(void) {
    asm volatile("cp.async.wait_group 1;\n" ::: "memory");
}
#else  // dev/cuda/emulate on the CPU: the destination reads 0xFF until the wait that completes the copy
static inline void fp8_cp_async16(void* smem_dst, const void* global_src, bool valid) {
    cuda_emulation_cp_async16(smem_dst, global_src, valid);
}
static inline void fp8_cp_async_commit(void) { cuda_emulation_cp_async_commit(); }
static inline void fp8_cp_async_wait_all_but_one(void) { cuda_emulation_cp_async_wait_group(1); }
#endif

// The two bf16 of a packed pair as floats (exact: a bf16 is the top half of a float)
__device__ __forceinline__ float fp8_bf16_lo(uint32_t pair) { return __uint_as_float(pair << 16); }
__device__ __forceinline__ float fp8_bf16_hi(uint32_t pair) { return __uint_as_float(pair & 0xFFFF0000u); }

// Both magnitudes of a bf16 pair (sign bits cleared, each half still ordered like the float bits: NaN above inf)
__device__ __forceinline__ uint32_t fp8_bf16x2_magnitudes(uint32_t pair) { return pair & 0x7FFF7FFFu; }

// The larger of a pair of half maxima as float bits
__device__ __forceinline__ uint32_t fp8_halves_max(uint32_t halves) {
    return max(halves << 16, halves & 0xFFFF0000u);
}

// A block's amax for its scale from some of its bf16 pairs (`words`; HALF 0: both halves of each, 1: the low halves
// only, 2: the high ones only): fp8/block.h's fp8_block_amax_merge, NaN skipped. The slow path, taken only where the
// plain maximum says a NaN is there (inlined and unrolled so that `words` stays in registers).
template <int HALF, int N>
__device__ __forceinline__ uint32_t fp8_block_amax_skip_nan(const uint32_t (&words)[N]) {
    uint32_t amax_bits = 0u;
#pragma unroll
    for (int i = 0; i < N; i++) {
        if (HALF != 2) { amax_bits = fp8_block_amax_merge(amax_bits, (words[i] << 16) & 0x7FFFFFFFu); }
        if (HALF != 1) { amax_bits = fp8_block_amax_merge(amax_bits, words[i] & 0x7FFF0000u); }
    }
    return amax_bits;
}

// Eight bf16 (four pairs) cast with `scale` into FORMAT: eight codes, first value in the lowest byte; with COUNT,
// what the cast clipped and flushed.
template <bool COUNT, int FORMAT>
__device__ __forceinline__ uint2 fp8_block_cast8_as(const uint32_t (&w)[4], float scale, Fp8CastCounts* counts) {
    const Fp8Format format = (Fp8Format)FORMAT;
    uint32_t pairs[4];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        float x0 = fp8_bf16_lo(w[j]), x1 = fp8_bf16_hi(w[j]);
        pairs[j] = fp8_cvt_pair(x0 * scale, x1 * scale, format);
        if (COUNT) {
            float fp8_max_value = fp8_max(format);
            fp8_count(counts, x0, x0 * scale, pairs[j] & 0xFFu, fp8_max_value);
            fp8_count(counts, x1, x1 * scale, pairs[j] >> 8, fp8_max_value);
        }
    }
    return make_uint2(pairs[0] | (pairs[1] << 16), pairs[2] | (pairs[3] << 16));
}

// The same with the format known only at run time. One branch around each format's conversions: with the format an
// argument, the compiler issues both formats' conversions, each under a predicate, and keeps one (twice the F2FP and
// PRMT instructions).
template <bool COUNT>
__device__ __forceinline__ uint2 fp8_block_cast8(const uint32_t (&w)[4], float scale, Fp8Format format,
                                                 Fp8CastCounts* counts) {
    if (format == FP8_E4M3) { return fp8_block_cast8_as<COUNT, FP8_E4M3>(w, scale, counts); }
    return fp8_block_cast8_as<COUNT, FP8_E5M2>(w, scale, counts);
}

// Two codes (the low 16 bits: first in the low byte) of FORMAT to the values the GEMM multiplies, fp8_to_float(code) *
// scale_inv, rounded to bf16 (a packed pair). The hardware's FP8 -> fp16 conversion is exact (every FP8 value is an
// fp16), and so is fp16 -> fp32: the product is the CPU's.
template <int FORMAT>
__device__ __forceinline__ uint32_t fp8_block_dequantize2_as(uint32_t codes, float scale_inv_lo, float scale_inv_hi) {
    __half2_raw raw = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(codes & 0xFFFFu),
                                                 FORMAT == FP8_E4M3 ? __NV_E4M3 : __NV_E5M2);
    float2 values = __half22float2(__half2(raw));
    __nv_bfloat162 out = __floats2bfloat162_rn(values.x * scale_inv_lo, values.y * scale_inv_hi);
    return *reinterpret_cast<uint32_t*>(&out);
}

// Eight codes (a rowwise cast's uint2) dequantized with one scale_inv: eight bf16, the format branched on once
template <int FORMAT>
__device__ __forceinline__ uint4 fp8_block_dequantize8_as(uint2 codes, float scale_inv) {
    return make_uint4(fp8_block_dequantize2_as<FORMAT>(codes.x, scale_inv, scale_inv),
                      fp8_block_dequantize2_as<FORMAT>(codes.x >> 16, scale_inv, scale_inv),
                      fp8_block_dequantize2_as<FORMAT>(codes.y, scale_inv, scale_inv),
                      fp8_block_dequantize2_as<FORMAT>(codes.y >> 16, scale_inv, scale_inv));
}
__device__ __forceinline__ uint4 fp8_block_dequantize8(uint2 codes, Fp8Format format, float scale_inv) {
    if (format == FP8_E4M3) { return fp8_block_dequantize8_as<FP8_E4M3>(codes, scale_inv); }
    return fp8_block_dequantize8_as<FP8_E5M2>(codes, scale_inv);
}

// What the diagnostics keep of one block: its scale in the thread's running min and max (float bits, which order
// like the positive scales), when its amax (NaN skipped) is finite and non-zero (fp8/block.h: other blocks' scales
// say nothing about the tensor).
__device__ __forceinline__ void fp8_block_scale_range_add(Fp8BlockThreadState* th, unsigned int block_amax_bits,
                                                          float scale) {
    if (block_amax_bits != 0u && block_amax_bits <= 0x7F7FFFFFu) {
        unsigned int bits = __float_as_uint(scale);
        th->scale_min = min(th->scale_min, bits);
        th->scale_max = max(th->scale_max, bits);
    }
}

// Where the 16-byte chunk `chunk` (rows chunk * 16 .. + 15 of the tile) of the transposed byte tile's row c (column c
// of the tile) lies: the chunks of a row XOR-swizzled by (c / 2) % 8, so the 8 lanes of a quarter warp, which write
// chunks of 8 different column pairs, hit 8 different bank groups (and the 8 lanes reading one row read 8 chunks).
__device__ __forceinline__ int fp8_block_codes_offset(int c, int chunk) {
    return c * FP8_BLOCK_TILE + ((chunk ^ ((c >> 1) & 7)) << 4);
}

// ----------------------------------------------------------------------------
// the passes over one tile

// Where tile `tile` starts in the tensor: its first row and column (one division; the kernel's loop makes one a trip)
typedef struct {
    int row0, col0;
} Fp8BlockTileOrigin;
__device__ __forceinline__ Fp8BlockTileOrigin fp8_block_tile_origin(const Fp8BlockKernelArgs& a, int tile) {
    const int tile_row = tile / a.tiles_per_row;
    return {tile_row * FP8_BLOCK_TILE, (tile - tile_row * a.tiles_per_row) * FP8_BLOCK_TILE};
}

// The tile at `at` into `dst` (row-major 128 x 128 bf16), zeros outside the tensor, by cp.async: thread t's 8 16-byte
// copies (rows t / 16 + 16 i, elements (t % 16) * 8 ..) all in flight at once, their sources one pointer stepped by 16
// rows (not a 64-bit product of its own a copy). A chunk is all in or all out of the tensor (cols % 8 == 0).
__device__ __forceinline__ void fp8_block_load_tile(__nv_bfloat16* dst, const Fp8BlockKernelArgs& a,
                                                    Fp8BlockTileOrigin at) {
    const int r_first = threadIdx.x / 16, c = threadIdx.x % 16 * 8;
    const bool col_inside = at.col0 + c < a.cols;
    const int rows_left = a.rows - at.row0;  // rows of the tile inside the tensor (more than 128: all)
    const size_t step = (size_t)16 * a.cols;
    const __nv_bfloat16* src = a.inp + (size_t)(at.row0 + r_first) * a.cols + at.col0 + c;
#pragma unroll
    for (int i = 0; i < 8; i++, src += step) {
        const int r = r_first + 16 * i;
        const bool valid = col_inside && r < rows_left;
        fp8_cp_async16(dst + r * FP8_BLOCK_TILE + c, valid ? src : a.inp, valid);
    }
}

// The codes by rows of one 2D tile, every element with the tile's scale: thread t casts elements (t % 16) * 8 .. + 7
// of rows t / 16 + 16 i (i < 8) and writes them straight to global memory, 8 bytes a lane (a half warp writes a
// 128-byte row); where the codes' rows are padded (codes_ld > cols), the tile's zeros past the tensor's edge go out
// as the padding's 0 codes.
template <bool COUNT>
__device__ __forceinline__ void fp8_block_tile_rows_pass(const Fp8BlockKernelArgs& a, const __nv_bfloat16* tile,
                                                         int row0, int col0, float scale, Fp8BlockThreadState* th) {
    const int cc = threadIdx.x % 16, col = col0 + cc * 8;
    if (col >= a.codes_ld) { return; }
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const int r = threadIdx.x / 16 + 16 * i, row = row0 + r;
        if (row >= a.rows) { continue; }
        const uint4 v = *reinterpret_cast<const uint4*>(tile + r * FP8_BLOCK_TILE + cc * 8);
        const uint32_t w[4] = {v.x, v.y, v.z, v.w};
        // (zeros past the edge count nothing: neither clipped nor flushed)
        const uint2 codes = fp8_block_cast8<COUNT>(w, scale, a.cast.format, &th->counts);
        *reinterpret_cast<uint2*>(a.rowwise.codes + (size_t)row * a.codes_ld + col) = codes;
    }
}

// The rowwise copy of one 1D tile. Thread t holds elements (t % 16) * 8 .. + 7 of rows t / 16 + 16 i in trip i (i <
// 8): a warp's trip is two rows; a 1x128 block is 16 neighbouring lanes (two blocks a trip), a 1x32 block 4 (eight a
// trip). Three steps, so that each block's scale is computed once, by one lane, rather than by every lane of the block
// on every trip (fp8_block_scale, an IEEE division and a reciprocal behind branches, was then about half of the
// pass's instructions, and eight chains of dependent instructions a tile that could not overlap):
//   1. every trip's block amaxes, each block's lanes' maxima met by shuffles; the warp's blocks are its "slots",
//      slot s block s % blocks_per_trip of trip s / blocks_per_trip, and lane l keeps the amax of slot l (and of
//      slot l + 32: the 64 slots of 1x32 blocks);
//   2. each lane computes its slots' scales and stores them (with the diagnostics, adds them to the scale range);
//   3. every trip again from shared memory: each lane takes its block's scale from the lane that holds it, casts, and
//      writes the codes (and the dequantized bf16) straight to global memory, 8 (16) bytes a lane; where the codes'
//      rows are padded (codes_ld > cols), the tile's zeros past the tensor's edge go out as the padding's 0 codes.
template <bool COUNT, int KIND>
__device__ __forceinline__ void fp8_block_rowwise_pass(const Fp8BlockKernelArgs& a, const __nv_bfloat16* tile,
                                                       int row0, int col0, Fp8BlockThreadState* th) {
    constexpr int lanes_per_block = KIND == FP8_BLOCK_MX32 ? FP8_MXFP8_BLOCK / 8 : FP8_BLOCKWISE_BLOCK / 8;
    constexpr int blocks_per_trip = 32 / lanes_per_block;                     // 2 or 8
    constexpr int slots = 8 * blocks_per_trip, rounds = (slots + 31) / 32;   // 16 and 1, or 64 and 2
    const Fp8Format format = a.cast.format;
    const int lane = threadIdx.x % 32, cc = threadIdx.x % 16, col = col0 + cc * 8;
    const bool col_valid = col < a.cols, col_coded = col < a.codes_ld;  // (the padding: codes only, all 0)

    uint32_t slot_amax[rounds];
#pragma unroll
    for (int round = 0; round < rounds; round++) { slot_amax[round] = 0u; }
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const int r = threadIdx.x / 16 + 16 * i;
        const uint4 v = *reinterpret_cast<const uint4*>(tile + r * FP8_BLOCK_TILE + cc * 8);
        const uint32_t w[4] = {v.x, v.y, v.z, v.w};
        uint32_t halves = __vmaxu2(__vmaxu2(fp8_bf16x2_magnitudes(w[0]), fp8_bf16x2_magnitudes(w[1])),
                                   __vmaxu2(fp8_bf16x2_magnitudes(w[2]), fp8_bf16x2_magnitudes(w[3])));
        uint32_t all = fp8_halves_max(halves);  // zeros beyond the tensor's edge: they change no maximum
        th->thread_max = max(th->thread_max, all);
        uint32_t block_amax = all > 0x7F800000u ? fp8_block_amax_skip_nan<0>(w) : all;
        // every lane shuffles (warp-uniform loops), the ones past the tensor's edge included
#pragma unroll
        for (int offset = lanes_per_block / 2; offset > 0; offset /= 2) {
            block_amax = max(block_amax, __shfl_xor_sync(0xFFFFFFFFu, block_amax, offset));
        }
        // block lane % blocks_per_trip of this trip, from its first lane, kept by the lanes whose slot it is
        const uint32_t amax_of_block = __shfl_sync(0xFFFFFFFFu, block_amax, lane % blocks_per_trip * lanes_per_block);
#pragma unroll
        for (int round = 0; round < rounds; round++) {
            if ((32 * round + lane) / blocks_per_trip == i) { slot_amax[round] = amax_of_block; }
        }
    }

    float slot_scale[rounds], slot_scale_inv[rounds];
    const int e8m0_per_row = (a.cols + FP8_MXFP8_BLOCK - 1) / FP8_MXFP8_BLOCK;
#pragma unroll
    for (int round = 0; round < rounds; round++) {
        const Fp8BlockScale s = fp8_block_scale(&a.cast, __uint_as_float(slot_amax[round]));
        slot_scale[round] = s.scale;
        slot_scale_inv[round] = s.scale_inv;
        const int slot = 32 * round + lane, first_lane = slot % blocks_per_trip * lanes_per_block;
        const int row = row0 + threadIdx.x / 32 * 2 + first_lane / 16 + 16 * (slot / blocks_per_trip);
        const int block_col = col0 + first_lane % 16 * 8;
        if (slot >= slots || row >= a.rows || block_col >= a.cols) { continue; }
        if (KIND == FP8_BLOCK_VEC128 && a.rowwise.scale_inv) {
            a.rowwise.scale_inv[fp8_vec128_scale_index((size_t)row, (size_t)(block_col / FP8_BLOCKWISE_BLOCK),
                                                       (size_t)a.rows)] = s.scale_inv;
        }
        if (KIND == FP8_BLOCK_MX32 && a.rowwise.e8m0) {
            a.rowwise.e8m0[(size_t)row * e8m0_per_row + block_col / FP8_MXFP8_BLOCK] = s.e8m0;
        }
        if (COUNT) { fp8_block_scale_range_add(th, slot_amax[round], s.scale); }
    }

#pragma unroll
    for (int i = 0; i < 8; i++) {
        const int r = threadIdx.x / 16 + 16 * i, row = row0 + r;
        const int slot = i * blocks_per_trip + lane / lanes_per_block, round = i * blocks_per_trip / 32;
        const float scale = __shfl_sync(0xFFFFFFFFu, slot_scale[round], slot % 32);
        const float scale_inv = a.rowwise.dequantized ? __shfl_sync(0xFFFFFFFFu, slot_scale_inv[round], slot % 32)
                                                      : 0.0f;
        if (row >= a.rows || !col_coded) { continue; }
        const uint4 v = *reinterpret_cast<const uint4*>(tile + r * FP8_BLOCK_TILE + cc * 8);
        const uint32_t w[4] = {v.x, v.y, v.z, v.w};
        // (zeros past the edge count nothing: neither clipped nor flushed)
        const uint2 codes = fp8_block_cast8<COUNT>(w, scale, format, &th->counts);
        if (a.rowwise.codes) { *reinterpret_cast<uint2*>(a.rowwise.codes + (size_t)row * a.codes_ld + col) = codes; }
        if (col_valid && a.rowwise.dequantized) {
            *reinterpret_cast<uint4*>(a.rowwise.dequantized + (size_t)row * a.cols + col) =
                fp8_block_dequantize8(codes, format, scale_inv);
        }
    }
}

// A column pair of the tile over 32 rows: thread t reads columns 2 (t % 64), + 1 of rows 32 (t / 64) .. + 31 (a warp
// reads 128 contiguous bytes of a row at a time), and folds their magnitudes into th->thread_max. Returns each
// column's maximum magnitude with NaN skipped in *amax_lo (column 2 (t % 64)) and *amax_hi.
__device__ __forceinline__ void fp8_block_read_column_pair(const __nv_bfloat16* tile, uint32_t (&w)[32],
                                                           uint32_t* amax_lo, uint32_t* amax_hi,
                                                           Fp8BlockThreadState* th) {
    const uint32_t* words = reinterpret_cast<const uint32_t*>(tile);
    const int p = threadIdx.x % 64, segment = threadIdx.x / 64;
    uint32_t halves = 0u;
#pragma unroll
    for (int j = 0; j < 32; j++) {
        w[j] = words[(segment * 32 + j) * (FP8_BLOCK_TILE / 2) + p];
        halves = __vmaxu2(halves, fp8_bf16x2_magnitudes(w[j]));
    }
    const uint32_t lo = halves << 16, hi = halves & 0xFFFF0000u;
    th->thread_max = max(th->thread_max, max(lo, hi));
    *amax_lo = lo > 0x7F800000u ? fp8_block_amax_skip_nan<1>(w) : lo;
    *amax_hi = hi > 0x7F800000u ? fp8_block_amax_skip_nan<2>(w) : hi;
}

// The 32 codes of one column (`high`: the high halves of w, else the low ones) cast with `scale` into FORMAT, packed 4
// to a word in row order (cvt pairs along the column: two rows' values of the same column); with COUNT, the counts.
template <bool COUNT, int FORMAT>
__device__ __forceinline__ void fp8_block_cast_column32_as(const uint32_t (&w)[32], bool high, float scale,
                                                           uint32_t (&q)[8], Fp8CastCounts* counts) {
    const Fp8Format format = (Fp8Format)FORMAT;
#pragma unroll
    for (int j = 0; j < 32; j += 2) {
        float x0 = high ? fp8_bf16_hi(w[j]) : fp8_bf16_lo(w[j]);
        float x1 = high ? fp8_bf16_hi(w[j + 1]) : fp8_bf16_lo(w[j + 1]);
        uint32_t pair = fp8_cvt_pair(x0 * scale, x1 * scale, format);
        if (j % 4 == 0) {
            q[j / 4] = pair;
        } else {
            q[j / 4] |= pair << 16;
        }
        if (COUNT) {
            float fp8_max_value = fp8_max(format);
            fp8_count(counts, x0, x0 * scale, pair & 0xFFu, fp8_max_value);
            fp8_count(counts, x1, x1 * scale, pair >> 8, fp8_max_value);
        }
    }
}

// A column pair's 64 codes (q_lo: the low halves' column cast with scale_lo, q_hi: the high halves' with scale_hi),
// the format branched on once (fp8_block_cast8's reason)
template <bool COUNT>
__device__ __forceinline__ void fp8_block_cast_column_pair(const uint32_t (&w)[32], float scale_lo, float scale_hi,
                                                           Fp8Format format, uint32_t (&q_lo)[8], uint32_t (&q_hi)[8],
                                                           Fp8CastCounts* counts) {
    if (format == FP8_E4M3) {
        fp8_block_cast_column32_as<COUNT, FP8_E4M3>(w, false, scale_lo, q_lo, counts);
        fp8_block_cast_column32_as<COUNT, FP8_E4M3>(w, true, scale_hi, q_hi, counts);
    } else {
        fp8_block_cast_column32_as<COUNT, FP8_E5M2>(w, false, scale_lo, q_lo, counts);
        fp8_block_cast_column32_as<COUNT, FP8_E5M2>(w, true, scale_hi, q_hi, counts);
    }
}

// A column pair's codes (q_lo: column c, q_hi: column c + 1; rows 32 segment .. + 31) into the transposed byte tile
__device__ __forceinline__ void fp8_block_store_codes_t(uint8_t* codes_tile, int c, int segment,
                                                        const uint32_t (&q_lo)[8], const uint32_t (&q_hi)[8]) {
#pragma unroll
    for (int half = 0; half < 2; half++) {
        const int chunk = 2 * segment + half;
        *reinterpret_cast<uint4*>(codes_tile + fp8_block_codes_offset(c, chunk)) =
            make_uint4(q_lo[4 * half], q_lo[4 * half + 1], q_lo[4 * half + 2], q_lo[4 * half + 3]);
        *reinterpret_cast<uint4*>(codes_tile + fp8_block_codes_offset(c + 1, chunk)) =
            make_uint4(q_hi[4 * half], q_hi[4 * half + 1], q_hi[4 * half + 2], q_hi[4 * half + 3]);
    }
}

// The transposed byte tile out as rows of the transposed copy codes_t (cols, ld): 8 lanes a 128-byte row, 16 bytes
// a lane; columns past the tensor's edge skipped, and rows past ld (ld is rows, a multiple of 16 so that a chunk is
// all in or all out, or rows zero-padded to a multiple of 128: the tile's zeros there go out as the padding's 0 codes).
__device__ __forceinline__ void fp8_block_write_codes_t(uint8_t* codes_t, const uint8_t* codes_tile, int ld,
                                                        int cols, int row0, int col0) {
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const int q = threadIdx.x + FP8_BLOCK_THREADS * k, c = q / 8, chunk = q % 8;
        if (col0 + c < cols && row0 + chunk * 16 < ld) {
            *reinterpret_cast<uint4*>(codes_t + (size_t)(col0 + c) * ld + row0 + chunk * 16) =
                *reinterpret_cast<const uint4*>(codes_tile + fp8_block_codes_offset(c, chunk));
        }
    }
}

// A column pair's 32 rows of codes (q_lo, q_hi as fp8_block_cast_column_pair packs them) dequantized into `out` (the
// pair's first row, inp's layout, ld bf16 a row), one bf16x2 a row, the rows from rows_left on (past the tensor's edge)
// not written
template <int FORMAT>
__device__ __forceinline__ void fp8_block_dequantize_column_pair_as(__nv_bfloat16* out, int ld, int rows_left,
                                                                    const uint32_t (&q_lo)[8],
                                                                    const uint32_t (&q_hi)[8], float scale_inv_lo,
                                                                    float scale_inv_hi) {
#pragma unroll
    for (int j = 0; j < 32; j++) {
        // row j's two codes: byte j % 4 of word j / 4 of each column
        uint32_t pair = __byte_perm(q_lo[j / 4], q_hi[j / 4], (j % 4) | ((4 + j % 4) << 4));
        if (j < rows_left) {
            reinterpret_cast<uint32_t*>(out + (size_t)j * ld)[0] =
                fp8_block_dequantize2_as<FORMAT>(pair, scale_inv_lo, scale_inv_hi);
        }
    }
}

// The columnwise copy of one 1D tile: thread t's column pair over 32 rows; a 32x1 block is the thread's own, a 128x1
// block the 4 row segments' maxima met in shared memory. Codes into the transposed byte tile (written out after the
// caller's barrier), the dequantized bf16 pairs straight to global memory in inp's layout, the scales by the thread
// that owns the block (its first segment, for 128x1).
template <bool COUNT, int KIND>
__device__ __forceinline__ void fp8_block_columnwise_pass(const Fp8BlockKernelArgs& a, const __nv_bfloat16* tile,
                                                          uint8_t* codes_tile, unsigned int* column_amax, int row0,
                                                          int col0, Fp8BlockThreadState* th) {
    const Fp8Format format = a.cast.format;
    const int p = threadIdx.x % 64, segment = threadIdx.x / 64, c = 2 * p, col = col0 + c;
    const bool col_valid = col < a.cols;  // both columns of the pair: cols % 8 == 0
    uint32_t w[32], amax_lo, amax_hi;
    fp8_block_read_column_pair(tile, w, &amax_lo, &amax_hi, th);
    if (KIND == FP8_BLOCK_VEC128) {  // the block is the tile's 128 rows: the max of the 4 segments'
        *reinterpret_cast<uint2*>(&column_amax[segment * FP8_BLOCK_TILE + c]) = make_uint2(amax_lo, amax_hi);
        __syncthreads();
#pragma unroll
        for (int s = 0; s < 4; s++) {
            uint2 other = *reinterpret_cast<const uint2*>(&column_amax[s * FP8_BLOCK_TILE + c]);
            amax_lo = max(amax_lo, other.x);
            amax_hi = max(amax_hi, other.y);
        }
    }
    const Fp8BlockScale s_lo = fp8_block_scale(&a.cast, __uint_as_float(amax_lo));
    const Fp8BlockScale s_hi = fp8_block_scale(&a.cast, __uint_as_float(amax_hi));
    uint32_t q_lo[8], q_hi[8];
    // the counts only for the elements inside the tensor (the others are zeros, which count nothing anyway)
    fp8_block_cast_column_pair<COUNT>(w, s_lo.scale, s_hi.scale, format, q_lo, q_hi, &th->counts);
    if (a.columnwise.codes) { fp8_block_store_codes_t(codes_tile, c, segment, q_lo, q_hi); }
    if (!col_valid) { return; }
    if (a.columnwise.dequantized) {
        __nv_bfloat16* out = a.columnwise.dequantized + (size_t)(row0 + segment * 32) * a.cols + col;
        const int rows_left = a.rows - (row0 + segment * 32);
        if (format == FP8_E4M3) {
            fp8_block_dequantize_column_pair_as<FP8_E4M3>(out, a.cols, rows_left, q_lo, q_hi, s_lo.scale_inv,
                                                          s_hi.scale_inv);
        } else {
            fp8_block_dequantize_column_pair_as<FP8_E5M2>(out, a.cols, rows_left, q_lo, q_hi, s_lo.scale_inv,
                                                          s_hi.scale_inv);
        }
    }
    if (KIND == FP8_BLOCK_VEC128 && segment == 0) {
        if (a.columnwise.scale_inv) {
            const size_t k_block = (size_t)(row0 / FP8_BLOCKWISE_BLOCK);
            a.columnwise.scale_inv[fp8_vec128_scale_index((size_t)col, k_block, (size_t)a.cols)] = s_lo.scale_inv;
            a.columnwise.scale_inv[fp8_vec128_scale_index((size_t)col + 1, k_block, (size_t)a.cols)] = s_hi.scale_inv;
        }
        if (COUNT) {
            fp8_block_scale_range_add(th, amax_lo, s_lo.scale);
            fp8_block_scale_range_add(th, amax_hi, s_hi.scale);
        }
    }
    if (KIND == FP8_BLOCK_MX32 && row0 + segment * 32 < a.rows) {
        if (a.columnwise.e8m0) {
            const size_t per_column = (size_t)((a.rows + FP8_MXFP8_BLOCK - 1) / FP8_MXFP8_BLOCK);
            const size_t k_block = (size_t)(row0 / FP8_MXFP8_BLOCK + segment);
            a.columnwise.e8m0[(size_t)col * per_column + k_block] = s_lo.e8m0;
            a.columnwise.e8m0[(size_t)(col + 1) * per_column + k_block] = s_hi.e8m0;
        }
        if (COUNT) {
            fp8_block_scale_range_add(th, amax_lo, s_lo.scale);
            fp8_block_scale_range_add(th, amax_hi, s_hi.scale);
        }
    }
}

// One 128 x 128 tile of a 2D cast: the tile's amax (NaN skipped) from every thread's column pair, met in shared
// memory; the transposed codes from the registers into the byte tile, the codes by rows from the bf16 tile (the
// counts there: one cast), the two scale_invs by thread 0. Leaves the byte tile for the caller to write out.
template <bool COUNT>
__device__ __forceinline__ void fp8_block_tile_pass(const Fp8BlockKernelArgs& a, const __nv_bfloat16* tile,
                                                    uint8_t* codes_tile, int row0, int col0, Fp8BlockThreadState* th) {
    __shared__ unsigned int warp_amax[FP8_BLOCK_THREADS / 32];
    const int p = threadIdx.x % 64, segment = threadIdx.x / 64;
    uint32_t w[32], amax_lo, amax_hi;
    fp8_block_read_column_pair(tile, w, &amax_lo, &amax_hi, th);
    unsigned int warp_max = __reduce_max_sync(0xFFFFFFFFu, max(amax_lo, amax_hi));
    if (threadIdx.x % 32 == 0) { warp_amax[threadIdx.x / 32] = warp_max; }
    __syncthreads();
    uint32_t tile_amax = 0u;
#pragma unroll
    for (int i = 0; i < FP8_BLOCK_THREADS / 32; i++) { tile_amax = max(tile_amax, warp_amax[i]); }
    const Fp8BlockScale s = fp8_block_scale(&a.cast, __uint_as_float(tile_amax));
    uint32_t q_lo[8], q_hi[8];
    fp8_block_cast_column_pair<false>(w, s.scale, s.scale, a.cast.format, q_lo, q_hi, &th->counts);
    fp8_block_store_codes_t(codes_tile, 2 * p, segment, q_lo, q_hi);
    fp8_block_tile_rows_pass<COUNT>(a, tile, row0, col0, s.scale, th);
    if (threadIdx.x == 0) {
        const size_t tile_m = (size_t)(row0 / FP8_BLOCK_TILE), tile_k = (size_t)(col0 / FP8_BLOCK_TILE);
        a.tile_scale_inv[fp8_blk128_scale_index(tile_m, tile_k, (size_t)a.cols)] = s.scale_inv;
        a.tile_scale_inv_t[fp8_blk128_scale_index(tile_k, tile_m, (size_t)a.rows)] = s.scale_inv;
        if (COUNT) { fp8_block_scale_range_add(th, tile_amax, s.scale); }
    }
}

// The column sums of one tile (a 1D cast's column_partials): thread t sums column t % 128 of the tile's 64-row chunk
// t / 128 from the bf16 tile, row by row from 0.0f in fp32, the rows past the tensor's edge not added (the tile holds
// zeros there, and 0.0f added to a sum of -0.0f would make it +0.0f): bias_backward_partials_kernel's chunk, order and
// adds, so the same bits. Chunks and columns wholly outside the tensor write nothing.
__device__ __forceinline__ void fp8_block_column_sums(const Fp8BlockKernelArgs& a, const __nv_bfloat16* tile,
                                                      int row0, int col0) {
    const int c = threadIdx.x % FP8_BLOCK_TILE, chunk = threadIdx.x / FP8_BLOCK_TILE;
    const int col = col0 + c, first_row = row0 + chunk * FP8_BLOCK_COLUMN_SUM_ROWS;
    if (col >= a.cols || first_row >= a.rows) { return; }
    const int n = min(FP8_BLOCK_COLUMN_SUM_ROWS, a.rows - first_row);
    const unsigned short* column =
        reinterpret_cast<const unsigned short*>(tile) + chunk * FP8_BLOCK_COLUMN_SUM_ROWS * FP8_BLOCK_TILE + c;
    float sum = 0.0f;
    if (n == FP8_BLOCK_COLUMN_SUM_ROWS) {  // every chunk but the tensor's last: the loads unrolled ahead of the adds
#pragma unroll 16
        for (int r = 0; r < FP8_BLOCK_COLUMN_SUM_ROWS; r++) {
            sum += __uint_as_float((uint32_t)column[r * FP8_BLOCK_TILE] << 16);
        }
    } else {
        for (int r = 0; r < n; r++) { sum += __uint_as_float((uint32_t)column[r * FP8_BLOCK_TILE] << 16); }
    }
    a.column_partials[(size_t)(first_row / FP8_BLOCK_COLUMN_SUM_ROWS) * a.cols + col] = sum;
}

// ----------------------------------------------------------------------------
// the kernel: a persistent loop over the tiles, double-buffered

// The tensor made inside the cast (Fp8BlockMade): each chunk of 8 bf16 this thread's own cp.async copies
// (fp8_block_load_tile's) brought into `tile`, within the tensor, replaced by what `make` makes of it (row and column:
// the chunk's first element in the tensor; the column a multiple of 8). Only its own: its cp.async wait made them
// visible to it; the tile's barrier after this makes the new values visible to the others. Chunks beyond the tensor's
// edge stay zeros.
template <typename Make>
__device__ __forceinline__ void fp8_block_make_own_chunks(__nv_bfloat16* tile, const Fp8BlockKernelArgs& a,
                                                          Fp8BlockTileOrigin at, const Make& make) {
    const int r_first = threadIdx.x / 16, c = threadIdx.x % 16 * 8;
    if (at.col0 + c >= a.cols) { return; }
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const int r = r_first + 16 * i;
        if (at.row0 + r >= a.rows) { continue; }
        uint4* chunk = reinterpret_cast<uint4*>(tile + r * FP8_BLOCK_TILE + c);  // 16 bytes in, 16 out
        *chunk = make(*chunk, at.row0 + r, at.col0 + c);
    }
}

// What each kind makes of a chunk, element by element as the separate kernels do (the same bytes): gelu(x) in bf16 as
// llmc/gelu.cuh's gelu_forward8 (gelu_value in fp32, rounded to nearest even); gelu'(x) * dout as gelu_backward8, the
// chunk being dout and x the same 8 elements of GELU's input (one 16-byte load); LayerNorm as llmc/layernorm.cuh's
// layernorm_output8, with the row's mean and rstd and the 8 columns' weight and bias.
struct Fp8BlockMakeGelu {
    __device__ __forceinline__ uint4 operator()(uint4 packed, int, int) const {
        __nv_bfloat16* values = reinterpret_cast<__nv_bfloat16*>(&packed);
#pragma unroll
        for (int j = 0; j < 8; j++) { values[j] = __float2bfloat16_rn(gelu_value(__bfloat162float(values[j]))); }
        return packed;
    }
};
struct Fp8BlockMakeGeluBackward {
    const __nv_bfloat16* gelu_input;
    int cols;
    __device__ __forceinline__ uint4 operator()(uint4 packed, int row, int col) const {
        uint4 x_packed = *reinterpret_cast<const uint4*>(gelu_input + (size_t)row * cols + col);
        __nv_bfloat16* values = reinterpret_cast<__nv_bfloat16*>(&packed);
        const __nv_bfloat16* x = reinterpret_cast<const __nv_bfloat16*>(&x_packed);
#pragma unroll
        for (int j = 0; j < 8; j++) {
            values[j] = __float2bfloat16_rn(gelu_derivative(__bfloat162float(x[j])) * __bfloat162float(values[j]));
        }
        return packed;
    }
};
struct Fp8BlockMakeLayerNorm {
    const Fp8BlockMade* made;
    __device__ __forceinline__ uint4 operator()(uint4 packed, int row, int col) const {
        return layernorm_output8(packed, made->mean[row], made->rstd[row],
                                 *reinterpret_cast<const uint4*>(made->weight + col),
                                 *reinterpret_cast<const uint4*>(made->bias + col));
    }
};

// The end of a cast, every thread: the CTA's max |x| into *amax (and *tensor_amax), and with COUNT its counts and
// scale range into the diagnostics (CTA 0 adds the element count).
template <bool COUNT>
__device__ __forceinline__ void fp8_block_cast_finish(const Fp8BlockThreadState* th, const Fp8BlockKernelArgs& a) {
    unsigned int cta_max = fp8_block_max(th->thread_max);
    if (threadIdx.x == 0 && cta_max != 0u) {
        atomicMax(reinterpret_cast<unsigned int*>(a.amax), cta_max);
        if (a.tensor_amax) { atomicMax(reinterpret_cast<unsigned int*>(a.tensor_amax), cta_max); }
    }
    if (!COUNT) { return; }
    __syncthreads();  // fp8_block_counts_to_global's cells after fp8_block_max's
    fp8_block_counts_to_global(th->counts, a.stats, a.counted_elements, blockIdx.x == 0);
    unsigned int scale_min = __reduce_min_sync(0xFFFFFFFFu, th->scale_min);
    unsigned int scale_max = __reduce_max_sync(0xFFFFFFFFu, th->scale_max);
    if (threadIdx.x % 32 == 0 && scale_max != 0u) {  // a warp that saw a block with a finite non-zero amax
        atomicMin(&a.scale_range[0], scale_min);
        atomicMax(&a.scale_range[1], scale_max);
    }
}

// SUMS: the 1D cast's column partials; MADE: what the tensor is made from inside the cast (Fp8BlockMadeFrom; each an
// instance of its own, so the casts without them compile as they did)
template <bool COUNT, int KIND, bool SUMS, int MADE>
__global__ void __launch_bounds__(FP8_BLOCK_THREADS, FP8_BLOCK_CTAS_PER_SM)
    fp8_block_cast_kernel(const __grid_constant__ Fp8BlockKernelArgs a) {
    extern __shared__ __align__(16) unsigned char fp8_block_smem[];
    __nv_bfloat16* tiles = reinterpret_cast<__nv_bfloat16*>(fp8_block_smem);  // [2][128][128]: the double buffer
    uint8_t* codes_tile = fp8_block_smem + FP8_BLOCK_SMEM_CODES_OFFSET;          // [128][128] swizzled: codes_t
    unsigned int* column_amax = reinterpret_cast<unsigned int*>(fp8_block_smem + FP8_BLOCK_SMEM_AMAX_OFFSET);
    const bool rowwise = KIND == FP8_BLOCK_TILES || fp8_block_copy_wanted(&a.rowwise);
    const bool columnwise = KIND != FP8_BLOCK_TILES && fp8_block_copy_wanted(&a.columnwise);
    const bool codes_t = a.columnwise.codes != NULL;  // 2D: always (the launcher checks)
    Fp8BlockThreadState th = {0u, 0xFFFFFFFFu, 0u, {0u, 0u}};

    int tile = blockIdx.x;  // the launcher's grid is at most num_tiles: every CTA has one
    Fp8BlockTileOrigin at = fp8_block_tile_origin(a, tile);
    fp8_block_load_tile(tiles, a, at);
    fp8_cp_async_commit();
    for (int k = 0; tile < a.num_tiles; k++, tile += gridDim.x) {
        const int next = tile + gridDim.x;
        const Fp8BlockTileOrigin next_at = fp8_block_tile_origin(a, next);
        if (next < a.num_tiles) { fp8_block_load_tile(tiles + ((k + 1) & 1) * FP8_BLOCK_TILE_ELEMENTS, a, next_at); }
        fp8_cp_async_commit();           // (an empty group on the last trip: the wait below still means this tile)
        fp8_cp_async_wait_all_but_one();  // this thread's copies of tile `tile` have landed...
        __nv_bfloat16* landed = tiles + (k & 1) * FP8_BLOCK_TILE_ELEMENTS;
        if (MADE == FP8_BLOCK_FROM_GELU) { fp8_block_make_own_chunks(landed, a, at, Fp8BlockMakeGelu{}); }
        if (MADE == FP8_BLOCK_FROM_GELU_BACKWARD) {
            fp8_block_make_own_chunks(landed, a, at, Fp8BlockMakeGeluBackward{a.made.gelu_input, a.cols});
        }
        if (MADE == FP8_BLOCK_FROM_LAYERNORM) {
            fp8_block_make_own_chunks(landed, a, at, Fp8BlockMakeLayerNorm{&a.made});
        }
        __syncthreads();                  // ...and every thread's (with MADE: the tensor made from them)
        const __nv_bfloat16* t = landed;
        if (KIND == FP8_BLOCK_TILES) {
            fp8_block_tile_pass<COUNT>(a, t, codes_tile, at.row0, at.col0, &th);
        } else {
            if (rowwise) { fp8_block_rowwise_pass<COUNT, KIND>(a, t, at.row0, at.col0, &th); }
            if (columnwise) {
                fp8_block_columnwise_pass<COUNT, KIND>(a, t, codes_tile, column_amax, at.row0, at.col0, &th);
            }
            if (SUMS) { fp8_block_column_sums(a, t, at.row0, at.col0); }  // t stays until the loop's last barrier
        }
        if (codes_t) {
            __syncthreads();  // the byte tile complete
            fp8_block_write_codes_t(a.columnwise.codes, codes_tile, a.codes_t_ld, a.cols, at.row0, at.col0);
        }
        __syncthreads();  // this tile's buffer, byte tile and amax cells read before the next trip overwrites them
        at = next_at;
    }
    fp8_block_cast_finish<COUNT>(&th, a);
}

// ----------------------------------------------------------------------------
// launchers (asynchronous on `stream`; they return the launch error, the caller checks it)

// The launch of one kernel instance over the tiles: a persistent grid of FP8_BLOCK_CTAS_PER_SM CTAs per SM (no more
// than there are tiles), its dynamic shared memory allowed once per device.
template <bool COUNT, int KIND, bool SUMS, int MADE>
static inline cudaError_t fp8_block_cast_launch(const Fp8BlockKernelArgs* a, cudaStream_t stream) {
    static int configured_device = -1, num_sms = 0;  // per instance: the attribute is per function
    int device;
    cudaError_t err = cudaGetDevice(&device);
    if (err != cudaSuccess) { return err; }
    if (device != configured_device) {
        err = cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, device);
        if (err == cudaSuccess) {
            err = cudaFuncSetAttribute(fp8_block_cast_kernel<COUNT, KIND, SUMS, MADE>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, FP8_BLOCK_SMEM_BYTES);
        }
        if (err != cudaSuccess) { return err; }
        configured_device = device;
    }
    long long ctas = (long long)num_sms * FP8_BLOCK_CTAS_PER_SM;
    int grid = (int)(a->num_tiles < ctas ? a->num_tiles : ctas);
    fp8_block_cast_kernel<COUNT, KIND, SUMS, MADE><<<grid, FP8_BLOCK_THREADS, FP8_BLOCK_SMEM_BYTES, stream>>>(*a);
    return cudaGetLastError();
}

// The kernel instance for a's outputs: with or without the diagnostics' counting, with or without the column sums
// (a 1D cast's only), with its tensor made inside or not (blockwise's 1D instances only: the 1D launcher refuses it
// under mxfp8, and the 2D one never makes it)
template <int KIND, int MADE>
static inline cudaError_t fp8_block_cast_run_instance(const Fp8BlockKernelArgs* a, cudaStream_t stream) {
    constexpr bool SUMS = KIND != FP8_BLOCK_TILES;  // (no 2D instance with the sums)
    if (SUMS && a->column_partials) {
        return a->stats ? fp8_block_cast_launch<true, KIND, SUMS, MADE>(a, stream)
                        : fp8_block_cast_launch<false, KIND, SUMS, MADE>(a, stream);
    }
    return a->stats ? fp8_block_cast_launch<true, KIND, false, MADE>(a, stream)
                    : fp8_block_cast_launch<false, KIND, false, MADE>(a, stream);
}

template <int KIND>
static inline cudaError_t fp8_block_cast_run(const Fp8BlockKernelArgs* a, cudaStream_t stream) {
    if (a->tensor_amax) {
        cudaError_t err = cudaMemsetAsync(a->tensor_amax, 0, sizeof(float), stream);
        if (err != cudaSuccess) { return err; }
    }
    constexpr bool MADE_OK = KIND == FP8_BLOCK_VEC128;  // (the other kinds compile no instance that makes its tensor)
    switch (MADE_OK ? a->made.kind : FP8_BLOCK_FROM_INP) {
        case FP8_BLOCK_FROM_GELU:
            return fp8_block_cast_run_instance<KIND, MADE_OK ? FP8_BLOCK_FROM_GELU : 0>(a, stream);
        case FP8_BLOCK_FROM_GELU_BACKWARD:
            return fp8_block_cast_run_instance<KIND, MADE_OK ? FP8_BLOCK_FROM_GELU_BACKWARD : 0>(a, stream);
        case FP8_BLOCK_FROM_LAYERNORM:
            return fp8_block_cast_run_instance<KIND, MADE_OK ? FP8_BLOCK_FROM_LAYERNORM : 0>(a, stream);
        default: return fp8_block_cast_run_instance<KIND, FP8_BLOCK_FROM_INP>(a, stream);
    }
}

#endif  // FP8_BLOCK_CASTS_EXTERN

// The checks both launchers share: sizes, the tile count, the bf16 input, the amax and diagnostics cells
static inline cudaError_t fp8_block_cast_check_common(const char* launcher, const __nv_bfloat16* inp, int rows,
                                                      int cols, const float* amax, const float* tensor_amax,
                                                      const unsigned long long* stats,
                                                      const unsigned int* scale_range) {
    if (rows <= 0 || cols <= 0) { return fp8_block_refuse(launcher, "an empty tensor", rows, cols); }
    if (cols % 8 != 0) {
        return fp8_block_refuse(launcher, "cols is not a multiple of 8 (the 16-byte bf16 loads)", rows, cols);
    }
    if (((long long)rows + FP8_BLOCK_TILE - 1) / FP8_BLOCK_TILE * (((long long)cols + FP8_BLOCK_TILE - 1) /
                                                                   FP8_BLOCK_TILE) > FP8_BLOCK_MAX_TILES) {
        return fp8_block_refuse(launcher, "more 128 x 128 tiles than the grid loop counts (2^30)", rows, cols);
    }
    if (fp8_block_misaligned(inp, 16)) {
        return fp8_block_refuse(launcher, "the bf16 input is not 16-byte aligned (its 16-byte loads)", rows, cols);
    }
    if (amax == NULL || fp8_block_misaligned(amax, 4) || fp8_block_misaligned(tensor_amax, 4)) {
        return fp8_block_refuse(launcher, "no amax cell, or an amax cell not 4-byte aligned", rows, cols);
    }
    if ((stats != NULL) != (scale_range != NULL) || fp8_block_misaligned(stats, 8) ||
        fp8_block_misaligned(scale_range, 4)) {
        return fp8_block_refuse(launcher, "the diagnostics need both stats (8-byte aligned) and scale_range", rows,
                                cols);
    }
    return cudaSuccess;
}

// Checks a 1D cast's shapes and pointers (see the top); cudaErrorInvalidValue, with one line, when they do not hold.
static inline cudaError_t fp8_block_cast_1d_check(const Fp8BlockCast1d* a) {
    const char* launcher = "fp8_block_cast_1d";
    const int mxfp8 = a->cast.scaling == FP8_SCALING_MXFP8;
    if (a->cast.scaling != FP8_SCALING_BLOCKWISE && !mxfp8) {
        return fp8_block_refuse(launcher, "not a block recipe (blockwise or mxfp8)", a->rows, a->cols);
    }
    if (a->block_len != (mxfp8 ? FP8_MXFP8_BLOCK : FP8_BLOCKWISE_BLOCK)) {
        return fp8_block_refuse(launcher, "block_len is not the recipe's (blockwise 128, mxfp8 32)", a->rows, a->cols);
    }
    if ((mxfp8 && (a->rowwise.scale_inv || a->columnwise.scale_inv)) ||
        (!mxfp8 && (a->rowwise.e8m0 || a->columnwise.e8m0))) {
        return fp8_block_refuse(launcher, "VEC128 scale_invs are blockwise's, E8M0 bytes mxfp8's", a->rows, a->cols);
    }
    if (!fp8_block_copy_wanted(&a->rowwise) && !fp8_block_copy_wanted(&a->columnwise)) {  // its amax would go unmerged
        return fp8_block_refuse(launcher, "no copy asked for (rowwise or columnwise)", a->rows, a->cols);
    }
    const Fp8BlockMade* made = &a->made;
    if (made->kind < 0 || made->kind >= FP8_BLOCK_MADE_KINDS || (made->kind != FP8_BLOCK_FROM_INP && mxfp8)) {
        return fp8_block_refuse(launcher, "made.kind is not an Fp8BlockMadeFrom, or the tensor is made inside the cast "
                                "under mxfp8 (blockwise's only)", a->rows, a->cols);
    }
    const int gelu_backward = made->kind == FP8_BLOCK_FROM_GELU_BACKWARD, layernorm = made->kind == FP8_BLOCK_FROM_LAYERNORM;
    if (gelu_backward != (made->gelu_input != NULL) || fp8_block_misaligned(made->gelu_input, 16)) {
        return fp8_block_refuse(launcher, "GELU's backward inside takes GELU's input, 16-byte aligned, and only it does",
                                a->rows, a->cols);
    }
    int ln_pointers = (made->mean != NULL) + (made->rstd != NULL) + (made->weight != NULL) + (made->bias != NULL);
    if (ln_pointers != (layernorm ? 4 : 0) || fp8_block_misaligned(made->mean, 4) ||
        fp8_block_misaligned(made->rstd, 4) || fp8_block_misaligned(made->weight, 16) ||
        fp8_block_misaligned(made->bias, 16)) {
        return fp8_block_refuse(launcher, "LayerNorm inside takes the row means and rstds (4-byte aligned) and its weight "
                                "and bias (16-byte aligned), and only it does", a->rows, a->cols);
    }
    cudaError_t err = fp8_block_cast_check_common(launcher, a->inp, a->rows, a->cols, a->amax, a->tensor_amax,
                                                  a->stats, a->scale_range);
    if (err != cudaSuccess) { return err; }
    if ((a->rowwise.k_padded || a->columnwise.k_padded) && mxfp8) {
        return fp8_block_refuse(launcher, "codes zero-padded along k are blockwise's (cuBLASLt's block-scaled GEMMs)",
                                a->rows, a->cols);
    }
    if (a->columnwise.codes && !a->columnwise.k_padded && a->rows % 16 != 0) {
        return fp8_block_refuse(launcher, "the columnwise codes need rows a multiple of 16 (their 16-byte stores), or "
                                "zero-padded to a multiple of 128", a->rows, a->cols);
    }
    if (fp8_block_misaligned(a->rowwise.codes, 8) || fp8_block_misaligned(a->rowwise.dequantized, 16) ||
        fp8_block_misaligned(a->columnwise.codes, 16) || fp8_block_misaligned(a->columnwise.dequantized, 4) ||
        fp8_block_misaligned(a->rowwise.scale_inv, 4) || fp8_block_misaligned(a->columnwise.scale_inv, 4)) {
        return fp8_block_refuse(launcher, "an output is misaligned (rowwise codes 8 bytes, rowwise dequantized and "
                                "columnwise codes 16, columnwise dequantized and scale_invs 4)", a->rows, a->cols);
    }
    if (fp8_block_misaligned(a->column_partials, 4)) {
        return fp8_block_refuse(launcher, "the column partials are not 4-byte aligned (one float a column and chunk)",
                                a->rows, a->cols);
    }
    return cudaSuccess;
}

// The 1D launcher: zeroes *tensor_amax (when given), then one launch over the tiles. With stats (and scale_range) the
// counting kernel, else the lean one.
#ifdef FP8_BLOCK_CASTS_EXTERN
cudaError_t fp8_block_cast_1d(const Fp8BlockCast1d* a, cudaStream_t stream);  // (in fp8/block_quantize.o)
#else
FP8_BLOCK_LAUNCHER cudaError_t fp8_block_cast_1d(const Fp8BlockCast1d* a, cudaStream_t stream) {
    cudaError_t err = fp8_block_cast_1d_check(a);
    if (err != cudaSuccess) { return err; }
    const int tiles_per_row = (a->cols + FP8_BLOCK_TILE - 1) / FP8_BLOCK_TILE;
    const int tile_rows = (a->rows + FP8_BLOCK_TILE - 1) / FP8_BLOCK_TILE;
    const size_t copies = (size_t)fp8_block_copy_wanted(&a->rowwise) + (size_t)fp8_block_copy_wanted(&a->columnwise);
    const int codes_ld = a->rowwise.k_padded ? (int)fp8_blockwise_padded_k((size_t)a->cols) : a->cols;
    const int codes_t_ld = a->columnwise.k_padded ? (int)fp8_blockwise_padded_k((size_t)a->rows) : a->rows;
    Fp8BlockKernelArgs k = {a->inp, a->rows, a->cols, tiles_per_row, tiles_per_row * tile_rows, codes_ld, codes_t_ld,
                            a->cast, a->rowwise, a->columnwise, NULL, NULL, a->amax, a->tensor_amax, a->stats,
                            a->scale_range, copies * (size_t)a->rows * (size_t)a->cols, a->column_partials, a->made};
    return a->cast.scaling == FP8_SCALING_MXFP8 ? fp8_block_cast_run<FP8_BLOCK_MX32>(&k, stream)
                                                : fp8_block_cast_run<FP8_BLOCK_VEC128>(&k, stream);
}
#endif

// Checks a 2D cast's shapes and pointers (see the top); cudaErrorInvalidValue, with one line, when they do not hold.
static inline cudaError_t fp8_block_cast_2d_check(const Fp8BlockCast2d* a) {
    const char* launcher = "fp8_block_cast_2d";
    if (a->cast.scaling != FP8_SCALING_BLOCKWISE) {
        return fp8_block_refuse(launcher, "128x128 tiles are blockwise's only", a->rows, a->cols);
    }
    cudaError_t err = fp8_block_cast_check_common(launcher, a->inp, a->rows, a->cols, a->amax, a->tensor_amax,
                                                  a->stats, a->scale_range);
    if (err != cudaSuccess) { return err; }
    if (a->rows % 16 != 0 && !a->k_padded) {
        return fp8_block_refuse(launcher, "rows is not a multiple of 16 (the transposed codes' 16-byte stores), and "
                                "the codes are not zero-padded to a multiple of 128", a->rows, a->cols);
    }
    if (!a->codes || !a->codes_t || !a->scale_inv || !a->scale_inv_t) {
        return fp8_block_refuse(launcher, "the codes, the transposed codes and both scale_inv arrays are all written",
                                a->rows, a->cols);
    }
    if (fp8_block_misaligned(a->codes, 8) || fp8_block_misaligned(a->codes_t, 16) ||
        fp8_block_misaligned(a->scale_inv, 4) || fp8_block_misaligned(a->scale_inv_t, 4)) {
        return fp8_block_refuse(launcher, "an output is misaligned (codes 8 bytes, transposed codes 16, scale_invs 4)",
                                a->rows, a->cols);
    }
    return cudaSuccess;
}

// The 2D launcher: zeroes *tensor_amax (when given), then one launch over the tiles.
#ifdef FP8_BLOCK_CASTS_EXTERN
cudaError_t fp8_block_cast_2d(const Fp8BlockCast2d* a, cudaStream_t stream);  // (in fp8/block_quantize.o)
#else
FP8_BLOCK_LAUNCHER cudaError_t fp8_block_cast_2d(const Fp8BlockCast2d* a, cudaStream_t stream) {
    cudaError_t err = fp8_block_cast_2d_check(a);
    if (err != cudaSuccess) { return err; }
    const int tiles_per_row = (a->cols + FP8_BLOCK_TILE - 1) / FP8_BLOCK_TILE;
    const int tile_rows = (a->rows + FP8_BLOCK_TILE - 1) / FP8_BLOCK_TILE;
    Fp8BlockCopy rowwise = {a->codes, NULL, NULL, NULL, a->k_padded};
    Fp8BlockCopy columnwise = {a->codes_t, NULL, NULL, NULL, a->k_padded};
    const int codes_ld = a->k_padded ? (int)fp8_blockwise_padded_k((size_t)a->cols) : a->cols;
    const int codes_t_ld = a->k_padded ? (int)fp8_blockwise_padded_k((size_t)a->rows) : a->rows;
    Fp8BlockKernelArgs k = {a->inp, a->rows, a->cols, tiles_per_row, tiles_per_row * tile_rows, codes_ld, codes_t_ld,
                            a->cast, rowwise, columnwise, a->scale_inv, a->scale_inv_t, a->amax, a->tensor_amax,
                            a->stats, a->scale_range, (size_t)a->rows * (size_t)a->cols, NULL,
                            {FP8_BLOCK_FROM_INP, NULL, NULL, NULL, NULL, NULL}};
    return fp8_block_cast_run<FP8_BLOCK_TILES>(&k, stream);
}
#endif

#endif  // GPTFP8_BLOCK_QUANTIZE_CUH
