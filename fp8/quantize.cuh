/*
fp8/quantize.cuh — the GPU casts to FP8 with delayed scaling: one pass over a bf16 tensor writes its FP8 copy (and,
where a Hopper GEMM needs it, its transposed FP8 copy) and max-reduces the tensor's amax into its slot's row 0.
With current scaling (TE's Float8CurrentScaling, fp8/current.h) one more pass comes first: the tensor's amax, and
in the same launch the scale from it, which the very same cast kernels then read (see fp8_amax_scale below).

Why one pass: delayed scaling exists so that a cast reads its input once (the scale comes from earlier steps), and
Hopper's FP8 GEMMs accept only the TN layout, so dgrad and wgrad need transposed FP8 operands: making the transpose
in the same pass as the cast, from the tile already in shared memory, costs no second read of the bf16 tensor.

A linear layer's grad_output cast also leaves its bias gradient's column partials on the way
(fp8_cast_transpose_dbias_amax), so the bias gradient reads no tensor of its own either. And the cast + transpose
takes its values from an Input, which may make them on the way from other tensors (llmc/gelu_fp8.cuh runs GELU in it),
so a bf16 tensor that only its cast reads need never be written.

Diagnostics ride on the same pass: a cast given a `stats` pointer also counts how many elements it clipped and
flushed (fp8_diag.tsv's fractions), from the values and bytes it already holds; one without (NULL) is compiled
without the counting (a template flag), so the casts of a run that writes no diagnostics do exactly what they did.

The conversion is __nv_cvt_float2_to_fp8x2(..., __NV_SATFINITE, ...), on sm_89+ the instruction cvt.rn.satfinite,
which fp8/fp8.h's fp8_from_float reproduces bit for bit on the CPU (fp8/test_fp8_cuda_host.cu). x * scale is one
fp32 multiply, as on the CPU. The amax is max |x| of the unscaled input as float bits: each block reduces with warp
shuffles, then one atomicMax on the unsigned bits, which orders non-negative floats by value and puts NaN above inf,
exactly the NaN-propagating max fp8/meta.h defines.

CPU twins: fp8_quantize / fp8_quantize_bf16 in fp8/quantize_cpu.h (the transposed copy is the same bytes, transposed);
fp8_quantize_current_bf16 in fp8/current.h for an amax pass followed by a cast.
*/
#ifndef GPTFP8_QUANTIZE_CUH
#define GPTFP8_QUANTIZE_CUH

#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include "current.h"
#include "fp8.h"

// |x| as float bits: what the amax reductions compare (sign bit cleared; NaN stays above +inf)
__device__ __forceinline__ unsigned int fp8_magnitude_bits(float x) { return __float_as_uint(x) & 0x7FFFFFFFu; }

// Two floats to two FP8 bytes, packed little-endian (first value in the low byte), RNE + satfinite.
__device__ __forceinline__ uint16_t fp8_cvt_pair(float first, float second, Fp8Format format) {
    float2 pair = make_float2(first, second);
    return (uint16_t)__nv_cvt_float2_to_fp8x2(pair, __NV_SATFINITE, format == FP8_E4M3 ? __NV_E4M3 : __NV_E5M2);
}

// What a diagnostics cast counts, per thread (the CPU's Fp8QuantStats, same definitions): saturated, |x * scale|
// above the format's max (satfinite clipped it; inf too); flushed, x != 0 cast to +-0 (NaN casts to NaN: neither).
typedef struct {
    unsigned int saturated, flushed;
} Fp8CastCounts;

// One element's share of the counts, from its value x, its scaled value and the byte the cast made of it.
__device__ __forceinline__ void fp8_count(Fp8CastCounts* counts, float x, float scaled, uint32_t code, float fp8_max_value) {
    counts->saturated += fabsf(scaled) > fp8_max_value;
    counts->flushed += x != 0.0f && (code & 0x7Fu) == 0u;
}

// Eight bf16 (one 16-byte load) -> eight FP8 bytes (packed in a uint2, first value in the lowest byte), folding
// their magnitudes into *thread_max and, when COUNT, their clipped / flushed counts into *counts.
template <bool COUNT>
__device__ __forceinline__ uint2 fp8_cast8(uint4 packed, float s, Fp8Format format, unsigned int* thread_max,
                                           Fp8CastCounts* counts) {
    const __nv_bfloat16* x = reinterpret_cast<const __nv_bfloat16*>(&packed);
    uint16_t bytes[4];
    for (int i = 0; i < 4; i++) {
        float a = __bfloat162float(x[2 * i]), b = __bfloat162float(x[2 * i + 1]);
        *thread_max = max(*thread_max, max(fp8_magnitude_bits(a), fp8_magnitude_bits(b)));
        bytes[i] = fp8_cvt_pair(a * s, b * s, format);
        if (COUNT) {
            float fp8_max_value = fp8_max(format);
            fp8_count(counts, a, a * s, bytes[i] & 0xFFu, fp8_max_value);
            fp8_count(counts, b, b * s, (uint32_t)bytes[i] >> 8, fp8_max_value);
        }
    }
    uint2 out;
    out.x = (uint32_t)bytes[0] | ((uint32_t)bytes[1] << 16);
    out.y = (uint32_t)bytes[2] | ((uint32_t)bytes[3] << 16);
    return out;
}

// Block-wide max of unsigned values, valid in thread 0. blockDim.x must be a multiple of 32. Two calls in one kernel
// need a __syncthreads() between them (they share the per-warp cells). Not llmc/cuda_common.cuh's block_reduce: a warp
// here is one __reduce_max_sync (unsigned max in hardware), not five shuffles, and only thread 0 needs the result, so
// the casts skip block_reduce's broadcast and its two __syncthreads.
__device__ __forceinline__ unsigned int fp8_block_max(unsigned int thread_max) {
    __shared__ unsigned int warp_max[32];
    unsigned int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    thread_max = __reduce_max_sync(0xFFFFFFFFu, thread_max);
    if (lane == 0) { warp_max[warp] = thread_max; }
    __syncthreads();
    unsigned int v = 0u;
    if (warp == 0) {
        v = lane < blockDim.x / 32 ? warp_max[lane] : 0u;
        v = __reduce_max_sync(0xFFFFFFFFu, v);
    }
    return v;
}

// Block-wide max of unsigned values, then one atomicMax into *amax_bits. blockDim.x must be a multiple of 32.
__device__ __forceinline__ void fp8_block_amax_to_global(unsigned int thread_max, unsigned int* amax_bits) {
    unsigned int v = fp8_block_max(thread_max);
    if (threadIdx.x == 0 && v != 0u) { atomicMax(amax_bits, v); }
}

// Block-wide sums of the counts, then one 64-bit atomicAdd of each nonzero sum into stats (3: elements, saturated,
// flushed); the block that `counts_elements` adds the tensor's n. Integer atomics: the totals do not depend on the
// order the blocks finish. blockDim.x * blockDim.y a multiple of 32; a block's sums fit 32 bits (fewer than 2^32
// elements a block: the persistent block casts of fp8/block_quantize.cuh too, up to ~2^17 tiles of 128 x 128 a block).
__device__ __forceinline__ void fp8_block_counts_to_global(Fp8CastCounts counts, unsigned long long* stats, size_t n,
                                                           bool counts_elements) {
    __shared__ unsigned int warp_saturated[32], warp_flushed[32];
    unsigned int thread = threadIdx.y * blockDim.x + threadIdx.x, lane = thread % 32, warp = thread / 32;
    unsigned int saturated = __reduce_add_sync(0xFFFFFFFFu, counts.saturated);
    unsigned int flushed = __reduce_add_sync(0xFFFFFFFFu, counts.flushed);
    if (lane == 0) {
        warp_saturated[warp] = saturated;
        warp_flushed[warp] = flushed;
    }
    __syncthreads();
    if (warp != 0) { return; }
    unsigned int warps = blockDim.x * blockDim.y / 32;
    saturated = __reduce_add_sync(0xFFFFFFFFu, lane < warps ? warp_saturated[lane] : 0u);
    flushed = __reduce_add_sync(0xFFFFFFFFu, lane < warps ? warp_flushed[lane] : 0u);
    if (lane != 0) { return; }
    if (saturated) { atomicAdd(&stats[1], (unsigned long long)saturated); }
    if (flushed) { atomicAdd(&stats[2], (unsigned long long)flushed); }
    if (counts_elements) { atomicAdd(&stats[0], (unsigned long long)n); }
}

// ----------------------------------------------------------------------------
// cast + amax: out (n) FP8 = fp8(inp (n) bf16 * *scale); *amax = max(*amax, max|inp|). n a multiple of 8.
// A "vector" is 8 bf16 (one 16-byte load) and its 8 FP8 bytes (one 8-byte store). The kernel is a pure stream, so its
// speed is how many bytes each SM keeps in flight towards HBM (Little's law: about 3 TB/s x ~0.7 us of latency, some
// 2 MB over 132 SMs, 16 KB per SM at the very least): the launcher fills every SM with FP8_CAST_BLOCKS_PER_SM blocks
// of 256 threads (2048 threads, Hopper's maximum), and each thread issues FP8_CAST_UNROLL independent 16-byte loads
// before it converts any, so 2048 x 2 x 16 B = 64 KB per SM are in flight. The loads of a warp stay coalesced: its
// threads read neighbouring vectors v, and then v + stride.

#define FP8_CAST_BLOCK_SIZE 256
#define FP8_CAST_BLOCKS_PER_SM 8
#define FP8_CAST_UNROLL 2

// COUNT: also count into stats (3) what the cast clipped and flushed (the diagnostics casts)
template <bool COUNT>
__global__ void __launch_bounds__(FP8_CAST_BLOCK_SIZE)
    fp8_cast_amax_kernel(uint8_t* __restrict__ out, const __nv_bfloat16* __restrict__ inp, size_t n,
                         const float* __restrict__ scale, float* amax, Fp8Format format, unsigned long long* stats) {
    const float s = *scale;
    const uint4* in_vectors = reinterpret_cast<const uint4*>(inp);
    uint2* out_vectors = reinterpret_cast<uint2*>(out);
    unsigned int thread_max = 0u;
    Fp8CastCounts counts = {0u, 0u};
    const size_t vectors = n / 8, stride = (size_t)gridDim.x * blockDim.x;
    size_t v = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    // FP8_CAST_UNROLL vectors per trip, v + i * stride, all loaded before any is converted
    for (; v + (FP8_CAST_UNROLL - 1) * stride < vectors; v += FP8_CAST_UNROLL * stride) {
        uint4 packed[FP8_CAST_UNROLL];
#pragma unroll
        for (int i = 0; i < FP8_CAST_UNROLL; i++) { packed[i] = in_vectors[v + i * stride]; }
#pragma unroll
        for (int i = 0; i < FP8_CAST_UNROLL; i++) {
            out_vectors[v + i * stride] = fp8_cast8<COUNT>(packed[i], s, format, &thread_max, &counts);
        }
    }
    for (; v < vectors; v += stride) {  // the last trip's remainder: fewer than FP8_CAST_UNROLL vectors
        out_vectors[v] = fp8_cast8<COUNT>(in_vectors[v], s, format, &thread_max, &counts);
    }
    fp8_block_amax_to_global(thread_max, reinterpret_cast<unsigned int*>(amax));
    if (COUNT) { fp8_block_counts_to_global(counts, stats, n, blockIdx.x == 0); }
}

// ----------------------------------------------------------------------------
// cast + transpose + amax: inp (rows, cols) bf16 -> out (rows, cols) FP8 and out_t (cols, rows) FP8.
// A block owns a 64 x 64 tile: it reads the tile once (coalesced along cols), writes the FP8 tile in place, stores
// the FP8 bytes in shared memory, and writes them back transposed (coalesced along rows). rows, cols multiples of 64
// (the trainer's shapes: B*T and C, 3C, 4C are). out may be NULL when only the transpose is needed.
//
// DBIAS (TE's cast_transpose_dbias, for a linear layer's grad_output): the same pass also writes the column sums of
// its tile's 64 rows into dbias_partials (rows / 64, cols) fp32, so the bias gradient needs no pass of its own over
// the bf16 tensor (it was one read of dy per biased layer: 4.5 ms of a d12 FP8 step on an H100). Each sum runs down
// its column from the tile's first row, from 0.0f, in fp32: exactly llmc/bias.cuh's bias_backward_partials_kernel
// with its 64-row chunks (COLUMN_SUM_ROWS), so the bias gradient keeps its bits; pass 2 (adding the chunks up)
// is bias.cuh's too.
//
// Input: where the tile's values come from. Fp8CastInputBf16 reads them from the bf16 tensor being cast. Another
// input may make them from what it reads (llmc/gelu_fp8.cuh: GELU of fc's output in the forward, GELU's backward in
// the backward, TE's fused activation casts), so that a bf16 tensor read only by its cast is never written to memory
// and read back; such an input must make the very bf16 values the separate kernel would have written, so the bytes,
// the amax, the counts and the bias partials are the same.

#define FP8_TRANSPOSE_TILE 64

// The plain input: 8 bf16 values (one 16-byte vector) at element `offset` of inp (rows, cols). Every input's values()
// takes the offset and, for an input that needs them (LayerNorm's: the row's statistics, the columns' parameters),
// its row and first column, which the kernel knows without dividing.
struct Fp8CastInputBf16 {
    const __nv_bfloat16* inp;
    __device__ __forceinline__ uint4 values(size_t offset, int, int) const {
        return *reinterpret_cast<const uint4*>(inp + offset);
    }
};

template <bool COUNT, bool DBIAS, class Input>
__global__ void fp8_cast_transpose_amax_kernel(uint8_t* out, uint8_t* out_t, float* dbias_partials, Input input,
                                               int rows, int cols, const float* scale, float* amax, Fp8Format format,
                                               unsigned long long* stats) {
    // +4 bytes per row so the column-wise reads of the transpose do not all hit one shared-memory bank
    __shared__ uint8_t tile[FP8_TRANSPOSE_TILE][FP8_TRANSPOSE_TILE + 4];
    // DBIAS: the bf16 tile for the column sums (rows padded by 16 bytes, still 16-byte aligned for the vector stores);
    // one row only otherwise, unused
    __shared__ __align__(16) __nv_bfloat16 tile_bf16[DBIAS ? FP8_TRANSPOSE_TILE : 1][FP8_TRANSPOSE_TILE + 8];
    const float s = *scale;
    int tile_row = blockIdx.y * FP8_TRANSPOSE_TILE, tile_col = blockIdx.x * FP8_TRANSPOSE_TILE;
    unsigned int thread_max = 0u;
    Fp8CastCounts counts = {0u, 0u};
    // 256 threads: each reads 8 consecutive bf16 (16 bytes) of a row; 8 threads cover a 64-wide row, 32 rows per
    // pass, two passes for the 64 rows
    int sub_col = (threadIdx.x % 8) * 8, sub_row = threadIdx.x / 8;
    for (int pass = 0; pass < 2; pass++) {
        int r = sub_row + pass * 32;
        size_t offset = (size_t)(tile_row + r) * cols + tile_col + sub_col;
        uint4 packed = input.values(offset, tile_row + r, tile_col + sub_col);
        uint2 bytes = fp8_cast8<COUNT>(packed, s, format, &thread_max, &counts);
        memcpy(&tile[r][sub_col], &bytes, 8);  // little-endian: byte i is column sub_col + i
        if (out) { *reinterpret_cast<uint2*>(out + offset) = bytes; }
        if (DBIAS) { *reinterpret_cast<uint4*>(&tile_bf16[r][sub_col]) = packed; }
    }
    __syncthreads();
    // DBIAS: the first 64 threads each sum one column of the tile, row by row (bias_backward_partials_kernel's order)
    if (DBIAS && threadIdx.x < FP8_TRANSPOSE_TILE) {
        float sum = 0.0f;
        for (int r = 0; r < FP8_TRANSPOSE_TILE; r++) { sum += __bfloat162float(tile_bf16[r][threadIdx.x]); }
        dbias_partials[(size_t)blockIdx.y * cols + tile_col + threadIdx.x] = sum;
    }
    // transposed write: thread writes 8 consecutive bytes of a row of out_t (a column of the tile)
    for (int pass = 0; pass < 2; pass++) {
        int c = sub_row + pass * 32;  // column of the tile = row of out_t
        uint8_t column_bytes[8];
        for (int i = 0; i < 8; i++) { column_bytes[i] = tile[sub_col + i][c]; }
        uint2 packed_out;
        memcpy(&packed_out, column_bytes, 8);
        *reinterpret_cast<uint2*>(out_t + (size_t)(tile_col + c) * rows + tile_row + sub_col) = packed_out;
    }
    fp8_block_amax_to_global(thread_max, reinterpret_cast<unsigned int*>(amax));
    if (COUNT) { fp8_block_counts_to_global(counts, stats, (size_t)rows * cols, blockIdx.x == 0 && blockIdx.y == 0); }
}

// ----------------------------------------------------------------------------
// current scaling: the amax pass, with the scale computed from it in the same launch
//
// A current-scaling cast is two launches on one stream: fp8_amax_scale_kernel, then the delayed-scaling cast kernel
// above (fp8_cast_amax_kernel or fp8_cast_transpose_amax_kernel) with the scale cell this one wrote. Why this split:
// the cast kernels stay exactly the ones checked for delayed scaling, and each of their blocks reads one float as its
// scale instead of reducing the amax again. The scale computation rides on the amax pass in its last block: every
// block max-reduces its grid-stride share of |x| into its own partial, counts itself done (threadfence, then an
// atomic ticket), and the block that draws the last ticket reduces the partials, computes the scale with
// fp8_current_scale (the CPU's code) and resets the ticket counter for the next cast. No atomics on floats, no
// zeroing launch. The row 0 merge and the diagnostics' counts stay with the cast kernel, as for delayed scaling.

// Where a current-scaling cast's scale comes from and goes. In training the three outputs are the slot's own cells
// (previous_scale == scale); an evaluation cast writes scratch cells so the training state stays as it was.
typedef struct {
    const float* previous_scale;  // the slot's scale before this cast: kept when the amax is 0, inf or NaN
    float* scale;                 // this cast's scale (what the cast kernel then reads)
    float* scale_inv;             // 1 / scale (the metadata's cell, contiguous with the other slots')
    float* gemm_scale_inv;        // the same value at a 16-byte-aligned address, where the GEMM reads it; or NULL
    float* tensor_amax;           // this tensor's amax, what the scale came from (diagnostics)
    int margin;
} Fp8CurrentScale;

// Scratch the amax pass needs: one partial per block (at most FP8_AMAX_MAX_BLOCKS, fp8/current.h) and the ticket
// counter (0 between casts; cudaMemset it once). One workspace serves one stream's casts, one after the other.
typedef struct {
    unsigned int* partials;     // (FP8_AMAX_MAX_BLOCKS) per-block max |x| as float bits
    unsigned int* blocks_done;  // (1) ticket counter
} Fp8AmaxWorkspace;

// amax of the n values `input` makes (the Inputs of the cast + transpose above: the bf16 tensor itself, or GELU or
// LayerNorm made on the way from what they read; n a multiple of 8, the tensor (n / cols, cols), cols a multiple of 8),
// then the scale from it into `target`. fp8_max_value: of the cast's format. A thread's vectors are stride apart; the
// row and column of each, which LayerNorm's input needs, are carried from one to the next without a division.
template <class Input>
__global__ void fp8_amax_scale_kernel(Input input, size_t n, size_t cols, Fp8CurrentScale target,
                                      float fp8_max_value, Fp8AmaxWorkspace workspace) {
    __shared__ bool is_last_block;
    unsigned int thread_max = 0u;
    size_t vectors = n / 8, stride = (size_t)gridDim.x * blockDim.x;
    size_t v = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t row = v * 8 / cols, col = v * 8 % cols;
    const size_t step_rows = stride * 8 / cols, step_cols = stride * 8 % cols;
    for (; v < vectors; v += stride) {
        uint4 packed = input.values(v * 8, (int)row, (int)col);
        const __nv_bfloat16* x = reinterpret_cast<const __nv_bfloat16*>(&packed);
        for (int i = 0; i < 8; i++) { thread_max = max(thread_max, fp8_magnitude_bits(__bfloat162float(x[i]))); }
        row += step_rows;
        col += step_cols;
        if (col >= cols) {
            col -= cols;
            row++;
        }
    }
    unsigned int block_max = fp8_block_max(thread_max);
    if (threadIdx.x == 0) {
        workspace.partials[blockIdx.x] = block_max;
        __threadfence();  // the partial is visible to every block before this block's ticket is
        is_last_block = atomicAdd(workspace.blocks_done, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!is_last_block) { return; }
    __threadfence();  // the reading side's fence, pairing with the writers' fence before their tickets
    // the last block: every partial is written; __ldcg reads them from L2, past this SM's L1
    unsigned int partial_max = 0u;
    for (unsigned int b = threadIdx.x; b < gridDim.x; b += blockDim.x) {
        partial_max = max(partial_max, __ldcg(&workspace.partials[b]));
    }
    unsigned int amax_bits = fp8_block_max(partial_max);
    if (threadIdx.x == 0) {
        float amax = __uint_as_float(amax_bits);
        fp8_current_scale(amax, *target.previous_scale, fp8_max_value, target.margin, target.scale, target.scale_inv);
        if (target.gemm_scale_inv) { *target.gemm_scale_inv = *target.scale_inv; }
        *target.tensor_amax = amax;
        *workspace.blocks_done = 0u;  // ready for the next cast
    }
}

// ----------------------------------------------------------------------------
// launchers (asynchronous on `stream`; they return the launch error, the caller checks it). What a kernel assumes of
// its arguments (sizes, grid limits, the alignment of its vector loads and stores) is checked here first: a violation
// prints one line saying which, and returns cudaErrorInvalidValue, instead of a misaligned-address fault later.

// Whether `p` is a multiple of `bytes` (a power of two); otherwise prints why `what` of `launcher` cannot run.
static inline int fp8_launch_aligned(const char* launcher, const char* what, const void* p, unsigned int bytes) {
    if (((uintptr_t)p & (bytes - 1)) == 0) { return 1; }
    fprintf(stderr, "%s: %s at %p is not %u-byte aligned (the kernel moves it in %u-byte vectors)\n", launcher, what, p,
            bytes, bytes);
    return 0;
}

// stats: NULL, or (3) counters the cast adds its elements, saturated and flushed counts to (fp8_diag.tsv's)
static inline cudaError_t fp8_cast_amax(uint8_t* out, const __nv_bfloat16* inp, size_t n, const float* scale,
                                        float* amax, unsigned long long* stats, Fp8Format format, int num_sms,
                                        cudaStream_t stream) {
    if (n % 8 != 0) {
        fprintf(stderr, "fp8_cast_amax: %zu elements is not a multiple of 8 (one 16-byte vector of bf16)\n", n);
        return cudaErrorInvalidValue;
    }
    if (!fp8_launch_aligned("fp8_cast_amax", "the bf16 input", inp, 16) ||
        !fp8_launch_aligned("fp8_cast_amax", "the FP8 output", out, 8) ||
        !fp8_launch_aligned("fp8_cast_amax", "the amax", amax, 4) ||
        (stats && !fp8_launch_aligned("fp8_cast_amax", "the counters", stats, 8))) {
        return cudaErrorInvalidValue;
    }
    size_t vectors = n / 8;
    size_t blocks_needed = (vectors + FP8_CAST_BLOCK_SIZE - 1) / FP8_CAST_BLOCK_SIZE;
    // a grid-stride loop over every SM, full: the bytes in flight (see the kernel); one atomic per block
    size_t max_blocks = (size_t)(num_sms > 0 ? num_sms : 1) * FP8_CAST_BLOCKS_PER_SM;
    int grid = (int)(blocks_needed < max_blocks ? blocks_needed : max_blocks);
    if (grid < 1) { grid = 1; }
    if (stats) {
        fp8_cast_amax_kernel<true><<<grid, FP8_CAST_BLOCK_SIZE, 0, stream>>>(out, inp, n, scale, amax, format, stats);
    } else {
        fp8_cast_amax_kernel<false><<<grid, FP8_CAST_BLOCK_SIZE, 0, stream>>>(out, inp, n, scale, amax, format, NULL);
    }
    return cudaGetLastError();
}

// What fp8_cast_transpose_amax_kernel assumes of its arguments, checked for `launcher`: 1 if it can run.
static inline int fp8_cast_transpose_args_ok(const char* launcher, const uint8_t* out, const uint8_t* out_t,
                                             const __nv_bfloat16* inp, int rows, int cols, const float* amax,
                                             const unsigned long long* stats) {
    if (rows <= 0 || cols <= 0 || rows % FP8_TRANSPOSE_TILE != 0 || cols % FP8_TRANSPOSE_TILE != 0) {
        fprintf(stderr, "%s: rows %d and cols %d must be positive multiples of %d (the tile)\n", launcher, rows, cols,
                FP8_TRANSPOSE_TILE);
        return 0;
    }
    if (rows / FP8_TRANSPOSE_TILE > 65535) {  // one block row of tiles per gridDim.y, which CUDA caps at 65535
        fprintf(stderr, "%s: rows %d need %d tile rows, more than gridDim.y's 65535 (at most %d rows)\n", launcher, rows,
                rows / FP8_TRANSPOSE_TILE, 65535 * FP8_TRANSPOSE_TILE);
        return 0;
    }
    return fp8_launch_aligned(launcher, "the bf16 input", inp, 16) &&
           (!out || fp8_launch_aligned(launcher, "the FP8 output", out, 8)) &&
           fp8_launch_aligned(launcher, "the transposed FP8 output", out_t, 8) &&
           fp8_launch_aligned(launcher, "the amax", amax, 4) &&
           (!stats || fp8_launch_aligned(launcher, "the counters", stats, 8));
}

// The kernel for stats (counting or not), dbias_partials (summing or not) and the input, launched over the tiles
// (the arguments checked first: fp8_cast_transpose_args_ok, and the input's own pointers by whoever made it).
template <bool DBIAS, class Input>
static inline cudaError_t fp8_cast_transpose_launch(uint8_t* out, uint8_t* out_t, float* dbias_partials, Input input,
                                                    int rows, int cols, const float* scale, float* amax,
                                                    unsigned long long* stats, Fp8Format format, cudaStream_t stream) {
    dim3 grid(cols / FP8_TRANSPOSE_TILE, rows / FP8_TRANSPOSE_TILE);
    if (stats) {
        fp8_cast_transpose_amax_kernel<true, DBIAS, Input>
            <<<grid, 256, 0, stream>>>(out, out_t, dbias_partials, input, rows, cols, scale, amax, format, stats);
    } else {
        fp8_cast_transpose_amax_kernel<false, DBIAS, Input>
            <<<grid, 256, 0, stream>>>(out, out_t, dbias_partials, input, rows, cols, scale, amax, format, NULL);
    }
    return cudaGetLastError();
}

static inline cudaError_t fp8_cast_transpose_amax(uint8_t* out, uint8_t* out_t, const __nv_bfloat16* inp, int rows,
                                                  int cols, const float* scale, float* amax,
                                                  unsigned long long* stats, Fp8Format format, cudaStream_t stream) {
    if (!fp8_cast_transpose_args_ok("fp8_cast_transpose_amax", out, out_t, inp, rows, cols, amax, stats)) {
        return cudaErrorInvalidValue;
    }
    Fp8CastInputBf16 input = {inp};
    return fp8_cast_transpose_launch<false>(out, out_t, NULL, input, rows, cols, scale, amax, stats, format, stream);
}

// The cast + transpose of a grad_output that also leaves its bias gradient's column partials: dbias_partials
// (rows / 64, cols) fp32, each row the column sums of 64 rows of inp; llmc/bias.cuh's bias_backward_reduce adds them
// into dbias.
static inline cudaError_t fp8_cast_transpose_dbias_amax(uint8_t* out, uint8_t* out_t, float* dbias_partials,
                                                        const __nv_bfloat16* inp, int rows, int cols, const float* scale,
                                                        float* amax, unsigned long long* stats, Fp8Format format,
                                                        cudaStream_t stream) {
    const char* launcher = "fp8_cast_transpose_dbias_amax";
    if (!fp8_cast_transpose_args_ok(launcher, out, out_t, inp, rows, cols, amax, stats)) { return cudaErrorInvalidValue; }
    if (dbias_partials == NULL) {
        fprintf(stderr, "%s: no dbias partials buffer (fp8_cast_transpose_amax casts without the bias gradient)\n", launcher);
        return cudaErrorInvalidValue;
    }
    if (!fp8_launch_aligned(launcher, "the dbias partials", dbias_partials, 4)) { return cudaErrorInvalidValue; }
    Fp8CastInputBf16 input = {inp};
    return fp8_cast_transpose_launch<true>(out, out_t, dbias_partials, input, rows, cols, scale, amax, stats, format,
                                           stream);
}

// Current scaling's first pass over the values `input` makes (n of them, n a multiple of 8; the tensor (n / cols,
// cols), cols a multiple of 8, for an input that needs rows and columns, else cols 0; the input's own pointers checked
// by whoever made it): their amax, then the scale into target.
template <class Input>
static inline cudaError_t fp8_amax_scale_launch(const char* launcher, Input input, size_t n, size_t cols,
                                                Fp8Format format, Fp8CurrentScale target, Fp8AmaxWorkspace workspace,
                                                int num_sms, cudaStream_t stream) {
    if (n % 8 != 0) {
        fprintf(stderr, "%s: %zu elements is not a multiple of 8 (it reads 16-byte vectors of 8 bf16)\n", launcher, n);
        return cudaErrorInvalidValue;
    }
    if (cols != 0 && (cols % 8 != 0 || n % cols != 0)) {
        fprintf(stderr, "%s: rows of %zu columns (%zu elements): the columns must be a multiple of 8 (its 16-byte "
                "vectors) and the elements whole rows\n", launcher, cols, n);
        return cudaErrorInvalidValue;
    }
    if (cols == 0) { cols = 8; }  // (an input without rows: any row length that is whole vectors)
    const int block_size = 256;
    size_t blocks_needed = (n / 8 + block_size - 1) / block_size;
    size_t max_blocks = (size_t)num_sms * 4 < FP8_AMAX_MAX_BLOCKS ? (size_t)num_sms * 4 : FP8_AMAX_MAX_BLOCKS;
    int grid = (int)(blocks_needed < max_blocks ? blocks_needed : max_blocks);
    if (grid < 1) { grid = 1; }
    fp8_amax_scale_kernel<Input><<<grid, block_size, 0, stream>>>(input, n, cols, target, fp8_max(format), workspace);
    return cudaGetLastError();
}

// Current scaling's first pass: the scale of inp (n) bf16 (n a multiple of 8) from its amax, into target. Then cast
// with fp8_cast_amax or fp8_cast_transpose_amax reading target.scale.
static inline cudaError_t fp8_amax_scale(const __nv_bfloat16* inp, size_t n, Fp8Format format, Fp8CurrentScale target,
                                         Fp8AmaxWorkspace workspace, int num_sms, cudaStream_t stream) {
    if (!fp8_launch_aligned("fp8_amax_scale", "the bf16 input", inp, 16)) { return cudaErrorInvalidValue; }
    Fp8CastInputBf16 input = {inp};
    return fp8_amax_scale_launch("fp8_amax_scale", input, n, 0, format, target, workspace, num_sms, stream);
}

#endif  // GPTFP8_QUANTIZE_CUH
