/*
fp8/block_quantize.cuh — the GPU casts of the block recipes (-fp8_recipe blockwise | mxfp8, fp8/block.h): every block
of a bf16 tensor is cast with the scale of its own amax, computed inside the cast by the CPU's own scale rules
(fp8_block_scale, host + device), so a block's codes and scale are the CPU reference's bit for bit.

Two kernel families, one read of the bf16 tensor each:
  fp8_block_cast_1d   1 x block_len blocks along the rows (the rowwise copy) and/or block_len x 1 blocks down the
                      columns (the columnwise copy, written transposed: the operand a TN GEMM reducing over the rows
                      reads), both from the same tile in shared memory. block_len 128: blockwise activations and
                      gradients, fp32 scale_invs in cuBLASLt's VEC128 layout; 32: mxfp8, E8M0 scales, and the values
                      dequantized to bf16 for the emulated GEMM (Hopper has no MXFP8 GEMM).
  fp8_block_cast_2d   128 x 128 tiles (blockwise weights): the codes, the transposed codes (a tile is the same block
                      both ways: one amax, one scale), and the scale_invs of both in cuBLASLt's BLK128x128 layout.
Each copy a 1D cast makes is a cast of its own, as on the CPU (a columnwise copy is cast from the bf16 values, not
from the rowwise codes): each counts its elements in the diagnostics. The tensor's amax is max-reduced into the slot's
row 0 (float bits, NaN above inf: fp8_amax_merge's order) and, when asked, into a cell of this cast alone (the slot's
window amax in the diagnostics: the amax of its last recorded cast).

Work layout (both families): a CTA of 256 threads owns a 128 x 128 tile. It loads the tile with 16-byte loads into
shared memory as bf16. Rowwise: a warp takes a row of the tile, each lane 4 neighbouring elements, so a block of 128
is the whole warp and a block of 32 is 8 lanes; the block's amax is a shuffle reduction inside that group. Columnwise:
a thread takes one column of the tile and walks down the rows (neighbouring lanes read neighbouring columns: no bank
conflicts; a 128-row block is split between the CTA's two halves, which meet on its amax in shared memory; 32-row
blocks are shared out whole), 16 codes at a time, each 16 a store into its row of the transposed copy (16 of a 32-byte
sector per store; the thread's next store fills the other half, which L2 merges before it writes back). Why not a
transposed byte tile in shared memory and coalesced stores: with the 34 KB bf16 tile it would pass the 48 KB of
static shared memory. The 2D cast reduces the whole tile in the CTA, then writes the codes by rows and by columns.

Shapes (the launchers check them and return cudaErrorInvalidValue): cols a multiple of block_len (and of 8: the
16-byte loads), rows a multiple of block_len when the columnwise copy is made (and of 16: its 16-byte stores); the 2D
cast takes multiples of 128 both ways (the trainer's weights under blockwise are: llmc/linear.h checks C, 3C, 4C and
the padded vocabulary). Rows of a rowwise-only cast may be anything (the tile's last rows are masked).

CPU twins: fp8_quantize_blocks (rowwise, 128x128 tiles) and fp8_quantize_blocks_columnwise in fp8/block.h;
dev/cuda/fp8_block_quantize checks every copy against them bit for bit, and prints GB/s against a device copy.
*/
#ifndef GPTFP8_BLOCK_QUANTIZE_CUH
#define GPTFP8_BLOCK_QUANTIZE_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "block.h"
#include "quantize.cuh"

#define FP8_BLOCK_TILE 128     // a CTA's tile: 128 x 128 elements
#define FP8_BLOCK_THREADS 256  // 8 warps

// One copy of a 1D block cast; a NULL pointer is not written. The rowwise copy of inp (rows, cols): codes (rows, cols),
// scale_inv in VEC128 layout for M = rows, K = cols (blockwise), e8m0 (rows, cols / 32) row-major (mxfp8), dequantized
// (rows, cols). The columnwise copy: codes (cols, rows) (the transposed tensor's rowwise codes), scale_inv in VEC128
// layout for M = cols, K = rows, e8m0 (cols, rows / 32), dequantized (rows, cols) (inp's layout).
typedef struct {
    uint8_t* codes;
    float* scale_inv;
    uint8_t* e8m0;
    __nv_bfloat16* dequantized;
} Fp8BlockCopy;

FP8_HD int fp8_block_copy_wanted(const Fp8BlockCopy* copy) {
    return copy->codes || copy->scale_inv || copy->e8m0 || copy->dequantized;
}

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
} Fp8BlockCast1d;

// A 2D (128 x 128 tile) cast of a weight (rows, cols): codes (rows, cols) and codes_t (cols, rows), scale_inv in
// BLK128x128 layout for M = rows, K = cols and scale_inv_t for M = cols, K = rows (the same values, the tile grid
// transposed). amax, tensor_amax, stats, scale_range as for the 1D cast.
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
} Fp8BlockCast2d;

// ----------------------------------------------------------------------------
// pieces shared by both kernels

// The tile at (row0, col0) of inp (rows, cols) into shared memory, zeros outside the tensor. 16-byte loads: cols a
// multiple of 8, inp 16-byte aligned.
__device__ __forceinline__ void fp8_block_load_tile(__nv_bfloat16 (*tile)[FP8_BLOCK_TILE + 8], const __nv_bfloat16* inp,
                                                    int rows, int cols, int row0, int col0) {
    for (int v = threadIdx.x; v < FP8_BLOCK_TILE * FP8_BLOCK_TILE / 8; v += blockDim.x) {
        int r = v / (FP8_BLOCK_TILE / 8), c = v % (FP8_BLOCK_TILE / 8) * 8;
        uint4 packed = make_uint4(0u, 0u, 0u, 0u);
        if (row0 + r < rows && col0 + c < cols) {
            packed = *reinterpret_cast<const uint4*>(inp + (size_t)(row0 + r) * cols + col0 + c);
        }
        *reinterpret_cast<uint4*>(&tile[r][c]) = packed;
    }
}

// A code and the value the GEMM multiplies, for the dequantized copy: fp8_to_float(code) * scale_inv, to bf16. (For
// mxfp8 the product is a power-of-two multiple of an FP8 value: exact in bf16 unless it falls below bf16's normal
// range.)
__device__ __forceinline__ __nv_bfloat16 fp8_block_dequantize(uint32_t code, Fp8Format format, float scale_inv) {
    return __float2bfloat16(fp8_to_float((uint8_t)code, format) * scale_inv);
}

// Sixteen codes of one column of the tile, rows r_first .. r_first + 15, cast with `scale`, as one 16-byte store into
// the transposed copy codes_t (cols, rows) at row col0 + c, column row0 + r_first (rows a multiple of 16, codes_t
// 16-byte aligned). With COUNT, what the cast clipped and flushed; `dequantized` (rows, cols) may be NULL.
template <bool COUNT>
__device__ __forceinline__ void fp8_block_cast_column16(uint8_t* codes_t, __nv_bfloat16* dequantized,
                                                        const __nv_bfloat16 (*tile)[FP8_BLOCK_TILE + 8], int c,
                                                        int r_first, int rows, int cols, int row0, int col0,
                                                        Fp8BlockScale s, Fp8Format format, Fp8CastCounts* counts) {
    uint8_t bytes[16];
    for (int j = 0; j < 16; j += 2) {
        float x0 = __bfloat162float(tile[r_first + j][c]), x1 = __bfloat162float(tile[r_first + j + 1][c]);
        uint32_t pair = fp8_cvt_pair(x0 * s.scale, x1 * s.scale, format);
        bytes[j] = (uint8_t)(pair & 0xFFu);
        bytes[j + 1] = (uint8_t)(pair >> 8);
        if (dequantized) {
            size_t offset = (size_t)(row0 + r_first + j) * cols + col0 + c;  // neighbouring lanes: neighbouring columns
            dequantized[offset] = fp8_block_dequantize(pair & 0xFFu, format, s.scale_inv);
            dequantized[offset + cols] = fp8_block_dequantize(pair >> 8, format, s.scale_inv);
        }
        if (COUNT) {
            float fp8_max_value = fp8_max(format);
            fp8_count(counts, x0, x0 * s.scale, pair & 0xFFu, fp8_max_value);
            fp8_count(counts, x1, x1 * s.scale, pair >> 8, fp8_max_value);
        }
    }
    if (codes_t) {
        uint4 packed;
        memcpy(&packed, bytes, 16);
        *reinterpret_cast<uint4*>(codes_t + (size_t)(col0 + c) * rows + row0 + r_first) = packed;
    }
}

// A block's scale into a copy's arrays: the scale_inv of row m's k_block-th block in VEC128 layout (M rows: the
// copy's), or its E8M0 byte at (m, k_block) of a (M, blocks_per_row) array.
__device__ __forceinline__ void fp8_block_store_scale(const Fp8BlockCopy* copy, int m, int k_block, int M,
                                                      int blocks_per_row, Fp8BlockScale s) {
    if (copy->scale_inv) {
        copy->scale_inv[fp8_vec128_scale_index((size_t)m, (size_t)k_block, (size_t)M)] = s.scale_inv;
    }
    if (copy->e8m0) { copy->e8m0[(size_t)m * blocks_per_row + k_block] = s.e8m0; }
}

// What the diagnostics keep of one block: its scale in the thread's running min and max (float bits, which order
// like the positive scales), when its amax is finite and non-zero (fp8/block.h: other blocks' scales say nothing).
__device__ __forceinline__ void fp8_block_scale_range_add(unsigned int* scale_min, unsigned int* scale_max,
                                                          unsigned int block_amax_bits, float scale) {
    if (block_amax_bits != 0u && block_amax_bits <= 0x7F7FFFFFu) {
        unsigned int bits = __float_as_uint(scale);
        *scale_min = min(*scale_min, bits);
        *scale_max = max(*scale_max, bits);
    }
}

// The end of a cast, every thread: the CTA's max |x| into *amax (and *tensor_amax), and with COUNT its counts and
// scale range into the diagnostics (counted_elements: what block (0, 0) adds to the element count).
template <bool COUNT>
__device__ __forceinline__ void fp8_block_cast_finish(unsigned int thread_max, Fp8CastCounts counts,
                                                      unsigned int scale_min, unsigned int scale_max, float* amax,
                                                      float* tensor_amax, unsigned long long* stats,
                                                      unsigned int* scale_range, size_t counted_elements) {
    unsigned int tile_max = fp8_block_max(thread_max);
    if (threadIdx.x == 0 && tile_max != 0u) {
        atomicMax(reinterpret_cast<unsigned int*>(amax), tile_max);
        if (tensor_amax) { atomicMax(reinterpret_cast<unsigned int*>(tensor_amax), tile_max); }
    }
    if (!COUNT) { return; }
    __syncthreads();  // fp8_block_counts_to_global's cells after fp8_block_max's
    fp8_block_counts_to_global(counts, stats, counted_elements, blockIdx.x == 0 && blockIdx.y == 0);
    scale_min = __reduce_min_sync(0xFFFFFFFFu, scale_min);
    scale_max = __reduce_max_sync(0xFFFFFFFFu, scale_max);
    if (threadIdx.x % 32 == 0 && scale_max != 0u) {  // a warp that saw a block with a finite non-zero amax
        atomicMin(&scale_range[0], scale_min);
        atomicMax(&scale_range[1], scale_max);
    }
}

// ----------------------------------------------------------------------------
// 1D blocks: rowwise and/or columnwise copies

template <bool COUNT>
__global__ void __launch_bounds__(FP8_BLOCK_THREADS) fp8_block_cast_1d_kernel(Fp8BlockCast1d a) {
    __shared__ __align__(16) __nv_bfloat16 tile[FP8_BLOCK_TILE][FP8_BLOCK_TILE + 8];  // +8: 16-byte aligned rows
    const int row0 = blockIdx.y * FP8_BLOCK_TILE, col0 = blockIdx.x * FP8_BLOCK_TILE;
    const int tile_rows = min(FP8_BLOCK_TILE, a.rows - row0), tile_cols = min(FP8_BLOCK_TILE, a.cols - col0);
    const Fp8Format format = a.cast.format;
    const float fp8_max_value = fp8_max(format);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    unsigned int thread_max = 0u, scale_min = 0xFFFFFFFFu, scale_max = 0u;
    Fp8CastCounts counts = {0u, 0u};
    fp8_block_load_tile(tile, a.inp, a.rows, a.cols, row0, col0);
    __syncthreads();

    if (fp8_block_copy_wanted(&a.rowwise)) {
        // a warp per row, 4 elements a lane: a block is block_len / 4 neighbouring lanes (all 32, or 8)
        const int lanes_per_block = a.block_len / 4, c = lane * 4;
        const int blocks_per_row = a.cols / a.block_len;
        for (int r = warp; r < tile_rows; r += FP8_BLOCK_THREADS / 32) {  // warp-uniform: every lane shuffles
            float x[4];
            unsigned int magnitude = 0u;
            for (int i = 0; i < 4; i++) {
                x[i] = __bfloat162float(tile[r][c + i]);
                magnitude = max(magnitude, fp8_magnitude_bits(x[i]));
            }
            unsigned int block_amax = magnitude;
            for (int offset = lanes_per_block / 2; offset > 0; offset /= 2) {
                block_amax = max(block_amax, __shfl_xor_sync(0xFFFFFFFFu, block_amax, offset));
            }
            if (c >= tile_cols) { continue; }  // past the tensor's last column (a whole block: cols % block_len == 0)
            Fp8BlockScale s = fp8_block_scale(&a.cast, __uint_as_float(block_amax));
            thread_max = max(thread_max, magnitude);
            uint32_t lo = fp8_cvt_pair(x[0] * s.scale, x[1] * s.scale, format);
            uint32_t hi = fp8_cvt_pair(x[2] * s.scale, x[3] * s.scale, format);
            uint32_t codes = lo | (hi << 16);
            size_t offset = (size_t)(row0 + r) * a.cols + col0 + c;
            if (a.rowwise.codes) { *reinterpret_cast<uint32_t*>(a.rowwise.codes + offset) = codes; }
            if (a.rowwise.dequantized) {
                for (int i = 0; i < 4; i++) {
                    a.rowwise.dequantized[offset + i] =
                        fp8_block_dequantize((codes >> (8 * i)) & 0xFFu, format, s.scale_inv);
                }
            }
            if (COUNT) {
                for (int i = 0; i < 4; i++) {
                    fp8_count(&counts, x[i], x[i] * s.scale, (codes >> (8 * i)) & 0xFFu, fp8_max_value);
                }
            }
            if (lane % lanes_per_block == 0) {  // the block's first lane writes its scale
                fp8_block_store_scale(&a.rowwise, row0 + r, (col0 + c) / a.block_len, a.rows, blocks_per_row, s);
                if (COUNT) { fp8_block_scale_range_add(&scale_min, &scale_max, block_amax, s.scale); }
            }
        }
    }

    int columnwise = fp8_block_copy_wanted(&a.columnwise);
    // a thread per column of the tile, in each half of the CTA
    const int c = threadIdx.x % FP8_BLOCK_TILE, half = threadIdx.x / FP8_BLOCK_TILE;
    const int blocks_per_column = a.rows / a.block_len;
    if (columnwise && a.block_len == FP8_BLOCK_TILE) {
        // blockwise: one block per column of the tile (the tile is whole: rows % 128 == 0). Each half of the CTA takes
        // half the block's rows; the two meet in shared memory on the block's amax, then each casts its half.
        __shared__ unsigned int half_amax[2][FP8_BLOCK_TILE];
        const int r_begin = half * (FP8_BLOCK_TILE / 2);
        unsigned int own_amax = 0u;
        for (int j = r_begin; j < r_begin + FP8_BLOCK_TILE / 2; j++) {
            own_amax = max(own_amax, fp8_magnitude_bits(__bfloat162float(tile[j][c])));
        }
        half_amax[half][c] = own_amax;
        __syncthreads();
        unsigned int block_amax = max(half_amax[0][c], half_amax[1][c]);
        if (c < tile_cols) {
            Fp8BlockScale s = fp8_block_scale(&a.cast, __uint_as_float(block_amax));
            thread_max = max(thread_max, own_amax);
            for (int j = r_begin; j < r_begin + FP8_BLOCK_TILE / 2; j += 16) {
                fp8_block_cast_column16<COUNT>(a.columnwise.codes, a.columnwise.dequantized, tile, c, j, a.rows,
                                               a.cols, row0, col0, s, format, &counts);
            }
            if (half == 0) {
                fp8_block_store_scale(&a.columnwise, col0 + c, row0 / a.block_len, a.cols, blocks_per_column, s);
                if (COUNT) { fp8_block_scale_range_add(&scale_min, &scale_max, block_amax, s.scale); }
            }
        }
    } else if (columnwise) {
        // mxfp8: four blocks per column of the tile, shared out between the two halves of the CTA
        for (int r_first = half * a.block_len; r_first < FP8_BLOCK_TILE; r_first += 2 * a.block_len) {
            if (c >= tile_cols || r_first >= tile_rows) { continue; }  // whole blocks: rows % block_len == 0
            unsigned int block_amax = 0u;
            for (int j = 0; j < a.block_len; j++) {
                block_amax = max(block_amax, fp8_magnitude_bits(__bfloat162float(tile[r_first + j][c])));
            }
            Fp8BlockScale s = fp8_block_scale(&a.cast, __uint_as_float(block_amax));
            thread_max = max(thread_max, block_amax);
            for (int j = 0; j < a.block_len; j += 16) {
                fp8_block_cast_column16<COUNT>(a.columnwise.codes, a.columnwise.dequantized, tile, c, r_first + j,
                                               a.rows, a.cols, row0, col0, s, format, &counts);
            }
            fp8_block_store_scale(&a.columnwise, col0 + c, (row0 + r_first) / a.block_len, a.cols, blocks_per_column,
                                  s);
            if (COUNT) { fp8_block_scale_range_add(&scale_min, &scale_max, block_amax, s.scale); }
        }
    }
    size_t copies = (size_t)fp8_block_copy_wanted(&a.rowwise) + (size_t)columnwise;
    fp8_block_cast_finish<COUNT>(thread_max, counts, scale_min, scale_max, a.amax, a.tensor_amax, a.stats,
                                 a.scale_range, copies * (size_t)a.rows * (size_t)a.cols);
}

// Checks a 1D cast's shapes and pointers (see the top); cudaErrorInvalidValue when they do not hold.
static inline cudaError_t fp8_block_cast_1d_check(const Fp8BlockCast1d* a) {
    int expected_len = a->cast.scaling == FP8_SCALING_MXFP8 ? FP8_MXFP8_BLOCK : FP8_BLOCKWISE_BLOCK;
    int columnwise = fp8_block_copy_wanted(&a->columnwise);
    int mxfp8 = a->cast.scaling == FP8_SCALING_MXFP8;
    if (a->cast.scaling != FP8_SCALING_BLOCKWISE && !mxfp8) { return cudaErrorInvalidValue; }  // a per-tensor recipe
    if ((mxfp8 && (a->rowwise.scale_inv || a->columnwise.scale_inv)) ||
        (!mxfp8 && (a->rowwise.e8m0 || a->columnwise.e8m0))) {
        return cudaErrorInvalidValue;  // VEC128 scale_invs are blockwise's, E8M0 bytes mxfp8's
    }
    if (a->block_len != expected_len || a->rows <= 0 || a->cols <= 0 || a->cols % a->block_len != 0 ||
        (columnwise && (a->rows % a->block_len != 0 || a->rows % 16 != 0)) || (uintptr_t)a->inp % 16 != 0 ||
        (a->columnwise.codes && (uintptr_t)a->columnwise.codes % 16 != 0) ||
        (a->rowwise.codes && (uintptr_t)a->rowwise.codes % 4 != 0) || a->amax == NULL ||
        (a->stats != NULL) != (a->scale_range != NULL) || (uintptr_t)a->stats % 8 != 0 ||
        (uintptr_t)a->scale_range % 4 != 0 || ((size_t)a->rows + FP8_BLOCK_TILE - 1) / FP8_BLOCK_TILE > 65535u) {
        return cudaErrorInvalidValue;
    }
    return cudaSuccess;
}

// The launcher: zeroes *tensor_amax (when given), then one launch over the tiles. With stats (and scale_range) the
// counting kernel, else the lean one.
static inline cudaError_t fp8_block_cast_1d(const Fp8BlockCast1d* a, cudaStream_t stream) {
    cudaError_t err = fp8_block_cast_1d_check(a);
    if (err != cudaSuccess) { return err; }
    if (a->tensor_amax) {
        err = cudaMemsetAsync(a->tensor_amax, 0, sizeof(float), stream);
        if (err != cudaSuccess) { return err; }
    }
    dim3 grid((unsigned)(((size_t)a->cols + FP8_BLOCK_TILE - 1) / FP8_BLOCK_TILE),
              (unsigned)(((size_t)a->rows + FP8_BLOCK_TILE - 1) / FP8_BLOCK_TILE));
    if (a->stats) {
        fp8_block_cast_1d_kernel<true><<<grid, FP8_BLOCK_THREADS, 0, stream>>>(*a);
    } else {
        fp8_block_cast_1d_kernel<false><<<grid, FP8_BLOCK_THREADS, 0, stream>>>(*a);
    }
    return cudaGetLastError();
}

// ----------------------------------------------------------------------------
// 2D blocks: a weight's 128 x 128 tiles, codes and transposed codes

template <bool COUNT>
__global__ void __launch_bounds__(FP8_BLOCK_THREADS) fp8_block_cast_2d_kernel(Fp8BlockCast2d a) {
    __shared__ __align__(16) __nv_bfloat16 tile[FP8_BLOCK_TILE][FP8_BLOCK_TILE + 8];
    __shared__ unsigned int tile_amax;
    const int row0 = blockIdx.y * FP8_BLOCK_TILE, col0 = blockIdx.x * FP8_BLOCK_TILE;
    const Fp8Format format = a.cast.format;
    const float fp8_max_value = fp8_max(format);
    fp8_block_load_tile(tile, a.inp, a.rows, a.cols, row0, col0);
    __syncthreads();
    // the tile's amax: each thread 8-element pieces of rows, then the CTA
    unsigned int thread_max = 0u;
    for (int v = threadIdx.x; v < FP8_BLOCK_TILE * FP8_BLOCK_TILE / 8; v += blockDim.x) {
        int r = v / (FP8_BLOCK_TILE / 8), c = v % (FP8_BLOCK_TILE / 8) * 8;
        for (int i = 0; i < 8; i++) {
            thread_max = max(thread_max, fp8_magnitude_bits(__bfloat162float(tile[r][c + i])));
        }
    }
    unsigned int block_amax = fp8_block_max(thread_max);
    if (threadIdx.x == 0) { tile_amax = block_amax; }
    __syncthreads();
    block_amax = tile_amax;
    Fp8BlockScale s = fp8_block_scale(&a.cast, __uint_as_float(block_amax));
    Fp8CastCounts counts = {0u, 0u};
    for (int v = threadIdx.x; v < FP8_BLOCK_TILE * FP8_BLOCK_TILE / 8; v += blockDim.x) {
        int r = v / (FP8_BLOCK_TILE / 8), c = v % (FP8_BLOCK_TILE / 8) * 8;
        uint8_t bytes[8];
        for (int i = 0; i < 8; i += 2) {
            float x0 = __bfloat162float(tile[r][c + i]), x1 = __bfloat162float(tile[r][c + i + 1]);
            uint32_t pair = fp8_cvt_pair(x0 * s.scale, x1 * s.scale, format);
            bytes[i] = (uint8_t)(pair & 0xFFu);
            bytes[i + 1] = (uint8_t)(pair >> 8);
            if (COUNT) {
                fp8_count(&counts, x0, x0 * s.scale, pair & 0xFFu, fp8_max_value);
                fp8_count(&counts, x1, x1 * s.scale, pair >> 8, fp8_max_value);
            }
        }
        uint2 packed;
        memcpy(&packed, bytes, 8);
        *reinterpret_cast<uint2*>(a.codes + (size_t)(row0 + r) * a.cols + col0 + c) = packed;
    }
    if (threadIdx.x == 0) {
        a.scale_inv[fp8_blk128_scale_index(blockIdx.y, blockIdx.x, (size_t)a.cols)] = s.scale_inv;
        a.scale_inv_t[fp8_blk128_scale_index(blockIdx.x, blockIdx.y, (size_t)a.rows)] = s.scale_inv;
    }
    // the transposed codes: a thread per column of the tile and half its rows, 16 rows a store (the same bytes: the
    // same scale; the counts were taken above, once for the one cast)
    const int c = threadIdx.x % FP8_BLOCK_TILE, half = threadIdx.x / FP8_BLOCK_TILE;
    for (int r = half * (FP8_BLOCK_TILE / 2); r < (half + 1) * (FP8_BLOCK_TILE / 2); r += 16) {
        fp8_block_cast_column16<false>(a.codes_t, NULL, tile, c, r, a.rows, a.cols, row0, col0, s, format, &counts);
    }
    unsigned int scale_min = 0xFFFFFFFFu, scale_max = 0u;
    if (COUNT && threadIdx.x == 0) { fp8_block_scale_range_add(&scale_min, &scale_max, block_amax, s.scale); }
    // (fp8_block_cast_finish's fp8_block_max reuses the per-warp cells of the one above: the barrier after tile_amax
    // already keeps its writes after warp 0's reads)
    fp8_block_cast_finish<COUNT>(thread_max, counts, scale_min, scale_max, a.amax, a.tensor_amax, a.stats,
                                 a.scale_range, (size_t)a.rows * (size_t)a.cols);
}

static inline cudaError_t fp8_block_cast_2d(const Fp8BlockCast2d* a, cudaStream_t stream) {
    if (a->cast.scaling != FP8_SCALING_BLOCKWISE || a->rows <= 0 || a->cols <= 0 || a->rows % FP8_BLOCK_TILE != 0 ||
        a->cols % FP8_BLOCK_TILE != 0 || (uintptr_t)a->inp % 16 != 0 || (uintptr_t)a->codes % 16 != 0 ||
        (uintptr_t)a->codes_t % 16 != 0 || !a->scale_inv || !a->scale_inv_t || a->amax == NULL ||
        (a->stats != NULL) != (a->scale_range != NULL) || (uintptr_t)a->stats % 8 != 0 ||
        (uintptr_t)a->scale_range % 4 != 0 || a->rows / FP8_BLOCK_TILE > 65535) {
        return cudaErrorInvalidValue;
    }
    if (a->tensor_amax) {
        cudaError_t err = cudaMemsetAsync(a->tensor_amax, 0, sizeof(float), stream);
        if (err != cudaSuccess) { return err; }
    }
    dim3 grid((unsigned)(a->cols / FP8_BLOCK_TILE), (unsigned)(a->rows / FP8_BLOCK_TILE));
    if (a->stats) {
        fp8_block_cast_2d_kernel<true><<<grid, FP8_BLOCK_THREADS, 0, stream>>>(*a);
    } else {
        fp8_block_cast_2d_kernel<false><<<grid, FP8_BLOCK_THREADS, 0, stream>>>(*a);
    }
    return cudaGetLastError();
}

#endif  // GPTFP8_BLOCK_QUANTIZE_CUH
