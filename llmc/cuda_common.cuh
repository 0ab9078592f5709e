/*
llmc/cuda_common.cuh — what the GPU trainer's kernel families share: the bf16 storage type (floatX), warp and block
reductions, launch sizes checked against CUDA's grid limits, and the deterministic column sums (fixed chunks of rows,
then the chunks in a fixed order: no float atomics, so the same inputs give the same bits every run) that the
LayerNorm and bias backward passes both end with.
*/
#ifndef GPTFP8_CUDA_COMMON_CUH
#define GPTFP8_CUDA_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <float.h>

#include "cuda_utils.cuh"

// activations and parameters are stored in bf16; every sum is fp32
typedef __nv_bfloat16 floatX;

// ----------------------------------------------------------------------------
// reductions

// One reduction, two combining operations (sum, max), each a functor that the compiler inlines: block_sum and
// block_max compile to the very instructions of their two former hand-written copies (the PTX differs only in the
// shared cells' names). The order is fixed, the copies' order: in a warp, butterfly shuffles at offsets 16, 8, 4, 2, 1,
// each lane doing v = op(v, its partner's v); warp w's result goes to partial[w]; warp 0 then reduces partial[0 ..
// warps) the same way, its lanes past the last warp holding the identity. So a sum's bits are as before, every run.
struct ReduceSum {
    __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};
struct ReduceMax {
    __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <typename Op>
__device__ __forceinline__ float warp_reduce(float v, Op op) {
    for (int offset = 16; offset > 0; offset >>= 1) { v = op(v, __shfl_xor_sync(0xFFFFFFFFu, v, offset)); }
    return v;
}

// Over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the result. identity: the value that
// changes nothing (0 for a sum, -FLT_MAX for a max), held by warp 0's lanes that have no warp to read. Each Op has its
// own shared cells (one per template instance), as the two hand-written copies had.
template <typename Op>
__device__ __forceinline__ float block_reduce(float v, Op op, float identity) {
    __shared__ float partial[32];
    __shared__ float total;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = warp_reduce(v, op);
    if (lane == 0) { partial[warp] = v; }
    __syncthreads();
    if (warp == 0) {
        float w = lane < (int)(blockDim.x / 32) ? partial[lane] : identity;
        w = warp_reduce(w, op);
        if (lane == 0) { total = w; }
    }
    __syncthreads();
    float result = total;
    __syncthreads();  // partial/total are reused by the next call
    return result;
}

__device__ __forceinline__ float warp_sum(float v) { return warp_reduce(v, ReduceSum()); }
__device__ __forceinline__ float warp_max(float v) { return warp_reduce(v, ReduceMax()); }
__device__ __forceinline__ float block_sum(float v) { return block_reduce(v, ReduceSum(), 0.0f); }
__device__ __forceinline__ float block_max(float v) { return block_reduce(v, ReduceMax(), -FLT_MAX); }

// The 8 bf16 of a 16-byte vector as floats (the elementwise and row kernels' 16-byte accesses)
__device__ __forceinline__ void bf16x8_to_float(float out[8], uint4 packed) {
    const floatX* values = reinterpret_cast<const floatX*>(&packed);
    for (int i = 0; i < 8; i++) { out[i] = __bfloat162float(values[i]); }
}

// ----------------------------------------------------------------------------
// launch sizes

// Blocks of block_size threads that cover n elements (grid x), checked against CUDA's limit.
static inline unsigned int blocks_for(size_t n, int block_size) {
    return grid_dim_checked(((unsigned long long)n + block_size - 1) / block_size, CUDA_GRID_X_MAX, "an elementwise launch");
}
// Whether every pointer allows 16-byte vector accesses (8 bf16 at a time: the elementwise kernels' fast path)
static inline int all_aligned_16(const void* a, const void* b, const void* c) {
    return (((uintptr_t)a | (uintptr_t)b | (uintptr_t)c) % 16) == 0;
}

// One block per row of rows (LayerNorm, softmax, the classifier): grid x, checked.
static inline unsigned int blocks_per_row(size_t rows, const char* what) {
    return grid_dim_checked((unsigned long long)rows, CUDA_GRID_X_MAX, what);
}

// ----------------------------------------------------------------------------
// deterministic column sums

// Column sums over rows, deterministic, in two passes: pass 1 gives each chunk of COLUMN_SUM_ROWS rows one thread per
// column (coalesced across the warp) and writes the chunk's sum to partials (num_chunks, width); pass 2
// (column_partials_reduce) adds the chunks of each column in a fixed order. No float atomics, so no run-to-run
// jitter, at the cost of a (rows / 64, width) scratch buffer.
#define COLUMN_SUM_ROWS 64

// The chunks of `rows` rows, one block each in grid y (so at most 65535: B*T up to 4194240 per GPU), checked.
static inline int column_sum_chunks(size_t rows) {
    unsigned long long chunks = ((unsigned long long)rows + COLUMN_SUM_ROWS - 1) / COLUMN_SUM_ROWS;
    return (int)grid_dim_checked(chunks, CUDA_GRID_YZ_MAX, "the column sums (B*T / 64 blocks in y)");
}

// out (n) fp32 += sum over k < num_chunks of partials[k * stride + c]. A block owns 32 columns, one per lane (each
// warp reads 128 contiguous bytes a chunk); its warp y adds chunks y, y + COLUMN_REDUCE_SLICES, ... in that order, and
// then one thread per column adds the slices' sums in order of y: a fixed order, so the same bits every run. Why the
// slices: one thread per column adding every chunk in turn was num_chunks dependent additions (1024 at d12, B 64) on
// a handful of blocks; the column sums took 3.4 ms of that step on an H100 (RESULTS.md).
#define COLUMN_REDUCE_SLICES 32
static __global__ void __launch_bounds__(32 * COLUMN_REDUCE_SLICES)
    column_partials_reduce_kernel(float* out, const float* partials, int num_chunks, int stride, int n) {
    __shared__ float slice_sum[COLUMN_REDUCE_SLICES][32];
    int c = blockIdx.x * 32 + threadIdx.x;
    float sum = 0.0f;
    if (c < n) {
        for (int k = threadIdx.y; k < num_chunks; k += COLUMN_REDUCE_SLICES) {
            sum += partials[(size_t)k * stride + c];
        }
    }
    slice_sum[threadIdx.y][threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.y != 0 || c >= n) { return; }
    float total = 0.0f;
    for (int y = 0; y < COLUMN_REDUCE_SLICES; y++) { total += slice_sum[y][threadIdx.x]; }
    out[c] += total;
}

// out (n) fp32 += the column sums of partials (num_chunks, stride): column_partials_reduce_kernel over 32-column blocks
static inline void column_partials_reduce(float* out, const float* partials, int num_chunks, int stride, int n,
                                          cudaStream_t stream) {
    column_partials_reduce_kernel<<<blocks_for((size_t)n, 32), dim3(32, COLUMN_REDUCE_SLICES), 0, stream>>>(
        out, partials, num_chunks, stride, n);
    cudaCheck(cudaGetLastError());
}

#endif  // GPTFP8_CUDA_COMMON_CUH
